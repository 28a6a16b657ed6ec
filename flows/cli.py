"""The ``sysdiff`` command line. It only parses options and calls flows or read-only queries.

Read-only commands (``sql``, ``show``, ``examples``, ``check``, ``report``) never import
Prefect, and ``run``/``serve`` check names, files, formats, the run file and the warehouse
lock before they import it. Exit status: 0 done; 1 a ``check`` gate failed (or an internal
error); 2 bad input or a usage error (one line on stderr, or click's usage message, never a
traceback); 3 done, but some systems were skipped (``--keep-going``, ``serve``).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from sysdiff.flows import server
from sysdiff.flows.names import FORMATS, NOTICE, SHOWABLE, VIEWS_HELP, resolve_warehouse
from sysdiff.schemas.errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="sysdiff: in-depth comparative evaluation of NLP system outputs.")
DATA = Path(__file__).resolve().parent.parent / "data"
Warehouse = Annotated[str | None, typer.Option(
    "--warehouse", "-w", help="Warehouse folder (default: $SYSDIFF_WAREHOUSE, else "
    "./data/warehouse).")]
Fmt = Annotated[str, typer.Option("--format", "-f", help="Output: " + ", ".join(FORMATS) + ".")]
SKIPPED = 3  # exit status when systems were skipped
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT)


def show_warnings(verbose: bool = False) -> None:
    """sysdiff's own warnings (e.g. UNL encodings) go to stderr, one line each; with
    ``verbose`` also the time of each step."""
    import logging

    log = logging.getLogger("sysdiff")
    if not log.handlers:
        handler = _StderrHandler()
        handler.setFormatter(_LineFormatter())
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO if verbose else NOTICE)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (not when the handler
    was made), so redirected output (tests, embedding) gets the warnings too."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


class _LineFormatter(logging.Formatter):
    """``sysdiff: warning: ...`` for warnings, ``sysdiff: note: ...`` for notices,
    ``sysdiff: ...`` for step times."""

    def format(self, record: logging.LogRecord) -> str:
        kind = ("warning: " if record.levelno >= logging.WARNING else
                "note: " if record.levelno >= NOTICE else "")
        return f"sysdiff: {kind}{record.getMessage()}"


def use_prefect_api(forward: bool = False) -> None:
    """Choose the Prefect API before Prefect is imported (:func:`server.api_for_run`): the
    one the user configured, else the background server (started now if needed), else a
    temporary one. With ``forward``, a command that the warm runner can take (``run``,
    ``demo``) is handed to it now that the server lives (``typer.Exit`` with its status).
    Embedded (Prefect already imported, e.g. under ``prefect_test_harness``): unchanged."""
    if "prefect" in sys.modules:
        return
    from sysdiff.flows import runner

    url, how = server.api_for_run(started=runner.spawn_for)
    if how != "background":
        return
    os.environ["PREFECT_API_URL"] = url
    if forward:
        status = runner.try_forward(sys.argv[1:], url)
        if status is not None:
            raise typer.Exit(status)


def parse_mappings(items: list[str]) -> dict[str, dict[str, str]]:
    """``--map SYSTEM:OLD=NEW`` (SYSTEM may be @key), ``OLD=NEW`` (every system) or
    ``[SYSTEM:]FILE`` (OLD<TAB>NEW lines) into {system: {old: new}} (``*``: every system)."""
    from sysdiff.flows.spec import parse_map_item

    out: dict[str, dict[str, str]] = {}
    for item in items:
        who, rules = parse_map_item(item)
        out.setdefault(who, {}).update(rules)
    return out


def prepare(spec, warehouse: str | None):
    """The checks that need no Prefect (run before it is imported): warehouse path and lock,
    every input file and its format. Returns (warehouse, spec without skipped systems,
    lines of the systems skipped)."""
    from sysdiff.flows.preflight import preflight

    root = resolve_warehouse(warehouse)
    spec, skipped = preflight(spec, root)
    return root, spec, skipped


def run_spec(spec, root: Path, verbose: bool, dask_address: str | None = None,
             dask_local: int = 0) -> list[str]:
    """Run the evaluation flow for ``spec``; the lines of systems skipped on the way."""
    use_prefect_api(forward=True)
    server.quiet_prefect(verbose)
    show_warnings(verbose)
    from sysdiff.flows.run import run_evaluation

    return run_evaluation(spec, root, dask_address, dask_local)


@app.command()
def run(
    config: Annotated[str | None, typer.Argument(help="A TOML run file (instead of options).")]
    = None,
    key: Annotated[str | None, typer.Option(help="The gold key file.")] = None,
    system: Annotated[list[str] | None, typer.Option(
        help="NAME=FILE or NAME@VERSION=FILE; repeat for each system.")] = None,
    corpus: Annotated[str | None, typer.Option(help="Corpus name.")] = None,
    task: Annotated[str | None, typer.Option(help="pos, dep, coref, unl, nl or ner "
                                             "(default: dep).")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="Input format (default: "
                   "detected): conllu, conllx, tsv (pos, dep); conll2012, corefud, jsonlines "
                   "(coref); unl (unl, nl); tsv, conll2003, uner (ner).")] = None,
    mapping: Annotated[list[str] | None, typer.Option(
        "--map", help="Label mapping SYSTEM:OLD=NEW (SYSTEM may be @key), OLD=NEW (every "
        "system), or [SYSTEM:]FILE of OLD<TAB>NEW lines; ner maps entity types (TYPE=O drops "
        "them); repeatable.")] = None,
    scheme: Annotated[str | None, typer.Option(
        help="ner: span decoding: auto (default; conlleval rules, any of IOB1/IOB2/BIOES), "
        "iob1, iob2 (seqeval strict) or bioes (strict).")] = None,
    ar_trials: Annotated[int | None, typer.Option(
        min=1, help="Approximate randomization trials (default 10000).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the randomization test "
                                             "(default 0).")] = None,
    shard_sents: Annotated[int | None, typer.Option(
        min=1, help="Sentences per shard when a file has no documents (# newdoc; default "
        "5000).")] = None,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Skip a system whose file is bad (one line each), evaluate and "
        "commit the others, and exit with status 3.")] = False,
    dask_address: Annotated[str | None, typer.Option(
        help="Run shard tasks on an existing Dask cluster (tcp://HOST:PORT).")] = None,
    dask_local: Annotated[int, typer.Option(
        min=0, help="Start a local Dask cluster of N worker processes for the shard tasks.")]
    = 0,
    unl_multiset: Annotated[bool, typer.Option(
        help="UNL: compare items as multisets, not sets.")] = False,
    unl_keep_scope_ids: Annotated[bool, typer.Option(
        help="UNL: keep relation scope ids in the comparison.")] = False,
    unl_legacy_2013: Annotated[bool, typer.Option(
        help="UNL: the older overall threshold (D_all < 0.5).")] = False,
    unl_optional_attr: Annotated[list[str] | None, typer.Option(
        help="UNL: one more optional attribute to ignore (besides @def, @indef).")] = None,
    warehouse: Warehouse = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show Prefect's logs.")]
    = False,
) -> None:
    """Ingest a key and systems, compute every table, and store them in the warehouse."""
    import dataclasses

    from sysdiff.flows.spec import build_spec, load_config

    overrides = {k: v for k, v in (("ar_trials", ar_trials), ("seed", seed),
                                   ("shard_sents", shard_sents), ("scheme", scheme))
                 if v is not None}
    if config:
        given = [f"--{n}" for n, v in (("key", key), ("system", system), ("corpus", corpus),
                                       ("task", task), ("format", fmt), ("map", mapping))
                 if v]
        if given:
            raise InputError(f"{', '.join(given)}: the run file {config} sets the corpus, task, "
                             "key, systems and mappings; give either a run file or options")
        spec = dataclasses.replace(load_config(config), keep_going=keep_going, **overrides)
    else:
        if not (key and corpus and system):
            raise InputError("give a TOML run file, or --key, --corpus and at least one "
                             "--system NAME=FILE")
        unl = {"multiset": unl_multiset, "keep_scope_ids": unl_keep_scope_ids,
               "legacy_2013": unl_legacy_2013, "optional_attrs": unl_optional_attr or []}
        spec = build_spec(corpus, task or "dep", key, system, fmt,
                          mappings=parse_mappings(mapping or []), unl=unl,
                          keep_going=keep_going, **overrides)
    root, spec, skipped = prepare(spec, warehouse)
    show_warnings(verbose)
    for line in skipped:
        logging.getLogger("sysdiff").warning("%s", line)
    skipped += run_spec(spec, root, verbose, dask_address, dask_local)
    summary(root, spec.corpus)
    if skipped:
        typer.echo(f"sysdiff: {len(skipped)} system(s) skipped (listed above); the others are "
                   "evaluated and committed", err=True)
        raise typer.Exit(SKIPPED)


def to_text(df, fmt: str, title: str | None = None) -> str:
    """:func:`sysdiff.flows.render.to_text` (imported when output is printed)."""
    from sysdiff.flows.render import to_text as render

    return render(df, fmt, title)


def summary(root: Path, corpus: str) -> None:
    """Print the headline scores of a corpus (rates in percent)."""
    from sysdiff.flows.queries import one_connection
    from sysdiff.flows.show import headline

    with one_connection():
        table = headline(root, corpus)
    typer.echo(to_text(table, "table", title=f"sysdiff: {corpus}"))
    typer.echo(f"warehouse: {root}  (list the tables: sysdiff sql \"show tables\")")


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="One read-only SQL query over the tables "
                                         "(SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, "
                                         "PIVOT, EXPLAIN).")],
    warehouse: Warehouse = None,
    fmt: Fmt = "table",
) -> None:
    """Run one read-only SQL query (DuckDB) over the warehouse tables (stored as fractions).

    The query can read the warehouse's tables and nothing else: other files, COPY, EXPORT,
    ATTACH, INSTALL, LOAD, SET, PRAGMA and writes are refused (exit 2)."""
    from sysdiff.flows.queries import query as run_query

    _check_format(fmt)
    result = run_query(resolve_warehouse(warehouse), query, rows=fmt == "table")
    typer.echo(to_text(result, fmt), nl=False)


def _tables_help() -> str:
    return "One of: " + "; ".join(f"{t} ({what})" for t, (_tasks, what) in SHOWABLE.items())


@app.command()
def show(
    table: Annotated[str, typer.Argument(help=_tables_help(), metavar="TABLE")],
    corpus: Annotated[str | None, typer.Option(
        help="Corpus (default: the only one the table applies to).")] = None,
    view: Annotated[str | None, typer.Option(help=VIEWS_HELP)] = None,
    sys1: Annotated[str | None, typer.Option(help="First system of a pair.")] = None,
    sys2: Annotated[str | None, typer.Option(help="Second system of a pair.")] = None,
    punct: Annotated[bool | None, typer.Option(
        "--punct/--no-punct", help="Punctuation included (default: the view's default).")]
    = None,
    top: Annotated[int, typer.Option(min=1, help="Rows per class in change tables.")] = 5,
    name: Annotated[str | None, typer.Option(
        help="history: the NAME of the NAME@VERSION systems (default: the only one).")]
    = None,
    warehouse: Warehouse = None,
    fmt: Fmt = "table",
) -> None:
    """Paper-style tables from the warehouse (rates in percent, differences in points)."""
    from sysdiff.flows.queries import one_connection
    from sysdiff.flows.show import show_table

    _check_format(fmt)
    show_warnings()
    with one_connection():
        text = show_table(resolve_warehouse(warehouse), table, corpus, view, sys1, sys2, punct,
                          top, fmt, name)
    typer.echo(text, nl=False)


@app.command()
def demo(warehouse: Warehouse = None,
         out: Annotated[str, typer.Option("--out", "-o", help="Where to write the report.")]
         = "sysdiff-report.html",
         verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    """Evaluate the bundled UD French-Sequoia sample (key + 4 real parsers) end to end."""
    from sysdiff.flows.spec import load_config

    root, spec, _skipped = prepare(load_config(DATA / "sequoia" / "sequoia.toml"), warehouse)
    run_spec(spec, root, verbose)
    from sysdiff.flows.report import build_report
    from sysdiff.flows.show import show_table

    summary(root, spec.corpus)
    typer.echo(show_table(root, "pairs", spec.corpus, "las", None, None, None, 5, "table"),
               nl=False)
    path = build_report(root, spec.corpus, Path(out))
    typer.echo(f"report: {path.absolute()}  (open it in a browser; it works offline)")


@app.command()
def report(
    out: Annotated[str, typer.Option("--out", "-o", help="The HTML file to write.")]
    = "sysdiff-report.html",
    corpus: Annotated[str | None, typer.Option(help="Corpus (default: all).")] = None,
    examples: Annotated[int, typer.Option(min=0, help="Example sentences per change cell.")]
    = 3,
    warehouse: Warehouse = None,
) -> None:
    """One self-contained HTML report with charts and drill-down (opens offline)."""
    from sysdiff.flows.report import build_report

    root = resolve_warehouse(warehouse)
    if corpus is not None:
        from sysdiff.flows.show import pick_corpus

        pick_corpus(root, corpus)
    typer.echo(build_report(root, corpus, Path(out), examples))


@app.command()
def examples(
    sys1: Annotated[str, typer.Option(help="First system of the pair.")],
    sys2: Annotated[str, typer.Option(help="Second system of the pair.")],
    cls: Annotated[str, typer.Option("--class", help="correction, new_error or "
                                     "changed_error.")],
    view: Annotated[str | None, typer.Option(help=VIEWS_HELP.split(" any,")[0]
                                             + " (token corpora).")] = None,
    l1: Annotated[str | None, typer.Option(help="Label of sys1 (ner: its span class).")]
    = None,
    l2: Annotated[str | None, typer.Option(help="Label of sys2 (ner: its span class).")]
    = None,
    gold: Annotated[str | None, typer.Option(help="Gold label (ner: the span type).")] = None,
    limit: Annotated[int, typer.Option(help="At most this many words (-1: all).")] = 10,
    punct: Annotated[bool | None, typer.Option("--punct/--no-punct")] = None,
    corpus: Annotated[str | None, typer.Option(
        help="Corpus (default: the only token corpus).")] = None,
    warehouse: Warehouse = None,
    fmt: Fmt = "table",
) -> None:
    """The words behind a change-table cell, with gold, sys1 and sys2 labels."""
    from sysdiff.flows.examples import examples as find
    from sysdiff.flows.queries import one_connection
    from sysdiff.flows.show import (
        SPAN_TASKS,
        TOKEN_TASKS,
        check_systems,
        check_view,
        corpus_task,
        pick_corpus,
        span_examples,
    )

    _check_format(fmt)
    root = resolve_warehouse(warehouse)
    with one_connection():
        corpus = pick_corpus(root, corpus, TOKEN_TASKS + SPAN_TASKS, "examples")
        task = corpus_task(root, corpus)
        view = check_view(root, corpus, task, view)
        check_systems(root, corpus, sys1, sys2)
        if task in SPAN_TASKS:  # span units: --l1/--l2 are span classes, --gold the type
            found = span_examples(root, corpus, sys1, sys2, cls, l1, l2,
                                  gold or (None if view == "ALL" else view), limit)
        else:
            found = find(root, corpus, view, sys1, sys2, cls, l1, l2, limit, punct, gold)
    typer.echo(to_text(found, fmt), nl=False)


@app.command()
def check(
    candidate: Annotated[str, typer.Option(help="The system under test.")],
    baseline: Annotated[str | None, typer.Option(
        help="The reference system (default: the version before the candidate's, for a "
        "candidate named NAME@VERSION).")] = None,
    corpus: Annotated[str | None, typer.Option(
        help="Corpus (default: the only one holding both systems).")] = None,
    view: Annotated[str | None, typer.Option(help="Gate on this " + VIEWS_HELP[0].lower()
                                             + VIEWS_HELP[1:])] = None,
    punct: Annotated[bool | None, typer.Option("--punct/--no-punct")] = None,
    max_new_errors: Annotated[int | None, typer.Option(
        help="Fail when the candidate makes more new errors than this: words (token "
        "corpora), ARCS mentions (coreference), newly failed sentences (UNL).")] = None,
    min_delta: Annotated[float | None, typer.Option(
        help="Fail when candidate - baseline is below this, in points: accuracy (token), "
        "CoNLL F1 (coreference), F-measure (UNL).")] = None,
    label: Annotated[str | None, typer.Option(
        help="Apply --min-delta to the accuracy on this gold label (token corpora).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    warehouse: Warehouse = None,
) -> None:
    """Regression gates for CI: exit 1 with a one-line reason when a gate fails."""
    import json

    from sysdiff.flows import gates
    from sysdiff.flows.queries import one_connection

    with one_connection():
        result = gates.check(resolve_warehouse(warehouse), corpus, baseline, candidate, view,
                             punct, max_new_errors, min_delta, label)
    failed = [g for g in result if not g.passed]
    if as_json:
        typer.echo(json.dumps(gates.as_json(result), indent=1))
    elif failed:
        typer.echo(f"sysdiff check: FAILED: {failed[0].reason}", err=True)
    else:
        typer.echo("sysdiff check: passed: " + "; ".join(g.reason for g in result))
    if failed:
        raise typer.Exit(1)


@app.command()
def serve(
    watch: Annotated[str, typer.Option(help="Folder: <corpus>/key.* and "
                                       "<corpus>/systems/<name>\\[@version].*")],
    cron: Annotated[str, typer.Option(help="Cron schedule of the deployment.")] = "0 2 * * *",
    once: Annotated[bool, typer.Option("--once", help="Evaluate the folder once and exit.")]
    = False,
    warehouse: Warehouse = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Evaluate a watched folder on a schedule (a Prefect deployment), or once.

    A corpus or system file that cannot be evaluated (a bad name, an empty or bad file) is
    skipped with one line; the rest is evaluated. With --once the exit status is 3 when
    something was skipped."""
    from sysdiff.flows.preflight import check_lock
    from sysdiff.flows.spec import folder_specs

    root = resolve_warehouse(warehouse)
    folder = Path(watch).absolute()
    folder_specs(folder)  # the folder itself must exist (its contents are checked each pass)
    if once:
        check_lock(root)
    else:
        _server_for_schedule()
    use_prefect_api()
    server.quiet_prefect(verbose)
    show_warnings(verbose)
    from sysdiff.flows import watch as watch_mod

    if once:
        done = watch_mod.evaluate_folder(str(folder), str(root))
        typer.echo(done.summary())
        if done.skipped:
            raise typer.Exit(SKIPPED)
        return
    typer.echo(f"serving deployment 'sysdiff-nightly' on '{cron}' for {folder}")
    watch_mod.serve_folder(folder, root, cron)


def _server_for_schedule() -> None:
    """A schedule needs a Prefect server that outlives this command: the configured one,
    else the background server; never a temporary one."""
    from sysdiff.flows import runner

    if server.explicit_api_url():
        return
    if server.mode() == "off":
        raise InputError("a schedule needs a Prefect server that outlives this command, and "
                         "SYSDIFF_SERVER=off turns sysdiff's background server off: start one "
                         "with 'prefect server start' and set PREFECT_API_URL=http://127.0.0.1:"
                         "4200/api, or unset SYSDIFF_SERVER (or use --once from cron)")
    try:
        server.ensure(started=runner.spawn_for)
    except server.ServerError as e:
        raise InputError(f"a schedule needs a Prefect server: {e}") from None
    except OSError as e:
        raise InputError(f"a schedule needs a Prefect server, and the background one cannot "
                         f"keep its state ({server.describe(e)}): set {server.STATE_ENV} to a "
                         "writable folder, or PREFECT_API_URL to a server") from None


server_app = typer.Typer(no_args_is_help=True, help=(
    "The background Prefect server that records every run (started by the first 'sysdiff "
    "run'; SYSDIFF_SERVER=off runs each command with a temporary server instead)."))
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start() -> None:
    """Start the background Prefect server and the warm runner (nothing when they run)."""
    from sysdiff.flows import runner

    try:
        found = server.ensure(announce=False, started=runner.spawn_for)
    except server.ServerError as e:
        typer.echo(f"sysdiff: error: the background Prefect server did not start: {e}",
                   err=True)
        raise typer.Exit(1) from None
    except OSError as e:
        typer.echo(f"sysdiff: error: the background Prefect server cannot keep its state "
                   f"({server.describe(e)}); set {server.STATE_ENV} to a writable folder",
                   err=True)
        raise typer.Exit(1) from None
    if runner.enabled() and runner.wait_ready(found.api_url) is None:
        typer.echo(f"sysdiff: warning: the warm runner did not start (see "
                   f"{runner.files()['log']}); runs take their own process", err=True)
    typer.echo(server_status_text())


@server_app.command("stop")
def server_stop() -> None:
    """Stop the warm runner and the background Prefect server (runs then start it again,
    unless SYSDIFF_SERVER=off)."""
    from sysdiff.flows import runner

    try:
        if not server.state_dir().is_dir():
            typer.echo("no background server was running")
            return
        with server.control_lock():
            lines = [*runner.stop_all(), *server.stop()]
    except OSError as e:
        typer.echo(f"sysdiff: error: cannot stop the background server: {server.describe(e)}",
                   err=True)
        raise typer.Exit(1) from None
    typer.echo("\n".join(lines) if lines else "no background server was running")


@server_app.command("status")
def server_status() -> None:
    """Where runs are recorded: the server's UI and API, its process, the warm runner.
    Exit status 1 when the server is not running."""
    typer.echo(server_status_text())
    if server.live_server() is None:
        raise typer.Exit(1)


def server_status_text() -> str:
    """The lines of ``sysdiff server status``."""
    from sysdiff.flows import runner

    found = server.live_server()
    lines = []
    if found is None:
        lines.append("Prefect server: not running (" + (
            "the next 'sysdiff run' starts it" if server.state_writable()
            else "its state folder cannot be written") + ")")
    else:
        rss = server.rss_mib(found.pid)
        lines += [
            f"Prefect server: running (pid {found.pid}, up {server.uptime(found)}"
            + (f", {rss:.0f} MiB" if rss else "") + f", Prefect {found.prefect})",
            f"  UI:        {found.ui_url}  (flow runs: {found.ui_url}/runs)",
            f"  API:       {found.api_url}",
            f"  CLI:       PREFECT_API_URL={found.api_url} prefect flow-run ls",
            f"  database:  {Path(found.home) / 'prefect.db'}",
            f"  log:       {found.log}"]
    record = runner.alive()
    if isinstance(record, dict):
        rss = server.rss_mib(record["pid"])
        lines.append(f"warm runner: running (pid {record['pid']}"
                     + (f", {rss:.0f} MiB" if rss else "") + ")")
    elif record == "starting":
        lines.append("warm runner: starting")
    else:
        lines.append("warm runner: not running (the next run starts it)")
    lines.append("runs report to: " + runs_report_to())
    try:
        lines.append(f"state folder: {server.state_dir()}")
    except OSError as e:
        lines.append(f"state folder: none ({e})")
    return "\n".join(lines)


def runs_report_to() -> str:
    """Which Prefect API a run started now would use, in words."""
    explicit = server.explicit_api_url()
    if explicit:
        return f"{explicit} (PREFECT_API_URL, configured)"
    if server.mode() == "off":
        return "a temporary server in each process (SYSDIFF_SERVER=off)"
    if server.live_server() is None and not server.state_writable():
        return (f"a temporary server in each process (the state folder cannot be written: set "
                f"{server.STATE_ENV})")
    return "the background server"


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InputError(f"unknown output format '{fmt}'; expected one of {', '.join(FORMATS)}")


def _forward_to_runner() -> None:
    """``run`` and ``demo`` go to the warm runner when one lives (before anything else is
    imported: the runner parses, checks and runs the same command line)."""
    argv = sys.argv[1:]
    if not argv or argv[0] not in ("run", "demo") or "prefect" in sys.modules:
        return
    from sysdiff.flows import runner

    status = runner.try_forward(argv)
    if status is not None:
        sys.exit(status)


def main() -> None:
    """Entry point: run the app. InputError: one line on stderr, exit 2; a usage error
    (unknown command or option, missing argument, a value of the wrong type): click's usage
    message, exit 2."""
    try:
        _forward_to_runner()
        status = app(standalone_mode=False)
        if status == INTERRUPTED:  # typer turns Ctrl-C during a command into exit 130
            raise KeyboardInterrupt
        if isinstance(status, int) and status:
            sys.exit(status)
    except InputError as e:
        typer.echo(f"sysdiff: error: {e}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("sysdiff: interrupted; the warehouse keeps its previous results", err=True)
        sys.exit(INTERRUPTED)
    except (typer.Abort, typer.Exit) as e:
        sys.exit(getattr(e, "exit_code", 1))
    except typer.TyperException as e:  # click's usage errors (typer bundles its own click)
        show = getattr(e, "show", None)
        if show is not None:
            show()
        else:
            typer.echo(f"sysdiff: error: {e}", err=True)
        sys.exit(2)
    except Exception as e:
        if "--verbose" in sys.argv or "-v" in sys.argv:
            raise
        typer.echo(f"sysdiff: internal error: {type(e).__name__}: {e} (rerun with --verbose "
                   "for details; the warehouse keeps its previous results)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
