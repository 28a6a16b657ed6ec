"""The ``history`` table of a corpus: every NAME@VERSION against its predecessor and the best
version before it, computed from the scores and pairs the run has just staged."""

from __future__ import annotations

import polars as pl

from sysdiff.flows.spec import RunSpec
from sysdiff.flows.warehouse import Staging, corpus_partition, signature
from sysdiff.transforms.history import PAIR_COLUMNS, history_table

#: The srl score of each unit type's history: the mode whose ALL figure it is.
SRL_UNIT_OF_MODE = {"args_labeled": "argument", "span": "argument",
                    "predicates_labeled": "predicate", "predicates": "predicate"}
#: Per task: (score table, its score column, filter, what is read as ``view``: a column of
#: both tables, or (an expression over the scores, a column of the pairs), pair table).
SOURCES = {
    "tokens": ("scores", "accuracy", None, "view", "pairs"),
    "coref": ("arcs_scores", "f1", pl.col("mtype") == "ALL", "criterion", "coref_pairs"),
    "unl": ("unl_scores", "f1", None, "task", "unl_pairs"),
    "spans": ("span_scores", "f1", pl.col("type") == "ALL", "scheme", "span_pairs"),
    # srl: the official arguments F1 (view argument) and predicates F1 (view predicate)
    "srl": ("srl_scores", "f1", pl.col("mode").is_in(list(SRL_UNIT_OF_MODE))
            & (pl.col("role") == "ALL") & pl.col("ppos").is_null(),
            (pl.col("mode").replace_strict(SRL_UNIT_OF_MODE, default=None), "unit"),
            "srl_pairs"),
}


def _views(view: str | tuple[pl.Expr, str]) -> tuple[pl.Expr, pl.Expr]:
    """What the scores and the pairs read as a history's ``view``."""
    if isinstance(view, str):
        return pl.col(view), pl.col(view)
    return view[0], pl.col(view[1])


def stage_history(spec: RunSpec, stage: Staging, kind: str, corpus_sig: str) -> None:
    """Stage the corpus' history table when its inputs or the version order changed (no
    table when no system is named NAME@VERSION)."""
    sig = signature(corpus_sig, sorted(spec.versions.items()))
    part = corpus_partition(spec.corpus)
    if stage.has("history", part, sig):
        return
    score_table, column, where, view, pair_table = SOURCES[kind]
    mine = pl.col("corpus") == spec.corpus
    scores = stage.read(score_table, mine if where is None else mine & where)
    pairs = stage.read(pair_table, mine)
    if not scores["system"].str.contains("@").any():
        return
    punct = [pl.col("punct")] if "punct" in scores.columns else [pl.lit(None, pl.Boolean)]
    score_view, pair_view = _views(view)
    keys = [score_view.alias("view"), *(p.alias("punct") for p in punct)]
    pair_keys = [pair_view.alias("view"), *(p.alias("punct") for p in punct)]
    history = history_table(
        scores.select(*keys, "system", pl.col(column).alias("score"), "ci_low", "ci_high"),
        pairs.select(*pair_keys, "sys1", "sys2", *PAIR_COLUMNS), ["view", "punct"],
        spec.versions)
    if history.height:
        stage.write("history", part, sig, history.with_columns(
            pl.lit(spec.corpus).alias("corpus"), pl.lit(spec.task).alias("task")))
