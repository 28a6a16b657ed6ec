"""Read-only access to the warehouse through DuckDB, sandboxed (never starts Prefect).

Every read-only command (``sql``, ``show``, ``examples``, ``check``, ``report``) opens the
catalog through :func:`connect`, which can read the warehouse's live Parquet files and
nothing else:

- the catalog is opened read-only, with extension auto-install and auto-load off;
- ``allowed_paths`` lists exactly the files the catalog's views read, then
  ``enable_external_access = false`` refuses every other file, folder, glob, ``ATTACH``,
  ``COPY ... TO``, ``EXPORT DATABASE``, ``INSTALL`` and ``LOAD``;
- ``lock_configuration = true`` refuses every later ``SET``;
- DuckDB spills big sorts into a private folder under the system's temporary directory,
  never into the warehouse.

:func:`query` also refuses, before running anything, every statement that is not a query
(``COPY``, ``EXPORT``, ``ATTACH``, ``LOAD``, ``INSTALL``, ``SET``, ``PRAGMA``, ``CALL``,
writes): the sandbox allows the live files themselves, and ``COPY`` over one of them would
replace a result.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import duckdb
import polars as pl

from sysdiff.flows.catalog import CATALOG, sql_literal
from sysdiff.schemas.errors import InputError

READ_TYPES = {"SELECT", "EXPLAIN", "MULTI"}
# Keywords that make a statement more than a query (checked in EXPLAIN and PIVOT statements,
# whose inner statement DuckDB does not type).
WRITE_WORDS = {"copy", "insert", "update", "delete", "create", "drop", "alter", "attach",
               "detach", "export", "import", "load", "install", "set", "reset", "pragma",
               "call", "checkpoint", "vacuum", "use", "truncate", "merge", "force"}
ALLOWED = "SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, PIVOT, EXPLAIN"


def spill_dir() -> str:
    """Where DuckDB may spill big sorts and joins: a private folder of this user."""
    return str(Path(tempfile.gettempdir()) / f"sysdiff-duckdb-{os.getuid()}")


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """Open the warehouse catalog read-only, locked to the warehouse's live files."""
    path = root / CATALOG
    if not path.exists():
        raise InputError("no sysdiff warehouse here (no sysdiff.duckdb); run 'sysdiff run' or "
                         "'sysdiff demo' first, or pass --warehouse", root)
    try:
        con = duckdb.connect(str(path), read_only=True, config={
            "file_search_path": str(root), "autoinstall_known_extensions": False,
            "autoload_known_extensions": False, "temp_directory": spill_dir()})
    except duckdb.Error as e:
        raise InputError(f"cannot open the catalog: {_first_line(e)}", path) from None
    try:
        if _already_sandboxed(con):
            return con
        files = catalog_files(con)
        allowed = files + [str(root / f) for f in files]
        con.execute("set allowed_paths = [" + ", ".join(map(sql_literal, allowed)) + "]")
        con.execute("set enable_external_access = false")
        con.execute("set lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _already_sandboxed(con: duckdb.DuckDBPyConnection) -> bool:
    """True when ``con`` shares the database instance of a connection that is still open in
    this process (DuckDB shares one instance per file), already locked by :func:`connect`."""
    [(locked, external)] = con.execute(
        "select current_setting('lock_configuration'), "
        "current_setting('enable_external_access')").fetchall()
    return bool(locked) and not external


def catalog_files(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The files the catalog's views read, relative to the warehouse (as the catalog
    recorded them when it was built)."""
    try:
        [row] = con.execute("select files from sysdiff_catalog").fetchall()
    except duckdb.Error:
        raise InputError("the catalog was written by an older sysdiff (its views name "
                         "absolute paths); any 'sysdiff run' on this warehouse rebuilds it"
                         ) from None
    return list(row[0] or [])


def check_read_only(sql: str) -> None:
    """Refuse, in one line, anything but one read-only query."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise InputError(f"SQL error: {_first_line(e)}") from None
    if len(statements) != 1:
        raise InputError("give one SQL query" if not statements else
                         f"give one SQL query at a time (got {len(statements)} statements)")
    kind = statements[0].type.name
    words = _keywords(sql)
    if kind not in READ_TYPES or (kind != "SELECT" and WRITE_WORDS & set(words)):
        what = next((w for w in words if w in WRITE_WORDS), kind.lower())
        raise InputError(f"the warehouse is read-only through sysdiff: {what.upper()} "
                         f"statements are refused; only queries ({ALLOWED}) run")


def _keywords(sql: str) -> list[str]:
    """The SQL keywords of ``sql``, lower case, in order (comments and literals skipped)."""
    tokens = duckdb.tokenize(sql)
    out = []
    for i, (start, kind) in enumerate(tokens):
        if kind == duckdb.token_type.keyword:
            end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
            out.append(sql[start:end].strip().lower())
    return out


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def query(root: Path, sql: str) -> pl.DataFrame:
    """Run one read-only SQL statement in the sandbox; anything else is an InputError."""
    check_read_only(sql)
    con = connect(root)
    try:
        return pl.from_arrow(con.sql(sql).to_arrow_table())
    except duckdb.PermissionException as e:
        raise InputError("refused: sysdiff reads only the warehouse's tables (no other "
                         f"files, extensions or settings): {_first_line(e)}") from None
    except duckdb.Error as e:
        first = _first_line(e)
        if "read-only" in first.lower() or "read only" in first.lower():
            raise InputError("the warehouse is read-only through sysdiff; only queries "
                             f"({ALLOWED}) run ({first})") from None
        if "configuration has been locked" in first:
            raise InputError(f"refused: settings cannot be changed ({first})") from None
        raise InputError(f"SQL error: {first}") from None
    finally:
        con.close()
