"""Ingest reads a file once: validated, staged and hashed in one pass; an unchanged file
(same path, size and modification time) is not read again."""

from __future__ import annotations

import hashlib
import os

from sysdiff.flows.queries import query
from sysdiff.schemas.formats.conllu import iter_conll
from tests.conftest import SEQUOIA
from tests.test_scale import first_sentences


def test_the_hash_taken_while_reading_equals_the_file_hash(tmp_path):
    path = first_sentences(SEQUOIA / "key.conllu", tmp_path / "k.conllu", 60)
    hasher = hashlib.sha256()
    chunks = list(iter_conll(path, chunk_bytes=2048, hasher=hasher))
    assert len(chunks) > 5
    assert hasher.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_unchanged_files_are_not_read_and_changed_ones_are(tmp_path, cli, monkeypatch):
    import sysdiff.flows.tokens as flow

    key = first_sentences(SEQUOIA / "key.conllu", tmp_path / "key.conllu", 20)
    a = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp_path / "a.conllu", 20)
    root = tmp_path / "wh"
    argv = ["run", "--key", str(key), f"--system=a={a}", "--corpus", "c", "--task", "pos",
            "--ar-trials", "20", "-w", str(root)]
    assert cli(*argv)[0] == 0
    read: list[str] = []
    real = flow.iter_conll
    monkeypatch.setattr(flow, "iter_conll", lambda file, *a, **k: (read.append(str(file.path)),
                                                                   real(file, *a, **k))[1])
    assert cli(*argv)[0] == 0
    assert read == []  # nothing changed: no file read
    a.write_text(a.read_text(encoding="utf-8").replace("\tNOUN\t", "\tPROPN\t", 3),
                 encoding="utf-8")
    assert cli(*argv)[0] == 0
    assert read == [str(a)]  # only the changed system, once
    row = query(root, "select sha256, size from systems where system = 'a'").row(0)
    assert row == (hashlib.sha256(a.read_bytes()).hexdigest(), a.stat().st_size)
    # a touched file with the same content is read again (once); its results stand
    os.utime(key)
    read.clear()
    before = query(root, "select * from scores").sort("view", "system")
    assert cli(*argv)[0] == 0
    assert read == [str(key)]
    assert query(root, "select * from scores").sort("view", "system").equals(before)


def test_nlization_input_is_hashed_by_its_one_read(tmp_path):
    """NL input: the hash comes from the read that parses it (no second pass to hash)."""
    from sysdiff.schemas.formats.unl import read_nl

    path = tmp_path / "nl.txt"
    path.write_text("le chat dort\nil pleut\n\n", encoding="utf-8")
    hasher = hashlib.sha256()
    sentences = read_nl(path, hasher=hasher)
    assert [s.text for s in sentences] == ["le chat dort", "il pleut"]
    assert hasher.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
