"""The CoNLL 2018 UD shared-task metrics, as the official ``conll18_ud_eval.py`` (v1.2) scores
key and system words.

With the same words on both sides every word is aligned, so the script's "aligned parent word"
is the equal HEAD index (root = 0) and its aligned functional child is the equal word ID:
``conll18_counts`` (additive over sentence shards). With another tokenisation the words are
aligned on the characters of the text first (:mod:`sysdiff.transforms.alignment`), and
``aligned_counts`` maps each system word's head and children through that alignment, as the
script does; Tokens, Sentences and Words are then below 100.
Punctuation is counted; DEPREL is compared without its subtype (``obl:arg`` = ``obl``); FEATS
keeps only the universal features, sorted. A gold lemma ``_`` matches any system lemma.
CLAS, MLAS and BLEX count content words only: recall over the key's, precision over the
system's (so they differ even here); MLAS also compares each word's functional children.

Counts come first (additive over sentence shards), scores last, as in the official script.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.transforms.alignment import Text, span_matches
from sysdiff.transforms.bootstrap import interval

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

SEGMENT_METRICS = ("Tokens", "Sentences", "Words")
WORD_METRICS = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS")
CONTENT_METRICS = ("CLAS", "MLAS", "BLEX")
METRICS = WORD_METRICS + CONTENT_METRICS
#: The metrics a task reports: a tagger has no tree (no UAS ... BLEX).
TAG_METRICS = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")
TASK_METRICS = {"dep": SEGMENT_METRICS + METRICS, "pos": SEGMENT_METRICS + TAG_METRICS}


#: The key columns each metric compares.
METRIC_COLUMNS = {
    "Tokens": (), "Sentences": (), "Words": (), "UPOS": ("upos",), "XPOS": ("xpos",),
    "UFeats": ("feats",), "AllTags": ("upos", "xpos", "feats"), "Lemmas": ("lemma",),
    "UAS": ("head",), "LAS": ("head", "deprel"), "CLAS": ("head", "deprel"),
    "MLAS": ("head", "deprel", "upos", "feats"), "BLEX": ("head", "deprel", "lemma"),
}


RATIO_COLUMNS = ("precision", "recall", "f1", "aligned_accuracy")


def task_rows(scores: pl.DataFrame, task: str, key_blank: set[str],
              intervals: pl.DataFrame | None = None) -> pl.DataFrame:
    """The rows of the metrics ``task`` reports, each with ``key_data``: false when a column
    it compares is ``_`` in every key word (``key_blank``). Such a metric keeps the figure
    the official script prints, except when the key has no HEAD: the script cannot read such
    a key, and every metric of the tree (UAS ... BLEX) is NULL (no number without data).
    ``intervals``: (metric, ci_low, ci_high) of F1 (NULL without, and where F1 is)."""
    blank = [m for m, cols in METRIC_COLUMNS.items() if set(cols) & key_blank]
    treeless = [m for m, cols in METRIC_COLUMNS.items() if "head" in cols and "head" in key_blank]
    no_tree = pl.col("metric").is_in(treeless)
    if intervals is None:
        intervals = pl.DataFrame(schema={"metric": pl.String, "ci_low": pl.Float64,
                                         "ci_high": pl.Float64})
    rows = scores.filter(pl.col("metric").is_in(TASK_METRICS[task])).with_columns(
        *(pl.when(no_tree).then(None).otherwise(pl.col(c)).alias(c) for c in RATIO_COLUMNS),
        key_data=~pl.col("metric").is_in(blank))
    return rows.join(intervals, on="metric", how="left", maintain_order="left").with_columns(
        pl.when(pl.col("f1").is_not_null()).then(pl.col(c)).alias(c)
        for c in ("ci_low", "ci_high"))


def f1_intervals(rows: np.ndarray, metrics: list[str], confidence: float) -> pl.DataFrame:
    """(metric, ci_low, ci_high) of each metric's F1 = 2 correct / (gold + system) from the
    bootstrap sums (B x metrics x 3) of :func:`sentence_counts` rows; Tokens and Sentences
    take Words' (all correct: 1)."""
    f1 = 2 * rows[:, :, 0] / np.where(rows[:, :, 1] + rows[:, :, 2] > 0,
                                      rows[:, :, 1] + rows[:, :, 2], np.nan)
    f1 = np.where(rows[:, :, 1] > 0, f1, np.nan)
    low, high = interval(f1, confidence)
    names = [*metrics, "Tokens", "Sentences"]
    words = metrics.index("Words")
    return pl.DataFrame({"metric": names, "ci_low": [*low, low[words], low[words]],
                         "ci_high": [*high, high[words], high[words]]},
                        schema={"metric": pl.String, "ci_low": pl.Float64,
                                "ci_high": pl.Float64}).fill_nan(None)
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


def _per_value(units: pl.DataFrame, column: str, normalise, name: str) -> pl.Expr:
    """``normalise`` applied to each distinct value of ``column`` once (few, even in large
    corpora) and looked up per word, as ``name``."""
    values = units.get_column(column).unique()
    table = pl.DataFrame({column: values}).select(column, normalise(pl.col(column)).alias(name))
    return pl.col(column).replace(table[column], table[name]).alias(name)


def _normalised(units: pl.DataFrame) -> pl.LazyFrame:
    """The columns the metrics compare: universal feats and deprel, content/functional flags."""
    return (
        units.lazy().select(_UNIT_COLUMNS)
        .with_columns(_per_value(units, "feats", universal_feats, "ufeats"),
                      _per_value(units, "deprel", universal_deprel, "udeprel"))
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


def conll18_matches(key: pl.DataFrame, system: pl.DataFrame,
                    gold: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per word: ``sent``, ``id``, one Boolean per metric (correct or not; a missing value,
    e.g. HEAD ``_``, is never correct), ``gold_content`` and ``system_content`` (whether the
    word counts for CLAS/MLAS/BLEX on the key's and the system's side). ``gold``: the key
    already normalised (when one key is compared with many systems)."""
    _check_same_words(key, system)
    gold = (_normalised(key) if gold is None else gold.lazy())
    predicted = _normalised(system)
    mismatch = _children_mismatch(gold, predicted).with_columns(children_ok=pl.lit(False))
    both = pl.concat([gold, predicted.select(pl.all().name.suffix("_sys"))], how="horizontal")
    return (
        both.join(mismatch, on=["sent", "id"], how="left", maintain_order="left")
        .select(
            "sent",
            "id",
            *_tag_matches(),
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


def _tag_matches() -> list[pl.Expr]:
    """UPOS, XPOS, UFeats and Lemmas of each word (system columns suffixed ``_sys``)."""
    return [_same("upos").alias("UPOS"), _same("xpos").alias("XPOS"),
            _same("ufeats").alias("UFeats"),
            ((pl.col("lemma") == "_") | _same("lemma")).alias("Lemmas")]


def conll18_counts(key: pl.DataFrame, system: pl.DataFrame,
                   gold: pl.DataFrame | None = None) -> pl.DataFrame:
    """Additive counts per metric: ``metric, correct, gold_total, system_total, aligned_total``.

    ``key`` and ``system`` are units frames of the same words in the same order; ``gold``
    the key already normalised (:func:`normalised_key`).
    """
    totals = (
        conll18_matches(key, system, gold)
        .select(
            pl.col(*METRICS, "gold_content", "system_content").sum(),
            words=pl.len(),
        )
        .row(0, named=True)
    )
    words, gold_content = totals["words"], totals["gold_content"]
    gold_n = [words] * len(WORD_METRICS) + [gold_content] * len(CONTENT_METRICS)
    predicted = [words] * len(WORD_METRICS) + [totals["system_content"]] * len(CONTENT_METRICS)
    return _count_frame(list(METRICS), [totals[m] for m in METRICS], gold_n, predicted)


def tag_counts(key: pl.DataFrame, system: pl.DataFrame,
               gold: pl.DataFrame | None = None) -> pl.DataFrame:
    """The counts of the tag metrics only (UPOS, XPOS, UFeats, AllTags, Lemmas: what a
    tagger is scored on), without the tree's joins; equal to :func:`conll18_counts`' rows."""
    _check_same_words(key, system)
    gold = _normalised(key) if gold is None else gold.lazy()
    both = pl.concat([gold.select("upos", "xpos", "ufeats", "lemma"),
                      _normalised(system).select(pl.col("upos", "xpos", "ufeats", "lemma")
                                                 .name.suffix("_sys"))], how="horizontal")
    correct = (both.select(*_tag_matches()).select(
        pl.all().fill_null(False)).with_columns(
        AllTags=pl.col("UPOS") & pl.col("XPOS") & pl.col("UFeats"))
        .select(pl.col(*TAG_METRICS).sum()).collect().row(0, named=True))
    n = key.height
    return _count_frame(list(TAG_METRICS), [correct[m] for m in TAG_METRICS],
                        [n] * len(TAG_METRICS), [n] * len(TAG_METRICS))


def sentence_counts(key: pl.DataFrame, system: pl.DataFrame, gold: pl.DataFrame | None,
                    tree: bool, first: int, n_sents: int) -> np.ndarray:
    """Per sentence of a shard (sentences ``first`` ..), for a system of the key's words:
    (sentences x :data:`METRICS` (or :data:`TAG_METRICS` without ``tree``) and Words) x
    (correct, gold_total, system_total), flattened: the per-sentence rows of the F1
    bootstrap. Words are all correct (and so are Tokens and Sentences: their F1 is 1 in
    every sample); each metric adds up to :func:`conll18_counts` over the sentences."""
    if tree:
        m = conll18_matches(key, system, gold)
        metrics = list(METRICS)
    else:
        _check_same_words(key, system)
        g = _normalised(key) if gold is None else gold.lazy()
        both = pl.concat([g.select("sent", "upos", "xpos", "ufeats", "lemma"),
                          _normalised(system).select(pl.col("upos", "xpos", "ufeats", "lemma")
                                                     .name.suffix("_sys"))],
                         how="horizontal")
        m = both.select("sent", *_tag_matches()).with_columns(
            pl.exclude("sent").fill_null(False)).with_columns(
            AllTags=pl.col("UPOS") & pl.col("XPOS") & pl.col("UFeats")).collect()
        m = m.with_columns(gold_content=pl.lit(False), system_content=pl.lit(False))
        metrics = list(TAG_METRICS)
    sums = sentence_sums(m, [*metrics, "gold_content", "system_content"], first, n_sents)
    gold_content, sys_content, words = sums[:, -3], sums[:, -2], sums[:, -1]
    out = np.zeros((n_sents, len(metrics) + 1, 3), np.int64)
    for k, metric in enumerate(metrics):
        out[:, k, 0] = sums[:, k]
        content = metric in CONTENT_METRICS
        out[:, k, 1] = gold_content if content else words
        out[:, k, 2] = sys_content if content else words
    out[:, -1] = words[:, None]
    return out.reshape(n_sents, -1)


#: The key's normalised column each tagging metric compares (Lemmas: also correct where
#: the key's lemma is ``_``).
_TAG_COLUMNS = {"UPOS": "upos", "XPOS": "xpos", "UFeats": "ufeats", "Lemmas": "lemma"}
_ABSENT, _NULL_SYSTEM, _NULL_GOLD = -2, -3, -4  # never equal to a value's code, or each other


class GoldCodes:
    """A shard's key words as :func:`coded_tag_rows` compares them: per compared column,
    each word's code among the column's distinct values (null: never equal)."""

    def __init__(self, gold: pl.DataFrame, first: int, n_sents: int) -> None:
        self.first = first
        self.sent = gold["sent"].to_numpy().astype(np.int64) - first
        self.id = gold["id"].to_numpy()
        self.n_sents = n_sents
        self.codes: dict[str, np.ndarray] = {}
        self.index: dict[str, dict[str, int]] = {}
        for column in _TAG_COLUMNS.values():
            coded = gold[column].cast(pl.Categorical(pl.Categories.random()))
            values = coded.dtype.categories.to_series().to_list()
            self.index[column] = {v: i for i, v in enumerate(values)}
            self.codes[column] = coded.to_physical().fill_null(_NULL_GOLD).to_numpy().astype(
                np.int64)
        self.blank_lemma = (gold["lemma"] == "_").fill_null(False).to_numpy()
        starts = np.flatnonzero(np.diff(self.sent, prepend=-1))  # sentences in order
        self.starts, self.present = starts, self.sent[starts]
        self.words = np.zeros(n_sents, np.int64)
        self.words[self.present] = np.diff(np.append(starts, self.sent.size))


def coded_tag_rows(gold: GoldCodes, system: pl.DataFrame,
                   dictionaries: dict[str, list[str]]) -> np.ndarray:
    """:func:`sentence_counts` without a tree for a lean system: its words of the shard
    (``sent``, ``id`` and a code per label column into ``dictionaries``; a column without
    a dictionary is ``_`` everywhere) compared code by code, each distinct label normalised
    once (the same rows, in whole-column integer operations)."""
    if system.height != gold.id.size or not (
            (system["id"].to_numpy() == gold.id).all()
            and (system["sent"].to_numpy().astype(np.int64) - gold.first == gold.sent).all()):
        raise InputError(f"the system's words of sentences {gold.first}.. are not the key's")
    correct = {}
    for metric, column in _TAG_COLUMNS.items():
        field = "feats" if column == "ufeats" else column
        mine = _system_codes(system[field], dictionaries.get(field), gold.index[column],
                             column == "ufeats")
        correct[metric] = mine == gold.codes[column]
    correct["Lemmas"] |= gold.blank_lemma
    correct["AllTags"] = correct["UPOS"] & correct["XPOS"] & correct["UFeats"]
    matrix = np.stack([correct[m] for m in TAG_METRICS], axis=1).view(np.uint8)
    out = np.zeros((gold.n_sents, len(TAG_METRICS) + 1, 3), np.int64)
    if gold.starts.size:
        out[gold.present, :-1, 0] = np.add.reduceat(matrix, gold.starts, axis=0,
                                                    dtype=np.int64)
    out[:, :-1, 1] = out[:, :-1, 2] = gold.words[:, None]
    out[:, -1] = gold.words[:, None]
    return out.reshape(gold.n_sents, -1)


def _system_codes(codes: pl.Series, values: list[str] | None, index: dict[str, int],
                  feats: bool) -> np.ndarray:
    """Each word's label as a code of the key's column (``index``): its own label (``_``
    without ``values``), normalised as the key's (universal FEATS); absent from the key's:
    never equal; a null code: never equal."""
    if values is None:
        return np.full(codes.len(), index.get("" if feats else "_", _ABSENT), np.int64)
    labels = pl.Series("v", values, dtype=pl.String)
    if feats:
        labels = pl.DataFrame([labels]).select(universal_feats(pl.col("v"))).to_series()
    lookup = np.array([index.get(v, _ABSENT) for v in labels.to_list()] + [_NULL_SYSTEM],
                      np.int64)
    if codes.null_count():
        codes = codes.fill_null(len(values))
    return lookup[codes.to_numpy()]


def sentence_sums(m: pl.DataFrame, columns: list[str], first: int, n_sents: int
                  ) -> np.ndarray:
    """(n_sents x columns + 1): per sentence ``first`` .. of the words of ``m``, how many
    of them are true in each Boolean column, then how many there are (0 for a sentence
    without a word)."""
    g = m.group_by("sent").agg(pl.col(columns).cast(pl.Int64).sum(), pl.len().alias("_n"))
    out = np.zeros((n_sents, len(columns) + 1), np.int64)
    out[g["sent"].to_numpy().astype(np.int64) - first] = g.select(*columns, "_n").to_numpy()
    return out


def sentence_totals(rows: np.ndarray, tree: bool) -> pl.DataFrame:
    """The counts of :func:`conll18_counts` (:func:`tag_counts` without ``tree``) as the
    sums of a shard's :func:`sentence_counts` rows: the words matched once for both."""
    metrics = list(METRICS if tree else TAG_METRICS)
    sums = rows.reshape(rows.shape[0], len(metrics) + 1, 3).sum(axis=0)[:-1].astype(np.int64)
    return _count_frame(metrics, sums[:, 0].tolist(), sums[:, 1].tolist(), sums[:, 2].tolist())


def sentence_metrics(tree: bool) -> list[str]:
    """The metrics of :func:`sentence_counts`' columns, in order (Words last)."""
    return [*(METRICS if tree else TAG_METRICS), "Words"]


def normalised_key(key: pl.DataFrame) -> pl.DataFrame:
    """The key's words as the metrics compare them, computed once for many systems."""
    return _normalised(key).collect()


def _count_frame(metrics: list[str], correct: list[int], gold: list[int],
                 system: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"metric": metrics, "correct": correct, "gold_total": gold, "system_total": system,
         "aligned_total": gold},  # every gold word is aligned
        schema={"metric": pl.String, **dict.fromkeys(COUNT_COLUMNS, pl.Int64)},
    )


def segment_counts(n_tokens: int, n_sents: int, n_words: int) -> pl.DataFrame:
    """Tokens, Sentences and Words of a system with the key's tokenisation: all correct."""
    totals = (n_tokens, n_sents, n_words)
    return pl.DataFrame({"metric": list(SEGMENT_METRICS), "correct": totals,
                         "gold_total": totals, "system_total": totals,
                         "aligned_total": [None] * 3},
                        schema={"metric": pl.String, **dict.fromkeys(COUNT_COLUMNS, pl.Int64)})


def _words(units: pl.DataFrame) -> pl.DataFrame:
    """The words of a file in order, with ``parent``: the index of the head word (-1 root,
    -2 no head) and the normalised columns the metrics compare."""
    words = units.filter(pl.col("kind") == 0).with_row_index("i").with_columns(
        pl.col("i").cast(pl.Int64))
    parent = (pl.when(pl.col("head").is_null()).then(-2).when(pl.col("head") == 0).then(-1)
              .otherwise(pl.col("i") - pl.col("id") + pl.col("head")))
    return (_normalised(words.select(_UNIT_COLUMNS)).collect()
            .with_columns(i=words["i"], parent=words.select(parent.cast(pl.Int64))[:, 0]))


def aligned_counts(key_units: pl.DataFrame, sys_units: pl.DataFrame, to_key: np.ndarray,
                   key_text: Text, sys_text: Text) -> pl.DataFrame:
    """Counts of every metric (Tokens ... BLEX) of a system aligned with the key on the
    characters: ``to_key[s]`` is the key word aligned with system word s (-1: none)."""
    gold, system = _words(key_units), _words(sys_units)
    pairs = np.flatnonzero(to_key >= 0)
    g_idx = to_key[pairs]
    g = gold[g_idx]
    s = system[pairs]
    s_parent = s["parent"].to_numpy()
    mapped = np.where(s_parent == -1, -1, np.where(s_parent < 0, -3, to_key[np.maximum(
        s_parent, 0)]))
    mapped = np.where((s_parent >= 0) & (mapped < 0), -4, mapped)  # head not aligned
    children_ok = ~np.isin(g_idx, _children_mismatch_aligned(gold, system, to_key))
    cmp = pl.DataFrame({
        "UPOS": (g["upos"] == s["upos"]).to_numpy(),
        "XPOS": (g["xpos"] == s["xpos"]).to_numpy(),
        "UFeats": (g["ufeats"] == s["ufeats"]).to_numpy(),
        "Lemmas": ((g["lemma"] == "_") | (g["lemma"] == s["lemma"])).to_numpy(),
        "UAS": mapped == g["parent"].to_numpy(),
        "same_deprel": (g["udeprel"] == s["udeprel"]).to_numpy(),
        "content": g["content"].to_numpy(), "children_ok": children_ok,
    }).with_columns(pl.exclude("content", "children_ok").fill_null(False)).with_columns(
        AllTags=pl.col("UPOS") & pl.col("XPOS") & pl.col("UFeats"),
        LAS=pl.col("UAS") & pl.col("same_deprel"),
    ).with_columns(CLAS=pl.col("LAS") & pl.col("content")).with_columns(
        MLAS=pl.col("CLAS") & pl.col("UPOS") & pl.col("UFeats") & pl.col("children_ok"),
        BLEX=pl.col("CLAS") & pl.col("Lemmas"))
    correct = cmp.select(pl.col(*METRICS).sum()).row(0, named=True)
    n_aligned, aligned_content = pairs.size, int(cmp["content"].sum())
    gold_content, sys_content = int(gold["content"].sum()), int(system["content"].sum())
    rows = [
        ("Tokens", span_matches(key_text.token_start, key_text.token_end,
                                sys_text.token_start, sys_text.token_end),
         key_text.token_start.size, sys_text.token_start.size, None),
        ("Sentences", span_matches(key_text.sent_start, key_text.sent_end,
                                   sys_text.sent_start, sys_text.sent_end),
         key_text.sent_start.size, sys_text.sent_start.size, None),
        ("Words", n_aligned, gold.height, system.height, None),
    ]
    rows += [(m, correct[m], gold.height, system.height, n_aligned) for m in WORD_METRICS]
    rows += [(m, correct[m], gold_content, sys_content, aligned_content)
             for m in CONTENT_METRICS]
    return pl.DataFrame(rows, schema={"metric": pl.String, **dict.fromkeys(COUNT_COLUMNS,
                                                                          pl.Int64)},
                        orient="row")


def _children_mismatch_aligned(gold: pl.DataFrame, system: pl.DataFrame,
                               to_key: np.ndarray) -> np.ndarray:
    """Key words whose functional children differ from their aligned system word's: the
    system's children mapped into key words (an unaligned child matches nothing)."""
    cols = ["parent", "child", "udeprel", "upos", "ufeats"]
    g = gold.filter(pl.col("functional") & (pl.col("parent") >= 0)).select(
        "parent", pl.col("i").alias("child"), "udeprel", "upos", "ufeats")
    s = system.filter(pl.col("functional") & (pl.col("parent") >= 0))
    parent = to_key[s["parent"].to_numpy()]
    child = to_key[s["i"].to_numpy()]
    s = s.select(pl.Series("parent", parent), pl.Series("child", np.where(child < 0, -9,
                                                                          child)),
                 "udeprel", "upos", "ufeats").filter(pl.col("parent") >= 0)
    one_sided = pl.concat([g.join(s, on=cols, how="anti", nulls_equal=True),
                           s.join(g, on=cols, how="anti", nulls_equal=True)])
    return one_sided["parent"].unique().to_numpy()


def _ratio(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """numerator / denominator; NULL when the denominator is 0 (the official script prints
    0.0 there: no number without data)."""
    return pl.when(denominator > 0).then(numerator / denominator)


def conll18_scores(counts: pl.DataFrame) -> pl.DataFrame:
    """``metric, precision, recall, f1, aligned_accuracy`` from counts, summed per metric first
    (so ``counts`` may hold one block per shard)."""
    c, g, s = pl.col("correct"), pl.col("gold_total"), pl.col("system_total")
    aligned = pl.col("aligned_total")
    return (
        counts.group_by("metric", maintain_order=True)
        .agg(pl.col(COUNT_COLUMNS[:3]).sum(),
             pl.when(aligned.is_not_null().any()).then(aligned.sum()).alias("aligned_total"))
        .select(
            "metric",
            precision=_ratio(c, s),
            recall=_ratio(c, g),
            f1=pl.when(g > 0).then(_ratio(2 * c, s + g)),  # NULL: no key unit to find
            # Tokens, Sentences and Words have none (the official script leaves it blank)
            aligned_accuracy=pl.when(aligned.is_not_null()).then(_ratio(c, aligned)),
        )
    )
