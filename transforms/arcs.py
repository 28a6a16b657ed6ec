"""ARCS mention classes and the comparison of coreference responses (METRICS 2.3, 2.4).

Every mention of the key K and of a response S (matched by exact span) gets a class from its
antecedents (the mentions of its entity that precede it in document order: by start, longer
span first): TN, FP, FN, TP or WL (criteria ``any`` and ``nom``). Pairs of responses are then
compared unit by unit over the mentions of K, S1 and S2; oracles count the key mentions with
an antecedent that at least one response of a set gets TP.

All counts are additive over documents; ratios are computed last. Each comparison has a map
(``pair_partials``, ``oracle_partials``, ``agreement_counts``: counts of any set of whole
documents) and a reduce (``finish_pairs``, ``finish_oracles``, ``coref_scores``) over the
partials of all shards; ``coref_pairs``/``coref_oracles``/``coref_agreement`` are both in one.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from sysdiff.transforms.coref import coref_counts, coref_scores
from sysdiff.transforms.reduce import subsets

CLASSES = ["TP", "FP", "FN", "WL", "TN"]
CORRECT = ["TP", "TN"]
CRITERIA = ["any", "nom"]
NOMINAL = "NOUN"
PRONOUNS = ["PRP", "PRP$", "WP", "WP$", "PRON"]
WORD_TYPES = [*PRONOUNS, "UNKNOWN"]   # per-word transitions (UNKNOWN: files without POS)
_SPAN = ["doc", "part", "start", "end"]
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
    """ARCS class of every mention of the key and the response.

    Columns: criterion, doc, part, start, end, mtype, word, in_key, in_resp, cls (document
    order). ``mtype``/``word`` come from the key when the mention is in it. Under ``nom``, key
    mentions whose key antecedents hold no nominal mention are not evaluated (left out).
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, not {criterion!r}")
    cols = [*_SPAN, "entity", "mtype", "word", "has_ante", "nom_start", "nom_end"]
    k = antecedent_info(key).select(cols)
    r = antecedent_info(resp).select(cols)
    u = k.join(r, on=_SPAN, how="full", coalesce=True, suffix="_r").with_columns(
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
        pl.lit(criterion).alias("criterion"), *_SPAN,
        mtype=pl.coalesce("mtype", "mtype_r"), word=pl.coalesce("word", "word_r"),
        in_key="in_key", in_resp="in_resp", cls=cls,
    ).sort("doc", "part", "start", pl.col("end"), descending=[False, False, False, True])


def _criterion(u: pl.DataFrame, k: pl.DataFrame, criterion: str) -> pl.DataFrame:
    """Column ``ok``: the criterion holds (meaningful where both antecedent sets exist)."""
    if criterion == "any":
        # a shared antecedent = an earlier mention in the same key AND response entity
        both = u.filter(pl.col("in_key") & pl.col("in_resp")).sort(
            "doc", "part", "entity", "entity_r", "start", pl.col("end"),
            descending=[False] * 5 + [True])
        both = both.select(*_SPAN, ok=~_new_run("doc", "part", "entity", "entity_r"))
        return u.join(both, on=_SPAN, how="left").with_columns(pl.col("ok").fill_null(False))
    # nom: the closest preceding nominal of the response entity is in the key entity
    key_ent = k.select("doc", "part", nom_start_r="start", nom_end_r="end", ent_nom="entity")
    return u.join(key_ent, on=["doc", "part", "nom_start_r", "nom_end_r"], how="left").with_columns(
        ok=(pl.col("ent_nom") == pl.col("entity")).fill_null(False)).drop("ent_nom")


def _present(df: pl.DataFrame, cols: list[str]) -> list[str]:
    return [c for c in cols if c in df.columns]


def _prf(tp: pl.Expr, fp_wl: pl.Expr, fn_wl: pl.Expr) -> list[pl.Expr]:
    p = pl.when(fp_wl + tp > 0).then(tp / (tp + fp_wl)).otherwise(0.0)
    r = pl.when(fn_wl + tp > 0).then(tp / (tp + fn_wl)).otherwise(0.0)
    f = pl.when(p + r > 0).then(2 * p * r / (p + r)).otherwise(0.0)
    return [p.alias("precision"), r.alias("recall"), f.alias("f1")]


def arcs_scores(classes: pl.DataFrame) -> pl.DataFrame:
    """ARCS counts and P/R/F1 per mention type and overall (``mtype`` = 'ALL').

    P = TP / (TP + FP + WL), R = TP / (TP + FN + WL). Grouped by corpus/system/criterion when
    those columns are present.
    """
    by = _present(classes, _GROUPS)
    counts = [(pl.col("cls") == c).sum().cast(pl.Int64).alias(c.lower()) for c in CLASSES]
    per_type = classes.group_by(*by, "mtype").agg(counts)
    overall = classes.group_by(by or pl.lit(0).alias("_g")).agg(counts).with_columns(
        mtype=pl.lit("ALL"))
    out = pl.concat([per_type, overall.select(per_type.columns)])
    tp, fp, fn, wl = (pl.col(c).cast(pl.Float64) for c in ("tp", "fp", "fn", "wl"))
    return out.with_columns(_prf(tp, fp + wl, fn + wl)).sort(
        *by, pl.col("mtype") != "ALL", "mtype")


# ------------------------------------------------------------------------ many responses


def _unit_matrix(classes_by_system: dict[str, pl.DataFrame]) -> tuple[pl.DataFrame,
                                                                      np.ndarray, np.ndarray]:
    """Units (union of all class tables), class codes (units x systems, TN when absent) and
    response membership (units x systems)."""
    names = list(classes_by_system)
    tagged = [
        c.select(*_SPAN, "mtype", "word", "in_key", "in_resp", "cls").with_columns(
            sys=pl.lit(i, pl.Int32))
        for i, c in enumerate(classes_by_system.values())
    ]
    allc = pl.concat(tagged)
    units = (
        allc.group_by(_SPAN, maintain_order=True)
        .agg(pl.col("mtype").first(), pl.col("word").first(), pl.col("in_key").any())
        .sort(_SPAN).with_columns(u=pl.int_range(pl.len(), dtype=pl.Int64))
    )
    j = allc.join(units.select(*_SPAN, "u"), on=_SPAN)
    code = j["cls"].replace_strict(CLASSES, list(range(len(CLASSES)))).to_numpy()
    uu, ss = j["u"].to_numpy(), j["sys"].to_numpy()
    mat = np.full((units.height, len(names)), CLASSES.index("TN"), dtype=np.int8)
    mat[uu, ss] = code
    pres = np.zeros((units.height, len(names)), dtype=bool)
    pres[uu, ss] = j["in_resp"].to_numpy()
    return units, mat, pres


def coref_pairs(
    classes_by_system: dict[str, pl.DataFrame], criterion: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Compare every ordered pair of responses over the mentions of K, S1 and S2.

    ``classes_by_system`` maps a system name to its ``mention_classes`` under ``criterion``.
    Returns (pairs, transitions): pairs(criterion, sys1, sys2, n_mentions, n_diff,
    corrections, new_errors, changed_errors, diff) and transitions(criterion, sys1, sys2,
    mtype, word, c1, c2, count): the full 5x5 matrix per mention type and 'ALL' (word null),
    and the non-zero cells per (pronoun type, lower-cased word); single-token mentions of
    type UNKNOWN (no POS in the files) get per-word rows too.
    """
    return finish_pairs([pair_partials(classes_by_system)], list(classes_by_system), criterion)


_PAIR_COUNTS = ["n_mentions", "n_diff", "corrections", "new_errors", "changed_errors"]


def pair_partials(classes_by_system: dict[str, pl.DataFrame]) -> dict:
    """The additive counts of ``coref_pairs`` over some documents: ``pairs`` (ordered pairs x
    5 counts, int64), ``typed`` (p, mtype, cell, count) and ``worded`` (p, mtype, word, cell,
    count) non-zero transition cells (cell = c1 * 5 + c2), ``mtypes`` (all mention types)."""
    names = list(classes_by_system)
    units, mat, pres = _unit_matrix(classes_by_system)
    in_key = units["in_key"].to_numpy()
    correct = np.isin(np.arange(len(CLASSES)), [CLASSES.index(c) for c in CORRECT])
    mt_codes, mtypes = _codes(units["mtype"].fill_null("UNKNOWN"))
    is_word = units["mtype"].is_in(WORD_TYPES).fill_null(False) & units["word"].is_not_null()
    w_idx = np.flatnonzero(is_word.to_numpy())
    words = units[w_idx].select("mtype", "word").with_columns(
        k=pl.struct("mtype", "word").rank("dense").cast(pl.Int64) - 1)
    w_codes = words["k"].to_numpy()
    w_keys = words.unique("k").sort("k")
    pairs_idx = list(itertools.permutations(range(len(names)), 2))
    n_mt, n_w = len(mtypes), w_keys.height
    per_mt = np.zeros((len(pairs_idx), n_mt * 25), dtype=np.int64)
    per_w = np.zeros((len(pairs_idx), n_w * 25), dtype=np.int64)
    rows = np.zeros((len(pairs_idx), len(_PAIR_COUNTS)), dtype=np.int64)
    for p, (i, j) in enumerate(pairs_idx):
        c1, c2 = mat[:, i], mat[:, j]
        unit = in_key | pres[:, i] | pres[:, j]
        diff = c1 != c2
        ok1, ok2 = correct[c1], correct[c2]
        rows[p] = (unit.sum(), diff.sum(), (diff & ~ok1 & ok2).sum(), (diff & ok1 & ~ok2).sum(),
                   (diff & ~ok1 & ~ok2).sum())
        cell = c1.astype(np.int64) * 5 + c2
        per_mt[p] = np.bincount(mt_codes[unit] * 25 + cell[unit], minlength=n_mt * 25)
        wu = unit[w_idx]
        per_w[p] = np.bincount(w_codes[wu] * 25 + cell[w_idx][wu], minlength=n_w * 25)
    return {"pairs": rows, "mtypes": mtypes,
            "typed": _cells(per_mt, pl.DataFrame({"mtype": mtypes}, schema={"mtype": pl.Utf8})),
            "worded": _cells(per_w, w_keys.select("mtype", "word"))}


def _cells(counts: np.ndarray, groups: pl.DataFrame) -> pl.DataFrame:
    """Non-zero cells of a pairs x (groups * 25) count array as rows (p, <group columns>,
    cell, count)."""
    p, col = np.nonzero(counts)
    cells = pl.DataFrame({"p": p.astype(np.int64), "cell": (col % 25).astype(np.int64),
                          "count": counts[p, col]})
    return pl.concat([cells, groups[col // 25]], how="horizontal")


def finish_pairs(partials: list[dict], names: list[str], criterion: str
                 ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``coref_pairs``' (pairs, transitions) from the partials of all shards."""
    pairs_idx = list(itertools.permutations(range(len(names)), 2))
    counts = np.zeros((len(pairs_idx), len(_PAIR_COUNTS)), dtype=np.int64)
    for part in partials:
        counts += part["pairs"]
    mtypes = sorted({m for part in partials for m in part["mtypes"]})
    sys1 = pl.Series([names[i] for i, _ in pairs_idx], dtype=pl.Utf8)
    sys2 = pl.Series([names[j] for _, j in pairs_idx], dtype=pl.Utf8)
    pairs = pl.DataFrame({
        "criterion": pl.Series([criterion] * len(pairs_idx), dtype=pl.Utf8),
        "sys1": sys1, "sys2": sys2, **{c: counts[:, k] for k, c in enumerate(_PAIR_COUNTS)},
    }).with_columns(diff=pl.when(pl.col("n_mentions") > 0)
                    .then(pl.col("n_diff") / pl.col("n_mentions")).otherwise(0.0))
    per_mt = _dense(partials, "typed", ["mtype"],
                    pl.DataFrame({"mtype": mtypes}, schema={"mtype": pl.Utf8}), len(pairs_idx))
    total = per_mt.reshape(len(pairs_idx), len(mtypes), 25).sum(axis=1)
    per_mt = np.concatenate([total, per_mt], axis=1)          # 'ALL' first
    w_keys = (pl.concat([part["worded"].select("mtype", "word") for part in partials])
              .unique().sort("mtype", "word"))
    per_w = _dense(partials, "worded", ["mtype", "word"], w_keys, len(pairs_idx))
    typed = _transition_rows(per_mt, sys1, sys2, pl.Series(["ALL", *mtypes], dtype=pl.Utf8),
                             pl.Series([None] * (len(mtypes) + 1), dtype=pl.Utf8),
                             keep_zero=True)
    worded = _transition_rows(per_w, sys1, sys2, w_keys["mtype"], w_keys["word"],
                              keep_zero=False)
    transitions = pl.concat([typed, worded]).select(
        pl.lit(criterion, dtype=pl.Utf8).alias("criterion"), pl.all())
    return pairs, transitions


def _dense(partials: list[dict], name: str, on: list[str], groups: pl.DataFrame,
           n_pairs: int) -> np.ndarray:
    """The summed cells of the ``name`` partials as a pairs x (groups * 25) array."""
    out = np.zeros((n_pairs, groups.height * 25), dtype=np.int64)
    index = groups.with_columns(g=pl.int_range(pl.len(), dtype=pl.Int64))
    for part in partials:
        cells = part[name].join(index, on=on)
        np.add.at(out, (cells["p"].to_numpy(), cells["g"].to_numpy() * 25
                        + cells["cell"].to_numpy()), cells["count"].to_numpy())
    return out


def _transition_rows(counts: np.ndarray, sys1: pl.Series, sys2: pl.Series, mtype: pl.Series,
                     word: pl.Series, keep_zero: bool) -> pl.DataFrame:
    """Rows (sys1, sys2, mtype, word, c1, c2, count) of a pairs x (groups * 25) count array;
    group g, cell c1 * 5 + c2 at column g * 25 + c."""
    p, col = np.nonzero(counts) if not keep_zero else np.indices(counts.shape).reshape(2, -1)
    group, cell = col // 25, col % 25
    classes = pl.Series(CLASSES, dtype=pl.Utf8)
    return pl.DataFrame({
        "sys1": sys1.gather(p), "sys2": sys2.gather(p),
        "mtype": mtype.gather(group), "word": word.gather(group),
        "c1": classes.gather(cell // 5), "c2": classes.gather(cell % 5),
        "count": counts[p, col].astype(np.int64),
    })


def _codes(s: pl.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes and sorted distinct values of a string series."""
    keys = sorted(set(s.to_list()))
    codes = s.replace_strict(keys, list(range(len(keys))), return_dtype=pl.Int64)
    return codes.to_numpy() if len(s) else np.zeros(0, np.int64), keys


def coref_oracles(classes_by_system: dict[str, pl.DataFrame], criterion: str) -> pl.DataFrame:
    """Upper bound of every subset of responses: over key mentions with an antecedent (and,
    under ``nom``, evaluated), how many at least one response of the subset gets TP.

    Columns: criterion, systems (sorted names), mtype ('ALL' and each type), n, n_tp.
    """
    names = list(classes_by_system)
    return finish_oracles([oracle_partials(classes_by_system)], names, criterion)


def oracle_partials(classes_by_system: dict[str, pl.DataFrame]) -> dict:
    """The additive counts of ``coref_oracles`` over some documents: ``mtypes`` (sorted),
    ``n`` (units per type) and ``n_tp`` (types x subsets, ``subsets`` order: units that some
    response of the subset gets TP)."""
    units, mat, _ = _unit_matrix(classes_by_system)
    first = next(iter(classes_by_system.values()))
    with_ante = first.filter(pl.col("in_key") & pl.col("cls").is_in(["TP", "FN", "WL"]))
    sel = units.with_columns(idx=pl.int_range(pl.len())).join(
        with_ante.select(_SPAN), on=_SPAN, how="semi").sort("idx")
    tp = (mat[sel["idx"].to_numpy()] == CLASSES.index("TP")).astype(np.int64)
    mt_codes, mtypes = _codes(sel["mtype"].fill_null("UNKNOWN"))
    subs = subsets(list(classes_by_system))
    ind = np.zeros((len(classes_by_system), len(subs)), dtype=np.int64)
    for s, members in enumerate(subs):
        ind[list(members), s] = 1
    hit = (tp @ ind) > 0                                    # units x subsets
    onehot = np.zeros((len(mtypes), len(mt_codes)), dtype=np.int64)
    onehot[mt_codes, np.arange(len(mt_codes))] = 1
    return {"mtypes": mtypes, "n": onehot.sum(axis=1), "n_tp": onehot @ hit.astype(np.int64)}


def finish_oracles(partials: list[dict], names: list[str], criterion: str) -> pl.DataFrame:
    """``coref_oracles`` from the partials of all shards ('ALL' = the sum of the types)."""
    subs = subsets(names)
    mtypes = sorted({m for part in partials for m in part["mtypes"]})
    pos = {m: k + 1 for k, m in enumerate(mtypes)}
    n = np.zeros(len(mtypes) + 1, dtype=np.int64)
    n_tp = np.zeros((len(mtypes) + 1, len(subs)), dtype=np.int64)
    for part in partials:
        rows = [pos[m] for m in part["mtypes"]]
        n[rows] += part["n"]
        n_tp[rows] += part["n_tp"]
    n[0], n_tp[0] = n[1:].sum(), n_tp[1:].sum(axis=0)
    labels = ["ALL", *mtypes]
    sys_lists = [sorted(names[i] for i in members) for members in subs]
    return pl.DataFrame({
        "criterion": [criterion] * (len(labels) * len(subs)),
        "systems": [s for s in sys_lists for _ in labels],
        "mtype": labels * len(subs),
        "n": np.tile(n, len(subs)).astype(np.int64),
        "n_tp": n_tp.T.ravel().astype(np.int64),
    }, schema={"criterion": pl.Utf8, "systems": pl.List(pl.Utf8), "mtype": pl.Utf8,
               "n": pl.Int64, "n_tp": pl.Int64})


def coref_agreement(
    mentions_by_system: dict[str, pl.DataFrame], keep_singletons: bool = True
) -> pl.DataFrame:
    """Every standard metric of S2 scored with S1 as the key, for all ordered pairs.

    Columns: sys1, sys2 and those of ``coref_scores``.
    """
    nums = ["recall_num", "recall_den", "precision_num", "precision_den"]
    if len(mentions_by_system) < 2:
        return pl.DataFrame(schema={"sys1": pl.Utf8, "sys2": pl.Utf8, "metric": pl.Utf8,
                                    **{x: pl.Float64 for x in nums}})
    return coref_scores(agreement_counts(mentions_by_system, keep_singletons))


def agreement_counts(
    mentions_by_system: dict[str, pl.DataFrame], keep_singletons: bool = True
) -> pl.DataFrame:
    """Per-document ``coref_counts`` of every ordered pair (sys1 as the key), additive over
    documents. Counts are computed once per unordered pair: scoring S1 against S2 swaps the
    recall and precision counts of scoring S2 against S1."""
    parts = []
    for a, b in itertools.combinations(list(mentions_by_system), 2):
        c = coref_counts(mentions_by_system[a], mentions_by_system[b], keep_singletons)
        parts.append(c.with_columns(sys1=pl.lit(a), sys2=pl.lit(b)))
        swapped = c.rename({"recall_num": "precision_num", "recall_den": "precision_den",
                            "precision_num": "recall_num", "precision_den": "recall_den"})
        parts.append(swapped.select(c.columns).with_columns(sys1=pl.lit(b), sys2=pl.lit(a)))
    return pl.concat(parts)
