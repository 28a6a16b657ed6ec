"""The warm runner's process (see :mod:`sysdiff.flows.runner`): it takes its lock, imports
what runs need, listens on its socket, forks a child for each command
(:mod:`sysdiff.flows.runner_child`) and reports the exit statuses."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sysdiff.flows import server
from sysdiff.flows.runner import _relay, _send, code_fingerprint, files, import_env, socket_address
from sysdiff.flows.runner_child import DECLINED, child

#: Imported before serving, so that a child imports (almost) nothing; every task's flow
#: module too (:func:`warm_up`, from ``run.TASK_FLOWS``).
WARM = ("sysdiff.flows.cli", "sysdiff.flows.cli_runs", "sysdiff.flows.cli_server",
        "sysdiff.flows.run", "sysdiff.flows.show",
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
MAX_REQUEST = 1 << 22


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
        is gone (its start failed: nothing to serve) or when what answers at its address is
        not sysdiff's server (:func:`server.proves`)."""
        url = os.environ.get("PREFECT_API_URL", "")
        deadline = time.monotonic() + server.START_TIMEOUT
        while url and time.monotonic() < deadline:
            live = server.live_server()
            if live is not None:
                return live.api_url == url
            if not server.held(server.state_dir() / "server.pid"):
                return False
            time.sleep(0.5)
        return not url

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
                  "python": sys.executable, "started": time.time(),
                  "source": str(Path(__file__).resolve().parent)}
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
        gone (killed, or done: the child tells it its status before it exits); interrupt
        its child. Nothing when the child was reaped in the same round (its socket is
        closed)."""
        if pid not in self.children or conn.fileno() < 0:
            return
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


def warm_up() -> None:
    """Import what runs need, every task's flow module included (a module missing here is
    imported by the child), and compute what every run's commit computes alike."""
    import importlib

    for name in WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from sysdiff.flows.catalog import table_ddl
    from sysdiff.flows.run import TASK_FLOWS, task_flow

    for task in TASK_FLOWS:
        task_flow(task)
    # the tables' DuckDB column types, which every commit records: about 0.09 s a run, once
    # here (an in-memory DuckDB, closed: no thread is left to the children)
    table_ddl()
