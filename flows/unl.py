"""UNLization (``--task unl``) and NLization (``--task nl``) runs: score every grammar
version against the expected file, then compare the versions.

Both steps are mapped over shards of ``shard_sents`` consecutive expected sentences: a version
is aligned with the expected file once (alignment is global: by id or by position), then each
shard scores its sentences (rows concatenated in sentence order); the comparison maps over the
same shards (additive pair and oracle counts, per-sentence moved rows) and reduces last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.preflight import check_some_left, skip_system
from sysdiff.flows.progress import progress
from sysdiff.flows.shards import Opaque, map_collect
from sysdiff.flows.spec import RunSpec, Source
from sysdiff.flows.warehouse import (
    Staging,
    corpus_partition,
    input_sha256,
    partition,
    signature,
    systems_row,
    with_literals,
)
from sysdiff.schemas.errors import InputError
from sysdiff.transforms.plan import plan_ranges

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
    extra = cfg.get("optional_attrs") or []
    if extra:
        opts = UnlOptions(multiset=opts.multiset, keep_scope_ids=opts.keep_scope_ids,
                          threshold=opts.threshold, overall_threshold=opts.overall_threshold,
                          optional_attrs=set(opts.optional_attrs) | set(extra))
    return opts


@task(name="read", task_run_name="read {source.id}", cache_policy=NONE)
def read_sentences(source: Source, task_name: str) -> list:
    """UNL graphs (``unl``) or target-language sentences (``nl``) of one file."""
    from sysdiff.schemas.formats.unl import read_nl, read_unl

    return read_nl(source.path) if task_name == "nl" else read_unl(source.path)


@task(name="score", task_run_name="score {task_name} sentences {first}+", cache_policy=NONE,
      retries=2)
def score_shard(pairs: Opaque, first: int, task_name: str, options) -> pl.DataFrame:
    """The map of scoring: ``unl_sentences`` rows of expected sentences ``first``, ... of one
    version; ``pairs`` holds (expected sentences, the actual sentence aligned with each or
    None)."""
    from sysdiff.transforms.unl import score_nl_rows, score_unl_rows

    rows = score_nl_rows if task_name == "nl" else score_unl_rows
    return rows(*pairs.value, options, first)


@task(name="compare", task_run_name="compare sentences {first}+", cache_policy=NONE,
      retries=2)
def compare_shard(sentences: dict[str, pl.DataFrame], first: int) -> dict:
    """The map of the comparison: additive counts of every version's rows of one shard."""
    from sysdiff.transforms.unl import compare_partials

    return compare_partials(sentences)


def score_version(expected: list, actual: list, ranges: list[tuple[int, int]], task_name: str,
                  options, tick: Callable[[], None]) -> pl.DataFrame:
    """Align one version with the expected file, score it shard by shard, concatenate."""
    from sysdiff.transforms.unl import aligned_partners

    partners = aligned_partners(expected, actual, options.align)
    rows = map_collect(lambda r: score_shard.submit(
        Opaque((expected[r[0]:r[1]], partners[r[0]:r[1]])), r[0], task_name, options),
        ranges, tick)
    return pl.concat(rows)


def compare_all(sentences: dict[str, pl.DataFrame], ranges: list[tuple[int, int]]
                ) -> dict[str, pl.DataFrame]:
    """Compare all versions shard by shard (rows are in sentence order), then reduce."""
    from sysdiff.transforms.unl import finish_compare

    with progress("compare", len(ranges)) as tick:
        parts = map_collect(lambda r: compare_shard.submit(
            {s: df.slice(r[0], r[1] - r[0]) for s, df in sentences.items()}, r[0]),
            ranges, tick)
        return finish_compare(parts)


def run_unl(spec: RunSpec, stage: Staging) -> None:
    """Score each version, then compare all versions (pairs, oracle, moved sentences)."""
    from sysdiff.transforms.unl import unl_scores, unl_warnings

    corpus, options = spec.corpus, unl_options(spec)
    opt_sig = options.signature() if hasattr(options, "signature") else repr(options)
    key_sha = input_sha256(spec.key.path)
    shas = {s.id: input_sha256(s.path) for s in spec.systems}
    expected = read_sentences(spec.key, spec.task)
    stage_system(stage, spec, spec.key, "key", key_sha, len(expected), expected)
    ranges = plan_ranges(np.ones(len(expected), np.int64), spec.shard_sents) or [(0, 0)]
    sentences: dict[str, pl.DataFrame] = {}
    with progress("score", len(spec.systems) * len(ranges)) as tick:
        for source in spec.systems:
            sha = shas[source.id]
            try:
                actual = read_sentences(source, spec.task)
            except InputError as e:
                skip_system(spec, stage, source, "system", e)
                shas.pop(source.id)
                continue
            if spec.task == "unl":
                for w in unl_warnings(expected, actual):
                    log.warning("%s: %s", source.path, w)
            sig = signature(key_sha, sha, opt_sig, spec.task)
            df = score_version(expected, actual, ranges, spec.task, options, tick)
            sentences[source.id] = df
            if not stage.has("unl_sentences", partition(corpus, source.id), sig):
                stage_system(stage, spec, source, "system", sha, len(actual), actual, sig)
                stage.write("unl_sentences", partition(corpus, source.id), sig,
                            with_literals(df, corpus=corpus, system=source.id))
                stage.write("unl_scores", partition(corpus, source.id), sig,
                            with_literals(unl_scores(df), corpus=corpus, system=source.id))
    check_some_left(spec, stage)
    all_sig = signature(key_sha, sorted(shas.items()), opt_sig)
    if len(sentences) > 1 and not stage.has("unl_oracle", f"corpus={corpus}", all_sig):
        compared = compare_all(sentences, ranges)
        for name in ("pairs", "oracle", "moved"):
            if compared[name].height:
                stage.write(f"unl_{name}", corpus_partition(corpus), all_sig,
                            with_literals(compared[name], corpus=corpus))
    stage_history(spec, stage, "unl", all_sig)


def stage_system(stage: Staging, spec: RunSpec, source: Source, role: str, sha: str,
                 n_sents: int, sentences: list, sig: str | None = None) -> None:
    """The ``systems`` row of one UNL file."""
    sid = source.id
    sig = sig or signature(sha, spec.task)
    if not stage.has("systems", partition(spec.corpus, sid), sig):
        stage.write("systems", partition(spec.corpus, sid), sig,
                    systems_row(spec, source, role, sha, spec.task, 1, n_sents, n_sents))

