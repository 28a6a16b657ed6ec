"""Input formats: detection, CoNLL-X punctuation, word<TAB>tag, multiword tokens, empty nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import (
    KIND_EMPTY,
    KIND_RANGE,
    KIND_WORD,
    check_same_words,
    read_conll,
)
from sysdiff.transforms.tokens import (
    ShardWords,
    label_counts,
    punct_mask,
    view_matrix,
    vocab_from_counts,
)

CONLLX = ("1\tThe\tthe\tDT\tDT\t_\t2\tNMOD\t_\t_\n2\tcat\tcat\tNN\tNN\t_\t3\tSBJ\t_\t_\n"
          "3\tsat\tsit\tVBD\tVBD\t_\t0\tROOT\t_\t_\n4\t.\t.\t.\t.\t_\t3\tP\t_\t_\n\n")


def write(tmp: Path, name: str, text: str) -> Path:
    (tmp / name).write_text(text, encoding="utf-8")
    return tmp / name


def test_conllx_detected_and_ptb_punctuation_excluded(tmp_path):
    doc = read_conll(write(tmp_path, "k.conll", CONLLX))
    assert doc.fmt == "conllx"
    assert punct_mask(doc.words, doc.fmt).tolist() == [False, False, False, True]
    as_conllu = read_conll(write(tmp_path, "k.conllu", CONLLX))
    assert as_conllu.fmt == "conllu"  # by extension; UPOS '.' is not PUNCT there
    assert punct_mask(as_conllu.words, "conllu").tolist() == [False] * 4


def test_word_tag_file(tmp_path):
    doc = read_conll(write(tmp_path, "k.tsv", "The\tDT\ncat\tNN\n\nA\tDT\n"))
    assert doc.fmt == "tsv"
    assert doc.words["id"].to_list() == [1, 2, 1]
    assert doc.words["upos"].to_list() == ["DT", "NN", "DT"]
    assert doc.words["xpos"].to_list() == ["_"] * 3  # the one tag is scored once
    assert doc.sents["n_words"].to_list() == [2, 1]


def test_format_override_and_unknown_format(tmp_path):
    path = write(tmp_path, "k.txt", CONLLX)
    assert read_conll(path, "conllx").fmt == "conllx"
    with pytest.raises(InputError, match="unknown format 'xml'"):
        read_conll(path, "xml")


def test_ranges_and_empty_nodes_are_kept_but_not_units(tmp_path):
    text = ("# sent_id = a\n# text = du chat\n1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n"
            "1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_\n2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_\n"
            "2.1\tx\tx\tX\t_\t_\t_\t_\t_\t_\n3\tchat\tchat\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    doc = read_conll(write(tmp_path, "k.conllu", text))
    assert doc.tokens["kind"].to_list() == [KIND_RANGE, KIND_WORD, KIND_WORD, KIND_EMPTY,
                                            KIND_WORD]
    assert doc.words["form"].to_list() == ["de", "le", "chat"]
    assert doc.sents.row(0, named=True)["sent_id"] == "a"
    assert doc.sents.row(0, named=True)["text"] == "du chat"


def test_documents_from_newdoc(tmp_path):
    text = ("# newdoc id = d1\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n\n1\tb\tb\tX\t_\t_\t0\troot\t_\t_\n"
            "\n# newdoc id = d2\n1\tc\tc\tX\t_\t_\t0\troot\t_\t_\n\n")
    sents = read_conll(write(tmp_path, "k.conllu", text)).sents
    assert sents["doc"].to_list() == [0, 0, 1]
    assert sents["doc_id"].to_list() == ["d1", "d1", "d2"]


def test_forms_compared_after_nfc(tmp_path):
    key = read_conll(write(tmp_path, "k.conllu", "1\tcafé\t_\tX\t_\t_\t0\troot\t_\t_\n\n"))
    decomposed = "cafe\u0301"
    sys_ = read_conll(write(tmp_path, "s.conllu",
                            f"1\t{decomposed}\t_\tX\t_\t_\t0\troot\t_\t_\n\n"))
    check_same_words(key, sys_)  # no error: NFC-equal


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "k.conllu"
    path.write_bytes(CONLLX.replace("\n", "\r\n").encode())
    doc = read_conll(path)
    assert doc.words["deprel"].to_list() == ["NMOD", "SBJ", "ROOT", "P"]


def test_view_matrix_shares_one_code_space(tmp_path):
    key = read_conll(write(tmp_path, "k.conll", CONLLX)).words
    other = key.with_columns(key["upos"].replace({"NN": "NNS"}))
    counts = pl.concat([label_counts(f).with_columns(system=pl.lit(s))
                        for s, f in (("__key__", key), ("s", other))])
    vocab = vocab_from_counts(counts, {})
    assert list(vocab.labels["upos"]) == sorted({"DT", "NN", "NNS", "VBD", ".", "_"})
    shard = ShardWords(key, [other], 0, 1, np.array([key.height]), "conllx")
    m = view_matrix("upos", shard, vocab)
    assert (m.display[0] != m.gold).sum() == 1


def test_empty_first_column_is_an_error_not_a_blank_line(tmp_path):
    text = "1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n\tb\tb\tX\t_\t_\t1\tdep\t_\t_\n\n"
    path = write(tmp_path, "k.conllu", text)
    with pytest.raises(InputError, match="empty column") as e:
        read_conll(path)
    assert e.value.line == 2
