"""How ``--help`` shows options: a value's name (``NAME=FILE``, ``N``, ``CORPUS``), never a
type tag (``<str>``, ``<bool>``, ``<list[str]>``); a flag shows no value at all. Also
``sysdiff --version`` and ``-h`` (as ``--help``) for every command.

Typer (0.2x) prints each parameter's Python type in the help's type column; :func:`install`
replaces that column's text. If typer's internals differ from what this expects, nothing is
installed (the help keeps typer's tags).
"""

from __future__ import annotations

import functools
from typing import Any

#: ``-h`` is ``--help`` for the group and every command (click passes it to subcommands).
CONTEXT = {"help_option_names": ["-h", "--help"]}


def metavar(param: Any) -> str | None:
    """What the help shows after an option (None: nothing, for a flag): the option's own
    ``metavar``, else ``N`` for an integer, ``X`` for a number, else its name in capitals
    (``--corpus CORPUS``)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    if param.metavar:
        return param.metavar
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if annotation is int:
        return "N"
    if annotation is float:
        return "X"
    return (param.name or "value").upper()


def install() -> bool:
    """Show :func:`metavar` in the help instead of typer's type tags. True when installed."""
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:
        return False
    if not hasattr(TyperOption, "display_type_rich"):
        return False

    def option_type(self: Any, ctx: Any) -> str | None:
        return metavar(self)

    def argument_type(self: Any, ctx: Any) -> str | None:
        return None  # the argument's name is shown already (``TABLE``, ``QUERY``)

    TyperOption.display_type_rich = option_type
    if hasattr(TyperArgument, "display_type_rich"):
        TyperArgument.display_type_rich = argument_type
    _rewrap_when_help_shows()
    return True


def _rewrap_when_help_shows() -> None:
    """:func:`_rewrap_paragraphs` once a help is formatted, not before: typer's help module
    imports rich's Markdown and Pygments (about 50 ms), which a command that shows no help
    does not need."""
    from typer.core import TyperCommand, TyperGroup

    for cls in (TyperCommand, TyperGroup):
        shown = cls.format_help

        def format_help(self: Any, ctx: Any, formatter: Any, _shown: Any = shown) -> Any:
            _rewrap_paragraphs()
            return _shown(self, ctx, formatter)

        cls.format_help = format_help


@functools.cache  # once a process: the first help formatted installs it
def _rewrap_paragraphs() -> None:
    """A command's later help paragraphs are reflowed like its first (typer keeps their
    source line breaks, so a docstring's 88-column lines break mid-sentence)."""
    try:
        from typer import rich_utils
    except ImportError:
        return
    if not hasattr(rich_utils, "_fix_linebreaks"):
        return

    def reflow(paragraphs: list[str], markup_mode: Any = None) -> str:
        return "\n\n".join(p if p.startswith("\b") else " ".join(p.split())
                            for p in paragraphs)

    rich_utils._fix_linebreaks = reflow


def version() -> str:
    """``sysdiff X.Y.Z`` (the installed distribution's version)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return f"sysdiff {dist_version('sysdiff')}"
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "sysdiff (not installed)"
