"""The comparison engine of every task: a units x systems label matrix in, additive counts out.

A task only builds its :class:`LabelMatrix` (token views: the key's words; coreference:
mentions with their ARCS classes; UNL: sentences with their verdicts). :func:`shard_counts`
returns :class:`Counts` for one shard; counts of shards add up (:meth:`Counts.merge`), and
the ``finish_*`` functions of :mod:`sysdiff.transforms.tables` turn the sums into tables.
Definitions are METRICS 1.2-1.6.

Memory is the label matrix plus what the pair tables need (a few counts per pair, and the
non-zero cells of each pair's change table); nothing of size pairs x units or subsets x units
is ever held. Every pair is one pass over the matrix rows with numpy, on the smallest integer
codes; the change table of a pair is one ``bincount`` over its differing units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from sysdiff.transforms.bootstrap import UnitRows
from sysdiff.transforms.counts import (
    _OFFSET,
    Counts,
    MajorityCounts,
    OracleCounts,
    PairCounts,
    Sparse,
    key_counts,
)

#: Up to this many systems, the oracle of every subset is kept (2^N - 1 subsets).
MAX_ALL_SUBSETS = 10


@dataclass(frozen=True)
class Bucketing:
    """A partition of the units into ``n`` buckets (``codes`` in ``[0, n)``): one code per
    unit, or, with ``per_sentence``, one per sentence (every unit of a sentence in its
    sentence's bucket, e.g. sentence length: counted from per-sentence sums)."""

    name: str
    codes: np.ndarray
    n: int
    per_sentence: bool = False


@dataclass(frozen=True)
class LabelMatrix:
    """The label matrix of one shard: rows are systems, columns are units.

    - ``values``: two systems agree on unit t iff their values are equal;
    - ``correct``: system i gets unit t right;
    - ``display``: the label shown in change tables (codes into a label list of size
      ``n_labels``, shared with ``gold``);
    - ``gold``: the grouping label of each unit (per-label tables), in ``[0, n_groups)``;
    - ``sent``: the sentence of each unit, in ``[0, n_sents)``; ``n_sents`` counts every
      sentence of the shard, also those left without an evaluated unit;
    - ``head``: per system and unit, the attachment (``las`` only: head-only, label-only
      and both-differ counts of each pair);
    - ``buckets``: partitions of the units for per-bucket scores and change classes;
    - ``present``/``in_key``: when units are the union of the key's and the responses'
      (coreference mentions), a pair's units are those in the key or in either response
      (a unit outside both agrees by construction, so only the pair's unit count needs it);
    - ``aligned``: whether each system has a word aligned with the unit (systems tokenised
      otherwise than the key): a pair counts the units segmented differently.

    Two systems that both get a unit right agree on it (their values are equal).
    """

    values: np.ndarray
    correct: np.ndarray
    display: np.ndarray
    gold: np.ndarray
    n_labels: int
    n_groups: int
    sent: np.ndarray
    n_sents: int
    head: np.ndarray | None = None
    buckets: tuple[Bucketing, ...] = ()
    present: np.ndarray | None = None
    in_key: np.ndarray | None = None
    aligned: np.ndarray | None = None

    @property
    def n_systems(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_units(self) -> int:
        return int(self.values.shape[1])

    def select(self, mask: np.ndarray) -> LabelMatrix:
        """The matrix restricted to the units where ``mask`` holds (same sentences)."""
        return replace(
            self, values=self.values[:, mask], correct=self.correct[:, mask],
            display=self.display[:, mask], gold=self.gold[mask], sent=self.sent[mask],
            head=None if self.head is None else self.head[:, mask],
            buckets=tuple(b if b.per_sentence else replace(b, codes=b.codes[mask])
                          for b in self.buckets),
            present=None if self.present is None else self.present[:, mask],
            in_key=None if self.in_key is None else self.in_key[mask],
            aligned=None if self.aligned is None else self.aligned[:, mask])

    def pair_units(self, i: int, j: int) -> np.ndarray | None:
        """The units of pair (i, j) as a mask, or None when every unit counts."""
        if self.present is None:
            return None
        return self.in_key | self.present[i] | self.present[j]


def smallest_uint(n: int) -> type[np.unsignedinteger]:
    """The narrowest unsigned integer type that holds codes ``0 .. n - 1``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n <= np.iinfo(dtype).max + 1:
            return dtype
    return np.uint64


def all_pairs(n_systems: int) -> list[tuple[int, int]]:
    """Unordered system index pairs ``(i, j)``, ``i < j``."""
    return list(combinations(range(n_systems), 2))


# ------------------------------------------------------------------------------ one shard


def sentence_units(m: LabelMatrix) -> np.ndarray:
    """Evaluated units per sentence of the shard."""
    return np.bincount(m.sent, minlength=m.n_sents)


def system_counts(m: LabelMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per system: correct units, exact sentences, correct units per gold group, and wrong
    units per sentence (N, S). Counted over the wrong units, the fewer."""
    n = m.n_systems
    gold_n = np.bincount(m.gold, minlength=m.n_groups)
    correct = np.empty(n, np.int64)
    exact = np.empty(n, np.int64)
    labels = np.empty((n, m.n_groups), np.int64)
    wrong_sent = np.empty((n, m.n_sents), np.int64)
    for i in range(n):
        wrong = np.flatnonzero(~m.correct[i])
        correct[i] = m.n_units - wrong.size
        wrong_sent[i] = np.bincount(m.sent[wrong], minlength=m.n_sents)
        exact[i] = np.count_nonzero(wrong_sent[i] == 0)
        labels[i] = gold_n - np.bincount(m.gold[wrong], minlength=m.n_groups)
    return correct, exact, labels, wrong_sent


def pair_counts(m: LabelMatrix, pairs: Sequence[tuple[int, int]],
                votes: np.ndarray | None = None,
                wrong_sent: np.ndarray | None = None) -> PairCounts:
    """Diff, change classes, change cells, per-sentence differences and per-bucket classes
    of each pair; with ``votes``, also add every pair's disagreements to it (majority
    vote). ``wrong_sent`` (from :func:`system_counts`) saves recounting per sentence."""
    p_n, n_units = len(pairs), m.n_units
    g_n, l_n = m.n_groups, m.n_labels
    space = 3 * g_n * l_n * l_n
    key_type = np.int64 if space >= 1 << 31 else np.int32
    gold = m.gold.astype(key_type) * (l_n * l_n)
    classes = np.zeros((p_n, 4), np.int64)
    decomposition = np.zeros((p_n, 3), np.int64) if m.head is not None else None
    segmentation = np.zeros(p_n, np.int64)
    buckets = {b.name: np.zeros((p_n, 3, b.n), np.int64) for b in m.buckets}
    unit_codes = {b.name: (b.codes[m.sent] if b.per_sentence else b.codes)
                  .astype(smallest_uint(3 * b.n)) for b in m.buckets}
    if wrong_sent is None:
        wrong_sent = system_counts(m)[3]
    right_sent = (sentence_units(m) - wrong_sent).astype(np.int32)
    longest = int(sentence_units(m).max(initial=0))
    cells, sent_diffs = [], []
    for p, (i, j) in enumerate(pairs):
        differ = m.values[i] != m.values[j]
        if votes is not None:  # count disagreements; votes = N - disagreements
            votes[i] += differ
            votes[j] += differ
        idx = np.flatnonzero(differ)
        ci, cj = m.correct[i, idx], m.correct[j, idx]
        # 0 correction, 1 new error, 2 changed error (two correct systems never differ)
        cls = (~cj).view(np.uint8) * (1 + (~ci).view(np.uint8))
        keys = ((cls.astype(key_type) * g_n * l_n * l_n + gold[idx])
                + m.display[i, idx].astype(key_type) * l_n + m.display[j, idx])
        found, counts = key_counts(keys, space)
        cell = Sparse()
        cell.add(found, counts)
        cells.append(cell)
        classes[p] = (idx.size, *np.bincount(found // (g_n * l_n * l_n), weights=counts,
                                             minlength=3))
        sent_diffs.append(_sentence_differences(right_sent[j] - right_sent[i], longest))
        for b in m.buckets:
            buckets[b.name][p] = np.bincount(cls * np.uint8(b.n) + unit_codes[b.name][idx],
                                             minlength=3 * b.n).reshape(3, b.n)
        if m.aligned is not None:
            segmentation[p] = np.count_nonzero(m.aligned[i] != m.aligned[j])
        if decomposition is not None:
            same_label = m.display[i, idx] == m.display[j, idx]
            same_head = m.head[i, idx] == m.head[j, idx]
            decomposition[p] = (np.count_nonzero(same_label),
                                np.count_nonzero(same_head & ~same_label),
                                np.count_nonzero(~same_head & ~same_label))
    units = np.full(p_n, n_units, np.int64)
    if m.present is not None:
        units = np.array([np.count_nonzero(m.pair_units(i, j)) for i, j in pairs], np.int64)
    return PairCounts(list(pairs), units, classes, decomposition, cells, sent_diffs, buckets,
                      segmentation)


def _sentence_differences(d: np.ndarray, longest: int) -> Sparse:
    """Sentences per difference ``d`` = correct units of j - correct units of i (only
    d != 0), keyed ``d + _OFFSET``: what the randomization test needs."""
    hist = np.bincount(d[d != 0] + longest, minlength=2 * longest + 1)
    nz = np.flatnonzero(hist)
    out = Sparse()
    out.add(nz - longest + _OFFSET, hist[nz])
    return out


def oracle_counts(correct: np.ndarray, gold: np.ndarray, n_groups: int,
                  pairs: Sequence[tuple[int, int]] | None = None) -> OracleCounts:
    """Oracle counts of a boolean (systems x units) correctness matrix grouped by ``gold``.

    Above :data:`MAX_ALL_SUBSETS` systems, the union counts of ``pairs`` are computed here
    (the caller derives the others from its change cells)."""
    n = correct.shape[0]
    k = correct.sum(axis=0, dtype=np.int64)
    g = gold.astype(np.int64)
    k_hist = np.bincount(g * (n + 1) + k, minlength=n_groups * (n + 1)).reshape(n_groups, n + 1)
    if n <= MAX_ALL_SUBSETS:
        weights = (1 << np.arange(n, dtype=np.int64))
        masks = weights @ correct.astype(np.int64) if n else np.zeros(gold.size, np.int64)
        hist = np.bincount(g << n | masks, minlength=n_groups << n).reshape(n_groups, 1 << n)
        return OracleCounts(n, n_groups, hist, k_hist, None, None)
    only = np.flatnonzero(k == 1)
    who = correct[:, only].argmax(axis=0)
    unique = np.bincount(who * n_groups + g[only], minlength=n * n_groups).reshape(n, n_groups)
    pairs = list(pairs or [])
    union = np.stack([np.bincount(g[correct[i] | correct[j]], minlength=n_groups)
                      for i, j in pairs]) if pairs else np.zeros((0, n_groups), np.int64)
    return OracleCounts(n, n_groups, None, k_hist, unique, union, pairs)


def majority_counts(m: LabelMatrix, votes: np.ndarray) -> MajorityCounts:
    """Majority vote of one shard from ``votes[i, t]`` = systems that agree with system i on
    unit t (itself included). A unit is surely right when the gold label is the only label
    with the most votes; when it ties with another label, the bit pattern of (systems with
    a top label, systems with the gold label) is kept for the tie order."""
    top_votes = votes.max(axis=0)
    top = votes == top_votes
    gold_top = (m.correct & top).any(axis=0)
    n_top_systems = top.sum(axis=0)
    gold_voters = m.correct.sum(axis=0)
    sure = gold_top & (gold_voters == n_top_systems)
    tied = np.flatnonzero(gold_top & ~sure)
    ties: dict[bytes, int] = {}
    if tied.size:
        pattern = np.concatenate([np.packbits(top[:, tied], axis=0),
                                  np.packbits(m.correct[:, tied], axis=0)]).T.copy()
        rows = pattern.view(np.dtype((np.void, pattern.shape[1]))).ravel()
        distinct, counts = np.unique(rows, return_counts=True)
        ties = {bytes(r): int(c) for r, c in zip(distinct, counts, strict=True)}
    return MajorityCounts(m.n_units, int(sure.sum()), ties)


def settle_majority(counts: MajorityCounts, priority: Sequence[int], n_systems: int) -> int:
    """Correct units of the majority vote once the tie order is known: on a tied unit the
    label of the first system in ``priority`` that has a top label wins."""
    total = counts.n_sure
    width = (n_systems + 7) // 8
    order = np.asarray(priority)
    for pattern, n in counts.ties.items():
        bits = np.unpackbits(np.frombuffer(pattern, np.uint8), count=None)
        top = bits[:width * 8][:n_systems].astype(bool)
        gold = bits[width * 8:][:n_systems].astype(bool)
        first = order[top[order]][0]
        total += n if gold[first] else 0
    return total


def bucket_system_counts(m: LabelMatrix, wrong_sent: np.ndarray
                         ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Units per bucket, and correct units per system and bucket (``wrong_sent``: wrong
    units per system and sentence)."""
    units, correct = {}, {}
    for b in m.buckets:
        if b.per_sentence:
            units[b.name] = np.bincount(b.codes, weights=sentence_units(m),
                                        minlength=b.n).astype(np.int64)
            wrong = [np.bincount(b.codes, weights=w, minlength=b.n) for w in wrong_sent]
        else:
            units[b.name] = np.bincount(b.codes, minlength=b.n)
            wrong = [np.bincount(b.codes[~m.correct[i]], minlength=b.n)
                     for i in range(m.n_systems)]
        correct[b.name] = (units[b.name] - np.stack(wrong).astype(np.int64)) if wrong \
            else np.zeros((0, b.n), np.int64)
    return units, correct


def shard_counts(m: LabelMatrix, pairs: Sequence[tuple[int, int]] | None,
                 with_oracle: bool = True, with_majority: bool = True,
                 first_sent: int | None = None) -> Counts:
    """Every additive count of one shard. ``pairs`` are the pairs to compare (None: none);
    the oracle and the majority vote need every system (and, for the vote, every pair's
    agreements, which are counted whatever ``pairs`` holds). With ``first_sent`` (the
    shard's first sentence in the corpus), also the per-sentence rows of the bootstrap
    intervals (:func:`sentence_rows`)."""
    correct, exact, labels, wrong_sent = system_counts(m)
    bucket_units, bucket_correct = bucket_system_counts(m, wrong_sent)
    votes = None
    if with_majority and m.n_systems:
        votes = np.zeros(m.values.shape, smallest_uint(m.n_systems + 1))
    wanted = list(pairs or [])
    pair_part = pair_counts(m, wanted, votes, wrong_sent) if pairs is not None else None
    if votes is not None:
        _count_other_disagreements(m, set(wanted), votes)
        votes = m.n_systems - votes
    return Counts(
        n_units=m.n_units, n_sents=m.n_sents, correct=correct, exact=exact,
        gold_n=np.bincount(m.gold, minlength=m.n_groups).astype(np.int64), labels=labels,
        bucket_units=bucket_units, bucket_correct=bucket_correct, pairs=pair_part,
        oracle=_oracle(m, wanted) if with_oracle else None,
        majority=majority_counts(m, votes) if votes is not None else None,
        sentences=None if first_sent is None else UnitRows.of(
            first_sent, sentence_rows(m, wrong_sent)))


def sentence_rows(m: LabelMatrix, wrong_sent: np.ndarray) -> np.ndarray:
    """(sentences x 1 + N): evaluated units of each sentence, then each system's correct
    units in it (what an accuracy's bootstrap samples sum)."""
    units = sentence_units(m)
    out = np.empty((m.n_sents, 1 + m.n_systems), np.int32)
    out[:, 0] = units
    out[:, 1:] = (units[None, :] - wrong_sent).T
    return out


def _oracle(m: LabelMatrix, counted: list[tuple[int, int]]) -> OracleCounts:
    """Oracle counts; above MAX_ALL_SUBSETS systems, with the unions of the pairs whose
    change cells are not counted here (incremental runs, later blocks of pairs)."""
    missing = None
    if m.n_systems > MAX_ALL_SUBSETS:
        done = set(counted)
        missing = [p for p in all_pairs(m.n_systems) if p not in done]
    return oracle_counts(m.correct, m.gold, m.n_groups, missing)


def _count_other_disagreements(m: LabelMatrix, done: set[tuple[int, int]],
                               votes: np.ndarray) -> None:
    """Add the disagreements of the pairs that :func:`pair_counts` did not visit."""
    for i, j in all_pairs(m.n_systems):
        if (i, j) not in done:
            differ = m.values[i] != m.values[j]
            votes[i] += differ
            votes[j] += differ


def transition_counts(values: np.ndarray, n_labels: int, group: np.ndarray, n_groups: int,
                      pairs: Sequence[tuple[int, int]], units: Sequence[np.ndarray]
                      ) -> np.ndarray:
    """Full transition matrices (agreements included): ``out[p, g, a, b]`` = units of group
    ``g`` among ``units[p]`` (a boolean mask per pair) that system i labels ``a`` and
    system j labels ``b``."""
    size = n_groups * n_labels * n_labels
    out = np.zeros((len(pairs), size), np.int64)
    g = group.astype(np.int64) * n_labels * n_labels
    for p, (i, j) in enumerate(pairs):
        u = units[p]
        key = g[u] + values[i, u].astype(np.int64) * n_labels + values[j, u]
        out[p] = np.bincount(key, minlength=size)
    return out.reshape(len(pairs), n_groups, n_labels, n_labels)
