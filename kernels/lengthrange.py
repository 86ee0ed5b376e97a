"""Actuator length-range simulation: the per-step work of MuJoCo's evalAct (setconst).

World ``w`` pushes actuator ``lr_actuator[w // 2]`` toward its shortest (``w % 2 == 0``)
or longest (``w % 2 == 1``) length. The host loop (tiphys/lengthrange.py) runs, each
step: ``lengthrange_decay``, step1, ``lengthrange_force``, step2.
"""
import taichi as ti

from .bind import launch
from .consts import MINVAL
from .smooth import ld_solve

ND = ti.types.ndarray()



@ti.kernel
def _lengthrange_force(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    ntree: ti.i32, nv: ti.i32,
    # length-range set-up
    lr_actuator: ND, accel: float, maxforce: float, record: ti.i32,
    # data in
    actuator_moment_dense: ND, actuator_length: ND, qLD: ND, qLDiagInv: ND,
    # data out
    qfrc_applied: ND, lr_acc: ND, lr_min: ND, lr_max: ND, lr_updated: ND,
):
    nworld = qfrc_applied.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        lr_acc[worldid, dofid] = actuator_moment_dense[worldid, lr_actuator[worldid // 2],
                                                       dofid]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        ld_solve(worldid, tree_dofadr[treeid], tree_dofnum[treeid], qLD, qLDiagInv, lr_acc,
                 dof_parentid, dof_Madr, dof_simplenum)
    for worldid in range(nworld):
        actid = lr_actuator[worldid // 2]
        # the force along the moment whose acceleration inv(M) force has norm accel
        nrm = 0.0
        for dofid in range(nv):
            nrm += lr_acc[worldid, dofid] * lr_acc[worldid, dofid]
        scale = (2.0 * (worldid % 2) - 1.0) * accel / ti.max(MINVAL, ti.sqrt(nrm))
        nrm = 0.0
        for dofid in range(nv):
            frc = actuator_moment_dense[worldid, actid, dofid] * scale
            qfrc_applied[worldid, dofid] = frc
            nrm += frc * frc
        nrm = ti.sqrt(nrm)
        if maxforce > 0.0 and nrm > maxforce:
            cap = maxforce / ti.max(MINVAL, nrm)
            for dofid in range(nv):
                qfrc_applied[worldid, dofid] *= cap
        if record != 0:
            length = actuator_length[worldid, actid]
            if length < lr_min[worldid] or lr_updated[worldid] == 0:
                lr_min[worldid] = length
            if length > lr_max[worldid] or lr_updated[worldid] == 0:
                lr_max[worldid] = length
            lr_updated[worldid] = 1


def lengthrange_force(m, d, lr_actuator, accel: float, maxforce: float, record: bool,
                      lr_acc, lr_min, lr_max, lr_updated):
    """qfrc_applied for this step of every length-range world, as evalAct (one launch).

    qfrc_applied = moment * (+-accel / |inv(M) moment|), capped at norm ``maxforce``
    (when positive); with ``record``, the actuator length joins the world's
    [lr_min, lr_max] (lr_updated: recorded before). Run after step1.
    Reads actuator_moment_dense, actuator_length, qLD_tree, qLDiagInv; writes
    qfrc_applied and the scratch lr_acc (nworld, nv).
    """
    launch(_lengthrange_force, m, d, lr_actuator=lr_actuator, accel=float(accel),
           maxforce=float(maxforce), record=int(record), qLD=d.qLD_tree, lr_acc=lr_acc,
           lr_min=lr_min, lr_max=lr_max, lr_updated=lr_updated)


@ti.kernel
def _lengthrange_decay(nv: ti.i32, factor: float, qvel: ND):
    for worldid, dofid in ti.ndrange(qvel.shape[0], nv):
        qvel[worldid, dofid] *= factor


def lengthrange_decay(m, d, factor: float):
    """qvel *= factor: evalAct's velocity reduction, before step1 (one launch)."""
    launch(_lengthrange_decay, m, d, factor=float(factor))
