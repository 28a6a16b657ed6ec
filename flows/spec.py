"""What a run is asked to do: parsed from CLI options or a TOML file, validated up front."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sysdiff.schemas.errors import InputError

TASKS = ("pos", "dep", "coref", "unl", "nl")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
KEY_ID = "__key__"


@dataclass(frozen=True)
class Source:
    """One input file: the key or a named system (``name@version``)."""

    name: str
    path: Path
    version: str | None = None
    fmt: str | None = None

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


@dataclass(frozen=True)
class RunSpec:
    """A validated evaluation request for one corpus."""

    corpus: str
    task: str
    key: Source
    systems: list[Source]
    mappings: dict[str, dict[str, str]] = field(default_factory=dict)
    ar_trials: int = 10_000
    seed: int = 0
    shard_sents: int = 5000
    unl: dict = field(default_factory=dict)
    versions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def sources(self) -> list[tuple[Source, str]]:
        """The key and every system with its role (``key`` or ``system``), key first."""
        return [(self.key, "key")] + [(s, "system") for s in self.systems]


def check_name(kind: str, name: str) -> str:
    """Names become file paths and SQL values: letters, digits, and _ . + - only."""
    if not NAME_RE.match(name):
        raise InputError(f"invalid {kind} name '{name}'; expected letters, digits, '_', '.', "
                         "'+' or '-' (at most 64 characters, starting with a letter or digit)")
    return name


def parse_system(text: str, fmt: str | None = None) -> Source:
    """``NAME=FILE`` or ``NAME@VERSION=FILE``."""
    if "=" not in text:
        raise InputError(f"--system '{text}': expected NAME=FILE or NAME@VERSION=FILE")
    label, path = text.split("=", 1)
    name, _, version = label.partition("@")
    check_name("system", name)
    if version:
        check_name("version", version)
    return Source(name, Path(path), version or None, fmt)


def build_spec(corpus: str, task: str, key: str | Path, systems: list[str],
               fmt: str | None = None, **options) -> RunSpec:
    """Validate names, task and duplicates; files are checked when they are read."""
    check_name("corpus", corpus)
    if task not in TASKS:
        raise InputError(f"unknown task '{task}'; expected one of {', '.join(TASKS)}")
    parsed = [parse_system(s, fmt) for s in systems]
    seen: set[str] = set()
    for s in parsed:
        if s.id in seen:
            raise InputError(f"system '{s.id}' is given twice; each system name (and version) "
                             "must be unique")
        seen.add(s.id)
    return RunSpec(corpus, task, Source(KEY_ID, Path(key), None, fmt), parsed, **options)


def load_config(path: str | Path) -> RunSpec:
    """A TOML run file::

        corpus = "sequoia"
        task = "dep"
        key = "data/sequoia/key.conllu"
        [systems]
        md = "data/sequoia/fr_core_news_md-3.8.0.conllu"
        "seqsm@ud2.16" = "data/sequoia/seqsm_local-ud2.16.conllu"
        [mappings.md]   # optional label mapping per system (or "@key")
        PROPN = "NOUN"
        [versions]      # optional: the order of NAME@VERSION histories (else natural)
        spacy = ["3.6.0", "3.8.0"]
        [unl]           # UNL scoring options (task unl)
        multiset = false
        keep_scope_ids = false
        legacy_2013 = false          # the older overall threshold (< 0.5)
        optional_attrs = ["@pl"]     # ignored besides @def and @indef

    Relative paths are relative to the TOML file.
    """
    p = Path(path)
    try:
        cfg = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", p) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not valid TOML: {e}", p) from None
    for required in ("corpus", "task", "key", "systems"):
        if required not in cfg:
            raise InputError(f"missing '{required}'; expected corpus, task, key and [systems]", p)
    base = p.parent
    systems = [f"{n}={base / f}" for n, f in cfg["systems"].items()]
    options = {k: cfg[k] for k in ("ar_trials", "seed", "shard_sents", "unl", "versions")
               if k in cfg}
    return build_spec(cfg["corpus"], cfg["task"], base / cfg["key"], systems,
                      cfg.get("format"), mappings=cfg.get("mappings", {}), **options)
