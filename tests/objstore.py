"""Real parts for the object-store tests: an S3-compatible server (moto in server mode) on
127.0.0.1, started by the test session, and the environment every S3 client here reads
(``AWS_ENDPOINT_URL``, test credentials): the same variables a user sets for MinIO."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest


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
def s3_server_process() -> Iterator[dict[str, str]]:
    """A moto S3 server on a free port of 127.0.0.1; yields the environment that reaches it."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    finally:
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


@pytest.fixture(scope="session")
def s3_env() -> Iterator[dict[str, str]]:
    """The session's S3 server, its variables set in this process (and so its children)."""
    import moto  # noqa: F401 (the 'test' extra: missing, these tests fail, never skip)
    import s3fs  # noqa: F401

    from sysdiff.flows import store

    with s3_server_process() as env:
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
