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
#: Per byte count k (0-8): the mask of a word's first k bytes (little-endian).
_LOW_BYTES = np.array([(1 << 8 * k) - 1 for k in range(8)] + [(1 << 64) - 1], np.uint64)
_HIGH_BITS = np.uint64(0x8080808080808080)  # a byte outside ASCII in a word


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
    delims = np.flatnonzero((text == 10) | (text == sep))  # every separator and newline
    newlines = np.flatnonzero(text[delims] == 10)  # line i's newline is delims[newlines[i]]
    if int(token_lines[-1]) >= newlines.size:
        return None
    field = TAG_FIELD[fmt]
    at = newlines[token_lines - 1] + field  # (in delims) the separator before the tag
    if token_lines[0] == 0:  # increasing: only the first can be the file's first line
        at[0] = field - 1
    if (at >= newlines[token_lines]).any():  # the line has fewer fields
        return None
    first, after = delims[at] + 1, delims[at + 1]  # after: the next separator or the newline
    size = after - first
    if (size <= 0).any():
        return None
    coded = _coded_tags(text, first, size)
    if coded is None:
        return None
    codes, values = coded
    return TagFrame(_frame_digest(text, first, after), codes, values)


def _coded_tags(text: np.ndarray, first: np.ndarray, size: np.ndarray
                ) -> tuple[np.ndarray, pl.Series] | None:
    """Each tag (``size`` bytes from ``first``) coded in order of first use, with the
    distinct tags; None when one is not ASCII (left to the full reader's UTF-8 check). A tag
    is taken as its bytes in 8-byte words (the bytes after it zeroed: no tag holds a NUL), so
    coding compares integers, not strings."""
    n_words = -(-int(size.max()) // 8)
    padded = np.zeros(text.size + 8 * n_words, np.uint8)
    padded[:text.size] = text
    every = np.ndarray((padded.size - 7,), "<u8", padded, 0, (1,))  # 8 bytes from each byte
    words = np.empty((size.size, n_words), np.uint64)
    for k in range(n_words):
        words[:, k] = every[first + 8 * k] & _LOW_BYTES[np.clip(size - 8 * k, 0, 8)]
    if (words & _HIGH_BITS).any():
        return None
    array = (pa.array(words[:, 0]) if n_words == 1 else pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(8 * n_words), size.size, [None, pa.py_buffer(words)]))
    coded = pc.dictionary_encode(array)
    distinct = coded.dictionary.to_numpy(zero_copy_only=False) if n_words == 1 else \
        coded.dictionary.to_pylist()
    values = [(int(v).to_bytes(8, "little") if n_words == 1 else v).rstrip(b"\x00").decode()
              for v in distinct]
    return coded.indices.to_numpy().astype(np.uint32), pl.Series("tag", values, pl.String)


def _frame_digest(text: np.ndarray, first: np.ndarray, after: np.ndarray) -> bytes:
    """SHA-256 of ``text`` without the bytes ``first[i] .. after[i] - 1`` (the tags): a
    running sum of +1 at each tag's end and -1 at its start marks the bytes kept."""
    marks = np.zeros(text.size + 1, np.int8)
    marks[0], marks[first], marks[after] = 1, -1, 1  # (tags are apart: after < next first)
    kept = np.cumsum(marks[:-1], dtype=np.int8).view(bool)
    return hashlib.sha256(text[kept].tobytes()).digest()


def _line_starts(data: bytes) -> np.ndarray:
    text = np.frombuffer(data, np.uint8)
    return np.concatenate(([0], np.flatnonzero(text == 10) + 1))
