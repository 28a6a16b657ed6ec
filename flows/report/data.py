"""What the report reads: bounded aggregate queries over the warehouse (read-only DuckDB).

Only aggregate tables are read, each bounded in the number of systems N: scores, pairs
(N^2 rows per view), the oracle subsets people read (every subset up to 10 systems; above,
singles, pairs, leave-one-out and the full set), the frequent gold labels, and change cells
of the few pairs shown in detail; for coreference, the scores, pairs, transitions, top words,
agreement and the oracle subsets people read. Token data is read only by the drill-down
examples.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.queries import connect, current_limits, refusal, time_limit
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import DEP_VIEWS, TASK_VIEWS, VIEWS
from sysdiff.transforms.summaries import MANY_SYSTEMS

Read = Callable[[str], pl.DataFrame]
#: Cells per class and pair in a change table; gold labels in per-label tables.
TOP_CHANGES = 10
LABEL_ROWS = 60
#: Bound on the rows read from any coreference or UNL table; words per coreference pair.
MAX_ROWS = 50_000
TOP_WORDS = 12
#: Tables of the other tasks whose corpora have a section (coreference, UNL).
OPTIONAL = ("coref_scores", "arcs_scores", "coref_pairs", "unl_scores", "unl_pairs",
            "unl_oracle")


def reader(root: Path) -> tuple[Read, Callable[[], None]]:
    """A read-only SQL runner over the warehouse (one sandboxed connection) and its closer."""
    box = connect(root)

    def read(sql: str) -> pl.DataFrame:
        try:
            with time_limit(box.con, current_limits().timeout):
                return pl.from_arrow(box.con.sql(sql).to_arrow_table())
        except duckdb.Error as e:
            raise refusal(e) from None

    return read, box.close


def tables_in(read: Read) -> set[str]:
    """The tables (views) of the catalog."""
    return set(read("select table_name from information_schema.tables "
                    "where table_schema = 'main'")["table_name"])


def corpora(read: Read, corpus: str | None) -> list[str]:
    """The corpora to report: the one asked for, or every corpus with results."""
    with_corpus = set(read("select table_name from information_schema.columns "
                           "where column_name = 'corpus' and table_schema = 'main'"
                           )["table_name"])
    sources = ["systems", *(t for t in OPTIONAL if t in with_corpus)]
    union = " union ".join(f"select distinct corpus from {t}" for t in sources)
    names = read(f"select corpus from ({union}) where corpus is not null order by 1")[
        "corpus"].to_list()
    if corpus is None:
        return names
    if corpus not in names:
        raise InputError(f"no corpus '{corpus}' in the warehouse; it has: "
                         f"{', '.join(names) or 'none'}")
    return [corpus]


def default_rows(corpus: str) -> str:
    """SQL filter: one corpus, each view at its default punctuation setting."""
    dep = ", ".join(lit(v) for v in DEP_VIEWS)
    return f"corpus = {lit(corpus)} and punct = (view not in ({dep}))"


def view_rows(corpus: str, view: str) -> str:
    """SQL filter: one corpus and view at the view's default punctuation setting."""
    return (f"corpus = {lit(corpus)} and view = {lit(view)} "
            f"and punct = {str(VIEWS[view].default_punct).lower()}")


@dataclass(frozen=True)
class CorpusData:
    """The aggregate rows of one corpus at each view's default punctuation setting."""

    corpus: str
    key_format: str
    task: str
    systems: list[str]
    scores: pl.DataFrame
    pairs: pl.DataFrame
    labels: pl.DataFrame
    oracles: pl.DataFrame
    difficulty: pl.DataFrame
    majority: pl.DataFrame

    def views(self) -> list[str]:
        present = set(self.scores["view"].to_list())
        return [v for v in VIEWS if v in present]

    def not_evaluated(self) -> list[str]:
        """Views of the task with no scores: the key has no data in their column."""
        return [v for v in TASK_VIEWS.get(self.task, ()) if v not in self.views()]

    def of(self, name: str, view: str) -> pl.DataFrame:
        """One table's rows for one view."""
        return getattr(self, name).filter(pl.col("view") == view)

    @property
    def many(self) -> bool:
        """More systems than the full tables show (only the subsets people read)."""
        return len(self.systems) > MANY_SYSTEMS


def frequent_labels(corpus: str, label_rows: int = LABEL_ROWS) -> str:
    """SQL filter: the (view, gold_label) among the ``label_rows`` most frequent of a view."""
    w = default_rows(corpus)
    return (f"(view, gold_label) in (select (view, gold_label) from labels where {w} "
            f"group by view, gold_label qualify row_number() over (partition by view "
            f"order by max(n) desc, gold_label) <= {int(label_rows)})")


def load_corpus(read: Read, corpus: str, label_rows: int = LABEL_ROWS) -> CorpusData:
    """The aggregate tables of a corpus (labels: the frequent; oracles: the subsets read)."""
    w = default_rows(corpus)
    meta = read(f"select system, role, format, task from systems where corpus = {lit(corpus)} "
                "order by system")
    key = meta.filter(pl.col("role") == "key")
    systems = meta.filter(pl.col("role") != "key")["system"].to_list()
    n = len(systems)
    sizes = "" if n <= MANY_SYSTEMS else f" and n_systems in (1, 2, {n - 1}, {n})"
    return CorpusData(
        corpus=corpus,
        key_format=key["format"][0] if key.height else "conllu",
        task=key["task"][0] if key.height else "dep",
        systems=systems,
        scores=read(f"select * from scores where {w}"),
        pairs=read(f"select * from pairs where {w}"),
        labels=read(f"select view, system, gold_label, n, n_correct, accuracy from labels "
                    f"where {w} and {frequent_labels(corpus, label_rows)}"),
        oracles=read(f"select view, systems, n_systems, n_units, n_correct, accuracy, "
                     f"best_single, gain from oracles where {w}{sizes}"),
        difficulty=read(f"select view, k_correct, n from difficulty where {w} "
                        "and gold_label is null order by view, k_correct"),
        majority=read(f"select view, systems, n_units, n_correct, accuracy from majority "
                      f"where {w}"),
    )


def oracle_labels(read: Read, data: CorpusData, view: str,
                  subsets: list[list[str]]) -> pl.DataFrame:
    """Per-label oracle rows of a view for the given subsets (frequent labels only)."""
    subsets = [sorted(s) for s in subsets if s]
    if not subsets:
        return pl.DataFrame(schema={"systems": pl.List(pl.String), "gold_label": pl.String,
                                    "n": pl.Int64, "n_correct": pl.Int64})
    sets = ", ".join("[" + ", ".join(lit(x) for x in s) + "]" for s in subsets)
    return read(f"select systems, gold_label, n, n_correct from oracle_labels "
                f"where {view_rows(data.corpus, view)} and list_sort(systems) in ({sets}) "
                f"and {frequent_labels(data.corpus)}")


def pair_filter(pairs: pl.DataFrame) -> str:
    """SQL: (sys1, sys2) is one of the rows of ``pairs``."""
    values = ", ".join(f"({lit(a)}, {lit(b)})" for a, b in pairs.select("sys1", "sys2").rows())
    return f"(sys1, sys2) in (select * from (values {values}))" if values else "false"


def top_changes(read: Read, corpus: str, view: str, pairs: pl.DataFrame,
                top: int = TOP_CHANGES) -> pl.DataFrame:
    """The ``top`` largest change cells per class of each pair of ``pairs``, with their share
    of the class."""
    if pairs.is_empty():
        return pl.DataFrame()
    return read(f"""
        with c as (select sys1, sys2, class, gold, l1, l2, bool_or(attachment) as attachment,
                          sum(count)::bigint as count
                   from changes where {view_rows(corpus, view)} and {pair_filter(pairs)}
                   group by all)
        select *, count / sum(count) over (partition by sys1, sys2, class) as share
        from c qualify row_number() over (partition by sys1, sys2, class
                                          order by count desc, gold, l1, l2) <= {int(top)}
        order by sys1, sys2, class, count desc, gold, l1, l2""")


def largest_change_cells(read: Read, corpus: str, view: str, oriented: pl.DataFrame,
                         k: int) -> pl.DataFrame:
    """Candidate rows for ``summaries.largest_changes``: the ``k`` largest change cells over
    the pairs of ``oriented`` (one direction per pair)."""
    if oriented.is_empty():
        return pl.DataFrame()
    return read(f"""
        select sys1, sys2, class, gold, l1, l2, bool_or(attachment) as attachment,
               sum(count)::bigint as count
        from changes where {view_rows(corpus, view)} and {pair_filter(oriented)} group by all
        order by count desc, sys1, sys2, class, gold, l1, l2 limit {int(k)}""")


# ----------------------------------------------------------------------------- coreference

@dataclass(frozen=True)
class CorefData:
    """The aggregate coreference rows of one corpus."""

    corpus: str
    systems: list[str]
    scores: pl.DataFrame
    arcs: pl.DataFrame
    pairs: pl.DataFrame
    transitions: pl.DataFrame
    words: pl.DataFrame
    oracles: pl.DataFrame
    agreement: pl.DataFrame

    def oriented(self) -> list[tuple[str, str]]:
        """Each unordered pair once, from the lower to the higher CoNLL F1 (then by name)."""
        rank = {s: i for i, s in enumerate(self.systems)}  # best first
        seen = {frozenset(p) for p in self.pairs.select("sys1", "sys2").rows() if p[0] != p[1]}
        return sorted(((max(p, key=rank.get), min(p, key=rank.get)) for p in map(tuple, seen)),
                      key=lambda p: (rank[p[1]], rank[p[0]]))


COREF_TABLES = ("coref_scores", "arcs_scores", "coref_pairs", "coref_transitions",
                "coref_oracles", "coref_agreement")


def load_coref(read: Read, corpus: str, tables: set[str]) -> CorefData | None:
    """The coreference tables of a corpus (bounded aggregate queries), or None without rows."""
    c = lit(corpus)

    def q(table: str, sql: str) -> pl.DataFrame:
        return read(sql) if table in tables else pl.DataFrame()

    scores = q("coref_scores", f"select system, metric, recall, precision, f1, ci_low, ci_high "
               f"from coref_scores "
               f"where corpus = {c} limit {MAX_ROWS}")
    arcs = q("arcs_scores", f"select system, criterion, mtype, tp, fp, fn, wl, tn, precision, "
             f"recall, f1, ci_low, ci_high from arcs_scores where corpus = {c} limit {MAX_ROWS}")
    pairs = q("coref_pairs", f"select criterion, sys1, sys2, n_mentions, n_diff, corrections, "
              f"new_errors, changed_errors, diff from coref_pairs where corpus = {c} "
              f"limit {MAX_ROWS}")
    transitions = q("coref_transitions", f"""
        select criterion, sys1, sys2, c1, c2, sum(count)::bigint as count
        from coref_transitions where corpus = {c} and mtype = 'ALL' and word is null
        group by all limit {MAX_ROWS}""")
    words = q("coref_transitions", f"""
        with w as (select criterion, sys1, sys2, word, c1, c2, sum(count)::bigint as count
                   from coref_transitions where corpus = {c} and word is not null
                     and mtype <> 'NOUN' and c1 <> c2 group by all),
             t as (select criterion, sys1, sys2, word, sum(count)::bigint as total from w
                   group by criterion, sys1, sys2, word
                   qualify row_number() over (partition by criterion, sys1, sys2
                                              order by total desc, word) <= {TOP_WORDS})
        select w.*, t.total from w join t using (criterion, sys1, sys2, word)
        order by criterion, sys1, sys2, total desc, word, count desc, c1, c2""")
    n = scores["system"].n_unique() if scores.height else 0
    sizes = f" and len(systems) in (1, 2, {n - 1}, {n})" if n > MANY_SYSTEMS else ""
    oracles = q("coref_oracles", f"select criterion, systems, mtype, n, n_tp from coref_oracles "
                f"where corpus = {c}{sizes} limit {MAX_ROWS}")
    agreement = q("coref_agreement", f"select sys1, sys2, metric, f1 from coref_agreement "
                  f"where corpus = {c} limit {MAX_ROWS}")
    if all(df.is_empty() for df in (scores, arcs, pairs, oracles, agreement)):
        return None
    names = set()
    for df, cols in ((scores, ["system"]), (arcs, ["system"]), (pairs, ["sys1", "sys2"])):
        for col in cols:
            if col in df.columns:
                names |= set(df[col].to_list())
    conll = dict(scores.filter(pl.col("metric") == "conll").select("system", "f1").rows()) \
        if scores.height else {}
    systems = sorted(names, key=lambda s: (-(conll.get(s) or -1.0), s))
    return CorefData(corpus, systems, scores, arcs, pairs, transitions, words, oracles,
                     agreement)
