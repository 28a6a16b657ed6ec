"""Prefect flows for token-level tasks (pos, dep): ingest files, compare all systems.

Ingest streams each file in chunks of whole sentences into Parquet. Compare maps two tasks
over shards of whole documents (priors, then counts); tasks exchange paths and sentence
ranges, never big frames, and their counts are folded into running sums as they finish.
Each result partition carries a signature of its inputs' content hashes and options, so an
unchanged partition is never recomputed and a new system only adds what involves it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.preflight import check_some_left, skip_system
from sysdiff.flows.progress import progress
from sysdiff.flows.shards import map_fold, plan_ranges
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.warehouse import (
    Staging,
    crash_point,
    input_sha256,
    partition,
    read_table,
    signature,
    systems_row,
    with_literals,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import KIND_WORD, WordCheck, iter_conll
from sysdiff.transforms import conll18, reduce, tokens
from sysdiff.transforms.views import DEP_VIEWS, TOKEN_VIEWS, WORD_COLUMNS, view_matrix

TASK_VIEWS = {"pos": TOKEN_VIEWS, "dep": TOKEN_VIEWS + DEP_VIEWS}


@dataclass(frozen=True)
class Ingested:
    """Where one ingested file lives and what it holds."""

    system: str
    sha256: str
    fmt: str
    units: Path
    sents: Path


@task(name="ingest", task_run_name="ingest {spec.corpus} {source.id}", cache_policy=NONE)
def ingest_file(spec: RunSpec, source: Source, role: str, sha: str, stage: Staging,
                key: Ingested | None, key_sha: str) -> Ingested:
    """Read and validate one file chunk by chunk, check it against the key, stage its units
    and sentences as it goes (memory depends on the chunk size, not the file size).

    Only paths and metadata leave the task.
    """
    sid = source.id
    part = partition(spec.corpus, sid)
    check = None if key is None else WordCheck(str(spec.key.path), _key_sents(key),
                                               str(source.path))
    fmt, n_sents, n_units, n_docs = source.fmt, 0, 0, 0
    sig = None
    with contextlib.ExitStack() as files:
        for chunk in iter_conll(source.path, source.fmt):
            if sig is None:
                fmt = chunk.fmt
                sig = signature(sha, fmt, None if role == "key" else key_sha)
                units = files.enter_context(stage.writer("units", part, sig))
                sents = files.enter_context(stage.writer("sents", part, sig))
            if check is not None:
                check.add(chunk, _key_words(key, chunk.sents))
            units(with_literals(chunk.tokens, corpus=spec.corpus, system=sid))
            sents(with_literals(chunk.sents, corpus=spec.corpus, system=sid))
            n_sents, n_units = n_sents + chunk.sents.height, n_units + chunk.words.height
            n_docs = int(chunk.sents["doc"][-1]) + 1
        if check is not None:
            check.finish()
    stage.write("systems", part, sig,
                systems_row(spec, source, role, sha, fmt, n_docs, n_sents, n_units))
    return Ingested(sid, sha, fmt, stage.staged_path("units", part),
                    stage.staged_path("sents", part))


def _live(stage: Staging, spec: RunSpec, sid: str, sha: str, fmt: str) -> Ingested:
    part = partition(spec.corpus, sid)
    return Ingested(sid, sha, fmt, stage.live_file("units", part), stage.live_file("sents", part))


def _key_sents(key: Ingested) -> pl.DataFrame:
    """The key's sentences as :class:`WordCheck` reads them."""
    return pl.read_parquet(key.sents, columns=["sent", "sent_id", "n_words", "line"], glob=False)


def _key_words(key: Ingested, sents: pl.DataFrame) -> pl.DataFrame:
    """The key's words of the sentences in ``sents`` (a contiguous range)."""
    lo, hi = int(sents["sent"][0]), int(sents["sent"][-1])
    return (pl.scan_parquet(key.units, glob=False)
            .filter((pl.col("kind") == KIND_WORD) & pl.col("sent").is_between(lo, hi))
            .select("sent", "id", "form").collect())


def _known_inputs(stage: Staging, corpus: str) -> dict[str, tuple[str, str]]:
    """system -> (sha256, format) of what the warehouse already holds for a corpus."""
    rows = read_table(stage.root, "systems", stage.manifest, pl.col("corpus") == corpus)
    return {r[0]: (r[1], r[2]) for r in rows.select("system", "sha256", "format").rows()}


def run_tokens(spec: RunSpec, stage: Staging) -> None:
    """A token task (pos, dep): ingest the files, then compute every table."""
    ingest_tokens(spec, stage)
    compare_tokens(spec, stage)


def ingest_tokens(spec: RunSpec, stage: Staging) -> dict[str, Ingested]:
    """Ingest the key and every system; unchanged files are not read again."""
    out: dict[str, Ingested] = {}
    key_sha = input_sha256(spec.key.path)
    known = _known_inputs(stage, spec.corpus)
    key_same = known.get(KEY_ID, ("", ""))[0] == key_sha
    sources = spec.sources
    with progress("ingest", len(sources)) as tick:
        for source, role in sources:
            sid = source.id
            try:
                sha = key_sha if role == "key" else input_sha256(source.path)
                if key_same and known.get(sid, ("", ""))[0] == sha:
                    out[sid] = _live(stage, spec, sid, sha, known[sid][1])
                else:
                    key = out[KEY_ID] if role == "system" else None
                    out[sid] = ingest_file(spec, source, role, sha, stage, key, key_sha)
            except InputError as e:
                skip_system(spec, stage, source, role, e)
            tick()
    check_some_left(spec, stage)
    return out


def corpus_systems(stage: Staging, corpus: str) -> pl.DataFrame:
    """Every system of a corpus known to the warehouse (live and staged), in ingest order."""
    frames = [read_table(stage.root, "systems", stage.manifest, pl.col("corpus") == corpus)]
    for (table, _part), (rel, _sig) in stage.staged.items():
        if table == "systems":
            frames.append(pl.read_parquet(stage.dir / rel, glob=False))
    df = pl.concat(frames, how="vertical_relaxed").filter(pl.col("corpus") == corpus)
    return df.unique("system", keep="last").sort("ingested_at", "system")


def _units_path(stage: Staging, corpus: str, system: str) -> Path:
    part = partition(corpus, system)
    return stage.staged_path("units", part) or stage.live_file("units", part)


def read_words(path: Path) -> pl.DataFrame:
    """The words (evaluation units) of one ingested file, in key order."""
    return (pl.scan_parquet(path, glob=False).filter(pl.col("kind") == 0)
            .select(WORD_COLUMNS).collect())


def options_string(view: str, punct: bool, mappings: dict) -> str:
    """What produced a row: punctuation policy and label mappings (sacreBLEU-style)."""
    maps = ";".join(f"{s}:" + ",".join(f"{a}>{b}" for a, b in sorted(m.items()))
                    for s, m in sorted(mappings.items()) if m)
    return f"view:{view}|punct:{'incl' if punct else 'excl'}|map:{maps or 'none'}"


@dataclass(frozen=True)
class Shard:
    """A contiguous run of whole documents: sentences ``lo`` (inclusive) to ``hi``."""

    index: int
    lo: int
    hi: int


def plan_shards(key_sents: pl.DataFrame, shard_sents: int) -> list[Shard]:
    """Group whole documents (or, without documents, sentences) into shards of about
    ``shard_sents`` sentences; a document is never split."""
    doc = key_sents.sort("sent")["doc"].to_numpy()
    starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])  # first sentence of each doc
    if starts.size < 2:
        starts = np.arange(doc.size)  # no documents: any sentence may start a shard
    ends = np.r_[starts[1:], doc.size]
    return [Shard(i, int(starts[lo]), int(ends[hi - 1]))
            for i, (lo, hi) in enumerate(plan_ranges(ends - starts, shard_sents))]


def read_shard_words(path: Path, shard: Shard) -> pl.DataFrame:
    """The words of one shard (row groups outside the sentence range are skipped)."""
    return (pl.scan_parquet(path, glob=False)
            .filter((pl.col("kind") == 0) & pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select(WORD_COLUMNS).collect())


def shard_lengths(sents_path: str, shard: Shard) -> np.ndarray:
    """Words per sentence, indexed by sentence number, read for the shard's sentences only
    (the others stay 0)."""
    rows = (pl.scan_parquet(sents_path, glob=False)
            .filter(pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select("sent", "n_words").collect())
    lengths = np.zeros(shard.hi, dtype=np.int64)
    lengths[rows["sent"].to_numpy()] = rows["n_words"].to_numpy()
    return lengths


def shard_words(systems: list[str], unit_paths: dict[str, str], shard: Shard
                ) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """The key's and every system's words of one shard (each file read once)."""
    key = read_shard_words(Path(unit_paths[KEY_ID]), shard)
    return key, {s: read_shard_words(Path(unit_paths[s]), shard) for s in systems}


def _matrices(spec: RunSpec, key: pl.DataFrame, words: dict[str, pl.DataFrame], fmt: str):
    """Yield (view, punct, matrix) for every view and punctuation setting of one shard."""
    for view in TASK_VIEWS[spec.task]:
        m = view_matrix(view, key, words, fmt, spec.mappings)
        for punct in tokens.punct_settings(view):
            yield view, punct, (m if punct else m.select(~m.punct))


@task(name="priors", task_run_name="priors {spec.corpus} shard {shard.index}", cache_policy=NONE,
      retries=2)
def shard_priors(spec: RunSpec, systems: list[str], unit_paths: dict[str, str], fmt: str,
                 shard: Shard) -> dict[tuple[str, bool], dict[str, pl.DataFrame]]:
    """Phase 1 of the map: per-system counts and gold label counts of one shard."""
    key, words = shard_words(systems, unit_paths, shard)
    return {(view, punct): tokens.shard_priors(m)
            for view, punct, m in _matrices(spec, key, words, fmt)}


@task(name="compare", task_run_name="compare {spec.corpus} shard {shard.index}",
      cache_policy=NONE, retries=2)
def shard_compare(spec: RunSpec, systems: list[str], unit_paths: dict[str, str], fmt: str,
                  shard: Shard, lengths_path: str, priors: dict, pairs: list[tuple[int, int]],
                  conll18_systems: list[str]) -> dict:
    """Phase 2 of the map: every additive count of one shard, for every view setting."""
    lengths = shard_lengths(lengths_path, shard)
    key, words = shard_words(systems, unit_paths, shard)
    out: dict = {}
    for view, punct, m in _matrices(spec, key, words, fmt):
        priority, freq = priors[(view, punct)]
        buckets = tokens.unit_buckets(m, lengths, np.array([freq.get(x, 0) for x in m.labels]))
        out[(view, punct)] = tokens.shard_partials(m, priority, buckets, pairs)
    if conll18_systems:
        out["conll18"] = {s: conll18.conll18_counts(key, words[s]) for s in conll18_systems}
    return out


def _tag(df: pl.DataFrame, corpus: str, view: str, punct: bool, options: str) -> pl.DataFrame:
    return df.with_columns(pl.lit(corpus).alias("corpus"), pl.lit(view).alias("view"),
                           pl.lit(punct).alias("punct"), pl.lit(options).alias("options"))


class Folder:
    """Sums shard results into one accumulator per key as they arrive."""

    def __init__(self, merge: Callable[[object, list], Any]) -> None:
        self.merge, self.acc = merge, {}

    def __call__(self, result: dict) -> None:
        for key, part in result.items():
            self.acc[key] = self.merge(key, [self.acc[key], part]) if key in self.acc else part


def _merge_compare(key: object, parts: list[dict[str, pl.DataFrame]]) -> dict:
    """Sum two shard results of one view setting, or of the CoNLL 2018 counts."""
    if key == "conll18":
        return {s: reduce.sum_counts([p[s] for p in parts], ["metric"]) for s in parts[0]}
    return tokens.merge_partials(parts)


def reduce_priors(merged: dict, systems: list[str]) -> dict:
    """Tie order of the majority vote and gold label frequencies, per view setting."""
    return {key: (tokens.priority_from_scores(m["scores"], systems),
                  dict(zip(m["gold"]["gold_label"], m["gold"]["n"], strict=True)))
            for key, m in merged.items()}


def compare_tokens(spec: RunSpec, stage: Staging) -> None:
    """Every token table for all systems of the corpus; only stale partitions are rewritten."""
    sysdf = corpus_systems(stage, spec.corpus)
    key_row = sysdf.filter(pl.col("role") == "key").row(0, named=True)
    rows = sysdf.filter(pl.col("role") == "system")
    systems, shas = rows["system"].to_list(), dict(zip(rows["system"], rows["sha256"],
                                                       strict=True))
    fmt, corpus = key_row["format"], spec.corpus
    opts = (sorted(spec.mappings.items()), spec.ar_trials, spec.seed, spec.task)
    sys_sig = {s: signature(key_row["sha256"], shas[s], opts) for s in systems}
    pair_sig = {(a, b): signature(key_row["sha256"], shas[a], shas[b], opts)
                for i, a in enumerate(systems) for b in systems[i + 1:]}
    all_sig = signature(key_row["sha256"], sorted(shas.items()), opts)
    todo_sys = [s for s in systems if not stage.has("scores", partition(corpus, s), sys_sig[s])]
    todo_pairs = [p for p, sig in pair_sig.items()
                  if not stage.has("pairs", f"corpus={corpus}/pair={p[0]}~{p[1]}", sig)]
    todo_all = not stage.has("oracles", f"corpus={corpus}", all_sig)
    if not (todo_sys or todo_pairs or todo_all):
        return
    unit_paths = {s: str(_units_path(stage, corpus, s)) for s in [KEY_ID, *systems]}
    sents_path = str(stage.staged_path("sents", partition(corpus, KEY_ID))
                     or stage.live_file("sents", partition(corpus, KEY_ID)))
    crash_point("compare")
    shards = plan_shards(pl.read_parquet(sents_path, columns=["sent", "doc"], glob=False),
                         spec.shard_sents)
    index = {s: i for i, s in enumerate(systems)}
    pairs = [(index[a], index[b]) for a, b in todo_pairs]
    conll = todo_sys if spec.task == "dep" else []
    first = Folder(lambda _key, parts: tokens.merge_priors(parts))
    second = Folder(_merge_compare)
    with progress("compare", 2 * len(shards)) as tick:
        map_fold(lambda sh: shard_priors.submit(spec, systems, unit_paths, fmt, sh), shards,
                 first, tick)
        priors = reduce_priors(first.acc, systems)
        map_fold(lambda sh: shard_compare.submit(spec, systems, unit_paths, fmt, sh, sents_path,
                                                 priors, pairs, conll), shards, second, tick)
    merged = second.acc
    tables = _finalize(spec, systems, merged)
    _stage_per_system(stage, corpus, tables, todo_sys, sys_sig)
    _stage_per_pair(stage, corpus, tables, todo_pairs, pair_sig)
    if todo_all:
        for name in ("oracles", "oracle_labels", "difficulty", "majority"):
            stage.write(name, f"corpus={corpus}", all_sig, tables[name])
    if conll:
        _stage_conll18(stage, corpus, merged["conll18"], conll, sys_sig)


def _finalize(spec: RunSpec, systems: list[str], merged: dict) -> dict[str, pl.DataFrame]:
    """Tagged, sorted tables from the summed partials of every view setting."""
    collected: dict[str, list[pl.DataFrame]] = {}
    for key in [k for k in merged if k != "conll18"]:
        view, punct = key
        tables = tokens.finalize(merged[key], systems, spec.ar_trials, spec.seed)
        options = options_string(view, punct, spec.mappings)
        for name, df in tables.items():
            collected.setdefault(name, []).append(_tag(df, spec.corpus, view, punct, options))
    return {name: canonical(pl.concat(frames, how="diagonal_relaxed"))
            for name, frames in collected.items()}


def canonical(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in a fixed order (by every non-list column), so reruns write identical files."""
    keys = [c for c, t in df.schema.items() if not isinstance(t, pl.List)]
    return df.sort(keys, nulls_last=True)


def _stage_per_system(stage: Staging, corpus: str, tables: dict[str, pl.DataFrame],
                      todo: list[str], sigs: dict[str, str]) -> None:
    for s in todo:
        for name in ("scores", "labels", "buckets"):
            if name in tables:
                stage.write(name, partition(corpus, s), sigs[s],
                            tables[name].filter(pl.col("system") == s))


def _stage_per_pair(stage: Staging, corpus: str, tables: dict[str, pl.DataFrame],
                    todo: list[tuple[str, str]], sigs: dict) -> None:
    for a, b in todo:
        both = pl.col("sys1").is_in([a, b]) & pl.col("sys2").is_in([a, b])
        for name in ("pairs", "changes", "bucket_pairs"):
            if name in tables:
                stage.write(name, f"corpus={corpus}/pair={a}~{b}", sigs[(a, b)],
                            tables[name].filter(both))


def _stage_conll18(stage: Staging, corpus: str, counts_by_system: dict[str, pl.DataFrame],
                   todo: list[str], sigs: dict) -> None:
    for s in todo:
        counts = counts_by_system[s]
        df = counts.join(conll18.conll18_scores(counts), on="metric").with_columns(
            pl.lit(corpus).alias("corpus"), pl.lit(s).alias("system"))
        stage.write("conll18", partition(corpus, s), sigs[s], df)
