"""Render result frames for people and pipelines: terminal table, CSV, TSV, JSON, Markdown,
LaTeX."""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from sysdiff.flows.names import FORMATS  # noqa: F401 (the output formats)
from sysdiff.flows.rows import Rows

if TYPE_CHECKING:
    import polars as pl

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


#: How a NULL number prints for people: no number without data (never 0.00).
NO_DATA = "—"


def cell(value: object, column: str = "", numeric: bool = False) -> str:
    """One value as text: floats with 4 decimals (2 in a percent or points column, p-values
    as :func:`p_value` writes them), lists comma-joined, null as empty (:data:`NO_DATA` in
    a numeric column)."""
    if value is None:
        return NO_DATA if numeric else ""
    if isinstance(value, float) and is_p_value(column):
        return p_value(value, randomization=column in RANDOMIZATION_COLUMNS,
                       bootstrap=column in BOOTSTRAP_COLUMNS)
    if isinstance(value, float):
        return f"{value:.2f}" if is_percent(column) else f"{value:.4f}"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def points(value: float | None, low: float | None = None, high: float | None = None) -> str:
    """A difference of fractions in points (``+2.41 points``), with its interval when given
    (``+2.41 points [+1.60, +3.20]``); :data:`NO_DATA` when NULL."""
    if value is None:
        return NO_DATA
    ci = f" [{100 * low:+.2f}, {100 * high:+.2f}]" if low is not None and high is not None \
        else ""
    return f"{100 * value:+.2f} points{ci}"


#: Suffixes of the columns that hold the bounds of the interval of the column they extend
#: (``LAS % ci_low``): a table prints the three as one cell, ``84.69 [83.90, 85.50]``.
CI_LOW, CI_HIGH = " ci_low", " ci_high"


def fold_intervals(columns: list[str], numeric: list[bool], rows: list[list[str]]
                   ) -> tuple[list[str], list[bool], list[list[str]]]:
    """Cells with each ``C ci_low``/``C ci_high`` pair of columns folded into column C:
    ``84.69 [83.90, 85.50]`` (the value alone when the interval is not there)."""
    at = {c: k for k, c in enumerate(columns)}
    folds = {at[c]: (at[c + CI_LOW], at[c + CI_HIGH]) for c in columns
             if c + CI_LOW in at and c + CI_HIGH in at}
    if not folds:
        return columns, numeric, rows
    drop = {k for pair in folds.values() for k in pair}
    keep = [k for k in range(len(columns)) if k not in drop]
    out = []
    for r in rows:
        r = list(r)
        for k, (lo, hi) in folds.items():
            if r[lo] not in ("", NO_DATA) and r[hi] not in ("", NO_DATA) \
                    and r[k] not in ("", NO_DATA):
                r[k] = f"{r[k]} [{r[lo]}, {r[hi]}]"
        out.append([r[k] for k in keep])
    return [columns[k] for k in keep], [numeric[k] for k in keep], out


#: Columns of approximate randomization p-values (their floor is 1 / (trials + 1)).
RANDOMIZATION_COLUMNS = ("ar_p",)
#: Columns of paired bootstrap p-values (0 when no sample crossed: below 2 / samples).
BOOTSTRAP_COLUMNS = ("bootstrap_p",)
#: (randomization trials, bootstrap samples) of the corpus shown (None: the defaults).
_resolution: contextvars.ContextVar[tuple[int | None, int | None]] = contextvars.ContextVar(
    "p_resolution", default=(None, None))


@contextlib.contextmanager
def p_resolution(trials: int | None, samples: int | None = None) -> Iterator[None]:
    """Within the block, randomization p-values were computed with ``trials`` trials and
    bootstrap p-values from ``samples`` samples (the corpus' run; None: the defaults): one at
    its floor is written ``< 1e-4 (10,000 trials)`` or ``< 0.002 (1,000 samples)``."""
    token = _resolution.set((trials, samples))
    try:
        yield
    finally:
        _resolution.reset(token)


def p_value(value: float | None, randomization: bool = False, bootstrap: bool = False) -> str:
    """A p-value for people, the same everywhere: 3 significant digits, in scientific
    notation below 0.001 (``0.866``, ``0.0123``, ``1.4e-13``); :data:`NO_DATA` when NULL. A
    ``randomization`` p at its floor, 1 / (trials + 1) (no trial reached the observed
    difference), is ``< 1e-4 (10,000 trials)``: the test cannot tell smaller values apart. A
    ``bootstrap`` p of 0 (no sample's delta crossed 0) is ``< 0.002 (1,000 samples)``: its
    next value up is 2 / samples (METRICS 1.6b), so 0 is a bound, not a p-value."""
    if value is None or value != value:
        return NO_DATA
    trials, samples = _resolution.get()
    trials = trials or DEFAULT_TRIALS
    if randomization and abs(value * (trials + 1) - 1) < 1e-9:
        return f"< {_number(1 / trials)} ({trials:,} trials)"
    if bootstrap and value == 0:
        samples = samples or DEFAULT_SAMPLES
        return f"< {_number(2 / samples)} ({samples:,} samples)"
    return _number(value)


def p_is(value: float | None, randomization: bool = False, bootstrap: bool = False) -> str:
    """``= 0.866``, ``= 1.4e-13`` or ``< 1e-4 (10,000 trials)``: a p-value after its name."""
    text = p_value(value, randomization, bootstrap)
    return text if text.startswith("<") else f"= {text}"


#: The randomization trials and bootstrap samples assumed when a corpus' run did not record
#: them: ``RunSpec``'s defaults (``ar_trials``, ``bootstrap``), repeated here so that the
#: read-only commands' rendering imports neither the run's spec nor numpy.
DEFAULT_TRIALS = 10_000
DEFAULT_SAMPLES = 1_000


def _number(value: float) -> str:
    """3 significant digits; scientific notation without a padded exponent below 0.001."""
    if value == 0 or abs(value) >= 1e-3:
        return f"{value:.3g}"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def is_p_value(column: str) -> bool:
    """A column of p-values (``mcnemar_p``, ``ar_p``, ``mcnemar_p_best``, ``p vs best``)."""
    return column.endswith("_p") or "_p_" in column or column.startswith("p ")


def is_percent(column: str) -> bool:
    """A column of percents (``... %``) or of differences in points (``... (points)``), or
    the bounds of their interval."""
    column = column.removesuffix(CI_LOW).removesuffix(CI_HIGH)
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


def flat_columns(df: pl.DataFrame) -> pl.DataFrame:
    """Nested columns as text for CSV and TSV: a list of scalars joined with commas, other
    nested values (structs, maps, lists of lists) as JSON."""
    import polars as pl

    out = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.List) and not dtype.inner.is_nested():
            col = col.list.eval(pl.element().cast(pl.String)).list.join(",")
        elif dtype.is_nested():
            col = col.map_elements(_json_text, return_dtype=pl.String)
        out.append(col)
    return df.select(out)


def _json_text(value: object) -> str:
    """A nested value (polars hands lists of lists over as Series) as JSON."""
    return json.dumps(value.to_list() if hasattr(value, "to_list") else value, default=str)


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def to_text(df: pl.DataFrame | Rows, fmt: str, title: str | None = None) -> str:
    """A frame or :class:`Rows` in one of FORMATS (``table`` is rendered for a terminal).
    Rows print as a table, Markdown or LaTeX without polars, and as CSV, TSV or JSON through
    their frame (polars' writers)."""
    if isinstance(df, Rows):
        if fmt in ("csv", "tsv", "json"):
            return to_text(df.to_frame(), fmt, title)
        columns, numeric = df.columns, df.numeric
        rows = [[cell(blob_text(v) if isinstance(v, bytes) else v, c, n)
                 for v, c, n in zip(r, columns, numeric, strict=True)] for r in df.rows]
        return _layout(columns, numeric, rows, fmt, title)

    df = printable(df)
    if fmt in ("csv", "tsv"):
        return flat_columns(df).write_csv(separator="," if fmt == "csv" else "\t")
    if fmt == "json":
        return json.dumps(df.to_dicts(), default=str, indent=1) + "\n"
    numeric = [df.schema[c].is_numeric() for c in df.columns]
    rows = [[cell(v, c, n) for v, c, n in zip(r, df.columns, numeric, strict=True)]
            for r in df.rows()]
    return _layout(df.columns, numeric, rows, fmt, title)


def _layout(columns: list[str], numeric: list[bool], rows: list[list[str]], fmt: str,
            title: str | None) -> str:
    """Cells as a terminal table, Markdown or LaTeX (intervals folded into their value's
    cell)."""
    columns, numeric, rows = fold_intervals(columns, numeric, rows)
    if fmt == "markdown":
        head = "| " + " | ".join(columns) + " |"
        sep = "|" + "|".join("---" for _ in columns) + "|"
        body = ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join([f"**{title}**", ""] * bool(title) + [head, sep, *body]) + "\n"
    if fmt == "latex":
        cols = "l" * len(columns)
        lines = [r"\begin{tabular}{" + cols + "}", r"\hline",
                 " & ".join(latex_escape(c) for c in columns) + r" \\", r"\hline"]
        lines += [" & ".join(latex_escape(v) for v in r) + r" \\" for r in rows]
        lines += [r"\hline", r"\end{tabular}"]
        return "\n".join(lines) + "\n"
    return terminal_table(columns, numeric, rows, title)


def terminal_table(columns: list[str], numeric: list[bool], rows: list[list[str]],
                   title: str | None = None) -> str:
    """Cells as a terminal table (numeric columns right-aligned)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title) if title else None, show_lines=False)
    folded = {k for r in rows for k, v in enumerate(r) if " [" in v and v.endswith("]")}
    for k, (c, right) in enumerate(zip(columns, numeric, strict=True)):
        # Text: '[slept]' prints as it is; an interval is never cut across lines
        table.add_column(Text(c), justify="right" if right else "left",
                         no_wrap=k in folded and right)
    for r in rows:
        table.add_row(*map(Text, r))
    buf = io.StringIO()
    Console(file=buf, width=200, force_terminal=False).print(table)
    return buf.getvalue()
