"""Shard plans and options signatures: pure decisions the flows take before mapping work."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True)
class Shard:
    """A contiguous run of whole documents: sentences ``lo`` (inclusive) to ``hi``."""

    index: int
    lo: int
    hi: int


def plan_ranges(weights: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Group consecutive units (documents or sentences) into ``[lo, hi)`` ranges: a range
    closes as soon as its weight (sentences) reaches ``size``; a unit is never split."""
    cum = np.cumsum(np.asarray(weights, dtype=np.int64))
    out, lo, size = [], 0, max(1, size)
    while lo < cum.size:
        base = cum[lo - 1] if lo else 0
        hi = min(int(np.searchsorted(cum, base + size)) + 1, cum.size)
        out.append((lo, hi))
        lo = hi
    return out


#: A shard of a plan sized by sysdiff (no ``--shard-sents``) holds about this many words of all
#: files together (the key's and every system's): what one task keeps in memory at once.
SHARD_CELLS = 4_000_000
#: ... and at least this many sentences: a corpus this small is one shard.
MIN_SHARD_SENTS = 5000


def sized_shard_sents(n_sents: int, n_words: int, n_files: int, workers: int) -> int:
    """Sentences per shard when the run does not set them: as many shards as the words of
    all ``n_files`` files need at :data:`SHARD_CELLS` each, rounded up to a multiple of the
    task runner's ``workers`` (each gets as many), and no fewer than
    :data:`MIN_SHARD_SENTS` sentences a shard. Every shard costs a task, a read of each
    file and the per-shard steps of the counts, so a corpus is cut no finer than it needs."""
    shards = max(1, -(-n_words * n_files // SHARD_CELLS))
    workers = max(1, workers)
    shards = -(-shards // workers) * workers
    return max(MIN_SHARD_SENTS, -(-n_sents // shards))


def plan_shards(key_sents: pl.DataFrame, shard_sents: int) -> list[Shard]:
    """Group whole documents (or, without documents, sentences) into shards of about
    ``shard_sents`` sentences; a document is never split."""
    doc = key_sents.sort("sent")["doc"].to_numpy()
    starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])  # first sentence of each doc
    if starts.size < 2:
        starts = np.arange(doc.size)  # no documents: any sentence may start a shard
    ends = np.r_[starts[1:], doc.size]
    return [Shard(i, int(starts[lo]), int(ends[hi - 1]))
            for i, (lo, hi) in enumerate(plan_ranges(ends - starts, shard_sents))]


def options_string(view: str, punct: bool, mappings: Mapping[str, Mapping[str, str]],
                   intervals: str = "") -> str:
    """What produced a row: view, punctuation policy, the bootstrap settings of its
    intervals (``intervals``, on the tables that have some) and label mappings
    (sacreBLEU-style; the mappings last: their labels may hold ``|``)."""
    maps = ";".join(f"{s}:" + ",".join(f"{a}>{b}" for a, b in sorted(m.items()))
                    for s, m in sorted(mappings.items()) if m)
    extra = f"|{intervals}" if intervals else ""
    return f"view:{view}|punct:{'incl' if punct else 'excl'}{extra}|map:{maps or 'none'}"


def canonical(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in a fixed order (by every non-list column), so reruns write identical files."""
    keys = [c for c, t in df.schema.items() if not isinstance(t, pl.List)]
    return df.sort(keys, nulls_last=True) if keys else df
