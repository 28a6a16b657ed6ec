"""Arrow schemas of every warehouse table: the one place where table shapes are defined."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

S, I32, I64, F64, B = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()
LIST_S = pa.list_(pa.string())
VIEW_KEYS = [("corpus", S), ("view", S), ("punct", B)]


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema(list(fields))


TOKEN_TABLES: dict[str, pa.Schema] = {
    "systems": _schema(
        ("corpus", S), ("system", S), ("version", S), ("task", S), ("role", S), ("format", S),
        ("path", S), ("sha256", S), ("n_docs", I64), ("n_sents", I64), ("n_units", I64),
        ("ingested_at", pa.timestamp("us", tz="UTC")),
    ),
    "units": _schema(
        ("corpus", S), ("system", S), ("sent", I32), ("id", I32), ("token_id", S),
        ("kind", pa.int8()), ("form", S), ("lemma", S), ("upos", S), ("xpos", S), ("feats", S),
        ("head", I32), ("deprel", S), ("deps", S), ("misc", S), ("line", I32),
    ),
    "sents": _schema(
        ("corpus", S), ("system", S), ("sent", I32), ("sent_id", S), ("doc", I32),
        ("doc_id", S), ("text", S), ("n_words", I32), ("line", I32),
    ),
    "scores": _schema(
        *VIEW_KEYS, ("system", S), ("n_units", I64), ("n_correct", I64), ("accuracy", F64),
        ("n_sents", I64), ("n_sents_exact", I64), ("sent_exact", F64), ("options", S),
    ),
    "labels": _schema(
        *VIEW_KEYS, ("system", S), ("gold_label", S), ("n", I64), ("n_correct", I64),
        ("accuracy", F64), ("options", S),
    ),
    "pairs": _schema(
        *VIEW_KEYS, ("sys1", S), ("sys2", S), ("n_units", I64), ("n_diff", I64),
        ("corrections", I64), ("new_errors", I64), ("changed_errors", I64), ("diff", F64),
        ("delta_acc", F64), ("mcnemar_p", F64), ("ar_p", F64), ("diff_head_only", I64),
        ("diff_label_only", I64), ("diff_both", I64), ("options", S),
    ),
    "changes": _schema(
        *VIEW_KEYS, ("sys1", S), ("sys2", S), ("class", S), ("gold", S), ("l1", S), ("l2", S),
        ("attachment", B), ("count", I64), ("options", S),
    ),
    "oracles": _schema(
        *VIEW_KEYS, ("systems", LIST_S), ("n_systems", I64), ("n_units", I64),
        ("n_correct", I64), ("accuracy", F64), ("best_single", I64), ("gain", F64),
        ("options", S),
    ),
    "oracle_labels": _schema(
        *VIEW_KEYS, ("systems", LIST_S), ("gold_label", S), ("n", I64), ("n_correct", I64),
        ("options", S),
    ),
    "difficulty": _schema(
        *VIEW_KEYS, ("k_correct", I32), ("gold_label", S), ("n", I64), ("options", S),
    ),
    "majority": _schema(
        *VIEW_KEYS, ("systems", LIST_S), ("n_units", I64), ("n_correct", I64),
        ("accuracy", F64), ("options", S),
    ),
    "buckets": _schema(
        *VIEW_KEYS, ("kind", S), ("bucket", S), ("system", S), ("n_units", I64),
        ("n_correct", I64), ("accuracy", F64), ("options", S),
    ),
    "bucket_pairs": _schema(
        *VIEW_KEYS, ("kind", S), ("bucket", S), ("sys1", S), ("sys2", S), ("n_units", I64),
        ("corrections", I64), ("new_errors", I64), ("changed_errors", I64), ("options", S),
    ),
    "conll18": _schema(
        ("corpus", S), ("system", S), ("metric", S), ("correct", I64), ("gold_total", I64),
        ("system_total", I64), ("aligned_total", I64), ("precision", F64), ("recall", F64),
        ("f1", F64), ("aligned_accuracy", F64),
    ),
}


def all_tables() -> dict[str, pa.Schema]:
    """Every table the warehouse knows: token tables plus coreference and UNL tables."""
    tables = dict(TOKEN_TABLES)
    for module in ("schemas.coref", "schemas.unl"):
        try:
            mod = __import__(module, fromlist=["TABLES"])
        except ImportError:
            continue
        tables.update(getattr(mod, "TABLES", {}))
    return tables


def conform(df: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """Select and cast ``df``'s columns to ``schema`` (missing columns are an error)."""
    missing = [f.name for f in schema if f.name not in df.columns]
    if missing:
        raise ValueError(f"table is missing columns {missing}")
    return df.select(schema.names).to_arrow().cast(schema)
