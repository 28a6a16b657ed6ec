"""``sysdiff rm``: remove systems, versions or a whole corpus (:mod:`sysdiff.flows.remove`).

What would be removed is checked and said before anything changes; the removal needs a
confirmation (a question on a terminal, else ``--yes``). Removing systems recomputes the
corpus tables that depended on them, in a Prefect flow run like ``sysdiff run``'s (the
background server, and the warm runner when one lives); removing a whole corpus needs no
Prefect."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from sysdiff.flows.cli_options import Verbose, Warehouse, show_warnings
from sysdiff.flows.names import resolve_warehouse
from sysdiff.schemas.errors import InputError


def rm(
    corpus: Annotated[str | None, typer.Option(
        metavar="CORPUS", help="The corpus to remove from (alone: the whole corpus, its key "
        "and every system).")] = None,
    system: Annotated[list[str] | None, typer.Option(
        metavar="NAME[@VERSION]", help="A system to remove: NAME@VERSION one version, NAME "
        "the system NAME and every NAME@VERSION; repeatable.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Remove without asking.")] = False,
    warehouse: Warehouse = None,
    verbose: Verbose = False,
) -> None:
    """Remove systems, versions or a whole corpus from the warehouse.

    The corpus tables that depended on them (pairs, oracles, history, ...) are computed
    again from the data the warehouse holds (no input file is read)."""
    from sysdiff.flows.preflight import check_lock
    from sysdiff.flows.remove import plan

    root = resolve_warehouse(warehouse)
    if corpus is None:
        raise InputError(f"rm needs --corpus: one of {', '.join(_corpora(root))}")
    chosen = plan(root, corpus, system)
    check_lock(root)
    what = (f"corpus '{corpus}' ({chosen.task}): its key and {len(chosen.removed)} system(s): "
            f"{', '.join(chosen.removed)}" if chosen.whole else
            f"{', '.join(chosen.removed)} from corpus '{corpus}' ({len(chosen.kept)} system(s) "
            f"left: {', '.join(chosen.kept)})")
    if not yes:
        if not sys.stdin.isatty():
            raise InputError(f"rm would remove {what}; give --yes to remove without asking")
        if not typer.confirm(f"Remove {what}?", default=False):
            typer.echo("nothing removed")
            raise typer.Exit(1)
    done = _remove(root, corpus, system, chosen.whole, verbose)
    typer.echo(done.summary())


def _remove(root, corpus: str, names: list[str] | None, whole: bool, verbose: bool):
    """The removal: a whole corpus without Prefect, systems in a flow run."""
    if whole:
        from sysdiff.flows.remove import remove_corpus

        return remove_corpus(root, corpus)
    from sysdiff.flows import server
    from sysdiff.flows.cli_runs import use_prefect_api

    use_prefect_api()  # not forwarded: the removal was confirmed here
    server.quiet_prefect(verbose)
    show_warnings(verbose)
    from sysdiff.flows.remove import remove

    return remove(root, corpus, names)


def _corpora(root) -> list[str]:
    """The corpora of the warehouse (to name them when --corpus is missing)."""
    from sysdiff.flows.queries import query_rows

    rows = query_rows(root, "select distinct corpus from systems order by natural_key(corpus)")
    return rows.column("corpus") or ["none (the warehouse is empty)"]
