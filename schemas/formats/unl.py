"""UNL documents: the reader (METRICS 3.1) and the Arrow schemas of the UNL tables.

``read_unl`` returns one :class:`UnlSentence` per sentence, in document order. A sentence whose
graph cannot be read keeps ``error`` (why) and ``error_line``; scoring treats it as not
returned. Only a text that is not UNL at all raises :class:`InputError`.

Line numbers are 1-based lines of the *cleaned* text: UNLarium web exports write ``<br />``
for newlines, and each ``<br />`` counts as a line break.

``read_nl`` reads NLization input (plain text, one sentence per line, or a UNL document whose
target-language blocks hold the sentences) into :class:`NlSentence` objects.

Decisions beyond METRICS 3.1 (all tested in ``tests/test_unl_reader.py``):
- an ``[S]`` block without ``[/S]`` ends at the next ``[S``/``[/P]``/``[/D]`` and is read, with
  a warning; an unterminated ``{unl}`` block makes the sentence malformed;
- relations written directly inside ``[S] ... [/S]`` (no ``{unl}`` block) are the graph;
- an empty argument (``aoj(late, )``) is the null UW ``00``;
- node-id unification: the most specific UW wins (a real UW over the null UW, then one with a
  constraint list, then the longer string, then the first); the node's attributes are the
  union over its occurrences;
- list format: ``[W]`` node lines, optional ``[R]`` lines ``01agt02`` / ``01 agt 02`` /
  ``agt(01, 02)`` naming node ids; nodes used by no relation stay in ``UnlGraph.nodes``;
- an empty text gives no sentences; a text without ``[S`` or ``{unl}`` blocks whose first
  token is not a relation (nor ``[W]``) is not UNL (InputError with path and line).
"""

from __future__ import annotations

import gc
import html
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from sysdiff.schemas.errors import InputError

# --------------------------------------------------------------------------------------------
# Parsed structures

#: Node kinds. ``scope`` = a scope reference ``:XX``; ``nl`` = a natural-language word ``[w]``.
NODE_KINDS = ("uw", "ucl", "temp", "null", "nl", "scope")

#: Relation labels of the UNL 2005 and UNL 2010 specifications (used only for warnings).
_RELATION_LABELS = (
    "agt and ant aoj bas ben cag cao cnt cob con coo dur equ exp fld fmt frm gol icl ins int "
    "iof lpl man mat met mod nam obj opl or per plc plf plt pof pos ptn pur qua rec res rsn "
    "scn seq shd src tim tmf tmt to via"
)
KNOWN_RELATIONS = frozenset(_RELATION_LABELS.split())

NULL_UW = "00"


class UnlNode(NamedTuple):
    """One occurrence of a node: ``uw`` normalised (``00`` for the null UW, ``"x"`` for a
    temporary UW, ``[w]`` for a natural-language word, ``""`` for a scope reference)."""

    uw: str
    node_id: str | None
    attrs: tuple[str, ...]
    kind: str


class UnlRelation(NamedTuple):
    label: str
    scope: str | None
    source: UnlNode
    target: UnlNode
    line: int


@dataclass(frozen=True, slots=True)
class UnlGraph:
    """Relations (table format) and, for relation-less list-format graphs, the nodes."""

    relations: tuple[UnlRelation, ...]
    nodes: tuple[UnlNode, ...] = ()

    @property
    def all_nodes(self) -> tuple[UnlNode, ...]:
        """Every node occurrence, relation endpoints first."""
        ends = tuple(n for r in self.relations for n in (r.source, r.target))
        return ends + self.nodes

    def nl_words(self) -> list[str]:
        """Natural-language words (``[word]`` nodes) in the graph."""
        words = [n.uw for r in self.relations for n in r[2:4] if n.kind == "nl"]
        return words + [n.uw for n in self.nodes if n.kind == "nl"]

    def n_components(self) -> int:
        """Connected components (undirected); scoped relations join their scope node."""
        return _n_components(self)


@dataclass(frozen=True, slots=True)
class UnlSentence:
    """One ``[S]`` block (or ``{unl}`` block, or whole file). ``graph`` is None when the
    sentence has no graph or it could not be parsed (then ``error`` says why)."""

    sent_id: str | None
    position: int
    line: int
    org: str | None = None
    org_lang: str | None = None
    targets: dict[str, str] = field(default_factory=dict)
    graph: UnlGraph | None = None
    error: str | None = None
    error_line: int | None = None
    warnings: tuple[str, ...] = ()
    source_name: str | None = None


@dataclass(frozen=True, slots=True)
class NlSentence:
    """One NLization sentence (a line, or a target-language block of a UNL document)."""

    sent_id: str | None
    position: int
    line: int
    text: str | None
    error: str | None = None
    source_name: str | None = None


class GraphError(ValueError):
    """A sentence's graph is malformed; ``line`` locates it."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.message = message
        self.line = line


# --------------------------------------------------------------------------------------------
# Text loading and cleaning

_BR = re.compile(r"<br\s*/?\s*>", re.IGNORECASE)


def clean_text(text: str) -> str:
    """Normalise newlines, turn ``<br />`` into newlines and decode HTML entities."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _BR.sub("\n", text)
    return html.unescape(text) if "&" in text else text


_PATH_LIKE = re.compile(r"[^\s{}()\[\]<>\"]+\.(?:unl|txt|html?|nl|raw)", re.IGNORECASE)


def _is_path(x: str | Path) -> bool:
    """A ``Path``; or a one-line ``str`` naming a file or looking like a file name."""
    if isinstance(x, Path):
        return True
    if "\n" in x:
        return False
    if _PATH_LIKE.fullmatch(x.strip()):
        return True
    try:
        return Path(x).is_file()
    except (OSError, ValueError):
        return False


def _load(path_or_text: str | Path, source_name: str | None) -> tuple[str, str | None]:
    """Return (raw text, name) of a path or a text."""
    if not _is_path(path_or_text):
        return str(path_or_text), source_name
    path = Path(path_or_text)
    name = source_name or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path=name) from exc
    if b"\x00" in data:
        raise InputError("binary file: expected a UNL document (text)", path=name)
    try:
        return data.decode("utf-8-sig"), name
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError("not UTF-8 text: expected a UNL document", path=name, line=line) from exc


class _Lines:
    """Offset -> 1-based line number."""

    def __init__(self, text: str):
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def __call__(self, offset: int) -> int:
        return bisect_right(self._starts, offset)


# --------------------------------------------------------------------------------------------
# Nodes

_WS = re.compile(r"\s+")
_WS_AROUND = re.compile(r"\s*([()<>,=;])\s*")
_WS_AROUND_ANY = re.compile(r"\s[()<>,=;]|[()<>,=;]\s")
_ODD_WS = re.compile(r"\s\s|[^\S ]")
_SUFFIX = re.compile(r"(?::(?P<id>[0-9A-Za-z]{2}))?(?P<attrs>(?:\.@[\w\-]+)*)")
_SPLIT_SUFFIX = re.compile(r"(?P<uw>.*?)(?P<sfx>(?::[0-9A-Za-z]{2})?(?:\.@[\w\-]+)*)", re.DOTALL)
_UCL = re.compile(r"\d+")


_QUOTED = re.compile(r'("[^"]*")')


def normalise_uw(uw: str) -> str:
    """Collapse white space; drop it around parentheses, ``<``, ``>``, ``,``, ``=``, ``;``.
    Quoted text is kept as written."""
    if '"' in uw:
        parts = _QUOTED.split(uw.strip())
        return "".join(p if k % 2 else _normalise_plain(p) for k, p in enumerate(parts))
    return _normalise_plain(uw)


def _normalise_plain(uw: str) -> str:
    uw = uw.strip()
    if _ODD_WS.search(uw):
        uw = _WS.sub(" ", uw)
    if _WS_AROUND_ANY.search(uw):
        uw = _WS_AROUND.sub(r"\1", uw)
    return uw


def _balanced_end(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``start`` (quotes skipped), or -1."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                return -1
            i = j
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_head(text: str) -> tuple[str, str]:
    """Split a node into (UW, suffix ``:XX.@a.@b``)."""
    if text.startswith('"'):
        end = text.find('"', 1)
        if end < 0:
            raise ValueError(f"unterminated quoted UW {text!r}")
        head, rest = text[: end + 1], text[end + 1 :]
    elif text.startswith("[") and not text.startswith("[["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"unterminated [word] {text!r}")
        head, rest = text[: end + 1], text[end + 1 :]
    else:
        open_ = _first_top_level_paren(text)
        if open_ < 0:
            m = _SPLIT_SUFFIX.fullmatch(text)
            return m["uw"], m["sfx"]  # type: ignore[index]
        end = _balanced_end(text, open_)
        if end < 0:
            raise ValueError(f"unbalanced parentheses in UW {text!r}")
        return text[: end + 1], text[end + 1 :]
    if rest.startswith("("):  # a constraint list after a temporary UW or a word
        end = _balanced_end(rest, 0)
        if end < 0:
            raise ValueError(f"unbalanced parentheses in UW {text!r}")
        head, rest = head + rest[: end + 1], rest[end + 1 :]
    return head, rest


def _first_top_level_paren(text: str) -> int:
    """Index of the first ``(`` outside quotes, or -1."""
    if '"' not in text:
        return text.find("(")
    in_quotes = False
    for i, c in enumerate(text):
        if c == '"':
            in_quotes = not in_quotes
        elif c == "(" and not in_quotes:
            return i
    return -1


# Fast path: headword without quotes/brackets, an optional constraint list nested at most three
# levels, then the suffix. Anything else goes through :func:`_split_head`.
_HEAD = r'[^()"\[\]{}:.]*+(?:(?:\.(?!@)|:(?![0-9A-Za-z]{2}(?:\.@|$)))[^()"\[\]{}:.]*+)*+'
_CONSTRAINTS = r'(?:\((?:[^()"]++|\((?:[^()"]++|\([^()"]*+\))*+\))*+\))?'
_NODE_FAST = re.compile(
    rf"(?P<uw>{_HEAD}{_CONSTRAINTS})(?::(?P<id>[0-9A-Za-z]{{2}}))?(?P<attrs>(?:\.@[\w\-]++)*+)"
)
_HAS_WS = re.compile(r"\s")
_BAD_UW_CHARS = re.compile(r'[{}\[\]"]')


@lru_cache(maxsize=1 << 18)
def parse_node(text: str) -> UnlNode:
    """Parse one node ``UW[:XX][.@attr...]``. ``:XX`` alone gives kind ``scope`` (a candidate
    scope reference, resolved by :func:`resolve_graph`). Raises ValueError if malformed."""
    text = text.strip()
    m = _NODE_FAST.fullmatch(text)
    if m is not None:
        uw = m["uw"]
        if _HAS_WS.search(uw):
            uw = normalise_uw(uw)
    else:
        head, rest = _split_head(text)
        rest = _WS.sub("", rest)
        m = _SUFFIX.fullmatch(rest)
        if m is None:
            raise ValueError(f"unexpected text {rest!r} after UW {head.strip()!r}")
        uw = normalise_uw(head)
    node_id = m["id"]
    attrs = tuple(m["attrs"][1:].split(".")) if m["attrs"] else ()
    if uw in ("", NULL_UW):
        kind = "scope" if uw == "" and node_id is not None else "null"
        uw = "" if kind == "scope" else NULL_UW
    elif uw.startswith('"'):
        kind = "temp"
    elif uw.startswith("[") and not uw.startswith("[["):
        kind = "nl"
    elif _UCL.fullmatch(uw):
        kind = "ucl"
    else:
        kind = "uw"
        if _BAD_UW_CHARS.search(uw):
            raise ValueError(f"unexpected bracket or quote in UW {uw!r}")
    return UnlNode(uw, node_id, attrs, kind)


# --------------------------------------------------------------------------------------------
# Relations (table format)

_REL_HEAD = re.compile(r"([a-z]{2,3})(?::([0-9A-Za-z]{2}))?\s*\(")
# Fast path: no quotes, at most two levels of nested parentheses, a top-level comma.
_ARG = r'(?:[^(),"]++|\((?:[^()"]++|\((?:[^()"]++|\([^()"]*+\))*+\))*+\))*+'
_REL_FAST = re.compile(rf"([a-z]{{2,3}})(?::([0-9A-Za-z]{{2}}))?\s*\(({_ARG}),({_ARG})\)")
_SKIP_WS = re.compile(r"\s*")
_REL_FAST_WS = re.compile(rf"(\s*)([a-z]{{2,3}})(?::([0-9A-Za-z]{{2}}))?\s*\(({_ARG}),({_ARG})\)")


def _split_args(body: str) -> tuple[str, str] | None:
    """Split at the first top-level comma (else ``;``), ignoring quoted text."""
    depth, semi, i, n = 0, -1, 0, len(body)
    while i < n:
        c = body[i]
        if c == '"':
            j = body.find('"', i + 1)
            if j < 0:
                return None
            i = j
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and c == ",":
            return body[:i], body[i + 1 :]
        elif depth == 0 and c == ";" and semi < 0:
            semi = i
        i += 1
    return (body[:semi], body[semi + 1 :]) if semi >= 0 else None


def _snippet(text: str, pos: int) -> str:
    s = text[pos : pos + 40].split("\n", 1)[0]
    return s + ("..." if len(s) == 40 else "")


def parse_relations(text: str, base_line: int = 1) -> list[UnlRelation]:
    """Parse table-format relations; any other text is a GraphError."""
    out: list[UnlRelation] = []
    pos, n, line = 0, len(text), base_line
    fast, count = _REL_FAST_WS.match, text.count
    while True:
        m = fast(text, pos)
        if m is not None:
            label, scope, src, tgt = m.group(2, 3, 4, 5)
            start, end = m.start(2), m.end()
        else:
            start = _SKIP_WS.match(text, pos).end()  # type: ignore[union-attr]
            if start >= n:
                return out
            line += count("\n", pos, start)
            pos = start
            label, scope, src, tgt, end = _parse_relation_slow(text, start, line)
        line += count("\n", pos, start)
        try:
            source, target = parse_node(src), parse_node(tgt)
        except ValueError as exc:
            raise GraphError(f"{exc} in relation {_snippet(text, start)!r}", line) from None
        out.append(UnlRelation(label, scope, source, target, line))
        line += count("\n", start, end)
        pos = end


def _parse_relation_slow(text: str, pos: int, line: int) -> tuple[str, str | None, str, str, int]:
    m = _REL_HEAD.match(text, pos)
    if m is None:
        raise GraphError(
            f"expected a relation rel[:scope](source, target), found {_snippet(text, pos)!r}", line
        )
    open_ = m.end() - 1
    close = _balanced_end(text, open_)
    if close < 0:
        raise GraphError(f"unbalanced parentheses or quotes in {_snippet(text, pos)!r}", line)
    args = _split_args(text[open_ + 1 : close])
    if args is None:
        raise GraphError(f"relation without two arguments: {_snippet(text, pos)!r}", line)
    return m[1], m[2], args[0], args[1], close + 1


# --------------------------------------------------------------------------------------------
# List format

_LIST_W = re.compile(r"\[W\](.*?)\[/W\]", re.DOTALL)
_LIST_R = re.compile(r"\[R\](.*?)\[/R\]", re.DOTALL)
_LIST_REL = re.compile(r"([0-9A-Za-z]{2})\s*([a-z]{2,3})(?::([0-9A-Za-z]{2}))?\s*([0-9A-Za-z]{2})")


def parse_list_format(text: str, base_line: int = 1) -> UnlGraph:
    """``[W] node lines [/W]`` plus optional ``[R] 01agt02 ... [/R]`` (or table relations
    between node ids)."""
    lines = _Lines(text)
    mw = _LIST_W.search(text)
    if mw is None:
        raise GraphError("[W] without [/W]", base_line + lines(text.find("[W]")) - 1)
    nodes: list[UnlNode] = []
    by_id: dict[str, UnlNode] = {}
    offset = mw.start(1)
    for raw in mw[1].split("\n"):
        if raw.strip():
            try:
                node = parse_node(raw)
            except ValueError as exc:
                raise GraphError(str(exc), base_line + lines(offset) - 1) from None
            nodes.append(node)
            if node.node_id is not None:
                by_id[node.node_id] = node
        offset += len(raw) + 1
    rest = (text[: mw.start()] + text[mw.end() :]).strip()
    mr = _LIST_R.search(rest)
    if mr is None:
        if rest:
            raise GraphError(f"unexpected text {rest[:40]!r} outside [W] ... [/W]", base_line)
        return UnlGraph((), tuple(nodes))
    rels = _list_relations(mr[1], by_id, base_line + lines(text.find("[R]")) - 1)
    used = {id(r.source) for r in rels} | {id(r.target) for r in rels}
    return UnlGraph(tuple(rels), tuple(n for n in nodes if id(n) not in used))


def _list_relations(body: str, by_id: dict[str, UnlNode], line: int) -> list[UnlRelation]:
    out = []
    for k, raw in enumerate(body.split("\n")):
        s = raw.strip()
        if not s:
            continue
        m = _LIST_REL.fullmatch(s)
        if m is not None:
            a, label, scope, b = m.groups()
        else:
            rel = parse_relations(s, line + k)[0]
            label, scope = rel.label, rel.scope
            a, b = rel.source.node_id or rel.source.uw, rel.target.node_id or rel.target.uw
        for x in (a, b):
            if x not in by_id:
                raise GraphError(f"[R] refers to unknown node id {x!r}", line + k)
        out.append(UnlRelation(label, scope, by_id[a], by_id[b], line + k))
    return out


# --------------------------------------------------------------------------------------------
# Graph resolution: scope references, node-id unification, connectivity


def _specificity(node: UnlNode) -> tuple[bool, bool, int]:
    return (node.kind not in ("null", "scope"), "(" in node.uw, len(node.uw))


def resolve_graph(relations: list[UnlRelation], nodes: tuple[UnlNode, ...] = ()) -> UnlGraph:
    """Resolve ``:XX`` arguments (scope reference if some relation uses scope XX, else the
    null UW / node XX) and unify occurrences sharing a node id: the most specific UW wins
    (a real UW over the null UW, a constraint list over none, then the longer string; ties
    to the first) and the attributes are the union over the occurrences."""
    scopes = {r.scope for r in relations if r.scope is not None}
    groups: dict[str, list[UnlNode]] = {}
    for r in relations:
        for nd in (r.source, r.target):
            if nd.node_id is not None and not (nd.kind == "scope" and nd.node_id in scopes):
                groups.setdefault(nd.node_id, []).append(nd)
    for nd in nodes:
        if nd.node_id is not None:
            groups.setdefault(nd.node_id, []).append(nd)
    fixed: dict[int, UnlNode] = {}
    for nid, occ in groups.items():
        if len(occ) == 1 and occ[0].kind != "scope":
            continue
        best = occ[0]
        for nd in occ[1:]:
            if _specificity(nd) > _specificity(best):
                best = nd
        kind = "null" if best.kind in ("scope", "null") else best.kind
        uw = NULL_UW if kind == "null" else best.uw
        attrs = tuple(dict.fromkeys(a for nd in occ for a in nd.attrs))
        for nd in occ:
            if (nd.uw, nd.attrs, nd.kind) != (uw, attrs, kind):
                fixed[id(nd)] = UnlNode(uw, nid, attrs, kind)
    if not fixed:
        return UnlGraph(tuple(relations), tuple(nodes))
    get = fixed.get
    rels = tuple(
        r
        if id(r.source) not in fixed and id(r.target) not in fixed
        else UnlRelation(r.label, r.scope, get(id(r.source), r.source),
                         get(id(r.target), r.target), r.line)
        for r in relations
    )  # fmt: skip
    return UnlGraph(rels, tuple(get(id(nd), nd) for nd in nodes))


def _n_components(graph: UnlGraph) -> int:
    """Connected components over node keys: scope XX, node id XX, else the UW string (an
    id-less UW equal to the UW of exactly one id node joins it); id-less null UWs are
    distinct nodes."""
    ends = [n for r in graph.relations for n in (r.source, r.target)]
    uw_to_id: dict[str, set[str]] = {}
    for n in (*ends, *graph.nodes):
        if n.node_id is not None and n.kind != "scope" and n.kind != "null":
            uw_to_id.setdefault(n.uw, set()).add(n.node_id)
    alias = {uw: ("i", next(iter(ids))) for uw, ids in uw_to_id.items() if len(ids) == 1}

    def key(n: UnlNode) -> object:
        if n.kind == "scope":
            return ("s", n.node_id)
        if n.node_id is not None:
            return ("i", n.node_id)
        if n.kind == "null":
            return object()
        return alias.get(n.uw, n.uw)

    adj: dict[object, list[object]] = {}
    for r in graph.relations:
        a, b = key(r.source), key(r.target)
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
        if r.scope is not None:
            sc = ("s", r.scope)
            adj[a].append(sc)
            adj.setdefault(sc, []).append(a)
    for n in graph.nodes:
        adj.setdefault(key(n), [])
    seen: set[object] = set()
    components = 0
    for v in adj:
        if v in seen:
            continue
        components += 1
        seen.add(v)
        stack = [v]
        while stack:
            for w in adj[stack.pop()]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
    return components


def parse_graph(text: str, base_line: int = 1) -> UnlGraph:
    """Parse the body of a ``{unl}`` block (table or list format)."""
    if "[W]" in text:
        g = parse_list_format(text, base_line)
        return resolve_graph(list(g.relations), g.nodes)
    return resolve_graph(parse_relations(text, base_line))


# --------------------------------------------------------------------------------------------
# Documents

_S_OPEN = re.compile(r"\[S(?::([^\]]*))?\]")
_S_CLOSE = re.compile(r"\[/S\]")
_S_END_FALLBACK = re.compile(r"\[/P\]|\[/D\]|\[P[:\]\s]|\[S[:\]]")
_BLOCK = re.compile(r"\{([A-Za-z]+)(?::([^}]*))?\}(.*?)\{/\1\}", re.DOTALL)
_BLOCK_HEAD = re.compile(r"\{([A-Za-z]+)(?::([^}]*))?\}")


class _Block(NamedTuple):
    """A ``{tag:attrs} content {/tag}`` block: offsets of the block and of its content."""

    tag: str
    attrs: str | None
    start: int
    end: int
    body_start: int
    body_end: int


def _blocks(text: str, start: int, end: int) -> Iterator[_Block]:
    """The matches of ``_BLOCK.finditer(text, start, end)``, found with ``str.find``: the
    head ``{tag...}`` matches in one way only and the lazy content ends at the first
    ``{/tag}``, so a head without its closing tag is skipped one character on, as there."""
    pos = start
    while True:
        m = _BLOCK_HEAD.search(text, pos, end)
        if m is None:
            return
        close = text.find(f"{{/{m[1]}}}", m.end(), end)
        if close < 0:
            pos = m.start() + 1
            continue
        stop = close + len(m[1]) + 3
        yield _Block(m[1], m[2], m.start(), stop, m.end(), close)
        pos = stop
_BLOCK_OPEN = re.compile(r"\{([A-Za-z]+)(?::[^}]*)?\}")


def read_unl(path_or_text: str | Path, *, source_name: str | None = None) -> list[UnlSentence]:
    """Read a UNL document (a path, or the text itself) into sentences in document order.

    ``[S:id] ... [/S]`` blocks; with none, each ``{unl}`` block, or else the whole text, is one
    sentence. Raises InputError only when the text is not UNL at all."""
    raw, name = _load(path_or_text, source_name)
    return parse_unl_document(clean_text(raw), name)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small acyclic objects (its
    generation-2 passes cost about a quarter of the parse time); restore its state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_unl_document(text: str, name: str | None = None) -> list[UnlSentence]:
    """Parse cleaned text (see :func:`clean_text`)."""
    with gc_paused():
        return _parse_unl_document(text, name)


def _parse_unl_document(text: str, name: str | None) -> list[UnlSentence]:
    lines = _Lines(text)
    opens = list(_S_OPEN.finditer(text))
    if opens:
        return [_sentence_from_block(text, m, k, opens, lines, name) for k, m in enumerate(opens)]
    blocks = [b for b in _blocks(text, 0, len(text)) if b.tag.lower() == "unl"]
    if blocks:
        return [
            _sentence(None, k, lines(b.start), text, b.start, b.end, lines, name)
            for k, b in enumerate(blocks)
        ]
    if not text.strip():
        return []
    return [_whole_text_sentence(text, lines, name)]


_DOC_MARKERS = re.compile(r"\[/?[DP](?::[^\]]*|\s[^\]]*)?\]")


def _whole_text_sentence(text: str, lines: _Lines, name: str | None) -> UnlSentence:
    text = _DOC_MARKERS.sub(lambda m: " " * len(m[0]), text)  # keep offsets and lines
    start = len(text) - len(text.lstrip())
    try:
        graph = parse_graph(text)
    except GraphError as exc:
        if not _REL_HEAD.match(text, start) and "[W]" not in text:
            raise InputError(
                "not a UNL document: expected [S:id] blocks, {unl} blocks or UNL relations "
                f"rel(source, target), found {_snippet(text, start)!r}",
                path=name,
                line=lines(start),
            ) from None
        return UnlSentence(None, 0, 1, error=exc.message, error_line=exc.line, source_name=name)
    return UnlSentence(None, 0, lines(start), graph=graph, source_name=name)


def _sentence_from_block(
    text: str, m: re.Match[str], k: int, opens: list, lines: _Lines, name: str | None
) -> UnlSentence:
    limit = opens[k + 1].start() if k + 1 < len(opens) else len(text)
    return _from_draft(_block_draft(text, m, k, limit, lines, name))


class _Draft(NamedTuple):
    """A sentence before its graph is parsed: ``body`` (the graph text, starting on line
    ``body_line``) is None when there is no graph or ``error`` is set."""

    sent_id: str | None
    position: int
    line: int
    org: str | None
    org_lang: str | None
    targets: dict[str, str]
    warnings: tuple[str, ...]
    error: str | None
    error_line: int | None
    body: str | None
    body_line: int
    source_name: str | None


def _block_draft(text: str, m: re.Match[str], k: int, limit: int,
                 lines: Callable[[int], int], name: str | None) -> _Draft:
    """The draft of the ``[S]`` block opened by ``m`` (``limit``: where the next one opens)."""
    start = m.end()
    close = _S_CLOSE.search(text, start, limit)
    warnings: tuple[str, ...] = ()
    if close is None:
        fb = _S_END_FALLBACK.search(text, start, limit)
        end = fb.start() if fb else limit
        warnings = (f"line {lines(m.start())}: [S] block without [/S]",)
    else:
        end = close.start()
    sid_parts = (m[1] or "").split()
    sid = sid_parts[0] if sid_parts else None
    d = _draft(sid, k, lines(m.start()), text, start, end, lines, name)
    return d._replace(warnings=d.warnings + warnings) if warnings else d


def _sentence(
    sid: str | None, k: int, line: int, text: str, start: int, end: int, lines: _Lines,
    name: str | None,
) -> UnlSentence:  # fmt: skip
    """Build a sentence from ``text[start:end]`` (the inside of an [S] block or a {unl} block)."""
    return _from_draft(_draft(sid, k, line, text, start, end, lines, name))


def _from_draft(d: _Draft) -> UnlSentence:
    """Parse the draft's graph (a malformed graph is the sentence's error)."""
    graph, error, error_line = None, d.error, d.error_line
    if d.body is not None:
        try:
            graph = parse_graph(d.body, d.body_line)
        except GraphError as exc:
            error, error_line = exc.message, exc.line
    return UnlSentence(d.sent_id, d.position, d.line, d.org, d.org_lang, d.targets, graph,
                       error, error_line, d.warnings, d.source_name)  # fmt: skip


def _draft(
    sid: str | None, k: int, line: int, text: str, start: int, end: int,
    lines: Callable[[int], int], name: str | None,
) -> _Draft:  # fmt: skip
    """Split ``text[start:end]`` into its blocks: ``{org}``, target languages, the graph."""
    org = org_lang = None
    targets: dict[str, str] = {}
    unl: tuple[str, int] | None = None
    warnings: list[str] = []
    rest: list[str] = []
    pos = start
    for b in _blocks(text, start, end):
        rest.append(text[pos : b.start])
        pos = b.end
        tag = b.tag.lower()
        content = text[b.body_start : b.body_end]
        if tag == "org":
            org, org_lang = content.strip(), (b.attrs or "").split("=")[0].strip() or None
        elif tag == "unl":
            if unl is not None:
                warnings.append(f"line {lines(b.start)}: second {{unl}} block ignored")
            else:
                unl = (content, b.body_start)
        else:
            targets[tag] = content.strip()
    rest.append(text[pos:end])
    leftover = "".join(rest)
    bad_open = _BLOCK_OPEN.search(leftover)
    if bad_open is not None:
        at = text.find(bad_open[0], start, end)
        return _Draft(sid, k, line, org, org_lang, targets, tuple(warnings),
                      f"unterminated block {bad_open[0]} (no {{/{bad_open[1]}}})", lines(at),
                      None, 0, name)  # fmt: skip
    if unl is None and leftover.strip():
        unl = (leftover, start)  # graph written directly inside [S] ... [/S]
    elif leftover.strip():
        warnings.append(f"line {line}: text outside blocks ignored: {leftover.strip()[:40]!r}")
    if unl is None:
        return _Draft(sid, k, line, org, org_lang, targets, tuple(warnings), None, None, None, 0,
                      name)  # fmt: skip
    body, body_start = unl
    return _Draft(sid, k, line, org, org_lang, targets, tuple(warnings), None, None, body,
                  lines(body_start), name)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Columnar reading at scale: a streaming index of the [S] blocks, sentences parsed in columns
#
# ``index_unl`` reads a document once, piece by piece (pieces are cut right before a ``[S``,
# where neither UTF-8 decoding nor the cleaning of ``<br />``/entities can be split), and keeps
# per sentence only its id, its line and the byte offset of its ``[S`` block. ``UnlIndex.read``
# then parses any sentences (a shard, or the partners of a shard) into a :class:`UnlChunk`:
# the block structure per sentence as in :func:`read_unl`, the graphs in columns. A relation
# line of the common shapes (plain, quoted or ``[word]`` UWs with constraint lists nested up
# to three levels) is parsed by one regular expression over all lines; a sentence with any
# other line (quotes in constraint lists, relations sharing or spanning lines, list format,
# anything malformed) is parsed by :func:`parse_graph` itself, so every result and message is
# the one :func:`read_unl` gives. Node ids, scopes and connectivity are then resolved in columns.
# A document without ``[S`` blocks (``{unl}`` blocks or a bare graph) is read whole with
# :func:`read_unl`.

#: Bytes read per piece while indexing (a piece grows up to the next ``[S``).
PIECE_BYTES = 1 << 24

_NB = r'[^()"\[\]{}\n]'
_C = rf"(?:\((?:{_NB}|\((?:{_NB}|\({_NB}*\))*\))*\))?"
_NODE_TEXT = rf'[^()"\[\]{{}}:.,\n]*{_C}|\s*"[^"\n]*"{_C}|\s*\[[^\[\]"(),\n]*\]{_C}'


def _node_re(p: str) -> str:
    return (rf"(?P<{p}>{_NODE_TEXT})(?::(?P<{p}id>[0-9A-Za-z]{{2}}))?"
            rf"(?P<{p}at>(?:\.@[0-9A-Za-z_\-]+)*)\s*")  # fmt: skip


#: One relation on one line, in the ``regex`` crate's syntax (polars).
REL_LINE = (rf"^\s*(?P<label>[a-z]{{2,3}})(?::(?P<scope>[0-9A-Za-z]{{2}}))?\s*\("
            rf"{_node_re('s')},{_node_re('t')}\)\s*$")  # fmt: skip
_WS_PUNCT = r"\s*([()<>,=;])\s*"
#: White space that Python's ``str.isspace`` knows and the ``regex`` crate's ``\s`` does not.
_PY_ONLY_WS = "[\x1c-\x1f]"

_S = pl.String
SENT_SCHEMA = {"row": pl.Int32, "position": pl.Int64, "sent_id": _S, "line": pl.Int64,
               "error": _S, "error_line": pl.Int64, "has_graph": pl.Boolean,
               "warnings": pl.List(_S)}  # fmt: skip
#: Relation ends and lone nodes while parsing (``nc``: the node id as an integer, -1 none).
ENDPOINT_SCHEMA = {"row": pl.Int32, "occ": pl.Int64, "uw": _S, "nid": _S, "kind": _S,
                   "attrs": _S, "nc": pl.Int64}  # fmt: skip
#: Relations while parsing (``sc``: the scope as an integer, -1 none).
REL_SCHEMA = {"row": pl.Int32, "r": pl.Int32, "label": _S, "scope": _S, "line": pl.Int64,
              "sc": pl.Int64}  # fmt: skip


@dataclass(frozen=True)
class UnlChunk:
    """Parsed sentences in columns (``row`` = 0, 1, ... in the order read).

    ``sents``: row, position (index in the document), sent_id, line, error, error_line,
    has_graph, warnings, n_rel, n_nodes, n_components, nl_words (the first three ``[word]``
    nodes, joined by ``, ``; null if none). ``rels``: row, r, label, scope, line and per
    end ``s_``/``t_`` uw, id, kind, attrs (joined by ``.``), after scope resolution and
    node-id unification. ``nodes``: the nodes used by no relation (list format): row, uw,
    nid, kind, attrs."""

    sents: pl.DataFrame
    rels: pl.DataFrame
    nodes: pl.DataFrame

    @property
    def height(self) -> int:
        return self.sents.height


class _Source:
    """The bytes of a UNL document: a file, read by ranges, or a text given directly."""

    def __init__(self, path_or_text: str | Path, source_name: str | None):
        if _is_path(path_or_text):
            self.path: Path | None = Path(path_or_text)
            self.name = source_name or str(self.path)
            self.data: bytes | None = None
            try:
                st = self.path.stat()
                with self.path.open("rb"):
                    pass
            except OSError as exc:
                raise InputError(f"cannot read file: {exc.strerror}", path=self.name) from exc
            self.size, self.stamp = st.st_size, (st.st_size, st.st_mtime_ns)
        else:
            self.path, self.name = None, source_name
            self.data = str(path_or_text).encode("utf-8", "surrogatepass")
            self.size, self.stamp = len(self.data), None

    def read(self, start: int, end: int) -> bytes:
        if self.data is not None:
            return self.data[start:end]
        with self.path.open("rb") as f:  # type: ignore[union-attr]
            f.seek(start)
            return f.read(end - start)

    def decode(self, start: int, data: bytes) -> str:
        if self.data is not None:
            return data.decode("utf-8", "surrogatepass")
        return data.decode("utf-8-sig" if start == 0 else "utf-8")

    def pieces(self, size: int) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) pieces of about ``size`` bytes, each cut right before a ``[S``."""
        pos = 0
        while pos < self.size:
            end = min(pos + size, self.size)
            while True:
                data = self.read(pos, end)
                cut = len(data) if end >= self.size else data.rfind(b"[S", 1)
                if cut > 0:
                    break
                end = min(end + size, self.size)
            yield pos, data[:cut]
            pos += cut

    def check_unchanged(self) -> None:
        if self.path is None:
            return
        try:
            st = self.path.stat()
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", path=self.name) from exc
        if (st.st_size, st.st_mtime_ns) != self.stamp:
            raise InputError("file changed while it was being read; run again", path=self.name)


def _find_all(hay: str | bytes, needle: str | bytes) -> list[int]:
    out, i = [], hay.find(needle)  # type: ignore[arg-type]
    while i >= 0:
        out.append(i)
        i = hay.find(needle, i + 1)  # type: ignore[arg-type]
    return out


class _OpenScan:
    """Finds the ``[S]`` openings of a cleaned text fed piece by piece, exactly as
    ``_S_OPEN.finditer`` over the whole text would: a ``[S:`` still waiting for its ``]``
    is carried into the next piece. Each opening's byte offset is that of the same ``[S`` in
    the raw bytes (cleaning keeps every ``[S``; a piece where it does not is irregular)."""

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.lines: list[int] = []
        self.starts: list[int] = []
        self.buf, self.buf_raw, self.newlines = "", [], 0

    def feed(self, text: str, offset: int, raw: bytes) -> bool:
        """Scan one more cleaned piece (``raw`` its bytes at ``offset``); False if irregular."""
        if not self.buf and len(text) == len(raw) and b"\r" not in raw:
            self._feed_one_to_one(text, offset, raw)
            return True
        raw_at = [offset + i for i in _find_all(raw, b"[S")]
        if text.count("[S") != len(raw_at):
            return False
        buf, buf_raw = self.buf + text, self.buf_raw + raw_at
        cands = _find_all(buf, "[S")
        j, prev, last, nl = 0, 0, 0, self.newlines
        ids, lines, starts = self.ids, self.lines, self.starts
        for m in _S_OPEN.finditer(buf):
            p = m.start()
            while cands[j] < p:
                j += 1
            nl += buf.count("\n", prev, p)
            prev, last = p, m.end()
            parts = (m[1] or "").split()
            ids.append(parts[0] if parts else None)
            lines.append(nl + 1)
            starts.append(buf_raw[j])
        keep = buf.find("[S:", last)
        keep = len(buf) if keep < 0 else keep
        self.newlines = nl + buf.count("\n", prev, keep)
        self.buf, self.buf_raw = buf[keep:], buf_raw[bisect_left(cands, keep):]
        return True

    def _feed_one_to_one(self, text: str, offset: int, raw: bytes) -> None:
        """A piece that decoding and cleaning left character for byte (ASCII, no ``<br>``,
        entity or CR): offsets and lines come straight from the bytes."""
        opens = [(m.start(), m.end(), m[1]) for m in _S_OPEN.finditer(text)]
        newlines = np.flatnonzero(np.frombuffer(raw, np.uint8) == 10)
        at = np.array([p for p, _, _ in opens], np.int64)
        self.starts.extend((at + offset).tolist())
        self.lines.extend((np.searchsorted(newlines, at) + self.newlines + 1).tolist())
        for _, _, sid in opens:
            parts = (sid or "").split()
            self.ids.append(parts[0] if parts else None)
        keep = text.find("[S:", opens[-1][1] if opens else 0)
        if keep < 0:
            self.newlines += newlines.size
            return
        self.newlines += int(np.searchsorted(newlines, keep))
        self.buf = text[keep:]
        self.buf_raw = [offset + keep + i for i in _find_all(self.buf, "[S")]


@dataclass
class UnlIndex:
    """Where each sentence of a UNL document is: ids, lines and the byte offsets of the
    ``[S`` blocks (``sentences`` instead, parsed, for a document without ``[S`` blocks).
    :meth:`read` parses any of them into a :class:`UnlChunk`."""

    source: _Source
    ids: list[str | None]
    lines: np.ndarray
    starts: np.ndarray | None = None
    sentences: list[UnlSentence] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def name(self) -> str | None:
        return self.source.name

    def read(self, rows: Sequence[int] | np.ndarray) -> UnlChunk:
        """The sentences ``rows`` (ascending document positions) in columns."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.sentences is not None:
            return chunk_from_sentences([self.sentences[k] for k in rows.tolist()])
        return chunk_from_drafts(self.drafts(rows))

    def drafts(self, rows: np.ndarray) -> list[_Draft]:
        """Re-read and split the blocks of the given sentences (contiguous runs at once)."""
        if rows.size and (np.any(np.diff(rows) <= 0) or rows[0] < 0 or rows[-1] >= len(self)):
            raise ValueError("rows must be ascending positions in the document")
        self.source.check_unchanged()
        starts, n, out = self.starts, len(self), []
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        for run in np.split(rows, breaks) if rows.size else []:
            a, b = int(run[0]), int(run[-1]) + 1
            lo, hi = int(starts[a]), int(starts[b]) if b < n else self.source.size  # type: ignore[index]
            text = clean_text(self.source.decode(lo, self.source.read(lo, hi)))
            opens = list(_S_OPEN.finditer(text))
            if len(opens) != b - a or opens[0].start() != 0:
                raise InputError("file changed while it was being read; run again",
                                 path=self.name)  # fmt: skip
            for k, m in enumerate(opens):
                limit = opens[k + 1].start() if k + 1 < len(opens) else len(text)
                lines = partial(_local_line, text, m.start(), int(self.lines[a + k]))
                d = _block_draft(text, m, a + k, limit, lines, self.name)
                if d.sent_id != self.ids[a + k]:
                    raise InputError("file changed while it was being read; run again",
                                     path=self.name)  # fmt: skip
                out.append(d)
        return out


def _local_line(text: str, start: int, line: int, offset: int) -> int:
    return line + text.count("\n", start, offset)


def index_unl(path_or_text: str | Path, *, source_name: str | None = None,
              piece_bytes: int = PIECE_BYTES) -> UnlIndex:
    """Index a UNL document (a path, or the text itself) in one streaming pass; memory is a
    few pieces plus three numbers per sentence. The same InputErrors as :func:`read_unl`."""
    src = _Source(path_or_text, source_name)
    scan, regular, bad_line, newlines = _OpenScan(), True, None, 0
    bom = 3 if src.path is not None and src.read(0, 3) == b"\xef\xbb\xbf" else 0
    for offset, raw in src.pieces(piece_bytes):
        if src.path is not None and b"\x00" in raw:
            raise InputError("binary file: expected a UNL document (text)", path=src.name)
        if bad_line is None:
            try:
                text = src.decode(offset, raw)
            except UnicodeDecodeError as exc:
                at = exc.start if offset == 0 else max(0, exc.start - bom)
                bad_line = newlines + raw[:at].count(b"\n") + 1
            else:
                regular = regular and scan.feed(clean_text(text), offset, raw)
        newlines += raw.count(b"\n")
    if bad_line is not None:
        raise InputError("not UTF-8 text: expected a UNL document", path=src.name,
                         line=bad_line)  # fmt: skip
    if not regular or not scan.starts:
        sentences = read_unl(src.path if src.path is not None else src.data.decode(  # type: ignore[union-attr]
            "utf-8", "surrogatepass"), source_name=src.name)
        return UnlIndex(src, [s.sent_id for s in sentences],
                        np.array([s.line for s in sentences], np.int64), None, sentences)
    return UnlIndex(src, scan.ids, np.array(scan.lines, np.int64),
                    np.array(scan.starts, np.int64))


# ---- sentences in columns


def chunk_from_drafts(drafts: Sequence[_Draft]) -> UnlChunk:
    """Parse the drafts' graphs in columns (see the section comment)."""
    n = len(drafts)
    rows = list(range(n))
    with_body = [i for i, d in enumerate(drafts) if d.body is not None]
    ep, rels, nodes, errors = _parse_bodies(
        with_body, [drafts[i].body for i in with_body],  # type: ignore[misc]
        [drafts[i].body_line for i in with_body])
    err = [d.error for d in drafts]
    err_line = [d.error_line for d in drafts]
    for i, (msg, line) in errors.items():
        err[i], err_line[i] = msg, line
    sents = pl.DataFrame(
        {"row": rows, "position": [d.position for d in drafts],
         "sent_id": [d.sent_id for d in drafts], "line": [d.line for d in drafts],
         "error": err, "error_line": err_line,
         "has_graph": [d.body is not None and i not in errors for i, d in enumerate(drafts)],
         "warnings": [list(d.warnings) for d in drafts]},
        schema=SENT_SCHEMA)  # fmt: skip
    return _finish_chunk(sents, ep, rels, nodes)


def chunk_from_sentences(sentences: Sequence[UnlSentence | NlSentence]) -> UnlChunk:
    """Parsed sentences in columns (row ``i`` = ``sentences[i]``; an :class:`NlSentence`
    has no graph)."""
    ep_rows: list[tuple] = []
    rel_rows: list[tuple] = []
    node_rows: list[tuple] = []
    graphs = [getattr(s, "graph", None) for s in sentences]
    for i, g in enumerate(graphs):
        if g is not None:
            _graph_rows(i, g, ep_rows, rel_rows, node_rows)
    sents = pl.DataFrame(
        {"row": list(range(len(sentences))), "position": [s.position for s in sentences],
         "sent_id": [s.sent_id for s in sentences], "line": [s.line for s in sentences],
         "error": [s.error for s in sentences],
         "error_line": [getattr(s, "error_line", None) for s in sentences],
         "has_graph": [g is not None for g in graphs],
         "warnings": [list(getattr(s, "warnings", ())) for s in sentences]},
        schema=SENT_SCHEMA)  # fmt: skip
    ep = pl.DataFrame(ep_rows, schema=ENDPOINT_SCHEMA, orient="row")
    rels = pl.DataFrame(rel_rows, schema=REL_SCHEMA, orient="row")
    nodes = pl.DataFrame(node_rows, schema=ENDPOINT_SCHEMA, orient="row")
    return _finish_chunk(sents, ep, rels, nodes)


def _graph_rows(i: int, g: UnlGraph, ep: list, rels: list, nodes: list) -> None:
    """Append a parsed graph's relations, their two ends and its lone nodes as rows."""
    for r, rel in enumerate(g.relations):
        rels.append((i, r, rel.label, rel.scope, rel.line, _id_code(rel.scope)))
        for side, nd in enumerate((rel.source, rel.target)):
            ep.append((i, 2 * r + side, nd.uw, nd.node_id, nd.kind, ".".join(nd.attrs),
                       _id_code(nd.node_id)))
    for k, nd in enumerate(g.nodes):
        nodes.append((i, k, nd.uw, nd.node_id, nd.kind, ".".join(nd.attrs),
                      _id_code(nd.node_id)))


def _id_code(x: str | None) -> int:
    """A node id or scope (two ASCII letters or digits) as an integer; None is -1."""
    return -1 if x is None else ord(x[0]) << 8 | ord(x[1])


def _code_strings(codes: np.ndarray) -> pl.Series:
    """Strings of ASCII byte codes (big-endian, zero bytes dropped); -1 is null."""
    distinct = np.unique(codes)
    distinct = distinct[distinct >= 0]
    text = [bytes(b for b in int(c).to_bytes(3, "big") if b).decode("ascii") for c in distinct]
    return pl.Series(codes).replace_strict(pl.Series(distinct), pl.Series(text, dtype=_S),
                                           default=None, return_dtype=_S)


def _parse_bodies(rows: list[int], bodies: list[str], base: list[int]
                  ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[int, tuple]]:
    """Endpoints, relations and lone nodes of the graphs ``bodies`` (graph text starting on
    line ``base``) of the given rows, resolved; and the rows whose graph is malformed."""
    df = pl.DataFrame({"row": rows, "body": bodies, "base": base},
                      schema={"row": pl.Int32, "body": _S, "base": pl.Int64})
    slow = df.filter(pl.col("body").str.contains("[W]", literal=True)
                     | pl.col("body").str.contains(_PY_ONLY_WS))["row"]
    lines = (df.filter(~pl.col("row").is_in(slow.implode()))
             .select("row", "base", pl.col("body").str.split("\n").alias("text"))
             .with_columns(ln=pl.int_ranges(pl.col("text").list.len()))
             .explode("text", "ln").filter(pl.col("text").str.contains(r"\S")))  # fmt: skip
    bad = lines.filter(~pl.col("text").str.contains(REL_LINE))["row"].unique()
    lines = lines.filter(~pl.col("row").is_in(bad.implode()))
    lines = lines.with_columns(r=pl.int_range(pl.len()).over("row").cast(pl.Int32))
    parts = _split_relation_lines(lines["text"])
    rels = lines.select("row", "r", (pl.col("base") + pl.col("ln")).alias("line")).with_columns(
        parts.select("label", "scope", pl.col("sc").cast(pl.Int64)))
    ends = pl.concat([
        lines.select("row", occ=2 * pl.col("r").cast(pl.Int64) + side).with_columns(
            parts.select(pl.col(f"{p}_{c}").alias(c)
                         for c in ("head", "tail", "nid", "attrs", "nc")))
        for side, p in enumerate("st")]).sort("row", "occ")
    ends, odd = _classify(ends)
    rels = rels.filter(~pl.col("row").is_in(odd.implode())).select(list(REL_SCHEMA))
    ep = _resolve(ends.filter(~pl.col("row").is_in(odd.implode())), rels)
    fallback = sorted(set(slow.to_list()) | set(bad.to_list()) | set(odd.to_list()))
    ep_rows: list[tuple] = []
    rel_rows: list[tuple] = []
    node_rows: list[tuple] = []
    errors: dict[int, tuple[str, int]] = {}
    by_row = dict(zip(rows, range(len(rows)), strict=True))
    for row in fallback:
        k = by_row[row]
        try:
            g = parse_graph(bodies[k], base[k])
        except GraphError as exc:
            errors[row] = (exc.message, exc.line)
            continue
        _graph_rows(row, g, ep_rows, rel_rows, node_rows)
    ep = pl.concat([ep, pl.DataFrame(ep_rows, schema=ENDPOINT_SCHEMA, orient="row")])
    rels = pl.concat([rels, pl.DataFrame(rel_rows, schema=REL_SCHEMA, orient="row")])
    nodes = pl.DataFrame(node_rows, schema=ENDPOINT_SCHEMA, orient="row")
    return ep, rels, nodes, errors


def _utf8(text: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of a string column (no nulls) and the offsets of its values."""
    arr = text.to_arrow(compat_level=pl.CompatLevel.oldest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = arr.cast(pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return data[offsets[0] : offsets[-1]], offsets - offsets[0]


def _slices(text: pl.Series, ascii_only: bool, char_at: np.ndarray | None, line_start: np.ndarray,
            starts: np.ndarray, ends: np.ndarray) -> pl.Series:
    """Substrings of each value of ``text`` between byte offsets (absolute in the column's
    bytes, at ASCII delimiters) ``starts`` and ``ends``; ``char_at`` maps byte to character
    offsets when some value is not ASCII."""
    if ascii_only:
        off, length = starts - line_start, np.maximum(ends - starts, 0)
    else:
        off = char_at[starts] - char_at[line_start]  # type: ignore[index]
        length = np.maximum(char_at[ends] - char_at[starts], 0)  # type: ignore[index]
    return pl.select(text.str.slice(pl.Series(off), pl.Series(length)))[:, 0]


def _first_in(cands: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per range ``[lo, hi)``: (is there a candidate, the first candidate or ``hi``)."""
    i = np.searchsorted(cands, lo)
    at = cands[np.minimum(i, max(cands.size - 1, 0))] if cands.size else hi
    found = (i < cands.size) & (at < hi)
    return found, np.where(found, at, hi)


_SPECIAL = np.zeros(256, bool)
_SPECIAL[[ord(x) for x in '"()[],:.']] = True


def _split_relation_lines(text: pl.Series) -> pl.DataFrame:
    """Split lines that match :data:`REL_LINE` (so parentheses, quotes and brackets are
    balanced on each line) into label, scope and per end (``s_``, ``t_``): the quoted head
    of a temporary UW, the rest of the UW with its constraint list (``tail``), the node id
    and the attributes (``@a.@b``). Positions come from running sums over the delimiters:
    the quote parity, the parenthesis and bracket depths outside quotes."""
    data, offsets = _utf8(text)
    n = text.len()
    ascii_only = not data.size or int(data.max()) < 128
    char_at = None
    if not ascii_only:
        char_at = np.zeros(data.size + 1, np.int64)
        np.cumsum((data & 0xC0) != 0x80, out=char_at[1:])
    pos = np.flatnonzero(_SPECIAL[data])
    ch = data[pos]
    quote = ch == 34
    free = (np.cumsum(quote, dtype=np.uint8) & 1) == 0
    opening, closing = (ch == 40) & free, (ch == 41) & free
    depth = np.cumsum(opening.view(np.int8) - closing.view(np.int8), dtype=np.int16)
    brackets = np.cumsum(((ch == 91) & free).view(np.int8) - ((ch == 93) & free).view(np.int8),
                         dtype=np.int16)  # fmt: skip
    outside = free & (brackets == 0) & (depth == 1)
    opens = pos[opening & (depth == 1)]
    closes = pos[closing & (depth == 0)]
    commas = pos[(ch == 44) & outside]
    suffix = pos[((ch == 58) | (ch == 46)) & outside]
    quotes = pos[quote]
    if not (opens.size == closes.size == commas.size == n):
        raise AssertionError("relation lines not balanced after validation")
    line_start = offsets[:-1]

    def cut(lo: np.ndarray, hi: np.ndarray) -> pl.Series:
        return _slices(text, ascii_only, char_at, line_start, lo, hi)

    cols = _label_scope(text, data, line_start, opens, cut)
    padded = _Bytes(data)
    for p, lo, hi in (("s", opens + 1, commas), ("t", commas + 1, closes)):
        _, sfx = _first_in(suffix, lo, hi)
        has_id = (sfx < hi) & (padded[sfx] == 58)
        if quotes.size:
            quoted, q1 = _first_in(quotes, lo, sfx)
            q2 = quotes[np.minimum(np.searchsorted(quotes, q1) + 1, quotes.size - 1)]
            q_end = np.where(quoted, q2 + 1, lo)
            cols[f"{p}_head"] = cut(np.where(quoted, q1, lo), q_end)
        else:
            q_end = lo
            cols[f"{p}_head"] = pl.repeat("", n, dtype=_S, eager=True)
        cols[f"{p}_tail"] = cut(q_end, sfx).str.strip_chars()
        nc = np.where(has_id, padded[sfx + 1] << 8 | padded[sfx + 2], -1)
        cols[f"{p}_nid"], cols[f"{p}_nc"] = _code_strings(nc), pl.Series(nc)
        cols[f"{p}_attrs"] = cut(np.where(has_id, sfx + 3, sfx), hi).str.strip_chars().str.slice(1)
    return pl.DataFrame(cols)


class _Bytes:
    """Bytes read as int64 at given positions (past the end: the last byte), without
    widening them all."""

    def __init__(self, data: np.ndarray):
        self.data, self.last = data, max(data.size - 1, 0)

    def __getitem__(self, at: np.ndarray) -> np.ndarray:
        if not self.data.size:
            return np.zeros(np.shape(at), np.int64)
        return self.data[np.minimum(at, self.last)].astype(np.int64)


def _label_scope(text: pl.Series, data: np.ndarray, line_start: np.ndarray, opens: np.ndarray,
                 cut: Callable) -> dict[str, pl.Series]:
    """Label, scope and scope code of relation lines: from the bytes when every line starts
    with its label (no white space before it), else from the text before ``(``."""
    padded = _Bytes(data)
    first = padded[line_start]
    if line_start.size and ((first >= 97) & (first <= 122)).all():
        third = padded[line_start + 2]
        three = (third >= 97) & (third <= 122)
        label = padded[line_start] << 16 | padded[line_start + 1] << 8 | np.where(three, third, 0)
        after = line_start + np.where(three, 3, 2)
        sc = np.where(padded[after] == 58, padded[after + 1] << 8 | padded[after + 2], -1)
        return {"label": _code_strings(label), "scope": _code_strings(sc), "sc": pl.Series(sc)}
    head = cut(line_start, opens).str.strip_chars().str.split_exact(":", 1).struct.unnest()
    scope = head[:, 1]
    sc = np.array([_id_code(x) for x in scope.to_list()], np.int64)
    return {"label": head[:, 0], "scope": scope, "sc": pl.Series(sc)}


def _normalised(x: pl.Series) -> pl.Series:
    """:func:`_normalise_plain` in columns (only strings with white space change; each
    distinct string is normalised once)."""
    u = x.unique()
    has_ws = u.str.contains(r"\s")
    if not has_ws.any():
        return x
    idx = has_ws.arg_true()
    fixed = (u.gather(idx).str.replace_all(r"\s+", " ")
             .str.replace_all(_WS_PUNCT, "${1}").str.strip_chars())  # fmt: skip
    return x.replace_strict(u, u.clone().scatter(idx, fixed))


def _classify(ends: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """Normalised UW and kind of every end, as :func:`parse_node` (a quoted head is kept as
    written, the rest normalised), and the rows with a numeric UW in digits other than 0-9
    (left to :func:`parse_graph`)."""
    c = ends.select("row", "occ", "nid", "attrs", pl.col("nc").cast(pl.Int64),
                    uw=ends["head"] + _normalised(ends["tail"]),
                    quoted=pl.col("head") != "")  # fmt: skip
    c = c.with_columns(kind=pl.when(pl.col("quoted")).then(pl.lit("temp"))
                       .when((pl.col("uw") == "") & pl.col("nid").is_not_null())
                       .then(pl.lit("scope"))
                       .when(pl.col("uw").is_in(["", NULL_UW])).then(pl.lit("null"))
                       .when(pl.col("uw").str.starts_with("[")).then(pl.lit("nl"))
                       .when(pl.col("uw").str.contains(r"^[0-9]+$")).then(pl.lit("ucl"))
                       .otherwise(pl.lit("uw")))  # fmt: skip
    odd = c.filter((pl.col("kind") == "uw") & pl.col("uw").str.contains(r"^\d+$"))["row"]
    c = c.with_columns(uw=pl.when(pl.col("kind") == "null").then(pl.lit(NULL_UW))
                       .otherwise("uw"))  # fmt: skip
    return c.select(list(ENDPOINT_SCHEMA)), odd.unique()


def _resolve(ep: pl.DataFrame, rels: pl.DataFrame) -> pl.DataFrame:
    """:func:`resolve_graph` in columns: ``:XX`` is a scope reference if a relation of its
    graph has scope XX; the other occurrences of a node id take the most specific UW (a real
    UW, then a constraint list, then the longer string, then the first) and the union of
    the attributes, in order of appearance."""
    scopes = rels.select("row", nc="sc").filter(pl.col("nc") >= 0).unique().with_columns(
        ref=pl.lit(True))
    ep = ep.join(scopes, on=["row", "nc"], how="left", maintain_order="left")
    ep = ep.with_columns(grouped=(pl.col("nc") >= 0)
                         & ~((pl.col("kind") == "scope") & pl.col("ref").fill_null(False)))
    g = ep.filter("grouped")
    # a group changes if it holds a scope-kind node, or its occurrences differ, or repeat an
    # attribute (the union drops the repeat); most groups are one node written again
    (uwc,) = dict_codes(g["uw"])
    atc, attr_values = _encode(g["attrs"])
    repeats = np.array([len(set(v.split("."))) < v.count(".") + 1 for v in attr_values], bool)
    need = (g.with_columns(u=pl.Series(uwc), a=pl.Series(atc),
                           d=pl.Series(repeats[atc] if atc.size else np.zeros(0, bool)))
            .group_by("row", "nc")
            .agg(n=pl.len(), sc=(pl.col("kind") == "scope").any(), nu=pl.col("u").n_unique(),
                 na=pl.col("a").n_unique(), nk=pl.col("kind").n_unique(), d=pl.col("d").any()))
    need = need.filter(pl.col("sc") | ((pl.col("n") > 1) & (
        (pl.col("nu") > 1) | (pl.col("na") > 1) | (pl.col("nk") > 1) | pl.col("d"))))
    need = need.select("row", "nc")
    if not need.height:
        return ep.select(list(ENDPOINT_SCHEMA))
    g = g.join(need, on=["row", "nc"], how="semi", maintain_order="left")
    plain = pl.col("kind").is_in(["null", "scope"])
    best = (g.with_columns(s1=~plain, s2=pl.col("uw").str.contains("(", literal=True),
                           s3=pl.col("uw").str.len_chars())
            .sort("row", "nc", "s1", "s2", "s3", "occ",
                  descending=[False, False, True, True, True, False])
            .group_by("row", "nc", maintain_order=True).first()
            .select("row", "nc", new_kind=pl.when(plain).then(pl.lit("null"))
                    .otherwise("kind"), new_uw=pl.when(plain).then(pl.lit(NULL_UW))
                    .otherwise("uw")))  # fmt: skip
    attrs = (g.filter(pl.col("attrs") != "")
             .select("row", "nc", pl.col("attrs").str.split("."))
             .explode("attrs")
             .group_by("row", "nc", maintain_order=True)
             .agg(new_attrs=pl.col("attrs").unique(maintain_order=True).str.join(".")))
    fix = best.join(attrs, on=["row", "nc"], how="left")
    ep = ep.join(fix, on=["row", "nc"], how="left", maintain_order="left")
    fixed = pl.col("grouped") & pl.col("new_kind").is_not_null()
    return ep.select(
        "row", "occ",
        pl.when(fixed).then("new_uw").otherwise("uw").alias("uw"), "nid",
        pl.when(fixed).then("new_kind").otherwise("kind").alias("kind"),
        pl.when(fixed).then(pl.col("new_attrs").fill_null("")).otherwise("attrs").alias("attrs"),
        "nc")


def _encode(column: pl.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a string column without nulls and its distinct values."""
    arr = column.cast(_S).to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()


def factorize(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys in ascending order, the index of each key among them)."""
    inv = pl.Series(keys).rank("dense").to_numpy().astype(np.int64) - 1
    distinct = np.empty(int(inv.max()) + 1 if inv.size else 0, keys.dtype)
    distinct[inv] = keys
    return distinct, inv


def dict_codes(*columns: pl.Series) -> list[np.ndarray]:
    """Exact integer codes of string columns, shared between them (equal strings, equal
    codes; null is -1): one dictionary encoding of all of them."""
    both = pl.concat([c.cast(_S) for c in columns]) if columns else pl.Series([], dtype=_S)
    arr = both.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    idx = pc.dictionary_encode(arr).indices
    codes = pc.fill_null(idx, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    out, at = [], 0
    for c in columns:
        out.append(codes[at : at + c.len()])
        at += c.len()
    return out


def _components(ep: pl.DataFrame, rels: pl.DataFrame, nodes: pl.DataFrame,
                n_rows: int) -> np.ndarray:
    """Connected components per row, as :meth:`UnlGraph.n_components`: a node is its scope,
    else its id, else (an id-less null UW being a node of its own) its UW, which joins the
    one id node of that UW if there is exactly one; a scoped relation joins its source to
    its scope. Nodes are integer keys (row, type, code), components come from scipy; 0 for a
    row without a graph node."""
    allnodes = pl.concat([ep, nodes.with_columns(occ=-1 - pl.col("occ"))])
    (uw,) = dict_codes(allnodes["uw"])
    nid, scope = allnodes["nc"].to_numpy(), rels["sc"].to_numpy()
    kind = allnodes["kind"]
    is_scope, is_null = (kind == "scope").to_numpy(), (kind == "null").to_numpy()
    row = allnodes["row"].to_numpy().astype(np.int64)
    # an id-less UW joins the id node of its UW when that UW has exactly one id
    ided = (nid >= 0) & ~is_scope & ~is_null
    by_uw = pl.DataFrame({"row": row[ided], "uw": uw[ided], "nid": nid[ided]}).group_by(
        "row", "uw").agg(lo=pl.col("nid").min(), hi=pl.col("nid").max())
    alias = by_uw.filter(pl.col("lo") == pl.col("hi")).select("row", "uw", alias="lo")
    joined = pl.DataFrame({"row": row, "uw": uw}).join(alias, on=["row", "uw"], how="left",
                                                       maintain_order="left")
    ali = joined["alias"].fill_null(-1).to_numpy()
    typ = np.select([is_scope, nid >= 0, is_null, ali >= 0], [0, 1, 2, 1], 3)
    val = np.select([is_scope | (nid >= 0), is_null, ali >= 0],
                    [nid, np.arange(row.size), ali], uw)  # fmt: skip
    key = (row << 40) | (typ << 36) | val
    occ = allnodes["occ"].to_numpy()
    on_rel = occ >= 0
    src, tgt = key[on_rel & (occ % 2 == 0)], key[on_rel & (occ % 2 == 1)]
    has_scope = scope >= 0
    scoped = (rels["row"].to_numpy().astype(np.int64)[has_scope] << 40) | scope[has_scope]
    a = np.concatenate([src, src[has_scope]])
    b = np.concatenate([tgt, scoped])
    verts, inv = factorize(np.concatenate([a, b, key[~on_rel]]))
    if not verts.size:
        return np.zeros(n_rows, np.int64)
    m = a.size
    graph = coo_matrix((np.ones(m, np.int8), (inv[:m], inv[m : 2 * m])),
                       shape=(verts.size, verts.size))  # fmt: skip
    _, labels = connected_components(graph, directed=False)
    per = np.unique((verts >> 40) << 32 | labels)
    return np.bincount(per >> 32, minlength=n_rows)[:n_rows].astype(np.int64)


def _finish_chunk(sents: pl.DataFrame, ep: pl.DataFrame, rels: pl.DataFrame,
                  nodes: pl.DataFrame) -> UnlChunk:
    """Relations with both ends, per-row counts, connectivity and ``[word]`` nodes."""
    ep = ep.sort("row", "occ")
    rels = rels.sort("row", "r")
    ends = {p: ep.filter(pl.col("occ") % 2 == side).select(
                 pl.col("uw").alias(f"{p}_uw"), pl.col("nid").alias(f"{p}_id"),
                 pl.col("kind").alias(f"{p}_kind"), pl.col("attrs").alias(f"{p}_attrs"))
            for p, side in (("s", 0), ("t", 1))}  # fmt: skip
    wide = pl.concat([rels.drop("sc"), ends["s"], ends["t"]], how="horizontal")
    n = sents.height
    rows_of = [rels["row"].to_numpy(), nodes["row"].to_numpy()]
    n_rel, n_nodes = (np.bincount(r.astype(np.int64), minlength=n)[:n] for r in rows_of)
    words = pl.Series("nl_words", [None] * n, dtype=_S)
    if (ep["kind"] == "nl").any() or (nodes["kind"] == "nl").any():
        found = (pl.concat([ep.select("row", "occ", "uw", "kind"),
                            nodes.select("row", occ=pl.col("occ") + (1 << 40), uw="uw",
                                         kind="kind")])
                 .filter(pl.col("kind") == "nl").sort("row", "occ")
                 .group_by("row", maintain_order=True)
                 .agg(nl_words=pl.col("uw").head(3).str.join(", ")))  # fmt: skip
        words = words.scatter(found["row"].to_numpy(), found["nl_words"])
    sents = sents.with_columns(n_rel=pl.Series(n_rel, dtype=pl.Int64),
                               n_nodes=pl.Series(n_nodes, dtype=pl.Int64),
                               n_components=pl.Series(_components(ep, rels, nodes, n)),
                               nl_words=words)
    return UnlChunk(sents, wide, nodes.drop("nc"))


# --------------------------------------------------------------------------------------------
# NLization input


def read_nl(
    path_or_text: str | Path, *, lang: str | None = None, source_name: str | None = None
) -> list[NlSentence]:
    """Read NLization sentences.

    A UNL document (with ``[S`` blocks): per sentence the ``{lang}`` block (or ``{org}`` if its
    language is ``lang``); with ``lang=None`` the only target block, else the ``{org}`` text.
    Plain text: one sentence per line (an empty line is an empty sentence; trailing empty lines
    are dropped)."""
    raw, name = _load(path_or_text, source_name)
    text = clean_text(raw)
    if _S_OPEN.search(text):
        return [_nl_from_unl(s, lang) for s in parse_unl_document(text, name)]
    rows = text.split("\n")
    while rows and not rows[-1].strip():
        rows.pop()
    return [NlSentence(None, k, k + 1, r.strip(), None, name) for k, r in enumerate(rows)]


def _nl_from_unl(s: UnlSentence, lang: str | None) -> NlSentence:
    text, err = None, None
    if lang is not None:
        text = s.targets.get(lang)
        if text is None and s.org_lang == lang:
            text = s.org
        if text is None:
            err = f"no {{{lang}}} block"
    elif len(s.targets) == 1:
        text = next(iter(s.targets.values()))
    elif len(s.targets) > 1:
        err = f"several target-language blocks ({', '.join(sorted(s.targets))}); choose a lang"
    elif s.org is not None:
        text = s.org
    else:
        err = "no target-language or {org} block"
    return NlSentence(s.sent_id, s.position, s.line, text, err, s.source_name)
