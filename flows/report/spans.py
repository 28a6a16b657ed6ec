"""The span section of a ner corpus (METRICS 5): span scores per type with token accuracy,
span classes per system, pairs over span units (change classes, delta F1, significance),
class transition matrices per type, the span units behind the largest transitions, and the
oracle recall of system combinations."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.report.charts import CLASS_NAMES, class_bars_svg, interval_cells
from sysdiff.flows.report.data import MAX_ROWS, Read
from sysdiff.flows.report.html import (
    esc,
    p_is,
    p_value,
    pct,
    percent,
    points,
    points_text,
    table_html,
    td,
    transition_matrix_html,
)
from sysdiff.flows.report.tokens import ALL_PAIRS, PAIR_DETAILS, TOP_PAIRS, cls_col
from sysdiff.schemas.vocabulary import CLASSES, SPAN_CLASSES, SPAN_CORRECT
from sysdiff.transforms.summaries import MANY_SYSTEMS

SPAN_TABLES = ("span_scores", "span_tags", "span_classes", "span_pairs", "span_transitions",
               "span_oracles")
#: Transition cells per pair with example units, units per cell, oracle rows shown.
EXAMPLE_CELLS = 6
EXAMPLES_PER_CELL = 3
ORACLE_ROWS = 200
KEY_CLASSES = ("correct", "type", "boundary", "missed")


def change_class(c1: str, c2: str) -> str:
    """The change class of a span-class transition ('' on the diagonal)."""
    if c1 == c2:
        return ""
    ok1, ok2 = c1 in SPAN_CORRECT, c2 in SPAN_CORRECT
    return "correction" if ok2 and not ok1 else "new_error" if ok1 and not ok2 \
        else "changed_error"


@dataclass(frozen=True)
class SpanData:
    """The aggregate span rows of one corpus (bounded queries)."""

    corpus: str
    systems: list[str]          # best ALL F1 first
    types: list[str]            # ALL, then the types by name
    scores: pl.DataFrame
    tags: pl.DataFrame
    classes: pl.DataFrame
    pairs: pl.DataFrame
    transitions: pl.DataFrame
    oracles: pl.DataFrame

    def f1(self, system: str) -> float | None:
        rows = self.scores.filter((pl.col("system") == system) & (pl.col("type") == "ALL"))
        return rows["f1"][0] if rows.height else None

    def oriented(self) -> list[dict]:
        """Each unordered pair once, from the lower to the higher ALL F1 (then by name);
        above ``ALL_PAIRS`` pairs, the ``TOP_PAIRS`` most different."""
        rank = {s: i for i, s in enumerate(self.systems)}
        rows = [r for r in self.pairs.to_dicts()
                if r["sys1"] in rank and r["sys2"] in rank
                and (rank[r["sys1"]], r["sys1"]) > (rank[r["sys2"]], r["sys2"])]
        rows.sort(key=lambda r: (rank[r["sys2"]], rank[r["sys1"]]))
        if len(rows) > ALL_PAIRS:
            rows = sorted(rows, key=lambda r: (-r["diff"], r["sys1"], r["sys2"]))[:TOP_PAIRS]
        return rows


def load_spans(read: Read, corpus: str, tables: set[str]) -> SpanData | None:
    """The span tables of a corpus, or None when it has no span scores."""
    if "span_scores" not in tables:
        return None
    c = lit(corpus)

    def q(table: str, sql: str) -> pl.DataFrame:
        return read(sql) if table in tables else pl.DataFrame()

    scores = read(f"select system, type, n_gold, n_pred, n_correct, precision, recall, f1, "
                  f"ci_low, ci_high, scheme from span_scores where corpus = {c} limit {MAX_ROWS}")
    if scores.is_empty():
        return None
    all_f1 = scores.filter(pl.col("type") == "ALL").sort(["f1", "system"],
                                                         descending=[True, False],
                                                         nulls_last=True)
    systems = all_f1["system"].to_list()
    types = ["ALL", *sorted(set(scores["type"]) - {"ALL"})]
    n = len(systems)
    sizes = f" and n_systems in (1, 2, {n - 1}, {n})" if n > MANY_SYSTEMS else ""
    return SpanData(
        corpus=corpus, systems=systems, types=types, scores=scores,
        tags=q("span_tags", f"select system, detected, n_tokens, n_tokens_correct, "
                            f"token_accuracy, n_spans, n_ill_formed from span_tags "
                            f"where corpus = {c} order by system"),
        classes=q("span_classes", f"""select system, type, count(*) filter (where in_key)
            as key_spans, {', '.join(f"count(*) filter (where cls = '{k}') as n_{k}"
                                     for k in (*KEY_CLASSES, 'spurious'))}
            from span_classes where corpus = {c} group by grouping sets
            ((system, type), (system)) order by system, type nulls first"""),
        pairs=q("span_pairs", f"select * from span_pairs where corpus = {c} "
                              f"and sys1 != sys2 limit {MAX_ROWS}"),
        transitions=q("span_transitions", f"select sys1, sys2, type, c1, c2, count from "
                                          f"span_transitions where corpus = {c} "
                                          f"limit {MAX_ROWS}"),
        oracles=q("span_oracles", f"select systems, n_systems, type, n_gold, n_correct, "
                                  f"recall, best_single, gain from span_oracles where "
                                  f"corpus = {c}{sizes} order by n_systems, recall desc, "
                                  f"systems limit {MAX_ROWS}"),
    )


def no_key_spans_note(data: SpanData) -> str:
    """A note naming the types (or the whole corpus) without a key span: their recall and
    F1 are not evaluated (—)."""
    gold = data.scores.group_by("type").agg(pl.col("n_gold").max())
    empty = sorted(gold.filter(pl.col("n_gold") == 0)["type"].to_list())
    if not empty:
        return ""
    what = ("the key has no entity" if "ALL" in empty else
            f"the key has no span of type {', '.join(esc(t) for t in empty)}")
    return f'<p class="note">not evaluated (—): {what}: recall and F1 have no data</p>'


def scores_html(data: SpanData) -> str:
    """P/R/F1 with counts per type (ALL first) and system; best F1 per type in green."""
    rank = {s: i for i, s in enumerate(data.systems)}
    rows = []
    for t in data.types:
        part = sorted(data.scores.filter(pl.col("type") == t).to_dicts(),
                      key=lambda r: rank.get(r["system"], len(rank)))
        f1s = [r["f1"] for r in part if r["f1"] is not None]
        top = max(f1s) if len(f1s) > 1 and min(f1s) < max(f1s) else None
        for i, (r, bar) in enumerate(zip(part, interval_cells(part), strict=True)):
            rows.append([td(esc(t) if i == 0 else "", "l"), td(esc(r["system"]), "l"),
                         td(str(r["n_gold"])), td(str(r["n_pred"])), td(str(r["n_correct"])),
                         td(pct(r["precision"])), td(pct(r["recall"])),
                         td(pct(r["f1"]), "best" if top is not None and r["f1"] == top
                            else ""), bar])
    return table_html(["type", "system", "key spans", "predicted", "correct", "P %", "R %",
                       "F1 %", "F1 interval"], rows, cls="span-scores", left=2)


def tags_html(tags: pl.DataFrame) -> str:
    """Per file: the scheme detected, token accuracy, spans and ill-formed spans."""
    rows = [[td(esc("key" if r["system"] == "__key__" else r["system"]), "l"),
             td(esc(r["detected"])), td(str(r["n_tokens"])),
             td(pct(r["token_accuracy"])), td(str(r["n_spans"])), td(str(r["n_ill_formed"]))]
            for r in tags.sort(pl.col("system") != "__key__", "system").to_dicts()]
    return table_html(["file", "scheme detected", "tokens", "token accuracy %", "spans",
                       "ill-formed spans"], rows, cls="span-tags")


def classes_html(data: SpanData) -> str:
    """Key spans by class (share of the key's spans) and spurious spans, per system; one
    block per type."""
    rank = {s: i for i, s in enumerate(data.systems)}
    rows = []
    for t in data.types:
        part = data.classes.filter(pl.col("type").is_null() if t == "ALL"
                                   else pl.col("type") == t).to_dicts()
        part.sort(key=lambda r: rank.get(r["system"], len(rank)))
        for i, r in enumerate(part):
            n = r["key_spans"]
            rows.append([td(esc(t) if i == 0 else "", "l"), td(esc(r["system"]), "l"),
                         td(str(n)),
                         *(td(f"{r['n_' + k]} ({percent(r['n_' + k] / n if n else None, 1)})")
                           for k in KEY_CLASSES), td(str(r["n_spurious"]))])
    return table_html(["type", "system", "key spans", *KEY_CLASSES, "spurious"], rows,
                      cls="span-classes", left=2)


def pairs_html(data: SpanData, pairs: list[dict]) -> str:
    """Every listed pair over its span units: difference, change classes, delta F1, p."""
    rows = []
    for r in pairs:
        d = max(r["n_diff"], 1)
        rows.append([td(esc(r["sys1"]), "l"), td(esc(r["sys2"]), "l"), td(pct(r["diff"])),
                     td(f"{r['n_diff']}/{r['n_units']}"),
                     *(td(f"{r[cls_col(c)]} ({pct(r[cls_col(c)] / d, 1)}%)", c)
                       for c in CLASSES),
                     td(points(r["delta_f1"])), td(p_value(r["mcnemar_p"])),
                     td(p_value(r["ar_p"], randomization=True))])
    return table_html(["S1", "S2", "diff %", "differing", "corrections", "new errors",
                       "changed errors", "Δ F1 (points)", "McNemar p", "AR p (F1)"], rows,
                      cls="span-pairs", left=2)


def matrix_html(trans: pl.DataFrame, span_type: str, sys1: str, sys2: str) -> str:
    """The class transition matrix of a pair and type (rows: class under S1)."""
    present = {*trans["c1"].to_list(), *trans["c2"].to_list()}
    classes = [c for c in SPAN_CLASSES if c in present]
    table = transition_matrix_html(trans.select("c1", "c2", "count").rows(), classes,
                                   change_class, sys1, sys2, {"type": span_type})
    return f"<div><h4>type {esc(span_type)}</h4>{table}</div>"


def examples_html(read: Read, corpus: str, sys1: str, sys2: str, trans: pl.DataFrame) -> str:
    """The first units of the largest transition cells (type ALL) of a pair, each with what
    both systems predicted and its sentence (the unit in brackets)."""
    from sysdiff.flows.show.spans import span_units_sql

    cells = (trans.filter((pl.col("type") == "ALL") & (pl.col("c1") != pl.col("c2"))
                          & (pl.col("count") > 0))
             .sort(["count", "c1", "c2"], descending=[True, False, False]).head(EXAMPLE_CELLS))
    if cells.is_empty():
        return '<p class="note">no span unit differs</p>'
    where = " or ".join(f"(c1 = {lit(a)} and c2 = {lit(b)})"
                        for a, b in cells.select("c1", "c2").rows())
    units = read(span_units_sql(corpus, sys1, sys2, where, None, EXAMPLES_PER_CELL))
    blocks = []
    for a, b, n in cells.select("c1", "c2", "count").rows():
        part = units.filter((pl.col("c1") == a) & (pl.col("c2") == b))
        rows = [[td(esc(r["sent_id"]), "l"), td(esc(r["type"]), "l"), td(esc(r["span"]), "l"),
                 td(esc(r[sys1]), "l"), td(esc(r[sys2]), "l"),
                 td(esc(r["sentence"]), "l wrap")] for r in part.to_dicts()]
        cls = change_class(a, b)
        blocks.append(f'<details class="cell-examples"><summary><span class="{cls}">'
                      f"{esc(a)} → {esc(b)}</span>: {n} ({esc(CLASS_NAMES[cls])}; first "
                      f"{part.height})</summary>"
                      + table_html(["sent_id", "type", "span", sys1, sys2, "sentence"], rows,
                                   cls="span-examples", left=6) + "</details>")
    return "".join(blocks)


def pair_details_html(read: Read, data: SpanData, pairs: list[dict]) -> str:
    """Per pair (the first ``PAIR_DETAILS``): summary, transition matrices, examples."""
    out = []
    for i, r in enumerate(pairs[:PAIR_DETAILS]):
        a, b = r["sys1"], r["sys2"]
        trans = data.transitions.filter((pl.col("sys1") == a) & (pl.col("sys2") == b))
        d = max(r["n_diff"], 1)
        summary = (f'<p class="summary">Difference: <b>{percent(r["diff"])}</b> '
                   f'({r["n_diff"]}/{r["n_units"]})<br>'
                   + " ".join(f'<span class="{c}">{CLASS_NAMES[c]}: '
                              f'{pct(r[cls_col(c)] / d)}% ({r[cls_col(c)]})</span>'
                              for c in CLASSES)
                   + f'<br>Δ F1 {points_text(r["delta_f1"])}, McNemar p '
                   f'{p_is(r["mcnemar_p"])}, AR p (F1, by sentence) {p_is(r["ar_p"], True)}'
                   "</p>")
        mats = "".join(matrix_html(trans.filter(pl.col("type") == t), t, a, b)
                       for t in data.types if trans.filter(pl.col("type") == t).height)
        out.append(f'<details class="pair"{" open" if i == 0 else ""}><summary>{esc(a)} → '
                   f"{esc(b)}</summary>{summary}<div class=\"grid\">{mats}</div>"
                   f"<h4>Units behind the largest transitions</h4>"
                   f"{examples_html(read, data.corpus, a, b, trans)}</details>")
    return "".join(out)


def oracles_html(oracles: pl.DataFrame) -> str:
    """Oracle recall (type ALL) of the combinations read, with the best member's."""
    df = oracles.filter(pl.col("type") == "ALL")
    rows = [[td(esc(" + ".join(r["systems"])), "l"), td(str(r["n_systems"])),
             td(f"{r['n_correct']}/{r['n_gold']}"), td(pct(r["recall"])),
             td(f"{r['best_single']}/{r['n_gold']}"), td(points(r["gain"]))]
            for r in df.head(ORACLE_ROWS).to_dicts()]
    note = "" if df.height <= ORACLE_ROWS else \
        f'<p class="note">first {ORACLE_ROWS} of {df.height} rows</p>'
    return (table_html(["systems", "size", "correct by one", "oracle recall %",
                        "best member", "gain (points)"], rows, cls="span-oracles")
            + note)


def spans_html(read: Read, corpus: str, tables: set[str]) -> str:
    """The span section of a corpus, or '' when it has no span scores."""
    data = load_spans(read, corpus, tables)
    if data is None:
        return ""
    scheme = ", ".join(sorted(set(data.scores["scheme"].drop_nulls())))
    parts = [f'<section class="view spans" id="{esc(corpus)}-spans"><h3>{esc(corpus)}: '
             f'spans</h3><p class="note">scheme {esc(scheme)} (auto: conlleval rules; iob2, '
             "bioes: seqeval strict). A span is correct when a key span has the same start, "
             "end and type (a system tokenised otherwise than the key: the same first and "
             "last character of the text); ALL = micro average over types (METRICS 4.1, "
             "5)</p>",
             "<h4>Span scores</h4>" + scores_html(data) + no_key_spans_note(data)]
    if data.tags.height:
        parts.append("<h4>Tags</h4>" + tags_html(data.tags))
    if data.classes.height:
        parts.append("<h4>Span classes</h4><p class=note>each key span under each system: "
                     "correct, type (same boundaries, other type), boundary (an overlapping "
                     "span with other boundaries), missed; spurious: predicted spans that "
                     "overlap no key span</p>" + classes_html(data))
    pairs = data.oriented()
    if pairs:
        many = "" if len(pairs) == len(data.pairs) // 2 else \
            f"; the {len(pairs)} most different of {len(data.pairs) // 2} pairs"
        parts.append("<h4>Pairs</h4><p class=note>S1 → S2 from the lower to the higher F1; "
                     "units: the key's spans and the spurious spans of S1 or S2 (correct and "
                     f"absent are right){many}</p>" + pairs_html(data, pairs)
                     + f"<div>{class_bars_svg(pl.DataFrame(pairs))}</div>"
                     "<h4>Transitions per pair</h4><p class=note>rows: class under S1, "
                     "columns: class under S2; green = corrections, red = new errors, amber = "
                     "changed errors</p>" + pair_details_html(read, data, pairs))
    if data.oracles.height:
        parts.append("<h4>Upper bounds: oracle recall</h4><p class=note>key spans that at "
                     "least one system of the combination gets correct</p>"
                     + oracles_html(data.oracles))
    parts.append("</section>")
    return "".join(parts)
