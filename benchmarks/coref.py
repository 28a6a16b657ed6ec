"""Benchmark of the coreference side: reading, standard scores, ARCS, pairs/oracles.

Scenarios (each run in a fresh subprocess so that its peak RSS is its own):

- ``1x``:  the shared LitBank key (20 documents, ~42k tokens) with N perturbed responses;
- ``10x``: the same key replicated 10 times (200 documents) with N perturbed responses;
- ``80k``: one synthetic 80,000-token document (heavy-tailed entity sizes) with N responses.

Responses come from a seeded perturbation generator (drop, shift, merge, split, spurious)
and are written as CoNLL-2012 files, so reading is measured too. Times are medians over
``--repeats`` runs; "per response" = read the response + all standard metrics, and
separately the ARCS classes under both criteria. Usage::

    python benchmarks/coref.py [--responses 5] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sysdiff.schemas.formats.coref import read_coref  # noqa: E402
from sysdiff.schemas.formats.coref_conll2012 import (  # noqa: E402
    _split_lines,
    conll_line_kinds,
)
from sysdiff.transforms.arcs import coref_agreement, coref_oracles, coref_pairs, mention_classes  # noqa: E402
from sysdiff.transforms.coref import coref_counts, coref_scores  # noqa: E402

LITBANK = ROOT / "data" / "litbank" / "key.conll"
BASELINE_S = 2.5          # the two peer scorers, per LitBank response (README)


# ------------------------------------------------------------------------- generation


def perturb(mentions: pl.DataFrame, n_tokens: dict[tuple[str, int], int], seed: int,
            rate: float) -> pl.DataFrame:
    """A response made from ``mentions``: each operation hits about ``rate`` of the mentions
    (entities for merge/split). Returns doc, part, start, end, entity (int)."""
    rng = np.random.default_rng(seed)
    m = mentions.select("doc", "part", "start", "end", "entity").with_columns(
        entity=pl.struct("doc", "part", "entity").rank("dense").cast(pl.Int64)
    ).sort("doc", "part", "start")
    n = m.height
    ent = m["entity"].to_numpy().copy()
    start, end = m["start"].to_numpy().copy(), m["end"].to_numpy().copy()
    doc_keys = list(zip(m["doc"].to_list(), m["part"].to_list(), strict=True))
    ntok = np.array([n_tokens[k] for k in doc_keys])
    # shift one boundary by one token
    hit = rng.random(n) < rate
    side = rng.random(n) < 0.5
    step = rng.choice([-1, 1], n)
    start = np.where(hit & side, np.clip(start + step, 0, end), start)
    end = np.where(hit & ~side, np.clip(end + step, start, ntok - 1), end)
    # merge an entity into the entity of a random mention of the same document
    doc_code = m.select(
        (pl.col("doc") != pl.col("doc").shift(1)) | (pl.col("part") != pl.col("part").shift(1))
    ).to_series().fill_null(True).cum_sum().to_numpy()
    lo = np.searchsorted(doc_code, doc_code, side="left")
    hi = np.searchsorted(doc_code, doc_code, side="right")
    target = ent[lo + (rng.random(n) * (hi - lo)).astype(np.int64)]
    n_ent = int(ent.max()) + 1
    merge_into = np.arange(n_ent)
    first_row = np.unique(ent, return_index=True)[1]
    chosen = rng.random(len(first_row)) < rate / 2
    merge_into[ent[first_row[chosen]]] = target[first_row[chosen]]
    ent = merge_into[ent]
    # split: half of an entity's mentions move to a new entity
    split_ent = rng.random(n_ent) < rate / 2
    moved = split_ent[ent] & (rng.random(n) < 0.5)
    ent = np.where(moved, ent + n_ent, ent)
    # drop
    keep = rng.random(n) >= rate
    out = pl.DataFrame({"doc": m["doc"], "part": m["part"], "start": start, "end": end,
                        "entity": ent}).filter(pl.Series(keep))
    # spurious mentions: half new singletons, half added to an existing entity
    k = int(rate * n)
    rows = rng.integers(0, n, k)
    sp_start = np.minimum(start[rows] + np.maximum(rng.integers(-20, 20, k), -start[rows]),
                          ntok[rows] - 1)
    sp_end = np.minimum(sp_start + rng.geometric(0.6, k) - 1, ntok[rows] - 1)
    sp_ent = np.where(rng.random(k) < 0.5, 3 * n_ent + np.arange(k), ent[rows])
    spurious = pl.DataFrame({"doc": m["doc"].gather(rows), "part": m["part"].gather(rows),
                             "start": sp_start, "end": sp_end, "entity": sp_ent})
    resp = (
        pl.concat([out, spurious], how="vertical_relaxed")
        .unique(["doc", "part", "start", "end"], keep="first", maintain_order=True)
        .with_columns(pl.col("start", "end").cast(pl.Int32), pl.col("part").cast(pl.Int32))
    )
    # brackets cannot tell crossing or touching mentions of one entity apart from nested
    # ones (readers pair them LIFO): keep mentions of an entity disjoint
    prev_end = pl.col("end").cum_max().shift(1).over("doc", "part", "entity")
    return resp.sort("doc", "part", "entity", "start", "end").filter(
        prev_end.is_null() | (pl.col("start") > prev_end))


def coref_column(mentions: pl.DataFrame) -> pl.DataFrame:
    """CoNLL coreference strings per (doc, part, pos) for these mentions."""
    e = pl.col("entity").cast(pl.Utf8)
    single = mentions.filter(pl.col("start") == pl.col("end")).select(
        "doc", "part", pos="start", b=pl.concat_str(pl.lit("("), e, pl.lit(")")))
    multi = mentions.filter(pl.col("start") != pl.col("end"))
    opens = multi.select("doc", "part", pos="start", b=pl.concat_str(pl.lit("("), e))
    closes = multi.select("doc", "part", pos="end", b=pl.concat_str(e, pl.lit(")")))
    return (
        pl.concat([single, opens, closes])
        .group_by("doc", "part", "pos").agg(pl.col("b").str.join("|"))
        .with_columns(pl.col("pos").cast(pl.Int32), pl.col("part").cast(pl.Int32))
    )


def template(text: str) -> pl.DataFrame:
    """Lines of a CoNLL file with doc/part/pos of token lines (to rewrite the last column)."""
    lines = _split_lines(text).fill_null("")
    kind = conll_line_kinds(lines, "template")
    frame = pl.DataFrame({"text": lines, "is_tok": kind == 4, "is_begin": kind == 0,
                          "doc_idx": np.cumsum(kind == 0)})
    begins = frame.filter(pl.col("is_begin")).select(
        "doc_idx", doc=pl.col("text").str.extract(r"\((.*)\)"),
        part=pl.col("text").str.extract(r"part\s+(\d+)").cast(pl.Int32).fill_null(0))
    return frame.join(begins, on="doc_idx", how="left").with_columns(
        pos=pl.when(pl.col("is_tok"))
        .then(pl.int_range(pl.len()).over("doc_idx", "is_tok")).cast(pl.Int32))


def write_conll(tmpl: pl.DataFrame, mentions: pl.DataFrame, path: Path) -> None:
    col = coref_column(mentions)
    out = tmpl.join(col, on=["doc", "part", "pos"], how="left", maintain_order="left")
    text = out.select(
        pl.when(pl.col("is_tok"))
        .then(pl.concat_str(pl.col("text").str.extract(r"^(.*)\t[^\t]*$"), pl.lit("\t"),
                            pl.col("b").fill_null("-")))
        .otherwise(pl.col("text"))
    ).to_series()
    path.write_text("\n".join(text.to_list()) + "\n", encoding="utf-8")


def replicate(text: str, times: int) -> str:
    """The file repeated ``times`` times, documents renamed ``NAME_cI``."""
    return "".join(re.sub(r"^(#begin document \()([^)]*)\)", rf"\1\2_c{i})", text, flags=re.M)
                   for i in range(times))


def synthetic(n_tokens: int, seed: int) -> tuple[str, pl.DataFrame]:
    """Template text of one document and key mentions with heavy-tailed entity sizes."""
    rng = np.random.default_rng(seed)
    lines = ["#begin document (synthetic); part 0"]
    for i in range(n_tokens):
        lines.append("\t".join(["synthetic", "0", str(i), f"w{i % 97}"] + ["_"] * 8 + ["-"]))
        if i % 20 == 19:
            lines.append("")
    lines.append("#end document")
    n_m = int(0.13 * n_tokens)
    starts = np.sort(rng.choice(n_tokens, n_m, replace=False))
    ends = np.minimum(starts + rng.geometric(0.55, n_m) - 1, n_tokens - 1)
    ents = (rng.zipf(1.4, n_m) - 1) % 4000
    m = pl.DataFrame({"doc": ["synthetic"] * n_m, "part": [0] * n_m, "start": starts,
                      "end": ends, "entity": ents.astype(str)}).with_columns(
        pl.col("start", "end", "part").cast(pl.Int32))
    return "\n".join(lines) + "\n", m


def build(workdir: Path, scenario: str, n_resp: int) -> tuple[Path, list[Path]]:
    """Key and response files of a scenario."""
    if scenario == "80k":
        tmpl_text, key_m = synthetic(80_000, seed=7)
        tmpl = template(tmpl_text)
        key_path = workdir / "key80k.conll"
        write_conll(tmpl, key_m, key_path)
    else:
        times = 10 if scenario == "10x" else 1
        tmpl_text = replicate(LITBANK.read_text(encoding="utf-8"), times)
        key_path = workdir / f"key{scenario}.conll"
        key_path.write_text(tmpl_text, encoding="utf-8")
        tmpl = template(tmpl_text)
    key = read_coref(key_path)
    n_tok = {(d, p): n for d, p, n in tmpl.filter(pl.col("is_tok")).group_by(
        "doc", "part").agg(pl.len()).iter_rows()}
    paths = []
    for i in range(n_resp):
        path = workdir / f"{scenario}_sys{i}.conll"
        write_conll(tmpl, perturb(key, n_tok, seed=100 + i, rate=0.05 + 0.03 * i), path)
        paths.append(path)
    return key_path, paths


# ---------------------------------------------------------------------------- measuring


def measure(key_path: Path, resp_paths: list[Path], repeats: int) -> dict:
    """Median times of one scenario (run inside a child process)."""
    t0 = time.perf_counter()
    key = read_coref(key_path)
    res: dict = {"read_key_s": time.perf_counter() - t0, "n_key_mentions": key.height}
    per = {"read": [], "scores": [], "arcs": []}
    multi = {"pairs_oracles": [], "agreement": []}
    for _ in range(repeats):
        classes = {"any": {}, "nom": {}}
        mentions = {}
        for p in resp_paths:
            a = time.perf_counter()
            resp = read_coref(p)
            b = time.perf_counter()
            coref_scores(coref_counts(key, resp))
            c = time.perf_counter()
            for crit in classes:
                classes[crit][p.stem] = mention_classes(key, resp, crit)
            d = time.perf_counter()
            per["read"].append(b - a)
            per["scores"].append(c - b)
            per["arcs"].append(d - c)
            mentions[p.stem] = resp
        a = time.perf_counter()
        for crit, by_sys in classes.items():
            coref_pairs(by_sys, crit)
            coref_oracles(by_sys, crit)
        multi["pairs_oracles"].append(time.perf_counter() - a)
        a = time.perf_counter()
        coref_agreement(mentions)
        multi["agreement"].append(time.perf_counter() - a)
    res.update({f"{k}_s": statistics.median(v) for k, v in per.items()})
    res.update({f"{k}_min_s": min(v) for k, v in per.items()})
    res.update({f"{k}_s": statistics.median(v) for k, v in multi.items() if v})
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def child(args: argparse.Namespace) -> None:
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # after imports
    with tempfile.TemporaryDirectory() as tmp:
        key_path, paths = build(Path(tmp), args.child, args.responses)
        n_tokens = sum(1 for ln in key_path.read_text().splitlines()
                       if ln.strip() and not ln.startswith("#"))
        res = measure(key_path, paths, args.repeats)
    res.update(scenario=args.child, n_tokens=n_tokens, responses=args.responses,
               base_rss_mb=base_mb)
    print(json.dumps(res))


def run(scenario: str, responses: int, repeats: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", scenario, "--responses", str(responses),
         "--repeats", str(repeats)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: list[dict]) -> None:
    print(f"{'scenario':8} {'tokens':>8} {'read':>8} {'scores':>8} {'arcs x2':>8} "
          f"{'resp tot':>9} {'pairs+or':>9} {'agree':>8} {'peak MB':>8} {'(base)':>7}")
    for r in results:
        tot = r["read_s"] + r["scores_s"]
        print(f"{r['scenario']:8} {r['n_tokens']:>8} {r['read_s'] * 1e3:8.1f} "
              f"{r['scores_s'] * 1e3:8.1f} {r['arcs_s'] * 1e3:8.1f} {tot * 1e3:9.1f} "
              f"{r['pairs_oracles_s'] * 1e3:9.1f} "
              f"{r['agreement_s'] * 1e3:8.1f} {r['peak_rss_mb']:8.0f} {r['base_rss_mb']:7.0f}")
    print("times in ms, medians; read/scores/arcs per response, pairs+oracles (both criteria)"
          " and agreement for all responses; peak = max RSS of the run, base = after imports")
    by = {r["scenario"]: r for r in results}
    one = by["1x"]
    tot1 = one["read_s"] + one["scores_s"]
    best1 = one["read_min_s"] + one["scores_min_s"]
    print(f"\nper response on the 20-document set (read + all standard metrics): "
          f"{tot1 * 1e3:.1f} ms -> {BASELINE_S / tot1:.1f}x faster than {BASELINE_S} s "
          f"(best run {best1 * 1e3:.1f} ms -> {BASELINE_S / best1:.1f}x)")
    print(f"  with ARCS under both criteria too: {(tot1 + one['arcs_s']) * 1e3:.1f} ms -> "
          f"{BASELINE_S / (tot1 + one['arcs_s']):.1f}x")
    for name in ("10x", "80k"):
        if name in by:
            r = by[name]
            tok_ratio = r["n_tokens"] / one["n_tokens"]
            for part in ("read", "scores", "arcs"):
                ratio = r[f"{part}_s"] / one[f"{part}_s"]
                print(f"scaling {name}/1x {part:6}: time x{ratio:5.2f} for tokens "
                      f"x{tok_ratio:5.2f} (time per token x{ratio / tok_ratio:4.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scenarios", default="1x,10x,80k")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    results = []
    for s in args.scenarios.split(","):
        reps = max(1, args.repeats // 2) if s == "10x" else args.repeats
        results.append(run(s, args.responses, reps))
        print(f"done {s}: {json.dumps(results[-1])}", file=sys.stderr)
    report(results)


if __name__ == "__main__":
    main()
