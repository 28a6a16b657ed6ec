"""Canonical dumps of every warehouse table: proof that a change leaves the results identical.

A table is dumped as ``SELECT * ... ORDER BY ALL`` to CSV, without the columns that depend on
where and when a run happened (input paths, ingest and modification times); floats are rounded to 10
significant digits so that the dump does not depend on the last bit of a platform's libm.
The golden digests under ``tests/data/snapshots/`` were written by the code before a change;
``tests/test_snapshots.py`` compares a fresh run with them. To see what differs, dump both
sides to folders and diff them::

    python -m tests.snapshot WAREHOUSE                 # digests (JSON) on stdout
    python -m tests.snapshot WAREHOUSE --out DIR       # plus one CSV per table in DIR

A dump is of one ``part`` of the tables. ``results``: every column but those the bootstrap
intervals added (issue 24, METRICS 1.6b: the intervals, and the ``delta_f1`` whose interval
``coref_pairs`` and ``unl_pairs`` give), with the bootstrap settings cut from ``options``:
the tables as they were before the intervals, so that their goldens (``SNAPSHOTS/NAME.json``)
still hold the figures of the code before them. ``intervals``: those added columns only, of
the tables that have some, rows in the order of the whole table (goldens under
``SNAPSHOTS/intervals/``). ``all``: every column.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import duckdb
import polars as pl

VOLATILE = ("ingested_at", "path", "mtime_ns")
SNAPSHOTS = Path(__file__).resolve().parent / "data" / "snapshots"
INTERVALS = ("ci_low", "ci_high", "delta_ci_low", "delta_ci_high", "bootstrap_p")
# columns added with the intervals (table -> names), besides INTERVALS
WITH_INTERVALS = {"coref_pairs": ("delta_f1",), "unl_pairs": ("delta_f1",)}
# the bootstrap settings in ``options`` (``transforms.bootstrap.Bootstrap.options``)
BOOTSTRAP_OPTION = r"\|bootstrap:(?:off|\d+\|confidence:[^|]*\|seed:\d+)"
PARTS = ("results", "intervals", "all")


def _canonical(df: pl.DataFrame) -> pl.DataFrame:
    """Floats rounded to 10 significant digits, lists as text."""
    out = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if dtype == pl.Float64:
            col = col.round_sig_figs(10)
        elif isinstance(dtype, pl.List):
            col = col.list.join(",")
        out.append(col)
    return df.select(out)


def _part(df: pl.DataFrame, table: str, part: str) -> pl.DataFrame:
    """The columns of one part of a table (see the module's docstring); empty: none."""
    added = [c for c in df.columns if c in INTERVALS or c in WITH_INTERVALS.get(table, ())]
    if part == "intervals":
        return df.select(added)
    if part == "results":
        df = df.drop(added)
        if "options" in df.columns:
            df = df.with_columns(pl.col("options").str.replace(BOOTSTRAP_OPTION, ""))
    return df


def table_dumps(root: Path, part: str = "all") -> dict[str, str]:
    """table -> canonical CSV text of its ``part``, for every non-empty table of the
    warehouse catalog (that has columns of that part)."""
    # as any DuckDB client opens the catalog: its views name files relative to the warehouse
    con = duckdb.connect(str(root / "sysdiff.duckdb"), read_only=True,
                         config={"file_search_path": str(root)})
    try:
        names = sorted(r[0] for r in con.execute(
            "select table_name from information_schema.tables "
            "where table_name not like 'sysdiff_%' and table_schema = 'main'").fetchall())
        dumps = {}
        for name in names:
            cols = [r[0] for r in con.execute(f"describe {name}").fetchall()]
            keep = ", ".join(f'"{c}"' for c in cols if c not in VOLATILE)
            df = pl.from_arrow(con.sql(f"select {keep} from {name} order by all").to_arrow_table())
            df = _part(df, name, part)
            if df.height and df.width:
                dumps[name] = _canonical(df).write_csv()
        return dumps
    finally:
        con.close()


def digests(root: Path, part: str = "all") -> dict[str, dict[str, object]]:
    """table -> {rows, sha256} of the canonical dump of its ``part``."""
    return {name: {"rows": text.count("\n") - 1,
                   "sha256": hashlib.sha256(text.encode()).hexdigest()}
            for name, text in table_dumps(root, part).items()}


def main(argv: list[str] | None = None) -> None:
    """Print the digests of a warehouse; with ``--out``, also write one CSV per table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warehouse", type=Path)
    ap.add_argument("--out", type=Path, help="write one canonical CSV per table here")
    ap.add_argument("--part", choices=PARTS, default="all", help="the columns dumped")
    args = ap.parse_args(argv)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in table_dumps(args.warehouse, args.part).items():
            (args.out / f"{name}.csv").write_text(text)
    json.dump(digests(args.warehouse, args.part), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()


def sandbox_dumps(root) -> dict[str, str]:  # noqa: ANN001 (a Path or a StoreURL)
    """:func:`table_dumps` read through the sandbox (:func:`sysdiff.flows.queries.connect`),
    the one reader of a warehouse on an object store (it has no ``sysdiff.duckdb``)."""
    from sysdiff.flows.queries import connect

    box = connect(root)
    try:
        con = box.con
        names = sorted(r[0] for r in con.execute(
            "select table_name from information_schema.tables "
            "where table_name not like 'sysdiff_%' and table_schema = 'main' "
            "and table_catalog = current_database()").fetchall())
        dumps = {}
        for name in names:
            cols = [r[0] for r in con.execute(f"describe {name}").fetchall()]
            keep = ", ".join(f'"{c}"' for c in cols if c not in VOLATILE)
            df = pl.from_arrow(con.sql(f"select {keep} from {name} order by all").to_arrow_table())
            if df.height:
                dumps[name] = _canonical(df).write_csv()
        return dumps
    finally:
        box.close()
