"""Significance of a difference between two systems (METRICS 1.6), from stored counts."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")

AR_TRIALS = 10_000
#: Largest lattice of the swapped sum whose exact distribution is computed (else sampled;
#: the exact way costs about as much as sampling 4 trials per lattice point).
EXACT_SUPPORT = 1 << 20
_BATCH = 2048
#: Kinds of at most this many sentences draw their heads as random bits (one popcount a
#: 64 sentences); larger ones as one binomial (about 100 ns a draw here, 16 words' worth).
BITS_KIND = 1024
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_WORDS_AT_ONCE = 1 << 21  # random words drawn at once (16 MB)


def map_cores(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``fn`` over ``items`` on one thread per core, results in order: for the pairs'
    randomization tests, whose numpy draws release the GIL (each pair has its own seeded
    generator, so the results do not depend on the threads)."""
    items = list(items)
    workers = min(len(items), os.cpu_count() or 1)
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers, thread_name_prefix="sysdiff-ar") as pool:
        return list(pool.map(fn, items))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from b = corrections and c = new errors."""
    n = b + c
    if n == 0:
        return 1.0
    from scipy.special import bdtr  # imported when needed: scipy takes 0.2-0.4 s to import

    return float(min(1.0, 2.0 * bdtr(min(b, c), n, 0.5)))


def approximate_randomization(
    correct1: np.ndarray, correct2: np.ndarray, units: np.ndarray,
    trials: int = AR_TRIALS, seed: int = 0,
) -> float:
    """Paired approximate randomization over sentences for an accuracy-type score.

    Each trial swaps the two systems' counts of a sentence with probability 1/2;
    ``p = (#{|delta*| >= |delta|} + 1) / (trials + 1)``. Only the per-sentence differences
    ``d`` matter: a swap flips the sign of a sentence's ``d``.
    """
    if units.sum() == 0:
        return 1.0
    d = (np.asarray(correct2) - np.asarray(correct1)).astype(np.int64)
    values, counts = np.unique(d[d != 0], return_counts=True)
    return randomization_from_histogram(values, counts, trials, seed)


def randomization_from_histogram(values: np.ndarray, counts: np.ndarray,
                                 trials: int = AR_TRIALS, seed: int = 0) -> float:
    """:func:`approximate_randomization` from the distinct non-zero per-sentence differences
    ``values`` and how many sentences have each (``counts``).

    The number of trials that reach ``|delta|`` is Binomial(trials, q), q = P(|S| >= |delta|)
    where S = sum over sentences of ``+-d`` with independent fair signs. When S's lattice is
    small, q is computed exactly (S's characteristic function is the product of
    ``cos(a t) ** m_a`` over the absolute differences a, inverted by an FFT) and the hit count
    is drawn from Binomial(trials, q): the same distribution as running the trials one by
    one, in O(support log support). Otherwise the trials are drawn, each distinct
    ``|d|``'s swapped count at once per trial (:func:`fair_sums`). Both directions of a
    pair give the same p."""
    if values.size == 0:
        return 1.0
    absolute, inverse = np.unique(np.abs(values), return_inverse=True)
    m = np.bincount(inverse, weights=counts).astype(np.int64)
    observed = abs(int((values * counts).sum()))
    rng = np.random.default_rng(seed)
    top = int((absolute * m).sum())
    if 2 * top + 1 <= min(EXACT_SUPPORT, 4 * trials):
        hits = int(rng.binomial(trials, _tail(absolute, m, top, observed)))
    else:
        hits = _sampled_hits(absolute, m, observed, trials, rng)
    return (hits + 1) / (trials + 1)


def _tail(absolute: np.ndarray, m: np.ndarray, top: int, observed: int) -> float:
    """P(|S| >= observed) for S = sum of m_a terms +-a (fair independent signs)."""
    size = 1 << int(np.ceil(np.log2(2 * top + 1)))
    t = 2 * np.pi * np.arange(size // 2 + 1) / size
    log_phi = np.zeros_like(t)
    negative = np.zeros(t.size, bool)
    for a, k in zip(absolute, m, strict=True):
        c = np.cos(a * t)
        with np.errstate(divide="ignore"):
            log_phi += k * np.log(np.abs(c))
        if k % 2:
            negative ^= c < 0
    phi = np.where(negative, -1.0, 1.0) * np.exp(log_phi)
    pmf = np.clip(np.fft.irfft(phi, n=size), 0.0, None)  # S = s lies at index s mod size
    s = np.arange(size)
    s = np.where(s > size // 2, s - size, s)
    return float(min(1.0, pmf[np.abs(s) >= observed].sum()))


def _sampled_hits(absolute: np.ndarray, m: np.ndarray, observed: int, trials: int,
                  rng: np.random.Generator) -> int:
    """Trials drawn one by one: the swapped sum is ``a * (2 * Binomial(m_a, 1/2) - m_a)``
    summed over the absolute differences a."""
    hits = 0
    for start in range(0, trials, _BATCH):
        k = min(_BATCH, trials - start)
        heads = fair_sums(m, absolute[:, None], k, rng)[:, 0]  # sum of H_a * a
        deltas = np.abs(2 * heads - int((m * absolute).sum()))
        hits += int((deltas >= observed).sum())
    return hits


def fair_sums(m: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator
              ) -> np.ndarray:
    """``k`` independent draws of ``sum_j H_j * weights[j]`` with H_j ~ Binomial(m[j], 1/2)
    (the heads of ``m[j]`` fair coins): an int64 array (k, weights.shape[1]). A count up to
    :data:`BITS_KIND` is drawn as the ones among ``m[j]`` random bits (exactly its
    distribution: one popcount a 64 coins), a larger one as numpy's binomial."""
    m, weights = np.asarray(m, np.int64), np.asarray(weights, np.int64)
    out = np.zeros((k, weights.shape[1]), np.int64)
    large = m > BITS_KIND
    if large.any():
        out += rng.binomial(m[large][None, :], 0.5, size=(k, int(large.sum()))) @ weights[large]
    small = (m > 0) & ~large
    if small.any():
        words, word_weights = _coin_words(m[small], weights[small])
        step = max(1, _WORDS_AT_ONCE // words.size)  # trials a pass: memory bounded
        for a in range(0, k, step):
            bits = rng.integers(0, _ALL_ONES, (min(step, k - a), words.size), np.uint64,
                                endpoint=True)
            bits &= words
            out[a:a + step] += np.bitwise_count(bits).astype(np.int64) @ word_weights
    return out


def _coin_words(m: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 64-bit words that hold ``m[j]`` coins each (``ceil(m[j] / 64)`` words, the last
    one's bits past ``m[j]`` masked off) and each word's weight (its count's)."""
    n_words = -(-m // 64)
    owner = np.repeat(np.arange(m.size), n_words)
    words = np.full(owner.size, _ALL_ONES)
    last = np.cumsum(n_words) - 1
    tail = (m % 64).astype(np.uint64)
    words[last[tail > 0]] = (np.uint64(1) << tail[tail > 0]) - np.uint64(1)
    return words, weights[owner]
