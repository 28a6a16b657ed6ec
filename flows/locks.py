"""The readers' lock of a warehouse: readers hold it shared while they read; a run deletes
superseded files only when it can take it exclusively (no reader is between reading the
manifest and reading the files it names). Light: read-only commands import it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

READERS = ".sysdiff-readers.lock"


def hold_shared(root: Path) -> int | None:
    """Take the readers' lock shared (waits while a run deletes files, milliseconds); the
    descriptor to release with :func:`release`. None for a warehouse without the lock file
    (written by an older sysdiff) or one that cannot be opened."""
    try:
        fd = os.open(root / READERS, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def release(fd: int | None) -> None:
    """Release a lock taken by :func:`hold_shared`."""
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def no_readers(root: Path) -> Iterator[bool]:
    """Within the block, True when no reader holds the warehouse (the readers' lock taken
    exclusively, without waiting); False when one does."""
    fd = os.open(root / READERS, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
