"""ARCS mention classes and the comparison of coreference responses (METRICS 2.3, 2.4).

Every mention of the key K and of a response S gets a class from its antecedents (the
mentions of its entity that precede it in document order: by start, longer span first): TN,
FP, FN, TP or WL (criteria ``any`` and ``nom``). A response mention is "the same mention" as
the key mention the CorefUD scorer's matching pairs it with (:func:`corefud.matched`: exact
span by default; partial or head match); a unit is a key mention (with its matched response
mention) or an unmatched response mention, named by its span (:data:`corefud.UNIT`; in head
mode the head too). Pairs of responses are then
compared unit by unit over the mentions of K, S1 and S2; oracles count the key mentions with
an antecedent that at least one response of a set gets TP.

The comparison of responses is the engine's (:mod:`sysdiff.transforms.engine`) over a matrix
of mentions x responses whose labels are ARCS classes. All counts are additive over
documents; ratios are computed last: ``comparison_counts`` and ``agreement_counts`` map any
set of whole documents, ``merge_comparison``/``finish_comparison`` and ``coref_scores``
reduce; ``coref_pairs``/``coref_oracles``/``coref_agreement`` are map and reduce in one.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import ARCS_CLASSES, ARCS_CORRECT, CRITERIA
from sysdiff.transforms import bootstrap
from sysdiff.transforms.bootstrap import Bootstrap
from sysdiff.transforms.coref import coref_counts, coref_scores
from sysdiff.transforms.corefud import UNIT, CorefOptions, matched
from sysdiff.transforms.engine import (
    MAX_ALL_SUBSETS,
    LabelMatrix,
    all_pairs,
    oracle_counts,
    pair_counts,
    transition_counts,
)
from sysdiff.transforms.reduce import mcnemar_column, nulls, oracle_correct, pair_ci, ratio

NOMINAL = "NOUN"
PRONOUNS = ["PRP", "PRP$", "WP", "WP$", "PRON"]
WORD_TYPES = [*PRONOUNS, "UNKNOWN"]   # per-word transitions (UNKNOWN: files without POS)
_GROUPS = ["corpus", "system", "criterion"]


# ----------------------------------------------------------------------- mention classes


def _new_run(*cols: str) -> pl.Expr:
    """True on the first row of each run of equal (cols) in the current order."""
    diff = [pl.col(c) != pl.col(c).shift(1) for c in cols]
    return pl.any_horizontal(diff).fill_null(True)


def antecedent_info(mentions: pl.DataFrame) -> pl.DataFrame:
    """Mentions with ``has_ante`` (not first of its entity in document order) and the span
    (``nom_start``, ``nom_end``) of the closest preceding nominal mention of its entity."""
    m = mentions.sort("doc", "part", "entity", "start", pl.col("end"),
                      descending=[False, False, False, False, True])
    new = _new_run("doc", "part", "entity")
    idx = pl.int_range(pl.len(), dtype=pl.Int64)
    nom_idx = pl.when(pl.col("mtype") == NOMINAL).then(idx)
    prev_nom = (pl.when(new).then(pl.lit(-1, pl.Int64)).otherwise(nom_idx.shift(1))
                .forward_fill())
    m = m.with_columns(has_ante=~new, prev_nom=pl.when(prev_nom >= 0).then(prev_nom))
    starts, ends = m["start"], m["end"]
    return m.with_columns(
        nom_start=starts.gather(m["prev_nom"].fill_null(0)),
        nom_end=ends.gather(m["prev_nom"].fill_null(0)),
    ).with_columns(
        nom_start=pl.when(pl.col("prev_nom").is_not_null()).then(pl.col("nom_start")),
        nom_end=pl.when(pl.col("prev_nom").is_not_null()).then(pl.col("nom_end")),
    ).drop("prev_nom")


def mention_classes(key: pl.DataFrame, resp: pl.DataFrame, criterion: str) -> pl.DataFrame:
    """ARCS class of every mention unit of the key and the response.

    ``key``/``resp`` as :func:`corefud.matched` returns them (plain mention tables are
    matched by exact span). Columns: criterion, doc, part, start, end, hid, mtype, word,
    in_key, in_resp, cls (document order); a unit matched to a key mention has its span.
    ``mtype``/``word`` come from the key when the mention is in it. Under ``nom``, key
    mentions whose key antecedents hold no nominal mention are not evaluated (left out).
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, not {criterion!r}")
    if "k_start" not in resp.columns:
        key, resp = matched(key, resp, CorefOptions())
    cols = [*UNIT, "entity", "mtype", "word", "has_ante", "nom_start", "nom_end", "nom_hid"]
    k = _as_units(antecedent_info(key), "start", "end", "hid").select(cols)
    r = _as_units(antecedent_info(resp), pl.coalesce("k_start", "start"),
                  pl.coalesce("k_end", "end"), pl.coalesce("k_hid", "hid")).select(cols)
    u = k.join(r, on=UNIT, how="full", coalesce=True, suffix="_r").with_columns(
        in_key=pl.col("entity").is_not_null(), in_resp=pl.col("entity_r").is_not_null(),
    ).with_columns(
        has_k=pl.col("in_key") & pl.col("has_ante").fill_null(False),
        has_s=pl.col("in_resp") & pl.col("has_ante_r").fill_null(False),
    )
    u = _criterion(u, k, criterion)
    cls = (
        pl.when(~pl.col("has_k") & ~pl.col("has_s")).then(pl.lit("TN"))
        .when(~pl.col("has_k")).then(pl.lit("FP"))
        .when(~pl.col("has_s")).then(pl.lit("FN"))
        .when(pl.col("ok")).then(pl.lit("TP"))
        .otherwise(pl.lit("WL"))
    )
    if criterion == "nom":
        u = u.filter(~pl.col("has_k") | pl.col("nom_start").is_not_null())
    return u.select(
        pl.lit(criterion).alias("criterion"), *UNIT,
        mtype=pl.coalesce("mtype", "mtype_r"), word=pl.coalesce("word", "word_r"),
        in_key="in_key", in_resp="in_resp", cls=cls,
    ).sort("doc", "part", "start", pl.col("end"), "hid",
           descending=[False, False, False, True, False])


def _as_units(m: pl.DataFrame, start: str | pl.Expr, end: str | pl.Expr, hid: str | pl.Expr
              ) -> pl.DataFrame:
    """``antecedent_info`` rows named by their units (``start``, ``end``, ``hid``: columns or
    expressions of the mention), the closest preceding nominal too (``nom_*``)."""
    m = m.with_columns(u_start=start, u_end=end, u_hid=hid)
    nominal = m.select("doc", "part", nom_start="start", nom_end="end", n_start="u_start",
                       n_end="u_end", nom_hid="u_hid")
    m = m.join(nominal, on=["doc", "part", "nom_start", "nom_end"], how="left",
               maintain_order="left")
    return m.with_columns(start="u_start", end="u_end", hid="u_hid", nom_start="n_start",
                          nom_end="n_end")


def _criterion(u: pl.DataFrame, k: pl.DataFrame, criterion: str) -> pl.DataFrame:
    """Column ``ok``: the criterion holds (meaningful where both antecedent sets exist)."""
    if criterion == "any":
        # a shared antecedent = an earlier mention in the same key AND response entity
        both = u.filter(pl.col("in_key") & pl.col("in_resp")).sort(
            "doc", "part", "entity", "entity_r", "start", pl.col("end"), "hid",
            descending=[False] * 5 + [True, False])
        both = both.select(*UNIT, ok=~_new_run("doc", "part", "entity", "entity_r"))
        return u.join(both, on=UNIT, how="left").with_columns(pl.col("ok").fill_null(False))
    # nom: the closest preceding nominal of the response entity is in the key entity
    key_ent = k.select("doc", "part", nom_start_r="start", nom_end_r="end", nom_hid_r="hid",
                       ent_nom="entity")
    return u.join(key_ent, on=["doc", "part", "nom_start_r", "nom_end_r", "nom_hid_r"],
                  how="left").with_columns(
        ok=(pl.col("ent_nom") == pl.col("entity")).fill_null(False)).drop("ent_nom")


def _present(df: pl.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if c in df.columns]


def _prf(tp: pl.Expr, fp_wl: pl.Expr, fn_wl: pl.Expr) -> list[pl.Expr]:
    """P, R, F1; no number without data: P is NULL without a TP+FP+WL mention, R and F1
    without a TP+FN+WL mention (a key mention with an antecedent)."""
    p = pl.when(fp_wl + tp > 0).then(tp / (tp + fp_wl))
    r = pl.when(fn_wl + tp > 0).then(tp / (tp + fn_wl))
    return [p.alias("precision"), r.alias("recall"), f1_of(r, p).alias("f1")]


def f1_of(r: pl.Expr, p: pl.Expr) -> pl.Expr:
    """2RP/(R+P): NULL when R is NULL (nothing to find), 0 when P is NULL (nothing found)
    or R + P is 0."""
    return (pl.when(r.is_null()).then(None)
            .when(p.is_null() | (r + p == 0)).then(0.0)
            .otherwise(2 * r * p / (r + p)))


def arcs_scores(classes: pl.DataFrame) -> pl.DataFrame:
    """ARCS counts and P/R/F1 per mention type and overall (``mtype`` = 'ALL').

    P = TP / (TP + FP + WL), R = TP / (TP + FN + WL). Grouped by corpus/system/criterion when
    those columns are present.
    """
    by = _present(classes, _GROUPS)
    counts = [(pl.col("cls") == c).sum().cast(pl.Int64).alias(c.lower()) for c in ARCS_CLASSES]
    per_type = classes.group_by(*by, "mtype").agg(counts)
    overall = classes.group_by(by or pl.lit(0).alias("_g")).agg(counts).with_columns(
        mtype=pl.lit("ALL"))
    out = pl.concat([per_type, overall.select(per_type.columns)])
    tp, fp, fn, wl = (pl.col(c).cast(pl.Float64) for c in ("tp", "fp", "fn", "wl"))
    return out.with_columns(_prf(tp, fp + wl, fn + wl)).sort(
        *by, pl.col("mtype") != "ALL", "mtype")


# ------------------------------------------------------------------------ intervals

ARCS_COUNTS = ("tp", "fp", "fn", "wl")


def document_counts(classes: pl.DataFrame) -> pl.DataFrame:
    """TP, FP, FN and WL per document (doc, part) and mention type (and criterion, when
    present): the per-document rows of the ARCS scores' bootstrap intervals."""
    by = _present(classes, ["criterion"])
    return classes.group_by(*by, "doc", "part", "mtype").agg(
        (pl.col("cls") == c.upper()).sum().cast(pl.Int64).alias(c) for c in ARCS_COUNTS)


def arcs_f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, wl: np.ndarray) -> np.ndarray:
    """F1 as :func:`arcs_scores` computes it, over arrays (NaN: NULL)."""
    tp = np.asarray(tp, np.float64)
    p = np.divide(tp, tp + fp + wl, out=np.full(tp.shape, np.nan), where=tp + fp + wl > 0)
    r = np.divide(tp, tp + fn + wl, out=np.full(tp.shape, np.nan), where=tp + fn + wl > 0)
    both = np.divide(2 * r * p, r + p, out=np.zeros(tp.shape), where=(r + p) != 0)
    return np.where(np.isnan(r), np.nan, np.where(np.isnan(p), 0.0, both))


def f1_samples(docs_counts: pl.DataFrame, docs: pl.DataFrame, opts: Bootstrap
               ) -> tuple[pl.DataFrame, np.ndarray]:
    """Bootstrap samples over documents (``docs``: doc, part in corpus order) of the ARCS F1
    of one system per criterion and mention type, ``ALL`` included (``docs_counts``:
    :func:`document_counts` rows with a criterion): (criterion, mtype) keys and their
    (B x keys) samples."""
    typed = docs_counts.with_columns(pl.col("mtype").cast(pl.String))
    rows = pl.concat([typed, typed.with_columns(mtype=pl.lit("ALL"))])
    matrix, keys = bootstrap.unit_matrix(rows, docs, ["criterion", "mtype"], ARCS_COUNTS)
    (sums,) = bootstrap.resample([matrix], opts)
    sums = sums.reshape(opts.samples, keys.height, len(ARCS_COUNTS))
    return keys, arcs_f1(*(sums[:, :, k] for k in range(len(ARCS_COUNTS))))


def interval_rows(keys: pl.DataFrame, samples: np.ndarray, confidence: float
                  ) -> pl.DataFrame:
    """``keys`` with the percentile interval (ci_low, ci_high) of each key's samples."""
    low, high = bootstrap.interval(samples, confidence)
    return keys.with_columns(ci_low=pl.Series(low), ci_high=pl.Series(high)).fill_nan(None)


# ------------------------------------------------------------------------ many responses

_CORRECT = np.array([c in ARCS_CORRECT for c in ARCS_CLASSES])
_TP = ARCS_CLASSES.index("TP")
_N_CLASSES = len(ARCS_CLASSES)


def mention_types(classes_by_system: dict[str, pl.DataFrame]) -> list[str]:
    """Every mention type of some class tables (``UNKNOWN`` for none), sorted."""
    types = {"UNKNOWN"}
    for c in classes_by_system.values():
        types.update(t for t in c["mtype"].unique().to_list() if t is not None)
    return sorted(types)


def mention_matrix(classes_by_system: dict[str, pl.DataFrame], mtypes: list[str]
                   ) -> tuple[pl.DataFrame, LabelMatrix]:
    """The engine's matrix over mentions: units are the union of every class table (document
    order), values and display labels the ARCS class codes (a mention absent from a response
    is TN), correct = TP or TN, the group the mention type (a code into ``mtypes``)."""
    names = list(classes_by_system)
    tagged = [_with_hid(c).select(*UNIT, "mtype", "word", "in_key", "in_resp", "cls")
              .with_columns(sys=pl.lit(i, pl.Int32))
              for i, c in enumerate(classes_by_system.values())]
    allc = pl.concat(tagged)
    units = (allc.group_by(UNIT, maintain_order=True)
             .agg(pl.col("mtype").first(), pl.col("word").first(), pl.col("in_key").any())
             .sort(UNIT).with_columns(u=pl.int_range(pl.len(), dtype=pl.Int64)))
    j = allc.join(units.select(*UNIT, "u"), on=UNIT)
    code = j["cls"].replace_strict(ARCS_CLASSES, list(range(_N_CLASSES)),
                                   return_dtype=pl.UInt8).to_numpy()
    uu, ss = j["u"].to_numpy(), j["sys"].to_numpy()
    values = np.full((len(names), units.height), ARCS_CLASSES.index("TN"), np.uint8)
    values[ss, uu] = code
    present = np.zeros((len(names), units.height), bool)
    present[ss, uu] = j["in_resp"].to_numpy()
    group = units["mtype"].fill_null("UNKNOWN").replace_strict(
        mtypes, list(range(len(mtypes))), return_dtype=pl.Int64).to_numpy()
    m = LabelMatrix(values=values, correct=_CORRECT[values], display=values, gold=group,
                    n_labels=_N_CLASSES, n_groups=len(mtypes),
                    sent=np.zeros(units.height, np.int32), n_sents=1, present=present,
                    in_key=units["in_key"].to_numpy())
    return units, m


def comparison_counts(classes_by_system: dict[str, pl.DataFrame], mtypes: list[str]) -> dict:
    """The additive counts of the comparison of responses over some documents (METRICS 2.4):
    ``pairs`` (engine pair counts), ``typed`` (pairs x types x 5 x 5 transitions),
    ``type_units`` (units per type), ``worded`` (non-zero transition cells per pronoun
    word: p, mtype, word, cell, count) and ``oracle`` (TP oracle counts of the key mentions
    with an antecedent, per type) with ``tp`` (TP units per system and type)."""
    units, m = mention_matrix(classes_by_system, mtypes)
    pairs = all_pairs(m.n_systems)
    masks = [m.pair_units(i, j) for i, j in pairs]
    with_ante = (units["in_key"] & _key_has_antecedent(classes_by_system, units)).to_numpy()
    tp = m.values[:, with_ante] == _TP
    group = m.gold[with_ante]
    return {
        "pairs": pair_counts(m, pairs),
        "typed": transition_counts(m.values, _N_CLASSES, m.gold, m.n_groups, pairs, masks),
        "type_units": np.bincount(m.gold, minlength=m.n_groups),
        "worded": _word_cells(units, m, pairs, masks),
        "oracle": oracle_counts(tp, group, m.n_groups,
                                pairs if m.n_systems > MAX_ALL_SUBSETS else None),
        "tp": np.stack([np.bincount(group[row], minlength=m.n_groups) for row in tp])
        if m.n_systems else np.zeros((0, m.n_groups), np.int64),
    }


def _key_has_antecedent(classes_by_system: dict[str, pl.DataFrame], units: pl.DataFrame
                        ) -> pl.Series:
    """Per unit: a key mention with a key antecedent (evaluated under the criterion): its
    class is TP, FN or WL in any response's table."""
    first = _with_hid(next(iter(classes_by_system.values())))
    keyed = first.filter(pl.col("in_key") & pl.col("cls").is_in(["TP", "FN", "WL"]))
    return units.join(keyed.select(*UNIT, flag=pl.lit(True)), on=UNIT, how="left",
                      maintain_order="left")["flag"].fill_null(False)


def _with_hid(classes: pl.DataFrame) -> pl.DataFrame:
    """Class rows with ``hid`` (-1 for tables without it: units named by span alone)."""
    return (classes if "hid" in classes.columns
            else classes.with_columns(hid=pl.lit(-1, pl.Int32)))


def _word_cells(units: pl.DataFrame, m: LabelMatrix, pairs: list[tuple[int, int]],
                masks: list[np.ndarray]) -> pl.DataFrame:
    """Non-zero transition cells per (pronoun type, lower-cased word): single-token mentions
    of a pronoun type (or UNKNOWN, for files without POS)."""
    is_word = (units["mtype"].is_in(WORD_TYPES).fill_null(False)
               & units["word"].is_not_null()).to_numpy()
    idx = np.flatnonzero(is_word)
    words = units[idx].select("mtype", "word").with_columns(
        k=pl.struct("mtype", "word").rank("dense").cast(pl.Int64) - 1)
    keys = words.unique("k").sort("k")
    counts = transition_counts(m.values[:, idx], _N_CLASSES, words["k"].to_numpy(),
                               keys.height, pairs, [mask[idx] for mask in masks])
    p, g, c1, c2 = np.nonzero(counts)
    cells = pl.DataFrame({"p": p.astype(np.int64), "cell": (c1 * _N_CLASSES + c2)
                          .astype(np.int64), "count": counts[p, g, c1, c2]})
    return pl.concat([cells, keys.select("mtype", "word")[g]], how="horizontal")


def merge_comparison(parts: list[dict]) -> dict:
    """The sum of the comparison counts of several shards."""
    total = parts[0]
    for part in parts[1:]:
        total["pairs"].merge(part["pairs"])
        total["oracle"].merge(part["oracle"])
        for name in ("typed", "type_units", "tp"):
            total[name] = total[name] + part[name]
        total["worded"] = pl.concat([total["worded"], part["worded"]])
    return total


def finish_comparison(total: dict, names: list[str], criterion: str, mtypes: list[str],
                      f1: np.ndarray | None = None, samples: np.ndarray | None = None,
                      confidence: float = 0.95
                      ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(coref_pairs, coref_transitions, coref_oracles) of one criterion from summed counts;
    with each system's ARCS F1 (``ALL``, in ``names`` order), the pairs' delta F1, with its
    bootstrap interval and p from the (B x N) ``samples`` of those F1s."""
    pc = total["pairs"]
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    arr = np.array(names, dtype=object)
    f1 = np.full(len(names), np.nan) if f1 is None else np.asarray(f1, np.float64)
    ci = pair_ci(samples, i, j, f1[j] - f1[i], confidence)
    pairs = nulls(pl.DataFrame({
        "criterion": [criterion] * (2 * i.size),
        "sys1": np.concatenate([arr[i], arr[j]]).tolist(),
        "sys2": np.concatenate([arr[j], arr[i]]).tolist(),
        "n_mentions": np.tile(pc.n_units, 2), "n_diff": np.tile(n_diff, 2),
        "corrections": np.concatenate([fix, brk]), "new_errors": np.concatenate([brk, fix]),
        "changed_errors": np.tile(changed, 2),
        "diff": np.tile(ratio(n_diff, pc.n_units), 2),
        "delta_f1": np.concatenate([f1[j] - f1[i], f1[i] - f1[j]]),
        "delta_ci_low": ci.low, "delta_ci_high": ci.high,
        "mcnemar_p": np.tile(mcnemar_column(fix, brk), 2), "bootstrap_p": ci.p,
    }, schema_overrides={"criterion": pl.String, "sys1": pl.String, "sys2": pl.String}))
    transitions = _transitions(total, arr, i, j, criterion, mtypes)
    return pairs, transitions, _oracle_rows(total, names, criterion, mtypes)


def _transitions(total: dict, arr: np.ndarray, i: np.ndarray, j: np.ndarray, criterion: str,
                 mtypes: list[str]) -> pl.DataFrame:
    """Full 5x5 matrices per type and 'ALL' (word null), both directions of every pair, and
    the non-zero cells per pronoun word."""
    keep = np.flatnonzero(total["type_units"])
    typed = total["typed"][:, keep]
    typed = np.concatenate([typed.sum(axis=1, keepdims=True), typed], axis=1)  # 'ALL' first
    both = np.concatenate([typed, typed.transpose(0, 1, 3, 2)])  # (j, i) is the transpose
    p_n, g_n = both.shape[:2]
    sys1 = np.concatenate([arr[i], arr[j]])
    sys2 = np.concatenate([arr[j], arr[i]])
    p, g, c1, c2 = np.indices(both.shape).reshape(4, -1)
    classes = pl.Series(ARCS_CLASSES, dtype=pl.String)
    type_names = pl.Series(["ALL", *(mtypes[k] for k in keep)], dtype=pl.String)
    rows = [pl.DataFrame({
        "sys1": sys1[p].tolist(), "sys2": sys2[p].tolist(), "mtype": type_names.gather(g),
        "word": pl.Series([None] * p.size, dtype=pl.String),
        "c1": classes.gather(c1), "c2": classes.gather(c2), "count": both[p, g, c1, c2],
    })]
    w = (total["worded"].group_by("p", "mtype", "word", "cell").agg(pl.col("count").sum())
         .sort("p", "mtype", "word", "cell"))  # the same order however documents are sharded
    if w.height:
        q, cell = w["p"].to_numpy(), w["cell"].to_numpy()
        for first, second, a, b in ((i, j, cell // _N_CLASSES, cell % _N_CLASSES),
                                    (j, i, cell % _N_CLASSES, cell // _N_CLASSES)):
            rows.append(pl.DataFrame({
                "sys1": arr[first[q]].tolist(), "sys2": arr[second[q]].tolist(),
                "mtype": w["mtype"], "word": w["word"], "c1": classes.gather(a),
                "c2": classes.gather(b), "count": w["count"]}))
    out = pl.concat(rows).filter(pl.col("word").is_null() | (pl.col("count") > 0))
    return out.select(pl.lit(criterion, pl.String).alias("criterion"), pl.all())


def _oracle_rows(total: dict, names: list[str], criterion: str, mtypes: list[str]
                 ) -> pl.DataFrame:
    """ARCS recall oracle of the subsets: key mentions with an antecedent that some member
    gets TP, per type and 'ALL'."""
    oc = total["oracle"]
    subs, per_group = oracle_correct(oc, total["tp"])
    n = oc.k_hist.sum(axis=1)
    keep = np.flatnonzero(n)
    labels = ["ALL", *(mtypes[k] for k in keep)]
    n_rows = np.concatenate([[n.sum()], n[keep]])
    tp_rows = np.concatenate([per_group.sum(axis=1, keepdims=True), per_group[:, keep]], axis=1)
    sys_lists = [sorted(names[k] for k in members) for members in subs]
    return pl.DataFrame({
        "criterion": [criterion] * (len(labels) * len(subs)),
        "systems": [s for s in sys_lists for _ in labels],
        "mtype": labels * len(subs),
        "n": np.tile(n_rows, len(subs)).astype(np.int64),
        "n_tp": tp_rows.ravel().astype(np.int64),
    }, schema={"criterion": pl.Utf8, "systems": pl.List(pl.Utf8), "mtype": pl.Utf8,
               "n": pl.Int64, "n_tp": pl.Int64})


def coref_pairs(classes_by_system: dict[str, pl.DataFrame], criterion: str
                ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pairs, transitions) of every ordered pair of responses over the mentions of K, S1
    and S2 (one shard: see :func:`comparison_counts`)."""
    mtypes = mention_types(classes_by_system)
    total = comparison_counts(classes_by_system, mtypes)
    pairs, transitions, _ = finish_comparison(total, list(classes_by_system), criterion, mtypes)
    return pairs, transitions


def coref_oracles(classes_by_system: dict[str, pl.DataFrame], criterion: str) -> pl.DataFrame:
    """Upper bound of every subset of responses: over key mentions with an antecedent (and,
    under ``nom``, evaluated), how many at least one response of the subset gets TP.

    Columns: criterion, systems (sorted names), mtype ('ALL' and each type), n, n_tp.
    """
    mtypes = mention_types(classes_by_system)
    total = comparison_counts(classes_by_system, mtypes)
    return _oracle_rows(total, list(classes_by_system), criterion, mtypes)


def coref_agreement(
    mentions_by_system: dict[str, pl.DataFrame], keep_singletons: bool = True,
    match: str = "exact", corefud: bool = False,
) -> pl.DataFrame:
    """Every standard metric of S2 scored with S1 as the key, for all ordered pairs.

    Columns: sys1, sys2 and those of ``coref_scores``.
    """
    nums = ["recall_num", "recall_den", "precision_num", "precision_den"]
    if len(mentions_by_system) < 2:
        return pl.DataFrame(schema={"sys1": pl.Utf8, "sys2": pl.Utf8, "metric": pl.Utf8,
                                    **{x: pl.Float64 for x in nums}})
    return coref_scores(agreement_counts(mentions_by_system, keep_singletons, match, corefud))


def agreement_counts(
    mentions_by_system: dict[str, pl.DataFrame], keep_singletons: bool = True,
    match: str = "exact", corefud: bool = False,
) -> pl.DataFrame:
    """Per-document ``coref_counts`` of every ordered pair (sys1 as the key), additive over
    documents. With exact match (and no zero metric) counts are computed once per unordered
    pair: scoring S1 against S2 swaps the recall and precision counts of scoring S2 against
    S1; partial and head match, and the zero metric, are not symmetric."""
    parts = []
    symmetric = match == "exact" and not corefud
    for a, b in itertools.combinations(list(mentions_by_system), 2):
        c = coref_counts(mentions_by_system[a], mentions_by_system[b], keep_singletons, match,
                         corefud)
        parts.append(c.with_columns(sys1=pl.lit(a), sys2=pl.lit(b)))
        if symmetric:
            back = c.rename({"recall_num": "precision_num", "recall_den": "precision_den",
                             "precision_num": "recall_num", "precision_den": "recall_den"}
                            ).select(c.columns)
        else:
            back = coref_counts(mentions_by_system[b], mentions_by_system[a], keep_singletons,
                                match, corefud)
        parts.append(back.with_columns(sys1=pl.lit(b), sys2=pl.lit(a)))
    return pl.concat(parts)
