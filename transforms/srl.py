"""Semantic role labelling (METRICS 6): classes of argument and predicate units, and the
comparison of systems over them with the shared engine.

- :func:`classify_args` gives every key argument its class under a system (correct, role,
  boundary, missed) and finds the system's spurious arguments; :func:`classify_preds` does
  the same for predicates (correct, sense, missed; spurious).
- :func:`comparison_counts` reads one shard (the key's and each system's predicates and
  arguments), counts the official scores (:mod:`sysdiff.transforms.srl_scores`) and the
  classes, and with ``compare`` builds the engine's two label matrices (argument units:
  values are roles; predicate units: classes, a wrong sense by its sense) and returns the
  engine's additive counts; :mod:`sysdiff.transforms.srl_tables` makes the tables.

Head mode (roles on head words): a system's argument of the predicate at the same word with
the same role is ``correct``, with another role ``role``; ``boundary`` when the system puts
the same role on another word of the key argument's subtree (the key's HEAD tree). Span
mode: the same pieces and role (as ``srl-eval.pl``), the same pieces and another role, an
overlapping argument with other boundaries; a predicate matches by position and verb, as
the script matches propositions. ``V`` (span mode) is the predicate, never an argument unit.
Everything is additive over sentences; ratios come last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.vocabulary import PRED_CLASSES, SRL_CLASSES, SRL_CORRECT
from sysdiff.transforms.counts import OracleCounts, PairCounts
from sysdiff.transforms.engine import (
    MAX_ALL_SUBSETS,
    LabelMatrix,
    oracle_counts,
    pair_counts,
    smallest_uint,
    transition_counts,
)
from sysdiff.transforms.srl_scores import score_counts

CORRECT, ROLE, BOUNDARY, MISSED, SPURIOUS, ABSENT = range(6)
P_CORRECT, P_SENSE, P_MISSED, P_SPURIOUS, P_ABSENT = range(5)
_PRED_OK = np.array([c in SRL_CORRECT for c in PRED_CLASSES])
#: Labels of argument units after the roles: what a system has at a key argument besides a
#: role, and where it does not predict a spurious unit.
EXTRA_LABELS = ("<boundary>", "<missed>", "<absent>")
CLASS_COLUMNS = ["unit", "sent", "pred", "start", "end", "pieces", "role", "in_key", "cls",
                 "sys_start", "sys_end", "sys_role"]

# ------------------------------------------------------------------------------ the key tree


@dataclass(frozen=True)
class Tree:
    """The key's dependency tree over a shard's words, for ancestor tests: ``index`` of
    (sentence, word) rows, ``depth`` and binary-lifting ``up`` tables (a root is its own
    parent; a word with HEAD ``_`` is a root)."""

    first: np.ndarray  # row of word 1 of each sentence (sentence - lo)
    lo: int
    depth: np.ndarray
    up: list[np.ndarray]

    def rows(self, sent: np.ndarray, word: np.ndarray) -> np.ndarray:
        return self.first[sent - self.lo] + word - 1

    def is_ancestor(self, sent: np.ndarray, above: np.ndarray, below: np.ndarray
                    ) -> np.ndarray:
        """Word ``above`` is ``below`` or one of its ancestors, in each sentence."""
        a, b = self.rows(sent, above), self.rows(sent, below)
        gap = self.depth[b] - self.depth[a]
        ok = gap >= 0
        node = b.copy()
        for k, table in enumerate(self.up):
            step = ok & ((gap >> k) & 1).astype(bool)
            node[step] = table[node[step]]
        return ok & (node == a)


def key_tree(tokens: pl.DataFrame, path: str = "the key") -> Tree:
    """The tree of the key's words (``sent``, ``id``, ``head``, ``line``; sorted); a cycle
    is an InputError naming its first word."""
    sent = tokens["sent"].to_numpy().astype(np.int64)
    n = sent.size
    lo = int(sent[0]) if n else 0
    counts = np.bincount(sent - lo) if n else np.zeros(0, np.int64)
    first = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
    head = tokens["head"].fill_null(0).to_numpy().astype(np.int64)
    rows = np.arange(n, dtype=np.int64)
    parent = np.where(head > 0, first[sent - lo] + head - 1, rows) if n else rows
    depth = (parent != rows).astype(np.int64)
    up, anc = [parent], parent
    for _ in range(64):
        if np.array_equal(anc[anc], anc):
            break
        depth = depth + depth[anc]
        anc = anc[anc]
        up.append(anc)
    stuck = np.flatnonzero(parent[anc] != anc)  # the top is no root: a cycle
    if stuck.size:
        bad = int(stuck[0])
        raise InputError(f"HEAD of word {int(tokens['id'][bad])} is part of a cycle; expected "
                         "a tree (every word reaches the root)", path,
                         int(tokens["line"][bad]))
    return Tree(first, lo, depth, up)


# ------------------------------------------------------------------------------ classes


def _first_per_unit(pairs: pl.DataFrame) -> pl.DataFrame:
    """The first candidate (by its start, end and role) of each key unit ``u``."""
    return pairs.sort("u", "sys_start", "sys_end", "sys_role").unique("u", keep="first")


def _sys_cols(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select("sent", "pred", sys_start="start", sys_end="end",
                        sys_pieces="pieces", sys_role="role")


def classify_args(mode: str, key: pl.DataFrame, resp: pl.DataFrame, tree: Tree | None
                  ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(classes of the key arguments, the response's spurious arguments) (METRICS 6.2).

    ``key`` and ``resp`` hold arguments (``sent, pred, start, end, pieces, role``; no ``V``;
    the response's only for the predicates it matches); ``cls`` is a class code and
    ``sys_*`` the response argument behind it (for a boundary, the first one)."""
    place = ["start"] if mode == "head" else ["pieces"]
    k = key.with_row_index("u")
    s = _sys_cols(resp)
    exact = k.join(resp.select("sent", "pred", *place, "role"), on=["sent", "pred", *place,
                                                                      "role"], how="semi")
    same_place = k.join(s, left_on=["sent", "pred", *place],
                        right_on=["sent", "pred", *(f"sys_{c}" for c in place)])
    if mode == "head":
        same_place = same_place.with_columns(sys_start=pl.col("start"))
    other_role = _first_per_unit(same_place.filter(pl.col("sys_role") != pl.col("role")))
    near = _near(mode, k, s, tree)
    bound = _first_per_unit(near.filter(pl.col("in_span")))
    exact_u = exact["u"].to_numpy()
    cls = np.full(k.height, MISSED, np.uint8)
    cls[bound["u"].to_numpy()] = BOUNDARY
    cls[other_role["u"].to_numpy()] = ROLE
    cls[exact_u] = CORRECT
    behind = pl.concat([
        exact.select("u", sys_start="start", sys_end="end", sys_role="role"),
        other_role.select("u", "sys_start", "sys_end", "sys_role"),
        bound.select("u", "sys_start", "sys_end", "sys_role")])
    behind = behind.unique("u", keep="first", maintain_order=True)
    classes = k.join(behind, on="u", how="left").sort("u").drop("u").with_columns(
        cls=pl.Series(cls))
    spurious = _spurious_args(mode, k, resp, near, place)
    return classes, spurious


def _near(mode: str, k: pl.DataFrame, s: pl.DataFrame, tree: Tree | None) -> pl.DataFrame:
    """Candidate boundary pairs (key unit ``u``, response argument) and whether the response
    argument counts as the key argument's boundary (``in_span``)."""
    if mode == "head":
        pairs = k.join(s, left_on=["sent", "pred", "role"],
                       right_on=["sent", "pred", "sys_role"], maintain_order="left")
        pairs = pairs.with_columns(sys_role=pl.col("role")).filter(
            pl.col("sys_start") != pl.col("start"))
        inside = (tree.is_ancestor(pairs["sent"].to_numpy().astype(np.int64),
                                   pairs["start"].to_numpy().astype(np.int64),
                                   pairs["sys_start"].to_numpy().astype(np.int64))
                  if tree is not None and pairs.height else np.zeros(pairs.height, bool))
        return pairs.with_columns(in_span=pl.Series(inside, dtype=pl.Boolean))
    pairs = k.join(s, on=["sent", "pred"])
    overlap = (pl.col("sys_start") <= pl.col("end")) & (pl.col("start") <= pl.col("sys_end"))
    return pairs.with_columns(in_span=overlap & (pl.col("sys_pieces") != pl.col("pieces")))


def _spurious_args(mode: str, k: pl.DataFrame, resp: pl.DataFrame, near: pl.DataFrame,
                   place: list[str]) -> pl.DataFrame:
    """Response arguments that no key argument explains: none at the same place (any role)
    and none the boundary of one (head: the same role in its subtree; span: overlapping)."""
    left = resp.join(k.select("sent", "pred", *place), on=["sent", "pred", *place],
                     how="anti")
    if mode == "head":
        taken = near.filter(pl.col("in_span")).select("sent", "pred", start="sys_start",
                                                      role="sys_role")
        return left.join(taken, on=["sent", "pred", "start", "role"], how="anti")
    taken = near.filter(pl.col("sys_start") <= pl.col("end"),
                        pl.col("start") <= pl.col("sys_end")).select(
        "sent", "pred", pieces="sys_pieces")
    return left.join(taken, on=["sent", "pred", "pieces"], how="anti")


def classify_preds(key: pl.DataFrame, resp: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(classes of the key predicates, the response's spurious predicates): correct (the
    same word and sense key), sense (the same word, another), missed; a response predicate
    on a word that is no key predicate is spurious."""
    pk = ["sent", "pred"]
    both = key.join(resp.select(*pk, sys_role="roleset", sys_key="sense_key"), on=pk,
                    how="left", maintain_order="left")
    cls = (pl.when(pl.col("sys_key").is_null()).then(P_MISSED)
           .when(pl.col("sys_key") == pl.col("sense_key")).then(P_CORRECT)
           .otherwise(P_SENSE).cast(pl.UInt8))
    classes = both.with_columns(cls=cls)
    spurious = resp.join(key.select(pk), on=pk, how="anti")
    return classes, spurious


def class_rows(unit: str, classes: pl.DataFrame, spurious: pl.DataFrame) -> pl.DataFrame:
    """The ``srl_classes`` rows of one system and unit type: its key units with their class
    and its spurious units, in document order (``cls`` by name)."""
    names = pl.Series(SRL_CLASSES if unit == "argument" else PRED_CLASSES, dtype=pl.String)
    if unit == "predicate":
        classes = classes.select("sent", "pred", start="pred", end="pred",
                                 pieces=pl.lit(None, pl.String), role="roleset", cls="cls",
                                 sys_start=pl.when(pl.col("sys_key").is_not_null())
                                 .then(pl.col("pred")), sys_role="sys_role")
        classes = classes.with_columns(sys_end=pl.col("sys_start"))
        spurious = spurious.select("sent", "pred", start="pred", end="pred",
                                   pieces=pl.lit(None, pl.String), role="roleset")
    key = classes.with_columns(in_key=pl.lit(True), cls=names.gather(classes["cls"]))
    sp = spurious.with_columns(in_key=pl.lit(False), cls=pl.lit("spurious"),
                               sys_start="start", sys_end="end", sys_role="role")
    cols = CLASS_COLUMNS[1:]
    return pl.concat([key.select(cols), sp.select(cols)], how="vertical_relaxed").sort(
        "sent", "pred", "start", "end", "in_key", "role", descending=[False] * 4 + [True, False]
    ).with_columns(unit=pl.lit(unit)).select(CLASS_COLUMNS)


# ------------------------------------------------------------------------------ counts


@dataclass
class UnitCounts:
    """The engine's counts over one unit type (arguments or predicates) of a shard, or a
    sum: pairs (with the per-sentence differences of right units that the randomization
    test reads), transitions per group (P, G, C, C) and the oracle over key units."""

    pairs: PairCounts
    typed: np.ndarray
    oracle: OracleCounts

    def merge(self, other: UnitCounts) -> UnitCounts:
        self.pairs.merge(other.pairs)
        self.typed = self.typed + other.typed
        self.oracle.merge(other.oracle)
        return self


@dataclass
class SrlCounts:
    """Additive counts of a shard (or a sum): the official score counts of every system
    (``scores``: a frame with ``system``), class counts per system and group (argument
    units by role (N, R, 6), predicate units by PPOS (N, P, 5)), official predicted counts
    (``found``: (N, 2) arguments, predicates) and, when compared, the engine's counts of
    each unit type; for the bootstrap, the score counts per sentence (``sentences``: frames
    with ``system`` and ``sent``)."""

    scores: list[pl.DataFrame]
    arg_classes: np.ndarray
    pred_classes: np.ndarray
    found: np.ndarray
    units: dict[str, UnitCounts] = field(default_factory=dict)
    sentences: list[pl.DataFrame] | None = None

    def merge(self, other: SrlCounts) -> SrlCounts:
        self.scores = [_sum_scores(self.scores + other.scores)]
        if self.sentences is not None:
            self.sentences = self.sentences + other.sentences
        self.arg_classes = self.arg_classes + other.arg_classes
        self.pred_classes = self.pred_classes + other.pred_classes
        self.found = self.found + other.found
        for name, part in other.units.items():
            self.units[name].merge(part)
        return self


def _sum_scores(parts: list[pl.DataFrame]) -> pl.DataFrame:
    from sysdiff.transforms.srl_scores import sum_counts

    return sum_counts(parts, ("system",))


@dataclass(frozen=True)
class Vocab:
    """Corpus-wide codes (equal in every shard): roles and predicate PPOS groups."""

    roles: tuple[str, ...]
    pos: tuple[str, ...]

    @property
    def labels(self) -> list[str]:
        return [*self.roles, *EXTRA_LABELS]


@dataclass(frozen=True)
class ShardData:
    """One shard's frames: the key's words (``sent, id, head, pos``), predicates and
    arguments, and each system's predicates and arguments; sentences ``lo`` .. ``lo +
    n_sents``."""

    mode: str
    lo: int
    n_sents: int
    key_tokens: pl.DataFrame
    key_preds: pl.DataFrame
    key_args: pl.DataFrame
    systems: list[tuple[pl.DataFrame, pl.DataFrame]]


def codes(values: pl.Series, vocab: Sequence[str]) -> np.ndarray:
    """Codes of ``values`` in ``vocab`` (every value must be in it)."""
    return values.replace_strict(list(vocab), list(range(len(vocab))),
                                 return_dtype=pl.Int64).to_numpy()


def _matched_args(mode: str, kp: pl.DataFrame, sp: pl.DataFrame, sa: pl.DataFrame
                  ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(arguments of predicates the key has too, the others): span mode matches a
    predicate by position and verb; head mode by position (as each scorer does)."""
    pk = ["sent", "pred"]
    if mode == "head":
        return sa, sa.clear()
    same = kp.join(sp.select(*pk, s_key="sense_key"), on=pk).filter(
        pl.col("sense_key") == pl.col("s_key")).select(pk)
    return sa.join(same, on=pk, how="semi"), sa.join(same, on=pk, how="anti")


def comparison_counts(data: ShardData, vocab: Vocab, compare: bool = True,
                      per_sentence: bool = False) -> tuple[SrlCounts, list[pl.DataFrame]]:
    """The additive counts of a shard and each system's ``srl_classes`` rows (see the
    module); with ``compare``, also every pair's engine counts of both unit types; with
    ``per_sentence``, the score counts of each sentence (bootstrap intervals)."""
    mode, n = data.mode, len(data.systems)
    tree = key_tree(data.key_tokens) if mode == "head" else None
    not_v = pl.col("role") != "V" if mode == "span" else pl.lit(True)
    key_args = data.key_args.filter(not_v)
    r_n, p_n = len(vocab.roles), len(vocab.pos)
    arg_classes = np.zeros((n, r_n, len(SRL_CLASSES)), np.int64)
    pred_classes = np.zeros((n, p_n, len(PRED_CLASSES)), np.int64)
    found = np.zeros((n, 2), np.int64)
    scores, rows, arg_found, pred_found, sentences = [], [], [], [], []
    pos_of = data.key_tokens.select("sent", pred="id", group=pl.col("pos").fill_null("_"))
    key_role = codes(key_args["role"], vocab.roles)
    key_pos = codes(data.key_preds.join(pos_of, on=["sent", "pred"], how="left",
                                        maintain_order="left")["group"].fill_null("_"),
                    vocab.pos)
    for i, (sp, sa) in enumerate(data.systems):
        scores.append(score_counts(mode, data.key_preds, data.key_args, sp, sa,
                                   data.n_sents).with_columns(system=pl.lit(str(i))))
        if per_sentence:
            sentences.append(score_counts(mode, data.key_preds, data.key_args, sp, sa,
                                          data.n_sents, ("sent",), data.lo
                                          ).with_columns(system=pl.lit(str(i))))
        matched, other = _matched_args(mode, data.key_preds, sp, sa.filter(not_v))
        a_cls, a_sp = classify_args(mode, key_args, matched, tree)
        a_sp = pl.concat([a_sp, other])
        p_cls, p_sp = classify_preds(data.key_preds, sp)
        arg_found.append((a_cls, a_sp))
        pred_found.append((p_cls, p_sp))
        arg_classes[i] = _class_hist(key_role, a_cls["cls"], codes(a_sp["role"], vocab.roles),
                                     r_n, len(SRL_CLASSES), SPURIOUS)
        sp_pos = codes(p_sp.join(pos_of, on=["sent", "pred"], how="left")["group"]
                       .fill_null("_"), vocab.pos)
        pred_classes[i] = _class_hist(key_pos, p_cls["cls"], sp_pos, p_n, len(PRED_CLASSES),
                                      P_SPURIOUS)
        found[i] = (matched.height, sp.height)
        rows.append(pl.concat([class_rows("argument", a_cls, a_sp),
                               class_rows("predicate", p_cls, p_sp)]))
    counts = SrlCounts(scores, arg_classes, pred_classes, found,
                       sentences=sentences if per_sentence else None)
    if compare:
        counts.units["argument"] = _arg_units(data, vocab, key_args, arg_found)
        counts.units["predicate"] = _pred_units(data, vocab, pos_of, pred_found)
    return counts, rows


def _class_hist(key_group: np.ndarray, cls: pl.Series, spurious_group: np.ndarray,
                n_groups: int, n_classes: int, spurious: int) -> np.ndarray:
    """(G, C) class counts: key units by group and class, spurious units by group."""
    c = cls.to_numpy().astype(np.int64)
    out = np.bincount(key_group * n_classes + c, minlength=n_groups * n_classes)
    out = out.reshape(n_groups, n_classes)
    out[:, spurious] += np.bincount(spurious_group, minlength=n_groups)
    return out


def _pairs_of(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def _unit_counts(m: LabelMatrix, classes: np.ndarray, n_classes: int, groups: np.ndarray,
                 n_groups: int) -> UnitCounts:
    """The engine's counts over one unit type: pairs, per-group class transitions, the
    oracle over key units."""
    n = m.n_systems
    pairs = _pairs_of(n)
    pc = pair_counts(m, pairs)
    typed = transition_counts(classes, n_classes, groups, n_groups, pairs,
                              [m.pair_units(i, j) for i, j in pairs])
    key = m.in_key
    oracle = oracle_counts(m.correct[:, key], m.gold[key] % n_groups, n_groups,
                           pairs if n > MAX_ALL_SUBSETS else None)
    return UnitCounts(pc, typed, oracle)


def _units_frame(key: pl.DataFrame, spurious: list[pl.DataFrame], cols: list[str]
                 ) -> pl.DataFrame:
    """Key units and every system's spurious units (matched on ``cols``), sorted; ``u``
    numbers them."""
    parts = [key.select(cols).with_columns(in_key=pl.lit(True))]
    parts += [s.select(cols).with_columns(in_key=pl.lit(False)) for s in spurious]
    units = pl.concat(parts).unique(cols, keep="first").sort(cols, nulls_last=True)
    return units.with_columns(u=pl.int_range(pl.len(), dtype=pl.Int64))


def _arg_units(data: ShardData, vocab: Vocab, key_args: pl.DataFrame,
               found: list[tuple[pl.DataFrame, pl.DataFrame]]) -> UnitCounts:
    """The argument units' matrix: values are the role a system gives the unit (a key
    argument: the role at its place, ``<boundary>`` or ``<missed>``; a spurious one: its
    role, or ``<absent>``); correct = the gold role, or absent on a spurious unit."""
    r_n = len(vocab.roles)
    b_code, m_code, a_code = r_n, r_n + 1, r_n + 2
    cols = ["sent", "pred", "start", "end", "pieces", "role"]
    units = _units_frame(key_args, [sp for _, sp in found], cols)
    in_key = units["in_key"].to_numpy()
    key_u = key_args.select(cols).join(units.select(*cols, "u"), on=cols, nulls_equal=True,
                                       maintain_order="left")["u"].to_numpy()
    role = codes(units["role"], vocab.roles)
    n, u = len(found), units.height
    dtype = smallest_uint(r_n + 3)
    values = np.full((n, u), a_code, dtype)
    classes = np.full((n, u), ABSENT, np.uint8)
    for i, (cls_frame, sp) in enumerate(found):
        cls = cls_frame["cls"].to_numpy()
        got = cls_frame["sys_role"].fill_null(vocab.roles[0] if r_n else "")
        label = np.where(cls == CORRECT, codes(cls_frame["role"], vocab.roles),
                         np.where(cls == ROLE, codes(got, vocab.roles) if r_n else 0,
                                  np.where(cls == BOUNDARY, b_code, m_code)))
        values[i, key_u] = label
        classes[i, key_u] = cls
        if sp.height:
            rows = sp.select(cols).join(units.select(*cols, "u"), on=cols,
                                        nulls_equal=True)["u"].to_numpy()
            values[i, rows] = role[rows]
            classes[i, rows] = SPURIOUS
    gold = np.where(in_key, role, r_n + role)
    correct = np.where(in_key[None, :], values == role[None, :], values == a_code)
    sent = (units["sent"].to_numpy() - data.lo).astype(np.int64)
    m = LabelMatrix(values=values, correct=correct, display=values, gold=gold,
                    n_labels=r_n + 3, n_groups=2 * r_n, sent=sent, n_sents=data.n_sents,
                    present=classes == SPURIOUS, in_key=in_key)
    return _unit_counts(m, classes, len(SRL_CLASSES), role, r_n)


def _pred_units(data: ShardData, vocab: Vocab, pos_of: pl.DataFrame,
                found: list[tuple[pl.DataFrame, pl.DataFrame]]) -> UnitCounts:
    """The predicate units' matrix: values are classes, a wrong sense by the sense it
    gives (two wrong senses differ); display and transitions by class; the group is the
    key word's PPOS."""
    pk = ["sent", "pred"]
    units = _units_frame(data.key_preds, [sp for _, sp in found], pk)
    in_key = units["in_key"].to_numpy()
    key_u = data.key_preds.select(pk).join(units.select(*pk, "u"), on=pk,
                                           maintain_order="left")["u"].to_numpy()
    n, u = len(found), units.height
    senses = pl.concat([c["sys_key"] for c, _ in found] or [pl.Series([], dtype=pl.String)])
    senses = senses.drop_nulls().unique().sort().to_list()
    values = np.full((n, u), P_ABSENT, np.int64)
    classes = np.full((n, u), P_ABSENT, np.uint8)
    for i, (cls_frame, sp) in enumerate(found):
        cls = cls_frame["cls"].to_numpy()
        sense = cls_frame["sys_key"].fill_null(senses[0] if senses else "")
        k = codes(sense, senses) if senses else np.zeros(cls.size, np.int64)
        values[i, key_u] = np.where(cls == P_SENSE, len(PRED_CLASSES) + k, cls)
        classes[i, key_u] = cls
        if sp.height:
            rows = sp.select(pk).join(units.select(*pk, "u"), on=pk)["u"].to_numpy()
            values[i, rows] = P_SPURIOUS
            classes[i, rows] = P_SPURIOUS
    group = codes(units.join(pos_of, on=pk, how="left", maintain_order="left")["group"]
                  .fill_null("_"), vocab.pos)
    sent = (units["sent"].to_numpy() - data.lo).astype(np.int64)
    m = LabelMatrix(values=values.astype(smallest_uint(int(values.max(initial=0)) + 1)),
                    correct=_PRED_OK[classes], display=classes, gold=group,
                    n_labels=len(PRED_CLASSES), n_groups=len(vocab.pos), sent=sent,
                    n_sents=data.n_sents, present=classes == P_SPURIOUS, in_key=in_key)
    return _unit_counts(m, classes, len(PRED_CLASSES), group, len(vocab.pos))


__all__ = ["SRL_CLASSES", "PRED_CLASSES", "ShardData", "SrlCounts", "Vocab",
           "classify_args", "classify_preds", "comparison_counts", "key_tree"]
