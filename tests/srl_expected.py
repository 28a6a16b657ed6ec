"""The official SRL scorers' figures of ``data/srl/expected.csv`` (eval09.pl and srl-eval.pl
run on the bundled Universal PropBank sample; provenance in ``data/srl/README.md``), and
how each row is compared with an ``srl_scores`` row: counts exactly, precision / recall /
F1 as each scorer prints them."""

from __future__ import annotations

import csv

from tests.conftest import REPO

SRL = REPO / "data" / "srl"
EXPECTED = SRL / "expected.csv"
CASES = ("key", "sys1", "sys2", "sys3")
#: expected.csv metric -> (srl_scores mode, whether the label is a per-PPOS label)
METRICS = {
    "semantic_labeled": ("semantic_labeled", False),
    "semantic_unlabeled": ("semantic_unlabeled", False),
    "args_labeled": ("args_labeled", False), "args_unlabeled": ("args_unlabeled", False),
    "predicates_labeled": ("predicates_labeled", False),
    "predicates_unlabeled": ("predicates_unlabeled", False),
    "proposition": ("proposition", False),
    "exact_semantic_match": ("exact_semantic_match", False),
    "predicates_labeled_by_ppos": ("predicates_labeled", True),
    "predicates_unlabeled_by_ppos": ("predicates_unlabeled", True),
    "args_labeled_by_ppos_role": ("args_labeled", True),
    "args_labeled_by_role": ("args_labeled", False),
    "overall": ("span", False), "args_by_role": ("span", False),
    "excluded_by_role": ("span_v", False), "unlabeled": ("span_unlabeled", False),
    "perfect_props": ("perfect_props", False),
}
#: Rows printed by eval09.pl's per-tag tables: F1 from the rounded P and R, NaN rules.
PER_TAG = {"predicates_labeled_by_ppos", "predicates_unlabeled_by_ppos",
           "args_labeled_by_ppos_role"}
#: The scorer of each argument mode.
SCORER = {"head": "eval09.pl", "span": "srl-eval.pl"}


def expected_rows(mode: str) -> list[dict]:
    """The rows of expected.csv that a run in ``mode`` reproduces (not eval09.pl's
    syntactic LAS: no syntax is scored)."""
    with EXPECTED.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if r["scorer"] == SCORER[mode] and r["metric"] != "syntactic_las"]


def score_key(row: dict) -> tuple[str, str, str | None]:
    """The (mode, role, ppos) of the ``srl_scores`` row an expected row is."""
    mode, per_tag = METRICS[row["metric"]]
    if not per_tag:
        return mode, row["label"], None
    ppos, _, role = row["label"].partition(" + ")
    return mode, role or "ALL", ppos


def printed(x: float | None) -> str:
    """A fraction as the scorers print a percent (``NaN`` when undefined)."""
    return "NaN" if x is None else f"{100 * x:.2f}"


def check_row(row: dict, got: dict) -> None:
    """One expected row against our ``srl_scores`` row: exact counts; P / R / F1 as the
    scorer prints them (a ratio we leave null has a zero denominator, where the scorers
    print 0.00 or NaN)."""
    where = (row["case"], row["metric"], row["label"])
    assert got["n_gold"] == int(row["gold"]), where
    assert got["n_correct"] == int(row["correct"]), where
    if row["pred"]:
        assert got["n_pred"] == int(row["pred"]), where
    else:
        assert got["n_pred"] is None, where
    for name, den in (("precision", "n_pred"), ("recall", "n_gold")):
        want, have = row[name], got[name]
        if want == "":
            assert have is None or name == "recall", where
            continue
        if have is None:
            assert got[den] in (0, None) and want in ("0.00", "NaN"), (where, name)
        else:
            assert abs(100 * have - float(want)) <= 0.005 + 1e-9, (where, name, have, want)
    if row["metric"] in PER_TAG:
        assert per_tag_f1(got) == row["f1"], where
    elif row["f1"]:
        f1 = got["f1"]
        assert (f1 is None and row["f1"] == "0.00") or abs(100 * (f1 or 0) - float(
            row["f1"])) <= 0.005 + 1e-9, (where, f1, row["f1"])


def per_tag_f1(got: dict) -> str:
    """eval09.pl's per-tag F1: from the printed (rounded) P and R, ``NaN`` unless both are
    defined and above 0."""
    p, r = printed(got["precision"]), printed(got["recall"])
    if "NaN" in (p, r) or float(p) <= 0 or float(r) <= 0:
        return "NaN"
    fp, fr = float(p), float(r)
    return f"{2 * fp * fr / (fp + fr):.2f}"
