"""The HTML report and the drill-down examples, checked against the warehouse tables via SQL."""

from __future__ import annotations

import base64
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
import pytest

from flows.examples import examples
from flows.queries import query
from flows.render import to_text
from flows.report import (
    build_report,
    cluster_order,
    esc,
    frame_html,
    label_html,
    label_table,
    load_corpus,
    marginal_gains,
    optional_html,
    oriented_pairs,
    reader,
    scores_table,
    stars,
    table_html,
    td,
    ticks,
)
from schemas.errors import InputError
from tests.conftest import SEQUOIA, run_cli

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


def test_optional_sections_absent_without_rows(warehouse):
    read, close = reader(warehouse)
    try:
        assert optional_html(read, "coref_scores", "coref", CORPUS) == ""
        assert optional_html(read, "unl_scores", "unl", CORPUS) == ""
        assert optional_html(read, "no_such_table", "x", CORPUS) == ""
    finally:
        close()


def test_optional_section_renders_rows_of_its_corpus_escaped():
    con = duckdb.connect()
    con.sql("create table coref_scores (corpus varchar, system varchar, metric varchar, "
            "f1 double)")
    con.sql("insert into coref_scores values ('c', 'r<1>', 'muc', 0.5), ('d', 'x', 'muc', 1)")

    def read(sql: str) -> pl.DataFrame:
        return pl.from_arrow(con.sql(sql).to_arrow_table())

    got = optional_html(read, "coref_scores", "c: coreference & more", "c")
    assert "r&lt;1&gt;" in got and "0.5000" in got and "coreference &amp; more" in got
    assert "<td>x</td>" not in got and "r<1>" not in got
    assert optional_html(read, "coref_scores", "none", "e") == ""


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
    profile = tmp_path / "profile"
    profile.mkdir()
    proc, url = start_chromium(profile)
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
        shot = cdp.send("Page.captureScreenshot", {"format": "png"}, session=session)
        png = tmp_path / "report.png"
        png.write_bytes(base64.b64decode(shot["data"]))
        state = json.loads(cdp.send("Runtime.evaluate", {"expression": CHECK_JS,
                                                         "returnByValue": True},
                                    session=session)["result"]["value"])
        cdp.send("Runtime.evaluate", {"expression": "1"}, session=session)  # flush events
        cdp.send("Browser.close")
        cdp.close()
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    events = cdp.events
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
    for section in SECTIONS:
        assert section in state["text"], section
    for name in SYSTEMS:
        assert name in state["text"]
    assert state["svgs"] >= 4 * len(VIEWS) and state["rects"] > 100 and state["tables"] > 50
    assert state["drill"][0] is False and state["drill"][1] is True and state["drill"][2] > 0
    assert png.stat().st_size > 50_000
    if os.environ.get("SYSDIFF_REPORT_SCREENSHOT"):
        shutil.copy(png, os.environ["SYSDIFF_REPORT_SCREENSHOT"])
