"""Which Prefect API a run uses (see :mod:`sysdiff.flows.server`): the one the user
configured, else the background server (started when needed), else Prefect's temporary
server, with a throwaway home when Prefect's own cannot be written. Stdlib only: decided
before Prefect is imported."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from sysdiff.flows.server import (
    MODE_ENV,
    STATE_ENV,
    ServerError,
    describe,
    explicit_api_url,
    live_server,
    mode,
    prefect_home,
)
from sysdiff.flows.server_process import ensure, recently_failed


def api_for_run(start: bool = True, started: Callable[[str], None] | None = None
                ) -> tuple[str | None, str]:
    """(API URL to set, how) for a flow run in this process, decided before Prefect is
    imported: ``("", "explicit")`` when the user configured one (left as it is);
    ``(url, "background")`` for the background server (started when ``start``);
    ``(None, "ephemeral")`` for Prefect's temporary server (``SYSDIFF_SERVER=off``, or the
    background server could not be started, or its state folder cannot be written: one
    warning line)."""
    if explicit_api_url():
        return "", "explicit"
    if mode() == "off":
        return ephemeral()
    try:
        server = live_server()
        if server is not None:
            return server.api_url, "background"
        if not start or recently_failed():  # a failed start was said once, when it failed
            return ephemeral()
        return ensure(started=started).api_url, "background"
    except OSError as e:  # e.g. the state folder cannot be written (HOME read-only)
        return ephemeral(f"the background Prefect server cannot keep its state ({describe(e)})",
                         f"set {STATE_ENV} to a writable folder, or {MODE_ENV}=off",
                         f"set {STATE_ENV} and PREFECT_HOME to writable folders")
    except ServerError as e:
        return ephemeral(f"the background Prefect server could not be started ({e})",
                         "'sysdiff server start' retries")


def ephemeral(why: str | None = None, hint: str = "", hint_home: str | None = None
              ) -> tuple[None, str]:
    """Prefect's temporary server for this run: ``(None, "ephemeral")``. One warning line
    (``why``, then ``hint``) when the background server is not used, or when Prefect's home
    cannot be written: the temporary server's database then goes to a folder removed at
    exit (``hint_home`` replaces the hint)."""
    moved = throwaway_prefect_home()
    said = [f"{why}; this run uses a temporary server"] if why else []
    if moved is not None:
        said.append(f"Prefect's home {moved} cannot be written{' either' if why else ''}, so "
                    f"{'it' if why else 'the temporary server of this run'} keeps the run's "
                    "records in a folder removed at exit")
        hint = hint_home or (f"{hint}; set PREFECT_HOME to a writable folder" if hint
                             else "set PREFECT_HOME to a writable folder")
    if said:
        print(f"sysdiff: warning: {'; '.join(said)} ({hint})", file=sys.stderr)
    return None, "ephemeral"


def writable(folder: Path) -> bool:
    """True when ``folder`` exists (or can be made) and a file can be created in it."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def throwaway_prefect_home() -> str | None:
    """When Prefect's home cannot be written (Prefect's temporary server would fail to start
    and retry without end), point ``PREFECT_HOME`` at a private folder removed at exit (the
    user's profiles are still read); the unusable home, else None."""
    import atexit
    import shutil
    import tempfile

    try:
        home = prefect_home()
    except RuntimeError:  # no home folder at all
        home = None
    if home is not None and writable(home):
        return None
    profiles = os.environ.get("PREFECT_PROFILES_PATH") or (
        str(home / "profiles.toml") if home is not None else None)
    folder = tempfile.mkdtemp(prefix="sysdiff-prefect-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # after Prefect's own exits
    os.environ["PREFECT_HOME"] = folder
    if profiles and Path(profiles).is_file():
        os.environ["PREFECT_PROFILES_PATH"] = profiles
    return str(home or "~/.prefect")
