"""Streamed reading and ingest: any chunk size gives the same tables and the same errors."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import sysdiff.schemas.formats.conllu
from sysdiff.flows.shards import map_fold
from sysdiff.flows.warehouse import read_manifest
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import WordCheck, check_same_words, iter_conll, read_conll
from tests.conftest import SEQUOIA
from tests.test_bad_inputs import CASES, GOOD, MISMATCHES
from tests.test_scale import assert_same_tables, run, sample

WORD = "1\tx\tx\tX\t_\t_\t0\troot\t_\t_\n"
PAD_SENTS = 40
PAD = "".join(f"# sent_id = p{i}\n{WORD}\n" for i in range(PAD_SENTS))  # 3 lines each
SIZES = [1, 64, 700, 5000]


def sentence(doc: int, s: int) -> str:
    """A sentence with a multiword range and an empty node; one has no sent_id comment."""
    head = "" if (doc, s) == (1, 1) else f"# sent_id = d{doc}s{s}\n# text = ab .\n"
    return (head + "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\tDET\t_\t_\t2\tdet\t_\t_\n"
            "2\tb\t_\tNOUN\t_\t_\t0\troot\t_\t_\n2.1\tc\t_\tX\t_\t_\t_\t_\t0:root\t_\n"
            "3\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n")


def documents(n_docs: int = 5) -> str:
    """Documents with and without ids (``# newdoc`` alone continues no id)."""
    return "".join(("# newdoc\n" if d == 2 else f"# newdoc id = d{d}\n")
                   + "".join(sentence(d, s) for s in range(3)) for d in range(n_docs))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("stream")
    texts = {"docs.conllu": documents(), "crlf.conllu": documents().replace("\n", "\r\n"),
             "tags.tsv": "".join(f"w{i}\tDT\nx\tNN\n\n" for i in range(40)),
             "blank_runs.conllu": "\n\n\n".join(sentence(0, s) for s in range(6)) + "\n\n\n"}
    out = {name: tmp / name for name in texts}
    for name, text in texts.items():
        out[name].write_bytes(text.encode())
    out["sequoia"] = SEQUOIA / "key.conllu"
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["docs.conllu", "crlf.conllu", "tags.tsv", "blank_runs.conllu",
                                  "sequoia"])
def test_chunked_read_equals_whole_read(files, name, size):
    whole = read_conll(files[name], chunk_bytes=1 << 30)
    chunks = list(iter_conll(files[name], chunk_bytes=size))
    file_size = files[name].stat().st_size
    assert len(chunks) > 1 if size <= 64 else len(chunks) >= 1
    assert len(chunks) == 1 or size < file_size
    joined = read_conll(files[name], chunk_bytes=size)
    assert_frame_equal(whole.tokens, joined.tokens)
    assert_frame_equal(whole.sents, joined.sents)
    starts = [int(c.sents["sent"][0]) for c in chunks]
    ends = [int(c.sents["sent"][-1]) + 1 for c in chunks]
    assert starts == [0, *ends[:-1]]  # whole sentences, contiguous, in order


def test_documents_continue_across_chunks(files):
    sents = read_conll(files["docs.conllu"], chunk_bytes=1).sents
    assert sents["doc"].to_list() == [d for d in range(5) for _ in range(3)]
    assert sents["sent_id"][4] == "5"  # no sent_id comment: its 1-based position


def error_of(path: Path, size: int) -> InputError:
    with pytest.raises(InputError) as e:
        read_conll(path, chunk_bytes=size)
    return e.value


@pytest.mark.parametrize("case", sorted(set(CASES) - {"missing_file", "empty_file"}))
def test_errors_point_at_the_files_line_in_any_chunk(case, tmp_path):
    """The bad line comes after 40 good sentences: whatever the chunk, the same error."""
    content, phrase, line = CASES[case]
    data = PAD.encode() + (content if isinstance(content, bytes) else content.encode())
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(data)
    whole = error_of(bad, 1 << 30)
    for size in (1, 64, 700):
        err = error_of(bad, size)
        assert (err.message, err.line) == (whole.message, whole.line)
    assert phrase in whole.message
    assert whole.line == line + 3 * PAD_SENTS


def test_binary_data_deep_in_a_file_is_found_by_its_chunk(tmp_path, monkeypatch):
    """Only the head is checked up front; a NUL byte further on is found by its chunk."""
    monkeypatch.setattr(sysdiff.schemas.formats.conllu, "HEAD_BYTES", 64)
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(PAD.encode() + b"1\tx\x00\tx\tX\t_\t_\t0\troot\t_\t_\n\n")
    for size in (1, 64, 700, 1 << 30):
        err = error_of(bad, size)
        assert "binary data (NUL byte)" in err.message
        assert err.line == 3 * PAD_SENTS + 1


@pytest.mark.parametrize("case", sorted(MISMATCHES))
def test_word_check_by_chunks_equals_whole_check(case, tmp_path):
    content, phrase, line = MISMATCHES[case]
    key_path, sys_path = tmp_path / "key.conllu", tmp_path / "sys.conllu"
    key_path.write_text(PAD + GOOD)
    sys_path.write_text(PAD + content)
    key = read_conll(key_path)
    with pytest.raises(InputError) as whole:
        check_same_words(key, read_conll(sys_path))
    for size in (1, 64, 700):
        check = WordCheck(key.path, key.sents, str(sys_path))
        with pytest.raises(InputError) as chunked:
            for chunk in iter_conll(sys_path, chunk_bytes=size):
                check.add(chunk, key.words)
            check.finish()
        assert str(chunked.value) == str(whole.value)
    padded = {"has 3 sentences": "has 43 sentences", "has 1 sentences": "has 41 sentences"}
    for old, new in padded.items():
        phrase = phrase.replace(old, new)
    assert phrase in str(whole.value)
    assert whole.value.line == (line and line + 3 * PAD_SENTS)


def test_streamed_ingest_writes_the_same_tables(tmp_path, cli, monkeypatch):
    """Ingest in 2 KB chunks: several row groups per file, every table identical."""
    files = sample(tmp_path, 60)
    run(cli, files, tmp_path / "whole")
    monkeypatch.setattr(sysdiff.schemas.formats.conllu, "CHUNK_BYTES", 2048)
    run(cli, files, tmp_path / "chunked")
    assert_same_tables(tmp_path / "whole", tmp_path / "chunked")
    units = read_manifest(tmp_path / "chunked")["tables"]["units"]
    key_units = next(v["file"] for p, v in units.items() if p.endswith("__key__"))
    assert pq.ParquetFile(tmp_path / "chunked" / key_units).num_row_groups > 10


def test_streamed_ingest_reports_a_late_mismatch(tmp_path, cli, monkeypatch):
    """A changed form in the 400th sentence, found chunk by chunk: file:line, exit 2."""
    key = SEQUOIA / "key.conllu"
    lines = key.read_text(encoding="utf-8").split("\n")
    sent_starts = [i for i, ln in enumerate(lines) if ln.startswith("# sent_id")]
    row = next(i for i in range(sent_starts[399], len(lines)) if lines[i][:1].isdigit())
    cols = lines[row].split("\t")
    lines[row] = "\t".join([cols[0], cols[1] + "x", *cols[2:]])
    bad = tmp_path / "bad.conllu"
    bad.write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.setattr(sysdiff.schemas.formats.conllu, "CHUNK_BYTES", 4096)
    code, _, err = cli("run", "--key", str(key), "--system", f"a={bad}", "--corpus", "c",
                       "--task", "pos", "-w", str(tmp_path / "wh"))
    assert code == 2
    assert f"{bad}:{row + 1}: the text differs" in err and f"form '{cols[1]}x' differs" in err
    assert not (tmp_path / "wh").exists()


class FakeFuture:
    """A finished task result, counting how many are outstanding."""

    live = 0

    def __init__(self, value: int) -> None:
        self.value = value
        FakeFuture.live += 1

    def result(self) -> int:
        FakeFuture.live -= 1
        return self.value


def test_map_fold_keeps_order_and_bounds_the_results_in_flight():
    seen, peak = [], []

    def fold(value: int) -> None:
        seen.append(value)
        peak.append(FakeFuture.live)

    map_fold(FakeFuture, range(25), fold, limit=3)
    assert seen == list(range(25))
    assert max(peak) <= 2 and FakeFuture.live == 0


def test_chunks_are_whole_sentences_that_cover_the_file_once(tmp_path, monkeypatch):
    """The stable reader's chunks: the file's bytes in order, each cut after the last blank
    line before the chunk size (a longer sentence: after it), hashed as read; where the cut
    is looked for (how far back) does not change them."""
    import hashlib

    import sysdiff.schemas.formats.stable as stable
    from sysdiff.schemas.formats.stable import StableFile, after_blank_line

    sents = ["1\ta\n" * (1 + k % 7) + ("\r\n" if k % 5 == 0 else "\n") for k in range(1000)]
    sents[500] = "1\ta\n" * 60 + "\n"  # longer than a chunk
    path = tmp_path / "x.conllu"
    path.write_bytes("".join(sents).encode())
    seen = []
    for look_back in (1 << 20, 7, 40):
        monkeypatch.setattr(stable, "LOOK_BACK", look_back)
        with StableFile(path) as f:
            chunks = list(f.chunks(100, after_blank_line))
            assert f.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert b"".join(chunks) == path.read_bytes() and len(chunks) > 100
        assert all(c.endswith((b"\n\n", b"\n\r\n")) for c in chunks)
        big = [c for c in chunks if len(c) > 100]  # only the one with the long sentence
        assert len(big) == 1 and big[0].startswith(sents[500].encode())
        seen.append(chunks)
    assert seen[0] == seen[1] == seen[2]


def test_tag_file_chunks_never_end_after_a_docstart_line(tmp_path, monkeypatch):
    import sysdiff.schemas.formats.stable as stable
    from sysdiff.schemas.formats.spans import after_sentence
    from sysdiff.schemas.formats.stable import StableFile

    text = "".join(f"-DOCSTART-\tO\n\nw{i}\tB-X\nv{i}\tO\n\n" for i in range(300)).encode()
    path = tmp_path / "a.tsv"
    path.write_bytes(text)
    for look_back in (1 << 20, 9, 30):
        monkeypatch.setattr(stable, "LOOK_BACK", look_back)
        with StableFile(path) as f:
            chunks = list(f.chunks(50, after_sentence))
        assert b"".join(chunks) == text and len(chunks) > 50
        assert all(c.startswith(b"-DOCSTART-") for c in chunks)
