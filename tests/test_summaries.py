"""transforms.summaries on hand-made frames with hand-worked values."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sysdiff.transforms import summaries as S

LIST = pl.List(pl.String)


def pairs_frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["sys1", "sys2", "diff", "delta_acc"], orient="row")


def oracles_frame(rows: list[tuple]) -> pl.DataFrame:
    """(systems, n_correct) with 100 units; best_single and gain as the warehouse has them."""
    df = pl.DataFrame({"systems": [list(s) for s, _ in rows], "n_correct": [c for _, c in rows]},
                      schema={"systems": LIST, "n_correct": pl.Int64})
    single = {s[0]: c for s, c in rows if len(s) == 1}
    best = [max(single[x] for x in s) if all(x in single for x in s) else None for s, _ in rows]
    return df.with_columns(pl.col("systems").list.len().cast(pl.Int64).alias("n_systems"),
                           pl.lit(100, pl.Int64).alias("n_units"),
                           (pl.col("n_correct") / 100).alias("accuracy"),
                           pl.Series("best_single", best, pl.Int64)).with_columns(
        ((pl.col("n_correct") - pl.col("best_single")) / 100).alias("gain"))


def test_leaderboard_ranks_ties_and_sorts_best_first():
    scores = pl.DataFrame({"system": ["a", "b", "c"], "n_correct": [90, 95, 90],
                           "n_units": [100] * 3, "accuracy": [0.9, 0.95, 0.9],
                           "n_sents_exact": [1, 2, 3], "n_sents": [10] * 3,
                           "sent_exact": [0.1, 0.2, 0.3]})
    board = S.leaderboard(scores)
    assert board.select("rank", "system").rows() == [(1, "b"), (2, "a"), (2, "c")]
    assert board.columns[:2] == ["rank", "system"]


def test_score_names_are_explicit():
    assert S.score_name("las") == "LAS (no punct)"
    assert S.score_name("las", True) == "LAS (with punct)"
    assert S.score_name("head", False) == "UAS (no punct)"
    assert S.score_name("deprel") == "LS (no punct)"
    assert S.score_name("upos", True) == "UPOS"
    assert S.score_name("upos", False) == "UPOS (no punct)"
    assert S.score_name("nom", None, "coref") == "ARCS F1 (nom)"
    assert S.score_name("unlization", None, "unl") == "F1 (unlization)"


def test_oriented_pairs_keep_one_direction_less_to_more_accurate():
    pairs = pairs_frame([("a", "b", 0.1, 0.05), ("b", "a", 0.1, -0.05), ("a", "c", 0.3, 0.0),
                         ("c", "a", 0.3, 0.0), ("b", "c", 0.2, -0.05), ("c", "b", 0.2, 0.05),
                         ("a", "a", 0.0, 0.0)])
    got = S.oriented_pairs(pairs)
    assert got.select("sys1", "sys2").rows() == [("a", "c"), ("c", "b"), ("a", "b")]


def test_diff_matrix_symmetric_and_directed():
    pairs = pl.DataFrame({"sys1": ["a", "b", "b", "a", "x"], "sys2": ["b", "c", "a", "a", "a"],
                          "diff": [0.1, 0.2, 0.3, 0.9, 0.5]})
    m = S.diff_matrix(pairs.head(2), ["a", "b", "c"])
    assert m.tolist() == [[0, 0.1, 0], [0.1, 0, 0.2], [0, 0.2, 0]]
    d = S.diff_matrix(pairs, ["a", "b", "c"], symmetric=False)
    assert d.tolist() == [[0, 0.1, 0], [0.3, 0, 0.2], [0, 0, 0]]  # a-a and x-a ignored
    assert S.diff_matrix(pairs.clear(), ["a"]).tolist() == [[0.0]]


def test_cluster_order_keeps_close_systems_together():
    names = ["a", "b", "c", "d"]
    m = np.array([[0, 9, 1, 9], [9, 0, 9, 1], [1, 9, 0, 9], [9, 1, 9, 0]], dtype=float)
    order = S.cluster_order(names, m)
    assert sorted(order) == names
    pos = {s: i for i, s in enumerate(order)}
    assert abs(pos["a"] - pos["c"]) == 1 and abs(pos["b"] - pos["d"]) == 1
    assert S.cluster_order(names[:2], m[:2, :2]) == names[:2]
    assert sorted(S.cluster_order(names, np.zeros((4, 4)))) == names


def test_detail_pairs_put_best_against_runner_up_first():
    oriented = pairs_frame([("c", "b", 0.3, 0.05), ("c", "a", 0.2, 0.02),
                            ("a", "b", 0.1, 0.03)])
    scores = pl.DataFrame({"system": ["a", "b", "c"], "n_correct": [92, 95, 90],
                           "n_units": [100] * 3, "accuracy": [0.92, 0.95, 0.90],
                           "n_sents_exact": [0] * 3, "n_sents": [1] * 3,
                           "sent_exact": [0.0] * 3})
    assert S.detail_pairs(oriented, scores, 2).select("sys1", "sys2").rows() == \
        [("a", "b"), ("c", "b")]
    assert S.detail_pairs(oriented, scores, 5).height == 3
    assert S.detail_pairs(oriented.head(2), scores, 5).select("sys1").to_series().to_list() \
        == ["c", "c"]


def test_largest_changes_sum_cells_over_oriented_pairs_only():
    changes = pl.DataFrame(
        [("a", "b", "correction", "N", "V", "N", False, 5),
         ("a", "b", "correction", "N", "V", "N", True, 4),    # same cell, another row
         ("b", "a", "new_error", "N", "N", "V", False, 50),   # the other direction
         ("a", "b", "new_error", "V", "V", "A", False, 7),
         ("c", "b", "changed_error", "X", "A", "B", False, 8)],
        schema=["sys1", "sys2", "class", "gold", "l1", "l2", "attachment", "count"],
        orient="row")
    oriented = pairs_frame([("a", "b", 0.1, 0.01), ("c", "b", 0.1, 0.01)])
    got = S.largest_changes(changes, oriented, 2)
    assert got.select("sys1", "sys2", "class", "l1", "l2", "attachment", "count").rows() == [
        ("a", "b", "correction", "V", "N", True, 9), ("c", "b", "changed_error", "A", "B",
                                                      False, 8)]


LABELS = pl.DataFrame({"system": ["a", "b", "c", "a", "b", "c"],
                       "gold_label": ["X", "X", "X", "Y", "Y", "Y"], "n": [4] * 3 + [2] * 3,
                       "accuracy": [0.5, 0.75, 0.5, 1.0, 1.0, 1.0]})
ORACLE_LABELS = pl.DataFrame(
    {"systems": [["c", "b", "a"], ["c", "a", "b"], ["a", "b"], ["b", "a"], ["b", "c"]],
     "gold_label": ["X", "Y", "X", "Y", "X"], "n": [4, 2, 4, 2, 4],
     "n_correct": [4, 2, 3, 2, 1]}, schema_overrides={"systems": LIST})


def test_label_table_best_and_worst_on_a_small_frame():
    t = S.label_table(LABELS, ORACLE_LABELS, ["a", "b", "c"])
    x, y = t.row(0, named=True), t.row(1, named=True)
    assert (x["gold_label"], x["n"], x["a"], x["b"], x["oracle"]) == ("X", 4, 0.5, 0.75, 1.0)
    assert (x["best"], x["worst"], x["gain"]) == (["b"], ["a", "c"], 0.25)
    assert (y["best"], y["worst"], y["gain"]) == ([], [], 0.0)


def test_label_summary_for_many_systems():
    t = S.label_summary(LABELS, ORACLE_LABELS, ["a", "b", "c"], ["b", "a"])
    assert t.columns == ["gold_label", "n", "best_acc", "best", "median_acc", "worst_acc",
                         "worst", "oracle_pair", "oracle_all", "gain"]
    assert t.row(0) == ("X", 4, 0.75, ["b"], 0.5, 0.5, ["a", "c"], 0.75, 1.0, 0.25)
    assert t.row(1) == ("Y", 2, 1.0, [], 1.0, 1.0, [], 1.0, 1.0, 0.0)
    none = S.label_summary(LABELS, ORACLE_LABELS, ["a", "b", "c"], None)
    assert none["oracle_pair"].to_list() == [None, None]


ORACLES = oracles_frame([(("a",), 80), (("b",), 70), (("c",), 60), (("d",), 50),
                         (("a", "b"), 85), (("a", "c"), 88), (("a", "d"), 81),
                         (("b", "c"), 88), (("b", "d"), 75), (("c", "d"), 65),
                         (("a", "b", "c"), 90), (("a", "b", "d"), 86), (("a", "c", "d"), 89),
                         (("b", "c", "d"), 88), (("a", "b", "c", "d"), 92)])


def test_oracle_table_and_best_pair():
    t = S.oracle_table(ORACLES.filter(pl.col("n_systems") <= 2))
    assert t.columns == ["systems", "n_systems", "n_correct", "n_units", "accuracy",
                         "best_single", "gain"]
    assert t["systems"].to_list()[:5] == ["a", "b", "c", "d", "a + c"]
    row = t.filter(pl.col("systems") == "b + c").row(0, named=True)
    assert (row["accuracy"], row["best_single"], row["gain"]) == pytest.approx((0.88, 0.7, 0.18))
    assert S.best_pair(ORACLES) == ["a", "c"]  # 88 twice: a + c before b + c
    assert S.best_pair(ORACLES.filter(pl.col("n_systems") != 2)) is None


def test_read_subsets_are_full_set_best_pairs_leave_one_out_and_singles():
    got = S.read_subsets(ORACLES, ["a", "b", "c", "d"], pairs=2)
    assert got.select("kind", "systems", "left_out").rows() == [
        ("all", "a + b + c + d", None),
        ("best pair", "a + c", None), ("best pair", "b + c", None),
        ("leave-one-out", "a + b + c", "d"), ("leave-one-out", "a + c + d", "b"),
        ("leave-one-out", "b + c + d", "a"), ("leave-one-out", "a + b + d", "c"),
        ("system", "a", None), ("system", "b", None), ("system", "c", None),
        ("system", "d", None)]
    # subsets of other systems are not read
    other = S.read_subsets(ORACLES, ["a", "b", "c"], pairs=1)
    assert set(other["systems"]) == {"a + b + c", "a + c", "a + b", "b + c", "a", "b", "c"}
    assert other.filter(pl.col("kind") == "all")["n_correct"].to_list() == [90]


def test_marginal_gains_from_leave_one_out_rows():
    got = S.marginal_gains(ORACLES, ["a", "b", "c", "d"])
    # 92 correct with all; without a: 88 (b + c + d), b: 89, c: 86, d: 90
    assert got.select("system", "units_gained").rows() == [("c", 6), ("a", 4), ("b", 3),
                                                           ("d", 2)]
    c = got.row(0, named=True)
    assert (c["oracle_all"], c["oracle_without"], c["gain"]) == pytest.approx((0.92, 0.86, 0.06))
    assert S.marginal_gains(ORACLES).equals(got)  # the largest subset is the full set
    three = S.marginal_gains(ORACLES, ["a", "b", "c"])  # a smaller full set
    assert three.select("system", "units_gained").rows() == [("c", 5), ("a", 2), ("b", 2)]
    missing = S.marginal_gains(ORACLES.filter(pl.col("systems") != ["b", "c", "d"]),
                               ["a", "b", "c", "d"])
    assert set(missing["system"]) == {"b", "c", "d"}
    assert S.marginal_gains(ORACLES.clear()).is_empty()
    assert S.marginal_gains(ORACLES, ["a"]).is_empty()


def test_transition_classes():
    assert [S.transition_class(a, b) for a, b in [
        ("FN", "TP"), ("WL", "TN"), ("TP", "FP"), ("TN", "WL"), ("FP", "FN"), ("TP", "TN"),
        ("TP", "TP")]] == ["correction", "correction", "new_error", "new_error",
                           "changed_error", "", ""]
    assert S.mtype_order(["PRON", "ALL", "NOUN", "ALL"]) == ["ALL", "NOUN", "PRON"]


def test_coref_oracle_table_best_member_and_gain():
    rows = [("any", ["s1"], "ALL", 10, 4), ("any", ["s2"], "ALL", 10, 6),
            ("any", ["s2", "s1"], "ALL", 10, 8), ("any", ["s1"], "PRON", 4, 2),
            ("any", ["s2"], "PRON", 4, 1), ("any", ["s1", "s2"], "PRON", 4, 3),
            ("any", ["s1"], "NOUN", 0, 0), ("nom", ["s1"], "ALL", 10, 1)]
    df = pl.DataFrame(rows, schema={"criterion": pl.String, "systems": LIST,
                                    "mtype": pl.String, "n": pl.Int64, "n_tp": pl.Int64},
                      orient="row")
    t = S.coref_oracle_table(df, "any")
    assert t.rows() == [
        ("s1 + s2", 2, "ALL", 10, 8, 0.8, "s2", 0.6, pytest.approx(0.2)),
        ("s1 + s2", 2, "PRON", 4, 3, 0.75, "s1", 0.5, 0.25),
        ("s1", 1, "ALL", 10, 4, 0.4, "s1", 0.4, 0.0),
        ("s1", 1, "NOUN", 0, 0, None, "s1", None, None),
        ("s1", 1, "PRON", 4, 2, 0.5, "s1", 0.5, 0.0),
        ("s2", 1, "ALL", 10, 6, 0.6, "s2", 0.6, 0.0),
        ("s2", 1, "PRON", 4, 1, 0.25, "s2", 0.25, 0.0)]
    assert S.coref_oracle_table(df, "none").is_empty()


def test_unl_oriented_from_fewer_to_more_correct():
    pairs = pl.DataFrame([("t", "v1", "v2", 0.2, 3, 5), ("t", "v2", "v1", 0.2, 5, 3),
                          ("t", "v1", "v3", 0.4, 3, 3), ("t", "v3", "v1", 0.4, 3, 3),
                          ("t", "v1", "v1", 0.0, 3, 3)],
                         schema=["task", "sys1", "sys2", "diff", "n_correct1", "n_correct2"],
                         orient="row")
    assert S.unl_oriented(pairs).select("sys1", "sys2").rows() == [("v1", "v3"), ("v1", "v2")]
    assert S.unl_oriented(pairs.clear()).is_empty()


def history_frame() -> pl.DataFrame:
    """A hand-made ``history`` table: parser p (3 versions) in las (both punct settings) and
    upos, and coreference rows without punct."""
    rows = []
    for view, punct, scores, ps in (
            ("las", False, [0.80, 0.83, 0.82], [None, 0.001, 0.30]),
            ("las", True, [0.81, 0.84, 0.83], [None, 0.001, 0.001]),
            ("upos", True, [0.95, 0.94, 0.97], [None, 0.04, 0.049]),
            ("any", None, [0.5, 0.5, 0.6], [None, 1.0, 0.2])):
        for k, (v, s, p) in enumerate(zip(["v1", "v2", "v10"], scores, ps, strict=True)):
            prev = scores[k - 1] if k else None
            rows.append({"corpus": "c", "task": "coref" if punct is None else "dep",
                         "view": view, "punct": punct, "name": "p", "version": v,
                         "position": k + 1, "previous": ["v1", "v2", "v10"][k - 1] if k else None,
                         "score": s, "delta": None if prev is None else s - prev,
                         "corrections": 10 * k, "new_errors": 5 * k, "changed_errors": k,
                         "mcnemar_p": p})
    return pl.DataFrame(rows)


def test_history_rows_default_punct_and_significant_steps():
    got = S.history_rows(history_frame())
    assert got.select("task", "view", "punct").unique().sort("view").rows() == [
        ("coref", "any", None), ("dep", "las", False), ("dep", "upos", True)]
    las = got.filter(pl.col("view") == "las")
    assert las["version"].to_list() == ["v1", "v2", "v10"]
    assert las["significant"].to_list() == [False, True, False]
    assert las["step"].to_list() == [0, 1, 0]
    assert got.filter(pl.col("view") == "upos")["step"].to_list() == [0, -1, 1]
    assert got.filter(pl.col("view") == "any")["step"].to_list() == [0, 0, 0]
    assert S.history_rows(history_frame().clear()).is_empty()


def test_history_summary_per_name():
    got = S.history_summary(S.history_rows(history_frame()))
    by = {r["view"]: r for r in got.iter_rows(named=True)}
    assert (by["las"]["versions"], by["las"]["latest"], by["las"]["best"],
            by["las"]["best_score"], by["las"]["gains"], by["las"]["losses"]) == \
        (3, "v10", "v2", 0.83, 1, 0)
    assert (by["upos"]["best"], by["upos"]["latest_score"], by["upos"]["gains"],
            by["upos"]["losses"]) == ("v10", 0.97, 1, 1)
    assert (by["any"]["best"], by["any"]["gains"]) == ("v10", 0)
