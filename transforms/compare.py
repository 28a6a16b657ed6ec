"""Additive counts over a wide label matrix: scores, labels, pairs, change tables, oracles.

Every function here takes one shard (a :class:`ViewMatrix`, already restricted to the units
evaluated) and returns integer counts that sum over shards. Ratios, p-values and oracle
subsets are computed afterwards, from the summed counts (:mod:`transforms.reduce`).
Work is numpy over whole columns: O(N^2 * T) integer comparisons for all pairs.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from sysdiff.transforms.views import ViewMatrix

CLASSES = ("correction", "new_error", "changed_error")
MAX_SYSTEMS_FOR_MASKS = 62


def correct_matrix(m: ViewMatrix) -> np.ndarray:
    """Boolean (n_systems, n_units): system i labels unit t as the key does."""
    return m.values == m.gold_value[None, :]


def _local_sentences(m: ViewMatrix) -> tuple[np.ndarray, np.ndarray]:
    sents, inverse = np.unique(m.sent, return_inverse=True)
    return sents, inverse


def system_counts(m: ViewMatrix) -> pl.DataFrame:
    """Per system: n_units, n_correct, n_sents and n_sents_exact.

    Every sentence of the key counts (METRICS 1.2: the share of sentences in which every
    unit of T is correct): a sentence left with no evaluated unit, e.g. only punctuation
    when punctuation is excluded, is exact.
    """
    correct = correct_matrix(m)
    sents, inv = _local_sentences(m)
    per_sent_units = np.bincount(inv, minlength=len(sents))
    n_all = len(m.sentences)
    vacuous = n_all - len(sents)
    rows = []
    for i, name in enumerate(m.systems):
        per_sent = np.bincount(inv, weights=correct[i], minlength=len(sents))
        rows.append((name, m.n_words, int(correct[i].sum()), n_all,
                     int((per_sent == per_sent_units).sum()) + vacuous))
    return pl.DataFrame(rows, schema=["system", "n_units", "n_correct", "n_sents",
                                      "n_sents_exact"], orient="row")


def sentence_differences(m: ViewMatrix, pairs: list[tuple[int, int]] | None = None
                         ) -> pl.DataFrame:
    """For both directions of each pair, how many sentences have each non-zero difference
    ``d`` = correct units of sys2 - correct units of sys1 (what the randomization test needs;
    additive because shards hold whole sentences)."""
    correct = correct_matrix(m)
    sents, inv = _local_sentences(m)
    per_sent = [np.bincount(inv, weights=c, minlength=len(sents)).astype(np.int64)
                for c in correct]
    frames = []
    for i, j in pairs if pairs is not None else all_pairs(len(m.systems)):
        d = per_sent[j] - per_sent[i]
        values, counts = np.unique(d[d != 0], return_counts=True)
        a, b = m.systems[i], m.systems[j]
        for s1, s2, v in ((a, b, values), (b, a, -values)):
            frames.append(pl.DataFrame({"sys1": s1, "sys2": s2, "d": v, "n": counts},
                                       schema=DIFF_SCHEMA))
    return pl.concat(frames) if frames else pl.DataFrame(schema=DIFF_SCHEMA)


DIFF_SCHEMA = {"sys1": pl.String, "sys2": pl.String, "d": pl.Int64, "n": pl.Int64}


def label_counts(m: ViewMatrix) -> pl.DataFrame:
    """Per system and gold label: n (gold units with that label) and n_correct."""
    correct = correct_matrix(m)
    n_labels = len(m.labels)
    n = np.bincount(m.gold_display, minlength=n_labels)
    present = np.flatnonzero(n)
    frames = []
    for i, name in enumerate(m.systems):
        ok = np.bincount(m.gold_display, weights=correct[i], minlength=n_labels)
        frames.append(pl.DataFrame({
            "system": [name] * len(present),
            "gold_label": [m.labels[k] for k in present],
            "n": n[present].astype(np.int64),
            "n_correct": ok[present].astype(np.int64),
        }))
    return pl.concat(frames)


def all_pairs(n_systems: int) -> list[tuple[int, int]]:
    """Unordered system index pairs (i < j)."""
    return list(combinations(range(n_systems), 2))


PAIR_SCHEMA = {
    "sys1": pl.String, "sys2": pl.String, "n_units": pl.Int64, "n_diff": pl.Int64,
    "corrections": pl.Int64, "new_errors": pl.Int64, "changed_errors": pl.Int64,
    "diff_head_only": pl.Int64, "diff_label_only": pl.Int64, "diff_both": pl.Int64,
}


def las_decomposition(m: ViewMatrix, i: int, j: int) -> tuple[int, int, int]:
    """For ``las``: differing units where only the head, only the DEPREL, or both differ."""
    same_label = m.displays[i] == m.displays[j]
    same_head = (m.values[i] >> 32) == (m.values[j] >> 32)
    return (int((~same_head & same_label).sum()), int((same_head & ~same_label).sum()),
            int((~same_head & ~same_label).sum()))


def pair_counts(m: ViewMatrix, pairs: list[tuple[int, int]] | None = None) -> pl.DataFrame:
    """Both ordered directions of each unordered pair: n_diff and the three change classes;
    for ``las`` also the head-only / label-only / both decomposition of n_diff."""
    correct = correct_matrix(m)
    rows = []
    for i, j in pairs if pairs is not None else all_pairs(len(m.systems)):
        differ = m.values[i] != m.values[j]
        fixed = int((~correct[i] & correct[j]).sum())
        broken = int((correct[i] & ~correct[j]).sum())
        changed = int((differ & ~correct[i] & ~correct[j]).sum())
        n_diff = int(differ.sum())
        parts = las_decomposition(m, i, j) if m.view == "las" else (None, None, None)
        a, b = m.systems[i], m.systems[j]
        rows.append((a, b, m.n_words, n_diff, fixed, broken, changed, *parts))
        rows.append((b, a, m.n_words, n_diff, broken, fixed, changed, *parts))
    return pl.DataFrame(rows, schema=PAIR_SCHEMA, orient="row")


def _class_codes(ci: np.ndarray, cj: np.ndarray) -> np.ndarray:
    """0 correction, 1 new error, 2 changed error, for units where the two systems differ."""
    return np.where(cj, 0, np.where(ci, 1, 2)).astype(np.int64)


def change_counts(m: ViewMatrix, pairs: list[tuple[int, int]] | None = None) -> pl.DataFrame:
    """Counts of (class, gold, L1, L2) over differing units, for both directions of each pair.

    Labels are display labels (DEPREL for ``las``/``head``); ``attachment`` marks a change
    whose two display labels are equal, i.e. only the head moved.
    """
    correct = correct_matrix(m)
    n_lab = np.int64(len(m.labels))
    frames = []
    for i, j in pairs if pairs is not None else all_pairs(len(m.systems)):
        idx = np.flatnonzero(m.values[i] != m.values[j])
        if idx.size == 0:
            continue
        cls = _class_codes(correct[i, idx], correct[j, idx])
        g = m.gold_display[idx].astype(np.int64)
        li = m.displays[i, idx].astype(np.int64)
        lj = m.displays[j, idx].astype(np.int64)
        keys, counts = np.unique(((cls * n_lab + g) * n_lab + li) * n_lab + lj,
                                 return_counts=True)
        lj_k, rest = keys % n_lab, keys // n_lab
        li_k, rest = rest % n_lab, rest // n_lab
        g_k, cls_k = rest % n_lab, rest // n_lab
        back = np.array([1, 0, 2])[cls_k]  # the same units seen from j to i
        frames.append(_change_frame(m, m.systems[i], m.systems[j], cls_k, g_k, li_k, lj_k,
                                    counts))
        frames.append(_change_frame(m, m.systems[j], m.systems[i], back, g_k, lj_k, li_k,
                                    counts))
    if not frames:
        return pl.DataFrame(schema=CHANGE_SCHEMA)
    return pl.concat(frames)


CHANGE_SCHEMA = {
    "sys1": pl.String, "sys2": pl.String, "class": pl.String, "gold": pl.String,
    "l1": pl.String, "l2": pl.String, "attachment": pl.Boolean, "count": pl.Int64,
}


def _change_frame(m: ViewMatrix, a: str, b: str, cls, g, l1, l2, counts) -> pl.DataFrame:
    labels = np.array(m.labels, dtype=object)
    return pl.DataFrame({
        "sys1": [a] * len(counts), "sys2": [b] * len(counts),
        "class": np.array(CLASSES, dtype=object)[cls].tolist(),
        "gold": labels[g].tolist(), "l1": labels[l1].tolist(), "l2": labels[l2].tolist(),
        "attachment": (l1 == l2), "count": counts.astype(np.int64),
    }, schema=CHANGE_SCHEMA)


def mask_counts(m: ViewMatrix) -> pl.DataFrame:
    """Histogram of (gold label, correctness bitmask over systems): all that oracles need.

    Bit i of ``mask`` is set when system i is correct. Oracle, per-label oracle, difficulty
    and leave-one-out gains of any subset are sums over this histogram.
    """
    n = len(m.systems)
    if n > MAX_SYSTEMS_FOR_MASKS:
        raise ValueError(f"at most {MAX_SYSTEMS_FOR_MASKS} systems per corpus for oracles")
    correct = correct_matrix(m)
    weights = (np.uint64(1) << np.arange(n, dtype=np.uint64))[:, None]
    masks = (correct.astype(np.uint64) * weights).sum(axis=0, dtype=np.uint64)
    hist = (pl.DataFrame({"g": m.gold_display, "mask": masks})
            .group_by("g", "mask").agg(pl.len().cast(pl.Int64).alias("n")))
    labels = pl.Series(m.labels, dtype=pl.String)
    return hist.select(labels.gather(hist["g"].cast(pl.Int64)).alias("gold_label"),
                       pl.col("mask").cast(pl.UInt64), "n")


def majority_counts(m: ViewMatrix, priority: list[int]) -> pl.DataFrame:
    """Units and correct units of the majority vote; ties go to the earliest in ``priority``.

    ``priority`` lists system indexes from most to least preferred (highest accuracy first,
    then input order: METRICS 1.5).
    """
    n = len(m.systems)
    if n == 0:
        return pl.DataFrame({"n_units": [m.n_words], "n_correct": [0]})
    votes = np.zeros(m.values.shape, dtype=np.int64)
    for j in range(n):
        votes += m.values == m.values[j][None, :]
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(priority)] = np.arange(n)
    score = votes * (n + 1) + (n - rank)[:, None]
    winner = score.argmax(axis=0)
    chosen = m.values[winner, np.arange(m.n_words)]
    return pl.DataFrame({"n_units": [m.n_words],
                         "n_correct": [int((chosen == m.gold_value).sum())]})


def bucket_counts(m: ViewMatrix, kind: str, codes: np.ndarray, names: list[str],
                  pairs: list[tuple[int, int]] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Scores per bucket and system, and change-class counts per bucket and ordered pair.

    ``codes`` holds each unit's bucket index into ``names`` (empty buckets are left out).
    """
    correct = correct_matrix(m)
    present = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    remap = np.full(len(names), -1)
    remap[present] = np.arange(present.size)
    inv = remap[codes]
    ids = np.array(names, dtype=object)[present]
    k = len(ids)
    units = np.bincount(inv, minlength=k)
    score_frames = [
        pl.DataFrame({"kind": [kind] * k, "bucket": ids.tolist(),
                      "system": [name] * k, "n_units": units.astype(np.int64),
                      "n_correct": np.bincount(inv, weights=correct[i], minlength=k)
                      .astype(np.int64)})
        for i, name in enumerate(m.systems)
    ]
    rows: dict[str, list] = {c: [] for c in ("sys1", "sys2", "corrections", "new_errors",
                                              "changed_errors")}
    for i, j in pairs if pairs is not None else all_pairs(len(m.systems)):
        wrong_i, wrong_j = ~correct[i], ~correct[j]
        fixed = np.bincount(inv[wrong_i & correct[j]], minlength=k)
        broken = np.bincount(inv[correct[i] & wrong_j], minlength=k)
        changed = np.bincount(inv[wrong_i & wrong_j & (m.values[i] != m.values[j])],
                              minlength=k)
        for a, b, c, e in ((i, j, fixed, broken), (j, i, broken, fixed)):
            for col, val in (("sys1", [m.systems[a]] * k), ("sys2", [m.systems[b]] * k),
                             ("corrections", c), ("new_errors", e), ("changed_errors", changed)):
                rows[col].append(val)
    if not rows["sys1"]:
        return pl.concat(score_frames), pl.DataFrame()
    n_rows = len(rows["sys1"])
    pairs_df = pl.DataFrame({
        "kind": [kind] * (k * n_rows), "bucket": ids.tolist() * n_rows,
        "sys1": np.concatenate(rows["sys1"]).tolist(),
        "sys2": np.concatenate(rows["sys2"]).tolist(),
        "n_units": np.tile(units, n_rows).astype(np.int64),
        **{c: np.concatenate(rows[c]).astype(np.int64)
           for c in ("corrections", "new_errors", "changed_errors")},
    })
    return pl.concat(score_frames), pairs_df
