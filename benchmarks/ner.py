"""NER at scale: a key and N systems of 1M tokens each, ``sysdiff run --task ner`` end to end
vs running ``seqeval`` on each system.

The data is generated (seeded) as ``word<TAB>tag`` IOB2 files, sentences of 5-40 tokens,
``-DOCSTART-`` every 500 sentences, about one entity span (1-3 tokens; PER, ORG, LOC, MISC)
per 18 tokens. System k keeps each key span with probability ~0.82 - 0.01 k, else misses
it, changes its type, or shrinks or extends it by one token, and adds spurious one-token
spans: the span classes of METRICS 5.2 all occur.

- sysdiff: one ``sysdiff run`` subprocess per repeat on a fresh warehouse (Prefect in its
  default mode, as a user runs it: the background server and the warm runner): ingest and
  validation of all files, span scores per type, token accuracy, span classes, every pair
  over span units with transitions and both significance tests, the oracle of every subset.
  Timed: the whole command (wall), and in one more ``-v`` run (its own process) the flow's
  own time (``sysdiff: run: ... s``).
- baseline: what a user does without sysdiff, for each system: read the file into lists of
  tags (the key is read once, not timed) and call ``seqeval``'s ``classification_report``
  (default mode = conlleval's, as sysdiff's default; P/R/F1 per type and micro) and
  ``accuracy_score``. Only the scores: no classes, pairs, oracles or significance.

Both in the same run; printed: medians, the seqeval total over the N systems, and the ratio.

    python benchmarks/ner.py [--systems 10] [--tokens 1000000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
TYPES = ["PER", "ORG", "LOC", "MISC"]
#: Tag codes: 0 = O, 1 + 2t = B-type t, 2 + 2t = I-type t.
TAG_NAMES = np.array(["O"] + [f"{p}-{t}" for t in TYPES for p in ("B", "I")], dtype=object)
DOC_SENTS = 500


def key_spans(rng: np.random.Generator, n_tok: int) -> tuple[np.ndarray, ...]:
    """Sentence ids and the key's spans (start, end inclusive, type), inside sentences and
    separated by at least one O token."""
    lengths = rng.integers(5, 41, n_tok // 5)
    sent = np.repeat(np.arange(lengths.size), lengths)[:n_tok].astype(np.int64)
    starts = np.flatnonzero(rng.random(n_tok) < 1 / 18)
    span_len = rng.choice([1, 2, 3], starts.size, p=[0.5, 0.35, 0.15])
    ends = starts + span_len - 1
    keep = (ends < n_tok)
    starts, ends = starts[keep], ends[keep]
    keep = sent[starts] == sent[ends]
    starts, ends = starts[keep], ends[keep]
    # no overlap, one O between spans: drop a span that starts within 1 token of the last
    ok = np.ones(starts.size, bool)
    last_end = -2
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        if s <= last_end + 1:
            ok[i] = False
        else:
            last_end = e
    starts, ends = starts[ok], ends[ok]
    return sent, starts, ends, rng.integers(0, len(TYPES), starts.size)


def tags_of(n_tok: int, starts: np.ndarray, ends: np.ndarray, types: np.ndarray) -> np.ndarray:
    """Tag codes of the spans (IOB2)."""
    codes = np.zeros(n_tok, np.int8)
    lengths = ends - starts + 1
    idx = np.repeat(starts, lengths) + (np.arange(lengths.sum())
                                        - np.repeat(np.cumsum(lengths) - lengths, lengths))
    first = np.zeros(idx.size, bool)
    first[np.cumsum(lengths) - lengths] = True
    codes[idx] = np.where(first, 1, 2) + 2 * np.repeat(types, lengths)
    return codes


def system_spans(rng: np.random.Generator, k: int, sent: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray, types: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, ...]:
    """System k's spans: the key's with errors (missed, type, boundary) and spurious ones."""
    n_tok = sent.size
    r = rng.random(starts.size)
    err = 0.18 + 0.01 * k
    missed, wrong_type = r < err / 3, (r >= err / 3) & (r < 2 * err / 3)
    boundary = (r >= 2 * err / 3) & (r < err)
    s, e, t = starts.copy(), ends.copy(), types.copy()
    t[wrong_type] = (t[wrong_type] + rng.integers(1, len(TYPES), wrong_type.sum())) % len(TYPES)
    shrink = boundary & (e > s)
    e[shrink] -= 1
    nxt = np.minimum(e + 1, n_tok - 1)
    grow = boundary & ~shrink & (e + 1 < n_tok) & (key[nxt] == 0) & (sent[nxt] == sent[e])
    e[grow] += 1
    keep = ~missed
    s, e, t = s[keep], e[keep], t[keep]
    # spurious one-token spans on O tokens whose neighbours are O in the system too
    codes = tags_of(n_tok, s, e, t)
    left = np.concatenate([[0], codes[:-1]])
    right = np.concatenate([codes[1:], [0]])
    free = (codes == 0) & (left == 0) & (right == 0)
    spurious = np.flatnonzero(free & (rng.random(n_tok) < 0.01 + 0.001 * k))
    spurious = spurious[np.concatenate([[True], np.diff(spurious) > 1])]
    order = np.argsort(np.concatenate([s, spurious]), kind="stable")
    all_s = np.concatenate([s, spurious])[order]
    all_e = np.concatenate([e, spurious])[order]
    all_t = np.concatenate([t, rng.integers(0, len(TYPES), spurious.size)])[order]
    return all_s, all_e, all_t


def write_tsv(path: Path, words: np.ndarray, sent: np.ndarray, codes: np.ndarray) -> None:
    """``word<TAB>tag`` lines, a blank line after each sentence, ``-DOCSTART-`` lines."""
    last = np.concatenate([sent[1:] != sent[:-1], [True]])
    first = np.concatenate([[True], sent[1:] != sent[:-1]])
    doc = first & (sent % DOC_SENTS == 0)
    df = pl.DataFrame({"w": words, "t": TAG_NAMES[codes].astype(str), "last": last,
                       "doc": doc})
    lines = df.select(pl.concat_str([
        pl.when(pl.col("doc")).then(pl.lit("-DOCSTART-\tO\n\n")).otherwise(pl.lit("")),
        pl.col("w"), pl.lit("\t"), pl.col("t"),
        pl.when(pl.col("last")).then(pl.lit("\n")).otherwise(pl.lit(""))]))
    path.write_text("\n".join(lines.to_series().to_list()) + "\n", encoding="utf-8")


def generate(folder: Path, n_tok: int, n_sys: int, seed: int = 0) -> dict[str, Path]:
    """The key and ``n_sys`` systems under ``folder``."""
    rng = np.random.default_rng(seed)
    sent, starts, ends, types = key_spans(rng, n_tok)
    vocab = np.array([f"w{i}" for i in range(20000)], dtype=object)
    words = vocab[rng.integers(0, vocab.size, n_tok)].astype(str)
    key = tags_of(n_tok, starts, ends, types)
    paths = {"key": folder / "key.tsv"}
    write_tsv(paths["key"], words, sent, key)
    for k in range(n_sys):
        s, e, t = system_spans(rng, k, sent, starts, ends, types, key)
        paths[f"sys{k}"] = folder / f"sys{k}.tsv"
        write_tsv(paths[f"sys{k}"], words, sent, tags_of(n_tok, s, e, t))
    return paths


def read_tags(path: Path) -> list[list[str]]:
    """A user's reader: the tag column as one list per sentence (document lines skipped)."""
    sents = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        tags = [line.rsplit("\t", 1)[1] for line in block.split("\n")
                if line and not line.startswith("-DOCSTART-")]
        if tags:
            sents.append(tags)
    return sents


def seqeval_system(key: list[list[str]], path: Path) -> dict:
    """The baseline for one system: read it, P/R/F1 per type and micro, token accuracy."""
    from seqeval.metrics import accuracy_score, classification_report

    pred = read_tags(path)
    report = classification_report(key, pred, output_dict=True, zero_division=0)
    report["accuracy"] = accuracy_score(key, pred)
    return report


RUN_RE = re.compile(r"^sysdiff: run: ([0-9.]+) s$", re.M)


def sysdiff_run(paths: dict[str, Path], wh: Path, verbose: bool = False
                ) -> tuple[float, float]:
    """(wall seconds of the command, the flow's own seconds with ``verbose``, else nan) of
    one fresh ``sysdiff run``. Without ``-v`` the run goes to the warm runner, as a user's
    does; ``-v`` runs in its own process (``SYSDIFF_RUNNER=off``)."""
    shutil.rmtree(wh, ignore_errors=True)
    args = [sys.executable, "-m", "sysdiff", "run", *["-v"] * verbose, "--task", "ner",
            "--corpus", "bench",
            "--key", str(paths["key"]), "-w", str(wh),
            *[f"--system={k}={p}" for k, p in paths.items() if k != "key"]]
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false")
    if verbose:  # in its own process (a -v run would go to the warm runner too)
        env["SYSDIFF_RUNNER"] = "off"
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"sysdiff failed: {proc.stderr[-2000:]}")
    m = RUN_RE.search(proc.stderr)
    return wall, float(m[1]) if m else float("nan")


def check_same_figures(wh: Path, name: str, report: dict) -> None:
    """sysdiff's ALL row of one system equals seqeval's micro average (a sanity check)."""
    from sysdiff.flows.queries import query

    r = query(wh, f"select * from span_scores where system = '{name}' and type = 'ALL'")
    micro = report["micro avg"]
    got = (r["precision"][0], r["recall"][0], r["f1"][0])
    want = (micro["precision"], micro["recall"], micro["f1-score"])
    assert np.allclose(got, want, atol=1e-12), (name, got, want)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="sysdiff runs (median)")
    ap.add_argument("--keep", help="generate into this folder and keep it")
    args = ap.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sysdiff-ner-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        paths = generate(folder, args.tokens, args.systems)
        size = sum(p.stat().st_size for p in paths.values())
        print(f"generated {args.systems} systems + key x {args.tokens:,} tokens "
              f"({size / 2**20:.0f} MiB) in {time.perf_counter() - t0:.1f} s", flush=True)
        wh = folder / "warehouse"
        runs = []
        for i in range(args.repeat):
            runs.append(sysdiff_run(paths, wh))
            print(f"sysdiff run {i + 1}: {runs[-1][0]:.2f} s wall", flush=True)
        verbose = sysdiff_run(paths, wh, verbose=True)
        print(f"sysdiff run -v (own process): {verbose[0]:.2f} s wall, flow {verbose[1]:.2f} s",
              flush=True)
        key = read_tags(paths["key"])
        per_system = []
        for name, path in paths.items():
            if name == "key":
                continue
            t0 = time.perf_counter()
            report = seqeval_system(key, path)
            per_system.append(time.perf_counter() - t0)
            print(f"seqeval {name}: {per_system[-1]:.2f} s", flush=True)
            check_same_figures(wh, name, report)
        wall = statistics.median(r[0] for r in runs)
        flow = verbose[1]
        total = sum(per_system)
        print(f"\n{args.systems} systems x {args.tokens:,} tokens")
        print(f"sysdiff run, whole command (median of {args.repeat}): {wall:.2f} s")
        print(f"sysdiff run, flow without Prefect start-up (one -v run): {flow:.2f} s")
        print(f"seqeval per system (median of {len(per_system)}): "
              f"{statistics.median(per_system):.2f} s; all {len(per_system)} systems: "
              f"{total:.2f} s")
        print(f"ratio (seqeval total / sysdiff whole command): {total / wall:.1f}x "
              f"(target >= 20x); against the flow alone: {total / flow:.1f}x")
        print("sysdiff's micro P/R/F1 equal seqeval's for every system (checked)")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
