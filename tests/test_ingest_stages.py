"""A large file's ingest moves stage by stage without blocking the flow (plan, ranges,
assembly), and the ingest loop moves every file in flight on while it waits for the first:
one file's assembly overlaps the next file's ranges, on threads and on Dask.

The tasks are replaced by fakes whose completion the test controls, so each step is
deterministic: what is submitted, when, and what an error does.
"""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest

from sysdiff.flows import ingest as loop
from sysdiff.flows import token_ingest as ti
from sysdiff.schemas.formats.ranges import ByteRange


class Fake:
    """A submitted task's future: done when the test says so, then its value or error."""

    def __init__(self, name: str, value: object = None, error: Exception | None = None):
        self.name, self.value, self.error = name, value, error
        self.wrapped_future = SimpleNamespace(done=lambda: self.is_done)
        self.is_done = False

    def result(self) -> object:
        if not self.is_done:
            raise AssertionError(f"{self.name}: result asked before it was done")
        if self.error is not None:
            raise self.error
        return self.value


class Submitted:
    """Records the fake futures a task's ``submit`` hands out, in order."""

    def __init__(self, name: str, make=None) -> None:
        self.name, self.make, self.futures = name, make, []

    def submit(self, arg):
        future = self.make(arg) if self.make else Fake(self.name, value=f"{self.name} result")
        self.futures.append(future)
        return future


@pytest.fixture
def tasks(monkeypatch):
    """Every task a ranged ingest submits, faked; the key is 8 sentences of 1 word."""
    made = SimpleNamespace(
        plan=Submitted("plan"),
        reads=Submitted("read", lambda rj: Fake(f"read {rj.index}", value=SimpleNamespace(
            path=f"/nonexistent/range-{rj.index}"))),
        assemble=Submitted("assemble"),
        full=Submitted("full"))
    monkeypatch.setattr(ti, "plan_file", made.plan)
    monkeypatch.setattr(ti, "read_range", made.reads)
    monkeypatch.setattr(ti, "assemble", made.assemble)
    monkeypatch.setattr(ti, "ingest_file", made.full)
    monkeypatch.setattr(ti, "key_shape", lambda sents: np.ones(8, np.int32))
    return made


def job() -> SimpleNamespace:
    return SimpleNamespace(key=SimpleNamespace(sents="key-sents"), lean=True)


def planned(ranges: int) -> ti.FilePlan:
    cuts = tuple(ByteRange(10 * i, 10 * (i + 1), 2 * i) for i in range(ranges))
    return ti.FilePlan(whole=SimpleNamespace(), ranges=cuts)


def test_stages_are_submitted_as_their_inputs_finish(tasks, monkeypatch):
    monkeypatch.setattr(ti, "replace", lambda j, **kw: j)
    ingest = ti.RangedIngest(job())
    plan = tasks.plan.futures[0]
    plan.value = planned(3)
    ingest.advance()
    assert tasks.reads.futures == []  # the plan is not done: nothing more, no waiting
    plan.is_done = True
    ingest.advance()
    assert [f.name for f in tasks.reads.futures] == ["read 0", "read 1", "read 2"]
    assert not ingest.ready()
    for f in tasks.reads.futures[:2]:
        f.is_done = True
    ingest.advance()
    assert tasks.assemble.futures == []  # one range still reading
    tasks.reads.futures[2].is_done = True
    assert not ingest.ready()  # submits the assembly, which is not done yet
    assert len(tasks.assemble.futures) == 1 and tasks.full.futures == []
    tasks.assemble.futures[0].is_done = True
    assert ingest.ready() and ingest.result() == "assemble result"
    assert len(tasks.reads.futures) == 3 and len(tasks.assemble.futures) == 1


def test_a_file_not_cut_goes_to_the_full_reader(tasks, monkeypatch):
    monkeypatch.setattr(ti, "replace", lambda j, **kw: j)
    ingest = ti.RangedIngest(job())
    tasks.plan.futures[0].value = ti.FilePlan(whole=SimpleNamespace(), ranges=None)
    tasks.plan.futures[0].is_done = True
    ingest.advance()
    assert tasks.reads.futures == [] and len(tasks.full.futures) == 1


def test_an_error_waits_for_result_and_no_stage_follows_it(tasks):
    ingest = ti.RangedIngest(job())
    plan = tasks.plan.futures[0]
    plan.error, plan.is_done = ValueError("the file changed while it was read"), True
    ingest.advance()  # never raises: errors come out of result(), in source order
    assert tasks.reads.futures == []
    with pytest.raises(ValueError, match="changed"):
        ingest.result()
    ingest.wait_submitted()  # after another file's error: waits, submits nothing
    assert tasks.reads.futures == [] and tasks.assemble.futures == []


def test_a_plan_submitted_beside_the_keys_read_is_the_one_used(tasks):
    early = Fake("early plan", value=planned(2))
    ingest = ti.RangedIngest(job(), early)
    assert tasks.plan.futures == [] and ingest.plan is early


def test_the_loop_moves_the_others_on_while_it_waits_for_the_first(monkeypatch):
    monkeypatch.setattr(loop, "POLL_S", 0)
    second = SimpleNamespace(steps=0)
    second.advance = lambda: setattr(second, "steps", second.steps + 1)
    head = Fake("first")
    head.wrapped_future = SimpleNamespace(done=lambda: second.steps >= 3)
    loop._await_first(head, deque([("s2", "system", second)]))
    assert second.steps == 3  # the first was done only once the second had moved on


def test_window_counts_whole_files_and_ranged_files_apart():
    whole = [("s", "system", Fake("whole")) for _ in range(2)]
    ranged = [("s", "system", SimpleNamespace(advance=lambda: None)) for _ in range(3)]
    assert loop._window_full(deque(whole), 2)
    assert not loop._window_full(deque(ranged), 2)  # ranged files: up to twice as many
    assert loop._window_full(deque(ranged + ranged[:1]), 2)
    assert not loop._window_full(deque(whole[:1] + ranged[:2]), 2)
