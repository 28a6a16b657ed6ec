"""``sysdiff rm``: remove systems, versions or a whole corpus from the warehouse.

A removal is a commit like a run's (the warehouse lock, staging, an atomic manifest, the
catalog rebuilt, superseded files deleted once no reader holds them): it drops every live
partition that belongs to a removed system (its ingested files and its per-system tables)
or to a pair holding one, and the corpus-wide partitions (oracles, history, ...). A file
shared by a dropped partition and a kept one (the token pair tables write a block of pairs
per file) is written again with the kept partitions' rows only. Then each task's compare
entry point computes the corpus-wide tables again over the systems that are left, from the
data the warehouse holds (no input file is read), with the options of the corpus' last
run (:mod:`sysdiff.flows.run_record`): kept partitions keep their signatures and are not
recomputed.

The glue with each task's flow is :func:`recompute`, kept small on purpose.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
from prefect import flow

from sysdiff.flows import run_record
from sysdiff.flows.spec import KEY_ID, RunSpec, Source
from sysdiff.flows.store import open_read
from sysdiff.flows.warehouse import (
    Staging,
    corpus_partition,
    known_inputs,
    open_run,
    read_manifest,
    read_table,
    signature,
)
from sysdiff.schemas.errors import InputError

#: A partition key: ``corpus=C``, ``corpus=C/system=S`` or ``corpus=C/pair=A~B``.
PARTITION = re.compile(r"corpus=(?P<corpus>[^/]+)(?:/(?:system=(?P<system>[^/]+)|"
                       r"pair=(?P<a>[^~/]+)~(?P<b>[^/]+)))?$")


@dataclass(frozen=True)
class Removal:
    """What a removal did (or, from :func:`plan`, would do)."""

    corpus: str
    task: str
    removed: tuple[str, ...]  # the systems removed (every one, for a whole corpus)
    kept: tuple[str, ...]  # the systems left (none for a whole corpus)
    whole: bool  # the whole corpus is removed
    partitions: int = 0  # live partitions dropped
    recomputed: tuple[str, ...] = ()  # corpus tables computed again

    def summary(self) -> str:
        """One line for people."""
        if self.whole:
            return (f"removed corpus '{self.corpus}' ({self.task}: the key and "
                    f"{len(self.removed)} system(s): {', '.join(self.removed)}; "
                    f"{self.partitions} partitions)")
        again = f"; recomputed: {', '.join(self.recomputed)}" if self.recomputed else ""
        return (f"removed {', '.join(self.removed)} from corpus '{self.corpus}' "
                f"({self.partitions} partitions); {len(self.kept)} system(s) left: "
                f"{', '.join(self.kept)}{again}")


# ------------------------------------------------------------------------------ choosing


def corpus_systems(root: Path, corpus: str) -> tuple[str, list[str]]:
    """(the corpus' task, its systems in natural order); an unknown corpus is one line
    naming the corpora the warehouse holds."""
    from sysdiff.schemas.vocabulary import natural_key

    rows = read_table(root, "systems", read_manifest(root)).select("corpus", "system", "task",
                                                                    "role")
    known = sorted(set(rows["corpus"].to_list()), key=natural_key)
    if corpus not in known:
        raise InputError(f"no corpus '{corpus}' in the warehouse; expected one of "
                         f"{', '.join(known) or 'none (the warehouse is empty)'}", root)
    mine = rows.filter(pl.col("corpus") == corpus)
    task = mine["task"][0]
    systems = mine.filter(pl.col("role") == "system")["system"].to_list()
    return task, sorted(systems, key=natural_key)


def select(systems: list[str], names: list[str], corpus: str) -> list[str]:
    """The systems ``names`` designate: ``NAME@VERSION`` that version, ``NAME`` the system
    so named and every ``NAME@VERSION``. A name that matches nothing is one line naming the
    corpus' systems."""
    chosen: list[str] = []
    for name in names:
        found = [s for s in systems if s == name or ("@" not in name
                                                     and s.split("@", 1)[0] == name)]
        if not found:
            raise InputError(f"no system '{name}' in corpus '{corpus}'; expected one of "
                             f"{', '.join(systems) or 'none'} (NAME@VERSION for one version, "
                             "NAME for every version)")
        chosen += [s for s in found if s not in chosen]
    return chosen


def plan(root: Path, corpus: str, names: list[str] | None) -> Removal:
    """What ``remove`` would do (read only): for the confirmation."""
    task, systems = corpus_systems(root, corpus)
    if not names:
        return Removal(corpus, task, tuple(systems), (), True)
    gone = select(systems, names, corpus)
    kept = [s for s in systems if s not in gone]
    if not kept:
        raise InputError(f"that removes every system of corpus '{corpus}'; to remove the "
                         f"corpus with its key: sysdiff rm --corpus {corpus}")
    return Removal(corpus, task, tuple(gone), tuple(kept), False)


# ------------------------------------------------------------------------------ dropping


def belongs(part: str, corpus: str, gone: set[str] | None) -> bool:
    """True when partition key ``part`` goes with the removal: anything of ``corpus`` when
    ``gone`` is None (the whole corpus); else a removed system's partition, a pair holding
    one, and the corpus-wide partition (computed again)."""
    m = PARTITION.match(part)
    if m is None or m["corpus"] != corpus:
        return False
    if gone is None or (m["system"] is None and m["a"] is None):
        return True
    return m["system"] in gone or m["a"] in gone or m["b"] in gone


def drop(stage: Staging, corpus: str, gone: set[str] | None) -> int:
    """Drop the partitions that go with the removal (:func:`belongs`); a file that kept
    partitions share with a dropped one is staged again with their rows only. Returns the
    number of partitions dropped."""
    n = 0
    for table in sorted(stage.manifest["tables"]):
        parts = stage.manifest["tables"][table]
        doomed = [p for p in parts if belongs(p, corpus, gone)]
        if not doomed:
            continue
        files = {parts[p]["file"] for p in doomed}
        shared = {p: dict(e) for p, e in parts.items() if p not in doomed and e["file"] in files}
        for p in doomed:
            stage.drop(table, p)
        n += len(doomed)
        if shared:
            _rewrite(stage, table, corpus, gone, shared)
    return n


def _rewrite(stage: Staging, table: str, corpus: str, gone: set[str] | None,
             shared: dict[str, dict]) -> None:
    """Stage the kept partitions of each shared file in a new file without the removed
    systems' rows (the old file is deleted when nothing names it any more)."""
    by_file: dict[str, dict[str, str]] = {}
    for p, entry in shared.items():
        by_file.setdefault(entry["file"], {})[p] = entry["sig"]
    for rel, parts in sorted(by_file.items()):
        name = f"{corpus_partition(corpus)}/kept-{signature(rel, sorted(parts.items()))}"
        with (stage.block_writer(table, name, parts) as append,
              open_read(stage.root / rel) as f):  # a file or an object
            for batch in pq.ParquetFile(f).iter_batches():
                df = pl.from_arrow(batch)
                append(df.filter(~_removed_rows(df, corpus, gone)))


def _removed_rows(df: pl.DataFrame, corpus: str, gone: set[str] | None) -> pl.Expr:
    """The rows of a removed system (or of the corpus)."""
    mine = pl.col("corpus") == corpus if "corpus" in df.columns else pl.lit(True)
    if gone is None:
        return mine
    named = [c for c in ("system", "sys1", "sys2") if c in df.columns]
    if not named:
        return pl.lit(False)
    return mine & pl.any_horizontal(pl.col(c).is_in(sorted(gone)) for c in named)


# ------------------------------------------------------------------------------ recomputing


def stored_spec(stage: Staging, corpus: str, task: str, rows: dict[str, dict]) -> RunSpec:
    """The corpus as the warehouse holds it: its key and systems (their stored paths) and
    the options of its last run."""
    def source(row: dict) -> Source:
        name = row["system"].split("@", 1)[0]
        return Source(name, Path(row["path"]), row.get("version"), row.get("format"))

    key = rows[KEY_ID]
    ordered = sorted((r for s, r in rows.items() if s != KEY_ID),
                     key=lambda r: (r["ingested_at"], r["system"]))  # as the runs read them
    systems = [source(r) for r in ordered]
    options = run_record.recorded(stage.manifest, corpus)
    if options is None:
        from sysdiff.flows.progress import notice

        notice(f"corpus '{corpus}' was written by an older sysdiff that did not record its "
               "run's options: its tables are computed again with the default options")
    return run_record.spec_for(corpus, task, Source(KEY_ID, Path(key["path"]), None,
                                                    key.get("format")), systems, options)


def recompute(stage: Staging, spec: RunSpec) -> None:
    """Each task's compare entry point over the stored systems: only what is stale (the
    corpus-wide tables) is computed."""
    from sysdiff.flows import coref, spans, srl, tokens

    corpus = spec.corpus
    if spec.task in ("pos", "dep"):
        tokens.compare_tokens(spec, stage, {})
    elif spec.task == "coref":
        rows = known_inputs(stage, corpus)
        paths = {s: str(stage.live_file("mentions", f"corpus={corpus}/system={s}"))
                 for s in rows}
        docs = coref.key_documents(str(stage.live_file("coref_tokens",
                                                       f"corpus={corpus}/system={KEY_ID}")))
        coref._coref_results(spec, stage, paths, {s: r["sha256"] for s, r in rows.items()},
                             coref.coref_run(spec, rows[KEY_ID]["format"]), docs)
    elif spec.task == "ner":
        spans.compare_spans(spec, stage, _live_files(stage, spec, spans))
    elif spec.task == "srl":
        srl.compare_srl(spec, stage, _live_files(stage, spec, srl))
    else:
        _recompute_unl(stage, spec)


def _live_files(stage: Staging, spec: RunSpec, module) -> dict:
    """The stored files of a span or srl corpus (key first), as its ingest reuses them."""
    rows = known_inputs(stage, spec.corpus)
    key = rows[KEY_ID]
    key_sig = module.ingest_signature(spec, KEY_ID, key["sha256"], key["format"], None)
    out = {KEY_ID: module._live(stage, spec.corpus, key, key_sig)}
    for s, row in rows.items():
        if s != KEY_ID:
            sig = module.ingest_signature(spec, s, row["sha256"], row["format"], key_sig)
            out[s] = module._live(stage, spec.corpus, row, sig)
    return out


def _recompute_unl(stage: Staging, spec: RunSpec) -> None:
    """UNL: the comparison of the versions left, from their stored sentence rows."""
    import numpy as np

    from sysdiff.flows import unl
    from sysdiff.transforms.plan import plan_ranges

    corpus = spec.corpus
    rows = known_inputs(stage, corpus)
    options = unl.unl_options(spec)
    opt_sig = options.signature() if hasattr(options, "signature") else repr(options)
    shas = {s: r["sha256"] for s, r in rows.items() if s != KEY_ID}
    sentences = {s: stage.read("unl_sentences", (pl.col("corpus") == corpus)
                               & (pl.col("system") == s)).sort("sent_index")
                 .drop("corpus", "system") for s in shas}
    ranges = plan_ranges(np.ones(int(rows[KEY_ID]["n_sents"]), np.int64),
                         spec.plain_shard_sents) or [(0, 0)]
    unl.compare_versions(spec, stage, sentences, ranges, rows[KEY_ID]["sha256"], shas,
                         opt_sig)


#: The corpus tables a removal computes again, per task (for its summary line).
RECOMPUTED = {"pos": ("oracles", "difficulty", "majority", "history"),
              "dep": ("oracles", "difficulty", "majority", "history"),
              "coref": ("coref_pairs", "coref_oracles", "coref_agreement", "history"),
              "ner": ("span_pairs", "span_oracles", "history"),
              "srl": ("srl_pairs", "srl_oracles", "history"),
              "unl": ("unl_pairs", "unl_oracle", "history"),
              "nl": ("unl_pairs", "unl_oracle", "history")}


# ------------------------------------------------------------------------------ the flow


def _remove(root: Path, corpus: str, names: list[str] | None) -> Removal:
    """Drop what goes with the removal and compute the corpus' tables again (one commit)."""
    chosen = plan(root, corpus, names)
    with open_run(root, corpus) as stage:
        if chosen.whole:
            n = drop(stage, corpus, None)
            run_record.forget(stage, corpus)
            return dataclasses.replace(chosen, partitions=n)
        rows = known_inputs(stage, corpus)
        gone = set(chosen.removed)
        n = drop(stage, corpus, gone)
        spec = stored_spec(stage, corpus, chosen.task,
                           {s: r for s, r in rows.items() if s not in gone})
        with _quiet_notes():  # the corpus' notes were said by its runs
            recompute(stage, spec)
        run_record.record(stage, spec)
    return dataclasses.replace(chosen, partitions=n,
                               recomputed=RECOMPUTED.get(chosen.task, ()))


@contextlib.contextmanager
def _quiet_notes() -> Iterator[None]:
    """sysdiff's notes off within the block (its warnings stay)."""
    import logging

    log = logging.getLogger("sysdiff")
    level = log.level
    log.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        log.setLevel(level)


@flow(name="sysdiff-rm", validate_parameters=False, log_prints=False)
def remove_flow(root: Path, corpus: str, names: list[str]) -> Removal:
    """Remove systems and recompute the corpus' tables (the shard tasks need a flow run)."""
    return _remove(root, corpus, names)


def run_name(corpus: str, names: list[str]) -> str:
    """The flow run's name in the Prefect UI (``sequoia · rm · seqsm@ud2.8``)."""
    return f"{corpus} · rm · {', '.join(names)}"


def remove_corpus(root: Path, corpus: str) -> Removal:
    """Remove a whole corpus (its key, systems and tables); no Prefect needed."""
    return _remove(root, corpus, None)


def remove(root: Path, corpus: str, names: list[str] | None) -> Removal:
    """Remove ``names`` (systems, ``NAME@VERSION`` versions; none: the whole corpus) from
    the warehouse and recompute what depended on them (see the module's docstring)."""
    if not names:
        return remove_corpus(root, corpus)
    from sysdiff.flows.shards import task_runner

    return remove_flow.with_options(task_runner=task_runner(None, 0),
                                    flow_run_name=run_name(corpus, names))(root, corpus, names)
