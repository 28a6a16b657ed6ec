"""Significance of a difference between two systems (METRICS 1.6), from stored counts."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

AR_TRIALS = 10_000
_BATCH = 512


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from b = corrections and c = new errors."""
    n = b + c
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(b, c), n, 0.5)))


def approximate_randomization(
    correct1: np.ndarray, correct2: np.ndarray, units: np.ndarray,
    trials: int = AR_TRIALS, seed: int = 0,
) -> float:
    """Paired approximate randomization over sentences for an accuracy-type score.

    Each trial swaps the two systems' counts of a sentence with probability 1/2;
    ``p = (#{|delta*| >= |delta|} + 1) / (trials + 1)``. Sentences where both systems have
    equal counts cannot change delta, so they are left out of the sampling (same p).
    """
    total = units.sum()
    if total == 0:
        return 1.0
    d = (correct2 - correct1).astype(np.float64)
    observed = abs(d.sum()) / total
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    hits = 0
    eps = 1e-12 * max(1.0, observed)
    for start in range(0, trials, _BATCH):
        k = min(_BATCH, trials - start)
        signs = rng.integers(0, 2, size=(k, d.size), dtype=np.int8) * 2 - 1
        deltas = np.abs(signs @ d) / total
        hits += int((deltas >= observed - eps).sum())
    return (hits + 1) / (trials + 1)
