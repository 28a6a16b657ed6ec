"""One self-contained HTML report per warehouse (issue #7): tables, SVG charts, drill-down.

Reads only the aggregate tables through one read-only DuckDB connection; the only queries
over token data are the bounded example queries (a few words per change cell). Every label
and name is HTML-escaped; the page has no external resources (inline CSS, JS and SVG).
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform

from flows.examples import examples_sql, lit, parse_mappings
from flows.queries import connect
from flows.report_assets import CSS, JS
from schemas.errors import InputError
from transforms.views import DEP_VIEWS, VIEWS, default_punct

CLASSES = ("correction", "new_error", "changed_error")
CLASS_NAMES = {"correction": "Corrections", "new_error": "New errors",
               "changed_error": "Changed errors"}
CLASS_COLORS = {"correction": "#2e7d32", "new_error": "#c62828", "changed_error": "#ef8f00"}
TOP_CHANGES = 10
LABEL_ROWS = 60
ORACLE_ROWS = 200
CONTEXT = 6
PAIR_DETAILS = 28
OPTIONAL = {"coref_scores": "coreference scores", "unl_scores": "UNL scores"}
Read = Callable[[str], pl.DataFrame]


# ----------------------------------------------------------------------------- reading

def reader(root: Path) -> tuple[Read, Callable[[], None]]:
    """A read-only SQL runner over the warehouse catalog (one connection) and its closer."""
    con = connect(root)

    def read(sql: str) -> pl.DataFrame:
        return pl.from_arrow(con.sql(sql).to_arrow_table())

    return read, con.close


def _default_rows(corpus: str) -> str:
    """SQL filter: one corpus, each view at its default punctuation setting."""
    dep = ", ".join(lit(v) for v in DEP_VIEWS)
    return (f"corpus = {lit(corpus)} and punct = (view not in ({dep}))")


@dataclass(frozen=True)
class CorpusData:
    """The aggregate rows of one corpus at each view's default punctuation setting."""

    corpus: str
    key_format: str
    systems: list[str]
    scores: pl.DataFrame
    pairs: pl.DataFrame
    changes: pl.DataFrame
    labels: pl.DataFrame
    oracle_labels: pl.DataFrame
    oracles: pl.DataFrame
    difficulty: pl.DataFrame
    majority: pl.DataFrame

    def views(self) -> list[str]:
        present = set(self.scores["view"].to_list())
        return [v for v in VIEWS if v in present]

    def of(self, name: str, view: str) -> pl.DataFrame:
        """One table's rows for one view."""
        return getattr(self, name).filter(pl.col("view") == view)


def load_corpus(read: Read, corpus: str, top: int = TOP_CHANGES,
                label_rows: int = LABEL_ROWS) -> CorpusData:
    """Load the aggregate tables of a corpus (changes: the top cells; labels: the frequent)."""
    w = _default_rows(corpus)
    meta = read(f"select system, role, format from systems where corpus = {lit(corpus)} "
                "order by system")
    key = meta.filter(pl.col("role") == "key")
    systems = meta.filter(pl.col("role") != "key")["system"].to_list()
    frequent = (f"(view, gold_label) in (select (view, gold_label) from labels where {w} "
                f"group by view, gold_label qualify row_number() over (partition by view "
                f"order by max(n) desc, gold_label) <= {int(label_rows)})")
    return CorpusData(
        corpus=corpus,
        key_format=key["format"][0] if key.height else "conllu",
        systems=systems,
        scores=read(f"select * from scores where {w}"),
        pairs=read(f"select * from pairs where {w}"),
        changes=read(f"""
            with c as (select view, sys1, sys2, class, gold, l1, l2, bool_or(attachment)
                              as attachment, sum(count)::bigint as count
                       from changes where {w} group by all)
            select *, count / sum(count) over (partition by view, sys1, sys2, class) as share
            from c qualify row_number() over (partition by view, sys1, sys2, class
                                              order by count desc, gold, l1, l2) <= {int(top)}
            order by view, sys1, sys2, class, count desc, gold, l1, l2"""),
        labels=read(f"select view, system, gold_label, n, n_correct, accuracy from labels "
                    f"where {w} and {frequent}"),
        oracle_labels=read(f"select view, systems, gold_label, n, n_correct from oracle_labels "
                           f"where {w} and len(systems) = {len(systems)} and {frequent}"),
        oracles=read(f"select view, systems, n_systems, n_units, n_correct, accuracy, "
                     f"best_single, gain from oracles where {w}"),
        difficulty=read(f"select view, k_correct, n from difficulty where {w} "
                        "and gold_label is null order by view, k_correct"),
        majority=read(f"select view, systems, n_units, n_correct, accuracy from majority "
                      f"where {w}"),
    )


def corpora(read: Read, corpus: str | None) -> list[str]:
    """The corpora to report: the one asked for, or every corpus with results."""
    with_corpus = set(read("select table_name from information_schema.columns "
                           "where column_name = 'corpus'")["table_name"])
    sources = ["systems", *(t for t in OPTIONAL if t in with_corpus)]
    union = " union ".join(f"select distinct corpus from {t}" for t in sources)
    names = read(f"select corpus from ({union}) where corpus is not null order by 1")[
        "corpus"].to_list()
    if corpus is None:
        return names
    if corpus not in names:
        raise InputError(f"no corpus '{corpus}' in the warehouse; it has: "
                         f"{', '.join(names) or 'none'}")
    return [corpus]


# ----------------------------------------------------------------------------- tables

def scores_table(scores: pl.DataFrame) -> pl.DataFrame:
    """Per system: accuracy and sentence exact match, best first."""
    return scores.select("system", "n_correct", "n_units", "accuracy", "n_sents_exact",
                         "n_sents", "sent_exact").sort(["accuracy", "system"],
                                                       descending=[True, False])


def oriented_pairs(pairs: pl.DataFrame) -> pl.DataFrame:
    """One row per unordered pair, directed from the less to the more accurate system."""
    keep = (pl.col("delta_acc") > 0) | ((pl.col("delta_acc") == 0)
                                        & (pl.col("sys1") < pl.col("sys2")))
    return pairs.filter(keep & (pl.col("sys1") != pl.col("sys2"))).sort(
        ["diff", "sys1", "sys2"], descending=[True, False, False])


def diff_matrix(pairs: pl.DataFrame, systems: list[str]) -> np.ndarray:
    """Symmetric matrix of pairwise diff (0 on the diagonal)."""
    index = {s: i for i, s in enumerate(systems)}
    m = np.zeros((len(systems), len(systems)))
    for a, b, d in pairs.select("sys1", "sys2", "diff").rows():
        if a in index and b in index:
            m[index[a], index[b]] = m[index[b], index[a]] = d
    return m


def cluster_order(systems: list[str], matrix: np.ndarray) -> list[str]:
    """Systems ordered by average-linkage clustering of the diff matrix (leaf order)."""
    if len(systems) < 3:
        return list(systems)
    condensed = squareform(matrix, checks=False)
    tree = linkage(condensed, method="average")
    if condensed.any():
        tree = optimal_leaf_ordering(tree, condensed)
    return [systems[i] for i in leaves_list(tree)]


def label_table(labels: pl.DataFrame, oracle_labels: pl.DataFrame,
                systems: list[str]) -> pl.DataFrame:
    """The paper's table 9: per gold label, each system's accuracy, the oracle of all systems
    and its gain over the best system, and which systems are best and worst on the row."""
    wide = labels.pivot(on="system", index="gold_label", values="accuracy")
    n = labels.group_by("gold_label").agg(pl.col("n").max())
    oracle = oracle_labels.select("gold_label", (pl.col("n_correct") / pl.col("n"))
                                  .alias("oracle"))
    present = [s for s in systems if s in wide.columns]
    df = n.join(wide, on="gold_label").join(oracle, on="gold_label", how="left")
    accs = [pl.col(s) for s in present]
    best, worst = pl.max_horizontal(accs), pl.min_horizontal(accs)

    def who(target: pl.Expr) -> pl.Expr:
        names = [pl.when(pl.col(s) == target).then(pl.lit(s)) for s in present]
        return pl.when(best > worst).then(pl.concat_list(names).list.drop_nulls()) \
            .otherwise(pl.lit([], dtype=pl.List(pl.String)))

    return df.select(
        "gold_label", "n", *present, "oracle", (pl.col("oracle") - best).alias("gain"),
        who(best).alias("best"), who(worst).alias("worst"),
    ).sort(["n", "gold_label"], descending=[True, False])


def oracle_table(oracles: pl.DataFrame) -> pl.DataFrame:
    """Oracle of every stored subset with its gain over the best member."""
    return oracles.select(
        pl.col("systems").list.join(" + ").alias("systems"), "n_systems", "n_correct",
        "n_units", "accuracy", (pl.col("best_single") / pl.col("n_units")).alias("best_single"),
        "gain",
    ).sort(["n_systems", "accuracy", "systems"], descending=[False, True, False])


def marginal_gains(oracles: pl.DataFrame, systems: list[str]) -> pl.DataFrame:
    """Per system: oracle(all) - oracle(all without it), from the stored leave-one-out rows."""
    by_set = {tuple(sorted(s)): (c, n) for s, c, n in
              oracles.select("systems", "n_correct", "n_units").rows()}
    full = by_set.get(tuple(sorted(systems)))
    rows = []
    for s in systems:
        rest = by_set.get(tuple(sorted(x for x in systems if x != s)))
        if full is None or rest is None:
            continue
        rows.append({"system": s, "oracle_all": full[0] / full[1],
                     "oracle_without": rest[0] / rest[1],
                     "gain": (full[0] - rest[0]) / full[1], "units_gained": full[0] - rest[0]})
    schema = {"system": pl.String, "oracle_all": pl.Float64, "oracle_without": pl.Float64,
              "gain": pl.Float64, "units_gained": pl.Int64}
    return pl.DataFrame(rows, schema=schema).sort(["gain", "system"], descending=[True, False])


def stars(p: float | None) -> str:
    """Significance marks: ** p < 0.01, * p < 0.05."""
    if p is None:
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


# ----------------------------------------------------------------------------- HTML bits

def p_value(p: float | None) -> str:
    """A p-value with its significance marks."""
    return "" if p is None else f'{p:.3g}<span class="sig">{stars(p)}</span>'


def esc(value: object) -> str:
    """HTML-escape any value (quotes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def pct(x: float | None, digits: int = 2) -> str:
    return "" if x is None or x != x else f"{100 * x:.{digits}f}"


def td(content: str, cls: str = "") -> str:
    """A cell of already-escaped HTML."""
    return f'<td class="{cls}">{content}</td>' if cls else f"<td>{content}</td>"


def table_html(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "",
               left: int = 1) -> str:
    """A table: headers are escaped here, cells are already HTML (see ``td``)."""
    head = "".join(f'<th class="l">{esc(h)}</th>' if i < left else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def frame_html(df: pl.DataFrame, limit: int = 500) -> str:
    """Any frame as an escaped table (floats with 4 decimals)."""
    def show(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4f}"
        if isinstance(v, list):
            return ", ".join(map(str, v))
        return "" if v is None else str(v)

    rows = [[td(esc(show(v)), "l" if i == 0 else "") for i, v in enumerate(r)]
            for r in df.head(limit).rows()]
    return table_html(df.columns, rows)


def _mix(t: float) -> str:
    """White to the accent blue."""
    lo, hi = np.array([255, 255, 255]), np.array([31, 95, 168])
    r, g, b = (lo + (hi - lo) * min(max(t, 0.0), 1.0)).round().astype(int)
    return f"rgb({r},{g},{b})"


# ----------------------------------------------------------------------------- SVG charts

def heatmap_svg(order: list[str], matrix: np.ndarray, systems: list[str],
                marks: dict[frozenset, str]) -> str:
    """Pairwise diff (%) heatmap, rows and columns in ``order``; colour spans min..max."""
    index = {s: i for i, s in enumerate(systems)}
    n, cell = len(order), 54
    pad = int(16 + 7.5 * max((len(s) for s in order), default=4))
    width, height = pad + n * cell + int(0.8 * pad), pad + n * cell + 10
    off = matrix[~np.eye(len(systems), dtype=bool)] if len(systems) > 1 else np.zeros(1)
    lo, hi = float(off.min()), float(off.max())
    parts = [f'<svg class="heatmap" width="{width}" height="{height}" role="img" '
             f'viewBox="0 0 {width} {height}"><title>pairwise diff (%)</title>']
    for i, a in enumerate(order):
        y = pad + i * cell
        parts.append(f'<text x="{pad - 6}" y="{y + cell / 2 + 4}" text-anchor="end" '
                     f'font-size="12">{esc(a)}</text>')
        x = pad + i * cell + cell / 2
        parts.append(f'<text x="{x}" y="{pad - 6}" font-size="12" text-anchor="start" '
                     f'transform="rotate(-40 {x} {pad - 6})">{esc(a)}</text>')
        for j, b in enumerate(order):
            d = matrix[index[a], index[b]]
            t = 0.15 + 0.85 * (d - lo) / (hi - lo) if hi > lo else (0.5 if hi > 0 else 0.0)
            mark = "" if a == b else marks.get(frozenset((a, b)), "")
            text = "" if a == b else f"{100 * d:.1f}{mark}"
            parts.append(
                f'<rect x="{pad + j * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{"#eef1f5" if a == b else _mix(t)}"><title>{esc(a)} vs {esc(b)}: '
                f'diff {100 * d:.2f}%{esc(mark)}</title></rect>'
                f'<text x="{pad + j * cell + cell / 2 - 1}" y="{y + cell / 2 + 4}" '
                f'font-size="12" text-anchor="middle" fill="{"#fff" if t > 0.6 else "#1d2430"}"'
                f'>{esc(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def ticks(top: float, n: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top`` (steps of 1, 2, 2.5 or 5 x 10^k)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / n
    base = 10 ** np.floor(np.log10(raw))
    step = next(m * base for m in (1, 2, 2.5, 5, 10) if m * base >= raw)
    count = int(np.ceil(top / step - 1e-9))
    return [round(float(step * k), 10) for k in range(count + 1)]


def scatter_svg(pairs: pl.DataFrame) -> str:
    """Delta accuracy (points) against diff (%) for each pair; filled = both tests p < .05."""
    rows = pairs.select("sys1", "sys2", "diff", "delta_acc", "mcnemar_p", "ar_p").rows()
    legend = max((len(a) + len(b) + 7 for a, b, *_ in rows), default=10)
    pw, ph, left, bottom, top = 360, 250, 54, 44, 16
    w, h = left + pw + 20 + 6.5 * legend, top + ph + bottom
    xt = ticks(max((100 * r[2] for r in rows), default=1))
    yt = ticks(max((abs(100 * r[3]) for r in rows), default=1))

    def x(v: float) -> float:
        return left + pw * v / xt[-1]

    def y(v: float) -> float:
        return top + ph * (1 - v / yt[-1])

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
    out.append(f'<text x="{left + pw / 2}" y="{h - 8}" font-size="12" text-anchor="middle">'
               "diff (% of units)</text>"
               f'<text x="14" y="{top + ph / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + ph / 2})">Δ accuracy (points)</text>')
    for i, (a, b, d, da, pm, pa) in enumerate(rows):
        sig = pm is not None and pa is not None and pm < 0.05 and pa < 0.05
        cx, cy = x(100 * d), y(abs(100 * da))
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" stroke="#1f5fa8" '
                   f'stroke-width="1.5" fill="{"#1f5fa8" if sig else "#fff"}"><title>'
                   f'{esc(a)} → {esc(b)}: diff {100 * d:.2f}%, Δacc {100 * da:+.2f}'
                   f'</title></circle><text x="{cx + 7:.1f}" y="{cy - 4:.1f}" '
                   f'font-size="10" fill="#5b6472">{i + 1}</text>')
        out.append(f'<text x="{left + pw + 20}" y="{top + 12 + 14 * i}" font-size="11">'
                   f'{i + 1}: {esc(a)} → {esc(b)}</text>')
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
    """Histogram of k = number of systems correct on a unit."""
    counts = dict(difficulty.select("k_correct", "n").rows())
    ks = list(range(n_systems + 1))
    w, h, left, bottom, top = 60 + 56 * len(ks), 220, 40, 36, 20
    ph = h - top - bottom
    peak = max(counts.values(), default=1) or 1
    total = sum(counts.values()) or 1
    out = [f'<svg class="difficulty" width="{w}" height="{h}" role="img">'
           "<title>difficulty histogram</title>",
           f'<line x1="{left}" y1="{top + ph}" x2="{w - 10}" y2="{top + ph}" stroke="#888"/>']
    for i, k in enumerate(ks):
        n = counts.get(k, 0)
        bh = ph * n / peak
        x = left + 8 + 56 * i
        out.append(f'<rect x="{x}" y="{top + ph - bh:.1f}" width="42" height="{bh:.1f}" '
                   f'fill="{_mix(0.35 + 0.65 * k / max(n_systems, 1))}"><title>k={k}: {n} '
                   f'units ({100 * n / total:.1f}%)</title></rect>'
                   f'<text x="{x + 21}" y="{top + ph - bh - 4:.1f}" font-size="11" '
                   f'text-anchor="middle">{n}</text>'
                   f'<text x="{x + 21}" y="{top + ph + 15}" font-size="12" '
                   f'text-anchor="middle">{k}</text>')
    out.append(f'<text x="{left + (w - left) / 2}" y="{h - 4}" font-size="12" '
               'text-anchor="middle">systems correct (k)</text></svg>')
    return "".join(out)


# ----------------------------------------------------------------------------- sections

def scores_html(df: pl.DataFrame) -> str:
    best = df["accuracy"].max() if df.height else None
    rows = [[td(esc(s), "l"), td(pct(acc), "best" if acc == best and df.height > 1 else ""),
             td(f"{c}/{n}"), td(pct(se)), td(f"{ne}/{ns}")]
            for s, c, n, acc, ne, ns, se in df.rows()]
    return table_html(["system", "accuracy %", "correct", "sent. exact %", "exact sents"],
                      rows)


def pairs_html(df: pl.DataFrame) -> str:
    rows = []
    for r in df.iter_rows(named=True):
        d = max(r["n_diff"], 1)
        rows.append([
            td(esc(r["sys1"]), "l"), td(esc(r["sys2"]), "l"), td(pct(r["diff"])),
            td(f"{r['n_diff']}/{r['n_units']}"),
            td(f"{r['corrections']} ({pct(r['corrections'] / d, 1)}%)", "correction"),
            td(f"{r['new_errors']} ({pct(r['new_errors'] / d, 1)}%)", "new_error"),
            td(f"{r['changed_errors']} ({pct(r['changed_errors'] / d, 1)}%)", "changed_error"),
            td(f"{100 * r['delta_acc']:+.2f}"),
            td(p_value(r["mcnemar_p"])), td(p_value(r["ar_p"])),
        ])
    return table_html(["S1", "S2", "diff %", "differing", "corrections", "new errors",
                       "changed errors", "Δacc", "McNemar p", "AR p"], rows, left=2)


def label_html(df: pl.DataFrame, systems: list[str]) -> str:
    present = [s for s in systems if s in df.columns]
    rows = []
    for r in df.iter_rows(named=True):
        cells = [td(esc(r["gold_label"]), "l"), td(str(r["n"]))]
        for s in present:
            mark = "best" if s in r["best"] else "worst" if s in r["worst"] else ""
            cells.append(td(pct(r[s]), mark))
        cells += [td(pct(r["oracle"])), td(pct(r["gain"]))]
        rows.append(cells)
    return table_html(["gold label", "n", *present, "oracle (all)", "gain"], rows)


def oracle_html(df: pl.DataFrame, gains: pl.DataFrame, majority: pl.DataFrame) -> str:
    rows = [[td(esc(s), "l"), td(str(k)), td(f"{c}/{n}"), td(pct(a)), td(pct(b)),
             td(f"{100 * g:+.2f}")] for s, k, c, n, a, b, g in df.head(ORACLE_ROWS).rows()]
    subsets = table_html(["systems", "size", "correct", "oracle %", "best member %",
                          "gain"], rows)
    note = "" if df.height <= ORACLE_ROWS else \
        f'<p class="note">first {ORACLE_ROWS} of {df.height} subsets</p>'
    grows = [[td(esc(s), "l"), td(pct(a)), td(pct(w)), td(f"{100 * g:+.2f}"), td(str(u))]
             for s, a, w, g, u in gains.rows()]
    marginal = table_html(["system", "oracle (all) %", "oracle without it %", "gain",
                           "units"], grows) if grows else \
        '<p class="note">no leave-one-out subsets stored</p>'
    maj = "".join(f'<p class="note">Majority vote of {len(s)} systems: {pct(a)}% '
                  f'({c}/{n})</p>' for s, n, c, a in
                  majority.select("systems", "n_units", "n_correct", "accuracy").rows())
    return (f'<div class="grid"><div><h4>Oracle by subset</h4><div class="scroll">{subsets}'
            f'</div>{note}</div><div><h4>Marginal gain of each system</h4>'
            '<p class="note">oracle(all) − oracle(all without it)</p>'
            f"{marginal}{maj}</div></div>")


def _label_of(view: str, label: str, head: int) -> str:
    return f"{head}:{label}" if view in ("head", "las") else label


def _wrong(view: str, lab: str, hd: int, glab: str, ghd: int) -> bool:
    if view == "head":
        return hd != ghd
    if view == "las":
        return hd != ghd or lab != glab
    return lab != glab


def example_html(view: str, sys1: str, sys2: str, ex: dict) -> str:
    """One example sentence: its text and a window of words with gold, S1 and S2 labels."""
    window = ex["window"] or []
    head = [td(esc(w["form"]) + f'<br><small>{w["id"]}</small>',
               "hit" if w["id"] == ex["id"] else "") for w in window]
    rows = [[td("form", "src"), *head]]
    for name, lab, hd in (("gold", "gold", "gold_head"), (sys1, "l1", "head1"),
                          (sys2, "l2", "head2")):
        cells = [td(esc(name), "src")]
        for w in window:
            cls = ["hit"] * (w["id"] == ex["id"])
            if lab != "gold" and _wrong(view, w[lab], w[hd], w["gold"], w["gold_head"]):
                cls.append("wrong")
            cells.append(td(esc(_label_of(view, w[lab], w[hd])), " ".join(cls)))
        rows.append(cells)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return (f'<div class="sent"><div class="note">{esc(ex["sent_id"])}, word {ex["id"]} '
            f'<b>{esc(ex["form"])}</b></div><p class="text">{esc(ex["text"])}</p>'
            f'<table class="words"><tbody>{body}</tbody></table></div>')


def _change_name(cls: str, gold: str, l1: str, l2: str, attachment: bool) -> str:
    name = f"{gold} → {l1} → {l2}" if cls == "changed_error" else f"{l1} → {l2}"
    return name + (" (attachment)" if attachment else "")


class Ids:
    """Unique, label-free anchor ids."""

    def __init__(self) -> None:
        self.n = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}-{next(self.n)}"


def group_examples(examples: pl.DataFrame) -> dict[tuple, list[dict]]:
    """Example rows by change cell (class, gold, l1, l2), in corpus order."""
    cells: dict[tuple, list[dict]] = {}
    for e in examples.iter_rows(named=True):
        cells.setdefault((e["class"], e["gold"], e["l1"], e["l2"]), []).append(e)
    return cells


def pair_changes_html(view: str, pair: dict, changes: pl.DataFrame,
                      examples: dict[tuple, list[dict]], ids: Ids) -> str:
    """Top changes per class of one pair; each cell links to its example sentences."""
    a, b = pair["sys1"], pair["sys2"]
    tables, blocks = [], []
    for cls in CLASSES:
        rows = []
        for r in changes.filter(pl.col("class") == cls).iter_rows(named=True):
            name = _change_name(cls, r["gold"], r["l1"], r["l2"], r["attachment"])
            ex = examples.get((cls, r["gold"], r["l1"], r["l2"]), [])
            link = str(r["count"])
            if ex:
                anchor = ids("ex")
                link = f'<a href="#{anchor}">{r["count"]}</a>'
                sents = "".join(example_html(view, a, b, e) for e in ex)
                blocks.append(f'<details class="ex" id="{anchor}"><summary>'
                              f'<span class="{cls}">{CLASS_NAMES[cls]}</span> {esc(name)}: '
                              f'{len(ex)} of {r["count"]} shown</summary>{sents}</details>')
            rows.append([td(esc(name), "l"), td(link), td(pct(r["share"], 1))])
        body = table_html(["change", "count", "share %"], rows) if rows else \
            '<p class="note">none</p>'
        tables.append(f'<div><h4 class="{cls}">{CLASS_NAMES[cls]} ({pair[cls_col(cls)]})'
                      f"</h4>{body}</div>")
    return (f'<div class="classes">{"".join(tables)}</div>'
            f'<div class="examples"><h4>Examples</h4>{"".join(blocks) or "none"}</div>')


def cls_col(cls: str) -> str:
    return {"correction": "corrections", "new_error": "new_errors",
            "changed_error": "changed_errors"}[cls]


def view_html(read: Read, data: CorpusData, view: str, per_cell: int, ids: Ids) -> str:
    """Every table and chart of one view of one corpus."""
    punct = default_punct(view)
    systems = data.systems
    pairs = oriented_pairs(data.of("pairs", view))
    matrix = diff_matrix(data.of("pairs", view), systems)
    order = cluster_order(systems, matrix)
    marks = {frozenset((a, b)): stars(p) for a, b, p in pairs.select("sys1", "sys2", "ar_p")
             .rows()}
    changes = data.of("changes", view)
    parts = [f'<section class="view" id="{esc(data.corpus)}-{view}"><h3>{esc(data.corpus)}: '
             f'{view}</h3><p class="note">punctuation {"included" if punct else "excluded"}'
             f'{"; labels are DEPRELs, heads shown as index:deprel" if view in DEP_VIEWS else ""}'
             "</p>",
             '<div class="grid"><div><h4>Scores</h4>'
             f'{scores_html(scores_table(data.of("scores", view)))}</div>'
             '<div><h4>Pairwise diff (%)</h4><p class="note">clustered order; '
             f"AR significance: * p&lt;0.05, ** p&lt;0.01</p>"
             f"{heatmap_svg(order, matrix, systems, marks)}</div>"
             '<div><h4>Δ accuracy vs diff</h4><p class="note">filled: McNemar and AR '
             f"p &lt; 0.05</p>{scatter_svg(pairs)}</div></div>",
             "<h4>Pairs</h4><p class=note>S1 → S2 from the less to the more accurate system; "
             "* p&lt;0.05, ** p&lt;0.01</p>" + pairs_html(pairs),
             f"<h4>Change classes per pair</h4>{class_bars_svg(pairs)}",
             f"<h4>Top {TOP_CHANGES} changes per class</h4>"]
    if pairs.height > PAIR_DETAILS:
        parts.append(f'<p class="note">the {PAIR_DETAILS} most different of {pairs.height} '
                     "pairs</p>")
    for i, pair in enumerate(pairs.head(PAIR_DETAILS).iter_rows(named=True)):
        a, b = pair["sys1"], pair["sys2"]
        cell = changes.filter((pl.col("sys1") == a) & (pl.col("sys2") == b))
        ex = group_examples(pair_examples(read, data, view, punct, a, b, cell, per_cell))
        parts.append(f'<details class="pair"{" open" if i == 0 else ""}><summary>{esc(a)} → '
                     f"{esc(b)}: diff {pct(pair['diff'])}%, Δacc "
                     f"{100 * pair['delta_acc']:+.2f}</summary>"
                     f"{pair_changes_html(view, pair, cell, ex, ids)}</details>")
    labels = label_table(data.of("labels", view), data.of("oracle_labels", view), systems)
    few = f", the {labels.height} most frequent" if labels.height >= LABEL_ROWS else ""
    parts.append(f"<h4>Per-label accuracy (%) and oracle of all systems</h4><p class=note>"
                 f"by gold label{few}; green = best, red = worst in the row</p>"
                 f'<div class="scroll">{label_html(labels, systems)}</div>')
    parts.append("<h4>Difficulty</h4><p class=note>number of units that k systems get right"
                 f"</p>{difficulty_svg(data.of('difficulty', view), len(systems))}")
    parts.append(oracle_html(oracle_table(data.of("oracles", view)),
                             marginal_gains(data.of("oracles", view), systems),
                             data.of("majority", view)))
    parts.append("</section>")
    return "".join(parts)


def cells_sql(cells: pl.DataFrame) -> str:
    """SQL: the word is in one of these change cells."""
    values = ", ".join(f"({lit(c)}, {lit(g)}, {lit(a)}, {lit(b)})"
                       for c, g, a, b in cells.select("class", "gold", "l1", "l2").rows())
    return f"(class, gold, l1, l2) in (select * from (values {values}))"


def pair_examples(read: Read, data: CorpusData, view: str, punct: bool, sys1: str, sys2: str,
                  cells: pl.DataFrame, per_cell: int) -> pl.DataFrame:
    """The first ``per_cell`` examples of the given change cells of a pair (one query)."""
    if cells.is_empty() or per_cell <= 0:
        return pl.DataFrame()
    options = data.of("pairs", view).filter((pl.col("sys1") == sys1)
                                            & (pl.col("sys2") == sys2))["options"]
    mappings = parse_mappings(options[0]) if options.len() else {}
    return read(examples_sql(data.corpus, view, punct, sys1, sys2, data.key_format, mappings,
                             cells_sql(cells), per_cell, None, CONTEXT))


def optional_html(read: Read, table: str, title: str, corpus: str) -> str:
    """A generic section for an optional table (coreference, UNL) when it has rows."""
    tables = set(read("select table_name from information_schema.tables")["table_name"])
    if table not in tables:
        return ""
    cols = read(f"select * from {table} limit 0").columns
    where = f" where corpus = {lit(corpus)}" if "corpus" in cols else ""
    df = read(f"select * from {table}{where} limit 500")
    if df.is_empty():
        return ""
    return (f'<section class="view" id="{esc(corpus)}-{table}"><h3>{esc(title)}</h3>'
            f'<div class="scroll">{frame_html(df)}</div></section>')


def corpus_html(read: Read, corpus: str, per_cell: int, ids: Ids) -> tuple[str, list[str]]:
    """The section of one corpus and its view anchors."""
    data = load_corpus(read, corpus)
    views = data.views()
    body = "".join(view_html(read, data, v, per_cell, ids) for v in views)
    extra = "".join(optional_html(read, t, f"{corpus}: {title}", corpus)
                    for t, title in OPTIONAL.items())
    systems = ", ".join(esc(s) for s in data.systems)
    return (f'<section class="corpus" id="{esc(corpus)}"><h2>Corpus {esc(corpus)}</h2>'
            f'<p class="note">systems: {systems}</p>{body}{extra}</section>',
            [f"{corpus}-{v}" for v in views])


def page(title: str, body: str, anchors: list[str]) -> str:
    """The whole document (no external resources)."""
    toc = "".join(f'<a href="#{esc(a)}">{esc(a)}</a>' for a in anchors)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f'<header class="top"><h1>{esc(title)}</h1><p>Comparative evaluation '
            "(Tuggener, EACL 2017): scores, pairwise differences, change classes, "
            "per-label accuracy, oracles, significance.</p></header>"
            f'<nav class="toc">{toc}</nav><main>{body}</main><script>{JS}</script>'
            "</body></html>")


def build_report(root: Path, corpus: str | None, out: Path,
                 examples_per_cell: int = 3) -> Path:
    """Write the HTML report of ``corpus`` (or of every corpus) to ``out``; return ``out``."""
    read, close = reader(root)
    try:
        ids = Ids()
        sections, anchors = [], []
        for name in corpora(read, corpus):
            html_, views = corpus_html(read, name, examples_per_cell, ids)
            sections.append(html_)
            anchors += views
    finally:
        close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    title = "sysdiff report" + (f": {corpus}" if corpus else "")
    out.write_text(page(title, "".join(sections), anchors), encoding="utf-8")
    return out
