"""What a run is asked to do: parsed from CLI options or a TOML file, validated up front."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sysdiff.flows.sniff import infer_task
from sysdiff.flows.store import StoreURL, is_url, parse_location
from sysdiff.schemas.errors import InputError
from sysdiff.schemas.frozen import FrozenMap, freeze
from sysdiff.schemas.vocabulary import KEY_ID, MATCH_MODES, SINGLETON_MODES

if TYPE_CHECKING:
    from sysdiff.transforms.bootstrap import Bootstrap

TASKS = ("pos", "dep", "coref", "unl", "nl", "ner", "srl")
# Input formats of each task (``format`` in a run file, ``--format`` of ``sysdiff run``).
TASK_FORMATS = {"pos": ("conllu", "conllx", "tsv"), "dep": ("conllu", "conllx", "tsv"),
                "coref": ("conll2012", "corefud", "jsonlines"), "unl": ("unl",), "nl": ("unl",),
                "ner": ("tsv", "conll2003", "uner"),
                "srl": ("conllu", "conll09", "conll05", "props")}
#: Span decoding schemes (task ner): conlleval rules (auto, iob1) or seqeval strict.
SCHEMES = ("auto", "iob1", "iob2", "bioes")
#: The systems a mapping without a SYSTEM applies to (every system, not the key).
ALL_SYSTEMS = "*"
# The options a run file (and a watched corpus's corpus.toml) may set, and their types.
OPTION_TYPES = {"format": "string", "ar_trials": "positive integer", "seed": "integer",
                "bootstrap": "non-negative integer", "confidence": "number between 0 and 1",
                "shard_sents": "positive integer", "mappings": "table", "unl": "table",
                "versions": "table", "scheme": "string", "map": "string",
                "match": "string", "singletons": "string"}
RUN_FILE_KEYS = ("corpus", "task", "key", "systems", *OPTION_TYPES)
UNL_KEYS = {"multiset": "boolean", "keep_scope_ids": "boolean", "legacy_2013": "boolean",
            "optional_attrs": "list of strings"}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


@dataclass(frozen=True)
class Source:
    """One input file: the key or a named system (``name@version``)."""

    name: str
    path: Path | StoreURL  # a local file, or an object on a store
    version: str | None = None
    fmt: str | None = None

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


@dataclass(frozen=True)
class RunSpec:
    """A validated evaluation request for one corpus. Immutable all the way down (systems a
    tuple, mappings, UNL options and versions FrozenMaps): it is a task parameter."""

    corpus: str
    task: str
    key: Source
    systems: tuple[Source, ...]
    mappings: Mapping[str, Mapping[str, str]] = field(default_factory=FrozenMap)
    ar_trials: int = 10_000
    seed: int = 0
    # bootstrap intervals (METRICS 1.6b): samples (0: none) and confidence; seed: ``seed``
    bootstrap: int = 1_000
    confidence: float = 0.95
    # sentences per shard (None: sized by sysdiff, see transforms/plan.py: sized_shard_sents)
    shard_sents: int | None = None
    unl: Mapping = field(default_factory=FrozenMap)
    versions: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenMap)
    keep_going: bool = False  # skip a system whose file is bad instead of stopping
    scheme: str = "auto"  # span decoding (task ner)
    inferred: str = ""  # what the task was inferred from ('' when it was given)
    # coreference mention matching and singletons (None: the key format's scorer default)
    match: str | None = None
    singletons: str | None = None
    # the corpus starts over with this key (its systems of earlier runs are removed)
    replace_key: bool = False

    def __post_init__(self) -> None:
        for name in ("systems", "mappings", "unl", "versions"):
            object.__setattr__(self, name, freeze(getattr(self, name)))
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, int) \
                or self.bootstrap < 0:
            raise InputError(f"--bootstrap must be a number of samples (0: no intervals), not "
                             f"{self.bootstrap!r}")
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, int | float) \
                or not 0 < self.confidence < 1:
            raise InputError(f"--confidence must be a level between 0 and 1 (e.g. 0.95), not "
                             f"{self.confidence!r}")
        if self.seed < 0:
            raise InputError(f"--seed must be 0 or more, not {self.seed}")
        for name, choices in (("match", MATCH_MODES), ("singletons", SINGLETON_MODES)):
            value = getattr(self, name)
            if value is not None and value not in choices:
                raise InputError(f"unknown {name} '{value}'; expected one of "
                                 f"{', '.join(choices)}")
            if value is not None and self.task != "coref":
                raise InputError(f"--{name} applies to task coref, not to task {self.task}")
        if self.scheme not in SCHEMES:
            raise InputError(f"unknown scheme '{self.scheme}'; expected one of "
                             f"{', '.join(SCHEMES)}")
        if self.scheme != "auto" and self.task != "ner":
            raise InputError(f"--scheme applies to task ner (span decoding), not to task "
                             f"{self.task}")

    @property
    def intervals(self) -> Bootstrap:
        """The run's bootstrap settings (B, seed, confidence)."""
        from sysdiff.transforms.bootstrap import Bootstrap

        return Bootstrap(self.bootstrap, self.seed, float(self.confidence))

    @property
    def plain_shard_sents(self) -> int:
        """Sentences per shard of a plan sysdiff does not size (coref, UNL): the run's, or
        :data:`~sysdiff.transforms.plan.MIN_SHARD_SENTS`."""
        from sysdiff.transforms.plan import MIN_SHARD_SENTS

        return self.shard_sents or MIN_SHARD_SENTS

    @property
    def sources(self) -> tuple[tuple[Source, str], ...]:
        """The key and every system with its role (``key`` or ``system``), key first."""
        return ((self.key, "key"), *((s, "system") for s in self.systems))


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
    return Source(name, input_path(path), version or None, fmt)


def build_spec(corpus: str, task: str | None, key: str | Path, systems: list[str],
               fmt: str | None = None, **options) -> RunSpec:
    """Validate names, task and duplicates (no task: ``sniff.infer_task`` from the key,
    and ``inferred`` says from what); files are checked when they are read."""
    check_name("corpus", corpus)
    key = input_path(key)
    if task is None:
        found = infer_task(key, fmt)
        if found is None:
            raise InputError(f"cannot tell the task from the key's format; give --task (one of "
                             f"{', '.join(TASKS)}) or 'task' in the run file", key)
        task, options["inferred"] = found
    if task not in TASKS:
        raise InputError(f"unknown task '{task}'; expected one of {', '.join(TASKS)}")
    if fmt is not None and fmt not in TASK_FORMATS[task]:
        inferred = f" (inferred from the key: {options['inferred']})" \
            if options.get("inferred") else ""
        raise InputError(f"unknown input format '{fmt}' for task {task}{inferred}; expected one "
                         f"of {', '.join(TASK_FORMATS[task])} (or none: detected from the file)")
    parsed = [parse_system(s, fmt) for s in systems]
    seen: set[str] = set()
    for s in parsed:
        if s.id in seen:
            raise InputError(f"system '{s.id}' is given twice; each system name (and version) "
                             "must be unique")
        seen.add(s.id)
    if "mappings" in options:
        options["mappings"] = expand_mappings(options["mappings"], [s.id for s in parsed])
    return RunSpec(corpus, task, Source(KEY_ID, input_path(key), None, fmt), parsed,
                   **options)


def input_path(text: str | Path | StoreURL) -> Path | StoreURL:
    """An input's location: a local path, or an object-store URL (refused when its scheme
    is not supported)."""
    if isinstance(text, Path | StoreURL):
        return text
    if is_url(text):
        return parse_location(text, "input")
    return Path(text)


def expand_mappings(mappings: dict[str, dict[str, str]], systems: list[str]
                    ) -> dict[str, dict[str, str]]:
    """The rules given for every system (``*``) added to each system's own (its own win)."""
    common = mappings.get(ALL_SYSTEMS)
    if not common:
        return {k: v for k, v in mappings.items() if k != ALL_SYSTEMS}
    out = {k: dict(v) for k, v in mappings.items() if k != ALL_SYSTEMS}
    for s in systems:
        out[s] = {**common, **out.get(s, {})}
    return out


def parse_map_item(item: str) -> tuple[str, dict[str, str]]:
    """One ``--map`` value: ``SYSTEM:OLD=NEW`` (SYSTEM may be @key), ``OLD=NEW`` (every
    system), ``SYSTEM:FILE`` or ``FILE`` (a file of OLD<TAB>NEW lines)."""
    from sysdiff.schemas.formats.spans import read_mapping_file

    who, sep, rule = item.partition(":")
    if not sep:
        who, rule = ALL_SYSTEMS, item
    old, eq, new = rule.partition("=")
    if eq and old and who:
        return who, {old: new}
    if not eq and rule and Path(rule).is_file():
        return who or ALL_SYSTEMS, read_mapping_file(rule)
    if not eq and Path(item).is_file():
        return ALL_SYSTEMS, read_mapping_file(item)
    raise InputError(f"--map '{item}': expected SYSTEM:OLD=NEW (SYSTEM may be @key), OLD=NEW "
                     "(every system), or [SYSTEM:]FILE of OLD<TAB>NEW lines")


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

    Also ``format``, ``ar_trials``, ``seed``, ``bootstrap`` (samples of the confidence
    intervals, 0: none), ``confidence`` (e.g. 0.95) and ``shard_sents``; for task ner ``scheme``
    (auto, iob1, iob2, bioes) and ``map`` (a file of OLD<TAB>NEW label lines applied to every
    system; ``[mappings.NAME]`` rules win); for task coref ``match`` (exact, partial, head)
    and ``singletons`` (keep, drop). Relative paths are relative to the TOML file.
    Every key and value is checked: a wrong one is one line naming the
    file, the line and what was expected.
    """
    p = Path(path)
    text, cfg = read_toml(p)
    check_keys(cfg, RUN_FILE_KEYS, p, text)
    for required in ("corpus", "key", "systems"):
        if required not in cfg:
            raise InputError(f"missing '{required}'; expected corpus, key and [systems] (and "
                             "task, else inferred from the key's format)", p)
    for name in ("corpus", "task", "key"):
        if name in cfg:
            expect(cfg, name, "string", p, text)
    expect(cfg, "systems", "table", p, text)
    if not cfg["systems"]:
        raise InputError("[systems] is empty; expected NAME = \"FILE\" lines", p,
                         key_line(text, "systems"))
    for name, file in cfg["systems"].items():
        if not isinstance(file, str):
            raise InputError(f"system '{name}' must be a file name (a string), not "
                             f"{describe(file)}", p, key_line(text, name))
    options = check_options(cfg, p, text)
    base = p.parent
    systems = [f"{n}={f if is_url(f) else base / f}" for n, f in cfg["systems"].items()]
    fmt = options.pop("format", None)
    map_file_option(options, base)
    key = cfg["key"] if is_url(cfg["key"]) else base / cfg["key"]
    return build_spec(cfg["corpus"], cfg.get("task"), key, systems, fmt,
                      **options)


def read_toml(p: Path) -> tuple[str, dict]:
    """The text and the parsed content of a TOML file; every failure is one InputError."""
    try:
        text = p.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except FileNotFoundError:
        raise InputError("no such file", p) from None
    except IsADirectoryError:
        raise InputError("is a folder; expected a TOML run file", p) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason}); expected a TOML run file", p) from None
    except OSError as e:
        raise InputError(f"cannot read the file: {e.strerror}", p) from None
    except tomllib.TOMLDecodeError as e:
        found = re.search(r"\(at line (\d+)", str(e))
        line = getattr(e, "lineno", None) or (int(found[1]) if found else None)
        msg = str(e).split(" (at line")[0]
        raise InputError(f"not valid TOML: {msg}", p, line) from None


def map_file_option(options: dict, base: Path) -> None:
    """Replace the ``map`` option (a mapping file, relative to ``base``) by its rules for
    every system, under the per-system ``[mappings.NAME]`` rules (which win)."""
    if "map" in options:
        from sysdiff.schemas.formats.spans import read_mapping_file

        rules = read_mapping_file(base / options.pop("map"))
        options["mappings"] = {ALL_SYSTEMS: rules, **options.get("mappings", {})}


def check_options(cfg: dict, p: Path, text: str) -> dict:
    """The run options of a run file or corpus.toml, each checked (name, type and value)."""
    options = {}
    for name, kind in OPTION_TYPES.items():
        if name in cfg:
            options[name] = expect(cfg, name, kind, p, text)
    for system, rules in options.get("mappings", {}).items():
        if not isinstance(rules, dict) or not all(isinstance(v, str) for v in rules.values()):
            raise InputError(f"[mappings.{system}] must hold OLD = \"NEW\" labels (strings)",
                             p, key_line(text, f"mappings.{system}"))
    for name, order in options.get("versions", {}).items():
        if not isinstance(order, list) or not all(isinstance(v, str) for v in order):
            raise InputError(f"[versions] {name} must be a list of versions (strings), in "
                             "history order", p, key_line(text, name))
    if "unl" in options:
        check_keys(options["unl"], tuple(UNL_KEYS), p, text, "[unl] ")
        for name, kind in UNL_KEYS.items():
            if name in options["unl"]:
                expect(options["unl"], name, kind, p, text)
    return options


def check_keys(cfg: dict, allowed: tuple[str, ...], p: Path, text: str, where: str = "") -> None:
    """Refuse a key that is not one of ``allowed``."""
    for name in cfg:
        if name not in allowed:
            raise InputError(f"unknown {where}key '{name}'; expected one of "
                             f"{', '.join(allowed)}", p, key_line(text, name))


def expect(cfg: dict, name: str, kind: str, p: Path, text: str) -> object:
    """``cfg[name]`` if it is of ``kind``, else an InputError naming the line."""
    value = cfg[name]
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "positive integer": isinstance(value, int) and not isinstance(value, bool)
        and value > 0,
        "non-negative integer": isinstance(value, int) and not isinstance(value, bool)
        and value >= 0,
        "number between 0 and 1": isinstance(value, int | float)
        and not isinstance(value, bool) and 0 < value < 1,
        "boolean": isinstance(value, bool),
        "table": isinstance(value, dict),
        "list of strings": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[kind]
    if not ok:
        raise InputError(f"'{name}' must be a {kind}, not {describe(value)}", p,
                         key_line(text, name))
    return value


def describe(value: object) -> str:
    """A TOML value as a person would name it: ``the integer 5``, ``the string 'x'``."""
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list",
            dict: "table"}.get(type(value), type(value).__name__)
    shown = repr(value) if not isinstance(value, dict) else "[...]"
    return f"the {kind} {shown}" if len(shown) <= 40 else f"a {kind}"


def key_line(text: str, name: str) -> int | None:
    """The line where ``name`` is set or its table starts (for messages), if found."""
    last = name.split(".")[-1]
    pattern = re.compile(rf'^\s*(\[\s*{re.escape(name)}\s*\]|"?{re.escape(last)}"?\s*=)',
                         re.M)
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


# The watched-folder layout of ``sysdiff serve`` (see flows/watch.py); a corpus without
# ``task`` in its corpus.toml gets the task of its key's format (``sniff.infer_task``).
CORPUS_FILE_KEYS = ("task", *OPTION_TYPES)


def folder_specs(root: Path) -> tuple[list[RunSpec], list[str]]:
    """One run spec per corpus folder under ``root``, and one line per corpus or system file
    that cannot be evaluated (a bad name, a bad corpus.toml, ...), which is skipped.

    Layout: ``DIR/<corpus>/key.<ext>``, ``DIR/<corpus>/systems/<name>[@<version>].<ext>``,
    optionally ``DIR/<corpus>/corpus.toml``."""
    if not root.is_dir():
        raise InputError("not a folder; expected DIR/<corpus>/key.* and "
                         "DIR/<corpus>/systems/<name>.*", root)
    specs, skipped = [], []
    for corpus_dir in sorted(p for p in root.iterdir() if p.is_dir()
                             and not p.name.startswith(".")):
        try:
            spec, bad = corpus_spec(corpus_dir)
        except InputError as e:
            skipped.append(f"corpus {corpus_dir.name!r} skipped: {e}")
            continue
        skipped += bad
        if spec is not None:
            specs.append(spec)
    return specs, skipped


def corpus_spec(corpus_dir: Path) -> tuple[RunSpec | None, list[str]]:
    """The spec of one watched corpus folder (None when it has no key or no system yet), and
    one line per system file skipped for its name."""
    keys = sorted(corpus_dir.glob("key.*"))
    files = sorted(p for p in (corpus_dir / "systems").glob("*") if p.is_file()
                   and not p.name.startswith("."))
    if not keys or not files:
        return None, []
    check_name("corpus", corpus_dir.name)
    cfg: dict = {}
    toml = corpus_dir / "corpus.toml"
    if toml.exists():
        text, cfg = read_toml(toml)
        check_keys(cfg, CORPUS_FILE_KEYS, toml, text)
        options = check_options(cfg, toml, text)
        if "task" in cfg:
            options["task"] = expect(cfg, "task", "string", toml, text)
        cfg = options
    fmt = cfg.pop("format", None)
    task = cfg.pop("task", None)
    map_file_option(cfg, corpus_dir)
    systems, skipped = [], []
    for p in files:
        try:
            parse_system(f"{p.stem}={p}")
            systems.append(f"{p.stem}={p}")
        except InputError as e:
            skipped.append(f"{p}: skipped: {e.message}")
    if not systems:
        return None, skipped
    return build_spec(corpus_dir.name, task, keys[0], systems, fmt, keep_going=True,
                      **cfg), skipped
