"""Readers for token-level formats (CoNLL-U, CoNLL-X, word<TAB>tag) with strict validation.

Reading is vectorised: the file is loaded as one column of lines by polars' CSV reader, then
classified, split and checked with expressions. Every problem raises :class:`InputError`
naming the file, the 1-based line and what was expected.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from schemas.errors import InputError

FORMATS = ("conllu", "conllx", "tsv")
CONLL_FIELDS = ["id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc"]
TSV_FIELDS = ["form", "tag"]
KIND_WORD, KIND_RANGE, KIND_EMPTY = 0, 1, 2
PTB_PUNCT = ["``", "''", ",", ".", ":", "-LRB-", "-RRB-", "#", "$"]
_SEP = "\x1f"  # a separator that never occurs in text: one column of whole lines

TOKEN_COLUMNS = {
    "sent": pl.Int32, "id": pl.Int32, "token_id": pl.String, "kind": pl.Int8,
    "form": pl.String, "lemma": pl.String, "upos": pl.String, "xpos": pl.String,
    "feats": pl.String, "head": pl.Int32, "deprel": pl.String, "deps": pl.String,
    "misc": pl.String, "line": pl.Int32,
}
SENT_COLUMNS = {
    "sent": pl.Int32, "sent_id": pl.String, "doc": pl.Int32, "doc_id": pl.String,
    "text": pl.String, "n_words": pl.Int32, "line": pl.Int32,
}


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


def read_bytes(path: str | Path) -> bytes:
    """Read a file's bytes, refusing missing, empty and binary files."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", p)
    if not p.is_file():
        raise InputError("not a regular file", p)
    data = p.read_bytes()
    if not data or data.isspace():
        raise InputError("file is empty; expected sentences of tab-separated token lines", p)
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError("binary data (NUL byte); expected a UTF-8 text file", p, line)
    return data


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


def read_fields(data: bytes, fields: list[str]) -> pl.DataFrame:
    """Fast path: every line as ``len(fields)`` string columns; blank lines are all-null rows."""
    df = pl.read_csv(
        io.BytesIO(data), separator="\t", has_header=False, quote_char=None,
        schema=dict.fromkeys(fields, pl.String), missing_columns="insert",
    )
    return df.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int32))


def first_token_line(data: bytes) -> tuple[int, str]:
    """The first line that is neither blank nor a comment, with its number."""
    for n, raw in enumerate(data.split(b"\n", 20000), start=1):
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        if text.strip() and not text.startswith("#"):
            return n, text
    return 0, ""


def detect_format(path: str | Path, data: bytes) -> str:
    """Guess the format from the first token line's column count and the file's comments."""
    line, text = first_token_line(data)
    if not line:
        raise InputError("no token lines (only comments); expected tab-separated tokens", path)
    n_cols = text.count("\t") + 1
    if n_cols == 10:
        plain = Path(path).suffix.lower() in (".conll", ".conllx")
        return "conllx" if plain and not data.lstrip().startswith(b"#") else "conllu"
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


def classify_rows(df: pl.DataFrame, fmt: str) -> pl.DataFrame:
    """Drop blank lines; add ``comment`` and ``sent`` (0-based sentence of each line)."""
    blank = pl.col(df.columns[1]).is_null()
    comment = pl.col(df.columns[1]).str.starts_with("#") if fmt == "conllu" else pl.lit(False)
    df = df.with_columns(blank.alias("_blank"), comment.fill_null(False).alias("comment"))
    start = ~pl.col("_blank") & pl.col("_blank").shift(1, fill_value=True)
    df = df.with_columns((start.cum_sum() - 1).cast(pl.Int32).alias("sent"))
    return df.filter(~pl.col("_blank")).drop("_blank")


def _first_bad(path: str | Path, df: pl.DataFrame, mask: pl.Expr,
               message: Callable[[dict], str]) -> None:
    """Raise an InputError for the first row where ``mask`` holds (message from that row)."""
    bad = df.filter(mask)
    if not bad.is_empty():
        row = bad.row(0, named=True)
        raise InputError(message(row), path, row["line"])


def parse_ids(path: str | Path, toks: pl.DataFrame) -> pl.DataFrame:
    """Classify IDs as word / multiword range / empty node; check words run 1..n per sentence."""
    tid = pl.col("token_id")
    num = tid.cast(pl.Int32, strict=False)
    kind = (
        pl.when(num.is_not_null()).then(KIND_WORD)
        .when(tid.str.contains(r"^[0-9]+-[0-9]+$")).then(KIND_RANGE)
        .when(tid.str.contains(r"^[0-9]+\.[0-9]+$")).then(KIND_EMPTY)
        .otherwise(None).cast(pl.Int8)
    )
    df = toks.with_columns(kind.alias("kind"), num.alias("id"))
    _first_bad(path, df, pl.col("kind").is_null() | (pl.col("id") < 0),
               lambda r: f"ID '{r['token_id']}' is not an integer, a range (1-2) or an empty "
               "node (1.1)")
    df = df.with_columns(
        pl.col("id").fill_null(tid.str.extract(r"^([0-9]+)", 1).cast(pl.Int32))
    )
    words = df.filter(pl.col("kind") == KIND_WORD)
    new_sent = pl.col("sent") != pl.col("sent").shift(1, fill_value=-1)
    expected = pl.when(new_sent).then(1).otherwise(pl.col("id").shift(1) + 1)
    words = words.with_columns(expected.alias("_expected"))
    _first_bad(path, words, pl.col("id") != pl.col("_expected"), _id_message)
    return df


def _id_message(r: dict) -> str:
    kind = "duplicate word ID" if r["id"] < r["_expected"] else "skipped word ID"
    return (f"{kind}: found {r['id']}, expected {r['_expected']} (IDs run 1, 2, 3, ... in each "
            "sentence)")


def parse_heads(path: str | Path, df: pl.DataFrame, sents: pl.DataFrame) -> pl.DataFrame:
    """HEAD of a word: ``_`` (none) or an integer 0..n; anything else is an error."""
    h = pl.col("head")
    is_word = pl.col("kind") == KIND_WORD
    num = h.cast(pl.Int64, strict=False)
    df = df.with_columns(pl.when(is_word).then(num).otherwise(None).alias("_h"))
    odd = df.filter(is_word & (pl.col("_h").is_null() | (pl.col("_h") < 0)))
    _first_bad(path, odd, (h != "_") & pl.col("_h").is_null(),
               lambda r: f"HEAD '{r['head']}' is not an integer; expected 0 (root) or a word ID")
    _first_bad(path, odd, pl.col("_h") < 0,
               lambda r: f"HEAD {r['head']} is negative; expected 0 (root) or a word ID")
    n_words = sents.select("sent", pl.col("n_words").alias("_n"))
    high = df.join(n_words, on="sent", how="left")
    _first_bad(path, high, pl.col("_h") > pl.col("_n"),
               lambda r: f"HEAD {r['head']} is out of range; the sentence has {r['_n']} words")
    return df.with_columns(pl.col("_h").cast(pl.Int32).alias("head")).drop("_h")


def sentence_table(comments: pl.DataFrame, toks: pl.DataFrame) -> pl.DataFrame:
    """Per sentence: sent_id, text and document from comments; word count; first line."""
    key = pl.col("text").str.extract(r"^#\s*([A-Za-z_.]+)", 1)
    val = pl.col("text").str.extract(r"^#\s*[A-Za-z_.]+\s*=\s*(.*?)\s*$", 1)
    meta = comments.with_columns(key.alias("k"), val.alias("v")).group_by("sent").agg(
        pl.col("line").min().alias("cline"),
        pl.col("v").filter(pl.col("k") == "sent_id").first().alias("sent_id"),
        pl.col("v").filter(pl.col("k") == "text").first().alias("text"),
        (pl.col("k") == "newdoc").any().alias("newdoc"),
        pl.col("v").filter(pl.col("k") == "newdoc").first().alias("doc_id"),
    )
    n_sent = int(toks["sent"].max()) + 1
    is_word = (toks["kind"] == KIND_WORD).to_numpy()
    n_words = np.bincount(toks["sent"].to_numpy()[is_word], minlength=n_sent)
    firsts = toks.filter(pl.col("sent") != pl.col("sent").shift(1, fill_value=-1))
    counts = firsts.select("sent", pl.col("line").alias("tline")).with_columns(
        pl.Series("n_words", n_words[firsts["sent"].to_numpy()], dtype=pl.Int32))
    df = counts.join(meta, on="sent", how="full", coalesce=True).sort("sent")
    df = df.with_columns(
        pl.min_horizontal("cline", "tline").alias("line"),
        pl.col("n_words").fill_null(0),
        pl.col("newdoc").fill_null(False),
        pl.col("sent_id").fill_null((pl.col("sent") + 1).cast(pl.String)),
    )
    doc = pl.col("newdoc").cum_sum() - pl.col("newdoc").first().cast(pl.Int32)
    df = df.with_columns(doc.cast(pl.Int32).alias("doc"), pl.col("doc_id").forward_fill())
    return df.select(list(SENT_COLUMNS)).cast(SENT_COLUMNS)


def _check_nonempty_sentences(path: str | Path, sents: pl.DataFrame) -> None:
    _first_bad(path, sents, pl.col("n_words") == 0,
               lambda r: "sentence has no words (only comments or multiword ranges); expected "
               "token lines after the comments")


def read_table(path: str | Path, data: bytes, fmt: str, fields: list[str]) -> pl.DataFrame:
    """All lines as string columns; any malformed line raises a precise InputError."""
    try:
        df = read_fields(data, fields)
    except pl.exceptions.PolarsError:
        diagnose_lines(path, data, fmt, len(fields))
        raise
    df = classify_rows(df, fmt)
    toks = df.filter(~pl.col("comment"))
    if toks.select(pl.any_horizontal(pl.col(fields).is_null()).any()).item():
        diagnose_lines(path, data, fmt, len(fields))
    return df


def read_conll(path: str | Path, fmt: str | None = None) -> ConllDoc:
    """Read and validate a CoNLL-U, CoNLL-X or word<TAB>tag file."""
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}", path)
    data = read_bytes(path)
    fmt = fmt or detect_format(path, data)
    fields = TSV_FIELDS if fmt == "tsv" else CONLL_FIELDS
    df = read_table(path, data, fmt, fields)
    comments = df.filter(pl.col("comment")).select(
        "sent", "line", pl.concat_str(fields, separator="\t", ignore_nulls=True).alias("text"))
    toks = df.filter(~pl.col("comment")).drop("comment")
    if fmt == "tsv":
        toks = _tsv_to_conll(toks)
    toks = parse_ids(path, toks.rename({"id": "token_id"}))
    sents = sentence_table(comments, toks)
    _check_nonempty_sentences(path, sents)
    toks = parse_heads(path, toks, sents)
    return ConllDoc(str(path), fmt, toks.select(list(TOKEN_COLUMNS)).cast(TOKEN_COLUMNS), sents)


def _tsv_to_conll(toks: pl.DataFrame) -> pl.DataFrame:
    """word<TAB>tag: the tag fills both UPOS and XPOS; IDs are positions in the sentence."""
    pos = pl.int_range(1, pl.len() + 1).over("sent").cast(pl.String)
    blank = pl.lit("_")
    return toks.with_columns(
        pos.alias("id"), blank.alias("lemma"), pl.col("tag").alias("upos"),
        pl.col("tag").alias("xpos"), blank.alias("feats"), blank.alias("head"),
        blank.alias("deprel"), blank.alias("deps"), blank.alias("misc"),
    )

def check_same_words(key: ConllDoc, system: ConllDoc) -> None:
    """A system must have the key's sentences and words (forms compared after NFC)."""
    ks, ss = key.sents, system.sents
    if ks.height != ss.height:
        more = ss.height > ks.height
        line = int(ss["line"][ks.height]) if more else None
        raise InputError(
            f"has {ss.height} sentences but the key ({key.path}) has {ks.height}; expected the "
            "key's sentences in the key's order", system.path, line,
        )
    lens = ks.select("sent", "sent_id", pl.col("n_words").alias("nk")).join(
        ss.select("sent", pl.col("n_words").alias("ns"), "line"), on="sent")
    bad = lens.filter(pl.col("nk") != pl.col("ns"))
    if not bad.is_empty():
        r = bad.row(0, named=True)
        what = "a word is missing" if r["ns"] < r["nk"] else "it has an extra word"
        raise InputError(
            f"sentence {r['sent_id']} has {r['ns']} words but the key has {r['nk']}: {what}",
            system.path, r["line"],
        )
    kw = key.words.select("sent", "id", pl.col("form").str.normalize("NFC").alias("kf"))
    sw = system.words.select(pl.col("form").str.normalize("NFC").alias("sf"), "line")
    both = pl.concat([kw, sw], how="horizontal").filter(pl.col("kf") != pl.col("sf"))
    if not both.is_empty():
        r = both.join(ks.select("sent", "sent_id"), on="sent").row(0, named=True)
        raise InputError(
            f"sentence {r['sent_id']}, word {r['id']}: form '{r['sf']}' differs from the "
            f"key's '{r['kf']}'; expected the key's words", system.path, r["line"],
        )
