"""Many systems ingested at once: 64 tiny systems read by 8 ingest tasks at a time, 20 times
over, in threads and on a local Dask cluster, give the same staged tables every time (the
100-system run once failed with "dictionary changed size during iteration": a task
parameter held a dict that other ingest threads changed)."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from prefect import flow

from sysdiff.flows.spec import build_spec
from sysdiff.flows.token_ingest import ingest_tokens
from sysdiff.flows.warehouse import open_run
from tests.conftest import SEQUOIA, run_cli
from tests.test_scale import first_sentences

N_SYSTEMS, REPEATS = 64, 20
#: Repeats on the Dask cluster: each costs ~5x a threaded one (task runs shipped to workers).
DASK_REPEATS = 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[str]]:
    """The key (3 sentences) and 64 systems, each with its own UPOS errors."""
    tmp = tmp_path_factory.mktemp("many")
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 3)
    lines = key.read_text(encoding="utf-8").splitlines()
    systems = []
    for i in range(N_SYSTEMS):
        rng = random.Random(i)
        out = []
        for line in lines:
            cols = line.split("\t")
            if len(cols) == 10 and cols[0].isdigit() and rng.random() < 0.2:
                cols[3] = rng.choice(["NOUN", "VERB", "ADJ", "DET"])
            out.append("\t".join(cols))
        path = tmp / f"s{i}.conllu"
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
        systems.append(f"s{i}={path}")
    return key, systems


def ingest_flow(task_runner):
    @flow(name="ingest-only", task_runner=task_runner, validate_parameters=False)
    def ingest_only(spec, root: Path) -> dict[str, int]:
        with open_run(root, spec.corpus) as stage:
            files = ingest_tokens(spec, stage)
            staged = {f"{t}/{p}": pl.scan_parquet(stage.staged_path(t, p), glob=False)
                      .select(pl.len()).collect().item() for t, p in stage.staged
                      if t in ("units", "words", "vocab", "systems")}
            stage.staged.clear()  # nothing is committed: each repeat starts afresh
        assert len(files) == N_SYSTEMS + 1
        return staged

    return ingest_only


def repeated(task_runner, corpus, tmp_path: Path, repeats: int) -> None:
    key, systems = corpus
    spec = build_spec("many", "pos", key, systems)
    run = ingest_flow(task_runner)
    first = run(spec, tmp_path / "wh")
    assert len(first) == 3 * (N_SYSTEMS + 1) and min(first.values()) > 0
    for _ in range(repeats - 1):
        assert run(spec, tmp_path / "wh") == first


def test_64_systems_in_8_threads_20_times(corpus, tmp_path, monkeypatch, prefect_harness):
    from prefect.task_runners import ThreadPoolTaskRunner

    monkeypatch.setenv("SYSDIFF_INGEST_THREADS", "8")
    repeated(ThreadPoolTaskRunner(max_workers=8), corpus, tmp_path, REPEATS)


def test_64_systems_on_a_dask_cluster(corpus, tmp_path, monkeypatch, prefect_harness):
    from distributed import LocalCluster

    from sysdiff.flows.dask_runner import KeyedDaskTaskRunner

    monkeypatch.setenv("SYSDIFF_INGEST_THREADS", "8")
    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True,
                      dashboard_address=None) as cluster:
        repeated(KeyedDaskTaskRunner(address=cluster.scheduler_address), corpus, tmp_path,
                 DASK_REPEATS)


def test_a_whole_run_of_64_systems(corpus, tmp_path, monkeypatch, prefect_harness):
    key, systems = corpus
    monkeypatch.setenv("SYSDIFF_INGEST_THREADS", "8")
    args = [a for s in systems for a in ("--system", s)]
    code, _, err = run_cli("run", "--key", str(key), *args, "--corpus", "many", "--task",
                           "pos", "--ar-trials", "20", "-w", str(tmp_path / "wh"))
    assert code == 0, err
    from sysdiff.flows.queries import query
    from sysdiff.schemas.vocabulary import VIEWS

    got = query(tmp_path / "wh", "select count(distinct system) as n, count(*) as rows "
                                 "from scores where view = 'upos'")
    assert got.row(0) == (N_SYSTEMS, N_SYSTEMS * len(VIEWS["upos"].punct_settings))
    pairs = query(tmp_path / "wh", "select count(*) as n from pairs where view = 'upos'")
    assert pairs["n"][0] == N_SYSTEMS * (N_SYSTEMS - 1) * len(VIEWS["upos"].punct_settings)


def test_the_key_frame_is_loaded_without_parsing_a_header(tmp_path, monkeypatch):
    """The ingest threads load the key's frame at once; CPython 3.11 builds ASTs unsafely
    across threads (a ``SystemError`` once in a CI run of the test above, when the frame
    was ``.npy`` files, whose headers numpy parses with ``ast.literal_eval``). The frame's
    files have no header: 16 loads in 8 threads, with any AST parse an error."""
    import ast
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    import sysdiff.flows.token_ingest as ingest

    with ingest.FrameWriter(str(tmp_path)) as frame:
        for part in (np.arange(3), np.arange(3, 7)):
            frame.add({ingest.N_WORDS: part, ingest.FORMS: part * 2})
    path = ingest.frame_file(str(frame.folder), ingest.N_WORDS)

    def parsed(text):  # noqa: ANN001, ANN202
        raise AssertionError(f"a header parsed: {text!r}")

    monkeypatch.setattr(ast, "literal_eval", parsed)
    with ThreadPoolExecutor(8) as pool:
        loaded = list(pool.map(lambda _: ingest.load_array(path), range(16)))
    assert all(np.array_equal(a, np.arange(7)) for a in loaded)
    forms = ingest.load_array(ingest.frame_file(str(frame.folder), ingest.FORMS))
    assert forms.dtype == np.uint64 and np.array_equal(forms, np.arange(7) * 2)
    assert frame.shape.hexdigest() == ingest.shape_of([np.arange(7)], [np.arange(7) * 2])
