"""The bundled real data end to end: warehouse figures against an independent reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from tests.conftest import SEQUOIA, snapshot

SYSTEMS = {
    "spacy_sm@3.8.0": "fr_core_news_sm-3.8.0.conllu",
    "spacy_md@3.8.0": "fr_core_news_md-3.8.0.conllu",
    "seqsm@ud2.8": "seqsm_local-ud2.8.conllu",
    "seqsm@ud2.16": "seqsm_local-ud2.16.conllu",
}


def plain_words(path: Path) -> list[list[str]]:
    """An independent, naive CoNLL-U reading: the 10 fields of every integer-ID line."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            rows.append(cols)
    return rows


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("seq") / "wh"
    code, out, err = run_cli("run", str(SEQUOIA / "sequoia.toml"), "-w", str(root))
    assert code == 0, err
    return root


def test_upos_counts_equal_a_naive_count(warehouse):
    key = plain_words(SEQUOIA / "key.conllu")
    got = query(warehouse, "select system, n_correct, n_units from scores where view='upos'")
    got = {r[0]: (r[1], r[2]) for r in got.rows()}
    for name, file in SYSTEMS.items():
        sys_rows = plain_words(SEQUOIA / file)
        correct = sum(k[3] == s[3] for k, s in zip(key, sys_rows, strict=True))
        assert got[name] == (correct, len(key))


def test_uas_without_punct_and_las_with_punct_equal_a_naive_count(warehouse):
    key = plain_words(SEQUOIA / "key.conllu")
    uas = dict(query(warehouse, "select system, n_correct from scores where view='head' and "
                     "not punct").rows())
    las = dict(query(warehouse, "select system, n_correct from scores where view='las' and "
                     "punct").rows())
    for name, file in SYSTEMS.items():
        s = plain_words(SEQUOIA / file)
        assert uas[name] == sum(k[6] == x[6] for k, x in zip(key, s, strict=True)
                                if k[3] != "PUNCT")
        assert las[name] == sum(k[6] == x[6] and k[7] == x[7] for k, x in zip(key, s,
                                                                                strict=True))


def test_conll18_table_equals_official_script(warehouse):
    expected, system = {}, None
    for line in (SEQUOIA / "expected-conll18-ud-eval.txt").read_text().splitlines():
        if line.startswith("== "):
            system = line[3:]
        elif "|" in line and not line.startswith("Metric"):
            name, p, r, f, _ = (c.strip() for c in line.split("|"))
            expected[(system, name)] = (p, r, f)
    file_to_name = {v.removesuffix(".conllu"): k for k, v in SYSTEMS.items()}
    rows = query(warehouse, "select system, metric, precision, recall, f1 from conll18").rows()
    got = {(s, m): tuple(f"{100 * x:.2f}" for x in (p, r, f)) for s, m, p, r, f in rows}
    assert len(expected) == 40
    for (file, metric), values in expected.items():
        assert got[(file_to_name[file], metric)] == values


def test_pair_invariants_on_real_data(warehouse):
    rows = query(warehouse, """
        select p.view, p.punct, p.sys1, p.sys2, p.corrections, p.new_errors, p.n_units,
               p.delta_acc, q.corrections as back_new, q.new_errors as back_corr,
               p.n_diff, q.n_diff as back_diff
        from pairs p join pairs q on p.view = q.view and p.punct = q.punct
             and p.sys1 = q.sys2 and p.sys2 = q.sys1""").rows(named=True)
    # 3 token views (the key has no XPOS) + 3 dependency views x 2 punct settings
    assert len(rows) == 12 * 9
    missing = {"seqsm@ud2.8", "seqsm@ud2.16"}  # no LEMMA: their lemma scores are NULL
    for r in rows:
        assert r["corrections"] == r["back_corr"] and r["n_diff"] == r["back_diff"]
        if r["view"] == "lemma" and {r["sys1"], r["sys2"]} & missing:
            assert r["delta_acc"] is None
            continue
        assert r["delta_acc"] == pytest.approx((r["corrections"] - r["new_errors"])
                                               / r["n_units"], abs=1e-12)


def test_changes_sum_to_pair_counts(warehouse):
    bad = query(warehouse, """
        with c as (select view, punct, sys1, sys2, class, sum(count) as n from changes
                   group by all)
        select * from pairs p join c using (view, punct, sys1, sys2)
        where (class = 'correction' and n != p.corrections)
           or (class = 'new_error' and n != p.new_errors)
           or (class = 'changed_error' and n != p.changed_errors)""")
    assert bad.is_empty()


def test_rerun_unchanged_writes_nothing(warehouse, cli):
    before = snapshot(warehouse)
    code, _, err = cli("run", str(SEQUOIA / "sequoia.toml"), "-w", str(warehouse))
    assert code == 0, err
    assert snapshot(warehouse) == before


def test_adding_a_system_computes_only_what_involves_it(tmp_path, cli):
    root = tmp_path / "wh"
    base = ["--key", str(SEQUOIA / "key.conllu"), "--corpus", "seq", "--task", "pos",
            "--ar-trials", "100", "-w", str(root)]
    two = [f"--system=a={SEQUOIA / SYSTEMS['spacy_sm@3.8.0']}",
           f"--system=b={SEQUOIA / SYSTEMS['spacy_md@3.8.0']}"]
    assert cli("run", *base, *two)[0] == 0
    first = json.loads((root / "manifest.json").read_text())["tables"]
    assert cli("run", *base, f"--system=c={SEQUOIA / SYSTEMS['seqsm@ud2.8']}")[0] == 0
    second = json.loads((root / "manifest.json").read_text())["tables"]
    for table in ("units", "scores", "labels", "pairs", "changes"):
        for part, entry in first[table].items():
            assert second[table][part] == entry, (table, part)  # not recomputed
    assert set(second["pairs"]) - set(first["pairs"]) == {
        "corpus=seq/pair=a~c", "corpus=seq/pair=b~c"}
    assert second["oracles"] != first["oracles"]
    n = query(root, "select count(*) as n from pairs where view='upos'")["n"][0]
    assert n == 3 * 2  # the ordered pairs of a, b and c


def test_las_decomposition_equals_a_naive_count(warehouse):
    key = plain_words(SEQUOIA / "key.conllu")
    a = plain_words(SEQUOIA / SYSTEMS["seqsm@ud2.8"])
    b = plain_words(SEQUOIA / SYSTEMS["seqsm@ud2.16"])
    head = label = both = 0
    for k, x, y in zip(key, a, b, strict=True):
        if k[3] == "PUNCT":
            continue
        dh, dl = x[6] != y[6], x[7] != y[7]
        head += dh and not dl
        label += dl and not dh
        both += dh and dl
    got = query(warehouse, "select diff_head_only, diff_label_only, diff_both from pairs "
                "where view = 'las' and not punct and sys1 = 'seqsm@ud2.8' "
                "and sys2 = 'seqsm@ud2.16'").row(0)
    assert got == (head, label, both)


def test_marginal_gains_from_leave_one_out_oracles(warehouse):
    key = plain_words(SEQUOIA / "key.conllu")
    cols = {n: [r[3] for r in plain_words(SEQUOIA / f)] for n, f in SYSTEMS.items()}
    gold = [r[3] for r in key]

    def oracle(names):
        return sum(any(cols[n][t] == g for n in names) for t, g in enumerate(gold))

    from sysdiff.flows.show import show_table

    text = show_table(warehouse, "gains", None, "upos", None, None, None, 5, "csv")
    rows = {line.split(",")[0]: float(line.split(",")[3]) for line in text.splitlines()[1:]}
    full = oracle(SYSTEMS)
    for name in SYSTEMS:
        without = oracle([n for n in SYSTEMS if n != name])
        # shown in points, to 2 decimals
        assert rows[name] == pytest.approx(100 * (full - without) / len(gold), abs=0.005)
