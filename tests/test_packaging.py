"""Installs (issue 23): the README's editable install imports ``sysdiff`` from any folder,
also beside a folder named ``sysdiff`` (the checkout's default name); a wheel installed in a
fresh virtual environment carries the samples and runs ``sysdiff demo``; ``sysdiff server
status`` lists the warm runners of other installations.

The fresh environments get sysdiff's dependencies from this test's environment (a ``.pth``
line naming its site-packages), so nothing is downloaded but the build backend.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.conftest import REPO

SOURCES = ("pyproject.toml", "README.md", ".build", "sysdiff", "flows", "schemas",
           "transforms", "data")


def fresh_venv(where: Path) -> Path:
    """A virtual environment without pip whose imports fall back on this one's packages;
    its python."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def pip(*args: str, cwd: Path | None = None) -> None:
    """This environment's pip (``--python`` names the environment to install into)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "-q", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def clean_env(home: Path) -> dict[str, str]:
    """A new user's environment: an empty HOME, no Prefect or sysdiff settings."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("PREFECT_", "SYSDIFF_", "PYTHON", "VIRTUAL_ENV"))}
    return {**keep, "HOME": str(home), "SYSDIFF_SERVER": "off",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


def left_out(folder: str, names: list[str]) -> set[str]:
    """What a copy of the checkout leaves out: caches, build metadata, and the warehouses
    (folders) the README's tour writes under data/ (not ``flows/warehouse.py``)."""
    skip = set(shutil.ignore_patterns("__pycache__", ".*lock", ".sysdiff-*", "*.egg-info")(
        folder, names))
    return skip | {n for n in names if "warehouse" in n and Path(folder, n).is_dir()}


def copy_checkout(dest: Path) -> Path:
    """The files a build reads, copied (the warehouses the README's tour writes in data/
    are left out), so that a build writes nothing into the checkout."""
    dest.mkdir(parents=True)
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=left_out)
        else:
            shutil.copy2(source, dest / name)
    return dest


def test_the_editable_install_imports_beside_a_folder_named_sysdiff(tmp_path):
    checkout = copy_checkout(tmp_path / "clones" / "sysdiff")  # the default clone name
    python = fresh_venv(tmp_path / "venv")
    pip("--python", str(python), "install", "--no-deps", "-e", str(checkout))
    code = ("import sysdiff, sysdiff.flows.api as api; print(sysdiff.__file__); "
            "print(sysdiff.evaluate.__name__, sysdiff.open.__name__, api.__file__)")
    for cwd in (checkout.parent, checkout, tmp_path):  # beside it, inside it, elsewhere
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=cwd,
                              env=clean_env(tmp_path / "home"))
        assert proc.returncode == 0, (cwd, proc.stderr)
        first, second = proc.stdout.splitlines()
        assert first == str(checkout / "sysdiff" / "__init__.py")
        assert second == f"evaluate open {checkout / 'flows' / 'api.py'}"


def test_a_wheel_in_a_fresh_environment_runs_the_demo(tmp_path):
    source = copy_checkout(tmp_path / "src")
    pip("wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(source))
    [wheel] = (tmp_path / "dist").glob("sysdiff-*.whl")
    python = fresh_venv(tmp_path / "venv")
    pip("--python", str(python), "install", "--no-deps", str(wheel))
    site = Path(subprocess.run([python, "-c", "import sysdiff, os; print(os.path.dirname("
                                "sysdiff.__file__))"], capture_output=True, text=True,
                               check=True, cwd=tmp_path).stdout.strip())
    assert site.parent.name == "site-packages" and (site / "flows" / "cli.py").is_file()
    for sample in ("sequoia/sequoia.toml", "litbank/litbank.toml", "ner/ner.toml",
                   "srl/srl.toml", "unl/unl.toml", "corefud/corefud.toml"):
        assert (site / "data" / sample).is_file(), sample
    assert not list((site / "data").glob("*warehouse*"))
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    sysdiff = tmp_path / "venv" / "bin" / "sysdiff"
    where = subprocess.run([sysdiff, "demo", "--data-dir"], capture_output=True, text=True,
                           cwd=work, env=clean_env(home))
    assert where.stdout.strip() == str(site / "data"), where.stderr
    proc = subprocess.run([sysdiff, "demo"], capture_output=True, text=True, cwd=work,
                          env=clean_env(home), timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "seqsm@ud2.16" in proc.stdout and "report:" in proc.stdout
    # the summary's p-values as everywhere: no 0.0000, the AR floor with its trials
    assert "1.4e-13" in proc.stdout and "< 1e-4 (10,000 trials)" in proc.stdout
    assert "0.0000" not in proc.stdout and "0.0001" not in proc.stdout
    assert (work / "sysdiff-report.html").is_file()
    assert (work / "data" / "warehouse" / "sysdiff.duckdb").is_file()
    assert "Traceback" not in proc.stderr


def test_server_status_lists_the_runners_of_other_installations(tmp_path, monkeypatch):
    from sysdiff.flows import runner
    from sysdiff.flows.cli_server import server_status_text

    monkeypatch.setenv("SYSDIFF_STATE_DIR", str(tmp_path))
    other = "0123456789ab"
    assert other != runner.install_key()
    lock = tmp_path / f"runner-{other}.lock"
    lock.write_text(f"{os.getpid()}\n")
    (tmp_path / f"runner-{other}.json").write_text(json.dumps(
        {"pid": os.getpid(), "source": "/elsewhere/site-packages/sysdiff/flows"}))
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the runner holds its lock while it lives
        text = server_status_text()
    finally:
        os.close(fd)
    assert "warm runner: not running" in text
    assert (f"warm runner of another installation: running (pid {os.getpid()}" in text
            and "/elsewhere/site-packages/sysdiff/flows; 'sysdiff server stop' stops it"
            in text), text
    assert "another installation" not in server_status_text()  # its lock released: gone
