"""Kernel arguments bound by name: ``launch(kernel, m, d, **given)``.

A kernel's parameters are named as the Model and Data fields they take (the one
table, ``tiphys/types.py``) and the model's sizes (``nbody``, ``nv``, ...). ``launch``
passes, for each parameter in order: the value in ``given`` of that name, else the
Data field of that name, else the Model field or size of that name. A parameter that
is none of these is a TypeError naming the kernel and the parameter: a call site no
longer lists 20 arrays in the kernel's order, and a renamed field fails loudly.

What a kernel takes from Model and Data is looked up once per (Data, kernel, given
names) and kept in the Data's scratch (``d.scratch.bound``); it is looked up again
for another model and whenever a field of the model or the data was assigned since
(``fields_set``, counted by Model's and Data's ``__setattr__``: ``set_param`` giving a
parameter per world, a test swapping an array).
"""
from __future__ import annotations

from .config import BOUND_NAMES_ATTR


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


def launch(kernel, m, d, **given):
    """Launch ``kernel`` with each parameter bound by name (see the module docstring);
    ``given`` holds the parameters that are not fields of ``m``/``d`` (flags, scratch
    arrays, options) or that take another array than the field of their name."""
    cache = d.scratch.bound
    version = (m.fields_set, d.fields_set)
    if cache is None or cache[0] is not m or cache[1] != version:
        cache = d.scratch.bound = (m, version, {})
    key = (kernel, *given) if given else kernel
    plan = cache[2].get(key)
    if plan is None:
        plan = cache[2][key] = _plan(kernel, m, d, given)
    if given:
        return kernel(*[given[entry] if type(entry) is _Given else entry for entry in plan])
    return kernel(*plan)
