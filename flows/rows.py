"""Query results as Python rows: what the read-only commands (``sql``, ``show``,
``examples``, ``check``) compute and print from without importing polars (0.2 s), and the
polars frame the same result gives when one is needed (CSV, TSV and JSON output).

DuckDB's Python values and polars' agree for the types read without Arrow (:func:`plain`);
:func:`polars_type` gives the column type ``pl.from_arrow`` would give them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import polars as pl

#: DuckDB type -> polars type, for the scalar types read without Arrow. Sums of BIGINT are
#: HUGEINT, which Arrow (and so polars) reads as a 38-digit decimal.
SCALARS = {"boolean": "Boolean", "tinyint": "Int8", "smallint": "Int16", "integer": "Int32",
           "bigint": "Int64", "utinyint": "UInt8", "usmallint": "UInt16",
           "uinteger": "UInt32", "ubigint": "UInt64", "float": "Float32", "double": "Float64",
           "varchar": "String", "blob": "Binary", "date": "Date", "null": "Null"}
WIDE_INTEGERS = {"hugeint", "uhugeint"}
NUMERIC = {"tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger",
           "ubigint", "float", "double", "decimal"} | WIDE_INTEGERS


def plain(t: duckdb.DuckDBPyType) -> bool:
    """True for the types read without Arrow (those :func:`polars_type` maps)."""
    if t.id in SCALARS or t.id == "decimal" or t.id in WIDE_INTEGERS:
        return True
    if t.id == "list":
        return plain(t.children[0][1])
    return t.id == "struct" and all(plain(child) for _, child in t.children)


def polars_type(t: duckdb.DuckDBPyType) -> pl.DataType | None:
    """The polars type ``pl.from_arrow`` gives a DuckDB column of type ``t``, for the types
    read without Arrow; None for the others."""
    import polars as pl

    if t.id in SCALARS:
        return getattr(pl, SCALARS[t.id])()
    if t.id in WIDE_INTEGERS:
        return pl.Decimal(38, 0)
    if t.id == "decimal":
        (_, precision), (_, scale) = t.children
        return pl.Decimal(precision, scale)
    if t.id == "list":
        inner = polars_type(t.children[0][1])
        return None if inner is None else pl.List(inner)
    if t.id == "struct":
        fields = [(name, polars_type(child)) for name, child in t.children]
        return None if any(f is None for _, f in fields) else pl.Struct(dict(fields))
    return None


@dataclass(frozen=True)
class Rows:
    """A query result as Python rows: column names, which columns are numeric, the rows;
    and what makes the polars frame of the same result (:meth:`to_frame`): the columns'
    DuckDB types, or the frame itself when the rows were read through Arrow. The accessors
    are named as polars names them."""

    columns: list[str]
    numeric: list[bool]
    rows: list[tuple]
    types: list | None = field(default=None, compare=False, repr=False)
    frame: object = field(default=None, compare=False, repr=False)

    @property
    def height(self) -> int:
        return len(self.rows)

    def is_empty(self) -> bool:
        return not self.rows

    def row(self, index: int, named: bool = False) -> tuple | dict:
        """One row, as a tuple or (``named``) a dict by column."""
        values = self.rows[index]
        return dict(zip(self.columns, values, strict=True)) if named else values

    def column(self, name: str) -> list:
        """The values of one column."""
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def to_dicts(self) -> list[dict]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def to_frame(self) -> pl.DataFrame:
        """The polars frame of the same result (column types as Arrow would give them)."""
        if self.frame is not None:
            return self.frame
        import polars as pl

        if self.types is None:
            raise ValueError("rows computed in Python have no column types to make a frame")
        schema = list(zip(self.columns, map(polars_type, self.types), strict=True))
        return pl.DataFrame(self.rows, schema=schema, orient="row")

    @classmethod
    def from_frame(cls, df: pl.DataFrame) -> Rows:
        """A frame's rows (the frame kept for :meth:`to_frame`)."""
        return cls(list(df.columns), [df.schema[c].is_numeric() for c in df.columns],
                   df.rows(), frame=df)
