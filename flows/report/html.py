"""HTML building blocks of the report: escaping, number formats, tables, colours, ids.

Every value that reaches the page goes through ``esc`` (names and labels are user data);
``td`` and ``table_html`` take cells that are already HTML.
"""

from __future__ import annotations

import html
import itertools
import json
from collections.abc import Callable, Iterable

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import CLASS_NAMES


def esc(value: object) -> str:
    """HTML-escape any value (quotes too)."""
    return html.escape("" if value is None else str(value), quote=True)


#: A number without data (NULL, NaN): shown as such, never as 0.00.
NO_DATA = "—"


def pct(x: float | None, digits: int = 2) -> str:
    """A fraction as a percentage without the sign (:data:`NO_DATA` for None and NaN)."""
    return NO_DATA if x is None or x != x else f"{100 * x:.{digits}f}"


def percent(x: float | None, digits: int = 2) -> str:
    """``pct`` with its sign: ``94.56%``, or :data:`NO_DATA` (no ``%``)."""
    return NO_DATA if x is None or x != x else f"{pct(x, digits)}%"


def points(x: float | None, digits: int = 2) -> str:
    """A difference of fractions in percentage points, signed (:data:`NO_DATA` for None)."""
    return NO_DATA if x is None or x != x else f"{100 * x:+.{digits}f}"


def points_text(x: float | None) -> str:
    """``points`` with its unit: ``+0.63 points``, or :data:`NO_DATA`."""
    return NO_DATA if x is None or x != x else f"{points(x)} points"


def stars(p: float | None) -> str:
    """Significance marks: ** p < 0.01, * p < 0.05."""
    if p is None or p != p:
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


def p_value(p: float | None, randomization: bool = False, bootstrap: bool = False) -> str:
    """A p-value as everywhere (:func:`sysdiff.flows.render.p_value`: ``1.4e-13``, a
    randomization p at its floor ``< 1e-4 (10,000 trials)``, a bootstrap p of 0 ``< 0.002
    (1,000 samples)``) with its significance marks (:data:`NO_DATA` for None)."""
    from sysdiff.flows.render import p_value as text

    if p is None or p != p:
        return NO_DATA
    return f'{html.escape(text(p, randomization, bootstrap))}<span class="sig">{stars(p)}</span>'


def p_is(p: float | None, randomization: bool = False) -> str:
    """``= 0.866`` or ``&lt; 1e-4 (10,000 trials)``, with marks: a p-value after its name."""
    shown = p_value(p, randomization)
    return shown if shown.startswith("&lt;") else f"= {shown}"


def ci_text(low: float | None, high: float | None) -> str:
    """An interval in percent, ``[83.90, 85.50]`` ('' without one)."""
    if low is None or high is None or low != low or high != high:
        return ""
    return f"[{100 * low:.2f}, {100 * high:.2f}]"


def td(content: str, cls: str = "") -> str:
    """A cell of already-escaped HTML."""
    return f'<td class="{cls}">{content}</td>' if cls else f"<td>{content}</td>"


def table_html(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "",
               left: int = 1, left_cols: Iterable[int] = ()) -> str:
    """A table: headers are escaped here, cells are already HTML (see ``td``). The first
    ``left`` columns and the columns ``left_cols`` have left-aligned headers."""
    lefts = set(left_cols)
    head = "".join(f'<th class="l">{esc(h)}</th>' if i < left or i in lefts
                   else f"<th>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def frame_html(df: pl.DataFrame, limit: int = 500) -> str:
    """Any frame as an escaped table (floats with 4 decimals, lists joined)."""
    def show(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4f}"
        if isinstance(v, list):
            return ", ".join(map(str, v))
        return "" if v is None else str(v)

    rows = [[td(esc(show(v)), "l" if i == 0 else "") for i, v in enumerate(r)]
            for r in df.head(limit).rows()]
    return table_html(df.columns, rows)


def names_html(names: list[str], most: int = 3) -> str:
    """Up to ``most`` names, then '+k more' (the full list in the tooltip)."""
    shown = ", ".join(esc(n) for n in names[:most])
    if len(names) <= most:
        return shown
    return f'<span title="{esc(", ".join(names))}">{shown} +{len(names) - most} more</span>'


def mix(t: float) -> str:
    """White to the accent blue, ``t`` in [0, 1]."""
    lo, hi = np.array([255, 255, 255]), np.array([31, 95, 168])
    r, g, b = (lo + (hi - lo) * min(max(t, 0.0), 1.0)).round().astype(int)
    return f"rgb({r},{g},{b})"


def json_attr(value: object) -> str:
    """A JSON value for a ``data-`` attribute (escaped)."""
    return esc(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def json_script(element_id: str, value: object) -> str:
    """A JSON data island (``<script type="application/json">``); '<' and '&' are escaped
    so that no text of the data can close the element."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


class Ids:
    """Unique, label-free anchor ids."""

    def __init__(self) -> None:
        self.n = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}-{next(self.n)}"


def heat_style(cls: str, t: float) -> str:
    """Inline background of a transition-matrix cell (coreference, spans): the change
    class's colour, alpha by its share ``t`` of the largest count."""
    rgb = {"correction": "46,125,50", "new_error": "198,40,40",
           "changed_error": "239,143,0"}.get(cls)
    if rgb is None:
        return "background:#eef1f5"
    colour = "#fff" if t > 0.55 else "#1d2430"
    return f"background:rgba({rgb},{0.08 + 0.8 * t:.3f});color:{colour}"


def transition_matrix_html(cells: Iterable[tuple[str, str, int]], classes: list[str],
                           classify: Callable[[str, str], str], sys1: str, sys2: str,
                           data: dict[str, str]) -> str:
    """A class transition matrix of a pair as a heat table (coreference: ARCS classes;
    spans: span classes): rows the class under ``sys1``, columns under ``sys2``, in the
    order ``classes``, with row and column sums. ``cells`` are (c1, c2, count);
    ``classify`` gives a cell's change class ('' on the diagonal and between two right
    classes: "other"), which colours it. Every cell carries ``data-c1``/``data-c2`` (what
    the page's drill-down reads); ``data`` are the table's own ``data-`` attributes,
    before ``data-sys1`` and ``data-sys2``."""
    counts = {(a, b): n for a, b, n in cells}
    peak = max((n for (a, b), n in counts.items() if a != b), default=0) or 1
    head = (f'<th class="l">{esc(sys1)} ↓ / {esc(sys2)} →</th>'
            + "".join(f"<th>{esc(c)}</th>" for c in classes) + "<th>Σ</th>")
    rows = []
    for a in classes:
        row = [f'<th class="l">{esc(a)}</th>']
        for b in classes:
            n = counts.get((a, b), 0)
            cls = classify(a, b)
            name = CLASS_NAMES.get(cls, "same class" if a == b else "other")
            kind = cls or ("diag" if a == b else "other")  # other: right in both
            row.append(f'<td class="cell {kind}" data-c1="{esc(a)}" data-c2="{esc(b)}" '
                       f'style="{heat_style(cls, n / peak if n else 0)}" '
                       f'title="{esc(a)} → {esc(b)}: {n} ({esc(name)})">{n}</td>')
        row.append(td(str(sum(counts.get((a, b), 0) for b in classes)), "tot"))
        rows.append("<tr>" + "".join(row) + "</tr>")
    foot = ('<tr><th class="l">Σ</th>'
            + "".join(td(str(sum(counts.get((a, b), 0) for a in classes)), "tot")
                      for b in classes) + td(str(sum(counts.values())), "tot") + "</tr>")
    attrs = "".join(f' data-{k}="{esc(v)}"' for k, v in data.items())
    return (f'<table class="trans"{attrs} data-sys1="{esc(sys1)}" data-sys2="{esc(sys2)}">'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}{foot}</tbody></table>')
