"""The fast reader of a tag file in the key's frame: only its tags, checked against the key
by one digest (SHA-256) of everything else.

A system's tag file usually is the key's file with other tags: the same lines, comments,
``-DOCSTART-`` lines, blank lines and words. Its *frame* is its bytes with the tag field of
every token line cut out (the field, not its separators); a system whose frame is the key's
(taken with the key's token lines) has, line by line, the key's bytes but for a non-empty tag
without separators, so its sentences, words, documents and line numbers are the key's, which
the key's record stands for. Only its tags are read here (no line is split, no column parsed);
:func:`tag_frame` returns None where it cannot vouch for the file (a carriage return, a NUL,
no final newline, a token line without the tag field, an empty tag), and the full reader
(:mod:`sysdiff.schemas.formats.spans`) reads it, reporting any problem at its line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

#: Files read this way at most (a larger one is read in chunks by the full reader): a file
#: is held whole, and the key's side (its tokens and forms) once per process.
LEAN_BYTES = 256 << 20
#: The tag field of each format (0-based), as :data:`sysdiff.schemas.formats.spans.FIELDS`.
TAG_FIELD = {"tsv": 1, "conll2003": 3, "uner": 2}


@dataclass(frozen=True)
class TagFrame:
    """A tag file read on given token lines: the digest of its frame and each line's tag,
    coded (``values[codes[i]]`` is line i's tag)."""

    digest: bytes
    codes: np.ndarray  # uint32, one per token line, in file order
    values: pl.Series  # the distinct tags (String), by code


def separator(fmt: str, data: bytes, first_token_line: int) -> int:
    """The column separator (a byte): a tab, or for CoNLL-2003 a space when its first token
    line (0-based) has no tab."""
    if fmt != "conll2003":
        return 9
    start = _line_starts(data)[first_token_line]
    return 9 if b"\t" in data[start:data.index(b"\n", start)] else 32


def tag_frame(data: bytes, fmt: str, token_lines: np.ndarray, sep: int) -> TagFrame | None:
    """The frame digest and tags of ``data`` (a whole file) read on ``token_lines`` (0-based,
    increasing: the key's), or None when the full reader must decide (module docstring)."""
    if (len(data) >= LEAN_BYTES or not data.endswith(b"\n") or b"\r" in data or b"\x00" in data
            or not token_lines.size):
        return None
    text = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(text == 10)
    if int(token_lines[-1]) >= ends.size:
        return None
    starts = ends[np.maximum(token_lines - 1, 0)] + 1  # one gather, not a copy of every end
    if token_lines[0] == 0:  # increasing: only the first can be the file's first line
        starts[0] = 0
    ends = ends[token_lines]
    seps = np.flatnonzero(text == sep)
    field = TAG_FIELD[fmt]
    at = np.searchsorted(seps, starts) + field - 1  # the separator before the tag
    if at[-1] >= seps.size or (seps[at] >= ends).any():
        return None
    first = seps[at] + 1
    after = np.minimum(np.append(seps, text.size)[at + 1], ends)  # the next separator or EOL
    if (after <= first).any():
        return None
    size = after - first
    offsets = np.concatenate(([0], np.cumsum(size))).astype(np.int32)
    inside = np.repeat(first - offsets[:-1], size) + np.arange(int(offsets[-1]))  # tag bytes
    chars = text[inside]
    if chars.size and chars.max() >= 128:  # left to the full reader's UTF-8 check
        return None
    array = pa.StringArray.from_buffers(size.size, pa.py_buffer(offsets),
                                             pa.py_buffer(chars.tobytes()))
    cut = np.zeros(text.size, bool)
    cut[inside] = True
    digest = hashlib.sha256(text[~cut].tobytes()).digest()
    coded = pc.dictionary_encode(array)  # codes in order of first use
    return TagFrame(digest, coded.indices.to_numpy().astype(np.uint32),
                    pl.Series("tag", coded.dictionary))


def _line_starts(data: bytes) -> np.ndarray:
    text = np.frombuffer(data, np.uint8)
    return np.concatenate(([0], np.flatnonzero(text == 10) + 1))
