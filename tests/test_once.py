"""flows.once.shared_cache: what threads that miss at once ask for is computed once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from sysdiff.flows.once import shared_cache


def test_threads_that_miss_at_once_share_one_computation():
    calls: list[str] = []

    @shared_cache(maxsize=2)
    def slow(name: str) -> str:
        calls.append(name)
        time.sleep(0.2)  # the other threads arrive while it computes
        return name.upper()

    start = threading.Barrier(4)

    def ask(name: str) -> str:
        start.wait()
        return slow(name)

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(ask, ["key", "key", "key", "other"]))
    assert got == ["KEY", "KEY", "KEY", "OTHER"]
    assert sorted(calls) == ["key", "other"]  # once each
    assert slow.cache_info().hits == 2
