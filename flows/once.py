"""A per-process cache whose value for given arguments one thread computes while the others
wait (``functools.lru_cache`` alone lets threads that miss at once each compute it)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


def shared_cache(maxsize: int) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """``functools.lru_cache(maxsize)`` with one computation per arguments at a time: an
    ingest thread that asks for what another is computing waits for its result. A lock
    lives while its arguments are asked for, so the locks do not pile up."""
    def decorate(fn: Callable[..., R]) -> Callable[..., R]:
        cached = functools.lru_cache(maxsize)(fn)
        guard, locks = threading.Lock(), {}

        @functools.wraps(fn)
        def wrapper(*args: object) -> R:
            with guard:
                lock = locks.setdefault(args, threading.Lock())
            with lock:
                try:
                    return cached(*args)
                finally:  # computed (or failed): later callers need no lock of their own
                    with guard:
                        if locks.get(args) is lock:
                            del locks[args]

        wrapper.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return wrapper
    return decorate
