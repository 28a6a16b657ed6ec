"""Prefect flows for token-level tasks (pos, dep): ingest files (``token_ingest.py``), then
compare all systems.

Compare maps one task over shards of whole documents: it reads the shard's words once (the
key's record, each lean system's codes) and returns the engine's additive counts for every
view; the counts are folded into running sums as shards finish. Tasks exchange paths and
sentence ranges, never big frames. Each result partition carries a signature of its inputs'
content hashes and options, so an unchanged partition is never recomputed and a new system
only adds its own rows and its pairs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.mirror import held_copies, local_copy, wanted
from sysdiff.flows.progress import notice, progress
from sysdiff.flows.shards import map_fold, shard_plan
from sysdiff.flows.spec import KEY_ID, RunSpec
from sysdiff.flows.store import open_read, read_parquet, remote, scan_parquet
from sysdiff.flows.token_ingest import Ingested, ingest_tokens
from sysdiff.flows.warehouse import (
    ROW_GROUP,
    Staging,
    corpus_partition,
    crash_point,
    pair_partition,
    partition,
    read_table,
    signature,
)
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.conllu import (
    KIND_WORD,
)
from sysdiff.schemas.frozen import freeze_fields
from sysdiff.schemas.vocabulary import LABEL_FIELDS, TASK_VIEWS, VIEWS, score_name
from sysdiff.transforms import bootstrap, conll18, reduce, tokens
from sysdiff.transforms.bootstrap import UnitRows
from sysdiff.transforms.engine import smallest_uint
from sysdiff.transforms.plan import Shard, canonical, options_string
from sysdiff.transforms.tokens import (
    BLANK,
    WORD_COLUMNS,
    Coded,
    ShardWords,
    Vocab,
    apply_mapping,
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


def run_tokens(spec: RunSpec, stage: Staging) -> None:
    """A token task (pos, dep): ingest the files, then compute every table."""
    compare_tokens(spec, stage, ingest_tokens(spec, stage))


def corpus_systems(stage: Staging, corpus: str, ingested: dict[str, Ingested]
                   ) -> pl.DataFrame:
    """Every system of a corpus (ingested now, or earlier with the same key), in ingest
    order."""
    live = read_table(stage.root, "systems", stage.manifest, pl.col("corpus") == corpus)
    now = [i.row() for i in ingested.values()]
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
    #: how each source's words are stored (see LAYOUTS)
    layouts: dict[str, str]
    #: a lean system's dictionaries: field -> its sorted labels (its codes' meanings)
    dictionaries: dict[str, dict[str, tuple[str, ...]]]
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
    #: each file above on an object store -> its SHA-256 and size (read from a local copy)
    remote: dict[str, tuple[str, int]] = dataclass_field(default_factory=dict)

    def __post_init__(self) -> None:
        freeze_fields(self)  # a task parameter: nothing in it can change

    @contextlib.contextmanager
    def reading(self) -> Iterator[CompareJob]:
        """This job reading its files on an object store from local copies, held while it
        reads them (see :func:`~sysdiff.flows.mirror.local_copy`)."""
        if not self.remote:
            yield self
            return
        with held_copies() as hold:

            def at(path: str) -> str:
                return (local_copy(path, *self.remote[path], folder=hold)
                        if path in self.remote else path)

            yield replace(self, unit_paths={s: at(p) for s, p in self.unit_paths.items()},
                          sents_path=at(self.sents_path), remote={})


def read_shard_words(path: str, shard: Shard, aligned: bool = False, numbered: bool = False
                     ) -> pl.DataFrame:
    """The words of one shard (row groups outside the sentence range are skipped); with
    ``aligned``, from a system's aligned words, their ``aligned`` flag too; ``numbered``:
    with their ``word`` (the key's)."""
    return (scan_parquet(path, glob=False)
            .filter((pl.col("kind") == KIND_WORD)
                    & pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select(WORD_COLUMNS + ["aligned"] * aligned + ["word"] * numbered).collect())


def read_shard_codes(path: str, key: pl.DataFrame) -> pl.DataFrame:
    """A lean system's words of one shard (``key``: the key's, with their ``word``): its
    rows of those words (row n is key word n), with the key's sentence and ID (a partition
    stored before format 6 has its own, in the same order: not read)."""
    first = int(key["word"][0]) if key.height else 0
    codes = (scan_parquet(path, glob=False, hive_partitioning=False)
             .slice(first, key.height).collect().drop("sent", "id", strict=False))
    if codes.height != key.height:
        raise RuntimeError(f"{path}: {codes.height} words from word {first}; the key's "
                           f"shard has {key.height}")
    return pl.concat([key.select("sent", "id"), codes], how="horizontal")


def lean_coded(codes: pl.DataFrame, dictionaries: Mapping[str, Sequence[str]], vocab: Vocab,
               mapping: Mapping[str, str]) -> Coded:
    """A lean system's words as corpus codes (its labels mapped; a column it was not read
    for is ``_``)."""
    labels = {}
    for field in LABEL_FIELDS:
        column = codes[field]
        if field not in dictionaries or column.null_count() == column.len():
            labels[field] = np.full(codes.height, vocab.code_list(field, [BLANK])[0],
                                    smallest_uint(len(vocab.labels[field])))
            continue
        lookup = vocab.lookup(field, dictionaries[field], mapping)
        labels[field] = lookup[column.to_numpy()]
    return Coded(labels, codes["head"].fill_null(-1).to_numpy())


def lean_frame(codes: pl.DataFrame, dictionaries: Mapping[str, Sequence[str]]
               ) -> pl.DataFrame:
    """A lean system's words with their labels as strings (as the reader gave them: what
    the CoNLL 2018 counts compare)."""
    return codes.with_columns(
        pl.Series(f, dictionaries[f]).gather(codes[f]).alias(f) if f in dictionaries
        else pl.lit(BLANK).alias(f) for f in LABEL_FIELDS)


def shard_lengths(sents_path: str, shard: Shard) -> np.ndarray:
    """Words per sentence of the shard's sentences, in order."""
    rows = (scan_parquet(sents_path, glob=False)
            .filter(pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select("sent", "n_words").collect().sort("sent"))
    return rows["n_words"].to_numpy().astype(np.int64)


@task(name="compare", task_run_name="compare {shard.index}", cache_policy=NONE, retries=2)
def shard_compare(job: CompareJob, shard: Shard) -> dict:
    """Every additive count of one shard (each file read once), for every view setting."""
    with job.reading() as local:
        return count_shard(local, shard)


def count_shard(job: CompareJob, shard: Shard) -> dict:
    """:func:`shard_compare` of a job that reads local files."""
    key = read_shard_words(job.unit_paths[KEY_ID], shard, numbered=True)
    words = {s: read_shard_codes(job.unit_paths[s], key) if job.layouts[s] == "lean" else
             read_shard_words(job.unit_paths[s], shard, s in job.by_chars)
             for s in job.systems}
    key = key.drop("word")
    out: dict[Any, Any] = {}
    if job.conll18:
        gold = conll18.normalised_key(key)
        if job.per_sentence:  # the shard's counts are the sums of its sentences' rows
            rows = conll18_rows(job, key, words, gold, shard)
            out["conll18"] = {s: conll18.sentence_totals(r, job.tree) for s, r in rows.items()}
            out["conll18_sents"] = {s: UnitRows.of(shard.lo, r) for s, r in rows.items()}
        else:
            out["conll18"] = conll18_of_shard(job, key, words, gold, shard)
    mapped = ShardWords(
        key=apply_mapping(key, job.mappings.get("@key", {})),
        systems=[lean_coded(words[s], job.dictionaries[s], job.vocab, job.mappings.get(s, {}))
                 if job.layouts[s] == "lean" else
                 apply_mapping(words[s], job.mappings.get(s, {})) for s in job.systems],
        first_sent=shard.lo, n_sents=shard.hi - shard.lo,
        sent_lengths=shard_lengths(job.sents_path, shard), fmt=job.fmt,
        aligned=aligned_matrix(job, words, key.height))
    out.update(tokens.shard_counts(mapped, job.views, job.vocab, job.pairs, job.with_corpus,
                                   job.per_sentence))
    return out


def conll18_rows(job: CompareJob, key: pl.DataFrame, words: dict[str, pl.DataFrame],
                 gold: pl.DataFrame, shard: Shard) -> dict[str, np.ndarray]:
    """The CoNLL 2018 rows of each sentence of the shard for its systems of the key's
    tokenisation (:func:`conll18.sentence_counts`; a lean system's tags compared on its
    codes, :func:`lean_tag_rows`)."""
    coded = lean_tag_rows(job, words, gold, shard)
    return {s: coded[s] if s in coded else conll18.sentence_counts(
        key, labelled(job, words, s), gold, job.tree, shard.lo, shard.hi - shard.lo)
        for s in job.conll18}


def conll18_of_shard(job: CompareJob, key: pl.DataFrame, words: dict[str, pl.DataFrame],
                     gold: pl.DataFrame, shard: Shard) -> dict[str, pl.DataFrame]:
    """The CoNLL 2018 counts of the shard's systems of the key's tokenisation (the key
    normalised once, as ``gold``; a tagging task skips the tree's metrics, and compares a
    lean system on its codes)."""
    count = conll18.conll18_counts if job.tree else conll18.tag_counts
    coded = lean_tag_rows(job, words, gold, shard)
    return {s: conll18.sentence_totals(coded[s], False) if s in coded else
            count(key, labelled(job, words, s), gold) for s in job.conll18}


def lean_tag_rows(job: CompareJob, words: dict[str, pl.DataFrame], gold: pl.DataFrame,
                   shard: Shard) -> dict[str, np.ndarray]:
    """In a run without a tree, each lean system's CoNLL 2018 rows per sentence of the
    shard, compared on its codes (:func:`conll18.coded_tag_rows`); none otherwise."""
    lean = [s for s in job.conll18 if not job.tree and job.layouts[s] == "lean"]
    if not lean:
        return {}
    codes = conll18.GoldCodes(gold, shard.lo, shard.hi - shard.lo)
    return {s: conll18.coded_tag_rows(codes, words[s], job.dictionaries[s]) for s in lean}


def labelled(job: CompareJob, words: dict[str, pl.DataFrame], system: str) -> pl.DataFrame:
    """A system's words of the shard with their labels (a lean system's codes decoded)."""
    if job.layouts[system] == "lean":
        return lean_frame(words[system], job.dictionaries[system])
    return words[system]


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
    frames = [ingested[s].counts() if s in ingested else
              read_parquet(_path(stage, "vocab", corpus, s), glob=False)
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
    key_sents = read_parquet(sents_path, columns=["sent", "doc", "n_words"], glob=False)
    shards = shard_plan(key_sents, spec.shard_sents, 1 + len(systems))
    index = {s: i for i, s in enumerate(systems)}
    by_chars = rows.filter(pl.col("alignment") == "characters")["system"].to_list()
    stored = {s: _stored_words(stage, corpus, s, s in by_chars) for s in [KEY_ID, *systems]}
    job = CompareJob(
        systems=systems,
        unit_paths={s: path for s, (_layout, path) in stored.items()},
        layouts={s: layout for s, (layout, _path) in stored.items()},
        dictionaries=_dictionaries(vocab_rows, [s for s in systems if stored[s][0] == "lean"]),
        sents_path=sents_path, fmt=key_row["format"], views=views,
        vocab=vocab_from_counts(vocab_rows, spec.mappings),
        mappings={k: dict(v) for k, v in spec.mappings.items()},
        pairs=[(index[a], index[b]) for a, b in todo_pairs], with_corpus=todo_all,
        conll18=[s for s in todo_sys if s not in by_chars],
        by_chars=by_chars,
        segments={s: (n_tok, n_sent, n_word) for s, n_tok, n_sent, n_word in rows.select(
            "system", "n_tokens", "n_sents", "n_units").rows() if s not in by_chars},
        key_blank=_absent_columns(vocab_rows).get(KEY_ID, set()), tree=spec.task == "dep",
        per_sentence=spec.intervals.on,
        remote=_fingerprints(stage, [sents_path, *(path for _layout, path in stored.values())]))
    blocks = pair_blocks(job.pairs, PAIRS_PER_BLOCK)
    samples = None
    with PairWriter(stage, corpus, todo_pairs, pair_sig) as pair_out, \
            progress("compare", len(shards) * len(blocks)) as tick:
        for k, block in enumerate(blocks):
            part = replace(job, pairs=block, with_corpus=job.with_corpus and k == 0,
                           per_sentence=job.per_sentence and k == 0,
                           conll18=job.conll18 if k == 0 else [])
            folder = Folder(_merge)
            map_fold(lambda sh, part=part: shard_compare.submit(part, sh), shards, folder, tick)
            if samples is None:  # drawn once: later blocks count no per-sentence rows
                samples = draw_samples(folder.acc, part.views, spec.intervals)
            out = Outputs(spec, stage, part, folder.acc, missing, samples)
            if k == 0:
                out.per_system(todo_sys, sys_sig)
                if todo_all:
                    out.corpus_wide(all_sig)
                if part.conll18:
                    out.conll18(sys_sig)
            pair_out.write(out)
    stage_history(spec, stage, "tokens", all_sig)


def _stored_words(stage: Staging, corpus: str, system: str, by_chars: bool
                  ) -> tuple[str, str]:
    """How a source's words are stored, and where: what this run staged, else the live
    partition (see LAYOUTS)."""
    if by_chars:
        return "aligned", _path(stage, "aligned", corpus, system)
    part = partition(corpus, system)
    for find in (stage.staged_path, stage.live_file):
        if find("words", part) is not None:
            return "lean", str(find("words", part))
        if find("units", part) is not None:
            return "full", str(find("units", part))
    raise InputError(f"the warehouse holds no words of system '{system}' of corpus "
                     f"'{corpus}'; rerun with its file")


def _fingerprints(stage: Staging, paths: list[str]) -> dict[str, tuple[str, int]]:
    """The SHA-256 and size of each of ``paths`` on an object store whose writer recorded
    them (this run's staged files; the manifest's live ones, as the mirror reads them);
    nothing locally."""
    if not remote(stage.root):
        return {}
    known = {f"{stage.dir}/{rel}": h for rel, h in stage.hashes.items()}
    known |= {f"{stage.root}/{w.rel}": (w.sha256, w.size) for w in wanted(stage.manifest)}
    return {p: known[p] for p in paths if p in known}


def _dictionaries(vocab_rows: pl.DataFrame, lean: list[str]
                  ) -> dict[str, dict[str, tuple[str, ...]]]:
    """Each lean system's dictionaries: field -> its labels, sorted (their codes)."""
    rows = vocab_rows.filter(pl.col("system").is_in(lean) & pl.col("field").is_in(
        list(LABEL_FIELDS))).group_by("system", "field").agg(pl.col("label").sort())
    out: dict[str, dict[str, tuple[str, ...]]] = {s: {} for s in lean}
    for system, field, labels in rows.rows():
        out[system][field] = tuple(labels)
    return out


def pair_blocks(pairs: list[tuple[int, int]], size: int) -> list[list[tuple[int, int]]]:
    """The pairs in blocks of ``size``, counted one block per pass over the shards (at least
    one block, so that a run with no pair to count still counts everything else)."""
    return [pairs[k:k + size] for k in range(0, len(pairs), size)] or [[]]


@dataclass(frozen=True)
class Samples:
    """The bootstrap samples of a compare, drawn once (one pass over W) and used by every
    block of pairs: each view setting's (B x systems) accuracies; each system's (B x
    CoNLL 2018 count columns) sample sums."""

    accuracy: dict[tuple[str, bool], np.ndarray]
    conll18: dict[str, np.ndarray]


def draw_samples(acc: Mapping[Any, Any], views: Sequence[str], ci: bootstrap.Bootstrap
                 ) -> Samples:
    """The samples of the per-sentence rows in ``acc`` (a block's summed counts: each view
    setting's ``sentences``, the CoNLL 2018 ``conll18_sents``): the accuracies' and the
    F1s' from the same W, in one pass over it; none with intervals off."""
    if not ci.on:
        return Samples({}, {})
    settings = [(v, p) for v in views for p in VIEWS[v].punct_settings]
    f1_rows = acc.get("conll18_sents") or {}
    sums = bootstrap.sample_sums({**{("accuracy", k): acc[k].sentences for k in settings},
                                  **{("conll18", s): r for s, r in f1_rows.items()}}, ci)
    return Samples({k: bootstrap.accuracies(sums[("accuracy", k)]) for k in settings},
                   {s: sums[("conll18", s)] for s in f1_rows})


class Outputs:
    """Turns the summed counts of every view setting into staged tables."""

    def __init__(self, spec: RunSpec, stage: Staging, job: CompareJob, acc: dict,
                 missing: dict[str, set[str]], samples: Samples | None = None) -> None:
        self.spec, self.stage, self.job, self.acc, self.missing = spec, stage, job, acc, missing
        self.samples = samples or Samples({}, {})
        self.corpus = spec.corpus
        self.tables: dict[str, list[pl.DataFrame]] = {}
        ci = spec.intervals
        for view in job.views:
            for punct in VIEWS[view].punct_settings:
                tables = tokens.view_tables(acc[(view, punct)], view, job.systems, job.vocab,
                                            spec.ar_trials, spec.seed, subset_ids=True,
                                            missing=missing[view],
                                            samples=self.samples.accuracy.get((view, punct)),
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
        """system -> (metric, ci_low, ci_high) of the CoNLL 2018 F1s (from the samples
        drawn with the accuracies'); nothing without per-sentence rows."""
        ci = self.spec.intervals
        metrics = conll18.sentence_metrics(self.job.tree)
        return {s: conll18.f1_intervals(x.reshape(ci.samples, len(metrics), 3), metrics,
                                        ci.confidence)
                for s, x in self.samples.conll18.items()}

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
            with open_read(self.stage.root / rel) as f:
                for batch in pq.ParquetFile(f).iter_batches():
                    df = pl.from_arrow(batch)
                    yield df.filter(pl.concat_str("sys1", pl.lit("~"), "sys2").is_in(keep))
