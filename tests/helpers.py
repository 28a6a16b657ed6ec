"""Small builders shared by tests: word frames from label lists, a one-view evaluation."""

from __future__ import annotations

import numpy as np
import polars as pl

from sysdiff.transforms import tokens


def words(upos: list[str], sent: list[int] | None = None, heads: list[int] | None = None,
          deprels: list[str] | None = None, forms: list[str] | None = None) -> pl.DataFrame:
    """A words frame with the reader's columns, one sentence unless ``sent`` says otherwise."""
    n = len(upos)
    sent = sent or [0] * n
    ids, last, k = [], None, 0
    for s in sent:
        k = k + 1 if s == last else 1
        last = s
        ids.append(k)
    return pl.DataFrame({
        "sent": sent, "id": ids, "form": forms or [f"w{i}" for i in range(n)],
        "lemma": ["_"] * n, "upos": upos, "xpos": ["_"] * n, "feats": ["_"] * n,
        "head": heads or [0] * n, "deprel": deprels or ["dep"] * n,
    }, schema_overrides={"sent": pl.Int32, "id": pl.Int32, "head": pl.Int32})


def evaluate(view: str, key: pl.DataFrame, systems: dict[str, pl.DataFrame], punct: bool,
             trials: int = 200, mappings=None) -> dict[str, pl.DataFrame]:
    """All token tables of one view and punctuation setting, unsharded."""
    return tokens.evaluate_words(key, systems, [view], mappings, trials)[(view, punct)]


def as_dict(df: pl.DataFrame, key: str | list[str], value: str) -> dict:
    """Map a key column (or tuple of columns) to a value column."""
    keys = df.select(key).rows() if isinstance(key, list) else df[key].to_list()
    return dict(zip(keys, df[value].to_list(), strict=True))


def frac(num: int, den: int) -> float:
    return num / den if den else 0.0


def bracket_marks(n_tokens: int, chains) -> list[list[str]]:
    """CoNLL-2012 coreference marks per token for chains of (start, end) spans."""
    items = chains.items() if isinstance(chains, dict) else enumerate(chains)
    marks: list[list[str]] = [[] for _ in range(n_tokens)]
    for e, chain in items:
        for s, t in chain:
            if s == t:
                marks[s].append(f"({e})")
            else:
                marks[s].append(f"({e}")
                marks[t].append(f"{e})")
    return marks


__all__ = ["words", "evaluate", "as_dict", "frac", "bracket_marks", "np"]
