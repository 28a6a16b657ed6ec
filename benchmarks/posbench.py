"""POS tagging at scale: a key and 8 systems of ~1M words each, ``word<TAB>tag`` files in,
every table out (``sysdiff run --task pos``), wall time of the whole command.

The issue's reference point is ComparEval's 75 s on the same shape (target: 10x faster, i.e.
<= 7 s). In the same run the script times the bare floor a plain solution cannot beat: a
``polars.read_csv`` of every file plus one numpy ``bincount`` pass per pair over the uint8
tag codes, and prints the ratio. Files are generated once under ``--data``.

    python benchmarks/posbench.py [--systems 8] [--words 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.scale import TAGS, bound, run_sysdiff  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def generate(folder: Path, n_words: int, n_systems: int, seed: int = 0) -> dict[str, Path]:
    """``word<TAB>tag`` files: a key and systems that err on 3-10% of the words."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"key": folder / "key.tsv", **{f"s{i}": folder / f"s{i}.tsv"
                                            for i in range(n_systems)}}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = random.Random(seed)
    gold = [rng.choice(TAGS) for _ in range(n_words)]
    words = [f"w{k % 5000}" for k in range(n_words)]
    breaks = set(range(20, n_words, 20))
    for name, path in paths.items():
        rate = 0.0 if name == "key" else 0.03 + 0.01 * int(name[1:])
        tags = [t if rng.random() >= rate else rng.choice(TAGS) for t in gold]
        with path.open("w", encoding="utf-8") as f:
            f.write("".join(f"{w}\t{t}\n" + ("\n" if k + 1 in breaks else "")
                            for k, (w, t) in enumerate(zip(words, tags, strict=True))) + "\n")
    return paths


def floor(paths: dict[str, Path]) -> float:
    """Bare read of every file plus the plain numpy compare loop (per system and per pair,
    one ``bincount`` over uint8 codes): the plain solution's time."""
    return sum(bound(paths, column=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--systems", type=int, default=8)
    ap.add_argument("--words", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data" / "posbench"))
    args = ap.parse_args()
    paths = generate(Path(args.data), args.words, args.systems)
    wh = Path(args.data) / "wh"
    command = ["run", "--key", str(paths["key"]), "--corpus", "pos", "--task", "pos",
               "-w", str(wh), *[f"--system={k}={p}" for k, p in paths.items() if k != "key"]]
    walls, floors = [], []
    for _ in range(args.repeat):  # as a user runs it: the warm runner, no -v
        shutil.rmtree(wh, ignore_errors=True)
        wall, _peak, _steps = run_sysdiff(command, warm=True)
        walls.append(wall)
        floors.append(floor(paths))
    shutil.rmtree(wh, ignore_errors=True)  # one -v run (in its own process) for the steps
    _wall, peak, steps = run_sysdiff([*command, "-v"])
    flow = sum(steps.values())
    wall, base = (statistics.median(v) for v in (walls, floors))
    print(f"{args.systems} systems x {args.words:,} words, medians of {args.repeat}:")
    print(f"  sysdiff run (whole command): {wall:6.2f} s   (target <= 7 s; ComparEval 75 s)"
          f"   runs: {', '.join(f'{w:.2f}' for w in walls)}")
    print(f"  sysdiff steps (one -v run):  {flow:6.2f} s   "
          + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items()))
    print(f"  peak RSS of the -v run (in its own process): {peak:.2f} GiB")
    print(f"  bare read + numpy pairs:     {base:6.2f} s   whole command / floor "
          f"{wall / base:.1f}x, steps / floor {flow / base:.1f}x")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
