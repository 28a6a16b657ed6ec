"""The warehouse: Parquet partitions (system of record), a manifest, and a DuckDB catalog.

Layout::

    <warehouse>/manifest.json                 live partitions of every table (written last)
    <warehouse>/tables/<table>/<partition>/<signature>.parquet
    <warehouse>/sysdiff.duckdb                one view per table over the live files

A run stages its files outside the warehouse, then ``commit`` lists them as its own
(``.sysdiff-owned.json``), moves them in, replaces the manifest atomically (temp file +
rename), rebuilds the catalog and deletes superseded files once no reader holds the
warehouse. A run that fails or is killed before the manifest is replaced leaves the previous
results readable; one that fails on bad input leaves the warehouse byte-identical.

A run writes only into a new or empty folder, or a warehouse (marked by ``.sysdiff-warehouse``),
and deletes only files it lists as its own: never a file it did not write.

Paths in the manifest are relative to the warehouse folder, so the folder can be copied or
moved; readers resolve them from the warehouse root. The manifest records each file's size
and SHA-256; a run checks its corpus's files against them and recomputes a partition whose
file changed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from sysdiff.flows.catalog import (
    catalog_version,
    manifest_digest,
    refresh_catalog,
    table_ddl,
    table_files,
    umask,
)
from sysdiff.flows.locks import READERS, no_readers
from sysdiff.flows.names import (  # noqa: F401 (re-exported)
    DEFAULT_WAREHOUSE,
    FORMAT_VERSION,
    MANIFEST,
    MARKER,
    check_warehouse_folder,
    manifest_entry,
    read_manifest,
    resolve_warehouse,
)
from sysdiff.flows.store import StoreURL, location, open_write, scan_parquet
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import Stamp, input_stamp
from sysdiff.schemas.tables import all_tables, conform, parquet_options, polars_schema

if TYPE_CHECKING:
    from sysdiff.flows.spec import RunSpec, Source

log = logging.getLogger("sysdiff")
# Tables written when a file is ingested (the others are computed from them).
INGEST_TABLES = frozenset({"systems", "units", "words", "sents", "vocab", "mentions",
                           "coref_tokens"})
ROW_GROUP = 1 << 17  # rows per Parquet row group: shard reads skip the groups they do not need


def crash_point(name: str) -> None:
    """Die here with SIGKILL when ``SYSDIFF_CRASH_AT`` names this point (crash-safety tests);
    wait here while ``SYSDIFF_PAUSE_AT=NAME:FILE`` names it (the file is created, and the run
    goes on once a test has removed it: helper processes killed mid-run)."""
    if os.environ.get("SYSDIFF_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
    point, _, flag = os.environ.get("SYSDIFF_PAUSE_AT", "").partition(":")
    if point == name and flag:
        import time

        Path(flag).touch()
        deadline = time.monotonic() + 300
        while Path(flag).exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def signature(*parts: object) -> str:
    """A short content hash of inputs, options and :data:`FORMAT_VERSION` (stable across
    runs and machines)."""
    text = json.dumps([FORMAT_VERSION, *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def partition(corpus: str, system: str) -> str:
    """The partition key of one system's rows in a table."""
    return f"corpus={corpus}/system={system}"


def pair_partition(corpus: str, sys1: str, sys2: str) -> str:
    """The partition key of one pair's rows (both directions) in a table: the two names in
    sorted order, so that it does not depend on which system was ingested first."""
    a, b = sorted((sys1, sys2))
    return f"corpus={corpus}/pair={a}~{b}"


def corpus_partition(corpus: str) -> str:
    """The partition key of a corpus-wide table's rows (oracles, history, ...)."""
    return f"corpus={corpus}"


def input_sha256(path: str | Path) -> str:
    """The SHA-256 of an input file; a missing or unreadable file is an InputError."""
    from sysdiff.schemas.formats.conllu import read_bytes

    if not Path(path).is_file():
        read_bytes(path)  # raises the precise InputError
    return file_sha256(path)


def systems_row(spec: RunSpec, source: Source, role: str, sha: str, fmt: str, n_docs: int,
                n_sents: int, n_units: int, n_tokens: int | None = None,
                alignment: str | None = None, at: dt.datetime | None = None,
                stamp: Stamp | None = None) -> pl.DataFrame:
    """The ``systems`` table's row of one ingested file (the key's id is ``__key__``), with
    the file's size and modification time (those of the version read, ``stamp``, when
    given); ``n_tokens`` and ``alignment`` only for token tasks (null otherwise); ``at``:
    when it was ingested (now by default)."""
    stat = stamp or input_stamp(source.path)
    return pl.DataFrame([{
        "corpus": spec.corpus, "system": source.id, "version": source.version,
        "task": spec.task, "role": role, "format": fmt,
        "path": input_name(source.path), "sha256": sha, "n_docs": n_docs,
        "n_sents": n_sents, "n_units": n_units, "ingested_at": at or dt.datetime.now(dt.UTC),
        "size": stat.size, "mtime_ns": stat.mtime_ns,
        "n_tokens": n_tokens, "alignment": alignment,
    }], schema_overrides={"n_tokens": pl.Int64, "alignment": pl.String})


def known_inputs(stage: Staging, corpus: str) -> dict[str, dict]:
    """system -> its ``systems`` row, for what the warehouse already holds of a corpus."""
    rows = read_table(stage.root, "systems", stage.manifest, pl.col("corpus") == corpus)
    return {r["system"]: r for r in rows.to_dicts()}


def input_name(path: str | Path | StoreURL) -> str:
    """How ``systems.path`` names an input: its absolute path, or its URL."""
    return str(path) if isinstance(path, StoreURL) else str(Path(path).absolute())


def unchanged(row: dict | None, path: str | Path | StoreURL) -> bool:
    """The file is the one read before: same path, size and modification time (as ``make``
    and ``rsync`` judge; its recorded SHA-256 then stands for its content)."""
    if row is None or row.get("size") is None or row["path"] != input_name(path):
        return False
    try:
        stat = input_stamp(path)
    except InputError:
        return False
    return (row["size"], row["mtime_ns"]) == (stat.size, stat.mtime_ns)


def with_literals(df: pl.DataFrame, **values: object) -> pl.DataFrame:
    """``df`` with constant string columns (corpus, system, ...)."""
    return df.with_columns(pl.lit(v, pl.String).alias(k) for k, v in values.items())


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file through a temporary sibling and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def warehouse_lock(root: Path | StoreURL) -> Iterator[None]:
    """Serialise runs on one warehouse: an advisory lock on ``.<name>.lock`` beside it.

    The lock file exists before the warehouse does and stays after it, so two runs on a new
    warehouse lock the same file whichever starts first. On an object store: the writer's
    lease (:func:`sysdiff.flows.objstore.lease`).
    """
    if isinstance(root, StoreURL):
        from sysdiff.flows import objstore

        with objstore.lease(root):
            yield
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(root.parent / f".{root.name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "another sysdiff run is writing to this warehouse; wait for it to finish "
                "(runs on one warehouse are serialised)", root,
            ) from None
        yield
    finally:
        os.close(fd)


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path


@dataclass(frozen=True)
class StagedFile:
    """A file written into a run's staging folder (by a task, in any thread or process), and
    the partitions it holds with their signatures: what a task returns for the flow to
    record (:meth:`Staging.record`)."""

    table: str
    rel: str
    partitions: tuple[tuple[str, str], ...]
    #: the file's SHA-256 and size when the writer computed them (written to an object
    #: store, whose commit does not read the file back); empty: hashed at commit
    sha256: str = ""
    size: int = -1


class HashingFile:
    """A binary file to write that hashes what passes through it (for pyarrow's writer)."""

    def __init__(self, raw) -> None:  # noqa: ANN001 (any binary file)
        self.raw, self.sha, self.size, self.closed = raw, hashlib.sha256(), 0, False

    def write(self, data) -> int:  # noqa: ANN001 (bytes-like)
        view = memoryview(data)
        self.sha.update(view)
        self.size += view.nbytes
        self.raw.write(view)
        return view.nbytes

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.raw.flush()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
            self.closed = True


def parquet_writer(path: Path | StoreURL, schema) -> tuple[pq.ParquetWriter, HashingFile | None]:  # noqa: ANN001
    """A Parquet writer of a table's schema at ``path``: a local file as it is; an object
    through a hashing stream (its hash and size known when it closes)."""
    if isinstance(path, StoreURL):
        sink = HashingFile(open_write(path))
        return pq.ParquetWriter(sink, schema, **parquet_options(schema)), sink
    path.parent.mkdir(parents=True, exist_ok=True)
    return pq.ParquetWriter(path, schema, **parquet_options(schema)), None


def close_writer(out: pq.ParquetWriter, sink: HashingFile | None) -> tuple[str, int]:
    """Finish a file of :func:`parquet_writer`: its SHA-256 and size (empty, -1 locally)."""
    out.close()
    if sink is None:
        return "", -1
    sink.close()
    return sink.sha.hexdigest(), sink.size


class PieceWriter:
    """Writes one table's file into a staging folder in pieces (conformed to the table's
    Arrow schema): ``append(df)`` as often as needed, then :meth:`close`, which names the
    file after ``sig`` and returns what was staged. Used by tasks: it touches only its own
    file, never the run's :class:`Staging`."""

    def __init__(self, stage_dir: str | Path | StoreURL, table: str, partition: str) -> None:
        self.dir, self.table, self.partition = location(stage_dir), table, partition
        self.schema = all_tables()[table]
        self.rel = f"tables/{table}/{partition}/pending-{uuid.uuid4().hex[:16]}.parquet"
        self.out, self.sink = parquet_writer(self.dir / self.rel, self.schema)

    def append(self, df: pl.DataFrame | pa.Table) -> None:
        self.out.write_table(conform(df, self.schema), row_group_size=ROW_GROUP)

    def close(self, sig: str) -> StagedFile:
        """Finish the file and name it after its signature (on a disk; on an object store,
        where a rename is a copy, it keeps its unique name)."""
        sha, size = close_writer(self.out, self.sink)
        rel = self.rel
        if not isinstance(self.dir, StoreURL):
            rel = f"tables/{self.table}/{self.partition}/{sig}.parquet"
            os.replace(self.dir / self.rel, self.dir / rel)
        return StagedFile(self.table, rel, ((self.partition, sig),), sha, size)

    def abort(self) -> None:
        """Drop the file (its task failed)."""
        with contextlib.suppress(Exception):
            close_writer(self.out, self.sink)
        with contextlib.suppress(Exception):
            (self.dir / self.rel).unlink(missing_ok=True)


class PieceWriters:
    """The staging writers of one input file's tables, opened once the first chunk has told
    which tables its format fills: :meth:`open`, :meth:`append` per chunk, then :meth:`close`
    names them all after the signature. As a context manager, an exception before
    :meth:`close` drops every file opened."""

    def __init__(self, stage_dir: str | Path | StoreURL, partition: str) -> None:
        self.stage_dir, self.partition = stage_dir, partition
        self.writers: dict[str, PieceWriter] = {}

    @property
    def opened(self) -> bool:
        return bool(self.writers)

    def open(self, tables: Iterable[str]) -> None:
        for table in tables:
            self.writers[table] = PieceWriter(self.stage_dir, table, self.partition)

    def append(self, table: str, df: pl.DataFrame) -> None:
        self.writers[table].append(df)

    def close(self, sig: str) -> dict[str, StagedFile]:
        """Finish every file; after this, nothing is dropped on an exception."""
        staged = {table: w.close(sig) for table, w in self.writers.items()}
        self.writers = {}
        return staged

    def abort(self) -> None:
        for w in self.writers.values():
            w.abort()
        self.writers = {}

    def __enter__(self) -> PieceWriters:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None:
            self.abort()


def stage_frame(stage_dir: str | Path, table: str, partition: str, sig: str,
                df: pl.DataFrame | pa.Table) -> StagedFile:
    """Write one partition's rows (a frame, or an Arrow table of the table's types) into a
    staging folder (from a task)."""
    writer = PieceWriter(stage_dir, table, partition)
    try:
        writer.append(df)
    except BaseException:
        writer.abort()
        raise
    return writer.close(sig)


@dataclass
class Staging:
    """Partitions written by a run, waiting to be committed into the warehouse. Only the
    flow's own thread changes it: tasks write files into :attr:`dir` and return
    :class:`StagedFile` records, which the flow :meth:`record` s."""

    root: Path | StoreURL
    manifest: dict
    dir: Path | StoreURL
    staged: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: staged file -> (SHA-256, size), when its writer computed them
    hashes: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: the manifest version the run started from (a warehouse on an object store)
    version: int = 0
    skipped: list[str] = field(default_factory=list)  # bad system files (keep-going)
    run_id: str | None = None  # recorded in the manifest by commit (flows/outcome.py)
    #: live partitions this run removes (sysdiff rm; a file now stored in another way)
    dropped: set[tuple[str, str]] = field(default_factory=set)

    def record(self, files: Iterable[StagedFile]) -> None:
        """Stage what tasks wrote (each partition of each file, with its signature)."""
        for f in files:
            if f.sha256:
                self.hashes[f.rel] = (f.sha256, f.size)
            for partition, sig in f.partitions:
                self.staged[(f.table, partition)] = (f.rel, sig)
                self.dropped.discard((f.table, partition))


    def has(self, table: str, partition: str, sig: str) -> bool:
        """True when the live (or staged) partition already has this signature."""
        staged = self.staged.get((table, partition))
        if staged:
            return staged[1] == sig
        live = self.manifest["tables"].get(table, {}).get(partition)
        return (bool(live) and live["sig"] == sig and (table, partition) not in self.dropped
                and (self.root / live["file"]).exists())

    def live_file(self, table: str, partition: str) -> Path | StoreURL | None:
        """The committed file of a partition, if any (not one this run drops)."""
        live = self.manifest["tables"].get(table, {}).get(partition)
        return self.root / live["file"] if live and (table, partition) not in self.dropped \
            else None

    def write(self, table: str, partition: str, sig: str, df: pl.DataFrame
              ) -> Path | StoreURL:
        """Stage one partition (conformed to the table's Arrow schema)."""
        self.record([stage_frame(self.dir, table, partition, sig, df)])
        return self.staged_path(table, partition)

    @contextlib.contextmanager
    def writer(self, table: str, partition: str, sig: str
               ) -> Iterator[Callable[[pl.DataFrame], None]]:
        """Stage one partition written in pieces: yields ``append(df)``; the partition is
        staged only when the block ends without an error."""
        writer = PieceWriter(self.dir, table, partition)
        try:
            yield writer.append
        except BaseException:
            writer.abort()
            raise
        self.record([writer.close(sig)])

    @contextlib.contextmanager
    def block_writer(self, table: str, name: str, partitions: dict[str, str]
                     ) -> Iterator[Callable[[pl.DataFrame], None]]:
        """Stage several partitions (partition -> signature) in one file written in pieces
        (e.g. every pair computed by a run): yields ``append(df)``. The partitions share the
        file; they are staged only when the block ends without an error."""
        schema = all_tables()[table]
        rel = f"tables/{table}/{name}.parquet"
        out, sink = parquet_writer(self.dir / rel, schema)
        try:
            yield lambda df: out.write_table(conform(df, schema), row_group_size=ROW_GROUP)
        finally:
            sha, size = close_writer(out, sink)
        self.record([StagedFile(table, rel, tuple(partitions.items()), sha, size)])

    def current_files(self, table: str) -> list[Path | StoreURL]:
        """The files a table will have once this run commits: staged partitions replace live
        ones (a file shared by partitions once)."""
        live = self.manifest["tables"].get(table, {})
        files = {self.root / e["file"] for p, e in live.items()
                 if (table, p) not in self.staged and (table, p) not in self.dropped}
        files |= {self.dir / rel for (t, _), (rel, _) in self.staged.items() if t == table}
        return sorted(files, key=str)

    def read(self, table: str, where: pl.Expr | None = None) -> pl.DataFrame:
        """A table as it will be once this run commits (optionally filtered)."""
        files = self.current_files(table)
        if not files:
            return pl.DataFrame(schema=polars_schema(table))
        lf = scan_parquet([str(f) for f in files], glob=False)
        return (lf.filter(where) if where is not None else lf).collect()

    def staged_path(self, table: str, partition: str) -> Path | StoreURL | None:
        """Where a partition staged by this run lies before commit."""
        staged = self.staged.get((table, partition))
        return self.dir / staged[0] if staged else None

    # -------------------------------------------------------------- removal (sysdiff rm)

    def drop(self, table: str, partition: str) -> None:
        """Remove a live partition, unless this run stages it: from now on this run reads
        the table without it, and :func:`commit` writes the manifest without it (its file is
        deleted once nothing names it). Used by :mod:`sysdiff.flows.remove` and by ingest (a
        file now stored in another way); a partition staged again later in the run is
        committed as usual."""
        if (table, partition) in self.staged or not self.live_file(table, partition):
            return
        self.manifest["tables"].get(table, {}).pop(partition, None)
        self.dropped.add((table, partition))


#: The files this sysdiff wrote into the warehouse and has not deleted yet (live, superseded,
#: or moved in by a run killed before its manifest): the only files a run ever deletes.
OWNED = ".sysdiff-owned.json"


def claim_warehouse(root: Path) -> None:
    """Make ``root`` a warehouse (at its first commit, under the lock): a new or empty folder
    gets the marker and the readers' lock file; a warehouse of an older sysdiff (a manifest,
    no marker) is adopted, its manifest's files listed as its own. Anything else is refused
    (:func:`open_run` refused it before the run)."""
    check_warehouse_folder(root)
    if (root / MARKER).is_file():
        return
    root.mkdir(parents=True, exist_ok=True)
    if (root / MANIFEST).is_file() and not (root / OWNED).is_file():
        write_owned(root, manifest_files(read_manifest(root)))
    (root / READERS).touch()
    stamp = {"sysdiff_warehouse": 1, "created": dt.datetime.now(dt.UTC).isoformat()}
    atomic_write_bytes(root / MARKER, json.dumps(stamp).encode())


def manifest_files(manifest: dict) -> set[str]:
    """Every file the manifest names (relative to the warehouse)."""
    return {e["file"] for parts in manifest["tables"].values() for e in parts.values()}


def read_owned(root: Path) -> set[str]:
    """The files listed as this sysdiff's own (relative paths)."""
    try:
        return set(json.loads((root / OWNED).read_bytes()))
    except FileNotFoundError:
        return set()


def write_owned(root: Path, files: set[str]) -> None:
    atomic_write_bytes(root / OWNED, json.dumps(sorted(files), indent=0).encode())


@contextlib.contextmanager
def open_run(root: Path, corpus: str | None = None, run_id: str | None = None
             ) -> Iterator[Staging]:
    """Lock the warehouse, stage a run's files and commit them only if the run succeeds.

    The live files of ``corpus`` are checked against the manifest's hashes first: a damaged
    partition is dropped from the run's view of the manifest, so the run recomputes it.
    ``run_id`` is recorded in the manifest of the commit (whether it landed tells the run's
    outcome when a helper process died)."""
    with warehouse_lock(root):
        check_warehouse_folder(root)
        recover(root)
        stage_dir = new_stage_dir(root)
        try:
            version, manifest = 0, read_manifest(root)
            if isinstance(root, StoreURL):
                from sysdiff.flows import objstore

                version, manifest = objstore.read_versioned(root)
            if corpus is not None:
                drop_damaged(root, manifest, corpus)
            staging = Staging(root, manifest, stage_dir, run_id=run_id, version=version)
            yield staging
            if staging.staged or staging.dropped:
                commit(staging)
            elif (manifest["tables"] and not isinstance(root, StoreURL)
                  and catalog_version(root)[1] != str(root)):
                refresh_catalog(root, manifest)  # a copied or moved warehouse: its own files
        finally:
            remove_stage_dir(stage_dir)


def new_stage_dir(root: Path | StoreURL) -> Path | StoreURL:
    """A run's staging folder: beside a local warehouse (the same file system, for the
    renames of its commit); inside one on an object store (``_staging/<run>``), where every
    worker reaches it."""
    if isinstance(root, StoreURL):
        from sysdiff.flows import objstore

        return objstore.new_stage(root)
    return Path(tempfile.mkdtemp(prefix=_staging_prefix(root),
                                 dir=_existing_parent(root.parent)))


def remove_stage_dir(stage_dir: Path | StoreURL) -> None:
    """Delete a run's staging folder (whatever it holds)."""
    if isinstance(stage_dir, StoreURL):
        from sysdiff.flows import objstore

        with contextlib.suppress(Exception):  # what is left, the next run deletes
            objstore.remove_prefix(stage_dir)
    else:
        shutil.rmtree(stage_dir, ignore_errors=True)


def _staging_prefix(root: Path) -> str:
    return f".sysdiff-staging-{root.name}-"


def recover(root: Path) -> None:
    """Finish what a killed run left (called under the lock, so no other run is active):
    drop its staging folders and temporary files (catalog, its WAL, manifest), rebuild a
    catalog that lags the manifest, delete its own files that are not live. On an object
    store: :func:`sysdiff.flows.objstore.recover`."""
    if isinstance(root, StoreURL):
        from sysdiff.flows import objstore

        objstore.recover(root)
        return
    parent = _existing_parent(root.parent)
    for stale in parent.glob(glob_escape(_staging_prefix(root)) + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    for pattern in (".catalog.*", *(f".{name}.*.tmp" for name in (MANIFEST, OWNED, MARKER))):
        for stale in root.glob(pattern):
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                stale.unlink()
    if not (root / MANIFEST).exists():
        return
    manifest = read_manifest(root)
    if catalog_version(root)[0] != manifest_digest(manifest):  # killed before the catalog
        refresh_catalog(root, manifest)
    sweep(root, manifest)


def glob_escape(text: str) -> str:
    """``text`` matched literally by :meth:`Path.glob` (``[``, ``*`` and ``?`` escaped)."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in text)


def damaged_files(root: Path, manifest: dict, corpus: str) -> dict[str, str]:
    """Live files of ``corpus`` that are missing or whose size or SHA-256 differs from what
    the manifest recorded at commit: {relative path: what is wrong}. Entries written before
    hashes were recorded are not checked."""
    prefix = f"corpus={corpus}/"
    wanted = {e["file"]: e for parts in manifest["tables"].values()
              for part, e in parts.items() if part.startswith(prefix) and "sha256" in e}
    if isinstance(root, StoreURL):
        return damaged_objects(root, wanted)
    bad = {}
    for rel, entry in sorted(wanted.items()):
        path = root / rel
        if not path.is_file():
            bad[rel] = "the file is missing"
        elif path.stat().st_size != entry.get("size", path.stat().st_size):
            bad[rel] = (f"its size is {path.stat().st_size} bytes; the manifest recorded "
                        f"{entry['size']}")
        elif file_sha256(path) != entry["sha256"]:
            bad[rel] = "its content differs from the manifest's SHA-256"
    return bad


def damaged_objects(root: StoreURL, wanted: dict[str, dict]) -> dict[str, str]:
    """:func:`damaged_files` on an object store: missing objects and sizes, from one listing
    (reading every object back to hash it would move the whole corpus)."""
    sizes = {f"tables/{rel}": info.get("size") for rel, info in (root / "tables").find().items()}
    bad = {}
    for rel, entry in sorted(wanted.items()):
        if rel not in sizes:
            bad[rel] = "the file is missing"
        elif entry.get("size") is not None and sizes[rel] != entry["size"]:
            bad[rel] = f"its size is {sizes[rel]} bytes; the manifest recorded {entry['size']}"
    return bad


def drop_damaged(root: Path, manifest: dict, corpus: str) -> list[str]:
    """Remove from ``manifest`` (in memory) every partition whose file is damaged, so that
    the run recomputes it, and warn once per damaged file. The other result tables' entries
    of the same partition key go too (their rows are computed together); a damaged ingested
    file (units, sentences, mentions, ...) also drops the ingest of that system, which is
    then read again. Returns the dropped partition keys."""
    bad = damaged_files(root, manifest, corpus)
    dropped = {}
    for table, parts in manifest["tables"].items():
        for part, e in parts.items():
            if e["file"] in bad:
                dropped[part] = dropped.get(part, False) or table in INGEST_TABLES
    for rel, why in bad.items():
        log.warning("%s: %s; its partition is recomputed", root / rel, why)
    for table, parts in manifest["tables"].items():
        for part, ingest in dropped.items():
            if ingest or table not in INGEST_TABLES:
                parts.pop(part, None)
    return sorted(dropped)


def commit(staging: Staging) -> None:
    """List the staged files as this sysdiff's own, move them in, replace the manifest,
    rebuild the catalog, delete superseded files (once no reader holds the warehouse). On
    an object store: :func:`sysdiff.flows.objstore.commit`."""
    root = staging.root
    if isinstance(root, StoreURL):
        from sysdiff.flows import objstore

        objstore.commit(staging, crash_point)
        return
    claim_warehouse(root)
    manifest = json.loads(json.dumps(staging.manifest))
    manifest["ddl"] = table_ddl()
    manifest["run"] = staging.run_id  # which run this manifest is (flows/outcome.py)
    files = {rel for rel, _sig in staging.staged.values()}  # a block file is hashed once
    hashes = {rel: (file_sha256(staging.dir / rel), (staging.dir / rel).stat().st_size)
              for rel in files}
    write_owned(root, read_owned(root) | files)
    for table, partition in staging.dropped:
        manifest["tables"].get(table, {}).pop(partition, None)
    for (table, partition), (rel, sig) in staging.staged.items():
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if (staging.dir / rel).exists():  # a file shared by several partitions moves once
            os.replace(staging.dir / rel, dest)
        sha, size = hashes[rel]
        manifest["tables"].setdefault(table, {})[partition] = manifest_entry(rel, sig, sha, size)
        crash_point("commit-moving")
    atomic_write_bytes(root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
    crash_point("commit-manifest")
    refresh_catalog(root, manifest)
    crash_point("commit-catalog")
    sweep(root, manifest)
    staging.manifest = manifest


def live_files(root: Path | StoreURL, manifest: dict, table: str) -> list[Path | StoreURL]:
    """The committed Parquet files of a table."""
    return [root / f for f in table_files(manifest, table)]


def sweep(root: Path, manifest: dict) -> None:
    """Delete this sysdiff's own files that the manifest no longer names (superseded, or
    moved in by a killed run), and the folders they leave empty; only when no reader holds
    the warehouse (else the next run does it). Files it did not write are never touched."""
    owned = read_owned(root)
    live = manifest_files(manifest)
    dead = owned - live
    if not dead:
        return
    with no_readers(root) as free:
        if not free:
            return
        for rel in sorted(dead):
            path = root / rel
            path.unlink(missing_ok=True)
            _remove_empty_parents(path.parent, root / "tables")
        write_owned(root, owned & live)


def _remove_empty_parents(folder: Path, top: Path) -> None:
    """Remove ``folder`` and its parents up to ``top`` (excluded) while they are empty."""
    while folder != top and top in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (or already gone)
            return
        folder = folder.parent


def read_table(root: Path, table: str, manifest: dict | None = None,
               where: pl.Expr | None = None) -> pl.DataFrame:
    """Read a table's live partitions into polars (optionally filtered while scanning)."""
    manifest = manifest or read_manifest(root)
    files = live_files(root, manifest, table)
    if not files:
        return pl.DataFrame(schema=pl.Schema(all_tables()[table]))
    lf = scan_parquet([str(f) for f in files], glob=False)
    if where is not None:
        lf = lf.filter(where)
    return lf.collect()
