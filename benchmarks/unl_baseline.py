"""BASELINE ONLY: the UNL reader and UNLization scorer as they were before the columnar
rewrite (issue 13 item 4), copied verbatim from ``schemas/formats/unl.py`` and the scoring part
of ``transforms/unl.py`` (commit 1e4e832). ``benchmarks/unl.py`` times it in the same run as
the current code to show the speed-up; nothing in the package uses it.
"""


from __future__ import annotations

import gc
import hashlib
import html
import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.tables import TABLES

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
    blocks = [b for b in _BLOCK.finditer(text) if b[1].lower() == "unl"]
    if blocks:
        return [
            _sentence(None, k, lines(b.start()), text, b.start(), b.end(), lines, name)
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
    start = m.end()
    limit = opens[k + 1].start() if k + 1 < len(opens) else len(text)
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
    s = _sentence(sid, k, lines(m.start()), text, start, end, lines, name)
    if warnings:
        s = _with_warnings(s, warnings)
    return s


def _with_warnings(s: UnlSentence, warnings: tuple[str, ...]) -> UnlSentence:
    return UnlSentence(
        s.sent_id, s.position, s.line, s.org, s.org_lang, s.targets, s.graph, s.error,
        s.error_line, s.warnings + warnings, s.source_name,
    )  # fmt: skip


def _sentence(
    sid: str | None, k: int, line: int, text: str, start: int, end: int, lines: _Lines,
    name: str | None,
) -> UnlSentence:  # fmt: skip
    """Build a sentence from ``text[start:end]`` (the inside of an [S] block or a {unl} block)."""
    org = org_lang = None
    targets: dict[str, str] = {}
    unl: tuple[str, int] | None = None
    warnings: list[str] = []
    rest: list[str] = []
    pos = start
    for b in _BLOCK.finditer(text, start, end):
        rest.append(text[pos : b.start()])
        pos = b.end()
        tag = b[1].lower()
        if tag == "org":
            org, org_lang = b[3].strip(), (b[2] or "").split("=")[0].strip() or None
        elif tag == "unl":
            if unl is not None:
                warnings.append(f"line {lines(b.start())}: second {{unl}} block ignored")
            else:
                unl = (b[3], b.start(3))
        else:
            targets[tag] = b[3].strip()
    rest.append(text[pos:end])
    leftover = "".join(rest)
    bad_open = _BLOCK_OPEN.search(leftover)
    if bad_open is not None:
        at = text.find(bad_open[0], start, end)
        return UnlSentence(
            sid, k, line, org, org_lang, targets, None,
            f"unterminated block {bad_open[0]} (no {{/{bad_open[1]}}})", lines(at),
            tuple(warnings), name,
        )  # fmt: skip
    if unl is None and leftover.strip():
        unl = (leftover, start)  # graph written directly inside [S] ... [/S]
    elif leftover.strip():
        warnings.append(f"line {line}: text outside blocks ignored: {leftover.strip()[:40]!r}")
    if unl is None:
        return UnlSentence(sid, k, line, org, org_lang, targets, None, None, None,
                           tuple(warnings), name)  # fmt: skip
    body, body_start = unl
    try:
        graph = parse_graph(body, lines(body_start))
    except GraphError as exc:
        return UnlSentence(sid, k, line, org, org_lang, targets, None, exc.message, exc.line,
                           tuple(warnings), name)  # fmt: skip
    return UnlSentence(sid, k, line, org, org_lang, targets, graph, None, None,
                       tuple(warnings), name)  # fmt: skip


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


# --------------------------------------------------------------------------------------------
# Scoring (old transforms/unl.py, above the comparison)

ACTUAL, EXPECTED = 0, 1
SEP = "\x1f"
_ALIGN_MODES = ("auto", "id", "position")

# --------------------------------------------------------------------------------------------
# Options


def _as_fraction(x: Fraction | int | float | str) -> Fraction:
    """Exact value of a threshold; floats go through their shortest repr (0.3 -> 3/10)."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _fmt(x: Fraction) -> str:
    """``0.3`` for 3/10, ``1/3`` when there is no finite decimal."""
    d = Decimal(x.numerator) / Decimal(x.denominator)
    return str(d.normalize()) if Fraction(d) == x else f"{x.numerator}/{x.denominator}"


@dataclass(frozen=True)
class UnlOptions:
    """UNLization scoring options; :meth:`signature` is stored with every row."""

    multiset: bool = False
    keep_scope_ids: bool = False
    threshold: Fraction = Fraction(3, 10)
    overall_threshold: Fraction = Fraction(3, 10)
    optional_attrs: frozenset[str] = frozenset({"@def", "@indef"})
    align: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _as_fraction(self.threshold))
        object.__setattr__(self, "overall_threshold", _as_fraction(self.overall_threshold))
        object.__setattr__(self, "optional_attrs", frozenset(self.optional_attrs))
        if self.align not in _ALIGN_MODES:
            raise ValueError(f"align must be one of {_ALIGN_MODES}, not {self.align!r}")

    @classmethod
    def legacy_2013(cls, **kwargs: object) -> UnlOptions:
        """The older UNLarium page (2013): overall discrepancy < 0.5."""
        return cls(overall_threshold=Fraction(1, 2), **kwargs)  # type: ignore[arg-type]

    def signature(self) -> str:
        return "|".join(
            [
                "sem:" + ("multiset" if self.multiset else "set"),
                "scope:" + ("keep" if self.keep_scope_ids else "ignore"),
                f"thr:{_fmt(self.threshold)}",
                f"thr_all:{_fmt(self.overall_threshold)}",
                "opt:" + ",".join(sorted(self.optional_attrs)),
                f"align:{self.align}",
            ]
        )


@dataclass(frozen=True)
class NlOptions:
    """NLization scoring options (words are always multisets, METRICS 3.3)."""

    threshold: Fraction = Fraction(3, 10)
    align: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _as_fraction(self.threshold))
        if self.align not in _ALIGN_MODES:
            raise ValueError(f"align must be one of {_ALIGN_MODES}, not {self.align!r}")

    def signature(self) -> str:
        thr = _fmt(self.threshold)
        return f"sem:multiset|words:ws,strip-PS,casefold|thr:{thr}|align:{self.align}"


# --------------------------------------------------------------------------------------------
# Alignment


@dataclass
class Alignment:
    """``partner[i]`` = index of the actual sentence aligned with expected sentence i."""

    partner: list[int | None]
    by: str
    unmatched_actual: list[int]
    notes: list[str] = field(default_factory=list)


def _ids(sentences: Sequence[UnlSentence | NlSentence]) -> list[str | None]:
    return [s.sent_id for s in sentences]


def align_sentences(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    mode: str = "auto",
) -> Alignment:
    """Align by id when every sentence of both sides has a unique id (``auto``), else by
    position. ``id``/``position`` force a mode."""
    eids, aids = _ids(expected), _ids(actual)
    notes: list[str] = []
    have_ids = all(eids) and all(aids) and bool(eids) and bool(aids)
    unique = len(set(eids)) == len(eids) and len(set(aids)) == len(aids)
    if mode == "auto" and have_ids and not unique:
        notes.append("duplicate sentence ids: aligned by position instead of id")
    if mode == "auto" and not have_ids and any(eids) and any(aids):
        notes.append("some sentences have no id: aligned by position instead of id")
    if mode == "id" or (mode == "auto" and have_ids and unique):
        index = {sid: k for k, sid in enumerate(aids) if sid is not None}
        partner = [index.get(sid) if sid is not None else None for sid in eids]
        matched = {p for p in partner if p is not None}
        unmatched = [k for k in range(len(actual)) if k not in matched]
        missing = [eids[i] for i, p in enumerate(partner) if p is None]
        if missing:
            notes.append(
                f"{len(missing)} expected sentence id(s) not found in actual: " + _preview(missing)
            )
        if expected and actual and not matched:
            notes.append(
                "no sentence id matches between expected and actual; "
                "use align='position' if the files are in the same order"
            )
        return Alignment(partner, "id", unmatched, notes)
    partner = [i if i < len(actual) else None for i in range(len(expected))]
    if len(actual) != len(expected):
        notes.append(f"aligned by position: {len(expected)} expected, {len(actual)} actual")
    return Alignment(partner, "position", list(range(len(expected), len(actual))), notes)


def _preview(xs: Sequence[object], k: int = 5) -> str:
    head = ", ".join(str(x) for x in xs[:k])
    return head + (f", ... ({len(xs)} in all)" if len(xs) > k else "")


def _sent_ids(expected: Sequence[UnlSentence | NlSentence], first: int = 0) -> list[str]:
    return [s.sent_id if s.sent_id is not None else f"#{first + k + 1}"
            for k, s in enumerate(expected)]


def aligned_partners(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    mode: str = "auto",
) -> list:
    """For each expected sentence, the aligned actual sentence (None without a partner)."""
    al = align_sentences(expected, actual, mode)
    return [actual[p] if p is not None else None for p in al.partner]


# --------------------------------------------------------------------------------------------
# RETURNED verdicts (per sentence, Python)


def unl_status(s: UnlSentence | None) -> tuple[bool, str | None, int | None]:
    """(returned, reason, line) of an actual UNL sentence (METRICS 3.2 RETURNED)."""
    if s is None:
        return False, "no actual sentence", None
    if s.error is not None:
        return False, f"parse error: {s.error}", s.error_line
    g = s.graph
    if g is None:
        return False, "no graph", s.line
    if not g.relations and not g.nodes:
        return False, "empty graph", s.line
    words = g.nl_words()
    if words:
        return False, "natural-language word in graph: " + ", ".join(words[:3]), s.line
    k = g.n_components()
    if k > 1:
        return False, f"graph not connected ({k} components)", s.line
    return True, None, None


def nl_words(text: str) -> list[str]:
    """METRICS 3.3 words: split on white space, strip leading/trailing P*/S* characters,
    drop empties, casefold."""
    out = []
    for tok in text.split():
        i, j = 0, len(tok)
        while i < j and unicodedata.category(tok[i])[0] in "PS":
            i += 1
        while j > i and unicodedata.category(tok[j - 1])[0] in "PS":
            j -= 1
        if i < j:
            out.append(tok[i:j].casefold())
    return out


_KNOWN = "|".join(sorted(KNOWN_RELATIONS, key=len, reverse=True))
_UW_IN_TEXT = re.compile(
    r"\w\s?\(\s*[a-z]{2,3}\s*[<>]"  # word(icl>...)
    r"|\.@[\w\-]+"  # .@attribute
    r"|\[\[[^\]]*\]\]"  # [[UW]]
    rf"|\b(?:{_KNOWN})(?::\w{{2}})?\([^(),;]*[,;][^()]*\)"  # rel(a, b)
)


def nl_status(text: str | None, error: str | None) -> tuple[bool, str | None]:
    """(returned, reason) of an actual NLization sentence (METRICS 3.3 RETURNED)."""
    if error is not None:
        return False, error
    if text is None:
        return False, "no actual sentence"
    m = _UW_IN_TEXT.search(text)
    if m is not None:
        start = max(text.rfind(" ", 0, m.start()) + 1, 0)
        end = text.find(" ", m.end())
        return False, f"UW in output: {text[start : end if end >= 0 else None]!r}"
    if not nl_words(text):
        return False, "no words"
    return True, None


# --------------------------------------------------------------------------------------------
# Items


def _scope_key(node_id: str | None, keep: bool) -> str:
    return f"[scope:{node_id}]" if keep else "[scope]"


def unl_item_rows(
    graphs: Sequence[tuple[int, UnlSentence]], side: int, options: UnlOptions
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Relations and relation-less nodes of the given (sent, sentence) pairs as two frames;
    attributes are joined with ``.`` (``@entry.@past``) and exploded in polars."""
    keep = options.keep_scope_ids
    flat = [(i, r) for i, s in graphs if s.graph is not None for r in s.graph.relations]
    srcs = [r.source for _, r in flat]
    tgts = [r.target for _, r in flat]
    labels = [r.label for _, r in flat]
    if keep:
        labels = [f"{r.label}:{r.scope}" if r.scope else r.label for _, r in flat]

    def keys(ns: list) -> list[str]:
        return [_scope_key(n.node_id, keep) if n.kind == "scope" else n.uw for n in ns]

    rs = {
        "sent": [i for i, _ in flat],
        "label": labels,
        "src": keys(srcs),
        "tgt": keys(tgts),
        "sref": [n.kind == "scope" for n in srcs],
        "tref": [n.kind == "scope" for n in tgts],
        "sattr": [".".join(n.attrs) for n in srcs],
        "tattr": [".".join(n.attrs) for n in tgts],
    }
    lone = [(i, n) for i, s in graphs if s.graph is not None and not s.graph.relations
            for n in s.graph.nodes]  # fmt: skip
    ns = {
        "sent": [i for i, _ in lone],
        "uw": [n.uw for _, n in lone],
        "attr": [".".join(n.attrs) for _, n in lone],
    }
    st = pl.String
    rel = pl.DataFrame(
        rs,
        schema={"sent": pl.Int32, "label": st, "src": st, "tgt": st,
                "sref": pl.Boolean, "tref": pl.Boolean, "sattr": st, "tattr": st},
    )  # fmt: skip
    nodes = pl.DataFrame(ns, schema={"sent": pl.Int32, "uw": st, "attr": st})
    side_col = pl.lit(side, dtype=pl.Int8).alias("side")
    return rel.with_columns(side_col), nodes.with_columns(side_col)


def unl_items(rel: pl.DataFrame, nodes: pl.DataFrame, options: UnlOptions) -> pl.DataFrame:
    """Explode relations/nodes into ``(sent, side, kind, item)``; kind R (relations),
    U (UWs, by position S/T/N) and A (non-optional attributes, by position)."""
    opt = sorted(options.optional_attrs)

    def tagged(kind: str, *parts: pl.Expr | str) -> list[pl.Expr]:
        exprs = [pl.lit(p) if isinstance(p, str) else p for p in parts]
        return [
            pl.col("sent"),
            pl.col("side"),
            pl.lit(kind).alias("kind"),
            pl.concat_str(exprs, separator=SEP).alias("item"),
        ]

    def attrs(frame: pl.DataFrame, pos: str, key: str, col: str) -> pl.DataFrame:
        ex = frame.filter(pl.col(col) != "").select("sent", "side", key, pl.col(col).str.split("."))
        ex = ex.explode(col).filter(~pl.col(col).is_in(opt))
        return ex.select(tagged("A", pos, pl.col(key), pl.col(col)))

    parts = [
        rel.select(tagged("R", pl.col("label"), pl.col("src"), pl.col("tgt"))),
        rel.filter(~pl.col("sref")).select(tagged("U", "S", pl.col("src"))),
        rel.filter(~pl.col("tref")).select(tagged("U", "T", pl.col("tgt"))),
        nodes.select(tagged("U", "N", pl.col("uw"))),
        attrs(rel, "S", "src", "sattr"),
        attrs(rel, "T", "tgt", "tattr"),
        attrs(nodes, "N", "uw", "attr"),
    ]
    return pl.concat(parts, how="vertical")


def item_counts(items: pl.DataFrame, multiset: bool) -> pl.DataFrame:
    """Per (sent, kind, item): exceeding / missing / total contributions."""
    # side is 0 (actual) or 1 (expected): e = sum(side), a = count - e
    c = items.group_by("sent", "kind", "item").agg(
        n=pl.len().cast(pl.Int64), e=pl.col("side").cast(pl.Int64).sum()
    )
    c = c.select("sent", "kind", "item", a=pl.col("n") - pl.col("e"), e=pl.col("e"))
    if not multiset:
        c = c.with_columns(pl.col("a").clip(upper_bound=1), pl.col("e").clip(upper_bound=1))
    return c.with_columns(
        exc=(pl.col("a") - pl.col("e")).clip(lower_bound=0),
        miss=(pl.col("e") - pl.col("a")).clip(lower_bound=0),
        tot=pl.col("a") + pl.col("e"),
    )


_KIND_PREFIX = {"R": "rel", "U": "uw", "A": "attr", "W": "word"}


def count_table(counts: pl.DataFrame, kinds: str) -> pl.DataFrame:
    """One row per sentence: ``<kind>_exc/_miss/_tot`` for the given kinds."""
    aggs = []
    for k in kinds:
        p = _KIND_PREFIX[k]
        sel = pl.col("kind") == k
        for what in ("exc", "miss", "tot"):
            aggs.append(pl.col(what).filter(sel).sum().alias(f"{p}_{what}"))
    return counts.group_by("sent").agg(aggs)


def error_digests(counts: pl.DataFrame) -> pl.DataFrame:
    """Per sentence, a stable 16-hex fingerprint of its exceeding/missing items."""
    wrong = counts.filter((pl.col("exc") > 0) | (pl.col("miss") > 0)).select(
        "sent",
        pl.concat_str(
            [pl.col("kind"), pl.col("exc").cast(pl.String), pl.col("miss").cast(pl.String),
             pl.col("item")],
            separator=SEP,
        ).alias("tag"),
    )  # fmt: skip
    joined = wrong.group_by("sent").agg(pl.col("tag").sort().str.join("\x1e"))
    digests = [
        hashlib.blake2b(t.encode(), digest_size=8).hexdigest() for t in joined["tag"].to_list()
    ]
    return joined.select("sent").with_columns(error_digest=pl.Series(digests, dtype=pl.String))


# --------------------------------------------------------------------------------------------
# Exact discrepancies


def with_fraction(df: pl.DataFrame, name: str, num: pl.Expr, den: pl.Expr) -> pl.DataFrame:
    """Add ``d_<name>`` (DOUBLE) and ``d_<name>_frac`` (reduced exact fraction; 0 when the
    denominator is 0)."""
    nd = df.select(num.alias("n"), den.alias("d"))
    n = nd["n"].to_numpy().astype(np.int64)
    d = nd["d"].to_numpy().astype(np.int64)
    g = np.gcd(n, d)
    g[g == 0] = 1
    red = pl.DataFrame({"rn": n // g, "rd": d // g})
    frac = (
        pl.when(pl.col("rn") == 0)
        .then(pl.lit("0"))
        .when(pl.col("rd") == 1)
        .then(pl.col("rn").cast(pl.String))
        .otherwise(pl.concat_str([pl.col("rn"), pl.lit("/"), pl.col("rd")]))
    )
    dbl = pl.when(pl.col("rd") == 0).then(0.0).otherwise(pl.col("rn") / pl.col("rd"))
    extra = red.select(dbl.alias(f"d_{name}"), frac.alias(f"d_{name}_frac"))
    return pl.concat([df, extra], how="horizontal")


def below(num: pl.Expr, den: pl.Expr, threshold: Fraction) -> pl.Expr:
    """Exact ``num/den < threshold`` (D = 0 when den = 0), by cross-multiplication."""
    p, q = threshold.numerator, threshold.denominator
    return pl.when(den == 0).then(pl.lit(p > 0)).otherwise(num * q < den * p)


def _reason_expr(parts: list[tuple[str, pl.Expr]]) -> pl.Expr:
    """``not correct: d_rel=1/2, ...`` naming the failing tests; null if none fails."""
    exprs = [
        pl.when(failed).then(pl.concat_str([pl.lit(f"{name}="), pl.col(f"{name}_frac")]))
        for name, failed in parts
    ]
    joined = pl.concat_str(exprs, separator=", ", ignore_nulls=True)
    any_failed = pl.any_horizontal([f for _, f in parts])
    return pl.when(any_failed).then(pl.concat_str([pl.lit("not correct: "), joined]))


# --------------------------------------------------------------------------------------------
# UNLization


def score_unlization(
    expected: Sequence[UnlSentence],
    actual: Sequence[UnlSentence],
    options: UnlOptions | None = None,
) -> pl.DataFrame:
    """One ``unl_sentences`` row per expected sentence (without corpus/system)."""
    options = options or UnlOptions()
    return score_unl_rows(expected, aligned_partners(expected, actual, options.align), options)


def score_unl_rows(
    expected: Sequence[UnlSentence],
    partners: Sequence[UnlSentence | None],
    options: UnlOptions,
    first: int = 0,
) -> pl.DataFrame:
    """The ``unl_sentences`` rows of expected sentences ``first``, ``first + 1``, ... given
    their aligned actual sentences: each row depends on its own sentence pair only, so a
    file can be scored in shards of sentences and the rows concatenated."""
    with gc_paused():
        base = _base_frame(expected, partners, unl_status, first)
        pairs_a = [(first + i, a) for i, a in enumerate(partners) if a is not None]
        rel_a, nodes_a = unl_item_rows(pairs_a, ACTUAL, options)
        rel_e, nodes_e = unl_item_rows(list(enumerate(expected, first)), EXPECTED, options)
    items = unl_items(pl.concat([rel_a, rel_e]), pl.concat([nodes_a, nodes_e]), options)
    counts = item_counts(items, options.multiset)
    df = _join_counts(base, counts, "RUA")
    nr = pl.col("rel_exc") + pl.col("rel_miss")
    nu = pl.col("uw_exc") + pl.col("uw_miss")
    na = pl.col("attr_exc") + pl.col("attr_miss")
    n_all = 3 * nr + 2 * nu + na
    d_all = 3 * pl.col("rel_tot") + 2 * pl.col("uw_tot") + pl.col("attr_tot")
    df = with_fraction(df, "rel", nr, pl.col("rel_tot"))
    df = with_fraction(df, "uw", nu, pl.col("uw_tot"))
    df = with_fraction(df, "all", n_all, d_all)
    tests = [
        ("d_rel", ~below(nr, pl.col("rel_tot"), options.threshold)),
        ("d_uw", ~below(nu, pl.col("uw_tot"), options.threshold)),
        ("d_all", ~below(n_all, d_all, options.overall_threshold)),
    ]
    df = df.with_columns(
        correct=pl.col("returned") & ~pl.any_horizontal([f for _, f in tests]),
        reason=pl.coalesce(pl.col("reason"), _reason_expr(tests)),
    )
    return _finalise(df, "unlization", options.signature())


def _base_frame(expected, partners, status, first: int) -> pl.DataFrame:
    """sent, sent_id, returned, reason, reason_line for each expected sentence."""
    rows = []
    for i, (e, a) in enumerate(zip(expected, partners, strict=True), first):
        returned, reason, line = status(a)
        if e.error is not None:
            reason = f"expected sentence malformed: {e.error}" + (f"; {reason}" if reason else "")
        rows.append((i, returned, reason, line))
    sent, returned, reason, line = zip(*rows, strict=True) if rows else ((), (), (), ())
    return pl.DataFrame(
        {"sent": list(sent), "sent_id": _sent_ids(expected, first), "returned": list(returned),
         "reason": list(reason), "reason_line": list(line)},
        schema={"sent": pl.Int32, "sent_id": pl.String, "returned": pl.Boolean,
                "reason": pl.String, "reason_line": pl.Int32},
    )  # fmt: skip


def _join_counts(base: pl.DataFrame, counts: pl.DataFrame, kinds: str) -> pl.DataFrame:
    table = count_table(counts, kinds)
    df = base.join(table, on="sent", how="left").join(error_digests(counts), on="sent", how="left")
    cols = [f"{_KIND_PREFIX[k]}_{w}" for k in kinds for w in ("exc", "miss", "tot")]
    return df.with_columns(pl.col(cols).fill_null(0).cast(pl.Int64)).sort("sent")


def _finalise(df: pl.DataFrame, task: str, signature: str) -> pl.DataFrame:
    """Columns of ``unl_sentences`` (minus corpus/system) in schema order."""
    schema = pl.Schema(TABLES["unl_sentences"])
    df = df.rename({"sent": "sent_index"}).with_columns(
        task=pl.lit(task), options=pl.lit(signature)
    )
    cols = []
    for name, dtype in schema.items():
        if name in ("corpus", "system"):
            continue
        cols.append(pl.col(name).cast(dtype) if name in df.columns else pl.lit(None, dtype))
        cols[-1] = cols[-1].alias(name)
    return df.select(cols)


# --------------------------------------------------------------------------------------------
# NLization


def _as_nl(xs: Sequence[NlSentence | str]) -> list[NlSentence]:
    return [x if isinstance(x, NlSentence) else NlSentence(None, k, k + 1, x) for k, x in
            enumerate(xs)]  # fmt: skip


def score_nlization(
    expected: Sequence[NlSentence | str],
    actual: Sequence[NlSentence | str],
    options: NlOptions | None = None,
) -> pl.DataFrame:
    """One ``unl_sentences`` row (task ``nlization``) per expected sentence."""
    options = options or NlOptions()
    exp, act = _as_nl(expected), _as_nl(actual)
    return score_nl_rows(exp, aligned_partners(exp, act, options.align), options)


def score_nl_rows(
    expected: Sequence[NlSentence],
    partners: Sequence[NlSentence | None],
    options: NlOptions,
    first: int = 0,
) -> pl.DataFrame:
    """``score_unl_rows`` for NLization: rows of expected sentences ``first``, ..."""

    def status(a: NlSentence | None) -> tuple[bool, str | None, int | None]:
        if a is None:
            return False, "no actual sentence", None
        ok, why = nl_status(a.text, a.error)
        return ok, why, None if ok else a.line

    base = _base_frame(expected, partners, status, first)
    sent, side, word = [], [], []
    for i, (e, a) in enumerate(zip(expected, partners, strict=True), first):
        sides = [(EXPECTED, e)] + ([(ACTUAL, a)] if a is not None else [])
        for sd, s in sides:
            ws = nl_words(s.text) if s.text else []
            sent.extend([i] * len(ws))
            side.extend([sd] * len(ws))
            word.extend(ws)
    items = pl.DataFrame(
        {"sent": sent, "side": side, "kind": ["W"] * len(word), "item": word},
        schema={"sent": pl.Int32, "side": pl.Int8, "kind": pl.String, "item": pl.String},
    )
    counts = item_counts(items, multiset=True)
    df = _join_counts(base, counts, "W")
    nw = pl.col("word_exc") + pl.col("word_miss")
    df = with_fraction(df, "words", nw, pl.col("word_tot"))
    tests = [("d_words", ~below(nw, pl.col("word_tot"), options.threshold))]
    df = df.with_columns(
        correct=pl.col("returned") & ~tests[0][1],
        reason=pl.coalesce(pl.col("reason"), _reason_expr(tests)),
    )
    return _finalise(df, "nlization", options.signature())


# --------------------------------------------------------------------------------------------
# Corpus scores


def _micro_f1(prefix: str) -> pl.Expr:
    """1 - D on summed counts (null when nothing was counted)."""
    tot = pl.col(f"{prefix}_tot").sum()
    err = pl.col(f"{prefix}_exc").sum() + pl.col(f"{prefix}_miss").sum()
    return pl.when(tot > 0).then(1 - err / tot).otherwise(None).alias(f"{prefix}_f1")


def unl_scores(sentences: pl.DataFrame) -> pl.DataFrame:
    """Corpus P/R/F per (corpus, system,) task and options, plus micro F1 of relations, UWs,
    attributes and words. P = correct/returned, R = correct/expected, F = 2PR/(P+R)
    = 2 correct/(returned + expected)."""
    keys = [k for k in ("corpus", "system", "task", "options") if k in sentences.columns]
    agg = sentences.group_by(keys, maintain_order=True).agg(
        n_expected=pl.len().cast(pl.Int64),
        n_returned=pl.col("returned").sum().cast(pl.Int64),
        n_correct=pl.col("correct").sum().cast(pl.Int64),
        **{f"{p}_f1": _micro_f1(p) for p in ("rel", "uw", "attr", "word")},
    )
    c, r, e = pl.col("n_correct"), pl.col("n_returned"), pl.col("n_expected")
    agg = agg.with_columns(
        precision=pl.when(r > 0).then(c / r).otherwise(0.0),
        recall=pl.when(e > 0).then(c / e).otherwise(0.0),
        f1=pl.when(c > 0).then(2 * c / (r + e)).otherwise(0.0),
    )
    names = [n for n in TABLES["unl_scores"].names if n in agg.columns]
    return agg.select(names)


# --------------------------------------------------------------------------------------------
# Warnings


def _encoding(sentences: Sequence[UnlSentence]) -> tuple[int, int]:
    """(numeric UCL UWs, readable UWs) over all node occurrences."""
    c: Counter[str] = Counter()
    for s in sentences:
        if s.graph is not None:
            c.update(n.kind for n in s.graph.all_nodes)
    return c["ucl"], c["uw"]


def _label_warnings(side: str, sentences: Sequence[UnlSentence]) -> list[str]:
    unknown: Counter[str] = Counter()
    first: dict[str, str] = {}
    for k, s in enumerate(sentences):
        if s.graph is None:
            continue
        for r in s.graph.relations:
            if r.label not in KNOWN_RELATIONS:
                unknown[r.label] += 1
                first.setdefault(r.label, f"{s.sent_id or '#' + str(k + 1)} line {r.line}")
    return [
        f"{side}: unknown relation label {lab!r} ({n}x, first in sentence {first[lab]})"
        for lab, n in sorted(unknown.items())
    ]


def unl_warnings(
    expected: Sequence[UnlSentence | NlSentence],
    actual: Sequence[UnlSentence | NlSentence],
    align: str = "auto",
) -> list[str]:
    """Things a user should know before trusting the scores: alignment problems, actual
    sentences with no expected partner, malformed expected sentences, reader warnings,
    unknown relation labels and different UW encodings (numeric UCL ids vs readable UCN)."""
    al = align_sentences(expected, actual, align)
    out = list(al.notes)
    if al.unmatched_actual:
        ids = [actual[k].sent_id or f"#{k + 1}" for k in al.unmatched_actual]
        out.append(
            f"{len(ids)} actual sentence(s) have no expected partner (ignored): {_preview(ids)}"
        )
    for side, xs in (("expected", expected), ("actual", actual)):
        for k, s in enumerate(xs):
            out.extend(f"{side}: {w}" for w in getattr(s, "warnings", ()))
            if side == "expected" and s.error is not None:
                line = getattr(s, "error_line", None) or s.line
                out.append(
                    f"expected sentence {s.sent_id or '#' + str(k + 1)} (line {line}) "
                    f"is malformed: {s.error}"
                )
    unl_e = [s for s in expected if isinstance(s, UnlSentence)]
    unl_a = [s for s in actual if isinstance(s, UnlSentence)]
    out += _label_warnings("expected", unl_e) + _label_warnings("actual", unl_a)
    out += _encoding_warnings(unl_e, unl_a)
    return out


def _encoding_warnings(expected: Sequence[UnlSentence], actual: Sequence[UnlSentence]) -> list[str]:
    (eu, en), (au, an) = _encoding(expected), _encoding(actual)

    def name(ucl: int, ucn: int) -> str | None:
        if ucl + ucn == 0:
            return None
        return "numeric UCL ids" if ucl > ucn else "readable UCN UWs"

    ne, na = name(eu, en), name(au, an)
    if ne and na and ne != na:
        return [
            f"UW encodings differ: expected uses {ne} ({eu} UCL / {en} UCN), actual uses {na} "
            f"({au} UCL / {an} UCN); UWs will not match (near 100% discrepancy)"
        ]
    return []


