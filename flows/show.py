"""Paper-style views of the warehouse tables (read-only; DuckDB over the Parquet files).

Tables store fractions (0-1); everything shown here is for people, so every rate is printed
as a percent with ``%`` in its column name, every difference of rates in points, and every
score is named for what it is (``LAS (no punct)``, ``LAS (punct)``, ``CoNLL18 LAS F1``).
``sysdiff sql`` gives the stored fractions. Every option value is checked against what the
warehouse holds: a wrong one is one line naming the valid choices.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sysdiff.flows.catalog import sql_literal
from sysdiff.flows.names import (  # noqa: F401
    COREF_TASKS,
    SHOWABLE,
    SPAN_TASKS,
    TOKEN_TASKS,
    UNL_TASKS,
)
from sysdiff.flows.queries import query
from sysdiff.flows.render import to_text
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import CRITERIA, DEP_VIEWS, VIEWS, score_name  # noqa: F401

VIEW_ORDER = tuple(VIEWS)
COREF_NAMES = {"muc": "MUC", "bcub": "B3", "ceafm": "CEAF-m", "ceafe": "CEAF-e",
               "blanc": "BLANC", "lea": "LEA", "conll": "CoNLL"}
LEGEND = ("Read 'A -> B' (corrections, new errors) as sys1's label -> sys2's label; "
          "'G -> A -> B' (changed errors: both wrong) as gold -> sys1 -> sys2; "
          "'(attachment)': the same label, only the head differs.\n")


def corpora(root: Path) -> dict[str, str]:
    """corpus -> task, for every corpus in the warehouse."""
    rows = query(root, "select corpus, any_value(task) as task from systems group by corpus "
                       "order by corpus")
    return dict(rows.rows())


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
    got = set(query(root, f"select distinct view from scores where corpus = "
                          f"{sql_literal(corpus)}")["view"])
    return [v for v in VIEW_ORDER if v in got] + sorted(got - set(VIEW_ORDER))


def corpus_systems(root: Path, corpus: str) -> list[str]:
    """The systems (not the key) of a corpus, by name."""
    return query(root, f"select distinct system from systems where corpus = "
                       f"{sql_literal(corpus)} and role = 'system' order by 1")["system"].to_list()


def check_view(root: Path, corpus: str, task: str, view: str | None) -> str | None:
    """The view (``--view``) checked against the corpus; its default when not given."""
    if task in UNL_TASKS:
        if view is not None:
            raise InputError(f"corpus '{corpus}' is a {task} corpus: it has no views; "
                             "--view applies to token corpora and coreference (any, nom)")
        return None
    if task in SPAN_TASKS:
        return check_span_type(root, corpus, view)
    if task in COREF_TASKS:
        view = view or "nom"
        if view not in CRITERIA:
            raise InputError(f"unknown view '{view}' for coreference corpus '{corpus}'; "
                             f"expected one of {', '.join(CRITERIA)} (the ARCS criterion)")
        return view
    views = corpus_views(root, corpus)
    if view is None:
        return "las" if "las" in views else (views[0] if views else "upos")
    if view not in views:
        raise InputError(f"unknown view '{view}' for corpus '{corpus}'; expected one of "
                         f"{', '.join(views) or 'none (no scores)'}")
    return view


def span_types(root: Path, corpus: str) -> list[str]:
    """``ALL`` and the span types scored in a ner corpus (key or predicted)."""
    got = query(root, f"select distinct type from span_scores where corpus = "
                      f"{sql_literal(corpus)} and type != 'ALL' order by 1")["type"].to_list()
    return ["ALL", *got]


def check_span_type(root: Path, corpus: str, view: str | None) -> str:
    """``--view`` of a ner corpus: an entity type, or ALL (the default)."""
    if view is None:
        return "ALL"
    types = span_types(root, corpus)
    if view not in types:
        raise InputError(f"unknown type '{view}' for ner corpus '{corpus}'; expected one of "
                         f"{', '.join(types)}")
    return view


def check_systems(root: Path, corpus: str, *names: str | None) -> None:
    """Every system named (``--sys1``, ``--sys2``, ...) exists in the corpus."""
    known = corpus_systems(root, corpus)
    for name in names:
        if name is not None and name not in known:
            raise InputError(f"no system '{name}' in corpus '{corpus}'; expected one of "
                             f"{', '.join(known) or 'none'}")


def pct(expr: str, digits: int = 2) -> str:
    """SQL: a fraction as a percent (or a difference of fractions as points)."""
    return f"round(100 * ({expr}), {digits})"


def headline(root: Path, corpus: str) -> pl.DataFrame:
    """The headline figures of a corpus, one row per system, every rate in percent: token
    accuracies (dependency views without punctuation, LAS with it, and CoNLL18 LAS F1),
    coreference F1s, or UNL precision/recall/F."""
    task = corpus_task(root, corpus)
    c = sql_literal(corpus)
    if task in SPAN_TASKS:
        return query(root, f"""select s.system, {pct('s.precision')} as "P %",
            {pct('s.recall')} as "R %", {pct('s.f1')} as "F1 %",
            {pct('t.token_accuracy')} as "token accuracy %", s.scheme
            from span_scores s left join span_tags t using (corpus, system)
            where s.corpus = {c} and s.type = 'ALL' order by s.system""")
    if task in COREF_TASKS:
        long = query(root, f"select system, metric, {pct('f1')} as f1 from coref_scores "
                           f"where corpus = {c}")
        order = [m for m in COREF_NAMES if m in set(long["metric"])]
        wide = long.pivot("metric", index="system", values="f1").sort("system")
        return wide.select("system", *[pl.col(m).alias(f"{COREF_NAMES[m]} F1 %")
                                      for m in order])
    if task in UNL_TASKS:  # the options are in 'show unl'; a figure the task lacks is dropped
        rows = _unl_rows(root, c).drop("options")
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
        las = query(root, f"select system, {pct('f1')} as \"CoNLL18 LAS F1 %\" from conll18 "
                          f"where corpus = {c} and metric = 'LAS'")
        if las.height:
            wide = wide.join(las, on="system", how="left")
    return wide


def _unl_rows(root: Path, c: str) -> pl.DataFrame:
    return query(root, f"""select system, task, n_expected, n_returned, n_correct,
        {pct('precision')} as "precision %", {pct('recall')} as "recall %",
        {pct('f1')} as "F %", {pct('rel_f1')} as "relations F %",
        {pct('uw_f1')} as "UWs F %", {pct('attr_f1')} as "attributes F %",
        {pct('word_f1')} as "words F %", options
        from unl_scores where corpus = {c} order by system""")


def _where(corpus: str, view: str | None, punct: bool | None) -> str:
    parts = [f"corpus = {sql_literal(corpus)}"]
    if view:
        parts.append(f"view = {sql_literal(view)}")
        default = view not in DEP_VIEWS
        parts.append(f"punct = {str(default if punct is None else punct).lower()}")
    return " and ".join(parts)


def show_table(root: Path, table: str, corpus: str | None, view: str | None, sys1: str | None,
               sys2: str | None, punct: bool | None, top: int, fmt: str,
               name: str | None = None) -> str:
    """Render one of SHOWABLE for a corpus and view (every option value checked)."""
    if table not in SHOWABLE:
        raise InputError(f"unknown table '{table}'; expected one of {', '.join(SHOWABLE)}")
    tasks = SHOWABLE[table][0]
    corpus = pick_corpus(root, corpus, tasks, f"show {table}")
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
        return _span_table(root, table, corpus, view, sys1, sys2, top, fmt)
    if task not in TOKEN_TASKS:
        return _domain_table(root, table, corpus, view, sys1, sys2, top, fmt)
    punct = (view not in DEP_VIEWS) if punct is None else punct
    where = _where(corpus, view, punct)
    name = score_name(view, punct)
    pair = "".join(f" and {col} = {sql_literal(s)}" for col, s in (("sys1", sys1),
                                                                   ("sys2", sys2)) if s)
    if table == "changes":
        return _changes(root, corpus, view, name, where, pair, sys1, sys2, top, fmt)
    if table == "labeldiff":
        return _labeldiff(root, where, name, sys1, sys2, top, fmt)
    if table == "labels":
        return _labels(root, where, corpus, name, fmt)
    if table == "gains":
        return _gains(root, where, corpus, name, fmt)
    sql = {
        "scores": f"select system, n_correct, n_units, {pct('accuracy')} as \"{name} %\", "
                  f"n_sents_exact, n_sents, {pct('sent_exact')} as \"sentence exact %\" "
                  f"from scores where {where} order by accuracy desc, system",
        "pairs": f"select sys1, sys2, n_units, n_diff, {pct('diff')} as \"diff %\", "
                 f"corrections, new_errors, changed_errors, "
                 f"{pct('delta_acc')} as \"delta {name} (points)\", mcnemar_p, ar_p "
                 f"from pairs where {where}{pair} "
                 f"{'' if sys1 or sys2 else 'and sys1 < sys2'} order by diff desc, sys1, sys2",
        "oracles": f"select systems, n_systems, n_correct, n_units, "
                   f"{pct('accuracy')} as \"oracle {name} %\", "
                   f"{pct('gain')} as \"gain (points)\" "
                   f"from oracles where {where} order by n_systems, accuracy desc",
        "difficulty": f"select k_correct, n from difficulty where {where} and gold_label "
                      f"is null order by k_correct",
        "conll18": f"select system, 'CoNLL18 ' || metric as metric, "
                   f"{pct('precision')} as \"P %\", {pct('recall')} as \"R %\", "
                   f"{pct('f1')} as \"F1 %\", {pct('aligned_accuracy')} as \"AligndAcc %\" "
                   f"from conll18 where corpus = {sql_literal(corpus)} and key_data "
                   f"order by system, list_position({CONLL18_ORDER}, metric)",
    }[table]
    if table == "conll18":
        _blank_metrics_note(root, corpus)
    title = f"{table}: {corpus}" + ("" if table == "conll18" else f", {name}")
    return to_text(query(root, sql), fmt, title=title)


#: The official script's metric order, as a SQL list.
CONLL18_ORDER = "['Tokens', 'Sentences', 'Words', 'UPOS', 'XPOS', 'UFeats', 'AllTags', " \
    "'Lemmas', 'UAS', 'LAS', 'CLAS', 'MLAS', 'BLEX']"


def _blank_metrics_note(root: Path, corpus: str) -> None:
    """One line naming the CoNLL 2018 metrics left out: the key has no data for them."""
    blank = query(root, f"select distinct metric from conll18 where corpus = "
                        f"{sql_literal(corpus)} and not key_data order by 1")["metric"]
    if blank.len():
        from sysdiff.flows.progress import notice

        notice(f"CoNLL 2018 {', '.join(blank)}: a column they compare is '_' in every key "
               "word; not shown (the rows are in table conll18, as the official script "
               "prints them)")


def _gains(root: Path, where: str, corpus: str, name: str, fmt: str) -> str:
    """What each system adds to the oracle of all: oracle(all) - oracle(all but it)."""
    from sysdiff.transforms.summaries import marginal_gains

    gains = marginal_gains(query(root, f"select systems, n_correct, n_units from oracles "
                                       f"where {where}"))
    shown = gains.select(
        "system", (100 * pl.col("oracle_all")).round(2).alias("oracle of all %"),
        (100 * pl.col("oracle_without")).round(2).alias("oracle without it %"),
        (100 * pl.col("gain")).round(2).alias("marginal gain (points)"),
        pl.col("units_gained").alias("units gained"))
    return to_text(shown, fmt, title=f"gains: {corpus}, {name}")


def _labels(root: Path, where: str, corpus: str, name: str, fmt: str) -> str:
    """Accuracy per gold label: one column per system (long form for CSV and JSON)."""
    long = query(root, f"""select gold_label, system, n, {pct('accuracy')} as "{name} %"
        from labels where {where} order by n desc, gold_label, system""")
    title = f"labels: {corpus}, {name} per gold label"
    if fmt in ("csv", "tsv", "json"):
        return to_text(long, fmt, title=title)
    order = long.select("gold_label", "n").unique("gold_label", maintain_order=True)
    wide = long.pivot("system", index="gold_label", values=f"{name} %")
    systems = sorted(c for c in wide.columns if c != "gold_label")
    wide = order.join(wide, on="gold_label", how="left", maintain_order="left")
    return to_text(wide.rename({s: f"{s} %" for s in systems}), fmt, title=title)


def _criterion(view: str | None) -> str:
    return view if view in CRITERIA else "nom"


def history_names(root: Path, corpus: str) -> list[str]:
    """The NAMEs of the corpus' NAME@VERSION histories."""
    return query(root, f"select distinct name from history where corpus = {sql_literal(corpus)} "
                       "order by name")["name"].to_list()


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
    else:
        score, which = "F1", "true"
    rows = query(root, f"""
        select version, previous, {pct('score')} as "{score} %",
               {pct('delta')} as "delta (points)", corrections, new_errors, changed_errors,
               mcnemar_p,
               case when mcnemar_p < 0.05 and delta > 0 then 'gain'
                    when mcnemar_p < 0.05 and delta < 0 then 'loss' else '' end
                 as "significant (p < 0.05)",
               best_version as "best before", {pct('delta_best')} as "vs best (points)",
               mcnemar_p_best as "p vs best"
        from history where corpus = {sql_literal(corpus)} and name = {sql_literal(name)}
          and {which} order by position""")
    return to_text(rows, fmt, title=f"{corpus}: history of {name} ({score})")


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
        "coref": f"select system, metric, {pct('recall')} as \"recall %\", "
                 f"{pct('precision')} as \"precision %\", {pct('f1')} as \"F1 %\" "
                 f"from coref_scores where corpus = {c} order by system, metric",
        "arcs": f"select system, mtype, tp, fp, fn, wl, tn, {pct('precision')} as \"P %\", "
                f"{pct('recall')} as \"R %\", {pct('f1')} as \"F1 %\" from arcs_scores "
                f"where corpus = {c} and criterion = {crit} order by system, mtype",
        "coref_pairs": f"select sys1, sys2, n_mentions, n_diff, {pct('diff')} as \"diff %\", "
                       f"corrections, new_errors, changed_errors from coref_pairs "
                       f"where corpus = {c} and criterion = {crit}{pair}"
                       f"{'' if sys1 or sys2 else ' and sys1 < sys2'} order by sys1, sys2",
        "coref_oracles": f"select systems, mtype, n, n_tp, {pct('n_tp / n')} as "
                         f"\"ARCS recall %\" from coref_oracles where corpus = {c} and "
                         f"criterion = {crit} and n > 0 order by len(systems), mtype",
        "agreement": f"select sys1 as as_key, sys2, {pct('f1')} as \"CoNLL F1 %\" from "
                     f"coref_agreement where corpus = {c} and metric = 'conll' "
                     f"order by sys1, sys2",
    }[table]
    suffix = "" if table in ("coref", "agreement") else f", criterion {_criterion(view)}"
    return to_text(query(root, sql), fmt, title=f"{table}: {corpus}{suffix}")


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
    head += ("Read 'a->b' as the mention's ARCS class in sys1 -> in sys2 (tp, fp, fn, wl, "
             "tn; METRICS 2.3).\n")
    rows = query(root, f"""select lower(c1) || '->' || lower(c2) as change, sum(count) as count
        from coref_transitions where {where} and c1 != c2 and mtype = 'ALL'
        and word is null group by all
        order by count desc, change limit {int(top)}""")
    body = to_text(rows, fmt, title=f"top {top} transitions ({criterion})")
    return (head + body) if fmt in ("table", "markdown") else body


SPAN_LEGEND = ("Read 'a->b' as the unit's class under sys1 -> under sys2. Units: the key's "
               "spans (correct, type, boundary, missed) and the spurious spans of either "
               "system (spurious, or absent where a system does not predict it); correct and "
               "absent are right (METRICS 5.2).\n")


def _span_table(root: Path, table: str, corpus: str, view: str, sys1: str | None,
                sys2: str | None, top: int, fmt: str) -> str:
    """The ner tables; ``--view`` is an entity type (ALL: every type)."""
    c, t = sql_literal(corpus), sql_literal(view)
    scheme = query(root, f"select any_value(scheme) as s from span_scores where corpus = {c}")
    how = f"scheme {scheme['s'][0]}" if scheme.height and scheme["s"][0] else "no scores"
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
                       f"{pct('f1')} as \"F1 %\" from span_scores where corpus = {c}{typed} "
                       f"order by system, type != 'ALL', type",
        "span_classes": f"select system, count(*) filter (where in_key) as key_spans, "
                        f"{classes} from span_classes where corpus = {c}{typed} "
                        f"group by system order by system",
        "span_pairs": f"select sys1, sys2, n_units, n_diff, {pct('diff')} as \"diff %\", "
                      f"corrections, new_errors, changed_errors, "
                      f"{pct('delta_f1')} as \"delta F1 (points)\", mcnemar_p, ar_p "
                      f"from span_pairs where corpus = {c}{pair}"
                      f"{'' if sys1 or sys2 else ' and sys1 < sys2'} order by diff desc, "
                      f"sys1, sys2",
        "span_oracles": f"select systems, n_systems, type, n_correct, n_gold, "
                        f"{pct('recall')} as \"oracle recall %\", "
                        f"{pct('gain')} as \"gain (points)\" from span_oracles "
                        f"where corpus = {c} and type = {t} order by n_systems, recall desc",
    }.get(table)
    if sql is None:
        raise InputError(f"table '{table}' does not apply to ner corpus '{corpus}'; expected "
                         "one of span_scores, span_classes, span_pairs, span_oracles, history")
    title = f"{table}: {corpus}, {how}" + ("" if view == "ALL" else f", type {view}")
    body = to_text(query(root, sql), fmt, title=title)
    if table == "span_scores" and fmt in ("table", "markdown"):
        tags = query(root, f"""select system, detected, n_tokens, n_tokens_correct,
            {pct('token_accuracy')} as "token accuracy %", n_spans, n_ill_formed
            from span_tags where corpus = {c} order by system = '__key__' desc, system""")
        body += to_text(tags, fmt, title="tags: scheme detected, token accuracy (conlleval), "
                                         "ill-formed spans")
    return body


def _span_pair(root: Path, corpus: str, view: str, sys1: str, sys2: str, top: int,
               fmt: str) -> str:
    """One pair over span units: the paper's summary and the top class transitions."""
    c = sql_literal(corpus)
    where = f"corpus = {c} and sys1 = {sql_literal(sys1)} and sys2 = {sql_literal(sys2)}"
    p = query(root, f"select * from span_pairs where {where}")
    if p.is_empty():
        raise InputError(f"no span pair {sys1} -> {sys2} for corpus '{corpus}'")
    r = p.row(0, named=True)
    head = pair_summary(r["n_diff"], r["n_units"], r["corrections"], r["new_errors"],
                        r["changed_errors"])
    head += (f"Delta F1: {100 * r['delta_f1']:+.2f} points  McNemar p = {r['mcnemar_p']:.3g}"
             f"  AR p (F1, by sentence) = {r['ar_p']:.3g}\n" + SPAN_LEGEND)
    rows = query(root, f"""select c1 || '->' || c2 as change, count,
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
                  c2: str | None, span_type: str | None, limit: int) -> pl.DataFrame:
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
    return query(root, span_units_sql(corpus, sys1, sys2, " and ".join(filters),
                                      None if limit < 0 else limit, None))


def span_units_sql(corpus: str, sys1: str, sys2: str, where: str, limit: int | None,
                   per_cell: int | None) -> str:
    """The one query behind span examples: the units of ``sys1 -> sys2`` whose class
    differs (columns ``change``, ``c1``, ``c2``, ``type`` filtered by ``where``), in corpus
    order; ``per_cell`` keeps the first units of each (c1, c2) cell. Each row: sent_id, the
    unit (type, text, in_key), c1, c2, what each system predicted, the bracketed sentence."""
    c = sql_literal(corpus)
    ok = "('correct', 'absent')"
    side = ("select sent, start, \"end\", type, text, in_key, cls, pred_start, pred_end, "
            "pred_type from span_classes where corpus = " + c + " and system = ")
    shown = "case when {p}.cls is null then 'absent' when {p}.pred_type is null then {p}.cls " \
            "else {p}.cls || ' (' || {p}.pred_type || ' ' || ({p}.pred_start + 1) || '-' " \
            "|| ({p}.pred_end + 1) || ')' end"
    rank = ("row_number() over (partition by c1, c2 order by sent, start, \"end\", type)"
            if per_cell else "1")
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
                   {'' if limit is None else f'limit {int(limit)}'})
        select s.sent_id, p.type, p.text as span, p.in_key, p.c1, p.c2,
               p.s1 as {_ident(sys1)}, p.s2 as {_ident(sys2)},
               string_agg(case when t.id - 1 = p.start and t.id - 1 = p."end"
                               then '[' || t.form || ']'
                               when t.id - 1 = p.start then '[' || t.form
                               when t.id - 1 = p."end" then t.form || ']' else t.form end,
                          ' ' order by t.id) as sentence
        from picked p
        join sents s on s.corpus = {c} and s.system = '__key__' and s.sent = p.sent
        join span_tokens t on t.corpus = {c} and t.system = '__key__' and t.sent = p.sent
        group by p.sent, p.start, p."end", p.type, s.sent_id, p.text, p.in_key, p.c1, p.c2,
                 p.s1, p.s2
        order by p.sent, p.start, p."end", p.type"""
    return sql


def _ident(name: str) -> str:
    """A SQL identifier (double-quoted) for a column named after a system."""
    return '"' + name.replace('"', '""') + '"'


def pair_summary(n_diff: int, n_units: int, corrections: int, new_errors: int,
                 changed: int) -> str:
    """The paper's two-line summary of a pair: difference, then the three classes."""
    d = max(n_diff, 1)
    return (f"Difference: {100 * n_diff / max(n_units, 1):.2f}% ({n_diff}/{n_units})\n"
            f"Corrections: {100 * corrections / d:.2f}% ({corrections})  "
            f"New errors: {100 * new_errors / d:.2f}% ({new_errors})  "
            f"Changed errors: {100 * changed / d:.2f}% ({changed})\n")


def _labeldiff(root: Path, where: str, name: str, sys1: str | None, sys2: str | None,
               top: int, fmt: str) -> str:
    """The paper's appendix table: labels with the largest accuracy difference for a pair."""
    if not (sys1 and sys2):
        raise InputError("show labeldiff needs --sys1 and --sys2")
    rows = query(root, f"""
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


def _changes(root: Path, corpus: str, view: str, name: str, where: str, pair: str,
             sys1: str | None, sys2: str | None, top: int, fmt: str) -> str:
    if not (sys1 and sys2):
        raise InputError("show changes needs --sys1 and --sys2")
    p = query(root, f"select * from pairs where {where}{pair}")
    if p.is_empty():
        raise InputError(f"no pair {sys1} -> {sys2} for corpus '{corpus}', view '{view}'")
    r = p.row(0, named=True)
    head = (pair_summary(r["n_diff"], r["n_units"], r["corrections"], r["new_errors"],
                         r["changed_errors"]) +
            f"Delta accuracy: {100 * r['delta_acc']:+.2f} points ({name})  "
            f"McNemar p = {r['mcnemar_p']:.3g}  AR p = {r['ar_p']:.3g}\n" + LEGEND)
    rows = query(root, f"""
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
