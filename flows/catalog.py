"""The DuckDB catalog of a warehouse (``sysdiff.duckdb``, for any DuckDB client): one view per
table over the live Parquet files, named by absolute path (nothing resolves against the
current folder); the digest of the manifest it was built from (a catalog lagging its manifest
is rebuilt) and the folder it was built for. sysdiff's own reads do not use it: they build
their views from the manifest (``queries.py``), so a copied or moved warehouse reads its own
files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

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


def catalog_version(root: Path) -> tuple[str | None, str | None]:
    """The manifest digest the catalog was built from and the folder it was built for
    ((None, None) if absent, unreadable, or written by an older sysdiff)."""
    path = root / CATALOG
    if not path.exists():
        return None, None
    try:
        con = duckdb.connect(str(path), read_only=True)
        try:
            digest, built_for = con.execute(
                "select manifest, root from stored.catalog").fetchone()
            return digest, built_for
        finally:
            con.close()
    except duckdb.Error:
        return None, None


#: Stored tables that users read through a view of their own name built over them: their
#: files are read by a view in the schema ``stored`` (not listed by ``show tables``).
STORED_AS = {"units": "stored.units", "words": "stored.words", "sents": "stored.sents",
             "span_tokens": "stored.span_tokens", "span_words": "stored.span_words"}
#: Stored tables whose corpus and system are in their files' paths (``corpus=C/system=S``).
HIVE = ("words",)
#: Stored tables read with each file's row numbers (``file_row_number``; one file per
#: system): a lean system's row n is the key's word n (``words``: the key's ``units`` row
#: of ``word`` n) or token n (``span_words``: row n of the key's ``span_tokens``).
NUMBERED = ("words", "span_words", "span_tokens")
#: Columns that files of an earlier format lack or hold (before format 6: the key's
#: ``units`` had no ``word``, a lean ``words`` partition its own ``sent`` and ``id``), as
#: NULL columns in every stored view of the table, so that the views bind on a warehouse
#: of either format (:func:`units_sql` joins both).
LEGACY = {"units": (("word", "INTEGER"),), "words": (("sent", "INTEGER"), ("id", "INTEGER"))}
#: The first format (``flows/names.py: FORMAT_VERSION``) without :data:`LEGACY`'s layout; a
#: manifest entry without ``format`` is older.
WORD_NUMBERS_FORMAT = 6
#: A file's own codes of its label columns: each label's position among the file's distinct
#: labels of the column, sorted (binary order, as the ingest sorts them).
CODES_SQL = """CREATE VIEW stored.codes AS
SELECT corpus, system, field, label,
       (row_number() OVER (PARTITION BY corpus, system, field ORDER BY label) - 1)::UINTEGER
       AS code
FROM vocab WHERE field <> 'head'"""
#: The systems stored lean (read on the key's words, in the key's frame).
LEAN_SQL = """CREATE VIEW stored.lean AS SELECT DISTINCT corpus, system FROM stored.words
UNION SELECT DISTINCT corpus, system FROM stored.span_words"""
_UNIT_COLUMNS = ("sent, id, token_id, kind, form, lemma, upos, xpos, feats, head, deprel, "
                 "deps, misc, line")


def _lean_units(on: str) -> str:
    """The words of the systems stored lean, each matched with the key's word ``on``."""
    return f"""SELECT w.corpus, w.system, k.sent, k.id, k.token_id, k.kind, k.form, c1.label,
       c2.label, c3.label, c4.label, w.head, c5.label, coalesce(w.deps, k.deps),
       coalesce(w.misc, k.misc), k.line
FROM stored.words w
JOIN stored.units k ON k.corpus = w.corpus AND k.system = '__key__' AND k.kind = 0 AND {on}
""" + "".join(
        f"LEFT JOIN stored.codes c{i} ON c{i}.corpus = w.corpus AND c{i}.system = w.system "
        f"AND c{i}.field = '{f}' AND c{i}.code = w.{f}\n"
        for i, f in enumerate(("lemma", "upos", "xpos", "feats", "deprel"), start=1))


def units_sql(legacy: bool) -> str:
    """The ``units`` view: the stored records (the key, systems read in full or aligned on
    the characters), and the systems stored lean: each word the key's with the system's
    labels (and its DEPS and MISC where they are not the key's), each other line (multiword
    range, empty node) the key's. A lean row n is the key's word n. ``legacy``: some key
    was stored before format 6, without ``word``; its lean systems are matched on their own
    sentence and ID (:data:`LEGACY`)."""
    old = _lean_units("k.word IS NULL AND k.sent = w.sent AND k.id = w.id") + "UNION ALL\n"
    key_columns = ", ".join("k." + c for c in _UNIT_COLUMNS.split(", "))
    return f"""CREATE VIEW units AS
SELECT corpus, system, {_UNIT_COLUMNS}
FROM stored.units
UNION ALL
{_lean_units("k.word = w.file_row_number")}UNION ALL
{old if legacy else ""}SELECT k.corpus, l.system, {key_columns}
FROM stored.units k JOIN stored.lean l ON l.corpus = k.corpus
WHERE k.system = '__key__' AND k.kind <> 0
"""


def has_legacy_units(manifest: dict) -> bool:
    """Some ``units`` partition of the manifest was written before format 6."""
    return any(entry.get("format", 0) < WORD_NUMBERS_FORMAT
               for entry in manifest.get("tables", {}).get("units", {}).values())


_SENT_COLUMNS = "sent, sent_id, doc, doc_id, text, n_words, line"
#: ``sents``: the stored sentences, and the key's for each system stored lean (its comments
#: and lines are the key's).
SENTS_SQL = f"""CREATE VIEW sents AS
SELECT corpus, system, {_SENT_COLUMNS} FROM stored.sents
UNION ALL
SELECT s.corpus, l.system, {', '.join('s.' + c for c in _SENT_COLUMNS.split(', '))}
FROM stored.sents s JOIN stored.lean l ON l.corpus = s.corpus
WHERE s.system = '__key__'
"""
_SPAN_COLUMNS = "sent, id, form, tag, label, line"
#: ``span_tokens``: the stored tokens (the key, systems read in full), and the systems stored
#: lean: each token the key's (its line; no form, as for any system) with the system's tags.
SPAN_TOKENS_SQL = f"""CREATE VIEW span_tokens AS
SELECT corpus, system, {_SPAN_COLUMNS} FROM stored.span_tokens
UNION ALL
SELECT w.corpus, w.system, k.sent, k.id, NULL::VARCHAR, w.tag, w.label, k.line
FROM stored.span_words w
JOIN stored.span_tokens k ON k.corpus = w.corpus AND k.system = '__key__'
     AND k.file_row_number = w.file_row_number
"""


def derived_sql(manifest: dict) -> list[str]:
    """The views built over the stored tables' views."""
    return [CODES_SQL, LEAN_SQL, units_sql(has_legacy_units(manifest)), SENTS_SQL,
            SPAN_TOKENS_SQL]


def view_sql(table: str, files: list[str]) -> str:
    """The view of a table over its files (absolute paths), under its stored name."""
    listing = ", ".join(sql_literal(f) for f in files)
    hive = ("true, hive_types = {'corpus': VARCHAR, 'system': VARCHAR}" if table in HIVE
            else "false")
    numbered = ", file_row_number = true" if table in NUMBERED else ""
    legacy = (f" UNION ALL BY NAME SELECT {_nulls(LEGACY[table])} WHERE false"
              if table in LEGACY else "")
    return (f"CREATE VIEW {STORED_AS.get(table, table)} AS SELECT * FROM read_parquet("
            f"[{listing}], union_by_name = true, hive_partitioning = {hive}{numbered})"
            f"{legacy}")


def _nulls(columns: tuple[tuple[str, str], ...]) -> str:
    """NULL columns of the given names and types, as a select list."""
    return ", ".join(f'NULL::{kind} AS "{name}"' for name, kind in columns)


def empty_table_sql(table: str, columns: str) -> str:
    """An empty typed table (a table without live files), under its stored name;
    ``columns`` as :func:`table_ddl`."""
    if table in HIVE:
        columns += ', "corpus" VARCHAR, "system" VARCHAR'
    if table in NUMBERED:
        columns += ', "file_row_number" BIGINT'
    for name, kind in LEGACY.get(table, ()):
        if f'"{name}" ' not in columns:
            columns += f', "{name}" {kind}'
    return f"CREATE TABLE {STORED_AS.get(table, table)} ({columns})"


_DDL: dict[str, str] | None = None


def table_ddl() -> dict[str, str]:
    """table -> its column list in DuckDB's types (``"a" VARCHAR, "b" DOUBLE``), from the
    tables' Arrow schemas. Recorded in the manifest at commit, so a reader builds empty
    tables without importing pyarrow."""
    global _DDL
    if _DDL is None:
        from sysdiff.schemas.tables import all_tables  # pyarrow: not for read-only commands

        con = duckdb.connect()
        try:
            ddl = {}
            for table, schema in all_tables().items():
                con.register("empty_arrow", schema.empty_table())
                cols = con.execute("describe empty_arrow").fetchall()
                con.unregister("empty_arrow")
                ddl[table] = ", ".join(f'"{c[0]}" {c[1]}' for c in cols)
            _DDL = ddl
        finally:
            con.close()
    return dict(_DDL)


def catalog_statements(manifest: dict, root: Path, ddl: dict[str, str] | None = None,
                       place: Callable[[str], str] | None = None) -> list[str]:
    """The SQL that builds one view (or empty typed table) per table, over the live files
    named by absolute path under ``root`` (or where ``place`` puts each), then the views
    built over those (``units``)."""
    ddl = ddl or manifest.get("ddl") or table_ddl()
    place = place or (lambda rel: str(root / rel))
    statements = ["CREATE SCHEMA IF NOT EXISTS stored"]
    for table, columns in ddl.items():
        files = table_files(manifest, table)
        statements.append(view_sql(table, [place(f) for f in files]) if files
                          else empty_table_sql(table, columns))
    return statements + derived_sql(manifest)


def refresh_catalog(root: Path, manifest: dict) -> None:
    """Rebuild ``sysdiff.duckdb``: built in a private temporary folder (DuckDB cannot write a
    database whose path holds a '?'), copied in beside it, then renamed over it."""
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_workdirs()
    with tempfile.TemporaryDirectory(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-") as work:
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


WORKDIR_PREFIX = "sysdiff-catalog-"


def remove_stale_workdirs() -> None:
    """Remove the catalog build folders that killed runs left in the temporary directory
    (named after their process, which is gone; only this user's)."""
    for path in Path(tempfile.gettempdir()).glob(WORKDIR_PREFIX + "*"):
        pid = path.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
        with contextlib.suppress(OSError):
            if pid.isdigit() and path.stat().st_uid == os.getuid() and not _alive(int(pid)):
                shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build_catalog(path: Path, root: Path, manifest: dict) -> None:
    """Write a catalog database at ``path`` for the warehouse ``root``: one view per table
    over its live files (absolute paths), and ``stored.catalog`` (the manifest's digest, the
    warehouse folder and the list of files the views read, relative to it)."""
    con = duckdb.connect(str(path), config={"autoinstall_known_extensions": False,
                                            "autoload_known_extensions": False})
    try:
        con.execute("begin")  # one transaction: one write of the log, not one a statement
        for sql in catalog_statements(manifest, root):
            con.execute(sql)
        files = sorted({e["file"] for t in manifest["tables"].values() for e in t.values()})
        con.execute("create table stored.catalog as select ? as manifest, ? as root, "
                    "?::varchar[] as files", [manifest_digest(manifest), str(root), files])
        con.execute("commit")
        con.execute("checkpoint")
    finally:
        con.close()
