"""Parsed UNL structures (METRICS 3.1): nodes, relations, graphs, sentences, and the
connectivity of a parsed graph."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from sysdiff.schemas.frozen import FrozenMap

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

_NO_TARGETS = FrozenMap()


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
    sentence has no graph or it could not be parsed (then ``error`` says why); ``targets``
    (language -> text) is a FrozenMap: a sentence is a value."""

    sent_id: str | None
    position: int
    line: int
    org: str | None = None
    org_lang: str | None = None
    targets: Mapping[str, str] = _NO_TARGETS
    graph: UnlGraph | None = None
    error: str | None = None
    error_line: int | None = None
    warnings: tuple[str, ...] = ()
    source_name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.targets, FrozenMap):
            object.__setattr__(self, "targets",
                               FrozenMap(self.targets) if self.targets else _NO_TARGETS)


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
# Connectivity of a parsed graph (:meth:`UnlGraph.n_components`)


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
