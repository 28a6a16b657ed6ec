"""What every ``show`` table needs: the corpus, view and systems asked for, each checked
against what the warehouse holds (a wrong one is one line naming the valid choices),
rates as percents in SQL, and the paper's summary of a pair."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.names import COREF_TASKS, SPAN_TASKS, SRL_TASKS, UNL_TASKS
from sysdiff.flows.queries import query_rows
from sysdiff.flows.render import CI_HIGH, CI_LOW, NO_DATA
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import CRITERIA, SRL_UNITS, VIEWS, view_named

VIEW_ORDER = tuple(VIEWS)
#: SQL: each pair once (the first system in natural order first), and pairs in that order.
ONCE = "natural_key(sys1) < natural_key(sys2)"
BY_PAIR = "natural_key(sys1), natural_key(sys2)"


def corpora(root: Path) -> dict[str, str]:
    """corpus -> task, for every corpus in the warehouse."""
    rows = query_rows(root, "select corpus, any_value(task) as task from systems group by "
                            "corpus order by natural_key(corpus)")
    return dict(rows.rows)


def pick_corpus(root: Path, corpus: str | None, tasks: tuple[str, ...] | None = None,
                what: str = "") -> str:
    """The corpus asked for (checked), or else the only one that fits ``tasks``."""
    known = corpora(root)
    if corpus:
        if corpus not in known:
            raise InputError(f"no corpus '{corpus}' in the warehouse; it has: "
                             f"{', '.join(known) or 'none'}", root)
        if tasks and known[corpus] not in tasks:
            fits = [c for c, t in known.items() if t in tasks]
            raise InputError(f"corpus '{corpus}' is a {known[corpus]} corpus; {what} needs a "
                             f"{'/'.join(tasks)} corpus"
                             + (f" ({', '.join(fits)})" if fits else " (there is none)"), root)
        return corpus
    fits = [c for c, t in known.items() if tasks is None or t in tasks]
    if len(fits) == 1:
        return fits[0]
    if not fits:
        have = ", ".join(f"{c} ({t})" for c, t in known.items()) or "none"
        raise InputError(f"{what or 'this'} needs a {'/'.join(tasks or ())} corpus; the "
                         f"warehouse has: {have}", root)
    raise InputError(f"the warehouse has {len(fits)} corpora that fit ({', '.join(fits)}); "
                     "choose one with --corpus", root)


def corpus_task(root: Path, corpus: str) -> str:
    """The task a corpus was evaluated with."""
    return corpora(root).get(corpus, "dep")


def corpus_views(root: Path, corpus: str) -> list[str]:
    """The views scored for a token corpus, in the usual order."""
    got = set(query_rows(root, f"select distinct view from scores where corpus = "
                               f"{sql_literal(corpus)}").column("view"))
    return [v for v in VIEW_ORDER if v in got] + sorted(got - set(VIEW_ORDER))


def corpus_systems(root: Path, corpus: str) -> list[str]:
    """The systems (not the key) of a corpus, by name."""
    return query_rows(root, f"select distinct system from systems where corpus = "
                            f"{sql_literal(corpus)} and role = 'system' "
                            "order by natural_key(system)").column("system")


def check_view(root: Path, corpus: str, task: str, view: str | None) -> str | None:
    """The view (``--view``) checked against the corpus; its default when not given."""
    if task in UNL_TASKS:
        if view is not None:
            raise InputError(f"corpus '{corpus}' is a {task} corpus: it has no views; "
                             "--view applies to token corpora and coreference (any, nom)")
        return None
    if task in SPAN_TASKS:
        return check_span_type(root, corpus, view)
    if task in SRL_TASKS:
        return check_srl_view(root, corpus, view)
    if task in COREF_TASKS:
        view = (view or "nom").lower()
        if view not in CRITERIA:
            raise InputError(f"unknown view '{view}' for coreference corpus '{corpus}'; "
                             f"expected one of {', '.join(CRITERIA)} (the ARCS criterion)")
        return view
    views = corpus_views(root, corpus)
    if view is None:
        return "las" if "las" in views else (views[0] if views else "upos")
    name = view_named(view) or view
    if name not in views:
        raise InputError(f"unknown view '{view}' for corpus '{corpus}'; expected one of "
                         f"{', '.join(map(view_choice, views)) or 'none (no scores)'} (in any "
                         "case)")
    return name


def view_choice(name: str) -> str:
    """A view as the choices list it: its name, and its score's name when that differs
    (``head (UAS)``, ``deprel (LS)``)."""
    score = VIEWS[name].score if name in VIEWS else name
    return name if score.lower() == name else f"{name} ({score})"


def _one_of(text: str, choices: list[str]) -> str | None:
    """``text`` among ``choices``: as written, else the one choice equal to it in another
    case; None when none (or several) fit."""
    if text in choices:
        return text
    found = [c for c in choices if c.lower() == text.lower()]
    return found[0] if len(found) == 1 else None


def span_types(root: Path, corpus: str) -> list[str]:
    """``ALL`` and the span types scored in a ner corpus (key or predicted)."""
    got = query_rows(root, f"select distinct type from span_scores where corpus = "
                           f"{sql_literal(corpus)} and type != 'ALL' order by 1").column("type")
    return ["ALL", *got]


def check_span_type(root: Path, corpus: str, view: str | None) -> str:
    """``--view`` of a ner corpus: an entity type, or ALL (the default)."""
    if view is None:
        return "ALL"
    types = span_types(root, corpus)
    found = _one_of(view, types)
    if found is None:
        raise InputError(f"unknown type '{view}' for ner corpus '{corpus}'; expected one of "
                         f"{', '.join(types)}")
    return found


def srl_roles(root: Path, corpus: str) -> list[str]:
    """The argument roles scored in an srl corpus (key or predicted)."""
    return query_rows(root, f"""select distinct role from srl_scores where corpus =
        {sql_literal(corpus)} and mode in ('args_labeled', 'span') and role != 'ALL'
        order by 1""").column("role")


def check_srl_view(root: Path, corpus: str, view: str | None) -> str:
    """``--view`` of an srl corpus: argument (the default), predicate, or a role."""
    if view is None:
        return "argument"
    if view.lower() in SRL_UNITS:
        return view.lower()
    roles = srl_roles(root, corpus)
    found = _one_of(view, roles)
    if found is None:
        raise InputError(f"unknown view '{view}' for srl corpus '{corpus}'; expected "
                         f"argument, predicate or a role: {', '.join(roles) or 'none'}")
    return found


def check_systems(root: Path, corpus: str, *names: str | None) -> None:
    """Every system named (``--sys1``, ``--sys2``, ...) exists in the corpus."""
    known = corpus_systems(root, corpus)
    for name in names:
        if name is not None and name not in known:
            raise InputError(f"no system '{name}' in corpus '{corpus}'; expected one of "
                             f"{', '.join(known) or 'none'}")


def need_pair(root: Path, corpus: str, what: str) -> None:
    """Refuse a command that needs a pair and was not given one, naming the choices."""
    systems = corpus_systems(root, corpus)
    raise InputError(f"{what} needs --sys1 and --sys2: two of the systems of corpus "
                     f"'{corpus}': {', '.join(systems) or 'none'}")


def pct(expr: str, digits: int = 2) -> str:
    """SQL: a fraction as a percent (or a difference of fractions as points)."""
    return f"round(100 * ({expr}), {digits})"


def pct_ci(value: str, name: str, low: str = "ci_low", high: str = "ci_high") -> str:
    """SQL: a rate as the percent column ``name``, then its bootstrap interval's bounds as
    ``name ci_low`` and ``name ci_high`` (a table prints ``84.69 [83.90, 85.50]`` in one
    column, :func:`~sysdiff.flows.render.fold_intervals`; CSV, TSV and JSON keep three)."""
    return (f'{pct(value)} as "{name}", {pct(low)} as "{name}{CI_LOW}", '
            f'{pct(high)} as "{name}{CI_HIGH}"')


def delta_ci(name: str, value: str = "delta", low: str = "delta_ci_low",
             high: str = "delta_ci_high") -> str:
    """SQL: a delta in points with its bootstrap interval (as :func:`pct_ci`)."""
    return pct_ci(value, name, low, high)


def pair_summary(n_diff: int, n_units: int, corrections: int, new_errors: int,
                 changed: int) -> str:
    """The paper's two-line summary of a pair: difference, then the three classes (a
    difference without a unit is not evaluated: no number without data)."""
    def share(n: int, d: int) -> str:
        return f"{100 * n / d:.2f}%" if d else NO_DATA

    return (f"Difference: {share(n_diff, n_units)} ({n_diff}/{n_units})\n"
            f"Corrections: {share(corrections, n_diff)} ({corrections})  "
            f"New errors: {share(new_errors, n_diff)} ({new_errors})  "
            f"Changed errors: {share(changed, n_diff)} ({changed})\n")


# ------------------------------------------------------------------------------ no data


def unevaluated(root: Path, corpus: str, view: str, punct: bool,
                systems: tuple[str | None, ...] = ()) -> list[str]:
    """Why the figures of a token view (one punctuation setting) are not evaluated, one line
    each: the view has no evaluable unit, or a system (of ``systems``; every system when
    none is named) lacks the view's column (``missing``). Empty when everything has data."""
    from sysdiff.schemas.vocabulary import DEP_VIEWS, score_name

    name = score_name(view, punct)
    rows = query_rows(root, f"select system, n_units, missing from scores where corpus = "
                            f"{sql_literal(corpus)} and view = {sql_literal(view)} and "
                            f"punct = {str(punct).lower()} order by natural_key(system)")
    if rows.is_empty():
        return []
    if not any(rows.column("n_units")):
        why = " (every word of the key is punctuation)" if view in DEP_VIEWS and not punct \
            else ""
        return [f"{name}: corpus '{corpus}' has no evaluable unit{why}"]
    named = {s for s in systems if s}
    gone = [s for s, _n, m in rows.rows if m and (not named or s in named)]
    if not gone:
        return []
    columns = "/".join(c.upper() for c in VIEWS[view].columns)
    return [f"{name} of {', '.join(gone)}: no {columns} column (all '_')"]


def span_unevaluated(root: Path, corpus: str, span_type: str = "ALL") -> list[str]:
    """Why the span scores of a ner corpus (one type, or ``ALL``) are not evaluated: the
    key has no entity (of that type). Empty when it has."""
    n = query_rows(root, f"select coalesce(max(n_gold), 0) from span_scores where corpus = "
                         f"{sql_literal(corpus)} and type = {sql_literal(span_type)}"
                   ).rows[0][0]
    if n:
        return []
    which = "entity" if span_type == "ALL" else f"entity of type {span_type}"
    return [f"span recall and F1: the key of corpus '{corpus}' has no {which}"]
