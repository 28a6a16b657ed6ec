"""Every Prefect task of a run takes immutable values (Prefect walks its parameters while
other threads run, and Dask pickles them): no dict, list or set, no mutable dataclass, no
writable array, at any depth. Checked on real runs of every task family."""

from __future__ import annotations

import pytest
from prefect import Task

from sysdiff.schemas.frozen import FrozenMap, freeze, is_frozen
from tests.conftest import BUNDLED, REPO, run_cli


@pytest.fixture
def submitted(monkeypatch):
    """(task name, parameter name, type) of every task parameter of the runs in the test
    that is not immutable."""
    bad: list[tuple[str, str, str]] = []
    original = Task.submit

    def checked(self, *args, **kwargs):
        for name, value in [*enumerate(args), *kwargs.items()]:
            if not is_frozen(value):
                bad.append((self.name, str(name), type(value).__name__))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Task, "submit", checked)
    return bad


RUNS = {**BUNDLED, "ner": REPO / "data" / "ner" / "ner.toml",
        "srl": REPO / "data" / "srl" / "srl.toml", "corefud": REPO / "data" / "corefud"}


@pytest.mark.parametrize("corpus", ["sequoia", "litbank", "unl", "ner", "srl", "corefud"])
def test_every_task_parameter_is_immutable(corpus, submitted, tmp_path, prefect_harness):
    run = RUNS[corpus]
    if run.is_dir():
        run = next(run.glob("*.toml"))
    code, _, err = run_cli("run", str(run), "-w", str(tmp_path / "wh"))
    assert code == 0, err
    assert submitted == [], submitted


def test_the_checker_finds_what_can_change():
    from dataclasses import dataclass

    import numpy as np

    @dataclass(frozen=True)
    class Holder:
        value: object

    assert is_frozen(Holder(("a", 1, FrozenMap({"k": (1, 2)}))))
    for mutable in ({"a": 1}, [1], {1}, Holder({"a": 1}), Holder([1]), np.zeros(2)):
        assert not is_frozen(mutable), mutable
    frozen = np.zeros(2)
    frozen.flags.writeable = False
    assert is_frozen(Holder(frozen))
    assert is_frozen(freeze({"a": [1, {"b": {2}}]}))
    with pytest.raises(TypeError):
        FrozenMap({"a": 1})["b"] = 2  # type: ignore[index]
