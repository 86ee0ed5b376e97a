"""Per-world model parameters: the model fields whose shape starts with ``*`` in
tiphys/types.py (masses, inertias, frictions, sizes, gains, solver parameters, ...).

Each such field is a device array with a leading parameter-set dimension of 1 (one
value for every world, as compiled) or ``nworld`` (one value per world, for domain
randomization); kernels read set ``world % n``. ``set_param`` is the way to give them:

    m = tiphys.load_model("humanoid.xml")
    tiphys.set_param(m, "geom_friction", friction)      # (nworld, ngeom, 3)
    tiphys.set_param(m, "body_mass", m.arrays.body_mass * 1.1)   # all worlds
    d = tiphys.make_data(m, nworld)

As editing an ``mjModel`` in C, writing a field changes that field only: constants
MuJoCo derives from it at compile time (body_subtreemass from body_mass, dof_invweight0,
actuator_acc0, stat.meanmass, ...) keep their values; ``tiphys.set_const(m)``
recomputes them (MuJoCo's mj_setConst) while every field has one value for all worlds. One exception: the joint-space inertia of
"simple" dofs (a free body's) is computed from the current body_mass and body_inertia,
where MuJoCo's mj_crb copies the compiled dof_M0. The host facts the step plans from (whether a
model has friction-loss rows, gravity compensation, tendon armature, damping for the
discrete inverse, ...) are taken over every world's values, so a parameter that is
zero when compiled and non-zero in some world is not skipped.

A Model whose parameters are given per world works only with Data of that many worlds:
``make_data`` and every call with a Data of another size raise, naming the fields.
"""
from __future__ import annotations

import difflib

import numpy as np

from . import backend
from .model import Model, _fill, _make_array, check_model
from .types import MODEL_FIELDS, numpy_shape

PARAM_FIELDS = tuple(name for name, shape, _, _ in MODEL_FIELDS if shape.startswith("*"))
_SHAPES = {name: shape for name, shape, _, _ in MODEL_FIELDS}


def _field(m: Model, func: str, name) -> str:
    check_model(m, func)
    if not isinstance(name, str):
        raise TypeError(f"{func}: the field name must be a string, got {type(name).__name__}")
    if name in _SHAPES and name not in PARAM_FIELDS:
        raise ValueError(f"{func}: {name} is not a per-world parameter (its shape, "
                         f"{_SHAPES[name]!r}, has no leading '*'): it is the same in every "
                         f"world. Per-world parameters: {', '.join(PARAM_FIELDS)}")
    if name not in PARAM_FIELDS:
        close = difflib.get_close_matches(name, PARAM_FIELDS, n=3)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ValueError(f"{func}: no model field named {name!r}{hint}")
    return name


def _one_set(m: Model, name: str) -> tuple:
    return numpy_shape(_SHAPES[name], m.arrays.sizes)[1:]


def param_shape(m: Model, name: str) -> tuple:
    """The shape of one parameter set of field ``name`` (MuJoCo's shape of the field)."""
    return _one_set(m, _field(m, "param_shape", name))


def set_param(m: Model, name: str, value) -> None:
    """Give model field ``name`` (one of PARAM_FIELDS) a value for all worlds (an array
    of the field's shape, e.g. (nbody,) for body_mass) or one per world (shape
    (nworld, *field shape)). Writes the device array (and the host copy ``m.arrays``
    when one value serves every world); Data made before keeps working where its
    nworld matches."""
    name = _field(m, "set_param", name)
    shape = _SHAPES[name]
    one = _one_set(m, name)
    try:
        values = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"set_param: {name} needs numbers, got {type(value).__name__}") from None
    if values.shape == one:
        values = values[None]
    elif values.ndim != len(one) + 1 or values.shape[1:] != one or values.shape[0] < 1:
        raise ValueError(f"set_param: {name} has shape {one} per world: give an array of "
                         f"shape {one} (all worlds) or (nworld, {', '.join(map(str, one))})"
                         f" (one per world), not {values.shape}")
    bad = np.argwhere(np.isnan(values))
    if len(bad):
        raise ValueError(f"set_param: {name} has NaN at index {tuple(int(i) for i in bad[0])}")
    n = values.shape[0]
    sizes = m.arrays.sizes
    arr = getattr(m, name)
    if arr.shape[0] != n:
        arr = _make_array(shape, "f", sizes, nbatch=n)
        setattr(m, name, arr)
    _fill(arr, values.astype(backend.numpy_dtype(arr)), shape, sizes, nbatch=n)
    if n == 1:
        setattr(m.arrays, name, values[0].astype(np.asarray(getattr(m.arrays, name)).dtype))
        m._params = {k: v for k, v in m._params.items() if k != name}
    else:  # a new dict: a copy.copy of the model keeps its own
        m._params = {**m._params, name: values}
    m.forget_plans()


def get_param(m: Model, name: str) -> np.ndarray:
    """Field ``name``'s parameter sets, (n, *field shape): n = 1 when one value serves
    every world, nworld when set per world."""
    return m.param(_field(m, "get_param", name)).copy()
