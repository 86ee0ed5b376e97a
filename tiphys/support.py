"""Support functions of MuJoCo's API on every world at once: Jacobian derivatives,
point/axis Jacobians, the angular momentum matrix, object velocities and
accelerations, local-to-global frames, qpos differences and integration, total mass,
products with the constraint Jacobian and the bad-state checks.

Conventions, shared by every function here:

- ``(m, d, ...)`` as MuJoCo's ``mj_*(m, d, ...)``, without the output arguments:
  results are returned as numpy arrays with a leading ``nworld`` axis
  (``jac_dot`` -> ``(nworld, 3, nv)``, ``object_velocity`` -> ``(nworld, 6)``).
- What MuJoCo takes per call as a vector (a point, an axis, a force) is given either
  once for all worlds (``(3,)``) or per world (``(nworld, 3)``).
- Object ids (body, geom, ...) are ints, the same in every world. An id out of range
  raises ``IndexError``, a wrongly shaped array ``ValueError``, both naming the
  argument.
- The work runs on the device, one or two kernel launches over all worlds
  (kernels/support.py); the host only validates and shapes the arguments.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import taichi as ti

from . import backend
from .kernels import support as _k
from .kernels.check import check as _check
from .kernels.consts import MAXVAL, MINVAL, OBJ_BODY, OBJ_CAMERA, OBJ_GEOM, OBJ_SITE, OBJ_XBODY
from .model import Data, Model

# mjtObj values of the objects with a spatial frame, and their names
_OBJ_FRAMES = {OBJ_BODY: "body", OBJ_XBODY: "xbody", OBJ_GEOM: "geom", OBJ_SITE: "site",
               OBJ_CAMERA: "camera"}
_OBJ_BY_NAME = {"body": OBJ_BODY, "xbody": OBJ_XBODY, "geom": OBJ_GEOM, "site": OBJ_SITE,
                "camera": OBJ_CAMERA, "cam": OBJ_CAMERA}


def check_id(func: str, arg: str, value, count: int, what: str) -> int:
    """``value`` as an int in [0, count), else IndexError naming the argument."""
    try:
        i = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{func}: {arg} must be an int, got {value!r}") from None
    if i != value or not 0 <= i < count:
        raise IndexError(f"{func}: {arg} {value!r} out of range ({what}={count})")
    return i


def per_world(func: str, arg: str, value, nworld: int, shape: tuple) -> np.ndarray:
    """``value`` given once (``shape``) or per world (``(nworld, *shape)``), as a float64
    numpy array (nworld, *shape)."""
    a = np.asarray(value, dtype=np.float64)
    if a.shape == shape:
        a = np.broadcast_to(a, (nworld,) + shape)
    if a.shape != (nworld,) + shape:
        raise ValueError(f"{func}: {arg} must have shape {shape} or {(nworld,) + shape}, "
                         f"got {a.shape}")
    return np.ascontiguousarray(a)


def _device(a: np.ndarray):
    """A numpy array (float) on the device in the engine's precision."""
    dtype = backend.float_dtype()
    arr = ti.ndarray(dtype, a.shape)
    arr.from_numpy(a.astype(np.float64 if dtype == ti.f64 else np.float32))
    return arr


def _out(*shape):
    return ti.ndarray(backend.float_dtype(), tuple(max(1, n) for n in shape))


def _numpy(arr, *shape) -> np.ndarray:
    return arr.to_numpy().astype(np.float64)[tuple(slice(0, n) for n in shape)]


# ---------------------------------------------------------------- Jacobians


def jac_dot(m: Model, d: Data, point, body: int):
    """Time derivatives of the translational and rotational Jacobians of a point on
    ``body``, as mj_jacDot.

    ``point``: global position, (3,) or (nworld, 3). Returns numpy ``(jacp, jacr)``,
    each (nworld, 3, nv). Reads subtree_com, cdof, cdof_dot, cvel (run forward, or
    kinematics, com_pos and com_vel, first).
    """
    body = check_id("jac_dot", "body", body, m.nbody, "nbody")
    pt = _device(per_world("jac_dot", "point", point, d.nworld, (3,)))
    jacp, jacr = _out(d.nworld, 3, m.nv), _out(d.nworld, 3, m.nv)
    _k.jac_dot(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid,
               m.dof_parentid, m.dof_jntid, m.dof_bodyid, m.jnt_type, m.jnt_dofadr, m.nv,
               body, d.subtree_com, d.cdof, d.cdof_dot, d.cvel, pt, jacp, jacr)
    return _numpy(jacp, d.nworld, 3, m.nv), _numpy(jacr, d.nworld, 3, m.nv)


def jac_point_axis(m: Model, d: Data, point, axis, body: int):
    """Translational Jacobian of a point and the Jacobian of an axis (both fixed on
    ``body``), as mj_jacPointAxis: d(axis)/dqvel = jacr columns crossed with axis.

    ``point``, ``axis``: global, (3,) or (nworld, 3). Returns numpy
    ``(jac_point, jac_axis)``, each (nworld, 3, nv). Reads subtree_com, cdof.
    """
    body = check_id("jac_point_axis", "body", body, m.nbody, "nbody")
    pt = _device(per_world("jac_point_axis", "point", point, d.nworld, (3,)))
    ax = _device(per_world("jac_point_axis", "axis", axis, d.nworld, (3,)))
    jacp, jacr, jaxis = (_out(d.nworld, 3, m.nv) for _ in range(3))
    _k.jac_point_axis(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid,
                      m.dof_parentid, m.nv, body, d.subtree_com, d.cdof, pt, ax, jacp,
                      jacr, jaxis)
    return _numpy(jacp, d.nworld, 3, m.nv), _numpy(jaxis, d.nworld, 3, m.nv)


def angmom_mat(m: Model, d: Data, body: int) -> np.ndarray:
    """The matrix mapping qvel to the angular momentum of ``body``'s subtree about the
    subtree's center of mass, as mj_angmomMat: numpy (nworld, 3, nv).

    Reads subtree_com, cdof, xipos, ximat and the body masses and inertias.
    """
    body = check_id("angmom_mat", "body", body, m.nbody, "nbody")
    mat = _out(d.nworld, 3, m.nv)
    _k.angmom_mat(m.body_rootid, m.body_dofnum, m.body_dofadr, m.body_parentid,
                  m.dof_parentid, m.body_mass, m.body_inertia, m.body_subtree_adr,
                  m.body_subtree_num, m.body_subtree, m.nv, body, d.subtree_com, d.cdof,
                  d.xipos, d.ximat, mat)
    return _numpy(mat, d.nworld, 3, m.nv)


# ------------------------------------------------------- object frames and motion


def _object_frame(func: str, m: Model, d: Data, objtype, objid):
    """(body id, object id, position array, orientation array) of a framed object."""
    if isinstance(objtype, str):
        code = _OBJ_BY_NAME.get(objtype.lower())
    else:
        try:
            code = int(objtype)
        except (TypeError, ValueError):
            code = None
    if code not in _OBJ_FRAMES:
        raise ValueError(f"{func}: objtype {objtype!r} has no spatial frame; one of "
                         f"{sorted(set(_OBJ_BY_NAME))} (or mjOBJ_BODY, XBODY, GEOM, SITE, "
                         f"CAMERA)")
    a = m.arrays
    kind = _OBJ_FRAMES[code]
    if kind in ("body", "xbody"):
        i = check_id(func, "objid", objid, m.nbody, "nbody")
        pos, mat = (d.xipos, d.ximat) if kind == "body" else (d.xpos, d.xmat)
        return i, i, pos, mat
    count, bodyid, pos, mat = {
        "geom": (m.ngeom, a.geom_bodyid, d.geom_xpos, d.geom_xmat),
        "site": (m.nsite, a.site_bodyid, d.site_xpos, d.site_xmat),
        "camera": (m.ncam, a.cam_bodyid, d.cam_xpos, d.cam_xmat)}[kind]
    i = check_id(func, "objid", objid, count, "n" + ("cam" if kind == "camera" else kind))
    return int(np.asarray(bodyid).reshape(-1)[i]), i, pos, mat


def _object_motion(func, m, d, objtype, objid, local, acceleration):
    bodyid, i, pos, mat = _object_frame(func, m, d, objtype, objid)
    res = _out(d.nworld, 6)
    _k.object_motion(m.body_weldid, m.body_rootid, bodyid, i, pos, mat, d.subtree_com,
                     d.cvel, d.cacc, res, int(bool(local)), acceleration)
    return _numpy(res, d.nworld, 6)


def object_velocity(m: Model, d: Data, objtype, objid: int, local: bool = False):
    """6D velocity (rot:lin) of an object in a frame centered on it, as
    mj_objectVelocity: world-aligned axes, or the object's own with ``local=True``.

    ``objtype``: 'body' (inertial frame), 'xbody' (body frame), 'geom', 'site',
    'camera', or the matching mujoco.mjtObj value. Returns numpy (nworld, 6); zero for
    objects on bodies welded to the world. Reads cvel, subtree_com and the object's
    position and orientation.
    """
    return _object_motion("object_velocity", m, d, objtype, objid, local, False)


def object_acceleration(m: Model, d: Data, objtype, objid: int, local: bool = False):
    """6D acceleration (rot:lin) of an object in a frame centered on it, as
    mj_objectAcceleration (with the Coriolis term of the moving frame).

    Arguments as object_velocity. Reads cacc (written by rne_post_constraint), cvel,
    subtree_com and the object's position and orientation.
    """
    return _object_motion("object_acceleration", m, d, objtype, objid, local, True)


def local2global(m: Model, d: Data, pos, quat, body: int, sameframe: int = 0):
    """Global position and orientation of a frame given in ``body``'s coordinates, as
    mj_local2Global.

    ``pos`` (3,) / (nworld, 3) and ``quat`` (4,) / (nworld, 4); either may be None (its
    output is then None, as MuJoCo skips it). ``sameframe`` (mjtSameFrame 0..4) takes
    MuJoCo's shortcuts: 1 body frame, 2 inertial frame, 3 body orientation, 4 inertial
    orientation. Returns numpy ``(xpos (nworld, 3), xmat (nworld, 3, 3))``. Reads xpos,
    xquat, xmat, xipos, ximat.
    """
    func = "local2global"
    body = check_id(func, "body", body, m.nbody, "nbody")
    sf = check_id(func, "sameframe", sameframe, 5, "mjtSameFrame values")
    p = np.zeros(3) if pos is None else pos
    q = np.array([1.0, 0.0, 0.0, 0.0]) if quat is None else quat
    pd = _device(per_world(func, "pos", p, d.nworld, (3,)))
    qd = _device(per_world(func, "quat", q, d.nworld, (4,)))
    out_pos, out_mat = _out(d.nworld, 3), _out(d.nworld, 3, 3)
    _k.local2global(d.xpos, d.xquat, d.xmat, d.xipos, d.ximat, body, sf, pd, qd, out_pos,
                    out_mat)
    return (None if pos is None else _numpy(out_pos, d.nworld, 3),
            None if quat is None else _numpy(out_mat, d.nworld, 3, 3))


# ---------------------------------------------------------------- qpos arithmetic


def _is_device(x) -> bool:
    return not isinstance(x, np.ndarray) and hasattr(x, "to_numpy") and hasattr(x, "shape")


def _rows(func: str, arg: str, x, ncol: int, nrows: Optional[int] = None):
    """(device array (n, max(1, ncol)), n, was 1-D) of a batch of vectors: a Taichi
    ndarray (used as it is) or numpy (ncol,) / (n, ncol); a 1-D vector is repeated to
    ``nrows`` rows when given."""
    if _is_device(x):
        shape = tuple(x.shape)
        if len(shape) != 2 or shape[1] != max(1, ncol):
            raise ValueError(f"{func}: {arg} must be a (n, {ncol}) array, got a Taichi "
                             f"ndarray of shape {shape}")
        if nrows is not None and shape[0] != nrows:
            raise ValueError(f"{func}: {arg} has {shape[0]} rows, expected {nrows}")
        return x, shape[0], False
    a = np.asarray(x, dtype=np.float64)
    one = a.ndim == 1
    if one:
        a = a[None]
    if a.ndim != 2 or a.shape[1] != ncol:
        raise ValueError(f"{func}: {arg} must have shape ({ncol},) or (n, {ncol}), "
                         f"got {np.shape(x)}")
    if nrows is not None and a.shape[0] != nrows:
        if a.shape[0] != 1:
            raise ValueError(f"{func}: {arg} has {a.shape[0]} rows, expected {nrows}")
        a = np.repeat(a, nrows, axis=0)
    padded = np.zeros((a.shape[0], max(1, ncol)))
    padded[:, :ncol] = a
    return _device(padded), a.shape[0], one


def _nrows(func: str, pairs) -> int:
    """The common row count of several batched arguments (1-D ones broadcast)."""
    counts = set()
    for arg, x, ncol in pairs:
        if _is_device(x):
            counts.add(int(x.shape[0]))
        else:
            a = np.asarray(x)
            if a.ndim == 2:
                counts.add(a.shape[0])
    if len(counts) > 1:
        raise ValueError(f"{func}: {', '.join(p[0] for p in pairs)} have different "
                         f"numbers of rows {sorted(counts)}")
    return counts.pop() if counts else 1


def _write_back(x, result: np.ndarray):
    """Update a numpy argument in place (as MuJoCo's functions do) when possible."""
    if isinstance(x, np.ndarray) and x.flags.writeable and x.shape == result.shape:
        x[...] = result


def differentiate_pos(m: Model, dt: float, qpos1, qpos2) -> np.ndarray:
    """The velocity that takes qpos1 to qpos2 in time dt, as mj_differentiatePos
    (quaternion joints by their rotation vector).

    ``qpos1``, ``qpos2``: (nq,) or (n, nq) numpy arrays (one 1-D argument is used for
    every row) or Taichi ndarrays such as ``d.qpos``. Returns numpy (nv,) for two 1-D
    arguments, else (n, nv).
    """
    func = "differentiate_pos"
    n = _nrows(func, [("qpos1", qpos1, m.nq), ("qpos2", qpos2, m.nq)])
    q1, _, one1 = _rows(func, "qpos1", qpos1, m.nq, n)
    q2, _, one2 = _rows(func, "qpos2", qpos2, m.nq, n)
    qvel = _out(n, m.nv)
    _k.differentiate_pos(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, m.njnt, float(dt), q1,
                         q2, qvel)
    out = _numpy(qvel, n, m.nv)
    return out[0] if one1 and one2 else out


def integrate_pos(m: Model, qpos, qvel, dt: float):
    """qpos advanced by qvel over dt, as mj_integratePos (quaternions rotated by
    the angular velocity, in the joint's local frame).

    ``qpos``: (nq,) / (n, nq) numpy, or a Taichi ndarray such as ``d.qpos``; ``qvel``:
    (nv,) / (n, nv) numpy or a Taichi ndarray. As MuJoCo, qpos is updated in place (a
    Taichi ndarray on the device, a writeable float numpy array in memory); the result
    is also returned (numpy, qpos's shape; None for a Taichi ndarray).
    """
    func = "integrate_pos"
    n = _nrows(func, [("qpos", qpos, m.nq), ("qvel", qvel, m.nv)])
    q, _, one = _rows(func, "qpos", qpos, m.nq, n)
    v, _, _ = _rows(func, "qvel", qvel, m.nv, n)
    _k.integrate_pos(m.jnt_type, m.jnt_qposadr, m.jnt_dofadr, m.njnt, float(dt), v, q)
    if _is_device(qpos):
        return None
    out = _numpy(q, n, m.nq)
    out = out[0] if one else out
    _write_back(qpos, out)
    return out


def normalize_quat(m: Model, qpos):
    """Every free and ball joint quaternion in qpos normalized, as mj_normalizeQuat.

    ``qpos``: (nq,) / (n, nq) numpy or a Taichi ndarray such as ``d.qpos``, updated in
    place as integrate_pos; the numpy result is also returned.
    """
    q, n, one = _rows("normalize_quat", "qpos", qpos, m.nq)
    _k.normalize_quat(m.jnt_type, m.jnt_qposadr, m.njnt, q)
    if _is_device(qpos):
        return None
    out = _numpy(q, n, m.nq)
    out = out[0] if one else out
    _write_back(qpos, out)
    return out


# ---------------------------------------------------------------- total mass


def get_total_mass(m: Model):
    """Sum of the body masses (world excluded), as mj_getTotalmass: a float, or a numpy
    array with one total per parameter set when body_mass is given per world."""
    mass = m.body_mass.to_numpy().astype(np.float64)[:, 1:m.nbody]
    total = mass.sum(axis=1)
    return float(total[0]) if total.shape[0] == 1 else total


def set_total_mass(m: Model, newmass) -> None:
    """Scale every body's mass and inertia so that the total mass is ``newmass``, as
    mj_setTotalmass (scale = max(1e-15, newmass / max(1e-15, total))).

    As MuJoCo, only body_mass and body_inertia change (device arrays and the host copy
    ``m.arrays``); derived constants such as body_subtreemass, body_invweight0 and
    dof_invweight0 keep their values until ``tiphys.set_const(m)`` (mj_setConst).
    ``newmass``: a float, or one per parameter set when body_mass is given per world.
    """
    mass = m.body_mass.to_numpy()
    inertia = m.body_inertia.to_numpy()
    nset = mass.shape[0]
    target = np.asarray(newmass, dtype=np.float64)
    if target.ndim == 0:
        target = np.full(nset, float(target))
    if target.shape != (nset,):
        raise ValueError(f"set_total_mass: newmass must be a float or have shape ({nset},), "
                         f"got {target.shape}")
    if not np.all(np.isfinite(target)):
        raise ValueError(f"set_total_mass: newmass must be finite, got {newmass!r}")
    total = mass[:, 1:m.nbody].astype(np.float64).sum(axis=1)
    scale = np.maximum(MINVAL, target / np.maximum(MINVAL, total))
    mass[:, 1:m.nbody] = mass[:, 1:m.nbody] * scale[:, None]
    inertia[:, 1:m.nbody] = inertia[:, 1:m.nbody] * scale[:, None, None]
    from .params import set_param
    one = nset == 1  # one set for every world stays one set (and the host copy follows)
    set_param(m, "body_mass", mass[0, :m.nbody] if one else mass[:, :m.nbody])
    set_param(m, "body_inertia", inertia[0, :m.nbody] if one else inertia[:, :m.nbody])


# ----------------------------------------------------- constraint Jacobian products


def efc_J_dense(m: Model, d: Data) -> np.ndarray:
    """The constraint Jacobian as a dense numpy array (nworld, njmax, nv), zero past
    each world's nefc: efc_J for dense models; for sparse ones (``m.is_sparse``, whose
    Data keeps only the non-zeros) built on the host from efc_J_sparse and its row
    structure, as mju_sparse2dense."""
    if not m.is_sparse:
        return d.numpy("efc_J")
    nefc = d.numpy("nefc")
    rownnz = d.numpy("efc_J_rownnz")
    rowadr = d.numpy("efc_J_rowadr")
    colind = d.numpy("efc_J_colind")
    vals = d.numpy("efc_J_sparse")
    out = np.zeros((d.nworld, d.njmax, m.nv), dtype=vals.dtype)
    for w in range(d.nworld):
        for r in range(int(nefc[w])):
            a, n = int(rowadr[w, r]), int(rownnz[w, r])
            out[w, r, colind[w, a:a + n]] = vals[w, a:a + n]
    return out


def mul_jac_vec(m: Model, d: Data, vec) -> np.ndarray:
    """efc_J times a dof-space vector in every world, as mj_mulJacVec.

    ``vec``: (nv,) or (nworld, nv). Returns numpy (nworld, njmax): world w's first
    nefc[w] entries are efc_J vec, the rest zero. Reads nefc, efc_J (sparse-Jacobian
    models: efc_J_sparse and its row structure, as MuJoCo) (run forward, or
    make_constraint, first).
    """
    padded = np.zeros((d.nworld, max(1, m.nv)))
    padded[:, :m.nv] = per_world("mul_jac_vec", "vec", vec, d.nworld, (m.nv,))
    v = _device(padded)
    res = _out(d.nworld, d.njmax)
    if m.is_sparse:
        _k.mul_jac_vec_sparse(d.nefc, d.efc_J_rownnz, d.efc_J_rowadr, d.efc_J_colind,
                              d.efc_J_sparse, v, res)
    else:
        _k.mul_jac_vec(m.nv, d.nefc, d.efc_J, v, res)
    return _numpy(res, d.nworld, d.njmax)


def mul_jac_t_vec(m: Model, d: Data, vec) -> np.ndarray:
    """efc_J' times a constraint-space vector in every world, as mj_mulJacTVec.

    ``vec``: (k,) or (nworld, k) with k >= every world's nefc (e.g. (nworld, njmax));
    world w reads its first nefc[w] entries. Returns numpy (nworld, nv). Reads nefc,
    efc_J (sparse-Jacobian models: efc_J_sparse and its row structure).
    """
    a = np.asarray(vec, dtype=np.float64)
    if a.ndim == 1:
        a = np.broadcast_to(a, (d.nworld, a.shape[0]))
    if a.ndim != 2 or a.shape[0] != d.nworld:
        raise ValueError(f"mul_jac_t_vec: vec must have shape (k,) or ({d.nworld}, k), "
                         f"got {np.shape(vec)}")
    nefc = d.nefc.to_numpy()[:d.nworld]
    if a.shape[1] < nefc.max(initial=0):
        raise ValueError(f"mul_jac_t_vec: vec has {a.shape[1]} entries per world but world "
                         f"{int(np.argmax(nefc))} has nefc={int(nefc.max())} rows")
    padded = np.zeros((d.nworld, max(1, a.shape[1])))
    padded[:, :a.shape[1]] = a
    res = _out(d.nworld, m.nv)
    if m.is_sparse:
        _k.mul_jac_t_vec_sparse(m.nv, d.nefc, d.efc_J_rownnz, d.efc_J_rowadr,
                                d.efc_J_colind, d.efc_J_sparse, _device(padded), res)
    else:
        _k.mul_jac_t_vec(m.nv, d.nefc, d.efc_J, _device(padded), res)
    return _numpy(res, d.nworld, m.nv)


# ---------------------------------------------------------------- bad-state checks


def check_pos(m: Model, d: Data) -> None:
    """mj_checkPos in every world: a world whose qpos has a NaN or a value beyond
    +-1e10 gets warning mjWARN_BADQPOS (warning_number / warning_lastinfo = first bad
    index) and, unless the autoreset flag is disabled, is reset (to qpos0, or the
    keyframe given to make_data / reset_data). Other worlds are untouched."""
    _check(m, d, "pos")


def check_vel(m: Model, d: Data) -> None:
    """mj_checkVel in every world: as check_pos for qvel (mjWARN_BADQVEL)."""
    _check(m, d, "vel")


def check_acc(m: Model, d: Data) -> None:
    """mj_checkAcc in every world: as check_pos for qacc (mjWARN_BADQACC); as MuJoCo,
    a world that was reset is run through forward again, so that it holds the forward
    results of its new state (only those worlds: the others are not touched)."""
    if m.nv == 0:
        return
    qacc = d.numpy("qacc")
    bad = np.flatnonzero(np.any(np.isnan(qacc) | (np.abs(qacc) > MAXVAL), axis=1))
    _check(m, d, "acc")
    if bad.size and not m.opt.disabled("autoreset"):
        _forward_worlds(m, d, bad)


def _model_of_worlds(m: Model, idx, worlds: np.ndarray) -> Model:
    """A copy of ``m`` whose per-world parameters are those of ``worlds`` (in that
    order), for a Data gathered from those worlds; the other fields are shared."""
    import copy

    from .model import _make_array
    from .params import _SHAPES as shapes
    from .types import parse_shape
    sub = copy.copy(m)
    sub.forget_plans()  # plans of m may hold its arrays
    sub._params = {name: values[worlds] for name, values in m._params.items()}
    for name in m._params:
        arr = _make_array(shapes[name], "f", m.arrays.sizes, nbatch=len(worlds))
        _k.world_gather(getattr(m, name), idx, len(parse_shape(shapes[name])[0]) - 1, arr)
        setattr(sub, name, arr)
    return sub


def _forward_worlds(m: Model, d: Data, worlds: np.ndarray) -> None:
    """forward on some worlds only: they are gathered into a scratch Data, run, and
    every Data array is scattered back; the other worlds are not touched."""
    from .forward import forward
    from .types import DATA_EXTRA_FIELDS, DATA_FIELDS, parse_shape
    idx = ti.ndarray(ti.i32, (len(worlds),))
    idx.from_numpy(worlds.astype(np.int32))
    msub = _model_of_worlds(m, idx, worlds) if m._params else m
    sub = Data(msub, len(worlds), nconmax=d.nconmax, njmax=d.njmax, njnnz=d.njnnz or None,
               nhnnz=d.nhnnz or None, nbroadmax=d.nbroadmax or None)
    names = [(name, len(parse_shape(shape)[0]) - 1)
             for name, shape, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS]
    for name, ndim in names:
        _k.world_gather(getattr(d, name), idx, ndim, getattr(sub, name))
    forward(msub, sub)
    for name, ndim in names:
        _k.world_scatter(getattr(sub, name), idx, ndim, getattr(d, name))
