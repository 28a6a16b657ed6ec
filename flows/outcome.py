"""The true outcome of a run, whatever happens to the processes that help it.

A run's verdict comes from the warehouse, not from the health of the background Prefect
server or of the warm runner: each commit records the run's id in ``manifest.json``
(``"run"``), and the flow's body records here how it ended. When Prefect fails around a
body that ended well (the background server died during the run, say), the results stand:
one warning line says what was lost, and the command ends as the run did. When the server
dies, Prefect stops retrying requests to it (:class:`ServerWatch`), so that no command waits
on a dead server for more than a few seconds.

Stdlib only at import: the warm runner's client reads verdicts without Prefect.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from sysdiff.flows import server
from sysdiff.flows.store import StoreURL, is_url

POLL = 0.2  # seconds between two looks at the background server's lock
#: Quick reconnections of Prefect's event client to the background server (Prefect's
#: default, 10 with a second's pause from the fourth, holds each event for 8 s when the
#: server is gone, one event after the other).
EVENT_RECONNECTIONS = 2

_ended: dict[str, object] = {}  # run id -> what its body returned, or its error
_watching: list[ServerWatch] = []  # the watch over this process's runs, while one is on
_listeners: list[Callable[[dict], None]] = []  # told where a run commits (the warm runner)


class HelperLost(RuntimeError):
    """A helper process (the background Prefect server) died before the run could end."""


def new_run_id() -> str:
    """A fresh run id (recorded in the manifest by the run's commit)."""
    return uuid.uuid4().hex


def landed(root: Path | StoreURL, run_id: str) -> bool:
    """True when the warehouse's manifest is the one run ``run_id`` committed."""
    from sysdiff.flows.names import read_manifest
    from sysdiff.schemas.errors import InputError

    try:
        manifest = (read_manifest(root) if is_url(root)
                    else json.loads((Path(root) / "manifest.json").read_bytes()))
    except (OSError, ValueError, UnicodeDecodeError, InputError):
        return False
    return isinstance(manifest, dict) and manifest.get("run") == run_id


def listen(callback: Callable[[dict], None]) -> None:
    """Call ``callback({"warehouse": ..., "run": ...})`` when a run of this process starts."""
    _listeners.append(callback)


def announce(root: Path, run_id: str) -> None:
    """Tell the listeners where run ``run_id`` commits (before it starts)."""
    for callback in _listeners:
        with contextlib.suppress(Exception):
            callback({"warehouse": str(root), "run": run_id})


def ended(run_id: str, result: object) -> None:
    """Record how the body of run ``run_id`` ended: what it returns (the lines of its
    skipped systems; a pass over a watched folder), or the error it raised."""
    _ended[run_id] = result


def forget(run_id: str) -> None:
    """Drop what :func:`ended` recorded of run ``run_id``."""
    _ended.pop(run_id, None)


def warn(text: str) -> None:
    print(f"sysdiff: warning: {text}", file=sys.stderr, flush=True)


def settle(root: Path | None, run_id: str, error: Exception, watch: ServerWatch | None = None,
           quiet: bool = False):
    """The outcome of a run whose flow call raised ``error``: the run's own error when its
    body raised one (bad input stays bad input, one line, whatever Prefect did next); what
    the body returned, after one warning line, when it ended well (Prefect failed to record
    the end, e.g. its server died); else ``error`` (or :class:`HelperLost`). ``root``: the
    warehouse whose manifest tells whether the run committed (None for a pass over a
    watched folder, whose runs each commit). ``watch``: the current one by default;
    ``quiet``: no warning line (the caller's outcome says it)."""
    from sysdiff.schemas.errors import InputError

    body = _ended.pop(run_id, None)
    watch = watch or (_watching[-1] if _watching else None)
    lost = watch.lost_line() if watch is not None else None
    if isinstance(body, BaseException):
        if lost and not isinstance(body, InputError) and not quiet:
            warn(f"{lost}; the run stopped on an error of its own (below)")
        if body is error:
            raise error
        raise body from None
    if body is None:
        if lost:
            raise HelperLost(f"{lost.replace('during', 'before')} could start; nothing was "
                             "committed (the next run starts a new server)")
        raise error
    cause = lost or ("Prefect could not record the end of the run "
                     f"({type(error).__name__}: {_first_line(error)})")
    if root is None:
        done = "the pass went on to its end"
    else:
        done = ("the run's results were committed" if landed(root, run_id)
                else "the run had nothing new to commit")
    if not quiet:
        warn(f"{cause}; {done}" + (" (the next run starts a new server)" if lost else ""))
    return body


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "no message"


class ServerWatch:
    """Watches the background Prefect server a run reports to: a daemon thread looks at its
    lock and record every :data:`POLL` seconds. When the server dies (or is replaced),
    Prefect's requests stop being retried (its client settings, read on each attempt), so
    the run ends within seconds, and :meth:`lost_line` says what happened."""

    def __init__(self, watched: server.Server) -> None:
        self.server = watched
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._settings = _prefect_settings()
        self._thread = threading.Thread(target=self._watch, name="sysdiff-server-watch",
                                        daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(POLL):
            if self._look():
                return

    def _look(self) -> bool:
        """True (and Prefect's retries off) once the server is gone or replaced."""
        now = server.running()
        if now is not None and now.pid == self.server.pid:
            return False
        self.lost.set()
        _fail_fast(self._settings)
        return True

    def lost_line(self) -> str | None:
        """One line on the server's loss, or None while it lives (looked at now)."""
        if not self.lost.is_set() and not self._look():
            return None
        return f"the background Prefect server (pid {self.server.pid}) died during the run"

    def __enter__(self) -> ServerWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()


@contextlib.contextmanager
def server_watch() -> Iterator[ServerWatch | None]:
    """A :class:`ServerWatch` over the run when it reports to the background server (with
    Prefect's event client reconnecting quickly), else None."""
    import os

    watched = server.running()
    url = os.environ.get("PREFECT_API_URL", "")
    if watched is None or url != watched.api_url:
        yield None
        return
    _quick_events(True)
    try:
        with ServerWatch(watched) as watch:
            _watching.append(watch)
            yield watch
    finally:
        _quick_events(False)
        if _watching:
            _watching.pop()


def _prefect_settings() -> list:
    """The Prefect settings objects this process's threads read: the current context's and
    the global one (a context made from another shares its ``client`` part)."""
    import prefect.context
    from prefect.settings import get_current_settings

    return [get_current_settings(), prefect.context.GLOBAL_SETTINGS_CONTEXT.settings]


def _fail_fast(settings: list) -> None:
    """No more retries of Prefect's requests (each attempt reads ``client.max_retries``):
    a request to the dead server fails now instead of after a minute of backoff."""
    for found in settings:
        with contextlib.suppress(Exception):
            found.client.max_retries = 0


def _quick_events(on: bool) -> None:
    """While ``on``, Prefect's event client for the background server reconnects
    :data:`EVENT_RECONNECTIONS` times at once, without pauses (events are the server's
    record of task runs; a lost one costs a line of its UI, never a result)."""
    from prefect.events.clients import PrefectEventsClient
    from prefect.events.worker import EventsWorker

    if on:
        EventsWorker.set_client_override(PrefectEventsClient,
                                         reconnection_attempts=EVENT_RECONNECTIONS)
    else:
        EventsWorker.set_client_override(None)
