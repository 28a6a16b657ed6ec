"""Coreference inputs: readers, validation and the Arrow schemas of the coref tables.

Readers return one row per mention (duplicates within an entity merged) with the columns of
``TABLES["mentions"]`` minus ``corpus``/``system``:

- ``doc`` (Utf8): CoNLL-2012 ``#begin document`` name (without parentheses), CorefUD
  ``newdoc id``, jsonlines ``doc_key``; ``part`` (Int32): CoNLL-2012 part number, else 0.
- ``start``/``end`` (Int32, inclusive): token positions counted from 0 within (doc, part).
- ``entity`` (Utf8): the entity id as written in the file (``12``, ``e5``, cluster index).
- ``mtype`` (Utf8): METRICS 2.1 mention type. A multi-token mention is ``NOUN`` (whether or
  not the file has a POS column: a structural fact); a single token takes its POS (``NN*``,
  ``NOUN``, ``PROPN`` -> ``NOUN``; UD ``PRON`` -> ``PRP``/``PRP$``), ``UNKNOWN`` without POS.
- ``sent`` (Int32): sentence index of the mention start within (doc, part).
- ``head_pos`` (Utf8): POS of the head token (single-token mentions; CorefUD: the annotated
  head), else null. ``word`` (Utf8): lower-cased form of a single-token mention, else null.

Every bad input raises :class:`schemas.errors.InputError` with file, line and document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError

MENTION_COLUMNS = ["doc", "part", "start", "end", "entity", "mtype", "sent", "head_pos", "word"]
DOC_TOKEN_COLUMNS = ["doc", "part", "n_tokens", "line"]

_BRACKET = r"\(\d+\)|\(\d+|\d+\)"
_FIELD_OK = r"^(?:\(\d+\)|\(\d+|\d+\)|\|)+$"
_NONE = ["", "-", "_"]
_BEGIN_RE = re.compile(r"^#\s*begin document\s*(.*?)\s*$")
_NAME_RE = re.compile(r"^\((.*)\);?\s*(?:part\s+(\d+))?\s*;?$")
_NAME_PLAIN_RE = re.compile(r"^(.*?)\s*(?:;\s*part\s+(\d+))?\s*;?$")

_KIND_SINGLE, _KIND_OPEN, _KIND_CLOSE = 0, 1, 2


# --------------------------------------------------------------------------- public API


def read_coref(path: str | Path, fmt: str | None = None, text: str | None = None) -> pl.DataFrame:
    """Mentions of a coreference file (columns ``MENTION_COLUMNS``, document order)."""
    return read_coref_with_tokens(path, fmt, text)[0]


def read_coref_tokens(
    path: str | Path, fmt: str | None = None, text: str | None = None
) -> pl.DataFrame:
    """Per (doc, part): token count and the 1-based line where the document begins."""
    return read_coref_with_tokens(path, fmt, text)[1]


def read_coref_with_tokens(
    path: str | Path, fmt: str | None = None, text: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(mentions, tokens) of one file; ``text`` replaces reading ``path`` (used in messages)."""
    data = None
    if text is None:
        data = read_bytes(path)
        text = decode_text(data, path)
    fmt = fmt or detect_coref_format(text, path)
    parsers = {"conll2012": _parse_conll2012, "corefud": _parse_corefud, "jsonlines": _parse_jsonl}
    if fmt not in parsers:
        raise InputError(f"unknown coreference format {fmt!r} (expected one of {list(parsers)})",
                         path)
    if fmt == "conll2012":
        return _parse_conll2012(text, path, data)
    return parsers[fmt](text, path)


def detect_coref_format(text: str, path: str | Path) -> str:
    """``jsonlines`` if the first non-blank line is a JSON object, ``conll2012`` if a line
    starts with ``#begin document``, ``corefud`` for CoNLL-U (``# newdoc``/``Entity=``)."""
    head = text[:200_000]
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    if first.startswith("{"):
        return "jsonlines"
    if re.search(r"^#\s*begin document", head, re.M):
        return "conll2012"
    if re.search(r"^# (newdoc|sent_id|global\.Entity)", head, re.M) or "Entity=" in head:
        return "corefud"
    raise InputError("cannot tell the coreference format: expected '#begin document' "
                     "(CoNLL-2012), CoNLL-U with Entity= (CorefUD) or JSON lines", path, 1)


def validate_response(
    key: pl.DataFrame, resp: pl.DataFrame, key_path: str | Path, resp_path: str | Path
) -> None:
    """Raise InputError unless the response has the key's documents and token counts.

    ``key``/``resp`` are token tables (``read_coref_tokens``); mention tables are accepted
    too, and then only the documents that hold mentions are compared.
    """
    cols = ["doc", "part"]
    has_counts = "n_tokens" in key.columns and "n_tokens" in resp.columns
    kd = key.select(cols + (["n_tokens", "line"] if has_counts else [])).unique(cols)
    rd = resp.select(cols + (["n_tokens", "line"] if has_counts else [])).unique(cols)
    missing = kd.join(rd, on=cols, how="anti").sort(cols)
    if missing.height:
        row = missing.row(0, named=True)
        raise InputError(f"document {_docname(row)} of this key is missing from the response "
                         f"{resp_path} ({missing.height} key document(s) missing)", key_path,
                         row.get("line"))
    extra = rd.join(kd, on=cols, how="anti").sort(cols)
    if extra.height:
        row = extra.row(0, named=True)
        raise InputError(f"document {_docname(row)} is not in the key {key_path}",
                         resp_path, row.get("line"))
    if has_counts:
        both = rd.join(kd, on=cols, suffix="_key").filter(pl.col("n_tokens") != pl.col(
            "n_tokens_key")).sort("line")
        if both.height:
            row = both.row(0, named=True)
            raise InputError(f"document {_docname(row)} has {row['n_tokens']} tokens, the key "
                             f"has {row['n_tokens_key']} ({key_path}:{row['line_key']})",
                             resp_path, row["line"])


# ----------------------------------------------------------------------------- helpers


def _docname(row: dict) -> str:
    return f"'{row['doc']}' part {row['part']}"


def read_text(path: str | Path) -> str:
    """A file's text; missing, unreadable or non-UTF-8 files are InputErrors."""
    return decode_text(read_bytes(path), path)


def read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as e:
        raise InputError("file not found", path) from e
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror}", path) from e


def decode_text(data: bytes, path: str | Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text ({e.reason})", path, line) from e


def _lines(text: str) -> pl.DataFrame:
    """One row per physical line: ``line`` (1-based) and ``text`` (without CR)."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return pl.DataFrame({"text": pl.Series(parts, dtype=pl.Utf8)}).with_columns(
        line=pl.int_range(1, pl.len() + 1, dtype=pl.Int32),
        text=pl.col("text").str.strip_suffix("\r"),
    )


def _first_error(df: pl.DataFrame, path: str | Path, message) -> None:
    """Raise for the first row of ``df`` (by line) with ``message(row)``, if any."""
    if df.height:
        row = df.sort("line").row(0, named=True)
        raise InputError(message(row), path, row["line"])


def _bracket_kind(b: pl.Expr) -> pl.Expr:
    """One-token mention ``(x)``, opening ``(x`` or closing ``x)`` bracket."""
    opens = b.str.starts_with("(")
    return (pl.when(opens & b.str.ends_with(")")).then(_KIND_SINGLE)
            .when(opens).then(_KIND_OPEN).otherwise(_KIND_CLOSE))


def _rank_in_run(col: str) -> pl.Expr:
    """0, 1, 2, ... within each run of equal consecutive values of ``col``."""
    idx = pl.int_range(pl.len())
    new = pl.col(col) != pl.col(col).shift(1)
    return idx - pl.when(new.fill_null(True)).then(idx).forward_fill()


def mention_type(single: pl.Expr, pos: pl.Expr, poss: pl.Expr | None = None) -> pl.Expr:
    """METRICS 2.1 mention type from span length and the POS of a single token."""
    poss = pl.lit(False) if poss is None else poss
    return (
        pl.when(~single).then(pl.lit("NOUN"))
        .when(pos.is_null()).then(pl.lit("UNKNOWN"))
        .when(pos.str.starts_with("NN") | pos.is_in(["NOUN", "PROPN"])).then(pl.lit("NOUN"))
        .when((pos == "PRON") & poss).then(pl.lit("PRP$"))
        .when(pos == "PRON").then(pl.lit("PRP"))
        .otherwise(pos)
    )


# ------------------------------------------------------------------ bracket matching


def _match_brackets(
    events: pl.DataFrame, docs: pl.DataFrame, path: str | Path, written_order: bool
) -> pl.DataFrame:
    """Mentions from bracket events (doc_idx, ent, kind, pos, line, ord, attrs).

    Per (document, entity) brackets nest LIFO: depth = running sum of +1/-1; an opening at
    depth d (after it) pairs with the n-th closing at depth d (before it). The brackets of
    one token apply in written order, or (``written_order=False``, as the CoNLL reference
    scorer reads them) one-token mentions first, then openings, then closings: ``42)|(42``
    is then a one-token mention, and the earlier ``(42`` stays open. Returns doc_idx, ent,
    start, end, line, attrs (the opening bracket's text).
    """
    names = docs.select("doc_idx", "doc", "part")
    ev = events.sort("doc_idx", "line", "ord" if written_order else "kind", "ord")
    singles = ev.filter(pl.col("kind") == _KIND_SINGLE).select(
        "doc_idx", "ent", start="pos", end="pos", line="line", attrs="attrs")
    oc = ev.filter(pl.col("kind") != _KIND_SINGLE)
    code = oc.select(pl.struct("doc_idx", "ent").rank("dense")).to_series().to_numpy()
    step = np.where(oc["kind"].to_numpy() == _KIND_OPEN, 1, -1)
    order = np.lexsort((np.arange(len(code)), code))       # by entity, then file order
    depth = _grouped_cumsum(step[order], code[order])
    if (depth < 0).any():
        row = oc[int(order[np.flatnonzero(depth < 0)].min())]
        _first_error(row.join(names, on="doc_idx"), path,
                     lambda r: f"closing bracket '{r['ent']})' with no open mention of entity "
                               f"{r['ent']} in document {_docname(r)}")
    # an opening at depth d (after it) pairs with the next closing at depth d (before it):
    # sorted by (entity, level, file order) they alternate open, close, open, close ...
    lev = np.empty(len(code), dtype=np.int64)
    lev[order] = np.where(step[order] == 1, depth, depth + 1)
    by_level = np.lexsort((np.arange(len(code)), lev, code))
    is_open = step[by_level] == 1
    nxt = np.r_[by_level[1:], -1]
    cl, ll = code[by_level], lev[by_level]
    same = np.r_[(cl[1:] == cl[:-1]) & (ll[1:] == ll[:-1]), False]
    closed = is_open & same & np.r_[~is_open[1:], False]
    unclosed = by_level[is_open & ~closed]
    if len(unclosed):
        _first_error(oc[np.sort(unclosed)].join(names, on="doc_idx"), path,
                     lambda r: f"mention of entity {r['ent']} opened here is never closed "
                               f"(document {_docname(r)} ends first)")
    o, c = by_level[closed], nxt[closed]
    spans = oc[o].select("doc_idx", "ent", start="pos", line="line", attrs="attrs").with_columns(
        end=oc["pos"].gather(c))
    return pl.concat([singles, spans.select(singles.columns)], how="vertical_relaxed")


def _grouped_cumsum(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` restarting at each new value of (sorted) ``groups``."""
    total = np.cumsum(values)
    first = np.r_[True, groups[1:] != groups[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(values)), 0))
    return total - (total - values)[start]


def _finish_mentions(
    spans: pl.DataFrame, tokens: pl.DataFrame, docs: pl.DataFrame, path: str | Path
) -> pl.DataFrame:
    """Merge duplicate spans, reject a span in two entities, add type/sentence/word columns.

    ``spans``: doc_idx, ent, start, end, line[, head]; ``tokens``: doc_idx, pos, sent, form,
    tag[, poss]. ``head`` is the head token position (null: single-token rule).
    """
    names = docs.select("doc_idx", "doc", "part")
    spans = spans.sort("doc_idx", "start", "end", "line")
    first = pl.col("ent").first().over("doc_idx", "start", "end")
    _first_error(
        spans.with_columns(first_ent=first).filter(pl.col("ent") != pl.col("first_ent"))
        .join(names, on="doc_idx"), path,
        lambda r: f"span {r['start']}-{r['end']} of document {_docname(r)} is in two entities "
                  f"({r['first_ent']} and {r['ent']}); a mention belongs to one entity")
    spans = spans.unique(["doc_idx", "start", "end"], keep="first", maintain_order=True)
    if "head" not in spans.columns:
        spans = spans.with_columns(head=pl.lit(None, dtype=pl.Int32))
    spans = spans.with_columns(
        head=pl.when(pl.col("start") == pl.col("end")).then(pl.col("start"))
        .otherwise(pl.col("head")).cast(pl.Int32))
    if "poss" not in tokens.columns:
        tokens = tokens.with_columns(poss=pl.lit(False))
    tok = tokens.select("doc_idx", "pos", "sent", "form", "tag", "poss")
    out = (
        spans.join(tok.select("doc_idx", start="pos", sent="sent", form="form"),
                   on=["doc_idx", "start"], how="left")
        .join(tok.select("doc_idx", head="pos", head_pos="tag", poss="poss"),
              on=["doc_idx", "head"], how="left")
        .join(names, on="doc_idx")
        .with_columns(single=pl.col("start") == pl.col("end"))
        .with_columns(
            mtype=mention_type(pl.col("single"), pl.col("head_pos"), pl.col("poss")),
            word=pl.when(pl.col("single")).then(pl.col("form").str.to_lowercase()),
        )
        .sort("doc_idx", "start", pl.col("end"), descending=[False, False, True])
    )
    return out.select(
        pl.col("doc").cast(pl.Utf8), pl.col("part").cast(pl.Int32),
        pl.col("start").cast(pl.Int32), pl.col("end").cast(pl.Int32),
        entity=pl.col("ent").cast(pl.Utf8), mtype=pl.col("mtype"),
        sent=pl.col("sent").cast(pl.Int32), head_pos=pl.col("head_pos").cast(pl.Utf8),
        word=pl.col("word").cast(pl.Utf8),
    )


def _token_table(tokens: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    counts = tokens.group_by("doc_idx").agg(n_tokens=pl.len())
    return (
        docs.join(counts, on="doc_idx", how="left")
        .sort("doc_idx")
        .select(pl.col("doc").cast(pl.Utf8), pl.col("part").cast(pl.Int32),
                pl.col("n_tokens").fill_null(0).cast(pl.Int32), pl.col("line").cast(pl.Int32))
    )


def _check_unique_docs(docs: pl.DataFrame, path: str | Path) -> None:
    dup = docs.filter(pl.int_range(pl.len()).over("doc", "part") > 0)
    _first_error(dup, path, lambda r: f"document {_docname(r)} appears twice in this file")


# --------------------------------------------------------------------------- CoNLL-2012


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


def _parse_conll2012(
    text: str, path: str | Path, data: bytes | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    lines = _split_lines(text, data)
    kind = conll_line_kinds(lines, path)
    docs = _conll_docs(lines, kind, path)
    tok, doc, pos, sent = _token_positions(kind)
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


# ------------------------------------------------------------------------------ CorefUD

_UD_BRACKET = r"\([^()]+\)|\([^()]+|[^()]+\)"


def _parse_corefud(text: str, path: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """CoNLL-U with ``Entity=`` in MISC (CorefUD 1.x bracket notation).

    Words and empty nodes are token positions (empty nodes can be zero mentions);
    multiword-token ranges are not. A discontinuous mention (``e1[1/2]``) becomes its
    bounding span. The head is the ``head`` attribute of the opening bracket (1-based within
    the span, attribute order from ``# global.Entity``, default ``eid-etype-head-other``).
    """
    lines = _lines(text)
    order = re.search(r"^#\s*global\.Entity\s*=\s*(\S+)", text, re.M)
    attr_names = (order.group(1) if order else "eid-etype-head-other").split("-")
    head_idx = attr_names.index("head") if "head" in attr_names else None
    t = pl.col("text")
    lines = lines.with_columns(
        newdoc=t.str.contains(r"^#\s*newdoc\b"),
        doc_id=t.str.extract(r"^#\s*newdoc\s+id\s*=\s*(.+?)\s*$"),
        is_tok=~t.str.starts_with("#") & (t.str.strip_chars() != ""),
        blank=t.str.strip_chars() == "",
    ).with_columns(doc_idx=pl.col("newdoc").cum_sum().cast(pl.Int32),
                   blanks=pl.col("blank").cum_sum())
    docs = (
        lines.filter(pl.col("newdoc"))
        .select("doc_idx", "line", doc=pl.col("doc_id").fill_null(""), part=pl.lit(0, pl.Int32))
    )
    if lines.filter(pl.col("is_tok") & (pl.col("doc_idx") == 0)).height:
        first_line = 1
        docs = pl.concat([pl.DataFrame({"doc_idx": [0], "line": [first_line], "doc": [""],
                                        "part": [0]}, schema=docs.schema), docs])
    _check_unique_docs(docs, path)
    tok = lines.filter(pl.col("is_tok")).with_columns(fields=t.str.split("\t"))
    _first_error(tok.filter(pl.col("fields").list.len() != 10), path,
                 lambda r: f"CoNLL-U word line has {r['text'].count(chr(9)) + 1} columns, "
                           "expected 10 (tab-separated)")
    f = pl.col("fields")
    tok = tok.with_columns(id=f.list.get(0)).filter(~pl.col("id").str.contains("-"))
    tok = tok.with_columns(
        pos=pl.int_range(pl.len(), dtype=pl.Int32).over("doc_idx"),
        sent=(pl.col("blanks").rank("dense").over("doc_idx") - 1).cast(pl.Int32),
        form=f.list.get(1),
        tag=f.list.get(3),
        poss=f.list.get(5).str.contains(r"(^|\|)Poss=Yes(\||$)"),
        ent_field=f.list.get(9).str.extract(r"(?:^|\|)Entity=([^|]*)"),
    ).with_columns(tag=pl.when(pl.col("tag").is_in(_NONE)).then(None).otherwise(pl.col("tag")))
    marked = tok.filter(pl.col("ent_field").is_not_null() & (pl.col("ent_field") != ""))
    _first_error(
        marked.filter(~pl.col("ent_field").str.contains(r"^(?:\([^()]+\)|\([^()]+|[^()]+\))+$"))
        .join(docs.select("doc_idx", "doc", "part"), on="doc_idx"), path,
        lambda r: f"bad Entity value {r['ent_field']!r} in document {_docname(r)} (expected "
                  "'(eid-...', 'eid)' or '(eid-...)' brackets)")
    events = (
        marked.select("doc_idx", "pos", "line", b=pl.col("ent_field").str.extract_all(_UD_BRACKET))
        .explode("b")
        .with_columns(ord=_rank_in_run("line"))
        .with_columns(
            kind=_bracket_kind(pl.col("b")),
            inner=pl.col("b").str.strip_chars("()"),
        )
        .with_columns(
            eid=pl.col("inner").str.extract(r"^([^-\[]+)"),
            disc=pl.col("inner").str.extract(r"^[^-\[]+\[(\d+)/\d+\]"),
            attrs=pl.col("inner"),
        )
        # parts of a discontinuous mention get distinct bracket ids, merged below
        .with_columns(ent=pl.when(pl.col("disc").is_null()).then(pl.col("eid"))
                      .otherwise(pl.col("eid") + "[" + pl.col("disc") + "]"))
    )
    spans = _match_brackets(events.select("doc_idx", "ent", "kind", "pos", "line", "ord",
                                          "attrs"), docs, path, written_order=True)
    spans = _merge_discontinuous(spans)
    if head_idx is not None:
        head = pl.col("attrs").str.split("-").list.get(head_idx, null_on_oob=True)
        spans = spans.with_columns(head=(pl.col("start") + head.cast(pl.Int32, strict=False) - 1))
        spans = spans.with_columns(head=pl.when(pl.col("head").is_between(
            pl.col("start"), pl.col("end"))).then(pl.col("head")))
    tokens = tok.select("doc_idx", "pos", "sent", "form", "tag", "poss")
    return _finish_mentions(spans, tokens, docs, path), _token_table(tokens, docs)


def _merge_discontinuous(spans: pl.DataFrame) -> pl.DataFrame:
    """Join the parts ``eid[k]`` of discontinuous mentions into their bounding span.

    Part k of the n-th discontinuous mention of an entity is the n-th ``eid[k]`` span.
    """
    disc = pl.col("ent").str.contains(r"\[\d+\]$")
    parts = spans.filter(disc).sort("doc_idx", "start", "line").with_columns(
        eid=pl.col("ent").str.replace(r"\[\d+\]$", ""),
    ).with_columns(n=pl.int_range(pl.len()).over("doc_idx", "ent"))
    merged = parts.group_by("doc_idx", "eid", "n").agg(
        start=pl.col("start").min(), end=pl.col("end").max(), line=pl.col("line").min(),
        attrs=pl.col("attrs").drop_nulls().first(),
    ).select("doc_idx", pl.col("eid").alias("ent"), "start", "end", "line", "attrs")
    return pl.concat([spans.filter(~disc), merged], how="vertical_relaxed")


# ---------------------------------------------------------------------------- jsonlines


def _parse_jsonl(text: str, path: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One JSON object per line: ``doc_key``, ``sentences`` (lists of tokens), ``clusters``
    (lists of ``[start, end]``, inclusive document token offsets); optional ``pos``."""
    doc_rows, tok_cols, span_cols = [], {k: [] for k in ("doc_idx", "pos", "sent", "form",
                                                         "tag")}, {
        k: [] for k in ("doc_idx", "ent", "start", "end", "line")}
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InputError(f"invalid JSON ({e.msg} at column {e.colno})", path, lineno) from e
        doc = _jsonl_doc(obj, path, lineno)
        idx = len(doc_rows)
        doc_rows.append({"doc_idx": idx, "line": lineno, "doc": doc["doc_key"], "part": 0})
        n = _jsonl_tokens(doc, idx, tok_cols)
        _jsonl_spans(doc, idx, n, lineno, span_cols, path)
    docs = pl.DataFrame(doc_rows, schema={"doc_idx": pl.Int32, "line": pl.Int32,
                                          "doc": pl.Utf8, "part": pl.Int32})
    _check_unique_docs(docs, path)
    tokens = pl.DataFrame(tok_cols, schema={"doc_idx": pl.Int32, "pos": pl.Int32,
                                            "sent": pl.Int32, "form": pl.Utf8, "tag": pl.Utf8})
    spans = pl.DataFrame(span_cols, schema={"doc_idx": pl.Int32, "ent": pl.Utf8,
                                            "start": pl.Int32, "end": pl.Int32,
                                            "line": pl.Int32})
    tokens = tokens.with_columns(
        tag=pl.when(pl.col("tag").is_in(_NONE)).then(None).otherwise(pl.col("tag")))
    return _finish_mentions(spans, tokens, docs, path), _token_table(tokens, docs)


def _jsonl_doc(obj, path, lineno) -> dict:
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object per line", path, lineno)
    for key in ("doc_key", "sentences", "clusters"):
        if key not in obj:
            raise InputError(f"JSON object has no {key!r} (expected doc_key, sentences, "
                             "clusters)", path, lineno)
    if not isinstance(obj["sentences"], list) or not all(
            isinstance(s, list) for s in obj["sentences"]):
        raise InputError(f"document {obj['doc_key']!r}: 'sentences' must be a list of token "
                         "lists", path, lineno)
    return obj


def _jsonl_tokens(doc: dict, idx: int, cols: dict) -> int:
    pos_tags = doc.get("pos")
    n = 0
    for si, sent in enumerate(doc["sentences"]):
        tags = pos_tags[si] if isinstance(pos_tags, list) and si < len(pos_tags) else None
        for ti, form in enumerate(sent):
            cols["doc_idx"].append(idx)
            cols["pos"].append(n)
            cols["sent"].append(si)
            cols["form"].append(str(form))
            cols["tag"].append(str(tags[ti]) if tags and ti < len(tags) else None)
            n += 1
    return n


def _jsonl_spans(doc: dict, idx: int, n: int, lineno: int, cols: dict, path) -> None:
    name = doc["doc_key"]
    if not isinstance(doc["clusters"], list):
        raise InputError(f"document {name!r}: 'clusters' must be a list", path, lineno)
    for ci, cluster in enumerate(doc["clusters"]):
        for span in cluster if isinstance(cluster, list) else [cluster]:
            ok = (isinstance(span, list) and len(span) == 2
                  and all(isinstance(x, int) for x in span))
            if not ok or not 0 <= span[0] <= span[1] < n:
                raise InputError(f"document {name!r}, cluster {ci}: bad mention {span!r} "
                                 f"(expected [start, end] with 0 <= start <= end < {n})",
                                 path, lineno)
            cols["doc_idx"].append(idx)
            cols["ent"].append(str(ci))
            cols["start"].append(span[0])
            cols["end"].append(span[1])
            cols["line"].append(lineno)
