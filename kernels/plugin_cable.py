"""The cable elasticity plugin's kernels (MuJoCo's plugin/elasticity/cable.cc,
mujoco.elasticity.cable), batched over worlds and cable bodies.

Per cable body the host plan (tiphys/plugin/cable.py) gives ``cable_body`` (body id),
``cable_flags`` (CABLE_PREV: it bends against the previous body; CABLE_NEXT: a next
body bends against it; CABLE_STIFF: some stiffness is non-zero), ``cable_prm`` (twist,
two bending stiffnesses, the rest distance to the previous body, the reference
curvature omega0) and ``cable_qadr`` (qpos address of its joint's quaternion), and
per body ``body_cable`` (its cable slot, -1 for others). The next body of a cable body
is the next slot.

Cable::Compute applies each body's torque with mj_applyFT (a pure torque: only the
rotational rows of the body's Jacobian, i.e. cdof's angular part of every dof on its
path to the root). Here one launch computes the torques of all bodies and a second
adds, for every dof, its angular cdof dotted with the sum of the torques of the cable
bodies in its body's subtree; the sum is MuJoCo's, in another order.
"""
import taichi as ti

from .consts import MINVAL, PI
from .math import param_row

ND = ti.types.ndarray()

CABLE_PREV = 1
CABLE_NEXT = 2
CABLE_STIFF = 4


@ti.func
def _mul_quat(a, b):
    """mju_mulQuat."""
    return ti.Vector([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                      a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                      a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                      a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])


@ti.func
def _rot_vec_quat(v, q):
    """mju_rotVecQuat (its formula; the zero-vector and identity cases agree)."""
    t = ti.Vector([q[0] * v[0] + q[2] * v[2] - q[3] * v[1],
                   q[0] * v[1] + q[3] * v[0] - q[1] * v[2],
                   q[0] * v[2] + q[1] * v[1] - q[2] * v[0]])
    return ti.Vector([v[0] + 2 * (q[2] * t[2] - q[3] * t[1]),
                      v[1] + 2 * (q[3] * t[0] - q[1] * t[2]),
                      v[2] + 2 * (q[1] * t[1] - q[2] * t[0])])


@ti.func
def _quat2vel(q):
    """mju_quat2Vel with dt = 1: the rotation vector of q."""
    axis = ti.Vector([q[1], q[2], q[3]])
    sin_a_2 = ti.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    unit = ti.Vector([1.0, 0.0, 0.0])
    if sin_a_2 >= MINVAL:
        unit = axis * (1.0 / sin_a_2)
    speed = 2 * ti.atan2(sin_a_2, q[0])
    if speed > PI:
        speed -= 2 * PI
    return unit * speed


@ti.func
def _joint_quat(worldid, bodyid, qadr, body_quat: ti.template(), qpos: ti.template()):
    """The body's orientation relative to its parent: body_quat times its joint's."""
    jq = ti.Vector([qpos[worldid, qadr + k] for k in ti.static(range(4))])
    return _mul_quat(body_quat[param_row(worldid, body_quat), bodyid], jq)


@ti.func
def _stress(prm: ti.template(), slot, quat):
    """LocalStress before its pull-back: -k (omega - omega0) / L."""
    omega = _quat2vel(quat)
    return ti.Vector([-prm[slot, k] * (omega[k] - prm[slot, 4 + k]) / prm[slot, 3]
                      for k in ti.static(range(3))])


@ti.kernel
def cable_torque(
    # model
    body_quat: ND,
    # plugin plan
    cable_body: ND, cable_flags: ND, cable_prm: ND, cable_qadr: ND, ncable: ti.i32,
    # data in
    qpos: ND, xquat: ND,
    # data out
    cable_torque_out: ND,
):
    """Cable::Compute's torque on each cable body, in world coordinates."""
    for worldid, slot in ti.ndrange(qpos.shape[0], ncable):
        flags = cable_flags[slot]
        bodyid = cable_body[slot]
        lfrc = ti.Vector([0.0, 0.0, 0.0])
        if flags & CABLE_STIFF:
            if flags & CABLE_PREV:
                # its bend against the previous body, pulled back into its own frame
                q = _joint_quat(worldid, bodyid, cable_qadr[slot], body_quat, qpos)
                neg = ti.Vector([q[0], -q[1], -q[2], -q[3]])
                lfrc += _rot_vec_quat(_stress(cable_prm, slot, q), neg)
            if flags & CABLE_NEXT:
                q = _joint_quat(worldid, cable_body[slot + 1], cable_qadr[slot + 1],
                                body_quat, qpos)
                lfrc -= _stress(cable_prm, slot + 1, q)
        cable_torque_out[worldid, slot] = _rot_vec_quat(lfrc, xquat[worldid, bodyid])


@ti.kernel
def cable_apply(
    # model
    dof_bodyid: ND, body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND,
    nv: ti.i32,
    # plugin plan
    body_cable: ND,
    # data in
    cdof: ND, cable_torque_in: ND,
    # data out
    qfrc_passive: ND,
):
    """qfrc_passive += J_rot' torque of every cable body (mj_applyFT of pure torques)."""
    for worldid, dofid in ti.ndrange(qfrc_passive.shape[0], nv):
        bodyid = dof_bodyid[dofid]
        adr = body_subtree_adr[bodyid]
        total = ti.Vector([0.0, 0.0, 0.0])
        for k in range(body_subtree_num[bodyid]):
            slot = body_cable[body_subtree[adr + k]]
            if slot >= 0:
                total += cable_torque_in[worldid, slot]
        dof = cdof[worldid, dofid]
        qfrc_passive[worldid, dofid] += dof[0] * total[0] + dof[1] * total[1] + \
            dof[2] * total[2]
