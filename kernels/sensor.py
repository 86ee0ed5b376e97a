"""Position- and velocity-stage sensors (mj_sensorPos, mj_sensorVel), sensor cutoff and
the user-sensor callback (MuJoCo 3.4.0's engine_sensor.c).

Sensors are grouped on the host, once per model and set of options (the "plan").
Each launch runs parallel over (world, sensor), branches on the sensor type, writes
the sensor's values and clips them by its cutoff in the same thread (apply_cutoff's
rule). Per stage:

- position: ``energy_pos`` / ``energy_vel`` first when an e_potential / e_kinetic
  sensor exists (MuJoCo computes the energy for such a sensor even with the energy
  flag off; both have needstage "pos"); ``_sensor_pos`` (1 launch) for every type
  but limits, rangefinders and geom distances; for those, ``_geom_pairs`` (1 launch
  for all geom pairs of the geomdist/geomnormal/geomfromto sensors, plus 2 per
  heightfield pair) and ``_sensor_extra`` (1 launch);
- velocity: ``_sensor_vel`` (1) and, for jointlimitvel/tendonlimitvel, ``_sensor_extra``
  (1).

So a stage takes one launch unless the model has limit, rangefinder or geom distance
sensors. The split keeps every kernel within 32 array arguments: more storage buffers
crash Taichi's Vulkan backend on lavapipe.

User sensors (mjSENS_USER) of the stage are zeroed by the stage's launch; then the
callback set with ``set_sensor_callback`` runs, as mjcb_sensor, and one more launch
applies the cutoff to them. Sensor plugins (mjSENS_PLUGIN, tiphys.plugin) come last,
as in MuJoCo: the compute_sensor hook of each plugin whose needstage is the stage
(none: the position stage), then one launch for the cutoff of their sensors.
Rangefinder code (mj_ray against the scene) and geom-distance reads are compiled in
only when the model has such sensors. Nothing runs
for a stage without sensors, nor with <flag sensor="disable"/>.

Integer topology of each sensor is packed on the host into ``sint`` (type, datatype,
object and reference types and ids, address, dim, and derived ids: the joint's qpos or
dof address, the object's and the reference's body); camera projection constants and
the magnetometer's field go into ``sfloat``. Per-world-able ("*") parameters are
indexed ``worldid % shape[0]``.

Differences from MuJoCo: the subtree velocities that subtreelinvel and subtreeangmom
read are computed per sensor (tiphys's Data has no subtree_linvel/subtree_angmom): the
angular momentum about the subtree com is summed body by body (the parallel-axis
identity of mj_subtreeVel's recursion; equal up to round-off).
"""

from types import SimpleNamespace
from typing import Callable, Optional

import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .collide_convex import MAX_PLANE_MESH, _check_options, _light_compile
from .consts import (CNSTR_LIMIT_JOINT, CNSTR_LIMIT_TENDON, DATATYPE_POSITIVE, DATATYPE_REAL,
                     GEOM_BOX, GEOM_HFIELD, GEOM_PLANE, GEOM_SDF,
                     GEOM_TYPE_NAMES, MINVAL, OBJ_BODY, OBJ_CAMERA, OBJ_GEOM,
                     OBJ_SITE, OBJ_XBODY, SENS_ACTUATORPOS, SENS_ACTUATORVEL, SENS_BALLANGVEL,
                     SENS_BALLQUAT, SENS_CAMPROJECTION, SENS_CLOCK, SENS_E_KINETIC,
                     SENS_E_POTENTIAL, SENS_FRAMEANGVEL, SENS_FRAMELINVEL, SENS_FRAMEPOS,
                     SENS_FRAMEQUAT, SENS_FRAMEXAXIS, SENS_FRAMEYAXIS, SENS_FRAMEZAXIS,
                     SENS_GEOMDIST, SENS_GEOMFROMTO, SENS_GEOMNORMAL, SENS_GYRO, SENS_INSIDESITE,
                     SENS_JOINTLIMITPOS, SENS_JOINTLIMITVEL, SENS_JOINTPOS, SENS_JOINTVEL,
                     SENS_MAGNETOMETER, SENS_PLUGIN, SENS_RANGEFINDER, SENS_SUBTREEANGMOM,
                     SENS_SUBTREECOM, SENS_SUBTREELINVEL, SENS_TENDONLIMITPOS, SENS_TENDONLIMITVEL,
                     SENS_TENDONPOS, SENS_TENDONVEL, SENS_USER, SENS_VELOCIMETER, STAGE_ACC,
                     STAGE_POS, STAGE_VEL)
from .energy import energy_pos, energy_vel
from .epa import Polytope, polytope_capacity, polytope_scratch
from .geom_distance import pair_distance
from .loop_limit import CUT_SENSOR, limit_reached, probe as loop_probe
from .math import inside_geom, mul_mat_t, normalize3, param_row, quat_mul, transform_motion
from .ray import GROUP_ALL, ray_scene, ray_tables

ND = ti.types.ndarray()
PLUGIN_SENSOR = 2  # mjPLUGIN_SENSOR (tiphys.plugin.SENSOR)

POS_TYPES = (SENS_MAGNETOMETER, SENS_RANGEFINDER, SENS_CAMPROJECTION, SENS_JOINTPOS, SENS_TENDONPOS,
             SENS_ACTUATORPOS, SENS_BALLQUAT, SENS_JOINTLIMITPOS, SENS_TENDONLIMITPOS,
             SENS_FRAMEPOS, SENS_FRAMEQUAT, SENS_FRAMEXAXIS, SENS_FRAMEYAXIS, SENS_FRAMEZAXIS,
             SENS_SUBTREECOM, SENS_INSIDESITE, SENS_GEOMDIST, SENS_GEOMNORMAL, SENS_GEOMFROMTO,
             SENS_E_POTENTIAL, SENS_E_KINETIC, SENS_CLOCK, SENS_USER)
VEL_TYPES = (SENS_VELOCIMETER, SENS_GYRO, SENS_JOINTVEL, SENS_TENDONVEL, SENS_ACTUATORVEL,
             SENS_BALLANGVEL, SENS_JOINTLIMITVEL, SENS_TENDONLIMITVEL, SENS_FRAMELINVEL,
             SENS_FRAMEANGVEL, SENS_SUBTREELINVEL, SENS_SUBTREEANGMOM, SENS_E_KINETIC, SENS_USER)
GEOM_SENSORS = (SENS_GEOMDIST, SENS_GEOMNORMAL, SENS_GEOMFROMTO)
# handled by _sensor_extra (any stage)
EXTRA_TYPES = (SENS_RANGEFINDER, SENS_JOINTLIMITPOS, SENS_TENDONLIMITPOS, SENS_JOINTLIMITVEL,
               SENS_TENDONLIMITVEL, SENS_GEOMDIST, SENS_GEOMNORMAL, SENS_GEOMFROMTO)

# sint columns
S_TYPE, S_DATATYPE, S_OBJTYPE, S_OBJID, S_REFTYPE, S_REFID, S_ADR, S_DIM = range(8)
S_AUX = 8  # jnt_qposadr / jnt_dofadr; the reference site's type; first geom pair
S_OBJBODY = 9  # body of the object (-1: not a spatial object)
S_REFBODY = 10  # body of the reference frame (-1: none)
S_NPAIR = 11  # number of geom pairs (geom distance sensors)
S_WIDTH = 12


# ---------------------------------------------------------------- user callback

_CALLBACK: dict = {"fn": None}


def set_sensor_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the user-sensor callback (MuJoCo's mjcb_sensor); ``None`` removes it.

    ``fn(m, d, stage)`` is called by sensor_pos, sensor_vel and sensor_acc (stage 1,
    2, 3: mjtStage) when the model has user sensors (<user needstage=...>,
    mjSENS_USER) of that stage, after the engine has zeroed their values, for all
    worlds at once: it writes ``d.sensordata[world, sensor_adr[i]:sensor_adr[i] +
    sensor_dim[i]]`` of every world, e.g. from a Taichi kernel or with
    ``d.sensordata.from_numpy(...)`` (read the array first and write it whole: the
    other sensors' values are already there). The cutoff of the user sensors is
    applied after it returns. Returns the previous callback.
    """
    if fn is not None and not callable(fn):
        raise TypeError("set_sensor_callback: fn must be callable or None")
    previous = _CALLBACK["fn"]
    _CALLBACK["fn"] = fn
    return previous


def sensor_callback() -> Optional[Callable]:
    """The installed user-sensor callback, or None."""
    return _CALLBACK["fn"]


# ---------------------------------------------------------------- shared funcs

@ti.func
def clip_sensor(x, cutoff, datatype):
    """One sensor value clipped by its cutoff, as apply_cutoff: real data to
    [-cutoff, cutoff], positive data to at most cutoff; other data types (axis,
    quaternion) and cutoff <= 0 leave it. NaN stays NaN."""
    out = x
    if cutoff > 0.0:
        if datatype == DATATYPE_REAL:
            if x < -cutoff:
                out = -cutoff
            elif x > cutoff:
                out = cutoff
        elif datatype == DATATYPE_POSITIVE:
            if cutoff < x:
                out = cutoff
    return out


@ti.func
def write_sensor(worldid, sid, out, sint: ti.template(), sensor_cutoff: ti.template(),
                 sensordata: ti.template()):
    """Write the first dim entries of ``out`` (a 6-vector) as sensor ``sid``'s values,
    clipped by its cutoff (geomfromto exempt, as MuJoCo)."""
    si = sint[sid]
    adr = si[S_ADR]
    dim = si[S_DIM]
    cutoff = sensor_cutoff[param_row(worldid, sensor_cutoff), sid]
    if si[S_TYPE] == SENS_GEOMFROMTO:
        cutoff = 0.0
    for j in ti.static(range(6)):
        if j < dim:
            sensordata[worldid, adr + j] = clip_sensor(out[j], cutoff, si[S_DATATYPE])


@ti.func
def _frame(worldid, objtype, objid, xpos: ti.template(), xmat: ti.template(),
           xipos: ti.template(), ximat: ti.template(), geom_xpos: ti.template(),
           geom_xmat: ti.template(), site_xpos: ti.template(), site_xmat: ti.template(),
           cam_xpos: ti.template(), cam_xmat: ti.template()):
    """Global position and orientation of an object (get_xpos_xmat): body = inertial
    frame, xbody = body frame, geom, site, camera."""
    pos = ti.Vector.zero(float, 3)
    mat = ti.Matrix.zero(float, 3, 3)
    if objtype == OBJ_XBODY:
        pos = xpos[worldid, objid]
        mat = xmat[worldid, objid]
    elif objtype == OBJ_BODY:
        pos = xipos[worldid, objid]
        mat = ximat[worldid, objid]
    elif objtype == OBJ_GEOM:
        pos = geom_xpos[worldid, objid]
        mat = geom_xmat[worldid, objid]
    elif objtype == OBJ_SITE:
        pos = site_xpos[worldid, objid]
        mat = site_xmat[worldid, objid]
    elif objtype == OBJ_CAMERA:
        pos = cam_xpos[worldid, objid]
        mat = cam_xmat[worldid, objid]
    return pos, mat


@ti.func
def _xquat(worldid, objtype, objid, bodyid, xquat: ti.template(), body_iquat: ti.template(),
           geom_quat: ti.template(), site_quat: ti.template(), cam_quat: ti.template()):
    """Global quaternion of an object (get_xquat): the body's xquat times the object's
    local quaternion."""
    q = ti.Vector([1.0, 0.0, 0.0, 0.0])
    if objtype == OBJ_XBODY:
        q = xquat[worldid, objid]
    elif objtype == OBJ_BODY:
        q = quat_mul(xquat[worldid, objid], body_iquat[param_row(worldid, body_iquat), objid])
    elif objtype == OBJ_GEOM:
        q = quat_mul(xquat[worldid, bodyid], geom_quat[param_row(worldid, geom_quat), objid])
    elif objtype == OBJ_SITE:
        q = quat_mul(xquat[worldid, bodyid], site_quat[param_row(worldid, site_quat), objid])
    elif objtype == OBJ_CAMERA:
        q = quat_mul(xquat[worldid, bodyid], cam_quat[param_row(worldid, cam_quat), objid])
    return q


@ti.func
def _object_velocity(worldid, pos, rot, bodyid, local, body_weldid: ti.template(),
                     body_rootid: ti.template(), cvel: ti.template(),
                     subtree_com: ti.template()):
    """6D velocity (rot:lin) of a frame at ``pos`` on ``bodyid``, as mj_objectVelocity:
    world-oriented, or in the frame ``rot`` with ``local``; zero on static bodies."""
    ang = ti.Vector.zero(float, 3)
    lin = ti.Vector.zero(float, 3)
    if body_weldid[bodyid] != 0:
        ang, lin = transform_motion(cvel[worldid, bodyid],
                                    pos - subtree_com[worldid, body_rootid[bodyid]], rot,
                                    local)
    return ang, lin


@ti.func
def _limit_row(worldid, ctype, objid, ne: ti.template(), nf: ti.template(),
               nefc: ti.template(), efc_type: ti.template(), efc_id: ti.template()):
    """First limit row of type ``ctype`` on object ``objid`` (-1: none)."""
    row = -1
    for efcid in range(ne[worldid] + nf[worldid], nefc[worldid]):
        if row < 0 and efc_type[worldid, efcid] == ctype and efc_id[worldid, efcid] == objid:
            row = efcid
    return row


# ---------------------------------------------------------------- kernels

@ti.kernel
def _sensor_pos(
    # plan
    ids: ND, sint: ND, sfloat: ND,
    # model
    sensor_cutoff: ND, body_iquat: ND, geom_quat: ND, site_quat: ND, cam_quat: ND,
    site_size: ND,
    # data in
    qpos: ND, ten_length: ND, actuator_length: ND, xpos: ND, xquat: ND, xmat: ND,
    xipos: ND, ximat: ND, geom_xpos: ND, geom_xmat: ND, site_xpos: ND, site_xmat: ND,
    cam_xpos: ND, cam_xmat: ND, subtree_com: ND, energy: ND, time: ND,
    # data out
    sensordata: ND,
):
    """The position-stage sensors but limits, rangefinders and geom distances."""
    for worldid, k in ti.ndrange(sensordata.shape[0], ids.shape[0]):
        sid = ids[k]
        si = sint[sid]
        stype = si[S_TYPE]
        objtype = si[S_OBJTYPE]
        objid = si[S_OBJID]
        reftype = si[S_REFTYPE]
        refid = si[S_REFID]
        out = ti.Vector.zero(float, 6)
        if stype == SENS_USER:
            for j in range(si[S_DIM]):
                sensordata[worldid, si[S_ADR] + j] = 0.0
        else:
            if stype == SENS_MAGNETOMETER:
                f = sfloat[sid]
                field = ti.Vector([f[0], f[1], f[2]])
                v = mul_mat_t(site_xmat[worldid, objid], field)
                for i in ti.static(range(3)):
                    out[i] = v[i]
            elif stype == SENS_CAMPROJECTION:
                # pixel = image . focal . [R' | -R' cam_pos] . [x; 1]
                rot = cam_xmat[worldid, refid]
                f = sfloat[sid]
                fx, fy, cx, cy = f[0], f[1], f[2], f[3]
                p = mul_mat_t(rot, site_xpos[worldid, objid] - cam_xpos[worldid, refid])
                hx = -fx * p[0] + cx * p[2]
                hy = fy * p[1] + cy * p[2]
                denom = p[2]
                if ti.abs(denom) < MINVAL:
                    if denom < 0:
                        denom = ti.min(denom, -MINVAL)
                    else:
                        denom = ti.max(denom, MINVAL)
                out[0] = hx / denom
                out[1] = hy / denom
            elif stype == SENS_JOINTPOS:
                out[0] = qpos[worldid, si[S_AUX]]
            elif stype == SENS_TENDONPOS:
                out[0] = ten_length[worldid, objid]
            elif stype == SENS_ACTUATORPOS:
                out[0] = actuator_length[worldid, objid]
            elif stype == SENS_BALLQUAT:
                adr = si[S_AUX]
                q = ti.Vector([qpos[worldid, adr + i] for i in ti.static(range(4))])
                norm = ti.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
                if norm < MINVAL:
                    q = ti.Vector([1.0, 0.0, 0.0, 0.0])
                elif ti.abs(norm - 1.0) > MINVAL:
                    q = q * (1.0 / norm)
                for i in ti.static(range(4)):
                    out[i] = q[i]
            elif stype == SENS_FRAMEPOS or (stype >= SENS_FRAMEXAXIS and stype <= SENS_FRAMEZAXIS):
                pos, mat = _frame(worldid, objtype, objid, xpos, xmat, xipos, ximat,
                                  geom_xpos, geom_xmat, site_xpos, site_xmat, cam_xpos,
                                  cam_xmat)
                v = pos
                if stype != SENS_FRAMEPOS:
                    axis = stype - SENS_FRAMEXAXIS
                    v = ti.Vector([mat[0, axis], mat[1, axis], mat[2, axis]])
                if refid >= 0:
                    pos_ref, mat_ref = _frame(worldid, reftype, refid, xpos, xmat, xipos,
                                              ximat, geom_xpos, geom_xmat, site_xpos,
                                              site_xmat, cam_xpos, cam_xmat)
                    if stype == SENS_FRAMEPOS:
                        v = v - pos_ref
                    v = mul_mat_t(mat_ref, v)
                for i in ti.static(range(3)):
                    out[i] = v[i]
            elif stype == SENS_FRAMEQUAT:
                q = _xquat(worldid, objtype, objid, si[S_OBJBODY], xquat, body_iquat,
                           geom_quat, site_quat, cam_quat)
                if refid >= 0:
                    r = _xquat(worldid, reftype, refid, si[S_REFBODY], xquat, body_iquat,
                               geom_quat, site_quat, cam_quat)
                    q = quat_mul(ti.Vector([r[0], -r[1], -r[2], -r[3]]), q)
                for i in ti.static(range(4)):
                    out[i] = q[i]
            elif stype == SENS_SUBTREECOM:
                v = subtree_com[worldid, objid]
                for i in ti.static(range(3)):
                    out[i] = v[i]
            elif stype == SENS_INSIDESITE:
                pos, _ = _frame(worldid, objtype, objid, xpos, xmat, xipos, ximat, geom_xpos,
                                geom_xmat, site_xpos, site_xmat, cam_xpos, cam_xmat)
                out[0] = inside_geom(site_xpos[worldid, refid], site_xmat[worldid, refid],
                                      site_size[refid], si[S_AUX], pos)
            elif stype == SENS_E_POTENTIAL:
                out[0] = energy[worldid][0]
            elif stype == SENS_E_KINETIC:
                out[0] = energy[worldid][1]
            elif stype == SENS_CLOCK:
                out[0] = time[worldid]
            write_sensor(worldid, sid, out, sint, sensor_cutoff, sensordata)


@ti.func
def _subtree_vel(worldid, bodyid, body_subtree_adr: ti.template(),
                 body_subtree_num: ti.template(), body_subtree: ti.template(),
                 body_mass: ti.template(), body_subtreemass: ti.template(),
                 body_inertia: ti.template(), body_weldid: ti.template(),
                 body_rootid: ti.template(), xipos: ti.template(), ximat: ti.template(),
                 cvel: ti.template(), subtree_com: ti.template()):
    """Linear velocity of the subtree's com and its angular momentum about it
    (mj_subtreeVel's subtree_linvel, subtree_angmom of ``bodyid``)."""
    adr = body_subtree_adr[bodyid]
    num = body_subtree_num[bodyid]
    mw = param_row(worldid, body_mass)
    momentum = ti.Vector.zero(float, 3)
    for k in range(num):
        b = body_subtree[adr + k]
        _, lin = _object_velocity(worldid, xipos[worldid, b], ximat[worldid, b], b, 0,
                                  body_weldid, body_rootid, cvel, subtree_com)
        momentum += body_mass[mw, b] * lin
    linvel = momentum * (1.0 / ti.max(MINVAL, body_subtreemass[
        param_row(worldid, body_subtreemass), bodyid]))
    com = subtree_com[worldid, bodyid]
    angmom = ti.Vector.zero(float, 3)
    for k in range(num):
        b = body_subtree[adr + k]
        mat = ximat[worldid, b]
        ang, lin = _object_velocity(worldid, xipos[worldid, b], mat, b, 0, body_weldid,
                                    body_rootid, cvel, subtree_com)
        inertia = body_inertia[param_row(worldid, body_inertia), b]
        dv = mul_mat_t(mat, ang)
        dv = ti.Vector([dv[0] * inertia[0], dv[1] * inertia[1], dv[2] * inertia[2]])
        angmom += mat @ dv
        angmom += (xipos[worldid, b] - com).cross(body_mass[mw, b] * (lin - linvel))
    return linvel, angmom


@ti.kernel
def _sensor_vel(
    # plan
    ids: ND, sint: ND,
    # model
    sensor_cutoff: ND, body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND,
    body_mass: ND, body_subtreemass: ND, body_inertia: ND, body_weldid: ND, body_rootid: ND,
    # data in
    qvel: ND, ten_velocity: ND, actuator_velocity: ND, xpos: ND, xmat: ND, xipos: ND,
    ximat: ND,
    geom_xpos: ND, geom_xmat: ND, site_xpos: ND, site_xmat: ND, cam_xpos: ND, cam_xmat: ND,
    subtree_com: ND, cvel: ND, energy: ND,
    # data out
    sensordata: ND,
):
    """The velocity-stage sensors but limits."""
    for worldid, k in ti.ndrange(sensordata.shape[0], ids.shape[0]):
        sid = ids[k]
        si = sint[sid]
        stype = si[S_TYPE]
        objtype = si[S_OBJTYPE]
        objid = si[S_OBJID]
        refid = si[S_REFID]
        out = ti.Vector.zero(float, 6)
        if stype == SENS_USER:
            for j in range(si[S_DIM]):
                sensordata[worldid, si[S_ADR] + j] = 0.0
        else:
            if stype == SENS_VELOCIMETER or stype == SENS_GYRO:
                ang, lin = _object_velocity(worldid, site_xpos[worldid, objid],
                                            site_xmat[worldid, objid], si[S_OBJBODY], 1,
                                            body_weldid, body_rootid, cvel, subtree_com)
                v = lin if stype == SENS_VELOCIMETER else ang
                for i in ti.static(range(3)):
                    out[i] = v[i]
            elif stype == SENS_JOINTVEL:
                out[0] = qvel[worldid, si[S_AUX]]
            elif stype == SENS_TENDONVEL:
                out[0] = ten_velocity[worldid, objid]
            elif stype == SENS_ACTUATORVEL:
                out[0] = actuator_velocity[worldid, objid]
            elif stype == SENS_BALLANGVEL:
                for i in ti.static(range(3)):
                    out[i] = qvel[worldid, si[S_AUX] + i]
            elif stype == SENS_FRAMELINVEL or stype == SENS_FRAMEANGVEL:
                pos, mat = _frame(worldid, objtype, objid, xpos, xmat, xipos, ximat,
                                  geom_xpos, geom_xmat, site_xpos, site_xmat, cam_xpos,
                                  cam_xmat)
                ang, lin = _object_velocity(worldid, pos, mat, si[S_OBJBODY], 0, body_weldid,
                                            body_rootid, cvel, subtree_com)
                if refid >= 0:
                    pos_ref, mat_ref = _frame(worldid, si[S_REFTYPE], refid, xpos, xmat,
                                              xipos, ximat, geom_xpos, geom_xmat, site_xpos,
                                              site_xmat, cam_xpos, cam_xmat)
                    ang_ref, lin_ref = _object_velocity(worldid, pos_ref, mat_ref,
                                                        si[S_REFBODY], 0, body_weldid,
                                                        body_rootid, cvel, subtree_com)
                    rel_ang = ang - ang_ref
                    rel_lin = lin - lin_ref
                    # correction of the rotating reference frame (MuJoCo's rvec x xvel_ref,
                    # with the angular part of xvel_ref)
                    rel_lin += (pos - pos_ref).cross(ang_ref)
                    ang = mul_mat_t(mat_ref, rel_ang)
                    lin = mul_mat_t(mat_ref, rel_lin)
                v = lin if stype == SENS_FRAMELINVEL else ang
                for i in ti.static(range(3)):
                    out[i] = v[i]
            elif stype == SENS_SUBTREELINVEL or stype == SENS_SUBTREEANGMOM:
                linvel, angmom = _subtree_vel(worldid, objid, body_subtree_adr,
                                              body_subtree_num, body_subtree, body_mass,
                                              body_subtreemass, body_inertia, body_weldid,
                                              body_rootid, xipos, ximat, cvel, subtree_com)
                v = linvel if stype == SENS_SUBTREELINVEL else angmom
                for i in ti.static(range(3)):
                    out[i] = v[i]
            elif stype == SENS_E_KINETIC:
                out[0] = energy[worldid][1]
            write_sensor(worldid, sid, out, sint, sensor_cutoff, sensordata)


@ti.kernel
def _sensor_extra(
    # plan
    ids: ND, sint: ND,
    # model
    sensor_cutoff: ND,
    # rangefinder (ray_args without geom_xpos/geom_xmat)
    geom_int: ND, geom_size: ND, geom_rgba: ND, mesh_vert: ND, tri_vert: ND, bvh_box: ND,
    bvh_node: ND, hfield_size: ND, hfield_data: ND,
    # data in
    ne: ND, nf: ND, nefc: ND, efc_type: ND, efc_id: ND, efc_pos: ND, efc_margin: ND,
    efc_vel: ND, geom_xpos: ND, geom_xmat: ND, site_xpos: ND, site_xmat: ND,
    pair_dist: ND, pair_fromto: ND,
    # data out; rangefinder threads a loop limiter cut (kernels/loop_limit.py)
    sensordata: ND, loop_cut: ND, probe: ti.i32,
    # compile time: rangefinders, geom distance sensors present
    has_ray: ti.template(), has_geom: ti.template(),
):
    """Limit sensors (jointlimitpos/vel, tendonlimitpos/vel), rangefinders and the geom
    distance sensors (from the pair distances of _geom_pairs), of either stage: a
    launch of its own keeps every kernel within 32 array arguments (Vulkan's storage
    buffer limit on lavapipe)."""
    for worldid, k in ti.ndrange(sensordata.shape[0], ids.shape[0]):
        sid = ids[k]
        si = sint[sid]
        stype = si[S_TYPE]
        objid = si[S_OBJID]
        out = ti.Vector.zero(float, 6)
        if stype == SENS_RANGEFINDER:
            if ti.static(has_ray):
                mat = site_xmat[worldid, objid]
                vec = ti.Vector([mat[0, 2], mat[1, 2], mat[2, 2]])
                dist, _ = ray_scene(worldid, site_xpos[worldid, objid], vec, GROUP_ALL, 1,
                                    si[S_OBJBODY], geom_int, geom_size, geom_rgba,
                                    geom_xpos, geom_xmat, mesh_vert, tri_vert, bvh_box,
                                    bvh_node, hfield_size, hfield_data)
                out[0] = dist
                if limit_reached(probe):
                    ti.atomic_add(loop_cut[worldid][CUT_SENSOR], 1)
        elif stype == SENS_JOINTLIMITPOS or stype == SENS_TENDONLIMITPOS or \
                stype == SENS_JOINTLIMITVEL or stype == SENS_TENDONLIMITVEL:
            ctype = CNSTR_LIMIT_JOINT
            if stype == SENS_TENDONLIMITPOS or stype == SENS_TENDONLIMITVEL:
                ctype = CNSTR_LIMIT_TENDON
            row = _limit_row(worldid, ctype, objid, ne, nf, nefc, efc_type, efc_id)
            if row >= 0:
                if stype == SENS_JOINTLIMITPOS or stype == SENS_TENDONLIMITPOS:
                    out[0] = efc_pos[worldid, row] - efc_margin[worldid, row]
                else:
                    out[0] = efc_vel[worldid, row]
        elif stype >= SENS_GEOMDIST and stype <= SENS_GEOMFROMTO:
            if ti.static(has_geom):
                # the smallest distance over the sensor's geom pairs (first on ties),
                # starting from the cutoff
                dist = sensor_cutoff[param_row(worldid, sensor_cutoff), sid]
                fromto = ti.Vector.zero(float, 6)
                for p in range(si[S_AUX], si[S_AUX] + si[S_NPAIR]):
                    if pair_dist[worldid, p] < dist:
                        dist = pair_dist[worldid, p]
                        fromto = pair_fromto[worldid, p]
                if stype == SENS_GEOMDIST:
                    out[0] = dist
                elif stype == SENS_GEOMNORMAL:
                    nrm = ti.Vector([fromto[3] - fromto[0], fromto[4] - fromto[1],
                                     fromto[5] - fromto[2]])
                    if nrm[0] != 0 or nrm[1] != 0 or nrm[2] != 0:
                        nrm = normalize3(nrm)
                    for i in ti.static(range(3)):
                        out[i] = nrm[i]
                else:
                    out = fromto
        write_sensor(worldid, sid, out, sint, sensor_cutoff, sensordata)


@ti.kernel
def _apply_cutoff(ids: ND, sint: ND, sensor_cutoff: ND, sensordata: ND):
    for worldid, k in ti.ndrange(sensordata.shape[0], ids.shape[0]):
        sid = ids[k]
        si = sint[sid]
        cutoff = sensor_cutoff[param_row(worldid, sensor_cutoff), sid]
        if si[S_TYPE] != SENS_GEOMFROMTO and cutoff > 0.0:
            for j in range(si[S_DIM]):
                adr = si[S_ADR] + j
                sensordata[worldid, adr] = clip_sensor(sensordata[worldid, adr], cutoff,
                                                       si[S_DATATYPE])

# ---------------------------------------------------------------- host plan

def _ints(a, name: str, n: int) -> np.ndarray:
    return np.asarray(getattr(a, name)).reshape(n, -1)[:, 0] if n else np.zeros(0, np.int32)


def _cam_constants(a, camid: int) -> tuple:
    """fx, fy, cx, cy of cam_project, in MuJoCo's arithmetic (float32 intrinsics and
    sensor size: their quotient is computed in single precision)."""
    res = np.asarray(a.cam_resolution).reshape(-1, 2)[camid]
    size = np.asarray(a.cam_sensorsize, dtype=np.float32).reshape(-1, 2)[camid]
    intr = np.asarray(a.cam_intrinsic, dtype=np.float32).reshape(-1, 4)[camid]
    if size[0] and size[1]:
        fx = float(np.float32(intr[0] / size[0]) * np.float32(res[0]))
        fy = float(np.float32(intr[1] / size[1]) * np.float32(res[1]))
    else:
        fovy = float(np.asarray(a.cam_fovy).reshape(-1)[camid])
        fx = fy = 0.5 / np.tan(fovy * np.pi / 360.0) * float(res[1])
    return fx, fy, float(res[0]) / 2.0, float(res[1]) / 2.0


def _body_of(a, objtype: int, objid: int) -> int:
    if objid < 0:
        return -1
    if objtype in (OBJ_BODY, OBJ_XBODY):
        return objid
    table = {OBJ_GEOM: "geom_bodyid", OBJ_SITE: "site_bodyid", OBJ_CAMERA: "cam_bodyid"}
    if objtype in table:
        return int(np.asarray(getattr(a, table[objtype])).reshape(-1)[objid])
    return -1


def sensor_plan(m) -> SimpleNamespace:
    """The model's sensors grouped by stage (built once per model and options).

    Fields: ``sint``/``sfloat`` (device tables, see the module docstring), ``pos``,
    ``vel`` and ``acc``: per stage ``n`` (sensors of the stage, plugins excluded),
    ``sids`` (host ids), ``ids`` (device ids), ``user_ids``/``nuser`` (user sensors),
    ``core_ids``/``ncore`` and ``extra_ids``/``nextra`` (the sensors of _sensor_pos or
    _sensor_vel, and of _sensor_extra),
    ``epot``/``ekin`` (an e_potential / e_kinetic sensor is there), and for the position
    stage ``ray`` (rangefinders) and ``geom`` (geom distance sensors) with the geom
    pairs ``pairs`` ((sensor, geom1, geom2) in MuJoCo's loop order).
    """
    cached = m.plans.sensor
    if cached is not None and cached[0] is config.options_of(m):
        return cached[1]
    a = m.arrays
    n = m.nsensor
    stype = _ints(a, "sensor_type", n)
    needstage = _ints(a, "sensor_needstage", n)
    objtype = _ints(a, "sensor_objtype", n)
    objid = _ints(a, "sensor_objid", n)
    reftype = _ints(a, "sensor_reftype", n)
    refid = _ints(a, "sensor_refid", n)
    datatype = _ints(a, "sensor_datatype", n)
    adr = _ints(a, "sensor_adr", n)
    dim = _ints(a, "sensor_dim", n)
    sint = np.zeros((max(n, 1), S_WIDTH), dtype=np.int32)
    sfloat = np.zeros((max(n, 1), 4), dtype=np.float64)
    pairs = []
    jnt_qposadr = np.asarray(a.jnt_qposadr).reshape(-1)
    jnt_dofadr = np.asarray(a.jnt_dofadr).reshape(-1)
    site_type = np.asarray(a.site_type).reshape(-1)
    body_geomadr = np.asarray(a.body_geomadr).reshape(-1)
    body_geomnum = np.asarray(a.body_geomnum).reshape(-1)
    for sid in range(n):
        row = sint[sid]
        row[S_TYPE] = stype[sid]
        row[S_DATATYPE] = datatype[sid]
        row[S_OBJTYPE], row[S_OBJID] = objtype[sid], objid[sid]
        row[S_REFTYPE], row[S_REFID] = reftype[sid], refid[sid]
        row[S_ADR], row[S_DIM] = adr[sid], dim[sid]
        row[S_OBJBODY] = _body_of(a, objtype[sid], objid[sid])
        row[S_REFBODY] = _body_of(a, reftype[sid], refid[sid])
        t = stype[sid]
        if t in (SENS_JOINTPOS, SENS_BALLQUAT):
            row[S_AUX] = jnt_qposadr[objid[sid]]
        elif t in (SENS_JOINTVEL, SENS_BALLANGVEL):
            row[S_AUX] = jnt_dofadr[objid[sid]]
        elif t == SENS_INSIDESITE:
            row[S_AUX] = site_type[refid[sid]]
        elif t == SENS_MAGNETOMETER:
            sfloat[sid, :3] = np.asarray(m.opt.magnetic, dtype=np.float64)
        elif t == SENS_CAMPROJECTION:
            sfloat[sid] = _cam_constants(a, refid[sid])
        elif t in GEOM_SENSORS:
            def geoms(otype, oid):
                if otype == OBJ_BODY:
                    return range(body_geomadr[oid], body_geomadr[oid] + body_geomnum[oid])
                return range(oid, oid + 1)
            row[S_AUX] = len(pairs)
            for g1 in geoms(objtype[sid], objid[sid]):
                for g2 in geoms(reftype[sid], refid[sid]):
                    pairs.append((sid, int(g1), int(g2)))
            row[S_NPAIR] = len(pairs) - row[S_AUX]

    def device_ints(values):
        values = np.asarray(values, dtype=np.int32)
        arr = ti.ndarray(ti.i32, shape=(max(1, values.size),))
        if values.size:
            arr.from_numpy(values)
        return arr

    def stage(number, types=None):
        sel = np.flatnonzero(needstage == number)
        user = [int(s) for s in sel if stype[s] == SENS_USER]
        plugin = [int(s) for s in sel if stype[s] == SENS_PLUGIN]
        if types is not None:
            bad = [int(s) for s in sel if stype[s] not in types and stype[s] != SENS_PLUGIN]
            if bad:
                raise NotImplementedError(
                    f"sensors: sensor {bad[0]} of type {int(stype[bad[0]])} needs stage "
                    f"{number}, which tiphys does not compute it in")
        extra = [int(s) for s in sel if stype[s] in EXTRA_TYPES]
        core = [int(s) for s in sel if stype[s] not in EXTRA_TYPES and stype[s] != SENS_PLUGIN]
        return SimpleNamespace(n=len(sel), sids=[int(s) for s in sel],
                               ids=device_ints(sel), user_ids=device_ints(user),
                               nuser=len(user), core_ids=device_ints(core), ncore=len(core),
                               extra_ids=device_ints(extra), nextra=len(extra),
                               plugin_ids=device_ints(plugin), nplugin=len(plugin),
                               plugin_hooks=_plugin_hooks(m, number))

    fdtype = config.float_dtype()
    sint_dev = ti.Vector.ndarray(S_WIDTH, ti.i32, shape=(sint.shape[0],))
    sint_dev.from_numpy(sint)
    sfloat_dev = ti.Vector.ndarray(4, fdtype, shape=(sfloat.shape[0],))
    sfloat_dev.from_numpy(sfloat.astype(np.float64 if fdtype == ti.f64 else np.float32))
    pos = stage(STAGE_POS, POS_TYPES)
    vel = stage(STAGE_VEL, VEL_TYPES)
    acc = stage(STAGE_ACC)
    for st in (pos, vel, acc):
        types = stype[st.sids] if st.n else np.zeros(0)
        st.epot = bool(np.any(types == SENS_E_POTENTIAL))
        st.ekin = bool(np.any(types == SENS_E_KINETIC))
    pos.ray = bool(np.any(stype[pos.sids] == SENS_RANGEFINDER)) if pos.n else False
    pos.geom = bool(pairs)
    pos.pairs = pairs
    plan = SimpleNamespace(sint=sint_dev, sfloat=sfloat_dev, pos=pos, vel=vel, acc=acc,
                           stages={STAGE_POS: pos, STAGE_VEL: vel, STAGE_ACC: acc},
                           epot=bool(np.any(stype == SENS_E_POTENTIAL)),
                           ekin=bool(np.any(stype == SENS_E_KINETIC)),
                           dummy_f=ti.ndarray(fdtype, shape=(1,)),
                           dummy_i=ti.ndarray(ti.i32, shape=(1,)), geom_cache=None)
    m.plans.sensor = (config.options_of(m), plan)
    return plan


def _plugin_hooks(m, stage: int) -> tuple:
    """The compute_sensor hooks of the model's sensor plugins whose sensors the end of
    ``stage`` computes (needstage; NONE with the position stage, as mj_sensorPos).
    m.plugins are tiphys.plugin's per-model objects (duck-typed: kernels/ does not
    import tiphys)."""
    hooks = []
    for plugin in getattr(m, "plugins", ()):
        if plugin.capabilities & PLUGIN_SENSOR and plugin.compute_sensor is not None and \
                (plugin.needstage or STAGE_POS) == stage:
            hooks.append(plugin.compute_sensor)
    return tuple(hooks)


def plugin_sensors(m, d, stage: int) -> None:
    """The end of a sensor stage for its sensor plugins, as mj_sensorPos/Vel/Acc: each
    plugin's compute_sensor, then the cutoff of the stage's plugin sensors (one launch;
    the built-in ones were clipped when written). Reads what the plugins read; writes
    their sensors' sensordata."""
    st = sensor_plan(m).stages[stage]
    for hook in st.plugin_hooks:
        hook(m, d)
    if st.nplugin:
        launch(_apply_cutoff, m, d, ids=st.plugin_ids, sint=sensor_plan(m).sint)


def energy_sensor(m, stage: int) -> bool:
    """True if the model has an e_potential (stage 1) or e_kinetic (stage 2) sensor,
    which computes that energy (MuJoCo's energyPosSensor / energyVelSensor); False
    with <flag sensor="disable"/>."""
    if m.nsensor == 0 or m.opt.disabled("sensor"):
        return False
    plan = sensor_plan(m)
    return plan.epot if stage == STAGE_POS else plan.ekin


# ---------------------------------------------------------------- host stages

def _user_sensors(m, d, plan, st, stage: int) -> None:
    """The user callback of a stage with user sensors, then their cutoff."""
    fn = _CALLBACK["fn"]
    if st.nuser and fn is not None:
        config.opaque()  # a Python callback: a replayed step would skip it
        fn(m, d, stage)
        launch(_apply_cutoff, m, d, ids=st.user_ids, sint=plan.sint)


def apply_cutoff(m, d, stage: int) -> None:
    """Clip the values of every sensor of ``stage`` (mjtStage 1, 2, 3) by its cutoff,
    as MuJoCo's apply_cutoff (one launch; nothing without such sensors): real data to
    [-cutoff, cutoff], positive data to at most cutoff, where cutoff > 0; geomfromto,
    axis and quaternion data are left. Reads and writes sensordata."""
    if m.nsensor == 0:
        return
    plan = sensor_plan(m)
    st = plan.stages[stage]
    if st.n:
        launch(_apply_cutoff, m, d, ids=st.ids, sint=plan.sint)


def _energies(m, d, st) -> None:
    """energy_pos / energy_vel for the stage's e_potential / e_kinetic sensors (MuJoCo
    computes them for the sensor whatever the energy flag)."""
    if st.epot:
        energy_pos(m, d)
    if st.ekin:
        energy_vel(m, d)


def _extra(m, d, plan, st) -> None:
    """The stage's limit, rangefinder and geom distance sensors (one launch, after the
    geom pair distances)."""
    if not st.nextra:
        return
    pair_dist, pair_fromto = plan.dummy_f, plan.dummy_f
    geom = st is plan.pos and st.geom
    if geom:
        pair_dist, pair_fromto = _geom_pair_distances(m, d, plan)
    ray = st is plan.pos and st.ray
    if ray:
        t = ray_tables(m)
        rays = dict(geom_int=t.geom_int, tri_vert=t.tri_vert, bvh_box=t.bvh_box,
                    bvh_node=t.bvh_node)
    else:  # no rangefinder in this stage: placeholders for the ray tables and fields
        rays = dict(geom_int=plan.dummy_i, geom_size=plan.dummy_f,
                    geom_rgba=plan.dummy_f, mesh_vert=plan.dummy_f,
                    tri_vert=plan.dummy_f, bvh_box=plan.dummy_f, bvh_node=plan.dummy_f,
                    hfield_size=plan.dummy_f, hfield_data=plan.dummy_f)
    launch(_sensor_extra, m, d, ids=st.extra_ids, sint=plan.sint, pair_dist=pair_dist,
           pair_fromto=pair_fromto, has_ray=ray, has_geom=geom,
           probe=loop_probe() if ray else 0, **rays)


def sensor_pos(m, d) -> None:
    """Position-dependent sensors of every world, as mj_sensorPos.

    magnetometer, camprojection, rangefinder, jointpos, tendonpos, actuatorpos,
    ballquat, jointlimitpos, tendonlimitpos, framepos, framequat, framex/y/zaxis,
    subtreecom, insidesite, geomdist, geomnormal, geomfromto, e_potential, e_kinetic
    (MuJoCo's needstage for both energies is "pos"), clock and user sensors with
    needstage "pos" (zeroed, then the callback of set_sensor_callback), each clipped
    by its cutoff. Reads what the position stages
    write (qpos, xpos, xquat, xmat, xipos, ximat, geom/site/cam poses, subtree_com,
    ten_length, actuator_length, the constraint rows ne, nf, nefc, efc_type, efc_id,
    efc_pos, efc_margin) and time; with an e_potential (e_kinetic) sensor it runs
    energy_pos (energy_vel) first: writes energy[:, 0] (energy[:, 1]; reads qM, qvel).
    Writes sensordata. Nothing runs without
    position-stage sensors or with the sensor flag disabled.
    """
    if m.nsensor == 0 or m.opt.disabled("sensor"):
        return
    plan = sensor_plan(m)
    st = plan.pos
    if st.n == 0 and not st.plugin_hooks:
        return
    _energies(m, d, st)
    if st.ncore:
        launch(_sensor_pos, m, d, ids=st.core_ids, sint=plan.sint, sfloat=plan.sfloat)
    _extra(m, d, plan, st)
    _user_sensors(m, d, plan, st, STAGE_POS)
    plugin_sensors(m, d, STAGE_POS)


def sensor_vel(m, d) -> None:
    """Velocity-dependent sensors of every world, as mj_sensorVel.

    velocimeter, gyro, jointvel, tendonvel, actuatorvel, ballangvel, jointlimitvel,
    tendonlimitvel, framelinvel, frameangvel, subtreelinvel, subtreeangmom and user
    sensors with needstage "vel" (zeroed, then the callback), each clipped by
    its cutoff. Reads qvel, cvel, ten_velocity, actuator_velocity, efc_vel (and the
    rows' ne, nf, nefc, efc_type, efc_id), the poses, xipos, ximat and subtree_com.
    Writes
    sensordata. Nothing runs without velocity-stage sensors or with the sensor flag
    disabled.
    """
    if m.nsensor == 0 or m.opt.disabled("sensor"):
        return
    plan = sensor_plan(m)
    st = plan.vel
    if st.n == 0 and not st.plugin_hooks:
        return
    _energies(m, d, st)
    if _has_subtree_vel_sensors(m) or st.plugin_hooks:
        subtree_vel(m, d)  # as mj_sensorVel: the Data fields, for the user and plugins
    if st.ncore:
        launch(_sensor_vel, m, d, ids=st.core_ids, sint=plan.sint)
    _extra(m, d, plan, st)
    _user_sensors(m, d, plan, st, STAGE_VEL)
    plugin_sensors(m, d, STAGE_VEL)


@ti.kernel
def _subtree_vel_all(
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, body_mass: ND,
    body_subtreemass: ND, body_inertia: ND, body_weldid: ND, body_rootid: ND,
    xipos: ND, ximat: ND, cvel: ND, subtree_com: ND,
    subtree_linvel: ND, subtree_angmom: ND,
):
    for worldid, bodyid in ti.ndrange(subtree_linvel.shape[0], subtree_linvel.shape[1]):
        linvel, angmom = _subtree_vel(worldid, bodyid, body_subtree_adr, body_subtree_num,
                                      body_subtree, body_mass, body_subtreemass,
                                      body_inertia, body_weldid, body_rootid, xipos,
                                      ximat, cvel, subtree_com)
        subtree_linvel[worldid, bodyid] = linvel
        subtree_angmom[worldid, bodyid] = angmom


def _has_subtree_vel_sensors(m) -> bool:
    has = m.plans.subtree_vel_sensors
    if has is None:
        types = np.asarray(m.arrays.sensor_type)[:m.nsensor]
        has = bool(np.isin(types, (SENS_SUBTREELINVEL, SENS_SUBTREEANGMOM)).any())
        m.plans.subtree_vel_sensors = has
    return has


def subtree_vel(m, d) -> None:
    """subtree_linvel and subtree_angmom of every body of every world, as
    mj_subtreeVel (one launch, a thread per (world, body) summing its subtree list;
    equal to MuJoCo's backward recursion up to round-off). Reads xipos, ximat, cvel,
    subtree_com; writes subtree_linvel, subtree_angmom."""
    launch(_subtree_vel_all, m, d)


def sensor_user(m, d, stage: int) -> None:
    """The user-sensor part of a stage for the acceleration stage's module: the callback
    (when the stage has user sensors and one is set), then their cutoff. The user
    sensors themselves must have been zeroed before (sensor_pos and sensor_vel do it
    in their launch)."""
    if m.nsensor == 0 or m.opt.disabled("sensor"):
        return
    plan = sensor_plan(m)
    _user_sensors(m, d, plan, plan.stages[stage], stage)



# ---------------------------------------------------------------- geom distance sensors

@ti.kernel
def _geom_pairs(
    # compile time: the detector groups present, each (mode, detector, maxcon, flip)
    keys: ti.template(), cap: ti.template(),
    # pairs: (sensor, geom1, geom2) and detector group (-1: none, left at +inf)
    pair_geom: ND, pair_group: ND, sensor_cutoff: ND, tol: float, kmax: ti.i32,
    # model
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND, mesh_vertadr: ND,
    mesh_vertnum: ND, mesh_graphadr: ND, mesh_vert: ND, mesh_graph: ND,
    # data in
    geom_xpos: ND, geom_xmat: ND,
    # scratch: one EPA polytope per (world, pair)
    epa_floats: ND, epa_ints: ND,
    # out
    pair_dist: ND, pair_fromto: ND,
):
    """Every geom pair of the distance sensors in every world, the sensor's cutoff as
    distmax; one branch per detector group present."""
    for worldid, p in ti.ndrange(geom_xpos.shape[0], pair_geom.shape[0]):
        group = pair_group[p]
        if group >= 0:
            pt = Polytope((epa_floats, epa_ints), worldid * pair_geom.shape[0] + p, cap)
            pg = pair_geom[p]
            distmax = sensor_cutoff[param_row(worldid, sensor_cutoff), pg[0]]
            dist = distmax
            fromto = ti.Vector.zero(float, 6)
            for gi in ti.static(range(len(keys))):
                if group == gi:
                    dist, fromto = pair_distance(
                        worldid, pg[1], pg[2], distmax, keys[gi][0], keys[gi][1],
                        keys[gi][2], keys[gi][3], pt, tol, kmax, geom_type, geom_dataid,
                        geom_size, geom_rbound, mesh_vertadr, mesh_vertnum, mesh_graphadr,
                        mesh_vert, mesh_graph, geom_xpos, geom_xmat)
            pair_dist[worldid, p] = dist
            pair_fromto[worldid, p] = fromto


@ti.kernel
def _copy_pair(p: ti.i32, dist: ND, fromto: ND, pair_dist: ND, pair_fromto: ND):
    for worldid in range(dist.shape[0]):
        pair_dist[worldid, p] = dist[worldid]
        pair_fromto[worldid, p] = fromto[worldid]


def _geom_groups(m, plan):
    """The geom pairs of the distance sensors grouped by detector (host, once): the
    group keys and each pair's group for the batched kernel, the heightfield and sdf
    pairs (one launch each) and the device pair table."""
    from .collision import detector_kind, primitive_table
    gtype = np.asarray(m.arrays.geom_type).reshape(-1)
    groups: dict = {}
    single = []  # heightfield and sdf pairs: a launch of their own each
    for p, (sid, g1, g2) in enumerate(plan.pos.pairs):
        flip = bool(gtype[g1] > gtype[g2])
        t1, t2 = sorted((int(gtype[g1]), int(gtype[g2])))
        kind = detector_kind(t1, t2)
        if kind is None:
            continue  # no collision function: distance stays at the cutoff
        if kind == "convex" and t1 != GEOM_PLANE or (t1, t2) == (GEOM_BOX, GEOM_BOX):
            key = ("ccd", 0, 1, False)
        elif kind == "convex":
            key = ("plane", 0, MAX_PLANE_MESH, flip)
        elif kind == "primitive":
            detector, maxcon = primitive_table()[(t1, t2)]  # static: every primitive pair
            key = ("primitive", detector, maxcon, flip)
        elif kind == "hfield" or kind == "sdf" and t1 != GEOM_HFIELD:
            # (one launch each: collide_hfield's / collide_sdf's distance kernels)
            single.append((p, sid, g2 if flip else g1, g1 if flip else g2, flip))
            continue
        elif kind == "sdf" and t1 == GEOM_HFIELD:
            continue  # mjc_HFieldSDF gives no contact: distance stays at the cutoff
        else:
            raise NotImplementedError(
                f"sensor {sid}: geom distance between {GEOM_TYPE_NAMES[t1]} and "
                f"{GEOM_TYPE_NAMES[t2]} ({kind}) geoms")
        groups.setdefault(key, []).append(p)
    table = np.asarray(plan.pos.pairs, dtype=np.int32).reshape(-1, 3)
    group = np.full(len(table), -1, dtype=np.int32)
    keys = tuple(groups)
    for gi, key in enumerate(keys):
        group[groups[key]] = gi
    pair_geom = ti.Vector.ndarray(3, ti.i32, shape=(len(table),))
    pair_geom.from_numpy(table)
    pair_group = ti.ndarray(ti.i32, shape=(len(table),))
    pair_group.from_numpy(group)
    return SimpleNamespace(keys=keys, single=single, pair_geom=pair_geom,
                           pair_group=pair_group, npair=len(table))


def _geom_pair_distances(m, d, plan):
    """Distance and fromto of every geom pair of the distance sensors in every world:
    one launch for all pairs (a compiled branch per detector group present, compiled
    like collide_convex's, without the advanced optimizations), two per heightfield
    or sdf pair. Pairs without a collision function keep +inf (the sensor's cutoff stays)."""
    if plan.geom_cache is None:
        plan.geom_cache = _geom_groups(m, plan)
    g = plan.geom_cache
    scratch = d.scratch.geom_pairs
    if scratch is None or scratch[0] is not g:
        fdtype = d.qvel.dtype
        dist = d.scratch.tag(ti.ndarray(fdtype, shape=(d.nworld, g.npair)))
        dist.fill(float("inf"))
        fromto = d.scratch.tag(ti.Vector.ndarray(6, fdtype, shape=(d.nworld, g.npair)))
        fromto.fill(0)
        scratch = d.scratch.geom_pairs = (g, dist, fromto)
    _, pair_dist, pair_fromto = scratch
    opt = m.opt
    _check_options(opt)
    cap = polytope_capacity(opt.ccd_iterations)
    if g.keys:
        epa_floats, epa_ints = polytope_scratch(d, cap, d.nworld * g.npair)
        with _light_compile():
            launch(_geom_pairs, m, d, keys=g.keys, cap=cap, pair_geom=g.pair_geom,
                   pair_group=g.pair_group, tol=float(opt.ccd_tolerance),
                   kmax=int(opt.ccd_iterations), epa_floats=epa_floats,
                   epa_ints=epa_ints, pair_dist=pair_dist, pair_fromto=pair_fromto)
    if g.single:
        from .collide_hfield import hfield_distance
        from .collide_sdf import sdf_pair_distance
        gtype = np.asarray(m.arrays.geom_type).reshape(-1)
        cutoff = m.sensor_cutoff.to_numpy()
        dist = ti.ndarray(d.qvel.dtype, shape=(d.nworld,))
        fromto = ti.Vector.ndarray(6, d.qvel.dtype, shape=(d.nworld,))
        for p, sid, ga, gb, flip in g.single:
            what = "sdf" if gtype[gb] == GEOM_SDF else "heightfield"
            if cutoff.shape[0] > 1 and np.any(cutoff[:, sid] != cutoff[0, sid]):
                raise NotImplementedError(
                    f"sensor {sid}: {what} geom distance with per-world cutoffs")
            pair_distance_of = sdf_pair_distance if what == "sdf" else hfield_distance
            pair_distance_of(m, d, ga, gb, flip, float(cutoff[0, sid]), dist, fromto)
            launch(_copy_pair, m, d, p=p, dist=dist, fromto=fromto, pair_dist=pair_dist,
                   pair_fromto=pair_fromto)
    return pair_dist, pair_fromto
