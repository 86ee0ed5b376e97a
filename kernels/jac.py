"""Jacobians of points on bodies, batched over worlds (mj_jac family, mj_applyFT).

These are host utilities, not pipeline stages: each takes the per-world point (or
reads it from Data) and returns numpy arrays ``jacp, jacr`` of shape (nworld, 3, nv),
computed by one kernel launch from ``cdof`` and ``subtree_com`` (run forward, or at
least kinematics + com_pos, first).
"""
import numpy as np
import taichi as ti

from .bind import launch
from .math import param_row

ND = ti.types.ndarray()


@ti.func
def _jac_point(worldid, body, point, weight, jacp: ti.template(), jacr: ti.template(),
               body_rootid: ti.template(), body_dofnum: ti.template(),
               body_dofadr: ti.template(), body_parentid: ti.template(),
               dof_parentid: ti.template(), subtree_com: ti.template(),
               cdof: ti.template(), rot: ti.template()):
    """Adds weight * (jacp, jacr [if rot]) of ``point`` on ``body`` into world's rows."""
    offset = point - subtree_com[worldid, body_rootid[body]]
    b = body
    while b > 0 and body_dofnum[b] == 0:
        b = body_parentid[b]
    if b > 0:
        dofid = body_dofadr[b] + body_dofnum[b] - 1
        while dofid >= 0:
            dof = cdof[worldid, dofid]
            ang = ti.Vector([dof[0], dof[1], dof[2]])
            lin = ti.Vector([dof[3], dof[4], dof[5]]) + ang.cross(offset)
            for k in ti.static(range(3)):
                jacp[worldid, k, dofid] += weight * lin[k]
                if ti.static(rot):
                    jacr[worldid, k, dofid] += weight * ang[k]
            dofid = dof_parentid[dofid]


@ti.kernel
def _jac(
    # model
    body_rootid: ND, body_dofnum: ND, body_dofadr: ND, body_parentid: ND,
    dof_parentid: ND, nv: ti.i32, body: ti.i32,
    # data in
    subtree_com: ND, cdof: ND, point: ND,
    # out
    jacp: ND, jacr: ND,
):
    nworld = jacp.shape[0]
    for worldid, k, dofid in ti.ndrange(nworld, 3, nv):
        jacp[worldid, k, dofid] = 0.0
        jacr[worldid, k, dofid] = 0.0
    for worldid in range(nworld):
        p = ti.Vector([point[worldid, 0], point[worldid, 1], point[worldid, 2]])
        _jac_point(worldid, body, p, 1.0, jacp, jacr, body_rootid, body_dofnum,
                   body_dofadr, body_parentid, dof_parentid, subtree_com, cdof, True)


@ti.kernel
def _jac_subtree_com(
    # model
    body_rootid: ND, body_dofnum: ND, body_dofadr: ND, body_parentid: ND,
    dof_parentid: ND, body_mass: ND, body_subtreemass: ND, body_subtree_adr: ND,
    body_subtree_num: ND, body_subtree: ND, nv: ti.i32, body: ti.i32,
    # data in
    subtree_com: ND, cdof: ND, xipos: ND,
    # out
    jacp: ND,
):
    nworld = jacp.shape[0]
    for worldid, k, dofid in ti.ndrange(nworld, 3, nv):
        jacp[worldid, k, dofid] = 0.0
    for worldid in range(nworld):
        total = body_subtreemass[param_row(worldid, body_subtreemass), body]
        adr = body_subtree_adr[body]
        for s in range(body_subtree_num[body]):
            b = body_subtree[adr + s]
            weight = body_mass[param_row(worldid, body_mass), b] / total
            _jac_point(worldid, b, xipos[worldid, b], weight, jacp, jacp, body_rootid,
                       body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com,
                       cdof, False)


def _points(d, point) -> np.ndarray:
    p = np.asarray(point, dtype=np.float64)
    if p.shape == (3,):
        p = np.tile(p, (d.nworld, 1))
    if p.shape != (d.nworld, 3):
        raise ValueError(f"point: expected shape (3,) or ({d.nworld}, 3), got {p.shape}")
    return p


def _check_id(kind: str, i: int, n: int) -> int:
    if not 0 <= int(i) < n:
        raise ValueError(f"invalid {kind} id {i} (model has {n})")
    return int(i)


def jac(m, d, point, body: int):
    """Translational and rotational Jacobians of a point on ``body``, as mj_jac.

    ``point``: global position, (3,) for every world or (nworld, 3). Returns numpy
    ``(jacp, jacr)``, each (nworld, 3, nv). Reads subtree_com, cdof.
    """
    body = _check_id("body", body, m.nbody)
    dtype = d.qvel.dtype
    nv = max(1, m.nv)
    pt = ti.ndarray(dtype, (d.nworld, 3))
    pt.from_numpy(_points(d, point))
    jacp = ti.ndarray(dtype, (d.nworld, 3, nv))
    jacr = ti.ndarray(dtype, (d.nworld, 3, nv))
    launch(_jac, m, d, body=body, point=pt, jacp=jacp, jacr=jacr)
    return jacp.to_numpy()[:, :, :m.nv], jacr.to_numpy()[:, :, :m.nv]


def jac_body(m, d, body: int):
    """Jacobians of the body frame origin (xpos), as mj_jacBody."""
    body = _check_id("body", body, m.nbody)
    return jac(m, d, d.numpy("xpos")[:, body], body)


def jac_body_com(m, d, body: int):
    """Jacobians of the body's center of mass (xipos), as mj_jacBodyCom."""
    body = _check_id("body", body, m.nbody)
    return jac(m, d, d.numpy("xipos")[:, body], body)


def jac_geom(m, d, geom: int):
    """Jacobians of the geom center (geom_xpos), as mj_jacGeom."""
    geom = _check_id("geom", geom, m.ngeom)
    return jac(m, d, d.numpy("geom_xpos")[:, geom], int(m.arrays.geom_bodyid[geom]))


def jac_site(m, d, site: int):
    """Jacobians of the site (site_xpos), as mj_jacSite."""
    site = _check_id("site", site, m.nsite)
    return jac(m, d, d.numpy("site_xpos")[:, site], int(m.arrays.site_bodyid[site]))


def jac_subtree_com(m, d, body: int):
    """Translational Jacobian of the subtree center of mass of ``body``, as
    mj_jacSubtreeCom: numpy (nworld, 3, nv). Reads subtree_com, cdof, xipos."""
    body = _check_id("body", body, m.nbody)
    jacp = ti.ndarray(d.qvel.dtype, (d.nworld, 3, max(1, m.nv)))
    launch(_jac_subtree_com, m, d, body=body, jacp=jacp)
    return jacp.to_numpy()[:, :, :m.nv]


def apply_ft(m, d, force, torque, point, body: int, qfrc_target):
    """Add J' force + Jr' torque (applied at ``point`` on ``body``) to qfrc_target, as
    mj_applyFT.

    force, torque, point: (3,) or (nworld, 3); either of force/torque may be None.
    qfrc_target: a numpy (nworld, nv) array (updated in place) or a Taichi ndarray
    such as ``d.qfrc_applied`` (read, added to, written back). Returns the new value
    as numpy.
    """
    jacp, jacr = jac(m, d, point, body)
    qforce = np.zeros((d.nworld, m.nv))
    if force is not None:
        qforce += np.einsum("wkv,wk->wv", jacp, _points(d, force))
    if torque is not None:
        qforce += np.einsum("wkv,wk->wv", jacr, _points(d, torque))
    if isinstance(qfrc_target, np.ndarray):
        qfrc_target += qforce
        return qfrc_target
    full = qfrc_target.to_numpy()
    full[:, :m.nv] += qforce
    qfrc_target.from_numpy(full)
    return full[:, :m.nv]
