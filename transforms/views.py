"""Views (label functions over words) and the wide integer label matrix of a corpus.

A view gives every word two codes per source (the key and each system):
- a *value* code (Int64): two sources agree on a word iff their value codes are equal;
- a *display* code (UInt32 into ``labels``): the label shown in change tables and used to
  group per-label counts. For most views both are the label itself; for ``las`` the value is
  the pair (HEAD, DEPREL) and the display is the DEPREL (METRICS 1.4); for ``head`` the
  display groups by the gold DEPREL's head index string.
Systems are aligned to the key once at ingest (same words in the same order), so building
the matrix is N horizontal stacks of columns, never a join between systems.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import PTB_PUNCT

VIEWS = ("upos", "xpos", "feats", "lemma", "head", "deprel", "las")
TOKEN_VIEWS = ("upos", "xpos", "feats", "lemma")
DEP_VIEWS = ("head", "deprel", "las")
WORD_COLUMNS = ["sent", "id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel"]
_SHIFT = 1 << 32


def check_view(view: str) -> None:
    """Refuse an unknown view with the list of known ones."""
    if view not in VIEWS:
        raise InputError(f"unknown view '{view}'; expected one of {', '.join(VIEWS)}")


def default_punct(view: str) -> bool:
    """METRICS 1.1: token views count punctuation, dependency views exclude it."""
    return view not in DEP_VIEWS


def punct_mask(key_words: pl.DataFrame, fmt: str) -> np.ndarray:
    """True for words whose *gold* tag marks punctuation (UPOS PUNCT; PTB set for CoNLL-X)."""
    expr = pl.col("upos") == "PUNCT"
    if fmt == "conllx":
        expr = expr | pl.col("xpos").is_in(list(PTB_PUNCT))
    return key_words.select(expr.fill_null(False))[:, 0].to_numpy()


def apply_mapping(words: pl.DataFrame, view: str, mapping: Mapping[str, str]) -> pl.DataFrame:
    """Rename labels ``old -> new`` in the label column a view reads (before comparison).

    A mapping applies to every label view (UPOS, XPOS, FEATS, LEMMA, DEPREL); HEAD is a
    number, so the ``head`` view is never mapped.
    """
    if not mapping or view == "head":
        return words
    col = "deprel" if view == "las" else view
    return words.with_columns(pl.col(col).replace(dict(mapping)))


@dataclass(frozen=True)
class ViewMatrix:
    """Wide label matrix of one view: rows are the key's words, one column pair per source."""

    view: str
    systems: list[str]
    labels: list[str]
    sent: np.ndarray  # Int32 sentence index of each word
    gold_value: np.ndarray  # Int64
    gold_display: np.ndarray  # UInt32 index into labels
    values: np.ndarray  # Int64 (n_systems, n_words)
    displays: np.ndarray  # UInt32 (n_systems, n_words)
    punct: np.ndarray  # bool: gold punctuation
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    all_sents: np.ndarray | None = None  # every sentence of the shard, evaluated units or not

    @property
    def n_words(self) -> int:
        return int(self.gold_value.shape[0])

    def select(self, mask: np.ndarray) -> ViewMatrix:
        """The matrix restricted to the words where ``mask`` holds."""
        return ViewMatrix(
            self.view, self.systems, self.labels, self.sent[mask], self.gold_value[mask],
            self.gold_display[mask], self.values[:, mask], self.displays[:, mask],
            self.punct[mask], {k: v[mask] for k, v in self.extra.items()}, self.sentences,
        )

    @property
    def sentences(self) -> np.ndarray:
        """Every sentence of the shard, including those left with no evaluated unit."""
        return self.all_sents if self.all_sents is not None else np.unique(self.sent)


def _display_column(view: str) -> str:
    return {"las": "deprel", "head": "deprel"}.get(view, view)


def encode(columns: list[pl.Series]) -> tuple[list[str], list[np.ndarray]]:
    """Dictionary-encode several string columns into one shared, sorted code space."""
    labels = pl.concat([c.fill_null("_").rename("x") for c in columns]).unique().sort()
    enum = pl.Enum(labels.to_list())
    codes = [c.fill_null("_").cast(enum).to_physical().to_numpy().astype(np.uint32)
             for c in columns]
    return labels.to_list(), codes


def view_matrix(
    view: str,
    key: pl.DataFrame,
    systems: Mapping[str, pl.DataFrame],
    fmt: str = "conllu",
    mappings: Mapping[str, Mapping[str, str]] | None = None,
) -> ViewMatrix:
    """Build the wide matrix of ``view`` for the key and systems (words in key order).

    ``mappings`` maps a source name (a system, or ``"@key"``) to its label mapping.
    """
    check_view(view)
    mappings = mappings or {}
    names = list(systems)
    frames = [apply_mapping(key, view, mappings.get("@key", {}))]
    frames += [apply_mapping(systems[n], view, mappings.get(n, {})) for n in names]
    for n, f in zip(names, frames[1:], strict=True):
        if f.height != key.height:
            raise InputError(f"system '{n}' has {f.height} words, the key {key.height}")
    labels, disp = encode([f[_display_column(view)] for f in frames])
    if view == "head":
        vals = [f["head"].fill_null(-1).to_numpy().astype(np.int64) for f in frames]
    elif view == "las":
        vals = [f["head"].fill_null(-1).to_numpy().astype(np.int64) * _SHIFT + d
                for f, d in zip(frames, disp, strict=True)]
    else:
        vals = [d.astype(np.int64) for d in disp]
    n = len(names)
    shape = (n, key.height)
    return ViewMatrix(
        view=view,
        systems=names,
        labels=labels,
        sent=key["sent"].to_numpy().astype(np.int32),
        gold_value=vals[0],
        gold_display=disp[0],
        values=np.vstack(vals[1:]) if n else np.empty(shape, np.int64),
        displays=np.vstack(disp[1:]) if n else np.empty(shape, np.uint32),
        punct=punct_mask(key, fmt),
        extra={"distance": _distance(key)},
        all_sents=np.unique(key["sent"].to_numpy()),
    )


def _distance(key: pl.DataFrame) -> np.ndarray:
    """|head - id| of the gold tree (0 for the root), for dependency-distance buckets."""
    return key.select(
        pl.when(pl.col("head") > 0).then((pl.col("head") - pl.col("id")).abs())
        .otherwise(0).fill_null(0)
    )[:, 0].to_numpy().astype(np.int32)
