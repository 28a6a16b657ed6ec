"""The fast reader of a system file whose words are the key's: only the columns a task
evaluates, checked in whole-column operations, labels coded as they come.

A system file is read in full (:mod:`sysdiff.schemas.formats.conllu`: every column, every
check, the exact line of the first problem) only when this reader cannot vouch for it. Here,
polars parses the evaluated columns of the file's bytes (a comment line is a row of its own,
its text in the first column), and the file must pass every check below; else
:func:`fast_words` returns None and the full reader runs, which reports the problem at its
line (or finds a file tokenised otherwise, aligned on the characters). Nothing is decided
here that the full reader would decide otherwise, for the columns read: a column the task
does not evaluate is not read, so it is not checked either.

Checks (each over the whole file at once): UTF-8 text without NUL or carriage return, no
byte order mark; no blank line first, no two blank lines in a row and no sentence of
comments only; every token line of exactly the format's number of columns (the tab count
equals that number minus one per token line, and the last column is never empty); no empty
column among those read; word IDs 1, 2, 3, ... in each sentence (multiword ranges ``1-2``
and empty nodes ``1.1`` are not words); HEAD an integer within the sentence or ``_``.

Nothing is copied per word but numbers: labels are coded on the parsed columns (a code is a
label's position among the column's sorted distinct labels) and forms hashed, before the
rows of blank lines are dropped.

What a lean system does not store, the key's record stands for, so the reader also takes the
file's *frame*: per sentence, a digest of its line count, of its comment lines and of its
multiword-range and empty-node lines (each with its position in the sentence), and per word
a hash of DEPS and MISC. A system whose frame digests are the key's has the key's lines,
comments (so sentence IDs, text, documents) and non-word lines; its DEPS and MISC are stored
only where their hashes differ from the key's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.formats.conllu import CONLL_FIELDS, TSV_FIELDS
from sysdiff.schemas.formats.ranges import SCAN_CHUNK

#: The label of a missing value.
BLANK = "_"


@dataclass(frozen=True)
class FastWords:
    """The words of a file read by :func:`fast_words`, in file order."""

    n_sents: int
    n_words: np.ndarray  # words per sentence
    n_tokens: int  # words not inside a multiword range, plus the ranges
    sent: np.ndarray  # each word's sentence (0-based, within the bytes read)
    id: np.ndarray  # each word's ID
    form_hash: np.ndarray  # a 64-bit hash of each word's form (:func:`form_hashes`)
    labels: dict[str, tuple[np.ndarray, list[str]]]  # field -> (codes, sorted labels)
    head: np.ndarray | None  # each word's HEAD (-1 for '_'); None when not read
    digest: np.ndarray  # per sentence, a 64-bit digest of its frame (module docstring)
    extras: dict[str, Coded]  # DEPS and MISC (CoNLL-U), each word's value as codes


def form_hashes(forms: pl.Series) -> np.ndarray:
    """A 64-bit hash of each form (equal forms, equal hashes; stable for one polars)."""
    return forms.hash(seed=0).to_numpy()


def fast_words(data: bytes, fmt: str, fields: tuple[str, ...]) -> FastWords | None:
    """The words of ``data`` (a whole file, or whole sentences of one) with the label
    ``fields`` (and ``head``) read, or None when the full reader must decide."""
    if not data or _irregular(data):
        return None
    tabs = tab_count(data)
    if tabs is None:
        return None
    names = TSV_FIELDS if fmt == "tsv" else CONLL_FIELDS
    wanted = _columns(fmt, fields)
    rows = _parse(data, names, wanted)
    if rows is None:
        return None
    columns = {c: Coded(rows[f"_codes_{c}"].to_numpy(), rows[c].dtype.categories.to_series())
               for c in wanted}
    blank = rows["_blank"].to_numpy()
    if blank[0] or (blank[1:] & blank[:-1]).any():
        return None  # a blank line first, or two in a row
    first = columns[wanted[0]]
    comment = first.values.str.starts_with("#").to_numpy()[first.codes] & ~blank
    token = ~(blank | comment)
    n_token_rows = int(token.sum())
    if (n_token_rows == 0 or tabs != (len(names) - 1) * n_token_rows
            or not np.array_equal(rows["_full"].to_numpy(), token)
            or not np.array_equal(rows["_some"].to_numpy(), token)):
        return None  # a line of another column count, an empty column, a comment's tab
    frame = _sentences(blank, comment, first)
    if frame is None:
        return None
    line_sent, digest = frame
    return _words(columns, token, line_sent[token], fmt, fields, digest)


def _parse(data: bytes, names: tuple[str, ...], wanted: list[str]) -> pl.DataFrame | None:
    """The ``wanted`` columns of every line (comment lines too: their text in the first
    column, no other), each coded as parsed (its own dictionary, fresh categories), with
    per line: ``_blank`` (a blank line), ``_full`` and ``_some`` (every, some column after
    the first not empty); None for what polars refuses (invalid UTF-8, more columns than
    the format's). The format's columns are the schema, whatever the first line holds
    (``missing_columns``: a first comment line has one)."""
    types = {f: pl.Categorical(pl.Categories.random()) for f in names}
    rest = [pl.col(c).is_not_null() for c in wanted[1:]]
    try:
        return (pl.scan_csv(io.BytesIO(data), separator="\t", has_header=False,
                            quote_char=None, schema=types, missing_columns="insert")
                .select(pl.col(wanted[0]).is_null().alias("_blank"),
                        pl.all_horizontal(rest).alias("_full"),
                        pl.any_horizontal(rest).alias("_some"),
                        *wanted, *(pl.col(c).to_physical().fill_null(0).alias(f"_codes_{c}")
                                   for c in wanted))
                .collect())
    except pl.exceptions.PolarsError:
        return None


def _sentences(blank: np.ndarray, comment: np.ndarray, first: Coded
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """Each line's sentence (lines between blank lines) and per sentence a digest of its
    line count and of each comment line with its position in it; None when a sentence has
    comment lines only."""
    opens = ~blank & np.concatenate(([True], blank[:-1]))  # each sentence's first line
    line_sent = np.cumsum(opens, dtype=np.int64) - 1
    n = int(line_sent[-1]) + 1
    lines = np.bincount(line_sent[~blank], minlength=n)
    tokens = np.bincount(line_sent[~(blank | comment)], minlength=n)
    if (tokens == 0).any():
        return None
    rows = np.flatnonzero(comment)
    sent = line_sent[rows]
    at = (rows - np.flatnonzero(opens)[sent]).astype(np.uint64)
    h = value_hashes(Coded(first.codes[rows], first.values))
    digest = _sum_by(sent, mix(h ^ mix(at)), n) + mix(lines.astype(np.uint64)
                                                        + np.uint64(1 << 50))
    return line_sent.astype(np.int32), digest


@dataclass(frozen=True)
class Coded:
    """A parsed column as codes (0 on blank lines) and the values they stand for."""

    codes: np.ndarray
    values: pl.Series

    def numbers(self) -> np.ndarray:
        """Each row's value as an integer (-1: not one)."""
        return self.values.cast(pl.Int32, strict=False).fill_null(-1).to_numpy()[self.codes]

    def filter(self, keep: np.ndarray) -> pl.Series:
        """The values of the ``keep`` rows (few: no bulk copy)."""
        return self.values.gather(self.codes[keep])


def _irregular(data: bytes) -> bool:
    """What the full reader handles better, seen at the ends of ``data``: a byte order mark,
    a blank first line, a last line without its newline (a NUL or a carriage return
    anywhere: :func:`tab_count`)."""
    return data.startswith((b"\xef\xbb\xbf", b"\n")) or not data.endswith(b"\n")


def tab_count(data: bytes) -> int | None:
    """The tabs in ``data``, or None when it holds a NUL or a carriage return: numpy passes
    over chunks, which release the GIL (``bytes.count`` holds it for the whole pass, and
    the other ingest threads wait)."""
    a = np.frombuffer(data, np.uint8)
    tabs = 0
    for start in range(0, a.size, SCAN_CHUNK):
        chunk = a[start:start + SCAN_CHUNK]
        if (chunk == 13).any() or (chunk == 0).any():
            return None
        tabs += int(np.count_nonzero(chunk == 9))
    return tabs


def _columns(fmt: str, fields: tuple[str, ...]) -> list[str]:
    """The columns to parse: the ID (CoNLL), the form, the fields, and the last column (an
    empty last column is a short line)."""
    if fmt == "tsv":
        return ["form", "tag"]
    return list(dict.fromkeys(["id", "form", *fields, "deps", "misc"]))


def _words(columns: dict[str, Coded], token: np.ndarray, sent: np.ndarray, fmt: str,
           fields: tuple[str, ...], digest: np.ndarray) -> FastWords | None:
    """The words of the rows (``token``: not a blank line), or None when an ID or HEAD is
    not what it must be."""
    n_sents = int(sent[-1]) + 1 if sent.size else 0
    extras: dict[str, Coded] = {}
    if fmt == "tsv":
        word, ids, n_ranges, covered = token, _positions(sent), 0, 0
        labels = {"upos": columns["tag"]}
    else:
        number = columns["id"].numbers()
        word = token & (number >= 0)
        n_ranges, covered = _ranges(columns["id"].filter(token & (number < 0)))
        if n_ranges is None:
            return None
        digest = digest + _other_lines(columns, token, word, sent, n_sents)
        extras = {c: Coded(columns[c].codes[word], columns[c].values) for c in EXTRAS}
        ids = number[word].astype(np.int32)
        sent = sent[word[token]]
        if not np.array_equal(ids, _positions(sent)):
            return None  # word IDs do not run 1, 2, 3, ... in each sentence
        labels = {f: columns[f] for f in fields if f != "head"}
    n_words = np.bincount(sent, minlength=n_sents)
    if (n_words == 0).any():
        return None
    head = None
    if "head" in fields:
        head = _heads(columns["head"], word, n_words[sent])
        if head is None:
            return None
    coded = {f: encode(column, word) for f, column in labels.items()}
    form = columns["form"]
    hashes = form_hashes(form.values)[form.codes[word]]
    return FastWords(n_sents, n_words, int(ids.size) - covered + n_ranges, sent, ids, hashes,
                     coded, head, digest, extras)


#: The columns a lean system stores only where they differ from the key's.
EXTRAS = ("deps", "misc")
#: The columns of a multiword range or empty node that enter a sentence's digest.
FRAME_COLUMNS = ("id", "form", *EXTRAS)


def value_hashes(column: Coded) -> np.ndarray:
    """A 64-bit hash of each row's value (as :func:`form_hashes`)."""
    return form_hashes(column.values)[column.codes]


def mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a well-spread 64-bit value of each (wrapping arithmetic)."""
    x = np.asarray(x, np.uint64)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _sum_by(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Per slot, the (wrapping) sum of the values whose index is that slot."""
    out = np.zeros(size, np.uint64)
    np.add.at(out, index, values)
    return out


def _other_lines(columns: dict[str, Coded], token: np.ndarray, word: np.ndarray,
                 sent: np.ndarray, n_sents: int) -> np.ndarray:
    """Per sentence, a digest of its multiword-range and empty-node lines (ID, FORM, DEPS,
    MISC: their other columns are ``_`` in CoNLL-U) with their positions among its token
    lines."""
    other = ~word[token]
    if not other.any():
        return np.zeros(n_sents, np.uint64)
    rows = np.flatnonzero(token)[other]
    h = np.zeros(rows.size, np.uint64)
    for i, name in enumerate(FRAME_COLUMNS):
        column = columns[name]
        h = mix(h ^ value_hashes(Coded(column.codes[rows], column.values)) + np.uint64(i))
    at = positions_at(sent, np.flatnonzero(other)).astype(np.uint64)
    return _sum_by(sent[other], mix(h ^ mix(at + np.uint64(1 << 40))), n_sents)


def encode(column: Coded, keep: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The codes of the ``keep`` rows of a label column as a file's own: positions among the
    sorted distinct labels of those rows, and those labels."""
    kept = column.codes[keep]
    present = np.flatnonzero(np.bincount(kept, minlength=column.values.len()))
    labels = column.values.gather(present)
    order = labels.arg_sort().to_numpy()
    lookup = np.zeros(column.values.len(), np.uint32)
    lookup[present[order]] = np.arange(order.size, dtype=np.uint32)
    return lookup[kept], labels.gather(order).to_list()


def positions_at(sent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The 0-based position of each of ``rows`` within its run of equal sentence numbers
    (``sent`` non-decreasing)."""
    return rows - np.searchsorted(sent, sent[rows], "left")


def _positions(sent: np.ndarray) -> np.ndarray:
    """1, 2, 3, ... within each run of equal sentence numbers."""
    if not sent.size:
        return np.zeros(0, np.int32)
    change = np.flatnonzero(sent[1:] != sent[:-1]) + 1
    first = np.concatenate(([0], change))
    run = np.zeros(sent.size, np.int32)
    run[change] = 1
    return (np.arange(1, sent.size + 1, dtype=np.int32)
            - first.astype(np.int32)[np.cumsum(run, dtype=np.int32)])


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


def _heads(head: Coded, word: np.ndarray, n_words: np.ndarray) -> np.ndarray | None:
    """The words' HEAD as integers (-1 for '_'), or None when one is neither '_' nor 0..n."""
    number = head.numbers()[word]
    missing = number < 0
    if missing.any() and (head.filter(np.flatnonzero(word)[missing]) != BLANK).any():
        return None  # neither an integer nor '_' (or a negative number)
    if (number > n_words).any():
        return None  # past the sentence's last word
    return number.astype(np.int32)
