"""The tables of srl corpora (``--view`` argument (default), predicate, or a role: the
argument units of that role), a pair's summary with its class transitions and role->role
changes, and the units behind a change (examples): the sentence with the predicate and the
argument marked, both systems' roles."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.queries import query_rows
from sysdiff.flows.render import p_is, points, to_text
from sysdiff.flows.rows import Rows
from sysdiff.flows.show.common import BY_PAIR, ONCE, delta_ci, pair_summary, pct, pct_ci
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import CLASSES, SRL_UNITS

SRL_LEGEND = ("Read 'a->b' as the unit's class under sys1 -> under sys2. Argument units: the "
              "key's arguments (correct, role: another role at its place, boundary: its role "
              "elsewhere in its span / subtree, missed) and the spurious arguments of either "
              "system (spurious, or absent); predicate units: correct, sense, missed, "
              "spurious, absent; correct and absent are right (METRICS 6.2).\n")
OK = "('correct', 'absent')"
#: The headline figure of each mode: (srl_scores mode, what it is called).
OFFICIAL = {"head": ("semantic_labeled", "eval09 labelled (with senses)"),
            "span": ("span", "srl-eval Overall")}
SCORE_MODES = {
    "head": ("semantic_labeled", "semantic_unlabeled", "args_labeled", "args_unlabeled",
             "predicates_labeled", "predicates_unlabeled", "proposition",
             "exact_semantic_match"),
    "span": ("span", "span_unlabeled", "span_v", "perfect_props", "predicates")}


def srl_mode(root: Path, corpus: str) -> str:
    """``head`` or ``span``: how the corpus' arguments are given."""
    rows = query_rows(root, f"select any_value(options) as o from srl_scores where corpus = "
                            f"{sql_literal(corpus)}")
    options = rows.row(0)[0] if not rows.is_empty() else None
    return "span" if options and options.startswith("mode:span") else "head"


def unit_and_role(view: str) -> tuple[str, str | None]:
    """(unit type, role or None) of an srl ``--view``."""
    return (view, None) if view in SRL_UNITS else ("argument", view)


def srl_headline(root: Path, corpus: str) -> Rows:
    """One row per system, in percent: the official figure (P / R / F1), then (head mode)
    the arguments' and the predicate senses' F1 without pooling, or (span mode) the share
    of perfect propositions and the predicates' F1."""
    c = sql_literal(corpus)
    mode = srl_mode(root, corpus)
    official, name = OFFICIAL[mode]

    def of(column: str, m: str) -> str:
        return pct(f"max({column}) filter (where mode = '{m}')")

    if mode == "head":
        more = (f'{of("f1", "args_labeled")} as "arguments F1 %", '
                f'{of("f1", "predicates_labeled")} as "predicate senses F1 %"')
    else:
        more = (f'{of("recall", "perfect_props")} as "perfect props %", '
                f'{of("f1", "predicates")} as "predicates F1 %"')
    return query_rows(root, f"""
        select system, {of("precision", official)} as "P %", {of("recall", official)} as
          "R %", {of("f1", official)} as "{name} F1 %", {more}
        from srl_scores where corpus = {c} and role = 'ALL' and ppos is null
        group by system order by natural_key(system)""")


def _srl_table(root: Path, table: str, corpus: str, view: str, sys1: str | None,
               sys2: str | None, top: int, fmt: str) -> str:
    """The srl tables (see ``SHOWABLE``)."""
    c = sql_literal(corpus)
    unit, role = unit_and_role(view)
    mode = srl_mode(root, corpus)
    if table == "srl_pairs" and sys1 and sys2:
        return _srl_pair(root, corpus, unit, role, sys1, sys2, top, fmt)
    pair = "".join(f" and {col} = {sql_literal(s)}" for col, s in (("sys1", sys1),
                                                                   ("sys2", sys2)) if s)
    label = "ALL" if role is None else role
    prf = (f"{pct('precision')} as \"P %\", {pct('recall')} as \"R %\", "
           f"{pct_ci('f1', 'F1 %')}")
    modes = ", ".join(sql_literal(m) for m in SCORE_MODES[mode])
    if view == "predicate":
        which = ("mode in ('predicates_labeled', 'predicates_unlabeled', 'predicates') and "
                 "role = 'ALL'")
    elif role is not None:
        which = f"mode in ('args_labeled', 'span') and role = {sql_literal(role)}"
    else:
        which = (f"mode in ({modes}) and (role = 'ALL' or mode = 'span_v') and ppos is null")
    classes = ", ".join(f"count(*) filter (where cls = '{k}') as {k}" for k in (
        ("correct", "sense", "missed", "spurious") if unit == "predicate" else
        ("correct", "role", "boundary", "missed", "spurious")))
    role_filter = "" if role is None else f" and role = {sql_literal(role)}"
    sql = {
        "srl_scores": f"select system, mode, coalesce(ppos, '') as ppos, n_gold, n_pred, "
                      f"n_correct, {prf} from srl_scores where corpus = {c} and {which} "
                      f"order by natural_key(system), list_position([{modes}, "
                      f"'predicates_labeled', 'predicates_unlabeled'], mode), ppos nulls first",
        "srl_classes": f"select system, count(*) filter (where in_key) as key_units, "
                       f"{classes} from srl_classes where corpus = {c} and unit = "
                       f"{sql_literal(unit)}{role_filter} group by system "
                       f"order by natural_key(system)",
        "srl_pairs": f"select sys1, sys2, n_units, n_diff, {pct('diff')} as \"diff %\", "
                     f"corrections, new_errors, changed_errors, "
                     f"{delta_ci('delta F1 (points)', 'delta_f1')}, mcnemar_p, ar_p, "
                     f"bootstrap_p "
                     f"from srl_pairs where corpus = {c} and unit = {sql_literal(unit)}"
                     f"{pair}{'' if sys1 or sys2 else f' and {ONCE}'} "
                     f"order by diff desc, {BY_PAIR}",
        "srl_oracles": f"select systems, n_systems, n_correct, n_gold, "
                       f"{pct('recall')} as \"oracle recall %\", "
                       f"{pct('gain')} as \"gain (points)\" from srl_oracles where "
                       f"corpus = {c} and unit = {sql_literal(unit)} and label = "
                       f"{sql_literal(label)} order by n_systems, recall desc",
    }.get(table)
    if sql is None:
        raise InputError(f"table '{table}' does not apply to srl corpus '{corpus}'; expected "
                         "one of srl_scores, srl_classes, srl_pairs, srl_oracles, history")
    if table == "srl_pairs" and role is not None:
        raise InputError("show srl_pairs of every pair is over all argument units; give "
                         "--sys1 and --sys2 to see one pair's changes of a role")
    scorer = "eval09.pl, head words" if mode == "head" else "srl-eval.pl, spans"
    title = f"{table}: {corpus} ({scorer}), {view}"
    return to_text(query_rows(root, sql), fmt, title=title)


def _srl_pair(root: Path, corpus: str, unit: str, role: str | None, sys1: str, sys2: str,
              top: int, fmt: str) -> str:
    """One pair over one unit type: the paper's summary, the top class transitions and the
    top changes per class (role -> role for arguments)."""
    c = sql_literal(corpus)
    where = (f"corpus = {c} and unit = {sql_literal(unit)} and sys1 = {sql_literal(sys1)} "
             f"and sys2 = {sql_literal(sys2)}")
    p = query_rows(root, f"select * from srl_pairs where {where}")
    if p.is_empty():
        raise InputError(f"no srl pair {sys1} -> {sys2} for corpus '{corpus}'")
    r = p.row(0, named=True)
    label = "ALL" if role is None else role
    head = ""
    if role is None:
        head = pair_summary(r["n_diff"], r["n_units"], r["corrections"], r["new_errors"],
                            r["changed_errors"])
        delta = points(r["delta_f1"], r["delta_ci_low"], r["delta_ci_high"])
        head += (f"Delta F1: {delta}  McNemar p {p_is(r['mcnemar_p'])}  AR p "
                 f"(units right, by sentence) {p_is(r['ar_p'], randomization=True)}  "
                 f"bootstrap p {p_is(r['bootstrap_p'], bootstrap=True)}\n" + SRL_LEGEND)
    trans = query_rows(root, f"""select c1 || '->' || c2 as change, count,
        case when c1 in {OK} and c2 not in {OK} then 'new_error'
             when c2 in {OK} and c1 not in {OK} then 'correction'
             else 'changed_error' end as class
        from srl_transitions where {where} and label = {sql_literal(label)} and c1 != c2
        order by count desc, change limit {int(top)}""")
    role_where = "" if role is None else f" and (gold = {sql_literal(role)} or (gold is null " \
        f"and (l1 = {sql_literal(role)} or l2 = {sql_literal(role)})))"
    changes = query_rows(root, f"""select class, coalesce(gold, '—') as gold, l1, l2, count
        from srl_changes where {where}{role_where}
        qualify row_number() over (partition by class order by count desc, gold, l1, l2)
                <= {int(top)}
        order by list_position(['correction', 'new_error', 'changed_error'], class),
                 count desc, gold, l1, l2""")
    what = "role -> role" if unit == "argument" else "class by PPOS"
    body = to_text(trans, fmt, title=f"top {top} transitions ({unit}s"
                   + ("" if role is None else f", role {role}") + ")")
    body += to_text(changes, fmt, title=f"top {top} changes per class ({what})")
    return (head + body) if fmt in ("table", "markdown") else body


# ------------------------------------------------------------------------------ examples


def _value(p: str, unit: str) -> str:
    """SQL: the label a system gives a unit (as in ``srl_changes``); null row = absent."""
    if unit == "predicate":
        return f"coalesce({p}.cls, 'absent')"
    return (f"case when {p}.cls is null then '<absent>' when {p}.cls = 'role' then "
            f"{p}.sys_role when {p}.cls = 'boundary' then '<boundary>' when {p}.cls = "
            f"'missed' then '<missed>' else {p}.role end")


def _same(unit: str) -> str:
    """SQL: the two systems give the unit the same value (a wrong sense: the same one)."""
    if unit == "predicate":
        return "(c1 = c2 and coalesce(r1, '') = coalesce(r2, ''))"
    return "(l1 = l2)"


def _shown(p: str, unit: str) -> str:
    """SQL: what a system has at a unit, for people (``role (ARG1)``, ``boundary (ARG1
    'books')``, ``absent``)."""
    words = (f"(select string_agg(w.form, ' ' order by w.id) from kw w where w.sent = "
             f"{p}.sent and w.id between {p}.sys_start and {p}.sys_end)")
    if unit == "predicate":
        return (f"case when {p}.cls is null then 'absent' when {p}.cls = 'missed' then "
                f"'missed' else {p}.cls || ' (' || coalesce({p}.sys_role, {p}.role) || ')' end")
    return (f"case when {p}.cls is null then 'absent' when {p}.cls = 'missed' then 'missed' "
            f"when {p}.cls = 'boundary' then 'boundary (' || {p}.sys_role || ' ' || chr(39) "
            f"|| {words} || chr(39) || ')' when {p}.cls = 'spurious' then 'spurious (' || "
            f"{p}.role || ')' else {p}.cls || ' (' || {p}.sys_role || ')' end")


def srl_units_sql(corpus: str, sys1: str, sys2: str, unit: str, where: str,
                  limit: int | None, per_cell: int | None) -> str:
    """The one query behind srl examples: the units of ``sys1 -> sys2`` (one unit type)
    whose value differs, filtered by ``where`` (columns ``change``, ``c1``, ``c2``, ``l1``,
    ``l2``, ``gold``, ``role``), in corpus order; ``per_cell`` keeps the first units of each
    (c1, c2) cell. Each row: sent_id, the predicate (its word and roleset), the unit (role
    and words), gold, both systems' classes and what they have there, and the sentence with
    the predicate in braces and the argument in brackets."""
    c = sql_literal(corpus)
    side = (f"select *, coalesce(pieces, '') as pk from srl_classes where corpus = {c} and "
            f"unit = {sql_literal(unit)} and system = ")
    keys = ["sent", "pred", "start", "\"end\"", "pk", "role"]
    on = " and ".join(f"a.{k} = b.{k}" for k in keys)
    pick = ", ".join(f"coalesce(a.{k}, b.{k}) as {k}" for k in keys)
    gold = ("case when u.in_key then u.role end" if unit == "argument"
            else "coalesce(kp.pos, '_')")
    rank = ('row_number() over (partition by c1, c2 order by sent, pred, start, "end", role)'
            if per_cell else "1")
    sql = f"""
        with kw as (select sent, id, form, pos from srl_tokens where corpus = {c}
                    and system = '__key__'),
        a as ({side}{sql_literal(sys1)}), b as ({side}{sql_literal(sys2)}),
        u as (select {pick}, coalesce(a.in_key, b.in_key) as in_key,
                     coalesce(a.cls, 'absent') as c1, coalesce(b.cls, 'absent') as c2,
                     {_value('a', unit)} as l1, {_value('b', unit)} as l2,
                     a.sys_role as r1, b.sys_role as r2,
                     {_shown('a', unit)} as s1, {_shown('b', unit)} as s2
              from a full join b on {on}),
        d as (select u.*, kp.pos, {gold} as gold,
                     case when c1 not in {OK} and c2 in {OK} then 'correction'
                          when c1 in {OK} and c2 not in {OK} then 'new_error'
                          else 'changed_error' end as change
              from u left join kw kp on kp.sent = u.sent and kp.id = u.pred
              where not {_same(unit)}),
        picked as (select *, {rank} as rank from d where {where or 'true'}
                   {f'qualify rank <= {int(per_cell)}' if per_cell else ''}
                   order by sent, pred, start, "end", role
                   {'' if limit is None else f'limit {int(limit)}'}),
        roles as (select sent, pred, any_value(roleset) as roleset from srl_predicates
                  where corpus = {c} and sent in (select sent from picked)
                  group by sent, pred)
        select s.sent_id, w.form || coalesce(' ' || r.roleset, '') as predicate,
               p.role as unit, (select string_agg(x.form, ' ' order by x.id) from kw x
                  where x.sent = p.sent and x.id between p.start and p."end") as words,
               p.gold, p.c1, p.c2, p.s1 as {_ident(sys1)}, p.s2 as {_ident(sys2)},
               (select string_agg(case
                    when x.id = p.start and x.id = p."end" and {_arg(unit)} then
                         '[' || {_pred_mark('x', 'p')} || ']'
                    when x.id = p.start and {_arg(unit)} then '[' || {_pred_mark('x', 'p')}
                    when x.id = p."end" and {_arg(unit)} then {_pred_mark('x', 'p')} || ']'
                    else {_pred_mark('x', 'p')} end, ' ' order by x.id)
                from kw x where x.sent = p.sent) as sentence
        from picked p
        join sents s on s.corpus = {c} and s.system = '__key__' and s.sent = p.sent
        join kw w on w.sent = p.sent and w.id = p.pred
        left join roles r on r.sent = p.sent and r.pred = p.pred
        order by p.sent, p.pred, p.start, p."end", p.role"""
    return sql


def _arg(unit: str) -> str:
    return "true" if unit == "argument" else "false"


def _pred_mark(x: str, p: str) -> str:
    """SQL: a word, in braces when it is the unit's predicate."""
    return f"case when {x}.id = {p}.pred then '{{' || {x}.form || '}}' else {x}.form end"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def srl_examples(root: Path, corpus: str, sys1: str, sys2: str, cls: str, view: str,
                 l1: str | None, l2: str | None, gold: str | None, limit: int) -> Rows:
    """The units behind a change of an srl pair: class ``cls`` (optionally: sys1's label
    ``l1``, sys2's ``l2``: roles, ``<boundary>``, ``<missed>``, ``<absent>``, or predicate
    classes; the gold role (predicates: PPOS) ``gold``), of the unit type or role
    ``view``."""
    if cls not in CLASSES:
        raise InputError(f"unknown class '{cls}'; expected one of {', '.join(CLASSES)}")
    unit, role = unit_and_role(view)
    filters = [f"change = {sql_literal(cls)}"]
    filters += [f"{col} = {sql_literal(v)}" for col, v in (("l1", l1), ("l2", l2),
                                                           ("gold", gold), ("role", role))
                if v is not None]
    _check_labels(root, corpus, sys1, sys2, unit, {"l1": l1, "l2": l2, "gold": gold})
    return query_rows(root, srl_units_sql(corpus, sys1, sys2, unit, " and ".join(filters),
                                          None if limit < 0 else limit, None))


def _check_labels(root: Path, corpus: str, sys1: str, sys2: str, unit: str,
                  asked: dict[str, str | None]) -> None:
    """Each label asked for occurs in that column of the pair's change table."""
    where = (f"corpus = {sql_literal(corpus)} and unit = {sql_literal(unit)} and sys1 = "
             f"{sql_literal(sys1)} and sys2 = {sql_literal(sys2)}")
    for col, value in asked.items():
        if value is None:
            continue
        labels = [v for v in query_rows(root, f"select distinct {col} as v from srl_changes "
                                              f"where {where} order by 1").column("v") if v]
        if value not in labels:
            raise InputError(f"no label '{value}' for --{col} in the {unit} changes of "
                             f"{sys1} -> {sys2}; expected one of {', '.join(labels) or 'none'}")
