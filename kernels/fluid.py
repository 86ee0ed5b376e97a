"""Fluid forces (part of passive): the inertia-box model and the ellipsoid model.

Per body (skipping massless ones): if any of its geoms has geom_fluid[0] > 0 the
ellipsoid model runs over those geoms, otherwise the inertia-box model runs on the
body's equivalent inertia box. Each produces a force and torque that are mapped to
joint space as mj_applyFT does; everything is written to qfrc_fluid and added to
qfrc_passive.
"""
import taichi as ti

from .bind import launch
from .consts import GEOM_CAPSULE, GEOM_CYLINDER, GEOM_SPHERE, MINVAL, PI
from .math import param_row

ND = ti.types.ndarray()


@ti.func
def _vec3(a, i):
    return ti.Vector([a[i], a[i + 1], a[i + 2]])


@ti.func
def _local_velocity(cvel, pos, com, mat, wind):
    """6D velocity (ang, lin) of the frame (pos, mat) in its own axes, minus the wind."""
    ang = ti.Vector([cvel[0], cvel[1], cvel[2]])
    lin = ti.Vector([cvel[3], cvel[4], cvel[5]]) - (pos - com).cross(ang)
    return mat.transpose() @ ang, mat.transpose() @ (lin - wind)


@ti.func
def _pow4(x):
    return (x * x) * (x * x)


@ti.func
def _box_force(inertia, mass, lang, llin, density, viscosity):
    """Local (torque, force) of the inertia-box model (mj_inertiaBoxFluidModel)."""
    box = ti.Vector([0.0, 0.0, 0.0])
    for k in ti.static(range(3)):
        box[k] = ti.sqrt(ti.max(MINVAL, inertia[(k + 1) % 3] + inertia[(k + 2) % 3]
                                - inertia[k]) / mass * 6.0)
    torque = ti.Vector([0.0, 0.0, 0.0])
    force = ti.Vector([0.0, 0.0, 0.0])
    if viscosity > 0:
        diam = (box[0] + box[1] + box[2]) / 3.0
        torque -= PI * diam * diam * diam * viscosity * lang
        force -= 3.0 * PI * diam * viscosity * llin
    if density > 0:
        for k in ti.static(range(3)):
            b1 = box[(k + 1) % 3]
            b2 = box[(k + 2) % 3]
            force[k] -= 0.5 * density * b1 * b2 * ti.abs(llin[k]) * llin[k]
            torque[k] -= density * box[k] * (_pow4(b1) + _pow4(b2)) * \
                ti.abs(lang[k]) * lang[k] / 64.0
    return torque, force


@ti.func
def _ellipsoid_force(size, coef, lang, llin, density, viscosity):
    """Local (torque, force) of the ellipsoid model for one geom: added mass, Magnus and
    Kutta lift, linear and quadratic drag (mj_ellipsoidFluidModel), unscaled."""
    blunt, slender, angdrag, kutta, magnus = coef[1], coef[2], coef[3], coef[4], coef[5]
    vmass = ti.Vector([coef[6], coef[7], coef[8]])
    vinertia = ti.Vector([coef[9], coef[10], coef[11]])
    # added mass
    lin_mom = density * vmass * llin
    ang_mom = density * vinertia * lang
    torque = lin_mom.cross(llin) + ang_mom.cross(lang)
    force = lin_mom.cross(lang)
    # lift and drag
    volume = 4.0 / 3.0 * PI * size[0] * size[1] * size[2]
    d_max = ti.max(ti.max(size[0], size[1]), size[2])
    d_min = ti.min(ti.min(size[0], size[1]), size[2])
    d_mid = size[0] + size[1] + size[2] - d_max - d_min
    a_max = PI * d_max * d_mid
    magnus_force = lang.cross(llin) * (magnus * density * volume)
    s12 = size[1] * size[2]
    s20 = size[2] * size[0]
    s01 = size[0] * size[1]
    proj_denom = _pow4(s12) * llin[0] ** 2 + _pow4(s20) * llin[1] ** 2 + \
        _pow4(s01) * llin[2] ** 2
    proj_num = (s12 * llin[0]) ** 2 + (s20 * llin[1]) ** 2 + (s01 * llin[2]) ** 2
    a_proj = PI * ti.sqrt(proj_denom / ti.max(MINVAL, proj_num))
    norm = ti.Vector([s12 * s12 * llin[0], s20 * s20 * llin[1], s01 * s01 * llin[2]])
    speed = llin.norm()
    cos_alpha = proj_num / ti.max(MINVAL, speed * proj_denom)
    kutta_circ = norm.cross(llin) * (kutta * density * cos_alpha * a_proj)
    kutta_force = kutta_circ.cross(llin)
    eq_d = 2.0 / 3.0 * (size[0] + size[1] + size[2])
    i_max = 8.0 / 15.0 * PI * d_mid * _pow4(d_max)
    mom_visc = ti.Vector([0.0, 0.0, 0.0])
    for k in ti.static(range(3)):
        ii = 8.0 / 15.0 * PI * size[k] * _pow4(ti.max(size[(k + 1) % 3], size[(k + 2) % 3]))
        mom_visc[k] = lang[k] * (angdrag * ii + slender * (i_max - ii))
    drag_lin = viscosity * 3.0 * PI * eq_d + density * speed * (
        a_proj * blunt + slender * (a_max - a_proj))
    drag_ang = viscosity * PI * eq_d * eq_d * eq_d + density * mom_visc.norm()
    torque -= drag_ang * lang
    force += magnus_force + kutta_force - drag_lin * llin
    return torque, force


@ti.kernel
def _fluid(
    # model
    body_rootid: ND, body_mass: ND, body_inertia: ND, body_geomadr: ND, body_geomnum: ND,
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, dof_bodyid: ND,
    geom_type: ND, geom_size: ND, geom_fluid: ND, nbody: ti.i32, nv: ti.i32,
    density: float, viscosity: float, wind_x: float, wind_y: float, wind_z: float,
    # data in
    xipos: ND, ximat: ND, geom_xpos: ND, geom_xmat: ND, subtree_com: ND, cvel: ND,
    cdof: ND,
    # data out (fluid_wrench is scratch: force and torque about subtree_com of the root)
    fluid_wrench: ND, qfrc_fluid: ND, qfrc_passive: ND,
):
    nworld = xipos.shape[0]
    wind = ti.Vector([wind_x, wind_y, wind_z])
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        force_sum = ti.Vector([0.0, 0.0, 0.0])
        torque_sum = ti.Vector([0.0, 0.0, 0.0])
        mass = body_mass[param_row(worldid, body_mass), bodyid]
        com = subtree_com[worldid, body_rootid[bodyid]]
        if bodyid > 0 and mass >= MINVAL:
            ellipsoid = 0
            for j in range(body_geomnum[bodyid]):
                if geom_fluid[body_geomadr[bodyid] + j][0] > 0:
                    ellipsoid = 1
            if ellipsoid == 0:
                pos = xipos[worldid, bodyid]
                mat = ximat[worldid, bodyid]
                lang, llin = _local_velocity(cvel[worldid, bodyid], pos, com, mat, wind)
                inertia = body_inertia[param_row(worldid, body_inertia), bodyid]
                ltorque, lforce = _box_force(inertia, mass, lang, llin, density, viscosity)
                force = mat @ lforce
                force_sum += force
                torque_sum += mat @ ltorque + (pos - com).cross(force)
            else:
                for j in range(body_geomnum[bodyid]):
                    geomid = body_geomadr[bodyid] + j
                    coef = geom_fluid[geomid]
                    if coef[0] != 0.0:
                        gsize = geom_size[param_row(worldid, geom_size), geomid]
                        size = gsize
                        gtype = geom_type[geomid]
                        if gtype == GEOM_SPHERE:
                            size = ti.Vector([gsize[0], gsize[0], gsize[0]])
                        elif gtype == GEOM_CAPSULE:
                            size = ti.Vector([gsize[0], gsize[0], gsize[1] + gsize[0]])
                        elif gtype == GEOM_CYLINDER:
                            size = ti.Vector([gsize[0], gsize[0], gsize[1]])
                        pos = geom_xpos[worldid, geomid]
                        mat = geom_xmat[worldid, geomid]
                        lang, llin = _local_velocity(cvel[worldid, bodyid], pos, com, mat,
                                                     wind)
                        ltorque, lforce = _ellipsoid_force(size, coef, lang, llin, density,
                                                           viscosity)
                        force = mat @ (coef[0] * lforce)
                        force_sum += force
                        torque_sum += mat @ (coef[0] * ltorque) + (pos - com).cross(force)
        fluid_wrench[worldid, bodyid] = ti.Vector([
            force_sum[0], force_sum[1], force_sum[2],
            torque_sum[0], torque_sum[1], torque_sum[2]])
    for worldid, dofid in ti.ndrange(nworld, nv):
        bodyid = dof_bodyid[dofid]
        adr = body_subtree_adr[bodyid]
        dof = cdof[worldid, dofid]
        ang = ti.Vector([dof[0], dof[1], dof[2]])
        lin = ti.Vector([dof[3], dof[4], dof[5]])
        frc = 0.0
        for s in range(body_subtree_num[bodyid]):
            b = body_subtree[adr + s]
            w = fluid_wrench[worldid, b]
            frc += lin.dot(ti.Vector([w[0], w[1], w[2]])) + \
                ang.dot(ti.Vector([w[3], w[4], w[5]]))
        qfrc_fluid[worldid, dofid] = frc
        qfrc_passive[worldid, dofid] += frc


def fluid(m, d):
    """Fluid forces of both models, as mj_fluid (one launch); skip when density and
    viscosity are zero (then qfrc_fluid is left as it is).

    Reads xipos, ximat, geom_xpos, geom_xmat, subtree_com, cvel, cdof; writes
    qfrc_fluid, adds it to qfrc_passive.
    """
    opt = m.opt
    if not (opt.density > 0 or opt.viscosity > 0):
        return
    wind = tuple(float(x) for x in opt.wind)
    wind_x, wind_y, wind_z = wind
    launch(_fluid, m, d, density=float(opt.density), viscosity=float(opt.viscosity),
           wind_x=wind_x, wind_y=wind_y, wind_z=wind_z)
