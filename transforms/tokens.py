"""Token-level evaluation of N systems: map per shard to additive counts, reduce to tables.

``shard_partials`` runs on one shard of documents (any subset of sentences) and returns
counts only; ``finalize`` sums the partials of all shards and computes every ratio, oracle
and p-value. Splitting a corpus into more or fewer shards cannot change a result.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from sysdiff.transforms import compare, reduce
from sysdiff.transforms.views import DEP_VIEWS, ViewMatrix, default_punct

PARTIAL_KEYS = {
    "scores": ["system"],
    "labels": ["system", "gold_label"],
    "pairs": ["sys1", "sys2"],
    "changes": ["sys1", "sys2", "class", "gold", "l1", "l2", "attachment"],
    "masks": ["gold_label", "mask"],
    "majority": [],
    "buckets": ["kind", "bucket", "system"],
    "bucket_pairs": ["kind", "bucket", "sys1", "sys2"],
    "sent_diffs": ["sys1", "sys2", "d"],
}
LENGTH_EDGES = np.array([10, 20, 30, 40, 50])
DISTANCE_EDGES = np.array([1, 2, 3, 4, 7, 11])
FREQ_EDGES = np.array([10, 100, 1000, 10000])


def punct_settings(view: str, both: bool = True) -> list[bool]:
    """Punctuation settings stored for a view: both for dependency views, else the default."""
    return [False, True] if both and view in DEP_VIEWS else [default_punct(view)]


def bucket_names(edges: np.ndarray) -> list[str]:
    """Fixed names of the buckets cut at ``edges``: '<=10', '11-20', ..., '51+'."""
    names = [f"<={edges[0]}"]
    names += [f"{lo + 1}-{hi}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return [*names, f"{edges[-1] + 1}+"]


def bucket_labels(edges: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer bucket code of every value, and the names of all codes."""
    return np.searchsorted(edges, values, side="left"), bucket_names(edges)


def unit_buckets(m: ViewMatrix, sent_lengths: np.ndarray, label_freq: np.ndarray
                 ) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Bucket of every unit by sentence length, dependency distance and gold label frequency.

    ``sent_lengths`` is indexed by sentence; ``label_freq`` by the matrix's display codes,
    holding corpus-wide counts (computed before sharding: buckets do not depend on shards).
    """
    out = {
        "sent_length": bucket_labels(LENGTH_EDGES, sent_lengths[m.sent]),
        "label_freq": bucket_labels(FREQ_EDGES, label_freq[m.gold_display]),
    }
    if m.view in DEP_VIEWS:
        out["distance"] = bucket_labels(DISTANCE_EDGES, m.extra["distance"])
    return out


def shard_partials(m: ViewMatrix, priority: list[int],
                   buckets: dict[str, tuple[np.ndarray, list[str]]],
                   pairs: list[tuple[int, int]] | None = None) -> dict[str, pl.DataFrame]:
    """Every additive count of one shard (``m`` already restricted to evaluated units)."""
    bucket_scores, bucket_pairs = [], []
    for kind, (codes, names) in buckets.items():
        s, p = compare.bucket_counts(m, kind, codes, names, pairs)
        bucket_scores.append(s)
        bucket_pairs.append(p)
    return {
        "scores": compare.system_counts(m),
        "labels": compare.label_counts(m),
        "pairs": compare.pair_counts(m, pairs),
        "changes": compare.change_counts(m, pairs),
        "masks": compare.mask_counts(m),
        "majority": compare.majority_counts(m, priority),
        "buckets": pl.concat(bucket_scores) if bucket_scores else pl.DataFrame(),
        "bucket_pairs": pl.concat([p for p in bucket_pairs if p.height])
        if any(p.height for p in bucket_pairs) else pl.DataFrame(),
        "sent_diffs": compare.sentence_differences(m, pairs),
    }


def shard_priors(m: ViewMatrix) -> dict[str, pl.DataFrame]:
    """What phase 2 needs from the whole corpus: per-system counts (for the majority vote's
    tie order) and gold label counts (for label-frequency buckets)."""
    labels, counts = np.unique(m.gold_display, return_counts=True)
    gold = pl.DataFrame({"gold_label": [m.labels[k] for k in labels],
                         "n": counts.astype(np.int64)},
                        schema={"gold_label": pl.String, "n": pl.Int64})
    return {"scores": compare.system_counts(m), "gold": gold}


def merge_priors(priors: list[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """Sum the priors of several shards."""
    return {"scores": reduce.sum_counts([p["scores"] for p in priors], ["system"]),
            "gold": reduce.sum_counts([p["gold"] for p in priors], ["gold_label"])}


def merge_partials(partials: Iterable[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """Sum (or concatenate) the partials of several shards."""
    parts = list(partials)
    merged = {}
    for name, keys in PARTIAL_KEYS.items():
        frames = [p[name] for p in parts if p[name].height]
        if keys == []:
            merged[name] = pl.concat(frames).sum() if frames else pl.DataFrame()
        else:
            merged[name] = reduce.sum_counts(frames, keys)
    return merged


def finalize(merged: dict[str, pl.DataFrame], systems: list[str], trials: int,
             seed: int) -> dict[str, pl.DataFrame]:
    """Published tables (without corpus/view/punct columns) from merged counts."""
    scores = reduce.scores_table(merged["scores"])
    out = {"scores": scores, "labels": reduce.labels_table(merged["labels"])}
    if merged["pairs"].height:
        out["pairs"] = reduce.pairs_table(merged["pairs"], scores, merged["sent_diffs"], trials,
                                          seed)
        out["changes"] = merged["changes"]
        out["bucket_pairs"] = merged["bucket_pairs"]
    out["oracles"], out["oracle_labels"] = reduce.oracle_tables(merged["masks"], systems)
    out["difficulty"] = reduce.difficulty_table(merged["masks"])
    out["majority"] = merged["majority"].with_columns(
        pl.lit(sorted(systems), pl.List(pl.String)).alias("systems"),
        (pl.col("n_correct") / pl.col("n_units").clip(1)).alias("accuracy"))
    if merged["buckets"].height:
        out["buckets"] = merged["buckets"].with_columns(
            (pl.col("n_correct") / pl.col("n_units").clip(1)).alias("accuracy"))
    return out


def priority_from_scores(scores: pl.DataFrame, systems: list[str]) -> list[int]:
    """System indexes by accuracy (highest first), ties in input order (METRICS 1.5)."""
    acc = dict(zip(scores["system"], scores["n_correct"] / scores["n_units"].clip(1),
                   strict=True))
    return sorted(range(len(systems)), key=lambda i: (-acc[systems[i]], i))
