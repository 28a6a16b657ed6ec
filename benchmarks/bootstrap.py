"""The cost of the bootstrap intervals (METRICS 1.6b, issue 24): ``sysdiff run`` of 10 systems
x 1M tokens with ``--bootstrap 1000`` (the default) against the same run with ``--bootstrap
0``, in the same process of measurement, alternating. Target: at most 1.5x.

    python benchmarks/bootstrap.py [--tokens 1M] [--systems 10] [--task dep] [--repeat 3]

Data as :mod:`benchmarks.scale` writes it (under ``--data``, reused when present). Every run
starts from an empty warehouse (ingest and compare); the intervals only change the compare
step, reported separately (its time from ``sysdiff run -v``). Medians over ``--repeat``
pairs of runs; the order within a pair alternates, so that a drift of the machine's load
falls on both sides.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.scale import ROOT, generate, parse_size, run_sysdiff  # noqa: E402


def one_run(paths: dict[str, Path], wh: Path, task: str, samples: int) -> dict[str, float]:
    """Wall and compare seconds, peak RSS (GiB) of one run from an empty warehouse."""
    subprocess.run(["rm", "-rf", str(wh)], check=True)
    args = ["run", "-v", "--key", str(paths["key"]), "--corpus", "bench", "--task", task,
            "--ar-trials", "1000", "--bootstrap", str(samples), "-w", str(wh),
            *[f"--system={k}={p}" for k, p in paths.items() if k != "key"]]
    wall, rss, steps = run_sysdiff(args)
    return {"wall": wall, "compare": steps.get("compare", float("nan")), "rss": rss,
            "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokens", default="1M")
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--task", default="dep", choices=("pos", "dep"))
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data"))
    args = ap.parse_args()
    folder = Path(args.data) / f"{args.tokens}x{args.systems}"
    paths = generate(folder, parse_size(args.tokens), args.systems)
    wh = Path(args.data) / f"wh-bootstrap-{args.tokens}x{args.systems}"
    runs: dict[int, list[dict[str, float]]] = {0: [], args.samples: []}
    for k in range(args.repeat):
        order = (0, args.samples) if k % 2 == 0 else (args.samples, 0)
        for samples in order:
            r = one_run(paths, wh, args.task, samples)
            runs[samples].append(r)
            print(f"--bootstrap {samples:>5}: run {r['wall']:6.1f} s, compare "
                  f"{r['compare']:6.1f} s, peak RSS {r['rss']:.2f} GiB, load {r['load']:.1f}",
                  flush=True)
    subprocess.run(["rm", "-rf", str(wh)], check=True)
    med = {b: {m: statistics.median(r[m] for r in rs) for m in ("wall", "compare", "rss")}
           for b, rs in runs.items()}
    off, on = med[0], med[args.samples]
    print(f"\n{args.systems} systems x {args.tokens} tokens, task {args.task}, medians of "
          f"{args.repeat}:")
    print(f"{'':>18} {'run s':>8} {'compare s':>10} {'peak RSS GiB':>13}")
    for label, m in (("--bootstrap 0", off), (f"--bootstrap {args.samples}", on)):
        print(f"{label:>18} {m['wall']:8.1f} {m['compare']:10.1f} {m['rss']:13.2f}")
    print(f"{'ratio':>18} {on['wall'] / off['wall']:7.2f}x {on['compare'] / off['compare']:9.2f}x"
          f" {on['rss'] / off['rss']:12.2f}x   (target: run <= 1.5x)")


if __name__ == "__main__":
    main()
