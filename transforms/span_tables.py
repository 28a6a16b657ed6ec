"""Spans (METRICS 5): the tables of summed span counts (:class:`SpanCounts` of
:mod:`sysdiff.transforms.spans`): scores, pairs (with the paired approximate randomization
of F1), transitions, oracles and class counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import SPAN_CLASSES
from sysdiff.transforms import bootstrap
from sysdiff.transforms.counts import Sparse
from sysdiff.transforms.reduce import (
    mcnemar_column,
    nulls,
    oracle_correct,
    oracle_subsets,
    pair_ci,
    ratio,
    score_intervals,
)
from sysdiff.transforms.significance import fair_sums, map_cores
from sysdiff.transforms.spans import _D, SPURIOUS, SpanCounts

ALL = "ALL"

# ------------------------------------------------------------------------------ tables


def prf(correct: np.ndarray, gold: np.ndarray, pred: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1. No number without data: P is NaN (NULL) without a predicted
    span, R and F1 without a key span (conlleval and seqeval print 0 there); with key spans,
    F1 is 0 when nothing is correct (or nothing predicted)."""
    p, r = ratio(correct, pred), ratio(correct, gold)
    f = ratio(2 * p * r, p + r)
    return p, r, np.where(np.asarray(gold) > 0, np.nan_to_num(f, nan=0.0), np.nan)


def f1_samples(c: SpanCounts, opts: bootstrap.Bootstrap) -> np.ndarray:
    """(B, N, 1 + T) bootstrap samples of every system's F1: micro (``ALL``), then per type
    (from the per-sentence rows of :func:`~sysdiff.transforms.spans.sentence_rows`)."""
    t_n, n = c.gold.size, c.pred.shape[0]
    (sums,) = bootstrap.resample([c.sentences.matrix()], opts)
    gold = sums[:, :t_n]
    rest = sums[:, t_n:].reshape(opts.samples, n, 2, t_n)

    def with_all(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x.sum(axis=-1, keepdims=True), x], axis=-1)

    return bootstrap.f1(with_all(rest[:, :, 1]), with_all(gold)[:, None, :],
                        with_all(rest[:, :, 0]))


def score_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str],
               samples: np.ndarray | None = None, confidence: float = 0.95) -> pl.DataFrame:
    """``span_scores``: per system the micro average (``ALL``) and every type with a key or
    a predicted span, with F1's bootstrap interval from ``samples`` (:func:`f1_samples`)."""
    rows = []
    for i, name in enumerate(names):
        gold = np.r_[c.gold.sum(), c.gold]
        pred = np.r_[c.pred[i].sum(), c.pred[i]]
        right = np.r_[c.correct[i].sum(), c.correct[i]]
        keep = np.r_[True, (c.gold + c.pred[i]) > 0]
        p, r, f = prf(right, gold, pred)
        low, high = score_intervals(None if samples is None else samples[:, i, keep],
                                    int(keep.sum()), confidence)
        low, high = np.where(np.isnan(f[keep]), np.nan, low), \
            np.where(np.isnan(f[keep]), np.nan, high)
        rows.append(pl.DataFrame({
            "system": [name] * int(keep.sum()),
            "type": [ALL, *(t for t, k in zip(types, keep[1:], strict=True) if k)],
            "n_gold": gold[keep], "n_pred": pred[keep], "n_correct": right[keep],
            "precision": p[keep], "recall": r[keep], "f1": f[keep], "ci_low": low,
            "ci_high": high},
            schema_overrides={"system": pl.String, "type": pl.String}).pipe(nulls))
    return pl.concat(rows) if rows else pl.DataFrame()


def f1_of(c: SpanCounts) -> np.ndarray:
    """Micro F1 of each system."""
    return prf(c.correct.sum(axis=1), np.full(c.pred.shape[0], c.gold.sum()),
               c.pred.sum(axis=1))[2]


def pair_rows(c: SpanCounts, names: Sequence[str], trials: int, seed: int,
              samples: np.ndarray | None = None, confidence: float = 0.95) -> pl.DataFrame:
    """``span_pairs``: both directions of every pair: units (key spans and the spurious spans
    of either system), differing units, change classes, diff, delta F1 (sys2 - sys1) with
    its bootstrap interval and p (``samples``: :func:`f1_samples`), exact McNemar p over
    the units and the paired approximate randomization p of F1 by sentence."""
    pc = c.pairs
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    f1 = f1_of(c)
    tp, found = c.correct.sum(axis=1), c.pred.sum(axis=1)
    gold = int(c.gold.sum())

    def ar_p(job: tuple[Sparse, tuple[int, int]]) -> float:
        diffs, (a, b) = job
        return f1_randomization(*_decode_f1(diffs), (tp[a], found[a]), (tp[b], found[b]),
                                gold, trials, seed)

    ar = np.array(map_cores(ar_p, zip(c.sent_f1, pc.pairs, strict=True)), np.float64)
    # without a key span F1 is NULL, and so are its delta and the tests of the pair
    tested = ~np.isnan(f1[i] - f1[j]) & (pc.n_units > 0)
    mcnemar = np.where(tested, mcnemar_column(fix, brk), np.nan)
    ar = np.where(tested, ar, np.nan)
    ci = pair_ci(None if samples is None else samples[:, :, 0], i, j,
                 np.where(tested, f1[j] - f1[i], np.nan), confidence)
    arr = np.array(names, dtype=object)
    return nulls(pl.DataFrame({
        "sys1": np.concatenate([arr[i], arr[j]]).tolist(),
        "sys2": np.concatenate([arr[j], arr[i]]).tolist(),
        "n_units": np.tile(pc.n_units, 2), "n_diff": np.tile(n_diff, 2),
        "corrections": np.concatenate([fix, brk]), "new_errors": np.concatenate([brk, fix]),
        "changed_errors": np.tile(changed, 2), "diff": np.tile(
            np.where(pc.n_units > 0, ratio(n_diff, pc.n_units), np.nan), 2),
        "delta_f1": np.concatenate([f1[j] - f1[i], f1[i] - f1[j]]),
        "delta_ci_low": ci.low, "delta_ci_high": ci.high,
        "mcnemar_p": np.tile(mcnemar, 2), "ar_p": np.tile(ar, 2), "bootstrap_p": ci.p,
    }, schema_overrides={"sys1": pl.String, "sys2": pl.String}))


def _decode_f1(s: Sparse) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s.compact()
    return s.keys // (2 * _D) - _D, s.keys % (2 * _D) - _D, s.counts


def f1_randomization(d_tp: np.ndarray, d_pred: np.ndarray, m: np.ndarray,
                     first: tuple[int, int], second: tuple[int, int], gold: int,
                     trials: int, seed: int) -> float:
    """Paired approximate randomization of micro F1 over sentences (METRICS 1.6 for F1).

    Sentences whose (TP, predicted) counts differ by (``d_tp``, ``d_pred``) = second -
    first, ``m`` of each; each trial swaps the two systems' counts of every sentence with
    probability 1/2 (a binomial number of each kind), and ``p = (#{|delta*| >= |delta|} + 1)
    / (trials + 1)``; ``first``/``second`` = (TP, predicted) totals."""
    if m.size == 0:
        return 1.0

    def f1(tp: np.ndarray, found: np.ndarray) -> np.ndarray:
        return ratio(2 * tp, found + gold)

    observed = abs(float(f1(np.float64(second[0]), np.float64(second[1]))
                         - f1(np.float64(first[0]), np.float64(first[1]))))
    kinds, n, shift = _opposites_merged(d_tp, d_pred, m)
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < trials:
        k = min(2048, trials - done)
        moved = fair_sums(n, kinds, k, rng) + shift
        moved_tp, moved_pred = moved[:, 0], moved[:, 1]
        delta = (f1(second[0] - moved_tp, second[1] - moved_pred)
                 - f1(first[0] + moved_tp, first[1] + moved_pred))
        hits += int(np.count_nonzero(np.abs(delta) >= observed - 1e-12))
        done += k
    return (hits + 1) / (trials + 1)


def _opposites_merged(d_tp: np.ndarray, d_pred: np.ndarray, m: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kinds of sentence differences (rows of (TP, predicted)) with each one and its
    opposite as one kind, the sentences of each, and the shift: what the swapped sentences
    move is ``sum_k H_k * kinds[k] + shift``, H_k ~ Binomial(n_k, 1/2).

    A kind ``d`` of ``m`` sentences moves ``d * H``, H ~ Binomial(m, 1/2); written as its
    opposite ``c = -d`` it moves ``c * (m - H) + d * m``, and ``m - H`` is again
    Binomial(m, 1/2), independent of the other kinds: so kinds equal up to sign add their
    sentences, and the flipped ones' ``d * m`` is a constant shift (half the draws)."""
    flip = (d_tp < 0) | ((d_tp == 0) & (d_pred < 0))
    sign = np.where(flip, -1, 1)
    c_tp, c_pred = d_tp * sign, d_pred * sign
    shift = np.array([(d_tp * m)[flip].sum(), (d_pred * m)[flip].sum()], np.int64)
    kinds, inverse = np.unique(np.stack([c_tp, c_pred], axis=1), axis=0, return_inverse=True)
    n = np.bincount(inverse.ravel(), weights=m, minlength=kinds.shape[0]).astype(np.int64)
    return kinds, n, shift


def transition_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]
                    ) -> pl.DataFrame:
    """``span_transitions``: the full 6x6 class matrix of every ordered pair over the pair's
    units, for ``ALL`` and each type with units."""
    pc = c.pairs
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    keep = np.flatnonzero((c.gold + c.pred.sum(axis=0)) > 0)
    typed = np.concatenate([c.typed.sum(axis=1, keepdims=True), c.typed[:, keep]], axis=1)
    both = np.concatenate([typed, typed.transpose(0, 1, 3, 2)])
    arr = np.array(names, dtype=object)
    sys1, sys2 = np.concatenate([arr[i], arr[j]]), np.concatenate([arr[j], arr[i]])
    p, g, c1, c2 = np.indices(both.shape).reshape(4, -1)
    classes = pl.Series(SPAN_CLASSES, dtype=pl.String)
    type_names = pl.Series([ALL, *(types[k] for k in keep)], dtype=pl.String)
    return pl.DataFrame({
        "sys1": sys1[p].tolist(), "sys2": sys2[p].tolist(), "type": type_names.gather(g),
        "c1": classes.gather(c1), "c2": classes.gather(c2), "count": both[p, g, c1, c2],
    }, schema_overrides={"sys1": pl.String, "sys2": pl.String})


def oracle_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]) -> pl.DataFrame:
    """``span_oracles``: for every subset (:func:`oracle_subsets`), key spans that at least one
    member gets correct, overall (``ALL``) and per key type, with the best member's count and
    the gain in recall over it."""
    subs, per_type = oracle_correct(c.oracle, c.correct)
    keep = np.flatnonzero(c.gold)
    label = [ALL, *(types[k] for k in keep)]
    n_rows = np.r_[c.gold.sum(), c.gold[keep]]
    got = np.concatenate([per_type.sum(axis=1, keepdims=True), per_type[:, keep]], axis=1)
    single = np.concatenate([c.correct.sum(axis=1, keepdims=True), c.correct[:, keep]], axis=1)
    best = np.stack([single[list(s)].max(axis=0) for s in subs]) if subs else got
    k = len(label)
    return nulls(pl.DataFrame({
        "systems": [sorted(names[x] for x in s) for s in subs for _ in range(k)],
        "n_systems": np.repeat([len(s) for s in subs], k).astype(np.int64),
        "type": label * len(subs), "n_gold": np.tile(n_rows, len(subs)).astype(np.int64),
        "n_correct": got.ravel().astype(np.int64),
        "recall": ratio(got, n_rows[None, :]).ravel(),
        "best_single": best.ravel().astype(np.int64),
        "gain": ratio(got - best, n_rows[None, :]).ravel(),
    }, schema_overrides={"systems": pl.List(pl.String), "type": pl.String}))


def class_count_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]
                     ) -> pl.DataFrame:
    """Class counts per system and type (``ALL`` first): the units of each system."""
    keep = np.flatnonzero(c.classes.sum(axis=(0, 2)))
    rows = []
    for i, name in enumerate(names):
        per = np.concatenate([c.classes[i].sum(axis=0, keepdims=True), c.classes[i, keep]])
        frame = pl.DataFrame(per[:, :SPURIOUS + 1], schema=list(SPAN_CLASSES[:SPURIOUS + 1]),
                             orient="row")
        rows.append(frame.with_columns(system=pl.lit(name), type=pl.Series(
            [ALL, *(types[k] for k in keep)], dtype=pl.String)))
    return pl.concat(rows) if rows else pl.DataFrame()


__all__ = ["ALL", "oracle_subsets"]
