"""Timing helpers for the benchmarks: medians of repeated runs, peak traced memory."""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_memory(fn: Callable[[], object]) -> int:
    """Peak bytes allocated through Python/numpy during one call (tracemalloc)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
