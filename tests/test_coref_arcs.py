"""ARCS mention classes, pairwise comparison, oracles and agreement (METRICS 2.3, 2.4)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysdiff.schemas.formats.coref import read_coref
from sysdiff.schemas.tables import TABLES
from sysdiff.schemas.vocabulary import ARCS_CLASSES
from sysdiff.transforms.arcs import (
    arcs_scores,
    coref_agreement,
    coref_oracles,
    coref_pairs,
    mention_classes,
)
from sysdiff.transforms.coref import coref_counts, coref_scores
from sysdiff.transforms.reduce import oracle_subsets
from tests.helpers import bracket_marks

SHARED = Path(__file__).resolve().parent / "data"


def conll_text(tokens: list[tuple[str, str]], chains: list[list[tuple[int, int]]],
               name: str = "ex") -> str:
    """A one-document CoNLL-2012 file (6 columns, POS in the 5th) with these entities."""
    marks = bracket_marks(len(tokens), chains)
    lines = [f"#begin document ({name}); part 000"]
    lines += ["\t".join([name, "0", str(i), w, p, "|".join(marks[i]) or "-"])
              for i, (w, p) in enumerate(tokens)]
    return "\n".join([*lines, "#end document", ""])


def classes_of(c: pl.DataFrame) -> dict[str, str]:
    return dict(zip(c["word"].to_list(), c["cls"].to_list(), strict=True))


def row(df: pl.DataFrame, **where) -> dict:
    out = df.filter(*[pl.col(k) == v for k, v in where.items()])
    assert out.height == 1, out
    return out.row(0, named=True)


# ------------------------------------------------------------------ worked example C

C_TOKENS = [("John", "NNP"), ("said", "VBD"), ("he", "PRP"), ("would", "MD"), ("visit", "VB"),
            ("Mary", "NNP"), (",", ","), ("but", "CC"), ("she", "PRP"), ("left", "VBD")]
JOHN, HE, VISIT, MARY, SHE, LEFT = (0, 0), (2, 2), (4, 4), (5, 5), (8, 8), (9, 9)


def example_c():
    key = read_coref("K", text=conll_text(C_TOKENS, [[JOHN, HE], [MARY, SHE]]))
    s1 = read_coref("S1", text=conll_text(C_TOKENS, [[JOHN, HE, SHE]]))
    s2 = read_coref("S2", text=conll_text(C_TOKENS, [[JOHN, HE], [MARY, SHE], [VISIT, LEFT]]))
    return key, s1, s2


@pytest.mark.parametrize("criterion", ["any", "nom"])
def test_worked_example_c(criterion):
    key, s1, s2 = example_c()
    c1, c2 = mention_classes(key, s1, criterion), mention_classes(key, s2, criterion)
    assert classes_of(c1) == {"john": "TN", "he": "TP", "mary": "TN", "she": "WL"}
    assert classes_of(c2) == {"john": "TN", "he": "TP", "mary": "TN", "she": "TP",
                              "visit": "TN", "left": "FP"}
    a1 = row(arcs_scores(c1), mtype="ALL")
    a2 = row(arcs_scores(c2), mtype="ALL")
    assert (a1["precision"], a1["recall"]) == (pytest.approx(1 / 2), pytest.approx(1 / 2))
    assert (a2["precision"], a2["recall"]) == (pytest.approx(2 / 3), pytest.approx(1.0))
    pairs, trans = coref_pairs({"S1": c1, "S2": c2}, criterion)
    p = row(pairs, sys1="S1", sys2="S2")
    assert (p["n_mentions"], p["n_diff"]) == (6, 2) and p["diff"] == pytest.approx(2 / 6)
    assert (p["corrections"], p["new_errors"], p["changed_errors"]) == (1, 1, 0)
    moved = trans.filter(pl.col("sys1") == "S1", pl.col("mtype") != "ALL",
                         pl.col("word").is_not_null() | (pl.col("mtype") == "VBD"),
                         pl.col("c1") != pl.col("c2"), pl.col("count") > 0)
    assert set(moved.select("word", "c1", "c2").rows()) == {("she", "WL", "TP"),
                                                             (None, "TN", "FP")}
    oracles = coref_oracles({"S1": c1, "S2": c2}, criterion)
    both = oracles.filter(pl.col("systems").list.len() == 2)
    assert (row(both, mtype="ALL")["n"], row(both, mtype="ALL")["n_tp"]) == (2, 2)
    assert (row(both, mtype="PRP")["n"], row(both, mtype="PRP")["n_tp"]) == (2, 2)


def test_worked_example_d():
    tokens = [("Mary", "NNP"), ("met", "VBD"), ("Sue", "NNP"), (".", "."), ("She", "PRP"),
              ("smiled", "VBD")]
    key = read_coref("K", text=conll_text(tokens, [[(0, 0), (4, 4)]]))
    resp = read_coref("R", text=conll_text(tokens, [[(0, 0), (2, 2), (4, 4)]]))
    assert classes_of(mention_classes(key, resp, "any")) == {"mary": "TN", "sue": "FP",
                                                             "she": "TP"}
    assert classes_of(mention_classes(key, resp, "nom")) == {"mary": "TN", "sue": "FP",
                                                             "she": "WL"}


def test_nom_skips_mentions_without_nominal_key_antecedent():
    tokens = [("He", "PRP"), ("said", "VBD"), ("he", "PRP"), ("left", "VBD")]
    key = read_coref("K", text=conll_text(tokens, [[(0, 0), (2, 2)]]))
    assert mention_classes(key, key, "any")["cls"].to_list() == ["TN", "TP"]
    assert mention_classes(key, key, "nom")["cls"].to_list() == ["TN"]


# ----------------------------------------------------------- brute-force ARCS classes


def naive_classes(key, resp, mtype, criterion):
    """{span: class} from the definitions of METRICS 2.3 (sets, no vectorisation)."""
    def order(m):
        return (m[0], -m[1])

    def ante(ents, m):
        for e in ents:
            if m in e:
                return {x for x in e if order(x) < order(m)}
        return set()

    out = {}
    for m in {x for e in key + resp for x in e}:
        ak, as_ = ante(key, m), ante(resp, m)
        if criterion == "nom" and ak and not any(mtype[x] == "NOUN" for x in ak):
            continue
        if not ak:
            out[m] = "FP" if as_ else "TN"
        elif not as_:
            out[m] = "FN"
        elif criterion == "any":
            out[m] = "TP" if ak & as_ else "WL"
        else:
            noms = [x for x in as_ if mtype[x] == "NOUN"]
            out[m] = "TP" if noms and max(noms, key=order) in ak else "WL"
    return out


SPANS = [(s, e) for s in range(8) for e in range(s, min(s + 3, 8))]


@st.composite
def entities(draw, pool):
    spans = draw(st.lists(st.sampled_from(pool), max_size=10, unique=True))
    labels = draw(st.lists(st.integers(0, 3), min_size=len(spans), max_size=len(spans)))
    ents: dict[int, set] = {}
    for sp, lab in zip(spans, labels, strict=True):
        ents.setdefault(lab, set()).add(sp)
    return list(ents.values())


def mention_frame(ents, mtype):
    rows = [("d", 0, s, e, str(j), mtype[(s, e)], None) for j, ent in enumerate(ents)
            for (s, e) in ent]
    return pl.DataFrame(rows, orient="row", schema={
        "doc": pl.Utf8, "part": pl.Int32, "start": pl.Int32, "end": pl.Int32,
        "entity": pl.Utf8, "mtype": pl.Utf8, "word": pl.Utf8})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_classes_equal_brute_force(data):
    key = data.draw(entities(SPANS))
    pool = sorted({m for e in key for m in e} | set(data.draw(st.lists(st.sampled_from(SPANS),
                                                                        max_size=4))))
    resp = data.draw(entities(pool or SPANS))
    # one draw (not one per span): hypothesis warns when the global random state moves
    # during a draw, and other threads of the test session (s3fs's, Prefect's) may move it
    mtype = data.draw(st.fixed_dictionaries({sp: st.sampled_from(["NOUN", "PRP"])
                                             for sp in SPANS}))
    k, r = mention_frame(key, mtype), mention_frame(resp, mtype)
    for criterion in ["any", "nom"]:
        got = mention_classes(k, r, criterion)
        got_map = {(s, e): c for s, e, c in got.select("start", "end", "cls").iter_rows()}
        assert got_map == naive_classes(key, resp, mtype, criterion), criterion
    # TP under 'any' are MUC's correct links; TP+FN+WL and TP+FP+WL its denominators
    cls = mention_classes(k, r, "any")["cls"].to_list()
    arcs = {c.lower(): cls.count(c) for c in ARCS_CLASSES}
    muc = coref_counts(k, r).filter(pl.col("metric") == "muc").select(
        pl.col("recall_num", "recall_den", "precision_num", "precision_den").sum()).row(
        0, named=True)
    assert arcs["tp"] == muc["recall_num"] == muc["precision_num"]
    assert arcs["tp"] + arcs["fn"] + arcs["wl"] == muc["recall_den"]
    assert arcs["tp"] + arcs["fp"] + arcs["wl"] == muc["precision_den"]


# --------------------------------------------------------------- real data invariants


@pytest.fixture(scope="module")
def litbank():
    key = read_coref(SHARED / "coref-litbank" / "key.conll")
    systems = {f"sys{i}": read_coref(SHARED / "coref-litbank" / f"sys{i}.conll")
               for i in (1, 2, 3)}
    classes = {c: {s: mention_classes(key, m, c) for s, m in systems.items()}
               for c in ["any", "nom"]}
    return key, systems, classes


def test_perfect_response_is_all_tp_and_tn(litbank):
    key, _, _ = litbank
    for criterion in ["any", "nom"]:
        c = mention_classes(key, key, criterion)
        assert set(c["cls"]) == {"TP", "TN"}
        assert row(arcs_scores(c), mtype="ALL")["f1"] == 1.0
    assert mention_classes(key, key, "any").height == key.height


def test_arcs_any_equals_muc(litbank):
    key, systems, classes = litbank
    for name, resp in systems.items():
        arcs = row(arcs_scores(classes["any"][name]), mtype="ALL")
        muc = row(coref_scores(coref_counts(key, resp)), metric="muc")
        assert arcs["recall"] == pytest.approx(muc["recall"])
        assert arcs["precision"] == pytest.approx(muc["precision"])


def test_pair_invariants(litbank):
    _, _, classes = litbank
    for criterion, by_sys in classes.items():
        pairs, trans = coref_pairs(by_sys, criterion)
        assert pairs.height == 6
        for a, b in itertools.permutations(by_sys, 2):
            ab, ba = row(pairs, sys1=a, sys2=b), row(pairs, sys1=b, sys2=a)
            assert ab["corrections"] == ba["new_errors"]
            assert ab["n_diff"] == ba["n_diff"] == (
                ab["corrections"] + ab["new_errors"] + ab["changed_errors"])
            # correct units over U = K + S1 + S2 (a mention of the other response only is TN)
            good = {s: by_sys[s]["cls"].is_in(["TP", "TN"]).sum() + ab["n_mentions"]
                    - by_sys[s].height for s in (a, b)}
            assert good[b] - good[a] == ab["corrections"] - ab["new_errors"]
            t = trans.filter(pl.col("sys1") == a, pl.col("sys2") == b, pl.col("mtype") == "ALL")
            assert t.height == 25 and t["count"].sum() == ab["n_mentions"]
            assert t.filter(pl.col("c1") != pl.col("c2"))["count"].sum() == ab["n_diff"]
            typed = trans.filter(pl.col("sys1") == a, pl.col("sys2") == b,
                                 pl.col("mtype") != "ALL", pl.col("word").is_null())
            assert typed["count"].sum() == ab["n_mentions"]
            back = trans.filter(pl.col("sys1") == b, pl.col("sys2") == a)
            swapped = back.rename({"c1": "c2", "c2": "c1"}).select(t.columns[1:])
            assert sorted(swapped.drop("sys1", "sys2").rows(), key=str) == sorted(
                trans.filter(pl.col("sys1") == a, pl.col("sys2") == b).select(
                    t.columns[1:]).drop("sys1", "sys2").rows(), key=str)


def test_oracles(litbank):
    _, _, classes = litbank
    for criterion, by_sys in classes.items():
        o = coref_oracles(by_sys, criterion)
        assert o.filter(pl.col("mtype") == "ALL").height == 7
        for s, c in by_sys.items():
            single = o.filter(pl.col("systems").list.join(",") == s,
                              pl.col("mtype") == "ALL").row(0, named=True)
            scores = row(arcs_scores(c), mtype="ALL")
            assert single["n_tp"] == scores["tp"]
            assert single["n"] == scores["tp"] + scores["fn"] + scores["wl"]
        allsys = o.filter(pl.col("systems").list.len() == 3)
        for r in o.iter_rows(named=True):
            top = row(allsys, mtype=r["mtype"])
            assert r["n_tp"] <= top["n_tp"] and r["n"] == top["n"]
        by_type = allsys.filter(pl.col("mtype") != "ALL")
        assert by_type["n"].sum() == row(allsys, mtype="ALL")["n"]
        assert by_type["n_tp"].sum() == row(allsys, mtype="ALL")["n_tp"]


def test_subset_enumeration():
    assert len(oracle_subsets(10)) == 2 ** 10 - 1
    n = 11  # above 10: each system, every pair, every leave-one-out subset, the full set
    subs = oracle_subsets(n)
    assert len(subs) == n + math.comb(n, 2) + n + 1
    assert sorted({len(s) for s in subs}) == [1, 2, n - 1, n]


def test_agreement(litbank):
    key, systems, _ = litbank
    two = {"key": key, "sys2": systems["sys2"]}
    agr = coref_agreement(two)
    direct = coref_scores(coref_counts(key, systems["sys2"]))
    reverse = coref_scores(coref_counts(systems["sys2"], key))
    for metric in ["muc", "bcub", "ceafm", "ceafe", "blanc", "lea", "conll"]:
        a = row(agr, sys1="key", sys2="sys2", metric=metric)
        b = row(agr, sys1="sys2", sys2="key", metric=metric)
        assert a["f1"] == pytest.approx(row(direct, metric=metric)["f1"])
        assert b["recall"] == pytest.approx(row(reverse, metric=metric)["recall"])
        assert b["precision"] == pytest.approx(row(reverse, metric=metric)["precision"])


def test_result_tables_fit_schemas(litbank):
    _, _, classes = litbank
    by_sys = classes["nom"]
    pairs, trans = coref_pairs(by_sys, "nom")
    frames = {
        "mention_classes": by_sys["sys1"].with_columns(system=pl.lit("sys1")),
        # (the flow adds the bootstrap interval: tests/test_bootstrap.py)
        "arcs_scores": arcs_scores(by_sys["sys1"]).with_columns(
            system=pl.lit("sys1"), ci_low=pl.lit(None, pl.Float64),
            ci_high=pl.lit(None, pl.Float64)),
        "coref_pairs": pairs, "coref_transitions": trans,
        "coref_oracles": coref_oracles(by_sys, "nom"),
    }
    for name, df in frames.items():
        schema = TABLES[name]
        table = df.with_columns(corpus=pl.lit("c"), options=pl.lit("match:exact|singletons:keep")
                                ).select(schema.names).to_arrow()
        assert table.cast(schema).num_rows == df.height, name
    assert set(ARCS_CLASSES) >= set(by_sys["sys1"]["cls"])


def test_oracles_of_many_systems_use_small_subsets():
    key, s1, s2 = example_c()
    c1, c2 = mention_classes(key, s1, "any"), mention_classes(key, s2, "any")
    systems = {f"s{i:02d}": (c2 if i == 7 else c1) for i in range(11)}
    o = coref_oracles(systems, "any").filter(pl.col("mtype") == "ALL")
    assert o.height == 11 + 55 + 11 + 1 and o["systems"].list.len().max() == 11
    with_s07 = o.filter(pl.col("systems").list.contains("s07"))
    assert set(with_s07["n_tp"]) == {2} and set(o.join(with_s07, on="systems", how="anti")[
        "n_tp"]) == {1}


def test_word_transitions(litbank):
    _, _, classes = litbank
    pairs, trans = coref_pairs(classes["any"], "any")
    words = trans.filter(pl.col("word").is_not_null())
    assert words.height and set(words["mtype"]) == {"UNKNOWN"}   # LitBank has no POS
    assert (words["count"] > 0).all()
    ab = words.filter(pl.col("sys1") == "sys1", pl.col("sys2") == "sys3")
    single = trans.filter(pl.col("sys1") == "sys1", pl.col("sys2") == "sys3",
                          pl.col("mtype") == "UNKNOWN", pl.col("word").is_null())
    assert ab["count"].sum() == single["count"].sum()    # UNKNOWN mentions are single tokens
