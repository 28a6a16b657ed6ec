"""The command line's shared option types and output helpers: ``--warehouse`` and
``--format``, sysdiff's warning lines on stderr, and output rendering."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from sysdiff.flows.names import FORMATS, NOTICE
from sysdiff.schemas.errors import InputError

Warehouse = Annotated[str | None, typer.Option(
    "--warehouse", "-w", help="Warehouse folder (default: $SYSDIFF_WAREHOUSE, else "
    "./data/warehouse).")]
Fmt = Annotated[str, typer.Option("--format", "-f", help="Output: " + ", ".join(FORMATS) + ".")]


def show_warnings(verbose: bool = False) -> None:
    """sysdiff's own warnings (e.g. UNL encodings) go to stderr, one line each; with
    ``verbose`` also the time of each step."""
    import logging

    log = logging.getLogger("sysdiff")
    if not log.handlers:
        handler = _StderrHandler()
        handler.setFormatter(_LineFormatter())
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO if verbose else NOTICE)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (not when the handler
    was made), so redirected output (tests, embedding) gets the warnings too."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


class _LineFormatter(logging.Formatter):
    """``sysdiff: warning: ...`` for warnings, ``sysdiff: note: ...`` for notices,
    ``sysdiff: ...`` for step times."""

    def format(self, record: logging.LogRecord) -> str:
        kind = ("warning: " if record.levelno >= logging.WARNING else
                "note: " if record.levelno >= NOTICE else "")
        return f"sysdiff: {kind}{record.getMessage()}"


def to_text(df, fmt: str, title: str | None = None) -> str:
    """:func:`sysdiff.flows.render.to_text` (imported when output is printed)."""
    from sysdiff.flows.render import to_text as render

    return render(df, fmt, title)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InputError(f"unknown output format '{fmt}'; expected one of {', '.join(FORMATS)}")
