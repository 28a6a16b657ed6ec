"""The DuckDB catalog of a warehouse (``sysdiff.duckdb``): one view per table over the live
Parquet files, named relative to the warehouse so the folder can be copied or moved; and the
digest of the manifest it was built from (a catalog lagging its manifest is rebuilt)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import duckdb

from sysdiff.schemas.tables import all_tables

CATALOG = "sysdiff.duckdb"


def sql_literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def table_files(manifest: dict, table: str) -> list[str]:
    """The committed Parquet files of a table, relative to the warehouse (a file shared by
    several partitions once)."""
    return sorted({e["file"] for e in manifest["tables"].get(table, {}).values()})


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def manifest_digest(manifest: dict) -> str:
    """A digest of the manifest's content, recorded in the catalog it produced."""
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()


def catalog_version(root: Path) -> str | None:
    """The manifest digest the catalog was built from (None if absent, unreadable, or
    written by an older sysdiff, whose views named absolute paths)."""
    path = root / CATALOG
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
        try:
            return con.execute("select manifest, files from sysdiff_catalog").fetchone()[0]
        finally:
            con.close()
    except duckdb.Error:
        return None


def catalog_statements(manifest: dict) -> list[tuple[str, object]]:
    """(SQL, arrow table or None) to build one view (or empty typed table) per table.

    Views name their files relative to the warehouse folder, so the folder can be copied or
    moved: a reader resolves them through DuckDB's ``file_search_path`` (see :func:`connect`
    in ``queries.py``), or by running from inside the folder."""
    statements: list[tuple[str, object]] = []
    for table, schema in all_tables().items():
        files = table_files(manifest, table)
        if files:
            listing = ", ".join(sql_literal(f) for f in files)
            statements.append((f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listing}], "
                               "union_by_name = true, hive_partitioning = false)", None))
        else:
            statements.append((f"CREATE TABLE {table} AS SELECT * FROM empty_arrow",
                               schema.empty_table()))
    return statements


def refresh_catalog(root: Path, manifest: dict) -> None:
    """Rebuild ``sysdiff.duckdb``: built in a private temporary folder (DuckDB cannot write a
    database whose path holds a '?'), copied in beside it, then renamed over it."""
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sysdiff-catalog-") as work:
        built = Path(work) / CATALOG
        build_catalog(built, root, manifest)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".catalog.", suffix=".duckdb")
        try:
            with os.fdopen(fd, "wb") as out, built.open("rb") as src:
                shutil.copyfileobj(src, out)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o666 & ~umask())
            os.replace(tmp, root / CATALOG)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def build_catalog(path: Path, root: Path, manifest: dict) -> None:
    """Write a catalog database at ``path`` for the warehouse ``root``: one view per table
    over its live files (relative paths), and ``sysdiff_catalog`` (the manifest's digest and
    the list of files the views read)."""
    con = duckdb.connect(str(path), config={"file_search_path": str(root),
                                            "autoinstall_known_extensions": False,
                                            "autoload_known_extensions": False})
    try:
        for sql, empty_arrow in catalog_statements(manifest):
            if empty_arrow is not None:
                con.register("empty_arrow", empty_arrow)
            con.execute(sql)
            if empty_arrow is not None:
                con.unregister("empty_arrow")
        files = sorted({e["file"] for t in manifest["tables"].values() for e in t.values()})
        con.execute("create table sysdiff_catalog as select ? as manifest, "
                    "?::varchar[] as files", [manifest_digest(manifest), files])
        con.execute("checkpoint")
    finally:
        con.close()
