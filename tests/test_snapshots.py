"""Every table of every bundled corpus equals the golden dump written by the code before the
last change that was meant to leave results alone (see ``tests/snapshot.py``)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import BUNDLED
from tests.snapshot import SNAPSHOTS, digests


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_tables_equal_the_golden_dump(bundled, name):
    golden = json.loads((SNAPSHOTS / f"{name}.json").read_text())
    got = digests(bundled(name))
    assert sorted(got) == sorted(golden), "the set of non-empty tables changed"
    differ = {t: (golden[t]["rows"], got[t]["rows"]) for t in golden if got[t] != golden[t]}
    assert not differ, f"tables differ from the golden dump (rows before, after): {differ}"
