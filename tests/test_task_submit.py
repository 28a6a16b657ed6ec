"""Tasks submitted to Dask carry Prefect's settings serialized once per settings object
(:func:`settings_serialized_once`), with the same values as Prefect's own serialization, and
under keys of their own (:class:`KeyedDaskTaskRunner`: Dask tokenizes nothing)."""

from __future__ import annotations

import re

import pytest
from prefect import flow, task
from prefect.context import SettingsContext
from prefect.settings import PREFECT_TASK_DEFAULT_RETRIES, get_current_settings, temporary_settings

from sysdiff.flows.shards import settings_serialized_once


@pytest.fixture
def dumps(monkeypatch):
    """Every settings object Prefect's own serialization was asked for."""
    seen: list[int] = []
    original = SettingsContext.serialize

    def counted(self, include_secrets: bool = True):
        seen.append(id(self.settings))
        return original(self, include_secrets=include_secrets)

    monkeypatch.setattr(SettingsContext, "serialize", counted)
    return seen


def test_one_dump_per_settings_object_with_prefects_values(dumps):
    context = SettingsContext.get()
    expected = context.serialize()
    dumps.clear()
    with settings_serialized_once():
        first = context.serialize()
        first["settings"]["mutated"] = True  # a caller's copy: the next one is clean
        rest = [context.serialize() for _ in range(5)]
        with temporary_settings({PREFECT_TASK_DEFAULT_RETRIES: 7}):
            other = SettingsContext.get().serialize()
            again = SettingsContext.get().serialize()
    assert len(dumps) == 2, dumps  # one per settings object, not one per call
    assert all(r == expected for r in rest)
    assert "mutated" not in rest[0]["settings"]
    assert other == again != expected
    assert other["settings"]["tasks"]["default_retries"] == 7
    assert SettingsContext.serialize.__name__ == "counted"  # Prefect's method is back


def test_runs_that_end_out_of_order_put_prefects_method_back(dumps):
    context = SettingsContext.get()
    first, second = settings_serialized_once(), settings_serialized_once()
    first.__enter__()
    second.__enter__()
    patched = SettingsContext.serialize
    first.__exit__(None, None, None)  # the first run ends while the second goes on
    assert SettingsContext.serialize is patched
    context.serialize()
    context.serialize()
    second.__exit__(None, None, None)
    assert SettingsContext.serialize.__name__ == "counted"  # Prefect's method is back
    assert len(dumps) == 1, dumps


@task
def retries_seen(_: int) -> int:
    return get_current_settings().tasks.default_retries


@flow
def submits() -> tuple[list[int], list[int], list[str]]:
    first = [retries_seen.submit(i) for i in range(4)]
    plain = [f.result() for f in first]
    with temporary_settings({PREFECT_TASK_DEFAULT_RETRIES: 3}):
        second = [retries_seen.submit(i) for i in range(4)]
        changed = [f.result() for f in second]
    return plain, changed, [f.wrapped_future.key for f in first + second]


def test_tasks_on_dask_see_the_settings_they_were_submitted_with(dumps, monkeypatch,
                                                                 prefect_harness):
    import distributed.client

    from sysdiff.flows.dask_runner import KeyedDaskTaskRunner

    tokens: list[object] = []
    tokenize = distributed.client.tokenize
    monkeypatch.setattr(distributed.client, "tokenize",
                        lambda *a, **k: tokens.append(a) or tokenize(*a, **k))
    runner = KeyedDaskTaskRunner(cluster_kwargs={"n_workers": 1, "processes": False,
                                                 "dashboard_address": None})
    default = get_current_settings().tasks.default_retries
    assert default != 3, "the test changes the setting to 3: it must differ from the default"
    with settings_serialized_once():
        plain, changed, keys = submits.with_options(task_runner=runner)()
    assert plain == [default] * 4
    assert changed == [3] * 4
    assert 1 < len(dumps) < 8, dumps  # 8 tasks: once per settings object, not per task
    assert tokens == []  # the keys were given
    assert len(set(keys)) == 8
    assert all(re.fullmatch(r"retries_seen-[0-9a-f]{32}", k) for k in keys), keys


@task
def client_seen(_: int) -> tuple[int, int, int]:
    from prefect.context import SyncClientContext

    return (id(SyncClientContext.get().client), id(get_current_settings()),
            get_current_settings().tasks.default_retries)


@flow
def submits_for_clients() -> tuple[list[tuple], list[tuple]]:
    plain = [f.result() for f in [client_seen.submit(i) for i in range(4)]]
    with temporary_settings({PREFECT_TASK_DEFAULT_RETRIES: 3}):
        changed = [f.result() for f in [client_seen.submit(i) for i in range(4)]]
    return plain, changed


def test_a_dask_worker_thread_keeps_one_client_and_settings_per_run_settings(
        monkeypatch, prefect_harness):
    """prefect-dask alone builds the settings again and makes two clients (each with an SSL
    context) for every task; a worker thread here builds them once per settings."""
    import ssl

    from sysdiff.flows.dask_runner import KeyedDaskTaskRunner

    made: list[object] = []
    original = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context",
                        lambda *a, **k: made.append(a) or original(*a, **k))
    runner = KeyedDaskTaskRunner(cluster_kwargs={"n_workers": 1, "threads_per_worker": 1,
                                                 "processes": False,
                                                 "dashboard_address": None})
    default = get_current_settings().tasks.default_retries
    assert default != 3, "the test changes the setting to 3: it must differ from the default"
    made.clear()
    with settings_serialized_once():
        plain, changed = submits_for_clients.with_options(task_runner=runner)()
    assert [r[2] for r in plain] == [default] * 4 and [r[2] for r in changed] == [3] * 4
    assert len({r[:2] for r in plain}) == 1 and len({r[:2] for r in changed}) == 1
    assert plain[0][0] != changed[0][0] and plain[0][1] != changed[0][1]
    # one client per settings on the worker, plus the flow's own: not two per task
    assert len(made) <= 4, len(made)


def test_a_worker_thread_keeps_the_last_settings_it_saw_and_closes_the_others(
        prefect_harness):
    from prefect.context import serialize_context

    from sysdiff.flows.dask_runner import HELD_PER_THREAD, Hydrated

    seen = []
    for retries in range(HELD_PER_THREAD + 1):
        with temporary_settings({PREFECT_TASK_DEFAULT_RETRIES: 10 + retries}):
            serialized = serialize_context()["settings_context"]
        seen.append((serialized, Hydrated.of(serialized)))
    first, last = seen[0][1], seen[-1][1]
    assert last.settings["settings"].tasks.default_retries == 10 + HELD_PER_THREAD
    assert Hydrated.of(seen[-1][0]) is last  # kept
    assert Hydrated.of(seen[1][0]) is seen[1][1]
    assert first.client.client._closed and not last.client.client._closed
    assert Hydrated.of(seen[0][0]) is not first  # made again, once evicted


def test_a_local_cluster_s_workers_run_no_profiler(prefect_harness):
    """``--dask-local``'s workers sample no stacks for a dashboard they do not have; the
    client's own Dask settings are left as they were."""
    import dask
    import distributed  # noqa: F401 (its settings)

    from sysdiff.flows.shards import task_runner

    before = dask.config.get("distributed.worker.profile.enabled")
    runner = task_runner(None, 2)
    with runner:
        got = runner.client.run(lambda: dask.config.get("distributed.worker.profile.enabled"))
    assert len(got) == 2 and set(got.values()) == {False}, got
    assert dask.config.get("distributed.worker.profile.enabled") == before


def test_a_local_cluster_s_workers_keep_glibc_s_own_trim_threshold(prefect_harness,
                                                                    monkeypatch):
    """``--dask-local``'s nannies do not set ``MALLOC_TRIM_THRESHOLD_`` (Dask's 64 kB made
    every freed array a new mapping to fault in again); one set in the environment still
    reaches the workers, and the client's own Dask settings are left as they were."""
    import os

    import dask
    import distributed  # noqa: F401 (its settings)

    from sysdiff.flows.shards import task_runner

    before = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    runner = task_runner(None, 2)
    with runner:
        got = runner.client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                         os.environ.get("OMP_NUM_THREADS")))
    assert len(got) == 2 and set(got.values()) == {(None, "1")}, got
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    with task_runner(None, 1) as runner:
        got = runner.client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert set(got.values()) == {"1048576"}, got
    assert dask.config.get("distributed.nanny.pre-spawn-environ") == before
    assert "MALLOC_TRIM_THRESHOLD_" in before  # Dask sets it: the premise of this test
