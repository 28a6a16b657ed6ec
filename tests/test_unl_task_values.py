"""The UNL and NL flows hand their tasks values that cannot change (issue 21): the index of
a file, the alignments and versions, the options, the NL sentences and the rows compared;
``Opaque`` is frozen and :func:`is_frozen` looks inside it."""

from __future__ import annotations

import dataclasses
import os
import pickle
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from prefect import Task

from sysdiff.flows.shards import FrozenFrame
from sysdiff.schemas.formats.stable import StableFile
from sysdiff.schemas.formats.unl import index_unl, read_nl, read_unl
from sysdiff.schemas.frozen import FrozenMap, Opaque, is_frozen
from sysdiff.transforms.unl import (
    UnlOptions,
    align_ids,
    compare_versions,
    compared_columns,
    score_unlization,
)
from tests.conftest import REPO, run_cli

UNL = REPO / "data" / "unl"
CASES = REPO / "tests" / "data" / "unl" / "cases"


@pytest.fixture
def submitted(monkeypatch):
    """(task name, parameter, is frozen) of every task parameter submitted in the test."""
    seen: list[tuple[str, str, bool]] = []
    original = Task.submit

    def checked(self, *args, **kwargs):
        for name, value in [*enumerate(args), *kwargs.items()]:
            seen.append((self.name, str(name), is_frozen(value)))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Task, "submit", checked)
    return seen


def _nl_files(tmp: Path) -> list[str]:
    """An NL key and two outputs, aligned by position."""
    texts = {side: [(CASES / c / f"{side}.txt").read_text().strip() for c in
                    ("10a_nl_exact_after_normalisation", "10b_nl_uw_in_output")]
             for side in ("expected", "actual")}
    rows = {"key": texts["expected"], "a": texts["actual"], "b": texts["expected"][::-1]}
    for name, lines in rows.items():
        (tmp / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["--task", "nl", "--key", str(tmp / "key.txt"),
            *[f"--system={s}={tmp / s}.txt" for s in ("a", "b")]]


def _unl_files(tmp: Path) -> list[str]:
    return ["--task", "unl", "--key", str(UNL / "expected.unl"), "--unl-optional-attr", "@pl",
            *[f"--system=g{k}={UNL / f'grammar@{k}.unl'}" for k in (1, 2, 3)]]


@pytest.mark.parametrize("files", [_nl_files, _unl_files], ids=["nl", "unl-options"])
def test_every_unl_and_nl_task_takes_immutable_values(files, submitted, tmp_path,
                                                      prefect_harness):
    code, _, err = run_cli("run", "--corpus", "c", "--shard-sents", "1", "-w",
                           str(tmp_path / "wh"), *files(tmp_path))
    assert code == 0, err
    assert {"score", "compare"} <= {task for task, _, _ in submitted}
    assert [s for s in submitted if not s[2]] == []


def test_opaque_is_frozen_when_its_value_is():
    frozen, mutable = Opaque(("a", FrozenMap({"k": (1, 2)}))), Opaque({"a": 1})
    assert is_frozen(frozen) and not is_frozen(mutable)
    assert not is_frozen(Opaque((1, [2])))
    with pytest.raises(AttributeError):
        frozen.value = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del frozen.value
    again = pickle.loads(pickle.dumps(frozen))
    assert isinstance(again, Opaque) and again.value == frozen.value


def test_the_checker_knows_exact_numbers_and_arrow_columns():
    assert is_frozen(UnlOptions(optional_attrs={"@pl"}))
    assert is_frozen((Fraction(3, 10), pl.Series(["a", None]).to_arrow()))
    assert not is_frozen(pl.DataFrame({"a": [1]}))
    assert not is_frozen(pl.Series([1]))


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open descriptors")
def test_a_unl_index_is_a_value_without_a_descriptor(tmp_path):
    path = tmp_path / "g.unl"
    path.write_bytes((UNL / "grammar@2.unl").read_bytes())
    before = _open_files()
    index = index_unl(path, piece_bytes=64)
    assert _open_files() == before
    assert is_frozen(index) and index.starts is not None
    assert not index.lines.flags.writeable and not index.starts.flags.writeable
    assert not any(isinstance(getattr(index.source, f.name), StableFile)
                   for f in dataclasses.fields(index.source))
    assert index.source.stamp == StableFile(path).stamp  # the version indexed
    with pytest.raises(dataclasses.FrozenInstanceError):
        index.starts = None  # type: ignore[misc]
    want = index.read(np.arange(len(index)))
    assert is_frozen(index)  # reading fills no cache
    again = pickle.loads(pickle.dumps(index))
    assert is_frozen(again) and again.ids == index.ids
    got = again.read(np.arange(len(index)))
    assert got.sents.equals(want.sents) and got.rels.equals(want.rels)


def test_a_document_without_sentence_blocks_is_a_tuple_of_values():
    text = "[D]\n{unl}\nagt(a, b)\n{/unl}\n{unl}\nobj(a, c)\n{/unl}\n[/D]\n"
    index = index_unl(text)
    assert isinstance(index.sentences, tuple) and len(index) == 2
    assert is_frozen(index)


def test_nl_sentences_and_alignments_are_values():
    sentences = tuple(read_nl(UNL / "grammar@1.unl"))
    assert sentences and is_frozen(sentences)
    al = align_ids(["1", "2", "3"], ["3", "1", "9"])
    assert is_frozen(al) and isinstance(al.notes, tuple) and al.notes
    assert not al.partner.flags.writeable and not al.unmatched_actual.flags.writeable
    again = pickle.loads(pickle.dumps(al))
    assert is_frozen(again) and again.partner.tolist() == al.partner.tolist() == [1, -1, 0]


def test_rows_compared_go_to_a_task_as_their_own_rows_only():
    n = 100_000
    df = pl.DataFrame({"sent_id": [f"s{k}" for k in range(n)], "k": np.arange(n),
                       "ok": np.arange(n) % 3 == 0})
    part = df.slice(50_000, 10)
    frame = FrozenFrame.of(part)
    assert is_frozen(FrozenMap({"v": frame}))
    assert frame.frame().equals(part)
    data = pickle.dumps(frame)
    assert len(data) < len(pickle.dumps(df)) / 100  # not the buffers the slice shares
    back = pickle.loads(data).frame()
    assert back.equals(part) and back.schema == part.schema


def test_the_comparison_reads_only_the_columns_compared():
    expected = read_unl(UNL / "expected.unl")
    rows = {f"g{k}": score_unlization(expected, read_unl(UNL / f"grammar@{k}.unl"))
            .with_columns(corpus=pl.lit("c")) for k in (1, 2, 3)}  # fmt: skip
    whole = compare_versions(rows)
    some = compare_versions({v: compared_columns(df) for v, df in rows.items()})
    assert whole.keys() == some.keys() and whole["moved"].height
    assert all(whole[k].equals(some[k]) for k in whole)
    assert "corpus" in whole["moved"].columns
