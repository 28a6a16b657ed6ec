"""The command line's shared option types and output helpers: ``--warehouse`` and
``--format``, sysdiff's warning lines on stderr, and output rendering."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Annotated

import typer

from sysdiff.flows.names import FORMATS, NOTICE
from sysdiff.schemas.errors import InputError

Warehouse = Annotated[str | None, typer.Option(
    "--warehouse", "-w", metavar="DIR", help="Warehouse folder (default: $SYSDIFF_WAREHOUSE, "
    "else ./data/warehouse).")]
Fmt = Annotated[str, typer.Option("--format", "-f", metavar="FORMAT",
                                  help="Output: " + ", ".join(FORMATS) + ".")]
Timeout = Annotated[float | None, typer.Option(
    "--timeout", min=0, metavar="SECONDS", help="Refuse a query that runs longer than this "
    "many seconds (0: no limit; default: $SYSDIFF_SQL_TIMEOUT, else 60).")]
MemoryLimit = Annotated[str | None, typer.Option(
    "--memory-limit", metavar="SIZE", help="DuckDB's memory for a query, e.g. 4GB, 512MB or "
    "25% of the machine's (default: $SYSDIFF_SQL_MEMORY bytes, else 25%).")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help=(
    "Show Prefect's logs and each step's time (a run then takes its own process: about 3 s "
    "more)."))]
UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 2**10,
         "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory_bytes(text: str) -> int:
    """``4GB``, ``512MiB``, ``25%`` (of the machine's memory) or a number of bytes."""
    from sysdiff.flows.queries import physical_memory

    raw = text.strip().lower().replace(" ", "")
    try:
        if raw.endswith("%"):
            share = float(raw[:-1])
            if not 0 < share <= 100:
                raise ValueError
            return int(physical_memory() * share / 100)
        number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
        value = float(number) * UNITS[raw[len(number):]]
        if value <= 0:
            raise ValueError
        return int(value)
    except (ValueError, KeyError):
        raise InputError(f"--memory-limit '{text}' is not a memory size; expected e.g. 4GB, "
                         "512MB, 2GiB or 25%") from None


@contextlib.contextmanager
def reading(timeout: float | None, memory_limit: str | None) -> Iterator[None]:
    """A read-only command's block: one sandboxed connection per warehouse, each query within
    the command line's time and memory limits (else the defaults)."""
    from sysdiff.flows.queries import Limits, default_limits, limits, one_connection

    default = default_limits()
    chosen = Limits(default.timeout if timeout is None else timeout,
                    default.memory if memory_limit is None else memory_bytes(memory_limit))
    with limits(chosen), one_connection():
        yield


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
