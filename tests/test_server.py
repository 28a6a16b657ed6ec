"""The background Prefect server and the warm runner (``sysdiff server start|stop|status``).

The lifecycle test starts a real server in a private state folder: a first run starts it
(two runs racing: one starts it, both use it), the next runs reuse it through the warm
runner (the client never imports Prefect), Prefect records every flow run with its task
runs, a runner declines a client whose import-time environment differs, Ctrl-C and a killed
client interrupt the run, a killed server is replaced, and ``sysdiff server stop`` ends
everything. No timing assertion anywhere: waits have generous deadlines.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sysdiff.flows import prefect_api, runner, server, server_process
from sysdiff.schemas.errors import InputError
from tests.conftest import REPO, SEQUOIA

CLIENT = ("import sys\nfrom sysdiff.flows.cli import main\nsys.argv = ['sysdiff', *sys.argv[1:]]"
          "\ntry:\n    main()\nexcept SystemExit as e:\n    status = e.code\nelse:\n"
          "    status = 0\nprint('CLIENT', status, 'prefect' in sys.modules)\n")


def one_sentence(folder: Path) -> tuple[Path, Path]:
    """The first sentence of the bundled Sequoia key and of one system."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, source in (("key", "key.conllu"), ("a", "fr_core_news_sm-3.8.0.conllu")):
        first = (SEQUOIA / source).read_text().split("\n\n")[0]
        (folder / f"{name}.conllu").write_text(first + "\n\n")
        out.append(folder / f"{name}.conllu")
    return out[0], out[1]


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A private state folder, a free preferred port, no configured Prefect API, the
    background server on; ``env()`` for subprocesses. Stops whatever the test started."""
    home = tmp_path / "state"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH",
                 "PREFECT_LOGGING_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    values = {"SYSDIFF_STATE_DIR": str(home), "SYSDIFF_SERVER": "auto",
              "SYSDIFF_SERVER_PORT": str(port), "PREFECT_HOME": str(tmp_path / "user-prefect"),
              "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    yield home
    with server.control_lock():
        runner.stop_all()
        server_process.stop()


def cli(*argv: str, env: dict | None = None, cwd: Path = REPO) -> tuple[int, str, str, bool]:
    """``sysdiff ARGV`` in a fresh interpreter: (status, stdout, stderr, Prefect imported)."""
    proc = subprocess.run([sys.executable, "-c", CLIENT, *argv], capture_output=True,
                          text=True, cwd=cwd, timeout=600, env=env or dict(os.environ))
    last = [x for x in proc.stdout.splitlines() if x.startswith("CLIENT ")][-1].split()
    return int(last[1]), proc.stdout, proc.stderr, last[2] == "True"


def start_client(*argv: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLIENT, *argv], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env or dict(os.environ))


#: The answers Prefect's own client retries (``prefect.client.base``: a busy server, e.g. its
#: SQLite database locked by another writer, answers 503).
RETRIED = (429, 502, 503)


def api_post(api: str, path: str, body: dict, tries: int = 6) -> list[dict]:
    """POST to the Prefect API; an answer Prefect's client retries is retried the same way
    (up to ``tries`` times, waiting 0.5, 1, 2, ... s)."""
    req = urllib.request.Request(api + path, json.dumps(body).encode(),
                                 {"content-type": "application/json"})
    for attempt in range(tries - 1):
        try:
            return _post(req)
        except urllib.error.HTTPError as e:
            if e.code not in RETRIED:
                raise
            time.sleep(0.5 * 2 ** attempt)
    return _post(req)


def _post(req: urllib.request.Request) -> list[dict]:
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.load(response)


def flow_runs(api: str) -> list[dict]:
    """Every flow run the server recorded, each with the names of its task runs."""
    runs = api_post(api, "/flow_runs/filter", {"sort": "START_TIME_ASC"})
    for run in runs:
        tasks = api_post(api, "/task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}}})
        run["tasks"] = sorted((t["name"], t["state_type"]) for t in tasks)
    return runs


def wait_for(predicate, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def comparing(api: str) -> bool:
    """The newest flow run has compare task runs (its main thread waits on shard tasks)."""
    runs = api_post(api, "/flow_runs/filter", {"sort": "START_TIME_DESC", "limit": 1})
    tasks = api_post(api, "/task_runs/filter", {"flow_runs": {"id": {"any_": [runs[0]["id"]]}}}
                     ) if runs else []
    return sum(t["name"].startswith("compare") for t in tasks) >= 3


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive; the process may end between the two looks
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (FileNotFoundError, ProcessLookupError):
        return False


def runner_children(state: Path) -> list[int]:
    log = next(state.glob("runner-*.log")).read_text()
    return [int(line.split("child ")[1].split(":")[0]) for line in log.splitlines()
            if " child " in line]


def sequoia_times(folder: Path, n: int) -> tuple[Path, Path]:
    """The bundled Sequoia key and one system, each ``n`` times over (sentence ids made
    unique)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, source in (("key", "key.conllu"), ("a", "fr_core_news_sm-3.8.0.conllu")):
        text = (SEQUOIA / source).read_text()
        copies = [text.replace("# sent_id = ", f"# sent_id = c{k}-") for k in range(n)]
        (folder / f"{name}.conllu").write_text("".join(copies))
        out.append(folder / f"{name}.conllu")
    return out[0], out[1]


def head_row(key: Path, system: Path, name: str = "a") -> str:
    """The ``scores`` row (csv) of the head view without punctuation, counted here from
    the two files: words whose head the system gets right, words whose gold UPOS is not
    PUNCT."""
    def words(path: Path) -> list[list[str]]:
        return [x.split("\t") for x in path.read_text().splitlines()
                if x and not x.startswith("#") and x.split("\t")[0].isdigit()]

    pairs = [(g, s) for g, s in zip(words(key), words(system), strict=True) if g[3] != "PUNCT"]
    right = sum(g[6] == s[6] for g, s in pairs)
    return f"{name},head,false,{right},{len(pairs)}"


def scores(root: Path) -> str:
    status, out, err, _ = cli("sql", "-w", str(root), "-f", "csv",
                              "select system, view, punct, n_correct, n_units from scores "
                              "order by all")
    assert status == 0, err
    return out.split("CLIENT")[0]


def test_server_lifecycle(state, tmp_path):
    key, system = one_sentence(tmp_path / "corpus")
    run = ["run", "--key", str(key), "--system", f"a={system}", "--corpus", "one"]
    port = int(os.environ["SYSDIFF_SERVER_PORT"])

    status, out, _, imported = cli("server", "status")
    assert status == 1 and "Prefect server: not running" in out and not imported

    # the preferred port is taken: the server picks another one
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        # two first runs race: one starts the server, the other waits for it, both use it
        racers = [start_client(*run, "-w", str(tmp_path / f"race{i}")) for i in (1, 2)]
        results = [(p.wait(timeout=600), *p.communicate()) for p in racers]
    for code, _out, err in results:
        assert code == 0, err
    started = [err for _, _, err in results if "started a background Prefect server" in err]
    assert len(started) == 1, [err for _, _, err in results]
    info = json.loads((state / "server.json").read_text())
    assert info["port"] != port and server.healthy(info["port"])
    assert f"http://127.0.0.1:{info['port']}" in started[0]

    # a later run goes to the warm runner: this process never imports Prefect
    assert isinstance(runner.wait_ready(server.live_server().api_url), dict)
    status, out, err, imported = cli(*run, "-w", str(tmp_path / "warm"))
    assert status == 0, err
    assert not imported and "started a background" not in err
    assert "sysdiff: one" in out and len(runner_children(state)) >= 1
    warm = scores(tmp_path / "warm")

    status, out, _, _ = cli("server", "status")
    assert status == 0 and f"http://127.0.0.1:{info['port']}" in out
    assert f"(pid {info['pid']}" in out and "warm runner: running" in out

    # an unchanged rerun: a flow run with no task run (nothing to recompute)
    assert cli(*run, "-w", str(tmp_path / "warm"))[0] == 0

    # Prefect recorded every flow run, with its task runs
    runs = flow_runs(f"http://127.0.0.1:{info['port']}/api")
    assert [r["state_type"] for r in runs] == ["COMPLETED"] * 4
    assert {r["flow_id"] for r in runs} == {runs[0]["flow_id"]}
    computed = [("compare 0", "COMPLETED"), ("frame of the key", "COMPLETED"),
                ("ingest one __key__", "COMPLETED"), ("ingest one a", "COMPLETED")]
    assert [r["tasks"] for r in runs] == [computed, computed, computed, []]

    # -v goes to the runner too (its child raises its own log levels): Prefect's INFO
    # lines and sysdiff's step times, the same tables
    status, _, err, imported = cli(*run, "-w", str(tmp_path / "warm-v"), "-v")
    assert status == 0 and not imported and "declined" not in err, err
    assert "Task run 'compare 0' - Finished in state Completed()" in err
    assert "sysdiff: ingest: 2 steps in" in err
    assert scores(tmp_path / "warm-v") == warm

    # a client whose import-time environment differs runs the command itself, and the
    # tables are the same as the runner's
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "elsewhere"))
    status, _, err, imported = cli(*run, "-w", str(tmp_path / "own"), "-v", env=env)
    assert status == 0 and imported, err
    assert "warm runner declined (import-time environment differs: PYTHONPATH)" in err
    assert scores(tmp_path / "own") == warm

    # bad input through the runner: one line, exit 2, nothing written
    status, _, err, imported = cli("run", "--key", str(tmp_path / "missing.conllu"),
                                   "--system", f"a={system}", "--corpus", "one", "-w",
                                   str(tmp_path / "bad"))
    assert (status, imported) == (2, False)
    assert err.strip().splitlines() == [f"sysdiff: error: {tmp_path / 'missing.conllu'}: "
                                        "no such file"]
    assert not (tmp_path / "bad").exists()


def test_interrupts_reach_the_runner_child(state, tmp_path):
    """Ctrl-C on the client interrupts its run in the runner (exit 130, nothing committed);
    a client killed outright interrupts it too."""
    api = server_process.ensure(announce=False, started=runner.spawn_for).api_url
    assert isinstance(runner.wait_ready(api), dict)
    # 5 x 456 sentences, one compare task each: the run still compares when the API (which
    # lags behind the run on a loaded machine) shows its first compare task runs
    key, system = sequoia_times(tmp_path / "big", 5)
    slow = ["run", "--key", str(key), "--system", f"a={system}", "--corpus", "big",
            "--shard-sents", "1"]
    for sig, expected in ((signal.SIGINT, 130), (signal.SIGKILL, -9)):
        before = set(runner_children(state))
        root = tmp_path / f"wh-{sig.name}"
        client = start_client(*slow, "-w", str(root))
        child = wait_for(lambda b=before: set(runner_children(state)) - b, "the run's child")
        pid = child.pop()
        wait_for(lambda: comparing(api), "the run to compare shards", timeout=300)
        client.send_signal(sig)
        out, err = client.communicate(timeout=120)
        if sig == signal.SIGINT:
            assert "CLIENT 130 False" in out, err  # the client's status; Prefect not imported
            assert "interrupted; the warehouse keeps its previous results" in err
        else:
            assert client.returncode == expected
        wait_for(lambda p=pid: not alive(p), "the child to end", timeout=120)
        assert not (root / "manifest.json").exists()


def test_a_killed_server_is_replaced_and_stop_ends_everything(state, tmp_path):
    key, system = one_sentence(tmp_path / "corpus")
    run = ["run", "--key", str(key), "--system", f"a={system}", "--corpus", "one"]
    first = server_process.ensure(announce=False, started=runner.spawn_for)
    record = runner.wait_ready(first.api_url)
    os.kill(first.pid, signal.SIGKILL)
    wait_for(lambda: server.running() is None, "the server's lock to be released")
    assert (state / "server.json").exists()  # stale: its process is gone
    status, out, _, _ = cli("server", "status")
    assert status == 1 and "not running" in out

    status, _, err, _ = cli(*run, "-w", str(tmp_path / "wh"))
    assert status == 0, err
    assert "started a background Prefect server" in err
    second = server.running()
    assert second is not None and second.pid != first.pid
    # the runner of the dead server (another API address) was replaced
    new = wait_for(lambda: isinstance(runner.alive(), dict) and runner.alive(), "a runner")
    assert not alive(record["pid"]) or new["pid"] == record["pid"]
    assert new["api_url"] == second.api_url

    status, out, _, imported = cli("server", "stop")
    assert status == 0 and not imported
    assert f"stopped the Prefect server at {second.ui_url} (pid {second.pid})" in out
    assert "stopped the warm runner" in out
    wait_for(lambda: not alive(second.pid) and not alive(new["pid"]), "both to end", 30)
    assert not (state / "server.json").exists() and not list(state.glob("runner-*.sock"))
    assert cli("server", "status")[0] == 1
    assert "no background server was running" in cli("server", "stop")[1]


def test_a_stale_pid_file_is_never_used_to_kill(state):
    """server.pid names a live process that is not a server holding the lock: stop kills
    nothing, status says not running, and the stale files go."""
    innocent = subprocess.Popen(["sleep", "60"])
    try:
        state.mkdir(parents=True)
        (state / "server.pid").write_text(f"{innocent.pid}\n")
        (state / "server.json").write_text(json.dumps({
            "pid": innocent.pid, "port": 1, "started": time.time(), "home": str(state),
            "log": str(state / "server.log"), "prefect": "3"}))
        status, out, _, _ = cli("server", "status")
        assert status == 1 and "not running" in out
        status, out, _, _ = cli("server", "stop")
        assert status == 0 and "no background server was running" in out
        assert innocent.poll() is None
        assert not (state / "server.pid").exists() and not (state / "server.json").exists()
    finally:
        innocent.kill()
        innocent.wait()


def test_a_server_that_cannot_start_falls_back_to_a_temporary_one(state, tmp_path):
    """The README's demo on a machine where the background server does not come up: one
    warning line, the run completes with Prefect's temporary server, and the next run does
    not try again for a while."""
    key, system = one_sentence(tmp_path / "corpus")
    run = ["run", "--key", str(key), "--system", f"a={system}", "--corpus", "one"]
    env = dict(os.environ, SYSDIFF_SERVER_START_TIMEOUT="0")
    status, out, err, imported = cli(*run, "-w", str(tmp_path / "wh"), env=env)
    assert status == 0 and imported, err
    assert "warning: the background Prefect server could not be started" in err
    assert "this run uses a temporary server" in err and "sysdiff: one" in out
    assert server.running() is None and (state / "failed.json").exists()
    wait_for(lambda: runner.alive() is None, "the runner started with it to exit")
    assert prefect_api.api_for_run() == (None, "ephemeral")  # not retried automatically


def test_where_runs_go(state, tmp_path, monkeypatch):
    """The API a run uses: a configured one always wins (environment, .env, prefect.toml,
    pyproject.toml, active profile); SYSDIFF_SERVER=off gives the temporary server."""
    monkeypatch.chdir(tmp_path)
    assert server.explicit_api_url() is None
    profiles = Path(os.environ["PREFECT_HOME"]) / "profiles.toml"
    profiles.parent.mkdir(parents=True)
    profiles.write_text('active = "work"\n[profiles.work]\n'
                        'PREFECT_API_URL = "http://profile:4200/api"\n')
    assert server.explicit_api_url() == "http://profile:4200/api"
    (tmp_path / "pyproject.toml").write_text('[tool.prefect.api]\nurl = "http://py:1/api"\n')
    assert server.explicit_api_url() == "http://py:1/api"
    (tmp_path / "prefect.toml").write_text('[api]\nurl = "http://toml:1/api"\n')
    assert server.explicit_api_url() == "http://toml:1/api"
    (tmp_path / ".env").write_text("PREFECT_API_URL='http://dotenv:1/api'\n")
    assert server.explicit_api_url() == "http://dotenv:1/api"
    monkeypatch.setenv("PREFECT_API_URL", "http://env:1/api")
    assert server.explicit_api_url() == "http://env:1/api"
    assert prefect_api.api_for_run() == ("", "explicit")
    monkeypatch.delenv("PREFECT_API_URL")
    for name in (".env", "prefect.toml", "pyproject.toml"):
        (tmp_path / name).unlink()
    profiles.unlink()
    monkeypatch.setenv("SYSDIFF_SERVER", "off")
    assert prefect_api.api_for_run() == (None, "ephemeral")
    assert not (state / "server.json").exists()
    monkeypatch.setenv("SYSDIFF_SERVER", "sometimes")
    with pytest.raises(InputError, match="expected 'auto'"):
        server.mode()


def test_serve_starts_the_background_server_and_its_deployment_runs(state, tmp_path):
    """``sysdiff serve`` with no server running and none configured: it starts the background
    server, serves its deployment there, and a run of the deployment writes the
    warehouse. A system file found bad while it is read is skipped with the one line the
    command line prints, never a traceback (the scheduled run logs at INFO)."""
    key, system = one_sentence(tmp_path / "watch" / "one")
    (key.parent / "systems").mkdir()
    system.rename(key.parent / "systems" / "a.conllu")
    lines = (key.parent / "systems" / "a.conllu").read_text().split("\n")
    cut = [i for i, x in enumerate(lines) if x[:1].isdigit()][5]  # past the format check
    lines[cut] = lines[cut].replace("\t", " ", 3)
    bad = key.parent / "systems" / "bad.conllu"
    bad.write_text("\n".join(lines))
    root = tmp_path / "wh"
    proc = start_client("serve", "--watch", str(tmp_path / "watch"), "-w", str(root))
    try:
        live = wait_for(server.live_server, "the background server", timeout=300)
        api = live.api_url
        deployments = wait_for(lambda: api_post(api, "/deployments/filter", {}),
                               "the deployment", timeout=300)
        assert [d["name"] for d in deployments] == ["sysdiff-nightly"]
        assert deployments[0]["schedules"][0]["schedule"]["cron"] == "0 2 * * *"
        run = api_post(api, f"/deployments/{deployments[0]['id']}/create_flow_run", {})
        done = wait_for(lambda: [r for r in api_post(api, "/flow_runs/filter", {})
                                 if r["id"] == run["id"] and r["state_type"] in
                                 ("COMPLETED", "FAILED", "CRASHED")], "the run", timeout=300)
        assert done[0]["state_type"] == "COMPLETED"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert f"started a background Prefect server at {live.ui_url}" in err
    assert head_row(key.parent / "key.conllu", key.parent / "systems" / "a.conllu") in \
        scores(root).splitlines()
    about_bad = [x for x in err.splitlines() if "bad.conllu" in x]
    assert len(about_bad) == 1 and "Traceback" not in err, err
    assert about_bad[0].startswith(f"sysdiff: warning: system 'bad' skipped: {bad}:{cut + 1}: ")


def unwritable_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a user whose home and state folders cannot be written (their
    paths go through a regular file: even root cannot create them)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "XDG_STATE_HOME")}
    env.update(HOME=str(blocker / "home"), SYSDIFF_STATE_DIR=str(blocker / "state"), **extra)
    return env


def test_an_unwritable_home_runs_with_a_temporary_server_and_one_line(state, tmp_path):
    """HOME and the state folder cannot be written: the run completes with Prefect's
    temporary server in a throwaway home (removed at exit), with one warning line and no
    traceback."""
    key, system = one_sentence(tmp_path / "corpus")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = unwritable_env(tmp_path, TMPDIR=str(tmp))
    status, out, err, imported = cli("run", "--key", str(key), "--system", f"a={system}",
                                     "--corpus", "one", "-w", str(tmp_path / "wh"), env=env)
    assert status == 0 and imported, err
    warnings = [x for x in err.splitlines() if "warning" in x.lower()]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("sysdiff: warning: the background Prefect server cannot keep "
                                  f"its state ({tmp_path / 'a-file'}")
    assert "this run uses a temporary server" in warnings[0]
    assert f"Prefect's home {tmp_path / 'a-file' / 'home' / '.prefect'} cannot" in warnings[0]
    assert "Traceback" not in err and "sysdiff: one" in out
    left = [p.name for p in tmp.iterdir()]  # the throwaway Prefect home is gone; the
    assert left == [f"sysdiff-views-{os.getuid()}"]  # views' private cache stays
    assert head_row(key, system) in scores(tmp_path / "wh").splitlines()


def test_server_commands_with_an_unwritable_state_folder(state, tmp_path):
    """One line each, never a traceback, and nothing that would take a run down."""
    env = unwritable_env(tmp_path)
    status, _, err, imported = cli("server", "start", env=env)
    assert (status, imported) == (1, False)
    assert err.strip().splitlines() == [
        "sysdiff: error: the background Prefect server cannot keep its state "
        f"({tmp_path / 'a-file' / 'state'}: Not a directory); set SYSDIFF_STATE_DIR to a "
        "writable folder"]
    status, out, err, _ = cli("server", "status", env=env)
    assert status == 1 and not err
    assert "Prefect server: not running (its state folder cannot be written)" in out
    assert "runs report to: a temporary server in each process (the state folder" in out
    status, out, err, _ = cli("server", "stop", env=env)
    assert status == 0 and out.startswith("no background server was running") and not err
    (tmp_path / "watch").mkdir()
    status, _, err, imported = cli("serve", "--watch", str(tmp_path / "watch"), "-w",
                                   str(tmp_path / "wh"), env=env)
    assert (status, imported) == (2, False)
    assert err.strip().splitlines() == [
        "sysdiff: error: a schedule needs a Prefect server, and the background one cannot "
        f"keep its state ({tmp_path / 'a-file' / 'state'}: Not a directory): set "
        "SYSDIFF_STATE_DIR to a writable folder, or PREFECT_API_URL to a server"]
    assert not (tmp_path / "wh").exists()
