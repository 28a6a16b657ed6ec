"""Significance tests (METRICS 1.6) against naive implementations and exact cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from sysdiff.transforms.significance import approximate_randomization, mcnemar_exact


def naive_ar(c1: np.ndarray, c2: np.ndarray, trials: int, seed: int) -> float:
    """One coin per sentence and trial: the textbook procedure."""
    rng = np.random.default_rng(seed)
    observed = abs((c2 - c1).sum())
    swap = rng.integers(0, 2, size=(trials, c1.size)).astype(bool)
    a = np.where(swap, c2, c1).sum(axis=1)
    b = np.where(swap, c1, c2).sum(axis=1)
    return (int((np.abs(b - a) >= observed).sum()) + 1) / (trials + 1)


@pytest.mark.parametrize("shift", [0.0, 0.02, 0.05])
def test_ar_agrees_with_the_naive_procedure(shift):
    rng = np.random.default_rng(7)
    units = rng.integers(5, 40, size=400)
    c1 = rng.binomial(units, 0.8)
    c2 = np.minimum(units, rng.binomial(units, 0.8 + shift))
    ours = approximate_randomization(c1, c2, units, trials=20_000, seed=1)
    naive = naive_ar(c1, c2, trials=20_000, seed=2)
    assert ours == pytest.approx(naive, abs=0.015)


def test_ar_exact_cases():
    units = np.full(50, 10)
    same = np.full(50, 7)
    assert approximate_randomization(same, same, units, trials=999) == 1.0
    better = same + 3  # every sentence improves: no swap reaches |delta| but the identity
    p = approximate_randomization(same, better, units, trials=999, seed=3)
    assert p == pytest.approx((1 + 999 * 2.0 ** -49) / 1000, abs=1e-3)
    assert approximate_randomization(same, same, np.zeros(50), trials=10) == 1.0


@pytest.mark.parametrize("b, c", [(0, 0), (2, 2), (10, 3), (0, 12), (300, 260), (1, 40)])
def test_mcnemar_equals_the_exact_binomial_test(b, c):
    expected = 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(min(1.0, expected))


def enumerated_tail(d: list[int], observed: int) -> float:
    """P(|sum of +-d_s| >= observed) by enumerating every sign combination."""
    signs = np.array(np.meshgrid(*[[-1, 1]] * len(d))).reshape(len(d), -1)
    sums = np.abs((np.array(d)[:, None] * signs).sum(axis=0))
    return float((sums >= observed).mean())


@pytest.mark.parametrize("d", [[1, 1, 1, -1], [2, -1, 3, 1, 1, -2, 4], [5], [1] * 12,
                               [3, 3, -3, 1, 2, 2, -1, 7, 1, 1]])
def test_exact_tail_equals_enumeration(d):
    from sysdiff.transforms.significance import _tail

    values, counts = np.unique(np.abs(d), return_counts=True)
    observed = abs(sum(d))
    top = int((values * counts).sum())
    assert _tail(values, counts, top, observed) == pytest.approx(enumerated_tail(d, observed),
                                                                abs=1e-12)


def test_exact_and_sampled_trials_agree(monkeypatch):
    """Above the exact support the trials are drawn one by one: same distribution."""
    import sysdiff.transforms.significance as sig

    rng = np.random.default_rng(5)
    d = rng.integers(-4, 5, size=600)
    values, counts = np.unique(d[d != 0], return_counts=True)
    exact = sig.randomization_from_histogram(values, counts, 40_000, 1)
    monkeypatch.setattr(sig, "EXACT_SUPPORT", 1)
    sampled = sig.randomization_from_histogram(values, counts, 40_000, 1)
    assert sampled == pytest.approx(exact, abs=0.01)
    # both directions of a pair give the same p
    assert sig.randomization_from_histogram(-values[::-1], counts[::-1], 40_000, 1) == sampled


@pytest.mark.parametrize("m", [1, 3, 63, 64, 65, 130, 1024, 1025, 5000])
def test_fair_sums_draw_the_heads_of_fair_coins(m):
    """Bits for small counts, binomials above BITS_KIND: Binomial(m, 1/2) either way, each
    column independent of the others (a count of 0 draws no heads)."""
    import sysdiff.transforms.significance as sig

    k = 20_000
    counts = np.array([m, 0, 7])
    heads = sig.fair_sums(counts, np.eye(3, dtype=np.int64), k, np.random.default_rng(3))
    assert heads.shape == (k, 3) and (heads[:, 1] == 0).all()
    h = heads[:, 0]
    assert h.min() >= 0 and h.max() <= m
    assert abs(h.mean() - m / 2) < 5 * np.sqrt(m / 4 / k)
    assert h.var() == pytest.approx(m / 4, rel=0.06)
    if m > 1:
        assert abs(np.corrcoef(h, heads[:, 2])[0, 1]) < 0.04
    if m <= 3:  # the whole distribution against Binomial(m, 1/2): chi-square, p = 0.001
        from scipy.stats import binom, chi2

        expected = k * binom.pmf(np.arange(m + 1), m, 0.5)
        observed = np.bincount(h, minlength=m + 1)
        assert (((observed - expected) ** 2) / expected).sum() < chi2.ppf(0.999, m)


def test_fair_sums_weigh_each_count():
    """The weighted sum of two counts' heads: mean and variance of sum_j w_j H_j."""
    import sysdiff.transforms.significance as sig

    m, w = np.array([40, 2000]), np.array([[3, 1], [-2, 5]])
    got = sig.fair_sums(m, w, 40_000, np.random.default_rng(4))
    assert got.mean(axis=0) == pytest.approx(m @ w / 2, rel=0.01)
    assert got.var(axis=0) == pytest.approx(m @ w**2 / 4, rel=0.05)


def test_fair_sums_drawn_in_passes_are_the_same_draws(monkeypatch):
    """Many small counts are drawn a few trials at a time (memory bounded): the same
    random words in the same order, so the same sums as in one pass."""
    import sysdiff.transforms.significance as sig

    m = np.arange(1, 300) % 130 + 1  # 299 small counts, 1 to 3 words each
    w = np.stack([np.arange(m.size), -np.ones(m.size, np.int64)], axis=1)
    whole = sig.fair_sums(m, w, 1000, np.random.default_rng(9))
    monkeypatch.setattr(sig, "_WORDS_AT_ONCE", 1000)  # 2-3 trials a pass
    assert np.array_equal(sig.fair_sums(m, w, 1000, np.random.default_rng(9)), whole)
