"""A warehouse written before format 6 (``tests/data/format5``: lean partitions with their own
sentence and ID, keys without word numbers) reads as a fresh warehouse of the same runs, and
a run that adds a system to one of its corpora gives the tables a fresh warehouse gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sysdiff.flows.catalog import has_legacy_units
from sysdiff.flows.names import read_manifest
from tests.conftest import REPO, run_cli
from tests.snapshot import sandbox_dumps
from tests.test_scale import first_sentences

FIXTURE = Path(__file__).resolve().parent / "data" / "format5" / "warehouse"
SEQUOIA, NER = REPO / "data" / "sequoia", REPO / "data" / "ner"
CUTS = {"key.conllu": (SEQUOIA, 30), "fr_core_news_sm-3.8.0.conllu": (SEQUOIA, 30),
        "fr_core_news_md-3.8.0.conllu": (SEQUOIA, 30), "seqsm_local-ud2.8.conllu": (SEQUOIA, 30),
        "gold.tsv": (NER, 100), "spacy_sm-3.6.0.tsv": (NER, 100)}


@pytest.fixture(scope="module")
def cuts(tmp_path_factory) -> Path:
    """The fixture's inputs, cut again from the bundled sample (README of the fixture)."""
    folder = tmp_path_factory.mktemp("cuts")
    for name, (source, n) in CUTS.items():
        first_sentences(source / name, folder / name, n)
    return folder


def run(root: Path, cuts: Path, corpus: str, task: str, key: str, **systems: str) -> None:
    code, _out, err = run_cli("run", "--key", str(cuts / key), "--corpus", corpus, "--task",
                              task, "-w", str(root), "--ar-trials", "50",
                              *(f"--system={s}={cuts / f}" for s, f in systems.items()))
    assert code == 0, err


def the_fixtures_runs(root: Path, cuts: Path) -> None:
    run(root, cuts, "seq", "dep", "key.conllu", sm="fr_core_news_sm-3.8.0.conllu",
        md="fr_core_news_md-3.8.0.conllu")
    run(root, cuts, "uner", "ner", "gold.tsv", sm36="spacy_sm-3.6.0.tsv")
    run(root, cuts, "tags", "pos", "key.conllu", md="fr_core_news_md-3.8.0.conllu")


def add_a_system(root: Path, cuts: Path) -> None:
    run(root, cuts, "seq", "dep", "key.conllu", u8="seqsm_local-ud2.8.conllu")


@pytest.fixture(scope="module")
def fresh(cuts, tmp_path_factory, prefect_harness) -> Path:
    root = tmp_path_factory.mktemp("fresh") / "wh"
    the_fixtures_runs(root, cuts)
    return root


def test_the_fixture_is_of_the_old_format():
    """What the tests below read is the layout before format 6 (so they test its reading)."""
    words = list((FIXTURE / "tables" / "words").rglob("*.parquet"))
    spans = list((FIXTURE / "tables" / "span_words").rglob("*.parquet"))
    keys = list((FIXTURE / "tables" / "units").rglob("*.parquet"))
    assert len(words) == 3 and len(spans) == 1 and len(keys) == 2
    assert all({"sent", "id"} <= set(pq.read_schema(p).names) for p in words + spans)
    assert all("word" not in pq.read_schema(p).names for p in keys)
    assert has_legacy_units(read_manifest(FIXTURE))


def test_an_old_warehouse_reads_as_a_fresh_one(fresh, tmp_path):
    old = shutil.copytree(FIXTURE, tmp_path / "old")
    got, want = sandbox_dumps(old), sandbox_dumps(fresh)
    assert not has_legacy_units(read_manifest(fresh))  # the fresh one's view has no old join
    assert {"units", "sents", "span_tokens", "scores", "pairs"} <= set(want)
    assert got == want


def test_a_system_added_to_an_old_warehouse_gives_a_fresh_ones_tables(cuts, fresh, tmp_path):
    """The key of ``seq`` is read again (word numbers), its old lean systems are read by
    position; the ``tags`` corpus keeps its old key and lean system beside it."""
    old = shutil.copytree(FIXTURE, tmp_path / "old")
    new = shutil.copytree(fresh, tmp_path / "new")
    add_a_system(old, cuts)
    add_a_system(new, cuts)
    kept = [p for p in (old / "tables" / "words").rglob("*.parquet")
            if "sent" in pq.read_schema(p).names]
    assert len(kept) == 3  # sm and md of seq, md of tags: still of the old format
    got, want = sandbox_dumps(old), sandbox_dumps(new)
    assert got["units"].count("\nseq,u8,") > 800
    assert got == want
