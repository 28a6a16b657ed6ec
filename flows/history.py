"""The ``history`` table of a corpus: every NAME@VERSION against its predecessor and the best
version before it, computed from the scores and pairs the run has just staged."""

from __future__ import annotations

import polars as pl

from sysdiff.flows.spec import RunSpec
from sysdiff.flows.warehouse import Staging, corpus_partition, signature
from sysdiff.transforms.history import PAIR_COLUMNS, history_table

#: Per task: (score table, its score column, filter, grouping column read as ``view``, pair
#: table).
SOURCES = {
    "tokens": ("scores", "accuracy", None, "view", "pairs"),
    "coref": ("arcs_scores", "f1", pl.col("mtype") == "ALL", "criterion", "coref_pairs"),
    "unl": ("unl_scores", "f1", None, "task", "unl_pairs"),
    "spans": ("span_scores", "f1", pl.col("type") == "ALL", "scheme", "span_pairs"),
}


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
    keys = [pl.col(view).alias("view"), *(p.alias("punct") for p in punct)]
    history = history_table(
        scores.select(*keys, "system", pl.col(column).alias("score")),
        pairs.select(*keys, "sys1", "sys2", *PAIR_COLUMNS), ["view", "punct"], spec.versions)
    if history.height:
        stage.write("history", part, sig, history.with_columns(
            pl.lit(spec.corpus).alias("corpus"), pl.lit(spec.task).alias("task")))
