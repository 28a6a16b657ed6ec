"""The Python API: ``sysdiff.evaluate`` runs the flow (quietly, as fast as the command line,
reporting to the background server under a readable name) and returns the warehouse,
``sysdiff.open`` reads through the ``sysdiff sql`` sandbox."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys

import polars as pl
import pytest

import sysdiff
from sysdiff.flows.queries import query
from tests.conftest import REPO, SEQUOIA, snapshot
from tests.test_scale import first_sentences
from tests.test_server import cli, flow_runs, state  # noqa: F401 (state: a fixture)


@pytest.fixture(scope="module")
def api_warehouse(tmp_path_factory, prefect_harness):
    tmp = tmp_path_factory.mktemp("api")
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 20)
    md = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp / "md.conllu", 20)
    sm = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "sm.conllu", 20)
    wh = sysdiff.evaluate(key=key, systems={"spacy@md": md, "spacy@sm": sm}, task="dep",
                            corpus="api", warehouse=tmp / "wh", versions={"spacy": ["sm",
                                                                                   "md"]})
    return wh


def test_evaluate_returns_the_warehouse_with_its_scores(api_warehouse):
    wh = api_warehouse
    assert isinstance(wh, sysdiff.Warehouse) and wh.corpus == "api"
    assert os.fspath(wh) == str(wh.root) and repr(wh).endswith("corpus 'api'>")
    assert isinstance(wh.scores, pl.DataFrame)
    assert wh.scores["system"].to_list() == ["spacy@md", "spacy@sm"]
    las = query(wh, "select system, 100.0 * n_correct / n_units as las from scores "
                    "where view = 'las' and not punct order by system")
    assert [round(x, 2) for x in las["las"]] == wh.scores["LAS (no punct) %"].to_list()
    assert wh.notes == ["sysdiff: note: xpos: the key has no XPOS column (all '_'); "
                        "not evaluated"]


def test_evaluate_writes_what_the_cli_would(api_warehouse):
    scores = query(api_warehouse, "select system, view, punct, n_correct from scores")
    assert set(scores["system"]) == {"spacy@md", "spacy@sm"}
    hist = query(api_warehouse, "select version, previous from history where view = 'las' "
                                "and not punct order by position")
    assert hist.rows() == [("sm", None), ("md", "sm")]  # the explicit order, not natural


def test_open_reads_every_table_through_the_sandbox(api_warehouse):
    before = snapshot(api_warehouse.root)
    with sysdiff.open(api_warehouse) as wh:
        assert {"scores", "pairs", "changes", "history"} <= set(wh.tables)
        assert wh["scores"].sort(wh["scores"].columns).equals(
            query(api_warehouse, "select * from scores").sort(wh["scores"].columns))
        rel = wh.relation("select sys1, sys2, n_diff from pairs where view = 'upos'")
        assert rel.pl().height == 2
        with pytest.raises(sysdiff.InputError, match="read-only"):
            wh.sql("create table x as select 1")
        with pytest.raises(sysdiff.InputError, match="refused"):
            wh.sql("select * from read_text('/etc/passwd')")
        with pytest.raises(sysdiff.InputError, match="no table 'nope'"):
            wh["nope"]
    assert snapshot(api_warehouse.root) == before


#: A training script's use of the API, run in a fresh interpreter: evaluate three
#: checkpoints, then a bad input; prints the scores' systems, the notes and the error as JSON.
SCRIPT = """
import json, sys
import sysdiff
key, md, sm, root = sys.argv[1:5]
wh = None
for i in range(3):
    wh = sysdiff.evaluate(key=key, systems={"md": md, "sm": sm}, corpus=f"api{i}", task="dep",
                          warehouse=root)
try:
    sysdiff.evaluate(key=key + ".missing", systems={"md": md}, corpus="bad", warehouse=root)
    error = None
except sysdiff.InputError as e:
    error = str(e)
print(json.dumps({"systems": wh.scores["system"].to_list(),
                  "notes": wh.notes, "error": error}))
"""


@pytest.mark.usefixtures("state")
def test_the_api_reports_to_the_background_server_quietly(tmp_path):
    """With the background server running, ``sysdiff.evaluate`` reports to it (no temporary
    server), under a readable name, and writes nothing on stderr (also for bad input). What
    its calls cost against the command line's is measured in ``benchmarks/startup.py``."""
    from sysdiff.flows import runner, server

    key, md, sm = (SEQUOIA / f for f in ("key.conllu", "fr_core_news_md-3.8.0.conllu",
                                         "fr_core_news_sm-3.8.0.conllu"))
    root = tmp_path / "wh"
    run = ["run", "--key", str(key), "--system", f"md={md}", "--system", f"sm={sm}",
           "--task", "dep", "-w", str(root)]
    status, _, err, _ = cli(*run, "--corpus", "start")  # starts the server and the runner
    assert status == 0, err
    api = server.live_server().api_url
    assert isinstance(runner.wait_ready(api), dict)

    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(key), str(md), str(sm),
                           str(root)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    got = json.loads(proc.stdout)
    assert got["error"] == f"{key}.missing: no such file"
    assert got["systems"] == ["md", "sm"]
    assert got["notes"] == ["sysdiff: note: xpos: the key has no XPOS column (all '_'); "
                            "not evaluated"]
    names = [r["name"] for r in flow_runs(api)]
    assert {f"api{i} · dep · 2 systems" for i in range(3)} <= set(names), names


class Terminal(io.StringIO):
    """A stderr that a person watches."""

    def isatty(self) -> bool:
        return True


def test_progress_and_verbose_are_the_only_output(tmp_path, prefect_harness):
    """Nothing on stdout or stderr by default (also on a terminal with ``progress=False``);
    ``progress=True`` draws bars on stderr (``None``: when stderr is a terminal);
    ``verbose=True`` writes the notes and step times there."""
    key = first_sentences(SEQUOIA / "key.conllu", tmp_path / "key.conllu", 10)
    sm = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp_path / "sm.conllu", 10)

    def call(stderr: io.StringIO, corpus: str, **kw) -> tuple[str, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(stderr):
            sysdiff.evaluate(key=key, systems={"sm": sm}, corpus=corpus, task="dep",
                             warehouse=tmp_path / "wh", **kw)
        return out.getvalue(), stderr.getvalue()

    assert call(io.StringIO(), "quiet") == ("", "")
    assert call(Terminal(), "off", progress=False) == ("", "")
    for corpus, kw in (("bars", {"progress": True}), ("auto", {})):
        out, err = call(Terminal(), corpus, **kw)
        assert out == "" and "ingest" in err and "compare" in err and "━" in err, err
    out, err = call(io.StringIO(), "loud", verbose=True)
    assert out == "" and "sysdiff: note: xpos: the key has no XPOS column" in err
    assert re.search(r"^sysdiff: compare: 1 steps in [\d.]+ s$", err, re.M), err
