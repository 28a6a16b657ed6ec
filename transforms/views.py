"""Views (label functions over words) and the label matrix of a token task.

A view gives every word of the key a *value* per source (two sources agree on a word iff
their values are equal) and a *display* label (shown in change tables, and the gold label
that groups per-label counts). For most views both are the label itself; for ``las`` the
value is the pair (HEAD, DEPREL) and the display is the DEPREL (METRICS 1.4); for ``head``
the value is the HEAD and the display the gold DEPREL.

Labels are coded once per corpus (:class:`Vocab`, from the label counts taken at ingest), so
the codes of every shard agree and shard counts add up. Systems are aligned with the key at
ingest (same words, same order): the matrix is N rows stacked, never a join.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.formats.conllu import PTB_PUNCT
from sysdiff.schemas.vocabulary import KEY_ID, LABEL_FIELDS, view
from sysdiff.transforms.engine import Bucketing, LabelMatrix, smallest_uint

WORD_COLUMNS = ["sent", "id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel"]
LENGTH_EDGES = np.array([10, 20, 30, 40, 50])
DISTANCE_EDGES = np.array([1, 2, 3, 4, 7, 11])
FREQ_EDGES = np.array([10, 100, 1000, 10000])
BLANK = "_"


def punct_mask(key_words: pl.DataFrame, fmt: str) -> np.ndarray:
    """True for words whose *gold* tag marks punctuation (UPOS PUNCT; PTB set for CoNLL-X)."""
    expr = pl.col("upos") == "PUNCT"
    if fmt == "conllx":
        expr = expr | pl.col("xpos").is_in(list(PTB_PUNCT))
    return key_words.select(expr.fill_null(False))[:, 0].to_numpy()


def bucket_names(edges: np.ndarray) -> list[str]:
    """Fixed names of the buckets cut at ``edges``: '<=10', '11-20', ..., '51+'."""
    names = [f"<={edges[0]}"]
    names += [f"{lo + 1}-{hi}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return [*names, f"{edges[-1] + 1}+"]


BUCKET_NAMES = {"sent_length": bucket_names(LENGTH_EDGES),
                "distance": bucket_names(DISTANCE_EDGES),
                "label_freq": bucket_names(FREQ_EDGES)}


@dataclass(frozen=True)
class Vocab:
    """The corpus-wide sorted labels of each label column, after label mappings."""

    labels: dict[str, list[str]]

    def codes(self, column: str, values: pl.Series) -> np.ndarray:
        """The codes of ``values`` (nulls read as ``_``) in the smallest unsigned type."""
        labels = self.labels[column]
        codes = values.fill_null(BLANK).cast(pl.Enum(labels)).to_physical().to_numpy()
        return codes.astype(smallest_uint(len(labels)), copy=False)


def vocab_from_counts(counts: pl.DataFrame, mappings: Mapping[str, Mapping[str, str]]
                      ) -> Vocab:
    """The :class:`Vocab` of a corpus from its ``vocab`` rows (system, field, label, n)
    of the key and every system, each source's labels mapped by its mapping (the key's is
    ``@key``)."""
    out: dict[str, set[str]] = {c: {BLANK} for c in LABEL_FIELDS}
    for (system, column), rows in counts.group_by("system", "field"):
        if column not in out:
            continue
        mapping = mappings.get("@key" if system == KEY_ID else system, {})
        out[column].update(mapping.get(x, x) for x in rows["label"])
    return Vocab({c: sorted(v) for c, v in out.items()})


def label_counts(words: pl.DataFrame) -> pl.DataFrame:
    """(field, label, n) of every label column and HEAD of some words (a blank or missing
    value counts as ``_``; heads as their number): what a file can be scored on."""
    return pl.concat([
        words.select(pl.lit(c).alias("field"),
                     pl.col(c).cast(pl.String).fill_null(BLANK).alias("label"))
        .group_by("field", "label").agg(pl.len().cast(pl.Int64).alias("n"))
        for c in (*LABEL_FIELDS, "head")])


def apply_mapping(words: pl.DataFrame, mapping: Mapping[str, str]) -> pl.DataFrame:
    """Rename labels ``old -> new`` in every label column (before comparison); HEAD is a
    number and is never mapped."""
    if not mapping:
        return words
    return words.with_columns(pl.col(c).replace(dict(mapping)) for c in LABEL_FIELDS)


@dataclass(frozen=True)
class ShardWords:
    """The key's and the systems' words of one shard, mapped, in the key's order."""

    key: pl.DataFrame
    systems: list[pl.DataFrame]
    first_sent: int  # the shard's first sentence number
    n_sents: int  # sentences of the shard
    sent_lengths: np.ndarray  # words per sentence of the shard
    fmt: str

    @property
    def sent(self) -> np.ndarray:
        return (self.key["sent"].to_numpy() - self.first_sent).astype(np.int32)


def view_matrix(name: str, words: ShardWords, vocab: Vocab) -> LabelMatrix:
    """The label matrix of a view over every word of the shard (punctuation included;
    :meth:`LabelMatrix.select` with ``~punct_mask`` excludes it)."""
    v = view(name)
    sources = [words.key, *words.systems]
    display = [vocab.codes(v.label, f[v.label]) for f in sources]
    n_labels = len(vocab.labels[v.label])
    heads = [f["head"].fill_null(-1).to_numpy() for f in sources] if v.dependency else []
    if v.columns == ("head",):
        values = heads
    elif "head" in v.columns:
        values = _pair_codes(heads, display, n_labels)
    else:
        values = display
    n, t = len(words.systems), words.key.height
    stack = (lambda arrays: np.stack(arrays[1:])) if n else (
        lambda arrays: np.empty((0, t), arrays[0].dtype))
    sys_values = stack(values)
    sent = words.sent
    buckets = [Bucketing("sent_length", np.searchsorted(
        LENGTH_EDGES, words.sent_lengths, side="left"), len(LENGTH_EDGES) + 1, True)]
    if v.dependency:
        buckets.append(Bucketing("distance", np.searchsorted(
            DISTANCE_EDGES, _distance(words.key), side="left"), len(DISTANCE_EDGES) + 1))
    return LabelMatrix(
        values=sys_values, correct=sys_values == values[0][None, :], display=stack(display),
        gold=display[0], n_labels=n_labels, n_groups=n_labels, sent=sent,
        n_sents=words.n_sents, head=stack(heads) if v.columns == ("head", v.label) else None,
        buckets=tuple(buckets))


def _pair_codes(heads: Sequence[np.ndarray], labels: Sequence[np.ndarray], n_labels: int
                ) -> list[np.ndarray]:
    """One integer per (HEAD, label) pair (heads from -1 for none)."""
    top = max(int(h.max(initial=0)) for h in heads) + 2
    dtype = np.int32 if top * n_labels < 1 << 31 else np.int64
    return [(h.astype(dtype) + 1) * n_labels + lab for h, lab in zip(heads, labels, strict=True)]


def _distance(key: pl.DataFrame) -> np.ndarray:
    """|head - id| of the gold tree (0 for the root), for dependency-distance buckets."""
    return key.select(
        pl.when(pl.col("head") > 0).then((pl.col("head") - pl.col("id")).abs())
        .otherwise(0).fill_null(0)
    )[:, 0].to_numpy().astype(np.int32)
