"""The local Prefect server that sysdiff starts once in the background and reuses.

Prefect 3 without ``PREFECT_API_URL`` starts a temporary server inside every process (about
10 s here). Instead, the first ``sysdiff run`` starts ``prefect server start`` as a detached
process with its own ``PREFECT_HOME`` under the user's state folder; every later run reports
to it, so each flow run and its task runs stay visible in its UI and through ``prefect
flow-run ls``. Which Prefect API a run uses:

1. ``PREFECT_API_URL`` set by the user (environment, active Prefect profile, ``prefect.toml``,
   ``pyproject.toml`` ``[tool.prefect]`` or ``.env``): that server, always;
2. ``SYSDIFF_SERVER=off``: Prefect's temporary server, in the process (no background server);
3. otherwise the background server (started when needed); if it cannot be started, the
   temporary server, with one warning line (a failed start is not retried for 10 minutes,
   except by ``sysdiff server start``).

State folder (``$SYSDIFF_STATE_DIR``, else ``$XDG_STATE_HOME/sysdiff``, else
``~/.local/state/sysdiff``): ``server.json`` (pid, port, when), ``server.pid`` (the pid, and
an advisory lock the server process holds while it lives: a lock that can be taken means
the server is gone, whatever the pid file says), ``control.lock`` (serialises start and
stop between sysdiff processes), ``server.log``, ``failed.json`` and ``prefect/`` (the
server's ``PREFECT_HOME``: its SQLite database). Stdlib only: importing this module costs
nothing, and nothing here imports Prefect.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from sysdiff.schemas.errors import InputError

MODE_ENV, STATE_ENV, PORT_ENV = "SYSDIFF_SERVER", "SYSDIFF_STATE_DIR", "SYSDIFF_SERVER_PORT"
DEFAULT_PORT = 4200  # Prefect's own default; another free port when it is taken
HOST = "127.0.0.1"
START_TIMEOUT = 180.0  # seconds to wait for a starting server to answer
STOP_TIMEOUT = 20.0  # seconds between SIGTERM and SIGKILL
RETRY_AFTER = 600.0  # seconds an automatic start is not retried after a failed one
_started: list[subprocess.Popen] = []  # servers started by this process (never waited for)


class ServerError(Exception):
    """The background server could not be started (the message says why, in one line)."""


@dataclass(frozen=True)
class Server:
    """A running background server, as ``server.json`` records it."""

    pid: int
    port: int
    started: float
    home: str
    log: str
    prefect: str

    @property
    def ui_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.ui_url}/api"


# ------------------------------------------------------------------------------ settings


def mode() -> str:
    """``auto`` (default: start and use the background server) or ``off`` (Prefect's
    temporary server in each process), from ``$SYSDIFF_SERVER``."""
    value = os.environ.get(MODE_ENV, "").strip().lower()
    if value in ("", "auto", "on", "1", "true", "yes"):
        return "auto"
    if value in ("off", "0", "false", "no", "ephemeral"):
        return "off"
    raise InputError(f"{MODE_ENV}={value!r}: expected 'auto' (the background Prefect server, "
                     "the default) or 'off' (a temporary server in each process)")


def state_dir() -> Path:
    """Where the background server keeps its files (created when needed)."""
    given = os.environ.get(STATE_ENV)
    if given:
        return Path(given).expanduser().absolute()
    base = os.environ.get("XDG_STATE_HOME")
    if not base:
        try:
            base = Path.home() / ".local" / "state"
        except RuntimeError:  # no HOME and no password entry
            raise OSError(f"no home folder to keep state in (set {STATE_ENV})") from None
    return Path(base).expanduser().absolute() / "sysdiff"


def state_writable() -> bool:
    """True when the state folder is, or can be made, a writable folder (nothing is
    created: for ``sysdiff server status``)."""
    try:
        path = state_dir()
    except OSError:
        return False
    while not path.exists() and path != path.parent:
        path = path.parent
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def describe(error: OSError) -> str:
    """An OS error in a few words, with the path it concerns (``PATH: Permission
    denied``)."""
    where = error.filename if error.filename is not None else None
    what = error.strerror or str(error)
    return f"{where}: {what}" if where else what


def explicit_api_url(cwd: Path | None = None) -> str | None:
    """The Prefect API the user configured, read the way Prefect reads it (without importing
    Prefect): the environment, then ``.env``, ``prefect.toml`` and ``pyproject.toml`` in the
    working folder, then the active profile. None when nothing sets one."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    cwd = cwd or Path.cwd()
    for found in (_dotenv_url(cwd / ".env"), _toml_url(cwd / "prefect.toml", ()),
                  _toml_url(cwd / "pyproject.toml", ("tool", "prefect")), _profile_url()):
        if found:
            return found
    return None


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _toml_url(path: Path, table: tuple[str, ...]) -> str | None:
    data = _read_toml(path)
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    api = data.get("api", {}) if isinstance(data, dict) else {}
    return (api.get("url") if isinstance(api, dict) else None) or data.get("PREFECT_API_URL")


def _dotenv_url(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(r"^\s*(?:export\s+)?PREFECT_API_URL\s*=\s*['\"]?([^'\"\s#]+)", text, re.M)
    return found.group(1) if found else None


def _profile_url() -> str | None:
    try:
        path = os.environ.get("PREFECT_PROFILES_PATH") or prefect_home() / "profiles.toml"
    except RuntimeError:  # no home folder
        return None
    data = _read_toml(Path(path).expanduser())
    active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    profile = data.get("profiles", {}).get(active, {})
    return profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None


def quiet_prefect(verbose: bool) -> None:
    """Prefect settings for a command line run (before Prefect is imported): no telemetry,
    quiet logs (unless ``verbose``), no UI and a long start timeout for a temporary
    server."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_UI_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_LOG_PRINTS", "false")
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")


# ------------------------------------------------------------------------------ state


def _path(name: str) -> Path:
    return state_dir() / name


def held(lock: Path) -> bool:
    """True when some process holds an advisory lock on ``lock`` (it lives)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:  # missing or unreadable: nothing holds it for us
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def running() -> Server | None:
    """The background server when its process lives (``server.json`` is not trusted alone:
    the server holds ``server.pid``'s lock while it lives)."""
    try:
        info = json.loads(_path("server.json").read_text())
        server = Server(**{k: info[k] for k in Server.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return server if held(_path("server.pid")) else None


def healthy(port: int, timeout: float = 2.0) -> bool:
    """True when a Prefect API answers its health check on ``port``."""
    import http.client

    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", "/api/health")
        response = conn.getresponse()
        return response.status == 200 and response.read().strip() == b"true"
    except OSError:
        return False
    finally:
        conn.close()


def live_server() -> Server | None:
    """The background server when it lives and answers."""
    server = running()
    return server if server is not None and healthy(server.port) else None


@contextlib.contextmanager
def control_lock(timeout: float = START_TIMEOUT + 60) -> Iterator[None]:
    """Serialise starting and stopping between sysdiff processes (one starts the server, the
    others wait for it and then reuse it)."""
    state = state_dir()
    state.mkdir(parents=True, exist_ok=True, mode=0o700)  # private: the runner's socket
    fd = os.open(state / "control.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerError("another sysdiff process has been starting or stopping "
                                      f"the background server for {timeout:.0f} s") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ start / stop


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


def server_env(home: Path, port: int) -> dict[str, str]:
    """The server's environment: its own PREFECT_HOME (database, profiles), no telemetry,
    warnings only in its log."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "PREFECT_PROFILES_PATH", "PREFECT_PROFILE")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_API_HOST=HOST, PREFECT_SERVER_API_PORT=str(port),
               PREFECT_SERVER_LOGGING_LEVEL="WARNING", PREFECT_LOGGING_LEVEL="WARNING",
               PYTHONUNBUFFERED="1")
    return env


def _start(started: Callable[[str], None] | None = None) -> Server:
    """Start ``prefect server start`` detached (its own session, stdin closed, output to
    ``server.log``) and wait until it answers; called under the control lock."""
    import importlib.metadata

    state, home = state_dir(), _path("prefect")
    home.mkdir(parents=True, exist_ok=True)
    log = _path("server.log")
    rotate(log)
    port = free_port(preferred_port())
    try:
        for attempt in (1, 2):
            proc = _spawn(home, port, log)
            if started is not None:
                started(f"http://{HOST}:{port}/api")
            error = _wait_healthy(proc, port, log)
            if error is None:
                break
            stop_process()
            if attempt == 2 or "address already in use" not in error.lower():
                raise ServerError(f"{error} (log: {log})")
            port = free_port(0)  # another process took the port between check and bind
        server = Server(pid=proc.pid, port=port, started=time.time(), home=str(home),
                        log=str(log), prefect=importlib.metadata.version("prefect"))
        _write_atomic(state / "server.json", json.dumps(asdict(server), indent=1))
        (home / "server.pid").write_text(str(proc.pid))  # so `prefect server stop` works too
    except BaseException:  # e.g. server.json cannot be written, Ctrl-C: no server left behind
        with contextlib.suppress(OSError):
            stop_process()
        raise
    return server


def _spawn(home: Path, port: int, log: Path) -> subprocess.Popen:
    """Launch the server holding ``server.pid``'s lock (an inherited descriptor): the lock is
    released by the kernel when the server process ends, however it ends."""
    pid_file = _path("server.pid")
    fd = os.open(pid_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", HOST,
                 "--port", str(port)],
                env=server_env(home, port), cwd=home, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(fd,))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{proc.pid}\n".encode(), 0)
    finally:
        os.close(fd)
    _started.append(proc)
    return proc


def _wait_healthy(proc: subprocess.Popen, port: int, log: Path) -> str | None:
    """None once the server answers; else why not (it exited, or it timed out)."""
    timeout = float(os.environ.get("SYSDIFF_SERVER_START_TIMEOUT", START_TIMEOUT))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"the Prefect server exited with status {proc.returncode}: {_tail(log)}"
        if healthy(port, timeout=1.0):
            return None
        time.sleep(0.2)
    return f"the Prefect server did not answer within {timeout:.0f} s"


def _tail(log: Path) -> str:
    try:
        lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(empty log)"


def rotate(log: Path, limit: int = 1 << 20) -> None:
    """Keep one older log (``NAME.1``) when ``log`` has grown past ``limit`` bytes."""
    with contextlib.suppress(OSError):
        if log.stat().st_size > limit:
            os.replace(log, log.with_name(log.name + ".1"))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
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


# ------------------------------------------------------------------------------ for a run


def api_for_run(start: bool = True, started: Callable[[str], None] | None = None
                ) -> tuple[str | None, str]:
    """(API URL to set, how) for a flow run in this process, decided before Prefect is
    imported: ``("", "explicit")`` when the user configured one (left as it is);
    ``(url, "background")`` for the background server (started when ``start``);
    ``(None, "ephemeral")`` for Prefect's temporary server (``SYSDIFF_SERVER=off``, or the
    background server could not be started, or its state folder cannot be written: one
    warning line)."""
    if explicit_api_url():
        return "", "explicit"
    if mode() == "off":
        return ephemeral()
    try:
        server = live_server()
        if server is not None:
            return server.api_url, "background"
        if not start or recently_failed():  # a failed start was said once, when it failed
            return ephemeral()
        return ensure(started=started).api_url, "background"
    except OSError as e:  # e.g. the state folder cannot be written (HOME read-only)
        return ephemeral(f"the background Prefect server cannot keep its state ({describe(e)})",
                         f"set {STATE_ENV} to a writable folder, or {MODE_ENV}=off",
                         f"set {STATE_ENV} and PREFECT_HOME to writable folders")
    except ServerError as e:
        return ephemeral(f"the background Prefect server could not be started ({e})",
                         "'sysdiff server start' retries")


def ephemeral(why: str | None = None, hint: str = "", hint_home: str | None = None
              ) -> tuple[None, str]:
    """Prefect's temporary server for this run: ``(None, "ephemeral")``. One warning line
    (``why``, then ``hint``) when the background server is not used, or when Prefect's home
    cannot be written: the temporary server's database then goes to a folder removed at
    exit (``hint_home`` replaces the hint)."""
    moved = throwaway_prefect_home()
    said = [f"{why}; this run uses a temporary server"] if why else []
    if moved is not None:
        said.append(f"Prefect's home {moved} cannot be written{' either' if why else ''}, so "
                    f"{'it' if why else 'the temporary server of this run'} keeps the run's "
                    "records in a folder removed at exit")
        hint = hint_home or (f"{hint}; set PREFECT_HOME to a writable folder" if hint
                             else "set PREFECT_HOME to a writable folder")
    if said:
        print(f"sysdiff: warning: {'; '.join(said)} ({hint})", file=sys.stderr)
    return None, "ephemeral"


def prefect_home() -> Path:
    """The folder Prefect keeps its database and profiles in (``$PREFECT_HOME``, else
    ``~/.prefect``)."""
    given = os.environ.get("PREFECT_HOME")
    return Path(given).expanduser() if given else Path.home() / ".prefect"


def writable(folder: Path) -> bool:
    """True when ``folder`` exists (or can be made) and a file can be created in it."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def throwaway_prefect_home() -> str | None:
    """When Prefect's home cannot be written (Prefect's temporary server would fail to start
    and retry without end), point ``PREFECT_HOME`` at a private folder removed at exit (the
    user's profiles are still read); the unusable home, else None."""
    import atexit
    import shutil
    import tempfile

    try:
        home = prefect_home()
    except RuntimeError:  # no home folder at all
        home = None
    if home is not None and writable(home):
        return None
    profiles = os.environ.get("PREFECT_PROFILES_PATH") or (
        str(home / "profiles.toml") if home is not None else None)
    folder = tempfile.mkdtemp(prefix="sysdiff-prefect-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # after Prefect's own exits
    os.environ["PREFECT_HOME"] = folder
    if profiles and Path(profiles).is_file():
        os.environ["PREFECT_PROFILES_PATH"] = profiles
    return str(home or "~/.prefect")


def uptime(server: Server) -> str:
    """How long the server has run, for people (``3 h 12 min``)."""
    minutes = int(time.time() - server.started) // 60
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def rss_mib(pid: int) -> float | None:
    """Resident memory of a process in MiB (Linux), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
