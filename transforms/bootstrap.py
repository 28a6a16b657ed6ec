"""Paired bootstrap confidence intervals (METRICS 1.6b), from per-unit count rows.

The resampled units are sentences (documents for coreference). Every task keeps, beside its
summed counts, one row of additive counts per unit (:class:`UnitRows`: shards give pieces
keyed by their first unit, assembled in corpus order). A bootstrap sample is a row of
multinomial weights over the n units (how often each unit is drawn when n units are drawn
with replacement); the sums of a sample are that row times the count rows, so every sample
of every score of every system is one matrix product ``W @ X`` (W: B x n, drawn once per run,
a block of rows at a time so that memory stays bounded). Scores are recomputed from the
sample sums by the task (ratios last, as for the published figures). Integer counts give
exact sums in float64 whatever the order of the additions (:func:`exact`), so the matrices
of one pass are multiplied as one product of their distinct columns, bit for bit what a
product per matrix gives; the token flow passes its accuracies' and its CoNLL 2018 F1s'
rows together (one W for both).

Row ``r`` of W is drawn by its own generator, seeded with ``(seed, r)``: W depends only on
the seed, B and n, never on shards, workers, blocks or the systems of the run; every system
and pair of a run sees the same samples (a paired bootstrap, Koehn 2004).

A score's interval is the percentile interval of its samples (numpy's ``linear``
quantiles); a sample in which the score has no data (a 0/0) is left out. A pair's
``bootstrap_p`` is twice the share of samples whose delta has the sign opposite to the
observed delta's, or is 0, capped at 1 (1 when the observed delta is 0).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

K = TypeVar("K", bound=Hashable)
DEFAULT_SAMPLES = 1_000
DEFAULT_CONFIDENCE = 0.95
#: Bytes of sample weights held at once (a block of rows of W).
BLOCK_BYTES = 1 << 26
#: Rows whose values look a column up in :func:`distinct_columns`.
PROBE_ROWS = 1024
#: Threads that draw the rows of a block of W.
DRAW_THREADS = min(4, os.cpu_count() or 1)
#: Distinct columns up to which ``W @ X`` runs on one BLAS thread (:func:`blas_threads`).
ONE_BLAS_THREAD_COLUMNS = 256
#: Held while a pass sets BLAS's threads (a process-wide setting): passes of several
#: threads do not overlap, so the setting each restores is the process's own.
BLAS_SETTING = threading.Lock()


@dataclass(frozen=True)
class Bootstrap:
    """The interval settings of a run: B samples (0: no intervals), seed, confidence."""

    samples: int = DEFAULT_SAMPLES
    seed: int = 0
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def on(self) -> bool:
        return self.samples > 0

    def options(self) -> str:
        """How the intervals of a row were drawn, for its ``options``."""
        if not self.on:
            return "bootstrap:off"
        return f"bootstrap:{self.samples}|confidence:{self.confidence:g}|seed:{self.seed}"


# ------------------------------------------------------------------------------ unit rows


@dataclass
class UnitRows:
    """Count rows per unit (sentence or document) of a corpus, as pieces keyed by the
    corpus-wide index of their first unit (a shard's piece: its units x the task's count
    columns). Pieces add up by union; :meth:`matrix` stacks them in corpus order.

    A piece of integer counts is kept in the smallest integer type that holds it
    (:func:`compact`: a sentence's counts are small, so a corpus' rows take a fraction of
    their int64 size); :meth:`matrix` gives them back in the type they came in."""

    pieces: dict[int, np.ndarray] = field(default_factory=dict)
    dtype: np.dtype | None = None  # the type the rows came in (None: the pieces')

    @classmethod
    def of(cls, first: int, rows: np.ndarray) -> UnitRows:
        rows = np.asarray(rows)
        return cls({int(first): compact(rows)}, rows.dtype)

    def merge(self, other: UnitRows) -> UnitRows:
        """Add the pieces of ``other`` (in place) and return self."""
        overlap = self.pieces.keys() & other.pieces.keys()
        if overlap:
            raise ValueError(f"units counted twice (pieces at {sorted(overlap)[:3]})")
        self.pieces.update(other.pieces)
        self.dtype = self.dtype if self.dtype is not None else other.dtype
        return self

    @property
    def n_units(self) -> int:
        return sum(p.shape[0] for p in self.pieces.values())

    @property
    def width(self) -> int:
        return next(iter(self.pieces.values())).shape[1] if self.pieces else 0

    def ordered(self) -> list[np.ndarray]:
        """The pieces in corpus order."""
        return [self.pieces[k] for k in sorted(self.pieces)]

    def column(self, j: int, out: np.ndarray) -> None:
        """Column ``j`` of the rows, in corpus order, into ``out`` (n)."""
        at = 0
        for piece in self.ordered():
            out[at:at + piece.shape[0]] = piece[:, j]
            at += piece.shape[0]

    def exact(self) -> bool:
        """:func:`exact` of the stacked rows, piece by piece."""
        pieces = self.ordered()
        if not all(exact(p) for p in pieces):
            return False
        top = max((max(abs(float(p.max())), abs(float(p.min()))) for p in pieces if p.size),
                  default=0.0)
        return self.n_units * top < 2.0 ** 53

    def matrix(self, width: int | None = None) -> np.ndarray:
        """The rows of every unit in corpus order (n x columns)."""
        if not self.pieces:
            return np.zeros((0, width or 0))
        out = np.concatenate(self.ordered())
        return out.astype(self.dtype, copy=False) if self.dtype is not None else out


def compact(rows: np.ndarray) -> np.ndarray:
    """Integer rows in the smallest signed integer type that holds them (others as they
    are)."""
    if rows.dtype.kind not in "iu" or not rows.size:
        return rows
    lo, hi = int(rows.min()), int(rows.max())
    for t in (np.int8, np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return rows.astype(t)
    return rows


def unit_matrix(rows: pl.DataFrame, units: pl.DataFrame, keys: Sequence[str],
                values: Sequence[str]) -> tuple[np.ndarray, pl.DataFrame]:
    """Long count rows (the unit's columns, those of ``units``; ``keys``; ``values``) as the
    per-unit matrix of :func:`resample`: (n units in the order of ``units``) x (distinct
    keys, sorted) x values, flattened to n x (keys x values); and the keys in that order.
    Rows of a unit not in ``units`` are an error."""
    on = list(units.columns)
    index = units.with_row_index("_u")
    found = rows.join(index, on=on, how="left", nulls_equal=True)
    if found["_u"].null_count():
        outside = found.filter(pl.col("_u").is_null()).select(on).unique().head(3).rows()
        raise ValueError(f"count rows of units outside the corpus: {outside}")
    groups = found.select(keys).unique().sort(list(keys), nulls_last=True)
    found = found.join(groups.with_row_index("_k"), on=list(keys), nulls_equal=True)
    out = np.zeros((units.height, groups.height, len(values)))
    np.add.at(out, (found["_u"].to_numpy(), found["_k"].to_numpy()),
              found.select(pl.col(list(values)).cast(pl.Float64).fill_null(0.0)).to_numpy())
    return out.reshape(units.height, -1), groups


# ------------------------------------------------------------------------------ samples


def weight_rows(n: int, start: int, stop: int, seed: int,
                out: np.ndarray | None = None) -> np.ndarray:
    """Rows ``start .. stop - 1`` of W: how often each of the n units is drawn in each
    sample (n draws with replacement); float64, so that ``W @ X`` of integer counts is
    exact. Written into ``out`` (its first rows) when given: a buffer reused block after
    block. Rows are drawn by up to :data:`DRAW_THREADS` threads at once (numpy draws and
    counts without the GIL); each row has its own generator, so W is the same."""
    out = np.empty((stop - start, n), np.float64) if out is None else out[:stop - start]

    def draw(rows: range) -> None:
        for r in rows:
            rng = np.random.default_rng([seed, r])
            out[r - start] = np.bincount(rng.integers(0, n, n), minlength=n)

    threads = max(1, min(DRAW_THREADS, (stop - start) // 8))  # (8 rows a thread at least)
    if threads == 1:
        draw(range(start, stop))
        return out
    step = -(-(stop - start) // threads)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(draw, [range(a, min(stop, a + step)) for a in range(start, stop, step)]))
    return out


def exact(x: np.ndarray) -> bool:
    """Every sum of ``W @ x`` is exact in float64, whatever the order of its additions:
    x is integer-valued and n * max|x| < 2^53. A row of W is n draws, so each partial sum
    of a product is an integer of magnitude at most n * max|x|, which float64 holds
    exactly; the product's bits then do not depend on how BLAS groups the additions, nor
    on the other columns multiplied with x."""
    if not x.size:
        return True
    if x.dtype.kind not in "biu" and not np.array_equal(x, np.rint(x)):
        return False  # (NaN too)
    return x.shape[0] * max(abs(float(x.max())), abs(float(x.min()))) < 2.0 ** 53


@dataclass(frozen=True)
class Columns:
    """The distinct columns of integer matrices side by side (``distinct``: n x K,
    float64) and, per matrix, where each of its columns is in ``distinct``."""

    distinct: np.ndarray
    where: list[np.ndarray]


def distinct_columns(matrices: Sequence[np.ndarray | UnitRows], n: int) -> Columns:
    """The distinct columns of (n x k_i) matrices (arrays, or :class:`UnitRows` read piece
    by piece: never stacked whole), once each (compared by value: an int32 and a float64
    column of the same numbers are one column). Columns are looked up by their values on a
    fixed sample of rows, then compared whole."""
    probe = np.unique(np.linspace(0, n - 1, min(n, PROBE_ROWS)).astype(np.intp))
    index: dict[bytes, list[int]] = {}  # values on the probe rows -> distinct columns
    # room for every column, a column at a time: the pages of columns never written are
    # never touched (the distinct ones are a view of the first)
    xs = [rows_of(x) for x in matrices]
    out = np.empty((n, sum(x.width for x in xs)), np.float64, order="F")
    k = 0
    where = []
    column = np.empty(n, np.float64)
    for x in xs:
        at = np.empty(x.width, np.intp)
        for j in range(at.size):
            x.column(j, column)
            bucket = index.setdefault(column[probe].tobytes(), [])
            same = [c for c in bucket if np.array_equal(out[:, c], column)]
            if not same:
                out[:, k] = column
                bucket.append(k)
                k += 1
            at[j] = same[0] if same else k - 1
        where.append(at)
    return Columns(out[:, :k], where)


def rows_of(x: np.ndarray | UnitRows) -> UnitRows:
    """``x`` as :class:`UnitRows` (an array: one piece, kept as it is)."""
    return x if isinstance(x, UnitRows) else UnitRows({0: np.asarray(x)})


def resample(matrices: Sequence[np.ndarray | UnitRows], opts: Bootstrap) -> list[np.ndarray]:
    """The sample sums of each (n x k_i) matrix of per-unit counts (an array, or
    :class:`UnitRows`): (B x k_i) = ``W @ X``, W drawn a block of rows at a time (each row
    once, whatever the number of matrices).

    The :func:`exact` matrices (integer counts) are multiplied as one: their distinct
    columns side by side, one product per block (the same bits as a product per matrix,
    see :func:`exact`), in blocks of at least as many rows as it has columns (W, not X,
    is then what a block reads most). Any other matrix is multiplied on its own, in
    blocks of ``BLOCK_BYTES``."""
    xs = [rows_of(x) for x in matrices]
    sizes = [x.n_units for x in xs]
    n = sizes[0] if xs else 0
    if any(size != n for size in sizes):
        raise ValueError(f"count rows of different unit counts: {sizes}")
    out = [np.zeros((opts.samples, x.width)) for x in xs]
    if n == 0:
        return out
    whole = [k for k, x in enumerate(xs) if x.exact()]
    other = [(np.concatenate(xs[k].ordered()).astype(np.float64), out[k])
             for k in range(len(xs)) if k not in whole]  # not integer counts: stacked
    cols = distinct_columns([xs[k] for k in whole], n)
    base = max(1, BLOCK_BYTES // (8 * n))
    rows = base if other else max(base, cols.distinct.shape[1])
    buffer = np.empty((min(rows, opts.samples), n), np.float64)
    widest = max([cols.distinct.shape[1], *(x.shape[1] for x, _o in other)])
    with BLAS_SETTING, threadpool_limits(blas_threads(widest), user_api="blas"):
        for start in range(0, opts.samples, rows):
            stop = min(opts.samples, start + rows)
            w = weight_rows(n, start, stop, opts.seed, buffer)
            sums = w @ cols.distinct if whole else None
            for k, at in zip(whole, cols.where, strict=True):
                out[k][start:stop] = sums[:, at]
            for x, o in other:
                o[start:stop] = w @ x
    return out


def blas_threads(columns: int) -> int | None:
    """The BLAS threads for the products of :func:`resample` (None: BLAS's own number).
    A product with at most :data:`ONE_BLAS_THREAD_COLUMNS` columns is bound by reading its
    block of W, which one thread does as fast; BLAS's other threads would then spin, after
    each of the many products, on the cores that draw the next block (a 10M x 10 run on 2
    cores, 11 columns, 56 blocks: 3.5-3.6 s and 6.5-6.8 s of CPU with BLAS's threads,
    2.5-3.4 s and 3.5-4.7 s with one)."""
    return 1 if columns <= ONE_BLAS_THREAD_COLUMNS else None


def sample_sums(rows: Mapping[K, UnitRows], opts: Bootstrap) -> dict[K, np.ndarray]:
    """The (B x k) sample sums of every key's per-unit rows, in one pass over W (the same
    samples for all: a task's accuracies and F1s share them). The rows are read piece by
    piece, never stacked whole."""
    keys = list(rows)
    return dict(zip(keys, resample([rows[k] for k in keys], opts), strict=True))


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (a sample without data for the score)."""
    num, den = np.broadcast_arrays(np.asarray(num, np.float64), np.asarray(den, np.float64))
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def f1(correct: np.ndarray, gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Micro F1 = 2 correct / (gold + pred) of sample sums: NaN without a gold unit (no
    number without data), 0 when nothing is correct."""
    out = ratio(2 * np.asarray(correct, np.float64), np.asarray(gold) + np.asarray(pred))
    return np.where(np.asarray(gold) > 0, out, np.nan)


def accuracy_samples(rows: Mapping[K, UnitRows], opts: Bootstrap) -> dict[K, np.ndarray]:
    """(B x N) accuracy samples of every key's per-sentence rows (units, then each system's
    correct units; :func:`~sysdiff.transforms.engine.sentence_rows`): one pass over W for
    all of them."""
    return {k: accuracies(s) for k, s in sample_sums(rows, opts).items()}


def accuracies(sums: np.ndarray) -> np.ndarray:
    """(B x N) accuracy samples from the sample sums of per-sentence rows (units, then
    each system's correct units)."""
    return ratio(sums[:, 1:], sums[:, :1])


# ------------------------------------------------------------------------------ intervals


def quantiles(samples: np.ndarray, q: Sequence[float]) -> np.ndarray:
    """Column quantiles of (B x M) samples without their NaNs (numpy's ``linear``
    method), len(q) x M; NaN for a column without a value."""
    s = np.sort(samples, axis=0)  # NaN last
    k = (~np.isnan(samples)).sum(axis=0)
    out = np.full((len(q), samples.shape[1]), np.nan)
    has = k > 0
    if not has.any():
        return out
    s, k = s[:, has], k[has]
    cols = np.arange(k.size)
    for row, p in enumerate(q):
        pos = p * (k - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, k - 1)
        frac = pos - lo
        a, b = s[lo, cols], s[hi, cols]
        out[row, has] = np.where(frac > 0, a + frac * (b - a), a)
    return out


def interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of each column of (B x M) samples: (low, high)."""
    a = 1.0 - confidence
    q = quantiles(np.asarray(samples, np.float64).reshape(len(samples), -1), [a / 2, 1 - a / 2])
    return q[0], q[1]


def bootstrap_p(deltas: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Twice the share of samples whose delta is 0 or of the sign opposite to the observed
    delta's, capped at 1 (1 for an observed 0; NaN without an observed delta)."""
    deltas = np.asarray(deltas, np.float64).reshape(len(deltas), -1)
    observed = np.asarray(observed, np.float64).reshape(-1)
    valid = ~np.isnan(deltas)
    n = valid.sum(axis=0)
    against = np.where(observed > 0, deltas <= 0, deltas >= 0) & valid
    p = np.minimum(1.0, 2.0 * against.sum(axis=0) / np.maximum(n, 1))
    p = np.where(observed == 0, 1.0, p)
    return np.where(np.isnan(observed) | (n == 0), np.nan, p)


@dataclass(frozen=True)
class PairIntervals:
    """Both directions of every pair (the rows of a pair table: i -> j, then j -> i): the
    interval of delta = score(second) - score(first), and the bootstrap p."""

    low: np.ndarray
    high: np.ndarray
    p: np.ndarray


def pair_intervals(samples: np.ndarray, first: np.ndarray, second: np.ndarray,
                   confidence: float, observed: np.ndarray) -> PairIntervals:
    """Intervals of ``samples[:, second] - samples[:, first]`` (B x N samples of a score per
    system; pairs i = ``first``, j = ``second``) for both directions; ``observed`` the
    pairs' deltas j - i (NaN: not evaluated, and so are its interval and p)."""
    observed = np.asarray(observed, np.float64)
    deltas = samples[:, second] - samples[:, first]
    low, high = interval(deltas, confidence)
    gone = np.isnan(observed)
    low, high = np.where(gone, np.nan, low), np.where(gone, np.nan, high)
    p = bootstrap_p(deltas, observed)
    # (+ 0.0: the mirror of a 0 is 0, not -0)
    return PairIntervals(np.concatenate([low, 0.0 - high]), np.concatenate([high, 0.0 - low]),
                         np.tile(p, 2))


def no_pair_intervals(n_pairs: int) -> PairIntervals:
    """NULL intervals and p of ``n_pairs`` pairs in both directions (bootstrap off)."""
    empty = np.full(2 * n_pairs, np.nan)
    return PairIntervals(empty, empty, empty)
