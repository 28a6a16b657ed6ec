"""METRICS.md worked examples A (table 2 of the paper) and B (dependencies), exactly."""

from __future__ import annotations

import pytest

from tests.helpers import as_dict, evaluate, words

KEY_A = ["A", "B", "C", "D", "E"]
SYS_A = {
    "S1": ["A", "B", "C", "X", "Y"],
    "S2": ["Z", "B", "C", "D", "U"],
    "S3": ["Z", "W", "C", "D", "E"],
}


@pytest.fixture(scope="module")
def example_a():
    return evaluate("upos", words(KEY_A), {k: words(v) for k, v in SYS_A.items()}, punct=True)


def test_a_accuracy(example_a):
    assert as_dict(example_a["scores"], "system", "accuracy") == {
        "S1": 0.6, "S2": 0.6, "S3": 0.6}


def test_a_pair_diffs_and_classes(example_a):
    p = example_a["pairs"]
    diff = as_dict(p, ["sys1", "sys2"], "n_diff")
    assert (diff[("S1", "S2")], diff[("S2", "S3")], diff[("S1", "S3")]) == (3, 2, 4)
    cls = {k: v for k, v in zip(p.select("sys1", "sys2").rows(),
                                p.select("corrections", "new_errors", "changed_errors").rows(),
                                strict=True)}
    assert cls[("S1", "S2")] == (1, 1, 1)
    assert cls[("S2", "S3")] == (1, 1, 0)
    assert cls[("S1", "S3")] == (2, 2, 0)


def test_a_change_keys(example_a):
    c = example_a["changes"].filter(pl_sys("S1", "S2"))
    got = sorted(c.select("class", "gold", "l1", "l2", "count").rows())
    assert got == [("changed_error", "E", "Y", "U", 1), ("correction", "D", "X", "D", 1),
                   ("new_error", "A", "A", "Z", 1)]


def test_a_oracles(example_a):
    o = {tuple(k): v for k, v in zip(example_a["oracles"]["systems"].to_list(),
                                     example_a["oracles"]["accuracy"].to_list(), strict=True)}
    assert o[("S1", "S2", "S3")] == 1.0
    assert o[("S1", "S2")] == 0.8
    assert o[("S2", "S3")] == 0.8
    assert o[("S1", "S3")] == 1.0


def test_a_difficulty(example_a):
    d = example_a["difficulty"].filter(example_a["difficulty"]["gold_label"].is_null())
    hist = as_dict(d, "k_correct", "n")
    assert {k: hist.get(k, 0) for k in range(4)} == {0: 0, 1: 2, 2: 2, 3: 1}


def test_a_majority_vote(example_a):
    assert example_a["majority"]["accuracy"][0] == 0.6


def test_a_mcnemar(example_a):
    p = as_dict(example_a["pairs"], ["sys1", "sys2"], "mcnemar_p")
    assert p[("S1", "S3")] == 1.0


def pl_sys(a: str, b: str):
    import polars as pl

    return (pl.col("sys1") == a) & (pl.col("sys2") == b)


# Example B: "The cat sat ." with heads/deprels.
KEY_B = dict(upos=["DET", "NOUN", "VERB", "PUNCT"], heads=[2, 3, 0, 3],
             deprels=["det", "nsubj", "root", "punct"])
S1_B = dict(upos=KEY_B["upos"], heads=[2, 3, 0, 2], deprels=["det", "nsubj", "root", "punct"])
S2_B = dict(upos=KEY_B["upos"], heads=[3, 3, 0, 3], deprels=["det", "obj", "root", "punct"])


def example_b(view: str, punct: bool):
    return evaluate(view, words(**KEY_B), {"S1": words(**S1_B), "S2": words(**S2_B)}, punct)


def test_b_punct_excluded():
    acc = {v: as_dict(example_b(v, False)["scores"], "system", "n_correct")
           for v in ("head", "deprel", "las")}
    assert acc == {"head": {"S1": 3, "S2": 2}, "deprel": {"S1": 3, "S2": 2},
                   "las": {"S1": 3, "S2": 1}}
    las = example_b("las", False)
    assert las["scores"]["n_units"].to_list() == [3, 3]
    assert as_dict(las["scores"], "system", "n_sents_exact") == {"S1": 1, "S2": 0}
    assert as_dict(las["pairs"], ["sys1", "sys2"], "n_diff")[("S1", "S2")] == 2
    ch = las["changes"].filter(pl_sys("S1", "S2"))
    assert sorted(ch.select("class", "l1", "l2", "attachment").rows()) == [
        ("new_error", "det", "det", True), ("new_error", "nsubj", "obj", False)]


def test_b_punct_included():
    las = example_b("las", True)
    assert as_dict(las["scores"], "system", "n_correct") == {"S1": 3, "S2": 2}
    assert as_dict(example_b("head", True)["scores"], "system", "n_correct") == {
        "S1": 3, "S2": 3}
    p = las["pairs"].filter(pl_sys("S1", "S2")).row(0, named=True)
    assert (p["n_units"], p["n_diff"], p["new_errors"], p["corrections"]) == (4, 3, 2, 1)
    ch = las["changes"].filter(pl_sys("S1", "S2") & (las["changes"]["class"] == "correction"))
    assert ch.select("l1", "l2", "attachment").rows() == [("punct", "punct", True)]


def test_b_las_difference_decomposition():
    p = example_b("las", False)["pairs"].filter(pl_sys("S1", "S2")).row(0, named=True)
    # "The": head 2 -> 3 (head only); "cat": nsubj -> obj (label only)
    assert (p["diff_head_only"], p["diff_label_only"], p["diff_both"]) == (1, 1, 0)
    other = example_b("upos", True)["pairs"]
    assert other["diff_head_only"].is_null().all()


def test_sentence_exact_counts_every_sentence_of_the_key():
    # sentence 0: "The cat sat ." as in example B; sentence 1: only punctuation ("!")
    key = words(KEY_B["upos"] + ["PUNCT"], sent=[0, 0, 0, 0, 1], heads=KEY_B["heads"] + [0],
                deprels=KEY_B["deprels"] + ["root"])
    s2 = words(S2_B["upos"] + ["PUNCT"], sent=[0, 0, 0, 0, 1], heads=S2_B["heads"] + [0],
               deprels=S2_B["deprels"] + ["root"])
    excluded = evaluate("las", key, {"S2": s2}, punct=False)["scores"].row(0, named=True)
    assert (excluded["n_sents"], excluded["n_sents_exact"]) == (2, 1)  # "!" is vacuously exact
    included = evaluate("las", key, {"S2": s2}, punct=True)["scores"].row(0, named=True)
    assert (included["n_sents"], included["n_sents_exact"]) == (2, 1)  # "!" right, other wrong
