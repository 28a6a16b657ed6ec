"""Scheduled evaluation of a watched folder (``sysdiff serve``).

Layout: ``DIR/<corpus>/key.<ext>`` and ``DIR/<corpus>/systems/<name>[@<version>].<ext>``,
optionally ``DIR/<corpus>/corpus.toml`` with ``task = "pos"`` (or dep, coref, unl, nl) and
any run options. Every pass evaluates every corpus; content hashes make unchanged files and
results free, so a pass picks up exactly the new or changed system files.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow

from sysdiff.flows.gates import latest_steps
from sysdiff.flows.prefect_logs import API_ONLY, one_line_input_errors
from sysdiff.flows.preflight import preflight
from sysdiff.flows.run import evaluate
from sysdiff.flows.spec import TASK_BY_SUFFIX, folder_specs  # noqa: F401 (re-exported)
from sysdiff.schemas.errors import InputError

log = logging.getLogger("sysdiff")


@dataclass
class Pass:
    """What one pass over a watched folder did."""

    evaluated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line per corpus or system
    steps: list[str] = field(default_factory=list)  # newest versions vs their previous

    @property
    def regressions(self) -> list[str]:
        return [line for line in self.steps if line.startswith("REGRESSION")]

    def summary(self) -> str:
        """One line: the corpora evaluated, significant regressions of the newest versions,
        and how many corpora and systems were skipped."""
        done = f"evaluated {len(self.evaluated)} corpora: {', '.join(self.evaluated) or 'none'}"
        if self.regressions:
            done += f"; {len(self.regressions)} significant regression(s) (see above)"
        if not self.skipped:
            return done
        corpora = sum(line.startswith("corpus ") for line in self.skipped)
        return (f"{done}; skipped {corpora} corpora and {len(self.skipped) - corpora} system "
                "files (see the lines above)")


@flow(name="sysdiff-watch", validate_parameters=False)
def evaluate_folder(folder: str, warehouse: str) -> Pass:
    """Evaluate every corpus of a watched folder into the warehouse. A bad corpus or system
    file is skipped with one line (on stderr as the command line prints it, and a warning
    in the flow run's log) and the rest is evaluated."""
    from prefect import get_run_logger

    from sysdiff.flows.cli_options import show_warnings

    one_line_input_errors()
    if not log.handlers:  # a scheduled run, in a process of Prefect's
        show_warnings()
    run_log = get_run_logger()  # the flow run's log (the Prefect UI)

    def skip(lines: list[str], printed: bool = False) -> None:
        for line in lines:
            if not printed:
                log.warning("%s", line)  # stderr
            run_log.warning("%s", line, extra=API_ONLY)
        result.skipped += lines

    result = Pass()
    specs, bad = folder_specs(Path(folder))
    skip(bad)
    for spec in specs:
        try:
            spec, bad = preflight(spec, Path(warehouse))
            skip(bad)
            # systems skipped while reading were printed by the run (skip_system)
            skip(evaluate.with_options(flow_run_name=f"{spec.corpus}")(spec, Path(warehouse)),
                 printed=True)
        except InputError as e:
            skip([f"corpus {spec.corpus!r} skipped: {e}"])
            continue
        result.evaluated.append(spec.corpus)
        for line in latest_steps(Path(warehouse), spec.corpus):
            (log.warning if line.startswith("REGRESSION") else log.info)("%s", line)
            run_log.info("%s", line)
            result.steps.append(line)
    run_log.info("%s", result.summary())
    return result


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
