"""From summed engine counts to the published tables: ratios, oracle subsets, p-values.

Every function takes the :class:`~sysdiff.transforms.counts.Counts` of a whole corpus (the
sum over its shards) and the names of the systems, labels and groups its codes stand for.
Pair tables hold both directions of every pair: (sys1, sys2) and (sys2, sys1).

No number without data: a ratio whose denominator is 0 is NULL (never 0), and so is every
score of a system that lacks the view's column (``missing``: its labels are all ``_``), with
the deltas and p-values that compare such a score; counts stay as counted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from itertools import combinations

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import CLASSES
from sysdiff.transforms import bootstrap
from sysdiff.transforms.counts import (
    Counts,
    OracleCounts,
    PairCounts,
    decode_sentence_differences,
)
from sysdiff.transforms.engine import MAX_ALL_SUBSETS, settle_majority
from sysdiff.transforms.significance import (
    AR_TRIALS,
    map_cores,
    mcnemar_exact,
    randomization_from_histogram,
)

#: Rows of pair tables built at once (bounded memory with many systems).
PAIR_BLOCK = 256
_MIRROR = np.array([1, 0, 2])  # a correction from i to j is a new error from j to i


def ratio(num: np.ndarray | int, den: np.ndarray | int) -> np.ndarray:
    """num / den, NaN (stored as NULL: no number without data) where den is 0."""
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    return np.divide(num, den, out=out, where=den > 0)


def nulls(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with every float NaN (a ratio without data, :func:`ratio`) as NULL."""
    return df.fill_nan(None)


def without(values: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Float ``values`` with NaN in the rows (first axis: systems) flagged ``missing``."""
    out = np.array(values, np.float64)
    out[np.asarray(missing, bool)] = np.nan
    return out


def missing_mask(names: Sequence[str], missing: Collection[str] = ()) -> np.ndarray:
    """(N,) True for the systems that lack the view's column."""
    return np.array([s in missing for s in names], bool).reshape(len(names))


def score_intervals(samples: np.ndarray | None, n: int, confidence: float,
                    gone: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of each system's score from its (B x N) bootstrap samples; NaN (NULL)
    without samples (bootstrap off) and for the systems flagged ``gone``."""
    if samples is None:
        return np.full(n, np.nan), np.full(n, np.nan)
    low, high = bootstrap.interval(samples, confidence)
    if gone is not None:
        low, high = without(low, gone), without(high, gone)
    return low, high


def pair_ci(samples: np.ndarray | None, i: np.ndarray, j: np.ndarray, observed: np.ndarray,
            confidence: float) -> bootstrap.PairIntervals:
    """The delta intervals and bootstrap p of both directions of pairs (i, j) (observed
    delta j - i; NaN: not evaluated); NULL without samples."""
    if samples is None:
        return bootstrap.no_pair_intervals(len(i))
    return bootstrap.pair_intervals(samples, i, j, confidence, observed)


def scores_frame(c: Counts, names: Sequence[str], missing: Collection[str] = (),
                 samples: np.ndarray | None = None, confidence: float = 0.95
                 ) -> pl.DataFrame:
    """Accuracy and sentence exact match per system (METRICS 1.2); NULL for a system that
    lacks the view's column (``missing``) and when the view has no evaluable unit (a sentence
    without one counts as exact, but a corpus without one is not evaluated). ``samples``:
    (B x N) bootstrap samples of the accuracies, for its interval (METRICS 1.6b)."""
    n = len(names)
    gone = missing_mask(names, missing)
    exact = ratio(c.exact, c.n_sents) if c.n_units else np.full(n, np.nan)
    low, high = score_intervals(samples, n, confidence, gone)
    return nulls(pl.DataFrame({
        "system": list(names), "n_units": np.full(n, c.n_units, np.int64),
        "n_correct": c.correct, "accuracy": without(ratio(c.correct, c.n_units), gone),
        "ci_low": low, "ci_high": high,
        "n_sents": np.full(n, c.n_sents, np.int64), "n_sents_exact": c.exact,
        "sent_exact": without(exact, gone), "missing": gone,
    }, schema_overrides={"system": pl.String}))


def labels_frame(c: Counts, names: Sequence[str], groups: Sequence[str],
                 missing: Collection[str] = ()) -> pl.DataFrame:
    """Per gold label accuracy of every system (labels with at least one unit; NULL for a
    system that lacks the view's column)."""
    present = np.flatnonzero(c.gold_n)
    n, k = len(names), present.size
    acc = without(ratio(c.labels[:, present], c.gold_n[present]).reshape(n, k),
                  missing_mask(names, missing))
    return nulls(pl.DataFrame({
        "system": np.repeat(np.array(names, dtype=object), k).tolist(),
        "gold_label": [groups[g] for g in present] * n,
        "n": np.tile(c.gold_n[present], n),
        "n_correct": c.labels[:, present].ravel(),
        "accuracy": acc.ravel(),
    }, schema_overrides={"system": pl.String, "gold_label": pl.String}))


def priority(c: Counts) -> list[int]:
    """System indexes by accuracy, highest first; ties in input order (METRICS 1.5)."""
    return sorted(range(c.correct.size), key=lambda i: (-int(c.correct[i]), i))


def majority_frame(c: Counts, names: Sequence[str]) -> pl.DataFrame:
    """Correct units of the majority vote, ties settled by :func:`priority`."""
    right = settle_majority(c.majority, priority(c), len(names)) if names else 0
    return nulls(pl.DataFrame({"systems": [sorted(names)], "n_units": [c.n_units],
                               "n_correct": [right],
                               "accuracy": [float(ratio(right, c.n_units))]},
                              schema_overrides={"systems": pl.List(pl.String)}))


# ------------------------------------------------------------------------------ pairs


def pair_rows(pc: PairCounts, names: Sequence[str], correct: np.ndarray, n_units: int,
              trials: int = AR_TRIALS, seed: int = 0, missing: Collection[str] = (),
              samples: np.ndarray | None = None, confidence: float = 0.95) -> pl.DataFrame:
    """The ``pairs`` table: both directions of every pair, with diff, delta accuracy,
    McNemar and approximate randomization p-values (METRICS 1.3-1.6) and the delta's
    bootstrap interval and p from the accuracies' (B x N) ``samples`` (1.6b). Without an
    evaluable unit, or with a system that lacks the view's column, the delta and its
    p-values and interval are NULL (and the diff without a unit)."""
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    acc = without(ratio(correct, n_units), missing_mask(names, missing))
    tested = ~np.isnan(acc[i] - acc[j]) & (pc.n_units > 0)
    mcnemar = np.array([mcnemar_exact(int(a), int(b)) for a, b in zip(fix, brk, strict=True)])
    ar = np.array(map_cores(lambda s: randomization_from_histogram(
        *decode_sentence_differences(s), trials, seed), pc.sent_diffs), np.float64)
    mcnemar, ar = np.where(tested, mcnemar, np.nan), np.where(tested, ar, np.nan)
    ci = pair_ci(samples, i, j, np.where(tested, acc[j] - acc[i], np.nan), confidence)
    decomposition = pc.decomposition
    cols = {
        "sys1": _names(names, i, j), "sys2": _names(names, j, i),
        "n_units": np.tile(pc.n_units, 2), "n_diff": np.tile(n_diff, 2),
        "corrections": np.concatenate([fix, brk]), "new_errors": np.concatenate([brk, fix]),
        "changed_errors": np.tile(changed, 2),
        "diff": np.tile(ratio(n_diff, pc.n_units), 2),
        "delta_acc": np.concatenate([acc[j] - acc[i], acc[i] - acc[j]]),
        "delta_ci_low": ci.low, "delta_ci_high": ci.high,
        "mcnemar_p": np.tile(mcnemar, 2), "ar_p": np.tile(ar, 2), "bootstrap_p": ci.p,
        "seg_diff": np.tile(pc.segmentation, 2),
    }
    for k, name in enumerate(("diff_head_only", "diff_label_only", "diff_both")):
        cols[name] = (np.tile(decomposition[:, k], 2) if decomposition is not None
                      else pl.Series([None] * 2 * len(pc.pairs), dtype=pl.Int64))
    return nulls(pl.DataFrame(cols, schema_overrides={"sys1": pl.String, "sys2": pl.String}))


def _names(names: Sequence[str], first: np.ndarray, then: np.ndarray) -> list[str]:
    arr = np.array(names, dtype=object)
    return np.concatenate([arr[first], arr[then]]).tolist()


def change_blocks(pc: PairCounts, names: Sequence[str], labels: Sequence[str], n_groups: int,
                  groups: Sequence[str] | None = None) -> Iterator[pl.DataFrame]:
    """The ``changes`` table in blocks of :data:`PAIR_BLOCK` pairs: counts of (class, gold,
    l1, l2) over the differing units, both directions; ``attachment`` marks a change whose
    two labels are equal (METRICS 1.4)."""
    groups = labels if groups is None else groups
    label_s = pl.Series(list(labels), dtype=pl.String)
    group_s = pl.Series(list(groups), dtype=pl.String)
    class_s = pl.Series(list(CLASSES), dtype=pl.String)
    n_lab = len(labels)
    for start in range(0, len(pc.pairs), PAIR_BLOCK):
        block = range(start, min(start + PAIR_BLOCK, len(pc.pairs)))
        keys, counts, owner = [], [], []
        for p in block:
            cell = pc.cells[p].compact()
            keys.append(cell.keys)
            counts.append(cell.counts)
            owner.append(np.full(cell.keys.size, p, np.int64))
        if not keys or not sum(k.size for k in keys):
            continue
        key, count, p = np.concatenate(keys), np.concatenate(counts), np.concatenate(owner)
        l2, rest = key % n_lab, key // n_lab
        l1, rest = rest % n_lab, rest // n_lab
        g, cls = rest % n_groups, rest // n_groups
        i = np.array([pc.pairs[q][0] for q in p], np.int64)
        j = np.array([pc.pairs[q][1] for q in p], np.int64)
        yield pl.DataFrame({
            "sys1": _names(names, i, j), "sys2": _names(names, j, i),
            "class": class_s.gather(np.concatenate([cls, _MIRROR[cls]])),
            "gold": group_s.gather(np.tile(g, 2)),
            "l1": label_s.gather(np.concatenate([l1, l2])),
            "l2": label_s.gather(np.concatenate([l2, l1])),
            "attachment": np.tile(l1 == l2, 2), "count": np.tile(count, 2),
        })


def class_counts_by_group(pc: PairCounts, n_groups: int, n_labels: int) -> np.ndarray:
    """(P, 3, G): change-class counts of each pair per gold group (from the change cells)."""
    out = np.zeros((len(pc.pairs), 3, n_groups), np.int64)
    for p, cell in enumerate(pc.cells):
        cell.compact()
        out[p] = np.bincount(cell.keys // (n_labels * n_labels), weights=cell.counts,
                             minlength=3 * n_groups).reshape(3, n_groups)
    return out


def bucket_frames(units: dict[str, np.ndarray], correct: dict[str, np.ndarray],
                  pair_classes: dict[str, np.ndarray], pc: PairCounts | None,
                  names: Sequence[str], bucket_names: dict[str, list[str]],
                  missing: Collection[str] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Scores per bucket and system (``units[kind]`` (K,), ``correct[kind]`` (N, K); NULL
    for a system that lacks the view's column), and change classes per bucket and ordered
    pair (``pair_classes[kind]`` (P, 3, K)); only buckets with units."""
    scores, pairs = [], []
    gone = missing_mask(names, missing)
    for kind, n_units in units.items():
        present = np.flatnonzero(n_units)
        ids = [bucket_names[kind][b] for b in present]
        scores.append(_bucket_scores(kind, ids, n_units[present], correct[kind][:, present],
                                     names, gone))
        if pc is not None and pc.pairs:
            pairs.append(_bucket_pairs(kind, ids, n_units[present],
                                       pair_classes[kind][:, :, present], pc, names))
    return (pl.concat(scores) if scores else pl.DataFrame(),
            pl.concat(pairs) if pairs else pl.DataFrame())


def _bucket_scores(kind: str, ids: list[str], units: np.ndarray, correct: np.ndarray,
                   names: Sequence[str], gone: np.ndarray) -> pl.DataFrame:
    n, k = len(names), len(ids)
    return nulls(pl.DataFrame({
        "kind": [kind] * (n * k), "bucket": ids * n,
        "system": np.repeat(np.array(names, dtype=object), k).tolist(),
        "n_units": np.tile(units, n).astype(np.int64), "n_correct": correct.ravel(),
        "accuracy": without(ratio(correct, units).reshape(n, k), gone).ravel(),
    }, schema_overrides={"system": pl.String, "bucket": pl.String}))


def _bucket_pairs(kind: str, ids: list[str], units: np.ndarray, counts: np.ndarray,
                  pc: PairCounts, names: Sequence[str]) -> pl.DataFrame:
    """counts: (P, 3, K) classes from i to j per present bucket."""
    p_n, k = counts.shape[0], len(ids)
    i = np.repeat([p[0] for p in pc.pairs], k)
    j = np.repeat([p[1] for p in pc.pairs], k)
    fix, brk, changed = (counts[:, c, :].ravel() for c in range(3))
    return pl.DataFrame({
        "kind": [kind] * (2 * p_n * k), "bucket": ids * (2 * p_n),
        "sys1": _names(names, i, j), "sys2": _names(names, j, i),
        "n_units": np.tile(units, 2 * p_n).astype(np.int64),
        "corrections": np.concatenate([fix, brk]), "new_errors": np.concatenate([brk, fix]),
        "changed_errors": np.tile(changed, 2),
    }, schema_overrides={"bucket": pl.String, "sys1": pl.String, "sys2": pl.String})


def frequency_buckets(c: Counts, edges: np.ndarray, n_labels: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-bucket units/correct per system and (P, 3, K) pair classes when units are
    bucketed by the corpus frequency of their gold label (known only after the reduce)."""
    code = np.searchsorted(edges, c.gold_n, side="left")
    k = len(edges) + 1
    units = np.bincount(code, weights=c.gold_n, minlength=k).astype(np.int64)
    correct = np.stack([np.bincount(code, weights=row, minlength=k) for row in c.labels]
                       ).astype(np.int64) if c.labels.size else np.zeros((0, k), np.int64)
    pair_classes = None
    if c.pairs is not None:
        by_group = class_counts_by_group(c.pairs, c.gold_n.size, n_labels)
        pair_classes = np.zeros((len(c.pairs.pairs), 3, k), np.int64)
        for b in range(k):
            pair_classes[:, :, b] = by_group[:, :, code == b].sum(axis=2)
    return units, correct, pair_classes


# ------------------------------------------------------------------------------ oracles


def oracle_subsets(n: int) -> list[tuple[int, ...]]:
    """Every non-empty subset when ``n`` <= :data:`MAX_ALL_SUBSETS`; else each system,
    every pair, every leave-one-out subset and the full set."""
    if n <= MAX_ALL_SUBSETS:
        return [c for k in range(1, n + 1) for c in combinations(range(n), k)]
    loo = [tuple(i for i in range(n) if i != j) for j in range(n)]
    return [(i,) for i in range(n)] + list(combinations(range(n), 2)) + loo + [tuple(range(n))]


def oracle_correct(oc: OracleCounts, labels: np.ndarray,
                   union: np.ndarray | None = None) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """(subsets, correct units per subset and group: (S, G)). ``labels`` (N, G) holds each
    system's correct units per group; ``union`` (pairs in :func:`all pairs <combinations>`
    order, G) the units either system of a pair gets right (above MAX_ALL_SUBSETS)."""
    n = oc.n_systems
    subs = oracle_subsets(n)
    if oc.masks is not None:
        sub_masks = np.array([sum(1 << i for i in s) for s in subs], np.int64)
        hit = (sub_masks[:, None] & np.arange(1 << n)[None, :]) != 0
        return subs, hit.astype(np.int64) @ oc.masks.T
    any_right = oc.k_hist[:, 1:].sum(axis=1)
    union = oc.union if union is None else union
    rows = [labels[i] for i in range(n)]
    rows += list(union)
    rows += [any_right - oc.unique[j] for j in range(n)]
    rows.append(any_right)
    return subs, np.stack(rows).astype(np.int64)


def oracle_frames(oc: OracleCounts, names: Sequence[str], groups: Sequence[str],
                  gold_n: np.ndarray, labels: np.ndarray, union: np.ndarray | None = None,
                  subset_ids: bool = False, missing: Collection[str] = ()
                  ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``oracles`` (every subset of :func:`oracle_subsets`, with the best single member and
    the gain over it; NULL without an evaluable unit, or for a subset of systems that all
    lack the view's column) and ``oracle_labels`` (per gold label; above MAX_ALL_SUBSETS only
    for each system, the best pair, every leave-one-out subset and the full set).

    With ``subset_ids``, ``oracle_labels`` holds ``subset`` (``[k]``: the subset's index in
    :func:`oracle_subsets`) instead of ``systems``: its rows hold about N names each, so the
    full column is of size N^2 x labels; :func:`with_subset_systems` restores it piece by
    piece while writing."""
    subs, per_group = oracle_correct(oc, labels, union)
    total = per_group.sum(axis=1)
    single = labels.sum(axis=1)
    n_units = int(gold_n.sum())
    best = np.array([single[list(s)].max() for s in subs], np.int64)
    systems = [sorted(names[i] for i in s) for s in subs]
    gone = missing_mask(names, missing)
    unscored = np.array([bool(gone[list(s)].all()) for s in subs], bool)
    oracles = nulls(pl.DataFrame({
        "systems": systems, "n_systems": [len(s) for s in subs],
        "n_units": np.full(len(subs), n_units, np.int64), "n_correct": total,
        "accuracy": without(ratio(total, n_units), unscored), "best_single": best,
        "gain": without(ratio(total - best, n_units), unscored),
    }, schema_overrides={"systems": pl.List(pl.String)}))
    keep = np.array(_label_subsets(subs, total, len(names)), np.int64)
    present = np.flatnonzero(gold_n)
    k = present.size
    if subset_ids:  # a list column, like ``systems``: not a sort key of ``canonical``
        column = pl.Series("subset", [[s] for s in keep.tolist()], dtype=pl.List(pl.UInt32))
    else:
        column = pl.Series("systems", [systems[s] for s in keep], dtype=pl.List(pl.String))
    oracle_labels = pl.DataFrame({
        column.name: column.gather(np.repeat(np.arange(keep.size), k)),
        "gold_label": pl.Series([groups[g] for g in present], dtype=pl.String)
        .gather(np.tile(np.arange(k), keep.size)),
        "n": np.tile(gold_n[present], keep.size).astype(np.int64),
        "n_correct": per_group[np.ix_(keep, present)].ravel().astype(np.int64),
    })
    return oracles, oracle_labels


def subset_systems(names: Sequence[str]) -> pl.Series:
    """The sorted system names of every subset of :func:`oracle_subsets`, in its order."""
    return pl.Series("systems", [sorted(names[i] for i in s)
                                 for s in oracle_subsets(len(names))],
                     dtype=pl.List(pl.String))


def with_subset_systems(df: pl.DataFrame, systems: pl.Series, rows: int
                        ) -> Iterator[pl.DataFrame]:
    """``df`` (with a ``subset`` column from :func:`oracle_frames`) in pieces of ``rows``
    rows, each with ``systems`` (from :func:`subset_systems`) in place of ``subset``."""
    for start in range(0, df.height, rows):
        piece = df.slice(start, rows)
        ids = piece["subset"].list.first()
        yield piece.with_columns(systems.gather(ids).alias("subset")).rename(
            {"subset": "systems"})


def _label_subsets(subs: list[tuple[int, ...]], total: np.ndarray, n: int) -> list[int]:
    """Subsets that get per-label rows: all of them up to MAX_ALL_SUBSETS systems; above,
    each system, the best pair, every leave-one-out subset and the full set."""
    if n <= MAX_ALL_SUBSETS:
        return list(range(len(subs)))
    size = np.array([len(s) for s in subs])
    pair_idx = np.flatnonzero(size == 2)
    best_pair = [int(pair_idx[np.argmax(total[pair_idx])])] if pair_idx.size else []
    return [s for s in range(len(subs)) if size[s] == 1 or size[s] >= n - 1] + best_pair


def union_from_classes(labels: np.ndarray, pc: PairCounts, oc: OracleCounts, n_groups: int,
                       n_labels: int) -> np.ndarray:
    """(pairs in combinations order, G) units either system gets right: from each counted
    pair's corrections per group (right_i + corrections(i -> j)), else from the oracle's own
    union counts."""
    counted = {p: k for k, p in enumerate(pc.pairs)} if pc is not None else {}
    by_group = class_counts_by_group(pc, n_groups, n_labels) if counted else None
    stored = {p: k for k, p in enumerate(oc.union_pairs)}
    return np.stack([labels[i] + by_group[counted[(i, j)], 0] if (i, j) in counted
                     else oc.union[stored[(i, j)]]
                     for i, j in combinations(range(oc.n_systems), 2)])


def difficulty_frame(oc: OracleCounts, groups: Sequence[str]) -> pl.DataFrame:
    """Units by the number k of systems that get them right: overall (gold_label null) and
    per gold label; only non-zero cells."""
    g, k = np.nonzero(oc.k_hist)
    overall = oc.k_hist.sum(axis=0)
    ko = np.flatnonzero(overall)
    return pl.DataFrame({
        "k_correct": np.concatenate([ko, k]).astype(np.int32),
        "gold_label": [None] * ko.size + [groups[x] for x in g],
        "n": np.concatenate([overall[ko], oc.k_hist[g, k]]).astype(np.int64),
    }, schema_overrides={"gold_label": pl.String})


def mcnemar_column(fix: Sequence[int], brk: Sequence[int]) -> list[float]:
    """Exact McNemar p-values of (corrections, new errors) pairs."""
    return [mcnemar_exact(int(a), int(b)) for a, b in zip(fix, brk, strict=True)]
