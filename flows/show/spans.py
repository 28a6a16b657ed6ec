"""The tables of ner corpora (``--view`` is an entity type, ALL: every type), a pair's
span class transitions, and the span units behind a transition cell (examples)."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.queries import query_rows
from sysdiff.flows.render import p_is, points, to_text
from sysdiff.flows.rows import Rows
from sysdiff.flows.show.common import (
    BY_PAIR,
    ONCE,
    check_span_type,
    delta_ci,
    pair_summary,
    pct,
    pct_ci,
    span_unevaluated,
)
from sysdiff.schemas.errors import InputError

SPAN_LEGEND = ("Read 'a->b' as the unit's class under sys1 -> under sys2. Units: the key's "
               "spans (correct, type, boundary, missed) and the spurious spans of either "
               "system (spurious, or absent where a system does not predict it); correct and "
               "absent are right (METRICS 5.2).\n")


def _span_table(root: Path, table: str, corpus: str, view: str, sys1: str | None,
                sys2: str | None, top: int, fmt: str) -> str:
    """The ner tables; ``--view`` is an entity type (ALL: every type)."""
    c, t = sql_literal(corpus), sql_literal(view)
    [(scheme,)] = query_rows(root, f"select any_value(scheme) as s from span_scores "
                                   f"where corpus = {c}").rows
    how = f"scheme {scheme}" if scheme else "no scores"
    if table == "span_pairs" and sys1 and sys2:
        return _span_pair(root, corpus, view, sys1, sys2, top, fmt)
    pair = "".join(f" and {col} = {sql_literal(s)}" for col, s in (("sys1", sys1),
                                                                   ("sys2", sys2)) if s)
    typed = "" if view == "ALL" else f" and type = {t}"
    classes = ", ".join(f"count(*) filter (where cls = '{k}') as {k}"
                        for k in ("correct", "type", "boundary", "missed", "spurious"))
    sql = {
        "span_scores": f"select system, type, n_gold, n_pred, n_correct, "
                       f"{pct('precision')} as \"P %\", {pct('recall')} as \"R %\", "
                       f"{pct_ci('f1', 'F1 %')} from span_scores where corpus = {c}{typed} "
                       f"order by natural_key(system), type != 'ALL', type",
        "span_classes": f"select system, count(*) filter (where in_key) as key_spans, "
                        f"{classes} from span_classes where corpus = {c}{typed} "
                        f"group by system order by natural_key(system)",
        "span_pairs": f"select sys1, sys2, n_units, n_diff, {pct('diff')} as \"diff %\", "
                      f"corrections, new_errors, changed_errors, "
                      f"{delta_ci('delta F1 (points)', 'delta_f1')}, mcnemar_p, ar_p, "
                      f"bootstrap_p "
                      f"from span_pairs where corpus = {c}{pair}"
                      f"{'' if sys1 or sys2 else f' and {ONCE}'} order by diff desc, "
                      f"{BY_PAIR}",
        "span_oracles": f"select systems, n_systems, type, n_correct, n_gold, "
                        f"{pct('recall')} as \"oracle recall %\", "
                        f"{pct('gain')} as \"gain (points)\" from span_oracles "
                        f"where corpus = {c} and type = {t} order by n_systems, recall desc",
    }.get(table)
    if sql is None:
        raise InputError(f"table '{table}' does not apply to ner corpus '{corpus}'; expected "
                         "one of span_scores, span_classes, span_pairs, span_oracles, history")
    title = f"{table}: {corpus}, {how}" + ("" if view == "ALL" else f", type {view}")
    body = to_text(query_rows(root, sql), fmt, title=title)
    if table == "span_scores" and fmt in ("table", "markdown"):
        tags = query_rows(root, f"""select system, detected, n_tokens, n_tokens_correct,
            {pct('token_accuracy')} as "token accuracy %", n_spans, n_ill_formed
            from span_tags where corpus = {c}
            order by system = '__key__' desc, natural_key(system)""")
        body += to_text(tags, fmt, title="tags: scheme detected, token accuracy (conlleval), "
                                         "ill-formed spans")
    return body


def _span_pair(root: Path, corpus: str, view: str, sys1: str, sys2: str, top: int,
               fmt: str) -> str:
    """One pair over span units: the paper's summary and the top class transitions."""
    c = sql_literal(corpus)
    where = f"corpus = {c} and sys1 = {sql_literal(sys1)} and sys2 = {sql_literal(sys2)}"
    p = query_rows(root, f"select * from span_pairs where {where}")
    if p.is_empty():
        raise InputError(f"no span pair {sys1} -> {sys2} for corpus '{corpus}'")
    r = p.row(0, named=True)
    head = pair_summary(r["n_diff"], r["n_units"], r["corrections"], r["new_errors"],
                        r["changed_errors"])
    head += (f"Delta F1: {points(r['delta_f1'], r['delta_ci_low'], r['delta_ci_high'])}  "
             f"McNemar p {p_is(r['mcnemar_p'])}"
             f"  AR p (F1, by sentence) {p_is(r['ar_p'], randomization=True)}"
             f"  bootstrap p {p_is(r['bootstrap_p'], bootstrap=True)}\n"
             + "".join(f"Not evaluated: {line}\n" for line in span_unevaluated(root, corpus))
             + SPAN_LEGEND)
    rows = query_rows(root, f"""select c1 || '->' || c2 as change, count,
        case when c1 in ('correct', 'absent') and c2 not in ('correct', 'absent')
             then 'new_error' when c2 in ('correct', 'absent')
             and c1 not in ('correct', 'absent') then 'correction'
             else 'changed_error' end as class
        from span_transitions where {where} and type = {sql_literal(view)} and c1 != c2
        and count > 0 order by count desc, change limit {int(top)}""")
    body = to_text(rows, fmt, title=f"top {top} transitions"
                   + ("" if view == "ALL" else f" (type {view})"))
    return (head + body) if fmt in ("table", "markdown") else body


def span_examples(root: Path, corpus: str, sys1: str, sys2: str, cls: str, c1: str | None,
                  c2: str | None, span_type: str | None, limit: int) -> Rows:
    """The span units behind a transition cell of a ner pair: units whose class differs
    between sys1 and sys2 in change class ``cls`` (optionally: from class ``c1``, to ``c2``,
    of type ``span_type``), each with its sentence (the unit in brackets) and what each
    system predicted there (the span behind its class, 1-based token positions)."""
    from sysdiff.schemas.vocabulary import CLASSES, SPAN_CLASSES

    if cls not in CLASSES:
        raise InputError(f"unknown class '{cls}'; expected one of {', '.join(CLASSES)}")
    for option, value in (("--l1", c1), ("--l2", c2)):
        if value is not None and value not in SPAN_CLASSES:
            raise InputError(f"{option} '{value}' is not a span class; expected one of "
                             f"{', '.join(SPAN_CLASSES)}")
    if span_type is not None:
        check_span_type(root, corpus, span_type)
    filters = [f"change = {sql_literal(cls)}"]
    filters += [f"{col} = {sql_literal(v)}" for col, v in (("c1", c1), ("c2", c2),
                                                           ("type", span_type)) if v]
    return query_rows(root, span_units_sql(corpus, sys1, sys2, " and ".join(filters),
                                      None if limit < 0 else limit, None))


def span_units_sql(corpus: str, sys1: str, sys2: str, where: str, limit: int | None,
                   per_cell: int | None) -> str:
    """The one query behind span examples: the units of ``sys1 -> sys2`` whose class
    differs (columns ``change``, ``c1``, ``c2``, ``type`` filtered by ``where``), in corpus
    order; ``per_cell`` keeps the first units of each (c1, c2) cell. Each row: sent_id, the
    unit (type, text, in_key), c1, c2, what each system predicted (1-based key token
    positions; for a system placed on the key's characters, its own words), the bracketed
    key sentence (a unit with a boundary inside a key token brackets the key tokens it
    touches; one that runs on into the next sentence ends in ``…]``)."""
    c = sql_literal(corpus)
    ok = "('correct', 'absent')"
    side = f"""select x.sent, x.start, x."end", x.type, x.text, x.in_key, x.cls,
                x.pred_start, x.pred_end, x.pred_type, w.text as pred_words
            from span_classes x
            left join systems m on m.corpus = {c} and m.system = x.system
                 and m.alignment = 'characters'
            left join spans w on m.system is not null and w.corpus = {c}
                 and w.system = x.system and w.sent = x.sent and w.start = x.pred_start
                 and w."end" = x.pred_end and w.type = x.pred_type
            where x.corpus = {c} and x.system = """
    shown = ("case when {p}.cls is null then 'absent' when {p}.pred_type is null then {p}.cls "
             "when {p}.pred_words is not null then {p}.cls || ' (' || {p}.pred_type || ' ' "
             "|| chr(39) || {p}.pred_words || chr(39) || ')' "
             "else {p}.cls || ' (' || {p}.pred_type || ' ' || ({p}.pred_start + 1) || '-' "
             "|| ({p}.pred_end + 1) || ')' end")
    rank = ('row_number() over (partition by c1, c2 order by sent, start, "end", type)'
            if per_cell else "1")
    # a boundary inside a key token is -(1 + its character offset in the sentence's text)
    opens = ("((p.start >= 0 and t.id - 1 = p.start) or (p.start < 0 and t.cs <= -1 - p.start"
             " and -1 - p.start < t.ce))")
    closes = ('((p."end" >= 0 and t.id - 1 = p."end") or (p."end" < 0 and '
              't.cs <= -1 - p."end" and -1 - p."end" < t.ce))')
    runs_on = '(p."end" < 0 and t.id = t.n_tok and -1 - p."end" >= t.ce)'
    sql = f"""
        with a as ({side}{sql_literal(sys1)}), b as ({side}{sql_literal(sys2)}),
        u as (select sent, start, "end", type, coalesce(a.text, b.text) as text,
                     coalesce(a.in_key, b.in_key) as in_key,
                     coalesce(a.cls, 'absent') as c1, coalesce(b.cls, 'absent') as c2,
                     {shown.format(p='a')} as s1, {shown.format(p='b')} as s2
              from a full join b using (sent, start, "end", type)),
        d as (select *, case when c1 not in {ok} and c2 in {ok} then 'correction'
                             when c1 in {ok} and c2 not in {ok} then 'new_error'
                             else 'changed_error' end as change
              from u where c1 != c2),
        picked as (select *, {rank} as rank from d where {where or 'true'}
                   {f'qualify rank <= {int(per_cell)}' if per_cell else ''}
                   order by sent, start, "end", type
                   {'' if limit is None else f'limit {int(limit)}'}),
        k as (select sent, id, form,
                     length(nfc_normalize(regexp_replace(form, '\\p{{Zs}}', '', 'g'))) as n
              from span_tokens where corpus = {c} and system = '__key__'
                   and sent in (select sent from picked)),
        t as (select sent, id, form, sum(n) over w - n as cs, sum(n) over w as ce,
                     max(id) over (partition by sent) as n_tok
              from k window w as (partition by sent order by id))
        select s.sent_id, p.type, p.text as span, p.in_key, p.c1, p.c2,
               p.s1 as {_ident(sys1)}, p.s2 as {_ident(sys2)},
               string_agg(case when {opens} and {closes} then '[' || t.form || ']'
                               when {opens} and {runs_on} then '[' || t.form || ' …]'
                               when {opens} then '[' || t.form
                               when {closes} then t.form || ']'
                               when {runs_on} then t.form || ' …]' else t.form end,
                          ' ' order by t.id) as sentence
        from picked p
        join sents s on s.corpus = {c} and s.system = '__key__' and s.sent = p.sent
        join t on t.sent = p.sent
        group by p.sent, p.start, p."end", p.type, s.sent_id, p.text, p.in_key, p.c1, p.c2,
                 p.s1, p.s2
        order by p.sent, p.start, p."end", p.type"""
    return sql


def _ident(name: str) -> str:
    """A SQL identifier (double-quoted) for a column named after a system."""
    return '"' + name.replace('"', '""') + '"'
