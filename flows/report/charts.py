"""Charts of the report: the pair heatmap (a canvas drawn by the page's script from compact
data), and SVG scatter, stacked bars and histogram; all sized for 2 to 100+ systems."""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.flows.report.html import esc, json_attr, mix
from sysdiff.schemas.vocabulary import CLASS_NAMES, CLASSES

CLASS_COLORS = {"correction": "#2e7d32", "new_error": "#c62828", "changed_error": "#ef8f00"}
#: Pairs in a scatter plot that get a number and a legend line (the rest are dots).
SCATTER_LABELS = 20


def ticks(top: float, n: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top`` (steps of 1, 2, 2.5 or 5 x 10^k)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / n
    base = 10 ** np.floor(np.log10(raw))
    step = next(m * base for m in (1, 2, 2.5, 5, 10) if m * base >= raw)
    count = int(np.ceil(top / step - 1e-9))
    return [round(float(step * k), 10) for k in range(count + 1)]


def interval_axis(lows: list[float | None], highs: list[float | None]
                  ) -> tuple[float, float] | None:
    """The shared axis (fractions) of a column of interval bars: the bounds' range, padded;
    None when no row has an interval."""
    lo = [x for x in lows if x is not None and x == x]
    hi = [x for x in highs if x is not None and x == x]
    if not lo or not hi:
        return None
    a, b = min(lo), max(hi)
    pad = max((b - a) * 0.05, 0.0005)
    return a - pad, b + pad


def interval_svg(value: float | None, low: float | None, high: float | None,
                 axis: tuple[float, float] | None, width: int = 120) -> str:
    """An inline bar of one bootstrap interval on a column's shared ``axis``: the interval
    as a bar, the score as a tick; '' without an interval (NULL: no data, or --bootstrap
    0)."""
    if axis is None or low is None or high is None or low != low or high != high:
        return ""
    a, b = axis

    def x(v: float) -> float:
        return 2 + (width - 4) * (v - a) / (b - a)

    tip = f"{100 * low:.2f} – {100 * high:.2f}"
    mark = "" if value is None or value != value else (
        f'<line x1="{x(value):.1f}" y1="1" x2="{x(value):.1f}" y2="11" stroke="#0b2e59" '
        'stroke-width="2"/>')
    return (f'<svg class="ci" width="{width}" height="12" role="img"><title>{tip}</title>'
            f'<line x1="2" y1="6" x2="{width - 2}" y2="6" stroke="#eee"/>'
            f'<rect x="{x(low):.1f}" y="3" width="{max(x(high) - x(low), 1):.1f}" height="6" '
            f'fill="#9dbbe0"/>{mark}</svg>')


def interval_cells(rows: list[dict], value: str = "f1") -> list[str]:
    """One cell per row: its interval ``[low, high]`` (percent) and its bar, all bars of the
    column on one axis (rows with ``ci_low``/``ci_high``; '' where there is none)."""
    from sysdiff.flows.report.html import ci_text, td

    axis = interval_axis([r.get("ci_low") for r in rows], [r.get("ci_high") for r in rows])
    return [td(f'<span class="ci-num">{ci_text(r.get("ci_low"), r.get("ci_high"))}</span>'
               + interval_svg(r.get(value), r.get("ci_low"), r.get("ci_high"), axis), "ci")
            for r in rows]


def heatmap(order: list[str], matrix: np.ndarray, systems: list[str],
            p_values: np.ndarray | None = None, title: str = "pairwise diff (%)") -> str:
    """The pair heatmap of ``matrix`` (fractions), rows and columns in ``order``: a canvas
    the page's script draws (cell size from the number of systems, values in the cells when
    they fit, a tooltip per cell, a click opens the pair's details when it has some).
    ``p_values`` (same shape) add significance marks (* p < .05, ** p < .01)."""
    index = [systems.index(s) for s in order]
    sub = matrix[np.ix_(index, index)]
    marks = np.zeros_like(sub, dtype=np.int8)
    if p_values is not None:
        p = np.nan_to_num(p_values[np.ix_(index, index)], nan=1.0)
        marks = (p < 0.05).astype(np.int8) + (p < 0.01).astype(np.int8)
        np.fill_diagonal(marks, 0)
    data = {"names": order, "d": np.rint(10_000 * sub).astype(int).ravel().tolist(),
            "m": "".join(map(str, marks.ravel().tolist())), "title": title}
    return (f'<div class="heat-wrap"><canvas class="heat" role="img" aria-label="{esc(title)}" '
            f'data-heat="{json_attr(data)}"></canvas></div>')


def scatter_svg(pairs: pl.DataFrame, labelled: int = SCATTER_LABELS) -> str:
    """Delta accuracy (points) against diff (%) for each pair; filled = McNemar and AR
    p < .05. The ``labelled`` first pairs (most different) get a number and a legend line;
    the others are plain dots (one path each for filled and hollow)."""
    rows = pairs.select("sys1", "sys2", "diff", "delta_acc", "mcnemar_p", "ar_p").rows()
    named = rows[:labelled]
    legend = max((len(a) + len(b) + 7 for a, b, *_ in named), default=10)
    pw, ph, left, bottom, top = 360, 250, 54, 44, 16
    w = left + pw + 20 + 7 * legend
    h = max(top + ph + bottom, top + 14 * len(named) + 20)
    xt = ticks(max((100 * r[2] for r in rows), default=1))
    yt = ticks(max((abs(100 * r[3]) for r in rows), default=1))

    def x(v: float) -> float:
        return left + pw * v / xt[-1]

    def y(v: float) -> float:
        return top + ph * (1 - v / yt[-1])

    def significant(pm: float | None, pa: float | None) -> bool:
        return pm is not None and pa is not None and pm < 0.05 and pa < 0.05

    out = [f'<svg class="scatter" width="{w:.0f}" height="{h}" viewBox="0 0 {w:.0f} {h}" '
           'role="img"><title>delta accuracy vs diff</title>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#888"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#888"/>']
    for xv in xt:
        out.append(f'<text x="{x(xv):.1f}" y="{top + ph + 16}" font-size="11" '
                   f'text-anchor="middle">{xv:g}</text>')
    for yv in yt:
        out.append(f'<text x="{left - 6}" y="{y(yv) + 4:.1f}" font-size="11" '
                   f'text-anchor="end">{yv:g}</text><line x1="{left}" y1="{y(yv):.1f}" '
                   f'x2="{left + pw}" y2="{y(yv):.1f}" stroke="#eee"/>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + bottom - 8}" font-size="12" '
               'text-anchor="middle">diff (% of units)</text>'
               f'<text x="14" y="{top + ph / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + ph / 2})">Δ accuracy (points)</text>')
    dots = {True: [], False: []}
    for _a, _b, d, da, pm, pa in rows[labelled:]:
        dots[significant(pm, pa)].append(f"M{x(100 * d):.1f} {y(abs(100 * da)):.1f}h0")
    for sig, path in dots.items():
        if path:
            out.append(f'<path class="dots" d="{"".join(path)}" stroke="#1f5fa8" '
                       f'stroke-opacity="{0.9 if sig else 0.35}" stroke-width="5" '
                       'stroke-linecap="round" fill="none"/>')
    for i, (a, b, d, da, pm, pa) in enumerate(named):
        cx, cy = x(100 * d), y(abs(100 * da))
        fill = "#1f5fa8" if significant(pm, pa) else "#fff"
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" stroke="#1f5fa8" '
                   f'stroke-width="1.5" fill="{fill}"><title>'
                   f'{esc(a)} → {esc(b)}: diff {100 * d:.2f}%, Δacc {100 * da:+.2f}'
                   f'</title></circle><text x="{cx + 7:.1f}" y="{cy - 4:.1f}" '
                   f'font-size="10" fill="#5b6472">{i + 1}</text>')
        out.append(f'<text x="{left + pw + 20}" y="{top + 12 + 14 * i}" font-size="11">'
                   f'{i + 1}: {esc(a)} → {esc(b)}</text>')
    if len(rows) > labelled:
        out.append(f'<text x="{left + pw + 20}" y="{top + 12 + 14 * len(named) + 4}" '
                   f'font-size="11" fill="#5b6472">+{len(rows) - labelled} more pairs as '
                   "dots</text>")
    out.append("</svg>")
    return "".join(out)


def class_bars_svg(pairs: pl.DataFrame) -> str:
    """Per pair, a stacked bar of corrections / new errors / changed errors."""
    rows = pairs.select("sys1", "sys2", "corrections", "new_errors", "changed_errors").rows()
    label_w = 16 + 7 * max((len(a) + len(b) + 3 for a, b, *_ in rows), default=10)
    bar_w, row_h = 460, 24
    total = max((sum(r[2:]) for r in rows), default=1) or 1
    h = 30 + row_h * len(rows)
    out = [f'<svg class="bars" width="{label_w + bar_w + 20}" height="{h}" role="img">'
           "<title>change classes per pair</title>"]
    for i, cls in enumerate(CLASSES):
        out.append(f'<rect x="{label_w + 150 * i}" y="4" width="12" height="12" '
                   f'fill="{CLASS_COLORS[cls]}"/><text x="{label_w + 150 * i + 16}" y="14" '
                   f'font-size="12">{CLASS_NAMES[cls]}</text>')
    for i, (a, b, *counts) in enumerate(rows):
        y = 26 + i * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" font-size="12" text-anchor="end">'
                   f'{esc(a)} → {esc(b)}</text>')
        x = float(label_w)
        for cls, c in zip(CLASSES, counts, strict=True):
            width = bar_w * c / total
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{row_h - 5}" '
                       f'fill="{CLASS_COLORS[cls]}"><title>{esc(a)} → {esc(b)}: '
                       f'{CLASS_NAMES[cls]} {c}</title></rect>')
            if width > 28:
                out.append(f'<text x="{x + width / 2:.1f}" y="{y + 14}" font-size="11" '
                           f'fill="#fff" text-anchor="middle">{c}</text>')
            x += width
    out.append("</svg>")
    return "".join(out)


def difficulty_svg(difficulty: pl.DataFrame, n_systems: int) -> str:
    """Histogram of k = number of systems correct on a unit (bars narrow with many systems;
    counts above the bars and every tick label only when they fit)."""
    counts = dict(difficulty.select("k_correct", "n").rows())
    ks = list(range(n_systems + 1))
    step = max(4, min(56, 900 // len(ks)))
    bar = max(3, int(step * 0.75))
    every = 1 if step >= 24 else int(np.ceil(24 / step))
    w, h, left, bottom, top = 60 + step * len(ks), 220, 40, 36, 20
    ph = h - top - bottom
    peak = max(counts.values(), default=1) or 1
    total = sum(counts.values()) or 1
    out = [f'<svg class="difficulty" width="{w}" height="{h}" role="img">'
           "<title>difficulty histogram</title>",
           f'<line x1="{left}" y1="{top + ph}" x2="{w - 10}" y2="{top + ph}" stroke="#888"/>']
    for i, k in enumerate(ks):
        n = counts.get(k, 0)
        bh = ph * n / peak
        x = left + 8 + step * i
        out.append(f'<rect x="{x}" y="{top + ph - bh:.1f}" width="{bar}" height="{bh:.1f}" '
                   f'fill="{mix(0.35 + 0.65 * k / max(n_systems, 1))}"><title>k={k}: {n} '
                   f'units ({100 * n / total:.1f}%)</title></rect>')
        if step >= 40:
            out.append(f'<text x="{x + bar / 2}" y="{top + ph - bh - 4:.1f}" font-size="11" '
                       f'text-anchor="middle">{n}</text>')
        if i % every == 0 or k == n_systems:
            out.append(f'<text x="{x + bar / 2}" y="{top + ph + 15}" font-size="12" '
                       f'text-anchor="middle">{k}</text>')
    out.append(f'<text x="{left + (w - left) / 2}" y="{h - 4}" font-size="12" '
               'text-anchor="middle">systems correct (k)</text></svg>')
    return "".join(out)
