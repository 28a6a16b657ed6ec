"""Scheduled evaluation of a watched folder (``sysdiff serve``).

Layout: ``DIR/<corpus>/key.<ext>`` and ``DIR/<corpus>/systems/<name>[@<version>].<ext>``,
optionally ``DIR/<corpus>/corpus.toml`` with ``task = "pos"`` (or dep, coref, unl, nl) and
any run options. Every pass evaluates every corpus; content hashes make unchanged files and
results free, so a pass picks up exactly the new or changed system files.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from prefect import flow

from sysdiff.flows.run import evaluate
from sysdiff.flows.spec import RunSpec, build_spec
from sysdiff.schemas.errors import InputError

TASK_BY_SUFFIX = {".conllu": "dep", ".conllx": "dep", ".tsv": "pos", ".txt": "pos",
                  ".jsonlines": "coref", ".jsonl": "coref", ".unl": "unl"}


def folder_specs(root: Path) -> list[RunSpec]:
    """One run spec per corpus folder under ``root``."""
    if not root.is_dir():
        raise InputError("not a folder; expected DIR/<corpus>/key.* and "
                         "DIR/<corpus>/systems/<name>.*", root)
    specs = []
    for corpus_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        keys = sorted(corpus_dir.glob("key.*"))
        systems = sorted(p for p in (corpus_dir / "systems").glob("*") if p.is_file()
                         and not p.name.startswith("."))
        if not keys or not systems:
            continue
        cfg = {}
        if (corpus_dir / "corpus.toml").exists():
            cfg = tomllib.loads((corpus_dir / "corpus.toml").read_text(encoding="utf-8"))
        task = cfg.pop("task", TASK_BY_SUFFIX.get(keys[0].suffix.lower(), "dep"))
        fmt = cfg.pop("format", None)
        specs.append(build_spec(corpus_dir.name, task, keys[0],
                                [f"{p.stem}={p}" for p in systems], fmt, **cfg))
    return specs


@flow(name="sysdiff-watch", validate_parameters=False)
def evaluate_folder(folder: str, warehouse: str) -> list[str]:
    """Evaluate every corpus of a watched folder into the warehouse."""
    done = []
    for spec in folder_specs(Path(folder)):
        evaluate.with_options(flow_run_name=f"{spec.corpus}")(spec, Path(warehouse))
        done.append(spec.corpus)
    return done


def deployment(folder: Path, warehouse: Path, cron: str):
    """The deployment of :func:`evaluate_folder` on a cron schedule.

    One run at a time: runs on one warehouse are serialised (a second one would fail on the
    warehouse lock), so a run triggered while another is active waits for its turn.
    """
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return evaluate_folder.to_deployment(
        name="sysdiff-nightly", cron=cron,
        parameters={"folder": str(folder), "warehouse": str(warehouse)},
        concurrency_limit=ConcurrencyLimitConfig(
            limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE),
        description=f"sysdiff: evaluate {folder} into {warehouse}")


def serve_folder(folder: Path, warehouse: Path, cron: str) -> None:
    """Serve the deployment until interrupted (needs a Prefect server).

    The CLI silences Prefect's logs for one-shot commands (level CRITICAL). A served run's
    logs belong in the Prefect UI, so that quiet default is raised to INFO here (any other
    level is kept). Flow runs start in child processes that take both this environment and
    this process's settings, hence both are set.
    """
    from prefect import serve
    from prefect.settings import PREFECT_LOGGING_LEVEL, temporary_settings

    level = os.environ.get("PREFECT_LOGGING_LEVEL", "CRITICAL")
    if level.upper() == "CRITICAL":
        level = os.environ["PREFECT_LOGGING_LEVEL"] = "INFO"
    with temporary_settings(updates={PREFECT_LOGGING_LEVEL: level}):
        serve(deployment(folder, warehouse, cron))
