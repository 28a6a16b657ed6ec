"""UNL F-measure (METRICS 3): UNLization and NLization scoring, corpus scores, version comparison.

Pure functions over parsed sentences (``sysdiff.schemas.formats.unl``) and polars frames.
Parsing and the
per-graph verdicts (RETURNED) are computed per sentence in Python; items are exploded into one
polars table ``(sent, side, kind, item)`` and all set/multiset arithmetic is group-bys.
Discrepancies are exact: integer numerators/denominators, reduced fraction strings, and the
``D < threshold`` tests by integer cross-multiplication.
"""

from __future__ import annotations

from sysdiff.transforms.unl.alignment import (
    Alignment,
    align_ids,
    align_sentences,
    aligned_partners,
)
from sysdiff.transforms.unl.compare import (
    compare_partials,
    compare_versions,
    compared_columns,
    finish_compare,
    version_matrix,
)
from sysdiff.transforms.unl.items import (
    ItemCounts,
    Items,
    count_items,
    count_table,
    dict_encode,
    error_digests,
    item_counts,
    item_digests,
    item_sums,
    unl_items,
)
from sysdiff.transforms.unl.options import (
    ACTUAL,
    EXPECTED,
    SEP,
    NlOptions,
    UnlOptions,
)
from sysdiff.transforms.unl.scoring import (
    f1_samples,
    score_nl_rows,
    score_nlization,
    score_unl_chunk,
    score_unl_rows,
    score_unlization,
    unl_scores,
)
from sysdiff.transforms.unl.verdicts import (
    below,
    nl_status,
    nl_words,
    unl_status_frame,
    with_fraction,
)
from sysdiff.transforms.unl.warnings import (
    merge_warning_parts,
    unl_warnings,
    warning_lines,
    warning_parts,
)

__all__ = [
    "ACTUAL",
    "Alignment",
    "EXPECTED",
    "ItemCounts",
    "Items",
    "NlOptions",
    "SEP",
    "UnlOptions",
    "align_ids",
    "align_sentences",
    "aligned_partners",
    "below",
    "compare_partials",
    "compared_columns",
    "compare_versions",
    "count_items",
    "count_table",
    "dict_encode",
    "error_digests",
    "f1_samples",
    "finish_compare",
    "item_counts",
    "item_digests",
    "item_sums",
    "merge_warning_parts",
    "nl_status",
    "nl_words",
    "score_nl_rows",
    "score_nlization",
    "score_unl_chunk",
    "score_unl_rows",
    "score_unlization",
    "unl_items",
    "unl_scores",
    "unl_status_frame",
    "unl_warnings",
    "version_matrix",
    "warning_lines",
    "warning_parts",
    "with_fraction",
]
