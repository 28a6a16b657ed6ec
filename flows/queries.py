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

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from sysdiff.flows.catalog import CATALOG, sql_literal
from sysdiff.flows.rows import NUMERIC, Rows, plain, polars_type
from sysdiff.schemas.errors import InputError

if TYPE_CHECKING:
    import polars as pl

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


def check_read_only(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Refuse, in one line, anything but one read-only query (parsed by ``con``, else by
    DuckDB's default connection, which costs 25 ms to create)."""
    try:
        statements = (duckdb if con is None else con).extract_statements(sql)
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


_shared: dict[Path, duckdb.DuckDBPyConnection] | None = None


@contextlib.contextmanager
def one_connection() -> Iterator[None]:
    """Within the block, the queries on a warehouse share one sandboxed connection (a
    command that runs several queries opens the catalog once, 20-80 ms each time); it is
    closed when the block ends."""
    global _shared
    outer = _shared
    if outer is None:
        _shared = {}
    try:
        yield
    finally:
        if outer is None:
            opened, _shared = _shared or {}, None
            for con in opened.values():
                con.close()


def query(root: Path, sql: str, rows: bool = False) -> pl.DataFrame | Rows:
    """Run one read-only SQL statement in the sandbox; anything else is an InputError. With
    ``rows``, the result comes back as :class:`Rows` (polars is not imported for the usual
    column types: the read-only commands)."""
    shared = _shared is not None
    con = _shared.get(root) if shared else None
    if con is None:
        try:
            con = connect(root)
        except InputError:
            check_read_only(sql)  # a refused statement is said first, the warehouse next
            raise
        if shared:
            _shared[root] = con
    try:
        check_read_only(sql, con)
        return fetch(con.execute(sql), rows)
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
        if not shared:
            con.close()



def query_rows(root: Path, sql: str) -> Rows:
    """:func:`query`, the result as :class:`Rows` (what the read-only commands compute and
    print from without importing polars)."""
    return query(root, sql, rows=True)

#: Rows of a result read as Python values without Arrow (pyarrow and numpy take 0.1-0.2 s to
#: import) when a frame is asked for; a bigger result, or one with a column of another type,
#: is read as Arrow.
SMALL_RESULT = 10_000


def fetch(result: duckdb.DuckDBPyConnection, as_rows: bool = False) -> pl.DataFrame | Rows:
    """An executed query's rows as a polars frame (column types as Arrow would give); with
    ``as_rows``, as :class:`Rows` (polars not imported when every column is of a type read
    without Arrow, whatever the size)."""
    names = [d[0] for d in result.description]
    if not all(plain(d[1]) for d in result.description) or len(set(names)) != len(names):
        frame = _from_arrow(result, names, [])
        return Rows.from_frame(frame) if as_rows else frame
    types = [d[1] for d in result.description]
    if as_rows:
        return Rows(names, [t.id in NUMERIC for t in types], result.fetchall(), types)
    rows = result.fetchmany(SMALL_RESULT + 1)
    if len(rows) > SMALL_RESULT:
        return _from_arrow(result, names, rows)
    import polars as pl

    schema = list(zip(names, map(polars_type, types), strict=True))
    return pl.DataFrame(rows, schema=schema, orient="row")


def _from_arrow(result: duckdb.DuckDBPyConnection, names: list[str], head: list[tuple]
                ) -> pl.DataFrame:
    """The rest of a result read as Arrow, after the ``head`` rows already read."""
    import warnings

    import polars as pl
    import pyarrow as pa

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Arrow output on a DB-API result makes a copy"
        rest = result.to_arrow_table()
    if head:
        first = pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in head],
                                     schema=rest.schema)
        rest = pa.concat_tables([first, rest])
    return pl.from_arrow(rest)
