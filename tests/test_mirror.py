"""Reads of a warehouse on an object store go through verified local copies
(``flows/mirror.py``): the copies are the manifest's bytes (SHA-256 and size), a damaged
object is never read, a copy is downloaded once, the folder of links goes with its
connection, the cache keeps to its limit, and big objects are read in place."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sysdiff.flows import mirror
from sysdiff.flows.objstore import read_versioned
from sysdiff.flows.queries import connect
from sysdiff.flows.store import StoreURL
from sysdiff.schemas.errors import InputError
from tests.conftest import BUNDLED
from tests.objstore import bucket, s3_env  # noqa: F401 (fixtures)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private temporary directory for this test's object cache."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return mirror.cache_dir()


@pytest.fixture(scope="module")
def store_wh(s3_env, tmp_path_factory, prefect_harness):  # noqa: F811
    """The bundled Sequoia sample run into a fresh bucket; its root URL."""
    from sysdiff.flows.store import filesystem
    from tests.conftest import run_cli

    name = f"mirror{os.getpid()}"
    filesystem("s3").mkdir(name)
    root = f"s3://{name}/wh"
    code, _out, err = run_cli("run", str(BUNDLED["sequoia"]), "-w", root)
    assert code == 0, err
    return root


def live_entry(root: str, table: str) -> dict:
    _version, manifest = read_versioned(StoreURL(root))
    return next(iter(manifest["tables"][table].values()))


def test_every_read_is_of_a_verified_local_copy(store_wh, cache):
    sandbox = connect(StoreURL(store_wh))
    try:
        assert sandbox.files and all(f.startswith(str(cache)) for f in sandbox.files)
        n = sandbox.run("select count(*) as n from scores")["n"][0]
        assert n > 0
        links = {p for p in cache.iterdir() if p.name.startswith("links-")}
        assert len(links) == 1
    finally:
        sandbox.close()
    assert not any(p.name.startswith("links-") for p in cache.iterdir())
    entry = live_entry(store_wh, "scores")
    copy = cache / f"{entry['sha256']}.parquet"
    import hashlib

    assert hashlib.sha256(copy.read_bytes()).hexdigest() == entry["sha256"]
    inode = copy.stat().st_ino
    sandbox = connect(StoreURL(store_wh))  # the copy is reused, not downloaded again
    try:
        assert sandbox.run("select count(*) as n from scores")["n"][0] == n
    finally:
        sandbox.close()
    assert copy.stat().st_ino == inode


def test_a_damaged_object_is_never_read(store_wh, cache, bucket):  # noqa: F811
    """An object whose bytes are not the manifest's (same size): its table cannot be read,
    with the table's name; every other table reads."""
    entry = live_entry(store_wh, "scores")
    obj = StoreURL(store_wh) / entry["file"]
    good = obj.read_bytes()
    obj.write_bytes(bytes(len(good)))
    try:
        sandbox = connect(StoreURL(store_wh))
        try:
            with pytest.raises(InputError, match="scores cannot be read"):
                sandbox.run("select * from scores")
            assert sandbox.run("select count(*) as n from systems")["n"][0] > 0
        finally:
            sandbox.close()
        assert not (cache / f"{entry['sha256']}.parquet").exists()
    finally:
        obj.write_bytes(good)


def test_big_objects_are_read_in_place(store_wh, cache, monkeypatch):
    monkeypatch.setenv("SYSDIFF_MIRROR_BYTES", "1")
    sandbox = connect(StoreURL(store_wh))
    try:
        assert sandbox.files and all(f.startswith("s3://") for f in sandbox.files)
        assert sandbox.run("select count(*) as n from scores")["n"][0] > 0
    finally:
        sandbox.close()
    assert not any(p.suffix == ".parquet" for p in cache.iterdir())


def test_the_cache_keeps_to_its_limit_oldest_first(cache):
    now = time.time()
    sizes = {"a": 100, "b": 100, "c": 100, "d": 100}
    for k, (name, size) in enumerate(sizes.items()):
        path = cache / f"{name * 64}.parquet"
        path.write_bytes(b"x" * size)
        os.utime(path, (now - 100 + k, now - 100 + k))  # a oldest, d newest
    kept_by_link = cache / f"{'a' * 64}.parquet"
    links = cache / f"links-{os.getpid()}-x"
    links.mkdir()
    os.link(kept_by_link, links / "t.parquet")  # in use by this (live) process
    mirror.prune(cache, 250)
    left = sorted(p.name[0] for p in cache.iterdir() if p.suffix == ".parquet")
    # b and c go (oldest first); a is older still but linked by a live reader
    assert left == ["a", "d"]
    assert links.exists()


def test_the_links_of_a_dead_reader_are_removed(cache):
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = cache / f"links-{proc.stdout.strip()}-x"
    dead.mkdir()
    (dead / "t.parquet").write_bytes(b"x")
    alive = cache / f"links-{os.getpid()}-y"
    alive.mkdir()
    mirror.prune(cache, 1 << 30)
    assert not dead.exists() and alive.exists()


def test_a_compare_reads_each_file_from_its_verified_local_copy(
        s3_env, cache, monkeypatch, prefect_harness):  # noqa: F811
    """A run on a store: every file a compare task reads (the key's words and sentences,
    each system's words) is the task's own link to a copy in the cache, named by the SHA-256
    the run recorded for the object; no shard's slice is read from the store."""
    from sysdiff.flows import tokens
    from sysdiff.flows.store import filesystem
    from tests.conftest import run_cli

    read = []

    def scan(source, **options):
        read.append(str(source))
        return scan_parquet(source, **options)

    scan_parquet = tokens.scan_parquet
    monkeypatch.setattr(tokens, "scan_parquet", scan)
    name = f"compare{os.getpid()}"
    filesystem("s3").mkdir(name)
    root = f"s3://{name}/wh"
    code, _out, err = run_cli("run", str(BUNDLED["sequoia"]), "-w", root)
    assert code == 0, err
    _version, manifest = read_versioned(StoreURL(root))
    copies = {f"{e['sha256']}.parquet" for table in ("words", "units", "sents")
              for e in manifest["tables"].get(table, {}).values()}
    held = [Path(r) for r in read]
    assert held and {p.name for p in held} <= copies
    # each read through the task's own link to the copy, gone once the task ended
    assert {p.parent.parent for p in held} == {cache}
    assert all(p.parent.name.startswith("links-") and not p.parent.exists() for p in held)
    words = {f"{e['sha256']}.parquet" for e in manifest["tables"]["words"].values()}
    assert words <= {p.name for p in held}  # (every system's words were read)


def test_a_local_copy_is_checked_made_once_and_big_objects_stay_in_place(
        bucket, cache, monkeypatch):  # noqa: F811
    import hashlib

    url, data, sha = _object(bucket, "x.parquet")
    with pytest.raises(RuntimeError, match="not those the run wrote"):
        mirror.local_copy(url, hashlib.sha256(b"other").hexdigest(), len(data))
    path = mirror.local_copy(url, sha, len(data))
    assert path == str(cache / f"{sha}.parquet") and Path(path).read_bytes() == data
    inode = os.stat(path).st_ino
    assert mirror.local_copy(url, sha, len(data)) == path and os.stat(path).st_ino == inode
    monkeypatch.setenv("SYSDIFF_MIRROR_BYTES", str(len(data) - 1))
    assert mirror.local_copy(url, sha, len(data)) == url


def _object(bucket: str, name: str) -> tuple[str, bytes, str]:  # noqa: F811
    """A new object of random bytes in ``bucket``: its URL, bytes and SHA-256."""
    import hashlib

    data = b"PAR1" + os.urandom(4000) + b"PAR1"
    url = f"{bucket}/{name}"
    StoreURL(url).write_bytes(data)
    return url, data, hashlib.sha256(data).hexdigest()


def test_a_held_copy_outlives_a_prune_until_its_task_ends(bucket, cache):  # noqa: F811
    url, data, sha = _object(bucket, "held.parquet")
    with mirror.held_copies() as hold:
        path = Path(mirror.local_copy(url, sha, len(data), folder=hold))
        assert path.parent == hold and path.read_bytes() == data
        mirror.prune(cache, 0)  # another task's prune, the cache over its limit
        assert (cache / f"{sha}.parquet").exists()  # linked twice: never pruned
        (cache / f"{sha}.parquet").unlink()  # gone from the cache all the same
        assert path.read_bytes() == data  # the task still reads it
    assert not hold.exists()
    mirror.local_copy(url, sha, len(data))
    mirror.prune(cache, 0)  # held by no task now: pruned
    assert not (cache / f"{sha}.parquet").exists()


def test_a_copy_pruned_before_it_is_held_is_fetched_again(bucket, cache, monkeypatch):  # noqa: F811
    url, data, sha = _object(bucket, "raced.parquet")
    fetch, calls = mirror.cached, []

    def pruned_at_once(*args):  # another process prunes the copy as soon as it is made
        path = fetch(*args)
        calls.append(path)
        if len(calls) == 1:
            path.unlink()
        return path

    monkeypatch.setattr(mirror, "cached", pruned_at_once)
    with mirror.held_copies() as hold:
        path = Path(mirror.local_copy(url, sha, len(data), folder=hold))
        assert len(calls) == 2 and path.read_bytes() == data
    calls.clear()

    def always_pruned(*args):
        calls.append(1)
        path = fetch(*args)
        path.unlink()
        return path

    monkeypatch.setattr(mirror, "cached", always_pruned)
    with mirror.held_copies() as hold, pytest.raises(RuntimeError, match="pruned 3 times"):
        mirror.local_copy(url, sha, len(data), folder=hold)
    assert len(calls) == mirror.HOLD_ATTEMPTS
