"""Spans of a system tokenised otherwise than the key, placed on the key's text (METRICS 4.1
and 5; the CoNLL 2018 setting applied to spans).

The *text* of a tag file is the characters of its tokens' FORMs without spaces, NFC
(:func:`sysdiff.transforms.alignment.file_text`, every token a word). A system whose text is
the key's has its spans placed by characters: a span covers the characters of its first to
last token. Placed spans are written in the key's coordinates:

- ``sent``: the key sentence that holds the span's first character;
- ``start``: the key token (0-based in that sentence) whose first character is the span's
  first character; when the span starts inside a key token, ``-(1 + c)`` where ``c`` is the
  offset of its first character from the start of the key sentence's text;
- ``end``: the key token of that sentence whose last character is the span's last character;
  otherwise ``-(1 + c)`` with ``c`` the offset of its last character from the start of the
  key sentence's text (``c`` reaches past the sentence when the span crosses into the next
  key sentence).

So a span on key token boundaries has exactly the positions of the key's (or an identically
tokenised system's) span over the same tokens, and every other span has positions no such
span has, equal only for spans with the same characters: spans compare by characters.

For the comparison, :func:`char_positions` turns positions into one sortable integer per
boundary: ``sent << 32 | character offset in the sentence`` (first character for ``start``,
last character for ``end``). A span that crosses a key sentence boundary stays in the
sentence of its first character: it overlaps only key spans of that sentence (never those
of the next) and is never correct, since no key span crosses a sentence.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.transforms.alignment import Text, text_lengths


def _sentence_first(text: Text, sent: np.ndarray) -> np.ndarray:
    """The index of the first token of each sentence number in ``sent``."""
    return np.searchsorted(text.token_sent, sent, side="left")


def place_spans(spans: pl.DataFrame, key: Text, system: Text) -> pl.DataFrame:
    """A system's spans (``sent``, ``start``, ``end`` in its own sentences and tokens, ``type``,
    ``text``) in the key's coordinates (see the module); ``text`` stays the system's words.
    The two texts must be equal."""
    if not spans.height:
        return spans
    n_key = key.token_start.size
    sent = spans["sent"].to_numpy().astype(np.int64)
    first_tok = _sentence_first(system, sent)
    g_start = first_tok + spans["start"].to_numpy()
    g_end = first_tok + spans["end"].to_numpy()
    cs = system.token_start[g_start]
    last = np.maximum(system.token_end[g_end] - 1, cs)     # the span's last character
    kt = np.minimum(np.searchsorted(key.token_end, cs, side="right"), n_key - 1)
    k_sent = key.token_sent[kt]
    k_first = _sentence_first(key, k_sent)
    base = key.token_start[k_first]                         # the key sentence's first char
    start = np.where(key.token_start[kt] == cs, kt - k_first, -(1 + cs - base))
    kt_end = np.minimum(np.searchsorted(key.token_end, last, side="right"), n_key - 1)
    on_end = (key.token_end[kt_end] == last + 1) & (key.token_sent[kt_end] == k_sent)
    end = np.where(on_end, kt_end - k_first, -(1 + last - base))
    return spans.with_columns(
        sent=pl.Series(k_sent, dtype=pl.Int32), start=pl.Series(start, dtype=pl.Int32),
        end=pl.Series(end, dtype=pl.Int32))


def same_span_tokens(key: Text, key_labels: pl.Series, system: Text,
                     sys_labels: pl.Series) -> int:
    """Key tokens (token accuracy's units) that a system token with the same characters
    labels alike; a key token with no system token of its span is wrong."""
    if not key.token_start.size or not system.token_start.size:
        return 0
    at = np.minimum(np.searchsorted(system.token_start, key.token_start, side="left"),
                    system.token_start.size - 1)
    same = (system.token_start[at] == key.token_start) & (system.token_end[at] == key.token_end)
    alike = (sys_labels.gather(pl.Series(at)) == key_labels).fill_null(False).to_numpy()
    return int(np.count_nonzero(same & alike))


def key_offsets(tokens: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Key token rows of whole sentences (``sent``, ``id``, ``form``; in order): their
    sentence, and the offsets of their first character and past their last character from
    the start of their sentence's text."""
    sent = tokens["sent"].to_numpy().astype(np.int64)
    length = text_lengths(tokens["form"]).to_numpy().astype(np.int64)
    end = np.cumsum(length)
    start = end - length
    first = np.r_[True, sent[1:] != sent[:-1]] if sent.size else np.zeros(0, bool)
    base = np.maximum.accumulate(np.where(first, start, 0)) if sent.size else start
    return sent, start - base, end - base


def char_positions(spans: pl.DataFrame, offsets: tuple[np.ndarray, np.ndarray, np.ndarray]
                   ) -> pl.DataFrame:
    """Spans in the key's coordinates with ``pos_start``/``pos_end``: ``sent << 32`` or'ed with
    the offset of their first / last character in the sentence's text (the comparison's
    positions when some system is placed by characters)."""
    k_sent, k_start, k_end = offsets
    sent = spans["sent"].to_numpy().astype(np.int64)
    first = np.searchsorted(k_sent, sent, side="left")
    start = spans["start"].to_numpy().astype(np.int64)
    end = spans["end"].to_numpy().astype(np.int64)
    n = max(k_start.size - 1, 0)
    c_start = np.where(start >= 0, k_start[np.minimum(first + np.maximum(start, 0), n)]
                       if k_start.size else 0, -(start + 1))
    c_end = np.where(end >= 0, k_end[np.minimum(first + np.maximum(end, 0), n)] - 1
                     if k_end.size else 0, -(end + 1))
    return spans.with_columns(pos_start=pl.Series((sent << 32) | c_start, dtype=pl.Int64),
                              pos_end=pl.Series((sent << 32) | c_end, dtype=pl.Int64))


__all__ = ["char_positions", "key_offsets", "place_spans", "same_span_tokens"]
