"""The warehouse's views, built once per commit into a private cached database that later
connections attach read-only (:mod:`sysdiff.flows.view_cache`): the same tables as views
built in the connection, a new database for any change of the files, the sandbox as tight,
and a cache that cannot be used is no error."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from sysdiff.flows import queries, view_cache
from sysdiff.schemas.errors import InputError
from tests.snapshot import sandbox_dumps


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A temporary folder of the test's own: the cache is made in it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp / f"sysdiff-views-{os.getuid()}"


@pytest.fixture
def built(monkeypatch) -> list[int]:
    """One entry a build of the views (in a cached database or in a connection)."""
    calls: list[int] = []
    build_views = queries.build_views

    def counting(con, statements):  # noqa: ANN001, ANN202
        calls.append(len(statements))
        return build_views(con, statements)

    monkeypatch.setattr(queries, "build_views", counting)
    return calls


def cached_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def no_cache(monkeypatch) -> None:  # noqa: ANN001
    def refused(name: str) -> Path:
        raise PermissionError(f"{name}: not this user's own folder")

    monkeypatch.setattr(view_cache, "private_dir", refused)  # as for another user's folder


def test_views_are_built_once_a_commit_and_read_the_same(bundled, cache, built, monkeypatch):
    root = bundled("sequoia")
    first = sandbox_dumps(root)  # builds the cached database
    assert len(built) == 1 and len(cached_files(cache)) == 1
    attached = sandbox_dumps(root)  # attaches it: nothing built
    assert len(built) == 1 and attached == first
    box = queries.connect(root)
    try:
        assert box.con.execute("select current_database()").fetchone() == ("warehouse",)
        for sql in ("select * from read_csv('/etc/passwd')", "detach warehouse",
                    "use memory", "attach '/tmp/x.duckdb' as x"):
            with pytest.raises(InputError):
                box.run(sql)
    finally:
        box.close()
    no_cache(monkeypatch)
    assert sandbox_dumps(root) == first  # built in the connection, the same tables
    assert len(built) == 2 and len(cached_files(cache)) == 1


def test_a_changed_file_gets_views_of_its_own(bundled, cache, built, tmp_path):
    root = tmp_path / "wh"
    shutil.copytree(bundled("sequoia"), root)
    before = queries.query(root, "select * from scores order by all")
    live = next((root / "tables" / "scores").rglob("*.parquet"))
    later = time.time() + 10
    os.utime(live, (later, later))  # the same bytes, another modification time
    assert queries.query(root, "select * from scores order by all").equals(before)
    assert len(built) == 2 and len(cached_files(cache)) == 2


def test_a_damaged_cached_database_is_built_again(bundled, cache, built):
    root = bundled("litbank")
    first = sandbox_dumps(root)
    [name] = cached_files(cache)
    (cache / name).write_bytes(b"not a database")
    assert sandbox_dumps(root) == first  # built in the connection; the damaged file goes
    assert len(built) == 2 and cached_files(cache) == []
    assert sandbox_dumps(root) == first and cached_files(cache) == [name]  # made again
    assert len(built) == 3


def test_a_cache_folder_that_is_not_private_is_not_used(bundled, cache, built, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache.symlink_to(elsewhere)
    root = bundled("sequoia")
    assert queries.query(root, "select count(*) as n from scores")["n"][0] > 0
    assert len(built) == 1 and list(elsewhere.iterdir()) == []


def test_prune_keeps_the_most_recently_used_and_fresh_half_built_ones(tmp_path):
    now = time.time()
    for age, name in enumerate(["views-a.duckdb", "views-b.duckdb", "views-c.duckdb"]):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (now - age, now - age))
    for age, name in ((10, ".building-new.duckdb"),
                      (2 * view_cache.STALE_S, ".building-old.duckdb")):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (now - age, now - age))
    view_cache.prune(tmp_path, keep=2)
    assert cached_files(tmp_path) == [".building-new.duckdb", "views-a.duckdb",
                                      "views-b.duckdb"]
