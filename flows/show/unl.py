"""The UNL scores of a corpus (``show unl``, and the headline of a UNL corpus)."""

from __future__ import annotations

from pathlib import Path

from sysdiff.flows.queries import query_rows
from sysdiff.flows.rows import Rows
from sysdiff.flows.show.common import pct, pct_ci


def _unl_rows(root: Path, c: str) -> Rows:
    return query_rows(root, f"""select system, task, n_expected, n_returned, n_correct,
        {pct('precision')} as "precision %", {pct('recall')} as "recall %",
        {pct_ci('f1', 'F %')}, {pct('rel_f1')} as "relations F %",
        {pct('uw_f1')} as "UWs F %", {pct('attr_f1')} as "attributes F %",
        {pct('word_f1')} as "words F %", options
        from unl_scores where corpus = {c} order by natural_key(system)""")
