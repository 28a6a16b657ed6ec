"""Start and stop the background Prefect server (see :mod:`sysdiff.flows.server`):
``prefect server start`` launched detached with a random token in its settings, holding
``server.pid``'s lock, and waited for until it answers with that token; stopped with
SIGTERM, then SIGKILL. Stdlib only, like :mod:`sysdiff.flows.server`."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from sysdiff.flows.server import (
    HOST,
    PORT_ENV,
    START_TIMEOUT,
    TOKEN_HEADER,
    Server,
    ServerError,
    _path,
    control_lock,
    held,
    live_server,
    proves,
    rotate,
    running,
    state_dir,
)
from sysdiff.schemas.errors import InputError

DEFAULT_PORT = 4200  # Prefect's own default; another free port when it is taken
STOP_TIMEOUT = 20.0  # seconds between SIGTERM and SIGKILL
RETRY_AFTER = 600.0  # seconds an automatic start is not retried after a failed one
LOCK_WAIT = 10.0  # seconds to wait for server.pid's lock when a new server is launched
_started: list[subprocess.Popen] = []  # servers started by this process (never waited for)


def ensure(announce: bool = True, started: Callable[[str], None] | None = None) -> Server:
    """The live background server, started now when there is none (another sysdiff process
    starting one at the same time is waited for, then reused); ``started(api_url)`` is
    called as soon as a new server's process is launched (the warm runner imports while
    the server starts). Raises :class:`ServerError`."""
    server = live_server()
    if server is not None:
        return server
    with control_lock():
        server = live_server()
        if server is not None:
            return server
        stop_process()  # a server that lives but does not answer, or a stale pid file
        try:
            server = _start(started)
        except ServerError as e:
            _path("failed.json").write_text(json.dumps({"at": time.time(), "error": str(e)}))
            raise
        _path("failed.json").unlink(missing_ok=True)
    if announce:
        print(f"sysdiff: started a background Prefect server at {server.ui_url} (flow runs "
              "are recorded there; 'sysdiff server stop' stops it, SYSDIFF_SERVER=off runs "
              "without it)", file=sys.stderr)
    return server


def recently_failed() -> str | None:
    """The error of an automatic start that failed less than :data:`RETRY_AFTER` ago."""
    try:
        failed = json.loads(_path("failed.json").read_text())
        if time.time() - float(failed["at"]) < RETRY_AFTER:
            return str(failed["error"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def free_port(preferred: int) -> int:
    """``preferred`` when nothing listens on it, else a free port the system picks."""
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise ServerError("no free TCP port on 127.0.0.1")


def preferred_port() -> int:
    """``$SYSDIFF_SERVER_PORT``, else the port of the last server (a stable UI address),
    else 4200."""
    given = os.environ.get(PORT_ENV)
    if given:
        if not given.isdigit() or not 0 < int(given) < 65536:
            raise InputError(f"{PORT_ENV}={given!r}: expected a TCP port number")
        return int(given)
    try:
        return int(json.loads(_path("server.json").read_text())["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_PORT


def server_env(home: Path, port: int, token: str) -> dict[str, str]:
    """The server's environment: its own PREFECT_HOME (database, profiles), no telemetry,
    warnings only in its log, and the token it proves itself with (:func:`proves`)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "PREFECT_PROFILES_PATH", "PREFECT_PROFILE",
                        "PREFECT_CLIENT_CUSTOM_HEADERS")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_API_HOST=HOST, PREFECT_SERVER_API_PORT=str(port),
               PREFECT_SERVER_LOGGING_LEVEL="WARNING", PREFECT_LOGGING_LEVEL="WARNING",
               PREFECT_CLIENT_CUSTOM_HEADERS=json.dumps({TOKEN_HEADER: token}),
               PYTHONUNBUFFERED="1")
    return env


def _start(started: Callable[[str], None] | None = None) -> Server:
    """Start ``prefect server start`` detached (its own session, stdin closed, output to
    ``server.log``) and wait until it answers with its token; called under the control
    lock."""
    import importlib.metadata
    import secrets

    state, home = state_dir(), _path("prefect")
    token = secrets.token_hex(16)
    home.mkdir(parents=True, exist_ok=True)
    log = _path("server.log")
    rotate(log)
    port = free_port(preferred_port())
    try:
        for attempt in (1, 2):
            proc = _spawn(home, port, log, token)
            if started is not None:
                started(f"http://{HOST}:{port}/api")
            error = _wait_healthy(proc, port, log, token)
            if error is None:
                break
            stop_process()
            if attempt == 2 or "address already in use" not in error.lower():
                raise ServerError(f"{error} (log: {log})")
            port = free_port(0)  # another process took the port between check and bind
        server = Server(pid=proc.pid, port=port, started=time.time(), home=str(home),
                        log=str(log), prefect=importlib.metadata.version("prefect"), token=token)
        _write_atomic(state / "server.json", json.dumps(asdict(server), indent=1))
        (home / "server.pid").write_text(str(proc.pid))  # so `prefect server stop` works too
    except BaseException:  # e.g. server.json cannot be written, Ctrl-C: no server left behind
        with contextlib.suppress(OSError):
            stop_process()
        raise
    return server


def _spawn(home: Path, port: int, log: Path, token: str) -> subprocess.Popen:
    """Launch the server holding ``server.pid``'s lock (an inherited descriptor): the lock is
    released by the kernel when the server process ends, however it ends."""
    pid_file = _path("server.pid")
    fd = os.open(pid_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock_within(fd, LOCK_WAIT)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", HOST,
                 "--port", str(port)],
                env=server_env(home, port, token), cwd=home, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(fd,))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{proc.pid}\n".encode(), 0)
    finally:
        os.close(fd)
    _started.append(proc)
    return proc


def _lock_within(fd: int, wait: float) -> None:
    """Take ``server.pid``'s lock, waiting up to ``wait`` seconds for the process that holds
    it (a server still exiting) to end; ServerError when it does not (a process that is not
    this installation's server holds it: it is never killed)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                holder = _pid_of_lock()
                raise ServerError(f"{_path('server.pid')} is locked by another process"
                                  f"{f' (pid {holder})' if holder else ''}, which is not a "
                                  "sysdiff server that answers") from None
            time.sleep(0.1)


def _wait_healthy(proc: subprocess.Popen, port: int, log: Path, token: str) -> str | None:
    """None once the server answers with its token; else why not (it exited, or it timed
    out). Something else answering on the port is not taken for it."""
    timeout = float(os.environ.get("SYSDIFF_SERVER_START_TIMEOUT", START_TIMEOUT))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"the Prefect server exited with status {proc.returncode}: {_tail(log)}"
        if proves(port, token, timeout=1.0):
            return None
        time.sleep(0.2)
    return f"the Prefect server did not answer within {timeout:.0f} s"


def _tail(log: Path) -> str:
    try:
        lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(empty log)"


def _write_atomic(path: Path, text: str) -> None:
    """Write a private file (0600: ``server.json`` holds the server's token) by rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _pid_of_lock() -> int | None:
    try:
        return int(_path("server.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def is_server_process(pid: int) -> bool:
    """True when ``pid`` is a ``prefect server start`` process (Linux: its command line;
    elsewhere trusted)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists() and _alive(pid)
    except OSError:
        return False
    return b"prefect" in b" ".join(cmdline) and b"server" in cmdline and b"start" in cmdline


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_process() -> int | None:
    """Stop the server process (SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT`) when one
    holds the lock, and drop the files that describe it; the pid stopped, or None. Called
    under the control lock."""
    pid = _pid_of_lock()
    stopped = None
    if held(_path("server.pid")) and pid and is_server_process(pid):
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while held(_path("server.pid")) and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.1)
            if not held(_path("server.pid")):
                break
        stopped = pid
    for name in ("server.json", "server.pid"):
        _path(name).unlink(missing_ok=True)
    (_path("prefect") / "server.pid").unlink(missing_ok=True)
    return stopped


def _reap(pid: int) -> None:
    """Collect our own child's exit status (a server started by this process)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop() -> list[str]:
    """Stop the server (``sysdiff server stop`` stops the warm runners first); one line
    when one was stopped. Call under :func:`control_lock`."""
    server = running()
    pid = stop_process()
    if pid is None:
        return []
    where = f" at {server.ui_url}" if server else ""
    return [f"stopped the Prefect server{where} (pid {pid})"]
