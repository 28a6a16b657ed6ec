"""Input changing under the reader (issue 20, point 5): a file truncated, rewritten, deleted
or replaced (renamed over) while it is read is one line naming the file and what happened,
exit 2, and the warehouse unchanged; an unchanged file is read once, its hash and its rows
from the same bytes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sysdiff.flows.queries import query
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import (
    NOT_KEPT,
    StableFile,
    after_blank_line,
    read_stable,
)
from tests.conftest import REPO, SEQUOIA, snapshot
from tests.test_scale import first_sentences

MUTATIONS = ("truncate", "rewrite", "delete", "replace")
#: What the one line says for each mutation.
SAYS = {"truncate": "the file changed while it was being read (size {was} → {now} bytes)",
        "rewrite": "the file changed while it was being read (rewritten in place)",
        "delete": "the file was deleted while it was being read",
        "replace": "the file was replaced while it was being read (its name now leads to "
                   "another file)"}


def mutate(path: Path, how: str, replacement: bytes) -> str:
    """Change ``path`` as another process would; return what the error must say."""
    was = path.stat()
    if how == "truncate":
        os.truncate(path, was.st_size // 3)
        return SAYS[how].format(was=was.st_size, now=was.st_size // 3)
    if how == "rewrite":  # the same size, other bytes; a later modification time
        with path.open("r+b") as f:
            f.write(replacement[:was.st_size].ljust(was.st_size, b"\n"))
        os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns + 10**9))
    elif how == "delete":
        path.unlink()
    else:
        tmp = path.with_name(path.name + ".new")
        tmp.write_bytes(replacement)
        os.replace(tmp, path)
    return SAYS[how]


@pytest.fixture
def change_after_first_read(monkeypatch):
    """``install(path, how, replacement)``: the first read through a :class:`StableFile` of
    ``path`` returns, then ``path`` is changed (``mutate``); returns the list the expected
    message is appended to once it happened."""

    def install(target: Path, how: str, replacement: bytes) -> list[str]:
        real, said = StableFile.read, []

        def read(self, n=None):
            data = real(self, n)
            if not said and self.path.absolute() == target.absolute():
                said.append(mutate(target, how, replacement))
            return data

        monkeypatch.setattr(StableFile, "read", read)
        return said

    return install


# ------------------------------------------------------------------------------ the primitive


def blocks(n: int) -> bytes:
    return "".join(f"1\tw{k}\tX\n\n" for k in range(n)).encode()


def test_an_unchanged_file_gives_its_bytes_hash_and_stamp(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_bytes(blocks(500))
    snap = read_stable(path)
    assert snap.data == path.read_bytes()
    assert snap.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    st = path.stat()
    assert (snap.stamp.size, snap.stamp.mtime_ns, snap.stamp.ino) == (
        st.st_size, st.st_mtime_ns, st.st_ino)
    with StableFile(path, expect=snap.stamp) as again:  # the same version: accepted
        assert b"".join(again.chunks(64, after_blank_line)) == snap.data
        assert again.sha256 == snap.sha256


@pytest.mark.parametrize("how", MUTATIONS)
def test_a_change_between_chunks_is_one_input_error(tmp_path, how):
    path = tmp_path / "a.tsv"
    path.write_bytes(blocks(500))
    with StableFile(path) as f, pytest.raises(InputError) as got:
        for k, _chunk in enumerate(f.chunks(256, after_blank_line)):
            if k == 0:
                said = mutate(path, how, blocks(400))
    assert got.value.path == str(path) and got.value.line is None
    assert got.value.message == f"{said}; {NOT_KEPT}"


@pytest.mark.parametrize("how", MUTATIONS)
def test_a_file_read_again_must_be_the_version_read_first(tmp_path, how):
    path = tmp_path / "a.tsv"
    path.write_bytes(blocks(50))
    stamp = read_stable(path).stamp
    said = mutate(path, how, blocks(40))
    with pytest.raises(InputError) as got:
        read_stable(path, expect=stamp)
    assert said in got.value.message or (how == "delete" and got.value.message == "no such file")


# ------------------------------------------------------------------------------ every reader


def _token_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = first_sentences(SEQUOIA / "key.conllu", tmp_path / "k.conllu", 80)
    other = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp_path / "o", 80)
    return path, other.read_bytes()


def _read_tokens(path: Path) -> None:
    from sysdiff.schemas.formats.conllu import iter_conll

    for _ in iter_conll(path, chunk_bytes=2048):
        pass


def _tag_file(tmp_path: Path) -> tuple[Path, bytes]:
    text = (REPO / "data/ner/spacy_sm-3.8.0.tsv").read_bytes()
    path = tmp_path / "a.tsv"
    path.write_bytes(text[:40000].rsplit(b"\n\n", 1)[0] + b"\n\n")
    return path, (REPO / "data/ner/spacy_sm-3.6.0.tsv").read_bytes()[:30000].rsplit(
        b"\n\n", 1)[0] + b"\n\n"


def _read_tags(path: Path) -> None:
    from sysdiff.schemas.formats.spans import iter_tags

    for _ in iter_tags(path, chunk_bytes=2048):
        pass


def _coref_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "a.conll"
    shutil.copy(REPO / "data/litbank/sys1.conll", path)
    return path, (REPO / "data/litbank/sys2.conll").read_bytes()


def _read_coref(path: Path) -> None:
    from sysdiff.schemas.formats.coref import read_coref_with_tokens

    read_coref_with_tokens(path)


def _unl_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "a.unl"
    shutil.copy(REPO / "data/unl/grammar@1.unl", path)
    return path, (REPO / "data/unl/grammar@2.unl").read_bytes()


def _read_unl(path: Path) -> None:
    from sysdiff.schemas.formats.unl import index_unl

    index_unl(path, piece_bytes=64)


def _nl_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "a.txt"
    path.write_text("".join(f"sentence number {k}\n" for k in range(300)), encoding="utf-8")
    return path, "".join(f"another sentence {k}\n" for k in range(200)).encode()


def _read_nl(path: Path) -> None:
    from sysdiff.schemas.formats.unl import read_nl

    read_nl(path)


READERS = {"tokens": (_token_file, _read_tokens), "tags": (_tag_file, _read_tags),
           "coref": (_coref_file, _read_coref), "unl": (_unl_file, _read_unl),
           "nl": (_nl_file, _read_nl)}


@pytest.mark.parametrize("how", MUTATIONS)
@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_a_file_changed_while_it_reads_it(
        tmp_path, reader, how, change_after_first_read):
    make, read = READERS[reader]
    path, other = make(tmp_path)
    read(path)  # unchanged: read without a word
    said = change_after_first_read(path, how, other)
    with pytest.raises(InputError) as got:
        read(path)
    assert said, "the file was not read through StableFile"
    assert str(got.value) == f"{path}: {said[0]}; {NOT_KEPT}"


def test_a_unl_file_changed_after_its_index_is_refused_when_a_shard_is_read(tmp_path):
    """The index keeps no descriptor (it may go to another process): a shard read later
    opens the file again and must find the version indexed."""
    import numpy as np

    from sysdiff.schemas.formats.unl import index_unl

    path, _other = _unl_file(tmp_path)
    index = index_unl(path)
    index.read(np.arange(len(index)))  # unchanged: read again without a word
    tmp = path.with_name("x.unl")
    tmp.write_bytes(path.read_bytes())  # the same bytes in another file
    os.replace(tmp, path)
    with pytest.raises(InputError, match="the file was replaced while it was being read"):
        index.read(np.arange(len(index)))


# ------------------------------------------------------------------------------ runs


def _run_args(task: str, key: Path, systems: dict[str, Path], root: Path) -> list[str]:
    return ["run", "--task", task, "--corpus", "c", "--key", str(key), "--ar-trials", "20",
            "-w", str(root), *[f"--system={n}={p}" for n, p in systems.items()]]


def _inputs(task: str, tmp: Path) -> tuple[Path, dict[str, Path], bytes]:
    """Key, systems a and b (b is changed while it is read) and bytes to replace b with."""
    if task == "pos":
        key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 80)
        a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "a.conllu", 80)
        b = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp / "b.conllu", 80)
        other = first_sentences(SEQUOIA / "seqsm_local-ud2.8.conllu", tmp / "o.conllu", 80)
        return key, {"a": a, "b": b}, other.read_bytes()
    if task == "ner":
        names = ("gold.iob2", "spacy_sm-3.6.0.tsv", "spacy_sm-3.8.0.tsv")
        key, a, b = (shutil.copy(REPO / "data/ner" / n, tmp / n) for n in names)
        return Path(key), {"a": Path(a), "b": Path(b)}, Path(a).read_bytes()
    if task == "coref":
        names = ("key.conll", "sys1.conll", "sys2.conll", "sys3.conll")
        key, a, b, o = (Path(shutil.copy(REPO / "data/litbank" / n, tmp / n)) for n in names)
        return key, {"a": a, "b": b}, o.read_bytes()
    names = ("expected.unl", "grammar@1.unl", "grammar@2.unl", "grammar@3.unl")
    key, a, b, o = (Path(shutil.copy(REPO / "data/unl" / n, tmp / n)) for n in names)
    return key, {"a": a, "b": b}, o.read_bytes()


@pytest.fixture(scope="module")
def committed(tmp_path_factory, prefect_harness):
    """``committed(task)``: (inputs folder, warehouse) after a run of the key and system a."""
    from tests.conftest import run_cli

    made: dict[str, tuple[Path, Path]] = {}

    def get(task: str) -> tuple[Path, Path]:
        if task not in made:
            tmp = tmp_path_factory.mktemp(f"stable-{task}")
            key, systems, _ = _inputs(task, tmp)
            root = tmp / "wh"
            code, _, err = run_cli(*_run_args(task, key, {"a": systems["a"]}, root))
            assert code == 0, err
            made[task] = tmp, root
        return made[task]

    return get


def _error_lines(err: str) -> list[str]:
    """stderr without the run's notes (what it says about the files it read)."""
    return [ln for ln in err.splitlines() if ln.strip() and "note:" not in ln]


@pytest.mark.parametrize("task, how", [
    ("pos", "truncate"), ("pos", "rewrite"), ("pos", "delete"), ("pos", "replace"),
    ("ner", "truncate"), ("ner", "replace"), ("coref", "delete"), ("coref", "truncate"),
    ("unl", "replace"), ("unl", "truncate"),
])
def test_a_run_refuses_a_system_file_changed_while_it_is_read(
        task, how, committed, tmp_path, cli, monkeypatch, change_after_first_read):
    import sysdiff.schemas.formats.conllu
    import sysdiff.schemas.formats.spans

    monkeypatch.setattr(sysdiff.schemas.formats.conllu, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(sysdiff.schemas.formats.spans, "CHUNK_BYTES", 4096)
    src, base = committed(task)
    root = tmp_path / "wh"
    shutil.copytree(base, root)
    key, systems, other = _inputs(task, tmp_path)
    before = snapshot(root)
    said = change_after_first_read(systems["b"], how, other)
    code, _out, err = cli(*_run_args(task, key, systems, root))
    assert said and code == 2, err
    assert _error_lines(err) == [f"sysdiff: error: {systems['b']}: {said[0]}; {NOT_KEPT}"]
    assert snapshot(root) == before


def test_keep_going_skips_a_file_changed_while_it_is_read_and_keeps_nothing_of_it(
        committed, tmp_path, cli, change_after_first_read):
    _src, base = committed("pos")
    root = tmp_path / "wh"
    shutil.copytree(base, root)
    key, systems, other = _inputs("pos", tmp_path)
    said = change_after_first_read(systems["b"], "truncate", other)
    code, _out, err = cli(*_run_args("pos", key, systems, root), "--keep-going")
    assert code == 3, err
    assert f"system 'b' skipped: {systems['b']}: {said[0]}; {NOT_KEPT}" in err
    assert query(root, "select system from systems order by system")["system"].to_list() == [
        "__key__", "a"]
    assert not list(root.glob("tables/*/corpus=c/system=b*"))


def test_the_systems_row_describes_the_version_read(committed, tmp_path, cli):
    """Hash, size and modification time of a system are those of the bytes its rows came
    from: a later change is noticed by the next run (the file is read again)."""
    _src, base = committed("pos")
    root = tmp_path / "wh"
    shutil.copytree(base, root)
    key, systems, _other = _inputs("pos", tmp_path)
    assert cli(*_run_args("pos", key, systems, root))[0] == 0
    b = systems["b"]
    row = query(root, "select sha256, size, mtime_ns from systems where system = 'b'").row(0)
    assert row == (hashlib.sha256(b.read_bytes()).hexdigest(), b.stat().st_size,
                   b.stat().st_mtime_ns)


# ------------------------------------------------------------------------------ a real process

#: ``sysdiff run`` in a fresh interpreter whose token reader, after handing over the first
#: chunk of $SYSDIFF_TEST_TRUNCATE, truncates that file to a third (as another process
#: would); the file is read in chunks of 4 KiB.
TRUNCATING_RUN = """
import os, sys
import sysdiff.flows.tokens as flow
import sysdiff.schemas.formats.conllu as conllu
conllu.CHUNK_BYTES = 4096
target, real = os.environ["SYSDIFF_TEST_TRUNCATE"], flow.iter_conll
def iter_conll(source, *args, **kwargs):
    path = str(getattr(source, "path", source))
    for k, chunk in enumerate(real(source, *args, **kwargs)):
        yield chunk
        if k == 0 and path == target:
            os.truncate(target, os.path.getsize(target) // 3)
flow.iter_conll = iter_conll
sys.argv = ["sysdiff", *sys.argv[1:]]
from sysdiff.flows.cli import main
main()
"""


def test_sysdiff_run_in_a_process_of_its_own_refuses_a_file_truncated_under_it(
        committed, tmp_path, prefect_harness):
    """Truncated while it was memory-mapped, the file killed the run with SIGBUS (exit 135,
    no message); now: one line, exit 2, the warehouse unchanged."""
    from prefect.settings import PREFECT_API_URL

    _src, base = committed("pos")
    root = tmp_path / "wh"
    shutil.copytree(base, root)
    key, systems, _other = _inputs("pos", tmp_path)
    size = systems["b"].stat().st_size
    before = snapshot(root)
    env = dict(os.environ, SYSDIFF_TEST_TRUNCATE=str(systems["b"]),
               PREFECT_API_URL=PREFECT_API_URL.value())
    proc = subprocess.run([sys.executable, "-c", TRUNCATING_RUN,
                           *_run_args("pos", key, systems, root)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    said = SAYS["truncate"].format(was=size, now=size // 3)
    assert _error_lines(proc.stderr) == [f"sysdiff: error: {systems['b']}: {said}; {NOT_KEPT}"]
    assert snapshot(root) == before
