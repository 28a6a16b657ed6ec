"""The streaming index of a UNL document (:func:`index_unl`, :class:`UnlIndex`): where
each sentence is, read back in columns on demand."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.unl.chunks import chunk_from_drafts, chunk_from_sentences
from sysdiff.schemas.formats.unl.columns import UnlChunk
from sysdiff.schemas.formats.unl.document import _S_OPEN, _block_draft, _Draft, read_unl
from sysdiff.schemas.formats.unl.model import UnlSentence
from sysdiff.schemas.formats.unl.text import _is_path, clean_text

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
