"""Readers for semantic role labelling (predicates and their arguments), strictly validated.

Four layouts, one token per line and a blank line between sentences:

- ``conllu``: Universal PropBank, CoNLL-U (Plus): the 10 CoNLL-U columns, the predicate
  column (a roleset such as ``come.03``, else ``_``), then one argument column per predicate
  in word order holding the role on the argument's **head** word (``V`` on the predicate
  itself, dropped: the predicate is not its own argument). A sentence without predicates may
  end its lines with one empty column (UP 1.0). Comments as in CoNLL-U; an optional
  ``# global.columns`` line must name the 10 CoNLL-U columns and then the predicate column.
- ``conll09``: CoNLL-2009 as ``eval09.pl`` reads it: ``ID FORM LEMMA PLEMMA POS PPOS FEAT
  PFEAT HEAD PHEAD DEPREL PDEPREL FILLPRED PRED APRED1..n`` (roles on head words).
- ``conll05``: CoNLL-2005 words and props: the word, the target column (the verb, else
  ``-``) and one Start-End column per predicate (``(A0*``, ``*``, ``*)``, ``(V*)``), columns
  separated by white space; ``props``: the same without the words (what ``srl-eval.pl``
  reads). Arguments are **spans**; a ``C-X`` phrase continues the preceding ``X`` argument
  (one discontinuous argument, as ``srl-eval.pl`` merges it; a ``C-X`` with no ``X`` before it
  is an ``X``). Brackets must be well formed: every opened phrase closed, no phrase inside
  another of the same column.

``conllu`` and ``conll09`` are **head** mode (``eval09.pl``), ``conll05`` and ``props`` span
mode (``srl-eval.pl``). A cell ``A|B`` holds two roles (split as ``eval09.pl`` does).
Reading is vectorised (polars over whole columns); every problem raises one
:class:`InputError` naming the file, the 1-based line and what was expected.
"""

from __future__ import annotations

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
    _comment_fields,
    _first_bad,
    check_utf8,
    file_head,
    positions_in_sentences,
    read_lines,
    sentence_table,
)
from sysdiff.schemas.formats.stable import StableFile, after_blank_line, opened, without_bom

FORMATS = ("conllu", "conll09", "conll05", "props")
#: The argument mode of each format: roles on head words, or on spans.
MODES = {"conllu": "head", "conll09": "head", "conll05": "span", "props": "span"}
#: Columns before the argument columns.
BASE = {"conllu": 11, "conll09": 14, "conll05": 2, "props": 1}
#: (form, pos, head, predicate) column of each format (None: the format has none).
FIELDS = {"conllu": (1, 4, 6, 10), "conll09": (1, 5, 8, 13), "conll05": (0, None, None, 1),
          "props": (None, None, None, 0)}
CONLLU_COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS",
                  "MISC")
#: The reader's rows. Token ids, heads and argument positions are 1-based word ids.
TOKEN_COLUMNS = {"sent": pl.Int32, "id": pl.Int32, "form": pl.String, "pos": pl.String,
                 "head": pl.Int32, "line": pl.Int32}
PRED_COLUMNS = {"sent": pl.Int32, "pred": pl.Int32, "roleset": pl.String, "sense": pl.String,
                "sense_key": pl.String, "pos": pl.String, "line": pl.Int32}
ARG_COLUMNS = {"sent": pl.Int32, "pred": pl.Int32, "start": pl.Int32, "end": pl.Int32,
               "role": pl.String, "pieces": pl.String, "line": pl.Int32}
EXPECTED = ("SRL columns: CoNLL-U with a predicate column and one argument column per "
            "predicate (Universal PropBank), CoNLL-2009 (ID FORM ... PRED APRED1..n), or "
            "CoNLL-2005 props (word, target verb, one Start-End column per predicate)")
#: A Start-End cell: opening brackets, the star, closing brackets (a closing one may repeat
#: the type, as in CoNLL-2004).
SE_CELL = r"^((?:\([^*()\s]+)*)\*((?:[^*()\s]*\))*)$"
EMPTY = ("_", "-")


@dataclass(frozen=True)
class SrlChunk:
    """Whole sentences of an SRL file: tokens, sentences (the ``sents`` table's columns),
    predicates and arguments, numbered as in the file."""

    fmt: str
    tokens: pl.DataFrame
    sents: pl.DataFrame
    preds: pl.DataFrame
    args: pl.DataFrame

    @property
    def words(self) -> pl.DataFrame:
        """The tokens as :class:`~sysdiff.schemas.formats.conllu.WordCheck` reads them."""
        return self.tokens


# ------------------------------------------------------------------------------ detection


def _first_lines(data: bytes, n: int = 200) -> list[tuple[int, str]]:
    """The first non-blank lines (number, text), comments included."""
    out = []
    for k, raw in enumerate(data[:1 << 20].split(b"\n", 4 * n), start=1):
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        if text.strip():
            out.append((k, text))
            if len(out) >= n:
                break
    return out


def detect_srl_format(path: str | Path, data: bytes) -> str:
    """The format of an SRL file from its first token line (and the comments before it)."""
    head = bytes(data[:1 << 20])
    check_utf8(path, head if len(head) < 1 << 20 else head[:head.rfind(b"\n") + 1])
    lines = _first_lines(head)
    tokens = [(k, t) for k, t in lines if not t.startswith("#")]
    if not tokens:
        raise InputError(f"no token lines (only comments); expected {EXPECTED}", path)
    line, text = tokens[0]
    fields = text.split("\t")
    if len(fields) >= 11 and fields[0].isdigit() and fields[6].isdigit():
        return "conllu"
    if len(fields) >= 14 and fields[0].isdigit() and (fields[8].isdigit() or fields[8] == "_"):
        return "conll09"
    if len(fields) >= 10 and fields[0].isdigit():
        raise InputError(f"line has {len(fields)} tab-separated columns; expected at least 11 "
                         "(CoNLL-U, the predicate column, one argument column per predicate) "
                         "or 14 (CoNLL-2009)", path, line)
    if len(tokens) < len(lines):
        raise InputError("comment lines in a CoNLL-2005 props file (its first column is a "
                         f"word or a verb); expected {EXPECTED}", path, lines[0][0])
    ws = text.split()
    if len(fields) == 1 and len(ws) >= 10 and ws[0].isdigit():
        raise InputError("columns are separated by spaces, not tabs; expected tab-separated "
                         "CoNLL-U or CoNLL-2009 columns", path, line)
    if len(ws) == 1 or "*" in ws[1]:
        return "props"
    if len(ws) == 2 or "*" in ws[2]:
        return "conll05"
    raise InputError(f"line has {len(ws)} columns and no Start-End tag ('*', '(A0*') where "
                     f"one is expected; expected {EXPECTED}", path, line)


# ------------------------------------------------------------------------------ reading


def _sentences(lines: pl.DataFrame, fmt: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(token rows, comment rows), each with ``sent`` (0-based in the chunk)."""
    text = pl.col("text")
    blank = lines.select(text.is_null() | (text.str.strip_chars() == "")).to_series()
    blank = blank.to_numpy()
    if fmt in ("conllu", "conll09"):
        comment = lines.select(text.str.starts_with("#").fill_null(False)).to_series()
        comment = comment.to_numpy() & ~blank
    else:
        comment = np.zeros(blank.size, dtype=bool)
    start = ~blank
    start[1:] &= blank[:-1]
    rows = lines.with_columns(sent=pl.Series(np.cumsum(start, dtype=np.int32) - 1))
    comments = rows.filter(pl.Series(comment)).select("sent", "line", "text")
    comments = comments.with_columns(_comment_fields(pl.col("text")))
    return rows.filter(pl.Series(~blank & ~comment)), comments


def _fields(fmt: str) -> pl.Expr:
    """A token line's columns as a list: tabs (CoNLL-U, CoNLL-2009) or white space runs."""
    if fmt in ("conllu", "conll09"):
        return pl.col("text").str.split("\t")
    return pl.col("text").str.extract_all(r"\S+")


def _check_columns(path: str | Path, fmt: str, toks: pl.DataFrame, comments: pl.DataFrame
                   ) -> pl.DataFrame:
    """``n_preds`` of each token's sentence; a line without the sentence's number of columns
    (base columns, one per predicate) is an error naming it."""
    base = BASE[fmt]
    pred_col = FIELDS[fmt][3]
    short = toks.filter(pl.col("n") <= pred_col)
    if short.height:
        r = short.row(0, named=True)
        if fmt in ("conllu", "conll09") and r["n"] == 1 and len(r["text"].split()) > base - 2:
            raise InputError("columns are separated by spaces, not tabs; expected "
                             f"tab-separated columns: {_layout(fmt)}", path, r["line"])
        raise InputError(f"line has {r['n']} columns; expected at least {base}: "
                         f"{_layout(fmt)}", path, r["line"])
    toks = toks.with_columns(
        is_pred=~pl.col("f").list.get(pred_col).is_in(EMPTY))
    toks = toks.with_columns(n_preds=pl.col("is_pred").sum().over("sent").cast(pl.Int32))
    want = pl.col("n_preds") + base
    ok = pl.col("n") == want
    if fmt == "conllu":  # UP 1.0: a sentence without predicates ends with one empty column
        ok = ok | ((pl.col("n_preds") == 0) & (pl.col("n") == base + 1)
                   & (pl.col("f").list.last() == ""))
    bad = toks.filter(~ok)
    if bad.height:
        r = bad.row(0, named=True)
        if fmt in ("conllu", "conll09") and r["n"] == 1 and len(r["text"].split()) > 1:
            raise InputError("columns are separated by spaces, not tabs; expected "
                             f"tab-separated columns: {_layout(fmt)}", path, r["line"])
        raise InputError(f"line has {r['n']} columns; expected {r['n_preds'] + base}: "
                         f"{_layout(fmt)} ({r['n_preds']} predicate(s) in this sentence)",
                         path, r["line"])
    _check_global_columns(path, fmt, comments)
    return toks


def _layout(fmt: str) -> str:
    return {"conllu": "the 10 CoNLL-U columns, the predicate column and one argument column "
                      "per predicate",
            "conll09": "the 14 CoNLL-2009 columns (ID ... PRED) and one APRED column per "
                       "predicate",
            "conll05": "the word, the target verb and one Start-End column per predicate",
            "props": "the target verb and one Start-End column per predicate"}[fmt]


def _check_global_columns(path: str | Path, fmt: str, comments: pl.DataFrame) -> None:
    """A CoNLL-U Plus ``# global.columns`` line names the CoNLL-U columns, then the
    predicate column."""
    if fmt != "conllu" or comments.is_empty():
        return
    found = comments.filter(pl.col("key") == "global.columns")
    if found.is_empty():
        return
    names = (found["value"][0] or "").split()
    if tuple(names[:10]) != CONLLU_COLUMNS or len(names) < 11:
        raise InputError(f"global.columns = {' '.join(names)}; expected the 10 CoNLL-U "
                         "columns, then the predicate column (e.g. UP:PRED) and the argument "
                         "columns", path, int(found["line"][0]))


def _check_ids(path: str | Path, fmt: str, toks: pl.DataFrame) -> pl.DataFrame:
    """CoNLL-U and CoNLL-2009 IDs run 1, 2, 3, ... in each sentence (CoNLL-U multiword
    ranges and empty nodes are skipped: they are not words); HEAD is ``_`` or 0..n."""
    if fmt not in ("conllu", "conll09"):
        return toks.with_columns(id=positions_in_sentences(toks["sent"]),
                                 head=pl.lit(None, pl.Int32))
    tid = pl.col("f").list.get(0)
    if fmt == "conllu":
        toks = toks.filter(~tid.str.contains(r"^[0-9]+[-.][0-9]+$"))
    toks = toks.with_columns(id=tid.cast(pl.Int32, strict=False))
    _first_bad(path, toks, pl.col("id").is_null(),
               lambda r: f"ID '{r['f'][0]}' is not an integer; expected 1, 2, 3, ... in each "
               "sentence")
    expected = positions_in_sentences(toks["sent"])
    bad = toks["id"] != expected
    if bad.any():
        k = int(bad.arg_true()[0])
        r, want = toks.row(k, named=True), int(expected[k])
        what = "duplicate word ID" if r["id"] < want else "skipped word ID"
        raise InputError(f"{what}: found {r['id']}, expected {want} (IDs run 1, 2, 3, ... "
                         "in each sentence)", path, r["line"])
    head = pl.col("f").list.get(FIELDS[fmt][2])
    toks = toks.with_columns(head=pl.when(head == "_").then(None).otherwise(
        head.cast(pl.Int32, strict=False)), _h=head)
    n_words = pl.col("id").max().over("sent")
    _first_bad(path, toks, pl.col("head").is_null() & (pl.col("_h") != "_"),
               lambda r: f"HEAD '{r['_h']}' is not an integer; expected 0 (root) or a word ID")
    _first_bad(path, toks.with_columns(_n=n_words),
               (pl.col("head") < 0) | (pl.col("head") > pl.col("_n")),
               lambda r: f"HEAD {r['head']} is out of range; the sentence has {r['_n']} words")
    return toks.drop("_h")


def _empty_columns(path: str | Path, fmt: str, toks: pl.DataFrame) -> None:
    """No empty column (tab-separated formats), except UP 1.0's trailing one."""
    if fmt not in ("conllu", "conll09"):
        return
    cells = pl.col("f").list.slice(0, pl.col("n_preds") + BASE[fmt])
    _first_bad(path, toks, cells.list.eval(pl.element() == "").list.any(),
               lambda r: "empty column; expected a value or '_' in every column")


def _predicates(fmt: str, toks: pl.DataFrame) -> pl.DataFrame:
    """The predicates: token, roleset (the PRED or target column as written), the sense
    ``eval09.pl`` compares (after the dot of ``lemma.sense``, else the whole) and its key
    (numeric senses without leading zeros; span mode: the verb itself), PPOS."""
    form_col, pos_col, _, pred_col = FIELDS[fmt]
    roleset = pl.col("f").list.get(pred_col)
    preds = toks.filter(pl.col("is_pred")).select(
        "sent", pred=pl.col("id"), roleset=roleset,
        pos=pl.col("f").list.get(pos_col) if pos_col is not None else pl.lit(None, pl.String),
        line="line")
    if MODES[fmt] == "span":
        return preds.with_columns(sense=pl.lit(None, pl.String), sense_key=pl.col("roleset"))
    sense = pl.when(pl.col("roleset").str.contains(r"^[^.]+\.[^.]+$")).then(
        pl.col("roleset").str.extract(r"\.([^.]+)$", 1)).otherwise(pl.col("roleset"))
    numeric = pl.col("sense").str.contains(r"^[0-9]+$")
    return preds.with_columns(sense=sense).with_columns(sense_key=pl.when(numeric).then(
        pl.col("sense").str.replace(r"^0+(.)", "$1")).otherwise(pl.col("sense")))


def _cells(fmt: str, toks: pl.DataFrame, preds: pl.DataFrame) -> pl.DataFrame:
    """The filled argument cells: sent, the token (``id``, ``line``), the predicate's token
    (``pred``) and the cell's text, in (sent, column, token) order."""
    base = BASE[fmt]
    blank = "*" if MODES[fmt] == "span" else "_"
    cells = (toks.filter(pl.col("n_preds") > 0)
             .select("sent", "id", "line", cell=pl.col("f").list.slice(base, pl.col("n_preds")))
             .with_columns(k=pl.int_ranges(0, pl.col("cell").list.len(), dtype=pl.Int32))
             .explode("cell", "k"))
    cells = cells.filter((pl.col("cell") != blank) & ~((pl.col("cell") == "-")
                                                       & pl.lit(blank == "_")))
    order = preds.select("sent", "pred", k=(pl.col("pred").cum_count().over("sent") - 1)
                         .cast(pl.Int32))
    return cells.join(order, on=["sent", "k"], how="left").sort("sent", "k", "id")


def _head_arguments(fmt: str, cells: pl.DataFrame) -> pl.DataFrame:
    """Head mode: one argument per (predicate, head word, role); ``A|B`` is two roles
    (``eval09.pl`` splits and deduplicates a cell); ``V`` in CoNLL-U marks the predicate
    itself and is no argument."""
    args = (cells.with_columns(role=pl.col("cell").str.split("|")).explode("role")
            .with_columns(pl.col("role").str.strip_chars())
            .filter(pl.col("role") != ""))
    if fmt == "conllu":
        args = args.filter(pl.col("role") != "V")
    args = args.unique(["sent", "pred", "id", "role"], keep="first", maintain_order=True)
    return args.select("sent", "pred", start="id", end="id", role="role",
                       pieces=pl.lit(None, pl.String), line="line").sort(
        "sent", "pred", "start", "role")


def _span_arguments(path: str | Path, cells: pl.DataFrame) -> pl.DataFrame:
    """Span mode: the Start-End phrases of every column, checked well formed, with
    ``C-X`` phrases merged into the preceding ``X`` argument (``srl-eval.pl``)."""
    parts = cells.with_columns(m=pl.col("cell").str.extract_groups(SE_CELL))
    _first_bad(path, parts, pl.col("m").struct.field("1").is_null(),
               lambda r: f"'{r['cell']}' is not a Start-End tag; expected '*', '(TYPE*', "
               "'*)' or '(TYPE*)'")
    parts = parts.with_columns(
        opens=pl.col("m").struct.field("1").str.extract_all(r"\(([^*()\s]+)"),
        closes=pl.col("m").struct.field("2").str.extract_all(r"[^*()\s]*\)"))
    parts = parts.with_columns(o=pl.col("opens").list.len().cast(pl.Int32),
                               c=pl.col("closes").list.len().cast(pl.Int32))
    _first_bad(path, parts, (pl.col("o") > 1) | (pl.col("c") > 1),
               lambda r: f"'{r['cell']}' opens or closes more than one phrase; expected "
               "disjoint arguments (no phrase inside another of the same column)")
    col = ["sent", "k"]
    parts = parts.with_columns(after=(pl.col("o") - pl.col("c")).cum_sum().over(col))
    parts = parts.with_columns(before=pl.col("after") - pl.col("o") + pl.col("c"))
    _first_bad(path, parts, (pl.col("before") + pl.col("o")) > 1,
               lambda r: f"'{r['cell']}' opens a phrase inside another one of the same "
               "column; expected disjoint arguments (each phrase closed before the next)")
    _first_bad(path, parts, (pl.col("before") + pl.col("o") - pl.col("c")) < 0,
               lambda r: f"'{r['cell']}' closes a phrase that was never opened; expected "
               "'(TYPE*' before '*)'")
    last = parts.group_by(col, maintain_order=True).agg(pl.col("after").last(),
                                                         pl.col("line").last())
    unclosed = last.filter(pl.col("after") != 0)
    if unclosed.height:
        r = unclosed.row(0, named=True)
        opened = parts.filter((pl.col("sent") == r["sent"]) & (pl.col("k") == r["k"])
                              & (pl.col("o") > 0)).row(-1, named=True)
        raise InputError(f"'{opened['cell']}' opens a phrase that is never closed; expected "
                         "'*)' on a later word of the sentence", path, opened["line"])
    opens = parts.filter(pl.col("o") > 0).select(
        "sent", "k", "pred", start="id", line="line",
        type=pl.col("opens").list.first().str.slice(1))
    closes = parts.filter(pl.col("c") > 0).select(
        end="id", _t=pl.col("closes").list.first().str.strip_suffix(")"), _l="line",
        _cell="cell")
    phrases = pl.concat([opens, closes], how="horizontal")
    _first_bad(path, phrases.with_columns(line="_l"),
               (pl.col("_t") != "") & (pl.col("_t") != pl.col("type")),
               lambda r: f"'{r['_cell']}' closes a '{r['_t']}' phrase where '{r['type']}' is "
               "open; expected the type of the open phrase (or none)")
    return merge_continuations(phrases.drop("_t", "_l", "_cell"))


def merge_continuations(phrases: pl.DataFrame) -> pl.DataFrame:
    """``srl-eval.pl``'s arguments from the phrases of each column (sent, k, pred, start,
    end, type, line; sorted by start): a ``C-X`` phrase joins the last ``X`` argument
    started before it (a ``C-X`` with none becomes an ``X`` argument); an argument spans
    its first to last piece, ``pieces`` lists them (``3-5,8-9``)."""
    is_c = pl.col("type").str.starts_with("C-")
    base = pl.when(is_c).then(pl.col("type").str.slice(2)).otherwise(pl.col("type"))
    group = ["sent", "k", "base"]
    phrases = phrases.with_columns(base=base, is_c=is_c).with_columns(
        creates=~pl.col("is_c") | (pl.int_range(pl.len()).over(group) == 0))
    phrases = phrases.with_columns(arg=pl.col("creates").cum_sum().over(group))
    piece = pl.format("{}-{}", "start", "end")
    return (phrases.group_by([*group, "arg"], maintain_order=True)
            .agg(pl.col("pred").first(), pl.col("start").min(), pl.col("end").max(),
                 pl.col("line").first(), pieces=piece.str.join(","))
            .select("sent", "pred", "start", "end", role="base", pieces="pieces", line="line")
            .sort("sent", "pred", "start"))


def parse_chunk(path: str | Path, data: bytes, fmt: str, sent_base: int = 0,
                doc_base: int | None = None) -> tuple[SrlChunk | None, int]:
    """One chunk of whole sentences (None when it holds no token line) and its number of
    lines; lines numbered from 1, sentences from 0."""
    try:
        lines = read_lines(bytes(data))
    except pl.exceptions.PolarsError:
        check_utf8(path, bytes(data))
        raise
    lines = lines.with_columns(pl.col("text").str.strip_suffix("\r"))
    toks, comments = _sentences(lines, fmt)
    if toks.is_empty():
        if comments.height:
            raise InputError(f"no token lines after the comments; expected {EXPECTED}", path,
                             int(comments["line"][0]))
        return None, lines.height
    toks = toks.with_columns(f=_fields(fmt)).with_columns(n=pl.col("f").list.len())
    toks = _check_columns(path, fmt, toks, comments)
    _empty_columns(path, fmt, toks)
    toks = _check_ids(path, fmt, toks)
    lonely = comments.filter(~pl.col("sent").is_in(toks["sent"].unique().implode()))
    if lonely.height:
        raise InputError("sentence has no words (only comments); expected token lines after "
                         "the comments", path, int(lonely["line"][0]))
    preds = _predicates(fmt, toks)
    cells = _cells(fmt, toks, preds)
    args = (_head_arguments(fmt, cells) if MODES[fmt] == "head"
            else _span_arguments(path, cells))
    form_col, pos_col, _, _ = FIELDS[fmt]
    tokens = toks.select(
        "sent", "id",
        form=pl.col("f").list.get(form_col) if form_col is not None else pl.lit(None, pl.String),
        pos=pl.col("f").list.get(pos_col) if pos_col is not None else pl.lit(None, pl.String),
        head="head", line="line")
    sents = sentence_table(comments, tokens.with_columns(kind=pl.lit(0, pl.Int8)), sent_base,
                           doc_base)
    return SrlChunk(fmt, tokens.cast(TOKEN_COLUMNS), sents,
                    preds.select(list(PRED_COLUMNS)).cast(PRED_COLUMNS),
                    args.select(list(ARG_COLUMNS)).cast(ARG_COLUMNS)), lines.height


def iter_srl(path: str | Path | StableFile, fmt: str | None = None,
             chunk_bytes: int | None = None, hasher: Hasher | None = None
             ) -> Iterator[SrlChunk]:
    """Read and validate an SRL file in chunks of whole sentences (about ``chunk_bytes`` of
    text each); sentence, document and line numbers are the file's. The file is read once,
    through one descriptor (``path`` may be a :class:`StableFile` already open: its
    ``sha256`` and ``stamp`` then describe what was read); ``hasher`` is fed every byte."""
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}",
                         getattr(path, "path", path))
    with opened(path) as f:
        path = f.path
        fmt = fmt or detect_srl_format(path, file_head(path, f))
        line = sent = 0
        doc: int | None = None
        doc_id: str | None = None
        first = True
        for text in f.chunks(chunk_bytes or CHUNK_BYTES, after_blank_line):
            if hasher is not None:
                hasher.update(text)
            if first:
                text, first = without_bom(text), False
            try:
                _check_text(path, text)
                chunk, n_lines = parse_chunk(path, text, fmt, sent, doc)
            except InputError as e:
                raise InputError(e.message, e.path, e.line and e.line + line) from None
            if chunk is not None:
                shift = [pl.col("line") + line, pl.col("sent") + sent]
                sents = chunk.sents.with_columns(
                    *shift, pl.col("doc_id").fill_null(pl.lit(doc_id, pl.String)))
                yield SrlChunk(fmt, chunk.tokens.with_columns(shift), sents.cast(SENT_COLUMNS),
                               chunk.preds.with_columns(shift), chunk.args.with_columns(shift))
                sent += sents.height
                doc, doc_id = int(sents["doc"][-1]), sents["doc_id"][-1]
            line += n_lines


CHUNK_BYTES = 32 << 20


def read_srl(path: str | Path, fmt: str | None = None, chunk_bytes: int | None = None
             ) -> SrlChunk:
    """A whole SRL file (see :func:`iter_srl`)."""
    chunks = list(iter_srl(path, fmt, chunk_bytes))
    if not chunks:
        raise InputError(f"no token lines; expected {EXPECTED}", path)
    return SrlChunk(chunks[0].fmt, *(pl.concat([getattr(c, name) for c in chunks])
                                     for name in ("tokens", "sents", "preds", "args")))


def mode_of(fmt: str) -> str:
    """``head`` or ``span``: how a format gives its arguments."""
    return MODES[fmt]


__all__ = ["FORMATS", "MODES", "SrlChunk", "detect_srl_format", "iter_srl", "read_srl",
           "merge_continuations", "mode_of"]
