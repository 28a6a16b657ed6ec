"""Spans (METRICS 5): BIO tags decoded into spans, span scores, span classes, and the
comparison of systems over span units with the shared engine.

- :func:`decode` turns prefix and type codes into spans: conlleval rules by default (a span
  starts at B-X, or at I-X/E-X that does not continue a span of type X; it goes on while the
  tags continue it; E-X and S-X end it), seqeval strict with ``iob2`` (only B-X I-X* is a
  span) and ``bioes`` (B-X I-X* E-X, or S-X).
- :func:`classify` gives every key span its class under a system (correct, type, boundary,
  missed) and finds the system's spurious spans (overlapping no key span).
- :func:`comparison_counts` builds the engine's label matrix over the span units of a shard
  (key spans and the spurious spans of any system; values are class codes, correct =
  correct or absent, group = type, ``sent`` = the sentence) and returns additive counts;
  :func:`merge_counts` sums shards and the ``*_rows`` functions make the tables.

Everything is additive over sentences (and so over shards of sentences); ratios come last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.vocabulary import SPAN_CLASSES, SPAN_CORRECT
from sysdiff.transforms.counts import Sparse
from sysdiff.transforms.engine import (
    MAX_ALL_SUBSETS,
    LabelMatrix,
    oracle_counts,
    pair_counts,
    transition_counts,
)
from sysdiff.transforms.reduce import mcnemar_column, oracle_correct, oracle_subsets, ratio

P_O, P_B, P_I, P_E, P_S = range(5)  # prefix codes
PREFIX_LETTERS = np.array(["O", "B", "I", "E", "S"])
CORRECT, TYPE, BOUNDARY, MISSED, SPURIOUS, ABSENT = range(6)
N_CLASSES = len(SPAN_CLASSES)
_IS_CORRECT = np.array([c in SPAN_CORRECT for c in SPAN_CLASSES])
SPAN_COLUMNS = {"sent": pl.Int32, "start": pl.Int32, "end": pl.Int32, "type": pl.String}
ALL = "ALL"
#: Offsets of the per-sentence (TP, predicted) differences kept for the randomization test.
_D = 1 << 20


# ------------------------------------------------------------------------------ decoding


@dataclass(frozen=True)
class Decoded:
    """Spans as token row ranges ``first..last`` (inclusive), and what the tags say about
    their scheme: ``n_ill_formed`` segments the strict rule of their scheme drops (an I-X
    that starts a span; under BIOES one that is not B-X ... E-X or S-X), whether E-/S- tags
    occur, and whether an I-X starts a span (IOB1)."""

    first: np.ndarray
    last: np.ndarray
    n_ill_formed: int
    has_es: bool
    has_i_start: bool

    @property
    def detected(self) -> str:
        """The scheme the tags follow: bioes (E-/S- tags), iob1 (an I-X starts a span) or
        iob2."""
        return "bioes" if self.has_es else "iob1" if self.has_i_start else "iob2"


def decode(prefix: np.ndarray, type_code: np.ndarray, sent: np.ndarray,
           scheme: str = "auto") -> Decoded:
    """Spans of a tag sequence (rows in file order; ``sent`` numbers the sentences, a span
    never crosses one). ``prefix`` holds codes of O B I E S, ``type_code`` equal
    integers for equal types. ``scheme``: auto or iob1 (conlleval rules), iob2 or bioes
    (seqeval strict)."""
    n = prefix.size
    prev_p = np.empty(n, prefix.dtype)
    prev_t = np.empty(n, type_code.dtype)
    if n:
        prev_p[0], prev_t[0] = P_O, -1
        prev_p[1:], prev_t[1:] = prefix[:-1], type_code[:-1]
        new_sent = np.r_[True, sent[1:] != sent[:-1]]
        prev_p[new_sent] = P_O
    link = (((prefix == P_I) | (prefix == P_E)) & ((prev_p == P_B) | (prev_p == P_I))
            & (type_code == prev_t))
    tagged = prefix != P_O
    first = np.flatnonzero(tagged & ~link)
    breaks = np.flatnonzero(~link)      # every row that does not continue the row before
    nxt = np.searchsorted(breaks, first, side="right")
    last = np.where(nxt < breaks.size, breaks[np.minimum(nxt, breaks.size - 1)] - 1, n - 1)
    p_first, p_last = prefix[first], prefix[last]
    has_es = bool(((prefix == P_E) | (prefix == P_S)).any())
    strict = ((p_first == P_S) | ((p_first == P_B) & (p_last == P_E)) if has_es
              else p_first == P_B)
    keep = {"auto": None, "iob1": None, "iob2": p_first == P_B,
            "bioes": (p_first == P_S) | ((p_first == P_B) & (p_last == P_E))}[scheme]
    if keep is not None:
        first, last = first[keep], last[keep]
    return Decoded(first, last, int((~strict).sum()), has_es, bool((p_first == P_I).any()))


def map_types(tokens: pl.DataFrame, mapping: Mapping[str, str]) -> pl.DataFrame:
    """Tokens (``prefix``, ``type``) with their types mapped; a type mapped to ``O`` makes
    its tags ``O`` (the entity is dropped)."""
    if not mapping:
        return tokens
    new = pl.col("type").replace(dict(mapping))
    return tokens.with_columns(
        prefix=pl.when(new == "O").then(pl.lit(P_O, pl.UInt8)).otherwise(pl.col("prefix")),
        type=pl.when(new == "O").then(None).otherwise(new),
    )


def label_expr() -> pl.Expr:
    """The (mapped) tag of a token: ``O``, ``B-PER``, or a bare prefix (type ``_``)."""
    letter = pl.col("prefix").replace_strict(list(range(5)), list(PREFIX_LETTERS),
                                             return_dtype=pl.String)
    return (pl.when(pl.col("prefix") == P_O).then(pl.lit("O"))
            .when(pl.col("type") == "_").then(letter)
            .otherwise(pl.concat_str(letter, pl.lit("-"), pl.col("type"))))


def decode_spans(tokens: pl.DataFrame, scheme: str) -> tuple[pl.DataFrame, Decoded]:
    """Spans of tokens (``sent``, ``id``, ``form``, ``prefix``, ``type``; file order):
    ``sent``, ``start``, ``end`` (0-based token positions, inclusive), ``type`` and ``text``
    (the span's words joined by spaces)."""
    codes = tokens["type"].fill_null("").cast(pl.Categorical).to_physical().to_numpy()
    d = decode(tokens["prefix"].to_numpy(), codes.astype(np.int64),
               tokens["sent"].to_numpy(), scheme)
    span_of = np.full(tokens.height, -1, np.int64)
    if d.first.size:
        lengths = d.last - d.first + 1
        rows = np.repeat(d.first, lengths) + _ramp(lengths)
        span_of[rows] = np.repeat(np.arange(d.first.size), lengths)
    text = (tokens.select("form").with_columns(span=pl.Series(span_of))
            .filter(pl.col("span") >= 0).group_by("span", maintain_order=True)
            .agg(pl.col("form").str.join(" ")))
    first = tokens[d.first]
    spans = pl.DataFrame({
        "sent": first["sent"], "start": first["id"] - 1,
        "end": tokens["id"].gather(d.last) - 1, "type": first["type"],
        "text": text["form"] if d.first.size else pl.Series([], dtype=pl.String),
    }).cast({**SPAN_COLUMNS, "text": pl.String})
    return spans, d


def _ramp(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., k-1 for each k of ``lengths``, concatenated."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total) - starts


# ------------------------------------------------------------------------------ classes


def _positions(spans: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each span as one sortable integer (sentence, then token)."""
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
    sentences by their (TP, predicted) differences, for the randomization test)."""

    gold: np.ndarray
    pred: np.ndarray
    correct: np.ndarray
    classes: np.ndarray
    pairs: object | None = None
    typed: np.ndarray | None = None
    oracle: object | None = None
    sent_f1: list[Sparse] | None = None

    def merge(self, other: SpanCounts) -> SpanCounts:
        for name in ("gold", "pred", "correct", "classes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if self.pairs is not None:
            self.pairs.merge(other.pairs)
            self.typed = self.typed + other.typed
            self.oracle.merge(other.oracle)
            for mine, theirs in zip(self.sent_f1, other.sent_f1, strict=True):
                mine.merge(theirs)
        return self


def type_codes(spans: pl.DataFrame, types: Sequence[str]) -> np.ndarray:
    """The codes (into ``types``) of the spans' types."""
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
                      compare: bool = True) -> tuple[SpanCounts, list[pl.DataFrame]]:
    """The additive counts of a shard (key and system spans of its sentences, sorted), and
    each system's ``span_classes`` rows. With ``compare``, also every pair's engine counts,
    transitions, F1 randomization histogram and the oracle."""
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
    rows = [class_rows(c, sp) for c, sp in zip(classes, spurious, strict=True)]
    if compare:
        _compare(counts, key, systems, classes, spurious, types, first_sent, n_sents)
    return counts, rows


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


# ------------------------------------------------------------------------------ tables


def prf(correct: np.ndarray, gold: np.ndarray, pred: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 (0 where undefined, as conlleval and seqeval give)."""
    p, r = ratio(correct, pred), ratio(correct, gold)
    return p, r, ratio(2 * p * r, p + r)


def score_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]) -> pl.DataFrame:
    """``span_scores``: per system the micro average (``ALL``) and every type with a key or
    a predicted span."""
    rows = []
    for i, name in enumerate(names):
        gold = np.r_[c.gold.sum(), c.gold]
        pred = np.r_[c.pred[i].sum(), c.pred[i]]
        right = np.r_[c.correct[i].sum(), c.correct[i]]
        keep = np.r_[True, (c.gold + c.pred[i]) > 0]
        p, r, f = prf(right, gold, pred)
        rows.append(pl.DataFrame({
            "system": [name] * int(keep.sum()),
            "type": [ALL, *(t for t, k in zip(types, keep[1:], strict=True) if k)],
            "n_gold": gold[keep], "n_pred": pred[keep], "n_correct": right[keep],
            "precision": p[keep], "recall": r[keep], "f1": f[keep]},
            schema_overrides={"system": pl.String, "type": pl.String}))
    return pl.concat(rows) if rows else pl.DataFrame()


def f1_of(c: SpanCounts) -> np.ndarray:
    """Micro F1 of each system."""
    return prf(c.correct.sum(axis=1), np.full(c.pred.shape[0], c.gold.sum()),
               c.pred.sum(axis=1))[2]


def pair_rows(c: SpanCounts, names: Sequence[str], trials: int, seed: int) -> pl.DataFrame:
    """``span_pairs``: both directions of every pair: units (key spans and the spurious spans
    of either system), differing units, change classes, diff, delta F1 (sys2 - sys1), exact
    McNemar p over the units and the paired approximate randomization p of F1 by sentence."""
    pc = c.pairs
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    f1 = f1_of(c)
    tp, found = c.correct.sum(axis=1), c.pred.sum(axis=1)
    gold = int(c.gold.sum())
    ar = np.array([f1_randomization(*_decode_f1(s), (tp[a], found[a]), (tp[b], found[b]),
                                    gold, trials, seed)
                   for s, (a, b) in zip(c.sent_f1, pc.pairs, strict=True)], np.float64)
    arr = np.array(names, dtype=object)
    return pl.DataFrame({
        "sys1": np.concatenate([arr[i], arr[j]]).tolist(),
        "sys2": np.concatenate([arr[j], arr[i]]).tolist(),
        "n_units": np.tile(pc.n_units, 2), "n_diff": np.tile(n_diff, 2),
        "corrections": np.concatenate([fix, brk]), "new_errors": np.concatenate([brk, fix]),
        "changed_errors": np.tile(changed, 2), "diff": np.tile(ratio(n_diff, pc.n_units), 2),
        "delta_f1": np.concatenate([f1[j] - f1[i], f1[i] - f1[j]]),
        "mcnemar_p": np.tile(mcnemar_column(fix, brk), 2), "ar_p": np.tile(ar, 2),
    }, schema_overrides={"sys1": pl.String, "sys2": pl.String})


def _decode_f1(s: Sparse) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s.compact()
    return s.keys // (2 * _D) - _D, s.keys % (2 * _D) - _D, s.counts


def f1_randomization(d_tp: np.ndarray, d_pred: np.ndarray, m: np.ndarray,
                     first: tuple[int, int], second: tuple[int, int], gold: int,
                     trials: int, seed: int) -> float:
    """Paired approximate randomization of micro F1 over sentences (METRICS 1.6 for F1).

    Sentences whose (TP, predicted) counts differ by (``d_tp``, ``d_pred``) = second -
    first, ``m`` of each; each trial swaps the two systems' counts of every sentence with
    probability 1/2 (a binomial number of each kind), and ``p = (#{|delta*| >= |delta|} + 1)
    / (trials + 1)``; ``first``/``second`` = (TP, predicted) totals."""
    if m.size == 0:
        return 1.0

    def f1(tp: np.ndarray, found: np.ndarray) -> np.ndarray:
        return ratio(2 * tp, found + gold)

    observed = abs(float(f1(np.float64(second[0]), np.float64(second[1]))
                         - f1(np.float64(first[0]), np.float64(first[1]))))
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < trials:
        k = min(2048, trials - done)
        swapped = rng.binomial(m[None, :], 0.5, size=(k, m.size))
        moved_tp, moved_pred = swapped @ d_tp, swapped @ d_pred
        delta = (f1(second[0] - moved_tp, second[1] - moved_pred)
                 - f1(first[0] + moved_tp, first[1] + moved_pred))
        hits += int(np.count_nonzero(np.abs(delta) >= observed - 1e-12))
        done += k
    return (hits + 1) / (trials + 1)


def transition_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]
                    ) -> pl.DataFrame:
    """``span_transitions``: the full 6x6 class matrix of every ordered pair over the pair's
    units, for ``ALL`` and each type with units."""
    pc = c.pairs
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    keep = np.flatnonzero((c.gold + c.pred.sum(axis=0)) > 0)
    typed = np.concatenate([c.typed.sum(axis=1, keepdims=True), c.typed[:, keep]], axis=1)
    both = np.concatenate([typed, typed.transpose(0, 1, 3, 2)])
    arr = np.array(names, dtype=object)
    sys1, sys2 = np.concatenate([arr[i], arr[j]]), np.concatenate([arr[j], arr[i]])
    p, g, c1, c2 = np.indices(both.shape).reshape(4, -1)
    classes = pl.Series(SPAN_CLASSES, dtype=pl.String)
    type_names = pl.Series([ALL, *(types[k] for k in keep)], dtype=pl.String)
    return pl.DataFrame({
        "sys1": sys1[p].tolist(), "sys2": sys2[p].tolist(), "type": type_names.gather(g),
        "c1": classes.gather(c1), "c2": classes.gather(c2), "count": both[p, g, c1, c2],
    }, schema_overrides={"sys1": pl.String, "sys2": pl.String})


def oracle_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]) -> pl.DataFrame:
    """``span_oracles``: for every subset (:func:`oracle_subsets`), key spans that at least one
    member gets correct, overall (``ALL``) and per key type, with the best member's count and
    the gain in recall over it."""
    subs, per_type = oracle_correct(c.oracle, c.correct)
    keep = np.flatnonzero(c.gold)
    label = [ALL, *(types[k] for k in keep)]
    n_rows = np.r_[c.gold.sum(), c.gold[keep]]
    got = np.concatenate([per_type.sum(axis=1, keepdims=True), per_type[:, keep]], axis=1)
    single = np.concatenate([c.correct.sum(axis=1, keepdims=True), c.correct[:, keep]], axis=1)
    best = np.stack([single[list(s)].max(axis=0) for s in subs]) if subs else got
    k = len(label)
    return pl.DataFrame({
        "systems": [sorted(names[x] for x in s) for s in subs for _ in range(k)],
        "n_systems": np.repeat([len(s) for s in subs], k).astype(np.int64),
        "type": label * len(subs), "n_gold": np.tile(n_rows, len(subs)).astype(np.int64),
        "n_correct": got.ravel().astype(np.int64),
        "recall": ratio(got, n_rows[None, :]).ravel(),
        "best_single": best.ravel().astype(np.int64),
        "gain": ratio(got - best, n_rows[None, :]).ravel(),
    }, schema_overrides={"systems": pl.List(pl.String), "type": pl.String})


def class_count_rows(c: SpanCounts, names: Sequence[str], types: Sequence[str]
                     ) -> pl.DataFrame:
    """Class counts per system and type (``ALL`` first): the units of each system."""
    keep = np.flatnonzero(c.classes.sum(axis=(0, 2)))
    rows = []
    for i, name in enumerate(names):
        per = np.concatenate([c.classes[i].sum(axis=0, keepdims=True), c.classes[i, keep]])
        frame = pl.DataFrame(per[:, :SPURIOUS + 1], schema=list(SPAN_CLASSES[:SPURIOUS + 1]),
                             orient="row")
        rows.append(frame.with_columns(system=pl.lit(name), type=pl.Series(
            [ALL, *(types[k] for k in keep)], dtype=pl.String)))
    return pl.concat(rows) if rows else pl.DataFrame()


__all__ = ["ALL", "SPAN_CLASSES", "decode", "decode_spans", "classify", "comparison_counts",
           "oracle_subsets"]
