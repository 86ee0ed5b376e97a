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

# A world's sparse Hessian scratch is two flat arrays (few arguments: the iteration
# kernel must stay within SPIR-V's 32 storage buffers), per world:
#   ints (nworld, HI_N nv + 3 njnnz + 4 nhnnz): HI_N rows of nv by position (below);
#       J' by position, each entry's row (jtr) and the address of its value in
#       efc_J_sparse (jta); the local column of every efc_J_sparse entry of a solved
#       row (jl); H's lower triangle's columns (hcol), L's (lcol), and L's strict
#       lower triangle by column, rows descending, each entry's row (ctr) and address
#       in L (cta)
#   floats (nworld, HF_N nv + (1 + nslot) nhnnz): HF_N rows of nv by position
#       (below); H's values (hval); L's, and for elliptic cones Lcone's = L with the
#       cone terms (lval, nslot = 2)
# int rows by position: J' (row address and count), H and L rows (address, count),
# the elimination tree's child lists (head, next), a marker and a merge buffer of the
# symbolic pass, the two index lists of a sparse update vector, whether a row's
# columns left of its parent are its parent's (chain: then an update passes from the
# row to its parent without a merge), L's columns (address and count into ctr / cta),
# whether a row's columns left of the row before it are that row's (twin: the dofs of
# one body; the factor then applies both rows' updates in one pass); and by dof, its
# local index in its unit (loc)
HI_ROWS = ("jtadr", "jtnnz", "hadr", "hnnz", "ladr", "lnnz", "head", "next", "mark",
           "tmp", "xi", "xb", "chain", "cadr", "cnnz", "twin", "loc")
TWIN_GROUP = 6  # rows whose updates the factor applies in one pass, at most
UPDATE_GROUP = 4  # pivots of consecutive chain rows a rank-one update applies in one pass
HI_N = len(HI_ROWS)
# float rows by position: a dense accumulator, a sparse update vector and its merge
# buffer, a solve's vector, and L'J of a cone (6 rows)
HF_ROWS = ("facc", "fx", "fxb", "fres", "fltj")
HF_N = len(HF_ROWS) + 5
INT_ARRAYS = ("jtr", "jta", "jl", "hcol", "lcol", "ctr", "cta")

# what the sparse Newton funcs read (a ti.static value inside a kernel): the two
# arrays, nv and nhnnz, and the start of every row and array in a world's part
HessView = namedtuple("HessView", ("iv", "fv", "nv", "nh") + HI_ROWS + HF_ROWS +
                      INT_ARRAYS + ("hval", "lval"))


def hess_sizes(nv: int, njnnz: int, nhnnz: int, nslot: int) -> tuple:
    """(ints, floats) per world of the sparse Hessian scratch."""
    return HI_N * nv + 3 * njnnz + 4 * nhnnz, HF_N * nv + (1 + nslot) * nhnnz


def hess_view(iv, fv, nv, nj, nh) -> HessView:
    """The HessView of the flat arrays ``iv`` / ``fv`` (``fv`` may be None: the
    symbolic pass) for nv, njnnz, nhnnz (kernel arguments); call inside a kernel as
    ti.static(hess_view(...))."""
    rows = [k * nv for k in range(HI_N)]
    frows = [k * nv for k in range(len(HF_ROWS))]
    base = HI_N * nv
    arrays = [base + k * nj for k in range(3)] + \
        [base + 3 * nj + k * nh for k in range(4)]
    fbase = HF_N * nv
    return HessView(iv, fv, nv, nh, *rows, *frows, *arrays, fbase, fbase + nh)


# Inside the funcs below, ``L`` is the start of L[slot]'s values in a world's floats,
# and ``acc``, ``res``, ``x``, ``xb``, ``xi``, ``xbi`` the start of the unit's
# positions in a row of nv (o: the unit's first position).

@ti.func
def chol_factor_sparse(w, o, n, slot, mindiag, HS: ti.template()):
    """L[slot] of the unit at positions o .. o+n-1 = the reverse Cholesky factor of its
    H (hval), as mju_cholFactorSparse; returns the rank (diagonals below ``mindiag``
    are raised to it). MuJoCo goes up the rows and subtracts each finished row a from
    the rows c of its columns (L(c, 0..c) -= L(a, c) L(a, 0..c), a search for every
    column of row c); here row c gathers the same updates when its turn comes, from
    the rows of its column (ctr / cta, rows descending: MuJoCo's order) into a dense
    accumulator, so every entry gets the same sums in the same order, no search."""
    L = HS.lval + slot * HS.nh
    acc = HS.facc + o
    rank = n
    for aa in range(n):
        c = n - 1 - aa
        p = o + c
        ladr = HS.iv[w, HS.ladr + p]
        lnnz = HS.iv[w, HS.lnnz + p]
        for t in range(lnnz):
            HS.fv[w, acc + HS.iv[w, HS.lcol + ladr + t]] = 0.0
        hadr = HS.iv[w, HS.hadr + p]
        for t in range(HS.iv[w, HS.hnnz + p]):
            HS.fv[w, acc + HS.iv[w, HS.hcol + hadr + t]] = HS.fv[w, HS.hval + hadr + t]
        # the rows of column c, descending; consecutive twin rows (the same columns
        # up to c) in one pass, each entry still summing them in MuJoCo's order
        e = HS.iv[w, HS.cadr + p]
        eend = e + HS.iv[w, HS.cnnz + p]
        while e < eend:
            a0 = HS.iv[w, HS.ctr + e]
            start = HS.iv[w, HS.ladr + o + a0]
            length = HS.iv[w, HS.cta + e] - start + 1
            g = 1
            while g < TWIN_GROUP and e + g < eend:
                prev = a0 - g + 1
                if HS.iv[w, HS.ctr + e + g] != prev - 1 or \
                        HS.iv[w, HS.twin + o + prev] == 0:
                    break
                g += 1
            b = ti.Vector.zero(float, TWIN_GROUP)
            adr = ti.Vector.zero(ti.i32, TWIN_GROUP)
            for j in ti.static(range(TWIN_GROUP)):
                if j < g:
                    q = HS.iv[w, HS.cta + e + j]
                    b[j] = -HS.fv[w, L + q]
                    adr[j] = L + q - length + 1
            for k in range(length):
                col = acc + HS.iv[w, HS.lcol + start + k]
                v = HS.fv[w, col]
                for j in ti.static(range(TWIN_GROUP)):
                    if j < g:
                        v = v + b[j] * HS.fv[w, adr[j] + k]
                HS.fv[w, col] = v
            e += g
        tmp = HS.fv[w, acc + c]
        if tmp < mindiag:
            tmp = mindiag
            rank -= 1
        diag = ti.sqrt(tmp)
        HS.fv[w, L + ladr + lnnz - 1] = diag
        inv = 1.0 / diag
        for t in range(lnnz - 1):
            HS.fv[w, L + ladr + t] = HS.fv[w, acc + HS.iv[w, HS.lcol + ladr + t]] * inv
    return rank


@ti.func
def chol_solve_sparse(w, o, n, slot, HS: ti.template()):
    """fres <- inv(L'L) fres on the unit's positions, as mju_cholSolveSparse (its dot
    products summed as mju_dotSparse's, four at a time)."""
    L = HS.lval + slot * HS.nh
    res = HS.fres + o
    for aa in range(n):
        a = n - 1 - aa
        v = HS.fv[w, res + a]
        if v != 0.0:
            adr = HS.iv[w, HS.ladr + o + a]
            nnz = HS.iv[w, HS.lnnz + o + a]
            v = v / HS.fv[w, L + adr + nnz - 1]
            HS.fv[w, res + a] = v
            for t in range(nnz - 1):
                c = res + HS.iv[w, HS.lcol + adr + t]
                HS.fv[w, c] = HS.fv[w, c] - HS.fv[w, L + adr + t] * v
    for a in range(n):
        adr = HS.iv[w, HS.ladr + o + a]
        nnz = HS.iv[w, HS.lnnz + o + a]
        v = HS.fv[w, res + a]
        if nnz > 1:
            m = nnz - 1
            r0 = 0.0
            r1 = 0.0
            r2 = 0.0
            r3 = 0.0
            t = 0
            while t <= m - 4:
                q = adr + t
                r0 += HS.fv[w, L + q] * HS.fv[w, res + HS.iv[w, HS.lcol + q]]
                r1 += HS.fv[w, L + q + 1] * HS.fv[w, res + HS.iv[w, HS.lcol + q + 1]]
                r2 += HS.fv[w, L + q + 2] * HS.fv[w, res + HS.iv[w, HS.lcol + q + 2]]
                r3 += HS.fv[w, L + q + 3] * HS.fv[w, res + HS.iv[w, HS.lcol + q + 3]]
                t += 4
            s = (r0 + r2) + (r1 + r3)
            while t < m:
                s += HS.fv[w, L + adr + t] * HS.fv[w, res + HS.iv[w, HS.lcol + adr + t]]
                t += 1
            v = v - s
        HS.fv[w, res + a] = v / HS.fv[w, L + adr + nnz - 1]


@ti.func
def _rotation(w, diag, xv, flg_plus, HS: ti.template()):
    """One pivot of mju_cholUpdateSparse: the row's new diagonal (written at ``diag``
    in the floats) from its old one and x's entry ``xv``; returns (c, s, sa, sb, lost):
    the rotation, the scales of the row's update L(p, :) sa + sb x, and 1 where the
    diagonal fell below MINVAL (a rank lost)."""
    lkk = HS.fv[w, diag]
    tmp = lkk * lkk - xv * xv
    if flg_plus:
        tmp = lkk * lkk + xv * xv
    lost = 0
    if tmp < MINVAL:
        tmp = MINVAL
        lost = 1
    r = ti.sqrt(tmp)
    c = r / lkk
    s = xv / lkk
    HS.fv[w, diag] = r
    # the row: L(p, :) / c +/- (s / c) x where both are non-zero
    sa = 1.0 / c
    sb = -s / c
    if flg_plus:
        sb = s / c
    return c, s, sa, sb, lost


@ti.func
def _rotate_entry(w, xa, t, npend, pc, ps, psa, psb, padr, adr, c, s, sa, sb,
                  HS: ti.template()):
    """Entry t of the rows and of x (at float ``xa``) through the ``npend`` waiting
    rotations (terms pc, ps, psa, psb, rows at padr), in order, then the pivot's (c, s,
    sa, sb, row at adr): each row entry L(t) sa + sb x(t), then x(t) c - s L(t)."""
    xt = HS.fv[w, xa]
    for j in ti.static(range(UPDATE_GROUP - 1)):
        if j < npend:
            v = HS.fv[w, padr[j] + t] * psa[j] + psb[j] * xt
            HS.fv[w, padr[j] + t] = v
            xt = pc[j] * xt + (-ps[j]) * v
    v = HS.fv[w, adr + t] * sa + sb * xt
    HS.fv[w, adr + t] = v
    HS.fv[w, xa] = c * xt + (-s) * v


@ti.func
def chol_update_sparse(w, o, n, slot, xnnz, flg_plus, HS: ti.template()):
    """L'L +/- x x' in place on L[slot] (x: the xnnz values fx at the local columns xi,
    ascending, from the unit's first position; destroyed), as mju_cholUpdateSparse;
    L's pattern must hold the result (it holds every constraint row's). Returns the
    rank."""
    L = HS.lval + slot * HS.nh
    x = HS.fx + o
    xi = HS.xi + o
    xb = HS.fxb + o
    xbi = HS.xb + o
    rank = n
    i = xnnz - 1
    same = -1  # whether x's pattern is the next row's: 1, 0, or -1 (not known)
    # rotations of chain rows waiting for a later pivot's pass through x (at most
    # UPDATE_GROUP - 1), in pivot order: their terms and rows' value addresses
    npend = 0
    pc = ti.Vector.zero(float, UPDATE_GROUP - 1)
    ps = ti.Vector.zero(float, UPDATE_GROUP - 1)
    psa = ti.Vector.zero(float, UPDATE_GROUP - 1)
    psb = ti.Vector.zero(float, UPDATE_GROUP - 1)
    padr = ti.Vector.zero(ti.i32, UPDATE_GROUP - 1)
    while i >= 0:
        p = o + HS.iv[w, xi + i]
        adr = L + HS.iv[w, HS.ladr + p]  # row p's values; its columns at cadr
        cadr = HS.lcol + HS.iv[w, HS.ladr + p]
        nnz = HS.iv[w, HS.lnnz + p]
        c, s, sa, sb, lost = _rotation(w, adr + nnz - 1, HS.fv[w, x + i], flg_plus, HS)
        rank -= lost
        # x's pattern (left of p) is often the row's own (the columns a row passes to
        # its parent in the elimination tree): then both updates are plain loops, as
        # MuJoCo's identical-pattern case (same arithmetic as the merges below). Known
        # without a comparison after such a step from a chain row
        if same == -1:
            same = ti.cast(i == nnz - 1, ti.i32)
            if same:
                for t in range(i):
                    if HS.iv[w, xi + t] != HS.iv[w, cadr + t]:
                        same = 0
                        break
        if same:
            if (i >= 1) & (HS.iv[w, HS.chain + p] != 0) & (npend < UPDATE_GROUP - 1):
                # a chain row: its parent, the next pivot, has x's pattern less this
                # entry, so the row's rotation waits for the parent's pass. Its last
                # entry now, after the waiting rotations (the parent's needs it)
                _rotate_entry(w, x + i - 1, i - 1, npend, pc, ps, psa, psb, padr, adr, c,
                              s, sa, sb, HS)
                for j in ti.static(range(UPDATE_GROUP - 1)):
                    if j == npend:
                        pc[j], ps[j], psa[j], psb[j], padr[j] = c, s, sa, sb, adr
                npend += 1
            elif npend > 0:
                # the waiting rotations, then this one, in one pass through x: each
                # entry gets the operations their own passes would give it, in the
                # same order, and x is read and written once
                for t in range(i):
                    _rotate_entry(w, x + t, t, npend, pc, ps, psa, psb, padr, adr, c, s,
                                  sa, sb, HS)
                npend = 0
            else:  # (no rotation waiting: _rotate_entry's loop without its branches)
                for t in range(i):
                    v = HS.fv[w, adr + t] * sa + sb * HS.fv[w, x + t]
                    HS.fv[w, adr + t] = v
                    HS.fv[w, x + t] = c * HS.fv[w, x + t] + (-s) * v
            i -= 1
            same = -1
            if HS.iv[w, HS.chain + p]:
                same = 1
            continue
        same = -1
        k = 0
        for t in range(nnz - 1):
            col = HS.iv[w, cadr + t]
            v = HS.fv[w, adr + t] * sa
            while k < i and HS.iv[w, xi + k] < col:
                k += 1
            if k < i:
                if HS.iv[w, xi + k] == col:
                    v = v + sb * HS.fv[w, x + k]
            HS.fv[w, adr + t] = v
        # x(0 .. i-1) <- c x - s L(p, :), on the union of their patterns
        ka = 0
        kb = 0
        m = 0
        while (ka < i) | (kb < nnz - 1):
            ca = n
            cb = n
            if ka < i:
                ca = HS.iv[w, xi + ka]
            if kb < nnz - 1:
                cb = HS.iv[w, cadr + kb]
            if ca == cb:
                HS.fv[w, xb + m] = c * HS.fv[w, x + ka] + (-s) * HS.fv[w, adr + kb]
                HS.iv[w, xbi + m] = ca
                ka += 1
                kb += 1
            elif ca < cb:
                HS.fv[w, xb + m] = c * HS.fv[w, x + ka]
                HS.iv[w, xbi + m] = ca
                ka += 1
            else:
                HS.fv[w, xb + m] = (-s) * HS.fv[w, adr + kb]
                HS.iv[w, xbi + m] = cb
                kb += 1
            m += 1
        for t in range(m):
            HS.fv[w, x + t] = HS.fv[w, xb + t]
            HS.iv[w, xi + t] = HS.iv[w, xbi + t]
        i = m - 1
    return rank
