"""The UNL section of a corpus: scores of each grammar version, versions compared (change
classes of sentences), the oracle, and the sentences that moved between two versions."""

from __future__ import annotations

import polars as pl

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.report.charts import interval_cells
from sysdiff.flows.report.data import MAX_ROWS, Read
from sysdiff.flows.report.html import esc, pct, table_html, td
from sysdiff.flows.report.tokens import ALL_PAIRS, PAIR_DETAILS, TOP_PAIRS, cls_col
from sysdiff.schemas.vocabulary import CLASSES
from sysdiff.transforms import summaries as S

UNL_TABLES = ("unl_scores", "unl_pairs", "unl_oracle", "unl_moved", "unl_sentences")
MOVED_ROWS = 20
UNL_F1 = {"rel_f1": "rel F1 %", "uw_f1": "UW F1 %", "attr_f1": "attr F1 %",
          "word_f1": "word F1 %"}


def _rows_of(read: Read, table: str, corpus: str, tables: set[str], extra: str = "") -> \
        pl.DataFrame:
    """Rows of one corpus of an optional table, bounded; ``extra`` is SQL after the WHERE
    clause."""
    if table not in tables:
        return pl.DataFrame()
    return read(f"select * from {table} where corpus = {lit(corpus)} {extra} "
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
        dicts = df.to_dicts()
        for r, bar in zip(dicts, interval_cells(dicts), strict=True):
            rows.append([td(esc(r["system"]), "l"),
                         *([td(esc(r["options"]), "l")] if many else []),
                         td(str(r.get("n_expected", ""))), td(str(r.get("n_returned", ""))),
                         td(str(r.get("n_correct", ""))), td(pct(r.get("precision"))),
                         td(pct(r.get("recall"))),
                         td(pct(r.get("f1")), "best" if best is not None and r["f1"] == best
                            else ""), bar,
                         *(td(pct(r.get(c))) for c in extra)])
        blocks.append(f"<div><h4>Task {esc(task)}</h4>" + table_html(
            ["system", *(["options"] if many else []), "expected", "returned", "correct",
             "P %", "R %", "F %", "F interval", *(UNL_F1[c] for c in extra)], rows,
            cls="unl-scores",
            left=2 if many else 1) + "</div>")
    return f'<div class="grid">{"".join(blocks)}</div>'


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
             td(_verdict(r.get("returned1"), r.get("correct1"))),
             td(esc(r.get("d_all_frac1"))),
             td(_verdict(r.get("returned2"), r.get("correct2"))),
             td(esc(r.get("d_all_frac2"))),
             td(esc(r.get("reason1")), "l wrap"), td(esc(r.get("reason2")), "l wrap")]
            for r in moved.to_dicts()]
    shown = f"{moved.height} of {total}" if total is not None else str(moved.height)
    return (f'<p class="note">{shown} moved sentences, in corpus order</p>'
            + table_html(["sent_id", "#", "change", a, "D", b, "D", f"reason ({a})",
                          f"reason ({b})"], rows, cls="unl-moved", left_cols=(2, 7, 8)))


def unl_html(read: Read, corpus: str, tables: set[str]) -> str:
    """The UNL section of a corpus (grammar versions compared), or '' without rows."""
    scores = _rows_of(read, "unl_scores", corpus, tables)
    pairs = _rows_of(read, "unl_pairs", corpus, tables)
    oracle = _rows_of(read, "unl_oracle", corpus, tables,
                      "order by task, n_systems desc, oracle desc, systems")
    if scores.is_empty() and pairs.is_empty() and oracle.is_empty():
        return ""
    parts = [f'<section class="view unl" id="{esc(corpus)}-unl"><h3>{esc(corpus)}: UNL</h3>'
             '<p class="note">P = correct/returned, R = correct/expected, F = 2PR/(P+R); '
             "micro F1 = 1 − D over summed counts</p>"]
    if scores.height:
        parts.append("<h4>Scores</h4>" + unl_scores_html(scores))
    oriented = S.unl_oriented(pairs)
    if oriented.height:
        many = oriented.group_by("task").len()["len"].max() > ALL_PAIRS
        listed = oriented.group_by("task", maintain_order=True).head(TOP_PAIRS) if many \
            else oriented
        rows = []
        for r in listed.to_dicts():
            d = max(r["n_changed"], 1)
            rows.append([td(esc(r["task"]), "l"), td(esc(r["sys1"]), "l"),
                         td(esc(r["sys2"]), "l"), td(pct(r["diff"])),
                         td(f"{r['n_changed']}/{r['n_sentences']}"),
                         *(td(f"{r[cls_col(c)]} ({pct(r[cls_col(c)] / d, 1)}%)", c)
                           for c in CLASSES),
                         td(f"{r['n_correct1']} → {r['n_correct2']}"), td(pct(r["oracle"]))])
        parts.append("<h4>Versions compared</h4><p class=note>A → B from the fewer to the more "
                     "CORRECT sentences; a changed error is incorrect in both with a different "
                     "error profile"
                     + (f"; the {TOP_PAIRS} most different pairs of each task" if many else "")
                     + "</p>" + table_html(["task", "A", "B", "diff %", "moved", "corrections",
                                   "new errors", "changed errors", "correct A → B",
                                   "oracle %"], rows, cls="unl-pairs", left=3))
    if oracle.height:
        rows = [[td(esc(r.get("task")), "l"), td(esc(" + ".join(r["systems"])), "l"),
                 td(f"{r.get('n_oracle')}/{r.get('n_sentences')}"), td(pct(r.get("oracle"))),
                 td(esc(r.get("best_system")), "l"), td(str(r.get("best_correct"))),
                 td("" if r.get("gain") is None else f"{100 * r['gain']:+.2f}")]
                for r in oracle.to_dicts()]
        parts.append("<h4>Oracle</h4><p class=note>share of sentences that at least one "
                     "version of a set gets CORRECT (every set of versions up to 10 versions; "
                     "above, each version, every pair, every set but one and all)</p>"
                     + table_html(["task", "versions", "correct by one", "oracle %",
                                   "best version", "its correct", "gain (points)"], rows,
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

