"""The tables of token corpora (pos, dep): the changes of a pair, per-label differences
and accuracies, marginal oracle gains, and the CoNLL 2018 metric order."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.queries import query, query_rows
from sysdiff.flows.render import p_is, points, to_text
from sysdiff.flows.rows import Rows
from sysdiff.flows.show.common import need_pair, pair_summary, pct, unevaluated
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import DEP_VIEWS

LEGEND = ("Read 'A -> B' (corrections, new errors) as sys1's label -> sys2's label; "
          "'G -> A -> B' (changed errors: both wrong) as gold -> sys1 -> sys2; "
          "'(attachment)': the same label, only the head differs.\n")


def _where(corpus: str, view: str | None, punct: bool | None) -> str:
    parts = [f"corpus = {sql_literal(corpus)}"]
    if view:
        parts.append(f"view = {sql_literal(view)}")
        default = view not in DEP_VIEWS
        parts.append(f"punct = {str(default if punct is None else punct).lower()}")
    return " and ".join(parts)


#: The official script's metric order, as a SQL list.
CONLL18_ORDER = "['Tokens', 'Sentences', 'Words', 'UPOS', 'XPOS', 'UFeats', 'AllTags', " \
    "'Lemmas', 'UAS', 'LAS', 'CLAS', 'MLAS', 'BLEX']"


def _blank_metrics_note(root: Path, corpus: str) -> None:
    """One line naming the CoNLL 2018 metrics left out: the key has no data for them."""
    blank = query_rows(root, f"select distinct metric from conll18 where corpus = "
                             f"{sql_literal(corpus)} and not key_data order by 1"
                       ).column("metric")
    if blank:
        from sysdiff.flows.progress import notice

        notice(f"CoNLL 2018 {', '.join(blank)}: a column they compare is '_' in every key "
               "word; not shown (the rows are in table conll18, as the official script "
               "prints them)")


def _gains(root: Path, where: str, corpus: str, name: str, fmt: str) -> str:
    """What each system adds to the oracle of all: oracle(all) - oracle(all but it)
    (computed by the report's function, over polars: this table imports polars)."""
    import polars as pl

    from sysdiff.transforms.summaries import marginal_gains

    missing = query_rows(root, f"select system from scores where {where} and missing"
                         ).column("system")
    gains = marginal_gains(query(root, f"select systems, n_correct, n_units from oracles "
                                       f"where {where}"), missing=missing)
    shown = gains.select(
        "system", (100 * pl.col("oracle_all")).round(2).alias("oracle of all %"),
        (100 * pl.col("oracle_without")).round(2).alias("oracle without it %"),
        (100 * pl.col("gain")).round(2).alias("marginal gain (points)"),
        pl.col("units_gained").alias("units gained"))
    return to_text(shown, fmt, title=f"gains: {corpus}, {name}")


def _labels(root: Path, where: str, corpus: str, name: str, fmt: str) -> str:
    """Accuracy per gold label: one column per system (long form for CSV and JSON)."""
    long = query_rows(root, f"""select gold_label, system, n, {pct('accuracy')} as "{name} %"
        from labels where {where} order by n desc, gold_label, natural_key(system)""")
    title = f"labels: {corpus}, {name} per gold label"
    if fmt in ("csv", "tsv", "json"):
        return to_text(long, fmt, title=title)
    return to_text(_by_system(long), fmt, title=title)


def _by_system(long: Rows) -> Rows:
    """Rows (gold_label, system, n, value) as one row per gold label (in order of first
    appearance, with its first n) and one ``SYSTEM %`` column per system (in order of first
    appearance); a missing value is null."""
    systems = list(dict.fromkeys(long.column("system")))
    wide: dict[str, list] = {}
    for gold, system, n, value in long.rows:
        row = wide.setdefault(gold, [gold, n] + [None] * len(systems))
        row[2 + systems.index(system)] = value
    return Rows(["gold_label", "n", *(f"{s} %" for s in systems)],
                [False, long.numeric[2], *(True for _ in systems)],
                [tuple(r) for r in wide.values()])


def _labeldiff(root: Path, corpus: str, where: str, name: str, sys1: str | None,
               sys2: str | None, top: int, fmt: str) -> str:
    """The paper's appendix table: labels with the largest accuracy difference for a pair."""
    if not (sys1 and sys2):
        need_pair(root, corpus, "show labeldiff")
    rows = query_rows(root, f"""
        select a.gold_label, a.n, {pct('a.accuracy')} as "{sys1} %",
               {pct('b.accuracy')} as "{sys2} %",
               {pct('b.accuracy - a.accuracy')} as "delta (points)"
        from labels a join labels b using (corpus, view, punct, gold_label)
        where a.{where.replace(' and ', ' and a.')} and a.system = {sql_literal(sys1)}
          and b.system = {sql_literal(sys2)}
        order by abs(b.accuracy - a.accuracy) desc, a.n desc, a.gold_label
        limit {int(top)}""")
    return to_text(rows, fmt, title=f"largest per-label differences of {name}: "
                                     f"{sys1} -> {sys2}")


def _changes(root: Path, corpus: str, view: str, punct: bool, name: str, where: str,
             pair: str, sys1: str | None, sys2: str | None, top: int, fmt: str) -> str:
    if not (sys1 and sys2):
        need_pair(root, corpus, "show changes")
    p = query_rows(root, f"select * from pairs where {where}{pair}")
    if p.is_empty():
        raise InputError(f"no pair {sys1} -> {sys2} for corpus '{corpus}', view '{view}'")
    r = p.row(0, named=True)
    head = (pair_summary(r["n_diff"], r["n_units"], r["corrections"], r["new_errors"],
                         r["changed_errors"]) +
            f"Delta accuracy: {points(r['delta_acc'], r['delta_ci_low'], r['delta_ci_high'])} "
            f"({name})  McNemar p {p_is(r['mcnemar_p'])}  "
            f"AR p {p_is(r['ar_p'], randomization=True)}  "
            f"bootstrap p {p_is(r['bootstrap_p'], bootstrap=True)}\n"
            + "".join(f"Not evaluated: {line}\n"
                      for line in unevaluated(root, corpus, view, punct, (sys1, sys2)))
            + LEGEND)
    rows = query_rows(root, f"""
        with c as (select class, case when class = 'changed_error'
                          then gold || ' -> ' || l1 || ' -> ' || l2 else l1 || ' -> ' || l2 end
                          || case when attachment then ' (attachment)' else '' end as change,
                          sum(count) as count
                   from changes where {where}{pair} group by all)
        select class, change, count,
               round(100.0 * count / sum(count) over (partition by class), 2) as "share %"
        from c qualify row_number() over (partition by class order by count desc, change)
                       <= {int(top)}
        order by class, count desc, change""")
    body = to_text(rows, fmt, title=f"top {top} changes per class ({name})")
    return (head + body) if fmt in ("table", "markdown") else body
