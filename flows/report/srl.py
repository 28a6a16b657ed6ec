"""The SRL section of an srl corpus (METRICS 6): the official scores (eval09.pl or
srl-eval.pl), argument and predicate classes per system, pairs over argument and predicate
units (change classes, delta F1, significance), class transition matrices, the top role->role
changes with the units behind them (the sentence with the predicate and the argument
marked), and the oracle recall of system combinations."""

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
    points,
    table_html,
    td,
    transition_matrix_html,
)
from sysdiff.flows.report.tokens import ALL_PAIRS, PAIR_DETAILS, TOP_PAIRS, cls_col
from sysdiff.schemas.vocabulary import CLASSES, PRED_CLASSES, SRL_CLASSES, SRL_CORRECT
from sysdiff.transforms.summaries import MANY_SYSTEMS

UNIT_CLASSES = {"argument": SRL_CLASSES, "predicate": PRED_CLASSES}
KEY_CLASSES = {"argument": ("correct", "role", "boundary", "missed"),
               "predicate": ("correct", "sense", "missed")}
#: Modes shown in the scores table, in order, with what each is.
SHOWN = {
    "semantic_labeled": "eval09 labelled: arguments + predicate senses (official)",
    "semantic_unlabeled": "eval09 unlabelled (official)",
    "args_labeled": "eval09 arguments, labelled (no senses)",
    "args_unlabeled": "eval09 arguments, unlabelled",
    "predicates_labeled": "eval09 predicate senses",
    "predicates_unlabeled": "eval09 predicates found",
    "proposition": "eval09 propositions",
    "exact_semantic_match": "eval09 exact sentences (recall = share)",
    "span": "srl-eval Overall (official; V excluded)",
    "span_unlabeled": "srl-eval unlabelled (-C)",
    "span_v": "srl-eval V",
    "perfect_props": "srl-eval perfect propositions (recall = share)",
    "predicates": "predicates found with the right verb (sysdiff)",
}
CHANGE_ROWS = 8
EXAMPLES_PER_CELL = 3
ORACLE_ROWS = 200


def change_class(c1: str, c2: str) -> str:
    """The change class of a class transition ('' on the diagonal)."""
    if c1 == c2:
        return ""
    ok1, ok2 = c1 in SRL_CORRECT, c2 in SRL_CORRECT
    return "correction" if ok2 and not ok1 else "new_error" if ok1 and not ok2 \
        else "changed_error"


@dataclass(frozen=True)
class SrlData:
    """The aggregate SRL rows of one corpus (bounded queries)."""

    corpus: str
    systems: list[str]          # best official F1 first
    scores: pl.DataFrame
    classes: pl.DataFrame
    pairs: pl.DataFrame
    transitions: pl.DataFrame
    changes: pl.DataFrame
    oracles: pl.DataFrame

    def oriented(self, unit: str) -> list[dict]:
        """Each unordered pair of one unit type once, from the lower to the higher official
        F1 (then by name); above ``ALL_PAIRS`` pairs, the ``TOP_PAIRS`` most different."""
        rank = {s: i for i, s in enumerate(self.systems)}
        rows = [r for r in self.pairs.filter(pl.col("unit") == unit).to_dicts()
                if r["sys1"] in rank and r["sys2"] in rank
                and (rank[r["sys1"]], r["sys1"]) > (rank[r["sys2"]], r["sys2"])]
        rows.sort(key=lambda r: (rank[r["sys2"]], rank[r["sys1"]]))
        if len(rows) > ALL_PAIRS:
            rows = sorted(rows, key=lambda r: (-r["diff"], r["sys1"], r["sys2"]))[:TOP_PAIRS]
        return rows


def load_srl(read: Read, corpus: str, tables: set[str]) -> SrlData | None:
    """The SRL tables of a corpus, or None when it has no SRL scores."""
    if "srl_scores" not in tables:
        return None
    c = lit(corpus)

    def q(table: str, sql: str) -> pl.DataFrame:
        return read(sql) if table in tables else pl.DataFrame()

    scores = read(f"select system, mode, n_gold, n_pred, n_correct, precision, recall, f1, "
                  f"ci_low, ci_high "
                  f"from srl_scores where corpus = {c} and role = 'ALL' and ppos is null")
    if scores.is_empty():
        return None
    official = scores.filter(pl.col("mode").is_in(["semantic_labeled", "span"]))
    systems = official.sort(["f1", "system"], descending=[True, False],
                            nulls_last=True)["system"].to_list()
    n = len(systems)
    sizes = f" and n_systems in (1, 2, {n - 1}, {n})" if n > MANY_SYSTEMS else ""
    return SrlData(
        corpus=corpus, systems=systems, scores=scores,
        classes=q("srl_classes", f"""select system, unit, count(*) filter (where in_key)
            as key_units, {', '.join(f"count(*) filter (where cls = '{k}') as n_{k}"
                                     for k in ('correct', 'role', 'boundary', 'missed',
                                               'sense', 'spurious'))}
            from srl_classes where corpus = {c} group by system, unit
            order by system, unit"""),
        pairs=q("srl_pairs", f"select * from srl_pairs where corpus = {c} limit {MAX_ROWS}"),
        transitions=q("srl_transitions", f"select unit, sys1, sys2, c1, c2, count from "
                                         f"srl_transitions where corpus = {c} and label = "
                                         f"'ALL' limit {MAX_ROWS}"),
        changes=q("srl_changes", f"""select unit, sys1, sys2, class, gold, l1, l2, count
            from srl_changes where corpus = {c} qualify row_number() over (partition by
            unit, sys1, sys2, class order by count desc, gold, l1, l2) <= {CHANGE_ROWS}"""),
        oracles=q("srl_oracles", f"select unit, systems, n_systems, n_gold, n_correct, "
                                 f"recall, best_single, gain from srl_oracles where "
                                 f"corpus = {c} and label = 'ALL'{sizes} order by unit, "
                                 f"n_systems, recall desc, systems limit {MAX_ROWS}"),
    )


def scores_html(data: SrlData) -> str:
    """The official figures per mode and system (best F1 per mode in green)."""
    rank = {s: i for i, s in enumerate(data.systems)}
    rows = []
    present = set(data.scores["mode"])
    for mode, what in SHOWN.items():
        if mode not in present:
            continue
        part = sorted(data.scores.filter(pl.col("mode") == mode).to_dicts(),
                      key=lambda r: rank.get(r["system"], len(rank)))
        f1s = [r["f1"] for r in part if r["f1"] is not None]
        top = max(f1s) if len(f1s) > 1 and min(f1s) < max(f1s) else None
        for i, (r, bar) in enumerate(zip(part, interval_cells(part), strict=True)):
            rows.append([td(esc(what) if i == 0 else "", "l"), td(esc(r["system"]), "l"),
                         td(str(r["n_gold"])), td("" if r["n_pred"] is None
                                                  else str(r["n_pred"])),
                         td(str(r["n_correct"])), td(pct(r["precision"])),
                         td(pct(r["recall"])),
                         td(pct(r["f1"]), "best" if top is not None and r["f1"] == top
                            else ""), bar])
    return table_html(["figure", "system", "gold", "predicted", "correct", "P %", "R %",
                       "F1 %", "F1 interval"], rows, cls="srl-scores", left=2)


def classes_html(data: SrlData, unit: str) -> str:
    """Key units by class (share of the key's) and spurious units, per system."""
    rank = {s: i for i, s in enumerate(data.systems)}
    part = sorted(data.classes.filter(pl.col("unit") == unit).to_dicts(),
                  key=lambda r: rank.get(r["system"], len(rank)))
    rows = []
    for r in part:
        n = r["key_units"]
        rows.append([td(esc(r["system"]), "l"), td(str(n)),
                     *(td(f"{r['n_' + k]} ({pct(r['n_' + k] / n, 1) if n else '—'}%)")
                       for k in KEY_CLASSES[unit]), td(str(r["n_spurious"]))])
    return table_html(["system", f"key {unit}s", *KEY_CLASSES[unit], "spurious"], rows,
                      cls="srl-classes")


def pairs_html(pairs: list[dict]) -> str:
    """Every listed pair over its units: difference, change classes, delta F1, p."""
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
                       "changed errors", "Δ F1 (points)", "McNemar p", "AR p"], rows,
                      cls="srl-pairs", left=2)


def changes_html(changes: pl.DataFrame, unit: str) -> str:
    """The top changes of a pair per class (role -> role for arguments)."""
    rows = [[td(esc(r["class"]), r["class"]), td(esc(r["gold"] or "—"), "l"),
             td(esc(r["l1"]), "l"), td(esc(r["l2"]), "l"), td(str(r["count"]))]
            for r in changes.sort("class", "count", descending=[False, True]).to_dicts()]
    what = "gold role" if unit == "argument" else "PPOS"
    return table_html(["class", what, "S1", "S2", "count"], rows, cls="srl-changes", left=4)


def examples_html(read: Read, corpus: str, unit: str, sys1: str, sys2: str,
                  changes: pl.DataFrame) -> str:
    """The first units of the largest role changes of a pair, each with both systems'
    roles and the sentence (the predicate in braces, the argument in brackets)."""
    from sysdiff.flows.show.srl import srl_units_sql

    cells = changes.sort("count", descending=True).head(4)
    if cells.is_empty():
        return '<p class="note">no unit differs</p>'
    blocks = []
    for r in cells.to_dicts():
        gold = "gold is null" if r["gold"] is None else f"gold = {lit(r['gold'])}"
        where = (f"change = {lit(r['class'])} and {gold} and l1 = {lit(r['l1'])} and "
                 f"l2 = {lit(r['l2'])}")
        units = read(srl_units_sql(corpus, sys1, sys2, unit, where, EXAMPLES_PER_CELL, None))
        rows = [[td(esc(u["sent_id"]), "l"), td(esc(u["predicate"]), "l"),
                 td(esc(u["words"]), "l"), td(esc(u[sys1]), "l"), td(esc(u[sys2]), "l"),
                 td(esc(u["sentence"]), "l wrap")] for u in units.to_dicts()]
        blocks.append(f'<details class="cell-examples"><summary><span class="{r["class"]}">'
                      f"{esc(r['gold'] or '—')}: {esc(r['l1'])} → {esc(r['l2'])}</span>: "
                      f"{r['count']} ({esc(CLASS_NAMES[r['class']])}; first {len(rows)})"
                      "</summary>"
                      + table_html(["sent_id", "predicate", "unit", sys1, sys2, "sentence"],
                                   rows, cls="srl-examples", left=6) + "</details>")
    return "".join(blocks)


def pair_details_html(read: Read, data: SrlData, unit: str, pairs: list[dict]) -> str:
    """Per pair (the first ``PAIR_DETAILS``): summary, transition matrix, top changes and
    the units behind them."""
    out = []
    for i, r in enumerate(pairs[:PAIR_DETAILS]):
        a, b = r["sys1"], r["sys2"]
        mine = (pl.col("unit") == unit) & (pl.col("sys1") == a) & (pl.col("sys2") == b)
        trans = data.transitions.filter(mine)
        changes = data.changes.filter(mine)
        d = max(r["n_diff"], 1)
        summary = (f'<p class="summary">Difference: <b>{pct(r["diff"])}%</b> '
                   f'({r["n_diff"]}/{r["n_units"]})<br>'
                   + " ".join(f'<span class="{c}">{CLASS_NAMES[c]}: '
                              f'{pct(r[cls_col(c)] / d)}% ({r[cls_col(c)]})</span>'
                              for c in CLASSES)
                   + f'<br>Δ F1 {points(r["delta_f1"])} points, McNemar p '
                   f'{p_is(r["mcnemar_p"])}, AR p (units right, by sentence) '
                   f'{p_is(r["ar_p"], True)}'
                   "</p>")
        present = {*trans["c1"].to_list(), *trans["c2"].to_list()}
        classes = [c for c in UNIT_CLASSES[unit] if c in present]
        matrix = transition_matrix_html(trans.select("c1", "c2", "count").rows(), classes,
                                        change_class, a, b, {"unit": unit})
        out.append(f'<details class="pair"{" open" if i == 0 else ""}><summary>{esc(a)} → '
                   f"{esc(b)}</summary>{summary}<div class=\"grid\"><div>{matrix}</div>"
                   f"<div>{changes_html(changes, unit)}</div></div>"
                   "<h4>Units behind the largest changes</h4>"
                   f"{examples_html(read, data.corpus, unit, a, b, changes)}</details>")
    return "".join(out)


def oracles_html(oracles: pl.DataFrame, unit: str) -> str:
    """Oracle recall of the combinations read, with the best member's."""
    df = oracles.filter(pl.col("unit") == unit)
    rows = [[td(esc(" + ".join(r["systems"])), "l"), td(str(r["n_systems"])),
             td(f"{r['n_correct']}/{r['n_gold']}"), td(pct(r["recall"])),
             td(f"{r['best_single']}/{r['n_gold']}"), td(points(r["gain"]))]
            for r in df.head(ORACLE_ROWS).to_dicts()]
    note = "" if df.height <= ORACLE_ROWS else \
        f'<p class="note">first {ORACLE_ROWS} of {df.height} rows</p>'
    return (table_html(["systems", "size", "correct by one", "oracle recall %",
                        "best member", "gain (points)"], rows, cls="srl-oracles") + note)


def srl_html(read: Read, corpus: str, tables: set[str]) -> str:
    """The SRL section of a corpus, or '' when it has no SRL scores."""
    data = load_srl(read, corpus, tables)
    if data is None:
        return ""
    head = "span" not in set(data.scores["mode"])
    how = ("head mode: roles on head words, scored as eval09.pl (CoNLL-2009) scores them"
           if head else "span mode: argument spans, scored as srl-eval.pl (CoNLL-2005) scores "
           "them")
    parts = [f'<section class="view srl" id="{esc(corpus)}-srl"><h3>{esc(corpus)}: semantic '
             f'roles</h3><p class="note">{how} (METRICS 6)</p>',
             "<h4>Official scores</h4>" + scores_html(data)]
    for unit in ("argument", "predicate"):
        if data.classes.height:
            parts.append(f"<h4>{unit.capitalize()} classes</h4>" + classes_html(data, unit))
        pairs = data.oriented(unit)
        if pairs:
            parts.append(f"<h4>Pairs over {unit} units</h4><p class=note>S1 → S2 from the "
                         "lower to the higher official F1; units: the key's and the "
                         "spurious ones of S1 or S2 (correct and absent are right)</p>"
                         + pairs_html(pairs)
                         + f"<div>{class_bars_svg(pl.DataFrame(pairs))}</div>"
                         + pair_details_html(read, data, unit, pairs))
        if data.oracles.height:
            parts.append(f"<h4>Oracle recall ({unit}s)</h4><p class=note>key {unit}s that "
                         "at least one system of the combination gets correct</p>"
                         + oracles_html(data.oracles, unit))
    parts.append("</section>")
    return "".join(parts)
