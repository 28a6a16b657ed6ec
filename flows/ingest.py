"""The ingest loop every task shares: the key first, then the systems, several at a time.

A file the warehouse already holds unchanged is reused without being read (decided here, in
the flow's thread). Every other file is read by a Prefect task submitted to the flow's task
runner (threads in this process, or Dask workers): the task takes immutable values (the run's
spec, the source, the key's paths, the staging folder) and returns an immutable record of
what it wrote (:class:`~sysdiff.flows.warehouse.StagedFile`), which only this loop records in
the run's :class:`~sysdiff.flows.warehouse.Staging`, in its own thread. Systems are read
concurrently, as many at once as the task runner and the memory bound allow (each reader
holds about one chunk of parsed columns). Results, errors and ``ingested_at`` stamps come
back in the order of the run's sources, so a run's tables never depend on which file
finished first.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from sysdiff.flows.preflight import check_some_left, skip_system
from sysdiff.flows.progress import progress
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.warehouse import StagedFile, Staging, crash_point
from sysdiff.schemas.errors import InputError


class Ingest(Protocol):
    """What an ingest task returns: at least the files it staged."""

    staged: tuple[StagedFile, ...]


T = TypeVar("T", bound=Ingest)
#: Memory one file's reader may hold at once (about one chunk of parsed columns).
READER_BYTES = 640 << 20
#: Memory all readers together may hold: half the 4 GB a 100M-token run may peak at.
INGEST_BUDGET = 2 << 30
#: ``(source, role, key)`` -> the file as the warehouse holds it, or None when it must be read.
Reuse = Callable[[Source, str, T | None], T | None]
#: ``(source, role, key, ingested_at)`` -> the submitted task (a future) that reads it.
Submit = Callable[[Source, str, T | None, dt.datetime], Any]


def ingest_parallelism(n_files: int) -> int:
    """Files read at once: one per core, within :data:`INGEST_BUDGET` and the memory the
    machine has free now, at least one. ``SYSDIFF_INGEST_THREADS`` overrides it."""
    forced = os.environ.get("SYSDIFF_INGEST_THREADS")
    if forced:
        return max(1, int(forced))
    budget = min(INGEST_BUDGET, _available_bytes() // 2)
    return max(1, min(n_files, os.cpu_count() or 1, budget // READER_BYTES))


def _available_bytes() -> int:
    """Memory available to new work (``MemAvailable``; physical pages where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class Done:
    """A settled result that looks like a submitted task's future (a reused file)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def result(self) -> object:
        return self.value


#: Seconds between two looks at the files in flight while the flow waits on the first.
POLL_S = 0.02


def finished(future: Any) -> bool:
    """Whether ``future`` (a submitted task's, or a file's ingest of several tasks with a
    ``ready`` method) has its result, without waiting for it."""
    wrapped = getattr(future, "wrapped_future", None)  # Prefect's threads and Dask futures
    if wrapped is not None:
        return wrapped.done()
    ready = getattr(future, "ready", None)
    return True if ready is None else ready()


def advance(future: Any) -> None:
    """Let a file's ingest of several tasks submit its next tasks if their inputs are in
    (a file read range by range: its ranges once planned, its assembly once read)."""
    step = getattr(future, "advance", None)
    if step is not None:
        step()


def _await_first(head: Any, pending: deque) -> None:
    """Wait until ``head`` has its result, moving every other file in flight on meanwhile
    (so one file's assembly overlaps the next file's ranges, on threads and on Dask)."""
    while not finished(head):
        for _source, _role, other in pending:
            advance(other)
        time.sleep(POLL_S)


def ingest_all(spec: RunSpec, stage: Staging, reuse: Reuse, submit: Submit) -> dict[str, T]:
    """system id -> its ingested file, the key (``__key__``) first. A bad system file is
    skipped with ``--keep-going`` and raised otherwise, in source order."""
    out: dict[str, T] = {}
    start = dt.datetime.now(dt.UTC)
    stamps = {source.id: start + dt.timedelta(microseconds=k)
              for k, (source, _role) in enumerate(spec.sources)}

    def launch(source: Source, role: str, key: T | None) -> Any:
        found = reuse(source, role, key)
        return Done(found) if found is not None else submit(source, role, key,
                                                             stamps[source.id])

    keys = [(s, r) for s, r in spec.sources if r == "key"]
    systems = [(s, r) for s, r in spec.sources if r != "key"]
    with progress("ingest", len(spec.sources)) as tick:
        for source, role in keys:
            _settle(spec, stage, out, source, role, launch(source, role, None))
            tick()
        key = out.get(KEY_ID)
        limit = ingest_parallelism(len(systems))
        pending: deque = deque()
        try:
            for source, role in systems:
                pending.append((source, role, launch(source, role, key)))
                if _window_full(pending, limit):
                    _settle_first(spec, stage, out, pending)
                    tick()
            while pending:
                _settle_first(spec, stage, out, pending)
                tick()
        except InputError:
            for _source, _role, future in pending:
                wait_quietly(future)
            raise
    check_some_left(spec, stage)
    return out


def _window_full(pending: deque, limit: int) -> bool:
    """Whether the flow must settle a file before it submits the next: ``limit`` files read
    whole are in flight, or twice as many in all (a file read range by range holds no memory
    in the flow, and its tasks run only as the runner has room for them; more of them in
    flight keep the runner's workers busy between one file's stages)."""
    whole = sum(1 for *_, future in pending if not hasattr(future, "advance"))
    return whole >= limit or len(pending) >= 2 * limit


def _settle_first(spec: RunSpec, stage: Staging, out: dict, pending: deque) -> None:
    """Settle the first file in flight (in source order) once its result is in."""
    source, role, future = pending.popleft()
    _await_first(future, pending)
    _settle(spec, stage, out, source, role, future)


def _settle(spec: RunSpec, stage: Staging, out: dict, source: Source, role: str,
            future: Any) -> None:
    """Record a file's staged files and keep its result, or skip or raise its input error."""
    try:
        result = future.result()
    except InputError as e:
        skip_system(spec, stage, source, role, e)
        return
    stage.record(result.staged)
    out[source.id] = result
    crash_point("ingest")


def wait_quietly(future: Any) -> None:
    """Let a task still running finish before the run's staging folder goes (its error, if
    any, is not the one to report)."""
    quiet = getattr(future, "wait_submitted", None)  # a file of several tasks: no new ones
    with contextlib.suppress(Exception):  # the first error is already on its way
        quiet() if quiet else future.result()
