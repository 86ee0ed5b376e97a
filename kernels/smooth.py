"""Smooth-dynamics stages: kinematics, com_pos, camlight, crb, factor_m/solve_m, com_vel, rne.

Kernels take Model/Data arrays as arguments (grouped: model inputs, data inputs,
data outputs), so one compiled kernel serves every model. Tree recursions are
single launches: a thread per (world, body) walks its own root-to-body chain
(ancestors are recomputed with the very same operations, so results equal the
level-by-level recursion bit for bit), and subtree sums read the precomputed
subtree lists. Per-world-able ("*") parameters are indexed ``worldid % shape[0]``.
"""
import numpy as np
import taichi as ti

from .bind import launch
from .config import per_options, serial_loops
from .consts import (CAMLIGHT_TARGETBODY, CAMLIGHT_TARGETBODYCOM, CAMLIGHT_TRACK,
                     CAMLIGHT_TRACKCOM, JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE)
from .math import (axis_angle2quat, cross_force, cross_motion, dof_com, inert_com,
                   mul_inert_vec, param_row, quat2mat, quat_mul, quat_normalize,
                   rot_vec_quat)
from .tendon import tendon_jdot_qvel

ND = ti.types.ndarray()

# From this many worlds on, tree passes run one thread per world (no redundant work);
# below it, one thread per (world, body) keeps the machine busy.
SERIAL_TREE_MIN_WORLDS = 256


def _tree_pass(d) -> bool:
    """One thread per world walking the tree in body order (from SERIAL_TREE_MIN_WORLDS
    worlds on, and whenever the launch's loops are serial anyway), instead of one
    thread per body walking its own chain (the same operations, the same results)."""
    return d.nworld >= SERIAL_TREE_MIN_WORLDS or serial_loops(d.serial_load)


@ti.func
def _ancestor(body_parentid: ti.template(), bodyid, steps):
    b = bodyid
    for _ in range(steps):
        b = body_parentid[b]
    return b


@ti.func
def _body_step(worldid, b, pos, quat, write, body_mocapid: ti.template(),
               body_jntnum: ti.template(), body_jntadr: ti.template(),
               body_pos: ti.template(), body_quat: ti.template(), jnt_type: ti.template(),
               jnt_qposadr: ti.template(), jnt_pos: ti.template(), jnt_axis: ti.template(),
               qpos0: ti.template(), qpos: ti.template(), mocap_pos: ti.template(),
               mocap_quat: ti.template(), xanchor: ti.template(), xaxis: ti.template()):
    """Pose of body b from its parent's (pos, quat) and its joints, as mj_kinematics1.

    With ``write``, the joint anchors and axes are stored."""
    jntadr = body_jntadr[b]
    jntnum = body_jntnum[b]
    if jntnum == 1 and jnt_type[jntadr] == JNT_FREE:
        qadr = jnt_qposadr[jntadr]
        pos = ti.Vector([qpos[worldid, qadr], qpos[worldid, qadr + 1], qpos[worldid, qadr + 2]])
        quat = quat_normalize(ti.Vector([qpos[worldid, qadr + 3], qpos[worldid, qadr + 4],
                                         qpos[worldid, qadr + 5], qpos[worldid, qadr + 6]]))
        if write:
            xanchor[worldid, jntadr] = pos
            xaxis[worldid, jntadr] = jnt_axis[param_row(worldid, jnt_axis), jntadr]
    else:
        bpos = body_pos[param_row(worldid, body_pos), b]
        bquat = body_quat[param_row(worldid, body_quat), b]
        mocapid = body_mocapid[b]
        if mocapid >= 0:
            bpos = mocap_pos[worldid, mocapid]
            bquat = quat_normalize(mocap_quat[worldid, mocapid])
        pos = quat2mat(quat) @ bpos + pos
        quat = quat_mul(quat, bquat)
        for j in range(jntnum):
            jid = jntadr + j
            qadr = jnt_qposadr[jid]
            jtype = jnt_type[jid]
            axis = jnt_axis[param_row(worldid, jnt_axis), jid]
            jpos = jnt_pos[param_row(worldid, jnt_pos), jid]
            ax = rot_vec_quat(axis, quat)
            anchor = rot_vec_quat(jpos, quat) + pos
            if jtype == JNT_SLIDE:
                pos += ax * (qpos[worldid, qadr] - qpos0[param_row(worldid, qpos0), qadr])
            else:
                qloc = ti.Vector([1.0, 0.0, 0.0, 0.0])
                if jtype == JNT_BALL:
                    qloc = quat_normalize(ti.Vector([
                        qpos[worldid, qadr], qpos[worldid, qadr + 1],
                        qpos[worldid, qadr + 2], qpos[worldid, qadr + 3]]))
                else:
                    qloc = axis_angle2quat(
                        axis, qpos[worldid, qadr] - qpos0[param_row(worldid, qpos0), qadr])
                quat = quat_mul(quat, qloc)
                pos = anchor - rot_vec_quat(jpos, quat)
            if write:
                xanchor[worldid, jid] = anchor
                xaxis[worldid, jid] = ax
    return pos, quat_normalize(quat)


@ti.kernel
def _kinematics(
    # model
    body_parentid: ND, body_mocapid: ND, body_jntnum: ND, body_jntadr: ND, body_depth: ND,
    body_pos: ND, body_quat: ND, body_ipos: ND, body_iquat: ND, jnt_type: ND,
    jnt_qposadr: ND, jnt_pos: ND, jnt_axis: ND, qpos0: ND, geom_bodyid: ND, geom_pos: ND,
    geom_quat: ND, nbody: ti.i32, ngeom: ti.i32,
    # data in
    qpos: ND, mocap_pos: ND, mocap_quat: ND,
    # data out
    xpos: ND, xquat: ND, xmat: ND, xipos: ND, ximat: ND, xanchor: ND, xaxis: ND,
    geom_xpos: ND, geom_xmat: ND,
    # algorithm: per-world serial tree pass (many worlds) or per-body chains (few worlds)
    serial: ti.template(),
):
    nworld = qpos.shape[0]
    if ti.static(serial):
        # one thread per world; bodies in order (a parent's id is below its children's)
        for worldid in range(nworld):
            xpos[worldid, 0] = ti.Vector([0.0, 0.0, 0.0])
            xquat[worldid, 0] = ti.Vector([1.0, 0.0, 0.0, 0.0])
            for bodyid in range(1, nbody):
                pid = body_parentid[bodyid]
                pos, quat = _body_step(
                    worldid, bodyid, xpos[worldid, pid], xquat[worldid, pid], True,
                    body_mocapid, body_jntnum, body_jntadr, body_pos, body_quat, jnt_type,
                    jnt_qposadr, jnt_pos, jnt_axis, qpos0, qpos, mocap_pos, mocap_quat,
                    xanchor, xaxis)
                xpos[worldid, bodyid] = pos
                xquat[worldid, bodyid] = quat
    else:
        # one thread per (world, body) walking its own chain from the world: ancestors
        # are recomputed by the same operations, so results equal the serial pass
        for worldid, bodyid in ti.ndrange(nworld, nbody):
            pos = ti.Vector([0.0, 0.0, 0.0])
            quat = ti.Vector([1.0, 0.0, 0.0, 0.0])
            depth = body_depth[bodyid]
            for level in range(1, depth + 1):
                b = _ancestor(body_parentid, bodyid, depth - level)
                pos, quat = _body_step(
                    worldid, b, pos, quat, b == bodyid,
                    body_mocapid, body_jntnum, body_jntadr, body_pos, body_quat, jnt_type,
                    jnt_qposadr, jnt_pos, jnt_axis, qpos0, qpos, mocap_pos, mocap_quat,
                    xanchor, xaxis)
            xpos[worldid, bodyid] = pos
            xquat[worldid, bodyid] = quat
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        mat = quat2mat(xquat[worldid, bodyid])
        xmat[worldid, bodyid] = mat
        if bodyid == 0:
            xipos[worldid, bodyid] = xpos[worldid, bodyid]
            ximat[worldid, bodyid] = mat
        else:
            xipos[worldid, bodyid], ximat[worldid, bodyid] = _local2global(
                xpos[worldid, bodyid], mat, body_ipos[param_row(worldid, body_ipos), bodyid],
                body_iquat[param_row(worldid, body_iquat), bodyid])
    for worldid, geomid in ti.ndrange(nworld, ngeom):
        bodyid = geom_bodyid[geomid]
        geom_xpos[worldid, geomid], geom_xmat[worldid, geomid] = _local2global(
            xpos[worldid, bodyid], xmat[worldid, bodyid],
            geom_pos[param_row(worldid, geom_pos), geomid],
            geom_quat[param_row(worldid, geom_quat), geomid])


@ti.kernel
def _site_poses(site_bodyid: ND, site_pos: ND, site_quat: ND, nsite: ti.i32,
                xpos: ND, xmat: ND, site_xpos: ND, site_xmat: ND):
    # a kernel of its own: SPIR-V backends bind at most 32 ndarrays per kernel
    nworld = xpos.shape[0]
    for worldid, siteid in ti.ndrange(nworld, nsite):
        bodyid = site_bodyid[siteid]
        site_xpos[worldid, siteid], site_xmat[worldid, siteid] = _local2global(
            xpos[worldid, bodyid], xmat[worldid, bodyid],
            site_pos[param_row(worldid, site_pos), siteid],
            site_quat[param_row(worldid, site_quat), siteid])


@ti.func
def _local2global(body_xpos, body_xmat, pos, quat):
    """Global pose of a frame given in body coordinates."""
    return body_xmat @ pos + body_xpos, body_xmat @ quat2mat(quat)


def kinematics(m, d):
    """Forward kinematics (one launch, two with sites).

    Parent pose -> child pose goes exactly as mj_kinematics (the parent's xmat is
    the rotation matrix of its normalized xquat, so results agree bit for bit).

    Reads qpos, mocap_pos, mocap_quat; writes xpos, xquat, xmat, xipos, ximat,
    xanchor, xaxis, geom_xpos, geom_xmat, site_xpos, site_xmat.
    """
    launch(_kinematics, m, d, serial=_tree_pass(d))
    if m.nsite:
        launch(_site_poses, m, d)


@ti.kernel
def _com_pos(
    # model
    body_rootid: ND, body_mass: ND, body_subtreemass: ND, body_inertia: ND,
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, jnt_type: ND,
    jnt_bodyid: ND, jnt_dofadr: ND, nbody: ti.i32, njnt: ti.i32,
    # data in
    xmat: ND, xipos: ND, ximat: ND, xanchor: ND, xaxis: ND,
    # data out
    subtree_com: ND, cinert: ND, cdof: ND,
):
    nworld = xipos.shape[0]
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        adr = body_subtree_adr[bodyid]
        acc = ti.Vector([0.0, 0.0, 0.0])
        for k in range(body_subtree_num[bodyid]):
            b = body_subtree[adr + k]
            acc += xipos[worldid, b] * body_mass[param_row(worldid, body_mass), b]
        mass = body_subtreemass[param_row(worldid, body_subtreemass), bodyid]
        if mass < 1e-15:
            subtree_com[worldid, bodyid] = xipos[worldid, bodyid]
        else:
            subtree_com[worldid, bodyid] = acc / mass
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        if bodyid == 0:
            cinert[worldid, 0] = ti.Vector.zero(float, 10)
        else:
            offset = xipos[worldid, bodyid] - subtree_com[worldid, body_rootid[bodyid]]
            cinert[worldid, bodyid] = inert_com(
                body_inertia[param_row(worldid, body_inertia), bodyid], ximat[worldid, bodyid],
                offset, body_mass[param_row(worldid, body_mass), bodyid])
    for worldid, jid in ti.ndrange(nworld, njnt):
        bodyid = jnt_bodyid[jid]
        da = jnt_dofadr[jid]
        offset = subtree_com[worldid, body_rootid[bodyid]] - xanchor[worldid, jid]
        jtype = jnt_type[jid]
        if jtype == JNT_SLIDE:
            ax = xaxis[worldid, jid]
            cdof[worldid, da] = ti.Vector([0.0, 0.0, 0.0, ax[0], ax[1], ax[2]])
        elif jtype == JNT_HINGE:
            cdof[worldid, da] = dof_com(xaxis[worldid, jid], offset)
        else:
            skip = 0
            if jtype == JNT_FREE:
                cdof[worldid, da] = ti.Vector([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
                cdof[worldid, da + 1] = ti.Vector([0.0, 0.0, 0.0, 0.0, 1.0, 0.0])
                cdof[worldid, da + 2] = ti.Vector([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
                skip = 3
            mat = xmat[worldid, bodyid]
            for k in ti.static(range(3)):
                axis = ti.Vector([mat[0, k], mat[1, k], mat[2, k]])
                cdof[worldid, da + skip + k] = dof_com(axis, offset)


def com_pos(m, d):
    """Subtree centers of mass, com-based inertias and motion dofs (one launch).

    Reads xmat, xipos, ximat, xanchor, xaxis; writes subtree_com, cinert, cdof.
    """
    launch(_com_pos, m, d)


@ti.func
def _look_at(pos, look):
    z = (pos - look).normalized()
    x = ti.Vector([0.0, 0.0, 1.0]).cross(z).normalized()
    y = z.cross(x).normalized()
    return ti.Matrix([[x[0], y[0], z[0]], [x[1], y[1], z[1]], [x[2], y[2], z[2]]])


@ti.kernel
def _camlight(
    # model
    cam_mode: ND, cam_bodyid: ND, cam_targetbodyid: ND, cam_pos: ND, cam_quat: ND,
    cam_poscom0: ND, cam_pos0: ND, cam_mat0: ND, light_mode: ND, light_bodyid: ND,
    light_targetbodyid: ND, light_pos: ND, light_dir: ND, light_poscom0: ND,
    light_pos0: ND, light_dir0: ND, ncam: ti.i32, nlight: ti.i32,
    # data in
    xpos: ND, xmat: ND, subtree_com: ND,
    # data out
    cam_xpos: ND, cam_xmat: ND, light_xpos: ND, light_xdir: ND,
):
    nworld = xpos.shape[0]
    for worldid, camid in ti.ndrange(nworld, ncam):
        bodyid = cam_bodyid[camid]
        target = cam_targetbodyid[camid]
        mode = cam_mode[camid]
        pos, mat = _local2global(xpos[worldid, bodyid], xmat[worldid, bodyid],
                                 cam_pos[param_row(worldid, cam_pos), camid],
                                 cam_quat[param_row(worldid, cam_quat), camid])
        if mode == CAMLIGHT_TRACK:
            mat = cam_mat0[param_row(worldid, cam_mat0), camid]
            pos = xpos[worldid, bodyid] + cam_pos0[param_row(worldid, cam_pos0), camid]
        elif mode == CAMLIGHT_TRACKCOM:
            mat = cam_mat0[param_row(worldid, cam_mat0), camid]
            pos = subtree_com[worldid, bodyid] + \
                cam_poscom0[param_row(worldid, cam_poscom0), camid]
        elif (mode == CAMLIGHT_TARGETBODY or mode == CAMLIGHT_TARGETBODYCOM) and target >= 0:
            look = xpos[worldid, target]
            if mode == CAMLIGHT_TARGETBODYCOM:
                look = subtree_com[worldid, target]
            mat = _look_at(pos, look)
        cam_xpos[worldid, camid] = pos
        cam_xmat[worldid, camid] = mat
    for worldid, lid in ti.ndrange(nworld, nlight):
        bodyid = light_bodyid[lid]
        target = light_targetbodyid[lid]
        mode = light_mode[lid]
        pos = xmat[worldid, bodyid] @ light_pos[param_row(worldid, light_pos), lid] + \
            xpos[worldid, bodyid]
        ldir = xmat[worldid, bodyid] @ light_dir[param_row(worldid, light_dir), lid]
        if mode == CAMLIGHT_TRACK:
            pos = xpos[worldid, bodyid] + light_pos0[param_row(worldid, light_pos0), lid]
            ldir = light_dir0[param_row(worldid, light_dir0), lid]
        elif mode == CAMLIGHT_TRACKCOM:
            pos = subtree_com[worldid, bodyid] + \
                light_poscom0[param_row(worldid, light_poscom0), lid]
            ldir = light_dir0[param_row(worldid, light_dir0), lid]
        elif (mode == CAMLIGHT_TARGETBODY or mode == CAMLIGHT_TARGETBODYCOM) and target >= 0:
            look = xpos[worldid, target]
            if mode == CAMLIGHT_TARGETBODYCOM:
                look = subtree_com[worldid, target]
            ldir = (look - pos).normalized()
        light_xpos[worldid, lid] = pos
        light_xdir[worldid, lid] = ldir


def camlight(m, d):
    """Camera and light poses for every tracking mode (one launch).

    Reads xpos, xmat, subtree_com; writes cam_xpos, cam_xmat, light_xpos, light_xdir.
    """
    if m.ncam == 0 and m.nlight == 0:
        return
    launch(_camlight, m, d)


# ---------------------------------------------------------------------------------------
# inertia: composite rigid bodies, L'DL factor and solves in qM's tree-sparse layout.
#
# qM row i (MuJoCo's legacy layout) starts at dof_Madr[i] with M(i,i), followed by
# M(i,j) for the ancestors j of i walking dof_parentid upward. The factor keeps the same
# layout (D on the diagonal, L below). Dofs of one kinematic tree are contiguous and
# only couple to each other, so factor and solves run one thread per (world, tree).
# ---------------------------------------------------------------------------------------

@ti.func
def row_end(dofid, dof_Madr: ti.template(), nv, nM):
    end = nM
    if dofid < nv - 1:
        end = dof_Madr[dofid + 1]
    return end


@ti.func
def ld_factor(worldid, start, num, L: ti.template(), diaginv: ti.template(),
               dof_parentid: ti.template(), dof_Madr: ti.template(),
               dof_simplenum: ti.template(), nv, nM):
    """In-place L'DL factorization of one tree's rows of L (holding M on entry)."""
    for kk in range(num):
        k = start + num - 1 - kk
        madr_kk = dof_Madr[k]
        if dof_simplenum[k] == 0:
            madr_ki = madr_kk + 1
            i = dof_parentid[k]
            while i >= 0:
                tmp = L[worldid, madr_ki] / L[worldid, madr_kk]
                madr_i = dof_Madr[i]
                # ancestors of i (incl. i) are the tail of k's ancestor list
                for s in range(row_end(i, dof_Madr, nv, nM) - madr_i):
                    L[worldid, madr_i + s] -= L[worldid, madr_ki + s] * tmp
                L[worldid, madr_ki] = tmp
                i = dof_parentid[i]
                madr_ki += 1
    for k in range(start, start + num):
        diaginv[worldid, k] = 1.0 / L[worldid, dof_Madr[k]]


@ti.func
def lt_solve(worldid, start, num, L: ti.template(), x: ti.template(),
             dof_parentid: ti.template(), dof_Madr: ti.template(),
             dof_simplenum: ti.template()):
    """x <- inv(L') x in place, for one tree's dofs (leaves first)."""
    for kk in range(num):
        i = start + num - 1 - kk
        if dof_simplenum[i] == 0:
            xi = x[worldid, i]
            adr = dof_Madr[i] + 1
            j = dof_parentid[i]
            while j >= 0:
                x[worldid, j] -= L[worldid, adr] * xi
                adr += 1
                j = dof_parentid[j]


@ti.func
def ld_solve(worldid, start, num, L: ti.template(), diaginv: ti.template(),
              x: ti.template(), dof_parentid: ti.template(), dof_Madr: ti.template(),
              dof_simplenum: ti.template()):
    """x <- inv(L'DL) x in place, for one tree's dofs."""
    lt_solve(worldid, start, num, L, x, dof_parentid, dof_Madr, dof_simplenum)
    for i in range(start, start + num):
        x[worldid, i] *= diaginv[worldid, i]
    for i in range(start, start + num):
        if dof_simplenum[i] == 0:
            adr = dof_Madr[i] + 1
            j = dof_parentid[i]
            acc = x[worldid, i]
            while j >= 0:
                acc -= L[worldid, adr] * x[worldid, j]
                adr += 1
                j = dof_parentid[j]
            x[worldid, i] = acc


@ti.func
def _crb_body(worldid, bodyid, body_subtree_adr: ti.template(),
              body_subtree_num: ti.template(), body_subtree: ti.template(),
              cinert: ti.template(), crb: ti.template()):
    acc = cinert[worldid, bodyid]
    if bodyid > 0:  # the world's crb stays its own (zero) cinert, as in MuJoCo
        acc = ti.Vector.zero(float, 10)
        adr = body_subtree_adr[bodyid]
        for k in range(body_subtree_num[bodyid]):
            acc += cinert[worldid, body_subtree[adr + k]]
    crb[worldid, bodyid] = acc


@ti.func
def _crb_dof(worldid, dofid, dof_bodyid: ti.template(), dof_parentid: ti.template(),
             dof_Madr: ti.template(), dof_simplenum: ti.template(),
             dof_armature: ti.template(), cdof: ti.template(), crb: ti.template(),
             qM: ti.template()):
    """Row dofid of qM: M(i, i) incl. dof armature, then M(i, j) for i's ancestors j."""
    madr = dof_Madr[dofid]
    cdof_i = cdof[worldid, dofid]
    buf = mul_inert_vec(crb[worldid, dof_bodyid[dofid]], cdof_i)
    qM[worldid, madr] = dof_armature[param_row(worldid, dof_armature), dofid] + \
        cdof_i.dot(buf)
    # simple dofs (constant diagonal inertia): off-diagonals are exactly zero
    simple = dof_simplenum[dofid] != 0
    j = dof_parentid[dofid]
    t = 1
    while j >= 0:
        val = 0.0
        if not simple:
            val = cdof[worldid, j].dot(buf)
        qM[worldid, madr + t] = val
        t += 1
        j = dof_parentid[j]


@ti.kernel
def _crb(
    # model
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, dof_bodyid: ND,
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, dof_armature: ND,
    nbody: ti.i32, nv: ti.i32,
    # data in
    cinert: ND, cdof: ND,
    # data out
    crb: ND, qM: ND,
):
    nworld = cinert.shape[0]
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        _crb_body(worldid, bodyid, body_subtree_adr, body_subtree_num, body_subtree,
                  cinert, crb)
    for worldid, dofid in ti.ndrange(nworld, nv):
        _crb_dof(worldid, dofid, dof_bodyid, dof_parentid, dof_Madr, dof_simplenum,
                 dof_armature, cdof, crb, qM)


@ti.kernel
def _crb_tendon(
    # model
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, dof_bodyid: ND,
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, dof_armature: ND,
    tendon_armature: ND, nbody: ti.i32, nv: ti.i32, ntendon: ti.i32,
    # data in
    cinert: ND, cdof: ND, ten_J: ND,
    # data out
    crb: ND, qM: ND,
):
    nworld = cinert.shape[0]
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        _crb_body(worldid, bodyid, body_subtree_adr, body_subtree_num, body_subtree,
                  cinert, crb)
    for worldid, dofid in ti.ndrange(nworld, nv):
        _crb_dof(worldid, dofid, dof_bodyid, dof_parentid, dof_Madr, dof_simplenum,
                 dof_armature, cdof, crb, qM)
        # mj_tendonArmature: M(i, j) += armature J_i J_j for j = i and i's ancestors;
        # MuJoCo's reduced sparsity keeps only the diagonal of a simple dof
        madr = dof_Madr[dofid]
        simple = dof_simplenum[dofid] != 0
        for tenid in range(ntendon):
            arm = tendon_armature[param_row(worldid, tendon_armature), tenid]
            jac_i = ten_J[worldid, tenid, dofid]
            if arm != 0.0 and jac_i != 0.0:
                scaled = arm * jac_i
                qM[worldid, madr] += scaled * jac_i
                if not simple:
                    j = dof_parentid[dofid]
                    t = 1
                    while j >= 0:
                        qM[worldid, madr + t] += scaled * ten_J[worldid, tenid, j]
                        t += 1
                        j = dof_parentid[j]


def _tendon_armature_on(m) -> bool:
    """Whether some world's tendon armature is non-zero (kept on the model: crb runs
    every step; set_param drops it)."""
    return per_options(m, "tendon_armature", lambda m: m.ntendon > 0 and bool(
        np.any(m.param("tendon_armature") != 0)))


def crb(m, d):
    """Composite rigid-body inertias and the joint-space inertia matrix (one launch).

    qM includes dof_armature and, as mj_makeM, tendon armature (armature J' J added
    only inside qM's tree sparsity; ten_J must be current). Models without tendon
    armature use a kernel without the tendon arguments (each costs launch time).
    Reads cinert, cdof (and ten_J with tendon armature); writes crb, qM (MuJoCo's
    sparse layout).
    """
    if _tendon_armature_on(m):
        launch(_crb_tendon, m, d)
    else:
        launch(_crb, m, d)


@ti.kernel
def _factor_m(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    ntree: ti.i32, nv: ti.i32, nM: ti.i32,
    # data in
    qM: ND,
    # data out
    qLD: ND, qLDiagInv: ND,
):
    nworld = qM.shape[0]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        num = tree_dofnum[treeid]
        if num > 0:
            for adr in range(dof_Madr[start], row_end(start + num - 1, dof_Madr, nv, nM)):
                qLD[worldid, adr] = qM[worldid, adr]
        ld_factor(worldid, start, num, qLD, qLDiagInv, dof_parentid, dof_Madr,
                   dof_simplenum, nv, nM)


def factor_m(m, d):
    """L'*D*L factorization of qM exploiting the tree sparsity (one launch).

    Reads qM; writes qLD_tree (tiphys layout: qM's) and qLDiagInv (as MuJoCo's).
    """
    launch(_factor_m, m, d, qLD=d.qLD_tree)


@ti.kernel
def _solve_m(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    ntree: ti.i32, nv: ti.i32,
    # data in
    qLD: ND, qLDiagInv: ND, y: ND,
    # data out
    x: ND,
):
    nworld = y.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        x[worldid, dofid] = y[worldid, dofid]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        ld_solve(worldid, tree_dofadr[treeid], tree_dofnum[treeid], qLD, qLDiagInv, x,
                  dof_parentid, dof_Madr, dof_simplenum)


def solve_m(m, d, x, y):
    """x = inv(M) y for every world, with the factor from factor_m (one launch).

    ``x`` and ``y`` are (nworld, nv) float ndarrays (may be the same array).
    Reads qLD_tree, qLDiagInv.
    """
    launch(_solve_m, m, d, qLD=d.qLD_tree, y=y, x=x)


@ti.kernel
def _mul_m(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND,
    ntree: ti.i32, nv: ti.i32,
    # data in
    qM: ND, vec: ND,
    # data out
    res: ND,
):
    nworld = qM.shape[0]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        num = tree_dofnum[treeid]
        for i in range(start, start + num):
            res[worldid, i] = 0.0
        mul_m_tree_add(worldid, start, num, qM, vec, res, dof_Madr, dof_parentid)


@ti.func
def mul_m_tree_add(worldid, start, num, qM: ti.template(), vec: ti.template(),
                   res: ti.template(), dof_Madr: ti.template(), dof_parentid: ti.template()):
    """res += M vec over one tree's dofs, from qM's sparse rows (diagonal, then each
    ancestor entry used both ways)."""
    for i in range(start, start + num):
        madr = dof_Madr[i]
        res[worldid, i] += qM[worldid, madr] * vec[worldid, i]
        j = dof_parentid[i]
        adr = madr + 1
        while j >= 0:
            res[worldid, i] += qM[worldid, adr] * vec[worldid, j]
            res[worldid, j] += qM[worldid, adr] * vec[worldid, i]
            adr += 1
            j = dof_parentid[j]


def mul_m(m, d, res, vec):
    """res = M vec for every world (one launch); res, vec: (nworld, nv) ndarrays.

    Reads qM.
    """
    launch(_mul_m, m, d, vec=vec, res=res)


@ti.kernel
def _mul_m2(
    # model
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, nv: ti.i32,
    # data in
    qLD: ND, vec: ND,
    # data out
    res: ND,
):
    nworld = vec.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        # (L vec)_i = vec_i + sum over ancestors j of L(i, j) vec_j, then sqrt(D_i)
        madr = dof_Madr[dofid]
        acc = vec[worldid, dofid]
        adr = madr + 1
        j = dof_parentid[dofid]
        if dof_simplenum[dofid] != 0:  # a simple dof's row of L is the unit row
            j = -1
        while j >= 0:
            acc += qLD[worldid, adr] * vec[worldid, j]
            adr += 1
            j = dof_parentid[j]
        res[worldid, dofid] = ti.sqrt(qLD[worldid, madr]) * acc


def mul_m2(m, d, res, vec):
    """res = sqrt(D) L vec for every world, with M = L'DL from factor_m, so that
    |res|^2 = vec' M vec (mj_mulM2; one launch). ``res``, ``vec``: (nworld, nv)
    ndarrays, distinct. Reads qLD_tree."""
    launch(_mul_m2, m, d, qLD=d.qLD_tree, vec=vec, res=res)


@ti.kernel
def _solve_m2(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    ntree: ti.i32, nv: ti.i32,
    # data in
    qLD: ND, qLDiagInv: ND, y: ND,
    # data out
    x: ND,
):
    nworld = y.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        x[worldid, dofid] = y[worldid, dofid]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        num = tree_dofnum[treeid]
        lt_solve(worldid, start, num, qLD, x, dof_parentid, dof_Madr, dof_simplenum)
        for i in range(start, start + num):
            x[worldid, i] *= ti.sqrt(qLDiagInv[worldid, i])


def solve_m2(m, d, x, y):
    """x = sqrt(inv(D)) inv(L') y for every world (half of solve_m: |x|^2 =
    y' inv(M) y; mj_solveM2, whose sqrt(inv(D)) argument is sqrt(qLDiagInv) here).
    ``x``, ``y``: (nworld, nv) ndarrays (may be the same array). Reads qLD_tree,
    qLDiagInv; one launch."""
    launch(_solve_m2, m, d, qLD=d.qLD_tree, y=y, x=x)


def add_m(m, d, dst):
    """dst += M (lower triangle only, as mj_addM's dense form) for every world:
    ``dst`` is numpy (nworld, nv, nv), changed in place and returned."""
    qM = d.numpy("qM")
    if dst.shape != (d.nworld, m.nv, m.nv):
        raise ValueError(f"add_m: dst must be (nworld, nv, nv) = "
                         f"{(d.nworld, m.nv, m.nv)}, got {dst.shape}")
    parent = m.arrays.dof_parentid
    for i in range(m.nv):
        j = i
        adr = int(m.arrays.dof_Madr[i])
        while j >= 0:
            dst[:, i, j] += qM[:, adr]
            j = int(parent[j])
            adr += 1
    return dst


def full_m(m, d):
    """The dense inertia matrices, numpy (nworld, nv, nv), from qM."""
    qM = d.numpy("qM")
    nv = m.nv
    out = np.zeros((d.nworld, nv, nv), dtype=qM.dtype)
    parent = m.arrays.dof_parentid
    for i in range(nv):
        j = i
        adr = int(m.arrays.dof_Madr[i])
        while j >= 0:
            out[:, i, j] = qM[:, adr]
            out[:, j, i] = qM[:, adr]
            j = int(parent[j])
            adr += 1
    return out


# ---------------------------------------------------------------------------------------
# velocities and bias forces
# ---------------------------------------------------------------------------------------

@ti.func
def _body_vel(worldid, b, cvel, write, body_dofnum: ti.template(), body_dofadr: ti.template(),
              dof_jntid: ti.template(), jnt_type: ti.template(), cdof: ti.template(),
              qvel: ti.template(), cdof_dot: ti.template()):
    """Body b's cvel from its parent's, as mj_comVel; with ``write``, its cdof_dot."""
    bda = body_dofadr[b]
    j = 0
    while j < body_dofnum[b]:
        dofid = bda + j
        jtype = jnt_type[dof_jntid[dofid]]
        if jtype == JNT_FREE:  # free: translation first (cdof_dot = 0), then as a ball joint
            tmp = ti.Vector.zero(float, 6)
            for k in ti.static(range(3)):
                if write:
                    cdof_dot[worldid, dofid + k] = ti.Vector.zero(float, 6)
                tmp += cdof[worldid, dofid + k] * qvel[worldid, dofid + k]
            cvel += tmp
            dofid += 3
            j += 3
            jtype = 1
        if jtype == JNT_BALL:
            tmp = ti.Vector.zero(float, 6)
            for k in ti.static(range(3)):
                if write:
                    cdof_dot[worldid, dofid + k] = cross_motion(cvel, cdof[worldid, dofid + k])
                tmp += cdof[worldid, dofid + k] * qvel[worldid, dofid + k]
            cvel += tmp
            j += 3
        else:
            if write:
                cdof_dot[worldid, dofid] = cross_motion(cvel, cdof[worldid, dofid])
            cvel += cdof[worldid, dofid] * qvel[worldid, dofid]
            j += 1
    return cvel


@ti.kernel
def _com_vel(
    # model
    body_parentid: ND, body_depth: ND, body_dofnum: ND, body_dofadr: ND, dof_jntid: ND,
    jnt_type: ND, nbody: ti.i32,
    # data in
    cdof: ND, qvel: ND,
    # data out
    cvel: ND, cdof_dot: ND,
    # algorithm: per-world serial tree pass (many worlds) or per-body chains (few worlds)
    serial: ti.template(),
):
    nworld = cdof.shape[0]
    if ti.static(serial):
        for worldid in range(nworld):
            cvel[worldid, 0] = ti.Vector.zero(float, 6)
            for bodyid in range(1, nbody):
                cvel[worldid, bodyid] = _body_vel(
                    worldid, bodyid, cvel[worldid, body_parentid[bodyid]], True,
                    body_dofnum, body_dofadr, dof_jntid, jnt_type, cdof, qvel, cdof_dot)
    else:
        for worldid, bodyid in ti.ndrange(nworld, nbody):
            vel = ti.Vector.zero(float, 6)
            depth = body_depth[bodyid]
            for level in range(1, depth + 1):
                b = _ancestor(body_parentid, bodyid, depth - level)
                vel = _body_vel(worldid, b, vel, b == bodyid, body_dofnum, body_dofadr,
                                dof_jntid, jnt_type, cdof, qvel, cdof_dot)
            cvel[worldid, bodyid] = vel


def com_vel(m, d):
    """com-based body velocities and dof time-derivatives (one launch).

    Reads cdof, qvel; writes cvel, cdof_dot.
    """
    launch(_com_vel, m, d, serial=_tree_pass(d))


@ti.func
def _rne_body(worldid, bodyid, body_parentid: ti.template(), body_depth: ti.template(),
              body_dofnum: ti.template(), body_dofadr: ti.template(), gravity,
              qvel: ti.template(), cdof_dot: ti.template(), cinert: ti.template(),
              cvel: ti.template(), rne_cfrc: ti.template()):
    """rne_cfrc of one body: cinert cacc + cvel x (cinert cvel), with
    cacc = -gravity + the chain's cdof_dot qvel (qacc = 0)."""
    cacc = ti.Vector([0.0, 0.0, 0.0, -gravity[0], -gravity[1], -gravity[2]])
    depth = body_depth[bodyid]
    for level in range(1, depth + 1):
        b = _ancestor(body_parentid, bodyid, depth - level)
        bda = body_dofadr[b]
        tmp = ti.Vector.zero(float, 6)
        for j in range(body_dofnum[b]):
            tmp += cdof_dot[worldid, bda + j] * qvel[worldid, bda + j]
        cacc += tmp
    frc = ti.Vector.zero(float, 6)
    if bodyid > 0:
        inert = cinert[worldid, bodyid]
        vel = cvel[worldid, bodyid]
        frc = mul_inert_vec(inert, cacc) + cross_force(vel, mul_inert_vec(inert, vel))
    rne_cfrc[worldid, bodyid] = frc


@ti.func
def _rne_dof(worldid, dofid, body_subtree_adr: ti.template(),
             body_subtree_num: ti.template(), body_subtree: ti.template(),
             dof_bodyid: ti.template(), cdof: ti.template(), rne_cfrc: ti.template(),
             qfrc_bias: ti.template()):
    """qfrc_bias of one dof: cdof . (the forces of its body's subtree)."""
    bodyid = dof_bodyid[dofid]
    adr = body_subtree_adr[bodyid]
    acc = ti.Vector.zero(float, 6)
    for k in range(body_subtree_num[bodyid]):
        acc += rne_cfrc[worldid, body_subtree[adr + k]]
    qfrc_bias[worldid, dofid] = cdof[worldid, dofid].dot(acc)


@ti.kernel
def _rne(
    # model
    body_parentid: ND, body_depth: ND, body_dofnum: ND, body_dofadr: ND,
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, dof_bodyid: ND,
    nbody: ti.i32, nv: ti.i32, gx: float, gy: float, gz: float,
    # data in
    qvel: ND, cdof: ND, cdof_dot: ND, cinert: ND, cvel: ND,
    # data out
    rne_cfrc: ND, qfrc_bias: ND,
):
    nworld = qvel.shape[0]
    gravity = ti.Vector([gx, gy, gz])
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        _rne_body(worldid, bodyid, body_parentid, body_depth, body_dofnum, body_dofadr,
                  gravity, qvel, cdof_dot, cinert, cvel, rne_cfrc)
    for worldid, dofid in ti.ndrange(nworld, nv):
        _rne_dof(worldid, dofid, body_subtree_adr, body_subtree_num, body_subtree,
                 dof_bodyid, cdof, rne_cfrc, qfrc_bias)


@ti.kernel
def _rne_tendon(
    # model
    body_parentid: ND, body_depth: ND, body_dofnum: ND, body_dofadr: ND,
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, body_rootid: ND,
    dof_bodyid: ND, dof_parentid: ND, dof_jntid: ND, jnt_type: ND, jnt_dofadr: ND,
    site_bodyid: ND, tendon_adr: ND, tendon_num: ND, tendon_armature: ND, wrap_type: ND,
    wrap_objid: ND, wrap_prm: ND, nbody: ti.i32, nv: ti.i32, ntendon: ti.i32,
    gx: float, gy: float, gz: float,
    # data in
    qvel: ND, cdof: ND, cdof_dot: ND, cinert: ND, cvel: ND, site_xpos: ND, subtree_com: ND,
    ten_J: ND,
    # data out
    rne_cfrc: ND, qfrc_bias: ND,
):
    nworld = qvel.shape[0]
    gravity = ti.Vector([gx, gy, gz])
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        _rne_body(worldid, bodyid, body_parentid, body_depth, body_dofnum, body_dofadr,
                  gravity, qvel, cdof_dot, cinert, cvel, rne_cfrc)
    for worldid, dofid in ti.ndrange(nworld, nv):
        _rne_dof(worldid, dofid, body_subtree_adr, body_subtree_num, body_subtree,
                 dof_bodyid, cdof, rne_cfrc, qfrc_bias)
    # mj_tendonBias: qfrc_bias += ten_J' armature (d/dt ten_J) qvel, tendon by tendon
    for worldid in range(nworld):
        for tenid in range(ntendon):
            arm = tendon_armature[param_row(worldid, tendon_armature), tenid]
            if arm != 0.0:
                coef = arm * tendon_jdot_qvel(
                    worldid, tenid, tendon_adr, tendon_num, wrap_type, wrap_objid,
                    wrap_prm, site_bodyid, body_parentid, body_dofnum, body_dofadr,
                    body_rootid, dof_parentid, dof_bodyid, dof_jntid, jnt_type,
                    jnt_dofadr, site_xpos, cdof, cdof_dot, cvel, subtree_com, qvel)
                if coef != 0.0:
                    for dofid in range(nv):
                        qfrc_bias[worldid, dofid] += coef * ten_J[worldid, tenid, dofid]


def rne(m, d):
    """Bias forces C(qpos, qvel) incl. gravity: RNE with zero acceleration, plus the
    tendon-armature bias ten_J' armature (d/dt ten_J) qvel that mj_fwdVelocity adds
    (one launch; models without tendon armature use a kernel without its arguments).

    Honours the gravity disable flag. Reads qvel, cdof, cdof_dot, cinert, cvel (and
    site_xpos, subtree_com, ten_J with tendon armature); writes qfrc_bias (and the
    scratch rne_cfrc).
    """
    g = (0.0, 0.0, 0.0) if m.opt.disabled("gravity") else tuple(m.opt.gravity)
    gx, gy, gz = g
    if _tendon_armature_on(m):
        launch(_rne_tendon, m, d, gx=gx, gy=gy, gz=gz)
    else:
        launch(_rne, m, d, gx=gx, gy=gy, gz=gz)
