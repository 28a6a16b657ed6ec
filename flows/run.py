"""The top-level Prefect flow: one evaluation run of one corpus into the warehouse."""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from prefect import flow

from sysdiff.flows import outcome, run_record
from sysdiff.flows.prefect_logs import one_line_input_errors
from sysdiff.flows.shards import settings_serialized_once, task_runner
from sysdiff.flows.spec import RunSpec
from sysdiff.flows.store import StoreURL, remote
from sysdiff.flows.warehouse import Staging, crash_point, open_run
from sysdiff.schemas.errors import InputError

#: The flow of each task (ingest, then compute every table): its module in ``flows/`` and
#: its function, imported when a run needs it (the other tasks' modules are not: the
#: coreference ones import scipy, half a second of every run's start).
TASK_FLOWS = {"pos": ("tokens", "run_tokens"), "dep": ("tokens", "run_tokens"),
              "coref": ("coref", "run_coref"), "unl": ("unl", "run_unl"),
              "nl": ("unl", "run_unl"), "ner": ("spans", "run_spans"),
              "srl": ("srl", "run_srl")}


def task_flow(task: str) -> Callable[[RunSpec, Staging], object]:
    """The flow of ``task`` (:data:`TASK_FLOWS`)."""
    module, name = TASK_FLOWS[task]
    return getattr(importlib.import_module(f"sysdiff.flows.{module}"), name)


@flow(name="sysdiff-run", validate_parameters=False, log_prints=False)
def evaluate(spec: RunSpec, warehouse: Path, run_id: str | None = None) -> list[str]:
    """Ingest the key and systems of ``spec``, compute every table, commit atomically (the
    manifest records ``run_id``; given one, how the body ended is recorded in
    :mod:`outcome`).

    Returns one line per system skipped for a bad file (``spec.keep_going``)."""
    start = time.perf_counter()
    one_line_input_errors()
    crash_point("evaluate")
    try:
        with open_run(warehouse, spec.corpus, run_id or outcome.new_run_id()) as stage:
            if spec.replace_key:  # the corpus starts over with this key
                from sysdiff.flows.remove import drop

                drop(stage, spec.corpus, None)
            task_flow(spec.task)(spec, stage)
            run_record.record(stage, spec)
    except BaseException as e:
        if run_id:  # run_evaluation settles the outcome
            outcome.ended(run_id, e)
        raise
    if run_id:
        outcome.ended(run_id, stage.skipped)
    logging.getLogger("sysdiff").info("run: %.2f s", time.perf_counter() - start)
    return stage.skipped


def run_evaluation(spec: RunSpec, warehouse: Path, dask_address: str | None = None,
                   dask_local: int = 0) -> list[str]:
    """Run :func:`evaluate` with the chosen task runner; the lines of skipped systems. The
    outcome is the run's, not Prefect's: when Prefect fails around a body that ended well
    (e.g. the background server died), one warning line, and the run's result stands
    (:func:`outcome.settle`)."""
    refuse_client_paths(spec, warehouse, dask_address)
    run_id = outcome.new_run_id()
    outcome.announce(warehouse, run_id)
    with heartbeats(), settings_serialized_once(), outcome.server_watch() as watch:
        try:
            return evaluate.with_options(task_runner=task_runner(dask_address, dask_local),
                                         flow_run_name=run_name(spec))(spec, warehouse, run_id)
        except Exception as error:
            return outcome.settle(warehouse, run_id, error, watch)
        finally:
            outcome.forget(run_id)


def refuse_client_paths(spec: RunSpec, warehouse: Path | StoreURL,
                        dask_address: str | None) -> None:
    """A cluster given by address with the warehouse on an object store shares no disk with
    this machine: an input named by a path of this machine is refused before anything runs
    (the workers would look for it on their own disks)."""
    if not (dask_address and remote(warehouse)):
        return
    local = [s for s in (spec.key, *spec.systems) if not isinstance(s.path, StoreURL)]
    if local:
        bucket = "/".join(str(warehouse).split("/")[:3])
        raise InputError(
            f"{local[0].path}: a file of this machine, but the Dask workers at {dask_address} "
            "share no disk with it (the warehouse is on an object store); put the inputs on "
            f"the store and name them by URL (e.g. {bucket}/in/{Path(local[0].path).name})")


def run_name(spec: RunSpec) -> str:
    """A flow run's name in the Prefect UI: corpus, task and systems (``sequoia · dep · 4
    systems``; one system by its name)."""
    n = len(spec.systems)
    systems = spec.systems[0].id if n == 1 else f"{n} systems"
    return f"{spec.corpus} · {spec.task} · {systems}"


HEARTBEAT_VARIABLES = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")


def heartbeats() -> contextlib.AbstractContextManager:
    """Flow-run heartbeats off unless the user set their frequency: when a flow run ends,
    Prefect waits for the heartbeat thread's current 1-second sleep (0.5-1 s a run), and a
    heartbeat only matters to an automation that the user sets up to detect crashed runs
    (then set ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, e.g. 180)."""
    from prefect.context import SettingsContext, get_settings_context

    context = get_settings_context()
    settings = context.settings
    if settings.flows.heartbeat_frequency is None or any(
            os.environ.get(name) for name in HEARTBEAT_VARIABLES):
        return contextlib.nullcontext()
    # A copy of the current settings with one field changed (``temporary_settings`` would
    # read every settings source again: 0.2 s).
    flows = settings.flows.model_copy(update={"heartbeat_frequency": None})
    return SettingsContext(profile=context.profile,
                           settings=settings.model_copy(update={"flows": flows}))
