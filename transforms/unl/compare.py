"""Comparison of versions sentence by sentence (METRICS 3.4): pairs, oracles, moved."""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.schemas.tables import TABLES
from sysdiff.schemas.vocabulary import CLASSES
from sysdiff.transforms.engine import (
    MAX_ALL_SUBSETS,
    LabelMatrix,
    all_pairs,
    oracle_counts,
    pair_counts,
)
from sysdiff.transforms.reduce import mcnemar_column, nulls, oracle_correct, pair_ci, ratio
from sysdiff.transforms.unl.options import SEP

# --------------------------------------------------------------------------------------------
# Comparison of versions

#: The columns of a version's rows the comparison reads besides its keys (``corpus`` when
#: every version has it, ``task``).
COMPARED = ("sent_index", "sent_id", "returned", "correct", "reason", "error_digest",
            "d_all_frac", "d_words_frac", "options")


def compared_columns(df: pl.DataFrame) -> pl.DataFrame:
    """The columns of ``df`` (a version's rows) that :func:`compare_partials` reads."""
    return df.select([c for c in ("corpus", "task", *COMPARED) if c in df.columns])


def _stack(sentences_by_system: dict[str, pl.DataFrame]) -> tuple[pl.DataFrame, list[str]]:
    frames = [
        df.with_columns(system=pl.lit(name, pl.String)) for name, df in sentences_by_system.items()
    ]
    if not frames:
        raise ValueError("compare_versions needs at least one system")
    common = set.intersection(*(set(f.columns) for f in frames))
    keys = ["corpus", "task"] if "corpus" in common else ["task"]
    cols = [*keys, "system", *COMPARED]
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


def finish_compare(partials: list[dict], f1: np.ndarray | None = None,
                   samples: np.ndarray | None = None, confidence: float = 0.95
                   ) -> dict[str, pl.DataFrame]:
    """The reduce of :func:`compare_versions`: sum the partials of all shards, then the
    ratios, McNemar p-values, every subset's oracle with its best member and gain. With the
    versions' F-measures ``f1`` (in the partials' order), each pair's delta F, with its
    bootstrap interval and p from the (B, N) ``samples`` of F."""
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
    pairs = _pair_rows(pc, names, correct, n, f1, samples, confidence).with_columns(**lit)
    oracle = _oracle_rows(oc, names, correct, n).with_columns(**lit)
    moved = pl.concat([p["moved"] for p in partials if p["moved"].height] or [pl.DataFrame()])
    if moved.height:
        moved = moved.sort([*keys, "sys1", "sys2", "sent_index"])
    return {"pairs": _cast_to(pairs, "unl_pairs"), "oracle": _cast_to(oracle, "unl_oracle"),
            "moved": _cast_to(moved, "unl_moved") if moved.height else moved}


def _pair_rows(pc, names: list[str], correct: np.ndarray, n: int,
               f1: np.ndarray | None = None, samples: np.ndarray | None = None,
               confidence: float = 0.95) -> pl.DataFrame:
    """Both directions of every pair of versions."""
    i = np.array([p[0] for p in pc.pairs], np.int64)
    j = np.array([p[1] for p in pc.pairs], np.int64)
    n_diff, fix, brk, changed = (pc.classes[:, k] for k in range(4))
    arr = np.array(names, dtype=object)
    union = np.concatenate([correct[i] + fix, correct[j] + brk])
    f1 = np.full(len(names), np.nan) if f1 is None else np.asarray(f1, np.float64)
    ci = pair_ci(samples, i, j, f1[j] - f1[i], confidence)
    return nulls(pl.DataFrame({
        "sys1": np.concatenate([arr[i], arr[j]]).tolist(),
        "sys2": np.concatenate([arr[j], arr[i]]).tolist(),
        "n_sentences": np.full(2 * i.size, n, np.int64),
        "n_correct1": np.concatenate([correct[i], correct[j]]),
        "n_correct2": np.concatenate([correct[j], correct[i]]),
        "n_changed": np.tile(n_diff, 2), "corrections": np.concatenate([fix, brk]),
        "new_errors": np.concatenate([brk, fix]), "changed_errors": np.tile(changed, 2),
        "diff": np.tile(ratio(n_diff, n), 2), "oracle": ratio(union, n),
        "delta_f1": np.concatenate([f1[j] - f1[i], f1[i] - f1[j]]),
        "delta_ci_low": ci.low, "delta_ci_high": ci.high,
        "mcnemar_p": np.tile(mcnemar_column(fix, brk), 2), "bootstrap_p": ci.p,
    }, schema_overrides={"sys1": pl.String, "sys2": pl.String}))


def _oracle_rows(oc, names: list[str], correct: np.ndarray, n: int) -> pl.DataFrame:
    """The oracle of every subset of versions (as the token oracles): the share of
    sentences some member gets CORRECT, its best member and the gain over it."""
    subs, per_group = oracle_correct(oc, correct[:, None])
    total = per_group[:, 0]
    best = [min(members, key=lambda k: (-correct[k], names[k])) for members in subs]
    return nulls(pl.DataFrame({
        "systems": [sorted(names[k] for k in members) for members in subs],
        "n_systems": [len(members) for members in subs],
        "n_sentences": np.full(len(subs), n, np.int64), "n_oracle": total,
        "oracle": ratio(total, n), "best_system": [names[k] for k in best],
        "best_correct": correct[best], "gain": ratio(total - correct[best], n),
    }, schema_overrides={"systems": pl.List(pl.String), "best_system": pl.String}))


_MIRROR = np.array([1, 0, 2])


def _cast_to(df: pl.DataFrame, table: str) -> pl.DataFrame:
    schema = pl.Schema(TABLES[table])
    return df.select([pl.col(c).cast(schema[c]) for c in schema.names() if c in df.columns])
