"""Version histories: per view, the score of each NAME over its versions, significant steps
marked (McNemar p < 0.05 against the previous version), and a summary per NAME.

Read from the ``history`` table (one row per corpus, task, view, punct, name and version:
score, delta, corrections, new errors, changed errors, McNemar p against the previous version
and against the best version before it) only when it exists and has rows for the corpus.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.render import p_value as p_text
from sysdiff.flows.report.charts import ticks
from sysdiff.flows.report.data import MAX_ROWS, Read
from sysdiff.flows.report.html import (
    NO_DATA,
    ci_text,
    esc,
    p_value,
    pct,
    percent,
    points,
    points_text,
    table_html,
    td,
)
from sysdiff.schemas.vocabulary import VIEWS
from sysdiff.transforms import summaries as S

PALETTE = ("#1f5fa8", "#e07b00", "#2e7d32", "#8e24aa", "#c62828", "#00838f", "#6d4c41",
           "#5c6bc0", "#9e9d24", "#d81b60")
UP, DOWN = "#2e7d32", "#c62828"


def load_history(read: Read, corpus: str, tables: set[str]) -> pl.DataFrame:
    """The history rows of a corpus (empty without the table or rows)."""
    if "history" not in tables:
        return pl.DataFrame()
    return read(f"select * from history where corpus = {lit(corpus)} "
                f"order by task, view, name, position limit {MAX_ROWS}")


def y_ticks(lo: float, hi: float) -> list[float]:
    """Round ticks (in %) covering [lo, hi] (in %), at least a 1-point span."""
    span = max(hi - lo, 1.0)
    step = ticks(span)[1]
    start = np.floor(lo / step) * step
    out, t = [], start
    while t < hi + step - 1e-9:
        out.append(round(float(t), 10))
        t += step
    return out if len(out) > 1 else [out[0], out[0] + step]


def point_title(r: dict, score: str) -> str:
    """Hover text of one version."""
    text = f"{r['name']}@{r['version']}: {score} {percent(r['score'])}"
    if ci_text(r.get("ci_low"), r.get("ci_high")):
        text += f" {ci_text(r.get('ci_low'), r.get('ci_high'))}"
    if r.get("previous") is not None:
        p = "" if r.get("mcnemar_p") is None else f", McNemar p = {p_text(r['mcnemar_p'])}"
        interval = ci_text(r.get("delta_ci_low"), r.get("delta_ci_high"))
        text += (f"\nvs {r['previous']}: {points_text(r.get('delta'))}"
                 f"{' ' + interval if interval else ''}{p}"
                 f"\n{r.get('corrections')} corrections, {r.get('new_errors')} new errors, "
                 f"{r.get('changed_errors')} changed errors")
    if r.get("best_version") is not None:
        p = "" if r.get("mcnemar_p_best") is None else f", p = {p_text(r['mcnemar_p_best'])}"
        text += (f"\nvs best before ({r['best_version']}, {percent(r.get('best_score'))}): "
                 f"{points_text(r.get('delta_best'))}{p}")
    return text


def segments(line: list[dict]) -> list[list[dict]]:
    """The runs of consecutive versions with a score (a NULL score breaks the line)."""
    runs: list[list[dict]] = [[]]
    for r in line:
        if r["score"] is None:
            runs.append([])
        else:
            runs[-1].append(r)
    return [run for run in runs if run]


def history_svg(rows: pl.DataFrame, score: str) -> str:
    """Score (%) over versions, one line per NAME; a significant gain is an up triangle
    (green), a significant loss a down triangle (red), other versions small circles; each
    score's bootstrap interval a vertical bar; a version without a score (NULL: not
    evaluated) has no point, and breaks its line; a NAME without any score has no line
    (``chart_or_note`` names it)."""
    names = rows.filter(pl.col("score").is_not_null())["name"].unique(
        maintain_order=True).to_list()
    n_pos = int(rows["position"].max())
    pw = min(640, max(320, 24 * (n_pos - 1)))
    step = pw / max(n_pos - 1, 1)
    left, top, ph, bottom = 56, 14, 220, 70 if len(names) == 1 else 40
    low = rows.select(pl.min_horizontal("score", *_ci(rows, "ci_low")).min()).item()
    high = rows.select(pl.max_horizontal("score", *_ci(rows, "ci_high")).max()).item()
    yt = y_ticks(100 * float(low), 100 * float(high))
    legend_w = 20 + 7.5 * max(len(n) for n in names)
    w, h = left + pw + 30 + legend_w, top + ph + bottom

    def x(pos: int) -> float:
        return left + step * (pos - 1) if n_pos > 1 else left + pw / 2

    def y(v: float) -> float:
        return top + ph * (1 - (100 * v - yt[0]) / (yt[-1] - yt[0]))

    out = [f'<svg class="history" width="{w:.0f}" height="{h}" viewBox="0 0 {w:.0f} {h}" '
           f'role="img"><title>{esc(score)} over versions</title>']
    for t in yt:
        yy = top + ph * (1 - (t - yt[0]) / (yt[-1] - yt[0]))
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" '
                   f'stroke="#eee"/><text x="{left - 6}" y="{yy + 4:.1f}" font-size="11" '
                   f'text-anchor="end">{t:g}</text>')
    every = max(1, int(np.ceil(28 / step)))
    versions = dict(rows.filter(pl.col("name") == names[0]).select("position", "version")
                    .rows()) if len(names) == 1 else {}
    for pos in range(1, n_pos + 1):
        if (pos - 1) % every and pos != n_pos:
            continue
        label = versions.get(pos, str(pos))
        if versions:
            out.append(f'<text x="{x(pos):.1f}" y="{top + ph + 12}" font-size="11" '
                       f'text-anchor="end" transform="rotate(-40 {x(pos):.1f} {top + ph + 12})"'
                       f">{esc(label)}</text>")
        else:
            out.append(f'<text x="{x(pos):.1f}" y="{top + ph + 16}" font-size="11" '
                       f'text-anchor="middle">{pos}</text>')
    out.append(f'<text x="14" y="{top + ph / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + ph / 2})">{esc(score)} %</text>')
    if not versions:
        out.append(f'<text x="{left + pw / 2}" y="{h - 6}" font-size="12" '
                   'text-anchor="middle">version (position in its history)</text>')
    for i, name in enumerate(names):
        colour = PALETTE[i % len(PALETTE)]
        line = rows.filter(pl.col("name") == name).sort("position").to_dicts()
        out.append(f'<g class="line" data-name="{esc(name)}">')
        for run in segments(line):
            path = " ".join(f"{x(r['position']):.1f},{y(r['score']):.1f}" for r in run)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                       'stroke-width="2"/>')
        for r in (r for r in line if r["score"] is not None):
            cx, cy, tip = x(r["position"]), y(r["score"]), esc(point_title(r, score))
            out.append(error_bar(cx, r.get("ci_low"), r.get("ci_high"), y, colour))
            if r["step"]:
                d = -1 if r["step"] > 0 else 1
                out.append(f'<path class="step {"up" if d < 0 else "down"}" d="M{cx:.1f} '
                           f'{cy + 7 * d:.1f}l6 {-12 * d}h-12z" fill="{UP if d < 0 else DOWN}">'
                           f"<title>{tip}</title></path>")
            else:
                out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="#fff" '
                           f'stroke="{colour}" stroke-width="1.5"><title>{tip}</title></circle>')
        out.append("</g>")
        ly = top + 10 + 16 * i
        out.append(f'<rect x="{left + pw + 30}" y="{ly - 9}" width="10" height="10" '
                   f'fill="{colour}"/><text x="{left + pw + 44}" y="{ly}" font-size="12">'
                   f"{esc(name)}</text>")
    out.append("</svg>")
    return "".join(out)


def _ci(rows: pl.DataFrame, column: str) -> list[str]:
    return [column] if column in rows.columns else []


def error_bar(cx: float, low: float | None, high: float | None, y, colour: str) -> str:
    """The vertical bar of one score's interval at x = ``cx`` ('' without one)."""
    if low is None or high is None:
        return ""
    y0, y1 = y(low), y(high)
    return (f'<path class="ci" d="M{cx:.1f} {y0:.1f}V{y1:.1f}M{cx - 3:.1f} {y0:.1f}h6'
            f'M{cx - 3:.1f} {y1:.1f}h6" stroke="{colour}" stroke-opacity="0.55" '
            f'stroke-width="1.5" fill="none"/>')


def chart_or_note(rows: pl.DataFrame, score: str) -> str:
    """The history chart, with a note naming the versions without a score; only the note
    when no version has one (never a flat line at 0)."""
    blind = rows.filter(pl.col("score").is_null())
    note = "" if blind.is_empty() else (
        '<p class="note">not evaluated (no score: —): '
        + ", ".join(esc(f"{n}@{v}") for n, v in blind.select("name", "version").rows())
        + "</p>")
    if blind.height == rows.height:
        return note
    return history_svg(rows, score) + note


def summary_html(rows: pl.DataFrame) -> str:
    """Per NAME: versions, the latest and the best version, significant gains and losses."""
    table = S.history_summary(rows)
    body = [[td(esc(r["name"]), "l"), td(str(r["versions"])), td(esc(r["latest"]), "l"),
             td(pct(r["latest_score"])), td(esc(r["best"] or NO_DATA), "l"),
             td(pct(r["best_score"])),
             td(str(r["gains"]), "correction"), td(str(r["losses"]), "new_error")]
            for r in table.iter_rows(named=True)]
    return table_html(["name", "versions", "latest", "latest %", "best", "best %",
                       "significant gains", "significant losses"], body, cls="history-sum",
                      left_cols=(2, 4))


def steps_html(rows: pl.DataFrame) -> str:
    """The significant steps, in version order."""
    sig = rows.filter(pl.col("significant"))
    if sig.is_empty():
        return '<p class="note">no significant step</p>'
    body = [[td(esc(r["name"]), "l"), td(esc(r["previous"]), "l"), td(esc(r["version"]), "l"),
             td(points(r["delta"]), "correction" if r["step"] > 0 else "new_error"),
             td(ci_text(r.get("delta_ci_low"), r.get("delta_ci_high"))),
             td(str(r["corrections"])), td(str(r["new_errors"])), td(str(r["changed_errors"])),
             td(p_value(r["mcnemar_p"])), td(p_value(r.get("bootstrap_p"), bootstrap=True))]
            for r in sig.iter_rows(named=True)]
    return table_html(["name", "from", "to", "Δ (points)", "Δ interval", "corrections",
                       "new errors", "changed errors", "McNemar p", "bootstrap p"], body,
                      cls="history-steps", left=3)


def history_html(read: Read, corpus: str, tables: set[str], skip: list[str] = ()) -> str:
    """The version-history section of a corpus, or '' when no NAME has two versions;
    views in ``skip`` (no data in the key) are left out."""
    rows = S.history_rows(load_history(read, corpus, tables))
    if rows.height and skip:
        rows = rows.filter(~pl.col("view").is_in(list(skip)))
    if rows.height:
        rows = rows.filter(pl.len().over("task", "view", "name") > 1)
    if rows.is_empty():
        return ""
    rank = {v: i for i, v in enumerate(VIEWS)}
    groups = sorted(rows.group_by("task", "view").len().select("task", "view").rows(),
                    key=lambda tv: (tv[0], rank.get(tv[1], len(rank)), tv[1]))
    blocks = []
    for task, view in groups:
        part = rows.filter((pl.col("task") == task) & (pl.col("view") == view))
        punct = part["punct"].drop_nulls()
        score = S.score_name(view, punct[0] if punct.len() else None, task)
        blocks.append(f'<div class="hist" data-task="{esc(task)}" data-view="{esc(view)}">'
                      f"<h4>{esc(score)}</h4>{chart_or_note(part, score)}"
                      f"{summary_html(part)}<details><summary>significant steps</summary>"
                      f"{steps_html(part)}</details></div>")
    return (f'<section class="view history" id="{esc(corpus)}-history"><h3>{esc(corpus)}: '
            "version history</h3><p class=note>systems named NAME@VERSION, in version order; "
            "▲ / ▼ a significant gain / loss against the previous version (McNemar p &lt; "
            "0.05); a vertical bar: the score's bootstrap interval; hover a point for Δ (and "
            "its interval), corrections, new errors and the best version before"
            f'</p><div class="grid">{"".join(blocks)}</div></section>')
