"""Parsing one sentence's graph: nodes, table-format relations, the list format,
scope resolution and node-id unification."""

from __future__ import annotations

import re
from functools import lru_cache

from sysdiff.schemas.formats.unl.model import NULL_UW, GraphError, UnlGraph, UnlNode, UnlRelation
from sysdiff.schemas.formats.unl.text import _Lines

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


def _atomic(pattern: str) -> str:
    """``pattern`` matched once, never backtracked into: what a possessive quantifier does
    (``X*+`` is ``(?>X*)``), written as an atomic group because Python 3.11.0-3.11.2 match
    lookarounds inside possessive repeats wrongly (``(?:a|:(?!0))*+`` matches ``:0``)."""
    return f"(?>{pattern})"


_NO_PARENS = r'[^()"]'


def _nested(depth: int) -> str:
    """Text in parentheses, without quotes, nested at most ``depth`` levels."""
    if depth == 1:
        inside = _atomic(_NO_PARENS + "*")
    else:
        inside = _atomic(f"(?:{_atomic(_NO_PARENS + '+')}|{_nested(depth - 1)})*")
    return rf"\({inside}\)"


# Fast path: headword without quotes/brackets, an optional constraint list nested at most three
# levels, then the suffix. Anything else goes through :func:`_split_head`.
_NOT_HEAD_END = r'[^()"\[\]{}:.]*'
_HEAD = _atomic(_NOT_HEAD_END) + _atomic(
    rf'(?:(?:\.(?!@)|:(?![0-9A-Za-z]{{2}}(?:\.@|$))){_atomic(_NOT_HEAD_END)})*')
_CONSTRAINTS = f"(?:{_nested(3)})?"
_ATTRS = _atomic(r"(?:\.@" + _atomic(r"[\w\-]+") + ")*")
_NODE_FAST = re.compile(
    rf"(?P<uw>{_HEAD}{_CONSTRAINTS})(?::(?P<id>[0-9A-Za-z]{{2}}))?"
    rf"(?P<attrs>{_ATTRS})"
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
_NO_PARENS_COMMA = r'[^(),"]+'
# Fast path: no quotes, at most two levels of nested parentheses, a top-level comma.
_ARG = _atomic(f"(?:{_atomic(_NO_PARENS_COMMA)}|{_nested(3)})*")
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


def parse_graph(text: str, base_line: int = 1) -> UnlGraph:
    """Parse the body of a ``{unl}`` block (table or list format)."""
    if "[W]" in text:
        g = parse_list_format(text, base_line)
        return resolve_graph(list(g.relations), g.nodes)
    return resolve_graph(parse_relations(text, base_line))
