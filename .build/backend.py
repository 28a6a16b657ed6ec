"""sysdiff's build backend: setuptools', with editable installs in "compat" mode.

setuptools' default editable install imports the package through a finder that Python asks
only after its path search; a folder named ``sysdiff`` in the current folder (the checkout
itself, under its default clone name) then wins as an empty namespace package and
``import sysdiff`` gets nothing. In compat mode the checkout is a plain entry of
``sys.path``, where ``sysdiff/__init__.py`` is a regular package that wins over such a
folder; it then finds ``flows``, ``schemas`` and ``transforms`` beside it
(``sysdiff/__init__.py``). Wheels and sdists are setuptools' own.
"""

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (every hook of the PEP 517 interface)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable wheel that puts the checkout on ``sys.path`` (``editable_mode=compat``,
    unless the caller asks for another mode)."""
    settings = dict(config_settings or {})
    if not (settings.get("editable_mode") or settings.get("editable-mode")):
        settings["editable_mode"] = "compat"
    return _setuptools.build_editable(wheel_directory, settings, metadata_directory)
