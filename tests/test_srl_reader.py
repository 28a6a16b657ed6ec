"""The SRL readers: the four layouts detected and read (predicates, arguments, C- merging),
and every bad input refused with one InputError naming the file's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.srl import detect_srl_format, read_srl
from tests.srl_expected import SRL

UP = ("# sent_id = s1\n# text = Mary gave John books\n"
      "1\tMary\tMary\tPROPN\tNNP\t_\t2\tnsubj\t_\t_\t_\tARG0\n"
      "2\tgave\tgive\tVERB\tVBD\t_\t0\troot\t_\t_\tgive.01\tV\n"
      "3\tJohn\tJohn\tPROPN\tNNP\t_\t2\tiobj\t_\t_\t_\tARG2\n"
      "4\tbooks\tbook\tNOUN\tNNS\t_\t2\tobj\t_\t_\t_\tARG1|ARGM-X\n\n"
      "# sent_id = s2\n1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\t_\t_\t\n\n")
C05 = ("Mary\t-\t(A0*)\n"
       "said\tsay\t(V*)\n"
       "that\t-\t(A1*\n"
       "rain\t-\t*)\n"
       "he\t-\t(C-A1*\n"
       "thinks\t-\t*)\n\n"
       "Hi\t-\n\n")


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


def error(tmp: Path, text: str, name: str = "x.txt", fmt: str | None = None) -> InputError:
    with pytest.raises(InputError) as e:
        read_srl(write(tmp, name, text), fmt)
    return e.value


@pytest.mark.parametrize(("case", "fmt"), [("key.conllu", "conllu"),
                                            ("key.conll09", "conll09"),
                                            ("key.conll05", "conll05")])
def test_the_bundled_layouts_are_detected(case, fmt):
    assert detect_srl_format(SRL / case, (SRL / case).read_bytes()) == fmt
    doc = read_srl(SRL / case)
    assert (doc.tokens.height, doc.sents.height, doc.preds.height) == (6422, 374, 1269)


def test_conllu_roles_on_heads_v_dropped_and_split(tmp_path):
    doc = read_srl(write(tmp_path, "k.conllu", UP))
    assert doc.preds.select("pred", "roleset", "sense", "sense_key", "pos").rows() == [
        (2, "give.01", "01", "1", "VBD")]
    assert doc.args.select("pred", "start", "role").rows() == [
        (2, 1, "ARG0"), (2, 3, "ARG2"), (2, 4, "ARG1"), (2, 4, "ARGM-X")]
    assert doc.sents["sent_id"].to_list() == ["s1", "s2"]  # s2: no predicate, trailing tab
    assert doc.tokens["head"].to_list() == [2, 0, 2, 2, 0]


def test_conll05_continuations_become_one_argument(tmp_path):
    doc = read_srl(write(tmp_path, "k.conll05", C05))
    assert doc.fmt == "conll05"
    assert doc.args.select("start", "end", "role", "pieces").rows() == [
        (1, 1, "A0", "1-1"), (2, 2, "V", "2-2"), (3, 6, "A1", "3-4,5-6")]
    props = read_srl(write(tmp_path, "k.props", "\n".join(
        line.split("\t", 1)[1] if line else "" for line in C05.split("\n"))))
    assert props.fmt == "props"
    assert props.args.equals(doc.args)
    assert props.tokens["form"].null_count() == props.tokens.height


def test_a_continuation_without_its_head_is_a_plain_argument(tmp_path):
    text = "a\t-\t(C-A1*)\nb\tgo\t(V*)\nc\t-\t(C-A1*)\n\n"
    doc = read_srl(write(tmp_path, "k.conll05", text))
    assert doc.args.select("start", "end", "role", "pieces").rows() == [
        (1, 3, "A1", "1-1,3-3"), (2, 2, "V", "2-2")]


BAD = [
    # (layout, text, line, words of the message)
    ("conllu", UP.replace("\tARG2\n", "\tARG2\t_\n"), 5, "line has 13 columns; expected 12"),
    ("conllu", UP.replace("1\tMary\tMary\tPROPN", "1 Mary Mary PROPN").replace("\t", " ", 11),
     3, "spaces, not tabs"),
    ("conllu", UP.replace("3\tJohn", "4\tJohn"), 5, "skipped word ID"),
    ("conllu", UP.replace("3\tJohn", "2\tJohn"), 5, "duplicate word ID"),
    ("conllu", UP.replace("\t2\tiobj", "\t9\tiobj"), 5, "HEAD 9 is out of range"),
    ("conllu", UP.replace("\t2\tiobj", "\tx\tiobj"), 5, "HEAD 'x' is not an integer"),
    ("conllu", UP.replace("\tNNP\t_\t2\tiobj", "\tNNP\t\t2\tiobj"), 5, "empty column"),
    ("conllu", "# global.columns = ID FORM LEMMA\n" + UP, 1, "global.columns"),
    ("conll05", C05.replace("*)\nhe", "*\nhe"), 5, "inside another"),
    ("conll05", C05.replace("(C-A1*\n", "*\n"), 6, "never opened"),
    ("conll05", C05.replace("thinks\t-\t*)", "thinks\t-\t*"), 5, "never closed"),
    ("conll05", C05.replace("(A0*)", "(A0*)*"), 1, "not a Start-End tag"),
    ("conll05", C05.replace("rain\t-\t*)", "rain\t-\t*A2)"), 4, "closes a 'A2' phrase"),
    ("conll05", C05.replace("said\tsay\t(V*)", "said\tsay\t(V*)\t*"), 2,
     "line has 4 columns; expected 3"),
    ("conll05", C05.replace("Hi\t-", "Hi\tgo"), 8, "line has 2 columns; expected 3"),
]


@pytest.mark.parametrize(("fmt", "text", "line", "words"), BAD)
def test_bad_inputs_name_the_line(tmp_path, fmt, text, line, words):
    e = error(tmp_path, text, f"x.{fmt}", fmt if "global" not in text else None)
    assert e.line == line, str(e)
    assert words in e.message, str(e)
    assert e.path.endswith(f"x.{fmt}")


def test_conll09_wrong_number_of_apred_columns(tmp_path):
    text = (SRL / "key.conll09").read_text(encoding="utf-8").split("\n\n")[0] + "\n\n"
    bad = text.replace("\tcome.03\t_\n", "\tcome.03\t_\t_\n")
    e = error(tmp_path, bad, "x.conll09")
    assert e.line == 4
    assert e.message.startswith("line has 16 columns; expected 15"), e.message


@pytest.mark.parametrize(("data", "words"), [
    (b"", "empty"), (b"1\tx\x00\n", "binary"), (b"1\tcaf\xe9\t_\n\n", "UTF-8"),
    (b"# only a comment\n", "only comments"),
    (b"1 a b c d e f g h i j\n", "spaces, not tabs"),
    (b"w\tv\tx\n\n", "no Start-End tag")])
def test_files_that_are_no_srl_at_all(tmp_path, data, words):
    p = tmp_path / "bad.txt"
    p.write_bytes(data)
    with pytest.raises(InputError) as e:
        read_srl(p)
    assert words in e.value.message, e.value.message
