"""Alignment cost: 10 systems x ~1M words tokenised from raw text vs identically tokenised.

The bundled Sequoia key (10,044 words) is tiled to ~1M words (one document per copy); each
system is one of the four bundled parsers tiled the same way (a comment makes every file
distinct). The raw-text variant of each system is the same file retokenised
(``tests/retokenise.py``: multiword tokens collapsed, 2% of words split, every third sentence
joined with the next), so its words must be aligned with the key's on the characters. Both
runs are ``sysdiff run -v --task dep`` in a fresh process; the ratio is of the medians of
ingest + compare (Prefect's start-up, the same for both, is left out) and of the wall times.

    python benchmarks/alignment.py [--copies 100] [--systems 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.scale import run_sysdiff  # noqa: E402
from tests.retokenise import retokenise  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SEQUOIA = ROOT / "data" / "sequoia"
PARSERS = ["fr_core_news_md-3.8.0", "fr_core_news_sm-3.8.0", "seqsm_local-ud2.16",
           "seqsm_local-ud2.8"]


def tiled(src: Path, dst: Path, copies: int, tag: str) -> Path:
    """``src`` repeated ``copies`` times, one document per copy, sentence ids made unique."""
    blocks = [b for b in src.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    with dst.open("w", encoding="utf-8") as out:
        for k in range(copies):
            for i, block in enumerate(blocks):
                head = f"# newdoc id = d{k}\n# made for = {tag}\n" if i == 0 else ""
                out.write(head + block.replace("# sent_id = ", f"# sent_id = c{k}-") + "\n\n")
    return dst


def generate(folder: Path, copies: int, n_systems: int) -> dict[str, dict[str, Path]]:
    """The key, and each system twice (identical words, retokenised), unless already there."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "key.conllu"
    if not key.exists():
        tiled(SEQUOIA / "key.conllu", key, copies, "key")
    same, raw = {}, {}
    for i in range(n_systems):
        same[f"s{i}"] = folder / f"s{i}.conllu"
        raw[f"r{i}"] = folder / f"r{i}.conllu"
        if not same[f"s{i}"].exists():
            tiled(SEQUOIA / f"{PARSERS[i % len(PARSERS)]}.conllu", same[f"s{i}"], copies,
                  f"s{i}")
        if not raw[f"r{i}"].exists():
            retokenise(same[f"s{i}"], raw[f"r{i}"], seed=i, join_every=3, split_rate=0.02)
    return {"key": {"key": key}, "identical": same, "raw text": raw}


def measure(files: dict[str, Path], key: Path, wh: Path) -> tuple[float, float, float]:
    """(wall s, ingest + compare s, peak RSS GiB) of one fresh run."""
    shutil.rmtree(wh, ignore_errors=True)
    wall, rss, steps = run_sysdiff(["run", "-v", "--key", str(key), "--corpus", "bench",
                                    "--task", "dep", "--ar-trials", "1000", "-w", str(wh),
                                    *[f"--system={n}={p}" for n, p in files.items()]])
    return wall, steps.get("ingest", 0.0) + steps.get("compare", 0.0), rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=100, help="copies of the key (10,044 words)")
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "_data" / "alignment"))
    args = ap.parse_args()
    data = generate(Path(args.data), args.copies, args.systems)
    key = data["key"]["key"]
    medians = {}
    for label in ("identical", "raw text"):
        runs = [measure(data[label], key, Path(args.data) / "wh") for _ in range(args.repeat)]
        medians[label] = [statistics.median(r[i] for r in runs) for i in range(3)]
        wall, work, rss = medians[label]
        print(f"{label:>10}: wall {wall:6.1f} s  ingest+compare {work:6.1f} s  "
              f"peak RSS {rss:4.2f} GiB  (median of {args.repeat})", flush=True)
    (w0, c0, _), (w1, c1, _) = medians["identical"], medians["raw text"]
    print(f"raw text / identical: ingest+compare {c1 / c0:.2f}x, wall {w1 / w0:.2f}x "
          f"({args.systems} systems x {args.copies * 10_044:,} key words; target <= 3x)")


if __name__ == "__main__":
    main()
