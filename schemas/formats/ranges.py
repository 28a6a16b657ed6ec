"""Sentence-aligned byte ranges of a token file, found in the one pass that hashes it.

A large system file is read by several tasks at once, each a range of whole sentences. The
ranges are cut right after a blank line (``\\n\\n``) and numbered by the sentences before
them, counted as the blank lines before them: exact for the files the fast reader takes
(LF line ends, no blank line first, never two blank lines in a row). A file with anything
else is not split (it is read by one task, which also finds what is irregular).
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = b"\n\n"


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``[start, end)`` of a file: whole sentences, the first numbered ``first_sent``."""

    start: int
    end: int
    first_sent: int


class RangeFinder:
    """Fed a file block by block, cuts it into ranges of about ``target`` bytes after blank
    lines; :meth:`ranges` is None when the file should not be split."""

    def __init__(self, target: int) -> None:
        self.target = max(1, target)
        self.pos = 0  # bytes fed so far
        self.seps = 0  # blank-line separators so far
        self.tail = b""  # the last two bytes fed
        self.cuts: list[tuple[int, int]] = []  # (position, first sentence)
        self.irregular = False

    def feed(self, block: bytes) -> None:
        if not block:
            return
        if self.pos == 0 and block[:1] == b"\n":
            self.irregular = True
        joined = self.tail[-1:] + block  # a separator across the boundary counts here
        if b"\r" in block or b"\n\n\n" in self.tail + block:
            self.irregular = True
        base = self.pos - len(self.tail[-1:])  # file position of joined[0]
        while not self.irregular:
            last = self.cuts[-1][0] if self.cuts else 0
            want = last + self.target - base
            if want >= len(joined):
                break
            at = joined.find(SEPARATOR, max(0, want))
            if at < 0:
                break
            cut = base + at + 2
            self.cuts.append((cut, self.seps + joined.count(SEPARATOR, 0, at + 2)))
        self.seps += joined.count(SEPARATOR)
        self.pos += len(block)
        self.tail = (self.tail + block)[-2:]

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
