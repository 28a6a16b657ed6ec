"""Token tasks (pos, dep): the counts of one shard for every view, and the published tables.

``shard_counts`` maps one shard (whole sentences) to engine counts per (view, punctuation
setting); the flow sums them over shards; ``view_tables`` turns the sums into tables. Sharding
cannot change a result: every count is additive and every ratio is taken after the sum.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import KEY_ID, VIEWS
from sysdiff.transforms import engine, reduce
from sysdiff.transforms.significance import AR_TRIALS
from sysdiff.transforms.views import (
    BUCKET_NAMES,
    FREQ_EDGES,
    ShardWords,
    Vocab,
    apply_mapping,
    label_counts,
    punct_mask,
    view_matrix,
    vocab_from_counts,
)

ViewKey = tuple[str, bool]


def shard_counts(words: ShardWords, views: Sequence[str], vocab: Vocab,
                 pairs: Sequence[tuple[int, int]] | None, with_corpus: bool
                 ) -> dict[ViewKey, engine.Counts]:
    """Engine counts of one shard for every view and punctuation setting. ``pairs`` are
    the system pairs to compare; ``with_corpus`` adds what needs every system (oracles,
    difficulty, majority vote)."""
    punct = punct_mask(words.key, words.fmt)
    out = {}
    for view in views:
        m = view_matrix(view, words, vocab)
        for with_punct in VIEWS[view].punct_settings:
            sub = m if with_punct else m.select(~punct)
            out[(view, with_punct)] = engine.shard_counts(sub, pairs, with_corpus, with_corpus)
    return out


def view_tables(c: engine.Counts, view: str, names: Sequence[str], vocab: Vocab,
                trials: int, seed: int) -> dict[str, pl.DataFrame]:
    """The tables of one view setting from the counts of the whole corpus (without their
    corpus/view/punct/options columns); pair tables only for the pairs counted, corpus
    tables (oracles, difficulty, majority) only when they were counted."""
    labels = vocab.labels[VIEWS[view].label]
    names = list(names)
    out = {"scores": reduce.scores_frame(c, names),
           "labels": reduce.labels_frame(c, names, labels)}
    out["buckets"], out["bucket_pairs"] = _buckets(c, names, len(labels))
    if c.pairs is not None and c.pairs.pairs:
        out["pairs"] = reduce.pair_rows(c.pairs, names, c.correct, c.n_units, trials, seed)
    if c.oracle is not None:
        union = None
        if c.oracle.masks is None:
            by_group = reduce.class_counts_by_group(c.pairs, c.gold_n.size, len(labels))
            union = reduce.union_from_classes(c.labels, by_group, c.pairs.pairs, len(names))
        out["oracles"], out["oracle_labels"] = reduce.oracle_frames(
            c.oracle, names, labels, c.gold_n, c.labels, union)
        out["difficulty"] = reduce.difficulty_frame(c.oracle, labels)
        out["majority"] = reduce.majority_frame(c, names)
    return out


def change_blocks(c: engine.Counts, view: str, names: Sequence[str], vocab: Vocab
                  ) -> Iterator[pl.DataFrame]:
    """The ``changes`` rows of one view setting, a block of pairs at a time."""
    labels = vocab.labels[VIEWS[view].label]
    if c.pairs is not None:
        yield from reduce.change_blocks(c.pairs, list(names), labels, len(labels))


def _buckets(c: engine.Counts, names: list[str], n_labels: int
             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-bucket scores and pair classes: sentence length and dependency distance from the
    shards, gold label frequency from the summed per-label counts."""
    units, correct, pair_classes = reduce.frequency_buckets(c, FREQ_EDGES, n_labels)
    by_pair = dict(c.pairs.buckets) if c.pairs is not None else {}
    if pair_classes is not None:
        by_pair["label_freq"] = pair_classes
    return reduce.bucket_frames({**c.bucket_units, "label_freq": units},
                                {**c.bucket_correct, "label_freq": correct}, by_pair, c.pairs,
                                names, BUCKET_NAMES)


def evaluate_words(key: pl.DataFrame, systems: Mapping[str, pl.DataFrame],
                   views: Sequence[str], mappings: Mapping[str, Mapping[str, str]] | None = None,
                   trials: int = AR_TRIALS, seed: int = 0, fmt: str = "conllu"
                   ) -> dict[ViewKey, dict[str, pl.DataFrame]]:
    """Every table of ``views`` for words in memory (one shard; the key's and each system's
    words in the same order, with the reader's columns): for notebooks and tests."""
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
    out = {}
    for key_, c in shard_counts(words, views, vocab, pairs, True).items():
        tables = view_tables(c, key_[0], names, vocab, trials, seed)
        blocks = list(change_blocks(c, key_[0], names, vocab))
        tables["changes"] = pl.concat(blocks) if blocks else pl.DataFrame()
        out[key_] = tables
    return out
