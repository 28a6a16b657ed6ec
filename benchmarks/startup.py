"""Fixed costs as a user sees them: wall time of whole ``sysdiff`` commands.

    python benchmarks/startup.py [--repeat 7] [--baseline-repeat 3] [--cold-repeat 1]

Everything runs in a private state folder (its own background Prefect server on a free
port, stopped at the end) with no configured Prefect API, in this order:

- a 1-sentence run, **cold**: no server yet (the run starts the background server and the
  warm runner), ``--cold-repeat`` times (the server is stopped between them);
- the same run **warm** (server and runner up), each time into a new warehouse (every table
  computed), and an unchanged rerun (nothing to recompute);
- the bundled Sequoia (key + 4 parsers), warm: into a new warehouse, and an unchanged rerun;
- the read-only commands on the Sequoia warehouse: ``sql "select 1"``, ``show scores``,
  ``examples``, ``check``;
- the Python API on the 1-sentence corpus: ``sysdiff.evaluate`` called ``--repeat`` + 1
  times in one fresh interpreter (a script evaluating each checkpoint): its first call,
  imports included, against the command line in its own process; its later calls against
  the warm runner;
- baselines in the same run: the 1-sentence run with the background server but every
  command in its own process (``SYSDIFF_RUNNER=off``), and with Prefect's temporary server
  in each process (``SYSDIFF_SERVER=off``: how every run worked before).

Each figure is the median of the wall times of separate processes (``--repeat`` runs, the
baselines ``--baseline-repeat``). Targets (issue 13): warm run <= 2 s; sql, show, examples,
check <= 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEQUOIA = REPO / "data" / "sequoia"
RUN_TARGET, READ_TARGET = 2.0, 0.5


def sysdiff_command() -> list[str]:
    """The installed ``sysdiff`` script beside this Python, else ``python -m sysdiff``."""
    script = Path(sys.executable).parent / "sysdiff"
    return [str(script)] if script.exists() else [sys.executable, "-m", "sysdiff"]


def one_sentence(folder: Path) -> list[str]:
    """A 1-sentence key and system (the first sentence of the bundled Sequoia files); the
    run's arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in (("key", "key.conllu"), ("a", "fr_core_news_sm-3.8.0.conllu")):
        first = (SEQUOIA / source).read_text(encoding="utf-8").split("\n\n")[0]
        (folder / f"{name}.conllu").write_text(first + "\n\n", encoding="utf-8")
    return ["run", "--key", str(folder / "key.conllu"), "--system",
            f"a={folder / 'a.conllu'}", "--corpus", "one"]


class Bench:
    """Runs ``sysdiff`` commands in the benchmark's environment and times them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.cmd, self.n = tmp, sysdiff_command(), 0
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PREFECT_", "SYSDIFF_"))}
        self.env.update(SYSDIFF_STATE_DIR=str(tmp / "state"), SYSDIFF_SERVER_PORT=str(port),
                        PREFECT_HOME=str(tmp / "prefect-home"),
                        PREFECT_SERVER_ANALYTICS_ENABLED="false")

    def warehouse(self) -> Path:
        self.n += 1
        return self.tmp / f"wh{self.n}"

    def time(self, argv: list[str], **env: str) -> float:
        """Wall time of one command (it must succeed)."""
        start = time.perf_counter()
        proc = subprocess.run([*self.cmd, *argv], env={**self.env, **env}, cwd=self.tmp,
                              capture_output=True, text=True)
        took = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"failed ({proc.returncode}): sysdiff {' '.join(argv)}\n"
                             f"{proc.stderr}")
        return took

    def start(self) -> None:
        """Start the background server and the warm runner (what a cold run does)."""
        proc = subprocess.run([*self.cmd, "server", "start"], env=self.env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"sysdiff server start failed:\n{proc.stderr}")

    def stop(self) -> None:
        subprocess.run([*self.cmd, "server", "stop"], env=self.env, capture_output=True)

    def wait_runner(self) -> None:
        """Until the warm runner listens (started with the server, it may still import)."""
        for _ in range(1200):
            out = subprocess.run([*self.cmd, "server", "status"], env=self.env,
                                 capture_output=True, text=True).stdout
            if "warm runner: running" in out:
                return
            time.sleep(0.1)
        raise SystemExit("the warm runner did not start")


#: A script's use of the API: ``n`` calls of ``sysdiff.evaluate`` in one interpreter; prints
#: their wall times as JSON, the first one with the imports.
API_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import sysdiff
key, system, root, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
times = []
for i in range(n):
    t = time.perf_counter()
    sysdiff.evaluate(key=key, systems={"a": system}, corpus=f"api{i}", warehouse=f"{root}{i}")
    times.append(time.perf_counter() - (t0 if i == 0 else t))
print(json.dumps(times))
"""


def api_times(bench: Bench, corpus: Path, n: int) -> tuple[list[float], list[float]]:
    """The API's first call (imports included) and ``n`` later calls, in one fresh
    interpreter with the background server up."""
    proc = subprocess.run([sys.executable, "-c", API_SCRIPT, str(corpus / "key.conllu"),
                           str(corpus / "a.conllu"), str(bench.tmp / "api-wh"), str(n + 1)],
                          env=bench.env, cwd=bench.tmp, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the API script failed ({proc.returncode}):\n{proc.stderr}")
    times = json.loads(proc.stdout)
    return times[:1], times[1:]


def median(times: list[float]) -> float:
    return statistics.median(times)


def row(label: str, times: list[float], target: float | None = None) -> str:
    spread = f"{min(times):.2f}-{max(times):.2f}" if len(times) > 1 else ""
    verdict = ""
    if target is not None:
        verdict = f"target <= {target:g} s: " + ("met" if median(times) <= target else
                                                  f"MISSED by {median(times) - target:.2f} s")
    return f"| {label} | {median(times):.2f} s | {len(times)} | {spread} | {verdict} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="runs per warm figure")
    ap.add_argument("--baseline-repeat", type=int, default=3,
                    help="runs per baseline figure (a temporary server costs ~10 s a run)")
    ap.add_argument("--cold-repeat", type=int, default=1,
                    help="cold runs (each starts a server: ~10-20 s; 0: none, the first warm "
                    "run then starts the server)")
    args = ap.parse_args()
    lines = []
    with tempfile.TemporaryDirectory(prefix="sysdiff-startup-") as name:
        tmp = Path(name)
        bench = Bench(tmp)
        one = one_sentence(tmp / "corpus")
        sequoia = ["run", str(SEQUOIA / "sequoia.toml")]
        try:
            cold = []
            for _ in range(args.cold_repeat):
                bench.stop()
                cold.append(bench.time([*one, "-w", str(bench.warehouse())]))
            if not cold:
                bench.start()
            bench.wait_runner()
            fresh, rerun = [], []
            for _ in range(args.repeat):
                root = str(bench.warehouse())
                fresh.append(bench.time([*one, "-w", root]))
                rerun.append(bench.time([*one, "-w", root]))
            seq_fresh, seq_rerun = [], []
            seq_root = ""
            for _ in range(args.repeat):
                seq_root = str(bench.warehouse())
                seq_fresh.append(bench.time([*sequoia, "-w", seq_root]))
                seq_rerun.append(bench.time([*sequoia, "-w", seq_root]))
            reads = {
                'sql "select 1"': ["sql", "select 1"],
                "show scores": ["show", "scores"],
                "examples (new errors of a pair)": [
                    "examples", "--sys1", "seqsm@ud2.8", "--sys2", "seqsm@ud2.16",
                    "--class", "new_error"],
                "check (two gates)": ["check", "--baseline", "seqsm@ud2.8", "--candidate",
                                      "seqsm@ud2.16", "--max-new-errors", "100000",
                                      "--min-delta", "-100"],
            }
            read_times = {label: [bench.time([*argv, "-w", seq_root])
                                  for _ in range(args.repeat)]
                          for label, argv in reads.items()}
            api_first, api_later = api_times(bench, tmp / "corpus", args.repeat)
            own = [bench.time([*one, "-w", str(bench.warehouse())], SYSDIFF_RUNNER="off")
                   for _ in range(args.baseline_repeat)]
            own_rerun_root = str(bench.warehouse())
            bench.time([*one, "-w", own_rerun_root], SYSDIFF_RUNNER="off")
            own_rerun = [bench.time([*one, "-w", own_rerun_root], SYSDIFF_RUNNER="off")
                         for _ in range(args.baseline_repeat)]
        finally:
            bench.stop()
        ephemeral = [bench.time([*one, "-w", str(bench.warehouse())], SYSDIFF_SERVER="off")
                     for _ in range(args.baseline_repeat)]
        eph_root = str(bench.warehouse())
        bench.time([*one, "-w", eph_root], SYSDIFF_SERVER="off")
        eph_rerun = [bench.time([*one, "-w", eph_root], SYSDIFF_SERVER="off")
                     for _ in range(args.baseline_repeat)]
        shutil.rmtree(tmp / "state", ignore_errors=True)
    sql_times = read_times['sql "select 1"']
    lines += [
        f"sysdiff startup: {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, "
        f"load average {os.getloadavg()[0]:.2f} at the end; wall time of whole commands, "
        "medians",
        "",
        "| command | median | runs | range | |",
        "|---|---|---|---|---|",
        *([row("1-sentence run, cold (starts the server and the warm runner)", cold)]
          if cold else []),
        row("1-sentence run, warm, new warehouse (every table computed)", fresh, RUN_TARGET),
        row("1-sentence run, warm, unchanged rerun", rerun, RUN_TARGET),
        row("Sequoia (key + 4 parsers), warm, new warehouse", seq_fresh, RUN_TARGET),
        row("Sequoia, warm, unchanged rerun", seq_rerun, RUN_TARGET),
        *(row(label, t, READ_TARGET) for label, t in read_times.items()),
        row("API: sysdiff.evaluate, first call in a fresh interpreter (imports included)",
            api_first),
        row("API: later calls in the same interpreter", api_later),
        row("baseline: 1-sentence run, background server, own process (SYSDIFF_RUNNER=off)",
            own),
        row("baseline: the same, unchanged rerun", own_rerun),
        row("baseline: 1-sentence run, temporary server (SYSDIFF_SERVER=off)", ephemeral),
        row("baseline: the same, unchanged rerun", eph_rerun),
        "",
        "Ratios of medians (1-sentence run, new warehouse): "
        f"temporary server / warm = {ratio(ephemeral, fresh)}; "
        f"own process with the server / warm = {ratio(own, fresh)}"
        + (f"; cold / warm = {ratio(cold, fresh)}" if cold else "")
        + ". Unchanged reruns: temporary server / warm = "
        f"{ratio(eph_rerun, rerun)}. API first call / own process = {ratio(api_first, own)}; "
        f"API later calls / warm = {ratio(api_later, fresh)}. sql \"select 1\" / target = "
        f"{median(sql_times) / READ_TARGET:.2f}.",
    ]
    print("\n".join(lines))


def ratio(slow: list[float], fast: list[float]) -> str:
    """``slow`` / ``fast`` medians, as ``12.3x``."""
    return f"{median(slow) / median(fast):.2f}x"


if __name__ == "__main__":
    main()
