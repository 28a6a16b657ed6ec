"""Prefect's Dask task runner, with each task submitted under a key of its own and run on
the worker through one Prefect client per worker thread.

Without a key, Dask names a task by a token of everything submitted: the task, its
parameters and the Prefect context with every setting, walked value by value (about 20 ms
of the client's CPU a task, more with large parameters). Prefect gives each submitted task
a new run id, so that token never matches an earlier one: a key made of the task's name
and a random suffix names the task as uniquely, at no cost.

prefect-dask runs each task on the worker from its serialized context alone: Prefect builds
its settings again from their dump (reading the environment and config files), makes two
clients (one for the flow's context, one for the task's), each with an SSL context of its
own (the CA bundle read and parsed), and checks the API version: about 120 ms of the
worker's CPU per task, more than many tasks' own work. Here each worker thread keeps, per
serialized settings (a run's), the built settings and one open client, and runs the task
with them (:class:`Hydrated`). Imported only when Dask is used
(the ``dask`` extra)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import json
import threading
import uuid
from collections import OrderedDict
from typing import Any

import distributed
from prefect_dask import DaskTaskRunner
from prefect_dask.task_runners import PrefectDaskFuture


class KeyedDaskTaskRunner(DaskTaskRunner):
    """:class:`DaskTaskRunner` whose tasks are submitted under ``<task name>-<random hex>``
    and run by :func:`run_on_worker` (the submit is prefect-dask's ``PrefectDaskClient.submit``
    with these two changes)."""

    def submit(self, task: Any, parameters: dict[str, Any], wait_for: Any = None,
               dependencies: Any = None) -> PrefectDaskFuture:
        if not self._started:
            raise RuntimeError("The task runner must be started before submitting work.")
        from prefect.context import serialize_context
        from prefect.utilities.engine import collect_task_run_inputs_sync

        client, run_id = self.client, uuid.uuid4()
        parameters = self._optimize_futures(parameters)
        inputs = {k: collect_task_run_inputs_sync(v, future_cls=distributed.Future)
                  for k, v in parameters.items()}
        if dependencies:
            inputs = {k: v.union(dependencies.get(k, set())) for k, v in inputs.items()}
        assets = {"asset_ctx_kwargs": {"task": task, "task_run_id": run_id,
                                       "task_inputs": inputs, "copy_to_child_ctx": True}}
        context = serialize_context(**(assets if _with_assets() else {}))
        future = distributed.Client.submit(
            client, run_on_worker, key=task_key(task.name), task=task, task_run_id=run_id,
            parameters=parameters, return_type="state", dependencies=inputs, context=context,
            wait_for=self._optimize_futures(wait_for) if wait_for else None)
        return PrefectDaskFuture(wrapped_future=future, task_run_id=run_id)


#: Dask settings of a local cluster sysdiff starts, which has no dashboard: no statistical
#: profiler in its workers (a thread that samples every stack each 10 ms for the dashboard's
#: profile page: 2-3 % of a core per worker, taken from the other workers when all the cores
#: are busy).
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False}
#: What a nanny sets in its worker's environment and sysdiff's workers do without: glibc's
#: ``MALLOC_TRIM_THRESHOLD_`` at 64 kB (Dask's default) hands every freed array back to the
#: kernel and maps it anew, faulting every page again. A 10M x 10 run's worker took 16M page
#: faults and 52 s of kernel time with it, 5M and 22 s without (the threads runner's 4M).
#: Set in the environment, it still reaches the workers.
NOT_PRESPAWNED = ("MALLOC_TRIM_THRESHOLD_",)


def local_cluster(**kwargs: Any) -> distributed.LocalCluster:
    """A ``LocalCluster`` with :data:`LOCAL_CLUSTER_CONFIG` and its nannies' environment
    without :data:`NOT_PRESPAWNED` (each nanny hands the settings it was made under to its
    worker); this process's settings are left as they were."""
    import dask

    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
               if k not in NOT_PRESPAWNED}
    with dask.config.set({**LOCAL_CLUSTER_CONFIG,
                          "distributed.nanny.pre-spawn-environ": environ}):
        return distributed.LocalCluster(**kwargs)


@functools.cache
def _with_assets() -> bool:
    """Whether this Prefect's context carries assets (prefect-dask then passes them)."""
    from prefect.context import serialize_context

    return "asset_ctx_kwargs" in inspect.signature(serialize_context).parameters


def run_on_worker(task: Any, **kwargs: Any) -> Any:
    """Run a Prefect task on a Dask worker with its thread's client and settings for the
    settings it was submitted with (:class:`Hydrated`)."""
    from prefect.context import SyncClientContext
    from prefect.task_engine import run_task_async, run_task_sync

    if task.isasync:
        return asyncio.run(run_task_async(task, **kwargs))
    context = kwargs.get("context") or {}
    if not context.get("settings_context"):
        return run_task_sync(task, **kwargs)
    hydrated = Hydrated.of(context["settings_context"])
    kwargs["context"] = {**context, "settings_context": hydrated.settings}
    token = SyncClientContext.__var__.set(hydrated.client)
    try:
        return run_task_sync(task, **kwargs)
    finally:
        SyncClientContext.__var__.reset(token)


#: Settings (with their clients) a worker thread keeps; the least recently used go.
HELD_PER_THREAD = 8


class Hydrated:
    """A worker thread's Prefect settings and open client for one serialized settings
    context, made the first time it is seen: the settings as built objects (validated
    again, a ``Settings`` built from its dump reads the environment and config files anew:
    about 40 ms a task), the client with the API version checked once."""

    _thread = threading.local()

    def __init__(self, serialized: dict) -> None:
        from prefect.client.orchestration import get_client
        from prefect.context import SettingsContext, SyncClientContext

        built = SettingsContext(**serialized)
        self.settings = {"profile": built.profile, "settings": built.settings}
        outer = SyncClientContext.__var__.set(None)  # a client of these settings, not one
        try:  # the thread's context may hold (a cluster in the flow's process)
            with built:
                client = get_client(sync_client=True)
                client.__enter__()
                client.raise_for_api_version_mismatch_once()
        finally:
            SyncClientContext.__var__.reset(outer)
        self.client = SyncClientContext.model_construct(client=client)

    @classmethod
    def of(cls, serialized: dict) -> Hydrated:
        key = hashlib.sha256(json.dumps(serialized, sort_keys=True, default=str).encode()
                             ).digest()
        held = cls._thread.__dict__.setdefault("held", OrderedDict())
        if key not in held:
            held[key] = cls(serialized)
            while len(held) > HELD_PER_THREAD:  # a long-lived worker serving many runs
                held.popitem(last=False)[1].close()
        held.move_to_end(key)
        return held[key]

    def close(self) -> None:
        """Close the client (only this thread holds it, and it runs no task now)."""
        with contextlib.suppress(Exception):
            self.client.client.__exit__(None, None, None)


def task_key(name: str) -> str:
    """A Dask key of its own for a task named ``name`` (the dashboard groups by the part
    before the last '-')."""
    return f"{name.replace(' ', '_')}-{uuid.uuid4().hex}"
