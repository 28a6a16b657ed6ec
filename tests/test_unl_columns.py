"""The columnar UNL reader and scorer give exactly what the per-sentence implementation gives.

The reference here is the straightforward one: ``read_unl`` (the per-sentence parser, graph by
graph in Python), the ``UnlGraph`` methods for connectivity and ``[word]`` nodes, and below a
per-sentence scorer, alignment and warnings in plain Python (Counters and Fractions, written
from METRICS 3.2 the way the code before the columnar rewrite computed them). The columnar
path is driven the way the flow drives it: a streaming index (with tiny pieces), alignment over
ids, shards of a few sentences, partners read by offsets, warnings merged over shards.
"""

from __future__ import annotations

import hashlib
import html
import os
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysdiff.flows.shards import Opaque
from sysdiff.flows.unl import Version, score_shard, unmatched_parts
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.unl import KNOWN_RELATIONS, index_unl, read_unl
from sysdiff.schemas.formats.unl.chunks import drafts_frame
from sysdiff.schemas.formats.unl.document import _BLOCK, _blocks
from sysdiff.transforms.plan import plan_ranges
from sysdiff.transforms.unl import (
    UnlOptions,
    align_ids,
    merge_warning_parts,
    warning_lines,
)

DATA = Path(__file__).resolve().parent / "data" / "unl"
REPO = Path(__file__).resolve().parents[1]
FILES = sorted((DATA / "cases").glob("*/*.unl")) + sorted((DATA / "real").glob("*")) + sorted(
    (REPO / "data" / "unl").glob("*.unl"))
SEP = "\x1f"
OPTIONS = [UnlOptions(), UnlOptions(multiset=True, keep_scope_ids=True,
                                    optional_attrs={"@def", "@pl"}),
           UnlOptions(align="position"), UnlOptions(align="id")]


# ---------------------------------------------------------------------------- reference


def ref_align(eids: list, aids: list, mode: str) -> tuple[list, str, list, list[str]]:
    """(partner per expected sentence or None, by, unmatched actual, notes)."""
    notes: list[str] = []
    have_ids = all(eids) and all(aids) and bool(eids) and bool(aids)
    unique = len(set(eids)) == len(eids) and len(set(aids)) == len(aids)
    if mode == "auto" and have_ids and not unique:
        notes.append("duplicate sentence ids: aligned by position instead of id")
    if mode == "auto" and not have_ids and any(eids) and any(aids):
        notes.append("some sentences have no id: aligned by position instead of id")
    if mode == "id" or (mode == "auto" and have_ids and unique):
        index = {sid: k for k, sid in enumerate(aids) if sid is not None}
        partner = [index.get(sid) if sid is not None else None for sid in eids]
        matched = {p for p in partner if p is not None}
        unmatched = [k for k in range(len(aids)) if k not in matched]
        missing = [eids[i] for i, p in enumerate(partner) if p is None]
        if missing:
            notes.append(f"{len(missing)} expected sentence id(s) not found in actual: "
                         + preview(missing))
        if eids and aids and not matched:
            notes.append("no sentence id matches between expected and actual; "
                         "use align='position' if the files are in the same order")
        return partner, "id", unmatched, notes
    partner = [i if i < len(aids) else None for i in range(len(eids))]
    if len(aids) != len(eids):
        notes.append(f"aligned by position: {len(eids)} expected, {len(aids)} actual")
    return partner, "position", list(range(len(eids), len(aids))), notes


def preview(xs: list, k: int = 5) -> str:
    head = ", ".join(str(x) for x in xs[:k])
    return head + (f", ... ({len(xs)} in all)" if len(xs) > k else "")


def ref_status(a) -> tuple[bool, str | None, int | None]:
    if a is None:
        return False, "no actual sentence", None
    if a.error is not None:
        return False, f"parse error: {a.error}", a.error_line
    g = a.graph
    if g is None:
        return False, "no graph", a.line
    if not g.relations and not g.nodes:
        return False, "empty graph", a.line
    words = g.nl_words()
    if words:
        return False, "natural-language word in graph: " + ", ".join(words[:3]), a.line
    k = g.n_components()
    if k > 1:
        return False, f"graph not connected ({k} components)", a.line
    return True, None, None


def ref_items(s, options: UnlOptions) -> dict[str, Counter]:
    out: dict[str, Counter] = {"R": Counter(), "U": Counter(), "A": Counter()}
    if s is None or s.graph is None:
        return out
    keep, g = options.keep_scope_ids, s.graph

    def key(n) -> str:
        if n.kind == "scope":
            return f"[scope:{n.node_id}]" if keep else "[scope]"
        return n.uw

    for r in g.relations:
        label = f"{r.label}:{r.scope}" if keep and r.scope else r.label
        out["R"][SEP.join([label, key(r.source), key(r.target)])] += 1
        for pos, n in (("S", r.source), ("T", r.target)):
            if n.kind != "scope":
                out["U"][SEP.join([pos, n.uw])] += 1
            for at in n.attrs:
                if at not in options.optional_attrs:
                    out["A"][SEP.join([pos, key(n), at])] += 1
    if not g.relations:
        for n in g.nodes:
            out["U"][SEP.join(["N", n.uw])] += 1
            for at in n.attrs:
                if at not in options.optional_attrs:
                    out["A"][SEP.join(["N", n.uw, at])] += 1
    return out


def ref_frac(n: int, d: int) -> tuple[float, str]:
    if n == 0 or d == 0:
        return 0.0, "0"
    f = Fraction(n, d)
    return f.numerator / f.denominator, str(f)


def ref_below(n: int, d: int, thr: Fraction) -> bool:
    return thr > 0 if d == 0 else Fraction(n, d) < thr


def ref_rows(expected: list, actual: list, options: UnlOptions) -> list[dict]:
    """The unl_sentences rows, sentence by sentence."""
    partner, *_ = ref_align([s.sent_id for s in expected], [s.sent_id for s in actual],
                            options.align)
    rows = []
    for i, (e, p) in enumerate(zip(expected, partner, strict=True)):
        a = actual[p] if p is not None else None
        returned, reason, line = ref_status(a)
        if e.error is not None:
            reason = f"expected sentence malformed: {e.error}" + (f"; {reason}" if reason else "")
        ie, ia = ref_items(e, options), ref_items(a, options)
        row = {"sent_index": i, "sent_id": e.sent_id or f"#{i + 1}", "returned": returned,
               "reason_line": line}
        tags = []
        for kind, name in (("R", "rel"), ("U", "uw"), ("A", "attr")):
            exc = miss = tot = 0
            for item in set(ie[kind]) | set(ia[kind]):
                ca, ce = ia[kind][item], ie[kind][item]
                if not options.multiset:
                    ca, ce = min(ca, 1), min(ce, 1)
                x, m = max(ca - ce, 0), max(ce - ca, 0)
                exc, miss, tot = exc + x, miss + m, tot + ca + ce
                if x or m:
                    tags.append(SEP.join([kind, str(x), str(m), item]))
            row.update({f"{name}_exc": exc, f"{name}_miss": miss, f"{name}_tot": tot})
        row["error_digest"] = (hashlib.blake2b("\x1e".join(sorted(tags)).encode(),
                                               digest_size=8).hexdigest() if tags else None)
        nr, nu = row["rel_exc"] + row["rel_miss"], row["uw_exc"] + row["uw_miss"]
        na = row["attr_exc"] + row["attr_miss"]
        fracs = {"d_rel": (nr, row["rel_tot"]), "d_uw": (nu, row["uw_tot"]),
                 "d_all": (3 * nr + 2 * nu + na,
                           3 * row["rel_tot"] + 2 * row["uw_tot"] + row["attr_tot"])}
        failed = []
        for name, (n, d) in fracs.items():
            row[name], row[f"{name}_frac"] = ref_frac(n, d)
            thr = options.overall_threshold if name == "d_all" else options.threshold
            if not ref_below(n, d, thr):
                failed.append(f"{name}={row[f'{name}_frac']}")
        row["correct"] = returned and not failed
        row["reason"] = reason if reason is not None else (
            "not correct: " + ", ".join(failed) if failed else None)
        rows.append(row)
    return rows


def ref_warnings(expected: list, actual: list, mode: str) -> list[str]:
    _, _, unmatched, notes = ref_align([s.sent_id for s in expected],
                                       [s.sent_id for s in actual], mode)
    out = list(notes)
    if unmatched:
        ids = [actual[k].sent_id or f"#{k + 1}" for k in unmatched]
        out.append(f"{len(ids)} actual sentence(s) have no expected partner (ignored): "
                   + preview(ids))
    for side, xs in (("expected", expected), ("actual", actual)):
        for k, s in enumerate(xs):
            out.extend(f"{side}: {w}" for w in s.warnings)
            if side == "expected" and s.error is not None:
                out.append(f"expected sentence {s.sent_id or '#' + str(k + 1)} "
                           f"(line {s.error_line or s.line}) is malformed: {s.error}")
    for side, xs in (("expected", expected), ("actual", actual)):
        unknown: Counter = Counter()
        first: dict[str, str] = {}
        for k, s in enumerate(xs):
            for r in s.graph.relations if s.graph is not None else ():
                if r.label not in KNOWN_RELATIONS:
                    unknown[r.label] += 1
                    first.setdefault(r.label, f"{s.sent_id or '#' + str(k + 1)} line {r.line}")
        out += [f"{side}: unknown relation label {lab!r} ({n}x, first in sentence {first[lab]})"
                for lab, n in sorted(unknown.items())]
    counts = [Counter(n.kind for s in xs if s.graph is not None for n in s.graph.all_nodes)
              for xs in (expected, actual)]
    names = ["numeric UCL ids" if c["ucl"] > c["uw"] else "readable UCN UWs"
             if c["ucl"] + c["uw"] else None for c in counts]
    if names[0] and names[1] and names[0] != names[1]:
        (e, a) = counts
        out.append(f"UW encodings differ: expected uses {names[0]} ({e['ucl']} UCL / {e['uw']} "
                   f"UCN), actual uses {names[1]} ({a['ucl']} UCL / {a['uw']} UCN); UWs will "
                   "not match (near 100% discrepancy)")
    return out


# ---------------------------------------------------------------------------- columnar path


def by_shards(expected: str | Path, actual: str | Path, options: UnlOptions, shard: int,
              piece: int = 1 << 24) -> tuple[pl.DataFrame, list[str]]:
    """Rows and warnings the way ``run_unl`` computes them (its task functions, no Prefect)."""
    e, a = index_unl(expected, piece_bytes=piece), index_unl(actual, piece_bytes=piece)
    al = align_ids(e.ids, a.ids, options.align)
    versions = {"v": Version.of(None, "", a, al)}  # type: ignore[arg-type]
    ranges = plan_ranges(np.ones(len(e), np.int64), shard) or [(0, 0)]
    results = [score_shard.fn(Opaque((e, versions, hi)), lo, "unl", options)
               for lo, hi in ranges]
    rows = pl.concat([r["rows"]["v"] for r in results])
    act = [r["parts"]["v"] for r in results]
    if al.unmatched_actual.size:
        act += unmatched_parts.fn(Opaque(a), al.unmatched_actual, shard, "v")
    warnings = warning_lines(al, a.ids, merge_warning_parts([r["parts"][""] for r in results]),
                             merge_warning_parts(act))
    return rows, warnings


def check_same(expected: str | Path, actual: str | Path, options: UnlOptions, shard: int,
               piece: int = 1 << 24) -> None:
    exp_s, act_s = read_unl(expected), read_unl(actual)
    rows, warnings = by_shards(expected, actual, options, shard, piece)
    want = ref_rows(exp_s, act_s, options)
    got = rows.drop("task", "options", "word_exc", "word_miss", "word_tot", "d_words",
                    "d_words_frac").to_dicts()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == w
    assert rows["task"].unique().to_list() in ([], ["unlization"])
    assert warnings == ref_warnings(exp_s, act_s, options.align)


def check_reader(text: str | Path, piece: int, rows: np.ndarray | None = None) -> None:
    """Columns of ``UnlIndex.read`` == the sentences of ``read_unl``."""
    sentences = read_unl(text)
    index = index_unl(text, piece_bytes=piece)
    assert index.ids == [s.sent_id for s in sentences]
    assert index.lines.tolist() == [s.line for s in sentences]
    rows = np.arange(len(sentences)) if rows is None else rows
    raw = Path(text).read_bytes() if isinstance(text, Path) else text.encode("utf-8")
    assert index.sha256 == hashlib.sha256(raw).hexdigest()
    if index.starts is not None:  # blocks split in columns == split one by one
        assert index.blocks(rows).equals(drafts_frame(index.drafts(rows)))
    chunk = index.read(rows)
    got = chunk.sents.to_dicts()
    rels = chunk.rels.partition_by("row", as_dict=True)
    nodes = chunk.nodes.partition_by("row", as_dict=True)
    for k, g in zip(rows.tolist(), got, strict=True):
        s = sentences[k]
        assert (g["position"], g["sent_id"], g["line"], g["error"], g["error_line"],
                g["warnings"], g["has_graph"]) == (k, s.sent_id, s.line, s.error,
                                                   s.error_line, list(s.warnings),
                                                   s.graph is not None)
        if s.graph is None:
            assert g["n_rel"] == g["n_nodes"] == 0
            continue
        mine = rels.get((g["row"],), pl.DataFrame()).to_dicts()
        assert [(r["label"], r["scope"], r["line"], r["s_uw"], r["s_id"], r["s_kind"],
                 r["s_attrs"], r["t_uw"], r["t_id"], r["t_kind"], r["t_attrs"]) for r in mine] \
            == [(r.label, r.scope, r.line, r.source.uw, r.source.node_id, r.source.kind,
                 ".".join(r.source.attrs), r.target.uw, r.target.node_id, r.target.kind,
                 ".".join(r.target.attrs)) for r in s.graph.relations]
        lone = nodes.get((g["row"],), pl.DataFrame()).to_dicts()
        assert [(n["uw"], n["nid"], n["kind"], n["attrs"]) for n in lone] == [
            (n.uw, n.node_id, n.kind, ".".join(n.attrs)) for n in s.graph.nodes]
        assert g["n_components"] == (s.graph.n_components() if s.graph.relations
                                     or s.graph.nodes else 0)
        words = s.graph.nl_words()
        assert g["nl_words"] == (", ".join(words[:3]) if words else None)


# ---------------------------------------------------------------------------- documents

PLAIN = ["kill(icl>do)", "to ridicule(icl>mock)", "state(icl>express(agt>thing))",
         "do(agt>thing,obj>thing)", "a(b(c(d(e))))", "102326432", "٣٤", "café(icl>drink)",
         "one day", " spaced  out ( icl > x ;y= z) ", "00", "", "x.y", "a:bc", "semi;colon",
         "a\tb", "a\u3000b", "a\x1cb", "a]b", "foot(icl>vertebrate foot)", "a{b}", "b(c[d])"]
QUOTED = ['"Babylon"', '"a, (b)"', '"x"(icl>name)', '""', '"1"', '"[S:9]"']
WORDS = ["[word]", "[two  words]", "[[bad]]", "[a,b]"]
IDS = ["01", "02", "0A", "zz"]
ATTRS = ["@entry", "@past", "@def", "@indef", "@pl", "@1", "@not", "@x-y"]
LABELS = ["agt", "obj", "aoj", "mod", "and", "xyz", "ag"]
SPACE = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def nodes(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["plain"] * 6 + ["quoted", "word", "scope"]))
    if kind == "scope":
        return f":{draw(st.sampled_from(IDS))}" + "".join(
            "." + a for a in draw(st.lists(st.sampled_from(ATTRS), max_size=2)))
    uw = draw(st.sampled_from({"plain": PLAIN, "quoted": QUOTED, "word": WORDS}[kind]))
    nid = draw(st.sampled_from(["", "", *(":" + i for i in IDS)]))
    attrs = "".join("." + a for a in draw(st.lists(st.sampled_from(ATTRS), max_size=3)))
    return draw(SPACE) + uw + nid + attrs + draw(SPACE)


@st.composite
def relations(draw: st.DrawFn) -> str:
    scope = draw(st.sampled_from(["", "", ":01", ":02"]))
    sep = draw(st.sampled_from([",", ",", ",", " ,", ";"]))
    text = f"{draw(st.sampled_from(LABELS))}{scope}{draw(SPACE)}({draw(nodes())}{sep}" \
           f"{draw(nodes())})"
    shape = draw(st.sampled_from(["line"] * 8 + ["broken", "unbalanced", "junk"]))
    if shape == "broken":
        cut = text.index("(") + 1
        return text[:cut] + "\n" + text[cut:]
    if shape == "unbalanced":
        return text[:-1]
    if shape == "junk":
        return text + " junk"
    return text


@st.composite
def graphs(draw: st.DrawFn) -> str:
    form = draw(st.sampled_from(["table"] * 6 + ["list", "empty", "two per line"]))
    if form == "list":
        ws = draw(st.lists(st.tuples(st.sampled_from(["kill(icl>do)", "John", "[word]", "00"]),
                                     st.sampled_from(IDS)), min_size=1, max_size=4))
        body = "[W]\n" + "\n".join(f"{uw}:{i}" for uw, i in ws) + "\n[/W]"
        if draw(st.booleans()):
            a, b = draw(st.sampled_from(IDS)), draw(st.sampled_from(IDS))
            body += f"\n[R]\n{a}agt{b}\n[/R]"
        return body
    if form == "empty":
        return draw(st.sampled_from(["", "\n", "   \n\n"]))
    rels = draw(st.lists(relations(), min_size=1, max_size=6))
    if form == "two per line" and len(rels) > 1:
        return rels[0] + " " + "\n".join(rels[1:])
    return "\n".join(draw(st.sampled_from(["", "\n"])) + r for r in rels)


@st.composite
def sentences(draw: st.DrawFn, ids: list[str | None]) -> str:
    sid = draw(st.sampled_from(ids))
    head = f"[S:{sid}]" if sid is not None else draw(st.sampled_from(["[S]", "[S: ]"]))
    parts = []
    if draw(st.booleans()):
        parts.append("{org:en}Some text, here.{/org}")
    if draw(st.integers(0, 4)) == 0:
        parts.append("{fr}Du texte{/fr}")
    layout = draw(st.sampled_from(["unl"] * 6 + ["bare", "two unl", "unterminated", "none",
                                                 "outside"]))
    g = draw(graphs())
    if layout == "unl":
        parts.append("{unl}\n" + g + "\n{/unl}")
    elif layout == "bare":
        parts.append(g)
    elif layout == "two unl":
        parts += ["{unl}\n" + g + "\n{/unl}", "{unl}\nagt(a, b)\n{/unl}"]
    elif layout == "unterminated":
        parts.append("{unl}\n" + g)
    elif layout == "outside":
        parts += ["{unl}\n" + g + "\n{/unl}", "stray words"]
    close = draw(st.sampled_from(["[/S]"] * 5 + [""]))
    return head + "\n" + "\n".join(parts) + "\n" + close + "\n"


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, str]:
    """An expected and an actual document (the actual reuses, drops, shuffles and adds ids)."""
    n = draw(st.integers(0, 7))
    pool = [str(k) for k in range(1, n + 3)] + [None]
    exp_ids = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    act_ids = draw(st.permutations(exp_ids)) if draw(st.booleans()) else draw(
        st.lists(st.sampled_from(pool), min_size=0, max_size=n + 2))
    texts = []
    for ids in (exp_ids, act_ids):
        blocks = [draw(sentences([i])) for i in ids]
        style = draw(st.sampled_from(["plain", "plain", "D", "html", "crlf", "cr"]))
        text = "".join(blocks)
        if style == "D":
            text = "[D]\n" + text + "[/D]\n"
        elif style in ("crlf", "cr"):
            text = text.replace("\n", "\r\n" if style == "crlf" else "\r")
        elif style == "html":  # a UNLarium web export: <br /> line breaks, HTML entities
            text = html.escape(text, quote=True).replace("\n", "<br />")
        texts.append(text)
    return texts[0], texts[1]


# ---------------------------------------------------------------------------- tests


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.sampled_from([1, 2, 3, 100]), st.sampled_from([16, 64, 1 << 24]),
       st.sampled_from(range(len(OPTIONS))))
def test_generated_documents_score_as_the_reference(docs, shard, piece, opt) -> None:
    expected, actual = docs
    try:
        read_unl(expected), read_unl(actual)
    except InputError as exc:  # not UNL at all: the index says exactly the same
        with pytest.raises(InputError) as got:
            index_unl(expected), index_unl(actual)
        assert str(got.value) == str(exc)
        return
    check_same(expected, actual, OPTIONS[opt], shard, piece)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.sampled_from([8, 64, 1 << 24]), st.data())
def test_generated_documents_read_as_the_reference(docs, piece, data) -> None:
    for text in docs:
        try:
            n = len(read_unl(text))
        except InputError:
            continue
        rows = np.array(sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))
                               if n else []), dtype=np.int64)
        check_reader(text, piece, rows)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_every_data_file_reads_as_the_reference(path: Path) -> None:
    for piece in (16, 1 << 24):
        check_reader(path, piece)


def test_every_pair_of_data_files_scores_as_the_reference() -> None:
    for e in FILES:
        for a in FILES:
            check_same(e, a, OPTIONS[0], shard=4)


@pytest.mark.parametrize("opt", range(1, len(OPTIONS)))
def test_matching_data_files_score_as_the_reference_under_every_option(opt: int) -> None:
    for e in FILES:
        for a in FILES:
            if e.parent == a.parent:
                check_same(e, a, OPTIONS[opt], shard=2)


def test_benchmark_corpus_scores_as_the_reference() -> None:
    """The generated benchmark corpus (scopes, node ids, attributes, NL words, junk lines)."""
    from benchmarks.unl import make_corpus

    e, a = make_corpus(300, 3)
    for opt in OPTIONS[:2]:
        check_same(e, a, opt, shard=64, piece=4096)


BLOCK_VARIANTS = [
    "[S:1]\n{org:en}A cat.{/org}\n{unl}\nagt(kill(icl>do), cat)\n{/unl}\n[/S]\n",
    "[S:2]{unl}agt(a, b){/unl}[/S]",
    "[S:3]\n{org:en}x{/org}\n{fr}Un chat{/fr}\n{unl}\nagt(a, b)\n{/unl}\n{de}Katze{/de}\n[/S]\n",
    "[S:4]\n{org}x{/fr}\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n",
    "[S:5]\n{UNL}\nagt(a, b)\n{/UNL}\n[/S]\n",
    "[S:6]\n{unl:v2}\nagt(a, b)\n{/unl}\n[/S]\n",
    "[S:7]\n{unl}\nagt(a, b)\n{/unl}\n{unl}\nobj(a, c)\n{/unl}\n[/S]\n",
    "[S:8]\n{unl}\nagt(\"{x}\", b)\n{/unl}\n[/S]\n",
    "[S:9]\n{unl}\nagt(a &amp; b, c)\n{/unl}\n[/S]\n",
    "[S:10]<br />{unl}<br />agt(a, b)<br />{/unl}<br />[/S]<br />",
    "[S:11]\r\n{unl}\r\nagt(a, b)\r\n{/unl}\r\n[/S]\r\n",
    "[S: 12 ]\n{unl}\nagt(café, b)\n{/unl}\n[/S]\n",
    "[S:13 x=y]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n",
    "[S:14]\n{unl}\nagt(a, b)\n{/unl}\nstray words\n[/S]\n",
    "[S:15]\n{unl}\nagt(a, b)\n[/S]\n",
    "[S:16]\n{org:en}no graph{/org}\n[/S]\n",
    "[S:17]\nagt(a, b)\nobj(a, c)\n[/S]\n",
    "[S:18]\n{unl}\nagt(a, b)\n{/unl}\n",
    "[S]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n",
    "[S:]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n",
    "[S:21]\n{unl}\n{/unl}\n[/S]\n",
    "[S:22]\n{org:en}{/org}{unl}\nagt(a, b){/unl}[/S]\n",
]


@pytest.mark.parametrize("piece", [16, 1 << 24])
def test_block_shapes_split_in_columns_as_one_by_one(tmp_path: Path, piece: int) -> None:
    """Every shape of ``[S]`` block, regular (split in columns) or not (one by one), in one
    document and each alone, reads as the reference."""
    text = "[D]\n" + "".join(BLOCK_VARIANTS) + "[/D]\n"
    check_reader(text, piece)
    for k, block in enumerate(BLOCK_VARIANTS):
        path = tmp_path / f"b{k}.unl"
        path.write_bytes(block.encode("utf-8"))
        check_reader(path, piece)


def test_regular_blocks_are_split_in_columns(monkeypatch) -> None:
    """The usual blocks (``{org}``, ``{unl}``, ``[/S]``) take no per-sentence Python."""
    from benchmarks.unl import make_corpus
    from sysdiff.schemas.formats.unl import index as reader

    def refuse(*args, **kwargs):
        raise AssertionError("a regular block was split one by one")

    e, a = make_corpus(200, 4)
    monkeypatch.setattr(reader, "_slow_draft", refuse)
    for text in (e, a):
        index = index_unl(text)
        assert index.read(np.arange(len(index))).height == 200


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="{}/unlorgfUNL:ab \n", max_size=60))
def test_block_finder_matches_the_block_regex(text: str) -> None:
    want = [(m[1], m[2], m.start(), m.end(), m.start(3), m.end(3))
            for m in _BLOCK.finditer(text)]  # fmt: skip
    assert [tuple(b) for b in _blocks(text, 0, len(text))] == want


def test_each_sentence_block_is_read_once(tmp_path: Path, monkeypatch) -> None:
    """Scoring reads the expected file shard by shard and each version only the partners of
    the shard: every byte of every [S] block is read once, whatever the order of the ids."""
    from benchmarks.unl import make_corpus
    from sysdiff.schemas.formats.unl import index as reader

    exp_text, act_text = make_corpus(40, 5)
    blocks = act_text.split("[S:")
    shuffled = "[D]\n" + "".join("[S:" + b for b in reversed(blocks[1:]))
    (tmp_path / "e.unl").write_text(exp_text)
    (tmp_path / "a.unl").write_text(shuffled)
    e, a = index_unl(tmp_path / "e.unl"), index_unl(tmp_path / "a.unl")
    reads: list[tuple[str, int, int]] = []
    real = reader._Source.read

    def spy(self, start: int, end: int) -> bytes:
        reads.append((Path(self.path).name, start, end))
        return real(self, start, end)

    monkeypatch.setattr(reader._Source, "read", spy)
    al = align_ids(e.ids, a.ids)
    versions = {"v": Version.of(None, "", a, al)}  # type: ignore[arg-type]
    for lo, hi in plan_ranges(np.ones(len(e), np.int64), 7):
        score_shard.fn(Opaque((e, versions, hi)), lo, "unl", UnlOptions())
    for name, index in (("e.unl", e), ("a.unl", a)):
        got = sorted((s, t) for f, s, t in reads if f == name)
        covered = sum(t - s for s, t in got)
        assert covered == index.source.size - int(index.starts[0])
        assert all(t0 <= s1 for (_, t0), (s1, _) in zip(got, got[1:], strict=False))
        assert max(t - s for s, t in got) < index.source.size / 3


def test_index_keeps_three_numbers_per_sentence(tmp_path: Path) -> None:
    from benchmarks.unl import make_corpus

    e, _ = make_corpus(50, 1)
    (tmp_path / "e.unl").write_text(e)
    index = index_unl(tmp_path / "e.unl", piece_bytes=256)
    assert index.sentences is None and index.starts is not None
    assert len(index) == 50 and index.starts.dtype == np.int64
    raw = (tmp_path / "e.unl").read_bytes()
    assert all(raw[s:s + 3] == b"[S:" for s in index.starts.tolist())


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    good = "[S:1]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n"
    cases = {
        "binary.unl": (good.encode() * 3 + b"\x00", "binary file"),
        "latin1.unl": (good.encode() + "[S:2]\n{unl}\nagt(é, b)\n".encode("latin-1"),
                       "not UTF-8 text"),
    }
    for name, (data, msg) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as got:
            index_unl(path, piece_bytes=16)
        with pytest.raises(InputError) as want:
            read_unl(path)
        assert msg in str(got.value) and str(got.value) == str(want.value)
    with pytest.raises(InputError, match="no such file"):
        index_unl(tmp_path / "missing.unl")


def test_a_file_changed_after_indexing_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "e.unl"
    path.write_text("[S:1]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n"
                    "[S:2]\n{unl}\nobj(a, c)\n{/unl}\n[/S]\n")
    index = index_unl(path)
    path.write_text("[S:1]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n")
    os.utime(path, ns=(1, 1))
    with pytest.raises(InputError, match="changed while it was being read"):
        index.read(np.arange(2))


def test_flow_scores_in_shards_as_the_reference(tmp_path: Path, cli) -> None:
    """``sysdiff run --task unl`` with shards of 2 sentences, shuffled and unmatched ids:
    the stored rows and corpus scores, and the warnings it prints, equal the reference."""
    from benchmarks.unl import make_corpus
    from sysdiff.flows.queries import query

    exp_text, act_text = make_corpus(9, 11)
    blocks = act_text.split("[S:")
    act_text = "[D]\n" + "".join("[S:" + b for b in reversed(blocks[2:])) + \
        "[S:99]\n{unl}\nxyz(a, b)\n{/unl}\n[/S]\n"
    (tmp_path / "e.unl").write_text(exp_text)
    (tmp_path / "a.unl").write_text(act_text)
    code, _, err = cli("run", "--task", "unl", "--corpus", "c", "--key", str(tmp_path / "e.unl"),
                       "--system", f"a={tmp_path / 'a.unl'}", "--shard-sents", "2",
                       "-w", str(tmp_path / "wh"))
    assert code == 0, err
    exp_s, act_s = read_unl(exp_text), read_unl(act_text)
    got = query(tmp_path / "wh", "select * from unl_sentences order by sent_index").drop(
        "corpus", "system", "task", "options", "word_exc", "word_miss", "word_tot", "d_words",
        "d_words_frac").to_dicts()
    assert got == ref_rows(exp_s, act_s, UnlOptions())
    scores = query(tmp_path / "wh", "select * from unl_scores").row(0, named=True)
    ref = ref_rows(exp_s, act_s, UnlOptions())
    assert (scores["n_expected"], scores["n_returned"], scores["n_correct"]) == (
        len(ref), sum(r["returned"] for r in ref), sum(r["correct"] for r in ref))
    prefix = f"{tmp_path / 'a.unl'}: "
    warned = [ln.split(prefix, 1)[1] for ln in err.splitlines() if prefix in ln]
    assert warned == ref_warnings(exp_s, act_s, "auto") and warned
