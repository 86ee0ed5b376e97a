"""Derivatives for every world at once: finite-differenced transition and inverse
Jacobians (mjd_transitionFD, mjd_inverseFD) and the analytic quaternion derivatives
(mjd_subQuat, mjd_quatIntegrate). The device side is kernels/fd.py.

Both finite differences evaluate all nudged inputs of all worlds as one batch of
worlds (an expanded Data, ``ncolumn x nworld`` worlds, reused between calls): one
``step`` (or ``inverse``) for everything instead of one per column, which is what
keeps a GPU busy; columns that do not fit ``max_worlds`` run in several batches.
``d`` itself is read, never written (MuJoCo leaves the results of its last nudged
evaluation in d's intermediate fields; tiphys leaves d as it was).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import taichi as ti

from .kernels import fd as _k
from .kernels.actuation import actuation
from .kernels.config import serial_load
from .kernels.consts import INT_RK4
from .model import Data, Model

# bytes of expanded Data one finite difference may allocate (max_worlds default)
FD_MEMORY_BUDGET = 2**30


class TransitionFD(NamedTuple):
    """mjd_transitionFD's outputs per world (None where not requested): A (nworld,
    2nv+na, 2nv+na), B (nworld, 2nv+na, nu), C (nworld, nsensordata, 2nv+na), D (nworld,
    nsensordata, nu). State deviations are [dqpos (tangent, nv), dqvel, dact]."""
    A: Optional[np.ndarray]
    B: Optional[np.ndarray]
    C: Optional[np.ndarray]
    D: Optional[np.ndarray]


class InverseFD(NamedTuple):
    """mjd_inverseFD's outputs per world, rows by input as MuJoCo's (transposed w.r.t.
    control-theory notation): DfDq, DfDv, DfDa (nworld, nv, nv), DsDq, DsDv, DsDa
    (nworld, nv, nsensordata), DmDq (nworld, nv, nM); None where not requested."""
    DfDq: Optional[np.ndarray]
    DfDv: Optional[np.ndarray]
    DfDa: Optional[np.ndarray]
    DsDq: Optional[np.ndarray]
    DsDv: Optional[np.ndarray]
    DsDa: Optional[np.ndarray]
    DmDq: Optional[np.ndarray]


def _check_eps(eps) -> float:
    if eps is None:  # round-off of a difference over eps: ~1e-16/eps (f64), 1e-7/eps (f32)
        from . import backend
        return 1e-6 if backend.precision() == "f64" else 1e-3
    eps = float(eps)
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number, got {eps}")
    return eps


def _fdtype(m):
    dtype = m.geom_size.dtype
    return dtype.dtype if hasattr(dtype, "dtype") else dtype


def _int_array(values) -> "ti.Ndarray":
    values = np.asarray(values, dtype=np.int32).reshape(-1)
    if len(values) == 0:
        values = np.zeros(1, np.int32)
    arr = ti.ndarray(ti.i32, values.shape)
    arr.from_numpy(values)
    return arr


def _world_bytes(d: Data) -> int:
    total = 0
    for name in vars(d):
        arr = getattr(d, name)
        if isinstance(arr, ti.Ndarray):
            count = int(np.prod(arr.shape)) * int(np.prod(getattr(arr, "element_shape", ())
                                                          or (1,)))
            dtype = arr.dtype.dtype if hasattr(arr.dtype, "dtype") else arr.dtype
            total += count * (8 if dtype == ti.f64 else 4)
    return max(1, total // d.nworld)


def _columns_per_batch(d: Data, ncol: int, max_worlds: Optional[int]) -> int:
    if max_worlds is None:
        max_worlds = max(d.nworld, FD_MEMORY_BUDGET // _world_bytes(d))
    max_worlds = int(max_worlds)
    if max_worlds < 1:
        raise ValueError(f"max_worlds must be >= 1, got {max_worlds}")
    return int(max(1, min(ncol, max_worlds // d.nworld)))


def _expanded(m: Model, d: Data, nexp: int, load: int) -> Data:
    """The expanded Data of nexp worlds, kept on d for the next call; ``load``: the
    serial load of every column's worlds (each batch runs the kernels the whole
    expansion would: the same bits whatever max_worlds)."""
    cache = d.scratch.fd_data
    if cache is not None and cache[0] is m and cache[1].nworld == nexp and \
            cache[1].serial_load == load:
        return cache[1]
    de = Data(m, nexp, d.nconmax, d.njmax, param_worlds=d._param_worlds, njnnz=d.njnnz,
              nhnnz=d.nhnnz or None, nbroadmax=d.nbroadmax or None, load=load)
    from .kernels.check import _reset_state
    de._reset_state = _reset_state(m, d)  # a bad world resets to d's reset state
    de._reset_keyframe, de._reset_version = d._reset_keyframe, d._reset_version
    d.scratch.fd_data = (m, de)
    return de


def _expand(d: Data, de: Data) -> None:
    _k._expand(d.nworld, d.time, d.qpos, d.qvel, d.act, d.qacc_warmstart, d.ctrl,
               d.qfrc_applied, d.xfrc_applied, d.eq_active, d.mocap_pos, d.mocap_quat,
               d.userdata, d.qacc, d.plugin_state, de.time, de.qpos, de.qvel, de.act,
               de.qacc_warmstart, de.ctrl, de.qfrc_applied, de.xfrc_applied, de.eq_active,
               de.mocap_pos, de.mocap_quat, de.userdata, de.qacc, de.plugin_state)


def _run_columns(m, d, kinds, index, sign, eps, centered, max_worlds, evaluate, gather):
    """Evaluate every column (expand, nudge, evaluate, gather) in batches of columns."""
    ncol = len(kinds)
    per = _columns_per_batch(d, ncol, max_worlds)
    nbatch = -(-ncol // per)
    pad = nbatch * per - ncol  # columns past the end: un-nudged copies, not gathered
    col_kind = _int_array(list(kinds) + [_k.NOMINAL] * pad)
    col_index = _int_array(list(index) + [0] * pad)
    col_sign = _int_array(list(sign) + [0] * pad)
    de = _expanded(m, d, per * d.nworld, serial_load(ncol * d.nworld, m.arrays.sizes))
    for b in range(nbatch):
        c0 = b * per
        _expand(d, de)
        _k._perturb(d.nworld, c0, eps, int(centered), m.njnt, col_kind, col_index,
                    col_sign, m.actuator_ctrllimited, m.actuator_ctrlrange, m.jnt_type,
                    m.jnt_qposadr, m.jnt_dofadr, de.qpos, de.qvel, de.act, de.ctrl, de.qacc)
        evaluate(de)
        gather(de, c0)


def _check_no_sleep(m: Model, func: str) -> None:
    from .kernels.sleep import active
    if active(m):
        raise NotImplementedError(
            f"{func} with <option><flag sleep=\"enable\"/> is not supported yet "
            "(sleeping trees in the nudged evaluations)")


def transition_fd(m: Model, d: Data, eps: Optional[float] = None, flg_centered: bool = False,
                  outputs: str = "ABCD", max_worlds: Optional[int] = None) -> TransitionFD:
    """Finite-differenced transition matrices of every world, as mjd_transitionFD:
    d(next state) = A dx + B du, d(sensordata) = C dx + D du, x = (qpos in the tangent
    space, qvel, act), u = ctrl.

    ``eps``: the nudge (default 1e-6 in f64, 1e-3 in f32, where 1e-6 would leave
    mostly round-off). ``outputs``: which of "ABCD" to compute (state columns are
    evaluated only for A or C, control columns only for B or D). ``max_worlds``: the
    most worlds stepped at once (default: what FD_MEMORY_BUDGET bytes of Data hold, at
    least nworld). Reads
    d's state, controls, applied forces, mocap poses, equality flags and warmstart
    (every evaluation starts from d's qacc_warmstart, as MuJoCo's); d is not written.
    Returns a TransitionFD of numpy arrays (nworld first). RK4 is refused, as MuJoCo.
    """
    eps = _check_eps(eps)
    if m.opt.integrator == INT_RK4:
        raise ValueError("transition_fd: RK4 integrator is not supported (as "
                         "mjd_transitionFD)")
    _check_no_sleep(m, "transition_fd")
    outputs = str(outputs).upper()
    if set(outputs) - set("ABCD"):
        raise ValueError(f"transition_fd: outputs must be letters of 'ABCD', got {outputs!r}")
    from .forward import step
    nq, nv, na, nu, ns = m.nq, m.nv, m.na, m.nu, m.nsensordata
    ndx = 2 * nv + na
    centered = bool(flg_centered)
    want_state = "A" in outputs or "C" in outputs
    want_ctrl = "B" in outputs or "D" in outputs
    # columns: 0 nominal, then per input (qpos dofs, qvel, act, ctrl) + and - nudges
    kinds, index, sign = [_k.NOMINAL], [0], [0]
    ninput = ndx + nu
    in_plus = np.zeros(ninput, np.int32)
    in_minus = np.full(ninput, -1, np.int32)
    groups = []
    if want_state:
        groups += [(_k.QPOS, 0, nv), (_k.QVEL, nv, nv), (_k.ACT, 2 * nv, na)]
    if want_ctrl:
        groups += [(_k.CTRL, ndx, nu)]
    for kind, start, count in groups:
        for i in range(count):
            in_plus[start + i] = len(kinds)
            kinds.append(kind)
            index.append(i)
            sign.append(0 if kind == _k.CTRL and not centered else 1)
            if centered:
                in_minus[start + i] = len(kinds)
                kinds.append(kind)
                index.append(i)
                sign.append(-1)
    ncol = len(kinds)
    nworld = d.nworld
    fdtype = _fdtype(m)
    out_state = ti.ndarray(fdtype, (ncol, nworld, max(1, nq + nv + na)))
    out_sens = ti.ndarray(fdtype, (ncol, nworld, max(1, ns)))

    def gather(de, c0):
        _k._gather_state(nworld, c0, ncol, nq, nv, na, ns, de.qpos, de.qvel, de.act,
                         de.sensordata, out_state, out_sens)

    _run_columns(m, d, kinds, index, sign, eps, centered, max_worlds,
                 lambda de: step(m, de), gather)
    jac_state = ti.ndarray(fdtype, (nworld, max(1, ndx), max(1, ninput)))
    jac_sens = ti.ndarray(fdtype, (nworld, max(1, ns), max(1, ninput)))
    if ninput:
        _k._diff_transition(eps, int(centered), nq, nv, na, nu, ns, m.njnt,
                            _int_array(in_plus), _int_array(in_minus),
                            m.actuator_ctrllimited, m.actuator_ctrlrange, m.jnt_type,
                            m.jnt_qposadr, m.jnt_dofadr, d.ctrl, out_state, out_sens,
                            jac_state, jac_sens)
    js = jac_state.to_numpy()[:, :ndx, :ninput].astype(np.float64)
    jsn = jac_sens.to_numpy()[:, :ns, :ninput].astype(np.float64)
    return TransitionFD(
        A=js[:, :, :ndx].copy() if "A" in outputs else None,
        B=js[:, :, ndx:].copy() if "B" in outputs else None,
        C=jsn[:, :, :ndx].copy() if "C" in outputs else None,
        D=jsn[:, :, ndx:].copy() if "D" in outputs else None)


_INVERSE_OUTPUTS = ("DfDq", "DfDv", "DfDa", "DsDq", "DsDv", "DsDa", "DmDq")


def inverse_fd(m: Model, d: Data, eps: Optional[float] = None, flg_actuation: bool = False,
               outputs=_INVERSE_OUTPUTS, max_worlds: Optional[int] = None) -> InverseFD:
    """Finite-differenced Jacobians of (qfrc_inverse, sensordata, qM) = inverse(qpos,
    qvel, qacc) for every world, as mjd_inverseFD (forward differences; qpos nudged in
    the tangent space; ``eps`` as transition_fd's). ``flg_actuation``: subtract
    qfrc_actuator (mj_fwdActuation of d's ctrl and act) from qfrc_inverse. ``outputs``: names of InverseFD fields to
    return (all by default). Reads d's state, qacc and inputs; d is not written.
    RK4 and the noslip solver are refused, as MuJoCo.
    """
    eps = _check_eps(eps)
    if m.opt.integrator == INT_RK4:
        raise ValueError("inverse_fd: RK4 integrator is not supported (as mjd_inverseFD)")
    if m.opt.noslip_iterations:
        raise ValueError("inverse_fd: noslip solver is not supported (as mjd_inverseFD)")
    _check_no_sleep(m, "inverse_fd")
    outputs = tuple(outputs)
    unknown = set(outputs) - set(_INVERSE_OUTPUTS)
    if unknown:
        raise ValueError(f"inverse_fd: unknown outputs {sorted(unknown)}; choose from "
                         f"{_INVERSE_OUTPUTS}")
    from .forward import inverse
    nv, nM, ns = m.nv, m.nM, m.nsensordata
    kinds = [_k.NOMINAL] + [_k.QPOS] * nv + [_k.QVEL] * nv + [_k.QACC] * nv
    index = [0] + list(range(nv)) * 3
    sign = [0] + [1] * (3 * nv)
    ncol = len(kinds)
    nworld = d.nworld
    fdtype = _fdtype(m)
    out_force = ti.ndarray(fdtype, (ncol, nworld, max(1, nv)))
    out_mass = ti.ndarray(fdtype, (ncol, nworld, max(1, nM)))
    out_sens = ti.ndarray(fdtype, (ncol, nworld, max(1, ns)))

    def evaluate(de):
        inverse(m, de)
        if flg_actuation:
            actuation(m, de)

    def gather(de, c0):
        _k._gather_inverse(nworld, c0, ncol, nv, nM, ns, int(bool(flg_actuation)),
                           de.qfrc_inverse, de.qfrc_actuator, de.qM, de.sensordata,
                           out_force, out_mass, out_sens)

    _run_columns(m, d, kinds, index, sign, eps, False, max_worlds, evaluate, gather)
    jac_force = ti.ndarray(fdtype, (nworld, max(1, 3 * nv), max(1, nv)))
    jac_mass = ti.ndarray(fdtype, (nworld, max(1, nv), max(1, nM)))
    jac_sens = ti.ndarray(fdtype, (nworld, max(1, 3 * nv), max(1, ns)))
    if nv:
        _k._diff_inverse(eps, nv, nM, ns, out_force, out_mass, out_sens, jac_force,
                         jac_mass, jac_sens)
    f = jac_force.to_numpy()[:, :3 * nv, :nv].astype(np.float64)
    s = jac_sens.to_numpy()[:, :3 * nv, :ns].astype(np.float64)
    mass = jac_mass.to_numpy()[:, :nv, :nM].astype(np.float64)
    parts = {"DfDq": f[:, :nv], "DfDv": f[:, nv:2 * nv], "DfDa": f[:, 2 * nv:],
             "DsDq": s[:, :nv], "DsDv": s[:, nv:2 * nv], "DsDa": s[:, 2 * nv:],
             "DmDq": mass}
    return InverseFD(**{k: (parts[k].copy() if k in outputs else None)
                        for k in _INVERSE_OUTPUTS})


def _quats(name: str, q) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    if q.shape[-1:] != (4,) or q.ndim not in (1, 2):
        raise ValueError(f"{name}: expected shape (4,) or (n, 4), got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"{name}: values must be finite")
    return q.reshape(-1, 4)


def _device(values: np.ndarray) -> "ti.Ndarray":
    from . import backend
    dtype = backend.float_dtype()
    arr = ti.ndarray(dtype, values.shape)
    arr.from_numpy(np.ascontiguousarray(values, dtype=np.float64 if dtype == ti.f64
                                        else np.float32))
    return arr


def sub_quat_deriv(qa, qb):
    """Derivatives of sub_quat(qa, qb) (the rotation vector from qb to qa) with respect
    to qa and qb in their tangent spaces, as mjd_subQuat: (Da, Db), each (3, 3) for
    single quaternions or (n, 3, 3) for (n, 4) inputs (one broadcasts)."""
    a = _quats("qa", qa)
    b = _quats("qb", qb)
    if len(a) != len(b) and 1 not in (len(a), len(b)):
        raise ValueError(f"sub_quat_deriv: {len(a)} qa against {len(b)} qb")
    n = max(len(a), len(b))
    a = np.broadcast_to(a, (n, 4))
    b = np.broadcast_to(b, (n, 4))
    from . import backend
    dtype = backend.float_dtype()
    da = ti.ndarray(dtype, (n, 3, 3))
    db = ti.ndarray(dtype, (n, 3, 3))
    _k._sub_quat_deriv(_device(a), _device(b), da, db)
    da, db = da.to_numpy().astype(np.float64), db.to_numpy().astype(np.float64)
    if np.ndim(qa) == 1 and np.ndim(qb) == 1:
        return da[0], db[0]
    return da, db


def quat_integrate_deriv(vel, scale):
    """Derivatives of quat_integrate(quat, vel, scale) as mjd_quatIntegrate: (Dquat,
    Dvel, Dscale) of shapes (3, 3), (3, 3), (3,) for one vel (3,) and scalar scale, or
    (n, 3, 3), (n, 3, 3), (n, 3) for vel (n, 3) and/or scale (n,)."""
    v = np.asarray(vel, dtype=np.float64)
    s = np.asarray(scale, dtype=np.float64)
    if v.shape[-1:] != (3,) or v.ndim not in (1, 2):
        raise ValueError(f"vel: expected shape (3,) or (n, 3), got {v.shape}")
    if s.ndim > 1:
        raise ValueError(f"scale: expected a number or shape (n,), got {s.shape}")
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(s))):
        raise ValueError("quat_integrate_deriv: vel and scale must be finite")
    v2 = v.reshape(-1, 3)
    s1 = s.reshape(-1)
    if len(v2) != len(s1) and 1 not in (len(v2), len(s1)):
        raise ValueError(f"quat_integrate_deriv: {len(v2)} vel against {len(s1)} scale")
    n = max(len(v2), len(s1))
    from . import backend
    dtype = backend.float_dtype()
    dquat = ti.ndarray(dtype, (n, 3, 3))
    dvel = ti.ndarray(dtype, (n, 3, 3))
    dscale = ti.ndarray(dtype, (n, 3))
    _k._quat_integrate_deriv(_device(np.broadcast_to(v2, (n, 3))),
                             _device(np.broadcast_to(s1, (n,))), dquat, dvel, dscale)
    out = tuple(x.to_numpy().astype(np.float64) for x in (dquat, dvel, dscale))
    if v.ndim == 1 and s.ndim == 0:
        return tuple(x[0] for x in out)
    return out
