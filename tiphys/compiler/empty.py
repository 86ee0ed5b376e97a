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
        fields = _EMPTY[key] = [(name, value, _kind(value)) for name, value in vars(ns).items()]
    values = out.__dict__
    for name, value, kind in fields:
        values[name] = value.copy() if kind == _ARRAY else value if kind == _IMMUTABLE \
            else copy.copy(value)
