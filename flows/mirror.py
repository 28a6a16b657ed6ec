"""Read a warehouse on an object store at local speed: a verified local copy of its objects.

DuckDB reading Parquet through fsspec sends a request per footer and column chunk, for
every query: the report's queries over the bundled Sequoia sample took 185 s on a local S3
server, against a few seconds on a disk. So a read connection to a store warehouse reads
its live objects of at most :func:`mirror_bytes` each from local copies:

- each object is downloaded once into a private cache named by the SHA-256 that the
  manifest records for it, and its bytes are checked against that SHA-256 and size on the
  way in: a damaged or replaced object is never read (its table says it cannot be read);
- the copies are linked into a folder laid out like the warehouse, which lives as long as
  the connection, and the connection's ``allowed_paths`` list those links;
- a larger object is read in place through the store's filesystem;
- the cache keeps at most :func:`cache_bytes` (least recently used objects go first).

Objects are immutable once committed (a new version is a new object), so a copy named by
its SHA-256 never goes stale.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sysdiff.flows.store import StoreURL

#: Objects larger than this are read in place (``SYSDIFF_MIRROR_BYTES`` overrides it).
MIRROR_BYTES = 256 << 20
#: The cache's size limit (``SYSDIFF_CACHE_BYTES`` overrides it).
CACHE_BYTES = 4 << 30
#: Downloads at once.
FETCHERS = 8


def mirror_bytes() -> int:
    return int(os.environ.get("SYSDIFF_MIRROR_BYTES") or MIRROR_BYTES)


def cache_bytes() -> int:
    return int(os.environ.get("SYSDIFF_CACHE_BYTES") or CACHE_BYTES)


def cache_dir() -> Path:
    """The private object cache of this user (under the system's temporary directory)."""
    return private_dir("objects")


def private_dir(name: str) -> Path:
    """A private folder of this user under the system's temporary directory (made when
    needed); PermissionError when the folder there is not this user's own."""
    path = Path(tempfile.gettempdir()) / f"sysdiff-{name}-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    if path.is_symlink() or path.stat().st_uid != os.getuid():
        raise PermissionError(f"{path}: not this user's own folder")
    return path


@dataclass(frozen=True)
class Wanted:
    """A live object of the warehouse: where it is, its SHA-256 and size."""

    rel: str
    sha256: str
    size: int


@dataclass
class Mirror:
    """The local copies of a connection: rel -> local path (objects read in place are not
    in it); :meth:`close` removes the folder of links (the cache stays)."""

    folder: Path | None
    paths: dict[str, str]

    def place(self, root: StoreURL, rel: str) -> str:
        """Where the connection reads ``rel``: its local copy, or the object itself."""
        return self.paths.get(rel) or str(root / rel)

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def wanted(manifest: dict) -> list[Wanted]:
    """The live objects to copy: those whose SHA-256 and size the manifest records and whose
    size is within :func:`mirror_bytes`."""
    out, limit = {}, mirror_bytes()
    for parts in manifest["tables"].values():
        for e in parts.values():
            sha, size = e.get("sha256"), e.get("size")
            if sha and isinstance(size, int) and size <= limit:
                out[e["file"]] = Wanted(e["file"], sha, size)
    return sorted(out.values(), key=lambda w: w.rel)


def mirror(root: StoreURL, manifest: dict) -> Mirror:
    """Local copies of the live objects of ``root`` (see the module's docstring)."""
    want = wanted(manifest)
    if not want:
        return Mirror(None, {})
    cache = cache_dir()
    folder = links_folder(cache)
    try:
        with ThreadPoolExecutor(min(FETCHERS, len(want))) as pool:
            held = list(pool.map(lambda w: hold(root, w, cache, folder / w.rel), want))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    # a damaged object is left out: its table says it cannot be read
    paths = {w.rel: str(link) for w, link in zip(want, held, strict=True) if link is not None}
    prune(cache, cache_bytes())
    return Mirror(folder, paths)


def local_copy(url: str, sha256: str, size: int, folder: Path | None = None) -> str:
    """Where a task reads an object of a warehouse on a store that it reads slice by slice
    (a compare task reads one shard of each system's words): its verified copy in this
    machine's cache, downloaded once for all the tasks and processes of the machine; the
    object itself when larger than :func:`mirror_bytes`. A slice read in place costs a
    footer and column-chunk requests (five or so); a worker reads every file once per
    shard. An object whose bytes are not the recorded ones is an error (never read).

    With ``folder`` (of :func:`held_copies`), the copy is read through a link in it
    (:func:`hold`), which no prune by another task or process can take away."""
    if size > mirror_bytes():
        return url
    cache = cache_dir()
    known = (cache / f"{sha256}.parquet").exists()
    w = Wanted("", sha256, size)
    path = (cached(StoreURL(url), w, cache) if folder is None else
            hold(StoreURL(url), w, cache, folder / f"{sha256}.parquet"))
    if path is None:
        raise RuntimeError(f"{url}: its bytes are not those the run wrote (SHA-256 {sha256}, "
                           f"{size} bytes): the object store changed or lost it")
    if not known:
        prune(cache, cache_bytes())
    return str(path)


#: Fetches of one copy before a reader gives up on holding it (:func:`hold`).
HOLD_ATTEMPTS = 3


def hold(root: StoreURL, w: Wanted, cache: Path, link: Path) -> Path | None:
    """``link``, a hard link to the cached copy of one object (fetched and checked when not
    cached; None when its bytes are not the manifest's): a prune never removes a copy linked
    twice, and the link outlives the cache's entry. A copy pruned by another process between
    its fetch and its link is fetched again, :data:`HOLD_ATTEMPTS` times at most."""
    link.parent.mkdir(parents=True, exist_ok=True)
    for _attempt in range(HOLD_ATTEMPTS):
        path = cached(root, w, cache)
        if path is None:
            return None
        with contextlib.suppress(FileNotFoundError):  # pruned meanwhile: fetch it again
            with contextlib.suppress(FileExistsError):  # already held: the same bytes
                os.link(path, link)
            return link
    raise RuntimeError(f"{root / w.rel if w.rel else root}: its local copy was pruned "
                       f"{HOLD_ATTEMPTS} times before it could be read (the cache, "
                       f"{cache_bytes()} bytes, is too small for the readers at once)")


def links_folder(cache: Path) -> Path:
    """A new folder of links in the cache, named after this process: a prune leaves it (and
    every copy it links) while the process runs, and removes it once the process is gone."""
    return Path(tempfile.mkdtemp(prefix=f"links-{os.getpid()}-", dir=cache))


@contextlib.contextmanager
def held_copies() -> Iterator[Path]:
    """A folder that holds a task's local copies (:func:`local_copy` ``folder``) while it
    reads them; removed on exit, which lets the cache prune them again."""
    folder = links_folder(cache_dir())
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cached(root: StoreURL, w: Wanted, cache: Path) -> Path | None:
    """The cached copy of one object (downloaded and checked when not cached yet), or None
    when the object's bytes are not the ones the manifest records."""
    path = cache / f"{w.sha256}.parquet"
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size == w.size:
            os.utime(path)  # recently used
            return path
    tmp = cache / f".{uuid.uuid4().hex}.part"
    try:
        h, size = hashlib.sha256(), 0
        with (root / w.rel).open("rb") as src, open(tmp, "wb") as out:
            for block in iter(lambda: src.read(1 << 22), b""):
                h.update(block)
                size += len(block)
                out.write(block)
        if h.hexdigest() != w.sha256 or size != w.size:
            return None
        os.replace(tmp, path)
        return path
    except FileNotFoundError:
        return None
    finally:
        tmp.unlink(missing_ok=True)


def prune(cache: Path, limit: int) -> None:
    """Remove the least recently used copies beyond ``limit`` bytes (not one linked by an
    open connection), and the folders of links that killed readers left."""
    copies = []
    for entry in cache.iterdir():
        with contextlib.suppress(FileNotFoundError):
            st = entry.lstat()
            if entry.name.startswith("links-") and entry.is_dir():
                if not _owned_by_live_reader(entry):
                    shutil.rmtree(entry, ignore_errors=True)
            elif entry.suffix == ".parquet":
                copies.append((st.st_mtime, st.st_size, st.st_nlink, entry))
    total = sum(c[1] for c in copies)
    for _mtime, size, links, entry in sorted(copies):
        if total <= limit:
            break
        if links == 1:
            entry.unlink(missing_ok=True)
            total -= size


def _owned_by_live_reader(folder: Path) -> bool:
    """True when the process that made a folder of links (``links-<pid>-...``) still runs."""
    try:
        os.kill(int(folder.name.split("-")[1]), 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
