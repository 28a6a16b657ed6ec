"""Invariants of METRICS section 1 on random label matrices (hypothesis), and sharding."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysdiff.transforms import tokens
from sysdiff.transforms.engine import all_pairs
from sysdiff.transforms.significance import approximate_randomization
from sysdiff.transforms.tokens import ShardWords, bucket_names, label_counts, vocab_from_counts
from tests.helpers import as_dict, evaluate, words

LABELS = list("ABCD")


@st.composite
def corpora(draw):
    n_units = draw(st.integers(1, 40))
    n_sys = draw(st.integers(2, 5))
    key = draw(st.lists(st.sampled_from(LABELS), min_size=n_units, max_size=n_units))
    systems = {f"S{i}": draw(st.lists(st.sampled_from(LABELS), min_size=n_units,
                                      max_size=n_units)) for i in range(n_sys)}
    sent = sorted(draw(st.lists(st.integers(0, 5), min_size=n_units, max_size=n_units)))
    return key, systems, sent


def _eval(key, systems, sent):
    return evaluate("upos", words(key, sent), {k: words(v, sent) for k, v in systems.items()},
                    punct=True, trials=50)


@settings(max_examples=60, deadline=None)
@given(corpora())
def test_pair_invariants(corpus):
    key, systems, sent = corpus
    out = _eval(key, systems, sent)
    acc = as_dict(out["scores"], "system", "accuracy")
    p = {(r["sys1"], r["sys2"]): r for r in out["pairs"].rows(named=True)}
    for (a, b), r in p.items():
        back = p[(b, a)]
        assert r["n_diff"] == back["n_diff"]  # diff is symmetric
        assert r["corrections"] == back["new_errors"]
        assert acc[b] - acc[a] == pytest.approx((r["corrections"] - r["new_errors"])
                                                / len(key))
        naive = sum(x != y for x, y in zip(systems[a], systems[b], strict=True))
        assert r["n_diff"] == naive
        assert r["corrections"] + r["new_errors"] + r["changed_errors"] == r["n_diff"]


@settings(max_examples=40, deadline=None)
@given(corpora())
def test_randomization_p_equals_the_per_sentence_test(corpus):
    """The p-value from summed per-sentence difference counts equals the randomization test
    run on every sentence's counts (same seed, same trials)."""
    key, systems, sent = corpus
    out = _eval(key, systems, sent)
    sents = sorted(set(sent))
    units = np.array([sent.count(s) for s in sents])

    def per_sentence(labels):
        return np.array([sum(labels[t] == key[t] for t in range(len(key)) if sent[t] == s)
                         for s in sents])

    for r in out["pairs"].rows(named=True):
        naive = approximate_randomization(per_sentence(systems[r["sys1"]]),
                                          per_sentence(systems[r["sys2"]]), units, 50, 0)
        assert r["ar_p"] == naive


@settings(max_examples=60, deadline=None)
@given(corpora())
def test_oracle_invariants(corpus):
    key, systems, sent = corpus
    out = _eval(key, systems, sent)
    oracle = {tuple(s): n for s, n in zip(out["oracles"]["systems"].to_list(),
                                          out["oracles"]["n_correct"].to_list(), strict=True)}
    for subset, n in oracle.items():
        naive = sum(any(systems[s][t] == key[t] for s in subset) for t in range(len(key)))
        assert n == naive
        assert n >= max(oracle[(s,)] for s in subset)  # oracle >= best single
        for k in range(1, len(subset)):
            for sub in combinations(subset, k):
                assert n >= oracle[sub]  # monotone in the set


def sharded_tables(key, systems, sent, view, cuts) -> dict[str, pl.DataFrame]:
    """Every table of ``view`` with the sentences cut into shards at ``cuts`` (sentence
    numbers), each shard counted on its own words as the flow does, the counts summed."""
    names = list(systems)
    frames = [words(key, sent)] + [words(v, sent) for v in systems.values()]
    counts = pl.concat([label_counts(f).with_columns(system=pl.lit(s))
                        for s, f in zip(["__key__", *names], frames, strict=True)])
    vocab = vocab_from_counts(counts, {})
    n_sents = max(sent) + 1
    bounds = [0, *sorted(set(cuts)), n_sents]
    total = None
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        part = [f.filter(pl.col("sent").is_between(lo, hi - 1)) for f in frames]
        lengths = np.bincount(sent, minlength=n_sents)[lo:hi]
        shard = ShardWords(part[0], part[1:], lo, hi - lo, lengths, "conllu")
        got = tokens.shard_counts(shard, [view], vocab, all_pairs(len(names)), True)
        total = got if total is None else {k: total[k].merge(got[k]) for k in total}
    c = total[(view, True)]
    out = tokens.view_tables(c, view, names, vocab, 50, 0)
    blocks = list(tokens.change_blocks(c, view, names, vocab))
    out["changes"] = pl.concat(blocks) if blocks else pl.DataFrame()
    return out


@settings(max_examples=40, deadline=None)
@given(corpora(), st.lists(st.integers(0, 6), max_size=4))
def test_sharding_does_not_change_any_table(corpus, cuts):
    key, systems, sent = corpus
    whole = sharded_tables(key, systems, sent, "upos", [])
    parts = sharded_tables(key, systems, sent, "upos", [c for c in cuts if c <= max(sent)])
    for name, a in whole.items():
        b = parts[name]
        keys = [c for c, t in a.schema.items() if not isinstance(t, pl.List)]
        assert a.sort(keys).equals(b.select(a.columns).sort(keys)), name


def test_difficulty_counts_every_unit_once():
    key, systems = list("ABCAB"), {"x": list("ABCCC"), "y": list("AACAB")}
    out = _eval(key, systems, [0, 0, 0, 1, 1])
    d = out["difficulty"].filter(out["difficulty"]["gold_label"].is_null())
    # units: A (both right), B (x), C (both), A (y), B (y) -> k = 2, 1, 2, 1, 1
    assert as_dict(d, "k_correct", "n") == {1: 3, 2: 2}


def test_label_mapping_is_applied_before_comparison():
    key, sys_ = words(list("ABC")), words(list("AXC"))
    plain = evaluate("upos", key, {"s": sys_}, punct=True)
    mapped = evaluate("upos", key, {"s": sys_}, punct=True, mappings={"s": {"X": "B"}})
    assert plain["scores"]["n_correct"][0] == 2
    assert mapped["scores"]["n_correct"][0] == 3


def test_unknown_view_is_refused():
    from sysdiff.schemas.errors import InputError

    with pytest.raises(InputError, match="unknown view 'pos'"):
        tokens.evaluate_words(words(["A"]), {"s": words(["A"])}, ["pos"])


def test_mapping_never_touches_heads_but_maps_deprels():
    key = words(["A", "B"], heads=[2, 0], deprels=["x", "root"])
    sys_ = words(["A", "B"], heads=[2, 0], deprels=["y", "root"])
    maps = {"s": {"y": "x", "2": "0"}}
    mapped = tokens.evaluate_words(key, {"s": sys_}, ["head", "las"], maps)
    plain = tokens.evaluate_words(key, {"s": sys_}, ["las"])
    assert mapped[("head", True)]["scores"]["n_correct"][0] == 2  # "2" -> "0" not applied
    assert mapped[("las", True)]["scores"]["n_correct"][0] == 2
    assert plain[("las", True)]["scores"]["n_correct"][0] == 1


def test_bucket_names_do_not_depend_on_the_data():
    edges = np.array([10, 20])
    assert bucket_names(edges) == ["<=10", "11-20", "21+"]
    assert np.searchsorted(edges, np.array([3, 10, 11, 25]), side="left").tolist() == [0, 0, 1, 2]


def test_oracles_above_ten_systems_equal_a_naive_count_in_any_blocks():
    """Above 10 systems the oracle of a pair comes from that pair's change cells when they
    are counted with the oracle, else from the oracle's own union counts (later blocks of
    pairs, incremental runs): the same figures either way, equal to a naive count."""
    rng = np.random.default_rng(3)
    n, units = 12, 300
    key = [str(x) for x in rng.integers(0, 4, units)]
    systems = {f"s{i:02d}": [k if rng.random() < 0.7 else str(rng.integers(0, 4))
                             for k in key] for i in range(n)}
    sent = sorted(rng.integers(0, 30, units).tolist())
    names = list(systems)
    frames = [words(key, sent)] + [words(v, sent) for v in systems.values()]
    counts = pl.concat([label_counts(f).with_columns(system=pl.lit(s))
                        for s, f in zip(["__key__", *names], frames, strict=True)])
    vocab = vocab_from_counts(counts, {})
    shard = ShardWords(frames[0], frames[1:], 0, max(sent) + 1,
                       np.bincount(sent, minlength=max(sent) + 1), "conllu")
    pairs = all_pairs(n)
    got = []
    for block in (pairs, pairs[:5], []):  # every pair, a first block, none (incremental)
        c = tokens.shard_counts(shard, ["upos"], vocab, block, True)[("upos", True)]
        got.append(tokens.view_tables(c, "upos", names, vocab, 20, 0)["oracles"])
    for other in got[1:]:
        assert other.sort("systems").equals(got[0].sort("systems"))
    table = {tuple(r["systems"]): r["n_correct"] for r in got[0].to_dicts()}
    assert len(table) == n + n * (n - 1) // 2 + n + 1
    for subset, right in table.items():
        assert right == sum(any(systems[s][t] == key[t] for s in subset) for t in range(units))
