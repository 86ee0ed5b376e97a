"""The model fields of sections with no elements, made once per process."""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Callable, Hashable

import numpy as np

_EMPTY: dict = {}


def replay_empty(out, key: Hashable, make: Callable) -> None:
    """Set on ``out`` the fields that ``make(namespace)`` sets for a section with no
    elements (the same code, the same arrays): it runs once per ``key``, and each
    later model gets copies (arrays of its own; the empty ones cost little, but a
    model has a few hundred of them)."""
    fields = _EMPTY.get(key)
    if fields is None:
        ns = SimpleNamespace()
        make(ns)
        fields = _EMPTY[key] = dict(vars(ns))
    for name, value in fields.items():
        setattr(out, name, value.copy() if isinstance(value, np.ndarray) else
                copy.copy(value))
