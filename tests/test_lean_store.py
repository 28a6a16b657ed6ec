"""The lean token store: a system read on the key's words keeps only the codes of what its
task evaluates; the ``units`` view shows its words as before; large files are read range by
range; a file the fast reader cannot vouch for is read in full, with the same tables."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sysdiff.flows.queries import query
from sysdiff.schemas.formats.conllu import read_conll
from sysdiff.schemas.formats.fast_words import fast_words, form_hashes
from sysdiff.schemas.formats.ranges import RangeFinder
from tests.conftest import SEQUOIA, run_cli
from tests.snapshot import digests
from tests.test_scale import first_sentences

SYSTEMS = {"sm": "fr_core_news_sm-3.8.0.conllu", "md": "fr_core_news_md-3.8.0.conllu",
           "ud": "seqsm_local-ud2.8.conllu"}
DEP_FIELDS = ("lemma", "upos", "xpos", "feats", "head", "deprel")


def sentence_starts(data: bytes) -> list[int]:
    """Byte offsets of every sentence start, by splitting on blank lines (the reference)."""
    starts, pos = [], 0
    for block in data.split(b"\n\n"):
        if block.strip(b"\n"):
            starts.append(pos)
        pos += len(block) + 2
    return starts


@pytest.mark.parametrize("target", [1, 997, 20_000, 10**9])
@pytest.mark.parametrize("block", [7, 4096, 1 << 20])
def test_ranges_are_whole_sentences_numbered_from_the_file(target, block):
    data = (SEQUOIA / "key.conllu").read_bytes()
    finder = RangeFinder(target)
    for k in range(0, len(data), block):
        finder.feed(data[k:k + block])
    ranges = finder.ranges()
    starts = sentence_starts(data)
    if target >= len(data):
        assert ranges is None
        return
    assert ranges[0].start == 0 and ranges[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(ranges, ranges[1:], strict=False))
    for r in ranges:  # each cut is a sentence start, numbered as the file numbers it
        assert starts[r.first_sent] == r.start
        assert r.end - r.start >= min(target, len(data) - r.start) or r is ranges[-1]


@pytest.mark.parametrize("text", [b"\n1\ta\n\n", b"1\ta\r\n\r\n2\tb\r\n"])
def test_a_file_with_irregular_blank_lines_is_not_cut(text):
    finder = RangeFinder(1)
    finder.feed(text)
    assert finder.ranges() is None


@pytest.mark.parametrize("name", ["key.conllu", *SYSTEMS.values()])
def test_the_fast_reader_gives_the_full_readers_words(name):
    path = SEQUOIA / name
    found = fast_words(path.read_bytes(), "conllu", DEP_FIELDS)
    doc = read_conll(path)
    words = doc.words
    assert found is not None and found.n_sents == doc.sents.height
    assert np.array_equal(found.n_words, doc.sents["n_words"].to_numpy())
    assert np.array_equal(found.form_hash, form_hashes(words["form"]))
    assert np.array_equal(found.id, words["id"].to_numpy())
    assert np.array_equal(found.head, words["head"].fill_null(-1).to_numpy())
    for field in DEP_FIELDS[:-2] + ("deprel",):
        codes, labels = found.labels[field]
        assert labels == sorted(set(labels)), field  # a code is a position among them
        assert [labels[c] for c in codes] == words[field].to_list(), field
    from sysdiff.transforms.alignment import token_count

    assert found.n_tokens == token_count(doc.tokens)


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("\n", "\r\n"),  # line ends the full reader takes
    lambda t: t.replace("\t_\t", "\t\t", 1),  # an empty column: the full reader's error
    lambda t: re.sub(r"\n(\d+)\t", lambda m: f"\n{m[1]}\t", t, count=1) + "\n",  # 2 blanks
    lambda t: t.replace("# text = ", "# text =\t", 1),  # a comment holding a tab
    # a comment of 10 columns and a word line of its ID only: the tab count adds up
    lambda t: re.sub(r"\n(3)\t[^\n]*", r"\n\1", t.replace(
        "# text = ", "# text = " + "\tx" * 9 + " ", 1), count=1),
    lambda t: t + "# a sentence of comments only\n\n",
    lambda t: t.replace("\n\n", "\n\n# a sentence of comments only\n\n", 1),
    lambda t: "# a comment\n\n" + t,
])
@pytest.mark.parametrize("fields", [DEP_FIELDS, ("upos", "xpos", "feats")])
def test_what_the_fast_reader_cannot_vouch_for_is_left_to_the_full_reader(edit, fields):
    text = (SEQUOIA / SYSTEMS["sm"]).read_text(encoding="utf-8")
    assert fast_words(text.encode(), "conllu", fields) is not None
    assert fast_words(edit(text).encode(), "conllu", fields) is None


def test_a_comment_line_enters_its_sentences_frame_at_its_place():
    """Moving a comment line within its sentence, or changing its text, changes the digest
    of that sentence only."""
    text = (SEQUOIA / SYSTEMS["sm"]).read_text(encoding="utf-8")
    first = text.index("# text = ")
    line = text[first:text.index("\n", first) + 1]
    word = text.index("\n1\t", first) + 1
    after = text.index("\n", word) + 1
    moved = text[:first] + text[first + len(line):after] + line + text[after:]
    renamed = text.replace(line, line.replace("# text = ", "# text = x"), 1)
    base = fast_words(text.encode(), "conllu", DEP_FIELDS)
    assert base is not None
    sent = text[:first].count("\n\n")
    for other in (moved, renamed):
        found = fast_words(other.encode(), "conllu", DEP_FIELDS)
        assert found is not None
        assert np.flatnonzero(found.digest != base.digest).tolist() == [sent]
        assert np.array_equal(found.form_hash, base.form_hash)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("lean")
    out = {"key": first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 120)}
    for name, f in SYSTEMS.items():
        out[name] = first_sentences(SEQUOIA / f, tmp / f, 120)
    return out


def run(files: dict[str, Path], root: Path, *options: str, **paths: Path) -> None:
    systems = [f"--system={n}={paths.get(n, files[n])}" for n in SYSTEMS]
    code, _, err = run_cli("run", "--key", str(files["key"]), *systems, "--corpus", "c",
                           "--task", "dep", "--ar-trials", "50", "-w", str(root), *options)
    assert code == 0, err


@pytest.fixture(scope="module")
def whole(files, tmp_path_factory, prefect_harness) -> Path:
    root = tmp_path_factory.mktemp("whole") / "wh"
    run(files, root)
    return root


def test_systems_are_stored_lean_and_units_shows_their_words(files, whole):
    layout = query(whole, "select system, alignment from systems order by 1").rows()
    assert layout == [("__key__", "identical"), *((s, "identical") for s in sorted(SYSTEMS))]
    stored = query(whole, "select distinct system from stored.units")["system"].to_list()
    assert stored == ["__key__"]  # the systems keep no record of their own
    for name in SYSTEMS:
        words = read_conll(files[name]).words
        got = query(whole, f"select form, lemma, upos, xpos, feats, head, deprel from units "
                           f"where system = '{name}' and kind = 0 order by sent, id")
        want = words.select("form", "lemma", "upos", "xpos", "feats", "head", "deprel")
        assert got.equals(want), name


def test_a_lean_system_stores_no_sentence_or_id_and_is_read_shard_by_shard(files, whole,
                                                                          tmp_path,
                                                                          monkeypatch):
    """A lean partition holds one row per key word and no position of its own (row n is
    the key's word n); compared in shards of a few sentences, each shard's rows found by
    their position, every table is the one-shard run's."""
    n_words = query(whole, "select count(*) from stored.units where system = '__key__' "
                           "and kind = 0").item()
    for name in SYSTEMS:
        [path] = (whole / "tables" / "words").rglob(f"system={name}/*.parquet")
        stored = pq.read_table(path)
        assert "sent" not in stored.column_names and "id" not in stored.column_names
        assert stored.num_rows == n_words
    import sysdiff.flows.tokens as flow

    firsts: set[int] = set()

    def reading(path: str, key):  # noqa: ANN001, ANN202
        firsts.add(int(key["word"][0]))
        return read_shard_codes(path, key)

    read_shard_codes = flow.read_shard_codes
    monkeypatch.setattr(flow, "read_shard_codes", reading)
    root = tmp_path / "wh"
    run(files, root, "--shard-sents", "7")
    assert len(firsts) > 10 and min(firsts) == 0
    assert digests(root) == digests(whole)


def test_ranges_read_by_tasks_of_their_own_give_the_same_tables(files, whole, tmp_path,
                                                                 monkeypatch):
    import sysdiff.flows.token_ingest as ingest

    cut: list[int] = []

    class Counting(RangeFinder):
        def ranges(self):
            found = super().ranges()
            cut.append(len(found or ()))
            return found

    monkeypatch.setattr(ingest, "RangeFinder", Counting)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")
    run(files, tmp_path / "wh")
    # every system read in ranges, and the key's frame taken range by range
    assert len(cut) == len(SYSTEMS) + 1 and min(cut) > 5
    assert digests(tmp_path / "wh") == digests(whole)


def test_a_system_added_on_a_key_read_by_an_earlier_run_is_stored_lean(files, whole,
                                                                       tmp_path):
    """The key of an earlier run gets its frame anew, and its shape from its stored words
    (``live_key_shape``): a system added now is read fast and stored lean, and the tables
    are those of one run with every system."""
    root = tmp_path / "wh"
    first = next(iter(SYSTEMS))
    code, _, err = run_cli("run", "--key", str(files["key"]), f"--system={first}={files[first]}",
                           "--corpus", "c", "--task", "dep", "--ar-trials", "50", "-w", str(root))
    assert code == 0, err
    run(files, root)  # the key and the first system unchanged: reused, the others read now
    assert query(root, "select distinct system from stored.words order by 1")[
        "system"].to_list() == sorted(SYSTEMS)
    assert query(root, "select distinct system from stored.units")["system"].to_list() == [
        "__key__"]
    got, want = digests(root), digests(whole)
    assert {t for t in want if got.get(t) != want[t]} == set()


def held_key_read(monkeypatch, ingest, until) -> list[bool]:  # noqa: ANN001 (modules)
    """The key's full read held back (at most 60 s) until ``until`` (a threading.Event) is
    set; the list gets whether it was set in time."""
    seen: list[bool] = []
    full = ingest.ingest_full

    def held(job):  # noqa: ANN001, ANN202
        if job.key is None:
            seen.append(until.wait(60))
        return full(job)

    monkeypatch.setattr(ingest, "ingest_full", held)
    return seen


def test_large_systems_are_read_on_the_keys_frame_before_its_full_read_ends(
        files, whole, tmp_path, monkeypatch):
    """The first large systems' ranges are read once the key's frame is in, while the key's
    full read goes on (no worker waits for it), and staged once it ends: the same tables."""
    import threading

    import sysdiff.flows.token_ingest as ingest

    a_range_read = threading.Event()
    read_piece = ingest.read_piece

    def reading(*args):  # noqa: ANN002, ANN202
        out = read_piece(*args)
        a_range_read.set()
        return out

    monkeypatch.setattr(ingest, "read_piece", reading)
    seen = held_key_read(monkeypatch, ingest, a_range_read)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")
    run(files, tmp_path / "wh")
    assert seen == [True]  # a system's range was read while the key's full read waited
    assert query(tmp_path / "wh", "select distinct system from stored.units")[
        "system"].to_list() == ["__key__"]  # every system lean
    assert digests(tmp_path / "wh") == digests(whole)


def test_systems_read_on_a_frame_the_full_read_disowns_are_read_again(files, whole, tmp_path,
                                                                      monkeypatch):
    """A frame whose shape (words per sentence, forms) is not the full read's is not the
    key's: the systems whose ranges were read on it are read again in full, none is stored
    lean, and the tables are the same."""
    import threading

    import sysdiff.flows.token_ingest as ingest

    key_frame, started = ingest.KeyFrame, threading.Event()

    def disowned(sha256: str, folder: str, shape: str = ""):  # noqa: ANN202
        return key_frame(sha256, folder, "not the full read's")

    start_early = ingest.RangedIngest.__init__

    def starting(self, job, plan=None):  # noqa: ANN001, ANN202
        start_early(self, job, plan)
        if not job.key.systems:
            started.set()

    monkeypatch.setattr(ingest, "KeyFrame", disowned)
    monkeypatch.setattr(ingest.RangedIngest, "__init__", starting)
    seen = held_key_read(monkeypatch, ingest, started)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")
    run(files, tmp_path / "wh")
    assert seen == [True]  # systems were started on the frame
    assert query(tmp_path / "wh", "select distinct system from stored.units order by 1")[
        "system"].to_list() == ["__key__", *sorted(SYSTEMS)]  # all read in full
    got, want = digests(tmp_path / "wh"), digests(whole)
    assert {t for t in want if got.get(t) != want[t]} == set()


@pytest.mark.parametrize("stage", ["plan_pass", "read_piece"])
def test_a_failed_stage_of_a_ranged_file_ends_the_run_with_its_error(stage, files, tmp_path,
                                                                      monkeypatch):
    """A large file's plan (or one of its ranges) failing is that file's error, at once: the
    ingest loop waited for its next stage forever (the error was kept for later, and the
    file was never ready)."""
    import threading

    import sysdiff.flows.token_ingest as ingest
    from sysdiff.schemas.errors import InputError

    original, victim = getattr(ingest, stage), str(files["md"])

    def fail(first, *args):  # noqa: ANN001, ANN002, ANN202 (the key's frame reads on)
        if str(getattr(getattr(first, "source", None), "path", first)) == victim:
            raise InputError("cannot read it (a test's failure)", victim)
        return original(first, *args)

    monkeypatch.setattr(ingest, stage, fail)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")
    out: list = []
    systems = [f"--system={n}={files[n]}" for n in SYSTEMS]
    thread = threading.Thread(daemon=True, target=lambda: out.append(run_cli(
        "run", "--key", str(files["key"]), *systems, "--corpus", "c", "--task", "dep",
        "--ar-trials", "50", "-w", str(tmp_path / "wh"))))
    thread.start()
    thread.join(180)
    assert not thread.is_alive(), "the run still waits for the file whose stage failed"
    code, _out, err = out[0]
    assert code == 2 and "a test's failure" in err, err
    assert not (tmp_path / "wh" / "manifest.json").exists()  # nothing committed


def test_a_file_read_in_full_gives_the_same_tables(files, whole, tmp_path):
    crlf = tmp_path / "crlf.conllu"
    crlf.write_bytes(files["sm"].read_bytes().replace(b"\n", b"\r\n"))
    run(files, tmp_path / "wh", sm=crlf)
    assert query(tmp_path / "wh", "select distinct system from stored.units order by 1")[
        "system"].to_list() == ["__key__", "sm"]  # read in full
    got, want = digests(tmp_path / "wh"), digests(whole)
    changed = {t for t in want if got.get(t) != want[t]}
    assert changed == {"systems"}  # its hash: units and sents the same whichever way read


def edit_lines(text: str, change) -> str:
    """The text with ``change(line)`` applied to every line (None: the line is kept)."""
    return "\n".join(change(line) or line for line in text.split("\n"))


def set_column(column: int, value: str, every: int):
    """A change that puts ``value`` in one column of every ``every``-th word line."""
    def change(line: str) -> str | None:
        cells = line.split("\t")
        if len(cells) == 10 and cells[0].isdigit() and int(cells[0]) % every == 0:
            cells[column] = value
            return "\t".join(cells)
        return None
    return change


EDITS = {  # name -> (change, stored lean?)
    "misc": (set_column(9, "SpaceAfter=No|Note=x", 3), True),
    "deps": (set_column(8, "2:nsubj", 4), True),
    "sent_id": (lambda line: line.replace("# sent_id = ", "# sent_id = x-")
                if line.startswith("# sent_id") else None, False),
    "comment": (lambda line: line + "\n# note = added" if line.startswith("# text") else None,
                False),
    "range misc": (lambda line: line[:-1] + "Typo=Yes" if re.match(r"^\d+-\d+\t", line)
                   else None, False),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_what_a_lean_system_does_not_store_is_the_keys_or_it_is_read_in_full(
        files, tmp_path, edit):
    """A system stored lean shows in ``units`` and ``sents`` what it would show read in
    full: its DEPS and MISC where they differ from the key's; a file whose comments, line
    numbers or multiword ranges are not the key's is read in full."""
    change, lean = EDITS[edit]
    edited = tmp_path / "sm.conllu"
    edited.write_text(edit_lines(files["sm"].read_text(encoding="utf-8"), change),
                      encoding="utf-8")
    full = tmp_path / "crlf.conllu"  # the same file, that the fast reader never takes
    full.write_bytes(edited.read_bytes().replace(b"\n", b"\r\n"))
    run(files, tmp_path / "fast", sm=edited)
    run(files, tmp_path / "full", sm=full)
    stored = query(tmp_path / "fast", "select count(*) as n from stored.words "
                                      "where system = 'sm'")["n"][0]
    assert (stored > 0) == lean
    got, want = digests(tmp_path / "fast"), digests(tmp_path / "full")
    assert {t for t in want if got.get(t) != want[t]} == {"systems"}
    sql = "select * from units where system = 'sm' order by all"
    assert query(tmp_path / "fast", sql).equals(query(tmp_path / "full", sql))


def test_a_system_read_again_in_another_way_is_shown_once(files, tmp_path):
    root = tmp_path / "wh"
    crlf = tmp_path / "crlf.conllu"
    crlf.write_bytes(files["sm"].read_bytes().replace(b"\n", b"\r\n"))
    run(files, root, sm=crlf)
    crlf.write_bytes(files["sm"].read_bytes())  # fixed: now read fast, stored lean
    run(files, root, sm=crlf)
    rows = query(root, "select count(*) as n from units where system = 'sm'")["n"][0]
    assert rows == read_conll(files["sm"]).tokens.height  # words and multiword ranges
    assert query(root, "select count(*) as n from stored.units where system = 'sm'")[
        "n"][0] == 0


def test_the_lean_store_is_small(files, whole):
    """A system's lean partition is under half the full record it stored before (the
    key's ``units`` partition: the same words, every field)."""
    def size(table: str, system: str) -> int:
        return sum(f.stat().st_size for f in (whole / "tables" / table).rglob("*.parquet")
                   if f"system={system}/" in str(f))

    for name in SYSTEMS:
        assert size("words", name) * 2 < size("units", "__key__"), name


def test_two_blank_lines_in_a_ranged_file_send_it_to_the_full_reader(files, whole, tmp_path,
                                                                      monkeypatch):
    """The ranges are numbered by blank lines; a doubled blank line shifts the numbering,
    the ranges' sentences then differ from the key's, and the file is read in full."""
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", "3000")
    text = files["md"].read_text(encoding="utf-8")
    middle = text.index("\n\n", len(text) // 2)
    doubled = tmp_path / "doubled.conllu"
    doubled.write_text(text[:middle] + "\n" + text[middle:], encoding="utf-8")
    run(files, tmp_path / "wh", md=doubled)
    assert query(tmp_path / "wh", "select count(*) as n from stored.units where system = 'md'"
                 )["n"][0] > 0  # read in full
    sql = "select * from scores order by all"
    assert query(tmp_path / "wh", sql).equals(query(whole, sql))


def test_the_key_frame_is_written_range_by_range(tmp_path, monkeypatch):
    """The key's frame task appends each range's arrays to their files as it reads them
    (the task holds one range, never the key's 8 bytes a word): the files hold the arrays of
    the whole key, and its shape is the full reader's."""
    from sysdiff.flows.token_ingest import (
        FrameJob,
        FrameWriter,
        frame_arrays,
        frame_file,
        frame_key,
        load_array,
        shape_of,
    )

    data = (SEQUOIA / "key.conllu").read_bytes()
    whole = fast_words(data, "conllu", ())
    want = frame_arrays(whole)
    assert set(want) == {"digest", "n_words", "forms", "deps", "misc"}
    sizes, add = [], FrameWriter.add

    def add_and_look(self, arrays):  # noqa: ANN001, ANN202
        add(self, arrays)
        for f in self.open.values():
            f.flush()
        sizes.append(os.path.getsize(frame_file(str(self.folder), "forms")))

    monkeypatch.setattr(FrameWriter, "add", add_and_look)
    monkeypatch.setenv("SYSDIFF_RANGE_BYTES", str(len(data) // 7))  # the frame in 7 ranges
    frame = frame_key.fn(FrameJob(str(SEQUOIA / "key.conllu"), "conllu", str(tmp_path)))
    assert len(sizes) == 7 and sizes == sorted(sizes) and sizes[-1] == 8 * whole.form_hash.size
    assert sizes[0] < sizes[-1] / 2  # written as each range was read
    for name, values in want.items():
        assert np.array_equal(load_array(frame_file(frame.folder, name)), values)
    doc = read_conll(SEQUOIA / "key.conllu")  # its shape is the full reader's
    assert frame.shape == shape_of([doc.sents["n_words"].to_numpy()],
                                   [form_hashes(doc.words["form"])])


@pytest.mark.parametrize("bootstrap", ["200", "0"])
def test_lean_tags_are_counted_on_their_codes_as_on_their_strings(files, tmp_path, monkeypatch,
                                                                  prefect_harness, bootstrap):
    """A pos run: the CoNLL 2018 tag counts of lean systems, and with intervals each
    sentence's rows that they draw from, compared on codes equal the comparison of the
    decoded strings (every table of the warehouse)."""
    import sysdiff.flows.tokens as flow
    from sysdiff.transforms import conll18

    def by_strings(job, key, words, gold, shard):  # noqa: ANN001, ANN202
        return {s: conll18.sentence_counts(key, flow.labelled(job, words, s), gold, job.tree,
                                           shard.lo, shard.hi - shard.lo) for s in job.conll18}

    def totals_by_strings(job, key, words, gold, shard):  # noqa: ANN001, ANN202
        return {s: conll18.tag_counts(key, flow.labelled(job, words, s), gold)
                for s in job.conll18}

    def pos_run(root: Path) -> dict:
        systems = [f"--system={n}={files[n]}" for n in SYSTEMS]
        code, _, err = run_cli("run", "--key", str(files["key"]), *systems, "--corpus", "c",
                               "--task", "pos", "--bootstrap", bootstrap, "--ar-trials", "50",
                               "--shard-sents", "40", "-w", str(root))
        assert code == 0, err
        return digests(root, "all")

    coded = pos_run(tmp_path / "coded")
    lean = query(tmp_path / "coded", "select distinct system from stored.words")
    assert sorted(lean["system"]) == sorted(SYSTEMS)
    monkeypatch.setattr(flow, "conll18_rows", by_strings)
    monkeypatch.setattr(flow, "conll18_of_shard", totals_by_strings)
    assert pos_run(tmp_path / "strings") == coded


def test_coded_tag_rows_keep_every_rule_of_the_string_comparison():
    """Against :func:`conll18.sentence_counts` of the decoded strings, on the cases real
    files rarely hold: a key lemma ``_`` (correct whatever the system says), a null code
    (never correct), a column without a dictionary (``_`` everywhere), FEATS equal only once
    reduced to the universal features and sorted, a label the key never uses, a sentence
    without words."""
    import polars as pl

    from sysdiff.flows.tokens import lean_frame
    from sysdiff.transforms import conll18

    key = pl.DataFrame({
        "sent": [3, 3, 3, 5, 5], "id": [1, 2, 3, 1, 2], "head": [0, 1, 1, 0, 1],
        "lemma": ["_", "chat", "chat", "_", "manger"], "upos": ["NOUN", "NOUN", "DET", "X", "VERB"],
        "xpos": ["_"] * 5, "feats": ["Number=Sing|Gender=Fem", "_", "Definite=Def", "_",
                                     "Foo=Bar|Mood=Ind"],
        "deprel": ["root", "nsubj", "det", "root", "obj"]}).cast({"sent": pl.Int32,
                                                                 "id": pl.Int32,
                                                                 "head": pl.Int32})
    dictionaries = {"upos": ["DET", "NOUN", "PRON", "VERB"],
                    "feats": ["Gender=Fem|Number=Sing", "Mood=Ind", "_"],
                    "lemma": ["chat", "le", "xyz"]}
    codes = pl.DataFrame({
        "sent": key["sent"], "id": key["id"],
        "upos": [1, 1, 0, None, 2], "xpos": [None] * 5, "feats": [0, 2, 2, 2, 1],
        "lemma": [2, 0, None, 2, 1], "deprel": [None] * 5, "head": [None] * 5},
        schema_overrides={c: pl.UInt32 for c in ("upos", "xpos", "feats", "lemma", "deprel")}
        | {"head": pl.Int32})
    gold = conll18.normalised_key(key)
    want = conll18.sentence_counts(key, lean_frame(codes, dictionaries), gold, False, 3, 4)
    got = conll18.coded_tag_rows(conll18.GoldCodes(gold, 3, 4), codes, dictionaries)
    assert got.tolist() == want.tolist()
    per = dict(zip(conll18.sentence_metrics(False), got.reshape(4, -1, 3)[:, :, 0].T,
                   strict=True))
    assert per["Lemmas"].tolist() == [2, 0, 1, 0]  # the blank key lemmas count, the null not
    assert per["UFeats"].tolist() == [2, 0, 2, 0]  # sorted, and universal features only
    assert per["XPOS"].tolist() == [3, 0, 2, 0]  # no dictionary: '_' as the key's
