"""Benchmark: UNLization at scale, files in -> tables out (issue 13 item 4).

Writes an expected UNL document of N sentences (graphs of 5-30 relations with constraint
lists, node ids, scopes and attributes) and an actual document with controlled perturbations
(relabelled relations, replaced UWs, added/dropped attributes, dropped relations, natural-
language words, disconnected graphs, unparsable lines), then times:

- ``new``: the reader and scorer of the package as the flow runs them, without Prefect
  (timed after the imports, as ``old``), in a fresh process:
  index both files, align, parse and score shard by shard (``--shard-sents``, on as many
  threads as the flow's task runner), concatenate, corpus scores;
- ``old``: the reader and scorer as they were before (``benchmarks/unl_baseline.py`` of
  commit fdc37d2, compiled from the git history): ``read_unl`` both files,
  ``score_unlization``, ``unl_scores``;
- ``run``: the whole ``sysdiff run --task unl`` (Prefect flow, Parquet warehouse) as a user
  runs it once the background Prefect server is up (``sysdiff server start``), in its own
  process (``SYSDIFF_RUNNER=off``): timed from the start of the process, imports included;
  its peak RSS is that process's (the server is another process);
- ``warm``: the same command as a user types it after ``sysdiff server start``: the
  ``sysdiff`` client hands it to the warm runner, whose forked child runs it (imports
  already paid); wall time of the command (the child's memory is not visible from here);
- ``temp``: the same command with ``SYSDIFF_SERVER=off``: Prefect's temporary server
  starts inside the process (about 10 s here; the way the benchmark ran before the
  background server existed). Not run unless asked (``--modes``).

``run``, ``warm`` and ``temp`` also time a one-sentence corpus (the fixed cost). The
background server and the warm runner live in a private state folder on a free port,
started once before any timing (``sysdiff server start``; its time is printed, not counted)
and stopped at the end. Prints the median over ``--runs`` runs of each and the median peak
RSS, and the speed-up of ``new`` over ``old`` at the sizes where both ran (``--old-sizes``)::

    python benchmarks/unl.py --sizes 10k,100k,1M --runs 3 --old-sizes 10k
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.startup import Bench  # noqa: E402

LABELS = ["agt", "obj", "aoj", "mod", "plc", "tim", "man", "ins", "ben", "gol", "src", "pur"]
HEADS = [f"concept{k}" for k in range(400)] + [f"to act {k}" for k in range(100)]
CONSTRAINTS = ["icl>thing", "icl>do,agt>thing,obj>thing", "equ>other", "iof>person", "icl>be"]
ATTRS = ["@past", "@pl", "@def", "@indef", "@entry", "@not", "@future", "@1"]


# ------------------------------------------------------------------------------- data


def make_graph(rng: random.Random) -> list[list]:
    """Relations [label, scope, src, tgt]; a node = [uw, node_id, attrs]. Connected (tree
    plus extras); sometimes two clauses joined through scopes."""
    n_rel = rng.randint(5, 30)
    nodes = []
    for k in range(n_rel + 1):
        uw = rng.choice(HEADS)
        if rng.random() < 0.7:
            uw += f"({rng.choice(CONSTRAINTS)})"
        nid = f"{k:02d}" if rng.random() < 0.3 else None
        nodes.append([uw, nid, rng.sample(ATTRS, rng.randint(0, 2))])
    nodes[0][2] = ["@entry", *nodes[0][2]]
    rels = []
    for k in range(1, n_rel + 1):
        j = rng.randrange(k)
        rels.append([rng.choice(LABELS), None, nodes[j], nodes[k]])
    if n_rel >= 10 and rng.random() < 0.3:  # split into scopes :01 and :02 joined by and
        half = n_rel // 2
        for r in rels[:half]:
            r[1] = "01"
        for r in rels[half:]:
            r[1] = "02"
        rels.append(["and", None, [":01", None, []], [":02", None, []]])
    return rels


def node_text(n: list) -> str:
    uw, nid, attrs = n
    if uw.startswith(":"):
        return uw + "".join("." + a for a in attrs)
    return uw + (f":{nid}" if nid else "") + "".join("." + a for a in attrs)


def graph_text(rels: list[list]) -> str:
    rows = []
    for label, scope, s, t in rels:
        rows.append(f"{label}{':' + scope if scope else ''}({node_text(s)}, {node_text(t)})")
    return "\n".join(rows)


def perturb(rels: list[list], rng: random.Random) -> str:
    """A perturbed copy: controlled error rates, some sentences untouched."""
    rels = [[lab, sc, list(s), list(t)] for lab, sc, s, t in rels]
    p = rng.random()
    if p < 0.30:
        pass  # identical
    elif p < 0.55:
        for r in rng.sample(rels, rng.randint(1, max(1, len(rels) // 8))):
            r[0] = rng.choice(LABELS)
    elif p < 0.70:
        r = rng.choice(rels)
        r[3] = [rng.choice(HEADS), None, r[3][2]]
    elif p < 0.80:
        for r in rng.sample(rels, min(3, len(rels))):
            r[3][2] = [*r[3][2], "@pl"] if "@pl" not in r[3][2] else []
    elif p < 0.88:
        rels.pop(rng.randrange(len(rels)))  # may disconnect the graph
    elif p < 0.92:
        rels[0][3] = ["[word]", None, []]
    elif p < 0.96:
        rels.append(["agt", None, ["island(icl>land)", None, []], ["sea", None, []]])
    else:
        return graph_text(rels) + "\nthis line is not UNL"
    return graph_text(rels)


def sentence_pairs(n: int, seed: int):
    """(expected block, actual block) of each sentence."""
    rng = random.Random(seed)
    for k in range(n):
        g = make_graph(rng)
        head = f"[S:{k + 1}]\n{{org:en}}\nsentence {k + 1}\n{{/org}}\n{{unl}}\n"
        yield (head + graph_text(g) + "\n{/unl}\n[/S]\n",
               head + perturb(g, rng) + "\n{/unl}\n[/S]\n")


def make_corpus(n: int, seed: int) -> tuple[str, str]:
    """The two documents as texts (small sizes; tests and quick checks)."""
    exp, act = zip(*sentence_pairs(n, seed), strict=True) if n else ((), ())
    return "[D]\n" + "".join(exp) + "[/D]\n", "[D]\n" + "".join(act) + "[/D]\n"


def write_corpus(folder: Path, n: int, seed: int) -> tuple[Path, Path]:
    """Write (once) the expected and actual documents of ``n`` sentences."""
    exp, act = folder / f"expected-{n}-{seed}.unl", folder / f"actual-{n}-{seed}.unl"
    if exp.exists() and act.exists():
        return exp, act
    folder.mkdir(parents=True, exist_ok=True)
    tmp_e, tmp_a = exp.with_suffix(".tmp"), act.with_suffix(".tmp")
    with tmp_e.open("w", encoding="utf-8") as fe, tmp_a.open("w", encoding="utf-8") as fa:
        fe.write("[D]\n")
        fa.write("[D]\n")
        for e, a in sentence_pairs(n, seed):
            fe.write(e)
            fa.write(a)
        fe.write("[/D]\n")
        fa.write("[/D]\n")
    tmp_e.rename(exp)
    tmp_a.rename(act)
    return exp, act


# ------------------------------------------------------------------------------- workers


def work_new(expected: str, actual: str, shard_sents: int) -> dict:
    """The flow's reading and scoring (its task functions), on a thread pool as wide as
    the flow's task runner, without Prefect."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import polars as pl

    from sysdiff.flows.shards import Opaque
    from sysdiff.flows.unl import Version, score_shard
    from sysdiff.schemas.formats.unl import index_unl
    from sysdiff.transforms.plan import plan_ranges
    from sysdiff.transforms.unl import (
        UnlOptions,
        align_ids,
        merge_warning_parts,
        unl_scores,
        warning_lines,
    )

    options = UnlOptions()
    e, a = index_unl(expected), index_unl(actual)
    al = align_ids(e.ids, a.ids, options.align)
    versions = {"v1": Version.of(None, "", a, al)}  # type: ignore[arg-type]
    ranges = plan_ranges(np.ones(len(e), np.int64), shard_sents)
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        results = list(pool.map(lambda r: score_shard.fn(Opaque((e, versions, r[1])), r[0],
                                                         "unl", options), ranges))
    rows = pl.concat([r["rows"]["v1"] for r in results])
    warnings = warning_lines(al, a.ids, merge_warning_parts([r["parts"][""] for r in results]),
                             merge_warning_parts([r["parts"]["v1"] for r in results]))
    scores = unl_scores(rows)
    return {"rows": rows.height, "f1": scores["f1"].item(), "warnings": len(warnings)}


# The UNL reader and scorer as they were before the columnar rewrite, kept in the history
# only (benchmarks/unl_baseline.py at this commit: the code of 1e4e832, verbatim).
BASELINE = ("fdc37d2", "benchmarks/unl_baseline.py")


def load_baseline() -> types.ModuleType:
    """The pre-rewrite reader and scorer, compiled from the repository's history."""
    if "unl_baseline" in sys.modules:
        return sys.modules["unl_baseline"]
    rev, path = BASELINE
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("unl_baseline")
    sys.modules["unl_baseline"] = module  # dataclasses look their module up while defined
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def work_old(expected: str, actual: str) -> dict:
    old = load_baseline()
    rows = old.score_unlization(old.read_unl(expected), old.read_unl(actual))
    return {"rows": rows.height, "f1": old.unl_scores(rows)["f1"].item()}


def run_argv(expected: str, actual: str, shard_sents: int, wh: str) -> list[str]:
    return ["run", "--task", "unl", "--corpus", "bench", "--key", expected, "--system",
            f"v1={actual}", "--shard-sents", str(shard_sents), "-w", wh]


def count_rows(wh: str) -> int:
    import polars as pl

    files = [f for f in Path(wh).rglob("*.parquet") if "unl_sentences" in str(f)]
    return sum(pl.scan_parquet(f).select(pl.len()).collect().item() for f in files)


def work_run(expected: str, actual: str, shard_sents: int) -> dict:
    from sysdiff.flows.cli import main

    wh = tempfile.mkdtemp(prefix="unl-bench-wh-")
    sys.argv = ["sysdiff", *run_argv(expected, actual, shard_sents, wh)]
    try:
        try:
            main()
        except SystemExit as exc:
            if exc.code:
                raise
        return {"rows": count_rows(wh)}
    finally:
        shutil.rmtree(wh, ignore_errors=True)


def preload(mode: str) -> None:
    """Import what a mode needs before its clock starts (imports are not reading or scoring;
    ``run`` is timed whole, like a user's command, imports included)."""
    if mode == "new":
        import sysdiff.flows.unl  # noqa: F401
        import sysdiff.transforms.unl  # noqa: F401
    elif mode == "old":
        load_baseline()


def worker(args: argparse.Namespace) -> None:
    preload(args.worker)
    t0 = time.perf_counter() if args.worker != "run" else START
    if args.worker == "new":
        out = work_new(args.expected, args.actual, args.shard_sents)
    elif args.worker == "old":
        out = work_old(args.expected, args.actual)
    else:
        out = work_run(args.expected, args.actual, args.shard_sents)
    out["seconds"] = time.perf_counter() - t0
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out), flush=True)


#: How each mode that runs the whole command reaches Prefect (environment added to the
#: private background server's): its own process, the warm runner, a temporary server.
RUN_ENV = {"run": {"SYSDIFF_RUNNER": "off"}, "warm": {},
           "temp": {"SYSDIFF_SERVER": "off", "SYSDIFF_RUNNER": "off"}}


def measure(mode: str, exp: Path, act: Path, shard_sents: int, server: Bench | None) -> dict:
    """One run of ``mode`` in a fresh process (``warm``: one ``sysdiff run`` command), with
    the 1-minute load average when it started."""
    return {**measure_once(mode, exp, act, shard_sents, server),
            "load": round(os.getloadavg()[0], 1)}


def measure_once(mode: str, exp: Path, act: Path, shard_sents: int,
                 server: Bench | None) -> dict:
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    if server is not None:
        env = {**server.env, **RUN_ENV.get(mode, {})}
    if mode == "warm":
        wh = tempfile.mkdtemp(prefix="unl-bench-wh-")
        try:
            seconds = server.time(run_argv(str(exp), str(act), shard_sents, wh))  # type: ignore[union-attr]
            return {"seconds": seconds, "peak_rss_mb": None, "rows": count_rows(wh)}
        finally:
            shutil.rmtree(wh, ignore_errors=True)
    worker_mode = "run" if mode in RUN_ENV else mode
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", worker_mode,
           "--expected", str(exp), "--actual", str(act), "--shard-sents", str(shard_sents)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise SystemExit(f"{mode} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(lines[-1][7:])


def start_server(tmp: Path) -> Bench:
    """The background Prefect server and warm runner in a private state folder, up before
    any timing (``sysdiff server start``, as a user does once)."""
    server = Bench(tmp)
    t0 = time.perf_counter()
    server.time(["server", "start"])
    server.wait_runner()
    print(json.dumps({"server_start_s": round(time.perf_counter() - t0, 2),
                      "note": "once, before timing; not in any figure"}), flush=True)
    return server


def median_or_none(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def parse_size(s: str) -> int:
    s = s.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "km" else s) * mult)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10k,100k,1M")
    ap.add_argument("--old-sizes", default="10k", help="sizes at which the old code also runs")
    ap.add_argument("--modes", default="new,run,warm",
                    help="modes at every size (new, run, warm, temp)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-sents", type=int, default=5000)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data" / "unl"))
    ap.add_argument("--worker", choices=["new", "old", "run"], help=argparse.SUPPRESS)
    ap.add_argument("--expected", help=argparse.SUPPRESS)
    ap.add_argument("--actual", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    modes = [m for m in args.modes.split(",") if m]
    with tempfile.TemporaryDirectory(prefix="sysdiff-unl-bench-") as tmp:
        server = start_server(Path(tmp)) if set(modes) & set(RUN_ENV) else None
        try:
            table = bench(args, modes, server)
        finally:
            if server is not None:
                server.stop()
    print(f"\n{'sentences':>10} {'mode':>18} {'median s':>9} {'sent/s':>8} {'peak RSS MB':>12}")
    for r in table:
        if r["mode"] == "old / new":
            print(f"{r['sentences']:>10} {'old / new':>18} {r['median_s']:>8.1f}x"
                  f" {'':>8} {'':>12}  (same F1: {r['same_f1']})")
            continue
        rss = "-" if r["peak_rss_mb"] is None else f"{r['peak_rss_mb']:.0f}"
        print(f"{r['sentences']:>10} {r['mode']:>18} {r['median_s']:9.2f} "
              f"{r.get('sentences_per_s', ''):>8} {rss:>12}")


def bench(args: argparse.Namespace, modes: list[str], server: Bench | None) -> list[dict]:
    """Every measurement, in the order printed."""
    old_sizes = {parse_size(s) for s in args.old_sizes.split(",") if s}
    table = []
    one = write_corpus(Path(args.data), 1, args.seed)
    for mode in [m for m in modes if m in RUN_ENV]:
        fixed = [measure(mode, *one, args.shard_sents, server) for _ in range(args.runs)]
        table.append({"sentences": 1, "mode": f"{mode} (fixed cost)",
                      "runs_s": [round(r["seconds"], 2) for r in fixed],
                      "loads": [r["load"] for r in fixed],
                      "median_s": statistics.median(r["seconds"] for r in fixed),
                      "peak_rss_mb": median_or_none([r["peak_rss_mb"] for r in fixed])})
        print(json.dumps(table[-1]), flush=True)
    for size in args.sizes.split(","):
        n = parse_size(size)
        t0 = time.perf_counter()
        exp, act = write_corpus(Path(args.data), n, args.seed)
        gen = time.perf_counter() - t0
        at_size = modes + (["old"] if n in old_sizes else [])
        res: dict[str, list[dict]] = {}
        for _ in range(args.runs):  # interleaved, so that load changes hit every mode alike
            for mode in at_size:
                res.setdefault(mode, []).append(measure(mode, exp, act, args.shard_sents,
                                                        server))
        for mode in at_size:
            rs = res[mode]
            row = {"sentences": n, "mode": mode, "generate_s": round(gen, 1),
                   "runs_s": [round(r["seconds"], 2) for r in rs],
                   "loads": [r["load"] for r in rs],
                   "median_s": statistics.median(r["seconds"] for r in rs),
                   "peak_rss_mb": median_or_none([r["peak_rss_mb"] for r in rs]),
                   "rows": rs[0]["rows"], "f1": rs[0].get("f1")}
            row["sentences_per_s"] = round(n / row["median_s"])
            table.append(row)
            print(json.dumps(row), flush=True)
        if "old" in res and "new" in res:
            ratio = (statistics.median(r["seconds"] for r in res["old"])
                     / statistics.median(r["seconds"] for r in res["new"]))
            same = res["old"][0]["f1"] == res["new"][0]["f1"]
            table.append({"sentences": n, "mode": "old / new", "median_s": ratio,
                          "peak_rss_mb": None, "same_f1": same})
            print(json.dumps(table[-1]), flush=True)
    return table


if __name__ == "__main__":
    main()
