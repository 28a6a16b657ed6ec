"""Immutable values for Prefect task parameters and results.

Prefect walks every task parameter when it creates a task run (dataclass fields, dict and
list items); Dask pickles them to workers. A parameter that another thread mutates meanwhile
breaks both (``dictionary changed size during iteration``). So tasks take and return values
that cannot change: strings, numbers, paths, tuples, :class:`FrozenMap`, read-only numpy
arrays, Arrow arrays and tables, and frozen dataclasses of these; :class:`Opaque` holds such a
value where neither Prefect nor Dask should walk it. :func:`is_frozen` checks a value deeply
(the tests check every task parameter of a run with it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from pathlib import PurePath
from typing import Any


class FrozenMap(Mapping):
    """A read-only, hashable mapping (keys in insertion order); its values are frozen too
    (dicts become FrozenMaps, lists and sets tuples)."""

    __slots__ = ("_items", "_index")

    def __init__(self, items: Mapping | Iterator[tuple[Any, Any]] | None = None) -> None:
        pairs = tuple((k, freeze(v)) for k, v in (
            items.items() if isinstance(items, Mapping) else (items or ())))
        object.__setattr__(self, "_items", pairs)
        object.__setattr__(self, "_index", {k: i for i, (k, _v) in enumerate(pairs)})

    def __getitem__(self, key: Any) -> Any:
        return self._items[self._index[key]][1]

    def __iter__(self) -> Iterator:
        return (k for k, _v in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenMap is read-only")

    def __repr__(self) -> str:
        return repr(dict(self._items))

    def __reduce__(self):
        return (FrozenMap, (self._items,))


def freeze(value: Any) -> Any:
    """``value`` with dicts as FrozenMaps and lists and sets as tuples (deeply)."""
    if isinstance(value, FrozenMap):
        return value
    if isinstance(value, Mapping):
        return FrozenMap(value)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen value as plain JSON-ready values: mappings as dicts, tuples and sets as
    lists (deeply; the inverse of :func:`freeze` up to the order of a set)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((thaw(v) for v in value), key=repr)
    return value


class Opaque:
    """A frozen box for a task's in-memory inputs (an index, parsed sentences) so that
    neither Prefect nor Dask walks through them looking for futures (``prefect.quote`` is a
    tuple, which Dask unpacks on the way to a worker). Nothing in it can be set; it is
    frozen when its value is (:func:`is_frozen` looks inside)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Opaque is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Opaque is read-only")

    def __reduce__(self):
        return (Opaque, (self.value,))


SCALARS = (str, bytes, int, float, bool, complex, type(None), Fraction, Decimal, PurePath,
           dt.datetime, dt.date, dt.timedelta)


def is_frozen(value: Any) -> bool:
    """True when nothing reachable from ``value`` can be changed in place: scalars (exact
    fractions and decimals too), paths, tuples and frozensets of frozen values, FrozenMaps,
    read-only numpy arrays, Arrow arrays, tables and record batches, frozen dataclasses whose
    fields are frozen, enums, and an :class:`Opaque` holding a frozen value."""
    import enum

    if isinstance(value, (*SCALARS, enum.Enum)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(is_frozen(v) for v in value)
    if isinstance(value, FrozenMap):
        return all(is_frozen(k) and is_frozen(v) for k, v in value.items())
    if isinstance(value, Opaque):
        return is_frozen(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (value.__dataclass_params__.frozen
                and all(is_frozen(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if type(value).__module__ == "numpy" and hasattr(value, "flags"):
        return not value.flags.writeable
    return type(value).__module__.startswith("pyarrow") and (
        hasattr(value, "schema")  # a table or record batch
        or any(c.__name__ in ("Array", "ChunkedArray") for c in type(value).__mro__))


def freeze_fields(obj: Any) -> None:
    """Freeze every field of a frozen dataclass in place (call from ``__post_init__``): dicts
    become FrozenMaps, lists and sets tuples and frozensets."""
    for f in dataclasses.fields(obj):
        object.__setattr__(obj, f.name, freeze(getattr(obj, f.name)))


def read_only(array: Any) -> Any:
    """A numpy array that cannot be written (a view of ``array``)."""
    view = array.view()
    view.flags.writeable = False
    return view
