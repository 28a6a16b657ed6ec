"""Property tests (hypothesis): identical graphs, symmetry, and a plain-Python reference."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from sysdiff.schemas.formats.unl import UnlSentence, read_unl
from sysdiff.transforms.unl import UnlOptions, score_nlization, score_unlization

LABELS = ["agt", "obj", "aoj", "mod", "plc", "tim", "and", "man"]
UWS = [
    "kill(icl>do)",
    "to ridicule(icl>mock)",
    "state(icl>express(agt>thing))",
    "do(agt>thing,obj>thing)",
    '"Babylon"',
    '"a, (b)"',
    "102326432",
    "one day",
    "00",
]
ATTRS = ["@entry", "@past", "@def", "@indef", "@pl", "@1", "@not"]

headwords = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
uws = st.one_of(st.sampled_from(UWS), headwords)
nodes = st.tuples(uws, st.lists(st.sampled_from(ATTRS), max_size=3, unique=True))


@st.composite
def graphs(draw: st.DrawFn) -> list[tuple[str, tuple, tuple]]:
    """A connected graph as relations (label, source node, target node); every new node
    attaches to an earlier one. Null UWs ("00") get a node id so they stay distinct."""
    ns = draw(st.lists(nodes, min_size=2, max_size=8))
    rels = []
    for k in range(1, len(ns)):
        j = draw(st.integers(0, k - 1))
        label = draw(st.sampled_from(LABELS))
        rels.append((label, (j, *ns[j]), (k, *ns[k])) if draw(st.booleans())
                    else (label, (k, *ns[k]), (j, *ns[j])))  # fmt: skip
    extra = draw(st.lists(st.tuples(st.sampled_from(LABELS), st.integers(0, len(ns) - 1),
                                    st.integers(0, len(ns) - 1)), max_size=3))  # fmt: skip
    rels += [(lab, (a, *ns[a]), (b, *ns[b])) for lab, a, b in extra]
    return rels


def node_text(node: tuple) -> str:
    k, uw, attrs = node
    nid = f":{k:02d}" if uw == "00" else ""
    return uw + nid + "".join("." + a for a in attrs)


def to_text(rels: list, sid: str = "1") -> str:
    body = "\n".join(f"{lab}({node_text(s)}, {node_text(t)})" for lab, s, t in rels)
    return f"[S:{sid}]\n{{unl}}\n{body}\n{{/unl}}\n[/S]\n"


def parse(rels: list) -> UnlSentence:
    (s,) = read_unl(to_text(rels))
    assert s.error is None, s.error
    return s


def reference_counts(e: UnlSentence, a: UnlSentence, multiset: bool) -> dict[str, tuple]:
    """Plain-Python METRICS 3.2 items and (exc, miss, tot)."""

    def key(n):
        return "[scope]" if n.kind == "scope" else n.uw

    def items(s: UnlSentence) -> dict[str, Counter]:
        out = {"rel": Counter(), "uw": Counter(), "attr": Counter()}
        for r in s.graph.relations:
            out["rel"][(r.label, key(r.source), key(r.target))] += 1
            for pos, n in (("S", r.source), ("T", r.target)):
                if n.kind != "scope":
                    out["uw"][(pos, n.uw)] += 1
                for at in n.attrs:
                    if at not in ("@def", "@indef"):
                        out["attr"][(pos, key(n), at)] += 1
        return out

    ie, ia = items(e), items(a)
    res = {}
    for kind in ("rel", "uw", "attr"):
        ce, ca = ie[kind], ia[kind]
        if not multiset:
            ce, ca = Counter(set(ce)), Counter(set(ca))
        res[kind] = (sum((ca - ce).values()), sum((ce - ca).values()),
                     sum(ca.values()) + sum(ce.values()))  # fmt: skip
    return res


def frac(n: int, d: int) -> str:
    return str(Fraction(n, d)) if d else "0"


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_identical_graphs_are_correct_with_zero_discrepancy(rels: list) -> None:
    s = parse(rels)
    r = score_unlization([s], [s]).row(0, named=True)
    assert r["returned"] and r["correct"], r["reason"]
    assert (r["d_rel_frac"], r["d_uw_frac"], r["d_all_frac"]) == ("0", "0", "0")
    assert r["rel_exc"] == r["rel_miss"] == r["uw_exc"] == r["attr_miss"] == 0
    assert r["error_digest"] is None


@settings(max_examples=60, deadline=None)
@given(graphs(), graphs(), st.booleans())
def test_discrepancies_symmetric_and_match_reference(g1: list, g2: list, multiset: bool) -> None:
    e, a = parse(g1), parse(g2)
    opts = UnlOptions(multiset=multiset)
    fwd = score_unlization([e], [a], opts).row(0, named=True)
    bwd = score_unlization([a], [e], opts).row(0, named=True)
    for d in ("d_rel_frac", "d_uw_frac", "d_all_frac", "d_rel", "d_all"):
        assert fwd[d] == bwd[d], d
    ref = reference_counts(e, a, multiset)
    for kind in ("rel", "uw", "attr"):
        assert (fwd[f"{kind}_exc"], fwd[f"{kind}_miss"], fwd[f"{kind}_tot"]) == ref[kind]
        assert (fwd[f"{kind}_exc"], fwd[f"{kind}_miss"]) == (bwd[f"{kind}_miss"],
                                                             bwd[f"{kind}_exc"])  # fmt: skip
    er, ur, ar = (ref[k][0] + ref[k][1] for k in ("rel", "uw", "attr"))
    tr, tu, ta = (ref[k][2] for k in ("rel", "uw", "attr"))
    assert fwd["d_all_frac"] == frac(3 * er + 2 * ur + ar, 3 * tr + 2 * tu + ta)
    thr = Fraction(3, 10)
    want = all(
        Fraction(n, d) < thr if d else True
        for n, d in ((er, tr), (ur, tu), (3 * er + 2 * ur + ar, 3 * tr + 2 * tu + ta))
    )
    assert fwd["correct"] is (fwd["returned"] and want)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_round_trip_keeps_every_relation(rels: list) -> None:
    s = parse(rels)
    assert len(s.graph.relations) == len(rels)
    assert s.graph.n_components() == 1
    for r, (lab, src, tgt) in zip(s.graph.relations, rels, strict=True):
        assert r.label == lab
        assert r.source.uw == src[1] and r.target.uw == tgt[1]


words = st.lists(st.text(alphabet="abcXYZ.,!", min_size=1, max_size=5), min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(words, words)
def test_nl_identical_and_symmetric(w1: list, w2: list) -> None:
    t1, t2 = " ".join(w1), " ".join(w2)
    same = score_nlization([t1], [t1]).row(0, named=True)
    assert same["d_words_frac"] == "0"
    assert same["correct"] is same["returned"]
    fwd = score_nlization([t1], [t2]).row(0, named=True)
    bwd = score_nlization([t2], [t1]).row(0, named=True)
    assert fwd["d_words_frac"] == bwd["d_words_frac"]
    assert (fwd["word_exc"], fwd["word_miss"]) == (bwd["word_miss"], bwd["word_exc"])
