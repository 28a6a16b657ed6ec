"""Read-only access to the warehouse through DuckDB, sandboxed (never starts Prefect).

Every read-only command (``sql``, ``show``, ``examples``, ``check``, ``report``) and the Python
API read through :func:`connect`, which can read the warehouse's live Parquet files and
nothing else:

- the warehouse root is resolved (symlinks included) and the manifest read when the
  connection opens: its views name every file by absolute path under that root, so nothing
  resolves against the current folder, and each connection sees the latest commit;
- a file that is not a regular file inside the warehouse (a symlink out of it) is refused;
- an in-memory database holds the views, or attaches them read-only as its default database
  from a private cache where they were built for exactly these files
  (:mod:`sysdiff.flows.view_cache`); ``allowed_paths`` lists exactly their files, then
  ``enable_external_access = false`` refuses every other file, folder, glob, ``ATTACH``,
  ``COPY ... TO``, ``EXPORT DATABASE``, ``INSTALL`` and ``LOAD``; extension auto-install and
  auto-load are off and ``lock_configuration = true`` refuses every later ``SET``;
- each query runs within a time limit and a memory limit (:class:`Limits`); DuckDB spills
  big sorts into a private folder under the system's temporary directory;
- the connection holds the warehouse's readers' lock (shared), so a run does not delete the
  files it reads until it closes.

:func:`query` also refuses, before running anything, every statement that is not a query
(``COPY``, ``EXPORT``, ``ATTACH``, ``LOAD``, ``INSTALL``, ``SET``, ``PRAGMA``, ``CALL``,
writes).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from sysdiff.flows.catalog import catalog_statements, sql_literal, table_files
from sysdiff.flows.locks import hold_shared, release
from sysdiff.flows.mirror import mirror
from sysdiff.flows.names import MANIFEST, read_manifest
from sysdiff.flows.rows import NUMERIC, Rows, plain, polars_type
from sysdiff.flows.store import StoreURL
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
#: Defaults of the limits of one query (``--timeout``, ``--memory-limit``).
DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_SHARE = 0.25


@dataclass(frozen=True)
class Limits:
    """The limits of one query: seconds (0: none) and DuckDB's memory limit in bytes."""

    timeout: float
    memory: int


def default_limits() -> Limits:
    """``$SYSDIFF_SQL_TIMEOUT`` seconds (default 60) and ``$SYSDIFF_SQL_MEMORY`` bytes
    (default a quarter of the machine's memory)."""
    timeout = float(os.environ.get("SYSDIFF_SQL_TIMEOUT") or DEFAULT_TIMEOUT)
    memory = os.environ.get("SYSDIFF_SQL_MEMORY")
    return Limits(timeout, int(memory) if memory else int(physical_memory() *
                                                          DEFAULT_MEMORY_SHARE))


def physical_memory() -> int:
    """The machine's memory in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


_limits: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("limits", default=None)


@contextlib.contextmanager
def limits(value: Limits) -> Iterator[None]:
    """Within the block, queries run with these limits (the command line's options)."""
    token = _limits.set(value)
    try:
        yield
    finally:
        _limits.reset(token)


def current_limits() -> Limits:
    return _limits.get() or default_limits()


def spill_dir() -> str:
    """Where DuckDB may spill big sorts and joins: a private folder of this user."""
    return str(Path(tempfile.gettempdir()) / f"sysdiff-duckdb-{os.getuid()}")


class Sandbox:
    """A sandboxed read-only connection to one warehouse (see the module's docstring), with
    the readers' lock it holds until :meth:`close`."""

    def __init__(self, root: Path, con: duckdb.DuckDBPyConnection, lock: int | None,
                 files: list[str], cleanup: Callable[[], None] | None = None) -> None:
        self.root, self.con, self.files = root, con, files
        self._lock: int | None = lock
        self._cleanup = cleanup

    def run(self, sql: str, rows: bool = False) -> pl.DataFrame | Rows:
        """One read-only statement's result (see :func:`query`); anything else, a refused
        file, or a query over a limit is an InputError."""
        try:
            check_read_only(sql, self.con)
            with time_limit(self.con, current_limits().timeout):
                return fetch(self.con.execute(sql), rows)
        except duckdb.Error as e:
            raise refusal(e) from None

    def close(self) -> None:
        self.con.close()
        release(self._lock)
        self._lock = None
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None


def connect(root: Path | StoreURL) -> Sandbox:
    """Open the warehouse read-only, locked to its live files (see the module's docstring)."""
    if isinstance(root, StoreURL):
        return connect_store(root)
    root = Path(os.path.realpath(root))
    if not (root / MANIFEST).is_file():
        raise InputError("no sysdiff warehouse here (no manifest.json); run 'sysdiff run' or "
                         "'sysdiff demo' first, or pass --warehouse", root)
    lock = hold_shared(root)
    try:
        manifest = read_manifest(root)
        files = live_paths(root, manifest)
        con = duckdb.connect(":memory:", config=sandbox_config())
    except BaseException:
        release(lock)
        raise
    try:
        use_views(con, root, manifest, files)
        allowed = lock_down(con, files)
    except BaseException:
        con.close()
        release(lock)
        raise
    return Sandbox(root, con, lock, allowed)


def sandbox_config() -> dict[str, str | bool]:
    """A sandbox's connection settings: no extension installed or loaded behind the user's
    back, spills in a private folder, the memory limit."""
    return {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
            "temp_directory": spill_dir(), "memory_limit": f"{current_limits().memory}B"}


def use_views(con: duckdb.DuckDBPyConnection, root: Path, manifest: dict,
              files: dict[str, list[str]]) -> None:
    """Give ``con`` the warehouse's views: their cached database attached read-only as the
    default database (:mod:`sysdiff.flows.view_cache`), else built in ``con``'s own."""
    from sysdiff.flows import view_cache

    views = catalog_statements(manifest, root)

    def build(target: duckdb.DuckDBPyConnection) -> None:
        natural_macro(target)
        build_views(target, views)

    key = view_cache.views_key([NATURAL_MACRO, *views],
                               (f for paths in files.values() for f in paths))
    cached = view_cache.cached_views(key, build)
    if cached is not None:
        try:
            con.execute(f"ATTACH {sql_literal(str(cached))} AS warehouse (READ_ONLY)")
            con.execute("USE warehouse")
            return
        except duckdb.Error:
            with contextlib.suppress(duckdb.Error):
                con.execute("DETACH warehouse")
            cached.unlink(missing_ok=True)  # made again by the next reader
    build(con)


#: SQL: ``natural_key(s)``, the sort key of names in natural order (A2 before A10): digit
#: runs padded with zeros, as :func:`sysdiff.schemas.vocabulary.natural_key` pads them.
NATURAL_MACRO = ("create macro natural_key(s) as array_to_string(list_transform("
                 "regexp_extract_all(s, '[0-9]+|[^0-9]+'), {lam} case when "
                 "regexp_full_match(x, '[0-9]+') then repeat('0', greatest(0, {width} - "
                 "length(x))) || x else x end), '')")


def natural_macro(con: duckdb.DuckDBPyConnection) -> None:
    """Define ``natural_key(s)`` (DuckDB's lambda syntax, or the older arrow)."""
    from sysdiff.schemas.vocabulary import NATURAL_WIDTH

    try:
        con.execute(NATURAL_MACRO.format(lam="lambda x:", width=NATURAL_WIDTH))
    except duckdb.Error:
        con.execute(NATURAL_MACRO.format(lam="x ->", width=NATURAL_WIDTH))


def seal(con: duckdb.DuckDBPyConnection, root: Path | StoreURL, manifest: dict,
         files: dict[str, list[str]], place: Callable[[str], str] | None = None) -> list[str]:
    """Build the views in ``con``, then lock it down (:func:`lock_down`)."""
    natural_macro(con)
    build_views(con, catalog_statements(manifest, root, place=place))
    return lock_down(con, files)


def lock_down(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]]) -> list[str]:
    """Allow exactly the views' files, refuse every other access and lock the
    configuration; the files allowed."""
    con.execute("set enable_progress_bar = false")
    allowed = sorted({f for paths in files.values() for f in paths})
    con.execute("set allowed_paths = [" + ", ".join(map(sql_literal, allowed)) + "]")
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
    return allowed


def connect_store(root: StoreURL) -> Sandbox:
    """:func:`connect` for a warehouse on an object store: the manifest is the log's latest
    version; DuckDB reads the objects through the store's fsspec filesystem, registered on
    this connection alone (no extension is installed or loaded), and ``allowed_paths`` lists
    exactly the live objects. No readers' lock: a superseded object stays for the grace
    period (:mod:`sysdiff.flows.objstore`)."""
    manifest = read_manifest(root)
    if not manifest["tables"]:
        raise InputError("no sysdiff warehouse here (no manifest); run 'sysdiff run' "
                         "first, or pass --warehouse", root)
    copies = mirror(root, manifest)
    place = functools.partial(copies.place, root)
    files = {t: [place(rel) for rel in table_files(manifest, t)] for t in manifest["tables"]}
    con = duckdb.connect(":memory:", config=sandbox_config())
    try:
        con.register_filesystem(root.fs)
        allowed = seal(con, root, manifest, files, place)
    except BaseException:
        con.close()
        copies.close()
        raise
    return Sandbox(root, con, None, allowed, copies.close)


def live_paths(root: Path, manifest: dict) -> dict[str, list[str]]:
    """table -> its live files by absolute path, each checked to be a regular file inside
    the warehouse (a symlink out of it, or a missing file, is refused in one line)."""
    out = {}
    for table in manifest["tables"]:
        paths = []
        for rel in table_files(manifest, table):
            path = os.path.realpath(root / rel)
            if not path.startswith(str(root) + os.sep):
                raise InputError(f"refused: the warehouse file {rel} leads out of the "
                                 f"warehouse (to {path}); sysdiff reads only the warehouse's "
                                 "own files", root)
            paths.append(path)
        out[table] = paths
    return out


def build_views(con: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    """Run the views' statements (:func:`sysdiff.flows.catalog.catalog_statements`): one view
    per table over its live files, an empty typed table for a table without files, and the
    views built over them (``units``). A table whose files cannot be read is a view that
    says so."""
    for sql in statements:
        try:
            con.execute(sql)
        except duckdb.Error as e:  # a damaged file: that table says so, the others work
            name = sql.split()[2]
            why = (f"the table {name.removeprefix('stored.')} cannot be read "
                   f"({_first_line(e)}); the next 'sysdiff run' on this corpus checks the "
                   "files and recomputes a damaged one")
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM (SELECT error({sql_literal(why)}) "
                        "AS damaged) WHERE damaged IS NULL")  # count(*) too: no number


@contextlib.contextmanager
def time_limit(con: duckdb.DuckDBPyConnection, seconds: float) -> Iterator[None]:
    """Interrupt the connection's query when it runs longer than ``seconds`` (0: no limit);
    the interruption is an InputError naming the limit."""
    if not seconds:
        yield
        return
    timer = threading.Timer(seconds, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        yield
    except duckdb.InterruptException:
        raise InputError(f"refused: the query ran longer than the time limit of {seconds:g} s "
                         "(--timeout; 0 for none)") from None
    finally:
        timer.cancel()


def check_read_only(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Refuse, in one line, anything but one read-only query (parsed by ``con``, else by
    DuckDB's default connection, which costs 25 ms to create)."""
    try:
        statements = (duckdb if con is None else con).extract_statements(sql)
    except duckdb.Error as e:
        raise InputError(f"SQL error: {_message(e)}") from None
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


def _message(e: Exception) -> str:
    """DuckDB's message on one line: its first paragraph, with the hints DuckDB gives there
    (``Did you mean "scores"?``, ``Candidate bindings: ...``), without the query excerpt."""
    text = str(e).strip()
    if not text:
        return type(e).__name__
    head = text.split("\n\n", 1)[0]
    return " ".join(line.strip() for line in head.splitlines() if line.strip())


_shared: dict[Path, Sandbox] | None = None


@contextlib.contextmanager
def one_connection() -> Iterator[None]:
    """Within the block, the queries on a warehouse share one sandboxed connection (a
    command that runs several queries opens the warehouse once); it is closed when the
    block ends."""
    global _shared
    outer = _shared
    if outer is None:
        _shared = {}
    try:
        yield
    finally:
        if outer is None:
            opened, _shared = _shared or {}, None
            for box in opened.values():
                box.close()


def query(root: Path, sql: str, rows: bool = False) -> pl.DataFrame | Rows:
    """Run one read-only SQL statement in the sandbox; anything else is an InputError. With
    ``rows``, the result comes back as :class:`Rows` (polars is not imported for the usual
    column types: the read-only commands)."""
    shared = _shared is not None
    box = _shared.get(root) if shared else None
    if box is None:
        try:
            box = connect(root)
        except InputError:
            check_read_only(sql)  # a refused statement is said first, the warehouse next
            raise
        if shared:
            _shared[root] = box
    try:
        return box.run(sql, rows)
    finally:
        if not shared:
            box.close()


def refusal(e: duckdb.Error) -> InputError:
    """The one line a DuckDB error gives the user."""
    first = _message(e)
    if isinstance(e, duckdb.PermissionException):
        return InputError("refused: sysdiff reads only the warehouse's tables (no other "
                          f"files, extensions or settings): {first}")
    if isinstance(e, duckdb.OutOfMemoryException):
        return InputError("refused: the query needs more memory than its limit of "
                          f"{current_limits().memory / 2**30:.1f} GiB (--memory-limit): "
                          f"{first}")
    if "read-only" in first.lower() or "read only" in first.lower():
        return InputError("the warehouse is read-only through sysdiff; only queries "
                          f"({ALLOWED}) run ({first})")
    if "configuration has been locked" in first:
        return InputError(f"refused: settings cannot be changed ({first})")
    return InputError(f"SQL error: {first}")


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
    return pl.from_arrow(_intervals_as_text(rest))


def _intervals_as_text(table):
    """Columns holding intervals (which polars cannot read) as text, e.g. ``1 day 02:00:00``."""
    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if "interval" in str(f.type):
            text = pa.array([None if v is None else _interval_text(v)
                             for v in table.column(i).to_pylist()], pa.string())
            table = table.set_column(i, f.name, text)
    return table


def _interval_text(value: object) -> str:
    """An interval (months, days, nanoseconds) as DuckDB prints it; a list of them as a list;
    other values as str."""
    if isinstance(value, list):
        return "[" + ", ".join("NULL" if v is None else _interval_text(v) for v in value) + "]"
    if not all(hasattr(value, a) for a in ("months", "days", "nanoseconds")):
        return str(value)
    parts = []
    years, months = divmod(value.months, 12)
    for n, unit in ((years, "year"), (months, "month"), (value.days, "day")):
        if n:
            parts.append(f"{n} {unit}{'s' * (abs(n) != 1)}")
    if value.nanoseconds or not parts:
        sign = "-" if value.nanoseconds < 0 else ""
        micros = abs(value.nanoseconds) // 1000
        secs, micros = divmod(micros, 10**6)
        hours, secs = divmod(secs, 3600)
        clock = f"{sign}{hours:02d}:{secs // 60:02d}:{secs % 60:02d}"
        parts.append(clock + (f".{micros:06d}" if micros else ""))
    return " ".join(parts)
