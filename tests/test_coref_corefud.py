"""CorefUD / CRAC matching modes (METRICS 2.7): every value of the official CorefUD scorer
in ``tests/data/coref-corefud/expected.csv`` (exact, partial and head match, singletons kept
and dropped), its alignment counts, hand-made corners, and exact mode against the CoNLL
reference scorer."""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from sysdiff.schemas.formats.coref import read_coref
from sysdiff.transforms import arcs
from sysdiff.transforms.coref import coref_counts, coref_scores, score_response
from sysdiff.transforms.corefud import CorefOptions, default_options, matched, zero_score
from tests.test_coref_scores import expected_rows

DATA = Path(__file__).resolve().parent / "data"
COREFUD = DATA / "coref-corefud"
SINGLETONS = {"kept": "keep", "ignored": "drop"}


@cache
def mentions(path: str) -> pl.DataFrame:
    return read_coref(COREFUD / path)


def expected() -> list[dict]:
    with open(COREFUD / "expected.csv", newline="") as f:
        return list(csv.DictReader(f))


@cache
def scored(key: str, resp: str, mode: str, singletons: str) -> dict[str, dict]:
    s = score_response(mentions(key), mentions(resp), singletons == "keep", mode, corefud=True)
    return {r["metric"]: r for r in s.iter_rows(named=True)}


def test_expected_covers_every_mode_response_and_metric():
    rows = expected()
    assert len(rows) == 324
    assert {r["mode"] for r in rows} == {"exact", "partial", "head"}
    assert {r["metric"] for r in rows} == {"muc", "bcub", "ceafm", "ceafe", "blanc", "lea",
                                          "conll", "mor", "zero"}


@pytest.mark.parametrize("row", expected(), ids=lambda r: f"{r['case']}-{r['metric']}")
def test_every_corefud_scorer_row(row):
    got = scored(row["key"], row["response"], row["mode"], SINGLETONS[row["singletons"]])
    g = got[row["metric"]]
    for x in ("recall", "precision", "f1"):
        if g[x] is None:  # 0/0: no number without data, where the scorer prints 0
            assert float(row[x]) == 0 and undefined(g, x), x
        else:
            assert g[x] == pytest.approx(float(row[x]), abs=1e-9), x


def undefined(g: dict, x: str) -> bool:
    """The figure ``x`` of a scores row has no data: its denominator is 0 (F1: recall or
    precision has none)."""
    if x == "f1":
        return undefined(g, "recall") or undefined(g, "precision")
    return g[f"{x}_den"] == 0


def stats_rows() -> list[dict]:
    with open(COREFUD / "scorer-output" / "alignment-stats.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


@pytest.mark.parametrize("row", stats_rows(), ids=lambda r: r["case"])
def test_alignment_counts_equal_the_scorer(row):
    """Mentions after the singleton filter, pairs aligned, pairs of identical spans, zeros."""
    options = CorefOptions(row["mode"], SINGLETONS[row["singletons"]])
    key, resp = matched(mentions(row["key"]), mentions(row["response"]), options)
    pairs = resp.filter(pl.col("k_start").is_not_null())
    same = (pl.col("k_start") == pl.col("start")) & (pl.col("k_end") == pl.col("end"))
    got = {"key_mentions": key.height, "sys_mentions": resp.height,
           "key_entities": key.select("doc", "entity").n_unique(),
           "sys_entities": resp.select("doc", "entity").n_unique(),
           "aligned": pairs.height, "aligned_identical_span": pairs.filter(same).height,
           "aligned_other": pairs.filter(~same).height,
           "key_zero": int(key["zero_deps"].is_not_null().sum()),
           "sys_zero": int(resp["zero_deps"].is_not_null().sum())}
    assert got == {k: int(row[k]) for k in got}


def test_defaults_follow_the_key_format():
    assert default_options("corefud") == CorefOptions("head", "drop")
    for fmt in ("conll2012", "jsonlines", None):
        assert default_options(fmt) == CorefOptions("exact", "keep")
    assert CorefOptions("partial", "drop").signature() == "match:partial|singletons:drop"
    with pytest.raises(ValueError, match="match"):
        CorefOptions("fuzzy")


@pytest.mark.parametrize("dataset", ["coref-refscorer", "coref-litbank"])
def test_exact_mode_equals_the_reference_scorer(dataset):
    """``match="exact"`` (through the matching step) on the CoNLL reference scorer's data."""
    rows = expected_rows(dataset)
    for key, resp in {(r["key"], r["response"]) for r in rows}:
        s = coref_scores(coref_counts(read_coref(DATA / dataset / key),
                                      read_coref(DATA / dataset / resp), match="exact"))
        got = {r["metric"]: (r["recall"], r["precision"], r["f1"])
               for r in s.iter_rows(named=True)}
        for r in rows:
            if (r["key"], r["response"]) == (key, resp):
                for g, want in zip(got[r["metric"]], r["values"], strict=False):
                    if g is None:  # 0/0: NULL where the reference scorer prints 0
                        assert want == 0, (key, resp, r["metric"])
                        continue
                    assert g == pytest.approx(want, abs=1e-4), (key, resp, r["metric"])


# ----------------------------------------------------------------- hand-made corners


def frame(rows: list[tuple], zero: dict | None = None) -> pl.DataFrame:
    """Mentions (start, end, entity, head) of one document, all in sentence 0."""
    zero = zero or {}
    return pl.DataFrame(
        {"doc": "d", "part": 0, "start": [r[0] for r in rows], "end": [r[1] for r in rows],
         "entity": [r[2] for r in rows], "head": [r[3] for r in rows], "sent": 0,
         "mtype": "NOUN", "word": None,
         "zero_deps": [zero.get(r[:2]) for r in rows]},
        schema_overrides={"part": pl.Int32, "start": pl.Int32, "end": pl.Int32,
                          "head": pl.Int32, "sent": pl.Int32, "word": pl.Utf8,
                          "zero_deps": pl.Utf8})


def pairs_of(key: pl.DataFrame, resp: pl.DataFrame, mode: str, singletons: str = "keep"
             ) -> set[tuple[int, int, int, int]]:
    _, r = matched(key, resp, CorefOptions(mode, singletons))
    return {(a, b, c, d) for a, b, c, d in r.filter(pl.col("k_start").is_not_null())
            .select("start", "end", "k_start", "k_end").iter_rows()}


KEY = frame([(0, 3, "a", 1), (5, 5, "a", 5), (7, 9, "b", 9), (11, 11, "b", 11)])


def test_partial_match_takes_a_sub_span_holding_the_key_head():
    resp = frame([(1, 2, "x", 1), (5, 5, "x", 5), (8, 9, "y", 8), (11, 11, "y", 11)])
    assert pairs_of(KEY, resp, "exact") == {(5, 5, 5, 5), (11, 11, 11, 11)}
    # (1, 2) lies inside (0, 3) and holds its head 1; (8, 9) holds head 9 of (7, 9)
    assert pairs_of(KEY, resp, "partial") == {(1, 2, 0, 3), (5, 5, 5, 5), (8, 9, 7, 9),
                                              (11, 11, 11, 11)}
    # head match: (1, 2) has head 1 = the key's; (8, 9) has head 8, the key's is 9
    assert pairs_of(KEY, resp, "head") == {(1, 2, 0, 3), (5, 5, 5, 5), (11, 11, 11, 11)}


def test_head_match_rejects_a_right_span_with_a_wrong_head():
    resp = frame([(0, 3, "x", 0), (5, 5, "x", 5), (7, 10, "y", 9), (11, 11, "y", 11)])
    assert pairs_of(KEY, resp, "exact") >= {(0, 3, 0, 3)}
    assert (0, 3, 0, 3) not in pairs_of(KEY, resp, "head")
    # a larger response with the key's head is a head match (|K|/|K| = 1)
    assert (7, 10, 7, 9) in pairs_of(KEY, resp, "head")
    s = score_response(KEY, resp, match="head")
    assert s.filter(pl.col("metric") == "muc")["recall"][0] == pytest.approx(0.5)


def test_zero_mentions_are_matched_first_even_in_exact_mode():
    deps = "3:conj|4:obl"
    key = frame([(0, 0, "a", 0), (2, 5, "a", 3)], zero={(2, 5): deps})
    resp = frame([(0, 0, "x", 0), (3, 3, "x", 3)], zero={(3, 3): deps})
    assert pairs_of(key, resp, "exact") == {(0, 0, 0, 0), (3, 3, 2, 5)}
    got = {r["metric"]: r for r in score_response(key, resp, corefud=True).iter_rows(
        named=True)}
    assert got["zero"]["recall"] == got["zero"]["precision"] == 1.0
    assert got["muc"]["f1"] == 1.0
    # without a zero's DEPS in common the pair is not made
    resp2 = frame([(0, 0, "x", 0), (3, 3, "x", 3)], zero={(3, 3): "7:nsubj"})
    assert pairs_of(key, resp2, "exact") == {(0, 0, 0, 0)}


def test_zero_score_is_ten_f1_of_deps_plus_f1_of_parents():
    assert zero_score("3:conj|4:obl", "3:conj|4:obl") == 11.0
    # pairs {3:conj} vs {3:nsubj}: F1 0; parents {3} vs {3}: F1 1
    assert zero_score("3:conj", "3:nsubj") == 1.0
    # pairs: 1 common of 2 and 1 -> F1 2/3; parents the same
    assert zero_score("3:conj|4:obl", "3:conj") == pytest.approx(10 * 2 / 3 + 2 / 3)
    assert zero_score("_", "3:conj") == 0.0


def test_singletons_leave_before_matching():
    """Without singletons a response mention alone in its entity cannot match, and a key
    singleton is neither found nor missed."""
    resp = frame([(0, 3, "x", 1), (5, 5, "z", 5), (7, 9, "y", 9), (11, 11, "y", 11)])
    assert pairs_of(KEY, resp, "exact", "drop") == {(7, 9, 7, 9), (11, 11, 11, 11)}
    key, r = matched(KEY, resp, CorefOptions("exact", "drop"))
    assert key.height == 4 and r.height == 2


def test_mention_overlap_ratio_uses_its_own_best_overlap():
    """MOR pairs mentions by the most shared words whatever the match mode."""
    resp = frame([(1, 4, "x", 1), (5, 5, "x", 5)])
    for mode in ("exact", "partial", "head"):
        got = {r["metric"]: r for r in score_response(KEY, resp, match=mode,
                                                      corefud=True).iter_rows(named=True)}
        # key words 4 + 1 + 3 + 1 = 9; response 4 + 1 = 5; shared 3 (0-3 with 1-4) + 1
        assert got["mor"]["recall"] == pytest.approx(4 / 9)
        assert got["mor"]["precision"] == pytest.approx(4 / 5)


def test_arcs_classes_use_the_matching():
    """A response mention matched by head is the key mention's unit, so its antecedent is
    shared (TP); in exact mode it is a unit of its own and (5, 5) has a wrong antecedent."""
    resp = frame([(0, 2, "x", 1), (5, 5, "x", 5)])
    for mode, n_units in (("exact", 5), ("head", 4)):
        k, r = matched(KEY, resp, CorefOptions(mode))
        c = arcs.mention_classes(k, r, "any")
        assert c.height == n_units
        five = c.filter(pl.col("start") == 5)
        assert five["cls"].to_list() == (["TP"] if mode == "head" else ["WL"])


@pytest.mark.parametrize("mode", ["exact", "partial", "head"])
@pytest.mark.parametrize("singletons", ["keep", "drop"])
@pytest.mark.parametrize(("key", "resp"), [("key.conllu", "sys3.conllu"),
                                           ("headed/key.conllu", "headed/sys2.conllu"),
                                           ("headed/key.conllu", "headed/sys2-nohead.conllu")])
def test_arcs_any_is_muc_under_every_matching(key, resp, mode, singletons):
    """ARCS under ``any`` counts MUC's links whatever the matching: TP = MUC's correct
    links, TP+FN+WL and TP+FP+WL its denominators; the units are the key mentions and the
    unmatched response mentions."""
    k, r = matched(mentions(key), mentions(resp), CorefOptions(mode, singletons))
    c = arcs.mention_classes(k, r, "any")
    n = {x: int((c["cls"] == x).sum()) for x in ("TP", "FP", "FN", "WL")}
    muc = coref_counts(mentions(key), mentions(resp), singletons == "keep", mode).filter(
        pl.col("metric") == "muc").select(pl.col("recall_num", "recall_den",
                                                 "precision_den").sum()).row(0, named=True)
    assert n["TP"] == muc["recall_num"]
    assert n["TP"] + n["FN"] + n["WL"] == muc["recall_den"]
    assert n["TP"] + n["FP"] + n["WL"] == muc["precision_den"]
    assert c.height == k.height + r.filter(pl.col("k_start").is_null()).height


def test_heads_come_from_the_head_attribute_and_a_bad_one_is_an_error():
    from sysdiff.schemas.errors import InputError
    from tests.test_coref_reader import COREFUD

    m = read_coref("x.conllu", text=COREFUD)
    # "(e2-animal-2" over "her dog": the second word; single words are their own heads
    assert m.select("start", "end", "head").rows() == [(0, 0, 0), (2, 3, 3), (2, 2, 2),
                                                        (4, 4, 4)]
    no_field = COREFUD.replace("eid-etype-head-other", "eid-etype-other")
    assert read_coref("x.conllu", text=no_field)["head"].to_list() == [0, 2, 2, 4]
    for bad in ("(e2-animal-3", "(e2-animal-x"):
        with pytest.raises(InputError) as info:
            read_coref("bad.conllu", text=COREFUD.replace("(e2-animal-2", bad))
        assert info.value.line == 8
        assert "expected a word number from 1 to 2" in info.value.message


@pytest.mark.parametrize("mode", ["partial", "head"])
def test_counts_are_additive_over_document_shards(mode):
    """Matching is per document: scoring documents in groups gives the same counts."""
    key, resp = mentions("key.conllu"), mentions("sys3.conllu")
    docs = sorted(key["doc"].unique())
    shards = [docs[i:i + 7] for i in range(0, len(docs), 7)]
    parts = pl.concat([coref_counts(key.filter(pl.col("doc").is_in(s)),
                                    resp.filter(pl.col("doc").is_in(s)), False, mode, True)
                       for s in shards])
    whole = coref_counts(key, resp, False, mode, True)
    assert parts.sort("doc", "metric").equals(whole.sort("doc", "metric"))
    assert set(whole["metric"]) >= {"mor", "zero"}
