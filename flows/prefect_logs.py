"""Bad input is one line, in Prefect's logs too.

A task or flow run that raises :class:`InputError` (a bad file) makes Prefect log the
exception with its traceback and then its Failed state, though sysdiff says the same in one
line (``sysdiff: warning: system 'x' skipped: FILE:LINE: ...``, or the refusal). Where
Prefect's logs are shown (``sysdiff serve``'s scheduled runs log at INFO, and ``-v``), those
records are dropped; lines sysdiff sends to a flow run's log for the Prefect UI
(:data:`API_ONLY`) are not printed a second time on the console.
"""

from __future__ import annotations

import logging

from sysdiff.schemas.errors import InputError

#: ``extra`` of a record meant for the flow run's log in the Prefect UI only (the console
#: has it from sysdiff's own logger).
API_ONLY = {"sysdiff_api_only": True}
RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class InputErrorRecords(logging.Filter):
    """Drops Prefect's records of a run that raised :class:`InputError`: the exception
    (with its traceback) and the Failed state that names it."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, InputError):
            return False
        message = record.getMessage()
        return not (message.startswith("Finished in state Failed(")
                    and f"{InputError.__name__}:" in message)


class ApiOnly(logging.Filter):
    """Keeps records marked :data:`API_ONLY` off a console handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "sysdiff_api_only", False)


def one_line_input_errors() -> None:
    """Install the filters (once per process; Prefect's logging is set up when it is
    imported, before any flow runs)."""
    for name in RUN_LOGGERS:
        _add_once(logging.getLogger(name), InputErrorRecords)
    for handler in logging.getLogger().handlers:
        if type(handler).__name__ == "PrefectConsoleHandler":
            _add_once(handler, ApiOnly)


def _add_once(target: logging.Filterer, kind: type[logging.Filter]) -> None:
    if not any(isinstance(f, kind) for f in target.filters):
        target.addFilter(kind())
