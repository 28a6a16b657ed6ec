"""sysdiff: in-depth comparative evaluation of NLP system outputs at scale.

The Python API (see ``sysdiff.flows.api``)::

    import sysdiff
    wh = sysdiff.evaluate(key=..., systems={"NAME@VERSION": path, ...}, task="dep")
    wh.scores, wh["pairs"], wh.sql("select ..."), wh.relation("select ...")
    sysdiff.remove(corpus, ["NAME@VERSION"], warehouse=wh)
    with sysdiff.open("data/warehouse") as wh: ...

The code lives in the repository's ``flows/``, ``transforms/`` and ``schemas/`` folders,
installed as ``sysdiff.flows``, ``sysdiff.transforms`` and ``sysdiff.schemas``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

__all__ = ["evaluate", "open", "remove", "InputError", "Warehouse"]

if TYPE_CHECKING:
    from sysdiff.flows.api import Warehouse


def _checkout_layout() -> None:
    """In a source checkout (an editable install, or ``python`` started in the checkout),
    ``sysdiff.flows``, ``sysdiff.schemas`` and ``sysdiff.transforms`` are the checkout's
    ``flows/``, ``schemas/`` and ``transforms/`` folders, beside this one. (A wheel holds
    them inside this package, where they are found first.)"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.isfile(os.path.join(root, "flows", "__init__.py")) and os.path.isfile(
            os.path.join(root, "pyproject.toml")) and root not in __path__:
        __path__.append(root)


_checkout_layout()

#: How long polars' allocator (jemalloc) keeps the pages it frees before it hands them back
#: to the system (polars' own setting: 0.5 s and 1 s, which polars puts first in
#: ``_RJEM_MALLOC_CONF``; the last value of an option wins). Ingest and compare allocate and
#: free columns of millions of rows file after file and shard after shard; a page handed
#: back is a page fault, and a page zeroed, when the next file needs it (with polars' own
#: setting, a fifth of a 10M x 10 run's CPU time was spent in the kernel). A
#: ``_RJEM_MALLOC_CONF`` set by the user wins; it only takes effect before polars is
#: imported.
POLARS_ALLOCATOR = "dirty_decay_ms:10000,muzzy_decay_ms:10000"


def _allocator() -> None:
    """Give polars' allocator :data:`POLARS_ALLOCATOR` (this process and the processes it
    starts, Dask workers included), unless the user chose another or polars is loaded."""
    if "polars" not in sys.modules:
        os.environ.setdefault("_RJEM_MALLOC_CONF", POLARS_ALLOCATOR)


_allocator()


def evaluate(*args, **kwargs):
    """Run an evaluation into a warehouse (:func:`sysdiff.flows.api.evaluate`)."""
    from sysdiff.flows.api import evaluate as run

    return run(*args, **kwargs)


def remove(*args, **kwargs):
    """Remove systems, versions or a corpus (:func:`sysdiff.flows.api.remove`)."""
    from sysdiff.flows.api import remove as run

    return run(*args, **kwargs)


def open(warehouse=None) -> Warehouse:  # noqa: A001 (the API's name for reading a warehouse)
    """Open a warehouse read-only (:func:`sysdiff.flows.api.open_warehouse`)."""
    from sysdiff.flows.api import open_warehouse

    return open_warehouse(warehouse)


def __getattr__(name: str):
    if name == "InputError":
        from sysdiff.schemas.errors import InputError

        return InputError
    if name == "Warehouse":
        from sysdiff.flows.api import Warehouse

        return Warehouse
    raise AttributeError(name)
