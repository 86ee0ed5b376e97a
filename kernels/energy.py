"""Potential and kinetic energy (mj_energyPos, mj_energyVel).

``energy_pos`` writes ``energy[:, 0]``: minus the work of gravity on every body's com,
plus the joint springs (slide and hinge: 1/2 k dq^2; ball and the rotation of a free
joint: 1/2 k |subQuat(qpos, qpos_spring)|^2; a free joint's translation: 1/2 k |dx|^2),
the tendon springs (1/2 k d^2, d the distance of ten_length outside the lengthspring
deadband) and the edge springs of 1D flexes (1/2 k (length0 - length)^2; as MuJoCo,
the 2D/3D elasticity has no energy term). One launch: a loop that clears the energy,
then loops over (world, body), (world, joint), (world, tendon) and (world, flex edge)
that add their terms atomically (the summation order differs from MuJoCo's serial sum
by round-off only).

``energy_vel`` writes ``energy[:, 1] = 1/2 qvel' M qvel`` from qM's sparse rows: one
launch, a thread per (world, tree) adding its tree's share (trees do not couple in M).

Per-world-able ("*") parameters are indexed ``worldid % shape[0]``.
"""
import taichi as ti

from .bind import launch
from .consts import JNT_BALL, JNT_FREE
from .flex import flex_of
from .math import param_row, sub_quat
from .sleep import S_AWAKE, active, tendon_state

ND = ti.types.ndarray()



@ti.kernel
def _energy_pos(
    # model
    body_mass: ND, jnt_type: ND, jnt_qposadr: ND, jnt_stiffness: ND, qpos_spring: ND,
    tendon_stiffness: ND, tendon_lengthspring: ND, flex_dim: ND, flex_edgeadr: ND,
    flex_edgenum: ND, flex_edgestiffness: ND, flex_rigid: ND, flexedge_rigid: ND,
    flexedge_length0: ND, nbody: ti.i32, njnt: ti.i32, ntendon: ti.i32, nflex: ti.i32,
    nflexedge: ti.i32, gx: float, gy: float, gz: float,
    # data in
    xipos: ND, qpos: ND, ten_length: ND, flexedge_length: ND,
    # data out
    energy: ND,
    # compile-time: gravity and springs enabled
    gravity: ti.template(), springs: ti.template(),
    # sleep: where some body sleeps, springs of joints of bodies and of tendons that are
    # not awake are left out (mj_energyPos)
    sleep: ti.template(), jnt_bodyid: ND, body_awake: ND, nbody_awake: ND,
    tendon_treenum: ND, tendon_treeid: ND, tree_awake: ND,
):
    nworld = energy.shape[0]
    for worldid in range(nworld):
        energy[worldid][0] = 0.0
    if ti.static(gravity):
        g = ti.Vector([gx, gy, gz])
        for worldid, bodyid in ti.ndrange(nworld, nbody):
            if bodyid > 0:
                mass = body_mass[param_row(worldid, body_mass), bodyid]
                energy[worldid][0] -= mass * g.dot(xipos[worldid, bodyid])
    if ti.static(springs):
        for worldid, jntid in ti.ndrange(nworld, njnt):
            stiffness = jnt_stiffness[param_row(worldid, jnt_stiffness), jntid]
            if ti.static(sleep):
                if nbody_awake[worldid] < nbody and \
                        body_awake[worldid, jnt_bodyid[jntid]] != S_AWAKE:
                    stiffness = 0.0
            if stiffness != 0.0:
                padr = jnt_qposadr[jntid]
                jtype = jnt_type[jntid]
                ws = param_row(worldid, qpos_spring)
                e = 0.0
                if jtype == JNT_FREE:
                    dif = ti.Vector([qpos[worldid, padr + k] - qpos_spring[ws, padr + k]
                                     for k in ti.static(range(3))])
                    e += 0.5 * stiffness * dif.dot(dif)
                    padr += 3
                if jtype == JNT_FREE or jtype == JNT_BALL:
                    # MuJoCo normalizes a copy it then ignores: the raw quaternion is used
                    q = ti.Vector([qpos[worldid, padr + k] for k in ti.static(range(4))])
                    q0 = ti.Vector([qpos_spring[ws, padr + k] for k in ti.static(range(4))])
                    dif = sub_quat(q, q0)
                    e += 0.5 * stiffness * dif.dot(dif)
                else:
                    dq = qpos[worldid, padr] - qpos_spring[ws, padr]
                    e += 0.5 * stiffness * dq * dq
                energy[worldid][0] += e
        for worldid, tenid in ti.ndrange(nworld, ntendon):
            stiffness = tendon_stiffness[param_row(worldid, tendon_stiffness), tenid]
            spring = tendon_lengthspring[param_row(worldid, tendon_lengthspring), tenid]
            length = ten_length[worldid, tenid]
            displacement = 0.0
            if length > spring[1]:
                displacement = spring[1] - length
            elif length < spring[0]:
                displacement = spring[0] - length
            if ti.static(sleep):
                if nbody_awake[worldid] < nbody and tendon_state(
                        worldid, tenid, tendon_treenum, tendon_treeid,
                        tree_awake) != S_AWAKE:
                    displacement = 0.0
            if displacement != 0.0:
                energy[worldid][0] += 0.5 * stiffness * displacement * displacement
        # edge springs of 1D flexes (MuJoCo leaves out the 2D/3D elasticity)
        for worldid, edgeid in ti.ndrange(nworld, nflexedge):
            f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
            stiffness = flex_edgestiffness[f]
            if flex_rigid[f] == 0 and stiffness != 0.0 and flex_dim[f] == 1 and \
                    flexedge_rigid[edgeid] == 0:
                displacement = flexedge_length0[edgeid] - flexedge_length[worldid, edgeid]
                energy[worldid][0] += 0.5 * stiffness * displacement * displacement


@ti.kernel
def _energy_vel(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, ntree: ti.i32,
    # data in
    qM: ND, qvel: ND,
    # data out
    energy: ND,
):
    nworld = energy.shape[0]
    for worldid in range(nworld):
        energy[worldid][1] = 0.0
    # qvel' M qvel over one tree: diagonal terms once, each ancestor entry twice
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        total = 0.0
        for i in range(start, start + tree_dofnum[treeid]):
            madr = dof_Madr[i]
            vi = qvel[worldid, i]
            row = qM[worldid, madr] * vi
            j = dof_parentid[i]
            adr = madr + 1
            while j >= 0:
                row += 2.0 * qM[worldid, adr] * qvel[worldid, j]
                adr += 1
                j = dof_parentid[j]
            total += row * vi
        energy[worldid][1] += 0.5 * total


def energy_pos(m, d) -> None:
    """Potential energy of every world, as mj_energyPos (one launch).

    Reads xipos (kinematics), qpos and ten_length (tendon); writes energy[:, 0]: the
    gravitational potential -sum m_i g.xipos_i (unless gravity is disabled) plus the
    joint and tendon spring energies (unless springs are disabled). MuJoCo calls it
    from forward when <flag energy="enable"/> is set; it can be called on its own
    after the position stages.
    """
    opt = m.opt
    gravity = not opt.disabled("gravity")
    springs = not opt.disabled("spring")
    gx, gy, gz = (float(x) for x in opt.gravity)
    launch(_energy_pos, m, d, gx=gx, gy=gy, gz=gz, gravity=gravity, springs=springs,
           sleep=active(m))


def energy_vel(m, d) -> None:
    """Kinetic energy of every world, 1/2 qvel' M qvel, as mj_energyVel (one launch).

    Reads qM (crb) and qvel; writes energy[:, 1].
    """
    launch(_energy_vel, m, d)
