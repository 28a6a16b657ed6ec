"""Daily use (issue 23): one vocabulary of names in every output and option, p-values in one
format, every failed gate listed, a clean ``--help``, the run summary's hints, flow runs
named by what they evaluated, examples that mark their unit, a changed key refused in one
line. Each test reads the captured output."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sysdiff.flows.render import p_resolution, p_value
from sysdiff.schemas.vocabulary import COREF_METRICS, VIEWS, natural_key, view_named
from tests.conftest import REPO, SEQUOIA, run_cli
from tests.test_scale import first_sentences

SM, MD = "spacy_sm@3.8.0", "spacy_md@3.8.0"
OLD, NEW = "seqsm@ud2.8", "seqsm@ud2.16"


def one_line_error(code: int, err: str, *phrases: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("sysdiff: error: "), err
    for phrase in phrases:
        assert phrase in err, (phrase, err)


@pytest.fixture(scope="module")
def small(tmp_path_factory, prefect_harness) -> Path:
    """A 30-sentence Sequoia corpus with systems named A1, A2, A10, A11 (natural order)."""
    tmp = tmp_path_factory.mktemp("small")
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 30)
    files = [first_sentences(SEQUOIA / f, tmp / f, 30) for f in (
        "fr_core_news_sm-3.8.0.conllu", "fr_core_news_md-3.8.0.conllu",
        "seqsm_local-ud2.8.conllu", "seqsm_local-ud2.16.conllu")]
    root = tmp / "wh"
    systems = [a for name, f in zip(("A10", "A2", "A11", "A1"), files, strict=True)
               for a in ("--system", f"{name}={f}")]
    code, out, err = run_cli("run", "--key", str(key), "--corpus", "small", "--task", "dep",
                             *systems, "-w", str(root), "--ar-trials", "200",
                             "--bootstrap", "250")
    assert code == 0, err
    return root


# ------------------------------------------------------------------------- --help


def all_commands() -> list[list[str]]:
    from sysdiff.flows.cli import COMMANDS

    return [[c] for c in COMMANDS] + [["server", c] for c in ("start", "stop", "status")]


def click_command(argv: list[str]):  # noqa: ANN201 (a click command)
    """The click command that ``sysdiff ARGV --help`` describes."""
    import typer.main

    from sysdiff.flows.cli import build_app

    command = typer.main.get_command(build_app())
    for name in argv:
        command = command.commands[name]
    return command


@pytest.mark.parametrize("argv", [[], *all_commands()], ids=lambda a: " ".join(a) or "top")
def test_help_has_no_type_tags_and_describes_every_option(argv):
    import click

    code, out, err = run_cli(*argv, "--help")
    assert code == 0, err
    for tag in ("<str>", "<bool>", "<int", "<float", "<list", "<path"):
        assert tag not in out, (tag, out)
    assert "(dep); (token corpora)" not in out
    code_h, out_h, _ = run_cli(*argv, "-h")
    assert code_h == 0 and out_h == out
    command = click_command(argv)
    summary = (command.help or "").strip().split("\n\n")[0]
    assert "\n" not in summary, summary  # a command's summary: one line in its group's list
    ctx = click.Context(command)
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            assert (param.help or "").strip(), (argv, param.name)


@pytest.mark.parametrize("argv", [[], *all_commands()], ids=lambda a: " ".join(a) or "top")
def test_help_reflows_every_paragraph(argv, monkeypatch):
    """A docstring's later paragraphs are reflowed like its first: on a wide terminal each
    is one line of the help, not broken where the source broke it."""
    monkeypatch.setenv("COLUMNS", "500")
    code, out, err = run_cli(*argv, "--help")
    assert code == 0, err
    lines = {" ".join(line.split()) for line in out.splitlines()}
    later = [p for p in (click_command(argv).help or "").strip().split("\n\n")[1:]
             if not p.startswith("\b")]
    for paragraph in later:  # (rich shows an escaped "\\[" as "[")
        assert " ".join(paragraph.replace("\\[", "[").split()) in lines, (argv, paragraph)


def test_the_command_line_loads_the_help_s_modules_only_for_a_help():
    """Typer's help module (rich's Markdown, Pygments: about 50 ms) is imported when a help
    is shown, not by every command."""
    probe = ("import sys; import sysdiff.flows.cli; "
             "print('typer.rich_utils' in sys.modules, 'rich.markdown' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert done.stdout.split() == ["False", "False"], done.stdout + done.stderr


def test_version():
    code, out, err = run_cli("--version")
    assert code == 0 and re.fullmatch(r"sysdiff \d+\.\d+\.\d+\n", out), (out, err)


def test_readme_command_table_lists_every_command_and_task():
    from sysdiff.flows.cli import COMMANDS
    from sysdiff.flows.spec import TASKS

    text = (REPO / "README.md").read_text()
    table = text[text.index("## Commands"):text.index("Every command has `--help`")]
    for command in COMMANDS:
        assert f"`sysdiff {command}" in table, command
    assert "`sysdiff server start\\|stop\\|status`" in table
    for task in TASKS:
        assert re.search(rf"--task [^`]*\b{task}\b", table), task


# ------------------------------------------------------------------------- names


def test_views_by_the_names_the_tables_print(bundled):
    assert view_named("UAS") == "head" and view_named("ls") == "deprel"
    assert view_named("LAS (no punct)") == "las" and view_named("Upos") == "upos"
    assert view_named("nope") is None
    w = ["-w", str(bundled("sequoia"))]
    _, by_name, _ = run_cli("show", "scores", "--view", "head", *w)
    for alias in ("UAS", "uas", "UAS (no punct)"):
        code, out, err = run_cli("show", "scores", "--view", alias, *w)
        assert code == 0 and out == by_name, (alias, err)
    code, ls, err = run_cli("show", "pairs", "--view", "LS", *w)
    assert code == 0 and "LS (no punct)" in ls, err
    code, out, err = run_cli("examples", "--sys1", OLD, "--sys2", NEW, "--class", "new_error",
                             "--view", "Las", "--limit", "1", *w)
    assert code == 0 and "[" in out, err
    code, out, err = run_cli("show", "scores", "--view", "UFEATS", *w)
    one_line_error(code, err, "unknown view 'UFEATS'", "head (UAS), deprel (LS), las")


def test_coreference_metrics_have_one_spelling(bundled):
    root = bundled("litbank")
    code, summary, err = run_cli("show", "coref", "-w", str(root))
    assert code == 0, err
    for code_name in ("bcub", "ceafe", "ceafm", "muc", "conll"):
        assert f" {code_name} " not in summary
    for name in ("B3", "CEAF-e", "CEAF-m", "MUC", "CoNLL", "BLANC", "LEA"):
        assert f" {name} " in summary, name
    rows = [line.split("│")[2].strip() for line in summary.splitlines()
            if line.startswith("│ sys1 ")]
    assert rows == ["MUC", "B3", "CEAF-m", "CEAF-e", "BLANC", "LEA", "CoNLL"]
    assert set(COREF_METRICS.values()) >= set(rows)


def test_duckdb_suggestions_are_kept(bundled):
    w = ["-w", str(bundled("sequoia"))]
    code, out, err = run_cli("sql", "select * from scorez", *w)
    one_line_error(code, err, "scorez does not exist", 'Did you mean "scores"')
    code, out, err = run_cli("sql", "select nosuch from scores", *w)
    one_line_error(code, err, "nosuch", "Candidate bindings")


@pytest.mark.parametrize("argv, phrases", [
    (["show", "changes"], ["show changes needs --sys1 and --sys2", f"{OLD}, {NEW}, {MD}, {SM}"]),
    (["show", "labeldiff", "--sys1", OLD], ["needs --sys1 and --sys2", f"{OLD}, {NEW}"]),
    (["show"], ["give the table to show: one of scores, pairs, changes"]),
    (["examples", "--class", "new_error"], ["examples needs --sys1 and --sys2", f"{OLD}, {NEW}"]),
    (["examples", "--sys1", OLD, "--sys2", NEW], ["needs --class", "correction, new_error"]),
    (["check", "--max-new-errors", "1"], ["check needs --candidate", f"sequoia: {OLD}, {NEW}"]),
    (["rm"], ["rm needs --corpus: one of sequoia"]),
    (["rm", "--corpus", "sequoia", "--system", "nope"],
     ["no system 'nope' in corpus 'sequoia'", f"{OLD}, {NEW}, {MD}, {SM}"]),
])
def test_a_missing_option_names_its_choices(argv, phrases, bundled):
    code, out, err = run_cli(*argv, "-w", str(bundled("sequoia")))
    one_line_error(code, err, *phrases)


def test_names_sort_naturally(small):
    assert sorted(["A10", "A2", "A1", "A11"], key=natural_key) == ["A1", "A2", "A10", "A11"]
    assert sorted(["ud2.16", "ud2.8"], key=natural_key) == ["ud2.8", "ud2.16"]
    w = ["-w", str(small)]
    code, out, err = run_cli("show", "scores", "--view", "upos", "-f", "csv", *w)
    assert code == 0, err
    code, out, err = run_cli("show", "labels", "--view", "upos", *w)
    header = next(line for line in out.splitlines() if "gold_label" in line)
    assert [c.strip() for c in header.split("┃")[3:-1]] == ["A1 %", "A2 %", "A10 %", "A11 %"]
    code, out, err = run_cli("show", "pairs", "--view", "upos", "-f", "csv", *w)
    pairs = [tuple(line.split(",")[:2]) for line in out.splitlines()[1:]]
    assert all(natural_key(a) < natural_key(b) for a, b in pairs) and len(pairs) == 6
    code, out, err = run_cli("show", "changes", *w)
    one_line_error(code, err, "A1, A2, A10, A11")
    from sysdiff.flows.show import headline

    assert headline(small, "small")["system"].to_list() == ["A1", "A2", "A10", "A11"]


# ------------------------------------------------------------------------- p-values


def test_p_values_have_one_format():
    assert [p_value(v) for v in (0.866, 0.0123, 0.001, 1.4035e-13, 1.53e-9, None)] == [
        "0.866", "0.0123", "0.001", "1.4e-13", "1.53e-9", "—"]
    assert p_value(1 / 10_001, randomization=True) == "< 1e-4 (10,000 trials)"
    assert p_value(2 / 10_001, randomization=True) == "2e-4"
    with p_resolution(200):
        assert p_value(1 / 201, randomization=True) == "< 0.005 (200 trials)"
        assert p_value(1 / 201) == "0.00498"  # McNemar's p: no floor


def test_a_bootstrap_p_of_0_is_a_bound_of_its_samples():
    """No sample crossed: p < 2 / B (its next value up), not a p-value of 0."""
    assert p_value(0.0, bootstrap=True) == "< 0.002 (1,000 samples)"
    assert p_value(0.002, bootstrap=True) == "0.002"
    assert p_value(None, bootstrap=True) == "—"
    with p_resolution(200, 250):
        assert p_value(0.0, bootstrap=True) == "< 0.008 (250 samples)"
        assert p_value(0.0, randomization=True) == "0"  # not a randomization floor


def test_p_values_print_the_same_everywhere(bundled, tmp_path):
    w = ["-w", str(bundled("sequoia"))]
    code, pairs, err = run_cli("show", "pairs", *w)
    assert code == 0, err
    assert "0.0000" not in pairs and "0.0001" not in pairs
    assert "1.4e-13" in pairs and "< 1e-4 (10,000 trials)" in pairs
    code, changes, err = run_cli("show", "changes", "--view", "las", "--sys1", OLD,
                                 "--sys2", NEW, *w)
    assert "McNemar p = 1.4e-13  AR p < 1e-4 (10,000 trials)" in changes
    report = tmp_path / "r.html"
    code, _, err = run_cli("report", "-o", str(report), *w)
    page = report.read_text(encoding="utf-8")
    assert "1.4e-13<span" in page and "&lt; 1e-4 (10,000 trials)<span" in page
    assert not re.search(r"\d\.\d+e-0\d", page)  # no padded exponent (1.53e-09)


def test_a_randomization_p_at_its_floor_names_the_run_s_trials(small):
    from sysdiff.flows.queries import query

    floor = query(small, "select view, punct, sys1, sys2 from pairs where abs(ar_p * 201 - 1) "
                         "< 1e-9 order by all")
    assert floor.height >= 1
    view, punct, sys1, sys2 = floor.row(0)
    punct_flag = ["--punct"] if punct else ["--no-punct"]
    code, out, err = run_cli("show", "changes", "--view", view, *punct_flag, "--sys1", sys1,
                             "--sys2", sys2, "-w", str(small))
    assert code == 0, err
    assert "AR p < 0.005 (200 trials)" in out and "10,000" not in out
    code, out, err = run_cli("show", "pairs", "--view", view, *punct_flag, "-w", str(small))
    shown = {frozenset(r[2:]) for r in floor.rows() if r[:2] == (view, punct)}
    assert out.count("< 0.005 (200 trials)") == len(shown)  # each pair once


def test_the_floors_assumed_without_a_record_are_the_run_defaults():
    """A corpus without a recorded run is shown with RunSpec's defaults (kept twice)."""
    import dataclasses

    from sysdiff.flows import render
    from sysdiff.flows.spec import RunSpec

    defaults = {f.name: f.default for f in dataclasses.fields(RunSpec)}
    assumed = (render.DEFAULT_TRIALS, render.DEFAULT_SAMPLES)
    assert assumed == (defaults["ar_trials"], defaults["bootstrap"])


def test_a_bootstrap_p_of_0_names_the_run_s_samples(small):
    """Where no bootstrap sample crossed 0 (p stored as 0, METRICS 1.6b), ``show`` and the
    gate say ``< 0.008 (250 samples)`` (the run's B), never a p of 0."""
    from sysdiff.flows.queries import query

    zero = query(small, "select view, punct, sys1, sys2 from pairs where bootstrap_p = 0 "
                        "and sys1 < sys2 order by all")
    assert zero.height >= 1
    view, punct, sys1, sys2 = zero.row(0)
    flags = ["--view", view, "--punct" if punct else "--no-punct", "-w", str(small)]
    code, out, err = run_cli("show", "changes", "--sys1", sys1, "--sys2", sys2, *flags)
    assert code == 0, err
    assert "bootstrap p < 0.008 (250 samples)" in out
    code, out, err = run_cli("show", "pairs", *flags)
    shown = {frozenset(r[2:]) for r in zero.rows() if r[:2] == (view, punct)}
    assert out.count("< 0.008 (250 samples)") == len(shown)
    code, out, err = run_cli("check", "--baseline", sys1, "--candidate", sys2,
                             "--require-significant", *flags)
    assert "bootstrap p < 0.008 (250 samples)" in out + err


def test_history_p_values(bundled):
    code, out, err = run_cli("show", "history", "--name", "parser", "-w",
                             str(bundled("history")))
    assert code == 0, err
    assert "0.0000" not in out and re.search(r"\d\.?\d*e-\d+ ", out), out


# ------------------------------------------------------------------------- check


def test_check_lists_every_failed_gate(bundled):
    w = ["-w", str(bundled("sequoia"))]
    argv = ["check", "--baseline", NEW, "--candidate", OLD, "--max-new-errors", "10",
            "--min-delta", "5", *w]
    code, out, err = run_cli(*argv)
    assert code == 1
    failed = [line for line in err.splitlines() if line.startswith("sysdiff check: FAILED: ")]
    assert len(failed) == 2, err
    assert "new errors" in failed[0] and "points; at least +5.00 required" in failed[1]
    code, out, _ = run_cli(*argv, "--json")
    assert [g["passed"] for g in json.loads(out)["gates"]] == [False, False]
    code, out, err = run_cli("check", "--baseline", NEW, "--candidate", OLD,
                             "--max-new-errors", "100000", "--min-delta", "5", *w)
    assert code == 1 and err.count("FAILED") == 1 and "sysdiff check: passed: " in err


# ------------------------------------------------------------------------- run summary


def test_the_summary_hint_has_the_warehouse_and_names_earlier_systems(tmp_path, cli):
    key = first_sentences(SEQUOIA / "key.conllu", tmp_path / "key.conllu", 20)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp_path / "a.conllu", 20)
    b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp_path / "b.conllu", 20)
    root = tmp_path / "my warehouse"
    base = ["run", "--key", str(key), "--corpus", "c", "--task", "dep", "-w", str(root)]
    code, out, err = cli(*base, "--system", f"a={a}", "--system", f"old={b}")
    assert code == 0, err
    assert "from earlier runs" not in out
    hint = re.search(r"\(list the tables: (.*)\)", out).group(1)
    assert shlex.split(hint)[:3] == ["sysdiff", "sql", "-w"]
    code, tables, err = run_cli(*shlex.split(hint)[1:])
    assert code == 0 and "scores" in tables, err
    code, out, err = cli(*base, "--system", f"a={a}")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("from earlier runs"))
    assert "from earlier runs: old (also in corpus 'c'" in line
    rm = shlex.split(line.split("remove one with: ")[1].rstrip(")"))
    assert rm[:4] == ["sysdiff", "rm", "-w", str(root)]
    assert "-w" not in run_cli_hint_default(tmp_path, cli, key, a)


def run_cli_hint_default(tmp: Path, cli, key: Path, a: Path) -> str:
    """The hint of a run into the default warehouse (./data/warehouse of the folder)."""
    import os

    here = os.getcwd()
    os.chdir(tmp)
    try:
        code, out, err = cli("run", "--key", str(key), "--corpus", "c", "--task", "dep",
                             "--system", f"a={a}")
    finally:
        os.chdir(here)
    assert code == 0, err
    return re.search(r"\(list the tables: (.*)\)", out).group(1)


def test_a_changed_key_is_one_line_naming_both(tmp_path, cli):
    key = first_sentences(SEQUOIA / "key.conllu", tmp_path / "key.conllu", 20)
    other = first_sentences(SEQUOIA / "key.conllu", tmp_path / "other.conllu", 25)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp_path / "a.conllu", 20)
    b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp_path / "b.conllu", 25)
    root = tmp_path / "wh"
    code, _, err = cli("run", "--key", str(key), "--corpus", "c", "--task", "dep",
                       "--system", f"a={a}", "-w", str(root))
    assert code == 0, err
    from tests.conftest import snapshot

    before = snapshot(root)
    argv = ["run", "--key", str(other), "--corpus", "c", "--task", "dep", "--system",
            f"b={b}", "-w", str(root)]
    code, out, err = cli(*argv)
    one_line_error(code, err, f"{other}: corpus 'c' was evaluated against another key: "
                   f"{key}", "1 system(s): a", "--replace-key", "new corpus name")
    assert snapshot(root) == before
    key.touch()  # the same content, another time stamp: the same key
    code, _, err = cli("run", "--key", str(key), "--corpus", "c", "--task", "dep",
                       "--system", f"a={a}", "-w", str(root))
    assert code == 0, err
    code, out, err = cli(*argv, "--replace-key")
    assert code == 0, err
    from sysdiff.flows.queries import query

    rows = query(root, "select system, path from systems where corpus = 'c' order by 1")
    assert rows.rows() == [("__key__", str(other)), ("b", str(b))]
    assert "from earlier runs" not in out


# ------------------------------------------------------------------------- flow names


def test_flow_runs_are_named_by_corpus_task_and_systems(tmp_path, prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    from sysdiff.flows.run import run_name
    from sysdiff.flows.spec import load_config

    spec = load_config(SEQUOIA / "sequoia.toml")
    assert run_name(spec) == "sequoia · dep · 4 systems"
    key = first_sentences(SEQUOIA / "key.conllu", tmp_path / "key.conllu", 5)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp_path / "a.conllu", 5)
    b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp_path / "b.conllu", 5)
    w = ["-w", str(tmp_path / "wh")]
    run = ["run", "--key", str(key), "--corpus", "named-run", "--task", "pos", *w]
    for argv in ([*run, "--system", f"tagger@2={a}"], [*run, "--system", f"tagger@3={b}"],
                 ["rm", "--corpus", "named-run", "--system", "tagger@2", "--yes", *w]):
        code, _, err = run_cli(*argv)
        assert code == 0, err
    wanted = ["named-run · pos · tagger@2", "named-run · pos · tagger@3",
              "named-run · rm · tagger@2"]
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            name=FlowRunFilterName(any_=wanted)))
    assert sorted(r.name for r in runs) == wanted


# ------------------------------------------------------------------------- examples


def test_examples_mark_the_unit_in_its_sentence(bundled):
    w = ["-w", str(bundled("sequoia"))]
    code, out, err = run_cli("examples", "--sys1", OLD, "--sys2", NEW, "--class", "new_error",
                             "--l1", "nmod", "--limit", "3", "-f", "json", *w)
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 3
    for r in rows:
        assert f"[{r['form']}]" in r["sentence"] and r["sentence"].count("[") == 1
        assert "form1" not in r and "form2" not in r and "text" not in r  # no repeats
        assert {"gold_head", "head1", "head2"} <= set(r)  # a view that compares heads
    code, out, err = run_cli("examples", "--sys1", OLD, "--sys2", NEW, "--class", "new_error",
                             "--view", "upos", "--limit", "2", "-f", "json", *w)
    rows = json.loads(out)
    assert rows and all("head1" not in r and f"[{r['form']}]" in r["sentence"] for r in rows)
    code, out, _ = run_cli("examples", "--help")
    assert "1-based" in out and "0-based" in out


def test_views_are_all_named():
    assert {v.score for v in VIEWS.values()} == {"UPOS", "XPOS", "FEATS", "LEMMA", "UAS",
                                                  "LS", "LAS"}
