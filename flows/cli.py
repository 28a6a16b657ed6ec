"""The ``sysdiff`` command line. It only parses options and calls flows or read-only queries.

Read-only commands (``sql``, ``show``, ``examples``, ``check``, ``report``) never import
Prefect, and ``run``/``serve`` check names, files, formats, the run file and the warehouse
lock before they import it. Exit status: 0 done; 1 a ``check`` gate failed; 2 bad input or
a usage error (one line on stderr, or click's usage message, never a traceback); 3 done, but
some systems were skipped (``--keep-going``, ``serve``); 4 an internal error (a bug: one
line, ``--verbose`` for the traceback).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from sysdiff.flows import cli_help, cli_values
from sysdiff.flows.cli_read import check, examples, report, show, sql
from sysdiff.schemas.errors import InputError

cli_values.install()  # option values without pydantic on the usual path (0.1 s a command)
cli_help.install()  # --help shows value names (NAME=FILE, N), not type tags (<str>)

INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT)
INTERNAL_ERROR = 4  # exit status of an internal error (1 is a failed gate, 2 bad input)
HELP = "sysdiff: in-depth comparative evaluation of NLP system outputs."
#: The commands, in the order of ``sysdiff --help``; then the ``server`` group.
COMMANDS = ("run", "sql", "show", "demo", "report", "examples", "check", "rm", "serve")
READ_ONLY = {"sql": sql, "show": show, "report": report, "examples": examples, "check": check}


def build_app(only: str | None = None) -> typer.Typer:
    """The command line: every command; with ``only`` (a read-only command), that command
    alone in the same group, parsed and run the same way without building (or importing)
    the others: ``sysdiff show ...`` answers 0.04 s sooner."""
    app = typer.Typer(add_completion=False, no_args_is_help=True,
                      pretty_exceptions_enable=False, help=HELP,
                      context_settings=cli_help.CONTEXT)
    app.callback()(_group)  # also a group of one command, not a single-command app
    if only is not None:
        app.command()(READ_ONLY[only])
        return app
    from sysdiff.flows.cli_remove import rm
    from sysdiff.flows.cli_runs import demo, run, serve
    from sysdiff.flows.cli_server import server_app

    commands = {**READ_ONLY, "run": run, "demo": demo, "serve": serve, "rm": rm}
    for name in COMMANDS:
        app.command()(commands[name])
    app.add_typer(server_app, name="server")
    return app


def _print_version(value: bool) -> None:
    if value:
        typer.echo(cli_help.version())
        raise typer.Exit(0)


def _group(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print sysdiff's version and exit.")] = False) -> None:
    """sysdiff: in-depth comparative evaluation of NLP system outputs.

    Every command has --help (or -h), which lists every choice of every option."""


def _app_for(argv: list[str]) -> typer.Typer:
    """The app for a command line: a read-only command named first gets its own."""
    return build_app(argv[0] if argv and argv[0] in READ_ONLY else None)


def _forward_to_runner() -> None:
    """``run``, ``demo`` and ``rm`` go to the warm runner when one lives (before anything else is
    imported: the runner parses, checks and runs the same command line)."""
    argv = sys.argv[1:]
    if not argv or argv[0] not in ("run", "demo", "rm") or "prefect" in sys.modules:
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
        status = _app_for(sys.argv[1:])(standalone_mode=False)
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
        sys.exit(INTERNAL_ERROR)


if __name__ == "__main__":
    main()
