"""A run killed (SIGKILL) at any point leaves the previous results readable, and a rerun
produces the same tables as an uninterrupted run. Concurrent runs are serialised."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from sysdiff.flows.queries import query
from tests.conftest import REPO, snapshot
from tests.test_scale import all_tables, sample, sort_rows

POINTS = ["compare", "commit-moving", "commit-manifest", "commit-catalog"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return sample(tmp_path_factory.mktemp("crash"), 30)


def args(files: dict[str, Path], root: Path, names: list[str]) -> list[str]:
    return ["run", "--key", str(files["key"]), "--corpus", "s", "--task", "dep",
            "--ar-trials", "100", "-w", str(root), *[f"--system={n}={files[n]}" for n in names]]


def run_killed(argv: list[str], point: str) -> int:
    """Run sysdiff in a subprocess that SIGKILLs itself at ``point``; return its status."""
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ, SYSDIFF_CRASH_AT=point, PREFECT_API_URL=PREFECT_API_URL.value())
    code = "from sysdiff.flows.cli import main; main()"
    proc = subprocess.run([sys.executable, "-c", code, *argv], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode


def catalog_tables(root: Path) -> dict[str, pl.DataFrame]:
    """What a reader of sysdiff.duckdb sees, in the same shape as ``all_tables``."""
    from sysdiff.flows.catalog import STORED_AS

    out = {}
    for name, df in all_tables(root).items():  # a stored table as stored (not its view)
        sql = f"select * from {STORED_AS.get(name, name)}"
        out[name] = sort_rows(query(root, sql).select(df.columns))
    return out


def same(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> bool:
    return all(a[t].equals(b[t]) for t in a)


@pytest.fixture(scope="module")
def uninterrupted(files, tmp_path_factory, prefect_harness):
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("ref") / "wh"
    assert run_cli(*args(files, root, ["a", "b"]))[0] == 0
    assert run_cli(*args(files, root, ["c"]))[0] == 0
    return all_tables(root)


@pytest.mark.parametrize("point", POINTS)
def test_kill_then_rerun(point, files, uninterrupted, tmp_path, cli):
    root = tmp_path / "wh"
    assert cli(*args(files, root, ["a", "b"]))[0] == 0
    before = catalog_tables(root)
    assert run_killed(args(files, root, ["c"]), point) == -signal.SIGKILL
    after_kill = catalog_tables(root)  # readable, and either all old or all new
    assert same(after_kill, before) or same(after_kill, uninterrupted)
    code, _, err = cli(*args(files, root, ["c"]))
    assert code == 0, err
    assert same(all_tables(root), uninterrupted)
    assert same(catalog_tables(root), uninterrupted)
    assert not list(tmp_path.glob(".sysdiff-staging-*"))
    listed = {str(p) for p in (root / "tables").rglob("*.parquet")}
    manifest_files = {str(root / e["file"]) for t in __import__("json").loads(
        (root / "manifest.json").read_text())["tables"].values() for e in t.values()}
    assert listed == manifest_files  # no orphans left behind


@pytest.mark.parametrize("existing", [True, False])
def test_concurrent_run_is_refused_clearly(existing, files, tmp_path, cli):
    """While another run holds a warehouse (also one not created yet), a run is refused."""
    from sysdiff.flows.warehouse import warehouse_lock

    root = tmp_path / "wh"
    if existing:
        assert cli(*args(files, root, ["a"]))[0] == 0
    before = snapshot(root)
    with warehouse_lock(root):  # another run holds the warehouse
        code, _, err = cli(*args(files, root, ["b"]))
    assert snapshot(root) == before
    assert code == 2 and "another sysdiff run is writing to this warehouse" in err
