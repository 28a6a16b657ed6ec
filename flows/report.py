"""One self-contained HTML report per warehouse (issue #7): tables, SVG charts, drill-down.

Token tasks get one section per view; a corpus with coreference rows gets a coreference
section (standard scores, ARCS, pairwise transitions, upper bounds, agreement) and one with UNL
rows a UNL section (scores, versions compared, oracle, moved sentences).

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

from sysdiff.flows.examples import examples_sql, lit, parse_mappings
from sysdiff.flows.queries import connect
from sysdiff.flows.report_assets import CSS, JS
from sysdiff.schemas.errors import InputError
from sysdiff.transforms.views import DEP_VIEWS, VIEWS, default_punct

CLASSES = ("correction", "new_error", "changed_error")
CLASS_NAMES = {"correction": "Corrections", "new_error": "New errors",
               "changed_error": "Changed errors"}
CLASS_COLORS = {"correction": "#2e7d32", "new_error": "#c62828", "changed_error": "#ef8f00"}
TOP_CHANGES = 10
LABEL_ROWS = 60
ORACLE_ROWS = 200
CONTEXT = 6
PAIR_DETAILS = 28
#: Tables of the other tasks whose corpora have a section (coreference, UNL).
OPTIONAL = ("coref_scores", "arcs_scores", "coref_pairs", "unl_scores", "unl_pairs",
            "unl_oracle")
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
               left: int = 1, left_cols: Iterable[int] = ()) -> str:
    """A table: headers are escaped here, cells are already HTML (see ``td``). The first
    ``left`` columns and the columns ``left_cols`` have left-aligned headers."""
    lefts = set(left_cols)
    head = "".join(f'<th class="l">{esc(h)}</th>' if i < left or i in lefts
                   else f"<th>{esc(h)}</th>" for i, h in enumerate(headers))
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


# ----------------------------------------------------------------------------- coreference

COREF_METRICS = {"muc": "MUC", "bcub": "B³", "ceafm": "CEAF-m", "ceafe": "CEAF-e",
                 "blanc": "BLANC", "lea": "LEA", "conll": "CoNLL"}
ARCS = ("TP", "FP", "FN", "WL", "TN")
ARCS_CORRECT = frozenset(("TP", "TN"))
CRITERIA = ("any", "nom")
TOP_WORDS = 12
COREF_ORACLE_ROWS = 120
MAX_ROWS = 50_000


def tables_in(read: Read) -> set[str]:
    """The tables (views) of the catalog."""
    return set(read("select table_name from information_schema.tables")["table_name"])


def transition_class(c1: str, c2: str) -> str:
    """The change class of an ARCS transition c1 -> c2 ('' on the diagonal)."""
    if c1 == c2:
        return ""
    ok1, ok2 = c1 in ARCS_CORRECT, c2 in ARCS_CORRECT
    if ok2 and not ok1:
        return "correction"
    if ok1 and not ok2:
        return "new_error"
    return "changed_error" if not ok1 else ""


def _arcs_order(values: Iterable[str]) -> list[str]:
    """ARCS classes in the paper's order, then any other class found in the data."""
    return [*ARCS, *sorted(set(values) - set(ARCS))]


def _mtype_order(mtypes: Iterable[str]) -> list[str]:
    rest = sorted(set(mtypes) - {"ALL"})
    return ["ALL"] * ("ALL" in set(mtypes)) + rest


@dataclass(frozen=True)
class CorefData:
    """The aggregate coreference rows of one corpus."""

    corpus: str
    systems: list[str]
    scores: pl.DataFrame
    arcs: pl.DataFrame
    pairs: pl.DataFrame
    transitions: pl.DataFrame
    words: pl.DataFrame
    oracles: pl.DataFrame
    agreement: pl.DataFrame

    def oriented(self) -> list[tuple[str, str]]:
        """Each unordered pair once, from the lower to the higher CoNLL F1 (then by name)."""
        rank = {s: i for i, s in enumerate(self.systems)}  # best first
        seen = {frozenset(p) for p in self.pairs.select("sys1", "sys2").rows() if p[0] != p[1]}
        return sorted(((max(p, key=rank.get), min(p, key=rank.get)) for p in map(tuple, seen)),
                      key=lambda p: (rank[p[1]], rank[p[0]]))


COREF_TABLES = ("coref_scores", "arcs_scores", "coref_pairs", "coref_transitions",
                "coref_oracles", "coref_agreement")


def load_coref(read: Read, corpus: str, tables: set[str]) -> CorefData | None:
    """The coreference tables of a corpus (bounded aggregate queries), or None without rows."""
    c = lit(corpus)

    def q(table: str, sql: str) -> pl.DataFrame:
        return read(sql) if table in tables else pl.DataFrame()

    scores = q("coref_scores", f"select system, metric, recall, precision, f1 from coref_scores "
               f"where corpus = {c} limit {MAX_ROWS}")
    arcs = q("arcs_scores", f"select system, criterion, mtype, tp, fp, fn, wl, tn, precision, "
             f"recall, f1 from arcs_scores where corpus = {c} limit {MAX_ROWS}")
    pairs = q("coref_pairs", f"select criterion, sys1, sys2, n_mentions, n_diff, corrections, "
              f"new_errors, changed_errors, diff from coref_pairs where corpus = {c} "
              f"limit {MAX_ROWS}")
    transitions = q("coref_transitions", f"""
        select criterion, sys1, sys2, c1, c2, sum(count)::bigint as count
        from coref_transitions where corpus = {c} and mtype = 'ALL' and word is null
        group by all limit {MAX_ROWS}""")
    words = q("coref_transitions", f"""
        with w as (select criterion, sys1, sys2, word, c1, c2, sum(count)::bigint as count
                   from coref_transitions where corpus = {c} and word is not null
                     and mtype <> 'NOUN' and c1 <> c2 group by all),
             t as (select criterion, sys1, sys2, word, sum(count)::bigint as total from w
                   group by criterion, sys1, sys2, word
                   qualify row_number() over (partition by criterion, sys1, sys2
                                              order by total desc, word) <= {TOP_WORDS})
        select w.*, t.total from w join t using (criterion, sys1, sys2, word)
        order by criterion, sys1, sys2, total desc, word, count desc, c1, c2""")
    oracles = q("coref_oracles", f"select criterion, systems, mtype, n, n_tp from coref_oracles "
                f"where corpus = {c} limit {MAX_ROWS}")
    agreement = q("coref_agreement", f"select sys1, sys2, metric, f1 from coref_agreement "
                  f"where corpus = {c} limit {MAX_ROWS}")
    if all(df.is_empty() for df in (scores, arcs, pairs, oracles, agreement)):
        return None
    names = set()
    for df, cols in ((scores, ["system"]), (arcs, ["system"]), (pairs, ["sys1", "sys2"])):
        for col in cols:
            if col in df.columns:
                names |= set(df[col].to_list())
    conll = dict(scores.filter(pl.col("metric") == "conll").select("system", "f1").rows()) \
        if scores.height else {}
    systems = sorted(names, key=lambda s: (-(conll.get(s) or -1.0), s))
    return CorefData(corpus, systems, scores, arcs, pairs, transitions, words, oracles,
                     agreement)


def coref_scores_html(scores: pl.DataFrame, systems: list[str]) -> str:
    """MUC, B3, CEAF-m, CEAF-e, BLANC, LEA, CoNLL: R/P/F1 per system; best per column."""
    metrics = [m for m in COREF_METRICS if m in set(scores["metric"])] + \
        sorted(set(scores["metric"]) - set(COREF_METRICS))
    val = {(s, m): (r, p, f) for s, m, r, p, f in
           scores.select("system", "metric", "recall", "precision", "f1").rows()}
    best = {}
    for m in metrics:
        for i in range(3):
            xs = [val[(s, m)][i] for s in systems if (s, m) in val and val[(s, m)][i] is not None]
            best[(m, i)] = max(xs) if len(xs) > 1 and min(xs) < max(xs) else None
    head = ('<thead><tr><th class="l" rowspan="2">system</th>'
            + "".join(f'<th colspan="3" class="grp">{esc(COREF_METRICS.get(m, m))}</th>'
                      for m in metrics)
            + "</tr><tr>" + "".join('<th class="grp">R</th><th>P</th><th>F1</th>'
                                    for _ in metrics) + "</tr></thead>")
    body = []
    for s in systems:
        cells = [td(esc(s), "l")]
        for m in metrics:
            v = val.get((s, m), (None, None, None))
            for i, x in enumerate(v):
                cls = " ".join(filter(None, ["grp" if i == 0 else "",
                                             "best" if x is not None and x == best[(m, i)]
                                             else ""]))
                cells.append(f'<td class="{cls}" data-metric="{esc(m)}" data-col="{"rpf"[i]}"'
                             f'>{pct(x)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="coref-scores">{head}<tbody>{"".join(body)}</tbody></table>')


def arcs_html(arcs: pl.DataFrame, criterion: str, systems: list[str]) -> str:
    """ARCS counts and P/R/F1 of one criterion, per mention type (ALL first) and system."""
    df = arcs.filter(pl.col("criterion") == criterion)
    rank = {s: i for i, s in enumerate(systems)}
    rows = []
    for mtype in _mtype_order(df["mtype"].to_list()):
        part = df.filter(pl.col("mtype") == mtype).to_dicts()
        part.sort(key=lambda r: rank.get(r["system"], len(rank)))
        f1s = [r["f1"] for r in part if r["f1"] is not None]
        top = max(f1s) if len(f1s) > 1 and min(f1s) < max(f1s) else None
        for i, r in enumerate(part):
            first = "grp" if i == 0 else ""
            rows.append(
                f'<tr class="{first}" data-system="{esc(r["system"])}" '
                f'data-mtype="{esc(mtype)}">'
                + td(esc(mtype) if i == 0 else "", "l") + td(esc(r["system"]), "l")
                + "".join(td(str(r[k])) for k in ("tp", "fp", "fn", "wl", "tn"))
                + td(pct(r["precision"])) + td(pct(r["recall"]))
                + td(pct(r["f1"]), "best" if top is not None and r["f1"] == top else "")
                + "</tr>")
    head = "".join(f'<th class="l">{h}</th>' for h in ("type", "system")) + "".join(
        f"<th>{h}</th>" for h in ("TP", "FP", "FN", "WL", "TN", "P %", "R %", "F1 %"))
    return (f'<table class="arcs" data-criterion="{esc(criterion)}"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')


def _share(n: int, d: int) -> str:
    return f"{100 * n / d:.2f}" if d else "0.00"


def coref_summary_html(pair: dict) -> str:
    """The paper's pair summary: difference, then the change classes with their shares."""
    n_diff, n = pair["n_diff"], pair["n_mentions"]
    parts = " ".join(f'<span class="{cls}">{CLASS_NAMES[cls]}: '
                     f'{_share(pair[cls_col(cls)], n_diff)}% ({pair[cls_col(cls)]})</span>'
                     for cls in CLASSES)
    return (f'<p class="summary" data-criterion="{esc(pair["criterion"])}">Difference: '
            f'<b>{_share(n_diff, n)}%</b> ({n_diff}/{n})<br>{parts}</p>')


def _heat(cls: str, t: float) -> str:
    """Inline background of a transition cell: the class colour, alpha by count."""
    rgb = {"correction": "46,125,50", "new_error": "198,40,40",
           "changed_error": "239,143,0"}.get(cls)
    if rgb is None:
        return "background:#eef1f5"
    colour = "#fff" if t > 0.55 else "#1d2430"
    return f"background:rgba({rgb},{0.08 + 0.8 * t:.3f});color:{colour}"


def transition_html(trans: pl.DataFrame, criterion: str, sys1: str, sys2: str) -> str:
    """5x5 ARCS transition matrix (c1 rows under S1, c2 columns under S2) as a heat table."""
    counts = {(a, b): n for a, b, n in trans.select("c1", "c2", "count").rows()}
    classes = _arcs_order([*trans["c1"].to_list(), *trans["c2"].to_list()])
    off = [n for (a, b), n in counts.items() if a != b]
    peak = max(off, default=0) or 1
    head = (f'<th class="l">{esc(sys1)} ↓ / {esc(sys2)} →</th>'
            + "".join(f"<th>{esc(c)}</th>" for c in classes) + "<th>Σ</th>")
    rows = []
    for a in classes:
        cells = [f'<th class="l">{esc(a)}</th>']
        for b in classes:
            n = counts.get((a, b), 0)
            cls = transition_class(a, b)
            name = CLASS_NAMES.get(cls, "same class" if a == b else "other")
            kind = cls or ("diag" if a == b else "other")  # other: correct in both
            cells.append(f'<td class="cell {kind}" data-c1="{esc(a)}" '
                         f'data-c2="{esc(b)}" style="{_heat(cls, n / peak if n else 0)}" '
                         f'title="{esc(a)} → {esc(b)}: {n} ({esc(name)})">{n}</td>')
        cells.append(td(str(sum(counts.get((a, b), 0) for b in classes)), "tot"))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    foot = ('<tr><th class="l">Σ</th>'
            + "".join(td(str(sum(counts.get((a, b), 0) for a in classes)), "tot")
                      for b in classes)
            + td(str(sum(counts.values())), "tot") + "</tr>")
    return (f'<table class="trans" data-criterion="{esc(criterion)}" data-sys1="{esc(sys1)}" '
            f'data-sys2="{esc(sys2)}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
            f"{foot}</tbody></table>")


def words_html(words: pl.DataFrame) -> str:
    """Per lower-cased word (single-token, non-nominal mentions): the differing mentions by
    class and the most frequent transitions."""
    if words.is_empty():
        return '<p class="note">no per-word transitions</p>'
    rows = []
    for (word,), part in words.group_by(["word"], maintain_order=True):
        by = {cls: 0 for cls in CLASSES}
        for a, b, n in part.select("c1", "c2", "count").rows():
            cls = transition_class(a, b)
            if cls:
                by[cls] += n
        top = ", ".join(f'<span class="{transition_class(a, b)}">{esc(a)}→{esc(b)}</span> {n}'
                        for a, b, n in part.select("c1", "c2", "count").head(3).rows())
        rows.append([td(esc(word), "l"), td(str(part["total"][0])),
                     *(td(str(by[cls]), cls) for cls in CLASSES), td(top, "l")])
    return table_html(["word", "differing", "corr.", "new", "changed", "top transitions"], rows,
                      cls="words-tr", left_cols=(5,))


def coref_pairs_html(data: CorefData) -> str:
    """Summary table of every pair per criterion, and per pair the paper's summary, the
    transition matrix and the top per-word transitions of each criterion."""
    conll = dict(data.scores.filter(pl.col("metric") == "conll").select("system", "f1")
                 .rows()) if data.scores.height else {}
    arcs_f1 = {(s, c): f for s, c, f in data.arcs.filter(pl.col("mtype") == "ALL")
               .select("system", "criterion", "f1").rows()} if data.arcs.height else {}
    oriented = data.oriented()
    index = {(r["criterion"], r["sys1"], r["sys2"]): r for r in data.pairs.to_dicts()}
    criteria = [c for c in CRITERIA if c in set(data.pairs["criterion"])] + \
        sorted(set(data.pairs["criterion"]) - set(CRITERIA))

    def delta(x: float | None, y: float | None) -> str:
        return "" if x is None or y is None else f"{100 * (y - x):+.2f}"

    rows = []
    for crit in criteria:
        for a, b in oriented:
            r = index.get((crit, a, b))
            if r is None:
                continue
            d = max(r["n_diff"], 1)
            rows.append([
                td(esc(crit), "l"), td(esc(a), "l"), td(esc(b), "l"), td(pct(r["diff"])),
                td(f"{r['n_diff']}/{r['n_mentions']}"),
                *(td(f"{r[cls_col(c)]} ({pct(r[cls_col(c)] / d, 1)}%)", c) for c in CLASSES),
                td(delta(arcs_f1.get((a, crit)), arcs_f1.get((b, crit)))),
                td(delta(conll.get(a), conll.get(b)))])
    summary = table_html(["criterion", "S1", "S2", "diff %", "differing", "corrections",
                          "new errors", "changed errors", "Δ ARCS F1", "Δ CoNLL F1"], rows,
                         left=3)
    bars = []
    for crit in criteria:
        rows_of_crit = [index[(crit, a, b)] for a, b in oriented if (crit, a, b) in index]
        if rows_of_crit:
            bars.append(f"<div><h4>Change classes ({esc(crit)})</h4>"
                        f"{class_bars_svg(pl.DataFrame(rows_of_crit))}</div>")
    details = []
    for i, (a, b) in enumerate(oriented[:PAIR_DETAILS]):
        blocks = []
        for crit in criteria:
            r = index.get((crit, a, b))
            if r is None:
                continue
            sel = (pl.col("criterion") == crit) & (pl.col("sys1") == a) & (pl.col("sys2") == b)
            blocks.append(
                f'<div class="crit"><h4>ARCS<sub>{esc(crit)}</sub></h4>'
                f"{coref_summary_html(r)}"
                f"{transition_html(data.transitions.filter(sel), crit, a, b)}"
                f'<h4>Top {TOP_WORDS} words</h4><p class="note">single-token non-nominal '
                "mentions (pronouns), by differing mentions</p>"
                f"{words_html(data.words.filter(sel))}</div>")
        details.append(f'<details class="pair"{" open" if i == 0 else ""}><summary>{esc(a)} → '
                       f'{esc(b)}</summary><div class="grid">{"".join(blocks)}</div></details>')
    more = "" if len(oriented) <= PAIR_DETAILS else \
        f'<p class="note">the first {PAIR_DETAILS} of {len(oriented)} pairs</p>'
    return (f'<h4>Pairs</h4><p class="note">S1 → S2 from the lower to the higher CoNLL F1; '
            f"units are the mentions of the key, S1 and S2; TP and TN are correct</p>{summary}"
            f'<div class="grid">{"".join(bars)}</div><h4>Transitions per pair</h4>'
            '<p class="note">rows: class under S1, columns: class under S2; green = '
            f"corrections, red = new errors, amber = changed errors</p>{more}"
            f"{''.join(details)}")


def coref_oracle_table(oracles: pl.DataFrame, criterion: str) -> pl.DataFrame:
    """ARCS recall oracle per subset and mention type, with the best member and the gain."""
    df = oracles.filter(pl.col("criterion") == criterion)
    single = {(s[0], m): tp for s, m, tp in df.filter(pl.col("systems").list.len() == 1)
              .select("systems", "mtype", "n_tp").rows()}
    rows = []
    for systems, mtype, n, n_tp in df.select("systems", "mtype", "n", "n_tp").rows():
        members = sorted(systems)
        best = min(members, key=lambda s: (-single.get((s, mtype), -1), s))
        b = single.get((best, mtype))
        rows.append({"systems": " + ".join(members), "size": len(members), "mtype": mtype,
                     "n": n, "n_tp": n_tp, "oracle": n_tp / n if n else None,
                     "best": best, "best_recall": b / n if n and b is not None else None,
                     "gain": (n_tp - b) / n if n and b is not None else None})
    schema = {"systems": pl.String, "size": pl.Int64, "mtype": pl.String, "n": pl.Int64,
              "n_tp": pl.Int64, "oracle": pl.Float64, "best": pl.String,
              "best_recall": pl.Float64, "gain": pl.Float64}
    order = {m: i for i, m in enumerate(_mtype_order(df["mtype"].to_list()))}
    out = pl.DataFrame(rows, schema=schema)
    return out.with_columns(pl.col("mtype").replace_strict(order, default=len(order),
                                                           return_dtype=pl.Int64)
                            .alias("_m")).sort(["size", "systems", "_m"],
                                               descending=[True, False, False]).drop("_m")


def coref_oracles_html(oracles: pl.DataFrame, criteria: list[str]) -> str:
    blocks = []
    for crit in criteria:
        t = coref_oracle_table(oracles, crit)
        if t.is_empty():
            continue
        rows = [[td(esc(s), "l"), td(esc(m), "l"), td(str(k)), td(f"{tp}/{n}"), td(pct(o)),
                 td(esc(b)), td(pct(br)), td("" if g is None else f"{100 * g:+.2f}")]
                for s, k, m, n, tp, o, b, br, g in t.head(COREF_ORACLE_ROWS).rows()]
        note = "" if t.height <= COREF_ORACLE_ROWS else \
            f'<p class="note">first {COREF_ORACLE_ROWS} of {t.height} rows</p>'
        blocks.append(f"<div><h4>ARCS<sub>{esc(crit)}</sub> recall oracle</h4>"
                      '<div class="scroll">' + table_html(
                          ["systems", "type", "size", "oracle TP", "oracle R %",
                           "best member", "its R %", "gain"], rows, cls="oracle-coref", left=2)
                      + f"</div>{note}</div>")
    return ('<h4>Upper bounds</h4><p class="note">over key mentions with an antecedent '
            "(evaluated under the criterion): share for which at least one system of the "
            f'subset is TP</p><div class="grid">{"".join(blocks)}</div>')


def agreement_html(agreement: pl.DataFrame, systems: list[str]) -> str:
    """CoNLL F1 of S2 scored with S1 as the key (the paper's table 13)."""
    vals = {(a, b, m): f for a, b, m, f in agreement.select("sys1", "sys2", "metric", "f1")
            .rows()}
    conll = [f for (a, b, m), f in vals.items() if m == "conll" and a != b and f is not None]
    lo, hi = min(conll, default=0.0), max(conll, default=1.0)
    head = ('<th class="l">key S1 ↓ / S2 →</th>'
            + "".join(f"<th>{esc(s)}</th>" for s in systems))
    rows = []
    for a in systems:
        cells = [f'<th class="l">{esc(a)}</th>']
        for b in systems:
            f = vals.get((a, b, "conll"))
            if a == b or f is None:
                cells.append('<td class="diag">—</td>')
                continue
            t = 0.15 + 0.85 * (f - lo) / (hi - lo) if hi > lo else 0.5
            tip = ", ".join(f"{COREF_METRICS.get(m, m)} {pct(vals[(a, b, m)])}"
                            for m in COREF_METRICS if (a, b, m) in vals)
            cells.append(f'<td data-sys1="{esc(a)}" data-sys2="{esc(b)}" style="background:'
                         f'{_mix(t)};color:{"#fff" if t > 0.6 else "#1d2430"}" '
                         f'title="{esc(tip)}">{pct(f)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ('<h4>Agreement</h4><p class="note">CoNLL F1 (%) of S2 scored with S1 as the key '
            "(Tuggener 2017, table 13); hover for the other metrics</p>"
            f'<table class="agreement"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table>")


def coref_html(read: Read, corpus: str, tables: set[str]) -> str:
    """The coreference section of a corpus, or '' when its tables have no rows."""
    data = load_coref(read, corpus, tables)
    if data is None:
        return ""
    criteria = [c for c in CRITERIA if c in set(data.arcs["criterion"])] if data.arcs.height \
        else []
    parts = [f'<section class="view coref" id="{esc(corpus)}-coref"><h3>{esc(corpus)}: '
             'coreference</h3><p class="note">ARCS (Tuggener 2017): TP, FP, FN, WL (wrong '
             "linkage), TN per mention; <i>any</i>: a shared antecedent, <i>nom</i>: the "
             "closest nominal antecedent</p>"]
    if data.scores.height:
        parts.append("<h4>Standard scores (%)</h4><p class=note>best per column in green; "
                     "CoNLL = mean F1 of MUC, B³, CEAF-e</p>"
                     + coref_scores_html(data.scores, data.systems))
    if criteria:
        note = "; UNKNOWN = single-token mention of a file without POS" if \
            "UNKNOWN" in set(data.arcs["mtype"]) else ""
        parts.append(f"<h4>ARCS mention classes</h4><p class=note>P = TP/(TP+FP+WL), R = "
                     f"TP/(TP+FN+WL); per mention type, best F1 in green{note}</p>"
                     '<div class="grid">'
                     + "".join(f"<div><h4>ARCS<sub>{esc(c)}</sub></h4>"
                               f"{arcs_html(data.arcs, c, data.systems)}</div>"
                               for c in criteria) + "</div>")
    if data.pairs.height:
        parts.append(coref_pairs_html(data))
    if data.oracles.height:
        crits = [c for c in CRITERIA if c in set(data.oracles["criterion"])]
        parts.append(coref_oracles_html(data.oracles, crits))
    if data.agreement.height:
        parts.append(agreement_html(data.agreement, data.systems))
    parts.append("</section>")
    return "".join(parts)


# ----------------------------------------------------------------------------- UNL

UNL_TABLES = ("unl_scores", "unl_pairs", "unl_oracle", "unl_moved", "unl_sentences")
MOVED_ROWS = 20
UNL_F1 = {"rel_f1": "rel F1 %", "uw_f1": "UW F1 %", "attr_f1": "attr F1 %",
          "word_f1": "word F1 %"}


#: Older names of UNL columns, read as the current ones.
UNL_ALIASES = {"system_a": "sys1", "system_b": "sys2"}


def _unl_cols(read: Read, table: str) -> dict[str, str]:
    """The table's column names, keyed by their current names (see ``UNL_ALIASES``)."""
    return {UNL_ALIASES.get(c, c): c for c in read(f"select * from {table} limit 0").columns}


def _rows_of(read: Read, table: str, corpus: str, tables: set[str], extra: str = "") -> \
        pl.DataFrame:
    """Rows of one corpus of an optional table (any columns it has, current names), bounded.
    ``extra`` (SQL after the WHERE clause) may name the columns ``sys1``/``sys2``."""
    if table not in tables:
        return pl.DataFrame()
    cols = _unl_cols(read, table)
    select = ", ".join(f'"{old}" as "{new}"' if old != new else f'"{new}"'
                       for new, old in cols.items())
    where = f"where corpus = {lit(corpus)}" if "corpus" in cols else "where true"
    return read(f"select * from (select {select} from {table}) {where} {extra} "
                f"limit {MAX_ROWS}")


def unl_scores_html(scores: pl.DataFrame) -> str:
    """P/R/F per system and task, and the micro F1 of relations/UWs/attributes/words."""
    blocks = []
    for (task,), df in scores.sort("task", "f1", "system", descending=[False, True, False],
                                   nulls_last=True).group_by(["task"], maintain_order=True):
        extra = [c for c in UNL_F1 if c in df.columns and df[c].is_not_null().any()]
        many = "options" in df.columns and df["options"].n_unique() > 1
        best = df["f1"].max() if df.height > 1 and df["f1"].n_unique() > 1 else None
        rows = []
        for r in df.to_dicts():
            rows.append([td(esc(r["system"]), "l"),
                         *([td(esc(r["options"]), "l")] if many else []),
                         td(str(r.get("n_expected", ""))), td(str(r.get("n_returned", ""))),
                         td(str(r.get("n_correct", ""))), td(pct(r.get("precision"))),
                         td(pct(r.get("recall"))),
                         td(pct(r.get("f1")), "best" if best is not None and r["f1"] == best
                            else ""),
                         *(td(pct(r.get(c))) for c in extra)])
        blocks.append(f"<div><h4>Task {esc(task)}</h4>" + table_html(
            ["system", *(["options"] if many else []), "expected", "returned", "correct",
             "P %", "R %", "F %", *(UNL_F1[c] for c in extra)], rows, cls="unl-scores",
            left=2 if many else 1) + "</div>")
    return f'<div class="grid">{"".join(blocks)}</div>'


def unl_oriented(pairs: pl.DataFrame) -> pl.DataFrame:
    """Each unordered pair of versions once, from the fewer to the more CORRECT sentences."""
    if pairs.is_empty():
        return pairs
    a, b = pl.col("n_correct_a"), pl.col("n_correct_b")
    keep = (b > a) | ((b == a) & (pl.col("sys1") < pl.col("sys2")))
    return pairs.filter(keep & (pl.col("sys1") != pl.col("sys2"))).sort(
        ["task", "diff", "sys1", "sys2"], descending=[False, True, False, False])


CHANGE_NAMES = {"correction": "correction", "new_error": "new error",
                "changed_error": "changed error"}


def _verdict(returned: bool | None, correct: bool | None) -> str:
    """A sentence verdict: CORRECT, incorrect (returned) or not returned."""
    if correct:
        return '<span class="correction">CORRECT</span>'
    if returned:
        return "incorrect"
    return '<span class="new_error">not returned</span>' if returned is False else ""


def unl_moved_html(moved: pl.DataFrame, a: str, b: str, total: int | None) -> str:
    if moved.is_empty():
        return '<p class="note">no sentence moved</p>'
    rows = [[td(esc(r.get("sent_id")), "l"), td(esc(r.get("sent_index"))),
             td(esc(CHANGE_NAMES.get(r.get("change"), r.get("change"))),
                "l " + esc(r.get("change"))),
             td(_verdict(r.get("returned_a"), r.get("correct_a"))),
             td(esc(r.get("d_all_frac_a"))),
             td(_verdict(r.get("returned_b"), r.get("correct_b"))),
             td(esc(r.get("d_all_frac_b"))),
             td(esc(r.get("reason_a")), "l wrap"), td(esc(r.get("reason_b")), "l wrap")]
            for r in moved.to_dicts()]
    shown = f"{moved.height} of {total}" if total is not None else str(moved.height)
    return (f'<p class="note">{shown} moved sentences, in corpus order</p>'
            + table_html(["sent_id", "#", "change", a, "D", b, "D", f"reason ({a})",
                          f"reason ({b})"], rows, cls="unl-moved", left_cols=(2, 7, 8)))


def unl_html(read: Read, corpus: str, tables: set[str]) -> str:
    """The UNL section of a corpus (grammar versions compared), or '' without rows."""
    scores = _rows_of(read, "unl_scores", corpus, tables)
    pairs = _rows_of(read, "unl_pairs", corpus, tables)
    oracle = _rows_of(read, "unl_oracle", corpus, tables)
    if scores.is_empty() and pairs.is_empty() and oracle.is_empty():
        return ""
    parts = [f'<section class="view unl" id="{esc(corpus)}-unl"><h3>{esc(corpus)}: UNL</h3>'
             '<p class="note">P = correct/returned, R = correct/expected, F = 2PR/(P+R); '
             "micro F1 = 1 − D over summed counts</p>"]
    if scores.height:
        parts.append("<h4>Scores</h4>" + unl_scores_html(scores))
    oriented = unl_oriented(pairs)
    if oriented.height:
        rows = []
        for r in oriented.to_dicts():
            d = max(r["n_changed"], 1)
            rows.append([td(esc(r["task"]), "l"), td(esc(r["sys1"]), "l"),
                         td(esc(r["sys2"]), "l"), td(pct(r["diff"])),
                         td(f"{r['n_changed']}/{r['n_sentences']}"),
                         *(td(f"{r[cls_col(c)]} ({pct(r[cls_col(c)] / d, 1)}%)", c)
                           for c in CLASSES),
                         td(f"{r['n_correct_a']} → {r['n_correct_b']}"), td(pct(r["oracle"]))])
        parts.append("<h4>Versions compared</h4><p class=note>A → B from the fewer to the more "
                     "CORRECT sentences; a changed error is incorrect in both with a different "
                     "error profile</p>"
                     + table_html(["task", "A", "B", "diff %", "moved", "corrections",
                                   "new errors", "changed errors", "correct A → B",
                                   "oracle %"], rows, cls="unl-pairs", left=3))
    if oracle.height:
        rows = [[td(esc(r.get("task")), "l"), td(esc(r.get("systems")), "l"),
                 td(f"{r.get('n_oracle')}/{r.get('n_sentences')}"), td(pct(r.get("oracle"))),
                 td(esc(r.get("best_system")), "l"), td(str(r.get("best_correct"))),
                 td("" if r.get("gain") is None else f"{100 * r['gain']:+.2f}")]
                for r in oracle.to_dicts()]
        parts.append("<h4>Oracle</h4><p class=note>share of sentences that at least one "
                     "version gets CORRECT</p>"
                     + table_html(["task", "versions", "correct by one", "oracle %",
                                   "best version", "its correct", "gain"], rows,
                                  cls="unl-oracle", left=2, left_cols=(4,)))
    if oriented.height and "unl_moved" in tables:
        keys = ", ".join(f"({lit(t)}, {lit(a)}, {lit(b)})" for t, a, b in
                         oriented.head(PAIR_DETAILS).select("task", "sys1", "sys2")
                         .rows())
        moved = _rows_of(read, "unl_moved", corpus, tables, extra=(
            f"and (task, sys1, sys2) in (select * from (values {keys})) "
            "qualify row_number() over (partition by task, sys1, sys2 "
            f"order by sent_index, sent_id) <= {MOVED_ROWS} "
            "order by task, sys1, sys2, sent_index, sent_id"))
        parts.append(f"<h4>Sentences that moved</h4><p class=note>up to {MOVED_ROWS} per pair; "
                     "D = D<sub>all</sub> (UNLization) or D<sub>words</sub> (NLization), exact"
                     "</p>")
        for i, r in enumerate(oriented.head(PAIR_DETAILS).to_dicts()):
            t, a, b = r["task"], r["sys1"], r["sys2"]
            part = moved.filter((pl.col("task") == t) & (pl.col("sys1") == a)
                                & (pl.col("sys2") == b)) if moved.height else moved
            parts.append(f'<details class="pair"{" open" if i == 0 else ""}><summary>'
                         f"{esc(t)}: {esc(a)} → {esc(b)}: {r['n_changed']} moved "
                         f"({r['corrections']} corrections, {r['new_errors']} new errors, "
                         f"{r['changed_errors']} changed errors)</summary>"
                         f'<div class="scroll">{unl_moved_html(part, a, b, r["n_changed"])}'
                         "</div></details>")
    parts.append("</section>")
    return "".join(parts)


def corpus_html(read: Read, corpus: str, per_cell: int, ids: Ids) -> tuple[str, list[str]]:
    """The section of one corpus and its anchors (token views, coreference, UNL)."""
    data = load_corpus(read, corpus)
    views = data.views()
    body = "".join(view_html(read, data, v, per_cell, ids) for v in views)
    tables = tables_in(read)
    coref, unl = coref_html(read, corpus, tables), unl_html(read, corpus, tables)
    anchors = [f"{corpus}-{v}" for v in views] + [f"{corpus}-coref"] * bool(coref) + \
        [f"{corpus}-unl"] * bool(unl)
    systems = ", ".join(esc(s) for s in data.systems)
    return (f'<section class="corpus" id="{esc(corpus)}"><h2>Corpus {esc(corpus)}</h2>'
            f'<p class="note">systems: {systems}</p>{body}{coref}{unl}</section>', anchors)


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
