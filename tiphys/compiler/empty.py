"""The model fields of sections with no elements, made once per process."""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Callable, Hashable

import numpy as np

_EMPTY: dict = {}
_ARRAY, _IMMUTABLE, _OTHER = 0, 1, 2


def _kind(value) -> int:
    if isinstance(value, np.ndarray):
        return _ARRAY
    if type(value) in (int, float, str, bool, type(None)):
        return _IMMUTABLE  # (copy.copy would give the object itself)
    return _OTHER


def replay_empty(out, key: Hashable, make: Callable) -> None:
    """Set on ``out`` the fields that ``make(namespace)`` sets for a section with no
    elements (the same code, the same arrays): it runs once per ``key``, and each
    later model gets copies (arrays of its own; the empty ones cost little, but a
    model has a few hundred of them)."""
    fields = _EMPTY.get(key)
    if fields is None:
        ns = SimpleNamespace()
        make(ns)
        kinds = [(name, value, _kind(value)) for name, value in vars(ns).items()]
        # grouped by kind (each group set in one pass; names are distinct, so the
        # order in which they are set does not matter)
        fields = _EMPTY[key] = (
            {name: value for name, value, kind in kinds if kind == _IMMUTABLE},
            [(name, value) for name, value, kind in kinds if kind == _ARRAY],
            [(name, value) for name, value, kind in kinds if kind == _OTHER])
    immutable, arrays, others = fields
    values = out.__dict__
    values.update(immutable)
    for name, value in arrays:
        values[name] = value.copy()
    for name, value in others:
        values[name] = copy.copy(value)
