"""Spans (METRICS 5): span scores, span classes, and the comparison of systems over span
units with the shared engine (spans come from :mod:`sysdiff.transforms.span_decoding`).

- :func:`classify` gives every key span its class under a system (correct, type, boundary,
  missed) and finds the system's spurious spans (overlapping no key span).
- :func:`comparison_counts` builds the engine's label matrix over the span units of a shard
  (key spans and the spurious spans of any system; values are class codes, correct =
  correct or absent, group = type, ``sent`` = the sentence) and returns additive counts;
  :func:`merge_counts` sums shards and the ``*_rows`` functions of
  :mod:`sysdiff.transforms.span_tables` make the tables.

Everything is additive over sentences (and so over shards of sentences); ratios come last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import SPAN_CLASSES, SPAN_CORRECT
from sysdiff.transforms.bootstrap import UnitRows
from sysdiff.transforms.counts import Sparse
from sysdiff.transforms.engine import (
    MAX_ALL_SUBSETS,
    LabelMatrix,
    oracle_counts,
    pair_counts,
    transition_counts,
)
from sysdiff.transforms.span_decoding import SPAN_COLUMNS

CORRECT, TYPE, BOUNDARY, MISSED, SPURIOUS, ABSENT = range(6)
N_CLASSES = len(SPAN_CLASSES)
_IS_CORRECT = np.array([c in SPAN_CORRECT for c in SPAN_CLASSES])
#: Offsets of the per-sentence (TP, predicted) differences kept for the randomization test.
_D = 1 << 20

# ------------------------------------------------------------------------------ classes


def _positions(spans: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each span as one sortable integer (sentence, then token; or the
    ``pos_start``/``pos_end`` characters when spans are compared by characters, see
    :mod:`sysdiff.transforms.span_alignment`)."""
    if "pos_start" in spans.columns:
        return spans["pos_start"].to_numpy(), spans["pos_end"].to_numpy()
    sent = spans["sent"].to_numpy().astype(np.int64) << 32
    return sent | spans["start"].to_numpy(), sent | spans["end"].to_numpy()


def _first_overlap(a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray,
                   b_end: np.ndarray) -> np.ndarray:
    """For each span a, the index of the first span of b (sorted, disjoint) that overlaps
    it, or -1."""
    j = np.searchsorted(b_end, a_start, side="left")
    ok = j < b_end.size
    ok[ok] &= b_start[j[ok]] <= a_end[ok]
    return np.where(ok, j, -1)


def classify(key: pl.DataFrame, resp: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(classes of the key spans, the response's spurious spans) (METRICS 5.2).

    Both frames hold sorted, disjoint spans (``sent``, ``start``, ``end``, ``type``). A key
    span is ``correct`` (a response span with its boundaries and type), ``type`` (its
    boundaries, another type), ``boundary`` (an overlapping span with other boundaries) or
    ``missed``; ``pred_*`` give the response span concerned (the first overlapping one). A
    response span that overlaps no key span is spurious.
    """
    ks, ke = _positions(key)
    rs, re_ = _positions(resp)
    j = _first_overlap(ks, ke, rs, re_)
    hit = j >= 0
    jj = np.where(hit, j, 0)
    same = hit & (rs[jj] == ks) & (re_[jj] == ke) if resp.height else hit
    rtype = resp["type"].gather(jj) if resp.height else pl.Series([None] * key.height,
                                                                   dtype=pl.String)
    same_type = (rtype == key["type"]).fill_null(False).to_numpy() if key.height else hit
    cls = np.where(same & same_type, CORRECT, np.where(same, TYPE,
                                                       np.where(hit, BOUNDARY, MISSED)))
    pred = resp.select(pred_start="start", pred_end="end", pred_type="type")[jj] \
        if resp.height else pl.DataFrame({"pred_start": [None] * key.height,
                                          "pred_end": [None] * key.height,
                                          "pred_type": [None] * key.height},
                                         schema={"pred_start": pl.Int32, "pred_end": pl.Int32,
                                                 "pred_type": pl.String})
    none = pl.lit(None)
    classes = pl.concat([key.select(*SPAN_COLUMNS, *(["text"] if "text" in key.columns
                                                      else [])), pred], how="horizontal")
    classes = classes.with_columns(
        cls=pl.Series(cls.astype(np.uint8)),
        pred_start=pl.when(pl.Series(hit)).then(pl.col("pred_start")).otherwise(none),
        pred_end=pl.when(pl.Series(hit)).then(pl.col("pred_end")).otherwise(none),
        pred_type=pl.when(pl.Series(hit)).then(pl.col("pred_type")).otherwise(none))
    spurious = resp.filter(pl.Series(_first_overlap(rs, re_, ks, ke) < 0))
    return classes, spurious


def class_rows(classes: pl.DataFrame, spurious: pl.DataFrame) -> pl.DataFrame:
    """The ``span_classes`` rows of one system: its key span classes and its spurious spans,
    in document order (``cls`` by name)."""
    names = pl.Series(SPAN_CLASSES, dtype=pl.String)
    if "text" not in classes.columns:       # spans without their words
        classes = classes.with_columns(text=pl.lit(None, pl.String))
        spurious = spurious.with_columns(text=pl.lit(None, pl.String))
    key = classes.with_columns(in_key=pl.lit(True), cls=names.gather(classes["cls"]))
    sp = spurious.with_columns(in_key=pl.lit(False), cls=pl.lit("spurious"),
                               pred_start="start", pred_end="end", pred_type="type")
    cols = ["sent", "start", "end", "type", "text", "in_key", "cls", "pred_start", "pred_end",
            "pred_type"]
    return pl.concat([key.select(cols), sp.select(cols)], how="vertical_relaxed").sort(
        "sent", "start", "end", "in_key", descending=[False, False, False, True])


# ------------------------------------------------------------------------------ comparison


@dataclass
class SpanCounts:
    """Additive counts of span scores and of the comparison of systems (a shard's, or a sum).

    ``gold`` (T,), ``pred`` and ``correct`` (N, T) per type; ``tokens``/``tokens_correct``
    per system; ``classes`` (N, T, 6) class counts per type (units of each system); and when
    compared: ``pairs`` (engine pair counts), ``typed`` (P, T, 6, 6) transitions over each
    pair's units, ``oracle`` (over key spans: some member correct) and ``sent_f1`` (per pair,
    sentences by their (TP, predicted) differences, for the randomization test); for the
    bootstrap, ``sentences`` (:func:`sentence_rows`)."""

    gold: np.ndarray
    pred: np.ndarray
    correct: np.ndarray
    classes: np.ndarray
    pairs: object | None = None
    typed: np.ndarray | None = None
    oracle: object | None = None
    sent_f1: list[Sparse] | None = None
    sentences: UnitRows | None = None

    def merge(self, other: SpanCounts) -> SpanCounts:
        for name in ("gold", "pred", "correct", "classes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if self.sentences is not None:
            self.sentences.merge(other.sentences)
        if self.pairs is not None:
            self.pairs.merge(other.pairs)
            self.typed = self.typed + other.typed
            self.oracle.merge(other.oracle)
            for mine, theirs in zip(self.sent_f1, other.sent_f1, strict=True):
                mine.merge(theirs)
        return self


def type_codes(spans: pl.DataFrame, types: Sequence[str]) -> np.ndarray:
    """The codes (into ``types``) of the spans' types (int64, also when there is none)."""
    if not spans.height:
        return np.zeros(0, np.int64)
    return spans["type"].replace_strict(list(types), list(range(len(types))),
                                        return_dtype=pl.Int64).to_numpy()


def span_units(key: pl.DataFrame, spurious: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The units of a shard: key spans (``in_key``) and every system's spurious spans
    (matched by boundaries and type), sorted; ``u`` numbers them."""
    cols = list(SPAN_COLUMNS)
    parts = [key.select(cols).with_columns(in_key=pl.lit(True))]
    parts += [s.select(cols).with_columns(in_key=pl.lit(False)) for s in spurious]
    units = pl.concat(parts).unique(cols, keep="first").sort(cols)
    return units.with_columns(u=pl.int_range(pl.len(), dtype=pl.Int64))


def span_matrix(key: pl.DataFrame, classes: Sequence[pl.DataFrame],
                spurious: Sequence[pl.DataFrame], types: Sequence[str], first_sent: int,
                n_sents: int) -> tuple[pl.DataFrame, LabelMatrix]:
    """The engine's matrix over the span units of a shard (METRICS 5.2): values and display
    labels are class codes (a spurious unit a system does not predict is ``absent``), correct
    = correct or absent, the group is the unit's type, ``sent`` its sentence in the shard,
    ``present`` = the system predicts the (spurious) unit, ``in_key`` = a key span."""
    units = span_units(key, spurious)
    n, u = len(classes), units.height
    values = np.full((n, u), ABSENT, np.uint8)
    in_key = units["in_key"].to_numpy()
    key_units = np.flatnonzero(in_key)         # key spans are sorted as the units are
    for i, c in enumerate(classes):
        values[i, key_units] = c["cls"].to_numpy()
    cols = list(SPAN_COLUMNS)
    for i, s in enumerate(spurious):
        if s.height:
            rows = s.select(cols).join(units.select(*cols, "u"), on=cols)["u"].to_numpy()
            values[i, rows] = SPURIOUS
    m = LabelMatrix(
        values=values, correct=_IS_CORRECT[values], display=values,
        gold=type_codes(units, types), n_labels=N_CLASSES, n_groups=len(types),
        sent=(units["sent"].to_numpy() - first_sent).astype(np.int64), n_sents=n_sents,
        present=values == SPURIOUS, in_key=in_key)
    return units, m


def comparison_counts(key: pl.DataFrame, systems: Sequence[pl.DataFrame],
                      types: Sequence[str], first_sent: int, n_sents: int,
                      compare: bool = True, per_sentence: bool = False
                      ) -> tuple[SpanCounts, list[pl.DataFrame]]:
    """The additive counts of a shard (key and system spans of its sentences, sorted), and
    each system's ``span_classes`` rows. With ``compare``, also every pair's engine counts,
    transitions, F1 randomization histogram and the oracle; with ``per_sentence``, the
    per-sentence rows of the bootstrap intervals."""
    t_n, n = len(types), len(systems)
    found = [classify(key, s) for s in systems]
    classes = [c for c, _ in found]
    spurious = [s for _, s in found]
    key_t = type_codes(key, types)
    gold = np.bincount(key_t, minlength=t_n)
    pred = np.zeros((n, t_n), np.int64)
    correct = np.zeros((n, t_n), np.int64)
    by_class = np.zeros((n, t_n, N_CLASSES), np.int64)
    for i, (s, c, sp) in enumerate(zip(systems, classes, spurious, strict=True)):
        pred[i] = np.bincount(type_codes(s, types), minlength=t_n)
        cls = c["cls"].to_numpy().astype(np.int64)
        correct[i] = np.bincount(key_t[cls == CORRECT], minlength=t_n)
        by_class[i] = np.bincount(key_t * N_CLASSES + cls, minlength=t_n * N_CLASSES
                                  ).reshape(t_n, N_CLASSES)
        by_class[i, :, SPURIOUS] = np.bincount(type_codes(sp, types), minlength=t_n)
    counts = SpanCounts(gold, pred, correct, by_class)
    if per_sentence:
        counts.sentences = UnitRows.of(first_sent, sentence_rows(
            key, systems, classes, types, first_sent, n_sents))
    rows = [class_rows(c, sp) for c, sp in zip(classes, spurious, strict=True)]
    if compare:
        _compare(counts, key, systems, classes, spurious, types, first_sent, n_sents)
    return counts, rows


def sentence_rows(key: pl.DataFrame, systems: Sequence[pl.DataFrame],
                  classes: Sequence[pl.DataFrame], types: Sequence[str], first_sent: int,
                  n_sents: int) -> np.ndarray:
    """(sentences x T (1 + 2N)) per sentence of the shard: key spans per type, then for
    each system its spans and its correct spans per type (what F1's bootstrap samples
    sum)."""
    t_n = len(types)

    def per_sentence(spans: pl.DataFrame, keep: np.ndarray | None = None) -> np.ndarray:
        sent = spans["sent"].to_numpy().astype(np.int64) - first_sent
        code = type_codes(spans, types)
        if keep is not None:
            sent, code = sent[keep], code[keep]
        return np.bincount(sent * t_n + code, minlength=n_sents * t_n).reshape(n_sents, t_n)

    cols = [per_sentence(key)]
    for s, c in zip(systems, classes, strict=True):
        cols += [per_sentence(s), per_sentence(key, c["cls"].to_numpy() == CORRECT)]
    return np.concatenate(cols, axis=1).astype(np.int32)


def _compare(counts: SpanCounts, key: pl.DataFrame, systems: Sequence[pl.DataFrame],
             classes: list[pl.DataFrame], spurious: list[pl.DataFrame], types: Sequence[str],
             first_sent: int, n_sents: int) -> None:
    """Add the engine's comparison counts of a shard to ``counts``."""
    units, m = span_matrix(key, classes, spurious, types, first_sent, n_sents)
    n = len(systems)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    counts.pairs = pair_counts(m, pairs)
    counts.typed = transition_counts(m.values, N_CLASSES, m.gold, m.n_groups, pairs,
                                     [m.pair_units(i, j) for i, j in pairs])
    key_units = m.in_key
    right = m.values[:, key_units] == CORRECT
    counts.oracle = oracle_counts(right, m.gold[key_units], m.n_groups,
                                  pairs if n > MAX_ALL_SUBSETS else None)
    tp = np.stack([np.bincount(m.sent[key_units][row], minlength=n_sents) for row in right]) \
        if n else np.zeros((0, n_sents), np.int64)
    found = np.stack([np.bincount(s["sent"].to_numpy() - first_sent, minlength=n_sents)
                      for s in systems]) if n else np.zeros((0, n_sents), np.int64)
    counts.sent_f1 = [_f1_differences(tp[j] - tp[i], found[j] - found[i]) for i, j in pairs]


def _f1_differences(d_tp: np.ndarray, d_pred: np.ndarray) -> Sparse:
    """Sentences by (d_tp, d_pred) (only sentences where one differs), as sparse keys."""
    nz = (d_tp != 0) | (d_pred != 0)
    keys = (d_tp[nz].astype(np.int64) + _D) * (2 * _D) + (d_pred[nz] + _D)
    distinct, k = np.unique(keys, return_counts=True)
    out = Sparse()
    out.add(distinct, k)
    return out


def merge_counts(parts: Sequence[SpanCounts]) -> SpanCounts:
    """The sum of several shards' counts."""
    total = parts[0]
    for part in parts[1:]:
        total.merge(part)
    return total


__all__ = ["SPAN_CLASSES", "classify", "comparison_counts"]
