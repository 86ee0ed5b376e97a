"""Model constants computed at qpos0 (MuJoCo's setConst): statistics, dof_length, the
subtree masses and centers of mass, and the cameras' and lights' offsets.

The compiler calls these pieces where its arrays are ready; ``model_constants`` calls
them all in mj_setConst's order on a compiled model's current values (tiphys.set_const).

Kinematics at qpos0 needs no joint motion (hinge/slide at their reference, ball at
identity, free joints at the body pose), so body poses are the static tree
composition. The mass-matrix diagonal for ``meaninertia`` comes from composite
rigid-body inertias about each tree's subtree center of mass.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels.consts import (EPS, GEOM_HFIELD, GEOM_PLANE, JNT_BALL, JNT_FREE, JNT_HINGE,
                              MAXVAL, MINVAL, SAMEFRAME_BODY, SAMEFRAME_INERTIA)
from . import rotation as rot
from .options import Statistic

_EYE3 = np.eye(3)


def subtree_mass(mass, parentid) -> np.ndarray:
    """body_subtreemass: each body's mass plus its descendants' (bodies after parents)."""
    sub = np.asarray(mass, dtype=np.float64).tolist()  # (Python floats: the same additions)
    parent = np.asarray(parentid).tolist()
    for i in range(len(sub) - 1, 0, -1):
        sub[parent[i]] += sub[i]
    return np.array(sub, dtype=np.float64)


def subtree_com(xipos, mass, parentid) -> np.ndarray:
    """Subtree centers of mass (mj_comPos's subtree_com) from the bodies' inertial
    positions; a subtree of (nearly) no mass takes its body's own xipos."""
    mass = np.asarray(mass, dtype=np.float64)
    # subtree sums folded on Python floats (the same additions, in the same order)
    moment = (mass[:, None] * xipos).tolist()
    parent = np.asarray(parentid).tolist()
    for i in range(len(moment) - 1, 0, -1):
        p, c = moment[parent[i]], moment[i]
        p[0] += c[0]
        p[1] += c[1]
        p[2] += c[2]
    moment, sub = np.array(moment, dtype=np.float64).reshape(-1, 3), subtree_mass(mass, parentid)
    return np.where(sub[:, None] < MINVAL, xipos, moment / np.maximum(sub, 1e-300)[:, None])


def cameras0(a, xpos, xquat, com) -> None:
    """cam_pos0, cam_poscom0, cam_mat0 (set0: each camera's pose at qpos0 relative to
    its body and to its target's, or its body's, subtree com) from the cameras' arrays."""
    n = len(a.cam_bodyid)
    pos0, poscom0, mat0 = [], [], []
    for b, tid, pos, quat in zip(a.cam_bodyid.tolist(), a.cam_targetbodyid.tolist(),
                                 a.cam_pos, a.cam_quat):
        gpos = xpos[b] + rot.rotate(xquat[b], pos)
        pos0.append(gpos - xpos[b])
        poscom0.append(gpos - com[tid if tid >= 0 else b])
        mat0.append(rot.quat2mat(rot.quat_mul(xquat[b], quat)))
    a.cam_poscom0 = np.array(poscom0, dtype=np.float64).reshape(n, 3)
    a.cam_pos0 = np.array(pos0, dtype=np.float64).reshape(n, 3)
    a.cam_mat0 = np.array(mat0, dtype=np.float64).reshape(n, 3, 3)


def lights0(a, xpos, xquat, com) -> None:
    """light_pos0, light_poscom0, light_dir0, as cameras0 for the lights."""
    n = len(a.light_bodyid)
    pos0, poscom0, dir0 = [], [], []
    for b, tid, pos, dirn in zip(a.light_bodyid.tolist(), a.light_targetbodyid.tolist(),
                                 a.light_pos, a.light_dir):
        gpos = xpos[b] + rot.rotate(xquat[b], pos)
        pos0.append(gpos - xpos[b])
        poscom0.append(gpos - com[tid if tid >= 0 else b])
        dir0.append(rot.rotate(xquat[b], dirn))
    a.light_poscom0 = np.array(poscom0, dtype=np.float64).reshape(n, 3)
    a.light_pos0 = np.array(pos0, dtype=np.float64).reshape(n, 3)
    a.light_dir0 = np.array(dir0, dtype=np.float64).reshape(n, 3)


def _qpos0_kinematics(a):
    nbody = len(a.body_parentid)
    xpos = np.zeros((nbody, 3))
    xquat = rot.unit_quats(nbody)
    parent = a.body_parentid.tolist()
    if nbody < 32:  # few bodies: one by one (fewer numpy calls)
        for i in range(1, nbody):
            p = parent[i]
            if p == 0:
                xpos[i], xquat[i] = a.body_pos[i], rot.normalize(a.body_quat[i])[0]
            else:
                xpos[i] = xpos[p] + rot.quat2mat(xquat[p]) @ a.body_pos[i]
                xquat[i] = rot.quat_mul(xquat[p], a.body_quat[i])
    else:
        # level by level (parents first): stacked products, each item with the
        # arithmetic of the single one; children of the world take their own frame
        depth, levels = [0] * nbody, {}
        for i in range(1, nbody):
            depth[i] = depth[parent[i]] + 1
            levels.setdefault(depth[i], []).append(i)
        for d, ids in levels.items():
            if d == 1:
                q = a.body_quat[ids]
                n = np.sqrt((q * q).sum(1))  # (normalize's np.dot of 4 numbers, in order)
                small = n < EPS
                q = q / np.where(small, 1.0, n)[:, None]
                q[small] = (1.0, 0.0, 0.0, 0.0)
                xpos[ids], xquat[ids] = a.body_pos[ids], q
                continue
            par = a.body_parentid[ids]
            xpos[ids] = xpos[par] + rot.matvec_batch(rot.quat2mat_batch(xquat[par]),
                                                     a.body_pos[ids])
            xquat[ids] = rot.quat_mul_batch(xquat[par], a.body_quat[ids])
    xmat = rot.quat2mat_batch(xquat)
    xipos = xpos + np.einsum("bij,bj->bi", xmat, a.body_ipos)
    xipos[0] = 0
    ximat = xmat @ rot.quat2mat_batch(a.body_iquat)
    ximat[0] = _EYE3
    jb, gb, sb = a.jnt_bodyid, a.geom_bodyid, a.site_bodyid
    xanchor = xpos[jb] + rot.matvec_batch(xmat[jb], a.jnt_pos)
    xaxis = rot.matvec_batch(xmat[jb], a.jnt_axis)
    geom_xpos = _same_frame(xpos[gb] + rot.matvec_batch(xmat[gb], a.geom_pos),
                            a.geom_sameframe, xpos[gb], xipos[gb])
    site_xpos = _same_frame(xpos[sb] + rot.matvec_batch(xmat[sb], a.site_pos),
                            a.site_sameframe, xpos[sb], xipos[sb])
    return xpos, xmat, xipos, ximat, xanchor, xaxis, geom_xpos, site_xpos


def _same_frame(pos, sameframe, body_pos, inertia_pos):
    """mj_local2global: an object in its body's frame (or inertia frame) takes that
    frame's position itself, not the product with its (nearly zero) offset."""
    sameframe = np.asarray(sameframe)
    return np.where((sameframe == SAMEFRAME_BODY)[:, None], body_pos,
                    np.where((sameframe == SAMEFRAME_INERTIA)[:, None], inertia_pos, pos))


def _mass_diag(a, xmat, xipos, ximat, xanchor, xaxis):
    nbody, nv = len(a.body_parentid), len(a.dof_bodyid)
    mass = a.body_mass
    moment = mass[:, None] * xipos
    sub = mass.copy()
    for i in range(nbody - 1, 0, -1):
        moment[a.body_parentid[i]] += moment[i]
    com = np.where(a.body_subtreemass[:, None] < MINVAL, xipos,
                   moment / np.maximum(a.body_subtreemass, 1e-300)[:, None])
    del sub
    # composite spatial inertia (6x6, rotation first) about the root's subtree com
    crb = np.zeros((nbody, 6, 6))
    for i in range(1, nbody):
        c = xipos[i] - com[a.body_rootid[i]]
        inertia = ximat[i] @ np.diag(a.body_inertia[i]) @ ximat[i].T + rot.offcenter(mass[i], c)
        h = mass[i] * c
        hx = np.array([[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]])
        crb[i, :3, :3] = inertia
        crb[i, :3, 3:] = hx
        crb[i, 3:, :3] = -hx
        crb[i, 3:, 3:] = mass[i] * np.eye(3)
    for i in range(nbody - 1, 0, -1):
        p = a.body_parentid[i]
        if p > 0:
            crb[p] += crb[i]
    diag = np.zeros(nv)
    for j in range(len(a.jnt_type)):
        b = a.jnt_bodyid[j]
        da = a.jnt_dofadr[j]
        offset = com[a.body_rootid[b]] - xanchor[j]
        jt = a.jnt_type[j]
        dofs = []
        if jt == 2:
            dofs = [np.concatenate([np.zeros(3), xaxis[j]])]
        elif jt == 3:
            dofs = [np.concatenate([xaxis[j], np.cross(xaxis[j], offset)])]
        else:
            if jt == 0:
                dofs = [np.concatenate([np.zeros(3), e]) for e in np.eye(3)]
            dofs += [np.concatenate([xmat[b][:, k], np.cross(xmat[b][:, k], offset)])
                     for k in range(3)]
        for k, cd in enumerate(dofs):
            diag[da + k] = cd @ crb[b] @ cd + a.dof_armature[da + k]
    return diag


def _flex_body_sizes(a, body, xpos) -> None:
    """setStat: a flex vertex body is at least as large as its edges (a node body as
    its distances to the flex's other nodes)."""
    for f in range(len(getattr(a, "flex_dim", ()))):
        if a.flex_interp[f]:
            nodes = a.flex_nodebodyid[a.flex_nodeadr[f]:a.flex_nodeadr[f] + a.flex_nodenum[f]]
            for b1 in nodes.tolist():
                for b2 in nodes.tolist():
                    body[b1] = max(body[b1], float(np.sqrt(((xpos[b1] - xpos[b2]) ** 2).sum())))
            continue
        vb = a.flex_vertbodyid[a.flex_vertadr[f]:]
        for e in range(a.flex_edgeadr[f], a.flex_edgeadr[f] + a.flex_edgenum[f]):
            b1, b2 = int(vb[a.flex_edge[e, 0]]), int(vb[a.flex_edge[e, 1]])
            body[b1] = max(body[b1], a.flexedge_length0[e])
            body[b2] = max(body[b2], a.flexedge_length0[e])


def _kinematics_of(a, k0):
    """_qpos0_kinematics's tuple from tendon.HostKinematics at qpos0 (any qpos0: free
    and ball joints placed by it), geoms and sites in their bodies' frames as
    mj_local2global places them."""
    xipos, ximat = k0.xipos.copy(), k0.ximat.copy()
    xipos[0], ximat[0] = 0.0, _EYE3
    gb, sb = a.geom_bodyid, a.site_bodyid
    return (k0.xpos, k0.xmat, xipos, ximat, k0.xanchor, k0.xaxis,
            _same_frame(k0.geom_xpos, a.geom_sameframe, k0.xpos[gb], xipos[gb]),
            _same_frame(k0.site_xpos, a.site_sameframe, k0.xpos[sb], xipos[sb]))


def set_stat(a, user: Statistic, start: Statistic = None, kin=None) -> None:
    """setStat: fill ``a.stat`` and ``a.dof_length``. ``user``: values that win (NaN:
    computed); ``start``: the values setStat leaves where it computes none (the
    defaults at compile time); ``kin``: the kinematics at qpos0 (_qpos0_kinematics's
    tuple; made from the tree's rest pose if None)."""
    if kin is None:
        kin = _qpos0_kinematics(a)
    xpos, xmat, xipos, ximat, xanchor, xaxis, geom_xpos, site_xpos = kin
    nbody = len(a.body_parentid)
    if start is None:
        start = Statistic(meaninertia=1.0, meanmass=1.0, meansize=0.2, extent=2.0,
                          center=np.zeros(3))
    stat = Statistic(meaninertia=start.meaninertia, meanmass=start.meanmass,
                     meansize=start.meansize, extent=start.extent,
                     center=np.array(start.center, dtype=np.float64))
    # the bounding box of body, inertial, joint and site points and geom spheres: the
    # running min/max as one reduction each (the same fold, point by point)
    r = a.geom_rbound.copy()
    for g in np.nonzero(~(r > 0))[0].tolist():
        r[g] = 0.0
        if a.geom_type[g] == GEOM_PLANE:
            s = a.geom_size[g]
            r[g] = max(s[0], s[1]) * 0.1 if (s[0] or s[1]) else 1.0
        elif a.geom_type[g] == GEOM_HFIELD:
            r[g] = max(a.hfield_size[a.geom_dataid[g]]) * 0.1
    pts = np.concatenate([np.stack([xpos[1:], xipos[1:]], axis=1).reshape(-1, 3),
                          xanchor, site_xpos])
    lo = np.minimum.reduce(np.concatenate([pts, geom_xpos - r[:, None]]), axis=0,
                           initial=MAXVAL)
    hi = np.maximum.reduce(np.concatenate([pts + 0.0, geom_xpos + r[:, None]]), axis=0,
                           initial=-MAXVAL)
    stat.center = (lo + hi) / 2
    if hi[0] > lo[0]:
        stat.extent = max(1e-5, float((hi - lo).max()))
    # body sizes: the largest distance from the com to a joint anchor or geom sphere
    # (norms of 3-vectors as np.linalg.norm sums them, in order)
    body = [0.0] * nbody  # (Python floats while folding: the same doubles)
    jb = a.jnt_bodyid
    dj = np.sqrt(((xipos[jb] - xanchor) ** 2).sum(1))
    jp = a.body_parentid[jb]
    dp = np.sqrt(((xipos[jp] - xanchor) ** 2).sum(1))
    for b, p, d0, d1 in zip(jb.tolist(), jp.tolist(), dj.tolist(), dp.tolist()):
        body[b] = max(body[b], d0)
        body[p] = max(body[p], d1)
    body[0] = 0.0
    gb = a.geom_bodyid
    dg = (a.geom_rbound + np.sqrt(((xipos[gb] - geom_xpos) ** 2).sum(1))).tolist()
    gbl = gb.tolist()
    for g in np.nonzero((a.geom_rbound > 0) & (gb > 0))[0].tolist():
        i = gbl[g]
        body[i] = max(body[i], dg[g])
    _flex_body_sizes(a, body, xpos)
    body = np.array(body, dtype=np.float64)
    if nbody > 1:
        body[1:] = np.maximum(body[1:], 1e-5)
        stat.meansize = float((body[1:] / (nbody - 1)).sum())
    nv = len(a.dof_bodyid)
    a.dof_length = np.ones(nv)
    jnt_type, jnt_dofadr = a.jnt_type.tolist(), a.jnt_dofadr.tolist()
    rot_dofs = [i for i, j in enumerate(a.dof_jntid.tolist())
                if jnt_type[j] in (JNT_BALL, JNT_HINGE) or (
                    jnt_type[j] == JNT_FREE and i - jnt_dofadr[j] >= 3)]
    if rot_dofs:
        a.dof_length[rot_dofs] = body[a.dof_bodyid[rot_dofs]]
    stat.extent = max(stat.extent, 2 * stat.meansize)
    if nbody > 1:
        stat.meanmass = float(a.body_mass[1:].sum() / (nbody - 1))
    if nv:
        diag = getattr(a, "_qM_diag", None)  # from the tendon/actuator pass, if any
        if diag is None:
            diag = _mass_diag(a, xmat, xipos, ximat, xanchor, xaxis)
        stat.meaninertia = float(diag.sum() / len(diag))  # (np.mean's arithmetic)
    for name in ("meaninertia", "meanmass", "meansize", "extent"):
        v = getattr(user, name)
        if not math.isnan(v):
            setattr(stat, name, v)
    if not math.isnan(user.center[0]):
        stat.center = np.asarray(user.center, dtype=np.float64)
    a.stat = stat


def model_constants(a) -> None:
    """mj_setConst on the host arrays ``a`` of a compiled model, in place, from their
    current values: setFixed's body_subtreemass; set0 at qpos0 (dof_M0, tendon and
    actuator lengths, inverse weights and acc0, dampratio biases, connect/weld eq_data,
    the cameras' and lights' offsets); setStat (stat, dof_length); setSpring (spring
    lengths given as -1). The same functions the compiler runs.

    Not recomputed: the tree fields (body_treeid, tree_*, tendon_treeid/treenum) and
    the sleep policies, which come from the tree's topology and the compiled
    sleep policies alone (no field a Model lets one change), so setFixed finds them
    as they are. A model with flexes raises NotImplementedError (flexedge_length0 and
    flexedge_invweight0 are computed from the compiler's flex objects only)."""
    from .actuator import actuator_constants, spring_lengths, tendon_constants
    from .equality import eq_data0
    from .tendon import HostKinematics

    if len(getattr(a, "flex_dim", ())):
        els = getattr(a, "flex_els", None) or [None]
        el = els[0]
        where = (f"{getattr(el, 'xml_file', None) or '<string>'}:{el.xml_line}: <{el.tag}>: "
                 if getattr(el, "xml_line", None) is not None else "")
        raise NotImplementedError(
            f"{where}set_const of a model with flexes ({len(a.flex_dim)}) is not supported "
            f"yet: flexedge_length0 and flexedge_invweight0 are computed only when "
            f"compiling (tiphys/compiler/flex.py _edge_constants)")
    a.body_subtreemass = subtree_mass(a.body_mass, a.body_parentid)
    k0 = HostKinematics(a, a.qpos0)
    c = tendon_constants(a, k0)
    actuator_constants(a, k0, c.Minv_dense, c.dof_M0, c.L0, c.J0)
    eq_data0(a, k0)
    com = subtree_com(k0.xipos, a.body_mass, a.body_parentid)
    cameras0(a, k0.xpos, k0.xquat, com)
    lights0(a, k0.xpos, k0.xquat, com)
    set_stat(a, Statistic(), start=a.stat, kin=_kinematics_of(a, k0))
    spring_lengths(a, c.L0)
