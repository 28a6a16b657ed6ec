"""The UNL document reader (METRICS 3.1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.unl import (
    GraphError,
    clean_text,
    normalise_uw,
    parse_graph,
    parse_node,
    read_nl,
    read_unl,
)
from sysdiff.schemas.tables import TABLES

DATA = Path(__file__).resolve().parent / "data" / "unl"
REAL = sorted((DATA / "real").glob("*"))


def rels(text: str) -> list[tuple]:
    """(label, scope, source uw/kind/id, target uw/kind/id) of a one-sentence graph."""
    g = parse_graph(text)
    return [
        (r.label, r.scope, (r.source.uw, r.source.kind, r.source.node_id),
         (r.target.uw, r.target.kind, r.target.node_id))
        for r in g.relations
    ]  # fmt: skip


# ---------------------------------------------------------------------------- real exports


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_exports_parse_without_losing_sentences(path: Path) -> None:
    raw = path.read_text(encoding="utf-8")
    # independent count: the raw `[S:` markers (the web export has no other `[S`)
    markers = re.findall(r"\[S:(\d+)\]", raw)
    assert len(markers) == raw.count("[S")
    sentences = read_unl(path)
    assert len(sentences) == len(markers) > 0
    assert [s.sent_id for s in sentences] == markers
    for s in sentences:
        assert s.error is None, (s.sent_id, s.error, s.error_line)
        assert s.graph is not None and (s.graph.relations or s.graph.nodes)
        assert s.org and "<br" not in s.org
        assert s.graph.n_components() == 1, s.sent_id
        for n in s.graph.all_nodes:
            assert "&quot;" not in n.uw and "<br" not in n.uw


def test_real_export_relation_count_matches_raw_text() -> None:
    """Every `rel(` of every {unl} block becomes a relation (nothing silently dropped)."""
    for path in REAL:
        raw = clean_text(path.read_text(encoding="utf-8"))
        bodies = re.findall(r"\{unl\}(.*?)\{/unl\}", raw, re.DOTALL)
        expected = sum(len(re.findall(r"^[a-z]{2,3}(?::\w\w)?\(", b, re.M)) for b in bodies)
        got = sum(len(s.graph.relations) for s in read_unl(path))
        assert got == expected


def test_real_export_details() -> None:
    ucn = {s.sent_id: s for s in read_unl(DATA / "real/unlarium_aa1_en_ucn.raw.html.txt")}
    s = ucn["406284"]
    assert s.line > 1  # lines count <br /> breaks
    late = [r for r in s.graph.relations if r.label == "aoj"][0]
    assert (late.target.uw, late.target.kind) == ("00", "null")  # `aoj:03(late..., )`
    s = ucn["406275"]
    uws = {n.uw for n in s.graph.all_nodes}
    assert {"to ridicule(icl>mock)", "one day", "foot(icl>vertebrate foot)"} <= uws
    assert "slow(equ>bumper-to-bumper)" in uws
    excerpt = DATA / "real/unlarium_ugoa1_en_ucn.excerpt.raw.html.txt"
    ugoa = {s.sent_id: s for s in read_unl(excerpt)}
    assert ugoa["389689"].graph.relations[0].target.uw == '"1"'  # &quot;1&quot;
    assert ugoa["389655"].targets == {"en": "another book"}
    assert ugoa["389655"].org == "other book" and ugoa["389655"].org_lang == "en"
    book = ugoa["389649"].graph
    assert book.relations == () and [n.uw for n in book.nodes] == ["book(equ>volume)"]
    assert ugoa["389699"].graph.relations[0].target.kind == "null"  # `.@1`


# ---------------------------------------------------------------------------- nodes


@pytest.mark.parametrize(
    ("text", "uw", "node_id", "attrs", "kind"),
    [
        ("kill(icl>do).@entry.@past", "kill(icl>do)", None, ("@entry", "@past"), "uw"),
        ("state(icl>express(agt>thing))", "state(icl>express(agt>thing))", None, (), "uw"),
        ("to ridicule(icl>mock):54.@past", "to ridicule(icl>mock)", "54", ("@past",), "uw"),
        ("city (icl>region)", "city(icl>region)", None, (), "uw"),
        ("city ( icl > region ).@def", "city(icl>region)", None, ("@def",), "uw"),
        ("go  on.@past", "go on", None, ("@past",), "uw"),
        ("do(agt>thing,obj>thing)", "do(agt>thing,obj>thing)", None, (), "uw"),
        ("do(agt>thing, obj>thing)", "do(agt>thing,obj>thing)", None, (), "uw"),
        ('"Babylon"', '"Babylon"', None, (), "temp"),
        ('"a, (b)".@x', '"a, (b)"', None, ("@x",), "temp"),
        ("102326432:73.@def", "102326432", "73", ("@def",), "ucl"),
        ("00:3F.@1", "00", "3F", ("@1",), "null"),
        (":3F.@1", "", "3F", ("@1",), "scope"),  # candidate; resolved per graph
        (".@3.@pl", "00", None, ("@3", "@pl"), "null"),
        ("", "00", None, (), "null"),
        ("[slept].@entry", "[slept]", None, ("@entry",), "nl"),
        ("x.@my_attr.@a-b.@9", "x", None, ("@my_attr", "@a-b", "@9"), "uw"),
    ],
)
def test_parse_node(text, uw, node_id, attrs, kind) -> None:
    n = parse_node(text)
    assert (n.uw, n.node_id, n.attrs, n.kind) == (uw, node_id, attrs, kind)


@pytest.mark.parametrize("bad", ["a(b", "kill(icl>do) junk", 'x"y', "a(b)c(d)"])
def test_parse_node_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_node(bad)


def test_normalise_uw_keeps_inner_spaces() -> None:
    assert normalise_uw(" foot ( icl > vertebrate   foot ) ") == "foot(icl>vertebrate foot)"


# ---------------------------------------------------------------------------- relations


def test_relations_share_lines_and_wrap() -> None:
    text = "agt(a, b) obj(a,\n  c(icl>thing, equ>x))\n\nmod(c(icl>thing,equ>x),\nd)"
    assert [r[0] for r in rels(text)] == ["agt", "obj", "mod"]
    g = parse_graph(text)
    assert [r.line for r in g.relations] == [1, 1, 4]
    assert g.relations[1].target.uw == "c(icl>thing,equ>x)" == g.relations[2].source.uw


def test_quotes_protect_commas_and_parentheses() -> None:
    (r,) = rels('nam(city(icl>region), "Paris, (France)")')
    assert r[2] == ("city(icl>region)", "uw", None)
    assert r[3] == ('"Paris, (France)"', "temp", None)


def test_first_top_level_comma_and_semicolon() -> None:
    assert rels("agt(kill(icl>do,agt>thing),Peter)")[0][2][0] == "kill(icl>do,agt>thing)"
    assert rels("agt(kill;Peter)")[0][2:] == (("kill", "uw", None), ("Peter", "uw", None))


def test_scope_reference_vs_null_uw() -> None:
    text = "and(:01, :3F.@1)\nagt:01(eat, :1K)\nobj:01(eat, apple)"
    (r_and, r_agt, _) = rels(text)
    assert r_and[2] == ("", "scope", "01")  # scope 01 is used by agt:01
    assert r_and[3] == ("00", "null", "3F")  # no relation has scope 3F
    assert r_agt[3] == ("00", "null", "1K")


def test_node_id_unification_most_specific_uw_wins() -> None:
    text = (
        "aoj(impossible(equ>hopeless):29, x:1H.@def)\n"
        "man(impossible:29, simply:51)\n"
        "agt(assertion:1H, :29.@y)"
    )
    g = parse_graph(text)
    ends = [(n.uw, n.node_id, n.attrs) for r in g.relations for n in (r.source, r.target)]
    assert ends[0][0] == ends[2][0] == ends[5][0] == "impossible(equ>hopeless)"
    # node 1H: "assertion" (longer) beats "x"; attributes are the union over occurrences
    assert ends[1] == ends[4] == ("assertion", "1H", ("@def",))
    assert ends[5][2] == ("@y",)


def test_null_uw_unified_with_id() -> None:
    g = parse_graph("agt(a, 00:3F.@1)\nobj(a, :3F.@1)")
    assert {(r.target.uw, r.target.kind) for r in g.relations} == {("00", "null")}


def test_list_format() -> None:
    g = parse_graph(
        "[W]\nkill(icl>do):01.@entry\nPeter:02\nMary:03\n[/W]\n[R]\n01agt02\n01 obj 03\n[/R]"
    )
    assert [(r.label, r.source.uw, r.target.uw) for r in g.relations] == [
        ("agt", "kill(icl>do)", "Peter"),
        ("obj", "kill(icl>do)", "Mary"),
    ]
    assert g.nodes == () and g.n_components() == 1
    for rows in ("agt(01, 02)\nobj(01, 03)", "agt(:01, :02)\nobj(:01, :03)"):
        g2 = parse_graph(f"[W]\nkill(icl>do):01\nPeter:02\nMary:03\n[/W]\n[R]\n{rows}\n[/R]")
        assert [(r.label, r.source.uw, r.target.uw) for r in g2.relations] == [
            ("agt", "kill(icl>do)", "Peter"), ("obj", "kill(icl>do)", "Mary")
        ]  # fmt: skip
    with pytest.raises(GraphError, match="unknown node id"):
        parse_graph("[W]\na:01\n[/W]\n[R]\n01agt09\n[/R]")
    g = parse_graph("[W]\nbook(equ>volume).@def\n[/W]")
    assert g.relations == () and g.nodes[0].attrs == ("@def",) and g.n_components() == 1
    assert parse_graph("[W]\na\nb\n[/W]").n_components() == 2


def test_connectivity_through_scopes() -> None:
    text = "and(:01, :02)\nagt:01(a, b)\nagt:02(c, d)"
    assert parse_graph(text).n_components() == 1
    assert parse_graph("agt:01(a, b)\nagt:02(c, d)").n_components() == 2
    assert parse_graph("agt(a, b)\nobj(c, d)").n_components() == 2
    # id-less null UWs are distinct nodes: they do not join anything
    assert parse_graph("agt(a, 00)\nobj(c, 00)").n_components() == 2


# ---------------------------------------------------------------------------- documents


def test_document_structure_and_html_cleaning() -> None:
    text = (
        '[D dn="x"]<br />[P:1]<br />[S:7]<br />{org:en=UTF-8}<br />It&#39;s a &quot;test&quot;'
        "<br />{/org}<br />{unl:1}<br />agt(a, &quot;b&quot;)<br />{/unl}<br />"
        "{fr}<br />C'est un test<br />{/fr}<br />[/S]<br />[/P]<br />[/D]"
    )
    (s,) = read_unl(text)
    assert (s.sent_id, s.org, s.org_lang, s.targets) == ("7", "It's a \"test\"", "en",
                                                         {"fr": "C'est un test"})  # fmt: skip
    assert s.graph.relations[0].target.uw == '"b"' and s.line == 3


def test_malformed_sentence_is_kept_with_reason_and_line() -> None:
    text = (
        "[S:1]\n{unl}\nagt(a, b)\n{/unl}\n[/S]\n[S:2]\n{unl}\nagt(a, b)\nthis is junk\n{/unl}\n[/S]"
    )
    s1, s2 = read_unl(text)
    assert s1.error is None and s2.graph is None
    assert "this is junk" in s2.error and s2.error_line == 9


def test_unbalanced_and_unterminated() -> None:
    s1, s2, s3 = read_unl(
        "[S:1]{unl}agt(a(b, c){/unl}[/S][S:2]{unl}agt(a,b)[/S][S:3]{unl}xy(a,b){/unl}"
    )
    assert s1.error and "unbalanced" in s1.error
    assert s2.error and "{unl}" in s2.error
    assert s3.error is None and s3.warnings  # [S] without [/S] is read, with a warning


def test_without_s_blocks() -> None:
    assert len(read_unl("{unl}\nagt(a,b)\n{/unl}\n{unl}\nobj(a,c)\n{/unl}")) == 2
    (s,) = read_unl("agt(a, b)\nobj(a, c)\n")
    assert len(s.graph.relations) == 2
    (s,) = read_unl("agt(a, b)\nnot a relation\n")  # UNL, but malformed: not fatal
    assert s.error and s.error_line == 2
    assert read_unl("") == []
    (s,) = read_unl("[D:1]\n[P]\nagt(a, b)\n[/P]\n[/D]\n")  # document markers only
    assert len(s.graph.relations) == 1 and s.graph.relations[0].line == 3


def test_graph_directly_inside_s_block() -> None:
    (s,) = read_unl("[S:1]\nagt(a, b)\n[/S]")
    assert len(s.graph.relations) == 1


@pytest.mark.parametrize(
    "text", ["The Tortoise did not stop.\nHe won.", "# sent_id = 1\n1\tThe\tthe\tDET\n", "x"]
)
def test_not_unl_at_all_is_fatal(text: str) -> None:
    with pytest.raises(InputError) as exc:
        read_unl(text if "\n" in text else text + "\n")
    assert exc.value.line == 1 and "expected" in exc.value.message


def test_missing_or_binary_file_is_fatal(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_unl(tmp_path / "nope.unl")
    binary = tmp_path / "b.unl"
    binary.write_bytes(b"\x00\x01agt(a,b)")
    with pytest.raises(InputError) as exc:
        read_unl(binary)
    assert exc.value.path == str(binary)


def test_read_nl_plain_and_from_unl_document() -> None:
    s = read_nl("one two\n\nthree\n\n\n")
    assert [x.text for x in s] == ["one two", "", "three"]
    ugoa = read_nl(DATA / "real/unlarium_ugoa1_en_ucn.excerpt.raw.html.txt", lang="en")
    by_id = {x.sent_id: x.text for x in ugoa}
    assert by_id["389655"] == "another book"  # {en} block
    assert by_id["389649"] == "book"  # {org:en} when there is no {en} block
    assert read_nl(DATA / "cases/10a_nl_exact_after_normalisation/actual.txt")[0].text
    two = "[S:1]{org:en}x{/org}{unl}agt(a,b){/unl}{fr}un{/fr}{de}ein{/de}[/S]"
    (s,) = read_nl(two)
    assert s.text is None and "several target-language blocks" in s.error
    assert read_nl(two, lang="de")[0].text == "ein"
    assert read_nl(two, lang="en")[0].text == "x"
    assert read_nl(two, lang="es")[0].error == "no {es} block"


def test_tables_are_arrow_schemas() -> None:
    assert {"unl_sentences", "unl_scores"} <= set(TABLES)
    names = TABLES["unl_sentences"].names
    for col in (
        "corpus",
        "system",
        "task",
        "sent_id",
        "returned",
        "correct",
        "reason",
        "rel_exc",
        "word_tot",
        "d_rel",
        "d_all",
        "d_words",
        "d_all_frac",
        "options",
    ):
        assert col in names  # fmt: skip
    assert {"n_expected", "n_returned", "n_correct", "precision", "recall", "f1",
            "rel_f1", "uw_f1", "attr_f1"} <= set(TABLES["unl_scores"].names)  # fmt: skip
