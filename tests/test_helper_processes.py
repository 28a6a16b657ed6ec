"""A helper process that dies never makes a verdict false (issue 20, points 4 and 9).

Real processes in a private state folder (the ``state`` fixture of ``test_server.py``): the
background Prefect server or the warm runner is killed with SIGKILL while a run waits at its
compare step (``SYSDIFF_PAUSE_AT``: the run touches a file and goes on once the test removes
it, so "mid-run" is exact). The run's verdict must be the warehouse's: exit 0 with the tables
of an undisturbed run and one line saying which helper was lost, within seconds. A process
that answers ``/api/health`` on the server's port is never taken for sysdiff's server, and a
refusal stays one line whatever Prefect's workers still had to send.
"""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sysdiff.flows import runner, server, server_process
from tests.conftest import SEQUOIA
from tests.test_scale import all_tables
from tests.test_server import cli, start_client, state, wait_for  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("state")  # a private state folder, stopped at the end

SYSTEMS = {"sm": SEQUOIA / "fr_core_news_sm-3.8.0.conllu",
           "md": SEQUOIA / "fr_core_news_md-3.8.0.conllu"}
WITHIN = 10.0  # seconds from the helper's death to the command's exit


def assert_same_tables(a: Path, b: Path) -> None:
    """Every table of warehouse ``a`` equals ``b``'s (rows in one order, times dropped)."""
    ta, tb = all_tables(a), all_tables(b)
    assert sum(t.height for t in ta.values()) > 0
    assert [n for n in ta if not ta[n].equals(tb[n])] == []


def run_args(root: Path, systems: dict[str, Path] = SYSTEMS) -> list[str]:
    return ["run", "--key", str(SEQUOIA / "key.conllu"), "--corpus", "seq", "-w", str(root),
            *[f"--system={name}={path}" for name, path in systems.items()]]


def start_paused(args: list[str], flag: Path, point: str = "compare", **env: str
                 ) -> subprocess.Popen:
    """A client whose run waits at ``point`` until ``flag`` is removed."""
    proc = start_client(*args, env=dict(os.environ, SYSDIFF_PAUSE_AT=f"{point}:{flag}",
                                        **env))
    wait_for(flag.exists, f"the run to reach its {point} step", timeout=300)
    return proc


def resume_and_wait(proc: subprocess.Popen, flag: Path) -> tuple[int, str, str, bool, float]:
    """Let the paused run go on; (status, stdout, stderr, Prefect imported by the client,
    seconds until it exited)."""
    start = time.monotonic()
    flag.unlink()
    out, err = proc.communicate(timeout=300)
    took = time.monotonic() - start
    last = [x for x in out.splitlines() if x.startswith("CLIENT ")][-1].split()
    return int(last[1]), out, err, last[2] == "True", took


def said(err: str) -> list[str]:
    """stderr's lines but sysdiff's notes (views not evaluated)."""
    return [x for x in err.splitlines() if x.strip() and not x.startswith("sysdiff: note:")]


def server_with_runner(use_runner: bool) -> server.Server:
    live = server_process.ensure(announce=False, started=runner.spawn_for)
    if use_runner:
        assert isinstance(runner.wait_ready(live.api_url), dict)
    return live


@pytest.mark.parametrize("use_runner", [False, True], ids=["own-process", "warm-runner"])
def test_a_server_killed_mid_run_leaves_the_runs_verdict(tmp_path, use_runner):
    """kill -9 of the background server while the run compares: the run commits, says so in
    one line and exits 0 within seconds (no minute of retries, no Prefect error lines)."""
    live = server_with_runner(use_runner)
    env = {} if use_runner else {"SYSDIFF_RUNNER": "off"}
    clean = tmp_path / "clean"
    status, _, err, _ = cli(*run_args(clean), env=dict(os.environ, **env))
    assert status == 0, err
    flag, root = tmp_path / "paused", tmp_path / "wh"
    proc = start_paused(run_args(root), flag, **env)
    os.kill(live.pid, signal.SIGKILL)
    status, out, err, imported, took = resume_and_wait(proc, flag)
    assert status == 0, err
    assert imported is not use_runner  # the run went where the test meant it to
    assert said(err) == [f"sysdiff: warning: the background Prefect server (pid {live.pid}) "
                         "died during the run; the run's results were committed (the next "
                         "run starts a new server)"]
    assert "sysdiff: seq" in out  # the run's summary, read from the committed tables
    assert took < WITHIN, took
    assert_same_tables(root, clean)


def test_a_runner_killed_mid_run_leaves_the_runs_verdict(tmp_path):
    """kill -9 of the warm runner while its child runs: the child commits and reports its own
    exit status; the client says the runner was lost, in one line, and exits 0."""
    server_with_runner(True)
    record = runner.alive()
    assert isinstance(record, dict)
    clean = tmp_path / "clean"
    assert cli(*run_args(clean))[0] == 0
    flag, root = tmp_path / "paused", tmp_path / "wh"
    proc = start_paused(run_args(root), flag)
    os.kill(record["pid"], signal.SIGKILL)
    status, out, err, imported, took = resume_and_wait(proc, flag)
    assert (status, imported) == (0, False), err
    assert said(err) == [f"sysdiff: warning: the warm runner (pid {record['pid']}) died during "
                         "the command; the command went on in its own process and finished "
                         "(the next run starts a new runner)"]
    assert "sysdiff: seq" in out and took < WITHIN, took
    assert_same_tables(root, clean)


def test_a_lost_runner_and_child_after_the_commit_is_a_commit(tmp_path):
    """The runner is killed, then its child dies right after the manifest was replaced
    (``SYSDIFF_CRASH_AT=commit-catalog``): no status reaches the client, so its verdict comes
    from the manifest, which names the run: committed, exit 0."""
    server_with_runner(True)
    record = runner.alive()
    clean = tmp_path / "clean"
    assert cli(*run_args(clean))[0] == 0
    flag, root = tmp_path / "paused", tmp_path / "wh"
    proc = start_paused(run_args(root), flag, SYSDIFF_CRASH_AT="commit-catalog")
    os.kill(record["pid"], signal.SIGKILL)
    status, _, err, _, took = resume_and_wait(proc, flag)
    assert status == 0, err
    assert said(err) == ["sysdiff: warning: the warm runner and the command's process stopped "
                         f"(see {runner.files()['log']}) after the run committed its results"]
    assert took < WITHIN, took
    assert_same_tables(root, clean)


def test_a_run_killed_before_its_commit_is_no_commit(tmp_path):
    """The same with the child killed before the manifest is replaced: the client says the
    warehouse keeps its previous results (exit 4, an internal error), and it does."""
    server_with_runner(True)
    record = runner.alive()
    flag, root = tmp_path / "paused", tmp_path / "wh"
    proc = start_paused(run_args(root), flag, SYSDIFF_CRASH_AT="commit-moving")
    os.kill(record["pid"], signal.SIGKILL)
    status, _, err, _, _ = resume_and_wait(proc, flag)
    assert status == 4
    assert said(err) == ["sysdiff: error: the warm runner stopped during the command (see "
                         f"{runner.files()['log']}); the warehouse keeps its previous results"]
    assert not (root / "manifest.json").exists()


class Squatter(http.server.ThreadingHTTPServer):
    """Answers ``/api/health`` with ``true`` and anything else with ``{}``; records every
    request."""

    def __init__(self, port: int) -> None:
        self.requests: list[str] = []
        squatter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                squatter.requests.append(f"{self.command} {self.path}")
                size = int(self.headers.get("content-length") or 0)
                self.rfile.read(size)
                body = b"true" if self.path == "/api/health" else b"{}"
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, *_args: object) -> None:
                pass

        super().__init__(("127.0.0.1", port), Handler)


def hold_lock(path: Path) -> subprocess.Popen:
    """A process (not a Prefect server) that holds ``path``'s lock, as a server shutting
    down still does after it closed its port."""
    code = ("import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_squatter_on_the_servers_port_is_never_taken_for_it(tmp_path):
    """The server's record and lock say a server lives, but what answers on its port is a
    stranger answering ``/api/health``: ``server status`` says not running, and a run never
    sends it anything; it starts sysdiff's own server on another port."""
    first = server_process.ensure(announce=False)
    os.kill(first.pid, signal.SIGKILL)
    lock = server.state_dir() / "server.pid"
    wait_for(lambda: not server.held(lock), "the server's lock to be free")
    holder = hold_lock(lock)
    squatter = Squatter(first.port)
    threading.Thread(target=squatter.serve_forever, daemon=True).start()
    try:
        assert server.healthy(first.port)  # it answers the health check
        squatter.requests.clear()
        status, out, _, _ = cli("server", "status")
        assert status == 1 and "Prefect server: not running" in out
        key = tmp_path / "one" / "key.conllu"
        key.parent.mkdir()
        key.write_text((SEQUOIA / "key.conllu").read_text().split("\n\n")[0] + "\n\n")
        status, out, err, _ = cli("run", "--key", str(key), "--system", f"a={key}",
                                  "--corpus", "one", "-w", str(tmp_path / "wh"),
                                  env=dict(os.environ, SYSDIFF_RUNNER="off"))
        assert status == 0 and "sysdiff: one" in out, err
        ours = server.live_server()
        assert ours is not None and ours.port != first.port
        assert said(err) == [f"sysdiff: started a background Prefect server at {ours.ui_url} "
                             "(flow runs are recorded there; 'sysdiff server stop' stops it, "
                             "SYSDIFF_SERVER=off runs without it)"]
        assert all(r.startswith("GET ") for r in squatter.requests), squatter.requests
        assert "GET /api/health" not in squatter.requests
    finally:
        squatter.shutdown()
        squatter.server_close()
        holder.kill()
        holder.wait()


def broken(source: Path, folder: Path, at: int) -> tuple[Path, int]:
    """``source`` with the token line after its ``at``-th line cut into space-separated
    columns (found by the reader, not by the format check before the run); the file and
    the line's number."""
    lines = source.read_text().split("\n")
    where = next(i for i in range(at, len(lines)) if lines[i][:1].isdigit())
    lines[where] = lines[where].replace("\t", " ", 3)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / source.name
    path.write_text("\n".join(lines))
    return path, where + 1


def test_a_refusal_stays_one_line_when_the_server_dies(tmp_path):
    """Bad input found while reading, with the server killed as the run starts (Prefect's
    event worker then holds every event of the run): exit 2, the refusal's one line and
    nothing of Prefect's, within seconds."""
    live = server_with_runner(False)
    bad, line = broken(SYSTEMS["md"], tmp_path / "bad", 3000)
    flag, root = tmp_path / "paused", tmp_path / "wh"
    proc = start_paused(run_args(root, {"sm": SYSTEMS["sm"], "md": bad}), flag,
                        point="evaluate", SYSDIFF_RUNNER="off")
    os.kill(live.pid, signal.SIGKILL)
    status, _, err, _, took = resume_and_wait(proc, flag)
    assert status == 2
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"sysdiff: error: {bad}:{line}: "), err
    assert took < WITHIN, took
    assert not (root / "manifest.json").exists()


def test_prefect_services_never_warn_without_verbose():
    """``quiet_prefect`` silences the loggers of Prefect's queue services ("EventsWorker -
    Still processing items"), which log to the root logger, unless -v."""
    import logging

    saved = dict(os.environ)
    try:
        server.quiet_prefect(False)
        assert not any(logging.getLogger(n).isEnabledFor(logging.ERROR)
                       for n in server.SERVICE_LOGGERS)
        assert os.environ["PREFECT_INTERNAL_LOGGING_LEVEL"] == "CRITICAL"
        server.quiet_prefect(True)
        assert all(logging.getLogger(n).isEnabledFor(logging.WARNING)
                   for n in server.SERVICE_LOGGERS)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        for name in server.SERVICE_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_the_runner_passes_exit_statuses_on_unchanged(tmp_path):
    """Through the warm runner a command ends as in its own process: 2 for bad input, 3 when
    systems were skipped, 4 for an internal error, each with the same lines on stderr."""
    server_with_runner(True)
    bad, _ = broken(SYSTEMS["md"], tmp_path / "bad", 3000)
    cases = {
        "bad input": (run_args(tmp_path / "{}-2", {"md": bad}), {}),
        "skipped": ([*run_args(tmp_path / "{}-3", {"sm": SYSTEMS["sm"], "md": bad}),
                     "--keep-going"], {}),
        "internal": (run_args(tmp_path / "{}-4"), {"SYSDIFF_INGEST_THREADS": "many"}),
    }
    seen = {}
    for name, (args, extra) in cases.items():
        for how, runner_env in (("runner", {}), ("own", {"SYSDIFF_RUNNER": "off"})):
            argv = [a.replace("{}", how) for a in args]
            status, _, err, imported = cli(*argv, env=dict(os.environ, **extra, **runner_env))
            assert imported is (how == "own"), (name, how, err)
            seen[name, how] = (status, said(err))
        assert seen[name, "runner"] == seen[name, "own"], name
    assert [seen[name, "own"][0] for name in cases] == [2, 3, 4]


def test_serve_once_keeps_its_verdict_when_the_server_dies(tmp_path):
    """``serve --once`` over two corpora, the server killed while the first one compares:
    the first is committed, the second cannot start (one line: why), the pass ends with its
    summary, exit 3, one line on the lost server, within seconds."""
    live = server_with_runner(False)
    for corpus in ("c1", "c2"):
        systems = tmp_path / "watch" / corpus / "systems"
        systems.mkdir(parents=True)
        (systems.parent / "key.conllu").write_text((SEQUOIA / "key.conllu").read_text())
        (systems / "sm.conllu").write_text(SYSTEMS["sm"].read_text())
    flag, root = tmp_path / "paused", tmp_path / "wh"
    proc = start_paused(["serve", "--watch", str(tmp_path / "watch"), "--once", "-w",
                         str(root)], flag)
    os.kill(live.pid, signal.SIGKILL)
    status, out, err, _, took = resume_and_wait(proc, flag)
    assert status == 3, err
    assert "evaluated 1 corpora: c1; skipped 1 corpora and 0 system files" in out
    lost = f"the background Prefect server (pid {live.pid})"
    assert said(err) == [
        f"sysdiff: warning: corpus 'c2' skipped: {lost} died before the run could start; "
        "nothing was committed (the next run starts a new server)",
        f"sysdiff: warning: {lost} died during the run; the pass went on to its end (the next "
        "run starts a new server)"]
    assert took < WITHIN, took
    status, out, _, _ = cli("sql", "-w", str(root), "-f", "csv",
                            "select distinct corpus from systems")
    assert status == 0 and out.split("CLIENT")[0].split() == ["corpus", "c1"]


def test_the_warm_runner_has_the_tables_ddl_before_it_forks_a_run():
    """``warm_up`` (the runner, before any child) leaves the tables' DuckDB column types
    computed: a child's commit reuses them; they equal a computation afresh."""
    code = ("from sysdiff.flows import catalog\n"
            "from sysdiff.flows.runner_process import warm_up\n"
            "assert catalog._DDL is None\n"
            "warm_up()\n"
            "warmed = catalog._DDL\n"
            "catalog._DDL = None\n"
            "print(warmed is not None and warmed == catalog.table_ddl() and len(warmed))\n")
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[-1]) >= 40  # every table of every task
