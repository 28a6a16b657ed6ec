"""The warm runner: a background process with sysdiff, Prefect, polars and DuckDB already
imported, which runs ``sysdiff run`` and ``sysdiff demo`` in a forked child.

Importing Prefect alone takes about 1.3 s here and a run's other imports about 1 s more, so
a run in a fresh process cannot finish in 2 s. The runner pays the imports once. For each
command the ``sysdiff`` process (the client) connects to the runner's Unix socket and sends
its arguments, working folder, environment and umask, with its stdin, stdout and stderr
(``SCM_RIGHTS``); the runner forks a child which takes all of them over (so output, colours
and progress bars go straight to the client's terminal), runs the same command line the
client would have run, and reports to the same Prefect API. The client forwards Ctrl-C
(SIGINT), SIGTERM, SIGHUP and SIGQUIT to the child and exits with its status; a client that
disappears interrupts its child.

The child declines (and the client runs the command itself, as without a runner) when the
Prefect settings it would have differ from those the runner imported Prefect with (another
``PREFECT_API_URL``, profile, ``prefect.toml``, ``-v`` logging), when an import-time
variable differs (``PYTHON*``, ``LANG``/``LC_*``, thread counts), or when sysdiff's code or
the installed packages changed since the runner started (it then exits; the client starts
a fresh one). One runner per installation (Python executable and source folder) lives in
the state folder of :mod:`sysdiff.flows.server`: ``runner-KEY.sock``, ``runner-KEY.json``,
``runner-KEY.lock`` (held while it lives) and ``runner-KEY.log``.

``sysdiff server start`` starts it with the Prefect server, the first run that finds the
server without a runner starts it for the next run, and ``sysdiff server stop`` stops it.
``SYSDIFF_RUNNER=off`` runs every command in its own process (still reporting to the
background server).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sysdiff.flows import server

FORWARDED = ("run", "demo")  # the commands a runner runs (the ones that start Prefect)
DECLINED = 97  # exit status of a child that declined (it told the client why)
#: Imported before serving, so that a child imports (almost) nothing.
WARM = ("sysdiff.flows.cli", "sysdiff.flows.run", "sysdiff.flows.tokens",
        "sysdiff.flows.coref", "sysdiff.flows.unl", "sysdiff.flows.show",
        "sysdiff.flows.report", "sysdiff.flows.queries", "sysdiff.flows.render",
        "sysdiff.flows.warehouse", "sysdiff.flows.spec", "sysdiff.flows.preflight",
        "sysdiff.flows.progress", "sysdiff.flows.history", "sysdiff.flows.watch",
        "sysdiff.transforms.significance", "sysdiff.schemas.formats.conllu",
        "sysdiff.schemas.formats.coref", "prefect.flow_engine", "prefect.task_engine",
        "prefect.task_runners", "prefect.events.worker", "prefect.events.clients",
        "prefect.logging.handlers", "prefect.client.orchestration", "prefect.results",
        "prefect.settings", "fastapi.encoders", "websockets.asyncio.client", "rich.console",
        "rich.table", "rich.progress", "duckdb", "polars", "pyarrow.parquet", "numpy",
        "scipy.special", "http.client", "email.utils", "uuid", "anyio._backends._asyncio",
        "pyarrow.compute", "prefect.utilities.visualization", "typer._adapters",
        "encodings.idna", "stringprep")
#: Environment variables read when a module is imported: a client whose value differs from
#: the runner's runs the command itself.
IMPORT_ENV_PREFIXES = ("PYTHON", "LC_", "OMP_", "OPENBLAS_", "MKL_")
IMPORT_ENV = ("LANG",)
RUNNER_ENV = "SYSDIFF_RUNNER"  # off: every command runs in its own process
OFF = ("off", "0", "false", "no")
CONNECT_TIMEOUT = 5.0
MAX_REQUEST = 1 << 22


# ------------------------------------------------------------------------------ identity


def enabled() -> bool:
    """False with ``SYSDIFF_RUNNER=off``."""
    return os.environ.get(RUNNER_ENV, "").strip().lower() not in OFF


def install_key() -> str:
    """One runner per Python executable and sysdiff source folder."""
    here = f"{os.path.realpath(sys.executable)}\0{Path(__file__).resolve().parent}"
    return hashlib.sha256(here.encode()).hexdigest()[:12]


def files(key: str | None = None) -> dict[str, Path]:
    """The runner's files in the state folder."""
    key = key or install_key()
    state = server.state_dir()
    return {kind: state / f"runner-{key}.{kind}" for kind in ("sock", "json", "lock", "log")}


def socket_address(path: Path) -> str:
    """The socket's path, or an abstract address (Linux) when the path is too long for
    ``AF_UNIX``; the runner checks the peer's user id either way."""
    text = str(path)
    if len(text.encode()) < 100:
        return text
    return "\0sysdiff-" + hashlib.sha256(text.encode()).hexdigest()[:24]


def code_fingerprint() -> str:
    """Changes when a sysdiff source file or the installed packages change: sizes and
    modification times of sysdiff's Python files, the site-packages folder's time, the
    interpreter."""
    import sysconfig

    import sysdiff
    import sysdiff.schemas
    import sysdiff.transforms

    roots = sorted({Path(sysdiff.__file__).parent, Path(__file__).parent,
                    Path(sysdiff.transforms.__file__).parent,
                    Path(sysdiff.schemas.__file__).parent})
    h = hashlib.sha256(f"{sys.executable}\0{sys.version}".encode())
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(n for n in names if n.endswith(".py")):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
    with contextlib.suppress(OSError):
        h.update(str(os.stat(sysconfig.get_path("purelib")).st_mtime_ns).encode())
    return h.hexdigest()[:16]


def import_env(env: dict[str, str] | os._Environ) -> dict[str, str]:
    """The variables of ``env`` that modules read when they are imported."""
    return {k: v for k, v in env.items() if k.startswith(IMPORT_ENV_PREFIXES) or k in IMPORT_ENV}


def run_env(api_url: str | None) -> dict[str, str]:
    """The environment a run in this process would have: this one, with the background
    server's API URL (when it is used)."""
    env = dict(os.environ)
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


# ------------------------------------------------------------------------------ client


def alive(key: str | None = None) -> dict | str | None:
    """The runner's record when it lives (it holds its lock), ``"starting"`` while it
    imports (the lock, no record yet), else None."""
    paths = files(key)
    if not server.held(paths["lock"]):
        return None
    try:
        return json.loads(paths["json"].read_text())
    except (OSError, ValueError):
        return "starting"


def wait_ready(api_url: str | None, timeout: float = 120.0) -> dict | None:
    """Start a runner when none lives and wait until it listens; its record, or None (also
    with ``SYSDIFF_RUNNER=off``)."""
    if not enabled():
        return None
    deadline = time.monotonic() + timeout
    if alive() is None:
        spawn(api_url)
    while time.monotonic() < deadline:
        record = alive()
        if isinstance(record, dict):
            return record
        time.sleep(0.1)
    return None


def try_forward(argv: list[str], api_url: str | None = None) -> int | None:
    """Run ``sysdiff ARGV`` in the warm runner and return its exit status; None when no
    runner can (the caller runs the command itself). Starts a runner for the next run when
    the background server lives and no runner does."""
    if not argv or argv[0] not in FORWARDED or "--help" in argv:
        return None
    try:
        return _try_forward(argv, api_url)
    except OSError:  # the state folder cannot be read or written: run here
        return None


def _try_forward(argv: list[str], api_url: str | None) -> int | None:
    if server.mode() == "off" or not enabled():
        return None
    background = api_url is not None
    if api_url is None:
        if server.explicit_api_url():
            api_url = ""  # a runner may serve it, when its settings are the same
        else:
            live = server.live_server()
            if live is None:
                return None  # the caller starts the server (and a runner with it)
            api_url, background = live.api_url, True
    if _declined:
        return None
    record = alive()
    if not isinstance(record, dict):
        if record is None and background:
            spawn(api_url)  # the runner comes with the background server
        return None
    verbose = "-v" in argv or "--verbose" in argv
    status = _forward(record, argv, run_env(api_url), verbose)
    if isinstance(status, int):
        return status
    _declined.append(status or "declined")
    if status == "stale" and background:
        spawn(api_url)
    return None


_declined: list[str] = []  # this process asked and was declined: it does not ask again


def _say(verbose: bool, text: str) -> None:
    if verbose:
        print(f"sysdiff: {text}", file=sys.stderr)


def _forward(record: dict, argv: list[str], env: dict[str, str], verbose: bool
             ) -> int | str | None:
    """Send the command; the child's exit status, ``"stale"``, or None (declined)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(record["socket"])
        request = {"argv": argv, "prog": _prog_name(), "cwd": os.getcwd(), "env": env,
                   "umask": _umask(), "fingerprint": code_fingerprint(),
                   "stdio": _stdio_spec()}
        socket.send_fds(sock, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        sock.settimeout(60.0)
        reader = _Lines(sock)
        reply = reader.next()
    except (OSError, ValueError, KeyError) as e:
        _say(verbose, f"warm runner unavailable ({e}); running in this process")
        sock.close()
        return None
    if reply is None or "pid" not in reply:
        why = (reply or {}).get("declined", "no answer")
        _say(verbose, f"warm runner declined ({why}); running in this process")
        sock.close()
        return "stale" if why == "stale" else None
    pid = int(reply["pid"])
    old = {sig: signal.signal(sig, lambda s, _f: _relay(pid, s))
           for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)}
    try:
        sock.settimeout(None)
        done = reader.next()
    except OSError:
        done = None
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        sock.close()
    if done is None:
        print("sysdiff: error: the warm runner stopped during the command (see "
              f"{files()['log']}); the warehouse keeps its previous results", file=sys.stderr)
        return 1
    if "signal" in done:
        return 128 + int(done["signal"])
    return int(done["exit"])


def _prog_name() -> str:
    """The program name click shows in usage messages, as this process was started
    (``sysdiff``, or ``python -m sysdiff``)."""
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    if not package:
        return os.path.basename(sys.argv[0]) or "sysdiff"
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    return f"python -m {package}" + ("" if name == "__main__" else f".{name}")


def _relay(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _stdio_spec() -> list[list[str | None]]:
    """Encoding and error handler of stdin, stdout and stderr, as the client has them."""
    return [[getattr(s, "encoding", None), getattr(s, "errors", None)]
            for s in (sys.stdin, sys.stdout, sys.stderr)]


class _Lines:
    """JSON messages, one per line, from a stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def next(self) -> dict | None:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def spawn(api_url: str | None) -> None:
    """Start a runner in the background (it exits at once when one already lives); not
    with ``SYSDIFF_RUNNER=off``, nor when the state folder cannot be written (runs then
    take their own process)."""
    if not enabled():
        return
    paths = files()
    try:
        paths["log"].parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        server.rotate(paths["log"])
        with open(paths["log"], "ab") as log:
            subprocess.Popen([sys.executable, "-m", "sysdiff.flows.runner_main"],
                             env=run_env(api_url), cwd=paths["log"].parent,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
    except OSError:
        return


def spawn_for(api_url: str) -> None:
    """Start this installation's runner for the background server at ``api_url`` (called
    as the server's process is launched), replacing one that reports to another address."""
    record = alive()
    if isinstance(record, dict) and record.get("api_url") != api_url:
        stop_all(only=install_key())
        record = None
    if record is None:
        spawn(api_url)


def stop_all(timeout: float = 15.0, only: str | None = None) -> list[str]:
    """Stop every runner of the state folder (or the one of installation ``only``);
    SIGTERM: each interrupts its running commands. One line per runner stopped."""
    lines = []
    for lock in sorted(server.state_dir().glob("runner-*.lock")):
        key = lock.stem.removeprefix("runner-")
        if only is not None and key != only:
            continue
        try:
            pid = int(lock.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = None
        if pid and server.held(lock):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while server.held(lock) and time.monotonic() < deadline:
                time.sleep(0.05)
            if server.held(lock):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            lines.append(f"stopped the warm runner (pid {pid})")
        for kind in ("json", "sock"):
            files(key)[kind].unlink(missing_ok=True)
    return lines


# ------------------------------------------------------------------------------ runner


class Runner:
    """The runner process: accept commands, fork a child for each (which runs ``command``,
    the CLI's ``main``), report exit statuses."""

    def __init__(self, command: Callable[[], None]) -> None:
        import selectors

        self.command = command
        self.paths = files()
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, tuple[socket.socket, int | None]] = {}
        self.stopping = False
        self.listener: socket.socket | None = None
        self.lock_fd: int | None = None
        self.fingerprint = ""
        self.env = import_env(os.environ)

    def log(self, text: str) -> None:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} runner {os.getpid()}: {text}", flush=True)

    def main(self) -> int:
        """Take the lock, import, listen, serve until SIGTERM or stale code."""
        state = self.paths["lock"].parent
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.lock_fd = os.open(self.paths["lock"], os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another runner of this installation lives
        os.ftruncate(self.lock_fd, 0)
        os.pwrite(self.lock_fd, f"{os.getpid()}\n".encode(), 0)  # stop_all finds it early
        self.fingerprint = code_fingerprint()
        started = time.perf_counter()
        server.quiet_prefect(False)  # the settings a run without -v imports Prefect with
        self.env = import_env(os.environ)
        warm_up()
        self.log(f"imports done in {time.perf_counter() - started:.1f} s "
                 f"(API {os.environ.get('PREFECT_API_URL') or 'as configured'})")
        if not self._server_up():
            self.log("its background server is gone; exiting")
            return 0
        import gc

        gc.collect()
        gc.freeze()  # children do not copy pages to count references to these objects
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        self._listen()
        try:
            self._loop()
        finally:
            self._close_listener()
        return 0

    def _server_up(self) -> bool:
        """Wait while the background server this runner reports to starts; False when it
        is gone (its start failed: nothing to serve)."""
        from urllib.parse import urlsplit

        port = urlsplit(os.environ.get("PREFECT_API_URL", "")).port
        deadline = time.monotonic() + server.START_TIMEOUT
        while port and time.monotonic() < deadline:
            if server.healthy(port, timeout=1.0):
                return True
            if not server.held(server.state_dir() / "server.pid"):
                return False
            time.sleep(0.5)
        return True

    def _on_term(self, _sig: int, _frame: object) -> None:
        self.stopping = True

    def _listen(self) -> None:
        import selectors

        address = socket_address(self.paths["sock"])
        if not address.startswith("\0"):
            Path(address).unlink(missing_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(address)
        if not address.startswith("\0"):
            os.chmod(address, 0o600)
        self.listener.listen(16)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        record = {"pid": os.getpid(), "socket": address, "fingerprint": self.fingerprint,
                  "api_url": os.environ.get("PREFECT_API_URL", ""),
                  "python": sys.executable, "started": time.time()}
        tmp = self.paths["json"].with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, self.paths["json"])
        self.log(f"listening on {self.paths['sock']}")

    def _close_listener(self) -> None:
        """Stop accepting and let a new runner start (files removed, lock released);
        running children go on."""
        if self.listener is None:
            return
        self.selector.unregister(self.listener)
        self.listener.close()
        self.listener = None
        for kind in ("json", "sock"):
            self.paths[kind].unlink(missing_ok=True)
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def _loop(self) -> None:
        interrupted = False
        while self.listener is not None or self.children:
            if self.stopping and self.listener is not None:
                self._close_listener()
            if self.stopping and not interrupted:
                for pid in self.children:
                    _relay(pid, signal.SIGINT)
                interrupted = True
            for key, _ in self.selector.select(timeout=0.5):
                if key.data == "accept":
                    self._accept()
                elif key.data[0] == "child":
                    self._reap(key.data[1])
                else:
                    self._client_gone(key.data[1], key.fileobj)
            if not hasattr(os, "pidfd_open"):
                for pid in list(self.children):
                    self._reap(pid, block=False)

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            uid = struct.unpack("3i", conn.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
            if uid != os.getuid():
                raise PermissionError(f"a process of user {uid} connected")
            conn.settimeout(10.0)
            request, fds = _receive(conn)
            conn.settimeout(None)
        except (OSError, ValueError) as e:
            self.log(f"bad request: {e}")
            conn.close()
            return
        reason = self._refuse(request)
        if reason:
            for fd in fds:
                os.close(fd)
            _send(conn, {"declined": reason})
            conn.close()
            self.log(f"declined: {reason}")
            if reason == "stale":
                self.stopping = True
            return
        self._fork(conn, request, fds)

    def _refuse(self, request: dict) -> str | None:
        if request.get("fingerprint") != self.fingerprint:
            return "stale"
        theirs = import_env(request.get("env", {}))
        if theirs != self.env:
            names = sorted(k for k in set(theirs) | set(self.env)
                           if theirs.get(k) != self.env.get(k))
            return "import-time environment differs: " + ", ".join(names)
        return None

    def _fork(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        import selectors

        inherited = [self.selector.fileno(), *(c.fileno() for c, _ in self.children.values()),
                     *(p for _, p in self.children.values() if p is not None)]
        if self.listener is not None:
            inherited.append(self.listener.fileno())
        if self.lock_fd is not None:
            inherited.append(self.lock_fd)
        pid = os.fork()
        if pid == 0:
            child(self.command, conn, request, fds, inherited)  # never returns
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        self.children[pid] = (conn, pidfd)
        if pidfd is not None:
            self.selector.register(pidfd, selectors.EVENT_READ, ("child", pid))
        self.selector.register(conn, selectors.EVENT_READ, ("client", pid))
        self.log(f"child {pid}: sysdiff {' '.join(request['argv'][:1])}")

    def _reap(self, pid: int, block: bool = True) -> None:
        try:
            done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done == 0:
            return
        conn, pidfd = self.children.pop(pid)
        if pidfd is not None:
            self.selector.unregister(pidfd)
            os.close(pidfd)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(conn)
        if os.WIFSIGNALED(status):
            _send(conn, {"signal": os.WTERMSIG(status)})
        elif os.WEXITSTATUS(status) != DECLINED:
            _send(conn, {"exit": os.WEXITSTATUS(status)})
        conn.close()

    def _client_gone(self, pid: int, conn: socket.socket) -> None:
        """The client's socket is readable: it sends nothing after its request, so it has
        gone (killed); interrupt its child."""
        with contextlib.suppress(OSError):
            if conn.recv(1, socket.MSG_PEEK):
                return
        self.selector.unregister(conn)
        _relay(pid, signal.SIGINT)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: a JSON line, with the client's three standard descriptors."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    while b"\n" not in data:
        chunk = conn.recv(65536)
        if not chunk or len(data) > MAX_REQUEST:
            for fd in fds:
                os.close(fd)
            raise ValueError("incomplete request")
        data += chunk
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"expected 3 descriptors, got {len(fds)}")
    return json.loads(data.split(b"\n", 1)[0]), list(fds)


def _send(conn: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(message).encode() + b"\n")


def warm_up() -> None:
    """Import what runs need (a module missing here is imported by the child)."""
    import importlib

    for name in WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


# ------------------------------------------------------------------------------ child


def child(main: Callable[[], None], conn: socket.socket, request: dict, fds: list[int],
          inherited: list[int]) -> None:
    """In the forked child: become the client's command and exit with its status."""
    code = 1
    try:
        for fd in inherited:
            with contextlib.suppress(OSError):
                os.close(fd)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        argv = request["argv"]
        try:
            _take_over(request, fds)
            server.quiet_prefect("-v" in argv or "--verbose" in argv)
            reason = settings_differ()
        except Exception as e:  # e.g. the client's folder is gone: it reports that itself
            reason = f"{type(e).__name__}: {e}"
        if reason:
            _send(conn, {"declined": reason})
            os._exit(DECLINED)
        _send(conn, {"pid": os.getpid()})
        code = run_command(main, request.get("prog") or "sysdiff", argv)
    except BaseException as e:  # noqa: BLE001 (the child must always exit here)
        with contextlib.suppress(Exception):
            print(f"sysdiff: internal error in the warm runner: {type(e).__name__}: {e}",
                  file=sys.stderr)
    finish(code)


def _take_over(request: dict, fds: list[int]) -> None:
    """The client's descriptors as 0, 1, 2, its folder, umask, environment and streams."""
    import io

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    specs = request.get("stdio") or [[None, None]] * 3
    streams = []
    for fd, (encoding, errors) in enumerate(specs):
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        line = fd == 2 or os.isatty(fd)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        streams.append(io.TextIOWrapper(buffered, encoding=encoding or "utf-8",
                                        errors=errors or "strict", line_buffering=line))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams


def settings_differ() -> str | None:
    """Why this child's Prefect settings (its environment, folder and profile) differ from
    those Prefect was imported with, or None."""
    from prefect.settings import Settings, get_current_settings

    mine, imported = Settings().model_dump(), get_current_settings().model_dump()
    if mine == imported:
        return None
    differ = sorted(_diff_keys(mine, imported))
    return "Prefect settings differ: " + ", ".join(differ[:5])


def _diff_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += _diff_keys(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}")
    return out


def run_command(main: Callable[[], None], prog: str, argv: list[str]) -> int:
    """``sysdiff ARGV`` as ``main`` (:func:`sysdiff.flows.cli.main`) runs it; its exit
    status. Usage messages name the program as the client was started (``prog``)."""
    sys.argv = [prog, *argv]
    sys.modules["__main__"].__package__ = None  # click names the program from argv[0]
    try:
        main()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def finish(code: int) -> None:
    """Exit as the interpreter would (Prefect's event and log workers drain in threading's
    shutdown hooks, then the atexit handlers run), without tearing down the objects the
    child shares with the runner, which would copy their pages for nothing."""
    import atexit
    import threading

    for step in (sys.stdout.flush, sys.stderr.flush, threading._shutdown,
                 atexit._run_exitfuncs, sys.stdout.flush, sys.stderr.flush):
        with contextlib.suppress(BaseException):
            step()
    os._exit(code)

