"""Token tasks (pos, dep): views over words, their label matrix, and their tables.

A view gives every word of the key a *value* per source (two sources agree on a word iff
their values are equal) and a *display* label (shown in change tables, and the gold label
that groups per-label counts); the views are declared in :mod:`sysdiff.schemas.vocabulary`.
Labels are coded once per corpus (:class:`Vocab`, from the label counts taken at ingest), so
the codes of every shard agree and shard counts add up. Systems are aligned with the key at
ingest (same words, same order): the matrix is N rows stacked, never a join.

``shard_counts`` maps one shard (whole sentences) to engine counts per (view, punctuation
setting); the flow sums them over shards; ``view_tables`` turns the sums into tables.
Sharding cannot change a result: every count is additive and every ratio is taken after the
sum.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from sysdiff.schemas.formats.conllu import KIND_WORD, PTB_PUNCT
from sysdiff.schemas.formats.fast_words import FastWords
from sysdiff.schemas.frozen import FrozenMap
from sysdiff.schemas.vocabulary import KEY_ID, LABEL_FIELDS, VIEWS, view
from sysdiff.transforms import bootstrap, engine, reduce
from sysdiff.transforms.bootstrap import Bootstrap
from sysdiff.transforms.counts import Counts
from sysdiff.transforms.engine import Bucketing, LabelMatrix, smallest_uint
from sysdiff.transforms.significance import AR_TRIALS

WORD_COLUMNS = ["sent", "id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel"]
LENGTH_EDGES = np.array([10, 20, 30, 40, 50])
DISTANCE_EDGES = np.array([1, 2, 3, 4, 7, 11])
FREQ_EDGES = np.array([10, 100, 1000, 10000])
BLANK = "_"


def punct_mask(key_words: pl.DataFrame | Coded, fmt: str, vocab: Vocab | None = None
               ) -> np.ndarray:
    """True for words whose *gold* tag marks punctuation (UPOS PUNCT; PTB set for CoNLL-X);
    coded words need the ``vocab`` of their codes."""
    if isinstance(key_words, Coded):
        mask = np.isin(key_words.labels["upos"], vocab.code_list("upos", ["PUNCT"]))
        if fmt == "conllx":
            mask |= np.isin(key_words.labels["xpos"], vocab.code_list("xpos", PTB_PUNCT))
        return mask
    expr = pl.col("upos") == "PUNCT"
    if fmt == "conllx":
        expr = expr | pl.col("xpos").is_in(list(PTB_PUNCT))
    return key_words.select(expr.fill_null(False))[:, 0].to_numpy()


def bucket_names(edges: np.ndarray) -> list[str]:
    """Fixed names of the buckets cut at ``edges``: '<=10', '11-20', ..., '51+'."""
    names = [f"<={edges[0]}"]
    names += [f"{lo + 1}-{hi}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return [*names, f"{edges[-1] + 1}+"]


BUCKET_NAMES = {"sent_length": bucket_names(LENGTH_EDGES),
                "distance": bucket_names(DISTANCE_EDGES),
                "label_freq": bucket_names(FREQ_EDGES)}


@dataclass(frozen=True)
class Vocab:
    """The corpus-wide sorted labels of each label column, after label mappings (read-only:
    a mapping of tuples)."""

    labels: Mapping[str, Sequence[str]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", FrozenMap(
            {c: tuple(v) for c, v in self.labels.items()}))

    def codes(self, column: str, values: pl.Series) -> np.ndarray:
        """The codes of ``values`` (nulls read as ``_``) in the smallest unsigned type."""
        labels = self.labels[column]
        codes = values.fill_null(BLANK).cast(pl.Enum(labels)).to_physical().to_numpy()
        return codes.astype(smallest_uint(len(labels)), copy=False)

    def code_list(self, column: str, labels: Iterable[str]) -> list[int]:
        """The codes of those ``labels`` the column has."""
        index = {label: i for i, label in enumerate(self.labels[column])}
        return [index[x] for x in labels if x in index]

    def lookup(self, column: str, dictionary: Sequence[str], mapping: Mapping[str, str]
               ) -> np.ndarray:
        """For a file's own codes (positions in its sorted ``dictionary`` of the column),
        the corpus codes of their labels after ``mapping`` (a small array to index with)."""
        labels = self.labels[column]
        index = {label: i for i, label in enumerate(labels)}
        out = np.array([index[mapping.get(x, x)] for x in dictionary], dtype=np.int64)
        return out.astype(smallest_uint(len(labels)))


@dataclass(frozen=True)
class Coded:
    """One source's words of a shard, in the key's order: the corpus code of each label
    column's value (:class:`Vocab`), HEAD (-1 for none), and for the key its sentence and
    ID per word."""

    labels: Mapping[str, np.ndarray]
    head: np.ndarray
    sent: np.ndarray | None = None
    id: np.ndarray | None = None

    @property
    def height(self) -> int:
        return int(self.head.size)


def coded(words: pl.DataFrame | Coded, vocab: Vocab) -> Coded:
    """Words with label strings (the reader's columns) as corpus codes."""
    if isinstance(words, Coded):
        return words
    return Coded({c: vocab.codes(c, words[c]) for c in LABEL_FIELDS},
                 words["head"].fill_null(-1).to_numpy(),
                 words["sent"].to_numpy() if "sent" in words.columns else None,
                 words["id"].to_numpy() if "id" in words.columns else None)


def encode(values: pl.Series) -> tuple[np.ndarray, list[str]]:
    """A file's own codes of a label column: each value's position in the column's sorted
    distinct values (nulls read as ``_``), and those values."""
    filled = values.fill_null(BLANK)
    labels = filled.unique().sort().to_list()
    codes = filled.cast(pl.Enum(labels)).to_physical().to_numpy()
    return codes.astype(np.uint32, copy=False), labels


def vocab_from_counts(counts: pl.DataFrame, mappings: Mapping[str, Mapping[str, str]]
                      ) -> Vocab:
    """The :class:`Vocab` of a corpus from its ``vocab`` rows (system, field, label, n)
    of the key and every system, each source's labels mapped by its mapping (the key's is
    ``@key``)."""
    out: dict[str, set[str]] = {c: {BLANK} for c in LABEL_FIELDS}
    for (system, column), rows in counts.group_by("system", "field"):
        if column not in out:
            continue
        mapping = mappings.get("@key" if system == KEY_ID else system, {})
        out[column].update(mapping.get(x, x) for x in rows["label"])
    return Vocab({c: sorted(v) for c, v in out.items()})


def label_counts(words: pl.DataFrame) -> pl.DataFrame:
    """(field, label, n) of every label column and HEAD of some words (a blank or missing
    value counts as ``_``; heads as their number): what a file can be scored on. The
    columns are counted in one parallel pass."""
    return pl.concat(pl.collect_all([
        words.lazy().select(pl.col(c).cast(pl.String).fill_null(BLANK).alias("label"))
        .group_by("label").agg(pl.len().cast(pl.Int64).alias("n"))
        .select(pl.lit(c).alias("field"), "label", "n")
        for c in (*LABEL_FIELDS, "head")]))


def lean_codes(found: FastWords, extras: Mapping[str, pl.Series] | None = None
               ) -> tuple[pl.DataFrame, dict[str, list[str]]]:
    """The lean store of words read on the key's words (``words``, one row per word in the
    key's order: the file's own code of each label it was read for, HEAD when read; DEPS and
    MISC where given: their values that are not the key's), with each column's dictionary
    (its sorted labels: a code is a position in it). The columns not read are left out:
    they are stored as nulls (:func:`~sysdiff.schemas.tables.with_nulls`)."""
    columns: dict[str, pl.Series] = {}
    dictionaries = {}
    for field in LABEL_FIELDS:
        if field in found.labels:
            codes, dictionaries[field] = found.labels[field]
            columns[field] = pl.Series(field, codes, pl.UInt32)
    if found.head is not None:
        head = pl.Series("head", found.head, pl.Int32)
        columns["head"] = head.set(head < 0, None)
    for name, given in (extras or {}).items():
        columns[name] = given.alias(name)
    return pl.DataFrame(columns), dictionaries


def word_numbers(first: int) -> pl.Expr:
    """``word`` of a file's lines in order: each word's position among the file's words,
    counted from ``first`` (the words of the lines before); null on other lines."""
    word = pl.col("kind") == KIND_WORD
    return (pl.when(word).then(word.cum_sum() - 1 + first).otherwise(None)
            .cast(pl.Int32).alias("word"))


def remap(words: pl.DataFrame, dictionaries: Mapping[str, Sequence[str]],
          union: Mapping[str, Sequence[str]]) -> pl.DataFrame:
    """Lean words coded against ``dictionaries``, recoded against ``union`` (sorted
    dictionaries holding theirs)."""
    changed = [f for f in dictionaries if tuple(dictionaries[f]) != tuple(union[f])]
    return words.with_columns(
        pl.Series(f, np.searchsorted(np.asarray(union[f], dtype=object),
                                     np.asarray(dictionaries[f], dtype=object))
                  .astype(np.uint32)[words[f].to_numpy()], pl.UInt32)
        for f in changed)


def lean_counts(words: pl.DataFrame, dictionaries: Mapping[str, Sequence[str]]
                ) -> dict[str, np.ndarray]:
    """Per field, the count of each code (and of each HEAD + 1, 0 for none) of lean words."""
    out = {f: np.bincount(words[f].to_numpy(), minlength=len(dictionaries[f]))
           for f in dictionaries}
    if "head" in words.columns and words["head"].null_count() < words.height:
        out["head"] = np.bincount(words["head"].fill_null(-1).to_numpy() + 1)
    return out


def lean_vocab(counts: Mapping[str, np.ndarray], dictionaries: Mapping[str, Sequence[str]]
               ) -> pl.DataFrame:
    """``vocab`` rows (field, label, n) of lean words from their summed counts (labels with
    no occurrence left out; HEAD as its number, ``_`` for none)."""
    frames = []
    for field, n in counts.items():
        labels = (list(dictionaries[field]) if field != "head" else
                  [BLANK if h == 0 else str(h - 1) for h in range(n.size)])
        frame = pl.DataFrame({"field": field, "label": labels, "n": n},
                             schema={"field": pl.String, "label": pl.String, "n": pl.Int64})
        frames.append(frame.filter(pl.col("n") > 0))
    return pl.concat(frames) if frames else pl.DataFrame(
        schema={"field": pl.String, "label": pl.String, "n": pl.Int64})


def blank_columns(counts: pl.DataFrame, system: str) -> set[str]:
    """The columns (fields of :func:`label_counts` rows ``system, field, label, n``) whose
    every value is ``_`` in ``system``'s file."""
    mine = counts.filter(pl.col("system") == system)
    have = set(mine.filter(pl.col("label") != BLANK)["field"].to_list())
    return set(mine["field"].to_list()) - have


def apply_mapping(words: pl.DataFrame, mapping: Mapping[str, str]) -> pl.DataFrame:
    """Rename labels ``old -> new`` in every label column (before comparison); HEAD is a
    number and is never mapped."""
    if not mapping:
        return words
    return words.with_columns(pl.col(c).replace(dict(mapping)) for c in LABEL_FIELDS)


@dataclass(frozen=True)
class ShardWords:
    """The key's and the systems' words of one shard, mapped, in the key's order: frames of
    label strings (mapped), or :class:`Coded` words (see :func:`coded`)."""

    key: pl.DataFrame | Coded
    systems: list[pl.DataFrame | Coded]
    first_sent: int  # the shard's first sentence number
    n_sents: int  # sentences of the shard
    sent_lengths: np.ndarray  # words per sentence of the shard
    fmt: str
    #: (systems, words): the system has a word aligned with the key word; None when every
    #: system has the key's tokenisation
    aligned: np.ndarray | None = None

    @property
    def sent(self) -> np.ndarray:
        sent = self.key.sent if isinstance(self.key, Coded) else self.key["sent"].to_numpy()
        return (sent - self.first_sent).astype(np.int32)

    def coded(self, vocab: Vocab) -> ShardWords:
        """The same words, every source coded."""
        return replace(self, key=coded(self.key, vocab),
                       systems=[coded(w, vocab) for w in self.systems])


def view_matrix(name: str, words: ShardWords, vocab: Vocab) -> LabelMatrix:
    """The label matrix of a view over every word of the shard (punctuation included;
    :meth:`LabelMatrix.select` with ``~punct_mask`` excludes it)."""
    v = view(name)
    words = words.coded(vocab)
    sources = [words.key, *words.systems]
    display = [f.labels[v.label] for f in sources]
    n_labels = len(vocab.labels[v.label])
    heads = [f.head for f in sources] if v.dependency else []
    if v.columns == ("head",):
        values = heads
    elif "head" in v.columns:
        values = _pair_codes(heads, display, n_labels)
    else:
        values = display
    n, t = len(words.systems), words.key.height
    stack = (lambda arrays: np.stack(arrays[1:])) if n else (
        lambda arrays: np.empty((0, t), arrays[0].dtype))
    sys_values = stack(values)
    sent = words.sent
    buckets = [Bucketing("sent_length", np.searchsorted(
        LENGTH_EDGES, words.sent_lengths, side="left"), len(LENGTH_EDGES) + 1, True)]
    if v.dependency:
        buckets.append(Bucketing("distance", np.searchsorted(
            DISTANCE_EDGES, _distance(words.key), side="left"), len(DISTANCE_EDGES) + 1))
    return LabelMatrix(
        values=sys_values, correct=sys_values == values[0][None, :], display=stack(display),
        gold=display[0], n_labels=n_labels, n_groups=n_labels, sent=sent,
        n_sents=words.n_sents, head=stack(heads) if v.columns == ("head", v.label) else None,
        buckets=tuple(buckets), aligned=words.aligned)


def _pair_codes(heads: Sequence[np.ndarray], labels: Sequence[np.ndarray], n_labels: int
                ) -> list[np.ndarray]:
    """One integer per (HEAD, label) pair (heads from -1 for none)."""
    top = max(int(h.max(initial=0)) for h in heads) + 2
    dtype = np.int32 if top * n_labels < 1 << 31 else np.int64
    return [(h.astype(dtype) + 1) * n_labels + lab for h, lab in zip(heads, labels, strict=True)]


def _distance(key: Coded) -> np.ndarray:
    """|head - id| of the gold tree (0 for the root), for dependency-distance buckets."""
    return np.where(key.head > 0, np.abs(key.head.astype(np.int64) - key.id), 0).astype(
        np.int32)


# ------------------------------------------------------------------------------ tables

ViewKey = tuple[str, bool]


def shard_counts(words: ShardWords, views: Sequence[str], vocab: Vocab,
                 pairs: Sequence[tuple[int, int]] | None, with_corpus: bool,
                 per_sentence: bool = False) -> dict[ViewKey, Counts]:
    """Engine counts of one shard for every view and punctuation setting. ``pairs`` are
    the system pairs to compare; ``with_corpus`` adds what needs every system (oracles,
    difficulty, majority vote); ``per_sentence`` the per-sentence rows of the bootstrap."""
    words = words.coded(vocab)
    punct = punct_mask(words.key, words.fmt, vocab)
    out = {}
    for name in views:
        m = view_matrix(name, words, vocab)
        for with_punct in VIEWS[name].punct_settings:
            sub = m if with_punct else m.select(~punct)
            out[(name, with_punct)] = engine.shard_counts(
                sub, pairs, with_corpus, with_corpus,
                words.first_sent if per_sentence else None)
    return out


def view_tables(c: Counts, view: str, names: Sequence[str], vocab: Vocab,
                trials: int, seed: int, subset_ids: bool = False,
                missing: Collection[str] = (), samples: np.ndarray | None = None,
                confidence: float = 0.95) -> dict[str, pl.DataFrame]:
    """The tables of one view setting from the counts of the whole corpus (without their
    corpus/view/punct/options columns); pair tables only for the pairs counted, corpus
    tables (oracles, difficulty, majority) only when they were counted. ``subset_ids``:
    see :func:`~sysdiff.transforms.reduce.oracle_frames`; ``missing``: the systems whose
    column of the view is all ``_`` (their scores are NULL, flagged ``missing``);
    ``samples``: the (B x N) bootstrap samples of the accuracies (intervals)."""
    labels = vocab.labels[VIEWS[view].label]
    names = list(names)
    out = {"scores": reduce.scores_frame(c, names, missing, samples, confidence),
           "labels": reduce.labels_frame(c, names, labels, missing)}
    out["buckets"], out["bucket_pairs"] = _buckets(c, names, len(labels), missing)
    if c.pairs is not None and c.pairs.pairs:
        out["pairs"] = reduce.pair_rows(c.pairs, names, c.correct, c.n_units, trials, seed,
                                        missing, samples, confidence)
    if c.oracle is not None:
        union = None
        if c.oracle.masks is None:
            union = reduce.union_from_classes(c.labels, c.pairs, c.oracle, c.gold_n.size,
                                              len(labels))
        out["oracles"], out["oracle_labels"] = reduce.oracle_frames(
            c.oracle, names, labels, c.gold_n, c.labels, union, subset_ids, missing)
        out["difficulty"] = reduce.difficulty_frame(c.oracle, labels)
        out["majority"] = reduce.majority_frame(c, names)
    return out


def change_blocks(c: Counts, view: str, names: Sequence[str], vocab: Vocab
                  ) -> Iterator[pl.DataFrame]:
    """The ``changes`` rows of one view setting, a block of pairs at a time."""
    labels = vocab.labels[VIEWS[view].label]
    if c.pairs is not None:
        yield from reduce.change_blocks(c.pairs, list(names), labels, len(labels))


def _buckets(c: Counts, names: list[str], n_labels: int, missing: Collection[str] = ()
             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-bucket scores and pair classes: sentence length and dependency distance from the
    shards, gold label frequency from the summed per-label counts."""
    units, correct, pair_classes = reduce.frequency_buckets(c, FREQ_EDGES, n_labels)
    by_pair = dict(c.pairs.buckets) if c.pairs is not None else {}
    if pair_classes is not None:
        by_pair["label_freq"] = pair_classes
    return reduce.bucket_frames({**c.bucket_units, "label_freq": units},
                                {**c.bucket_correct, "label_freq": correct}, by_pair, c.pairs,
                                names, BUCKET_NAMES, missing)


def evaluate_words(key: pl.DataFrame, systems: Mapping[str, pl.DataFrame],
                   views: Sequence[str], mappings: Mapping[str, Mapping[str, str]] | None = None,
                   trials: int = AR_TRIALS, seed: int = 0, fmt: str = "conllu",
                   intervals: Bootstrap | None = None
                   ) -> dict[ViewKey, dict[str, pl.DataFrame]]:
    """Every table of ``views`` for words in memory (one shard; the key's and each system's
    words in the same order, with the reader's columns): for notebooks and tests. With
    ``intervals``, the bootstrap intervals too (METRICS 1.6b)."""
    mappings = mappings or {}
    names = list(systems)
    rank = key["sent"].rank("dense").cast(pl.Int32) - 1
    frames = [f.with_columns(sent=rank) for f in [key, *systems.values()]]
    counts = pl.concat([label_counts(f).with_columns(system=pl.lit(s))
                        for s, f in zip([KEY_ID, *names], frames, strict=True)])
    vocab = vocab_from_counts(counts, mappings)
    words = ShardWords(
        key=apply_mapping(frames[0], mappings.get("@key", {})),
        systems=[apply_mapping(f, mappings.get(s, {}))
                 for s, f in zip(names, frames[1:], strict=True)],
        first_sent=0, n_sents=int(rank.max() + 1) if rank.len() else 0,
        sent_lengths=np.bincount(rank.to_numpy()).astype(np.int64), fmt=fmt)
    pairs = engine.all_pairs(len(names))
    blank = {s: blank_columns(counts, s) for s in [KEY_ID, *names]}
    on = intervals is not None and intervals.on
    view_counts = shard_counts(words, views, vocab, pairs, True, per_sentence=on)
    samples = bootstrap.accuracy_samples({k: c.sentences for k, c in view_counts.items()},
                                         intervals) if on else {}
    out = {}
    for key_, c in view_counts.items():
        columns = set(VIEWS[key_[0]].columns)  # flagged where the key has labels
        missing = {s for s in names if columns & blank[s] and not columns & blank[KEY_ID]}
        tables = view_tables(c, key_[0], names, vocab, trials, seed, missing=missing,
                             samples=samples.get(key_),
                             confidence=intervals.confidence if on else 0.95)
        blocks = list(change_blocks(c, key_[0], names, vocab))
        tables["changes"] = pl.concat(blocks) if blocks else pl.DataFrame()
        out[key_] = tables
    return out
