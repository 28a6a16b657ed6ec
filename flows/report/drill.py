"""Drill-down examples, stored once per report and drawn on demand.

A change cell of a pair links to its first example words. The page holds every sentence used
by any example once (id, text, the forms of the words shown), and per label family (one per
token view; ``dep`` for head, deprel and las, which share HEAD and DEPREL) the gold labels of
those words as codes into a label list, and each system's labels only where they differ
from gold. An example is a reference ``sentence.word``; the page's script draws its window
of words (gold, S1, S2) when its block is opened. Labels are the run's (mappings applied).
"""

from __future__ import annotations

import polars as pl

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.examples import examples_sql, parse_mappings
from sysdiff.flows.report.charts import CLASS_NAMES
from sysdiff.flows.report.data import CorpusData, Read
from sysdiff.flows.report.html import esc
from sysdiff.schemas.vocabulary import DEP_VIEWS

#: Words shown on each side of an example word.
CONTEXT = 6


def family(view: str) -> str:
    """The label family of a view: dependency views share HEAD and DEPREL."""
    return "dep" if view in DEP_VIEWS else view


def shown_label(view: str, label: str, head: int | None) -> str:
    """A word's label as stored for its family: ``HEAD:DEPREL`` for dependency views."""
    return f"{head}:{label}" if view in DEP_VIEWS else str(label)


def change_name(cls: str, gold: str, l1: str, l2: str, attachment: bool) -> str:
    """``L1 → L2`` (a changed error: ``G → L1 → L2``), ``(attachment)`` for head changes."""
    name = f"{gold} → {l1} → {l2}" if cls == "changed_error" else f"{l1} → {l2}"
    return name + (" (attachment)" if attachment else "")


class Drill:
    """The example sentences of one report (see the module docstring)."""

    def __init__(self) -> None:
        self.sent_ids: dict[tuple[str, int], int] = {}
        self.sents: list[tuple[str, str]] = []
        self.forms: list[dict[int, str]] = []
        self.names: dict[tuple[str, str], int] = {}
        self.codes: dict[str, dict[str, int]] = {}
        self.gold: dict[str, dict[int, dict[int, int]]] = {}
        self.system: dict[str, dict[int, dict[int, dict[int, int]]]] = {}

    def name(self, corpus: str, system: str) -> int:
        """The index of a system (per corpus)."""
        return self.names.setdefault((corpus, system), len(self.names))

    def _sentence(self, corpus: str, sent: int, sent_id: str, text: str) -> int:
        key = (corpus, sent)
        if key not in self.sent_ids:
            self.sent_ids[key] = len(self.sents)
            self.sents.append((sent_id, text))
            self.forms.append({})
        return self.sent_ids[key]

    def _code(self, fam: str, label: str) -> int:
        codes = self.codes.setdefault(fam, {})
        return codes.setdefault(label, len(codes))

    def add(self, corpus: str, view: str, sys1: str, sys2: str,
            rows: pl.DataFrame) -> dict[tuple[str, str, str, str], list[str]]:
        """Store example rows (``examples_sql`` with a window) of ``sys1 -> sys2``; return
        the references ``sentence.word`` of each change cell (class, gold, l1, l2)."""
        fam = family(view)
        gold = self.gold.setdefault(fam, {})
        sides = [(self.system.setdefault(fam, {}).setdefault(self.name(corpus, s), {}), lab, hd)
                 for s, lab, hd in ((sys1, "l1", "head1"), (sys2, "l2", "head2"))]
        cells: dict[tuple[str, str, str, str], list[str]] = {}
        for r in rows.iter_rows(named=True):
            s = self._sentence(corpus, r["sent"], r["sent_id"], r["text"])
            cells.setdefault((r["class"], r["gold"], r["l1"], r["l2"]), []).append(
                f"{s}.{r['id']}")
            for w in r["window"] or []:
                pos = w["id"]
                self.forms[s][pos] = w["form"]
                g = self._code(fam, shown_label(view, w["gold"], w["gold_head"]))
                gold.setdefault(s, {})[pos] = g
                for labels, lab, hd in sides:
                    code = self._code(fam, shown_label(view, w[lab], w[hd]))
                    if code != g:
                        labels.setdefault(s, {})[pos] = code
        return cells

    def blob(self) -> dict:
        """The JSON the page's script reads (see the module docstring)."""
        def dense(values: dict[int, object], missing: object) -> list:
            top = max(values, default=0)
            return [values.get(i, missing) for i in range(1, top + 1)]

        return {
            "context": CONTEXT,
            "names": [name for (_, name), _ in sorted(self.names.items(), key=lambda x: x[1])],
            "sents": [[sid, text, dense(f, "")] for (sid, text), f in
                      zip(self.sents, self.forms, strict=True)],
            "labels": {fam: list(codes) for fam, codes in self.codes.items()},
            "gold": {fam: {s: dense(p, -1) for s, p in by.items()}
                     for fam, by in self.gold.items()},
            "sys": {fam: {i: {s: [x for kv in sorted(p.items()) for x in kv]
                              for s, p in by.items()} for i, by in systems.items()}
                    for fam, systems in self.system.items()},
        }


def cells_sql(cells: pl.DataFrame) -> str:
    """SQL: the word is in one of these change cells."""
    values = ", ".join(f"({lit(c)}, {lit(g)}, {lit(a)}, {lit(b)})"
                       for c, g, a, b in cells.select("class", "gold", "l1", "l2").rows())
    return f"(class, gold, l1, l2) in (select * from (values {values}))"


def pair_examples(read: Read, data: CorpusData, view: str, punct: bool, sys1: str, sys2: str,
                  cells: pl.DataFrame, per_cell: int) -> pl.DataFrame:
    """The first ``per_cell`` examples of the given change cells of a pair (one query), each
    with its window of words."""
    if cells.is_empty() or per_cell <= 0:
        return pl.DataFrame()
    options = data.of("pairs", view).filter((pl.col("sys1") == sys1)
                                            & (pl.col("sys2") == sys2))["options"]
    mappings = parse_mappings(options[0]) if options.len() else {}
    return read(examples_sql(data.corpus, view, punct, sys1, sys2, data.key_format, mappings,
                             cells_sql(cells), per_cell, None, CONTEXT))


def example_block(anchor: str, view: str, a: int, b: int, cls: str, name: str, refs: list[str],
                  count: int) -> str:
    """The collapsed block of one change cell's examples (drawn when opened)."""
    return (f'<details class="ex" id="{anchor}" data-v="{esc(view)}" data-f="{family(view)}" '
            f'data-a="{a}" data-b="{b}" data-x="{" ".join(refs)}"><summary>'
            f'<span class="{cls}">{CLASS_NAMES[cls]}</span> {esc(name)}: '
            f"{len(refs)} of {count} shown</summary></details>")
