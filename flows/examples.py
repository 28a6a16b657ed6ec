"""Example sentences behind a change-table cell: the words two systems label differently.

One DuckDB query over the ``units`` and ``sents`` tables (the key is system ``__key__``;
systems' words are in key order, so words join on ``(corpus, sent, id)``). A word's label is
its view's column; for ``head`` and ``las`` the shown label is the DEPREL (as in the
``changes`` table) and two labels differ when the HEAD (``head``) or the (HEAD, DEPREL) pair
(``las``) differ. Label mappings recorded in the rows' ``options`` are applied as the run did.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.queries import query, query_rows
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import CLASSES, KEY_ID, PTB_PUNCT, View, view

if TYPE_CHECKING:
    import polars as pl

    from sysdiff.flows.rows import Rows


def parse_mappings(options: str) -> dict[str, dict[str, str]]:
    """The label mappings of an ``options`` string (``...|map:SYS:a>b,c>d;SYS2:...``)."""
    maps = options.split("|map:", 1)[1] if "|map:" in options else "none"
    out: dict[str, dict[str, str]] = {}
    if maps == "none":
        return out
    for part in maps.split(";"):
        source, _, pairs = part.partition(":")
        out[source] = dict(p.split(">", 1) for p in pairs.split(",") if ">" in p)
    return out


def _mapped(column: str, mapping: dict[str, str]) -> str:
    """SQL for a label column after a mapping, nulls shown as ``_`` (as the run encodes them)."""
    if not mapping:
        return f"coalesce({column}, '_')"
    whens = " ".join(f"when {lit(a)} then {lit(b)}" for a, b in sorted(mapping.items()))
    return f"coalesce(case {column} {whens} else {column} end, '_')"


def _words_cte(name: str, corpus: str, system: str, v: View, mapping: dict[str, str]) -> str:
    """One source's words in the key's order: the view's (mapped) label ``lab``, head ``hd``
    (null = -1) and the source's own word ``form`` (a system tokenised otherwise: the key's
    words with the system words aligned with them, from ``aligned``)."""
    cols = (f"sent, id, form, upos, xpos, coalesce(head, -1) as hd, "
            f"{_mapped(v.label, mapping)} as lab")
    mine = f"corpus = {lit(corpus)} and system = {lit(system)}"
    by_chars = (f"exists (select 1 from systems where {mine} "
                "and alignment = 'characters')")
    return (f"{name} as (select {cols} from units where {mine} and kind = 0 "
            f"and not {by_chars} union all select {cols} from aligned where {mine})")


def _class_sql(v: View) -> str:
    ok1, ok2 = v.same_sql("a", "k"), v.same_sql("b", "k")
    return (f"case when not ({ok1}) and {ok2} then 'correction' "
            f"when {ok1} and not ({ok2}) then 'new_error' else 'changed_error' end")


def _punct_sql(fmt: str) -> str:
    """SQL: the key word is punctuation (gold UPOS PUNCT; also the PTB tags for CoNLL-X)."""
    cond = "coalesce(k.upos = 'PUNCT', false)"
    if fmt == "conllx":
        cond += f" or coalesce(k.xpos in ({', '.join(lit(t) for t in PTB_PUNCT)}), false)"
    return f"({cond})"


def examples_sql(corpus: str, view_name: str, punct: bool, sys1: str, sys2: str, fmt: str,
                 mappings: dict[str, dict[str, str]], where: str, per_cell: int | None,
                 limit: int | None, context: int) -> str:
    """The one query: differing words of ``sys1 -> sys2`` with their class and sentence.

    ``where`` filters the differing words (columns ``class``, ``gold``, ``l1``, ``l2``);
    ``per_cell`` keeps the first words of each (class, gold, l1, l2) cell in corpus order;
    ``context`` > 0 adds ``window``: the words within that distance, with all three labels.
    """
    v = view(view_name)
    ctes = [_words_cte(n, corpus, s, v, mappings.get(m, {}))
            for n, s, m in (("k", KEY_ID, "@key"), ("a", sys1, sys1), ("b", sys2, sys2))]
    keep = "" if punct else f"and not {_punct_sql(fmt)}"
    joined = ("j as (select k.sent, k.id, k.form, a.form as form1, b.form as form2, "
              "k.lab as gold, a.lab as l1, b.lab as l2, "
              "k.hd as gold_head, a.hd as head1, b.hd as head2, "
              f"not {v.same_sql('a', 'b')} as differs, {_class_sql(v)} as class "
              f"from k join a using (sent, id) join b using (sent, id) where true {keep})")
    rank = ("row_number() over (partition by class, gold, l1, l2 order by sent, id)"
            if per_cell else "1")
    cells = (f"d as (select *, {rank} as rank from j where differs and ({where or 'true'}) "
             + (f"qualify rank <= {int(per_cell)}" if per_cell else "") + ")")
    window = ""
    if context > 0:
        window = (", (select list({'id': w.id, 'form': w.form, 'gold': w.gold, 'l1': w.l1, "
                  "'l2': w.l2, 'gold_head': w.gold_head, 'head1': w.head1, 'head2': w.head2} "
                  f"order by w.id) from j w where w.sent = d.sent and abs(w.id - d.id) <= "
                  f"{int(context)}) as window")
    return (f"with {', '.join(ctes)}, {joined}, {cells} "
            "select s.sent_id, d.sent, d.id, d.form, d.form1, d.form2, d.class, d.gold, "
            "d.l1, d.l2, "
            f"d.gold_head, d.head1, d.head2, s.text{window} from d join sents s "
            f"on s.corpus = {lit(corpus)} and s.system = {lit(KEY_ID)} and s.sent = d.sent "
            "order by d.sent, d.id" + (f" limit {int(limit)}" if limit is not None else ""))


def pair_context(root: Path, corpus: str, view: str, punct: bool, sys1: str,
                 sys2: str) -> tuple[str, dict[str, dict[str, str]]]:
    """The key's input format and the label mappings the pair was computed with."""
    meta = query_rows(root, f"""
        select (select any_value(format) from systems where corpus = {lit(corpus)}
                and system = {lit(KEY_ID)}) as format,
               (select any_value(options) from pairs where corpus = {lit(corpus)}
                and view = {lit(view)} and punct = {str(punct).lower()}
                and sys1 = {lit(sys1)} and sys2 = {lit(sys2)}) as options""")
    fmt, options = meta.row(0)
    if fmt is None:
        raise InputError(f"no corpus '{corpus}' in the warehouse", root)
    if options is None:
        raise InputError(f"no pair {sys1} -> {sys2} for corpus '{corpus}', view '{view}' "
                         f"and punct={punct}", root)
    return fmt, parse_mappings(options)


def check_labels(root: Path, corpus: str, view: str, punct: bool, sys1: str, sys2: str,
                 asked: dict[str, str | None]) -> None:
    """Each label asked for (``l1``, ``l2``, ``gold``) occurs in that column of the pair's
    change table; otherwise one line naming the labels that do."""
    asked = {col: v for col, v in asked.items() if v is not None}
    if not asked:
        return
    where = (f"corpus = {lit(corpus)} and view = {lit(view)} and punct = {str(punct).lower()} "
             f"and sys1 = {lit(sys1)} and sys2 = {lit(sys2)}")
    for col, value in asked.items():
        labels = [v for v in query_rows(root, f"select distinct {col} as label from changes "
                                              f"where {where} order by 1").column("label")
                  if v is not None]
        if value not in labels:
            raise InputError(f"no label '{value}' for --{col} in the changes of {sys1} -> "
                             f"{sys2} ({view}, punct={str(punct).lower()}); expected one of "
                             f"{', '.join(labels) or 'none'}")


def examples(root: Path, corpus: str, view_name: str, sys1: str, sys2: str, cls: str,
             l1: str | None = None, l2: str | None = None, limit: int = 10,
             punct: bool | None = None, gold: str | None = None,
             context: int = 0, rows: bool = False) -> pl.DataFrame | Rows:
    """Words of class ``cls`` in ``sys1 -> sys2`` (optionally with labels l1/l2/gold), as a
    frame or (``rows``) as :class:`Rows`.

    ``limit`` < 0 means no limit. Columns: sent_id, sent, id (the key's word, 1-based as in
    CoNLL-U), form (the key's), form1 and form2 (each system's own word aligned with it,
    null when none: only when a system of the pair is tokenised otherwise), class, gold,
    l1, l2, gold_head, head1, head2 (views head and las), ``window`` when ``context`` > 0,
    and the sentence with the word in brackets (:func:`marked_sql`).
    """
    v = view(view_name)
    if cls not in CLASSES:
        raise InputError(f"unknown change class '{cls}'; expected one of {', '.join(CLASSES)}")
    punct = v.default_punct if punct is None else punct
    fmt, mappings = pair_context(root, corpus, view_name, punct, sys1, sys2)
    check_labels(root, corpus, view_name, punct, sys1, sys2, {"l1": l1, "l2": l2,
                                                               "gold": gold})
    conds = [f"class = {lit(cls)}"]
    conds += [f"{c} = {lit(v)}" for c, v in (("l1", l1), ("l2", l2), ("gold", gold))
              if v is not None]
    sql = examples_sql(corpus, view_name, punct, sys1, sys2, fmt, mappings,
                       " and ".join(conds), None, None if limit < 0 else limit, context)
    chars = query_rows(root, f"select count(*) from systems where corpus = {lit(corpus)} and "
                             f"system in ({lit(sys1)}, {lit(sys2)}) and alignment = "
                             "'characters'").rows[0][0] > 0
    return query(root, marked_sql(sql, corpus, chars, "head" in v.columns, context > 0),
                 rows=rows)


def marked_sql(sql: str, corpus: str, own_words: bool, heads: bool, window: bool) -> str:
    """The rows of :func:`examples_sql` as ``examples`` shows them: the word marked in its
    sentence (``sentence``: the key's words, the unit in brackets), each system's own word
    (``form1``, ``form2``) only when one of the two systems has words of its own (a system
    tokenised otherwise), the heads only for the views that compare them."""
    columns = ["sent_id", "sent", "id", "form", *(["form1", "form2"] * own_words), "class",
               "gold", "l1", "l2", *(["gold_head", "head1", "head2"] * heads),
               *(["window"] * window)]
    words = (f"select string_agg(case when u.id = e.id then '[' || u.form || ']' else u.form "
             f"end, ' ' order by u.id) from units u where u.corpus = {lit(corpus)} and "
             f"u.system = {lit(KEY_ID)} and u.kind = 0 and u.sent = e.sent")
    return (f"with e as ({sql}) select {', '.join(f'e.{c}' for c in columns)}, "
            f"({words}) as sentence from e order by e.sent, e.id")


def cell_examples(root: Path, corpus: str, view: str, punct: bool, sys1: str, sys2: str,
                  per_cell: int, context: int = 6) -> pl.DataFrame:
    """The first ``per_cell`` words of every change cell of a pair, with a word window."""
    fmt, mappings = pair_context(root, corpus, view, punct, sys1, sys2)
    return query(root, examples_sql(corpus, view, punct, sys1, sys2, fmt, mappings, "",
                                    per_cell, None, context))
