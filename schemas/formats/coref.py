"""Coreference inputs: readers, validation and the Arrow schemas of the coref tables.

One module per format family parses (``coref_conll2012``, ``coref_corefud``,
``coref_jsonl``), over what they share (``coref_shared``); this module picks the format.

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
- ``head`` (Int32): the head token position: CorefUD's ``head`` attribute, else the first
  token (the CorefUD scorer's rule; CoNLL-2012 and jsonlines have no heads).
  ``zero_deps`` (Utf8): the DEPS of the head when it is an empty node (a zero mention), else
  null.

Every bad input raises :class:`schemas.errors.InputError` with file, line and document.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.coref_conll2012 import _parse_conll2012
from sysdiff.schemas.formats.coref_corefud import _parse_corefud
from sysdiff.schemas.formats.coref_jsonl import _parse_jsonl
from sysdiff.schemas.formats.coref_shared import _docname, decode_text, read_bytes
from sysdiff.schemas.formats.stable import without_bom

MENTION_COLUMNS = ["doc", "part", "start", "end", "entity", "mtype", "sent", "head_pos", "word",
                   "head", "zero_deps"]
DOC_TOKEN_COLUMNS = ["doc", "part", "n_tokens", "line"]

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
        data = without_bom(read_bytes(path))
        text = decode_text(data, path)
    text = text.removeprefix("\ufeff")
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
