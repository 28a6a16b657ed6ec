"""Command-line conventions (issue 12): usage errors are click's usage message and exit 2;
every wrong value is one line naming the valid choices and exit 2, never an empty table;
output is escaped; --help lists every choice; percent with '%' headers and named scores;
read-only commands and early failures never start Prefect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sysdiff.flows.names import FORMATS, SHOWABLE
from sysdiff.flows.queries import query
from sysdiff.schemas.vocabulary import natural_key
from tests.conftest import REPO, SEQUOIA, run_cli, snapshot

SM, MD = "spacy_sm@3.8.0", "spacy_md@3.8.0"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, prefect_harness) -> Path:
    """One warehouse with the three bundled samples: a dep, a coref and a UNL corpus."""
    root = tmp_path_factory.mktemp("mixed") / "wh"
    for toml in (SEQUOIA / "sequoia.toml", REPO / "data/litbank/litbank.toml",
                 REPO / "data/unl/unl.toml"):
        code, _, err = run_cli("run", str(toml), "-w", str(root), "--ar-trials", "200")
        assert code == 0, err
    return root


def one_line_error(code: int, err: str, *phrases: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("sysdiff: error: "), err
    for phrase in phrases:
        assert phrase in err, (phrase, err)


# ------------------------------------------------------------------------- usage errors

@pytest.mark.parametrize("argv, phrase", [
    (["run", "--sytem", "x"], "No such option: --sytem"),
    (["shwo"], "No such command 'shwo'"),
    (["sql"], "Missing argument"),
    (["run", "--ar-trials", "x", "--key", "k"], "Invalid value for '--ar-trials'"),
    (["examples", "--sys3", "a"], "No such option: --sys3"),
])
def test_usage_errors_print_the_usage_and_exit_2(argv, phrase):
    code, out, err = run_cli(*argv)
    assert code == 2, err
    assert err.startswith("Usage: sysdiff"), err
    assert phrase in err and "internal error" not in err and "Traceback" not in err


# ------------------------------------------------------------------------- wrong values

@pytest.mark.parametrize("argv, phrases", [
    (["show", "scores", "--view", "XPOS"],
     ["unknown view 'XPOS' for corpus 'sequoia'",  # the key has no XPOS
      "upos, feats, lemma, head (UAS), deprel (LS), las"]),
    (["show", "coref", "--corpus", "sequoia"],
     ["corpus 'sequoia' is a dep corpus; show coref needs a coref corpus (litbank)"]),
    (["show", "scores", "--corpus", "nope"], ["no corpus 'nope'", "litbank, sequoia, unl-cases"]),
    (["show", "pairs", "--sys1", "spacy"], ["no system 'spacy' in corpus 'sequoia'", SM]),
    (["show", "scorez"], ["unknown table 'scorez'", ", ".join(SHOWABLE)]),
    (["show", "coref_pairs", "--view", "las"], ["unknown view 'las' for coreference", "any, nom"]),
    (["show", "unl", "--view", "upos"], ["has no views"]),
    (["show", "scores", "-f", "xml"], ["unknown output format 'xml'", ", ".join(FORMATS)]),
    (["examples", "--sys1", "seqsm@ud2.8", "--sys2", "seqsm@ud2.16", "--class", "new_error",
      "--l1", "NMOD"], ["no label 'NMOD' for --l1", "nmod"]),
    (["examples", "--sys1", "seqsm@ud2.8", "--sys2", "seqsm@ud2.16", "--class", "new_error",
      "--gold", "NMOD"], ["no label 'NMOD' for --gold"]),
    (["examples", "--sys1", "seqsm@ud2.8", "--sys2", "seqsm@ud2.16", "--class", "wrong"],
     ["unknown change class 'wrong'", "correction, new_error, changed_error"]),
    (["examples", "--sys1", "x", "--sys2", "seqsm@ud2.16", "--class", "new_error"],
     ["no system 'x' in corpus 'sequoia'"]),
    (["check", "--baseline", SM, "--candidate", MD, "--label", "NSUBJ", "--min-delta", "0"],
     ["no gold label 'NSUBJ'", "nsubj"]),
    (["check", "--baseline", SM, "--candidate", MD, "--view", "UFEATS", "--max-new-errors",
      "1"], ["unknown view 'UFEATS'"]),
    (["check", "--baseline", "sys1", "--candidate", "sys2", "--label", "x", "--min-delta",
      "0"], ["--label applies to token corpora"]),
    (["check", "--baseline", SM, "--candidate", "sys2", "--max-new-errors", "0"],
     ["no corpus holds both"]),
])
def test_a_wrong_value_is_one_line_naming_the_choices(argv, phrases, mixed):
    before = snapshot(mixed)
    code, out, err = run_cli(*argv, "-w", str(mixed))
    one_line_error(code, err, *phrases)
    assert out == ""
    assert snapshot(mixed) == before


RUN_FILES = {
    "corpus_not_a_string": ('corpus = 5\ntask = "dep"\nkey = "k.conllu"\n[systems]\n'
                            'a = "a.conllu"\n', "'corpus' must be a string, not the integer 5",
                            1),
    "ar_trials_not_an_integer": ('corpus = "c"\ntask = "dep"\nkey = "k.conllu"\n'
                                 'ar_trials = "x"\n[systems]\na = "a.conllu"\n',
                                 "'ar_trials' must be a positive integer, not the string 'x'",
                                 4),
    "unknown_key": ('corpus = "c"\ntask = "dep"\nkey = "k.conllu"\nar_trial = 5\n'
                    '[systems]\na = "a.conllu"\n', "unknown key 'ar_trial'; expected one of "
                    "corpus, task, key, systems, format, ar_trials, seed, bootstrap, "
                    "confidence, shard_sents, mappings, unl", 4),
    "unknown_task": ('corpus = "c"\ntask = "parse"\nkey = "k.conllu"\n[systems]\n'
                     'a = "a.conllu"\n', "unknown task 'parse'; expected one of pos, dep, "
                     "coref, unl, nl", None),
    "format_of_another_task": ('corpus = "c"\ntask = "dep"\nkey = "k.conllu"\n'
                               'format = "jsonlines"\n[systems]\na = "a.conllu"\n',
                               "unknown input format 'jsonlines' for task dep; expected one "
                               "of conllu, conllx, tsv", None),
    "unl_option": ('corpus = "c"\ntask = "unl"\nkey = "k.unl"\n[systems]\na = "a.unl"\n'
                   '[unl]\nmultiset = "yes"\n', "'multiset' must be a boolean", 7),
    "system_not_a_file": ('corpus = "c"\ntask = "dep"\nkey = "k.conllu"\n[systems]\n'
                          'a = 3\n', "system 'a' must be a file name", 5),
    "not_toml": ('corpus = \n', "not valid TOML", 1),
}


@pytest.mark.parametrize("case", sorted(RUN_FILES))
def test_a_bad_run_file_value_is_one_line(case, tmp_path):
    text, phrase, line = RUN_FILES[case]
    toml = tmp_path / "run.toml"
    toml.write_text(text)
    code, _, err = run_cli("run", str(toml), "-w", str(tmp_path / "wh"))
    one_line_error(code, err, phrase)
    if line is not None:
        assert f"{toml}:{line}: " in err
    assert not (tmp_path / "wh").exists()


def test_run_file_and_options_together_are_refused(tmp_path):
    code, _, err = run_cli("run", str(SEQUOIA / "sequoia.toml"), "--key", "k.conllu",
                           "-w", str(tmp_path / "wh"))
    one_line_error(code, err, "--key: the run file", "give either a run file or options")


# ------------------------------------------------------------------------- output

def test_text_in_brackets_is_printed(mixed):
    for fmt in ("table", "markdown"):
        code, out, err = run_cli("sql", "-w", str(mixed), "-f", fmt, "select 'natural-"
                                 "language word in graph: [slept]' as \"[b]reason[/b]\"")
        assert code == 0, err
        assert "natural-language word in graph: [slept]" in out
        assert "[b]reason[/b]" in out


def test_help_lists_every_choice():
    code, out, _ = run_cli("show", "--help")
    assert code == 0
    flat = " ".join(out.split())
    for table in SHOWABLE:
        assert table in flat, table
    for view in ("upos", "xpos", "feats", "lemma", "head", "deprel", "las", "any", "nom"):
        assert view in flat
    for fmt in ("table", "csv", "json", "markdown", "latex"):
        assert fmt in flat
    code, out, _ = run_cli("run", "--help")
    flat = " ".join(out.split())
    for word in ("pos", "dep", "coref", "unl", "nl", "conllu", "conllx", "tsv", "conll2012",
                 "corefud", "jsonlines", "--keep-going"):
        assert word in flat, word


def test_show_labels_has_one_column_per_system(mixed):
    systems = sorted(query(mixed, "select distinct system from labels where corpus = "
                                  "'sequoia'")["system"].to_list(), key=natural_key)
    code, out, err = run_cli("show", "labels", "--view", "upos", "-w", str(mixed), "-f",
                             "markdown")
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("| gold_label"))
    assert header == "| gold_label | n | " + " | ".join(f"{s} %" for s in systems) + " |"
    noun = next(line for line in out.splitlines() if line.startswith("| NOUN |"))
    acc = query(mixed, f"select accuracy from labels where corpus = 'sequoia' and view = "
                       f"'upos' and gold_label = 'NOUN' and system = '{systems[0]}'")[0, 0]
    assert noun.split(" | ")[2] == f"{100 * acc:.2f}"
    code, out, _ = run_cli("show", "labels", "--view", "upos", "-w", str(mixed), "-f", "json")
    rows = json.loads(out)
    assert set(rows[0]) == {"gold_label", "system", "n", "UPOS %"}
    assert len(rows) == len(systems) * len({r["gold_label"] for r in rows})


def test_show_changes_has_a_legend_and_points(mixed):
    code, out, err = run_cli("show", "changes", "--sys1", "seqsm@ud2.8", "--sys2",
                             "seqsm@ud2.16", "-w", str(mixed))
    assert code == 0, err
    delta, low, high = query(mixed, "select delta_acc, delta_ci_low, delta_ci_high from pairs "
                                    "where corpus = 'sequoia' and view = 'las' and not punct "
                                    "and sys1 = 'seqsm@ud2.8' and sys2 = 'seqsm@ud2.16'").row(0)
    assert (f"Delta accuracy: {100 * delta:+.2f} points [{100 * low:+.2f}, {100 * high:+.2f}] "
            "(LAS (no punct))") in out
    assert "'A -> B'" in out and "'G -> A -> B'" in out and "gold -> sys1 -> sys2" in out


def test_rates_are_percent_with_named_scores(mixed):
    """The run summary names each score; LAS (no punct), LAS (punct) and CoNLL18 LAS F1 are
    three different figures, each from its own table."""
    code, out, err = run_cli("run", str(SEQUOIA / "sequoia.toml"), "-w", str(mixed),
                             "--ar-trials", "200")
    assert code == 0, err
    header = next(line for line in out.splitlines() if "system" in line)
    for name in ("UPOS %", "LAS (no punct) %", "LAS (punct) %", "CoNLL18 LAS F1 %"):
        assert name in header
    row = next(line for line in out.splitlines() if MD in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    names = [c.strip() for c in header.strip("┃ ").split("┃")]
    got = dict(zip(names, cells, strict=True))
    las = dict(query(mixed, f"select punct, accuracy from scores where corpus = 'sequoia' "
                            f"and view = 'las' and system = '{MD}'").rows())
    f1 = query(mixed, f"select f1 from conll18 where system = '{MD}' and metric = 'LAS'")[0, 0]
    assert got["LAS (no punct) %"] == f"{100 * las[False]:.2f}"
    assert got["LAS (punct) %"] == f"{100 * las[True]:.2f}"
    assert got["CoNLL18 LAS F1 %"] == f"{100 * f1:.2f}"
    assert len({got["LAS (no punct) %"], got["LAS (punct) %"], got["CoNLL18 LAS F1 %"]}) == 3
    code, out, _ = run_cli("show", "scores", "-w", str(mixed), "-f", "csv")
    assert out.splitlines()[0] == ("system,n_correct,n_units,LAS (no punct) %,"
                                   "LAS (no punct) % ci_low,LAS (no punct) % ci_high,"
                                   "n_sents_exact,n_sents,sentence exact %")
    low, high = query(mixed, f"select ci_low, ci_high from scores where corpus = 'sequoia' "
                             f"and view = 'las' and not punct and system = '{MD}'").row(0)
    row = next(line.split(",") for line in out.splitlines() if line.startswith(MD))
    assert [float(x) for x in row[3:6]] == pytest.approx([100 * las[False], 100 * low,
                                                          100 * high], abs=0.005)
    assert float(row[4]) < float(row[3]) < float(row[5])


def test_a_table_picks_the_one_corpus_it_applies_to(mixed):
    """With a dep, a coref and a UNL corpus in one warehouse, no --corpus is needed."""
    for argv in (["show", "scores"], ["show", "coref"], ["show", "unl"],
                 ["check", "--baseline", "sys1", "--candidate", "sys2", "--max-new-errors",
                  "100000"]):
        code, out, err = run_cli(*argv, "-w", str(mixed))
        assert code == 0, (argv, err)
        assert out.strip()


# ------------------------------------------------------------------------- gates

def test_check_gates_a_coreference_corpus(mixed):
    n = query(mixed, "select new_errors from coref_pairs where criterion = 'nom' and "
                     "sys1 = 'sys1' and sys2 = 'sys2'")[0, 0]
    base = ["check", "-w", str(mixed), "--baseline", "sys1", "--candidate", "sys2"]
    assert run_cli(*base, "--max-new-errors", str(n))[0] == 0
    code, _, err = run_cli(*base, "--max-new-errors", str(n - 1))
    assert code == 1 and f"makes {n} new errors (ARCS mentions, criterion nom)" in err
    conll = dict(query(mixed, "select system, f1 from coref_scores where metric = 'conll'")
                 .rows())
    delta = 100 * (conll["sys2"] - conll["sys1"])
    code, out, _ = run_cli(*base, "--min-delta", f"{delta - 0.01}", "--json")
    assert code == 0 and json.loads(out)["gates"][0]["value"] == pytest.approx(delta)


def test_check_gates_a_unl_corpus(mixed):
    rows = {(a, b): n for a, b, n in query(
        mixed, "select sys1, sys2, new_errors from unl_pairs").rows()}
    n = rows[("grammar@1", "grammar@2")]
    assert n > 0
    base = ["check", "-w", str(mixed), "--baseline", "grammar@1", "--candidate", "grammar@2"]
    code, _, err = run_cli(*base, "--max-new-errors", str(n - 1))
    assert code == 1 and f"makes {n} new errors (newly failed sentences)" in err
    assert run_cli(*base, "--max-new-errors", str(n))[0] == 0


# ------------------------------------------------------------------------- fast feedback

#: Modules a read-only command has no use for (the warehouse module, Arrow and numpy take
#: 0.1-0.3 s to import; Prefect 1.3 s; scipy 0.3 s; pydantic, which typer's conversion of
#: option values imports, 0.1 s with its adapters: flows/cli_values.py).
HEAVY = ("prefect", "scipy", "pyarrow", "numpy", "sysdiff.flows.warehouse", "polars",
         "pydantic")


def cli_in_subprocess(*argv: str, cwd: Path = REPO) -> tuple[int, str, bool]:
    """Run the CLI in a fresh interpreter; (exit status, stderr, was Prefect imported)."""
    status, err, heavy = cli_modules_in_subprocess(*argv, cwd=cwd)
    return status, err, "prefect" in heavy


def cli_modules_in_subprocess(*argv: str, cwd: Path = REPO) -> tuple[int, str, set[str]]:
    """Run the CLI in a fresh interpreter; (exit status, stderr, which of :data:`HEAVY` it
    imported)."""
    code = ("import sys\nfrom sysdiff.flows.cli import main\nsys.argv = ['sysdiff', *sys.argv[1:]]"
            "\ntry:\n    main()\nexcept SystemExit as e:\n    status = e.code\nelse:\n"
            f"    status = 0\nprint(status, ','.join(m for m in {HEAVY!r} if m in sys.modules)"
            " or '-')\n")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env={**os.environ, "SYSDIFF_SERVER": "off"})
    status, heavy = proc.stdout.split()[-2:]
    return int(status), proc.stderr, set(heavy.split(",")) - {"-"}


@pytest.mark.parametrize("argv, phrase", [
    (["run", "--key", "/no/such/key.conllu", "--system", "a=/no/such/a.conllu", "--corpus",
      "c"], "no such file"),
    (["run", "--key", str(SEQUOIA / "key.conllu"), "--system", "bad name=x", "--corpus", "c"],
     "invalid system name"),
    (["run", "--key", str(SEQUOIA / "key.conllu"), "--system", f"a={SEQUOIA / 'README.md'}",
      "--corpus", "c"], "separated by spaces"),
    (["run", "--key", str(SEQUOIA / "key.conllu"), "--system", f"a={SEQUOIA}", "--corpus",
      "c"], "not a regular file"),
    (["run", "--key", str(SEQUOIA / "README.md"), "--system",
      f"a={REPO / 'data/litbank/sys1.conll'}", "--corpus", "c", "--task", "coref"],
     "cannot tell the coreference format"),
    (["run", "--key", str(SEQUOIA / "key.conllu"), "--system", f"a={SEQUOIA / 'key.conllu'}",
      "--corpus", "c", "--format", "jsonlines"], "unknown input format 'jsonlines'"),
    (["serve", "--watch", "/no/such/folder", "--once"], "not a folder"),
])
def test_early_failures_do_not_start_prefect(argv, phrase, tmp_path):
    status, err, imported = cli_in_subprocess(*argv, "-w", str(tmp_path / "wh"))
    assert status == 2 and phrase in err, err
    assert not imported
    assert not (tmp_path / "wh").exists()


def test_a_held_lock_is_reported_before_prefect(tmp_path):
    from sysdiff.flows.warehouse import warehouse_lock

    root = tmp_path / "wh"
    with warehouse_lock(root):
        status, err, imported = cli_in_subprocess(
            "run", str(SEQUOIA / "sequoia.toml"), "-w", str(root))
    assert status == 2 and "another sysdiff run is writing" in err
    assert not imported


@pytest.mark.parametrize("argv, allowed", [
    (["sql", "select count(*) from scores"], set()),
    (["sql", "-f", "csv", "select count(*) from scores"], {"polars"}),
    (["show", "pairs", "--view", "upos"], set()),
    (["show", "labels", "--view", "upos"], set()),
    (["show", "changes", "--sys1", "seqsm@ud2.8", "--sys2", "seqsm@ud2.16"], set()),
    (["show", "scores", "-f", "json"], {"polars"}),
    (["examples", "--sys1", "seqsm@ud2.8", "--sys2", "seqsm@ud2.16", "--class", "new_error"],
     set()),
    (["check", "--baseline", "seqsm@ud2.8", "--candidate", "seqsm@ud2.16",
      "--max-new-errors", "100000", "--min-delta", "-100"], set()),
])
def test_read_only_commands_never_import_prefect(argv, allowed, bundled):
    """Nor anything else they have no use for (they answer in about 0.4 s): a table is
    computed and printed from DuckDB's rows without polars (CSV, TSV and JSON use polars'
    writers)."""
    status, err, heavy = cli_modules_in_subprocess(*argv, "-w", str(bundled("sequoia")))
    assert status == 0, err
    assert heavy <= allowed


def test_a_big_query_result_reads_the_same(bundled):
    """Past SMALL_RESULT rows the result is read as Arrow: the same rows, the same types."""
    import duckdb
    import polars as pl

    from sysdiff.flows.queries import SMALL_RESULT, fetch

    sql = ("select range as i, range::varchar as s, [range, null] as l, range % 3 = 0 as b, "
           "(range / 7)::decimal(12, 3) as d, {'x': range} as st, range::hugeint * 3 as h "
           "from range(N)")
    con = duckdb.connect()
    for n in (0, 3, SMALL_RESULT, SMALL_RESULT + 1, 3 * SMALL_RESULT):
        got = fetch(con.execute(sql.replace("N", str(n))))
        expected = pl.from_arrow(con.sql(sql.replace("N", str(n))).to_arrow_table())
        assert got.schema == expected.schema and got.equals(expected)
        assert got.height == n
        rows = fetch(con.execute(sql.replace("N", str(n))), as_rows=True).to_frame()
        assert rows.schema == expected.schema and rows.equals(expected)


def test_a_small_result_prints_the_same_without_polars():
    """``sysdiff sql`` prints a small table from DuckDB's rows (polars not imported): the
    same text as from the frame, for every type read without Arrow."""
    import duckdb

    from sysdiff.flows.names import FORMATS
    from sysdiff.flows.queries import fetch
    from sysdiff.flows.render import Rows, to_text

    sql = ("select range as i, range::varchar as s, [range, null] as l, range % 3 = 0 as b, "
           "(range / 7)::decimal(12, 3) as d, {'x': range} as st, range / 3 as f, "
           "(range / 3)::float as f4, 'a\\x01['::blob as bl, date '2024-02-28' + "
           "range::int as dt, null as n, '[b]x' as m, -range::tinyint as t, "
           "sum(range) over (order by range) as h from range(4)")
    con = duckdb.connect()
    rows, frame = fetch(con.execute(sql), as_rows=True), fetch(con.execute(sql))
    assert isinstance(rows, Rows) and len(rows.rows) == 4
    assert rows.numeric == [True, False, False, False, True, False, True, True, False,
                            False, False, False, True, True]
    for fmt in FORMATS:  # CSV cannot hold the list of integers: the same error both ways
        try:
            expected = to_text(frame, fmt, "t")
        except Exception as e:
            with pytest.raises(type(e)):
                to_text(rows, fmt, "t")
        else:
            assert to_text(rows, fmt, "t") == expected, fmt
    flat = "select * exclude (l, st) from (" + sql + ")"
    assert to_text(fetch(con.execute(flat), as_rows=True), "csv") == \
        to_text(fetch(con.execute(flat)), "csv")
    assert "a\\x01[" in to_text(rows, "table") and "[b]x" in to_text(rows, "table")


def test_server_commands_never_import_prefect(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSDIFF_STATE_DIR", str(tmp_path / "state"))
    status, err, heavy = cli_modules_in_subprocess("server", "status")
    assert status == 1 and not heavy, err
    status, err, heavy = cli_modules_in_subprocess("server", "stop")
    assert status == 0 and not heavy, err


def test_tsv_output_for_cut_and_awk(bundled, cli):
    code, out, err = cli("sql", "-w", str(bundled("sequoia")), "--format", "tsv",
                         "select system, n_correct from scores where view = 'upos' "
                         "order by system")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "system\tn_correct" and len(lines) == 5
    assert all(len(line.split("\t")) == 2 for line in lines)
