"""Readers for span labellings (named entities, chunks: any BIO tags), with strict validation.

Three formats, one token per line and a blank line between sentences:

- ``tsv``: ``word<TAB>tag``; ``#`` lines without a tab are comments, ``-DOCSTART-`` lines
  start documents;
- ``conll2003``: ``word POS chunk tag`` (four columns separated by single spaces or by tabs,
  the first token line decides), ``-DOCSTART-`` lines start documents;
- ``uner``: the UniversalNER file: ``# newdoc``/``# sent_id``/``# text`` comments and five
  tab-separated columns ``ID word tag - annotator`` (IDs run 1..n in each sentence).

Tags are ``O`` or ``P-TYPE`` with P in B, I (IOB1, IOB2) and E, S (BIOES); a bare ``B`` ...
is the single type ``_``. A scheme (``--scheme``) restricts the prefixes allowed. Reading is
vectorised (polars over whole columns); every problem raises one :class:`InputError` naming
the file, the 1-based line and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import (
    SENT_COLUMNS,
    Hasher,
    _check_text,
    _check_word_sequence,
    _comment_fields,
    _first_bad,
    check_last_line,
    check_utf8,
    file_head,
    first_token_line,
    positions_in_sentences,
    read_lines,
    sentence_table,
)
from sysdiff.schemas.formats.stable import StableFile, after_blank_line, opened, without_bom

FORMATS = ("tsv", "conll2003", "uner")
#: Decoding schemes: ``auto`` (conlleval rules, any of the others' tags), ``iob1``
#: (conlleval rules), ``iob2`` (seqeval strict), ``bioes`` (seqeval strict).
SCHEMES = ("auto", "iob1", "iob2", "bioes")
#: Prefix codes of the token columns ``prefix``: O B I E S.
PREFIXES = ("O", "B", "I", "E", "S")
ALLOWED = {"auto": "BIES", "iob1": "BI", "iob2": "BI", "bioes": "BIES"}
COLUMNS = {"tsv": 2, "conll2003": 4, "uner": 5}
#: (form, tag) column of each format.
FIELDS = {"tsv": (0, 1), "conll2003": (0, 3), "uner": (1, 2)}
DOCSTART = "-DOCSTART-"
_DOCSTART = DOCSTART.encode()
CHUNK_BYTES = 32 << 20
#: The token rows a reader gives (``id``: 1-based position in the sentence).
TOKEN_COLUMNS = {"sent": pl.Int32, "id": pl.Int32, "form": pl.String, "tag": pl.String,
                 "prefix": pl.UInt8, "type": pl.String, "line": pl.Int32}
EXPECTED = ("sentences of one token per line (word<TAB>tag, CoNLL-2003 'word POS chunk tag', "
            "or UniversalNER 'ID word tag - annotator') with a blank line between sentences")


@dataclass(frozen=True)
class TagChunk:
    """Whole sentences of a tag file: token rows and sentence rows (the ``sents`` table's
    columns), numbered as in the file."""

    fmt: str
    tokens: pl.DataFrame
    sents: pl.DataFrame

    @property
    def words(self) -> pl.DataFrame:
        """The tokens as :class:`~sysdiff.schemas.formats.conllu.WordCheck` reads them."""
        return self.tokens


# ------------------------------------------------------------------------------ detection


def detect_span_format(path: str | Path, data: bytes) -> str:
    """The format of a tag file from its first token line (and the comments before it)."""
    line, text = first_token_line(data)
    if not line:
        raise InputError(f"no token lines (only comments); expected {EXPECTED}", path)
    fields = text.split("\t")
    if len(fields) == 5 and fields[0].isdigit():
        return "uner"
    if fields[0].isdigit() and len(fields) > 2 and data.lstrip().startswith(b"#"):
        raise InputError(f"line has {len(fields)} columns; expected 5: ID word tag - "
                         "annotator (UniversalNER)", path, line)
    if len(fields) == 2:
        return "tsv"
    if len(fields) == 4 or (len(fields) == 1 and len(text.split(" ")) == 4):
        return "conll2003"
    if len(fields) == 1 and len(text.split()) == 2:
        raise InputError("columns are separated by spaces, not a tab; expected word<TAB>tag",
                         path, line)
    raise InputError(f"line has {max(len(fields), len(text.split()))} columns; expected 2 "
                     "(word<TAB>tag), 4 (CoNLL-2003) or 5 (UniversalNER)", path, line)


def check_scheme(scheme: str) -> str:
    """``scheme`` if it is one of :data:`SCHEMES`, else an InputError naming them."""
    if scheme not in SCHEMES:
        raise InputError(f"unknown scheme '{scheme}'; expected one of {', '.join(SCHEMES)}")
    return scheme


# ------------------------------------------------------------------------------ reading


def _separator(fmt: str, lines: pl.DataFrame, token: pl.Series) -> str:
    """The column separator: a tab, or for CoNLL-2003 a space when its first token line
    has no tab."""
    if fmt != "conll2003":
        return "\t"
    first = lines["text"].filter(token).head(1).to_list()
    return "\t" if not first or "\t" in first[0] else " "


def _classify(fmt: str, lines: pl.DataFrame) -> tuple[pl.Series, pl.Series, pl.Series]:
    """Per line: blank, comment and document start (``-DOCSTART-``) masks."""
    text = pl.col("text")
    kinds = lines.select(
        blank=text.is_null() | (text.str.strip_chars() == ""),
        hash=text.str.starts_with("#").fill_null(False),
        tab=text.str.contains("\t", literal=True).fill_null(False),
        docstart=text.str.starts_with(DOCSTART).fill_null(False),
    )
    blank, docstart = kinds["blank"], kinds["docstart"] & ~kinds["blank"]
    if fmt == "uner":
        comment = kinds["hash"]
    elif fmt == "tsv":
        comment = kinds["hash"] & ~kinds["tab"]
    else:
        comment = kinds["hash"] & ~kinds["tab"] & (
            lines["text"].str.count_matches(" ", literal=True).fill_null(0) != 3)
    return blank, comment & ~blank, docstart & ~comment


def _split(path: str | Path, fmt: str, rows: pl.DataFrame, sep: str) -> pl.DataFrame:
    """Token lines split into the format's columns; a wrong count or an empty column is
    an error naming the first such line."""
    n = COLUMNS[fmt]
    count = rows["text"].str.count_matches(sep, literal=True)
    bad = count != n - 1
    if bad.any():
        row = rows.filter(bad).row(0, named=True)
        found = row["text"].count(sep) + 1
        if sep == "\t" and found == 1 and len(row["text"].split()) == n:
            raise InputError(f"columns are separated by spaces, not tabs; expected {n} "
                             "tab-separated columns", path, row["line"])
        what = {"tsv": "word<TAB>tag", "conll2003": "word POS chunk tag (CoNLL-2003)",
                "uner": "ID word tag - annotator (UniversalNER)"}[fmt]
        raise InputError(f"line has {found} columns; expected {n}: {what}", path, row["line"])
    parts = rows.select("line", "sent", f=pl.col("text").str.split_exact(sep, n - 1)).unnest("f")
    fields = [f"field_{k}" for k in range(n)]
    empty = pl.any_horizontal(pl.col(f) == "" for f in fields)
    _first_bad(path, parts, empty, lambda r: "empty column; expected a value in every "
               f"column ({n} columns separated by {'a tab' if sep == chr(9) else 'a space'})")
    return parts


def _tags(path: str | Path, toks: pl.DataFrame, scheme: str) -> pl.DataFrame:
    """``prefix`` (code of O B I E S) and ``type`` of every tag; a tag that is not ``O`` or
    ``P-TYPE`` with a prefix the scheme allows is an error."""
    allowed = ALLOWED[scheme]
    tag = pl.col("tag")
    parsed = toks.with_columns(
        _p=pl.when(tag == "O").then(pl.lit("O")).otherwise(
            tag.str.extract(rf"^([{allowed}])(?:-\S+)?$", 1)),
    )
    bad = parsed["_p"].is_null()
    if bad.any():
        row = parsed.filter(bad).row(0, named=True)
        raise InputError(f"tag '{row['tag']}' is not {_expected_tags(scheme)}", path,
                         row["line"])
    codes = pl.Series(PREFIXES, dtype=pl.String)
    return parsed.with_columns(
        prefix=pl.col("_p").replace_strict(codes, list(range(5)), return_dtype=pl.UInt8),
        type=pl.when(tag == "O").then(None)
        .when(tag.str.len_chars() == 1).then(pl.lit("_")).otherwise(tag.str.slice(2)),
    ).drop("_p")


def _expected_tags(scheme: str) -> str:
    prefixes = "/".join(f"{p}-" for p in ALLOWED[scheme])
    where = "" if scheme == "auto" else f" (--scheme {scheme})"
    return f"O or {prefixes}TYPE{where}; expected a BIO tag such as B-PER, I-PER or O"


def parse_chunk(path: str | Path, data: bytes, fmt: str, scheme: str,
                sent_base: int = 0, doc_base: int | None = None, last: bool = False
                ) -> tuple[TagChunk | None, int]:
    """One chunk of whole sentences (None when it holds no token line) and its number of
    lines; lines numbered from 1, sentences from 0 (``sent_base`` numbers default sentence
    ids, ``doc_base`` continues document numbers); ``last``: the chunk ends the file."""
    try:
        lines = read_lines(data)
    except pl.exceptions.PolarsError:
        check_utf8(path, data)
        raise
    lines = lines.with_columns(pl.col("text").str.strip_suffix("\r"))
    blank, comment, docstart = _classify(fmt, lines)
    token = ~blank & ~comment & ~docstart
    if not token.any():
        if comment.any():
            raise InputError(f"no token lines after the comments; expected {EXPECTED}", path,
                             int(lines["line"].filter(comment)[0]))
        return None, lines.height
    gap = (blank | docstart).to_numpy()
    start = ~gap
    start[1:] &= gap[:-1]
    sent = np.cumsum(start, dtype=np.int32) - 1
    rows = lines.with_columns(sent=pl.Series(sent, dtype=pl.Int32))
    comments = rows.filter(comment).select("sent", "line", "text")
    comments = comments.with_columns(_comment_fields(pl.col("text")))
    comments = pl.concat([comments, _docstart_marks(docstart, sent)], how="vertical")
    comments = comments.sort("sent", "line")
    sep = _separator(fmt, lines, token)
    parts = _split(path, fmt, rows.filter(token), sep)
    if last:
        check_last_line(path, data, parts["line"], lines.height)
    f_form, f_tag = FIELDS[fmt]
    toks = parts.select("sent", form=f"field_{f_form}", tag=f"field_{f_tag}", line="line",
                        _id=f"field_{0}")
    toks = toks.with_columns(positions_in_sentences(toks["sent"]))
    if fmt == "uner":
        _check_ids(path, toks)
    toks = _tags(path, toks, scheme).with_columns(kind=pl.lit(0, pl.Int8))
    _check_sentences(path, comments, toks)
    sents = sentence_table(comments, toks, sent_base, doc_base)
    return TagChunk(fmt, toks.select(list(TOKEN_COLUMNS)).cast(TOKEN_COLUMNS), sents), \
        lines.height


def _docstart_marks(docstart: pl.Series, sent: np.ndarray) -> pl.DataFrame:
    """A ``newdoc`` comment row for the first sentence after each ``-DOCSTART-`` line (its
    line is the largest: a sentence starts at its first comment or token, not before)."""
    at = np.flatnonzero(docstart.to_numpy())
    if not at.size:
        return pl.DataFrame(schema={"sent": pl.Int32, "line": pl.Int32, "text": pl.String,
                                    "key": pl.String, "value": pl.String})
    after = (sent[at] + 1).astype(np.int32)  # the next sentence to start
    return pl.DataFrame({
        "sent": after, "line": np.full(at.size, np.iinfo(np.int32).max, np.int32),
        "text": [DOCSTART] * at.size,
        "key": ["newdoc"] * at.size, "value": [None] * at.size,
    }, schema={"sent": pl.Int32, "line": pl.Int32, "text": pl.String, "key": pl.String,
               "value": pl.String})


def _check_ids(path: str | Path, toks: pl.DataFrame) -> None:
    """UniversalNER IDs are integers that run 1, 2, 3, ... in each sentence."""
    number = toks["_id"].cast(pl.Int32, strict=False)
    _first_bad(path, toks, number.is_null(),
               lambda r: f"ID '{r['_id']}' is not an integer; expected 1, 2, 3, ... in each "
               "sentence")
    _check_word_sequence(path, toks.with_columns(id=number, kind=pl.lit(0, pl.Int8)))


def _check_sentences(path: str | Path, comments: pl.DataFrame, toks: pl.DataFrame) -> None:
    """Every block of comments is followed by token lines (no sentence without tokens)."""
    has = set(toks["sent"].unique().to_list())
    lonely = comments.filter(~pl.col("sent").is_in(list(has)) & (pl.col("text") != DOCSTART))
    if lonely.height:
        raise InputError("sentence has no tokens (only comments); expected token lines after "
                         "the comments", path, int(lonely["line"][0]))


def after_sentence(buf: bytes) -> int:
    """A chunk boundary of a tag file: after the last blank line of ``buf`` whose previous
    non-blank line (in ``buf``) is not a ``-DOCSTART-`` line (that line belongs with the
    sentence after it); 0 when there is none."""
    end = len(buf)
    while True:
        cut = after_blank_line(buf, end)
        at = cut
        while at > 0 and buf[at - 1:at] in (b"\n", b"\r", b" ", b"\t"):
            at -= 1
        if not at:  # no cut, or no line before it to tell
            return 0
        start = buf.rfind(b"\n", 0, at) + 1
        if not buf.startswith(_DOCSTART, start):
            return cut
        end = start


def iter_tags(path: str | Path | StableFile, fmt: str | None = None, scheme: str = "auto",
              chunk_bytes: int | None = None, hasher: Hasher | None = None
              ) -> Iterator[TagChunk]:
    """Read and validate a tag file in chunks of whole sentences (about ``chunk_bytes`` of
    text each); sentence, document and line numbers are the file's. The file is read once,
    through one descriptor, and checked to be unchanged at the end (``path`` may be a
    :class:`StableFile` already open); ``hasher`` is fed every byte as it is read."""
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}",
                         getattr(path, "path", path))
    check_scheme(scheme)
    size = chunk_bytes or CHUNK_BYTES
    with opened(path) as f:
        path = f.path
        fmt = fmt or detect_span_format(path, file_head(path, f))
        line = sent = 0
        doc: int | None = None
        doc_id: str | None = None
        for text in f.chunks(size, after_sentence):
            if hasher is not None:
                hasher.update(text)
            if not line:
                text = without_bom(text)
            try:
                _check_text(path, text)
                chunk, n_lines = parse_chunk(path, text, fmt, scheme, sent, doc,
                                             last=f.pos >= f.size)
            except InputError as e:
                raise InputError(e.message, e.path, e.line and e.line + line) from None
            if chunk is not None:
                toks = chunk.tokens.with_columns(pl.col("line") + line, pl.col("sent") + sent)
                sents = chunk.sents.with_columns(
                    pl.col("line") + line, pl.col("sent") + sent,
                    pl.col("doc_id").fill_null(pl.lit(doc_id, pl.String)))
                sent += sents.height
                doc, doc_id = int(sents["doc"][-1]), sents["doc_id"][-1]
                yield TagChunk(fmt, toks, sents.cast(SENT_COLUMNS))
            line += n_lines


def read_tags(path: str | Path, fmt: str | None = None, scheme: str = "auto",
              chunk_bytes: int | None = None) -> TagChunk:
    """A whole tag file (see :func:`iter_tags`)."""
    chunks = list(iter_tags(path, fmt, scheme, chunk_bytes))
    if not chunks:
        raise InputError(f"no token lines; expected {EXPECTED}", path)
    return TagChunk(chunks[0].fmt, pl.concat([c.tokens for c in chunks]),
                    pl.concat([c.sents for c in chunks]))


# ------------------------------------------------------------------------------ mappings


MAP_LINE = re.compile(r"^\s*(\S+)\s*(?:\t|=)\s*(\S+)\s*$")


def read_mapping_file(path: str | Path) -> dict[str, str]:
    """Label mapping lines ``OLD<TAB>NEW`` or ``OLD=NEW`` (``#`` comments and blank lines
    skipped); a bad line is an InputError naming it."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such mapping file" if not p.exists() else
                         "not a regular file; expected a mapping file (OLD<TAB>NEW lines)", p)
    try:
        text = p.read_text(encoding="utf-8-sig")  # a byte order mark is no label
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason}); expected OLD<TAB>NEW lines", p) \
            from None
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        m = MAP_LINE.match(raw)
        if m is None:
            raise InputError(f"'{raw}' is not a mapping line; expected OLD<TAB>NEW or OLD=NEW",
                             p, n)
        if m[1] in out and out[m[1]] != m[2]:
            raise InputError(f"'{m[1]}' is mapped twice ('{out[m[1]]}' and '{m[2]}'); expected "
                             "one target per label", p, n)
        out[m[1]] = m[2]
    if not out:
        raise InputError("the mapping file has no OLD<TAB>NEW line", p)
    return out
