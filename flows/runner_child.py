"""The warm runner's forked child (see :mod:`sysdiff.flows.runner`): it takes over the
client's descriptors, folder, umask and environment, declines when its Prefect settings
differ from those the runner imported Prefect with, and runs the client's command line. It
tells the client where its run commits and, at the end, its exit status itself: the
verdict does not depend on the runner living until then."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable

from sysdiff.flows import outcome, server
from sysdiff.flows.runner import INTERNAL, _send

DECLINED = 97  # exit status of a child that declined (it told the client why)


def child(main: Callable[[], None], conn: socket.socket, request: dict, fds: list[int],
          inherited: list[int]) -> None:
    """In the forked child: become the client's command and exit with its status."""
    code = INTERNAL
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
            reason = take_settings()
        except Exception as e:  # e.g. the client's folder is gone: it reports that itself
            reason = f"{type(e).__name__}: {e}"
        if reason:
            _send(conn, {"declined": reason})
            os._exit(DECLINED)
        _send(conn, {"pid": os.getpid()})
        outcome.listen(lambda run: _send(conn, {"run": run}))
        code = run_command(main, request.get("prog") or "sysdiff", argv)
    except BaseException as e:  # noqa: BLE001 (the child must always exit here)
        with contextlib.suppress(Exception):
            print(f"sysdiff: internal error in the warm runner: {type(e).__name__}: {e}",
                  file=sys.stderr)
    finish(code, conn)


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


#: Prefect settings a child may hold apart from those the runner imported Prefect with:
#: the levels and prints of its logs, which ``sysdiff run -v`` raises (see
#: :func:`sysdiff.flows.server.quiet_prefect`) and the child sets itself (:func:`adopt_logging`).
LOGGING_SETTINGS = frozenset({"logging.level", "logging.log_prints", "server.logging_level",
                              "internal.logging_level"})


def take_settings() -> str | None:
    """Why this child cannot run with its Prefect settings (its environment, folder and
    profile): they differ from those Prefect was imported with; None when they do not, or
    differ in :data:`LOGGING_SETTINGS` alone, which the child then takes
    (:func:`adopt_logging`)."""
    from prefect.settings import Settings, get_current_settings

    mine, imported = Settings().model_dump(), get_current_settings().model_dump()
    if mine == imported:
        return None
    differ = sorted(_diff_keys(mine, imported))
    if set(differ) <= LOGGING_SETTINGS and can_relog():
        adopt_logging()
        return None
    return "Prefect settings differ: " + ", ".join(differ[:5])


def can_relog() -> bool:
    """Whether this Prefect can take new settings after its import (it has
    ``refresh_global_settings_context``, which rebuilds them from the environment)."""
    import prefect.context

    return hasattr(prefect.context, "refresh_global_settings_context")


def adopt_logging() -> None:
    """Make this child's Prefect settings (its environment's) the ones it runs with, and its
    loggers' levels theirs."""
    import prefect.context
    from prefect.logging.configuration import setup_logging

    prefect.context.refresh_global_settings_context()
    setup_logging()  # incremental when Prefect's logging is set up: the levels change


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
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)  # as the interpreter does with a message
        return INTERNAL
    return 0


def finish(code: int, conn: socket.socket | None = None) -> None:
    """Exit as the interpreter would (Prefect's event and log workers drain in threading's
    shutdown hooks, then the atexit handlers run), without tearing down the objects the
    child shares with the runner, which would copy their pages for nothing; the client is
    told the status first-hand (the runner, which also reports it, may be gone)."""
    import atexit
    import threading

    for step in (sys.stdout.flush, sys.stderr.flush, threading._shutdown,
                 atexit._run_exitfuncs, sys.stdout.flush, sys.stderr.flush):
        with contextlib.suppress(BaseException):
            step()
    if conn is not None:
        # the client closes its socket once told; the runner then relays SIGINT to this
        # process, which must not interrupt it between here and os._exit
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _send(conn, {"exit": code})
    os._exit(code)
