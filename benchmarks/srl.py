"""SRL at scale: a key and N systems of generated CoNLL-2009 semantic role labelling,
``sysdiff run --task srl`` end to end vs scoring each system with the official CoNLL-2009
scorer's logic.

The official scorer, ``eval09.pl``, is a Perl script that is not on this machine (the peer
data's README names the repositories that vendor it; none is fetched here). The baseline is
therefore ``benchmarks/srl_eval09.py``, a line-by-line Python port of its semantic scoring,
checked against eval09.pl's printed counts on the bundled sample before the timing starts.
It computes the script's SRL figures only (not its syntactic tables), so the real script
would take longer than the port, not less. With ``--eval09 PATH`` the real script is run
instead (``perl PATH -q -g KEY -s SYSTEM``).

The data is generated (seeded): sentences of 5-40 words whose HEADs form a tree (each word
attached to an earlier one), a predicate on about one word in six (roleset ``lemma.0k``),
1-4 arguments per predicate on other words of its sentence (PropBank-like roles). System k
perturbs the key at rate ``0.1 + 0.02 k``: dropped predicates, changed senses, dropped and
relabelled arguments, arguments moved to the head's parent or first child (the boundary
class), spurious arguments and predicates. Every class of METRICS 6.2 occurs.

- sysdiff: one ``sysdiff run`` subprocess on a fresh warehouse (Prefect in its default mode:
  the background server and the warm runner): ingest and validation of all files, the
  official head-mode scores, argument and predicate classes, every pair with role->role
  changes, transitions and both significance tests, the oracle of every subset.
- baseline: for each system, the port (or the script) reads the key and the system and
  counts eval09.pl's semantic figures. Only the scores: no classes, pairs or oracles.

Both in the same run; printed: the times, the ratio, and a check that sysdiff's official
counts equal the baseline's for every system.

    python benchmarks/srl.py [--systems 10] [--tokens 1000000] [--repeat 1] [--keep DIR]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import srl_eval09  # noqa: E402  (the baseline, beside this file)

ROOT = Path(__file__).resolve().parent.parent
ROLES = np.array(["ARG0", "ARG1", "ARG2", "ARG3", "ARGM-TMP", "ARGM-LOC", "ARGM-MNR",
                  "ARGM-ADV", "ARGM-MOD", "ARGM-NEG", "R-ARG0", "C-ARG1"], dtype=object)
ROLE_P = np.array([0.22, 0.32, 0.1, 0.02, 0.08, 0.05, 0.05, 0.05, 0.04, 0.03, 0.02, 0.02])
POS = np.array(["NN", "VB", "VBD", "VBZ", "JJ", "NNS", "IN", "DT", "RB", "PRP"], dtype=object)
DOC_SENTS = 500


def key_frames(rng: np.random.Generator, n_tok: int) -> tuple[pl.DataFrame, ...]:
    """(tokens: sent, id, head, pos, lemma; predicates: sent, pred, sense; arguments: sent,
    pred, pos, role) of the key."""
    lengths = rng.integers(5, 41, n_tok // 5 + 1)
    sent = np.repeat(np.arange(lengths.size), lengths)[:n_tok]
    first = np.r_[True, sent[1:] != sent[:-1]]
    start = np.flatnonzero(first)
    ids = np.arange(n_tok) - np.repeat(start, np.diff(np.r_[start, n_tok])) + 1
    head = np.where(ids == 1, 0, (rng.random(n_tok) * (ids - 1)).astype(np.int64) + 1)
    lemma = rng.integers(0, 2000, n_tok)
    tokens = pl.DataFrame({"sent": sent, "id": ids, "head": head,
                           "pos": POS[rng.integers(0, POS.size, n_tok)].astype(str),
                           "lemma": [f"w{x}" for x in lemma.tolist()]})
    is_pred = rng.random(n_tok) < 1 / 6
    preds = pl.DataFrame({"sent": sent[is_pred], "pred": ids[is_pred],
                          "sense": rng.integers(1, 4, int(is_pred.sum()))})
    n_len = np.bincount(sent)
    k = rng.integers(1, 5, preds.height)
    owner = np.repeat(np.arange(preds.height), k)
    p_sent = preds["sent"].to_numpy()[owner]
    pos = (rng.random(owner.size) * n_len[p_sent]).astype(np.int64) + 1
    args = pl.DataFrame({"sent": p_sent, "pred": preds["pred"].to_numpy()[owner], "pos": pos,
                         "role": rng.choice(ROLES, owner.size, p=ROLE_P).astype(str)})
    args = args.filter(pl.col("pos") != pl.col("pred")).unique(["sent", "pred", "pos"],
                                                               keep="first",
                                                               maintain_order=True)
    return tokens, preds, args


def perturb(rng: np.random.Generator, rate: float, tokens: pl.DataFrame, preds: pl.DataFrame,
            args: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A system: the key's predicates and arguments with errors of every class."""
    n = preds.height
    keep = rng.random(n) >= rate / 2
    sense = preds["sense"].to_numpy().copy()
    change = rng.random(n) < rate
    sense[change] = sense[change] % 3 + 1
    sp = preds.with_columns(sense=pl.Series(sense)).filter(pl.Series(keep))
    a = args.join(sp.select("sent", "pred"), on=["sent", "pred"], how="semi")
    r = rng.random(a.height)
    drop, relabel = r < rate / 2, (r >= rate / 2) & (r < rate)
    move = (r >= rate) & (r < 1.5 * rate)
    role = a["role"].to_numpy().astype(object)
    role[relabel] = rng.choice(ROLES, int(relabel.sum()), p=ROLE_P)
    heads = tokens.select("sent", pos="id", parent="head")
    child = tokens.filter(pl.col("head") > 0).group_by("sent", "head").agg(
        pl.col("id").min().alias("child")).rename({"head": "pos"})
    moved = a.with_columns(role=pl.Series(role.astype(str)), _move=pl.Series(move),
                           _up=pl.Series(rng.random(a.height) < 0.5)).join(
        heads, on=["sent", "pos"], how="left").join(child, on=["sent", "pos"], how="left")
    target = pl.when(pl.col("_up") & (pl.col("parent") > 0)).then(pl.col("parent")).otherwise(
        pl.col("child"))
    moved = moved.with_columns(pos=pl.when(pl.col("_move") & target.is_not_null()).then(
        target).otherwise(pl.col("pos")))
    a = moved.filter(~pl.Series(drop)).select("sent", "pred", "pos", "role")
    n_len = np.bincount(tokens["sent"].to_numpy())
    extra = sp.filter(pl.Series(rng.random(sp.height) < rate))
    spurious = extra.select("sent", "pred", pos=pl.Series(
        (rng.random(extra.height) * n_len[extra["sent"].to_numpy()]).astype(np.int64) + 1),
        role=pl.Series(rng.choice(ROLES, extra.height, p=ROLE_P).astype(str)))
    taken = sp.select("sent", "pred")
    cand = tokens.filter(pl.Series(rng.random(tokens.height) < rate / 20)).select(
        "sent", pred="id").join(taken, on=["sent", "pred"], how="anti")
    new_preds = cand.with_columns(sense=pl.lit(1, pl.Int64))
    new_args = cand.join(tokens.select("sent", pred="head", pos="id"), on=["sent", "pred"]
                         ).with_columns(role=pl.lit("ARG1"))
    sys_preds = pl.concat([sp, new_preds.select(sp.columns).cast(sp.schema)]).sort("sent",
                                                                                  "pred")
    sys_args = pl.concat([a, spurious.cast(a.schema), new_args.select(a.columns).cast(a.schema)])
    sys_args = sys_args.filter(pl.col("pos") != pl.col("pred")).unique(
        ["sent", "pred", "pos"], keep="first", maintain_order=True)
    return sys_preds, sys_args


def write_conll09(path: Path, tokens: pl.DataFrame, preds: pl.DataFrame,
                  args: pl.DataFrame) -> None:
    """CoNLL-2009 lines (one APRED column per predicate of the sentence, in word order)."""
    cols = preds.sort("sent", "pred").with_columns(
        k=pl.col("pred").cum_count().over("sent"))
    cells = (tokens.select("sent", "id").join(cols.select("sent", "pred", "k"), on="sent")
             .join(args.rename({"pos": "id"}), on=["sent", "pred", "id"], how="left")
             .sort("sent", "id", "k")
             .group_by("sent", "id", maintain_order=True)
             .agg(pl.col("role").fill_null("_").str.join("\t").alias("apred")))
    lemma = pl.col("lemma")
    pred = tokens.join(preds.select("sent", pred="pred", sense="sense"),
                       left_on=["sent", "id"], right_on=["sent", "pred"], how="left",
                       maintain_order="left")
    lines = pred.join(cells, on=["sent", "id"], how="left", maintain_order="left").select(
        pl.concat_str([
            pl.col("id").cast(pl.String), lemma, lemma, lemma, pl.col("pos"), pl.col("pos"),
            pl.lit("_"), pl.lit("_"), pl.col("head").cast(pl.String),
            pl.col("head").cast(pl.String), pl.lit("dep"), pl.lit("dep"),
            pl.when(pl.col("sense").is_not_null()).then(pl.lit("Y")).otherwise(pl.lit("_")),
            pl.when(pl.col("sense").is_not_null()).then(
                pl.concat_str([lemma, pl.lit(".0"), pl.col("sense").cast(pl.String)]))
            .otherwise(pl.lit("_")),
        ], separator="\t").alias("fixed"), "apred", "sent")
    text = lines.select(pl.when(pl.col("apred").is_not_null()).then(
        pl.concat_str(["fixed", "apred"], separator="\t")).otherwise(pl.col("fixed")),
        last=pl.col("sent") != pl.col("sent").shift(-1, fill_value=-1))
    out = text.select(pl.when(pl.col("last")).then(pl.concat_str([pl.col("fixed"),
                                                                  pl.lit("\n")]))
                      .otherwise(pl.col("fixed")))
    path.write_text("\n".join(out.to_series().to_list()) + "\n", encoding="utf-8")


def generate(folder: Path, n_tok: int, n_sys: int, seed: int = 0) -> dict[str, Path]:
    """The key and ``n_sys`` systems under ``folder``."""
    rng = np.random.default_rng(seed)
    tokens, preds, args = key_frames(rng, n_tok)
    paths = {"key": folder / "key.conll09"}
    write_conll09(paths["key"], tokens, preds, args)
    for k in range(n_sys):
        sp, sa = perturb(rng, 0.1 + 0.02 * k, tokens, preds, args)
        paths[f"sys{k}"] = folder / f"sys{k}.conll09"
        write_conll09(paths[f"sys{k}"], tokens, sp, sa)
    return paths


RUN_RE = re.compile(r"^sysdiff: run: ([0-9.]+) s$", re.M)


def sysdiff_run(paths: dict[str, Path], wh: Path, verbose: bool = False
                ) -> tuple[float, float]:
    """(wall seconds of the command, the flow's own seconds with ``verbose``) of one fresh
    ``sysdiff run`` (without ``-v``: through the warm runner, as a user's run)."""
    shutil.rmtree(wh, ignore_errors=True)
    args = [sys.executable, "-m", "sysdiff", "run", *["-v"] * verbose, "--task", "srl",
            "--corpus", "bench", "--key", str(paths["key"]), "-w", str(wh),
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


def official(key: Path, system: Path, eval09: str | None) -> tuple[int, int, int]:
    """(gold, predicted, correct) of the official labelled figure: the port, or the
    script's printed ``Labeled precision`` line."""
    if eval09 is None:
        c, _ = srl_eval09.score(key, system)
        return (c["tot_arg"] + c["tot_prop"], c["pred_arg"] + c["pred_prop"],
                c["corl_arg"] + c["corl_prop"])
    out = subprocess.run(["perl", eval09, "-q", "-g", str(key), "-s", str(system)],
                         capture_output=True, text=True, check=True).stdout
    p = re.search(r"Labeled precision:\s+\((\d+) \+ (\d+)\) / \((\d+) \+ (\d+)\)", out)
    r = re.search(r"Labeled recall:\s+\((\d+) \+ (\d+)\) / \((\d+) \+ (\d+)\)", out)
    return (int(r[3]) + int(r[4]), int(p[3]) + int(p[4]), int(p[1]) + int(p[2]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="sysdiff runs (median)")
    ap.add_argument("--eval09", help="the real eval09.pl (else the Python port)")
    ap.add_argument("--keep", help="generate into this folder and keep it")
    args = ap.parse_args()
    if args.eval09 is None:
        n = srl_eval09.check_bundled()
        print(f"baseline: the Python port of eval09.pl (equal to the script's counts on the "
              f"bundled sample: {n} figures)", flush=True)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sysdiff-srl-"))
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
        from sysdiff.flows.queries import query

        ours = {r["system"]: (r["n_gold"], r["n_pred"], r["n_correct"])
                for r in query(wh, "select * from srl_scores where mode = 'semantic_labeled' "
                                   "and role = 'ALL'").to_dicts()}
        per_system = []
        for name, path in paths.items():
            if name == "key":
                continue
            t0 = time.perf_counter()
            theirs = official(paths["key"], path, args.eval09)
            per_system.append(time.perf_counter() - t0)
            print(f"{'eval09.pl' if args.eval09 else 'port'} {name}: {per_system[-1]:.2f} s",
                  flush=True)
            assert ours[name] == theirs, (name, ours[name], theirs)
        wall = statistics.median(r[0] for r in runs)
        total = sum(per_system)
        what = "eval09.pl" if args.eval09 else "eval09.pl's logic (Python port)"
        print(f"\n{args.systems} systems x {args.tokens:,} tokens, CoNLL-2009")
        print(f"sysdiff run, whole command (median of {args.repeat}): {wall:.2f} s")
        print(f"sysdiff run, flow without Prefect start-up (one -v run): {verbose[1]:.2f} s")
        print(f"{what} per system (median of {len(per_system)}): "
              f"{statistics.median(per_system):.2f} s; all {len(per_system)} systems: "
              f"{total:.2f} s")
        print(f"ratio (baseline total / sysdiff whole command): {total / wall:.2f}x; against "
              f"the flow alone: {total / verbose[1]:.2f}x")
        print("sysdiff's official counts equal the baseline's for every system (checked)")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
