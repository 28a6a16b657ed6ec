"""Tag files (task ner): the three formats, format detection, label mapping files, and every
bad input as one error naming the file, the line and what was expected."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.spans import (
    detect_span_format,
    iter_tags,
    read_mapping_file,
    read_tags,
)
from tests.conftest import REPO

NER = REPO / "data" / "ner"

TSV = "John\tB-PER\nSmith\tI-PER\nvisited\tO\nParis\tB-LOC\n\nHe\tO\nleft\tO\n"
CONLL03 = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP "
           "I-MISC\ncall NN I-NP O\n\n-DOCSTART- -X- -X- O\n\nPeter NNP B-NP I-PER\n"
           "Blackburn NNP I-NP I-PER\n")
UNER = ("# newdoc id = d1\n# sent_id = s1\n# text = John Smith visited Paris\n"
        "1\tJohn\tB-PER\t-\tann\n2\tSmith\tI-PER\t-\tann\n3\tvisited\tO\t-\t-\n"
        "4\tParis\tB-LOC\t-\tann\n\n# sent_id = s2\n1\tOK\tO\t-\t-\n")


def write(tmp: Path, name: str, text: str | bytes) -> Path:
    p = tmp / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_word_tag_file(tmp_path):
    doc = read_tags(write(tmp_path, "a.tsv", TSV))
    assert doc.fmt == "tsv"
    assert doc.tokens["form"].to_list() == ["John", "Smith", "visited", "Paris", "He", "left"]
    assert doc.tokens["sent"].to_list() == [0, 0, 0, 0, 1, 1]
    assert doc.tokens["id"].to_list() == [1, 2, 3, 4, 1, 2]
    assert doc.tokens["line"].to_list() == [1, 2, 3, 4, 6, 7]
    assert doc.tokens["type"].to_list() == ["PER", "PER", None, "LOC", None, None]
    assert doc.sents["n_words"].to_list() == [4, 2]
    assert doc.sents["sent_id"].to_list() == ["1", "2"]


def test_conll2003_file_with_docstarts(tmp_path):
    doc = read_tags(write(tmp_path, "a.conll", CONLL03))
    assert doc.fmt == "conll2003"
    assert doc.tokens["form"].to_list() == ["EU", "rejects", "German", "call", "Peter",
                                            "Blackburn"]
    assert doc.tokens["tag"].to_list() == ["I-ORG", "O", "I-MISC", "O", "I-PER", "I-PER"]
    assert doc.sents["doc"].to_list() == [0, 1]       # a -DOCSTART- line starts a document
    assert doc.sents["line"].to_list() == [3, 10]
    tabs = read_tags(write(tmp_path, "b.conll", CONLL03.replace(" ", "\t")))
    assert tabs.fmt == "conll2003"
    assert tabs.tokens.drop("line").equals(doc.tokens.drop("line"))


def test_uner_file_with_comments(tmp_path):
    doc = read_tags(write(tmp_path, "a.iob2", UNER))
    assert doc.fmt == "uner"
    assert doc.sents["sent_id"].to_list() == ["s1", "s2"]
    assert doc.sents["text"].to_list() == ["John Smith visited Paris", None]
    assert doc.sents["doc_id"].to_list() == ["d1", "d1"]
    assert doc.tokens["line"].to_list() == [4, 5, 6, 7, 10]


def test_bundled_key_reads_the_same_in_both_formats():
    """gold.iob2 (UniversalNER) and gold.tsv (word<TAB>tag) hold the same tokens and tags."""
    a, b = read_tags(NER / "gold.iob2"), read_tags(NER / "gold.tsv")
    assert (a.fmt, b.fmt) == ("uner", "tsv")
    cols = ["sent", "id", "form", "tag"]
    assert a.tokens.select(cols).equals(b.tokens.select(cols))
    assert a.tokens.height == 25149 and a.sents.height == 2001
    assert a.sents["sent_id"][0].startswith("answers-")


def test_chunks_number_lines_sentences_and_documents_as_one_read(tmp_path):
    text = "".join(f"-DOCSTART-\tO\n\nw{i}\tB-X\nv{i}\tO\n\n" for i in range(40))
    path = write(tmp_path, "a.tsv", text)
    whole = read_tags(path)
    chunks = list(iter_tags(path, chunk_bytes=50))
    assert len(chunks) > 5
    assert pl.concat([c.tokens for c in chunks]).equals(whole.tokens)
    assert pl.concat([c.sents for c in chunks]).equals(whole.sents)
    assert whole.sents["doc"].to_list() == list(range(40))


def test_format_detection():
    assert detect_span_format("x", b"# c\n1\tJohn\tB-PER\t-\t-\n") == "uner"
    assert detect_span_format("x", b"John\tB-PER\n") == "tsv"
    assert detect_span_format("x", b"-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\n") == \
        "conll2003"


BAD = {
    # name: (content, extension, expected phrase, line)
    "bad_prefix": ("John\tX-PER\n", "tsv", "tag 'X-PER' is not O or B-/I-/E-/S-TYPE", 1),
    "empty_type": ("John\tB-\n", "tsv", "tag 'B-' is not", 1),
    "lower_case": ("a\tO\nb\tb-per\n", "tsv", "tag 'b-per'", 2),
    "three_columns": ("a\tO\nb\tO\tx\n", "tsv", "line has 3 columns; expected 2", 2),
    "spaces_not_tab": ("a\tO\n\nb O\n", "tsv", "separated by spaces, not tabs", 3),
    "empty_column": ("a\tO\n\tO\n", "tsv", "empty column", 2),
    "uner_columns": ("# sent_id = 1\n1\ta\tO\t-\n", "iob2", "line has 4 columns", 2),
    "uner_bad_id": ("1\ta\tO\t-\t-\nx\tb\tO\t-\t-\n", "iob2", "ID 'x' is not an integer", 2),
    "uner_skipped_id": ("1\ta\tO\t-\t-\n3\tb\tO\t-\t-\n", "iob2", "skipped word ID", 2),
    "comment_only_sentence": ("a\tO\n\n# sent_id = 2\n\nb\tO\n", "tsv", "only comments", 3),
    "conll03_columns": ("EU NNP B-NP I-ORG\nrejects VBZ O\n", "conll", "line has 3 columns", 2),
    "not_utf8": (b"a\tO\n\xe9t\tO\n", "tsv", "not valid UTF-8", 2),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_error_with_its_line(tmp_path, name):
    content, ext, phrase, line = BAD[name]
    path = write(tmp_path, f"{name}.{ext}", content)
    with pytest.raises(InputError) as e:
        read_tags(path)
    assert phrase in e.value.message
    assert (e.value.path, e.value.line) == (str(path), line)


def test_a_scheme_restricts_the_prefixes(tmp_path):
    path = write(tmp_path, "a.tsv", "a\tS-PER\n")
    assert read_tags(path, scheme="bioes").tokens["prefix"].to_list() == [4]
    with pytest.raises(InputError) as e:
        read_tags(path, scheme="iob2")
    assert "tag 'S-PER' is not O or B-/I-TYPE (--scheme iob2)" in e.value.message
    assert e.value.line == 1


def test_error_lines_are_the_files_across_chunks(tmp_path):
    text = "a\tO\n\n" * 30 + "b\tQ-X\n"
    with pytest.raises(InputError) as e:
        list(iter_tags(write(tmp_path, "a.tsv", text), chunk_bytes=16))
    assert e.value.line == 61


def test_mapping_file(tmp_path):
    assert read_mapping_file(NER / "map.tsv")["PERSON"] == "PER"
    assert read_mapping_file(NER / "map.tsv")["DATE"] == "O"
    assert len(read_mapping_file(NER / "map.tsv")) == 18
    good = write(tmp_path, "m.txt", "# comment\nPERSON=PER\n\nGPE\tLOC\n")
    assert read_mapping_file(good) == {"PERSON": "PER", "GPE": "LOC"}
    for text, phrase, line in (("PERSON PER X\n", "is not a mapping line", 1),
                               ("A=B\nA=C\n", "mapped twice", 2), ("# only\n", "no OLD", None)):
        with pytest.raises(InputError) as e:
            read_mapping_file(write(tmp_path, "bad.txt", text))
        assert phrase in e.value.message and e.value.line == line
