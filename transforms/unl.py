"""UNL F-measure (METRICS 3): UNLization and NLization scoring, corpus scores, version comparison.

Pure functions over parsed sentences (``sysdiff.schemas.formats.unl``) and polars frames.
Parsing and the
per-graph verdicts (RETURNED) are computed per sentence in Python; items are exploded into one
polars table ``(sent, side, kind, item)`` and all set/multiset arithmetic is group-bys.
Discrepancies are exact: integer numerators/denominators, reduced fraction strings, and the
``D < threshold`` tests by integer cross-multiplication.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from sysdiff.schemas.formats.unl import (
    KNOWN_RELATIONS,
    NlSentence,
    UnlChunk,
    UnlSentence,
    chunk_from_sentences,
    factorize,
)
from sysdiff.schemas.tables import TABLES
from sysdiff.schemas.vocabulary import CLASSES
from sysdiff.transforms.engine import (
    MAX_ALL_SUBSETS,
    LabelMatrix,
    all_pairs,
    oracle_counts,
    pair_counts,
)
from sysdiff.transforms.reduce import mcnemar_column, oracle_correct, ratio

ACTUAL, EXPECTED = 0, 1
SEP = "\x1f"
_ALIGN_MODES = ("auto", "id", "position")

# --------------------------------------------------------------------------------------------
# Options


def _as_fraction(x: Fraction | int | float | str) -> Fraction:
    """Exact value of a threshold; floats go through their shortest repr (0.3 -> 3/10)."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _fmt(x: Fraction) -> str:
    """``0.3`` for 3/10, ``1/3`` when there is no finite decimal."""
    d = Decimal(x.numerator) / Decimal(x.denominator)
    return str(d.normalize()) if Fraction(d) == x else f"{x.numerator}/{x.denominator}"


@dataclass(frozen=True)
class UnlOptions:
    """UNLization scoring options; :meth:`signature` is stored with every row."""

    multiset: bool = False
    keep_scope_ids: bool = False
    threshold: Fraction = Fraction(3, 10)
    overall_threshold: Fraction = Fraction(3, 10)
    optional_attrs: frozenset[str] = frozenset({"@def", "@indef"})
    align: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _as_fraction(self.threshold))
        object.__setattr__(self, "overall_threshold", _as_fraction(self.overall_threshold))
        object.__setattr__(self, "optional_attrs", frozenset(self.optional_attrs))
        if self.align not in _ALIGN_MODES:
            raise ValueError(f"align must be one of {_ALIGN_MODES}, not {self.align!r}")

    @classmethod
    def legacy_2013(cls, **kwargs: object) -> UnlOptions:
        """The older UNLarium page (2013): overall discrepancy < 0.5."""
        return cls(overall_threshold=Fraction(1, 2), **kwargs)  # type: ignore[arg-type]

    def signature(self) -> str:
        return "|".join(
            [
                "sem:" + ("multiset" if self.multiset else "set"),
                "scope:" + ("keep" if self.keep_scope_ids else "ignore"),
                f"thr:{_fmt(self.threshold)}",
                f"thr_all:{_fmt(self.overall_threshold)}",
                "opt:" + ",".join(sorted(self.optional_attrs)),
                f"align:{self.align}",
            ]
        )


@dataclass(frozen=True)
class NlOptions:
    """NLization scoring options (words are always multisets, METRICS 3.3)."""

    threshold: Fraction = Fraction(3, 10)
    align: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _as_fraction(self.threshold))
        if self.align not in _ALIGN_MODES:
            raise ValueError(f"align must be one of {_ALIGN_MODES}, not {self.align!r}")

    def signature(self) -> str:
        thr = _fmt(self.threshold)
        return f"sem:multiset|words:ws,strip-PS,casefold|thr:{thr}|align:{self.align}"


# --------------------------------------------------------------------------------------------
# Alignment


@dataclass
class Alignment:
    """``partner[i]`` = index of the actual sentence aligned with expected sentence i (-1:
    none); ``unmatched_actual``: the actual sentences no expected sentence is aligned with."""

    partner: np.ndarray
    by: str
    unmatched_actual: np.ndarray
    notes: list[str] = field(default_factory=list)


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
# Items


def dict_encode(*columns: pl.Series) -> tuple[list[np.ndarray], pl.Series]:
    """Exact integer codes of string columns, shared between them, and the dictionary
    (``dictionary[code]`` is the string): one dictionary encoding of all of them."""
    both = pl.concat([c.cast(pl.String) for c in columns])
    arr = both.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    out, at = [], 0
    for c in columns:
        out.append(codes[at : at + c.len()])
        at += c.len()
    return out, pl.Series(enc.dictionary).cast(pl.String)


def _bits(x: int) -> int:
    return max(int(x).bit_length(), 1)


_POS = pl.Series(["S", "T", "N"], dtype=pl.String)
_KINDS = "RUA"


@dataclass
class Items:
    """Integer items of both sides of some sentences: ``erow`` (expected row), ``kind``
    (0 R relation, 1 U UW, 2 A attribute), ``x``/``y``/``z`` (R: label, source, target;
    U: position S/T/N, UW; A: position, node, attribute) and ``side`` (1 expected, 0 actual);
    ``labels``, ``keys``, ``attrs`` decode the codes."""

    erow: np.ndarray
    kind: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    side: np.ndarray
    labels: pl.Series
    keys: pl.Series
    attrs: pl.Series


def unl_items(rels: pl.DataFrame, nodes: pl.DataFrame, options: UnlOptions) -> Items:
    """METRICS 3.2 items of relations (``erow``, ``side``, ``label``, ``scope``, ``s_``/``t_``
    uw, kind, id, attrs) and of the lone nodes of relation-less graphs (``erow``, ``side``,
    uw, attrs): R (label[:scope], source, target; a scope reference is ``[scope]``, or
    ``[scope:XX]`` with ``keep_scope_ids``), U (UWs by position, scope references excepted)
    and A (non-optional attributes by position and node)."""
    keep = options.keep_scope_ids

    def key(p: str) -> pl.Expr:
        scope = (pl.concat_str([pl.lit("[scope:"), pl.col(f"{p}_id"), pl.lit("]")])
                 if keep else pl.lit("[scope]"))  # fmt: skip
        return pl.when(pl.col(f"{p}_kind") == "scope").then(scope).otherwise(f"{p}_uw")

    label = pl.col("label")
    if keep:
        label = (pl.when(pl.col("scope").is_not_null())
                 .then(pl.concat_str([label, pl.lit(":"), pl.col("scope")])).otherwise(label))
    r = rels.select("erow", "side", label.alias("lab"), key("s").alias("skey"),
                    key("t").alias("tkey"), (pl.col("s_kind") == "scope").alias("sref"),
                    (pl.col("t_kind") == "scope").alias("tref"), "s_attrs", "t_attrs")
    (lab,), labels = dict_encode(r["lab"])
    (sk, tk, nk), keys = dict_encode(r["skey"], r["tkey"], nodes["uw"])
    erow_r, side_r = r["erow"].to_numpy(), r["side"].to_numpy()
    erow_n, side_n = nodes["erow"].to_numpy(), nodes["side"].to_numpy()
    sref, tref = r["sref"].to_numpy(), r["tref"].to_numpy()
    # attributes: (erow, side, position, node key, attribute), optional ones dropped; each
    # distinct attribute string (``@a.@b``) is split once
    (sa, ta, na), distinct = dict_encode(*(c.fill_null("") for c in (
        r["s_attrs"], r["t_attrs"], nodes["attrs"])))
    names: dict[str, int] = {}
    split = [[names.setdefault(a, len(names)) for a in text.split(".")
              if text and a not in options.optional_attrs] for text in distinct.to_list()]
    lens = np.array([len(x) for x in split] or [0], np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    flat = np.array([a for x in split for a in x] or [0], np.int64)
    att = [_expand(codes, lens, starts, flat, erow, side, pos, key)
           for codes, erow, side, pos, key in (
               (sa, erow_r, side_r, 0, sk), (ta, erow_r, side_r, 1, tk),
               (na, erow_n, side_n, 2, nk))]
    ae, asd, ap, ak, ac = (np.concatenate([x[k] for x in att]) for k in range(5))
    attrs = pl.Series(list(names), dtype=pl.String)
    zero = np.zeros
    parts = [
        (erow_r, 0, lab, sk, tk, side_r),
        (erow_r[~sref], 1, zero((~sref).sum(), np.int64), sk[~sref], 0, side_r[~sref]),
        (erow_r[~tref], 1, np.ones((~tref).sum(), np.int64), tk[~tref], 0, side_r[~tref]),
        (erow_n, 1, np.full(erow_n.size, 2, np.int64), nk, 0, side_n),
        (ae, 2, ap, ak, ac, asd),
    ]

    def cat(k: int) -> np.ndarray:
        return np.concatenate([np.broadcast_to(np.asarray(p[k], np.int64), p[0].shape)
                               for p in parts])  # fmt: skip

    return Items(cat(0), cat(1), cat(2), cat(3), cat(4), cat(5).astype(np.int8),
                 labels, keys, attrs)


def _expand(codes: np.ndarray, lens: np.ndarray, starts: np.ndarray, flat: np.ndarray,
            erow: np.ndarray, side: np.ndarray, pos: int, key: np.ndarray) -> tuple:
    """One (erow, side, pos, key, attribute) per attribute of each node: node ``i`` has the
    ``lens[codes[i]]`` attributes ``flat[starts[codes[i]]:...]``."""
    n = lens[codes] if codes.size else np.zeros(0, np.int64)
    rep = np.repeat(np.arange(codes.size), n)
    first = np.repeat(np.cumsum(n) - n, n)
    attr = flat[starts[codes[rep]] + np.arange(rep.size) - first] if rep.size else rep
    return erow[rep], side[rep], np.full(rep.size, pos, np.int64), key[rep], attr


@dataclass
class ItemCounts:
    """Per distinct item (``erow``, ``kind``, ``x``, ``y``, ``z``): its exceeding, missing and
    total contributions."""

    erow: np.ndarray
    kind: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    exc: np.ndarray
    miss: np.ndarray
    tot: np.ndarray


def count_items(it: Items, multiset: bool) -> ItemCounts:
    """Count each distinct item on both sides (sets: at most once per side). Items are
    packed into one 64-bit key when their codes fit, else grouped column by column."""
    cols = [it.erow, it.kind, it.x, it.y, it.z]
    widths = [_bits(c.max()) if c.size else 1 for c in cols]
    if sum(widths) <= 64:
        shifts = np.cumsum([0, *widths[::-1]])[:-1][::-1]
        key = np.zeros(it.erow.size, np.uint64)
        for c, sh in zip(cols, shifts, strict=True):
            key |= c.astype(np.uint64) << np.uint64(sh)
        uniq, inv = factorize(key)
        n = np.bincount(inv, minlength=uniq.size)
        e = np.bincount(inv, weights=it.side, minlength=uniq.size).astype(np.int64)
        mask = [(1 << w) - 1 for w in widths]
        dec = [((uniq >> np.uint64(sh)) & np.uint64(mk)).astype(np.int64)
               for sh, mk in zip(shifts, mask, strict=True)]  # fmt: skip
    else:
        g = (pl.DataFrame({"c0": cols[0], "c1": cols[1], "c2": cols[2], "c3": cols[3],
                           "c4": cols[4], "side": it.side})
             .group_by("c0", "c1", "c2", "c3", "c4")
             .agg(n=pl.len().cast(pl.Int64), e=pl.col("side").cast(pl.Int64).sum()))  # fmt: skip
        dec = [g[f"c{k}"].to_numpy() for k in range(5)]
        n, e = g["n"].to_numpy(), g["e"].to_numpy()
    a = n - e
    if not multiset:
        a, e = np.minimum(a, 1), np.minimum(e, 1)
    return ItemCounts(*dec, exc=np.maximum(a - e, 0), miss=np.maximum(e - a, 0), tot=a + e)


def item_sums(c: ItemCounts, n_rows: int) -> dict[str, np.ndarray]:
    """``rel_/uw_/attr_`` ``exc/miss/tot`` per expected row."""
    idx = c.erow * 3 + c.kind
    out = {}
    for k, prefix in enumerate(("rel", "uw", "attr")):
        for what in ("exc", "miss", "tot"):
            v = np.bincount(idx, weights=getattr(c, what), minlength=3 * n_rows)
            out[f"{prefix}_{what}"] = v[k::3][:n_rows].astype(np.int64)
    return out


def item_digests(c: ItemCounts, it: Items) -> pl.DataFrame:
    """Per expected row with an exceeding or missing item: a stable 16-hex fingerprint of
    them (the same strings as :func:`error_digests` over string items)."""
    wrong = np.flatnonzero((c.exc > 0) | (c.miss > 0))
    if not wrong.size:
        return pl.DataFrame(schema={"erow": pl.Int64, "error_digest": pl.String})
    w = pl.DataFrame({"erow": c.erow[wrong], "kind": c.kind[wrong], "x": c.x[wrong],
                      "y": c.y[wrong], "z": c.z[wrong], "exc": c.exc[wrong],
                      "miss": c.miss[wrong]})  # fmt: skip
    kind = w["kind"].to_numpy()
    r, a = kind == 0, kind == 2
    x = w["x"].to_numpy()
    z = w["z"].to_numpy()
    lab = it.labels.gather(np.where(r, x, 0)) if it.labels.len() else pl.Series([""] * len(w))
    pos = _POS.gather(np.where(r, 0, np.minimum(x, 2)))
    head = pl.select(pl.when(pl.Series(r)).then(lab).otherwise(pos))[:, 0]
    y = it.keys.gather(w["y"].to_numpy())
    zr = it.keys.gather(np.where(r, z, 0)) if it.keys.len() else y
    za = it.attrs.gather(np.where(a, z, 0)) if it.attrs.len() else y
    last = pl.select(pl.when(pl.Series(r)).then(zr).when(pl.Series(a)).then(za)
                     .otherwise(None))[:, 0]  # fmt: skip
    tags = w.select(
        "erow",
        pl.concat_str([pl.Series(list(_KINDS)).gather(kind), pl.col("exc").cast(pl.String),
                       pl.col("miss").cast(pl.String), head, y, last],
                      separator=SEP, ignore_nulls=True).alias("tag"))  # fmt: skip
    joined = tags.group_by("erow").agg(pl.col("tag").sort().str.join("\x1e"))
    digests = [hashlib.blake2b(t.encode(), digest_size=8).hexdigest()
               for t in joined["tag"].to_list()]  # fmt: skip
    return joined.select("erow").with_columns(error_digest=pl.Series(digests, dtype=pl.String))


def item_counts(items: pl.DataFrame, multiset: bool) -> pl.DataFrame:
    """Per (sent, kind, item): exceeding / missing / total contributions."""
    # side is 0 (actual) or 1 (expected): e = sum(side), a = count - e
    c = items.group_by("sent", "kind", "item").agg(
        n=pl.len().cast(pl.Int64), e=pl.col("side").cast(pl.Int64).sum()
    )
    c = c.select("sent", "kind", "item", a=pl.col("n") - pl.col("e"), e=pl.col("e"))
    if not multiset:
        c = c.with_columns(pl.col("a").clip(upper_bound=1), pl.col("e").clip(upper_bound=1))
    return c.with_columns(
        exc=(pl.col("a") - pl.col("e")).clip(lower_bound=0),
        miss=(pl.col("e") - pl.col("a")).clip(lower_bound=0),
        tot=pl.col("a") + pl.col("e"),
    )


_KIND_PREFIX = {"R": "rel", "U": "uw", "A": "attr", "W": "word"}


def count_table(counts: pl.DataFrame, kinds: str) -> pl.DataFrame:
    """One row per sentence: ``<kind>_exc/_miss/_tot`` for the given kinds."""
    aggs = []
    for k in kinds:
        p = _KIND_PREFIX[k]
        sel = pl.col("kind") == k
        for what in ("exc", "miss", "tot"):
            aggs.append(pl.col(what).filter(sel).sum().alias(f"{p}_{what}"))
    return counts.group_by("sent").agg(aggs)


def error_digests(counts: pl.DataFrame) -> pl.DataFrame:
    """Per sentence, a stable 16-hex fingerprint of its exceeding/missing items."""
    wrong = counts.filter((pl.col("exc") > 0) | (pl.col("miss") > 0)).select(
        "sent",
        pl.concat_str(
            [pl.col("kind"), pl.col("exc").cast(pl.String), pl.col("miss").cast(pl.String),
             pl.col("item")],
            separator=SEP,
        ).alias("tag"),
    )  # fmt: skip
    joined = wrong.group_by("sent").agg(pl.col("tag").sort().str.join("\x1e"))
    digests = [
        hashlib.blake2b(t.encode(), digest_size=8).hexdigest() for t in joined["tag"].to_list()
    ]
    return joined.select("sent").with_columns(error_digest=pl.Series(digests, dtype=pl.String))


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


def unl_scores(sentences: pl.DataFrame) -> pl.DataFrame:
    """Corpus P/R/F per (corpus, system,) task and options, plus micro F1 of relations, UWs,
    attributes and words. P = correct/returned, R = correct/expected, F = 2PR/(P+R)
    = 2 correct/(returned + expected)."""
    keys = [k for k in ("corpus", "system", "task", "options") if k in sentences.columns]
    agg = sentences.group_by(keys, maintain_order=True).agg(
        n_expected=pl.len().cast(pl.Int64),
        n_returned=pl.col("returned").sum().cast(pl.Int64),
        n_correct=pl.col("correct").sum().cast(pl.Int64),
        **{f"{p}_f1": _micro_f1(p) for p in ("rel", "uw", "attr", "word")},
    )
    c, r, e = pl.col("n_correct"), pl.col("n_returned"), pl.col("n_expected")
    agg = agg.with_columns(
        precision=pl.when(r > 0).then(c / r).otherwise(0.0),
        recall=pl.when(e > 0).then(c / e).otherwise(0.0),
        f1=pl.when(c > 0).then(2 * c / (r + e)).otherwise(0.0),
    )
    names = [n for n in TABLES["unl_scores"].names if n in agg.columns]
    return agg.select(names)


# --------------------------------------------------------------------------------------------
# Warnings


def warning_parts(chunk: UnlChunk, side: str, rows: np.ndarray | None = None) -> dict:
    """What :func:`unl_warnings` says about some sentences of one side (``rows`` of the
    chunk, default all), to be merged over shards by :func:`merge_warning_parts`: reader
    warnings and malformed expected sentences (``lines``: position, order, text), unknown
    relation labels (count and first occurrence) and the UW encodings (UCL/UCN nodes)."""
    sents, rels, nodes = chunk.sents, chunk.rels, chunk.nodes
    if rows is not None:
        keep = pl.Series(np.asarray(rows, np.int64)).cast(pl.Int32).implode()
        sents = sents.filter(pl.col("row").is_in(keep))
        rels = rels.filter(pl.col("row").is_in(keep))
        nodes = nodes.filter(pl.col("row").is_in(keep))
    shown = pl.coalesce("sent_id", pl.concat_str([pl.lit("#"),
                                                  (pl.col("position") + 1).cast(pl.String)]))
    lines = (sents.select("position", w="warnings").explode("w").drop_nulls("w")
             .with_columns(order=pl.int_range(pl.len()).over("position"),
                           text=pl.concat_str([pl.lit(f"{side}: "), pl.col("w")]))
             .select("position", pl.col("order").cast(pl.Int64), "text"))  # fmt: skip
    if side == "expected":
        bad = sents.filter(pl.col("error").is_not_null()).select(
            "position", order=pl.lit(1 << 40, pl.Int64), text=pl.concat_str([
                pl.lit("expected sentence "), shown, pl.lit(" (line "),
                pl.coalesce("error_line", "line").cast(pl.String),
                pl.lit(") is malformed: "), pl.col("error")]))  # fmt: skip
        lines = pl.concat([lines, bad])
    labels = (rels.filter(~pl.col("label").is_in(sorted(KNOWN_RELATIONS)))
              .join(sents.select("row", "position", shown.alias("shown")), on="row")
              .select("label", "position", "r", desc=pl.concat_str([
                  pl.col("shown"), pl.lit(" line "), pl.col("line").cast(pl.String)])))
    kinds = pl.concat([rels["s_kind"], rels["t_kind"], nodes["kind"]])
    return {"side": side, "lines": lines, "labels": labels,
            "ucl": int((kinds == "ucl").sum()), "ucn": int((kinds == "uw").sum())}


def merge_warning_parts(parts: list[dict]) -> dict:
    """The parts of all shards of one side as one."""
    lines = pl.concat([p["lines"] for p in parts]).sort("position", "order")
    labels = (pl.concat([p["labels"] for p in parts]).sort("position", "r")
              .group_by("label", maintain_order=True)
              .agg(n=pl.len(), position=pl.first("position"), r=pl.first("r"),
                   desc=pl.first("desc")))  # fmt: skip
    labels = labels.select("label", "position", "r", "desc", "n")
    return {"side": parts[0]["side"], "lines": lines,
            "labels": labels,
            "ucl": sum(p["ucl"] for p in parts), "ucn": sum(p["ucn"] for p in parts)}


def warning_lines(al: Alignment, actual_ids: Sequence[str | None] | pl.Series,
                  expected: dict, actual: dict) -> list[str]:
    """Things a user should know before trusting the scores: alignment problems, actual
    sentences with no expected partner, malformed expected sentences, reader warnings,
    unknown relation labels and different UW encodings (numeric UCL ids vs readable UCN)."""
    out = list(al.notes)
    n = al.unmatched_actual.size
    if n:
        ids = pl.Series(actual_ids, dtype=pl.String).gather(al.unmatched_actual[:6]).to_list()
        shown = [x or f"#{k + 1}" for x, k in zip(ids, al.unmatched_actual[:6].tolist(),
                                                   strict=True)]  # fmt: skip
        out.append(f"{n} actual sentence(s) have no expected partner (ignored): "
                   + _preview(shown, total=n))  # fmt: skip
    out += expected["lines"]["text"].to_list() + actual["lines"]["text"].to_list()
    for part in (expected, actual):
        for lab, n_lab, desc in part["labels"].sort("label").select("label", "n", "desc").rows():
            out.append(f"{part['side']}: unknown relation label {lab!r} ({n_lab}x, "
                       f"first in sentence {desc})")
    return out + _encoding_warnings((expected["ucl"], expected["ucn"]),
                                    (actual["ucl"], actual["ucn"]))


def _encoding_warnings(e: tuple[int, int], a: tuple[int, int]) -> list[str]:
    (eu, en), (au, an) = e, a

    def name(ucl: int, ucn: int) -> str | None:
        if ucl + ucn == 0:
            return None
        return "numeric UCL ids" if ucl > ucn else "readable UCN UWs"

    ne, na = name(eu, en), name(au, an)
    if ne and na and ne != na:
        return [
            f"UW encodings differ: expected uses {ne} ({eu} UCL / {en} UCN), actual uses {na} "
            f"({au} UCL / {an} UCN); UWs will not match (near 100% discrepancy)"
        ]
    return []


def unl_warnings(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    align: str = "auto",
) -> list[str]:
    """:func:`warning_lines` of two lists of parsed sentences."""
    al = align_sentences(expected, actual, align)
    parts = [merge_warning_parts([warning_parts(_positioned(chunk_from_sentences(xs)), side)])
             for side, xs in (("expected", expected), ("actual", actual))]
    return warning_lines(al, _ids(actual), parts[0], parts[1])


def _positioned(chunk: UnlChunk, first: int = 0) -> UnlChunk:
    """The chunk with positions ``first``, ``first + 1``, ... (its rows in a list)."""
    sents = chunk.sents.with_columns(
        position=pl.int_range(first, first + chunk.height, dtype=pl.Int64))
    return UnlChunk(sents, chunk.rels, chunk.nodes)


# --------------------------------------------------------------------------------------------
# Comparison of versions


def _stack(sentences_by_system: dict[str, pl.DataFrame]) -> tuple[pl.DataFrame, list[str]]:
    frames = [
        df.with_columns(system=pl.lit(name, pl.String)) for name, df in sentences_by_system.items()
    ]
    if not frames:
        raise ValueError("compare_versions needs at least one system")
    common = set.intersection(*(set(f.columns) for f in frames))
    keys = ["corpus", "task"] if "corpus" in common else ["task"]
    cols = [*keys, "system", "sent_index", "sent_id", "returned", "correct", "reason",
            "error_digest", "d_all_frac", "d_words_frac", "options"]  # fmt: skip
    stacked = pl.concat([f.select(cols) for f in frames], how="vertical_relaxed")
    mixed = (
        stacked.group_by(keys).agg(pl.col("options").n_unique().alias("n")).filter(pl.col("n") > 1)
    )
    if mixed.height:
        raise ValueError(
            "systems were scored with different options; verdicts are not comparable: "
            + str(stacked.select("system", "options").unique().sort("system").rows())
        )
    stacked = stacked.with_columns(
        profile=pl.concat_str(
            [
                pl.col("returned").cast(pl.String),
                pl.col("reason").fill_null(""),
                pl.col("error_digest").fill_null(""),
            ],
            separator=SEP,
        ),  # fmt: skip
        d_frac=pl.coalesce("d_all_frac", "d_words_frac"),
    )
    return stacked, keys


def compare_versions(sentences_by_system: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Versions of a grammar compared sentence by sentence (METRICS 3.4).

    Returns ``pairs`` (every ordered pair: corrections, new errors, changed errors, diff,
    oracle of the pair, McNemar p), ``oracle`` (every subset of versions, as the token
    oracles) and ``moved`` (one row per sentence and ordered pair whose verdict or error
    profile moved). Sentences are matched across systems by (task, sent_index, sent_id); a
    changed error is incorrect in both with a different profile (returned, reason, error
    digest)."""
    return finish_compare([compare_partials(sentences_by_system)])


def version_matrix(stacked: pl.DataFrame, names: list[str]) -> LabelMatrix:
    """The engine's matrix over sentences: a version's value is 0 when the sentence is
    CORRECT, else a code of its error profile; one sentence per unit."""
    profile = stacked["profile"].cast(pl.Categorical).to_physical().to_numpy().astype(np.int64)
    correct = stacked["correct"].to_numpy().astype(bool)
    n, t = len(names), stacked.height // max(len(names), 1)
    values = np.where(correct, 0, profile + 1).reshape(n, t)
    zeros = np.zeros(t, np.int32)
    return LabelMatrix(values=values, correct=correct.reshape(n, t),
                       display=np.zeros((n, t), np.uint8), gold=zeros, n_labels=1,
                       n_groups=1, sent=np.arange(t, dtype=np.int32), n_sents=t)


def compare_partials(sentences_by_system: dict[str, pl.DataFrame]) -> dict:
    """The map of :func:`compare_versions` over some sentences (every system's rows of the
    same sentences, in the same order): the engine's pair and oracle counts, correct
    sentences per system, and the rows of the sentences that moved."""
    stacked, keys = _stack(sentences_by_system)
    names = list(sentences_by_system)
    m = version_matrix(stacked, names)
    pairs = all_pairs(len(names))
    return {
        "keys": keys, "key_values": {k: stacked[k][0] if stacked.height else None
                                     for k in keys},
        "names": names, "pairs": pair_counts(m, pairs),
        "correct": m.correct.sum(axis=1, dtype=np.int64), "n": m.n_units,
        "oracle": oracle_counts(m.correct, m.gold, 1,
                                pairs if len(names) > MAX_ALL_SUBSETS else None),
        "moved": _moved(stacked, m, names, pairs, keys),
    }


_SIDE = ["returned", "correct", "d_frac", "reason"]


def _moved(stacked: pl.DataFrame, m: LabelMatrix, names: list[str],
           pairs: list[tuple[int, int]], keys: list[str]) -> pl.DataFrame:
    """Sentences whose value differs between two versions, both directions of each pair."""
    t = m.n_units
    frames = []
    for i, j in pairs:
        idx = np.flatnonzero(m.values[i] != m.values[j])
        if not idx.size:
            continue
        a, b = stacked[i * t + idx], stacked[j * t + idx]
        cls = np.where(m.correct[j, idx], 0, np.where(m.correct[i, idx], 1, 2))
        for first, second, side1, side2, c in ((i, j, a, b, cls), (j, i, b, a, _MIRROR[cls])):
            frames.append(pl.DataFrame({
                **{k: side1[k] for k in keys},
                "sys1": [names[first]] * idx.size, "sys2": [names[second]] * idx.size,
                "sent_id": side1["sent_id"], "sent_index": side1["sent_index"],
                "change": pl.Series(list(CLASSES), dtype=pl.String).gather(c),
                **{f"{x}1": side1[x] for x in _SIDE}, **{f"{x}2": side2[x] for x in _SIDE},
            }))
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames).rename({"d_frac1": "d_all_frac1", "d_frac2": "d_all_frac2"})


def finish_compare(partials: list[dict]) -> dict[str, pl.DataFrame]:
    """The reduce of :func:`compare_versions`: sum the partials of all shards, then the
    ratios, McNemar p-values, every subset's oracle with its best member and gain."""
    first = partials[0]
    keys, names = first["keys"], first["names"]
    pc, oc = first["pairs"], first["oracle"]
    correct, n = first["correct"].copy(), first["n"]
    for part in partials[1:]:
        pc.merge(part["pairs"])
        oc.merge(part["oracle"])
        correct += part["correct"]
        n += part["n"]
    values = next((p["key_values"] for p in partials if p["n"]), first["key_values"])
    lit = {k: pl.lit(v, pl.String) for k, v in values.items()}
    pairs = _pair_rows(pc, names, correct, n).with_columns(**lit)
    oracle = _oracle_rows(oc, names, correct, n).with_columns(**lit)
    moved = pl.concat([p["moved"] for p in partials if p["moved"].height] or [pl.DataFrame()])
    if moved.height:
        moved = moved.sort([*keys, "sys1", "sys2", "sent_index"])
    return {"pairs": _cast_to(pairs, "unl_pairs"), "oracle": _cast_to(oracle, "unl_oracle"),
            "moved": _cast_to(moved, "unl_moved") if moved.height else moved}


def _pair_rows(pc, names: list[str], correct: np.ndarray, n: int) -> pl.DataFrame:
    """Both directions of every pair of versions."""
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    arr = np.array(names, dtype=object)
    union = np.concatenate([correct[i] + fix, correct[j] + brk])
    return pl.DataFrame({
        "sys1": np.concatenate([arr[i], arr[j]]).tolist(),
        "sys2": np.concatenate([arr[j], arr[i]]).tolist(),
        "n_sentences": np.full(2 * i.size, n, np.int64),
        "n_correct1": np.concatenate([correct[i], correct[j]]),
        "n_correct2": np.concatenate([correct[j], correct[i]]),
        "n_changed": np.tile(n_diff, 2), "corrections": np.concatenate([fix, brk]),
        "new_errors": np.concatenate([brk, fix]), "changed_errors": np.tile(changed, 2),
        "diff": np.tile(ratio(n_diff, n), 2), "oracle": ratio(union, n),
        "mcnemar_p": np.tile(mcnemar_column(fix, brk), 2),
    }, schema_overrides={"sys1": pl.String, "sys2": pl.String})


def _oracle_rows(oc, names: list[str], correct: np.ndarray, n: int) -> pl.DataFrame:
    """The oracle of every subset of versions (as the token oracles): the share of
    sentences some member gets CORRECT, its best member and the gain over it."""
    subs, per_group = oracle_correct(oc, correct[:, None])
    total = per_group[:, 0]
    best = [min(members, key=lambda k: (-correct[k], names[k])) for members in subs]
    return pl.DataFrame({
        "systems": [sorted(names[k] for k in members) for members in subs],
        "n_systems": [len(members) for members in subs],
        "n_sentences": np.full(len(subs), n, np.int64), "n_oracle": total,
        "oracle": ratio(total, n), "best_system": [names[k] for k in best],
        "best_correct": correct[best], "gain": ratio(total - correct[best], n),
    }, schema_overrides={"systems": pl.List(pl.String), "best_system": pl.String})


_MIRROR = np.array([1, 0, 2])


def _cast_to(df: pl.DataFrame, table: str) -> pl.DataFrame:
    schema = pl.Schema(TABLES[table])
    return df.select([pl.col(c).cast(schema[c]) for c in schema.names() if c in df.columns])


__all__ = [
    "Alignment",
    "NlOptions",
    "UnlOptions",
    "align_sentences",
    "compare_versions",
    "nl_words",
    "score_nlization",
    "score_unlization",
    "unl_scores",
    "unl_warnings",
]
