"""Regression gates for CI pipelines: compare a candidate with a baseline (read-only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from sysdiff.flows.queries import query
from sysdiff.flows.show import only_corpus
from sysdiff.flows.warehouse import sql_literal
from sysdiff.schemas.errors import InputError


@dataclass(frozen=True)
class Gate:
    """One checked condition and its outcome."""

    name: str
    passed: bool
    value: float
    limit: float
    reason: str


def _pair(root: Path, corpus: str, view: str, punct: bool, a: str, b: str) -> dict:
    rows = query(root, f"""select * from pairs where corpus = {sql_literal(corpus)}
        and view = {sql_literal(view)} and punct = {str(punct).lower()}
        and sys1 = {sql_literal(a)} and sys2 = {sql_literal(b)}""")
    if rows.is_empty():
        raise InputError(f"no comparison {a} -> {b} for corpus '{corpus}', view '{view}'; "
                         "are both systems ingested?", root)
    return rows.row(0, named=True)


def _label_delta(root: Path, corpus: str, view: str, punct: bool, a: str, b: str,
                 label: str) -> tuple[float, int]:
    rows = query(root, f"""select system, accuracy, n from labels
        where corpus = {sql_literal(corpus)} and view = {sql_literal(view)}
        and punct = {str(punct).lower()} and gold_label = {sql_literal(label)}
        and system in ({sql_literal(a)}, {sql_literal(b)})""")
    acc = dict(zip(rows["system"], rows["accuracy"], strict=True))
    if len(acc) != 2:
        raise InputError(f"no gold label '{label}' in view '{view}' of corpus '{corpus}'", root)
    return acc[b] - acc[a], int(rows["n"][0])


def check(root: Path, corpus: str | None, baseline: str, candidate: str, view: str,
          punct: bool | None, max_new_errors: int | None, min_delta: float | None,
          label: str | None) -> list[Gate]:
    """Evaluate the gates asked for; ``min_delta`` is in accuracy points (percent)."""
    corpus = only_corpus(root, corpus)
    punct = view not in ("head", "deprel", "las") if punct is None else punct
    p = _pair(root, corpus, view, punct, baseline, candidate)
    gates = []
    if max_new_errors is not None:
        ok = p["new_errors"] <= max_new_errors
        gates.append(Gate("max_new_errors", ok, p["new_errors"], max_new_errors,
                          f"{candidate} makes {p['new_errors']} new errors against {baseline} "
                          f"({view}); at most {max_new_errors} allowed"))
    if min_delta is not None:
        if label:
            delta, n = _label_delta(root, corpus, view, punct, baseline, candidate, label)
            what = f"accuracy on gold '{label}' (n={n})"
        else:
            delta, what = p["delta_acc"], "accuracy"
        ok = 100 * delta >= min_delta
        gates.append(Gate("min_delta", ok, 100 * delta, min_delta,
                          f"{what} of {candidate} vs {baseline} ({view}): {100 * delta:+.2f} "
                          f"points; at least {min_delta:+.2f} required"))
    if not gates:
        raise InputError("no gate given; use --max-new-errors and/or --min-delta")
    return gates


def as_json(gates: list[Gate]) -> dict:
    """The gates as a JSON-ready document."""
    return {"passed": all(g.passed for g in gates), "gates": [asdict(g) for g in gates]}
