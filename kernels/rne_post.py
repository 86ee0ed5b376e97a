"""Post-constraint RNE (mj_rnePostConstraint) and contact forces (mj_contactForce).

``rne_post_constraint`` fills cacc, cfrc_int and cfrc_ext, the com-based body
accelerations and forces after the constraint solver, which MuJoCo computes only when
sensors or the user ask for them. Two launches, parallel over (world, element):

1. ``_cfrc_ext``: each body's applied force (xfrc_applied) moved to its subtree com;
   then every contact in the solver (contact_efc_address >= 0) adds its wrench to both
   bodies, and every connect/weld equality its constraint force, with atomic adds
   (summation order may differ from MuJoCo's by round-off);
2. ``_cacc_cfrc_int``: a thread per (world, body) walks its root-to-body chain for
   cacc (the same additions, in the same order, as MuJoCo's forward recursion), and
   sums cinert cacc + cvel x (cinert cvel) - cfrc_ext over its subtree list for
   cfrc_int (MuJoCo's backward pass accumulates the same terms child by child).

Spatial vectors are com-based (rot:lin), as MuJoCo's. Per-world-able ("*")
parameters are indexed ``worldid % shape[0]``.
"""
import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .consts import CONE_PYRAMIDAL, EQ_CONNECT, EQ_FLEX, EQ_WELD, OBJ_BODY
from .math import cross_force, mul_inert_vec, mul_mat_t, param_row

ND = ti.types.ndarray()


@ti.func
def contact_force_local(worldid, conid, pyramidal: ti.template(), ncon: ti.template(),
                        contact_dim: ti.template(), contact_friction: ti.template(),
                        contact_efc_address: ti.template(), efc_force: ti.template()):
    """6D force:torque of one contact in its contact frame, as mj_contactForce: the
    pyramid's edge forces decoded (mju_decodePyramid) or the elliptic rows copied;
    zero for slots past ncon and contacts outside the solver (efc_address -1)."""
    out = ti.Vector.zero(float, 6)
    adr = contact_efc_address[worldid, conid]
    if conid < ncon[worldid] and adr >= 0:
        dim = contact_dim[worldid, conid]
        if ti.static(pyramidal):
            if dim == 1:
                out[0] = efc_force[worldid, adr]
            else:
                # normal: the sum of all edge forces; tangent i: (edge 2i - edge 2i+1) mu_i
                normal = 0.0
                for i in ti.static(range(10)):
                    if i < 2 * (dim - 1):
                        normal += efc_force[worldid, adr + i]
                out[0] = normal
                mu = contact_friction[worldid, conid]
                for i in ti.static(range(5)):
                    if i < dim - 1:
                        out[i + 1] = (efc_force[worldid, adr + 2 * i]
                                      - efc_force[worldid, adr + 2 * i + 1]) * mu[i]
        else:
            for i in ti.static(range(6)):
                if i < dim:
                    out[i] = efc_force[worldid, adr + i]
    return out


@ti.func
def _force_to(frc, newpos, oldpos):
    """A torque:force wrench applied at oldpos, expressed about newpos (both
    world-oriented), as mju_transformSpatial with flg_force."""
    dif = newpos - oldpos
    f = ti.Vector([frc[3], frc[4], frc[5]])
    c = dif.cross(f)
    return ti.Vector([frc[0] - c[0], frc[1] - c[1], frc[2] - c[2], frc[3], frc[4], frc[5]])


@ti.kernel
def _cfrc_ext(
    # model
    body_rootid: ND, geom_bodyid: ND, site_bodyid: ND, site_pos: ND, eq_type: ND,
    eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND, eq_data: ND, nbody: ti.i32,
    # data in
    xpos: ND, xmat: ND, xipos: ND, subtree_com: ND, xfrc_applied: ND,
    ncon: ND, contact_pos: ND, contact_frame: ND, contact_friction: ND, contact_dim: ND,
    contact_geom: ND, contact_efc_address: ND, ne: ND, efc_id: ND, efc_force: ND,
    # data out
    cfrc_ext: ND,
    # compile-time: pyramidal friction cones
    pyramidal: ti.template(),
):
    nworld = cfrc_ext.shape[0]
    nconmax = contact_dim.shape[1]
    njmax = efc_id.shape[1]
    # applied forces, rearranged as torque:force and moved from xipos to subtree com
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        frc = ti.Vector.zero(float, 6)
        if bodyid > 0:
            xfrc = xfrc_applied[worldid, bodyid]
            nonzero = False
            for k in ti.static(range(6)):
                if xfrc[k] != 0.0:
                    nonzero = True
            if nonzero:
                frc = _force_to(ti.Vector([xfrc[3], xfrc[4], xfrc[5], xfrc[0], xfrc[1], xfrc[2]]),
                                subtree_com[worldid, body_rootid[bodyid]],
                                xipos[worldid, bodyid])
        cfrc_ext[worldid, bodyid] = frc
    # contacts: minus the wrench on body 1, plus on body 2 (flex contacts skipped)
    for worldid, conid in ti.ndrange(nworld, nconmax):
        g0 = contact_geom[worldid, conid][0]
        g1 = contact_geom[worldid, conid][1]
        if conid < ncon[worldid] and contact_efc_address[worldid, conid] >= 0 and \
                g0 >= 0 and g1 >= 0:
            lfrc = contact_force_local(worldid, conid, pyramidal, ncon, contact_dim,
                                       contact_friction, contact_efc_address, efc_force)
            frame = contact_frame[worldid, conid]
            trq = mul_mat_t(frame, ti.Vector([lfrc[3], lfrc[4], lfrc[5]]))
            frc = mul_mat_t(frame, ti.Vector([lfrc[0], lfrc[1], lfrc[2]]))
            wrench = ti.Vector([trq[0], trq[1], trq[2], frc[0], frc[1], frc[2]])
            pos = contact_pos[worldid, conid]
            b0 = geom_bodyid[g0]
            if b0 > 0:
                cfrc_ext[worldid, b0] -= _force_to(
                    wrench, subtree_com[worldid, body_rootid[b0]], pos)
            b1 = geom_bodyid[g1]
            if b1 > 0:
                cfrc_ext[worldid, b1] += _force_to(
                    wrench, subtree_com[worldid, body_rootid[b1]], pos)
    # connect and weld equalities: their constraint force at each body's anchor (plus on
    # body 1, minus on body 2); a thread per first row of each equality's block
    for worldid, efcid in ti.ndrange(nworld, njmax):
        if efcid < ne[worldid]:
            eqid = efc_id[worldid, efcid]
            first = efcid == 0
            if not first:
                first = efc_id[worldid, efcid - 1] != eqid
            etype = eq_type[eqid]
            if first and (etype == EQ_CONNECT or etype == EQ_WELD):
                weld = etype == EQ_WELD
                wrench = ti.Vector.zero(float, 6)
                for k in ti.static(range(3)):
                    wrench[3 + k] = efc_force[worldid, efcid + k]
                    if weld:
                        wrench[k] = efc_force[worldid, efcid + 3 + k]
                data = eq_data[param_row(worldid, eq_data), eqid]
                body_semantic = eq_objtype[eqid] == OBJ_BODY
                for side in ti.static(range(2)):
                    obj = eq_obj1id[eqid] if side == 0 else eq_obj2id[eqid]
                    bodyid = obj
                    # body anchors: connect (anchor1, anchor2), weld (anchor2, anchor1)
                    first_anchor = weld if side == 0 else not weld
                    offset = ti.Vector([data[0], data[1], data[2]])
                    if first_anchor:
                        offset = ti.Vector([data[3], data[4], data[5]])
                    if not body_semantic:
                        bodyid = site_bodyid[obj]
                        offset = site_pos[param_row(worldid, site_pos), obj]
                    if bodyid > 0:
                        pos = xmat[worldid, bodyid] @ offset + xpos[worldid, bodyid]
                        frc = _force_to(wrench, subtree_com[worldid, body_rootid[bodyid]], pos)
                        if side == 0:
                            cfrc_ext[worldid, bodyid] += frc
                        else:
                            cfrc_ext[worldid, bodyid] -= frc


@ti.kernel
def _cacc_cfrc_int(
    # model
    body_parentid: ND, body_depth: ND, body_dofnum: ND, body_dofadr: ND,
    body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND, nbody: ti.i32,
    gx: float, gy: float, gz: float,
    # data in
    qvel: ND, qacc: ND, cdof: ND, cdof_dot: ND, cinert: ND, cvel: ND, cfrc_ext: ND,
    # data out
    cacc: ND, cfrc_int: ND,
):
    nworld = cacc.shape[0]
    # cacc = cacc_parent + cdof_dot qvel + cdof qacc, the world accelerating at -gravity
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        acc = ti.Vector([0.0, 0.0, 0.0, -gx, -gy, -gz])
        depth = body_depth[bodyid]
        for level in range(1, depth + 1):
            b = bodyid
            for _ in range(depth - level):
                b = body_parentid[b]
            bda = body_dofadr[b]
            tmp = ti.Vector.zero(float, 6)
            for j in range(body_dofnum[b]):
                tmp += cdof_dot[worldid, bda + j] * qvel[worldid, bda + j]
            acc += tmp
            tmp = ti.Vector.zero(float, 6)
            for j in range(body_dofnum[b]):
                tmp += cdof[worldid, bda + j] * qacc[worldid, bda + j]
            acc += tmp
        cacc[worldid, bodyid] = acc
    # cfrc_int: the subtree's cinert cacc + cvel x (cinert cvel) - cfrc_ext
    for worldid, bodyid in ti.ndrange(nworld, nbody):
        adr = body_subtree_adr[bodyid]
        total = ti.Vector.zero(float, 6)
        for k in range(body_subtree_num[bodyid]):
            b = body_subtree[adr + k]
            if b > 0:
                inert = cinert[worldid, b]
                vel = cvel[worldid, b]
                frc = mul_inert_vec(inert, cacc[worldid, b])
                frc += cross_force(vel, mul_inert_vec(inert, vel))
                total += frc - cfrc_ext[worldid, b]
        cfrc_int[worldid, bodyid] = total


def _check(m) -> None:
    eq_type = np.asarray(m.arrays.eq_type).reshape(-1)[:m.neq]
    if np.any(eq_type == EQ_FLEX):
        raise NotImplementedError("rne_post_constraint: flex equality constraints")


def rne_post_constraint(m, d, qacc=None) -> None:
    """com-based accelerations and forces after the constraint solver, as
    mj_rnePostConstraint (two launches). ``qacc``: the (nworld, nv) accelerations to
    use instead of d.qacc (inverse's discrete-time case reads mj_discreteAcc's).

    Reads xfrc_applied, xpos, xmat, xipos, subtree_com, cdof, cdof_dot, cinert, cvel,
    qvel, qacc, the contacts (ncon, contact_pos/frame/friction/dim/geom/efc_address)
    and the constraint rows (ne, efc_id, efc_force): run ``forward`` (or its stages
    through ``solve``) first. Writes cacc (world: -gravity, unless gravity is
    disabled), cfrc_ext (applied forces, contacts, connect and weld equalities; zero
    on the world body) and cfrc_int (force on each body from its parent; the world
    body's is the sum over its children).
    """
    _check(m)
    launch(_cfrc_ext, m, d, pyramidal=m.opt.cone == CONE_PYRAMIDAL)
    g = (0.0, 0.0, 0.0) if m.opt.disabled("gravity") else tuple(float(x) for x in m.opt.gravity)
    gx, gy, gz = g
    launch(_cacc_cfrc_int, m, d, gx=gx, gy=gy, gz=gz,
           qacc=d.qacc if qacc is None else qacc)


@ti.kernel
def _contact_force(
    # data in
    ncon: ND, contact_frame: ND, contact_friction: ND, contact_dim: ND,
    contact_efc_address: ND, efc_force: ND,
    # out
    out: ND,
    # compile-time: pyramidal friction cones; runtime: 1 to rotate into the world frame
    pyramidal: ti.template(), world_frame: ti.i32,
):
    for worldid, conid in ti.ndrange(out.shape[0], out.shape[1]):
        lfrc = contact_force_local(worldid, conid, pyramidal, ncon, contact_dim,
                                   contact_friction, contact_efc_address, efc_force)
        if world_frame:
            frame = contact_frame[worldid, conid]
            frc = mul_mat_t(frame, ti.Vector([lfrc[0], lfrc[1], lfrc[2]]))
            trq = mul_mat_t(frame, ti.Vector([lfrc[3], lfrc[4], lfrc[5]]))
            lfrc = ti.Vector([frc[0], frc[1], frc[2], trq[0], trq[1], trq[2]])
        out[worldid, conid] = lfrc


def contact_force(m, d, world_frame: bool = False) -> np.ndarray:
    """Force and torque of every contact of every world, as mj_contactForce: a numpy
    array (nworld, nconmax, 6) of (normal, tangent 1, tangent 2, spin torque, rolling
    torques) in each contact's frame (``contact_frame`` rows: normal, tangents), the
    force the contact applies to its second geom (the first gets the opposite).

    Entries past ``ncon[w]`` and of contacts outside the solver (contact_efc_address
    -1: excluded, in the gap, no dofs) are zero, as are the components past a
    contact's dim. Pyramidal cones are decoded into normal and friction forces
    (mju_decodePyramid); elliptic rows are copied. ``world_frame=True`` rotates both
    the force (first 3) and the torque (last 3) into world coordinates (what
    mj_rnePostConstraint applies to the bodies).

    Reads ncon, contact_frame, contact_friction, contact_dim, contact_efc_address and
    efc_force (run ``forward``, or the stages through ``solve``, first).
    """
    fdtype = config.float_dtype()
    out = ti.Vector.ndarray(6, fdtype, shape=(d.nworld, max(1, d.nconmax)))
    launch(_contact_force, m, d, out=out, pyramidal=m.opt.cone == CONE_PYRAMIDAL,
           world_frame=int(bool(world_frame)))
    return out.to_numpy().astype(np.float64)[:, :d.nconmax]
