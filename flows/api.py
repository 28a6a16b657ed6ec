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
sandbox as ``sysdiff sql``: the warehouse's files and nothing else, read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import duckdb
import polars as pl

from sysdiff.flows.names import resolve_warehouse
from sysdiff.flows.queries import check_read_only, connect, query
from sysdiff.schemas.errors import InputError


def evaluate(key: str | Path, systems: Mapping[str, str | Path], task: str = "dep",
             corpus: str = "corpus", warehouse: str | Path | None = None,
             fmt: str | None = None, mappings: Mapping[str, Mapping[str, str]] | None = None,
             versions: Mapping[str, list[str]] | None = None, ar_trials: int = 10_000,
             seed: int = 0, keep_going: bool = False, match: str | None = None,
             singletons: str | None = None) -> Path:
    """Evaluate ``systems`` (``{"NAME[@VERSION]": path}``) against ``key`` into the warehouse
    (default: as ``sysdiff run``); returns the warehouse folder. ``match`` (exact, partial,
    head) and ``singletons`` (keep, drop): coreference matching (default: the CorefUD
    scorer's head/drop for CorefUD keys, exact/keep otherwise). Bad input raises
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


class Warehouse:
    """A warehouse opened read-only (the ``sysdiff sql`` sandbox)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.con: duckdb.DuckDBPyConnection | None = connect(root)

    @property
    def tables(self) -> list[str]:
        """The names of the warehouse's tables."""
        rows = self._con().execute("select table_name from information_schema.tables where "
                                   "table_name not like 'sysdiff_%' order by 1").fetchall()
        return [r[0] for r in rows]

    def __getitem__(self, table: str) -> pl.DataFrame:
        if table not in self.tables:
            raise InputError(f"no table '{table}'; expected one of {', '.join(self.tables)}")
        return self.sql(f'select * from "{table}"')

    def sql(self, sql: str) -> pl.DataFrame:
        """The result of one read-only query as a polars DataFrame."""
        return query(self.root, sql)

    def relation(self, sql: str) -> duckdb.DuckDBPyRelation:
        """A lazy DuckDB relation over the sandboxed connection (valid until ``close``)."""
        check_read_only(sql)
        return self._con().sql(sql)

    def _con(self) -> duckdb.DuckDBPyConnection:
        if self.con is None:
            raise InputError("the warehouse is closed", self.root)
        return self.con

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_warehouse(warehouse: str | Path | None = None) -> Warehouse:
    """Open a warehouse read-only (default: as ``sysdiff sql``)."""
    return Warehouse(resolve_warehouse(None if warehouse is None else str(warehouse)))
