"""Shared fixtures: one Prefect test harness per session, CLI runner, warehouse snapshots."""

from __future__ import annotations

import hashlib
import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
# Tests never start or use the background Prefect server of the machine's user (the server
# tests give theirs a private state folder); in-process runs use the session harness.
os.environ.setdefault("SYSDIFF_SERVER", "off")
# The tests of the warm runner choose it per run (SYSDIFF_RUNNER=off or unset): a value in
# the caller's environment would turn every "with the runner" case into a run without it.
os.environ.pop("SYSDIFF_RUNNER", None)

REPO = Path(__file__).resolve().parent.parent
SEQUOIA = REPO / "data" / "sequoia"
TEST_DATA = REPO / "tests" / "data"


@pytest.fixture(scope="session")
def prefect_harness():
    """A temporary Prefect API for the whole session (started once, ~10 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run ``sysdiff ARGS`` in-process; return (exit status, stdout, stderr)."""
    from sysdiff.flows.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["sysdiff", *args]
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli(prefect_harness):
    return run_cli


BUNDLED = {"sequoia": SEQUOIA / "sequoia.toml", "litbank": REPO / "data/litbank/litbank.toml",
           "unl": REPO / "data/unl/unl.toml", "history": SEQUOIA / "history.toml"}


@pytest.fixture(scope="session")
def bundled(tmp_path_factory, prefect_harness):
    """``bundled(name)``: a warehouse holding the bundled sample ``name`` (run once per
    session, shared by every test that only reads it)."""
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            root = tmp_path_factory.mktemp(f"bundled-{name}") / "wh"
            code, _out, err = run_cli("run", str(BUNDLED[name]), "-w", str(root))
            assert code == 0, err
            built[name] = root
        return built[name]

    return get


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the SHA-256 of its bytes."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
