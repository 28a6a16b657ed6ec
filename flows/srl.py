"""Prefect flow of the srl task (semantic role labelling): ingest files, score every system
as the official scorers do, compare all systems over argument and predicate units
(METRICS 6).

Ingest reads each file once, in chunks of whole sentences: validates it (a system against
the key's sentences and words, and in the key's mode: head words or spans), maps its roles
(``--map``), and stages its predicates (``srl_predicates``), arguments (``srl_arguments``),
sentences (``sents``) and, for the key, its words (``srl_tokens``: forms, PPOS, HEAD) while
hashing it. Compare maps one task over shards of whole documents of the key: each returns
the additive counts of :mod:`sysdiff.transforms.srl` and the class rows of its units, which
are streamed into ``srl_classes``; the fold sums the counts in shard order, so every table is
the same whatever the shard size. Signatures carry the content hashes and options, so an
unchanged file is not read again and unchanged results are not recomputed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.ingest import ingest_all
from sysdiff.flows.progress import notice, progress
from sysdiff.flows.shards import map_fold, shard_plan
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.store import location, read_parquet, scan_parquet
from sysdiff.flows.warehouse import (
    PieceWriters,
    StagedFile,
    Staging,
    corpus_partition,
    crash_point,
    known_inputs,
    partition,
    signature,
    stage_frame,
    systems_row,
    unchanged,
    with_literals,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import StableFile
from sysdiff.schemas.frozen import freeze_fields
from sysdiff.transforms import srl as T
from sysdiff.transforms import srl_tables as R
from sysdiff.transforms.plan import Shard

FILE_TABLES = ("srl_predicates", "srl_arguments", "sents")
FORMAT_NAMES = {"conllu": "CoNLL-U (Universal PropBank)", "conll09": "CoNLL-2009",
                "conll05": "CoNLL-2005", "props": "CoNLL-2005 props"}


def options_string(spec: RunSpec, mode: str) -> str:
    """What produced a row: the argument mode, the bootstrap settings of its intervals and
    the role mappings (the srl tables with an ``options`` column all have intervals)."""
    maps = ";".join(f"{s}:" + ",".join(f"{a}>{b}" for a, b in sorted(m.items()))
                    for s, m in sorted(spec.mappings.items()) if m)
    return f"mode:{mode}|{spec.intervals.options()}|map:{maps or 'none'}"


@dataclass(frozen=True)
class SrlFile:
    """One ingested file: where its tables lie (its ``systems`` row too), its format and the
    signature of its ingest (content, format, mapping and, for a system, the key's); plain,
    immutable values (a task's result and another's parameter)."""

    system: str
    sig: str
    fmt: str
    preds: str
    args: str
    sents: str
    tokens: str | None
    systems: str
    staged: tuple[StagedFile, ...] = ()

    def row(self) -> pl.DataFrame:
        return read_parquet(self.systems, glob=False)

    @property
    def mode(self) -> str:
        from sysdiff.schemas.formats.srl import mode_of

        return mode_of(self.fmt)


def _mapping(spec: RunSpec, sid: str) -> dict[str, str]:
    return dict(spec.mappings.get("@key" if sid == KEY_ID else sid, {}))


def ingest_signature(spec: RunSpec, sid: str, sha: str, fmt: str, key_sig: str | None) -> str:
    return signature(sha, fmt, "srl", sorted(_mapping(spec, sid).items()), key_sig)


def _mapped(args: pl.DataFrame, mapping: dict[str, str]) -> pl.DataFrame:
    """Roles after the run's mapping (``OLD=NEW``)."""
    if not mapping:
        return args
    return args.with_columns(role=pl.col("role").replace(mapping))


class KeyWords:
    """The key's staged words, read back one chunk's sentences at a time (the word check)."""

    def __init__(self, key: SrlFile) -> None:
        self.path = key.tokens
        self.sents = read_parquet(key.sents, columns=["sent", "sent_id", "n_words", "line"],
                                     glob=False)

    def words(self, lo: int, hi: int) -> pl.DataFrame:
        return (scan_parquet(self.path, glob=False)
                .filter(pl.col("sent").is_between(lo, hi)).select("sent", "id", "form")
                .collect())


def _check_mode(spec: RunSpec, source: Source, fmt: str, key: SrlFile | None) -> None:
    """A system gives its arguments the way the key does (head words or spans)."""
    from sysdiff.schemas.formats.srl import mode_of

    if key is not None and mode_of(fmt) != key.mode:
        raise InputError(
            f"{FORMAT_NAMES[fmt]} gives arguments as {mode_of(fmt)}s but the key "
            f"({FORMAT_NAMES[key.fmt]}) as {key.mode}s; expected a system in the key's mode "
            f"({'CoNLL-U or CoNLL-2009' if key.mode == 'head' else 'CoNLL-2005'})",
            source.path)


@dataclass(frozen=True)
class SrlIngest:
    """One SRL file to ingest (a task's only parameter)."""

    spec: RunSpec
    source: Source
    role: str
    stage_dir: str
    key: SrlFile | None
    at: dt.datetime


@task(name="ingest", task_run_name="ingest {job.spec.corpus} {job.source.id}",
      cache_policy=NONE)
def ingest_srl_file(job: SrlIngest) -> SrlFile:
    """Read, validate, map and stage one SRL file in one pass (see the module)."""
    from sysdiff.schemas.formats.conllu import WordCheck
    from sysdiff.schemas.formats.srl import iter_srl

    spec, source, key = job.spec, job.source, job.key
    sid, corpus = source.id, spec.corpus
    part = partition(corpus, sid)
    mapping = _mapping(spec, sid)
    key_words = KeyWords(key) if key is not None else None
    check = None if key is None else WordCheck(str(spec.key.path), key_words.sents,
                                               str(source.path))
    fmt = source.fmt
    n_sents = n_tokens = n_args = n_docs = 0
    tables = (*FILE_TABLES, "srl_tokens") if key is None else FILE_TABLES
    # one version of the file: hash, rows, stamp; the staged files dropped on an error
    with StableFile(source.path) as file, PieceWriters(job.stage_dir, part) as writers:
        for chunk in iter_srl(file, source.fmt):
            if not writers.opened:
                fmt = chunk.fmt
                _check_mode(spec, source, fmt, key)
                writers.open(tables)
            if check is not None:
                lo, hi = int(chunk.sents["sent"][0]), int(chunk.sents["sent"][-1])
                check.add(chunk, key_words.words(lo, hi))
            args = _mapped(chunk.args, mapping)
            n_sents += chunk.sents.height
            n_tokens += chunk.tokens.height
            n_args += args.height
            n_docs = int(chunk.sents["doc"][-1]) + 1
            tag = {"corpus": corpus, "system": sid}
            writers.append("srl_predicates", with_literals(chunk.preds, **tag))
            writers.append("srl_arguments", with_literals(args, **tag))
            writers.append("sents", with_literals(chunk.sents, **tag))
            if key is None:
                writers.append("srl_tokens", with_literals(chunk.tokens, **tag))
        if check is not None:
            check.finish()
        sha = file.sha256  # of the bytes parsed; the reader checked it is unchanged
        sig = ingest_signature(spec, sid, sha, fmt, key.sig if key else None)
        staged = writers.close(sig)
    row = systems_row(spec, source, job.role, sha, fmt, n_docs, n_sents, n_args,
                      n_tokens=n_tokens, at=job.at, stamp=file.stamp)
    staged["systems"] = stage_frame(job.stage_dir, "systems", part, sig, row)
    here = {t: str(location(job.stage_dir) / f.rel) for t, f in staged.items()}
    return SrlFile(sid, sig, fmt, here["srl_predicates"], here["srl_arguments"],
                   here["sents"], here.get("srl_tokens"), here["systems"],
                   tuple(staged.values()))


def _live(stage: Staging, corpus: str, row: dict, sig: str) -> SrlFile:
    """A file ingested by an earlier run, as the warehouse holds it."""
    part = partition(corpus, row["system"])
    is_key = row["system"] == KEY_ID
    return SrlFile(row["system"], sig, row["format"],
                   *(str(stage.live_file(t, part)) for t in ("srl_predicates", "srl_arguments",
                                                              "sents")),
                   str(stage.live_file("srl_tokens", part)) if is_key else None,
                   str(stage.live_file("systems", part)))


def ingest_srl(spec: RunSpec, stage: Staging) -> dict[str, SrlFile]:
    """Ingest the key, then the systems (several at once): an unchanged file (same path,
    size, time, and the same options and key) is not read again."""
    known = known_inputs(stage, spec.corpus)

    def reuse(source: Source, role: str, key: SrlFile | None) -> SrlFile | None:
        row, part = known.get(source.id), partition(spec.corpus, source.id)
        sig = None if row is None else ingest_signature(
            spec, source.id, row["sha256"], row["format"], key.sig if key else None)
        tables = FILE_TABLES + (("srl_tokens",) if key is None else ())
        if unchanged(row, source.path) and all(stage.has(t, part, sig) for t in tables):
            return _live(stage, spec.corpus, row, sig)
        return None

    def submit(source: Source, role: str, key: SrlFile | None, at: dt.datetime):
        return ingest_srl_file.submit(SrlIngest(spec, source, role, str(stage.dir), key, at))

    return ingest_all(spec, stage, reuse, submit)


# ------------------------------------------------------------------------------ compare


@dataclass(frozen=True)
class SrlJob:
    """What every shard task needs (small and picklable)."""

    mode: str
    tokens: str
    preds: dict[str, str]
    args: dict[str, str]
    systems: list[str]
    vocab: T.Vocab
    compare: bool
    key_path: str
    #: count the per-sentence score rows of the bootstrap intervals
    per_sentence: bool = False

    def __post_init__(self) -> None:
        freeze_fields(self)  # a task parameter: nothing in it can change


def _read(path: str, shard: Shard, columns: list[str], by: list[str]) -> pl.DataFrame:
    """A table's rows of a shard's sentences, in file order."""
    return (scan_parquet(path, glob=False)
            .filter(pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select(columns).collect().sort(by))


PRED_READ = ["sent", "pred", "roleset", "sense_key", "pos"]
ARG_READ = ["sent", "pred", "start", "end", "pieces", "role"]


@task(name="compare srl", task_run_name="srl {shard.index}", cache_policy=NONE, retries=2)
def srl_shard(job: SrlJob, shard: Shard) -> tuple[T.SrlCounts, list[pl.DataFrame]]:
    """The map: additive counts of one shard and each system's class rows."""
    def preds(s: str) -> pl.DataFrame:
        return _read(job.preds[s], shard, PRED_READ, ["sent", "pred"])

    def args(s: str) -> pl.DataFrame:
        return _read(job.args[s], shard, ARG_READ, ["sent", "pred", "start", "role"])

    data = T.ShardData(job.mode, shard.lo, shard.hi - shard.lo,
                       _read(job.tokens, shard, ["sent", "id", "head", "pos", "line"],
                             ["sent", "id"]),
                       preds(KEY_ID), args(KEY_ID), [(preds(s), args(s)) for s in job.systems])
    try:
        return T.comparison_counts(data, job.vocab, job.compare, job.per_sentence)
    except InputError as e:  # a cycle in the key's HEAD tree: name the key's file
        raise InputError(e.message, job.key_path, e.line) from None


def corpus_vocab(mode: str, files: dict[str, SrlFile]) -> T.Vocab:
    """Every role of the corpus' files (``V`` is no argument in span mode) and every PPOS
    of the key's words, sorted: the group codes, equal in every shard."""
    roles = (pl.concat([scan_parquet(f.args, glob=False).select("role")
                        for f in files.values()]).unique().collect()["role"].to_list())
    roles = sorted(set(roles) - ({"V"} if mode == "span" else set()))
    pos = (scan_parquet(files[KEY_ID].tokens, glob=False).select(pl.col("pos").fill_null("_"))
           .unique().collect()["pos"].to_list())
    return T.Vocab(tuple(roles), tuple(sorted(set(pos) | {"_"})))


def run_srl(spec: RunSpec, stage: Staging) -> None:
    """The srl task: ingest, then every SRL table."""
    compare_srl(spec, stage, ingest_srl(spec, stage))


def compare_srl(spec: RunSpec, stage: Staging, files: dict[str, SrlFile]) -> None:
    """Scores and classes of every stale system; pairs, changes, transitions and oracles of
    the run's systems when any input or option changed."""
    corpus = spec.corpus
    systems = [s.id for s in spec.systems if s.id in files]
    opts = (spec.ar_trials, spec.seed, spec.intervals.options())
    sigs = {s: signature(files[s].sig, "srl-results", spec.intervals.options())
            for s in systems}
    all_sig = signature(sorted((s, files[s].sig) for s in systems), opts, "srl-compare")
    score = [s for s in systems if not stage.has("srl_scores", partition(corpus, s), sigs[s])]
    compare = bool(systems) and not stage.has("srl_oracles", corpus_partition(corpus), all_sig)
    if score or compare:
        _compute(spec, stage, files, systems, score, compare, sigs, all_sig)
    stage_history(spec, stage, "srl", all_sig)


def _key_notes(mode: str, key: SrlFile) -> None:
    """Say once what the key cannot give (no number without data)."""
    if mode != "head":
        return
    heads = scan_parquet(key.tokens, glob=False).select(
        pl.col("head").is_not_null().any()).collect().item()
    if not heads:
        notice("the key has no HEAD column (all '_'): the boundary class (the role on another "
               "word of the argument's subtree) cannot occur; arguments are correct, role or "
               "missed")


def _compute(spec: RunSpec, stage: Staging, files: dict[str, SrlFile], systems: list[str],
             score: list[str], compare: bool, sigs: dict[str, str], all_sig: str) -> None:
    """Map the shards, stream the class rows of the stale systems, reduce and stage."""
    corpus = spec.corpus
    crash_point("compare")
    key = files[KEY_ID]
    mode = key.mode
    _key_notes(mode, key)
    key_sents = read_parquet(key.sents, columns=["sent", "doc", "n_words"], glob=False)
    shards = shard_plan(key_sents, spec.shard_sents, 1 + len(systems))
    vocab = corpus_vocab(mode, files)
    job = SrlJob(mode, str(key.tokens), {s: str(files[s].preds) for s in [KEY_ID, *systems]},
                 {s: str(files[s].args) for s in [KEY_ID, *systems]}, systems, vocab, compare,
                 str(spec.key.path), spec.intervals.on)
    with contextlib.ExitStack() as stack, progress("compare", len(shards)) as tick:
        fold = _Fold(systems, {s: stack.enter_context(stage.writer(
            "srl_classes", partition(corpus, s), sigs[s])) for s in score}, corpus)
        map_fold(lambda sh: srl_shard.submit(job, sh), shards, fold, tick)
    c = fold.total
    options = options_string(spec, mode)
    ci = spec.intervals
    samples = R.f1_samples(c, len(systems), key_sents.select("sent").sort("sent"), ci) \
        if ci.on else None
    scores = R.scores_table(c, systems, samples, ci.confidence).with_columns(
        options=pl.lit(options))
    for s in score:
        stage.write("srl_scores", partition(corpus, s), sigs[s],
                    with_literals(scores.filter(pl.col("system") == s), corpus=corpus))
    if not compare:
        return
    part = corpus_partition(corpus)
    tag = {"corpus": corpus, "mode": mode}
    stage.write("srl_oracles", part, all_sig, with_literals(R.oracle_rows(c, systems, vocab),
                                                            **tag))
    if len(systems) < 2:
        return
    stage.write("srl_pairs", part, all_sig, with_literals(
        R.pair_rows(c, systems, spec.ar_trials, spec.seed, samples, ci.confidence), **tag,
        options=options))
    stage.write("srl_changes", part, all_sig,
                with_literals(R.change_rows(c, systems, vocab), **tag))
    stage.write("srl_transitions", part, all_sig,
                with_literals(R.transition_rows(c, systems, vocab), **tag))


class _Fold:
    """Sums the shards' counts in shard order and streams the class rows of the systems
    whose tables are recomputed."""

    def __init__(self, systems: list[str], writers: dict[str, Callable], corpus: str) -> None:
        self.index = {s: i for i, s in enumerate(systems)}
        self.writers, self.corpus = writers, corpus
        self.total: T.SrlCounts | None = None

    def __call__(self, result: tuple[T.SrlCounts, list[pl.DataFrame]]) -> None:
        counts, rows = result
        self.total = counts if self.total is None else self.total.merge(counts)
        for s, append in self.writers.items():
            append(with_literals(rows[self.index[s]], corpus=self.corpus, system=s))
