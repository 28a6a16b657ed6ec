"""The task runner of a run's shard tasks, and how they are mapped: their results folded as
they arrive, with a bounded number in flight.

Partial counts are summed into one accumulator shard by shard, in shard order, and each
result is dropped once folded: memory holds the accumulator and a few results, never one
result per shard. The fold order is fixed, so results do not depend on timing.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from sysdiff.schemas.frozen import Opaque as Opaque  # re-exported: tasks take it from here

if TYPE_CHECKING:
    import pyarrow as pa

from sysdiff.schemas.errors import InputError
from sysdiff.transforms.plan import Shard, plan_shards, sized_shard_sents

T = TypeVar("T")

# Each local Dask worker is one process with one thread, and so are the libraries in it:
# N workers use N cores, without N x cores threads competing for them.
ONE_THREAD = {name: "1" for name in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS",
                                      "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def task_runner(dask_address: str | None, dask_local: int):
    """In-process threads by default, one shard per core at a time (so memory depends on
    shard size, not corpus size); a Dask cluster (existing or local) when asked."""
    if not (dask_address or dask_local):
        from prefect.task_runners import ThreadPoolTaskRunner

        threads = max(1, min(4, os.cpu_count() or 1))
        forced = os.environ.get("SYSDIFF_INGEST_THREADS")  # files read at once, if set
        return ThreadPoolTaskRunner(max_workers=max(threads, int(forced) if forced else 0))
    try:
        from sysdiff.flows.dask_runner import KeyedDaskTaskRunner, local_cluster
    except ImportError:
        raise InputError("Dask needs the 'dask' extra: pip install 'sysdiff[dask]'") from None
    if dask_address:
        return KeyedDaskTaskRunner(address=dask_address)
    return KeyedDaskTaskRunner(
        cluster_class=local_cluster,
        cluster_kwargs={"n_workers": dask_local, "threads_per_worker": 1, "processes": True,
                        "dashboard_address": None,
                        "env": ONE_THREAD | {"PREFECT_API_URL": api_url()}})


@contextlib.contextmanager
def settings_serialized_once() -> Iterator[None]:
    """Within: Prefect's settings are serialized once per settings object, not once per task.

    Prefect's Dask runner ships the current context with every task it submits, and
    ``SettingsContext.serialize`` (a pydantic dump of every setting) costs 15-30 ms of the
    client's CPU per task, as much as the rest of a submit. A run's settings do not change
    while it runs; a context with other settings objects (``temporary_settings``) is
    serialized afresh. Each caller gets its own copy of the cached dump. Runs in threads of
    one process share one installation: the first to enter installs it, the last to leave
    puts Prefect's method back, whatever order they end in."""
    from prefect.context import SettingsContext

    with _SERIALIZE.lock:
        if _SERIALIZE.users == 0:
            _SERIALIZE.original = SettingsContext.serialize
            SettingsContext.serialize = _cached_serialize(SettingsContext.serialize)
        _SERIALIZE.users += 1
    try:
        yield
    finally:
        with _SERIALIZE.lock:
            _SERIALIZE.users -= 1
            if _SERIALIZE.users == 0:
                SettingsContext.serialize = _SERIALIZE.original


@dataclass
class _Installation:
    """Who uses the cached serialization now, and Prefect's method to put back."""

    lock: threading.Lock
    users: int = 0
    original: Any = None


_SERIALIZE = _Installation(threading.Lock())


def _cached_serialize(original: Callable) -> Callable:
    """``original`` (``SettingsContext.serialize``), computed once per settings object."""
    done: dict[tuple[int, int, bool], tuple[Any, Any, dict]] = {}
    lock = threading.Lock()

    def serialize(self: Any, include_secrets: bool = True) -> dict[str, Any]:
        key = (id(self.profile), id(self.settings), include_secrets)
        with lock:
            hit = done.get(key)
            if hit is None or hit[0] is not self.profile or hit[1] is not self.settings:
                hit = done[key] = (self.profile, self.settings,
                                   original(self, include_secrets=include_secrets))
        return copy.deepcopy(hit[2])

    return serialize


def api_url() -> str:
    """The Prefect API this process reports to; in ephemeral mode its server is started now,
    so that local workers report to it too instead of each starting a server of their own."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if url:
        return url
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()
    return server.api_url


def runner_threads() -> int:
    """The threads of the flow's task runner (Dask: the cluster's threads), at least 1."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    runner = ctx.task_runner if ctx else None
    threads = getattr(runner, "_max_workers", None)
    client = getattr(runner, "_client", None)
    if client is not None:
        threads = sum(client.nthreads().values())
    return max(1, threads or os.cpu_count() or 1)


def in_flight_limit() -> int:
    """Shard tasks submitted ahead of the fold: twice the threads of the flow's task runner,
    at least 2."""
    return 2 * runner_threads()


def shard_plan(key_sents: pl.DataFrame, shard_sents: int | None, n_files: int) -> list[Shard]:
    """The run's shards of whole documents: of ``shard_sents`` sentences when the run sets
    them, else sized from the key's sentences and words (``sent``, ``doc``, ``n_words``),
    the ``n_files`` files compared and the task runner's threads
    (:func:`sysdiff.transforms.plan.sized_shard_sents`)."""
    if shard_sents is None:
        words = int(key_sents["n_words"].sum())
        shard_sents = sized_shard_sents(key_sents.height, words, n_files, runner_threads())
    return plan_shards(key_sents, shard_sents)


def map_fold(submit: Callable[[T], Any], items: Iterable[T], fold: Callable[[Any], None],
             tick: Callable[[], None] = lambda: None, limit: int | None = None) -> None:
    """``fold(submit(item).result())`` for every item, in order, with at most ``limit``
    submitted tasks not yet folded."""
    limit = limit or in_flight_limit()
    pending: deque = deque()
    for item in items:
        pending.append(submit(item))
        if len(pending) >= limit:
            fold(pending.popleft().result())
            tick()
    while pending:
        fold(pending.popleft().result())
        tick()


def map_collect(submit: Callable[[T], Any], items: Iterable[T],
                tick: Callable[[], None] = lambda: None) -> list:
    """The results of ``submit(item)`` for every item, in order (for per-unit rows that are
    concatenated rather than summed); as many in flight as :func:`map_fold` allows."""
    out: list = []
    map_fold(submit, items, out.append, tick)
    return out


@dataclass(frozen=True)
class FrozenFrame:
    """A polars frame as an immutable task parameter: its Arrow table, to and from polars
    without a copy (string views kept). Pickled (Dask) as an Arrow IPC stream of its own
    rows: a slice of an Arrow table would pickle the whole buffers it shares."""

    table: pa.Table

    @classmethod
    def of(cls, df: pl.DataFrame) -> FrozenFrame:
        return cls(df.to_arrow(compat_level=pl.CompatLevel.newest()))

    def frame(self) -> pl.DataFrame:
        return pl.from_arrow(self.table)  # type: ignore[return-value]

    def __reduce__(self):
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.table.schema) as writer:
            writer.write_table(self.table)
        return (_frame_from_ipc, (sink.getvalue(),))


def _frame_from_ipc(data: pa.Buffer) -> FrozenFrame:
    import pyarrow as pa

    return FrozenFrame(pa.ipc.open_stream(data).read_all())
