"""Actuators: transmission (mj_transmission), actuator/tendon velocities, actuation
(mj_fwdActuation) and activation integration (as mj_advance)."""
from types import SimpleNamespace

import numpy as np
import taichi as ti

from . import callbacks
from .bind import launch
from .check import is_bad, is_nan
from .config import building_twin, float_dtype, per_options
from .consts import (BIAS_AFFINE, BIAS_MUSCLE, BIAS_USER, CONE_ELLIPTIC, DYN_FILTER,
                     DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_MUSCLE, DYN_USER, GAIN_AFFINE,
                     GAIN_FIXED, GAIN_MUSCLE, GAIN_USER, JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE,
                     MINVAL, PI, TRN_BODY, TRN_JOINT, TRN_JOINTINPARENT, TRN_SITE, TRN_SLIDERCRANK,
                     TRN_TENDON, WARN_BADCTRL)
from .math import jnt_ndof, param_row, quat_mul, quat_normalize, rot_vec_quat, sub_quat
from .tendon import add_jac_dot

ND = ti.types.ndarray()
PLUGIN_ACTUATOR = 1  # mjPLUGIN_ACTUATOR (tiphys.plugin.ACTUATOR)
ACT_ALL, ACT_DOT, ACT_FORCE = 0, 1, 2  # what _actuation computes (its ``part``)


@ti.func
def _quat2vel(quat):
    """Rotation vector of a unit quaternion (mju_quat2Vel with dt = 1)."""
    axis = ti.Vector([quat[1], quat[2], quat[3]])
    sin_a_2 = axis.norm()
    if sin_a_2 < MINVAL:
        axis = ti.Vector([1.0, 0.0, 0.0])
    else:
        axis = axis / sin_a_2
    speed = 2.0 * ti.atan2(sin_a_2, quat[0])
    if speed > PI:
        speed -= 2.0 * PI
    return axis * speed


@ti.func
def _vec3(arr: ti.template(), i, j, k0):
    return ti.Vector([arr[i, j][k0], arr[i, j][k0 + 1], arr[i, j][k0 + 2]])


@ti.kernel
def _transmission(
    # model
    actuator_trntype: ND, actuator_trnid: ND, actuator_gear: ND, actuator_cranklength: ND,
    jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND, site_bodyid: ND, site_quat: ND,
    body_parentid: ND, body_dofnum: ND, body_dofadr: ND, body_rootid: ND, body_weldid: ND,
    dof_parentid: ND, nu: ti.i32, nv: ti.i32,
    # data in
    qpos: ND, xquat: ND, site_xpos: ND, site_xmat: ND, cdof: ND, subtree_com: ND,
    ten_length: ND, ten_J: ND,
    # data out
    actuator_length: ND, actuator_moment_dense: ND,
):
    nworld = qpos.shape[0]
    zero3 = ti.Vector([0.0, 0.0, 0.0])
    for worldid, actid in ti.ndrange(nworld, nu):
        for dofid in range(nv):
            actuator_moment_dense[worldid, actid, dofid] = 0.0
        trntype = actuator_trntype[actid]
        trnid = actuator_trnid[actid][0]
        trnid1 = actuator_trnid[actid][1]
        gear = actuator_gear[param_row(worldid, actuator_gear), actid]
        gear_pos = ti.Vector([gear[0], gear[1], gear[2]])
        gear_rot = ti.Vector([gear[3], gear[4], gear[5]])
        length = 0.0
        if trntype == TRN_JOINT or trntype == TRN_JOINTINPARENT:
            jtype = jnt_type[trnid]
            padr = jnt_qposadr[trnid]
            dadr = jnt_dofadr[trnid]
            if jtype == JNT_SLIDE or jtype == JNT_HINGE:
                length = qpos[worldid, padr] * gear[0]
                actuator_moment_dense[worldid, actid, dadr] = gear[0]
            elif jtype == JNT_BALL:
                quat = quat_normalize(ti.Vector([qpos[worldid, padr + k]
                                                 for k in ti.static(range(4))]))
                axis = _quat2vel(quat)
                gear_axis = gear_pos
                if trntype == TRN_JOINTINPARENT:
                    gear_axis = rot_vec_quat(gear_pos, ti.Vector(
                        [quat[0], -quat[1], -quat[2], -quat[3]]))
                length = axis.dot(gear_axis)
                for k in ti.static(range(3)):
                    actuator_moment_dense[worldid, actid, dadr + k] = gear_axis[k]
            else:
                gear_axis = gear_rot
                if trntype == TRN_JOINTINPARENT:
                    quat = quat_normalize(ti.Vector([qpos[worldid, padr + 3 + k]
                                                     for k in ti.static(range(4))]))
                    gear_axis = rot_vec_quat(gear_rot, ti.Vector(
                        [quat[0], -quat[1], -quat[2], -quat[3]]))
                for k in ti.static(range(3)):
                    actuator_moment_dense[worldid, actid, dadr + k] = gear_pos[k]
                    actuator_moment_dense[worldid, actid, dadr + 3 + k] = gear_axis[k]
        elif trntype == TRN_SLIDERCRANK:
            slider = trnid1
            rod = actuator_cranklength[actid]
            smat = site_xmat[worldid, slider]
            axis = ti.Vector([smat[0, 2], smat[1, 2], smat[2, 2]])
            vec = site_xpos[worldid, trnid] - site_xpos[worldid, slider]
            av = vec.dot(axis)
            det = av * av + rod * rod - vec.dot(vec)
            dlda = vec
            dldv = axis
            if det <= 0:
                length = av
            else:
                sdet = ti.sqrt(det)
                length = av - sdet
                dldv = axis * (1 - av / sdet) + vec / sdet
                dlda = vec * (1 - av / sdet)
            length *= gear[0]
            # d length = dlda . (jacr x axis) + dldv . (jac_site - jac_slider)
            add_jac_dot(worldid, actuator_moment_dense, actid, site_bodyid[trnid],
                        site_xpos[worldid, trnid], dldv, zero3, gear[0], body_parentid,
                        body_dofnum, body_dofadr, body_rootid, dof_parentid, cdof,
                        subtree_com)
            add_jac_dot(worldid, actuator_moment_dense, actid, site_bodyid[slider],
                        site_xpos[worldid, slider], -dldv, axis.cross(dlda), gear[0],
                        body_parentid, body_dofnum, body_dofadr, body_rootid, dof_parentid,
                        cdof, subtree_com)
        elif trntype == TRN_TENDON:
            length = ten_length[worldid, trnid] * gear[0]
            for dofid in range(nv):
                actuator_moment_dense[worldid, actid, dofid] = \
                    ten_J[worldid, trnid, dofid] * gear[0]
        elif trntype == TRN_SITE:
            smat = site_xmat[worldid, trnid]
            if trnid1 == -1:
                add_jac_dot(worldid, actuator_moment_dense, actid, site_bodyid[trnid],
                            site_xpos[worldid, trnid], smat @ gear_pos, smat @ gear_rot,
                            1.0, body_parentid, body_dofnum, body_dofadr, body_rootid,
                            dof_parentid, cdof, subtree_com)
            else:
                refid = trnid1
                rmat = site_xmat[worldid, refid]
                wpos = zero3
                wrot = zero3
                if gear_pos.any():
                    vec = rmat.transpose() @ (site_xpos[worldid, trnid] -
                                              site_xpos[worldid, refid])
                    length += vec.dot(gear_pos)
                    wpos = rmat @ gear_pos
                if gear_rot.any():
                    sq = site_quat[param_row(worldid, site_quat), trnid]
                    rq = site_quat[param_row(worldid, site_quat), refid]
                    quat = quat_mul(sq, xquat[worldid, site_bodyid[trnid]])
                    refquat = quat_mul(rq, xquat[worldid, site_bodyid[refid]])
                    length += sub_quat(quat, refquat).dot(gear_rot)
                    wrot = rmat @ gear_rot
                add_jac_dot(worldid, actuator_moment_dense, actid, site_bodyid[trnid],
                            site_xpos[worldid, trnid], wpos, wrot, 1.0, body_parentid,
                            body_dofnum, body_dofadr, body_rootid, dof_parentid, cdof,
                            subtree_com)
                add_jac_dot(worldid, actuator_moment_dense, actid, site_bodyid[refid],
                            site_xpos[worldid, refid], wpos, wrot, -1.0, body_parentid,
                            body_dofnum, body_dofadr, body_rootid, dof_parentid, cdof,
                            subtree_com)
                # the dofs moving both sites (their common ancestral chain) are dropped
                b0 = body_weldid[site_bodyid[trnid]]
                b1 = body_weldid[site_bodyid[refid]]
                d0 = body_dofadr[b0] + body_dofnum[b0] - 1
                d1 = body_dofadr[b1] + body_dofnum[b1] - 1
                if body_dofnum[b0] == 0:
                    d0 = -1
                if body_dofnum[b1] == 0:
                    d1 = -1
                if d0 >= 0 and d1 >= 0:
                    while d0 != d1 and d0 != -1 and d1 != -1:
                        if d0 < d1:
                            d1 = dof_parentid[d1]
                        else:
                            d0 = dof_parentid[d0]
                    if d0 == d1:
                        while d0 >= 0:
                            actuator_moment_dense[worldid, actid, d0] = 0.0
                            d0 = dof_parentid[d0]
        actuator_length[worldid, actid] = length


@ti.kernel
def _transmission_body(
    # model
    actuator_trntype: ND, actuator_trnid: ND, geom_bodyid: ND, body_parentid: ND,
    body_dofnum: ND, body_dofadr: ND, body_rootid: ND, dof_parentid: ND, nu: ti.i32,
    nv: ti.i32, elliptic: ti.i32, has_contacts: ti.i32,
    # data in
    cdof: ND, subtree_com: ND, ncon: ND, contact_geom: ND, contact_exclude: ND,
    contact_dim: ND, contact_efc_address: ND, contact_pos: ND, contact_frame: ND,
    efc_J: ND, efc_J_sparse: ND, efc_J_colind: ND, efc_J_rowadr: ND, efc_J_rownnz: ND,
    # data out
    actuator_moment_dense: ND,
    sparse: ti.template(),
):
    """Body transmissions (adhesion): minus the mean contact-normal Jacobian of the
    body's contacts, as mj_transmission's mjTRN_BODY (rows summed from efc_J for
    included contacts, the normal Jacobian difference for contacts in the gap). With
    sparse Jacobians (``sparse``) the rows' non-zeros are summed: a contact's rows
    share one column list."""
    nworld = cdof.shape[0]
    zero3 = ti.Vector([0.0, 0.0, 0.0])
    for worldid, actid in ti.ndrange(nworld, nu):
        if actuator_trntype[actid] != TRN_BODY:
            continue
        bodyid = actuator_trnid[actid][0]
        counter = 0
        n = 0
        if has_contacts != 0:
            n = ncon[worldid]
        for conid in range(n):
            g1 = contact_geom[worldid, conid][0]
            g2 = contact_geom[worldid, conid][1]
            if g1 < 0 or g2 < 0:
                continue
            b1 = geom_bodyid[g1]
            b2 = geom_bodyid[g2]
            if b1 != bodyid and b2 != bodyid:
                continue
            exclude = contact_exclude[worldid, conid]
            if exclude == 0:
                counter += 1
                adr = contact_efc_address[worldid, conid]
                if adr >= 0:
                    dim = contact_dim[worldid, conid]
                    if ti.static(sparse):
                        radr = efc_J_rowadr[worldid, adr]
                        nrow = 1
                        scl = 1.0
                        if dim > 1 and elliptic == 0:
                            nrow = 2 * (dim - 1)
                            scl = 0.5 / (dim - 1)
                        for k in range(efc_J_rownnz[worldid, adr]):
                            acc = 0.0
                            for r in range(nrow):
                                acc += efc_J_sparse[worldid, efc_J_rowadr[worldid, adr + r] + k]
                            dofid = efc_J_colind[worldid, radr + k]
                            if nrow == 1:
                                actuator_moment_dense[worldid, actid, dofid] += acc
                            else:
                                actuator_moment_dense[worldid, actid, dofid] += acc * scl
                    elif dim == 1 or elliptic != 0:
                        for dofid in range(nv):
                            actuator_moment_dense[worldid, actid, dofid] += \
                                efc_J[worldid, adr, dofid]
                    else:
                        npyramid = dim - 1
                        for dofid in range(nv):
                            acc = 0.0
                            for k in range(2 * npyramid):
                                acc += efc_J[worldid, adr + k, dofid]
                            actuator_moment_dense[worldid, actid, dofid] += \
                                acc * (0.5 / npyramid)
            elif exclude == 1:
                counter += 1
                pos = contact_pos[worldid, conid]
                frame = contact_frame[worldid, conid]
                normal = ti.Vector([frame[0, 0], frame[0, 1], frame[0, 2]])
                add_jac_dot(worldid, actuator_moment_dense, actid, b2, pos, normal, zero3,
                            1.0, body_parentid, body_dofnum, body_dofadr, body_rootid,
                            dof_parentid, cdof, subtree_com)
                add_jac_dot(worldid, actuator_moment_dense, actid, b1, pos, normal, zero3,
                            -1.0, body_parentid, body_dofnum, body_dofadr, body_rootid,
                            dof_parentid, cdof, subtree_com)
        if counter > 0:
            scale = -1.0 / counter
            for dofid in range(nv):
                actuator_moment_dense[worldid, actid, dofid] *= scale


def has_body_transmission(m) -> bool:
    """True if some actuator uses a body transmission (adhesion)."""
    cached = m.plans.has_trn_body
    if cached is None:
        cached = bool(m.nu and np.any(np.asarray(m.arrays.actuator_trntype)[:m.nu] == TRN_BODY))
        m.plans.has_trn_body = cached
    return cached


def transmission(m, d, contacts: bool | None = None):
    """Actuator lengths and (dense) moments, as mj_transmission (one or two launches).

    Reads qpos, xquat, site_xpos, site_xmat, cdof, subtree_com, ten_length, ten_J and,
    for body transmissions (adhesion), the contacts and efc_J (sparse-Jacobian models:
    efc_J_sparse and its row structure) of the last collision and
    make_constraint (as mj_fwdPosition, call those first); writes actuator_length,
    actuator_moment_dense. ``contacts`` False treats every world as contact-free (the
    pipeline passes it when no contact can exist); by default ncon is read.
    """
    if m.nu == 0:
        return
    launch(_transmission, m, d)
    if has_body_transmission(m):
        if contacts is None:
            contacts = True
        launch(_transmission_body, m, d, elliptic=int(m.opt.cone == CONE_ELLIPTIC),
               has_contacts=int(bool(contacts)), sparse=m.is_sparse)


@ti.kernel
def _velocity(ntendon: ti.i32, nu: ti.i32, nv: ti.i32, has_actuation: ti.i32,
              qvel: ND, ten_J: ND, actuator_moment_dense: ND,
              ten_velocity: ND, actuator_velocity: ND):
    nworld = qvel.shape[0]
    for worldid, tenid in ti.ndrange(nworld, ntendon):
        vel = 0.0
        for dofid in range(nv):
            vel += ten_J[worldid, tenid, dofid] * qvel[worldid, dofid]
        ten_velocity[worldid, tenid] = vel
    for worldid, actid in ti.ndrange(nworld, nu):
        vel = 0.0
        if has_actuation != 0:
            for dofid in range(nv):
                vel += actuator_moment_dense[worldid, actid, dofid] * qvel[worldid, dofid]
        actuator_velocity[worldid, actid] = vel


def velocity(m, d):
    """Tendon and actuator velocities (the first part of mj_fwdVelocity; one launch).

    Reads qvel, ten_J, actuator_moment_dense; writes ten_velocity, actuator_velocity.
    """
    if m.ntendon == 0 and m.nu == 0:
        return
    launch(_velocity, m, d, has_actuation=int(not m.opt.disabled("actuation")))


@ti.func
def _clip(x, lo, hi):
    return ti.min(hi, ti.max(lo, x))


@ti.func
def next_activation(act, act_dot, dyntype, tau_prm, actlimited, actrange, timestep):
    """act after one step of act_dot (exact for filterexact), clamped to actrange."""
    res = act + act_dot * timestep
    if dyntype == DYN_FILTEREXACT:
        tau = ti.max(MINVAL, tau_prm)
        res = act + act_dot * tau * (1 - ti.exp(-timestep / tau))
    if actlimited != 0:
        res = _clip(res, actrange[0], actrange[1])
    return res


@ti.func
def _muscle_gain_length(length, lmin, lmax):
    res = 0.0
    if lmin <= length and length <= lmax:
        a = 0.5 * (lmin + 1)
        b = 0.5 * (1 + lmax)
        if length <= a:
            x = (length - lmin) / ti.max(MINVAL, a - lmin)
            res = 0.5 * x * x
        elif length <= 1:
            x = (1 - length) / ti.max(MINVAL, 1 - a)
            res = 1 - 0.5 * x * x
        elif length <= b:
            x = (length - 1) / ti.max(MINVAL, b - 1)
            res = 1 - 0.5 * x * x
        else:
            x = (lmax - length) / ti.max(MINVAL, lmax - b)
            res = 0.5 * x * x
    return res


@ti.func
def _muscle_norm_length(length, lengthrange, acc0, prm):
    force = prm[2]
    if force < 0:
        force = prm[3] / ti.max(MINVAL, acc0)
    L0 = (lengthrange[1] - lengthrange[0]) / ti.max(MINVAL, prm[1] - prm[0])
    L = prm[0] + (length - lengthrange[0]) / ti.max(MINVAL, L0)
    return force, L0, L


@ti.func
def muscle_gain(length, vel, lengthrange, acc0, prm):
    force, L0, L = _muscle_norm_length(length, lengthrange, acc0, prm)
    V = vel / ti.max(MINVAL, L0 * prm[6])
    FL = _muscle_gain_length(L, prm[4], prm[5])
    fvmax = prm[8]
    y = fvmax - 1
    FV = fvmax
    if V <= -1:
        FV = 0.0
    elif V <= 0:
        FV = (V + 1) * (V + 1)
    elif V <= y:
        FV = fvmax - (y - V) * (y - V) / ti.max(MINVAL, y)
    return -force * FL * FV


@ti.func
def muscle_bias(length, lengthrange, acc0, prm):
    force, L0, L = _muscle_norm_length(length, lengthrange, acc0, prm)
    b = 0.5 * (1 + prm[5])
    res = 0.0
    if L <= 1:
        res = 0.0
    elif L <= b:
        x = (L - 1) / ti.max(MINVAL, b - 1)
        res = -force * prm[7] * 0.5 * x * x
    else:
        x = (L - b) / ti.max(MINVAL, b - 1)
        res = -force * prm[7] * (0.5 + x)
    return res


@ti.func
def muscle_dynamics(ctrl, act, prm):
    ctrlclamp = _clip(ctrl, 0.0, 1.0)
    actclamp = _clip(act, 0.0, 1.0)
    tau_act = prm[0] * (0.5 + 1.5 * actclamp)
    tau_deact = prm[1] / (0.5 + 1.5 * actclamp)
    width = prm[2]
    dctrl = ctrlclamp - act
    tau = tau_deact
    if width < MINVAL:
        if dctrl > 0:
            tau = tau_act
    else:
        x = dctrl / width + 0.5
        sig = 0.0
        if x >= 1:
            sig = 1.0
        elif x > 0:
            sig = x * x * x * (3 * x * (2 * x - 5) + 10)
        tau = tau_deact + (tau_act - tau_deact) * sig
    return dctrl / ti.max(MINVAL, tau)


@ti.func
def actuator_disabled(group, disableactuator):
    res = 0
    if group >= 0 and group <= 30:
        if (disableactuator >> group) & 1:
            res = 1
    return res


@ti.func
def _clamped_ctrl(worldid, actid, ctrl: ti.template(), clampctrl,
                  actuator_ctrllimited: ti.template(), actuator_ctrlrange: ti.template()):
    """The control as mj_fwdActuation clamps it: mju_clip keeps a NaN (every comparison
    with it is false), so the bad-control check that follows sees it. (ti.min/ti.max
    would turn it into a range limit.)"""
    u = ctrl[worldid, actid]
    if clampctrl != 0 and actuator_ctrllimited[actid] != 0 and not is_nan(u):
        rng = actuator_ctrlrange[param_row(worldid, actuator_ctrlrange), actid]
        u = _clip(u, rng[0], rng[1])
    return u


@ti.kernel
def _actuation(
    # model
    actuator_dyntype: ND, actuator_gaintype: ND, actuator_biastype: ND,
    actuator_actadr: ND, actuator_actnum: ND, actuator_group: ND,
    actuator_ctrllimited: ND, actuator_actlimited: ND, actuator_dynprm: ND,
    actuator_gainprm: ND, actuator_biasprm: ND, actuator_actearly: ND,
    actuator_ctrlrange: ND, actuator_actrange: ND, actuator_acc0: ND,
    actuator_lengthrange: ND, actuator_plugin: ND, nu: ti.i32, clampctrl: ti.i32,
    disableactuator: ti.i32, timestep: float,
    # user gains and biases: user_col[actid] = (column in user_gain, in user_bias) or -1
    user_col: ND, user_gain: ND, user_bias: ND,
    # data in
    ctrl: ND, act: ND, actuator_length: ND, actuator_velocity: ND,
    # data out
    act_dot: ND, actuator_force: ND, warning_number: ND, warning_lastinfo: ND,
    part: ti.template(),
    # sleep: actuators of sleeping trees (sleep_asleep[w, i] != 0, kernels/sleep.py)
    # keep their act_dot and give no force, as mj_fwdActuation skips them
    sleep: ti.template(), sleep_asleep: ND,
):
    """Activation derivatives and unclamped actuator forces (gain * ctrl/act + bias);
    plugin actuators get act_dot of their built-in dynamics only (on their last
    activation; the others zeroed) and zero force. User dynamics leave act_dot zero; a
    user gain or bias is user_gain / user_bias at the actuator's column, or 1 / 0 where
    it has none (MuJoCo without its callback). ``part``: ACT_ALL both, ACT_DOT the
    activation derivatives only, ACT_FORCE the forces only (reading act_dot, which the
    user-dynamics callback completed in between)."""
    nworld = ctrl.shape[0]
    if ti.static(building_twin()):
        # a CPU twin: each world's controls checked once (not once per actuator)
        for worldid in range(nworld):
            bad = _first_bad_ctrl(worldid, nu, ctrl, clampctrl, actuator_ctrllimited,
                                  actuator_ctrlrange)
            _count_bad_ctrl(worldid, bad, warning_number, warning_lastinfo, part)
            for actid in range(nu):
                _actuator(worldid, actid, bad, actuator_dyntype, actuator_gaintype,
                          actuator_biastype, actuator_actadr, actuator_actnum,
                          actuator_group, actuator_ctrllimited, actuator_actlimited,
                          actuator_dynprm, actuator_gainprm, actuator_biasprm,
                          actuator_actearly, actuator_ctrlrange, actuator_actrange,
                          actuator_acc0, actuator_lengthrange, actuator_plugin,
                          clampctrl, disableactuator, timestep, user_col, user_gain,
                          user_bias, ctrl, act, actuator_length, actuator_velocity,
                          act_dot, actuator_force, part, sleep, sleep_asleep)
    else:
        for worldid, actid in ti.ndrange(nworld, nu):
            bad = _first_bad_ctrl(worldid, nu, ctrl, clampctrl, actuator_ctrllimited,
                                  actuator_ctrlrange)
            if actid == 0:  # (the world's warning counted once)
                _count_bad_ctrl(worldid, bad, warning_number, warning_lastinfo, part)
            _actuator(worldid, actid, bad, actuator_dyntype, actuator_gaintype,
                      actuator_biastype, actuator_actadr, actuator_actnum,
                      actuator_group, actuator_ctrllimited, actuator_actlimited,
                      actuator_dynprm, actuator_gainprm, actuator_biasprm,
                      actuator_actearly, actuator_ctrlrange, actuator_actrange,
                      actuator_acc0, actuator_lengthrange, actuator_plugin, clampctrl,
                      disableactuator, timestep, user_col, user_gain, user_bias, ctrl,
                      act, actuator_length, actuator_velocity, act_dot, actuator_force,
                      part, sleep, sleep_asleep)


@ti.func
def _first_bad_ctrl(worldid, nu, ctrl: ti.template(), clampctrl,
                    actuator_ctrllimited: ti.template(), actuator_ctrlrange: ti.template()):
    """The first actuator whose clamped control is bad, or -1 (any bad control zeroes
    all of the world's controls, not ctrl itself)."""
    bad = -1
    for k in range(nu):
        if bad < 0 and is_bad(_clamped_ctrl(worldid, k, ctrl, clampctrl,
                                            actuator_ctrllimited, actuator_ctrlrange)):
            bad = k
    return bad


@ti.func
def _count_bad_ctrl(worldid, bad, warning_number: ti.template(),
                    warning_lastinfo: ti.template(), part: ti.template()):
    """mjWARN_BADCTRL for a world with a bad control (the first's index), counted where
    the activation derivatives are made (not by the ACT_FORCE pass)."""
    if ti.static(part != ACT_FORCE):
        if bad >= 0:
            warning_number[worldid][WARN_BADCTRL] += 1
            warning_lastinfo[worldid][WARN_BADCTRL] = bad


@ti.func
def _actuator(worldid, actid, bad, actuator_dyntype: ti.template(),
              actuator_gaintype: ti.template(), actuator_biastype: ti.template(),
              actuator_actadr: ti.template(), actuator_actnum: ti.template(),
              actuator_group: ti.template(), actuator_ctrllimited: ti.template(),
              actuator_actlimited: ti.template(), actuator_dynprm: ti.template(),
              actuator_gainprm: ti.template(), actuator_biasprm: ti.template(),
              actuator_actearly: ti.template(), actuator_ctrlrange: ti.template(),
              actuator_actrange: ti.template(), actuator_acc0: ti.template(),
              actuator_lengthrange: ti.template(), actuator_plugin: ti.template(),
              clampctrl, disableactuator, timestep, user_col: ti.template(),
              user_gain: ti.template(), user_bias: ti.template(), ctrl: ti.template(),
              act: ti.template(), actuator_length: ti.template(),
              actuator_velocity: ti.template(), act_dot: ti.template(),
              actuator_force: ti.template(), part: ti.template(), sleep: ti.template(),
              sleep_asleep: ti.template()):
    """One actuator of one world: its act_dot and unclamped force (see _actuation);
    ``bad``: the world's first bad control (-1: none), which zeroes its control."""
    u = 0.0
    if bad < 0:
        u = _clamped_ctrl(worldid, actid, ctrl, clampctrl, actuator_ctrllimited,
                          actuator_ctrlrange)
    dynprm = actuator_dynprm[param_row(worldid, actuator_dynprm), actid]
    dyntype = actuator_dyntype[actid]
    actadr = actuator_actadr[actid]
    actlast = actadr + actuator_actnum[actid] - 1
    adot = 0.0
    asleep = False
    if ti.static(sleep):
        asleep = sleep_asleep[worldid, actid] != 0
    if ti.static(part == ACT_FORCE):
        if actadr >= 0:
            adot = act_dot[worldid, actlast]
    elif actadr >= 0 and not asleep:
        for k in range(actuator_actnum[actid]):
            act_dot[worldid, actadr + k] = 0.0
        a = act[worldid, actlast]
        if dyntype == DYN_INTEGRATOR:
            adot = u
        elif dyntype == DYN_FILTER or dyntype == DYN_FILTEREXACT:
            adot = (u - a) / ti.max(MINVAL, dynprm[0])
        elif dyntype == DYN_MUSCLE:
            adot = muscle_dynamics(u, a, dynprm)
        act_dot[worldid, actlast] = adot
    force = 0.0
    # a plugin's actuators get their forces from its compute hook (ACT_DOT: the
    # force is not stored, and the compiler drops its computation)
    if actuator_disabled(actuator_group[actid], disableactuator) == 0 and \
            actuator_plugin[actid] < 0 and not asleep:
        length = actuator_length[worldid, actid]
        vel = actuator_velocity[worldid, actid]
        lrange = actuator_lengthrange[actid]
        acc0 = actuator_acc0[actid]
        prm = actuator_gainprm[param_row(worldid, actuator_gainprm), actid]
        gaintype = actuator_gaintype[actid]
        gain = 1.0
        if gaintype == GAIN_FIXED:
            gain = prm[0]
        elif gaintype == GAIN_AFFINE:
            gain = prm[0] + prm[1] * length + prm[2] * vel
        elif gaintype == GAIN_MUSCLE:
            gain = muscle_gain(length, vel, lrange, acc0, prm)
        elif gaintype == GAIN_USER and user_col[actid][0] >= 0:
            gain = user_gain[param_row(worldid, user_gain), user_col[actid][0]]
        if actadr == -1:
            force = gain * u
        else:
            a = act[worldid, actlast]
            if actuator_actearly[actid] != 0:
                a = next_activation(
                    a, adot, dyntype, dynprm[0], actuator_actlimited[actid],
                    actuator_actrange[param_row(worldid, actuator_actrange), actid],
                    timestep)
            force = gain * a
        bprm = actuator_biasprm[param_row(worldid, actuator_biasprm), actid]
        biastype = actuator_biastype[actid]
        if biastype == BIAS_AFFINE:
            force += bprm[0] + bprm[1] * length + bprm[2] * vel
        elif biastype == BIAS_MUSCLE:
            force += muscle_bias(length, lrange, acc0, bprm)
        elif biastype == BIAS_USER and user_col[actid][1] >= 0:
            force += user_bias[param_row(worldid, user_bias), user_col[actid][1]]
    if ti.static(part != ACT_DOT):
        actuator_force[worldid, actid] = force


@ti.kernel
def _set_user_act_dot(actuator_actadr: ND, actuator_actnum: ND, ids: ND, nids: ti.i32,
                      values: ND, act_dot: ND, sleep: ti.template(), sleep_asleep: ND):
    """act_dot of the last activation of each listed actuator with one activation:
    the user-dynamics callback's value (mjcb_act_dyn's return); not of sleeping
    actuators (``sleep``, as _actuation)."""
    nworld = act_dot.shape[0]
    for worldid, k in ti.ndrange(nworld, nids):
        actid = ids[k]
        asleep = False
        if ti.static(sleep):
            asleep = sleep_asleep[worldid, actid] != 0
        if actuator_actnum[actid] == 1 and not asleep:
            act_dot[worldid, actuator_actadr[actid]] = values[param_row(worldid, values), k]


@ti.kernel
def _actuation_limits(
    # model
    actuator_trntype: ND, actuator_trnid: ND, actuator_forcelimited: ND,
    actuator_forcerange: ND, tendon_actfrclimited: ND, tendon_actfrcrange: ND,
    jnt_type: ND, jnt_dofadr: ND, jnt_actfrclimited: ND, jnt_actfrcrange: ND,
    jnt_actgravcomp: ND, nv: ti.i32, nu: ti.i32, ntendon: ti.i32, njnt: ti.i32,
    has_gravcomp: ti.i32,
    # data in
    actuator_moment_dense: ND, qfrc_gravcomp: ND,
    # data out
    actuator_force: ND, ten_actfrc_total: ND, qfrc_actuator: ND,
):
    """Tendon and actuator force limits, then qfrc_actuator = moment' force (+ actuator
    gravcomp), clamped per joint."""
    nworld = actuator_force.shape[0]
    # total actuator force on each force-limited tendon
    for worldid, tenid in ti.ndrange(nworld, ntendon):
        total = 0.0
        if tendon_actfrclimited[tenid] != 0:
            for actid in range(nu):
                if actuator_trntype[actid] == TRN_TENDON and \
                        actuator_trnid[actid][0] == tenid:
                    total += actuator_force[worldid, actid]
        ten_actfrc_total[worldid, tenid] = total
    for worldid, actid in ti.ndrange(nworld, nu):
        force = actuator_force[worldid, actid]
        if actuator_trntype[actid] == TRN_TENDON:
            tenid = actuator_trnid[actid][0]
            total = ten_actfrc_total[worldid, tenid]
            if tendon_actfrclimited[tenid] != 0 and total != 0:
                rng = tendon_actfrcrange[param_row(worldid, tendon_actfrcrange), tenid]
                if total < rng[0]:
                    force *= rng[0] / total
                elif total > rng[1]:
                    force *= rng[1] / total
        if actuator_forcelimited[actid] != 0:
            rng = actuator_forcerange[param_row(worldid, actuator_forcerange), actid]
            force = _clip(force, rng[0], rng[1])
        actuator_force[worldid, actid] = force
    # qfrc_actuator = moment' force, plus actuator gravcomp, clamped per joint
    if ti.static(building_twin()):
        # a twin runs each world in one thread: the sums of moment' force are kept in
        # qfrc_actuator and the moments read row by row (a dof's column of the dense
        # moments is nv apart); each dof's sum takes the actuators in the same order
        for worldid in range(nworld):
            for dofid in range(nv):
                qfrc_actuator[worldid, dofid] = 0.0
            for actid in range(nu):
                force = actuator_force[worldid, actid]
                for dofid in range(nv):
                    qfrc_actuator[worldid, dofid] += \
                        actuator_moment_dense[worldid, actid, dofid] * force
            for jntid in range(njnt):
                dadr = jnt_dofadr[jntid]
                for k in range(jnt_ndof(jnt_type[jntid])):
                    _limit_qfrc(worldid, jntid, dadr + k, qfrc_actuator[worldid, dadr + k],
                                has_gravcomp, jnt_actgravcomp, qfrc_gravcomp,
                                jnt_actfrclimited, jnt_actfrcrange, qfrc_actuator)
    else:
        for worldid, jntid in ti.ndrange(nworld, njnt):
            dadr = jnt_dofadr[jntid]
            for k in range(jnt_ndof(jnt_type[jntid])):
                dofid = dadr + k
                frc = 0.0
                for actid in range(nu):
                    frc += actuator_moment_dense[worldid, actid, dofid] * \
                        actuator_force[worldid, actid]
                _limit_qfrc(worldid, jntid, dofid, frc, has_gravcomp, jnt_actgravcomp,
                            qfrc_gravcomp, jnt_actfrclimited, jnt_actfrcrange,
                            qfrc_actuator)


@ti.func
def _limit_qfrc(worldid, jntid, dofid, frc, has_gravcomp, jnt_actgravcomp: ti.template(),
                qfrc_gravcomp: ti.template(), jnt_actfrclimited: ti.template(),
                jnt_actfrcrange: ti.template(), qfrc_actuator: ti.template()):
    """A dof's moment' force plus its actuator gravcomp, clamped to its joint's
    actuator force range, into qfrc_actuator."""
    f = frc
    if has_gravcomp != 0 and jnt_actgravcomp[jntid] != 0:
        f += qfrc_gravcomp[worldid, dofid]
    if jnt_actfrclimited[jntid] != 0:
        rng = jnt_actfrcrange[param_row(worldid, jnt_actfrcrange), jntid]
        f = _clip(f, rng[0], rng[1])
    qfrc_actuator[worldid, dofid] = f


@ti.kernel
def _zero2(a: ND, n: ti.i32):
    for worldid, i in ti.ndrange(a.shape[0], n):
        a[worldid, i] = 0.0


class ActuationPlan(SimpleNamespace):
    """Host facts of a model and its options that ``actuation`` reads every call:
    ``has_gravcomp`` (actuator gravity compensation on), the actuator plugins' act_dot
    and compute hooks (``plugin_act_dot``, ``plugin_compute``), and the ids of the
    actuators the user callbacks serve (``dyn_ids``, ``gain_ids``, ``bias_ids``: host
    int32, read-only) with ``user_col`` (nu, 2): each actuator's column in the gain and
    bias values, or -1."""


def _ids(mask) -> np.ndarray:
    ids = np.flatnonzero(mask).astype(np.int32)
    ids.flags.writeable = False
    return ids


def _plan(m) -> ActuationPlan:
    """The model's ActuationPlan (cached per option set by ``actuation``, so that the
    per-step path does no numpy work).

    The hooks are those of ``m.plugins`` (the per-model plugin objects tiphys.plugin
    makes; duck-typed here: kernels/ does not import tiphys) with the actuator
    capability, in instance order. The callbacks' actuators are those MuJoCo calls
    them for (mj_fwdActuation): user dynamics with activations; user gain or bias of
    an actuator neither in a disabled group nor a plugin's."""
    opt = m.opt
    a = m.arrays
    nu = m.nu
    plugin = np.asarray(a.actuator_plugin)[:nu] >= 0
    group = np.asarray(a.actuator_group)[:nu]
    mask = int(opt.disableactuator)
    disabled = np.array([0 <= g <= 30 and bool((mask >> int(g)) & 1) for g in group],
                        dtype=bool).reshape(nu)
    forced = ~plugin & ~disabled
    dyn = (np.asarray(a.actuator_dyntype)[:nu] == DYN_USER) & \
        (np.asarray(a.actuator_actadr)[:nu] >= 0)
    gain = (np.asarray(a.actuator_gaintype)[:nu] == GAIN_USER) & forced
    bias = (np.asarray(a.actuator_biastype)[:nu] == BIAS_USER) & forced
    user_col = np.full((max(1, nu), 2), -1, dtype=np.int32)
    user_col[np.flatnonzero(gain), 0] = np.arange(int(gain.sum()))
    user_col[np.flatnonzero(bias), 1] = np.arange(int(bias.sum()))
    gravity = not opt.disabled("gravity") and any(float(x) for x in opt.gravity)
    plugins = [p for p in getattr(m, "plugins", ()) if p.capabilities & PLUGIN_ACTUATOR]
    return ActuationPlan(
        has_gravcomp=bool(gravity and m.ngravcomp),  # MuJoCo's test in mj_gravcomp
        plugin_act_dot=tuple(p.act_dot for p in plugins if p.act_dot is not None),
        plugin_compute=tuple(p.compute for p in plugins if p.compute is not None),
        dyn_ids=_ids(dyn), gain_ids=_ids(gain), bias_ids=_ids(bias), user_col=user_col)


def _user_arrays(m, d, plan: ActuationPlan) -> SimpleNamespace:
    """The Data's device copies of the plan's user-actuator tables (scratch
    "callbacks"): user_col, the defaults MuJoCo uses without a callback (gains 1,
    biases 0) and the user-dynamics ids."""
    table = d.scratch.callbacks
    if table is None:
        table = d.scratch.callbacks = {}
    cached = table.get("actuation")
    if cached is not None and cached[0] is plan:
        return cached[1]
    tag = d.scratch.tag
    fdt = float_dtype()
    col = tag(ti.Vector.ndarray(2, ti.i32, shape=(plan.user_col.shape[0],)))
    col.from_numpy(plan.user_col)
    ones = tag(ti.ndarray(fdt, shape=(1, max(1, len(plan.gain_ids)))))
    ones.fill(1.0)
    zeros = tag(ti.ndarray(fdt, shape=(1, max(1, len(plan.bias_ids)))))
    zeros.fill(0.0)
    dyn_ids = tag(ti.ndarray(ti.i32, shape=(max(1, len(plan.dyn_ids)),)))
    if len(plan.dyn_ids):
        dyn_ids.from_numpy(np.asarray(plan.dyn_ids))
    arrays = SimpleNamespace(user_col=col, ones=ones, zeros=zeros, dyn_ids=dyn_ids)
    table["actuation"] = (plan, arrays)
    return arrays


def actuation(m, d):
    """Actuator forces and activation derivatives, as mj_fwdActuation (two launches,
    plus the actuator plugins' act_dot and compute hooks between them; with user
    actuator callbacks installed, kernels/callbacks.py, one more launch for the
    activation derivatives before them and one per callback).

    Reads ctrl, act, actuator_length, actuator_velocity, actuator_moment_dense,
    qfrc_gravcomp (and what the plugins and callbacks read: time, ...); writes
    act_dot, actuator_force, qfrc_actuator. Honours clampctrl,
    the actuation and gravity disable flags and opt.disableactuator groups. A world
    with a bad control after clamping (NaN, or beyond 1e10) runs its actuators on zero
    controls (ctrl itself is kept, as MuJoCo's local copy) and counts mjWARN_BADCTRL in
    warning_number / warning_lastinfo, on the device; other worlds are untouched.
    Actuators of dyntype, gaintype or biastype "user" take their act_dot, gain and bias
    from the act_dyn, act_gain and act_bias callbacks; without one, as MuJoCo, act_dot
    stays zero, the gain is 1 and the bias 0.
    """
    opt = m.opt
    if m.nu == 0 or opt.disabled("actuation"):
        if m.nu:
            launch(_zero2, m, d, a=d.actuator_force, n=m.nu)
        launch(_zero2, m, d, a=d.qfrc_actuator, n=m.nv)
        return
    plan = per_options(m, "actuation", _plan)
    user = _user_arrays(m, d, plan)
    dyn_cb = len(plan.dyn_ids) and callbacks.get("act_dyn") is not None
    gain_cb = len(plan.gain_ids) and callbacks.get("act_gain") is not None
    bias_cb = len(plan.bias_ids) and callbacks.get("act_bias") is not None
    flags = dict(clampctrl=int(not opt.disabled("clampctrl")),
                 disableactuator=int(opt.disableactuator), timestep=float(opt.timestep),
                 user_col=user.user_col)
    from .sleep import active, asleep_actuators
    if active(m):
        flags.update(sleep=True, sleep_asleep=asleep_actuators(m, d))
    else:
        flags.update(sleep=False, sleep_asleep=user.user_col)
    if not (dyn_cb or gain_cb or bias_cb):
        launch(_actuation, m, d, user_gain=user.ones, user_bias=user.zeros, part=ACT_ALL,
               **flags)
    else:
        # MuJoCo's order: every act_dot (built-in, then the user dynamics), then the
        # forces, whose user gains and biases may read act_dot
        launch(_actuation, m, d, user_gain=user.ones, user_bias=user.zeros, part=ACT_DOT,
               **flags)
        fdt = float_dtype()
        if dyn_cb:
            values = callbacks.values("act_dyn", m, d, plan.dyn_ids, fdt, allow_none=True)
            if values is not None:
                launch(_set_user_act_dot, m, d, ids=user.dyn_ids, nids=len(plan.dyn_ids),
                       values=values, sleep=flags["sleep"],
                       sleep_asleep=flags["sleep_asleep"])
        gain = callbacks.values("act_gain", m, d, plan.gain_ids, fdt) if gain_cb \
            else user.ones
        bias = callbacks.values("act_bias", m, d, plan.bias_ids, fdt) if bias_cb \
            else user.zeros
        launch(_actuation, m, d, user_gain=gain, user_bias=bias, part=ACT_FORCE, **flags)
    # MuJoCo runs the plugins' act_dot before the built-in forces; those do not read
    # what it writes (a plugin actuator's activations), so after them is the same
    for hook in plan.plugin_act_dot:
        hook(m, d)
    for hook in plan.plugin_compute:
        hook(m, d)
    launch(_actuation_limits, m, d, has_gravcomp=int(plan.has_gravcomp))


@ti.kernel
def _advance_activation(
    actuator_dyntype: ND, actuator_actadr: ND, actuator_actnum: ND, actuator_group: ND,
    actuator_actlimited: ND, actuator_actrange: ND, actuator_dynprm: ND, nu: ti.i32,
    disableactuator: ti.i32, timestep: float, act_dot: ND, act: ND,
):
    nworld = act.shape[0]
    for worldid, actid in ti.ndrange(nworld, nu):
        actadr = actuator_actadr[actid]
        if actadr >= 0:
            disabled = actuator_disabled(actuator_group[actid], disableactuator)
            for j in range(actadr, actadr + actuator_actnum[actid]):
                adot = act_dot[worldid, j]
                if disabled != 0:
                    adot = 0.0
                act[worldid, j] = next_activation(
                    act[worldid, j], adot, actuator_dyntype[actid],
                    actuator_dynprm[param_row(worldid, actuator_dynprm), actid][0],
                    actuator_actlimited[actid],
                    actuator_actrange[param_row(worldid, actuator_actrange), actid],
                    timestep)


def advance_activation(m, d, act_dot=None):
    """act += h act_dot (exact for filterexact), clamped to actrange, as mj_advance.

    Reads act_dot (or the given array), act; writes act. Does nothing without
    activations or with actuation disabled.
    """
    if m.na == 0 or m.opt.disabled("actuation"):
        return
    launch(_advance_activation, m, d, disableactuator=int(m.opt.disableactuator),
           timestep=float(m.opt.timestep),
           act_dot=d.act_dot if act_dot is None else act_dot)
