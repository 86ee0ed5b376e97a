"""Device kernels of the support API (tiphys/support.py, tiphys/state.py): Jacobian
time-derivatives, point/axis Jacobians, the angular momentum matrix, object velocities
and accelerations, local-to-global frames, qpos differences and integration, products
with the constraint Jacobian, and the state gather/scatter/copy of mj_getState,
mj_setState and mj_copyState.

Every kernel loops over worlds (or rows of a batch of vectors) in parallel. They are
host utilities, not pipeline stages: the host functions validate arguments, shape
per-world inputs as ``(nworld, ...)`` arrays and call one or two kernels each.
Per-world-able ("*") model parameters are indexed ``worldid % shape[0]``.
"""
import taichi as ti

from .consts import (JNT_BALL, JNT_FREE, SAMEFRAME_BODY, SAMEFRAME_BODYROT, SAMEFRAME_INERTIA,
                     SAMEFRAME_INERTIAROT)
from .jac import _jac_point
from .math import (cross_motion, param_row, quat2mat, quat_integrate, quat_mul,
                   quat_normalize, sub_quat, transform_motion)

ND = ti.types.ndarray()



@ti.func
def _vec3(a: ti.template(), row, col):
    return ti.Vector([a[row, col], a[row, col + 1], a[row, col + 2]])


@ti.func
def _vec4(a: ti.template(), row, col):
    return ti.Vector([a[row, col], a[row, col + 1], a[row, col + 2], a[row, col + 3]])


@ti.func
def _last_dof(body, body_dofnum: ti.template(), body_dofadr: ti.template(),
              body_parentid: ti.template()):
    """Last dof moving ``body`` (skipping bodies welded to their parent); -1: none."""
    b = body
    while b > 0 and body_dofnum[b] == 0:
        b = body_parentid[b]
    dofid = -1
    if b > 0:
        dofid = body_dofadr[b] + body_dofnum[b] - 1
    return dofid


@ti.kernel
def jac_dot(
    # model
    body_rootid: ND, body_dofnum: ND, body_dofadr: ND, body_parentid: ND,
    dof_parentid: ND, dof_jntid: ND, dof_bodyid: ND, jnt_type: ND, jnt_dofadr: ND,
    nv: ti.i32, body: ti.i32,
    # data in
    subtree_com: ND, cdof: ND, cdof_dot: ND, cvel: ND, point: ND,
    # out
    jacp: ND, jacr: ND,
):
    """Time derivative of the point Jacobians (mj_jacDot); jacp, jacr (nworld, 3, nv)."""
    nworld = jacp.shape[0]
    for worldid, k, dofid in ti.ndrange(nworld, 3, nv):
        jacp[worldid, k, dofid] = 0.0
        jacr[worldid, k, dofid] = 0.0
    for worldid in range(nworld):
        offset = _vec3(point, worldid, 0) - subtree_com[worldid, body_rootid[body]]
        _, pvel_lin = transform_motion(cvel[worldid, body], offset,
                                       ti.Matrix.identity(float, 3), False)
        dofid = _last_dof(body, body_dofnum, body_dofadr, body_parentid)
        while dofid >= 0:
            dof = cdof[worldid, dofid]
            dof_dot = cdof_dot[worldid, dofid]
            jntid = dof_jntid[dofid]
            jtype = jnt_type[jntid]
            if jtype == JNT_BALL or (jtype == JNT_FREE and dofid >= jnt_dofadr[jntid] + 3):
                # quaternion dofs: cdof_dot from the dof's own body velocity
                dof_dot = cross_motion(cvel[worldid, dof_bodyid[dofid]], dof)
            ang_dot = ti.Vector([dof_dot[0], dof_dot[1], dof_dot[2]])
            lin_dot = ti.Vector([dof_dot[3], dof_dot[4], dof_dot[5]])
            ang = ti.Vector([dof[0], dof[1], dof[2]])
            lin = lin_dot + ang_dot.cross(offset) + ang.cross(pvel_lin)
            for k in ti.static(range(3)):
                jacr[worldid, k, dofid] += ang_dot[k]
                jacp[worldid, k, dofid] += lin[k]
            dofid = dof_parentid[dofid]


@ti.kernel
def jac_point_axis(
    # model
    body_rootid: ND, body_dofnum: ND, body_dofadr: ND, body_parentid: ND,
    dof_parentid: ND, nv: ti.i32, body: ti.i32,
    # data in
    subtree_com: ND, cdof: ND, point: ND, axis: ND,
    # out (jacr: scratch)
    jacp: ND, jacr: ND, jaxis: ND,
):
    """Point Jacobian and the Jacobian of an axis on the body (mj_jacPointAxis)."""
    nworld = jacp.shape[0]
    for worldid, k, dofid in ti.ndrange(nworld, 3, nv):
        jacp[worldid, k, dofid] = 0.0
        jacr[worldid, k, dofid] = 0.0
    for worldid in range(nworld):
        _jac_point(worldid, body, _vec3(point, worldid, 0), 1.0, jacp, jacr, body_rootid,
                   body_dofnum, body_dofadr, body_parentid, dof_parentid, subtree_com, cdof,
                   True)
    for worldid, dofid in ti.ndrange(nworld, nv):
        r = ti.Vector([jacr[worldid, 0, dofid], jacr[worldid, 1, dofid],
                       jacr[worldid, 2, dofid]])
        col = r.cross(_vec3(axis, worldid, 0))
        for k in ti.static(range(3)):
            jaxis[worldid, k, dofid] = col[k]


@ti.kernel
def angmom_mat(
    # model
    body_rootid: ND, body_dofnum: ND, body_dofadr: ND, body_parentid: ND,
    dof_parentid: ND, body_mass: ND, body_inertia: ND, body_subtree_adr: ND,
    body_subtree_num: ND, body_subtree: ND, nv: ti.i32, body: ti.i32,
    # data in
    subtree_com: ND, cdof: ND, xipos: ND, ximat: ND,
    # out
    mat: ND,
):
    """Subtree angular momentum matrix about the subtree com (mj_angmomMat)."""
    nworld = mat.shape[0]
    for worldid, k, dofid in ti.ndrange(nworld, 3, nv):
        mat[worldid, k, dofid] = 0.0
    for worldid in range(nworld):
        com = subtree_com[worldid, body]
        adr = body_subtree_adr[body]
        for s in range(body_subtree_num[body]):
            b = body_subtree[adr + s]
            mass = body_mass[param_row(worldid, body_mass), b]
            inertia = body_inertia[param_row(worldid, body_inertia), b]
            rot = ximat[worldid, b]
            # body inertia about its com in world axes, and its com seen from the
            # subtree com (the moment of the body's linear momentum)
            inert = rot @ ti.Matrix([[inertia[0], 0.0, 0.0], [0.0, inertia[1], 0.0],
                                     [0.0, 0.0, inertia[2]]]) @ rot.transpose()
            arm = xipos[worldid, b] - com
            offset = xipos[worldid, b] - subtree_com[worldid, body_rootid[b]]
            dofid = _last_dof(b, body_dofnum, body_dofadr, body_parentid)
            while dofid >= 0:
                dof = cdof[worldid, dofid]
                ang = ti.Vector([dof[0], dof[1], dof[2]])
                lin = ti.Vector([dof[3], dof[4], dof[5]]) + ang.cross(offset)
                col = inert @ ang + mass * arm.cross(lin)
                for k in ti.static(range(3)):
                    mat[worldid, k, dofid] += col[k]
                dofid = dof_parentid[dofid]


@ti.kernel
def object_motion(
    # model
    body_weldid: ND, body_rootid: ND, bodyid: ti.i32, objid: ti.i32,
    # data in: the object's position and orientation arrays (xipos/ximat, xpos/xmat,
    # geom_xpos/geom_xmat, site_xpos/site_xmat or cam_xpos/cam_xmat)
    obj_pos: ND, obj_mat: ND, subtree_com: ND, cvel: ND, cacc: ND,
    # out
    res: ND,
    # runtime: 1 for the object's own axes; compile time: acceleration (else velocity)
    local: ti.i32, acceleration: ti.template(),
):
    """6D velocity or acceleration (rot:lin) of an object in an object-centered frame
    (mj_objectVelocity, mj_objectAcceleration); zero on bodies welded to the world."""
    for worldid in range(res.shape[0]):
        out = ti.Vector.zero(float, 6)
        if body_weldid[bodyid] != 0:
            dif = obj_pos[worldid, objid] - subtree_com[worldid, body_rootid[bodyid]]
            rot = obj_mat[worldid, objid]
            ang, lin = transform_motion(cvel[worldid, bodyid], dif, rot, local)
            if ti.static(acceleration):
                vel_ang, vel_lin = ang, lin
                ang, lin = transform_motion(cacc[worldid, bodyid], dif, rot, local)
                lin += vel_ang.cross(vel_lin)  # Coriolis term of the rotating frame
            out = ti.Vector([ang[0], ang[1], ang[2], lin[0], lin[1], lin[2]])
        for k in ti.static(range(6)):
            res[worldid, k] = out[k]


@ti.kernel
def local2global(
    # data in
    xpos: ND, xquat: ND, xmat: ND, xipos: ND, ximat: ND, body: ti.i32, sameframe: ti.i32,
    pos: ND, quat: ND,
    # out
    out_pos: ND, out_mat: ND,
):
    """Global position and orientation of a frame given in body coordinates, with
    MuJoCo's mjtSameFrame shortcuts (mj_local2Global)."""
    for worldid in range(out_pos.shape[0]):
        bpos = xpos[worldid, body]
        bmat = xmat[worldid, body]
        p = bmat @ _vec3(pos, worldid, 0) + bpos
        if sameframe == SAMEFRAME_BODY:
            p = bpos
        elif sameframe == SAMEFRAME_INERTIA:
            p = xipos[worldid, body]
        r = quat2mat(quat_mul(xquat[worldid, body], _vec4(quat, worldid, 0)))
        if sameframe == SAMEFRAME_BODY or sameframe == SAMEFRAME_BODYROT:
            r = bmat
        elif sameframe == SAMEFRAME_INERTIA or sameframe == SAMEFRAME_INERTIAROT:
            r = ximat[worldid, body]
        for i in ti.static(range(3)):
            out_pos[worldid, i] = p[i]
            for j in ti.static(range(3)):
                out_mat[worldid, i, j] = r[i, j]


@ti.kernel
def differentiate_pos(jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND, njnt: ti.i32,
                      dt: float, qpos1: ND, qpos2: ND, qvel: ND):
    """qvel such that integrating it over dt takes qpos1 to qpos2 (mj_differentiatePos)."""
    for row, jntid in ti.ndrange(qvel.shape[0], njnt):
        padr = jnt_qposadr[jntid]
        vadr = jnt_dofadr[jntid]
        jtype = jnt_type[jntid]
        if jtype == JNT_FREE or jtype == JNT_BALL:
            if jtype == JNT_FREE:
                for i in ti.static(range(3)):
                    qvel[row, vadr + i] = (qpos2[row, padr + i] - qpos1[row, padr + i]) / dt
                padr += 3
                vadr += 3
            vel = sub_quat(_vec4(qpos2, row, padr), _vec4(qpos1, row, padr)) * (1.0 / dt)
            for i in ti.static(range(3)):
                qvel[row, vadr + i] = vel[i]
        else:
            qvel[row, vadr] = (qpos2[row, padr] - qpos1[row, padr]) / dt


@ti.kernel
def integrate_pos(jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND, njnt: ti.i32, dt: float,
                  qvel: ND, qpos: ND):
    """qpos advanced by qvel over dt, in place; quaternions on the sphere
    (mj_integratePos)."""
    for row, jntid in ti.ndrange(qpos.shape[0], njnt):
        padr = jnt_qposadr[jntid]
        vadr = jnt_dofadr[jntid]
        jtype = jnt_type[jntid]
        if jtype == JNT_FREE or jtype == JNT_BALL:
            if jtype == JNT_FREE:
                for i in ti.static(range(3)):
                    qpos[row, padr + i] += dt * qvel[row, vadr + i]
                padr += 3
                vadr += 3
            quat = quat_integrate(_vec4(qpos, row, padr), _vec3(qvel, row, vadr), dt)
            for i in ti.static(range(4)):
                qpos[row, padr + i] = quat[i]
        else:
            qpos[row, padr] += dt * qvel[row, vadr]


@ti.kernel
def normalize_quat(jnt_type: ND, jnt_qposadr: ND, njnt: ti.i32, qpos: ND):
    """Every free and ball joint quaternion of qpos normalized, in place
    (mj_normalizeQuat)."""
    for row, jntid in ti.ndrange(qpos.shape[0], njnt):
        jtype = jnt_type[jntid]
        if jtype == JNT_FREE or jtype == JNT_BALL:
            padr = jnt_qposadr[jntid] + (3 if jtype == JNT_FREE else 0)
            quat = quat_normalize(_vec4(qpos, row, padr))
            for i in ti.static(range(4)):
                qpos[row, padr + i] = quat[i]


@ti.kernel
def mul_jac_vec(nv: ti.i32, nefc: ND, efc_J: ND, vec: ND, res: ND):
    """res[w, r] = efc_J[w, r] . vec[w] for the world's rows r < nefc[w]; 0 past them."""
    for worldid, efcid in ti.ndrange(res.shape[0], res.shape[1]):
        acc = 0.0
        if efcid < nefc[worldid]:
            for dofid in range(nv):
                acc += efc_J[worldid, efcid, dofid] * vec[worldid, dofid]
        res[worldid, efcid] = acc


@ti.kernel
def mul_jac_t_vec(nv: ti.i32, nefc: ND, efc_J: ND, vec: ND, res: ND):
    """res[w] = efc_J[w, :nefc[w]]' vec[w, :nefc[w]]."""
    for worldid, dofid in ti.ndrange(res.shape[0], nv):
        acc = 0.0
        for efcid in range(nefc[worldid]):
            acc += efc_J[worldid, efcid, dofid] * vec[worldid, efcid]
        res[worldid, dofid] = acc


@ti.kernel
def mul_jac_vec_sparse(nefc: ND, efc_J_rownnz: ND, efc_J_rowadr: ND, efc_J_colind: ND,
                       efc_J_sparse: ND, vec: ND, res: ND):
    """mul_jac_vec over each row's non-zeros (sparse-Jacobian models)."""
    for worldid, efcid in ti.ndrange(res.shape[0], res.shape[1]):
        acc = 0.0
        if efcid < nefc[worldid]:
            adr = efc_J_rowadr[worldid, efcid]
            for k in range(efc_J_rownnz[worldid, efcid]):
                acc += efc_J_sparse[worldid, adr + k] * vec[worldid,
                                                            efc_J_colind[worldid, adr + k]]
        res[worldid, efcid] = acc


@ti.kernel
def mul_jac_t_vec_sparse(nv: ti.i32, nefc: ND, efc_J_rownnz: ND, efc_J_rowadr: ND,
                         efc_J_colind: ND, efc_J_sparse: ND, vec: ND, res: ND):
    """mul_jac_t_vec from each row's non-zeros: one thread per world scatters its rows
    in order (each dof's sum in the dense product's order)."""
    for worldid in range(res.shape[0]):
        for dofid in range(nv):
            res[worldid, dofid] = 0.0
        for efcid in range(nefc[worldid]):
            f = vec[worldid, efcid]
            adr = efc_J_rowadr[worldid, efcid]
            for k in range(efc_J_rownnz[worldid, efcid]):
                res[worldid, efc_J_colind[worldid, adr + k]] += \
                    efc_J_sparse[worldid, adr + k] * f


# State elements are Data arrays of three kinds, told apart by ``width`` at compile
# time: -1 a scalar per world (time), 0 a row of scalars (qpos, eq_active, ...), k > 0
# a row of k-vectors (xfrc_applied: 6, mocap_pos: 3, mocap_quat: 4). ``to_int`` marks
# the integer arrays (eq_active, stored as float in a state vector, as MuJoCo's mjtByte).

@ti.func
def _elem_get(src: ti.template(), worldid, i, j, width: ti.template()):
    value = 0.0
    if ti.static(width < 0):
        value = ti.cast(src[worldid], float)
    elif ti.static(width == 0):
        value = ti.cast(src[worldid, i], float)
    else:
        value = ti.cast(src[worldid, i][j], float)
    return value


@ti.func
def _elem_set(dst: ti.template(), worldid, i, j, value, width: ti.template(),
              to_int: ti.template()):
    v = value
    if ti.static(to_int):
        v = ti.cast(value, ti.i32)
    if ti.static(width < 0):
        dst[worldid] = v
    elif ti.static(width == 0):
        dst[worldid, i] = v
    else:
        dst[worldid, i][j] = v


@ti.kernel
def state_gather(src: ND, n: ti.i32, width: ti.template(), world0: ti.i32, offset: ti.i32,
                 state: ND):
    """state[r, offset:offset + size] = the element of world world0 + r."""
    k = ti.static(max(width, 1))
    for r, i in ti.ndrange(state.shape[0], n):
        for j in ti.static(range(k)):
            state[r, offset + i * k + j] = _elem_get(src, world0 + r, i, j, width)


@ti.kernel
def state_scatter(state: ND, n: ti.i32, width: ti.template(), to_int: ti.template(),
                  offset: ti.i32, world0: ti.i32, count: ti.i32, dst: ND):
    """The element of worlds world0 .. world0 + count - 1 from state rows (row 0 for
    every world when state has one row)."""
    k = ti.static(max(width, 1))
    for r, i in ti.ndrange(count, n):
        row = r % state.shape[0]
        for j in ti.static(range(k)):
            _elem_set(dst, world0 + r, i, j, state[row, offset + i * k + j], width, to_int)


@ti.kernel
def rollout_stop(warning_number: ND, stopped: ND):
    """A world whose rollout raised a warning stops: stopped[w] = 1 (mujoco.rollout
    checks every warning counter before each step)."""
    for w in range(stopped.shape[0]):
        counts = warning_number[w]  # a vector per world: one count per mjtWarning
        for i in ti.static(range(counts.n)):
            if counts[i] > 0:
                stopped[w] = 1


@ti.kernel
def rollout_hold(stopped: ND, t: ti.i32, state: ND, nstate: ti.i32, sensor: ND,
                 nsensor: ti.i32):
    """The outputs of step t of a stopped world repeat those of step t - 1."""
    for w, j in ti.ndrange(stopped.shape[0], ti.max(nstate, nsensor)):
        if stopped[w] != 0:
            if j < nstate:
                state[w, t * nstate + j] = state[w, (t - 1) * nstate + j]
            if j < nsensor:
                sensor[w, t * nsensor + j] = sensor[w, (t - 1) * nsensor + j]


@ti.kernel
def state_copy(src: ND, n: ti.i32, width: ti.template(), to_int: ti.template(),
               src_world0: ti.i32, src_count: ti.i32, dst_world0: ti.i32, count: ti.i32,
               dst: ND):
    """dst worlds dst_world0 + r from src worlds src_world0 + (r % src_count)."""
    k = ti.static(max(width, 1))
    for r, i in ti.ndrange(count, n):
        for j in ti.static(range(k)):
            value = _elem_get(src, src_world0 + r % src_count, i, j, width)
            _elem_set(dst, dst_world0 + r, i, j, value, width, to_int)


@ti.kernel
def world_slice(src: ND, world: ti.i32, ndim: ti.template(), dst: ND):
    """dst = src[world] for a Data array with ``ndim`` dimensions after the world's
    (0: one element per world, as time; dst then has one entry)."""
    if ti.static(ndim == 0):
        for _ in range(1):
            dst[0] = src[world]
    elif ti.static(ndim == 1):
        for i in range(dst.shape[0]):
            dst[i] = src[world, i]
    else:
        for i, j in ti.ndrange(dst.shape[0], dst.shape[1]):
            dst[i, j] = src[world, i, j]


@ti.kernel
def world_gather(src: ND, worlds: ND, ndim: ti.template(), dst: ND):
    """dst[i] = src[worlds[i]] for a Data array with ``ndim`` dimensions after the
    world's."""
    for i in range(worlds.shape[0]):
        w = worlds[i]
        if ti.static(ndim == 0):
            dst[i] = src[w]
        elif ti.static(ndim == 1):
            for j in range(dst.shape[1]):
                dst[i, j] = src[w, j]
        else:
            for j, k in ti.ndrange(dst.shape[1], dst.shape[2]):
                dst[i, j, k] = src[w, j, k]


@ti.kernel
def world_scatter(src: ND, worlds: ND, ndim: ti.template(), dst: ND):
    """dst[worlds[i]] = src[i], the inverse of world_gather."""
    for i in range(worlds.shape[0]):
        w = worlds[i]
        if ti.static(ndim == 0):
            dst[w] = src[i]
        elif ti.static(ndim == 1):
            for j in range(src.shape[1]):
                dst[w, j] = src[i, j]
        else:
            for j, k in ti.ndrange(src.shape[1], src.shape[2]):
                dst[w, j, k] = src[i, j, k]
