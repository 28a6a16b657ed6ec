"""A large file's ingest moves stage by stage without blocking the flow (plan, ranges,
assembly), and the ingest loop moves every file in flight on while it waits for the first:
one file's assembly overlaps the next file's ranges, on threads and on Dask.

The tasks are replaced by fakes whose completion the test controls, so each step is
deterministic: what is submitted, when, and what an error does.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
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


def job(key: SimpleNamespace | None = None) -> SimpleNamespace:
    """A ranged file's job: with the key after its full read (``systems`` set), or ``key``."""
    return SimpleNamespace(key=key or SimpleNamespace(sents="key-sents", systems="key-systems",
                                                      frame=""), lean=True)


def early_key(frame: str = "frame-1") -> SimpleNamespace:
    """The key as its frame gives it, before its full read ends (:func:`ti.early_key`)."""
    return SimpleNamespace(sents="", systems="", frame=frame)


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


@pytest.fixture
def frame_words(monkeypatch):
    """Words per sentence from the frame (the early key has no sentences table)."""
    monkeypatch.setattr(ti, "load_array", lambda path: np.ones(8, np.int64))
    monkeypatch.setattr(ti, "replace", lambda j, **kw: SimpleNamespace(**{**vars(j), **kw}))


def test_a_file_started_on_the_keys_frame_stages_nothing_before_the_key(tasks, frame_words):
    ingest = ti.RangedIngest(job(early_key()))
    tasks.plan.futures[0].value, tasks.plan.futures[0].is_done = planned(2), True
    ingest.advance()
    assert [f.name for f in tasks.reads.futures] == ["read 0", "read 1"]  # ranges now
    for f in tasks.reads.futures:
        f.is_done = True
    ingest.advance()
    assert tasks.assemble.futures == [] and tasks.full.futures == []  # no key yet
    key = SimpleNamespace(sents="key-sents", systems="key-systems", frame="frame-1")
    assert ingest.keyed(key, "at") is ingest and ingest.job.key is key and ingest.job.at == "at"
    ingest.advance()
    assert len(tasks.assemble.futures) == 1 and tasks.full.futures == []
    assert len(tasks.reads.futures) == 2  # the ranges read early are the ones assembled


def test_ranges_read_on_a_frame_the_key_does_not_vouch_for_are_read_again(tasks, frame_words,
                                                                          tmp_path):
    pieces = [tmp_path / f"range-{i}" for i in range(2)]
    for piece in pieces:
        piece.write_bytes(b"x")
    tasks.reads.make = lambda rj: Fake(f"read {rj.index}", value=SimpleNamespace(
        path=str(pieces[rj.index])))
    ingest = ti.RangedIngest(job(early_key()))
    tasks.plan.futures[0].value, tasks.plan.futures[0].is_done = planned(2), True
    ingest.advance()
    for f in tasks.reads.futures:
        f.is_done = True
    # the full read found another version of the key, or another shape: no frame
    ingest.keyed(SimpleNamespace(sents="key-sents", systems="key-systems", frame=""), "at")
    ingest.advance()
    assert tasks.assemble.futures == [] and len(tasks.full.futures) == 1
    assert not any(p.exists() for p in pieces)  # the early ranges' files are gone


def test_a_file_not_cut_waits_for_the_key_to_be_read_whole(tasks, frame_words):
    ingest = ti.RangedIngest(job(early_key()))
    tasks.plan.futures[0].value = ti.FilePlan(whole=SimpleNamespace(), ranges=None)
    tasks.plan.futures[0].is_done = True
    ingest.advance()
    assert tasks.full.futures == []  # the full reader checks words against the key's
    ingest.keyed(SimpleNamespace(sents="key-sents", systems="key-systems", frame="frame-1"),
                 "at")
    ingest.advance()
    assert len(tasks.full.futures) == 1 and tasks.reads.futures == []


def key_ingest(monkeypatch, read: Fake, frame: Fake) -> tuple[ti.KeyIngest, list]:
    """A key's ingest whose full read and frame are ``read`` and ``frame``; the list gets
    the early key each start is given."""
    monkeypatch.setattr(ti, "POLL_S", 0)
    monkeypatch.setattr(ti, "ingest_file", SimpleNamespace(submit=lambda job: read))
    monkeypatch.setattr(ti, "frame_key", SimpleNamespace(submit=lambda job: frame))
    started: list = []
    early = SimpleNamespace(steps=0, waited=False)
    early.advance = lambda: setattr(early, "steps", early.steps + 1)
    early.wait_submitted = lambda: setattr(early, "waited", True)

    def start(key):
        started.append(key)
        return [early]

    source = SimpleNamespace(path="key.conllu", fmt=None)
    return ti.KeyIngest(SimpleNamespace(source=source, stage_dir="stage"), start), started


def test_systems_start_once_the_keys_frame_is_in_and_move_on_while_it_is_read(monkeypatch):
    frame = Fake("frame", value=ti.KeyFrame("sha", "stage/aux/frame", "shape"))
    read = Fake("read", value=ti.Ingested("__key__", "sha", "conllu", "w", "full", "s",
                                          "sy", "v", shape="shape"))
    ingest, started = key_ingest(monkeypatch, read, frame)
    polls = SimpleNamespace(n=0)

    def read_done() -> bool:  # the frame is in at the 2nd look, the full read at the 5th
        polls.n += 1
        frame.is_done = polls.n >= 2
        read.is_done = polls.n >= 5
        return read.is_done

    read.wrapped_future = SimpleNamespace(done=read_done)
    key = ingest.result()
    assert len(started) == 1  # started once, with the frame's key
    assert (started[0].frame, started[0].shape, started[0].systems) == (
        "stage/aux/frame", "shape", "")
    assert started[0].forms.endswith("stage/aux/frame/forms.u64")
    assert ingest.early[0].steps == 3  # moved on at each of the 3 looks from the 2nd on
    assert key.frame == "stage/aux/frame" and key.systems == "sy"


def test_a_key_that_fails_waits_for_the_systems_started_early(monkeypatch):
    frame = Fake("frame", value=ti.KeyFrame("sha", "stage/aux/frame", "shape"))
    frame.is_done = True
    read = Fake("read", error=ti.InputError("bad key"))
    polls = SimpleNamespace(n=0)

    def read_done() -> bool:
        polls.n += 1
        read.is_done = polls.n >= 3
        return read.is_done

    read.wrapped_future = SimpleNamespace(done=read_done)
    ingest, started = key_ingest(monkeypatch, read, frame)
    with pytest.raises(ti.InputError, match="bad key"):
        ingest.result()
    assert len(started) == 1 and ingest.early[0].waited  # before the staging folder goes


def test_a_frame_read_otherwise_than_the_full_read_is_not_used():
    key = ti.Ingested("__key__", "sha", "conllu", "w", "full", "s", "sy", "v", shape="shape")
    kept = ti.with_frame(key, ti.KeyFrame("sha", "F", "shape"))
    assert kept.frame == "F" and kept.forms == str(Path("F") / "forms.u64")  # one copy
    assert ti.with_frame(key, ti.KeyFrame("sha", "F", "other")).frame == ""  # other words
    assert ti.with_frame(key, ti.KeyFrame("sha2", "F", "shape")).frame == ""  # other bytes
    unknown = ti.Ingested("__key__", "sha", "conllu", "w", "full", "s", "sy", "v")
    assert ti.with_frame(unknown, ti.KeyFrame("sha", "F", "")).frame == ""


def test_shape_digests_do_not_depend_on_how_the_arrays_are_cut():
    n_words, forms = np.array([3, 1, 2]), np.array([7, 8, 9, 10, 11, 12], np.uint64)
    whole = ti.shape_of([n_words], [forms])
    assert ti.shape_of([n_words[:1], n_words[1:]], [forms[:4], forms[4:]]) == whole
    assert ti.shape_of([n_words.astype(np.int32)], [forms]) == whole  # as the sentences hold it
    assert ti.shape_of([np.array([3, 2, 1])], [forms]) != whole
    assert ti.shape_of([n_words], [forms[::-1].copy()]) != whole


@pytest.mark.parametrize("seed", range(20))
def test_held_bytes_give_each_range_whole_whatever_the_blocks(seed):
    """A file streamed in blocks of any size: each range taken is exactly its bytes (a
    range within a block, across several, ending on a block's end), and the bytes held are
    counted right as blocks come and ranges go."""
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, int(rng.integers(1, 5000)), dtype=np.uint8).tobytes()
    ends = sorted({*rng.integers(1, len(data) + 1, int(rng.integers(1, 12))).tolist(),
                   len(data)})
    held, pos, taken = ti._Held(), 0, []
    for end in ends:
        while pos < end:  # blocks until the range is in, some past it
            block = data[pos:pos + int(rng.integers(1, 700))]
            held.add(block)
            pos += len(block)
            assert held.size == pos - held.start
        start = held.start
        taken.append(held.take(ByteRange(start, end, len(taken)), 1))
        assert taken[-1] == data[start:end] and held.start == end
        assert held.size == pos - end
    assert b"".join(taken) == data and held.first_sent == len(ends)
