"""Option values of the command line without pydantic on the usual path.

Typer (0.2x) converts every parameter value with a pydantic ``TypeAdapter`` that it builds
when the command runs: importing pydantic and building the adapters of one command costs
0.1-0.15 s, a third of a read-only command. :func:`install` puts a converter before it for
the values whose conversion is certain: a string for a ``str`` parameter, a plain decimal
integer or number (``-12``, ``0.5``) within the parameter's ``min``/``max``, a value already
of the parameter's type (defaults), a list of strings. Anything else (a malformed or
out-of-range number, ``1e3``, ``+5``, `` 5``, a clamped or custom-parsed parameter, a file)
goes to typer's own pydantic conversion, so values and error messages stay exactly typer's.
If typer's internals differ from what this expects, nothing is installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?")
#: What :func:`quick_value` returns when typer's conversion must decide.
UNDECIDED = object()


def quick_value(annotation: Any, info: Any, value: Any) -> Any:
    """``value`` converted for a parameter of type ``annotation`` (typer's ``ParameterInfo``
    ``info``), or UNDECIDED when typer's pydantic conversion must do it."""
    if getattr(info, "parser", None) is not None or getattr(info, "clamp", False):
        return UNDECIDED
    if annotation is str:
        return value if isinstance(value, str) else UNDECIDED
    if annotation is int or annotation is float:
        if type(value) is annotation:
            number = value
        elif isinstance(value, str) and (INTEGER if annotation is int else NUMBER
                                         ).fullmatch(value):
            number = annotation(value)
        else:
            return UNDECIDED
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        if (low is not None and number < low) or (high is not None and number > high):
            return UNDECIDED  # typer says what the range is
        return number
    if annotation == list[str] and isinstance(value, (list, tuple)) and all(
            isinstance(v, str) for v in value):
        return list(value)
    return UNDECIDED


def install() -> bool:
    """Convert option values with :func:`quick_value` first, typer's pydantic adapters only
    when it cannot decide. True when installed."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam
    except ImportError:
        return False
    original = getattr(core, "build_runtime_param", None)
    if original is None or getattr(original, "quick", False) or not hasattr(
            RuntimeParam, "_coerce_value"):
        return original is not None and getattr(original, "quick", False)

    @dataclass(frozen=True)
    class QuickParam(RuntimeParam):
        """A parameter's conversion: :func:`quick_value`, else typer's own."""

        descriptor: Any = None
        typer_param: list = field(default_factory=list, compare=False)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = quick_value(self.annotation, self.parameter_info, value)
            if out is not UNDECIDED:
                return out
            if not self.typer_param:
                self.typer_param.append(original(self.descriptor))
            return self.typer_param[0]._coerce_value(value, param=param, ctx=ctx)

    def build(descriptor: Any) -> Any:
        if getattr(descriptor, "file_annotation", None) is not None:
            return original(descriptor)
        return QuickParam(parameter_info=descriptor.parameter_info,
                          annotation=descriptor.annotation, descriptor=descriptor)

    build.quick = True
    core.build_runtime_param = build
    return True
