"""The srl task end to end on the bundled Universal PropBank sample: every figure of
``data/srl/expected.csv`` from the warehouse (head and span mode), the change-class
invariants per unit type, shard-size invariance, CoNLL-U and CoNLL-2009 giving the same
tables, version histories, bad inputs (one line, exit 2, the warehouse untouched) and the
read-only commands (show, examples, check, report)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import polars as pl
import pytest

from sysdiff.flows.queries import query
from tests.conftest import run_cli, snapshot
from tests.snapshot import digests
from tests.srl_expected import CASES, SRL, check_row, expected_rows, score_key

SRL_TABLES = ("srl_scores", "srl_classes", "srl_pairs", "srl_changes", "srl_transitions",
              "srl_oracles")


def run(root: Path, ext: str, *options: str, names: tuple[str, ...] = CASES) -> None:
    systems = [a for case, name in zip(CASES, names, strict=True)
               for a in ("--system", f"{name}={SRL / f'{case}.{ext}'}")]
    code, _out, err = run_cli("run", "--task", "srl", "--corpus", "up", "--key",
                              str(SRL / f"key.{ext}"), *systems, "-w", str(root),
                              "--ar-trials", "200", *options)
    assert code == 0, err


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory, prefect_harness):
    """Head mode (CoNLL-U), the same with tiny shards and from CoNLL-2009, span mode
    (CoNLL-2005), and a version history."""
    tmp = tmp_path_factory.mktemp("srl")
    out = {k: tmp / k for k in ("head", "small", "conll09", "span", "history")}
    run(out["head"], "conllu")
    run(out["small"], "conllu", "--shard-sents", "7")
    run(out["conll09"], "conll09")
    run(out["span"], "conll05")
    run(out["history"], "conllu", names=("gold@0", "srl@1", "srl@2", "srl@3"))
    return out


def stored_scores(root: Path) -> dict:
    return {(r["system"], r["mode"], r["role"], r["ppos"]): r
            for r in query(root, "select * from srl_scores").to_dicts()}


@pytest.mark.parametrize(("name", "mode"), [("head", "head"), ("conll09", "head"),
                                            ("span", "span")])
def test_warehouse_scores_equal_the_official_scorers(warehouses, name, mode):
    got = stored_scores(warehouses[name])
    rows = expected_rows(mode)
    for row in rows:
        check_row(row, got[(row["case"], *score_key(row))])
    assert len(rows) == (1080 if mode == "head" else 140)


def test_shard_size_changes_no_table(warehouses):
    a, b = digests(warehouses["head"]), digests(warehouses["small"])
    assert set(SRL_TABLES) <= set(a)
    assert {t: a[t] for t in a if t.startswith("srl")} == {t: b[t] for t in b
                                                           if t.startswith("srl")}


def test_conllu_and_conll09_give_the_same_comparison(warehouses):
    a, b = digests(warehouses["head"]), digests(warehouses["conll09"])
    for table in SRL_TABLES:
        assert a[table] == b[table], table


def accuracies(root: Path, unit: str, a: str, b: str) -> tuple[int, int, int]:
    """(units of the pair, units right under a, under b), counted from ``srl_classes``: key
    units (correct is right) and the spurious units of either system (absent is right)."""
    key = """coalesce(pieces, '') || '|' || sent || '|' || pred || '|' || start || '|' ||
             "end" || '|' || role"""
    row = query(root, f"""
        with c as (select system, in_key, cls, {key} as k from srl_classes
                   where unit = '{unit}' and system in ('{a}', '{b}')),
        n_key as (select count(*) as n from c where system = '{a}' and in_key),
        sp as (select k, count(*) filter (where system = '{a}') as in_a,
                         count(*) filter (where system = '{b}') as in_b
               from c where not in_key group by k)
        select (select n from n_key) + (select count(*) from sp) as n,
               (select count(*) from c where system = '{a}' and in_key and cls = 'correct')
                 + (select count(*) from sp where in_a = 0) as right_a,
               (select count(*) from c where system = '{b}' and in_key and cls = 'correct')
                 + (select count(*) from sp where in_b = 0) as right_b""").row(0)
    return row


@pytest.mark.parametrize("name", ["head", "span"])
def test_invariants_per_unit_type(warehouses, name):
    """acc2 - acc1 = (corrections - new errors) / |units| for argument and predicate units,
    with the accuracies counted from the class table; the two directions mirror; correct
    classes are the scorers' correct counts."""
    root = warehouses[name]
    pairs = query(root, "select * from srl_pairs").to_dicts()
    assert {p["unit"] for p in pairs} == {"argument", "predicate"}
    assert len(pairs) == 2 * 12
    by = {(p["unit"], p["sys1"], p["sys2"]): p for p in pairs}
    for p in pairs:
        n, right1, right2 = accuracies(root, p["unit"], p["sys1"], p["sys2"])
        assert n == p["n_units"]
        delta = (p["corrections"] - p["new_errors"]) / n
        assert right2 / n - right1 / n == pytest.approx(delta, abs=1e-12)
        assert p["delta_acc"] == pytest.approx(delta, abs=1e-12)
        back = by[(p["unit"], p["sys2"], p["sys1"])]
        assert (back["corrections"], back["new_errors"]) == (p["new_errors"],
                                                             p["corrections"])
        assert p["n_diff"] == p["corrections"] + p["new_errors"] + p["changed_errors"]
    scores = stored_scores(root)
    arg_mode, pred_mode = (("args_labeled", "predicates_labeled") if name == "head"
                           else ("span", "predicates"))
    counts = query(root, """select system, unit, count(*) filter (where cls = 'correct') as n
        from srl_classes group by all""").rows()
    for system, unit, n in counts:
        mode = arg_mode if unit == "argument" else pred_mode
        assert n == scores[(system, mode, "ALL", None)]["n_correct"], (system, unit)
    # the class transitions hold every unit; a correction or a new error always changes
    # the class (right <-> wrong), a changed error may keep it (role ARG1 -> role ARG2)
    ok = "('correct', 'absent')"
    trans = query(root, f"""select unit, sys1, sys2, sum(count)::bigint as n,
        sum(count) filter (where c1 not in {ok} and c2 in {ok})::bigint as fix,
        sum(count) filter (where c1 in {ok} and c2 not in {ok})::bigint as brk,
        sum(count) filter (where c1 != c2)::bigint as moved
        from srl_transitions where label = 'ALL' group by all""").rows()
    assert len(trans) == len(pairs)
    for unit, a, b, n, fix, brk, moved in trans:
        p = by[(unit, a, b)]
        assert (n, fix or 0, brk or 0) == (p["n_units"], p["corrections"], p["new_errors"])
        assert moved <= p["n_diff"]


def test_randomization_p_from_the_class_table(warehouses):
    """A pair's ar_p is the engine's paired randomization over sentences of the units right
    (METRICS 1.6), here recomputed from the per-sentence right units of ``srl_classes``."""
    import numpy as np

    from sysdiff.transforms.significance import randomization_from_histogram

    root = warehouses["head"]
    for unit in ("argument", "predicate"):
        p = query(root, f"""select * from srl_pairs where unit = '{unit}' and
            sys1 = 'sys1' and sys2 = 'sys2'""").row(0, named=True)
        per = query(root, f"""
            with c as (select system, sent, in_key, cls,
                              coalesce(pieces, '') || sent || '|' || pred || '|' || start
                              || '|' || role as k
                       from srl_classes where unit = '{unit}' and system in ('sys1', 'sys2')),
            keyed as (select sent, count(*) filter (where system = 'sys2' and cls = 'correct')
                             - count(*) filter (where system = 'sys1' and cls = 'correct') as d
                      from c where in_key group by sent),
            sp as (select sent, k, count(*) filter (where system = 'sys1') as a,
                          count(*) filter (where system = 'sys2') as b
                   from c where not in_key group by sent, k),
            spd as (select sent, sum(case when b = 0 then 1 else 0 end)
                             - sum(case when a = 0 then 1 else 0 end) as d from sp group by sent)
            select coalesce(k.sent, s.sent) as sent, coalesce(k.d, 0) + coalesce(s.d, 0) as d
            from keyed k full join spd s on k.sent = s.sent""")
        d = per["d"].cast(pl.Int64).to_numpy()
        values, counts = np.unique(d[d != 0], return_counts=True)
        assert randomization_from_histogram(values, counts, 200, 0) == p["ar_p"], unit


def test_the_perfect_system_and_the_change_tables(warehouses):
    root = warehouses["head"]
    perfect = query(root, """select * from srl_pairs where sys1 = 'key' and
        unit = 'argument'""").to_dicts()
    for p in perfect:   # the key as a system makes no correction
        assert p["corrections"] == 0 and p["changed_errors"] == 0
    changes = query(root, """select class, sum(count) as n from srl_changes where
        unit = 'argument' and sys1 = 'sys1' and sys2 = 'sys3' group by class""").rows()
    pair = query(root, """select * from srl_pairs where unit = 'argument' and sys1 = 'sys1'
        and sys2 = 'sys3'""").row(0, named=True)
    assert dict(changes) == {"correction": pair["corrections"],
                             "new_error": pair["new_errors"],
                             "changed_error": pair["changed_errors"]}
    oracle = query(root, """select n_correct from srl_oracles where unit = 'argument' and
        label = 'ALL' and systems = ['key']""").item()
    with open(SRL / "expected.csv") as f:  # the key's arguments, as eval09.pl counts them
        gold = next(int(r["gold"]) for r in csv.DictReader(f) if (
            r["case"], r["scorer"], r["metric"], r["label"]) == (
            "key", "eval09.pl", "args_labeled", "ALL"))
    assert oracle == gold


def test_history_of_versions(warehouses, cli):
    root = warehouses["history"]
    rows = query(root, "select * from history order by view, position").to_dicts()
    assert {r["view"] for r in rows} == {"argument", "predicate"}
    arg = [r for r in rows if r["view"] == "argument" and r["name"] == "srl"]
    assert [r["version"] for r in arg] == ["1", "2", "3"]
    step = query(root, """select * from srl_pairs where unit = 'argument' and
        sys1 = 'srl@1' and sys2 = 'srl@2'""").row(0, named=True)
    assert (arg[1]["corrections"], arg[1]["new_errors"]) == (step["corrections"],
                                                             step["new_errors"])
    assert arg[1]["delta"] == pytest.approx(step["delta_f1"])
    code, out, err = cli("show", "history", "--name", "srl", "--view", "predicate", "-w",
                         str(root))
    assert code == 0 and "predicates F1" in out, err
    code, out, err = cli("check", "--candidate", "srl@3", "--max-new-errors", "2000", "-w",
                         str(root))
    assert code == 0 and "against srl@2" in out, err


def test_show_examples_and_check(warehouses, cli):
    w = ["-w", str(warehouses["head"])]
    code, out, err = cli("show", "srl_scores", *w)
    assert code == 0 and "74.97" in out and "69.67" in out, err  # official, no senses
    code, out, _ = cli("show", "srl_scores", "--view", "ARG0", *w)
    assert code == 0 and "70.62" in out                            # eval09 ARG0 of sys1
    code, out, _ = cli("show", "srl_classes", "--view", "predicate", *w)
    assert code == 0 and "sense" in out
    code, out, _ = cli("show", "srl_pairs", "--sys1", "sys1", "--sys2", "sys2", *w)
    assert code == 0 and "Difference:" in out and "role -> role" in out
    code, out, _ = cli("show", "srl_oracles", *w)
    assert code == 0 and "oracle recall" in out
    n = query(warehouses["head"], """select count from srl_changes where unit = 'argument'
        and sys1 = 'sys1' and sys2 = 'sys2' and class = 'changed_error' and gold = 'ARG0'
        and l1 = 'ARG0' and l2 = 'ARG1'""")
    n = n["count"][0] if n.height else 0
    code, out, err = cli("examples", "--sys1", "sys1", "--sys2", "sys2", "--class",
                         "new_error", "--gold", "ARG0", "--l1", "ARG0", "--l2", "ARG1",
                         "--limit", "-1", "--format", "json", *w)
    rows = json.loads(out)
    assert code == 0, err
    stored = query(warehouses["head"], """select count from srl_changes where
        unit = 'argument' and sys1 = 'sys1' and sys2 = 'sys2' and class = 'new_error' and
        gold = 'ARG0' and l1 = 'ARG0' and l2 = 'ARG1'""")["count"][0]
    assert len(rows) == stored and n >= 0
    for r in rows:
        assert r["c1"] == "correct" and r["c2"] == "role" and r["gold"] == "ARG0"
        assert re.search(r"\{[^}]+\}", r["sentence"]) and "[" in r["sentence"]
        assert r["sys2"] == "role (ARG1)"
    code, out, err = cli("check", "--baseline", "sys1", "--candidate", "sys2",
                         "--max-new-errors", "100", *w)
    assert code == 1 and "1210 new errors (argument units)" in err
    code, out, err = cli("check", "--baseline", "sys1", "--candidate", "sys2", "--view",
                         "predicate", "--min-delta", "-20", *w)
    assert code == 0 and "predicates F1" in out, err
    code, _, err = cli("show", "srl_scores", "--view", "ARG9", *w)
    assert code == 2 and "expected argument, predicate or a role" in err


def test_report_has_an_srl_section(warehouses, tmp_path, cli):
    out = tmp_path / "r.html"
    code, _, err = cli("report", "-o", str(out), "-w", str(warehouses["span"]))
    assert code == 0, err
    html = out.read_text()
    section = html[html.index('id="up-srl"'):]
    for text in ("Official scores", "67.28", "Argument classes", "Pairs over predicate units",
                 "Oracle recall", "srl-examples"):
        assert text in section, text


BAD = {
    "word": (lambda t: t.replace("\tstory\tstory\t", "\tstorm\tstory\t", 1),
             "form 'storm' differs from the key's 'story'", 9),
    "columns": (lambda t: t.replace("\tcome.03\tV\n", "\tcome.03\tV\t_\n", 1),
                "line has 13 columns; expected 12", 7),
    "sentence": (lambda t: t.split("\n\n", 1)[1], "has 373 sentences but the key", None),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_system_is_one_line_and_leaves_the_warehouse(warehouses, tmp_path, cli, name):
    change, phrase, line = BAD[name]
    root = tmp_path / "wh"
    run(root, "conllu")
    before = snapshot(root)
    path = tmp_path / "bad.conllu"
    good = (SRL / "sys1.conllu").read_text(encoding="utf-8")
    path.write_text(change(good), encoding="utf-8")
    code, out, err = cli("run", "--task", "srl", "--corpus", "up", "--key",
                         str(SRL / "key.conllu"), "--system", f"bad={path}", "-w", str(root))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"sysdiff: error: {path}" + (f":{line}:" if line else ":"))
    assert phrase in lines[0], lines[0]
    assert "Traceback" not in out + err
    assert snapshot(root) == before


def test_a_system_in_the_other_mode_is_refused(tmp_path, cli):
    code, _, err = cli("run", "--task", "srl", "--corpus", "up", "--key",
                       str(SRL / "key.conllu"), "--system", f"s={SRL / 'sys1.conll05'}",
                       "-w", str(tmp_path / "wh"))
    assert code == 2 and "gives arguments as spans but the key" in err, err
    assert not (tmp_path / "wh" / "manifest.json").exists()


def test_unchanged_rerun_keeps_every_file(warehouses, prefect_harness):
    root = warehouses["span"]
    before = snapshot(root)
    run(root, "conll05")
    assert snapshot(root) == before


def test_role_mappings(warehouses, tmp_path, cli):
    """``--map`` renames roles (``@key:`` in the key, a bare rule in every system): merging
    ARGM-TMP into ARGM-LOC on both sides leaves every overall count alone and sums the two
    roles' rows; the options say so."""
    root = tmp_path / "wh"
    run(root, "conllu", "--map", "@key:ARGM-TMP=ARGM-LOC", "--map", "ARGM-TMP=ARGM-LOC")
    got, before = stored_scores(root), stored_scores(warehouses["head"])
    for system in ("sys1", "sys2"):
        for mode in ("args_labeled", "semantic_labeled", "args_unlabeled"):
            key = (system, mode, "ALL", None)
            assert [got[key][k] for k in ("n_gold", "n_pred")] == [
                before[key][k] for k in ("n_gold", "n_pred")]
        assert (system, "args_labeled", "ARGM-TMP", None) not in got
        loc = got[(system, "args_labeled", "ARGM-LOC", None)]
        parts = [before[(system, "args_labeled", r, None)] for r in ("ARGM-LOC", "ARGM-TMP")]
        assert loc["n_gold"] == sum(p["n_gold"] for p in parts)
        assert loc["n_correct"] >= sum(p["n_correct"] for p in parts)
        assert "ARGM-TMP>ARGM-LOC" in got[(system, "args_labeled", "ALL", None)]["options"]
