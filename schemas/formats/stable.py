"""Input files read as one stable version: the bytes hashed are the bytes parsed.

Every reader gets a file's bytes through :class:`StableFile`: the file is opened once and
read through that one descriptor (no memory map, which another process could truncate under
the reader: SIGBUS); its identity (device, inode, size, modification time) is taken when it
is opened and checked again after reading (``fstat`` of the descriptor, ``stat`` of the
name). A file truncated, rewritten, deleted or replaced (renamed over) while it is read is
one :class:`InputError` naming what happened, so nothing read from it is committed. The
SHA-256 is taken from the same reads, so a run's ``systems.sha256`` (and its size and
modification time: the :class:`Stamp`) always describe the content it parsed.

- ``read_stable(path)``: the whole file (bytes, hash and stamp), checked;
- ``with StableFile(path) as f``: ``f.read(n)`` / ``f.chunks(size, boundary)`` in order
  (hashed; ``chunks`` checks the file after every read), ``f.read_at(offset, n)`` anywhere
  (not hashed), ``f.check()``;
- ``StableFile(path, expect=stamp)``: a file read again later (a second pass, or a shard
  read by another process) must still be the version first read, else the same error.

A leading UTF-8 byte order mark is text encoding, not content: :func:`without_bom` drops it
before parsing (the hash stays the hash of the file's bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat as stat_mod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sysdiff.schemas.errors import InputError

BOM = b"\xef\xbb\xbf"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: Said of a file that changed while it was read: the run keeps nothing of it.
NOT_KEPT = "nothing read from it was committed"
#: How far before a chunk's nominal end :meth:`StableFile.chunks` looks for its boundary
#: (the whole chunk when no record ends there).
LOOK_BACK = 1 << 20
#: How far ahead of what an object's stream has read a read may start and still be read
#: from the stream (see :class:`_Stream`).
STREAM_REACH = 64 << 20
#: The most one ``pread`` returns on Linux (larger reads come in several calls).
_MAX_READ = 0x7FFFF000


@dataclass(frozen=True)
class Stamp:
    """One version of a file: where it lives (device, inode), its size and modification
    time. Two stamps differ when the file was replaced, truncated, extended or rewritten."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def without_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte order mark."""
    return data[3:] if data.startswith(BOM) else data


def changed_error(path: str | Path, was: Stamp, now: Stamp | None) -> InputError:
    """The one-line error for a file that is no longer the version read (``now``: the
    file its name leads to now, None when it is gone)."""
    if now is None:
        what = "the file was deleted while it was being read"
    elif (now.dev, now.ino) != (was.dev, was.ino):
        what = "the file was replaced while it was being read (its name now leads to another file)"
    elif now.size != was.size:
        what = f"the file changed while it was being read (size {was.size} → {now.size} bytes)"
    else:
        what = "the file changed while it was being read (rewritten in place)"
    return InputError(f"{what}; {NOT_KEPT}", path)


class StableFile:
    """An input file opened once and read through that one descriptor (see the module).

    ``expect``: the stamp of the version read before; the file must still be it.
    ``hashed``: keep the SHA-256 of what is read in order (:attr:`sha256`). Opening errors
    are InputErrors (no such file, not a regular file, cannot read)."""

    def __init__(self, path: str | Path, expect: Stamp | None = None,
                 hashed: bool = True) -> None:
        self._fd = -1
        self._obj = None
        url = object_url(path)
        if url is None:
            self.path = Path(path)
            self._fd = _open_regular(self.path)
            self.stamp = Stamp.of(os.fstat(self._fd))
        else:
            self.path = url  # type: ignore[assignment]
            self._obj = StoreObject(url)
            self.stamp = self._obj.stamp
        self.pos = 0
        self._hash = hashlib.sha256() if hashed else None
        if expect is not None and self.stamp != expect:
            self.close()
            raise changed_error(self.path, expect, self.stamp)

    @property
    def size(self) -> int:
        """The file's size when it was opened."""
        return self.stamp.size

    @property
    def sha256(self) -> str:
        """SHA-256 of the bytes :meth:`read` and :meth:`chunks` gave, in order (the file's
        hash once it is read to the end); only for a file opened ``hashed``."""
        if self._hash is None:
            raise ValueError(f"{self.path} was opened without hashing")
        return self._hash.hexdigest()

    def read(self, n: int | None = None) -> bytes:
        """The next ``n`` bytes (the rest of the file by default), hashed; never past the
        size the file had when it was opened. A file found shorter is an InputError."""
        want = self.size - self.pos if n is None else min(n, self.size - self.pos)
        data = self._read(self.pos, want, consume=True)
        self.pos += len(data)
        if self._hash is not None:
            self._hash.update(data)
        return data

    def read_at(self, offset: int, n: int) -> bytes:
        """``n`` bytes from ``offset`` (fewer only at the end of the file as opened); not
        hashed, the position does not move."""
        return self._read(offset, n, consume=False)

    def _read(self, offset: int, n: int, consume: bool) -> bytes:
        """:meth:`read_at`; ``consume``: a read in order (an object then comes from one
        stream, see :class:`StoreObject`)."""
        n = max(0, min(n, self.size - offset))
        if self._obj is not None:
            data = self._obj.read_at(offset, n, consume)
            if len(data) < n:
                raise changed_error(self.path, self.stamp, self._now())
            return data
        parts, got = [], 0
        while got < n:
            part = os.pread(self._fd, min(n - got, _MAX_READ), offset + got)
            if not part:  # shorter than when it was opened: truncated meanwhile
                raise changed_error(self.path, self.stamp, self._now())
            parts.append(part)
            got += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def chunks(self, size: int, boundary: Callable[[bytes], int]) -> Iterator[bytes]:
        """The rest of the file in chunks of about ``size`` bytes (or more, when a record is
        longer), each read once and cut where ``boundary(text)`` says: the end of the last
        whole record in ``text`` (0: none). The cut is looked for in the last
        :data:`LOOK_BACK` bytes before ``size`` (starting at a line), so a chunk is read
        exactly, never copied; the last chunk is the rest. The file is checked
        (:meth:`check`) after every read: no chunk comes from a file that changed."""
        while self.pos < self.size:
            chunk = self.read(self._cut(size, boundary) - self.pos)
            self.check()
            yield chunk

    def _cut(self, size: int, boundary: Callable[[bytes], int]) -> int:
        """Where the next chunk ends (see :meth:`chunks`)."""
        end = min(self.pos + size, self.size)
        while end < self.size:
            for lo in dict.fromkeys((max(self.pos, end - LOOK_BACK), self.pos)):
                text = self.read_at(lo, end - lo)
                if lo > self.pos:  # start at a line, so the boundary sees whole lines
                    skip = text.find(b"\n") + 1
                    lo, text = lo + skip, text[skip:] if skip else b""
                cut = boundary(text)
                if cut:
                    return lo + cut
            end = min(end + size, self.size)  # no record ends before ``end``: read on
        return end

    def check(self) -> None:
        """Raise the InputError of :func:`changed_error` unless the descriptor's file is
        unchanged and its name still leads to it."""
        if self._obj is not None:
            named = self._now()
            if named != self.stamp:
                raise changed_error(self.path, self.stamp, named)
            return
        now = Stamp.of(os.fstat(self._fd))
        if now != self.stamp:
            raise changed_error(self.path, self.stamp, now)
        named = self._now()
        if named is None or (named.dev, named.ino) != (now.dev, now.ino):
            raise changed_error(self.path, self.stamp, named)

    def _now(self) -> Stamp | None:
        """The stamp of the file the name leads to now (None: no file)."""
        if self._obj is not None:
            return self._obj.now()
        try:
            return Stamp.of(os.stat(self.path))
        except OSError:
            return None

    def close(self) -> None:
        if self._obj is not None:
            self._obj.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> StableFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def object_url(path: object) -> str | None:
    """The URL of an input on an object store (``scheme://...``, or an object with a
    ``url``), else None (a local path)."""
    url = getattr(path, "url", None)
    if isinstance(url, str):
        return url
    return path if isinstance(path, str) and _URL.match(path) else None


def object_stamp(url: str, fs=None) -> Stamp | None:  # noqa: ANN001 (an fsspec filesystem)
    """The stamp of the object ``url`` now (None: no such object)."""
    if fs is None:
        import fsspec

        fs = fsspec.filesystem(url.split("://", 1)[0], use_listings_cache=False)
    try:
        info = fs.info(url.split("://", 1)[1])
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(f"cannot read object: {e}", url) from None
    if info.get("type") == "directory":
        raise InputError("not an object; expected a file, got a prefix", url)
    tag = str(info.get("ETag") or info.get("etag") or info.get("md5Hash") or "")
    when = info.get("LastModified") or info.get("last_modified") or info.get("updated")
    mtime = int(when.timestamp() * 1e9) if hasattr(when, "timestamp") else 0
    ino = int(hashlib.sha256(tag.encode()).hexdigest()[:15], 16)
    return Stamp(0, ino, int(info["size"]), mtime)


def input_stamp(path: object) -> Stamp:
    """The stamp of an input, a local file or an object; a missing one is an InputError."""
    url = object_url(path)
    if url is None:
        try:
            return Stamp.of(Path(path).stat())  # type: ignore[arg-type]
        except FileNotFoundError:
            raise InputError("no such file", path) from None  # type: ignore[arg-type]
    stamp = object_stamp(url)
    if stamp is None:
        raise InputError("no such object", url)
    return stamp


class StoreObject:
    """An input object read through fsspec (credentials from the store's environment), as
    one version: its stamp is (0, a hash of its ETag, size, modification time), the same on
    every worker; reads that find another version are refused.

    Sequential reads (:meth:`read_at` with ``consume``: a pass over the file in order) come
    from one open GET on S3 (:class:`_Stream`) rather than a ranged request per block: one
    request per pass instead of one per block (a store bills and waits per request, and an
    S3 server that copies the object for every range, as moto does, costs the object's
    size per block). Other reads, and other stores, are one ranged request each."""

    def __init__(self, url: str) -> None:
        import fsspec

        scheme = url.split("://", 1)[0]
        self.url, self.key = url, url.split("://", 1)[1]
        self.fs = fsspec.filesystem(scheme, use_listings_cache=False)
        self.stamp = self.now()
        if self.stamp is None:
            raise InputError("no such object", url)
        try:
            self.file = self.fs.open(self.key, "rb", block_size=1 << 23)
        except OSError as e:
            raise InputError(f"cannot read object: {e}", url) from None
        self.stream: _Stream | None = None

    def now(self) -> Stamp | None:
        """The stamp of the object the URL leads to now (None: none)."""
        return object_stamp(self.url, self.fs)

    def read_at(self, offset: int, n: int, consume: bool = False) -> bytes:
        """``n`` bytes from ``offset``. ``consume``: the reader will never ask for bytes
        before ``offset + n`` again except through ranged reads (a pass in order)."""
        try:
            held = self.stream is not None and self.stream.holds(offset)
            if consume and not held and _Stream.supports(self.fs):
                self.close_stream()
                self.stream = _Stream(self.fs, self.key, self.file, offset)
                held = True
            if held:
                with contextlib.suppress(_Stream.Broken):
                    return self.stream.take(offset, n, consume)
                self.close_stream()  # a broken connection: this read is a ranged request
            self.file.seek(offset)
            return self.file.read(n)
        except OSError:  # the store refused the version read first (e.g. If-Match)
            raise changed_error(self.url, self.stamp, self.now()) from None

    def close_stream(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None

    def close(self) -> None:
        self.close_stream()
        self.file.close()


class _Stream:
    """One GET of an S3 object from ``start`` to its end, with the version read first
    (``If-Match`` its ETag), read in order: the pieces received from the first byte not yet
    consumed up to the furthest asked for (a look ahead, such as :meth:`StableFile.chunks`'
    search for a cut, is received once and kept for the read that consumes it). A read's
    bytes are joined from the pieces: one copy."""

    class Broken(Exception):
        """The stream's connection failed (not the store refusing the version)."""

    def __init__(self, fs, key: str, file, start: int) -> None:  # noqa: ANN001 (s3fs objects)
        from fsspec.asyn import sync

        self.sync, self.loop = sync, fs.loop
        bucket, name, _version = fs.split_path(key)
        match = {"IfMatch": file.details["ETag"]} if "ETag" in getattr(file, "details", {}) \
            else {}
        resp = sync(fs.loop, fs._call_s3, "get_object", Bucket=bucket, Key=name,
                    Range=f"bytes={start}-", **match)
        self.body = resp["Body"]
        self.start = start  # the file position of pieces[0][0]
        self.pieces: list[memoryview] = []
        self.held = 0  # bytes in pieces

    @staticmethod
    def supports(fs) -> bool:  # noqa: ANN001 (an fsspec filesystem)
        return hasattr(fs, "_call_s3") and hasattr(fs, "split_path")

    def holds(self, offset: int) -> bool:
        """``offset`` is in the pieces, or ahead in the stream by at most
        :data:`STREAM_REACH` bytes (further is a ranged read: not worth streaming to)."""
        return 0 <= offset - self.start <= self.held + STREAM_REACH

    def take(self, offset: int, n: int, consume: bool) -> bytes:
        """``n`` bytes from ``offset`` (fewer at the end); ``consume``: drop what is before
        their end."""
        end = offset + n
        while self.start + self.held < end:
            try:
                more = self.sync(self.loop, self.body.read, end - self.start - self.held)
            except Exception as e:  # a connection's error (a version refused is at the GET)
                raise _Stream.Broken(str(e)) from e
            if not more:
                break
            self.pieces.append(memoryview(more))
            self.held += len(more)
        data = b"".join(self._slices(offset - self.start, end - self.start))
        if consume:
            self._drop(min(self.held, end - self.start))
        return data

    def _slices(self, lo: int, hi: int) -> list[memoryview]:
        """The pieces' bytes ``lo`` to ``hi`` (relative to :attr:`start`)."""
        out, at = [], 0
        for piece in self.pieces:
            a, b = max(lo - at, 0), min(hi - at, len(piece))
            if a < b:
                out.append(piece[a:b])
            at += len(piece)
            if at >= hi:
                break
        return out

    def _drop(self, k: int) -> None:
        """Forget the first ``k`` bytes."""
        self.start += k
        self.held -= k
        while k and self.pieces:
            first = self.pieces[0]
            if len(first) <= k:
                self.pieces.pop(0)
                k -= len(first)
            else:
                self.pieces[0] = first[k:]
                k = 0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.body.close()


def _open_regular(path: Path) -> int:
    """A read-only descriptor of a regular file (a FIFO or device is refused, not waited
    on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("not a regular file; expected a file, got a folder", path) from None
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror}", path) from None
    if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError("not a regular file", path)
    return fd


@dataclass(frozen=True)
class Snapshot:
    """A whole file as read once: its bytes, their SHA-256 and the file's stamp."""

    data: bytes
    sha256: str
    stamp: Stamp


def read_stable(path: str | Path, expect: Stamp | None = None) -> Snapshot:
    """The whole file, read through one descriptor and checked after (see the module)."""
    with StableFile(path, expect) as f:
        data = f.read()
        f.check()
        return Snapshot(data, f.sha256, f.stamp)


@contextmanager
def opened(source: str | Path | StableFile) -> Iterator[StableFile]:
    """``source`` when it is a :class:`StableFile` already (its owner closes it), else the
    file opened here (not hashed: nobody could ask) and closed after."""
    if isinstance(source, StableFile):
        yield source
        return
    with StableFile(source, hashed=False) as f:
        yield f


def after_blank_line(buf: bytes, end: int | None = None) -> int:
    """Where the text after the last blank line (``\\n\\n`` or ``\\n\\r\\n``) of ``buf``
    (before ``end``) starts (0: no blank line): a :meth:`StableFile.chunks` boundary of
    whole sentences."""
    end = len(buf) if end is None else end
    lf = buf.rfind(b"\n\n", 0, end)
    crlf = buf.rfind(b"\n\r\n", max(lf, 0), end)  # only a later one counts
    return crlf + 3 if crlf >= 0 else lf + 2 if lf >= 0 else 0
