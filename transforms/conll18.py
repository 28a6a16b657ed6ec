"""The CoNLL 2018 UD shared-task metrics, as the official ``conll18_ud_eval.py`` (v1.2) scores
identically tokenised key and system words.

With the same words on both sides every word is aligned, so the script's "aligned parent word"
is the equal HEAD index (root = 0) and its aligned functional child is the equal word ID.
Punctuation is counted; DEPREL is compared without its subtype (``obl:arg`` = ``obl``); FEATS
keeps only the universal features, sorted. A gold lemma ``_`` matches any system lemma.
CLAS, MLAS and BLEX count content words only: recall over the key's, precision over the
system's (so they differ even here); MLAS also compares each word's functional children.

Counts come first (additive over sentence shards), scores last, as in the official script.
"""

from __future__ import annotations

import polars as pl

from sysdiff.schemas.errors import InputError

# The official script's relation and feature sets.
CONTENT_DEPRELS = (
    "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl", "dislocated",
    "advcl", "advmod", "discourse", "nmod", "appos", "nummod", "acl", "amod", "conj", "fixed",
    "flat", "compound", "list", "parataxis", "orphan", "goeswith", "reparandum", "root", "dep",
)  # fmt: skip
FUNCTIONAL_DEPRELS = ("aux", "cop", "mark", "det", "clf", "case", "cc")
UNIVERSAL_FEATURES = (
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number",
    "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident",
    "Polarity", "Person", "Polite",
)  # fmt: skip

WORD_METRICS = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS")
CONTENT_METRICS = ("CLAS", "MLAS", "BLEX")
METRICS = WORD_METRICS + CONTENT_METRICS
COUNT_COLUMNS = ("correct", "gold_total", "system_total", "aligned_total")

_UNIT_COLUMNS = ("sent", "id", "head", "lemma", "upos", "xpos", "feats", "deprel")
_CHILD_KEY = ("sent", "parent", "id", "udeprel", "upos", "ufeats")


def universal_feats(feats: pl.Expr) -> pl.Expr:
    """FEATS reduced to the universal features, sorted and joined by ``|`` (``_`` -> "")."""
    name = pl.element().str.replace(r"=.*", "")
    kept = pl.element().filter(name.is_in(UNIVERSAL_FEATURES))
    return feats.str.split("|").list.eval(kept).list.sort().list.join("|")


def universal_deprel(deprel: pl.Expr) -> pl.Expr:
    """DEPREL without its language-specific subtype (the part from the first ``:``)."""
    return deprel.str.replace(r":.*", "")


def _with_universal_feats(units: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``ufeats``, computed once per distinct FEATS value (few, even in large corpora)."""
    table = units.select(pl.col("feats").unique()).with_columns(
        ufeats=universal_feats(pl.col("feats"))
    )
    return units.join(table, on="feats", how="left", maintain_order="left")


def _normalised(units: pl.DataFrame) -> pl.LazyFrame:
    """The columns the metrics compare: universal feats and deprel, content/functional flags."""
    return (
        _with_universal_feats(units.lazy().select(_UNIT_COLUMNS))
        .with_columns(udeprel=universal_deprel(pl.col("deprel")))
        .with_columns(
            content=pl.col("udeprel").is_in(CONTENT_DEPRELS),
            functional=pl.col("udeprel").is_in(FUNCTIONAL_DEPRELS),
        )
    )


def _functional_children(words: pl.LazyFrame) -> pl.LazyFrame:
    """One row per non-root word with a functional deprel, keyed by its parent word."""
    return words.filter(pl.col("functional") & (pl.col("head") != 0)).select(
        "sent", pl.col("head").alias("parent"), "id", "udeprel", "upos", "ufeats"
    )


def _children_mismatch(key: pl.LazyFrame, system: pl.LazyFrame) -> pl.LazyFrame:
    """(sent, id) of the words whose functional children differ between key and system.

    Children are unique per parent (by word ID), so the script's ordered lists are equal
    exactly when no child tuple is found on one side only.
    """
    gold, predicted = _functional_children(key), _functional_children(system)
    one_sided = pl.concat(
        [
            gold.join(predicted, on=_CHILD_KEY, how="anti"),
            predicted.join(gold, on=_CHILD_KEY, how="anti"),
        ]
    )
    return one_sided.select("sent", pl.col("parent").alias("id")).unique()


def _check_same_words(key: pl.DataFrame, system: pl.DataFrame) -> None:
    """Refuse frames that are not the same words in the same order."""
    if key.height != system.height:
        raise InputError(f"key has {key.height} words, system has {system.height}")
    differs = (key["sent"] != system["sent"]) | (key["id"] != system["id"])
    if differs.any():
        row = int(differs.arg_true()[0])
        raise InputError(
            f"word {row}: key has sentence {key['sent'][row]} word {key['id'][row]}, "
            f"system has sentence {system['sent'][row]} word {system['id'][row]}"
        )


def _same(column: str) -> pl.Expr:
    """Key and system agree on ``column`` (system columns carry the suffix ``_sys``)."""
    return pl.col(column) == pl.col(f"{column}_sys")


def conll18_matches(key: pl.DataFrame, system: pl.DataFrame) -> pl.DataFrame:
    """Per word: ``sent``, ``id``, one Boolean per metric (correct or not; a missing value,
    e.g. HEAD ``_``, is never correct), ``gold_content`` and ``system_content`` (whether the
    word counts for CLAS/MLAS/BLEX on the key's and the system's side)."""
    _check_same_words(key, system)
    gold, predicted = _normalised(key), _normalised(system)
    mismatch = _children_mismatch(gold, predicted).with_columns(children_ok=pl.lit(False))
    both = pl.concat([gold, predicted.select(pl.all().name.suffix("_sys"))], how="horizontal")
    return (
        both.join(mismatch, on=["sent", "id"], how="left", maintain_order="left")
        .select(
            "sent",
            "id",
            UPOS=_same("upos"),
            XPOS=_same("xpos"),
            UFeats=_same("ufeats"),
            Lemmas=(pl.col("lemma") == "_") | _same("lemma"),
            UAS=_same("head"),
            same_deprel=_same("udeprel"),
            children_ok=pl.col("children_ok").fill_null(True),
            gold_content=pl.col("content"),
            system_content=pl.col("content_sys"),
        )
        .with_columns(
            AllTags=pl.col("UPOS") & pl.col("XPOS") & pl.col("UFeats"),
            LAS=pl.col("UAS") & pl.col("same_deprel"),
        )
        .with_columns(CLAS=pl.col("LAS") & pl.col("gold_content"))
        .with_columns(
            MLAS=pl.col("CLAS") & pl.col("UPOS") & pl.col("UFeats") & pl.col("children_ok"),
            BLEX=pl.col("CLAS") & pl.col("Lemmas"),
        )
        .select("sent", "id", pl.col(*METRICS).fill_null(False), "gold_content", "system_content")
        .collect()
    )


def conll18_counts(key: pl.DataFrame, system: pl.DataFrame) -> pl.DataFrame:
    """Additive counts per metric: ``metric, correct, gold_total, system_total, aligned_total``.

    ``key`` and ``system`` are units frames of the same words in the same order.
    """
    totals = (
        conll18_matches(key, system)
        .select(
            pl.col(*METRICS, "gold_content", "system_content").sum(),
            words=pl.len(),
        )
        .row(0, named=True)
    )
    words, gold_content = totals["words"], totals["gold_content"]
    gold = [words] * len(WORD_METRICS) + [gold_content] * len(CONTENT_METRICS)
    predicted = [words] * len(WORD_METRICS) + [totals["system_content"]] * len(CONTENT_METRICS)
    return pl.DataFrame(
        {
            "metric": list(METRICS),
            "correct": [totals[metric] for metric in METRICS],
            "gold_total": gold,
            "system_total": predicted,
            "aligned_total": gold,  # every gold word is aligned
        },
        schema={"metric": pl.String, **dict.fromkeys(COUNT_COLUMNS, pl.Int64)},
    )


def _ratio(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """numerator / denominator, 0.0 when the denominator is 0 (as the official script)."""
    return pl.when(denominator > 0).then(numerator / denominator).otherwise(0.0)


def conll18_scores(counts: pl.DataFrame) -> pl.DataFrame:
    """``metric, precision, recall, f1, aligned_accuracy`` from counts, summed per metric first
    (so ``counts`` may hold one block per shard)."""
    c, g, s = pl.col("correct"), pl.col("gold_total"), pl.col("system_total")
    return (
        counts.group_by("metric", maintain_order=True)
        .agg(pl.col(COUNT_COLUMNS).sum())
        .select(
            "metric",
            precision=_ratio(c, s),
            recall=_ratio(c, g),
            f1=_ratio(2 * c, s + g),
            aligned_accuracy=_ratio(c, pl.col("aligned_total")),
        )
    )
