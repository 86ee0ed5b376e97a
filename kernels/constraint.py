"""Constraint rows: make_constraint (mj_makeConstraint) and reference_constraint
(mj_referenceConstraint), batched over worlds, dense Jacobian (and its sparse form for
sparse-Jacobian models).

Each world's rows come in MuJoCo's order: equalities (connect 3, weld 6, joint and
tendon 1, active ones only), friction loss (dofs, then tendons), limits (joints: both
sides of hinges and slides, balls; then tendons), contacts (frictionless 1, pyramidal
2(dim-1), elliptic dim). The rows' addresses are fixed before any row is written:

1. ``_count_equality`` (one thread per (world, equality)) stores how many rows each
   equality makes (0 when inactive, or, as MuJoCo's dense path, when its Jacobian is
   all zeros);
2. ``_scan`` (one thread per world) counts the rows of every other element, walks all
   elements in MuJoCo's order and gives each its first row (-1: none). Rows past
   ``njmax`` are not kept: the first element that does not fit, and every element
   after it, is dropped whole (so a kept weld or contact always has all its rows),
   and ``efc_overflow`` counts the rows lost;
3. fill kernels (one thread per (world, element)) write their rows: Jacobian, pos,
   margin, frictionloss, type, id and the soft-constraint parameters (KBIP, R) as
   mj_diagApprox + mj_makeImpedance, which only need the element's own rows;
4. ``_finish`` sets D = 1/R and diagApprox = R imp / (1 - imp) on every row.

Sparse Jacobians (``m.is_sparse``: mj_isSparse) keep MuJoCo's row-compressed form
instead of the dense ``efc_J`` (which then is 1 x 1 per world): ``_sparse_widths`` gives every element the width of its
rows (the NV mj_addConstraint gets: a joint row one dof, a ball limit three, a tendon
row its tendon's columns (tendon() lists them per world), a contact, connect or weld
the merged dof chain of its two bodies, a tendon equality the union of two tendons'
columns) and counts equality rows as MuJoCo's sparse path does (rows whenever that
width is not zero, whatever the values); ``_scan`` then also lays out
``efc_J_rownnz`` / ``efc_J_rowadr`` and keeps ``njnnz`` non-zeros per world (the
first element that does not fit and all after it are dropped, as for njmax); and
the fill kernels write each row's column list (ascending) and its values straight into
``efc_J_colind`` / ``efc_J_sparse``, with the dense path's arithmetic.

Per-world parameters ("*" fields) are indexed ``worldid % shape[0]``.
"""

import numpy as np
import taichi as ti

from .bind import launch
from .consts import (CNSTR_CONTACT_ELLIPTIC, CNSTR_CONTACT_FRICTIONLESS, CNSTR_CONTACT_PYRAMIDAL,
                     CNSTR_EQUALITY, CNSTR_FRICTION_DOF, CNSTR_FRICTION_TENDON, CNSTR_LIMIT_JOINT,
                     CNSTR_LIMIT_TENDON, CONE_ELLIPTIC, EQ_CONNECT, EQ_FLEX, EQ_JOINT, EQ_TENDON,
                     EQ_WELD,
                     JNT_BALL, JNT_HINGE, JNT_SLIDE, MAXIMP, MINIMP, MINVAL, OBJ_SITE, PI,
                     WARN_CNSTRFULL)
from .flex import chain_count, edge_row_nonempty, flex_eq_rows
from .math import param_row, quat_mul
from .tendon import check_sparse_data, last_dof

ND = ti.types.ndarray()


# ------------------------------------------------------------------------------------
# shared funcs: Jacobian columns, soft-constraint parameters
# ------------------------------------------------------------------------------------

@ti.func
def _dif_column(worldid, dofid, plus, minus, off_plus, off_minus, cdof: ti.template()):
    """Column ``dofid`` of jac(plus point) - jac(minus point): (translation, rotation).

    ``plus``/``minus``: whether the dof moves that point; offsets are the points
    relative to their tree's subtree_com. A dof moving both gives the difference."""
    cd = cdof[worldid, dofid]
    ang = ti.Vector([cd[0], cd[1], cd[2]])
    lin = ti.Vector([cd[3], cd[4], cd[5]])
    jp = ti.Vector([0.0, 0.0, 0.0])
    jr = ti.Vector([0.0, 0.0, 0.0])
    if plus:
        jp = lin + ang.cross(off_plus)
        jr = ang
    if minus:
        jp = jp - (lin + ang.cross(off_minus))
        jr = jr - ang
    return jp, jr


@ti.func
def _solref_checked(ref, timestep, refsafe: ti.template(), fallback0, fallback1):
    """getsolparam: a mixed-sign reference becomes the fallback; refsafe clamps the
    time constant to 2 timesteps."""
    out = ref
    if (ref[0] > 0) != (ref[1] > 0):
        out = ti.Vector([fallback0, fallback1])
    if ti.static(refsafe):
        if out[0] > 0:
            out[0] = ti.max(out[0], 2.0 * timestep)
    return out


@ti.func
def _solimp_checked(solimp):
    out = solimp
    out[0] = ti.min(MAXIMP, ti.max(MINIMP, solimp[0]))
    out[1] = ti.min(MAXIMP, ti.max(MINIMP, solimp[1]))
    out[2] = ti.max(0.0, solimp[2])
    out[3] = ti.min(MAXIMP, ti.max(MINIMP, solimp[3]))
    out[4] = ti.max(1.0, solimp[4])
    return out


@ti.func
def _power(a, b):
    out = a
    if b == 2:
        out = a * a
    elif b != 1:
        out = ti.pow(a, b)
    return out


@ti.func
def _impedance(solimp, pos, margin):
    """getimpedance: (imp, imp') of a constraint at distance pos - margin."""
    imp = 0.5 * (solimp[0] + solimp[1])
    impp = 0.0
    if solimp[0] != solimp[1] and solimp[2] > MINVAL:
        x = (pos - margin) / solimp[2]
        sgn = 1.0
        if x < 0:
            x = -x
            sgn = -1.0
        if x >= 1 or x <= 0:
            imp = solimp[1] if x >= 1 else solimp[0]
            impp = 0.0
        else:
            y = x
            yp = 1.0
            p = solimp[4]
            mid = solimp[3]
            if p != 1:
                if x <= mid:
                    a = 1.0 / _power(mid, p - 1)
                    y = a * _power(x, p)
                    yp = p * a * _power(x, p - 1)
                else:
                    b = 1.0 / _power(1 - mid, p - 1)
                    y = 1 - b * _power(1 - x, p)
                    yp = p * b * _power(1 - x, p - 1)
            imp = solimp[0] + y * (solimp[1] - solimp[0])
            impp = yp * sgn * (solimp[1] - solimp[0]) / solimp[2]
    return imp, impp


@ti.func
def _kbip(ref, solimp, imp, impp, frictional):
    """efc_KBIP of one row: stiffness (0 for friction rows), damping, imp, imp'."""
    dmax = solimp[1]
    k = 0.0
    if not frictional:
        if ref[0] > 0:
            k = 1.0 / ti.max(MINVAL, dmax * dmax * ref[0] * ref[0] * ref[1] * ref[1])
        else:
            k = -ref[0] / ti.max(MINVAL, dmax * dmax)
    b = 0.0
    if ref[1] > 0:
        b = 2.0 / ti.max(MINVAL, dmax * ref[0])
    else:
        b = -ref[1] / ti.max(MINVAL, dmax)
    return ti.Vector([k, b, imp, impp])


@ti.func
def _r_of(imp, diag):
    return ti.max(MINVAL, (1.0 - imp) * diag / imp)


@ti.func
def _zero_row(worldid, row, nv, efc_J: ti.template(), sparse: ti.template()):
    """Zero a dense row (sparse rows need none: every non-zero is written)."""
    if ti.static(not sparse):
        for dofid in range(nv):
            efc_J[worldid, row, dofid] = 0.0


@ti.func
def _put(worldid, row, dofid, k, v, J: ti.template(), sparse: ti.template()):
    """J(row, dofid) = v: dense efc_J, or (``sparse``) the row's k-th non-zero, of
    column dofid. J: (efc_J, efc_J_rowadr, efc_J_colind), its first entry efc_J_sparse
    for sparse models (the fill kernels' ``efc_J`` argument)."""
    if ti.static(sparse):
        adr = J[1][worldid, row] + k
        J[2][worldid, adr] = dofid
        J[0][worldid, adr] = v
    else:
        J[0][worldid, row, dofid] = v


def _given(x) -> bool:
    """Python-side test for an optional template argument (Taichi scope has no `is`)."""
    return x is not None


@ti.func
def _tendon_union(worldid, row, t0, t1, scale0, scale1, ten_J: ti.template(),
                  ten_J_rownnz: ti.template(), ten_J_rowadr: ti.template(),
                  ten_J_colind: ti.template(), J: ti.template()):
    """The union of tendon t0's and (t1 >= 0) t1's columns, merged as mju_combineSparse
    merges them; returns how many. With ``J`` (not None) it also writes sparse row
    ``row`` over those columns: ten_J(t0) scale0 (+ ten_J(t1) scale1), the dense rows'
    arithmetic."""
    n0 = ten_J_rownnz[worldid, t0]
    a0 = ten_J_rowadr[worldid, t0]
    n1 = 0
    a1 = 0
    if t1 >= 0:
        n1 = ten_J_rownnz[worldid, t1]
        a1 = ten_J_rowadr[worldid, t1]
    i = 0
    j = 0
    k = 0
    while i < n0 or j < n1:
        c0 = 2147483647
        c1 = 2147483647
        if i < n0:
            c0 = ten_J_colind[worldid, a0 + i]
        if j < n1:
            c1 = ten_J_colind[worldid, a1 + j]
        dofid = ti.min(c0, c1)
        if ti.static(_given(J)):
            v = ten_J[worldid, t0, dofid] * scale0
            if t1 >= 0:
                v = v + ten_J[worldid, t1, dofid] * scale1
            _put(worldid, row, dofid, k, v, J, True)
        k += 1
        if c0 == dofid:
            i += 1
        if c1 == dofid:
            j += 1
    return k


@ti.func
def _row_head(worldid, row, ctype, objid, pos, margin, frictionloss, efc_type: ti.template(),
              efc_id: ti.template(), efc_pos: ti.template(), efc_margin: ti.template(),
              efc_frictionloss: ti.template()):
    efc_type[worldid, row] = ctype
    efc_id[worldid, row] = objid
    efc_pos[worldid, row] = pos
    efc_margin[worldid, row] = margin
    efc_frictionloss[worldid, row] = frictionloss


# ------------------------------------------------------------------------------------
# equality: connect and weld (body points, site frames)
# ------------------------------------------------------------------------------------

@ti.func
def _eq_frames(worldid, eqid, eq_obj1id: ti.template(), eq_obj2id: ti.template(),
               eq_objtype: ti.template(), eq_data: ti.template(), site_bodyid: ti.template(),
               site_quat: ti.template(), xpos: ti.template(), xmat: ti.template(),
               xquat: ti.template(), site_xpos: ti.template(), weld):
    """Bodies, global points and (weld) orientation quaternions of a connect/weld:
    (b0, b1, p0, p1, quat = q0 * relpose, quat1 = neg(q1))."""
    id0 = eq_obj1id[eqid]
    id1 = eq_obj2id[eqid]
    data = eq_data[param_row(worldid, eq_data), eqid]
    b0 = id0
    b1 = id1
    p0 = ti.Vector([0.0, 0.0, 0.0])
    p1 = ti.Vector([0.0, 0.0, 0.0])
    quat = ti.Vector([1.0, 0.0, 0.0, 0.0])
    quat1 = ti.Vector([1.0, 0.0, 0.0, 0.0])
    if eq_objtype[eqid] == OBJ_SITE:
        b0 = site_bodyid[id0]
        b1 = site_bodyid[id1]
        p0 = site_xpos[worldid, id0]
        p1 = site_xpos[worldid, id1]
        if weld:
            sw = param_row(worldid, site_quat)
            quat = quat_mul(xquat[worldid, b0], site_quat[sw, id0])
            qs1 = quat_mul(xquat[worldid, b1], site_quat[sw, id1])
            quat1 = ti.Vector([qs1[0], -qs1[1], -qs1[2], -qs1[3]])
    else:
        # connect: anchor of body k at data[3k:3k+3]; weld: body 0's at data[3:6],
        # body 1's at data[0:3]
        a0 = ti.Vector([data[0], data[1], data[2]])
        a1 = ti.Vector([data[3], data[4], data[5]])
        if weld:
            a0, a1 = a1, a0
        p0 = xmat[worldid, b0] @ a0 + xpos[worldid, b0]
        p1 = xmat[worldid, b1] @ a1 + xpos[worldid, b1]
        if weld:
            quat = quat_mul(xquat[worldid, b0], ti.Vector([data[6], data[7], data[8], data[9]]))
            q1 = xquat[worldid, b1]
            quat1 = ti.Vector([q1[0], -q1[1], -q1[2], -q1[3]])
    return b0, b1, p0, p1, quat, quat1


@ti.func
def _weld_rot_column(jr, quat, quat1, torquescale):
    """Rotation rows of a weld column: 0.5 * neg(q1) * jr * q0 * relpose, scaled."""
    q2 = ti.Vector([-quat1[1] * jr[0] - quat1[2] * jr[1] - quat1[3] * jr[2],
                    quat1[0] * jr[0] + quat1[2] * jr[2] - quat1[3] * jr[1],
                    quat1[0] * jr[1] + quat1[3] * jr[0] - quat1[1] * jr[2],
                    quat1[0] * jr[2] + quat1[1] * jr[1] - quat1[2] * jr[0]])
    q3 = quat_mul(q2, quat)
    return ti.Vector([0.5 * q3[1], 0.5 * q3[2], 0.5 * q3[3]]) * torquescale


@ti.func
def _eq_body_rows(worldid, eqid, row, write: ti.template(),
                  eq_type: ti.template(), eq_obj1id: ti.template(), eq_obj2id: ti.template(),
                  eq_objtype: ti.template(), eq_data: ti.template(),
                  site_bodyid: ti.template(), site_quat: ti.template(), xpos: ti.template(),
                  xmat: ti.template(), xquat: ti.template(), site_xpos: ti.template(),
                  subtree_com: ti.template(), cdof: ti.template(),
                  body_rootid: ti.template(), body_parentid: ti.template(),
                  body_dofnum: ti.template(), body_dofadr: ti.template(),
                  dof_parentid: ti.template(), J: ti.template(), sparse: ti.template()):
    """Jacobian of a connect (3 rows) or weld (6 rows) over the merged dof chain of
    its two bodies. With ``write``, the rows from ``row`` on are filled (the caller
    zeroed dense rows; sparse rows get the chain ascending, see _put); returns (nonzero, b0, b1, cpos): whether any entry is nonzero, the
    two bodies, and the position error (3 or 6 values, rest 0)."""
    weld = eq_type[eqid] == EQ_WELD
    b0, b1, p0, p1, quat, quat1 = _eq_frames(
        worldid, eqid, eq_obj1id, eq_obj2id, eq_objtype, eq_data, site_bodyid, site_quat,
        xpos, xmat, xquat, site_xpos, weld)
    torquescale = eq_data[param_row(worldid, eq_data), eqid][10]
    off0 = p0 - subtree_com[worldid, body_rootid[b0]]
    off1 = p1 - subtree_com[worldid, body_rootid[b1]]
    nonzero = 0
    nnz = 0
    if ti.static(write and sparse):
        nnz = _chain_cols(b0, b1, body_parentid, body_dofnum, body_dofadr, dof_parentid)
    walked = 0
    d0 = last_dof(body_parentid, body_dofnum, body_dofadr, b0)
    d1 = last_dof(body_parentid, body_dofnum, body_dofadr, b1)
    while d0 >= 0 or d1 >= 0:
        dofid = ti.max(d0, d1)
        kcol = nnz - 1 - walked  # the chain is walked descending
        walked += 1
        jp, jr = _dif_column(worldid, dofid, dofid == d0, dofid == d1, off0, off1, cdof)
        rr = ti.Vector([0.0, 0.0, 0.0])
        if weld:
            rr = _weld_rot_column(jr, quat, quat1, torquescale)
        for k in ti.static(range(3)):
            if jp[k] != 0 or rr[k] != 0:
                nonzero = 1
        if ti.static(write):
            for k in ti.static(range(3)):
                _put(worldid, row + k, dofid, kcol, jp[k], J, sparse)
            if weld:
                for k in ti.static(range(3)):
                    _put(worldid, row + 3 + k, dofid, kcol, rr[k], J, sparse)
        if dofid == d0:
            d0 = dof_parentid[d0]
        if dofid == d1:
            d1 = dof_parentid[d1]
    cpos = ti.Vector.zero(float, 6)
    dp = p0 - p1
    for k in ti.static(range(3)):
        cpos[k] = dp[k]
    if weld:
        q2 = quat_mul(quat1, quat)
        for k in ti.static(range(3)):
            cpos[3 + k] = q2[1 + k] * torquescale
    return nonzero, b0, b1, cpos


@ti.func
def _coupling(data, pos0, ref0, pos1, ref1, has2):
    """Joint/tendon coupling: (position error, d(polynomial)/d(object 2 position))."""
    cpos = pos0 - ref0 - data[0]
    deriv = 0.0
    if has2:
        dif = pos1 - ref1
        cpos = pos0 - ref0 - data[0] - (data[1] * dif + data[2] * dif * dif
                                        + data[3] * dif * dif * dif
                                        + data[4] * dif * dif * dif * dif)
        deriv = data[1] + 2 * data[2] * dif + 3 * data[3] * dif * dif \
            + 4 * data[4] * dif * dif * dif
    return cpos, deriv


@ti.func
def _tendon_coupling(worldid, eqid, eq_obj1id: ti.template(), eq_obj2id: ti.template(),
                     eq_data: ti.template(), ten_length: ti.template(),
                     tendon_length0: ti.template()):
    id0 = eq_obj1id[eqid]
    id1 = eq_obj2id[eqid]
    pos1 = 0.0
    ref1 = 0.0
    if id1 >= 0:
        pos1 = ten_length[worldid, id1]
        ref1 = tendon_length0[id1]
    return _coupling(eq_data[param_row(worldid, eq_data), eqid], ten_length[worldid, id0],
                     tendon_length0[id0], pos1, ref1, id1 >= 0)


@ti.kernel
def _count_equality(
    nv: ti.i32, neq: ti.i32,
    # model
    eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND, eq_data: ND,
    site_bodyid: ND, site_quat: ND, body_rootid: ND, body_parentid: ND, body_dofnum: ND,
    body_dofadr: ND, dof_parentid: ND, tendon_length0: ND, flex_edgeadr: ND,
    flex_edgenum: ND, flexedge_rigid: ND,
    # data in
    eq_active: ND, xpos: ND, xmat: ND, xquat: ND, site_xpos: ND, subtree_com: ND, cdof: ND,
    ten_J: ND, ten_length: ND, flexedge_J_rownnz: ND, flexedge_J_rowadr: ND,
    flexedge_J: ND,
    # out: rows per equality (the scan turns them into addresses)
    efc_adr: ND, efc_J: ND,
):
    nworld = efc_adr.shape[0]
    for worldid, eqid in ti.ndrange(nworld, neq):
        n = 0
        if eq_active[worldid, eqid] != 0:
            etype = eq_type[eqid]
            if etype == EQ_CONNECT or etype == EQ_WELD:
                nonzero, _b0, _b1, _cpos = _eq_body_rows(
                    worldid, eqid, 0, False, eq_type, eq_obj1id, eq_obj2id, eq_objtype,
                    eq_data, site_bodyid, site_quat, xpos, xmat, xquat, site_xpos,
                    subtree_com, cdof, body_rootid, body_parentid, body_dofnum, body_dofadr,
                    dof_parentid, (efc_J,), False)
                if nonzero:
                    n = 6 if etype == EQ_WELD else 3
            elif etype == EQ_JOINT:
                n = 1
            elif etype == EQ_TENDON:
                _cpos, deriv = _tendon_coupling(worldid, eqid, eq_obj1id, eq_obj2id,
                                                eq_data, ten_length, tendon_length0)
                id0 = eq_obj1id[eqid]
                id1 = eq_obj2id[eqid]
                for dofid in range(nv):
                    v = ten_J[worldid, id0, dofid]
                    if id1 >= 0:
                        v = v + ten_J[worldid, id1, dofid] * (-deriv)
                    if v != 0:
                        n = 1
            elif etype == EQ_FLEX:
                n, _nnz = flex_eq_rows(
                    worldid, eq_obj1id[eqid], 0, 0, False, flex_edgeadr, flex_edgenum,
                    flexedge_rigid, flexedge_J_rownnz, flexedge_J_rowadr, flexedge_J,
                    flexedge_J_rownnz, flexedge_J_rowadr, False)
        efc_adr[worldid, eqid] = n


# ------------------------------------------------------------------------------------
# scan: row counts of friction, limits, contacts; addresses; counters and overflow
# ------------------------------------------------------------------------------------

@ti.func
def _ball_angle(worldid, jntid, jnt_qposadr: ti.template(), qpos: ti.template()):
    """(rotation angle, unit axis) of a ball joint's quaternion, as mj_instantiateLimit."""
    adr = jnt_qposadr[jntid]
    q = ti.Vector([qpos[worldid, adr], qpos[worldid, adr + 1], qpos[worldid, adr + 2],
                   qpos[worldid, adr + 3]])
    qn = ti.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if qn < MINVAL:
        q = ti.Vector([1.0, 0.0, 0.0, 0.0])
    elif ti.abs(qn - 1) > MINVAL:
        q = q * (1.0 / qn)
    axis = ti.Vector([q[1], q[2], q[3]])
    sin_a_2 = ti.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    if sin_a_2 < MINVAL:
        axis = ti.Vector([1.0, 0.0, 0.0])
    else:
        axis = axis * (1.0 / sin_a_2)
    speed = 2.0 * ti.atan2(sin_a_2, q[0])
    if speed > PI:
        speed -= 2.0 * PI
    vel = axis * speed
    value = ti.sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2])
    if value < MINVAL:
        vel = ti.Vector([1.0, 0.0, 0.0])
    else:
        vel = vel * (1.0 / value)
    return value, vel


@ti.func
def limit_sides(lo, hi, value, margin):
    """Which sides of a scalar limit are active: (lower, upper) as 0/1 (MuJoCo's
    tendonLimit / joint limit test; also kernels/sleep.py's mj_wakeTendon)."""
    lower = 1 if -1.0 * (lo - value) < margin else 0
    upper = 1 if 1.0 * (hi - value) < margin else 0
    return lower, upper


@ti.func
def _contact_rows(dim, elliptic: ti.template()):
    n = 1
    if dim > 1:
        if ti.static(elliptic):
            n = dim
        else:
            n = 2 * (dim - 1)
    return n


@ti.func
def _tendon_nonzero(worldid, tenid, nv, ten_J: ti.template()):
    nonzero = 0
    for dofid in range(nv):
        if ten_J[worldid, tenid, dofid] != 0:
            nonzero = 1
    return nonzero


@ti.kernel
def _flex_eq_rowadr(
    # model
    eq_type: ND, eq_obj1id: ND, flex_edgeadr: ND, flex_edgenum: ND, flexedge_rigid: ND,
    neq: ti.i32,
    # data in: the element's first row (efc_adr) and its first non-zero (efc_J_rowadr
    # of that row, written by _scan)
    efc_adr: ND, flexedge_J_rownnz: ND, flexedge_J_rowadr: ND, flexedge_J: ND,
    # data out
    efc_J_rownnz: ND, efc_J_rowadr: ND,
):
    """Sparse rows of the flex equalities _scan kept: each row's width (its edge's
    non-zeros) and address, the element's rows consecutive from its first non-zero.
    Apart from _scan, whose arguments would pass SPIR-V's 32 arrays."""
    for worldid, eqid in ti.ndrange(efc_adr.shape[0], neq):
        if eq_type[eqid] == EQ_FLEX:
            row0 = efc_adr[worldid, eqid]
            if row0 >= 0:
                flex_eq_rows(worldid, eq_obj1id[eqid], row0, efc_J_rowadr[worldid, row0],
                             True, flex_edgeadr, flex_edgenum, flexedge_rigid,
                             flexedge_J_rownnz, flexedge_J_rowadr, flexedge_J,
                             efc_J_rownnz, efc_J_rowadr, True)


@ti.kernel
def _scan(
    eq_on: ti.template(), fric_on: ti.template(), lim_on: ti.template(),
    con_on: ti.template(), elliptic: ti.template(), sparse: ti.template(),
    sleep: ti.template(),
    nv: ti.i32, neq: ti.i32, ntendon: ti.i32, njnt: ti.i32, nconmax: ti.i32, njmax: ti.i32,
    njnnz: ti.i32,
    # model
    dof_frictionloss: ND, tendon_frictionloss: ND, jnt_type: ND, jnt_limited: ND,
    jnt_qposadr: ND, jnt_range: ND, jnt_margin: ND, tendon_limited: ND, tendon_range: ND,
    tendon_margin: ND, eq_type: ND,
    # sleep: the equalities, frictional dofs and joints of sleeping trees make no rows
    # (as MuJoCo's instantiate functions skip them): kernels/sleep.py's asleep_rows
    row_asleep: ND,
    # data in (efc_wid: sparse row widths of every element, from _sparse_widths; of a
    # flex equality: all its non-zeros)
    qpos: ND, ten_J: ND, ten_length: ND, ncon: ND, contact_dim: ND, efc_wid: ND,
    # data in/out
    contact_exclude: ND, efc_adr: ND,
    # out
    ne: ND, nf: ND, nl: ND, nefc: ND, nJ: ND, efc_overflow: ND, efc_J_overflow: ND,
    efc_J_rownnz: ND, efc_J_rowadr: ND,
):
    nworld = efc_adr.shape[0]
    for worldid in range(nworld):
        kept = 0
        total = 0
        nnz = 0
        nnz_total = 0
        full = 0
        counts = ti.Vector([0, 0, 0])  # ne, nf, nl
        elem = 0
        # element order: equalities, dof friction, tendon friction, joint limits,
        # tendon limits, contacts
        nelem = neq + nv + ntendon + njnt + ntendon + nconmax
        while elem < nelem:
            n = 0
            group = 3
            if elem < neq:
                group = 0
                if ti.static(eq_on):
                    n = efc_adr[worldid, elem]
                    if ti.static(sleep):
                        if row_asleep[worldid, elem] != 0:
                            n = 0
            elif elem < neq + nv:
                group = 1
                if ti.static(fric_on):
                    dofid = elem - neq
                    if dof_frictionloss[param_row(worldid, dof_frictionloss), dofid] != 0:
                        n = 1
                        if ti.static(sleep):
                            if row_asleep[worldid, elem] != 0:
                                n = 0
            elif elem < neq + nv + ntendon:
                group = 1
                if ti.static(fric_on):
                    tenid = elem - neq - nv
                    if tendon_frictionloss[param_row(worldid, tendon_frictionloss), tenid] > 0:
                        # sparse: a row when the tendon has columns, even zero values
                        if ti.static(sparse):
                            n = 1 if efc_wid[worldid, elem] > 0 else 0
                        else:
                            n = _tendon_nonzero(worldid, tenid, nv, ten_J)
            elif elem < neq + nv + ntendon + njnt:
                group = 2
                jntid = elem - neq - nv - ntendon
                asleep = False
                if ti.static(sleep):
                    asleep = row_asleep[worldid, neq + nv + jntid] != 0
                if ti.static(lim_on):
                    if jnt_limited[jntid] != 0 and not asleep:
                        rng = jnt_range[param_row(worldid, jnt_range), jntid]
                        margin = jnt_margin[param_row(worldid, jnt_margin), jntid]
                        jtype = jnt_type[jntid]
                        if jtype == JNT_SLIDE or jtype == JNT_HINGE:
                            value = qpos[worldid, jnt_qposadr[jntid]]
                            lower, upper = limit_sides(rng[0], rng[1], value, margin)
                            n = lower + upper
                        elif jtype == JNT_BALL:
                            value, _axis = _ball_angle(worldid, jntid, jnt_qposadr, qpos)
                            if ti.max(rng[0], rng[1]) - value < margin:
                                n = 1
            elif elem < neq + nv + 2 * ntendon + njnt:
                group = 2
                tenid = elem - neq - nv - ntendon - njnt
                if ti.static(lim_on):
                    if tendon_limited[tenid] != 0:
                        rng = tendon_range[param_row(worldid, tendon_range), tenid]
                        margin = tendon_margin[param_row(worldid, tendon_margin), tenid]
                        lower, upper = limit_sides(rng[0], rng[1],
                                                    ten_length[worldid, tenid], margin)
                        if ti.static(sparse):
                            n = (lower + upper) if efc_wid[worldid, elem] > 0 else 0
                        else:
                            n = (lower + upper) * _tendon_nonzero(worldid, tenid, nv, ten_J)
            else:
                conid = elem - neq - nv - 2 * ntendon - njnt
                if ti.static(con_on):
                    if conid < ncon[worldid] and nv > 0:
                        if contact_exclude[worldid, conid] == 0:
                            n = _contact_rows(contact_dim[worldid, conid], elliptic)
                            if ti.static(sparse):
                                # sparse Jacobians: a contact whose bodies have no dofs
                                # is excluded (mjEXCLUDE 3)
                                if efc_wid[worldid, elem] == 0:
                                    n = 0
                                    contact_exclude[worldid, conid] = 3
            adr = -1
            if n > 0:
                total += n
                width = 0
                elem_nnz = 0
                flex_eq = False
                fits = full == 0 and kept + n <= njmax
                if ti.static(sparse):
                    width = efc_wid[worldid, elem]
                    elem_nnz = n * width
                    if group == 0:
                        flex_eq = eq_type[elem] == EQ_FLEX
                        if flex_eq:  # rows of their edges' widths
                            elem_nnz = width
                    nnz_total += elem_nnz
                    fits = fits and nnz + elem_nnz <= njnnz
                if fits:
                    adr = kept
                    if ti.static(sparse):
                        if flex_eq:
                            # its rows' widths and addresses: _flex_eq_rowadr, from here
                            efc_J_rowadr[worldid, kept] = nnz
                        else:
                            for r in range(n):
                                efc_J_rownnz[worldid, kept + r] = width
                                efc_J_rowadr[worldid, kept + r] = nnz + r * width
                        nnz += elem_nnz
                    kept += n
                    if group < 3:
                        counts[group] += n
                else:
                    full = 1
            efc_adr[worldid, elem] = adr
            elem += 1
        ne[worldid] = counts[0]
        nf[worldid] = counts[1]
        nl[worldid] = counts[2]
        nefc[worldid] = kept
        efc_overflow[worldid] = total - kept
        if ti.static(sparse):
            nJ[worldid] = nnz
            efc_J_overflow[worldid] = nnz_total - nnz
        else:
            nJ[worldid] = kept * nv
            efc_J_overflow[worldid] = 0


# ------------------------------------------------------------------------------------
# fill: equality rows
# ------------------------------------------------------------------------------------

@ti.kernel
def _fill_eq_body_jac(
    nv: ti.i32, neq: ti.i32,
    # model
    eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND, eq_data: ND,
    site_bodyid: ND, site_quat: ND, body_rootid: ND, body_parentid: ND, body_dofnum: ND,
    body_dofadr: ND, dof_parentid: ND,
    # data in
    xpos: ND, xmat: ND, xquat: ND, site_xpos: ND, subtree_com: ND, cdof: ND, efc_adr: ND,
    efc_J_rowadr: ND,
    # out (efc_J: efc_J_sparse for sparse models)
    efc_J: ND, efc_J_colind: ND,
    sparse: ti.template(),
):
    """The Jacobians of connect and weld rows (their parameters: _fill_eq_body)."""
    J = ti.static((efc_J, efc_J_rowadr, efc_J_colind))
    nworld = efc_adr.shape[0]
    for worldid, eqid in ti.ndrange(nworld, neq):
        row = efc_adr[worldid, eqid]
        etype = eq_type[eqid]
        if row >= 0 and (etype == EQ_CONNECT or etype == EQ_WELD):
            nrow = 6 if etype == EQ_WELD else 3
            for r in range(nrow):
                _zero_row(worldid, row + r, nv, efc_J, sparse)
            _eq_body_rows(worldid, eqid, row, True, eq_type, eq_obj1id, eq_obj2id,
                          eq_objtype, eq_data, site_bodyid, site_quat, xpos, xmat, xquat,
                          site_xpos, subtree_com, cdof, body_rootid, body_parentid,
                          body_dofnum, body_dofadr, dof_parentid, J, sparse)


@ti.kernel
def _fill_eq_body(
    refsafe: ti.template(), timestep: float, neq: ti.i32,
    # model
    eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND, eq_data: ND, eq_solref: ND,
    eq_solimp: ND, site_bodyid: ND, site_quat: ND, body_rootid: ND, body_parentid: ND,
    body_dofnum: ND, body_dofadr: ND, dof_parentid: ND, body_invweight0: ND,
    # data in
    xpos: ND, xmat: ND, xquat: ND, site_xpos: ND, subtree_com: ND, cdof: ND, efc_adr: ND,
    # out
    efc_type: ND, efc_id: ND, efc_pos: ND, efc_margin: ND, efc_frictionloss: ND,
    efc_KBIP: ND, efc_R: ND,
):
    """The parameters of connect and weld rows (their Jacobians: _fill_eq_body_jac)."""
    nworld = efc_adr.shape[0]
    for worldid, eqid in ti.ndrange(nworld, neq):
        row = efc_adr[worldid, eqid]
        etype = eq_type[eqid]
        if row >= 0 and (etype == EQ_CONNECT or etype == EQ_WELD):
            nrow = 6 if etype == EQ_WELD else 3
            _nz, b0, b1, cpos = _eq_body_rows(
                worldid, eqid, row, False, eq_type, eq_obj1id, eq_obj2id, eq_objtype,
                eq_data, site_bodyid, site_quat, xpos, xmat, xquat, site_xpos, subtree_com,
                cdof, body_rootid, body_parentid, body_dofnum, body_dofadr, dof_parentid,
                (efc_type,), False)
            ew = param_row(worldid, eq_solref)
            solref = _solref_checked(eq_solref[ew, eqid], timestep, refsafe, 0.02, 1.0)
            solimp = _solimp_checked(eq_solimp[param_row(worldid, eq_solimp), eqid])
            norm2 = 0.0
            for r in range(nrow):
                norm2 += cpos[r] * cpos[r]
            imp, impp = _impedance(solimp, ti.sqrt(norm2), 0.0)
            kbip = _kbip(solref, solimp, imp, impp, False)
            bw = param_row(worldid, body_invweight0)
            iw0 = body_invweight0[bw, b0]
            iw1 = body_invweight0[bw, b1]
            for r in range(nrow):
                _row_head(worldid, row + r, CNSTR_EQUALITY, eqid, cpos[r], 0.0, 0.0, efc_type,
                          efc_id, efc_pos, efc_margin, efc_frictionloss)
                diag = iw0[0] + iw1[0]
                if r >= 3:
                    diag = iw0[1] + iw1[1]
                efc_KBIP[worldid, row + r] = kbip
                efc_R[worldid, row + r] = _r_of(imp, diag)


@ti.kernel
def _fill_eq_scalar(
    refsafe: ti.template(), timestep: float, nv: ti.i32, neq: ti.i32,
    # model
    eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_data: ND, eq_solref: ND, eq_solimp: ND,
    jnt_qposadr: ND, jnt_dofadr: ND, qpos0: ND, tendon_length0: ND, dof_invweight0: ND,
    tendon_invweight0: ND,
    # data in
    qpos: ND, ten_J: ND, ten_length: ND, efc_adr: ND, efc_J_rowadr: ND, ten_J_rownnz: ND,
    ten_J_rowadr: ND, ten_J_colind: ND,
    # out
    efc_type: ND, efc_id: ND, efc_J: ND, efc_pos: ND, efc_margin: ND,
    efc_frictionloss: ND, efc_KBIP: ND, efc_R: ND, efc_J_colind: ND,
    sparse: ti.template(),
):
    J = ti.static((efc_J, efc_J_rowadr, efc_J_colind))
    nworld = efc_adr.shape[0]
    for worldid, eqid in ti.ndrange(nworld, neq):
        row = efc_adr[worldid, eqid]
        etype = eq_type[eqid]
        if row >= 0 and (etype == EQ_JOINT or etype == EQ_TENDON):
            id0 = eq_obj1id[eqid]
            id1 = eq_obj2id[eqid]
            joint = etype == EQ_JOINT
            qw = param_row(worldid, qpos0)
            pos0 = 0.0
            ref0 = 0.0
            pos1 = 0.0
            ref1 = 0.0
            if joint:
                pos0 = qpos[worldid, jnt_qposadr[id0]]
                ref0 = qpos0[qw, jnt_qposadr[id0]]
                if id1 >= 0:
                    pos1 = qpos[worldid, jnt_qposadr[id1]]
                    ref1 = qpos0[qw, jnt_qposadr[id1]]
            else:
                pos0 = ten_length[worldid, id0]
                ref0 = tendon_length0[id0]
                if id1 >= 0:
                    pos1 = ten_length[worldid, id1]
                    ref1 = tendon_length0[id1]
            cpos, deriv = _coupling(eq_data[param_row(worldid, eq_data), eqid], pos0, ref0,
                                    pos1, ref1, id1 >= 0)
            diag = 0.0
            if joint:
                dw = param_row(worldid, dof_invweight0)
                dof0 = jnt_dofadr[id0]
                if ti.static(sparse):
                    # the columns' sorted union (_small_cols); a shared dof sums
                    if id1 < 0:
                        _put(worldid, row, dof0, 0, 1.0, J, True)
                    else:
                        dof1 = jnt_dofadr[id1]
                        v1 = 0.0
                        if dof1 == dof0:
                            v1 = 1.0
                        v1 = v1 + 1.0 * (-deriv)
                        if dof1 == dof0:
                            _put(worldid, row, dof0, 0, v1, J, True)
                        elif dof1 < dof0:
                            _put(worldid, row, dof1, 0, v1, J, True)
                            _put(worldid, row, dof0, 1, 1.0, J, True)
                        else:
                            _put(worldid, row, dof0, 0, 1.0, J, True)
                            _put(worldid, row, dof1, 1, v1, J, True)
                else:
                    _zero_row(worldid, row, nv, efc_J, False)
                    efc_J[worldid, row, dof0] = 1.0
                    if id1 >= 0:
                        dof1 = jnt_dofadr[id1]
                        efc_J[worldid, row, dof1] = efc_J[worldid, row, dof1] + \
                            1.0 * (-deriv)
                diag = dof_invweight0[dw, dof0]
                if id1 >= 0:
                    diag += dof_invweight0[dw, jnt_dofadr[id1]]
            else:
                if ti.static(sparse):
                    _tendon_union(worldid, row, id0, id1, 1.0, -deriv, ten_J,
                                  ten_J_rownnz, ten_J_rowadr, ten_J_colind, J)
                else:
                    for dofid in range(nv):
                        v = ten_J[worldid, id0, dofid]
                        if id1 >= 0:
                            v = v + ten_J[worldid, id1, dofid] * (-deriv)
                        efc_J[worldid, row, dofid] = v
                diag = tendon_invweight0[id0]
                if id1 >= 0:
                    diag += tendon_invweight0[id1]
            ew = param_row(worldid, eq_solref)
            solref = _solref_checked(eq_solref[ew, eqid], timestep, refsafe, 0.02, 1.0)
            solimp = _solimp_checked(eq_solimp[param_row(worldid, eq_solimp), eqid])
            imp, impp = _impedance(solimp, cpos, 0.0)
            _row_head(worldid, row, CNSTR_EQUALITY, eqid, cpos, 0.0, 0.0, efc_type, efc_id,
                      efc_pos, efc_margin, efc_frictionloss)
            efc_KBIP[worldid, row] = _kbip(solref, solimp, imp, impp, False)
            efc_R[worldid, row] = _r_of(imp, diag)


# ------------------------------------------------------------------------------------
# fill: friction loss and limits
# ------------------------------------------------------------------------------------

@ti.kernel
def _fill_friction(
    refsafe: ti.template(), timestep: float, nv: ti.i32, neq: ti.i32, ntendon: ti.i32,
    # model
    dof_frictionloss: ND, dof_solref: ND, dof_solimp: ND, dof_invweight0: ND,
    tendon_frictionloss: ND, tendon_solref_fri: ND, tendon_solimp_fri: ND,
    tendon_invweight0: ND,
    # data in
    ten_J: ND, efc_adr: ND, efc_J_rowadr: ND, ten_J_rownnz: ND, ten_J_rowadr: ND,
    ten_J_colind: ND,
    # out
    efc_type: ND, efc_id: ND, efc_J: ND, efc_pos: ND, efc_margin: ND,
    efc_frictionloss: ND, efc_KBIP: ND, efc_R: ND, efc_J_colind: ND,
    sparse: ti.template(),
):
    J = ti.static((efc_J, efc_J_rowadr, efc_J_colind))
    nworld = efc_adr.shape[0]
    for worldid, k in ti.ndrange(nworld, nv + ntendon):  # dofs, then tendons
        row = efc_adr[worldid, neq + k]
        if row >= 0:
            ctype = CNSTR_FRICTION_DOF
            objid = k
            frictionloss = 0.0
            diag = 0.0
            solref = ti.Vector([0.0, 0.0])
            solimp = ti.Vector.zero(float, 5)
            if k < nv:
                dw = param_row(worldid, dof_frictionloss)
                frictionloss = dof_frictionloss[dw, objid]
                _zero_row(worldid, row, nv, efc_J, sparse)
                _put(worldid, row, objid, 0, 1.0, J, sparse)
                diag = dof_invweight0[param_row(worldid, dof_invweight0), objid]
                solref = dof_solref[param_row(worldid, dof_solref), objid]
                solimp = dof_solimp[param_row(worldid, dof_solimp), objid]
            else:
                ctype = CNSTR_FRICTION_TENDON
                objid = k - nv
                tw = param_row(worldid, tendon_frictionloss)
                frictionloss = tendon_frictionloss[tw, objid]
                if ti.static(sparse):
                    _tendon_union(worldid, row, objid, -1, 1.0, 0.0, ten_J,
                                  ten_J_rownnz, ten_J_rowadr, ten_J_colind, J)
                else:
                    for dofid in range(nv):
                        efc_J[worldid, row, dofid] = ten_J[worldid, objid, dofid]
                diag = tendon_invweight0[objid]
                solref = tendon_solref_fri[param_row(worldid, tendon_solref_fri), objid]
                solimp = tendon_solimp_fri[param_row(worldid, tendon_solimp_fri), objid]
            solref = _solref_checked(solref, timestep, refsafe, 0.02, 1.0)
            solimp = _solimp_checked(solimp)
            imp, impp = _impedance(solimp, 0.0, 0.0)
            _row_head(worldid, row, ctype, objid, 0.0, 0.0, frictionloss, efc_type,
                      efc_id, efc_pos, efc_margin, efc_frictionloss)
            efc_KBIP[worldid, row] = _kbip(solref, solimp, imp, impp, True)
            efc_R[worldid, row] = _r_of(imp, diag)


@ti.kernel
def _fill_limit(
    refsafe: ti.template(), timestep: float, nv: ti.i32, base: ti.i32, njnt: ti.i32,
    ntendon: ti.i32,
    # model
    dof_invweight0: ND, tendon_invweight0: ND, jnt_type: ND, jnt_qposadr: ND,
    jnt_dofadr: ND, jnt_range: ND, jnt_margin: ND, jnt_solref: ND, jnt_solimp: ND,
    tendon_range: ND, tendon_margin: ND, tendon_solref_lim: ND, tendon_solimp_lim: ND,
    # data in
    qpos: ND, ten_J: ND, ten_length: ND, efc_adr: ND, efc_J_rowadr: ND, ten_J_rownnz: ND,
    ten_J_rowadr: ND, ten_J_colind: ND,
    # out
    efc_type: ND, efc_id: ND, efc_J: ND, efc_pos: ND, efc_margin: ND,
    efc_frictionloss: ND, efc_KBIP: ND, efc_R: ND, efc_J_colind: ND,
    sparse: ti.template(),
):
    J = ti.static((efc_J, efc_J_rowadr, efc_J_colind))
    nworld = efc_adr.shape[0]
    for worldid, k in ti.ndrange(nworld, njnt + ntendon):  # joints, then tendons
        row = efc_adr[worldid, base + k]
        if row >= 0:
            if k < njnt:  # joint limit
                jntid = k
                margin = jnt_margin[param_row(worldid, jnt_margin), jntid]
                rng = jnt_range[param_row(worldid, jnt_range), jntid]
                solref = _solref_checked(jnt_solref[param_row(worldid, jnt_solref), jntid],
                                         timestep, refsafe, 0.02, 1.0)
                solimp = _solimp_checked(jnt_solimp[param_row(worldid, jnt_solimp), jntid])
                dofadr = jnt_dofadr[jntid]
                diag = dof_invweight0[param_row(worldid, dof_invweight0), dofadr]
                if jnt_type[jntid] == JNT_BALL:
                    value, axis = _ball_angle(worldid, jntid, jnt_qposadr, qpos)
                    dist = ti.max(rng[0], rng[1]) - value
                    _zero_row(worldid, row, nv, efc_J, sparse)
                    for c in ti.static(range(3)):
                        _put(worldid, row, dofadr + c, c, axis[c] * -1.0, J, sparse)
                    imp, impp = _impedance(solimp, dist, margin)
                    _row_head(worldid, row, CNSTR_LIMIT_JOINT, jntid, dist, margin, 0.0, efc_type,
                              efc_id, efc_pos, efc_margin, efc_frictionloss)
                    efc_KBIP[worldid, row] = _kbip(solref, solimp, imp, impp, False)
                    efc_R[worldid, row] = _r_of(imp, diag)
                else:
                    value = qpos[worldid, jnt_qposadr[jntid]]
                    r = row
                    for s in ti.static(range(2)):
                        side = -1.0 if s == 0 else 1.0
                        dist = side * (rng[s] - value)
                        if dist < margin:
                            _zero_row(worldid, r, nv, efc_J, sparse)
                            _put(worldid, r, dofadr, 0, -side, J, sparse)
                            imp, impp = _impedance(solimp, dist, margin)
                            _row_head(worldid, r, CNSTR_LIMIT_JOINT, jntid, dist, margin, 0.0,
                                      efc_type, efc_id, efc_pos, efc_margin,
                                      efc_frictionloss)
                            efc_KBIP[worldid, r] = _kbip(solref, solimp, imp, impp, False)
                            efc_R[worldid, r] = _r_of(imp, diag)
                            r += 1
            else:  # tendon limit
                tenid = k - njnt
                margin = tendon_margin[param_row(worldid, tendon_margin), tenid]
                rng = tendon_range[param_row(worldid, tendon_range), tenid]
                solref = _solref_checked(
                    tendon_solref_lim[param_row(worldid, tendon_solref_lim), tenid], timestep,
                    refsafe, 0.02, 1.0)
                solimp = _solimp_checked(
                    tendon_solimp_lim[param_row(worldid, tendon_solimp_lim), tenid])
                diag = tendon_invweight0[tenid]
                value = ten_length[worldid, tenid]
                r = row
                for s in ti.static(range(2)):
                    side = -1.0 if s == 0 else 1.0
                    dist = side * (rng[s] - value)
                    if dist < margin:
                        if ti.static(sparse):
                            _tendon_union(worldid, r, tenid, -1, -side, 0.0, ten_J,
                                          ten_J_rownnz, ten_J_rowadr, ten_J_colind, J)
                        else:
                            for dofid in range(nv):
                                efc_J[worldid, r, dofid] = \
                                    ten_J[worldid, tenid, dofid] * (-side)
                        imp, impp = _impedance(solimp, dist, margin)
                        _row_head(worldid, r, CNSTR_LIMIT_TENDON, tenid, dist, margin, 0.0,
                                  efc_type, efc_id, efc_pos, efc_margin, efc_frictionloss)
                        efc_KBIP[worldid, r] = _kbip(solref, solimp, imp, impp, False)
                        efc_R[worldid, r] = _r_of(imp, diag)
                        r += 1


# ------------------------------------------------------------------------------------
# fill: contacts
# ------------------------------------------------------------------------------------

# bodies of a contact's Jacobian: one per side (geoms, flex vertices), up to 4 per side
# with flex element contacts (a compile-time width: 2 unless the model has them)
NSIDE_ELEM = 8


@ti.kernel
def _contact_bodies(
    nside: ti.template(),
    # model
    geom_bodyid: ND, flex_vertadr: ND, flex_vertbodyid: ND, flex_dim: ND, flex_elem: ND,
    flex_elemdataadr: ND,
    # data in
    ncon: ND, contact_pos: ND, contact_geom: ND, contact_flex: ND, contact_elem: ND,
    contact_vert: ND, flexvert_xpos: ND,
    # out: per contact, its bodies (-1: none) and their signed weights
    con_body: ND, con_weight: ND,
):
    """The bodies and weights of each contact's Jacobian (mj_contactJacobian), ``nside``
    slots per contact: a geom's body or a flex vertex's with weight -1 (side 0) / +1
    (side 1); an element's vertex bodies with weights inversely proportional to their
    distance from the contact point and summing to 1 (mj_elemBodyWeight; a vertex the
    other side names is left out), negative on side 0."""
    nworld = con_body.shape[0]
    nconmax = con_body.shape[1]
    for worldid, conid in ti.ndrange(nworld, nconmax):
        if conid < ncon[worldid]:
            geoms = contact_geom[worldid, conid]
            flexes = contact_flex[worldid, conid]
            elems = contact_elem[worldid, conid]
            verts = contact_vert[worldid, conid]
            point = contact_pos[worldid, conid]
            n = 0
            for side in ti.static(range(2)):
                sign = 1.0 if side == 1 else -1.0
                if geoms[side] >= 0:
                    con_body[worldid, conid, n] = geom_bodyid[geoms[side]]
                    con_weight[worldid, conid, n] = sign
                    n += 1
                elif verts[side] >= 0:
                    f = flexes[side]
                    con_body[worldid, conid, n] = flex_vertbodyid[flex_vertadr[f] + verts[side]]
                    con_weight[worldid, conid, n] = sign
                    n += 1
                else:
                    f = flexes[side]
                    dim = flex_dim[f]
                    data = flex_elemdataadr[f] + elems[side] * (dim + 1)
                    other = verts[1 - side]
                    first = n
                    total = 0.0
                    for i in range(dim + 1):
                        v = flex_elem[data + i]
                        if v != other:
                            dist = (point - flexvert_xpos[worldid, flex_vertadr[f] + v]).norm()
                            w = 1.0 / ti.max(MINVAL, dist)
                            con_body[worldid, conid, n] = flex_vertbodyid[flex_vertadr[f] + v]
                            con_weight[worldid, conid, n] = w
                            total += w
                            n += 1
                    scale = 1.0 / total
                    for i in range(first, n):
                        con_weight[worldid, conid, i] = sign * (con_weight[worldid, conid, i]
                                                                * scale)
            for i in range(n, nside):
                con_body[worldid, conid, i] = -1
                con_weight[worldid, conid, i] = 0.0


@ti.func
def _contact_chain_count(worldid, conid, nside: ti.template(), con_body: ti.template(),
                         body_parentid: ti.template(), body_dofnum: ti.template(),
                         body_dofadr: ti.template(), dof_parentid: ti.template()):
    """How many dofs move any of a contact's bodies (the merged chains' length)."""
    d = ti.Vector([-1] * nside)
    for i in ti.static(range(nside)):
        b = con_body[worldid, conid, i]
        if b >= 0:
            d[i] = last_dof(body_parentid, body_dofnum, body_dofadr, b)
    k = 0
    while d.max() >= 0:
        dofid = d.max()
        k += 1
        for i in ti.static(range(nside)):
            if d[i] == dofid:
                d[i] = dof_parentid[d[i]]
    return k


@ti.kernel
def _fill_contact_jac(
    elliptic: ti.template(), nside: ti.template(), nv: ti.i32, base: ti.i32,
    # model
    body_rootid: ND, body_parentid: ND, body_dofnum: ND, body_dofadr: ND,
    dof_parentid: ND,
    # data in (con_body, con_weight: _contact_bodies)
    subtree_com: ND, cdof: ND, ncon: ND, contact_pos: ND, contact_frame: ND,
    contact_friction: ND, contact_dim: ND, con_body: ND, con_weight: ND, efc_adr: ND,
    efc_J_rowadr: ND,
    # out (efc_J: efc_J_sparse for sparse models)
    efc_J: ND, efc_J_colind: ND,
    sparse: ti.template(),
):
    """The contact rows' Jacobians: jac(b2) - jac(b1) over the merged dof chain,
    rotated into the contact frame (pyramid edges: normal +- mu tangent); sparse rows
    get the chain ascending (_put)."""
    J = ti.static((efc_J, efc_J_rowadr, efc_J_colind))
    nworld = efc_adr.shape[0]
    nconmax = contact_pos.shape[1]
    for worldid, conid in ti.ndrange(nworld, nconmax):
        if conid < ncon[worldid]:
            row = efc_adr[worldid, base + conid]
            if row >= 0:
                dim = contact_dim[worldid, conid]
                nrow = _contact_rows(dim, elliptic)
                frame = contact_frame[worldid, conid]
                friction = contact_friction[worldid, conid]
                point = contact_pos[worldid, conid]
                for r in range(nrow):
                    _zero_row(worldid, row + r, nv, efc_J, sparse)
                nnz = 0
                if ti.static(sparse):
                    nnz = _contact_chain_count(worldid, conid, nside, con_body,
                                               body_parentid, body_dofnum, body_dofadr,
                                               dof_parentid)
                walked = 0
                d = ti.Vector([-1] * nside)
                off = ti.Matrix.zero(float, nside, 3)
                w = ti.Vector.zero(float, nside)
                for i in ti.static(range(nside)):
                    b = con_body[worldid, conid, i]
                    if b >= 0:
                        d[i] = last_dof(body_parentid, body_dofnum, body_dofadr, b)
                        o = point - subtree_com[worldid, body_rootid[b]]
                        for k in ti.static(range(3)):
                            off[i, k] = o[k]
                        w[i] = con_weight[worldid, conid, i]
                while d.max() >= 0:
                    dofid = d.max()
                    kcol = nnz - 1 - walked  # the chain is walked descending
                    walked += 1
                    cd = cdof[worldid, dofid]
                    ang = ti.Vector([cd[0], cd[1], cd[2]])
                    lin = ti.Vector([cd[3], cd[4], cd[5]])
                    jp = ti.Vector([0.0, 0.0, 0.0])
                    jr = ti.Vector([0.0, 0.0, 0.0])
                    for i in ti.static(range(nside)):
                        if d[i] == dofid:
                            o = ti.Vector([off[i, 0], off[i, 1], off[i, 2]])
                            jp += w[i] * (lin + ang.cross(o))
                            jr += w[i] * ang
                            d[i] = dof_parentid[d[i]]
                    col = ti.Vector.zero(float, 6)
                    for r in ti.static(range(3)):
                        col[r] = frame[r, 0] * jp[0] + frame[r, 1] * jp[1] + frame[r, 2] * jp[2]
                        col[3 + r] = frame[r, 0] * jr[0] + frame[r, 1] * jr[1] \
                            + frame[r, 2] * jr[2]
                    if ti.static(elliptic):
                        for r in range(dim):
                            _put(worldid, row + r, dofid, kcol, col[r], J, sparse)
                    else:
                        if dim == 1:
                            _put(worldid, row, dofid, kcol, col[0], J, sparse)
                        else:
                            for k in range(1, dim):
                                mu = friction[k - 1]
                                _put(worldid, row + 2 * (k - 1), dofid, kcol,
                                     col[0] + col[k] * mu, J, sparse)
                                _put(worldid, row + 2 * (k - 1) + 1, dofid, kcol,
                                     col[0] + col[k] * (-mu), J, sparse)


@ti.kernel
def _fill_contact(
    refsafe: ti.template(), elliptic: ti.template(), nside: ti.template(), timestep: float,
    impratio: float,
    base: ti.i32,
    # model
    body_invweight0: ND,
    # data in
    ncon: ND, contact_dist: ND, contact_includemargin: ND, contact_friction: ND,
    contact_solref: ND, contact_solreffriction: ND, contact_solimp: ND, contact_dim: ND,
    con_body: ND, con_weight: ND, efc_adr: ND,
    # out
    contact_mu: ND, contact_efc_address: ND, efc_type: ND, efc_id: ND, efc_pos: ND,
    efc_margin: ND, efc_frictionloss: ND, efc_KBIP: ND, efc_R: ND,
):
    """The contact rows' parameters (their Jacobians: _fill_contact_jac)."""
    nworld = efc_adr.shape[0]
    nconmax = contact_dist.shape[1]
    for worldid, conid in ti.ndrange(nworld, nconmax):
        if conid < ncon[worldid]:
            row = efc_adr[worldid, base + conid]
            contact_efc_address[worldid, conid] = row
            contact_mu[worldid, conid] = 0.0
            if row >= 0:
                dim = contact_dim[worldid, conid]
                nrow = _contact_rows(dim, elliptic)
                ctype = CNSTR_CONTACT_FRICTIONLESS
                if dim > 1:
                    ctype = CNSTR_CONTACT_ELLIPTIC if ti.static(elliptic) else \
                        CNSTR_CONTACT_PYRAMIDAL
                friction = contact_friction[worldid, conid]
                # parameters
                dist = contact_dist[worldid, conid]
                margin = contact_includemargin[worldid, conid]
                solref = _solref_checked(contact_solref[worldid, conid], timestep, refsafe,
                                         0.02, 1.0)
                srf = _solref_checked(contact_solreffriction[worldid, conid], timestep,
                                      refsafe, 0.0, 0.0)
                solimp = _solimp_checked(contact_solimp[worldid, conid])
                imp, impp = _impedance(solimp, dist, margin)
                bw = param_row(worldid, body_invweight0)
                tran = 0.0
                rot = 0.0
                for i in ti.static(range(nside)):
                    b = con_body[worldid, conid, i]
                    if b >= 0:  # mj_diagApprox: the weighted average over each side
                        iw = body_invweight0[bw, b]
                        wgt = ti.abs(con_weight[worldid, conid, i])
                        tran += iw[0] * wgt
                        rot += iw[1] * wgt
                r0 = 0.0
                for r in range(nrow):
                    pos = dist
                    mrg = margin
                    diag = tran
                    frictional = False
                    ref = solref
                    if ti.static(elliptic):
                        if r > 0:
                            pos = 0.0
                            mrg = 0.0
                            frictional = True
                            if srf[0] != 0 or srf[1] != 0:
                                ref = srf
                        if r >= 3:
                            diag = rot
                    elif dim > 1:
                        fri = friction[r // 2]
                        diag = tran + fri * fri * (tran if r // 2 < 2 else rot)
                    _row_head(worldid, row + r, ctype, conid, pos, mrg, 0.0, efc_type,
                              efc_id, efc_pos, efc_margin, efc_frictionloss)
                    efc_KBIP[worldid, row + r] = _kbip(ref, solimp, imp, impp, frictional)
                    rr = _r_of(imp, diag)
                    if r == 0:
                        r0 = rr
                    efc_R[worldid, row + r] = rr
                if dim > 1:
                    # friction: R[1] = R[0] / impratio, regularized cone mu
                    r1 = r0 / ti.max(MINVAL, impratio)
                    mu = friction[0] * ti.sqrt(r1 / r0)
                    contact_mu[worldid, conid] = mu
                    if ti.static(elliptic):
                        efc_R[worldid, row + 1] = r1
                        for j in range(1, dim - 1):
                            efc_R[worldid, row + j + 1] = r1 * friction[0] * friction[0] / (
                                friction[j] * friction[j])
                    else:
                        rpy = 2 * mu * mu * r0
                        for r in range(nrow):
                            efc_R[worldid, row + r] = rpy


# ------------------------------------------------------------------------------------
# equality: flex edges (mjEQ_FLEX: one row per non-rigid edge, its flexedge_J row)
# ------------------------------------------------------------------------------------

@ti.kernel
def _fill_eq_flex(
    refsafe: ti.template(), timestep: float, nv: ti.i32, neq: ti.i32,
    # model
    eq_type: ND, eq_obj1id: ND, eq_solref: ND, eq_solimp: ND, flex_edgeadr: ND,
    flex_edgenum: ND, flexedge_rigid: ND, flexedge_length0: ND, flexedge_invweight0: ND,
    # data in
    flexedge_length: ND, flexedge_J_rownnz: ND, flexedge_J_rowadr: ND,
    flexedge_J_colind: ND, flexedge_J: ND, efc_adr: ND, efc_J_rowadr: ND,
    # out
    efc_type: ND, efc_id: ND, efc_J: ND, efc_pos: ND, efc_margin: ND,
    efc_frictionloss: ND, efc_KBIP: ND, efc_R: ND, efc_J_colind: ND,
    sparse: ti.template(),
):
    """The rows of flex equalities: pos = length - length0, J = the edge's row; the
    k-th row's diagApprox is the k-th non-rigid edge's invweight0 (as MuJoCo's
    mj_diagApprox counts them, rows without columns included)."""
    nworld = efc_adr.shape[0]
    for worldid, eqid in ti.ndrange(nworld, neq):
        row = efc_adr[worldid, eqid]
        if row >= 0 and eq_type[eqid] == EQ_FLEX:
            f = eq_obj1id[eqid]
            ew = param_row(worldid, eq_solref)
            solref = _solref_checked(eq_solref[ew, eqid], timestep, refsafe, 0.02, 1.0)
            solimp = _solimp_checked(eq_solimp[param_row(worldid, eq_solimp), eqid])
            edge0 = flex_edgeadr[f]
            k = 0  # non-rigid edges so far
            for edgeid in range(edge0, edge0 + flex_edgenum[f]):
                if flexedge_rigid[edgeid] == 0:
                    if edge_row_nonempty(worldid, edgeid, flexedge_J_rownnz,
                                         flexedge_J_rowadr, flexedge_J, sparse):
                        cpos = flexedge_length[worldid, edgeid] - flexedge_length0[edgeid]
                        _row_head(worldid, row, CNSTR_EQUALITY, eqid, cpos, 0.0, 0.0,
                                  efc_type, efc_id, efc_pos, efc_margin, efc_frictionloss)
                        imp, impp = _impedance(solimp, cpos, 0.0)
                        efc_KBIP[worldid, row] = _kbip(solref, solimp, imp, impp, False)
                        # MuJoCo's diagApprox gives the r-th row of the equality the
                        # r-th non-rigid edge's weight: this edge's, unless an edge's
                        # row was empty before it
                        r = row - efc_adr[worldid, eqid]
                        iw = flexedge_invweight0[edgeid]
                        if r != k:
                            iw = flexedge_invweight0[edge0 + _nth(r, edge0, flex_edgenum[f],
                                                                  flexedge_rigid)]
                        efc_R[worldid, row] = _r_of(imp, iw)
                        _zero_row(worldid, row, nv, efc_J, sparse)
                        adr = flexedge_J_rowadr[worldid, edgeid]
                        out = 0
                        if ti.static(sparse):
                            out = efc_J_rowadr[worldid, row]
                        for j in range(flexedge_J_rownnz[worldid, edgeid]):
                            dofid = flexedge_J_colind[worldid, adr + j]
                            if ti.static(sparse):
                                efc_J_colind[worldid, out + j] = dofid
                                efc_J[worldid, out + j] = flexedge_J[worldid, adr + j]
                            else:
                                efc_J[worldid, row, dofid] = flexedge_J[worldid, adr + j]
                        row += 1
                    k += 1


@ti.func
def _nth(k, edge0, edgenum, flexedge_rigid: ti.template()):
    """The offset from edge0 of the k-th non-rigid edge (k counted from 0)."""
    found = 0
    seen = 0
    for e in range(edgenum):
        if flexedge_rigid[edge0 + e] == 0:
            if seen == k:
                found = e
            seen += 1
    return found


# ------------------------------------------------------------------------------------
# finish, reference
# ------------------------------------------------------------------------------------

@ti.kernel
def _finish(nefc: ND, efc_KBIP: ND, efc_R: ND, efc_D: ND, efc_diagApprox: ND,
            efc_overflow: ND, warning_number: ND, warning_lastinfo: ND):
    nworld = nefc.shape[0]
    njmax = efc_R.shape[1]
    for worldid in range(nworld):
        if efc_overflow[worldid] > 0:
            # mjWARN_CNSTRFULL, counted here and reported by check_warnings on the host
            warning_number[worldid][WARN_CNSTRFULL] += 1
            warning_lastinfo[worldid][WARN_CNSTRFULL] = nefc[worldid] + efc_overflow[worldid]
    for worldid, row in ti.ndrange(nworld, njmax):
        if row < nefc[worldid]:
            r = efc_R[worldid, row]
            imp = efc_KBIP[worldid, row][2]
            efc_D[worldid, row] = 1.0 / r
            efc_diagApprox[worldid, row] = r * imp / (1.0 - imp)


@ti.kernel
def _reference(nv: ti.i32, nefc: ND, efc_J: ND, efc_KBIP: ND, efc_pos: ND, efc_margin: ND,
               qvel: ND, efc_J_rownnz: ND, efc_J_rowadr: ND, efc_J_colind: ND,
               efc_J_sparse: ND, efc_vel: ND, efc_aref: ND, sparse: ti.template()):
    nworld = nefc.shape[0]
    njmax = efc_pos.shape[1]
    for worldid, row in ti.ndrange(nworld, njmax):
        if row < nefc[worldid]:
            vel = 0.0
            if ti.static(sparse):  # J qvel over the row's non-zeros (mj_mulJacVec)
                adr = efc_J_rowadr[worldid, row]
                for k in range(efc_J_rownnz[worldid, row]):
                    vel += efc_J_sparse[worldid, adr + k] * qvel[
                        worldid, efc_J_colind[worldid, adr + k]]
            else:
                for dofid in range(nv):
                    vel += efc_J[worldid, row, dofid] * qvel[worldid, dofid]
            kbip = efc_KBIP[worldid, row]
            efc_vel[worldid, row] = vel
            efc_aref[worldid, row] = -kbip[1] * vel - kbip[0] * kbip[2] * (
                efc_pos[worldid, row] - efc_margin[worldid, row])


# ------------------------------------------------------------------------------------
# sparse Jacobians: column lists (mj_mergeChain, tendon columns) and values
# ------------------------------------------------------------------------------------

# mj_mergeChain's length: how many dofs move body b0 or b1 (a sparse row's columns; the
# fill kernels write them ascending). (MuJoCo's two-simple-bodies shortcut gives the
# same list, except for b0 == b1.)
_chain_cols = chain_count


@ti.func
def eq_bodies(eqid, eq_obj1id: ti.template(), eq_obj2id: ti.template(),
               eq_objtype: ti.template(), site_bodyid: ti.template()):
    b0 = eq_obj1id[eqid]
    b1 = eq_obj2id[eqid]
    if eq_objtype[eqid] == OBJ_SITE:
        b0 = site_bodyid[b0]
        b1 = site_bodyid[b1]
    return b0, b1


@ti.func
def _small_cols(first, second):
    """How many columns the union of one or two dofs has (second < 0: none)."""
    k = 1
    if second >= 0 and second != first:
        k = 2
    return k


@ti.kernel
def _sparse_widths(
    nside: ti.template(), nv: ti.i32, neq: ti.i32, ntendon: ti.i32, njnt: ti.i32,
    # model
    eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND, site_bodyid: ND,
    jnt_type: ND, jnt_dofadr: ND, body_parentid: ND, body_dofnum: ND,
    body_dofadr: ND, dof_parentid: ND, flex_edgeadr: ND, flex_edgenum: ND,
    flexedge_rigid: ND,
    # data in
    eq_active: ND, ncon: ND, con_body: ND, ten_J_rownnz: ND, ten_J_rowadr: ND,
    ten_J_colind: ND, flexedge_J_rownnz: ND, flexedge_J_rowadr: ND, flexedge_J: ND,
    # out: per element, the columns of each of its rows; per equality, its rows
    efc_wid: ND, efc_adr: ND,
):
    """Per (world, element): the width of its sparse rows (the NV mj_addConstraint is
    given), and for equalities their rows as MuJoCo's sparse path counts them: an
    active equality makes its rows when its column list is not empty, whatever the
    values."""
    nworld = efc_wid.shape[0]
    nconmax = con_body.shape[1]
    nelem = neq + nv + 2 * ntendon + njnt + nconmax
    for worldid, elem in ti.ndrange(nworld, nelem):
        width = 0
        if elem < neq:
            eqid = elem
            etype = eq_type[eqid]
            id0 = eq_obj1id[eqid]
            id1 = eq_obj2id[eqid]
            size = 1
            if etype == EQ_CONNECT or etype == EQ_WELD:
                b0, b1 = eq_bodies(eqid, eq_obj1id, eq_obj2id, eq_objtype, site_bodyid)
                width = _chain_cols(b0, b1, body_parentid, body_dofnum, body_dofadr,
                                    dof_parentid)
                size = 6 if etype == EQ_WELD else 3
            elif etype == EQ_JOINT:
                second = -1
                if id1 >= 0:
                    second = jnt_dofadr[id1]
                width = _small_cols(jnt_dofadr[id0], second)
            elif etype == EQ_TENDON:
                width = _tendon_union(worldid, -1, id0, id1, 0.0, 0.0, None, ten_J_rownnz,
                                      ten_J_rowadr, ten_J_colind, None)
            elif etype == EQ_FLEX:  # width: all the rows' non-zeros
                size, width = flex_eq_rows(
                    worldid, id0, 0, 0, False, flex_edgeadr, flex_edgenum, flexedge_rigid,
                    flexedge_J_rownnz, flexedge_J_rowadr, flexedge_J, flexedge_J_rownnz,
                    flexedge_J_rowadr, True)
            rows = 0
            if eq_active[worldid, eqid] != 0 and width > 0 and (
                    etype <= EQ_TENDON or etype == EQ_FLEX):
                rows = size
            efc_adr[worldid, eqid] = rows
        elif elem < neq + nv:
            width = 1
        elif elem < neq + nv + ntendon:
            width = ten_J_rownnz[worldid, elem - neq - nv]
        elif elem < neq + nv + ntendon + njnt:
            width = 3 if jnt_type[elem - neq - nv - ntendon] == JNT_BALL else 1
        elif elem < neq + nv + 2 * ntendon + njnt:
            width = ten_J_rownnz[worldid, elem - neq - nv - ntendon - njnt]
        else:
            conid = elem - neq - nv - 2 * ntendon - njnt
            if conid < ncon[worldid]:
                width = _contact_chain_count(worldid, conid, nside, con_body,
                                             body_parentid, body_dofnum, body_dofadr,
                                             dof_parentid)
        efc_wid[worldid, elem] = width


# ------------------------------------------------------------------------------------
# host
# ------------------------------------------------------------------------------------

def _scratch(m, d):
    """Per-Data element tables, per world: rows (then first row) of every element, and
    (sparse Jacobians) the width of its rows."""
    nelem = max(1, m.neq + m.nv + 2 * m.ntendon + m.njnt + d.nconmax)
    tables = d.scratch.efc_adr
    if tables is None or tables[0].shape != (d.nworld, nelem):
        tag = d.scratch.tag
        tables = d.scratch.efc_adr = (tag(ti.ndarray(ti.i32, shape=(d.nworld, nelem))),
                                      tag(ti.ndarray(ti.i32, shape=(d.nworld, nelem))))
    return tables


def _nside(m) -> int:
    """Bodies per contact of the model's Jacobians: NSIDE_ELEM when it collides flex
    elements, else 2."""
    from .collision_driver import plan
    p = plan(m)
    elem = getattr(p, "elem_analytic", False) or getattr(p, "elem_convex", False) or \
        getattr(p, "elem_elem", False)
    return NSIDE_ELEM if elem else 2


def _con_bodies(m, d, nside):
    """Per-Data (bodies, weights) of every contact slot (_contact_bodies)."""
    have = d.scratch.con_bodies
    shape = (d.nworld, max(1, d.nconmax), nside)
    if have is None or have[0].shape != shape:
        from .config import float_dtype
        tag = d.scratch.tag
        have = d.scratch.con_bodies = (tag(ti.ndarray(ti.i32, shape=shape)),
                                       tag(ti.ndarray(float_dtype(), shape=shape)))
    return have


def _host_flags(m):
    """What the model can produce at all (host-side launch skipping), cached per
    options: (equalities, friction loss, limits, contacts, body/scalar equalities)."""
    key = (m.opt.disableflags, m.opt.enableflags, m.opt.jacobian)
    cached = m.plans.constraint_flags
    if cached is not None and cached[0] == key:
        return cached[1]
    a = m.arrays
    opt = m.opt
    on = not opt.disabled("constraint")
    eq_type = np.asarray(a.eq_type)[:m.neq]
    eq_on = on and m.neq > 0 and not opt.disabled("equality")
    fric_on = on and not opt.disabled("frictionloss") and (
        bool(np.any(m.param("dof_frictionloss")[..., :m.nv] != 0))
        or bool(np.any(m.param("tendon_frictionloss")[..., :m.ntendon] > 0)))
    lim_on = on and not opt.disabled("limit") and (
        bool(np.any(np.asarray(a.jnt_limited)[:m.njnt]))
        or bool(np.any(np.asarray(a.tendon_limited)[:m.ntendon])))
    con_on = on and not opt.disabled("contact")
    flags = dict(eq=eq_on, fric=fric_on, lim=lim_on, con=con_on,
                 eq_body=eq_on and bool(np.any(eq_type <= EQ_WELD)),
                 eq_flex=eq_on and bool(np.any(eq_type == EQ_FLEX)),
                 eq_scalar=eq_on and bool(np.any((eq_type == EQ_JOINT) | (eq_type == EQ_TENDON))))
    m.plans.constraint_flags = (key, flags)
    return flags


def make_constraint(m, d) -> None:
    """Constraint rows of every world, as mj_makeConstraint (dense or sparse Jacobian).

    Reads eq_active, qpos, xpos, xmat, xquat, site_xpos, subtree_com, cdof, ten_J,
    ten_length and the contacts (run kinematics, com_pos, tendon and collision
    first); writes ne, nf, nl, nefc, efc_type, efc_id, efc_J, efc_pos, efc_margin,
    efc_frictionloss, efc_diagApprox, efc_KBIP, efc_D, efc_R, efc_overflow and, per
    contact, contact_efc_address, contact_mu (and contact_exclude = 3 for contacts
    without dofs when MuJoCo would use sparse Jacobians). Rows past ``d.njmax`` are
    dropped (whole elements, from the first that does not fit) and a RuntimeWarning
    names ``make_data(..., njmax=)``. With sparse Jacobians (``m.is_sparse``; reads
    ten_J_rownnz, ten_J_rowadr, ten_J_colind too) it writes nJ, efc_J_rownnz,
    efc_J_rowadr, efc_J_colind, efc_J_sparse and efc_J_overflow instead of efc_J (1 x 1
    per world, not written); non-zeros past
    ``d.njnnz`` drop elements the same way (the warning names ``njnnz``). nJ is
    nefc * nv for dense models.
    """
    opt = m.opt
    flags = _host_flags(m)
    sparse = m.is_sparse
    check_sparse_data(m, d, "make_constraint")
    adr, wid = _scratch(m, d)
    refsafe = not opt.disabled("refsafe")
    elliptic = opt.cone == CONE_ELLIPTIC
    timestep = float(opt.timestep)
    nside = _nside(m) if flags["con"] else 2
    con_body, con_weight = _con_bodies(m, d, nside)
    from .sleep import active, asleep_rows  # (sleep.py reads this module's helpers)
    sleeping = active(m)
    if flags["con"] and d.nconmax > 0:
        launch(_contact_bodies, m, d, nside=nside, con_body=con_body, con_weight=con_weight)
    if sparse:
        launch(_sparse_widths, m, d, nside=nside, efc_wid=wid, efc_adr=adr,
               con_body=con_body)
    elif flags["eq"]:
        launch(_count_equality, m, d, efc_adr=adr)
    launch(_scan, m, d, eq_on=flags["eq"], fric_on=flags["fric"], lim_on=flags["lim"],
           con_on=flags["con"], elliptic=elliptic, sparse=sparse, sleep=sleeping,
           row_asleep=asleep_rows(m, d) if sleeping else adr, nconmax=d.nconmax,
           njmax=d.njmax, njnnz=d.njnnz, efc_wid=wid, efc_adr=adr)
    if sparse and flags["eq_flex"]:
        launch(_flex_eq_rowadr, m, d, efc_adr=adr)
    # the fill kernels' Jacobian: its non-zeros for sparse models
    jac = d.efc_J_sparse if sparse else d.efc_J
    if flags["eq_body"]:
        launch(_fill_eq_body_jac, m, d, efc_adr=adr, efc_J=jac, sparse=sparse)
        launch(_fill_eq_body, m, d, refsafe=refsafe, timestep=timestep, efc_adr=adr)
    if flags["eq_scalar"]:
        launch(_fill_eq_scalar, m, d, refsafe=refsafe, timestep=timestep, efc_adr=adr,
               efc_J=jac, sparse=sparse)
    if flags["eq_flex"]:
        launch(_fill_eq_flex, m, d, refsafe=refsafe, timestep=timestep, efc_adr=adr,
               efc_J=jac, sparse=sparse)
    if flags["fric"]:
        launch(_fill_friction, m, d, refsafe=refsafe, timestep=timestep, efc_adr=adr,
               efc_J=jac, sparse=sparse)
    if flags["lim"]:
        launch(_fill_limit, m, d, refsafe=refsafe, timestep=timestep,
               base=m.neq + m.nv + m.ntendon, efc_adr=adr, efc_J=jac, sparse=sparse)
    if flags["con"] and d.nconmax > 0:
        base = m.neq + m.nv + 2 * m.ntendon + m.njnt
        launch(_fill_contact_jac, m, d, elliptic=elliptic, nside=nside, base=base,
               efc_adr=adr, efc_J=jac, sparse=sparse, con_body=con_body,
               con_weight=con_weight)
        launch(_fill_contact, m, d, refsafe=refsafe, elliptic=elliptic, nside=nside,
               timestep=timestep, impratio=float(opt.impratio), base=base, efc_adr=adr,
               con_body=con_body, con_weight=con_weight)
    launch(_finish, m, d)


def reference_constraint(m, d) -> None:
    """Constraint velocities and reference accelerations, as mj_referenceConstraint.

    Reads nefc, efc_J (sparse-Jacobian models: its non-zeros), efc_KBIP, efc_pos,
    efc_margin, qvel; writes efc_vel = J qvel and efc_aref = -B vel - K imp (pos -
    margin).
    """
    launch(_reference, m, d, sparse=m.is_sparse)
