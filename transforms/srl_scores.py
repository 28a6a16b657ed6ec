"""The official SRL scores (METRICS 6.1) as additive counts: what ``eval09.pl`` (CoNLL-2009,
head mode) and ``srl-eval.pl`` (CoNLL-2005, span mode) count, computed with joins over the
predicate and argument frames of :mod:`sysdiff.schemas.formats.srl`.

:func:`score_counts` gives one shard's counts as rows ``(mode, role, ppos, n_gold, n_pred,
n_correct)``; shards add up (:func:`sum_counts`) and :func:`score_rows` derives the pooled
figures and the ratios from the sums.

Head mode (``eval09.pl``): predicates match by word position; a predicate's sense is
correct when the senses after the dot are equal (numbers compared as numbers; the lemma is
ignored). ``args_labeled``/``args_unlabeled`` count (predicate, head, role) dependencies,
``predicates_labeled``/``predicates_unlabeled`` the predicates (sense right / found), and the
official ``semantic_labeled``/``semantic_unlabeled`` pool both, as the script does (each
predicate is one dependency to a virtual root labelled with its sense). Per-PPOS rows (the
predicate's PPOS) are the script's tables; ``proposition`` needs the sense and the exact
argument set; ``exact_semantic_match`` counts sentences.

Span mode (``srl-eval.pl``): propositions match by position and verb; an argument is correct
when a gold one of the matched proposition has its pieces and type; ``V`` is left out of
``span`` (its own row ``span_v``), a spurious predicted proposition is skipped; ``span_unlabeled``
is the ``-C`` row (a match between a ``V`` and another type drops out), ``perfect_props``
counts gold propositions without a missed or excess argument; ``predicates`` (sysdiff's, not
the script's) counts propositions found with the right verb.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

ALL = "ALL"
COUNT_SCHEMA = {"mode": pl.String, "role": pl.String, "ppos": pl.String, "n_gold": pl.Int64,
                "n_pred": pl.Int64, "n_correct": pl.Int64}


def _rows(mode: str, frame: pl.DataFrame | None = None, *, role: str | pl.Expr = ALL,
          ppos: str | pl.Expr | None = None, by: Sequence[str] = (),
          **counts: int | pl.Expr) -> pl.DataFrame:
    """Count rows of one mode (from ``frame``'s columns, or one row of literals), with the
    ``by`` columns of ``frame`` first (per-sentence counts: ``sent``)."""
    cols = {"mode": pl.lit(mode), "role": role if isinstance(role, pl.Expr) else pl.lit(role),
            "ppos": ppos if isinstance(ppos, pl.Expr) else pl.lit(ppos, pl.String)}
    for name in ("n_gold", "n_pred", "n_correct"):
        value = counts.get(name)
        cols[name] = value if isinstance(value, pl.Expr) else pl.lit(value, pl.Int64)
    base = frame if frame is not None else pl.DataFrame({"_": [0]})
    return base.select(*by, **cols).cast(COUNT_SCHEMA)


def _by(frame: pl.DataFrame, keys: list[str], name: str) -> pl.DataFrame:
    if not keys:
        return frame.select(pl.len().cast(pl.Int64).alias(name))
    return frame.group_by(keys).agg(pl.len().cast(pl.Int64).alias(name))


def _outer(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """Join count frames on ``keys`` (missing counts 0; without keys, side by side)."""
    if not keys:
        return pl.concat(frames, how="horizontal")
    out = frames[0]
    for f in frames[1:]:
        out = out.join(f, on=keys, how="full", coalesce=True, nulls_equal=True)
    return out.fill_null(0) if out.height else out


def _scalar(frames: list[pl.DataFrame], by: list[str], names: list[str]) -> pl.DataFrame:
    """Counts of whole frames (one row) or, with ``by``, per ``by`` group (0 where a frame
    has none): the totals of the modes without a role or PPOS."""
    return _outer([_by(f, by, n) for f, n in zip(frames, names, strict=True)], by)


# ------------------------------------------------------------------------------ head mode


def head_counts(kp: pl.DataFrame, ka: pl.DataFrame, sp: pl.DataFrame, sa: pl.DataFrame,
                n_sents: int, by: Sequence[str] = (), first: int = 0) -> pl.DataFrame:
    """``eval09.pl``'s counts of one system over some sentences (key and system predicates
    ``sent, pred, sense_key, pos``; arguments ``sent, pred, start, role``). With ``by`` =
    ``("sent",)``, the same counts per sentence (sentences ``first .. first + n_sents - 1``):
    they add up to the counts over all of them."""
    by = list(by)
    pk = ["sent", "pred"]
    both = kp.join(sp.select(*pk, s_key="sense_key"), on=pk)
    sense_ok = both.filter(pl.col("sense_key") == pl.col("s_key"))
    preds = _outer([_by(kp, ["pos", *by], "g"), _by(sp, ["pos", *by], "p"),
                    _by(both, ["pos", *by], "u"), _by(sense_ok, ["pos", *by], "l")],
                   ["pos", *by])
    ka = ka.join(kp.select(*pk, "pos"), on=pk, how="left")
    sa = sa.join(sp.select(*pk, "pos"), on=pk, how="left")
    ak = [*pk, "start", "role"]
    right = ka.join(sa.select(ak), on=ak)
    args = _outer([_by(ka, ["pos", "role", *by], "g"), _by(sa, ["pos", "role", *by], "p"),
                   _by(right, ["pos", "role", *by], "c")], ["pos", "role", *by])
    at = [*pk, "start"]
    unl = _by(ka, at, "g").join(_by(sa, at, "s"), on=at)
    per_prop = _outer([_by(ka, pk, "g"), _by(sa, pk, "s"), _by(right, pk, "c")], pk)
    full = sense_ok.select(pk).join(per_prop, on=pk, how="left").fill_null(0).filter(
        (pl.col("g") == pl.col("s")) & (pl.col("s") == pl.col("c")))
    per_sent = _outer([_by(kp, ["sent"], "tp"), _by(sp, ["sent"], "pp"),
                       _by(sense_ok, ["sent"], "lp"), _by(ka, ["sent"], "ta"),
                       _by(sa, ["sent"], "pa"), _by(right, ["sent"], "ca")], ["sent"])
    bad = per_sent.filter((pl.col("tp") != pl.col("lp")) | (pl.col("pp") != pl.col("lp"))
                          | (pl.col("ta") != pl.col("ca")) | (pl.col("pa") != pl.col("ca")))
    if by:  # every sentence, also one without a predicate (exact_semantic_match)
        sents = pl.DataFrame({"sent": pl.int_range(first, first + n_sents, eager=True)
                              .cast(kp.schema["sent"])})
        coru = unl.group_by(by).agg(n=pl.min_horizontal("g", "s").sum().cast(pl.Int64))
        totals = sents.join(_scalar([ka, sa, kp, sp, full], by,
                                    ["ka", "sa", "kp", "sp", "full"]), on=by, how="left")
        totals = totals.join(coru, on=by, how="left").join(
            _by(bad, by, "bad"), on=by, how="left").fill_null(0)
    else:
        coru = unl.select(n=pl.min_horizontal("g", "s").sum().cast(pl.Int64))
        totals = pl.concat([_scalar([ka, sa, kp, sp, full], by,
                                    ["ka", "sa", "kp", "sp", "full"]), coru,
                            _by(bad, by, "bad")], how="horizontal")
    c = pl.col
    return pl.concat([
        _rows("predicates_labeled", preds, ppos=c("pos"), by=by, n_gold=c("g"),
              n_pred=c("p"), n_correct=c("l")),
        _rows("predicates_unlabeled", preds, ppos=c("pos"), by=by, n_gold=c("g"),
              n_pred=c("p"), n_correct=c("u")),
        _rows("args_labeled", args, role=c("role"), ppos=c("pos"), by=by,
              n_gold=c("g"), n_pred=c("p"), n_correct=c("c")),
        _rows("args_unlabeled", totals, by=by, n_gold=c("ka"), n_pred=c("sa"),
              n_correct=c("n").fill_null(0)),
        _rows("proposition", totals, by=by, n_gold=c("kp"), n_pred=c("sp"),
              n_correct=c("full")),
        _rows("exact_semantic_match", totals, by=by,
              n_gold=pl.lit(1 if by else n_sents, pl.Int64),
              n_correct=pl.lit(1 if by else n_sents, pl.Int64) - c("bad")),
    ])


# ------------------------------------------------------------------------------ span mode


def span_counts(kp: pl.DataFrame, ka: pl.DataFrame, sp: pl.DataFrame, sa: pl.DataFrame,
                by: Sequence[str] = ()) -> pl.DataFrame:
    """``srl-eval.pl``'s counts of one system (predicates ``sent, pred, sense_key`` (the
    verb); arguments ``sent, pred, pieces, role``, ``V`` included); with ``by`` =
    ``("sent",)``, per sentence (sentences with a predicate or argument)."""
    by = list(by)
    pk = ["sent", "pred"]
    matched = kp.join(sp.select(*pk, s_key="sense_key"), on=pk).filter(
        pl.col("sense_key") == pl.col("s_key")).select(pk)
    sa = sa.join(matched, on=pk, how="semi")
    labelled = [*pk, "pieces", "role"]
    ok = ka.join(sa.select(labelled), on=labelled, how="semi")
    missed = ka.join(sa.select(labelled), on=labelled, how="anti")
    excess = sa.join(ka.select(labelled), on=labelled, how="anti")
    per_role = _outer([_by(ok, ["role", *by], "ok"), _by(missed, ["role", *by], "ms"),
                       _by(excess, ["role", *by], "op")], ["role", *by])
    per_role = per_role.with_columns(g=pl.col("ok") + pl.col("ms"),
                                     p=pl.col("ok") + pl.col("op"))
    is_v = pl.col("role") == "V"
    at = [*pk, "pieces"]
    pairs = ka.select(*at, g_role="role").join(sa.select(*at, s_role="role"), on=at)
    uok = pairs.filter((pl.col("g_role") != "V") & (pl.col("s_role") != "V"))
    ums = ka.filter(~is_v).join(sa.select(at), on=at, how="anti")
    uop = sa.filter(~is_v).join(ka.select(at), on=at, how="anti")
    bad = pl.concat([missed.filter(~is_v).select(pk), excess.filter(~is_v).select(pk)]
                    ).unique().join(kp.select(pk), on=pk, how="semi")
    totals = _scalar([uok, ums, uop, kp, bad, sp, matched], by,
                     ["uok", "ums", "uop", "kp", "bad", "sp", "matched"])
    c = pl.col
    return pl.concat([
        _rows("span", per_role.filter(~is_v), role=c("role"), by=by, n_gold=c("g"),
              n_pred=c("p"), n_correct=c("ok")),
        _rows("span_v", per_role.filter(is_v), role=c("role"), by=by, n_gold=c("g"),
              n_pred=c("p"), n_correct=c("ok")),
        _rows("span_unlabeled", totals, by=by, n_gold=c("uok") + c("ums"),
              n_pred=c("uok") + c("uop"), n_correct=c("uok")),
        _rows("perfect_props", totals, by=by, n_gold=c("kp"), n_correct=c("kp") - c("bad")),
        _rows("predicates", totals, by=by, n_gold=c("kp"), n_pred=c("sp"),
              n_correct=c("matched")),
    ])


def score_counts(mode: str, kp: pl.DataFrame, ka: pl.DataFrame, sp: pl.DataFrame,
                 sa: pl.DataFrame, n_sents: int, by: Sequence[str] = (), first: int = 0
                 ) -> pl.DataFrame:
    """One system's additive score counts over some sentences, in the run's mode (with
    ``by`` = ``("sent",)``: per sentence, the first being ``first``)."""
    if mode == "head":
        return head_counts(kp, ka, sp, sa, n_sents, by, first)
    return span_counts(kp, ka, sp, sa, by)


def sum_counts(parts: list[pl.DataFrame], keys: tuple[str, ...] = ()) -> pl.DataFrame:
    """The sum of several shards' counts (by ``keys``, mode, role, ppos)."""
    group = [*keys, "mode", "role", "ppos"]
    frame = pl.concat([p.select(*keys, *COUNT_SCHEMA) for p in parts])
    return frame.group_by(group, maintain_order=True).agg(
        pl.col("n_gold").sum(), _null_sum("n_pred"), pl.col("n_correct").sum())


# ------------------------------------------------------------------------------ tables


def score_rows(counts: pl.DataFrame) -> pl.DataFrame:
    """``srl_scores`` rows (without corpus) from summed counts of one or more systems
    (``system`` column): the per-PPOS rows as counted, per-role and ``ALL`` sums, the pooled
    official ``semantic_*`` figures, and P / R / F1 (null where a count is 0: no number
    without data; ``exact_semantic_match`` and ``perfect_props`` have a recall only)."""
    return with_ratios(derived_counts(counts, ["system"])).sort(
        "system", "mode", "role", "ppos", nulls_last=False)


def derived_counts(counts: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The count rows of :func:`score_rows` (by ``keys``, e.g. system, or system and
    sentence): those counted, and the per-role, ``ALL`` and pooled ``semantic_*`` sums."""
    per_tag = counts.filter(pl.col("ppos").is_not_null())
    plain = counts.filter(pl.col("ppos").is_null())
    derived = [plain, per_tag]
    if per_tag.height:
        derived.append(_sum(per_tag, [*keys, "mode", "role"]).with_columns(
            ppos=pl.lit(None, pl.String)))
        args = per_tag.filter(pl.col("mode") == "args_labeled")
        derived.append(_sum(args, [*keys, "mode"]).with_columns(
            role=pl.lit(ALL), ppos=pl.lit(None, pl.String)))
    spans = plain.filter(pl.col("mode") == "span")
    if spans.height:
        derived.append(_sum(spans, [*keys, "mode"]).with_columns(
            role=pl.lit(ALL), ppos=pl.lit(None, pl.String)))
    rows = pl.concat([d.select(*keys, *COUNT_SCHEMA).cast(COUNT_SCHEMA) for d in derived])
    overall = rows.filter(pl.col("ppos").is_null() & (pl.col("role") == ALL))
    for name, parts in (("semantic_labeled", ("args_labeled", "predicates_labeled")),
                        ("semantic_unlabeled", ("args_unlabeled", "predicates_unlabeled"))):
        pooled = overall.filter(pl.col("mode").is_in(parts))
        if pooled.height:
            rows = pl.concat([rows, _sum(pooled, keys).with_columns(
                mode=pl.lit(name), role=pl.lit(ALL), ppos=pl.lit(None, pl.String)
            ).select(rows.columns)])
    return rows


def _null_sum(name: str) -> pl.Expr:
    """The sum, null when every value is null (a count the mode does not have)."""
    return pl.when(pl.col(name).is_null().all()).then(None).otherwise(
        pl.col(name).sum()).alias(name)


def _sum(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return frame.group_by(keys, maintain_order=True).agg(
        pl.col("n_gold").sum(), _null_sum("n_pred"), pl.col("n_correct").sum())


def prf(g: np.ndarray, p: np.ndarray, c: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 of count arrays (NaN where undefined; ``p`` NaN: a mode
    without predicted counts)."""
    prec, rec = _nullable(c, p), _nullable(c, g)
    both = prec + rec
    f1 = _nullable(2 * prec * rec, both)
    f1[(prec == 0) & (rec == 0)] = 0.0  # both defined and zero: F1 is 0, not undefined
    return prec, rec, f1


def with_ratios(rows: pl.DataFrame) -> pl.DataFrame:
    """Precision, recall and F1 (fractions) from the counts; null where undefined."""
    g, p, c = (rows[k].cast(pl.Float64).to_numpy() for k in ("n_gold", "n_pred", "n_correct"))
    prec, rec, f1 = prf(g, p, c)
    return rows.with_columns(precision=pl.Series(prec), recall=pl.Series(rec),
                             f1=pl.Series(f1)).with_columns(
        pl.col(c).fill_nan(None) for c in ("precision", "recall", "f1"))


def _nullable(num, den):
    """num / den, NaN where den is 0 or missing (null later)."""
    out = np.full(num.shape, np.nan)
    ok = np.isfinite(den) & (den > 0) & np.isfinite(num)
    out[ok] = num[ok] / den[ok]
    return out


__all__ = ["ALL", "derived_counts", "prf", "score_counts", "score_rows", "sum_counts"]
