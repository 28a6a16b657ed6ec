"""Scheduled evaluation of a watched folder (``sysdiff serve``).

Layout: ``DIR/<corpus>/key.<ext>`` and ``DIR/<corpus>/systems/<name>[@<version>].<ext>``,
optionally ``DIR/<corpus>/corpus.toml`` with ``task = "pos"`` (or dep, coref, unl, nl) and
any run options. Every pass evaluates every corpus; content hashes make unchanged files and
results free, so a pass picks up exactly the new or changed system files.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from prefect import flow

from flows.run import evaluate
from flows.spec import RunSpec, build_spec
from schemas.errors import InputError

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
    """The deployment of :func:`evaluate_folder` on a cron schedule."""
    return evaluate_folder.to_deployment(
        name="sysdiff-nightly", cron=cron,
        parameters={"folder": str(folder), "warehouse": str(warehouse)})


def serve_folder(folder: Path, warehouse: Path, cron: str) -> None:
    """Serve the deployment until interrupted (needs a Prefect server)."""
    from prefect import serve

    serve(deployment(folder, warehouse, cron))
