"""Benchmark of the HTML report at many systems: report size and load time in Chromium.

For each N, builds (once, cached under ``--work``) a warehouse of N systems on the bundled
Sequoia key (``--task dep``, all views): the four bundled parser outputs copied under new
names with seeded perturbations (UPOS, HEAD or DEPREL of 2-5% of the words changed, forms
and word counts kept, so they still align with the key), a TOML run file, and
``sysdiff run RUN.toml -w DIR``; with ``--synthetic``, random aggregate tables of N systems
instead (no token data, hence no examples). Then it writes the report ``--repeats`` times
and loads it ``--repeats`` times in headless Chromium (a fresh browser each time, DevTools
protocol), and prints medians: build time, size, and load time (navigation start to the
load event, and to the first animation frame after it, i.e. laid out and painted once).
Usage::

    python benchmarks/report.py [--systems 4 12 25] [--repeats 5] [--work DIR]
    python benchmarks/report.py --synthetic --systems 12 50 100
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
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.browser import chromium_binary, load_page  # noqa: E402

SEQUOIA = ROOT / "data" / "sequoia"
#: The bundled outputs the copies are made from, by the history name they get.
BASES = {"spacy_sm": "fr_core_news_sm-3.8.0.conllu", "spacy_md": "fr_core_news_md-3.8.0.conllu",
         "seqsm_ud28": "seqsm_local-ud2.8.conllu", "seqsm_ud216": "seqsm_local-ud2.16.conllu"}
BASES_LIST = list(BASES)
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X")
DEPRELS = ("nsubj", "obj", "obl", "obl:arg", "obl:mod", "nmod", "amod", "advmod", "det", "case",
           "mark", "cc", "conj", "acl", "acl:relcl", "advcl", "xcomp", "ccomp", "appos",
           "fixed", "flat:name", "aux:pass", "cop", "punct", "root", "dep")


# ------------------------------------------------------------------------- generation

def head_sentences(text: str, sentences: int | None) -> str:
    """The first ``sentences`` sentences of a CoNLL-U text (all of it for None)."""
    if sentences is None:
        return text
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return "\n\n".join(blocks[:sentences]) + "\n\n"


class Words:
    """The lines of a CoNLL-U file (its first ``sentences`` sentences) and, for its word
    lines, their fields and sentence size."""

    def __init__(self, path: Path, sentences: int | None = None) -> None:
        text = head_sentences(path.read_text(encoding="utf-8"), sentences)
        self.lines = text.split("\n")
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


def write_systems(folder: Path, n: int, seed: int = 0,
                  sentences: int | None = None) -> dict[str, Path]:
    """``n`` perturbed copies of the bundled outputs (their first ``sentences`` sentences),
    named ``BASE@pNN`` (a history per bundled parser); returns name -> file."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = {name: Words(SEQUOIA / file, sentences) for name, file in BASES.items()}
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
                   corpus: str = "seq", sentences: int | None = None) -> Path:
    """A TOML run file for the key and ``n`` perturbed systems (files beside it), on the
    first ``sentences`` sentences of the key (all for None)."""
    folder.mkdir(parents=True, exist_ok=True)
    systems = write_systems(folder / "systems", n, seed, sentences)
    key = SEQUOIA / "key.conllu"
    if sentences is not None:
        key = folder / "key.conllu"
        key.write_text(head_sentences((SEQUOIA / "key.conllu").read_text(encoding="utf-8"),
                                      sentences), encoding="utf-8")
    lines = [f'corpus = "{corpus}"', 'task = "dep"', f'key = "{key}"',
             f"ar_trials = {ar_trials}", f"seed = {seed}", "", "[systems]"]
    lines += [f'"{name}" = "{path}"' for name, path in systems.items()]
    run = folder / "run.toml"
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def sysdiff_command() -> list[str]:
    """The ``sysdiff`` command of this environment."""
    exe = Path(sys.executable).with_name("sysdiff")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "sysdiff.flows.cli"]


def build_warehouse(folder: Path, n: int, seed: int = 0, ar_trials: int = 1000,
                    sentences: int | None = None) -> Path:
    """``sysdiff run`` of ``n`` perturbed systems into ``folder/wh`` (kept if it exists)."""
    root = folder / "wh"
    if (root / "sysdiff.duckdb").exists():
        return root
    run = write_run_file(folder, n, seed, ar_trials, sentences=sentences)
    proc = subprocess.run([*sysdiff_command(), "run", str(run), "-w", str(root)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"sysdiff run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return root


# ------------------------------------------------------------------------- synthetic

def synthetic_tables(n: int, seed: int = 0, units: int = 10_000,
                     views: tuple[str, ...] = ("upos", "las")) -> dict[str, pl.DataFrame]:
    """Aggregate tables of ``n`` systems with random but well-formed figures (no token data):
    for the report at more systems than the compare step can run today. Pairs and change
    cells cover every ordered pair; oracles the subsets the report reads (singles, pairs,
    leave-one-out, the full set)."""
    rng = np.random.default_rng(seed)
    names = [f"{BASES_LIST[i % 4]}@p{i // 4 + 1:03d}" for i in range(n)]
    labels = [f"L{k}" for k in range(20)]
    share = rng.dirichlet(np.ones(len(labels)) * 2)
    tables: dict[str, list[dict]] = {t: [] for t in (
        "scores", "pairs", "changes", "labels", "oracles", "oracle_labels", "difficulty",
        "majority")}
    for view in views:
        punct = view != "las"
        key = {"corpus": "syn", "view": view, "punct": punct, "options": ""}
        group = rng.integers(0, 4, n)
        acc = rng.uniform(0.85, 0.95, n)
        correct = np.rint(acc * units).astype(int)
        for i, s in enumerate(names):
            tables["scores"].append({**key, "system": s, "n_units": units,
                                     "n_correct": int(correct[i]), "accuracy": correct[i] / units,
                                     "n_sents": 400, "n_sents_exact": int(acc[i] * 200),
                                     "sent_exact": acc[i] / 2})
            for k, lab in enumerate(labels):
                m = max(int(share[k] * units), 1)
                a = float(np.clip(acc[i] + rng.normal(0, 0.05), 0, 1))
                tables["labels"].append({**key, "system": s, "gold_label": lab, "n": m,
                                         "n_correct": int(a * m), "accuracy": int(a * m) / m})
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i >= j:
                    continue
                d = int(units * (0.02 + 0.03 * (group[i] != group[j]) + rng.uniform(0, 0.01)))
                delta = int(correct[j] - correct[i])
                d = max(d, abs(delta) + 50)
                fixed = max((d + delta) // 2, delta, 0)
                broken = fixed - delta
                p = float(rng.uniform(0, 0.2))
                for x, y, f, br, dl in ((a, b, fixed, broken, delta),
                                        (b, a, broken, fixed, -delta)):
                    tables["pairs"].append({
                        **key, "sys1": x, "sys2": y, "n_units": units, "n_diff": d,
                        "corrections": f, "new_errors": br, "changed_errors": d - f - br,
                        "diff": d / units, "delta_acc": dl / units, "mcnemar_p": p, "ar_p": p,
                        "diff_head_only": None, "diff_label_only": None, "diff_both": None})
                    for cls, count in (("correction", f), ("new_error", br),
                                       ("changed_error", d - f - br)):
                        for c in range(3):
                            tables["changes"].append({
                                **key, "sys1": x, "sys2": y, "class": cls,
                                "gold": labels[c], "l1": labels[c + 1], "l2": labels[c + 2],
                                "attachment": False, "count": max(count // (2 + c), 0)})
        best = int(correct.max())
        subsets = [[s] for s in names] + [[a, b] for i, a in enumerate(names)
                                         for b in names[i + 1:]]
        subsets += [[x for x in names if x != s] for s in names] + [list(names)]
        for sub in subsets:
            idx = [names.index(x) for x in sub]
            top = int(correct[idx].max())
            n_correct = min(units, top + int((len(sub) - 1) ** 0.5 * units * 0.02))
            tables["oracles"].append({**key, "systems": sorted(sub), "n_systems": len(sub),
                                      "n_units": units, "n_correct": n_correct,
                                      "accuracy": n_correct / units, "best_single": top,
                                      "gain": (n_correct - top) / units})
            if len(sub) in (2, n):
                for k, lab in enumerate(labels):
                    m = max(int(share[k] * units), 1)
                    tables["oracle_labels"].append({
                        **key, "systems": sorted(sub), "gold_label": lab, "n": m,
                        "n_correct": int(m * n_correct / units)})
        hist = rng.multinomial(units, np.r_[0.02, np.full(n - 1, 0.1 / max(n - 1, 1)), 0.88])
        tables["difficulty"] += [{**key, "k_correct": k, "gold_label": None, "n": int(c)}
                                 for k, c in enumerate(hist)]
        tables["majority"].append({**key, "systems": sorted(names), "n_units": units,
                                   "n_correct": best, "accuracy": best / units})
    out = {t: pl.DataFrame(rows) for t, rows in tables.items()}
    out["systems"] = pl.DataFrame({
        "corpus": "syn", "system": ["__key__", *names],
        "role": ["key"] + ["system"] * n, "format": "conllu", "task": "dep"})
    return out


def synthetic_warehouse(folder: Path, n: int, seed: int = 0) -> Path:
    """A warehouse holding ``synthetic_tables`` (committed as a run would, so that the
    sandboxed catalog reads it)."""
    from sysdiff.flows.warehouse import corpus_partition, open_run
    from sysdiff.schemas.tables import TABLES

    root = folder / "wh"
    with open_run(root) as stage:
        for name, df in synthetic_tables(n, seed).items():
            full = df.with_columns(pl.lit(None).alias(c) for c in TABLES[name].names
                                   if c not in df.columns)
            stage.write(name, corpus_partition("syn"), "synthetic", full)
    return root


# ------------------------------------------------------------------------- measuring

def measure(root: Path, out: Path, repeats: int, profile: Path, per_cell: int = 3) -> dict:
    """Build the report ``repeats`` times and load it ``repeats`` times; medians."""
    from sysdiff.flows.report import build_report

    build = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        build_report(root, None, out, per_cell)
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
    ap.add_argument("--sentences", type=int, default=None,
                    help="only the first K sentences of the key (the report at many systems "
                    "without the cost of a full run); default: all 456")
    ap.add_argument("--synthetic", action="store_true",
                    help="random aggregate tables instead of a run (no token data, so no "
                    "examples): the report at more systems than the compare step runs today")
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
        folder = work / (f"syn{n}" if args.synthetic else f"n{n}" if args.sentences is None
                         else f"n{n}-s{args.sentences}")
        t0 = time.perf_counter()
        fresh = args.synthetic or not (folder / "wh" / "sysdiff.duckdb").exists()
        root = synthetic_warehouse(folder, n) if args.synthetic else \
            build_warehouse(folder, n, ar_trials=args.ar_trials, sentences=args.sentences)
        run_s = time.perf_counter() - t0 if fresh else float("nan")
        profile = folder / "chromium"
        shutil.rmtree(profile, ignore_errors=True)
        r = measure(root, folder / "report.html", args.repeats, profile,
                    0 if args.synthetic else 3)
        print(f"{n:>4} {run_s:>7.1f} {r['build_s']:>9.2f} {r['bytes'] / 1e6:>8.2f} "
              f"{r['load_ms']:>8.0f} {r['frame_ms']:>9.0f} {r['wall_ms']:>8.0f} "
              f"{r['nodes']:>7}  {json.dumps(r['loads_ms'])}", flush=True)


if __name__ == "__main__":
    main()
