"""The Python API: ``sysdiff.evaluate`` runs the flow, ``sysdiff.open`` reads through the
``sysdiff sql`` sandbox."""

from __future__ import annotations

import pytest

import sysdiff
from sysdiff.flows.queries import query
from tests.conftest import SEQUOIA, snapshot
from tests.test_scale import first_sentences


@pytest.fixture(scope="module")
def api_warehouse(tmp_path_factory, prefect_harness):
    tmp = tmp_path_factory.mktemp("api")
    key = first_sentences(SEQUOIA / "key.conllu", tmp / "key.conllu", 20)
    md = first_sentences(SEQUOIA / "fr_core_news_md-3.8.0.conllu", tmp / "md.conllu", 20)
    sm = first_sentences(SEQUOIA / "fr_core_news_sm-3.8.0.conllu", tmp / "sm.conllu", 20)
    root = sysdiff.evaluate(key=key, systems={"spacy@md": md, "spacy@sm": sm}, task="dep",
                            corpus="api", warehouse=tmp / "wh", versions={"spacy": ["sm",
                                                                                   "md"]})
    return root


def test_evaluate_writes_what_the_cli_would(api_warehouse):
    scores = query(api_warehouse, "select system, view, punct, n_correct from scores")
    assert set(scores["system"]) == {"spacy@md", "spacy@sm"}
    hist = query(api_warehouse, "select version, previous from history where view = 'las' "
                                "and not punct order by position")
    assert hist.rows() == [("sm", None), ("md", "sm")]  # the explicit order, not natural


def test_open_reads_every_table_through_the_sandbox(api_warehouse):
    before = snapshot(api_warehouse)
    with sysdiff.open(api_warehouse) as wh:
        assert {"scores", "pairs", "changes", "history"} <= set(wh.tables)
        assert wh["scores"].sort(wh["scores"].columns).equals(
            query(api_warehouse, "select * from scores").sort(wh["scores"].columns))
        rel = wh.relation("select sys1, sys2, n_diff from pairs where view = 'upos'")
        assert rel.pl().height == 2
        with pytest.raises(sysdiff.InputError, match="read-only"):
            wh.sql("create table x as select 1")
        with pytest.raises(sysdiff.InputError, match="refused"):
            wh.sql("select * from read_text('/etc/passwd')")
        with pytest.raises(sysdiff.InputError, match="no table 'nope'"):
            wh["nope"]
    assert snapshot(api_warehouse) == before
