"""Standard coreference scores as the reference scorer v8.01 computes them (METRICS 2.2).

Scoring is split into additive per-document counts (``coref_counts``: one row per document
and metric with recall/precision numerators and denominators) and a reduce
(``coref_scores``) that sums them over documents (micro-average) and computes the ratios, so
documents can be scored in shards. All counts derive from the sparse entity overlap table
``n_ij = |K_i ∩ R_j|``, a key and a response mention being the same when the CorefUD
scorer's matching pairs them (:mod:`sysdiff.transforms.corefud`: exact span by default,
or partial or head match; zero mentions first); CEAF solves one optimal assignment per
connected group of overlapping entities (``scipy.optimize.linear_sum_assignment``). For
CorefUD inputs the CorefUD scorer's two own metrics are added: ``mor`` (mention overlap
ratio) and ``zero`` (the anaphor-level score of key zero anaphors).

Floating-point sums are taken in a fixed order (entity pairs sorted by key then response
entity, documents by name) with ``np.bincount``, never by a hash group-by, so a document's
counts, and the scores, are the same bits whatever other documents are scored with it (any
shard size, any number of threads).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from sysdiff.transforms import bootstrap
from sysdiff.transforms.bootstrap import Bootstrap
from sysdiff.transforms.corefud import CorefOptions, matched
from sysdiff.transforms.corefud import drop_singletons as drop_singletons  # re-exported

METRICS = ["muc", "bcub", "ceafm", "ceafe", "blanc", "lea", "conll"]
COUNT_METRICS = ["muc", "bcub", "ceafm", "ceafe", "blanc_c", "blanc_n", "lea"]
#: The CorefUD scorer's own metrics, counted for CorefUD inputs (``corefud=True``).
COREFUD_METRICS = ["mor", "zero"]
_ORDER = [*METRICS, *COREFUD_METRICS]
_DOC = ["doc", "part"]
_SPAN = ["d", "start", "end"]
_NUMS = ["recall_num", "recall_den", "precision_num", "precision_den"]


def _c2(x: pl.Expr) -> pl.Expr:
    """Number of unordered pairs among x items (in floating point: no integer overflow)."""
    x = x.cast(pl.Float64)
    return x * (x - 1) / 2


def _encode(key: pl.DataFrame, resp: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame,
                                                                 pl.DataFrame]:
    """Integer document ids ``d`` shared by key and response, entity ids ``e`` per side."""
    docs = (
        pl.concat([key.select(_DOC), resp.select(_DOC)]).unique().sort(_DOC)
        .with_columns(d=pl.int_range(pl.len(), dtype=pl.Int32))
    )

    def side(m: pl.DataFrame) -> pl.DataFrame:
        m = m.select(*_DOC, "start", "end", "entity").join(docs, on=_DOC)
        return m.with_columns(
            e=pl.struct("d", "entity").rank("dense").cast(pl.Int64) - 1
        ).select("d", "start", "end", "e")

    return side(key), side(resp), docs


def coref_counts(
    key: pl.DataFrame, resp: pl.DataFrame, keep_singletons: bool = True, match: str = "exact",
    corefud: bool = False,
) -> pl.DataFrame:
    """Per-document additive counts of every metric.

    Columns: doc, part, metric (``COUNT_METRICS``; BLANC as ``blanc_c`` coreference links
    and ``blanc_n`` non-coreference links; with ``corefud`` also ``COREFUD_METRICS``),
    recall_num, recall_den, precision_num, precision_den (Float64). Mentions need doc, part,
    start, end, entity (and, for partial and head match and zeros, head, sent, zero_deps).
    """
    options = CorefOptions(match, "keep" if keep_singletons else "drop")
    return matched_counts(*matched(key, resp, options), corefud)


def matched_counts(key: pl.DataFrame, resp: pl.DataFrame, corefud: bool = False
                   ) -> pl.DataFrame:
    """``coref_counts`` of a key and a response already matched (``corefud.matched``)."""
    k, r, docs = _encode(key, resp.with_columns(start="k_start", end="k_end"))
    ksize = k.group_by("e").agg(d=pl.col("d").first(), ks=pl.len()).sort("e")
    rsize = r.group_by("e").agg(d=pl.col("d").first(), rs=pl.len()).sort("e")
    pairs = (
        k.join(r, on=_SPAN, suffix="_r")
        .group_by("d", "e", "e_r").agg(n=pl.len())
        .rename({"e": "ek", "e_r": "er"})
        .join(ksize.select(ek="e", ks="ks"), on="ek")
        .join(rsize.select(er="e", rs="rs"), on="er")
        .sort("ek", "er")   # the fixed order of every floating-point sum below
    )
    nd = docs.height
    tot = {"d": docs["d"], **_entity_totals(ksize, "ks", "k", nd),
           **_entity_totals(rsize, "rs", "r", nd), **_pair_totals(pairs, ksize, rsize, nd),
           **_ceaf_totals(pairs, nd)}
    if corefud:
        tot |= _mor_totals(key, resp, docs) | _zero_totals(key, resp, docs)
    return _count_rows(pl.DataFrame(tot), docs, corefud)


def _per_doc(d: np.ndarray, values: np.ndarray | None, nd: int) -> np.ndarray:
    """Sum of ``values`` (or count) per document id, adding in row order."""
    return np.bincount(d, weights=values, minlength=nd).astype(np.float64)


def _np_c2(x: np.ndarray) -> np.ndarray:
    """``_c2`` of an array: unordered pairs among x items, in float64."""
    x = x.astype(np.float64)
    return x * (x - 1) / 2


def _entity_totals(sizes: pl.DataFrame, col: str, p: str, nd: int) -> dict[str, np.ndarray]:
    """Per document: entities, mentions, coreference links (pairs within an entity)."""
    d, s = sizes["d"].to_numpy(), sizes[col].to_numpy().astype(np.float64)
    return {f"ent_{p}": _per_doc(d, None, nd), f"men_{p}": _per_doc(d, s, nd),
            f"link_{p}": _per_doc(d, _np_c2(s), nd)}


def _pair_totals(pairs: pl.DataFrame, ksize: pl.DataFrame, rsize: pl.DataFrame, nd: int
                 ) -> dict[str, np.ndarray]:
    """Per document sums over overlapping entity pairs (MUC, B3, LEA, BLANC terms)."""
    d, ek, er = (pairs[c].to_numpy() for c in ("d", "ek", "er"))
    n, ks, rs = (pairs[c].to_numpy().astype(np.float64) for c in ("n", "ks", "rs"))
    with np.errstate(divide="ignore", invalid="ignore"):
        # LEA: a singleton entity is resolved iff it is a singleton on the other side too
        lea_r = np.where(ks == 1, (rs == 1).astype(np.float64), _np_c2(n) / _np_c2(ks)) * ks
        lea_p = np.where(rs == 1, (ks == 1).astype(np.float64), _np_c2(n) / _np_c2(rs)) * rs
    a = np.bincount(ek, weights=n, minlength=ksize.height)   # mentions of K_i matched
    b = np.bincount(er, weights=n, minlength=rsize.height)
    return {
        "matched": _per_doc(d, n, nd), "n_pairs": _per_doc(d, None, nd),
        "b3_r": _per_doc(d, n * n / ks, nd), "b3_p": _per_doc(d, n * n / rs, nd),
        "lea_r": _per_doc(d, lea_r, nd), "lea_p": _per_doc(d, lea_p, nd),
        "both_c": _per_doc(d, _np_c2(n), nd),
        "sum_a2": _per_doc(ksize["d"].to_numpy(), _np_c2(a), nd),
        "sum_b2": _per_doc(rsize["d"].to_numpy(), _np_c2(b), nd),
    }


def _ceaf_totals(pairs: pl.DataFrame, nd: int, batch_rows: int = 150) -> dict[str, np.ndarray]:
    """Per document optimal CEAF-m (phi3) and CEAF-e (phi4) similarity sums.

    Entities that overlap nothing add 0; a key and a response entity that overlap only each
    other align trivially. The remaining connected groups of overlapping entities are
    packed into block-diagonal matrices of about ``batch_rows`` rows, one assignment each:
    the optimum of a block-diagonal matrix is the sum of the blocks' optima. Batches never
    span documents and rows are counted from each document's first, so the packing (and the
    rounding of the sums) of a document does not depend on the other documents.
    """
    if pairs.height == 0:
        return {"ceafm": np.zeros(nd), "ceafe": np.zeros(nd)}
    n = pairs["n"].to_numpy().astype(np.float64)
    phi4 = 2 * n / (pairs["ks"].to_numpy() + pairs["rs"].to_numpy())
    m_sum, e_sum = _assignment_sums(pairs["d"].to_numpy(), pairs["ek"].to_numpy(),
                                    pairs["er"].to_numpy(), [n, phi4], nd, batch_rows)
    return {"ceafm": m_sum, "ceafe": e_sum}


def _assignment_sums(d: np.ndarray, ek: np.ndarray, er: np.ndarray, sims: list[np.ndarray],
                     nd: int, batch_rows: int = 150) -> list[np.ndarray]:
    """Per document, the weight of an optimal one-to-one assignment of rows ``ek`` to
    columns ``er`` (ids unique over documents) for each weight array of ``sims`` (edges in
    a fixed order; see :func:`_ceaf_totals` for the batching)."""
    comp = _components(ek, er)
    size = np.bincount(comp)
    single = size[comp] == 1
    sums = [np.where(single, sim, 0.0) for sim in sims]
    multi = np.flatnonzero(~single)
    if len(multi):
        order = multi[np.lexsort((ek[multi], comp[multi], d[multi]))]
        c, dd = comp[order], d[order]
        row = _run_rank(c, ek[order])
        col = _dense_rank(c, er[order])
        # batches: whole components, within one document, about batch_rows rows each
        doc_start = np.r_[True, dd[1:] != dd[:-1]]
        block = (row - row[doc_start][np.cumsum(doc_start) - 1]) // batch_rows
        step = np.r_[True, (c[1:] != c[:-1]) & ((dd[1:] != dd[:-1]) | (block[1:] != block[:-1]))]
        bounds = np.flatnonzero(np.r_[step, True])
        for lo, hi in itertools.pairwise(bounds):
            r, q, idx = row[lo:hi], col[lo:hi], order[lo:hi]
            shape = (r.max() - r.min() + 1, q.max() - q.min() + 1)
            for target, sim in zip(sums, sims, strict=True):
                mat = np.zeros(shape)
                mat[r - r.min(), q - q.min()] = sim[idx]
                a, b = linear_sum_assignment(mat, maximize=True)
                target[idx[0]] += mat[a, b].sum()
    return [_per_doc(d, s, nd) for s in sums]


def _mor_totals(key: pl.DataFrame, resp: pl.DataFrame, docs: pl.DataFrame
                ) -> dict[str, np.ndarray]:
    """Per document, the CorefUD scorer's mention overlap ratio counts: words of the key and
    the response mentions, and the words they share under the one-to-one mention assignment
    that shares the most (its own alignment, the same in every match mode)."""
    nd = docs.height
    side = [m.join(docs, on=_DOC).select("d", "start", "end").with_row_index("i")
            for m in (key, resp)]
    k, r = side
    ov = k.join_where(r, pl.col("d") == pl.col("d_right"),
                      pl.col("start") <= pl.col("end_right"),
                      pl.col("start_right") <= pl.col("end")).sort("i", "i_right")
    w = (pl.min_horizontal("end", "end_right") - pl.max_horizontal("start", "start_right") + 1)
    ov = ov.with_columns(w=w.cast(pl.Float64))
    shared = (_assignment_sums(ov["d"].to_numpy(), ov["i"].to_numpy().astype(np.int64),
                               ov["i_right"].to_numpy().astype(np.int64),
                               [ov["w"].to_numpy()], nd)[0]
              if ov.height else np.zeros(nd))
    words = [_per_doc(m["d"].to_numpy(), (m["end"] - m["start"] + 1).to_numpy(), nd)
             for m in side]
    return {"mor_shared": shared, "mor_k": words[0], "mor_r": words[1]}


def _zero_totals(key: pl.DataFrame, resp: pl.DataFrame, docs: pl.DataFrame
                 ) -> dict[str, np.ndarray]:
    """Per document, the CorefUD scorer's ``zero`` counts (anaphor-level, key zero
    anaphors): a non-first key zero is TP when its matched response mention is not first in
    its entity and shares the entity of a matched earlier key mention of the same entity, WL
    when it does not, FN when it is unmatched or first; FP counts the non-first response
    zeros no key zero anaphor is matched to. "First" in the scorer's order: start, then
    end."""
    nd = docs.height
    first = pl.int_range(pl.len()).over("d", "entity")

    def ordered(m: pl.DataFrame) -> pl.DataFrame:
        return m.join(docs, on=_DOC).sort("d", "entity", "start", "end").with_columns(i=first)

    k, r = ordered(key), ordered(resp)
    mate = r.filter(pl.col("k_start").is_not_null()).select(
        "d", start="k_start", end="k_end", rent="entity", rfirst=pl.col("i") == 0,
        r_start="start", r_end="end")
    k = k.join(mate, on=["d", "start", "end"], how="left").with_columns(
        seen=pl.col("i").min().over("d", "entity", "rent"))
    ana = k.filter((pl.col("i") > 0) & pl.col("zero_deps").is_not_null())
    has = pl.col("rent").is_not_null() & ~pl.col("rfirst")
    covered = ana.filter(pl.col("rent").is_not_null()).select("d", start="r_start",
                                                               end="r_end")
    fp = r.filter((pl.col("i") > 0) & pl.col("zero_deps").is_not_null()).join(
        covered, on=["d", "start", "end"], how="anti")

    def count(frame: pl.DataFrame) -> np.ndarray:
        return _per_doc(frame["d"].to_numpy(), None, nd)

    return {"z_tp": count(ana.filter(has & (pl.col("seen") < pl.col("i")))),
            "z_wl": count(ana.filter(has & (pl.col("seen") == pl.col("i")))),
            "z_fn": count(ana.filter(~has.fill_null(False))), "z_fp": count(fp)}


def _run_rank(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """0-based rank of the runs of equal (group, value) in an array sorted by them."""
    return np.cumsum(np.r_[True, (group[1:] != group[:-1]) | (value[1:] != value[:-1])]) - 1


def _dense_rank(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """0-based dense rank of (group, value) pairs, ordered by group then value."""
    order = np.lexsort((value, group))
    g, v = group[order], value[order]
    new = np.r_[True, (g[1:] != g[:-1]) | (v[1:] != v[:-1])]
    rank = np.empty(len(group), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    return rank


def _components(ek: np.ndarray, er: np.ndarray) -> np.ndarray:
    """Connected component of each overlap edge in the key/response entity graph."""
    nk = int(ek.max()) + 1
    nodes = int(er.max()) + 1 + nk
    graph = coo_matrix((np.ones(len(ek)), (ek, er + nk)), shape=(nodes, nodes))
    _, labels = connected_components(graph, directed=False)
    return labels[ek]


def _count_rows(t: pl.DataFrame, docs: pl.DataFrame, corefud: bool = False) -> pl.DataFrame:
    """Long table of (doc, part, metric, numerators, denominators) from per-doc totals."""
    c = pl.col
    muc = c("matched") - c("n_pairs")
    all_k, all_r = _c2(c("men_k")), _c2(c("men_r"))
    both_n = _c2(c("matched")) - c("sum_a2") - c("sum_b2") + c("both_c")
    spec = {
        "muc": (muc, c("men_k") - c("ent_k"), muc, c("men_r") - c("ent_r")),
        "bcub": (c("b3_r"), c("men_k"), c("b3_p"), c("men_r")),
        "ceafm": (c("ceafm"), c("men_k"), c("ceafm"), c("men_r")),
        "ceafe": (c("ceafe"), c("ent_k"), c("ceafe"), c("ent_r")),
        "blanc_c": (c("both_c"), c("link_k"), c("both_c"), c("link_r")),
        "blanc_n": (both_n, all_k - c("link_k"), both_n, all_r - c("link_r")),
        "lea": (c("lea_r"), c("men_k"), c("lea_p"), c("men_r")),
    }
    if corefud:
        tp, fp, fn, wl = c("z_tp"), c("z_fp"), c("z_fn"), c("z_wl")
        spec |= {"mor": (c("mor_shared"), c("mor_k"), c("mor_shared"), c("mor_r")),
                 "zero": (tp, tp + fn + wl, tp, tp + fp + wl)}
    frames = [
        t.select("d", metric=pl.lit(name), **{
            col: expr.cast(pl.Float64) for col, expr in zip(_NUMS, exprs, strict=True)})
        for name, exprs in spec.items()
    ]
    return (
        pl.concat(frames).join(docs, on="d").sort("d", "metric")
        .select(*_DOC, "metric", *_NUMS)
    )


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """num / den; NULL when den is 0 (the reference scorer prints 0: no number without
    data)."""
    return pl.when(den != 0).then(num / den)


def _f1(r: pl.Expr, p: pl.Expr) -> pl.Expr:
    """F1 of a recall and a precision: NULL without a recall (nothing to find), 0 when
    nothing was found or both are 0."""
    return (pl.when(r.is_null()).then(None)
            .when(p.is_null() | (r + p == 0)).then(0.0)
            .otherwise(2 * r * p / (r + p)))


def coref_scores(counts: pl.DataFrame) -> pl.DataFrame:
    """Micro-averaged scores from ``coref_counts`` rows (summed over documents).

    Columns: metric (``METRICS``, then ``COREFUD_METRICS`` if counted), recall_num,
    recall_den, precision_num, precision_den, recall, precision, f1. Grouped additionally by
    ``corpus``/``system``/``sys1``/``sys2`` when present. BLANC = mean of the coreference-
    and non-coreference-link scores, or one of them alone when the key has no link of the
    other kind (reference scorer); its numerator/denominator columns are null, as are those
    of ``conll`` (mean F1 of MUC, B3, CEAF-e; its recall/precision are the means of theirs).
    Sums are taken per group in (doc, part) order, so the result does not depend on the
    order of the rows.
    """
    by = [g for g in ("corpus", "system", "sys1", "sys2", "criterion") if g in counts.columns]
    if not by and counts.height == 0:       # nothing to score: every count is 0
        counts = pl.DataFrame({"metric": COUNT_METRICS, **{c: [0.0] * len(COUNT_METRICS)
                                                           for c in _NUMS}})
    sums = sum_in_order(counts, [*by, "metric"], _NUMS)
    sums = sums.with_columns(
        recall=_ratio(pl.col("recall_num"), pl.col("recall_den")),
        precision=_ratio(pl.col("precision_num"), pl.col("precision_den")),
    ).with_columns(f1=_f1(pl.col("recall"), pl.col("precision")))
    plain = sums.filter(~pl.col("metric").str.starts_with("blanc"))
    rows = [plain, _blanc(sums, by), _conll(plain, by)]
    out = pl.concat([r.select(*by, "metric", *[
        pl.col(x).cast(pl.Float64) if x in r.columns else pl.lit(None, pl.Float64).alias(x)
        for x in [*_NUMS, "recall", "precision", "f1"]]) for r in rows])
    order = pl.col("metric").replace_strict(_ORDER, list(range(len(_ORDER))))
    return out.sort(*by, order)


def sum_in_order(counts: pl.DataFrame, keys: list[str], values: list[str]) -> pl.DataFrame:
    """Per group of ``keys``, the sums of ``values`` adding rows in (doc, part) order (in
    row order without those columns): the same bits however the rows were produced."""
    order = [*keys, *[c for c in _DOC if c in counts.columns]]
    rows = counts.sort(order, maintain_order=True)
    gid = (rows.select(pl.struct(keys).rle_id())[:, 0].to_numpy() if rows.height
           else np.zeros(0, np.int64))
    groups = rows.select(keys).unique(maintain_order=True)
    return groups.with_columns(**{
        v: pl.Series(np.bincount(gid, weights=rows[v].cast(pl.Float64).fill_null(0).to_numpy(),
                                 minlength=groups.height)) for v in values})


def _conll(plain: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The CoNLL average: mean of the MUC, B3 and CEAF-e scores, added in that order."""
    keys = by or ["_g"]
    parts = [plain.filter(pl.col("metric") == m).with_columns(_g=pl.lit(0)).select(
        *keys, *[pl.col(x).alias(f"{x}_{m}") for x in ("recall", "precision", "f1")])
        for m in ("muc", "bcub", "ceafe")]
    j = parts[0].join(parts[1], on=keys).join(parts[2], on=keys)
    return j.select(*by, metric=pl.lit("conll"), **{
        x: (pl.col(f"{x}_muc") + pl.col(f"{x}_bcub") + pl.col(f"{x}_ceafe")) / 3
        for x in ("recall", "precision", "f1")})


def _blanc(sums: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """BLANC from the summed coreference (c) and non-coreference (n) link counts."""
    c = sums.filter(pl.col("metric") == "blanc_c")
    n = sums.filter(pl.col("metric") == "blanc_n")
    if not by:
        c, n = c.with_columns(_g=pl.lit(0)), n.with_columns(_g=pl.lit(0))
    keys = by or ["_g"]
    # BLANC defines a link kind's P/R without a link as 0 (Recasens & Hovy; the reference
    # scorer): its figures have data as long as the key has links of either kind
    parts = [pl.col(x).fill_null(0.0) for x in ("recall", "precision")]
    c = c.with_columns(parts).with_columns(f1=_f1(pl.col("recall"), pl.col("precision")))
    n = n.with_columns(parts).with_columns(f1=_f1(pl.col("recall"), pl.col("precision")))
    j = c.join(n, on=keys, suffix="_n")
    has_c, has_n = pl.col("recall_den") != 0, pl.col("recall_den_n") != 0

    def pick(col: str) -> pl.Expr:
        both = (pl.col(col) + pl.col(f"{col}_n")) / 2
        return (pl.when(has_c & has_n).then(both).when(has_c).then(pl.col(col))
                .when(has_n).then(pl.col(f"{col}_n")))  # neither: NULL (no link at all)

    return j.select(*by, metric=pl.lit("blanc"), recall=pick("recall"),
                    precision=pick("precision"), f1=pick("f1"))


# ------------------------------------------------------------------------------ intervals


def _f1_np(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    """:func:`_f1` over arrays (NaN: NULL)."""
    both = np.divide(2 * r * p, r + p, out=np.zeros(r.shape), where=(r + p) != 0)
    return np.where(np.isnan(r), np.nan, np.where(np.isnan(p), 0.0, both))


def _ratio_np(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den != 0)


def f1_samples(counts: pl.DataFrame, docs: pl.DataFrame, opts: Bootstrap
               ) -> dict[str, np.ndarray]:
    """Bootstrap samples over documents (``docs``: doc, part in corpus order) of every
    metric's F1 of one system (``counts``: its :func:`coref_counts` rows), recomputed from
    each sample's summed numerators and denominators as :func:`coref_scores` does (BLANC
    from both link kinds, CoNLL the mean of MUC, B3 and CEAF-e): metric -> (B,)."""
    matrix, keys = bootstrap.unit_matrix(counts, docs, ["metric"], _NUMS)
    (sums,) = bootstrap.resample([matrix], opts)
    sums = sums.reshape(opts.samples, keys.height, len(_NUMS))
    out, blanc = {}, {}
    for k, metric in enumerate(keys["metric"].to_list()):
        rn, rd, pn, pd = (sums[:, k, x] for x in range(len(_NUMS)))
        r, p = _ratio_np(rn, rd), _ratio_np(pn, pd)
        if metric.startswith("blanc"):
            r, p = np.nan_to_num(r, nan=0.0), np.nan_to_num(p, nan=0.0)
            blanc[metric] = (_f1_np(r, p), rd != 0)
        else:
            out[metric] = _f1_np(r, p)
    if len(blanc) == 2:
        (fc, has_c), (fn, has_n) = blanc["blanc_c"], blanc["blanc_n"]
        out["blanc"] = np.where(has_c & has_n, (fc + fn) / 2,
                                np.where(has_c, fc, np.where(has_n, fn, np.nan)))
    if {"muc", "bcub", "ceafe"} <= out.keys():
        out["conll"] = (out["muc"] + out["bcub"] + out["ceafe"]) / 3
    return out


def score_intervals(samples: dict[str, np.ndarray], confidence: float) -> pl.DataFrame:
    """(metric, ci_low, ci_high) of each metric's samples."""
    names = list(samples)
    low, high = bootstrap.interval(np.stack([samples[m] for m in names], axis=1),
                                   confidence) if names else ([], [])
    return pl.DataFrame({"metric": names, "ci_low": low, "ci_high": high},
                        schema={"metric": pl.String, "ci_low": pl.Float64,
                                "ci_high": pl.Float64}).fill_nan(None)


def score_response(key: pl.DataFrame, resp: pl.DataFrame, keep_singletons: bool = True,
                   match: str = "exact", corefud: bool = False) -> pl.DataFrame:
    """``coref_scores(coref_counts(key, resp, ...))``: all metrics of one response."""
    return coref_scores(coref_counts(key, resp, keep_singletons, match, corefud))
