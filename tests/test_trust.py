"""Trust at the edges: nothing the current folder holds changes what sysdiff reads; the Python
API cannot write; a run touches only its own files; reads survive commits; every query has a
time and memory limit; every output format prints every column type; an internal error has
its own exit status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

import sysdiff
from sysdiff.flows.queries import connect, query
from tests.conftest import SEQUOIA, run_cli, snapshot
from tests.test_scale import first_sentences

PAIR = ("seqsm@ud2.8", "seqsm@ud2.16")


def manifest(root: Path) -> dict:
    return json.loads((root / "manifest.json").read_text())


def live_rel(root: Path, table: str, part_has: str = "") -> str:
    """The relative path of a live file of ``table`` (of a partition naming ``part_has``)."""
    parts = manifest(root)["tables"][table]
    return next(e["file"] for p, e in sorted(parts.items()) if part_has in p)


def true_new_errors(root: Path, sys1: str, sys2: str, view: str = "las") -> int:
    """New errors of a pair as the warehouse's own Parquet files hold them."""
    files = sorted({root / e["file"] for e in manifest(root)["tables"]["pairs"].values()})
    df = pl.read_parquet(files).filter(pl.col("view") == view, ~pl.col("punct"),
                                       pl.col("sys1") == sys1, pl.col("sys2") == sys2)
    return int(df["new_errors"].item())


@pytest.fixture(scope="module")
def small(tmp_path_factory, prefect_harness):
    """A function making a small corpus (2 systems, 20 sentences) in a new warehouse."""
    src = tmp_path_factory.mktemp("small-src")
    files = {n: first_sentences(SEQUOIA / f, src / f, 20) for n, f in (
        ("key", "key.conllu"), ("a", "fr_core_news_sm-3.8.0.conllu"),
        ("b", "fr_core_news_md-3.8.0.conllu"), ("c", "seqsm_local-ud2.8.conllu"))}

    def make(root: Path, *extra: str, systems: tuple[str, ...] = ("a", "b")) -> Path:
        args = [a for s in systems for a in ("--system", f"{s}={files[s]}")]
        code, _, err = run_cli("run", "--key", str(files["key"]), *args, "--corpus", "c",
                               "--ar-trials", "50", "-w", str(root), *extra)
        assert code == 0, err
        return root

    make.files = files
    return make


# 1. The current folder


def test_a_shadow_tree_in_the_current_folder_cannot_pass_a_gate(bundled, tmp_path,
                                                                 monkeypatch):
    """A `tables/...` tree beside the user, with a live file's relative name and forged
    content (no new errors), does not change the verdict: the gate fails on the real count."""
    root = bundled("sequoia")
    want = true_new_errors(root, *PAIR)
    assert want > 10
    rel = live_rel(root, "pairs")
    forged = tmp_path / rel
    forged.parent.mkdir(parents=True)
    pl.read_parquet(root / rel).with_columns(new_errors=pl.lit(0, pl.Int64)).write_parquet(
        forged)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("check", "--baseline", PAIR[0], "--candidate", PAIR[1],
                             "--max-new-errors", "10", "-w", str(root))
    assert code == 1, (out, err)
    assert f"{want} new errors" in err


def test_a_symlink_in_the_current_folder_reads_nothing_outside(bundled, tmp_path,
                                                               monkeypatch):
    """`read_text` of a live file's relative name, which the current folder links to
    /etc/passwd, never prints /etc/passwd."""
    root = bundled("sequoia")
    rel = live_rel(root, "scores")
    link = tmp_path / rel
    link.parent.mkdir(parents=True)
    link.symlink_to("/etc/passwd")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("sql", "-w", str(root), f"select content from read_text('{rel}')")
    assert code == 2 and "refused" in err, (out, err)
    assert "root:" not in out


def test_a_symlink_out_of_the_warehouse_is_refused(bundled, tmp_path):
    """A live file replaced by a link to a file outside the warehouse is refused in one line."""
    copy = tmp_path / "wh"
    shutil.copytree(bundled("sequoia"), copy)
    rel = live_rel(copy, "scores")
    (copy / rel).unlink()
    (copy / rel).symlink_to("/etc/passwd")
    code, out, err = run_cli("sql", "-w", str(copy), "select count(*) from systems")
    assert code == 2 and "leads out of the warehouse" in err and rel in err, (out, err)
    assert len(err.strip().splitlines()) == 1


def test_a_copied_warehouse_reads_its_own_files_from_any_folder(bundled, tmp_path,
                                                                monkeypatch):
    root = bundled("sequoia")
    copy = tmp_path / "moved" / "wh"
    shutil.copytree(root, copy)
    for entry in manifest(copy)["tables"]["scores"].values():
        path = copy / entry["file"]
        pl.read_parquet(path).with_columns(accuracy=pl.lit(0.5)).write_parquet(path)
    monkeypatch.chdir(root)  # the original's files are under the current folder
    got = query(copy, "select distinct accuracy from scores")["accuracy"].to_list()
    assert got == [0.5]


# 2. The Python API


def test_the_api_cannot_write_a_live_file(bundled, tmp_path):
    copy = tmp_path / "wh"
    shutil.copytree(bundled("sequoia"), copy)
    before = snapshot(copy)
    live = copy / live_rel(copy, "scores")
    with sysdiff.open(copy) as wh:
        rel = wh.relation("select * from scores where accuracy > 0")
        assert rel.filter("view = 'upos'").pl().height == 4
        with pytest.raises(AttributeError, match="read-only"):
            rel.write_parquet(str(live))
        with pytest.raises(AttributeError, match="read-only"):
            rel.query("x", "copy (select 1) to 'y.csv'")
        assert not hasattr(wh, "con")
        with pytest.raises(sysdiff.InputError, match="read-only"):
            wh.sql("create temp view scores as select 1 as accuracy")
    assert snapshot(copy) == before


def test_an_open_handle_sees_the_next_commit(small, tmp_path):
    root = small(tmp_path / "wh")
    with sysdiff.open(root) as wh:
        old = wh.relation("select distinct system from scores order by 1")
        assert wh.sql("select distinct system from scores order by 1")["system"].to_list() == [
            "a", "b"]
        small(root, systems=("a", "b", "c"))
        assert wh.sql("select distinct system from scores order by 1")["system"].to_list() == [
            "a", "b", "c"]
        assert [r[0] for r in old.fetchall()] == ["a", "b"]  # a relation keeps its state


# 3. Only its own files


def test_a_folder_that_is_not_a_warehouse_is_refused(small, tmp_path):
    root = tmp_path / "mine"
    own = root / "tables" / "x" / "y.parquet"
    own.parent.mkdir(parents=True)
    pl.DataFrame({"a": [1]}).write_parquet(own)
    before = snapshot(root)
    code, _, err = run_cli("run", "--key", str(small.files["key"]), "--system",
                           f"a={small.files['a']}", "--corpus", "c", "-w", str(root))
    assert code == 2 and "not a sysdiff warehouse" in err and str(root) in err, err
    assert len(err.strip().splitlines()) == 1
    assert snapshot(root) == before


def test_a_run_never_deletes_a_file_it_did_not_write(small, tmp_path):
    root = small(tmp_path / "wh")
    foreign = [root / "tables" / "scores" / "mine.parquet", root / "tables" / "z" / "z.parquet",
               root / "notes.txt"]
    for f in foreign:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"not sysdiff's")
    superseded = root / live_rel(root, "pairs")
    small(root, "--ar-trials", "60")  # new pair files replace the old ones
    assert not superseded.exists()
    assert all(f.read_bytes() == b"not sysdiff's" for f in foreign)


def test_a_warehouse_of_an_older_sysdiff_is_adopted(small, tmp_path):
    """A warehouse without the marker (written before it existed) still takes runs."""
    root = small(tmp_path / "wh")
    for name in (".sysdiff-warehouse", ".sysdiff-owned.json", ".sysdiff-readers.lock"):
        (root / name).unlink()
    superseded = root / live_rel(root, "pairs")
    small(root, "--ar-trials", "60")
    assert (root / ".sysdiff-warehouse").is_file() and not superseded.exists()


# 9. Reads during commits


def test_a_reader_keeps_its_files_through_a_commit(small, tmp_path):
    """A connection opened before a commit reads the files it was opened on, though the
    commit supersedes them; the next run deletes them once no reader holds them."""
    root = small(tmp_path / "wh")
    old = root / live_rel(root, "pairs")
    box = connect(root)
    try:
        want = box.run("select sum(n_diff) as n from pairs")["n"].item()
        small(root, "--ar-trials", "60")
        assert old.exists()
        assert box.run("select sum(n_diff) as n from pairs")["n"].item() == want
    finally:
        box.close()
    small(root, "--ar-trials", "70")
    assert not old.exists()
    assert set(json.loads((root / ".sysdiff-owned.json").read_text())) == {
        e["file"] for t in manifest(root)["tables"].values() for e in t.values()}


def test_catalog_folders_of_killed_runs_are_removed(small, tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"sysdiff-catalog-{dead.pid}-test"
    stale.mkdir(exist_ok=True)
    mine = Path(tempfile.mkdtemp(prefix=f"sysdiff-catalog-{os.getpid()}-"))
    try:
        small(tmp_path / "wh")
        assert not stale.exists() and mine.exists()
    finally:
        shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(mine, ignore_errors=True)


# 8. Limits


def test_a_runaway_query_is_stopped(bundled):
    start = time.monotonic()
    code, out, err = run_cli("sql", "-w", str(bundled("sequoia")), "--timeout", "1",
                             "select count(*) from range(1000000000000)")
    assert code == 2 and "longer than the time limit of 1 s" in err, (out, err)
    assert time.monotonic() - start < 10


def test_a_query_over_its_memory_limit_is_refused(bundled):
    code, out, err = run_cli("sql", "-w", str(bundled("sequoia")), "--memory-limit", "64MB",
                             "--timeout", "60",
                             "select count(distinct i) from range(100000000) t(i)")
    assert code == 2 and "more memory than its limit" in err, (out, err)
    assert len(err.strip().splitlines()) == 1


def test_a_bad_memory_limit_is_one_line(bundled):
    code, _, err = run_cli("sql", "-w", str(bundled("sequoia")), "--memory-limit", "lots",
                           "select 1")
    assert code == 2 and "is not a memory size" in err


# 9. Every column type in every format; internal errors


@pytest.mark.parametrize("fmt", ["table", "csv", "tsv", "json", "markdown", "latex"])
def test_every_column_type_prints(bundled, fmt):
    code, out, err = run_cli(
        "sql", "-w", str(bundled("sequoia")), "--format", fmt,
        "select interval 1 day as d, interval 90 minute + interval 14 month as d2, "
        "{'a': 1} as s, [[1]] as ll, map([1], [2]) as m, [interval 1 day] as li")
    assert code == 0, err
    assert "1 day" in out and "1 year 2 months 01:30:00" in out


def test_an_internal_error_exits_4(bundled, monkeypatch):
    import sysdiff.flows.queries as queries

    def broken(*_a, **_k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(queries, "query", broken)
    code, out, err = run_cli("sql", "-w", str(bundled("sequoia")), "select 1")
    assert code == 4 and err.startswith("sysdiff: internal error: RuntimeError: a bug"), err
