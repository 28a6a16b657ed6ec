"""What the coreference readers share: file text, bracket matching (brackets to spans), the
mention table (types, sentences, words) and the checks every format makes.

Every bad input raises :class:`schemas.errors.InputError` with file, line and document.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import read_stable, without_bom

_NONE = ["", "-", "_"]

_KIND_SINGLE, _KIND_OPEN, _KIND_CLOSE = 0, 1, 2

# ----------------------------------------------------------------------------- helpers


def _docname(row: dict) -> str:
    return f"'{row['doc']}' part {row['part']}"


def read_text(path: str | Path) -> str:
    """A file's text; missing, unreadable or non-UTF-8 files are InputErrors."""
    return decode_text(read_bytes(path), path)


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes, read once through one descriptor (:func:`read_stable`)."""
    return read_stable(path).data


def decode_text(data: bytes, path: str | Path) -> str:
    """UTF-8 text (a leading byte order mark dropped); bad bytes are an InputError."""
    data = without_bom(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text ({e.reason})", path, line) from e



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
    tag[, poss][, empty, deps]. ``head`` is the head token position (null: single-token rule
    for ``head_pos``); the output's ``head`` is it or, without one, the first token (as the
    CorefUD scorer takes it), and ``zero_deps`` the DEPS of a head that is an empty node.
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
    if "empty" not in tokens.columns:
        tokens = tokens.with_columns(empty=pl.lit(False), deps=pl.lit(None, pl.Utf8))
    tok = tokens.select("doc_idx", "pos", "sent", "form", "tag", "poss", "empty", "deps")
    out = (
        spans.join(tok.select("doc_idx", start="pos", sent="sent", form="form"),
                   on=["doc_idx", "start"], how="left")
        .join(tok.select("doc_idx", head="pos", head_pos="tag", poss="poss"),
              on=["doc_idx", "head"], how="left")
        .with_columns(head_or_first=pl.coalesce("head", "start"))
        .join(tok.filter(pl.col("empty")).select("doc_idx", head_or_first="pos",
                                                  zero_deps="deps"),
              on=["doc_idx", "head_or_first"], how="left")
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
        word=pl.col("word").cast(pl.Utf8), head=pl.col("head_or_first").cast(pl.Int32),
        zero_deps=pl.col("zero_deps").cast(pl.Utf8),
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
