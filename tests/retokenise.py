"""Test inputs tokenised otherwise than the key, with the same text: multiword tokens
collapsed into one word, words split in two, sentences joined (CoNLL-U in, CoNLL-U out)."""

from __future__ import annotations

import random
from pathlib import Path

Row = list[str]


def sentences(text: str) -> list[tuple[list[str], list[Row]]]:
    """(comment lines, token rows) of every sentence of a CoNLL-U text."""
    out = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line]
        if lines:
            out.append(([t for t in lines if t.startswith("#")],
                        [t.split("\t") for t in lines if not t.startswith("#")]))
    return out


def collapse_multiword(rows: list[Row]) -> list[Row]:
    """Every multiword token becomes one word (its surface form, its first word's labels);
    empty nodes are dropped; IDs and heads renumbered."""
    words, new_id, skip_to = [], {}, 0
    for row in rows:
        if "." in row[0]:
            continue
        if "-" in row[0]:
            lo, hi = map(int, row[0].split("-"))
            first = next(r for r in rows if r[0] == str(lo))
            inside = [str(k) for k in range(lo, hi + 1)]
            head = next((r[6] for r in rows if r[0] in inside and r[6] not in inside), "0")
            words.append([row[1], *first[2:6], head, *first[7:]])
            for k in range(lo, hi + 1):
                new_id[str(k)] = str(len(words))
            skip_to = hi
        elif int(row[0]) > skip_to:
            words.append(row[1:])
            new_id[row[0]] = str(len(words))
    return _renumber(words, new_id)


def split_word(rows: list[Row], at: int) -> list[Row]:
    """Word ``at`` (0-based, no multiword tokens in ``rows``) split into two words after
    its first character; the second attaches to the first."""
    form = rows[at][1]
    first = [rows[at][0], form[:1], *rows[at][2:]]
    second = [rows[at][0], form[1:], *rows[at][2:6], str(at + 1), "dep", "_", "_"]
    new_id = {r[0]: str(k + 1 + (k > at)) for k, r in enumerate(rows)}
    words = [r[1:] for r in rows[:at]] + [first[1:], second[1:]] + [r[1:] for r in rows[at + 1:]]
    out = _renumber(words, new_id)
    out[at + 1][6] = str(at + 1)  # the new word's head is its first half, already renumbered
    return out


def _renumber(words: list[Row], new_id: dict[str, str]) -> list[Row]:
    """Rows with IDs 1..n and heads mapped through ``new_id``."""
    return [[str(k), *w[:5], w[5] if w[5] in ("0", "_") else new_id[w[5]], *w[6:]]
            for k, w in enumerate(words, start=1)]


def join(a: list[Row], b: list[Row]) -> list[Row]:
    """Two sentences as one (the second's heads shifted, its root attached to the first's
    root as ``parataxis``)."""
    n, root = len(a), next((r[0] for r in a if r[6] == "0"), "1")
    return a + [[str(int(r[0]) + n), *r[1:6], *((root, "parataxis") if r[6] == "0" else
                 (r[6] if r[6] == "_" else str(int(r[6]) + n), r[7])), *r[8:]] for r in b]


def retokenise(src: Path, dst: Path, seed: int = 0, join_every: int = 3,
               split_rate: float = 0.02) -> Path:
    """``src`` tokenised otherwise, with the same text: multiword tokens collapsed, about
    ``split_rate`` of the words of two or more characters split, and every ``join_every``-th
    sentence joined with the next."""
    rng = random.Random(seed)
    out, pending = [], None
    for k, (comments, rows) in enumerate(sentences(src.read_text(encoding="utf-8"))):
        words = collapse_multiword(rows)
        for at in reversed(range(len(words))):
            if len(words[at][1]) > 1 and rng.random() < split_rate:
                words = split_word(words, at)
        if pending is not None:
            out.append(([pending[0][0]] if pending[0] else [], join(pending[1], words)))
            pending = None
        elif join_every and k % join_every == join_every - 1:
            pending = (comments, words)
        else:
            out.append(([t for t in comments if t.startswith("# sent_id")], words))
    if pending is not None:
        out.append(pending)
    dst.write_text("".join("\n".join(c + ["\t".join(r) for r in rows]) + "\n\n"
                           for c, rows in out), encoding="utf-8")
    return dst


def retokenise_tags(src: Path, dst: Path, seed: int = 0, split_rate: float = 0.1,
                    merge_rate: float = 0.1, join_every: int = 4) -> Path:
    """A ``word<TAB>tag`` file tokenised otherwise without moving a span boundary: about
    ``split_rate`` of the ASCII words of two or more characters split after their first
    character (the second half continues the first: ``I-X``, or ``O``), about ``merge_rate``
    of the neighbours inside one span or both outside spans merged into one word, and every
    ``join_every``-th sentence joined with the next when it ends outside a span."""
    rng = random.Random(seed)
    blocks = [[line.split("\t") for line in block.split("\n") if line]
              for block in src.read_text(encoding="utf-8").split("\n\n")]
    out: list[list[list[str]]] = []
    join_next = False
    for k, rows in enumerate(b for b in blocks if b):
        words: list[list[str]] = []
        for form, tag in rows:
            if (words and rng.random() < merge_rate
                    and (tag == "O" == words[-1][1] or (
                        tag.startswith("I-") and words[-1][1] != "O"
                        and words[-1][1][2:] == tag[2:]))):
                words[-1][0] += form         # both outside spans, or an I-X that continues X
            elif len(form) > 1 and form.isascii() and rng.random() < split_rate:
                words += [[form[:1], tag], [form[1:], "O" if tag == "O" else "I-" + tag[2:]]]
            else:
                words.append([form, tag])
        if join_next:
            out[-1] += words
        else:
            out.append(words)
        join_next = bool(join_every) and k % join_every == join_every - 1 and words[-1][1] == "O"
    dst.write_text("".join("".join(f"{f}\t{t}\n" for f, t in rows) + "\n" for rows in out),
                   encoding="utf-8")
    return dst
