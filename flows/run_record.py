"""What the last committed run of each corpus was asked to do, kept in the manifest
(``"corpora": {corpus: {...}}``): its task and the options its tables were computed with
(mappings, randomization trials and seed, shard size, version order, decoding and matching
options). ``sysdiff rm`` recomputes a corpus' tables with them (the same signatures, so only
what depended on a removed system is computed again), and ``show`` reads the number of
randomization trials and bootstrap samples to say when a p-value is at its floor.

Light (stdlib only): read by the read-only commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sysdiff.flows.names import read_manifest

if TYPE_CHECKING:
    from sysdiff.flows.spec import RunSpec, Source
    from sysdiff.flows.warehouse import Staging

KEY = "corpora"
#: The RunSpec fields that shape a corpus' tables (recorded as given, so that signatures
#: computed from them again are the same).
OPTIONS = ("mappings", "ar_trials", "seed", "bootstrap", "confidence", "shard_sents", "unl",
           "versions", "scheme", "match", "singletons")


def options_of(spec: RunSpec) -> dict[str, Any]:
    """The record of a run: its task and options (JSON values)."""
    from sysdiff.schemas.frozen import thaw

    return {"task": spec.task, **{name: thaw(getattr(spec, name)) for name in OPTIONS}}


def record(stage: Staging, spec: RunSpec) -> None:
    """Keep the run's options in the manifest its commit writes."""
    stage.manifest.setdefault(KEY, {})[spec.corpus] = options_of(spec)


def forget(stage: Staging, corpus: str) -> None:
    """Drop a corpus' record (the corpus is removed)."""
    stage.manifest.get(KEY, {}).pop(corpus, None)


def recorded(manifest: dict, corpus: str) -> dict[str, Any] | None:
    """The options of the corpus' last committed run (None: not recorded, e.g. a warehouse
    written by an older sysdiff)."""
    found = manifest.get(KEY, {}).get(corpus)
    return found if isinstance(found, dict) else None


def p_resolution_of(root: Path, corpus: str) -> tuple[int | None, int | None]:
    """The randomization trials and bootstrap samples the corpus' p-values were computed
    with (None: unknown)."""
    try:
        found = recorded(read_manifest(root), corpus) or {}
    except Exception:  # noqa: BLE001 (a damaged manifest is said by the query itself)
        found = {}
    trials, samples = found.get("ar_trials"), found.get("bootstrap")
    return (trials if isinstance(trials, int) else None,
            samples if isinstance(samples, int) and samples > 0 else None)


def spec_for(corpus: str, task: str, key: Source, systems: list[Source],
             options: dict[str, Any] | None) -> RunSpec:
    """A RunSpec of the stored corpus with its recorded options (defaults when none)."""
    from sysdiff.flows.spec import RunSpec

    given = {name: options[name] for name in OPTIONS if options and name in options}
    return RunSpec(corpus, task, key, systems, **given)
