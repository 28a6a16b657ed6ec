"""Standard coreference scores (METRICS 2.2) against the reference scorer's expected values,
an independent brute-force implementation, and invariants."""

from __future__ import annotations

import csv
import itertools
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from sysdiff.schemas.formats.coref import read_coref
from sysdiff.schemas.tables import TABLES
from sysdiff.transforms.coref import COUNT_METRICS, METRICS, coref_counts, coref_scores

SHARED = Path(__file__).resolve().parent / "data"
SCORED = ["muc", "bcub", "ceafm", "ceafe", "blanc", "lea"]


# ------------------------------------------------------------------- expected.csv rows


def expected_rows(dataset: str) -> list[dict]:
    """Rows of ``expected.csv``: case, key, response, metric, and the recall, precision, f1
    that are present. Tolerates the malformed A7 rows of the refscorer file, whose 'what'
    text broke the quoting: there the metric is the field after a stray quote and F1 is
    missing (only R and P are compared)."""
    rows = []
    with open(SHARED / dataset / "expected.csv", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        assert header[:7] == ["case", "key", "response", "metric", "recall", "precision", "f1"]
        for fields in reader:
            case, key, resp, *rest = fields
            at = next(i for i, x in enumerate(rest) if x in SCORED)
            values = []
            for x in rest[at + 1: at + 4]:
                try:
                    values.append(float(x))
                except ValueError:
                    break
            assert len(values) >= 2, fields
            rows.append({"case": case, "key": key, "response": resp, "metric": rest[at],
                         "values": values})
    return rows


@cache
def scores_of(dataset: str, key: str, resp: str) -> dict[str, tuple[float, float, float]]:
    s = coref_scores(coref_counts(read_coref(SHARED / dataset / key),
                                  read_coref(SHARED / dataset / resp)))
    return {r["metric"]: (r["recall"], r["precision"], r["f1"]) for r in s.iter_rows(named=True)}


def check_dataset(dataset: str) -> int:
    rows = expected_rows(dataset)
    for row in rows:
        got = scores_of(dataset, row["key"], row["response"])[row["metric"]]
        want = row["values"]
        # no number without data: a 0/0 is NULL where the reference scorer prints 0
        assert all(w == 0 for g, w in zip(got, want, strict=False) if g is None), (row, got)
        pairs = [(g, w) for g, w in zip(got, want, strict=False) if g is not None]
        assert np.allclose([g for g, _ in pairs], [w for _, w in pairs], atol=1e-4,
                           rtol=0), (row, got)
    return len(rows)


def n_expected(dataset: str) -> int:
    """The rows of a dataset's reference values (its file's lines, less the header)."""
    with open(SHARED / dataset / "expected.csv") as f:
        return sum(1 for _ in f) - 1


def test_every_refscorer_row():
    assert check_dataset("coref-refscorer") == n_expected("coref-refscorer")  # none skipped


def test_every_litbank_row():
    assert check_dataset("coref-litbank") == n_expected("coref-litbank")  # none skipped


def test_conll_score_is_mean_f1():
    s = scores_of("coref-litbank", "key.conll", "sys2.conll")
    assert s["conll"][2] == pytest.approx((s["muc"][2] + s["bcub"][2] + s["ceafe"][2]) / 3)


def test_counts_are_additive_over_document_shards():
    key = read_coref(SHARED / "coref-litbank" / "key.conll")
    resp = read_coref(SHARED / "coref-litbank" / "sys3.conll")
    docs = key["doc"].unique().sort().to_list()
    shards = [docs[:7], docs[7:]]
    parts = [coref_counts(key.filter(pl.col("doc").is_in(s)), resp.filter(pl.col("doc").is_in(s)))
             for s in shards]
    whole = coref_scores(coref_counts(key, resp))
    sharded = coref_scores(pl.concat(parts))
    assert whole["metric"].to_list() == METRICS
    assert np.allclose(whole.select("recall", "precision", "f1").to_numpy(),
                       sharded.select("recall", "precision", "f1").to_numpy())
    counts = coref_counts(key, resp)
    assert set(counts["metric"]) == set(COUNT_METRICS) and counts.height == 20 * 7


def test_scores_fit_table_schema():
    full = coref_scores(coref_counts(read_coref(SHARED / "coref-refscorer" / "TC-B.key"),
                                     read_coref(SHARED / "coref-refscorer" / "TC-B-1.response")))
    schema = TABLES["coref_scores"]
    table = full.with_columns(corpus=pl.lit("c"), system=pl.lit("s"),
                              options=pl.lit("match:exact|singletons:keep"),
                              # the flow adds the bootstrap interval: tests/test_bootstrap.py
                              ci_low=pl.lit(None, pl.Float64), ci_high=pl.lit(None, pl.Float64)
                              ).select(schema.names)
    assert table.to_arrow().cast(schema).num_rows == len(METRICS)


def test_dropping_singletons():
    key = read_coref(SHARED / "coref-refscorer" / "TC-A.key")
    resp = read_coref(SHARED / "coref-refscorer" / "TC-A-12.response")  # only singletons
    kept = coref_counts(key, resp).filter(pl.col("metric") == "bcub")
    dropped = coref_counts(key, resp, keep_singletons=False).filter(pl.col("metric") == "bcub")
    assert kept["precision_den"].sum() == resp.height
    assert dropped["precision_den"].sum() == 0
    assert dropped["recall_den"].sum() == key.height - 1      # {a} is a key singleton


# ------------------------------------------------------------ brute-force reference


def naive_counts(key: list[list[set]], resp: list[list[set]]) -> dict[str, list[float]]:
    """Per-metric [recall_num, recall_den, precision_num, precision_den] summed over
    documents, straight from the definitions (every mention pair enumerated)."""
    tot = {m: [0.0] * 4 for m in ["muc", "bcub", "ceafm", "ceafe", "lea", "blanc_c",
                                  "blanc_n"]}
    for k, r in zip(key, resp, strict=True):
        for m, (a, b, c, d) in naive_doc(k, r).items():
            for i, v in enumerate((a, b, c, d)):
                tot[m][i] += v
    return tot


def naive_doc(k: list[set], r: list[set]) -> dict[str, tuple]:
    def where(ents):
        return {m: i for i, e in enumerate(ents) for m in e}

    kw, rw = where(k), where(r)

    def muc(a, bw):
        num = sum(len(e) - len({bw.get(m, ("x", m)) for m in e}) for e in a)
        return num, sum(len(e) - 1 for e in a)

    def b3(a, b, bw):
        return sum(len(e & b[bw[m]]) / len(e) if m in bw else 0 for e in a for m in e)

    def lea(a, b, bw):
        num = 0.0
        for e in a:
            if len(e) == 1:
                (m,) = e
                res = 1.0 if m in bw and len(b[bw[m]]) == 1 else 0.0
            else:
                links = [p for p in itertools.combinations(e, 2)
                         if p[0] in bw and p[1] in bw and bw[p[0]] == bw[p[1]]]
                res = len(links) / (len(e) * (len(e) - 1) / 2)
            num += len(e) * res
        return num

    def ceaf(phi):
        if not k or not r:
            return 0.0
        mat = np.array([[phi(a, b) for b in r] for a in k])
        i, j = linear_sum_assignment(mat, maximize=True)
        return float(mat[i, j].sum())

    mr, mr_den = muc(k, rw)
    mp, mp_den = muc(r, kw)
    nk, nr = sum(map(len, k)), sum(map(len, r))
    cm = ceaf(lambda a, b: len(a & b))
    ce = ceaf(lambda a, b: 2 * len(a & b) / (len(a) + len(b)))

    def links(w):
        ms = sorted(w)
        co = {p for p in itertools.combinations(ms, 2) if w[p[0]] == w[p[1]]}
        return co, set(itertools.combinations(ms, 2)) - co

    ck, nk_l = links(kw)
    cr, nr_l = links(rw)
    return {
        "muc": (mr, mr_den, mp, mp_den),
        "bcub": (b3(k, r, rw), nk, b3(r, k, kw), nr),
        "ceafm": (cm, nk, cm, nr), "ceafe": (ce, len(k), ce, len(r)),
        "lea": (lea(k, r, rw), nk, lea(r, k, kw), nr),
        "blanc_c": (len(ck & cr), len(ck), len(ck & cr), len(cr)),
        "blanc_n": (len(nk_l & nr_l), len(nk_l), len(nk_l & nr_l), len(nr_l)),
    }


def frame(docs: list[list[set]]) -> pl.DataFrame:
    rows = [(f"d{i}", 0, s, e, str(j)) for i, ents in enumerate(docs)
            for j, ent in enumerate(ents) for (s, e) in ent]
    return pl.DataFrame(rows, orient="row", schema={
        "doc": pl.Utf8, "part": pl.Int32, "start": pl.Int32, "end": pl.Int32,
        "entity": pl.Utf8})


SPANS = [(s, e) for s in range(7) for e in range(s, min(s + 3, 7))]


@st.composite
def partitions(draw, pool=None):
    """Entities (disjoint sets of spans) of one document."""
    spans = draw(st.lists(st.sampled_from(pool or SPANS), min_size=0, max_size=9, unique=True))
    labels = draw(st.lists(st.integers(0, 3), min_size=len(spans), max_size=len(spans)))
    ents: dict[int, set] = {}
    for sp, lab in zip(spans, labels, strict=True):
        ents.setdefault(lab, set()).add(sp)
    return list(ents.values())


@st.composite
def corpora(draw):
    n_docs = draw(st.integers(1, 3))
    key = [draw(partitions()) for _ in range(n_docs)]
    resp = []
    for k in key:
        # responses reuse many key spans, so that entities overlap
        pool = sorted({m for e in k for m in e} | set(draw(st.lists(st.sampled_from(SPANS),
                                                                    max_size=4))))
        resp.append(draw(partitions(pool=pool or None)))
    return key, resp


def counts_dict(counts: pl.DataFrame) -> dict[str, list[float]]:
    s = counts.group_by("metric").agg(pl.col("recall_num", "recall_den", "precision_num",
                                             "precision_den").sum())
    return {r[0]: list(r[1:]) for r in s.iter_rows()}


FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(corpora())
def test_counts_equal_brute_force(data):
    key, resp = data
    got = counts_dict(coref_counts(frame(key), frame(resp)))
    want = naive_counts(key, resp)
    for metric, values in want.items():
        assert np.allclose(got.get(metric, [0.0] * 4), values), (metric, got.get(metric), values)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_swapping_key_and_response_swaps_recall_and_precision(data):
    key, resp = data
    ab = coref_scores(coref_counts(frame(key), frame(resp)))
    ba = coref_scores(coref_counts(frame(resp), frame(key)))
    for metric in ["muc", "bcub", "ceafm", "ceafe", "lea"]:
        x = ab.filter(pl.col("metric") == metric).row(0, named=True)
        y = ba.filter(pl.col("metric") == metric).row(0, named=True)
        assert x["recall"] == pytest.approx(y["precision"])
        assert x["precision"] == pytest.approx(y["recall"])
        if x["recall"] is None or y["recall"] is None:  # nothing to find: F1 not evaluated
            assert (x["f1"] is None) == (x["recall"] is None)
            assert (y["f1"] is None) == (y["recall"] is None)
        else:
            assert x["f1"] == pytest.approx(y["f1"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(partitions(), min_size=1, max_size=3))
def test_perfect_response_scores_one(key):
    if not any(len(e) > 1 for doc in key for e in doc):
        key = [*key, [{(0, 0), (2, 3)}]]      # MUC needs a coreference link to be defined
    s = coref_scores(coref_counts(frame(key), frame(key)))
    assert np.allclose(s.select("recall", "precision", "f1").to_numpy(), 1.0)


def test_blanc_when_the_key_has_no_coreference_link():
    # reference scorer: with no key coreference link, BLANC is the non-coreference score
    key = frame([[{(0, 0)}, {(1, 1)}, {(2, 2)}]])
    resp = frame([[{(0, 0), (1, 1)}, {(2, 2)}]])
    s = coref_scores(coref_counts(key, resp)).filter(pl.col("metric") == "blanc").row(
        0, named=True)
    assert (s["recall"], s["precision"]) == (pytest.approx(2 / 3), pytest.approx(1.0))
