"""Flows for the non-token tasks: coreference (coref) and UNL (unl, nl).

Same rules as the token flows: content-hash signatures per partition, everything staged and
committed atomically by the caller's ``open_run``, and the scoring mapped over shards of whole
documents (coref) or sentences (UNL) submitted to the task runner (threads, or Dask workers):
each shard returns additive counts or per-unit rows, and the reduce sums or concatenates them
before any ratio is computed, so the tables do not depend on the shard size.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.ingest import ingest_all
from sysdiff.flows.progress import progress
from sysdiff.flows.shards import map_collect
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.store import location, read_parquet, scan_parquet
from sysdiff.flows.warehouse import (
    StagedFile,
    Staging,
    corpus_partition,
    known_inputs,
    partition,
    read_table,
    signature,
    stage_frame,
    systems_row,
    unchanged,
    with_literals,
)
from sysdiff.schemas.formats.stable import read_stable
from sysdiff.schemas.frozen import FrozenMap
from sysdiff.schemas.vocabulary import CRITERIA
from sysdiff.transforms.bootstrap import Bootstrap
from sysdiff.transforms.corefud import CorefOptions, default_options
from sysdiff.transforms.plan import plan_ranges

log = logging.getLogger("sysdiff")
#: In the signature of a mentions partition: the mention table's shape (2: ``head`` and
#: ``zero_deps``), so that an older partition is read again.
MENTIONS_VERSION = 2


@dataclass(frozen=True)
class DocShard:
    """Whole documents (every part) scored together, by name in sorted order."""

    index: int
    docs: tuple[str, ...]


def plan_doc_shards(paths: dict[str, str], shard_sents: int) -> list[DocShard]:
    """Documents with a mention in any file, sorted by name, in shards of about
    ``shard_sents`` sentences. A document counts 1 + the sentence index of its last mention
    in any file (per part): the mention files hold no sentence count."""
    per_doc = (pl.concat([scan_parquet(p, glob=False).select("doc", "part", "sent")
                          for p in paths.values()])
               .group_by("doc", "part").agg(n=pl.col("sent").max().cast(pl.Int64) + 1)
               .group_by("doc").agg(pl.col("n").sum()).sort("doc").collect())
    names = per_doc["doc"].to_list()
    shards = [DocShard(i, tuple(names[lo:hi]))
              for i, (lo, hi) in enumerate(plan_ranges(per_doc["n"].to_numpy(), shard_sents))]
    return shards or [DocShard(0, ())]      # no mention anywhere: still one (empty) shard


def read_shard_mentions(path: str, shard: DocShard) -> pl.DataFrame:
    """The mentions of a shard's documents, in file order."""
    from sysdiff.schemas.formats.coref import MENTION_COLUMNS

    return (scan_parquet(path, glob=False).filter(pl.col("doc").is_in(list(shard.docs)))
            .select(MENTION_COLUMNS).collect())


@dataclass(frozen=True)
class CorefFile:
    """One ingested coreference file: its hash, where its mentions and its per-document token
    counts lie, its format, and a note on its single-token mentions without a type (no
    POS)."""

    sha256: str
    mentions: str
    tokens: str
    fmt: str | None = None
    no_pos: str | None = None
    staged: tuple[StagedFile, ...] = ()


@dataclass(frozen=True)
class CorefJob:
    """One coreference file to ingest (a task's only parameter)."""

    spec: RunSpec
    source: Source
    role: str
    stage_dir: str
    key: CorefFile | None
    at: dt.datetime


@task(name="ingest", task_run_name="ingest {job.spec.corpus} {job.source.id}",
      cache_policy=NONE)
def ingest_coref_file(job: CorefJob) -> CorefFile:
    """Read one coreference file once (mentions, per-document token counts, format and
    hash), check a response against the key's documents, and stage its tables."""
    from sysdiff.schemas.formats.coref import (
        detect_coref_format,
        read_coref_with_tokens,
        validate_response,
    )
    from sysdiff.schemas.formats.coref_shared import decode_text

    spec, source, key = job.spec, job.source, job.key
    snap = read_stable(source.path)  # one version: the bytes parsed are the bytes hashed
    text = decode_text(snap.data, source.path)
    fmt = source.fmt or detect_coref_format(text, source.path)
    m, toks = read_coref_with_tokens(source.path, fmt, text)
    sha, stamp = snap.sha256, snap.stamp
    del snap, text
    if key is not None:
        gold = read_parquet(key.tokens, glob=False).drop("corpus", "system")
        validate_response(gold, toks, spec.key.path, source.path)
    sid, corpus, part = source.id, spec.corpus, partition(spec.corpus, source.id)
    sig = _mentions_signature(sha, fmt, key.sha256 if key else sha)
    staged = {t: stage_frame(job.stage_dir, t, part, sig, df) for t, df in (
        ("mentions", with_literals(m, corpus=corpus, system=sid)),
        ("coref_tokens", with_literals(toks, corpus=corpus, system=sid)),
        ("systems", systems_row(spec, source, job.role, sha, fmt, toks.height,
                                int(m["sent"].n_unique()) if m.height else 0, m.height,
                                at=job.at, stamp=stamp)))}
    n_unknown = int((m["mtype"] == "UNKNOWN").sum())
    here = {t: str(location(job.stage_dir) / f.rel) for t, f in staged.items()}
    return CorefFile(sha, here["mentions"], here["coref_tokens"], fmt,
                     f"{Path(str(source.path)).name} ({n_unknown} of {m.height})" if n_unknown
                     else None, tuple(staged.values()))


@dataclass(frozen=True)
class CorefRun:
    """How a corpus is scored: mention matching and singletons, and whether the CorefUD
    scorer's own metrics (mor, zero) are counted (a CorefUD key)."""

    options: CorefOptions
    corefud: bool

    @property
    def signature(self) -> str:
        """The ``options`` of the rows (and part of every results signature)."""
        return self.options.signature()


def coref_run(spec: RunSpec, key_fmt: str | None) -> CorefRun:
    """The run's options: those given, else the scorer's defaults for the key's format."""
    default = default_options(key_fmt)
    options = CorefOptions(spec.match or default.match, spec.singletons or default.singletons)
    if options.match != "exact" and key_fmt != "corefud":
        log.warning("--match %s on a %s key: its mentions have no heads, so each mention's "
                    "first token is its head (as the CorefUD scorer takes a file without "
                    "them)", options.match, key_fmt)
    return CorefRun(options, key_fmt == "corefud")


def run_coref(spec: RunSpec, stage: Staging) -> None:
    """Coreference: scores, ARCS classes, pairs, oracles and agreement for all systems."""
    files = ingest_coref(spec, stage)
    no_pos = [f.no_pos for f in files.values() if f.no_pos]
    if no_pos:
        log.warning("mention types are unavailable (UNKNOWN) for single-token mentions without "
                    "a POS tag (the POS column is '_'): %s", ", ".join(no_pos))
    spec = dataclasses.replace(spec, systems=[s for s in spec.systems if s.id in files])
    docs = key_documents(files[KEY_ID].tokens)
    _coref_results(spec, stage, {s: f.mentions for s, f in files.items()},
                   {s: f.sha256 for s, f in files.items()},
                   coref_run(spec, files[KEY_ID].fmt), docs)


def key_documents(tokens: str) -> pl.DataFrame:
    """The key's documents in file order (the units of the bootstrap), from its per-document
    token counts (a file staged now, or live)."""
    return read_parquet(tokens, glob=False).sort("line").select("doc", "part")


def ingest_coref(spec: RunSpec, stage: Staging) -> dict[str, CorefFile]:
    """The key, then the systems (several at once): an unchanged file is not read again;
    every other is read once, checked against the key's documents and staged."""
    corpus = spec.corpus
    known = known_inputs(stage, corpus)

    def reuse(source: Source, role: str, key: CorefFile | None) -> CorefFile | None:
        row, part = known.get(source.id), partition(corpus, source.id)
        if row is None:
            return None
        key_sha = key.sha256 if key else row["sha256"]
        if unchanged(row, source.path) and stage.has(
                "mentions", part, _mentions_signature(row["sha256"], row["format"], key_sha)):
            return CorefFile(row["sha256"], str(stage.live_file("mentions", part)),
                             str(stage.live_file("coref_tokens", part)), row["format"])
        return None

    def submit(source: Source, role: str, key: CorefFile | None, at: dt.datetime):
        return ingest_coref_file.submit(CorefJob(spec, source, role, str(stage.dir), key, at))

    return ingest_all(spec, stage, reuse, submit)


def _mentions_signature(sha: str, fmt: str, key_sha: str) -> str:
    """The signature of a file's mentions partition (and its token counts and systems row)."""
    return signature(sha, fmt, key_sha, f"mentions:{MENTIONS_VERSION}")


@task(name="coref shard", task_run_name="coref shard {shard.index}", cache_policy=NONE,
      retries=2)
def coref_shard(systems: tuple[str, ...], paths: Mapping[str, str], shard: DocShard,
                score: tuple[str, ...], compare: bool, mtypes: tuple[str, ...], run: CorefRun,
                per_doc: bool = False
                ) -> dict:
    """The map: per-document counts and mention classes of the ``score`` systems and, when
    ``compare``, the engine's comparison counts (per criterion) and the agreement counts of
    all systems; every system's mentions matched with the key's once (``run.options``).
    With ``per_doc``, the per-document ARCS counts of the bootstrap intervals."""
    from sysdiff.transforms import arcs, coref, corefud

    key = read_shard_mentions(paths[KEY_ID], shard)
    mentions = {s: read_shard_mentions(paths[s], shard) for s in systems}
    need = systems if compare else score
    pair = {s: corefud.matched(key, mentions[s], run.options) for s in need}
    classes = {c: {s: arcs.mention_classes(*pair[s], c) for s in need} for c in CRITERIA}
    out: dict = {"counts": {s: coref.matched_counts(*pair[s], run.corefud) for s in score},
                 "classes": {c: {s: classes[c][s] for s in score} for c in CRITERIA}}
    if per_doc:
        out["arcs_docs"] = {s: arcs.document_counts(pl.concat(
            [classes[c][s].with_columns(criterion=pl.lit(c)) for c in CRITERIA],
            how="diagonal_relaxed")) for s in need}
    if compare:
        out["compare"] = {c: arcs.comparison_counts(classes[c], mtypes) for c in CRITERIA}
    if compare and len(systems) > 1:
        out["agreement"] = arcs.agreement_counts(mentions, run.options.keep_singletons,
                                                 run.options.match, run.corefud)
    return out


def _coref_results(spec: RunSpec, stage: Staging, paths: dict[str, str],
                   shas: dict[str, str], run: CorefRun, docs: pl.DataFrame) -> None:
    """Map the stale work over document shards, then reduce and stage every table
    (``docs``: the key's documents in file order, the units of the bootstrap)."""
    corpus = spec.corpus
    systems = [s.id for s in spec.systems]
    ci = spec.intervals
    sigs = {s: signature(shas[KEY_ID], shas[s], "coref", run.signature, run.corefud,
                         ci.options()) for s in systems}
    score = [s for s in systems if not stage.has("coref_scores", partition(corpus, s), sigs[s])]
    all_sig = signature(shas[KEY_ID], sorted((s, shas[s]) for s in systems), "coref",
                        run.signature, run.corefud, ci.options())
    compare = bool(systems) and not stage.has("coref_oracles", corpus_partition(corpus), all_sig)
    if not (score or compare):
        return
    shards = plan_doc_shards(paths, spec.plain_shard_sents)
    mtypes = corpus_mention_types(paths)
    with progress("score", len(shards)) as tick:
        frozen = (tuple(systems), FrozenMap(paths))
        parts = map_collect(lambda sh: coref_shard.submit(*frozen, sh, tuple(score), compare,
                                                          tuple(mtypes), run, ci.on),
                            shards, tick)
    intervals = Intervals(ci, docs, run.signature)
    for s in score:
        _stage_coref_system(stage, corpus, s, sigs[s], parts, run.signature, intervals)
    if compare:
        _stage_coref_compare(stage, corpus, systems, all_sig, parts, mtypes, run.signature,
                             intervals)
    stage_history(spec, stage, "coref", all_sig)


@dataclass(frozen=True)
class Intervals:
    """The bootstrap of a coreference run: its settings, the key's documents in file order
    (the units resampled) and the ``options`` of the tables with intervals."""

    ci: Bootstrap
    docs: pl.DataFrame
    run_options: str

    @property
    def options(self) -> str:
        return f"{self.run_options}|{self.ci.options()}"

    def arcs_docs(self, parts: list[dict], s: str) -> pl.DataFrame:
        """The per-document ARCS counts of system ``s`` over every shard."""
        return pl.concat([p["arcs_docs"][s] for p in parts])

    def arcs(self, parts: list[dict], s: str) -> tuple[pl.DataFrame, np.ndarray]:
        """(criterion, mtype) keys and the (B x keys) ARCS F1 samples of system ``s``."""
        from sysdiff.transforms import arcs

        return arcs.f1_samples(self.arcs_docs(parts, s), self.docs, self.ci)


def _stage_coref_system(stage: Staging, corpus: str, s: str, sig: str, parts: list[dict],
                        options: str, intervals: Intervals) -> None:
    """Reduce: scores from the summed per-document counts, classes concatenated in
    document order, ARCS scores counted over them; the bootstrap intervals of both scores
    from the per-document counts."""
    from sysdiff.transforms import arcs, coref

    part = partition(corpus, s)
    counts = pl.concat([p["counts"][s] for p in parts])
    scores = coref.coref_scores(counts)
    cls = pl.concat([p["classes"][c][s] for c in CRITERIA for p in parts])
    arcs_rows = arcs.arcs_scores(cls)
    if intervals.ci.on:
        ci = coref.score_intervals(coref.f1_samples(counts, intervals.docs, intervals.ci),
                                   intervals.ci.confidence)
        scores = scores.join(ci, on="metric", how="left", maintain_order="left")
        keys, samples = intervals.arcs(parts, s)
        arcs_rows = arcs_rows.join(arcs.interval_rows(keys, samples, intervals.ci.confidence),
                                   on=["criterion", "mtype"], how="left", nulls_equal=True,
                                   maintain_order="left")
    scores, arcs_rows = (_no_number_without_data(df) for df in (scores, arcs_rows))
    lit = {"corpus": corpus, "system": s, "options": options}
    ci_lit = dict(lit, options=intervals.options)
    stage.write("coref_scores", part, sig, with_literals(scores, **ci_lit))
    stage.write("mention_classes", part, sig, with_literals(cls, **lit))
    stage.write("arcs_scores", part, sig, with_literals(arcs_rows, **ci_lit))


def _no_number_without_data(df: pl.DataFrame) -> pl.DataFrame:
    """Interval columns (NULL when not computed), NULL where the F1 is NULL."""
    return df.with_columns(
        pl.when(pl.col("f1").is_not_null()).then(
            pl.col(c) if c in df.columns else pl.lit(None, pl.Float64)).alias(c)
        for c in ("ci_low", "ci_high"))


def _stage_coref_compare(stage: Staging, corpus: str, systems: list[str], sig: str,
                         parts: list[dict], mtypes: list[str], options: str,
                         intervals: Intervals) -> None:
    """Reduce: oracles, pairs, transitions and agreement from the summed shard counts; the
    pairs' delta ARCS F1 (ALL) with its bootstrap interval."""
    from sysdiff.transforms import arcs, coref

    part = corpus_partition(corpus)
    lit = {"corpus": corpus, "options": options}
    f1, samples = _arcs_f1_of_all(parts, systems, intervals)
    done = [arcs.finish_comparison(arcs.merge_comparison([p["compare"][c] for p in parts]),
                                   systems, c, mtypes, f1.get(c), samples.get(c),
                                   intervals.ci.confidence) for c in CRITERIA]
    stage.write("coref_oracles", part, sig,
                with_literals(pl.concat([o for _, _, o in done]), **lit))
    if len(systems) < 2:
        return
    stage.write("coref_pairs", part, sig, with_literals(
        pl.concat([p for p, _, _ in done]), **dict(lit, options=intervals.options)))
    stage.write("coref_transitions", part, sig,
                with_literals(pl.concat([t for _, t, _ in done]), **lit))
    agreement = coref.coref_scores(pl.concat([p["agreement"] for p in parts]))
    stage.write("coref_agreement", part, sig, with_literals(agreement, **lit))


def _arcs_f1_of_all(parts: list[dict], systems: list[str], intervals: Intervals
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per criterion: every system's ARCS F1 (ALL) and its (B x N) bootstrap samples
    (nothing when the bootstrap is off)."""
    from sysdiff.transforms import arcs

    if not intervals.ci.on:
        return {}, {}
    f1: dict[str, list] = {c: [] for c in CRITERIA}
    samples: dict[str, list] = {c: [] for c in CRITERIA}
    for s in systems:
        keys, got = intervals.arcs(parts, s)
        totals = intervals.arcs_docs(parts, s).group_by("criterion").agg(
            pl.col(arcs.ARCS_COUNTS).sum())
        for c in CRITERIA:
            at = keys.with_row_index().filter((pl.col("criterion") == c)
                                              & (pl.col("mtype") == "ALL"))["index"]
            row = totals.filter(pl.col("criterion") == c)
            f1[c].append(float(arcs.arcs_f1(*(row[x].to_numpy() for x in arcs.ARCS_COUNTS))[0])
                         if row.height else np.nan)
            samples[c].append(got[:, at[0]] if at.len() else np.full(intervals.ci.samples,
                                                                     np.nan))
    return ({c: np.array(v) for c, v in f1.items()},
            {c: np.stack(v, axis=1) for c, v in samples.items()})


def corpus_mention_types(paths: dict[str, str]) -> list[str]:
    """Every mention type of the corpus' files (and ``UNKNOWN``), sorted: the group codes of
    the comparison, the same in every shard."""
    types = pl.concat([scan_parquet(p, glob=False).select("mtype") for p in paths.values()]
                      ).unique().collect()["mtype"].drop_nulls().to_list()
    return sorted({"UNKNOWN", *types})


def live_mentions(stage: Staging, corpus: str) -> pl.DataFrame:
    """All mentions of a corpus in the warehouse (for reports and drill-down)."""
    return read_table(stage.root, "mentions", stage.manifest, pl.col("corpus") == corpus)
