"""Benchmark of the HTML report at many systems: report size and load time in Chromium.

For each N, builds (once, cached under ``--work``) a warehouse of N systems on the bundled
Sequoia key (``--task dep``, all views): the four bundled parser outputs copied under new
names with seeded perturbations (UPOS, HEAD or DEPREL of 2-5% of the words changed, forms
and word counts kept, so they still align with the key), a TOML run file, and
``sysdiff run RUN.toml -w DIR``. Then it writes the report ``--repeats`` times and loads it
``--repeats`` times in headless Chromium (a fresh browser each time, DevTools protocol),
and prints medians: build time, size, and load time (navigation start to the load event,
and to the first animation frame after it, i.e. laid out and painted once). Usage::

    python benchmarks/report.py [--systems 4 12 25] [--repeats 5] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.browser import chromium_binary, load_page  # noqa: E402

SEQUOIA = ROOT / "data" / "sequoia"
#: The bundled outputs the copies are made from, by the history name they get.
BASES = {"spacy_sm": "fr_core_news_sm-3.8.0.conllu", "spacy_md": "fr_core_news_md-3.8.0.conllu",
         "seqsm_ud28": "seqsm_local-ud2.8.conllu", "seqsm_ud216": "seqsm_local-ud2.16.conllu"}
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X")
DEPRELS = ("nsubj", "obj", "obl", "obl:arg", "obl:mod", "nmod", "amod", "advmod", "det", "case",
           "mark", "cc", "conj", "acl", "acl:relcl", "advcl", "xcomp", "ccomp", "appos",
           "fixed", "flat:name", "aux:pass", "cop", "punct", "root", "dep")


# ------------------------------------------------------------------------- generation

class Words:
    """The lines of a CoNLL-U file and, for its word lines, their fields and sentence size."""

    def __init__(self, path: Path) -> None:
        self.lines = path.read_text(encoding="utf-8").split("\n")
        rows, sizes, size, first = [], [], 0, len(self.lines)
        for i, line in enumerate(self.lines):
            if not line.strip():
                sizes += [size] * (len(rows) - len(sizes))
                size = 0
                continue
            if line.startswith("#"):
                continue
            tok = line.split("\t", 1)[0]
            if tok.isdigit():
                rows.append(i)
                size = max(size, int(tok))
                first = min(first, i)
        sizes += [size] * (len(rows) - len(sizes))
        self.word_lines = np.array(rows, dtype=np.int64)
        self.sent_size = np.array(sizes, dtype=np.int64)


def perturbed(words: Words, seed: int) -> str:
    """The file with UPOS, HEAD or DEPREL changed on a seeded 2-5% of its words."""
    rng = np.random.default_rng(seed)
    n = len(words.word_lines)
    rate = rng.uniform(0.02, 0.05)
    picked = rng.choice(n, size=int(rate * n), replace=False)
    fields = rng.integers(0, 3, size=picked.size)
    lines = list(words.lines)
    for k, what in zip(picked.tolist(), fields.tolist(), strict=True):
        cols = lines[words.word_lines[k]].split("\t")
        if what == 0:
            cols[3] = str(rng.choice([u for u in UPOS if u != cols[3]]))
        elif what == 1:
            size, own = int(words.sent_size[k]), int(cols[0])
            choices = [h for h in range(size + 1) if h != own and str(h) != cols[6]]
            if choices:
                cols[6] = str(rng.choice(choices))
        else:
            cols[7] = str(rng.choice([d for d in DEPRELS if d != cols[7]]))
        lines[words.word_lines[k]] = "\t".join(cols)
    return "\n".join(lines)


def write_systems(folder: Path, n: int, seed: int = 0) -> dict[str, Path]:
    """``n`` perturbed copies of the bundled outputs, named ``BASE@pNN`` (a history per
    bundled parser); returns name -> file."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = {name: Words(SEQUOIA / file) for name, file in BASES.items()}
    names = list(BASES)
    out = {}
    for i in range(n):
        base = names[i % len(names)]
        name = f"{base}@p{i // len(names) + 1:02d}"
        path = folder / f"{name}.conllu"
        path.write_text(perturbed(sources[base], seed * 100_003 + i), encoding="utf-8")
        out[name] = path
    return out


def write_run_file(folder: Path, n: int, seed: int = 0, ar_trials: int = 1000,
                   corpus: str = "seq") -> Path:
    """A TOML run file for the key and ``n`` perturbed systems (files beside it)."""
    systems = write_systems(folder / "systems", n, seed)
    lines = [f'corpus = "{corpus}"', 'task = "dep"', f'key = "{SEQUOIA / "key.conllu"}"',
             f"ar_trials = {ar_trials}", f"seed = {seed}", "", "[systems]"]
    lines += [f'"{name}" = "{path}"' for name, path in systems.items()]
    run = folder / "run.toml"
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def sysdiff_command() -> list[str]:
    """The ``sysdiff`` command of this environment."""
    exe = Path(sys.executable).with_name("sysdiff")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "sysdiff.flows.cli"]


def build_warehouse(folder: Path, n: int, seed: int = 0, ar_trials: int = 1000) -> Path:
    """``sysdiff run`` of ``n`` perturbed systems into ``folder/wh`` (kept if it exists)."""
    root = folder / "wh"
    if (root / "sysdiff.duckdb").exists():
        return root
    run = write_run_file(folder, n, seed, ar_trials)
    proc = subprocess.run([*sysdiff_command(), "run", str(run), "-w", str(root)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"sysdiff run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return root


# ------------------------------------------------------------------------- measuring

def measure(root: Path, out: Path, repeats: int, profile: Path) -> dict:
    """Build the report ``repeats`` times and load it ``repeats`` times; medians."""
    from sysdiff.flows.report import build_report

    build = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        build_report(root, None, out)
        build.append(time.perf_counter() - t0)
    loads = [load_page(out, profile / f"run{i}") for i in range(repeats)]
    med = {k: statistics.median(x[k] for x in loads) for k in ("load", "frame", "wall")}
    return {"build_s": statistics.median(build), "bytes": out.stat().st_size,
            "load_ms": med["load"], "frame_ms": med["frame"], "wall_ms": med["wall"],
            "nodes": loads[0]["nodes"], "loads_ms": [round(x["frame"]) for x in loads]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", type=int, nargs="+", default=[4, 12, 25])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ar-trials", type=int, default=1000)
    ap.add_argument("--work", type=Path, default=None,
                    help="folder for the warehouses (kept and reused; default: a temp dir)")
    args = ap.parse_args()
    if not Path(chromium_binary()).exists():
        sys.exit("no chromium binary found")
    work = args.work or Path(tempfile.mkdtemp(prefix="sysdiff-report-bench-"))
    print(f"work folder: {work}")
    print(f"{'N':>4} {'run s':>7} {'report s':>9} {'size MB':>8} {'load ms':>8} "
          f"{'frame ms':>9} {'wall ms':>8} {'nodes':>7}  frames (ms)")
    for n in args.systems:
        folder = work / f"n{n}"
        t0 = time.perf_counter()
        fresh = not (folder / "wh" / "sysdiff.duckdb").exists()
        root = build_warehouse(folder, n, ar_trials=args.ar_trials)
        run_s = time.perf_counter() - t0 if fresh else float("nan")
        profile = folder / "chromium"
        shutil.rmtree(profile, ignore_errors=True)
        r = measure(root, folder / "report.html", args.repeats, profile)
        print(f"{n:>4} {run_s:>7.1f} {r['build_s']:>9.2f} {r['bytes'] / 1e6:>8.2f} "
              f"{r['load_ms']:>8.0f} {r['frame_ms']:>9.0f} {r['wall_ms']:>8.0f} "
              f"{r['nodes']:>7}  {json.dumps(r['loads_ms'])}", flush=True)


if __name__ == "__main__":
    main()
