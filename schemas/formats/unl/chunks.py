"""Sentences in columns: drafts or parsed sentences into a :class:`UnlChunk`, with
node ids, scopes and connectivity resolved in columns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from sysdiff.schemas.formats.unl.columns import (
    _PY_ONLY_WS,
    _S,
    ENDPOINT_SCHEMA,
    REL_LINE,
    REL_SCHEMA,
    SENT_SCHEMA,
    UnlChunk,
    _classify,
    _encode,
    _id_code,
    _split_relation_lines,
    dict_codes,
    factorize,
)
from sysdiff.schemas.formats.unl.document import _Draft
from sysdiff.schemas.formats.unl.graph import parse_graph
from sysdiff.schemas.formats.unl.model import NULL_UW, GraphError, NlSentence, UnlGraph, UnlSentence

# ---- sentences in columns


#: The columns of sentence blocks before their graphs are parsed (see ``chunk_from_blocks``).
BLOCK_SCHEMA = {"position": pl.Int64, "sent_id": _S, "line": pl.Int64, "error": _S,
                "error_line": pl.Int64, "warnings": pl.List(_S), "body": _S,
                "body_line": pl.Int64}  # fmt: skip


def drafts_frame(drafts: Sequence[_Draft]) -> pl.DataFrame:
    """Drafts as the columns of :data:`BLOCK_SCHEMA` (one row per draft)."""
    return pl.DataFrame(
        {"position": [d.position for d in drafts], "sent_id": [d.sent_id for d in drafts],
         "line": [d.line for d in drafts], "error": [d.error for d in drafts],
         "error_line": [d.error_line for d in drafts],
         "warnings": [list(d.warnings) for d in drafts], "body": [d.body for d in drafts],
         "body_line": [d.body_line for d in drafts]},
        schema=BLOCK_SCHEMA)  # fmt: skip


def chunk_from_drafts(drafts: Sequence[_Draft]) -> UnlChunk:
    """Parse the drafts' graphs in columns (see the section comment in ``index.py``)."""
    return chunk_from_blocks(drafts_frame(drafts))


def chunk_from_blocks(blocks: pl.DataFrame, connectivity: bool = True) -> UnlChunk:
    """Parse the graphs of sentence blocks (columns of :data:`BLOCK_SCHEMA`, in the order
    read; ``body`` null: no graph or ``error`` set) in columns. Without ``connectivity``,
    ``n_components`` is left null (an expected graph needs none: RETURNED looks at the
    actual graph only)."""
    n = blocks.height
    blocks = blocks.with_columns(row=pl.int_range(n, dtype=pl.Int32))
    with_body = blocks.filter(pl.col("body").is_not_null()).select(
        "row", "body", base="body_line")
    ep, rels, nodes, errors = _parse_bodies(with_body)
    bad = pl.DataFrame({"row": list(errors), "e_msg": [m for m, _ in errors.values()],
                        "e_line": [ln for _, ln in errors.values()]},
                       schema={"row": pl.Int32, "e_msg": _S, "e_line": pl.Int64})
    sents = blocks.join(bad, on="row", how="left", maintain_order="left").select(
        "row", "position", "sent_id", "line",
        pl.coalesce("e_msg", "error").alias("error"),
        pl.when(pl.col("e_msg").is_not_null()).then("e_line").otherwise("error_line")
        .alias("error_line"),
        (pl.col("body").is_not_null() & pl.col("e_msg").is_null()).alias("has_graph"),
        "warnings")  # fmt: skip
    return _finish_chunk(sents.cast(SENT_SCHEMA), ep, rels, nodes,  # type: ignore[arg-type]
                         connectivity)


def chunk_from_sentences(sentences: Sequence[UnlSentence | NlSentence]) -> UnlChunk:
    """Parsed sentences in columns (row ``i`` = ``sentences[i]``; an :class:`NlSentence`
    has no graph)."""
    ep_rows: list[tuple] = []
    rel_rows: list[tuple] = []
    node_rows: list[tuple] = []
    graphs = [getattr(s, "graph", None) for s in sentences]
    for i, g in enumerate(graphs):
        if g is not None:
            _graph_rows(i, g, ep_rows, rel_rows, node_rows)
    sents = pl.DataFrame(
        {"row": list(range(len(sentences))), "position": [s.position for s in sentences],
         "sent_id": [s.sent_id for s in sentences], "line": [s.line for s in sentences],
         "error": [s.error for s in sentences],
         "error_line": [getattr(s, "error_line", None) for s in sentences],
         "has_graph": [g is not None for g in graphs],
         "warnings": [list(getattr(s, "warnings", ())) for s in sentences]},
        schema=SENT_SCHEMA)  # fmt: skip
    ep = pl.DataFrame(ep_rows, schema=ENDPOINT_SCHEMA, orient="row")
    rels = pl.DataFrame(rel_rows, schema=REL_SCHEMA, orient="row")
    nodes = pl.DataFrame(node_rows, schema=ENDPOINT_SCHEMA, orient="row")
    return _finish_chunk(sents, ep, rels, nodes)


def _graph_rows(i: int, g: UnlGraph, ep: list, rels: list, nodes: list) -> None:
    """Append a parsed graph's relations, their two ends and its lone nodes as rows."""
    for r, rel in enumerate(g.relations):
        rels.append((i, r, rel.label, rel.scope, rel.line, _id_code(rel.scope)))
        for side, nd in enumerate((rel.source, rel.target)):
            ep.append((i, 2 * r + side, nd.uw, nd.node_id, nd.kind, ".".join(nd.attrs),
                       _id_code(nd.node_id)))
    for k, nd in enumerate(g.nodes):
        nodes.append((i, k, nd.uw, nd.node_id, nd.kind, ".".join(nd.attrs),
                      _id_code(nd.node_id)))


def _parse_bodies(df: pl.DataFrame
                  ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[int, tuple]]:
    """Endpoints, relations and lone nodes of the graphs ``body`` (graph text starting on
    line ``base``) of the rows ``row`` of ``df``, resolved; and the rows whose graph is
    malformed."""
    df = df.cast({"row": pl.Int32, "body": _S, "base": pl.Int64})
    slow = df.filter(pl.col("body").str.contains("[W]", literal=True)
                     | pl.col("body").str.contains(_PY_ONLY_WS))["row"]
    lines = (df.filter(~pl.col("row").is_in(slow.implode()))
             .select("row", "base", pl.col("body").str.split("\n").alias("text"))
             .with_columns(ln=pl.int_ranges(pl.col("text").list.len()))
             .explode("text", "ln").filter(pl.col("text").str.contains(r"\S")))  # fmt: skip
    bad = lines.filter(~pl.col("text").str.contains(REL_LINE))["row"].unique()
    lines = lines.filter(~pl.col("row").is_in(bad.implode()))
    lines = lines.with_columns(r=pl.int_range(pl.len()).over("row").cast(pl.Int32))
    parts = _split_relation_lines(lines["text"])
    rels = lines.select("row", "r", (pl.col("base") + pl.col("ln")).alias("line")).with_columns(
        parts.select("label", "scope", pl.col("sc").cast(pl.Int64)))
    ends = pl.concat([
        lines.select("row", occ=2 * pl.col("r").cast(pl.Int64) + side).with_columns(
            parts.select(pl.col(f"{p}_{c}").alias(c)
                         for c in ("head", "tail", "nid", "attrs", "nc")))
        for side, p in enumerate("st")])
    m = lines.height  # lines are in (row, r) order: interleave the two ends, (row, occ) order
    ends = ends[np.stack([np.arange(m), np.arange(m, 2 * m)], axis=1).ravel()]
    ends, odd = _classify(ends)
    rels = rels.filter(~pl.col("row").is_in(odd.implode())).select(list(REL_SCHEMA))
    ep = _resolve(ends.filter(~pl.col("row").is_in(odd.implode())), rels)
    fallback = sorted(set(slow.to_list()) | set(bad.to_list()) | set(odd.to_list()))
    ep_rows: list[tuple] = []
    rel_rows: list[tuple] = []
    node_rows: list[tuple] = []
    errors: dict[int, tuple[str, int]] = {}
    slow_df = df.filter(pl.col("row").is_in(pl.Series(fallback, dtype=pl.Int32).implode()))
    for row, body, base in slow_df.select("row", "body", "base").iter_rows():
        try:
            g = parse_graph(body, base)
        except GraphError as exc:
            errors[row] = (exc.message, exc.line)
            continue
        _graph_rows(row, g, ep_rows, rel_rows, node_rows)
    ep = pl.concat([ep, pl.DataFrame(ep_rows, schema=ENDPOINT_SCHEMA, orient="row")])
    rels = pl.concat([rels, pl.DataFrame(rel_rows, schema=REL_SCHEMA, orient="row")])
    nodes = pl.DataFrame(node_rows, schema=ENDPOINT_SCHEMA, orient="row")
    return ep, rels, nodes, errors


def _resolve(ep: pl.DataFrame, rels: pl.DataFrame) -> pl.DataFrame:
    """:func:`resolve_graph` in columns: ``:XX`` is a scope reference if a relation of its
    graph has scope XX; the other occurrences of a node id take the most specific UW (a real
    UW, then a constraint list, then the longer string, then the first) and the union of
    the attributes, in order of appearance."""
    scopes = rels.select("row", nc="sc").filter(pl.col("nc") >= 0).unique().with_columns(
        ref=pl.lit(True))
    ep = ep.join(scopes, on=["row", "nc"], how="left", maintain_order="left")
    ep = ep.with_columns(grouped=(pl.col("nc") >= 0)
                         & ~((pl.col("kind") == "scope") & pl.col("ref").fill_null(False)))
    g = ep.filter("grouped")
    # a group changes if it holds a scope-kind node, or its occurrences differ, or repeat an
    # attribute (the union drops the repeat); most groups are one node written again
    (uwc,) = dict_codes(g["uw"])
    atc, attr_values = _encode(g["attrs"])
    repeats = np.array([len(set(v.split("."))) < v.count(".") + 1 for v in attr_values], bool)
    need = (g.with_columns(u=pl.Series(uwc), a=pl.Series(atc),
                           d=pl.Series(repeats[atc] if atc.size else np.zeros(0, bool)))
            .group_by("row", "nc")
            .agg(n=pl.len(), sc=(pl.col("kind") == "scope").any(), nu=pl.col("u").n_unique(),
                 na=pl.col("a").n_unique(), nk=pl.col("kind").n_unique(), d=pl.col("d").any()))
    need = need.filter(pl.col("sc") | ((pl.col("n") > 1) & (
        (pl.col("nu") > 1) | (pl.col("na") > 1) | (pl.col("nk") > 1) | pl.col("d"))))
    need = need.select("row", "nc")
    if not need.height:
        return ep.select(list(ENDPOINT_SCHEMA))
    g = g.join(need, on=["row", "nc"], how="semi", maintain_order="left")
    plain = pl.col("kind").is_in(["null", "scope"])
    best = (g.with_columns(s1=~plain, s2=pl.col("uw").str.contains("(", literal=True),
                           s3=pl.col("uw").str.len_chars())
            .sort("row", "nc", "s1", "s2", "s3", "occ",
                  descending=[False, False, True, True, True, False])
            .group_by("row", "nc", maintain_order=True).first()
            .select("row", "nc", new_kind=pl.when(plain).then(pl.lit("null"))
                    .otherwise("kind"), new_uw=pl.when(plain).then(pl.lit(NULL_UW))
                    .otherwise("uw")))  # fmt: skip
    attrs = (g.filter(pl.col("attrs") != "")
             .select("row", "nc", pl.col("attrs").str.split("."))
             .explode("attrs")
             .group_by("row", "nc", maintain_order=True)
             .agg(new_attrs=pl.col("attrs").unique(maintain_order=True).str.join(".")))
    fix = best.join(attrs, on=["row", "nc"], how="left")
    ep = ep.join(fix, on=["row", "nc"], how="left", maintain_order="left")
    fixed = pl.col("grouped") & pl.col("new_kind").is_not_null()
    return ep.select(
        "row", "occ",
        pl.when(fixed).then("new_uw").otherwise("uw").alias("uw"), "nid",
        pl.when(fixed).then("new_kind").otherwise("kind").alias("kind"),
        pl.when(fixed).then(pl.col("new_attrs").fill_null("")).otherwise("attrs").alias("attrs"),
        "nc")


def _components(ep: pl.DataFrame, rels: pl.DataFrame, nodes: pl.DataFrame,
                n_rows: int) -> np.ndarray:
    """Connected components per row, as :meth:`UnlGraph.n_components`: a node is its scope,
    else its id, else (an id-less null UW being a node of its own) its UW, which joins the
    one id node of that UW if there is exactly one; a scoped relation joins its source to
    its scope. Nodes are integer keys (row, type, code), components come from scipy; 0 for a
    row without a graph node."""
    allnodes = pl.concat([ep, nodes.with_columns(occ=-1 - pl.col("occ"))])
    (uw,) = dict_codes(allnodes["uw"])
    nid, scope = allnodes["nc"].to_numpy(), rels["sc"].to_numpy()
    kind = allnodes["kind"]
    is_scope, is_null = (kind == "scope").to_numpy(), (kind == "null").to_numpy()
    row = allnodes["row"].to_numpy().astype(np.int64)
    # an id-less UW joins the id node of its UW when that UW has exactly one id
    ided = (nid >= 0) & ~is_scope & ~is_null
    by_uw = pl.DataFrame({"row": row[ided], "uw": uw[ided], "nid": nid[ided]}).group_by(
        "row", "uw").agg(lo=pl.col("nid").min(), hi=pl.col("nid").max())
    alias = by_uw.filter(pl.col("lo") == pl.col("hi")).select("row", "uw", alias="lo")
    joined = pl.DataFrame({"row": row, "uw": uw}).join(alias, on=["row", "uw"], how="left",
                                                       maintain_order="left")
    ali = joined["alias"].fill_null(-1).to_numpy()
    typ = np.select([is_scope, nid >= 0, is_null, ali >= 0], [0, 1, 2, 1], 3)
    val = np.select([is_scope | (nid >= 0), is_null, ali >= 0],
                    [nid, np.arange(row.size), ali], uw)  # fmt: skip
    key = (row << 40) | (typ << 36) | val
    occ = allnodes["occ"].to_numpy()
    on_rel = occ >= 0
    src, tgt = key[on_rel & (occ % 2 == 0)], key[on_rel & (occ % 2 == 1)]
    has_scope = scope >= 0
    scoped = (rels["row"].to_numpy().astype(np.int64)[has_scope] << 40) | scope[has_scope]
    a = np.concatenate([src, src[has_scope]])
    b = np.concatenate([tgt, scoped])
    verts, inv = factorize(np.concatenate([a, b, key[~on_rel]]))
    if not verts.size:
        return np.zeros(n_rows, np.int64)
    m = a.size
    graph = coo_matrix((np.ones(m, np.int8), (inv[:m], inv[m : 2 * m])),
                       shape=(verts.size, verts.size))  # fmt: skip
    _, labels = connected_components(graph, directed=False)
    per = np.unique((verts >> 40) << 32 | labels)
    return np.bincount(per >> 32, minlength=n_rows)[:n_rows].astype(np.int64)


def _finish_chunk(sents: pl.DataFrame, ep: pl.DataFrame, rels: pl.DataFrame,
                  nodes: pl.DataFrame, connectivity: bool = True) -> UnlChunk:
    """Relations with both ends, per-row counts, connectivity (null without
    ``connectivity``) and ``[word]`` nodes."""
    ep = ep.sort("row", "occ")
    rels = rels.sort("row", "r")
    ends = {p: ep.filter(pl.col("occ") % 2 == side).select(
                 pl.col("uw").alias(f"{p}_uw"), pl.col("nid").alias(f"{p}_id"),
                 pl.col("kind").alias(f"{p}_kind"), pl.col("attrs").alias(f"{p}_attrs"))
            for p, side in (("s", 0), ("t", 1))}  # fmt: skip
    wide = pl.concat([rels.drop("sc"), ends["s"], ends["t"]], how="horizontal")
    n = sents.height
    rows_of = [rels["row"].to_numpy(), nodes["row"].to_numpy()]
    n_rel, n_nodes = (np.bincount(r.astype(np.int64), minlength=n)[:n] for r in rows_of)
    words = pl.repeat(None, n, dtype=_S, eager=True).alias("nl_words")
    if (ep["kind"] == "nl").any() or (nodes["kind"] == "nl").any():
        found = (pl.concat([ep.select("row", "occ", "uw", "kind"),
                            nodes.select("row", occ=pl.col("occ") + (1 << 40), uw="uw",
                                         kind="kind")])
                 .filter(pl.col("kind") == "nl").sort("row", "occ")
                 .group_by("row", maintain_order=True)
                 .agg(nl_words=pl.col("uw").head(3).str.join(", ")))  # fmt: skip
        words = words.scatter(found["row"].to_numpy(), found["nl_words"])
    sents = sents.with_columns(n_rel=pl.Series(n_rel, dtype=pl.Int64),
                               n_nodes=pl.Series(n_nodes, dtype=pl.Int64),
                               n_components=pl.Series(_components(ep, rels, nodes, n))
                               if connectivity else pl.lit(None, pl.Int64),
                               nl_words=words)
    return UnlChunk(sents, wide, nodes.drop("nc"))
