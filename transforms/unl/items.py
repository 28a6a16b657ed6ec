"""METRICS 3.2/3.3 items: integer items of UNL graphs, their counts and digests, and
the string items (NLization words) counted with polars."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from sysdiff.schemas.formats.unl import factorize
from sysdiff.transforms.unl.options import SEP, UnlOptions

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
