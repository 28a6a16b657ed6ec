"""Ingest of token files (pos, dep): the key in full, each system as lean as it can be.

Every file is read once by a Prefect task that takes one immutable job and returns what it
staged. The key is read in full (every field of every token: ``units``, ``sents``), chunk by
chunk. A system whose words are the key's is read fast: only the columns its task evaluates,
checked in whole-column operations (:mod:`sysdiff.schemas.formats.fast_words`), its forms
checked against the key's by their hashes; it is stored lean (``words``: the file's own
codes of its labels in the key's order, the codes' dictionaries in its ``vocab`` rows). A
large system file is read by several tasks at once, one per range of whole sentences, after
one pass that hashes it and cuts the ranges; a last task assembles their pieces into one
partition. A file the fast reader cannot vouch for is read in full (which names the line of
a problem, or aligns a file tokenised otherwise on the characters).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import itertools
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.ingest import (
    POLL_S,
    Done,
    finished,
    ingest_all,
    ingest_parallelism,
    wait_quietly,
)
from sysdiff.flows.once import shared_cache
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.store import (
    StoreURL,
    is_url,
    location,
    open_read,
    open_write,
    read_ipc,
    read_parquet,
    remote,
    scan_parquet,
)
from sysdiff.flows.warehouse import (
    PieceWriter,
    PieceWriters,
    StagedFile,
    Staging,
    known_inputs,
    partition,
    signature,
    stage_frame,
    systems_row,
    unchanged,
    with_literals,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import (
    KIND_WORD,
    WordCheck,
    detect_token_format,
    iter_conll,
)
from sysdiff.schemas.formats.fast_words import (
    FastWords,
    fast_words,
    form_hashes,
    value_hashes,
)
from sysdiff.schemas.formats.ranges import ByteRange, RangeFinder
from sysdiff.schemas.formats.stable import (
    StableFile,
    Stamp,
    input_stamp,
    read_stable,
    without_bom,
)
from sysdiff.schemas.frozen import freeze
from sysdiff.schemas.tables import with_nulls
from sysdiff.transforms import conll18, tokens
from sysdiff.transforms.alignment import (
    Text,
    align_words,
    file_text,
    first_difference,
    project,
    token_at,
    token_count,
)
from sysdiff.transforms.tokens import blank_columns, label_counts

#: How a file's words are stored: ``full`` every field of every token (``units``: the key,
#: and a system the fast reader could not vouch for), ``lean`` the codes of the evaluated
#: labels in the key's order (``words``: a system read on the key's words), ``aligned`` a
#: system tokenised otherwise, its words aligned with the key's (``aligned``).
LAYOUTS = ("full", "lean", "aligned")
#: The stored tables of the other layouts, which a file read now in one layout replaces.
STORED_BY = {"full": ("words", "aligned"), "lean": ("units", "sents", "aligned"),
             "aligned": ("words",)}


@dataclass(frozen=True)
class Ingested:
    """Where one ingested file's tables lie (staged now, or live) and what it is: plain,
    immutable values, so that it can be a task's result and another task's parameter."""

    system: str
    sha256: str
    fmt: str
    words: str  # what compare reads (see LAYOUTS)
    layout: str
    sents: str  # its sentences ('' for a lean system: the key's are its)
    systems: str  # its ``systems`` row
    vocab: str  # its label counts (a lean system's: its codes' dictionaries too)
    staged: tuple[StagedFile, ...] = ()
    #: the key only: its frame (:func:`frame_key`; '' when it has none: no system is lean)
    frame: str = ""
    #: the key only: the digest of its words per sentence and form hashes (:class:`ShapeDigest`;
    #: '' for a key read by an earlier run, until :func:`live_key_shape`)
    shape: str = ""

    @property
    def forms(self) -> str:
        """The key only: a hash of each word's form, in order (its frame's; '' without)."""
        return frame_file(self.frame, FORMS) if self.frame else ""

    def row(self) -> pl.DataFrame:
        return read_parquet(self.systems, glob=False)

    def counts(self) -> pl.DataFrame:
        return read_parquet(self.vocab, glob=False)


@dataclass(frozen=True)
class TokenJob:
    """One file to ingest (a task's only parameter): the run's spec, the file, its role, the
    run's staging folder, the key (for a system) and when it is ingested."""

    spec: RunSpec
    source: Source
    role: str
    stage_dir: str
    key: Ingested | None
    at: dt.datetime
    #: try the fast reader (a system small enough to be read at once)
    lean: bool = True


@task(name="ingest", task_run_name="ingest {job.spec.corpus} {job.source.id}",
      cache_policy=NONE)
def ingest_file(job: TokenJob) -> Ingested:
    """Read one file once, check it (a system against the key), stage what the run keeps
    of it and hash it on the same bytes. A system whose words are the key's is read fast,
    its evaluated columns only (:func:`ingest_lean`); any other file, or one the fast reader
    cannot vouch for, is read in full (:func:`ingest_full`). Only paths and small records
    leave the task."""
    if job.key is not None and job.lean:
        lean = ingest_lean(job)
        if lean is not None:
            return lean
    return ingest_full(job)


def task_fields(task: str, fmt: str) -> tuple[str, ...]:
    """The label columns (and ``head``) a task evaluates, as the format has them."""
    if fmt == "tsv":
        return ("upos",)
    fields = ("lemma", "upos", "xpos", "feats")
    return (*fields, "head", "deprel") if task == "dep" else fields


def ingest_lean(job: TokenJob) -> Ingested | None:
    """A system whose words are the key's, read fast (:func:`fast_words`) and stored lean
    (``words``: the codes of its evaluated labels in the key's order, the codes' dictionaries
    in ``vocab``); None when the fast reader cannot vouch for the file, or its words are not
    the key's (the full reader then decides)."""
    snap = read_stable(job.source.path)  # one version: the bytes parsed are the bytes hashed
    data = without_bom(snap.data)
    fmt = job.source.fmt or detect_token_format(job.source.path, data)
    found = read_words(job, data, fmt, 0, sentence_words(job.key).size)
    del data
    if found is None:
        return None
    words, dictionaries = tokens.lean_codes(*found)
    piece = LeanPiece(found[0].n_sents, found[0].sent.size, found[0].n_tokens,
                      freeze(dictionaries))
    return stage_lean(job, Whole(snap.sha256, snap.stamp, fmt), [(piece, words)])


def read_words(job: TokenJob, data: bytes, fmt: str, first_sent: int, n_sents: int
               ) -> tuple[FastWords, dict[str, pl.Series]] | None:
    """The words of whole sentences of a system file (the ``n_sents`` sentences from
    ``first_sent``), when the fast reader vouches for them and they are the key's, in the
    key's frame: with the values of DEPS and MISC that are not the key's (null where they
    are)."""
    found = fast_words(data, fmt, task_fields(job.spec.task, fmt))
    if found is None or not _same_words(found, job.key, first_sent, n_sents):
        return None
    first_word = int(sentence_words(job.key)[:first_sent].sum())
    return found, _differing(found, job.key.frame, first_word)


def _differing(found: FastWords, frame: str, first_word: int) -> dict[str, pl.Series]:
    """DEPS and MISC of the words read, null where they equal the key's (by their hashes);
    a column whose every value is the key's is left out."""
    out = {}
    for name, column in found.extras.items():
        keys = load_array(frame_file(frame, name))
        differ = value_hashes(column) != keys[first_word:first_word + column.codes.size]
        if differ.any():
            out[name] = pl.repeat(None, column.codes.size, dtype=pl.String, eager=True
                                  ).alias(name).scatter(np.flatnonzero(differ),
                                                        column.filter(differ))
    return out


@dataclass(frozen=True)
class Whole:
    """What is known of a whole file once read: its SHA-256, the version read, its format."""

    sha256: str
    stamp: Stamp
    fmt: str


@dataclass(frozen=True)
class LeanPiece:
    """Whole sentences of a lean system file read by one task: their counts, and the
    dictionaries of their codes (field -> sorted labels); ``path``: where the task left
    them (a range of a large file)."""

    n_sents: int
    n_words: int
    n_tokens: int
    dictionaries: Mapping[str, tuple[str, ...]]
    path: str = ""


def stage_lean(job: TokenJob, whole: Whole, pieces: list[tuple[LeanPiece, pl.DataFrame | None]]
               ) -> Ingested:
    """Stage a lean system from its pieces in order (their words given, or at their path):
    one ``words`` file coded against the union of their dictionaries, its ``vocab`` (the
    dictionaries and counts) and its ``systems`` row."""
    spec, source, key = job.spec, job.source, job.key
    sid, corpus = source.id, spec.corpus
    part = partition(corpus, sid)
    sig = _ingest_signature(whole.sha256, whole.fmt, job.role, key.sha256)
    union = {f: tuple(sorted(set().union(*(p.dictionaries[f] for p, _w in pieces))))
             for f in pieces[0][0].dictionaries}
    writer, counts = PieceWriter(job.stage_dir, "words", part), {}
    try:
        for piece, words in pieces:
            words = read_ipc(piece.path) if words is None else words
            coded = tokens.remap(words, piece.dictionaries, union)
            writer.append(with_nulls(coded, writer.schema))
            for field, n in tokens.lean_counts(coded, union).items():
                counts[field] = _add(counts.get(field), n)
    except BaseException:
        writer.abort()
        raise
    vocab = with_literals(tokens.lean_vocab(counts, union), corpus=corpus, system=sid)
    row = systems_row(spec, source, job.role, whole.sha256, whole.fmt,
                      int(key.row()["n_docs"][0]), sum(p.n_sents for p, _w in pieces),
                      sum(p.n_words for p, _w in pieces), sum(p.n_tokens for p, _w in pieces),
                      "identical", job.at, whole.stamp)
    files = (writer.close(sig), stage_frame(job.stage_dir, "vocab", part, sig, vocab),
             stage_frame(job.stage_dir, "systems", part, sig, row))
    here = [str(location(job.stage_dir) / f.rel) for f in files]
    return Ingested(sid, whole.sha256, whole.fmt, here[0], "lean", "", here[2], here[1],
                    staged=files)


def _add(total: np.ndarray | None, more: np.ndarray) -> np.ndarray:
    """Counts summed, the shorter array padded with zeros."""
    if total is None:
        return more
    size = max(total.size, more.size)
    return np.pad(total, (0, size - total.size)) + np.pad(more, (0, size - more.size))


def _same_words(found: FastWords, key: Ingested, first_sent: int, n_sents: int) -> bool:
    """The key's sentences ``first_sent`` ... (``n_sents`` of them), in the key's frame:
    their words per sentence, forms (by their hashes: a differing form, even one equal after
    NFC, sends the file to the full reader's check), lines, comments and non-word lines (by
    the sentences' digests). A key without a frame has no lean system."""
    n_words = sentence_words(key)
    if not key.frame or found.n_sents != n_sents or not np.array_equal(
            found.n_words, n_words[first_sent:first_sent + n_sents]):
        return False
    digests = load_array(frame_file(key.frame, "digest"))
    if not np.array_equal(found.digest, digests[first_sent:first_sent + n_sents]):
        return False
    first_word = int(n_words[:first_sent].sum())
    hashes = load_array(key.forms)[first_word:first_word + found.form_hash.size]
    return np.array_equal(found.form_hash, hashes)


def load_array(path: str) -> np.ndarray:
    """An array of the key's frame (:class:`FrameWriter`): mapped from a local file; read
    once per process from an object store. Its type is its file's suffix; there is no
    header to parse."""
    dtype = FRAME_SUFFIXES[os.path.splitext(path)[1]]
    if is_url(path):
        return _remote_array(path, dtype)
    if not os.path.getsize(path):
        return np.zeros(0, dtype)  # (an empty file cannot be mapped)
    return np.memmap(path, dtype, mode="r")


@shared_cache(maxsize=8)
def _remote_array(url: str, dtype: np.dtype) -> np.ndarray:
    with open_read(url) as f:
        out = np.frombuffer(f.read(), dtype)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class FrameJob:
    """The key file whose frame to take (a task's only parameter)."""

    path: str
    fmt: str | None
    stage_dir: str


@dataclass(frozen=True)
class KeyFrame:
    """The key's frame (a folder of :class:`FrameWriter` files: each sentence's digest and
    words, each word's form, DEPS and MISC hashes; '' when the fast reader cannot read the
    key), the SHA-256 of the bytes it was taken from and its shape (:class:`ShapeDigest`)."""

    sha256: str
    folder: str
    shape: str = ""


@task(name="frame", task_run_name="frame of the key", cache_policy=NONE)
def frame_key(job: FrameJob) -> KeyFrame:
    """The key's frame, read range by range (what a lean system's reader compares its own
    with), beside the key's full read."""
    plan = plan_pass(job.path, job.fmt)
    sha, stamp = plan.whole.sha256, plan.whole.stamp
    ranges = plan.ranges or (ByteRange(0, stamp.size, 0),)
    with StableFile(job.path, expect=stamp, hashed=False) as f, \
            FrameWriter(job.stage_dir) as frame:
        for rng in ranges:
            data = f.read_at(rng.start, rng.end - rng.start)
            part = fast_words(without_bom(data) if rng.start == 0 else data, plan.whole.fmt,
                              ())
            if part is None:
                return KeyFrame(sha, "")
            frame.add(frame_arrays(part))
            del part, data  # memory of one range: its arrays are written as they come
        f.check()
    return KeyFrame(sha, str(frame.folder), frame.shape.hexdigest())


#: The frame's arrays of the key's words per sentence and form hashes (as the fast reader
#: reads them; with the shape of the key's full read, a system can be read before it ends).
N_WORDS, FORMS = "n_words", "forms"


#: The suffix of each of the frame's files, which names its arrays' type.
FRAME_FILES = {"digest": ".u64", N_WORDS: ".i64", FORMS: ".u64", "deps": ".u64", "misc": ".u64"}
FRAME_SUFFIXES = {".u64": np.dtype("<u8"), ".i64": np.dtype("<i8")}


def frame_file(folder: str, name: str) -> str:
    """The file of one of the frame's arrays (``name``: digest, N_WORDS, FORMS, deps, misc)."""
    return str(location(folder) / f"{name}{FRAME_FILES[name]}")


def frame_arrays(part: FastWords) -> dict[str, np.ndarray]:
    """What the key's frame keeps of words read: each sentence's digest and words, each
    word's form hash and DEPS and MISC hashes."""
    return {"digest": part.digest, N_WORDS: part.n_words, FORMS: part.form_hash,
            **{name: value_hashes(column) for name, column in part.extras.items()}}


class ShapeDigest:
    """The digest of a key's words per sentence and form hashes, fed part by part: equal
    digests, equal arrays, however they were cut."""

    def __init__(self) -> None:
        self.words, self.forms = hashlib.sha256(), hashlib.sha256()

    def add(self, n_words: np.ndarray, forms: np.ndarray) -> None:
        self.words.update(memoryview(np.ascontiguousarray(n_words, np.int64)).cast("B"))
        self.forms.update(memoryview(np.ascontiguousarray(forms, np.uint64)).cast("B"))

    def hexdigest(self) -> str:
        return hashlib.sha256(self.words.digest() + b"|" + self.forms.digest()).hexdigest()


def shape_of(n_words: list[np.ndarray], forms: list[np.ndarray]) -> str:
    """:class:`ShapeDigest` of arrays given as lists of parts."""
    shape = ShapeDigest()
    for words, hashes in itertools.zip_longest(n_words, forms, fillvalue=np.zeros(0)):
        shape.add(words, hashes)
    return shape.hexdigest()


class FrameWriter:
    """The key's frame, kept in the run's staging folder (not in the warehouse) range by
    range: each array appended to its raw file (:data:`FRAME_FILES`) as it is read, so the
    frame task holds one range's arrays, never the key's; and its shape digest."""

    def __init__(self, stage_dir: str) -> None:
        self.folder = location(stage_dir) / "aux" / f"key-frame-{uuid.uuid4().hex[:12]}"
        self.shape = ShapeDigest()
        self.files = contextlib.ExitStack()
        self.open: dict[str, IO[bytes]] = {}

    def add(self, arrays: Mapping[str, np.ndarray]) -> None:
        for name, values in arrays.items():
            if name not in self.open:
                path = location(frame_file(str(self.folder), name))
                self.open[name] = self.files.enter_context(open_write(path))
            data = np.ascontiguousarray(values, FRAME_SUFFIXES[FRAME_FILES[name]])
            self.open[name].write(memoryview(data).cast("B"))
        self.shape.add(arrays[N_WORDS], arrays[FORMS])

    def __enter__(self) -> FrameWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.files.close()


class KeyIngest:
    """The key's ingest as the flow drives it: its full read and its frame, side by side.
    Once the frame is in, ``start(early_key(frame))`` starts the reads of large systems
    that need only the frame (so that no worker waits for the full read); they are moved
    on while the flow waits for the key."""

    def __init__(self, job: TokenJob,
                 start: Callable[[Ingested], list[RangedIngest]] | None = None) -> None:
        self.read = ingest_file.submit(job)
        self.frame = frame_key.submit(FrameJob(str(job.source.path), job.source.fmt,
                                               job.stage_dir))
        self.start, self.early = start, []

    def result(self) -> Ingested:
        try:
            while not finished(self.read):
                self._move_early()
                time.sleep(POLL_S)
            key = self.read.result()
        except BaseException:
            for future in [self.frame, *self.early]:  # they write in the staging folder,
                wait_quietly(future)  # which then goes
            raise
        return with_frame(key, self.frame.result())

    def _move_early(self) -> None:
        if self.start is not None and finished(self.frame):
            start, self.start = self.start, None
            with contextlib.suppress(Exception):  # a frame that failed: no early reads
                frame = self.frame.result()
                if frame.folder:
                    self.early = start(early_key(frame))
        for ingest in self.early:
            ingest.advance()


def with_frame(key: Ingested, frame: KeyFrame) -> Ingested:
    """The key with its frame, when the frame was taken from the same bytes and the fast
    reader saw the words the full reader did (the same shape)."""
    same = frame.sha256 == key.sha256 and frame.shape == key.shape != ""
    return replace(key, frame=frame.folder if same else "")


def early_key(frame: KeyFrame) -> Ingested:
    """What a large system's range reads take from the key before its full read ends: its
    frame, words per sentence and form hashes as the fast reader read them (:func:`keyed`
    checks them against the full read before a system is staged)."""
    return Ingested(KEY_ID, frame.sha256, "", "", "full", "", "", "", frame=frame.folder,
                    shape=frame.shape)


def sentence_words(key: Ingested) -> np.ndarray:
    """Words per sentence of the key: from its frame when it has one (the same as its full
    read's, :func:`with_frame`), else from its sentences."""
    if key.frame:
        return load_array(frame_file(key.frame, N_WORDS))
    return key_shape(key.sents)


@shared_cache(maxsize=4)
def key_shape(sents: str) -> np.ndarray:
    """Words per sentence of the key (read once per process)."""
    out = read_parquet(sents, columns=["n_words"], glob=False)["n_words"].to_numpy()
    out.flags.writeable = False
    return out


# ------------------------------------------------------------------------------ ranges

#: A system file larger than this is read by several tasks, one per range of about this
#: many bytes of whole sentences (``SYSDIFF_RANGE_BYTES`` overrides it).
RANGE_BYTES = 64 << 20
#: Bytes read at once by the pass that hashes a large file and cuts its ranges.
PLAN_BLOCK = 16 << 20
#: Most bytes a file read once (:func:`stream_file`) holds while it waits for a cut; past
#: them (no sentence end for that long) the file is read whole by the full reader.
HELD_BYTES = 256 << 20


def range_bytes() -> int:
    return int(os.environ.get("SYSDIFF_RANGE_BYTES") or RANGE_BYTES)


@dataclass(frozen=True)
class FilePlan:
    """A large system file, hashed and cut into ranges of whole sentences (None: not cut,
    it is read by one task)."""

    whole: Whole
    ranges: tuple[ByteRange, ...] | None


@task(name="plan", task_run_name="plan {job.spec.corpus} {job.source.id}", cache_policy=NONE)
def plan_file(job: TokenJob) -> FilePlan:
    """One pass over a large file: its hash, its format and its ranges."""
    return plan_pass(job.source.path, job.source.fmt)


def plan_pass(path: str | Path | StoreURL, fmt: str | None) -> FilePlan:
    """Read a token file once, in order: its SHA-256, its format (``fmt`` when given) and
    its ranges of whole sentences (a system's plan, the key's frame)."""
    finder = RangeFinder(range_bytes())
    with StableFile(path) as f:
        while block := f.read(PLAN_BLOCK):
            if fmt is None:
                fmt = detect_token_format(path, without_bom(block))
            finder.feed(block)
        f.check()
        return FilePlan(Whole(f.sha256, f.stamp, fmt or "conllu"), finder.ranges())


@dataclass(frozen=True)
class RangeJob:
    """One range of a large system file to read (a task's only parameter)."""

    job: TokenJob
    plan: FilePlan
    index: int
    n_sents: int


@task(name="read range", task_run_name="read {rj.job.source.id} range {rj.index}",
      cache_policy=NONE)
def read_range(rj: RangeJob) -> LeanPiece | None:
    """Read one range of whole sentences of a large system file fast and leave its lean
    words in the run's staging folder; None when the fast reader cannot vouch for it."""
    job, rng = rj.job, rj.plan.ranges[rj.index]
    with StableFile(job.source.path, expect=rj.plan.whole.stamp, hashed=False) as f:
        data = f.read_at(rng.start, rng.end - rng.start)
        f.check()
    return read_piece(job, data, rj.plan.whole.fmt, rng, rj.n_sents)


def read_piece(job: TokenJob, data: bytes, fmt: str, rng: ByteRange, n_sents: int
               ) -> LeanPiece | None:
    """Read the bytes of one range fast and leave its lean words in the run's staging
    folder; None when the fast reader cannot vouch for them."""
    got = lean_piece(job, data, fmt, rng, n_sents)
    return None if got is None else leave_piece(job, *got)


def lean_piece(job: TokenJob, data: bytes, fmt: str, rng: ByteRange, n_sents: int
               ) -> tuple[LeanPiece, pl.DataFrame] | None:
    """The lean words of one range's bytes, read fast (None when the fast reader cannot
    vouch for them)."""
    if rng.start == 0:
        data = without_bom(data)
    found = read_words(job, data, fmt, rng.first_sent, n_sents)
    del data
    if found is None:
        return None
    words, dictionaries = tokens.lean_codes(*found)
    return LeanPiece(found[0].n_sents, found[0].sent.size, found[0].n_tokens,
                     freeze(dictionaries)), words


def leave_piece(job: TokenJob, piece: LeanPiece, words: pl.DataFrame) -> LeanPiece:
    """Leave a piece's words in the run's staging folder, for another task to assemble."""
    path = location(job.stage_dir) / "aux" / f"range-{uuid.uuid4().hex[:16]}.arrow"
    with open_write(path) as f:  # read once, by the assembly: on a store, fewer bytes
        words.write_ipc(f, compression="lz4" if remote(path) else "uncompressed")
    return replace(piece, path=str(path))


@dataclass(frozen=True)
class Streamed:
    """A large file read once, in order (:func:`stream_file`): its plan and the piece of
    each of its ranges; or the file staged (``ingested``: read with the key, it assembled
    its pieces itself); or no pieces and ``read_whole``: the fast reader could not vouch for a
    piece, or the plan has no ranges (the full reader reads the file)."""

    plan: FilePlan
    pieces: tuple[LeanPiece, ...]
    ingested: Ingested | None = None
    read_whole: bool = False

    @property
    def whole(self) -> Whole:
        return self.plan.whole


#: Most bytes of lean words a file read once with the key keeps for its own assembly; the
#: pieces past them are left in the staging folder, as a file started early leaves them all.
KEPT_BYTES = 1 << 30


@task(name="stream", task_run_name="stream {job.source.id}", cache_policy=NONE)
def stream_file(job: TokenJob) -> Streamed:
    """A large system file on an object store, read once: hashed and cut as
    :func:`plan_pass` does, each range read (:func:`lean_piece`) as soon as its bytes are
    in, never the file twice. Read with the key, it is staged here from the pieces it kept
    (no piece crosses the store twice); started early, on the key's frame, its pieces wait
    in the staging folder for the key. Holds about one range and one block, and the kept
    pieces."""
    pieces = Pieces(job, KEPT_BYTES if job.key.systems else 0)
    try:
        plan = _stream(job, pieces)
        if plan.ranges is None or not pieces.vouched:  # read whole, by the full reader
            pieces.drop()
            return Streamed(plan, (), read_whole=True)
        if not job.key.systems:
            return Streamed(plan, pieces.left())
        staged = stage_lean(job, plan.whole, pieces.all)
    except BaseException:
        pieces.drop()
        raise
    pieces.drop()
    return Streamed(plan, (), staged)


def _stream(job: TokenJob, pieces: Pieces) -> FilePlan:
    """Read a large file once into ``pieces``; its plan (no ranges: read it whole)."""
    finder, n_key = RangeFinder(range_bytes()), sentence_words(job.key).size
    fmt, held = job.source.fmt, _Held()
    with StableFile(job.source.path) as f:
        while block := f.read(PLAN_BLOCK):
            if fmt is None:
                fmt = detect_token_format(job.source.path, without_bom(block))
            finder.feed(block)
            held.add(block)
            if finder.irregular:
                break  # not cut: read whole instead, as a plan without ranges has it
            for rng, n_sents in held.complete(finder.cuts, f.pos):
                pieces.add(lean_piece(job, held.take(rng, n_sents), fmt or "conllu", rng,
                                      n_sents))
            if not pieces.vouched:
                return FilePlan(Whole("", f.stamp, fmt or "conllu"), held.done)
            if held.size > max(HELD_BYTES, 4 * range_bytes()):
                break  # no cut for long (a huge sentence): read whole, memory bounded
        else:
            f.check()
            if held.done:  # the last range: to the end
                rng = ByteRange(held.start, f.pos, held.first_sent)
                n_sents = n_key - held.first_sent
                pieces.add(lean_piece(job, held.take(rng, n_sents), fmt or "conllu", rng,
                                      n_sents))
                return FilePlan(Whole(f.sha256, f.stamp, fmt or "conllu"), held.done)
    return FilePlan(Whole("", f.stamp, fmt or "conllu"), None)


class Pieces:
    """The pieces of a file read once, in order: kept in memory up to ``keep`` bytes of
    words, the others left in the staging folder (:func:`leave_piece`)."""

    def __init__(self, job: TokenJob, keep: int) -> None:
        self.job, self.room = job, keep
        self.all: list[tuple[LeanPiece, pl.DataFrame | None] | None] = []

    @property
    def vouched(self) -> bool:
        """Whether every piece so far was read fast (if not, the file is read whole)."""
        return None not in self.all

    def add(self, got: tuple[LeanPiece, pl.DataFrame] | None) -> None:
        if got is None:
            self.all.append(None)
            return
        piece, words = got
        self.room -= words.estimated_size()
        self.all.append((piece, words) if self.room >= 0 else
                        (leave_piece(self.job, piece, words), None))

    def left(self) -> tuple[LeanPiece, ...]:
        """Every piece, left in the staging folder (for another task to assemble)."""
        return tuple(p if w is None else leave_piece(self.job, p, w) for p, w in self.all)

    def drop(self) -> None:
        """Delete the pieces left in the staging folder."""
        for got in self.all:
            if got is not None and got[0].path:
                location(got[0].path).unlink(missing_ok=True)
        self.all = []


class _Held:
    """The bytes of a file read in order, from the start of its first range not read yet:
    the blocks as read (a range is copied once, when taken; the blocks never are)."""

    def __init__(self) -> None:
        self.blocks: deque[memoryview] = deque()
        self.size = 0  # bytes held
        self.start = 0  # where the held bytes start in the file
        self.first_sent = 0  # the first sentence of the range that starts there
        self.done: tuple[ByteRange, ...] = ()  # the ranges taken so far

    def add(self, block: bytes) -> None:
        self.blocks.append(memoryview(block))
        self.size += len(block)

    def complete(self, cuts: list[tuple[int, int]], pos: int) -> list[tuple[ByteRange, int]]:
        """The ranges now complete, each with the sentences it holds: one per cut not
        taken yet before ``pos`` (a cut at ``pos`` may be the file's end, see
        :meth:`RangeFinder.ranges`)."""
        out, start, first = [], self.start, self.first_sent
        for cut, sent in cuts[len(self.done):]:
            if cut >= pos:
                break
            out.append((ByteRange(start, cut, first), sent - first))
            start, first = cut, sent
        return out

    def take(self, rng: ByteRange, n_sents: int) -> bytes:
        """The bytes of ``rng``, which must start where the held bytes do; the next range
        starts after it."""
        n = rng.end - self.start
        parts, left = [], n
        while left > 0:
            head = self.blocks[0]
            if len(head) <= left:
                parts.append(self.blocks.popleft())
                left -= len(head)
            else:
                parts.append(head[:left])
                self.blocks[0] = head[left:]
                left = 0
        self.size -= n
        self.start, self.first_sent = rng.end, rng.first_sent + n_sents
        self.done = (*self.done, rng)
        return b"".join(parts)


@dataclass(frozen=True)
class AssembleJob:
    """The pieces of a large system file, read range by range, to stage as one."""

    job: TokenJob
    whole: Whole
    pieces: tuple[LeanPiece, ...]


@task(name="assemble", task_run_name="assemble {aj.job.source.id}", cache_policy=NONE)
def assemble(aj: AssembleJob) -> Ingested:
    """Stage a large lean system from the pieces its ranges left."""
    try:
        return stage_lean(aj.job, aj.whole, [(p, None) for p in aj.pieces])
    finally:
        for p in aj.pieces:
            location(p.path).unlink(missing_ok=True)


class RangedIngest:
    """A large system file's ingest as the flow drives it: the plan task now; once it is
    done, one task per range; once they are done, one that assembles them (or, when the
    file cannot be read fast, the full reader's one task). :meth:`advance` submits the next
    stage without waiting, so several files' stages overlap on the task runner."""

    def __init__(self, job: TokenJob, plan: Any = None) -> None:
        self.job = job
        self.plan = plan if plan is not None else plan_file.submit(job)
        self.reads: list | None = None  # the range tasks, once submitted
        self.last: Any = None  # the assembly (or the full reader), once submitted
        self.failed = False  # a stage's task failed: ready, its error is result()'s
        self.stale = False  # read on a frame the key does not vouch for: read it again

    @property
    def early(self) -> bool:
        """Started on the key's frame, before its full read ended (:func:`early_key`):
        nothing is staged until :meth:`keyed` gives it the key."""
        return not self.job.key.systems

    def keyed(self, key: Ingested, at: dt.datetime) -> RangedIngest:
        """Give a file started early the key (and its ``ingested_at``). Ranges read on a
        frame the key does not vouch for (another version of the file, or a shape the full
        reader saw otherwise) are dropped, and the file is read again."""
        self.stale = key.frame != self.job.key.frame
        self.job = replace(self.job, key=key, at=at)
        return self

    def advance(self) -> None:
        """Submit the next stage if the current one is done (never waits; an error is left
        for :meth:`result`, which raises it in the run's source order)."""
        if self.failed:
            return
        try:
            if self.last is None and self.reads is None and finished(self.plan):
                self._read_ranges()
            if (self.last is None and self.reads is not None and not self.early
                    and all(map(finished, self.reads))):
                self._assemble()
        except Exception:
            self.failed = True  # no next stage: the wait for this file is over

    def ready(self) -> bool:
        self.advance()
        return self.failed or (self.last is not None and finished(self.last))

    def result(self) -> Ingested:
        if self.last is None and self.reads is None:
            self._read_ranges()
        if self.last is None:
            self._assemble()
        return self.last.result()

    def wait_submitted(self) -> None:
        """Wait for the tasks submitted so far, submitting no more (an error elsewhere)."""
        for future in [self.plan, *(self.reads or []), *([self.last] if self.last else [])]:
            with contextlib.suppress(Exception):
                future.result()

    def _read_ranges(self) -> None:
        plan, job = self.plan.result(), self.job
        if plan.ranges is None:
            self._read_whole()
            return
        n_key = sentence_words(job.key).size
        self.reads = [read_range.submit(RangeJob(job, plan, i, _n_sents(plan.ranges, i, n_key)))
                      for i in range(len(plan.ranges))]

    def _assemble(self) -> None:
        pieces = [f.result() for f in self.reads or []]
        job = self.job
        if self.stale or any(p is None for p in pieces):
            self._drop(pieces)
            self._read_whole()
            return
        self.last = assemble.submit(AssembleJob(job, self.plan.result().whole, tuple(pieces)))

    def _read_whole(self) -> None:
        """The file is not read fast: the full reader's one task (it needs the key)."""
        if not self.early:
            self.last = ingest_file.submit(replace(self.job, lean=False))

    @staticmethod
    def _drop(pieces: list[LeanPiece | None]) -> None:
        for p in pieces:
            if p is not None:
                location(p.path).unlink(missing_ok=True)


class StreamedIngest(RangedIngest):
    """A large system file on an object store: read once by one task
    (:func:`stream_file`) in place of the plan and the range tasks, which stages it too
    when it had the key; started early, on the key's frame, it is then assembled as a
    :class:`RangedIngest` is."""

    def __init__(self, job: TokenJob) -> None:
        super().__init__(job, stream_file.submit(job))

    def _read_ranges(self) -> None:
        streamed = self.plan.result()
        if streamed.ingested is not None:  # read with the key: staged by its one task
            self.reads, self.last = [], Done(streamed.ingested)
            return
        if streamed.read_whole:
            self._read_whole()
            return
        self.reads = [Done(piece) for piece in streamed.pieces]


def read_once(source: Source) -> bool:
    """Whether a large file is read by one task (:class:`StreamedIngest`): on an object
    store, where a second read moves the file again, not on a disk."""
    return isinstance(source.path, StoreURL)


def _n_sents(ranges: tuple[ByteRange, ...], i: int, n_key: int) -> int:
    """The sentences range ``i`` must hold for the file to have the key's."""
    return (ranges[i + 1].first_sent if i + 1 < len(ranges) else n_key) - ranges[i].first_sent


def ingest_full(job: TokenJob) -> Ingested:
    """Read and validate one file chunk by chunk (every column), check it against the key,
    stage its units, sentences and label counts as it goes, and hash it on the way: one read
    of the file, memory bounded by the chunk size."""
    spec, source, key = job.spec, job.source, job.key
    sid = source.id
    part = partition(spec.corpus, sid)
    check = None if key is None else WordCheck(str(spec.key.path), _key_sents(key),
                                               str(source.path))
    fmt, n_sents, n_units, n_docs, n_tokens = source.fmt, 0, 0, 0, 0
    vocab, shape = [], ShapeDigest()
    # one version of the file: hash, rows, stamp; the staged files dropped on an error
    with StableFile(source.path) as file, PieceWriters(job.stage_dir, part) as writers:
        for chunk in iter_conll(file, source.fmt):
            if not writers.opened:
                fmt = chunk.fmt
                writers.open(("units", "sents"))
            if check is not None:
                check.add(chunk, _key_words(key, chunk.sents))
            else:  # the key: its shape, a digest of 8 bytes a word not kept
                shape.add(chunk.sents["n_words"].to_numpy(), form_hashes(chunk.words["form"]))
            writers.append("units", with_literals(chunk.tokens.with_columns(
                tokens.word_numbers(n_units)), corpus=spec.corpus, system=sid))
            writers.append("sents", with_literals(chunk.sents, corpus=spec.corpus, system=sid))
            vocab.append(label_counts(chunk.words))
            n_sents, n_units = n_sents + chunk.sents.height, n_units + chunk.words.height
            n_tokens += token_count(chunk.tokens)
            n_docs = int(chunk.sents["doc"][-1]) + 1
        sha = file.sha256  # of the bytes parsed; the reader checked it is unchanged
        sig = _ingest_signature(sha, fmt, job.role, key.sha256 if key else None)
        staged = writers.close(sig)
    units = str(location(job.stage_dir) / staged["units"].rel)
    mismatch = None if check is None else check.difference()
    files = list(staged.values())
    if mismatch is None:
        counts, words, layout = (pl.concat(vocab).group_by("field", "label")
                                 .agg(pl.col("n").sum())), units, "full"
    else:  # another tokenisation: aligned with the key on the characters, or an error
        projected, conll = align_with_key(spec, source, key, units, mismatch)
        counts, layout = label_counts(projected), "aligned"
        files.append(stage_frame(job.stage_dir, "conll18", part, sig,
                                 with_literals(conll, corpus=spec.corpus, system=sid)))
        files.append(stage_frame(job.stage_dir, "aligned", part, sig, with_literals(
            projected, corpus=spec.corpus, system=sid)))
        words = str(location(job.stage_dir) / files[-1].rel)
    counts = with_literals(counts, corpus=spec.corpus, system=sid)
    row = systems_row(spec, source, job.role, sha, fmt, n_docs, n_sents, n_units, n_tokens,
                      "characters" if layout == "aligned" else "identical", job.at, file.stamp)
    files.append(stage_frame(job.stage_dir, "vocab", part, sig, counts))
    files.append(stage_frame(job.stage_dir, "systems", part, sig, row))
    here = {f.table: str(location(job.stage_dir) / f.rel) for f in files}
    return Ingested(sid, sha, fmt, words, layout, here["sents"], here["systems"],
                    here["vocab"], tuple(files),
                    shape=shape.hexdigest() if key is None else "")


def align_with_key(spec: RunSpec, source: Source, key: Ingested, units: str,
                   mismatch: InputError) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A system whose words differ from the key's: when its text (characters without
    spaces) is the key's, its words aligned with the key's as the CoNLL 2018 script aligns
    them, and its CoNLL 2018 scores; else an error at the first differing character."""
    key_tokens = read_parquet(key.words, glob=False)
    sys_tokens = read_parquet(units, glob=False)
    key_text, sys_text = file_text(key_tokens), file_text(sys_tokens)
    at = first_difference(key_text.chars, sys_text.chars)
    if at is not None:
        raise text_difference(spec, source, key_text, sys_text, at, mismatch)
    to_key = align_words(key_text, sys_text)
    counts = conll18.aligned_counts(key_tokens, sys_tokens, to_key, key_text, sys_text)
    key_counts = key.counts().with_columns(system=pl.lit(KEY_ID))
    scores = conll18.task_rows(counts.join(conll18.conll18_scores(counts), on="metric"),
                               spec.task, blank_columns(key_counts, KEY_ID))
    key_words = key_tokens.filter(pl.col("kind") == KIND_WORD)
    return project(key_words, sys_tokens.filter(pl.col("kind") == KIND_WORD), to_key,
                   key_text, sys_text), scores


def text_difference(spec: RunSpec, source: Source, key_text: Text, sys_text: Text, at: int,
                    mismatch: InputError) -> InputError:
    """The error of a system whose text differs from the key's: the first differing
    character, with its line, sentence and both strings."""
    k, s = token_at(key_text, at), token_at(sys_text, at)
    around = slice(max(0, at - 10), at + 10)
    return InputError(
        f"the text differs from the key's at character {at}: the system has "
        f"'{sys_text.chars[around]}' where the key ({spec.key.path}:"
        f"{int(key_text.token_line[k])}) has '{key_text.chars[around]}'; expected the key's "
        f"words, or its text tokenised otherwise ({mismatch.message})", source.path,
        int(sys_text.token_line[s]) if sys_text.token_line.size else None)


def _ingest_signature(sha: str, fmt: str, role: str, key_sha: str | None) -> str:
    return signature(sha, fmt, None if role == "key" else key_sha)


def _size(path: str | Path) -> int:
    """A file's size (0 when it cannot be read: its reader says why)."""
    try:
        return input_stamp(path).size
    except (OSError, InputError):
        return 0


def _live(stage: Staging, corpus: str, row: dict) -> Ingested:
    """A file ingested by an earlier run, as the warehouse holds it."""
    part = partition(corpus, row["system"])
    layout = ("aligned" if row.get("alignment") == "characters" else
              "lean" if stage.live_file("words", part) is not None else "full")
    table = {"full": "units", "lean": "words", "aligned": "aligned"}[layout]
    sents = stage.live_file("sents", part)
    return Ingested(row["system"], row["sha256"], row["format"],
                    str(stage.live_file(table, part)), layout, str(sents or ""),
                    str(stage.live_file("systems", part)), str(stage.live_file("vocab", part)))


def live_key_shape(key: Ingested) -> Ingested:
    """The key read by an earlier run, with its shape (computed once, from its stored words,
    for :func:`with_frame`)."""
    forms = (scan_parquet(key.words, glob=False).filter(pl.col("kind") == KIND_WORD)
             .select("form").collect()["form"])
    return replace(key, shape=shape_of([key_shape(key.sents)], [form_hashes(forms)]))


def _key_sents(key: Ingested) -> pl.DataFrame:
    """The key's sentences as :class:`WordCheck` reads them."""
    return read_parquet(key.sents, columns=["sent", "sent_id", "n_words", "line"], glob=False)


def _key_words(key: Ingested, sents: pl.DataFrame) -> pl.DataFrame:
    """The key's words of the sentences in ``sents`` (a contiguous range)."""
    lo, hi = int(sents["sent"][0]), int(sents["sent"][-1])
    return (scan_parquet(key.words, glob=False)
            .filter((pl.col("kind") == KIND_WORD) & pl.col("sent").is_between(lo, hi))
            .select("sent", "id", "form").collect())


def ingest_tokens(spec: RunSpec, stage: Staging) -> dict[str, Ingested]:
    """Ingest the key, then the systems (several at once): an unchanged file is not read
    again; any other is read once (validated, staged and hashed in one pass)."""
    known = known_inputs(stage, spec.corpus)

    def reuse(source: Source, role: str, key: Ingested | None) -> Ingested | None:
        row = known.get(source.id)
        sig = None if row is None else _ingest_signature(
            row["sha256"], row["format"], role, key.sha256 if key else None)
        if unchanged(row, source.path) and stage.has(
                "vocab", partition(spec.corpus, source.id), sig):
            return _live(stage, spec.corpus, row)
        return None

    plans: dict[str, Any] = {}  # system -> its plan task, submitted beside the key's read
    sizes: dict[str, int] = {}  # system -> its size, looked up once (a request on a store)

    def large(source: Source) -> bool:
        if source.id not in sizes:
            sizes[source.id] = _size(source.path)
        return sizes[source.id] > range_bytes()

    early: dict[str, RangedIngest] = {}  # system -> its reads, started on the key's frame

    def fresh_large(source: Source, role: str) -> bool:
        """A large system file that must be read (an unchanged one is left for the reuse
        check, which needs the key)."""
        row = known.get(source.id)
        return (role != "key" and not (row is not None and unchanged(row, source.path))
                and large(source))

    def plan_early(at: dt.datetime) -> None:
        """Plan the large system files on a disk while the key is read: they do not need it."""
        for source, role in spec.sources:
            if not read_once(source) and fresh_large(source, role):
                job = TokenJob(spec, source, role, str(stage.dir), None, at)
                plans[source.id] = plan_file.submit(job)

    def start_early(at: dt.datetime) -> Callable[[Ingested], list[RangedIngest]]:
        def start(key: Ingested) -> list[RangedIngest]:
            """Read the first large systems (as many as are read at once) on the key's
            frame, while its full read goes on."""
            systems = [(s, r) for s, r in spec.sources if r != "key"]
            for source, role in systems[:ingest_parallelism(len(systems))]:
                if fresh_large(source, role):
                    job = TokenJob(spec, source, role, str(stage.dir), key, at)
                    early[source.id] = (StreamedIngest(job) if read_once(source) else
                                        RangedIngest(job, plans.pop(source.id, None)))
            return list(early.values())
        return start

    def submit(source: Source, role: str, key: Ingested | None, at: dt.datetime):
        if key is not None and not key.shape:  # a key read by an earlier run
            key = frame_once(key)
        if source.id in early:
            return early.pop(source.id).keyed(key, at)
        job = TokenJob(spec, source, role, str(stage.dir), key, at)
        if key is None:
            read = KeyIngest(job, start_early(at))
            plan_early(at)
            return read
        if large(source):
            return (StreamedIngest(job) if read_once(source)
                    else RangedIngest(job, plans.pop(source.id, None)))
        return ingest_file.submit(job)

    @functools.cache
    def frame_once(key: Ingested) -> Ingested:
        frame = frame_key.submit(FrameJob(str(spec.key.path), key.fmt, str(stage.dir)))
        return with_frame(live_key_shape(key), frame.result())

    files = ingest_all(spec, stage, reuse, submit)
    for f in files.values():
        if f.staged:  # read now: the tables of its other layouts go
            for table in STORED_BY[f.layout]:
                stage.drop(table, partition(spec.corpus, f.system))
    return files
