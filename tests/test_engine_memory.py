"""The engine's memory grows with the label matrix (linear in systems), not with pairs x units:
peak traced memory of one view's counts and tables with 12 and with 24 systems, pairs counted
a block at a time as the flow does (``flows/tokens.py``: ``PAIRS_PER_BLOCK``)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from sysdiff.transforms import engine, reduce
from sysdiff.transforms.engine import Bucketing, LabelMatrix

UNITS = 200_000
BLOCK = 16  # pairs per block (the flow's default is larger; its cells are what it bounds)


def matrix(n_systems: int, seed: int = 0) -> LabelMatrix:
    """Systems right 90% of the time over 17 labels; sentences of 20 units."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 17, UNITS, dtype=np.uint8)
    wrong = rng.random((n_systems, UNITS)) < 0.1
    labels = np.where(wrong, rng.integers(0, 17, (n_systems, UNITS), dtype=np.uint8), gold)
    sent = (np.arange(UNITS) // 20).astype(np.int32)
    n_sents = UNITS // 20
    return LabelMatrix(labels, labels == gold, labels, gold, 17, 17, sent, n_sents,
                       buckets=(Bucketing("sent_length", np.zeros(n_sents, np.int64), 6, True),))


def peak_bytes(n_systems: int) -> tuple[int, int]:
    """(peak bytes traced while counting and tabulating, bytes of the matrix)."""
    m = matrix(n_systems)
    names = [f"s{i}" for i in range(n_systems)]
    pairs = engine.all_pairs(n_systems)
    tracemalloc.start()
    try:
        for k in range(0, len(pairs), BLOCK):
            c = engine.shard_counts(m, pairs[k:k + BLOCK], with_oracle=k == 0,
                                    with_majority=k == 0)
            reduce.pair_rows(c.pairs, names, c.correct, c.n_units, trials=100)
            for _ in reduce.change_blocks(c.pairs, names, [str(x) for x in range(17)], 17):
                pass
            del c
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, m.values.nbytes + m.correct.nbytes + m.display.nbytes


def test_memory_grows_at_most_linearly_with_the_systems():
    peak12, matrix12 = peak_bytes(12)
    peak24, matrix24 = peak_bytes(24)
    assert matrix24 == 2 * matrix12
    # twice the systems (4.2x the pairs): at most twice the memory, with 10% slack
    assert peak24 <= 2.2 * peak12, (peak12, peak24)
    # and the counting needs a few matrices' worth, never pairs x units
    assert peak24 <= 4 * matrix24, (peak24, matrix24)
