"""Progress bars for long steps, on stderr, only when a person is watching a terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextlib.contextmanager
def progress(label: str, total: int) -> Iterator[Callable[[], None]]:
    """Yield a ``tick()`` that advances a bar of ``total`` steps (silent when not a TTY)."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    bar = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), transient=True)
    with bar:
        tid = bar.add_task(label, total=total)
        yield lambda: bar.advance(tid)
