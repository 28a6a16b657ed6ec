"""Prefect flow of the span task (ner; chunks or any BIO labels): ingest files, compare all
systems over span units (METRICS 5).

Ingest reads each file once, in chunks of whole sentences: validates it (a system against
the key's sentences and forms), maps its labels, decodes its spans with the run's scheme,
computes its token accuracy against the key, and stages its tokens (``span_tokens``),
sentences (``sents``) and spans (``spans``) while hashing it. A system whose tokens differ
from the key's but whose text is the key's is then read once more and its spans placed on
the key's characters (:func:`place_on_key`); the comparison then compares every span by
characters (``SpanJob.by_chars``). Compare maps one task over
shards of whole documents of the key: each returns the additive span counts and the engine's
pair, transition and oracle counts (:mod:`sysdiff.transforms.spans`), and the classes of its
spans, which are streamed into ``span_classes``; the fold sums the counts in shard order, so
every table is the same whatever the shard size. Signatures carry the content hashes and
options, so an unchanged file is not read again and unchanged results are not recomputed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NONE

from sysdiff.flows.history import stage_history
from sysdiff.flows.ingest import ingest_all
from sysdiff.flows.once import shared_cache
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
from sysdiff.schemas.formats.fast_tags import LEAN_BYTES, separator, tag_frame
from sysdiff.schemas.formats.stable import StableFile, Stamp
from sysdiff.schemas.frozen import freeze_fields
from sysdiff.transforms import span_alignment as A
from sysdiff.transforms import span_decoding as D
from sysdiff.transforms import span_tables as R
from sysdiff.transforms import spans as T
from sysdiff.transforms.alignment import first_difference, words_text
from sysdiff.transforms.plan import Shard

log = logging.getLogger("sysdiff")
SPAN_READ = ["sent", "start", "end", "type", "text"]


def options_string(spec: RunSpec, by_chars: bool = False, ci: bool = False) -> str:
    """What produced a row: the scheme, the bootstrap settings of its intervals (``ci``: a
    table with intervals), ``align:characters`` for a system tokenised otherwise than the
    key (or a pair with one), and the label mappings (as the token tables say)."""
    maps = ";".join(f"{s}:" + ",".join(f"{a}>{b}" for a, b in sorted(m.items()))
                    for s, m in sorted(spec.mappings.items()) if m)
    intervals = f"|{spec.intervals.options()}" if ci else ""
    align = "|align:characters" if by_chars else ""
    return f"scheme:{spec.scheme}{intervals}{align}|map:{maps or 'none'}"


def _options(spec: RunSpec, by_chars: list[str], *columns: str) -> pl.Expr:
    """The options of each row of a table with intervals: aligned ones where a named system
    is placed by characters."""
    plain = pl.lit(options_string(spec, ci=True))
    if not by_chars:
        return plain
    touched = pl.any_horizontal(pl.col(c).is_in(by_chars) for c in columns)
    return pl.when(touched).then(pl.lit(options_string(spec, True, True))).otherwise(plain)


@dataclass(frozen=True)
class SpanFile:
    """One ingested file: where its tables lie, its ``systems`` and ``span_tags`` rows, and
    the signature of its ingest (content, format, scheme, mapping and, for a system, the
    key's); plain, immutable values (a task's result and another's parameter)."""

    system: str
    sig: str
    spans: str
    tokens: str
    sents: str
    systems: str
    tags: str
    alignment: str = "identical"
    #: notes on the file read now, said in the run's source order once every file is read
    notes: tuple[str, ...] = ()
    staged: tuple[StagedFile, ...] = ()

    @property
    def by_chars(self) -> bool:
        """The file is tokenised otherwise than the key: its spans are placed by characters."""
        return self.alignment == "characters"


def _mapping(spec: RunSpec, sid: str) -> dict[str, str]:
    return dict(spec.mappings.get("@key" if sid == KEY_ID else sid, {}))


def ingest_signature(spec: RunSpec, sid: str, sha: str, fmt: str, key_sig: str | None) -> str:
    return signature(sha, fmt, spec.scheme, sorted(_mapping(spec, sid).items()), key_sig)


class KeyTokens:
    """The key's staged tokens, read back one chunk's sentences at a time (forms for the
    check, mapped tags for token accuracy)."""

    def __init__(self, key: SpanFile) -> None:
        self.path = key.tokens
        self.sents = read_parquet(key.sents, columns=["sent", "sent_id", "n_words", "line"],
                                     glob=False)

    def words(self, lo: int, hi: int) -> pl.DataFrame:
        return (scan_parquet(self.path, glob=False)
                .filter(pl.col("sent").is_between(lo, hi))
                .select("sent", "id", "form", "label").collect())


@dataclass(frozen=True)
class SpanIngest:
    """One tag file to ingest (a task's only parameter)."""

    spec: RunSpec
    source: Source
    role: str
    stage_dir: str
    key: SpanFile | None
    at: dt.datetime


SPAN_FILE_TABLES = ("span_tokens", "sents", "spans")


@task(name="ingest", task_run_name="ingest {job.spec.corpus} {job.source.id}",
      cache_policy=NONE)
def ingest_span_file(job: SpanIngest) -> SpanFile:
    """Read, validate, map, decode and stage one tag file in one pass (see the module)."""
    from sysdiff.schemas.formats.conllu import WordCheck
    from sysdiff.schemas.formats.spans import iter_tags

    spec, source, key = job.spec, job.source, job.key
    sid, corpus = source.id, spec.corpus
    part = partition(corpus, sid)
    mapping = _mapping(spec, sid)
    lean = None if key is None else ingest_lean(job, mapping)
    if lean is not None:
        return lean
    key_tokens = KeyTokens(key) if key is not None else None
    check = None if key is None else WordCheck(str(spec.key.path), key_tokens.sents,
                                               str(source.path))
    stats = _Stats(spec.scheme)
    fmt = source.fmt
    # one version of the file: hash, rows, stamp; the staged files dropped on an error
    with StableFile(source.path) as file, PieceWriters(job.stage_dir, part) as writers:
        for chunk in iter_tags(file, source.fmt, spec.scheme):
            if not writers.opened:
                fmt = chunk.fmt
                writers.open(SPAN_FILE_TABLES)
            toks = D.map_types(chunk.tokens, mapping).with_columns(label=D.label_expr())
            lo, hi = int(chunk.sents["sent"][0]), int(chunk.sents["sent"][-1])
            if check is not None:
                kw = key_tokens.words(lo, hi)
                check.add(chunk, kw)
                stats.add_accuracy(toks, kw)
            spans, decoded = D.decode_spans(toks, spec.scheme)
            stats.add(chunk, spans, decoded, toks)
            writers.append("span_tokens", with_literals(
                _stored_tokens(toks, key is None), corpus=corpus, system=sid))
            writers.append("sents", with_literals(chunk.sents, corpus=corpus, system=sid))
            writers.append("spans", with_literals(spans, corpus=corpus, system=sid))
        mismatch = None if check is None else check.difference()
        sha = file.sha256  # of the bytes parsed; the reader checked it is unchanged
        sig = ingest_signature(spec, sid, sha, fmt, key.sig if key else None)
        staged = writers.close(sig)
    here = {t: str(location(job.stage_dir) / f.rel) for t, f in staged.items()}
    alignment = "identical"
    if mismatch is not None:  # another tokenisation: placed on the key's characters, or an error
        spans, mine, stats.n_right, stats.n_scored = place_on_key(
            spec, source, key, here, mismatch, fmt, file.stamp,
            same_tokens=mismatch is check.form_error)
        staged["spans"] = stage_frame(job.stage_dir, "spans", part, sig, spans)
        staged["span_tokens"] = stage_frame(job.stage_dir, "span_tokens", part, sig, mine)
        alignment = "characters"
    row = systems_row(spec, source, job.role, sha, fmt, stats.n_docs, stats.n_sents,
                      stats.n_tokens, alignment=alignment, at=job.at, stamp=file.stamp)
    tags = stats.tags_row(spec, sid, key is not None, alignment == "characters")
    staged["systems"] = stage_frame(job.stage_dir, "systems", part, sig, row)
    staged["span_tags"] = stage_frame(job.stage_dir, "span_tags", part, sig, tags)
    here = {t: str(location(job.stage_dir) / f.rel) for t, f in staged.items()}
    return SpanFile(sid, sig, here["spans"], here["span_tokens"], here["sents"],
                    here["systems"], here["span_tags"], alignment,
                    stats.notes(source, mapping, job.role), tuple(staged.values()))


def place_on_key(spec: RunSpec, source: Source, key: SpanFile, mine_paths: dict[str, str],
                 mismatch: InputError, fmt: str, stamp: Stamp, same_tokens: bool = False
                 ) -> tuple[pl.DataFrame, pl.DataFrame, int, int]:
    """A system whose tokens differ from the key's: when its text (characters without
    spaces, NFC) is the key's, its spans placed on the key's characters and its tokens with
    their own forms (:mod:`sysdiff.transforms.span_alignment`), with (key tokens it labels
    alike, key tokens); else an error at the first differing character, or, when it has the
    key's number of tokens in every sentence (``same_tokens``), the word check's own error
    (the token whose form differs). The file is read once more, for its forms: it must still
    be the version read first (``stamp``)."""
    from sysdiff.flows.token_ingest import text_difference
    from sysdiff.schemas.formats.spans import iter_tags

    key_tokens = read_parquet(key.tokens, columns=["sent", "id", "form", "label", "line"],
                                 glob=False)
    mine = read_parquet(mine_paths["span_tokens"], glob=False)
    with StableFile(source.path, expect=stamp) as again:
        forms = pl.concat([c.tokens["form"] for c in iter_tags(again, fmt, spec.scheme)])
    mine = mine.with_columns(form=forms)
    key_text, sys_text = words_text(key_tokens), words_text(mine)
    at = first_difference(key_text.chars, sys_text.chars)
    if at is not None:
        raise mismatch if same_tokens else text_difference(spec, source, key_text, sys_text,
                                                           at, mismatch)
    spans = A.place_spans(read_parquet(mine_paths["spans"], glob=False), key_text,
                          sys_text)
    right = A.same_span_tokens(key_text, key_tokens["label"], sys_text, mine["label"])
    return spans, mine, right, key_tokens.height


def _stored_tokens(toks: pl.DataFrame, is_key: bool) -> pl.DataFrame:
    """The ``span_tokens`` rows of a file: a system's forms are the key's (checked), so only
    the key stores them."""
    return toks if is_key else toks.with_columns(form=pl.lit(None, pl.String))


@dataclass(frozen=True)
class LeanKey:
    """What a system read on the key's frame takes from the key: its format and separator,
    its token lines (0-based) and frame digest (:mod:`sysdiff.schemas.formats.fast_tags`),
    its tokens (``sent``, ``id``, ``form``), its labels coded (``labels[label_codes[i]]``)
    and its sentences' documents."""

    fmt: str
    sep: int
    lines: np.ndarray
    digest: bytes
    tokens: pl.DataFrame
    label_codes: np.ndarray
    labels: pl.Series
    docs: pl.DataFrame


@shared_cache(maxsize=1)
def lean_key(path: str, tokens: str, sents: str, systems: str) -> LeanKey | None:
    """The key's :class:`LeanKey` from its staged tables and its file (read once per
    process; None when that file is no longer the version ingested, or is not one the fast
    reader reads)."""
    row = read_parquet(systems, columns=["sha256", "format"], glob=False).row(0)
    toks = read_parquet(tokens, columns=["sent", "id", "form", "label", "line"], glob=False)
    lines = _frozen(toks["line"].to_numpy() - 1)
    with StableFile(path) as f:
        if not lines.size or f.size > LEAN_BYTES:
            return None
        data = f.read()
        f.check()
        if f.sha256 != row[0]:
            return None
    sep = separator(row[1], data, int(lines[0]))
    frame = tag_frame(data, row[1], lines, sep)
    if frame is None:
        return None
    labels = toks["label"].cast(pl.Categorical(pl.Categories.random()))
    return LeanKey(row[1], sep, lines, frame.digest, toks.select("sent", "id", "form"),
                   _frozen(labels.to_physical().to_numpy()),
                   labels.dtype.categories.to_series(),
                   read_parquet(sents, columns=["doc"], glob=False))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def ingest_lean(job: SpanIngest, mapping: dict[str, str]) -> SpanFile | None:
    """A system whose frame is the key's, read fast (only its tags, coded) and stored lean
    (``span_words``: no forms, lines or sentences, the key's stand for them); None when the
    full reader must read it. Everything per token is a gather of a per-tag value."""
    spec, source, key = job.spec, job.source, job.key
    k = lean_key(str(spec.key.path), key.tokens, key.sents, key.systems)
    if k is None or (source.fmt or k.fmt) != k.fmt:
        return None
    with StableFile(source.path) as file:
        if file.size > LEAN_BYTES:
            return None
        found = tag_frame(file.read(), k.fmt, k.lines, k.sep)
        file.check()
        sha, stamp = file.sha256, file.stamp
    if found is None or found.digest != k.digest:
        return None
    kinds = tag_kinds(found.values, spec.scheme)  # one row per code
    if kinds is None:
        return None
    mapped = D.map_types(kinds, mapping).with_columns(label=D.label_expr())
    codes = found.codes
    type_codes = mapped["type"].fill_null("").cast(pl.Categorical).to_physical().to_numpy()
    d = D.decode(mapped["prefix"].to_numpy()[codes], type_codes.astype(np.int64)[codes],
                 k.tokens["sent"].to_numpy(), spec.scheme)
    spans = D.span_rows(k.tokens, d, mapped["type"].gather(codes[d.first]))
    labels = mapped["label"].unique(maintain_order=True)
    label_of = _positions(mapped["label"], labels)  # per code, its label's position
    in_key = _positions(labels, k.labels)  # per label, its code in the key's (-1: none)
    stats = _Stats(spec.scheme)
    stats.count(k.docs, codes.size, kinds["type"], spans, d)
    stats.n_right = int((in_key[label_of][codes] == k.label_codes).sum())
    sid, part = source.id, partition(spec.corpus, source.id)
    sig = ingest_signature(spec, sid, sha, k.fmt, key.sig)
    owner = {"corpus": spec.corpus, "system": sid}
    words = _lean_words(owner, k.tokens, {"tag": (codes, found.values),
                                          "label": (label_of[codes], labels)})
    row = systems_row(spec, source, job.role, sha, k.fmt, stats.n_docs, stats.n_sents,
                      stats.n_tokens, alignment="identical", at=job.at, stamp=stamp)
    staged = {"spans": stage_frame(job.stage_dir, "spans", part, sig,
                                   with_literals(spans, **owner)),
              "span_words": stage_frame(job.stage_dir, "span_words", part, sig, words),
              "systems": stage_frame(job.stage_dir, "systems", part, sig, row),
              "span_tags": stage_frame(job.stage_dir, "span_tags", part, sig,
                                       stats.tags_row(spec, sid, True))}
    here = {t: str(location(job.stage_dir) / f.rel) for t, f in staged.items()}
    return SpanFile(sid, sig, here["spans"], here["span_words"], "", here["systems"],
                    here["span_tags"], "identical", stats.notes(source, mapping, job.role),
                    tuple(staged.values()))


def _lean_words(owner: dict[str, str], tokens: pl.DataFrame,
                coded: dict[str, tuple[np.ndarray, pl.Series]]) -> pa.Table:
    """The ``span_words`` rows, one per key token in the key's order (no sentence or ID:
    row n is the key's token n): the owner, and each coded column (codes, values) as an
    Arrow dictionary (written as it is, nothing hashed)."""
    def dictionary(codes: np.ndarray, values: list[str]) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(codes.astype(np.int32, copy=False),
                                              pa.array(values, pa.string()))

    same = np.zeros(tokens.height, np.int32)
    return pa.table({**{k: dictionary(same, [v]) for k, v in owner.items()},
                     **{k: dictionary(c, v.to_list()) for k, (c, v) in coded.items()}})


def _positions(values: pl.Series, among: pl.Series) -> np.ndarray:
    """The position of each of ``values`` in ``among`` (distinct), -1 where absent."""
    where = {v: i for i, v in enumerate(among.to_list())}
    return np.array([where.get(v, -1) for v in values.to_list()], np.int64)


def tag_kinds(tags: pl.Series, scheme: str) -> pl.DataFrame | None:
    """Each of ``tags`` (distinct) with its ``prefix`` and ``type``, in order; None when
    one is not a tag the scheme allows (the full reader reports it at its line)."""
    from sysdiff.schemas.formats.spans import _tags

    try:
        return _tags("", pl.DataFrame({"tag": tags, "line": 0}), scheme).select(
            "tag", "prefix", "type")
    except InputError:
        return None


class _Stats:
    """What an ingest counts over its chunks."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme
        self.n_sents = self.n_tokens = self.n_spans = self.n_docs = 0
        self.n_not_iob2 = self.n_not_bioes = 0
        self.n_right = 0
        self.n_scored: int | None = None  # key tokens, when placed by characters
        self.has_es = self.has_i_start = self.has_b_start = False
        self.raw_types: set[str] = set()

    def add(self, chunk, spans: pl.DataFrame, d: D.Decoded, toks: pl.DataFrame) -> None:
        self.count(chunk.sents, chunk.tokens.height, chunk.tokens["type"], spans, d)

    def count(self, sents: pl.DataFrame, n_tokens: int, types: pl.Series, spans: pl.DataFrame,
              d: D.Decoded) -> None:
        """Add sentences (with ``doc``), tokens, their types as written, and spans."""
        self.n_sents += sents.height
        self.n_tokens += n_tokens
        self.n_spans += spans.height
        self.n_not_iob2 += d.n_not_iob2
        self.n_not_bioes += d.n_not_bioes
        self.has_es |= d.has_es
        self.has_i_start |= d.has_i_start
        self.has_b_start |= d.has_b_start
        self.n_docs = int(sents["doc"][-1]) + 1
        self.raw_types.update(types.drop_nulls().unique().to_list())

    def add_accuracy(self, toks: pl.DataFrame, key_words: pl.DataFrame) -> None:
        """Tokens whose mapped tag equals the key's (when the chunk has the key's shape; a
        shape that differs is reported by the word check)."""
        mine = toks["label"]
        if key_words.height == mine.len():
            self.n_right += int((key_words["label"] == mine).sum())

    @property
    def detected(self) -> str:
        """The scheme the whole file's tags follow (:func:`D.detected_scheme`)."""
        return D.detected_scheme(self.has_es, self.has_i_start, self.has_b_start)

    @property
    def rule(self) -> str:
        """The scheme spans are read by: ``--scheme``, or for auto the one detected."""
        return self.detected if self.scheme == "auto" else self.scheme

    @property
    def n_ill(self) -> int:
        """Spans ill-formed under :attr:`rule` (none under IOB1)."""
        return D.ill_formed(self.scheme, self.detected, self.n_not_iob2, self.n_not_bioes)

    def tags_row(self, spec: RunSpec, sid: str, scored: bool, by_chars: bool = False
                 ) -> pl.DataFrame:
        units = self.n_tokens if self.n_scored is None else self.n_scored
        acc = self.n_right / units if scored and units else None
        return pl.DataFrame([{
            "corpus": spec.corpus, "system": sid, "scheme": spec.scheme,
            "detected": self.detected, "n_sents": self.n_sents, "n_tokens": self.n_tokens,
            "n_tokens_correct": self.n_right if scored else None, "token_accuracy": acc,
            "n_spans": self.n_spans, "n_ill_formed": self.n_ill,
            "options": options_string(spec, by_chars)}],
            schema_overrides={"n_tokens_correct": pl.Int64, "token_accuracy": pl.Float64})

    def notes(self, source: Source, mapping: dict[str, str], role: str) -> tuple[str, ...]:
        """What to say about the file: mapped types it does not have, ill-formed spans."""
        unused = sorted(set(mapping) - set(self.raw_types))
        who = "the key" if role == "key" else f"system '{source.id}'"
        out = []
        if unused:
            out.append(f"{who}: the mapping names types its file does not have: "
                       f"{', '.join(unused[:8])}{' ...' if len(unused) > 8 else ''}")
        if self.n_ill:
            example = "I-X after O" if self.rule == "iob2" else "B-X without E-X"
            how = ("scheme auto reads them as conlleval does, --scheme iob2/bioes drops them "
                   "(seqeval strict)" if self.scheme == "auto" else
                   f"--scheme {self.scheme} drops them (seqeval strict); scheme auto reads "
                   "them as conlleval does")
            out.append(f"{who}: {self.n_ill} span(s) are ill-formed for {self.rule.upper()} "
                       f"(e.g. {example}); {how}")
        return tuple(out)


def _live(stage: Staging, corpus: str, row: dict, sig: str) -> SpanFile:
    """A file ingested by an earlier run, as the warehouse holds it."""
    part = partition(corpus, row["system"])
    file = functools.partial(stage.live_file, partition=part)
    tokens = file("span_tokens") or file("span_words")  # a system stored in full, or lean
    return SpanFile(row["system"], sig, str(file("spans")), str(tokens),
                    str(file("sents") or ""), str(file("systems")), str(file("span_tags")),
                    row.get("alignment") or "identical")


def ingest_spans(spec: RunSpec, stage: Staging) -> dict[str, SpanFile]:
    """Ingest the key, then the systems (several at once): an unchanged file (same path,
    size, time, and the same options and key) is not read again. Notes on the files read
    are said in the run's source order."""
    known = known_inputs(stage, spec.corpus)

    def reuse(source: Source, role: str, key: SpanFile | None) -> SpanFile | None:
        row, part = known.get(source.id), partition(spec.corpus, source.id)
        sig = None if row is None else ingest_signature(
            spec, source.id, row["sha256"], row["format"], key.sig if key else None)
        if unchanged(row, source.path) and all(
                stage.has(t, part, sig) for t in ("spans", "span_tags")) and any(
                stage.has(t, part, sig) for t in ("span_tokens", "span_words")):
            return _live(stage, spec.corpus, row, sig)
        return None

    def submit(source: Source, role: str, key: SpanFile | None, at: dt.datetime):
        return ingest_span_file.submit(SpanIngest(spec, source, role, str(stage.dir), key, at))

    files = ingest_all(spec, stage, reuse, submit)
    for file in files.values():
        if file.staged:  # read now: the tables of its other layout go
            lean = any(f.table == "span_words" for f in file.staged)
            for table in ("span_tokens", "sents") if lean else ("span_words",):
                stage.drop(table, partition(spec.corpus, file.system))
        for note in file.notes:
            notice(note)
    return files


# ------------------------------------------------------------------------------ compare


@dataclass(frozen=True)
class SpanJob:
    """What every shard task needs (small and picklable)."""

    systems: list[str]
    paths: dict[str, str]
    types: list[str]
    compare: bool
    #: systems placed on the key's characters, and then the key's token file (their spans
    #: and everyone's are compared by characters)
    by_chars: tuple[str, ...] = ()
    key_tokens: str | None = None
    #: count the per-sentence rows of the bootstrap intervals
    per_sentence: bool = False

    def __post_init__(self) -> None:
        freeze_fields(self)  # a task parameter: nothing in it can change


def read_shard_spans(path: str, shard: Shard) -> pl.DataFrame:
    """The spans of a shard's sentences, in file order."""
    return (scan_parquet(path, glob=False)
            .filter(pl.col("sent").is_between(shard.lo, shard.hi - 1))
            .select(SPAN_READ).collect())


@task(name="compare spans", task_run_name="spans {shard.index}", cache_policy=NONE,
      retries=2)
def span_shard(job: SpanJob, shard: Shard) -> tuple[T.SpanCounts, list[pl.DataFrame]]:
    """The map: additive counts of one shard and each system's class rows."""
    key = read_shard_spans(job.paths[KEY_ID], shard)
    systems = [read_shard_spans(job.paths[s], shard) for s in job.systems]
    if job.by_chars:
        offsets = A.key_offsets(scan_parquet(job.key_tokens, glob=False)
                                .filter(pl.col("sent").is_between(shard.lo, shard.hi - 1))
                                .select("sent", "id", "form").collect())
        key = A.char_positions(key, offsets)
        systems = [A.char_positions(s, offsets) for s in systems]
    return T.comparison_counts(key, systems, job.types, shard.lo, shard.hi - shard.lo,
                               job.compare, job.per_sentence)


def corpus_types(paths: dict[str, str]) -> list[str]:
    """Every span type of the corpus' files, sorted (the group codes, equal in every shard)."""
    types = (pl.concat([scan_parquet(p, glob=False).select("type") for p in paths.values()])
             .unique().collect()["type"].drop_nulls().to_list())
    return sorted(types)


def run_spans(spec: RunSpec, stage: Staging) -> None:
    """The span task: ingest, then every span table."""
    compare_spans(spec, stage, ingest_spans(spec, stage))


def compare_spans(spec: RunSpec, stage: Staging, files: dict[str, SpanFile]) -> None:
    """Scores and classes of every stale system; pairs, transitions and oracles of the run's
    systems when any input or option changed."""
    corpus = spec.corpus
    systems = [s.id for s in spec.systems if s.id in files]
    opts = (spec.ar_trials, spec.seed, spec.intervals.options())
    sigs = {s: signature(files[s].sig, "span-results", spec.intervals.options())
            for s in systems}
    all_sig = signature(sorted((s, files[s].sig) for s in systems), opts, "span-compare")
    score = [s for s in systems if not stage.has("span_scores", partition(corpus, s), sigs[s])]
    compare = bool(systems) and not stage.has("span_oracles", corpus_partition(corpus), all_sig)
    if score or compare:
        _compute(spec, stage, files, systems, score, compare, sigs, all_sig)
    stage_history(spec, stage, "spans", all_sig)


def _compute(spec: RunSpec, stage: Staging, files: dict[str, SpanFile], systems: list[str],
             score: list[str], compare: bool, sigs: dict[str, str], all_sig: str) -> None:
    """Map the shards, stream the class rows of the stale systems, reduce and stage."""
    corpus = spec.corpus
    crash_point("compare")
    paths = {s: str(files[s].spans) for s in [KEY_ID, *systems]}
    key_sents = read_parquet(files[KEY_ID].sents, columns=["sent", "doc", "n_words"],
                             glob=False)
    shards = shard_plan(key_sents, spec.shard_sents, len(paths))
    types = corpus_types(paths)
    _type_notice(systems, paths)
    by_chars = tuple(s for s in systems if files[s].by_chars)
    job = SpanJob(systems, paths, types, compare, by_chars,
                  str(files[KEY_ID].tokens) if by_chars else None, spec.intervals.on)
    with contextlib.ExitStack() as stack, progress("compare", len(shards)) as tick:
        fold = _Fold(systems, {s: stack.enter_context(stage.writer(
            "span_classes", partition(corpus, s), sigs[s])) for s in score}, corpus)
        map_fold(lambda sh: span_shard.submit(job, sh), shards, fold, tick)
    c = fold.total
    ci = spec.intervals
    samples = R.f1_samples(c, ci) if ci.on else None
    scores = R.score_rows(c, systems, types, samples, ci.confidence).with_columns(
        scheme=pl.lit(spec.scheme), options=_options(spec, list(by_chars), "system"))
    for s in score:
        stage.write("span_scores", partition(corpus, s), sigs[s],
                    with_literals(scores.filter(pl.col("system") == s), corpus=corpus))
    if not compare:
        return
    part = corpus_partition(corpus)
    tag = {"corpus": corpus, "scheme": spec.scheme}
    stage.write("span_oracles", part, all_sig, with_literals(R.oracle_rows(c, systems, types),
                                                             **tag))
    if len(systems) < 2:
        return
    pairs = R.pair_rows(c, systems, spec.ar_trials, spec.seed, samples, ci.confidence)
    stage.write("span_pairs", part, all_sig, with_literals(pairs, **tag).with_columns(
        options=_options(spec, list(by_chars), "sys1", "sys2")))
    stage.write("span_transitions", part, all_sig,
                with_literals(R.transition_rows(c, systems, types), **tag))


class _Fold:
    """Sums the shards' counts in shard order and streams the class rows of the systems
    whose tables are recomputed."""

    def __init__(self, systems: list[str], writers: dict[str, Callable], corpus: str) -> None:
        self.index = {s: i for i, s in enumerate(systems)}
        self.writers, self.corpus = writers, corpus
        self.total: T.SpanCounts | None = None

    def __call__(self, result: tuple[T.SpanCounts, list[pl.DataFrame]]) -> None:
        counts, rows = result
        self.total = counts if self.total is None else self.total.merge(counts)
        for s, append in self.writers.items():
            append(with_literals(rows[self.index[s]], corpus=self.corpus, system=s))


def _type_notice(systems: list[str], paths: dict[str, str]) -> None:
    """Say once which systems predict types the key does not have (scored as spurious)."""
    key_types = set(corpus_types({KEY_ID: paths[KEY_ID]}))
    for s in systems:
        counts = (scan_parquet(paths[s], glob=False).group_by("type").len()
                  .collect().filter(~pl.col("type").is_in(list(key_types)))
                  .sort("len", descending=True))
        if counts.height:
            shown = ", ".join(f"{t} ({n})" for t, n in counts.head(6).rows())
            notice(f"system '{s}' predicts types the key does not have: {shown}"
                   f"{' ...' if counts.height > 6 else ''}; they count as spurious spans "
                   "(map them with --map TYPE=KEYTYPE or TYPE=O)")
