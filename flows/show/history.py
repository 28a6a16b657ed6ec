"""``show history``: the versions of one NAME of NAME@VERSION systems, in order, with the
step from the previous version and from the best before it."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.names import COREF_TASKS, SPAN_TASKS, SRL_TASKS, TOKEN_TASKS
from sysdiff.flows.queries import query_rows
from sysdiff.flows.render import to_text
from sysdiff.flows.show.common import delta_ci, pct, pct_ci
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import DEP_VIEWS, score_name


def history_names(root: Path, corpus: str) -> list[str]:
    """The NAMEs of the corpus' NAME@VERSION histories."""
    return query_rows(root, f"select distinct name from history where corpus = "
                            f"{sql_literal(corpus)} order by natural_key(name)").column("name")


def pick_history(root: Path, corpus: str, name: str | None) -> str:
    """``--name`` checked against the corpus' histories, or the only one."""
    names = history_names(root, corpus)
    if not names:
        raise InputError(f"corpus '{corpus}' has no version history: no system is named "
                         "NAME@VERSION")
    if name is None and len(names) == 1:
        return names[0]
    if name not in names:
        given = "no --name given" if name is None else f"no history '{name}'"
        raise InputError(f"{given} in corpus '{corpus}'; expected one of {', '.join(names)}")
    return name


def show_history(root: Path, corpus: str, task: str, view: str | None, punct: bool | None,
                 name: str | None, fmt: str) -> str:
    """The versions of one NAME in order: score, the step from the previous version and
    from the best before it, McNemar's p; a significant step (p < 0.05) is marked."""
    name = pick_history(root, corpus, name)
    if task in TOKEN_TASKS:
        punct = (view not in DEP_VIEWS) if punct is None else punct
        score, which = score_name(view, punct), f"view = {sql_literal(view)} and punct = {punct}"
    elif task in COREF_TASKS:
        score, which = f"ARCS F1 ({view})", f"view = {sql_literal(view)}"
    elif task in SPAN_TASKS:
        score, which = "span F1 (micro)", "true"
    elif task in SRL_TASKS:
        unit = view if view in ("argument", "predicate") else "argument"
        score, which = f"{unit}s F1", f"view = {sql_literal(unit)}"
    else:
        score, which = "F1", "true"
    rows = query_rows(root, f"""
        select version, previous, {pct_ci('score', score + ' %')},
               {delta_ci('delta (points)')}, corrections, new_errors, changed_errors,
               mcnemar_p, bootstrap_p,
               case when mcnemar_p < 0.05 and delta > 0 then 'gain'
                    when mcnemar_p < 0.05 and delta < 0 then 'loss' else '' end
                 as "significant (p < 0.05)",
               best_version as "best before", {pct('delta_best')} as "vs best (points)",
               mcnemar_p_best as "p vs best"
        from history where corpus = {sql_literal(corpus)} and name = {sql_literal(name)}
          and {which} order by position""")
    return to_text(rows, fmt, title=f"{corpus}: history of {name} ({score})")
