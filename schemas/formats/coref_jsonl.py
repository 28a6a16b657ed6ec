"""JSON lines coreference files: one document per line (``doc_key``, ``sentences``,
``clusters``)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.coref_shared import (
    _NONE,
    _check_unique_docs,
    _finish_mentions,
    _token_table,
)


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
