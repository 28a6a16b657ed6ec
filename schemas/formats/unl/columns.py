"""The columnar tables of parsed sentences (:class:`UnlChunk`) and the column
operations that parse relation lines and encode their strings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from sysdiff.schemas.formats.unl.model import NULL_UW

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


def _id_code(x: str | None) -> int:
    """A node id or scope (two ASCII letters or digits) as an integer; None is -1."""
    return -1 if x is None else ord(x[0]) << 8 | ord(x[1])


def _code_strings(codes: np.ndarray) -> pl.Series:
    """Strings of ASCII byte codes (big-endian, zero bytes dropped); -1 is null."""
    distinct = np.unique(codes)
    distinct = distinct[distinct >= 0]
    text = [bytes(b for b in int(c).to_bytes(3, "big") if b).decode("ascii") for c in distinct]
    at = np.where(codes >= 0, np.searchsorted(distinct, codes), len(text))
    return pl.Series([*text, None], dtype=_S).gather(at)


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


def byte_slices(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pl.Series:
    """The strings ``data[starts[i]:ends[i]]`` (UTF-8 bytes cut at character boundaries; an
    empty string where ``ends <= starts``): the bytes of ascending, disjoint ranges picked
    by one mask, else gathered byte by byte."""
    starts = np.asarray(starts, np.int64)
    length = np.maximum(np.asarray(ends, np.int64) - starts, 0)
    offsets = np.zeros(starts.size + 1, np.int64)
    np.cumsum(length, out=offsets[1:])
    nonempty = length > 0
    s0, ln = starts[nonempty], length[nonempty]
    if not s0.size:
        picked = np.zeros(0, np.uint8)
    elif np.all(s0[1:] >= s0[:-1] + ln[:-1]):
        gaps = np.diff(s0, prepend=0) - np.concatenate([[0], ln[:-1]])
        counts = np.empty(2 * s0.size + 1, np.int64)
        counts[0:-1:2], counts[1::2] = gaps, ln
        counts[-1] = data.size - s0[-1] - ln[-1]
        flags = np.zeros(counts.size, bool)
        flags[1::2] = True
        picked = data[np.repeat(flags, counts)]
    else:
        first = np.repeat(offsets[:-1][nonempty] - s0, ln)
        picked = data[np.arange(int(offsets[-1])) - first]
    arr = pa.LargeStringArray.from_buffers(starts.size, pa.py_buffer(offsets),
                                           pa.py_buffer(picked.tobytes()))
    return pl.Series(arr)


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


#: White space that :func:`_normalise_plain` changes (in a stripped string): two in a row,
#: other than a space, or next to ``()<>,=;``.
_ODD_SPACE = r"\s\s|[^\S ]|\s[()<>,=;]|[()<>,=;]\s"


def _normalised(x: pl.Series) -> pl.Series:
    """:func:`_normalise_plain` of stripped strings in columns: only the strings with white
    space it changes are rewritten (each distinct one once)."""
    odd = x.str.contains(_ODD_SPACE)
    if not odd.any():
        return x
    idx = odd.arg_true()
    u = x.gather(idx).unique()
    fixed = (u.str.replace_all(r"\s+", " ").str.replace_all(_WS_PUNCT, "${1}")
             .str.strip_chars())  # fmt: skip
    return x.scatter(idx, x.gather(idx).replace_strict(u, fixed))


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
