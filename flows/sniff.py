"""What the head of an input file says, before anything reads it: that it is readable text
(:func:`read_head`), and the task its format implies (:func:`infer_task`: ``--task`` left
out)."""

from __future__ import annotations

import re
from pathlib import Path

from sysdiff.schemas.errors import InputError
from sysdiff.schemas.formats.stable import without_bom

HEAD_BYTES = 1 << 20  # the head of a file that format detection reads


def read_head(path: Path, expected: str) -> tuple[bytes, bool]:
    """The first :data:`HEAD_BYTES` of an input file, and whether that is the whole file;
    a missing, unreadable, empty or binary file is an InputError (``expected``: what it
    should hold)."""
    if not path.exists():
        raise InputError("no such file", path)
    if not path.is_file():
        raise InputError("not a regular file" + ("; expected a file, got a folder"
                                                 if path.is_dir() else ""), path)
    try:
        if hasattr(path, "read_range"):  # an object: one ranged request, no read-ahead
            size = path.size()  # (a range of an empty object is refused)
            data = path.read_range(0, min(size, HEAD_BYTES + 1)) if size else b""
        else:
            with path.open("rb") as f:
                data = f.read(HEAD_BYTES + 1)
    except OSError as e:
        raise InputError(f"cannot read the file: {e.strerror}", path) from None
    head, whole = data[:HEAD_BYTES], len(data) <= HEAD_BYTES
    head = without_bom(head)  # text encoding, not content: every reader drops it too
    if re.search(rb"\S", head) is None and whole:
        raise InputError(f"file is empty; expected {expected}", path)
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError("binary data (NUL byte); expected a UTF-8 text file", path,
                         head[:nul].count(b"\n") + 1)
    return head, whole


#: What a key of unknown task may be (in messages).
ANY_KEY = ("a key file (CoNLL-U, CoNLL-X, word<TAB>tag, CoNLL-2003, UniversalNER, CoNLL-2012, "
           "CorefUD, JSON lines or UNL)")
#: The task of each input format that belongs to one task only.
FORMAT_TASKS = {"conll2012": "coref", "corefud": "coref", "jsonlines": "coref", "unl": "unl",
                "conll2003": "ner", "uner": "ner"}
_UNL = re.compile(r"^\s*(\[S[:\]]|\[D[\s\]]|\{unl[:}]|\{org[:}])", re.M | re.I)
_BIO = re.compile(r"^(O|[BIESLU]-\S.*)$")


def infer_task(key: str | Path, fmt: str | None = None) -> tuple[str, str] | None:
    """The task a key's format implies, and what showed it (for a note): CoNLL-U/CoNLL-X
    with heads -> dep, without -> pos; CorefUD (``Entity=``), CoNLL-2012, JSON lines ->
    coref; UNL -> unl; a BIO-tagged word<TAB>tag file, CoNLL-2003 or UniversalNER -> ner;
    another word<TAB>tag file -> pos; CoNLL-U with predicate and argument columns, CoNLL-2009
    or CoNLL-2005 -> srl. Read from the first MB of the key; None when the
    format tells no task (the caller refuses it: never a silent ``dep``)."""
    path = key if hasattr(key, "url") else Path(key)
    head, whole = read_head(path, ANY_KEY)
    text, cut = head.decode("utf-8", errors="replace").lstrip("\ufeff"), not whole
    found = _task_of_text(text, None, cut) or (_task_of_text(text, fmt, cut) if fmt else None)
    if found is None and fmt in FORMAT_TASKS:
        found = FORMAT_TASKS[fmt], f"format {fmt}"
    return found


def _task_of_text(text: str, fmt: str | None, cut: bool) -> tuple[str, str] | None:
    """(task, why) from the head of a key (``cut``: its last line may be incomplete), or
    None."""
    if fmt is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if _UNL.search(text):
            return "unl", "a UNL document"
        if first.startswith("{"):
            return "coref", "JSON lines (coreference)"
        if re.search(r"^#\s*begin document", text, re.M):
            return "coref", "CoNLL-2012 (#begin document)"
    rows = [ln.split("\t") for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    rows = rows[:-1] if cut else rows
    if not rows:
        return None
    width = len(rows[0])
    if width == 10 and fmt in (None, "conllu", "conllx"):
        if fmt is None and ("Entity=" in text or re.search(r"^# global\.Entity", text, re.M)):
            return "coref", "CorefUD (Entity= in MISC)"
        words = [r for r in rows if len(r) == 10 and r[0].isdigit()]
        heads = any(r[6] not in ("_", "") for r in words)
        return ("dep", "CoNLL-U/CoNLL-X with heads") if heads else \
            ("pos", "CoNLL-U/CoNLL-X without heads (HEAD is '_')")
    if width == 2 and fmt in (None, "tsv"):
        tags = {r[1].strip() for r in rows if len(r) == 2}
        if tags and all(_BIO.match(t) for t in tags):
            return "ner", "word<TAB>tag with BIO tags"
        return "pos", "word<TAB>tag (not BIO tags)"
    if fmt is None and width == 5 and rows[0][0].isdigit():
        return "ner", "UniversalNER (ID word tag - annotator)"
    if fmt is None and (width == 4 or (width == 1 and len(rows[0][0].split(" ")) == 4)):
        return "ner", "CoNLL-2003 (word POS chunk tag)"
    return _srl_format(rows, width, fmt)


#: Start-End tags of CoNLL-2005 argument columns (``(A0*``, ``*``, ``*)``).
_SE_TAG = re.compile(r"^(\([^*()\s]+)*\*(\))*$")


def _srl_format(rows: list[list[str]], width: int, fmt: str | None) -> tuple[str, str] | None:
    """(srl, why) for a key in an SRL format: CoNLL-U with predicate and argument columns
    (11 or more), CoNLL-2009 (14 or more), or CoNLL-2005 columns of Start-End tags."""
    first = rows[0]
    if fmt in (None, "conllu", "conll09") and width >= 11 and first[0].isdigit():
        return "srl", ("CoNLL-2009" if width >= 14 and not first[6].isdigit() else
                       "CoNLL-U with predicate and argument columns")
    cells = [c for r in rows[:50] for c in " ".join(r).split()[1:]]
    tags = fmt in (None, "conll05", "props") and cells and all(
        _SE_TAG.match(c) or c == "-" or c.isalpha() for c in cells)
    if tags and any("*" in c for c in cells):
        return "srl", "CoNLL-2005 Start-End tags"
    return None
