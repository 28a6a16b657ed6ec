"""Progress bars for long steps, on stderr, only when a person is watching a terminal."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sysdiff.flows.names import NOTICE


def notice(message: str) -> None:
    """Say once what sysdiff did not do and why (``sysdiff: note: ...``)."""
    logging.getLogger("sysdiff").log(NOTICE, "%s", message)


@contextlib.contextmanager
def progress(label: str, total: int) -> Iterator[Callable[[], None]]:
    """Yield a ``tick()`` that advances a bar of ``total`` steps (shown only when a person
    watches a terminal); the step's wall time is logged at INFO (``sysdiff run -v``)."""
    start = time.perf_counter()
    with _bar(label, total) as tick:
        yield tick
    logging.getLogger("sysdiff").info("%s: %d steps in %.2f s", label, total,
                                      time.perf_counter() - start)


#: Whether bars are shown: None, when stderr is a terminal; True or False, as the Python
#: API's ``progress=`` asks.
_show: contextvars.ContextVar[bool | None] = contextvars.ContextVar("progress", default=None)


@contextlib.contextmanager
def bars(show: bool | None) -> Iterator[None]:
    """Within the block, progress bars are shown (True), never shown (False), or shown when
    stderr is a terminal (None)."""
    token = _show.set(show)
    try:
        yield
    finally:
        _show.reset(token)


@contextlib.contextmanager
def _bar(label: str, total: int) -> Iterator[Callable[[], None]]:
    show = _show.get()
    if not (sys.stderr.isatty() if show is None else show):
        yield lambda: None
        return
    bar = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), transient=True, console=Console(stderr=True))
    with bar:
        tid = bar.add_task(label, total=total)
        yield lambda: bar.advance(tid)
