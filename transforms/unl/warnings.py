"""Warnings a user should read before trusting UNL scores, merged over shards."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from sysdiff.schemas.formats.unl import (
    KNOWN_RELATIONS,
    NlSentence,
    UnlChunk,
    UnlSentence,
    chunk_from_sentences,
)
from sysdiff.transforms.unl.alignment import Alignment, _ids, _positioned, _preview, align_sentences

# --------------------------------------------------------------------------------------------
# Warnings


def warning_parts(chunk: UnlChunk, side: str, rows: np.ndarray | None = None) -> dict:
    """What :func:`unl_warnings` says about some sentences of one side (``rows`` of the
    chunk, default all), to be merged over shards by :func:`merge_warning_parts`: reader
    warnings and malformed expected sentences (``lines``: position, order, text), unknown
    relation labels (count and first occurrence) and the UW encodings (UCL/UCN nodes)."""
    sents, rels, nodes = chunk.sents, chunk.rels, chunk.nodes
    if rows is not None:
        keep = pl.Series(np.asarray(rows, np.int64)).cast(pl.Int32).implode()
        sents = sents.filter(pl.col("row").is_in(keep))
        rels = rels.filter(pl.col("row").is_in(keep))
        nodes = nodes.filter(pl.col("row").is_in(keep))
    shown = pl.coalesce("sent_id", pl.concat_str([pl.lit("#"),
                                                  (pl.col("position") + 1).cast(pl.String)]))
    lines = (sents.select("position", w="warnings").explode("w").drop_nulls("w")
             .with_columns(order=pl.int_range(pl.len()).over("position"),
                           text=pl.concat_str([pl.lit(f"{side}: "), pl.col("w")]))
             .select("position", pl.col("order").cast(pl.Int64), "text"))  # fmt: skip
    if side == "expected":
        bad = sents.filter(pl.col("error").is_not_null()).select(
            "position", order=pl.lit(1 << 40, pl.Int64), text=pl.concat_str([
                pl.lit("expected sentence "), shown, pl.lit(" (line "),
                pl.coalesce("error_line", "line").cast(pl.String),
                pl.lit(") is malformed: "), pl.col("error")]))  # fmt: skip
        lines = pl.concat([lines, bad])
    labels = (rels.filter(~pl.col("label").is_in(sorted(KNOWN_RELATIONS)))
              .join(sents.select("row", "position", shown.alias("shown")), on="row")
              .select("label", "position", "r", desc=pl.concat_str([
                  pl.col("shown"), pl.lit(" line "), pl.col("line").cast(pl.String)])))
    kinds = pl.concat([rels["s_kind"], rels["t_kind"], nodes["kind"]])
    return {"side": side, "lines": lines, "labels": labels,
            "ucl": int((kinds == "ucl").sum()), "ucn": int((kinds == "uw").sum())}


def merge_warning_parts(parts: list[dict]) -> dict:
    """The parts of all shards of one side as one."""
    lines = pl.concat([p["lines"] for p in parts]).sort("position", "order")
    labels = (pl.concat([p["labels"] for p in parts]).sort("position", "r")
              .group_by("label", maintain_order=True)
              .agg(n=pl.len(), position=pl.first("position"), r=pl.first("r"),
                   desc=pl.first("desc")))  # fmt: skip
    labels = labels.select("label", "position", "r", "desc", "n")
    return {"side": parts[0]["side"], "lines": lines,
            "labels": labels,
            "ucl": sum(p["ucl"] for p in parts), "ucn": sum(p["ucn"] for p in parts)}


def warning_lines(al: Alignment, actual_ids: Sequence[str | None] | pl.Series,
                  expected: dict, actual: dict) -> list[str]:
    """Things a user should know before trusting the scores: alignment problems, actual
    sentences with no expected partner, malformed expected sentences, reader warnings,
    unknown relation labels and different UW encodings (numeric UCL ids vs readable UCN)."""
    out = list(al.notes)
    n = al.unmatched_actual.size
    if n:
        ids = pl.Series(actual_ids, dtype=pl.String).gather(al.unmatched_actual[:6]).to_list()
        shown = [x or f"#{k + 1}" for x, k in zip(ids, al.unmatched_actual[:6].tolist(),
                                                   strict=True)]  # fmt: skip
        out.append(f"{n} actual sentence(s) have no expected partner (ignored): "
                   + _preview(shown, total=n))  # fmt: skip
    out += expected["lines"]["text"].to_list() + actual["lines"]["text"].to_list()
    for part in (expected, actual):
        for lab, n_lab, desc in part["labels"].sort("label").select("label", "n", "desc").rows():
            out.append(f"{part['side']}: unknown relation label {lab!r} ({n_lab}x, "
                       f"first in sentence {desc})")
    return out + _encoding_warnings((expected["ucl"], expected["ucn"]),
                                    (actual["ucl"], actual["ucn"]))


def _encoding_warnings(e: tuple[int, int], a: tuple[int, int]) -> list[str]:
    (eu, en), (au, an) = e, a

    def name(ucl: int, ucn: int) -> str | None:
        if ucl + ucn == 0:
            return None
        return "numeric UCL ids" if ucl > ucn else "readable UCN UWs"

    ne, na = name(eu, en), name(au, an)
    if ne and na and ne != na:
        return [
            f"UW encodings differ: expected uses {ne} ({eu} UCL / {en} UCN), actual uses {na} "
            f"({au} UCL / {an} UCN); UWs will not match (near 100% discrepancy)"
        ]
    return []


def unl_warnings(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    align: str = "auto",
) -> list[str]:
    """:func:`warning_lines` of two lists of parsed sentences."""
    al = align_sentences(expected, actual, align)
    parts = [merge_warning_parts([warning_parts(_positioned(chunk_from_sentences(xs)), side)])
             for side, xs in (("expected", expected), ("actual", actual))]
    return warning_lines(al, _ids(actual), parts[0], parts[1])
