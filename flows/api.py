"""The Python API, for notebooks and scripts: run an evaluation, read a warehouse.

    import sysdiff

    wh = sysdiff.evaluate(key="data/sequoia/key.conllu",
                          systems={"md@3.8.0": "data/sequoia/fr_core_news_md-3.8.0.conllu",
                                   "sm@3.8.0": "data/sequoia/fr_core_news_sm-3.8.0.conllu"},
                          task="dep", corpus="sequoia", warehouse="/tmp/wh")
    wh.scores                              # the run's summary, a polars DataFrame
    wh.tables                              # every table's name
    wh["pairs"]                            # a table as a polars DataFrame
    wh.sql("select * from pairs where view = 'las'")   # any read-only query
    wh.relation("select * from changes")               # a lazy DuckDB relation
    sysdiff.remove("sequoia", ["sm@3.8.0"], warehouse=wh)
    with sysdiff.open("/tmp/wh") as wh: ...            # open a warehouse

``evaluate`` runs the same Prefect flow as ``sysdiff run``, in this process, quietly;
``open`` (and the handle ``evaluate`` returns) reads through the same sandbox as ``sysdiff
sql``: the warehouse's files and nothing else, read-only. It hands out frames and read-only
relations, never the connection.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from sysdiff.flows.names import MANIFEST, NOTICE, resolve_warehouse
from sysdiff.flows.progress import bars
from sysdiff.flows.queries import (
    Sandbox,
    check_read_only,
    connect,
    current_limits,
    refusal,
    time_limit,
)
from sysdiff.flows.server import SERVICE_LOGGERS
from sysdiff.flows.store import StoreURL, log_versions
from sysdiff.schemas.errors import InputError

if TYPE_CHECKING:
    from sysdiff.flows.remove import Removal


def evaluate(key: str | Path, systems: Mapping[str, str | Path], task: str | None = None,
             corpus: str = "corpus", warehouse: str | Path | None = None,
             fmt: str | None = None, mappings: Mapping[str, Mapping[str, str]] | None = None,
             versions: Mapping[str, list[str]] | None = None, ar_trials: int = 10_000,
             seed: int = 0, keep_going: bool = False, match: str | None = None,
             singletons: str | None = None, bootstrap: int = 1_000,
             confidence: float = 0.95, replace_key: bool = False,
             progress: bool | None = None, verbose: bool = False) -> Warehouse:
    """Evaluate ``systems`` (``{"NAME[@VERSION]": path}``) against ``key`` into the warehouse
    (default: as ``sysdiff run``; ``task`` defaults to the key format's, as there); returns
    the warehouse, open read-only (``wh.scores``: the run summary's table as a frame,
    ``wh.notes``: what the run noted, ``wh["pairs"]``, ``wh.sql(...)``). ``match`` (exact,
    partial, head) and ``singletons`` (keep, drop): coreference matching (default: the
    CorefUD scorer's head/drop for CorefUD keys, exact/keep otherwise). ``bootstrap``
    samples (0: none) and ``confidence``: the intervals on every score and delta (METRICS
    1.6b; seeded by ``seed``). ``replace_key``: the corpus was evaluated against another
    key; start it over with this one.

    The run is ``sysdiff run``'s flow, in this process, reporting to the same Prefect API
    (the background server, started when needed, never a temporary one unless
    ``SYSDIFF_SERVER=off``); its flow run is named after the corpus, task and systems. It
    writes nothing: ``progress=True`` shows progress bars (None: when stderr is a
    terminal), ``verbose=True`` Prefect's logs and sysdiff's notes. Bad input raises
    :class:`~sysdiff.schemas.errors.InputError` (its one line: file, line, what was
    expected) and leaves the warehouse as it was."""
    from sysdiff.flows.preflight import preflight
    from sysdiff.flows.spec import build_spec

    with quiet_run(verbose) as notes:
        spec = build_spec(corpus, task, key, [f"{n}={p}" for n, p in systems.items()], fmt,
                          mappings={k: dict(v) for k, v in (mappings or {}).items()},
                          versions={k: list(v) for k, v in (versions or {}).items()},
                          ar_trials=ar_trials, seed=seed, keep_going=keep_going, match=match,
                          singletons=singletons, bootstrap=bootstrap,
                          confidence=confidence, replace_key=replace_key)
        root = resolve_warehouse(None if warehouse is None else os.fspath(warehouse))
        spec, skipped = preflight(spec, root)
        for line in skipped:
            logging.getLogger("sysdiff").warning("%s", line)
        with prefect_api(), quiet_prefect(verbose), bars(progress):
            from sysdiff.flows.run import run_evaluation

            run_evaluation(spec, root)
    return Warehouse(root, corpus=spec.corpus, notes=notes, lazy=True)


def remove(corpus: str, systems: list[str] | str | None = None,
           warehouse: str | Path | None = None, verbose: bool = False) -> Removal:
    """Remove ``systems`` (``NAME@VERSION``: that version; ``NAME``: the system and every
    version of it; none: the whole corpus with its key) from the warehouse, as ``sysdiff rm
    --yes`` does: the corpus tables that depended on them are computed again from what the
    warehouse holds. Returns what was removed. Quiet like :func:`evaluate`."""
    from sysdiff.flows.remove import plan, remove_corpus

    names = [systems] if isinstance(systems, str) else list(systems or [])
    with quiet_run(verbose):
        root = resolve_warehouse(None if warehouse is None else os.fspath(warehouse))
        chosen = plan(root, corpus, names)
        if chosen.whole:
            return remove_corpus(root, corpus)
        with prefect_api(), quiet_prefect(verbose):
            from sysdiff.flows.remove import remove as run

            return run(root, corpus, names)


@contextlib.contextmanager
def quiet_run(verbose: bool) -> Iterator[list[str]]:
    """sysdiff's notes and warnings collected in the yielded list (``verbose``: also printed
    on stderr, one line each, as the command line prints them); Prefect's logs off, unless
    ``verbose``."""
    from sysdiff.flows.cli_options import _LineFormatter, show_warnings

    lines: list[str] = []
    log = logging.getLogger("sysdiff")
    saved = (list(log.handlers), log.propagate, log.level)
    if verbose:
        show_warnings(True)
    else:
        log.handlers = []
    collect = _Collect(lines)
    collect.setFormatter(_LineFormatter())
    log.addHandler(collect)
    log.propagate = False
    log.setLevel(logging.INFO if verbose else NOTICE)
    try:
        yield lines
    finally:
        log.handlers, log.propagate, log.level = saved


@contextlib.contextmanager
def quiet_prefect(verbose: bool) -> Iterator[None]:
    """Prefect's console logs off within the block (its flow and task runs log at INFO),
    unless ``verbose``. Prefect is imported first: importing it sets its loggers' levels."""
    import prefect.main  # noqa: F401 (sets up its logging once: now, not during the block)

    levels = {name: logging.getLogger(name).level for name in PREFECT_LOGGERS}
    if not verbose:
        for name in PREFECT_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in levels.items():
            if name not in SERVICE_LOGGERS:  # their "still processing" lines at exit: off
                logging.getLogger(name).setLevel(level)


#: Prefect's loggers that print on the console (its flow and task runs log at INFO).
PREFECT_LOGGERS = ("prefect", "prefect.flow_runs", "prefect.task_runs", "prefect.client",
                   "prefect.extra", "prefect.infrastructure", "prefect.server",
                   "prefect._internal", "uvicorn", "fastapi", *SERVICE_LOGGERS)


class _Collect(logging.Handler):
    """Keeps each record as sysdiff's line (``sysdiff: note: ...``)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= NOTICE:
            self.lines.append(self.format(record))


@contextlib.contextmanager
def prefect_api() -> Iterator[None]:
    """The Prefect API a run of this process reports to, chosen as ``sysdiff run`` chooses
    it (:func:`sysdiff.flows.prefect_api.api_for_run`): the one the user configured, else
    the background server (started when needed). Before Prefect is imported, the choice is
    made in the environment (as the command line does); after (e.g. a notebook that ran
    before, or a Prefect test harness), a configured API stays, and a process without one
    reports to the background server for the run's duration."""
    from sysdiff.flows import prefect_api as choose
    from sysdiff.flows import runner

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if "prefect" not in sys.modules:
        with said_as_notes():
            url, how = choose.api_for_run(started=runner.spawn_for)
        if how == "background":
            os.environ["PREFECT_API_URL"] = url
        yield
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield
        return
    with said_as_notes():
        url, how = choose.api_for_run(started=runner.spawn_for)
    if how != "background":
        yield
        return
    with temporary_settings(updates={PREFECT_API_URL: url}):
        yield


@contextlib.contextmanager
def said_as_notes() -> Iterator[None]:
    """What the command line's choice of a Prefect API prints (``sysdiff: started a
    background Prefect server at ...``, a warning when it falls back to a temporary one)
    goes to sysdiff's log instead: the handle's notes (on stderr only when verbose)."""
    import io

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            yield
    finally:
        log = logging.getLogger("sysdiff")
        for line in said.getvalue().splitlines():
            text = line.removeprefix("sysdiff: ")
            if text.startswith("warning: "):
                log.warning("%s", text.removeprefix("warning: "))
            elif text:
                log.log(NOTICE, "%s", text)


class Relation:
    """A lazy, read-only DuckDB relation over a sandboxed warehouse connection: it can be
    narrowed, combined and read (as polars, Arrow, pandas or Python rows), never written
    (DuckDB's relations can write files and create tables: those methods are left out)."""

    #: DuckDB relation methods that give another relation.
    CHAIN = ("filter", "project", "select", "limit", "order", "sort", "aggregate", "distinct",
             "unique", "union", "except_", "intersect", "join", "cross", "count", "sum",
             "min", "max", "mean", "set_alias")
    #: Methods that read the result.
    READ = ("pl", "arrow", "to_arrow_table", "df", "fetchall", "fetchone", "fetchmany",
            "fetchnumpy", "fetchdf", "show")
    #: Attributes that describe the relation.
    DESCRIBE = ("columns", "types", "dtypes", "shape", "alias", "type")

    def __init__(self, rel: duckdb.DuckDBPyRelation, box: Sandbox) -> None:
        self._rel, self._box = rel, box

    def __getattr__(self, name: str):
        if name in self.DESCRIBE:
            return getattr(self._rel, name)
        if name in self.CHAIN:
            return self._chain(name)
        if name in self.READ:
            return self._read(name)
        raise AttributeError(f"a sysdiff relation is read-only: '{name}' is not available "
                             f"(narrow with {', '.join(self.CHAIN[:6])}, ...; read with "
                             f"{', '.join(self.READ[:5])}, ...)")

    def _chain(self, name: str):
        method = getattr(self._rel, name)

        def chained(*args, **kwargs) -> Relation:
            args = tuple(a._rel if isinstance(a, Relation) else a for a in args)
            return Relation(method(*args, **kwargs), self._box)

        return chained

    def _read(self, name: str):
        method = getattr(self._rel, name)

        def read(*args, **kwargs):
            try:
                with time_limit(self._box.con, current_limits().timeout):
                    return method(*args, **kwargs)
            except duckdb.Error as e:
                raise refusal(e) from None

        return read

    def __len__(self) -> int:
        return len(self._rel)

    def __repr__(self) -> str:
        return repr(self._rel)


class Warehouse:
    """A warehouse opened read-only (the ``sysdiff sql`` sandbox). Each query sees the
    latest commit: a handle kept open across a run opens the new state (relations handed
    out before stay on theirs until :meth:`close`). It is also the warehouse's path
    (``os.fspath(wh)``, ``sysdiff.open(wh)``).

    From :func:`evaluate`: ``corpus`` is the corpus evaluated, ``scores`` its summary
    (the table ``sysdiff run`` prints) and ``notes`` what the run noted; the connection
    opens at the first query."""

    def __init__(self, root: Path | StoreURL, corpus: str | None = None,
                 notes: list[str] | None = None, lazy: bool = False) -> None:
        self.root = root if isinstance(root, StoreURL) else Path(root)
        self.corpus = corpus
        self.notes = list(notes or [])
        self._boxes: list[Sandbox] = []
        self._seen: tuple[int, int, int] | None = None
        self._closed = False
        if not lazy:
            self._box()  # a missing or damaged warehouse is said now

    @property
    def scores(self) -> pl.DataFrame:
        """The headline scores of the corpus (every rate in percent, one row per system):
        the table ``sysdiff run`` prints. Without a corpus (``sysdiff.open``), the only
        one of the warehouse."""
        from sysdiff.flows.show import headline
        from sysdiff.flows.show.common import pick_corpus

        corpus = self.corpus or pick_corpus(self.root, None, None, "scores")
        return headline(self.root, corpus)

    def __fspath__(self) -> str:
        return str(self.root)

    def __repr__(self) -> str:
        what = f", corpus {self.corpus!r}" if self.corpus else ""
        return f"<sysdiff warehouse {str(self.root)!r}{what}>"

    @property
    def tables(self) -> list[str]:
        """The names of the warehouse's tables."""
        rows = self._box().con.execute(
            "select table_name from information_schema.tables "
            "where table_catalog = current_database() and table_schema = 'main' order by 1"
        ).fetchall()
        return [r[0] for r in rows]

    def __getitem__(self, table: str) -> pl.DataFrame:
        if table not in self.tables:
            raise InputError(f"no table '{table}'; expected one of {', '.join(self.tables)}")
        return self.sql(f'select * from "{table}"')

    def sql(self, sql: str) -> pl.DataFrame:
        """The result of one read-only query as a polars DataFrame."""
        return self._box().run(sql)

    def relation(self, sql: str) -> Relation:
        """A lazy, read-only DuckDB relation (valid until ``close``)."""
        box = self._box()
        try:
            check_read_only(sql, box.con)
            return Relation(box.con.sql(sql), box)
        except duckdb.Error as e:
            raise refusal(e) from None

    def _box(self) -> Sandbox:
        """The connection on the latest commit (a new one when the manifest changed)."""
        if self._closed:
            raise InputError("the warehouse is closed", self.root)
        stamp = _manifest_stamp(self.root)
        if not self._boxes or stamp != self._seen:
            self._boxes.append(connect(self.root))
            self._seen = stamp
        return self._boxes[-1]

    def close(self) -> None:
        for box in self._boxes:
            box.close()
        self._boxes, self._closed = [], True

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _manifest_stamp(root: Path) -> tuple[int, int, int]:
    """What changes when a commit replaces the manifest (inode, size, mtime; on an object
    store, the log's latest version)."""
    if isinstance(root, StoreURL):
        versions = log_versions(root)
        return (versions[-1] if versions else 0, 0, 0)
    try:
        st = (root / MANIFEST).stat()
    except FileNotFoundError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def open_warehouse(warehouse: str | os.PathLike | None = None) -> Warehouse:
    """Open a warehouse read-only (default: as ``sysdiff sql``); ``warehouse`` may be a
    path or a handle (what :func:`evaluate` returns)."""
    return Warehouse(resolve_warehouse(None if warehouse is None else os.fspath(warehouse)))
