"""Comparison of grammar versions (METRICS 3.4) and warnings."""

from __future__ import annotations

import itertools
from pathlib import Path

import polars as pl
import pytest

from sysdiff.schemas.formats.unl import read_unl
from sysdiff.schemas.tables import TABLES
from sysdiff.transforms.unl import (
    UnlOptions,
    compare_versions,
    score_nlization,
    score_unlization,
    unl_warnings,
)

DATA = Path(__file__).resolve().parent / "data" / "unl"


def doc(*graphs: str) -> str:
    return "".join(f"[S:{k + 1}]{{unl}}{g}{{/unl}}[/S]" for k, g in enumerate(graphs))


EXPECTED = doc("agt(a,b)", "agt(c,d)\nobj(c,e)", "agt(x,y)", "agt(p,q)", "agt(m,n)")
VERSIONS = {
    # s1 ok, s2 wrong, s3 wrong (aoj), s4 ok, s5 disconnected
    "v1": doc("agt(a,b)", "aoj(c,d)\nobj(c,e)", "aoj(x,y)", "agt(p,q)", "agt(m,n)\nobj(z,w)"),
    # s1 wrong, s2 ok, s3 wrong differently (cnt), s4 ok, s5 disconnected the same way
    "v2": doc("aoj(a,b)", "agt(c,d)\nobj(c,e)", "cnt(x,y)", "agt(p,q)", "agt(m,n)\nobj(z,w)"),
    # s1 ok, s2 ok, s3 same error as v1, s4 ok, s5 ok
    "v3": doc("agt(a,b)", "agt(c,d)\nobj(c,e)", "aoj(x,y)", "agt(p,q)", "agt(m,n)"),
}


@pytest.fixture(scope="module")
def result() -> dict[str, pl.DataFrame]:
    e = read_unl(EXPECTED)
    return compare_versions({k: score_unlization(e, read_unl(v)) for k, v in VERSIONS.items()})


def pair(result: dict, a: str, b: str) -> dict:
    p = result["pairs"]
    (row,) = p.filter((pl.col("sys1") == a) & (pl.col("sys2") == b)).to_dicts()
    return row


def test_pair_counts_worked_example(result: dict) -> None:
    r = pair(result, "v1", "v2")
    # s1 new error, s2 correction, s3 changed error (aoj -> cnt), s5 same profile: unchanged
    assert (r["corrections"], r["new_errors"], r["changed_errors"]) == (1, 1, 1)
    assert (r["n_sentences"], r["n_changed"], r["diff"]) == (5, 3, 3 / 5)
    r = pair(result, "v1", "v3")
    # s2 and s5 corrected; s3 has the same error in both
    assert (r["corrections"], r["new_errors"], r["changed_errors"]) == (2, 0, 0)
    assert r["oracle"] == 4 / 5


def test_pair_invariants(result: dict) -> None:
    for a, b in itertools.permutations(VERSIONS, 2):
        ab, ba = pair(result, a, b), pair(result, b, a)
        assert ab["corrections"] == ba["new_errors"]
        assert ab["changed_errors"] == ba["changed_errors"]
        assert ab["n_correct2"] - ab["n_correct1"] == ab["corrections"] - ab["new_errors"]
    assert result["pairs"].height == 6


def test_oracle(result: dict) -> None:
    rows = {tuple(r["systems"]): r for r in result["oracle"].to_dicts()}
    assert len(rows) == 7  # every subset of the three versions
    o = rows[("v1", "v2", "v3")]
    # s1 (v1, v3), s2 (v2, v3), s3 nobody, s4 all, s5 (v3)
    assert (o["n_sentences"], o["n_oracle"], o["oracle"]) == (5, 4, 4 / 5)
    assert (o["best_system"], o["best_correct"], o["gain"]) == ("v3", 4, 0.0)
    # v1 gets s1 and s4, v2 gets s2 and s4: together 3; the tie goes to the first name
    o = rows[("v1", "v2")]
    assert (o["n_oracle"], o["best_system"], o["best_correct"], o["gain"]) == (3, "v1", 2,
                                                                              1 / 5)


def test_moved_drill_down(result: dict) -> None:
    m = result["moved"].filter((pl.col("sys1") == "v1") & (pl.col("sys2") == "v2"))
    assert m.select("sent_id", "change").rows() == [
        ("1", "new_error"), ("2", "correction"), ("3", "changed_error")
    ]  # fmt: skip
    assert m["d_all_frac1"].to_list() == ["0", "1/4", "3/7"]
    for name, df in result.items():
        schema = pl.Schema(TABLES[{"pairs": "unl_pairs", "oracle": "unl_oracle",
                                   "moved": "unl_moved"}[name]])  # fmt: skip
        assert df.columns == [c for c in schema.names() if c != "corpus"]


def test_mixed_options_are_refused() -> None:
    e = read_unl(EXPECTED)
    with pytest.raises(ValueError, match="different options"):
        compare_versions({
            "v1": score_unlization(e, read_unl(VERSIONS["v1"])),
            "v2": score_unlization(e, read_unl(VERSIONS["v2"]), UnlOptions(multiset=True)),
        })  # fmt: skip


# ---------------------------------------------------------------------------- warnings


def test_warning_for_ucl_vs_ucn() -> None:
    ucn = read_unl(DATA / "real/unlarium_aa1_en_ucn.raw.html.txt")
    ucl = read_unl(DATA / "real/unlarium_aa1_en_ucl.raw.html.txt")
    ws = unl_warnings(ucn, ucl)
    assert any("UW encodings differ" in w for w in ws)
    # UCN has 13 sentences, UCL 8: 5 expected ids are missing in actual
    assert any("5 expected sentence id(s) not found" in w for w in ws)
    assert not any("UW encodings differ" in w for w in unl_warnings(ucn, ucn))
    df = score_unlization(ucn, ucl)
    assert df["correct"].sum() < df.height // 2  # ~100% discrepancy on UWs


def test_warning_for_unknown_labels_and_unmatched_actual() -> None:
    e = read_unl(doc("agt(a,b)"))
    a = read_unl(doc("xyz(a,b)", "agt(c,d)"))
    ws = unl_warnings(e, a)
    assert any("unknown relation label 'xyz'" in w and w.startswith("actual") for w in ws)
    assert any("1 actual sentence(s) have no expected partner" in w for w in ws)
    assert unl_warnings(e, e) == []


def test_warning_when_ids_cannot_be_aligned() -> None:
    e = read_unl(doc("agt(a,b)", "agt(c,d)"))
    a = read_unl("[S:10]{unl}agt(a,b){/unl}[/S][S:11]{unl}agt(c,d){/unl}[/S]")
    ws = unl_warnings(e, a)
    assert any("no sentence id matches" in w for w in ws)
    dup = read_unl("[S:1]{unl}agt(a,b){/unl}[/S][S:1]{unl}agt(c,d){/unl}[/S]")
    assert any("duplicate sentence ids" in w for w in unl_warnings(e, dup))
    mixed = read_unl("[S:1]{unl}agt(a,b){/unl}[/S][S]{unl}agt(c,d){/unl}[/S]")
    assert any("some sentences have no id" in w for w in unl_warnings(e, mixed))


def test_warning_for_malformed_expected_sentence() -> None:
    e = read_unl("[S:1]\n{unl}\nagt(a,b) ???\n{/unl}\n[/S]")
    ws = unl_warnings(e, e)
    assert any("expected sentence 1 (line 3) is malformed" in w for w in ws)


def test_compare_nlization_versions() -> None:
    expected = ["the hare ran", "the tortoise won", "slow and steady"]
    v1 = score_nlization(expected, ["the hare ran", "a tortoise lost", "slow and steady"])
    v2 = score_nlization(expected, ["the hare run", "the tortoise won", "slow and steady"])
    out = compare_versions({"v1": v1, "v2": v2})
    moved = out["moved"].filter(pl.col("sys1") == "v1")
    assert moved.select("sent_id", "change").rows() == [("#1", "new_error"), ("#2", "correction")]
    assert moved["d_all_frac2"].to_list() == ["1/3", "0"]  # NLization: d_words
    (o,) = out["oracle"].filter(pl.col("n_systems") == 2).to_dicts()
    assert (o["task"], o["n_oracle"], o["n_sentences"]) == ("nlization", 3, 3)
