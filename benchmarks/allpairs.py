"""All-pairs comparison: sysdiff's compare step vs the best plain numpy loop on one matrix.

The baseline is what a careful engineer writes by hand: uint8 label codes, a boolean
correctness matrix, and for every unordered pair of N systems one pass that counts the
differing units, the three change classes and the (class, gold, L1, L2) change table with
``np.bincount``; plus the histogram of per-unit correctness bitmasks (the oracle of every
subset), by ``np.unique`` or a dense ``bincount`` (whichever is faster in this run).

sysdiff's step (``engine.shard_counts``) computes all of that and more: per-sentence
differences (randomization test), sentence exact match, per-label and per-bucket counts,
the majority vote, difficulty. Both run on the same matrix in the same process; the ratio
is of medians.

    python benchmarks/allpairs.py [--systems 20] [--tokens 1000000] [--labels 17] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import median_time, peak_memory  # noqa: E402
from sysdiff.transforms import engine  # noqa: E402
from sysdiff.transforms.counts import Counts  # noqa: E402


def synthetic_matrix(n_sys: int, n_tok: int, n_lab: int, seed: int = 0,
                     error_rate: float = 0.1) -> engine.LabelMatrix:
    """Systems that agree with the key ~90% of the time, errors spread over the labels;
    sentences of 25 words, bucketed by length as the token views are."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, n_lab, n_tok, dtype=np.uint8)
    wrong = rng.random((n_sys, n_tok)) < error_rate
    noise = rng.integers(0, n_lab, (n_sys, n_tok), dtype=np.uint8)
    labels = np.where(wrong, noise, gold[None, :]).astype(np.uint8)
    sent = (np.arange(n_tok) // 25).astype(np.int32)
    n_sents = int(sent[-1]) + 1 if n_tok else 0
    length = engine.Bucketing("sent_length", np.zeros(n_sents, np.int64), 6, True)
    return engine.LabelMatrix(labels, labels == gold[None, :], labels, gold, n_lab, n_lab,
                              sent, n_sents, buckets=(length,))


def sysdiff_step(m: engine.LabelMatrix) -> Counts:
    """Everything sysdiff counts for one view over all pairs."""
    return engine.shard_counts(m, engine.all_pairs(m.n_systems))


def numpy_loop(m: engine.LabelMatrix, dense_masks: bool) -> None:
    """The baseline: the same pair counts and change tables, and the bitmask histogram."""
    n_lab = m.n_labels
    space = 3 * n_lab ** 3
    gold = m.gold.astype(np.int32) * n_lab * n_lab
    for i, j in combinations(range(m.n_systems), 2):
        idx = np.flatnonzero(m.values[i] != m.values[j])
        ci, cj = m.correct[i, idx], m.correct[j, idx]
        cls = (~cj).view(np.uint8) * (1 + (~ci).view(np.uint8))
        np.bincount(cls, minlength=3)
        key = (cls.astype(np.int32) * n_lab ** 3 + gold[idx]
               + m.display[i, idx].astype(np.int32) * n_lab + m.display[j, idx])
        np.bincount(key, minlength=space)
    bits = np.uint64(1) << np.arange(m.n_systems, dtype=np.uint64)
    masks = (m.correct.astype(np.uint64) * bits[:, None]).sum(axis=0, dtype=np.uint64)
    keyed = m.gold.astype(np.uint64) << np.uint64(m.n_systems) | masks
    if dense_masks:
        np.bincount(keyed.astype(np.int64), minlength=n_lab << m.n_systems)
    else:
        np.unique(keyed, return_counts=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--labels", type=int, default=17)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    m = synthetic_matrix(args.systems, args.tokens, args.labels)
    sparse = median_time(lambda: numpy_loop(m, False), args.repeat)
    dense = median_time(lambda: numpy_loop(m, True), args.repeat)
    base = min(sparse, dense)
    ours = median_time(lambda: sysdiff_step(m), args.repeat)
    pairs_only = median_time(lambda: engine.pair_counts(m, engine.all_pairs(m.n_systems)),
                             args.repeat)
    matrix_bytes = m.values.nbytes + m.correct.nbytes + m.gold.nbytes
    peak = peak_memory(lambda: sysdiff_step(m))
    n_pairs = args.systems * (args.systems - 1) // 2
    print(f"{args.systems} systems x {args.tokens:,} tokens ({n_pairs} pairs, {args.labels} "
          f"labels, uint8 codes); medians of {args.repeat} runs")
    print(f"baseline numpy loop:        {base:8.3f} s  (bitmask histogram by "
          f"{'bincount' if dense < sparse else 'np.unique'}; the other: "
          f"{max(sparse, dense):.3f} s)")
    print(f"sysdiff pair counts only:   {pairs_only:8.3f} s  ratio {pairs_only / base:5.2f}x")
    print(f"sysdiff compare step (all): {ours:8.3f} s  ratio {ours / base:5.2f}x  "
          f"(target <= 1.5x)")
    print(f"label matrix {matrix_bytes / 2**20:.0f} MiB; peak extra memory of the step "
          f"{peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
