"""Read-only access to the warehouse through DuckDB (never starts Prefect)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from sysdiff.flows.warehouse import CATALOG
from sysdiff.schemas.errors import InputError


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """Open the warehouse catalog read-only."""
    path = root / CATALOG
    if not path.exists():
        raise InputError("no sysdiff warehouse here (no sysdiff.duckdb); run 'sysdiff run' or "
                         "'sysdiff demo' first, or pass --warehouse", root)
    return duckdb.connect(str(path), read_only=True)


def query(root: Path, sql: str) -> pl.DataFrame:
    """Run one read-only SQL statement; write statements and SQL errors are InputErrors."""
    con = connect(root)
    try:
        return pl.from_arrow(con.sql(sql).to_arrow_table())
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0]
        if "read-only" in first.lower() or "read only" in first.lower():
            raise InputError("the warehouse is read-only through 'sysdiff sql'; only queries "
                             f"(SELECT, DESCRIBE, SHOW ...) are allowed ({first})") from None
        raise InputError(f"SQL error: {first}") from None
    finally:
        con.close()
