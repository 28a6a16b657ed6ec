"""The HTML report and the drill-down examples, checked against the warehouse tables via SQL."""

from __future__ import annotations

import base64
import html as htmllib
import itertools
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from sysdiff.flows.examples import examples
from sysdiff.flows.queries import query
from sysdiff.flows.render import to_text
from sysdiff.flows.report import (
    build_report,
    cluster_order,
    coref_html,
    esc,
    frame_html,
    label_html,
    label_table,
    load_corpus,
    marginal_gains,
    oriented_pairs,
    reader,
    scores_table,
    stars,
    table_html,
    tables_in,
    td,
    ticks,
    unl_html,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.tables import UNL_TABLES
from tests.conftest import REPO, SEQUOIA, run_cli

CORPUS = "seq"
SYSTEMS = {
    "spacy_sm@3.8.0": "fr_core_news_sm-3.8.0.conllu",
    "spacy_md@3.8.0": "fr_core_news_md-3.8.0.conllu",
    "seqsm@ud2.8": "seqsm_local-ud2.8.conllu",
    "seqsm@ud2.16": "seqsm_local-ud2.16.conllu",
}
VIEWS = ("upos", "xpos", "feats", "lemma", "head", "deprel", "las")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
SECTIONS = ("Scores", "Pairwise diff", "Δ accuracy vs diff", "Change classes per pair",
            "changes per class", "Per-label accuracy", "Difficulty", "Oracle by subset",
            "Marginal gain of each system")


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def punct_of(view: str) -> bool:
    return view not in ("head", "deprel", "las")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, prefect_harness) -> Path:
    root = tmp_path_factory.mktemp("report") / "wh"
    args = ["run", "--key", str(SEQUOIA / "key.conllu"), "--corpus", CORPUS, "--task", "dep",
            "--ar-trials", "200", "-w", str(root)]
    for name, file in SYSTEMS.items():
        args += ["--system", f"{name}={SEQUOIA / file}"]
    code, _, err = run_cli(*args)
    assert code == 0, err
    return root


@pytest.fixture(scope="module")
def data(warehouse):
    read, close = reader(warehouse)
    try:
        yield load_corpus(read, CORPUS)
    finally:
        close()


@pytest.fixture(scope="module")
def report(warehouse, tmp_path_factory) -> tuple[Path, float]:
    out = tmp_path_factory.mktemp("html") / "report.html"
    start = time.perf_counter()
    build_report(warehouse, None, out, examples_per_cell=3)
    return out, time.perf_counter() - start


# ----------------------------------------------------------------------------- table builders

@pytest.mark.parametrize("view", ["upos", "las", "feats"])
def test_label_table_marks_best_and_worst_and_oracle_gain(warehouse, data, view):
    table = label_table(data.of("labels", view), data.of("oracle_labels", view), data.systems)
    punct = punct_of(view)
    sql = query(warehouse, f"""
        with l as (select gold_label, system, accuracy from labels where corpus = '{CORPUS}'
                   and view = '{view}' and punct = {punct}),
             m as (select gold_label, max(accuracy) as hi, min(accuracy) as lo from l
                   group by gold_label)
        select m.gold_label, m.hi, m.lo,
               list(l.system order by l.system) filter (where l.accuracy = m.hi) as best,
               list(l.system order by l.system) filter (where l.accuracy = m.lo) as worst,
               (select o.n_correct / o.n from oracle_labels o where o.corpus = '{CORPUS}'
                and o.view = '{view}' and o.punct = {punct} and o.gold_label = m.gold_label
                and len(o.systems) = {len(SYSTEMS)}) as oracle
        from m join l using (gold_label) group by all""")
    expected = {r[0]: r[1:] for r in sql.rows()}
    assert table.height > 0
    for r in table.iter_rows(named=True):
        hi, lo, best, worst, oracle = expected[r["gold_label"]]
        tie = hi == lo
        assert sorted(r["best"]) == ([] if tie else best)
        assert sorted(r["worst"]) == ([] if tie else worst)
        assert r["oracle"] == pytest.approx(oracle)
        assert r["gain"] == pytest.approx(oracle - hi)
    html = label_html(table, data.systems)
    assert html.count('class="best"') == sum(len(b) for b in table["best"])
    assert html.count('class="worst"') == sum(len(w) for w in table["worst"])


def test_label_table_best_and_worst_on_a_small_frame():
    labels = pl.DataFrame({"system": ["a", "b", "c", "a", "b", "c"],
                           "gold_label": ["X", "X", "X", "Y", "Y", "Y"],
                           "n": [4] * 3 + [2] * 3,
                           "accuracy": [0.5, 0.75, 0.5, 1.0, 1.0, 1.0]})
    oracle = pl.DataFrame({"gold_label": ["X", "Y"], "n": [4, 2], "n_correct": [4, 2]})
    t = label_table(labels, oracle, ["a", "b", "c"])
    x, y = t.row(0, named=True), t.row(1, named=True)
    assert (x["best"], x["worst"], x["gain"]) == (["b"], ["a", "c"], 0.25)
    assert (y["best"], y["worst"], y["gain"]) == ([], [], 0.0)


@pytest.mark.parametrize("view", VIEWS)
def test_marginal_gains_equal_leave_one_out_oracles(warehouse, data, view):
    got = marginal_gains(data.of("oracles", view), data.systems)
    n = len(SYSTEMS)
    sql = query(warehouse, f"""
        with o as (select * from oracles where corpus = '{CORPUS}' and view = '{view}'
                   and punct = {punct_of(view)}),
             s as (select distinct unnest(systems) as system from o)
        select s.system, a.n_correct - r.n_correct as units,
               (a.n_correct - r.n_correct) / a.n_units as gain
        from s, o a, o r where a.n_systems = {n} and r.n_systems = {n - 1}
          and not list_contains(r.systems, s.system)""")
    expected = {r[0]: r[1:] for r in sql.rows()}
    assert set(got["system"]) == set(SYSTEMS) == set(expected)
    for system, units, gain in got.select("system", "units_gained", "gain").rows():
        assert (units, pytest.approx(gain)) == expected[system]


@pytest.mark.parametrize("view", ["upos", "las"])
def test_oriented_pairs_cover_each_pair_once_and_gain(warehouse, data, view):
    got = oriented_pairs(data.of("pairs", view))
    n = len(SYSTEMS)
    assert got.height == n * (n - 1) // 2
    assert {frozenset(p) for p in got.select("sys1", "sys2").rows()} == \
        {frozenset(p) for p in query(warehouse, f"select sys1, sys2 from pairs where "
                                     f"view = '{view}' and sys1 <> sys2").rows()}
    assert (got["delta_acc"] >= 0).all()
    acc = dict(query(warehouse, f"select system, accuracy from scores where view = '{view}' "
                     f"and punct = {punct_of(view)}").rows())
    for a, b in got.select("sys1", "sys2").rows():
        assert acc[b] >= acc[a]


def test_scores_table_is_sorted_by_accuracy(data):
    got = scores_table(data.of("scores", "las"))
    assert got["accuracy"].to_list() == sorted(got["accuracy"].to_list(), reverse=True)
    assert set(got["system"]) == set(SYSTEMS)


def test_cluster_order_keeps_close_systems_together():
    names = ["a", "b", "c", "d"]
    m = np.array([[0, 9, 1, 9], [9, 0, 9, 1], [1, 9, 0, 9], [9, 1, 9, 0]], dtype=float)
    order = cluster_order(names, m)
    assert sorted(order) == names
    pos = {s: i for i, s in enumerate(order)}
    assert abs(pos["a"] - pos["c"]) == 1 and abs(pos["b"] - pos["d"]) == 1
    assert cluster_order(names[:2], m[:2, :2]) == names[:2]
    assert sorted(cluster_order(names, np.zeros((4, 4)))) == names


def test_significance_marks_and_ticks():
    assert [stars(p) for p in (0.001, 0.01, 0.03, 0.05, None)] == ["**", "*", "*", "", ""]
    assert ticks(3.2) == [0, 1, 2, 3, 4]
    assert ticks(1.5) == [0, 0.5, 1, 1.5]


# ----------------------------------------------------------------------------- examples

def change_counts(warehouse: Path, view: str, punct: bool, sys1: str, sys2: str) -> pl.DataFrame:
    return query(warehouse, f"""
        select class, gold, l1, l2, sum(count)::bigint as n from changes
        where corpus = '{CORPUS}' and view = '{view}' and punct = {punct}
          and sys1 = {lit(sys1)} and sys2 = {lit(sys2)} group by all""")


@pytest.mark.parametrize(("view", "punct"), [("upos", None), ("feats", None), ("head", None),
                                             ("deprel", None), ("las", None), ("las", True)])
def test_examples_counts_equal_the_changes_table(warehouse, view, punct):
    sys1, sys2 = "seqsm@ud2.8", "spacy_md@3.8.0"
    p = punct_of(view) if punct is None else punct
    counts = change_counts(warehouse, view, p, sys1, sys2)
    pair = query(warehouse, f"select corrections, new_errors, changed_errors from pairs where "
                 f"corpus = '{CORPUS}' and view = '{view}' and punct = {p} and sys1 = "
                 f"{lit(sys1)} and sys2 = {lit(sys2)}").row(0)
    for cls, total in zip(("correction", "new_error", "changed_error"), pair, strict=True):
        every = examples(warehouse, CORPUS, view, sys1, sys2, cls, limit=-1, punct=punct)
        assert every.height == total
        # the three largest cells of the class, by (l1, l2): summed over gold labels
        cells = (counts.filter(pl.col("class") == cls).group_by("l1", "l2")
                 .agg(pl.col("n").sum()).sort("n", "l1", "l2", descending=[True, False, False])
                 .head(3))
        for l1, l2, n in cells.rows():
            got = examples(warehouse, CORPUS, view, sys1, sys2, cls, l1, l2, limit=-1,
                           punct=punct)
            assert got.height == n
            assert set(got["l1"]) == {l1} and set(got["l2"]) == {l2}


def test_examples_rows_are_consistent_words(warehouse):
    got = examples(warehouse, CORPUS, "upos", "spacy_sm@3.8.0", "spacy_md@3.8.0", "correction",
                   limit=5, context=2)
    assert 0 < got.height <= 5
    for col in ("sent_id", "id", "form", "gold", "l1", "l2", "text", "window"):
        assert col in got.columns
    assert (got["l2"] == got["gold"]).all() and (got["l1"] != got["gold"]).all()
    key = query(warehouse, "select sent, id, form, upos from units where system = '__key__' "
                "and kind = 0")
    key = {(s, i): (f, u) for s, i, f, u in key.rows()}
    for r in got.iter_rows(named=True):
        assert key[(r["sent"], r["id"])] == (r["form"], r["gold"])
        assert r["form"] in r["text"]
        assert [w["id"] for w in r["window"]] == [i for i in range(r["id"] - 2, r["id"] + 3)
                                                  if (r["sent"], i) in key]
    ordered = got.select("sent", "id").rows()
    assert ordered == sorted(ordered)


def test_examples_las_uses_heads_and_deprels(warehouse):
    got = examples(warehouse, CORPUS, "las", "seqsm@ud2.8", "seqsm@ud2.16", "new_error",
                   limit=-1)
    assert got.height > 0
    for r in got.iter_rows(named=True):
        assert (r["head1"], r["l1"]) == (r["gold_head"], r["gold"])
        assert (r["head2"], r["l2"]) != (r["gold_head"], r["gold"])
    attachment = got.filter(pl.col("l1") == pl.col("l2"))
    assert (attachment["head1"] != attachment["head2"]).all()


def test_examples_refuse_bad_requests(warehouse):
    with pytest.raises(InputError, match="change class"):
        examples(warehouse, CORPUS, "upos", "spacy_sm@3.8.0", "spacy_md@3.8.0", "fix")
    with pytest.raises(InputError, match="unknown view"):
        examples(warehouse, CORPUS, "pos", "spacy_sm@3.8.0", "spacy_md@3.8.0", "correction")
    with pytest.raises(InputError, match="no pair"):
        examples(warehouse, CORPUS, "upos", "spacy_sm@3.8.0", "nobody", "correction")


# ----------------------------------------------------------------------------- escaping

def test_html_helpers_escape_everything():
    nasty = "<script>alert('x')</script> & \"q\""
    assert esc(nasty) == ("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; "
                          "&quot;q&quot;")
    t = table_html([nasty], [[td(esc(nasty))]])
    assert "<script>" not in t and t.count("&lt;script&gt;") == 2
    f = frame_html(pl.DataFrame({nasty: [nasty], "x": [[nasty, "b"]]}))
    assert "<script>" not in f and "&amp;" in f


def test_latex_escapes_system_names(data):
    tex = to_text(scores_table(data.of("scores", "upos")), "latex")
    assert r"spacy\_sm@3.8.0" in tex and "spacy_sm" not in tex
    tex = to_text(pl.DataFrame({"gold_label": ["a&b_%$#{}~^\\"]}), "latex")
    assert r"a\&b\_\%\$\#\{\}\textasciitilde{}\textasciicircum{}\textbackslash{}" in tex


@pytest.fixture(scope="module")
def nasty_warehouse(tmp_path_factory, prefect_harness) -> Path:
    """A word<TAB>tag corpus whose tags are HTML, and a label mapping on one system."""
    d = tmp_path_factory.mktemp("nasty")
    key = [[("Le", "DET"), ("chat", "<b>x</b>"), ("dort", "a&b"), (".", "PUNCT")],
           [("Il", "</script>"), ("pleut", '"q"'), ("fort", "NOUN")]]
    a = [["DET", "a&b", "a&b", "PUNCT"], ["</script>", "NOUN", "NOUN"]]
    b = [["DET", "<b>x</b>", "NN", "PUNCT"], ["NN", '"q"', "NN"]]

    def write(name: str, tags: list[list[str]]) -> Path:
        text = "\n\n".join("\n".join(f"{w}\t{t}" for (w, _), t in zip(s, ts, strict=True))
                           for s, ts in zip(key, tags, strict=True))
        (d / name).write_text(text + "\n", encoding="utf-8")
        return d / name

    k = write("key.tsv", [[t for _, t in s] for s in key])
    root = d / "wh"
    code, _, err = run_cli("run", "--key", str(k), "--system", f"a={write('a.tsv', a)}",
                           "--system", f"b={write('b.tsv', b)}", "--corpus", "nasty",
                           "--task", "pos", "--map", "b:NN=NOUN", "--ar-trials", "50",
                           "-w", str(root))
    assert code == 0, err
    return root


def test_report_escapes_labels_and_applies_mappings(nasty_warehouse, tmp_path):
    html = build_report(nasty_warehouse, "nasty", tmp_path / "r.html").read_text("utf-8")
    body = html.split("<script>")[0]
    assert "<b>x</b>" not in body and "&lt;b&gt;x&lt;/b&gt;" in body
    assert "&lt;/script&gt;" in body and "a&amp;b" in body and "&quot;q&quot;" in body
    assert html.count("<script>") == 1 and html.count("</script>") == 1
    # with b:NN=NOUN, a and b agree on 'fort' (no change) and b is wrong on 'dort' and 'Il'
    forms, labels = [], []
    for cls in ("correction", "new_error", "changed_error"):
        n = query(nasty_warehouse, f"select coalesce(sum(count), 0) from changes where "
                  f"view = 'upos' and sys1 = 'a' and sys2 = 'b' and class = '{cls}'").item()
        got = examples(nasty_warehouse, "nasty", "upos", "a", "b", cls, limit=-1)
        assert got.height == n
        forms += got["form"].to_list()
        labels += got["l2"].to_list()
    assert sorted(forms) == ["Il", "chat", "dort", "pleut"]
    assert "NN" not in labels and "NOUN" in labels


# ----------------------------------------------------------------------------- the report

def test_report_has_every_section_view_and_system(report, data):
    path, seconds = report
    html = path.read_text("utf-8")
    assert seconds < 60
    for view in data.views():
        assert f'id="{CORPUS}-{view}"' in html
    assert set(data.views()) == set(VIEWS)
    for section in SECTIONS:
        assert html.count(section) >= len(VIEWS), section
    for name in SYSTEMS:
        assert esc(name) in html
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|url\(|@import""", html) is None
    assert html.count("<svg") >= 4 * len(VIEWS)
    anchors = set(re.findall(r'href="#(ex-\d+)"', html))
    assert anchors and anchors == set(re.findall(r'id="(ex-\d+)"', html))


def test_report_rejects_unknown_corpus(warehouse, tmp_path):
    with pytest.raises(InputError, match="no corpus"):
        build_report(warehouse, "nope", tmp_path / "r.html")


# ----------------------------------------------------------------------------- coreference

LITBANK = "litbank"
CORRECT = {"TP", "TN"}
KIND = {(False, True): "correction", (True, False): "new_error", (False, False): "changed_error",
        (True, True): "other"}


@pytest.fixture(scope="module")
def litbank(tmp_path_factory, prefect_harness) -> Path:
    root = tmp_path_factory.mktemp("coref") / "wh"
    code, _, err = run_cli("run", str(REPO / "data/litbank/litbank.toml"), "-w", str(root))
    assert code == 0, err
    return root


@pytest.fixture(scope="module")
def coref_report(litbank, tmp_path_factory) -> tuple[Path, float]:
    out = tmp_path_factory.mktemp("coref_html") / "report.html"
    start = time.perf_counter()
    build_report(litbank, None, out)
    return out, time.perf_counter() - start


def text_of(fragment: str) -> str:
    """Visible text of an HTML fragment (tags dropped, entities decoded)."""
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def tables_of(page: str, cls: str) -> list[tuple[dict[str, str], str]]:
    """Every <table class="cls" ...> of the page: its data-* attributes and inner HTML."""
    out = []
    for attrs, inner in re.findall(rf'<table class="{cls}"([^>]*)>(.*?)</table>', page, re.S):
        out.append(({k: htmllib.unescape(v) for k, v in re.findall(r'data-(\w+)="([^"]*)"',
                                                                   attrs)}, inner))
    return out


def body_rows(inner: str) -> list[list[str]]:
    """Cell texts of each body row."""
    body = inner.split("<tbody>", 1)[1]
    return [[text_of(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def p2(x: float) -> str:
    return f"{100 * x:.2f}"


def oriented_coref_pairs(warehouse: Path) -> set[tuple[str, str, str]]:
    """(criterion, S1, S2): each pair once, from the lower to the higher CoNLL F1."""
    return set(query(warehouse, f"""
        select p.criterion, p.sys1, p.sys2 from coref_pairs p
        join coref_scores a on a.system = p.sys1 and a.metric = 'conll'
        join coref_scores b on b.system = p.sys2 and b.metric = 'conll'
        where p.corpus = '{LITBANK}' and a.corpus = p.corpus and b.corpus = p.corpus
          and (a.f1 < b.f1 or (a.f1 = b.f1 and p.sys1 > p.sys2))""").rows())


def test_coref_transition_matrices_equal_the_transitions_table(litbank, coref_report):
    page = coref_report[0].read_text("utf-8")
    found = tables_of(page, "trans")
    keys = [(a["criterion"], a["sys1"], a["sys2"]) for a, _ in found]
    assert len(keys) == len(set(keys)) and set(keys) == oriented_coref_pairs(litbank)
    assert len(keys) == 6  # 3 pairs x 2 criteria
    for (crit, s1, s2), (_, inner) in zip(keys, found, strict=True):
        cells = {(c1, c2): (kind, int(n)) for kind, c1, c2, n in re.findall(
            r'class="cell (\w+)" data-c1="(\w+)" data-c2="(\w+)"[^>]*>(\d+)</td>', inner)}
        assert len(cells) == 25
        sql = dict(((c1, c2), n) for c1, c2, n in query(litbank, f"""
            select c1, c2, sum(count)::bigint from coref_transitions where corpus = '{LITBANK}'
              and criterion = '{crit}' and sys1 = {lit(s1)} and sys2 = {lit(s2)}
              and mtype = 'ALL' and word is null group by all""").rows())
        assert set(sql) <= set(cells)
        assert {k: n for k, (_, n) in cells.items()} == {k: sql.get(k, 0) for k in cells}
        # colours: the diagonal is neutral, off-diagonal cells by change class
        for (c1, c2), (kind, _) in cells.items():
            assert kind == ("diag" if c1 == c2 else KIND[(c1 in CORRECT, c2 in CORRECT)])
        # the matrix adds up to the pair's row of coref_pairs
        pair = query(litbank, f"""select n_mentions, n_diff, corrections, new_errors,
            changed_errors from coref_pairs where corpus = '{LITBANK}' and criterion = '{crit}'
            and sys1 = {lit(s1)} and sys2 = {lit(s2)}""").row(0)
        by_kind = {k: sum(n for kind, n in cells.values() if kind == k)
                   for k in ("correction", "new_error", "changed_error")}
        assert (sum(n for _, n in cells.values()),
                sum(n for (a, b), (_, n) in cells.items() if a != b),
                by_kind["correction"], by_kind["new_error"], by_kind["changed_error"]) == pair
        # row and column totals: the ARCS classes of S1 and S2 over the pair's mentions
        rows = body_rows(inner)
        assert [r[0] for r in rows] == ["TP", "FP", "FN", "WL", "TN", "Σ"]
        for r in rows[:-1]:
            assert int(r[-1]) == sum(sql.get((r[0], c2), 0) for c2 in ("TP", "FP", "FN", "WL",
                                                                         "TN"))
        assert int(rows[-1][-1]) == pair[0]


def test_coref_pair_summaries_equal_coref_pairs(litbank, coref_report):
    page = coref_report[0].read_text("utf-8")
    section = page.split(f'id="{LITBANK}-coref"', 1)[1]
    blocks = re.findall(r'<details class="pair"[^>]*><summary>(.*?) → (.*?)</summary>(.*?)'
                        r"</details>", section, re.S)
    got = {}
    for a, b, inner in blocks:
        for crit, line in re.findall(r'<p class="summary" data-criterion="(\w+)">(.*?)</p>',
                                     inner, re.S):
            got[(crit, text_of(a), text_of(b))] = text_of(line.replace("<br>", " "))
    assert set(got) == oriented_coref_pairs(litbank)
    for (crit, a, b), line in got.items():
        n, d, c, ne, ce = query(litbank, f"""select n_mentions, n_diff, corrections,
            new_errors, changed_errors from coref_pairs where corpus = '{LITBANK}'
            and criterion = '{crit}' and sys1 = {lit(a)} and sys2 = {lit(b)}""").row(0)
        assert line.startswith(f"Difference: {100 * d / n:.2f}% ({d}/{n})"), line
        for name, k in (("Corrections", c), ("New errors", ne), ("Changed errors", ce)):
            assert f"{name}: {100 * k / d:.2f}% ({k})" in line, (name, line)
    # the pairs table: one row per criterion and oriented pair, diff and Δ ARCS F1
    (_, inner), = tables_of(section.split("<h4>Pairs</h4>", 1)[1], "")[:1]
    f1 = {(s, c): f for s, c, f in query(litbank, f"select system, criterion, f1 from "
                                         f"arcs_scores where corpus = '{LITBANK}' and "
                                         "mtype = 'ALL'").rows()}
    rows = body_rows(inner)
    assert {(r[0], r[1], r[2]) for r in rows} == oriented_coref_pairs(litbank)
    for crit, a, b, diff, differing, *_, d_arcs, _d_conll in rows:
        n, d = query(litbank, f"select n_mentions, n_diff from coref_pairs where criterion = "
                     f"'{crit}' and sys1 = {lit(a)} and sys2 = {lit(b)}").row(0)
        assert (diff, differing) == (p2(d / n), f"{d}/{n}")
        assert d_arcs == f"{100 * (f1[(b, crit)] - f1[(a, crit)]):+.2f}"


def test_coref_scores_arcs_oracles_and_agreement_equal_the_tables(litbank, coref_report):
    page = coref_report[0].read_text("utf-8")
    # standard scores: every cell, and the best of each column marked
    (_, inner), = tables_of(page, "coref-scores")
    cells = re.findall(r'<tr><td class="l">([^<]*)</td>(.*?)</tr>', inner, re.S)
    shown, marked = {}, set()
    for system, row in cells:
        for cls, metric, col, v in re.findall(r'<td class="([^"]*)" data-metric="(\w+)" '
                                              r'data-col="(\w)">([^<]*)</td>', row):
            shown[(htmllib.unescape(system), metric, col)] = v
            if "best" in cls.split():
                marked.add((htmllib.unescape(system), metric, col))
    sql = query(litbank, f"select system, metric, recall, precision, f1 from coref_scores "
                f"where corpus = '{LITBANK}'")
    assert len(shown) == 3 * sql.height
    for system, metric, *vals in sql.rows():
        for col, v in zip("rpf", vals, strict=True):
            assert shown[(system, metric, col)] == p2(v)
    best = query(litbank, f"""
        with s as (unpivot (select system, metric, recall as r, precision as p, f1 as f
                            from coref_scores where corpus = '{LITBANK}')
                   on r, p, f into name col value v)
        select system, metric, col from s where v = (select max(v) from s t where t.metric =
          s.metric and t.col = s.col) and (select count(distinct v) from s t where
          t.metric = s.metric and t.col = s.col) > 1""")
    assert marked == set(best.rows()) and marked
    # ARCS: counts and ratios per criterion, mention type and system
    arcs = {}
    for attrs, inner in tables_of(page, "arcs"):
        for system, mtype, row in re.findall(r'<tr class="[^"]*" data-system="([^"]*)" '
                                             r'data-mtype="([^"]*)">(.*?)</tr>', inner, re.S):
            vals = [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)][2:]
            arcs[(attrs["criterion"], htmllib.unescape(system), htmllib.unescape(mtype))] = vals
    sql = query(litbank, f"select criterion, system, mtype, tp, fp, fn, wl, tn, precision, "
                f"recall, f1 from arcs_scores where corpus = '{LITBANK}'")
    assert len(arcs) == sql.height
    for crit, system, mtype, *counts, p, r, f in sql.rows():
        assert arcs[(crit, system, mtype)] == [*map(str, counts), p2(p), p2(r), p2(f)]
    # upper bounds: the oracle of each subset, its best member and the gain
    expected = {}
    for crit, systems, mtype, n, tp, best in query(litbank, f"""
            with o as (select * from coref_oracles where corpus = '{LITBANK}'),
                 s as (select criterion, systems[1] as system, mtype, n_tp from o
                       where len(systems) = 1)
            select o.criterion, array_to_string(list_sort(o.systems), ' + '), o.mtype, o.n,
                   o.n_tp, max(s.n_tp) from o join s on s.criterion = o.criterion
              and s.mtype = o.mtype and list_contains(o.systems, s.system)
            group by all""").rows():
        expected[(crit, systems, mtype)] = [f"{tp}/{n}", p2(tp / n), p2(best / n),
                                            f"{100 * (tp - best) / n:+.2f}"]
    got = {}
    for crit, inner in zip(("any", "nom"), [t for _, t in tables_of(page, "oracle-coref")],
                           strict=True):
        for systems, mtype, _size, tp_n, oracle, best, best_r, gain in body_rows(inner):
            got[(crit, systems, mtype)] = [tp_n, oracle, best_r, gain]
            singles = query(litbank, f"select systems[1], n_tp from coref_oracles where "
                            f"criterion = '{crit}' and mtype = {lit(mtype)} and "
                            f"len(systems) = 1 and list_contains(string_split({lit(systems)}, "
                            "' + '), systems[1])").rows()
            assert dict(singles)[best] == max(t for _, t in singles)
    assert got == expected
    # agreement: CoNLL F1 of S2 scored with S1 as the key
    cells = re.findall(r'<td data-sys1="([^"]*)" data-sys2="([^"]*)"[^>]*>([^<]*)</td>', page)
    sql = query(litbank, f"select sys1, sys2, f1 from coref_agreement where corpus = "
                f"'{LITBANK}' and metric = 'conll' and sys1 <> sys2")
    assert {(htmllib.unescape(a), htmllib.unescape(b)): v for a, b, v in cells} == \
        {(a, b): p2(f) for a, b, f in sql.rows()}


def test_coref_top_words_equal_the_per_word_transitions(litbank, coref_report):
    page = coref_report[0].read_text("utf-8")
    section = page.split(f'id="{LITBANK}-coref"', 1)[1]
    blocks = re.findall(r'<details class="pair"[^>]*><summary>(.*?) → (.*?)</summary>(.*?)'
                        r"</details>", section, re.S)
    checked = 0
    for a, b, inner in blocks:
        a, b = text_of(a), text_of(b)
        crits = re.findall(r'<p class="summary" data-criterion="(\w+)">', inner)
        tables = [t for _, t in tables_of(inner, "words-tr")]
        assert len(crits) == len(tables) == 2
        for crit, table in zip(crits, tables, strict=True):
            rows = body_rows(table)
            sql = query(litbank, f"""
                select word, sum(count)::bigint as n,
                  sum(count) filter (where c1 in ('FP', 'FN', 'WL') and c2 in ('TP', 'TN')),
                  sum(count) filter (where c1 in ('TP', 'TN') and c2 in ('FP', 'FN', 'WL')),
                  sum(count) filter (where c1 in ('FP', 'FN', 'WL') and c2 in ('FP', 'FN',
                                     'WL'))
                from coref_transitions where corpus = '{LITBANK}' and criterion = '{crit}'
                  and sys1 = {lit(a)} and sys2 = {lit(b)} and word is not null
                  and mtype <> 'NOUN' and c1 <> c2
                group by word order by n desc, word limit 12""")
            assert [r[:5] for r in rows] == [[w, *(str(x or 0) for x in xs)]
                                             for w, *xs in sql.rows()]
            checked += len(rows)
    assert checked > 0


def test_coref_and_unl_sections_only_with_rows(warehouse, report, litbank, coref_report):
    seq = report[0].read_text("utf-8")
    assert 'class="view coref"' not in seq and 'class="view unl"' not in seq
    page = coref_report[0].read_text("utf-8")
    assert page.count('class="view coref"') == 1 and f'id="{LITBANK}-coref"' in page
    assert f'href="#{LITBANK}-coref"' in page
    assert 'class="view unl"' not in page  # the UNL tables exist but have no rows
    assert query(litbank, "select count(*) from unl_scores").item() == 0
    for root, corpus, expect in ((warehouse, CORPUS, False), (litbank, LITBANK, True),
                                 (litbank, "nope", False)):
        read, close = reader(root)
        try:
            tables = tables_in(read)
            assert bool(coref_html(read, corpus, tables)) is expect
            assert unl_html(read, corpus, tables) == ""
        finally:
            close()
    # tables that exist but are empty, or hold only another corpus's rows
    read, close = reader(litbank)
    try:
        frames = {t: read(f"select * from {t}") for t in (
            "coref_scores", "arcs_scores", "coref_pairs", "coref_transitions", "coref_oracles",
            "coref_agreement")}
    finally:
        close()
    empty = memory_db({t: df.clear() for t, df in frames.items()})
    assert coref_html(empty, LITBANK, tables_in(empty)) == ""
    other = memory_db(frames)
    assert coref_html(other, "another", tables_in(other)) == ""
    assert coref_html(other, LITBANK, set()) == ""


def memory_db(frames: dict[str, pl.DataFrame]):
    """An in-memory DuckDB holding ``frames`` as tables; returns its read function."""
    con = duckdb.connect()
    for name, df in frames.items():
        con.register(f"frame_{name}", df.to_arrow())
        con.sql(f"create table {name} as select * from frame_{name}")

    def read(sql: str) -> pl.DataFrame:
        return pl.from_arrow(con.sql(sql).to_arrow_table())

    return read


NASTY = "<script>alert('x')</script>&\"q\""


def test_coref_section_escapes_names(litbank):
    read, close = reader(litbank)
    try:
        frames = {}
        for t in ("coref_scores", "arcs_scores", "coref_pairs", "coref_transitions",
                  "coref_oracles", "coref_agreement"):
            df = read(f"select * from {t}")
            for col in ("system", "sys1", "sys2", "word", "mtype"):
                if col in df.columns:
                    df = df.with_columns(pl.col(col).replace({"sys3": NASTY, "she": NASTY,
                                                              "NOUN": "<NOUN>"}))
            if "systems" in df.columns:
                df = df.with_columns(pl.col("systems").list.eval(
                    pl.element().replace({"sys3": NASTY})))
            frames[t] = df
    finally:
        close()
    db = memory_db(frames)
    got = coref_html(db, LITBANK, tables_in(db))
    assert "<script>" not in got and "<NOUN>" not in got and NASTY not in got
    assert got.count(esc(NASTY)) > 20 and "&lt;NOUN&gt;" in got
    assert len(tables_of(got, "trans")) == 6
    assert {a["sys1"] for a, _ in tables_of(got, "trans")} | \
        {a["sys2"] for a, _ in tables_of(got, "trans")} == {"sys1", "sys2", NASTY}


# ----------------------------------------------------------------------------- UNL

def unl_frames() -> dict[str, pl.DataFrame]:
    """Hand-made UNL tables with the columns of ``UNL_TABLES`` (a corpus 'g<1>' with
    three grammar versions, and another corpus)."""
    corpus, versions = "g<1>", ["v1", "v2", "v3&"]
    correct = {"v1": [1, 0, 0, 1, 0] * 10, "v2": [0, 1, 0, 1, 0] * 10,
               "v3&": [1, 1, 0, 1, 1] * 10}
    n = 50
    scores, pairs, moved = [], [], []
    for v in versions:
        c = sum(correct[v])
        scores.append({"corpus": corpus, "system": v, "task": "unlization", "options": "o",
                       "n_expected": n, "n_returned": n - 2, "n_correct": c,
                       "precision": c / (n - 2), "recall": c / n, "f1": 2 * c / (2 * n - 2),
                       "rel_f1": 0.5, "uw_f1": 0.75, "attr_f1": None, "word_f1": None})
    for a, b in itertools.permutations(versions, 2):
        rows = []
        for i, (x, y) in enumerate(zip(correct[a], correct[b], strict=True)):
            change = {(0, 1): "correction", (1, 0): "new_error"}.get((x, y))
            if change is None and not x and i % 5 == 2:
                change = "changed_error"
            if change:
                rows.append({"corpus": corpus, "task": "unlization", "sys1": a, "sys2": b,
                             "sent_id": f"s<{i}>", "sent_index": i, "change": change,
                             "returned_a": True, "returned_b": i % 7 != 0,
                             "correct_a": bool(x), "correct_b": bool(y),
                             "d_all_frac_a": "0" if x else "3/7",
                             "d_all_frac_b": "0" if y else "18/60",
                             "reason_a": None if x else "d_all=3/7 <b>",
                             "reason_b": None if y else "not connected"})
        moved += rows
        k = {c: sum(r["change"] == c for r in rows) for c in ("correction", "new_error",
                                                                  "changed_error")}
        pairs.append({"corpus": corpus, "task": "unlization", "sys1": a, "sys2": b,
                      "n_sentences": n, "n_correct_a": sum(correct[a]),
                      "n_correct_b": sum(correct[b]), "n_changed": len(rows),
                      "corrections": k["correction"], "new_errors": k["new_error"],
                      "changed_errors": k["changed_error"], "diff": len(rows) / n,
                      "oracle": sum(x or y for x, y in zip(correct[a], correct[b],
                                                           strict=True)) / n})
    oracle = [{"corpus": corpus, "task": "unlization", "systems": ",".join(sorted(versions)),
               "n_sentences": n, "n_oracle": 40, "oracle": 40 / n, "best_system": "v3&",
               "best_correct": 40, "gain": 0.0},
              {"corpus": "other", "task": "unlization", "systems": "zz", "n_sentences": 1,
               "n_oracle": 1, "oracle": 1.0, "best_system": "zz", "best_correct": 1,
               "gain": 0.0}]
    scores.append({**scores[0], "corpus": "other", "system": "zz"})
    rows = {"unl_scores": scores, "unl_pairs": pairs, "unl_oracle": oracle, "unl_moved": moved}
    out = {}
    for name, schema in UNL_TABLES.items():
        data = rows.get(name, [])
        out[name] = pl.from_arrow(pa.Table.from_pylist(
            [{f: r.get(f) for f in schema.names} for r in data], schema=schema))
    return out


def verdict(returned: bool, correct: bool) -> str:
    return "CORRECT" if correct else "incorrect" if returned else "not returned"


def assert_unl_section(got: str, db, corpus: str) -> list[tuple[str, str, str, str]]:
    """Every number of the UNL section ``got`` equals the UNL tables read through ``db``;
    returns the moved-sentence blocks (A, B, count, inner HTML)."""
    c = lit(corpus)
    # scores: P/R/F and the micro F1 columns that have values
    (_, inner), = tables_of(got, "unl-scores")
    extra = [k for k in ("rel_f1", "uw_f1", "attr_f1", "word_f1")
             if db(f"select count({k}) from unl_scores where corpus = {c}").item()]
    sql = db(f"select system, n_expected, n_returned, n_correct, precision, recall, f1"
             f"{''.join(', ' + k for k in extra)} from unl_scores where corpus = {c} "
             "order by task, f1 desc, system")
    assert body_rows(inner) == [[s, str(e), str(r), str(n), *map(p2, xs)]
                                for s, e, r, n, *xs in sql.rows()]
    # pairs: each pair once, from fewer to more correct sentences
    (_, inner), = tables_of(got, "unl-pairs")
    rows = body_rows(inner)
    sql = db(f"select task, sys1, sys2, diff, n_changed, n_sentences, corrections, new_errors, "
             f"changed_errors, n_correct_a, n_correct_b, oracle from unl_pairs where corpus = "
             f"{c} and (n_correct_b > n_correct_a or (n_correct_b = n_correct_a "
             "and sys1 < sys2))")
    assert len(rows) == sql.height > 0
    expected = {}
    for t, a, b, d, m, n, k, ne, ce, ca, cb, o in sql.rows():
        expected[(t, a, b)] = [p2(d), f"{m}/{n}", f"{k} ({100 * k / m:.1f}%)",
                               f"{ne} ({100 * ne / m:.1f}%)", f"{ce} ({100 * ce / m:.1f}%)",
                               f"{ca} → {cb}", p2(o)]
    assert {tuple(r[:3]): r[3:] for r in rows} == expected
    # oracle
    (_, inner), = tables_of(got, "unl-oracle")
    assert body_rows(inner) == [
        [t, s, f"{k}/{n}", p2(o), b, str(n_b), f"{100 * g:+.2f}"]
        for t, s, k, n, o, b, n_b, g in
        db("select task, systems, n_oracle, n_sentences, oracle, best_system, best_correct, "
           f"gain from unl_oracle where corpus = {c}").rows()]
    # moved sentences: at most 20 per pair, in corpus order, with verdicts and D
    blocks = re.findall(r"<summary>\w+: (.*?) → (.*?): (\d+) moved.*?</summary>(.*?)"
                        r"</details>", got, re.S)
    assert len(blocks) == len(rows) == len(tables_of(got, "unl-moved"))
    for a, b, m, inner in blocks:
        a, b = htmllib.unescape(a), htmllib.unescape(b)
        (_, table), = tables_of(inner, "unl-moved")
        shown = body_rows(table)
        sql = db(f"select sent_id, sent_index, change, returned_a, correct_a, d_all_frac_a, "
                 f"returned_b, correct_b, d_all_frac_b from unl_moved where corpus = {c} "
                 f"and sys1 = {lit(a)} and sys2 = {lit(b)} order by sent_index")
        assert int(m) == sql.height and len(shown) == min(sql.height, 20)
        for r, (sid, i, change, ra, ca, da, rb, cb, db_) in zip(shown, sql.rows(), strict=False):
            assert r[:3] == [sid, str(i), change.replace("_", " ")]
            assert r[3:7] == [verdict(ra, ca), da, verdict(rb, cb), db_]
    return blocks


def test_unl_section_equals_its_tables():
    db = memory_db(unl_frames())
    got = unl_html(db, "g<1>", tables_in(db))
    assert 'id="g&lt;1&gt;-unl"' in got and "<b>" not in got and "v3&amp;" in got
    assert "zz" not in got  # the other corpus
    blocks = assert_unl_section(got, db, "g<1>")
    assert len(blocks) == 3 and any(int(m) > 20 for _, _, m, _ in blocks)


UNL_KEY = "".join(f"[S:{k + 1}]{{unl}}{g}{{/unl}}[/S]\n" for k, g in enumerate(
    ["agt(a,b)", "agt(c,d)\nobj(c,e)", "agt(x,y)", "agt(p,q)", "agt(m,n)"]))
UNL_VERSIONS = {
    "g@v1": ["agt(a,b)", "aoj(c,d)\nobj(c,e)", "aoj(x,y)", "agt(p,q)", "agt(m,n)\nobj(z,w)"],
    "g@v2": ["aoj(a,b)", "agt(c,d)\nobj(c,e)", "cnt(x,y)", "agt(p,q)", "agt(m,n)\nobj(z,w)"],
    "g@v3": ["agt(a,b)", "agt(c,d)\nobj(c,e)", "aoj(x,y)", "agt(p,q)", "agt(m,n)"],
}


@pytest.fixture(scope="module")
def unl_warehouse(tmp_path_factory, prefect_harness) -> Path:
    """A UNL run (three versions of a grammar) through the CLI."""
    d = tmp_path_factory.mktemp("unl")
    (d / "key.unl").write_text(UNL_KEY, encoding="utf-8")
    args = ["run", "--task", "unl", "--key", str(d / "key.unl"), "--corpus", "fable",
            "-w", str(d / "wh")]
    for name, graphs in UNL_VERSIONS.items():
        path = d / f"{name}.unl"
        path.write_text("".join(f"[S:{k + 1}]{{unl}}{g}{{/unl}}[/S]\n"
                                for k, g in enumerate(graphs)), encoding="utf-8")
        args += ["--system", f"{name}={path}"]
    code, _, err = run_cli(*args)
    assert code == 0, err
    return d / "wh"


def test_unl_section_of_a_unl_run(unl_warehouse, tmp_path):
    page = build_report(unl_warehouse, None, tmp_path / "r.html").read_text("utf-8")
    assert page.count('class="view unl"') == 1 and 'href="#fable-unl"' in page
    assert 'class="view coref"' not in page
    read, close = reader(unl_warehouse)
    try:
        assert read("select count(*) from unl_pairs").item() > 0
        blocks = assert_unl_section(page, read, "fable")
    finally:
        close()
    assert len(blocks) == 3


def test_unl_section_reads_the_older_column_names():
    frames = unl_frames()
    frames = {k: df.rename({"sys1": "system_a", "sys2": "system_b"}, strict=False)
              for k, df in frames.items()}
    db = memory_db(frames)
    got = unl_html(db, "g<1>", tables_in(db))
    assert len(tables_of(got, "unl-moved")) == 3 and len(tables_of(got, "unl-pairs")) == 1


def test_unl_section_absent_without_rows():
    frames = unl_frames()
    db = memory_db({k: df.clear() for k, df in frames.items()})
    assert unl_html(db, "g<1>", tables_in(db)) == ""
    db = memory_db(frames)
    assert unl_html(db, "nope", tables_in(db)) == ""
    assert unl_html(db, "g<1>", set()) == ""


# ----------------------------------------------------------------------------- browser

class DevTools:
    """A minimal Chrome DevTools Protocol client over the browser websocket."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self.ws = connect(url, max_size=None, open_timeout=30)
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e.get("method") == method:
                    return e
            reply = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            self.events.append(reply)

    def close(self) -> None:
        self.ws.close()


def start_chromium(profile: Path) -> tuple[subprocess.Popen, str]:
    """Headless Chromium with a DevTools port; returns the process and the browser ws URL."""
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=(profile / "stderr.log").open("w"))
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if port_file.exists() and len(port_file.read_text().split()) == 2:
            port, path = port_file.read_text().split()
            return proc, f"ws://127.0.0.1:{port}{path}"
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chromium did not open its DevTools port: "
                       + (profile / "stderr.log").read_text()[-2000:])


def open_in_chromium(path: Path, tmp_path: Path, check_js: str,
                     clip: str | None = None) -> tuple[dict, list[dict], Path]:
    """Load ``path`` in headless Chromium, run ``check_js`` (returns JSON), take a screenshot
    (of the element ``clip`` if given, else of the viewport); return state, events, png."""
    profile = tmp_path / "profile"
    profile.mkdir()
    proc, url = start_chromium(profile)
    png = tmp_path / "report.png"
    try:
        cdp = DevTools(url)
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            cdp.send(f"{domain}.enable", session=session)
        cdp.send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 3000,
                                                        "deviceScaleFactor": 1,
                                                        "mobile": False}, session=session)
        cdp.send("Page.navigate", {"url": path.as_uri()}, session=session)
        cdp.wait_for("Page.loadEventFired", timeout=120)
        state = json.loads(cdp.send("Runtime.evaluate", {"expression": check_js,
                                                         "returnByValue": True},
                                    session=session)["result"]["value"])
        params: dict = {"format": "png"}
        if clip:
            box = json.loads(cdp.send("Runtime.evaluate", {"expression": (
                f"JSON.stringify((() => {{ const b = document.querySelector({json.dumps(clip)})"
                ".getBoundingClientRect(); return [b.left + scrollX, b.top + scrollY, b.width, "
                "b.height]; })())"), "returnByValue": True}, session=session)["result"]["value"])
            params |= {"captureBeyondViewport": True,
                       "clip": dict(zip(("x", "y", "width", "height"), box, strict=True),
                                    scale=1)}
        shot = cdp.send("Page.captureScreenshot", params, session=session)
        png.write_bytes(base64.b64decode(shot["data"]))
        cdp.send("Runtime.evaluate", {"expression": "1"}, session=session)  # flush events
        cdp.send("Browser.close")
        cdp.close()
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return state, cdp.events, png


def assert_quiet(events: list[dict], path: Path) -> None:
    """No console error, no exception, and no request but the page itself."""
    errors = [e["params"] for e in events
              if (e.get("method") == "Runtime.consoleAPICalled"
                  and e["params"]["type"] in ("error", "assert"))
              or e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Log.entryAdded"
                  and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    requests = [e["params"]["request"]["url"] for e in events
                if e.get("method") == "Network.requestWillBeSent"]
    assert requests == [path.as_uri()]


CHECK_JS = """(() => {
  const link = document.querySelector('a[href^="#ex-"]');
  const target = document.getElementById(link.getAttribute('href').slice(1));
  const before = target.open;
  link.click();
  return JSON.stringify({
    text: document.body.innerText,
    svgs: document.querySelectorAll('svg').length,
    rects: document.querySelectorAll('svg rect').length,
    tables: document.querySelectorAll('table').length,
    drill: [before, target.open, target.querySelectorAll('table.words').length],
  });
})()"""


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="the chromium binary is not installed")
def test_report_in_headless_chromium(report, data, tmp_path):
    path, _ = report
    state, events, png = open_in_chromium(path, tmp_path, CHECK_JS)
    assert_quiet(events, path)
    for section in SECTIONS:
        assert section in state["text"], section
    for name in SYSTEMS:
        assert name in state["text"]
    assert state["svgs"] >= 4 * len(VIEWS) and state["rects"] > 100 and state["tables"] > 50
    assert state["drill"][0] is False and state["drill"][1] is True and state["drill"][2] > 0
    assert png.stat().st_size > 50_000
    if os.environ.get("SYSDIFF_REPORT_SCREENSHOT"):
        shutil.copy(png, os.environ["SYSDIFF_REPORT_SCREENSHOT"])


COREF_JS = """(() => {
  const sec = document.querySelector('section.coref');
  const closed = sec.querySelector('details.pair:not([open])');
  const before = closed.open;
  closed.querySelector('summary').click();
  const rgb = (td) => getComputedStyle(td).backgroundColor.match(/[\\d.]+/g).map(Number);
  return JSON.stringify({
    text: sec.innerText,
    tables: sec.querySelectorAll('table').length,
    trans: sec.querySelectorAll('table.trans').length,
    cells: [...sec.querySelectorAll('table.trans td.cell')].map(
      (td) => [td.className, Number(td.textContent), rgb(td)]),
    toggled: [before, closed.open,
              closed.querySelector('table.trans').getBoundingClientRect().height],
  });
})()"""


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="the chromium binary is not installed")
def test_coref_report_in_headless_chromium(coref_report, litbank, tmp_path):
    path, _ = coref_report
    state, events, png = open_in_chromium(path, tmp_path, COREF_JS, clip="section.coref")
    assert_quiet(events, path)
    for heading in ("Standard scores", "ARCS mention classes", "Pairs", "Transitions per pair",
                    "Upper bounds", "Agreement", "Difference:", "Corrections:", "New errors:",
                    "Changed errors:"):
        assert heading in state["text"], heading
    for name in query(litbank, "select distinct system from coref_scores")["system"]:
        assert name in state["text"]
    n_pairs = query(litbank, "select count(*) from coref_pairs where sys1 < sys2").item()
    assert state["trans"] == n_pairs and state["tables"] > 2 * n_pairs
    assert state["toggled"][0] is False and state["toggled"][1] is True
    assert state["toggled"][2] > 100  # the opened pair's matrix is laid out
    seen = set()
    for cls, n, (r, g, b, *_) in state["cells"]:
        kind = cls.split()[1]
        if kind in ("diag", "other"):
            assert abs(r - g) < 12 and abs(g - b) < 20  # grey
        elif n > 0:
            seen.add(kind)
            assert {"correction": g > r and g > b, "new_error": r > g and r > b,
                    "changed_error": r > g > b}[kind], (cls, n, r, g, b)
    assert seen == {"correction", "new_error", "changed_error"}
    assert png.stat().st_size > 50_000
    if os.environ.get("SYSDIFF_COREF_SCREENSHOT"):
        shutil.copy(png, os.environ["SYSDIFF_COREF_SCREENSHOT"])
