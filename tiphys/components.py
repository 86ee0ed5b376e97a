"""MuJoCo's components and sub-components that the pipeline runs inside forward, step
and inverse, exported under their own names (mj_fwdKinematics, mj_fwdPosition,
mj_fwdVelocity, mj_RungeKutta, mj_implicit, mj_invPosition, mj_invVelocity,
mj_invConstraint, mj_constraintUpdate, mj_projectConstraint): each runs on every
world at once, exactly the stages forward/step/inverse run for it (fwd_position,
fwd_velocity and runge_kutta are forward.py's own stage functions, re-exported here).
"""
from __future__ import annotations

import numpy as np

from .forward import constraint_rows_possible, fwd_position, fwd_velocity, runge_kutta
from .kernels import integrate as ki
from .kernels import inverse as kinv
from .kernels.consts import INT_IMPLICIT, INT_IMPLICITFAST
from .kernels.flex import flex
from .kernels.smooth import camlight, com_pos, full_m, kinematics
from .kernels.tendon import tendon
from .model import Data, Model


def fwd_kinematics(m: Model, d: Data) -> None:
    """mj_fwdKinematics: kinematics, com_pos, camlight, flex, tendon."""
    kinematics(m, d)
    com_pos(m, d)
    camlight(m, d)
    flex(m, d)
    tendon(m, d)


def implicit(m: Model, d: Data) -> None:
    """mj_implicit: the integration step of the implicit or implicitfast integrator
    (the model's) after ``forward``; ValueError for other integrators, as MuJoCo."""
    if m.opt.integrator == INT_IMPLICIT:
        ki.implicit(m, d)
    elif m.opt.integrator == INT_IMPLICITFAST:
        ki.implicitfast(m, d)
    else:
        raise ValueError("implicit: integrator must be implicit or implicitfast")


def inv_position(m: Model, d: Data) -> None:
    """mj_invPosition: the position stages of inverse (as fwd_position)."""
    fwd_position(m, d)


def inv_velocity(m: Model, d: Data) -> None:
    """mj_invVelocity: the velocity stages of inverse (as fwd_velocity)."""
    fwd_velocity(m, d)


def inv_constraint(m: Model, d: Data) -> None:
    """mj_invConstraint: efc_force, efc_state and qfrc_constraint of the given qacc
    (jar = J qacc - aref; the rows from make_constraint and reference_constraint)."""
    kinv.inv_constraint(m, d, constraint_rows_possible(m))


def constraint_update(m: Model, d: Data, jar, flg_cone_hessian: bool = False) -> np.ndarray:
    """mj_constraintUpdate: efc_state, efc_force and qfrc_constraint from ``jar``
    (nworld, njmax), rows below each world's nefc; returns the cost s(jar) per world.

    The cone Hessians (flg_coneHessian) live inside the Newton solver, which keeps its
    own per-world copies: ``flg_cone_hessian=True`` raises NotImplementedError."""
    if flg_cone_hessian:
        raise NotImplementedError("constraint_update: flg_coneHessian (the elliptic cone "
                                  "Hessians are internal to the Newton solver)")
    return kinv.constraint_update(m, d, jar, constraint_rows_possible(m))


def project_constraint(m: Model, d: Data) -> np.ndarray:
    """mj_projectConstraint: efc_AR = J inv(M) J' + diag(R) of every world, numpy
    (nworld, njmax, njmax), zero past each world's nefc. Computed on the host from
    the dense Jacobian (sparse-Jacobian models: built from the non-zeros) and M
    (tiphys's solvers do not need efc_AR)."""
    from .support import efc_J_dense
    nefc = d.numpy("nefc")
    J = efc_J_dense(m, d)
    R = d.numpy("efc_R")
    M = full_m(m, d)
    out = np.zeros((d.nworld, J.shape[1], J.shape[1]), dtype=J.dtype)
    for w in range(d.nworld):
        n = int(nefc[w])
        if n == 0 or m.nv == 0:
            continue
        Jw = J[w, :n, :m.nv]
        out[w, :n, :n] = Jw @ np.linalg.solve(M[w], Jw.T) + np.diag(R[w, :n])
    return out
