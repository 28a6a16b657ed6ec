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
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

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
