"""Paper-style views of the warehouse tables (read-only; DuckDB over the Parquet files).

Tables store fractions (0-1); everything shown here is for people, so every rate is printed
as a percent with ``%`` in its column name, every difference of rates in points, and every
score is named for what it is (``LAS (no punct)``, ``LAS (punct)``, ``CoNLL18 LAS F1``).
``sysdiff sql`` gives the stored fractions. Every option value is checked against what the
warehouse holds: a wrong one is one line naming the valid choices.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.names import (
    COREF_TASKS,
    SHOWABLE,
    SPAN_TASKS,
    SRL_TASKS,
    TOKEN_TASKS,
    UNL_TASKS,
)
from sysdiff.flows.queries import query, query_rows
from sysdiff.flows.render import p_resolution, to_text
from sysdiff.flows.run_record import p_resolution_of
from sysdiff.flows.show.common import (
    BY_PAIR,
    ONCE,
    VIEW_ORDER,
    check_systems,
    check_view,
    corpus_task,
    delta_ci,
    pct,
    pct_ci,
    pick_corpus,
    span_unevaluated,
    unevaluated,
)
from sysdiff.flows.show.coref import _domain_table
from sysdiff.flows.show.history import show_history
from sysdiff.flows.show.spans import _span_table
from sysdiff.flows.show.srl import _srl_table, srl_headline
from sysdiff.flows.show.tokens import (
    CONLL18_ORDER,
    _blank_metrics_note,
    _changes,
    _gains,
    _labeldiff,
    _labels,
    _where,
)
from sysdiff.flows.show.unl import _unl_rows
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import COREF_METRICS, DEP_VIEWS, natural_key, score_name

if TYPE_CHECKING:
    import polars as pl

#: The coreference metrics of the run summary, in order (names: ``COREF_METRICS``).
HEADLINE_METRICS = ("muc", "bcub", "ceafm", "ceafe", "blanc", "lea", "conll")


def headline(root: Path, corpus: str) -> pl.DataFrame:
    """The headline figures of a corpus, one row per system (in natural order), every rate
    in percent: token accuracies (dependency views without punctuation, LAS with it, and
    CoNLL18 LAS F1), coreference F1s, or UNL precision/recall/F."""
    import polars as pl

    wide = _headline(root, corpus)
    if not wide.height:
        return wide
    rank = {s: i for i, s in enumerate(sorted(wide["system"].to_list(), key=natural_key))}
    return wide.sort(pl.col("system").replace_strict(rank, return_dtype=pl.Int64))


def _headline(root: Path, corpus: str) -> pl.DataFrame:
    import polars as pl

    task = corpus_task(root, corpus)
    c = sql_literal(corpus)
    if task in SPAN_TASKS:
        return query(root, f"""select s.system, {pct('s.precision')} as "P %",
            {pct('s.recall')} as "R %", {pct('s.f1')} as "F1 %",
            {pct('t.token_accuracy')} as "token accuracy %", s.scheme
            from span_scores s left join span_tags t using (corpus, system)
            where s.corpus = {c} and s.type = 'ALL' order by natural_key(s.system)""")
    if task in SRL_TASKS:
        return srl_headline(root, corpus).to_frame()
    if task in COREF_TASKS:
        long = query(root, f"select system, metric, {pct('f1')} as f1 from coref_scores "
                           f"where corpus = {c}")
        order = [m for m in HEADLINE_METRICS if m in set(long["metric"])]
        wide = long.pivot("metric", index="system", values="f1").sort("system")
        return wide.select("system", *[pl.col(m).alias(f"{COREF_METRICS[m]} F1 %")
                                      for m in order])
    if task in UNL_TASKS:  # the options are in 'show unl'; a figure the task lacks is dropped
        rows = _unl_rows(root, c).to_frame().drop("options")
        return rows.select(col for col in rows.columns if rows[col].null_count() < rows.height)
    rows = query(root, f"""select system, view, punct, n_units, {pct('accuracy')} as acc
        from scores where corpus = {c}""")
    wide = pl.DataFrame({"system": sorted(set(rows["system"]))})
    views = [v for v in VIEW_ORDER if v in set(rows["view"])]
    columns = [(v, v not in DEP_VIEWS) for v in views]
    if "las" in views:
        columns.append(("las", True))
    for view, punct in columns:
        part = rows.filter((pl.col("view") == view) & (pl.col("punct") == punct))
        wide = wide.join(part.select("system", pl.col("acc").alias(
            f"{score_name(view, punct)} %")), on="system", how="left")
    if task == "dep":
        # NULL (shown as no data) when the key has no LAS data (no HEAD or DEPREL)
        las = query(root, f"select system, case when key_data then {pct('f1')} end as "
                          f"\"CoNLL18 LAS F1 %\" from conll18 where corpus = {c} and "
                          "metric = 'LAS'")
        if las.height:
            wide = wide.join(las, on="system", how="left")
    return wide


def _notes(lines: list[str]) -> None:
    """One ``sysdiff: note:`` line (stderr) per reason a figure shown is not evaluated."""
    if lines:
        from sysdiff.flows.progress import notice

        for line in lines:
            notice(f"not evaluated: {line}")


def show_table(root: Path, table: str, corpus: str | None, view: str | None, sys1: str | None,
               sys2: str | None, punct: bool | None, top: int, fmt: str,
               name: str | None = None) -> str:
    """Render one of SHOWABLE for a corpus and view (every option value checked)."""
    if table not in SHOWABLE:
        raise InputError(f"unknown table '{table}'; expected one of {', '.join(SHOWABLE)}")
    tasks = SHOWABLE[table][0]
    corpus = pick_corpus(root, corpus, tasks, f"show {table}")
    with p_resolution(*p_resolution_of(root, corpus)):
        return _show_corpus(root, table, corpus, view, sys1, sys2, punct, top, fmt, name)


def _show_corpus(root: Path, table: str, corpus: str, view: str | None, sys1: str | None,
                 sys2: str | None, punct: bool | None, top: int, fmt: str,
                 name: str | None) -> str:
    """:func:`show_table` for a corpus chosen."""
    task = corpus_task(root, corpus)
    view = check_view(root, corpus, task, view)
    if table == "history":
        return show_history(root, corpus, task, view, punct, name, fmt)
    if name is not None:
        raise InputError("--name applies to 'show history' (the NAME of NAME@VERSION systems)")
    check_systems(root, corpus, sys1, sys2)
    if sys1 is not None and sys1 == sys2:
        raise InputError(f"--sys1 and --sys2 are both '{sys1}'; a pair needs two systems")
    if task in SPAN_TASKS:
        if table != "span_pairs":  # its summary says it
            _notes(span_unevaluated(root, corpus, view))
        return _span_table(root, table, corpus, view, sys1, sys2, top, fmt)
    if task in SRL_TASKS:
        return _srl_table(root, table, corpus, view, sys1, sys2, top, fmt)
    if task not in TOKEN_TASKS:
        return _domain_table(root, table, corpus, view, sys1, sys2, top, fmt)
    punct = (view not in DEP_VIEWS) if punct is None else punct
    where = _where(corpus, view, punct)
    name = score_name(view, punct)
    pair = "".join(f" and {col} = {sql_literal(s)}" for col, s in (("sys1", sys1),
                                                                   ("sys2", sys2)) if s)
    if table not in ("conll18", "changes"):  # one line per reason a figure is NULL
        _notes(unevaluated(root, corpus, view, punct, (sys1, sys2)))
    if table == "changes":
        return _changes(root, corpus, view, punct, name, where, pair, sys1, sys2, top, fmt)
    if table == "labeldiff":
        return _labeldiff(root, corpus, where, name, sys1, sys2, top, fmt)
    if table == "labels":
        return _labels(root, where, corpus, name, fmt)
    if table == "gains":
        return _gains(root, where, corpus, name, fmt)
    sql = {
        "scores": f"select system, n_correct, n_units, {pct_ci('accuracy', name + ' %')}, "
                  f"n_sents_exact, n_sents, {pct('sent_exact')} as \"sentence exact %\" "
                  f"from scores where {where} order by accuracy desc, natural_key(system)",
        "pairs": f"select sys1, sys2, n_units, n_diff, {pct('diff')} as \"diff %\", "
                 f"corrections, new_errors, changed_errors, "
                 f"{delta_ci(f'delta {name} (points)', 'delta_acc')}, mcnemar_p, ar_p, "
                 f"bootstrap_p "
                 f"from pairs where {where}{pair} "
                 f"{'' if sys1 or sys2 else f'and {ONCE}'} order by diff desc, {BY_PAIR}",
        "oracles": f"select systems, n_systems, n_correct, n_units, "
                   f"{pct('accuracy')} as \"oracle {name} %\", "
                   f"{pct('gain')} as \"gain (points)\" "
                   f"from oracles where {where} order by n_systems, accuracy desc",
        "difficulty": f"select k_correct, n from difficulty where {where} and gold_label "
                      f"is null order by k_correct",
        "conll18": f"select system, 'CoNLL18 ' || metric as metric, "
                   f"{pct('precision')} as \"P %\", {pct('recall')} as \"R %\", "
                   f"{pct_ci('f1', 'F1 %')}, {pct('aligned_accuracy')} as \"AligndAcc %\" "
                   f"from conll18 where corpus = {sql_literal(corpus)} and key_data "
                   f"order by natural_key(system), list_position({CONLL18_ORDER}, metric)",
    }[table]
    if table == "conll18":
        _blank_metrics_note(root, corpus)
    title = f"{table}: {corpus}" + ("" if table == "conll18" else f", {name}")
    return to_text(query_rows(root, sql), fmt, title=title)
