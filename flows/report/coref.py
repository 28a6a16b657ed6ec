"""The coreference section of a corpus: standard scores, ARCS mention classes, pairwise
transitions, upper bounds and agreement (Tuggener 2017, tables 10-13)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from sysdiff.flows.report.charts import CLASS_NAMES, class_bars_svg, heatmap, interval_cells
from sysdiff.flows.report.data import TOP_WORDS, CorefData, Read, load_coref
from sysdiff.flows.report.html import (
    NO_DATA,
    ci_text,
    esc,
    mix,
    pct,
    points,
    table_html,
    td,
    transition_matrix_html,
)
from sysdiff.flows.report.tokens import ALL_PAIRS, PAIR_DETAILS, TOP_PAIRS, cls_col
from sysdiff.schemas.vocabulary import ARCS_CLASSES as ARCS
from sysdiff.schemas.vocabulary import CLASSES, COREF_METRICS, CRITERIA
from sysdiff.transforms import summaries as S
from sysdiff.transforms.summaries import mtype_order, transition_class

COREF_ORACLE_ROWS = 120


def _arcs_order(values: Iterable[str]) -> list[str]:
    """ARCS classes in the paper's order, then any other class found in the data."""
    return [*ARCS, *sorted(set(values) - set(ARCS))]


def coref_scores_html(scores: pl.DataFrame, systems: list[str]) -> str:
    """MUC, B3, CEAF-m, CEAF-e, BLANC, LEA, CoNLL: R/P/F1 per system; best per column."""
    metrics = [m for m in COREF_METRICS if m in set(scores["metric"])] + \
        sorted(set(scores["metric"]) - set(COREF_METRICS))
    val = {(s, m): (r, p, f) for s, m, r, p, f in
           scores.select("system", "metric", "recall", "precision", "f1").rows()}
    ci = {(s, m): (lo, hi) for s, m, lo, hi in scores.select(
        "system", "metric", *(c if c in scores.columns else pl.lit(None).alias(c)
                              for c in ("ci_low", "ci_high"))).rows()}
    conll = [{"f1": val.get((s, "conll"), (None,) * 3)[2],
              "ci_low": ci.get((s, "conll"), (None, None))[0],
              "ci_high": ci.get((s, "conll"), (None, None))[1]} for s in systems]
    bars = interval_cells(conll) if "conll" in metrics else [""] * len(systems)
    best = {}
    for m in metrics:
        for i in range(3):
            xs = [val[(s, m)][i] for s in systems if (s, m) in val and val[(s, m)][i] is not None]
            best[(m, i)] = max(xs) if len(xs) > 1 and min(xs) < max(xs) else None
    head = ('<thead><tr><th class="l" rowspan="2">system</th>'
            + "".join(f'<th colspan="3" class="grp">{esc(COREF_METRICS.get(m, m))}</th>'
                      for m in metrics)
            + ('<th class="grp" rowspan="2">CoNLL F1 interval</th>' if "conll" in metrics
               else "")
            + "</tr><tr>" + "".join('<th class="grp">R</th><th>P</th><th>F1</th>'
                                    for _ in metrics) + "</tr></thead>")
    body = []
    for s, bar in zip(systems, bars, strict=True):
        cells = [td(esc(s), "l")]
        for m in metrics:
            v = val.get((s, m), (None, None, None))
            for i, x in enumerate(v):
                cls = " ".join(filter(None, ["grp" if i == 0 else "",
                                             "best" if x is not None and x == best[(m, i)]
                                             else ""]))
                lo, hi = ci.get((s, m), (None, None)) if i == 2 else (None, None)
                tip = f' title="{ci_text(lo, hi)}"' if ci_text(lo, hi) else ""
                cells.append(f'<td class="{cls}" data-metric="{esc(m)}" data-col="{"rpf"[i]}"'
                             f'{tip}>{pct(x)}</td>')
        body.append("<tr>" + "".join(cells) + bar + "</tr>")
    return (f'<table class="coref-scores">{head}<tbody>{"".join(body)}</tbody></table>')


def arcs_html(arcs: pl.DataFrame, criterion: str, systems: list[str]) -> str:
    """ARCS counts and P/R/F1 of one criterion, per mention type (ALL first) and system."""
    df = arcs.filter(pl.col("criterion") == criterion)
    rank = {s: i for i, s in enumerate(systems)}
    rows = []
    for mtype in mtype_order(df["mtype"].to_list()):
        part = df.filter(pl.col("mtype") == mtype).to_dicts()
        part.sort(key=lambda r: rank.get(r["system"], len(rank)))
        f1s = [r["f1"] for r in part if r["f1"] is not None]
        top = max(f1s) if len(f1s) > 1 and min(f1s) < max(f1s) else None
        for i, (r, bar) in enumerate(zip(part, interval_cells(part), strict=True)):
            first = "grp" if i == 0 else ""
            rows.append(
                f'<tr class="{first}" data-system="{esc(r["system"])}" '
                f'data-mtype="{esc(mtype)}">'
                + td(esc(mtype) if i == 0 else "", "l") + td(esc(r["system"]), "l")
                + "".join(td(str(r[k])) for k in ("tp", "fp", "fn", "wl", "tn"))
                + td(pct(r["precision"])) + td(pct(r["recall"]))
                + td(pct(r["f1"]), "best" if top is not None and r["f1"] == top else "")
                + bar + "</tr>")
    head = "".join(f'<th class="l">{h}</th>' for h in ("type", "system")) + "".join(
        f"<th>{h}</th>" for h in ("TP", "FP", "FN", "WL", "TN", "P %", "R %", "F1 %",
                                  "F1 interval"))
    return (f'<table class="arcs" data-criterion="{esc(criterion)}"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')


def _share(n: int, d: int) -> str:
    """n / d as a percent with its sign, or no data (—) when d is 0."""
    return f"{100 * n / d:.2f}%" if d else NO_DATA


def coref_summary_html(pair: dict) -> str:
    """The paper's pair summary: difference, then the change classes with their shares."""
    n_diff, n = pair["n_diff"], pair["n_mentions"]
    parts = " ".join(f'<span class="{cls}">{CLASS_NAMES[cls]}: '
                     f'{_share(pair[cls_col(cls)], n_diff)} ({pair[cls_col(cls)]})</span>'
                     for cls in CLASSES)
    return (f'<p class="summary" data-criterion="{esc(pair["criterion"])}">Difference: '
            f'<b>{_share(n_diff, n)}</b> ({n_diff}/{n})<br>{parts}</p>')


def transition_html(trans: pl.DataFrame, criterion: str, sys1: str, sys2: str) -> str:
    """5x5 ARCS transition matrix (c1 rows under S1, c2 columns under S2) as a heat table."""
    classes = _arcs_order([*trans["c1"].to_list(), *trans["c2"].to_list()])
    return transition_matrix_html(trans.select("c1", "c2", "count").rows(), classes,
                                  transition_class, sys1, sys2, {"criterion": criterion})


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
        return NO_DATA if x is None or y is None else f"{100 * (y - x):+.2f}"

    listed = oriented
    if len(oriented) > ALL_PAIRS:  # the most different pairs (by the mean diff of criteria)
        diff = data.pairs.group_by("sys1", "sys2").agg(pl.col("diff").mean())
        mean = {(a, b): d for a, b, d in diff.rows()}
        listed = sorted(oriented, key=lambda p: (-(mean.get(p) or 0.0), p))[:TOP_PAIRS]
    rows = []
    for crit in criteria:
        for a, b in listed:
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
                          "new errors", "changed errors", "Δ ARCS F1 (points)",
                          "Δ CoNLL F1 (points)"], rows,
                         left=3)
    bars = []
    for crit in criteria:
        rows_of_crit = [index[(crit, a, b)] for a, b in listed if (crit, a, b) in index]
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
    top = "" if listed is oriented else \
        f"; the {len(listed)} most different of {len(oriented)} pairs (mean diff of criteria)"
    return (f'<h4>Pairs</h4><p class="note">S1 → S2 from the lower to the higher CoNLL F1; '
            f"units are the mentions of the key, S1 and S2; TP and TN are correct{top}</p>"
            f"{summary}"
            f'<div class="grid">{"".join(bars)}</div><h4>Transitions per pair</h4>'
            '<p class="note">rows: class under S1, columns: class under S2; green = '
            f"corrections, red = new errors, amber = changed errors</p>{more}"
            f"{''.join(details)}")


def coref_oracles_html(oracles: pl.DataFrame, criteria: list[str]) -> str:
    blocks = []
    for crit in criteria:
        t = S.coref_oracle_table(oracles, crit)
        if t.is_empty():
            continue
        rows = [[td(esc(s), "l"), td(esc(m), "l"), td(str(k)), td(f"{tp}/{n}"), td(pct(o)),
                 td(esc(b)), td(pct(br)), td(points(g))]
                for s, k, m, n, tp, o, b, br, g in t.head(COREF_ORACLE_ROWS).rows()]
        note = "" if t.height <= COREF_ORACLE_ROWS else \
            f'<p class="note">first {COREF_ORACLE_ROWS} of {t.height} rows</p>'
        blocks.append(f"<div><h4>ARCS<sub>{esc(crit)}</sub> recall oracle</h4>"
                      '<div class="scroll">' + table_html(
                          ["systems", "type", "size", "oracle TP", "oracle R %",
                           "best member", "its R %", "gain (points)"], rows, cls="oracle-coref",
                          left=2)
                      + f"</div>{note}</div>")
    return ('<h4>Upper bounds</h4><p class="note">over key mentions with an antecedent '
            "(evaluated under the criterion): share for which at least one system of the "
            f'subset is TP</p><div class="grid">{"".join(blocks)}</div>')


def agreement_map(agreement: pl.DataFrame, systems: list[str]) -> str:
    """For many systems: CoNLL F1 of S2 with S1 as the key as a clustered heatmap."""
    conll = agreement.filter(pl.col("metric") == "conll")
    key_rows = S.diff_matrix(conll, systems, "f1", symmetric=False)  # row system = key
    distance = np.clip(1 - (key_rows + key_rows.T) / 2, 0, None)
    np.fill_diagonal(distance, 0)
    order = S.cluster_order(systems, distance)
    return ('<h4>Agreement</h4><p class="note">CoNLL F1 (%) of the column system scored with '
            "the row system as the key (Tuggener 2017, table 13), clustered; hover for values"
            f"</p>{heatmap(order, key_rows, systems, title='CoNLL F1 (%), row = key')}")


def agreement_html(agreement: pl.DataFrame, systems: list[str]) -> str:
    """CoNLL F1 of S2 scored with S1 as the key (the paper's table 13)."""
    if len(systems) > S.MANY_SYSTEMS:
        return agreement_map(agreement, systems)
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
                         f'{mix(t)};color:{"#fff" if t > 0.6 else "#1d2430"}" '
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
