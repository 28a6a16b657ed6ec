"""The byte ranges a large token file is cut into, found block by block, equal the ranges
found on the whole file at once by ``bytes.find``/``bytes.count``, whatever the blocks; a
file the ranges cannot number is not cut."""

from __future__ import annotations

import random

import pytest

from sysdiff.schemas.formats.ranges import ByteRange, RangeFinder


def reference(data: bytes, target: int) -> tuple[ByteRange, ...] | None:
    """Cut after the first blank line at or after each target; number each range by the
    blank lines before it."""
    if data.startswith(b"\n") or b"\r" in data or b"\n\n\n" in data:
        return None
    cuts, last = [], 0
    while (i := data.find(b"\n\n", last + target)) >= 0 and i + 2 < len(data):
        last = i + 2
        cuts.append((last, data.count(b"\n\n", 0, last)))
    if not cuts:
        return None
    bounds = [(0, 0), *cuts, (len(data), None)]
    return tuple(ByteRange(a, b, s) for (a, s), (b, _) in zip(bounds, bounds[1:], strict=False))


def sample_file(rng: random.Random) -> bytes:
    """Sentences of tab-separated lines, blank lines between them; now and then something
    irregular."""
    sents = ["\n".join("\t".join(rng.choice(["1", "chat", "_", "NOUN"]) for _ in range(3))
                       for _ in range(rng.randint(1, 4)))
             for _ in range(rng.randint(1, 40))]
    text = "\n\n".join(sents) + "\n\n"
    odd = rng.random()
    if odd < 0.1:
        text = text.replace("\n", "\r\n", 1)
    elif odd < 0.2:
        at = text.find("\n\n", rng.randrange(len(text)))
        text = text if at < 0 else text[:at] + "\n" + text[at:]
    elif odd < 0.25:
        text = "\n" + text
    return text.encode()


def feed(data: bytes, target: int, rng: random.Random) -> tuple[ByteRange, ...] | None:
    finder, at = RangeFinder(target), 0
    while at < len(data):
        size = rng.choice([1, 2, 3, rng.randint(1, 64), len(data)])
        finder.feed(data[at:at + size])
        at += size
    return finder.ranges()


@pytest.mark.parametrize("seed", range(40))
def test_ranges_found_block_by_block_are_the_whole_files(seed):
    rng = random.Random(seed)
    for _ in range(25):
        data = sample_file(rng)
        target = rng.choice([1, 5, 20, 60, 200])
        assert feed(data, target, rng) == reference(data, target), (data, target)


def test_two_blank_lines_in_a_row_across_blocks_leave_the_file_whole():
    data = b"a\tb\n\n" * 50 + b"\n" + b"a\tb\n\n" * 50
    middle = data.index(b"\n\n\n")
    for split in range(middle - 1, middle + 4):  # the blocks meet inside the three newlines
        finder = RangeFinder(20)
        finder.feed(data[:split])
        finder.feed(data[split:])
        assert finder.ranges() is None
    finder = RangeFinder(20)
    finder.feed(data.replace(b"\n\n\n", b"\n\n"))
    assert finder.ranges() is not None
