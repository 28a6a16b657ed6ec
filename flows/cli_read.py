"""The read-only commands: ``sql``, ``show``, ``report``, ``examples`` and ``check``. They
never import Prefect (nor pyarrow, numpy or the warehouse module)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sysdiff.flows.cli_options import (
    Fmt,
    MemoryLimit,
    Timeout,
    Warehouse,
    _check_format,
    reading,
    show_warnings,
    to_text,
)
from sysdiff.flows.names import SHOWABLE, VIEWS_HELP, resolve_warehouse
from sysdiff.schemas.errors import InputError


def sql(
    query: Annotated[str, typer.Argument(help="One read-only SQL query over the tables "
                                         "(SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, "
                                         "PIVOT, EXPLAIN).")],
    warehouse: Warehouse = None,
    fmt: Fmt = "table",
    timeout: Timeout = None,
    memory_limit: MemoryLimit = None,
) -> None:
    """Run one read-only SQL query (DuckDB) over the warehouse tables (stored as fractions).

    The query can read the warehouse's tables and nothing else: other files, COPY, EXPORT,
    ATTACH, INSTALL, LOAD, SET, PRAGMA and writes are refused (exit 2), and so is a query
    over its time or memory limit."""
    from sysdiff.flows.queries import query as run_query

    _check_format(fmt)
    with reading(timeout, memory_limit):
        result = run_query(resolve_warehouse(warehouse), query, rows=fmt == "table")
    typer.echo(to_text(result, fmt), nl=False)


def _tables_help() -> str:
    return "One of: " + "; ".join(f"{t} ({what})" for t, (_tasks, what) in SHOWABLE.items())


PUNCT_HELP = ("Dependency views (head, deprel, las): count punctuation words too, or not "
              "(default: --no-punct for them, punctuation included in the other views).")


def show(
    table: Annotated[str | None, typer.Argument(help=_tables_help(), metavar="TABLE",
                                                show_default=False)] = None,
    corpus: Annotated[str | None, typer.Option(
        help="Corpus (default: the only one the table applies to).")] = None,
    view: Annotated[str | None, typer.Option(help=VIEWS_HELP, metavar="VIEW")] = None,
    sys1: Annotated[str | None, typer.Option(help="First system of a pair.", metavar="SYSTEM")]
    = None,
    sys2: Annotated[str | None, typer.Option(help="Second system of a pair.",
                                             metavar="SYSTEM")] = None,
    punct: Annotated[bool | None, typer.Option("--punct/--no-punct", help=PUNCT_HELP)] = None,
    top: Annotated[int, typer.Option(min=1, help="Rows per class in change tables.")] = 5,
    name: Annotated[str | None, typer.Option(
        help="history: the NAME of the NAME@VERSION systems (default: the only one).")]
    = None,
    warehouse: Warehouse = None,
    fmt: Fmt = "table",
    timeout: Timeout = None,
    memory_limit: MemoryLimit = None,
) -> None:
    """Paper-style tables from the warehouse (rates in percent, differences in points)."""
    from sysdiff.flows.show import show_table

    if table is None:
        raise InputError(f"give the table to show: one of {', '.join(SHOWABLE)}")
    _check_format(fmt)
    show_warnings()
    with reading(timeout, memory_limit):
        text = show_table(resolve_warehouse(warehouse), table, corpus, view, sys1, sys2, punct,
                          top, fmt, name)
    typer.echo(text, nl=False)


def report(
    out: Annotated[str, typer.Option("--out", "-o", help="The HTML file to write.")]
    = "sysdiff-report.html",
    corpus: Annotated[str | None, typer.Option(help="Corpus (default: all).")] = None,
    examples: Annotated[int, typer.Option(min=0, help="Example sentences per change cell.")]
    = 3,
    warehouse: Warehouse = None,
    timeout: Timeout = None,
    memory_limit: MemoryLimit = None,
) -> None:
    """One self-contained HTML report with charts and drill-down (opens offline)."""
    from sysdiff.flows.report import build_report

    root = resolve_warehouse(warehouse)
    with reading(timeout, memory_limit):
        if corpus is not None:
            from sysdiff.flows.show.common import pick_corpus

            pick_corpus(root, corpus)
        text = build_report(root, corpus, Path(out), examples)
    typer.echo(text)


def examples(
    sys1: Annotated[str | None, typer.Option(help="First system of the pair.",
                                             metavar="SYSTEM")] = None,
    sys2: Annotated[str | None, typer.Option(help="Second system of the pair.",
                                             metavar="SYSTEM")] = None,
    cls: Annotated[str | None, typer.Option("--class", metavar="CLASS", help=(
        "The change class: correction, new_error or changed_error."))] = None,
    view: Annotated[str | None, typer.Option(help=VIEWS_HELP, metavar="VIEW")] = None,
    l1: Annotated[str | None, typer.Option(help="Label of sys1 (ner: its span class; srl: "
                                           "its role, or <boundary>, <missed>, <absent>).")]
    = None,
    l2: Annotated[str | None, typer.Option(help="Label of sys2 (ner: its span class; srl: "
                                           "its role, or <boundary>, <missed>, <absent>).")]
    = None,
    gold: Annotated[str | None, typer.Option(help="Gold label (ner: the span type; srl: the "
                                             "gold role, or a predicate's PPOS).")] = None,
    limit: Annotated[int, typer.Option(help="At most this many units (-1: all).")] = 10,
    punct: Annotated[bool | None, typer.Option("--punct/--no-punct", help=PUNCT_HELP)] = None,
    corpus: Annotated[str | None, typer.Option(
        help="Corpus (default: the only token corpus).")] = None,
    warehouse: Warehouse = None,
    fmt: Fmt = "table",
    timeout: Timeout = None,
    memory_limit: MemoryLimit = None,
) -> None:
    """The units behind a change-table cell, each marked in its sentence.

    Each unit comes with its sentence (the unit in \\[brackets], an srl argument's
    predicate in {braces}), the gold label and both systems' labels.

    Positions are the key's: id is the 1-based word id (token corpora, as in CoNLL-U), sent
    the 0-based sentence index of the tables; a ner span (TYPE first-last) gives its first
    and last 1-based token positions (the spans table stores them 0-based)."""
    from sysdiff.flows.examples import examples as find
    from sysdiff.flows.names import SPAN_TASKS, SRL_TASKS, TOKEN_TASKS
    from sysdiff.flows.show.common import (
        check_systems,
        check_view,
        corpus_task,
        need_pair,
        pick_corpus,
    )
    from sysdiff.flows.show.spans import span_examples
    from sysdiff.schemas.vocabulary import CLASSES

    _check_format(fmt)
    root = resolve_warehouse(warehouse)
    with reading(timeout, memory_limit):
        corpus = pick_corpus(root, corpus, TOKEN_TASKS + SPAN_TASKS + SRL_TASKS, "examples")
        task = corpus_task(root, corpus)
        view = check_view(root, corpus, task, view)
        if not (sys1 and sys2):
            need_pair(root, corpus, "examples")
        check_systems(root, corpus, sys1, sys2)
        if cls is None:
            raise InputError(f"examples needs --class: one of {', '.join(CLASSES)}")
        if task in SPAN_TASKS:  # span units: --l1/--l2 are span classes, --gold the type
            found = span_examples(root, corpus, sys1, sys2, cls, l1, l2,
                                  gold or (None if view == "ALL" else view), limit)
        elif task in SRL_TASKS:  # argument/predicate units: --l1/--l2 are roles (classes)
            from sysdiff.flows.show.srl import srl_examples

            found = srl_examples(root, corpus, sys1, sys2, cls, view, l1, l2, gold, limit)
        else:
            found = find(root, corpus, view, sys1, sys2, cls, l1, l2, limit, punct, gold,
                         rows=True)
    typer.echo(to_text(found, fmt), nl=False)


def check(
    candidate: Annotated[str | None, typer.Option(help="The system under test.",
                                                  metavar="SYSTEM")] = None,
    baseline: Annotated[str | None, typer.Option(
        help="The reference system (default: the version before the candidate's, for a "
        "candidate named NAME@VERSION).")] = None,
    corpus: Annotated[str | None, typer.Option(
        help="Corpus (default: the only one holding both systems).")] = None,
    view: Annotated[str | None, typer.Option(help="Gate on this " + VIEWS_HELP[0].lower()
                                             + VIEWS_HELP[1:], metavar="VIEW")] = None,
    punct: Annotated[bool | None, typer.Option("--punct/--no-punct", help=PUNCT_HELP)] = None,
    max_new_errors: Annotated[int | None, typer.Option(
        help="Fail when the candidate makes more new errors than this: words (token "
        "corpora), ARCS mentions (coreference), newly failed sentences (UNL), argument or "
        "predicate units (srl).")] = None,
    min_delta: Annotated[float | None, typer.Option(
        help="Fail when candidate - baseline is below this, in points: accuracy (token), "
        "CoNLL F1 (coreference), F-measure (UNL), arguments or predicates F1 (srl).")] = None,
    label: Annotated[str | None, typer.Option(
        help="Apply --min-delta to the accuracy on this gold label (token corpora).")] = None,
    require_significant: Annotated[bool, typer.Option(
        "--require-significant", help="Fail unless the bootstrap interval of candidate - "
        "baseline excludes 0 (the pair's delta: accuracy (token), ARCS F1 of --view "
        "(coreference), F-measure (UNL), span F1, arguments or predicates F1 (srl)); with "
        "--min-delta 0, a significant gain.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    warehouse: Warehouse = None,
    timeout: Timeout = None,
    memory_limit: MemoryLimit = None,
) -> None:
    """Regression gates for CI: exit 1 with one line per failed gate (its reason)."""
    import json

    from sysdiff.flows import gates

    root = resolve_warehouse(warehouse)
    with reading(timeout, memory_limit):
        if candidate is None:
            gates.need_candidate(root, corpus)
        result = gates.check(root, corpus, baseline, candidate, view, punct, max_new_errors,
                             min_delta, label, require_significant)
    failed = [g for g in result if not g.passed]
    if as_json:
        typer.echo(json.dumps(gates.as_json(result), indent=1))
    elif failed:
        for gate in failed:
            typer.echo(f"sysdiff check: FAILED: {gate.reason}", err=True)
        passed = [g for g in result if g.passed]
        if passed:
            typer.echo("sysdiff check: passed: " + "; ".join(g.reason for g in passed),
                       err=True)
    else:
        typer.echo("sysdiff check: passed: " + "; ".join(g.reason for g in result))
    if failed:
        raise typer.Exit(1)
