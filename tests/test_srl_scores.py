"""The official SRL scores (METRICS 6.1): every figure of ``data/srl/expected.csv`` (eval09.pl
on CoNLL-U and CoNLL-2009, srl-eval.pl on CoNLL-2005 words+props and props), read from the
CSV; worked example F (METRICS 6.3); the scorers' less obvious rules on small cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sysdiff.schemas.formats.srl import mode_of, read_srl
from sysdiff.transforms import srl as T
from sysdiff.transforms import srl_tables as R
from sysdiff.transforms.srl_scores import score_counts, score_rows
from tests.srl_expected import CASES, SRL, check_row, expected_rows, score_key


def srl_file(fmt: str, case: str, tmp: Path) -> Path:
    """A bundled file; ``props`` is the CoNLL-2005 file without its words (what srl-eval.pl
    reads: ``cut -f2-``)."""
    if fmt != "props":
        return SRL / f"{case}.{fmt}"
    out = tmp / f"{case}.props"
    lines = (SRL / f"{case}.conll05").read_text(encoding="utf-8").split("\n")
    out.write_text("\n".join(line.split("\t", 1)[1] if line else line for line in lines),
                   encoding="utf-8")
    return out


def our_scores(fmt: str, tmp: Path) -> tuple[str, dict]:
    """(mode, (case, mode, role, ppos) -> srl_scores row) of every case against the key."""
    key = read_srl(srl_file(fmt, "key", tmp))
    assert key.fmt == fmt
    mode = mode_of(fmt)
    got = {}
    for case in CASES:
        s = read_srl(srl_file(fmt, case, tmp))
        counts = score_counts(mode, key.preds, key.args, s.preds, s.args, key.sents.height)
        for r in score_rows(counts.with_columns(system=pl.lit(case))).to_dicts():
            got[(case, r["mode"], r["role"], r["ppos"])] = r
    return mode, got


@pytest.mark.parametrize("fmt", ["conllu", "conll09", "conll05", "props"])
def test_every_figure_of_the_official_scorers(fmt, tmp_path):
    mode, got = our_scores(fmt, tmp_path)
    rows = expected_rows(mode)
    assert len(rows) == (1080 if mode == "head" else 140)
    for row in rows:
        check_row(row, got[(row["case"], *score_key(row))])
    # and no row the scorer does not print: the same roles and PPOS tags
    for case in CASES:
        printed = {score_key(r) for r in rows if r["case"] == case}
        ours = {k[1:] for k in got if k[0] == case}
        if mode == "head":
            ours = {k for k in ours if k[2] is not None or k[0] == "args_labeled"}
            printed = {k for k in printed if k[2] is not None or k[0] == "args_labeled"}
        else:
            ours = {k for k in ours if k[0] in ("span", "span_v")}
            printed = {k for k in printed if k[0] in ("span", "span_v")}
        assert ours == printed, case


def test_the_headline_figures_of_the_readme(tmp_path):
    """The table 'Headline figures' of the data's README, for sys1 (read from expected.csv by
    check_row above; here the official labelled F1 and srl-eval's Overall, by name)."""
    _, head = our_scores("conllu", tmp_path)
    _, span = our_scores("conll05", tmp_path)
    official = head[("sys1", "semantic_labeled", "ALL", None)]
    assert (official["n_correct"], official["n_pred"], official["n_gold"]) == (2598, 3189,
                                                                               3742)
    overall = span[("sys1", "span", "ALL", None)]
    assert (overall["n_correct"], overall["n_pred"] - overall["n_correct"],
            overall["n_gold"] - overall["n_correct"]) == (1506, 533, 932)


# ------------------------------------------------------------------------------ example F

WORDS = ["Mary", "gave", "John", "books"]


def conll09(sense: str, roles: dict[int, str], heads: tuple[int, ...] = (2, 0, 2, 2)) -> str:
    """Worked example F's sentence in CoNLL-2009 (gave = word 2 is the one predicate)."""
    lines = []
    for i, w in enumerate(WORDS, start=1):
        pred = ("Y", f"give.{sense}") if i == 2 else ("_", "_")
        lines.append("\t".join([str(i), w, w, w, "NNP", "NNP", "_", "_", str(heads[i - 1]),
                                str(heads[i - 1]), "dep", "dep", *pred, roles.get(i, "_")]))
    return "\n".join(lines) + "\n\n"


EXAMPLE_F = {"key": conll09("01", {1: "A0", 3: "A2", 4: "A1"}),
             "S1": conll09("01", {1: "A0", 3: "A1", 4: "A1"}),
             "S2": conll09("02", {1: "A0", 3: "A2"})}


def example_f(tmp: Path) -> tuple[T.SrlCounts, list[pl.DataFrame], T.Vocab]:
    files = {}
    for name, text in EXAMPLE_F.items():
        files[name] = tmp / f"{name}.conll09"
        files[name].write_text(text, encoding="utf-8")
    key, s1, s2 = (read_srl(files[n]) for n in ("key", "S1", "S2"))
    vocab = T.Vocab(("A0", "A1", "A2"), ("NNP", "_"))
    data = T.ShardData("head", 0, 1, key.tokens, key.preds, key.args,
                       [(s.preds, s.args) for s in (s1, s2)])
    counts, rows = T.comparison_counts(data, vocab)
    return counts, rows, vocab


def test_worked_example_f(tmp_path):
    counts, rows, vocab = example_f(tmp_path)
    names = ["S1", "S2"]
    scores = R.scores_table(counts, names)
    lab = {r["system"]: r for r in scores.filter((pl.col("mode") == "semantic_labeled")
                                                 & (pl.col("role") == "ALL")).to_dicts()}
    assert (lab["S1"]["n_correct"], lab["S1"]["n_gold"], lab["S1"]["n_pred"]) == (3, 4, 4)
    assert lab["S1"]["precision"] == lab["S1"]["recall"] == 0.75
    assert (lab["S2"]["n_correct"], lab["S2"]["n_gold"], lab["S2"]["n_pred"]) == (2, 4, 3)
    assert lab["S2"]["precision"] == pytest.approx(2 / 3)
    assert lab["S2"]["recall"] == 0.5
    classes = {name: r.filter(pl.col("unit") == "argument").sort("start")["cls"].to_list()
               for name, r in zip(names, rows, strict=True)}
    assert classes == {"S1": ["correct", "role", "correct"],
                       "S2": ["correct", "correct", "missed"]}
    preds = {name: r.filter(pl.col("unit") == "predicate")["cls"].to_list()
             for name, r in zip(names, rows, strict=True)}
    assert preds == {"S1": ["correct"], "S2": ["sense"]}
    pairs = R.pair_rows(counts, names, 100, 0)
    arg = pairs.filter((pl.col("unit") == "argument") & (pl.col("sys1") == "S1")).row(
        0, named=True)
    assert (arg["n_diff"], arg["n_units"]) == (2, 3)
    assert arg["diff"] == pytest.approx(2 / 3)
    assert (arg["corrections"], arg["new_errors"], arg["changed_errors"]) == (1, 1, 0)
    changes = R.change_rows(counts, names, vocab).filter(
        (pl.col("unit") == "argument") & (pl.col("sys1") == "S1"))
    assert sorted(changes.select("class", "gold", "l1", "l2", "count").rows()) == [
        ("correction", "A2", "A1", "A2", 1), ("new_error", "A1", "A1", "<missed>", 1)]


def test_example_f_oracle_and_transitions(tmp_path):
    counts, _rows, vocab = example_f(tmp_path)
    oracles = R.oracle_rows(counts, ["S1", "S2"], vocab).filter(
        (pl.col("unit") == "argument") & (pl.col("label") == "ALL"))
    got = {tuple(r["systems"]): (r["n_correct"], r["n_gold"]) for r in oracles.to_dicts()}
    assert got == {("S1",): (2, 3), ("S2",): (2, 3), ("S1", "S2"): (3, 3)}
    trans = R.transition_rows(counts, ["S1", "S2"], vocab).filter(
        (pl.col("unit") == "argument") & (pl.col("label") == "ALL") & (pl.col("sys1") == "S1"))
    assert sorted(trans.select("c1", "c2", "count").rows()) == [
        ("correct", "correct", 1), ("correct", "missed", 1), ("role", "correct", 1)]


# ------------------------------------------------------------------------------ small rules


def test_eval09_compares_senses_after_the_dot_as_numbers(tmp_path):
    """gold come.01 vs system go.1: the sense is right (the lemma is ignored, 01 == 1)."""
    key = tmp_path / "k.conll09"
    sys_ = tmp_path / "s.conll09"
    key.write_text(conll09("01", {1: "A0"}), encoding="utf-8")
    sys_.write_text(conll09("1", {1: "A0"}).replace("give.1", "go.1"), encoding="utf-8")
    k, s = read_srl(key), read_srl(sys_)
    rows = score_rows(score_counts("head", k.preds, k.args, s.preds, s.args, 1).with_columns(
        system=pl.lit("s")))
    got = {r["mode"]: r for r in rows.filter(pl.col("role") == "ALL").filter(
        pl.col("ppos").is_null()).to_dicts()}
    assert got["predicates_labeled"]["n_correct"] == 1
    assert got["proposition"]["n_correct"] == 1


def props(columns: list[list[str]], verbs: list[str]) -> str:
    """A props sentence: the target column and Start-End columns."""
    return "\n".join("\t".join([v, *(c[i] for c in columns)])
                     for i, v in enumerate(verbs)) + "\n\n"


def span_scores(key: str, response: str, tmp: Path) -> dict:
    (tmp / "k.props").write_text(key, encoding="utf-8")
    (tmp / "s.props").write_text(response, encoding="utf-8")
    k, s = read_srl(tmp / "k.props"), read_srl(tmp / "s.props")
    rows = score_rows(score_counts("span", k.preds, k.args, s.preds, s.args, 1)
                      .with_columns(system=pl.lit("s")))
    return {(r["mode"], r["role"]): r for r in rows.to_dicts()}


def test_srl_eval_merges_continuations_and_skips_spurious_props(tmp_path):
    """A C-A1 piece continues A1 (one argument, scored whole); a predicted proposition
    without a gold one is skipped (its arguments are no excess); V is its own row."""
    verbs = ["-", "say", "-", "-", "go"]
    key = props([["(A1*)", "(V*)", "(C-A1*", "*)", "*"]], ["-", "say", "-", "-", "-"])
    half = props([["(A1*)", "(V*)", "*", "*", "*"], ["*", "*", "*", "(A0*)", "(V*)"]], verbs)
    got = span_scores(key, half, tmp_path)
    span = got[("span", "ALL")]
    assert (span["n_gold"], span["n_pred"], span["n_correct"]) == (1, 1, 0)
    assert got[("span_v", "V")]["n_correct"] == 1
    assert got[("predicates", "ALL")]["n_pred"] == 2
    whole = props([["(A1*)", "(V*)", "(C-A1*", "*)", "*"]], ["-", "say", "-", "-", "-"])
    assert span_scores(key, whole, tmp_path)[("span", "ALL")]["n_correct"] == 1


def test_srl_eval_drops_a_verb_mismatch(tmp_path):
    """A proposition at the gold position with another verb counts every gold argument as
    missed and none of its own as excess."""
    key = props([["(A0*)", "(V*)"]], ["-", "say"])
    other = props([["(A0*)", "(V*)"]], ["-", "tell"])
    span = span_scores(key, other, tmp_path)[("span", "ALL")]
    assert (span["n_gold"], span["n_pred"], span["n_correct"]) == (1, 0, 0)
    assert span["precision"] is None and span["recall"] == 0.0


def test_counts_add_up_over_sentences(tmp_path):
    """Scores of two halves of the corpus sum to the scores of the whole (additive)."""
    key = read_srl(SRL / "key.conllu")
    sys1 = read_srl(SRL / "sys1.conllu")
    whole = score_counts("head", key.preds, key.args, sys1.preds, sys1.args, 374)
    half = pl.col("sent") < 200
    parts = [score_counts("head", key.preds.filter(h), key.args.filter(h),
                          sys1.preds.filter(h), sys1.args.filter(h), n)
             for h, n in ((half, 200), (~half, 174))]
    from sysdiff.transforms.srl_scores import sum_counts

    summed = sum_counts(parts)
    a = score_rows(whole.with_columns(system=pl.lit("s"))).drop("system")
    b = score_rows(summed.with_columns(system=pl.lit("s"))).drop("system")
    assert a.sort("mode", "role", "ppos").equals(b.sort("mode", "role", "ppos"))
    assert np.isclose(a["f1"].drop_nulls().sum(), b["f1"].drop_nulls().sum())


def test_a_cycle_in_the_key_tree_names_its_line(tmp_path):
    """Head mode reads the key's HEAD tree (the boundary class): a cycle is refused."""
    from sysdiff.schemas.errors import InputError

    text = conll09("01", {1: "A0"}, heads=(3, 0, 1, 2))  # Mary -> John -> Mary
    (tmp_path / "k.conll09").write_text(text, encoding="utf-8")
    key = read_srl(tmp_path / "k.conll09")
    with pytest.raises(InputError) as e:
        T.key_tree(key.tokens, "k.conll09")
    assert e.value.line in (1, 3) and "cycle" in e.value.message
    assert T.key_tree(read_srl(SRL / "key.conllu").tokens).depth.max() > 5


def test_generated_data_equals_the_ported_scorer(tmp_path):
    """On generated CoNLL-2009 with every perturbation (benchmarks/srl.py), the counts equal
    a line-by-line port of eval09.pl's semantic scoring, itself equal to the script's printed
    counts on the bundled sample."""
    from benchmarks import srl as bench
    from benchmarks import srl_eval09 as port

    assert port.check_bundled() == 16
    paths = bench.generate(tmp_path, 6000, 3, seed=7)
    key = read_srl(paths["key"])
    for name in ("sys0", "sys1", "sys2"):
        s = read_srl(paths[name])
        c, tags = port.score(paths["key"], paths[name])
        rows = score_rows(score_counts("head", key.preds, key.args, s.preds, s.args,
                                       key.sents.height).with_columns(system=pl.lit(name)))
        got = {(r["mode"], r["role"], r["ppos"]): r for r in rows.to_dicts()}

        def counts(mode: str, got: dict = got) -> tuple:
            r = got[(mode, "ALL", None)]
            return r["n_gold"], r["n_pred"], r["n_correct"]

        assert counts("args_labeled") == (c["tot_arg"], c["pred_arg"], c["corl_arg"])
        assert counts("args_unlabeled") == (c["tot_arg"], c["pred_arg"], c["coru_arg"])
        assert counts("predicates_labeled") == (c["tot_prop"], c["pred_prop"], c["corl_prop"])
        assert counts("predicates_unlabeled") == (c["tot_prop"], c["pred_prop"],
                                                  c["coru_prop"])
        assert counts("proposition") == (c["tot_prop"], c["pred_prop"], c["full_corl_prop"])
        assert got[("exact_semantic_match", "ALL", None)]["n_correct"] == c["cor_sent"]
        for label, n in tags["tot_arg"].items():
            ppos, role = label.split(" + ")
            assert got[("args_labeled", role, ppos)]["n_gold"] == n, label
        for label, n in tags["corl_arg"].items():
            ppos, role = label.split(" + ")
            assert got[("args_labeled", role, ppos)]["n_correct"] == n, label
