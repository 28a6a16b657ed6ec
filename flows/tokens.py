"""Prefect flows for token-level tasks (pos, dep): ingest files, compare all systems.

Tasks are coarse (one per file, one per view) and exchange paths, never big frames. Each
result partition carries a signature of its inputs' content hashes and options, so an
unchanged partition is never recomputed and a new system only adds what involves it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from flows.progress import progress
from flows.spec import KEY_ID, RunSpec, Source
from flows.warehouse import Staging, file_sha256, read_table, signature
from schemas.conll import ConllDoc, check_same_words, read_conll
from transforms import conll18, tokens
from transforms.views import DEP_VIEWS, TOKEN_VIEWS, view_matrix

TASK_VIEWS = {"pos": TOKEN_VIEWS, "dep": TOKEN_VIEWS + DEP_VIEWS}
WORD_COLUMNS = ["sent", "id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel"]


@dataclass(frozen=True)
class Ingested:
    """Where one ingested file lives and what it holds."""

    system: str
    sha256: str
    fmt: str
    units: Path
    sents: Path
    reused: bool


def _partition(corpus: str, system: str) -> str:
    return f"corpus={corpus}/system={system}"


@task(name="ingest {source.name}", cache_policy=NONE)
def ingest_file(spec: RunSpec, source: Source, role: str, sha: str, stage: Staging,
                key_doc: ConllDoc | None, key_sha: str) -> tuple[Ingested, ConllDoc, dict]:
    """Read and validate one file, check it against the key, stage its units and sentences."""
    doc = read_conll(source.path, source.fmt)
    if key_doc is not None:
        check_same_words(key_doc, doc)
    sid = KEY_ID if role == "key" else source.id
    part = _partition(spec.corpus, sid)
    sig = signature(sha, doc.fmt, None if role == "key" else key_sha)
    tag = dict(corpus=spec.corpus, system=sid)
    units = stage.write("units", part, sig, doc.tokens.with_columns(**_lits(tag)))
    sents = stage.write("sents", part, sig, doc.sents.with_columns(**_lits(tag)))
    meta = {
        "corpus": spec.corpus, "system": sid, "version": source.version, "task": spec.task,
        "role": role, "format": doc.fmt, "path": str(Path(source.path).absolute()),
        "sha256": sha, "n_docs": int(doc.sents["doc"].n_unique()),
        "n_sents": doc.sents.height, "n_units": doc.words.height,
        "ingested_at": dt.datetime.now(dt.UTC),
    }
    stage.write("systems", part, sig, pl.DataFrame([meta]))
    return Ingested(sid, sha, doc.fmt, units, sents, False), doc, meta


def _lits(values: dict) -> dict[str, pl.Expr]:
    return {k: pl.lit(v, pl.String) for k, v in values.items()}


def _live(stage: Staging, spec: RunSpec, sid: str, sha: str, fmt: str) -> Ingested:
    part = _partition(spec.corpus, sid)
    return Ingested(sid, sha, fmt, stage.live_file("units", part), stage.live_file("sents", part),
                    True)


def _load_doc(ing: Ingested, source_path: Path) -> ConllDoc:
    units = pl.read_parquet(ing.units).drop("corpus", "system")
    sents = pl.read_parquet(ing.sents).drop("corpus", "system")
    return ConllDoc(str(source_path), ing.fmt, units, sents)


def _unchanged(stage: Staging, spec: RunSpec, sid: str, sha: str, key_sha: str | None) -> bool:
    systems = read_table(stage.root, "systems", stage.manifest,
                         (pl.col("corpus") == spec.corpus) & (pl.col("system") == sid))
    if systems.is_empty() or systems["sha256"][0] != sha:
        return False
    if key_sha is None:
        return True
    key = read_table(stage.root, "systems", stage.manifest,
                     (pl.col("corpus") == spec.corpus) & (pl.col("system") == KEY_ID))
    return not key.is_empty() and key["sha256"][0] == key_sha


def ingest_tokens(spec: RunSpec, stage: Staging) -> dict[str, Ingested]:
    """Ingest the key and every system; unchanged files are not read again."""
    out: dict[str, Ingested] = {}
    key_sha = file_sha256(_existing(spec.key.path))
    key_doc = None
    sources = [(spec.key, "key")] + [(s, "system") for s in spec.systems]
    with progress("ingest", len(sources)) as tick:
        for source, role in sources:
            sid = KEY_ID if role == "key" else source.id
            sha = key_sha if role == "key" else file_sha256(_existing(source.path))
            if _unchanged(stage, spec, sid, sha, None if role == "key" else key_sha):
                fmt = read_table(stage.root, "systems", stage.manifest,
                                 (pl.col("corpus") == spec.corpus)
                                 & (pl.col("system") == sid))["format"][0]
                out[sid] = _live(stage, spec, sid, sha, fmt)
            else:
                if key_doc is None and role == "system":
                    key_doc = _load_doc(out[KEY_ID], spec.key.path)
                ing, doc, _ = ingest_file(spec, source, role, sha, stage, key_doc, key_sha)
                out[sid] = ing
                if role == "key":
                    key_doc = doc
            tick()
    return out


def _existing(path: Path) -> Path:
    from schemas.conll import read_bytes

    if not Path(path).is_file():
        read_bytes(path)  # raises the precise InputError
    return Path(path)


def corpus_systems(stage: Staging, corpus: str) -> pl.DataFrame:
    """Every system of a corpus known to the warehouse (live and staged), in ingest order."""
    frames = [read_table(stage.root, "systems", stage.manifest, pl.col("corpus") == corpus)]
    for (table, _part), (rel, _sig) in stage.staged.items():
        if table == "systems":
            frames.append(pl.read_parquet(stage.dir / rel))
    df = pl.concat(frames, how="vertical_relaxed").filter(pl.col("corpus") == corpus)
    return df.unique("system", keep="last").sort("ingested_at", "system")


def _units_path(stage: Staging, corpus: str, system: str) -> Path:
    part = _partition(corpus, system)
    return stage.staged_path("units", part) or stage.live_file("units", part)


def read_words(path: Path) -> pl.DataFrame:
    """The words (evaluation units) of one ingested file, in key order."""
    return pl.scan_parquet(path).filter(pl.col("kind") == 0).select(WORD_COLUMNS).collect()


def options_string(view: str, punct: bool, mappings: dict) -> str:
    """What produced a row: punctuation policy and label mappings (sacreBLEU-style)."""
    maps = ";".join(f"{s}:" + ",".join(f"{a}>{b}" for a, b in sorted(m.items()))
                    for s, m in sorted(mappings.items()) if m)
    return f"view:{view}|punct:{'incl' if punct else 'excl'}|map:{maps or 'none'}"


def shard_masks(sents: pl.DataFrame, sent_of_word: np.ndarray, shard_sents: int
                ) -> list[np.ndarray]:
    """Word masks of shards: whole documents, or runs of ``shard_sents`` sentences."""
    doc = sents.sort("sent")["doc"].to_numpy()
    group = doc if np.unique(doc).size > 1 else np.arange(doc.size) // max(1, shard_sents)
    shard_of_word = group[sent_of_word]
    return [shard_of_word == g for g in np.unique(group)]


@task(name="compare {spec.corpus} {view}", cache_policy=NONE)
def compare_view(view: str, systems: list[str], unit_paths: dict[str, Path], key_sents: Path,
                 fmt: str, spec: RunSpec, pairs: list[tuple[int, int]]
                 ) -> dict[bool, dict[str, pl.DataFrame]]:
    """All tables of one view, for each punctuation setting, mapped over shards and reduced."""
    key = read_words(unit_paths[KEY_ID])
    words = {s: read_words(unit_paths[s]) for s in systems}
    key_sents = pl.read_parquet(key_sents)
    m_all = view_matrix(view, key, words, fmt, spec.mappings)
    lengths = key_sents.sort("sent")["n_words"].to_numpy()
    out = {}
    for punct in tokens.punct_settings(view):
        m = m_all if punct else m_all.select(~m_all.punct)
        freq = np.bincount(m.gold_display, minlength=len(m.labels))
        masks = shard_masks(key_sents, m.sent, spec.shard_sents)
        first = tokens.merge_partials(
            tokens.shard_partials(m.select(k), list(range(len(systems))), {}, [])
            for k in masks)
        prio = tokens.priority_from_scores(first["scores"], systems)
        parts = []
        for k in masks:
            shard = m.select(k)
            parts.append(tokens.shard_partials(
                shard, prio, tokens.unit_buckets(shard, lengths, freq), pairs))
        out[punct] = tokens.finalize(tokens.merge_partials(parts), systems, spec.ar_trials,
                                     spec.seed)
    return out


def _tag(df: pl.DataFrame, corpus: str, view: str, punct: bool, options: str) -> pl.DataFrame:
    return df.with_columns(pl.lit(corpus).alias("corpus"), pl.lit(view).alias("view"),
                           pl.lit(punct).alias("punct"), pl.lit(options).alias("options"))


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
    todo_sys = [s for s in systems if not stage.has("scores", _partition(corpus, s), sys_sig[s])]
    todo_pairs = [p for p, sig in pair_sig.items()
                  if not stage.has("pairs", f"corpus={corpus}/pair={p[0]}~{p[1]}", sig)]
    todo_all = not stage.has("oracles", f"corpus={corpus}", all_sig)
    if not (todo_sys or todo_pairs or todo_all):
        return
    unit_paths = {s: _units_path(stage, corpus, s) for s in [KEY_ID, *systems]}
    key_sents = (stage.staged_path("sents", _partition(corpus, KEY_ID))
                 or stage.live_file("sents", _partition(corpus, KEY_ID)))
    index = {s: i for i, s in enumerate(systems)}
    pairs = [(index[a], index[b]) for a, b in todo_pairs]
    collected: dict[str, list[pl.DataFrame]] = {}
    views = TASK_VIEWS[spec.task]
    with progress("compare", len(views)) as tick:
        for view in views:
            result = compare_view(view, systems, unit_paths, key_sents, fmt, spec, pairs)
            for punct, tables in result.items():
                options = options_string(view, punct, spec.mappings)
                for name, df in tables.items():
                    collected.setdefault(name, []).append(_tag(df, corpus, view, punct, options))
            tick()
    tables = {name: pl.concat(frames, how="diagonal_relaxed")
              for name, frames in collected.items()}
    _stage_per_system(stage, corpus, tables, todo_sys, sys_sig)
    _stage_per_pair(stage, corpus, tables, todo_pairs, pair_sig)
    if todo_all:
        for name in ("oracles", "oracle_labels", "difficulty", "majority"):
            stage.write(name, f"corpus={corpus}", all_sig, tables[name])
    if spec.task == "dep":
        _stage_conll18(stage, corpus, unit_paths, todo_sys, sys_sig)


def _stage_per_system(stage: Staging, corpus: str, tables: dict[str, pl.DataFrame],
                      todo: list[str], sigs: dict[str, str]) -> None:
    for s in todo:
        for name in ("scores", "labels", "buckets"):
            if name in tables:
                stage.write(name, _partition(corpus, s), sigs[s],
                            tables[name].filter(pl.col("system") == s))


def _stage_per_pair(stage: Staging, corpus: str, tables: dict[str, pl.DataFrame],
                    todo: list[tuple[str, str]], sigs: dict) -> None:
    for a, b in todo:
        both = pl.col("sys1").is_in([a, b]) & pl.col("sys2").is_in([a, b])
        for name in ("pairs", "changes", "bucket_pairs"):
            if name in tables:
                stage.write(name, f"corpus={corpus}/pair={a}~{b}", sigs[(a, b)],
                            tables[name].filter(both))


def _stage_conll18(stage: Staging, corpus: str, unit_paths: dict[str, Path], todo: list[str],
                   sigs: dict) -> None:
    key = read_words(unit_paths[KEY_ID])
    for s in todo:
        counts = conll18.conll18_counts(key, read_words(unit_paths[s]))
        scores = conll18.conll18_scores(counts)
        df = counts.join(scores, on="metric").with_columns(
            pl.lit(corpus).alias("corpus"), pl.lit(s).alias("system"))
        stage.write("conll18", _partition(corpus, s), sigs[s], df)
