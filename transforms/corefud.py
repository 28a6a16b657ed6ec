"""Mention matching as the CorefUD scorer does it (METRICS 2.7): which response mention is
"the same mention" as which key mention, under ``match`` exact|partial|head and
``singletons`` keep|drop.

The contract is ufal/corefud-scorer at commit 4fd7b0e0 (``-a exact|partial|head``, ``-s``,
zeros ``-z dependent``). Per document:

1. ``drop``: every entity with one mention leaves the key and the response, before matching;
2. zero mentions (the head is an empty node) are paired first, in every mode: a
   maximum-weight one-to-one assignment over the key's and the response's zeros, weight
   10 x F1 of the heads' DEPS (parent, relation) pairs + F1 of their parents, 0 unless both
   are in one sentence; pairs of weight > 0;
3. identical mentions: the same span (head mode: and the same head);
4. partial: a response mention S inside the key mention K that holds K's head, weight
   |S|/|K|; head: a response mention with K's head, weight |K and S|/|K|; a maximum-weight
   one-to-one assignment over the document's mentions left, pairs of weight > 0.

Heads come from the file only (``mentions.head``: the CorefUD ``head`` attribute, else the
first word). Both assignments are solved as the scorer solves them: one matrix per
document, key mentions by rows and response mentions by columns in the scorer's order
(start, then end), ``scipy.optimize.linear_sum_assignment`` on the negated weights, so that
ties fall the same way. A document whose matrix would exceed :data:`DENSE_CELLS` cells is
solved one sentence at a time instead (the same total weight; a tie may fall otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.optimize import linear_sum_assignment

from sysdiff.schemas.vocabulary import MATCH_MODES, SINGLETON_MODES

DENSE_CELLS = 4_000_000
_DOC = ["doc", "part"]
_SPAN = [*_DOC, "start", "end"]
#: The identity of a mention unit in ARCS tables: the span, and in head mode the head
#: (``hid``; -1 in the other modes, where heads do not tell mentions apart).
UNIT = [*_SPAN, "hid"]
_PAIR_SCHEMA = {"doc": pl.Utf8, "part": pl.Int32, "start": pl.Int32, "end": pl.Int32,
                "k_start": pl.Int32, "k_end": pl.Int32, "k_head": pl.Int32}


@dataclass(frozen=True)
class CorefOptions:
    """How key and response mentions are matched, and whether singleton entities count."""

    match: str = "exact"
    singletons: str = "keep"

    def __post_init__(self) -> None:
        if self.match not in MATCH_MODES:
            raise ValueError(f"match must be one of {MATCH_MODES}, not {self.match!r}")
        if self.singletons not in SINGLETON_MODES:
            raise ValueError(f"singletons must be one of {SINGLETON_MODES}, not "
                             f"{self.singletons!r}")

    @property
    def keep_singletons(self) -> bool:
        return self.singletons == "keep"

    def signature(self) -> str:
        """The ``options`` string of the rows computed with these options."""
        return f"match:{self.match}|singletons:{self.singletons}"


def default_options(fmt: str | None) -> CorefOptions:
    """The scorer's defaults for a key of format ``fmt``: ``corefud-scorer.py``'s (head match,
    singletons ignored) for CorefUD, the reference scorer's (exact, kept) otherwise."""
    return CorefOptions("head", "drop") if fmt == "corefud" else CorefOptions()


def drop_singletons(mentions: pl.DataFrame) -> pl.DataFrame:
    """Mentions of entities with at least two mentions."""
    return mentions.filter(pl.len().over("doc", "part", "entity") > 1)


def with_heads(mentions: pl.DataFrame) -> pl.DataFrame:
    """``mentions`` with ``head`` (the first token where none is known), ``zero_deps`` and
    ``sent`` filled in for tables that lack them."""
    fill = {"head": pl.col("start"), "zero_deps": pl.lit(None, pl.Utf8),
            "sent": pl.lit(0, pl.Int32)}
    m = mentions.with_columns(**{c: e for c, e in fill.items() if c not in mentions.columns})
    return m.with_columns(head=pl.coalesce("head", "start").cast(pl.Int32))


def matched(key: pl.DataFrame, resp: pl.DataFrame, options: CorefOptions
            ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Key and response as the scorer compares them: singletons dropped (``drop``), ``hid``
    on both (see :data:`UNIT`), and on the response ``k_start``, ``k_end``, ``k_hid``: the
    key mention it is matched to (null: none)."""
    key, resp = with_heads(key), with_heads(resp)
    if not options.keep_singletons:
        key, resp = drop_singletons(key), drop_singletons(resp)
    head_mode = options.match == "head"
    hid = (pl.col("head") if head_mode else pl.lit(-1)).cast(pl.Int32)
    key, resp = key.with_columns(hid=hid), resp.with_columns(hid=hid)
    pairs = alignment(key, resp, options.match).with_columns(
        k_hid=(pl.col("k_head") if head_mode else pl.lit(-1)).cast(pl.Int32)).drop("k_head")
    resp = resp.join(pairs, on=_SPAN, how="left", maintain_order="left")
    return key, resp


def alignment(key: pl.DataFrame, resp: pl.DataFrame, match: str) -> pl.DataFrame:
    """The scorer's one-to-one mention alignment: doc, part, start, end (response mention),
    k_start, k_end, k_head (its key mention). Mentions need doc, part, start, end, head,
    sent, zero_deps."""
    cols = [*_SPAN, "head", "sent", "zero_deps"]
    k, r = key.select(cols), resp.select(cols)
    zero = _zero_pairs(k, r)
    k, r = _unpaired(k, r, zero)
    same = ["start", "end", *(["head"] if match == "head" else [])]
    exact = k.join(r.select(*_DOC, *same), on=[*_DOC, *same]).select(
        *_SPAN, k_start="start", k_end="end", k_head="head")
    parts = [zero, exact]
    if match != "exact":
        k, r = _unpaired(k, r, exact)
        parts.append(_scored_pairs(k, r, match))
    return pl.concat([p.cast(_PAIR_SCHEMA) for p in parts])


def _unpaired(k: pl.DataFrame, r: pl.DataFrame, pairs: pl.DataFrame
              ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The key and response mentions that ``pairs`` leaves out."""
    taken = pairs.select(*_DOC, start="k_start", end="k_end")
    return (k.join(taken, on=_SPAN, how="anti", maintain_order="left"),
            r.join(pairs.select(_SPAN), on=_SPAN, how="anti", maintain_order="left"))


def _doc_bounds(k: pl.DataFrame, r: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Row bounds of each document (of either side) in ``k`` and ``r``, both sorted by
    (doc, part): document n is rows ``kb[n]:kb[n+1]`` of k."""
    docs = pl.concat([k.select(_DOC), r.select(_DOC)]).unique().sort(_DOC).with_row_index("d")
    kd = k.select(_DOC).join(docs, on=_DOC, maintain_order="left")["d"].to_numpy()
    rd = r.select(_DOC).join(docs, on=_DOC, maintain_order="left")["d"].to_numpy()
    at = np.arange(docs.height + 1)
    return np.searchsorted(kd, at), np.searchsorted(rd, at)


def _pairs_frame(k: pl.DataFrame, r: pl.DataFrame, ki: list[np.ndarray],
                 rj: list[np.ndarray]) -> pl.DataFrame:
    """Pairs (row ki of k, row rj of r) as an alignment frame."""
    if not ki:
        return pl.DataFrame(schema=_PAIR_SCHEMA)
    a, b = np.concatenate(ki).astype(np.int64), np.concatenate(rj).astype(np.int64)
    return pl.concat([r[b].select(_SPAN),
                      k[a].select(k_start="start", k_end="end", k_head="head")],
                     how="horizontal")


def _assign(sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scorer's assignment: ``linear_sum_assignment`` of the negated weights, pairs of
    weight > 0."""
    a, b = linear_sum_assignment(-sim)
    keep = sim[a, b] > 0
    return a[keep], b[keep]


# ------------------------------------------------------------------------ zero mentions


def _dep_sets(deps: str | None) -> tuple[set, set]:
    """The (parent, relation) pairs and the parents of a DEPS value (``8:conj|9.1:nsubj``)."""
    pairs = set()
    for item in (deps or "").split("|"):
        if item and item != "_":
            parent, _, rel = item.partition(":")
            pairs.add((parent, rel))
    return pairs, {p for p, _ in pairs}


def _f_score(a: set, b: set) -> float:
    """F1 of two sets as the scorer computes it (0 when either is empty)."""
    if not a or not b:
        return 0.0
    common = len(a & b)
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0


def zero_score(key_deps: str | None, resp_deps: str | None) -> float:
    """The weight of a key and a response zero of one sentence: 10 x F1 of their heads'
    (parent, relation) pairs + F1 of the parents alone."""
    kp, kh = _dep_sets(key_deps)
    rp, rh = _dep_sets(resp_deps)
    return 0.0 + 10 * _f_score(kp, rp) + _f_score(kh, rh)


def _zero_pairs(k: pl.DataFrame, r: pl.DataFrame) -> pl.DataFrame:
    """Step 2: key zeros paired with response zeros (dependent match), per document."""
    kz = k.filter(pl.col("zero_deps").is_not_null()).sort(_SPAN)
    rz = r.filter(pl.col("zero_deps").is_not_null()).sort(_SPAN)
    if not (kz.height and rz.height):
        return pl.DataFrame(schema=_PAIR_SCHEMA)
    kb, rb = _doc_bounds(kz, rz)
    kz = kz.with_row_index("i")
    rz = rz.with_row_index("j")
    cand = kz.join(rz.select(*_DOC, "sent", "j", resp_deps="zero_deps"), on=[*_DOC, "sent"])
    weight = np.array([zero_score(a, b) for a, b in
                       zip(cand["zero_deps"], cand["resp_deps"], strict=True)])
    ci, cj = cand["i"].to_numpy().astype(np.int64), cand["j"].to_numpy().astype(np.int64)
    ki, rj = [], []
    for n in range(len(kb) - 1):
        if kb[n] == kb[n + 1] or rb[n] == rb[n + 1]:
            continue
        sim = np.zeros((kb[n + 1] - kb[n], rb[n + 1] - rb[n]))
        here = (ci >= kb[n]) & (ci < kb[n + 1])
        sim[ci[here] - kb[n], cj[here] - rb[n]] = weight[here]
        a, b = _assign(sim)
        ki.append(a + kb[n])
        rj.append(b + rb[n])
    return _pairs_frame(kz, rz, ki, rj)


# ---------------------------------------------------------------- partial and head match


def _weights(ks: np.ndarray, ke: np.ndarray, kh: np.ndarray, ss: np.ndarray, se: np.ndarray,
             sh: np.ndarray, match: str) -> np.ndarray:
    """The scorer's match scores, key mentions by rows, response mentions by columns."""
    ks, ke, kh = ks[:, None], ke[:, None], kh[:, None]
    size = ke - ks + 1
    if match == "partial":
        ok = (ks <= ss) & (se <= ke) & (ss <= kh) & (kh <= se)
        return np.where(ok, (se - ss + 1) / size, 0.0)
    overlap = np.clip(np.minimum(ke, se) - np.maximum(ks, ss) + 1, 0, None)
    return np.where(kh == sh, overlap / size, 0.0)


def _scored_pairs(k: pl.DataFrame, r: pl.DataFrame, match: str) -> pl.DataFrame:
    """Step 4: partial or head match of the mentions left, per document."""
    k, r = k.sort(_SPAN), r.sort(_SPAN)
    if not (k.height and r.height):
        return pl.DataFrame(schema=_PAIR_SCHEMA)
    kb, rb = _doc_bounds(k, r)
    kc = {c: k[c].to_numpy().astype(np.int64) for c in ("start", "end", "head", "sent")}
    rc = {c: r[c].to_numpy().astype(np.int64) for c in ("start", "end", "head", "sent")}
    ki, rj = [], []
    for n in range(len(kb) - 1):
        k0, k1, r0, r1 = kb[n], kb[n + 1], rb[n], rb[n + 1]
        if k0 == k1 or r0 == r1:
            continue
        blocks = ([(np.arange(k0, k1), np.arange(r0, r1))]
                  if (k1 - k0) * (r1 - r0) <= DENSE_CELLS
                  else _sentence_blocks(kc["sent"], rc["sent"], k0, k1, r0, r1))
        for rows, cols in blocks:
            sim = _weights(*(kc[c][rows] for c in ("start", "end", "head")),
                           *(rc[c][cols] for c in ("start", "end", "head")), match)
            a, b = _assign(sim)
            ki.append(rows[a])
            rj.append(cols[b])
    return _pairs_frame(k, r, ki, rj)


def _sentence_blocks(ksent: np.ndarray, rsent: np.ndarray, k0: int, k1: int, r0: int,
                     r1: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rows and columns of one document grouped by sentence (mentions of different
    sentences never match), in the document's order."""
    rows, cols = np.arange(k0, k1), np.arange(r0, r1)
    out = []
    for s in np.intersect1d(ksent[rows], rsent[cols]):
        out.append((rows[ksent[rows] == s], cols[rsent[cols] == s]))
    return out
