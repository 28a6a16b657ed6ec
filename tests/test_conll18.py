"""CoNLL 2018 UD metrics: the official script's numbers on real data, and hand-worked cases."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import read_conll
from sysdiff.transforms.conll18 import (
    METRICS,
    TAG_METRICS,
    conll18_counts,
    conll18_matches,
    conll18_scores,
    normalised_key,
    tag_counts,
)

SEQUOIA = Path(__file__).resolve().parents[1] / "data" / "sequoia"
SYSTEMS = [
    "fr_core_news_md-3.8.0",
    "fr_core_news_sm-3.8.0",
    "seqsm_local-ud2.16",
    "seqsm_local-ud2.8",
]
COUNTS = ("correct", "gold_total", "system_total", "aligned_total")


def parse_expected(path: Path) -> dict[str, dict[str, list[str]]]:
    """``conll18_ud_eval.py -v`` output per system: metric -> [P, R, F1, AligndAcc] as printed."""
    tables: dict[str, dict[str, list[str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            table = tables.setdefault(line[3:].strip(), {})
        elif "|" in line and not line.startswith("Metric"):
            name, *values = (cell.strip() for cell in line.split("|"))
            table[name] = values
    return tables


def printed(scores: pl.DataFrame) -> dict[str, list[str]]:
    """Scores formatted as the official script prints them (``{:.2f}`` of 100 * x)."""
    columns = ("precision", "recall", "f1", "aligned_accuracy")
    return {
        row["metric"]: [f"{100 * row[c]:.2f}" for c in columns]
        for row in scores.iter_rows(named=True)
    }


def units(rows: list[tuple]) -> pl.DataFrame:
    """A units frame from ``(sent, id, lemma, upos, feats, head, deprel)`` rows."""
    frame = pl.DataFrame(
        rows,
        schema=["sent", "id", "lemma", "upos", "feats", "head", "deprel"],
        orient="row",
    )
    return frame.with_columns(
        pl.col("sent", "id", "head").cast(pl.Int32),
        form=pl.format("w{}", "id"),
        xpos=pl.lit("_"),
        deps=pl.lit("_"),
        misc=pl.lit("_"),
    )


def counts_of(key: pl.DataFrame, system: pl.DataFrame) -> dict[str, tuple[int, ...]]:
    """metric -> (correct, gold_total, system_total, aligned_total)."""
    return {row[0]: tuple(row[1:]) for row in conll18_counts(key, system).iter_rows()}


# "le chat dort ." with gold annotation; tests copy it and change the system side.
SENTENCE = [
    (0, 1, "le", "DET", "Definite=Def|Gender=Masc|Number=Sing|PronType=Art", 2, "det"),
    (0, 2, "chat", "NOUN", "Gender=Masc|Number=Sing", 3, "nsubj"),
    (0, 3, "dormir", "VERB", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin", 0, "root"),
    (0, 4, ".", "PUNCT", "_", 3, "punct"),
]


def changed(rows: list[tuple], word: int, **values: object) -> list[tuple]:
    """``rows`` with some columns of word ``word`` (1-based ID) replaced."""
    names = ["sent", "id", "lemma", "upos", "feats", "head", "deprel"]
    out = [list(row) for row in rows]
    for name, value in values.items():
        out[word - 1][names.index(name)] = value
    return [tuple(row) for row in out]


@pytest.fixture(scope="module")
def key() -> pl.DataFrame:
    return read_conll(SEQUOIA / "key.conllu").words


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, list[str]]]:
    return parse_expected(SEQUOIA / "expected-conll18-ud-eval.txt")


@pytest.mark.parametrize("name", SYSTEMS)
def test_sequoia_equals_official_script(name, key, expected):
    system = read_conll(SEQUOIA / f"{name}.conllu").words
    got = printed(conll18_scores(conll18_counts(key, system)))
    assert list(got) == list(METRICS)
    assert got == {metric: expected[name][metric] for metric in METRICS}


@pytest.mark.parametrize("name", SYSTEMS)
def test_tag_counts_and_a_shared_key_give_the_same_counts(name, key):
    """A tagging task's short path (no tree joins) and the key normalised once for many
    systems count exactly what the full computation counts."""
    system = read_conll(SEQUOIA / f"{name}.conllu").words
    full = conll18_counts(key, system)
    gold = normalised_key(key)
    assert conll18_counts(key, system, gold).equals(full)
    tags = tag_counts(key, system, gold)
    assert tags["metric"].to_list() == list(TAG_METRICS)
    assert tags.equals(full.filter(pl.col("metric").is_in(TAG_METRICS)))
    assert tags["correct"].to_list() != [key.height] * len(TAG_METRICS)  # real errors


def test_counts_are_additive_over_sentence_shards(key):
    system = read_conll(SEQUOIA / f"{SYSTEMS[0]}.conllu").words
    whole = conll18_counts(key, system)
    shard = pl.col("sent") % 3
    parts = [conll18_counts(key.filter(shard == i), system.filter(shard == i)) for i in range(3)]
    summed = pl.concat(parts).group_by("metric", maintain_order=True).agg(pl.col(COUNTS).sum())
    assert summed.equals(whole)
    assert conll18_scores(pl.concat(parts)).equals(conll18_scores(whole))


def test_deprel_subtypes_are_ignored():
    key = units([
        (0, 1, "_", "DET", "_", 2, "det"),
        (0, 2, "_", "VERB", "_", 0, "root"),
        (0, 3, "_", "NOUN", "_", 2, "obl:arg"),
        (0, 4, "_", "NOUN", "_", 2, "nsubj:pass"),
    ])  # fmt: skip
    system = units([
        (0, 1, "_", "DET", "_", 2, "det:poss"),
        (0, 2, "_", "VERB", "_", 0, "root"),
        (0, 3, "_", "NOUN", "_", 2, "obl:mod"),
        (0, 4, "_", "NOUN", "_", 2, "obj"),
    ])  # fmt: skip
    got = counts_of(key, system)
    assert got["UAS"] == (4, 4, 4, 4)
    assert got["LAS"] == (3, 4, 4, 4)
    assert got["CLAS"] == (2, 3, 3, 3)  # root, obl:arg, nsubj:pass are content words


def test_only_universal_features_are_compared():
    key = units([
        (0, 1, "_", "NOUN", "Gender=Fem|Number=Sing|Typo=Yes", 0, "root"),
        (0, 2, "_", "NOUN", "_", 1, "nmod"),
        (0, 3, "_", "NOUN", "Number=Plur", 1, "nmod"),
        (0, 4, "_", "PRON", "Case=Acc,Nom", 1, "nmod"),
        (0, 5, "_", "PRON", "Number=Sing", 1, "nmod"),
    ])  # fmt: skip
    system = units([
        (0, 1, "_", "NOUN", "Number=Sing|Gender=Fem", 0, "root"),  # order, Typo: ignored
        (0, 2, "_", "NOUN", "Gender[psor]=Masc|NounClass=Bantu1", 1, "nmod"),  # not in the list
        (0, 3, "_", "NOUN", "Number=Sing", 1, "nmod"),
        (0, 4, "_", "NOUN", "Case=Acc,Nom", 1, "nmod"),  # feats right, UPOS wrong
        (0, 5, "_", "PRON", "Number=Sing|Foreign=Yes", 1, "nmod"),  # Foreign is universal
    ])  # fmt: skip
    got = counts_of(key, system)
    assert got["UFeats"] == (3, 5, 5, 5)
    assert got["AllTags"] == (2, 5, 5, 5)
    assert got["MLAS"] == (2, 5, 5, 5)


def test_gold_lemma_underscore_matches_anything():
    key = units([
        (0, 1, "_", "X", "_", 0, "root"),
        (0, 2, "chat", "X", "_", 1, "nmod"),
        (0, 3, "le", "X", "_", 1, "nmod"),
        (0, 4, "_", "X", "_", 1, "nmod"),
    ])  # fmt: skip
    system = units([
        (0, 1, "dormir", "X", "_", 0, "root"),
        (0, 2, "_", "X", "_", 1, "nmod"),  # system "_" for a real lemma: wrong
        (0, 3, "le", "X", "_", 1, "nmod"),
        (0, 4, "_", "X", "_", 1, "nmod"),
    ])  # fmt: skip
    got = counts_of(key, system)
    assert got["Lemmas"] == (3, 4, 4, 4)
    assert got["BLEX"] == (3, 4, 4, 4)


def test_content_words_counted_on_each_side():
    """Precision is over the system's content words, recall over the key's."""
    system = changed(SENTENCE, 1, deprel="nsubj")  # functional -> content
    system = changed(system, 4, deprel="dep")  # punct -> content
    got = counts_of(units(SENTENCE), units(system))
    assert got["LAS"] == (2, 4, 4, 4)
    assert got["CLAS"] == (2, 2, 4, 2)
    assert got["BLEX"] == (2, 2, 4, 2)
    assert got["MLAS"] == (1, 2, 4, 2)  # "chat" lost its functional child "le"
    scores = conll18_scores(conll18_counts(units(SENTENCE), units(system))).row(
        METRICS.index("CLAS"), named=True
    )
    assert scores == {
        "metric": "CLAS",
        "precision": 0.5,
        "recall": 1.0,
        "f1": 2 * 2 / 6,
        "aligned_accuracy": 1.0,
    }


def test_mlas_compares_functional_children():
    key = units(SENTENCE)
    child_upos = changed(SENTENCE, 1, upos="PRON", deprel="det:poss")
    assert counts_of(key, units(child_upos))["CLAS"] == (2, 2, 2, 2)
    assert counts_of(key, units(child_upos))["MLAS"] == (1, 2, 2, 2)
    child_feats = changed(SENTENCE, 1, feats=SENTENCE[0][4] + "|Typo=Yes")  # not universal
    assert counts_of(key, units(child_feats))["MLAS"] == (2, 2, 2, 2)
    reattached = changed(SENTENCE, 1, head=3)  # "le" moves from "chat" to "dormir"
    got = counts_of(key, units(reattached))
    assert got["CLAS"] == (2, 2, 2, 2)
    assert got["MLAS"] == (0, 2, 2, 2)
    matches = conll18_matches(key, units(reattached))
    assert matches["MLAS"].to_list() == [False, False, False, False]
    assert matches["gold_content"].to_list() == [False, True, True, False]


def test_punctuation_is_counted():
    system = changed(SENTENCE, 4, head=2)
    got = counts_of(units(SENTENCE), units(system))
    assert got["UAS"] == (3, 4, 4, 4)
    assert got["LAS"] == (3, 4, 4, 4)
    assert got["CLAS"] == (2, 2, 2, 2)  # punct is not a content word


def test_scores_with_nothing_to_count_are_null():
    """No number without data (issue 20): the official script prints 0.0 for a 0/0; sysdiff
    stores NULL. With key words but no system word, only P is NULL and F1 is 0."""
    counts = pl.DataFrame(
        {"metric": ["CLAS", "LAS"], "correct": [0, 0], "gold_total": [0, 3],
         "system_total": [0, 0], "aligned_total": [0, 0]}
    )  # fmt: skip
    assert conll18_scores(counts).rows() == [("CLAS", None, None, None, None),
                                             ("LAS", None, 0.0, 0.0, None)]


def test_different_words_are_refused():
    key = units(SENTENCE)
    with pytest.raises(InputError, match="4 words"):
        conll18_counts(key, key.head(3))
    with pytest.raises(InputError, match="sentence 0 word 1"):
        conll18_counts(key, key.with_columns(pl.col("id").reverse()))
