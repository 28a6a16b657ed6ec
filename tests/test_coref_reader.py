"""Readers of coreference files (METRICS 2.1) and their input errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.coref import (
    MENTION_COLUMNS,
    detect_coref_format,
    read_coref,
    read_coref_tokens,
    read_coref_with_tokens,
    validate_response,
)
from sysdiff.schemas.tables import TABLES
from tests.helpers import bracket_marks

SHARED = str(Path(__file__).resolve().parent / "data")


def spans(m: pl.DataFrame) -> set[tuple]:
    """(doc, part, start, end, entity) of every mention."""
    return set(m.select("doc", "part", "start", "end", "entity").iter_rows())


def chains(m: pl.DataFrame) -> set[frozenset]:
    """Entities as sets of (doc, part, start, end), independent of entity ids."""
    g = m.group_by("doc", "part", "entity").agg(pl.struct("doc", "part", "start", "end")
                                                .alias("ms"))
    return {frozenset(tuple(d.values()) for d in ms) for ms in g["ms"].to_list()}


def doc(lines: list[str], name: str = "d", part: int = 0) -> str:
    return "\n".join([f"#begin document ({name}); part {part:03d}", *lines, "#end document"])


def tok(i: int, coref: str, word: str = "w", pos: str = "NN") -> str:
    """A CoNLL-2012-like line with 6 columns (POS in the 5th)."""
    return "\t".join(["d", "0", str(i), word, pos, coref])


# ------------------------------------------------------------------------ CoNLL-2012


def test_brackets_pipes_back_to_back_nested_and_singletons():
    text = doc([tok(0, "(1(3"), tok(1, "3)|(2)"), tok(2, "-"), tok(3, "1)"), tok(4, "(2)")])
    m = read_coref("x.conll", text=text)
    assert spans(m) == {("d", 0, 0, 3, "1"), ("d", 0, 0, 1, "3"), ("d", 0, 1, 1, "2"),
                        ("d", 0, 4, 4, "2")}
    # document order: by start, longer span first
    assert m.select("start", "end").rows() == [(0, 3), (0, 1), (1, 1), (4, 4)]
    assert m.columns == MENTION_COLUMNS


def test_several_documents_parts_and_sentences():
    text = "\n".join([
        doc([tok(0, "(1)"), "", tok(0, "(1)")], name="a", part=0),
        doc([tok(0, "(7"), tok(1, "7)")], name="a", part=1),
        doc([tok(0, "-"), tok(1, "(1)")], name="b"),
    ])
    m, t = read_coref_with_tokens("x.conll", text=text)
    assert spans(m) == {("a", 0, 0, 0, "1"), ("a", 0, 1, 1, "1"), ("a", 1, 0, 1, "7"),
                        ("b", 0, 1, 1, "1")}
    assert m.filter(pl.col("doc") == "a", pl.col("part") == 0)["sent"].to_list() == [0, 1]
    assert t.select("doc", "part", "n_tokens", "line").rows() == [
        ("a", 0, 2, 1), ("a", 1, 2, 6), ("b", 0, 2, 10)]


def test_duplicate_span_in_one_entity_is_merged():
    text = doc([tok(0, "(1(1"), tok(1, "1)1)"), tok(2, "(1)")])
    m = read_coref("x.conll", text=text)
    assert m.height == 2


def test_last_column_empty_trailing_tab_and_space_separated():
    # LitBank style: 13 columns, coreference column empty; a stray tab after '-' (TC-A)
    wide = ["\t".join(["d", "0", str(i), "w"] + ["_"] * 8 + [c]) for i, c in
            enumerate(["(4", "", "4)", ""])]
    stray = "d\t0\t4\tw\t-\t"
    m = read_coref("x.conll", text=doc(wide))
    assert spans(m) == {("d", 0, 0, 2, "4")}
    assert read_coref("x.conll", text=doc([tok(0, "(2)"), "d\t0\t1\tw\tNN\t(2)\t"])).height == 2
    five = ["d\t0\t0\tw\t(5", stray.replace("-", "5)")]
    assert spans(read_coref("x.conll", text=doc(five))) == {("d", 0, 0, 1, "5")}
    spaced = ["d  0 0   w  (9", "d 0 1 w 9)"]
    assert spans(read_coref("x.conll", text=doc(spaced))) == {("d", 0, 0, 1, "9")}


def test_mention_types_and_words():
    lines = [tok(0, "(1)", "John", "NNP"), tok(1, "(1)", "He", "PRP"),
             tok(2, "(1)", "his", "PRP$"), tok(3, "(2", "the"), tok(4, "2)", "dog"),
             tok(5, "(2)", "which", "WDT"), tok(6, "(3)", "it", "_")]
    m = read_coref("x.conll", text=doc(lines))
    assert m.select("mtype", "word").rows() == [
        ("NOUN", "john"), ("PRP", "he"), ("PRP$", "his"), ("NOUN", None), ("WDT", "which"),
        ("UNKNOWN", "it")]
    # no POS column (5 columns: the 5th is the coreference column)
    m5 = read_coref("x.conll", text=doc(["d\t0\t0\tShe\t(1)", "d\t0\t1\tw\t-"]))
    assert m5.select("mtype", "word", "head_pos").rows() == [("UNKNOWN", "she", None)]


def test_reference_scorer_files_read(tmp_path):
    m = read_coref(f"{SHARED}/coref-refscorer/TC-A.key")
    assert m.height == 6 and m["entity"].n_unique() == 3
    # A7: back-to-back duplicate brackets are one mention
    a7 = read_coref(f"{SHARED}/coref-refscorer/TC-A-7.response")
    a4 = read_coref(f"{SHARED}/coref-refscorer/TC-A-4.response")
    assert chains(a7) == chains(a4)


def test_same_token_close_and_open_follow_the_reference_scorer():
    # '1)|(1': the reference scorer applies openings before closings on one token
    text = doc([tok(0, "(1"), tok(1, "-"), tok(2, "1)|(1"), tok(3, "1)")])
    assert spans(read_coref("x.conll", text=text)) == {("d", 0, 2, 2, "1"),
                                                        ("d", 0, 0, 3, "1")}


# ------------------------------------------------------------------ other formats


def test_jsonlines():
    docs = [
        {"doc_key": "a", "sentences": [["John", "left"], ["He", "cried"]],
         "clusters": [[[0, 0], [2, 2], [2, 2]], [[1, 1]]], "pos": [["NNP", "VBD"],
                                                                   ["PRP", "VBD"]]},
        {"doc_key": "b", "sentences": [["x", "y", "z"]], "clusters": [[[0, 2]]]},
    ]
    text = "\n".join(json.dumps(d) for d in docs) + "\n"
    assert detect_coref_format(text, "x.jsonl") == "jsonlines"
    m, t = read_coref_with_tokens("x.jsonl", text=text)
    assert spans(m) == {("a", 0, 0, 0, "0"), ("a", 0, 2, 2, "0"), ("a", 0, 1, 1, "1"),
                        ("b", 0, 0, 2, "0")}
    assert m.filter(pl.col("doc") == "a").select("start", "mtype", "sent").rows() == [
        (0, "NOUN", 0), (1, "VBD", 0), (2, "PRP", 1)]
    assert t["n_tokens"].to_list() == [4, 3]


COREFUD = """# global.Entity = eid-etype-head-other
# newdoc id = doc1
# sent_id = 1
# text = Mary saw her dog
1\tMary\tMary\tPROPN\tNNP\t_\t2\tnsubj\t_\tEntity=(e1-person-1)
2\tsaw\tsee\tVERB\tVBD\t_\t0\troot\t_\t_
3-4\ther dog\t_\t_\t_\t_\t_\t_\t_\t_
3\ther\tshe\tPRON\tPRP$\tPoss=Yes\t4\tnmod:poss\t_\tEntity=(e2-animal-2(e1-person-1)
4\tdog\tdog\tNOUN\tNN\t_\t2\tobj\t_\tEntity=e2)

# sent_id = 2
# text = She smiled
1\tShe\tshe\tPRON\tPRP\tCase=Nom\t2\tnsubj\t_\tSpaceAfter=No|Entity=(e1-person-1)
2\tsmiled\tsmile\tVERB\tVBD\t_\t0\troot\t_\t_

"""


def test_corefud():
    assert detect_coref_format(COREFUD, "x.conllu") == "corefud"
    m, t = read_coref_with_tokens("x.conllu", text=COREFUD)
    assert m.select("start", "end", "entity", "mtype", "sent", "head_pos").rows() == [
        (0, 0, "e1", "NOUN", 0, "PROPN"), (2, 3, "e2", "NOUN", 0, "NOUN"),
        (2, 2, "e1", "PRP$", 0, "PRON"), (4, 4, "e1", "PRP", 1, "PRON")]
    assert t.rows() == [("doc1", 0, 6, 2)]


# ----------------------------------------------------------------------- bad inputs


def raises_at(text: str, line: int, *words: str, fmt: str | None = None) -> InputError:
    with pytest.raises(InputError) as info:
        read_coref("bad.conll", fmt=fmt, text=text)
    err = info.value
    assert err.path == "bad.conll" and err.line == line, str(err)
    for w in words:
        assert w in err.message, err.message
    return err


def test_error_span_in_two_entities():
    text = doc([tok(0, "(1)"), tok(1, "(1|(2"), tok(2, "1)|2)")])
    raises_at(text, 3, "two entities", "'d'", "1-2")


def test_error_closing_without_open():
    raises_at(doc([tok(0, "(1)"), tok(1, "-"), tok(2, "4)")]), 4, "closing bracket", "'d'")


def test_error_unclosed_mention():
    raises_at(doc([tok(0, "(1)"), tok(1, "(5"), tok(2, "-")]), 3, "never closed", "'d'")


def test_error_bad_coreference_field():
    raises_at(doc([tok(0, "(1)"), tok(1, "(a)")]), 3, "bad coreference column")


def test_error_missing_end_document():
    raises_at("#begin document (d); part 000\n" + tok(0, "-") + "\n", 1, "#end document")


def test_error_token_outside_document():
    raises_at(tok(0, "-") + "\n" + doc([tok(0, "-")]), 1, "outside a document")


def test_error_duplicate_document():
    raises_at(doc([tok(0, "-")]) + "\n" + doc([tok(0, "-")]), 4, "appears twice")


def test_error_jsonlines_bad_span_and_json():
    good = json.dumps({"doc_key": "a", "sentences": [["x"]], "clusters": []})
    bad = json.dumps({"doc_key": "b", "sentences": [["x"]], "clusters": [[[0, 3]]]})
    raises_at(good + "\n" + bad + "\n", 2, "'b'", "bad mention")
    raises_at(good + "\n{oops\n", 2, "invalid JSON", fmt="jsonlines")


def test_error_file_not_found(tmp_path):
    with pytest.raises(InputError) as info:
        read_coref(tmp_path / "nope.conll")
    assert info.value.path.endswith("nope.conll")


def test_error_documents_differ_from_key():
    key = read_coref_tokens("key.conll", text=doc([tok(0, "-")], "a") + "\n"
                            + doc([tok(0, "-")], "b"))
    resp = read_coref_tokens("resp.conll", text=doc([tok(0, "-")], "a") + "\n"
                             + doc([tok(0, "-")], "c"))
    with pytest.raises(InputError) as info:
        validate_response(key, resp, "key.conll", "resp.conll")
    err = info.value
    assert (err.path, err.line) == ("key.conll", 4) and "'b'" in err.message
    assert "resp.conll" in err.message
    only_extra = read_coref_tokens("resp.conll", text=doc([tok(0, "-")], "a") + "\n"
                                   + doc([tok(0, "-")], "b") + "\n" + doc([tok(0, "-")], "c"))
    with pytest.raises(InputError) as info:
        validate_response(key, only_extra, "key.conll", "resp.conll")
    assert info.value.line == 7 and "'c'" in info.value.message


def test_error_token_counts_differ_from_key():
    key = read_coref_tokens("key.conll", text=doc([tok(0, "-"), tok(1, "-")], "a"))
    resp = read_coref_tokens("resp.conll", text=doc([tok(0, "-")], "a"))
    with pytest.raises(InputError) as info:
        validate_response(key, resp, "key.conll", "resp.conll")
    err = info.value
    assert (err.path, err.line) == ("resp.conll", 1)
    assert "1 tokens" in err.message and "2" in err.message and "'a'" in err.message
    validate_response(key, key, "key.conll", "key.conll")  # same documents: no error


def test_shared_responses_match_their_keys():
    for key, resp in [("coref-litbank/key.conll", "coref-litbank/sys1.conll"),
                      ("coref-refscorer/TC-A.key", "coref-refscorer/TC-A-5.response")]:
        validate_response(read_coref_tokens(f"{SHARED}/{key}"),
                          read_coref_tokens(f"{SHARED}/{resp}"), key, resp)


def test_tables_schema_matches_reader_output():
    m = read_coref(f"{SHARED}/coref-refscorer/TC-A.key")
    schema = TABLES["mentions"]
    assert [f for f in schema.names if f not in ("corpus", "system")] == m.columns
    full = m.with_columns(corpus=pl.lit("c"), system=pl.lit("s")).select(schema.names)
    assert full.to_arrow().cast(schema).schema == schema


def test_corefud_discontinuous_mention_is_its_bounding_span():
    words = [("a", "Entity=(e1[1/2]-x-1)"), ("b", "_"), ("c", "Entity=(e1[2/2]-x-1"),
             ("d", "Entity=e1[2/2])"), ("e", "Entity=(e1-x-1)")]
    text = "# newdoc id = k\n" + "".join(
        f"{i + 1}\t{w}\t{w}\tNOUN\tNN\t_\t0\troot\t_\t{misc}\n" for i, (w, misc) in
        enumerate(words)) + "\n"
    m = read_coref("x.conllu", fmt="corefud", text=text)
    assert m.select("start", "end", "entity").rows() == [(0, 3, "e1"), (4, 4, "e1")]


def test_corefud_errors_name_the_line():
    bad = "# newdoc id = k\n1\ta\ta\tNOUN\tNN\t_\t0\troot\t_\tEntity=e7)\n\n"
    raises_at(bad, 2, "closing bracket", "'k'", fmt="corefud")
    short = "# newdoc id = k\n1\ta\ta\tNOUN\n\n"
    raises_at(short, 2, "expected 10", fmt="corefud")


# ------------------------------------------------------------------- round trip


def compatible(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two mentions of one entity that brackets can express unambiguously: disjoint
    without touching, or nested."""
    (s1, e1), (s2, e2) = sorted([a, b])
    disjoint = e1 < s2
    nested = s1 <= s2 and e2 <= e1
    return disjoint or nested


@st.composite
def documents(draw):
    n = draw(st.integers(1, 12))
    spans = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3)), max_size=10))
    spans = list(dict.fromkeys((s, min(s + k, n - 1)) for s, k in spans))
    ents: dict[int, list] = {}
    for sp in spans:
        e = draw(st.integers(0, 3))
        if all(compatible(sp, other) for other in ents.get(e, [])):
            ents.setdefault(e, []).append(sp)
    return n, ents


def write(n: int, ents: dict[int, list], wide: bool, joiner: str, stray_tab: bool) -> str:
    marks = bracket_marks(n, ents)
    lines = ["#begin document (rt); part 000"]
    for i in range(n):
        # back to back, '(0' + '1)' would read '(01)': write closings first
        coref = joiner.join(sorted(marks[i], key=lambda b: not b.endswith(")"))) or "-"
        cols = ["rt", "0", str(i), f"w{i}"] + (["_"] * 8 if wide else []) + [coref]
        lines.append("\t".join(cols) + ("\t" if stray_tab and i == n - 1 else ""))
        if i % 5 == 4:
            lines.append("")
    return "\n".join([*lines, "#end document", ""])


@settings(max_examples=100, deadline=None)
@given(documents(), st.booleans(), st.sampled_from(["|", ""]), st.booleans())
def test_round_trip(doc_, wide, joiner, stray_tab):
    n, ents = doc_
    text = write(n, ents, wide, joiner, stray_tab)
    m = read_coref("rt.conll", text=text)
    want = {frozenset(("rt", 0, s, t) for s, t in ms) for ms in ents.values() if ms}
    assert chains(m) == want
    assert read_coref_tokens("rt.conll", text=text)["n_tokens"].to_list() == [n]


def test_crlf_file_reads_like_lf(tmp_path):
    text = doc([tok(0, "(1"), tok(1, "1)"), "", tok(0, "(1)")]) + "\n"
    path = tmp_path / "crlf.conll"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert spans(read_coref(path)) == spans(read_coref("lf.conll", text=text))
    assert read_coref(path)["sent"].to_list() == [0, 1]


def test_error_not_utf8(tmp_path):
    path = tmp_path / "latin1.conll"
    path.write_bytes(doc([tok(0, "-"), tok(1, "(1)", word="café")]).encode("latin-1"))
    with pytest.raises(InputError) as info:
        read_coref(path)
    assert info.value.line == 3 and "UTF-8" in info.value.message
