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
``~/.local/state/sysdiff``): ``server.json`` (pid, port, when, and a random token the server
was started with: a server is sysdiff's only when it answers with that token, see
:func:`proves`; something else listening on the port is never used), ``server.pid`` (the pid, and
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
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sysdiff.schemas.errors import InputError

MODE_ENV, STATE_ENV, PORT_ENV = "SYSDIFF_SERVER", "SYSDIFF_STATE_DIR", "SYSDIFF_SERVER_PORT"
HOST = "127.0.0.1"
#: The header the server's settings carry its token in (``client.custom_headers``, which
#: ``/api/admin/settings`` answers; the server itself sends no request with it).
TOKEN_HEADER = "X-Sysdiff-Server"
START_TIMEOUT = 180.0  # seconds to wait for a starting server to answer


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
    token: str = ""  # random, written in the private server.json (see :func:`proves`)

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


#: Loggers of Prefect's background services (``QueueService.__init__``: the class name), which
#: log to the root logger: e.g. "EventsWorker - Still processing items" while a command exits.
SERVICE_LOGGERS = ("EventsWorker", "APILogWorker")


def quiet_prefect(verbose: bool) -> None:
    """Prefect settings for a command line run (before Prefect is imported): no telemetry,
    quiet logs (unless ``verbose``: also Prefect's internal errors and its services'
    warnings, which would otherwise follow a refusal's one line), no UI and a long start
    timeout for a temporary server."""
    import logging

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_UI_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_LOG_PRINTS", "false")
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_INTERNAL_LOGGING_LEVEL", "CRITICAL")
    for name in SERVICE_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.CRITICAL)


def prefect_home() -> Path:
    """The folder Prefect keeps its database and profiles in (``$PREFECT_HOME``, else
    ``~/.prefect``)."""
    given = os.environ.get("PREFECT_HOME")
    return Path(given).expanduser() if given else Path.home() / ".prefect"


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
        server = Server(**{k: info[k] for k in Server.__dataclass_fields__ if k in info})
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


def proves(port: int, token: str, timeout: float = 2.0) -> bool:
    """True when the server on ``port`` is the one started with ``token``: its settings
    (``/api/admin/settings``, which only a live Prefect API answers) carry the token in the
    header :data:`TOKEN_HEADER`. Another process on the port (a squatter answering
    ``/api/health``, another Prefect server) does not know the token."""
    import http.client

    if not token:
        return False
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", "/api/admin/settings")
        response = conn.getresponse()
        if response.status != 200:
            return False
        headers = json.loads(response.read()).get("client", {}).get("custom_headers", {})
        return isinstance(headers, dict) and headers.get(TOKEN_HEADER) == token
    except (OSError, ValueError, AttributeError):
        return False
    finally:
        conn.close()


def live_server() -> Server | None:
    """The background server when it lives and proves it is sysdiff's (:func:`proves`)."""
    server = running()
    return server if server is not None and proves(server.port, server.token) else None


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


def rotate(log: Path, limit: int = 1 << 20) -> None:
    """Keep one older log (``NAME.1``) when ``log`` has grown past ``limit`` bytes."""
    with contextlib.suppress(OSError):
        if log.stat().st_size > limit:
            os.replace(log, log.with_name(log.name + ".1"))


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
