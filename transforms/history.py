"""Version histories: systems named ``NAME@VERSION`` compared with their predecessor and with
the best version before them (METRICS 1.5-1.6 applied along a history).

Versions of a name are ordered by an explicit order (the run file's ``[versions]``), else by
the natural order of the version strings (``ud2.8`` before ``ud2.16``). Every figure comes
from the tables already computed: a score per system and the pair counts with McNemar's p.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import polars as pl

#: The columns of the inputs: scores (system, score, and its interval ci_low, ci_high) and
#: pairs (sys1, sys2, corrections, new_errors, changed_errors, mcnemar_p, and the delta's
#: interval and bootstrap p), both with the same grouping keys (e.g. view, punct).
SCORE_COLUMNS = ["score", "ci_low", "ci_high"]
PAIR_COLUMNS = ["corrections", "new_errors", "changed_errors", "mcnemar_p", "delta_ci_low",
                "delta_ci_high", "bootstrap_p"]
_CHUNK = re.compile(r"(\d+)")


def natural_key(version: str) -> tuple:
    """Sort key that orders digit runs by value: ``2.8 < 2.16``, ``v9 < v10``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in _CHUNK.split(version) if part)


def version_order(systems: Sequence[str], explicit: Mapping[str, Sequence[str]] | None = None
                  ) -> dict[str, list[tuple[str, str]]]:
    """NAME -> [(version, system)] in history order, for the systems named NAME@VERSION.
    Versions listed in ``explicit[NAME]`` come first, in that order; the others follow in
    natural order."""
    explicit = explicit or {}
    by_name: dict[str, list[str]] = {}
    for s in systems:
        name, sep, version = s.partition("@")
        if sep and version:
            by_name.setdefault(name, []).append(version)
    out = {}
    for name, versions in by_name.items():
        listed = list(explicit.get(name, []))
        rank = {v: k for k, v in enumerate(listed)}
        ordered = sorted(versions, key=lambda v: (v not in rank, rank.get(v, 0), natural_key(v)))
        out[name] = [(v, f"{name}@{v}") for v in ordered]
    return out


def history_table(scores: pl.DataFrame, pairs: pl.DataFrame, keys: Sequence[str],
                  explicit: Mapping[str, Sequence[str]] | None = None) -> pl.DataFrame:
    """One row per (keys..., name, version): the score and its interval, the step from the
    previous version (delta and its interval, corrections, new errors, changed errors,
    McNemar p, bootstrap p) and from the best version before it. ``scores`` has ``keys,
    system`` and :data:`SCORE_COLUMNS`; ``pairs`` has ``keys, sys1, sys2`` and
    :data:`PAIR_COLUMNS` (both directions; the interval columns may be left out: NULL)."""
    orders = version_order(scores["system"].unique().to_list(), explicit)
    scores, pairs = _with_optional(scores, ["ci_low", "ci_high"]), \
        _with_optional(pairs, ["delta_ci_low", "delta_ci_high", "bootstrap_p"])
    rows = []
    for group, sc in scores.group_by(list(keys), maintain_order=True):
        score = dict(zip(sc["system"], sc["score"], strict=True))
        ci = {s: (lo, hi) for s, lo, hi in sc.select("system", "ci_low", "ci_high").rows()}
        pr = pairs.filter(pl.all_horizontal(pl.col(k).eq_missing(v)
                                            for k, v in zip(keys, group, strict=True)))
        step = {(a, b): r for a, b, *r in pr.select("sys1", "sys2", *PAIR_COLUMNS).rows()}
        base = dict(zip(keys, group, strict=True))
        for name, versions in sorted(orders.items()):
            rows += _history_rows(base, name, versions, score, ci, step)
    return pl.DataFrame(rows, schema=_schema(scores, keys), orient="row")


def _with_optional(df: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """``df`` with the interval columns it lacks as NULL (a run without intervals)."""
    return df.with_columns(pl.lit(None, pl.Float64).alias(c) for c in columns
                           if c not in df.columns)


def _history_rows(base: dict, name: str, versions: list[tuple[str, str]],
                  score: dict[str, float | None], ci: dict[str, tuple], step: dict
                  ) -> list[tuple]:
    """The rows of one history: each version against its predecessor and its best
    predecessor (the earliest of equal best scores; a version without a score (NULL: not
    evaluated) is never the best, and every delta from or to it is NULL)."""
    rows = []
    previous = best = None
    for position, (version, system) in enumerate(versions, start=1):
        if system not in score:
            continue
        s = score[system]
        prev = _step(previous, system, score, step)
        top = _step(best, system, score, step)
        delta, fix, brk, changed, mcnemar, low, high, p = prev
        rows.append((*base.values(), name, version, position,
                     previous and previous.partition("@")[2], s, *ci[system], delta, low,
                     high, fix, brk, changed, mcnemar, p, best and best.partition("@")[2],
                     score[best] if best else None, top[0], top[4]))
        previous = system
        if s is not None and (best is None or s > score[best]):
            best = system
    return rows


def _step(before: str | None, system: str, score: dict[str, float], step: dict) -> tuple:
    """(delta, corrections, new errors, changed errors, McNemar p, the delta's interval,
    bootstrap p) from ``before``."""
    if before is None:
        return (None,) * (1 + len(PAIR_COLUMNS))
    counts = step.get((before, system), (None,) * len(PAIR_COLUMNS))
    a, b = score[system], score[before]
    return (None if a is None or b is None else a - b, *counts)


def _schema(scores: pl.DataFrame, keys: Sequence[str]) -> dict:
    return {**{k: scores.schema[k] for k in keys}, "name": pl.String, "version": pl.String,
            "position": pl.Int64, "previous": pl.String, "score": pl.Float64,
            "ci_low": pl.Float64, "ci_high": pl.Float64, "delta": pl.Float64,
            "delta_ci_low": pl.Float64, "delta_ci_high": pl.Float64,
            "corrections": pl.Int64, "new_errors": pl.Int64, "changed_errors": pl.Int64,
            "mcnemar_p": pl.Float64, "bootstrap_p": pl.Float64, "best_version": pl.String,
            "best_score": pl.Float64, "delta_best": pl.Float64, "mcnemar_p_best": pl.Float64}
