"""The HTML report and the drill-down examples, checked against the warehouse tables via SQL."""

from __future__ import annotations

import html as htmllib
import itertools
import json
import os
import re
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from benchmarks.browser import chromium_binary, open_page
from sysdiff.flows.examples import cell_examples, examples
from sysdiff.flows.queries import query
from sysdiff.flows.render import to_text
from sysdiff.flows.report import build_report
from sysdiff.flows.report.charts import ticks
from sysdiff.flows.report.coref import coref_html
from sysdiff.flows.report.data import load_corpus, oracle_labels, reader, tables_in
from sysdiff.flows.report.html import esc, frame_html, stars, table_html, td
from sysdiff.flows.report.tokens import label_html
from sysdiff.flows.report.unl import unl_html
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.tables import UNL_TABLES
from sysdiff.transforms.summaries import label_table, leaderboard, marginal_gains, oriented_pairs
from tests.conftest import REPO, SEQUOIA, run_cli

CORPUS = "seq"
SYSTEMS = {
    "spacy_sm@3.8.0": "fr_core_news_sm-3.8.0.conllu",
    "spacy_md@3.8.0": "fr_core_news_md-3.8.0.conllu",
    "seqsm@ud2.8": "seqsm_local-ud2.8.conllu",
    "seqsm@ud2.16": "seqsm_local-ud2.16.conllu",
}
VIEWS = ("upos", "xpos", "feats", "lemma", "head", "deprel", "las")
SHOWN = tuple(v for v in VIEWS if v != "xpos")  # the Sequoia key has no XPOS
SECTIONS = ("Scores", "Pairwise diff", "Δ accuracy vs diff", "Change classes per pair",
            "Largest changes",
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
def read(warehouse):
    read, close = reader(warehouse)
    try:
        yield read
    finally:
        close()


@pytest.fixture(scope="module")
def data(read):
    return load_corpus(read, CORPUS)


@pytest.fixture(scope="module")
def report(warehouse, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report.html"
    return build_report(warehouse, None, out, examples_per_cell=3)


# ----------------------------------------------------------------------------- table builders

@pytest.mark.parametrize("view", ["upos", "las", "feats"])
def test_label_table_marks_best_and_worst_and_oracle_gain(warehouse, read, data, view):
    rows = oracle_labels(read, data, view, [data.systems])
    table = label_table(data.of("labels", view), rows, data.systems)
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


@pytest.mark.parametrize("view", SHOWN)
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


def test_leaderboard_is_sorted_by_accuracy(data):
    got = leaderboard(data.of("scores", "las"))
    assert got["accuracy"].to_list() == sorted(got["accuracy"].to_list(), reverse=True)
    assert got["rank"].to_list() == [1, 2, 3, 4]
    assert set(got["system"]) == set(SYSTEMS)


def test_significance_marks_and_ticks():
    assert [stars(p) for p in (0.001, 0.01, 0.03, 0.05, None)] == ["**", "*", "*", "", ""]
    assert ticks(3.2) == [0, 1, 2, 3, 4]
    assert ticks(1.5) == [0, 0.5, 1, 1.5]


def test_a_transition_matrix_adds_up_and_colours_by_change_class():
    """The one matrix of coreference and span pairs, on hand-made cells: rows under sys1,
    columns under sys2, sums; the diagonal neutral, two right classes 'other'."""
    from sysdiff.flows.report.html import transition_matrix_html
    from sysdiff.transforms.summaries import transition_class

    cells = [("TP", "FN", 3), ("FN", "TP", 1), ("TP", "TP", 5), ("TN", "TP", 2),
             ("FP", "WL", 4)]
    page = transition_matrix_html(cells, ["TP", "FN", "TN"], transition_class, "a<1",
                                  "b", {"criterion": "nom"})
    assert page.startswith('<table class="trans" data-criterion="nom" data-sys1="a&lt;1" '
                           'data-sys2="b">')
    found = re.findall(r'class="cell (\w+)" data-c1="(\w+)" data-c2="(\w+)"[^>]*>(\d+)</td>',
                       page)
    assert [(c1, c2, kind, int(n)) for kind, c1, c2, n in found] == [
        ("TP", "TP", "diag", 5), ("TP", "FN", "new_error", 3), ("TP", "TN", "other", 0),
        ("FN", "TP", "correction", 1), ("FN", "FN", "diag", 0), ("FN", "TN", "correction", 0),
        ("TN", "TP", "other", 2), ("TN", "FN", "new_error", 0), ("TN", "TN", "diag", 0)]
    # row sums (TP 8, FN 1, TN 2), column sums (TP 8, FN 3, TN 0), all cells (FP->WL too)
    assert re.findall(r'<td class="tot">(\d+)</td>', page) == ["8", "1", "2", "8", "3", "0",
                                                             "15"]
    # the largest off-diagonal count (4, outside the shown classes) sets the colour scale
    assert 'title="TP → FN: 3 (New errors)"' in page and "rgba(198,40,40,0.680)" in page


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
    for col in ("sent_id", "id", "form", "gold", "l1", "l2", "sentence", "window"):
        assert col in got.columns
    assert (got["l2"] == got["gold"]).all() and (got["l1"] != got["gold"]).all()
    key = query(warehouse, "select sent, id, form, upos from units where system = '__key__' "
                "and kind = 0")
    key = {(s, i): (f, u) for s, i, f, u in key.rows()}
    for r in got.iter_rows(named=True):
        assert key[(r["sent"], r["id"])] == (r["form"], r["gold"])
        assert r["sentence"].count("[") == 1 and f"[{r['form']}]" in r["sentence"]
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
    tex = to_text(leaderboard(data.of("scores", "upos")), "latex")
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
    body = html.split("<script")[0]
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in body
    assert "&lt;/script&gt;" in body and "a&amp;b" in body and "&quot;q&quot;" in body
    # the examples' JSON island and the script: no label can close them
    assert html.count("<script") == 2 and html.count("</script>") == 2
    island = html.split('<script type="application/json" id="sysdiff-examples">')[1]
    data = json.loads(island.split("</script>")[0])
    shown = set(data["labels"]["upos"]) | {f for s in data["sents"] for f in s[2]}
    assert {"<b>x</b>", "</script>", '"q"', "a&b"} <= shown
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
    path = report
    html = path.read_text("utf-8")
    assert set(data.views()) == set(SHOWN)
    for view in SHOWN:
        assert f'id="{CORPUS}-{view}"' in html and f'href="#{CORPUS}-{view}"' in html
    # the key's XPOS is '_' everywhere: no section, a note says why
    assert f'id="{CORPUS}-xpos"' not in html and "not evaluated: xpos (every label" in html
    for section in SECTIONS:
        assert html.count(section) >= len(SHOWN), section
    for name in SYSTEMS:
        assert esc(name) in html
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|url\(|@import""", html) is None
    assert html.count("<svg") >= 3 * len(SHOWN) and html.count('<canvas class="heat"') == \
        len(SHOWN)
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
def coref_report(litbank, tmp_path_factory) -> Path:
    return build_report(litbank, None, tmp_path_factory.mktemp("coref_html") / "report.html")


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


def ci_shown(low: float | None, high: float | None) -> str:
    """The visible text of an interval cell: ``[low, high]`` and its bar's title (percent;
    '' without an interval)."""
    if low is None or high is None:
        return ""
    return f"[{p2(low)}, {p2(high)}]{p2(low)} – {p2(high)}"


def oriented_coref_pairs(warehouse: Path) -> set[tuple[str, str, str]]:
    """(criterion, S1, S2): each pair once, from the lower to the higher CoNLL F1."""
    return set(query(warehouse, f"""
        select p.criterion, p.sys1, p.sys2 from coref_pairs p
        join coref_scores a on a.system = p.sys1 and a.metric = 'conll'
        join coref_scores b on b.system = p.sys2 and b.metric = 'conll'
        where p.corpus = '{LITBANK}' and a.corpus = p.corpus and b.corpus = p.corpus
          and (a.f1 < b.f1 or (a.f1 = b.f1 and p.sys1 > p.sys2))""").rows())


def test_coref_transition_matrices_equal_the_transitions_table(litbank, coref_report):
    page = coref_report.read_text("utf-8")
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
    page = coref_report.read_text("utf-8")
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
    page = coref_report.read_text("utf-8")
    # standard scores: every cell, and the best of each column marked
    (_, inner), = tables_of(page, "coref-scores")
    cells = re.findall(r'<tr><td class="l">([^<]*)</td>(.*?)</tr>', inner, re.S)
    shown, marked, tips = {}, set(), {}
    for system, row in cells:
        for cls, metric, col, tip, v in re.findall(
                r'<td class="([^"]*)" data-metric="(\w+)" data-col="(\w)"(?: title="([^"]*)")?>'
                r'([^<]*)</td>', row):
            shown[(htmllib.unescape(system), metric, col)] = v
            tips[(htmllib.unescape(system), metric, col)] = tip
            if "best" in cls.split():
                marked.add((htmllib.unescape(system), metric, col))
    sql = query(litbank, f"select system, metric, recall, precision, f1, ci_low, ci_high "
                f"from coref_scores where corpus = '{LITBANK}'")
    assert len(shown) == 3 * sql.height
    for system, metric, *vals, low, high in sql.rows():
        for col, v in zip("rpf", vals, strict=True):
            assert shown[(system, metric, col)] == p2(v)
        # F1's interval as the cell's title (and the CoNLL F1's as a column of bars)
        assert tips[(system, metric, "f")] == f"[{p2(low)}, {p2(high)}]"
        assert tips[(system, metric, "r")] == tips[(system, metric, "p")] == ""
    bars = [text_of(c) for c in re.findall(r'<td class="ci">(.*?)</td>', inner, re.S)]
    conll = query(litbank, f"select ci_low, ci_high from coref_scores where corpus = "
                           f"'{LITBANK}' and metric = 'conll'")
    assert sorted(bars) == sorted(ci_shown(lo, hi) for lo, hi in conll.rows())
    assert len(set(bars)) == conll.height > 1
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
                f"recall, f1, ci_low, ci_high from arcs_scores where corpus = '{LITBANK}'")
    assert len(arcs) == sql.height
    for crit, system, mtype, *counts, p, r, f, low, high in sql.rows():
        assert arcs[(crit, system, mtype)] == [*map(str, counts), p2(p), p2(r), p2(f),
                                               ci_shown(low, high)]
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
    page = coref_report.read_text("utf-8")
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
    seq = report.read_text("utf-8")
    assert 'class="view coref"' not in seq and 'class="view unl"' not in seq
    page = coref_report.read_text("utf-8")
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
                       # v3&: no interval (e.g. --bootstrap 0)
                       "ci_low": None if v == "v3&" else c / (2 * n - 2),
                       "ci_high": None if v == "v3&" else 3 * c / (2 * n - 2),
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
                             "returned1": True, "returned2": i % 7 != 0,
                             "correct1": bool(x), "correct2": bool(y),
                             "d_all_frac1": "0" if x else "3/7",
                             "d_all_frac2": "0" if y else "18/60",
                             "reason1": None if x else "d_all=3/7 <b>",
                             "reason2": None if y else "not connected"})
        moved += rows
        k = {c: sum(r["change"] == c for r in rows) for c in ("correction", "new_error",
                                                                  "changed_error")}
        pairs.append({"corpus": corpus, "task": "unlization", "sys1": a, "sys2": b,
                      "n_sentences": n, "n_correct1": sum(correct[a]),
                      "n_correct2": sum(correct[b]), "n_changed": len(rows),
                      "corrections": k["correction"], "new_errors": k["new_error"],
                      "changed_errors": k["changed_error"], "diff": len(rows) / n,
                      "oracle": sum(x or y for x, y in zip(correct[a], correct[b],
                                                           strict=True)) / n})
    oracle = [{"corpus": corpus, "task": "unlization", "systems": sorted(versions),
               "n_systems": 3, "n_sentences": n, "n_oracle": 40, "oracle": 40 / n,
               "best_system": "v3&", "best_correct": 40, "gain": 0.0},
              {"corpus": "other", "task": "unlization", "systems": ["zz"], "n_systems": 1,
               "n_sentences": 1, "n_oracle": 1, "oracle": 1.0, "best_system": "zz",
               "best_correct": 1, "gain": 0.0}]
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
    sql = db(f"select system, n_expected, n_returned, n_correct, precision, recall, f1, "
             f"ci_low, ci_high{''.join(', ' + k for k in extra)} from unl_scores where "
             f"corpus = {c} order by task, f1 desc, system")
    assert body_rows(inner) == [[s, str(e), str(r), str(n), p2(p), p2(r_), p2(f),
                                 ci_shown(lo, hi), *map(p2, xs)]
                                for s, e, r, n, p, r_, f, lo, hi, *xs in sql.rows()]
    # pairs: each pair once, from fewer to more correct sentences
    (_, inner), = tables_of(got, "unl-pairs")
    rows = body_rows(inner)
    sql = db(f"select task, sys1, sys2, diff, n_changed, n_sentences, corrections, new_errors, "
             f"changed_errors, n_correct1, n_correct2, oracle from unl_pairs where corpus = "
             f"{c} and (n_correct2 > n_correct1 or (n_correct2 = n_correct1 "
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
        [t, " + ".join(s), f"{k}/{n}", p2(o), b, str(n_b), f"{100 * g:+.2f}"]
        for t, s, k, n, o, b, n_b, g in
        db("select task, systems, n_oracle, n_sentences, oracle, best_system, best_correct, "
           f"gain from unl_oracle where corpus = {c} "
           "order by task, n_systems desc, oracle desc, systems").rows()]
    # moved sentences: at most 20 per pair, in corpus order, with verdicts and D
    blocks = re.findall(r"<summary>\w+: (.*?) → (.*?): (\d+) moved.*?</summary>(.*?)"
                        r"</details>", got, re.S)
    assert len(blocks) == len(rows) == len(tables_of(got, "unl-moved"))
    for a, b, m, inner in blocks:
        a, b = htmllib.unescape(a), htmllib.unescape(b)
        (_, table), = tables_of(inner, "unl-moved")
        shown = body_rows(table)
        sql = db(f"select sent_id, sent_index, change, returned1, correct1, d_all_frac1, "
                 f"returned2, correct2, d_all_frac2 from unl_moved where corpus = {c} "
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


def test_unl_section_absent_without_rows():
    frames = unl_frames()
    db = memory_db({k: df.clear() for k, df in frames.items()})
    assert unl_html(db, "g<1>", tables_in(db)) == ""
    db = memory_db(frames)
    assert unl_html(db, "nope", tables_in(db)) == ""
    assert unl_html(db, "g<1>", set()) == ""


# ----------------------------------------------------------------------------- browser

# Skipped where Chromium is not installed (a Debian package, not a pip one), except under
# .ci/run, which installs it and sets SYSDIFF_TESTS_NEED_CHROMIUM: there these tests run.
needs_chromium = pytest.mark.skipif(
    not Path(chromium_binary()).exists() and not os.environ.get("SYSDIFF_TESTS_NEED_CHROMIUM"),
    reason="the chromium binary is not installed")


def open_in_chromium(path: Path, tmp_path: Path, check_js: str,
                     clip: str | None = None) -> tuple[dict, list[dict], Path]:
    """Load ``path`` in headless Chromium, run ``check_js`` (returns JSON), screenshot it
    (the element ``clip`` if given, else the viewport); return state, events, png file."""
    state, events, shot = open_page(path, tmp_path / "profile", check_js, clip)
    png = tmp_path / "report.png"
    png.write_bytes(shot)
    return state, events, png


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
  const before = [target.open, target.querySelectorAll('table.words').length];
  link.click();
  const canvases = [...document.querySelectorAll('canvas.heat')].map((c) => {
    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let inked = 0;
    for (let i = 0; i < px.length; i += 4) { if (px[i + 3] > 0) { inked++; } }
    return [c.width, c.height, inked];
  });
  return JSON.stringify({
    text: document.body.innerText,
    svgs: document.querySelectorAll('svg').length,
    rects: document.querySelectorAll('svg rect').length,
    tables: document.querySelectorAll('table').length,
    canvases: canvases,
    drill: [...before, target.open, target.querySelectorAll('table.words').length],
  });
})()"""


@needs_chromium
def test_report_in_headless_chromium(report, data, tmp_path):
    state, events, png = open_in_chromium(report, tmp_path, CHECK_JS)
    assert_quiet(events, report)
    for section in SECTIONS:
        assert section in state["text"], section
    for name in SYSTEMS:
        assert name in state["text"]
    assert state["svgs"] >= 3 * len(SHOWN) and state["rects"] > 100 and state["tables"] > 50
    assert len(state["canvases"]) == len(SHOWN)
    for width, height, inked in state["canvases"]:  # drawn: cells and labels
        assert width > 4 * 30 and height > 4 * 30 and inked > 4 * 4 * 30 * 30
    # examples are drawn when their block opens
    assert state["drill"] == [False, 0, True, state["drill"][3]] and state["drill"][3] > 0
    assert png.stat().st_size > 50_000
    if os.environ.get("SYSDIFF_REPORT_SCREENSHOT"):
        shutil.copy(png, os.environ["SYSDIFF_REPORT_SCREENSHOT"])


EXAMPLES_JS = """(() => {
  const D = JSON.parse(document.getElementById('sysdiff-examples').textContent);
  const out = [];
  document.querySelectorAll('section.view').forEach((sec) => {
    sec.querySelectorAll('details.pair').forEach((pair) => {
      pair.querySelectorAll('a[href^="#ex-"]').forEach((a) => {
        a.click();
        const block = document.getElementById(a.getAttribute('href').slice(1));
        out.push({view: block.dataset.v, sys1: pair.dataset.sys1, sys2: pair.dataset.sys2,
                  names: [D.names[block.dataset.a], D.names[block.dataset.b]],
                  summary: block.querySelector('summary').textContent,
                  sents: [...block.querySelectorAll('div.sent')].map((s) => ({
                    note: s.querySelector('.note').textContent,
                    rows: [...s.querySelectorAll('tr')].map((tr) => [...tr.children].map(
                      (td) => [td.textContent, td.className]))}))});
      });
    });
  });
  return JSON.stringify(out);
})()"""


def shown(view: str, label: str, head: int) -> str:
    return f"{head}:{label}" if view in ("head", "las") else label


def wrong(view: str, lab: str, hd: int, gold: str, gold_head: int) -> bool:
    return {"head": hd != gold_head, "las": (hd, lab) != (gold_head, gold)}.get(view,
                                                                              lab != gold)


@needs_chromium
def test_examples_drawn_in_chromium_equal_the_word_windows(warehouse, report, tmp_path):
    """Every example the page draws (window, labels, wrong marks, hit) equals the words of
    the warehouse, and each block shows the first words of its change cell."""
    blocks, events, _ = open_in_chromium(report, tmp_path, EXAMPLES_JS)
    assert_quiet(events, report)
    assert len(blocks) > 100
    expected: dict[tuple, pl.DataFrame] = {}
    for b in blocks:
        view, a, c = b["view"], b["sys1"], b["sys2"]
        assert b["names"] == [a, c]
        if (view, a, c) not in expected:
            expected[(view, a, c)] = cell_examples(warehouse, CORPUS, view, punct_of(view), a,
                                                   c, 3, 6)
        rows = expected[(view, a, c)]
        shown_n, total = map(int, re.search(r": (\d+) of (\d+) shown$", b["summary"]).groups())
        assert len(b["sents"]) == shown_n == min(3, total)
        cells = set()
        for sent in b["sents"]:
            sent_id, word = re.match(r"(.*), word (\d+) ", sent["note"]).groups()
            r = rows.filter((pl.col("sent_id") == sent_id) & (pl.col("id") == int(word)))
            assert r.height == 1
            r = r.row(0, named=True)
            cells.add((r["class"], r["gold"], r["l1"], r["l2"]))
            forms, gold, s1, s2 = (row[1:] for row in sent["rows"])
            window = r["window"]
            assert [f[0] for f in forms] == [f"{w['form']}{w['id']}" for w in window]
            assert [g[0] for g in gold] == [
                w["gold"] if view == "deprel" else shown(view, w["gold"], w["gold_head"])
                for w in window]
            for got, lab, hd in ((s1, "l1", "head1"), (s2, "l2", "head2")):
                assert [x[0] for x in got] == [
                    w[lab] if view == "deprel" else shown(view, w[lab], w[hd]) for w in window]
                assert ["wrong" in x[1].split() for x in got] == [
                    wrong(view, w[lab], w[hd], w["gold"], w["gold_head"]) for w in window]
            assert [("hit" in f[1].split()) for f in forms] == [w["id"] == r["id"]
                                                               for w in window]
        assert len(cells) == 1  # one change cell per block, its first words in corpus order
        (cell,) = cells
        first = rows.filter((pl.col("class") == cell[0]) & (pl.col("gold") == cell[1])
                            & (pl.col("l1") == cell[2]) & (pl.col("l2") == cell[3]))
        assert [re.match(r"(.*), word (\d+) ", s["note"]).groups() for s in b["sents"]] == \
            [(i, str(w)) for i, w in first.select("sent_id", "id").rows()]


NASTY_JS = """(() => {
  document.querySelectorAll('a[href^="#ex-"]').forEach((a) => a.click());
  return JSON.stringify({text: document.querySelector('main').innerText,
                         bold: document.querySelectorAll('main b').length,
                         scripts: document.querySelectorAll('script').length,
                         words: document.querySelectorAll('table.words').length});
})()"""


@needs_chromium
def test_nasty_examples_are_drawn_as_text(nasty_warehouse, tmp_path):
    path = build_report(nasty_warehouse, "nasty", tmp_path / "r.html")
    state, events, _ = open_in_chromium(path, tmp_path, NASTY_JS)
    assert_quiet(events, path)
    assert state["words"] > 0 and state["scripts"] == 2
    # the only <b> elements are the example words' forms (the label "<b>x</b>" is text)
    assert state["bold"] == state["words"]
    assert "<b>x</b>" in state["text"] and "</script>" in state["text"]


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


@needs_chromium
def test_coref_report_in_headless_chromium(coref_report, litbank, tmp_path):
    state, events, png = open_in_chromium(coref_report, tmp_path, COREF_JS,
                                          clip="section.coref")
    assert_quiet(events, coref_report)
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


HEAT_JS = """(() => {
  const canvas = document.querySelector('section#seq-las canvas.heat');
  const H = JSON.parse(canvas.dataset.heat), g = canvas._heat, n = H.names.length;
  const box = canvas.getBoundingClientRect();
  const at = (i, j) => ({clientX: box.left + g.pad + (j + 0.5) * g.cell,
                         clientY: box.top + g.top + (i + 0.5) * g.cell, bubbles: true});
  const tips = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      canvas.dispatchEvent(new MouseEvent('mousemove', at(i, j)));
      const tip = document.getElementById('tip');
      tips.push([H.names[i], H.names[j], tip.hidden ? null : tip.textContent]);
    }
  }
  const pairs = [...canvas.closest('section').querySelectorAll('details.pair')];
  const shut = pairs.find((d) => !d.open);
  const i = H.names.indexOf(shut.dataset.sys2), j = H.names.indexOf(shut.dataset.sys1);
  canvas.dispatchEvent(new MouseEvent('click', at(i, j)));
  return JSON.stringify({tips: tips, opened: [shut.dataset.sys1, shut.dataset.sys2, shut.open]});
})()"""


@needs_chromium
def test_heatmap_tooltips_and_click_in_chromium(warehouse, report, tmp_path):
    state, events, _ = open_in_chromium(report, tmp_path, HEAT_JS)
    assert_quiet(events, report)
    rows = query(warehouse, "select sys1, sys2, diff, ar_p from pairs where view = 'las' "
                 "and not punct").rows()
    expected = {(a, b): (d, p) for a, b, d, p in rows}
    assert len(state["tips"]) == len(SYSTEMS) ** 2
    for a, b, tip in state["tips"]:
        if a == b:
            assert tip is None
            continue
        d, p = expected[(a, b)]
        marks = "\nAR p < 0.01" if p < 0.01 else "\nAR p < 0.05" if p < 0.05 else ""
        assert tip == f"{a} vs {b}\npairwise diff: {100 * d:.2f}%{marks}"
    assert state["opened"][2] is True  # a click on a cell opens the pair's details
