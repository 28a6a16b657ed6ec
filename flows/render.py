"""Render result frames for people and pipelines: terminal table, CSV, TSV, JSON, Markdown,
LaTeX."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

from sysdiff.flows.names import FORMATS  # noqa: F401 (the output formats)

if TYPE_CHECKING:
    import polars as pl

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def cell(value: object, column: str = "") -> str:
    """One value as text: floats with 4 decimals (2 in a percent or points column), lists
    comma-joined, null as empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}" if is_percent(column) else f"{value:.4f}"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def is_percent(column: str) -> bool:
    """A column of percents (``... %``) or of differences in points (``... (points)``)."""
    return column.endswith("%") or column.endswith("(points)")


def blob_text(value: bytes | None) -> str | None:
    """A BLOB as DuckDB prints it: printable ASCII as is, other bytes as ``\\xNN``."""
    if value is None:
        return None
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in value)


def printable(df: pl.DataFrame) -> pl.DataFrame:
    """Binary columns as text (CSV and JSON cannot hold raw bytes)."""
    import polars as pl

    binary = [c for c, t in df.schema.items() if t == pl.Binary]
    return df.with_columns(pl.col(c).map_elements(blob_text, return_dtype=pl.String)
                           for c in binary) if binary else df


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def to_text(df: pl.DataFrame, fmt: str, title: str | None = None) -> str:
    """A frame in one of FORMATS (``table`` is rendered for a terminal)."""
    import polars as pl
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    df = printable(df)
    if fmt in ("csv", "tsv"):
        flat = df.with_columns(pl.col(c).list.join(",") for c, t in df.schema.items()
                               if isinstance(t, pl.List))
        return flat.write_csv(separator="," if fmt == "csv" else "\t")
    if fmt == "json":
        return json.dumps(df.to_dicts(), default=str, indent=1) + "\n"
    rows = [[cell(v, c) for v, c in zip(r, df.columns, strict=True)] for r in df.rows()]
    if fmt == "markdown":
        head = "| " + " | ".join(df.columns) + " |"
        sep = "|" + "|".join("---" for _ in df.columns) + "|"
        body = ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join([f"**{title}**", ""] * bool(title) + [head, sep, *body]) + "\n"
    if fmt == "latex":
        cols = "l" * len(df.columns)
        lines = [r"\begin{tabular}{" + cols + "}", r"\hline",
                 " & ".join(latex_escape(c) for c in df.columns) + r" \\", r"\hline"]
        lines += [" & ".join(latex_escape(v) for v in r) + r" \\" for r in rows]
        lines += [r"\hline", r"\end{tabular}"]
        return "\n".join(lines) + "\n"
    table = Table(title=Text(title) if title else None, show_lines=False)
    for c in df.columns:  # Text(...): no rich markup, so '[slept]' prints as it is
        table.add_column(Text(c), justify="right" if df.schema[c].is_numeric() else "left")
    for r in rows:
        table.add_row(*map(Text, r))
    buf = io.StringIO()
    Console(file=buf, width=200, force_terminal=False).print(table)
    return buf.getvalue()
