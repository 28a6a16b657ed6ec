"""Scale: 10 systems x (10M, 30M, 100M) tokens, end to end, with time and peak RSS per size.

Data is generated to disk on demand (``--data``, default ``benchmarks/_data``; about 33 bytes
per token and file: 100M tokens x 11 files is 36 GB). Not for CI.

    python benchmarks/scale.py --sizes 10M,30M,100M [--systems 10] [--dask] [--clean]

For each size: one full run (ingest + compare), reported with wall time, the time of each
step (from ``sysdiff run -v``) and the peak RSS of the sysdiff process. In the same run, the
bound a plain solution cannot beat: a bare ``polars`` read of every file's tag column plus the
plain numpy compare loop over the same code matrix (:func:`bound`); the target is a run
within 2x of it. Ingest alone is set against a bare ``polars`` read of the columns it parses
(:func:`bare_read`: every column of the key, ID FORM LEMMA UPOS XPOS FEATS DEPS MISC of each
system); the target is 1.5x. With ``--dask`` the whole run is repeated (a fresh warehouse
each time) on 1 and on 2 local Dask workers; the speed-up is the ratio of their wall times.
``--clean`` deletes each size's data and warehouse once measured.

Runs report to the Prefect API of the environment: sysdiff's background server by default
(started before the first timed run, as on a machine that runs sysdiff every night), or a
temporary server in each run with ``SYSDIFF_SERVER=off`` (about 5 s more a run).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
TAGS = ["NOUN", "VERB", "DET", "ADP", "PUNCT", "ADJ", "PRON", "ADV", "PROPN", "CCONJ", "AUX",
        "NUM", "SCONJ", "PART", "X", "SYM", "INTJ"]
BLOCK_TOKENS = 100_000


def parse_size(text: str) -> int:
    """'10M' -> 10_000_000."""
    mult = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}.get(text[-1].upper(), 1)
    return int(float(text.rstrip("KkMmGg")) * mult)


def blocks(n_systems: int, seed: int = 0) -> tuple[str, list[str]]:
    """One block of ~100k tokens (whole documents) for the key and for each system."""
    rng = random.Random(seed)
    sents = []
    words = 0
    while words < BLOCK_TOKENS:
        n = rng.randint(5, 40)
        sents.append([rng.choice(TAGS) for _ in range(n)])
        words += n
    key_lines, sys_lines = [], [[] for _ in range(n_systems)]
    for k, tags in enumerate(sents):
        head = "# newdoc\n" if k % 500 == 0 else ""
        for out, labels in [(key_lines, tags)] + [
            (sys_lines[s], [t if rng.random() > 0.08 + 0.01 * s else rng.choice(TAGS)
                            for t in tags]) for s in range(n_systems)]:
            rows = "".join(f"{i}\tw{i}\t_\t{lab}\t_\t_\t{0 if i == 1 else 1}\tdep\t_\t_\n"
                           for i, lab in enumerate(labels, start=1))
            out.append(f"{head}# sent_id = {k}\n{rows}\n")
    return "".join(key_lines), ["".join(s) for s in sys_lines]


def generate(folder: Path, n_tokens: int, n_systems: int) -> dict[str, Path]:
    """Write key and systems of ``n_tokens`` (rounded to blocks) unless already there."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"key": folder / "key.conllu"}
    paths.update({f"s{i}": folder / f"s{i}.conllu" for i in range(n_systems)})
    if all(p.exists() for p in paths.values()):
        return paths
    key, systems = blocks(n_systems)
    repeats = max(1, n_tokens // BLOCK_TOKENS)
    for name, text in [("key", key)] + [(f"s{i}", t) for i, t in enumerate(systems)]:
        tmp = paths[name].with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for _ in range(repeats):
                f.write(text)
        tmp.rename(paths[name])
    return paths


def read_tags(path: Path, column: int) -> np.ndarray:
    """The tag column (1-based) of a tab-separated token file as uint8 codes: a bare
    ``polars`` read, no validation (comment lines and blank lines dropped)."""
    tags = (pl.scan_csv(path, separator="\t", has_header=False, quote_char=None,
                        comment_prefix="#", infer_schema=False)
            .select(pl.nth(column - 1)).drop_nulls().collect().to_series())
    return tags.cast(pl.Enum(TAGS)).to_physical().to_numpy()  # uint8 codes


#: The columns ingest parses of a system file in a ``pos`` run (1-based): the fast reader's.
SYSTEM_COLUMNS = (1, 2, 3, 4, 5, 6, 9, 10)


def bare_read(paths: dict[str, Path]) -> float:
    """Seconds of a bare ``polars`` read (strings, no check) of the columns ingest parses:
    every column of the key, :data:`SYSTEM_COLUMNS` of each system; one file after another."""
    t0 = time.perf_counter()
    for name, path in paths.items():
        columns = range(1, 11) if name == "key" else SYSTEM_COLUMNS
        (pl.scan_csv(path, separator="\t", has_header=False, quote_char=None,
                     comment_prefix="#", infer_schema=False)
         .select(pl.nth(c - 1) for c in columns).collect())
    return time.perf_counter() - t0


def numpy_compare(gold: np.ndarray, systems: list[np.ndarray]) -> None:
    """The plain compare loop over uint8 codes: per system its per-label correct counts, per
    pair the diff and its (gold, sys1, sys2) change cells, one ``bincount`` each."""
    n = len(TAGS)
    twice = gold.astype(np.int64) * 2
    for x in systems:
        np.bincount(twice + (x == gold), minlength=2 * n)
    for a, b in combinations(range(len(systems)), 2):
        x, y = systems[a], systems[b]
        diff = x != y
        np.bincount((gold[diff].astype(np.int64) * n + x[diff]) * n + y[diff], minlength=n ** 3)


def bound(paths: dict[str, Path], column: int) -> tuple[float, float]:
    """Seconds of the plain solution's two parts: a bare read of every file's tag column,
    and :func:`numpy_compare` over the codes."""
    t0 = time.perf_counter()
    codes = [read_tags(p, column) for p in paths.values()]
    t1 = time.perf_counter()
    numpy_compare(codes[0], codes[1:])
    return t1 - t0, time.perf_counter() - t1


STEP_RE = re.compile(r"^sysdiff: (\w+): \d+ steps in ([0-9.]+) s$")


def run_sysdiff(args: list[str], warm: bool = False) -> tuple[float, float, dict[str, float]]:
    """Wall seconds, peak RSS (GiB) and step seconds of one ``sysdiff run -v`` subprocess:
    the run in that process (``SYSDIFF_RUNNER=off``: the peak RSS is the run's), or with
    ``warm`` through the warm runner as a user's run goes (the peak RSS is then nan: the
    run is the runner's child, not this subprocess)."""
    code = ("import resource, sys; from sysdiff.flows.cli import main\n"
            "try:\n    main()\nfinally:\n"
            "    print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
            " file=sys.stderr)")
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    if not warm:
        env["SYSDIFF_RUNNER"] = "off"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"sysdiff failed: {proc.stderr[-2000:]}")
    lines = proc.stderr.splitlines()
    kb = [int(ln.split()[1]) for ln in lines if ln.startswith("PEAK_RSS_KB")]
    steps = {m[1]: float(m[2]) for ln in lines if (m := STEP_RE.match(ln))}
    return wall, (kb[-1] / 2**20 if kb and not warm else float("nan")), steps


def prefect_api() -> str:
    """Where the timed runs report (the background server is started now if it is used)."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    if os.environ.get("SYSDIFF_SERVER") == "off":
        return "a temporary server in each run (SYSDIFF_SERVER=off)"
    subprocess.run([sys.executable, "-c", "from sysdiff.flows.cli import main; main()",
                    "server", "start"], cwd=ROOT, check=True, capture_output=True)
    return "sysdiff's background server"


def dask_runs(base: list[str], wh: Path, repeat: int) -> dict[str, float | list[float]]:
    """Median wall seconds of the whole run on 1 and on 2 local Dask workers (a fresh
    warehouse each time; 1 and 2 workers alternate, so a slower spell of the machine falls
    on both; through the warm runner, as a user's run goes), with every run's time."""
    walls: dict[str, list[float]] = {"1w": [], "2w": []}
    for _ in range(repeat):
        for label in walls:
            subprocess.run(["rm", "-rf", str(wh)], check=True)
            walls[label].append(round(run_sysdiff([*base, "--dask-local", label[0]], warm=True)[0],
                                      1))
    return {**{f"run_{k}_s": float(np.median(v)) for k, v in walls.items()},
            **{f"runs_{k}_s": v for k, v in walls.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10M,30M,100M")
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data"))
    ap.add_argument("--shard-sents", type=int, default=20000)
    ap.add_argument("--dask", action="store_true",
                    help="also time the whole run on 1 vs 2 local Dask workers")
    ap.add_argument("--dask-repeat", type=int, default=1,
                    help="pairs of 1- and 2-worker runs (interleaved; medians reported)")
    ap.add_argument("--clean", action="store_true", help="delete each size's files when done")
    args = ap.parse_args()
    print(f"Prefect API: {prefect_api()}", flush=True)
    results = []
    for size in args.sizes.split(","):
        n = parse_size(size)
        t0 = time.perf_counter()
        paths = generate(Path(args.data) / f"{size}x{args.systems}", n, args.systems)
        gen = time.perf_counter() - t0
        wh = Path(args.data) / f"wh-{size}x{args.systems}"
        subprocess.run(["rm", "-rf", str(wh)], check=True)
        base = ["run", "-v", "--key", str(paths["key"]), "--corpus", "bench", "--task", "pos",
                "--ar-trials", "1000", "--shard-sents", str(args.shard_sents), "-w", str(wh),
                *[f"--system={k}={p}" for k, p in paths.items() if k != "key"]]
        wall, rss, steps = run_sysdiff(base)
        read_s, numpy_s = bound(paths, column=4)
        row = {"size": size, "tokens": n, "gen_s": round(gen, 1), "run_s": round(wall, 1),
               "ingest_s": steps.get("ingest"), "compare_s": steps.get("compare"),
               "peak_rss_gib": round(rss, 2), "read_s": round(read_s, 1),
               "numpy_s": round(numpy_s, 1), "load": round(os.getloadavg()[0], 1)}
        row["bare_read_s"] = round(bare_read(paths), 1)
        if args.dask:
            row.update(dask_runs(base, wh, args.dask_repeat))
        results.append(row)
        print(row, flush=True)
        if args.clean:
            subprocess.run(["rm", "-rf", str(wh), str(paths["key"].parent)], check=True)
    first = results[0]
    print(f"\n{'size':>6} {'run s':>8} {'ingest s':>9} {'compare s':>10} {'s/Mtok':>7} "
          f"{'time/size vs first':>19} {'peak RSS GiB':>13} {'read+numpy s':>13} "
          f"{'run/bound':>10}")
    for r in results:
        ratio = (r["run_s"] / first["run_s"]) / (r["tokens"] / first["tokens"])
        print(f"{r['size']:>6} {r['run_s']:8.1f} {r['ingest_s'] or 0:9.1f} "
              f"{r['compare_s'] or 0:10.1f} {r['run_s'] / (r['tokens'] / 1e6):7.2f} "
              f"{ratio:19.2f} {r['peak_rss_gib']:13.2f} {r['read_s'] + r['numpy_s']:13.1f} "
              f"{r['run_s'] / (r['read_s'] + r['numpy_s']):10.2f}")
        print(f"{'':>6} ingest {r['ingest_s'] or 0:.1f} s vs a bare read of the same columns "
              f"{r['bare_read_s']:.1f} s: {(r['ingest_s'] or 0) / r['bare_read_s']:.2f}x")
        if r.get("run_2w_s"):
            one, two = r["run_1w_s"], r["run_2w_s"]
            print(f"{'':>6} whole run on Dask (medians of {len(r['runs_1w_s'])}): 1 worker "
                  f"{one:.1f} s {r['runs_1w_s']}, 2 workers {two:.1f} s {r['runs_2w_s']}: "
                  f"speed-up {one / two:.2f}x")

if __name__ == "__main__":
    main()
