"""The Python API, for notebooks and scripts: run an evaluation, read a warehouse.

    import sysdiff

    root = sysdiff.evaluate(key="data/sequoia/key.conllu",
                            systems={"md@3.8.0": "data/sequoia/fr_core_news_md-3.8.0.conllu",
                                     "sm@3.8.0": "data/sequoia/fr_core_news_sm-3.8.0.conllu"},
                            task="dep", corpus="sequoia", warehouse="/tmp/wh")
    with sysdiff.open(root) as wh:
        wh.tables                          # every table's name
        wh["scores"]                       # a table as a polars DataFrame
        wh.sql("select * from pairs where view = 'las'")   # any read-only query
        wh.relation("select * from changes")               # a lazy DuckDB relation

``evaluate`` runs the same Prefect flow as ``sysdiff run``; ``open`` reads through the same
sandbox as ``sysdiff sql``: the warehouse's files and nothing else, read-only. It hands out
frames and read-only relations, never the connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import duckdb
import polars as pl

from sysdiff.flows.names import MANIFEST, resolve_warehouse
from sysdiff.flows.queries import (
    Sandbox,
    check_read_only,
    connect,
    current_limits,
    refusal,
    time_limit,
)
from sysdiff.flows.store import StoreURL, log_versions
from sysdiff.schemas.errors import InputError


def evaluate(key: str | Path, systems: Mapping[str, str | Path], task: str | None = None,
             corpus: str = "corpus", warehouse: str | Path | None = None,
             fmt: str | None = None, mappings: Mapping[str, Mapping[str, str]] | None = None,
             versions: Mapping[str, list[str]] | None = None, ar_trials: int = 10_000,
             seed: int = 0, keep_going: bool = False, match: str | None = None,
             singletons: str | None = None) -> Path:
    """Evaluate ``systems`` (``{"NAME[@VERSION]": path}``) against ``key`` into the warehouse
    (default: as ``sysdiff run``; ``task`` defaults to the key format's, as there); returns
    the warehouse folder. ``match`` (exact, partial, head) and ``singletons`` (keep, drop):
    coreference matching (default: the CorefUD scorer's head/drop for CorefUD keys,
    exact/keep otherwise). Bad input raises
    :class:`~sysdiff.schemas.errors.InputError` and leaves the warehouse as it was."""
    import os

    from sysdiff.flows.preflight import preflight
    from sysdiff.flows.run import run_evaluation
    from sysdiff.flows.spec import build_spec

    spec = build_spec(corpus, task, key, [f"{n}={p}" for n, p in systems.items()], fmt,
                      mappings={k: dict(v) for k, v in (mappings or {}).items()},
                      versions={k: list(v) for k, v in (versions or {}).items()},
                      ar_trials=ar_trials, seed=seed, keep_going=keep_going, match=match,
                      singletons=singletons)
    root = resolve_warehouse(None if warehouse is None else str(warehouse))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    spec, _skipped = preflight(spec, root)
    run_evaluation(spec, root)
    return root


class Relation:
    """A lazy, read-only DuckDB relation over a sandboxed warehouse connection: it can be
    narrowed, combined and read (as polars, Arrow, pandas or Python rows), never written
    (DuckDB's relations can write files and create tables: those methods are left out)."""

    #: DuckDB relation methods that give another relation.
    CHAIN = ("filter", "project", "select", "limit", "order", "sort", "aggregate", "distinct",
             "unique", "union", "except_", "intersect", "join", "cross", "count", "sum",
             "min", "max", "mean", "set_alias")
    #: Methods that read the result.
    READ = ("pl", "arrow", "to_arrow_table", "df", "fetchall", "fetchone", "fetchmany",
            "fetchnumpy", "fetchdf", "show")
    #: Attributes that describe the relation.
    DESCRIBE = ("columns", "types", "dtypes", "shape", "alias", "type")

    def __init__(self, rel: duckdb.DuckDBPyRelation, box: Sandbox) -> None:
        self._rel, self._box = rel, box

    def __getattr__(self, name: str):
        if name in self.DESCRIBE:
            return getattr(self._rel, name)
        if name in self.CHAIN:
            return self._chain(name)
        if name in self.READ:
            return self._read(name)
        raise AttributeError(f"a sysdiff relation is read-only: '{name}' is not available "
                             f"(narrow with {', '.join(self.CHAIN[:6])}, ...; read with "
                             f"{', '.join(self.READ[:5])}, ...)")

    def _chain(self, name: str):
        method = getattr(self._rel, name)

        def chained(*args, **kwargs) -> Relation:
            args = tuple(a._rel if isinstance(a, Relation) else a for a in args)
            return Relation(method(*args, **kwargs), self._box)

        return chained

    def _read(self, name: str):
        method = getattr(self._rel, name)

        def read(*args, **kwargs):
            try:
                with time_limit(self._box.con, current_limits().timeout):
                    return method(*args, **kwargs)
            except duckdb.Error as e:
                raise refusal(e) from None

        return read

    def __len__(self) -> int:
        return len(self._rel)

    def __repr__(self) -> str:
        return repr(self._rel)


class Warehouse:
    """A warehouse opened read-only (the ``sysdiff sql`` sandbox). Each query sees the
    latest commit: a handle kept open across a run opens the new state (relations handed
    out before stay on theirs until :meth:`close`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._boxes: list[Sandbox] = []
        self._seen: tuple[int, int, int] | None = None
        self._closed = False
        self._box()  # a missing or damaged warehouse is said now

    @property
    def tables(self) -> list[str]:
        """The names of the warehouse's tables."""
        rows = self._box().con.execute(
            "select table_name from information_schema.tables where table_catalog = 'memory' "
            "and table_schema = 'main' order by 1").fetchall()
        return [r[0] for r in rows]

    def __getitem__(self, table: str) -> pl.DataFrame:
        if table not in self.tables:
            raise InputError(f"no table '{table}'; expected one of {', '.join(self.tables)}")
        return self.sql(f'select * from "{table}"')

    def sql(self, sql: str) -> pl.DataFrame:
        """The result of one read-only query as a polars DataFrame."""
        return self._box().run(sql)

    def relation(self, sql: str) -> Relation:
        """A lazy, read-only DuckDB relation (valid until ``close``)."""
        box = self._box()
        try:
            check_read_only(sql, box.con)
            return Relation(box.con.sql(sql), box)
        except duckdb.Error as e:
            raise refusal(e) from None

    def _box(self) -> Sandbox:
        """The connection on the latest commit (a new one when the manifest changed)."""
        if self._closed:
            raise InputError("the warehouse is closed", self.root)
        stamp = _manifest_stamp(self.root)
        if not self._boxes or stamp != self._seen:
            self._boxes.append(connect(self.root))
            self._seen = stamp
        return self._boxes[-1]

    def close(self) -> None:
        for box in self._boxes:
            box.close()
        self._boxes, self._closed = [], True

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _manifest_stamp(root: Path) -> tuple[int, int, int]:
    """What changes when a commit replaces the manifest (inode, size, mtime; on an object
    store, the log's latest version)."""
    if isinstance(root, StoreURL):
        versions = log_versions(root)
        return (versions[-1] if versions else 0, 0, 0)
    try:
        st = (root / MANIFEST).stat()
    except FileNotFoundError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def open_warehouse(warehouse: str | Path | None = None) -> Warehouse:
    """Open a warehouse read-only (default: as ``sysdiff sql``)."""
    return Warehouse(resolve_warehouse(None if warehouse is None else str(warehouse)))
