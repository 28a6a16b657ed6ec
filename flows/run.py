"""The top-level Prefect flow: one evaluation run of one corpus into the warehouse."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows import tokens
from flows.spec import RunSpec
from flows.warehouse import open_run


@flow(name="sysdiff-run", validate_parameters=False, log_prints=False)
def evaluate(spec: RunSpec, warehouse: Path) -> Path:
    """Ingest the key and systems of ``spec``, compute every table, commit atomically."""
    with open_run(warehouse) as stage:
        if spec.task in ("pos", "dep"):
            tokens.ingest_tokens(spec, stage)
            tokens.compare_tokens(spec, stage)
        else:
            from flows import domains

            domains.run_domain(spec, stage)
    return warehouse
