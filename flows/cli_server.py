"""``sysdiff server start|stop|status``: the background Prefect server
(:mod:`sysdiff.flows.server`) and the warm runner (:mod:`sysdiff.flows.runner`)."""

from __future__ import annotations

from pathlib import Path

import typer

from sysdiff.flows import server, server_process

server_app = typer.Typer(no_args_is_help=True, help=(
    "The background Prefect server that records every run (started by the first 'sysdiff "
    "run'; SYSDIFF_SERVER=off runs each command with a temporary server instead)."))


@server_app.command("start")
def server_start() -> None:
    """Start the background Prefect server and the warm runner (nothing when they run)."""
    from sysdiff.flows import runner

    try:
        found = server_process.ensure(announce=False, started=runner.spawn_for)
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
    """Stop the warm runner and the background Prefect server.

    The next run starts them again (unless SYSDIFF_SERVER=off)."""
    from sysdiff.flows import runner

    try:
        if not server.state_dir().is_dir():
            typer.echo("no background server was running")
            return
        with server.control_lock():
            lines = [*runner.stop_all(), *server_process.stop()]
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
    lines += runner_lines()
    lines.append("runs report to: " + runs_report_to())
    try:
        lines.append(f"state folder: {server.state_dir()}")
    except OSError as e:
        lines.append(f"state folder: none ({e})")
    return "\n".join(lines)


def runner_lines() -> list[str]:
    """One line per warm runner of the state folder: this installation's, then those of
    other installations (another virtual environment or checkout) that live there too."""
    from sysdiff.flows import runner

    mine = runner.install_key()
    record = runner.alive(mine)
    if isinstance(record, dict):
        rss = server.rss_mib(record["pid"])
        lines = [f"warm runner: running (pid {record['pid']}"
                 + (f", {rss:.0f} MiB" if rss else "") + ")"]
    elif record == "starting":
        lines = ["warm runner: starting"]
    else:
        lines = ["warm runner: not running (the next run starts it)"]
    try:
        keys = sorted(p.stem.removeprefix("runner-")
                      for p in server.state_dir().glob("runner-*.lock"))
    except OSError:
        keys = []
    for key in keys:
        other = runner.alive(key) if key != mine else None
        if isinstance(other, dict):
            rss = server.rss_mib(other["pid"])
            where = other.get("source") or other.get("python") or key
            lines.append(f"warm runner of another installation: running (pid {other['pid']}"
                         + (f", {rss:.0f} MiB" if rss else "") + f", {where}; 'sysdiff "
                         "server stop' stops it)")
    return lines


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
