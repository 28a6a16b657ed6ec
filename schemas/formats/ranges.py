"""Sentence-aligned byte ranges of a token file, found in the one pass that hashes it.

A large system file is read by several tasks at once, each a range of whole sentences. The
ranges are cut right after a blank line (``\\n\\n``) and numbered by the sentences before
them, counted as the blank lines before them: exact for the files the fast reader takes
(LF line ends, no blank line first, never two blank lines in a row). A file with anything
else is not split (it is read by one task, which also finds what is irregular). The pass
looks for blank lines with numpy, whose loops release the GIL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``[start, end)`` of a file: whole sentences, the first numbered ``first_sent``."""

    start: int
    end: int
    first_sent: int


class RangeFinder:
    """Fed a file block by block, cuts it into ranges of about ``target`` bytes after blank
    lines; :meth:`ranges` is None when the file should not be split. The blank lines are
    found by numpy passes, which release the GIL (the other ingest threads go on)."""

    def __init__(self, target: int) -> None:
        self.target = max(1, target)
        self.pos = 0  # bytes fed so far
        self.seps = 0  # blank-line separators so far
        self.tail = b""  # the last byte fed
        self.last_sep = -2  # where the last separator starts
        self.cuts: list[tuple[int, int]] = []  # (position, first sentence)
        self.irregular = False

    def feed(self, block: bytes) -> None:
        if not block:
            return
        if self.pos == 0 and block[:1] == b"\n":
            self.irregular = True
        if not self.irregular:
            self._cut(block)
        self.pos += len(block)
        self.tail = block[-1:]

    def _cut(self, block: bytes) -> None:
        """Find the block's separators (one across its start too) and cut after those that
        start at or after the next cut's target."""
        found = separators(block)
        if found is None:  # CR LF line ends: not cut
            self.irregular = True
            return
        at = self.pos + found
        if self.tail == b"\n" and block[:1] == b"\n":
            at = np.concatenate(([self.pos - 1], at))
        # two blank lines in a row: the ranges' numbering would not be the reader's
        if at.size and (at[0] == self.last_sep + 1 or (np.diff(at) == 1).any()):
            self.irregular = True
            return
        while (k := int(np.searchsorted(at, self._next_target()))) < at.size:
            self.cuts.append((int(at[k]) + 2, self.seps + k + 1))
        self.seps += int(at.size)
        if at.size:
            self.last_sep = int(at[-1])

    def _next_target(self) -> int:
        """The position the next cut's separator must start at or after."""
        return (self.cuts[-1][0] if self.cuts else 0) + self.target

    def ranges(self) -> tuple[ByteRange, ...] | None:
        """The ranges of the whole file, or None: irregular, or not worth splitting."""
        if self.irregular:
            return None
        cuts = [(c, s) for c, s in self.cuts if c < self.pos]
        if not cuts:
            return None
        bounds = [(0, 0), *cuts, (self.pos, None)]
        return tuple(ByteRange(a, b, s) for (a, s), (b, _) in zip(bounds, bounds[1:],
                                                                  strict=False))


#: Bytes scanned at once by :func:`separators` and the fast reader's ``tab_count`` (their
#: temporaries stay in the cache).
SCAN_CHUNK = 1 << 22


def separators(block: bytes) -> np.ndarray | None:
    """Where each ``\\n\\n`` of ``block`` starts (overlapping ones too), or None when it
    holds a carriage return."""
    a = np.frombuffer(block, np.uint8)
    out = []
    for start in range(0, a.size, SCAN_CHUNK):
        chunk = a[start:start + SCAN_CHUNK + 1]  # one byte more: a pair across the chunks
        if (chunk == 13).any():
            return None
        newline = chunk == 10
        out.append(np.flatnonzero(newline[1:] & newline[:-1]) + start)
    return np.concatenate(out) if out else np.zeros(0, np.int64)
