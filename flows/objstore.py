"""A warehouse on an object store: the writer's lease, the manifest log, commit and clean-up.

An object store has no rename and no ``flock``; it has conditional writes (create an object
only if it does not exist: S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure
``If-None-Match``). The warehouse keeps the local layout (``tables/<table>/<partition>/
<signature>.parquet``, ``.sysdiff-warehouse``) and adds:

- ``_log/<version>.json``: the manifest, one immutable object per commit. A run reads the
  latest version ``N`` when it starts; it commits by *creating* ``N + 1`` (the commit
  point). Two runs that both started from ``N``: one creates ``N + 1``, the other's create
  fails and that run fails, its results not committed. Readers list ``_log/`` and read the
  highest version: a version is written whole or not at all, so no reader sees a partial
  commit.
- ``_lease.json``: the writer's lease (owner, host, pid, expiry), created conditionally,
  renewed by the writer while it runs, removed when it ends. A second run is refused at
  once while the lease lives; a lease whose writer died (its process gone on the same host,
  or its expiry passed) is taken over. The lease serialises runs; safety does not rest on it
  (the log's conditional create does).
- ``_staging/<run>/``: the files a run's tasks write (from any worker); the commit copies
  them into ``tables/`` (a copy made by the store) before it creates the manifest version.

Nothing is deleted that a reader may still read: a file under ``tables/`` that no live
manifest names is deleted only when it is older than the grace period
(``$SYSDIFF_STORE_GRACE`` seconds, default 900) and so is the moment the last manifest
naming it was superseded. Queries run at most ``--timeout`` (60 s by default), well within.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from sysdiff.flows.names import MARKER, manifest_entry, version_name
from sysdiff.flows.store import LEASE, LOG, STAGING, StoreURL, log_versions
from sysdiff.schemas.errors import InputError

log = logging.getLogger("sysdiff")


def lease_seconds() -> float:
    """How long a lease lives without renewal (``$SYSDIFF_LEASE_SECONDS``, default 60)."""
    return float(os.environ.get("SYSDIFF_LEASE_SECONDS") or 60)


def grace_seconds() -> float:
    """How long a superseded file stays readable (``$SYSDIFF_STORE_GRACE``, default 900)."""
    return float(os.environ.get("SYSDIFF_STORE_GRACE") or 900)


def _lease_body(owner: str) -> bytes:
    return json.dumps({"owner": owner, "host": socket.gethostname(), "pid": os.getpid(),
                       "expires": time.time() + lease_seconds()}).encode()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lease_alive(held: dict) -> bool:
    """A lease still holds: not expired, and (on this host) its process lives."""
    if held.get("host") == socket.gethostname() and not _pid_alive(int(held.get("pid", 0))):
        return False
    return float(held.get("expires", 0)) > time.time()


def read_lease(root: StoreURL) -> dict | None:
    """The lease as stored (None: none, or unreadable)."""
    try:
        return json.loads((root / LEASE).read_bytes())
    except (FileNotFoundError, ValueError):
        return None


def busy_error(root: StoreURL) -> InputError:
    return InputError("another sysdiff run is writing to this warehouse; wait for it to "
                      "finish (runs on one warehouse are serialised)", root)


def check_lease(root: StoreURL) -> None:
    """Refuse now (before Prefect starts) when a live lease holds the warehouse."""
    held = read_lease(root)
    if held is not None and lease_alive(held):
        raise busy_error(root)


@contextlib.contextmanager
def lease(root: StoreURL) -> Iterator[str]:
    """Hold the warehouse's writer lease for the block (renewed in a thread); yields the
    owner id. A live lease of another run is an InputError; a dead one is taken over."""
    owner = uuid.uuid4().hex
    obj = root / LEASE
    for _ in range(3):
        if obj.create(_lease_body(owner)):
            break
        held = read_lease(root)
        if held is not None and lease_alive(held):
            raise busy_error(root)
        log.info("%s: taking over the lease of a run that ended without releasing it", root)
        obj.unlink(missing_ok=True)
    else:
        raise busy_error(root)
    stop = threading.Event()
    thread = threading.Thread(target=_renew, args=(root, owner, stop), daemon=True,
                              name="sysdiff-lease")
    thread.start()
    token = _owner.set(owner)
    try:
        yield owner
    finally:
        _owner.reset(token)
        stop.set()
        thread.join()
        held = read_lease(root)
        if held is not None and held.get("owner") == owner:
            obj.unlink(missing_ok=True)


#: The lease this thread's run holds (its staging prefix is named after it).
_owner: contextvars.ContextVar[str | None] = contextvars.ContextVar("owner", default=None)
OWNER = "_owner.json"


def _renew(root: StoreURL, owner: str, stop: threading.Event) -> None:
    """Renew the lease and the staging prefix's owner record until ``stop``."""
    obj = root / LEASE
    while not stop.wait(lease_seconds() / 3):
        with contextlib.suppress(Exception):  # a missed renewal: the next one, or expiry
            record = root / STAGING / owner / OWNER
            if record.exists():  # not once the run removed its staging
                record.write_bytes(_lease_body(owner))
            held = json.loads(obj.read_bytes())
            if held.get("owner") != owner:
                return  # taken over (we were presumed dead): the log guards the commit
            obj.write_bytes(_lease_body(owner))


def read_versioned(root: StoreURL) -> tuple[int, dict]:
    """The latest manifest version and the manifest (version 0: an empty warehouse)."""
    while True:
        versions = log_versions(root)
        if not versions:
            return 0, {"version": 1, "tables": {}}
        try:  # that version itself: the manifest this run's commit must follow
            manifest = json.loads((root / version_name(versions[-1])).read_bytes())
        except FileNotFoundError:  # pruned between the listing and the read: look again
            continue
        except ValueError as e:
            raise InputError(f"the warehouse's manifest is damaged ({e}); restore it from "
                             "a backup, or start a new warehouse",
                             root / version_name(versions[-1])) from None
        return versions[-1], manifest


def new_stage(root: StoreURL) -> StoreURL:
    """A run's staging prefix inside the warehouse, named after its lease, with a record of
    its owner (renewed with the lease): :func:`recover` deletes only prefixes whose owner is
    gone."""
    owner = _owner.get() or uuid.uuid4().hex
    stage = root / STAGING / owner
    (stage / OWNER).write_bytes(_lease_body(owner))
    return stage


def remove_prefix(prefix: StoreURL) -> None:
    """Delete every object under a prefix."""
    keys = [f"{prefix.key}/{rel}" for rel in prefix.find()]
    if keys:
        prefix.fs.rm(keys)


def claim(root: StoreURL) -> None:
    """Mark a new prefix as a warehouse (a conditional create: idempotent)."""
    stamp = {"sysdiff_warehouse": 1, "created": dt.datetime.now(dt.UTC).isoformat()}
    (root / MARKER).create(json.dumps(stamp).encode())


def commit(staging, crash_point: Callable[[str], None]) -> None:  # noqa: ANN001
    """Copy the files ``staging`` (a ``warehouse.Staging``) holds into ``tables/`` and create
    the next manifest version (the commit point); then clean up (:func:`sweep`). Another
    run's commit since this run's start is an InputError, nothing of this run committed.
    ``crash_point``: the crash-safety tests' hook."""
    from sysdiff.flows.catalog import table_ddl

    root: StoreURL = staging.root
    claim(root)
    manifest = json.loads(json.dumps(staging.manifest))
    manifest["ddl"] = table_ddl()
    manifest["run"] = staging.run_id
    for table, partition in staging.dropped:
        manifest["tables"].get(table, {}).pop(partition, None)
    copy_staged(staging.dir, root, [rel for rel, _sig in staging.staged.values()],
                crash_point)
    for (table, partition), (rel, sig) in staging.staged.items():
        sha, size = staging.hashes.get(rel) or _hash_object(staging.dir / rel)
        manifest["tables"].setdefault(table, {})[partition] = manifest_entry(rel, sig, sha,
                                                                             size)
        crash_point("commit-moving")
    body = json.dumps(manifest, indent=1, sort_keys=True).encode()
    if not (root / version_name(staging.version + 1)).create(body):
        raise InputError("another sysdiff run committed to this warehouse while this run "
                         "ran (its lease was taken over); nothing of this run was committed: "
                         "run it again", root)
    crash_point("commit-manifest")
    staging.version += 1
    staging.manifest = manifest
    crash_point("commit-catalog")
    sweep(root)


#: Copies the store makes at once in a commit (each is one request, no bytes through here).
COPIES = 16


def copy_staged(stage: StoreURL, root: StoreURL, rels: list[str],
                crash_point: Callable[[str], None]) -> None:
    """Copy the staged objects ``rels`` (a file shared by several partitions once) from
    ``stage`` to the same keys under ``root``, several at once."""
    def copy(rel: str) -> None:
        try:
            (stage / rel).copy_to(root / rel)
        except FileNotFoundError:
            raise InputError("this run's staged files are gone (another run took over its "
                             "lease and cleaned up); nothing of this run was committed: run "
                             "it again", root) from None
        crash_point("commit-moving")

    with ThreadPoolExecutor(COPIES) as pool:
        list(pool.map(copy, dict.fromkeys(rels)))


def _hash_object(obj: StoreURL) -> tuple[str, int]:
    """SHA-256 and size of an object, read back (a file staged without them)."""
    import hashlib

    h, size = hashlib.sha256(), 0
    with obj.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def modified(info: dict) -> float | None:
    """An object's last modification (seconds since the epoch), from the store's details."""
    for name in ("LastModified", "last_modified", "updated", "mtime", "created"):
        value = info.get(name)
        if isinstance(value, dt.datetime):
            return value.timestamp()
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None


def recover(root: StoreURL, mine: StoreURL | None = None) -> None:
    """Under the lease: drop the staging prefixes of runs that died (their owner record
    expired or its process gone; never ``mine``), then :func:`sweep`."""
    for prefix in (root / STAGING).iterdir():
        if prefix == mine:
            continue
        try:
            held = json.loads((prefix / OWNER).read_bytes())
        except (FileNotFoundError, ValueError):
            held = {}
        if not lease_alive(held):
            remove_prefix(prefix)
    sweep(root)


def sweep(root: StoreURL) -> None:
    """Delete what no reader can need any more: files under ``tables/`` that no manifest
    live within the grace period names, and log versions superseded before it."""
    now, grace = time.time(), grace_seconds()
    logs = {int(rel[:-5]): info for rel, info in (root / LOG).find().items()
            if rel.endswith(".json") and rel[:-5].isdigit()}
    if not logs:
        return
    versions = sorted(logs)
    keep: set[str] = set()
    old_versions = []
    for i, version in enumerate(versions):
        successor = logs[versions[i + 1]] if i + 1 < len(versions) else None
        since = modified(successor) if successor is not None else None
        if successor is not None and since is not None and now - since > grace:
            old_versions.append(version)  # superseded long enough: no reader left on it
            continue
        try:
            named = json.loads((root / version_name(version)).read_bytes())["tables"]
        except (FileNotFoundError, ValueError, KeyError):
            return  # unreadable: delete nothing
        keep |= {e["file"] for parts in named.values() for e in parts.values()}
    dead = []
    for rel, info in (root / "tables").find().items():
        at = modified(info)
        if f"tables/{rel}" not in keep and at is not None and now - at > grace:
            dead.append(f"{root.key}/tables/{rel}")
    if dead:
        root.fs.rm(dead)
    stale_logs = [f"{root.key}/{version_name(v)}" for v in old_versions]
    if stale_logs:
        root.fs.rm(stale_logs)
