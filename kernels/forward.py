"""Forward acceleration: net smooth force and unconstrained acceleration."""
import taichi as ti

from .bind import launch
from .smooth import ld_solve

ND = ti.types.ndarray()


@ti.kernel
def _fwd_acceleration(
    # model
    body_rootid: ND, body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND,
    dof_bodyid: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, tree_dofadr: ND,
    tree_dofnum: ND, nv: ti.i32, ntree: ti.i32,
    # data in
    qfrc_passive: ND, qfrc_bias: ND, qfrc_applied: ND, qfrc_actuator: ND, xfrc_applied: ND,
    xipos: ND, subtree_com: ND, cdof: ND, qLD: ND, qLDiagInv: ND,
    # data out
    qfrc_smooth: ND, qacc_smooth: ND,
):
    nworld = qfrc_bias.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        frc = qfrc_passive[worldid, dofid] - qfrc_bias[worldid, dofid]
        frc += qfrc_applied[worldid, dofid]
        frc += qfrc_actuator[worldid, dofid]
        # xfrc_applied at each body's com, mapped by J' (mj_xfrcAccumulate): this dof is
        # in the chain of exactly the bodies in its body's subtree
        bodyid = dof_bodyid[dofid]
        adr = body_subtree_adr[bodyid]
        dof = cdof[worldid, dofid]
        rot = ti.Vector([dof[0], dof[1], dof[2]])
        lin = ti.Vector([dof[3], dof[4], dof[5]])
        for k in range(body_subtree_num[bodyid]):
            b = body_subtree[adr + k]
            xfrc = xfrc_applied[worldid, b]
            if xfrc.any():
                force = ti.Vector([xfrc[0], xfrc[1], xfrc[2]])
                torque = ti.Vector([xfrc[3], xfrc[4], xfrc[5]])
                offset = xipos[worldid, b] - subtree_com[worldid, body_rootid[b]]
                frc += (lin + rot.cross(offset)).dot(force)
                frc += rot.dot(torque)
        qfrc_smooth[worldid, dofid] = frc
        qacc_smooth[worldid, dofid] = frc
    for worldid, treeid in ti.ndrange(nworld, ntree):
        ld_solve(worldid, tree_dofadr[treeid], tree_dofnum[treeid], qLD, qLDiagInv,
                 qacc_smooth, dof_parentid, dof_Madr, dof_simplenum)


def fwd_acceleration(m, d):
    """Net unconstrained force and acceleration (one launch).

    qfrc_smooth = qfrc_passive - qfrc_bias + qfrc_applied + qfrc_actuator
    + J' xfrc_applied; qacc_smooth = inv(M) qfrc_smooth.
    Reads qfrc_passive, qfrc_bias, qfrc_applied, qfrc_actuator, xfrc_applied, xipos,
    subtree_com, cdof, qLD_tree, qLDiagInv; writes qfrc_smooth, qacc_smooth.
    """
    launch(_fwd_acceleration, m, d, qLD=d.qLD_tree)
