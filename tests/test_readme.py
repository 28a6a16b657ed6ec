"""The README works as written: every `sysdiff` command of its `sh` blocks and every `python`
block runs, in order, on a fresh copy of `data/` (as on a fresh clone), and the lines of each
`text` block appear in the output of the command just before it."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from tests.conftest import REPO, run_cli

README = REPO / "README.md"
PYTHON = "python:"  # a step that is a Python block, not a command


def run_python(code: str) -> tuple[int, str, str]:
    """Run a README Python block; (status, stdout, stderr) as the CLI steps give them."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    return 0, out.getvalue(), ""


def readme_steps() -> list[tuple[str, list[str]]]:
    """(command, lines its output must contain), in README order."""
    steps: list[tuple[str, list[str]]] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(), re.S | re.M):
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        if lang == "sh":
            steps += [(line, []) for line in lines]
        elif lang == "python":
            steps.append((PYTHON + body, []))
        elif lang == "text":
            assert steps, "a text block before any command"
            steps[-1][1].extend(lines)
    return steps


def test_the_readme_has_the_tour():
    commands = [c for c, _ in readme_steps() if not c.startswith(PYTHON)]
    assert len(commands) >= 10
    assert all(c.startswith("sysdiff ") for c in commands), commands
    assert commands[0] == "sysdiff demo"
    for needed in ("run data/litbank/litbank.toml", "--key data/unl/expected.unl",
                   "show changes", "check", "show unl"):
        assert any(needed in c for c in commands), needed
    for c in commands:  # every file a command names is bundled
        for word in shlex.split(c):
            for path in re.findall(r"(data/[\w@./-]+\.\w+)", word):
                assert (REPO / path).is_file(), path


def test_the_readme_commands_run_in_order(tmp_path, monkeypatch, prefect_harness):
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "data", clone / "data",
                    ignore=shutil.ignore_patterns("warehouse", ".*"))
    monkeypatch.chdir(clone)
    monkeypatch.delenv("SYSDIFF_WAREHOUSE", raising=False)
    steps = readme_steps()
    litbank = next(i for i, (c, _) in enumerate(steps) if "litbank" in c)
    # the whole tour, then the examples before the LitBank step again: they still work with
    # a coreference and a UNL corpus beside the Sequoia one
    for command, expected in steps + steps[:litbank]:
        code, out, err = (run_python(command.removeprefix(PYTHON))
                          if command.startswith(PYTHON) else run_cli(*shlex.split(command)[1:]))
        assert code == 0, f"{command}\n{err}"
        assert "warning" not in err or "mention types are unavailable" in err, (command, err)
        for line in expected:
            assert line in out, f"{command}: {line!r} not in the output\n{out}"
    assert (clone / "data" / "warehouse" / "sysdiff.duckdb").is_file()
    assert (clone / "data" / "api-warehouse" / "sysdiff.duckdb").is_file()  # the Python block
    assert Path("sysdiff-report.html").is_file()
