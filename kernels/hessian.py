"""Newton's sparse Hessian for sparse-Jacobian models: storage and the sparse
reverse-order Cholesky of MuJoCo 3.4.0 (engine_util_solve.c: mju_cholFactorSparse,
mju_cholSolveSparse, mju_cholUpdateSparse), written for tiphys's per-world scratch.

H = M + J'DJ is factored as H = L'L with L lower triangular, eliminated from the last
row to the first (the order of qLD). A unit (a world solved whole, or one island: see
solver.Unit) keeps its rows at positions p = dofadr + a, a = 0 .. nv-1 its local dof
index (idof order within an island, dof order for a whole world), and its column
indices are local indices, ascending: the dof order restricted to the unit, as
MuJoCo's island-local matrices. Rows of H and L live anywhere in their world's
non-zero arrays (row address and count per position), so the units of one world
never share an entry. L's pattern (the fill-in) is found before the numeric factor
by solver._hessian_symbolic: the numeric code below only writes into it, which is
why an update that adds a constraint row later never needs a new entry (the
pattern covers every row's J'J, not only the quadratic ones, as MuJoCo's).

The arithmetic of each entry follows MuJoCo's (same products, same order), so a
sparse Newton solve agrees with MuJoCo's to round-off, not with tiphys's dense path
(a forward-order Cholesky, whose sums are ordered differently).
"""
from collections import namedtuple

import taichi as ti

from .consts import MINVAL

# int rows of ``hi`` (nworld, HI_N, nv), by position: J' (row address and count into
# jtr / jta), H and L rows (address, count), the elimination tree's child lists
# (head, next), a marker and a merge buffer of the symbolic pass, the two index lists
# of a sparse update vector, and whether a row's columns left of its parent are its
# parent's (HI_CHAIN: then an update passes from the row to its parent without a
# merge), and L's columns (address and count into ctr / cta)
(HI_JTADR, HI_JTNNZ, HI_HADR, HI_HNNZ, HI_LADR, HI_LNNZ, HI_HEAD, HI_NEXT, HI_MARK,
 HI_TMP, HI_XI, HI_XB, HI_CHAIN, HI_CADR, HI_CNNZ) = range(15)
HI_N = 15
# float rows of ``hf`` (nworld, HF_N, nv), by position: a dense accumulator, a sparse
# update vector and its merge buffer, a solve's vector, and L'J of a cone (6 rows)
HF_ACC, HF_X, HF_XB, HF_RES, HF_LTJ = range(5)
HF_N = HF_LTJ + 6

# the arrays the sparse Newton funcs read (a ti.static value inside a kernel):
#   hi, hf: per-position ints and floats (above)
#   jtr, jta: J' by position, each entry's row and the address of its value in
#       efc_J_sparse (nworld, njnnz)
#   jl: the local column of every efc_J_sparse entry of a solved row (nworld, njnnz)
#   hval, hcol: H's lower triangle (nworld, nhnnz)
#   lval, lcol: L and, for elliptic cones, Lcone = L with the cone terms
#       (nworld, 1 or 2, nhnnz), sharing lcol (nworld, nhnnz)
#   ctr, cta: L's strict lower triangle by column (rows descending), each entry's
#       row and address in lval (nworld, nhnnz)
#   d2i: map_dof2idof, or None where every unit is a whole world
HessView = namedtuple("HessView", "hi hf jtr jta jl hval hcol lval lcol ctr cta d2i")


@ti.func
def chol_factor_sparse(w, o, n, slot, mindiag, HS: ti.template()):
    """L[slot] of the unit at positions o .. o+n-1 = the reverse Cholesky factor of its
    H (hval), as mju_cholFactorSparse; returns the rank (diagonals below ``mindiag``
    are raised to it). MuJoCo goes up the rows and subtracts each finished row a from
    the rows c of its columns (L(c, 0..c) -= L(a, c) L(a, 0..c), a search for every
    column of row c); here row c gathers the same updates when its turn comes, from
    the rows of its column (ctr / cta, rows descending: MuJoCo's order) into a dense
    accumulator, so every entry gets the same sums in the same order, no search."""
    rank = n
    for aa in range(n):
        c = n - 1 - aa
        p = o + c
        ladr = HS.hi[w, HI_LADR, p]
        lnnz = HS.hi[w, HI_LNNZ, p]
        for t in range(lnnz):
            HS.hf[w, HF_ACC, o + HS.lcol[w, ladr + t]] = 0.0
        hadr = HS.hi[w, HI_HADR, p]
        for t in range(HS.hi[w, HI_HNNZ, p]):
            HS.hf[w, HF_ACC, o + HS.hcol[w, hadr + t]] = HS.hval[w, hadr + t]
        cadr = HS.hi[w, HI_CADR, p]
        for e in range(cadr, cadr + HS.hi[w, HI_CNNZ, p]):
            q = HS.cta[w, e]
            b = -HS.lval[w, slot, q]
            for k in range(HS.hi[w, HI_LADR, o + HS.ctr[w, e]], q + 1):
                col = o + HS.lcol[w, k]
                HS.hf[w, HF_ACC, col] = HS.hf[w, HF_ACC, col] + b * HS.lval[w, slot, k]
        tmp = HS.hf[w, HF_ACC, p]
        if tmp < mindiag:
            tmp = mindiag
            rank -= 1
        diag = ti.sqrt(tmp)
        HS.lval[w, slot, ladr + lnnz - 1] = diag
        inv = 1.0 / diag
        for t in range(lnnz - 1):
            HS.lval[w, slot, ladr + t] = HS.hf[w, HF_ACC, o + HS.lcol[w, ladr + t]] * inv
    return rank


@ti.func
def chol_solve_sparse(w, o, n, slot, HS: ti.template()):
    """hf[w, HF_RES] <- inv(L'L) hf[w, HF_RES] on the unit's positions, as
    mju_cholSolveSparse (its dot products summed as mju_dotSparse's, four at a time)."""
    for aa in range(n):
        a = n - 1 - aa
        x = HS.hf[w, HF_RES, o + a]
        if x != 0.0:
            adr = HS.hi[w, HI_LADR, o + a]
            nnz = HS.hi[w, HI_LNNZ, o + a]
            x = x / HS.lval[w, slot, adr + nnz - 1]
            HS.hf[w, HF_RES, o + a] = x
            for t in range(nnz - 1):
                c = o + HS.lcol[w, adr + t]
                HS.hf[w, HF_RES, c] = HS.hf[w, HF_RES, c] - HS.lval[w, slot, adr + t] * x
    for a in range(n):
        adr = HS.hi[w, HI_LADR, o + a]
        nnz = HS.hi[w, HI_LNNZ, o + a]
        x = HS.hf[w, HF_RES, o + a]
        if nnz > 1:
            m = nnz - 1
            r0 = 0.0
            r1 = 0.0
            r2 = 0.0
            r3 = 0.0
            t = 0
            while t <= m - 4:
                r0 += HS.lval[w, slot, adr + t] * HS.hf[w, HF_RES, o + HS.lcol[w, adr + t]]
                r1 += HS.lval[w, slot, adr + t + 1] * \
                    HS.hf[w, HF_RES, o + HS.lcol[w, adr + t + 1]]
                r2 += HS.lval[w, slot, adr + t + 2] * \
                    HS.hf[w, HF_RES, o + HS.lcol[w, adr + t + 2]]
                r3 += HS.lval[w, slot, adr + t + 3] * \
                    HS.hf[w, HF_RES, o + HS.lcol[w, adr + t + 3]]
                t += 4
            s = (r0 + r2) + (r1 + r3)
            while t < m:
                s += HS.lval[w, slot, adr + t] * HS.hf[w, HF_RES, o + HS.lcol[w, adr + t]]
                t += 1
            x = x - s
        HS.hf[w, HF_RES, o + a] = x / HS.lval[w, slot, adr + nnz - 1]


@ti.func
def chol_update_sparse(w, o, n, slot, xnnz, flg_plus, HS: ti.template()):
    """L'L +/- x x' in place on L[slot] (x: the xnnz values hf[w, HF_X, o + k] at local
    columns hi[w, HI_XI, o + k], ascending; destroyed), as mju_cholUpdateSparse; L's
    pattern must hold the result (it holds every constraint row's). Returns the
    rank."""
    rank = n
    i = xnnz - 1
    same = -1  # whether x's pattern is the next row's: 1, 0, or -1 (not known)
    while i >= 0:
        p = o + HS.hi[w, HI_XI, o + i]
        adr = HS.hi[w, HI_LADR, p]
        nnz = HS.hi[w, HI_LNNZ, p]
        lkk = HS.lval[w, slot, adr + nnz - 1]
        xi = HS.hf[w, HF_X, o + i]
        tmp = lkk * lkk - xi * xi
        if flg_plus:
            tmp = lkk * lkk + xi * xi
        if tmp < MINVAL:
            tmp = MINVAL
            rank -= 1
        r = ti.sqrt(tmp)
        c = r / lkk
        s = xi / lkk
        HS.lval[w, slot, adr + nnz - 1] = r
        # the row: L(p, :) / c +/- (s / c) x where both are non-zero
        sa = 1.0 / c
        sb = -s / c
        if flg_plus:
            sb = s / c
        # x's pattern (left of p) is often the row's own (the columns a row passes to
        # its parent in the elimination tree): then both updates are plain loops, as
        # MuJoCo's identical-pattern case (same arithmetic as the merges below). Known
        # without a comparison after such a step from a HI_CHAIN row
        if same == -1:
            same = ti.cast(i == nnz - 1, ti.i32)
            if same:
                for t in range(i):
                    if HS.hi[w, HI_XI, o + t] != HS.lcol[w, adr + t]:
                        same = 0
                        break
        if same:
            for t in range(i):
                v = HS.lval[w, slot, adr + t] * sa + sb * HS.hf[w, HF_X, o + t]
                HS.lval[w, slot, adr + t] = v
                HS.hf[w, HF_X, o + t] = c * HS.hf[w, HF_X, o + t] + (-s) * v
            i -= 1
            same = -1
            if HS.hi[w, HI_CHAIN, p]:
                same = 1
            continue
        same = -1
        k = 0
        for t in range(nnz - 1):
            col = HS.lcol[w, adr + t]
            v = HS.lval[w, slot, adr + t] * sa
            while k < i and HS.hi[w, HI_XI, o + k] < col:
                k += 1
            if k < i:
                if HS.hi[w, HI_XI, o + k] == col:
                    v = v + sb * HS.hf[w, HF_X, o + k]
            HS.lval[w, slot, adr + t] = v
        # x(0 .. i-1) <- c x - s L(p, :), on the union of their patterns
        ka = 0
        kb = 0
        m = 0
        while (ka < i) | (kb < nnz - 1):
            ca = n
            cb = n
            if ka < i:
                ca = HS.hi[w, HI_XI, o + ka]
            if kb < nnz - 1:
                cb = HS.lcol[w, adr + kb]
            if ca == cb:
                HS.hf[w, HF_XB, o + m] = c * HS.hf[w, HF_X, o + ka] + \
                    (-s) * HS.lval[w, slot, adr + kb]
                HS.hi[w, HI_XB, o + m] = ca
                ka += 1
                kb += 1
            elif ca < cb:
                HS.hf[w, HF_XB, o + m] = c * HS.hf[w, HF_X, o + ka]
                HS.hi[w, HI_XB, o + m] = ca
                ka += 1
            else:
                HS.hf[w, HF_XB, o + m] = (-s) * HS.lval[w, slot, adr + kb]
                HS.hi[w, HI_XB, o + m] = cb
                kb += 1
            m += 1
        for t in range(m):
            HS.hf[w, HF_X, o + t] = HS.hf[w, HF_XB, o + t]
            HS.hi[w, HI_XI, o + t] = HS.hi[w, HI_XB, o + t]
        i = m - 1
    return rank
