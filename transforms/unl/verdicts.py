"""Per-sentence verdicts: RETURNED of NLization, exact discrepancies, CORRECT and
the reason, and the frames of ``unl_sentences`` rows."""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

import numpy as np
import polars as pl

from sysdiff.schemas.formats.unl import KNOWN_RELATIONS
from sysdiff.schemas.tables import TABLES
from sysdiff.transforms.unl.alignment import _sent_ids
from sysdiff.transforms.unl.items import _KIND_PREFIX, count_table, error_digests
from sysdiff.transforms.unl.options import UnlOptions

# --------------------------------------------------------------------------------------------
# RETURNED verdicts of NLization (per sentence, Python)


def nl_words(text: str) -> list[str]:
    """METRICS 3.3 words: split on white space, strip leading/trailing P*/S* characters,
    drop empties, casefold."""
    out = []
    for tok in text.split():
        i, j = 0, len(tok)
        while i < j and unicodedata.category(tok[i])[0] in "PS":
            i += 1
        while j > i and unicodedata.category(tok[j - 1])[0] in "PS":
            j -= 1
        if i < j:
            out.append(tok[i:j].casefold())
    return out


_KNOWN = "|".join(sorted(KNOWN_RELATIONS, key=len, reverse=True))
_UW_IN_TEXT = re.compile(
    r"\w\s?\(\s*[a-z]{2,3}\s*[<>]"  # word(icl>...)
    r"|\.@[\w\-]+"  # .@attribute
    r"|\[\[[^\]]*\]\]"  # [[UW]]
    rf"|\b(?:{_KNOWN})(?::\w{{2}})?\([^(),;]*[,;][^()]*\)"  # rel(a, b)
)


def nl_status(text: str | None, error: str | None) -> tuple[bool, str | None]:
    """(returned, reason) of an actual NLization sentence (METRICS 3.3 RETURNED)."""
    if error is not None:
        return False, error
    if text is None:
        return False, "no actual sentence"
    m = _UW_IN_TEXT.search(text)
    if m is not None:
        start = max(text.rfind(" ", 0, m.start()) + 1, 0)
        end = text.find(" ", m.end())
        return False, f"UW in output: {text[start : end if end >= 0 else None]!r}"
    if not nl_words(text):
        return False, "no words"
    return True, None


# --------------------------------------------------------------------------------------------
# Exact discrepancies


def with_fraction(df: pl.DataFrame, name: str, num: pl.Expr, den: pl.Expr) -> pl.DataFrame:
    """Add ``d_<name>`` (DOUBLE) and ``d_<name>_frac`` (reduced exact fraction; 0 when the
    denominator is 0)."""
    nd = df.select(num.alias("n"), den.alias("d"))
    n = nd["n"].to_numpy().astype(np.int64)
    d = nd["d"].to_numpy().astype(np.int64)
    g = np.gcd(n, d)
    g[g == 0] = 1
    red = pl.DataFrame({"rn": n // g, "rd": d // g})
    frac = (
        pl.when(pl.col("rn") == 0)
        .then(pl.lit("0"))
        .when(pl.col("rd") == 1)
        .then(pl.col("rn").cast(pl.String))
        .otherwise(pl.concat_str([pl.col("rn"), pl.lit("/"), pl.col("rd")]))
    )
    dbl = pl.when(pl.col("rd") == 0).then(0.0).otherwise(pl.col("rn") / pl.col("rd"))
    extra = red.select(dbl.alias(f"d_{name}"), frac.alias(f"d_{name}_frac"))
    return pl.concat([df, extra], how="horizontal")


def below(num: pl.Expr, den: pl.Expr, threshold: Fraction) -> pl.Expr:
    """Exact ``num/den < threshold`` (D = 0 when den = 0), by cross-multiplication."""
    p, q = threshold.numerator, threshold.denominator
    return pl.when(den == 0).then(pl.lit(p > 0)).otherwise(num * q < den * p)


def _reason_expr(parts: list[tuple[str, pl.Expr]]) -> pl.Expr:
    """``not correct: d_rel=1/2, ...`` naming the failing tests; null if none fails."""
    exprs = [
        pl.when(failed).then(pl.concat_str([pl.lit(f"{name}="), pl.col(f"{name}_frac")]))
        for name, failed in parts
    ]
    joined = pl.concat_str(exprs, separator=", ", ignore_nulls=True)
    any_failed = pl.any_horizontal([f for _, f in parts])
    return pl.when(any_failed).then(pl.concat_str([pl.lit("not correct: "), joined]))


# --------------------------------------------------------------------------------------------
# Rows of ``unl_sentences``: verdicts, RETURNED of UNLization, base frames


def _unl_verdicts(df: pl.DataFrame, options: UnlOptions) -> pl.DataFrame:
    """Discrepancies, CORRECT and the reason from the counts (METRICS 3.2)."""
    nr = pl.col("rel_exc") + pl.col("rel_miss")
    nu = pl.col("uw_exc") + pl.col("uw_miss")
    na = pl.col("attr_exc") + pl.col("attr_miss")
    n_all = 3 * nr + 2 * nu + na
    d_all = 3 * pl.col("rel_tot") + 2 * pl.col("uw_tot") + pl.col("attr_tot")
    df = with_fraction(df, "rel", nr, pl.col("rel_tot"))
    df = with_fraction(df, "uw", nu, pl.col("uw_tot"))
    df = with_fraction(df, "all", n_all, d_all)
    tests = [
        ("d_rel", ~below(nr, pl.col("rel_tot"), options.threshold)),
        ("d_uw", ~below(nu, pl.col("uw_tot"), options.threshold)),
        ("d_all", ~below(n_all, d_all, options.overall_threshold)),
    ]
    df = df.with_columns(
        correct=pl.col("returned") & ~pl.any_horizontal([f for _, f in tests]),
        reason=pl.coalesce(pl.col("reason"), _reason_expr(tests)),
    )
    return _finalise(df, "unlization", options.signature())


def unl_status_frame(exp: pl.DataFrame, act: pl.DataFrame, partner: np.ndarray) -> pl.DataFrame:
    """row, sent (position), sent_id, returned, reason, reason_line per expected row
    (METRICS 3.2 RETURNED of the aligned actual sentence, as :func:`unl_status`; a malformed
    expected sentence is named first in the reason)."""
    a = act.select(pl.col("row").cast(pl.Int64).alias("arow"),
                   *[pl.col(c).alias(f"a_{c}") for c in ("line", "error", "error_line",
                     "has_graph", "n_rel", "n_nodes", "n_components", "nl_words")])  # fmt: skip
    df = exp.select("row", "position", "sent_id", "error").with_columns(
        arow=pl.Series(partner, dtype=pl.Int64))
    df = df.join(a, on="arow", how="left", maintain_order="left")
    k = pl.col("a_n_components")
    why = (pl.when(pl.col("arow") < 0).then(pl.lit("no actual sentence"))
           .when(pl.col("a_error").is_not_null())
           .then(pl.concat_str([pl.lit("parse error: "), pl.col("a_error")]))
           .when(~pl.col("a_has_graph")).then(pl.lit("no graph"))
           .when((pl.col("a_n_rel") == 0) & (pl.col("a_n_nodes") == 0)).then(pl.lit("empty graph"))
           .when(pl.col("a_nl_words").is_not_null())
           .then(pl.concat_str([pl.lit("natural-language word in graph: "), pl.col("a_nl_words")]))
           .when(k > 1)
           .then(pl.concat_str([pl.lit("graph not connected ("), k.cast(pl.String),
                                pl.lit(" components)")])))  # fmt: skip
    line = (pl.when(pl.col("arow") < 0).then(None)
            .when(pl.col("a_error").is_not_null()).then(pl.col("a_error_line"))
            .when(why.is_not_null()).then(pl.col("a_line")))  # fmt: skip
    malformed = pl.concat_str([pl.lit("expected sentence malformed: "), pl.col("error"),
                               pl.when(why.is_not_null()).then(pl.concat_str([pl.lit("; "), why]))
                               .otherwise(pl.lit(""))])  # fmt: skip
    return df.select(
        "row", pl.col("position").alias("sent"),
        pl.coalesce("sent_id", pl.concat_str([pl.lit("#"),
                                              (pl.col("position") + 1).cast(pl.String)])),
        why.is_null().alias("returned"),
        pl.when(pl.col("error").is_not_null()).then(malformed).otherwise(why).alias("reason"),
        line.cast(pl.Int32).alias("reason_line"))


def _base_frame(expected, partners, status, first: int) -> pl.DataFrame:
    """sent, sent_id, returned, reason, reason_line for each expected sentence."""
    rows = []
    for i, (e, a) in enumerate(zip(expected, partners, strict=True), first):
        returned, reason, line = status(a)
        if e.error is not None:
            reason = f"expected sentence malformed: {e.error}" + (f"; {reason}" if reason else "")
        rows.append((i, returned, reason, line))
    sent, returned, reason, line = zip(*rows, strict=True) if rows else ((), (), (), ())
    return pl.DataFrame(
        {"sent": list(sent), "sent_id": _sent_ids(expected, first), "returned": list(returned),
         "reason": list(reason), "reason_line": list(line)},
        schema={"sent": pl.Int32, "sent_id": pl.String, "returned": pl.Boolean,
                "reason": pl.String, "reason_line": pl.Int32},
    )  # fmt: skip


def _join_counts(base: pl.DataFrame, counts: pl.DataFrame, kinds: str) -> pl.DataFrame:
    table = count_table(counts, kinds)
    df = base.join(table, on="sent", how="left").join(error_digests(counts), on="sent", how="left")
    cols = [f"{_KIND_PREFIX[k]}_{w}" for k in kinds for w in ("exc", "miss", "tot")]
    return df.with_columns(pl.col(cols).fill_null(0).cast(pl.Int64)).sort("sent")


def _finalise(df: pl.DataFrame, task: str, signature: str) -> pl.DataFrame:
    """Columns of ``unl_sentences`` (minus corpus/system) in schema order."""
    schema = pl.Schema(TABLES["unl_sentences"])
    df = df.rename({"sent": "sent_index"}).with_columns(
        task=pl.lit(task), options=pl.lit(signature)
    )
    cols = []
    for name, dtype in schema.items():
        if name in ("corpus", "system"):
            continue
        cols.append(pl.col(name).cast(dtype) if name in df.columns else pl.lit(None, dtype))
        cols[-1] = cols[-1].alias(name)
    return df.select(cols)
