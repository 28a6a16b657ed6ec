"""The streaming index of a UNL document (:func:`index_unl`, :class:`UnlIndex`): where
each sentence is, read back in columns on demand."""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import StableFile, Stamp, object_url
from sysdiff.schemas.formats.unl.chunks import (
    BLOCK_SCHEMA,
    chunk_from_blocks,
    chunk_from_sentences,
    drafts_frame,
)
from sysdiff.schemas.formats.unl.columns import UnlChunk, _first_in, byte_slices
from sysdiff.schemas.formats.unl.document import (
    _S_OPEN,
    _block_draft,
    _Draft,
    parse_unl_document,
)
from sysdiff.schemas.formats.unl.model import UnlSentence
from sysdiff.schemas.formats.unl.text import _is_path, clean_text
from sysdiff.schemas.frozen import read_only

if TYPE_CHECKING:
    import pyarrow as pa

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


@dataclass(frozen=True)
class _Source:
    """The bytes of a UNL document as a value: a file (its path, and the size and ``stamp``
    of the version indexed), read by ranges, or a text given directly (``data``).

    Every range of a file is read through a :class:`StableFile` that must find the version
    indexed (``stamp``), else an InputError (the file changed while it was being read). No
    descriptor is kept, so a source (and an index) can go to another process."""

    path: Path | None
    name: str | None
    data: bytes | None
    size: int
    stamp: Stamp | None

    def read(self, start: int, end: int) -> bytes:
        if self.data is not None:
            return self.data[start:end]
        with StableFile(self.path, expect=self.stamp) as f:  # type: ignore[arg-type]
            data = f.read_at(start, end - start)
            f.check()
        return data

    def decode(self, start: int, data: bytes) -> str:
        if self.data is not None:
            return data.decode("utf-8", "surrogatepass")
        return data.decode("utf-8-sig" if start == 0 else "utf-8")

    def check_unchanged(self) -> None:
        if self.path is not None:
            with StableFile(self.path, expect=self.stamp) as f:  # type: ignore[arg-type]
                f.check()


class _IndexPass:
    """The one read of :func:`index_unl`: a file through one live :class:`StableFile`,
    read in order (its hash and stamp come from that read), closed when the pass ends;
    ``source``: the document as a value, for the index."""

    def __init__(self, path_or_text: str | Path, source_name: str | None):
        self._file: StableFile | None = None
        if object_url(path_or_text) or _is_path(path_or_text):
            path = path_or_text if object_url(path_or_text) else Path(path_or_text)
            self._file = StableFile(path)
            self.source = _Source(path, source_name or str(path), None, self._file.size,
                                  self._file.stamp)  # fmt: skip
        else:
            data = str(path_or_text).encode("utf-8", "surrogatepass")
            self.source = _Source(None, source_name, data, len(data), None)

    def read(self, start: int, end: int) -> bytes:
        if self._file is not None:
            return self._file.read_at(start, end - start)
        return self.source.read(start, end)

    def pieces(self, size: int) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) pieces of about ``size`` bytes, each cut right before a ``[S``;
        a file is read once, in order (checked unchanged at its end)."""
        pos = 0
        if self._file is not None:
            for piece in self._file.chunks(size, _before_block):
                yield pos, piece
                pos += len(piece)
            return
        total = self.source.size
        while pos < total:
            end = min(pos + size, total)
            while True:
                data = self.read(pos, end)
                cut = len(data) if end >= total else data.rfind(b"[S", 1)
                if cut > 0:
                    break
                end = min(end + size, total)
            yield pos, data[:cut]
            pos += cut

    @property
    def sha256(self) -> str:
        """SHA-256 of the document's bytes (a file's: as this pass read them)."""
        if self._file is not None:
            return self._file.sha256
        return hashlib.sha256(self.source.data or b"").hexdigest()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _before_block(buf: bytes) -> int:
    """A piece boundary: right before the last ``[S`` of ``buf`` (0: none after its start)."""
    return max(buf.rfind(b"[S", 1), 0)


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
        entity or CR): the openings, their offsets, lines and ids come from the bytes in
        columns, as ``_S_OPEN.finditer`` finds them (a ``[S:`` matches up to the first
        ``]``; a ``[S`` inside a match is no opening)."""
        data = np.frombuffer(raw, np.uint8)
        cand = _find_bytes(data, b"[S")
        nxt = data[np.minimum(cand + 2, max(data.size - 1, 0))] if cand.size else cand
        inside = cand + 2 < data.size
        colon, shut = inside & (nxt == 58), inside & (nxt == 93)
        ends = np.flatnonzero(data == 93)
        i = np.searchsorted(ends, cand + 3)
        closed = colon & (i < ends.size)
        end = np.where(shut, cand + 3,
                       np.where(closed, ends[np.minimum(i, max(ends.size - 1, 0))] + 1
                                if ends.size else -1, -1))
        ok = end > 0
        at, end, colon = cand[ok], end[ok], colon[ok]
        first = np.ones(at.size, bool)
        first[1:] = end[1:] != end[:-1]  # a [S inside an earlier match ends with it
        at, end, colon = at[first], end[first], colon[first]
        newlines = np.flatnonzero(data == 10)
        self.starts.extend((at + offset).tolist())
        self.lines.extend((np.searchsorted(newlines, at) + self.newlines + 1).tolist())
        id_from, id_to = np.where(colon, at + 3, at), np.where(colon, end - 1, at)
        ids = byte_slices(data, id_from, id_to)
        spaced = ids.str.contains(r"[\x00-\x20]").arg_true().to_numpy()
        ids = ids.replace("", None).to_list()
        for k in spaced.tolist():  # ids with white space: the first word, as str.split
            parts = (ids[k] or "").split()
            ids[k] = parts[0] if parts else None
        self.ids.extend(ids)
        keep = text.find("[S:", int(end[-1]) if end.size else 0)
        if keep < 0:
            self.newlines += newlines.size
            return
        self.newlines += int(np.searchsorted(newlines, keep))
        self.buf = text[keep:]
        self.buf_raw = [offset + keep + i for i in _find_all(self.buf, "[S")]


@dataclass(frozen=True)
class UnlIndex:
    """Where each sentence of a UNL document is: ids (``id_column``, an Arrow string
    array), lines and the byte offsets of the ``[S`` blocks (``sentences`` instead, parsed,
    for a document without ``[S`` blocks), and the SHA-256 of the bytes read. :meth:`read`
    parses any of them into a :class:`UnlChunk`. A value: read-only arrays, tuples, the
    source a record (a task parameter, it may go to another process)."""

    source: _Source
    id_column: pa.Array
    lines: np.ndarray
    starts: np.ndarray | None = None
    sentences: tuple[UnlSentence, ...] | None = None
    sha256: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", read_only(self.lines))
        if self.starts is not None:
            object.__setattr__(self, "starts", read_only(self.starts))
        if self.sentences is not None:
            object.__setattr__(self, "sentences", tuple(self.sentences))

    def __reduce__(self):  # unpickled arrays would be writable again
        return (UnlIndex, (self.source, self.id_column, self.lines, self.starts,
                           self.sentences, self.sha256))

    def __len__(self) -> int:
        return len(self.id_column)

    @property
    def ids(self) -> list[str | None]:
        """The sentence ids as a list (a new one each time; :meth:`id_series` costs
        nothing)."""
        return self.id_series().to_list()

    def id_series(self) -> pl.Series:
        """The sentence ids as a polars column (no copy)."""
        return pl.Series("id", self.id_column, dtype=pl.String)

    @property
    def name(self) -> str | None:
        return self.source.name

    def read(self, rows: Sequence[int] | np.ndarray, connectivity: bool = True) -> UnlChunk:
        """The sentences ``rows`` (ascending document positions) in columns (without
        ``connectivity``, ``n_components`` is null when it would cost a pass)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.sentences is not None:
            return chunk_from_sentences([self.sentences[k] for k in rows.tolist()])
        return chunk_from_blocks(self.blocks(rows), connectivity)

    def _runs(self, rows: np.ndarray) -> list[tuple[int, int, int, int]]:
        """(first, end, byte start, byte end) of each run of consecutive rows."""
        if rows.size and (np.any(np.diff(rows) <= 0) or rows[0] < 0 or rows[-1] >= len(self)):
            raise ValueError("rows must be ascending positions in the document")
        self.source.check_unchanged()
        starts, n, out = self.starts, len(self), []
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        for run in np.split(rows, breaks) if rows.size else []:
            a, b = int(run[0]), int(run[-1]) + 1
            lo, hi = int(starts[a]), int(starts[b]) if b < n else self.source.size  # type: ignore[index]
            out.append((a, b, lo, hi))
        return out

    def blocks(self, rows: np.ndarray) -> pl.DataFrame:
        """The blocks of the given sentences split into :data:`BLOCK_SCHEMA` columns: each
        contiguous run read at once, its blocks split in columns (:func:`split_blocks`)."""
        ids = self.id_series()
        frames = [split_blocks(self.source.read(lo, hi), self.starts[a:b] - lo,  # type: ignore[index]
                               ids[a:b], self.lines[a:b], a, self.name)
                  for a, b, lo, hi in self._runs(np.asarray(rows, np.int64))]
        return pl.concat(frames) if frames else pl.DataFrame(schema=BLOCK_SCHEMA)

    def drafts(self, rows: np.ndarray) -> list[_Draft]:
        """Re-read and split the blocks of the given sentences one by one (the reference
        of :meth:`blocks`)."""
        out, ids = [], self.ids
        for a, b, lo, hi in self._runs(np.asarray(rows, np.int64)):
            text = clean_text(self.source.decode(lo, self.source.read(lo, hi)))
            opens = list(_S_OPEN.finditer(text))
            if len(opens) != b - a or opens[0].start() != 0:
                raise InputError("file changed while it was being read; run again",
                                 path=self.name)  # fmt: skip
            for k, m in enumerate(opens):
                limit = opens[k + 1].start() if k + 1 < len(opens) else len(text)
                lines = partial(_local_line, text, m.start(), int(self.lines[a + k]))
                d = _block_draft(text, m, a + k, limit, lines, self.name)
                if d.sent_id != ids[a + k]:
                    raise InputError("file changed while it was being read; run again",
                                     path=self.name)  # fmt: skip
                out.append(d)
        return out


def _local_line(text: str, start: int, line: int, offset: int) -> int:
    return line + text.count("\n", start, offset)


# ---- blocks split in columns
#
# A block (from its ``[S`` to the next one) is split in columns when it is *regular*: its
# bytes need no cleaning (no CR, ``&`` or ``<br``), it has a ``[/S]``, and between the head
# and the ``[/S]`` there are only ``{tag}...{/tag}`` blocks (matching tags, no braces inside)
# and white space, with at most one ``{unl}`` block (lower case, no attributes). Its draft is
# then what :func:`_block_draft` gives with no warning: the ``{unl}`` content is the body.
# Any other block is split by :func:`_block_draft` itself.

#: Between the head and ``[/S]``: tag blocks and white space only.
_BLOCKS_ONLY = r"^\s*(?:\{[A-Za-z]+(?::[^{}]*)?\}[^{}]*\{/[A-Za-z]+\}\s*)*$"
_TAG = r"\{/?[A-Za-z]+"
#: Before ``{unl}``, the usual: white space, at most one ``{org}`` block.
_PLAIN_PRE = r"^\s*(?:\{org(?::[^{}]*)?\}[^{}]*\{/org\}\s*)?$"


def _find_bytes(data: np.ndarray, pattern: bytes) -> np.ndarray:
    """Start offsets of every occurrence of ``pattern`` in ``data`` (ascending)."""
    k = len(pattern)
    at = np.flatnonzero(data[: max(data.size - k + 1, 0)] == pattern[0])
    for i in range(1, k):
        at = at[data[at + i] == pattern[i]]
    return at


def _has_in(cands: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per range ``[lo, hi)``: is there a candidate."""
    return _first_in(cands, lo, hi)[0]


def split_blocks(raw: bytes, starts: np.ndarray, ids: Sequence[str | None] | pl.Series,
                 lines: np.ndarray, first: int, name: str | None) -> pl.DataFrame:
    """The consecutive ``[S`` blocks of ``raw`` (at byte offsets ``starts``, the first at 0;
    ids, lines and the position of the first from the index) as :data:`BLOCK_SCHEMA`
    columns: regular blocks in columns, the others by :func:`_block_draft`."""
    n, size = starts.size, len(raw)
    data = np.frombuffer(raw, np.uint8)
    lo = starts.astype(np.int64)
    hi = np.append(lo[1:], size)
    last = max(size - 1, 0)
    # bytes: the head, nothing to clean, a [/S]; where {unl} and {/unl} are
    head = data[np.minimum(lo + 2, last)]
    ok = (data[lo] == 91) & (data[np.minimum(lo + 1, last)] == 83) & ((head == 58) | (head == 93))
    for needle in (b"\r", b"&"):
        ok &= ~_has_in(_find_bytes(data, needle), lo, hi)
    br = _find_bytes(data, b"<")
    br = br[br + 2 < size]
    ok &= ~_has_in(br[((data[br + 1] | 32) == 98) & ((data[br + 2] | 32) == 114)], lo, hi)
    found, head_end = _first_in(_find_bytes(data, b"]"), lo, hi)
    ok &= found
    head_end = head_end + 1
    found, close = _first_in(_find_bytes(data, b"[/S]"), head_end, hi)
    ok &= found
    u_found, u_open = _first_in(_find_bytes(data, b"{unl}"), head_end, close)
    c_found, u_close = _first_in(_find_bytes(data, b"{/unl}"), u_open, close)
    body_from = u_open + 5
    braces = np.flatnonzero((data == 123) | (data == 125))
    ok &= ~u_found | (c_found & ~_has_in(braces, body_from, u_close))
    nl = _find_bytes(data, b"\n")
    body_line = lines + np.searchsorted(nl, body_from) - np.searchsorted(nl, lo)
    # text around the {unl} block: the id; only tag blocks and white space, with matching
    # tags and no other {unl} block
    post_from = np.where(u_found, u_close + 6, close)
    sid = ids if isinstance(ids, pl.Series) else pl.Series(list(ids), dtype=pl.String)
    frame = pl.DataFrame({
        "colon": head == 58, "sid": sid,
        "raw_id": byte_slices(data, np.minimum(lo + 3, head_end - 1), head_end - 1),
        "pre": byte_slices(data, head_end, np.where(u_found, u_open, close)),
        "post": byte_slices(data, post_from, close)})  # fmt: skip
    sid_ok = (pl.when(pl.col("colon")).then(pl.col("raw_id").str.strip_chars())
              .otherwise(pl.lit("")).replace("", None).eq_missing(pl.col("sid")))
    plain = frame.select(sid_ok & pl.col("pre").str.contains(_PLAIN_PRE)
                         & pl.col("post").str.contains(r"^\s*$"))[:, 0]
    regular = ok & plain.to_numpy()
    other = np.flatnonzero(ok & ~regular)
    if other.size:  # target-language blocks and the like: the general check
        checks = [sid_ok]
        for part in ("pre", "post"):
            tags = pl.col(part).str.extract_all(_TAG)
            opens = tags.list.gather_every(2).list.eval(pl.element().str.slice(1)).list.join(",")
            closes = (tags.list.gather_every(2, 1).list.eval(pl.element().str.slice(2))
                      .list.join(","))  # fmt: skip
            checks += [pl.col(part).str.contains(_BLOCKS_ONLY), opens == closes,
                       ~pl.col(part).str.contains(r"\{(?i:unl)[:}]")]
        regular[other] = frame[other].select(pl.all_horizontal(checks))[:, 0].to_numpy()
    has_body = u_found & regular
    body = byte_slices(data, body_from, np.where(has_body, u_close, 0))
    out = pl.DataFrame({
        "position": np.arange(first, first + n, dtype=np.int64), "sent_id": sid,
        "line": lines.astype(np.int64), "error": pl.repeat(None, n, dtype=pl.String, eager=True),
        "error_line": pl.repeat(None, n, dtype=pl.Int64, eager=True),
        "warnings": pl.Series([[]], dtype=pl.List(pl.String)).new_from_index(0, n),
        "body": pl.select(pl.when(pl.Series(has_body)).then(body))[:, 0],
        "body_line": np.where(has_body, body_line, 0).astype(np.int64)}, schema=BLOCK_SCHEMA)
    irregular = np.flatnonzero(~regular)
    if not irregular.size:
        return out
    drafts = [_slow_draft(raw[lo[k]:hi[k]], int(lines[k]), first + int(k), ids[k], name)
              for k in irregular.tolist()]  # the irregular blocks only
    return pl.concat([out.filter(pl.Series(regular)), drafts_frame(drafts)]).sort("position")


def _slow_draft(raw: bytes, line: int, position: int, sent_id: str | None,
                name: str | None) -> _Draft:
    """The draft of one irregular block (its bytes, from ``[S`` to the next one)."""
    text = clean_text(raw.decode("utf-8"))
    opens = list(_S_OPEN.finditer(text))
    if len(opens) != 1 or opens[0].start() != 0:
        raise InputError("file changed while it was being read; run again", path=name)
    d = _block_draft(text, opens[0], position, len(text), partial(_local_line, text, 0, line),
                     name)  # fmt: skip
    if d.sent_id != sent_id:
        raise InputError("file changed while it was being read; run again", path=name)
    return d


def index_unl(path_or_text: str | Path, *, source_name: str | None = None,
              piece_bytes: int = PIECE_BYTES) -> UnlIndex:
    """Index a UNL document (a path, or the text itself) in one streaming pass, which also
    hashes it (``UnlIndex.sha256``: the SHA-256 of the file's bytes); memory is a few pieces
    plus three numbers per sentence. The same InputErrors as :func:`read_unl`."""
    src = _IndexPass(path_or_text, source_name)
    try:
        return _index(src, piece_bytes)
    finally:
        src.close()


def _id_column(ids: Sequence[str | None]) -> pa.Array:
    """Sentence ids as an Arrow string array (polars' string views: to polars without a
    copy)."""
    return pl.Series(ids, dtype=pl.String).to_arrow(compat_level=pl.CompatLevel.newest())


def _index(src: _IndexPass, piece_bytes: int) -> UnlIndex:
    """The index pass of :func:`index_unl` over an opened source."""
    doc = src.source
    scan, regular, bad_line, newlines = _OpenScan(), True, None, 0
    bom = 3 if doc.path is not None and src.read(0, 3) == b"\xef\xbb\xbf" else 0
    for offset, raw in src.pieces(piece_bytes):
        if doc.path is not None and b"\x00" in raw:
            raise InputError("binary file: expected a UNL document (text)", path=doc.name)
        if bad_line is None:
            try:
                text = doc.decode(offset, raw)
            except UnicodeDecodeError as exc:
                at = exc.start if offset == 0 else max(0, exc.start - bom)
                bad_line = newlines + raw[:at].count(b"\n") + 1
            else:
                regular = regular and scan.feed(clean_text(text), offset, raw)
        newlines += raw.count(b"\n")
    if bad_line is not None:
        raise InputError("not UTF-8 text: expected a UNL document", path=doc.name,
                         line=bad_line)  # fmt: skip
    if not regular or not scan.starts:  # parsed whole, from the same version of the file
        text = doc.decode(0, src.read(0, doc.size))
        doc.check_unchanged()
        sentences = tuple(parse_unl_document(clean_text(text), doc.name))
        return UnlIndex(doc, _id_column([s.sent_id for s in sentences]),
                        np.array([s.line for s in sentences], np.int64), None, sentences,
                        src.sha256)
    return UnlIndex(doc, _id_column(scan.ids), np.array(scan.lines, np.int64),
                    np.array(scan.starts, np.int64), sha256=src.sha256)
