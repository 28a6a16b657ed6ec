"""The per-sentence reader: a UNL document into :class:`UnlSentence` objects
(``read_unl``), NLization input into :class:`NlSentence` objects (``read_nl``)."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from sysdiff.schemas.errors import InputError

if TYPE_CHECKING:
    from sysdiff.schemas.formats.conllu import Hasher
    from sysdiff.schemas.formats.stable import Snapshot
from sysdiff.schemas.formats.unl.graph import _REL_HEAD, _snippet, parse_graph
from sysdiff.schemas.formats.unl.model import GraphError, NlSentence, UnlSentence
from sysdiff.schemas.formats.unl.text import _Lines, _load, clean_text

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
# NLization input


def read_nl(
    path_or_text: str | Path | Snapshot, *, lang: str | None = None, source_name: str | None = None,
    hasher: Hasher | None = None,
) -> list[NlSentence]:
    """Read NLization sentences.

    A UNL document (with ``[S`` blocks): per sentence the ``{lang}`` block (or ``{org}`` if its
    language is ``lang``); with ``lang=None`` the only target block, else the ``{org}`` text.
    Plain text: one sentence per line (an empty line is an empty sentence; trailing empty lines
    are dropped). A file's bytes also go to ``hasher`` (one read to hash and parse); a
    :class:`Snapshot` is a file read already."""
    raw, name = _load(path_or_text, source_name, hasher)
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
