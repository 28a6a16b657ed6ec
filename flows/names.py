"""The choices of the command line (tables, views, output formats) and where the warehouse
is: light enough to import before anything else, so ``--help`` lists every choice and a bad
name or path is reported at once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sysdiff.flows.store import LEASE, STAGING, StoreURL, log_versions, parse_location, version_name
from sysdiff.schemas.errors import InputError

FORMATS = ("table", "csv", "tsv", "json", "markdown", "latex")  # output formats
DEFAULT_WAREHOUSE = Path("data") / "warehouse"
MANIFEST = "manifest.json"
#: Bumped when the shape or the meaning of stored partitions changes: a partition written by
#: an older sysdiff has another signature and is recomputed by the next run.
FORMAT_VERSION = 6
TOKEN_TASKS, COREF_TASKS, UNL_TASKS = ("pos", "dep"), ("coref",), ("unl", "nl")
SPAN_TASKS = ("ner",)
SRL_TASKS = ("srl",)
# table -> (tasks whose corpora have it, what it shows): ``sysdiff show --help`` lists these.
SHOWABLE: dict[str, tuple[tuple[str, ...], str]] = {
    "scores": (TOKEN_TASKS, "accuracy and sentence exact match of each system"),
    "pairs": (TOKEN_TASKS, "every pair: difference, change classes, delta, p-values"),
    "changes": (TOKEN_TASKS, "one pair (--sys1, --sys2): summary, top changes per class"),
    "labels": (TOKEN_TASKS, "accuracy per gold label, one column per system"),
    "labeldiff": (TOKEN_TASKS, "one pair: the labels whose accuracy differs most"),
    "oracles": (TOKEN_TASKS, "oracle accuracy of every system combination"),
    "gains": (TOKEN_TASKS, "what each system adds to the oracle of all"),
    "difficulty": (TOKEN_TASKS, "words by the number of systems that get them right"),
    "conll18": (("dep",), "CoNLL 2018 shared-task metrics (precision, recall, F1)"),
    "coref": (COREF_TASKS, "MUC, B3, CEAF, BLANC, LEA and CoNLL scores"),
    "arcs": (COREF_TASKS, "ARCS mention classes and P/R/F1 per mention type"),
    "coref_pairs": (COREF_TASKS, "every pair of responses (one pair: with transitions)"),
    "coref_oracles": (COREF_TASKS, "ARCS recall oracle of every response combination"),
    "agreement": (COREF_TASKS, "CoNLL F1 of each response scored against another"),
    "unl": (UNL_TASKS, "UNL precision, recall and F-measure of each version"),
    "span_scores": (SPAN_TASKS, "span precision, recall and F1 per system and type (ALL: "
                    "micro average), with token accuracy"),
    "span_classes": (SPAN_TASKS, "key spans by class (correct, type, boundary, missed) and "
                     "spurious spans, per system"),
    "span_pairs": (SPAN_TASKS, "every pair over span units (one pair, --sys1 --sys2: with its "
                   "class transitions)"),
    "span_oracles": (SPAN_TASKS, "oracle recall of every system combination (key spans some "
                     "member gets right)"),
    "srl_scores": (SRL_TASKS, "the official scores (eval09.pl or srl-eval.pl) of each system; "
                   "--view predicate: predicates per PPOS, --view ROLE: one role"),
    "srl_classes": (SRL_TASKS, "key arguments (predicates) by class and spurious ones, per "
                    "system"),
    "srl_pairs": (SRL_TASKS, "every pair over argument (--view predicate: predicate) units; one "
                  "pair, --sys1 --sys2: with its transitions and role->role changes"),
    "srl_oracles": (SRL_TASKS, "oracle recall of every system combination (key arguments or "
                    "predicates some member gets right)"),
    "history": (TOKEN_TASKS + COREF_TASKS + UNL_TASKS + SPAN_TASKS + SRL_TASKS,
                "the versions of one NAME@VERSION (--name): each against the previous one "
                "and the best before it, with McNemar's p"),
}
VIEWS_HELP = ("View: upos, xpos, feats, lemma (pos and dep corpora), head, deprel, las (dep); "
              "any, nom (coreference: the ARCS criterion); an entity type or ALL (ner); "
              "argument, predicate or a role (srl). Default: las, upos, nom, ALL or argument.")


#: The file that marks a folder as a sysdiff warehouse: a run writes only into a new or empty
#: folder, one holding this marker, or a warehouse of an older sysdiff (with a manifest).
MARKER = ".sysdiff-warehouse"


def resolve_warehouse(option: str | Path | None) -> Path | StoreURL:
    """``--warehouse``, else ``$SYSDIFF_WAREHOUSE``, else ``./data/warehouse``: a local
    folder (absolute) or an object-store URL (:func:`~sysdiff.flows.store.parse_location`:
    an unsupported URL is refused)."""
    return parse_location(option or os.environ.get("SYSDIFF_WAREHOUSE")
                          or str(DEFAULT_WAREHOUSE))


def check_warehouse_folder(root: Path | StoreURL) -> None:
    """Refuse to write into a folder that is neither new, empty, nor a sysdiff warehouse:
    a run never deletes or overwrites files it did not write."""
    if isinstance(root, StoreURL):
        if (root / MARKER).is_file() or all(p.name in (LEASE, STAGING)
                                               for p in root.iterdir()):
            return
        raise InputError(f"this object-store prefix is not empty and is not a sysdiff "
                         f"warehouse (no {MARKER} marker); give a new or empty prefix, or an "
                         "existing sysdiff warehouse", root)
    if not root.exists() or (root / MARKER).is_file() or (root / MANIFEST).is_file():
        return
    if not root.is_dir():
        raise InputError("the warehouse path is a file, not a folder; give a new or empty "
                         "folder, or an existing sysdiff warehouse", root)
    if any(root.iterdir()):
        raise InputError(f"this folder is not empty and is not a sysdiff warehouse (no "
                         f"{MARKER} marker); give a new or empty folder, or an existing "
                         "sysdiff warehouse", root)


def manifest_entry(rel: str, sig: str, sha: str, size: int) -> dict[str, object]:
    """A live partition's manifest entry: its file, signature, the file's SHA-256 and size,
    and the :data:`FORMAT_VERSION` that wrote it (absent: before format 6)."""
    return {"file": rel, "sig": sig, "sha256": sha, "size": size, "format": FORMAT_VERSION}


def read_manifest(root: Path | StoreURL) -> dict:
    """The warehouse's live partitions: {"tables": {table: {partition: {"file": rel,
    "sig": sig, "sha256": hex, "size": bytes, "format": n}}}} (``sha256`` and ``size`` of
    the file as committed, ``format``: the format that wrote it, absent before 6); a damaged
    manifest is an InputError. On an object store: the log's latest version."""
    if isinstance(root, StoreURL):
        versions = log_versions(root)
        if not versions:
            return {"version": 1, "tables": {}}
        path = root / version_name(versions[-1])
    else:
        path = root / MANIFEST
        if not path.exists():
            return {"version": 1, "tables": {}}
    try:
        manifest = json.loads(path.read_bytes())
        if not isinstance(manifest.get("tables"), dict):
            raise ValueError("no 'tables' object")
    except (ValueError, UnicodeDecodeError, AttributeError) as e:
        raise InputError(f"the warehouse's manifest is damaged ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else e}); it lists the live "
                         "results: restore it from a backup, or start a new warehouse",
                         path) from None
    return manifest


#: Log level between INFO and WARNING: facts a user should know once (``sysdiff: note:``),
#: e.g. a view that is not evaluated.
NOTICE = 25
