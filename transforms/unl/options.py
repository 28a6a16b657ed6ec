"""UNL scoring options (:class:`UnlOptions`, :class:`NlOptions`) and shared constants."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

ACTUAL, EXPECTED = 0, 1
SEP = "\x1f"
_ALIGN_MODES = ("auto", "id", "position")

# --------------------------------------------------------------------------------------------
# Options


def _as_fraction(x: Fraction | int | float | str) -> Fraction:
    """Exact value of a threshold; floats go through their shortest repr (0.3 -> 3/10)."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _fmt(x: Fraction) -> str:
    """``0.3`` for 3/10, ``1/3`` when there is no finite decimal."""
    d = Decimal(x.numerator) / Decimal(x.denominator)
    return str(d.normalize()) if Fraction(d) == x else f"{x.numerator}/{x.denominator}"


@dataclass(frozen=True)
class UnlOptions:
    """UNLization scoring options; :meth:`signature` is stored with every row."""

    multiset: bool = False
    keep_scope_ids: bool = False
    threshold: Fraction = Fraction(3, 10)
    overall_threshold: Fraction = Fraction(3, 10)
    optional_attrs: frozenset[str] = frozenset({"@def", "@indef"})
    align: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _as_fraction(self.threshold))
        object.__setattr__(self, "overall_threshold", _as_fraction(self.overall_threshold))
        object.__setattr__(self, "optional_attrs", frozenset(self.optional_attrs))
        if self.align not in _ALIGN_MODES:
            raise ValueError(f"align must be one of {_ALIGN_MODES}, not {self.align!r}")

    @classmethod
    def legacy_2013(cls, **kwargs: object) -> UnlOptions:
        """The older UNLarium page (2013): overall discrepancy < 0.5."""
        return cls(overall_threshold=Fraction(1, 2), **kwargs)  # type: ignore[arg-type]

    def signature(self) -> str:
        return "|".join(
            [
                "sem:" + ("multiset" if self.multiset else "set"),
                "scope:" + ("keep" if self.keep_scope_ids else "ignore"),
                f"thr:{_fmt(self.threshold)}",
                f"thr_all:{_fmt(self.overall_threshold)}",
                "opt:" + ",".join(sorted(self.optional_attrs)),
                f"align:{self.align}",
            ]
        )


@dataclass(frozen=True)
class NlOptions:
    """NLization scoring options (words are always multisets, METRICS 3.3)."""

    threshold: Fraction = Fraction(3, 10)
    align: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _as_fraction(self.threshold))
        if self.align not in _ALIGN_MODES:
            raise ValueError(f"align must be one of {_ALIGN_MODES}, not {self.align!r}")

    def signature(self) -> str:
        thr = _fmt(self.threshold)
        return f"sem:multiset|words:ws,strip-PS,casefold|thr:{thr}|align:{self.align}"
