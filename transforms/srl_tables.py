"""SRL (METRICS 6): the tables of summed counts (:class:`SrlCounts` of
:mod:`sysdiff.transforms.srl`): official scores, pairs over argument and predicate units
(with McNemar's test and the paired randomization of F1), role->role change tables, class
transitions, and oracle recall of every subset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import PRED_CLASSES, SRL_CLASSES, SRL_CORRECT
from sysdiff.transforms import bootstrap
from sysdiff.transforms.counts import decode_sentence_differences
from sysdiff.transforms.reduce import (
    change_blocks,
    mcnemar_column,
    oracle_correct,
    pair_ci,
    ratio,
)
from sysdiff.transforms.significance import map_cores, randomization_from_histogram
from sysdiff.transforms.srl import (
    CORRECT,
    P_CORRECT,
    P_SPURIOUS,
    SPURIOUS,
    SrlCounts,
    UnitCounts,
    Vocab,
)
from sysdiff.transforms.srl_scores import derived_counts, prf, score_rows

ALL = "ALL"
UNIT_CLASSES = {"argument": SRL_CLASSES, "predicate": PRED_CLASSES}


#: The srl_scores row (mode of each argument mode, role ALL, every PPOS) whose F1 a pair's
#: ``delta_f1`` compares, per unit type: the official arguments F1, or the predicates'.
PAIR_MODES = {"argument": ("args_labeled", "span"),
              "predicate": ("predicates_labeled", "predicates")}
SCORE_KEYS = ["mode", "role", "ppos"]


def scores_table(c: SrlCounts, names: Sequence[str], samples: F1Samples | None = None,
                 confidence: float = 0.95) -> pl.DataFrame:
    """``srl_scores`` rows of every system (``system`` by name), with the bootstrap
    interval of each row's F1 (``samples``: :func:`f1_samples`; NULL without)."""
    counts = pl.concat(c.scores)
    rows = score_rows(counts).with_columns(system=pl.col("system").cast(pl.Int64)
                                           .map_elements(lambda i: names[i],
                                                         return_dtype=pl.String))
    ci = samples.intervals(names, confidence) if samples is not None else \
        pl.DataFrame(schema={"system": pl.String, **dict.fromkeys(SCORE_KEYS, pl.String),
                             "ci_low": pl.Float64, "ci_high": pl.Float64})
    rows = rows.join(ci, on=["system", *SCORE_KEYS], how="left", nulls_equal=True,
                     maintain_order="left")
    return rows.with_columns(pl.when(pl.col("f1").is_not_null()).then(pl.col(c)).alias(c)
                             for c in ("ci_low", "ci_high"))


@dataclass(frozen=True)
class F1Samples:
    """Bootstrap samples over sentences of every srl_scores F1 of every system: ``keys``
    (mode, role, ppos) of each system and its (B x keys) samples."""

    keys: list[pl.DataFrame]
    samples: list[np.ndarray]

    def intervals(self, names: Sequence[str], confidence: float) -> pl.DataFrame:
        """(system, mode, role, ppos, ci_low, ci_high) of every row with samples."""
        frames = []
        for name, keys, got in zip(names, self.keys, self.samples, strict=True):
            low, high = bootstrap.interval(got, confidence) if keys.height else ([], [])
            frames.append(keys.with_columns(system=pl.lit(name, pl.String),
                                            ci_low=pl.Series(low, dtype=pl.Float64),
                                            ci_high=pl.Series(high, dtype=pl.Float64)))
        return pl.concat(frames).select("system", *SCORE_KEYS, "ci_low", "ci_high"
                                        ).fill_nan(None)

    def of_unit(self, unit: str) -> np.ndarray:
        """(B x N) samples of the F1 a pair of ``unit`` compares (NaN: no such row)."""
        out = []
        for keys, got in zip(self.keys, self.samples, strict=True):
            at = keys.with_row_index().filter(
                pl.col("mode").is_in(PAIR_MODES[unit]) & (pl.col("role") == ALL)
                & pl.col("ppos").is_null())["index"]
            out.append(got[:, at[0]] if at.len() else np.full(got.shape[0], np.nan))
        return np.stack(out, axis=1)


def f1_samples(c: SrlCounts, n_systems: int, units: pl.DataFrame, opts: bootstrap.Bootstrap
               ) -> F1Samples:
    """The bootstrap samples (over the sentences ``units``: sent, in corpus order) of every
    F1 of ``srl_scores``, from the per-sentence score counts (``c.sentences``), derived as
    :func:`~sysdiff.transforms.srl_scores.score_rows` derives them."""
    per_sent = pl.concat(c.sentences)
    keys, matrices = [], []
    for i in range(n_systems):
        rows = derived_counts(per_sent.filter(pl.col("system") == str(i)), ["system", "sent"])
        matrix, k = bootstrap.unit_matrix(rows.drop("system"), units, SCORE_KEYS,
                                          ["n_gold", "n_pred", "n_correct"])
        keys.append(k)
        matrices.append(matrix)
    sums = bootstrap.resample(matrices, opts)
    samples = []
    for k, x in zip(keys, sums, strict=True):
        x = x.reshape(opts.samples, k.height, 3)
        samples.append(prf(x[:, :, 0], x[:, :, 1], x[:, :, 2])[2])
    return F1Samples(keys, samples)


def unit_totals(c: SrlCounts, unit: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(correct key units per system, official predicted counts per system, key units) of
    one unit type: the F1 of a pair's delta and randomization test (head mode: eval09's
    arguments without senses, or its predicate senses; span mode: srl-eval's Overall, or
    predicates found with the right verb)."""
    if unit == "argument":
        per = c.arg_classes
        return per[:, :, CORRECT].sum(axis=1), c.found[:, 0], int(per[0, :, :SPURIOUS].sum())
    per = c.pred_classes
    return per[:, :, P_CORRECT].sum(axis=1), c.found[:, 1], int(per[0, :, :P_SPURIOUS].sum())


def f1_of(tp: np.ndarray, found: np.ndarray, gold: int) -> np.ndarray:
    """Micro F1 per system (NaN where nothing is predicted nor expected)."""
    den = found + gold
    return np.divide(2 * tp, den, out=np.full(tp.shape, np.nan), where=den > 0)


def pair_rows(c: SrlCounts, names: Sequence[str], trials: int, seed: int,
              samples: F1Samples | None = None, confidence: float = 0.95) -> pl.DataFrame:
    """``srl_pairs``: both directions of every pair, per unit type: units (key units and
    the spurious units of either system), differing units, change classes, diff, delta
    accuracy over the pair's units (from its class transitions), delta F1 (the official
    figure), McNemar p, and the paired approximate randomization over sentences of the
    units' accuracy (METRICS 1.6: the engine's exact test of the per-sentence differences
    of right units); the delta F1's bootstrap interval and p (``samples``)."""
    frames = []
    for unit, uc in c.units.items():
        frames.append(_unit_pairs(c, uc, unit, names, trials, seed,
                                  None if samples is None else samples.of_unit(unit),
                                  confidence))
    return pl.concat(frames) if frames else pl.DataFrame()


def _unit_pairs(c: SrlCounts, uc: UnitCounts, unit: str, names: Sequence[str], trials: int,
                seed: int, samples: np.ndarray | None = None, confidence: float = 0.95
                ) -> pl.DataFrame:
    pc = uc.pairs
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    tp, found, gold = unit_totals(c, unit)
    f1 = f1_of(tp, found, gold)
    ok = np.array([k in SRL_CORRECT for k in UNIT_CLASSES[unit]])
    both = uc.typed.sum(axis=1)                                   # (P, C, C)
    right1 = (both * ok[None, :, None]).sum(axis=(1, 2))
    right2 = (both * ok[None, None, :]).sum(axis=(1, 2))
    delta = ratio(right2 - right1, pc.n_units)

    ar = np.array(map_cores(lambda d: randomization_from_histogram(
        *decode_sentence_differences(d), trials, seed), pc.sent_diffs), np.float64)
    ci = pair_ci(samples, i, j, f1[j] - f1[i], confidence)
    arr = np.array(names, dtype=object)
    return pl.DataFrame({
        "unit": [unit] * (2 * len(pc.pairs)),
        "sys1": np.concatenate([arr[i], arr[j]]).tolist(),
        "sys2": np.concatenate([arr[j], arr[i]]).tolist(),
        "n_units": np.tile(pc.n_units, 2), "n_diff": np.tile(n_diff, 2),
        "corrections": np.concatenate([fix, brk]), "new_errors": np.concatenate([brk, fix]),
        "changed_errors": np.tile(changed, 2), "diff": np.tile(ratio(n_diff, pc.n_units), 2),
        "delta_acc": np.concatenate([delta, -delta]),
        "delta_f1": np.concatenate([f1[j] - f1[i], f1[i] - f1[j]]),
        "delta_ci_low": ci.low, "delta_ci_high": ci.high,
        "mcnemar_p": np.tile(mcnemar_column(fix, brk), 2), "ar_p": np.tile(ar, 2),
        "bootstrap_p": ci.p,
    }, schema_overrides={"unit": pl.String, "sys1": pl.String, "sys2": pl.String}
    ).with_columns(pl.col("delta_f1", "delta_ci_low", "delta_ci_high", "bootstrap_p")
                   .fill_nan(None))


def groups_of(unit: str, vocab: Vocab) -> tuple[list[str], list[str | None]]:
    """(group names, the change tables' gold column per engine group): roles (a spurious
    argument's group has no gold role) or predicate PPOS."""
    if unit == "argument":
        roles = list(vocab.roles)
        return roles, [*roles, *([None] * len(roles))]
    return list(vocab.pos), list(vocab.pos)


def change_rows(c: SrlCounts, names: Sequence[str], vocab: Vocab) -> pl.DataFrame:
    """``srl_changes``: the role->role change table of every ordered pair: counts of
    (class, gold role, role under sys1, role under sys2) over the differing argument units
    (``<boundary>``, ``<missed>``, ``<absent>`` where a system has no role there); for
    predicate units, classes by the key word's PPOS."""
    frames = []
    for unit, uc in c.units.items():
        labels = vocab.labels if unit == "argument" else list(PRED_CLASSES)
        _, gold = groups_of(unit, vocab)
        for block in change_blocks(uc.pairs, names, labels, len(gold), gold):
            frames.append(block.drop("attachment").with_columns(unit=pl.lit(unit)))
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames).group_by("unit", "sys1", "sys2", "class", "gold", "l1", "l2",
                                      maintain_order=True).agg(pl.col("count").sum())


def transition_rows(c: SrlCounts, names: Sequence[str], vocab: Vocab) -> pl.DataFrame:
    """``srl_transitions``: the class transition matrix (c1 under sys1 -> c2 under sys2)
    of every ordered pair over the pair's units, for ``ALL`` and each role (arguments) or
    PPOS (predicates); cells with a count only."""
    frames = []
    for unit, uc in c.units.items():
        groups, _ = groups_of(unit, vocab)
        classes = pl.Series(list(UNIT_CLASSES[unit]), dtype=pl.String)
        pc = uc.pairs
        i = np.array([p[0] for p in pc.pairs], np.int64)
        j = np.array([p[1] for p in pc.pairs], np.int64)
        typed = np.concatenate([uc.typed.sum(axis=1, keepdims=True), uc.typed], axis=1)
        both = np.concatenate([typed, typed.transpose(0, 1, 3, 2)])
        arr = np.array(names, dtype=object)
        sys1, sys2 = np.concatenate([arr[i], arr[j]]), np.concatenate([arr[j], arr[i]])
        p, g, c1, c2 = np.nonzero(both)
        label = pl.Series([ALL, *groups], dtype=pl.String)
        frames.append(pl.DataFrame({
            "unit": [unit] * p.size, "sys1": sys1[p].tolist(), "sys2": sys2[p].tolist(),
            "label": label.gather(g), "c1": classes.gather(c1), "c2": classes.gather(c2),
            "count": both[p, g, c1, c2],
        }, schema_overrides={"unit": pl.String, "sys1": pl.String, "sys2": pl.String}))
    return pl.concat(frames) if frames else pl.DataFrame()


def oracle_rows(c: SrlCounts, names: Sequence[str], vocab: Vocab) -> pl.DataFrame:
    """``srl_oracles``: for every subset, key units that at least one member gets correct,
    overall (``ALL``) and per role (arguments) or PPOS (predicates), with the best member's
    count and the gain in recall over it."""
    frames = []
    for unit, uc in c.units.items():
        groups, _ = groups_of(unit, vocab)
        per = c.arg_classes if unit == "argument" else c.pred_classes
        right = CORRECT if unit == "argument" else P_CORRECT
        spurious = SPURIOUS if unit == "argument" else P_SPURIOUS
        correct = per[:, :, right]                          # (N, G)
        gold = per[0, :, :spurious].sum(axis=1) if per.shape[0] else np.zeros(len(groups))
        subs, per_group = oracle_correct(uc.oracle, correct)
        keep = np.flatnonzero(gold)
        label = [ALL, *(groups[k] for k in keep)]
        n_rows = np.r_[gold.sum(), gold[keep]]
        got = np.concatenate([per_group.sum(axis=1, keepdims=True), per_group[:, keep]],
                             axis=1)
        single = np.concatenate([correct.sum(axis=1, keepdims=True), correct[:, keep]],
                                axis=1)
        best = np.stack([single[list(s)].max(axis=0) for s in subs]) if subs else got
        k = len(label)
        frames.append(pl.DataFrame({
            "unit": [unit] * (k * len(subs)),
            "systems": [sorted(names[x] for x in s) for s in subs for _ in range(k)],
            "n_systems": np.repeat([len(s) for s in subs], k).astype(np.int64),
            "label": label * len(subs),
            "n_gold": np.tile(n_rows, len(subs)).astype(np.int64),
            "n_correct": got.ravel().astype(np.int64),
            "recall": _null_ratio(got, n_rows[None, :]).ravel(),
            "best_single": best.ravel().astype(np.int64),
            "gain": _null_ratio(got - best, n_rows[None, :]).ravel(),
        }, schema_overrides={"unit": pl.String, "systems": pl.List(pl.String),
                             "label": pl.String}).with_columns(
            pl.col("recall", "gain").fill_nan(None)))
    return pl.concat(frames) if frames else pl.DataFrame()


def _null_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.broadcast_arrays(np.asarray(num, np.float64), np.asarray(den, np.float64))
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


__all__ = ["ALL", "change_rows", "oracle_rows", "pair_rows", "scores_table",
           "transition_rows"]
