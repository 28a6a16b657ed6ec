"""The report at many systems (12 perturbed copies of the Sequoia outputs, built once) and the
version-history chart (hand-made ``history`` frames, and one added to a warehouse copy)."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from benchmarks.report import synthetic_warehouse, write_run_file
from sysdiff.flows.queries import query
from sysdiff.flows.render import p_value
from sysdiff.flows.report import build_report
from sysdiff.flows.report.coref import agreement_html
from sysdiff.flows.report.history import history_html
from sysdiff.flows.report.tokens import LARGEST, PAIR_DETAILS, TOP_PAIRS
from sysdiff.transforms.summaries import score_name
from tests.conftest import run_cli
from tests.test_report import body_rows, memory_db, tables_of

N = 12
VIEWS = ("upos", "feats", "lemma", "head", "deprel", "las")  # the key has no XPOS
MB = 1_000_000


def punct_of(view: str) -> bool:
    return view not in ("head", "deprel", "las")


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@pytest.fixture(scope="module")
def many(tmp_path_factory, prefect_harness) -> Path:
    """A warehouse of 12 systems (the benchmark's generator: seeded perturbations)."""
    folder = tmp_path_factory.mktemp("many")
    run = write_run_file(folder, N, seed=0, ar_trials=200)
    code, _, err = run_cli("run", str(run), "-w", str(folder / "wh"))
    assert code == 0, err
    return folder / "wh"


@pytest.fixture(scope="module")
def page(many, tmp_path_factory) -> str:
    out = build_report(many, None, tmp_path_factory.mktemp("many-html") / "report.html")
    return out.read_text("utf-8")


def section(page: str, view: str, corpus: str = "seq") -> str:
    start = page.index(f'id="{corpus}-{view}"')
    return page[start:page.index("</section>", start)]


def test_generated_systems_disagree_but_align(many):
    scores = query(many, "select system, accuracy from scores where view = 'las' and not punct")
    assert scores.height == N and scores["accuracy"].n_unique() > N // 2
    pairs = query(many, "select min(diff), max(diff) from pairs where view = 'upos' and "
                  "sys1 <> sys2").row(0)
    assert 0 < pairs[0] < pairs[1] < 0.2
    names = query(many, "select system from systems where role <> 'key'")["system"]
    assert sorted(names) == sorted(f"{b}@p{k:02d}" for b in ("spacy_sm", "spacy_md",
                                                              "seqsm_ud28", "seqsm_ud216")
                                   for k in (1, 2, 3))


def test_report_of_12_systems_is_at_most_2_mb(page):
    assert len(page.encode("utf-8")) <= 2 * MB


@pytest.mark.parametrize("view", VIEWS)
def test_leaderboard_sorted_with_explicit_score_name(many, page, view):
    sec = section(page, view)
    name = score_name(view)
    assert f"seq: {htmllib.escape(name)}" in sec and f"<th>{name} %</th>" in sec
    (_, inner), = tables_of(sec, "board")
    rows = body_rows(inner)
    sql = query(many, f"select system, accuracy, rank() over (order by accuracy desc) from "
                f"scores where view = '{view}' and punct = {punct_of(view)} "
                "order by accuracy desc nulls last, system")
    # a system without the view's column (no LEMMA) has no score and no rank: '—', last
    assert [(r[1], r[2], r[0]) for r in rows] == [
        (s, "—", "—") if a is None else (s, f"{100 * a:.2f}", str(k)) for s, a, k in sql.rows()]


@pytest.mark.parametrize("view", ["upos", "las"])
def test_top_pairs_and_largest_changes_equal_sql(many, page, view):
    sec = section(page, view)
    w = f"view = '{view}' and punct = {punct_of(view)}"
    (_, inner), = tables_of(sec, "pairs")
    rows = body_rows(inner)
    oriented = (f"select sys1, sys2, diff from pairs where {w} and sys1 <> sys2 and "
                "(delta_acc > 0 or (delta_acc = 0 and sys1 < sys2))")
    sql = query(many, f"{oriented} order by diff desc, sys1, sys2 limit {TOP_PAIRS}")
    assert len(rows) == TOP_PAIRS < N * (N - 1) // 2
    assert [(r[1], r[2], r[3]) for r in rows] == [(a, b, f"{100 * d:.2f}")
                                                  for a, b, d in sql.rows()]
    assert f"Top {TOP_PAIRS} of {N * (N - 1) // 2} pairs by diff" in sec
    (_, inner), = tables_of(sec, "largest")
    got = [(r[0], r[1], r[4]) for r in body_rows(inner)]
    sql = query(many, f"""
        with o as ({oriented})
        select sys1, sys2, class, gold, l1, l2, sum(count) as n from changes join o
        using (sys1, sys2) where {w} group by all
        order by n desc, sys1, sys2, class, gold, l1, l2 limit {LARGEST}""")
    assert got == [(a, b, str(n)) for a, b, *_, n in sql.rows()]


@pytest.mark.parametrize("view", ["upos", "las"])
def test_details_start_with_best_against_runner_up(many, page, view):
    sec = section(page, view)
    pairs = re.findall(r'<details class="pair" data-sys1="([^"]*)" data-sys2="([^"]*)"', sec)
    board = query(many, f"select system from scores where view = '{view}' and punct = "
                  f"{punct_of(view)} order by accuracy desc, system limit 2")["system"]
    assert len(pairs) == PAIR_DETAILS and pairs[0] == (board[1], board[0])
    assert len(set(pairs)) == PAIR_DETAILS


def test_heatmap_data_is_clustered_diffs(many, page):
    sec = section(page, "las")
    (raw,) = re.findall(r'<canvas class="heat"[^>]*data-heat="([^"]*)"', sec)
    heat = json.loads(htmllib.unescape(raw))
    names = heat["names"]
    assert sorted(names) == sorted(query(many, "select system from systems where role <> "
                                     "'key'")["system"])
    diff = {(a, b): d for a, b, d in query(many, "select sys1, sys2, diff from pairs where "
                                           "view = 'las' and not punct").rows()}
    assert len(heat["d"]) == len(heat["m"]) == N * N
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert heat["d"][i * N + j] == (0 if a == b else round(10_000 * diff[(a, b)]))
    # no wall of numbers: no table with a row per pair (66), the longest is per label (60)
    sizes = [len(re.findall(r"<tr", t)) - 1 for t in re.findall(r"<table.*?</table>", sec, re.S)]
    assert max(sizes) <= 60 < N * (N - 1) // 2 and sum(sizes) < 600


@pytest.mark.parametrize("view", ["upos", "las"])
def test_per_label_summary_for_many_systems(many, page, view):
    sec = section(page, view)
    (_, inner), = tables_of(sec, "labels")
    head = re.findall(r"<th[^>]*>(.*?)</th>", inner)
    pair = re.match(r"oracle \((.*)\) %", htmllib.unescape(head[7])).group(1).split(" + ")
    w = f"corpus = 'seq' and view = '{view}' and punct = {punct_of(view)}"
    best = query(many, f"""select systems from oracles where {w} and n_systems = 2
                           order by n_correct desc, array_to_string(list_sort(systems), ' ')
                           limit 1""")["systems"][0].to_list()
    assert pair == sorted(best)
    sql = query(many, f"""
        with l as (select gold_label, system, n, accuracy from labels where {w}),
             o as (select gold_label, list_sort(systems) as s, n_correct / n as r
                   from oracle_labels where {w})
        select gold_label, max(n), max(accuracy), median(accuracy), min(accuracy),
               (select r from o where o.gold_label = l.gold_label and s = {pair}),
               (select r from o where o.gold_label = l.gold_label and len(s) = {N})
        from l group by gold_label order by max(n) desc, gold_label limit 60""")
    rows = body_rows(inner)
    assert len(rows) == sql.height > 5

    def p(x):
        return "" if x is None else f"{100 * x:.2f}"

    for r, (g, n, hi, med, lo, orc_pair, orc_all) in zip(rows, sql.rows(), strict=True):
        assert [r[0], r[1], r[2], r[4], r[5], r[7], r[8], r[9]] == [
            g, str(n), p(hi), p(med), p(lo), p(orc_pair), p(orc_all),
            p(orc_all - hi) if orc_all is not None else ""]


def test_oracle_lists_the_subsets_people_read(many, page):
    sec = section(page, "las")
    grid = sec.split("<h4>Oracle by subset</h4>", 1)[1]
    kinds = [r[0] for r in body_rows(grid.split("</table>")[0] + "</table>")]
    assert kinds == ["all"] + ["best pair"] * 5 + ["leave-one-out"] * N + ["system"] * N
    gains = body_rows(grid.split("<h4>Marginal gain of each system</h4>", 1)[1])
    assert len(gains) == N


# ----------------------------------------------------------------------------- history

def history_from(root: Path) -> pl.DataFrame:
    """A ``history`` frame for the 12 systems (NAME@pNN, versions in order): score is the
    view's accuracy, the counts and McNemar p those of the pair (previous -> version)."""
    scores = query(root, "select view, punct, system, accuracy from scores")
    pairs = query(root, "select view, punct, sys1, sys2, corrections, new_errors, "
                  "changed_errors, mcnemar_p from pairs")
    rows = []
    for (view, punct), part in scores.group_by("view", "punct"):
        acc = dict(part.select("system", "accuracy").rows())
        for name in sorted({s.split("@")[0] for s in acc}):
            versions = sorted(s for s in acc if s.startswith(name + "@"))
            best = None
            for k, system in enumerate(versions):
                prev = versions[k - 1] if k else None
                pr = pairs.filter((pl.col("view") == view) & (pl.col("punct") == punct)
                                  & (pl.col("sys1") == (prev or "")) & (pl.col("sys2") == system))
                pr = pr.row(0, named=True) if pr.height else {}
                rows.append({
                    "corpus": "seq", "task": "dep", "view": view, "punct": punct,
                    "name": name, "version": system.split("@")[1], "position": k + 1,
                    "previous": prev and prev.split("@")[1], "score": acc[system],
                    "delta": (acc[system] - acc[prev] if prev and acc[prev] is not None
                              and acc[system] is not None else None),
                    "corrections": pr.get("corrections"), "new_errors": pr.get("new_errors"),
                    "changed_errors": pr.get("changed_errors"),
                    "mcnemar_p": pr.get("mcnemar_p"),
                    "best_version": best and best.split("@")[1],
                    "best_score": acc[best] if best else None,
                    "delta_best": (acc[system] - acc[best] if best and acc[system] is not None
                                   else None),
                    "mcnemar_p_best": None})
                if acc[system] is not None and (best is None or acc[system] > acc[best]):
                    best = system  # a version without a score (NULL) is never the best
    return pl.DataFrame(rows)


def titles(fragment: str) -> list[str]:
    return [htmllib.unescape(t) for t in re.findall(r"<title>(.*?)</title>", fragment, re.S)]


def test_history_table_and_section(many, tmp_path):
    """The run's ``history`` table equals an independent reading of its scores and pairs;
    it gives the report's section and TOC entry; the chart's points and marks equal it."""
    frame = query(many, "select * from history")
    expected = history_from(many)
    cols = [c for c in expected.columns if c != "mcnemar_p_best"]
    key = ["view", "punct", "name", "position"]
    assert_frame_equal(frame.select(cols).sort(key), expected.select(cols).sort(key),
                       check_dtypes=False)
    page = build_report(many, None, tmp_path / "r.html").read_text("utf-8")
    assert 'href="#seq-history"' in page and page.count('class="view history"') == 1
    sec = page[page.index('id="seq-history"'):]
    sec = sec[:sec.index("</section>")]
    charts = [re.match(r' data-task="dep" data-view="(\w+)">(.*)', c, re.S).groups()
              for c in sec.split('<div class="hist"')[1:]]
    assert [v for v, _ in charts] == list(VIEWS)
    for view, chart in charts:
        rows = frame.filter((pl.col("view") == view) & (pl.col("punct") == punct_of(view)))
        lines = re.findall(r'<g class="line" data-name="([^"]*)">(.*?)</g>', chart, re.S)
        scored = rows.filter(pl.col("score").is_not_null())  # NULL: no point, no 0.00
        assert sorted(n for n, _ in lines) == sorted(set(scored["name"]))
        blind = rows.filter(pl.col("score").is_null())
        for name, version in blind.select("name", "version").rows():
            assert f"{name}@{version}" in chart.split('<p class="note">not evaluated')[1]
        for name, line in lines:
            mine = scored.filter(pl.col("name") == name).sort("position")
            tips = titles(line)
            assert len(tips) == mine.height == 3
            for tip, r in zip(tips, mine.iter_rows(named=True), strict=True):
                assert tip.startswith(f"{name}@{r['version']}: {score_name(view)} "
                                      f"{100 * r['score']:.2f}% [{100 * r['ci_low']:.2f}, "
                                      f"{100 * r['ci_high']:.2f}]")
                if r["previous"]:
                    assert (f"vs {r['previous']}: {100 * r['delta']:+.2f} points "
                            f"[{100 * r['delta_ci_low']:.2f}, {100 * r['delta_ci_high']:.2f}], "
                            f"McNemar p = {p_value(r['mcnemar_p'])}") in tip  # as everywhere
                    assert (f"{r['corrections']} corrections, {r['new_errors']} new errors, "
                            f"{r['changed_errors']} changed errors") in tip
            assert line.count('<path class="ci"') == mine.height  # an error bar each
            sig = mine.filter(pl.col("mcnemar_p") < 0.05)
            assert line.count('class="step up"') == sig.filter(pl.col("delta") > 0).height
            assert line.count('class="step down"') == sig.filter(pl.col("delta") < 0).height


def hand_history() -> pl.DataFrame:
    """Two histories of a token view (hand-made), one with a nasty name; another corpus."""
    rows = []
    spec = {"p<1>": [(0.80, None), (0.85, 0.001), (0.84, 0.20), (0.82, 0.01)],
            "q": [(0.70, None), (0.75, 0.04)]}
    for name, steps in spec.items():
        for k, (score, p) in enumerate(steps):
            prev = steps[k - 1][0] if k else None
            for punct in (False, True):
                rows.append({"corpus": "c", "task": "dep", "view": "las", "punct": punct,
                             "name": name, "version": f"v{k + 1}", "position": k + 1,
                             "previous": f"v{k}" if k else None,
                             "score": score + (0.01 if punct else 0.0),
                             "delta": None if prev is None else score - prev,
                             "corrections": 3 * k, "new_errors": 2 * k, "changed_errors": k,
                             "mcnemar_p": p, "best_version": None, "best_score": None,
                             "delta_best": None, "mcnemar_p_best": None})
    rows.append({**rows[0], "corpus": "other", "name": "zz"})
    return pl.DataFrame(rows)


def test_history_chart_of_hand_made_rows():
    db = memory_db({"history": hand_history()})
    got = history_html(db, "c", {"history"})
    assert got.count('<svg class="history"') == 1 and "zz" not in got
    assert "p&lt;1&gt;" in got and "<1>" not in got
    assert "LAS (no punct)" in got and "with punct" not in got
    lines = dict(re.findall(r'<g class="line" data-name="([^"]*)">(.*?)</g>', got, re.S))
    assert set(lines) == {"p&lt;1&gt;", "q"}
    p_line = lines["p&lt;1&gt;"]
    # v2: +5 points p=.001 (up), v3: -1 p=.2 (plain), v4: -2 p=.01 (down)
    assert p_line.count('class="step up"') == 1 and p_line.count('class="step down"') == 1
    assert p_line.count("<circle") == 2
    assert lines["q"].count('class="step up"') == 1
    # y grows downwards: the points follow the scores
    ys = [float(y) for y in re.findall(r'points="([^"]*)"', p_line)[0].split(" ")
          for y in [y.split(",")[1]]]
    assert ys[1] < ys[2] < ys[3] < ys[0]
    tips = titles(p_line)
    assert tips[1] == ("p<1>@v2: LAS (no punct) 85.00%\nvs v1: +5.00 points, McNemar p = "
                       "0.001\n3 corrections, 2 new errors, 1 changed errors")
    # the summary per name and the significant steps
    (_, inner), = tables_of(got, "history-sum")
    assert body_rows(inner) == [["p<1>", "4", "v4", "82.00", "v2", "85.00", "1", "1"],
                                ["q", "2", "v2", "75.00", "v2", "75.00", "1", "0"]]
    (_, inner), = tables_of(got, "history-steps")
    assert [r[:4] for r in body_rows(inner)] == [["p<1>", "v1", "v2", "+5.00"],
                                                 ["p<1>", "v3", "v4", "-2.00"],
                                                 ["q", "v1", "v2", "+5.00"]]


def test_history_section_absent_without_rows():
    db = memory_db({"history": hand_history()})
    assert history_html(db, "nope", {"history"}) == ""
    assert history_html(db, "c", set()) == ""
    empty = memory_db({"history": hand_history().clear()})
    assert history_html(empty, "c", {"history"}) == ""


def test_agreement_of_many_coref_systems_is_a_clustered_heatmap():
    """Above 10 responses the agreement table (a cell per ordered pair) becomes a heatmap
    whose cell (row, column) is the CoNLL F1 of the column system with the row one as key."""
    systems = [f"s{i}" for i in range(N)]

    def f1(a: str, b: str) -> float:  # asymmetric, two groups of similar responses
        i, j = int(a[1:]), int(b[1:])
        return 0.9 - 0.3 * ((i % 2) != (j % 2)) - 0.01 * i + 0.002 * j

    frame = pl.DataFrame([(a, b, m, f1(a, b) - (m == "muc") * 0.05) for a in systems
                          for b in systems if a != b for m in ("conll", "muc")],
                         schema=["sys1", "sys2", "metric", "f1"], orient="row")
    got = agreement_html(frame, systems)
    assert "data-sys1" not in got and got.count('<canvas class="heat"') == 1
    heat = json.loads(htmllib.unescape(re.search(r'data-heat="([^"]*)"', got).group(1)))
    names = heat["names"]
    assert sorted(names) == sorted(systems)
    assert {int(s[1:]) % 2 for s in names[:N // 2]} in ({0}, {1})  # groups side by side
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert heat["d"][i * N + j] == (0 if a == b else round(10_000 * f1(a, b)))


def test_report_of_100_systems_from_synthetic_tables(tmp_path):
    """100 systems (random aggregate tables; the compare step cannot run them yet): every
    list is bounded, the heatmap holds every pair, subsets are named compactly."""
    n = 100
    root = synthetic_warehouse(tmp_path, n)
    page = build_report(root, None, tmp_path / "r.html", examples_per_cell=0).read_text("utf-8")
    assert len(page.encode("utf-8")) < 2 * MB
    for view in ("upos", "las"):
        sec = section(page, view, "syn")
        (_, inner), = tables_of(sec, "board")
        assert len(body_rows(inner)) == n
        heat = json.loads(htmllib.unescape(re.search(r'data-heat="([^"]*)"', sec).group(1)))
        assert len(heat["names"]) == n and len(heat["d"]) == n * n
        sizes = [len(re.findall(r"<tr", t)) - 1
                 for t in re.findall(r"<table.*?</table>", sec, re.S)]
        assert max(sizes) == 1 + 5 + n + n < n * (n - 1) // 2  # the oracle subsets read
        assert f"Top {TOP_PAIRS} of {n * (n - 1) // 2} pairs by diff" in sec
        assert sec.count("all but ") == n and f"all {n} systems" in sec
        assert sec.count('<details class="pair"') == PAIR_DETAILS
        assert "+4930 more pairs as dots" in sec
