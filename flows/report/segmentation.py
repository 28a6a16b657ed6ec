"""The tokenisation section of a corpus with systems tokenised otherwise than the key.

Such systems are aligned with the key on the characters of the text (METRICS 4); the section
shows how each system segments the text (CoNLL 2018 Tokens, Sentences and Words), how many
key words each pair segments differently, and the largest change cells that segmentation
causes (a key word without an aligned system word has the label ``<unaligned>``).
"""

from __future__ import annotations

import polars as pl

from sysdiff.flows.catalog import sql_literal as lit
from sysdiff.flows.report.data import Read
from sysdiff.flows.report.html import esc, pct, table_html, td
from sysdiff.schemas.vocabulary import CLASS_NAMES
from sysdiff.transforms.alignment import UNALIGNED

#: Pairs and change cells listed.
TOP_SEGMENTATION = 15


def segmentation_html(read: Read, corpus: str, view: str | None) -> str:
    """The section, or '' when every system has the key's tokenisation. ``view``: the view
    whose change cells are listed (the corpus's first)."""
    c = lit(corpus)
    systems = read(
        "select s.system, s.alignment, "
        + ", ".join(f"max(case when m.metric = '{m}' then m.f1 end) as {m.lower()}"
                    for m in ("Tokens", "Sentences", "Words"))
        + ", max(case when m.metric = 'Words' then m.gold_total - m.correct end) as missed "
        f"from systems s left join conll18 m on m.corpus = s.corpus and m.system = s.system "
        f"where s.corpus = {c} and s.role = 'system' group by all order by s.system")
    if "characters" not in systems["alignment"].to_list():
        return ""
    parts = [f'<section class="view" id="{esc(corpus)}-segmentation"><h3>{esc(corpus)}: '
             "tokenisation</h3><p class=note>systems tokenised otherwise than the key are "
             "aligned with it on the characters of the text, as the CoNLL 2018 script does; "
             f"a key word with no aligned system word is labelled <code>{esc(UNALIGNED)}</code>"
             " and is an error in every view</p>", _systems_table(systems)]
    pairs = read(f"select sys1, sys2, seg_diff, n_units from pairs where corpus = {c} "
                 f"and view = {lit(view or '')} and punct and sys1 < sys2 and seg_diff > 0 "
                 f"order by seg_diff desc, sys1, sys2 limit {TOP_SEGMENTATION}")
    if pairs.height:
        parts.append("<h4>Key words segmented differently, per pair</h4>" + table_html(
            ["S1", "S2", "key words", "%"],
            [[td(esc(r["sys1"]), "l"), td(esc(r["sys2"]), "l"), td(str(r["seg_diff"])),
              td(pct(r["seg_diff"] / max(r["n_units"], 1)))]
             for r in pairs.iter_rows(named=True)], left_cols=(0, 1)))
    cells = read(f"select sys1, sys2, class, gold, l1, l2, count from changes where "
                 f"corpus = {c} and view = {lit(view or '')} and punct and sys1 < sys2 and "
                 f"{lit(UNALIGNED)} in (l1, l2) order by count desc, sys1, sys2, gold "
                 f"limit {TOP_SEGMENTATION}")
    if cells.height:
        parts.append(f"<h4>Largest segmentation changes ({esc(view)})</h4>" + table_html(
            ["S1", "S2", "class", "gold", "S1 label", "S2 label", "words"],
            [[td(esc(r["sys1"]), "l"), td(esc(r["sys2"]), "l"),
              td(esc(CLASS_NAMES[r["class"]]), f"l {r['class']}"), td(esc(r["gold"]), "l"),
              td(esc(r["l1"]), "l"), td(esc(r["l2"]), "l"), td(str(r["count"]))]
             for r in cells.iter_rows(named=True)], left_cols=(0, 1, 3, 4, 5)))
    return "".join(parts) + "</section>"


def _systems_table(systems: pl.DataFrame) -> str:
    """Each system's alignment and its Tokens, Sentences and Words F1."""
    rows = [[td(esc(r["system"]), "l"), td(esc(r["alignment"]), "l"),
             *(td(pct(r[m])) for m in ("tokens", "sentences", "words")),
             td("" if r["missed"] is None else str(r["missed"]))]
            for r in systems.iter_rows(named=True)]
    return table_html(["system", "alignment", "Tokens F1 %", "Sentences F1 %", "Words F1 %",
                       "key words unaligned"], rows, left_cols=(0, 1))
