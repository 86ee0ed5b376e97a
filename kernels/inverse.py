"""Inverse dynamics: the generalized force that produces a given acceleration.

mj_inverse's acceleration-dependent part (after the position and velocity stages):

- with <flag invdiscrete="enable"/>, mj_discreteAcc first turns the given qacc, read as
  the discrete-time acceleration of the model's integrator ((qvel_next - qvel) / h),
  into the continuous-time one: qacc_c = inv(M) A qacc, A = M + h diag(dof_damping)
  (Euler, when some dof has damping and eulerdamp is on), M - h qDeriv (implicit, the
  full derivative incl. RNE), or its lower part mirrored, M's reduced sparsity
  (implicitfast); RK4 has no discrete inverse (MuJoCo errors too);
- mj_invConstraint: jar = J qacc - aref, then MuJoCo's constraint update (the
  solver's ``_constraint_update``: equality rows quadratic, friction loss rows linear
  outside +-R floss, limits and pyramidal contacts one-sided, elliptic cones top /
  bottom / middle zone) gives efc_state and efc_force; qfrc_constraint = J' efc_force;
- qfrc_inverse = M qacc + qfrc_bias - qfrc_passive - qfrc_constraint.

mj_compareFwdInv runs the same on the state forward left, and measures how far the
inverse is from forward's constraint force and applied forces.
"""
import numpy as np
import taichi as ti

from .bind import launch
from .consts import INT_EULER, INT_IMPLICIT, INT_IMPLICITFAST, INT_RK4
from .derivative import smooth_vel
from .smooth import ld_solve, mul_m_tree_add
from .solver import E_JAREF, E_N, I_N, _constraint_update, row_params
from .math import param_row

ND = ti.types.ndarray()

# how mj_discreteAcc maps the discrete acceleration (mjtIntegrator values)
DISCRETE_NONE = -1
DISCRETE_EULER = INT_EULER
DISCRETE_IMPLICIT = INT_IMPLICIT
DISCRETE_IMPLICITFAST = INT_IMPLICITFAST


@ti.kernel
def _discrete_acc(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    dof_damping: ND, ntree: ti.i32, timestep: float,
    # data in: qM, its factor, qDeriv in qM's layout (lo = qDeriv(i, j), up = qDeriv(j, i)
    # for j = i or an ancestor of i), the discrete-time acceleration
    qM: ND, qLD: ND, qLDiagInv: ND, qDeriv_lo: ND, qDeriv_up: ND, qacc: ND,
    # out: the continuous-time acceleration
    qacc_c: ND,
    mode: ti.template(),
):
    nworld = qM.shape[0]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        num = tree_dofnum[treeid]
        for i in range(start, start + num):
            qacc_c[worldid, i] = 0.0
        if ti.static(mode == DISCRETE_EULER):
            mul_m_tree_add(worldid, start, num, qM, qacc, qacc_c, dof_Madr, dof_parentid)
            for i in range(start, start + num):
                damping = dof_damping[param_row(worldid, dof_damping), i]
                qacc_c[worldid, i] += timestep * damping * qacc[worldid, i]
        else:
            for i in range(start, start + num):
                madr = dof_Madr[i]
                adr = madr
                j = i
                while j >= 0:  # (i, j): the diagonal, then i's ancestors
                    lower = qM[worldid, adr]
                    upper = lower
                    if ti.static(mode == DISCRETE_IMPLICIT):
                        lower -= timestep * qDeriv_lo[worldid, adr]
                        upper -= timestep * qDeriv_up[worldid, adr]
                    elif adr == madr or dof_simplenum[i] == 0:
                        # implicitfast: qDeriv's lower part on M's reduced sparsity (a
                        # simple dof's row has only its diagonal), used symmetrically
                        lower -= timestep * qDeriv_lo[worldid, adr]
                        upper = lower
                    qacc_c[worldid, i] += lower * qacc[worldid, j]
                    if j != i:
                        qacc_c[worldid, j] += upper * qacc[worldid, i]
                    adr += 1
                    j = dof_parentid[j]
        ld_solve(worldid, start, num, qLD, qLDiagInv, qacc_c, dof_parentid, dof_Madr,
                 dof_simplenum)


@ti.kernel
def _inverse_rows(
    nv: ti.i32,
    # data in
    ne: ND, nf: ND, nefc: ND, efc_type: ND, efc_id: ND, efc_J: ND, efc_D: ND, efc_R: ND,
    efc_frictionloss: ND, efc_aref: ND, contact_mu: ND, contact_friction: ND,
    contact_dim: ND, contact_efc_address: ND, qacc: ND, efc_J_sparse: ND,
    efc_J_colind: ND, efc_J_rowadr: ND, efc_J_rownnz: ND,
    # scratch: the solver's row view (jar in row E_JAREF)
    se: ND, si: ND,
    rows: ti.i32,
    # constraint_update: jar given (nworld, njmax) instead of J qacc - aref
    given_jar: ti.template(), jar_in: ND, sparse: ti.template(),
):
    """jar = J qacc - aref (or the given jar) and each row's parameters, one thread
    per (world, row)."""
    nworld = efc_type.shape[0]
    njmax = efc_type.shape[1]
    for worldid, efcid in ti.ndrange(nworld, njmax):
        if rows != 0 and efcid < nefc[worldid]:
            if ti.static(given_jar):
                se[worldid, E_JAREF, efcid] = jar_in[worldid, efcid]
            else:
                jar = -efc_aref[worldid, efcid]
                if ti.static(sparse):
                    adr = efc_J_rowadr[worldid, efcid]
                    for k in range(efc_J_rownnz[worldid, efcid]):
                        jar += efc_J_sparse[worldid, adr + k] * qacc[
                            worldid, efc_J_colind[worldid, adr + k]]
                else:
                    for dofid in range(nv):
                        jar += efc_J[worldid, efcid, dofid] * qacc[worldid, dofid]
                se[worldid, E_JAREF, efcid] = jar
            row_params(worldid, efcid, ne, nf, efc_type, efc_id, efc_D, efc_R,
                       efc_frictionloss, contact_dim, contact_mu, contact_friction,
                       contact_efc_address, se, si)


@ti.kernel
def _inverse_forces(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND,
    ntree: ti.i32, nv: ti.i32,
    # data in
    nefc: ND, efc_J: ND, qM: ND, qacc: ND, qfrc_bias: ND, qfrc_passive: ND,
    efc_J_sparse: ND, efc_J_colind: ND, efc_J_rowadr: ND, efc_J_rownnz: ND,
    # data out
    efc_force: ND, efc_state: ND, qfrc_constraint: ND, qfrc_inverse: ND,
    # scratch: the solver's row view (jar in row E_JAREF)
    se: ND, si: ND,
    rows: ti.i32,
    # constraint_update: cost out, qfrc_inverse left alone
    given_jar: ti.template(), cost: ND, sparse: ti.template(),
):
    nworld = qM.shape[0]
    # states and forces: a world's rows in order (a cone spans its rows)
    for worldid in range(nworld):
        n = 0
        if rows != 0:
            n = nefc[worldid]
        c = _constraint_update(worldid, n, se, si, E_JAREF, efc_force, efc_state)
        if ti.static(given_jar):
            cost[worldid] = c
    # qfrc_constraint = J' efc_force
    if ti.static(sparse):
        for worldid, dofid in ti.ndrange(nworld, nv):
            qfrc_constraint[worldid, dofid] = 0.0
        for worldid in range(nworld):
            if rows != 0:
                for efcid in range(nefc[worldid]):
                    f = efc_force[worldid, efcid]
                    adr = efc_J_rowadr[worldid, efcid]
                    for k in range(efc_J_rownnz[worldid, efcid]):
                        dofid = efc_J_colind[worldid, adr + k]
                        qfrc_constraint[worldid, dofid] = qfrc_constraint[worldid, dofid] + \
                            efc_J_sparse[worldid, adr + k] * f
    else:
        for worldid, dofid in ti.ndrange(nworld, nv):
            frc = 0.0
            if rows != 0:
                for efcid in range(nefc[worldid]):
                    frc += efc_J[worldid, efcid, dofid] * efc_force[worldid, efcid]
            qfrc_constraint[worldid, dofid] = frc
    # qfrc_inverse = M qacc + qfrc_bias - qfrc_passive - qfrc_constraint
    if ti.static(not given_jar):
        for worldid, treeid in ti.ndrange(nworld, ntree):
            start = tree_dofadr[treeid]
            num = tree_dofnum[treeid]
            for i in range(start, start + num):
                qfrc_inverse[worldid, i] = qfrc_bias[worldid, i] - \
                    qfrc_passive[worldid, i] - qfrc_constraint[worldid, i]
            mul_m_tree_add(worldid, start, num, qM, qacc, qfrc_inverse, dof_Madr,
                           dof_parentid)


@ti.kernel
def _fwdinv(
    # model
    body_rootid: ND, body_subtree_adr: ND, body_subtree_num: ND, body_subtree: ND,
    dof_bodyid: ND, nv: ti.i32,
    # data in: forward's qfrc_constraint and inputs, the inverse's results
    nefc: ND, qfrc_constraint: ND, qfrc_applied: ND, qfrc_actuator: ND, xfrc_applied: ND,
    xipos: ND, subtree_com: ND, cdof: ND, qfrc_constraint_inv: ND, qfrc_inverse: ND,
    # data out
    solver_fwdinv: ND,
    # scratch: squared differences per dof (nworld, 2, nv)
    sq: ND,
    rows: ti.i32,
):
    nworld = nefc.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        # qforce = qfrc_applied + qfrc_actuator + J' xfrc_applied (mj_xfrcAccumulate):
        # a dof moves exactly the bodies of its body's subtree
        frc = qfrc_applied[worldid, dofid] + qfrc_actuator[worldid, dofid]
        bodyid = dof_bodyid[dofid]
        adr = body_subtree_adr[bodyid]
        dof = cdof[worldid, dofid]
        rot = ti.Vector([dof[0], dof[1], dof[2]])
        lin = ti.Vector([dof[3], dof[4], dof[5]])
        for k in range(body_subtree_num[bodyid]):
            b = body_subtree[adr + k]
            xfrc = xfrc_applied[worldid, b]
            force = ti.Vector([xfrc[0], xfrc[1], xfrc[2]])
            torque = ti.Vector([xfrc[3], xfrc[4], xfrc[5]])
            offset = xipos[worldid, b] - subtree_com[worldid, body_rootid[b]]
            frc += (lin + rot.cross(offset)).dot(force) + rot.dot(torque)
        dc = qfrc_constraint[worldid, dofid] - qfrc_constraint_inv[worldid, dofid]
        df = frc - qfrc_inverse[worldid, dofid]
        sq[worldid, 0, dofid] = dc * dc
        sq[worldid, 1, dofid] = df * df
    for worldid in range(nworld):
        s0 = 0.0
        s1 = 0.0
        if rows != 0 and nefc[worldid] > 0:
            for dofid in range(nv):
                s0 += sq[worldid, 0, dofid]
                s1 += sq[worldid, 1, dofid]
        solver_fwdinv[worldid] = ti.Vector([ti.sqrt(s0), ti.sqrt(s1)])


# ---------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------

def discrete_mode(m) -> int:
    """Which mj_discreteAcc map applies with the model's options: DISCRETE_NONE without
    the invdiscrete flag (and for Euler without dof damping or with eulerdamp
    disabled, where MuJoCo leaves qacc as it is), else the integrator. Raises
    ValueError for RK4, which has no discrete inverse (as MuJoCo)."""
    opt = m.opt
    if not opt.enabled("invdiscrete"):
        return DISCRETE_NONE
    if opt.integrator == INT_RK4:
        raise ValueError("inverse: discrete inverse dynamics (<flag invdiscrete=\"enable\"/>) "
                         "is not supported by the RK4 integrator (as in MuJoCo)")
    if opt.integrator == INT_EULER:
        damped = m.nv > 0 and not opt.disabled("eulerdamp") and \
            bool(np.any(m.param("dof_damping")[..., :m.nv] > 0))
        return DISCRETE_EULER if damped else DISCRETE_NONE
    if opt.integrator in (INT_IMPLICIT, INT_IMPLICITFAST):
        return int(opt.integrator)
    raise NotImplementedError(f"inverse: invdiscrete with integrator {opt.integrator}")


def _scratch(m, d, compare: bool):
    """Scratch on ``d``: the row view, the continuous qacc; for compare_fwd_inv the
    inverse's forces and the squared differences (allocated on first use)."""
    nv, njmax = max(1, m.nv), max(1, d.njmax)
    key = (nv, njmax)
    s = d.scratch.inverse
    tag = d.scratch.tag
    if s is None or s["key"] != key:
        dtype = d.qvel.dtype
        s = {
            "key": key,
            "se": tag(ti.ndarray(dtype, (d.nworld, E_N, njmax))),
            "si": tag(ti.ndarray(ti.i32, (d.nworld, I_N, njmax))),
            "qacc": tag(ti.ndarray(dtype, (d.nworld, nv))),
        }
        for name in ("se", "si"):
            s[name].fill(0)  # only rows below nefc are read, after they are written
        d.scratch.inverse = s
    if compare and "efc_force" not in s:
        dtype = d.qvel.dtype
        s["efc_force"] = tag(ti.ndarray(dtype, (d.nworld, njmax)))
        s["efc_state"] = tag(ti.ndarray(ti.i32, (d.nworld, njmax)))
        s["qfrc_constraint"] = tag(ti.ndarray(dtype, (d.nworld, nv)))
        s["sq"] = tag(ti.ndarray(dtype, (d.nworld, 2, nv)))
    return s


def _continuous_qacc(m, d, s):
    """d.qacc, or with invdiscrete its continuous-time counterpart in scratch
    (mj_discreteAcc; one launch, three for implicit and implicitfast)."""
    mode = discrete_mode(m)
    if mode == DISCRETE_NONE:
        return d.qacc
    if mode == DISCRETE_EULER:
        lo = up = d.qM  # unused by the Euler map
    else:
        lo, up = smooth_vel(m, d, flg_bias=mode == DISCRETE_IMPLICIT)
    launch(_discrete_acc, m, d, timestep=float(m.opt.timestep), qLD=d.qLD_tree,
           qDeriv_lo=lo, qDeriv_up=up, qacc_c=s["qacc"], mode=mode)
    return s["qacc"]


def _inverse_launch(m, d, s, qacc, rows, efc_force, efc_state, qfrc_constraint,
                    qfrc_inverse=None, jar=None, cost=None):
    """_inverse_rows then _inverse_forces (one kernel would pass SPIR-V's 32 arrays);
    with ``jar`` (constraint_update) the rows' jar is given,
    the cost written and qfrc_inverse left alone."""
    given = jar is not None
    launch(_inverse_rows, m, d, qacc=qacc, se=s["se"], si=s["si"], rows=int(rows),
           given_jar=given, jar_in=jar if given else qacc, sparse=m.is_sparse)
    launch(_inverse_forces, m, d, qacc=qacc, efc_force=efc_force, efc_state=efc_state,
           qfrc_constraint=qfrc_constraint,
           qfrc_inverse=d.qfrc_inverse if qfrc_inverse is None else qfrc_inverse,
           se=s["se"], si=s["si"], rows=int(rows), given_jar=given,
           cost=cost if given else qacc, sparse=m.is_sparse)


def inverse_acceleration(m, d, rows: bool) -> None:
    """The acceleration-dependent part of mj_inverse: mj_discreteAcc (with the
    invdiscrete flag), mj_invConstraint, then qfrc_inverse (one launch; up to three
    more with invdiscrete).

    ``rows``: the model may have constraint rows (make_constraint and
    reference_constraint ran); if not, worlds are taken to have none.
    Reads qacc, qM, qLD_tree, qLDiagInv, qfrc_bias, qfrc_passive, ne, nf, nefc,
    efc_type, efc_id, efc_J, efc_D, efc_R, efc_frictionloss, efc_aref, contact_mu,
    contact_friction, contact_dim, contact_efc_address (and what smooth_vel reads for
    the implicit integrators); writes efc_force, efc_state (rows below nefc),
    qfrc_constraint, qfrc_inverse. qacc itself is left as given.
    """
    s = _scratch(m, d, compare=False)
    qacc = _continuous_qacc(m, d, s)
    _inverse_launch(m, d, s, qacc, rows, d.efc_force, d.efc_state, d.qfrc_constraint)


def compare_inverse(m, d, rows: bool) -> None:
    """mj_compareFwdInv after forward: the inverse of the current qacc (no position or
    velocity stages) into scratch, then per world solver_fwdinv =
    (|qfrc_constraint - inverse's qfrc_constraint|, |qfrc_applied + J' xfrc_applied +
    qfrc_actuator - qfrc_inverse|), both 0 in worlds without constraint rows (two
    launches; more with invdiscrete).

    Reads what inverse_acceleration reads plus qfrc_constraint, qfrc_applied,
    qfrc_actuator, xfrc_applied, xipos, subtree_com, cdof; writes qfrc_inverse and
    solver_fwdinv. Forward's efc_force, efc_state and qfrc_constraint stay as they are
    (MuJoCo restores the first and last and leaves the inverse's efc_state).
    """
    s = _scratch(m, d, compare=True)
    qacc = _continuous_qacc(m, d, s)
    _inverse_launch(m, d, s, qacc, rows, s["efc_force"], s["efc_state"],
                    s["qfrc_constraint"])
    launch(_fwdinv, m, d, qfrc_constraint_inv=s["qfrc_constraint"], sq=s["sq"],
           rows=int(rows))


def inv_constraint(m, d, rows: bool) -> None:
    """mj_invConstraint: efc_force and efc_state from jar = J qacc - aref (the given
    qacc, no discrete-time mapping), qfrc_constraint = J' efc_force; one launch.
    qfrc_inverse is left as it is (that part of the launch writes scratch)."""
    s = _scratch(m, d, compare=False)
    if "qfrc_inverse" not in s:
        s["qfrc_inverse"] = ti.ndarray(d.qvel.dtype, (d.nworld, max(1, m.nv)))
    _inverse_launch(m, d, s, d.qacc, rows, d.efc_force, d.efc_state, d.qfrc_constraint,
                    qfrc_inverse=s["qfrc_inverse"])


def constraint_update(m, d, jar, rows: bool) -> np.ndarray:
    """mj_constraintUpdate for every world: efc_state, efc_force (rows below nefc) and
    qfrc_constraint from the given ``jar`` (nworld, njmax) (J qacc - aref of some
    qacc); returns each world's constraint cost s(jar), (nworld,). One launch."""
    s = _scratch(m, d, compare=False)
    dtype = np.float64 if d.qvel.dtype == ti.f64 else np.float32
    jar = np.ascontiguousarray(jar, dtype=dtype)
    if jar.shape != (d.nworld, d.njmax):
        raise ValueError(f"constraint_update: jar must be (nworld, njmax) = "
                         f"{(d.nworld, d.njmax)}, got {jar.shape}")
    cost = np.zeros(d.nworld, dtype=dtype)
    _inverse_launch(m, d, s, d.qacc, rows, d.efc_force, d.efc_state, d.qfrc_constraint,
                    jar=jar, cost=cost)
    return cost
