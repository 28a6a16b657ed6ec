"""Prefect flows for token-level tasks (pos, dep): ingest files, compare all systems.

Ingest streams each file in chunks of whole sentences into Parquet, with the label counts
of each column (``vocab``). Compare maps one task over shards of whole documents: it reads
the shard's words once and returns the engine's additive counts for every view; the counts
are folded into running sums as shards finish. Tasks exchange paths and sentence ranges,
never big frames. Each result partition carries a signature of its inputs' content hashes
and options, so an unchanged partition is never recomputed and a new system only adds its
own rows and its pairs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.ingest import ingest_all
from sysdiff.flows.progress import notice, progress
from sysdiff.flows.shards import map_fold
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.warehouse import (
    ROW_GROUP,
    Staging,
    corpus_partition,
    crash_point,
    known_inputs,
    pair_partition,
    partition,
    read_table,
    signature,
    systems_row,
    unchanged,
    with_literals,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import KIND_WORD, WordCheck, iter_conll
from sysdiff.schemas.formats.stable import StableFile
from sysdiff.schemas.vocabulary import TASK_VIEWS, VIEWS, score_name
from sysdiff.transforms import bootstrap, conll18, reduce, tokens
from sysdiff.transforms.alignment import (
    Text,
    align_words,
    file_text,
    first_difference,
    project,
    token_at,
    token_count,
)
from sysdiff.transforms.bootstrap import UnitRows
from sysdiff.transforms.plan import Shard, canonical, options_string, plan_shards
from sysdiff.transforms.tokens import (
    BLANK,
    WORD_COLUMNS,
    ShardWords,
    Vocab,
    apply_mapping,
    label_counts,
    vocab_from_counts,
)

log = logging.getLogger("sysdiff")
VOCAB_COLUMNS = ("upos", "xpos", "feats", "lemma", "head", "deprel")
PAIR_TABLES = ("pairs", "changes", "bucket_pairs")
#: The tables with bootstrap intervals: their ``options`` say how they were drawn.
INTERVAL_TABLES = ("scores", "pairs")
#: Pairs counted in one pass over the shards: bounds the change cells held in memory.
PAIRS_PER_BLOCK = 256
CORPUS_TABLES = ("oracles", "oracle_labels", "difficulty", "majority")


@dataclass(frozen=True)
class Ingested:
    """Where one ingested file lives and what it holds: its ``systems`` row and label counts
    (``vocab``) travel with it, so the comparison does not read back what was just written."""

    system: str
    sha256: str
    fmt: str
    units: Path
    sents: Path
    row: pl.DataFrame
    vocab: pl.DataFrame


@task(name="ingest", task_run_name="ingest {spec.corpus} {source.id}", cache_policy=NONE)
def ingest_file(spec: RunSpec, source: Source, role: str, stage: Staging,
                key: Ingested | None, at: dt.datetime | None = None) -> Ingested:
    """Read and validate one file chunk by chunk, check it against the key, stage its units,
    sentences and label counts as it goes, and hash it on the way: one read of the file,
    memory bounded by the chunk size. Only paths and small frames leave the task."""
    sid = source.id
    part = partition(spec.corpus, sid)
    check = None if key is None else WordCheck(str(spec.key.path), _key_sents(key),
                                               str(source.path))
    fmt, n_sents, n_units, n_docs, n_tokens = source.fmt, 0, 0, 0, 0
    vocab = []
    pending = f"read-{uuid.uuid4().hex[:16]}"  # the signature needs the hash: known at the end
    with contextlib.ExitStack() as files:
        file = files.enter_context(StableFile(source.path))  # one version: hash, rows, stamp
        for chunk in iter_conll(file, source.fmt):
            if not vocab:
                fmt = chunk.fmt
                units = files.enter_context(stage.writer("units", part, pending))
                sents = files.enter_context(stage.writer("sents", part, pending))
            if check is not None:
                check.add(chunk, _key_words(key, chunk.sents))
            units(with_literals(chunk.tokens, corpus=spec.corpus, system=sid))
            sents(with_literals(chunk.sents, corpus=spec.corpus, system=sid))
            vocab.append(label_counts(chunk.words))
            n_sents, n_units = n_sents + chunk.sents.height, n_units + chunk.words.height
            n_tokens += token_count(chunk.tokens)
            n_docs = int(chunk.sents["doc"][-1]) + 1
    sha = file.sha256  # of the bytes parsed; the reader checked the file is unchanged
    sig = _ingest_signature(sha, fmt, role, key.sha256 if key else None)
    for table in ("units", "sents"):
        stage.sign(table, part, sig)
    mismatch = None if check is None else check.difference()
    if mismatch is None:
        counts = pl.concat(vocab).group_by("field", "label").agg(pl.col("n").sum())
        words, alignment = stage.staged_path("units", part), "identical"
    else:  # another tokenisation: aligned with the key on the characters, or an error
        try:
            projected = align_with_key(spec, source, key, stage.staged_path("units", part),
                                       mismatch, stage, sig)
        except InputError:  # nothing of a bad file is committed (--keep-going skips it)
            stage.discard(part, ("units", "sents"))
            raise
        counts, alignment = label_counts(projected), "characters"
        words = stage.write("aligned", part, sig, with_literals(projected, corpus=spec.corpus,
                                                                system=sid))
    counts = with_literals(counts, corpus=spec.corpus, system=sid)
    row = systems_row(spec, source, role, sha, fmt, n_docs, n_sents, n_units, n_tokens,
                      alignment, at, file.stamp)
    stage.write("vocab", part, sig, counts)
    stage.write("systems", part, sig, row)
    return Ingested(sid, sha, fmt, words, stage.staged_path("sents", part), row, counts)


def align_with_key(spec: RunSpec, source: Source, key: Ingested, units: Path,
                   mismatch: InputError, stage: Staging, sig: str) -> pl.DataFrame:
    """A system whose words differ from the key's: when its text (characters without
    spaces) is the key's, its words aligned with the key's as the CoNLL 2018 script aligns
    them (its CoNLL 2018 scores staged now); else an error at the first differing
    character."""
    key_tokens = pl.read_parquet(key.units, glob=False)
    sys_tokens = pl.read_parquet(units, glob=False)
    key_text, sys_text = file_text(key_tokens), file_text(sys_tokens)
    at = first_difference(key_text.chars, sys_text.chars)
    if at is not None:
        raise text_difference(spec, source, key_text, sys_text, at, mismatch)
    to_key = align_words(key_text, sys_text)
    counts = conll18.aligned_counts(key_tokens, sys_tokens, to_key, key_text, sys_text)
    scores = conll18.task_rows(counts.join(conll18.conll18_scores(counts), on="metric"),
                               spec.task, _absent_columns(key.vocab).get(KEY_ID, set()))
    stage.write("conll18", partition(spec.corpus, source.id), sig,
                with_literals(scores, corpus=spec.corpus, system=source.id))
    key_words = key_tokens.filter(pl.col("kind") == KIND_WORD)
    return project(key_words, sys_tokens.filter(pl.col("kind") == KIND_WORD), to_key,
                   key_text, sys_text)


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


def _live(stage: Staging, corpus: str, row: dict) -> Ingested:
    """A file ingested by an earlier run, as the warehouse holds it (the words a system
    tokenised otherwise is compared on are its aligned words)."""
    part = partition(corpus, row["system"])
    mine = (pl.col("corpus") == corpus) & (pl.col("system") == row["system"])
    words = "aligned" if row.get("alignment") == "characters" else "units"
    return Ingested(row["system"], row["sha256"], row["format"],
                    stage.live_file(words, part), stage.live_file("sents", part),
                    stage.read("systems", mine), stage.read("vocab", mine))


def _key_sents(key: Ingested) -> pl.DataFrame:
    """The key's sentences as :class:`WordCheck` reads them."""
    return pl.read_parquet(key.sents, columns=["sent", "sent_id", "n_words", "line"], glob=False)


def _key_words(key: Ingested, sents: pl.DataFrame) -> pl.DataFrame:
    """The key's words of the sentences in ``sents`` (a contiguous range)."""
    lo, hi = int(sents["sent"][0]), int(sents["sent"][-1])
    return (pl.scan_parquet(key.units, glob=False)
            .filter((pl.col("kind") == KIND_WORD) & pl.col("sent").is_between(lo, hi))
            .select("sent", "id", "form").collect())


def run_tokens(spec: RunSpec, stage: Staging) -> None:
    """A token task (pos, dep): ingest the files, then compute every table."""
    compare_tokens(spec, stage, ingest_tokens(spec, stage))


def ingest_tokens(spec: RunSpec, stage: Staging) -> dict[str, Ingested]:
    """Ingest the key, then the systems (several at once): an unchanged file is not read
    again; any other is read once (validated, staged and hashed in one pass)."""
    known = known_inputs(stage, spec.corpus)

    def reuse(source: Source, role: str, key: Ingested | None) -> Ingested | None:
        row = known.get(source.id)
        sig = None if row is None else _ingest_signature(
            row["sha256"], row["format"], role, key.sha256 if key else None)
        if unchanged(row, Path(source.path)) and stage.has(
                "vocab", partition(spec.corpus, source.id), sig):
            return _live(stage, spec.corpus, row)
        return None

    def read(source: Source, role: str, key: Ingested | None, at: dt.datetime) -> Ingested:
        return ingest_file(spec, source, role, stage, key, at)

    return ingest_all(spec, stage, reuse, read)


def corpus_systems(stage: Staging, corpus: str, ingested: dict[str, Ingested]
                   ) -> pl.DataFrame:
    """Every system of a corpus (ingested now, or earlier with the same key), in ingest
    order."""
    live = read_table(stage.root, "systems", stage.manifest, pl.col("corpus") == corpus)
    now = [i.row for i in ingested.values()]
    df = pl.concat([live, *now], how="diagonal_relaxed")
    return df.unique("system", keep="last").sort("ingested_at", "system")


def _path(stage: Staging, table: str, corpus: str, system: str) -> str:
    part = partition(corpus, system)
    return str(stage.staged_path(table, part) or stage.live_file(table, part))


# ------------------------------------------------------------------------------ compare


@dataclass(frozen=True)
class CompareJob:
    """What every shard task needs (small and picklable: paths, names, codes, options)."""

    systems: list[str]
    unit_paths: dict[str, str]
    sents_path: str
    fmt: str
    views: list[str]
    vocab: Vocab
    mappings: dict[str, dict[str, str]]
    pairs: list[tuple[int, int]] | None
    with_corpus: bool
    conll18: list[str]
    #: systems tokenised otherwise (their words are the key's words aligned with theirs)
    by_chars: list[str]
    #: per system of the key's tokenisation: its tokens, sentences and words
    segments: dict[str, tuple[int, int, int]]
    #: the key's label columns that are ``_`` in every word
    key_blank: set[str]
    #: the task scores trees (dep): CoNLL 2018 counts UAS ... BLEX too
    tree: bool = True
    #: count the per-sentence rows of the bootstrap intervals
    per_sentence: bool = False


def read_shard_words(path: str, shard: Shard, aligned: bool = False) -> pl.DataFrame:
    """The words of one shard (row groups outside the sentence range are skipped); with
    ``aligned``, from a system's aligned words, their ``aligned`` flag too."""
    return (pl.scan_parquet(path, glob=False)
            .filter((pl.col("kind") == KIND_WORD)
                    & pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select(WORD_COLUMNS + ["aligned"] * aligned).collect())


def shard_lengths(sents_path: str, shard: Shard) -> np.ndarray:
    """Words per sentence of the shard's sentences, in order."""
    rows = (pl.scan_parquet(sents_path, glob=False)
            .filter(pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select("sent", "n_words").collect().sort("sent"))
    return rows["n_words"].to_numpy().astype(np.int64)


@task(name="compare", task_run_name="compare {shard.index}", cache_policy=NONE, retries=2)
def shard_compare(job: CompareJob, shard: Shard) -> dict:
    """Every additive count of one shard (each file read once), for every view setting."""
    key = read_shard_words(job.unit_paths[KEY_ID], shard)
    words = {s: read_shard_words(job.unit_paths[s], shard, s in job.by_chars)
             for s in job.systems}
    out: dict[Any, Any] = {}
    if job.conll18:
        gold = conll18.normalised_key(key)
        if job.per_sentence:  # the shard's counts are the sums of its sentences' rows
            rows = {s: conll18.sentence_counts(key, words[s], gold, job.tree, shard.lo,
                                               shard.hi - shard.lo) for s in job.conll18}
            out["conll18"] = {s: conll18.sentence_totals(r, job.tree) for s, r in rows.items()}
            out["conll18_sents"] = {s: UnitRows.of(shard.lo, r) for s, r in rows.items()}
        else:
            out["conll18"] = conll18_of_shard(job, key, words, gold)
    mapped = ShardWords(
        key=apply_mapping(key, job.mappings.get("@key", {})),
        systems=[apply_mapping(words[s], job.mappings.get(s, {})) for s in job.systems],
        first_sent=shard.lo, n_sents=shard.hi - shard.lo,
        sent_lengths=shard_lengths(job.sents_path, shard), fmt=job.fmt,
        aligned=aligned_matrix(job, words, key.height))
    out.update(tokens.shard_counts(mapped, job.views, job.vocab, job.pairs, job.with_corpus,
                                   job.per_sentence))
    return out


def conll18_of_shard(job: CompareJob, key: pl.DataFrame, words: dict[str, pl.DataFrame],
                     gold: pl.DataFrame | None = None) -> dict[str, pl.DataFrame]:
    """The CoNLL 2018 counts of the shard's systems of the key's tokenisation (the key
    normalised once, or given as ``gold``; a tagging task skips the tree's metrics)."""
    gold = conll18.normalised_key(key) if gold is None else gold
    count = conll18.conll18_counts if job.tree else conll18.tag_counts
    return {s: count(key, words[s], gold) for s in job.conll18}


def aligned_matrix(job: CompareJob, words: dict[str, pl.DataFrame], n_words: int
                   ) -> np.ndarray | None:
    """(systems, words): which key words each system has a word aligned with (None when
    every system has the key's tokenisation)."""
    if not job.by_chars:
        return None
    out = np.ones((len(job.systems), n_words), bool)
    for i, s in enumerate(job.systems):
        if s in job.by_chars:
            out[i] = words[s]["aligned"].to_numpy()
    return out


class Folder:
    """Sums shard results into one accumulator per key as they arrive."""

    def __init__(self, merge: Callable[[object, Any, Any], Any]) -> None:
        self.merge, self.acc = merge, {}

    def __call__(self, result: dict) -> None:
        for key, part in result.items():
            self.acc[key] = self.merge(key, self.acc[key], part) if key in self.acc else part


def _merge(key: object, acc: Any, part: Any) -> Any:
    """Sum two shard results of one view setting, or of the CoNLL 2018 counts."""
    if key == "conll18":
        return {s: reduce_sum([acc[s], part[s]], ["metric"]) for s in acc}
    if key == "conll18_sents":
        return {s: acc[s].merge(part[s]) for s in acc}
    return acc.merge(part)


def reduce_sum(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """Sum count frames by ``keys``."""
    df = pl.concat(frames)
    return df.group_by(keys, maintain_order=True).agg(pl.exclude(keys).sum())


def evaluated_views(task: str, vocab_rows: pl.DataFrame) -> tuple[list[str], dict, list[str]]:
    """The views the key can score (its columns are not all ``_``); for each view the
    systems whose column is all ``_`` (scored, all wrong, flagged ``missing``); and the
    notices that say so, one line per view."""
    absent = _absent_columns(vocab_rows)
    views, missing, notes = [], {}, []
    for view in TASK_VIEWS[task]:
        columns = "/".join(c.upper() for c in VIEWS[view].columns)
        if set(VIEWS[view].columns) & absent.get(KEY_ID, set()):
            notes.append(f"{view}: the key has no {columns} column (all '_'); not evaluated")
            continue
        views.append(view)
        missing[view] = {s for s, cols in absent.items()
                         if s != KEY_ID and set(VIEWS[view].columns) & cols}
        if missing[view]:
            names = sorted(missing[view])
            notes.append(f"{view}: {len(names)} system(s) have no {columns} column (all '_'): "
                         f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''}; scored "
                         "as not evaluated (NULL scores), flagged 'missing' in scores")
    return views, missing, notes


def _absent_columns(vocab_rows: pl.DataFrame) -> dict[str, set[str]]:
    """system -> the label columns whose every value is ``_``."""
    present = (vocab_rows.filter(pl.col("label") != BLANK)
               .group_by("system").agg(pl.col("field").unique()))
    have = {s: set(cols) for s, cols in present.rows()}
    return {s: set(VOCAB_COLUMNS) - have.get(s, set())
            for s in vocab_rows["system"].unique().to_list()}


def _corpus_vocab(stage: Staging, corpus: str, names: list[str],
                  ingested: dict[str, Ingested]) -> pl.DataFrame:
    """The label counts of the key and every system (those read now travel with them)."""
    frames = [ingested[s].vocab if s in ingested else
              pl.read_parquet(_path(stage, "vocab", corpus, s), glob=False)
              for s in [KEY_ID, *names]]
    return pl.concat(frames, how="diagonal_relaxed")


def compare_tokens(spec: RunSpec, stage: Staging, ingested: dict[str, Ingested]) -> None:
    """Every token table for all systems of the corpus; only stale partitions are rewritten."""
    corpus = spec.corpus
    sysdf = corpus_systems(stage, corpus, ingested)
    key_row = sysdf.filter(pl.col("role") == "key").row(0, named=True)
    rows = sysdf.filter(pl.col("role") == "system")
    systems = rows["system"].to_list()
    shas = dict(zip(rows["system"], rows["sha256"], strict=True))
    opts = (sorted(spec.mappings.items()), spec.ar_trials, spec.seed, spec.task,
            spec.intervals.options())
    sys_sig = {s: signature(key_row["sha256"], shas[s], opts) for s in systems}
    pair_sig = {(a, b): signature(key_row["sha256"], shas[a], shas[b], opts)
                for i, a in enumerate(systems) for b in systems[i + 1:]}
    all_sig = signature(key_row["sha256"], sorted(shas.items()), opts)
    todo_sys = [s for s in systems if not stage.has("scores", partition(corpus, s), sys_sig[s])]
    todo_pairs = [p for p, sig in pair_sig.items()
                  if not stage.has("pairs", pair_partition(corpus, *p), sig)]
    todo_all = not stage.has("oracles", corpus_partition(corpus), all_sig)
    vocab_rows = _corpus_vocab(stage, corpus, systems, ingested)
    views, missing, notes = evaluated_views(spec.task, vocab_rows)
    if not (todo_sys or todo_pairs or todo_all) or not views:
        stage_history(spec, stage, "tokens", all_sig)
        return
    for note in notes:  # said when the tables are computed, not on every rerun
        notice(note)
    crash_point("compare")
    sents_path = _path(stage, "sents", corpus, KEY_ID)
    key_sents = pl.read_parquet(sents_path, columns=["sent", "doc"], glob=False)
    shards = plan_shards(key_sents, spec.shard_sents)
    index = {s: i for i, s in enumerate(systems)}
    by_chars = rows.filter(pl.col("alignment") == "characters")["system"].to_list()
    job = CompareJob(
        systems=systems,
        unit_paths={s: _path(stage, "aligned" if s in by_chars else "units", corpus, s)
                    for s in [KEY_ID, *systems]},
        sents_path=sents_path, fmt=key_row["format"], views=views,
        vocab=vocab_from_counts(vocab_rows, spec.mappings),
        mappings={k: dict(v) for k, v in spec.mappings.items()},
        pairs=[(index[a], index[b]) for a, b in todo_pairs], with_corpus=todo_all,
        conll18=[s for s in todo_sys if s not in by_chars],
        by_chars=by_chars,
        segments={s: (n_tok, n_sent, n_word) for s, n_tok, n_sent, n_word in rows.select(
            "system", "n_tokens", "n_sents", "n_units").rows() if s not in by_chars},
        key_blank=_absent_columns(vocab_rows).get(KEY_ID, set()), tree=spec.task == "dep",
        per_sentence=spec.intervals.on)
    blocks = pair_blocks(job.pairs, PAIRS_PER_BLOCK)
    with PairWriter(stage, corpus, todo_pairs, pair_sig) as pair_out, \
            progress("compare", len(shards) * len(blocks)) as tick:
        for k, block in enumerate(blocks):
            part = replace(job, pairs=block, with_corpus=job.with_corpus and k == 0,
                           conll18=job.conll18 if k == 0 else [])
            folder = Folder(_merge)
            map_fold(lambda sh, part=part: shard_compare.submit(part, sh), shards, folder, tick)
            out = Outputs(spec, stage, part, folder.acc, missing)
            if k == 0:
                out.per_system(todo_sys, sys_sig)
                if todo_all:
                    out.corpus_wide(all_sig)
                if part.conll18:
                    out.conll18(sys_sig)
            pair_out.write(out)
    stage_history(spec, stage, "tokens", all_sig)


def pair_blocks(pairs: list[tuple[int, int]], size: int) -> list[list[tuple[int, int]]]:
    """The pairs in blocks of ``size``, counted one block per pass over the shards (at least
    one block, so that a run with no pair to count still counts everything else)."""
    return [pairs[k:k + size] for k in range(0, len(pairs), size)] or [[]]


class Outputs:
    """Turns the summed counts of every view setting into staged tables."""

    def __init__(self, spec: RunSpec, stage: Staging, job: CompareJob, acc: dict,
                 missing: dict[str, set[str]]) -> None:
        self.spec, self.stage, self.job, self.acc, self.missing = spec, stage, job, acc, missing
        self.corpus = spec.corpus
        self.tables: dict[str, list[pl.DataFrame]] = {}
        ci = spec.intervals
        samples = bootstrap.accuracy_samples(
            {(v, p): acc[(v, p)].sentences for v in job.views
             for p in VIEWS[v].punct_settings}, ci) if job.per_sentence else {}
        for view in job.views:
            for punct in VIEWS[view].punct_settings:
                tables = tokens.view_tables(acc[(view, punct)], view, job.systems, job.vocab,
                                            spec.ar_trials, spec.seed, subset_ids=True,
                                            missing=missing[view],
                                            samples=samples.get((view, punct)),
                                            confidence=ci.confidence)
                if not acc[(view, punct)].n_units and job.systems:
                    notice(f"{score_name(view, punct)}: the key has no evaluable unit"
                           f"{' (every word is punctuation)' if not punct else ''}; "
                           "not evaluated (NULL scores)")
                for name, df in tables.items():
                    if df.height:
                        self.tables.setdefault(name, []).append(
                            self._tag(df, view, punct, name in INTERVAL_TABLES))

    def _tag(self, df: pl.DataFrame, view: str, punct: bool, ci: bool = False
             ) -> pl.DataFrame:
        return df.with_columns(
            pl.lit(self.corpus).alias("corpus"), pl.lit(view).alias("view"),
            pl.lit(punct).alias("punct"), options=self._options(df, view, punct, ci))

    def _options(self, df: pl.DataFrame, view: str, punct: bool, ci: bool = False
                 ) -> pl.Expr:
        """The options of each row (with the bootstrap settings when ``ci``: a table with
        intervals); ``align:characters`` in those of a system tokenised otherwise (of a
        pair with one; of every row of a table over all systems)."""
        plain = options_string(view, punct, self.spec.mappings,
                               self.spec.intervals.options() if ci else "")
        chars = self.job.by_chars
        if not chars:
            return pl.lit(plain)
        aligned = plain.replace("|map:", "|align:characters|map:", 1)
        named = [c for c in ("system", "sys1", "sys2") if c in df.columns]
        touched = (pl.any_horizontal(pl.col(c).is_in(chars) for c in named) if named
                   else pl.lit(True))
        return pl.when(touched).then(pl.lit(aligned)).otherwise(pl.lit(plain))

    def table(self, name: str) -> pl.DataFrame:
        frames = self.tables.get(name, [])
        return canonical(pl.concat(frames, how="diagonal_relaxed")) if frames else pl.DataFrame()

    def per_system(self, todo: list[str], sigs: dict[str, str]) -> None:
        for name in ("scores", "labels", "buckets"):
            df = self.table(name)
            for s in todo:
                if df.height:
                    self.stage.write(name, partition(self.corpus, s), sigs[s],
                                     df.filter(pl.col("system") == s))

    def corpus_wide(self, sig: str) -> None:
        for name in CORPUS_TABLES:
            df = self.table(name)
            if not df.height:
                continue
            with self.stage.writer(name, corpus_partition(self.corpus), sig) as append:
                if "subset" not in df.columns:
                    append(df)
                    continue
                systems = reduce.subset_systems(self.job.systems)
                for piece in reduce.with_subset_systems(df, systems, ROW_GROUP):
                    append(piece)

    def conll18(self, sigs: dict[str, str]) -> None:
        intervals = self._conll18_intervals()
        for s, counts in self.acc["conll18"].items():
            counts = pl.concat([conll18.segment_counts(*self.job.segments[s]), counts],
                               how="vertical_relaxed")
            df = conll18.task_rows(counts.join(conll18.conll18_scores(counts), on="metric"),
                                   self.spec.task, self.job.key_blank, intervals.get(s)
                                   ).with_columns(
                pl.lit(self.corpus).alias("corpus"), pl.lit(s).alias("system"))
            self.stage.write("conll18", partition(self.corpus, s), sigs[s], df)

    def _conll18_intervals(self) -> dict[str, pl.DataFrame]:
        """system -> (metric, ci_low, ci_high) of the CoNLL 2018 F1s (one pass over the
        bootstrap weights for every system); nothing without per-sentence rows."""
        rows = self.acc.get("conll18_sents")
        if not rows:
            return {}
        ci = self.spec.intervals
        names = list(rows)
        metrics = conll18.sentence_metrics(self.job.tree)
        sums = bootstrap.resample([rows[s].matrix() for s in names], ci)
        return {s: conll18.f1_intervals(x.reshape(ci.samples, len(metrics), 3), metrics,
                                        ci.confidence) for s, x in zip(names, sums, strict=True)}

    def pair_rows(self, name: str) -> Iterator[pl.DataFrame]:
        """The rows of one pair table (pairs, changes, bucket_pairs) of this block's pairs."""
        if name != "changes":
            if self.table(name).height:
                yield self.table(name)
            return
        for view in self.job.views:
            for punct in VIEWS[view].punct_settings:
                for df in tokens.change_blocks(self.acc[(view, punct)], view, self.job.systems,
                                               self.job.vocab):
                    yield self._tag(df, view, punct)


class PairWriter:
    """Writes the pairs of a run in one block file per pair table (a partition per pair),
    block of pairs after block of pairs. Pairs that share an old file with a recomputed pair
    are copied into the new file, so no file ever holds a superseded row."""

    def __init__(self, stage: Staging, corpus: str, todo: list[tuple[str, str]],
                 sigs: dict) -> None:
        self.stage, self.corpus = stage, corpus
        self.parts = {pair_partition(corpus, a, b): sigs[(a, b)] for a, b in todo}
        self.files = contextlib.ExitStack()
        self.appends: dict[str, Callable[[pl.DataFrame], None]] = {}
        self.carried: dict[str, dict[str, str]] = {}

    def __enter__(self) -> PairWriter:
        if self.parts:
            name = f"{corpus_partition(self.corpus)}/block-{signature(sorted(self.parts.items()))}"
            for table in PAIR_TABLES:
                self.carried[table] = self._carried(table, set(self.parts))
                self.appends[table] = self.files.enter_context(self.stage.block_writer(
                    table, name, {**self.parts, **self.carried[table]}))
        return self

    def write(self, out: Outputs) -> None:
        for table, append in self.appends.items():
            for df in out.pair_rows(table):
                append(df)

    def __exit__(self, *exc: object) -> bool | None:
        if exc[0] is None:
            for table, append in self.appends.items():
                for batch in self._old_rows(table, self.carried[table]):
                    append(batch)
        return self.files.__exit__(*exc)

    def _carried(self, table: str, recomputed: set[str]) -> dict[str, str]:
        """Live pair partitions (-> signature) that share a file with a recomputed one."""
        live = self.stage.manifest["tables"].get(table, {})
        stale = {live[p]["file"] for p in recomputed if p in live}
        return {p: e["sig"] for p, e in live.items()
                if e["file"] in stale and p not in recomputed}

    def _old_rows(self, table: str, carried: dict[str, str]) -> Iterator[pl.DataFrame]:
        """The rows of the carried pairs, read from their old files."""
        live = self.stage.manifest["tables"].get(table, {})
        by_file: dict[str, list[tuple[str, str]]] = {}
        for p in carried:
            a, b = p.split("/pair=", 1)[1].split("~", 1)
            by_file.setdefault(live[p]["file"], []).append((a, b))
        for rel, pairs in sorted(by_file.items()):
            keep = [f"{a}~{b}" for a, b in pairs] + [f"{b}~{a}" for a, b in pairs]
            for batch in pq.ParquetFile(self.stage.root / rel).iter_batches():
                df = pl.from_arrow(batch)
                yield df.filter(pl.concat_str("sys1", pl.lit("~"), "sys2").is_in(keep))
