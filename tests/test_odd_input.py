"""Odd but valid (or nearly valid) input (issue 20, point 7): no entity at all, every
decoding scheme on every kind of tag file, IOB1, a short CoNLL-2012 line, a file cut off in
its last line, a UTF-8 byte order mark."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import BOM
from sysdiff.transforms import span_decoding as D
from tests.conftest import REPO, SEQUOIA
from tests.test_coref_reader import COREFUD

NER = REPO / "data" / "ner"


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def tag_file(sentences: list[list[str]]) -> str:
    """word<TAB>tag lines, a blank line after each sentence."""
    return "".join("".join(f"w{k}\t{t}\n" for k, t in enumerate(s)) + "\n" for s in sentences)


def ner_run(cli, tmp: Path, key: Path, systems: dict[str, Path], *extra: str
            ) -> tuple[int, str, Path]:
    root = tmp / "wh"
    code, _out, err = cli("run", "--task", "ner", "--corpus", "c", "--key", str(key),
                          *[f"--system={n}={p}" for n, p in systems.items()],
                          "--ar-trials", "20", "-w", str(root), *extra)
    return code, err, root


# ------------------------------------------------------------------------------ (a) no entity


def test_a_corpus_without_any_entity_runs_and_stores_no_number_for_0_over_0(tmp_path, cli):
    key = write(tmp_path / "key.tsv", tag_file([["O", "O"], ["O"]]))
    a = write(tmp_path / "a.tsv", tag_file([["O", "O"], ["O"]]))
    b = write(tmp_path / "b.tsv", tag_file([["O", "O"], ["O"]]))
    code, err, root = ner_run(cli, tmp_path, key, {"a": a, "b": b})
    assert code == 0, err
    scores = query(root, "select system, n_gold, n_pred, precision, recall, f1 from "
                         "span_scores order by system").rows()
    assert scores == [("a", 0, 0, None, None, None), ("b", 0, 0, None, None, None)]
    pairs = query(root, "select n_units, diff, delta_f1 from span_pairs").rows()
    assert pairs == [(0, None, None)] * 2
    oracles = query(root, "select n_gold, recall, gain from span_oracles").rows()
    assert oracles and set(oracles) == {(0, None, None)}
    tags = query(root, "select system, n_tokens_correct, n_spans, n_ill_formed from span_tags "
                       "order by system").rows()
    assert tags == [("__key__", None, 0, 0), ("a", 3, 0, 0), ("b", 3, 0, 0)]
    code, _out, err = cli("check", "-w", str(root), "--baseline", "a", "--candidate", "b",
                          "--min-delta", "0")  # no gate passes on 0/0: it fails, saying why
    assert code == 1 and "not evaluated" in err and "internal error" not in err


def test_precision_recall_and_f1_are_null_only_where_they_are_0_over_0():
    """A system without any prediction: precision 0/0 (NULL), recall and F1 0 (the key has
    spans); a key without a type the system predicts: that type's recall is 0/0, and so is
    its F1 (no key span: not evaluated)."""
    from sysdiff.transforms.span_tables import prf

    p, r, f = prf([0, 0, 0, 2], [3, 0, 0, 4], [0, 2, 0, 3])
    assert [None if x != x else x for x in p] == [None, 0.0, None, 2 / 3]
    assert [None if x != x else x for x in r] == [0.0, None, None, 0.5]
    assert [None if x != x else x for x in f] == [0.0, None, None, pytest.approx(4 / 7)]


# ------------------------------------------------------------------------------ (e) schemes

#: Tag files of each kind and, per scheme: (spans, ill-formed) or the tag the reader
#: refuses (a scheme that does not allow its prefixes).
IOB1 = [["I-PER", "I-PER", "O", "I-LOC"], ["I-PER", "B-PER"]]
IOB2 = [["B-PER", "I-PER", "O", "B-LOC"], ["B-PER", "B-PER"]]
BIOES = [["B-PER", "E-PER", "O", "S-LOC"], ["S-PER", "S-PER"]]
MIXED = [["B-PER", "I-PER", "O", "I-LOC"], ["O", "B-PER"]]  # IOB2 with an I-X start
NONE = [["O", "O"], ["O"]]
PER01, LOC3, PER10, PER11 = (0, 0, 1, "PER"), (0, 3, 3, "LOC"), (1, 0, 0, "PER"), (
    1, 1, 1, "PER")
FILES = {
    "iob1": (IOB1, "iob1", {"auto": ([PER01, LOC3, PER10, PER11], 0),
                            "iob1": ([PER01, LOC3, PER10, PER11], 0),
                            "iob2": ([PER11], 3), "bioes": ([], 4)}),
    "iob2": (IOB2, "iob2", {"auto": ([PER01, LOC3, PER10, PER11], 0),
                            "iob1": ([PER01, LOC3, PER10, PER11], 0),
                            "iob2": ([PER01, LOC3, PER10, PER11], 0), "bioes": ([], 4)}),
    "bioes": (BIOES, "bioes", {"auto": ([PER01, LOC3, PER10, PER11], 0),
                               "iob1": "E-PER", "iob2": "E-PER",
                               "bioes": ([PER01, LOC3, PER10, PER11], 0)}),
    "mixed": (MIXED, "iob2", {"auto": ([PER01, LOC3, PER11], 1),
                              "iob1": ([PER01, LOC3, PER11], 0),
                              "iob2": ([PER01, PER11], 1), "bioes": ([], 3)}),
    "none": (NONE, "iob2", {s: ([], 0) for s in ("auto", "iob1", "iob2", "bioes")}),
}
SCHEMES = ("auto", "iob1", "iob2", "bioes")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kind", FILES)
def test_every_scheme_on_every_kind_of_tag_file_decodes_or_refuses(tmp_path, kind, scheme):
    from sysdiff.schemas.formats.spans import read_tags

    sentences, detected, want = FILES[kind]
    path = write(tmp_path / "a.tsv", tag_file(sentences))
    if isinstance(want[scheme], str):
        with pytest.raises(InputError) as got:
            read_tags(path, scheme=scheme)
        assert f"tag '{want[scheme]}' is not O or" in got.value.message
        assert f"--scheme {scheme}" in got.value.message
        return
    spans, d = D.decode_spans(read_tags(path, scheme=scheme).tokens, scheme)
    assert [tuple(r) for r in spans.select("sent", "start", "end", "type").rows()] == \
        want[scheme][0]
    assert (d.detected, d.n_ill_formed) == (detected, want[scheme][1])


@pytest.mark.parametrize("kind", ["iob1", "iob2", "bioes", "none"])
def test_a_run_with_every_scheme_on_every_kind_of_key(tmp_path, cli, kind):
    """The key and a system of one kind, under every scheme: the run's figures, or the
    reader's refusal (exit 2), never a crash."""
    sentences, detected, want = FILES[kind]
    key = write(tmp_path / "key.tsv", tag_file(sentences))
    a = write(tmp_path / "a.tsv", tag_file(sentences))
    for scheme in SCHEMES:
        code, err, root = ner_run(cli, tmp_path / scheme, key, {"a": a}, "--scheme", scheme)
        if isinstance(want[scheme], str):
            assert code == 2 and f"tag '{want[scheme]}' is not O or" in err, err
            continue
        assert code == 0, (scheme, err)
        n_spans, n_ill = len(want[scheme][0]), want[scheme][1]
        row = query(root, "select n_gold, n_pred, n_correct, precision from span_scores "
                          "where system = 'a' and type = 'ALL'").row(0)
        assert row == (n_spans, n_spans, n_spans, 1.0 if n_spans else None), scheme
        tags = query(root, "select detected, n_spans, n_ill_formed from span_tags where "
                           "system = 'a'").row(0)
        assert tags == (detected, n_spans, n_ill), scheme
        assert ("ill-formed" in err) == bool(n_ill), (scheme, err)


def test_valid_iob1_is_not_reported_as_ill_formed(tmp_path, cli):
    """I-X after O starts a span in IOB1: no note, no ill-formed span; IOB2 with such a
    start is still told (the spans conlleval reads and seqeval strict drops)."""
    key = write(tmp_path / "key.tsv", tag_file(IOB1))
    code, err, root = ner_run(cli, tmp_path, key, {"a": key})
    assert code == 0 and "ill-formed" not in err, err
    assert query(root, "select distinct detected, n_ill_formed from span_tags").rows() == [
        ("iob1", 0)]
    mixed = write(tmp_path / "mixed.tsv", tag_file(MIXED))
    code, err, root = ner_run(cli, tmp_path / "m", mixed, {"a": mixed})
    assert code == 0 and "1 span(s) are ill-formed for IOB2 (e.g. I-X after O)" in err, err


# ------------------------------------------------------------------------------ (b) CoNLL-2012


def conll2012(rows: list[list[str]]) -> str:
    """One document; ``rows``: the columns after doc, part, word number (a blank row: a
    sentence break)."""
    out, k = ["#begin document (d); part 000"], 0
    for r in rows:
        if not r:
            out.append("")
            continue
        out.append("\t".join(["d", "0", str(k), *r]))
        k += 1
    return "\n".join([*out, "", "#end document", ""])


def eleven(word: str, coref: str) -> list[str]:
    """The 8 columns after doc, part and word number of an 11-column line."""
    return [word, "NN", "*", "-", "-", "-", "-", coref]


def test_a_conll2012_line_with_columns_missing_is_refused_at_its_line(tmp_path, cli):
    words = [("John", "(1)"), ("saw", "-"), ("Mary", "(2)"), ("and", "-"), ("he", "(1)"),
             ("left", "-")]
    key = write(tmp_path / "key.conll", conll2012([eleven(w, c) for w, c in words]))
    rows = [eleven(w, c) for w, c in words]
    rows[4] = rows[4][:6]  # 'he (1)' cut to 9 columns: its mention would be dropped
    bad = write(tmp_path / "sys.conll", conll2012(rows))
    code, _out, err = cli("run", "--task", "coref", "--corpus", "c", "--key", str(key),
                          "--system", f"a={bad}", "-w", str(tmp_path / "wh"))
    assert code == 2
    assert (f"{bad}:6: line has 9 columns; the other lines of its sentence have 11 (a missing "
            "column drops its mention: the coreference column is the last); expected 11 "
            "columns") in err
    assert not (tmp_path / "wh").exists()


def test_conll2012_sentences_may_differ_in_columns_and_a_stray_tab_is_accepted():
    """CoNLL-2012 has one argument column per predicate of a sentence; an empty column at
    the end of one line (as in the reference scorer's own test files) is no missing one."""
    from sysdiff.schemas.formats.coref import read_coref

    rows = [eleven("John", "(1)"), [*eleven("left", "-"), ""], [],
            [*eleven("He", "(1)")[:-1], "(V*)", "(1)"], [*eleven("cried", "-")[:-1], "*", "-"]]
    mentions = read_coref("x.conll", text=conll2012(rows))
    assert mentions.select("start", "end", "entity").rows() == [(0, 0, "1"), (2, 2, "1")]


# ------------------------------------------------------------------------------ (c) truncated


@pytest.mark.parametrize("task, name, text, line", [
    ("pos", "a.tsv", "John\tNOUN\nruns\tVERB\n\nhe\tPR", 4),
    ("ner", "a.tsv", tag_file([["B-PER", "O"]]) + "w0\tB-P", 4),
    ("ner", "a.conll", "-DOCSTART- -X- -X- O\n\nJohn NNP B-NP B-PER\nruns VBZ B-VP O", 4),
])
def test_a_tag_file_cut_off_in_its_last_line_is_refused_at_that_line(
        tmp_path, task, name, text, line):
    """The tag is the last column: a file cut short inside it still looks valid, so a last
    line without its newline is refused (as the CoNLL-U reader refuses a short last line)."""
    path = write(tmp_path / name, text)
    if task == "pos":
        from sysdiff.schemas.formats.conllu import read_conll as read
    else:
        from sysdiff.schemas.formats.spans import read_tags as read
    for chunk_bytes in (None, 8):
        with pytest.raises(InputError) as got:
            read(path, chunk_bytes=chunk_bytes)
        assert (got.value.path, got.value.line) == (str(path), line)
        assert got.value.message.startswith("truncated last line: the file ends in the middle "
                                            "of this line (no newline at its end)")
    write(path, text + "\n")  # the same file with its last newline: accepted
    read(path)


def test_a_run_refuses_a_word_tag_system_cut_off_mid_line(tmp_path, cli):
    key = write(tmp_path / "key.tsv", "John\tNOUN\nruns\tVERB\n\nhe\tPRON\n")
    cut = write(tmp_path / "a.tsv", "John\tNOUN\nruns\tVERB\n\nhe\tPR")
    code, _out, err = cli("run", "--task", "pos", "--corpus", "c", "--key", str(key),
                          "--system", f"a={cut}", "-w", str(tmp_path / "wh"))
    assert code == 2 and f"{cut}:4: truncated last line" in err, err


# ------------------------------------------------------------------------------ (d) BOM


def _conllu() -> str:
    text = (SEQUOIA / "key.conllu").read_text(encoding="utf-8")
    return text[:text.index("\n\n", 20000) + 2]


def _jsonl() -> str:
    docs = [{"doc_key": "a", "sentences": [["John", "left"], ["He", "cried"]],
             "clusters": [[[0, 0], [2, 2]]]}]
    return "\n".join(json.dumps(d) for d in docs) + "\n"


def _read_tokens(path: Path):
    from sysdiff.schemas.formats.conllu import read_conll

    doc = read_conll(path)
    return doc.tokens.drop("line"), doc.sents


def _read_tags(path: Path):
    from sysdiff.schemas.formats.spans import read_tags

    chunk = read_tags(path)
    return chunk.fmt, chunk.tokens, chunk.sents


def _read_coref(path: Path):
    from sysdiff.schemas.formats.coref import read_coref_with_tokens

    return read_coref_with_tokens(path)


def _read_unl(path: Path):
    from sysdiff.schemas.formats.unl import index_unl, read_unl

    index = index_unl(path)
    return [(s.sent_id, s.line) for s in read_unl(path)], index.ids, index.lines.tolist()


def _read_nl(path: Path):
    from sysdiff.schemas.formats.unl import read_nl

    return read_nl(path)


BOM_CASES = {
    "conllu": ("k.conllu", _conllu, _read_tokens),
    "conllx": ("k.conll", lambda: "1\tLe\tle\tDET\t_\t_\t2\tdet\t_\t_\n2\tchat\tchat\tNOUN\t_\t_"
               "\t0\troot\t_\t_\n\n", _read_tokens),
    "word-tag": ("k.tsv", lambda: "Le\tDET\nchat\tNOUN\n\n", _read_tokens),
    "tags": ("k.tsv", lambda: tag_file(IOB2), _read_tags),
    "conll2003": ("k.conll", lambda: "-DOCSTART- -X- -X- O\n\nJohn NNP B-NP B-PER\n\n",
                  _read_tags),
    "uner": ("k.iob2", lambda: "# sent_id = 1\n1\tJohn\tB-PER\t-\t-\n2\tleft\tO\t-\t-\n\n",
             _read_tags),
    "conll2012": ("k.conll", lambda: conll2012([eleven("John", "(1)"), eleven("he", "(1)")]),
                  _read_coref),
    "corefud": ("k.conllu", lambda: COREFUD, _read_coref),
    "jsonlines": ("k.jsonl", _jsonl, _read_coref),
    "unl": ("k.unl", lambda: (REPO / "data/unl/expected.unl").read_text(encoding="utf-8"),
            _read_unl),
    "nl": ("k.txt", lambda: "le chat dort\nil pleut\n", _read_nl),
}


@pytest.mark.parametrize("case", BOM_CASES)
def test_every_reader_reads_a_file_with_a_byte_order_mark_as_the_file_without(tmp_path, case):
    from sysdiff.flows.preflight import check_file
    from sysdiff.flows.spec import Source

    name, text, read = BOM_CASES[case]
    plain = write(tmp_path / name, text())
    marked = write(tmp_path / f"bom-{name}", BOM + text().encode())
    task = {"_read_tokens": "pos", "_read_tags": "ner", "_read_coref": "coref",
            "_read_unl": "unl", "_read_nl": "nl"}[read.__name__]
    formats = [check_file(Source("x", str(p), None, None), task) for p in (plain, marked)]
    assert formats[0] == formats[1]
    got, want = read(marked), read(plain)
    if case in ("conllu", "conllx", "word-tag"):
        assert got[0].equals(want[0]) and got[1].equals(want[1])
    elif case in ("tags", "conll2003", "uner"):
        assert got[0] == want[0] and got[1].equals(want[1]) and got[2].equals(want[2])
    elif case in ("conll2012", "corefud", "jsonlines"):
        assert got[0].equals(want[0]) and got[1].equals(want[1]) and got[0].height
    elif case == "nl":
        assert [s.text for s in got] == [s.text for s in want] == ["le chat dort", "il pleut"]
    else:
        assert got == want


@pytest.mark.parametrize("task, key_name, system", [
    ("pos", "key.conllu", None), ("coref", "key.conll", REPO / "data/litbank/sys1.conll"),
])
def test_a_run_accepts_a_key_with_a_byte_order_mark_and_hashes_its_bytes(
        tmp_path, cli, task, key_name, system):
    text = _conllu().encode() if task == "pos" else (REPO / "data/litbank/key.conll").read_bytes()
    key = write(tmp_path / key_name, BOM + text)
    plain = write(tmp_path / f"plain-{key_name}", text)
    system = system or plain
    code, _out, err = cli("run", "--task", task, "--corpus", "c", "--key", str(key),
                          "--system", f"a={system}", "--ar-trials", "20",
                          "-w", str(tmp_path / "wh"))
    assert code == 0, err
    row = query(tmp_path / "wh", "select sha256, size from systems where system = '__key__'"
                ).row(0)
    assert row == (hashlib.sha256(key.read_bytes()).hexdigest(), len(text) + 3)


def test_a_label_mapping_file_with_a_byte_order_mark(tmp_path):
    from sysdiff.schemas.formats.spans import read_mapping_file

    text = "PERSON\tPER\nGPE\tLOC\n"
    marked = write(tmp_path / "bom.tsv", BOM + text.encode())
    assert read_mapping_file(marked) == read_mapping_file(write(tmp_path / "m.tsv", text)) == {
        "PERSON": "PER", "GPE": "LOC"}
