"""Paper-style views of the warehouse tables (read-only; DuckDB over the Parquet files)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sysdiff.flows.queries import query
from sysdiff.flows.render import to_text
from sysdiff.flows.warehouse import sql_literal
from sysdiff.schemas.errors import InputError

SHOWABLE = ("scores", "pairs", "changes", "labels", "labeldiff", "oracles", "gains",
            "difficulty", "conll18", "coref", "arcs", "coref_pairs", "coref_oracles",
            "agreement", "unl")


def only_corpus(root: Path, corpus: str | None) -> str:
    """The corpus asked for, or the only one in the warehouse."""
    names = query(root, "select distinct corpus from systems order by 1")["corpus"].to_list()
    if corpus:
        if corpus not in names:
            raise InputError(f"no corpus '{corpus}' in the warehouse; it has: "
                             f"{', '.join(names) or 'none'}", root)
        return corpus
    if len(names) != 1:
        raise InputError(f"the warehouse has {len(names)} corpora ({', '.join(names)}); "
                         "choose one with --corpus", root)
    return names[0]


def corpus_task(root: Path, corpus: str) -> str:
    """The task a corpus was evaluated with."""
    rows = query(root, f"select task from systems where corpus = {sql_literal(corpus)} limit 1")
    return rows["task"][0] if rows.height else "dep"


def headline(root: Path, corpus: str) -> pl.DataFrame:
    """The headline figures of a corpus: accuracies, coreference F1s or UNL P/R/F."""
    task = corpus_task(root, corpus)
    if task == "coref":
        return query(root, f"""pivot (select system, metric, round(100 * f1, 2) as f1
                                      from coref_scores where corpus = {sql_literal(corpus)})
                               on metric using first(f1) order by system""")
    if task in ("unl", "nl"):
        return query(root, f"select * exclude (corpus) from unl_scores "
                           f"where corpus = {sql_literal(corpus)} order by system")
    return query(root, f"""
        select system, view, punct, n_correct, n_units, round(100 * accuracy, 2) as acc,
               round(100 * sent_exact, 2) as sent_exact
        from scores where corpus = {sql_literal(corpus)}
          and ((view in ('head', 'deprel', 'las') and not punct)
               or view not in ('head', 'deprel', 'las'))
        order by view, system""")


def _where(corpus: str, view: str | None, punct: bool | None) -> str:
    parts = [f"corpus = {sql_literal(corpus)}"]
    if view:
        parts.append(f"view = {sql_literal(view)}")
        default = view not in ("head", "deprel", "las")
        parts.append(f"punct = {str(default if punct is None else punct).lower()}")
    return " and ".join(parts)


def show_table(root: Path, table: str, corpus: str | None, view: str, sys1: str | None,
               sys2: str | None, punct: bool | None, top: int, fmt: str) -> str:
    """Render one of SHOWABLE for a corpus and view."""
    if table not in SHOWABLE:
        raise InputError(f"unknown table '{table}'; expected one of {', '.join(SHOWABLE)}")
    corpus = only_corpus(root, corpus)
    where = _where(corpus, view, punct)
    pair = ""
    if sys1:
        pair += f" and sys1 = {sql_literal(sys1)}"
    if sys2:
        pair += f" and sys2 = {sql_literal(sys2)}"
    if table == "changes":
        return _changes(root, where, pair, sys1, sys2, top, fmt)
    if table == "labeldiff":
        return _labeldiff(root, where, sys1, sys2, top, fmt)
    if table in ("coref", "arcs", "coref_pairs", "coref_oracles", "agreement", "unl"):
        return _domain_table(root, table, corpus, view, sys1, sys2, top, fmt)
    sql = {
        "scores": f"select system, n_correct, n_units, accuracy, n_sents_exact, n_sents, "
                  f"sent_exact from scores where {where} order by accuracy desc",
        "pairs": f"select sys1, sys2, n_units, n_diff, diff, corrections, new_errors, "
                 f"changed_errors, delta_acc, mcnemar_p, ar_p from pairs where {where}{pair} "
                 f"and sys1 < sys2 order by diff desc",
        "labels": f"select gold_label, any_value(n) as n, "
                  f"list(system || '=' || round(100 * accuracy, 2)::varchar order by system) "
                  f"as accuracy from labels where {where} group by gold_label order by n desc",
        "oracles": f"select systems, n_systems, n_correct, n_units, accuracy, gain "
                   f"from oracles where {where} order by n_systems, accuracy desc",
        "gains": f"""with o as (select * from oracles where {where}),
                     full_set as (select * from o where n_systems = (select max(n_systems)
                                                                       from o))
                 select s.system, f.accuracy as oracle_all, o.accuracy as oracle_without,
                        f.accuracy - o.accuracy as marginal_gain
                 from full_set f, unnest(f.systems) as s(system)
                 join o on o.n_systems = f.n_systems - 1
                       and not list_contains(o.systems, s.system)
                 order by marginal_gain desc""",
        "difficulty": f"select k_correct, n from difficulty where {where} and gold_label "
                      f"is null order by k_correct",
        "conll18": f"select system, metric, round(100*precision, 2) as precision, "
                   f"round(100*recall, 2) as recall, round(100*f1, 2) as f1 from conll18 "
                   f"where corpus = {sql_literal(corpus)} order by system",
    }[table]
    return to_text(query(root, sql), fmt, title=f"{table}: {corpus} {view}")


def _criterion(view: str) -> str:
    return view if view in ("any", "nom") else "nom"


def _domain_table(root: Path, table: str, corpus: str, view: str, sys1: str | None,
                  sys2: str | None, top: int, fmt: str) -> str:
    """Coreference and UNL tables; for coreference ``--view`` is the criterion (any|nom)."""
    c, crit = sql_literal(corpus), sql_literal(_criterion(view))
    if table == "coref_pairs" and sys1 and sys2:
        return _coref_pair(root, corpus, _criterion(view), sys1, sys2, top, fmt)
    sql = {
        "coref": f"select system, metric, round(100 * recall, 2) as recall, "
                 f"round(100 * precision, 2) as precision, round(100 * f1, 2) as f1 "
                 f"from coref_scores where corpus = {c} order by system, metric",
        "arcs": f"select system, mtype, tp, fp, fn, wl, tn, round(100 * precision, 2) as p, "
                f"round(100 * recall, 2) as r, round(100 * f1, 2) as f1 from arcs_scores "
                f"where corpus = {c} and criterion = {crit} order by system, mtype",
        "coref_pairs": f"select sys1, sys2, n_mentions, n_diff, round(100 * diff, 2) as diff, "
                       f"corrections, new_errors, changed_errors from coref_pairs "
                       f"where corpus = {c} and criterion = {crit} and sys1 < sys2",
        "coref_oracles": f"select systems, mtype, n, n_tp, round(100.0 * n_tp / n, 2) as "
                         f"recall from coref_oracles where corpus = {c} and criterion = {crit} "
                         f"and n > 0 order by len(systems), mtype",
        "agreement": f"select sys1 as as_key, sys2, metric, round(100 * f1, 2) as f1 from "
                     f"coref_agreement where corpus = {c} and metric = 'conll' "
                     f"order by sys1, sys2",
        "unl": f"select * exclude (corpus) from unl_scores where corpus = {c}",
    }[table]
    return to_text(query(root, sql), fmt, title=f"{table}: {corpus}")


def _coref_pair(root: Path, corpus: str, criterion: str, sys1: str, sys2: str, top: int,
                fmt: str) -> str:
    """The paper's mention-level comparison of two responses, with the top transitions."""
    where = (f"corpus = {sql_literal(corpus)} and criterion = {sql_literal(criterion)} "
             f"and sys1 = {sql_literal(sys1)} and sys2 = {sql_literal(sys2)}")
    p = query(root, f"select * from coref_pairs where {where}")
    if p.is_empty():
        raise InputError(f"no coreference pair {sys1} -> {sys2} for corpus '{corpus}'")
    r = p.row(0, named=True)
    head = pair_summary(r["n_diff"], r["n_mentions"], r["corrections"], r["new_errors"],
                        r["changed_errors"])
    rows = query(root, f"""select lower(c1) || '->' || lower(c2) as change, sum(count) as count
        from coref_transitions where {where} and c1 != c2 and mtype = 'ALL'
        and word is null group by all
        order by count desc limit {int(top)}""")
    body = to_text(rows, fmt, title=f"top {top} transitions ({criterion})")
    return (head + body) if fmt in ("table", "markdown") else body


def pair_summary(n_diff: int, n_units: int, corrections: int, new_errors: int,
                 changed: int) -> str:
    """The paper's two-line summary of a pair: difference, then the three classes."""
    d = max(n_diff, 1)
    return (f"Difference: {100 * n_diff / max(n_units, 1):.2f}% ({n_diff}/{n_units})\n"
            f"Corrections: {100 * corrections / d:.2f}% ({corrections})  "
            f"New errors: {100 * new_errors / d:.2f}% ({new_errors})  "
            f"Changed errors: {100 * changed / d:.2f}% ({changed})\n")


def _labeldiff(root: Path, where: str, sys1: str | None, sys2: str | None, top: int,
               fmt: str) -> str:
    """The paper's appendix table: labels with the largest accuracy difference for a pair."""
    if not (sys1 and sys2):
        raise InputError("show labeldiff needs --sys1 and --sys2")
    rows = query(root, f"""
        select a.gold_label, a.n, round(100 * a.accuracy, 2) as acc1,
               round(100 * b.accuracy, 2) as acc2,
               round(100 * (b.accuracy - a.accuracy), 2) as delta
        from labels a join labels b using (corpus, view, punct, gold_label)
        where a.{where.replace(' and ', ' and a.')} and a.system = {sql_literal(sys1)}
          and b.system = {sql_literal(sys2)}
        order by abs(b.accuracy - a.accuracy) desc, a.n desc limit {int(top)}""")
    return to_text(rows, fmt, title=f"largest per-label differences: {sys1} -> {sys2}")


def _changes(root: Path, where: str, pair: str, sys1: str | None, sys2: str | None, top: int,
             fmt: str) -> str:
    if not (sys1 and sys2):
        raise InputError("show changes needs --sys1 and --sys2")
    p = query(root, f"select * from pairs where {where}{pair}")
    if p.is_empty():
        raise InputError(f"no pair {sys1} -> {sys2} for this corpus and view")
    r = p.row(0, named=True)
    head = (pair_summary(r["n_diff"], r["n_units"], r["corrections"], r["new_errors"],
                         r["changed_errors"]) +
            f"Delta accuracy: {100 * r['delta_acc']:+.2f}  McNemar p = {r['mcnemar_p']:.3g}  "
            f"AR p = {r['ar_p']:.3g}\n")
    rows = query(root, f"""
        with c as (select class, case when class = 'changed_error'
                          then gold || ' -> ' || l1 || ' -> ' || l2 else l1 || ' -> ' || l2 end
                          || case when attachment then ' (attachment)' else '' end as change,
                          sum(count) as count
                   from changes where {where}{pair} group by all)
        select class, change, count,
               round(100.0 * count / sum(count) over (partition by class), 2) as share
        from c qualify row_number() over (partition by class order by count desc, change)
                       <= {int(top)}
        order by class, count desc, change""")
    body = to_text(rows, fmt, title=f"top {top} changes per class")
    return (head + body) if fmt in ("table", "markdown") else body
