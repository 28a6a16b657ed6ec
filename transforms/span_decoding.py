"""Spans (METRICS 5): BIO tags decoded into spans.

- :func:`decode` turns prefix and type codes into spans: conlleval rules by default (a span
  starts at B-X, or at I-X/E-X that does not continue a span of type X; it goes on while the
  tags continue it; E-X and S-X end it), seqeval strict with ``iob2`` (only B-X I-X* is a
  span) and ``bioes`` (B-X I-X* E-X, or S-X).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

P_O, P_B, P_I, P_E, P_S = range(5)  # prefix codes
PREFIX_LETTERS = np.array(["O", "B", "I", "E", "S"])
SPAN_COLUMNS = {"sent": pl.Int32, "start": pl.Int32, "end": pl.Int32, "type": pl.String}

# ------------------------------------------------------------------------------ decoding


@dataclass(frozen=True)
class Decoded:
    """Spans as token row ranges ``first..last`` (inclusive), and what the tags say about
    their scheme: the decoded segments the strict rule of IOB2 (a span starts with B-X) and
    of BIOES (B-X ... E-X, or S-X) would drop, whether E-/S- tags occur, whether an I-X
    starts a span (IOB1 style) and whether a B-X starts one where IOB1 writes I-X (after O,
    another type or a sentence start: IOB2 style)."""

    first: np.ndarray
    last: np.ndarray
    n_not_iob2: int
    n_not_bioes: int
    has_es: bool
    has_i_start: bool
    has_b_start: bool
    scheme: str = "auto"

    @property
    def detected(self) -> str:
        """The scheme the tags follow: bioes (E-/S- tags), iob1 (spans start with I-X, B-X
        only between two spans of one type) or iob2 (anything else: spans start with B-X,
        and an I-X that starts one is ill-formed)."""
        return detected_scheme(self.has_es, self.has_i_start, self.has_b_start)

    @property
    def n_ill_formed(self) -> int:
        """Segments ill-formed under the scheme in effect (``auto``: the one detected)."""
        return ill_formed(self.scheme, self.detected, self.n_not_iob2, self.n_not_bioes)


def detected_scheme(has_es: bool, has_i_start: bool, has_b_start: bool) -> str:
    """bioes with E-/S- tags; iob1 when spans start with I-X and never with a B-X that
    IOB1 would write I-X; else iob2."""
    return "bioes" if has_es else "iob1" if has_i_start and not has_b_start else "iob2"


def ill_formed(scheme: str, detected: str, n_not_iob2: int, n_not_bioes: int) -> int:
    """Segments ill-formed under ``scheme`` (``auto``: ``detected``): none under IOB1 (an
    I-X after O or another type starts a span there), the segments that do not start with
    B-X under IOB2, those that are not B-X ... E-X or S-X under BIOES."""
    rule = detected if scheme == "auto" else scheme
    return {"iob1": 0, "iob2": n_not_iob2, "bioes": n_not_bioes}[rule]


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
    inside = ((prev_p == P_B) | (prev_p == P_I)) & (type_code == prev_t)  # a span of its type
    link = ((prefix == P_I) | (prefix == P_E)) & inside
    tagged = prefix != P_O
    first = np.flatnonzero(tagged & ~link)
    breaks = np.flatnonzero(~link)      # every row that does not continue the row before
    nxt = np.searchsorted(breaks, first, side="right")
    last = np.where(nxt < breaks.size, breaks[np.minimum(nxt, breaks.size - 1)] - 1, n - 1)
    p_first, p_last = prefix[first], prefix[last]
    bioes = (p_first == P_S) | ((p_first == P_B) & (p_last == P_E))
    keep = {"auto": None, "iob1": None, "iob2": p_first == P_B, "bioes": bioes}[scheme]
    d = Decoded(first, last, int((p_first != P_B).sum()), int((~bioes).sum()),
                bool(((prefix == P_E) | (prefix == P_S)).any()), bool((p_first == P_I).any()),
                bool(((p_first == P_B) & ~inside[first]).any()), scheme)
    if keep is not None:
        d = replace(d, first=first[keep], last=last[keep])
    return d


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
    return span_rows(tokens, d, tokens["type"].gather(d.first)), d


def span_rows(words: pl.DataFrame, d: Decoded, types: pl.Series) -> pl.DataFrame:
    """The spans ``d`` over ``words`` (``sent``, ``id``, ``form``; file order), with their
    ``types``: ``sent``, ``start``, ``end``, ``type`` and ``text``."""
    span_of = np.full(words.height, -1, np.int64)
    if d.first.size:
        lengths = d.last - d.first + 1
        rows = np.repeat(d.first, lengths) + _ramp(lengths)
        span_of[rows] = np.repeat(np.arange(d.first.size), lengths)
    text = (words.select("form").with_columns(span=pl.Series(span_of))
            .filter(pl.col("span") >= 0).group_by("span", maintain_order=True)
            .agg(pl.col("form").str.join(" ")))
    return pl.DataFrame({
        "sent": words["sent"].gather(d.first), "start": words["id"].gather(d.first) - 1,
        "end": words["id"].gather(d.last) - 1, "type": types,
        "text": text["form"] if d.first.size else pl.Series([], dtype=pl.String),
    }).cast({**SPAN_COLUMNS, "text": pl.String})


def _ramp(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., k-1 for each k of ``lengths``, concatenated."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total) - starts


__all__ = ["decode", "decode_spans", "span_rows"]
