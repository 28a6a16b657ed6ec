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

from sysdiff.flows import outcome
from sysdiff.flows.gates import latest_steps
from sysdiff.flows.prefect_logs import API_ONLY, one_line_input_errors
from sysdiff.flows.preflight import preflight
from sysdiff.flows.run import evaluate, run_name
from sysdiff.flows.spec import RunSpec, folder_specs
from sysdiff.flows.store import location
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
def evaluate_folder(folder: str, warehouse: str, pass_id: str | None = None) -> Pass:
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
            spec, bad = preflight(spec, location(warehouse))
            skip(bad)
            # systems skipped while reading were printed by the run (skip_system)
            skip(run_corpus(spec, location(warehouse)), printed=True)
        except (InputError, outcome.HelperLost) as e:
            skip([f"corpus {spec.corpus!r} skipped: {e}"])
            continue
        result.evaluated.append(spec.corpus)
        for line in latest_steps(location(warehouse), spec.corpus):
            (log.warning if line.startswith("REGRESSION") else log.info)("%s", line)
            run_log.info("%s", line)
            result.steps.append(line)
    run_log.info("%s", result.summary())
    if pass_id:  # evaluate_once settles the outcome
        outcome.ended(pass_id, result)
    return result


def run_corpus(spec: RunSpec, warehouse: Path) -> list[str]:
    """One corpus's run (a subflow); the lines of its skipped systems. Its outcome is the
    run's, not Prefect's (:func:`outcome.settle`, without a line: the pass says once what
    was lost); :class:`outcome.HelperLost` when the background server died before it."""
    run_id = outcome.new_run_id()
    try:
        return evaluate.with_options(flow_run_name=run_name(spec))(spec, warehouse, run_id)
    except InputError:
        raise
    except Exception as error:
        return outcome.settle(warehouse, run_id, error, quiet=True)
    finally:
        outcome.forget(run_id)


def evaluate_once(folder: Path, warehouse: Path) -> Pass:
    """One pass of :func:`evaluate_folder` (``serve --once``), whose outcome is the pass's,
    not Prefect's (as :func:`sysdiff.flows.run.run_evaluation`'s)."""
    pass_id = outcome.new_run_id()
    with outcome.server_watch() as watch:
        try:
            return evaluate_folder(str(folder), str(warehouse), pass_id)
        except Exception as error:
            return outcome.settle(None, pass_id, error, watch)
        finally:
            outcome.forget(pass_id)


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
