"""polars' allocator keeps the pages it frees for a while (``sysdiff.POLARS_ALLOCATOR``):
set for sysdiff's processes and the processes they start, unless the user chose a setting
or polars was loaded first (where it could no longer take effect)."""

from __future__ import annotations

import os
import subprocess
import sys

import sysdiff

VAR = "_RJEM_MALLOC_CONF"


def seen(code: str, **env: str) -> str:
    """What a fresh Python process running ``code`` then ``print(os.environ.get(VAR))``
    prints, started with ``env`` added to an environment without ``VAR``."""
    base = {k: v for k, v in os.environ.items() if k != VAR}
    out = subprocess.run([sys.executable, "-c", f"{code}; import os; "
                          f"print(os.environ.get({VAR!r}))"], env={**base, **env},
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_sysdiff_sets_the_allocators_decay_for_itself_and_its_children():
    """polars appends the setting to its own (the last value of an option wins)."""
    assert seen("import sysdiff, polars").endswith("," + sysdiff.POLARS_ALLOCATOR)
    child = ("import sysdiff, subprocess, sys; subprocess.run([sys.executable, '-c', "
             "'import polars, os; print(os.environ.get(\"" + VAR + "\"))'])")
    assert seen(child).splitlines()[0].endswith("," + sysdiff.POLARS_ALLOCATOR)


def test_the_users_setting_wins():
    got = seen("import sysdiff, polars", **{VAR: "dirty_decay_ms:0"})
    assert got.endswith(",dirty_decay_ms:0") and sysdiff.POLARS_ALLOCATOR not in got


def test_a_polars_loaded_before_sysdiff_is_left_as_it_is():
    got = seen("import polars, sysdiff")
    assert got.startswith("dirty_decay_ms") and sysdiff.POLARS_ALLOCATOR not in got
