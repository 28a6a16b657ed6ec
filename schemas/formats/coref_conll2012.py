"""CoNLL-2012 coreference files: ``#begin document (NAME); part N`` ... ``#end document``,
the coreference column last (brackets ``(12``, ``12)``, ``(12)`` joined by ``|``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.coref_shared import (
    _NONE,
    _bracket_kind,
    _check_unique_docs,
    _docname,
    _finish_mentions,
    _first_error,
    _match_brackets,
    _rank_in_run,
)

_BRACKET = r"\(\d+\)|\(\d+|\d+\)"
_FIELD_OK = r"^(?:\(\d+\)|\(\d+|\d+\)|\|)+$"
_BEGIN_RE = re.compile(r"^#\s*begin document\s*(.*?)\s*$")
_NAME_RE = re.compile(r"^\((.*)\);?\s*(?:part\s+(\d+))?\s*;?$")
_NAME_PLAIN_RE = re.compile(r"^(.*?)\s*(?:;\s*part\s+(\d+))?\s*;?$")



def _parse_doc_name(raw: str) -> tuple[str, int]:
    m = _NAME_RE.match(raw) or _NAME_PLAIN_RE.match(raw)
    name, part = m.group(1), m.group(2)
    return name.strip(), int(part) if part else 0


_B, _E, _C, _S, _T = range(5)   # line kinds: begin, end, comment, blank, token


def _split_lines(text: str, data: bytes | None = None) -> pl.Series:
    """Physical lines without CR (null for an empty line); a final newline does not start a
    line. ``data``: the same text as UTF-8 bytes, when at hand."""
    if "\x1f" not in text:
        # fast path: the CSV reader with a separator that does not occur splits the lines
        df = pl.read_csv(data if data is not None else text.encode("utf-8"), has_header=False,
                         separator="\x1f", quote_char=None, schema={"text": pl.Utf8})
        return df.to_series()
    if text.endswith("\n"):
        text = text[:-1]
    lines = pl.Series("text", text.split("\n"))
    return lines.str.strip_suffix("\r") if "\r" in text else lines


def conll_line_kinds(lines: pl.Series, path: str | Path) -> np.ndarray:
    """Kind of every line (``_B``, ``_E``, ``_C``, ``_S``, ``_T``); checks the nesting of
    ``#begin document`` / ``#end document`` and that tokens lie inside documents."""
    n = len(lines)
    is_hash = lines.str.starts_with("#").fill_null(False).to_numpy()
    blank = (lines.str.strip_chars_end(" \t").str.len_bytes() == 0).fill_null(True).to_numpy()
    kind = np.full(n, _T, dtype=np.int8)
    kind[blank] = _S
    hashes = np.flatnonzero(is_hash)
    htext = lines.gather(hashes)
    kind[hashes] = _C
    kind[hashes[htext.str.contains(r"^#\s*begin document").to_numpy()]] = _B
    kind[hashes[htext.str.contains(r"^#\s*end document").to_numpy()]] = _E
    idx = np.arange(n)
    be = np.maximum.accumulate(np.where((kind == _B) | (kind == _E), idx, -1))
    inside = (be >= 0) & (kind[np.maximum(be, 0)] == _B)          # after this line
    before = np.concatenate([[False], inside[:-1]])
    checks = [
        ((kind == _B) & before, "'#begin document' inside a document: the previous document "
                                "has no '#end document'"),
        ((kind == _E) & ~before, "'#end document' without a '#begin document'"),
        ((kind == _T) & ~inside, "token line outside a document (expected '#begin document "
                                 "(NAME); part N' before it)"),
    ]
    for bad, message in checks:
        if bad.any():
            raise InputError(message, path, int(np.flatnonzero(bad)[0]) + 1)
    if n and inside[-1]:
        raise InputError("document has no '#end document' (file ends inside it)", path,
                         int(np.flatnonzero(kind == _B)[-1]) + 1)
    return kind


def _conll_docs(lines: pl.Series, kind: np.ndarray, path: str | Path) -> pl.DataFrame:
    begins = np.flatnonzero(kind == _B)
    parsed = [_parse_doc_name(_BEGIN_RE.match(x).group(1))
              for x in lines.gather(begins).to_list()]
    docs = pl.DataFrame({
        "doc_idx": np.arange(1, len(begins) + 1, dtype=np.int32),
        "line": (begins + 1).astype(np.int32),
        "doc": [p[0] for p in parsed], "part": [p[1] for p in parsed],
    }, schema={"doc_idx": pl.Int32, "line": pl.Int32, "doc": pl.Utf8, "part": pl.Int32})
    _check_unique_docs(docs, path)
    return docs


def _token_positions(kind: np.ndarray) -> tuple[np.ndarray, ...]:
    """Line index, document index, position in the document and sentence of each token."""
    tok = np.flatnonzero(kind == _T)
    doc = np.cumsum(kind == _B)[tok].astype(np.int32)
    first = np.searchsorted(doc, doc, side="left")
    pos = (np.arange(len(tok)) - first).astype(np.int32)
    blanks = np.cumsum(kind == _S)[tok]
    new = np.ones(len(tok), dtype=bool)
    new[1:] = (blanks[1:] != blanks[:-1]) | (doc[1:] != doc[:-1])
    sents = np.cumsum(new)
    sent = (sents - sents[first]).astype(np.int32) if len(tok) else sents.astype(np.int32)
    return tok, doc, pos, sent


def _normalise(df: pl.DataFrame, col: str = "text") -> pl.DataFrame:
    """Adds ``norm``: tab-separated fields; a line without tabs is split on runs of white
    space (the costly replacement only runs when such lines exist)."""
    text = pl.col(col)
    tabbed = text.str.contains("\t", literal=True)
    if df.select(tabbed.all()).item() is not False:
        return df.with_columns(norm=text.str.strip_chars_end(" "))
    return df.with_columns(norm=pl.when(tabbed).then(text.str.strip_chars_end(" "))
                           .otherwise(text.str.strip_chars().str.replace_all(r"\s+", "\t")))


def _coref_fields(lines: pl.Series, tok: np.ndarray, doc: np.ndarray, pos: np.ndarray,
                  sent: np.ndarray) -> pl.DataFrame:
    """Coreference column, form and POS of the token lines that may hold a mention.

    The coreference column is the last non-empty field (as the reference scorer splits
    lines), except that after trailing empty fields a last non-empty field that is not a
    bracket list is another column: an empty coreference column (LitBank) means no mention,
    while ``(3)<TAB>`` (a stray tab, as in the reference scorer's own test files) is ``(3)``.
    Lines whose last non-empty field is ``-``/``_`` hold no mention and are skipped early.
    """
    tail = lines.str.strip_chars_end(" \t")
    cand = ~(tail.str.ends_with("-") | tail.str.ends_with("_") | (tail.str.len_bytes() == 0))
    ci = np.flatnonzero(cand.fill_null(False).to_numpy()[tok])
    c = pl.DataFrame({"doc_idx": doc[ci], "pos": pos[ci], "sent": sent[ci],
                      "line": (tok[ci] + 1).astype(np.int32), "text": lines.gather(tok[ci])})
    c = _normalise(c).with_columns(
        stripped=pl.col("norm").str.strip_chars_end("\t"),
    ).with_columns(
        trailing=pl.col("norm").str.len_bytes() > pl.col("stripped").str.len_bytes(),
        n_eff=pl.col("stripped").str.count_matches("\t", literal=True) + 1,
        last=pl.col("stripped").str.extract(r"([^\t]*)$").str.strip_chars(),
        fields=pl.col("norm").str.splitn("\t", 6),
    )
    return c.select(
        "doc_idx", "pos", "sent", "line",
        coref=pl.when(pl.col("trailing") & ~pl.col("last").str.contains(_FIELD_OK))
        .then(pl.lit("")).otherwise(pl.col("last")),
        form=pl.when(pl.col("n_eff") >= 5).then(pl.col("fields").struct.field("field_3")),
        tag=pl.when(pl.col("n_eff") >= 6).then(pl.col("fields").struct.field("field_4")),
    ).with_columns(tag=pl.when(pl.col("tag").is_in(_NONE)).then(None).otherwise(pl.col("tag")))


def _check_columns(lines: pl.Series, tok: np.ndarray, doc: np.ndarray, sent: np.ndarray,
                   path: str | Path) -> None:
    """A token line with fewer columns than the other lines of its sentence (the most
    common count there, the smaller on a tie) lost a column, maybe the coreference column,
    which is the last: an InputError at the first. (Sentences may differ: CoNLL-2012 has
    one argument column per predicate of the sentence; an extra column is accepted, e.g. a
    stray tab at the end of a line.)"""
    if not tok.size:
        return
    t = _normalise(pl.DataFrame({"doc": doc, "sent": sent, "line": (tok + 1).astype(np.int32),
                                 "text": lines.gather(tok)}))
    t = t.select("doc", "sent", "line", n=pl.col("norm").str.count_matches("\t", literal=True) + 1)
    usual = (t.group_by("doc", "sent", "n").agg(k=pl.len())
             .sort("doc", "sent", "k", "n", descending=[False, False, True, False])
             .unique(["doc", "sent"], keep="first", maintain_order=True)
             .select("doc", "sent", usual="n"))
    short = t.join(usual, on=["doc", "sent"]).filter(pl.col("n") < pl.col("usual"))
    _first_error(short, path, lambda r: (
        f"line has {r['n']} columns; the other lines of its sentence have {r['usual']} "
        "(a missing column drops its mention: the coreference column is the last); expected "
        f"{r['usual']} columns"))


def _parse_conll2012(
    text: str, path: str | Path, data: bytes | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    lines = _split_lines(text, data)
    kind = conll_line_kinds(lines, path)
    docs = _conll_docs(lines, kind, path)
    tok, doc, pos, sent = _token_positions(kind)
    _check_columns(lines, tok, doc, sent, path)
    names = docs.select("doc_idx", "doc", "part")
    marked = _coref_fields(lines, tok, doc, pos, sent).filter(~pl.col("coref").is_in(_NONE))
    _first_error(
        marked.filter(~pl.col("coref").str.contains(_FIELD_OK)).join(names, on="doc_idx"), path,
        lambda r: f"bad coreference column {r['coref']!r} in document {_docname(r)} (expected "
                  "'-', '_', or brackets '(12', '12)', '(12)', optionally joined by '|')")
    events = (
        marked.lazy().select("doc_idx", "pos", "line", b=pl.col("coref").str.extract_all(_BRACKET))
        .explode("b")
        .with_columns(ord=_rank_in_run("line"))
        .with_columns(
            kind=_bracket_kind(pl.col("b")),
            ent=pl.col("b").str.extract(r"(\d+)"),
            attrs=pl.lit(None, dtype=pl.Utf8),
        ).collect()
    )
    spans = _match_brackets(events, docs, path, written_order=False)
    tokens = marked.select("doc_idx", "pos", "sent", "form", "tag")
    counts = np.bincount(doc, minlength=docs.height + 1)[1:]
    tok_table = docs.sort("doc_idx").select(
        "doc", "part", n_tokens=pl.Series(counts.astype(np.int32)), line="line")
    return _finish_mentions(spans, tokens, docs, path), tok_table
