"""Tendons: lengths, Jacobians and wrap paths of fixed and spatial tendons (mj_tendon).

Spatial tendons run between sites, wrap around spheres and cylinders (optionally on the
side of a sidesite) and split into pulley branches scaled by a divisor.
"""
import taichi as ti

from .bind import launch
from .consts import (JNT_BALL, JNT_FREE, MINVAL, PI, WRAP_CYLINDER, WRAP_JOINT, WRAP_NONE,
                     WRAP_PULLEY, WRAP_SPHERE)
from .math import cross_motion, param_row

ND = ti.types.ndarray()



@ti.func
def last_dof(body_parentid: ti.template(), body_dofnum: ti.template(),
             body_dofadr: ti.template(), bodyid):
    """The last dof of the chain moving ``bodyid``; -1 for a body fixed to the world."""
    b = bodyid
    while b > 0 and body_dofnum[b] == 0:
        b = body_parentid[b]
    dofid = -1
    if b > 0:
        dofid = body_dofadr[b] + body_dofnum[b] - 1
    return dofid


@ti.func
def add_jac_dot(worldid, out: ti.template(), rowid, bodyid, point, vec_pos, vec_rot, scale,
                body_parentid: ti.template(), body_dofnum: ti.template(),
                body_dofadr: ti.template(), body_rootid: ti.template(),
                dof_parentid: ti.template(), cdof: ti.template(),
                subtree_com: ti.template()):
    """out[worldid, rowid, dof] += scale * (vec_pos . jacp + vec_rot . jacr) at ``point``
    on ``bodyid``, over the dofs of its chain (the columns mj_jac fills)."""
    offset = point - subtree_com[worldid, body_rootid[bodyid]]
    dofid = last_dof(body_parentid, body_dofnum, body_dofadr, bodyid)
    while dofid >= 0:
        cd = cdof[worldid, dofid]
        rot = ti.Vector([cd[0], cd[1], cd[2]])
        lin = ti.Vector([cd[3], cd[4], cd[5]])
        out[worldid, rowid, dofid] += scale * (vec_pos.dot(lin + rot.cross(offset))
                                               + vec_rot.dot(rot))
        dofid = dof_parentid[dofid]


@ti.func
def _is_intersect(p1, p2, p3, p4):
    det = (p4[1] - p3[1]) * (p2[0] - p1[0]) - (p4[0] - p3[0]) * (p2[1] - p1[1])
    res = 0
    if ti.abs(det) >= MINVAL:
        a = ((p4[0] - p3[0]) * (p1[1] - p3[1]) - (p4[1] - p3[1]) * (p1[0] - p3[0])) / det
        b = ((p2[0] - p1[0]) * (p1[1] - p3[1]) - (p2[1] - p1[1]) * (p1[0] - p3[0])) / det
        if a >= 0 and a <= 1 and b >= 0 and b <= 1:
            res = 1
    return res


@ti.func
def _normalize2(v):
    n = v.norm()
    res = ti.Vector([1.0, 0.0])
    if n >= MINVAL:
        res = v / n
    return res


@ti.func
def _normalize3(v):
    n = v.norm()
    res = ti.Vector([1.0, 0.0, 0.0])
    if n >= MINVAL:
        res = v / n
    return res


@ti.func
def _length_circle(p0, p1, ind, radius):
    p0n = _normalize2(p0)
    p1n = _normalize2(p1)
    angle = ti.acos(ti.min(1.0, ti.max(-1.0, p0n.dot(p1n))))
    cross = p0[1] * p1[0] - p0[0] * p1[1]
    if (cross > 0 and ind == 1) or (cross < 0 and ind == 0):
        angle = 2 * PI - angle
    return radius * angle


@ti.func
def _wrap_circle(e0, e1, side, has_side, radius):
    """2D wrap of the segment e0-e1 around a circle at the origin; (length or -1, pnt0,
    pnt1)."""
    wlen = -1.0
    pnt0 = ti.Vector([0.0, 0.0])
    pnt1 = ti.Vector([0.0, 0.0])
    sqlen0 = e0.dot(e0)
    sqlen1 = e1.dot(e1)
    sqrad = radius * radius
    dif = e1 - e0
    dd = dif.dot(dif)
    if not (sqlen0 < sqrad or sqlen1 < sqrad or radius < MINVAL or dd < MINVAL):
        a = ti.min(1.0, ti.max(0.0, -dif.dot(e0) / dd))
        tmp = a * dif + e0
        if not (tmp.dot(tmp) > sqrad and (has_side == 0 or side.dot(tmp) >= 0)):
            sqrt0 = ti.sqrt(sqlen0 - sqrad)
            sqrt1 = ti.sqrt(sqlen1 - sqrad)
            sols = ti.Matrix.zero(float, 2, 4)
            good = ti.Vector([0.0, 0.0])
            for i in ti.static(range(2)):
                sgn = 1.0 if i == 0 else -1.0
                s0 = ti.Vector([(e0[0] * sqrad + sgn * radius * e0[1] * sqrt0) / sqlen0,
                                (e0[1] * sqrad - sgn * radius * e0[0] * sqrt0) / sqlen0])
                s1 = ti.Vector([(e1[0] * sqrad - sgn * radius * e1[1] * sqrt1) / sqlen1,
                                (e1[1] * sqrad + sgn * radius * e1[0] * sqrt1) / sqlen1])
                g = 0.0
                if has_side != 0:
                    g = _normalize2(s0 + s1).dot(side)
                else:
                    g = -(s0 - s1).dot(s0 - s1)
                if _is_intersect(e0, s0, e1, s1):
                    g = -10000.0
                good[i] = g
                sols[i, 0] = s0[0]
                sols[i, 1] = s0[1]
                sols[i, 2] = s1[0]
                sols[i, 3] = s1[1]
            sel = 1
            if good[0] > good[1]:
                sel = 0
            pnt0 = ti.Vector([sols[0, 0], sols[0, 1]])
            pnt1 = ti.Vector([sols[0, 2], sols[0, 3]])
            if sel == 1:
                pnt0 = ti.Vector([sols[1, 0], sols[1, 1]])
                pnt1 = ti.Vector([sols[1, 2], sols[1, 3]])
            if not _is_intersect(e0, pnt0, e1, pnt1):
                wlen = _length_circle(pnt0, pnt1, sel, radius)
    return wlen, pnt0, pnt1


@ti.func
def _asin(x):
    return ti.asin(ti.min(1.0, ti.max(-1.0, x)))


@ti.func
def _wrap_inside(e0, e1, radius):
    """2D wrap from inside the circle (sidesite inside the geom); (0 or -1, pnt, pnt)."""
    res = -1.0
    pnt = ti.Vector([0.0, 0.0])
    len0 = e0.norm()
    len1 = e1.norm()
    dif = e1 - e0
    dd = dif.dot(dif)
    ok = 1
    if len0 <= radius or len1 <= radius or radius < MINVAL or len0 < MINVAL or \
            len1 < MINVAL:
        ok = 0
    if ok == 1 and dd > MINVAL:
        a = -dif.dot(e0) / dd
        if a > 0 and a < 1:
            if (e0 + a * dif).norm() <= radius:
                ok = 0
    if ok == 1:
        res = 0.0
        pnt = _normalize2(0.5 * (e0 + e1)) * radius
        A = radius / len0
        B = radius / len1
        cosG = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1)
        if cosG < -1 + MINVAL:
            res = -1.0
        elif cosG <= 1 - MINVAL:
            G = ti.acos(cosG)
            z = 1 - 1e-7
            f = _asin(A * z) + _asin(B * z) - 2 * _asin(z) + G
            if f <= 0:
                it = 0
                failed = 0
                while it < 20 and ti.abs(f) > 1e-6 and failed == 0:
                    df = A / ti.max(MINVAL, ti.sqrt(1 - z * z * A * A)) + \
                        B / ti.max(MINVAL, ti.sqrt(1 - z * z * B * B)) - \
                        2 / ti.max(MINVAL, ti.sqrt(1 - z * z))
                    if df > -MINVAL:
                        failed = 1
                    else:
                        z1 = z - f / df
                        if z1 > z:
                            failed = 1
                        else:
                            z = z1
                            f = _asin(A * z) + _asin(B * z) - 2 * _asin(z) + G
                            if f > 1e-6:
                                failed = 1
                            it += 1
                if failed == 0 and it < 20:
                    vec = e1
                    ang = _asin(z) - _asin(B * z)
                    if e0[0] * e1[1] - e0[1] * e1[0] > 0:
                        vec = e0
                        ang = _asin(z) - _asin(A * z)
                    vec = _normalize2(vec)
                    pnt = radius * ti.Vector([ti.cos(ang) * vec[0] - ti.sin(ang) * vec[1],
                                              ti.sin(ang) * vec[0] + ti.cos(ang) * vec[1]])
    return res, pnt, pnt


@ti.func
def wrap(x0, x1, xpos, xmat, radius, wtype, side, has_side):
    """Wrap the segment x0-x1 around a sphere or cylinder geom, as mju_wrap.

    Returns (length or -1 for no wrap, wrap point 0, wrap point 1) in world frame.
    """
    wlen = -1.0
    w0 = ti.Vector([0.0, 0.0, 0.0])
    w1 = ti.Vector([0.0, 0.0, 0.0])
    p0 = xmat.transpose() @ (x0 - xpos)
    p1 = xmat.transpose() @ (x1 - xpos)
    if p0.norm() >= MINVAL and p1.norm() >= MINVAL:
        ax0 = ti.Vector([1.0, 0.0, 0.0])
        ax1 = ti.Vector([0.0, 1.0, 0.0])
        if wtype == WRAP_SPHERE:
            ax0 = _normalize3(p0)
            normal = p0.cross(p1)
            nrm = normal.norm()
            if nrm < MINVAL:
                i = 0
                if ti.abs(ax0[1]) > ti.abs(ax0[0]) and ti.abs(ax0[1]) > ti.abs(ax0[2]):
                    i = 1
                if ti.abs(ax0[2]) > ti.abs(ax0[0]) and ti.abs(ax0[2]) > ti.abs(ax0[1]):
                    i = 2
                a1 = ti.Vector([1.0, 1.0, 1.0])
                for k in ti.static(range(3)):
                    if k == i:
                        a1[k] = 0.0
                normal = _normalize3(ax0.cross(a1))
            else:
                normal = normal / nrm
            ax1 = _normalize3(normal.cross(ax0))
        e0 = ti.Vector([p0.dot(ax0), p0.dot(ax1)])
        e1 = ti.Vector([p1.dot(ax0), p1.dot(ax1)])
        s = ti.Vector([0.0, 0.0, 0.0])
        sd = ti.Vector([0.0, 0.0])
        if has_side != 0:
            s = xmat.transpose() @ (side - xpos)
            sd = _normalize2(ti.Vector([s.dot(ax0), s.dot(ax1)])) * radius
        pnt0 = ti.Vector([0.0, 0.0])
        pnt1 = ti.Vector([0.0, 0.0])
        if has_side != 0 and s.norm() < radius:
            wlen, pnt0, pnt1 = _wrap_inside(e0, e1, radius)
        else:
            wlen, pnt0, pnt1 = _wrap_circle(e0, e1, sd, has_side, radius)
        if wlen >= 0:
            r0 = ax0 * pnt0[0] + ax1 * pnt0[1]
            r1 = ax0 * pnt1[0] + ax1 * pnt1[1]
            if wtype == WRAP_CYLINDER:
                L0 = ti.sqrt((p0[0] - r0[0]) ** 2 + (p0[1] - r0[1]) ** 2)
                L1 = ti.sqrt((p1[0] - r1[0]) ** 2 + (p1[1] - r1[1]) ** 2)
                r0[2] = p0[2] + (p1[2] - p0[2]) * L0 / (L0 + wlen + L1)
                r1[2] = p0[2] + (p1[2] - p0[2]) * (L0 + wlen) / (L0 + wlen + L1)
                height = ti.abs(r1[2] - r0[2])
                wlen = ti.sqrt(wlen * wlen + height * height)
            w0 = xmat @ r0 + xpos
            w1 = xmat @ r1 + xpos
    return wlen, w0, w1


@ti.func
def _set_wrap(worldid, slot, obj, pos, wrap_obj: ti.template(), wrap_xpos: ti.template()):
    row = slot // 2
    half = slot % 2
    for k in ti.static(range(2)):
        if k == half:
            wrap_obj[worldid, row][k] = obj
    for k in ti.static(range(6)):
        if k // 3 == half:
            wrap_xpos[worldid, row][k] = pos[k % 3]


@ti.kernel
def _tendon(
    # model
    tendon_adr: ND, tendon_num: ND, wrap_type: ND, wrap_objid: ND, wrap_prm: ND,
    jnt_qposadr: ND, jnt_dofadr: ND, site_bodyid: ND, geom_bodyid: ND, geom_size: ND,
    body_parentid: ND, body_dofnum: ND, body_dofadr: ND, body_rootid: ND,
    dof_parentid: ND, ntendon: ti.i32, nv: ti.i32,
    # data in
    qpos: ND, site_xpos: ND, geom_xpos: ND, geom_xmat: ND, cdof: ND, subtree_com: ND,
    # data out
    ten_wrapadr: ND, ten_wrapnum: ND, ten_J: ND, ten_length: ND, wrap_obj: ND,
    wrap_xpos: ND,
):
    nworld = qpos.shape[0]
    zero3 = ti.Vector([0.0, 0.0, 0.0])
    for worldid in range(nworld):
        wrapcount = 0
        for tenid in range(ntendon):
            for dofid in range(nv):
                ten_J[worldid, tenid, dofid] = 0.0
            adr = tendon_adr[tenid]
            num = tendon_num[tenid]
            ten_wrapadr[worldid, tenid] = wrapcount
            wrapnum = 0
            length = 0.0
            if wrap_type[adr] == WRAP_JOINT:
                for j in range(num):
                    jntid = wrap_objid[adr + j]
                    length += wrap_prm[adr + j] * qpos[worldid, jnt_qposadr[jntid]]
                    ten_J[worldid, tenid, jnt_dofadr[jntid]] = wrap_prm[adr + j]
            else:
                divisor = 1.0
                j = 0
                while j < num - 1:
                    type0 = wrap_type[adr + j]
                    type1 = wrap_type[adr + j + 1]
                    id0 = wrap_objid[adr + j]
                    id1 = wrap_objid[adr + j + 1]
                    if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                        if type0 == WRAP_PULLEY:
                            divisor = wrap_prm[adr + j]
                            _set_wrap(worldid, wrapcount, -2, zero3, wrap_obj, wrap_xpos)
                            wrapnum += 1
                            wrapcount += 1
                        j += 1
                        continue
                    x0 = site_xpos[worldid, id0]
                    wlen = -1.0
                    wrapid = -1
                    wraptype = WRAP_NONE
                    w0 = zero3
                    w1 = zero3
                    if type1 == WRAP_SPHERE or type1 == WRAP_CYLINDER:
                        wraptype = type1
                        wrapid = id1
                        id1 = wrap_objid[adr + j + 2]
                        sideid = int(ti.round(wrap_prm[adr + j + 1]))
                        side = zero3
                        if sideid >= 0:
                            side = site_xpos[worldid, sideid]
                        wlen, w0, w1 = wrap(
                            x0, site_xpos[worldid, id1], geom_xpos[worldid, wrapid],
                            geom_xmat[worldid, wrapid],
                            geom_size[param_row(worldid, geom_size), wrapid][0], wraptype,
                            side, int(sideid >= 0))
                    x1 = site_xpos[worldid, id1]
                    b0 = site_bodyid[id0]
                    b3 = site_bodyid[id1]
                    npnt = 1
                    if wlen < 0:
                        length += (x1 - x0).norm() / divisor
                    else:
                        npnt = 3
                        length += ((w0 - x0).norm() + wlen + (x1 - w1).norm()) / divisor
                    for k in range(npnt):
                        pa = x0
                        pb = x1
                        ba = b0
                        bb = b3
                        if npnt == 3:
                            gb = geom_bodyid[wrapid]
                            if k == 0:
                                pb = w0
                                bb = gb
                            elif k == 1:
                                pa = w0
                                pb = w1
                                ba = gb
                                bb = gb
                            else:
                                pa = w1
                                ba = gb
                        if ba != bb:
                            dif = _normalize3(pb - pa)
                            add_jac_dot(worldid, ten_J, tenid, bb, pb, dif, zero3,
                                        1.0 / divisor, body_parentid, body_dofnum,
                                        body_dofadr, body_rootid, dof_parentid, cdof,
                                        subtree_com)
                            add_jac_dot(worldid, ten_J, tenid, ba, pa, dif, zero3,
                                        -1.0 / divisor, body_parentid, body_dofnum,
                                        body_dofadr, body_rootid, dof_parentid, cdof,
                                        subtree_com)
                    _set_wrap(worldid, wrapcount, -1, x0, wrap_obj, wrap_xpos)
                    if wlen >= 0:
                        _set_wrap(worldid, wrapcount + 1, wrapid, w0, wrap_obj, wrap_xpos)
                        _set_wrap(worldid, wrapcount + 2, wrapid, w1, wrap_obj, wrap_xpos)
                    wrapnum += npnt
                    wrapcount += npnt
                    if wraptype != WRAP_NONE:
                        j += 2
                    else:
                        j += 1
                    if j == num - 1 or wrap_type[adr + j + 1] == WRAP_PULLEY:
                        _set_wrap(worldid, wrapcount, -1, x1, wrap_obj, wrap_xpos)
                        wrapnum += 1
                        wrapcount += 1
            ten_length[worldid, tenid] = length
            ten_wrapnum[worldid, tenid] = wrapnum


def check_sparse_data(m, d, func: str) -> None:
    """A Data made while the model had dense Jacobians has no room for sparse ones."""
    if m.is_sparse and d._sizes["njten"] != m.ntendon * m.nv:
        raise ValueError(f"{func}: the model now has sparse Jacobians (opt.jacobian) but "
                         f"this Data was made for dense ones; make it again with "
                         f"tiphys.make_data")


@ti.func
def mark_chain(worldid, bodyid, base, body_parentid: ti.template(), body_dofnum: ti.template(),
               body_dofadr: ti.template(), dof_parentid: ti.template(), mask: ti.template()):
    """mask[worldid, base + dof] = 1 for every dof on the body's kinematic chain."""
    dofid = last_dof(body_parentid, body_dofnum, body_dofadr, bodyid)
    while dofid >= 0:
        mask[worldid, base + dofid] = 1
        dofid = dof_parentid[dofid]


@ti.kernel
def _tendon_sparse(
    nv: ti.i32, ntendon: ti.i32,
    # model
    tendon_adr: ND, tendon_num: ND, wrap_type: ND, wrap_objid: ND, jnt_dofadr: ND,
    site_bodyid: ND, geom_bodyid: ND, body_parentid: ND, body_dofnum: ND, body_dofadr: ND,
    dof_parentid: ND,
    # data in
    ten_wrapadr: ND, wrap_obj: ND,
    # data out
    ten_J_rownnz: ND, ten_J_rowadr: ND, ten_J_colind: ND,
):
    """Column lists of the tendon Jacobians as mj_tendon's sparse path builds them: a
    fixed tendon's joint dofs; for a spatial tendon the union of the merged dof chains
    of every straight segment between two different bodies (the wrapping geom's body
    joins only where the path wrapped). Each row's columns are first marked in its own
    nv slots of ten_J_colind, then compacted in place, ascending."""
    nworld = ten_wrapadr.shape[0]
    for worldid in range(nworld):
        rowadr = 0
        for tenid in range(ntendon):
            for dofid in range(nv):
                ten_J_colind[worldid, rowadr + dofid] = 0
            adr = tendon_adr[tenid]
            num = tendon_num[tenid]
            if wrap_type[adr] == WRAP_JOINT:
                for j in range(num):
                    ten_J_colind[worldid, rowadr + jnt_dofadr[wrap_objid[adr + j]]] = 1
            else:
                wrapcount = ten_wrapadr[worldid, tenid]
                j = 0
                while j < num - 1:
                    type0 = wrap_type[adr + j]
                    type1 = wrap_type[adr + j + 1]
                    id0 = wrap_objid[adr + j]
                    id1 = wrap_objid[adr + j + 1]
                    if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                        if type0 == WRAP_PULLEY:
                            wrapcount += 1
                        j += 1
                        continue
                    wrapid = -1
                    if type1 == WRAP_SPHERE or type1 == WRAP_CYLINDER:
                        wrapid = id1
                        id1 = wrap_objid[adr + j + 2]
                    # the path wrapped: the geom's two points follow the first site
                    wrapped = False
                    if wrapid >= 0:
                        slot = wrapcount + 1
                        wrapped = wrap_obj[worldid, slot // 2][slot % 2] == wrapid
                    b0 = site_bodyid[id0]
                    b3 = site_bodyid[id1]
                    npnt = 1
                    if wrapped:
                        npnt = 3
                        gb = geom_bodyid[wrapid]
                        for k in ti.static(range(2)):
                            ba = b0 if k == 0 else gb
                            bb = gb if k == 0 else b3
                            if ba != bb:
                                mark_chain(worldid, ba, rowadr, body_parentid, body_dofnum,
                                           body_dofadr, dof_parentid, ten_J_colind)
                                mark_chain(worldid, bb, rowadr, body_parentid, body_dofnum,
                                           body_dofadr, dof_parentid, ten_J_colind)
                    elif b0 != b3:
                        mark_chain(worldid, b0, rowadr, body_parentid, body_dofnum,
                                   body_dofadr, dof_parentid, ten_J_colind)
                        mark_chain(worldid, b3, rowadr, body_parentid, body_dofnum,
                                   body_dofadr, dof_parentid, ten_J_colind)
                    wrapcount += npnt
                    if wrapid >= 0:
                        j += 2
                    else:
                        j += 1
                    if j == num - 1 or wrap_type[adr + j + 1] == WRAP_PULLEY:
                        wrapcount += 1
            nnz = 0
            for dofid in range(nv):  # compact: the write index never passes the read
                if ten_J_colind[worldid, rowadr + dofid] != 0:
                    ten_J_colind[worldid, rowadr + nnz] = dofid
                    nnz += 1
            ten_J_rownnz[worldid, tenid] = nnz
            ten_J_rowadr[worldid, tenid] = rowadr
            rowadr += nnz


def tendon(m, d):
    """Tendon lengths, dense Jacobians and wrap paths, as mj_tendon (one launch; two for
    sparse-Jacobian models, m.is_sparse).

    Reads qpos, site_xpos, geom_xpos, geom_xmat, cdof, subtree_com; writes ten_wrapadr,
    ten_wrapnum, ten_J, ten_length, wrap_obj, wrap_xpos, and with sparse Jacobians the
    column lists ten_J_rownnz, ten_J_rowadr, ten_J_colind (ten_J stays dense).
    """
    if m.ntendon == 0:
        return
    check_sparse_data(m, d, "tendon")
    launch(_tendon, m, d)
    if m.is_sparse:
        launch(_tendon_sparse, m, d)


# ---------------------------------------------------------------------------------------
# tendon armature: the velocity-product (bias) term
# ---------------------------------------------------------------------------------------

@ti.func
def _site_vel_acc(worldid, siteid, site_bodyid: ti.template(), body_parentid: ti.template(),
                  body_dofnum: ti.template(), body_dofadr: ti.template(),
                  body_rootid: ti.template(), dof_parentid: ti.template(),
                  dof_bodyid: ti.template(), dof_jntid: ti.template(),
                  jnt_type: ti.template(), jnt_dofadr: ti.template(),
                  site_xpos: ti.template(), cdof: ti.template(), cdof_dot: ti.template(),
                  cvel: ti.template(), subtree_com: ti.template(), qvel: ti.template()):
    """Linear velocity of a site and d/dt(its translation Jacobian) qvel, as
    mj_objectVelocity and mj_jacDot (whose quaternion dofs use their body's full cvel)."""
    bodyid = site_bodyid[siteid]
    offset = site_xpos[worldid, siteid] - subtree_com[worldid, body_rootid[bodyid]]
    cv = cvel[worldid, bodyid]
    vel = ti.Vector([cv[3], cv[4], cv[5]]) + ti.Vector([cv[0], cv[1], cv[2]]).cross(offset)
    acc = ti.Vector([0.0, 0.0, 0.0])
    dofid = last_dof(body_parentid, body_dofnum, body_dofadr, bodyid)
    while dofid >= 0:
        cd = cdof[worldid, dofid]
        cdd = cdof_dot[worldid, dofid]
        jntid = dof_jntid[dofid]
        jtype = jnt_type[jntid]
        if jtype == JNT_BALL or (jtype == JNT_FREE and dofid >= jnt_dofadr[jntid] + 3):
            cdd = cross_motion(cvel[worldid, dof_bodyid[dofid]], cd)
        rot = ti.Vector([cd[0], cd[1], cd[2]])
        rot_dot = ti.Vector([cdd[0], cdd[1], cdd[2]])
        lin_dot = ti.Vector([cdd[3], cdd[4], cdd[5]])
        acc += (lin_dot + rot_dot.cross(offset) + rot.cross(vel)) * qvel[worldid, dofid]
        dofid = dof_parentid[dofid]
    return vel, acc


@ti.func
def tendon_jdot_qvel(worldid, tenid, tendon_adr: ti.template(), tendon_num: ti.template(),
                     wrap_type: ti.template(), wrap_objid: ti.template(),
                     wrap_prm: ti.template(), site_bodyid: ti.template(),
                     body_parentid: ti.template(), body_dofnum: ti.template(),
                     body_dofadr: ti.template(), body_rootid: ti.template(),
                     dof_parentid: ti.template(), dof_bodyid: ti.template(),
                     dof_jntid: ti.template(), jnt_type: ti.template(),
                     jnt_dofadr: ti.template(), site_xpos: ti.template(),
                     cdof: ti.template(), cdof_dot: ti.template(), cvel: ti.template(),
                     subtree_com: ti.template(), qvel: ti.template()):
    """d/dt(ten_J) . qvel of one tendon, as mj_tendonDot dotted with qvel.

    Fixed tendons: 0. Spatial tendons: per straight segment between sites on different
    bodies, (Jdot1 - Jdot0) qvel along the segment plus the change of its direction
    times the endpoint velocity difference, over the pulley divisor. Geom wraps do not
    occur (the compiler rejects tendon armature with wrapping geoms, as MuJoCo).
    """
    res = 0.0
    adr = tendon_adr[tenid]
    num = tendon_num[tenid]
    if wrap_type[adr] != WRAP_JOINT:
        divisor = 1.0
        j = 0
        while j < num - 1:
            type0 = wrap_type[adr + j]
            type1 = wrap_type[adr + j + 1]
            if type0 == WRAP_PULLEY or type1 == WRAP_PULLEY:
                if type0 == WRAP_PULLEY:
                    divisor = wrap_prm[adr + j]
            else:
                id0 = wrap_objid[adr + j]
                id1 = wrap_objid[adr + j + 1]
                if site_bodyid[id0] != site_bodyid[id1]:
                    v0, a0 = _site_vel_acc(
                        worldid, id0, site_bodyid, body_parentid, body_dofnum, body_dofadr,
                        body_rootid, dof_parentid, dof_bodyid, dof_jntid, jnt_type,
                        jnt_dofadr, site_xpos, cdof, cdof_dot, cvel, subtree_com, qvel)
                    v1, a1 = _site_vel_acc(
                        worldid, id1, site_bodyid, body_parentid, body_dofnum, body_dofadr,
                        body_rootid, dof_parentid, dof_bodyid, dof_jntid, jnt_type,
                        jnt_dofadr, site_xpos, cdof, cdof_dot, cvel, subtree_com, qvel)
                    dif = site_xpos[worldid, id1] - site_xpos[worldid, id0]
                    norm = dif.norm()
                    direction = ti.Vector([1.0, 0.0, 0.0])
                    if norm >= MINVAL:
                        direction = dif / norm
                    dvel = v1 - v0
                    # d/dt(direction): the velocity difference normal to the segment / length
                    ddir = ti.Vector([0.0, 0.0, 0.0])
                    if norm > MINVAL:
                        ddir = (dvel - direction * direction.dot(dvel)) / norm
                    res += (direction.dot(a1 - a0) + ddir.dot(dvel)) / divisor
            j += 1
    return res
