"""UNL end to end through the CLI: the hand-worked cases as one corpus with two versions."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from sysdiff.flows.queries import query
from tests.conftest import TEST_DATA

CASES = TEST_DATA / "unl" / "cases"
EXPECTED = json.loads((TEST_DATA / "unl" / "expected.json").read_text())["unlization"]


def sent_id(case: str) -> str:
    return (CASES / case / "expected.unl").read_text().split("]")[0].split(":")[1]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    tmp = tmp_path_factory.mktemp("unl")
    for side in ("expected", "actual"):
        text = "\n".join((CASES / c / f"{side}.unl").read_text() for c in sorted(EXPECTED))
        (tmp / f"{side}.unl").write_text(text)
    root = tmp / "wh"
    code, out, err = run_cli("run", "--task", "unl", "--corpus", "cases", "--key",
                             str(tmp / "expected.unl"), "--system", f"v0={tmp / 'expected.unl'}",
                             "--system", f"v1={tmp / 'actual.unl'}", "-w", str(root))
    assert code == 0, err
    return root


def test_every_case_exactly(warehouse):
    rows = {r["sent_id"]: r for r in query(
        warehouse, "select * from unl_sentences where system = 'v1'").rows(named=True)}
    assert len(rows) == len(EXPECTED)
    for case, exp in EXPECTED.items():
        r = rows[sent_id(case)]
        for kind in ("rel", "uw", "attr"):
            assert [r[f"{kind}_exc"], r[f"{kind}_miss"], r[f"{kind}_tot"]] == exp[kind], case
        assert Fraction(r["d_rel_frac"]) == Fraction(exp["d_rel"]), case
        assert Fraction(r["d_uw_frac"]) == Fraction(exp["d_uw"]), case
        assert Fraction(r["d_all_frac"]) == Fraction(exp["d_overall"]), case
        assert (r["returned"], r["correct"]) == (exp["returned"], exp["correct"]), case


def test_corpus_scores_follow_the_verdicts(warehouse):
    n = len(EXPECTED)
    returned = sum(e["returned"] for e in EXPECTED.values())
    correct = sum(e["correct"] for e in EXPECTED.values())
    row = query(warehouse, "select * from unl_scores where system = 'v1'").row(0, named=True)
    p, r = correct / returned, correct / n
    assert (row["n_expected"], row["n_returned"], row["n_correct"]) == (n, returned, correct)
    assert row["precision"] == pytest.approx(p) and row["recall"] == pytest.approx(r)
    assert row["f1"] == pytest.approx(2 * p * r / (p + r))


def test_versions_compared(warehouse):
    wrong = sum(not e["correct"] for e in EXPECTED.values())
    p = query(warehouse, "select * from unl_pairs where sys1 = 'v0' and sys2 = 'v1'"
              ).row(0, named=True)
    assert (p["corrections"], p["new_errors"]) == (0, wrong)
    back = query(warehouse, "select * from unl_pairs where sys1 = 'v1' and sys2 = 'v0'"
                 ).row(0, named=True)
    assert (back["corrections"], back["new_errors"]) == (wrong, 0)
    moved = query(warehouse, "select count(*) as n from unl_moved where sys1 = 'v0' "
                             "and sys2 = 'v1' and change = 'new_error'")["n"][0]
    assert moved == wrong
    oracle = query(warehouse, "select oracle from unl_oracle")["oracle"][0]
    assert oracle == 1.0


def test_not_unl_at_all_is_a_clean_error(tmp_path, cli):
    bad = tmp_path / "bad.unl"
    bad.write_bytes(b"\x00\x01binary")
    key = CASES / "01_identical" / "expected.unl"
    code, _, err = cli("run", "--task", "unl", "--corpus", "x", "--key", str(key),
                       "--system", f"a={bad}", "-w", str(tmp_path / "wh"))
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "wh").exists()


