"""Alignment of expected and actual sentences (by id or by position)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.formats.unl import NlSentence, UnlChunk, UnlSentence
from sysdiff.schemas.frozen import read_only

# --------------------------------------------------------------------------------------------
# Alignment


@dataclass(frozen=True)
class Alignment:
    """``partner[i]`` = index of the actual sentence aligned with expected sentence i (-1:
    none); ``unmatched_actual``: the actual sentences no expected sentence is aligned with.
    A task parameter: read-only arrays, notes a tuple."""

    partner: np.ndarray
    by: str
    unmatched_actual: np.ndarray
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "partner", read_only(np.asarray(self.partner)))
        object.__setattr__(self, "unmatched_actual",
                           read_only(np.asarray(self.unmatched_actual)))
        object.__setattr__(self, "notes", tuple(self.notes))

    def __reduce__(self):  # unpickled arrays would be writable again
        return (Alignment, (self.partner, self.by, self.unmatched_actual, self.notes))


def _ids(sentences: Sequence[UnlSentence | NlSentence]) -> list[str | None]:
    return [s.sent_id for s in sentences]


def align_sentences(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    mode: str = "auto",
) -> Alignment:
    """Align by id when every sentence of both sides has a unique id (``auto``), else by
    position. ``id``/``position`` force a mode."""
    return align_ids(_ids(expected), _ids(actual), mode)


def align_ids(expected_ids: Sequence[str | None] | pl.Series,
              actual_ids: Sequence[str | None] | pl.Series, mode: str = "auto") -> Alignment:
    """:func:`align_sentences` over the sentence ids alone (columns; an id repeated in the
    actual file aligns with its last occurrence)."""
    eids = pl.Series("id", expected_ids, dtype=pl.String)
    aids = pl.Series("id", actual_ids, dtype=pl.String)
    ne, na = eids.len(), aids.len()
    notes: list[str] = []
    have_ids = eids.null_count() == 0 and aids.null_count() == 0 and ne > 0 and na > 0
    unique = eids.n_unique() == ne and aids.n_unique() == na
    if mode == "auto" and have_ids and not unique:
        notes.append("duplicate sentence ids: aligned by position instead of id")
    if mode == "auto" and not have_ids and eids.null_count() < ne and aids.null_count() < na:
        notes.append("some sentences have no id: aligned by position instead of id")
    if mode == "id" or (mode == "auto" and have_ids and unique):
        last = (pl.DataFrame({"id": aids, "k": np.arange(na, dtype=np.int64)})
                .filter(pl.col("id").is_not_null()).group_by("id").agg(pl.col("k").max()))
        partner = (eids.to_frame().join(last, on="id", how="left", maintain_order="left")["k"]
                   .fill_null(-1).to_numpy().astype(np.int64))  # fmt: skip
        matched = np.zeros(na, bool)
        matched[partner[partner >= 0]] = True
        missing = eids.filter(pl.Series(partner < 0))
        if missing.len():
            notes.append(f"{missing.len()} expected sentence id(s) not found in actual: "
                         + _preview(missing.head(6).to_list(), total=missing.len()))  # fmt: skip
        if ne and na and not matched.any():
            notes.append(
                "no sentence id matches between expected and actual; "
                "use align='position' if the files are in the same order"
            )
        return Alignment(partner, "id", np.flatnonzero(~matched), notes)
    partner = np.where(np.arange(ne) < na, np.arange(ne), -1).astype(np.int64)
    if na != ne:
        notes.append(f"aligned by position: {ne} expected, {na} actual")
    return Alignment(partner, "position", np.arange(ne, max(na, ne), dtype=np.int64), notes)


def _preview(xs: Sequence[object], k: int = 5, total: int | None = None) -> str:
    total = len(xs) if total is None else total
    head = ", ".join(str(x) for x in xs[:k])
    return head + (f", ... ({total} in all)" if total > k else "")


def _sent_ids(expected: Sequence[UnlSentence | NlSentence], first: int = 0) -> list[str]:
    return [s.sent_id if s.sent_id is not None else f"#{first + k + 1}"
            for k, s in enumerate(expected)]


def aligned_partners(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    mode: str = "auto",
) -> list:
    """For each expected sentence, the aligned actual sentence (None without a partner)."""
    al = align_sentences(expected, actual, mode)
    return [actual[p] if p >= 0 else None for p in al.partner.tolist()]


def _positioned(chunk: UnlChunk, first: int = 0) -> UnlChunk:
    """The chunk with positions ``first``, ``first + 1``, ... (its rows in a list)."""
    sents = chunk.sents.with_columns(
        position=pl.int_range(first, first + chunk.height, dtype=pl.Int64))
    return UnlChunk(sents, chunk.rels, chunk.nodes)
