"""Regression gates for CI pipelines: compare a candidate with a baseline (read-only).

Every task has the same two gates:

- ``--max-new-errors N``: token corpora count words the candidate gets wrong that the
  baseline got right (in ``--view``); coreference corpora count ARCS new errors (mentions,
  criterion ``--view any|nom``); UNL corpora count sentences the candidate newly fails.
- ``--min-delta X`` (points): token corpora compare accuracy (with ``--label``, the accuracy
  on one gold label); coreference corpora the CoNLL F1; UNL corpora the F-measure.

Span corpora (ner) count new errors over span units (key spans the candidate gets wrong that
the baseline got right, and spans it newly invents) and compare span F1; ``--view TYPE``
restricts both to one entity type. SRL corpora count new errors over argument units
(``--view predicate``: predicate units; ``--view ROLE``: the argument units of one role) and
compare the official arguments F1 (eval09.pl without senses, or srl-eval.pl's Overall; the
predicates' F1, or one role's).

``--require-significant``: the bootstrap interval (METRICS 1.6b) of the pair's delta must
exclude 0: accuracy (token corpora, ``--view``), ARCS F1 (coreference, criterion
``--view``), span F1 (all types), arguments or predicates F1 (srl), F-measure (UNL).

No gate passes without data: when the figure gated is not evaluated (a view without an
evaluable unit, a system that lacks the view's column, a key without entities, a NULL score,
delta or interval), every gate asked for fails with a one-line reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.names import COREF_TASKS, SPAN_TASKS, SRL_TASKS, UNL_TASKS
from sysdiff.flows.queries import query_rows
from sysdiff.flows.render import p_is, p_resolution, p_value
from sysdiff.flows.run_record import p_resolution_of
from sysdiff.flows.show.common import (
    check_systems,
    check_view,
    corpora,
    corpus_systems,
    span_unevaluated,
    unevaluated,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import DEP_VIEWS, score_name


@dataclass(frozen=True)
class Gate:
    """One checked condition and its outcome."""

    name: str
    passed: bool
    value: float | None  # None: not evaluated (the gate fails)
    limit: float
    reason: str


def pick_pair_corpus(root: Path, corpus: str | None, baseline: str, candidate: str) -> str:
    """``--corpus``, or else the only corpus holding both systems."""
    known = corpora(root)
    if corpus:
        if corpus not in known:
            raise InputError(f"no corpus '{corpus}' in the warehouse; it has: "
                             f"{', '.join(known) or 'none'}", root)
        return corpus
    fits = [c for c in known if {baseline, candidate} <= set(corpus_systems(root, c))]
    if len(fits) == 1:
        return fits[0]
    if not fits:
        if len(known) == 1:
            return next(iter(known))  # names are checked next, with the valid choices
        raise InputError(f"no corpus holds both '{baseline}' and '{candidate}'; the warehouse "
                         f"has: {', '.join(known) or 'none'} (choose one with --corpus)", root)
    raise InputError(f"corpora {', '.join(fits)} all hold '{baseline}' and '{candidate}'; "
                     "choose one with --corpus", root)


def need_candidate(root: Path, corpus: str | None) -> None:
    """Refuse ``check`` without ``--candidate``, naming the systems it can be."""
    known = corpora(root)
    if corpus and corpus not in known:
        pick_pair_corpus(root, corpus, "", "")  # says which corpora there are
    names = [corpus] if corpus else list(known)
    choices = "; ".join(f"{c}: {', '.join(corpus_systems(root, c)) or 'none'}" for c in names)
    raise InputError(f"check needs --candidate, the system under test (and --baseline, or a "
                     f"NAME@VERSION candidate gated against its previous version); systems: "
                     f"{choices or 'none (the warehouse is empty)'}")


def _pair(root: Path, table: str, where: str, a: str, b: str) -> dict:
    rows = query_rows(root, f"select * from {table} where {where} and sys1 = {sql_literal(a)} "
                       f"and sys2 = {sql_literal(b)}")
    if rows.is_empty():
        raise InputError(f"no comparison {a} -> {b} in {table}; run both systems on this "
                         "corpus first", root)
    return rows.row(0, named=True)


def _label_delta(root: Path, corpus: str, view: str, punct: bool, a: str, b: str,
                 label: str) -> tuple[float | None, int]:
    where = (f"corpus = {sql_literal(corpus)} and view = {sql_literal(view)} "
             f"and punct = {str(punct).lower()}")
    labels = query_rows(root, f"select distinct gold_label from labels where {where} "
                              "order by 1").column("gold_label")
    if label not in labels:
        raise InputError(f"no gold label '{label}' in view '{view}' of corpus '{corpus}'; "
                         f"expected one of {', '.join(labels) or 'none'}", root)
    rows = query_rows(root, f"""select system, accuracy, n from labels where {where}
        and gold_label = {sql_literal(label)} and system in ({sql_literal(a)}, {sql_literal(b)})""")
    acc = dict(zip(rows.column("system"), rows.column("accuracy"), strict=True))
    delta = None if acc[a] is None or acc[b] is None else acc[b] - acc[a]
    return delta, int(rows.column("n")[0])


def _score(root: Path, sql: str, system: str) -> float | None:
    """The score of ``system`` (None: NULL, not evaluated)."""
    rows = query_rows(root, sql)
    if rows.is_empty():
        raise InputError(f"no score of '{system}' in this corpus", root)
    value = rows.row(0)[0]
    return None if value is None else float(value)


def previous_version(root: Path, corpus: str | None, candidate: str) -> tuple[str, str]:
    """(corpus, the version before ``candidate`` = NAME@VERSION in its history)."""
    name, sep, version = candidate.partition("@")
    if not (sep and version):
        raise InputError(f"no --baseline given and '{candidate}' is not named NAME@VERSION; "
                         "give --baseline, or a versioned candidate to gate against its "
                         "previous version")
    corpus = pick_pair_corpus(root, corpus, candidate, candidate)
    rows = query_rows(root, f"select distinct previous from history where corpus = "
                       f"{sql_literal(corpus)} and name = {sql_literal(name)} and version = "
                       f"{sql_literal(version)}")
    if rows.is_empty():
        check_systems(root, corpus, candidate)
        raise InputError(f"no history of '{name}' in corpus '{corpus}' holds version "
                         f"'{version}'", root)
    previous = rows.column("previous")[0]
    if previous is None:
        raise InputError(f"'{candidate}' is the first version of '{name}' in corpus "
                         f"'{corpus}'; there is no previous version to gate against", root)
    return corpus, f"{name}@{previous}"


def check(root: Path, corpus: str | None, baseline: str | None, candidate: str,
          view: str | None, punct: bool | None, max_new_errors: int | None,
          min_delta: float | None, label: str | None, require_significant: bool = False
          ) -> list[Gate]:
    """Evaluate the gates asked for; ``min_delta`` is in points (percent). Without a
    baseline, a NAME@VERSION candidate is gated against its previous version."""
    if max_new_errors is None and min_delta is None and not require_significant:
        raise InputError("no gate given; use --max-new-errors, --min-delta and/or "
                         "--require-significant")
    if baseline is None:
        corpus, baseline = previous_version(root, corpus, candidate)
    corpus = pick_pair_corpus(root, corpus, baseline, candidate)
    task = corpora(root)[corpus]
    check_systems(root, corpus, baseline, candidate)
    view = check_view(root, corpus, task, view)
    if task not in ("pos", "dep") and (label is not None or punct is not None):
        option = "--label" if label is not None else "--punct/--no-punct"
        raise InputError(f"{option} applies to token corpora; corpus '{corpus}' is a {task} "
                         "corpus (its gates: --max-new-errors, --min-delta)")
    c = sql_literal(corpus)
    blind: list[str] = []  # why the figures gated are not evaluated (then every gate fails)
    if task in COREF_TASKS:
        p = _pair(root, "coref_pairs", f"corpus = {c} and criterion = {sql_literal(view)}",
                  baseline, candidate)
        if not p["n_mentions"]:
            blind = [f"ARCS ({view}): corpus '{corpus}' has no mention to compare"]
        errors = f"new errors (ARCS mentions, criterion {view})"
        metric = "CoNLL F1"
        paired = f"ARCS F1 ({view})"
        sql = f"select f1 from coref_scores where corpus = {c} and metric = 'conll' and "
        sql += "system = {}"
    elif task in SPAN_TASKS:
        p = _pair(root, "span_pairs", f"corpus = {c}", baseline, candidate)
        if view != "ALL":
            p = dict(p, new_errors=_span_new_errors(root, c, view, baseline, candidate))
        blind = span_unevaluated(root, corpus, view)
        errors = "new errors (span units" + ("" if view == "ALL" else f", type {view}") + ")"
        metric = "span F1" + ("" if view == "ALL" else f" ({view})")
        paired = "span F1 (all types)"
        sql = f"select f1 from span_scores where corpus = {c} and type = {sql_literal(view)} "
        sql += "and system = {}"
    elif task in SRL_TASKS:
        p, errors, metric, sql = _srl_gate(root, corpus, view, baseline, candidate)
        paired = ("predicates" if view == "predicate" else "arguments") + " F1"
    elif task in UNL_TASKS:
        p = _pair(root, "unl_pairs", f"corpus = {c}", baseline, candidate)
        errors = "new errors (newly failed sentences)"
        metric = paired = "F-measure"
        sql = f"select f1 from unl_scores where corpus = {c} and "
        sql += "system = {}"
    else:
        punct = view not in DEP_VIEWS if punct is None else punct
        p = _pair(root, "pairs", f"corpus = {c} and view = {sql_literal(view)} and punct = "
                                 f"{str(punct).lower()}", baseline, candidate)
        errors = f"new errors ({score_name(view, punct)})"
        metric, sql = score_name(view, punct), None
        paired = metric
        blind = unevaluated(root, corpus, view, punct, (baseline, candidate))
    gates = []
    if max_new_errors is not None:
        n = p["new_errors"]
        if blind:
            gates.append(_blind("max_new_errors", max_new_errors, blind[0]))
        else:
            gates.append(Gate("max_new_errors", n <= max_new_errors, n, max_new_errors,
                              f"{candidate} makes {n} {errors} against {baseline}; at most "
                              f"{max_new_errors} allowed"))
    if min_delta is not None:
        if label:
            delta, n = _label_delta(root, corpus, view, punct, baseline, candidate, label)
            what = f"{metric} on gold '{label}' (n={n})"
        elif sql is None:
            delta, what = p["delta_acc"], metric
        else:
            new = _score(root, sql.format(sql_literal(candidate)), candidate)
            old = _score(root, sql.format(sql_literal(baseline)), baseline)
            delta = None if new is None or old is None else new - old
            what = metric
        if blind or delta is None:
            gates.append(_blind("min_delta", min_delta, blind[0] if blind else
                                f"{what} of {candidate} vs {baseline} is NULL (a 0/0: no "
                                "data to score)"))
        else:
            gates.append(Gate("min_delta", 100 * delta >= min_delta, 100 * delta, min_delta,
                              f"{what} of {candidate} vs {baseline}: {100 * delta:+.2f} "
                              f"points; at least {min_delta:+.2f} required"))
    if require_significant:
        with p_resolution(*p_resolution_of(root, corpus)):
            gates.append(_significance(p, paired, baseline, candidate, blind))
    return gates


def _significance(p: dict, what: str, baseline: str, candidate: str, blind: list[str]
                  ) -> Gate:
    """The gate ``--require-significant``: the pair's delta interval excludes 0."""
    delta = next((p[k] for k in ("delta_acc", "delta_f1") if k in p), None)
    low, high = p.get("delta_ci_low"), p.get("delta_ci_high")
    if blind:
        return _blind("require_significant", 0.0, blind[0])
    if delta is None or low is None or high is None:
        why = (f"{what} of {candidate} vs {baseline} has no bootstrap interval ("
               + ("the delta is NULL: no data to score" if delta is None else
                  "the run was made with --bootstrap 0") + ")")
        return _blind("require_significant", 0.0, why)
    shown = f"{100 * delta:+.2f} points [{100 * low:+.2f}, {100 * high:+.2f}]"
    boot = p_is(p.get("bootstrap_p"), bootstrap=True)
    if low > 0 or high < 0:
        kind = "gain" if low > 0 else "loss"
        return Gate("require_significant", True, 100 * delta, 0.0,
                    f"{what} of {candidate} vs {baseline}: {shown}, a significant {kind} "
                    f"(the interval excludes 0; bootstrap p {boot})")
    return Gate("require_significant", False, 100 * delta, 0.0,
                f"{what} of {candidate} vs {baseline}: {shown}; the interval holds 0: not a "
                f"significant difference (bootstrap p {boot})")


def _blind(name: str, limit: float, why: str) -> Gate:
    """A gate on a figure without data: it fails, and says why (and which gate it is: two
    gates on the same figure fail for the same reason)."""
    option = (f"--max-new-errors {limit}" if name == "max_new_errors" else
              f"--min-delta {limit:+.2f}")
    return Gate(name, False, None, limit,
                f"not evaluated: {why}; no gate passes without data ({option})")


def _srl_gate(root: Path, corpus: str, view: str, a: str, b: str
              ) -> tuple[dict, str, str, str]:
    """(the pair's row, what its new errors are, the F1 compared, that F1's query) of an srl
    corpus: argument units, predicate units, or the argument units of one role."""
    from sysdiff.flows.show.srl import srl_mode, unit_and_role

    c = sql_literal(corpus)
    unit, role = unit_and_role(view)
    p = _pair(root, "srl_pairs", f"corpus = {c} and unit = {sql_literal(unit)}", a, b)
    mode = srl_mode(root, corpus)
    if unit == "predicate":
        modes, metric = ("predicates_labeled", "predicates"), "predicates F1"
    else:
        modes, metric = ("args_labeled", "span"), "arguments F1"
    if role is not None:
        p = dict(p, new_errors=_srl_new_errors(root, c, role, a, b))
        metric += f" ({role})"
    errors = f"new errors ({unit} units" + ("" if role is None else f", role {role}") + ")"
    sql = (f"select f1 from srl_scores where corpus = {c} and mode in {modes} and role = "
           f"{sql_literal(role or 'ALL')} and ppos is null and system = {{}}")
    return p, errors, f"{metric}, {'eval09.pl' if mode == 'head' else 'srl-eval.pl'}", sql


def _srl_new_errors(root: Path, c: str, role: str, a: str, b: str) -> int:
    """Argument units of one role right under ``a`` (correct, absent) and wrong under ``b``."""
    ok = "('correct', 'absent')"
    rows = query_rows(root, f"""select coalesce(sum(count), 0) as n from srl_transitions
        where corpus = {c} and unit = 'argument' and sys1 = {sql_literal(a)} and sys2 =
        {sql_literal(b)} and label = {sql_literal(role)} and c1 in {ok} and c2 not in {ok}""")
    return int(rows.column("n")[0])


def _span_new_errors(root: Path, c: str, span_type: str, a: str, b: str) -> int:
    """Span units of one type right under ``a`` (correct, absent) and wrong under ``b``."""
    ok = "('correct', 'absent')"
    rows = query_rows(root, f"""select coalesce(sum(count), 0) as n from span_transitions
        where corpus = {c} and sys1 = {sql_literal(a)} and sys2 = {sql_literal(b)}
        and type = {sql_literal(span_type)} and c1 in {ok} and c2 not in {ok}""")
    return int(rows.column("n")[0])


def latest_steps(root: Path, corpus: str, alpha: float = 0.05) -> list[str]:
    """The newest version of every history of a corpus against its previous version, at the
    corpus' default view: one line each, starting with ``REGRESSION`` when the score fell
    significantly (McNemar p < ``alpha``). What ``sysdiff serve`` reports after a pass."""
    task = corpora(root)[corpus]
    view = check_view(root, corpus, task, None)
    which = "true" if task in UNL_TASKS + SPAN_TASKS else f"view = {sql_literal(view)}"
    if task in SRL_TASKS:
        which = "view = 'argument'"
    if task not in UNL_TASKS + COREF_TASKS + SPAN_TASKS + SRL_TASKS:
        which += f" and punct = {str(view not in DEP_VIEWS).lower()}"
    rows = query_rows(root, f"""select * from history where corpus = {sql_literal(corpus)} and
        {which} and previous is not null
        qualify position = max(position) over (partition by name) order by natural_key(name)""")
    lines = []
    for r in rows.to_dicts():
        if r["delta"] is None:
            lines.append(f"not evaluated: {r['name']}@{r['version']} vs @{r['previous']} in "
                         f"{corpus} ({r['view']}): a score is NULL (no data)")
            continue
        significant = r["mcnemar_p"] is not None and r["mcnemar_p"] < alpha
        kind = ("REGRESSION" if significant and r["delta"] < 0 else
                "improvement" if significant and r["delta"] > 0 else "no significant change")
        lines.append(f"{kind}: {r['name']}@{r['version']} vs @{r['previous']} in {corpus} "
                     f"({r['view']}): {100 * r['delta']:+.2f} points, {r['corrections']} "
                     f"corrections, {r['new_errors']} new errors, McNemar p = "
                     f"{p_value(r['mcnemar_p'])}")
    return lines


def as_json(gates: list[Gate]) -> dict:
    """The gates as a JSON-ready document."""
    return {"passed": all(g.passed for g in gates), "gates": [asdict(g) for g in gates]}
