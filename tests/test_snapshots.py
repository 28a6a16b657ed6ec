"""Every table of every bundled corpus equals the golden dump written by the code before the
last change that was meant to leave results alone (see ``tests/snapshot.py``).

The results are compared without the bootstrap intervals (issue 24, METRICS 1.6b: new
columns of the scores, pairs and history tables, and their settings in ``options``) with
the goldens of the code before the intervals: adding them changed no other figure. The
interval columns have goldens of their own."""

from __future__ import annotations

import json

import pytest

from tests.conftest import BUNDLED
from tests.snapshot import SNAPSHOTS, digests


def assert_golden(got: dict, golden: dict) -> None:
    assert sorted(got) == sorted(golden), "the set of non-empty tables changed"
    differ = {t: (golden[t]["rows"], got[t]["rows"]) for t in golden if got[t] != golden[t]}
    assert not differ, f"tables differ from the golden dump (rows before, after): {differ}"


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_tables_equal_the_golden_dump(bundled, name):
    golden = json.loads((SNAPSHOTS / f"{name}.json").read_text())
    assert_golden(digests(bundled(name), "results"), golden)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_intervals_equal_the_golden_dump(bundled, name):
    golden = json.loads((SNAPSHOTS / "intervals" / f"{name}.json").read_text())
    got = digests(bundled(name), "intervals")
    assert any(t.endswith("scores") for t in got), "no scores with intervals"
    assert_golden(got, golden)
