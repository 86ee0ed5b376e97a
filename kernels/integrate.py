"""Integrators: semi-implicit Euler (with implicit dof damping), RK4, implicit and
implicitfast (mj_Euler, mj_RungeKutta, mj_implicit), and position integration."""
import numpy as np
import taichi as ti

from .actuation import advance_activation
from .bind import launch
from .config import per_options
from .consts import INT_EULER, INT_IMPLICIT, INT_IMPLICITFAST, JNT_BALL, JNT_FREE
from .derivative import smooth_vel, velocity_dependent
from .math import param_row, quat_integrate
from .smooth import ld_factor, ld_solve, row_end

ND = ti.types.ndarray()


@ti.func
def _integrate_joint(worldid, jntid, jnt_type: ti.template(), jnt_qposadr: ti.template(),
                     jnt_dofadr: ti.template(), qpos: ti.template(), qvel: ti.template(), dt):
    padr = jnt_qposadr[jntid]
    vadr = jnt_dofadr[jntid]
    jtype = jnt_type[jntid]
    if jtype == JNT_FREE:
        for k in ti.static(range(3)):
            qpos[worldid, padr + k] += dt * qvel[worldid, vadr + k]
        padr += 3
        vadr += 3
        jtype = 1
    if jtype == JNT_BALL:
        quat = ti.Vector([qpos[worldid, padr + k] for k in ti.static(range(4))])
        vel = ti.Vector([qvel[worldid, vadr + k] for k in ti.static(range(3))])
        quat = quat_integrate(quat, vel, dt)
        for k in ti.static(range(4)):
            qpos[worldid, padr + k] = quat[k]
    else:
        qpos[worldid, padr] += dt * qvel[worldid, vadr]


@ti.func
def _velocity_update(worldid, start, num, timestep, qacc_int: ti.template(),
                     qacc: ti.template(), qvel: ti.template(),
                     qacc_warmstart: ti.template()):
    """qvel += h qacc_int on one tree's dofs, and qacc_warmstart = qacc."""
    for i in range(start, start + num):
        qvel[worldid, i] += timestep * qacc_int[worldid, i]
        qacc_warmstart[worldid, i] = qacc[worldid, i]


@ti.kernel
def _damped_step(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    dof_damping: ND, jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND,
    ntree: ti.i32, nv: ti.i32, nM: ti.i32, njnt: ti.i32, timestep: float,
    # implicit: always solve with M + h D (implicitfast); else only when a dof is damped
    # (Euler). add_damping: the eulerdamp/damper flags allow the h D term.
    implicit: ti.i32, add_damping: ti.i32,
    # data in
    qM: ND, qfrc_smooth: ND, qfrc_constraint: ND, qacc: ND,
    # data in/out
    qpos: ND, qvel: ND, time: ND,
    # data out
    qH: ND, qHDiagInv: ND, qacc_warmstart: ND,
    # the integrated acceleration (qacc_warmstart: overwritten by qacc after use);
    # acc_only: only compute it (sleeping trees: integrate_awake applies it)
    qacc_int: ND, acc_only: ti.template(),
):
    nworld = qpos.shape[0]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        num = tree_dofnum[treeid]
        # as MuJoCo's Euler: damping on any dof of the world switches to the implicit
        # update
        damped = implicit
        if damped == 0 and add_damping != 0:
            for i in range(nv):
                if dof_damping[param_row(worldid, dof_damping), i] > 0.0:
                    damped = 1
        if damped != 0 and num > 0:
            for adr in range(dof_Madr[start], row_end(start + num - 1, dof_Madr, nv, nM)):
                qH[worldid, adr] = qM[worldid, adr]
            if add_damping != 0:
                for i in range(start, start + num):
                    qH[worldid, dof_Madr[i]] += timestep * \
                        dof_damping[param_row(worldid, dof_damping), i]
            ld_factor(worldid, start, num, qH, qHDiagInv, dof_parentid, dof_Madr,
                      dof_simplenum, nv, nM)
            for i in range(start, start + num):
                qacc_int[worldid, i] = qfrc_smooth[worldid, i] + \
                    qfrc_constraint[worldid, i]
            ld_solve(worldid, start, num, qH, qHDiagInv, qacc_int, dof_parentid,
                     dof_Madr, dof_simplenum)
        else:
            for i in range(start, start + num):
                qacc_int[worldid, i] = qacc[worldid, i]
        if ti.static(not acc_only):
            _velocity_update(worldid, start, num, timestep, qacc_int, qacc, qvel,
                             qacc_warmstart)
    if ti.static(not acc_only):
        for worldid, jntid in ti.ndrange(nworld, njnt):
            _integrate_joint(worldid, jntid, jnt_type, jnt_qposadr, jnt_dofadr, qpos,
                             qvel, timestep)
        for worldid in range(nworld):
            time[worldid] += timestep


def plugin_advance(m, d):
    """The plugins' advance hooks (mj_advance's last step, after time advanced): those
    of ``m.plugins`` (tiphys.plugin's per-model objects; duck-typed, kernels/ does not
    import tiphys) that have one."""
    for plugin in getattr(m, "plugins", ()):
        if plugin.advance is not None:
            plugin.advance(m, d)


def euler(m, d):
    """Semi-implicit Euler step, as mj_Euler (one launch).

    Without dof damping (or with the eulerdamp/damper flags disabled): qvel += h qacc.
    With damping: qvel += h inv(M + h diag(dof_damping)) (qfrc_smooth + qfrc_constraint).
    Then qpos is integrated with the new qvel (quaternions for ball/free joints),
    time += h, qacc_warmstart = qacc. Activations advance first (act += h act_dot,
    exact for filterexact, clamped to actrange).
    Reads qM, qfrc_smooth, qfrc_constraint, qacc, act_dot; writes act, qpos, qvel, time, qH_tree,
    qHDiagInv, qacc_warmstart.
    """
    eulerdamp = not (m.opt.disabled("eulerdamp") or m.opt.disabled("damper"))
    advance_activation(m, d)
    # without damping in any world no tree takes the implicit update: the kernel need
    # not look (its per-tree scan of every dof is ntree x nv work in big scenes)
    _velocity_step(m, d, implicit=False, add_damping=eulerdamp and _damping_on(m))
    plugin_advance(m, d)


def _damping_on(m) -> bool:
    return per_options(m, "dof_damping_on", lambda m: m.nv > 0 and bool(
        np.any(m.param("dof_damping") > 0)))


def _velocity_step(m, d, implicit: bool, add_damping: bool, qacc_int=None):
    """The Euler / implicitfast update (qacc_int given: only its acceleration, into
    qacc_int)."""
    launch(_damped_step, m, d, timestep=float(m.opt.timestep), implicit=int(implicit),
           add_damping=int(add_damping), qH=d.qH_tree,
           qacc_int=d.qacc_warmstart if qacc_int is None else qacc_int,
           acc_only=qacc_int is not None)


# RK4 Butcher tableau (MuJoCo's RK4_A, RK4_B): stage i uses A[i-1] times earlier stages
RK4_A = ((0.5, 0.0, 0.0), (0.0, 0.5, 0.0), (0.0, 0.0, 1.0))
RK4_B = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


@ti.kernel
def _rk4_stage(
    # model
    jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND, nq: ti.i32, nv: ti.i32, na: ti.i32,
    njnt: ti.i32, timestep: float,
    # stage: the slot that gets (qvel, qacc, act_dot), the weights of slots 0..3, final?
    slot: ti.i32, c0: float, c1: float, c2: float, c3: float, final: ti.i32,
    # data in: qacc, act_dot; in/out: qpos, qvel, act, time; out: qacc_warmstart
    qacc: ND, act_dot: ND, qpos: ND, qvel: ND, act: ND, time: ND, qacc_warmstart: ND,
    # scratch: X0 (qpos0, qvel0, act0, time0), F (kvel, kacc, kact: (4, nworld, n)),
    # dX's velocity and act_dot parts
    qpos0: ND, qvel0: ND, act0: ND, time0: ND, kvel: ND, kacc: ND, kact: ND, dxvel: ND,
    dxact: ND,
):
    # every loop is a top-level one (Taichi runs a loop under an `if` serially, on one
    # GPU thread): the stage tests sit inside the loops
    nworld = qpos.shape[0]
    for worldid, dofid in ti.ndrange(nworld, nv):
        if slot == 0:
            qvel0[worldid, dofid] = qvel[worldid, dofid]
        kvel[slot, worldid, dofid] = qvel[worldid, dofid]
        kacc[slot, worldid, dofid] = qacc[worldid, dofid]
    for worldid, i in ti.ndrange(nworld, na):
        if slot == 0:
            act0[worldid, i] = act[worldid, i]
        kact[slot, worldid, i] = act_dot[worldid, i]
    for worldid, i in ti.ndrange(nworld, nq):
        if slot == 0:
            qpos0[worldid, i] = qpos[worldid, i]
        qpos[worldid, i] = qpos0[worldid, i]
    for worldid, dofid in ti.ndrange(nworld, nv):
        dv = c0 * kvel[0, worldid, dofid] + c1 * kvel[1, worldid, dofid] + \
            c2 * kvel[2, worldid, dofid] + c3 * kvel[3, worldid, dofid]
        da = c0 * kacc[0, worldid, dofid] + c1 * kacc[1, worldid, dofid] + \
            c2 * kacc[2, worldid, dofid] + c3 * kacc[3, worldid, dofid]
        dxvel[worldid, dofid] = dv
        qvel[worldid, dofid] = qvel0[worldid, dofid] + timestep * da
        if final != 0:
            qacc_warmstart[worldid, dofid] = qacc[worldid, dofid]
    # activations: plain Euler combination in the stages (no clamping, as MuJoCo); the
    # final update keeps act0 here and is made by advance_activation with dX's act_dot
    for worldid, i in ti.ndrange(nworld, na):
        da = c0 * kact[0, worldid, i] + c1 * kact[1, worldid, i] + \
            c2 * kact[2, worldid, i] + c3 * kact[3, worldid, i]
        dxact[worldid, i] = da
        if final != 0:
            act[worldid, i] = act0[worldid, i]
        else:
            act[worldid, i] = act0[worldid, i] + timestep * da
    for worldid, jntid in ti.ndrange(nworld, njnt):
        _integrate_joint(worldid, jntid, jnt_type, jnt_qposadr, jnt_dofadr, qpos, dxvel,
                         timestep)
    # time: the stage's (mj_RungeKutta's T = time0 + C h, which time-dependent plugins
    # read), time0 + h at the end
    for worldid in range(nworld):
        if slot == 0:
            time0[worldid] = time[worldid]
        if final != 0:
            time[worldid] = time0[worldid] + timestep
        else:
            time[worldid] = time0[worldid] + (c0 + c1 + c2 + c3) * timestep


def _rk4_scratch(m, d):
    scratch = d.scratch.rk4
    if scratch is None:
        dtype = d.qvel.dtype
        nworld, nq, nv, na = d.nworld, max(1, m.nq), max(1, m.nv), max(1, m.na)
        shapes = ((nworld, nq), (nworld, nv), (nworld, na), (nworld,), (4, nworld, nv),
                  (4, nworld, nv), (4, nworld, na), (nworld, nv), (nworld, na))
        scratch = d.scratch.rk4 = tuple(d.scratch.tag(ti.ndarray(dtype, shape))
                                        for shape in shapes)
    return scratch


def rk4_stage(m, d, slot: int, coefs, final: bool = False):
    """One RK4 stage update, as one pass of mj_RungeKutta's loop (one launch; the final
    one with activations two).

    Saves (qvel, qacc, act_dot) of the state just evaluated as F[slot] (slot 0 also
    saves X0 = qpos, qvel, act), then sets qvel = qvel0 + h sum_j c_j qacc_j, act = act0
    + h sum_j c_j act_dot_j and qpos = qpos0 '+' h sum_j c_j qvel_j (quaternion-aware).
    ``final``: act advances from act0 with the combined act_dot as mj_advance does
    (exact for filterexact, clamped to actrange), time += h, qacc_warmstart = qacc.
    Scratch arrays live on ``d`` (allocated on first use).
    """
    qpos0, qvel0, act0, time0, kvel, kacc, kact, dxvel, dxact = _rk4_scratch(m, d)
    c = list(coefs) + [0.0] * (4 - len(coefs))
    launch(_rk4_stage, m, d, timestep=float(m.opt.timestep), slot=slot, c0=float(c[0]),
           c1=float(c[1]), c2=float(c[2]), c3=float(c[3]), final=int(final), qpos0=qpos0,
           qvel0=qvel0, act0=act0, time0=time0, kvel=kvel, kacc=kacc, kact=kact,
           dxvel=dxvel, dxact=dxact)
    if final:
        advance_activation(m, d, dxact)
        plugin_advance(m, d)


@ti.kernel
def _implicit_step(
    # model
    tree_dofadr: ND, tree_dofnum: ND, dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND,
    ntree: ti.i32, nv: ti.i32, nM: ti.i32, njnt: ti.i32, timestep: float,
    # data in: qM, qDeriv (qM's layout: lo = qDeriv(i, j), up = qDeriv(j, i)), forces
    qM: ND, qDeriv_lo: ND, qDeriv_up: ND, qfrc_smooth: ND, qfrc_constraint: ND, qacc: ND,
    # data in/out
    qpos: ND, qvel: ND, time: ND,
    # data out: the factor of M - h qDeriv (LDL: lo and diaginv; LU: lo and up),
    # qacc_warmstart (first the integrated acceleration, then qacc)
    fac_lo: ND, fac_up: ND, diaginv: ND, qacc_warmstart: ND,
    # LU of the full matrix (implicit) or L'DL of its lower part (implicitfast)
    lu: ti.template(),
    # the integrated acceleration, and whether to only compute it (see _damped_step)
    qacc_int: ND, acc_only: ti.template(),
):
    nworld = qpos.shape[0]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        start = tree_dofadr[treeid]
        num = tree_dofnum[treeid]
        if num > 0:
            for i in range(start, start + num):
                madr = dof_Madr[i]
                for adr in range(madr, row_end(i, dof_Madr, nv, nM)):
                    value = qM[worldid, adr]
                    if ti.static(lu):
                        value -= timestep * qDeriv_lo[worldid, adr]
                        fac_up[worldid, adr] = qM[worldid, adr] - \
                            timestep * qDeriv_up[worldid, adr]
                    elif adr == madr or dof_simplenum[i] == 0:
                        # implicitfast keeps M's reduced sparsity: a simple dof's row
                        # has only its diagonal
                        value -= timestep * qDeriv_lo[worldid, adr]
                    fac_lo[worldid, adr] = value
            for i in range(start, start + num):
                qacc_int[worldid, i] = qfrc_smooth[worldid, i] + \
                    qfrc_constraint[worldid, i]
            if ti.static(lu):
                _lu_factor(worldid, start, num, fac_lo, fac_up, dof_parentid, dof_Madr)
                _lu_solve(worldid, start, num, fac_lo, fac_up, qacc_int,
                          dof_parentid, dof_Madr)
            else:
                ld_factor(worldid, start, num, fac_lo, diaginv, dof_parentid, dof_Madr,
                          dof_simplenum, nv, nM)
                ld_solve(worldid, start, num, fac_lo, diaginv, qacc_int,
                         dof_parentid, dof_Madr, dof_simplenum)
        if ti.static(not acc_only):
            _velocity_update(worldid, start, num, timestep, qacc_int, qacc, qvel,
                             qacc_warmstart)
    if ti.static(not acc_only):
        for worldid, jntid in ti.ndrange(nworld, njnt):
            _integrate_joint(worldid, jntid, jnt_type, jnt_qposadr, jnt_dofadr, qpos,
                             qvel, timestep)
        for worldid in range(nworld):
            time[worldid] += timestep


@ti.func
def _lu_factor(worldid, start, num, lo: ti.template(), up: ti.template(),
               dof_parentid: ti.template(), dof_Madr: ti.template()):
    """In-place reverse-order LU of one tree's dofs, A = (U + I) L, no fill-in (as
    mju_factorLUSparse). A(i, j) for j an ancestor of i is in lo, A(j, i) in up, both
    at the qM address of (i, j); L (with its diagonal) ends in lo, U in up."""
    for ii in range(num):
        i = start + num - 1 - ii
        madr_i = dof_Madr[i]
        diag = lo[worldid, madr_i]
        # rows j above i with A(j, i) != 0: the ancestors of i (chain position pj)
        j = dof_parentid[i]
        pj = 1
        while j >= 0:
            u = up[worldid, madr_i + pj] / diag
            up[worldid, madr_i + pj] = u
            # A(j, k) -= L(i, k) u for the ancestors k of i (chain position pk)
            k = dof_parentid[i]
            pk = 1
            while k >= 0:
                delta = lo[worldid, madr_i + pk] * u
                if pk > pj:  # k is an ancestor of j: lower part of row j
                    lo[worldid, dof_Madr[j] + pk - pj] -= delta
                elif pk == pj:
                    lo[worldid, dof_Madr[j]] -= delta
                else:  # k lies between j and i: upper part, stored in row k
                    up[worldid, dof_Madr[k] + pj - pk] -= delta
                k = dof_parentid[k]
                pk += 1
            j = dof_parentid[j]
            pj += 1


@ti.func
def _lu_solve(worldid, start, num, lo: ti.template(), up: ti.template(), x: ti.template(),
              dof_parentid: ti.template(), dof_Madr: ti.template()):
    """x <- inv((U + I) L) x in place for one tree's dofs (as mju_solveLUSparse)."""
    # (U + I) y = x, last dof first: each finished y_i updates its ancestors' rows
    for ii in range(num):
        i = start + num - 1 - ii
        xi = x[worldid, i]
        adr = dof_Madr[i] + 1
        j = dof_parentid[i]
        while j >= 0:
            x[worldid, j] -= up[worldid, adr] * xi
            adr += 1
            j = dof_parentid[j]
    # L x = y, first dof first
    for i in range(start, start + num):
        madr = dof_Madr[i]
        acc = x[worldid, i]
        adr = madr + 1
        j = dof_parentid[i]
        while j >= 0:
            acc -= lo[worldid, adr] * x[worldid, j]
            adr += 1
            j = dof_parentid[j]
        x[worldid, i] = acc / lo[worldid, madr]


def _lu_scratch(m, d):
    scratch = d.scratch.lu
    if scratch is None:
        dtype = d.qvel.dtype
        nM = max(1, m.nM)
        scratch = d.scratch.lu = (d.scratch.tag(ti.ndarray(dtype, (d.nworld, nM))),
                                  d.scratch.tag(ti.ndarray(dtype, (d.nworld, nM))))
    return scratch


def _deriv_step(m, d, flg_bias: bool):
    """qDeriv (smooth_vel), then act advances, then the velocity solve and integration."""
    qderiv_lo, qderiv_up = smooth_vel(m, d, flg_bias)
    advance_activation(m, d)
    if flg_bias:
        fac_lo, fac_up = _lu_scratch(m, d)
    else:
        fac_lo, fac_up = d.qH_tree, d.qH_tree
    launch(_implicit_step, m, d, timestep=float(m.opt.timestep), qDeriv_lo=qderiv_lo,
           qDeriv_up=qderiv_up, fac_lo=fac_lo, fac_up=fac_up, diaginv=d.qHDiagInv,
           lu=bool(flg_bias), qacc_int=d.qacc_warmstart, acc_only=False)
    plugin_advance(m, d)


def integration_acc(m, d, qacc_int) -> None:
    """The acceleration the model's integrator (Euler, implicitfast, implicit) would
    integrate, into ``qacc_int``, without advancing anything: with sleeping trees the
    step advances activations, puts trees to sleep and recomputes forces before it
    integrates (integrate_awake), as mj_advance."""
    integrator = m.opt.integrator
    if integrator == INT_EULER:
        eulerdamp = not (m.opt.disabled("eulerdamp") or m.opt.disabled("damper"))
        _velocity_step(m, d, implicit=False, add_damping=eulerdamp and _damping_on(m),
                       qacc_int=qacc_int)
    elif integrator == INT_IMPLICITFAST and not velocity_dependent(m):
        _velocity_step(m, d, implicit=True, add_damping=not m.opt.disabled("damper"),
                       qacc_int=qacc_int)
    else:
        lu = integrator == INT_IMPLICIT
        qderiv_lo, qderiv_up = smooth_vel(m, d, lu)
        fac_lo, fac_up = _lu_scratch(m, d) if lu else (d.qH_tree, d.qH_tree)
        launch(_implicit_step, m, d, timestep=float(m.opt.timestep), qDeriv_lo=qderiv_lo,
               qDeriv_up=qderiv_up, fac_lo=fac_lo, fac_up=fac_up, diaginv=d.qHDiagInv,
               lu=lu, qacc_int=qacc_int, acc_only=True)


@ti.kernel
def _integrate_awake(
    # model
    tree_dofadr: ND, tree_dofnum: ND, jnt_type: ND, jnt_qposadr: ND, jnt_dofadr: ND,
    jnt_bodyid: ND, ntree: ti.i32, nv: ti.i32, njnt: ti.i32, timestep: float,
    # data in
    qacc_int: ND, qacc: ND, tree_awake: ND, body_awake: ND,
    # data in/out
    qpos: ND, qvel: ND, time: ND,
    # data out
    qacc_warmstart: ND,
):
    """mj_advance after mj_sleep: qvel += h qacc_int on the awake trees, qpos
    integrated on the joints of awake bodies, time += h, qacc_warmstart = qacc."""
    nworld = qpos.shape[0]
    for worldid, treeid in ti.ndrange(nworld, ntree):
        if tree_awake[worldid, treeid] != 0:
            for i in range(tree_dofadr[treeid], tree_dofadr[treeid] + tree_dofnum[treeid]):
                qvel[worldid, i] += timestep * qacc_int[worldid, i]
    for worldid, jntid in ti.ndrange(nworld, njnt):
        if body_awake[worldid, jnt_bodyid[jntid]] == 1:  # mjS_AWAKE
            _integrate_joint(worldid, jntid, jnt_type, jnt_qposadr, jnt_dofadr, qpos,
                             qvel, timestep)
    for worldid, i in ti.ndrange(nworld, nv):
        qacc_warmstart[worldid, i] = qacc[worldid, i]
    for worldid in range(nworld):
        time[worldid] += timestep


def integrate_awake(m, d, qacc_int) -> None:
    """The second half of mj_advance with sleeping trees (see integration_acc), then
    the plugins' advance hooks."""
    launch(_integrate_awake, m, d, timestep=float(m.opt.timestep), qacc_int=qacc_int)
    plugin_advance(m, d)


def implicitfast(m, d):
    """Implicit-in-velocity step with the symmetric part of the velocity derivative, as
    mj_implicit for the implicitfast integrator.

    qDeriv = d (qfrc_actuator + qfrc_passive) / d qvel (smooth_vel without RNE; the
    ellipsoid fluid terms symmetrized), qH = M - h qDeriv on M's lower part (a simple
    dof keeps only its diagonal), factored L'DL along the tree. Activations advance
    (with act_dot), qvel += h inv(qH) (qfrc_smooth + qfrc_constraint), qpos integrated
    with the new qvel, time += h, qacc_warmstart = qacc. With nothing velocity-dependent
    but dof damping qH = M + h diag(dof_damping) (one launch), else three.
    Reads qM, qfrc_smooth, qfrc_constraint, qacc, act_dot (+ what smooth_vel reads);
    writes act, qpos, qvel, time, qH_tree, qHDiagInv, qacc_warmstart.
    """
    if velocity_dependent(m):
        _deriv_step(m, d, flg_bias=False)
    else:
        advance_activation(m, d)
        _velocity_step(m, d, implicit=True, add_damping=not m.opt.disabled("damper"))
        plugin_advance(m, d)


def implicit(m, d):
    """Implicit-in-velocity step with the full velocity derivative, as mj_implicit for
    the implicit integrator.

    qDeriv = d (qfrc_actuator + qfrc_passive - qfrc_bias) / d qvel (smooth_vel with the
    analytic RNE derivative), then (M - h qDeriv) qacc = qfrc_smooth + qfrc_constraint
    by a reverse-order LU along the tree (no fill-in, as mju_factorLUSparse);
    activations advance (with act_dot), qvel += h qacc, qpos integrated, time += h,
    qacc_warmstart = qacc (three launches, four with activations).
    Reads qM, qfrc_smooth, qfrc_constraint, qacc, act_dot (+ what smooth_vel reads);
    writes act, qpos, qvel, time, qacc_warmstart; the LU factors are scratch on ``d``.
    """
    _deriv_step(m, d, flg_bias=True)
