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
        if b"\r" in block:  # CR LF line ends: not cut (two blank lines in a row are found by
            self.irregular = True  # the range's reader, whose sentences then do not add up)
        # a separator across the boundary (the last block's last byte, this one's first)
        crossing = int(self.tail[-1:] == b"\n" and block[:1] == b"\n")
        while not self.irregular:
            cut = self._next_cut(block, crossing)
            if cut is None:
                break
            at = cut - self.pos  # the cut's offset in this block
            before = crossing + block.count(SEPARATOR, 0, at) if at > 1 else crossing
            self.cuts.append((cut, self.seps + before))
        self.seps += crossing + block.count(SEPARATOR)
        self.pos += len(block)
        self.tail = (self.tail + block[-2:])[-2:]

    def _next_cut(self, block: bytes, crossing: int) -> int | None:
        """The file position right after the first separator that starts at or after the
        next cut's target, in this block (or across its start), if any."""
        target = (self.cuts[-1][0] if self.cuts else 0) + self.target
        if crossing and self.pos - 1 >= target:
            return self.pos + 1
        at = block.find(SEPARATOR, max(0, target - self.pos))
        return None if at < 0 else self.pos + at + 2

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
