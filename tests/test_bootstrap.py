"""Bootstrap confidence intervals (METRICS 1.6b, issue 24): the sampling and the intervals
themselves, then METRICS' checks on real runs: a perfect system has [1, 1] in every task; an
accuracy's half-width is 1.96 analytic standard errors (ratio estimator over sentences) on
the bundled Sequoia at B = 5,000; the bootstrap p agrees with the randomization p on the
bundled pairs; the intervals do not depend on shards or a Dask cluster (token, coreference
and UNL tables are compared column by column, intervals included, by ``test_scale.py`` and
``test_domain_shards.py``; span and SRL tables here); per-unit rows add up to the counts.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import polars as pl
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from sysdiff.flows.queries import query
from sysdiff.transforms import bootstrap as B
from tests.conftest import REPO, SEQUOIA
from tests.test_domain_shards import partitions

NER, SRL, LITBANK, UNL = (REPO / "data" / d for d in ("ner", "srl", "litbank", "unl"))

# ------------------------------------------------------------------------------ sampling


def test_weights_are_multinomial_rows_that_depend_on_seed_row_and_n_only():
    w = B.weight_rows(50, 0, 8, seed=7)
    assert w.shape == (8, 50) and (w.sum(axis=1) == 50).all() and (w >= 0).all()
    assert np.array_equal(B.weight_rows(50, 3, 6, seed=7), w[3:6])  # any block of rows
    assert not np.array_equal(B.weight_rows(50, 0, 8, seed=8), w)
    assert not np.array_equal(w[0], w[1])


def test_weights_drawn_by_several_threads_are_the_same(monkeypatch):
    """Rows drawn by several threads into a reused buffer: each row is still the bincount
    of its own generator's draws."""
    monkeypatch.setattr(B, "DRAW_THREADS", 3)
    buffer = np.full((40, 30), -1.0)
    w = B.weight_rows(30, 5, 45, seed=9, out=buffer)
    assert w.base is buffer or w is buffer
    rows = [np.bincount(np.random.default_rng([9, r]).integers(0, 30, 30), minlength=30)
            for r in range(5, 45)]
    assert np.array_equal(w, np.array(rows, np.float64))
    monkeypatch.setattr(B, "DRAW_THREADS", 1)
    assert np.array_equal(B.weight_rows(30, 5, 45, seed=9), w)


def test_sums_are_the_same_in_blocks_of_any_size(monkeypatch):
    """``W @ X`` a block of rows at a time: the block size (a memory bound) changes
    nothing, and neither do the other matrices resampled with the same W."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 9, (40, 3))
    y = rng.random((40, 2))
    opts = B.Bootstrap(samples=25, seed=3)
    whole = B.resample([x, y], opts)
    monkeypatch.setattr(B, "BLOCK_BYTES", 8 * 40 * 2)  # two rows per block
    blocks = B.resample([x], opts)
    assert np.array_equal(whole[0], blocks[0])
    assert np.array_equal(whole[0], B.weight_rows(40, 0, 25, 3) @ x)  # integer sums: exact


def test_matrices_resampled_together_get_the_sums_of_separate_passes(monkeypatch):
    """One pass over W for many matrices (the integer ones as one product of their
    distinct columns, in larger blocks; a fractional one on its own) gives, bit for bit,
    the sums of one pass per matrix and of the plain product with the whole W."""
    rng = np.random.default_rng(5)
    n, opts = 60, B.Bootstrap(samples=37, seed=11)
    x = rng.integers(0, 40, (n, 4)).astype(np.int32)
    y = np.column_stack([x[:, 2], rng.integers(0, 3, n), x[:, 0]]).astype(np.int64)  # shared
    z = rng.random((n, 2))  # fractional: multiplied on its own
    big = np.full((n, 1), 2.0 ** 50)  # integer, but its sums are not exact in float64
    monkeypatch.setattr(B, "BLOCK_BYTES", 8 * n * 3)  # three rows per block
    together = B.resample([x, y, z, big], opts)
    alone = [B.resample([m], opts)[0] for m in (x, y, z, big)]
    w = B.weight_rows(n, 0, opts.samples, opts.seed)
    for got, one in zip(together, alone, strict=True):
        assert got.tobytes() == one.tobytes()
    for got, m in zip(together[:2], (x, y), strict=True):
        assert got.tobytes() == (w @ m.astype(np.float64)).tobytes()
    assert np.array_equal(together[1][:, [0, 2]], together[0][:, [2, 0]])
    assert [B.exact(m) for m in (x, y, z, big)] == [True, True, False, False]
    assert not B.exact(np.array([[1.0], [np.nan]]))
    assert B.exact(np.array([[True], [False]]))  # Booleans count as 0 and 1


def blas() -> set[int]:
    """The thread counts of the BLAS libraries this process has loaded."""
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_products_of_few_columns_run_on_one_blas_thread(monkeypatch):
    """The products of few distinct columns run on one BLAS thread (the others would spin
    on the cores that draw W); wider ones on BLAS's own number; the sums are the same and
    BLAS's setting is given back."""
    seen: list[set[int]] = []
    draw = B.weight_rows
    monkeypatch.setattr(B, "weight_rows", lambda *a, **k: seen.append(blas()) or draw(*a, **k))
    rng = np.random.default_rng(8)
    x, opts = rng.integers(0, 9, (50, 6)), B.Bootstrap(samples=20, seed=2)
    with threadpool_limits(3, user_api="blas"):  # (whatever the machine's cores)
        narrow = B.resample([x], opts)[0]
        assert seen and all(threads == {1} for threads in seen) and blas() == {3}
        seen.clear()
        monkeypatch.setattr(B, "ONE_BLAS_THREAD_COLUMNS", 5)
        assert np.array_equal(B.resample([x], opts)[0], narrow)
        assert seen and all(threads == {3} for threads in seen)
    assert B.blas_threads(6) is None and B.blas_threads(5) == 1


def test_passes_of_several_threads_take_turns_with_the_blas_setting(monkeypatch):
    """BLAS's thread count is the process's: two threads resampling at once do not overlap
    their passes (each would restore what the other set), and the setting is the same after
    both."""
    inside, most = [0], [0]
    draw = B.weight_rows

    def counted(*a, **k):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        inside[0] -= 1
        return draw(*a, **k)

    monkeypatch.setattr(B, "weight_rows", counted)
    x, opts = np.random.default_rng(4).integers(0, 9, (40, 3)), B.Bootstrap(samples=4)
    start = threading.Barrier(2)
    sums: list[np.ndarray] = []

    def one() -> None:
        start.wait()
        sums.append(B.resample([x], opts)[0])

    with threadpool_limits(3, user_api="blas"):
        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert blas() == {3}
    assert most[0] == 1 and len(sums) == 2 and np.array_equal(*sums)


def test_distinct_columns_rebuild_every_matrix():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 3, (30, 6))
    x[:, 4] = x[:, 1]
    y = np.column_stack([x[:, 1], rng.integers(0, 3, 30), x[:, 0]]).astype(np.float64)
    cols = B.distinct_columns([x, y], 30)
    assert cols.distinct.shape == (30, len({tuple(c) for c in np.column_stack([x, y]).T}))
    assert np.array_equal(cols.distinct[:, cols.where[0]], x)
    assert np.array_equal(cols.distinct[:, cols.where[1]], y)
    assert cols.where[1][0] == cols.where[0][1] == cols.where[0][4]  # int and float: one


def test_keys_resampled_in_one_pass_share_w():
    """``sample_sums`` draws one W for every key (the token flow's accuracies and CoNLL
    2018 F1s): each key's sums are those of its own pass; the accuracies are
    ``accuracy_samples``'."""
    rng = np.random.default_rng(7)
    opts = B.Bootstrap(samples=50, seed=2)
    units = rng.integers(1, 30, 25)
    acc = B.UnitRows.of(0, np.column_stack([units, units[:, None] - rng.integers(0, 2, (25, 2))]))
    f1 = B.UnitRows.of(0, rng.integers(0, 9, (25, 6)))
    sums = B.sample_sums({"acc": acc, "f1": f1}, opts)
    assert sums["f1"].tobytes() == B.resample([f1.matrix()], opts)[0].tobytes()
    assert sums["acc"].tobytes() == B.resample([acc.matrix()], opts)[0].tobytes()
    assert B.accuracies(sums["acc"]).tobytes() == \
        B.accuracy_samples({"acc": acc}, opts)["acc"].tobytes()


def test_rows_are_kept_compact_and_resampled_piece_by_piece(monkeypatch):
    """A corpus' per-unit rows arrive in shard pieces of int64 counts: each piece is kept
    in the smallest integer type that holds it (a 100M-token corpus' rows took 6.6 GB as
    int64), ``matrix`` gives the int64 rows back, and the sample sums come from the pieces
    without stacking them (``matrix`` is never called), bit for bit those of the stacked
    rows, with a piece of large counts and a float matrix beside them."""
    rng = np.random.default_rng(11)
    opts = B.Bootstrap(samples=40, seed=5)
    pieces = [rng.integers(0, 9, (7, 4)), rng.integers(-300, 300, (5, 4)),
              rng.integers(0, 2**20, (6, 4)), rng.integers(0, 2**40, (3, 4))]
    rows = B.UnitRows()
    for first, piece in zip(np.cumsum([0] + [len(p) for p in pieces[:-1]])[::-1],
                            pieces[::-1], strict=True):  # merged out of corpus order
        rows.merge(B.UnitRows.of(int(first), piece))
    assert [p.dtype for p in rows.ordered()] == [np.int8, np.int16, np.int32, np.int64]
    whole = np.concatenate(pieces)
    assert rows.matrix().dtype == np.int64 and np.array_equal(rows.matrix(), whole)
    small = B.UnitRows.of(0, rng.integers(0, 5, (21, 3)))
    floats = rng.random((21, 2))
    want = B.resample([whole, small.matrix(), floats], opts)

    def stacked(self, width=None):  # noqa: ANN001, ANN202
        raise AssertionError("rows stacked whole")

    monkeypatch.setattr(B.UnitRows, "matrix", stacked)
    got = B.resample([rows, small, floats], opts)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    sums = B.sample_sums({"a": rows, "b": small}, opts)
    assert sums["a"].tobytes() == want[0].tobytes() and sums["b"].tobytes() == want[1].tobytes()


def test_the_token_flow_draws_accuracies_and_f1s_from_one_w():
    """``flows/tokens.draw_samples``: every view setting's accuracies and every system's
    CoNLL 2018 sums in one pass, each equal to its own computation with the same seed;
    nothing with intervals off."""
    from types import SimpleNamespace

    from sysdiff.flows.tokens import draw_samples
    from sysdiff.transforms import conll18

    rng = np.random.default_rng(9)
    n, opts = 40, B.Bootstrap(samples=30, seed=4)
    units = rng.integers(1, 30, n)[:, None]
    sents = {(v, p): B.UnitRows.of(0, np.column_stack([units, units - rng.integers(0, 3, (n, 2))]))
             for v, p in [("upos", True), ("head", False), ("head", True)]}
    width = 3 * len(conll18.sentence_metrics(True))
    f1 = {s: B.UnitRows.of(0, rng.integers(0, 9, (n, width))) for s in ("s1", "s2")}
    acc = {**{k: SimpleNamespace(sentences=r) for k, r in sents.items()}, "conll18_sents": f1}
    got = draw_samples(acc, ["upos", "head"], opts)
    want = B.accuracy_samples(sents, opts)
    assert got.accuracy.keys() == want.keys()
    assert all(got.accuracy[k].tobytes() == want[k].tobytes() for k in want)
    assert all(got.conll18[s].tobytes() == B.resample([f1[s].matrix()], opts)[0].tobytes()
               for s in f1)
    off = draw_samples(acc, ["upos", "head"], B.Bootstrap(samples=0))
    assert off.accuracy == {} and off.conll18 == {}


def test_quantiles_are_numpys_linear_quantiles_of_the_samples_with_data():
    rng = np.random.default_rng(2)
    s = rng.random((101, 4))
    s[[3, 50, 77], 2] = np.nan  # samples without data for the score
    s[:, 3] = np.nan             # a score without data at all
    got = B.quantiles(s, [0.025, 0.975])
    assert np.allclose(got[:, :2], np.quantile(s[:, :2], [0.025, 0.975], axis=0))
    assert np.allclose(got[:, 2], np.nanquantile(s[:, 2], [0.025, 0.975]))
    assert np.isnan(got[:, 3]).all()


def test_bootstrap_p_counts_samples_of_the_other_sign():
    deltas = np.array([[0.1, -0.2, 0.0, 0.3],
                       [0.2, -0.1, 0.1, np.nan],
                       [-0.1, 0.1, -0.1, 0.1],
                       [0.0, -0.3, 0.2, 0.2]])
    p = B.bootstrap_p(deltas, np.array([0.1, -0.2, 0.0, np.nan]))
    # + observed: 2 of 4 samples <= 0; - observed: 1 of 4 >= 0; 0 observed: 1; none: NaN
    assert p[:3].tolist() == [1.0, 0.5, 1.0] and np.isnan(p[3])
    assert B.bootstrap_p(np.array([[0.1], [0.2], [0.3], [-0.1]]),
                         np.array([0.2])).tolist() == [0.5]


def test_both_directions_of_a_pair_mirror_each_other():
    rng = np.random.default_rng(4)
    samples = rng.random((200, 3))
    ci = B.pair_intervals(samples, np.array([0, 0]), np.array([1, 2]), 0.9,
                          np.array([0.05, np.nan]))
    assert ci.low[2] == -ci.high[0] and ci.high[2] == -ci.low[0] and ci.p[0] == ci.p[2]
    assert np.isnan([ci.low[1], ci.high[1], ci.p[1]]).all()  # no delta: no interval


def test_a_wider_confidence_gives_a_wider_interval():
    samples = np.random.default_rng(5).random((500, 1))
    lo90, hi90 = B.interval(samples, 0.9)
    lo99, hi99 = B.interval(samples, 0.99)
    assert lo99[0] < lo90[0] < hi90[0] < hi99[0]


# ------------------------------------------------------------------------------ per-unit rows


def test_per_sentence_token_rows_add_up_to_the_counts():
    from sysdiff.transforms import engine
    from sysdiff.transforms.tokens import ShardWords, Vocab
    from tests import helpers

    key = helpers.words(["DET", "NOUN", "VERB", "DET", "NOUN"], sent=[0, 0, 0, 2, 2])
    sys = key.with_columns(upos=pl.Series(["DET", "VERB", "VERB", "NOUN", "NOUN"]))
    t = helpers.tokens.evaluate_words(key, {"s": sys, "k": key}, ["upos"],
                                      intervals=B.Bootstrap(200))[("upos", True)]
    assert helpers.as_dict(t["scores"], "system", "ci_low")["k"] == 1.0
    assert helpers.as_dict(t["scores"], "system", "ci_high")["k"] == 1.0
    words = ShardWords(key=key.with_columns(sent=pl.Series([0, 0, 0, 2, 2], dtype=pl.Int32)),
                       systems=[sys], first_sent=0, n_sents=3,
                       sent_lengths=np.array([3, 0, 2]), fmt="conllu")
    vocab = Vocab({c: ["DET", "NOUN", "VERB", "_", "dep"] for c in ("upos", "xpos", "feats",
                                                                     "lemma", "deprel")})
    m = helpers.tokens.view_matrix("upos", words, vocab)
    c = engine.shard_counts(m, [], first_sent=10)
    rows = c.sentences.matrix()
    assert rows.tolist() == [[3, 2], [0, 0], [2, 1]]  # units, correct: a sentence with none
    assert rows[:, 0].sum() == c.n_units and rows[:, 1].sum() == c.correct[0]
    assert list(c.sentences.pieces) == [10]


@pytest.mark.parametrize("tree", [True, False])
def test_per_sentence_conll18_rows_add_up_to_the_official_counts(tree):
    """The CoNLL 2018 rows of the F1 bootstrap (the flow takes a shard's counts from their
    sums) equal conll18_counts / tag_counts (which equal the official script's, see
    test_conll18.py) on a real system; Words are all correct; a shard starts anywhere."""
    from sysdiff.schemas.formats.conllu import read_conll
    from sysdiff.transforms import conll18

    key = read_conll(SEQUOIA / "key.conllu").words
    system = read_conll(SEQUOIA / "fr_core_news_sm-3.8.0.conllu").words
    lo, hi = 100, 160
    key, system = (w.filter(pl.col("sent").is_between(lo, hi - 1)) for w in (key, system))
    gold = conll18.normalised_key(key)
    rows = conll18.sentence_counts(key, system, gold, tree, lo, hi - lo)
    metrics = conll18.sentence_metrics(tree)
    assert rows.shape == (hi - lo, 3 * len(metrics))
    official = (conll18.conll18_counts if tree else conll18.tag_counts)(key, system, gold)
    totals = conll18.sentence_totals(rows, tree)
    assert totals.equals(official)
    assert (official["correct"] < official["gold_total"]).any()  # real errors
    words = rows.reshape(hi - lo, len(metrics), 3)[:, -1]
    assert (words[:, 0] == words[:, 1]).all() and words[:, 0].sum() == key.height
    assert (rows.reshape(hi - lo, len(metrics), 3)[:, :, 0].sum(axis=1) > 0).all()


def test_sentence_sums_are_per_sentence_bincounts():
    """The per-sentence sums of the CoNLL 2018 rows against the straightforward bincount:
    words in any order, sentences without a word, a shard that starts anywhere."""
    from sysdiff.transforms import conll18

    rng = np.random.default_rng(8)
    sent = rng.choice([40, 41, 43, 44, 47], 200)  # 42, 45, 46: no word
    m = pl.DataFrame({"sent": sent.astype(np.int32), "a": rng.random(200) < 0.7,
                      "b": rng.random(200) < 0.2})
    got = conll18.sentence_sums(m, ["a", "b"], 40, 8)
    s = sent - 40
    want = np.column_stack([np.bincount(s, weights=m[c].to_numpy(), minlength=8)
                            for c in ("a", "b")] + [np.bincount(s, minlength=8)])
    assert got.dtype == np.int64 and np.array_equal(got, want)
    assert got[[2, 5, 6]].sum() == 0 and got[:, -1].sum() == 200


def test_no_number_without_data_no_interval_either():
    """A system that lacks the view's column: its score, its pairs' deltas, their intervals
    and bootstrap p are NULL; the other system keeps its interval."""
    from tests import helpers

    key = helpers.words(["DET", "NOUN"], sent=[0, 1]).with_columns(
        lemma=pl.Series(["le", "chat"]))
    t = helpers.tokens.evaluate_words(key, {"good": key.clone(), "blank": key.with_columns(
        lemma=pl.lit("_"))}, ["lemma"], intervals=B.Bootstrap(100))[("lemma", True)]
    ci = {s: (lo, hi) for s, lo, hi in t["scores"].select("system", "ci_low", "ci_high").rows()}
    assert ci == {"good": (1.0, 1.0), "blank": (None, None)}
    pair = t["pairs"].row(0, named=True)
    assert (pair["delta_ci_low"], pair["delta_ci_high"], pair["bootstrap_p"]) == (None,) * 3


def test_per_sentence_srl_counts_add_up_to_the_official_counts():
    """The per-sentence counts of the SRL bootstrap, summed, are eval09.pl's and
    srl-eval.pl's counts (the official rows are computed without them)."""
    from sysdiff.schemas.formats.srl import read_srl
    from sysdiff.transforms.srl_scores import score_counts

    for key, response in (("key.conll09", "sys2.conll09"), ("key.conll05", "sys2.conll05")):
        k, s = read_srl(SRL / key), read_srl(SRL / response)
        mode = "head" if key.endswith("09") else "span"
        n = int(k.sents.height)
        whole = score_counts(mode, k.preds, k.args, s.preds, s.args, n)
        per = score_counts(mode, k.preds, k.args, s.preds, s.args, n, ("sent",),
                           int(k.sents["sent"].min()))
        summed = per.group_by("mode", "role", "ppos").agg(
            pl.col("n_gold", "n_pred", "n_correct").sum())
        keys = ["mode", "role", "ppos"]
        both = whole.join(summed, on=keys, how="full", nulls_equal=True, suffix="_sum")
        for c in ("n_gold", "n_correct"):
            assert both[c].fill_null(0).to_list() == both[f"{c}_sum"].fill_null(0).to_list()
        assert both["n_pred"].to_list() == [None if x is None else y for x, y in
                                            zip(both["n_pred"], both["n_pred_sum"],
                                                strict=True)]


# ------------------------------------------------------------------------------ runs


def _run(cli, root, *args: str) -> None:
    code, _out, err = cli("run", "-w", str(root), "--ar-trials", "200", *args)
    assert code == 0, err


def first_sentences(src, dst, n: int):
    blocks = src.read_text(encoding="utf-8").split("\n\n")[:n]
    dst.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return dst


PERFECT = {  # task -> (key, another system, score tables and their F1 / accuracy column)
    "ner": (NER / "gold.iob2", NER / "spacy_sm-3.8.0.tsv", [("span_scores", "f1")]),
    "srl": (SRL / "key.conllu", SRL / "sys1.conllu", [("srl_scores", "f1")]),
    "coref": (LITBANK / "key.conll", LITBANK / "sys1.conll",
              [("coref_scores", "f1"), ("arcs_scores", "f1")]),
    "unl": (UNL / "expected.unl", UNL / "grammar@1.unl", [("unl_scores", "f1")]),
}


@pytest.fixture(scope="module")
def perfect(tmp_path_factory, prefect_harness):
    """task -> a warehouse where system ``gold`` is the key itself (and ``other`` a real
    system), built lazily; dep on the first 40 sentences of Sequoia."""
    from tests.conftest import run_cli

    built = {}

    def get(task: str):
        if task not in built:
            tmp = tmp_path_factory.mktemp(f"perfect-{task}")
            if task == "dep":
                key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 40)
                other = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu",
                                        tmp / "md.conllu", 40)
                tables = [("scores", "accuracy"), ("conll18", "f1")]
            else:
                key, other, tables = PERFECT[task]
            _run(run_cli, tmp / "wh", "--task", task, "--corpus", "c", "--key", str(key),
                 f"--system=gold={key}", f"--system=other={other}")
            built[task] = (tmp / "wh", tables)
        return built[task]

    return get


@pytest.mark.parametrize("task", ["dep", "ner", "srl", "coref", "unl"])
def test_a_system_right_everywhere_has_the_interval_1_1(perfect, task):
    """METRICS 1.6b: every score of a perfect system is 1 in every sample; the other system
    has intervals around its scores; a score without data has none."""
    root, tables = perfect(task)
    for table, column in tables:
        rows = query(root, f"select system, {column} as score, ci_low, ci_high from {table}")
        gold = rows.filter((pl.col("system") == "gold") & pl.col("score").is_not_null())
        ones = gold.filter(pl.col("score") == 1.0)
        assert ones.height > 0, table
        assert ones["ci_low"].to_list() == [1.0] * ones.height, table
        assert ones["ci_high"].to_list() == [1.0] * ones.height, table
        other = rows.filter((pl.col("system") == "other") & (pl.col("score") < 1)
                            & (pl.col("score") > 0))
        assert other.height and (other["ci_low"] <= other["score"]).all() \
            and (other["score"] <= other["ci_high"]).all() \
            and (other["ci_low"] < other["ci_high"]).any(), table
        blank = rows.filter(pl.col("score").is_null())
        assert blank["ci_low"].null_count() == blank.height, table


def test_an_accuracys_half_width_is_1_96_standard_errors(tmp_path, cli):
    """METRICS 1.6b on the bundled Sequoia at B = 5,000: the half-width of every accuracy's
    95 % interval is within 10 % of 1.96 x its analytic standard error, the ratio estimator
    over sentences: SE^2 = n / (n - 1) * sum_i (c_i - acc * u_i)^2 / (sum_i u_i)^2, from
    the per-sentence counts recounted here from the staged words."""
    root = tmp_path / "wh"
    _run(cli, root, str(SEQUOIA / "sequoia.toml"), "--bootstrap", "5000")
    n = query(root, "select count(*) as n from sents where system = '__key__'").item()
    checked = 0
    for view, column in (("upos", "upos"), ("head", "head"), ("feats", "feats")):
        counts = query(root, f"""
            with k as (select sent, id, {column} as g from units
                       where system = '__key__' and kind = 0),
                 s as (select system, sent, id, {column} as x from units
                       where system != '__key__' and kind = 0)
            select s.system, s.sent, count(*) as u,
                   sum((s.x is not distinct from k.g)::int) as c
            from s join k using (sent, id) group by all""")
        scores = query(root, f"select system, accuracy, ci_low, ci_high, options from scores "
                             f"where view = '{view}' and punct and accuracy is not null")
        for system, acc, low, high, options in scores.rows():
            assert "bootstrap:5000|confidence:0.95|seed:0" in options
            mine = counts.filter(pl.col("system") == system)
            u, c = mine["u"].to_numpy().astype(float), mine["c"].to_numpy().astype(float)
            assert c.sum() / u.sum() == pytest.approx(acc, abs=1e-12)
            se = np.sqrt(n / (n - 1) * ((c - acc * u) ** 2).sum()) / u.sum()
            assert (high - low) / 2 == pytest.approx(1.96 * se, rel=0.10), (view, system)
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("name", ["sequoia", "history"])
def test_bootstrap_p_agrees_with_the_randomization_p(bundled, name):
    """On the bundled pairs, the bootstrap and the randomization test reach the same
    verdict at 0.05 and rank the pairs alike; a delta's interval excludes 0 exactly when
    its bootstrap p is below 1 - confidence (up to the samples at 0)."""
    pairs = query(bundled(name), "select delta_acc, delta_ci_low, delta_ci_high, ar_p, "
                                 "bootstrap_p from pairs where sys1 < sys2 and ar_p is not "
                                 "null")
    assert pairs.height >= 20
    assert ((pairs["ar_p"] < 0.05) == (pairs["bootstrap_p"] < 0.05)).all()
    rho = pairs.select(pl.corr("ar_p", "bootstrap_p", method="spearman")).item()
    assert rho > 0.9
    excludes = (pairs["delta_ci_low"] > 0) | (pairs["delta_ci_high"] < 0)
    assert (excludes == (pairs["bootstrap_p"] < 0.05)).mean() > 0.95


def assert_same_tables(a, b) -> None:
    """Every partition of two warehouses: the same signature and rows (in any order: the
    order of srl_classes rows follows the shards)."""
    pa_, pb = partitions(a), partitions(b)
    assert sorted(pa_) == sorted(pb)
    for key, (sig, df) in pa_.items():
        assert pb[key][0] == sig, key
        assert df.sort(pl.all(), nulls_last=True).equals(
            pb[key][1].sort(pl.all(), nulls_last=True)), key


def _intervals(root, table: str) -> tuple[pl.DataFrame, list[str]]:
    cols = [c for c in query(root, f"describe {table}")["column_name"].to_list()
            if c in ("ci_low", "ci_high", "delta_ci_low", "delta_ci_high", "bootstrap_p")]
    return query(root, f"select * from {table} order by all").select(
        pl.exclude("path", "ingested_at", "mtime_ns")), cols


@pytest.mark.parametrize("task", ["ner", "srl"])
def test_span_and_srl_intervals_do_not_depend_on_shards_or_dask(perfect, tmp_path, cli, task):
    """One shard per ~40 sentences, and on a 2-worker Dask cluster: every table, intervals
    included, equals the run in default shards (intervals not NULL)."""
    import distributed

    root, _tables = perfect(task)
    key, other, _ = PERFECT[task]
    args = ["--task", task, "--corpus", "c", "--key", str(key), f"--system=gold={key}",
            f"--system=other={other}"]
    table = "span_pairs" if task == "ner" else "srl_pairs"
    base, cols = _intervals(root, table)
    assert base.select(cols).null_count().sum_horizontal().item() == 0
    _run(cli, tmp_path / "small", *args, "--shard-sents", "40")
    assert_same_tables(root, tmp_path / "small")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        _run(cli, tmp_path / "dask", *args, "--shard-sents", "60", "--dask-address",
             cluster.scheduler_address)
    assert_same_tables(root, tmp_path / "dask")


def test_settings_are_recorded_and_a_change_recomputes_only_the_intervals(tmp_path, cli):
    """--bootstrap, --seed and --confidence are in the options of the tables with intervals
    (and their signatures): a rerun with other settings changes the intervals and nothing
    else; --bootstrap 0 leaves them NULL, and --require-significant then fails."""
    key = first_sentences(SEQUOIA / "key.conllu", tmp_path / "key.conllu", 60)
    a = first_sentences(SEQUOIA / "seqsm_local-ud2.8.conllu", tmp_path / "a.conllu", 60)
    b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp_path / "b.conllu", 60)
    root = tmp_path / "wh"
    args = ["--task", "dep", "--corpus", "c", "--key", str(key), f"--system=a={a}",
            f"--system=b={b}"]
    sql = ("select view, punct, system, accuracy, ci_low, ci_high, options from scores "
           "order by all")
    _run(cli, root, *args, "--bootstrap", "300", "--seed", "4", "--confidence", "0.9")
    first = query(root, sql)
    assert first["options"].str.contains(r"\|bootstrap:300\|confidence:0.9\|seed:4\|map:"
                                         ).all()
    labels = query(root, "select * from labels order by all")
    _run(cli, root, *args, "--bootstrap", "300", "--seed", "4", "--confidence", "0.99")
    wider = query(root, sql)
    assert wider["accuracy"].equals(first["accuracy"])
    assert ((wider["ci_high"] - wider["ci_low"]) >= (first["ci_high"] - first["ci_low"])
            ).all()
    assert ((wider["ci_high"] - wider["ci_low"]) > (first["ci_high"] - first["ci_low"])
            ).any()
    assert query(root, "select * from labels order by all").equals(labels)
    _run(cli, root, *args, "--bootstrap", "0")
    off = query(root, sql + "")
    assert off["ci_low"].null_count() == off.height and off["accuracy"].equals(
        first["accuracy"])
    assert off["options"].str.contains(r"\|bootstrap:off\|").all()
    pairs = query(root, "select delta_ci_low, delta_ci_high, bootstrap_p from pairs")
    assert pairs.null_count().sum_horizontal().item() == 3 * pairs.height
    code, out, err = cli("check", "--baseline", "a", "--candidate", "b", "--view", "upos",
                         "--require-significant", "-w", str(root))
    assert code == 1 and not out and err.count("\n") == 1
    assert "FAILED: not evaluated: UPOS of b vs a has no bootstrap interval" in err


@pytest.mark.parametrize(("line", "error"), [
    ("bootstrap = 200\nconfidence = 0.9\nseed = 5", None),
    ("bootstrap = -1", "'bootstrap' must be a non-negative integer, not the integer -1"),
    ("confidence = 1.5", "'confidence' must be a number between 0 and 1, not the number 1.5"),
    ("confidence = 95", "'confidence' must be a number between 0 and 1, not the integer 95"),
    ("seed = -3", "--seed must be 0 or more, not -3"),
])
def test_run_file_keys_are_checked(tmp_path, line, error):
    from sysdiff.flows.spec import load_config
    from sysdiff.schemas.errors import InputError

    (tmp_path / "k.conllu").write_text("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    run = tmp_path / "run.toml"
    run.write_text(f'corpus = "c"\ntask = "pos"\nkey = "k.conllu"\n{line}\n'
                   '[systems]\na = "k.conllu"\n', encoding="utf-8")
    if error is None:
        spec = load_config(run)
        assert (spec.bootstrap, spec.confidence, spec.seed) == (200, 0.9, 5)
        assert spec.intervals.options() == "bootstrap:200|confidence:0.9|seed:5"
        return
    with pytest.raises(InputError, match=error.replace("(", r"\(").replace(")", r"\)")):
        load_config(run)
