"""Preloaded into each Dask worker of the no-shared-disk test (``dask worker --preload``):
every open of a path under ``$SYSDIFF_TEST_FORBID`` (the client's folders, ``os.pathsep``
separated) is refused and written to ``forbidden.log`` in the worker's own folder, so a
client path that reaches a worker fails the run and the test says which."""

from __future__ import annotations

import os
import sys

FORBID = tuple(os.path.join(p, "") for p in
               os.environ.get("SYSDIFF_TEST_FORBID", "").split(os.pathsep) if p)
LOG = os.path.join(os.getcwd(), "forbidden.log")


def _hook(event: str, args: tuple) -> None:
    if event != "open" or not FORBID or isinstance(args[0], int):
        return
    try:
        path = os.path.abspath(os.fsdecode(args[0]))
    except (TypeError, ValueError):
        return
    if path.startswith(FORBID):
        with open(LOG, "a") as f:
            f.write(path + "\n")
        raise PermissionError(f"a client path reached a Dask worker: {path}")


sys.addaudithook(_hook)


def dask_setup(worker) -> None:  # noqa: ANN001 (dask's preload entry point)
    """Nothing more to set up: the hook is in place."""
