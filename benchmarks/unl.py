"""Benchmark: UNLization scoring end to end on a synthetic corpus.

Builds an expected UNL document of N sentences (graphs of 5-30 relations with constraint
lists, node ids, scopes and attributes) and an actual document with controlled perturbations
(relabelled relations, replaced UWs, added/dropped attributes, dropped relations, natural-
language words, disconnected graphs, unparsable lines). Each run reads both texts
(``read_unl``), scores them (``score_unlization``) and computes corpus scores (``unl_scores``).
Reports sentences per second, median over the runs.

    python benchmarks/unl.py --sentences 100000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from sysdiff.schemas.formats.unl import read_unl
from sysdiff.transforms.unl import score_unlization, unl_scores

LABELS = ["agt", "obj", "aoj", "mod", "plc", "tim", "man", "ins", "ben", "gol", "src", "pur"]
HEADS = [f"concept{k}" for k in range(400)] + [f"to act {k}" for k in range(100)]
CONSTRAINTS = ["icl>thing", "icl>do,agt>thing,obj>thing", "equ>other", "iof>person", "icl>be"]
ATTRS = ["@past", "@pl", "@def", "@indef", "@entry", "@not", "@future", "@1"]


def make_graph(rng: random.Random) -> list[list]:
    """Relations [label, scope, src, tgt]; a node = [uw, node_id, attrs]. Connected (tree
    plus extras); sometimes two clauses joined through scopes."""
    n_rel = rng.randint(5, 30)
    nodes = []
    for k in range(n_rel + 1):
        uw = rng.choice(HEADS)
        if rng.random() < 0.7:
            uw += f"({rng.choice(CONSTRAINTS)})"
        nid = f"{k:02d}" if rng.random() < 0.3 else None
        nodes.append([uw, nid, rng.sample(ATTRS, rng.randint(0, 2))])
    nodes[0][2] = ["@entry", *nodes[0][2]]
    rels = []
    for k in range(1, n_rel + 1):
        j = rng.randrange(k)
        rels.append([rng.choice(LABELS), None, nodes[j], nodes[k]])
    if n_rel >= 10 and rng.random() < 0.3:  # split into scopes :01 and :02 joined by and
        half = n_rel // 2
        for r in rels[:half]:
            r[1] = "01"
        for r in rels[half:]:
            r[1] = "02"
        rels.append(["and", None, [":01", None, []], [":02", None, []]])
    return rels


def node_text(n: list) -> str:
    uw, nid, attrs = n
    if uw.startswith(":"):
        return uw + "".join("." + a for a in attrs)
    return uw + (f":{nid}" if nid else "") + "".join("." + a for a in attrs)


def graph_text(rels: list[list]) -> str:
    rows = []
    for label, scope, s, t in rels:
        rows.append(f"{label}{':' + scope if scope else ''}({node_text(s)}, {node_text(t)})")
    return "\n".join(rows)


def perturb(rels: list[list], rng: random.Random) -> str:
    """A perturbed copy: controlled error rates, some sentences untouched."""
    rels = [[lab, sc, list(s), list(t)] for lab, sc, s, t in rels]
    p = rng.random()
    if p < 0.30:
        pass  # identical
    elif p < 0.55:
        for r in rng.sample(rels, rng.randint(1, max(1, len(rels) // 8))):
            r[0] = rng.choice(LABELS)
    elif p < 0.70:
        r = rng.choice(rels)
        r[3] = [rng.choice(HEADS), None, r[3][2]]
    elif p < 0.80:
        for r in rng.sample(rels, min(3, len(rels))):
            r[3][2] = [*r[3][2], "@pl"] if "@pl" not in r[3][2] else []
    elif p < 0.88:
        rels.pop(rng.randrange(len(rels)))  # may disconnect the graph
    elif p < 0.92:
        rels[0][3] = ["[word]", None, []]
    elif p < 0.96:
        rels.append(["agt", None, ["island(icl>land)", None, []], ["sea", None, []]])
    else:
        return graph_text(rels) + "\nthis line is not UNL"
    return graph_text(rels)


def make_corpus(n: int, seed: int) -> tuple[str, str]:
    rng = random.Random(seed)
    exp, act = [], []
    for k in range(n):
        g = make_graph(rng)
        head = f"[S:{k + 1}]\n{{org:en}}\nsentence {k + 1}\n{{/org}}\n{{unl}}\n"
        exp.append(head + graph_text(g) + "\n{/unl}\n[/S]\n")
        act.append(head + perturb(g, rng) + "\n{/unl}\n[/S]\n")
    return "[D]\n" + "".join(exp) + "[/D]\n", "[D]\n" + "".join(act) + "[/D]\n"


def run_once(expected: str, actual: str) -> dict[str, float]:
    t0 = time.perf_counter()
    e, a = read_unl(expected), read_unl(actual)
    t1 = time.perf_counter()
    sentences = score_unlization(e, a)
    scores = unl_scores(sentences)
    t2 = time.perf_counter()
    return {"read_s": t1 - t0, "score_s": t2 - t1, "total_s": t2 - t0,
            "f1": scores["f1"].item(), "n": sentences.height}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t = time.perf_counter()
    expected, actual = make_corpus(args.sentences, args.seed)
    gen_s = time.perf_counter() - t
    runs = [run_once(expected, actual) for _ in range(args.runs)]
    med = {k: statistics.median(r[k] for r in runs) for k in ("read_s", "score_s", "total_s")}
    n_rel = expected.count("(") - expected.count("((")  # rough, for the report only
    print(json.dumps({
        "sentences": args.sentences,
        "runs": args.runs,
        "generate_s": round(gen_s, 2),
        "median_read_s": round(med["read_s"], 2),
        "median_score_s": round(med["score_s"], 2),
        "median_total_s": round(med["total_s"], 2),
        "sentences_per_s": round(args.sentences / med["total_s"]),
        "f1": round(runs[0]["f1"], 4),
        "expected_chars": len(expected),
        "approx_parens": n_rel,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
