"""Readers for token-level formats (CoNLL-U, CoNLL-X, word<TAB>tag) with strict validation.

Reading is vectorised: polars' CSV reader loads every line as string fields in one pass; lines
are then classified, split and checked with whole-column polars and numpy operations (slow
per-line diagnostics run only once a fast check has failed). Every problem raises
:class:`InputError` naming the file, the 1-based line and what was expected.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import (
    StableFile,
    after_blank_line,
    object_url,
    opened,
    read_stable,
    without_bom,
)
from sysdiff.schemas.tables import polars_schema
from sysdiff.schemas.vocabulary import PTB_PUNCT  # noqa: F401 (declared with the views)

FORMATS = ("conllu", "conllx", "tsv")
CONLL_FIELDS = ["id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc"]
TSV_FIELDS = ["form", "tag"]
KIND_WORD, KIND_RANGE, KIND_EMPTY = 0, 1, 2
_SEP = "\x1f"  # a separator that never occurs in text: one column of whole lines
CHUNK_BYTES = 32 << 20  # text read at once by iter_conll (about 0.5 GiB of parsed columns)
HEAD_BYTES = 1 << 20  # checked for binary content before the format is guessed

#: The columns (and polars types) the reader gives: the ``units`` and ``sents`` tables'
#: without their corpus and system (and ``word``, numbered as the file's chunks are stored).
TOKEN_COLUMNS = {c: t for c, t in polars_schema("units").items()
                 if c not in ("corpus", "system", "word")}
SENT_COLUMNS = {c: t for c, t in polars_schema("sents").items() if c not in ("corpus", "system")}


class Hasher(Protocol):
    """What :func:`iter_conll` feeds the bytes it reads to (``hashlib`` objects)."""

    def update(self, data: bytes, /) -> None: ...


@dataclass(frozen=True)
class ConllDoc:
    """A parsed token file: all token lines (words, ranges, empty nodes) and its sentences."""

    path: str
    fmt: str
    tokens: pl.DataFrame
    sents: pl.DataFrame

    @property
    def words(self) -> pl.DataFrame:
        """Syntactic words only: the evaluation units."""
        return self.tokens.filter(pl.col("kind") == KIND_WORD)


def _check_path(p: Path) -> None:
    if not p.exists():
        raise InputError("no such file", p)
    if not p.is_file():
        raise InputError("not a regular file", p)


def _check_not_empty(p: Path, data: bytes) -> None:
    """Refuse empty (or all-whitespace) content."""
    if not len(data) or re.search(rb"\S", data) is None:
        raise InputError("file is empty; expected sentences of tab-separated token lines", p)


def _check_text(p: Path | str, data: bytes) -> None:
    """Refuse binary content (a NUL byte) in ``data`` (a file, or a chunk of one)."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data[:nul].count(b"\n") + 1
        raise InputError("binary data (NUL byte); expected a UTF-8 text file", p, line)


def read_bytes(path: str | Path) -> bytes:
    """Read a file's bytes (one stable read), refusing missing, empty and binary files."""
    p = path if object_url(path) else Path(path)
    if not object_url(p):
        _check_path(p)
    data = read_stable(p).data
    _check_not_empty(p, data)
    _check_text(p, data)
    return data


def file_head(path: str | Path, f: StableFile) -> bytes:
    """The head of a file (without a byte order mark) that format detection reads, checked
    like :func:`read_bytes` (the rest is checked chunk by chunk, as it is read)."""
    head = without_bom(f.read_at(0, HEAD_BYTES))
    if f.size <= HEAD_BYTES:
        _check_not_empty(path, head)
    _check_text(path, head)
    return head


def check_utf8(path: str | Path, data: bytes) -> None:
    """Raise an InputError at the first byte that is not UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(
            f"not valid UTF-8 (byte 0x{data[e.start]:02x} at column {col}); expected UTF-8 text",
            path, line,
        ) from None


def read_lines(data: bytes) -> pl.DataFrame:
    """One row per physical line: ``line`` (1-based) and ``text`` (null for blank lines)."""
    df = pl.read_csv(
        io.BytesIO(data), separator=_SEP, has_header=False, quote_char=None,
        schema={"text": pl.String},
    )
    return df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int32))


def read_fields(source: bytes | Path, fields: list[str]) -> pl.DataFrame:
    """Fast path: every line as ``len(fields)`` string columns; blank lines are all-null rows.

    ``source`` is the file's bytes or its path (read without a copy: the faster).
    """
    df = pl.read_csv(
        io.BytesIO(source) if isinstance(source, bytes) else str(source.resolve()), glob=False,
        separator="\t", has_header=False, quote_char=None,
        schema=dict.fromkeys(fields, pl.String), missing_columns="insert",
    )
    return df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int32))


def _split_lines(data: bytes, limit: int) -> Iterator[bytes]:
    """``data.split(b"\\n", limit)`` without copying the remainder until it is reached."""
    start = 0
    for _ in range(limit):
        end = data.find(b"\n", start)
        if end < 0:
            break
        yield data[start:end]
        start = end + 1
    yield data[start:]


def first_token_line(data: bytes) -> tuple[int, str]:
    """The first line that is neither blank nor a comment, with its number."""
    for n, raw in enumerate(_split_lines(data, 20000), start=1):
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        if text.strip() and not text.startswith("#"):
            return n, text
    return 0, ""


def detect_token_format(path: str | Path, data: bytes) -> str:
    """Guess the format from the first token line's column count and the file's comments."""
    line, text = first_token_line(data)
    if not line:
        raise InputError("no token lines (only comments); expected tab-separated tokens", path)
    n_cols = text.count("\t") + 1
    if n_cols == 10:
        plain = PurePosixPath(str(path)).suffix.lower() in (".conll", ".conllx")
        return "conllx" if plain and not re.match(rb"\s*#", data) else "conllu"
    if n_cols == 2:
        return "tsv"
    raise column_error(path, line, text, None)


def column_error(path: str | Path, line: int, text: str, expected: int | None) -> InputError:
    """The message for a token line with the wrong number of columns."""
    n_cols = text.count("\t") + 1
    if n_cols == 1 and len(text.split()) > 1:
        return InputError(
            "columns are separated by spaces, not tabs; expected tab-separated columns",
            path, line,
        )
    want = f"{expected}" if expected else "10 (CoNLL-U/CoNLL-X) or 2 (word<TAB>tag)"
    return InputError(f"line has {n_cols} columns; expected {want}", path, line)


def diagnose_lines(path: str | Path, data: bytes, fmt: str, n_fields: int) -> None:
    """Slow path, run only when the fast read failed: find the first malformed line."""
    check_utf8(path, data)
    lines = read_lines(data)
    text = pl.col("text")
    token = text.is_not_null() & (text.str.strip_chars() != "")
    if fmt == "conllu":
        token = token & ~text.str.starts_with("#")
    toks = lines.filter(token)
    bad = toks.filter(text.str.count_matches("\t", literal=True) != n_fields - 1)
    if not bad.is_empty():
        line, row = bad["line"][0], bad["text"][0]
        err = column_error(path, line, row, n_fields)
        if line == toks["line"].max() and not data.endswith(b"\n"):
            err = InputError(err.message + " (the file ends in the middle of this line: "
                             "truncated?)", path, line)
        raise err
    empty = toks.filter(text.str.contains("(^|\t)(\t|$)"))
    if not empty.is_empty():
        raise InputError("empty column; expected a value or '_' in every column", path,
                         empty["line"][0])


def split_rows(df: pl.DataFrame, fmt: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Token rows and comment rows (blank lines dropped), each with ``sent`` (0-based sentence).

    A line is blank when its first two fields are null; a sentence starts at every non-blank line
    that follows a blank one (or starts the file). CoNLL token rows also get ``_id``, the ID
    as an integer (null if it is not one). Comments come as ``sent``, ``line``, ``text`` and
    the ``key``/``value`` of ``# key = value``.
    """
    first = df[df.columns[1]]
    # blank: nothing at all; a line with an empty first field only is a malformed token row
    blank = (first.is_null() & df[df.columns[2]].is_null()).to_numpy()
    comment = np.zeros(len(blank), dtype=bool)
    rows = df
    if fmt != "tsv":  # the first field is the ID: cast it once, here
        number = first.cast(pl.Int32, strict=False)
        rows = rows.with_columns(number.alias("_id"))
        if fmt == "conllu":  # a comment's ID is not an integer: look only there
            maybe = np.flatnonzero(number.is_null().to_numpy() & ~blank)
            comment[maybe] = first.gather(maybe).str.starts_with("#").to_numpy()
    start = ~blank
    start[1:] &= blank[:-1]
    rows = rows.with_columns(pl.Series("sent", np.cumsum(start, dtype=np.int32) - 1))
    toks = rows.filter(~blank & ~comment)  # eager: keeps the reader's chunks (no rechunk later)
    return toks, comment_lines(rows, comment, toks)


def comment_lines(rows: pl.DataFrame, comment: np.ndarray, toks: pl.DataFrame) -> pl.DataFrame:
    """The comment rows of ``rows`` as ``sent``, ``line``, ``text``, ``key`` and ``value``.

    Tabs split a comment into fields, which are joined back. Only the fields that may hold a
    value on a comment line are gathered: one is null on all non-token lines when its null
    count over them (all rows minus token rows) equals their number.
    """
    fields = [c for c in rows.columns if c not in ("line", "sent", "_id")]
    n_other = rows.height - toks.height
    used = fields[:1] + [f for f in fields[1:]
                         if rows[f].null_count() - toks[f].null_count() != n_other]
    text = pl.concat_str(used, separator="\t", ignore_nulls=True) if used[1:] else pl.col(used[0])
    text = text.alias("text")
    com = rows.select("sent", "line", *used).filter(comment).select("sent", "line", text)
    return com.with_columns(_comment_fields(pl.col("text")))


def _comment_fields(text: pl.Expr) -> list[pl.Expr]:
    """``key`` and ``value`` of a comment line ``# key = value`` (null when absent)."""
    has_value = text.str.contains(r"^#\s*[A-Za-z_.]+(?:\s+id)?\s*=")  # also '# newdoc id = x'
    after_eq = text.str.splitn("=", 2).struct.field("field_1")  # '#', key, spaces: no '='
    return [text.str.extract(r"^#\s*([A-Za-z_.]+)", 1).alias("key"),
            pl.when(has_value).then(after_eq.str.strip_chars()).alias("value")]


def _first_bad(path: str | Path, df: pl.DataFrame, mask: pl.Expr | pl.Series | np.ndarray,
               message: Callable[[dict], str]) -> None:
    """Raise an InputError for the first row where ``mask`` holds (message from that row)."""
    if isinstance(mask, pl.Expr):
        mask = df.select(mask).to_series()
    if isinstance(mask, pl.Series):
        mask = mask.fill_null(False).to_numpy()
    hits = np.flatnonzero(mask)
    if hits.size:
        row = df.row(int(hits[0]), named=True)
        raise InputError(message(row), path, row["line"])


def with_numbers(toks: pl.DataFrame) -> pl.DataFrame:
    """``_id`` and ``_head``: ID and HEAD as integers, null where they are not.

    ``_id`` may be there already (see :func:`split_rows`).
    """
    number = toks["_id"] if "_id" in toks.columns else toks["token_id"].cast(pl.Int32,
                                                                              strict=False)
    return toks.with_columns(
        number.alias("_id"), toks["head"].cast(pl.Int64, strict=False).alias("_head"),
    )


def _id_kinds(tid: pl.Series, num: pl.Series) -> pl.Series:
    """Word (integer), multiword range (1-2), empty node (1.1) or null (neither) per ID.

    The patterns run only on the IDs that are not integers (few: ranges and empty nodes).
    """
    kind = pl.Series("kind", np.full(len(tid), KIND_WORD, dtype=np.int8))
    if not num.null_count():
        return kind
    other = num.is_null().arg_true()
    ids = tid.gather(other)
    other_kind = pl.select(
        pl.when(ids.str.contains(r"^[0-9]+-[0-9]+$")).then(KIND_RANGE)
        .when(ids.str.contains(r"^[0-9]+\.[0-9]+$")).then(KIND_EMPTY)
        .otherwise(None).cast(pl.Int8)
    ).to_series()
    return kind.scatter(other, other_kind)


def _first_ids(tid: pl.Series, num: pl.Series) -> pl.Series:
    """The integer ID, or for ranges and empty nodes the number they start with."""
    if not num.null_count():
        return num
    other = num.is_null().arg_true()
    start = tid.gather(other).str.extract(r"^([0-9]+)", 1).cast(pl.Int32)
    return num.scatter(other, start)


def parse_ids(path: str | Path, toks: pl.DataFrame) -> pl.DataFrame:
    """Classify IDs as word / multiword range / empty node; check words run 1..n per sentence."""
    tid, num = toks["token_id"], toks["_id"]
    kind = _id_kinds(tid, num)
    df = toks.with_columns(kind, num.alias("id"))
    if kind.null_count() or (num < 0).any():
        _first_bad(path, df, pl.col("kind").is_null() | (pl.col("id") < 0),
                   lambda r: f"ID '{r['token_id']}' is not an integer, a range (1-2) or an "
                   "empty node (1.1)")
    df = df.with_columns(_first_ids(tid, num).alias("id"))
    _check_word_sequence(path, df)
    return df


def _check_word_sequence(path: str | Path, df: pl.DataFrame) -> None:
    """Word IDs must run 1, 2, 3, ... in each sentence."""
    is_word = df["kind"].to_numpy() == KIND_WORD
    if not is_word.any():
        return
    rows = None if is_word.all() else np.flatnonzero(is_word)
    ids, sent = df["id"].to_numpy(), df["sent"].to_numpy()
    if rows is not None:
        ids, sent = ids[rows], sent[rows]
    expected = ids[:-1] + 1
    expected[sent[1:] != sent[:-1]] = 1
    expected = np.concatenate(([1], expected))
    bad = np.flatnonzero(ids != expected)
    if bad.size:
        row = df.row(int(bad[0] if rows is None else rows[bad[0]]), named=True)
        row["_expected"] = int(expected[bad[0]])
        raise InputError(_id_message(row), path, row["line"])


def _id_message(r: dict) -> str:
    kind = "duplicate word ID" if r["id"] < r["_expected"] else "skipped word ID"
    return (f"{kind}: found {r['id']}, expected {r['_expected']} (IDs run 1, 2, 3, ... in each "
            "sentence)")


def parse_heads(path: str | Path, df: pl.DataFrame, sents: pl.DataFrame) -> pl.DataFrame:
    """HEAD of a word: ``_`` (none) or an integer 0..n; anything else is an error."""
    is_word = df["kind"] == KIND_WORD
    head = df["_head"]
    if not is_word.all():
        head = pl.select(pl.when(is_word).then(head)).to_series()
    missing = is_word & head.is_null()
    if missing.any():
        _first_bad(path, df, missing & (df["head"] != "_"),
                   lambda r: f"HEAD '{r['head']}' is not an integer; expected 0 (root) or a "
                   "word ID")
    h = (head.fill_null(0) if head.null_count() else head).to_numpy()
    n_words = sents["n_words"].to_numpy()[df["sent"].to_numpy()]  # sents[i] is sentence i
    if ((h < 0) | (h > n_words)).any():
        _first_bad(path, df, h < 0,
                   lambda r: f"HEAD {r['head']} is negative; expected 0 (root) or a word ID")
        high = int(np.flatnonzero(h > n_words)[0])
        row = df.row(high, named=True)
        raise InputError(f"HEAD {row['head']} is out of range; the sentence has "
                         f"{n_words[high]} words", path, row["line"])
    return df.with_columns(head.cast(pl.Int32).alias("head"))


def _run_starts(sent: np.ndarray) -> np.ndarray:
    """Rows where a run of equal values starts (``sent`` is sorted)."""
    return np.flatnonzero(np.concatenate(([sent.size > 0], sent[1:] != sent[:-1])))


def _first_value(n_sent: int, comments: pl.DataFrame, key: str) -> pl.Series:
    """Per sentence, the value of its first comment with this key (null if none)."""
    rows = np.flatnonzero((comments["key"] == key).fill_null(False).to_numpy())
    sent = comments["sent"].to_numpy()[rows]
    rows, sent = rows[_run_starts(sent)], sent[_run_starts(sent)]
    out = pl.repeat(None, n_sent, dtype=pl.String, eager=True)
    return out.scatter(sent, comments["value"].gather(rows)) if rows.size else out


def sentence_table(comments: pl.DataFrame, toks: pl.DataFrame, sent_base: int = 0,
                   doc_base: int | None = None) -> pl.DataFrame:
    """Per sentence: sent_id, text and document from comments; word count; first line.

    Sentences are numbered from 0 here; ``sent_base`` (sentences before this chunk) numbers
    default sentence IDs, and ``doc_base`` (the previous chunk's last document) continues the
    document numbers.
    """
    sent, csent = toks["sent"].to_numpy(), comments["sent"].to_numpy()
    n_sent = int(max(sent.max(), csent.max(initial=-1))) + 1
    line = np.full(n_sent, np.iinfo(np.int32).max, dtype=np.int32)
    first = _run_starts(sent)
    line[sent[first]] = toks["line"].to_numpy()[first]
    first = _run_starts(csent)
    line[csent[first]] = np.minimum(line[csent[first]], comments["line"].to_numpy()[first])
    is_word = toks["kind"].to_numpy() == KIND_WORD
    n_words = np.bincount(sent if is_word.all() else sent[is_word], minlength=n_sent)
    newdoc = np.zeros(n_sent, dtype=bool)
    newdoc[csent[(comments["key"] == "newdoc").fill_null(False).to_numpy()]] = True
    df = pl.DataFrame({
        "sent": np.arange(n_sent),
        "sent_id": _first_value(n_sent, comments, "sent_id"),
        "doc": np.cumsum(newdoc) - (int(newdoc[0]) if doc_base is None else -doc_base),
        "doc_id": _first_value(n_sent, comments, "newdoc"),
        "text": _first_value(n_sent, comments, "text"),
        "n_words": n_words, "line": line,
    }, schema=SENT_COLUMNS)
    return df.with_columns(
        pl.col("sent_id").fill_null((pl.col("sent") + 1 + sent_base).cast(pl.String)),
        pl.col("doc_id").forward_fill(),
    )


NO_WORDS = ("sentence has no words (only comments or multiword ranges); expected token lines "
            "after the comments")


def _check_nonempty_sentences(path: str | Path, sents: pl.DataFrame) -> None:
    _first_bad(path, sents, pl.col("n_words") == 0, lambda r: NO_WORDS)


def parse_table(path: str | Path, data: bytes, fmt: str,
                fields: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Token rows and comment rows (see :func:`split_rows`), and the number of lines read;
    bad lines raise an InputError."""
    try:
        df = read_fields(data, fields)
    except pl.exceptions.PolarsError:
        diagnose_lines(path, data, fmt, len(fields))
        raise
    toks, comments = split_rows(df, fmt)
    if any(toks[f].null_count() for f in fields):
        diagnose_lines(path, data, fmt, len(fields))
    return toks, comments, df.height


@dataclass
class _Carry:
    """Numbering carried from one chunk to the next: lines, sentences, documents."""

    line: int = 0
    sent: int = 0
    doc: int | None = None
    doc_id: str | None = None


def _parse_chunk(path: str | Path, data: bytes, fmt: str, carry: _Carry, last: bool = False
                 ) -> tuple[ConllDoc | None, int]:
    """One chunk of whole sentences (None when it is blank) and its number of lines: lines
    and sentences numbered from 1 and 0, documents and default sentence IDs continuing from
    ``carry``; ``last``: the chunk ends the file."""
    first = carry.doc is None
    fields = TSV_FIELDS if fmt == "tsv" else CONLL_FIELDS
    if re.search(rb"\S", data) is None:
        return None, data.count(b"\n")
    toks, comments, n_lines = parse_table(path, data, fmt, fields)
    if last and fmt == "tsv":
        check_last_line(path, data, toks["line"], n_lines)
    if toks.is_empty():
        if first:
            raise InputError("no token lines (only comments); expected tab-separated tokens",
                             path)
        raise InputError(NO_WORDS, path, int(comments["line"][0]))
    if fmt == "tsv":
        toks = _tsv_to_conll(toks)
    toks = with_numbers(toks.rename({"id": "token_id"}))
    toks = parse_ids(path, toks)
    sents = sentence_table(comments, toks, carry.sent, carry.doc)
    _check_nonempty_sentences(path, sents)
    toks = parse_heads(path, toks, sents)
    toks = toks.select(list(TOKEN_COLUMNS)).cast(TOKEN_COLUMNS)
    return ConllDoc(str(path), fmt, toks, sents), n_lines


def _renumber(doc: ConllDoc, carry: _Carry) -> ConllDoc:
    """Shift a chunk's sentence and line numbers to the file's; update ``carry``."""
    sents, toks = doc.sents, doc.tokens
    if carry.line or carry.sent:
        shift = [pl.col("line") + carry.line, pl.col("sent") + carry.sent]
        toks = toks.with_columns(shift)
        sents = sents.with_columns(*shift, pl.col("doc_id").fill_null(
            pl.lit(carry.doc_id, pl.String)))
    carry.sent += sents.height
    carry.doc = int(sents["doc"][-1])
    carry.doc_id = sents["doc_id"][-1]
    return ConllDoc(doc.path, doc.fmt, toks, sents)


def check_last_line(path: str | Path, data: bytes, token_lines: pl.Series, n_lines: int
                    ) -> None:
    """A file whose last line is a token line without a newline at its end was cut off
    there (the tag may be cut short and still look valid): an InputError at that line."""
    if data.endswith(b"\n") or not len(token_lines) or token_lines[-1] != n_lines:
        return
    raise InputError("truncated last line: the file ends in the middle of this line (no "
                     "newline at its end); expected every line to end with a newline", path,
                     n_lines)


def iter_conll(path: str | Path | StableFile, fmt: str | None = None,
               chunk_bytes: int | None = None, hasher: Hasher | None = None
               ) -> Iterator[ConllDoc]:
    """Read and validate a CoNLL-U, CoNLL-X or word<TAB>tag file in chunks of whole sentences.

    Each chunk is about ``chunk_bytes`` of text (default :data:`CHUNK_BYTES`), so memory
    depends on the chunk size, not the file size. Sentence, document and line numbers are the
    file's; errors name the file's line. The file is read once, through one descriptor
    (``path`` may be a :class:`StableFile` already open: its ``sha256`` and ``stamp`` then
    describe what was read), and checked to be unchanged at the end; ``hasher`` (e.g.
    ``hashlib.sha256()``) is fed every byte of it too.
    """
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}",
                         getattr(path, "path", path))
    with opened(path) as f:
        path = f.path
        head = file_head(path, f)
        fmt = fmt or detect_token_format(path, head)
        carry, first = _Carry(), True
        for text in f.chunks(chunk_bytes or CHUNK_BYTES, after_blank_line):
            if hasher is not None:
                hasher.update(text)
            if first:
                text, first = without_bom(text), False
            try:
                _check_text(path, text)
                doc, n_lines = _parse_chunk(path, text, fmt, carry, last=f.pos >= f.size)
            except InputError as e:
                raise InputError(e.message, e.path, e.line and e.line + carry.line) from None
            if doc is not None:
                yield _renumber(doc, carry)
            carry.line += n_lines


def read_conll(path: str | Path, fmt: str | None = None, chunk_bytes: int | None = None
               ) -> ConllDoc:
    """Read and validate a whole CoNLL-U, CoNLL-X or word<TAB>tag file."""
    chunks = list(iter_conll(path, fmt, chunk_bytes))
    if len(chunks) == 1:
        return chunks[0]
    return ConllDoc(chunks[0].path, chunks[0].fmt,
                    pl.concat([c.tokens for c in chunks], rechunk=False),
                    pl.concat([c.sents for c in chunks], rechunk=False))


def positions_in_sentences(sent: pl.Series) -> pl.Series:
    """1, 2, 3, ... within each run of equal sentence numbers (sentences are contiguous):
    a row's index minus its sentence's first row's, in numpy (a window expression over
    the sentence costs several times more)."""
    sent_np = sent.to_numpy()
    first = np.zeros(sent_np.size, np.int64)
    change = np.flatnonzero(sent_np[1:] != sent_np[:-1]) + 1
    first[change] = change
    return pl.Series("id", np.arange(sent_np.size) - np.maximum.accumulate(first) + 1,
                     dtype=pl.Int32)


def _tsv_to_conll(toks: pl.DataFrame) -> pl.DataFrame:
    """word<TAB>tag: the tag fills UPOS (XPOS stays ``_``, so the one tag is scored once);
    IDs are positions in the sentence (``_id`` as a number, counted from each sentence's
    first row: sentences are contiguous)."""
    ids = positions_in_sentences(toks["sent"]).alias("_id")
    blank = pl.lit("_")
    return toks.with_columns(
        ids, ids.cast(pl.String).alias("id"), blank.alias("lemma"),
        pl.col("tag").alias("upos"), blank.alias("xpos"), blank.alias("feats"),
        blank.alias("head"), blank.alias("deprel"), blank.alias("deps"), blank.alias("misc"),
    )


class WordCheck:
    """Checks a system file against the key while it is read chunk by chunk.

    Errors come in the order of :func:`check_same_words`: the number of sentences, then the
    words per sentence, then the first differing form (found chunk by chunk, raised last).
    ``key_sents`` is the key's sentence table (``sent``, ``sent_id``, ``n_words``, ``line``).
    """

    def __init__(self, key_path: str, key_sents: pl.DataFrame, system_path: str) -> None:
        self.key_path, self.system_path = key_path, system_path
        self.key_sents = key_sents.sort("sent")
        self.key_n = self.key_sents["n_words"].to_numpy()
        self.n_words: list[np.ndarray] = []
        self.lines: list[np.ndarray] = []
        self.form_error: InputError | None = None
        self.count_error: InputError | None = None

    def add(self, chunk: ConllDoc, key_words: pl.DataFrame) -> None:
        """One chunk of the system; ``key_words`` are the key's words (``sent``, ``id``,
        ``form``), in order, of at least the same sentences."""
        n = chunk.sents["n_words"].to_numpy()
        lo = int(chunk.sents["sent"][0])
        self.n_words.append(n)
        self.lines.append(chunk.sents["line"].to_numpy())
        same_shape = lo + n.size <= self.key_n.size and np.array_equal(
            self.key_n[lo:lo + n.size], n)
        if self.form_error is None and same_shape:
            in_chunk = pl.col("sent").is_between(lo, lo + n.size - 1)
            self.form_error = self._form_error(key_words.filter(in_chunk), chunk.words)
        elif self.count_error is None and not same_shape:
            m = min(n.size, max(self.key_n.size - lo, 0))
            bad = np.flatnonzero(self.key_n[lo:lo + m] != n[:m])
            if bad.size:
                i = lo + int(bad[0])
                self.count_error = self._count_error(
                    i, key_words.filter(pl.col("sent") == i),
                    chunk.words.filter(pl.col("sent") == i))

    def _count_error(self, i: int, key_words: pl.DataFrame, words: pl.DataFrame
                     ) -> InputError:
        """Sentence ``i`` has more or fewer words than the key's: name the first word that
        differs, its line in the system file, and the forms on both sides (a merged word:
        the system's one form against the key's two)."""
        kf = [unicodedata.normalize("NFC", f) for f in key_words["form"].to_list()]
        sf = [unicodedata.normalize("NFC", f) for f in words["form"].to_list()]
        lines = words["line"].to_list()
        j = next((k for k, (a, b) in enumerate(zip(sf, kf, strict=False)) if a != b),
                 min(len(sf), len(kf)))
        sent_id = self.key_sents["sent_id"][i]
        counts = f"{len(sf)} words, the key has {len(kf)}"

        def forms(items: list[str], start: int, n: int) -> str:
            return " ".join(f"'{f}'" for f in items[start:start + n])

        if len(sf) < len(kf):
            what = "a word is missing"
            if j < len(sf):
                text = (f"form {forms(sf, j, 1)} where the key has {forms(kf, j, 2)}: {what} "
                        f"(a merged word?)")
            else:
                text = f"the key's {forms(kf, j, 1)} is missing after the last word: {what}"
        else:
            what = "it has an extra word"
            text = (f"forms {forms(sf, j, 2)} where the key has {forms(kf, j, 1)}: {what} "
                    f"(a split word?)" if j < len(kf) else
                    f"extra word {forms(sf, j, 1)} after the key's last word: {what}")
        line = lines[min(j, len(lines) - 1)] if lines else None
        return InputError(f"sentence {sent_id}, word {j + 1}: {text} ({counts}); expected the "
                          "key's words", self.system_path, line)

    def _form_error(self, key_words: pl.DataFrame, words: pl.DataFrame) -> InputError | None:
        kw = key_words.select("sent", "id", pl.col("form").alias("kf"))
        sw = words.select(pl.col("form").alias("sf"), "line")
        both = pl.concat([kw, sw], how="horizontal").filter(pl.col("kf") != pl.col("sf"))
        nfc = [pl.col(c).str.normalize("NFC") for c in ("kf", "sf")]  # only where bytes differ
        both = both.with_columns(nfc).filter(pl.col("kf") != pl.col("sf"))
        if both.is_empty():
            return None
        r = both.row(0, named=True)
        sent_id = self.key_sents["sent_id"][r["sent"]]
        return InputError(
            f"sentence {sent_id}, word {r['id']}: form '{r['sf']}' differs from the "
            f"key's '{r['kf']}'; expected the key's words", self.system_path, r["line"],
        )

    def finish(self) -> None:
        """Raise the first difference from the key, if any."""
        error = self.difference()
        if error is not None:
            raise error

    def difference(self) -> InputError | None:
        """The first difference from the key (as an error to raise), or None."""
        try:
            self._check()
        except InputError as e:
            return e
        return None

    def _check(self) -> None:
        n = np.concatenate(self.n_words) if self.n_words else np.zeros(0, np.int32)
        lines = np.concatenate(self.lines) if self.lines else np.zeros(0, np.int32)
        k = self.key_n.size
        if n.size != k:
            raise InputError(
                f"has {n.size} sentences but the key ({self.key_path}) has {k}; expected the "
                "key's sentences in the key's order", self.system_path,
                int(lines[k]) if n.size > k else None,
            )
        bad = np.flatnonzero(n != self.key_n)
        if bad.size and self.count_error is not None:
            raise self.count_error
        if bad.size:
            i = int(bad[0])
            what = "a word is missing" if n[i] < self.key_n[i] else "it has an extra word"
            raise InputError(
                f"sentence {self.key_sents['sent_id'][i]} has {n[i]} words but the key has "
                f"{self.key_n[i]}: {what}", self.system_path, int(lines[i]),
            )
        if self.form_error is not None:
            raise self.form_error


def check_same_words(key: ConllDoc, system: ConllDoc) -> None:
    """A system must have the key's sentences and words (forms compared after NFC)."""
    check = WordCheck(key.path, key.sents, system.path)
    check.add(system, key.words)
    check.finish()
