"""Finite-difference derivatives on the device (engine_derivative_fd.c), and the analytic
derivatives of mju_subQuat and mju_quatIntegrate (mjd_subQuat, mjd_quatIntegrate).

A finite difference is many evaluations of one map (mj_step for mjd_transitionFD,
mj_inverse for mjd_inverseFD) at nudged inputs. Here every nudged evaluation is a
world of its own: the input worlds are copied into an expanded Data of
``ncolumn x nworld`` worlds (world ``c * nworld + w`` is column ``c`` of input world
``w``, so per-world model parameters, indexed ``world % nworld``, stay with their
world), column 0 is the un-nudged input and each other column nudges one input by
+-eps; one batched step (or inverse) evaluates them all, the results are gathered and
differenced on the device. Columns beyond what fits the memory budget run in chunks.

The conventions are MuJoCo 3.4.0's: qpos is nudged in the tangent space
(mj_integratePos with a unit velocity for dof i; every free / ball quaternion is
normalized on the way, as there), next states are differenced with
mj_differentiatePos when nq != nv (plain differences otherwise), forward differences
(x+ - x) / eps or centered (x+ - x-) / 2 eps; a control at its limited range is
nudged only inside the range (forward, else backward; centered where both fit, else
one-sided; zero where neither). Every evaluation starts from the same warmstart
(qacc_warmstart of the input), as MuJoCo restores it before each. One deliberate
difference: MuJoCo 3.4.0's centered sensor derivative with respect to controls
(clampedDiff) divides x- - x+, the opposite sign of every other centered difference;
tiphys returns (s+ - s-) / 2 eps there too.
"""
import taichi as ti

from .consts import JNT_BALL, JNT_FREE
from .math import param_row, quat_integrate, quat_normalize, sub_quat

ND = ti.types.ndarray()

# column kinds
NOMINAL, CTRL, ACT, QVEL, QPOS, QACC = range(6)


@ti.func
def _in_range(x1, x2, lo, hi):
    return x1 >= lo and x1 <= hi and x2 >= lo and x2 <= hi


@ti.func
def ctrl_nudge(ctrl, eps, limited, lo, hi, centered):
    """mjd_stepFD's control nudges: (forward allowed, backward allowed)."""
    fwd = limited == 0 or _in_range(ctrl, ctrl + eps, lo, hi)
    back = (centered != 0 or not fwd) and (limited == 0 or _in_range(ctrl - eps, ctrl, lo, hi))
    return fwd, back


@ti.kernel
def _expand(
    nworld: ti.i32,
    # input worlds
    time: ND, qpos: ND, qvel: ND, act: ND, qacc_warmstart: ND, ctrl: ND, qfrc_applied: ND,
    xfrc_applied: ND, eq_active: ND, mocap_pos: ND, mocap_quat: ND, userdata: ND, qacc: ND,
    plugin_state: ND,
    # expanded worlds (ncolumn x nworld)
    e_time: ND, e_qpos: ND, e_qvel: ND, e_act: ND, e_qacc_warmstart: ND, e_ctrl: ND,
    e_qfrc_applied: ND, e_xfrc_applied: ND, e_eq_active: ND, e_mocap_pos: ND,
    e_mocap_quat: ND, e_userdata: ND, e_qacc: ND, e_plugin_state: ND,
):
    """Every expanded world gets its input world's state, controls, applied forces,
    mocap poses, equality flags, user data, plugin state and warmstart (padding
    included)."""
    nexp = e_qpos.shape[0]
    for e in range(nexp):
        e_time[e] = time[e % nworld]
    for e, k in ti.ndrange(nexp, qpos.shape[1]):
        e_qpos[e, k] = qpos[e % nworld, k]
    for e, k in ti.ndrange(nexp, qvel.shape[1]):
        w = e % nworld
        e_qvel[e, k] = qvel[w, k]
        e_qacc_warmstart[e, k] = qacc_warmstart[w, k]
        e_qfrc_applied[e, k] = qfrc_applied[w, k]
        e_qacc[e, k] = qacc[w, k]
    for e, k in ti.ndrange(nexp, act.shape[1]):
        e_act[e, k] = act[e % nworld, k]
    for e, k in ti.ndrange(nexp, ctrl.shape[1]):
        e_ctrl[e, k] = ctrl[e % nworld, k]
    for e, k in ti.ndrange(nexp, xfrc_applied.shape[1]):
        e_xfrc_applied[e, k] = xfrc_applied[e % nworld, k]
    for e, k in ti.ndrange(nexp, eq_active.shape[1]):
        e_eq_active[e, k] = eq_active[e % nworld, k]
    for e, k in ti.ndrange(nexp, mocap_pos.shape[1]):
        e_mocap_pos[e, k] = mocap_pos[e % nworld, k]
        e_mocap_quat[e, k] = mocap_quat[e % nworld, k]
    for e, k in ti.ndrange(nexp, userdata.shape[1]):
        e_userdata[e, k] = userdata[e % nworld, k]
    for e, k in ti.ndrange(nexp, plugin_state.shape[1]):
        e_plugin_state[e, k] = plugin_state[e % nworld, k]


@ti.kernel
def _perturb(
    nworld: ti.i32, c0: ti.i32, eps: float, centered: ti.i32, njnt: ti.i32,
    # columns: kind, input index, sign (+1, -1; 0: a forward-mode control column, +eps
    # where allowed, else -eps)
    col_kind: ND, col_index: ND, col_sign: ND,
    # model
    actuator_ctrllimited: ND, actuator_ctrlrange: ND, jnt_type: ND, jnt_qposadr: ND,
    jnt_dofadr: ND,
    # expanded worlds, in/out
    e_qpos: ND, e_qvel: ND, e_act: ND, e_ctrl: ND, e_qacc: ND,
):
    for e in range(e_qpos.shape[0]):
        c = c0 + e // nworld
        kind = col_kind[c]
        i = col_index[c]
        sign = col_sign[c]
        if kind == CTRL:
            ctrl = e_ctrl[e, i]
            r = actuator_ctrlrange[(e % nworld) % actuator_ctrlrange.shape[0], i]
            fwd, back = ctrl_nudge(ctrl, eps, actuator_ctrllimited[i], r[0], r[1], centered)
            if (sign > 0 or sign == 0) and fwd:
                e_ctrl[e, i] = ctrl + eps
            elif (sign < 0 or sign == 0) and back:
                e_ctrl[e, i] = ctrl - eps
        elif kind == ACT:
            e_act[e, i] += sign * eps
        elif kind == QVEL:
            e_qvel[e, i] += sign * eps
        elif kind == QACC:
            e_qacc[e, i] += sign * eps
        elif kind == QPOS:
            # mj_integratePos(qpos, unit velocity of dof i, sign * eps)
            dt = sign * eps
            for jntid in range(njnt):
                padr = jnt_qposadr[jntid]
                vadr = jnt_dofadr[jntid]
                jtype = jnt_type[jntid]
                if jtype == JNT_FREE or jtype == JNT_BALL:
                    if jtype == JNT_FREE:
                        if i >= vadr and i < vadr + 3:
                            e_qpos[e, padr + i - vadr] += dt
                        padr += 3
                        vadr += 3
                    quat = ti.Vector([e_qpos[e, padr + k] for k in ti.static(range(4))])
                    if i >= vadr and i < vadr + 3:
                        vel = ti.Vector([0.0, 0.0, 0.0])
                        vel[i - vadr] = 1.0
                        quat = quat_integrate(quat, vel, dt)
                    else:  # zero velocity: the quaternion is only normalized
                        quat = quat_normalize(quat)
                    for k in ti.static(range(4)):
                        e_qpos[e, padr + k] = quat[k]
                elif vadr == i:
                    e_qpos[e, padr] += dt


@ti.kernel
def _gather_state(nworld: ti.i32, c0: ti.i32, ncol: ti.i32, nq: ti.i32, nv: ti.i32,
                  na: ti.i32, ns: ti.i32, qpos: ND, qvel: ND, act: ND, sensordata: ND,
                  out_state: ND, out_sens: ND):
    """out_state[c, w] = (qpos, qvel, act), out_sens[c, w] = sensordata of the expanded
    world of column c (< ncol) and input world w."""
    for e in range(qpos.shape[0]):
        c = c0 + e // nworld
        w = e % nworld
        if c < ncol:
            for k in range(nq):
                out_state[c, w, k] = qpos[e, k]
            for k in range(nv):
                out_state[c, w, nq + k] = qvel[e, k]
            for k in range(na):
                out_state[c, w, nq + nv + k] = act[e, k]
            for k in range(ns):
                out_sens[c, w, k] = sensordata[e, k]


@ti.kernel
def _gather_inverse(nworld: ti.i32, c0: ti.i32, ncol: ti.i32, nv: ti.i32, nM: ti.i32,
                    ns: ti.i32, flg_actuation: ti.i32, qfrc_inverse: ND, qfrc_actuator: ND,
                    qM: ND, sensordata: ND, out_force: ND, out_mass: ND, out_sens: ND):
    """qfrc_inverse (minus qfrc_actuator with flg_actuation), qM and sensordata."""
    for e in range(qfrc_inverse.shape[0]):
        c = c0 + e // nworld
        w = e % nworld
        if c < ncol:
            for k in range(nv):
                f = qfrc_inverse[e, k]
                if flg_actuation != 0:
                    f -= qfrc_actuator[e, k]
                out_force[c, w, k] = f
            for k in range(nM):
                out_mass[c, w, k] = qM[e, k]
            for k in range(ns):
                out_sens[c, w, k] = sensordata[e, k]


@ti.kernel
def _diff_transition(
    eps: float, centered: ti.i32, nq: ti.i32, nv: ti.i32, na: ti.i32, nu: ti.i32,
    ns: ti.i32, njnt: ti.i32,
    # per input (qpos dofs, qvel, act, ctrl): its + and - columns (-1: none)
    in_plus: ND, in_minus: ND,
    # model
    actuator_ctrllimited: ND, actuator_ctrlrange: ND, jnt_type: ND, jnt_qposadr: ND,
    jnt_dofadr: ND,
    # the input worlds' controls, gathered next states and sensors
    ctrl: ND, out_state: ND, out_sens: ND,
    # out: (nworld, ndx, ninput) and (nworld, ns, ninput), ndx = 2 nv + na
    jac_state: ND, jac_sens: ND,
):
    nworld = jac_state.shape[0]
    ndx = 2 * nv + na
    for w, j in ti.ndrange(nworld, in_plus.shape[0]):
        # the two evaluations differenced (x2 - x1) / h; valid 0: nothing to difference
        c1 = 0
        c2 = in_plus[j]
        h = eps
        valid = 1
        if c2 == 0:  # an input whose matrix was not asked for: it has no columns
            valid = 0
        elif j >= ndx:  # control: clamped differences (clampedStateDiff)
            i = j - ndx
            r = actuator_ctrlrange[param_row(w, actuator_ctrlrange), i]
            fwd, back = ctrl_nudge(ctrl[w, i], eps, actuator_ctrllimited[i], r[0], r[1],
                                   centered)
            if centered != 0:
                if fwd and back:
                    c1 = in_minus[j]
                    h = 2.0 * eps
                elif back:
                    c1 = in_minus[j]
                    c2 = 0
                elif not fwd:
                    valid = 0
            elif not fwd:
                if back:  # the forward-mode column holds the backward nudge
                    c1 = in_plus[j]
                    c2 = 0
                else:
                    valid = 0
        elif centered != 0:
            c1 = in_minus[j]
            h = 2.0 * eps
        inv_h = 1.0 / h
        if valid == 0:
            for k in range(ndx):
                jac_state[w, k, j] = 0.0
            for k in range(ns):
                jac_sens[w, k, j] = 0.0
        else:
            if nq == nv:
                for k in range(ndx):
                    jac_state[w, k, j] = inv_h * (out_state[c2, w, k] - out_state[c1, w, k])
            else:
                # mj_differentiatePos(qvel, h, qpos1, qpos2)
                for jntid in range(njnt):
                    padr = jnt_qposadr[jntid]
                    vadr = jnt_dofadr[jntid]
                    jtype = jnt_type[jntid]
                    if jtype == JNT_FREE or jtype == JNT_BALL:
                        if jtype == JNT_FREE:
                            for k in ti.static(range(3)):
                                jac_state[w, vadr + k, j] = (out_state[c2, w, padr + k] -
                                                             out_state[c1, w, padr + k]) / h
                            padr += 3
                            vadr += 3
                        q1 = ti.Vector([out_state[c1, w, padr + k] for k in ti.static(range(4))])
                        q2 = ti.Vector([out_state[c2, w, padr + k] for k in ti.static(range(4))])
                        rot = sub_quat(q2, q1) * (1.0 / h)
                        for k in ti.static(range(3)):
                            jac_state[w, vadr + k, j] = rot[k]
                    else:
                        jac_state[w, vadr, j] = (out_state[c2, w, padr] -
                                                 out_state[c1, w, padr]) / h
                for k in range(nv + na):
                    jac_state[w, nv + k, j] = inv_h * (out_state[c2, w, nq + k] -
                                                       out_state[c1, w, nq + k])
            for k in range(ns):
                jac_sens[w, k, j] = inv_h * (out_sens[c2, w, k] - out_sens[c1, w, k])


@ti.kernel
def _diff_inverse(eps: float, nv: ti.i32, nM: ti.i32, ns: ti.i32, out_force: ND,
                  out_mass: ND, out_sens: ND, jac_force: ND, jac_mass: ND, jac_sens: ND):
    """Input j (qpos dofs, qvel, qacc; column j + 1): forward differences of the force,
    sensors and (qpos inputs) qM, rows by input as mjd_inverseFD's outputs."""
    nworld = jac_force.shape[0]
    inv_h = 1.0 / eps
    for w, j in ti.ndrange(nworld, 3 * nv):
        c = j + 1
        for k in range(nv):
            jac_force[w, j, k] = inv_h * (out_force[c, w, k] - out_force[0, w, k])
        for k in range(ns):
            jac_sens[w, j, k] = inv_h * (out_sens[c, w, k] - out_sens[0, w, k])
        if j < nv:
            for k in range(nM):
                jac_mass[w, j, k] = inv_h * (out_mass[c, w, k] - out_mass[0, w, k])


# ---------------------------------------------------------------- quaternion derivatives

@ti.kernel
def _sub_quat_deriv(qa: ND, qb: ND, da: ND, db: ND):
    """mjd_subQuat: derivatives of mju_subQuat(qa, qb) w.r.t. qa and qb (3x3 each)."""
    for i in range(da.shape[0]):
        a = ti.Vector([qa[i, k] for k in ti.static(range(4))])
        b = ti.Vector([qb[i, k] for k in ti.static(range(4))])
        axis = sub_quat(a, b)
        norm = ti.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
        if norm < 1e-15:  # mju_normalize3
            axis = ti.Vector([1.0, 0.0, 0.0])
        else:
            axis = axis * (1.0 / norm)
        half_angle = 0.5 * norm
        kmat = ti.Matrix([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]],
                          [-axis[1], axis[0], 0.0]])
        coef = 0.0
        if not half_angle < 6e-8:
            coef = 1.0 - half_angle / ti.tan(half_angle)
        dmat = ti.Matrix.identity(float, 3) + kmat * half_angle + (kmat @ kmat) * coef
        for r, c in ti.static(ti.ndrange(3, 3)):
            da[i, r, c] = dmat[r, c]
            db[i, r, c] = -dmat[c, r]


@ti.kernel
def _quat_integrate_deriv(vel: ND, scale: ND, dquat: ND, dvel: ND, dscale: ND):
    """mjd_quatIntegrate: derivatives of mju_quatIntegrate(quat, vel, scale) w.r.t. the
    quaternion (3x3, in its tangent space), vel (3x3) and scale (3)."""
    for i in range(dquat.shape[0]):
        v = ti.Vector([vel[i, k] for k in ti.static(range(3))])
        s = scale[i] * v
        xx = s[0] * s[0] + s[1] * s[1] + s[2] * s[2]
        x = ti.sqrt(xx)
        a = ti.cos(x)
        b = 0.0
        c = 0.0
        dd = 0.0
        if ti.abs(x) > 1.0 / 32:
            b = ti.sin(x) / x
            c = (1.0 - a) / xx
            dd = (1.0 - b) / xx
        else:  # 6th order Taylor expansions
            b = 1.0 + xx / 6 * (xx / 20 * (1.0 - xx / 42) - 1.0)
            c = (1.0 + xx / 12 * (xx / 30 * (1.0 - xx / 56) - 1.0)) / 2
            dd = (1.0 + xx / 20 * (xx / 42 * (1.0 - xx / 72) - 1.0)) / 6
        cross = ti.Matrix([[0.0, s[2], -s[1]], [-s[2], 0.0, s[0]], [s[1], -s[0], 0.0]])
        eye = ti.Matrix.identity(float, 3)
        outer = s.outer_product(s)
        dq = a * eye + b * cross + c * outer
        dv = b * eye + c * cross + dd * outer
        ds = dv @ v
        for r in ti.static(range(3)):
            dscale[i, r] = ds[r]
            for col in ti.static(range(3)):
                dquat[i, r, col] = dq[r, col]
                dvel[i, r, col] = dv[r, col]
