"""mj_setConst: recompute a compiled Model's derived constants from its current fields.

After fields of a Model are changed (``tiphys.set_param``: body masses, inertias, body
and joint frames, qpos0, armature, gears, ...), the constants the compiler derived
from them keep their old values, as in MuJoCo. ``set_const(m)`` recomputes what
MuJoCo's mj_setConst recomputes, with the compiler's own functions
(tiphys/compiler/setconst.py ``model_constants``), and writes them to the host copy
``m.arrays`` and to the device arrays:

    body_subtreemass, ngravcomp, dof_M0, body_invweight0, dof_invweight0,
    tendon_length0, tendon_invweight0, actuator_length0, actuator_acc0,
    actuator_biasprm (a dampratio given as biasprm[2] > 0 becomes the damping),
    eq_data (connect anchors; welds without a relative pose), cam_pos0/poscom0/mat0,
    light_pos0/poscom0/dir0, stat (meaninertia, meanmass, meansize, extent, center),
    dof_length, tendon_lengthspring (where it is (-1, -1)).

As mj_setConst, it does not touch what only compiling makes: actuator length ranges
(mj_setLengthRange), joint springdamper stiffness/damping, user statistics (a value
``<statistic>`` gave is replaced by the computed one, as MuJoCo's mj_setConst does).

MuJoCo has one model; a tiphys Model may hold some fields per world (set_param with
one value per world). ``set_const`` refuses such a model (ValueError naming the
fields): give those fields one value for all worlds first.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .model import Data, Model, ModelArrays, _fill, check_model, check_pair
from .types import MODEL_FIELDS

_SHAPES = {name: shape for name, shape, _, _ in MODEL_FIELDS}

# the fields mj_setConst writes (besides stat and ngravcomp)
SET_CONST_FIELDS = (
    "body_subtreemass", "body_invweight0", "dof_invweight0", "dof_M0", "dof_length",
    "tendon_length0", "tendon_invweight0", "tendon_lengthspring", "actuator_length0",
    "actuator_acc0", "actuator_biasprm", "eq_data", "cam_pos0", "cam_poscom0", "cam_mat0",
    "light_pos0", "light_poscom0", "light_dir0")
# the fields model_constants changes in place (copied first, so that a failure leaves
# the model as it was)
_IN_PLACE = ("actuator_biasprm", "eq_data", "tendon_lengthspring")


def refuse_per_world(m: Model, func: str, why: str) -> None:
    """ValueError naming the fields of ``m`` set per world: ``func`` works on one model
    (``why``)."""
    per_world = m.param_worlds()
    if per_world:
        fields = ", ".join(f"{k} ({n} worlds)" for k, n in sorted(per_world.items()))
        raise ValueError(f"{func}: {fields} given per world; {why}: give these fields one "
                         f"value for all worlds (tiphys.set_param with the field's shape) "
                         f"before {func}")


def set_const(m: Model, d: Optional[Data] = None) -> None:
    """mj_setConst: recompute ``m``'s derived constants from its current fields (see
    the module's docstring for the list) and write them to ``m`` (host and device).
    ``d`` (optional, MuJoCo's scratch mjData) is only checked to belong to ``m``."""
    from .compiler.setconst import model_constants

    check_model(m, "set_const")
    if d is not None:
        check_pair(m, d, "set_const")
    refuse_per_world(m, "set_const", "mj_setConst computes one model's constants")
    _check_host_copy(m)
    a = ModelArrays(**vars(m.arrays))
    for name in _IN_PLACE:
        setattr(a, name, np.array(getattr(a, name), dtype=np.float64))
    a.stat = m.stat
    model_constants(a)
    sizes = m.arrays.sizes
    for name in SET_CONST_FIELDS:
        value = np.asarray(getattr(a, name), dtype=np.float64)
        setattr(m.arrays, name, value)
        _fill(getattr(m, name), value, _SHAPES[name], sizes)
    for f in dataclasses.fields(a.stat):  # in place: a copy.copy of m shares the object
        setattr(m.stat, f.name, getattr(a.stat, f.name))
    m.ngravcomp = int(np.count_nonzero(np.asarray(a.body_gravcomp) > 0))
    m.forget_plans()


def _check_host_copy(m: Model, func: str = "set_const") -> None:
    """set_const (and copy_back) compute from the host copy ``m.arrays``, which set_param (and every
    setter built on it) keeps equal to the device arrays: a parameter written to its
    device array alone would be missed, so that is refused."""
    from .params import PARAM_FIELDS
    from .backend import numpy_dtype

    for name in PARAM_FIELDS:
        host = np.asarray(getattr(m.arrays, name))
        if not host.size:
            continue
        dev = getattr(m, name)
        values = dev.to_numpy().reshape(-1)[:host.size]
        if not np.array_equal(values, host.reshape(-1).astype(numpy_dtype(dev)), equal_nan=True):
            raise ValueError(f"{func}: the device array {name} differs from the host copy "
                             f"m.arrays.{name} (written to the device array directly?): give "
                             f"model fields with tiphys.set_param, which writes both")


# d is optional: set_const checks the pair itself when one is given
set_const._tiphys_checks_pair = True
