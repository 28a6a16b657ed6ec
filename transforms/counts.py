"""The additive counts of the comparison engine (:mod:`sysdiff.transforms.engine`): what one
shard yields and how the counts of shards add up. Nothing here looks at a label matrix."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from sysdiff.transforms.bootstrap import UnitRows

# ------------------------------------------------------------------------------ sparse sums


@dataclass
class Sparse:
    """Non-negative integer keys with counts, summed lazily: pieces are kept as they come and
    compacted once they outgrow the compacted part (amortised O(n log n))."""

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pending: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    n_pending: int = 0

    def add(self, keys: np.ndarray, counts: np.ndarray) -> None:
        """Add ``counts`` at ``keys`` (keys need not be unique nor sorted)."""
        if keys.size:
            self.pending.append((keys.astype(np.int64, copy=False),
                                 counts.astype(np.int64, copy=False)))
            self.n_pending += keys.size
            if self.n_pending > max(1 << 14, self.keys.size):
                self.compact()

    def merge(self, other: Sparse) -> Sparse:
        """Add every count of ``other`` (in place) and return self."""
        other.compact()
        self.add(other.keys, other.counts)
        return self

    def compact(self) -> Sparse:
        """Sum equal keys; keys sorted ascending."""
        if self.pending:
            keys = np.concatenate([self.keys, *(k for k, _ in self.pending)])
            counts = np.concatenate([self.counts, *(c for _, c in self.pending)])
            self.keys, inverse = np.unique(keys, return_inverse=True)
            self.counts = np.bincount(inverse, weights=counts, minlength=self.keys.size
                                      ).astype(np.int64)
            self.pending, self.n_pending = [], 0
        return self


def key_counts(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys in ``[0, space)`` and how often each occurs: a ``bincount`` when the
    space is small for the number of keys, else a sort."""
    if space <= max(1 << 16, 4 * keys.size):
        hist = np.bincount(keys, minlength=space)
        nz = np.flatnonzero(hist)
        return nz, hist[nz]
    return np.unique(keys, return_counts=True)


# ------------------------------------------------------------------------------ counts


@dataclass
class PairCounts:
    """Additive counts of a list of unordered pairs (``pairs`` gives the system indexes)."""

    pairs: list[tuple[int, int]]
    n_units: np.ndarray  # (P,) units of each pair
    classes: np.ndarray  # (P, 4): n_diff, corrections, new_errors, changed_errors (i -> j)
    decomposition: np.ndarray | None  # (P, 3): head only, label only, both (las)
    cells: list[Sparse]  # per pair: ((cls * G + gold) * L + l_i) * L + l_j
    sent_diffs: list[Sparse]  # per pair: d + offset -> sentences (d = correct_j - correct_i)
    buckets: dict[str, np.ndarray]  # name -> (P, 3, K) class counts per bucket
    segmentation: np.ndarray  # (P,) units aligned in one system of the pair only

    def merge(self, other: PairCounts) -> PairCounts:
        self.n_units += other.n_units
        self.classes += other.classes
        self.segmentation += other.segmentation
        if self.decomposition is not None:
            self.decomposition += other.decomposition
        for mine, theirs in zip(self.cells + self.sent_diffs, other.cells + other.sent_diffs,
                                strict=True):
            mine.merge(theirs)
        for name, arr in other.buckets.items():
            self.buckets[name] += arr
        return self


@dataclass
class OracleCounts:
    """What every oracle, difficulty and leave-one-out figure needs (additive).

    Up to :data:`MAX_ALL_SUBSETS` systems: ``masks[g, m]`` = units of group g whose set of
    correct systems is the bitmask m. Above: ``k_hist[g, k]`` = units of group g that k
    systems get right, ``unique[i, g]`` = units of group g that only system i gets right,
    and ``union[p, g]`` = units that either system of pair ``union_pairs[p]`` gets right
    (the pairs whose change cells are not counted with these counts).
    """

    n_systems: int
    n_groups: int
    masks: np.ndarray | None
    k_hist: np.ndarray
    unique: np.ndarray | None
    union: np.ndarray | None
    union_pairs: list[tuple[int, int]] = field(default_factory=list)

    def merge(self, other: OracleCounts) -> OracleCounts:
        for name in ("masks", "k_hist", "unique", "union"):
            mine = getattr(self, name)
            if mine is not None:
                mine += getattr(other, name)
        return self


@dataclass
class MajorityCounts:
    """Majority vote: units surely right, and the tied units by (top systems, gold voters)
    bit pattern, settled once the tie order (accuracy over the whole corpus) is known."""

    n_units: int
    n_sure: int
    ties: dict[bytes, int]

    def merge(self, other: MajorityCounts) -> MajorityCounts:
        self.n_units += other.n_units
        self.n_sure += other.n_sure
        for k, v in other.ties.items():
            self.ties[k] = self.ties.get(k, 0) + v
        return self


@dataclass
class Counts:
    """Every additive count of one shard (or a sum of shards)."""

    n_units: int
    n_sents: int
    correct: np.ndarray  # (N,) correct units per system
    exact: np.ndarray  # (N,) sentences in which the system gets every unit right
    gold_n: np.ndarray  # (G,) units per gold group
    labels: np.ndarray  # (N, G) correct units per system and gold group
    bucket_units: dict[str, np.ndarray]  # name -> (K,)
    bucket_correct: dict[str, np.ndarray]  # name -> (N, K)
    pairs: PairCounts | None
    oracle: OracleCounts | None
    majority: MajorityCounts | None
    #: per sentence (bootstrap intervals): units, then correct units of each system
    sentences: UnitRows | None = None

    def merge(self, other: Counts) -> Counts:
        """Add ``other`` to these counts (in place) and return self."""
        self.n_units += other.n_units
        self.n_sents += other.n_sents
        self.correct += other.correct
        self.exact += other.exact
        self.gold_n += other.gold_n
        self.labels += other.labels
        for name in self.bucket_units:
            self.bucket_units[name] += other.bucket_units[name]
            self.bucket_correct[name] += other.bucket_correct[name]
        for part in ("pairs", "oracle", "majority", "sentences"):
            mine = getattr(self, part)
            if mine is not None:
                mine.merge(getattr(other, part))
        return self


def merge_all(parts: Iterable[Counts]) -> Counts:
    """The sum of several shards' counts."""
    parts = iter(parts)
    total = next(parts)
    for part in parts:
        total.merge(part)
    return total


#: Sentence differences are stored as ``d + _OFFSET`` (non-negative keys); a sentence has
#: fewer than 2^31 units.
_OFFSET = 1 << 31


def decode_sentence_differences(s: Sparse) -> tuple[np.ndarray, np.ndarray]:
    """(d values sorted ascending, sentences with each) of a pair's sentence differences."""
    s.compact()
    return s.keys - _OFFSET, s.counts
