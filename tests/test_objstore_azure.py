"""The warehouse on Azure Blob Storage (``az://``): Azurite, Microsoft's local Blob emulator
(the npm package ``azurite``), started by this module on a free port of 127.0.0.1, reached
with a connection string alone (``AZURE_STORAGE_CONNECTION_STRING``), as adlfs users give it.

Two clients read the store: fsspec (adlfs: writes, commits, DuckDB's reads) and polars' own
(staged and live tables read in tasks). A connection string only adlfs understood once
stopped every run with an internal error; :func:`sysdiff.flows.store.polars_options` now
hands it to polars too.

Azurite comes from the npm registry (``.ci/run`` installs it and sets
``SYSDIFF_TESTS_NEED_AZURITE``, so there these tests run); where it is missing they are
skipped with the command that installs it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysdiff.flows.store import StoreURL, polars_options
from tests.conftest import BUNDLED, run_cli
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

#: Azurite's well-known development account (public, in Microsoft's documentation).
ACCOUNT = "devstoreaccount1"
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
       "KBHBeksoGMGw==")
#: The variables of an Azure client that would bypass the connection string.
AZURE_VARS = ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME",
              "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_USE_EMULATOR",
              "AZURE_STORAGE_ANON")


def azurite_binary() -> str | None:
    """``azurite-blob``: ``SYSDIFF_AZURITE`` (its path), else on the PATH."""
    return os.environ.get("SYSDIFF_AZURITE") or shutil.which("azurite-blob")


def connection_string(port: int) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{ACCOUNT};")


@contextlib.contextmanager
def azurite(tmp: Path) -> Iterator[dict[str, str]]:
    """Azurite's Blob service on a free port, its data in ``tmp``; yields the environment
    that reaches it (the connection string only)."""
    port = free_port()
    proc = subprocess.Popen(
        [azurite_binary(), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location",
         str(tmp), "--silent", "--disableTelemetry", "--skipApiVersionCheck"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield {"AZURE_STORAGE_CONNECTION_STRING": connection_string(port)}
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def az_env(tmp_path_factory) -> Iterator[dict[str, str]]:
    """Azurite for this module, its connection string (alone) set in this process and its
    children."""
    if azurite_binary() is None:
        if os.environ.get("SYSDIFF_TESTS_NEED_AZURITE"):
            pytest.fail("SYSDIFF_TESTS_NEED_AZURITE is set but azurite-blob is not found")
        pytest.skip("Azurite is not installed: npm install -g azurite (or set SYSDIFF_AZURITE)")
    import adlfs  # noqa: F401 (the 'test' extra: missing, these tests fail, never skip)

    from sysdiff.flows import store

    with azurite(tmp_path_factory.mktemp("azurite")) as env, environment(env, AZURE_VARS):
        store._FILESYSTEMS.pop("az", None)
        try:
            yield env
        finally:
            store._FILESYSTEMS.pop("az", None)


@pytest.fixture
def container(az_env) -> str:
    """A new empty container: ``az://NAME``."""
    return new_bucket("az")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_tables_on_azure_equal_the_local_run(name, container, tmp_path, prefect_harness):
    run_equals_the_local_run(KINDS[name], f"{container}/evals/wh", tmp_path / "wh")


def test_a_lost_lease_cannot_overwrite_a_commit_on_azure(container, monkeypatch):
    """The commit point on Azure is a create with ``If-None-Match: *``: of two runs that
    both started from version N, only one commits N + 1."""
    commit_from_one_version_twice(StoreURL(f"{container}/wh"), monkeypatch)


@pytest.mark.parametrize(("text", "want"), [
    (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
     f"BlobEndpoint=http://127.0.0.1:10000/{ACCOUNT};",
     {"account_name": ACCOUNT, "account_key": KEY,
      "endpoint": f"http://127.0.0.1:10000/{ACCOUNT}", "allow_http": "true"}),
    ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5==;"
     "EndpointSuffix=core.windows.net",
     {"account_name": "acme", "account_key": "a2V5==",
      "endpoint": "https://acme.blob.core.windows.net"}),
    ("BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2022&sig=x%3D",
     {"endpoint": "https://acme.blob.core.windows.net/", "sas_token": "sv=2022&sig=x%3D"}),
])
def test_a_connection_string_reaches_polars(text, want, monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", text)
    assert polars_options("az://c/wh/tables/x.parquet") == want
    assert polars_options(["abfs://c/a.parquet", "abfs://c/b.parquet"]) == want
    for other in ("s3://b/x.parquet", "/tmp/x.parquet", ["gs://b/x.parquet"], []):
        assert polars_options(other) is None  # polars reads those stores' own variables
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    assert polars_options("az://c/x.parquet") is None


def test_no_azure_credentials_is_one_line_and_nothing_is_written(monkeypatch, tmp_path):
    from sysdiff.flows import store

    for name in AZURE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setitem(store._FILESYSTEMS, "az", None)  # made afresh from this environment
    monkeypatch.delitem(store._FILESYSTEMS, "az")
    monkeypatch.chdir(tmp_path)
    code, _out, err = run_cli("run", str(BUNDLED["sequoia"]), "-w", "az://evals/wh")
    assert code == 2, err
    assert err.startswith("sysdiff: error: no credentials for the object store az://")
    assert "AZURE_STORAGE_CONNECTION_STRING" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no local folder for the URL
