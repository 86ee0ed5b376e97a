"""Passive forces: joint springs, dof dampers, body gravity compensation (mj_passive);
tendon and flex spring-dampers (kernels/flex_passive.py) added after them.

Fluid forces (density or viscosity > 0) come from kernels/fluid.py.
"""
import taichi as ti

from . import callbacks
from .bind import launch
from .consts import JNT_BALL, JNT_FREE
from .flex_passive import flex_passive
from .fluid import fluid
from .math import jnt_ndof, param_row, quat_normalize, sub_quat

ND = ti.types.ndarray()


@ti.kernel
def _passive(
    # model
    jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND, jnt_actgravcomp: ND,
    jnt_stiffness: ND, qpos_spring: ND, dof_bodyid: ND, dof_jntid: ND, dof_damping: ND,
    body_rootid: ND, body_mass: ND, body_gravcomp: ND, body_subtree_adr: ND,
    body_subtree_num: ND, body_subtree: ND, njnt: ti.i32, nv: ti.i32,
    has_spring: ti.i32, has_damper: ti.i32, has_gravcomp: ti.i32,
    gx: float, gy: float, gz: float,
    # data in
    qpos: ND, qvel: ND, xipos: ND, subtree_com: ND, cdof: ND,
    # data out
    qfrc_spring: ND, qfrc_damper: ND, qfrc_gravcomp: ND, qfrc_passive: ND,
):
    nworld = qpos.shape[0]
    for worldid, jntid in ti.ndrange(nworld, njnt):
        stiffness = jnt_stiffness[param_row(worldid, jnt_stiffness), jntid]
        padr = jnt_qposadr[jntid]
        dadr = jnt_dofadr[jntid]
        jtype = jnt_type[jntid]
        spring_ref = qpos_spring.shape[0]
        if has_spring == 0 or stiffness == 0.0:
            for k in range(jnt_ndof(jtype)):
                qfrc_spring[worldid, dadr + k] = 0.0
        else:
            if jtype == JNT_FREE:
                for k in ti.static(range(3)):
                    qfrc_spring[worldid, dadr + k] = -stiffness * (
                        qpos[worldid, padr + k] - qpos_spring[worldid % spring_ref, padr + k])
                padr += 3
                dadr += 3
                jtype = 1
            if jtype == JNT_BALL:
                quat = quat_normalize(ti.Vector([
                    qpos[worldid, padr], qpos[worldid, padr + 1], qpos[worldid, padr + 2],
                    qpos[worldid, padr + 3]]))
                ref = ti.Vector([qpos_spring[worldid % spring_ref, padr + k]
                                 for k in ti.static(range(4))])
                dif = sub_quat(quat, ref)
                for k in ti.static(range(3)):
                    qfrc_spring[worldid, dadr + k] = -stiffness * dif[k]
            else:
                qfrc_spring[worldid, dadr] = -stiffness * (
                    qpos[worldid, padr] - qpos_spring[worldid % spring_ref, padr])
    for worldid, dofid in ti.ndrange(nworld, nv):
        damping = dof_damping[param_row(worldid, dof_damping), dofid]
        damper = 0.0
        if has_damper != 0 and damping != 0.0:
            damper = -damping * qvel[worldid, dofid]
        qfrc_damper[worldid, dofid] = damper
        # gravity compensation: sum of J' f over the bodies whose chain holds this dof
        grav = 0.0
        bodyid = dof_bodyid[dofid]
        if has_gravcomp != 0:
            adr = body_subtree_adr[bodyid]
            dof = cdof[worldid, dofid]
            rot = ti.Vector([dof[0], dof[1], dof[2]])
            lin = ti.Vector([dof[3], dof[4], dof[5]])
            for k in range(body_subtree_num[bodyid]):
                b = body_subtree[adr + k]
                gc = body_gravcomp[param_row(worldid, body_gravcomp), b]
                if gc != 0.0:
                    scale = -(body_mass[param_row(worldid, body_mass), b] * gc)
                    force = ti.Vector([gx, gy, gz]) * scale
                    offset = xipos[worldid, b] - subtree_com[worldid, body_rootid[b]]
                    grav += (lin + rot.cross(offset)).dot(force)
        qfrc_gravcomp[worldid, dofid] = grav
        total = qfrc_spring[worldid, dofid] + damper
        # MuJoCo adds gravcomp only on the joints of gravcomp bodies (not via actuators)
        if body_gravcomp[param_row(worldid, body_gravcomp), bodyid] != 0.0 and \
                jnt_actgravcomp[dof_jntid[dofid]] == 0:
            total += grav
        qfrc_passive[worldid, dofid] = total


def passive(m, d):
    """Passive forces: joint springs (incl. ball/free quaternion springs), dof dampers,
    body gravity compensation; honours the spring/damper/gravity disable flags.

    Tendon springs/dampers are added by ``tendon_passive`` (ten_length, ten_velocity,
    ten_J must be current), the flexes' bending, elasticity and edge spring-dampers by
    ``flex_passive`` (kernels/flex_passive.py; flex and flex_velocity must be current).
    Reads qpos, qvel, xipos, subtree_com, cdof; writes qfrc_spring, qfrc_damper,
    qfrc_gravcomp, qfrc_passive; fluid forces (kernels/fluid.py) write qfrc_fluid;
    passive plugins (``plugin_passive``) add to qfrc_passive last.
    """
    opt = m.opt
    has_spring = not opt.disabled("spring")
    has_damper = not opt.disabled("damper")
    g = (0.0, 0.0, 0.0) if opt.disabled("gravity") else tuple(float(x) for x in opt.gravity)
    # mj_gravcomp runs only for a model compiled with gravcomp bodies (ngravcomp)
    has_gravcomp = any(g) and (has_spring or has_damper) and m.ngravcomp > 0
    gx, gy, gz = g
    launch(_passive, m, d, has_spring=int(has_spring), has_damper=int(has_damper),
           has_gravcomp=int(has_gravcomp), gx=gx, gy=gy, gz=gz)
    tendon_passive(m, d)
    flex_passive(m, d)
    if has_spring or has_damper:
        fluid(m, d)
        callbacks.run("passive", m, d)  # mjcb_passive (not with both disabled)
        plugin_passive(m, d)


PLUGIN_PASSIVE = 4  # mjPLUGIN_PASSIVE (tiphys.plugin.PASSIVE)


def plugin_passive(m, d):
    """The passive plugins' hooks, in instance order, after every built-in passive force
    and the passive callback (mj_passive calls their compute last); each adds to
    qfrc_passive. The hooks are those of ``m.plugins`` (duck-typed: kernels/ does not
    import tiphys)."""
    for plugin in getattr(m, "plugins", ()):
        if plugin.capabilities & PLUGIN_PASSIVE:
            plugin.passive(m, d)


@ti.kernel
def _tendon_passive(
    # model
    tendon_stiffness: ND, tendon_damping: ND, tendon_lengthspring: ND, ntendon: ti.i32,
    nv: ti.i32, has_spring: ti.i32, has_damper: ti.i32,
    # data in
    ten_length: ND, ten_velocity: ND, ten_J: ND,
    # data in/out
    qfrc_spring: ND, qfrc_damper: ND, qfrc_passive: ND,
):
    nworld = ten_length.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        spring = 0.0
        damper = 0.0
        for tenid in range(ntendon):
            jac = ten_J[worldid, tenid, dofid]
            if jac != 0.0:
                stiffness = tendon_stiffness[param_row(worldid, tendon_stiffness), tenid]
                damping = tendon_damping[param_row(worldid, tendon_damping), tenid]
                if has_spring != 0 and stiffness != 0.0:
                    length = ten_length[worldid, tenid]
                    rng = tendon_lengthspring[param_row(worldid, tendon_lengthspring), tenid]
                    if length > rng[1]:
                        spring += jac * (stiffness * (rng[1] - length))
                    elif length < rng[0]:
                        spring += jac * (stiffness * (rng[0] - length))
                if has_damper != 0 and damping != 0.0:
                    damper += jac * (-damping * ten_velocity[worldid, tenid])
        qfrc_spring[worldid, dofid] += spring
        qfrc_damper[worldid, dofid] += damper
        qfrc_passive[worldid, dofid] += spring + damper


def tendon_passive(m, d):
    """Tendon springs (with the lengthspring deadband) and dampers mapped by ten_J; adds
    to qfrc_spring, qfrc_damper and qfrc_passive (one launch, after ``passive``).

    Reads ten_length, ten_velocity, ten_J.
    """
    import numpy as np
    a = m.arrays
    has_spring = not m.opt.disabled("spring")
    has_damper = not m.opt.disabled("damper")
    if m.ntendon == 0 or not (
            (has_spring and np.any(np.asarray(a.tendon_stiffness) != 0)) or
            (has_damper and np.any(np.asarray(a.tendon_damping) != 0))):
        return
    launch(_tendon_passive, m, d, has_spring=int(has_spring), has_damper=int(has_damper))
