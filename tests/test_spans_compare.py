"""Span decoding, scores, classes and the comparison of systems (METRICS 5): hand-worked
cases, worked example E, cross-checks with seqeval, and invariants (classes partition the
spans; sharding changes no count)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysdiff.transforms import span_decoding as D
from sysdiff.transforms import span_tables as R
from sysdiff.transforms import spans as T

PREFIX = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}


def tokens(*sentences: list[str]) -> pl.DataFrame:
    """Token rows (sent, id, form, prefix, type) from tag lists, one list per sentence."""
    rows = [(k, i + 1, f"w{k}.{i}", tag) for k, tags in enumerate(sentences)
            for i, tag in enumerate(tags)]
    df = pl.DataFrame(rows, schema={"sent": pl.Int32, "id": pl.Int32, "form": pl.String,
                                    "tag": pl.String}, orient="row")
    return df.with_columns(
        prefix=pl.col("tag").str.slice(0, 1).replace_strict(PREFIX, return_dtype=pl.UInt8),
        type=pl.when(pl.col("tag") == "O").then(None).otherwise(pl.col("tag").str.slice(2)))


def spans_of(tags: list[str] | list[list[str]], scheme: str = "auto") -> list[tuple]:
    sents = tags if tags and isinstance(tags[0], list) else [tags]
    got, _ = D.decode_spans(tokens(*sents), scheme)
    return [tuple(r) for r in got.select("sent", "start", "end", "type").rows()]


# ------------------------------------------------------------------------------ decoding


def test_i_after_o_is_a_span_in_iob1_and_none_in_strict_iob2():
    tags = ["O", "I-PER", "I-PER", "O", "B-LOC"]
    assert spans_of(tags, "auto") == [(0, 1, 2, "PER"), (0, 4, 4, "LOC")]
    assert spans_of(tags, "iob1") == [(0, 1, 2, "PER"), (0, 4, 4, "LOC")]
    assert spans_of(tags, "iob2") == [(0, 4, 4, "LOC")]


def test_adjacent_entities_of_one_type_and_a_type_change():
    assert spans_of(["B-PER", "B-PER", "I-PER"]) == [(0, 0, 0, "PER"), (0, 1, 2, "PER")]
    # IOB1: B- only separates two adjacent spans of one type
    assert spans_of(["I-PER", "B-PER", "I-LOC"]) == [(0, 0, 0, "PER"), (0, 1, 1, "PER"),
                                                     (0, 2, 2, "LOC")]
    assert spans_of(["B-PER", "I-LOC"], "iob2") == [(0, 0, 0, "PER")]


def test_bioes():
    tags = ["S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-ORG", "E-ORG"]
    want = [(0, 0, 0, "PER"), (0, 1, 3, "LOC"), (0, 4, 4, "LOC"), (0, 5, 6, "ORG")]
    assert spans_of(tags, "auto") == want
    assert spans_of(tags, "bioes") == want
    # ill-formed: a span without its E-, an E- alone: conlleval rules keep, strict drops
    bad = ["B-PER", "I-PER", "O", "E-LOC"]
    assert spans_of(bad, "auto") == [(0, 0, 1, "PER"), (0, 3, 3, "LOC")]
    assert spans_of(bad, "bioes") == []


def test_spans_never_cross_sentences():
    assert spans_of([["B-PER", "I-PER"], ["I-PER"]]) == [(0, 0, 1, "PER"), (1, 0, 0, "PER")]
    assert spans_of([["B-PER", "I-PER"], ["I-PER"]], "iob2") == [(0, 0, 1, "PER")]


def test_decoded_scheme_and_ill_formed_count():
    # an I-X start beside a B-X where IOB1 writes I-X: IOB2 with an ill-formed span
    _, d = D.decode_spans(tokens(["O", "I-PER", "B-LOC"]), "auto")
    assert (d.detected, d.n_ill_formed) == ("iob2", 1)
    _, d = D.decode_spans(tokens(["B-PER", "I-PER"]), "auto")
    assert (d.detected, d.n_ill_formed) == ("iob2", 0)
    _, d = D.decode_spans(tokens(["S-PER", "B-LOC", "I-LOC"]), "auto")
    assert (d.detected, d.n_ill_formed) == ("bioes", 1)


def test_span_text_and_a_mapping_to_o_drops_the_entity():
    toks = tokens(["B-PERSON", "I-PERSON", "O", "B-DATE", "B-GPE"])
    spans, _ = D.decode_spans(D.map_types(toks, {"PERSON": "PER", "DATE": "O", "GPE": "LOC"}),
                              "auto")
    assert spans.select("start", "end", "type", "text").rows() == [
        (0, 1, "PER", "w0.0 w0.1"), (4, 4, "LOC", "w0.4")]
    labels = D.map_types(toks, {"DATE": "O"}).with_columns(label=D.label_expr())["label"]
    assert labels.to_list() == ["B-PERSON", "I-PERSON", "O", "O", "B-GPE"]


TAG = st.sampled_from(["O", "B-X", "I-X", "B-Y", "I-Y", "E-X", "S-Y", "E-Y", "S-X"])
IOB = st.sampled_from(["O", "B-X", "I-X", "B-Y", "I-Y"])


@settings(max_examples=300, deadline=None)
@given(st.lists(IOB, min_size=1, max_size=14), st.lists(TAG, min_size=1, max_size=14))
def test_decoding_equals_seqeval(iob, bioes):
    """Default rules = seqeval's default (a port of conlleval); iob2/bioes = seqeval strict."""
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, IOBES, Entities

    def strict(seq: list[str], scheme) -> list[tuple]:
        return sorted((0, e.start, e.end - 1, e.tag) for e in Entities([seq], scheme).entities[0])

    def lenient(seq: list[str]) -> list[tuple]:
        return sorted((0, a, b, t) for t, a, b in get_entities(seq))

    assert spans_of(iob, "auto") == lenient(iob)
    assert spans_of(iob, "iob2") == strict(iob, IOB2)
    assert spans_of(bioes, "auto") == lenient(bioes)
    assert spans_of(bioes, "bioes") == strict(bioes, IOBES)


# ------------------------------------------------------------------------------ classes


def spans_frame(*spans: tuple) -> pl.DataFrame:
    """(sent, start, end, type) tuples as a sorted span frame."""
    return pl.DataFrame(list(spans), schema=D.SPAN_COLUMNS, orient="row").sort("sent", "start")


def compare(key, systems, n_sents=1, types=None):
    types = types or sorted({t for f in [key, *systems] for t in f["type"].to_list()})
    counts, rows = T.comparison_counts(key, systems, types, 0, n_sents)
    return counts, rows, types


def example_e():
    """METRICS 5.3: John Smith visited Paris Monday."""
    key = spans_frame((0, 0, 1, "PER"), (0, 3, 3, "LOC"))
    s1 = spans_frame((0, 0, 0, "PER"), (0, 3, 3, "LOC"))
    s2 = spans_frame((0, 0, 1, "PER"), (0, 3, 3, "ORG"), (0, 4, 4, "ORG"))
    return key, s1, s2


def test_worked_example_e():
    key, s1, s2 = example_e()
    c, rows, types = compare(key, [s1, s2])
    scores = R.score_rows(c, ["S1", "S2"], types).filter(pl.col("type") == "ALL")
    p, r, f = (scores[x].to_list() for x in ("precision", "recall", "f1"))
    assert p == [1 / 2, 1 / 3] and r == [1 / 2, 1 / 2]
    assert f == pytest.approx([0.5, 0.4])
    assert rows[0]["cls"].to_list() == ["boundary", "correct"]
    assert rows[1]["cls"].to_list() == ["correct", "type", "spurious"]
    pair = R.pair_rows(c, ["S1", "S2"], 200, 0).row(0, named=True)
    assert (pair["n_units"], pair["n_diff"], pair["corrections"], pair["new_errors"],
            pair["changed_errors"]) == (3, 3, 1, 2, 0)
    assert pair["diff"] == 1.0
    oracle = R.oracle_rows(c, ["S1", "S2"], types)
    both = oracle.filter((pl.col("n_systems") == 2) & (pl.col("type") == "ALL")).row(
        0, named=True)
    assert (both["n_correct"], both["n_gold"], both["recall"]) == (2, 2, 1.0)
    trans = R.transition_rows(c, ["S1", "S2"], types).filter(
        (pl.col("sys1") == "S1") & (pl.col("type") == "ALL") & (pl.col("count") > 0))
    assert sorted(trans.select("c1", "c2", "count").rows()) == [
        ("absent", "spurious", 1), ("boundary", "correct", 1), ("correct", "type", 1)]


def test_one_case_per_class():
    key = spans_frame((0, 0, 0, "PER"), (0, 2, 2, "LOC"), (0, 4, 5, "ORG"), (0, 7, 7, "PER"))
    resp = spans_frame((0, 0, 0, "PER"), (0, 2, 2, "ORG"), (0, 5, 5, "ORG"), (0, 9, 9, "LOC"))
    classes, spurious = T.classify(key, resp)
    names = [T.SPAN_CLASSES[k] for k in classes["cls"].to_list()]
    assert names == ["correct", "type", "boundary", "missed"]
    assert classes["pred_start"].to_list() == [0, 2, 5, None]
    assert spurious.select("start", "type").rows() == [(9, "LOC")]


def test_a_span_over_two_adjacent_key_spans_and_two_spans_in_one():
    key = spans_frame((0, 0, 0, "PER"), (0, 1, 1, "PER"), (0, 3, 5, "ORG"))
    resp = spans_frame((0, 0, 1, "PER"), (0, 3, 3, "ORG"), (0, 5, 5, "ORG"))
    classes, spurious = T.classify(key, resp)
    assert [T.SPAN_CLASSES[k] for k in classes["cls"].to_list()] == ["boundary"] * 3
    assert classes["pred_start"].to_list() == [0, 0, 3]     # the first overlapping span
    assert spurious.height == 0                             # each overlaps a key span


def test_spans_of_other_sentences_never_overlap():
    key = spans_frame((0, 0, 3, "PER"))
    resp = spans_frame((1, 0, 3, "PER"), (1, 5, 5, "LOC"))
    classes, spurious = T.classify(key, resp)
    assert [T.SPAN_CLASSES[k] for k in classes["cls"].to_list()] == ["missed"]
    assert spurious.height == 2


def random_spans(rng: np.random.Generator, n_sents: int, types: list[str]) -> pl.DataFrame:
    """Disjoint random spans (a random tag sequence decoded)."""
    sents = []
    for _ in range(n_sents):
        sents.append([rng.choice(["O", "O", f"B-{t}", f"I-{t}"]) if (t := rng.choice(types))
                      else "O" for _ in range(int(rng.integers(1, 12)))])
    spans, _ = D.decode_spans(tokens(*sents), "auto")
    return spans.select(*D.SPAN_COLUMNS)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_classes_partition_the_spans(seed):
    rng = np.random.default_rng(seed)
    key = random_spans(rng, 6, ["A", "B"])
    resp = random_spans(rng, 6, ["A", "B", "C"])
    classes, spurious = T.classify(key, resp)
    cls = np.array(classes["cls"].to_list(), dtype=np.int64)
    assert cls.size == key.height                             # every key span, one class
    # every response span: matched exactly (correct/type), overlapping (boundary) or spurious
    exact = np.isin(cls, [T.CORRECT, T.TYPE]).sum()
    overlapping = resp.height - exact - spurious.height
    assert overlapping >= 0
    assert (overlapping == 0) == (not (cls == T.BOUNDARY).any())
    c, rows, _ = compare(key, [resp], n_sents=6, types=["A", "B", "C"])
    assert c.correct.sum() == (cls == T.CORRECT).sum()
    assert c.pred.sum() == resp.height and c.gold.sum() == key.height
    assert rows[0].height == key.height + spurious.height


def sharded(key, systems, types, n_sents, cut):
    """Counts of sentences [0, cut) and [cut, n) summed."""
    parts = []
    for lo, hi in ((0, cut), (cut, n_sents)):
        def part(f: pl.DataFrame, lo=lo, hi=hi) -> pl.DataFrame:
            return f.filter(pl.col("sent").is_between(lo, hi - 1))
        parts.append(T.comparison_counts(part(key), [part(s) for s in systems], types, lo,
                                         hi - lo)[0])
    return T.merge_counts(parts)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 7))
def test_sharding_changes_no_count(seed, cut):
    rng = np.random.default_rng(seed)
    types = ["A", "B", "C"]
    key = random_spans(rng, 8, types[:2])
    systems = [random_spans(rng, 8, types) for _ in range(3)]
    whole, _ = T.comparison_counts(key, systems, types, 0, 8)
    split = sharded(key, systems, types, 8, cut)
    names = ["s0", "s1", "s2"]
    for frame in (R.score_rows, R.transition_rows, R.oracle_rows):
        assert frame(whole, names, types).equals(frame(split, names, types))
    assert R.pair_rows(whole, names, 500, 3).equals(R.pair_rows(split, names, 500, 3))


def test_pair_invariants_and_f1_randomization():
    rng = np.random.default_rng(7)
    types = ["A", "B"]
    key = random_spans(rng, 60, types)
    systems = [random_spans(rng, 60, types) for _ in range(2)]
    c, _, _ = compare(key, systems, n_sents=60, types=types)
    pairs = R.pair_rows(c, ["a", "b"], 2000, 0)
    ab, ba = pairs.row(0, named=True), pairs.row(1, named=True)
    assert ab["corrections"] == ba["new_errors"] and ab["new_errors"] == ba["corrections"]
    assert ab["ar_p"] == ba["ar_p"] and 0 < ab["ar_p"] <= 1
    f1 = R.score_rows(c, ["a", "b"], types).filter(pl.col("type") == "ALL")["f1"].to_list()
    assert ab["delta_f1"] == pytest.approx(f1[1] - f1[0])
    # a system against itself: no difference, p = 1
    same, _, _ = compare(key, [systems[0], systems[0]], n_sents=60, types=types)
    row = R.pair_rows(same, ["a", "a2"], 200, 0).row(0, named=True)
    assert (row["n_diff"], row["mcnemar_p"], row["ar_p"]) == (0, 1.0, 1.0)


def test_f1_randomization_finds_a_clear_difference():
    """Every sentence: system 2 gets its one span right, system 1 misses it."""
    n = 40
    d_tp, d_pred, m = np.array([1]), np.array([1]), np.array([n])
    p = R.f1_randomization(d_tp, d_pred, m, (0, 0), (n, n), n, 999, 0)
    assert p == pytest.approx(1 / 1000)
    assert R.f1_randomization(np.array([1, -1]), np.array([0, 0]), np.array([5, 5]),
                              (10, 20), (10, 20), 30, 999, 0) == 1.0


def test_f1_randomization_equals_the_exact_test_of_every_swap():
    """12 sentences, opposite kinds among them (merged into one kind with a shift): the p of
    the sampled trials is that of all 4,096 ways to swap, within its sampling error."""
    import itertools

    sents = [(1, 0)] * 3 + [(-1, 0)] * 2 + [(0, 1)] * 2 + [(0, -1)] + [(1, 1)] * 2 + [(-1, -1),
                                                                                   (2, 1)]
    d = np.array(sents)
    first = (20, 30)
    second = (first[0] + int(d[:, 0].sum()), first[1] + int(d[:, 1].sum()))
    gold = 28

    def f1(tp, found):
        return 2 * tp / (found + gold)

    observed = abs(f1(*second) - f1(*first))
    hits = 0
    for swap in itertools.product((0, 1), repeat=len(sents)):
        moved = np.array(swap) @ d
        delta = f1(second[0] - moved[0], second[1] - moved[1]) - f1(first[0] + moved[0],
                                                                     first[1] + moved[1])
        hits += abs(delta) >= observed - 1e-12
    q = hits / 2 ** len(sents)
    kinds, m = np.unique(d, axis=0, return_counts=True)
    trials = 40_000
    p = R.f1_randomization(kinds[:, 0], kinds[:, 1], m, first, second, gold, trials, 5)
    assert 0.05 < q < 0.95
    error = 4 * np.sqrt(q * (1 - q) / trials)
    assert p == pytest.approx((q * trials + 1) / (trials + 1), abs=error)
