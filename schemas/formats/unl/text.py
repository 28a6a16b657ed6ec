"""Loading a UNL or NLization text (a path or the text itself) and cleaning it."""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from pathlib import Path
from typing import TYPE_CHECKING

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import Snapshot, read_stable

if TYPE_CHECKING:
    from sysdiff.schemas.formats.conllu import Hasher

# --------------------------------------------------------------------------------------------
# Text loading and cleaning

_BR = re.compile(r"<br\s*/?\s*>", re.IGNORECASE)


def clean_text(text: str) -> str:
    """Normalise newlines, turn ``<br />`` into newlines and decode HTML entities."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "<" in text:
        text = _BR.sub("\n", text)
    return html.unescape(text) if "&" in text else text


_PATH_LIKE = re.compile(r"[^\s{}()\[\]<>\"]+\.(?:unl|txt|html?|nl|raw)", re.IGNORECASE)


def _is_path(x: str | Path) -> bool:
    """A ``Path``; or a one-line ``str`` naming a file or looking like a file name."""
    if isinstance(x, Path):
        return True
    if "\n" in x:
        return False
    if _PATH_LIKE.fullmatch(x.strip()):
        return True
    try:
        return Path(x).is_file()
    except (OSError, ValueError):
        return False


def _load(path_or_text: str | Path | Snapshot, source_name: str | None,
          hasher: Hasher | None = None) -> tuple[str, str | None]:
    """Return (raw text, name) of a path, a file already read (a :class:`Snapshot`) or a
    text; a file's bytes also go to ``hasher`` (its content hash comes from the one read,
    through one descriptor: :func:`read_stable`)."""
    if isinstance(path_or_text, Snapshot):
        data, name = path_or_text.data, source_name
    elif not _is_path(path_or_text):
        return str(path_or_text), source_name
    else:
        name = source_name or str(path_or_text)
        data = read_stable(path_or_text).data
    if hasher is not None:
        hasher.update(data)
    if b"\x00" in data:
        raise InputError("binary file: expected a UNL document (text)", path=name)
    try:
        return data.decode("utf-8-sig"), name
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError("not UTF-8 text: expected a UNL document", path=name, line=line) from exc


class _Lines:
    """Offset -> 1-based line number."""

    def __init__(self, text: str):
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def __call__(self, offset: int) -> int:
        return bisect_right(self._starts, offset)
