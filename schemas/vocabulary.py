"""The vocabulary of sysdiff, declared once: views, change classes, ARCS classes and criteria,
punctuation defaults and the names people read. Transforms, SQL builders, ``show``,
``examples`` and the report all take them from here (METRICS 1.1, 1.4, 2.3)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sysdiff.schemas.errors import InputError

#: Change classes of a difference between two systems, by code (METRICS 1.4).
CLASSES = ("correction", "new_error", "changed_error")
CLASS_NAMES = {"correction": "Corrections", "new_error": "New errors",
               "changed_error": "Changed errors"}
#: ARCS mention classes (METRICS 2.3): correct classes are TP and TN.
ARCS_CLASSES = ("TP", "FP", "FN", "WL", "TN")
ARCS_CORRECT = ("TP", "TN")
#: Span classes (METRICS 5.2): of a key span under a system (correct, type, boundary,
#: missed) and of a spurious span (spurious where the system predicts it, else absent).
SPAN_CLASSES = ("correct", "type", "boundary", "missed", "spurious", "absent")
SPAN_CORRECT = ("correct", "absent")
#: SRL classes (METRICS 6.2): of a key argument under a system (correct, role, boundary,
#: missed) and of a spurious argument (spurious where the system predicts it, else absent);
#: of a key predicate (correct, sense, missed) and of a spurious predicate.
SRL_CLASSES = ("correct", "role", "boundary", "missed", "spurious", "absent")
PRED_CLASSES = ("correct", "sense", "missed", "spurious", "absent")
SRL_CORRECT = ("correct", "absent")
#: The two unit types of an SRL comparison (``--view`` of an srl corpus, or a role).
SRL_UNITS = ("argument", "predicate")
#: ARCS criteria: a shared antecedent (any), or the closest nominal antecedent (nom).
CRITERIA = ("any", "nom")
#: Coreference mention matching (METRICS 2.7: the CorefUD scorer's ``-a``) and singletons.
MATCH_MODES = ("exact", "partial", "head")
SINGLETON_MODES = ("keep", "drop")
#: The key's name among the systems of a corpus.
KEY_ID = "__key__"
#: Punctuation of CoNLL-X style files without UPOS: gold XPOS/POS tags (METRICS 1.1).
PTB_PUNCT = ["``", "''", ",", ".", ":", "-LRB-", "-RRB-", "#", "$"]


@dataclass(frozen=True)
class View:
    """A label function over words (METRICS 1.1).

    ``columns`` are the word fields of the value: two sources agree on a word iff all are
    equal. ``label`` is the field shown in change tables and that groups per-label counts
    (the gold DEPREL for ``head`` and ``las``). A dependency view excludes punctuation by
    default; the others include it.
    """

    name: str
    columns: tuple[str, ...]
    label: str
    score: str
    dependency: bool = False

    @property
    def default_punct(self) -> bool:
        return not self.dependency

    @property
    def punct_settings(self) -> tuple[bool, ...]:
        """Punctuation settings stored: both for dependency views, else the default."""
        return (False, True) if self.dependency else (True,)

    def score_name(self, punct: bool | None = None) -> str:
        """``UPOS``, ``LAS (no punct)``, ``UAS (punct)``: what a row's accuracy is."""
        punct = self.default_punct if punct is None else punct
        if not self.dependency:
            return self.score
        return f"{self.score} ({'punct' if punct else 'no punct'})"

    def same_sql(self, a: str, b: str) -> str:
        """SQL: sources ``a`` and ``b`` agree on a word, over relations that expose the head
        as ``hd`` and the (mapped) label as ``lab``."""
        parts = [f"{a}.{c} = {b}.{c}" for c in (("hd",) if "head" in self.columns else ())
                 + (("lab",) if self.label in self.columns else ())]
        return "(" + " and ".join(parts) + ")"


VIEWS: dict[str, View] = {v.name: v for v in (
    View("upos", ("upos",), "upos", "UPOS"),
    View("xpos", ("xpos",), "xpos", "XPOS"),
    View("feats", ("feats",), "feats", "FEATS"),
    View("lemma", ("lemma",), "lemma", "LEMMA"),
    View("head", ("head",), "deprel", "UAS", dependency=True),
    View("deprel", ("deprel",), "deprel", "LS", dependency=True),
    View("las", ("head", "deprel"), "deprel", "LAS", dependency=True),
)}
TOKEN_VIEWS = tuple(n for n, v in VIEWS.items() if not v.dependency)
DEP_VIEWS = tuple(n for n, v in VIEWS.items() if v.dependency)
#: The views of each token task.
TASK_VIEWS = {"pos": TOKEN_VIEWS, "dep": TOKEN_VIEWS + DEP_VIEWS}
#: Label fields a view can read (HEAD is a number, never mapped nor coded as a label).
LABEL_FIELDS = ("upos", "xpos", "feats", "lemma", "deprel")


def view(name: str) -> View:
    """The view called ``name``; an unknown name is an InputError naming the known ones."""
    if name not in VIEWS:
        raise InputError(f"unknown view '{name}'; expected one of {', '.join(VIEWS)}")
    return VIEWS[name]


def score_name(name: str, punct: bool | None = None) -> str:
    """What the accuracy of a view is called (see :meth:`View.score_name`)."""
    return VIEWS[name].score_name(punct)


def view_named(text: str) -> str | None:
    """The view a person means by ``text``, in any case: its name (``las``) or the name
    of its score in the tables (``UAS`` = head, ``LS`` = deprel, ``UPOS``, ``LAS (no
    punct)``); None when it names no view."""
    wanted = " ".join(text.split()).lower()
    for v in VIEWS.values():
        if wanted in (v.name, v.score.lower(), v.score_name(False).lower(),
                      v.score_name(True).lower()):
            return v.name
    return None


#: Coreference metrics as people read them (``coref_scores.metric`` stores the codes).
COREF_METRICS = {"muc": "MUC", "bcub": "B3", "ceafm": "CEAF-m", "ceafe": "CEAF-e",
                 "blanc": "BLANC", "lea": "LEA", "conll": "CoNLL", "mor": "MOR",
                 "zero": "zero"}

_DIGITS = re.compile(r"[0-9]+")
#: Digit runs are compared as numbers of up to this many digits.
NATURAL_WIDTH = 20


def natural_key(text: str) -> str:
    """Sort key of names in natural order (``A2 < A10``, ``ud2.8 < ud2.16``): digit runs
    padded with zeros. The order of system, version and corpus names wherever they are
    listed; the sandbox's SQL macro ``natural_key(s)`` is the same key."""
    return _DIGITS.sub(lambda m: m.group().rjust(NATURAL_WIDTH, "0"), text)
