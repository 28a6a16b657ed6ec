"""The fast reader of a system file whose words are the key's: only the columns a task
evaluates, checked in whole-column operations.

A system file is read in full (:mod:`sysdiff.schemas.formats.conllu`: every column, every
check, the exact line of the first problem) only when this reader cannot vouch for it. Here,
polars parses the evaluated columns of the file's bytes (comment lines skipped), and the file
must pass every check below; else :func:`fast_words` returns None and the full reader runs,
which reports the problem at its line (or finds a file tokenised otherwise, aligned on the
characters). Nothing is decided here that the full reader would decide otherwise.

Checks (each over the whole file at once): UTF-8 text without NUL, BOM or carriage return;
no blank line before the first sentence, no two blank lines in a row and no sentence of
comments only; every token line
of exactly the format's number of columns (the tab count equals that number minus one per
token line, and the last column is never empty), no empty column; word IDs 1, 2, 3, ... in
each sentence (multiword ranges ``1-2`` and empty nodes ``1.1`` are not words); HEAD an
integer within the sentence or ``_``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.formats.conllu import CONLL_FIELDS, TSV_FIELDS

#: Byte patterns that send a file to the full reader (which names the line).
IRREGULAR = (b"\x00", b"\r", b"\t\t", b"\n\t", b"\t\n", b"\n\n\n")


@dataclass(frozen=True)
class FastWords:
    """The words of a file read by :func:`fast_words`, in file order."""

    n_sents: int
    n_words: np.ndarray  # words per sentence
    n_tokens: int  # words not inside a multiword range, plus the ranges
    sent: np.ndarray  # each word's sentence (0-based, within the bytes read)
    id: np.ndarray  # each word's ID
    form: pl.Series
    labels: dict[str, pl.Series]  # field -> each word's label (strings, as written)
    head: np.ndarray | None  # each word's HEAD (-1 for '_'); None when not read


def fast_words(data: bytes, fmt: str, fields: tuple[str, ...]) -> FastWords | None:
    """The words of ``data`` (a whole file, or whole sentences of one) with the label
    ``fields`` (and ``head``) read, or None when the full reader must decide."""
    if not data or _irregular(data):
        return None
    names = TSV_FIELDS if fmt == "tsv" else CONLL_FIELDS
    wanted = _columns(fmt, fields)
    try:
        rows = (pl.scan_csv(io.BytesIO(data), separator="\t", has_header=False, quote_char=None,
                            comment_prefix="#", schema=dict.fromkeys(names, pl.String))
                .select(wanted).collect())
    except pl.exceptions.PolarsError:  # e.g. invalid UTF-8
        return None
    blank = rows[wanted[0]].is_null().to_numpy()
    if blank[0] or (blank[1:] & blank[:-1]).any():
        return None  # a sentence of comments only (or a blank line first)
    n_token_rows = int((~blank).sum())
    if n_token_rows == 0 or data.count(b"\t") != (len(names) - 1) * n_token_rows:
        return None  # a line of another column count, or a comment holding a tab
    tokens = rows.filter(~pl.Series(blank))
    if any(tokens[c].null_count() for c in tokens.columns):
        return None  # an empty column
    starts = ~blank & np.concatenate(([True], blank[:-1]))
    sent = (np.cumsum(starts)[~blank] - 1).astype(np.int32)
    return _words(tokens, sent, fmt, fields)


def _irregular(data: bytes) -> bool:
    """Anything the full reader handles better: see :data:`IRREGULAR`, a BOM, a blank first
    line, a last line without its newline."""
    return (data.startswith((b"\xef\xbb\xbf", b"\n")) or not data.endswith(b"\n")
            or any(p in data for p in IRREGULAR))


def _columns(fmt: str, fields: tuple[str, ...]) -> list[str]:
    """The columns to parse: the ID (CoNLL), the form, the fields, and the last column (an
    empty last column is a short line)."""
    if fmt == "tsv":
        return ["form", "tag"]
    return list(dict.fromkeys(["id", "form", *fields, "misc"]))


def _words(tokens: pl.DataFrame, sent: np.ndarray, fmt: str, fields: tuple[str, ...]
           ) -> FastWords | None:
    """The words of the token rows, or None when an ID or HEAD is not what it must be."""
    n_sents = int(sent[-1]) + 1 if sent.size else 0
    if fmt == "tsv":
        ids = _positions(sent)
        labels = {"upos": tokens["tag"]}
        return FastWords(n_sents, np.bincount(sent, minlength=n_sents), int(sent.size), sent,
                         ids, tokens["form"], labels, None)
    number = tokens["id"].cast(pl.Int32, strict=False)
    word = number.is_not_null().to_numpy()
    n_ranges, covered = _ranges(tokens["id"].filter(~pl.Series(word)))
    if n_ranges is None:
        return None
    words = tokens.filter(pl.Series(word))
    wsent, ids = sent[word], number.filter(pl.Series(word)).to_numpy()
    if not np.array_equal(ids, _positions(wsent)):
        return None  # word IDs do not run 1, 2, 3, ... in each sentence
    n_words = np.bincount(wsent, minlength=n_sents)
    if (n_words == 0).any():
        return None
    head = None
    if "head" in fields:
        head = _heads(words["head"], n_words[wsent])
        if head is None:
            return None
    labels = {f: words[f] for f in fields if f != "head"}
    return FastWords(n_sents, n_words, int(ids.size) - covered + n_ranges, wsent,
                     ids.astype(np.int32), words["form"], labels, head)


def _positions(sent: np.ndarray) -> np.ndarray:
    """1, 2, 3, ... within each run of equal sentence numbers."""
    first = np.zeros(sent.size, np.int64)
    change = np.flatnonzero(sent[1:] != sent[:-1]) + 1
    first[change] = change
    return (np.arange(sent.size) - np.maximum.accumulate(first) + 1).astype(np.int32)


def _ranges(ids: pl.Series) -> tuple[int | None, int]:
    """(multiword ranges, words they cover) among IDs that are not integers; (None, 0) when
    one is neither a range ``a-b`` nor an empty node ``a.b``."""
    if ids.is_empty():
        return 0, 0
    parts = ids.str.extract_groups(r"^([0-9]+)([-.])([0-9]+)$")
    if parts.struct.field("1").null_count():
        return None, 0
    is_range = parts.struct.field("2") == "-"
    lo = parts.struct.field("1").cast(pl.Int64).filter(is_range)
    hi = parts.struct.field("3").cast(pl.Int64).filter(is_range)
    if (hi < lo).any():
        return None, 0
    return int(is_range.sum()), int((hi - lo + 1).sum())


def _heads(head: pl.Series, n_words: np.ndarray) -> np.ndarray | None:
    """HEAD as integers (-1 for '_'), or None when one is neither '_' nor 0..n."""
    number = head.cast(pl.Int32, strict=False)
    missing = number.is_null()
    if missing.any() and (head.filter(missing) != "_").any():
        return None
    out = number.fill_null(-1).to_numpy()
    if ((out < 0) & ~missing.to_numpy()).any() or (out > n_words).any():
        return None  # a negative HEAD, or one past the sentence's last word
    return out.astype(np.int32)
