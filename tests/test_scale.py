"""Scale-out: identical tables in-process, with any shard size, and on a 2-worker Dask cluster."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sysdiff.flows.warehouse import read_manifest, read_table
from sysdiff.schemas.tables import TOKEN_TABLES
from tests.conftest import SEQUOIA
from tests.retokenise import retokenise

FILES = {"a": "fr_core_news_sm-3.8.0.conllu", "b": "seqsm_local-ud2.16.conllu",
         "c": "fr_core_news_md-3.8.0.conllu"}
VOLATILE = ["ingested_at", "path", "mtime_ns"]


def first_sentences(src: Path, dst: Path, n: int) -> Path:
    """The first ``n`` sentences of a CoNLL-U file."""
    blocks = src.read_text(encoding="utf-8").split("\n\n")[:n]
    dst.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return dst


def sample(tmp: Path, n_sentences: int) -> dict[str, Path]:
    """The key and three systems of the bundled sample, cut to their first sentences, and
    a fourth tokenised otherwise (aligned on the characters)."""
    files = {"key": first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", n_sentences)}
    for name, f in FILES.items():
        files[name] = first_sentences(SEQUOIA / f, tmp / f, n_sentences)
    files["r"] = retokenise(files["c"], tmp / "r.conllu", split_rate=0.05)
    return files


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> dict[str, Path]:
    return sample(tmp_path_factory.mktemp("small"), 40)


def run(cli, small: dict[str, Path], root: Path, *extra: str) -> None:
    systems = [f"--system={n}={p}" for n, p in small.items() if n != "key"]
    code, _, err = cli("run", "--key", str(small["key"]), *systems, "--corpus", "s", "--task",
                       "dep", "--ar-trials", "200", "-w", str(root), *extra)
    assert code == 0, err


def sort_rows(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order whatever order they were written in (lists compared as text)."""
    keys = [pl.col(c).list.join(",") if isinstance(t, pl.List) else pl.col(c)
            for c, t in df.schema.items()]
    return df.sort(keys, nulls_last=True)


def all_tables(root: Path) -> dict[str, pl.DataFrame]:
    manifest = read_manifest(root)
    return {name: sort_rows(read_table(root, name, manifest).drop(VOLATILE, strict=False))
            for name in TOKEN_TABLES}


def assert_same_tables(a: Path, b: Path) -> None:
    """Every token table equal, bootstrap intervals included (and there are some)."""
    ta, tb = all_tables(a), all_tables(b)
    for name in ta:
        assert ta[name].height > 0 or name == "bucket_pairs", name
        assert ta[name].equals(tb[name]), name
    for name, column in (("scores", "ci_low"), ("pairs", "delta_ci_low"),
                         ("conll18", "ci_low")):
        assert ta[name][column].null_count() < ta[name].height, name


@pytest.fixture(scope="module")
def unsharded(small, tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("one") / "wh"
    run(run_cli, small, root, "--shard-sents", "1000000")
    return root


@pytest.mark.parametrize("shard_sents", ["1", "7"])
def test_shard_size_does_not_change_any_table(shard_sents, small, unsharded, tmp_path, cli):
    run(cli, small, tmp_path / "wh", "--shard-sents", shard_sents)
    assert_same_tables(unsharded, tmp_path / "wh")


def test_dask_cluster_gives_identical_tables(small, unsharded, tmp_path, cli):
    import distributed
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        run(cli, small, tmp_path / "wh", "--shard-sents", "10", "--dask-address",
            cluster.scheduler_address)
    assert_same_tables(unsharded, tmp_path / "wh")


def test_pairs_counted_one_block_at_a_time_give_the_same_tables(small, unsharded, tmp_path,
                                                                 cli, monkeypatch):
    """Many systems: pairs are counted a block at a time (one pass over the shards per
    block); one pair per block gives every table of one block for all pairs."""
    import sysdiff.flows.tokens as flow

    monkeypatch.setattr(flow, "PAIRS_PER_BLOCK", 1)
    run(cli, small, tmp_path / "wh", "--shard-sents", "7")
    assert_same_tables(unsharded, tmp_path / "wh")


@pytest.mark.parametrize("threads", ["1", "4"])
def test_files_read_one_at_a_time_or_all_at_once_give_identical_tables(
        threads, small, unsharded, tmp_path, cli, monkeypatch):
    """Systems are ingested concurrently; the tables do not depend on how many at once, and
    ``ingested_at`` (the order of systems in every table) follows the run's sources."""
    monkeypatch.setenv("SYSDIFF_INGEST_THREADS", threads)
    root = tmp_path / "wh"
    run(cli, small, root)
    assert_same_tables(unsharded, root)
    systems = read_table(root, "systems", read_manifest(root)).sort("ingested_at")
    assert systems["system"].to_list() == ["__key__", *[n for n in small if n != "key"]]


def test_a_changed_system_file_gives_the_tables_of_a_fresh_run(small, tmp_path, cli):
    """System b's file changes between two runs: its pairs are recomputed, the pairs that
    shared their block file are carried over, and no pair is stored twice."""
    first = tmp_path / "wh"
    run(cli, small, first)
    changed = dict(small)
    text = small["b"].read_text(encoding="utf-8").replace("\tNOUN\t", "\tPROPN\t", 40)
    changed["b"] = tmp_path / "b-changed.conllu"
    changed["b"].write_text(text, encoding="utf-8")
    run(cli, changed, first)
    fresh = tmp_path / "fresh"
    run(cli, changed, fresh)
    assert_same_tables(fresh, first)
    pairs = read_table(first, "pairs")
    assert pairs.height == pairs.unique(["view", "punct", "sys1", "sys2"]).height


def test_a_run_without_a_shard_size_is_cut_by_sysdiff_and_gives_the_same_tables(
        small, unsharded, tmp_path, cli, monkeypatch):
    """No ``--shard-sents``: the plan sized from the words, files and threads (here made
    small enough to cut the 40 sentences) is the plan the compare maps, tables unchanged."""
    import sysdiff.flows.tokens as flow
    import sysdiff.transforms.plan as plan

    monkeypatch.setattr(plan, "MIN_SHARD_SENTS", 1)
    monkeypatch.setattr(plan, "SHARD_CELLS", 2000)
    planned = []
    original = flow.shard_plan

    def spy(key_sents, shard_sents, n_files):
        planned.append((shard_sents, len(out := original(key_sents, shard_sents, n_files))))
        return out

    monkeypatch.setattr(flow, "shard_plan", spy)
    run(cli, small, tmp_path / "wh")
    assert len(planned) == 1 and planned[0][0] is None and planned[0][1] > 1, planned
    assert_same_tables(unsharded, tmp_path / "wh")
