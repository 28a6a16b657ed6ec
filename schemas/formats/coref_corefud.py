"""CorefUD coreference files: CoNLL-U with ``Entity=`` in MISC (bracket notation)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from sysdiff.schemas.formats.coref_shared import (
    _NONE,
    _bracket_kind,
    _check_unique_docs,
    _docname,
    _finish_mentions,
    _first_error,
    _match_brackets,
    _rank_in_run,
    _token_table,
)

_UD_BRACKET = r"\([^()]+\)|\([^()]+|[^()]+\)"


def _lines(text: str) -> pl.DataFrame:
    """One row per physical line: ``line`` (1-based) and ``text`` (without CR)."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return pl.DataFrame({"text": pl.Series(parts, dtype=pl.Utf8)}).with_columns(
        line=pl.int_range(1, pl.len() + 1, dtype=pl.Int32),
        text=pl.col("text").str.strip_suffix("\r"),
    )


def _parse_corefud(text: str, path: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """CoNLL-U with ``Entity=`` in MISC (CorefUD 1.x bracket notation).

    Words and empty nodes are token positions (empty nodes can be zero mentions);
    multiword-token ranges are not. A discontinuous mention (``e1[1/2]``) becomes its
    bounding span. The head is the ``head`` attribute of the opening bracket (1-based within
    the span, empty nodes counted, attribute order from ``# global.Entity``, default
    ``eid-etype-head-other``), else the first word: never the dependency tree (as udapi and
    the CorefUD scorer read it). A mention whose head is an empty node is a zero mention;
    ``zero_deps`` keeps that node's DEPS (the scorer matches zeros on them).
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
        empty=pl.col("id").str.contains(r"\."), deps=f.list.get(8),
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
        spans = _heads(spans, head_idx, docs, path)
    tokens = tok.select("doc_idx", "pos", "sent", "form", "tag", "poss", "empty", "deps")
    return _finish_mentions(spans, tokens, docs, path), _token_table(tokens, docs)


def _heads(spans: pl.DataFrame, head_idx: int, docs: pl.DataFrame, path: str | Path
           ) -> pl.DataFrame:
    """``head``: the token of the opening bracket's ``head`` attribute (1-based word of the
    mention). A value that is not a word number of the mention is an error, as in udapi."""
    raw = pl.col("attrs").str.split("-").list.get(head_idx, null_on_oob=True)
    spans = spans.with_columns(raw_head=raw, head=pl.col("start") + raw.cast(
        pl.Int32, strict=False) - 1)
    _first_error(
        spans.filter(pl.col("raw_head").is_not_null() & ~pl.col("head").is_between(
            pl.col("start"), pl.col("end")).fill_null(False))
        .join(docs.select("doc_idx", "doc", "part"), on="doc_idx"), path,
        lambda r: f"mention of entity {r['ent']} in document {_docname(r)} has head "
                  f"{r['raw_head']!r}; expected a word number from 1 to "
                  f"{r['end'] - r['start'] + 1} (its words, empty nodes included)")
    return spans.drop("raw_head")


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
