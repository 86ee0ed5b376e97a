"""Acceleration-stage sensors (mj_sensorAcc of MuJoCo 3.4.0).

``sensor_acc`` writes the sensordata of every sensor whose needstage is mjSTAGE_ACC.
The host groups them by what they read (once per model, cached on it); each group is
parallel over (world, sensor), or (world, taxel) for tactile sensors:

- motion and forces: accelerometer, force, torque, framelinacc, frameangacc (these
  read cacc / cfrc_int: ``rne_post_constraint`` runs first, exactly when MuJoCo's
  rule calls mj_rnePostConstraint: an accelerometer, force, torque, framelinacc,
  frameangacc or user sensor at this stage), actuatorfrc, jointactuatorfrc,
  tendonactuatorfrc, jointlimitfrc, tendonlimitfrc, and user sensors (zeroed; then
  the callback of kernels/sensor.py's set_sensor_callback fills them);
- touch and contact sensors, a thread per (world, sensor) scanning the world's
  contacts in MuJoCo's order. Contact sensors: every data field (found, force,
  torque, dist, pos, normal, tangent) and reduction (none: the first matches in
  contact order; mindist / maxforce: the smallest (criterion, contact id) pairs in
  ascending order, MuJoCo's partial sort; netforce: the total wrench about the
  force-weighted centroid), matching by geom, body, subtree (xbody) or site volume;
- tactile sensors (``_tactile``, see there);
- sensor plugins whose needstage is acc: their compute_sensor hooks last, then the
  cutoff of their sensors (kernels/sensor.py's plugin_sensors); rne_post_constraint
  runs for them too, as in MuJoCo.

One launch per group present (``_motion_force``, ``_contacts``, ``_tactile``), plus
rne_post_constraint's two and the user callback's cutoff launch. The integers each
sensor needs (its table entries, its object's body, root and weld ids, ...) are packed
on the host into one per-sensor table (``acc_int``): Taichi's SPIR-V backend (Vulkan,
Metal) takes at most 32 array arguments per kernel (a kernel with more fails
silently or crashes on lavapipe), and every kernel here stays under that. Every value
is clipped by its sensor's cutoff in the thread that writes it (kernels/sensor.py's
clip_sensor: apply_cutoff's rule).

Contact forces are mj_contactForce's (rne_post.contact_force_local). Per-world-able
("*") parameters are indexed ``worldid % shape[0]``.
"""
from types import SimpleNamespace

import numpy as np
import taichi as ti

from .bind import launch
from .consts import (CNSTR_LIMIT_JOINT, CNSTR_LIMIT_TENDON, CONE_PYRAMIDAL, GEOM_BOX, GEOM_CAPSULE,
                     GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD, GEOM_MESH, GEOM_PLANE, GEOM_SDF,
                     GEOM_SPHERE, MINVAL, OBJ_BODY, OBJ_CAMERA, OBJ_GEOM, OBJ_SITE, OBJ_UNKNOWN,
                     OBJ_XBODY, SENS_ACCELEROMETER, SENS_ACTUATORFRC, SENS_CONTACT, SENS_FORCE,
                     SENS_FRAMEANGACC, SENS_FRAMELINACC, SENS_JOINTACTFRC, SENS_JOINTLIMITFRC,
                     SENS_PLUGIN, SENS_TACTILE, SENS_TENDONACTFRC, SENS_TENDONLIMITFRC,
                     SENS_TORQUE, SENS_TOUCH, SENS_USER, STAGE_ACC, TRN_TENDON)
from .math import (inside_geom, mul_mat_t, normalize3, param_row, quat2mat, rot_vec_quat,
                   transform_motion)
from .loop_limit import CUT_SENSOR, limit_reached, probe as loop_probe
from .ray import ray_primitive
from .rne_post import contact_force_local, rne_post_constraint
from .sdf import oct_eval, sdf_distance
from .sensor import clip_sensor, plugin_sensors, sensor_plan, sensor_user

ND = ti.types.ndarray()

# mjtConDataField sizes: found, force, torque, dist, pos, normal, tangent
CONDATA_SIZE = (1, 3, 3, 1, 3, 3, 3)
REDUCE_NONE, REDUCE_MINDIST, REDUCE_MAXFORCE, REDUCE_NETFORCE = range(4)
# columns of the per-sensor integer table (acc_int): model entries and derived ids
(C_TYPE, C_DATATYPE, C_OBJTYPE, C_OBJID, C_REFTYPE, C_REFID, C_ADR, C_DIM, C_SPEC,
 C_REDUCE, C_BODY, C_ROOT, C_WELD, C_AUX) = range(14)
C_WIDTH = 14

MOTION_FORCE = (SENS_ACCELEROMETER, SENS_FORCE, SENS_TORQUE, SENS_ACTUATORFRC, SENS_JOINTACTFRC,
                SENS_TENDONACTFRC, SENS_JOINTLIMITFRC, SENS_TENDONLIMITFRC, SENS_FRAMELINACC,
                SENS_FRAMEANGACC, SENS_USER)
CONTACTS = (SENS_TOUCH, SENS_CONTACT)
TACTILES = (SENS_TACTILE,)
NEEDS_RNE_POST = (SENS_ACCELEROMETER, SENS_FORCE, SENS_TORQUE, SENS_FRAMELINACC, SENS_FRAMEANGACC,
                  SENS_USER)


# ---------------------------------------------------------------- small helpers

@ti.func
def _cross(a, b):
    return ti.Vector([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                      a[0] * b[1] - a[1] * b[0]])


@ti.func
def _object_acc(worldid, bodyid, root, weld, pos, rot, local: ti.template(),
                subtree_com: ti.template(), cvel: ti.template(), cacc: ti.template()):
    """mj_objectAcceleration: 6D acceleration (ang, lin) at pos, world or rot's axes,
    with the Coriolis term of the moving frame; zero on bodies welded to the world
    (weld 0). root, weld: the body's root and weld ids."""
    ang = ti.Vector.zero(float, 3)
    lin = ti.Vector.zero(float, 3)
    if weld != 0:
        com = subtree_com[worldid, root]
        ang, lin = transform_motion(cacc[worldid, bodyid], pos - com, rot, local)
        vang, vlin = transform_motion(cvel[worldid, bodyid], pos - com, rot, local)
        lin += _cross(vang, vlin)
    return ang, lin


# ---------------------------------------------------------------- contact matching

@ti.func
def _check_match(body, geom, objtype, objid, body_parentid: ti.template()):
    """checkMatch: does the contact side (body, geom) satisfy the sensor object?"""
    match = False
    if objtype == OBJ_UNKNOWN or objtype == OBJ_SITE:
        match = True  # a site has already passed its volume test
    elif objtype == OBJ_GEOM:
        match = objid == geom
    elif objtype == OBJ_BODY:
        match = objid == body
    elif objtype == OBJ_XBODY:  # subtree: walk up from body
        b = body
        while b > objid:
            b = body_parentid[b]
        match = b == objid
    return match


@ti.func
def _match_contact(worldid, conid, type1, id1, type2, id2, body_parentid: ti.template(),
                   geom_bodyid: ti.template(), site_type: ti.template(),
                   site_size: ti.template(), site_xpos: ti.template(),
                   site_xmat: ti.template(), contact_pos: ti.template(),
                   contact_geom: ti.template()):
    """matchContact: 0 no match, 1 match, -1 match with the normal flipped."""
    res = 0
    if type1 == OBJ_UNKNOWN and type2 == OBJ_UNKNOWN:
        res = 1
    else:
        inside = True
        if type1 == OBJ_SITE:
            # inside_geom returns an int: compare, so that the bool takes a bool (an int
            # assigned to it makes Taichi warn "Assign may lose precision: u1 <- i32"
            # once per contact kernel it compiles)
            inside = inside_geom(site_xpos[worldid, id1], site_xmat[worldid, id1],
                                 site_size[id1], site_type[id1],
                                 contact_pos[worldid, conid]) != 0
        if inside:
            geom1 = contact_geom[worldid, conid][0]
            geom2 = contact_geom[worldid, conid][1]
            body1 = -1
            body2 = -1
            if geom1 >= 0:
                body1 = geom_bodyid[geom1]
            if geom2 >= 0:
                body2 = geom_bodyid[geom2]
            m11 = _check_match(body1, geom1, type1, id1, body_parentid)
            m12 = _check_match(body2, geom2, type1, id1, body_parentid)
            m21 = _check_match(body1, geom1, type2, id2, body_parentid)
            m22 = _check_match(body2, geom2, type2, id2, body_parentid)
            if (m11 or m12) and (m21 or m22):
                if type1 != OBJ_UNKNOWN and type2 != OBJ_UNKNOWN:
                    regular = m11 and m22
                    reverse = m12 and m21
                    if regular:
                        res = 1
                    elif reverse:
                        res = -1
                elif type1 != OBJ_UNKNOWN:
                    res = 1 if m11 else -1
                else:
                    res = 1 if m22 else -1
    return res


@ti.func
def _criterion(worldid, conid, reduce, lfrc, contact_dist: ti.template()):
    """Sort key of a matched contact: its distance (mindist) or minus its squared
    force (maxforce)."""
    crit = 0.0
    if reduce == REDUCE_MINDIST:
        crit = contact_dist[worldid, conid]
    else:
        crit = -(lfrc[0] * lfrc[0] + lfrc[1] * lfrc[1] + lfrc[2] * lfrc[2])
    return crit


@ti.func
def _write_slot(worldid, base, offset, conid, flip, nmatch, pyramidal: ti.template(),
                ncon: ti.template(), contact_dist: ti.template(),
                contact_pos: ti.template(), contact_frame: ti.template(),
                contact_friction: ti.template(), contact_dim: ti.template(),
                contact_efc_address: ti.template(), efc_force: ti.template(),
                sensordata: ti.template()):
    """copySensorData: one contact's requested fields; a flipped contact's frame is
    turned 180 degrees about its second tangent (normal, first tangent and the z
    components of force and torque change sign)."""
    if offset[0] >= 0:
        sensordata[worldid, base + offset[0]] = nmatch
    if offset[1] >= 0 or offset[2] >= 0:
        lfrc = contact_force_local(worldid, conid, pyramidal, ncon, contact_dim,
                                   contact_friction, contact_efc_address, efc_force)
        if flip:
            lfrc[2] = -lfrc[2]
            lfrc[5] = -lfrc[5]
        for i in ti.static(range(3)):
            if offset[1] >= 0:
                sensordata[worldid, base + offset[1] + i] = lfrc[i]
            if offset[2] >= 0:
                sensordata[worldid, base + offset[2] + i] = lfrc[3 + i]
    if offset[3] >= 0:
        sensordata[worldid, base + offset[3]] = contact_dist[worldid, conid]
    sign = -1.0 if flip else 1.0
    frame = contact_frame[worldid, conid]
    pos = contact_pos[worldid, conid]
    for i in ti.static(range(3)):
        if offset[4] >= 0:
            sensordata[worldid, base + offset[4] + i] = pos[i]
        if offset[5] >= 0:
            sensordata[worldid, base + offset[5] + i] = sign * frame[0, i]
        if offset[6] >= 0:
            sensordata[worldid, base + offset[6] + i] = sign * frame[1, i]


# ---------------------------------------------------------------- motion and forces

@ti.kernel
def _motion_force(
    # model
    ids: ND, acc_int: ND, sensor_cutoff: ND, actuator_trntype: ND, actuator_trnid: ND,
    nu: ti.i32,
    # data in
    xpos: ND, xipos: ND, geom_xpos: ND, site_xpos: ND, site_xmat: ND, cam_xpos: ND,
    subtree_com: ND, cvel: ND, cacc: ND, cfrc_int: ND, actuator_force: ND,
    qfrc_actuator: ND, ne: ND, nf: ND, nefc: ND, efc_type: ND, efc_id: ND, efc_force: ND,
    # data out
    sensordata: ND,
):
    for worldid, k in ti.ndrange(sensordata.shape[0], ids.shape[0]):
        sensorid = ids[k]
        si = acc_int[sensorid]
        stype = si[C_TYPE]
        objid = si[C_OBJID]
        adr = si[C_ADR]
        bodyid = si[C_BODY]
        out = ti.Vector.zero(float, 3)
        n = 3  # values written from out; 0: user sensor
        if stype == SENS_ACCELEROMETER:
            _, lin = _object_acc(worldid, bodyid, si[C_ROOT], si[C_WELD],
                                 site_xpos[worldid, objid], site_xmat[worldid, objid], True,
                                 subtree_com, cvel, cacc)
            out = lin
        elif stype == SENS_FORCE or stype == SENS_TORQUE:
            # the interaction force with the parent, moved to the site, in its frame
            frc = cfrc_int[worldid, bodyid]
            f = ti.Vector([frc[3], frc[4], frc[5]])
            if stype == SENS_FORCE:
                out = mul_mat_t(site_xmat[worldid, objid], f)
            else:
                dif = site_xpos[worldid, objid] - subtree_com[worldid, si[C_ROOT]]
                t = ti.Vector([frc[0], frc[1], frc[2]]) - _cross(dif, f)
                out = mul_mat_t(site_xmat[worldid, objid], t)
        elif stype == SENS_FRAMELINACC or stype == SENS_FRAMEANGACC:
            objtype = si[C_OBJTYPE]
            pos = ti.Vector.zero(float, 3)
            if objtype == OBJ_BODY:
                pos = xipos[worldid, objid]
            elif objtype == OBJ_XBODY:
                pos = xpos[worldid, objid]
            elif objtype == OBJ_GEOM:
                pos = geom_xpos[worldid, objid]
            elif objtype == OBJ_SITE:
                pos = site_xpos[worldid, objid]
            else:  # camera
                pos = cam_xpos[worldid, objid]
            ang, lin = _object_acc(worldid, bodyid, si[C_ROOT], si[C_WELD], pos,
                                   ti.Matrix.identity(float, 3), False, subtree_com, cvel, cacc)
            out = lin
            if stype == SENS_FRAMEANGACC:
                out = ang
        elif stype == SENS_ACTUATORFRC:
            n = 1
            out[0] = actuator_force[worldid, objid]
        elif stype == SENS_JOINTACTFRC:
            n = 1
            out[0] = qfrc_actuator[worldid, si[C_AUX]]
        elif stype == SENS_TENDONACTFRC:
            n = 1
            for actid in range(nu):
                if actuator_trntype[actid] == TRN_TENDON and actuator_trnid[actid][0] == objid:
                    out[0] += actuator_force[worldid, actid]
        elif stype == SENS_JOINTLIMITFRC or stype == SENS_TENDONLIMITFRC:
            n = 1
            want = CNSTR_LIMIT_JOINT if stype == SENS_JOINTLIMITFRC else CNSTR_LIMIT_TENDON
            for efcid in range(ne[worldid] + nf[worldid], nefc[worldid]):
                if efc_type[worldid, efcid] == want and efc_id[worldid, efcid] == objid:
                    out[0] = efc_force[worldid, efcid]
                    break
        else:  # user: cleared here; the callback fills it, sensor_user clips it
            n = 0
            for i in range(si[C_DIM]):
                sensordata[worldid, adr + i] = 0.0
        cutoff = sensor_cutoff[param_row(worldid, sensor_cutoff), sensorid]
        datatype = si[C_DATATYPE]
        for i in ti.static(range(3)):
            if i < n:
                sensordata[worldid, adr + i] = clip_sensor(out[i], cutoff, datatype)


# ---------------------------------------------------------------- touch and contact

@ti.kernel
def _contacts(
    # model
    ids: ND, acc_int: ND, sensor_cutoff: ND, body_parentid: ND, geom_bodyid: ND,
    site_type: ND, site_size: ND,
    # data in
    site_xpos: ND, site_xmat: ND, ncon: ND, contact_dist: ND, contact_pos: ND,
    contact_frame: ND, contact_friction: ND, contact_dim: ND, contact_geom: ND,
    contact_efc_address: ND, efc_force: ND,
    # data out
    sensordata: ND,
    # compile-time: pyramidal friction cones
    pyramidal: ti.template(),
):
    for worldid, k in ti.ndrange(sensordata.shape[0], ids.shape[0]):
        sensorid = ids[k]
        si = acc_int[sensorid]
        objid = si[C_OBJID]
        adr = si[C_ADR]
        nc = ncon[worldid]
        if si[C_TYPE] == SENS_TOUCH:
            # normal forces of the site body's contacts whose force ray meets the site
            bodyid = si[C_BODY]
            total = 0.0
            for conid in range(nc):
                g0 = contact_geom[worldid, conid][0]
                g1 = contact_geom[worldid, conid][1]
                b0 = -1
                b1 = -1
                if g0 >= 0:
                    b0 = geom_bodyid[g0]
                if g1 >= 0:
                    b1 = geom_bodyid[g1]
                if contact_efc_address[worldid, conid] >= 0 and (bodyid == b0 or bodyid == b1):
                    lfrc = contact_force_local(worldid, conid, pyramidal, ncon, contact_dim,
                                               contact_friction, contact_efc_address,
                                               efc_force)
                    if lfrc[0] > 0.0:
                        frame = contact_frame[worldid, conid]
                        ray = normalize3(ti.Vector([frame[0, 0], frame[0, 1], frame[0, 2]])
                                          * lfrc[0])
                        if bodyid == b1:
                            ray = -ray
                        if ray_primitive(si[C_AUX], site_xpos[worldid, objid],
                                         site_xmat[worldid, objid], site_size[objid],
                                         contact_pos[worldid, conid], ray) >= 0.0:
                            total += lfrc[0]
            sensordata[worldid, adr] = total
        else:
            dim = si[C_DIM]
            for i in range(dim):
                sensordata[worldid, adr + i] = 0.0
            dataspec = si[C_SPEC]
            reduce = si[C_REDUCE]
            # offsets of the requested fields inside one slot, and the slot size
            offset = ti.Vector([-1, -1, -1, -1, -1, -1, -1])
            size = 0
            for f in ti.static(range(7)):
                if dataspec & (1 << f):
                    offset[f] = size
                    size += CONDATA_SIZE[f]
            num = dim // ti.max(size, 1)
            type1 = si[C_OBJTYPE]
            type2 = si[C_REFTYPE]
            id2 = si[C_REFID]
            nmatch = 0
            for conid in range(nc):
                if _match_contact(worldid, conid, type1, objid, type2, id2, body_parentid,
                                  geom_bodyid, site_type, site_size, site_xpos, site_xmat,
                                  contact_pos, contact_geom) != 0:
                    nmatch += 1
            if reduce == REDUCE_NETFORCE:
                # force-weighted centroid of the matches, then their total wrench there
                point = ti.Vector.zero(float, 3)
                weight_sum = 0.0
                for conid in range(nc):
                    flip = _match_contact(worldid, conid, type1, objid, type2, id2,
                                          body_parentid, geom_bodyid, site_type, site_size,
                                          site_xpos, site_xmat, contact_pos, contact_geom)
                    if flip != 0:
                        lfrc = contact_force_local(worldid, conid, pyramidal, ncon,
                                                   contact_dim, contact_friction,
                                                   contact_efc_address, efc_force)
                        f = ti.Vector([lfrc[0], lfrc[1], lfrc[2]])
                        weight = f.norm()
                        point += contact_pos[worldid, conid] * weight
                        weight_sum += weight
                point = point * (1.0 / ti.max(weight_sum, MINVAL))
                force = ti.Vector.zero(float, 3)
                torque = ti.Vector.zero(float, 3)
                for conid in range(nc):
                    flip = _match_contact(worldid, conid, type1, objid, type2, id2,
                                          body_parentid, geom_bodyid, site_type, site_size,
                                          site_xpos, site_xmat, contact_pos, contact_geom)
                    if flip != 0:
                        lfrc = contact_force_local(worldid, conid, pyramidal, ncon,
                                                   contact_dim, contact_friction,
                                                   contact_efc_address, efc_force)
                        if flip < 0:
                            lfrc = -lfrc
                        frame = contact_frame[worldid, conid]
                        fj = mul_mat_t(frame, ti.Vector([lfrc[0], lfrc[1], lfrc[2]]))
                        tj = mul_mat_t(frame, ti.Vector([lfrc[3], lfrc[4], lfrc[5]]))
                        force += fj
                        torque += tj
                        torque += _cross(contact_pos[worldid, conid] - point, fj)
                if offset[0] >= 0:
                    sensordata[worldid, adr + offset[0]] = nmatch
                for i in ti.static(range(3)):
                    if offset[1] >= 0:
                        sensordata[worldid, adr + offset[1] + i] = force[i]
                    if offset[2] >= 0:
                        sensordata[worldid, adr + offset[2] + i] = torque[i]
                    if offset[4] >= 0:
                        sensordata[worldid, adr + offset[4] + i] = point[i]
                if offset[5] >= 0:
                    sensordata[worldid, adr + offset[5]] = 1.0
                if offset[6] >= 0:
                    sensordata[worldid, adr + offset[6] + 1] = 1.0
            else:
                nslot = ti.min(num, nmatch)
                # slot s holds the s-th match in contact order (none) or in ascending
                # (criterion, contact id) order (mindist, maxforce)
                last_crit = 0.0
                last_id = -1
                conid = 0
                for slot in range(nslot):
                    chosen = -1
                    chosen_flip = 0
                    if reduce == REDUCE_NONE:
                        while chosen < 0 and conid < nc:
                            flip = _match_contact(worldid, conid, type1, objid, type2, id2,
                                                  body_parentid, geom_bodyid, site_type,
                                                  site_size, site_xpos, site_xmat,
                                                  contact_pos, contact_geom)
                            if flip != 0:
                                chosen = conid
                                chosen_flip = flip
                            conid += 1
                    else:
                        best_crit = 0.0
                        for cid in range(nc):
                            flip = _match_contact(worldid, cid, type1, objid, type2, id2,
                                                  body_parentid, geom_bodyid, site_type,
                                                  site_size, site_xpos, site_xmat,
                                                  contact_pos, contact_geom)
                            if flip != 0:
                                lfrc = contact_force_local(worldid, cid, pyramidal, ncon,
                                                           contact_dim, contact_friction,
                                                           contact_efc_address, efc_force)
                                crit = _criterion(worldid, cid, reduce, lfrc, contact_dist)
                                after_last = last_id < 0 or crit > last_crit or \
                                    (crit == last_crit and cid > last_id)
                                before_best = chosen < 0 or crit < best_crit or \
                                    (crit == best_crit and cid < chosen)
                                if after_last and before_best:
                                    chosen = cid
                                    chosen_flip = flip
                                    best_crit = crit
                        last_crit = best_crit
                        last_id = chosen
                    _write_slot(worldid, adr + slot * size, offset, chosen, chosen_flip < 0,
                                nmatch, pyramidal, ncon, contact_dist, contact_pos,
                                contact_frame, contact_friction, contact_dim,
                                contact_efc_address, efc_force, sensordata)
        # the sensor's cutoff, over all its values (this thread wrote them all)
        cutoff = sensor_cutoff[param_row(worldid, sensor_cutoff), sensorid]
        if cutoff > 0.0:
            datatype = si[C_DATATYPE]
            for i in range(si[C_DIM]):
                sensordata[worldid, adr + i] = clip_sensor(sensordata[worldid, adr + i],
                                                           cutoff, datatype)


# ---------------------------------------------------------------- tactile

@ti.func
def _primitive_distance(gtype, size, x):
    """Signed distance from x (in the geom's frame) to a primitive geom's surface, as
    MuJoCo's geomDistance (the SDF of each primitive; boxes inside: the radial
    field's intersection)."""
    dist = 0.0
    if gtype == GEOM_PLANE:
        dist = x[2]
    elif gtype == GEOM_SPHERE:
        dist = x.norm() - size[0]
    elif gtype == GEOM_BOX:
        a = ti.abs(x) - size
        if a[0] >= 0.0 or a[1] >= 0.0 or a[2] >= 0.0:
            b = ti.max(a, 0.0)
            dist = b.norm() + ti.min(ti.max(a[0], ti.max(a[1], a[2])), 0.0)
        else:
            field = normalize3(ti.Vector([-size[0] / a[0], -size[1] / a[1],
                                           -size[2] / a[2]]))
            for i in ti.static(range(3)):
                if x[i] < 0.0:
                    field[i] = -field[i]
            t = ti.Vector([-a[i] / ti.abs(field[i]) for i in ti.static(range(3))])
            dist = -ti.min(t[0], ti.min(t[1], t[2])) * field.norm()
    elif gtype == GEOM_CAPSULE:
        a = ti.Vector([x[0], x[1], x[2] - ti.min(ti.max(x[2], -size[1]), size[1])])
        dist = a.norm() - size[0]
    elif gtype == GEOM_ELLIPSOID:
        a = x / size
        b = a / size
        k0 = a.norm()
        dist = k0 * (k0 - 1.0) / b.norm()
    elif gtype == GEOM_CYLINDER:
        a0 = ti.sqrt(x[0] * x[0] + x[1] * x[1]) - size[0]
        a1 = ti.abs(x[2]) - size[1]
        b0 = ti.max(a0, 0.0)
        b1 = ti.max(a1, 0.0)
        dist = ti.min(ti.max(a0, a1), 0.0) + ti.sqrt(b0 * b0 + b1 * b1)
    return dist


@ti.func
def _add_unique(worldid, t, geomid, tac_geom: ti.template()):
    """Append geomid to (world, tactile sensor) t's list (tac_geom[w, t, 0]: its length;
    the geoms from index 1) unless it is there."""
    n = tac_geom[worldid, t, 0]
    seen = False
    for i in range(n):
        if tac_geom[worldid, t, 1 + i] == geomid:
            seen = True
    if not seen and n < tac_geom.shape[2] - 1:
        tac_geom[worldid, t, 1 + n] = geomid
        tac_geom[worldid, t, 0] = n + 1


@ti.kernel
def _tactile(
    octrees: ti.template(),
    # model
    tactile_ids: ND, taxel_sensor: ND, taxel_vert: ND, acc_int: ND, sensor_cutoff: ND,
    body_rootid: ND, body_weldid: ND, geom_type: ND, geom_bodyid: ND, geom_size: ND,
    geom_dataid: ND, mesh_vertadr: ND, mesh_vertnum: ND, mesh_normaladr: ND, mesh_vert: ND,
    mesh_normal: ND, mesh_quat: ND, mesh_pos: ND,
    # per geom, the shape it is evaluated on (_tactile_shapes: an sdf geom's plugin
    # shape, a mesh geom's octree root, else -1), the plugin shapes' attributes
    # (kernels/collide_sdf.py's sdf_arrays) and the octrees
    tac_shape: ND, sdf_attr: ND, oct_child: ND, oct_aabb: ND, oct_coeff: ND,
    # data in
    geom_xpos: ND, geom_xmat: ND, subtree_com: ND, cvel: ND, ncon: ND, contact_geom: ND,
    # scratch: per (world, tactile sensor) the number of geoms touching its body, then
    # those geoms in order
    tac_geom: ND,
    # data out; threads a loop limiter cut (kernels/loop_limit.py)
    sensordata: ND, loop_cut: ND, probe: ti.i32,
):
    """Tactile sensors as MuJoCo 3.4.0's: the taxels are the vertices of the sensor's
    mesh placed in its geom's frame; the geoms in contact with the geom's weld body
    are listed in contact order (first appearance); for each taxel, the last listed
    geom whose signed distance at the taxel is negative (depth < 0) sets channel 0 to
    the pressure depth / (0.05 - depth) (times |normal|^2) and channels 1, 2 to
    |relative velocity . tangent| (the vertex's normal and tangents rotated by
    mesh_quat); other taxels read 0. Distances of primitive geoms use MuJoCo's SDFs,
    those of sdf geoms their plugin's (at the taxel in the geom's frame moved into its
    mesh's original frame), those of mesh geoms whose mesh has an octree (a mesh that
    an sdf geom uses too) the octree's (oct_distance at the taxel in the geom's frame;
    compiled in with ``octrees`` only); other mesh geoms and height fields are skipped
    (MuJoCo skips meshes without an octree)."""
    nworld = sensordata.shape[0]
    # the other geom of every contact of the sensor geom's weld body, first seen first
    for worldid, t in ti.ndrange(nworld, tactile_ids.shape[0]):
        weld = acc_int[tactile_ids[t]][C_WELD]
        tac_geom[worldid, t, 0] = 0
        for conid in range(ncon[worldid]):
            g1 = contact_geom[worldid, conid][0]
            g2 = contact_geom[worldid, conid][1]
            if g1 >= 0 and g2 >= 0:
                if body_weldid[geom_bodyid[g1]] == weld:
                    _add_unique(worldid, t, g2, tac_geom)
                if body_weldid[geom_bodyid[g2]] == weld:
                    _add_unique(worldid, t, g1, tac_geom)
        if limit_reached(probe):
            ti.atomic_add(loop_cut[worldid][CUT_SENSOR], 1)
    # one taxel (mesh vertex): the last of those geoms it penetrates sets its pressure
    # and the tangential speeds along its two tangents
    for worldid, x in ti.ndrange(nworld, taxel_sensor.shape[0]):
        t = taxel_sensor[x]
        j = taxel_vert[x]
        sensorid = tactile_ids[t]
        si = acc_int[sensorid]
        meshid = si[C_OBJID]
        geomid = si[C_REFID]
        weld = si[C_WELD]
        quat = mesh_quat[meshid]
        nvert = mesh_vertnum[meshid]
        xpos = geom_xmat[worldid, geomid] @ mesh_vert[mesh_vertadr[meshid] + j] + \
            geom_xpos[worldid, geomid]
        out = ti.Vector.zero(float, 3)
        for gi in range(tac_geom[worldid, t, 0]):
            other = tac_geom[worldid, t, 1 + gi]
            gtype = geom_type[other]
            use = gtype != GEOM_MESH and gtype != GEOM_HFIELD
            if ti.static(octrees):
                if gtype == GEOM_MESH and tac_shape[other] >= 0:
                    use = True
            if use:
                lpos = mul_mat_t(geom_xmat[worldid, other], xpos - geom_xpos[worldid, other])
                size = geom_size[param_row(worldid, geom_size), other]
                dist = 0.0
                if gtype == GEOM_SDF:
                    mid = geom_dataid[other]
                    lpos = quat2mat(mesh_quat[mid]) @ lpos + mesh_pos[mid]
                    dist = sdf_distance(tac_shape[other], sdf_attr[other], lpos)
                elif gtype == GEOM_MESH:
                    if ti.static(octrees):
                        dist, _ = oct_eval(tac_shape[other], lpos, False, oct_child,
                                           oct_aabb, oct_coeff)
                else:
                    dist = _primitive_distance(gtype, size, lpos)
                depth = ti.min(dist, 0.0)
                if depth != 0.0:
                    body = geom_bodyid[other]
                    vs = cvel[worldid, weld]
                    vo = cvel[worldid, body]
                    _, lin_s = transform_motion(vs, xpos - subtree_com[worldid, si[C_AUX]],
                                               geom_xmat[worldid, geomid], False)
                    _, lin_o = transform_motion(
                        vo, geom_xpos[worldid, other] - subtree_com[worldid, body_rootid[body]],
                        geom_xmat[worldid, geomid], False)
                    vel_rel = lin_s - lin_o
                    nadr = mesh_normaladr[meshid] + 3 * j
                    normal = rot_vec_quat(mesh_normal[nadr], quat)
                    tang1 = rot_vec_quat(mesh_normal[nadr + 1], quat)
                    tang2 = rot_vec_quat(mesh_normal[nadr + 2], quat)
                    pressure = depth / ti.max(0.05 - depth, MINVAL)
                    force = normal * pressure
                    out = ti.Vector([force.dot(normal), ti.abs(vel_rel.dot(tang1)),
                                     ti.abs(vel_rel.dot(tang2))])
        nchannel = si[C_DIM] // nvert
        cutoff = sensor_cutoff[param_row(worldid, sensor_cutoff), sensorid]
        datatype = si[C_DATATYPE]
        for c in ti.static(range(3)):
            if c < nchannel:
                sensordata[worldid, si[C_ADR] + c * nvert + j] = \
                    clip_sensor(out[c], cutoff, datatype)
        if limit_reached(probe):
            ti.atomic_add(loop_cut[worldid][CUT_SENSOR], 1)


# ---------------------------------------------------------------- host

def _tactile_shapes(m, tactile):
    """(per geom, at least one entry, what a tactile sensor evaluates it on: an sdf
    geom's plugin shape (kernels/sdf.py kind), the root node of a mesh geom's mesh
    octree where the mesh has one (MuJoCo 3.4.0's mjSENS_TACTILE reads mesh_octadr of
    geom_dataid, and geomDistance then oct_distance), else -1; whether a mesh geom
    has an octree).

    An sdf geom without a plugin (whose distance is its mesh's octree in collisions)
    that can touch a tactile sensor's body (its contype/conaffinity match those of a
    geom welded to that body, or a <pair> names them) is refused: there MuJoCo 3.4.0's
    tactile sensor asks mjc_getSDF for the plugin of instance -1, reading before the
    start of mjModel.plugin, and stops with a FatalError ("Plugin is not a signed
    distance field") once such a geom touches the sensor's body."""
    from .collide_sdf import sdf_shapes
    a = m.arrays

    def ints(name, n):
        return np.asarray(getattr(a, name)).reshape(-1)[:n]
    ngeom, npair = int(a.sizes.get("ngeom", 0)), int(a.sizes.get("npair", 0))
    gtype, plugin, dataid = (ints(f, ngeom) for f in ("geom_type", "geom_plugin",
                                                      "geom_dataid"))
    contype, conaffinity = ints("geom_contype", ngeom), ints("geom_conaffinity", ngeom)
    weld = ints("body_weldid", int(a.sizes["nbody"]))[ints("geom_bodyid", ngeom)]
    octadr = np.asarray(a.mesh_octadr).reshape(-1)
    pairs = set(zip(ints("pair_geom1", npair).tolist(), ints("pair_geom2", npair).tolist()))
    refid = ints("sensor_refid", int(m.nsensor))
    for u in (g for g in range(ngeom) if gtype[g] == GEOM_SDF and plugin[g] == -1):
        for i in tactile:
            sensor_weld = weld[refid[i]]
            if weld[u] == sensor_weld:
                continue
            for g in np.flatnonzero(weld == sensor_weld).tolist():
                if (contype[u] & conaffinity[g]) or (contype[g] & conaffinity[u]) or \
                        (u, g) in pairs or (g, u) in pairs:
                    raise NotImplementedError(
                        f"sensor_acc: tactile sensor {i} next to sdf geom {u}, which has no "
                        f"plugin and can touch geom {g} of the sensor's body: there MuJoCo "
                        f"3.4.0 stops with a FatalError (its tactile sensor looks up the "
                        f"geom's plugin)")
    shape = sdf_shapes(m)[0]
    octree = [g for g in range(ngeom)
              if gtype[g] == GEOM_MESH and dataid[g] >= 0 and octadr[dataid[g]] >= 0]
    for g in octree:
        shape[g] = octadr[dataid[g]]
    return shape, bool(octree)


def _plan(m):
    """Acc-stage sensor ids by kernel group (device int arrays, None if empty) and
    whether rne_post_constraint must run; cached on the model."""
    cached = m.plans.sensor_acc
    if cached is not None:
        return cached
    a = m.arrays
    n = m.nsensor
    stype = np.asarray(a.sensor_type).reshape(-1)[:n]
    stage = np.asarray(a.sensor_needstage).reshape(-1)[:n]
    # (plugin sensors: their plugins' hooks, kernels/sensor.py's plugin_sensors)
    acc = [i for i in range(n) if stage[i] == STAGE_ACC and stype[i] != SENS_PLUGIN]
    unknown = sorted({int(stype[i]) for i in acc} - set(MOTION_FORCE + CONTACTS + TACTILES))
    if unknown:
        raise NotImplementedError(f"sensor_acc: sensor types {unknown} (mjtSensor)")

    def ids(types):
        sel = [i for i in acc if stype[i] in types]
        if not sel:
            return None
        arr = ti.ndarray(ti.i32, shape=(len(sel),))
        arr.from_numpy(np.array(sel, dtype=np.int32))
        return arr

    tactile = [i for i in acc if stype[i] == SENS_TACTILE]
    shapes, octrees = _tactile_shapes(m, tactile) if tactile else (None, False)
    taxel_sensor, taxel_vert = [], []
    vertnum = np.asarray(a.mesh_vertnum).reshape(-1)
    objid = np.asarray(a.sensor_objid).reshape(-1)
    for t, i in enumerate(tactile):
        nvert = int(vertnum[objid[i]])
        taxel_sensor += [t] * nvert
        taxel_vert += list(range(nvert))

    def device(values):
        arr = ti.ndarray(ti.i32, shape=(len(values),))
        arr.from_numpy(np.array(values, dtype=np.int32))
        return arr

    table = _acc_int_table(a, n, acc)
    acc_int = ti.Vector.ndarray(C_WIDTH, ti.i32, shape=(max(1, n),))
    acc_int.from_numpy(table)
    plan = SimpleNamespace(acc_int=acc_int,
        motion=ids(MOTION_FORCE), contacts=ids(CONTACTS), tactile=ids(TACTILES),
        ntactile=len(tactile), taxel_sensor=device(taxel_sensor) if taxel_sensor else None,
        taxel_vert=device(taxel_vert) if taxel_vert else None,
        tac_shape=device(shapes) if tactile else None,
        octrees=octrees,
        # (MuJoCo runs mj_rnePostConstraint for an acc-stage sensor plugin too)
        rne=any(stype[i] in NEEDS_RNE_POST for i in acc) or
        bool(sensor_plan(m).acc.plugin_hooks),
        user=any(stype[i] == SENS_USER for i in acc))
    m.plans.sensor_acc = plan
    return plan


def _acc_int_table(a, n, acc):
    """Per sensor (n rows, at least one), the integers the kernels read: its table
    entries and the ids derived from them (object body, its root and weld body, and
    C_AUX: the dof of a jointactuatorfrc, the site type of a site object, the root of a
    tactile geom's weld body)."""
    def ints(name):
        return np.asarray(getattr(a, name)).reshape(-1).astype(np.int64)

    stype, objtype, objid = ints("sensor_type"), ints("sensor_objtype"), ints("sensor_objid")
    intprm = np.asarray(a.sensor_intprm).reshape(-1, 3)
    body_rootid, body_weldid = ints("body_rootid"), ints("body_weldid")
    bodies = {OBJ_BODY: None, OBJ_XBODY: None, OBJ_GEOM: ints("geom_bodyid"),
              OBJ_SITE: ints("site_bodyid"), OBJ_CAMERA: ints("cam_bodyid")}
    table = np.zeros((max(1, n), C_WIDTH), dtype=np.int32)
    for i in acc:
        row = table[i]
        row[C_TYPE], row[C_OBJTYPE], row[C_OBJID] = stype[i], objtype[i], objid[i]
        row[C_DATATYPE] = ints("sensor_datatype")[i]
        row[C_REFTYPE], row[C_REFID] = ints("sensor_reftype")[i], ints("sensor_refid")[i]
        row[C_ADR], row[C_DIM] = ints("sensor_adr")[i], ints("sensor_dim")[i]
        row[C_SPEC], row[C_REDUCE] = intprm[i, 0], intprm[i, 1]
        body = -1
        if stype[i] == SENS_TACTILE:
            body = bodies[OBJ_GEOM][row[C_REFID]]
        elif objtype[i] in bodies and objid[i] >= 0:
            lookup = bodies[objtype[i]]
            body = objid[i] if lookup is None else lookup[objid[i]]
        if body >= 0:
            row[C_BODY], row[C_ROOT], row[C_WELD] = body, body_rootid[body], body_weldid[body]
        if stype[i] == SENS_JOINTACTFRC:
            row[C_AUX] = ints("jnt_dofadr")[objid[i]]
        elif stype[i] == SENS_TACTILE:
            row[C_AUX] = body_rootid[row[C_WELD]]
        elif objtype[i] == OBJ_SITE:
            row[C_AUX] = ints("site_type")[objid[i]]
    return table


def sensor_acc(m, d, qacc=None) -> None:
    """Acceleration-dependent sensors of every world, as mj_sensorAcc (one launch per
    sensor group present, plus rne_post_constraint's two when a sensor needs it and
    one for the user sensors' cutoff when a callback is set).

    Reads the contacts (ncon, contact_*), the constraint rows (ne, nf, nefc, efc_type,
    efc_id, efc_force), actuator_force, qfrc_actuator, the object frames (xpos, xipos,
    geom/site/cam xpos and xmat), subtree_com, cvel and qacc: run forward (or its
    stages through solve) first. Writes sensordata of acc-stage sensors, and cacc,
    cfrc_int, cfrc_ext when MuJoCo would (an accelerometer, force, torque, framelinacc,
    frameangacc or user sensor). User sensors are zeroed, then the callback of
    set_sensor_callback runs (stage 3). Each value is clipped by its sensor's cutoff
    (apply_cutoff's rule). Nothing is written when sensors are disabled. ``qacc``:
    accelerations to use instead of d.qacc (see rne_post_constraint).
    """
    if m.nsensor == 0 or m.opt.disabled("sensor"):
        return
    plan = _plan(m)
    if plan.rne:
        rne_post_constraint(m, d, qacc)
    if plan.motion is not None:
        launch(_motion_force, m, d, ids=plan.motion, acc_int=plan.acc_int)
    if plan.contacts is not None:
        launch(_contacts, m, d, ids=plan.contacts, acc_int=plan.acc_int,
               pyramidal=m.opt.cone == CONE_PYRAMIDAL)
    if plan.taxel_sensor is not None:
        tac_geom = _tactile_scratch(m, d, plan.ntactile)
        from .collide_sdf import sdf_arrays
        _, sdf_attr, _ = sdf_arrays(m, d)
        launch(_tactile, m, d, octrees=plan.octrees, tactile_ids=plan.tactile,
               taxel_sensor=plan.taxel_sensor, taxel_vert=plan.taxel_vert,
               acc_int=plan.acc_int, tac_geom=tac_geom, tac_shape=plan.tac_shape,
               sdf_attr=sdf_attr, probe=loop_probe())
    if plan.user:
        sensor_user(m, d, STAGE_ACC)
    plugin_sensors(m, d, STAGE_ACC)


def _tactile_scratch(m, d, ntactile):
    """Per (world, tactile sensor) the number of touching geoms, then the geoms (at
    most ngeom), kept on the Data."""
    cached = d.scratch.tactile
    if cached is None or cached.shape[:2] != (d.nworld, ntactile):
        cached = d.scratch.tactile = d.scratch.tag(
            ti.ndarray(ti.i32, shape=(d.nworld, ntactile, 1 + max(1, m.ngeom))))
    return cached
