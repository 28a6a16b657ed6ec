"""UNLization (``--task unl``) and NLization (``--task nl``) runs: score every grammar
version against the expected file, then compare the versions.

Both steps are mapped over shards of ``shard_sents`` consecutive expected sentences. A UNL
file is first indexed in one streaming pass (ids, lines, where each ``[S]`` block starts), so
each version is aligned with the expected file globally (by id or by position) without
parsing it; then each shard parses its expected sentences once and, for every version, only
the actual sentences aligned with them, and scores them (rows concatenated in sentence order):
memory depends on the shard size, not the file size. Warnings are collected per shard and
merged. The comparison maps over the same shards (additive pair and oracle counts,
per-sentence moved rows) and reduces last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.preflight import check_some_left, skip_system
from sysdiff.flows.progress import progress
from sysdiff.flows.shards import FrozenFrame, Opaque, map_collect
from sysdiff.flows.spec import RunSpec, Source
from sysdiff.flows.warehouse import (
    Staging,
    corpus_partition,
    partition,
    signature,
    systems_row,
    with_literals,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import Stamp, read_stable
from sysdiff.schemas.frozen import FrozenMap, read_only
from sysdiff.transforms.plan import plan_ranges

if TYPE_CHECKING:
    from sysdiff.transforms.unl import Alignment

log = logging.getLogger("sysdiff")


def unl_options(spec: RunSpec):
    """UnlOptions / NlOptions from the run's ``unl`` settings (TOML ``[unl]`` or CLI flags)."""
    from sysdiff.transforms.unl import NlOptions, UnlOptions

    cfg = dict(spec.unl)
    if spec.task == "nl":
        return NlOptions()
    opts = UnlOptions(multiset=bool(cfg.get("multiset", False)),
                      keep_scope_ids=bool(cfg.get("keep_scope_ids", False)))
    if cfg.get("legacy_2013"):
        opts = opts.legacy_2013()
    extra = cfg.get("optional_attrs") or ()
    if extra:
        opts = replace(opts, optional_attrs=opts.optional_attrs | frozenset(extra))
    return opts


@task(name="read", task_run_name="read {source.id}", cache_policy=NONE)
def read_sentences(source: Source, task_name: str) -> Opaque:
    """(sentences, SHA-256 of the file, its stamp). UNL: the index of the file (ids, lines
    and where each ``[S]`` block starts), built in one streaming pass that also hashes the
    file (the graphs are parsed shard by shard); NL: its target-language sentences (a
    tuple)."""
    from sysdiff.schemas.formats.unl import index_unl, read_nl

    if task_name == "nl":
        snap = read_stable(source.path)
        sentences = tuple(read_nl(snap, source_name=str(source.path)))
        return Opaque((sentences, snap.sha256, snap.stamp))
    index = index_unl(source.path)
    return Opaque((index, index.sha256, index.source.stamp))


@dataclass(frozen=True)
class Version:
    """One system file to score: its sentences (UNL: an index; NL: a tuple), their
    alignment with the expected file, and for each actual sentence the first expected
    sentence aligned with it (-1: none), so that a shard reports the warnings of the actual
    sentences it owns; ``stamp``: the version of the file read. A task parameter: frozen,
    ``owner`` read-only."""

    source: Source
    sha: str
    sentences: object
    alignment: Alignment
    owner: np.ndarray
    stamp: Stamp | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "owner", read_only(self.owner))

    def __reduce__(self):  # unpickled arrays would be writable again
        return (Version, (self.source, self.sha, self.sentences, self.alignment, self.owner,
                          self.stamp))

    @classmethod
    def of(cls, source: Source, sha: str, sentences, alignment, stamp: Stamp | None = None
           ) -> Version:
        partner = alignment.partner
        owner = np.full(len(sentences), np.iinfo(np.int64).max, np.int64)
        has = np.flatnonzero(partner >= 0)
        np.minimum.at(owner, partner[has], has)  # the first expected sentence wins
        owner[owner == np.iinfo(np.int64).max] = -1
        return cls(source, sha, sentences, alignment, owner, stamp)


@task(name="score", task_run_name="score {task_name} sentences {first}+", cache_policy=NONE,
      retries=2)
def score_shard(inputs: Opaque, first: int, task_name: str, options) -> dict:
    """The map of scoring over expected sentences ``first``, ... (``inputs``: the expected
    sentences, the versions, the end of the shard): the ``unl_sentences`` rows of every
    version and, for UNL, the warning parts of the sentences read. The expected sentences
    are parsed once for all versions; each version reads only their partners."""
    from sysdiff.transforms.unl import score_nl_rows, score_unl_chunk, warning_parts

    expected, versions, hi = inputs.value
    rows: dict[str, pl.DataFrame] = {}
    if task_name == "nl":
        for name, v in versions.items():
            partners = [v.sentences[k] if k >= 0 else None
                        for k in v.alignment.partner[first:hi].tolist()]  # fmt: skip
            rows[name] = score_nl_rows(expected[first:hi], partners, options, first)
        return {"rows": rows, "parts": {}}
    exp = expected.read(np.arange(first, hi), connectivity=False)  # RETURNED: actual only
    parts = {"": warning_parts(exp, "expected")}
    for name, v in versions.items():
        partner = v.alignment.partner[first:hi]
        wanted = np.unique(partner[partner >= 0])
        act = v.sentences.read(wanted)
        local = np.where(partner >= 0, np.searchsorted(wanted, partner), -1)
        rows[name] = score_unl_chunk(exp, act, local, options)
        owned = (v.owner[wanted] >= first) & (v.owner[wanted] < hi)
        parts[name] = warning_parts(act, "actual", np.flatnonzero(owned))
    return {"rows": rows, "parts": parts}


@task(name="unmatched", task_run_name="read unmatched {name}", cache_policy=NONE, retries=2)
def unmatched_parts(index: Opaque, rows: np.ndarray, size: int, name: str) -> list[dict]:
    """Warning parts of the actual sentences aligned with no expected sentence (read
    ``size`` at a time)."""
    from sysdiff.transforms.unl import warning_parts

    return [warning_parts(index.value.read(rows[k : k + size]), "actual")
            for k in range(0, rows.size, size)]  # fmt: skip


def score_versions(expected, versions: dict[str, Version], ranges: list[tuple[int, int]],
                   task_name: str, options, tick: Callable[[], None]) -> dict:
    """Score every version shard by shard: rows concatenated in sentence order, warning
    parts merged (``""``: the expected file)."""
    from sysdiff.transforms.unl import merge_warning_parts

    def ticks() -> None:
        for _ in versions:
            tick()

    frozen = FrozenMap(versions)
    results = map_collect(lambda r: score_shard.submit(
        Opaque((expected, frozen, r[1])), r[0], task_name, options), ranges, ticks)
    rows = {name: pl.concat([res["rows"][name] for res in results]) for name in versions}
    if task_name == "nl":
        return {"rows": rows, "parts": {}}
    parts = {name: [res["parts"][name] for res in results] for name in ["", *versions]}
    for name, v in versions.items():
        rest = v.alignment.unmatched_actual
        if rest.size:
            parts[name] += unmatched_parts(Opaque(v.sentences), rest,
                                           max(1, ranges[0][1] - ranges[0][0]), name)
    return {"rows": rows, "parts": {k: merge_warning_parts(p) for k, p in parts.items()}}


@task(name="compare", task_run_name="compare sentences {first}+", cache_policy=NONE,
      retries=2)
def compare_shard(sentences: FrozenMap, first: int) -> dict:
    """The map of the comparison: additive counts of every version's rows of one shard
    (``sentences``: version -> its rows, a :class:`FrozenFrame`)."""
    from sysdiff.transforms.unl import compare_partials

    return compare_partials({name: rows.frame() for name, rows in sentences.items()})


def compare_all(sentences: dict[str, pl.DataFrame], ranges: list[tuple[int, int]],
                f1: np.ndarray | None = None, samples: np.ndarray | None = None,
                confidence: float = 0.95) -> dict[str, pl.DataFrame]:
    """Compare all versions shard by shard (rows are in sentence order; each task gets
    the columns compared of its rows), then reduce (with the versions' F-measures and their
    bootstrap samples: the pairs' delta F)."""
    from sysdiff.transforms.unl import compared_columns, finish_compare

    compared = {name: compared_columns(df) for name, df in sentences.items()}
    with progress("compare", len(ranges)) as tick:
        parts = map_collect(lambda r: compare_shard.submit(FrozenMap(
            (s, FrozenFrame.of(df.slice(r[0], r[1] - r[0]))) for s, df in compared.items()),
            r[0]), ranges, tick)
        return finish_compare(parts, f1, samples, confidence)


def run_unl(spec: RunSpec, stage: Staging) -> None:
    """Index the files, score every version shard by shard, then compare all versions
    (pairs, oracle, moved sentences)."""
    from sysdiff.transforms.unl import align_ids, f1_samples, unl_scores, warning_lines

    corpus, options = spec.corpus, unl_options(spec)
    opt_sig = options.signature() if hasattr(options, "signature") else repr(options)
    ci = spec.intervals
    expected, key_sha, key_stamp = read_sentences(spec.key, spec.task).value
    shas: dict[str, str] = {}
    stage_system(stage, spec, spec.key, "key", key_sha, key_stamp, len(expected))
    ranges = plan_ranges(np.ones(len(expected), np.int64), spec.plain_shard_sents) or [(0, 0)]
    versions: dict[str, Version] = {}
    for source in spec.systems:
        try:
            actual, shas[source.id], stamp = read_sentences(source, spec.task).value
        except InputError as e:
            skip_system(spec, stage, source, "system", e)
            continue
        al = align_ids(_ids(expected), _ids(actual), options.align)
        versions[source.id] = Version.of(source, shas[source.id], actual, al, stamp)
    with progress("score", len(versions) * len(ranges)) as tick:
        scored = score_versions(expected, versions, ranges, spec.task, options, tick)
    sentences = {name: scored["rows"][name] for name in versions}
    samples = f1_samples(sentences, ci) if ci.on and sentences else None
    for k, (name, v) in enumerate(versions.items()):
        source, df = v.source, sentences[name]
        if spec.task == "unl":
            for w in warning_lines(v.alignment, _ids(v.sentences), scored["parts"][""],
                                   scored["parts"][name]):
                log.warning("%s: %s", source.path, w)
        sig = signature(key_sha, v.sha, opt_sig, spec.task, ci.options())
        if not stage.has("unl_sentences", partition(corpus, name), sig):
            stage_system(stage, spec, source, "system", v.sha, v.stamp, len(v.sentences), sig)
            stage.write("unl_sentences", partition(corpus, name), sig,
                        with_literals(df, corpus=corpus, system=name))
            scores = unl_scores(df, None if samples is None else samples[:, k], ci.confidence
                                ).with_columns(options=pl.col("options") + f"|{ci.options()}")
            stage.write("unl_scores", partition(corpus, name), sig,
                        with_literals(scores, corpus=corpus, system=name))
    check_some_left(spec, stage)
    compare_versions(spec, stage, sentences, ranges, key_sha, shas, opt_sig, samples)


def compare_versions(spec: RunSpec, stage: Staging, sentences: dict[str, pl.DataFrame],
                     ranges: list[tuple[int, int]], key_sha: str, shas: dict[str, str],
                     opt_sig: str, samples: np.ndarray | None = None) -> None:
    """The corpus tables over all versions (pairs with their delta F intervals, oracle,
    moved sentences, history), from the versions' sentence rows (``samples``: their F
    bootstrap samples, drawn here when not given)."""
    from sysdiff.transforms.unl import f1_samples, unl_scores

    ci, corpus = spec.intervals, spec.corpus
    all_sig = signature(key_sha, sorted(shas.items()), opt_sig, ci.options())
    if len(sentences) > 1 and not stage.has("unl_oracle", f"corpus={corpus}", all_sig):
        if samples is None and ci.on:
            samples = f1_samples(sentences, ci)
        f1 = np.array([unl_scores(df)["f1"].fill_null(np.nan)[0] for df in sentences.values()],
                      np.float64)
        compared = compare_all(sentences, ranges, f1, samples, ci.confidence)
        for name in ("pairs", "oracle", "moved"):
            if compared[name].height:
                stage.write(f"unl_{name}", corpus_partition(corpus), all_sig,
                            with_literals(compared[name], corpus=corpus))
    stage_history(spec, stage, "unl", all_sig)


def _ids(sentences) -> pl.Series | list[str | None]:
    """Sentence ids of an index (UNL: its column) or of a tuple of sentences (NL)."""
    if hasattr(sentences, "id_series"):
        return sentences.id_series()
    return [s.sent_id for s in sentences]


def stage_system(stage: Staging, spec: RunSpec, source: Source, role: str, sha: str,
                 stamp: Stamp, n_sents: int, sig: str | None = None) -> None:
    """The ``systems`` row of one UNL file (``stamp``: the version of it read)."""
    sid = source.id
    sig = sig or signature(sha, spec.task)
    if not stage.has("systems", partition(spec.corpus, sid), sig):
        stage.write("systems", partition(spec.corpus, sid), sig,
                    systems_row(spec, source, role, sha, spec.task, 1, n_sents, n_sents,
                                stamp=stamp))

