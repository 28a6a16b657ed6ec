"""Flows for the non-token tasks: coreference (coref) and UNL (unl, nl).

Same rules as the token flows: coarse tasks (one per file), content-hash signatures per
partition, everything staged and committed atomically by the caller's ``open_run``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NONE

from flows.progress import progress
from flows.spec import KEY_ID, RunSpec, Source
from flows.warehouse import (
    Staging,
    input_sha256,
    partition,
    read_table,
    signature,
    with_literals,
)
from schemas.errors import InputError

CRITERIA = ("any", "nom")


def run_domain(spec: RunSpec, stage: Staging) -> None:
    """Dispatch a coreference or UNL run."""
    if spec.task == "coref":
        run_coref(spec, stage)
    elif spec.task in ("unl", "nl"):
        from flows import unl_flow

        unl_flow.run_unl(spec, stage)
    else:
        raise InputError(f"unknown task '{spec.task}'")


def system_row(spec: RunSpec, source: Source, role: str, sha: str, fmt: str, n_docs: int,
               n_sents: int, n_units: int) -> pl.DataFrame:
    """One row of the ``systems`` table."""
    return pl.DataFrame([{
        "corpus": spec.corpus, "system": KEY_ID if role == "key" else source.id,
        "version": source.version, "task": spec.task, "role": role, "format": fmt,
        "path": str(Path(source.path).absolute()), "sha256": sha, "n_docs": n_docs,
        "n_sents": n_sents, "n_units": n_units, "ingested_at": dt.datetime.now(dt.UTC),
    }])


@task(name="ingest {source.name}", cache_policy=NONE)
def read_coref_file(source: Source) -> tuple[pl.DataFrame, pl.DataFrame, str]:
    """Mentions and per-document token counts of one coreference file."""
    from schemas.coref import detect_format, read_coref_with_tokens, read_text

    text = read_text(source.path)
    fmt = source.fmt or detect_format(text, source.path)
    mentions, toks = read_coref_with_tokens(source.path, fmt, text)
    return mentions, toks, fmt


def run_coref(spec: RunSpec, stage: Staging) -> None:
    """Coreference: scores, ARCS classes, pairs, oracles and agreement for all systems."""
    from schemas.coref import validate_response

    corpus = spec.corpus
    sources = [(spec.key, "key")] + [(s, "system") for s in spec.systems]
    shas = {(KEY_ID if role == "key" else s.id): input_sha256(s.path) for s, role in sources}
    mentions: dict[str, pl.DataFrame] = {}
    with progress("ingest", len(sources)) as tick:
        key_tokens = None
        for source, role in sources:
            sid = KEY_ID if role == "key" else source.id
            m, toks, fmt = read_coref_file(source)
            if role == "key":
                key_tokens = toks
            else:
                validate_response(key_tokens, toks, spec.key.path, source.path)
            mentions[sid] = m
            sig = signature(shas[sid], fmt, shas[KEY_ID])
            if not stage.has("mentions", partition(corpus, sid), sig):
                stage.write("mentions", partition(corpus, sid), sig,
                            with_literals(m, corpus=corpus, system=sid))
                stage.write("coref_tokens", partition(corpus, sid), sig,
                            with_literals(toks, corpus=corpus, system=sid))
                stage.write("systems", partition(corpus, sid), sig, system_row(
                    spec, source, role, shas[sid], fmt, toks.height,
                    int(m["sent"].n_unique()) if m.height else 0, m.height))
            tick()
    _coref_results(spec, stage, mentions, shas)


def _coref_results(spec: RunSpec, stage: Staging, mentions: dict[str, pl.DataFrame],
                   shas: dict[str, str]) -> None:
    from transforms import arcs, coref

    corpus, key = spec.corpus, mentions[KEY_ID]
    systems = [s.id for s in spec.systems]
    classes: dict[str, dict[str, pl.DataFrame]] = {c: {} for c in CRITERIA}
    with progress("score", len(systems)) as tick:
        for s in systems:
            sig = signature(shas[KEY_ID], shas[s], "coref")
            for c in CRITERIA:
                classes[c][s] = arcs.mention_classes(key, mentions[s], c)
            if not stage.has("coref_scores", partition(corpus, s), sig):
                scores = coref.coref_scores(coref.coref_counts(key, mentions[s]))
                stage.write("coref_scores", partition(corpus, s), sig,
                            with_literals(scores, corpus=corpus, system=s))
                cls = pl.concat([classes[c][s] for c in CRITERIA])
                stage.write("mention_classes", partition(corpus, s), sig,
                            with_literals(cls, corpus=corpus, system=s))
                stage.write("arcs_scores", partition(corpus, s), sig,
                            with_literals(arcs.arcs_scores(cls), corpus=corpus, system=s))
            tick()
    all_sig = signature(shas[KEY_ID], sorted((s, shas[s]) for s in systems), "coref")
    if len(systems) < 1 or stage.has("coref_oracles", f"corpus={corpus}", all_sig):
        return
    pairs, transitions, oracles = [], [], []
    for c in CRITERIA:
        p, t = arcs.coref_pairs(classes[c], c)
        pairs.append(p)
        transitions.append(t)
        oracles.append(arcs.coref_oracles(classes[c], c))
    part = f"corpus={corpus}"
    stage.write("coref_oracles", part, all_sig, with_literals(pl.concat(oracles), corpus=corpus))
    if len(systems) > 1:
        stage.write("coref_pairs", part, all_sig, with_literals(pl.concat(pairs), corpus=corpus))
        stage.write("coref_transitions", part, all_sig,
                    with_literals(pl.concat(transitions), corpus=corpus))
        agreement = arcs.coref_agreement({s: mentions[s] for s in systems})
        stage.write("coref_agreement", part, all_sig, with_literals(agreement, corpus=corpus))


def live_mentions(stage: Staging, corpus: str) -> pl.DataFrame:
    """All mentions of a corpus in the warehouse (for reports and drill-down)."""
    return read_table(stage.root, "mentions", stage.manifest, pl.col("corpus") == corpus)
