"""Constraint solver: what MuJoCo's mj_fwdConstraint does once the rows exist.

Given the rows of make_constraint (efc_J, or its non-zeros, efc_D, efc_R, efc_frictionloss,
efc_aref, contact friction and cones) and the smooth dynamics (qM and its factor,
qfrc_smooth, qacc_smooth), every world finds the constrained acceleration qacc that
minimizes MuJoCo's convex cost

    0.5 (qacc - qacc_smooth)' M (qacc - qacc_smooth) + s(J qacc - aref)

with the solver of ``opt.solver``, as MuJoCo 3.4.0 does:

- Newton (mj_solNewton): H = M + J'DJ over the quadratic rows, Cholesky per world
  or island (dense; sparse for sparse-Jacobian models, see below), rank-one updates
  and downdates when rows change state (full refactor when a downdate loses rank),
  elliptic cone Hessians added to a copy of the factor;
- CG (mj_solCG): Polak-Ribiere conjugate gradient preconditioned by M^-1 (qLD_tree);
- both with MuJoCo's exact line search (Newton steps on the piecewise-quadratic 1-D
  cost, one-sided then bracketed, ls_iterations / ls_tolerance) and termination on
  scaled improvement or gradient below opt.tolerance;
- PGS (mj_solPGS): projected Gauss-Seidel on the dual, friction boxes, non-negative
  normals and, for elliptic cones, MuJoCo's normal/ray update followed by the
  friction QCQP. MuJoCo builds AR = J M^-1 J' + R (nefc^2 per world); tiphys keeps
  M^-1 J' (nefc x nv, the size of efc_J) and the running qacc - qacc_smooth, so the
  residual of a row costs O(nv) and no nefc^2 matrix is stored.

Sparse-Jacobian models (m.is_sparse): J v (efc_b, warm-start J qacc, the line search's
J search, PGS residuals and AR entries) and J' f (CG / Newton constraint updates, PGS's
qfrc_constraint) run over each row's non-zeros (efc_J_sparse, efc_J_colind,
efc_J_rowadr, efc_J_rownnz; see jac_view), in the dense path's order, so PGS and CG
equal the dense path's to round-off. Newton factors a sparse H as MuJoCo's sparse
path does (kernels/hessian.py): _hessian_symbolic finds, per solve, J' by dof, H's
pattern (M's and every row's J'J, whatever its state) and the fill-in of its reverse
Cholesky factor L'L, in non-zero arrays of make_data's nhnnz entries per world; each
unit then builds H's values, factors, solves and updates in that pattern, with
MuJoCo's arithmetic, so it agrees with MuJoCo's sparse solve to round-off (and with
tiphys's dense path only to the solver tolerance). A unit whose factor does not fit
what the world's units before it left runs CG (efc_H_overflow, a warning). Sparse
models keep no dense efc_J (it is 1 x 1).

Warmstart as mj_fwdConstraint's: Newton/CG start from qacc_warmstart when its total
cost is not above that of qacc_smooth; PGS starts from the forces of qacc_warmstart
unless their dual cost is positive; the ``warmstart`` disable flag starts cold.

Islands (kernels/island.py finds them first), as MuJoCo 3.4.0's mj_fwdConstraint:
with the island flag on (the default), CG or Newton and no noslip, every world with
rows is solved island by island. The warm-start choice stays the world's (the total
cost of qacc_warmstart against qacc_smooth's); then each island runs mj_solCGNewton
on its own dofs and rows (in MuJoCo's idof / iefc order): its own Gauss and
constraint cost, Hessian block, scale (1 / the sum of its M diagonal instead of
1 / (meaninertia nv)), iterations, stopping test, solver_niter[island] and
statistics (mjData.solver[island]; islands from 20 on, mjNISLAND, are solved but not
recorded). Dofs in no island keep qacc_smooth and get no constraint force; with the
warm start kept they start there whatever the solver (so with noslip or PGS too,
where MuJoCo solves the world whole). efc_state is each island's final state (MuJoCo
keeps those in iefc_state and leaves efc_state as its warm-start test left it).
PGS, noslip and <flag island="disable"/> solve each world whole, as MuJoCo (iteration
count and statistics in island 0's slots). An island's rows and dofs
are read through map_iefc2efc and map_idof2dof: no island copy of efc_J or M is made
(MuJoCo gathers iefc_J, iM, iLD); the scratch vectors stay indexed by dof and row,
and an island's Hessian is its diagonal block of the world's in idof order.

Parallelism: rows products (efc_b, warm-start J qacc, M^-1 J' for PGS) run one thread
per (world, row), the initial Newton Hessian one per (world, dof); the warm-start
choice and each unit's first update one thread per world; the CG / Newton iterations
one thread per solve unit, (world, island) or (world) for a world solved whole, and
PGS one thread per world, inside one launch (each unit stops on its own criterion;
the launch ends when the last one has converged). A solve is 2 (PGS), 3 (CG) or 4
(Newton) launches whatever the iteration count, except on a backend whose threads
have a loop limit (Mesa's lavapipe: see loop_limit): there the iterations run a few
per launch, each unit's progress kept in the scratch between launches.

With opt.noslip_iterations > 0, MuJoCo's noslip post-processing (kernels/noslip.py)
follows whichever solver ran.
"""
import warnings

import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .collision import exact_math
from .consts import (CNSTR_CONTACT_ELLIPTIC, CNSTRSTATE_CONE, CNSTRSTATE_LINEARNEG,
                     CNSTRSTATE_LINEARPOS, CNSTRSTATE_QUADRATIC, CNSTRSTATE_SATISFIED,
                     CONE_ELLIPTIC, MINVAL, NSOLVER, SOL_CG, SOL_NEWTON, SOL_PGS)
from .hessian import (chol_factor_sparse, chol_solve_sparse, chol_update_sparse, hess_sizes,
                      hess_view)
from .loop_limit import limit_reached as _limit_reached, loop_limit

ND = ti.types.ndarray()
# Newton iterations of the friction QCQPs (MuJoCo's constant), passed to the kernel as
# a runtime value: a constant trip count lets LLVM unroll the loops and triples the
# compile time
QCQP_ITERATIONS = 20
# PGS sweeps a world of at most this many rows on its AR matrix (as mj_solPGS); a world
# with more, and a sparse-Jacobian model, go matrix-free (PGS_DENSE^2 numbers per world)
PGS_DENSE = 64

# row kinds, the solver's view of a row (by position, as MuJoCo: ne equality rows,
# nf friction rows, then limits and contacts)
KIND_EQUALITY, KIND_FRICTION, KIND_INEQUALITY, KIND_ELLIPTIC, KIND_CONE_TAIL = range(5)

# float rows of the per-row scratch ``se`` (nworld, E_N, njmax)
(E_D, E_R, E_FLOSS, E_FRIC, E_B, E_JAREF, E_JV, E_Q0, E_Q1, E_Q2, E_ARINV) = range(11)
E_N = 11
# int rows of ``si`` (nworld, I_N, njmax)
I_KIND, I_DIM, I_OLDSTATE = range(3)
I_N = 3
# dof vectors of ``sv`` (nworld, V_N, nv)
(V_QACC, V_MA, V_MV, V_GRAD, V_MGRAD, V_SEARCH, V_GRADOLD, V_MGRADOLD, V_VEC,
 V_U) = range(10)
V_N = 10
# per-world scalars of ``sw`` (nworld, W_N): the dual solvers' progress in each world,
# kept between the launches of a solve (small integers, exact in f32), and whether a
# loop limiter ran out
W_IT, W_STAGE, W_SWEEP, W_KEEP, W_LIMIT, W_IT0 = range(6)
W_N = 6
# W_STAGE, K_STAGE: the iteration kernels' progress in a world or unit
STAGE_START, STAGE_RUNNING, STAGE_DONE = range(3)
# CG / Newton solve "units", one per thread: a whole world, or one island of it. The
# unit table ``su`` (nworld, nunit, U_N): island or whole, first idof, dofs, first
# iefc, rows (0: nothing to solve)
U_ISLAND, U_DOFADR, U_NV, U_EFCADR, U_NEFC = range(5)
U_N = 5
# per-unit scalars of ``sk`` (nworld, nunit, K_N): cost, Gauss cost, counts,
# iteration, progress and the scale of improvement and gradient
K_COST, K_GAUSS, K_NACTIVE, K_NCONE, K_IT, K_STAGE, K_SCALE, K_OVER = range(8)
K_N = 8
NISLAND = 20  # mjNISLAND: islands with iteration counts and statistics
# per-iteration statistics (mjSolverStat) in ``stats`` (nworld, nslot, nstat, S_N),
# slot = island (0: a world solved whole)
STAT_NAMES = ("improvement", "gradient", "lineslope", "nactive", "nchange", "neval",
              "nupdate")
S_N = len(STAT_NAMES)

SOLVER_NAMES = {SOL_PGS: "PGS", SOL_CG: "CG", SOL_NEWTON: "Newton"}


# ---------------------------------------------------------------------------------------
# solve units: a whole world or one of its islands
# ---------------------------------------------------------------------------------------

@ti.dataclass
class Unit:
    """What one CG / Newton thread solves: a whole world (island 0: dofs 0 .. nv-1,
    rows 0 .. nefc-1) or one island of it (island 1: the idofs dofadr .. dofadr+nv-1
    and iefcs efcadr .. efcadr+nefc-1, read through map_idof2dof and map_iefc2efc;
    island 0 too when a world's one island holds all its dofs and rows, whose maps are
    then the identity). Scratch vectors stay indexed by dof and row (islands never
    share one); an island's Hessian is its block at (dofadr, dofadr) in idof order."""
    island: ti.i32
    dofadr: ti.i32
    nv: ti.i32
    efcadr: ti.i32
    nefc: ti.i32


# A unit's thread is (world, unit), not the loop index alone, so Taichi cannot prove
# that its global writes are its own: an augmented assignment (+=) to an ndarray would
# compile to an atomic (several times slower in the inner loops). Per-unit code
# writes ``a[i] = a[i] + x`` instead (the same arithmetic).


def _given(maps) -> bool:
    """Whether a map argument was passed (None: whole worlds only, no indirection)."""
    return maps is not None


@ti.func
def _whole(nv, n):
    return Unit(island=0, dofadr=0, nv=nv, efcadr=0, nefc=n)


@ti.func
def _load_unit(w, k, su: ti.template()):
    return Unit(island=su[w, k, U_ISLAND], dofadr=su[w, k, U_DOFADR], nv=su[w, k, U_NV],
                efcadr=su[w, k, U_EFCADR], nefc=su[w, k, U_NEFC])


@ti.func
def _dof(w, u, jj, dmap: ti.template()):
    """The dof of the unit's jj-th dof (``dmap``: map_idof2dof, or None)."""
    dofid = jj
    if ti.static(_given(dmap)):
        if u.island:
            dofid = dmap[w, u.dofadr + jj]
    return dofid


@ti.func
def _row(w, u, ii, rmap: ti.template()):
    """The row of the unit's ii-th row (``rmap``: map_iefc2efc, or None). The rows of
    an elliptic contact stay consecutive in both orders."""
    efcid = ii
    if ti.static(_given(rmap)):
        if u.island:
            efcid = rmap[w, u.efcadr + ii]
    return efcid


@ti.func
def _loc(w, u, dofid, d2i: ti.template()):
    """The unit's local index of a dof it holds (``d2i``: map_dof2idof, or None)."""
    a = dofid
    if ti.static(_given(d2i)):
        if u.island:
            a = d2i[w, dofid] - u.dofadr
    return a


# ---------------------------------------------------------------------------------------
# small dense and tree-sparse linear algebra on per-world scratch
# ---------------------------------------------------------------------------------------

@ti.func
def _mul_m(w, nv, qM: ti.template(), dof_Madr: ti.template(), dof_parentid: ti.template(),
           sv: ti.template(), src, dst):
    """sv[w, dst] = M sv[w, src], from qM's sparse rows."""
    _mul_m_unit(w, _whole(nv, 0), None, qM, dof_Madr, dof_parentid, sv, src, dst)


@ti.func
def _mul_m_unit(w, u, dmap: ti.template(), qM: ti.template(), dof_Madr: ti.template(),
                dof_parentid: ti.template(), sv: ti.template(), src, dst):
    """M sv[w, src] on the unit's dofs (whole trees, which M couples with no others)."""
    for jj in range(u.nv):
        sv[w, dst, _dof(w, u, jj, dmap)] = 0.0
    for jj in range(u.nv):
        i = _dof(w, u, jj, dmap)
        madr = dof_Madr[i]
        sv[w, dst, i] = sv[w, dst, i] + qM[w, madr] * sv[w, src, i]
        j = dof_parentid[i]
        adr = madr + 1
        while j >= 0:
            sv[w, dst, i] = sv[w, dst, i] + qM[w, adr] * sv[w, src, j]
            sv[w, dst, j] = sv[w, dst, j] + qM[w, adr] * sv[w, src, i]
            adr += 1
            j = dof_parentid[j]


@ti.func
def _solve_m(w, k, nv, x: ti.template(), qLD: ti.template(), qLDiagInv: ti.template(),
             dof_Madr: ti.template(), dof_parentid: ti.template(),
             dof_simplenum: ti.template()):
    """x[w, k] <- inv(M) x[w, k] with the L'DL factor in qM's layout (every tree at once:
    trees are contiguous and never couple)."""
    _solve_m_unit(w, k, _whole(nv, 0), None, x, qLD, qLDiagInv, dof_Madr, dof_parentid,
                  dof_simplenum)


@ti.func
def _solve_m_unit(w, k, u, dmap: ti.template(), x: ti.template(), qLD: ti.template(),
                  qLDiagInv: ti.template(), dof_Madr: ti.template(),
                  dof_parentid: ti.template(), dof_simplenum: ti.template()):
    """inv(M) on the unit's dofs (x[w, k] elsewhere untouched)."""
    for ii in range(u.nv):
        i = _dof(w, u, u.nv - 1 - ii, dmap)
        if dof_simplenum[i] == 0:
            xi = x[w, k, i]
            adr = dof_Madr[i] + 1
            j = dof_parentid[i]
            while j >= 0:
                x[w, k, j] = x[w, k, j] - qLD[w, adr] * xi
                adr += 1
                j = dof_parentid[j]
    for ii in range(u.nv):
        i = _dof(w, u, ii, dmap)
        x[w, k, i] = x[w, k, i] * qLDiagInv[w, i]
    for ii in range(u.nv):
        i = _dof(w, u, ii, dmap)
        if dof_simplenum[i] == 0:
            adr = dof_Madr[i] + 1
            j = dof_parentid[i]
            acc = x[w, k, i]
            while j >= 0:
                acc -= qLD[w, adr] * x[w, k, j]
                adr += 1
                j = dof_parentid[j]
            x[w, k, i] = acc


@ti.func
def _solve_m_rows(w, r0, n, nv, half, x: ti.template(), qLD: ti.template(),
                  qLDiagInv: ti.template(), dof_Madr: ti.template(),
                  dof_parentid: ti.template(), dof_simplenum: ti.template()):
    """x[w, r] <- inv(M) x[w, r] for rows r0 .. r0+n-1: _solve_m of each row, the same
    operations in the same order per row, with the tree walked once for all of them.
    ``half``: x[w, r] <- D^-1/2 inv(L') x[w, r] instead (mj_solveM2; M = L'DL, so
    inv(M) = (D^-1/2 inv(L'))' (D^-1/2 inv(L'))), half the work."""
    for ii in range(nv):
        i = nv - 1 - ii
        if dof_simplenum[i] == 0:
            _chain_rows(w, i, r0, n, True, x, qLD, dof_Madr, dof_parentid)
    for i in range(nv):
        dinv = qLDiagInv[w, i]
        if half:
            dinv = ti.sqrt(dinv)
        for r in range(r0, r0 + n):
            x[w, r, i] = x[w, r, i] * dinv
    if not half:
        for i in range(nv):
            if dof_simplenum[i] == 0:
                _chain_rows(w, i, r0, n, False, x, qLD, dof_Madr, dof_parentid)


@ti.func
def _chain_rows(w, i, r0, n, up: ti.template(), x: ti.template(), qLD: ti.template(),
                dof_Madr: ti.template(), dof_parentid: ti.template()):
    """For each ancestor j of dof i (row i of L, M = L'DL) and rows r0 .. r0+n-1 of x:
    x[r, j] -= L_ij x[r, i] (``up``: the solve with L') or x[r, i] -= L_ij x[r, j]
    (the solve with L)."""
    adr = dof_Madr[i] + 1
    j = dof_parentid[i]
    while j >= 0:
        lij = qLD[w, adr]
        for r in range(r0, r0 + n):
            if ti.static(up):
                x[w, r, j] = x[w, r, j] - lij * x[w, r, i]
            else:
                x[w, r, i] -= lij * x[w, r, j]
        adr += 1
        j = dof_parentid[j]


@ti.func
def _m_entry(w, i, j, qM: ti.template(), dof_Madr: ti.template(),
             dof_parentid: ti.template()):
    """M(i, j) for j <= i (zero unless j is i or one of its ancestors)."""
    val = 0.0
    k = i
    adr = dof_Madr[i]
    while k > j:
        k = dof_parentid[k]
        adr += 1
    if k == j:
        val = qM[w, adr]
    return val


@ti.func
def _chol_factor(w, k, n, H: ti.template(), mindiag, o):
    """In-place dense Cholesky of the n x n block of H[w, k] at (o, o) = L L' (lower
    triangle), as mju_cholFactor.

    Row by row, each row from its first nonzero entry: L(i, p) is exactly zero left
    of H's first nonzero in row i, so the skipped products are exact zeros and every
    entry gets the same sums, in the same order, as the dense column-by-column
    factorisation (bit for bit); a Hessian of weakly coupled bodies costs its
    envelope instead of n^3 / 6."""
    rank = n
    for i in range(n):
        f = i
        for p in range(i):
            if f == i and H[w, k, o + i, o + p] != 0.0:
                f = p
        for j in range(f, i):
            s = H[w, k, o + i, o + j]
            for p in range(f, j):
                s -= H[w, k, o + i, o + p] * H[w, k, o + j, o + p]
            H[w, k, o + i, o + j] = s * (1.0 / H[w, k, o + j, o + j])
        tmp = H[w, k, o + i, o + i]
        for p in range(f, i):
            tmp -= H[w, k, o + i, o + p] * H[w, k, o + i, o + p]
        if tmp < mindiag:
            tmp = mindiag
            rank -= 1
        H[w, k, o + i, o + i] = ti.sqrt(tmp)
    return rank


@ti.func
def _chol_solve(w, k, u, dmap: ti.template(), H: ti.template(), sv: ti.template(), src,
                dst):
    """sv[w, dst] = inv(L L') sv[w, src] on the unit's dofs, L its block of H[w, k], as
    mju_cholSolve."""
    n = u.nv
    o = u.dofadr
    for i in range(n):
        s = sv[w, src, _dof(w, u, i, dmap)]
        for j in range(i):
            s -= H[w, k, o + i, o + j] * sv[w, dst, _dof(w, u, j, dmap)]
        sv[w, dst, _dof(w, u, i, dmap)] = s / H[w, k, o + i, o + i]
    for ii in range(n):
        i = n - 1 - ii
        s = sv[w, dst, _dof(w, u, i, dmap)]
        for j in range(i + 1, n):
            s -= H[w, k, o + j, o + i] * sv[w, dst, _dof(w, u, j, dmap)]
        sv[w, dst, _dof(w, u, i, dmap)] = s / H[w, k, o + i, o + i]


@ti.func
def _chol_update(w, k, u, dmap: ti.template(), H: ti.template(), sv: ti.template(),
                 xrow, flg_plus):
    """L L' +/- x x' in place on the unit's block (x = sv[w, xrow] on its dofs,
    destroyed), as mju_cholUpdate; returns the rank."""
    n = u.nv
    o = u.dofadr
    rank = n
    for kk in range(n):
        xk = sv[w, xrow, _dof(w, u, kk, dmap)]
        if xk != 0.0:
            lkk = H[w, k, o + kk, o + kk]
            tmp = lkk * lkk - xk * xk
            if flg_plus:
                tmp = lkk * lkk + xk * xk
            if tmp < MINVAL:
                tmp = MINVAL
                rank -= 1
            r = ti.sqrt(tmp)
            c = r / lkk
            cinv = 1.0 / c
            s = xk / lkk
            H[w, k, o + kk, o + kk] = r
            for i in range(kk + 1, n):
                xi = sv[w, xrow, _dof(w, u, i, dmap)]
                if flg_plus:
                    H[w, k, o + i, o + kk] = (H[w, k, o + i, o + kk] + s * xi) * cinv
                else:
                    H[w, k, o + i, o + kk] = (H[w, k, o + i, o + kk] - s * xi) * cinv
            for i in range(kk + 1, n):
                di = _dof(w, u, i, dmap)
                sv[w, xrow, di] = c * sv[w, xrow, di] - s * H[w, k, o + i, o + kk]
    return rank


# The loop limiter of Mesa's software Vulkan (kernels/loop_limit.py): a solver launch
# that ran all iterations of a world in one thread passed lavapipe's 65535 back-edges
# after a few dozen iterations (PGS: 32 sweeps of a 24-row, 18-dof world), and its
# loops then stopped early: wrong qacc, or none. So on such a backend the iteration
# kernels run a bounded number of passes per launch and keep each world's progress in
# sw; _limit_reached at the end of each launch tells whether the counter ran out, and
# then solve starts over with fewer passes per launch.


# ---------------------------------------------------------------------------------------
# constraint states, forces and costs (mj_constraintUpdate_impl)
# ---------------------------------------------------------------------------------------

@ti.func
def _quadratic_change(w, i, si: ti.template(), efc_state: ti.template()):
    """How row i's state changed since the last Hessian (HessianIncremental): 1 it
    entered the quadratic state (an update), 0 it left it (a downdate), -1 neither."""
    old = si[w, I_OLDSTATE, i]
    new = efc_state[w, i]
    flag = -1
    if (old != CNSTRSTATE_QUADRATIC) & (new == CNSTRSTATE_QUADRATIC):
        flag = 1
    elif (old == CNSTRSTATE_QUADRATIC) & (new != CNSTRSTATE_QUADRATIC):
        flag = 0
    return flag


@ti.func
def _constraint_update(w, n, se: ti.template(), si: ti.template(), jrow,
                       force: ti.template(), state: ti.template()):
    """efc_force and efc_state of a world's n rows from jar = se[w, jrow]; returns the
    constraint cost."""
    return _constraint_update_unit(w, _whole(0, n), None, se, si, jrow, force, state)


@ti.func
def _constraint_update_unit(w, u, rmap: ti.template(), se: ti.template(),
                            si: ti.template(), jrow, force: ti.template(),
                            state: ti.template()):
    """efc_force and efc_state of the unit's rows from jar = se[w, jrow]; returns their
    constraint cost."""
    cost = 0.0
    ii = 0
    while ii < u.nefc:
        i = _row(w, u, ii, rmap)
        kind = si[w, I_KIND, i]
        jar = se[w, jrow, i]
        D = se[w, E_D, i]
        step = 1
        if kind == KIND_EQUALITY:
            cost += 0.5 * D * jar * jar
            force[w, i] = -D * jar
            state[w, i] = CNSTRSTATE_QUADRATIC
        elif kind == KIND_FRICTION:
            R = se[w, E_R, i]
            fl = se[w, E_FLOSS, i]
            if jar <= -R * fl:
                cost += -0.5 * R * fl * fl - fl * jar
                force[w, i] = fl
                state[w, i] = CNSTRSTATE_LINEARNEG
            elif jar >= R * fl:
                cost += -0.5 * R * fl * fl + fl * jar
                force[w, i] = -fl
                state[w, i] = CNSTRSTATE_LINEARPOS
            else:
                cost += 0.5 * D * jar * jar
                force[w, i] = -D * jar
                state[w, i] = CNSTRSTATE_QUADRATIC
        elif kind == KIND_INEQUALITY:
            if jar >= 0.0:
                force[w, i] = 0.0
                state[w, i] = CNSTRSTATE_SATISFIED
            else:
                cost += 0.5 * D * jar * jar
                force[w, i] = -D * jar
                state[w, i] = CNSTRSTATE_QUADRATIC
        else:  # elliptic cone: rows i .. i+dim-1
            dim = si[w, I_DIM, i]
            step = dim
            mu = se[w, E_FRIC, i]
            N = jar * mu
            tsqr = 0.0
            for j in range(1, dim):
                uj = se[w, jrow, i + j] * se[w, E_FRIC, i + j]
                tsqr += uj * uj
            T = ti.sqrt(tsqr)
            result = CNSTRSTATE_CONE
            if (N >= mu * T) | ((T <= 0.0) & (N >= 0.0)):
                for j in range(dim):
                    force[w, i + j] = 0.0
                result = CNSTRSTATE_SATISFIED
            elif (mu * N + T <= 0.0) | ((T <= 0.0) & (N < 0.0)):
                for j in range(dim):
                    jj = se[w, jrow, i + j]
                    cost += 0.5 * se[w, E_D, i + j] * jj * jj
                    force[w, i + j] = -se[w, E_D, i + j] * jj
                result = CNSTRSTATE_QUADRATIC
            else:
                dm = D / (mu * mu * (1.0 + mu * mu))
                nmt = N - mu * T
                cost += 0.5 * dm * nmt * nmt
                f0 = -dm * nmt * mu
                force[w, i] = f0
                for j in range(1, dim):
                    fr = se[w, E_FRIC, i + j]
                    force[w, i + j] = -f0 / T * (se[w, jrow, i + j] * fr) * fr
            for j in range(dim):
                state[w, i + j] = result
        ii += step
    return cost


@ti.func
def _cone_hessian(w, slot, i, dim, se: ti.template(), sb: ti.template()):
    """The cone-state Hessian of the elliptic contact at row i (dim x dim, from
    Jaref), as mj_constraintUpdate_impl's contact H, into sb[w, slot]."""
    mu = se[w, E_FRIC, i]
    n0 = se[w, E_JAREF, i] * mu
    tsqr = 0.0
    for j in range(1, dim):
        u = se[w, E_JAREF, i + j] * se[w, E_FRIC, i + j]
        tsqr += u * u
    T = ti.sqrt(tsqr)
    dm = se[w, E_D, i] / (mu * mu * (1.0 + mu * mu))
    sb[w, slot, 0, 0] = 1.0
    for j in range(1, dim):
        sb[w, slot, 0, j] = -mu / T * se[w, E_JAREF, i + j] * se[w, E_FRIC, i + j]
    scl = mu * n0 / (T * T * T)
    for k in range(1, dim):
        uk = se[w, E_JAREF, i + k] * se[w, E_FRIC, i + k]
        for j in range(k, dim):
            sb[w, slot, k, j] = scl * se[w, E_JAREF, i + j] * se[w, E_FRIC, i + j] * uk
    scl = mu * mu - mu * n0 / T
    for j in range(1, dim):
        sb[w, slot, j, j] = sb[w, slot, j, j] + scl
    # scale by diag(mu, friction) on both sides and Dm; mirror into the lower triangle
    for k in range(dim):
        for j in range(k, dim):
            sb[w, slot, k, j] = sb[w, slot, k, j] * (
                dm * se[w, E_FRIC, i + k] * se[w, E_FRIC, i + j])
            sb[w, slot, j, k] = sb[w, slot, k, j]


def jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr, efc_J_rownnz):
    """The Jacobian the solver funcs read (``J``, compile-time): (efc_J,) dense, or
    (efc_J, values, colind, rowadr, rownnz) for sparse-Jacobian models, whose row
    products J v and J' f then run over each row's non-zeros (Newton's Hessian:
    kernels/hessian.py). Use as ti.static(jac_view(...))."""
    if sparse:
        return (efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr, efc_J_rownnz)
    return (efc_J,)


@ti.func
def jrow_dense(w, i, nv, J: ti.template(), out: ti.template()):
    """Row i of J (``J``: jac_view) written densely into out[w, i, :nv]."""
    if ti.static(len(J) > 1):
        for j in range(nv):
            out[w, i, j] = 0.0
        adr = J[3][w, i]
        for k in range(J[4][w, i]):
            out[w, i, J[2][w, adr + k]] = J[1][w, adr + k]
    else:
        for j in range(nv):
            out[w, i, j] = J[0][w, i, j]


@ti.func
def _jrow_dot(w, i, J: ti.template(), vec: ti.template(), has_slot: ti.template(), slot):
    """Sparse row i of J times vec[w, slot, :] (has_slot) or vec[w, :]."""
    adr = J[3][w, i]
    s = 0.0
    for k in range(J[4][w, i]):
        if ti.static(has_slot):
            s += J[1][w, adr + k] * vec[w, slot, J[2][w, adr + k]]
        else:
            s += J[1][w, adr + k] * vec[w, J[2][w, adr + k]]
    return s


@ti.func
def _update_constraint(w, u, dmap: ti.template(), rmap: ti.template(),
                       J: ti.template(), se: ti.template(), si: ti.template(),
                       force: ti.template(), state: ti.template(),
                       qfrc_constraint: ti.template(), sv: ti.template(),
                       qfrc_smooth: ti.template(), qacc_smooth: ti.template()):
    """CGupdateConstraint on a unit: forces, states, qfrc_constraint = J'f, counts,
    total cost."""
    cost = _constraint_update_unit(w, u, rmap, se, si, E_JAREF, force, state)
    if ti.static(len(J) > 1):
        # J'f from the rows' non-zeros (a unit's rows touch its own dofs only)
        for jj in range(u.nv):
            qfrc_constraint[w, _dof(w, u, jj, dmap)] = 0.0
        for ii in range(u.nefc):
            i = _row(w, u, ii, rmap)
            f = force[w, i]
            adr = J[3][w, i]
            for k in range(J[4][w, i]):
                qfrc_constraint[w, J[2][w, adr + k]] += J[1][w, adr + k] * f
    else:
        for jj in range(u.nv):
            j = _dof(w, u, jj, dmap)
            s = 0.0
            for ii in range(u.nefc):
                i = _row(w, u, ii, rmap)
                s += J[0][w, i, j] * force[w, i]
            qfrc_constraint[w, j] = s
    nactive = 0
    ncone = 0
    for ii in range(u.nefc):
        i = _row(w, u, ii, rmap)
        nactive += state[w, i] != CNSTRSTATE_SATISFIED
        ncone += state[w, i] == CNSTRSTATE_CONE
    gauss = 0.0
    for jj in range(u.nv):
        i = _dof(w, u, jj, dmap)
        gauss += 0.5 * (sv[w, V_MA, i] - qfrc_smooth[w, i]) * (
            sv[w, V_QACC, i] - qacc_smooth[w, i])
    return cost + gauss, gauss, nactive, ncone


# ---------------------------------------------------------------------------------------
# row set-up: efc_b, warm-start J qacc, the solver's row view, M^-1 J' for the dual
# ---------------------------------------------------------------------------------------

@ti.func
def row_params(w, i, ne: ti.template(), nf: ti.template(), efc_type: ti.template(),
               efc_id: ti.template(), efc_D: ti.template(), efc_R: ti.template(),
               efc_frictionloss: ti.template(), contact_dim: ti.template(),
               contact_mu: ti.template(), contact_friction: ti.template(),
               contact_efc_address: ti.template(), se: ti.template(), si: ti.template()):
    """Row i's solver view: D, R, friction loss, kind (equality, friction, inequality,
    elliptic cone head or tail), cone dimension and friction coefficient."""
    se[w, E_D, i] = efc_D[w, i]
    se[w, E_R, i] = efc_R[w, i]
    se[w, E_FLOSS, i] = efc_frictionloss[w, i]
    kind = KIND_INEQUALITY
    dim = 1
    fric = 0.0
    if i < ne[w]:
        kind = KIND_EQUALITY
    elif i < ne[w] + nf[w]:
        kind = KIND_FRICTION
    elif efc_type[w, i] == CNSTR_CONTACT_ELLIPTIC:
        conid = efc_id[w, i]
        j = i - contact_efc_address[w, conid]
        kind = KIND_CONE_TAIL
        if j == 0:
            kind = KIND_ELLIPTIC
            dim = contact_dim[w, conid]
            fric = contact_mu[w, conid]
        else:
            fric = contact_friction[w, conid][j - 1]
    si[w, I_KIND, i] = kind
    si[w, I_DIM, i] = dim
    se[w, E_FRIC, i] = fric


@ti.kernel
def _prepare(
    # model
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, nv: ti.i32,
    # data in
    ne: ND, nf: ND, nefc: ND, efc_type: ND, efc_id: ND, efc_J: ND, efc_D: ND, efc_R: ND,
    efc_frictionloss: ND, efc_aref: ND, contact_mu: ND, contact_friction: ND,
    contact_dim: ND, contact_efc_address: ND, qLD: ND, qLDiagInv: ND, qacc_smooth: ND,
    qacc_warmstart: ND, efc_J_sparse: ND, efc_J_colind: ND, efc_J_rowadr: ND,
    efc_J_rownnz: ND,
    # data out
    efc_b: ND,
    # scratch
    se: ND, si: ND, minvjt: ND, sw: ND,
    # options
    warmstart: ti.i32, dual: ti.i32, ndense: ti.i32, sparse: ti.template(),
):
    J = ti.static(jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr,
                           efc_J_rownnz))
    nworld = efc_D.shape[0]
    njmax = efc_D.shape[1]
    if ti.static(config.building_twin()):
        # a CPU twin: each world's own rows only (not njmax iterations per world), and
        # M^-1 J' (or J M^-1/2) of all of them in one walk down the tree
        for w in range(nworld):
            _restart(w, sw)
            n = nefc[w]
            for i in range(n):
                _prepare_row(w, i, dof_parentid, dof_Madr, dof_simplenum, nv, ne, nf,
                             efc_type, efc_id, J, efc_D, efc_R, efc_frictionloss,
                             efc_aref, contact_mu, contact_friction, contact_dim,
                             contact_efc_address, qLD, qLDiagInv, qacc_smooth,
                             qacc_warmstart, efc_b, se, si, minvjt, warmstart, 0, 0)
                if dual:
                    jrow_dense(w, i, nv, J, minvjt)
            if dual:
                dense = n <= ndense
                _solve_m_rows(w, 0, n, nv, dense, minvjt, qLD, qLDiagInv, dof_Madr,
                              dof_parentid, dof_simplenum)
                if not dense:  # (an AR world's: _fill_ar, from AR's diagonal)
                    for i in range(n):
                        se[w, E_ARINV, i] = 1.0 / (_ar_entry(w, i, i, nv, False, J,
                                                             minvjt) + efc_R[w, i])
    else:
        for w, i in ti.ndrange(nworld, njmax):
            if i == 0:
                _restart(w, sw)
            if i < nefc[w]:
                _prepare_row(w, i, dof_parentid, dof_Madr, dof_simplenum, nv, ne, nf,
                             efc_type, efc_id, J, efc_D, efc_R, efc_frictionloss,
                             efc_aref, contact_mu, contact_friction, contact_dim,
                             contact_efc_address, qLD, qLDiagInv, qacc_smooth,
                             qacc_warmstart, efc_b, se, si, minvjt, warmstart, dual,
                             nefc[w] <= ndense)


@ti.func
def _restart(w, sw: ti.template()):
    """The iteration kernels start from here (see solve)."""
    sw[w, W_IT] = 0.0
    sw[w, W_STAGE] = STAGE_START
    sw[w, W_LIMIT] = 0.0


@ti.func
def _prepare_row(w, i, dof_parentid: ti.template(), dof_Madr: ti.template(),
                 dof_simplenum: ti.template(), nv, ne: ti.template(), nf: ti.template(),
                 efc_type: ti.template(), efc_id: ti.template(), J: ti.template(),
                 efc_D: ti.template(), efc_R: ti.template(),
                 efc_frictionloss: ti.template(), efc_aref: ti.template(),
                 contact_mu: ti.template(), contact_friction: ti.template(),
                 contact_dim: ti.template(), contact_efc_address: ti.template(),
                 qLD: ti.template(), qLDiagInv: ti.template(),
                 qacc_smooth: ti.template(), qacc_warmstart: ti.template(),
                 efc_b: ti.template(), se: ti.template(), si: ti.template(),
                 minvjt: ti.template(), warmstart, dual, dense):
    """efc_b, the row's solver scalars, and (dual) its row of M^-1 J' and 1 / AR_ii
    (``dense``: its row of J M^-1/2, and 1 / AR_ii from _fill_ar, see _pgs)."""
    b = 0.0
    jw = 0.0
    if ti.static(len(J) > 1):
        b = _jrow_dot(w, i, J, qacc_smooth, False, 0)
        if warmstart:
            jw = _jrow_dot(w, i, J, qacc_warmstart, False, 0)
    else:
        for j in range(nv):
            b += J[0][w, i, j] * qacc_smooth[w, j]
        if warmstart:
            for j in range(nv):
                jw += J[0][w, i, j] * qacc_warmstart[w, j]
    aref = efc_aref[w, i]
    efc_b[w, i] = b - aref
    se[w, E_B, i] = b - aref
    se[w, E_JAREF, i] = jw - aref
    row_params(w, i, ne, nf, efc_type, efc_id, efc_D, efc_R, efc_frictionloss,
               contact_dim, contact_mu, contact_friction, contact_efc_address,
               se, si)
    if dual:
        jrow_dense(w, i, nv, J, minvjt)
        _solve_m_rows(w, i, 1, nv, dense, minvjt, qLD, qLDiagInv, dof_Madr, dof_parentid,
                      dof_simplenum)
        if not dense:
            se[w, E_ARINV, i] = 1.0 / (_ar_entry(w, i, i, nv, False, J, minvjt) +
                                       efc_R[w, i])


# ---------------------------------------------------------------------------------------
# CG and Newton (mj_solCGNewton)
# ---------------------------------------------------------------------------------------

@ti.kernel
def _primal_start(
    # model
    dof_parentid: ND, dof_Madr: ND, nv: ti.i32,
    # data in
    nefc: ND, efc_J: ND, qM: ND, qfrc_smooth: ND, qacc_smooth: ND, qacc_warmstart: ND,
    nisland: ND, dof_island: ND, island_nv: ND, island_idofadr: ND, island_nefc: ND,
    island_iefcadr: ND, map_idof2dof: ND, map_iefc2efc: ND, efc_J_sparse: ND,
    efc_J_colind: ND, efc_J_rowadr: ND, efc_J_rownnz: ND,
    # data out
    qacc: ND, efc_force: ND, efc_state: ND, qfrc_constraint: ND, solver_niter: ND,
    # scratch
    se: ND, si: ND, sv: ND, sw: ND, su: ND, sk: ND,
    # options
    warmstart: ti.i32, scale: float, probe: ti.i32, by_island: ti.template(),
    sparse: ti.template(),
):
    """Warmstart choice (total cost of qacc_warmstart vs qacc_smooth, world by world as
    MuJoCo's warmstart), then the solve units of each world (its islands with
    ``by_island``, compile-time, where it has any, else the whole world) and each
    unit's first constraint update; worlds without rows get qacc = qacc_smooth."""
    J = ti.static(jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr,
                           efc_J_rownnz))
    ti.loop_config(block_dim=ti.static(config.cuda_world_block()))
    for w in range(nefc.shape[0]):
        n = nefc[w]
        for k in ti.static(range(NISLAND)):
            solver_niter[w][k] = 0
        nunit = 0
        if n == 0:
            for i in range(nv):
                qacc[w, i] = qacc_smooth[w, i]
                qfrc_constraint[w, i] = 0.0
        else:
            use_warm = 0
            if warmstart:
                for i in range(nv):
                    sv[w, V_QACC, i] = qacc_warmstart[w, i]
                _mul_m(w, nv, qM, dof_Madr, dof_parentid, sv, V_QACC, V_MA)
                gauss_warm = 0.0
                for i in range(nv):
                    gauss_warm += 0.5 * (sv[w, V_MA, i] - qfrc_smooth[w, i]) * (
                        qacc_warmstart[w, i] - qacc_smooth[w, i])
                # total cost of qacc_warmstart, then of qacc_smooth (no Gauss term)
                cost_warm = gauss_warm
                cost_smooth = 0.0
                for k in range(2):
                    row = E_JAREF
                    if k == 1:
                        row = E_B
                    c = _constraint_update(w, n, se, si, row, efc_force, efc_state)
                    if k == 0:
                        cost_warm += c
                    else:
                        cost_smooth = c
                use_warm = not (cost_warm > cost_smooth)
            if not use_warm:
                for i in range(nv):
                    sv[w, V_QACC, i] = qacc_smooth[w, i]
                _mul_m(w, nv, qM, dof_Madr, dof_parentid, sv, V_QACC, V_MA)
                for i in range(n):
                    se[w, E_JAREF, i] = se[w, E_B, i]
            elif nisland[w] > 0:
                # with islands, the dofs in none start (and stay) at qacc_smooth,
                # whichever solver runs; J is zero on them, so Jaref keeps
                for i in range(nv):
                    if dof_island[w, i] < 0:
                        sv[w, V_QACC, i] = qacc_smooth[w, i]
                _mul_m(w, nv, qM, dof_Madr, dof_parentid, sv, V_QACC, V_MA)
            nunit = 1
            if ti.static(by_island):
                if nisland[w] > 0:
                    nunit = nisland[w]
                    # every row's state at the start (rows in no island keep it) and
                    # the dofs the islands leave alone
                    _constraint_update(w, n, se, si, E_JAREF, efc_force, efc_state)
                    for i in range(nv):
                        qacc[w, i] = sv[w, V_QACC, i]
                        qfrc_constraint[w, i] = 0.0
                    # one island holding every dof and row (most robots, a cloth): its
                    # maps are the identity (idofs and iefcs keep dof and row order
                    # within an island), so its unit reads dofs and rows directly
                    mapped = ti.cast((nunit > 1) | (island_nv[w, 0] != nv) |
                                     (island_nefc[w, 0] != n), ti.i32)
                    for k in range(nunit):
                        u = Unit(island=mapped, dofadr=island_idofadr[w, k],
                                 nv=island_nv[w, k], efcadr=island_iefcadr[w, k],
                                 nefc=island_nefc[w, k])
                        # 1 / the island's inertia: the sum of its M diagonal
                        inertia = 0.0
                        for jj in range(u.nv):
                            inertia += qM[w, dof_Madr[_dof(w, u, jj, map_idof2dof)]]
                        _start_unit(w, k, u, map_idof2dof, map_iefc2efc, 1.0 / inertia,
                                    J, qfrc_smooth, qacc_smooth, efc_force,
                                    efc_state, qfrc_constraint, se, si, sv, su, sk)
                else:  # rows in no island (MuJoCo stops with an error): whole
                    _start_unit(w, 0, _whole(nv, n), map_idof2dof, map_iefc2efc, scale,
                                J, qfrc_smooth, qacc_smooth, efc_force, efc_state,
                                qfrc_constraint, se, si, sv, su, sk)
            else:
                _start_unit(w, 0, _whole(nv, n), None, None, scale, J, qfrc_smooth,
                            qacc_smooth, efc_force, efc_state, qfrc_constraint, se, si,
                            sv, su, sk)
        for k in range(nunit, su.shape[1]):
            su[w, k, U_NEFC] = 0
        if _limit_reached(probe):
            sw[w, W_LIMIT] = 1.0


@ti.func
def _start_unit(w, k, u, dmap: ti.template(), rmap: ti.template(), scale,
                J: ti.template(), qfrc_smooth: ti.template(),
                qacc_smooth: ti.template(), efc_force: ti.template(),
                efc_state: ti.template(), qfrc_constraint: ti.template(),
                se: ti.template(), si: ti.template(), sv: ti.template(),
                su: ti.template(), sk: ti.template()):
    """Unit k of world w: its entry in su, first constraint update and scalars."""
    su[w, k, U_ISLAND] = u.island
    su[w, k, U_DOFADR] = u.dofadr
    su[w, k, U_NV] = u.nv
    su[w, k, U_EFCADR] = u.efcadr
    su[w, k, U_NEFC] = u.nefc
    cost, gauss, nactive, ncone = _update_constraint(
        w, u, dmap, rmap, J, se, si, efc_force, efc_state, qfrc_constraint, sv,
        qfrc_smooth, qacc_smooth)
    sk[w, k, K_COST] = cost
    sk[w, k, K_GAUSS] = gauss
    sk[w, k, K_NACTIVE] = nactive
    sk[w, k, K_NCONE] = ncone
    sk[w, k, K_IT] = 0.0
    sk[w, k, K_STAGE] = STAGE_START
    sk[w, k, K_SCALE] = scale


@ti.func
def _hessian_row(w, a, u, dmap: ti.template(), rmap: ti.template(),
                 efc_J: ti.template(), se: ti.template(), efc_state: ti.template(),
                 qM: ti.template(), dof_Madr: ti.template(), dof_parentid: ti.template(),
                 sH: ti.template()):
    """Row a of the unit's dense H = M + sum over quadratic rows of J(r, :)' D(r)
    J(r, :), lower triangle (b <= a). Rows are summed in order, as a dense J'DJ does,
    but a row whose J(r, a) is zero is skipped: it only adds zeros, and contact rows
    touch a handful of dofs, so a large scene costs nefc * nnz * nv instead of
    nefc * nv^2 / 2. J(r, 0..a) is read contiguously (for a whole world)."""
    o = u.dofadr
    i = _dof(w, u, a, dmap)
    for b in range(a + 1):
        sH[w, 0, o + a, o + b] = 0.0
    for rr in range(u.nefc):
        r = _row(w, u, rr, rmap)
        if efc_state[w, r] == CNSTRSTATE_QUADRATIC:
            jri = efc_J[w, r, i]
            if jri != 0.0:
                ad = jri * se[w, E_D, r]
                for b in range(a + 1):
                    sH[w, 0, o + a, o + b] = sH[w, 0, o + a, o + b] + \
                        ad * efc_J[w, r, _dof(w, u, b, dmap)]
    for b in range(a + 1):
        sH[w, 0, o + a, o + b] = sH[w, 0, o + a, o + b] + _m_entry(
            w, i, _dof(w, u, b, dmap), qM, dof_Madr, dof_parentid)


@ti.kernel
def _hessian(
    dof_parentid: ND, dof_Madr: ND, nv: ti.i32,
    nefc: ND, efc_J: ND, efc_state: ND, qM: ND, nidof: ND, dof_island: ND,
    map_idof2dof: ND, map_iefc2efc: ND, se: ND, su: ND, sH: ND, by_island: ti.template(),
):
    """Dense Newton's initial H = M + J'DJ of every unit (lower triangle), one thread
    per (world, dof), in idof order where a world is solved by islands (``by_island``:
    as _primal_iterate). Compiled without fast math (see _solve): each product is
    rounded before it is added, as when these sums were atomic adds."""
    for w, jj in ti.ndrange(nefc.shape[0], nv):
        if nefc[w] > 0:
            if ti.static(by_island):
                k = 0
                a = jj
                if su[w, 0, U_ISLAND]:
                    k = -1
                    if jj < nidof[w]:
                        k = dof_island[w, map_idof2dof[w, jj]]
                        a = jj - su[w, k, U_DOFADR]
                if k >= 0:
                    _hessian_row(w, a, _load_unit(w, k, su), map_idof2dof,
                                 map_iefc2efc, efc_J, se, efc_state, qM, dof_Madr,
                                 dof_parentid, sH)
            else:
                _hessian_row(w, jj, _whole(nv, nefc[w]), None, None, efc_J, se,
                             efc_state, qM, dof_Madr, dof_parentid, sH)


@ti.func
def _hessian_cone(w, slot, u, dmap: ti.template(), rmap: ti.template(),
                  J: ti.template(), se: ti.template(), si: ti.template(),
                  efc_state: ti.template(), sH: ti.template(), sv: ti.template(),
                  sb: ti.template()):
    """Lcone = L updated with every cone-state contact's J' Hcone J (the unit's block);
    returns the number of rank-one updates."""
    o = u.dofadr
    for a in range(u.nv):
        for b in range(a + 1):
            sH[w, 1, o + a, o + b] = sH[w, 0, o + a, o + b]
    nupdate = 0
    for ii in range(u.nefc):
        i = _row(w, u, ii, rmap)
        if (si[w, I_KIND, i] == KIND_ELLIPTIC) & (efc_state[w, i] == CNSTRSTATE_CONE):
            dim = si[w, I_DIM, i]
            _cone_hessian(w, slot, i, dim, se, sb)
            _chol_factor(w, slot, dim, sb, MINVAL, 0)
            for c in range(dim):
                for kk in range(u.nv):
                    k = _dof(w, u, kk, dmap)
                    s = 0.0
                    for r in range(c, dim):
                        s += sb[w, slot, r, c] * J[0][w, i + r, k]
                    sv[w, V_VEC, k] = s
                _chol_update(w, 1, u, dmap, sH, sv, V_VEC, 1)
            nupdate += dim
    return nupdate


# ---------------------------------------------------------------------------------------
# Newton's sparse Hessian (sparse-Jacobian models; kernels/hessian.py)
# ---------------------------------------------------------------------------------------

@ti.func
def _sym_jt(w, u, jtp, rmap: ti.template(), d2i: ti.template(), efc_J_colind: ti.template(),
            efc_J_rowadr: ti.template(), efc_J_rownnz: ti.template(), HS: ti.template()):
    """The unit's rows' local columns (jl) and J' by position from jtp on (rows
    ascending); returns the next free J' entry."""
    o = u.dofadr
    for a in range(u.nv):
        HS.iv[w, HS.jtnnz + o + a] = 0
    for rr in range(u.nefc):
        r = _row(w, u, rr, rmap)
        adr = efc_J_rowadr[w, r]
        for t in range(efc_J_rownnz[w, r]):
            l = _loc(w, u, efc_J_colind[w, adr + t], d2i)
            HS.iv[w, HS.jl + adr + t] = l
            HS.iv[w, HS.jtnnz + o + l] += 1
    for a in range(u.nv):
        HS.iv[w, HS.jtadr + o + a] = jtp
        jtp += HS.iv[w, HS.jtnnz + o + a]
        HS.iv[w, HS.jtnnz + o + a] = 0
    for rr in range(u.nefc):
        r = _row(w, u, rr, rmap)
        adr = efc_J_rowadr[w, r]
        for t in range(efc_J_rownnz[w, r]):
            p = o + HS.iv[w, HS.jl + adr + t]
            q = HS.iv[w, HS.jtadr + p] + HS.iv[w, HS.jtnnz + p]
            HS.iv[w, HS.jtr + q] = r
            HS.iv[w, HS.jta + q] = adr + t
            HS.iv[w, HS.jtnnz + p] += 1
    return jtp


@ti.func
def _sym_push(w, l, a, o, cnt, hp, HS: ti.template()):
    """Add local column l to row a's H pattern (once: the marker), while it fits."""
    if HS.iv[w, HS.mark + o + l] != a:
        HS.iv[w, HS.mark + o + l] = a
        if hp + cnt < HS.nh:
            HS.iv[w, HS.hcol + hp + cnt] = l
        cnt += 1
    return cnt


@ti.func
def _sym_h(w, u, hp, dmap: ti.template(), d2i: ti.template(), dof_parentid: ti.template(),
           efc_J_rowadr: ti.template(), efc_J_rownnz: ti.template(), HS: ti.template()):
    """H's lower pattern, row by row from hp on: M's (the dof's ancestors), the
    diagonal, and the columns left of it of every row touching it, sorted; also each
    dof's local index. Returns (the next free entry, whether it did not fit)."""
    o = u.dofadr
    for a in range(u.nv):
        HS.iv[w, HS.mark + o + a] = -1
        HS.iv[w, HS.loc + _dof(w, u, a, dmap)] = a
    over = 0
    for a in range(u.nv):
        p = o + a
        cnt = 0
        j = dof_parentid[_dof(w, u, a, dmap)]
        while j >= 0:
            cnt = _sym_push(w, _loc(w, u, j, d2i), a, o, cnt, hp, HS)
            j = dof_parentid[j]
        cnt = _sym_push(w, a, a, o, cnt, hp, HS)
        jtadr = HS.iv[w, HS.jtadr + p]
        for q in range(jtadr, jtadr + HS.iv[w, HS.jtnnz + p]):
            r = HS.iv[w, HS.jtr + q]
            adr = efc_J_rowadr[w, r]
            for t in range(efc_J_rownnz[w, r]):
                l = HS.iv[w, HS.jl + adr + t]
                if l <= a:
                    cnt = _sym_push(w, l, a, o, cnt, hp, HS)
        if hp + cnt > HS.nh:
            over = 1
        else:  # insertion sort: a few dozen columns
            for t in range(1, cnt):
                v = HS.iv[w, HS.hcol + hp + t]
                b = t
                while b > 0:
                    if HS.iv[w, HS.hcol + hp + b - 1] < v:
                        break
                    HS.iv[w, HS.hcol + hp + b] = HS.iv[w, HS.hcol + hp + b - 1]
                    b -= 1
                HS.iv[w, HS.hcol + hp + b] = v
        HS.iv[w, HS.hadr + p] = hp
        HS.iv[w, HS.hnnz + p] = cnt
        hp += cnt
    return hp, over


@ti.func
def _sym_l(w, u, lp, HS: ti.template()):
    """L's pattern from lp on, last row first: H's row merged with its children's
    rows left of it (a child's parent: its last column left of the diagonal).
    Returns (the next free entry, whether it did not fit)."""
    o = u.dofadr
    n = u.nv
    for a in range(n):
        HS.iv[w, HS.head + o + a] = -1
    over = 0
    for aa in range(n):
        a = n - 1 - aa
        p = o + a
        m = HS.iv[w, HS.hnnz + p]
        if lp + m > HS.nh:
            over = 1
            lp += m
            break
        hadr = HS.iv[w, HS.hadr + p]
        for t in range(m):
            HS.iv[w, HS.lcol + lp + t] = HS.iv[w, HS.hcol + hadr + t]
        ch = HS.iv[w, HS.head + p]
        while ch >= 0:
            cadr = HS.iv[w, HS.ladr + o + ch]
            cn = HS.iv[w, HS.lnnz + o + ch] - 1  # left of its diagonal
            ka = 0
            kb = 0
            mm = 0
            while (ka < m) | (kb < cn):
                ca = n
                cb = n
                if ka < m:
                    ca = HS.iv[w, HS.lcol + lp + ka]
                if kb < cn:
                    cb = HS.iv[w, HS.lcol + cadr + kb]
                if ca <= cb:
                    HS.iv[w, HS.tmp + o + mm] = ca
                    ka += 1
                    if ca == cb:
                        kb += 1
                else:
                    HS.iv[w, HS.tmp + o + mm] = cb
                    kb += 1
                mm += 1
            m = mm
            if lp + m > HS.nh:
                over = 1
                break
            for t in range(m):
                HS.iv[w, HS.lcol + lp + t] = HS.iv[w, HS.tmp + o + t]
            ch = HS.iv[w, HS.next + o + ch]
        if over:
            lp += m
            break
        HS.iv[w, HS.ladr + p] = lp
        HS.iv[w, HS.lnnz + p] = m
        lp += m
        if m >= 2:
            parent = HS.iv[w, HS.lcol + lp - 2]
            HS.iv[w, HS.next + p] = HS.iv[w, HS.head + o + parent]
            HS.iv[w, HS.head + o + parent] = a
    return lp, over


@ti.func
def _sym_columns(w, u, lstart, HS: ti.template()):
    """From L's pattern: the chain and twin flags of each row (its columns left of its
    parent, of the row before it, are that row's) and L's strict lower triangle by
    column, rows descending, from lstart on (fewer entries than the unit's L)."""
    o = u.dofadr
    n = u.nv
    for a in range(n):
        p = o + a
        chain = 0
        m = HS.iv[w, HS.lnnz + p]
        if m >= 2:
            adr = HS.iv[w, HS.ladr + p]
            pp = o + HS.iv[w, HS.lcol + adr + m - 2]
            if HS.iv[w, HS.lnnz + pp] == m - 1:
                chain = 1
                padr = HS.iv[w, HS.ladr + pp]
                for t in range(m - 2):
                    if HS.iv[w, HS.lcol + adr + t] != HS.iv[w, HS.lcol + padr + t]:
                        chain = 0
                        break
        HS.iv[w, HS.chain + p] = chain
        HS.iv[w, HS.cnnz + p] = 0
        # twin: row a's columns left of a - 1 are row a - 1's
        twin = 0
        if (a >= 1) & (m >= 2):
            adr = HS.iv[w, HS.ladr + p]
            padr = HS.iv[w, HS.ladr + p - 1]
            if (HS.iv[w, HS.lcol + adr + m - 2] == a - 1) & \
                    (HS.iv[w, HS.lnnz + p - 1] == m - 1):
                twin = 1
                for t in range(m - 2):
                    if HS.iv[w, HS.lcol + adr + t] != HS.iv[w, HS.lcol + padr + t]:
                        twin = 0
                        break
        HS.iv[w, HS.twin + p] = twin
    for a in range(n):
        adr = HS.iv[w, HS.ladr + o + a]
        for t in range(HS.iv[w, HS.lnnz + o + a] - 1):
            HS.iv[w, HS.cnnz + o + HS.iv[w, HS.lcol + adr + t]] += 1
    cp = lstart
    for a in range(n):
        HS.iv[w, HS.cadr + o + a] = cp
        cp += HS.iv[w, HS.cnnz + o + a]
        HS.iv[w, HS.cnnz + o + a] = 0
    for aa in range(n):
        a = n - 1 - aa
        adr = HS.iv[w, HS.ladr + o + a]
        for t in range(HS.iv[w, HS.lnnz + o + a] - 1):
            c = o + HS.iv[w, HS.lcol + adr + t]
            e = HS.iv[w, HS.cadr + c] + HS.iv[w, HS.cnnz + c]
            HS.iv[w, HS.ctr + e] = a
            HS.iv[w, HS.cta + e] = adr + t
            HS.iv[w, HS.cnnz + c] += 1


@ti.kernel
def _hessian_symbolic(
    # model
    dof_parentid: ND,
    # data in
    nefc: ND, map_dof2idof: ND, map_idof2dof: ND, map_iefc2efc: ND, efc_J_colind: ND,
    efc_J_rowadr: ND, efc_J_rownnz: ND, su: ND,
    # data out
    efc_H_overflow: ND,
    # scratch
    sk: ND, hint: ND, hnv: ti.i32, hnj: ti.i32, hnh: ti.i32,
    # options
    by_island: ti.template(),
):
    """The sparse Newton Hessian's structure of every unit (after _primal_start), one
    thread per world, units in order (as MuJoCo's MakeHessian per island): J' by
    position, H = M + J'J's lower pattern (every row's, whatever its state) and the
    pattern of its reverse Cholesky factor L (kernels/hessian.py). A unit whose H or
    L does not fit in what the world's units before it left of nhnnz is marked (sk
    K_OVER) and solved by CG; efc_H_overflow[w] counts such solves and keeps the
    non-zeros the last one needed (at least: counting stops at the row that did not
    fit)."""
    HS = ti.static(hess_view(hint, None, hnv, hnj, hnh))
    dmap = ti.static(map_idof2dof if by_island else None)
    rmap = ti.static(map_iefc2efc if by_island else None)
    d2i = ti.static(map_dof2idof if by_island else None)
    ti.loop_config(block_dim=ti.static(config.cuda_world_block()))
    for w in range(nefc.shape[0]):
        if nefc[w] > 0:
            jtp = 0
            hp = 0
            lp = 0
            need = 0
            overflowed = 0
            for k in range(su.shape[1]):
                if su[w, k, U_NEFC] > 0:
                    u = _whole(su[w, k, U_NV], su[w, k, U_NEFC])
                    if ti.static(by_island):
                        u = _load_unit(w, k, su)
                    jtp = _sym_jt(w, u, jtp, rmap, d2i, efc_J_colind, efc_J_rowadr,
                                  efc_J_rownnz, HS)
                    hstart = hp
                    lstart = lp
                    hp, over = _sym_h(w, u, hp, dmap, d2i, dof_parentid, efc_J_rowadr,
                                      efc_J_rownnz, HS)
                    if not over:
                        lp, over = _sym_l(w, u, lp, HS)
                    if not over:
                        _sym_columns(w, u, lstart, HS)
                    sk[w, k, K_OVER] = over
                    if over:
                        overflowed = 1
                        need += ti.max(hp - hstart, lp - lstart)
                        hp = hstart
                        lp = lstart
                    else:
                        need += lp - lstart
            if overflowed:
                efc_H_overflow[w][0] += 1
                efc_H_overflow[w][1] = need


@ti.func
def _sparse_hessian(w, u, dmap: ti.template(), J: ti.template(), se: ti.template(),
                    efc_state: ti.template(), qM: ti.template(), dof_Madr: ti.template(),
                    dof_parentid: ti.template(), HS: ti.template()):
    """hval = the unit's H = M + J'DJ over its quadratic rows, lower triangle in its
    symbolic pattern, as MuJoCo's mju_sqrMatTDSparse then mju_addToMatSparse: entry
    (a, c) sums J(r, a) (D(r) J(r, c)) over the rows r touching both, ascending, then
    adds M(a, c)."""
    o = u.dofadr
    for a in range(u.nv):
        p = o + a
        hadr = HS.iv[w, HS.hadr + p]
        hn = HS.iv[w, HS.hnnz + p]
        for t in range(hn):
            HS.fv[w, HS.facc + o + HS.iv[w, HS.hcol + hadr + t]] = 0.0
        for q in range(HS.iv[w, HS.jtadr + p],
                       HS.iv[w, HS.jtadr + p] + HS.iv[w, HS.jtnnz + p]):
            r = HS.iv[w, HS.jtr + q]
            if efc_state[w, r] == CNSTRSTATE_QUADRATIC:
                D = se[w, E_D, r]
                jra = J[1][w, HS.iv[w, HS.jta + q]]
                adr = J[3][w, r]
                for t in range(J[4][w, r]):
                    l = HS.iv[w, HS.jl + adr + t]
                    if l < a:
                        HS.fv[w, HS.facc + o + l] = HS.fv[w, HS.facc + o + l] + \
                            jra * (D * J[1][w, adr + t])
                    elif l == a:
                        HS.fv[w, HS.facc + p] = HS.fv[w, HS.facc + p] + (jra * jra) * D
        i = _dof(w, u, a, dmap)
        madr = dof_Madr[i]
        HS.fv[w, HS.facc + p] = HS.fv[w, HS.facc + p] + qM[w, madr]
        j = dof_parentid[i]
        while j >= 0:
            madr += 1
            l = o + HS.iv[w, HS.loc + j]
            HS.fv[w, HS.facc + l] = HS.fv[w, HS.facc + l] + qM[w, madr]
            j = dof_parentid[j]
        for t in range(hn):
            col = o + HS.iv[w, HS.hcol + hadr + t]
            HS.fv[w, HS.hval + hadr + t] = HS.fv[w, HS.facc + col]


@ti.func
def _sparse_cone(w, slot, u, rmap: ti.template(), J: ti.template(), se: ti.template(),
                 si: ti.template(), efc_state: ti.template(), sb: ti.template(),
                 HS: ti.template()):
    """Lcone (L[1]) = L updated with every cone-state contact's J' Hcone J, as
    MuJoCo's sparse HessianCone: rank-one updates by the rows of (chol Hcone)' J over
    the contact's non-zeros (its rows share their columns); returns their count."""
    o = u.dofadr
    for a in range(u.nv):
        ladr = HS.iv[w, HS.ladr + o + a]
        for t in range(HS.iv[w, HS.lnnz + o + a]):
            HS.fv[w, HS.lval + HS.nh + ladr + t] = HS.fv[w, HS.lval + ladr + t]
    nupdate = 0
    for ii in range(u.nefc):
        i = _row(w, u, ii, rmap)
        if (si[w, I_KIND, i] == KIND_ELLIPTIC) & (efc_state[w, i] == CNSTRSTATE_CONE):
            dim = si[w, I_DIM, i]
            _cone_hessian(w, slot, i, dim, se, sb)
            _chol_factor(w, slot, dim, sb, MINVAL, 0)
            nnz = J[4][w, i]
            for c in range(dim):
                for k in range(nnz):
                    HS.fv[w, HS.fltj + c * HS.nv + o + k] = 0.0
            for r in range(dim):
                adr = J[3][w, i + r]
                for c in range(r + 1):
                    ltj = HS.fltj + c * HS.nv + o
                    for k in range(nnz):
                        HS.fv[w, ltj + k] = HS.fv[w, ltj + k] + \
                            J[1][w, adr + k] * sb[w, slot, r, c]
            adr0 = J[3][w, i]
            for r in range(dim):
                for k in range(nnz):
                    HS.fv[w, HS.fx + o + k] = HS.fv[w, HS.fltj + r * HS.nv + o + k]
                    HS.iv[w, HS.xi + o + k] = HS.iv[w, HS.jl + adr0 + k]
                chol_update_sparse(w, o, u.nv, 1, nnz, 1, HS)
            nupdate += dim
    return nupdate


@ti.func
def _ls_eval(w, u, rmap: ti.template(), alpha, g0, g1, g2, se: ti.template(),
             si: ti.template()):
    """Cost and first two derivatives of the unit's total cost along the search
    direction at step alpha (CGeval); returns (alpha, cost, d0, d1)."""
    cost = 0.0
    d0 = 0.0
    d1 = 0.0
    q0 = g0
    q1 = g1
    q2 = g2
    ii = 0
    while ii < u.nefc:
        i = _row(w, u, ii, rmap)
        kind = si[w, I_KIND, i]
        step = 1
        if kind == KIND_EQUALITY:
            q0 += se[w, E_Q0, i]
            q1 += se[w, E_Q1, i]
            q2 += se[w, E_Q2, i]
        elif kind == KIND_FRICTION:
            start = se[w, E_JAREF, i]
            dirn = se[w, E_JV, i]
            x = start + alpha * dirn
            f = se[w, E_FLOSS, i]
            rf = se[w, E_R, i] * f
            if (-rf < x) & (x < rf):
                q0 += se[w, E_Q0, i]
                q1 += se[w, E_Q1, i]
                q2 += se[w, E_Q2, i]
            elif x <= -rf:
                q0 += f * (-0.5 * rf - start)
                q1 += -f * dirn
            else:
                q0 += f * (-0.5 * rf + start)
                q1 += f * dirn
        elif kind == KIND_INEQUALITY:
            x = se[w, E_JAREF, i] + alpha * se[w, E_JV, i]
            if x < 0.0:
                q0 += se[w, E_Q0, i]
                q1 += se[w, E_Q1, i]
                q2 += se[w, E_Q2, i]
        else:
            step = si[w, I_DIM, i]
            mu = se[w, E_FRIC, i]
            u0 = se[w, E_Q0, i + 1]
            v0 = se[w, E_Q1, i + 1]
            uu = se[w, E_Q2, i + 1]
            uv = se[w, E_Q0, i + 2]
            vv = se[w, E_Q1, i + 2]
            dm = se[w, E_Q2, i + 2]
            N = u0 + alpha * v0
            tsqr = uu + alpha * (2.0 * uv + alpha * vv)
            bottom = 0
            if tsqr <= 0.0:
                bottom = N < 0.0
            else:
                T = ti.sqrt(tsqr)
                if N >= mu * T:
                    pass
                elif mu * N + T <= 0.0:
                    bottom = 1
                else:
                    n1 = v0
                    t1 = (uv + alpha * vv) / T
                    t2 = vv / T - (uv + alpha * vv) * t1 / (T * T)
                    cost += 0.5 * dm * (N - mu * T) * (N - mu * T)
                    d0 += dm * (N - mu * T) * (n1 - mu * t1)
                    d1 += dm * ((n1 - mu * t1) * (n1 - mu * t1) + (N - mu * T) * (-mu * t2))
            if bottom:
                q0 += se[w, E_Q0, i]
                q1 += se[w, E_Q1, i]
                q2 += se[w, E_Q2, i]
        ii += step
    cost += alpha * alpha * q2 + alpha * q1 + q0
    d0 += 2.0 * alpha * q2 + q1
    d1 += 2.0 * q2
    if d1 <= 0.0:  # not convex: SHOULD NOT OCCUR (MuJoCo warns and goes on)
        d1 = MINVAL
    return ti.Vector([alpha, cost, d0, d1])


@ti.func
def _bracket_select(p, c0, c1, c2):
    """updateBracket's choice: the candidate with the same derivative sign as p and a
    derivative closer to zero replaces p; returns (flag, p)."""
    flag = 0
    for k in ti.static(range(3)):
        c = c0
        if ti.static(k == 1):
            c = c1
        if ti.static(k == 2):
            c = c2
        if (p[2] < 0.0) & (c[2] < 0.0) & (p[2] < c[2]):
            p = c
            flag = 1
        elif (p[2] > 0.0) & (c[2] > 0.0) & (p[2] > c[2]):
            p = c
            flag = 2
    return flag, p


# line-search phases: what the next evaluated point is for
LS_P0, LS_P1, LS_ONESIDED, LS_ONESIDED_TEST, LS_P1NEXT, LS_BRACKET, LS_PMID, \
    LS_B1NEXT, LS_AFTER_B1, LS_B2NEXT, LS_AFTER_B2 = range(11)


@ti.func
def _newton_point(p):
    return p[0] - p[2] / p[3]


@ti.func
def _linesearch(w, u, dmap: ti.template(), rmap: ti.template(), J: ti.template(),
                qM: ti.template(), dof_Madr: ti.template(), dof_parentid: ti.template(),
                qfrc_smooth: ti.template(), se: ti.template(), si: ti.template(),
                sv: ti.template(), g0, tolerance, ls_iterations, scale):
    """MuJoCo's exact line search (CGsearch) of a unit along sv[w, V_SEARCH]; fills Mv
    and Jv and returns (alpha, number of evaluations, slope at the solution). ``g0``:
    the Gauss cost at the current qacc.

    Written as a state machine with one evaluation site (CGeval), so that the
    evaluation is compiled once: each pass evaluates the point the phase asks for
    (or none), then moves on exactly as MuJoCo's Newton/one-sided/bracketed search.
    """
    alpha = 0.0
    neval = 0
    slope = 1.0
    snorm = 0.0
    for jj in range(u.nv):
        i = _dof(w, u, jj, dmap)
        snorm += sv[w, V_SEARCH, i] * sv[w, V_SEARCH, i]
    snorm = ti.sqrt(snorm)
    if snorm >= MINVAL:
        gtol = tolerance * snorm / scale
        slopescl = scale / snorm
        _mul_m_unit(w, u, dmap, qM, dof_Madr, dof_parentid, sv, V_SEARCH, V_MV)
        for ii in range(u.nefc):
            i = _row(w, u, ii, rmap)
            s = 0.0
            if ti.static(len(J) > 1):
                s = _jrow_dot(w, i, J, sv, True, V_SEARCH)
            else:
                for jj in range(u.nv):
                    j = _dof(w, u, jj, dmap)
                    s += J[0][w, i, j] * sv[w, V_SEARCH, j]
            se[w, E_JV, i] = s
        g1, g2 = _prepare_quadratics(w, u, dmap, rmap, qfrc_smooth, se, si, sv)
        zero = ti.Vector([0.0, 0.0, 0.0, 0.0])
        p0, p1, p2, p1next, p2next, pmid, pt = zero, zero, zero, zero, zero, zero, zero
        c0, c1, c2 = zero, zero, zero
        dirn = 1.0
        p2update = 0
        b1 = 0
        b2 = 0
        phase = LS_P0
        x = 0.0  # the step to evaluate next
        need = 1
        done = 0
        while not done:
            if need:
                pt = _ls_eval(w, u, rmap, x, g0, g1, g2, se, si)
                neval += 1
            need = 1
            if phase == LS_P0:
                p0 = pt
                x = _newton_point(p0)
                phase = LS_P1
            elif phase == LS_P1:
                # always one Newton step; keep the better of p0, p1
                p1 = pt
                if p0[1] < p1[1]:
                    p1 = p0
                if ti.abs(p1[2]) < gtol:
                    alpha = p1[0]
                    slope = ti.abs(p1[2]) * slopescl
                    done = 1
                else:
                    dirn = 1.0
                    if not (p1[2] < 0.0):
                        dirn = -1.0
                    phase = LS_ONESIDED_TEST
                    need = 0
            elif phase == LS_ONESIDED:
                p1 = pt
                if ti.abs(p1[2]) < gtol:
                    alpha = p1[0]
                    slope = ti.abs(p1[2]) * slopescl
                    done = 1
                else:
                    phase = LS_ONESIDED_TEST
                    need = 0
            elif phase == LS_ONESIDED_TEST:
                if (p1[2] * dirn <= -gtol) & (neval < ls_iterations):
                    # one-sided: Newton steps from p1 while the slope keeps its sign
                    p2 = p1
                    p2update = 1
                    x = _newton_point(p1)
                    phase = LS_ONESIDED
                elif (neval >= ls_iterations) | (not p2update):
                    # could not bracket / no p2 update
                    alpha = p1[0]
                    slope = ti.abs(p1[2]) * slopescl
                    done = 1
                else:
                    p2next = p1
                    x = _newton_point(p1)
                    phase = LS_P1NEXT
            elif phase == LS_P1NEXT:
                p1next = pt
                phase = LS_BRACKET
                need = 0
            elif phase == LS_BRACKET:
                if neval < ls_iterations:
                    x = 0.5 * (p1[0] + p2[0])
                    phase = LS_PMID
                else:
                    # out of evaluations: the better bracket end, if it improved
                    if (p1[1] <= p2[1]) & (p1[1] < p0[1]):
                        alpha = p1[0]
                        slope = ti.abs(p1[2]) * slopescl
                    elif (p2[1] <= p1[1]) & (p2[1] < p0[1]):
                        alpha = p2[0]
                        slope = ti.abs(p2[2]) * slopescl
                    else:
                        alpha = 0.0
                    done = 1
            elif phase == LS_PMID:
                pmid = pt
                c0 = p1next
                c1 = p2next
                c2 = pmid
                bestcost = 0.0
                bestind = -1
                for k in ti.static(range(3)):
                    c = c0
                    if ti.static(k == 1):
                        c = c1
                    if ti.static(k == 2):
                        c = c2
                    if ti.abs(c[2]) < gtol:
                        if (bestind == -1) | (c[1] < bestcost):
                            bestcost = c[1]
                            bestind = k
                            alpha = c[0]
                            slope = ti.abs(c[2]) * slopescl
                if bestind >= 0:
                    done = 1
                else:
                    b1, p1 = _bracket_select(p1, c0, c1, c2)
                    if b1:
                        x = _newton_point(p1)
                        phase = LS_B1NEXT
                    else:
                        phase = LS_AFTER_B1
                        need = 0
            elif phase == LS_B1NEXT:
                p1next = pt
                phase = LS_AFTER_B1
                need = 0
            elif phase == LS_AFTER_B1:
                b2, p2 = _bracket_select(p2, c0, c1, c2)
                if b2:
                    x = _newton_point(p2)
                    phase = LS_B2NEXT
                else:
                    phase = LS_AFTER_B2
                    need = 0
            elif phase == LS_B2NEXT:
                p2next = pt
                phase = LS_AFTER_B2
                need = 0
            else:  # LS_AFTER_B2
                if (b1 == 0) & (b2 == 0):
                    # no update possible: numerical accuracy reached, use the midpoint
                    alpha = pmid[0]
                    slope = ti.abs(pmid[2]) * slopescl
                    done = 1
                else:
                    phase = LS_BRACKET
                    need = 0
    return alpha, neval, slope


@ti.func
def _prepare_quadratics(w, u, dmap: ti.template(), rmap: ti.template(),
                        qfrc_smooth: ti.template(), se: ti.template(),
                        si: ti.template(), sv: ti.template()):
    """The per-row quadratics of a unit's cost along the search direction and the cone
    quantities of elliptic contacts (CGprepare); returns the Gauss cost's linear and
    quadratic coefficients."""
    va = 0.0
    vf = 0.0
    vmv = 0.0
    for jj in range(u.nv):
        i = _dof(w, u, jj, dmap)
        va += sv[w, V_SEARCH, i] * sv[w, V_MA, i]
        vf += qfrc_smooth[w, i] * sv[w, V_SEARCH, i]
        vmv += sv[w, V_SEARCH, i] * sv[w, V_MV, i]
    ii = 0
    while ii < u.nefc:
        i = _row(w, u, ii, rmap)
        jaref = se[w, E_JAREF, i]
        jv = se[w, E_JV, i]
        D = se[w, E_D, i]
        dj0 = D * jaref
        q0 = jaref * dj0
        q1 = jv * dj0
        q2 = jv * D * jv
        step = 1
        if si[w, I_KIND, i] == KIND_ELLIPTIC:
            dim = si[w, I_DIM, i]
            step = dim
            mu = se[w, E_FRIC, i]
            for j in range(1, dim):
                djj = se[w, E_D, i + j] * se[w, E_JAREF, i + j]
                q0 += se[w, E_JAREF, i + j] * djj
                q1 += se[w, E_JV, i + j] * djj
                q2 += se[w, E_JV, i + j] * se[w, E_D, i + j] * se[w, E_JV, i + j]
            uu = 0.0
            uv = 0.0
            vv = 0.0
            for j in range(1, dim):
                fr = se[w, E_FRIC, i + j]
                uj = se[w, E_JAREF, i + j] * fr
                vj = se[w, E_JV, i + j] * fr
                uu += uj * uj
                uv += uj * vj
                vv += vj * vj
            # cone quantities in the next two rows' slots (dim >= 3)
            se[w, E_Q0, i + 1] = jaref * mu
            se[w, E_Q1, i + 1] = jv * mu
            se[w, E_Q2, i + 1] = uu
            se[w, E_Q0, i + 2] = uv
            se[w, E_Q1, i + 2] = vv
            se[w, E_Q2, i + 2] = D / ((mu * mu) * (1.0 + mu * mu))
        se[w, E_Q0, i] = 0.5 * q0
        se[w, E_Q1, i] = q1
        se[w, E_Q2, i] = 0.5 * q2
        ii += step
    return va - vf, 0.5 * vmv


@ti.func
def _update_gradient(w, u, dmap: ti.template(), ncone, newton,
                     qfrc_smooth: ti.template(), qfrc_constraint: ti.template(),
                     qLD: ti.template(), qLDiagInv: ti.template(),
                     dof_Madr: ti.template(), dof_parentid: ti.template(),
                     dof_simplenum: ti.template(),
                     sH: ti.template(), sv: ti.template(), HS: ti.template()):
    """grad = M qacc - qfrc_smooth - qfrc_constraint on a unit's dofs; Mgrad = H^-1 grad
    (Newton: the dense factor in sH, or the sparse one of ``HS``) or M^-1 grad (CG)."""
    for jj in range(u.nv):
        i = _dof(w, u, jj, dmap)
        sv[w, V_GRAD, i] = sv[w, V_MA, i] - qfrc_smooth[w, i] - qfrc_constraint[w, i]
    if newton:
        k = 0
        if ncone:
            k = 1
        if ti.static(_given(HS)):
            for jj in range(u.nv):
                HS.fv[w, HS.fres + u.dofadr + jj] = sv[w, V_GRAD, _dof(w, u, jj, dmap)]
            chol_solve_sparse(w, u.dofadr, u.nv, k, HS)
            for jj in range(u.nv):
                sv[w, V_MGRAD, _dof(w, u, jj, dmap)] = HS.fv[w, HS.fres + u.dofadr + jj]
        else:
            _chol_solve(w, k, u, dmap, sH, sv, V_GRAD, V_MGRAD)
    else:
        for jj in range(u.nv):
            i = _dof(w, u, jj, dmap)
            sv[w, V_MGRAD, i] = sv[w, V_GRAD, i]
        _solve_m_unit(w, V_MGRAD, u, dmap, sv, qLD, qLDiagInv, dof_Madr, dof_parentid,
                      dof_simplenum)


@ti.func
def _sparse_newton_step(w, slot, u, dmap: ti.template(), rmap: ti.template(),
                        J: ti.template(), qM: ti.template(), dof_Madr: ti.template(),
                        dof_parentid: ti.template(), se: ti.template(), si: ti.template(),
                        efc_state: ti.template(), sb: ti.template(), HS: ti.template(),
                        first, refactor, ncone):
    """The sparse factor's part of a Newton iteration, as MuJoCo's HessianIncremental
    and FactorizeHessian: rank-one updates by sqrt(D) J(r, :) of the rows that entered
    or left the quadratic state (after the first pass), H and its factor anew at the
    first pass or when a downdate loses rank, then Lcone; returns (nupdate,
    refactor)."""
    nupdate = 0
    rf = refactor
    o = u.dofadr
    if not first:
        for ii in range(u.nefc):
            i = _row(w, u, ii, rmap)
            flag = _quadratic_change(w, i, si, efc_state)
            if flag != -1:
                sd = ti.sqrt(se[w, E_D, i])
                adr = J[3][w, i]
                nnz = J[4][w, i]
                for k in range(nnz):
                    HS.fv[w, HS.fx + o + k] = J[1][w, adr + k] * sd
                    HS.iv[w, HS.xi + o + k] = HS.iv[w, HS.jl + adr + k]
                rank = chol_update_sparse(w, o, u.nv, 0, nnz, flag, HS)
                nupdate += 1
                if rank < u.nv:
                    rf = 2
                    break
    if rf:
        _sparse_hessian(w, u, dmap, J, se, efc_state, qM, dof_Madr, dof_parentid, HS)
        chol_factor_sparse(w, o, u.nv, 0, MINVAL, HS)
    if ncone:
        nupdate += _sparse_cone(w, slot, u, rmap, J, se, si, efc_state, sb, HS)
    if rf:
        nupdate = u.nefc
    return nupdate, rf


@ti.func
def _iterate_unit(w, slot, dmap: ti.template(), rmap: ti.template(),
                  dof_parentid: ti.template(), dof_Madr: ti.template(),
                  dof_simplenum: ti.template(), J: ti.template(), qM: ti.template(),
                  qLD: ti.template(), qLDiagInv: ti.template(),
                  qfrc_smooth: ti.template(), qacc_smooth: ti.template(),
                  qacc: ti.template(), efc_force: ti.template(), efc_state: ti.template(),
                  qfrc_constraint: ti.template(), solver_niter: ti.template(),
                  se: ti.template(), si: ti.template(), sv: ti.template(),
                  sH: ti.template(), sb: ti.template(), su: ti.template(),
                  sk: ti.template(), stats: ti.template(), HS: ti.template(), maxiter,
                  tolerance, ls_tolerance, ls_iterations, newton, npass, nslot, nstat):
    """Up to ``npass`` passes of one unit's CG / Newton iterations (see
    _primal_iterate); ``dmap`` / ``rmap``: the island maps, or None where every unit
    is a whole world (no indirection compiled in); ``HS``: the sparse Hessian's
    arrays (a HessView: sparse-Jacobian models under Newton), or None for the dense
    factor in sH. A unit whose sparse Hessian did not fit (K_OVER) runs CG."""
    u = _whole(su[w, slot, U_NV], su[w, slot, U_NEFC])  # offsets known to be 0
    if ti.static(_given(dmap)):
        u = _load_unit(w, slot, su)
    n = u.nefc
    scale = sk[w, slot, K_SCALE]
    cost = sk[w, slot, K_COST]
    gauss = sk[w, slot, K_GAUSS]
    nactive = ti.cast(sk[w, slot, K_NACTIVE], ti.i32)
    ncone = ti.cast(sk[w, slot, K_NCONE], ti.i32)
    it = ti.cast(sk[w, slot, K_IT], ti.i32)
    first = ti.cast(sk[w, slot, K_STAGE] == STAGE_START, ti.i32)
    nwt = newton
    if ti.static(_given(HS)):
        if sk[w, slot, K_OVER] != 0.0:
            nwt = 0
    done = 0
    npassed = 0
    while npassed < npass:
        if not (first | (it < maxiter)):
            done = 1
            break
        npassed += 1
        neval = 0
        slope = 1.0
        oldcost = cost
        refactor = first
        if not first:
            alpha, neval, slope = _linesearch(
                w, u, dmap, rmap, J, qM, dof_Madr, dof_parentid, qfrc_smooth, se, si,
                sv, gauss, tolerance * ls_tolerance, ls_iterations, scale)
            if alpha == 0.0:
                done = 1
                break
            for jj in range(u.nv):
                i = _dof(w, u, jj, dmap)
                sv[w, V_QACC, i] = sv[w, V_QACC, i] + alpha * sv[w, V_SEARCH, i]
                sv[w, V_MA, i] = sv[w, V_MA, i] + alpha * sv[w, V_MV, i]
            for ii in range(n):
                i = _row(w, u, ii, rmap)
                se[w, E_JAREF, i] = se[w, E_JAREF, i] + alpha * se[w, E_JV, i]
            if not nwt:
                for jj in range(u.nv):
                    i = _dof(w, u, jj, dmap)
                    sv[w, V_GRADOLD, i] = sv[w, V_GRAD, i]
                    sv[w, V_MGRADOLD, i] = sv[w, V_MGRAD, i]
            for ii in range(n):
                i = _row(w, u, ii, rmap)
                si[w, I_OLDSTATE, i] = efc_state[w, i]
            cost, gauss, nactive, ncone = _update_constraint(
                w, u, dmap, rmap, J, se, si, efc_force, efc_state, qfrc_constraint,
                sv, qfrc_smooth, qacc_smooth)
        nupdate = 0
        if ti.static(_given(HS)):
            if nwt:
                nupdate, refactor = _sparse_newton_step(
                    w, slot, u, dmap, rmap, J, qM, dof_Madr, dof_parentid, se, si,
                    efc_state, sb, HS, first, refactor, ncone)
        elif nwt:
            if not first:
                # HessianIncremental: rank-one updates of L for rows that entered
                # or left the quadratic state; refactor on loss of rank
                for ii in range(n):
                    i = _row(w, u, ii, rmap)
                    flag = _quadratic_change(w, i, si, efc_state)
                    if flag != -1:
                        sd = ti.sqrt(se[w, E_D, i])
                        for kk in range(u.nv):
                            k = _dof(w, u, kk, dmap)
                            sv[w, V_VEC, k] = J[0][w, i, k] * sd
                        rank = _chol_update(w, 0, u, dmap, sH, sv, V_VEC, flag)
                        nupdate += 1
                        if rank < u.nv:
                            refactor = 2
                            break
            if refactor:
                if refactor == 2:
                    for a in range(u.nv):
                        _hessian_row(w, a, u, dmap, rmap, J[0], se, efc_state, qM,
                                     dof_Madr, dof_parentid, sH)
                _chol_factor(w, 0, u.nv, sH, MINVAL, u.dofadr)
            if ncone:
                nupdate += _hessian_cone(w, slot, u, dmap, rmap, J, se, si,
                                         efc_state, sH, sv, sb)
            if refactor:
                nupdate = n
        _update_gradient(w, u, dmap, ncone, nwt, qfrc_smooth, qfrc_constraint, qLD,
                         qLDiagInv, dof_Madr, dof_parentid, dof_simplenum, sH, sv, HS)
        stop = 0
        if not first:
            nchange = 0
            for ii in range(n):
                i = _row(w, u, ii, rmap)
                nchange += efc_state[w, i] != si[w, I_OLDSTATE, i]
            improvement = scale * (oldcost - cost)
            gnorm = 0.0
            for jj in range(u.nv):
                i = _dof(w, u, jj, dmap)
                gnorm += sv[w, V_GRAD, i] * sv[w, V_GRAD, i]
            gradient = scale * ti.sqrt(gnorm)
            if (slot < nslot) & (it < nstat):
                stats[w, slot, it, 0] = improvement
                stats[w, slot, it, 1] = gradient
                stats[w, slot, it, 2] = slope
                stats[w, slot, it, 3] = nactive
                stats[w, slot, it, 4] = nchange
                stats[w, slot, it, 5] = neval
                stats[w, slot, it, 6] = nupdate
            it += 1
            stop = (improvement < tolerance) | (gradient < tolerance)
        if stop:
            done = 1
            break
        # search direction: -Mgrad (Newton, first CG step) or Polak-Ribiere
        beta = 0.0
        if not nwt:
            if not first:
                num = 0.0
                den = 0.0
                for jj in range(u.nv):
                    i = _dof(w, u, jj, dmap)
                    num += sv[w, V_GRAD, i] * (
                        sv[w, V_MGRAD, i] - sv[w, V_MGRADOLD, i])
                    den += sv[w, V_GRADOLD, i] * sv[w, V_MGRADOLD, i]
                beta = ti.max(0.0, num / ti.max(MINVAL, den))
        for jj in range(u.nv):
            i = _dof(w, u, jj, dmap)
            d = -sv[w, V_MGRAD, i]
            if not first:
                d += beta * sv[w, V_SEARCH, i]
            sv[w, V_SEARCH, i] = d
        first = 0
    sk[w, slot, K_COST] = cost
    sk[w, slot, K_GAUSS] = gauss
    sk[w, slot, K_NACTIVE] = nactive
    sk[w, slot, K_NCONE] = ncone
    sk[w, slot, K_IT] = it
    sk[w, slot, K_STAGE] = STAGE_RUNNING
    if done:
        sk[w, slot, K_STAGE] = STAGE_DONE
    if slot < NISLAND:
        solver_niter[w][slot] = it
    for jj in range(u.nv):
        i = _dof(w, u, jj, dmap)
        qacc[w, i] = sv[w, V_QACC, i]


@ti.kernel
def _primal_iterate(
    # model
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND,
    # data in
    efc_J: ND, qM: ND, qLD: ND, qLDiagInv: ND, qfrc_smooth: ND, qacc_smooth: ND,
    map_idof2dof: ND, map_iefc2efc: ND, efc_J_sparse: ND, efc_J_colind: ND,
    efc_J_rowadr: ND, efc_J_rownnz: ND,
    # data out
    qacc: ND, efc_force: ND, efc_state: ND, qfrc_constraint: ND, solver_niter: ND,
    # scratch
    se: ND, si: ND, sv: ND, sH: ND, sw: ND, sb: ND, su: ND, sk: ND, stats: ND,
    hint: ND, hflt: ND,
    # options
    maxiter: ti.i32, tolerance: float, ls_tolerance: float, ls_iterations: ti.i32,
    newton: ti.i32, npass: ti.i32, probe: ti.i32, hnv: ti.i32, hnj: ti.i32, hnh: ti.i32,
    by_island: ti.template(), sparse: ti.template(), hess: ti.template(),
):
    """The CG / Newton iterations of every unit (mj_solCGNewton after its first
    constraint update), one thread per (world, unit): a world solved whole, or each of
    its islands with its own iterations, scale and stopping test (``by_island``,
    compile-time: without it no unit reads the island maps). The set-up before
    MuJoCo's main loop (factor of the Hessian built by _hessian, gradient, first
    direction) is this loop's first pass, so each stage is compiled once. At most
    ``npass`` passes per launch: a unit's cost, counts, iteration and stage stay in
    sk, so that the next launch resumes it (see _launches). ``hess`` (compile-time):
    Newton factors the sparse Hessian (hint, hflt of nv, njnnz, nhnnz per world,
    structured by _hessian_symbolic) instead of the dense one in sH."""
    J = ti.static(jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr,
                           efc_J_rownnz))
    HS = ti.static(hess_view(hint, hflt, hnv, hnj, hnh) if hess else None)
    nslot = stats.shape[1]
    nstat = stats.shape[2]
    ti.loop_config(block_dim=ti.static(config.cuda_world_block()))
    for w, slot in ti.ndrange(su.shape[0], su.shape[1]):
        if (su[w, slot, U_NEFC] > 0) & (sk[w, slot, K_STAGE] != STAGE_DONE):
            if ti.static(by_island):
                _iterate_unit(w, slot, map_idof2dof, map_iefc2efc, dof_parentid,
                              dof_Madr, dof_simplenum, J, qM, qLD, qLDiagInv,
                              qfrc_smooth, qacc_smooth, qacc, efc_force, efc_state,
                              qfrc_constraint, solver_niter, se, si, sv, sH, sb, su, sk,
                              stats, HS, maxiter, tolerance, ls_tolerance,
                              ls_iterations, newton, npass, nslot, nstat)
            else:
                _iterate_unit(w, slot, None, None, dof_parentid, dof_Madr,
                              dof_simplenum, J, qM, qLD, qLDiagInv, qfrc_smooth,
                              qacc_smooth, qacc, efc_force, efc_state, qfrc_constraint,
                              solver_niter, se, si, sv, sH, sb, su, sk, stats, HS,
                              maxiter, tolerance, ls_tolerance, ls_iterations, newton,
                              npass, nslot, nstat)
        if _limit_reached(probe):
            sw[w, W_LIMIT] = 1.0


# ---------------------------------------------------------------------------------------
# PGS (mj_solPGS)
# ---------------------------------------------------------------------------------------

@ti.func
def _qcqp2(A, b, d, r, niter):
    """min 0.5 x'Ax + x'b s.t. sum (x_i/d_i)^2 <= r^2 in 2 dimensions (mju_QCQP2)."""
    b1 = b[0] * d[0]
    b2 = b[1] * d[1]
    a11 = A[0, 0] * d[0] * d[0]
    a22 = A[1, 1] * d[1] * d[1]
    a12 = A[0, 1] * d[0] * d[1]
    la = 0.0
    v1 = 0.0
    v2 = 0.0
    singular = 0
    for _ in range(niter):
        det = (a11 + la) * (a22 + la) - a12 * a12
        if det < 1e-10:
            singular = 1
            break
        detinv = 1.0 / det
        p11 = (a22 + la) * detinv
        p22 = (a11 + la) * detinv
        p12 = -a12 * detinv
        v1 = -p11 * b1 - p12 * b2
        v2 = -p12 * b1 - p22 * b2
        val = v1 * v1 + v2 * v2 - r * r
        if val < 1e-10:
            break
        deriv = -2.0 * (p11 * v1 * v1 + 2.0 * p12 * v1 * v2 + p22 * v2 * v2)
        delta = -val / deriv
        if delta < 1e-10:
            break
        la += delta
    res = ti.Vector.zero(float, 5)
    active = 0
    if not singular:
        res[0] = v1 * d[0]
        res[1] = v2 * d[1]
        active = la != 0.0
    return res, active


@ti.func
def _qcqp3(A, b, d, r, niter):
    """The 3-dimensional QCQP (mju_QCQP3)."""
    b1 = b[0] * d[0]
    b2 = b[1] * d[1]
    b3 = b[2] * d[2]
    a11 = A[0, 0] * d[0] * d[0]
    a22 = A[1, 1] * d[1] * d[1]
    a33 = A[2, 2] * d[2] * d[2]
    a12 = A[0, 1] * d[0] * d[1]
    a13 = A[0, 2] * d[0] * d[2]
    a23 = A[1, 2] * d[1] * d[2]
    la = 0.0
    v1 = 0.0
    v2 = 0.0
    v3 = 0.0
    singular = 0
    for _ in range(niter):
        p11 = (a22 + la) * (a33 + la) - a23 * a23
        p22 = (a11 + la) * (a33 + la) - a13 * a13
        p33 = (a11 + la) * (a22 + la) - a12 * a12
        p12 = a13 * a23 - a12 * (a33 + la)
        p13 = a12 * a23 - a13 * (a22 + la)
        p23 = a12 * a13 - a23 * (a11 + la)
        det = (a11 + la) * p11 + a12 * p12 + a13 * p13
        if det < 1e-10:
            singular = 1
            break
        detinv = 1.0 / det
        p11 *= detinv
        p22 *= detinv
        p33 *= detinv
        p12 *= detinv
        p13 *= detinv
        p23 *= detinv
        v1 = -p11 * b1 - p12 * b2 - p13 * b3
        v2 = -p12 * b1 - p22 * b2 - p23 * b3
        v3 = -p13 * b1 - p23 * b2 - p33 * b3
        val = v1 * v1 + v2 * v2 + v3 * v3 - r * r
        if val < 1e-10:
            break
        deriv = -2.0 * (p11 * v1 * v1 + p22 * v2 * v2 + p33 * v3 * v3) \
            - 4.0 * (p12 * v1 * v2 + p13 * v1 * v3 + p23 * v2 * v3)
        delta = -val / deriv
        if delta < 1e-10:
            break
        la += delta
    res = ti.Vector.zero(float, 5)
    active = 0
    if not singular:
        res[0] = v1 * d[0]
        res[1] = v2 * d[1]
        res[2] = v3 * d[2]
        active = la != 0.0
    return res, active


@ti.func
def _qcqp5(A, b, d, r, niter):
    """The 5-dimensional QCQP by Cholesky (mju_QCQP with n = 5; sizes static)."""
    As = ti.Matrix.zero(float, 5, 5)
    bs = ti.Vector.zero(float, 5)
    for i in ti.static(range(5)):
        bs[i] = b[i] * d[i]
        for j in ti.static(range(5)):
            As[i, j] = A[i, j] * d[i] * d[j]
    la = 0.0
    res = ti.Vector.zero(float, 5)
    singular = 0
    for _ in range(niter):
        L = As
        for i in ti.static(range(5)):
            L[i, i] += la
        rank = 5
        for j in ti.static(range(5)):
            tmp = L[j, j]
            for p in ti.static(range(j)):
                tmp -= L[j, p] * L[j, p]
            if tmp < 1e-10:
                tmp = 1e-10
                rank -= 1
            L[j, j] = ti.sqrt(tmp)
            for i in ti.static(range(j + 1, 5)):
                t = L[i, j]
                for p in ti.static(range(j)):
                    t -= L[i, p] * L[j, p]
                L[i, j] = t / L[j, j]
        if rank < 5:
            singular = 1
            break
        res = -_chol_solve5(L, bs)
        val = res.dot(res) - r * r
        if val < 1e-10:
            break
        deriv = -2.0 * res.dot(_chol_solve5(L, res))
        delta = -val / deriv
        if delta < 1e-10:
            break
        la += delta
    active = 0
    if singular:
        res = ti.Vector.zero(float, 5)
    else:
        res = res * d
        active = la != 0.0
    return res, active


@ti.func
def _chol_solve5(L, b):
    x = b
    for i in ti.static(range(5)):
        for j in ti.static(range(i)):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]
    for i in ti.static(range(4, -1, -1)):
        for j in ti.static(range(i + 1, 5)):
            x[i] -= L[j, i] * x[j]
        x[i] = x[i] / L[i, i]
    return x


@ti.func
def cone_qcqp(nf, Ac, bc, mu, fn, iterations):
    """Friction forces of an elliptic cone with normal force fn (nf of them, padded to
    5): the QCQP of mju_QCQP2/3/QCQP, put exactly on the ellipsoid when active (the
    QCQP is approximate)."""
    v = ti.Vector.zero(float, 5)
    active = 0
    if nf == 2:
        v, active = _qcqp2(Ac, bc, mu, fn, iterations)
    elif nf == 3:
        v, active = _qcqp3(Ac, bc, mu, fn, iterations)
    else:
        v, active = _qcqp5(Ac, bc, mu, fn, iterations)
    if active:
        s = 0.0
        for j in ti.static(range(5)):
            if j < nf:
                s += v[j] * v[j] / (mu[j] * mu[j])
        v *= ti.sqrt(fn * fn / ti.max(MINVAL, s))
    return v


@ti.func
def _dual_state(w, n, se: ti.template(), si: ti.template(), force: ti.template(),
                state: ti.template()):
    """efc_state from dual forces (dualState); returns the number of active rows."""
    nactive = 0
    i = 0
    while i < n:
        kind = si[w, I_KIND, i]
        f = force[w, i]
        step = 1
        if kind == KIND_EQUALITY:
            state[w, i] = CNSTRSTATE_QUADRATIC
            nactive += 1
        elif kind == KIND_FRICTION:
            fl = se[w, E_FLOSS, i]
            nactive += 1
            if f <= -fl:
                state[w, i] = CNSTRSTATE_LINEARPOS  # opposite of primal
            elif f >= fl:
                state[w, i] = CNSTRSTATE_LINEARNEG
            else:
                state[w, i] = CNSTRSTATE_QUADRATIC
        elif kind == KIND_INEQUALITY:
            if f <= 0.0:
                state[w, i] = CNSTRSTATE_SATISFIED
            else:
                state[w, i] = CNSTRSTATE_QUADRATIC
                nactive += 1
        else:
            dim = si[w, I_DIM, i]
            step = dim
            mu = se[w, E_FRIC, i]
            N = f / mu
            tsqr = 0.0
            for j in range(1, dim):
                fj = force[w, i + j] / se[w, E_FRIC, i + j]
                tsqr += fj * fj
            T = ti.sqrt(tsqr)
            result = CNSTRSTATE_CONE
            if mu * N >= T:
                result = CNSTRSTATE_SATISFIED
            elif N + mu * T <= 0.0:
                result = CNSTRSTATE_QUADRATIC
                nactive += dim
            else:
                nactive += dim
            for j in range(dim):
                state[w, i + j] = result
        i += step
    return nactive


@ti.func
def _dual_qfrc(w, n, nv, J: ti.template(), force: ti.template(),
               qfrc_constraint: ti.template()):
    """qfrc_constraint = J' f over the world's n rows (J: see jac_view)."""
    if ti.static(len(J) > 1):
        for j in range(nv):
            qfrc_constraint[w, j] = 0.0
        for i in range(n):
            f = force[w, i]
            adr = J[3][w, i]
            for k in range(J[4][w, i]):
                qfrc_constraint[w, J[2][w, adr + k]] += J[1][w, adr + k] * f
    else:
        for j in range(nv):
            s = 0.0
            for i in range(n):
                s += J[0][w, i, j] * force[w, i]
            qfrc_constraint[w, j] = s


@ti.func
def _pgs_block(w, i, kind, dim, n, nv, dense, J: ti.template(), minvjt: ti.template(),
               ar: ti.template(), se: ti.template(), efc_force: ti.template(),
               sv: ti.template(), sb: ti.template(), qcqp_iterations):
    """One projected Gauss-Seidel step on rows i .. i+dim-1 (one row, or an elliptic
    contact); returns the cost change (<= 0). ``dense``: the world's AR = J M^-1 J' + R
    is in ar[w] (mj_solPGS's residual b + AR f); else matrix-free, keeping
    u = M^-1 J'f current.

    sb[w, 0] holds the AR block (rows 0-5), the residual b + AR f (row 6) and the
    old forces (row 7)."""
    for a in range(dim):
        r = se[w, E_B, i + a]
        if dense:
            for j in range(n):
                r += ar[w, i + a, j] * efc_force[w, j]
        else:
            r += se[w, E_R, i + a] * efc_force[w, i + a]
            if ti.static(len(J) > 1):
                r += _jrow_dot(w, i + a, J, sv, True, V_U)
            else:
                for k in range(nv):
                    r += J[0][w, i + a, k] * sv[w, V_U, k]
        sb[w, 0, 6, a] = r
        sb[w, 0, 7, a] = efc_force[w, i + a]
    if kind != KIND_ELLIPTIC:
        arinv = se[w, E_ARINV, i]
        sb[w, 0, 0, 0] = 1.0 / arinv
        f = efc_force[w, i] - sb[w, 0, 6, 0] * arinv
        if kind == KIND_FRICTION:
            fl = se[w, E_FLOSS, i]
            f = ti.min(ti.max(f, -fl), fl)
        elif kind != KIND_EQUALITY:
            f = ti.max(f, 0.0)
        efc_force[w, i] = f
    else:
        for a in range(dim):
            for b in range(dim):
                s = 0.0
                if dense:
                    s = ar[w, i + a, i + b]
                else:
                    s = _ar_entry(w, i + a, i + b, nv, False, J, minvjt)
                    if a == b:
                        s += se[w, E_R, i + a]
                sb[w, 0, a, b] = s
        old0 = sb[w, 0, 7, 0]
        if old0 < MINVAL:
            # normal too small: update the normal alone, no friction
            efc_force[w, i] = ti.max(0.0, old0 - sb[w, 0, 6, 0] * se[w, E_ARINV, i])
            for j in range(1, dim):
                efc_force[w, i + j] = 0.0
        else:
            # ray update: scale the whole force along itself
            denom = 0.0
            vres = 0.0
            for a in range(dim):
                vres += sb[w, 0, 7, a] * sb[w, 0, 6, a]
                for b in range(dim):
                    denom += sb[w, 0, 7, a] * sb[w, 0, a, b] * sb[w, 0, 7, b]
            if denom >= MINVAL:
                x = -vres / denom
                if old0 + x * old0 < 0.0:
                    x = -1.0  # down to a zero normal force
                for j in range(dim):
                    efc_force[w, i + j] += x * sb[w, 0, 7, j]
        # friction update with the normal fixed: a QCQP in the tangent space
        fn = efc_force[w, i]
        nf = dim - 1
        Ac = ti.Matrix.zero(float, 5, 5)
        bc = ti.Vector.zero(float, 5)
        mu = ti.Vector.zero(float, 5)
        for j in ti.static(range(5)):
            if j < nf:
                mu[j] = se[w, E_FRIC, i + 1 + j]
                acf = 0.0
                for k in ti.static(range(5)):
                    if k < nf:
                        Ac[j, k] = sb[w, 0, j + 1, k + 1]
                        acf += Ac[j, k] * sb[w, 0, 7, k + 1]
                bc[j] = sb[w, 0, 6, j + 1] - acf + sb[w, 0, j + 1, 0] * (fn - old0)
        if fn < MINVAL:
            for j in range(1, dim):
                efc_force[w, i + j] = 0.0
        else:
            v = cone_qcqp(nf, Ac, bc, mu, fn, qcqp_iterations)
            for j in ti.static(range(5)):
                if j < nf:
                    efc_force[w, i + 1 + j] = v[j]
    # cost change; a positive one restores the old force (costChange)
    change = 0.0
    if dim == 1:
        dlt = efc_force[w, i] - sb[w, 0, 7, 0]
        change = 0.5 * dlt * dlt * sb[w, 0, 0, 0] + dlt * sb[w, 0, 6, 0]
    else:
        quad = 0.0
        lin = 0.0
        for a in range(dim):
            da = efc_force[w, i + a] - sb[w, 0, 7, a]
            lin += da * sb[w, 0, 6, a]
            for b in range(dim):
                quad += da * sb[w, 0, a, b] * (efc_force[w, i + b] - sb[w, 0, 7, b])
        change = 0.5 * quad + lin
    if change > 1e-10:
        for a in range(dim):
            efc_force[w, i + a] = sb[w, 0, 7, a]
        change = 0.0
    if not dense:
        for a in range(dim):
            dlt = efc_force[w, i + a] - sb[w, 0, 7, a]
            if dlt != 0.0:
                for k in range(nv):
                    sv[w, V_U, k] += minvjt[w, i + a, k] * dlt
    return change


@ti.func
def _ar_entry(w, i, j, nv, dense, J: ti.template(), minvjt: ti.template()):
    """(J M^-1 J')_ij: ``dense``: row i of J M^-1/2 times its row j (minvjt holds J
    M^-1/2, as mj_projectConstraint's AR = JM2 JM2'); else row i of J times row j of
    M^-1 J'."""
    s = 0.0
    if dense:
        for k in range(nv):
            s += minvjt[w, i, k] * minvjt[w, j, k]
    elif ti.static(len(J) > 1):
        s = _jrow_dot(w, i, J, minvjt, True, j)
    else:
        for k in range(nv):
            s += J[0][w, i, k] * minvjt[w, j, k]
    return s


@ti.func
def _fill_ar(w, n, nv, J: ti.template(), minvjt: ti.template(), se: ti.template(),
             ar: ti.template()):
    """ar[w] = AR = J M^-1 J' + diag(R) on the world's n rows (mj_projectConstraint's
    efc_AR; its lower triangle computed, mirrored: exactly symmetric), and 1 / AR_ii in
    se[E_ARINV] (mj_solPGS's ARdiaginv)."""
    for i in range(n):
        for j in range(i + 1):
            s = _ar_entry(w, i, j, nv, True, J, minvjt)
            ar[w, i, j] = s
            ar[w, j, i] = s
        ar[w, i, i] += se[w, E_R, i]
        se[w, E_ARINV, i] = 1.0 / ar[w, i, i]


@ti.kernel
def _pgs(
    # model
    dof_parentid: ND, dof_Madr: ND, dof_simplenum: ND, nv: ti.i32,
    # data in
    nefc: ND, efc_J: ND, qLD: ND, qLDiagInv: ND, qacc_smooth: ND, efc_J_sparse: ND,
    efc_J_colind: ND, efc_J_rowadr: ND, efc_J_rownnz: ND,
    # data out
    qacc: ND, efc_force: ND, efc_state: ND, qfrc_constraint: ND, solver_niter: ND,
    # scratch
    se: ND, si: ND, sv: ND, sw: ND, sb: ND, minvjt: ND, ar: ND, stats: ND,
    # options
    maxiter: ti.i32, tolerance: float, scale: float, warmstart: ti.i32,
    qcqp_iterations: ti.i32, npass: ti.i32, probe: ti.i32, ndense: ti.i32,
    sparse: ti.template(),
):
    """Projected Gauss-Seidel on the dual of every world (warmstart, sweeps, and
    qfrc_constraint / qacc from the forces, as mj_solPGS and dualFinish). At most
    ``npass`` passes per launch: a world's sweep, iteration and stage stay in sw, so
    that the next launch resumes it (see _launches).

    A world with at most ``ndense`` rows sweeps on its AR matrix, as mj_solPGS (rows
    of n numbers); one with more goes matrix-free (rows of 2 nv numbers and u = M^-1
    J'f recomputed each sweep), without n^2 memory per world."""
    J = ti.static(jac_view(sparse, efc_J, efc_J_sparse, efc_J_colind, efc_J_rowadr,
                           efc_J_rownnz))
    nstat = stats.shape[2]
    ti.loop_config(block_dim=ti.static(config.cuda_world_block()))
    for w in range(nefc.shape[0]):
        n = nefc[w]
        dense = n <= ndense
        if sw[w, W_STAGE] == STAGE_START:
            if dense:
                _fill_ar(w, n, nv, J, minvjt, se, ar)
            for k in ti.static(range(NISLAND)):
                solver_niter[w][k] = 0
            sw[w, W_SWEEP] = 0.0
            sw[w, W_STAGE] = STAGE_RUNNING
            if n == 0:
                for i in range(nv):
                    qacc[w, i] = qacc_smooth[w, i]
                    qfrc_constraint[w, i] = 0.0
                sw[w, W_STAGE] = STAGE_DONE
            else:
                # warmstart: the forces of qacc_warmstart unless their dual cost
                # f'b + 0.5 f'AR f = f'b + 0.5 (J'f)'M^-1(J'f) + 0.5 f'Rf is positive
                sw[w, W_KEEP] = 0.0
                if warmstart:
                    _constraint_update(w, n, se, si, E_JAREF, efc_force, efc_state)
                    sw[w, W_KEEP] = 1.0
        if sw[w, W_STAGE] == STAGE_RUNNING:
            keep = ti.cast(sw[w, W_KEEP], ti.i32)
            it = ti.cast(sw[w, W_IT], ti.i32)
            # pass 0 tests the warm start, passes 1.. sweep, the last maps to qacc;
            # each begins with u = M^-1 J'f = qacc - qacc_smooth from the forces
            sweep = ti.cast(sw[w, W_SWEEP], ti.i32)
            npassed = 0
            while npassed < npass:
                npassed += 1
                if (not dense) | (sweep == 2):
                    _dual_qfrc(w, n, nv, J, efc_force, qfrc_constraint)
                    for i in range(nv):
                        sv[w, V_U, i] = qfrc_constraint[w, i]
                    _solve_m(w, V_U, nv, sv, qLD, qLDiagInv, dof_Madr, dof_parentid,
                             dof_simplenum)
                if sweep == 2:
                    # dualFinish: qacc = qacc_smooth + M^-1 J'f
                    for i in range(nv):
                        qacc[w, i] = qacc_smooth[w, i] + sv[w, V_U, i]
                    sw[w, W_STAGE] = STAGE_DONE
                    break
                improvement = 0.0
                if sweep == 0:
                    if keep:
                        fb = 0.0
                        faf = 0.0
                        if dense:
                            for i in range(n):
                                f = efc_force[w, i]
                                fb += f * se[w, E_B, i]
                                arf = 0.0
                                for j in range(n):
                                    arf += ar[w, i, j] * efc_force[w, j]
                                faf += f * arf
                        else:
                            for i in range(n):
                                f = efc_force[w, i]
                                fb += f * se[w, E_B, i]
                                faf += se[w, E_R, i] * f * f
                            for i in range(nv):
                                faf += qfrc_constraint[w, i] * sv[w, V_U, i]
                        keep = not (fb + 0.5 * faf > 0.0)
                    if not keep:
                        for i in range(n):
                            efc_force[w, i] = 0.0
                        for i in range(nv):
                            sv[w, V_U, i] = 0.0
                else:
                    i = 0
                    while i < n:
                        kind = si[w, I_KIND, i]
                        dim = 1
                        if kind == KIND_ELLIPTIC:
                            dim = si[w, I_DIM, i]
                        improvement -= _pgs_block(w, i, kind, dim, n, nv, dense, J,
                                                  minvjt, ar, se, efc_force, sv, sb,
                                                  qcqp_iterations)
                        i += dim
                for r in range(n):
                    si[w, I_OLDSTATE, r] = efc_state[w, r]
                nactive = _dual_state(w, n, se, si, efc_force, efc_state)
                if sweep == 1:
                    nchange = 0
                    for r in range(n):
                        nchange += efc_state[w, r] != si[w, I_OLDSTATE, r]
                    improvement *= scale
                    if it < nstat:
                        stats[w, 0, it, 0] = improvement
                        stats[w, 0, it, 1] = 0.0
                        stats[w, 0, it, 2] = 0.0
                        stats[w, 0, it, 3] = nactive
                        stats[w, 0, it, 4] = nchange
                        stats[w, 0, it, 5] = 0.0
                        stats[w, 0, it, 6] = 0.0
                    it += 1
                    if improvement < tolerance:
                        sweep = 2
                else:
                    sweep = 1
                if (sweep == 1) & (it >= maxiter):
                    sweep = 2
            sw[w, W_KEEP] = keep
            sw[w, W_IT] = it
            sw[w, W_SWEEP] = sweep
            solver_niter[w][0] = it
        if _limit_reached(probe):
            sw[w, W_LIMIT] = 1.0


# ---------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------

def _nstat(m) -> int:
    """Statistics slots: the main solver's iterations, then noslip's (as mjData.solver,
    at most NSOLVER)."""
    iterations = int(m.opt.iterations) + max(0, int(m.opt.noslip_iterations))
    return max(1, min(NSOLVER, iterations))


def by_islands(m) -> bool:
    """Whether CG / Newton solve each constraint island on its own, as MuJoCo 3.4.0's
    mj_fwdConstraint: the island flag on (the default), no noslip, CG or Newton (a
    world with rows always has islands then)."""
    return (not m.opt.disabled("island") and m.opt.solver in (SOL_CG, SOL_NEWTON)
            and m.opt.noslip_iterations == 0)


def _nunit(m) -> int:
    """Solve units per world: its islands (at most one per tree) or the whole world."""
    return max(1, m.ntree) if by_islands(m) else 1


def _scratch(m, d):
    """Solver scratch on ``d`` (allocated on first use, re-allocated if sizes change)."""
    dual = m.opt.solver == SOL_PGS
    newton = m.opt.solver == SOL_NEWTON
    dense_newton = newton and not d.is_sparse
    nv, njmax, nstat, nunit = max(1, m.nv), max(1, d.njmax), _nstat(m), _nunit(m)
    # (sparse-Jacobian models, many dofs, keep matrix-free rows: AR's dense rows of J
    # M^-1/2 would cost n^2 nv where the sparse rows cost their non-zeros)
    ndense = min(njmax, PGS_DENSE) if dual and not d.is_sparse else 0
    key = (nv, njmax, nstat, dual, newton, nunit, d.is_sparse, ndense)
    scratch = d.scratch.solver
    if scratch is None or scratch["key"] != key:
        dtype = d.qvel.dtype
        nworld = d.nworld
        scratch = {
            "key": key,
            "se": ti.ndarray(dtype, (nworld, E_N, njmax)),
            "si": ti.ndarray(ti.i32, (nworld, I_N, njmax)),
            "sv": ti.ndarray(dtype, (nworld, V_N, nv)),
            "sw": ti.ndarray(dtype, (nworld, W_N)),
            # a small dense block per unit: a cone Hessian and its factor (Newton);
            # an AR block, its residual and old forces in rows 6, 7 (PGS)
            "sb": ti.ndarray(dtype, (nworld, nunit if newton else 1, 8, 6)),
            # CG / Newton: the units and their scalars
            "su": ti.ndarray(ti.i32, (nworld, nunit, U_N)),
            "sk": ti.ndarray(dtype, (nworld, nunit, K_N)),
            "stats": ti.ndarray(dtype, (nworld, min(nunit, NISLAND), nstat, S_N)),
            # dense Newton: the Hessian factor L and its copy with cone terms (lower
            # triangles), an island's in its diagonal block in idof order (sparse
            # models: the sparse Hessian's scratch, _hess_scratch)
            "sH": ti.ndarray(dtype, (nworld, 2, nv, nv) if dense_newton
                             else (1, 2, 1, 1)),
            # PGS: M^-1 J' by rows (J M^-1/2 in a world with at most PGS_DENSE rows),
            # and that world's AR
            "minvjt": ti.ndarray(dtype, (nworld, njmax, nv) if dual else (1, 1, 1)),
            "ar": ti.ndarray(dtype, (nworld, max(1, ndense), max(1, ndense)) if dual
                             else (1, 1, 1)),
        }
        for name, arr in scratch.items():
            if name != "key":
                d.scratch.tag(arr)
                arr.fill(0)  # nothing is read before it is written; keep it defined
        scratch["ndense"] = ndense
        d.scratch.solver = scratch
    return scratch


def sparse_newton(m, d) -> bool:
    """Whether Newton factors the sparse Hessian (sparse-Jacobian Data, as
    mj_solNewton with mj_isSparse) instead of the dense one."""
    return m.opt.solver == SOL_NEWTON and d.is_sparse


def _hess_scratch(m, d):
    """The sparse Newton Hessian's scratch on ``d`` (kernels/hessian.py's two flat
    arrays), sized in non-zeros: J' as the Jacobian (njnnz), H and L (nhnnz each: H's
    pattern is part of L's), Lcone for elliptic cones; tiny placeholders where Newton
    is dense or not run (the iteration kernel takes the arrays either way)."""
    use = sparse_newton(m, d)
    nv, njnnz, nhnnz = max(1, m.nv), max(1, d.njnnz), max(1, d.nhnnz)
    nslot = 2 if m.opt.cone == CONE_ELLIPTIC else 1
    key = (use, nv, njnnz, nhnnz, nslot)
    scratch = d.scratch.hessian
    if scratch is None or scratch["key"] != key:
        nw = d.nworld if use else 1
        nints, nfloats = hess_sizes(nv, njnnz, nhnnz, nslot) if use else (1, 1)
        scratch = {"key": key, "sizes": (nv, njnnz, nhnnz) if use else (1, 1, 1),
                   "hint": ti.ndarray(ti.i32, (nw, nints)),
                   "hflt": ti.ndarray(d.qvel.dtype, (nw, nfloats))}
        for name in ("hint", "hflt"):
            d.scratch.tag(scratch[name])
            scratch[name].fill(0)
        d.scratch.hessian = scratch
    return scratch


def solve(m, d) -> None:
    """Constraint forces and constrained acceleration of every world, as
    mj_fwdConstraint (after make_constraint and island: the islands must be those of
    the current rows, as forward makes them), with opt.solver (PGS, CG, Newton).

    Reads nefc, ne, nf, efc_type, efc_id, efc_J, efc_D, efc_R, efc_frictionloss,
    efc_aref, contact_mu, contact_friction, contact_dim, contact_efc_address, qM,
    qLD_tree, qLDiagInv, qfrc_smooth, qacc_smooth, qacc_warmstart and the islands
    (nisland, nidof, dof_island, island_nv, island_idofadr, island_nefc,
    island_iefcadr, map_dof2idof, map_idof2dof, map_iefc2efc; sparse models also
    efc_J_sparse, efc_J_colind, efc_J_rowadr, efc_J_rownnz). Writes efc_b, efc_force,
    efc_state, qfrc_constraint, qacc, solver_niter (iterations of the last solve, per
    island or in island 0 for a world solved whole), the per-iteration statistics read
    by ``solver_stats`` and, for Newton on sparse models, efc_H_overflow (solves whose
    sparse Hessian did not fit nhnnz). Worlds without rows get qacc = qacc_smooth.
    CG and Newton solve each island on its own when MuJoCo does (see by_islands and
    the module docstring), else each world whole. With opt.noslip_iterations > 0,
    kernels/noslip.py then re-solves the friction forces of every world with rows
    (mj_solNoSlip) and rewrites those outputs.
    """
    opt = m.opt
    if opt.solver not in SOLVER_NAMES:
        raise NotImplementedError(f"solve: solver {opt.solver}")
    s = _scratch(m, d)
    limit = loop_limit()
    # passes of the iteration kernel: PGS's warm-start test, sweeps and dualFinish;
    # CG / Newton's set-up and iterations
    passes = int(opt.iterations) + (2 if opt.solver == SOL_PGS else 1)
    if limit is None:
        _solve(m, d, s, passes, 0)
        if opt.noslip_iterations > 0:
            from .noslip import noslip  # noslip builds on this module's functions
            noslip(m, d, s)
        return
    npass = min(passes, s.get("npass") or _first_npass(m, d, limit))
    while True:
        _solve(m, d, s, npass, 2)
        limited = s["sw"].to_numpy()[:d.nworld, W_LIMIT].any()
        if not limited and opt.noslip_iterations > 0:
            from .noslip import noslip
            noslip(m, d, s, npass, 2)
            limited = s["sw"].to_numpy()[:d.nworld, W_LIMIT].any()
        if not limited:
            break
        if npass == 1:
            warnings.warn(
                f"solve: one {SOLVER_NAMES[opt.solver]} iteration runs more loop "
                f"iterations per world than this backend allows one kernel thread "
                f"({limit}: Mesa's lavapipe/llvmpipe), so its loops were cut short and "
                f"qacc is wrong; use the cpu, cuda or a GPU's Vulkan/Metal backend for "
                f"this model", RuntimeWarning, stacklevel=2)
            break
        # start over with shorter launches (from the main solve: noslip rewrote its forces)
        npass = max(1, npass // 4)
    s["npass"] = npass


def _first_npass(m, d, limit) -> int:
    """Passes per launch to try first under a loop limiter: a rough count of one
    pass's loop iterations (solve lowers it if the limiter still runs out)."""
    nv, njmax = max(1, m.nv), max(1, d.njmax)
    per_pass = 4 * njmax * nv + 20 * njmax + 10 * nv + 100
    if m.opt.solver != SOL_PGS:
        per_pass += 8 * njmax * min(int(m.opt.ls_iterations), 10)
    if m.opt.solver == SOL_NEWTON:
        per_pass += 2 * nv * nv * nv
    return max(1, limit // (2 * per_pass))


def _solve(m, d, s, npass, probe) -> None:
    """One solve, its iteration kernel launched with at most ``npass`` passes per
    launch (as many launches as it takes to run every pass)."""
    opt = m.opt
    warmstart = int(not opt.disabled("warmstart"))
    dual = opt.solver == SOL_PGS
    scale = 1.0 / (float(m.stat.meaninertia) * max(1, m.nv))
    passes = int(opt.iterations) + (2 if dual else 1)
    nlaunch = -(-passes // npass)
    sparse = m.is_sparse
    launch(_prepare, m, d, qLD=d.qLD_tree, se=s["se"], si=s["si"], minvjt=s["minvjt"],
           sw=s["sw"], warmstart=warmstart, dual=int(dual), ndense=s["ndense"],
           sparse=sparse)
    if dual:
        for _ in range(nlaunch):
            launch(_pgs, m, d, qLD=d.qLD_tree, se=s["se"], si=s["si"], sv=s["sv"],
                   sw=s["sw"], sb=s["sb"], minvjt=s["minvjt"], ar=s["ar"],
                   stats=s["stats"],
                   maxiter=int(opt.iterations), tolerance=float(opt.tolerance),
                   scale=scale, warmstart=warmstart, qcqp_iterations=QCQP_ITERATIONS,
                   npass=npass, probe=probe, ndense=s["ndense"], sparse=sparse)
    else:
        newton = opt.solver == SOL_NEWTON
        islands = by_islands(m)
        launch(_primal_start, m, d, se=s["se"], si=s["si"], sv=s["sv"], sw=s["sw"],
               su=s["su"], sk=s["sk"], warmstart=warmstart, scale=scale, probe=probe,
               by_island=islands, sparse=sparse)
        hess = sparse_newton(m, d)
        h = _hess_scratch(m, d)
        hnv, hnj, hnh = h["sizes"]
        if hess:
            launch(_hessian_symbolic, m, d, su=s["su"], sk=s["sk"], hint=h["hint"],
                   hnv=hnv, hnj=hnj, hnh=hnh, by_island=islands)
        elif newton:
            # no fused multiply-adds: the same H, bit for bit, as _hessian made when
            # its sums were atomic adds (a (world, dof) thread's writes are not the
            # loop index's own to Taichi), without their cost
            with exact_math():
                launch(_hessian, m, d, se=s["se"], su=s["su"], sH=s["sH"],
                       by_island=islands)
        for _ in range(nlaunch):
            launch(_primal_iterate, m, d, qLD=d.qLD_tree, se=s["se"], si=s["si"],
                   sv=s["sv"], sH=s["sH"], sw=s["sw"], sb=s["sb"], su=s["su"], sk=s["sk"],
                   stats=s["stats"], hint=h["hint"], hflt=h["hflt"],
                   maxiter=int(opt.iterations), tolerance=float(opt.tolerance),
                   ls_tolerance=float(opt.ls_tolerance), ls_iterations=int(opt.ls_iterations),
                   newton=int(newton), npass=npass, probe=probe, hnv=hnv, hnj=hnj, hnh=hnh,
                   by_island=islands, sparse=sparse, hess=hess)


def solver_stats(m, d, island: int = 0) -> dict:
    """Per-iteration statistics of the last ``solve`` as mjData.solver: those of
    ``island`` (0 .. 19; island 0 is a world solved whole, PGS's and noslip's), as
    {name: (nworld, min(iterations, 200)) numpy array} for improvement, gradient,
    lineslope, nactive, nchange, neval, nupdate; entries past solver_niter[w, island]
    are stale, and so are those of islands a world does not have."""
    if not 0 <= island < NISLAND:
        raise ValueError(f"solver_stats: island must be in [0, {NISLAND}), not {island}")
    s = _scratch(m, d)
    stats = s["stats"].to_numpy()
    if island >= stats.shape[1]:
        stats = np.zeros_like(stats[:, :1])
        island = 0
    return {name: stats[:, island, :, k] for k, name in enumerate(STAT_NAMES)}
