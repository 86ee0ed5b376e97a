"""Analytic velocity derivatives of the smooth forces, as mjd_smooth_vel.

qDeriv = d (qfrc_actuator + qfrc_passive - [qfrc_bias]) / d qvel, kept (as MuJoCo
keeps it) only on the dof pairs of one kinematic chain: (i, j) with j an ancestor of i,
i itself, or a descendant. tiphys stores it in qM's layout: at the qM address of
(i, j), j = i or an ancestor of i, ``lo`` holds qDeriv(i, j) and ``up`` qDeriv(j, i).

Terms (as MuJoCo 3.4.0):
- actuators (mjd_actuator_vel): moment' b moment with b = d force / d velocity of
  affine bias (biasprm[2]) plus that of affine (gainprm[2]) or muscle gains times ctrl
  (no dynamics; the raw ctrl) or the last activation;
- dof damping (diagonal), tendon damping (-damping ten_J' ten_J), flex edge damping
  (-damping J' J over the edge Jacobian rows) (mjd_passive_vel);
- fluid forces of both models (mjd_inertiaBoxFluid, mjd_ellipsoidFluid): per body a
  6x6 local derivative B of force/torque w.r.t. local velocity, mapped by the body's
  (or geom's) Jacobian; implicitfast symmetrizes the ellipsoid B;
- with ``flg_bias`` (implicit): minus d qfrc_bias / d qvel of the RNE (mjd_rne_vel).

Every term couples dofs i, j only through the bodies that both move, so each is a
quadratic form cdof_i' S_b cdof_j with S_b summed over the subtree of the deeper body b
(fluid: J'BJ; RNE: the derivative of cvel x (I cvel), and composite inertia times the
derivative of cacc). Two launches: per-body 6x6 matrices and their subtree sums, then
one thread per (world, dof row).
"""
import taichi as ti

from .actuation import _muscle_gain_length, _muscle_norm_length, actuator_disabled
from .bind import launch
from .flex import flex_of
from .consts import (BIAS_AFFINE, DYN_NONE, GAIN_AFFINE, GAIN_MUSCLE, GEOM_CAPSULE, GEOM_CYLINDER,
                     GEOM_SPHERE, INT_IMPLICITFAST, JNT_BALL, JNT_FREE, MINVAL, PI)
from .math import cross_motion, mul_inert_vec, param_row

ND = ti.types.ndarray()


@ti.func
def _skew(a):
    """Matrix of a x . (the derivative of a x b w.r.t. b)."""
    return ti.Matrix([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


@ti.func
def _pow2(x):
    return x * x


@ti.func
def _semiaxes(gtype, gsize):
    size = gsize
    if gtype == GEOM_SPHERE:
        size = ti.Vector([gsize[0], gsize[0], gsize[0]])
    elif gtype == GEOM_CAPSULE:
        size = ti.Vector([gsize[0], gsize[0], gsize[1] + gsize[0]])
    elif gtype == GEOM_CYLINDER:
        size = ti.Vector([gsize[0], gsize[0], gsize[1]])
    return size


@ti.func
def _viscous_torque_vel(lang, density, viscosity, size, slender, angdrag):
    """d torque / d local angular velocity: linear and quadratic angular drag."""
    d_max = ti.max(ti.max(size[0], size[1]), size[2])
    d_min = ti.min(ti.min(size[0], size[1]), size[2])
    d_mid = size[0] + size[1] + size[2] - d_max - d_min
    eq_d = 2.0 / 3.0 * (size[0] + size[1] + size[2])
    lin_coef = viscosity * PI * eq_d * eq_d * eq_d
    i_max = 8.0 / 15.0 * PI * d_mid * _pow2(_pow2(d_max))
    mom_coef = ti.Vector([0.0, 0.0, 0.0])
    for k in ti.static(range(3)):
        ii = 8.0 / 15.0 * PI * size[k] * _pow2(_pow2(ti.max(size[(k + 1) % 3],
                                                            size[(k + 2) % 3])))
        mom_coef[k] = angdrag * ii + slender * (i_max - ii)
    mom_visc = lang * mom_coef
    dens = density / ti.max(MINVAL, mom_visc.norm())
    mom_sq = -dens * lang * mom_coef * mom_coef
    diag = lang.dot(mom_sq) - lin_coef
    D = ti.Matrix.zero(float, 3, 3)
    for r, c in ti.static(ti.ndrange(3, 3)):
        D[r, c] = lang[r] * mom_sq[c]
        if ti.static(r == c):
            D[r, c] += diag
    return D


@ti.func
def _viscous_drag_vel(llin, density, viscosity, size, blunt, slender):
    """d force / d local linear velocity: linear and quadratic (projected-area) drag."""
    d_max = ti.max(ti.max(size[0], size[1]), size[2])
    d_min = ti.min(ti.min(size[0], size[1]), size[2])
    d_mid = size[0] + size[1] + size[2] - d_max - d_min
    eq_d = 2.0 / 3.0 * (size[0] + size[1] + size[2])
    a_max = PI * d_max * d_mid
    a = _pow2(size[1] * size[2])
    b = _pow2(size[2] * size[0])
    c = _pow2(size[0] * size[1])
    x, y, z = llin[0], llin[1], llin[2]
    xx, yy, zz = x * x, y * y, z * z
    proj_denom = a * a * xx + b * b * yy + c * c * zz
    proj_num = a * xx + b * yy + c * zz
    da_coef = PI / ti.max(MINVAL, ti.sqrt(proj_num * proj_num * proj_num * proj_denom))
    a_proj = PI * ti.sqrt(proj_denom / ti.max(MINVAL, proj_num))
    norm = ti.sqrt(xx + yy + zz)
    inv_norm = 1.0 / ti.max(MINVAL, norm)
    lin_coef = viscosity * 3.0 * PI * eq_d
    quad_coef = density * (a_proj * blunt + slender * (a_max - a_proj))
    aproj_coef = density * norm * (blunt - slender)
    daproj = aproj_coef * da_coef * ti.Vector([
        a * x * (b * yy * (a - b) + c * zz * (a - c)),
        b * y * (a * xx * (b - a) + c * zz * (b - c)),
        c * z * (a * xx * (c - a) + b * yy * (c - b))])
    inner = xx + yy + zz
    D = ti.Matrix.zero(float, 3, 3)
    for r, cc in ti.static(ti.ndrange(3, 3)):
        value = llin[r] * llin[cc]
        if ti.static(r == cc):
            value += inner
        D[r, cc] = value * (-quad_coef * inv_norm) - llin[r] * daproj[cc]
        if ti.static(r == cc):
            D[r, cc] -= lin_coef
    return D


@ti.func
def _kutta_lift_vel(llin, density, size, kutta):
    """d force / d local linear velocity of the Kutta lift."""
    abc = ti.Vector([_pow2(size[1] * size[2]), _pow2(size[2] * size[0]),
                     _pow2(size[0] * size[1])])
    a, b, c = abc[0], abc[1], abc[2]
    x, y, z = llin[0], llin[1], llin[2]
    xx, yy, zz = x * x, y * y, z * z
    proj_denom = a * a * xx + b * b * yy + c * c * zz
    proj_num = a * xx + b * yy + c * zz
    norm2 = xx + yy + zz
    df_denom = PI * kutta * density / ti.max(MINVAL, ti.sqrt(proj_denom * proj_num * norm2))
    dfcoef = ti.Vector([yy * (a - b) + zz * (a - c), xx * (b - a) + zz * (b - c),
                        xx * (c - a) + yy * (c - b)])
    proj_term = proj_num / ti.max(MINVAL, proj_denom)
    cos_term = proj_num / ti.max(MINVAL, norm2)
    inner = abc * abc * proj_term - abc + cos_term
    D = ti.Matrix.zero(float, 3, 3)
    for r, cc in ti.static(ti.ndrange(3, 3)):
        value = ((abc[cc] - abc[r]) * 2.0 * proj_num + dfcoef[r] * inner[cc]) * \
            (llin[r] * llin[cc])
        if ti.static(r == cc):
            value -= dfcoef[r] * proj_num
        D[r, cc] = value * df_denom
    return D


@ti.func
def _box_vel(inertia, mass, lang, llin, density, viscosity):
    """Diagonal d torque / d ang and d force / d lin of the inertia-box model in the
    body's inertial frame (mjd_inertiaBoxFluid)."""
    box = ti.Vector([0.0, 0.0, 0.0])
    for k in ti.static(range(3)):
        box[k] = ti.sqrt(ti.max(MINVAL, inertia[(k + 1) % 3] + inertia[(k + 2) % 3] -
                                inertia[k]) / mass * 6.0)
    B00 = ti.Matrix.zero(float, 3, 3)
    B11 = ti.Matrix.zero(float, 3, 3)
    if viscosity > 0:
        diam = (box[0] + box[1] + box[2]) / 3.0
        for k in ti.static(range(3)):
            B00[k, k] += -PI * diam * diam * diam * viscosity
            B11[k, k] += -3.0 * PI * diam * viscosity
    if density > 0:
        for k in ti.static(range(3)):
            b1 = box[(k + 1) % 3]
            b2 = box[(k + 2) % 3]
            B00[k, k] += -density * box[k] * (_pow2(_pow2(b1)) + _pow2(_pow2(b2))) * 2.0 * \
                ti.abs(lang[k]) / 64.0
            B11[k, k] += -0.5 * density * b1 * b2 * 2.0 * ti.abs(llin[k])
    return B00, B11


@ti.func
def _ellipsoid_vel(lang, llin, size, coef, density, viscosity):
    """d (torque, force) / d (ang, lin) in the geom frame (mjd_ellipsoidFluid), as 3x3
    blocks B00 (torque, ang), B01 (torque, lin), B10 (force, ang), B11 (force, lin)."""
    blunt, slender, angdrag, kutta, magnus = coef[1], coef[2], coef[3], coef[4], coef[5]
    vmass = ti.Vector([coef[6], coef[7], coef[8]])
    vinertia = ti.Vector([coef[9], coef[10], coef[11]])
    # added mass: torque += ang_mom x ang + lin_mom x lin, force += lin_mom x ang, with
    # d (mom x v) / d v = skew(mom) - skew(v) diag(d mom / d v) ('*' is elementwise with
    # a matrix whose every row is that diagonal)
    ang_mom = density * vinertia * lang
    lin_mom = density * vmass * llin
    dang = ti.Matrix.zero(float, 3, 3)
    dlin = ti.Matrix.zero(float, 3, 3)
    for r, c in ti.static(ti.ndrange(3, 3)):
        dang[r, c] = density * vinertia[c]
        dlin[r, c] = density * vmass[c]
    # Magnus force mcoef (ang x lin)
    mcoef = magnus * density * (4.0 / 3.0 * PI * size[0] * size[1] * size[2])
    B00 = _viscous_torque_vel(lang, density, viscosity, size, slender, angdrag) + \
        _skew(ang_mom) - _skew(lang) * dang
    B01 = _skew(lin_mom) - _skew(llin) * dlin
    B10 = _skew(lin_mom) - _skew(mcoef * llin)
    B11 = _skew(mcoef * lang) + _kutta_lift_vel(llin, density, size, kutta) + \
        _viscous_drag_vel(llin, density, viscosity, size, blunt, slender) - _skew(lang) * dlin
    return B00, B01, B10, B11


@ti.func
def _local_velocity(cvel, pos, com, mat, wind):
    ang = ti.Vector([cvel[0], cvel[1], cvel[2]])
    lin = ti.Vector([cvel[3], cvel[4], cvel[5]]) - (pos - com).cross(ang)
    return mat.transpose() @ ang, mat.transpose() @ (lin - wind)


@ti.func
def _rne_vel_body(inert, vel):
    """3x3 blocks of the 6x6 A with A x = I (x x cvel) + x x* (I cvel) + cvel x* (I x):
    the part of d cfrc / d qvel (mjd_rne_vel) along a dof with motion x that comes from
    the body's own velocity; the (lin, lin) block is zero."""
    Ir = ti.Matrix([[inert[0], inert[3], inert[4]], [inert[3], inert[1], inert[5]],
                    [inert[4], inert[5], inert[2]]])
    H = _skew(ti.Vector([inert[6], inert[7], inert[8]]))
    mass = inert[9]
    va = ti.Vector([vel[0], vel[1], vel[2]])
    vl = ti.Vector([vel[3], vel[4], vel[5]])
    Va = _skew(va)
    Vl = _skew(vl)
    fa = Ir @ va + H @ vl
    fl = mass * vl - H @ va
    Fl = _skew(fl)
    A00 = Va @ Ir - Ir @ Va - H @ Vl - Vl @ H - _skew(fa)
    A01 = Va @ H - H @ Va + mass * Vl - Fl
    A10 = H @ Va - Va @ H - mass * Vl - Fl
    return A00, A01, A10


@ti.kernel
def _body_derivs(
    # model
    body_parentid: ND, body_rootid: ND, body_mass: ND, body_inertia: ND, body_geomadr: ND,
    body_geomnum: ND, body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND,
    body_dofadr: ND, dof_bodyid: ND, dof_jntid: ND, jnt_type: ND, jnt_dofadr: ND,
    geom_type: ND, geom_size: ND, geom_fluid: ND, nbody: ti.i32, nv: ti.i32,
    # options: RNE terms, symmetrize ellipsoid B (implicitfast), fluid
    flg_bias: ti.i32, symmetric: ti.i32, density: float, viscosity: float,
    wind_x: float, wind_y: float, wind_z: float,
    # data in
    qvel: ND, xipos: ND, ximat: ND, geom_xpos: ND, geom_xmat: ND, subtree_com: ND,
    cvel: ND, cdof: ND, cdof_dot: ND, cinert: ND,
    # data out (scratch): per-body matrices, their subtree sums, per-dof RNE vectors
    body_mat: ND, subtree_mat: ND, dof_acc: ND,
    # fluid terms: 0 none, 1 inertia boxes only, 2 also the ellipsoid model (compiled
    # only for models that use it)
    fluid: ti.template(),
):
    nworld = qvel.shape[0]
    wind = ti.Vector([wind_x, wind_y, wind_z])
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        # S = sum over fluid items of X' B X (X: com-based motion -> local velocity of
        # the item's frame, [[R', 0], [-R' skew(pos - com), R']]) minus the RNE's A
        S00 = ti.Matrix.zero(float, 3, 3)
        S01 = ti.Matrix.zero(float, 3, 3)
        S10 = ti.Matrix.zero(float, 3, 3)
        S11 = ti.Matrix.zero(float, 3, 3)
        mass = body_mass[param_row(worldid, body_mass), bodyid]
        com = subtree_com[worldid, body_rootid[bodyid]]
        vel = cvel[worldid, bodyid]
        nitem = 0
        ellipsoid = 0
        if ti.static(fluid > 0) and bodyid > 0 and mass >= MINVAL:
            nitem = 1
            if ti.static(fluid == 2):
                for j in range(body_geomnum[bodyid]):
                    if geom_fluid[body_geomadr[bodyid] + j][0] > 0:
                        ellipsoid = 1
            if ellipsoid != 0:
                nitem = body_geomnum[bodyid]
        if ti.static(fluid > 0):
            # items: the body's inertia box, or each of its geoms (ellipsoid model)
            for item in range(nitem):
                pos = xipos[worldid, bodyid]
                mat = ximat[worldid, bodyid]
                geomid = body_geomadr[bodyid] + item
                if ellipsoid != 0:
                    pos = geom_xpos[worldid, geomid]
                    mat = geom_xmat[worldid, geomid]
                lang, llin = _local_velocity(vel, pos, com, mat, wind)
                B00 = ti.Matrix.zero(float, 3, 3)
                B01 = ti.Matrix.zero(float, 3, 3)
                B10 = ti.Matrix.zero(float, 3, 3)
                B11 = ti.Matrix.zero(float, 3, 3)
                if ellipsoid == 0:
                    B00, B11 = _box_vel(body_inertia[param_row(worldid, body_inertia), bodyid],
                                        mass, lang, llin, density, viscosity)
                elif ti.static(fluid == 2):
                    if geom_fluid[geomid][0] != 0.0:
                        size = _semiaxes(geom_type[geomid],
                                         geom_size[param_row(worldid, geom_size), geomid])
                        B00, B01, B10, B11 = _ellipsoid_vel(
                            lang, llin, size, geom_fluid[geomid], density, viscosity)
                        if symmetric != 0:
                            B00 = 0.5 * (B00 + B00.transpose())
                            B11 = 0.5 * (B11 + B11.transpose())
                            B01, B10 = 0.5 * (B01 + B10.transpose()), \
                                0.5 * (B10 + B01.transpose())
                # X' B X by blocks: Y = B X, then X' Y
                rt = mat.transpose()
                shift = -rt @ _skew(pos - com)
                Y00 = B00 @ rt + B01 @ shift
                Y01 = B01 @ rt
                Y10 = B10 @ rt + B11 @ shift
                Y11 = B11 @ rt
                S00 += mat @ Y00 + shift.transpose() @ Y10
                S01 += mat @ Y01 + shift.transpose() @ Y11
                S10 += mat @ Y10
                S11 += mat @ Y11
        if flg_bias != 0 and bodyid > 0:
            A00, A01, A10 = _rne_vel_body(cinert[worldid, bodyid], vel)
            S00 -= A00
            S01 -= A01
            S10 -= A10
        S = ti.Matrix.zero(float, 6, 6)
        for r, c in ti.static(ti.ndrange(3, 3)):
            S[r, c] = S00[r, c]
            S[r, 3 + c] = S01[r, c]
            S[3 + r, c] = S10[r, c]
            S[3 + r, 3 + c] = S11[r, c]
        body_mat[worldid, bodyid] = S
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        S = ti.Matrix.zero(float, 6, 6)
        adr = body_subtree_adr[bodyid]
        for k in range(body_subtree_num[bodyid]):
            S += body_mat[worldid, body_subtree[adr + k]]
        subtree_mat[worldid, bodyid] = S
    # d cacc / d qvel_k of every body b below dof k is cdof_dot_k + cdof_k x (cvel_b -
    # V_k), V_k: the velocity accumulated up to k's joint (a ball/free joint's cdof_dot
    # uses the velocity before its rotations); the cvel_b part is in body_mat's A, the
    # rest (dof_acc) multiplies the composite inertia
    for worldid, dofid in ti.ndrange(nworld, nv):
        acc = ti.Vector.zero(float, 6)
        if flg_bias != 0:
            bodyid = dof_bodyid[dofid]
            jntid = dof_jntid[dofid]
            jadr = jnt_dofadr[jntid]
            last = dofid
            if jnt_type[jntid] == JNT_BALL:
                last = jadr + 2
            elif jnt_type[jntid] == JNT_FREE:
                last = jadr + 2
                if dofid >= jadr + 3:
                    last = jadr + 5
            v = cvel[worldid, body_parentid[bodyid]]
            for j in range(body_dofadr[bodyid], last + 1):
                v += cdof[worldid, j] * qvel[worldid, j]
            cd = cdof[worldid, dofid]
            acc = cdof_dot[worldid, dofid] - cross_motion(cd, v)
        dof_acc[worldid, dofid] = acc


@ti.func
def _muscle_gain_vel(length, vel, lengthrange, acc0, prm):
    """d muscle gain / d velocity (mjd_muscleGain_vel)."""
    force, L0, L = _muscle_norm_length(length, lengthrange, acc0, prm)
    V = vel / ti.max(MINVAL, L0 * prm[6])
    FL = _muscle_gain_length(L, prm[4], prm[5])
    y = prm[8] - 1
    dFV = 0.0
    if V <= -1:
        dFV = 0.0
    elif V <= 0:
        dFV = 2 * V + 2
    elif V <= y:
        dFV = (-2 * V + 2 * y) / ti.max(MINVAL, y)
    return -force * FL * dFV / ti.max(MINVAL, L0 * prm[6])


@ti.kernel
def _dof_derivs(
    # model
    dof_bodyid: ND, dof_parentid: ND, dof_Madr: ND, dof_damping: ND, tendon_damping: ND,
    actuator_gaintype: ND, actuator_biastype: ND, actuator_dyntype: ND,
    actuator_actadr: ND, actuator_actnum: ND, actuator_group: ND, actuator_gainprm: ND,
    actuator_biasprm: ND, actuator_lengthrange: ND, actuator_acc0: ND,
    nv: ti.i32, nu: ti.i32, ntendon: ti.i32,
    # options
    has_actuation: ti.i32, disableactuator: ti.i32, has_damper: ti.i32,
    has_body: ti.i32, flg_bias: ti.i32,
    # data in
    ctrl: ND, act: ND, actuator_length: ND, actuator_velocity: ND,
    actuator_moment_dense: ND, ten_J: ND, cdof: ND, crb: ND, subtree_mat: ND, dof_acc: ND,
    # data out (act_vel: scratch)
    act_vel: ND, qDeriv_lo: ND, qDeriv_up: ND,
):
    nworld = cdof.shape[0]
    for worldid, actid in ti.ndrange(nworld, nu):
        bias_vel = 0.0
        if has_actuation != 0 and \
                actuator_disabled(actuator_group[actid], disableactuator) == 0:
            if actuator_biastype[actid] == BIAS_AFFINE:
                bias_vel = actuator_biasprm[param_row(worldid, actuator_biasprm), actid][2]
            gain_vel = 0.0
            gaintype = actuator_gaintype[actid]
            prm = actuator_gainprm[param_row(worldid, actuator_gainprm), actid]
            if gaintype == GAIN_AFFINE:
                gain_vel = prm[2]
            elif gaintype == GAIN_MUSCLE:
                gain_vel = _muscle_gain_vel(
                    actuator_length[worldid, actid], actuator_velocity[worldid, actid],
                    actuator_lengthrange[actid], actuator_acc0[actid], prm)
            if gain_vel != 0.0:
                if actuator_dyntype[actid] == DYN_NONE:
                    bias_vel += gain_vel * ctrl[worldid, actid]
                else:
                    last = actuator_actadr[actid] + actuator_actnum[actid] - 1
                    bias_vel += gain_vel * act[worldid, last]
        act_vel[worldid, actid] = bias_vel
    for worldid, dofid in ti.ndrange(nworld, nv):
        bodyid = dof_bodyid[dofid]
        S = subtree_mat[worldid, bodyid]
        inert = crb[worldid, bodyid]
        cd_i = cdof[worldid, dofid]
        acc_i = dof_acc[worldid, dofid]
        adr = dof_Madr[dofid]
        j = dofid
        while j >= 0:
            # actuators and tendons: symmetric rank-one terms
            value = 0.0
            for actid in range(nu):
                bias_vel = act_vel[worldid, actid]
                if bias_vel != 0.0:
                    value += actuator_moment_dense[worldid, actid, dofid] * bias_vel * \
                        actuator_moment_dense[worldid, actid, j]
            if has_damper != 0:
                for tenid in range(ntendon):
                    damping = tendon_damping[param_row(worldid, tendon_damping), tenid]
                    if damping != 0.0:
                        value -= ten_J[worldid, tenid, dofid] * damping * \
                            ten_J[worldid, tenid, j]
            lo = value
            up = value
            cd_j = cdof[worldid, j]
            if has_body != 0:
                lo += cd_i.dot(S @ cd_j)
                up += cd_j.dot(S @ cd_i)
            if flg_bias != 0:
                lo -= cd_i.dot(mul_inert_vec(inert, dof_acc[worldid, j]))
                up -= cd_j.dot(mul_inert_vec(inert, acc_i))
            if j == dofid:
                if has_damper != 0:
                    lo -= dof_damping[param_row(worldid, dof_damping), dofid]
                up = lo
            qDeriv_lo[worldid, adr] = lo
            qDeriv_up[worldid, adr] = up
            adr += 1
            j = dof_parentid[j]


@ti.kernel
def _flex_damping_derivs(
    # model
    dof_parentid: ND, dof_Madr: ND, flex_edgeadr: ND, flex_edgenum: ND,
    flex_edgedamping: ND, flex_rigid: ND, flexedge_rigid: ND, nflex: ti.i32,
    nflexedge: ti.i32,
    # data in
    flexedge_J_rownnz: ND, flexedge_J_rowadr: ND, flexedge_J_colind: ND, flexedge_J: ND,
    # data in/out
    qDeriv_lo: ND, qDeriv_up: ND,
):
    """-damping J' J of every flex edge, on the dof pairs of qM's pattern only (MuJoCo's
    addJTBJ / addJTBJSparse add into qDeriv's tree sparsity and drop the rest)."""
    nworld = qDeriv_lo.shape[0]
    for worldid, edgeid in ti.ndrange(nworld, nflexedge):
        f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
        damping = flex_edgedamping[f]
        if damping != 0.0 and flex_rigid[f] == 0 and flexedge_rigid[edgeid] == 0:
            adr = flexedge_J_rowadr[worldid, edgeid]
            nnz = flexedge_J_rownnz[worldid, edgeid]
            for a in range(nnz):
                i = flexedge_J_colind[worldid, adr + a]
                ji = flexedge_J[worldid, adr + a]
                for c in range(a + 1):  # columns ascending: j <= i
                    j = flexedge_J_colind[worldid, adr + c]
                    p = i
                    step = 0
                    while p > j:
                        p = dof_parentid[p]
                        step += 1
                    if p == j:
                        value = -damping * ji * flexedge_J[worldid, adr + c]
                        qDeriv_lo[worldid, dof_Madr[i] + step] += value
                        qDeriv_up[worldid, dof_Madr[i] + step] += value


def _flex_damping(m) -> bool:
    """Flex edge damping enters qDeriv (non-rigid flexes, damper enabled)."""
    import numpy as np
    if not m.nflex or m.opt.disabled("damper"):
        return False
    a = m.arrays
    rigid = np.asarray(a.flex_rigid)[:m.nflex] != 0
    return bool(np.any((np.asarray(a.flex_edgedamping)[:m.nflex] != 0) & ~rigid))


def _scratch(m, d):
    scratch = d.scratch.derivative
    if scratch is None:
        dtype = d.qvel.dtype
        nworld = d.nworld
        nbody, nv, nu, nM = max(1, m.nbody), max(1, m.nv), max(1, m.nu), max(1, m.nM)
        scratch = {
            "body_mat": ti.Matrix.ndarray(6, 6, dtype, (nworld, nbody)),
            "subtree_mat": ti.Matrix.ndarray(6, 6, dtype, (nworld, nbody)),
            "dof_acc": ti.Vector.ndarray(6, dtype, (nworld, nv)),
            "act_vel": ti.ndarray(dtype, (nworld, nu)),
            "qDeriv_lo": ti.ndarray(dtype, (nworld, nM)),
            "qDeriv_up": ti.ndarray(dtype, (nworld, nM)),
        }
        for array in scratch.values():
            d.scratch.tag(array)
        d.scratch.derivative = scratch
    return scratch


def has_fluid(m) -> bool:
    """Fluid forces are on (and so are their derivatives)."""
    opt = m.opt
    return (opt.density > 0 or opt.viscosity > 0) and \
        not (opt.disabled("spring") and opt.disabled("damper"))


def velocity_dependent(m) -> bool:
    """True if qDeriv has more than dof damping: velocity-dependent actuator gains or
    biases, tendon damping, or fluid forces (the implicitfast fast path needs none)."""
    import numpy as np
    a = m.arrays
    opt = m.opt
    if has_fluid(m) or _flex_damping(m):
        return True
    if m.ntendon and not opt.disabled("damper") and \
            np.any(np.asarray(a.tendon_damping)[..., :m.ntendon] != 0):
        return True
    if m.nu and not opt.disabled("actuation"):
        gaintype = np.asarray(a.actuator_gaintype)[:m.nu]
        biastype = np.asarray(a.actuator_biastype)[:m.nu]
        gainprm = np.asarray(a.actuator_gainprm)[..., :m.nu, 2]
        biasprm = np.asarray(a.actuator_biasprm)[..., :m.nu, 2]
        if np.any(gaintype == GAIN_MUSCLE) or \
                np.any((gaintype == GAIN_AFFINE) & np.any(gainprm != 0, axis=tuple(
                    range(gainprm.ndim - 1)))) or \
                np.any((biastype == BIAS_AFFINE) & np.any(biasprm != 0, axis=tuple(
                    range(biasprm.ndim - 1)))):
            return True
    return False


def smooth_vel(m, d, flg_bias: bool):
    """qDeriv = d (qfrc_actuator + qfrc_passive - [qfrc_bias]) / d qvel, as
    mjd_smooth_vel (two launches; one without fluid or ``flg_bias``).

    Reads qvel, ctrl, act, actuator_length, actuator_velocity, actuator_moment_dense,
    ten_J, xipos, ximat, geom_xpos, geom_xmat, subtree_com, cvel, cdof, cdof_dot, cinert,
    crb. Returns (qDeriv_lo, qDeriv_up): (nworld, nM) arrays in qM's layout (see the
    module docstring), scratch that lives on ``d``.
    """
    s = _scratch(m, d)
    opt = m.opt
    fluid = 0
    if has_fluid(m):
        import numpy as np
        fluid = 2 if np.any(np.asarray(m.arrays.geom_fluid)[:m.ngeom, 0] > 0) else 1
    has_body = fluid > 0 or flg_bias
    if has_body:
        wind = tuple(float(x) for x in opt.wind)
        wind_x, wind_y, wind_z = wind
        launch(_body_derivs, m, d, flg_bias=int(flg_bias),
               symmetric=int(opt.integrator == INT_IMPLICITFAST),
               density=float(opt.density), viscosity=float(opt.viscosity), wind_x=wind_x,
               wind_y=wind_y, wind_z=wind_z, body_mat=s["body_mat"],
               subtree_mat=s["subtree_mat"], dof_acc=s["dof_acc"], fluid=fluid)
    launch(_dof_derivs, m, d, has_actuation=int(not opt.disabled("actuation")),
           disableactuator=int(opt.disableactuator),
           has_damper=int(not opt.disabled("damper")), has_body=int(has_body),
           flg_bias=int(flg_bias), subtree_mat=s["subtree_mat"], dof_acc=s["dof_acc"],
           act_vel=s["act_vel"], qDeriv_lo=s["qDeriv_lo"], qDeriv_up=s["qDeriv_up"])
    if _flex_damping(m):
        launch(_flex_damping_derivs, m, d, qDeriv_lo=s["qDeriv_lo"],
               qDeriv_up=s["qDeriv_up"])
    return s["qDeriv_lo"], s["qDeriv_up"]


def dense_qderiv(m, d):
    """The qDeriv of the last ``smooth_vel`` as dense numpy (nworld, nv, nv) matrices
    (zero outside the dof pairs MuJoCo keeps); for tests and inspection."""
    import numpy as np
    s = _scratch(m, d)
    lo = s["qDeriv_lo"].to_numpy()
    up = s["qDeriv_up"].to_numpy()
    out = np.zeros((d.nworld, m.nv, m.nv), dtype=lo.dtype)
    parent = m.arrays.dof_parentid
    for i in range(m.nv):
        j = i
        adr = int(m.arrays.dof_Madr[i])
        while j >= 0:
            out[:, i, j] = lo[:, adr]
            out[:, j, i] = up[:, adr]
            j = int(parent[j])
            adr += 1
    return out
