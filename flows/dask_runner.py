"""Prefect's Dask task runner, with each task submitted under a key of its own.

Without a key, Dask names a task by a token of everything submitted: the task, its
parameters and the Prefect context with every setting, walked value by value (about 20 ms
of the client's CPU a task, more with large parameters). Prefect gives each submitted task
a new run id, so that token never matches an earlier one: a key made of the task's name
and a random suffix names the task as uniquely, at no cost. Imported only when Dask is
used (the ``dask`` extra)."""

from __future__ import annotations

import uuid
from typing import Any

from prefect_dask import DaskTaskRunner
from prefect_dask.task_runners import PrefectDaskFuture


class KeyedDaskTaskRunner(DaskTaskRunner):
    """:class:`DaskTaskRunner` whose tasks are submitted under ``<task name>-<random hex>``."""

    def submit(self, task: Any, parameters: dict[str, Any], wait_for: Any = None,
               dependencies: Any = None) -> PrefectDaskFuture:
        if not self._started:
            raise RuntimeError("The task runner must be started before submitting work.")
        future = self.client.submit(
            task, key=task_key(task.name), parameters=self._optimize_futures(parameters),
            wait_for=self._optimize_futures(wait_for) if wait_for else None,
            dependencies=dependencies, return_type="state")
        return PrefectDaskFuture(wrapped_future=future, task_run_id=future.task_run_id)


def task_key(name: str) -> str:
    """A Dask key of its own for a task named ``name`` (the dashboard groups by the part
    before the last '-')."""
    return f"{name.replace(' ', '_')}-{uuid.uuid4().hex}"
