"""The noslip solver: MuJoCo's mj_solNoSlip, run by ``solve`` after the main solver
when opt.noslip_iterations > 0.

Soft contacts and friction loss let bodies creep: the main solver's forces satisfy
the regularized problem, whose friction (with R > 0) gives way a little. Noslip
takes those forces and re-solves the friction alone without regularization: projected
Gauss-Seidel on the dual cost 0.5 f'Af + f'b with A = J M^-1 J' (not AR = A + R),
over

- dof and tendon friction-loss rows: each force clamped to [-frictionloss,
  frictionloss] (MuJoCo's ARinv with R subtracted, 1 / max(1e-15, A_ii));
- pyramidal contacts: each pair of opposing pyramid edges (rows 2k, 2k+1) keeps its
  sum (the normal share) and redistributes the difference within [-sum, sum];
- elliptic contacts: the friction rows with the normal force fixed, by the same
  friction QCQP as PGS (2, 3 or 5 tangent dimensions), projected onto the cone.

Equality, limit, frictionless-contact and elliptic-normal forces stay as the main
solver left them but enter every residual. The diagonal of each contact block is
clamped to 1e-10 from below; an update that raises the block cost by more than 1e-10
is undone (costChange). A sweep's improvement (the first sweep's also counts the
dropped regularization 0.5 f'Rf) is scaled by 1 / (meaninertia nv); sweeps stop when
it falls below opt.noslip_tolerance or after opt.noslip_iterations.

Outputs as MuJoCo's: efc_force, efc_state (dual states, as dualState), then
qfrc_constraint = J'f and qacc = qacc_smooth + M^-1 J'f (dualFinish); solver_niter
(island 0's: with noslip the main solver solves each world whole) grows by the noslip
sweeps and their statistics follow the main solver's in the statistics buffer where it
has room (MuJoCo's holds 200 entries, tiphys's min(opt.iterations, 200): sweeps past
that are counted, not recorded). Worlds without rows are left alone, as MuJoCo returns
before noslip when nefc = 0.

Sparse-Jacobian models (m.is_sparse) read each row's non-zeros (efc_J_sparse with
efc_J_rownnz / rowadr / colind) wherever a row of J enters a product.

Memory: like PGS, tiphys keeps M^-1 J' (nefc x nv, the size of a dense efc_J; PGS's own copy
is reused when the main solver is PGS) and the running u = M^-1 J'f, so a residual
costs O(nv) and no nefc^2 matrix exists; 1 / A_ii goes in the solver's row scratch
(se[E_ARINV], PGS's 1 / AR_ii, no longer needed). Launches: one over (world, row) for
M^-1 J' and the diagonal, one thread per world for the sweeps (a few sweeps per launch
where the backend limits a thread's loop iterations: see solver.loop_limit).
"""
import taichi as ti

from .bind import launch
from .consts import CNSTR_CONTACT_ELLIPTIC, CNSTR_CONTACT_PYRAMIDAL, MINVAL, SOL_PGS
from .solver import (E_ARINV, E_B, E_FLOSS, E_FRIC, E_R, I_DIM, I_OLDSTATE, QCQP_ITERATIONS,
                     STAGE_DONE, STAGE_RUNNING, STAGE_START, V_U, W_IT, W_IT0, W_LIMIT,
                     W_STAGE, _dual_qfrc, _dual_state, _limit_reached, _solve_m, cone_qcqp,
                     jac_view, jrow_dense)

ND = ti.types.ndarray()
BLOCK_MINDIAG = 1e-10  # extractBlock's clamp of the contact block diagonal
COST_RISE = 1e-10  # costChange: a larger rise restores the old forces


@ti.kernel
def _noslip_prepare(
    # model
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, nv: ti.i32,
    # data in
    ne: ND, nf: ND, nefc: ND, efc_type: ND, efc_J: ND, qLD: ND, qLDiagInv: ND,
    efc_J_sparse: ND, efc_J_colind: ND, efc_J_rowadr: ND, efc_J_rownnz: ND,
    # scratch
    se: ND, minvjt: ND, sw: ND,
    # options
    sparse: ti.template(),
):
    """M^-1 J' of the rows noslip updates (friction loss, contacts with friction) and
    their 1 / max(MINVAL, A_ii) in se[E_ARINV], one thread per (world, row)."""
    J = ti.static(jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr,
                           efc_J_rownnz))
    nworld = efc_type.shape[0]
    njmax = efc_type.shape[1]
    for w, i in ti.ndrange(nworld, njmax):
        if i == 0:
            # _noslip starts from here
            sw[w, W_IT] = 0.0
            sw[w, W_STAGE] = STAGE_START
            sw[w, W_LIMIT] = 0.0
        typ = efc_type[w, i]
        friction = (i >= ne[w]) & (i < ne[w] + nf[w])
        contact = (typ == CNSTR_CONTACT_PYRAMIDAL) | (typ == CNSTR_CONTACT_ELLIPTIC)
        if (i < nefc[w]) & (friction | contact):
            jrow_dense(w, i, nv, J, minvjt)
            _solve_m(w, i, nv, minvjt, qLD, qLDiagInv, dof_Madr, dof_parentid,
                     dof_simplenum)
            aii = _row_times(w, i, nv, J, minvjt, i, 0.0)
            se[w, E_ARINV, i] = 1.0 / ti.max(MINVAL, aii)


@ti.func
def _row_times(w, i, nv, J: ti.template(), vec: ti.template(), slot, start):
    """start + J_i vec[w, slot, :] (``J``: solver.jac_view, dense or sparse). The
    residual (b + A f)_i is _row_times(.., sv, V_U, b_i), with u = M^-1 J'f kept in
    sv[w, V_U]; A_ij = J_i (M^-1 J')_j is _row_times(.., minvjt, j, 0)."""
    r = start
    if ti.static(len(J) > 1):
        adr = J[3][w, i]
        for k in range(J[4][w, i]):
            r += J[1][w, adr + k] * vec[w, slot, J[2][w, adr + k]]
    else:
        for k in range(nv):
            r += J[0][w, i, k] * vec[w, slot, k]
    return r


@ti.func
def _apply(w, i, nv, dlt, minvjt: ti.template(), sv: ti.template()):
    """u += M^-1 J_i' dlt after row i's force changed by dlt."""
    if dlt != 0.0:
        for k in range(nv):
            sv[w, V_U, k] += minvjt[w, i, k] * dlt


@ti.func
def _block_change(Ac, f, old, res, n):
    """costChange of a contact block: 0.5 d'Ac d + d'res, d = f - old (first n)."""
    quad = 0.0
    lin = 0.0
    for a in ti.static(range(5)):
        if a < n:
            da = f[a] - old[a]
            lin += da * res[a]
            for b in ti.static(range(5)):
                if b < n:
                    quad += da * Ac[a, b] * (f[b] - old[b])
    return 0.5 * quad + lin


@ti.func
def _pyramid_pair(w, j, nv, J: ti.template(), se: ti.template(),
                  efc_force: ti.template(), sv: ti.template(), minvjt: ti.template()):
    """Rows j, j+1 (opposing pyramid edges): keep their sum, choose their difference;
    returns the cost change (<= 0)."""
    res = ti.Vector.zero(float, 5)
    old = ti.Vector.zero(float, 5)
    Ac = ti.Matrix.zero(float, 5, 5)
    for a in ti.static(range(2)):
        res[a] = _row_times(w, j + a, nv, J, sv, V_U, se[w, E_B, j + a])
        old[a] = efc_force[w, j + a]
    Ac[0, 0] = ti.max(BLOCK_MINDIAG, 1.0 / se[w, E_ARINV, j])
    Ac[1, 1] = ti.max(BLOCK_MINDIAG, 1.0 / se[w, E_ARINV, j + 1])
    a01 = _row_times(w, j, nv, J, minvjt, j + 1, 0.0)
    Ac[0, 1] = a01
    Ac[1, 0] = a01
    bc0 = res[0] - Ac[0, 0] * old[0] - Ac[0, 1] * old[1]
    bc1 = res[1] - Ac[1, 0] * old[0] - Ac[1, 1] * old[1]
    mid = 0.5 * (old[0] + old[1])
    k1 = Ac[0, 0] + Ac[1, 1] - Ac[0, 1] - Ac[1, 0]
    k0 = mid * (Ac[0, 0] - Ac[1, 1]) + bc0 - bc1
    f = ti.Vector.zero(float, 5)
    if k1 < MINVAL:
        f[0] = mid
        f[1] = mid
    else:
        y = -k0 / k1
        if y < -mid:
            f[1] = 2.0 * mid
        elif y > mid:
            f[0] = 2.0 * mid
        else:
            f[0] = mid + y
            f[1] = mid - y
    change = _block_change(Ac, f, old, res, 2)
    if change > COST_RISE:
        f = old
        change = 0.0
    for a in ti.static(range(2)):
        efc_force[w, j + a] = f[a]
        _apply(w, j + a, nv, f[a] - old[a], minvjt, sv)
    return change


@ti.func
def _elliptic_friction(w, i, dim, nv, J: ti.template(), se: ti.template(),
                       efc_force: ti.template(), sv: ti.template(),
                       minvjt: ti.template(), qcqp_iterations):
    """The friction rows i+1 .. i+dim-1 of an elliptic contact with its normal force
    fixed (the friction QCQP); returns the cost change (<= 0)."""
    nf = dim - 1
    res = ti.Vector.zero(float, 5)
    old = ti.Vector.zero(float, 5)
    mu = ti.Vector.zero(float, 5)
    Ac = ti.Matrix.zero(float, 5, 5)
    for a in ti.static(range(5)):
        if a < nf:
            res[a] = _row_times(w, i + 1 + a, nv, J, sv, V_U, se[w, E_B, i + 1 + a])
            old[a] = efc_force[w, i + 1 + a]
            mu[a] = se[w, E_FRIC, i + 1 + a]
            Ac[a, a] = ti.max(BLOCK_MINDIAG, 1.0 / se[w, E_ARINV, i + 1 + a])
            for b in ti.static(range(a)):
                aab = _row_times(w, i + 1 + a, nv, J, minvjt, i + 1 + b, 0.0)
                Ac[a, b] = aab
                Ac[b, a] = aab
    bc = res - Ac @ old
    fn = efc_force[w, i]
    f = ti.Vector.zero(float, 5)
    if fn >= MINVAL:
        f = cone_qcqp(nf, Ac, bc, mu, fn, qcqp_iterations)
    change = _block_change(Ac, f, old, res, nf)
    if change > COST_RISE:
        f = old
        change = 0.0
    for a in ti.static(range(5)):
        if a < nf:
            efc_force[w, i + 1 + a] = f[a]
            _apply(w, i + 1 + a, nv, f[a] - old[a], minvjt, sv)
    return change


@ti.kernel
def _noslip(
    # model
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, nv: ti.i32,
    # data in
    ne: ND, nf: ND, nefc: ND, efc_type: ND, efc_id: ND, efc_J: ND, contact_dim: ND,
    qLD: ND, qLDiagInv: ND, qacc_smooth: ND, efc_J_sparse: ND, efc_J_colind: ND,
    efc_J_rowadr: ND, efc_J_rownnz: ND,
    # data in/out
    qacc: ND, efc_force: ND, efc_state: ND, qfrc_constraint: ND, solver_niter: ND,
    # scratch
    se: ND, si: ND, sv: ND, sw: ND, minvjt: ND, stats: ND,
    # options
    maxiter: ti.i32, tolerance: float, scale: float, qcqp_iterations: ti.i32,
    npass: ti.i32, probe: ti.i32, sparse: ti.template(),
):
    """Noslip sweeps of every world from the main solver's forces, then dualFinish.
    At most ``npass`` sweeps per launch: a world's sweep count and stage stay in sw,
    so that the next launch resumes it (see solver.solve)."""
    J = ti.static(jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr,
                           efc_J_rownnz))
    nstat = stats.shape[2]
    for w in range(nefc.shape[0]):
        n = nefc[w]
        if (n > 0) & (sw[w, W_STAGE] != STAGE_DONE):
            nfirst = ne[w]
            nfric = nf[w]
            if sw[w, W_STAGE] == STAGE_START:
                _dual_qfrc(w, n, nv, J, efc_force, qfrc_constraint)
                for k in range(nv):
                    sv[w, V_U, k] = qfrc_constraint[w, k]
                _solve_m(w, V_U, nv, sv, qLD, qLDiagInv, dof_Madr, dof_parentid,
                         dof_simplenum)
                _dual_state(w, n, se, si, efc_force, efc_state)
                sw[w, W_IT0] = solver_niter[w][0]
                sw[w, W_STAGE] = STAGE_RUNNING
            it0 = ti.cast(sw[w, W_IT0], ti.i32)
            it = ti.cast(sw[w, W_IT], ti.i32)
            done = 0
            npassed = 0
            while npassed < npass:
                if not (it < maxiter):
                    done = 1
                    break
                npassed += 1
                improvement = 0.0
                if it == 0:
                    # the main solver's cost had 0.5 f'Rf, this one has not
                    for efcid in range(n):
                        f = efc_force[w, efcid]
                        improvement += 0.5 * f * f * se[w, E_R, efcid]
                # dof and tendon friction loss
                for efcid in range(nfirst, nfirst + nfric):
                    res = _row_times(w, efcid, nv, J, sv, V_U, se[w, E_B, efcid])
                    old = efc_force[w, efcid]
                    arinv = se[w, E_ARINV, efcid]
                    fl = se[w, E_FLOSS, efcid]
                    f = ti.min(ti.max(old - res * arinv, -fl), fl)
                    efc_force[w, efcid] = f
                    dlt = f - old
                    improvement -= 0.5 * dlt * dlt / arinv + dlt * res
                    _apply(w, efcid, nv, dlt, minvjt, sv)
                # contact friction
                efcid = nfirst + nfric
                while efcid < n:
                    typ = efc_type[w, efcid]
                    step = 1
                    if typ == CNSTR_CONTACT_PYRAMIDAL:
                        dim = contact_dim[w, efc_id[w, efcid]]
                        step = 2 * (dim - 1)
                        for pair in range(dim - 1):
                            improvement -= _pyramid_pair(w, efcid + 2 * pair, nv, J,
                                                         se, efc_force, sv, minvjt)
                    elif typ == CNSTR_CONTACT_ELLIPTIC:
                        dim = si[w, I_DIM, efcid]
                        step = dim
                        improvement -= _elliptic_friction(w, efcid, dim, nv, J, se,
                                                          efc_force, sv, minvjt,
                                                          qcqp_iterations)
                    efcid += step
                for r in range(n):
                    si[w, I_OLDSTATE, r] = efc_state[w, r]
                nactive = _dual_state(w, n, se, si, efc_force, efc_state)
                nchange = 0
                for r in range(n):
                    nchange += efc_state[w, r] != si[w, I_OLDSTATE, r]
                improvement *= scale
                if it0 + it < nstat:
                    stats[w, 0, it0 + it, 0] = improvement
                    stats[w, 0, it0 + it, 1] = 0.0
                    stats[w, 0, it0 + it, 2] = 0.0
                    stats[w, 0, it0 + it, 3] = nactive
                    stats[w, 0, it0 + it, 4] = nchange
                    stats[w, 0, it0 + it, 5] = 0.0
                    stats[w, 0, it0 + it, 6] = 0.0
                it += 1
                if improvement < tolerance:
                    done = 1
                    break
            sw[w, W_IT] = it
            if done:
                sw[w, W_STAGE] = STAGE_DONE
                solver_niter[w][0] = it0 + it
                # dualFinish
                _dual_qfrc(w, n, nv, J, efc_force, qfrc_constraint)
                for k in range(nv):
                    sv[w, V_U, k] = qfrc_constraint[w, k]
                _solve_m(w, V_U, nv, sv, qLD, qLDiagInv, dof_Madr, dof_parentid,
                         dof_simplenum)
                for k in range(nv):
                    qacc[w, k] = qacc_smooth[w, k] + sv[w, V_U, k]
        if _limit_reached(probe):
            sw[w, W_LIMIT] = 1.0


def _minvjt(m, d, s):
    """The array noslip computes M^-1 J' into, by rows: PGS's (which solve left holding
    J M^-1/2 in its AR worlds, see solver._pgs), or noslip's own, allocated on first
    use."""
    if m.opt.solver == SOL_PGS:
        return s["minvjt"]
    shape = (d.nworld, s["se"].shape[2], s["sv"].shape[2])
    own = d.scratch.noslip_minvjt
    if own is None or own.shape != shape:
        own = d.scratch.noslip_minvjt = d.scratch.tag(ti.ndarray(d.qvel.dtype, shape))
        own.fill(0)  # rows of equalities are never written: keep them defined
    return own


def noslip(m, d, s, npass=None, probe=0) -> None:
    """MuJoCo's noslip post-processing (mj_solNoSlip) of every world with rows, after
    the main solver; ``s``: the solver scratch of ``solve`` (its row view se/si, dof
    vectors sv, progress sw, statistics, and PGS's M^-1 J' array to fill). ``npass``:
    sweeps per launch (all in one launch by default); ``probe``: 2 to flag a loop limiter that
    ran out in sw[W_LIMIT] (see solver.solve).

    Reads nefc, ne, nf, efc_type, efc_id, efc_J (sparse-Jacobian models: efc_J_sparse
    and its row structure), contact_dim, qLD_tree, qLDiagInv,
    qacc_smooth, efc_force (the main solver's) and solver_niter; writes efc_force,
    efc_state, qfrc_constraint, qacc, solver_niter and the noslip statistics.
    """
    opt = m.opt
    minvjt = _minvjt(m, d, s)
    launch(_noslip_prepare, m, d, qLD=d.qLD_tree, se=s["se"], minvjt=minvjt, sw=s["sw"],
           sparse=m.is_sparse)
    scale = 1.0 / (float(m.stat.meaninertia) * max(1, m.nv))
    # the sweeps, then a pass that only finds the last sweep done and finishes
    passes = int(opt.noslip_iterations) + 1
    npass = npass or passes
    for _ in range(-(-passes // npass)):
        launch(_noslip, m, d, qLD=d.qLD_tree, se=s["se"], si=s["si"], sv=s["sv"],
               sw=s["sw"], minvjt=minvjt, stats=s["stats"],
               maxiter=int(opt.noslip_iterations), tolerance=float(opt.noslip_tolerance),
               scale=scale, qcqp_iterations=QCQP_ITERATIONS, npass=npass, probe=probe,
               sparse=m.is_sparse)
