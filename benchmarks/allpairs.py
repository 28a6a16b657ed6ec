"""All-pairs comparison: sysdiff's compare step vs a bare numpy loop on the same matrix.

Both compute, for every unordered pair of N systems: diff, corrections, new errors, changed
errors, and the per-label change tables (class, gold, L1, L2) counts.

    python benchmarks/allpairs.py [--systems 20] [--tokens 1000000] [--labels 17] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import median_time, peak_memory  # noqa: E402
from sysdiff.transforms import compare  # noqa: E402
from sysdiff.transforms.views import ViewMatrix  # noqa: E402


def synthetic_matrix(n_sys: int, n_tok: int, n_lab: int, seed: int = 0) -> ViewMatrix:
    """Systems that agree with the key ~90% of the time, errors spread over the labels."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, n_lab, n_tok, dtype=np.uint32)
    wrong = rng.random((n_sys, n_tok)) < 0.1
    noise = rng.integers(0, n_lab, (n_sys, n_tok), dtype=np.uint32)
    disp = np.where(wrong, noise, gold[None, :]).astype(np.uint32)
    return ViewMatrix("upos", [f"s{i}" for i in range(n_sys)], [f"L{i}" for i in range(n_lab)],
                      np.arange(n_tok, dtype=np.int32) // 25, gold.astype(np.int64), gold,
                      disp.astype(np.int64), disp, np.zeros(n_tok, bool))


def sysdiff_step(m: ViewMatrix) -> None:
    compare.pair_counts(m)
    compare.change_counts(m)


def numpy_loop(m: ViewMatrix) -> None:
    """The baseline: the same counts with plain numpy, no frames."""
    n_lab = len(m.labels)
    correct = m.values == m.gold_value[None, :]
    for i, j in combinations(range(len(m.systems)), 2):
        differ = m.values[i] != m.values[j]
        _ = (differ.sum(), (~correct[i] & correct[j]).sum(), (correct[i] & ~correct[j]).sum(),
             (differ & ~correct[i] & ~correct[j]).sum())
        idx = np.flatnonzero(differ)
        cls = np.where(correct[j, idx], 0, np.where(correct[i, idx], 1, 2))
        key = ((cls * n_lab + m.gold_display[idx]) * n_lab + m.displays[i, idx]) * n_lab \
            + m.displays[j, idx]
        np.unique(key, return_counts=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--systems", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--labels", type=int, default=17)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    m = synthetic_matrix(args.systems, args.tokens, args.labels)
    matrix_bytes = m.values.nbytes + m.displays.nbytes + m.gold_value.nbytes
    ours = median_time(lambda: sysdiff_step(m), args.repeat)
    base = median_time(lambda: numpy_loop(m), args.repeat)
    peak = peak_memory(lambda: sysdiff_step(m))
    pairs = args.systems * (args.systems - 1) // 2
    print(f"{args.systems} systems x {args.tokens:,} tokens ({pairs} pairs, {args.labels} labels);"
          f" medians of {args.repeat} runs")
    print(f"sysdiff compare step:  {ours:8.3f} s")
    print(f"bare numpy loop:       {base:8.3f} s")
    print(f"ratio sysdiff / numpy: {ours / base:8.2f}x  (target <= 2x)")
    print(f"label matrix: {matrix_bytes / 2**20:.0f} MiB; peak extra memory of the step: "
          f"{peak / 2**20:.0f} MiB; limit 3x matrix + 500 MiB = "
          f"{(3 * matrix_bytes) / 2**20 + 500:.0f} MiB")


if __name__ == "__main__":
    main()
