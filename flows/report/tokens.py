"""The section of one token view (upos ... las): leaderboard, clustered pair heatmap, pairs,
largest changes, drill-down of the pairs that matter, per-label accuracy, oracles.

Up to 10 systems every pair and subset is listed; above, the lists people read: the top pairs
by diff, the largest change cells, and the oracle of each system, the best pairs, each
leave-one-out set and the full set (every row stays queryable in the warehouse).
"""

from __future__ import annotations

import polars as pl

from sysdiff.flows.report.charts import (
    CLASS_NAMES,
    class_bars_svg,
    difficulty_svg,
    heatmap,
    interval_cells,
    scatter_svg,
)
from sysdiff.flows.report.data import (
    LABEL_ROWS,
    TOP_CHANGES,
    CorpusData,
    Read,
    largest_change_cells,
    oracle_labels,
    top_changes,
)
from sysdiff.flows.report.drill import Drill, change_name, example_block, pair_examples
from sysdiff.flows.report.html import (
    NO_DATA,
    Ids,
    esc,
    names_html,
    p_value,
    pct,
    percent,
    points,
    table_html,
    td,
)
from sysdiff.schemas.vocabulary import CLASSES, DEP_VIEWS, VIEWS
from sysdiff.transforms import summaries as S

#: Pairs listed in full up to this many (10 systems), else the top pairs by diff.
ALL_PAIRS = 45
TOP_PAIRS = 20
#: Pairs with a drill-down (change tables and examples), change cells in the largest list.
PAIR_DETAILS = 10
LARGEST = 20
ORACLE_ROWS = 200


def cls_col(cls: str) -> str:
    """The pairs column counting a change class."""
    return {"correction": "corrections", "new_error": "new_errors",
            "changed_error": "changed_errors"}[cls]


def scores_html(board: pl.DataFrame, score: str) -> str:
    """The leaderboard (rows of ``summaries.leaderboard``); the best score in green; each
    score's bootstrap interval as numbers and a bar (one axis for the column)."""
    best = board["accuracy"].max() if board.height > 1 else None
    named = board.to_dicts()
    bars = interval_cells(named, "accuracy")
    rows = [[td(NO_DATA if r["rank"] is None else str(r["rank"])), td(esc(r["system"]), "l"),
             td(pct(r["accuracy"]), "best" if r["accuracy"] == best else ""), bar,
             td(f"{r['n_correct']}/{r['n_units']}"), td(pct(r["sent_exact"])),
             td(f"{r['n_sents_exact']}/{r['n_sents']}")]
            for r, bar in zip(named, bars, strict=True)]
    table = table_html(["#", "system", f"{score} %", "interval", "correct",
                        "sent. exact %", "exact sents"], rows, cls="board", left_cols=(1,))
    return f'<div class="scroll">{table}</div>' if board.height > 15 else table


def pairs_html(df: pl.DataFrame, numbered: bool = False) -> str:
    """Pairs S1 -> S2 with diff, change classes, Δacc and both tests (and the key words
    segmented differently when a system is tokenised otherwise)."""
    segmented = "seg_diff" in df.columns and bool((df["seg_diff"].fill_null(0) > 0).any())
    rows = []
    for i, r in enumerate(df.iter_rows(named=True)):
        d = max(r["n_diff"], 1)
        rows.append([
            *([td(str(i + 1))] if numbered else []),
            td(esc(r["sys1"]), "l"), td(esc(r["sys2"]), "l"), td(pct(r["diff"])),
            td(f"{r['n_diff']}/{r['n_units']}"),
            *(td(f"{r[cls_col(c)]} ({pct(r[cls_col(c)] / d, 1)}%)", c) for c in CLASSES),
            td(points(r["delta_acc"])), td(p_value(r["mcnemar_p"])),
            td(p_value(r["ar_p"], randomization=True)),
            *([td(str(r["seg_diff"]))] if segmented else []),
        ])
    head = [*(["#"] if numbered else []), "S1", "S2", "diff %", "differing", "corrections",
            "new errors", "changed errors", "Δacc (points)", "McNemar p", "AR p",
            *(["segmented differently"] if segmented else [])]
    return table_html(head, rows, cls="pairs", left=0,
                      left_cols=(1, 2) if numbered else (0, 1))


def largest_html(cells: pl.DataFrame) -> str:
    """The largest change cells over all pairs."""
    rows = [[td(esc(a), "l"), td(esc(b), "l"), td(esc(CLASS_NAMES[c]), f"l {c}"),
             td(esc(change_name(c, g, x, y, att)), "l"), td(str(n))]
            for a, b, c, g, x, y, att, n in cells.select(
                "sys1", "sys2", "class", "gold", "l1", "l2", "attachment", "count").rows()]
    return table_html(["S1", "S2", "class", "change", "count"], rows, cls="largest", left=4)


def label_html(df: pl.DataFrame, systems: list[str]) -> str:
    """The wide per-label table (``summaries.label_table``): one column per system."""
    present = [s for s in systems if s in df.columns]
    rows = []
    for r in df.iter_rows(named=True):
        cells = [td(esc(r["gold_label"]), "l"), td(str(r["n"]))]
        for s in present:
            mark = "best" if s in r["best"] else "worst" if s in r["worst"] else ""
            cells.append(td(pct(r[s]), mark))
        cells += [td(pct(r["oracle"])), td(pct(r["gain"]))]
        rows.append(cells)
    return table_html(["gold label", "n", *(f"{s} %" for s in present), "oracle (all) %",
                       "gain (points)"], rows, cls="labels")


def label_summary_html(df: pl.DataFrame, pair: list[str] | None) -> str:
    """The per-label table for many systems (``summaries.label_summary``)."""
    rows = [[td(esc(r["gold_label"]), "l"), td(str(r["n"])), td(pct(r["best_acc"])),
             td(names_html(r["best"]), "l"), td(pct(r["median_acc"])), td(pct(r["worst_acc"])),
             td(names_html(r["worst"]), "l"), td(pct(r["oracle_pair"])),
             td(pct(r["oracle_all"])), td(pct(r["gain"]))]
            for r in df.iter_rows(named=True)]
    name = " + ".join(pair) if pair else "best pair"
    return table_html(["gold label", "n", "best %", "best systems", "median %", "worst %",
                       "worst systems", f"oracle ({name}) %", "oracle (all) %",
                       "gain (points)"], rows, cls="labels", left_cols=(3, 6))


def subset_name(r: dict) -> str:
    """A subset as shown: its members, 'all N systems', or 'all but X' (leave-one-out)."""
    if r.get("kind") == "all":
        return f"all {r['n_systems']} systems"
    if r.get("kind") == "leave-one-out":
        return f"all but {r['left_out']}"
    return r["systems"]


def oracle_rows(df: pl.DataFrame, kind: bool) -> list[list[str]]:
    return [[*([td(esc(r["kind"]), "l")] if kind else []), td(esc(subset_name(r)), "l"),
             td(str(r["n_systems"])), td(f"{r['n_correct']}/{r['n_units']}"),
             td(pct(r["accuracy"])), td(pct(r["best_single"])), td(points(r["gain"]))]
            for r in df.iter_rows(named=True)]


def oracle_html(data: CorpusData, view: str) -> str:
    """Oracle by subset (every subset, or those people read), marginal gains, majority."""
    oracles, systems = data.of("oracles", view), data.systems
    head = ["systems", "size", "correct", "oracle %", "best member %", "gain (points)"]
    if data.many:
        read = S.read_subsets(oracles, systems)
        subsets = table_html(["kind", *head], oracle_rows(read, True), left=2)
        note = ('<p class="note">more than 10 systems: the full set, the best pairs, each '
                "leave-one-out set and each system (every stored subset is in the "
                "<code>oracles</code> table)</p>")
    else:
        table = S.oracle_table(oracles)
        subsets = table_html(head, oracle_rows(table.head(ORACLE_ROWS), False))
        note = "" if table.height <= ORACLE_ROWS else \
            f'<p class="note">first {ORACLE_ROWS} of {table.height} subsets</p>'
    scores = data.of("scores", view)
    gains = S.marginal_gains(oracles, systems, scores.filter(pl.col("missing").fill_null(False))[
        "system"].to_list())
    grows = [[td(esc(s), "l"), td(pct(a)), td(pct(w)), td(points(g)),
              td(NO_DATA if u is None else str(u))]
             for s, a, w, g, u in gains.rows()]
    marginal = table_html(["system", "oracle (all) %", "oracle without it %", "gain (points)",
                           "units"], grows) if grows else \
        '<p class="note">no leave-one-out subsets stored</p>'
    if len(grows) > 15:
        marginal = f'<div class="scroll">{marginal}</div>'
    maj = "".join(f'<p class="note">Majority vote of {len(s)} systems: {percent(a)} '
                  f'({c}/{n})</p>' for s, n, c, a in
                  data.of("majority", view).select("systems", "n_units", "n_correct",
                                                   "accuracy").rows())
    return (f'<div class="grid"><div><h4>Oracle by subset</h4>{note}<div class="scroll">'
            f'{subsets}</div></div><div><h4>Marginal gain of each system</h4>'
            '<p class="note">oracle(all) − oracle(all without it)</p>'
            f"{marginal}{maj}</div></div>")


def pair_changes_html(view: str, corpus: str, pair: dict, changes: pl.DataFrame,
                      examples: dict[tuple, list[str]], drill: Drill, ids: Ids) -> str:
    """Top changes per class of one pair; each cell links to its example sentences."""
    a, b = drill.name(corpus, pair["sys1"]), drill.name(corpus, pair["sys2"])
    tables, blocks = [], []
    for cls in CLASSES:
        rows = []
        for r in changes.filter(pl.col("class") == cls).iter_rows(named=True):
            name = change_name(cls, r["gold"], r["l1"], r["l2"], r["attachment"])
            refs = examples.get((cls, r["gold"], r["l1"], r["l2"]), [])
            link = str(r["count"])
            if refs:
                anchor = ids("ex")
                link = f'<a href="#{anchor}">{r["count"]}</a>'
                blocks.append(example_block(anchor, view, a, b, cls, name, refs, r["count"]))
            rows.append([td(esc(name), "l"), td(link), td(pct(r["share"], 1))])
        body = table_html(["change", "count", "share %"], rows) if rows else \
            '<p class="note">none</p>'
        tables.append(f'<div><h4 class="{cls}">{CLASS_NAMES[cls]} ({pair[cls_col(cls)]})'
                      f"</h4>{body}</div>")
    return (f'<div class="classes">{"".join(tables)}</div>'
            f'<div class="examples"><h4>Examples</h4>{"".join(blocks) or "none"}</div>')


def details_html(read: Read, data: CorpusData, view: str, detail: pl.DataFrame,
                 per_cell: int, drill: Drill, ids: Ids) -> str:
    """The drill-down of each pair of ``detail``: top changes per class and examples."""
    punct = VIEWS[view].default_punct
    changes = top_changes(read, data.corpus, view, detail)
    parts = []
    for i, pair in enumerate(detail.iter_rows(named=True)):
        a, b = pair["sys1"], pair["sys2"]
        cell = changes.filter((pl.col("sys1") == a) & (pl.col("sys2") == b)) \
            if changes.height else changes
        rows = pair_examples(read, data, view, punct, a, b, cell, per_cell)
        refs = drill.add(data.corpus, view, a, b, rows) if rows.height else {}
        parts.append(f'<details class="pair" data-sys1="{esc(a)}" data-sys2="{esc(b)}"'
                     f'{" open" if i == 0 else ""}><summary>{esc(a)} → {esc(b)}: diff '
                     f"{percent(pair['diff'])}, Δacc {points(pair['delta_acc'])}</summary>"
                     f"{pair_changes_html(view, data.corpus, pair, cell, refs, drill, ids)}"
                     "</details>")
    return "".join(parts)


def labels_html(read: Read, data: CorpusData, view: str) -> str:
    """Per-label accuracy: a column per system, or for many systems best/median/worst and
    the oracles of the best pair and of all systems."""
    systems, labels = data.systems, data.of("labels", view)
    if data.many:
        pair = S.best_pair(data.of("oracles", view))
        rows = oracle_labels(read, data, view, [systems, pair or []])
        table = S.label_summary(labels, rows, systems, pair)
        body = label_summary_html(table, pair)
    else:
        rows = oracle_labels(read, data, view, [systems])
        table = S.label_table(labels, rows, systems)
        body = label_html(table, systems)
    few = f", the {table.height} most frequent" if table.height >= LABEL_ROWS else ""
    return ("<h4>Per-label accuracy (%) and oracle</h4><p class=note>by gold label"
            f"{few}; green = best, red = worst in the row</p>"
            f'<div class="scroll">{body}</div>')


def unevaluated_notes(data: CorpusData, view: str) -> tuple[bool, str]:
    """(the view has an evaluable unit, the notes that say what is not evaluated): no unit
    at all, or systems that lack the view's column (their scores are NULL)."""
    scores = data.of("scores", view)
    if scores.height and not (scores["n_units"] > 0).any():
        why = " (every word of the key is punctuation)" if view in DEP_VIEWS else ""
        return False, (f'<p class="note">not evaluated: the key has no evaluable unit{why}: '
                       "no data, no score</p>")
    gone = scores.filter(pl.col("missing").fill_null(False))["system"].sort().to_list()
    if not gone:
        return True, ""
    columns = "/".join(c.upper() for c in VIEWS[view].columns)
    return True, (f'<p class="note">not evaluated (—): {", ".join(esc(s) for s in gone)} '
                  f"(no {columns} column: every value is <code>_</code>)</p>")


def view_html(read: Read, data: CorpusData, view: str, per_cell: int, drill: Drill,
              ids: Ids) -> str:
    """Every table and chart of one view of one corpus (a view without an evaluable unit:
    its heading and why)."""
    punct, systems = VIEWS[view].default_punct, data.systems
    score = S.score_name(view, punct)
    evaluated, notes = unevaluated_notes(data, view)
    if not evaluated:
        return (f'<section class="view" id="{esc(data.corpus)}-{view}"><h3>'
                f"{esc(data.corpus)}: {esc(score)}</h3>{notes}</section>")
    all_pairs = data.of("pairs", view)
    pairs = S.oriented_pairs(all_pairs)
    matrix = S.diff_matrix(all_pairs, systems)
    p_values = S.diff_matrix(all_pairs, systems, "ar_p")
    order = S.cluster_order(systems, matrix)
    listed = pairs if pairs.height <= ALL_PAIRS else pairs.head(TOP_PAIRS)
    detail = S.detail_pairs(pairs, data.of("scores", view), PAIR_DETAILS)
    largest = S.largest_changes(largest_change_cells(read, data.corpus, view, pairs, LARGEST),
                                pairs, LARGEST)
    heading = ("Pairs" if listed.height == pairs.height else
               f"Top {listed.height} of {pairs.height} pairs by diff")
    parts = [f'<section class="view" id="{esc(data.corpus)}-{view}"><h3>{esc(data.corpus)}: '
             f'{esc(score)}</h3><p class="note">view <code>{view}</code>, punctuation '
             f'{"included" if punct else "excluded"}'
             f'{"; labels are DEPRELs, heads shown as index:deprel" if view in DEP_VIEWS else ""}'
             "</p>",
             '<div class="grid"><div><h4>Scores</h4>'
             f'{scores_html(S.leaderboard(data.of("scores", view)), score)}{notes}</div>'
             '<div><h4>Pairwise diff (%)</h4><p class="note">clustered order (similar systems '
             "side by side); AR significance: * p&lt;0.05, ** p&lt;0.01; hover for values"
             f"</p>{heatmap(order, matrix, systems, p_values)}</div>"
             '<div><h4>Δ accuracy vs diff</h4><p class="note">filled: McNemar and AR '
             f"p &lt; 0.05{'; pairs without a Δ (—) are left out' if notes else ''}</p>"
             f"{scatter_svg(pairs.filter(pl.col('delta_acc').is_not_null()))}</div></div>",
             f"<h4>{heading}</h4><p class=note>S1 → S2 from the less to the more accurate "
             "system; * p&lt;0.05, ** p&lt;0.01"
             + ("" if listed.height == pairs.height else
                "; every pair: <code>sysdiff show pairs</code>") + "</p>"
             + pairs_html(listed, numbered=True),
             f"<h4>Change classes per pair</h4>{class_bars_svg(listed)}",
             f"<h4>Largest changes</h4><p class=note>the {LARGEST} largest change cells "
             f"over all pairs</p>{largest_html(largest)}",
             f"<h4>Top {TOP_CHANGES} changes per class</h4><p class=note>the best system "
             f"against the runner-up, then the most different pairs ({detail.height} of "
             f"{pairs.height}); a count opens its examples</p>"
             + details_html(read, data, view, detail, per_cell, drill, ids),
             labels_html(read, data, view),
             "<h4>Difficulty</h4><p class=note>number of units that k systems get right"
             f"</p>{difficulty_svg(data.of('difficulty', view), len(systems))}",
             oracle_html(data, view), "</section>"]
    return "".join(parts)
