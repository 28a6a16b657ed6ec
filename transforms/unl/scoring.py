"""UNLization and NLization scoring into ``unl_sentences`` rows, and corpus scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from sysdiff.schemas.formats.unl import (
    NlSentence,
    UnlChunk,
    UnlSentence,
    chunk_from_sentences,
)
from sysdiff.schemas.tables import TABLES
from sysdiff.transforms import bootstrap
from sysdiff.transforms.bootstrap import Bootstrap
from sysdiff.transforms.unl.alignment import _positioned, aligned_partners
from sysdiff.transforms.unl.items import (
    count_items,
    item_counts,
    item_digests,
    item_sums,
    unl_items,
)
from sysdiff.transforms.unl.options import ACTUAL, EXPECTED, NlOptions, UnlOptions
from sysdiff.transforms.unl.verdicts import (
    _base_frame,
    _finalise,
    _join_counts,
    _reason_expr,
    _unl_verdicts,
    below,
    nl_status,
    nl_words,
    unl_status_frame,
    with_fraction,
)

# --------------------------------------------------------------------------------------------
# UNLization


def score_unlization(
    expected: Sequence[UnlSentence],
    actual: Sequence[UnlSentence],
    options: UnlOptions | None = None,
) -> pl.DataFrame:
    """One ``unl_sentences`` row per expected sentence (without corpus/system)."""
    options = options or UnlOptions()
    return score_unl_rows(expected, aligned_partners(expected, actual, options.align), options)


def score_unl_rows(
    expected: Sequence[UnlSentence],
    partners: Sequence[UnlSentence | None],
    options: UnlOptions,
    first: int = 0,
) -> pl.DataFrame:
    """The ``unl_sentences`` rows of expected sentences ``first``, ``first + 1``, ... given
    their aligned actual sentences: each row depends on its own sentence pair only, so a
    file can be scored in shards of sentences and the rows concatenated."""
    exp = _positioned(chunk_from_sentences(expected), first)
    index: dict[int, int] = {}
    for a in partners:
        if a is not None:
            index.setdefault(id(a), len(index))
    unique = {k: a for a in partners if a is not None for k in [index[id(a)]]}
    act = chunk_from_sentences([unique[k] for k in range(len(unique))])
    partner = np.array([index[id(a)] if a is not None else -1 for a in partners], np.int64)
    return score_unl_chunk(exp, act, partner, options)


def score_unl_chunk(exp: UnlChunk, act: UnlChunk, partner: np.ndarray,
                    options: UnlOptions) -> pl.DataFrame:
    """The ``unl_sentences`` rows of the expected sentences of ``exp`` (``sent_index`` =
    their position); ``partner[i]`` is the row of ``act`` aligned with expected row ``i``
    (-1: none). Verdicts, items and counts are column operations over both chunks."""
    partner = np.asarray(partner, np.int64)
    n = exp.height
    base = unl_status_frame(exp.sents, act.sents, partner)
    has = np.flatnonzero(partner >= 0)
    pairs = pl.DataFrame({"erow": has, "arow": partner[has]}, schema={"erow": pl.Int64,
                                                                        "arow": pl.Int64})
    rel_cols = ["label", "scope", *(f"{p}_{c}" for p in "st" for c in ("uw", "id", "kind",
                                                                          "attrs"))]
    rels = pl.concat([
        exp.rels.select(pl.col("row").cast(pl.Int64).alias("erow"),
                        pl.lit(1, pl.Int8).alias("side"), *rel_cols),
        act.rels.with_columns(pl.col("row").cast(pl.Int64))
        .join(pairs, left_on="row", right_on="arow", how="inner")
        .select("erow", pl.lit(0, pl.Int8).alias("side"), *rel_cols),
    ])
    lone_e = exp.sents.filter(pl.col("n_rel") == 0)["row"]
    lone_a = act.sents.filter(pl.col("n_rel") == 0)["row"]
    nodes = pl.concat([
        exp.nodes.filter(pl.col("row").is_in(lone_e.implode()))
        .select(pl.col("row").cast(pl.Int64).alias("erow"), pl.lit(1, pl.Int8).alias("side"),
                "uw", "attrs"),
        act.nodes.filter(pl.col("row").is_in(lone_a.implode()))
        .with_columns(pl.col("row").cast(pl.Int64))
        .join(pairs, left_on="row", right_on="arow", how="inner")
        .select("erow", pl.lit(0, pl.Int8).alias("side"), "uw", "attrs"),
    ])
    items = unl_items(rels, nodes, options)
    counts = count_items(items, options.multiset)
    sums = item_sums(counts, n)
    df = base.with_columns(**{k: pl.Series(v) for k, v in sums.items()})
    df = df.join(item_digests(counts, items).rename({"erow": "row"}).with_columns(
        pl.col("row").cast(pl.Int32)), on="row", how="left", maintain_order="left")
    df = df.drop("row").sort("sent")
    return _unl_verdicts(df, options)


# --------------------------------------------------------------------------------------------
# NLization


def _as_nl(xs: Sequence[NlSentence | str]) -> list[NlSentence]:
    return [x if isinstance(x, NlSentence) else NlSentence(None, k, k + 1, x) for k, x in
            enumerate(xs)]  # fmt: skip


def score_nlization(
    expected: Sequence[NlSentence | str],
    actual: Sequence[NlSentence | str],
    options: NlOptions | None = None,
) -> pl.DataFrame:
    """One ``unl_sentences`` row (task ``nlization``) per expected sentence."""
    options = options or NlOptions()
    exp, act = _as_nl(expected), _as_nl(actual)
    return score_nl_rows(exp, aligned_partners(exp, act, options.align), options)


def score_nl_rows(
    expected: Sequence[NlSentence],
    partners: Sequence[NlSentence | None],
    options: NlOptions,
    first: int = 0,
) -> pl.DataFrame:
    """``score_unl_rows`` for NLization: rows of expected sentences ``first``, ..."""

    def status(a: NlSentence | None) -> tuple[bool, str | None, int | None]:
        if a is None:
            return False, "no actual sentence", None
        ok, why = nl_status(a.text, a.error)
        return ok, why, None if ok else a.line

    base = _base_frame(expected, partners, status, first)
    sent, side, word = [], [], []
    for i, (e, a) in enumerate(zip(expected, partners, strict=True), first):
        sides = [(EXPECTED, e)] + ([(ACTUAL, a)] if a is not None else [])
        for sd, s in sides:
            ws = nl_words(s.text) if s.text else []
            sent.extend([i] * len(ws))
            side.extend([sd] * len(ws))
            word.extend(ws)
    items = pl.DataFrame(
        {"sent": sent, "side": side, "kind": ["W"] * len(word), "item": word},
        schema={"sent": pl.Int32, "side": pl.Int8, "kind": pl.String, "item": pl.String},
    )
    counts = item_counts(items, multiset=True)
    df = _join_counts(base, counts, "W")
    nw = pl.col("word_exc") + pl.col("word_miss")
    df = with_fraction(df, "words", nw, pl.col("word_tot"))
    tests = [("d_words", ~below(nw, pl.col("word_tot"), options.threshold))]
    df = df.with_columns(
        correct=pl.col("returned") & ~tests[0][1],
        reason=pl.coalesce(pl.col("reason"), _reason_expr(tests)),
    )
    return _finalise(df, "nlization", options.signature())


# --------------------------------------------------------------------------------------------
# Corpus scores


def _micro_f1(prefix: str) -> pl.Expr:
    """1 - D on summed counts (null when nothing was counted)."""
    tot = pl.col(f"{prefix}_tot").sum()
    err = pl.col(f"{prefix}_exc").sum() + pl.col(f"{prefix}_miss").sum()
    return pl.when(tot > 0).then(1 - err / tot).otherwise(None).alias(f"{prefix}_f1")


def f1_samples(frames: Mapping[str, pl.DataFrame], opts: Bootstrap) -> np.ndarray:
    """(B, N) bootstrap samples (METRICS 1.6b, over the expected sentences) of the
    F-measure of each version (``frames``: its ``unl_sentences`` rows, one per expected
    sentence in order): 2 correct / (returned + expected) of each sample's sums."""
    heights = {df.height for df in frames.values()}
    if len(heights) > 1:
        raise ValueError(f"versions scored on different sentences: {sorted(heights)}")
    rows = np.concatenate([df.select(pl.col("returned", "correct").cast(pl.Int32)).to_numpy()
                           for df in frames.values()], axis=1)
    (sums,) = bootstrap.resample([rows], opts)
    expected = np.full(sums.shape[0], float(heights.pop()) if heights else 0.0)[:, None]
    return bootstrap.f1(sums[:, 1::2], expected, sums[:, 0::2])


def unl_scores(sentences: pl.DataFrame, samples: np.ndarray | None = None,
               confidence: float = 0.95) -> pl.DataFrame:
    """Corpus P/R/F per (corpus, system,) task and options, plus micro F1 of relations, UWs,
    attributes and words. P = correct/returned, R = correct/expected, F = 2PR/(P+R)
    = 2 correct/(returned + expected). ``samples``: the (B,) bootstrap samples of F of the
    one system of ``sentences`` (:func:`f1_samples`), for its interval."""
    keys = [k for k in ("corpus", "system", "task", "options") if k in sentences.columns]
    agg = sentences.group_by(keys, maintain_order=True).agg(
        n_expected=pl.len().cast(pl.Int64),
        n_returned=pl.col("returned").sum().cast(pl.Int64),
        n_correct=pl.col("correct").sum().cast(pl.Int64),
        **{f"{p}_f1": _micro_f1(p) for p in ("rel", "uw", "attr", "word")},
    )
    c, r, e = pl.col("n_correct"), pl.col("n_returned"), pl.col("n_expected")
    agg = agg.with_columns(
        # no number without data: P is NULL when nothing is returned (the UNLarium page
        # says 0), R and F when nothing is expected
        precision=pl.when(r > 0).then(c / r),
        recall=pl.when(e > 0).then(c / e),
        f1=pl.when(e > 0).then(pl.when(c > 0).then(2 * c / (r + e)).otherwise(0.0)),
    )
    low, high = (np.nan, np.nan) if samples is None else \
        (float(x[0]) for x in bootstrap.interval(samples[:, None], confidence))
    agg = agg.with_columns(  # no number without data: NULL with F
        **{k: pl.when(pl.col("f1").is_not_null()).then(pl.lit(v, pl.Float64)).fill_nan(None)
           for k, v in (("ci_low", low), ("ci_high", high))})
    names = [n for n in TABLES["unl_scores"].names if n in agg.columns]
    return agg.select(names)
