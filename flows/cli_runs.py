"""The commands that evaluate: ``run``, ``demo`` and ``serve``. Names, files, formats, the
run file and the warehouse lock are checked before Prefect is imported; the Prefect API
is chosen then (:mod:`sysdiff.flows.prefect_api`), and ``run``/``demo`` go to the warm
runner when one lives."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from sysdiff.flows import prefect_api, server, server_process
from sysdiff.flows.cli_options import Verbose, Warehouse, show_warnings, to_text
from sysdiff.flows.names import resolve_warehouse
from sysdiff.schemas.errors import InputError

#: The bundled samples: the checkout's data/ folder, or the package's (a wheel ships them).
DATA = Path(__file__).resolve().parent.parent / "data"
SKIPPED = 3  # exit status when systems were skipped


def use_prefect_api(forward: bool = False) -> None:
    """Choose the Prefect API before Prefect is imported (:func:`prefect_api.api_for_run`): the
    one the user configured, else the background server (started now if needed), else a
    temporary one. With ``forward``, a command that the warm runner can take (``run``,
    ``demo``) is handed to it now that the server lives (``typer.Exit`` with its status).
    Embedded (Prefect already imported, e.g. under ``prefect_test_harness``): unchanged."""
    if "prefect" in sys.modules:
        return
    from sysdiff.flows import runner

    url, how = prefect_api.api_for_run(started=runner.spawn_for)
    if how != "background":
        return
    os.environ["PREFECT_API_URL"] = url
    if forward:
        status = runner.try_forward(sys.argv[1:], url)
        if status is not None:
            raise typer.Exit(status)


def parse_mappings(items: list[str]) -> dict[str, dict[str, str]]:
    """``--map SYSTEM:OLD=NEW`` (SYSTEM may be @key), ``OLD=NEW`` (every system) or
    ``[SYSTEM:]FILE`` (OLD<TAB>NEW lines) into {system: {old: new}} (``*``: every system)."""
    from sysdiff.flows.spec import parse_map_item

    out: dict[str, dict[str, str]] = {}
    for item in items:
        who, rules = parse_map_item(item)
        out.setdefault(who, {}).update(rules)
    return out


def prepare(spec, warehouse: str | None):
    """The checks that need no Prefect (run before it is imported): warehouse path and lock,
    every input file and its format. Returns (warehouse, spec without skipped systems,
    lines of the systems skipped)."""
    from sysdiff.flows.preflight import preflight

    root = resolve_warehouse(warehouse)
    spec, skipped = preflight(spec, root)
    return root, spec, skipped


def run_spec(spec, root: Path, verbose: bool, dask_address: str | None = None,
             dask_local: int = 0) -> list[str]:
    """Run the evaluation flow for ``spec``; the lines of systems skipped on the way."""
    use_prefect_api(forward=True)
    server.quiet_prefect(verbose)
    show_warnings(verbose)
    from sysdiff.flows.run import run_evaluation

    return run_evaluation(spec, root, dask_address, dask_local)


def run(
    config: Annotated[str | None, typer.Argument(
        help="A TOML run file (instead of options).", metavar="RUN_FILE",
        show_default=False)] = None,
    key: Annotated[str | None, typer.Option(help="The gold key file.", metavar="FILE")] = None,
    system: Annotated[list[str] | None, typer.Option(
        metavar="NAME=FILE", help="NAME=FILE or NAME@VERSION=FILE; repeat for each system.")]
    = None,
    corpus: Annotated[str | None, typer.Option(help="Corpus name.", metavar="NAME")] = None,
    task: Annotated[str | None, typer.Option(metavar="TASK", help="pos, dep, coref, unl, nl, "
                                             "ner or srl "
                                             "(default: the key's format: CoNLL-U with heads "
                                             "dep, without pos, BIO tags ner, coreference "
                                             "formats coref, UNL unl, CoNLL-2009/2005 srl).")]
    = None,
    fmt: Annotated[str | None, typer.Option("--format", metavar="FORMAT", help="Input format "
                   "(default: detected): conllu, conllx, tsv (pos, dep); conll2012, corefud, "
                   "jsonlines (coref); unl (unl, nl); tsv, conll2003, uner (ner); conllu, conll09, "
                   "conll05, props (srl).")] = None,
    mapping: Annotated[list[str] | None, typer.Option(
        "--map", metavar="SYSTEM:OLD=NEW", help="Label mapping SYSTEM:OLD=NEW (SYSTEM may be "
        "@key), OLD=NEW (every system), or [SYSTEM:]FILE of OLD<TAB>NEW lines; ner maps "
        "entity types (TYPE=O drops them), srl roles; repeatable.")] = None,
    scheme: Annotated[str | None, typer.Option(
        metavar="SCHEME", help="ner: span decoding: auto (default; conlleval rules, any of "
        "IOB1/IOB2/BIOES), iob1, iob2 (seqeval strict) or bioes (strict).")] = None,
    match: Annotated[str | None, typer.Option(
        metavar="MODE", help="coref: mention matching of the CorefUD scorer: exact, partial "
        "(a response inside the key mention holding its head) or head (the same head). "
        "Default: head for CorefUD keys, exact otherwise.")] = None,
    singletons: Annotated[str | None, typer.Option(
        metavar="keep|drop", help="coref: keep or drop singleton entities (dropped from key "
        "and responses before matching). Default: drop for CorefUD keys, keep otherwise.")] = None,
    ar_trials: Annotated[int | None, typer.Option(
        min=1, help="Approximate randomization trials (default 10000).")] = None,
    seed: Annotated[int | None, typer.Option(
        min=0, help="Seed of the randomization test and of the bootstrap samples "
        "(default 0).")] = None,
    bootstrap: Annotated[int | None, typer.Option(
        min=0, help="Bootstrap samples of the confidence intervals on every score and delta "
        "(default 1000; 0: no intervals).")] = None,
    confidence: Annotated[float | None, typer.Option(
        help="Confidence level of the intervals, between 0 and 1 (default 0.95).")] = None,
    shard_sents: Annotated[int | None, typer.Option(
        min=1, help="Sentences per shard (whole documents). Default: sized by sysdiff from "
        "the words of all files and the threads, at least 5000.")] = None,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="Skip a system whose file is bad (one line each), evaluate and "
        "commit the others, and exit with status 3.")] = False,
    replace_key: Annotated[bool, typer.Option(
        "--replace-key", help="The corpus was evaluated against another key: start it over "
        "with this one (its systems of earlier runs are removed).")] = False,
    dask_address: Annotated[str | None, typer.Option(
        metavar="ADDRESS", help="Run shard tasks on an existing Dask cluster "
        "(tcp://HOST:PORT).")] = None,
    dask_local: Annotated[int, typer.Option(
        min=0, help="Start a local Dask cluster of N worker processes for the shard tasks.")]
    = 0,
    unl_multiset: Annotated[bool, typer.Option(
        help="UNL: compare items as multisets, not sets.")] = False,
    unl_keep_scope_ids: Annotated[bool, typer.Option(
        help="UNL: keep relation scope ids in the comparison.")] = False,
    unl_legacy_2013: Annotated[bool, typer.Option(
        help="UNL: the older overall threshold (D_all < 0.5).")] = False,
    unl_optional_attr: Annotated[list[str] | None, typer.Option(
        metavar="ATTR", help="UNL: one more optional attribute to ignore (besides @def, "
        "@indef).")] = None,
    warehouse: Warehouse = None,
    verbose: Verbose = False,
) -> None:
    """Ingest a key and systems, compute every table, and store them in the warehouse.

    A corpus keeps the systems of earlier runs (the summary names them; 'sysdiff rm'
    removes them)."""
    import dataclasses

    from sysdiff.flows.spec import build_spec, load_config

    overrides = {k: v for k, v in (("ar_trials", ar_trials), ("seed", seed),
                                   ("bootstrap", bootstrap), ("confidence", confidence),
                                   ("shard_sents", shard_sents), ("scheme", scheme),
                                   ("match", match), ("singletons", singletons))
                 if v is not None}
    if config:
        given = [f"--{n}" for n, v in (("key", key), ("system", system), ("corpus", corpus),
                                       ("task", task), ("format", fmt), ("map", mapping))
                 if v]
        if given:
            raise InputError(f"{', '.join(given)}: the run file {config} sets the corpus, task, "
                             "key, systems and mappings; give either a run file or options")
        spec = dataclasses.replace(load_config(config), keep_going=keep_going,
                                   replace_key=replace_key, **overrides)
    else:
        if not (key and corpus and system):
            raise InputError("give a TOML run file, or --key, --corpus and at least one "
                             "--system NAME=FILE")
        unl = {"multiset": unl_multiset, "keep_scope_ids": unl_keep_scope_ids,
               "legacy_2013": unl_legacy_2013, "optional_attrs": unl_optional_attr or []}
        spec = build_spec(corpus, task, key, system, fmt,
                          mappings=parse_mappings(mapping or []), unl=unl,
                          keep_going=keep_going, replace_key=replace_key, **overrides)
    root, spec, skipped = prepare(spec, warehouse)
    show_warnings(verbose)
    for line in skipped:
        logging.getLogger("sysdiff").warning("%s", line)
    skipped += run_spec(spec, root, verbose, dask_address, dask_local)
    if spec.inferred:  # said once the run is done (a refusal stays one line)
        from sysdiff.flows.progress import notice

        notice(f"task {spec.task} inferred from the key ({spec.inferred}); give --task (or "
               "'task' in the run file) to choose another")
    summary(root, spec.corpus, [s.id for s in spec.systems])
    if skipped:
        typer.echo(f"sysdiff: {len(skipped)} system(s) skipped (listed above); the others are "
                   "evaluated and committed", err=True)
        raise typer.Exit(SKIPPED)


def summary(root: Path, corpus: str, run: list[str] | None = None) -> None:
    """Print the headline scores of a corpus (rates in percent); with ``run`` (the systems
    of this run), say which systems of the corpus came from earlier runs."""
    from sysdiff.flows.queries import one_connection
    from sysdiff.flows.show import headline
    from sysdiff.flows.show.common import corpus_systems

    with one_connection():
        table = headline(root, corpus)
        earlier = [] if run is None else [s for s in corpus_systems(root, corpus)
                                          if s not in run]
    typer.echo(to_text(table, "table", title=f"sysdiff: {corpus}"))
    if earlier:
        hint = command("rm", root, "--corpus", corpus, "--system", "NAME")
        typer.echo(f"from earlier runs: {', '.join(earlier)} (also in corpus '{corpus}'; "
                   f"remove one with: {hint})")
    typer.echo(f"warehouse: {root}  (list the tables: "
               f"{command('sql', root, 'show tables')})")


def command(name: str, root: Path, *args: str) -> str:
    """A ``sysdiff`` command line to copy: with ``-w`` unless ``root`` is where the
    command finds the warehouse by default (``$SYSDIFF_WAREHOUSE``, else ./data/warehouse)."""
    import shlex

    words = ["sysdiff", name]
    if root != resolve_warehouse(None):
        words += ["-w", str(root)]
    return " ".join(shlex.quote(w) if w != "NAME" else w for w in [*words, *args])


def demo(warehouse: Warehouse = None,
         out: Annotated[str, typer.Option("--out", "-o", metavar="FILE",
                                          help="Where to write the report.")]
         = "sysdiff-report.html",
         data_dir: Annotated[bool, typer.Option(
             "--data-dir", help="Print the folder of the bundled samples (a run file for "
             "every task, as the README's tour uses them) and exit.")] = False,
         verbose: Verbose = False) -> None:
    """Evaluate the bundled UD French-Sequoia sample (key + 4 real parsers) end to end."""
    from sysdiff.flows.spec import load_config

    if data_dir:
        typer.echo(str(DATA))
        return

    root, spec, _skipped = prepare(load_config(DATA / "sequoia" / "sequoia.toml"), warehouse)
    run_spec(spec, root, verbose)
    from sysdiff.flows.report import build_report
    from sysdiff.flows.show import show_table

    summary(root, spec.corpus)
    typer.echo(show_table(root, "pairs", spec.corpus, "las", None, None, None, 5, "table"),
               nl=False)
    path = build_report(root, spec.corpus, Path(out))
    typer.echo(f"report: {path.absolute()}  (open it in a browser; it works offline)")


def serve(
    watch: Annotated[str, typer.Option(metavar="DIR", help="Folder: <corpus>/key.* and "
                                       "<corpus>/systems/<name>\\[@version].*")],
    cron: Annotated[str, typer.Option(metavar="SCHEDULE",
                                      help="Cron schedule of the deployment (UTC).")]
    = "0 2 * * *",
    once: Annotated[bool, typer.Option("--once", help="Evaluate the folder once and exit.")]
    = False,
    warehouse: Warehouse = None,
    verbose: Verbose = False,
) -> None:
    """Evaluate a watched folder on a schedule (a Prefect deployment), or once.

    A corpus or system file that cannot be evaluated (a bad name, an empty or bad file) is
    skipped with one line; the rest is evaluated. With --once the exit status is 3 when
    something was skipped."""
    from sysdiff.flows.preflight import check_lock
    from sysdiff.flows.spec import folder_specs

    root = resolve_warehouse(warehouse)
    folder = Path(watch).absolute()
    folder_specs(folder)  # the folder itself must exist (its contents are checked each pass)
    if once:
        check_lock(root)
    else:
        _server_for_schedule()
    use_prefect_api()
    server.quiet_prefect(verbose)
    show_warnings(verbose)
    from sysdiff.flows import watch as watch_mod

    if once:
        done = watch_mod.evaluate_once(folder, root)
        typer.echo(done.summary())
        if done.skipped:
            raise typer.Exit(SKIPPED)
        return
    typer.echo(f"serving deployment 'sysdiff-nightly' on '{cron}' for {folder}")
    watch_mod.serve_folder(folder, root, cron)


def _server_for_schedule() -> None:
    """A schedule needs a Prefect server that outlives this command: the configured one,
    else the background server; never a temporary one."""
    from sysdiff.flows import runner

    if server.explicit_api_url():
        return
    if server.mode() == "off":
        raise InputError("a schedule needs a Prefect server that outlives this command, and "
                         "SYSDIFF_SERVER=off turns sysdiff's background server off: start one "
                         "with 'prefect server start' and set PREFECT_API_URL=http://127.0.0.1:"
                         "4200/api, or unset SYSDIFF_SERVER (or use --once from cron)")
    try:
        server_process.ensure(started=runner.spawn_for)
    except server.ServerError as e:
        raise InputError(f"a schedule needs a Prefect server: {e}") from None
    except OSError as e:
        raise InputError(f"a schedule needs a Prefect server, and the background one cannot "
                         f"keep its state ({server.describe(e)}): set {server.STATE_ENV} to a "
                         "writable folder, or PREFECT_API_URL to a server") from None
