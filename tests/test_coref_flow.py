"""Coreference end to end through the CLI on the bundled LitBank sample."""

from __future__ import annotations

import csv

import pytest

from sysdiff.flows.queries import query
from tests.conftest import REPO, snapshot

LITBANK = REPO / "data" / "litbank"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("coref") / "wh"
    code, out, err = run_cli("run", str(LITBANK / "litbank.toml"), "-w", str(root))
    assert code == 0, err
    assert "CoNLL F1 %" in out  # the headline shows the CoNLL F1 column, in percent
    return root


def test_scores_equal_the_reference_scorer(warehouse):
    got = {(s, m): (r, p, f) for s, m, r, p, f in query(
        warehouse, "select system, metric, recall, precision, f1 from coref_scores").rows()}
    with open(LITBANK / "expected.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 18
    for row in rows:
        r, p, f1 = got[(row["case"], row["metric"])]
        assert r == pytest.approx(float(row["recall"]), abs=1e-4)
        assert p == pytest.approx(float(row["precision"]), abs=1e-4)
        assert f1 == pytest.approx(float(row["f1"]), abs=1e-4)


def test_conll_average_is_the_mean_of_muc_bcub_ceafe(warehouse):
    rows = query(warehouse, "select system, metric, f1 from coref_scores").rows()
    f1 = {(s, m): v for s, m, v in rows}
    for s in ("sys1", "sys2", "sys3"):
        mean = (f1[(s, "muc")] + f1[(s, "bcub")] + f1[(s, "ceafe")]) / 3
        assert f1[(s, "conll")] == pytest.approx(mean)


def test_pair_tables_are_consistent(warehouse):
    p = {(c, a, b): r for c, a, b, *r in query(
        warehouse, "select criterion, sys1, sys2, corrections, new_errors, n_diff "
                   "from coref_pairs").rows()}
    assert len(p) == 12
    for (c, a, b), (fixed, broken, n_diff) in p.items():
        back = p[(c, b, a)]
        assert (fixed, broken, n_diff) == (back[1], back[0], back[2])
    t = query(warehouse, "select criterion, sys1, sys2, sum(count) filter (where c1 != c2) d "
                         "from coref_transitions where mtype = 'ALL' and word is null "
                         "group by all").rows()
    for c, a, b, d in t:
        assert d == p[(c, a, b)][2]


def test_arcs_counts_match_mention_classes(warehouse):
    bad = query(warehouse, """
        with c as (select system, criterion, cls, count(*) n from mention_classes group by all)
        select * from arcs_scores a join c using (system, criterion)
        where a.mtype = 'ALL' and ((cls = 'TP' and n != a.tp) or (cls = 'FP' and n != a.fp)
              or (cls = 'FN' and n != a.fn) or (cls = 'WL' and n != a.wl)
              or (cls = 'TN' and n != a.tn))""")
    assert bad.is_empty()


def test_bad_response_leaves_warehouse_unchanged(warehouse, tmp_path, cli):
    lines = (LITBANK / "sys1.conll").read_text(encoding="utf-8").splitlines(keepends=True)
    idx = next(i for i, ln in enumerate(lines) if ln.rstrip().endswith(")") and "(" not in
               ln.rsplit("\t", 1)[-1])
    lines[idx] = lines[idx].rsplit("\t", 1)[0] + "\t999)\n"  # closes a mention never opened
    bad = tmp_path / "bad.conll"
    bad.write_text("".join(lines), encoding="utf-8")
    before = snapshot(warehouse)
    code, _, err = cli("run", "--key", str(LITBANK / "key.conll"), "--system", f"bad={bad}",
                       "--corpus", "litbank", "--task", "coref", "-w", str(warehouse))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{bad}:{idx + 1}" in err
    assert snapshot(warehouse) == before


def test_show_coref_pair_prints_the_paper_summary(warehouse, cli):
    code, out, _ = cli("show", "coref_pairs", "-w", str(warehouse), "--sys1", "sys1",
                       "--sys2", "sys2", "--view", "any")
    n_diff, n = query(warehouse, "select n_diff, n_mentions from coref_pairs where "
                                 "criterion = 'any' and sys1 = 'sys1' and sys2 = 'sys2'").row(0)
    assert code == 0 and f"({n_diff}/{n})" in out
