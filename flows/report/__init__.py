"""One self-contained HTML report per warehouse: tables, charts, drill-down (issues #7, #11).

Token tasks get one section per view (``tokens``); a corpus with coreference rows gets a
coreference section (``coref``), one with UNL rows a UNL section (``unl``), a ner corpus a
span section (``spans``), an srl corpus a semantic-role section (``srl``), one with a
version history a history section (``history``), and one with systems tokenised otherwise
than the key a tokenisation section (``segmentation``).
Figures come from ``transforms.summaries``; ``data`` holds the bounded queries, ``drill``
the examples (stored once, drawn on demand), ``charts`` and ``html`` the building blocks.
Every name and label is HTML-escaped; the page has no external resources (inline CSS, JS,
SVG and JSON).
"""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.render import p_resolution
from sysdiff.flows.report.coref import coref_html
from sysdiff.flows.report.data import Read, corpora, load_corpus, reader, tables_in
from sysdiff.flows.report.drill import Drill
from sysdiff.flows.report.history import history_html
from sysdiff.flows.report.html import Ids, esc, json_script
from sysdiff.flows.report.segmentation import segmentation_html
from sysdiff.flows.report.spans import spans_html
from sysdiff.flows.report.srl import srl_html
from sysdiff.flows.report.tokens import view_html
from sysdiff.flows.report.unl import unl_html
from sysdiff.flows.report_assets import CSS, JS
from sysdiff.flows.run_record import p_resolution_of

__all__ = ["build_report", "corpus_html", "page"]


def corpus_html(read: Read, corpus: str, per_cell: int, drill: Drill,
                ids: Ids) -> tuple[str, list[str]]:
    """The section of one corpus and its anchors (history, token views, coreference, UNL,
    spans)."""
    data = load_corpus(read, corpus)
    views = data.views()
    empty = data.not_evaluated()
    tables = tables_in(read)
    history = history_html(read, corpus, tables, skip=empty)
    segmentation = segmentation_html(read, corpus, views[0] if views else None)
    body = "".join(view_html(read, data, v, per_cell, drill, ids) for v in views)
    coref, unl = coref_html(read, corpus, tables), unl_html(read, corpus, tables)
    spans = spans_html(read, corpus, tables)
    srl = srl_html(read, corpus, tables)
    anchors = ([f"{corpus}-history"] * bool(history)
               + [f"{corpus}-segmentation"] * bool(segmentation)
               + [f"{corpus}-{v}" for v in views]
               + [f"{corpus}-coref"] * bool(coref) + [f"{corpus}-unl"] * bool(unl)
               + [f"{corpus}-spans"] * bool(spans) + [f"{corpus}-srl"] * bool(srl))
    n = len(data.systems)
    systems = ", ".join(esc(s) for s in data.systems)
    listing = (f'<p class="note">{n} systems: {systems}</p>' if n <= 12 else
               f'<details class="note"><summary>{n} systems</summary>{systems}</details>')
    if empty:
        listing += (f'<p class="note">not evaluated: {", ".join(empty)} (every label of the '
                    "key is <code>_</code>: no data, no score)</p>")
    return (f'<section class="corpus" id="{esc(corpus)}"><h2>Corpus {esc(corpus)}</h2>'
            f"{listing}{history}{segmentation}{body}{coref}{unl}{spans}{srl}</section>",
            anchors)


def page(title: str, body: str, anchors: list[str], data: dict) -> str:
    """The whole document (no external resources); ``data`` is the examples' JSON."""
    toc = "".join(f'<a href="#{esc(a)}">{esc(a)}</a>' for a in anchors)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f'<header class="top"><h1>{esc(title)}</h1><p>Comparative evaluation '
            "(Tuggener, EACL 2017): scores, pairwise differences, change classes, "
            "per-label accuracy, oracles, significance.</p></header>"
            f'<nav class="toc">{toc}</nav><main>{body}</main><div id="tip" hidden></div>'
            f'{json_script("sysdiff-examples", data)}<script>{JS}</script></body></html>')


def build_report(root: Path, corpus: str | None, out: Path,
                 examples_per_cell: int = 3) -> Path:
    """Write the HTML report of ``corpus`` (or of every corpus) to ``out``; return ``out``."""
    read, close = reader(root)
    try:
        ids, drill = Ids(), Drill()
        sections, anchors = [], []
        for name in corpora(read, corpus):
            with p_resolution(*p_resolution_of(root, name)):
                html_, views = corpus_html(read, name, examples_per_cell, drill, ids)
            sections.append(html_)
            anchors += views
    finally:
        close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    title = "sysdiff report" + (f": {corpus}" if corpus else "")
    out.write_text(page(title, "".join(sections), anchors, drill.blob()), encoding="utf-8")
    return out
