"""`sysdiff check` regression gates and `sysdiff serve` over a watched folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from tests.conftest import SEQUOIA, snapshot
from tests.test_scale import first_sentences

A, B = "fr_core_news_sm-3.8.0.conllu", "fr_core_news_md-3.8.0.conllu"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("watch")
    corpus = root / "seq"
    (corpus / "systems").mkdir(parents=True)
    first_sentences(SEQUOIA / "key.conllu", corpus / "key.conllu", 30)
    first_sentences(SEQUOIA / A, corpus / "systems" / "sm.conllu", 30)
    (corpus / "corpus.toml").write_text('task = "dep"\nar_trials = 100\n')
    return root


@pytest.fixture(scope="module")
def watched(folder, tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    wh = tmp_path_factory.mktemp("wwh") / "wh"
    code, out, err = run_cli("serve", "--watch", str(folder), "--once", "-w", str(wh))
    assert code == 0, err
    first = snapshot(wh)
    first_sentences(SEQUOIA / B, folder / "seq" / "systems" / "md@3.8.json.conllu", 30)
    shutil.move(folder / "seq" / "systems" / "md@3.8.json.conllu",
                folder / "seq" / "systems" / "md@3.8.conllu")
    code, out, err = run_cli("serve", "--watch", str(folder), "--once", "-w", str(wh))
    assert code == 0, err
    return wh, first


def test_serve_picks_up_a_new_system_file(watched):
    wh, first = watched
    systems = query(wh, "select distinct system from scores order by 1")["system"].to_list()
    assert systems == ["md@3.8", "sm"]
    manifest = json.loads((wh / "manifest.json").read_text())["tables"]
    old = "tables/scores/corpus=seq/system=sm/"
    assert manifest["scores"]["corpus=seq/system=sm"]["file"].startswith(old)
    assert any(k.startswith("tables/scores/corpus=seq/system=sm/") for k in first)
    assert manifest["scores"]["corpus=seq/system=sm"]["file"] in first  # not recomputed


def test_deployment_has_the_cron_schedule(folder, tmp_path, prefect_harness):
    from sysdiff.flows.watch import deployment

    d = deployment(folder, tmp_path / "wh", "0 2 * * *")
    assert d.name == "sysdiff-nightly"
    assert d.schedules[0].schedule.cron == "0 2 * * *"
    assert d.parameters == {"folder": str(folder), "warehouse": str(tmp_path / "wh")}
    # one run at a time (runs on one warehouse are serialised): a run triggered while another
    # is active waits for its turn instead of failing on the warehouse lock
    assert d.concurrency_limit == 1
    assert d.concurrency_options.collision_strategy == "ENQUEUE"


@pytest.mark.parametrize(("given", "expected"), [("CRITICAL", "INFO"), ("WARNING", "WARNING")])
def test_served_runs_send_their_logs_to_the_server(folder, tmp_path, monkeypatch, given,
                                                   expected):
    """The CLI's quiet default (CRITICAL) would reach the served runs' child processes through
    both the environment and the settings, and the Prefect UI would show no logs at all."""
    import prefect
    from prefect.settings import PREFECT_LOGGING_LEVEL

    from sysdiff.flows.watch import serve_folder

    seen = {}

    def fake_serve(*deployments):
        seen.update(env=os.environ["PREFECT_LOGGING_LEVEL"], setting=PREFECT_LOGGING_LEVEL.value(),
                    names=[d.name for d in deployments])

    monkeypatch.setattr(prefect, "serve", fake_serve)
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", given)
    serve_folder(folder, tmp_path / "wh", "0 2 * * *")
    assert seen == {"env": expected, "setting": expected, "names": ["sysdiff-nightly"]}


def test_serve_without_server_says_what_to_do(folder, tmp_path, cli, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    code, _, err = cli("serve", "--watch", str(folder), "-w", str(tmp_path / "wh"))
    assert code == 2 and "prefect server start" in err


def _pair(wh: Path) -> dict:
    return query(wh, "select * from pairs where view = 'las' and not punct and sys1 = 'sm' "
                     "and sys2 = 'md@3.8'").row(0, named=True)


def test_gate_on_new_errors(watched, cli):
    wh, _ = watched
    n = _pair(wh)["new_errors"]
    base = ["check", "-w", str(wh), "--baseline", "sm", "--candidate", "md@3.8"]
    assert cli(*base, "--max-new-errors", str(n))[0] == 0
    code, _, err = cli(*base, "--max-new-errors", str(n - 1))
    assert code == 1 and f"makes {n} new errors" in err and len(err.strip().splitlines()) == 1


def test_gate_on_delta_and_json(watched, cli):
    wh, _ = watched
    delta = 100 * _pair(wh)["delta_acc"]
    base = ["check", "-w", str(wh), "--baseline", "sm", "--candidate", "md@3.8", "--json"]
    code, out, _ = cli(*base, "--min-delta", f"{delta - 0.01:.4f}")
    assert code == 0 and json.loads(out)["passed"] is True
    code, out, _ = cli(*base, "--min-delta", f"{delta + 0.01:.4f}")
    doc = json.loads(out)
    assert code == 1 and doc["passed"] is False
    assert doc["gates"][0]["value"] == pytest.approx(delta)


def test_gate_on_one_label(watched, cli):
    wh, _ = watched
    acc = dict(query(wh, "select system, accuracy from labels where view = 'las' and not punct "
                         "and gold_label = 'nsubj'").rows())
    delta = 100 * (acc["md@3.8"] - acc["sm"])
    code, out, _ = cli("check", "-w", str(wh), "--baseline", "sm", "--candidate", "md@3.8",
                       "--label", "nsubj", "--min-delta", f"{delta:.6f}", "--json")
    assert json.loads(out)["gates"][0]["value"] == pytest.approx(delta)
