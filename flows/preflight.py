"""Checks that need no Prefect, run before it starts (a bad path or name fails in well under a
second): every input file exists, is a readable regular file with text in it, its format can
be told from its head (the task from the key's, when none is given: ``sniff.infer_task``), and
the warehouse is not locked by another run.

With ``keep_going`` a bad system file is skipped (one line each); a bad key never is.
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from sysdiff.flows.names import check_warehouse_folder, read_manifest
from sysdiff.flows.sniff import read_head
from sysdiff.flows.spec import RunSpec, Source
from sysdiff.flows.store import StoreURL
from sysdiff.schemas.errors import InputError

if TYPE_CHECKING:
    from sysdiff.flows.warehouse import Staging

log = logging.getLogger("sysdiff")
EXPECTED = {"pos": "tab-separated token lines (CoNLL-U, CoNLL-X or word<TAB>tag)",
            "dep": "tab-separated token lines (CoNLL-U or CoNLL-X)",
            "coref": "CoNLL-2012, CorefUD or JSON lines", "unl": "a UNL document",
            "nl": "a UNL document with target-language sentences",
            "ner": "tag lines (word<TAB>tag, CoNLL-2003 or UniversalNER)",
            "srl": "SRL columns (Universal PropBank CoNLL-U, CoNLL-2009 or CoNLL-2005)"}


def check_file(source: Source, task: str) -> str | None:
    """Check one input file from its head; return the detected format (None for UNL)."""
    path = source.path if isinstance(source.path, StoreURL) else Path(source.path)
    head, whole = read_head(path, EXPECTED[task])
    return detect(path, head, source.fmt, task, whole)


#: Heads of object-store inputs fetched at once (each is a few requests: on a store, one
#: after another they were most of a run's start).
HEAD_FETCHES = 16


def check_files(sources: list[Source], task: str) -> list[InputError | None]:
    """:func:`check_file` of each source, in order: the error of each bad one (None for a
    good one). The heads of object-store inputs are fetched at once."""
    def one(source: Source) -> InputError | None:
        try:
            check_file(source, task)
        except InputError as e:
            return e
        return None

    if sum(isinstance(s.path, StoreURL) for s in sources) < 2:
        return [one(s) for s in sources]
    with ThreadPoolExecutor(min(HEAD_FETCHES, len(sources))) as pool:
        return list(pool.map(one, sources))


def detect(path: Path, head: bytes, fmt: str | None, task: str, whole: bool) -> str | None:
    """The format of a file from its head (``fmt`` when given)."""
    if fmt or task in ("unl", "nl"):
        return fmt
    if task == "coref":
        from sysdiff.schemas.formats.coref import detect_coref_format

        return detect_coref_format(head.decode("utf-8", errors="replace"), path)
    if task == "ner":
        from sysdiff.schemas.formats.spans import detect_span_format

        return detect_span_format(path, head)
    if task == "srl":
        from sysdiff.schemas.formats.srl import detect_srl_format

        return detect_srl_format(path, head)
    from sysdiff.schemas.formats.conllu import detect_token_format

    try:
        return detect_token_format(path, head)
    except InputError as e:
        if whole or "only comments" not in e.message:
            raise
        return None  # a head of comments only: the reader decides


def check_lock(root: Path) -> None:
    """Refuse now (before Prefect starts) when another run holds the warehouse; the run takes
    the lock for real later (:func:`warehouse_lock`)."""
    if isinstance(root, StoreURL):
        from sysdiff.flows.objstore import check_lease

        check_lease(root)
        return
    lock = root.parent / f".{root.name}.lock"
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except BlockingIOError:
        raise InputError("another sysdiff run is writing to this warehouse; wait for it to "
                         "finish (runs on one warehouse are serialised)", root) from None
    finally:
        os.close(fd)


def preflight(spec: RunSpec, root: Path) -> tuple[RunSpec, list[str]]:
    """Check the warehouse and every input file of ``spec``. Returns the spec without the
    systems skipped (``spec.keep_going``) and one line per skipped system; anything else
    wrong raises an InputError."""
    key_error, *errors = check_files([spec.key, *spec.systems], spec.task)
    if key_error is not None:
        raise key_error
    keep, skipped = [], []
    for source, error in zip(spec.systems, errors, strict=True):
        if error is None:
            keep.append(source)
        elif spec.keep_going:
            skipped.append(skip_line(source, error))
        else:
            raise error
    if not keep:
        raise InputError(f"no system left to evaluate: every system file of corpus "
                         f"'{spec.corpus}' is bad ({len(skipped)} skipped)")
    check_warehouse_folder(root)
    check_lock(root)
    check_key(spec, root, read_manifest(root))  # a damaged manifest is reported now
    return dataclasses.replace(spec, systems=keep), skipped


def check_key(spec: RunSpec, root: Path, manifest: dict) -> None:
    """Refuse a key that differs from the one the corpus' results were computed against
    (its systems of earlier runs would be compared with another key's words): one line
    naming both, what to do instead. The same file (path, size, modification time), or the
    same content (SHA-256), passes; so does any key with ``spec.replace_key``."""
    from sysdiff.schemas.vocabulary import KEY_ID, natural_key

    systems = manifest["tables"].get("systems", {})
    entry = systems.get(f"corpus={spec.corpus}/system={KEY_ID}")
    if spec.replace_key or entry is None:
        return
    stored = _key_row(root / entry["file"])
    if stored is None:
        return
    path = Path(spec.key.path)
    stat = path.stat()
    if stored["path"] == str(path.absolute()) and (stored["size"], stored["mtime_ns"]) == (
            stat.st_size, stat.st_mtime_ns):
        return
    sha = _sha256(path)
    if sha == stored["sha256"]:
        return
    prefix = f"corpus={spec.corpus}/system="
    others = sorted((p.removeprefix(prefix) for p in systems
                     if p.startswith(prefix) and p != f"{prefix}{KEY_ID}"), key=natural_key)
    raise InputError(
        f"corpus '{spec.corpus}' was evaluated against another key: {stored['path']} "
        f"(SHA-256 {stored['sha256'][:12]}, {len(others)} system(s): {', '.join(others)}), "
        f"and this key differs (SHA-256 {sha[:12]}); give a new corpus name (--corpus, or "
        "'corpus' in the run file), or --replace-key to evaluate against this key from "
        "scratch (the corpus' systems of earlier runs are removed)", path)


def _key_row(file: Path) -> dict | None:
    """The stored key's ``systems`` row (path, sha256, size, mtime_ns), or None."""
    import duckdb

    try:
        rel = duckdb.connect(":memory:")
        row = rel.execute("select path, sha256, size, mtime_ns from read_parquet(?)",
                          [str(file)]).fetchone()
        rel.close()
    except (duckdb.Error, OSError):
        return None  # a damaged file: the run checks and recomputes it
    return None if row is None else dict(zip(("path", "sha256", "size", "mtime_ns"), row,
                                             strict=True))


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def skip_line(source: Source, error: InputError) -> str:
    """One line for a skipped system: ``system 'NAME' skipped: FILE:LINE: reason``."""
    where = str(error) if error.path is not None else f"{source.path}: {error}"
    return f"system '{source.id}' skipped: {where}"


def skip_system(spec: RunSpec, stage: Staging, source: Source, role: str,
                error: InputError) -> None:
    """In an ingest loop: with ``spec.keep_going``, record and report a bad system file (one
    line) and let the run go on without it; otherwise (or for the key) raise ``error``."""
    if role == "key" or not spec.keep_going:
        raise error
    line = skip_line(source, error)
    stage.skipped.append(line)
    log.warning("%s", line)


def check_some_left(spec: RunSpec, stage: Staging) -> None:
    """After an ingest loop: refuse to go on when every system was skipped."""
    if spec.systems and len(stage.skipped) >= len(spec.systems):
        raise InputError(f"no system left to evaluate: every system file of corpus "
                         f"'{spec.corpus}' is bad ({len(stage.skipped)} skipped)")
