"""The one error type users see: what is wrong, where, and what was expected."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad user input. Rendered as one line on stderr; the CLI exits with status 2.

    ``path`` and ``line`` (1-based) locate the problem; ``message`` says what is wrong and
    what was expected.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "")
            where += ": "
        return f"{where}{self.message}"
