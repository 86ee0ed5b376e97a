"""Kernel arguments bound by name: ``launch(kernel, m, d, **given)``.

A kernel's parameters are named as the Model and Data fields they take (the one
table, ``tiphys/types.py``) and the model's sizes (``nbody``, ``nv``, ...). ``launch``
passes, for each parameter in order: the value in ``given`` of that name, else the
Data field of that name, else the Model field or size of that name. A parameter that
is none of these is a TypeError naming the kernel and the parameter: a call site no
longer lists 20 arrays in the kernel's order, and a renamed field fails loudly.

What a kernel takes from Model and Data is looked up once per (Data, kernel, given
names) and kept in the Data's scratch (``d.scratch.bound``), and so is, per values of
``given`` (numbers, flags, functions and the Data's own arrays), the prepared launch of
the whole argument list (tiphys/launch.py): the next such call launches it directly,
without building the argument list or its key again. All of it is looked up again
for another model and whenever a field of the model or the data was assigned since
(``fields_set``, counted by Model's and Data's ``__setattr__``: ``set_param`` giving a
parameter per world, a test swapping an array).
"""
from __future__ import annotations

from taichi.lang._ndarray import Ndarray

from .config import BOUND_NAMES_ATTR, DIRECT, WORLDS_TAG

MAX_BOUND = 4096  # cached calls per Data (beyond: launched without a cache entry)


class _Given(str):
    """A plan entry: the parameter is taken from ``given`` under this name."""

    __slots__ = ()


def _names(obj) -> frozenset:
    return getattr(type(obj), BOUND_NAMES_ATTR)


def _plan(kernel, m, d, given) -> tuple:
    params = kernel._primal.arguments
    data_names, model_names = _names(d), _names(m)
    plan = []
    for param in params:
        name = param.name
        if name in given:
            plan.append(_Given(name))
        elif name in data_names:
            plan.append(getattr(d, name))
        elif name in model_names:
            plan.append(getattr(m, name))
        else:
            raise TypeError(
                f"launch({kernel.__name__}): parameter {name!r} is no Data or Model field "
                f"or model size (tiphys/types.py), and the call does not give it")
    unknown = set(given) - {param.name for param in params}
    if unknown:
        raise TypeError(f"launch({kernel.__name__}): no parameter named "
                        f"{', '.join(sorted(unknown))}")
    return tuple(plan)


def _cacheable(value) -> bool:
    """Whether a given value may key a cached launch: not an array, unless one of a
    Data's own (tagged: it lives as long as the Data); a user's temporary array would
    be kept alive by the cache."""
    return not isinstance(value, Ndarray) or hasattr(value, WORLDS_TAG)


def launch(kernel, m, d, **given):
    """Launch ``kernel`` with each parameter bound by name (see the module docstring);
    ``given`` holds the parameters that are not fields of ``m``/``d`` (flags, scratch
    arrays, options) or that take another array than the field of their name."""
    cache = d.scratch.bound
    version = (m.fields_set, d.fields_set)
    if cache is None or cache[0] is not m or cache[1] != version:
        cache = d.scratch.bound = (m, version, {})
    calls = cache[2]
    call = (kernel, *given.items()) if given else kernel
    try:
        entry = calls.get(call)
    except TypeError:  # an unhashable given value
        entry = call = None
    if entry is not None and DIRECT["fire"](entry):
        return None
    names = (kernel, *given) if given else (kernel,)
    plan = calls.get(names)
    if plan is None:
        plan = calls[names] = _plan(kernel, m, d, given)
    args = [given[entry] if type(entry) is _Given else entry for entry in plan] \
        if given else plan
    result = kernel(*args)
    if call is not None and DIRECT["entry"] is not None and len(calls) < MAX_BOUND and \
            all(_cacheable(value) for value in given.values()):
        entry = DIRECT["entry"](kernel, args)
        if entry is not None:
            calls[call] = entry
    return result
