"""A line-by-line Python port of the semantic part of the CoNLL-2009 scorer ``eval09.pl``
(v0.4; ``parse_frames``, ``same_sense``, ``same_prop`` and ``update_srl_scores``), the
baseline of ``benchmarks/srl.py``.

The official scorer is a Perl script that is not bundled (its home page is unreachable from
here; the peer data's README names the repositories that vendor it). This port keeps its
structure and its rules: sentences read side by side, predicates where PRED is not ``_`` or
``-``, the sense after the dot of ``lemma.sense`` (else the whole), numeric senses compared
as numbers, arguments per APRED cell split on ``|`` (sorted, unique), predicates matched by
position, every (gold, system) argument pair at the same position compared, the greedy
unlabelled matching, propositions needing the sense and the same argument set. It leaves out
what the script computes besides SRL (the syntactic scores and error tables), so it is
faster than the script, not slower. ``python benchmarks/srl_eval09.py`` checks it against
``data/srl/expected.csv``.
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

SENSE = re.compile(r"^([^.]+)\.([^.]+)$")
NUMBER = re.compile(r"^[0-9]+$")


def sentences(path: Path):
    """The token lines of each sentence, split on white space (as ``eval09.pl``)."""
    lines: list[list[str]] = []
    with path.open(encoding="utf-8") as f:
        for raw in f:
            if raw.strip():
                lines.append(raw.split())
            elif lines:
                yield lines
                lines = []
    if lines:
        yield lines


def parse_frames(lines: list[list[str]]) -> list[dict]:
    """The propositions of a sentence: sense, PPOS, position and arguments (label, pos)."""
    props = []
    for i, tokens in enumerate(lines):
        lemma_sense = tokens[13]
        if lemma_sense not in ("_", "-"):
            m = SENSE.match(lemma_sense)
            sense = m.group(2) if m else lemma_sense
            props.append({"sense": sense, "pposs": tokens[5], "position": i,
                          "column": 14 + len(props), "args": []})
    for prop in props:
        for i, tokens in enumerate(lines):
            label = tokens[prop["column"]]
            if label not in ("_", "-"):
                for split in sorted(set(label.split("|"))):
                    prop["args"].append((split.strip(), i))
    return props


def same_sense(gold: str, system: str) -> bool:
    if NUMBER.match(gold) and NUMBER.match(system):
        return int(gold) == int(system)
    return gold == system


def same_prop(gold: dict, system: dict) -> bool:
    if len(gold["args"]) != len(system["args"]):
        return False
    return all(any(g == s for s in system["args"]) for g in gold["args"])


def update_srl_scores(gold: list[dict], system: list[dict], c: Counter,
                      tags: dict[str, Counter]) -> None:
    """``update_srl_scores``: the counts of one sentence (and its per-tag counts)."""
    sent = Counter()
    c["tot_prop"] += len(gold)
    sent["tot_prop"] += len(gold)
    c["pred_prop"] += len(system)
    sent["pred_prop"] += len(system)
    for g in gold:
        tags["tot_prop"][g["pposs"]] += 1
    for s in system:
        tags["pred_prop"][s["pposs"]] += 1
    for g in gold:
        for s in system:
            if g["position"] == s["position"]:
                c["coru_prop"] += 1
                tags["coru_prop"][g["pposs"]] += 1
                if same_sense(g["sense"], s["sense"]):
                    c["corl_prop"] += 1
                    sent["corl_prop"] += 1
                    tags["corl_prop"][g["pposs"]] += 1
                    if same_prop(g, s):
                        c["full_corl_prop"] += 1
                break
    n_gold = sum(len(g["args"]) for g in gold)
    n_sys = sum(len(s["args"]) for s in system)
    c["tot_arg"] += n_gold
    sent["tot_arg"] += n_gold
    c["pred_arg"] += n_sys
    sent["pred_arg"] += n_sys
    for g in gold:
        for label, _ in g["args"]:
            tags["tot_arg"][f"{g['pposs']} + {label}"] += 1
    for s in system:
        for label, _ in s["args"]:
            tags["pred_arg"][f"{s['pposs']} + {label}"] += 1
    for g in gold:
        for s in system:
            if g["position"] != s["position"]:
                continue
            checked_gold, checked_sys = set(), set()
            for gi, (glabel, gpos) in enumerate(g["args"]):
                for si, (slabel, spos) in enumerate(s["args"]):
                    if gpos == spos:
                        tag = f"{g['pposs']} + {glabel}"
                        if gi not in checked_gold and si not in checked_sys:
                            checked_gold.add(gi)
                            checked_sys.add(si)
                            c["coru_arg"] += 1
                        if glabel == slabel:
                            c["corl_arg"] += 1
                            sent["corl_arg"] += 1
                            tags["corl_arg"][tag] += 1
    c["tot_sent"] += 1
    if (sent["tot_prop"] == sent["corl_prop"] == sent["pred_prop"]
            and sent["tot_arg"] == sent["corl_arg"] == sent["pred_arg"]):
        c["cor_sent"] += 1


def score(gold_path: Path, system_path: Path) -> tuple[Counter, dict[str, Counter]]:
    """The semantic counts of a system file against the gold file (sentences side by
    side; a different number of sentences is fatal, as in the script)."""
    counts: Counter = Counter()
    tags: dict[str, Counter] = defaultdict(Counter)
    gold_it, sys_it = sentences(gold_path), sentences(system_path)
    for g in gold_it:
        s = next(sys_it, None)
        if s is None or len(s) != len(g):
            raise SystemExit(f"line mismatch: {system_path}")
        update_srl_scores(parse_frames(g), parse_frames(s), counts, tags)
    return counts, tags


def labelled_f1(c: Counter) -> tuple[float, float, float]:
    """The official Labeled P / R / F1 (arguments and predicate senses pooled), in %."""
    p = 100 * (c["corl_arg"] + c["corl_prop"]) / max(c["pred_arg"] + c["pred_prop"], 1)
    r = 100 * (c["corl_arg"] + c["corl_prop"]) / max(c["tot_arg"] + c["tot_prop"], 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def check_bundled() -> int:
    """The port against eval09.pl's printed counts for the bundled sample (expected.csv)."""
    import csv

    data = Path(__file__).resolve().parent.parent / "data" / "srl"
    with (data / "expected.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["scorer"] == "eval09.pl"]
    checked = 0
    for case in ("key", "sys1", "sys2", "sys3"):
        c, _ = score(data / "key.conll09", data / f"{case}.conll09")
        want = {r["metric"]: r for r in rows if r["case"] == case and r["label"] == "ALL"}
        got = {"semantic_labeled": (c["tot_arg"] + c["tot_prop"], c["pred_arg"] + c["pred_prop"],
                                    c["corl_arg"] + c["corl_prop"]),
               "semantic_unlabeled": (c["tot_arg"] + c["tot_prop"],
                                      c["pred_arg"] + c["pred_prop"],
                                      c["coru_arg"] + c["coru_prop"]),
               "proposition": (c["tot_prop"], c["pred_prop"], c["full_corl_prop"])}
        for metric, (g, p, k) in got.items():
            r = want[metric]
            assert (g, p, k) == (int(r["gold"]), int(r["pred"]), int(r["correct"])), (case,
                                                                                       metric)
            checked += 1
        exact = want["exact_semantic_match"]
        assert (c["tot_sent"], c["cor_sent"]) == (int(exact["gold"]), int(exact["correct"]))
        checked += 1
    return checked


if __name__ == "__main__":
    n = check_bundled()
    print(f"the port equals eval09.pl's counts on the bundled sample ({n} figures)")
    sys.exit(0)
