"""Option values converted without pydantic (flows/cli_values.py) are exactly what typer's
own pydantic conversion gives; everything else is left to typer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer._click.exceptions import BadParameter
from typer._coercion import resolve_type_descriptor
from typer.models import OptionInfo

from sysdiff.flows import cli_values
from sysdiff.flows.cli_values import UNDECIDED, quick_value

#: The parameter kinds of sysdiff's commands (``--top`` has min=1, ``--examples`` min=0).
KINDS = [(int, {}), (int, {"min": 1}), (int, {"min": 0}), (float, {}), (str, {}),
         (list[str], {})]
TRICKY = ["3", "-3", "0", "-0", "03", "3.0", " 3", "3 ", "+3", "1_0", "1e3", "inf", "nan",
          "2.5", "-1.25", "", "x", "99999999999999999999", "0.1", ".5", "5.", "-", "--5",
          "\u0661\u0662", "0x10", "1.0000000000000002", "-100", "1" * 19]


def typer_value(annotation, info, value):
    """What typer's own (pydantic) conversion gives: ("ok", value) or ("error", message)."""
    from typer._coercion import build_runtime_param  # typer's own (cli_values patches core)

    param = build_runtime_param(resolve_type_descriptor(annotation, info))
    try:
        return "ok", param._coerce_value(value, param=None, ctx=None)
    except BadParameter as e:
        return "error", str(e)


def agrees(annotation, kwargs, value) -> bool:
    """quick_value leaves ``value`` to typer, or gives exactly typer's value and type."""
    info = OptionInfo(**kwargs)
    quick = quick_value(annotation, info, value)
    if quick is UNDECIDED:
        return True
    outcome, expected = typer_value(annotation, info, value)
    return outcome == "ok" and expected == quick and type(expected) is type(quick)


@pytest.mark.parametrize("annotation, kwargs", KINDS)
def test_the_values_decided_without_pydantic_are_typers(annotation, kwargs):
    decided = 0
    for value in TRICKY + [5, 0, -2, 2.5, True, None, ("a", "b"), ["x"], ()]:
        assert agrees(annotation, kwargs, value), (annotation, kwargs, value)
        decided += quick_value(annotation, OptionInfo(**kwargs), value) is not UNDECIDED
    assert decided >= 2  # the usual values are decided here, not by pydantic


@given(st.text(alphabet="0123456789-+.e_ x", max_size=8))
def test_any_number_text_is_typers(text):
    for annotation, kwargs in KINDS[:4]:
        assert agrees(annotation, kwargs, text), (annotation, kwargs, text)


def test_errors_and_unusual_forms_are_left_to_typer():
    info = OptionInfo(min=1)
    for value in ("0", "-3", "x", " 3", "+3", "1e3", "03"):
        assert quick_value(int, info, value) is UNDECIDED
    assert quick_value(int, OptionInfo(min=1, clamp=True), "5") is UNDECIDED
    assert quick_value(str, OptionInfo(parser=str.upper), "a") is UNDECIDED


def test_installed_by_the_cli():
    import typer.core

    import sysdiff.flows.cli  # noqa: F401 (installs the converter)

    installed = typer.core.build_runtime_param
    assert getattr(installed, "quick", False)
    assert cli_values.install()
    assert typer.core.build_runtime_param is installed  # a second call does not wrap it again
