"""Scale: 10 systems x (10M, 30M, 100M) tokens, end to end, with time and peak RSS per size.

Data is generated to disk on demand (``--data``, default ``benchmarks/_data``; about 45 bytes
per token and file). Not for CI.

    python benchmarks/scale.py --sizes 10M,30M,100M [--systems 10] [--dask]

For each size: one full run (ingest + compare), reported with wall time and peak RSS of the
sysdiff process. With ``--dask`` the compare step alone is re-run (a new seed changes the
result signatures but not the ingested data) on 1 and then 2 local Dask workers.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

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


def run_sysdiff(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (GiB) of one ``sysdiff`` subprocess."""
    code = ("import resource, sys; from flows.cli import main\n"
            "try:\n    main()\nfinally:\n"
            "    print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
            " file=sys.stderr)")
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"sysdiff failed: {proc.stderr[-2000:]}")
    kb = [int(ln.split()[1]) for ln in proc.stderr.splitlines() if ln.startswith("PEAK_RSS_KB")]
    return wall, (kb[-1] / 2**20 if kb else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10M,30M,100M")
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data"))
    ap.add_argument("--shard-sents", type=int, default=20000)
    ap.add_argument("--dask", action="store_true", help="also time compare on 1 vs 2 workers")
    args = ap.parse_args()
    results = []
    for size in args.sizes.split(","):
        n = parse_size(size)
        t0 = time.perf_counter()
        paths = generate(Path(args.data) / f"{size}x{args.systems}", n, args.systems)
        gen = time.perf_counter() - t0
        wh = Path(args.data) / f"wh-{size}x{args.systems}"
        subprocess.run(["rm", "-rf", str(wh)], check=True)
        base = ["run", "--key", str(paths["key"]), "--corpus", "bench", "--task", "pos",
                "--ar-trials", "1000", "--shard-sents", str(args.shard_sents), "-w", str(wh),
                *[f"--system={k}={p}" for k, p in paths.items() if k != "key"]]
        wall, rss = run_sysdiff(base)
        row = {"size": size, "tokens": n, "gen_s": gen, "run_s": wall, "peak_rss_gib": rss}
        if args.dask:
            row["compare_1w_s"] = run_sysdiff([*base, "--seed", "1", "--dask-local", "1"])[0]
            row["compare_2w_s"] = run_sysdiff([*base, "--seed", "2", "--dask-local", "2"])[0]
        results.append(row)
        print(row, flush=True)
    first = results[0]
    print(f"\n{'size':>6} {'run s':>9} {'s/Mtok':>8} {'vs first':>9} {'peak RSS GiB':>13}")
    for r in results:
        ratio = (r["run_s"] / first["run_s"]) / (r["tokens"] / first["tokens"])
        print(f"{r['size']:>6} {r['run_s']:9.1f} {r['run_s'] / (r['tokens'] / 1e6):8.2f} "
              f"{ratio:9.2f} {r['peak_rss_gib']:13.2f}")
        if "compare_2w_s" in r:
            one, two = r["compare_1w_s"], r["compare_2w_s"]
            print(f"{'':>6} compare on 1 worker {one:.1f} s, on 2 workers {two:.1f} s: "
                  f"speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
