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

from sysdiff.schemas.formats.unl.chunks import (
    chunk_from_drafts,
    chunk_from_sentences,
)
from sysdiff.schemas.formats.unl.columns import (
    ENDPOINT_SCHEMA,
    REL_LINE,
    REL_SCHEMA,
    SENT_SCHEMA,
    UnlChunk,
    dict_codes,
    factorize,
)
from sysdiff.schemas.formats.unl.document import (
    gc_paused,
    parse_unl_document,
    read_nl,
    read_unl,
)
from sysdiff.schemas.formats.unl.graph import (
    normalise_uw,
    parse_graph,
    parse_list_format,
    parse_node,
    parse_relations,
    resolve_graph,
)
from sysdiff.schemas.formats.unl.index import (
    PIECE_BYTES,
    UnlIndex,
    index_unl,
)
from sysdiff.schemas.formats.unl.model import (
    KNOWN_RELATIONS,
    NODE_KINDS,
    NULL_UW,
    GraphError,
    NlSentence,
    UnlGraph,
    UnlNode,
    UnlRelation,
    UnlSentence,
)
from sysdiff.schemas.formats.unl.text import (
    clean_text,
)

__all__ = [
    "ENDPOINT_SCHEMA",
    "GraphError",
    "KNOWN_RELATIONS",
    "NODE_KINDS",
    "NULL_UW",
    "NlSentence",
    "PIECE_BYTES",
    "REL_LINE",
    "REL_SCHEMA",
    "SENT_SCHEMA",
    "UnlChunk",
    "UnlGraph",
    "UnlIndex",
    "UnlNode",
    "UnlRelation",
    "UnlSentence",
    "chunk_from_drafts",
    "chunk_from_sentences",
    "clean_text",
    "dict_codes",
    "factorize",
    "gc_paused",
    "index_unl",
    "normalise_uw",
    "parse_graph",
    "parse_list_format",
    "parse_node",
    "parse_relations",
    "parse_unl_document",
    "read_nl",
    "read_unl",
    "resolve_graph",
]
