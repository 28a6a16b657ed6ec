"""Words of two tokenisations of the same text, aligned as ``conll18_ud_eval.py`` aligns them
(METRICS 4.1).

The *text* of a file is the characters of its tokens' FORMs without spaces (a multiword
token contributes its range line's FORM), NFC-normalised. Tokens, words and sentences get
character spans in it. A word outside a multiword token has its token's span; the words of
a multiword token share the token's span. Words with equal spans align one to one; inside a
region covered by multiword tokens (on either side) words align by the longest common
subsequence of their lower-cased forms. The official script walks both word lists with two
pointers; here the stretches where both files agree word for word (most of any real file)
are found with numpy and skipped in one step, so the walk visits only the places where the
tokenisations differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from sysdiff.schemas.formats.conllu import KIND_RANGE, KIND_WORD


@dataclass(frozen=True)
class Text:
    """The character spans of one file's tokens, words and sentences.

    ``word_start``/``word_end`` are the words' spans (a multiword token's span for its words),
    ``word_multi`` marks words of multiword tokens; tokens are the token lines (words outside
    ranges, and ranges) in file order, with their line numbers for messages.
    """

    chars: str
    token_start: np.ndarray
    token_end: np.ndarray
    token_line: np.ndarray
    token_sent: np.ndarray
    token_form: pl.Series
    word_start: np.ndarray
    word_end: np.ndarray
    word_multi: np.ndarray
    word_form: list[str]
    sent_start: np.ndarray
    sent_end: np.ndarray


def _squeezed(forms: pl.Series) -> pl.Series:
    """FORMs without spaces (Unicode category Zs, as the official script) and NFC."""
    return forms.str.replace_all(r"\p{Zs}", "").str.normalize("NFC")


def text_lengths(forms: pl.Series) -> pl.Series:
    """How many characters of the text each FORM holds (spaces removed, NFC), as
    :func:`file_text` counts them."""
    return _squeezed(forms).str.len_chars()


def file_text(tokens: pl.DataFrame) -> Text:
    """The :class:`Text` of a file's token rows (the reader's columns ``sent``, ``id``,
    ``token_id``, ``kind``, ``form``, ``line``; empty nodes are ignored)."""
    rows = tokens.filter(pl.col("kind") != 2)
    bounds = rows["token_id"].str.split_exact("-", 1).struct.rename_fields(["lo", "hi"])
    rows = rows.with_columns(
        lo=bounds.struct.field("lo").cast(pl.Int32, strict=False),
        hi=bounds.struct.field("hi").cast(pl.Int32, strict=False))
    # a word inside a range: the last range of its sentence reaches it
    rows = rows.with_columns(
        reach=pl.when(pl.col("kind") == KIND_RANGE).then(pl.col("hi"))
        .forward_fill().over("sent"))
    is_range = (rows["kind"] == KIND_RANGE).to_numpy()
    is_word = (rows["kind"] == KIND_WORD).to_numpy()
    in_range = is_word & (rows["id"] <= rows["reach"]).fill_null(False).to_numpy()
    is_token = is_range | (is_word & ~in_range)
    forms = _squeezed(rows["form"])
    length = forms.str.len_chars().to_numpy().astype(np.int64)
    tok = np.flatnonzero(is_token)
    token_end = np.cumsum(length[tok])
    token_start = token_end - length[tok]
    # each row's token: the last token row at or before it
    owner = np.searchsorted(tok, np.arange(len(rows)), side="right") - 1
    words = np.flatnonzero(is_word)
    sent = rows["sent"].to_numpy()
    first = np.flatnonzero(np.r_[True, sent[tok][1:] != sent[tok][:-1]])
    last = np.r_[first[1:], tok.size] - 1
    token_form = forms.gather(tok)
    return Text(
        chars="".join(token_form.to_list()), token_form=token_form,
        token_start=token_start, token_end=token_end,
        token_line=rows["line"].to_numpy()[tok], token_sent=sent[tok],
        word_start=token_start[owner[words]], word_end=token_end[owner[words]],
        word_multi=in_range[words],
        word_form=[f.lower() for f in rows["form"].gather(words).to_list()],
        sent_start=token_start[first], sent_end=token_end[last])


def words_text(tokens: pl.DataFrame) -> Text:
    """The :class:`Text` of a file whose every token is one word (no multiword tokens or
    empty nodes, e.g. a tag file): its rows ``sent``, ``form``, ``line`` in file order. The
    same spans as :func:`file_text` gives such rows, without its per-row work."""
    forms = _squeezed(tokens["form"])
    length = forms.str.len_chars().to_numpy().astype(np.int64)
    end = np.cumsum(length)
    start = end - length
    sent = tokens["sent"].to_numpy()
    first = np.flatnonzero(np.r_[True, sent[1:] != sent[:-1]]) if sent.size else \
        np.zeros(0, np.int64)
    last = np.r_[first[1:], sent.size] - 1
    return Text(
        chars=forms.str.join("").item() if forms.len() else "", token_form=forms,
        token_start=start, token_end=end, token_line=tokens["line"].to_numpy(),
        token_sent=sent, word_start=start, word_end=end,
        word_multi=np.zeros(sent.size, bool),
        word_form=tokens["form"].str.to_lowercase().to_list(),
        sent_start=start[first], sent_end=end[last])


def first_difference(a: str, b: str) -> int | None:
    """The index of the first character where two texts differ (None if equal)."""
    if a == b:
        return None
    n = min(len(a), len(b))
    x = np.frombuffer(a[:n].encode("utf-32-le"), np.uint32)
    y = np.frombuffer(b[:n].encode("utf-32-le"), np.uint32)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


def token_at(text: Text, char: int) -> int:
    """The token holding (or following) character ``char``."""
    return int(min(np.searchsorted(text.token_end, char, side="right"),
                   text.token_start.size - 1))


def span_matches(start_a: np.ndarray, end_a: np.ndarray, start_b: np.ndarray,
                 end_b: np.ndarray) -> int:
    """How many spans of ``a`` equal a span of ``b`` (spans of one side do not overlap)."""
    at = np.searchsorted(start_b, start_a)
    at = np.minimum(at, max(start_b.size - 1, 0))
    if not start_b.size:
        return 0
    return int(np.count_nonzero((start_b[at] == start_a) & (end_b[at] == end_a)))


def align_words(gold: Text, system: Text) -> np.ndarray:
    """For every system word, the index of the gold word aligned with it, or -1."""
    out = np.full(system.word_start.size, -1, np.int64)
    run_end, match = _synced_runs(gold, system)
    g_n, s_n = gold.word_start.size, system.word_start.size
    gi = si = 0
    while gi < g_n and si < s_n:
        if match[si] == gi:  # both files agree word for word from here: one step
            e = int(run_end[si])
            out[si:e + 1] = np.arange(gi, gi + e - si + 1)
            gi, si = gi + e - si + 1, e + 1
        elif gold.word_multi[gi] or system.word_multi[si]:
            gs, ss, gi, si = _multiword_span(gold, system, gi, si)
            if gi > gs and si > ss:
                _align_lcs(gold, system, gs, gi, ss, si, out)
        elif (gold.word_start[gi] == system.word_start[si]
              and gold.word_end[gi] == system.word_end[si]):
            out[si] = gi
            gi, si = gi + 1, si + 1
        elif gold.word_start[gi] <= system.word_start[si]:
            gi += 1
        else:
            si += 1
    return out


def _synced_runs(gold: Text, system: Text) -> tuple[np.ndarray, np.ndarray]:
    """``match[s]``: the gold word with the same span as system word s, both outside
    multiword tokens (else -1); ``run_end[s]``: the last system word of the run of such
    words that pair up consecutively from s on."""
    s_n = system.word_start.size
    match = np.full(s_n, -1, np.int64)
    if s_n and gold.word_start.size:
        at = np.minimum(np.searchsorted(gold.word_start, system.word_start, side="left"),
                        gold.word_start.size - 1)
        # the first gold word at that start may be a multiword one: take the first single
        same = ((gold.word_start[at] == system.word_start) & (gold.word_end[at] == system.word_end)
                & ~gold.word_multi[at] & ~system.word_multi)
        match[same] = at[same]
    diagonal = np.where(match >= 0, match - np.arange(s_n), np.iinfo(np.int64).min)
    new_run = np.r_[True, diagonal[1:] != diagonal[:-1]] | (match < 0)
    run_id = np.cumsum(new_run) - 1
    last_of_run = np.r_[np.flatnonzero(new_run)[1:], s_n] - 1
    return last_of_run[run_id], match


def _beyond_end(text: Text, i: int, end: int) -> bool:
    if i >= text.word_start.size:
        return True
    if text.word_multi[i]:
        return bool(text.word_start[i] >= end)
    return bool(text.word_end[i] > end)


def _extend_end(text: Text, i: int, end: int) -> int:
    if text.word_multi[i] and text.word_end[i] > end:
        return int(text.word_end[i])
    return end


def _multiword_span(gold: Text, system: Text, gi: int, si: int) -> tuple[int, int, int, int]:
    """The official ``find_multiword_span``: the words of both files in one region covered
    by multiword tokens, as (gold start, system start, gold end, system end)."""
    if gold.word_multi[gi]:
        end = int(gold.word_end[gi])
        if not system.word_multi[si] and system.word_start[si] < gold.word_start[gi]:
            si += 1
    else:
        end = int(system.word_end[si])
        if not gold.word_multi[gi] and gold.word_start[gi] < system.word_start[si]:
            gi += 1
    gs, ss = gi, si
    g_n, s_n = gold.word_start.size, system.word_start.size
    while not _beyond_end(gold, gi, end) or not _beyond_end(system, si, end):
        if gi < g_n and (si >= s_n or gold.word_start[gi] <= system.word_start[si]):
            end = _extend_end(gold, gi, end)
            gi += 1
        else:
            end = _extend_end(system, si, end)
            si += 1
    return gs, ss, gi, si


def _align_lcs(gold: Text, system: Text, gs: int, ge: int, ss: int, se: int,
               out: np.ndarray) -> None:
    """Align the words of one multiword region by the longest common subsequence of their
    lower-cased forms (the official ``compute_lcs`` and its walk)."""
    g_forms, s_forms = gold.word_form[gs:ge], system.word_form[ss:se]
    n, m = len(g_forms), len(s_forms)
    lcs = np.zeros((n + 1, m + 1), np.int64)
    for g in range(n - 1, -1, -1):
        for s in range(m - 1, -1, -1):
            best = lcs[g + 1, s + 1] + 1 if g_forms[g] == s_forms[s] else 0
            lcs[g, s] = max(best, lcs[g + 1, s], lcs[g, s + 1])
    g = s = 0
    while g < n and s < m:
        if g_forms[g] == s_forms[s]:
            out[ss + s] = gs + g
            g, s = g + 1, s + 1
        elif lcs[g, s] == lcs[g + 1, s]:
            g += 1
        else:
            s += 1


UNALIGNED = "<unaligned>"
#: HEAD values of the projection for what has no key word: the word itself, its head.
NO_WORD, NO_HEAD = -2, -3
LABELS = ("lemma", "upos", "xpos", "feats", "deprel")


def token_count(tokens: pl.DataFrame) -> int:
    """Tokens of a file's rows: words outside multiword tokens, and multiword tokens."""
    ranges = tokens.filter(pl.col("kind") == KIND_RANGE)["token_id"].str.split_exact("-", 1)
    size = (ranges.struct.field("field_1").cast(pl.Int64)
            - ranges.struct.field("field_0").cast(pl.Int64) + 1).sum()
    n_words = int((tokens["kind"] == KIND_WORD).sum())
    return n_words + ranges.len() - int(size or 0)


def project(key_words: pl.DataFrame, sys_words: pl.DataFrame, to_key: np.ndarray,
            key_text: Text, sys_text: Text) -> pl.DataFrame:
    """The system's words in the key's order (METRICS 4.2): one row per key word with the
    labels of the system word aligned with it (``<unaligned>`` when none) and its HEAD in the
    key's numbering: the key word its head is aligned with (same sentence: its ID; another
    sentence: ``-4 - n`` for key word n), :data:`NO_HEAD` when that head has no key word,
    :data:`NO_WORD` for a key word without system word, 0 for the root. The FORM of a key
    word without system word is the system token over its first character (``du`` for the
    key's ``de`` ``le``), so that examples show what the system wrote there."""
    n_key = key_words.height
    aligned_sys = np.flatnonzero(to_key >= 0)
    from_sys = np.full(n_key, -1, np.int64)
    from_sys[to_key[aligned_sys]] = aligned_sys
    ok = from_sys >= 0
    picked = sys_words[from_sys[ok]]
    sys_index = np.arange(sys_words.height)
    sys_id = sys_words["id"].to_numpy().astype(np.int64)
    head = sys_words["head"].fill_null(-1).to_numpy().astype(np.int64)
    parent = np.where(head > 0, sys_index - sys_id + head, -1)
    key_parent = np.where(parent >= 0, to_key[np.maximum(parent, 0)], -1)
    key_sent = key_words["sent"].to_numpy()
    key_id = key_words["id"].to_numpy().astype(np.int64)
    mine = from_sys[ok]
    k = np.flatnonzero(ok)
    kp = key_parent[mine]
    same_sent = (kp >= 0) & (key_sent[np.maximum(kp, 0)] == key_sent[k])
    projected = np.where(head[mine] == 0, 0, np.where(
        kp < 0, NO_HEAD, np.where(same_sent, key_id[np.maximum(kp, 0)], -4 - kp)))
    heads = np.full(n_key, NO_WORD, np.int64)
    heads[k] = projected
    heads[k[head[mine] < 0]] = -1  # no head in the system file
    covering = np.minimum(np.searchsorted(sys_text.token_end, key_text.word_start,
                                          side="right"), sys_text.token_start.size - 1)
    out = key_words.select("sent", "id").with_columns(
        kind=pl.lit(0, pl.Int8), aligned=pl.Series(ok),
        head=pl.Series(heads).cast(pl.Int32),
        form=pl.select(pl.when(pl.Series(ok)).then(_scatter(picked["form"], k, n_key, None))
                       .otherwise(sys_text.token_form.gather(covering)))[:, 0],
        sys_sent=_scatter(picked["sent"], k, n_key, None),
        sys_id=_scatter(picked["id"], k, n_key, None),
        **{c: _scatter(picked[c], k, n_key, UNALIGNED) for c in LABELS})
    return out


def _scatter(values: pl.Series, at: np.ndarray, n: int, fill: str | None) -> pl.Series:
    """A column of ``n`` rows holding ``values`` at rows ``at`` and ``fill`` elsewhere."""
    index = np.full(n, -1, np.int64)
    index[at] = np.arange(at.size)
    taken = values.gather(pl.Series(np.where(index >= 0, index, 0)))
    return pl.select(pl.when(pl.Series(index >= 0)).then(taken)
                     .otherwise(pl.lit(fill, dtype=values.dtype)))[:, 0]
