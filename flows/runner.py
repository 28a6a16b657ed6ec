"""The warm runner: a background process with sysdiff, Prefect, polars and DuckDB already
imported, which runs ``sysdiff run`` and ``sysdiff demo`` in a forked child.

Importing Prefect alone takes about 1.3 s here and a run's other imports about 1 s more, so
a run in a fresh process cannot finish in 2 s. The runner pays the imports once. For each
command the ``sysdiff`` process (the client) connects to the runner's Unix socket and sends
its arguments, working folder, environment and umask, with its stdin, stdout and stderr
(``SCM_RIGHTS``); the runner forks a child which takes all of them over (so output, colours
and progress bars go straight to the client's terminal), runs the same command line the
client would have run, and reports to the same Prefect API. The client forwards Ctrl-C
(SIGINT), SIGTERM, SIGHUP and SIGQUIT to the child and exits with its status (0, 2 bad
input, 3 systems skipped, 4 internal error, 130 interrupted: unchanged), which the child
sends itself; a client that disappears interrupts its child. A runner that dies during a
command does not change its outcome: the child goes on and reports (one warning line says
the runner was lost); when no status comes at all, the warehouse's manifest tells whether
the run committed (:mod:`sysdiff.flows.outcome`).

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
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from sysdiff.flows import server

FORWARDED = ("run", "demo", "rm")  # the commands a runner runs (those that start Prefect)
#: Environment variables read when a module is imported: a client whose value differs from
#: the runner's runs the command itself.
IMPORT_ENV_PREFIXES = ("PYTHON", "LC_", "OMP_", "OPENBLAS_", "MKL_")
IMPORT_ENV = ("LANG",)
RUNNER_ENV = "SYSDIFF_RUNNER"  # off: every command runs in its own process
OFF = ("off", "0", "false", "no")
CONNECT_TIMEOUT = 5.0
INTERNAL = 4  # exit status of an internal error (as flows/cli.py's main)


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
    run = None  # where the child's run commits, once it says
    try:
        sock.settimeout(None)
        while (done := reader.next()) is not None and "run" in done:
            run = done["run"]
    except (OSError, ValueError):
        done = None
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        sock.close()
    return verdict(done, run, record)


def verdict(done: dict | None, run: dict | None, record: dict) -> int:
    """The exit status of a forwarded command, from what its child reported (``done``: its
    exit status or the signal that ended it; None when nothing came) and, when the child
    could not say, from the warehouse's manifest (did the run ``run`` commit?); one line
    when the runner died on the way."""
    from sysdiff.flows.outcome import landed, warn

    committed = run is not None and landed(run["warehouse"], run["run"])
    if done is not None and "exit" in done:
        if gone(int(record.get("pid") or 0)):
            warn(f"the warm runner (pid {record.get('pid')}) died during the command; the "
                 "command went on in its own process and finished (the next run starts a "
                 "new runner)")
        return int(done["exit"])
    if done is not None:
        print(f"sysdiff: error: the command's process was killed by signal "
              f"{done['signal']}; " + ("its run's results were committed" if committed
                                       else "the warehouse keeps its previous results"),
              file=sys.stderr)
        return 128 + int(done["signal"])
    if committed:
        warn(f"the warm runner and the command's process stopped (see {files()['log']}) "
             "after the run committed its results")
        return 0
    print("sysdiff: error: the warm runner stopped during the command (see "
          f"{files()['log']}); the warehouse keeps its previous results", file=sys.stderr)
    return INTERNAL


def gone(pid: int) -> bool:
    """True when process ``pid`` has ended (killed: a runner stopped on purpose lives until
    its children have ended); a zombie has ended too."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


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


def _send(conn: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(message).encode() + b"\n")


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
