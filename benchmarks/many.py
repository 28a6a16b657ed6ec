"""Many systems at once: N perturbed versions of the bundled Sequoia parsers, ``--task dep``.

Each system is one of the four real outputs with a seeded share (1-6%) of its words given
another UPOS, FEATS, HEAD or DEPREL, so systems disagree the way versions of a parser do.
Systems are named ``parserK@V`` (four histories). For each N, one ``sysdiff run`` (a fresh
process, Prefect in its default mode) is timed, and the report is built:

    python benchmarks/many.py [--systems 25,50,100] [--keep DIR]

Printed per N: the run's own time (the flow, without Prefect's start-up), the whole
command's wall time, peak RSS of the process, warehouse size, report size and build time.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parent.parent
SEQUOIA = REPO / "data" / "sequoia"
BASES = ["seqsm_local-ud2.8.conllu", "seqsm_local-ud2.16.conllu",
         "fr_core_news_sm-3.8.0.conllu", "fr_core_news_md-3.8.0.conllu"]
FIELDS = ["id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc"]


def read_lines(path: Path) -> pl.DataFrame:
    """Every line of a CoNLL-U file, with its fields when it is a word line."""
    lines = pl.Series("line", path.read_text(encoding="utf-8").split("\n"))
    parts = lines.str.split("\t")
    word = (parts.list.len() == 10) & lines.str.contains(r"^\d+\t")
    df = pl.DataFrame({"line": lines, "word": word, "sent": (lines == "").cum_sum(),
                       **{f: parts.list.get(k, null_on_oob=True) for k, f in enumerate(FIELDS)}})
    return df.with_columns(n_words=pl.col("word").sum().over("sent"))


def perturb(df: pl.DataFrame, rate: float, seed: int) -> str:
    """The file's text with a share ``rate`` of its words relabelled (UPOS, FEATS, HEAD or
    DEPREL), forms and word counts unchanged."""
    rng = np.random.default_rng(seed)
    words = df.filter(pl.col("word"))
    n = words.height
    pick = rng.random(n) < rate
    what = rng.integers(0, 4, n)
    upos = words["upos"].unique().to_numpy()
    deprel = words["deprel"].unique().to_numpy()
    feats = words["feats"].to_numpy()
    new = {c: words[c].to_numpy().copy() for c in ("upos", "feats", "head", "deprel")}
    sel = pick & (what == 0)
    new["upos"][sel] = rng.choice(upos, sel.sum())
    sel = pick & (what == 1)
    new["feats"][sel] = rng.choice(feats, sel.sum())
    sel = pick & (what == 2)
    n_words = words["n_words"].to_numpy()
    new["head"][sel] = (rng.random(sel.sum()) * (n_words[sel] + 1)).astype(int).astype(str)
    sel = pick & (what == 3)
    new["deprel"][sel] = rng.choice(deprel, sel.sum())
    rebuilt = words.with_columns(pl.Series(c, v) for c, v in new.items()).select(
        pl.concat_str(FIELDS, separator="\t").alias("text"))["text"]
    lines = df["line"].to_numpy().copy()
    lines[np.flatnonzero(df["word"].to_numpy())] = rebuilt.to_numpy()
    return "\n".join(lines)


def make_corpus(n: int, out: Path, seed: int = 0) -> Path:
    """A run file for the key and ``n`` perturbed systems under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(SEQUOIA / "key.conllu", out / "key.conllu")
    bases = [read_lines(SEQUOIA / b) for b in BASES]
    rng = np.random.default_rng(seed)
    entries = []
    for k in range(n):
        name = f"parser{k % 4}@{k // 4 + 1}"
        path = out / f"sys{k:03d}.conllu"
        path.write_text(perturb(bases[k % 4], rng.uniform(0.01, 0.06), seed * 1000 + k),
                        encoding="utf-8")
        entries.append(f'"{name}" = "{path.name}"')
    run = out / "run.toml"
    run.write_text(f'corpus = "many{n}"\ntask = "dep"\nkey = "key.conllu"\nar_trials = 1000\n'
                   "[systems]\n" + "\n".join(entries) + "\n")
    return run


def timed(cmd: list[str]) -> tuple[float, str, int]:
    """(wall seconds, stderr, peak RSS in bytes of the child) of one command, run in the
    child itself (``SYSDIFF_RUNNER=off``: not the warm runner's, whose RSS is not the
    child's)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, SYSDIFF_RUNNER="off"))
    wall = time.perf_counter() - t0
    if done.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, done.stderr, max(peak, before) * 1024


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench(n: int, work: Path) -> dict:
    """Run, time and measure one N."""
    run = make_corpus(n, work / f"n{n}")
    wh = work / f"wh{n}"
    sysdiff = str(Path(sys.executable).with_name("sysdiff"))
    wall, err, peak = timed([sysdiff, "run", str(run), "-w", str(wh), "-v"])
    flow = float(re.search(r"run: ([\d.]+) s", err).group(1))
    report = work / f"report{n}.html"
    report_wall, _, _ = timed([sysdiff, "report", "-w", str(wh), "-o", str(report)])
    return {"n": n, "flow": flow, "wall": wall, "peak": peak, "warehouse": folder_size(wh),
            "report": report.stat().st_size, "report_wall": report_wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="25,50,100")
    ap.add_argument("--keep", type=Path, help="work folder to keep (default: a temp dir)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="sysdiff-many-"))
    print(f"{'systems':>7} {'pairs':>6} {'run (flow)':>11} {'wall':>8} {'peak RSS':>9} "
          f"{'warehouse':>10} {'report':>8} {'report build':>12}")
    try:
        for n in [int(x) for x in args.systems.split(",")]:
            r = bench(n, work)
            print(f"{n:>7} {n * (n - 1) // 2:>6} {r['flow']:>9.1f} s {r['wall']:>6.1f} s "
                  f"{r['peak'] / 2**30:>7.2f} G {r['warehouse'] / 2**20:>8.1f} M "
                  f"{r['report'] / 2**20:>6.1f} M {r['report_wall']:>10.1f} s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
