"""The ingest loop every task shares: the key first, then the systems, several at a time.

A file the warehouse already holds unchanged is reused without being read. Every other file
is read by the task's ingest function (a Prefect task, run in this process: it stages files
in the run's staging folder). Systems are read concurrently, as many at once as there are
cores and as the memory bound allows (each reader holds about one chunk of parsed columns).
Results, errors and ``ingested_at`` stamps come back in the order of the run's sources, so
a run's tables never depend on which file finished first.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from sysdiff.flows.preflight import check_some_left, skip_system
from sysdiff.flows.progress import progress
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.warehouse import Staging
from sysdiff.schemas.errors import InputError

T = TypeVar("T")
#: Memory one file's reader may hold at once (about one chunk of parsed columns).
READER_BYTES = 640 << 20
#: Memory all readers together may hold: half the 4 GB a 100M-token run may peak at.
INGEST_BUDGET = 2 << 30
#: ``(source, role, key)`` -> the file as the warehouse holds it, or None when it must be read.
Reuse = Callable[[Source, str, T | None], T | None]
#: ``(source, role, key, ingested_at)`` -> the file read, validated and staged.
Read = Callable[[Source, str, T | None, dt.datetime], T]


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


def ingest_all(spec: RunSpec, stage: Staging, reuse: Reuse, read: Read) -> dict[str, T]:
    """system id -> its ingested file, the key (``__key__``) first. A bad system file is
    skipped with ``--keep-going`` and raised otherwise, in source order."""
    out: dict[str, T] = {}
    start = dt.datetime.now(dt.UTC)
    stamps = {source.id: start + dt.timedelta(microseconds=k)
              for k, (source, _role) in enumerate(spec.sources)}
    keys = [(s, r) for s, r in spec.sources if r == "key"]
    systems = [(s, r) for s, r in spec.sources if r != "key"]
    with progress("ingest", len(spec.sources)) as tick:
        for source, role in keys:
            _settle(spec, stage, out, source, role, _now(reuse, read, source, role, None,
                                                          stamps[source.id]))
            tick()
        key = out.get(KEY_ID)
        with ThreadPoolExecutor(ingest_parallelism(len(systems)),
                                thread_name_prefix="sysdiff-ingest") as pool:
            futures = [_submit(pool, reuse, read, source, role, key, stamps[source.id])
                       for source, role in systems]
            try:
                for (source, role), future in zip(systems, futures, strict=True):
                    _settle(spec, stage, out, source, role, future)
                    tick()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    check_some_left(spec, stage)
    return out


def _submit(pool: ThreadPoolExecutor, reuse: Reuse, read: Read, source: Source, role: str,
            key: T | None, at: dt.datetime) -> Future:
    """One file's ingest on the pool, in a copy of this thread's context (Prefect's flow
    run context goes with it, so the read is a task run of this flow)."""
    ctx = contextvars.copy_context()
    return pool.submit(ctx.run, _ingest_one, reuse, read, source, role, key, at)


def _ingest_one(reuse: Reuse, read: Read, source: Source, role: str, key: T | None,
                at: dt.datetime) -> T:
    found = reuse(source, role, key)
    return found if found is not None else read(source, role, key, at)


def _now(reuse: Reuse, read: Read, source: Source, role: str, key: T | None,
         at: dt.datetime) -> Future:
    """One file's ingest in this thread, as a settled future."""
    future: Future = Future()
    try:
        future.set_result(_ingest_one(reuse, read, source, role, key, at))
    except InputError as e:
        future.set_exception(e)
    return future


def _settle(spec: RunSpec, stage: Staging, out: dict, source: Source, role: str,
            future: Future) -> None:
    """Keep a file's result, or skip or raise its input error."""
    try:
        out[source.id] = future.result()
    except InputError as e:
        skip_system(spec, stage, source, role, e)
