"""UNLization / NLization scoring (METRICS 3.2, 3.3) against expected.json and hand-worked cases."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest

from sysdiff.schemas.formats.unl import read_nl, read_unl
from sysdiff.schemas.tables import TABLES
from sysdiff.transforms.unl import (
    NlOptions,
    UnlOptions,
    below,
    nl_status,
    nl_words,
    score_nlization,
    score_unlization,
    unl_scores,
    with_fraction,
)

DATA = Path(__file__).resolve().parent / "data" / "unl"
EXPECTED = json.loads((DATA / "expected.json").read_text())
UNL_CASES = sorted(EXPECTED["unlization"])
NL_CASES = sorted(EXPECTED["nlization"])


def unl_case(name: str, options: UnlOptions | None = None) -> dict:
    d = DATA / "cases" / name
    df = score_unlization(read_unl(d / "expected.unl"), read_unl(d / "actual.unl"), options)
    assert df.height == 1
    return df.row(0, named=True)


def nl_case(name: str) -> dict:
    d = DATA / "cases" / name
    df = score_nlization(read_nl(d / "expected.txt"), read_nl(d / "actual.txt"))
    assert df.height == 1
    return df.row(0, named=True)


def unl_sentences_all() -> pl.DataFrame:
    frames = []
    for name in UNL_CASES:
        d = DATA / "cases" / name
        frames.append(score_unlization(read_unl(d / "expected.unl"), read_unl(d / "actual.unl")))
    return pl.concat(frames)


# ---------------------------------------------------------------------------- expected.json


def test_expected_json_covers_every_case_directory() -> None:
    dirs = {p.name for p in (DATA / "cases").iterdir() if p.is_dir()}
    assert dirs == set(UNL_CASES) | set(NL_CASES)


@pytest.mark.parametrize("name", UNL_CASES)
def test_unlization_case(name: str) -> None:
    want = EXPECTED["unlization"][name]
    r = unl_case(name)
    for kind in ("rel", "uw", "attr"):
        assert [r[f"{kind}_exc"], r[f"{kind}_miss"], r[f"{kind}_tot"]] == want[kind], kind
    assert r["d_rel_frac"] == want["d_rel"]
    assert r["d_uw_frac"] == want["d_uw"]
    assert r["d_all_frac"] == want["d_overall"]
    for col, key in (("d_rel", "d_rel"), ("d_uw", "d_uw"), ("d_all", "d_overall")):
        assert r[col] == pytest.approx(float(Fraction(want[key])))
    assert r["returned"] is want["returned"]
    assert r["correct"] is want["correct"]
    assert (r["reason"] is None) is want["correct"]
    assert r["task"] == "unlization"
    assert r["options"] == UnlOptions().signature()
    assert r["word_tot"] is None and r["d_words"] is None


@pytest.mark.parametrize("name", NL_CASES)
def test_nlization_case(name: str) -> None:
    want = EXPECTED["nlization"][name]
    r = nl_case(name)
    assert [r["word_exc"], r["word_miss"], r["word_tot"]] == [
        want["exceeding"], want["missing"], want["total"]
    ]  # fmt: skip
    assert r["d_words_frac"] == want["d"]
    assert r["returned"] is want["returned"]
    assert r["correct"] is want["correct"]
    assert r["task"] == "nlization" and r["rel_tot"] is None


def test_corpus_precision_recall_f_over_cases() -> None:
    sentences = unl_sentences_all()
    (row,) = unl_scores(sentences).to_dicts()
    cases = EXPECTED["unlization"].values()
    n = len(cases)
    ret = sum(c["returned"] for c in cases)
    cor = sum(c["correct"] for c in cases)
    p, r = Fraction(cor, ret), Fraction(cor, n)
    assert (row["n_expected"], row["n_returned"], row["n_correct"]) == (n, ret, cor)
    assert row["precision"] == pytest.approx(float(p))
    assert row["recall"] == pytest.approx(float(r))
    assert row["f1"] == pytest.approx(float(2 * p * r / (p + r)))
    # micro F1 = 1 - D over summed counts
    for kind in ("rel", "uw", "attr"):
        exc = sum(c[kind][0] for c in cases)
        miss = sum(c[kind][1] for c in cases)
        tot = sum(c[kind][2] for c in cases)
        assert row[f"{kind}_f1"] == pytest.approx(1 - (exc + miss) / tot)
    assert row["word_f1"] is None
    assert set(row) <= set(TABLES["unl_scores"].names)


def test_scores_p_null_when_nothing_returned() -> None:
    """No number without data (issue 20): P = correct/returned is NULL when nothing is
    returned (the UNLarium page says 0); R and F are 0: sentences were expected."""
    exp = read_unl("[S:1]{unl}agt(a,b){/unl}[/S]")
    act = read_unl("[S:1]{unl}agt(a,b)\nobj(c,d){/unl}[/S]")  # disconnected
    (row,) = unl_scores(score_unlization(exp, act)).to_dicts()
    assert (row["n_returned"], row["precision"], row["recall"], row["f1"]) == (0, None, 0.0, 0.0)


def test_sentence_frame_matches_schema() -> None:
    df = unl_sentences_all()
    schema = pl.Schema(TABLES["unl_sentences"])
    assert df.columns == [c for c in schema.names() if c not in ("corpus", "system")]
    for c in df.columns:
        assert df.schema[c] == schema[c], c


# ---------------------------------------------------------------------------- boundaries


def _chain(labels: list[str], extra_attrs: str = "") -> str:
    """v(icl>do) with one relation per label to targets n0, n1, ... (a star graph)."""
    rows = [f"{lab}(v(icl>do).@entry.@past, n{k}{extra_attrs if k == 0 else ''})"
            for k, lab in enumerate(labels)]  # fmt: skip
    return "[S:1]\n{unl}\n" + "\n".join(rows) + "\n{/unl}\n[/S]\n"


def test_d_rel_exactly_three_tenths_is_not_correct() -> None:
    """10 relations each side, 3 labels changed: exc 3, miss 3, tot 20 -> D_rel = 6/20 = 3/10.
    UWs are unchanged (D_uw = 0, 11 items per side); attributes S v @entry/@past (2 per side):
    D_all = 3*6 / (3*20 + 2*22 + 4) = 18/108 = 1/6 < 3/10."""
    labels = ["agt", "obj", "ins", "plc", "tim", "man", "ben", "gol", "src", "pur"]
    changed = ["aoj", "cnt", "met"] + labels[3:]
    (e,), (a,) = read_unl(_chain(labels)), read_unl(_chain(changed))
    r = score_unlization([e], [a]).row(0, named=True)
    assert (r["rel_exc"], r["rel_miss"], r["rel_tot"]) == (3, 3, 20)
    assert r["d_rel_frac"] == "3/10" and r["d_uw_frac"] == "0" and r["d_all_frac"] == "1/6"
    assert r["returned"] and not r["correct"]
    assert r["reason"] == "not correct: d_rel=3/10"
    # two labels changed: 4/20 = 1/5 < 3/10
    (a2,) = read_unl(_chain(["aoj", "cnt"] + labels[2:]))
    assert score_unlization([e], [a2])["correct"].item() is True


def test_d_all_exactly_three_tenths_from_attributes() -> None:
    """5 relations, 1 label changed: D_rel = 2/10, D_uw = 0 (12 UW items).
    Attributes: 4 shared items per side (v @entry @past, n1 @pl, n2 @pl) + x extra in actual.
    D_all = (3*2 + 0 + x) / (3*10 + 2*12 + 8 + x) = (6+x)/(62+x): x = 18 gives 24/80 = 3/10
    exactly (not correct); x = 17 gives 23/79 < 3/10 (correct)."""

    def doc(first: str, extra: int) -> str:
        attrs = "".join(f".@x{k}" for k in range(extra))
        rows = [f"{first}(v.@entry.@past, n0{attrs})", "obj(v.@entry.@past, n1.@pl)",
                "ins(v.@entry.@past, n2.@pl)", "plc(v.@entry.@past, n3)",
                "tim(v.@entry.@past, n4)"]  # fmt: skip
        return "{unl}\n" + "\n".join(rows) + "\n{/unl}\n"

    e = read_unl(doc("agt", 0))
    r = score_unlization(e, read_unl(doc("aoj", 18))).row(0, named=True)
    assert (r["d_rel_frac"], r["d_uw_frac"], r["d_all_frac"]) == ("1/5", "0", "3/10")
    assert (r["attr_exc"], r["attr_miss"], r["attr_tot"]) == (18, 0, 26)
    assert r["returned"] and not r["correct"]
    r = score_unlization(e, read_unl(doc("aoj", 17))).row(0, named=True)
    assert r["d_all_frac"] == "23/79" and r["correct"]


def test_exact_threshold_test_vs_float() -> None:
    """18/60 is not below 3/10. With per-kind float terms, (3*4 + 2*7 + 7)/110 = 33/110 = 3/10
    sums to 0.29999999999999993 and would pass; the exact test does not."""
    assert pl.select(below(pl.lit(18), pl.lit(60), Fraction(3, 10))).item() is False
    assert pl.select(below(pl.lit(17), pl.lit(60), Fraction(3, 10))).item() is True
    nr, nu, na, den = 4, 7, 7, 110
    naive = 3 * nr / den + 2 * nu / den + na / den
    assert naive < 0.3  # the trap is real
    df = pl.DataFrame({"n": [3 * nr + 2 * nu + na], "d": [den]})
    out = df.select(below(pl.col("n"), pl.col("d"), Fraction(3, 10)))
    assert out.item() is False
    assert with_fraction(df, "all", pl.col("n"), pl.col("d"))["d_all_frac"].item() == "3/10"
    # float thresholds become exact fractions via their repr
    assert UnlOptions(threshold=0.3).threshold == Fraction(3, 10)


def test_zero_denominator_is_zero_discrepancy() -> None:
    (e,) = read_unl("[S:1]{unl}[W]\nbook\n[/W]{/unl}[/S]")
    r = score_unlization([e], [e]).row(0, named=True)
    assert (r["rel_tot"], r["d_rel_frac"], r["attr_tot"]) == (0, "0", 0)
    assert (r["uw_tot"], r["correct"]) == (2, True)


# ---------------------------------------------------------------------------- options


def test_multiset_semantics_counts_repeated_items() -> None:
    e = read_unl("{unl}\nagt(a, b)\nagt(a, b)\nobj(a, c)\n{/unl}")
    a = read_unl("{unl}\nagt(a, b)\nobj(a, c)\n{/unl}")
    s = score_unlization(e, a).row(0, named=True)
    m = score_unlization(e, a, UnlOptions(multiset=True)).row(0, named=True)
    assert (s["rel_exc"], s["rel_miss"], s["rel_tot"]) == (0, 0, 4)
    assert (m["rel_exc"], m["rel_miss"], m["rel_tot"]) == (0, 1, 5)
    assert m["options"].startswith("sem:multiset|") and s["options"].startswith("sem:set|")


def test_keep_scope_ids() -> None:
    name = "05_scope_renumbered"
    assert unl_case(name)["d_rel_frac"] == "0"
    r = unl_case(name, UnlOptions(keep_scope_ids=True))
    # tim(see, [scope:02]) vs [scope:01], agt:02 vs agt:01 -> 2 exceeding, 2 missing
    assert (r["rel_exc"], r["rel_miss"], r["rel_tot"]) == (2, 2, 8)
    assert "scope:keep" in r["options"]


def test_legacy_overall_threshold() -> None:
    """A sentence failing only the overall test (D_all = 7/20) is correct under the 2013
    threshold (< 0.5)."""
    e = read_unl("{unl}\nagt(v.@entry, n0)\nobj(v.@entry, n1)\n{/unl}")
    a = read_unl(
        "{unl}\nagt(v.@entry.@a.@b.@c.@d.@e.@f, n0.@g.@h.@i.@j)\nobj(v.@entry, n1)\n{/unl}"
    )
    r = score_unlization(e, a).row(0, named=True)
    # attrs: e {S v @entry} ; a adds 6 on v (S) and 4 on n0 (T): exc 10, tot 12
    # D_all = 10 / (3*4 + 2*6 + 12) = 10/36 = 5/18 < 3/10 -> correct already
    assert r["d_all_frac"] == "5/18" and r["correct"]
    a = read_unl(
        "{unl}\nagt(v.@entry.@a.@b.@c.@d.@e.@f.@k.@l, n0.@g.@h.@i.@j.@m.@n)\n"
        "obj(v.@entry, n1)\n{/unl}"
    )
    r = score_unlization(e, a).row(0, named=True)
    assert r["d_all_frac"] == "7/20" and not r["correct"]  # 14/40
    r2 = score_unlization(e, a, UnlOptions.legacy_2013()).row(0, named=True)
    assert r2["correct"] and "thr_all:0.5" in r2["options"]


def test_extra_optional_attributes() -> None:
    e = read_unl("{unl}\nagt(v.@entry, n.@pl)\n{/unl}")
    a = read_unl("{unl}\nagt(v.@entry, n)\n{/unl}")
    assert score_unlization(e, a)["attr_miss"].item() == 1
    opts = UnlOptions(optional_attrs={"@def", "@indef", "@pl"})
    r = score_unlization(e, a, opts).row(0, named=True)
    assert r["attr_miss"] == 0 and "opt:@def,@indef,@pl" in r["options"]


def test_def_indef_ignored_but_other_attributes_count_by_position() -> None:
    e = read_unl("{unl}\nagt(v.@entry.@def, n.@indef)\n{/unl}")
    a = read_unl("{unl}\nagt(v.@entry, n)\n{/unl}")
    r = score_unlization(e, a).row(0, named=True)
    assert (r["attr_exc"], r["attr_miss"], r["attr_tot"]) == (0, 0, 2)
    # the same UW in source and target position are different UW items
    e = read_unl("{unl}\nagt(a, b)\nobj(b, c)\n{/unl}")
    assert score_unlization(e, e)["uw_tot"].item() == 8  # S a, T b, S b, T c (x2)


# ---------------------------------------------------------------------------- alignment


def test_alignment_by_id_and_missing_partner() -> None:
    e = read_unl("[S:1]{unl}agt(a,b){/unl}[/S][S:2]{unl}agt(c,d){/unl}[/S]")
    a = read_unl("[S:2]{unl}agt(c,d){/unl}[/S][S:9]{unl}agt(a,b){/unl}[/S]")
    df = score_unlization(e, a)
    assert df["sent_id"].to_list() == ["1", "2"]
    assert df["correct"].to_list() == [False, True]
    assert df["reason"][0] == "no actual sentence"
    assert df["rel_miss"][0] == 1 and df["rel_exc"][0] == 0
    by_pos = score_unlization(e, a, UnlOptions(align="position"))
    assert by_pos["correct"].to_list() == [False, False]


def test_parse_error_is_not_returned_with_line() -> None:
    e = read_unl("[S:1]\n{unl}\nagt(a,b)\n{/unl}\n[/S]")
    a = read_unl("[S:1]\n{unl}\nagt(a,b) junk\n{/unl}\n[/S]")
    r = score_unlization(e, a).row(0, named=True)
    assert not r["returned"] and r["reason"].startswith("parse error") and r["reason_line"] == 3


# ---------------------------------------------------------------------------- NLization


def test_nl_words_normalisation() -> None:
    assert nl_words("«Hello», World!  ‘x’ -- 3.5 $ ") == ["hello", "world", "x", "3.5"]
    assert nl_words("STRASSE Straße") == ["strasse", "strasse"]  # casefold, not lower


def test_nl_multiset_and_returned_rules() -> None:
    df = score_nlization(["the cat saw the dog", "a b c"], ["the cat saw dog", ""])
    r0, r1 = df.to_dicts()
    assert (r0["word_exc"], r0["word_miss"], r0["word_tot"]) == (0, 1, 9)
    assert r0["d_words_frac"] == "1/9" and r0["correct"]
    assert not r1["returned"] and r1["reason"] == "no words"
    for text in ("x.@def y", "[[dog(icl>animal)]]", "agt(kill, Peter)", "dog(icl>animal)"):
        assert nl_status(text, None)[0] is False, text
    assert nl_status("Peter (the man) said: a, b.", None) == (True, None)


def test_nl_threshold_boundary() -> None:
    """Expected 10 words; actual with 3 of them replaced: exc 3, miss 3, tot 20 -> exactly
    3/10, not correct. With 2 replaced: 4/20 = 1/5, correct. Extra words only: 3/23."""
    e10 = "a b c d e f g h i j"
    r = score_nlization([e10], ["a b c d e f g x y z"]).row(0, named=True)
    assert (r["word_exc"], r["word_miss"], r["word_tot"]) == (3, 3, 20)
    assert r["d_words_frac"] == "3/10" and r["returned"] and not r["correct"]
    assert r["reason"] == "not correct: d_words=3/10"
    r = score_nlization([e10], ["a b c d e f g h y z"]).row(0, named=True)
    assert r["d_words_frac"] == "1/5" and r["correct"]
    r = score_nlization([e10], [e10 + " k l m"]).row(0, named=True)
    assert r["d_words_frac"] == "3/23" and r["correct"]
    assert NlOptions(threshold=Fraction(1, 2)).signature().endswith("thr:0.5|align:auto")


@pytest.mark.parametrize("path", sorted((DATA / "real").glob("*")), ids=lambda p: p.name)
def test_real_exports_scored_against_themselves(path: Path) -> None:
    s = read_unl(path)
    df = score_unlization(s, s)
    assert df.height == len(s)
    assert df["returned"].all() and df["correct"].all(), df.filter(~pl.col("correct"))
    (row,) = unl_scores(df).to_dicts()
    assert (row["f1"], row["rel_f1"], row["uw_f1"]) == (1.0, 1.0, 1.0)


def test_nlization_from_unl_documents_aligned_by_id() -> None:
    path = DATA / "real/unlarium_ugoa1_en_ucn.excerpt.raw.html.txt"
    expected = read_nl(path, lang="en")
    actual = read_nl(
        "[S:389655]{en}another books{/en}[/S][S:389650]{en}the book{/en}[/S]"
        "[S:389649]{en}book(icl>volume){/en}[/S]"
    )
    df = score_nlization(expected, actual)
    by_id = {r["sent_id"]: r for r in df.to_dicts()}
    assert by_id["389650"]["correct"] and by_id["389650"]["d_words_frac"] == "0"
    assert by_id["389655"]["d_words_frac"] == "1/2" and not by_id["389655"]["correct"]
    assert not by_id["389649"]["returned"] and "UW in output" in by_id["389649"]["reason"]
    assert by_id["389739"]["reason"] == "no actual sentence"
    assert df["returned"].sum() == 2
