"""The views of a warehouse, built once per commit and kept in a private cache.

Every read-only connection needs the warehouse's views (:func:`sysdiff.flows.queries.
build_views`): about 60 statements, whose ``read_parquet`` views DuckDB binds as they are
created by reading the files' footers. That took 42 ms of every ``sysdiff sql`` on the
Sequoia sample and 115 ms at 100 systems. The views are instead built once into a small
DuckDB database of this user's private cache folder (under the system's temporary folder,
like the object cache of :mod:`sysdiff.flows.mirror`), which each later connection attaches
read-only and uses as its default database (about 15 ms).

A cached database is named by a digest of everything the views are made of: DuckDB's
version, the statements themselves (which name every live file by absolute path and carry
the manifest's column types) and each live file's size, modification time and inode. Any
change (a new commit, a file rewritten or damaged) gives another name, so a cached database
is always what building the views now would give; the warehouse's own ``sysdiff.duckdb`` is
never read. What cannot be cached (no private folder, a path DuckDB cannot write, a damaged
cached file) is built in memory, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

import duckdb

from sysdiff.flows.mirror import private_dir

#: Cached databases kept (the most recently used; each one commit of one warehouse).
KEEP = 32
#: Seconds after which a half-built database (a reader killed while building) is removed.
STALE_S = 3600.0
SUFFIX = ".duckdb"


def views_key(statements: Iterable[str], files: Iterable[str]) -> str:
    """The digest that names the views of ``statements`` over ``files`` (see the module)."""
    h = hashlib.sha256(f"duckdb {duckdb.__version__}\0".encode())
    for sql in statements:
        h.update(sql.encode() + b"\0")
    for path in sorted(set(files)):
        try:
            st = os.stat(path)
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0".encode())
        except OSError:  # missing: its table's view says so (built, never cached)
            h.update(f"{path}\0missing\0".encode())
    return h.hexdigest()[:32]


def cached_views(key: str, build: Callable[[duckdb.DuckDBPyConnection], None]) -> Path | None:
    """The cached database of ``key``, built now by ``build`` (given a connection to a new
    database) when there is none; None when it cannot be kept."""
    try:
        folder = private_dir("views")
    except OSError:
        return None
    path = folder / f"views-{key}{SUFFIX}"
    if path.exists():
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept by :func:`prune`
        return path
    tmp = folder / f".building-{key}-{uuid.uuid4().hex[:8]}{SUFFIX}"
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.execute("BEGIN")  # one commit: a third of the time of one per view
            build(con)  # (a damaged file's error aborts it: views built in the connection)
            con.execute("COMMIT")
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, path)
    except (OSError, duckdb.Error):
        return None
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
    prune(folder)
    return path


def prune(folder: Path, keep: int = KEEP) -> None:
    """Keep the ``keep`` most recently used databases, and half-built ones younger than
    :data:`STALE_S` (a reader may still be building them)."""
    done = []
    for entry in folder.iterdir():
        with contextlib.suppress(FileNotFoundError):
            mtime = entry.stat().st_mtime
            if entry.name.startswith(".building-"):
                if time.time() - mtime > STALE_S:
                    entry.unlink()
            elif entry.name.startswith("views-") and entry.suffix == SUFFIX:
                done.append((mtime, entry))
    for _mtime, entry in sorted(done, reverse=True)[keep:]:
        entry.unlink(missing_ok=True)
