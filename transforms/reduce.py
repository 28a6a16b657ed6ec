"""From summed counts to the published tables: ratios, oracle subsets, p-values."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from sysdiff.transforms.significance import AR_TRIALS, mcnemar_exact, randomization_from_histogram

MAX_ALL_SUBSETS = 10


def _ratio(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den)).otherwise(0.0)


def sum_counts(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """Sum shard partials by ``keys`` (every other column is a count; all-null stays null)."""
    frames = [f for f in frames if f.height]
    if not frames:
        return pl.DataFrame()
    df = pl.concat(frames)
    counts = [c for c in df.columns if c not in keys]
    return df.group_by(keys, maintain_order=True).agg(
        pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c) for c in counts)


def scores_table(counts: pl.DataFrame) -> pl.DataFrame:
    """Accuracy and sentence exact match per system."""
    return counts.with_columns(
        _ratio("n_correct", "n_units").alias("accuracy"),
        _ratio("n_sents_exact", "n_sents").alias("sent_exact"),
    )


def labels_table(counts: pl.DataFrame) -> pl.DataFrame:
    """Per-gold-label accuracy of every system."""
    return counts.with_columns(_ratio("n_correct", "n").alias("accuracy"))


def pairs_table(counts: pl.DataFrame, scores: pl.DataFrame, sent_diffs: pl.DataFrame,
                trials: int = AR_TRIALS, seed: int = 0) -> pl.DataFrame:
    """diff, delta accuracy and both significance tests for every ordered pair.

    ``sent_diffs`` counts sentences per (sys1, sys2, d) (see
    :func:`transforms.compare.sentence_differences`).
    """
    acc = dict(zip(scores["system"], scores["accuracy"], strict=True))
    hist = {key: (g["d"].to_numpy(), g["n"].to_numpy())
            for key, g in sent_diffs.sort("d").group_by(["sys1", "sys2"], maintain_order=True)
            } if sent_diffs.height else {}
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    mcnemar, ar = [], []
    for a, b, fixed, broken in counts.select("sys1", "sys2", "corrections", "new_errors").rows():
        mcnemar.append(mcnemar_exact(fixed, broken))
        ar.append(randomization_from_histogram(*hist.get((a, b), empty), trials, seed))
    return counts.with_columns(
        _ratio("n_diff", "n_units").alias("diff"),
        pl.Series("delta_acc", [acc[b] - acc[a] for a, b in counts.select("sys1", "sys2").rows()],
                  dtype=pl.Float64),
        pl.Series("mcnemar_p", mcnemar, dtype=pl.Float64),
        pl.Series("ar_p", ar, dtype=pl.Float64),
    )


def subsets(names: list[str], max_all: int = MAX_ALL_SUBSETS, max_size: int = 3,
            leave_one_out: bool = False) -> list[tuple[int, ...]]:
    """Index subsets of the systems: all non-empty ones when there are at most ``max_all``;
    else those of size <= ``max_size`` (plus, with ``leave_one_out``, every N-1 subset and
    the full set, for marginal gains)."""
    n = len(names)
    if n <= max_all:
        return [c for k in range(1, n + 1) for c in combinations(range(n), k)]
    small = [c for k in range(1, min(max_size, n) + 1) for c in combinations(range(n), k)]
    if not leave_one_out:
        return small
    return small + [tuple(i for i in range(n) if i != j) for j in range(n)] + [tuple(range(n))]


def _subset_masks(subs: list[tuple[int, ...]]) -> np.ndarray:
    return np.array([sum(1 << i for i in s) for s in subs], dtype=np.uint64)


def oracle_tables(masks: pl.DataFrame, systems: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Oracle of every subset overall and per gold label, from the bitmask histogram."""
    subs = subsets(systems, leave_one_out=True)
    sub_masks = _subset_masks(subs)
    hist = masks.group_by("gold_label", "mask").agg(pl.col("n").sum())
    m = hist["mask"].to_numpy().astype(np.uint64)
    n = hist["n"].to_numpy()
    hit = (m[None, :] & sub_masks[:, None]) != 0  # (subsets, histogram rows)
    names = [sorted(systems[i] for i in s) for s in subs]
    total = int(n.sum())
    overall = pl.DataFrame({
        "systems": names, "n_systems": [len(s) for s in subs],
        "n_units": [total] * len(subs), "n_correct": (hit * n[None, :]).sum(axis=1),
    }, schema_overrides={"systems": pl.List(pl.String), "n_correct": pl.Int64})
    labels = hist["gold_label"].to_list()
    label_ids, inv = np.unique(np.array(labels, dtype=object), return_inverse=True)
    per_label_n = np.bincount(inv, weights=n).astype(np.int64)
    rows = []
    for s_idx, name in enumerate(names):
        ok = np.bincount(inv, weights=hit[s_idx] * n, minlength=len(label_ids)).astype(np.int64)
        rows.append(pl.DataFrame({
            "systems": [name] * len(label_ids), "gold_label": label_ids.tolist(),
            "n": per_label_n, "n_correct": ok,
        }, schema_overrides={"systems": pl.List(pl.String)}))
    return _with_gains(overall, systems), pl.concat(rows)


def _with_gains(overall: pl.DataFrame, systems: list[str]) -> pl.DataFrame:
    """Accuracy, best single member and the oracle's gain over it."""
    single = {row[0][0]: row[1] for row in overall.filter(pl.col("n_systems") == 1)
              .select("systems", "n_correct").rows()}
    best = [max(single[s] for s in names) for names in overall["systems"].to_list()]
    return overall.with_columns(
        _ratio("n_correct", "n_units").alias("accuracy"),
        pl.Series("best_single", best, dtype=pl.Int64),
    ).with_columns(
        ((pl.col("n_correct") - pl.col("best_single")) / pl.col("n_units").clip(1))
        .alias("gain"),
    )


def difficulty_table(masks: pl.DataFrame) -> pl.DataFrame:
    """Histogram of k = number of systems correct, overall (gold_label null) and per label."""
    k = masks.with_columns(pl.col("mask").map_batches(_popcount, return_dtype=pl.Int32)
                           .alias("k_correct"))
    per_label = k.group_by("k_correct", "gold_label").agg(pl.col("n").sum())
    overall = k.group_by("k_correct").agg(pl.col("n").sum()).with_columns(
        pl.lit(None, pl.String).alias("gold_label"))
    return pl.concat([overall.select(per_label.columns), per_label]).sort(
        "gold_label", "k_correct", nulls_last=False)


def _popcount(s: pl.Series) -> pl.Series:
    a = s.to_numpy().astype(np.uint64)
    return pl.Series(np.bitwise_count(a).astype(np.int32))
