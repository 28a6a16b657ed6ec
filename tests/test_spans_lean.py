"""The lean span store: a system whose tag file is the key's but for its tags is read fast
(only the tags) and stored lean (``span_words``); every table users see is what the full
reader stores, and a file the fast reader cannot vouch for is read in full."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import sysdiff.flows.spans as flow
from sysdiff.flows.queries import query
from sysdiff.schemas.formats.fast_tags import separator, tag_frame
from sysdiff.schemas.formats.spans import read_tags
from tests.conftest import REPO, run_cli, snapshot
from tests.snapshot import table_dumps
from tests.test_spans_reader import CONLL03, TSV, UNER

NER = REPO / "data" / "ner"
SYSTEMS = ("spacy_sm-3.6.0.tsv", "spacy_sm-3.8.0.tsv")


def frame_of(text: str, fmt: str, key: str | None = None):
    """:func:`tag_frame` of ``text`` on the token lines of ``key`` (default: itself)."""
    lines = read_tags_text(key or text, fmt)["line"].to_numpy() - 1
    data = text.encode()
    return tag_frame(data, fmt, lines, separator(fmt, (key or text).encode(), int(lines[0])))


def read_tags_text(text: str, fmt: str):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        return read_tags(f.name, fmt).tokens
    finally:
        Path(f.name).unlink()


def retag(text: str, fmt: str) -> str:
    """``text`` with every tag changed (O -> B-X, anything else -> O), as a system might."""
    field = {"tsv": 1, "conll2003": 3, "uner": 2}[fmt]
    out = []
    for line in text.split("\n"):
        sep = "\t" if "\t" in line else " "
        parts = line.split(sep)
        if len(parts) > field and not line.startswith(("#", "-DOCSTART-")):
            parts[field] = "B-X" if parts[field] == "O" else "O"
        out.append(sep.join(parts))
    return "\n".join(out)


CASES = {"tsv": TSV, "conll2003": CONLL03, "uner": UNER,
         "conll2003-tabs": CONLL03.replace(" ", "\t").replace("-DOCSTART-\t-X-\t-X-\tO",
                                                              "-DOCSTART- -X- -X- O")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_only_the_tags_differ_same_frame_and_the_tags_are_the_full_reader_s(case):
    fmt, text = case.split("-")[0], CASES[case]
    other = retag(text, fmt)
    assert other != text
    mine, key = frame_of(other, fmt, text), frame_of(text, fmt)
    assert mine.digest == key.digest
    assert mine.values.gather(mine.codes).to_list() == read_tags_text(other, fmt)["tag"].to_list()
    assert key.values.gather(key.codes).to_list() == read_tags_text(text, fmt)["tag"].to_list()


@pytest.mark.parametrize("long", ["B-WORK_OF_ART", "B-A_TYPE_OF_MORE_THAN_24_BYTES"])
def test_long_tags_beside_short_ones_are_the_full_reader_s(long):
    """Tags of 13 and 29 bytes beside one-byte ones, a short one on the file's last line:
    the full reader's tags, the key's frame (and a byte outside ASCII in a long tag is left
    to the full reader)."""
    other = retag(TSV, "tsv").replace("B-X", long)
    last = other.rstrip("\n").rsplit("\n", 1)[1]
    other = other[:other.rindex(last)] + last.rsplit("\t", 1)[0] + "\tO\n"
    assert long in other and other.endswith("\tO\n")
    mine = frame_of(other, "tsv", TSV)
    assert mine.digest == frame_of(TSV, "tsv").digest
    assert mine.values.gather(mine.codes).to_list() == read_tags_text(other, "tsv")["tag"].to_list()
    assert frame_of(other.replace(long, long[:-1] + "Ö"), "tsv", TSV) is None  # not ASCII


@pytest.mark.parametrize("change", [
    ("Smith\t", "Smyth\t"),          # a form
    ("\n\nHe", "\nHe"),               # a sentence boundary
    ("Paris\tB-LOC", "Paris\tB-LOC\tx"),  # an extra column
    ("visited\tO\n", "visited\tO\n\n"),  # a blank line more
])
def test_anything_but_a_tag_changes_the_frame(change):
    other = TSV.replace(*change)
    assert other != TSV
    found = frame_of(other, "tsv", TSV)
    assert found is None or found.digest != frame_of(TSV, "tsv").digest


def test_a_comment_or_document_line_changes_the_frame():
    other = UNER.replace("# sent_id = s2", "# sent_id = s3")
    assert frame_of(other, "uner", UNER).digest != frame_of(UNER, "uner").digest
    other = CONLL03.replace("-DOCSTART- -X- -X- O\n\nPeter", "-DOCSTART- -X- -X- B-X\n\nPeter")
    assert frame_of(other, "conll2003", CONLL03).digest != frame_of(CONLL03, "conll2003").digest


@pytest.mark.parametrize("text", [
    TSV.replace("\n", "\r\n"),              # carriage returns
    TSV.rstrip("\n"),                       # no final newline
    TSV.replace("visited\tO", "visited\t"),  # an empty tag
    TSV.replace("visited\tO", "visited\tÖ"),  # a tag not in ASCII
    TSV.replace("visited\tO", "visited"),   # no tag field
])
def test_the_full_reader_decides_what_the_fast_one_cannot_vouch_for(text):
    assert frame_of(text, "tsv", TSV) is None


# ------------------------------------------------------------------------------ the flow


def run(root: Path, key: Path, *systems: str, scheme: str = "auto") -> tuple[int, str]:
    args = [f"--system={s}" for s in systems]
    code, _out, err = run_cli("run", "--task", "ner", "--corpus", "uner", "--key", str(key),
                              "--map", str(NER / "map.tsv"), "--scheme", scheme,
                              "--ar-trials", "50", "-w", str(root), *args)
    return code, err


def stored_lean(root: Path) -> list[str]:
    return sorted(r["system"] for r in query(
        root, "select distinct system from stored.span_words").to_dicts())


@pytest.mark.parametrize("scheme", ["auto", "iob2"])
def test_lean_systems_leave_every_table_as_the_full_read_stores_it(tmp_path, monkeypatch,
                                                                   prefect_harness, scheme):
    systems = [f"{f[:-4]}={NER / f}" for f in SYSTEMS]
    run(tmp_path / "lean", NER / "gold.tsv", *systems, scheme=scheme)
    monkeypatch.setattr(flow, "LEAN_BYTES", 0)  # every file read in full
    run(tmp_path / "full", NER / "gold.tsv", *systems, scheme=scheme)
    assert stored_lean(tmp_path / "lean") == ["spacy_sm-3.6.0", "spacy_sm-3.8.0"]
    assert stored_lean(tmp_path / "full") == []
    lean, full = table_dumps(tmp_path / "lean"), table_dumps(tmp_path / "full")
    assert "span_tokens" in lean and "sents" in lean
    assert lean == full
    stored = query(tmp_path / "lean", "select count(*) n, count(distinct system) s "
                   "from stored.span_tokens").row(0)
    tokens = query(tmp_path / "lean", "select count(*) from span_tokens "
                   "where system = '__key__'").item()
    assert stored == (tokens, 1)  # only the key's tokens are stored in full
    paths = list((tmp_path / "lean" / "tables" / "span_words").rglob("*.parquet"))
    assert len(paths) == 2
    for path in paths:
        stored = pq.read_table(path)  # no sentence or ID: row n is the key's token n
        assert stored.column_names == ["corpus", "system", "tag", "label"]
        assert stored.num_rows == tokens


def test_a_bad_tag_in_the_key_s_frame_is_reported_at_its_line(tmp_path, prefect_harness):
    lines = (NER / SYSTEMS[0]).read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.endswith("\tB-GPE"))
    lines[at] = lines[at].replace("\tB-GPE", "\tB_GPE")
    bad = tmp_path / "bad.tsv"
    bad.write_text("\n".join(lines))
    root = tmp_path / "wh"
    assert run(root, NER / "gold.tsv", f"a={NER / SYSTEMS[1]}")[0] == 0
    before = snapshot(root)
    code, err = run(root, NER / "gold.tsv", f"a={NER / SYSTEMS[1]}", f"bad={bad}")
    assert code == 2
    assert re.search(rf"bad\.tsv:{at + 1}: tag 'B_GPE' is not O or B-/I-/E-/S-TYPE",
                     err), err
    assert snapshot(root) == before


def test_a_system_changing_layout_keeps_one_copy_of_its_tokens(tmp_path, prefect_harness):
    """A system read in full (its frame is not the key's: a comment more), then lean (the
    same name, now the key's frame), then in full again: one set of tokens and sentences
    each time, its own."""
    key = NER / "gold.tsv"
    lean_text = (NER / SYSTEMS[0]).read_text()
    system, root = tmp_path / "sys.tsv", tmp_path / "wh"
    scores = []
    for step, text in enumerate([f"# a comment\n{lean_text}", lean_text, f"# again\n{lean_text}"]):
        system.write_text(text)
        assert run(root, key, f"s={system}")[0] == 0
        assert stored_lean(root) == ([] if step != 1 else ["s"])
        tokens, sents = (query(root, f"select system, count(*) n from {t} group by system "
                               "order by system").rows() for t in ("span_tokens", "sents"))
        assert tokens[0][0] == "__key__" and tokens == [("__key__", tokens[0][1]),
                                                         ("s", tokens[0][1])]
        assert sents == [("__key__", sents[0][1]), ("s", sents[0][1])]
        scores.append(query(root, "select * exclude (options) from span_scores "
                            "where system = 's' order by all").rows())
    assert scores[0] and scores[0] == scores[1] == scores[2]
