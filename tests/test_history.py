"""Version histories: ordering, hand-worked steps, and the table of a real 5-version run."""

from __future__ import annotations

import polars as pl
import pytest

from sysdiff.flows.queries import query
from sysdiff.transforms.history import history_table, natural_key, version_order


def test_natural_order_of_versions():
    versions = ["ud2.16", "ud2.8", "v10", "v9", "1.10.0", "1.9.2", "beta"]
    assert sorted(versions, key=natural_key) == ["1.9.2", "1.10.0", "beta", "ud2.8", "ud2.16",
                                                 "v9", "v10"]


def test_explicit_order_comes_first_then_natural():
    order = version_order(["p@b", "p@a", "p@10", "p@9", "q@1", "plain"], {"p": ["b", "a"]})
    assert [v for v, _ in order["p"]] == ["b", "a", "9", "10"]
    assert list(order) == ["p", "q"]  # systems without @VERSION have no history


def test_history_steps_hand_worked():
    scores = pl.DataFrame({"view": "upos", "system": ["p@1", "p@2", "p@3", "other"],
                           "score": [0.5, 0.7, 0.6, 0.9]})
    pairs = pl.DataFrame(
        [("p@1", "p@2", 3, 1, 2, 0.625), ("p@2", "p@3", 1, 2, 0, 1.0),
         ("p@1", "p@3", 2, 1, 1, 1.0)],
        schema=["sys1", "sys2", "corrections", "new_errors", "changed_errors", "mcnemar_p"],
        orient="row").with_columns(view=pl.lit("upos"))
    rows = {r["version"]: r for r in history_table(scores, pairs, ["view"]).to_dicts()}
    assert set(rows) == {"1", "2", "3"}
    assert rows["1"]["previous"] is None and rows["1"]["delta"] is None
    two, three = rows["2"], rows["3"]
    assert (two["previous"], two["corrections"], two["new_errors"], two["mcnemar_p"]) == (
        "1", 3, 1, 0.625)
    assert two["delta"] == pytest.approx(0.2) and two["best_version"] == "1"
    # version 3 falls back from 2, which is also the best before it
    assert (three["previous"], three["best_version"], three["position"]) == ("2", "2", 3)
    assert three["delta"] == pytest.approx(-0.1) and three["delta_best"] == pytest.approx(-0.1)
    assert (three["corrections"], three["new_errors"], three["mcnemar_p_best"]) == (1, 2, 1.0)


def test_history_of_a_real_five_version_run(bundled):
    wh = bundled("history")
    hist = query(wh, "select * from history where view = 'las' and not punct order by position")
    assert hist["version"].to_list() == ["1", "2", "3", "4", "5"]
    pairs = query(wh, "select sys1, sys2, n_units, corrections, new_errors, mcnemar_p from pairs "
                      "where view = 'las' and not punct")
    step = {(r["sys1"], r["sys2"]): r for r in pairs.to_dicts()}
    for r in hist.to_dicts()[1:]:
        p = step[(f"parser@{r['previous']}", f"parser@{r['version']}")]
        assert (r["corrections"], r["new_errors"], r["mcnemar_p"]) == (
            p["corrections"], p["new_errors"], p["mcnemar_p"])
        # acc2 - acc1 = (corrections - new errors) / |T|
        assert r["delta"] == pytest.approx((p["corrections"] - p["new_errors"]) / p["n_units"])
    # version 5 rolls back to version 3's file: the same score, and 4 -> 5 undoes 3 -> 4
    v = {r["version"]: r for r in hist.to_dicts()}
    assert v["5"]["score"] == v["3"]["score"]
    assert (v["5"]["corrections"], v["5"]["new_errors"]) == (v["4"]["new_errors"],
                                                              v["4"]["corrections"])
    assert v["5"]["best_version"] == "2"


def test_history_of_the_unl_sample(bundled):
    """data/unl: version 2 fixes sentences 2 and 8 and breaks sentence 1; version 3 fixes 1."""
    hist = query(bundled("unl"), "select * from history order by position").to_dicts()
    assert [(r["version"], r["corrections"], r["new_errors"]) for r in hist] == [
        ("1", None, None), ("2", 2, 1), ("3", 1, 0)]
    assert all(r["view"] == "unlization" and r["punct"] is None for r in hist)
    assert hist[2]["best_version"] == "2" and hist[2]["mcnemar_p"] == 1.0


def test_show_history_and_check_against_the_previous_version(bundled, cli):
    wh = str(bundled("history"))
    code, out, err = cli("show", "history", "-w", wh, "--format", "csv")
    assert code == 0, err
    rows = out.strip().splitlines()
    assert len(rows) == 6 and rows[0].startswith("version,previous,LAS (no punct) %")
    hist = {r["version"]: r for r in query(bundled("history"), "select * from history where "
                                           "view = 'las' and not punct").to_dicts()}
    assert rows[5].split(",")[:2] == ["5", "4"] and ",loss," in rows[5]
    # version 5 makes more new errors against version 4 than the gate allows
    n = hist["5"]["new_errors"]
    assert cli("check", "-w", wh, "--candidate", "parser@5", "--max-new-errors", str(n))[0] == 0
    code, _, err = cli("check", "-w", wh, "--candidate", "parser@5", "--max-new-errors",
                       str(n - 1))
    assert code == 1 and "against parser@4" in err
    code, _, err = cli("check", "-w", wh, "--candidate", "parser@1", "--max-new-errors", "0")
    assert code == 2 and "first version" in err and err.count("\n") == 1
    code, _, err = cli("show", "history", "-w", wh, "--name", "nope")
    assert code == 2 and "expected one of parser" in err


def test_serve_reports_the_newest_versions(bundled):
    from sysdiff.flows.gates import latest_steps

    (line,) = latest_steps(bundled("history"), "sequoia-history")
    assert line.startswith("REGRESSION: parser@5 vs @4") and "435 new errors" in line
