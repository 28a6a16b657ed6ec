"""The tables of coreference corpora (and the UNL table): ``--view`` is the ARCS
criterion (any|nom); a pair shows its top mention class transitions."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.queries import query_rows
from sysdiff.flows.render import p_value, points, to_text
from sysdiff.flows.show.common import BY_PAIR, ONCE, delta_ci, pair_summary, pct, pct_ci
from sysdiff.flows.show.unl import _unl_rows
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import COREF_METRICS, CRITERIA


def metric_names(column: str) -> str:
    """SQL: a coreference metric's code (``bcub``) as people read it (``B3``)."""
    whens = " ".join(f"when {sql_literal(code)} then {sql_literal(name)}"
                     for code, name in COREF_METRICS.items())
    return f"case {column} {whens} else {column} end"


def metric_order(column: str) -> str:
    """SQL: the metrics in the usual order (MUC, B3, CEAF-m, CEAF-e, BLANC, LEA, CoNLL)."""
    codes = ", ".join(sql_literal(code) for code in COREF_METRICS)
    return f"list_position([{codes}], {column})"


def _criterion(view: str | None) -> str:
    return view if view in CRITERIA else "nom"


def _domain_table(root: Path, table: str, corpus: str, view: str | None, sys1: str | None,
                  sys2: str | None, top: int, fmt: str) -> str:
    """Coreference and UNL tables; for coreference ``--view`` is the criterion (any|nom)."""
    c, crit = sql_literal(corpus), sql_literal(_criterion(view))
    if table == "coref_pairs" and sys1 and sys2:
        return _coref_pair(root, corpus, _criterion(view), sys1, sys2, top, fmt)
    if table == "unl":
        return to_text(_unl_rows(root, c), fmt, title=f"unl: {corpus}")
    pair = "".join(f" and {col} = {sql_literal(s)}" for col, s in (("sys1", sys1),
                                                                   ("sys2", sys2)) if s)
    sql = {
        "coref": f"select system, {metric_names('metric')} as metric, "
                 f"{pct('recall')} as \"recall %\", {pct('precision')} as \"precision %\", "
                 f"{pct_ci('f1', 'F1 %')} from coref_scores where corpus = {c} "
                 f"order by natural_key(system), {metric_order('metric')}, metric",
        "arcs": f"select system, mtype, tp, fp, fn, wl, tn, {pct('precision')} as \"P %\", "
                f"{pct('recall')} as \"R %\", {pct_ci('f1', 'F1 %')} from arcs_scores "
                f"where corpus = {c} and criterion = {crit} order by natural_key(system), mtype",
        "coref_pairs": f"select sys1, sys2, n_mentions, n_diff, {pct('diff')} as \"diff %\", "
                       f"corrections, new_errors, changed_errors, "
                       f"{delta_ci('delta ARCS F1 (points)', 'delta_f1')}, mcnemar_p, "
                       f"bootstrap_p from coref_pairs "
                       f"where corpus = {c} and criterion = {crit}{pair}"
                       f"{'' if sys1 or sys2 else f' and {ONCE}'} order by {BY_PAIR}",
        "coref_oracles": f"select systems, mtype, n, n_tp, {pct('n_tp / n')} as "
                         f"\"ARCS recall %\" from coref_oracles where corpus = {c} and "
                         f"criterion = {crit} and n > 0 order by len(systems), mtype",
        "agreement": f"select sys1 as as_key, sys2, {pct('f1')} as \"CoNLL F1 %\" from "
                     f"coref_agreement where corpus = {c} and metric = 'conll' "
                     f"order by {BY_PAIR}",
    }[table]
    suffix = "" if table in ("coref", "agreement") else f", criterion {_criterion(view)}"
    return to_text(query_rows(root, sql), fmt, title=f"{table}: {corpus}{suffix}")


def _coref_pair(root: Path, corpus: str, criterion: str, sys1: str, sys2: str, top: int,
                fmt: str) -> str:
    """The paper's mention-level comparison of two responses, with the top transitions."""
    where = (f"corpus = {sql_literal(corpus)} and criterion = {sql_literal(criterion)} "
             f"and sys1 = {sql_literal(sys1)} and sys2 = {sql_literal(sys2)}")
    p = query_rows(root, f"select * from coref_pairs where {where}")
    if p.is_empty():
        raise InputError(f"no coreference pair {sys1} -> {sys2} for corpus '{corpus}'")
    r = p.row(0, named=True)
    head = pair_summary(r["n_diff"], r["n_mentions"], r["corrections"], r["new_errors"],
                        r["changed_errors"])
    head += (f"Delta ARCS F1: {points(r['delta_f1'], r['delta_ci_low'], r['delta_ci_high'])} "
             f"({criterion})  McNemar p = {p_value(r['mcnemar_p'])}  bootstrap p = "
             f"{p_value(r['bootstrap_p'], bootstrap=True)}\n")
    head += ("Read 'a->b' as the mention's ARCS class in sys1 -> in sys2 (tp, fp, fn, wl, "
             "tn; METRICS 2.3).\n")
    rows = query_rows(root, f"""select lower(c1) || '->' || lower(c2) as change, sum(count) as count
        from coref_transitions where {where} and c1 != c2 and mtype = 'ALL'
        and word is null group by all
        order by count desc, change limit {int(top)}""")
    body = to_text(rows, fmt, title=f"top {top} transitions ({criterion})")
    return (head + body) if fmt in ("table", "markdown") else body
