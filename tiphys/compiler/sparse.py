"""The sparse layouts of the inertia matrix that MuJoCo 3.4.0's compiler stores in
the model (mjCModel's "sparsity structures", engine_io.c's mj_makeDofDofSparse,
mj_makeBSparse and mj_makeDofDofMaps):

- D: the full symmetric dof-dof pattern of qM (each dof with its ancestors and
  descendants), rows sorted, with the diagonal's position in each row;
- M: the reduced lower-triangular pattern (a simple dof keeps only its diagonal),
  CSR, and mapM2M from qM's legacy layout (dof_Madr) into it;
- B: the body-dof pattern (each body with its subtree's and ancestors' dofs);
- mapM2D (M's entry for each D entry, -1 where a simple dof's row has none) and
  mapD2M (D's entry for each M entry).
"""
from __future__ import annotations

import numpy as np


def _dof_patterns(parent: list, simple: list):
    """D and M (rownnz, rowadr, colind each; rows sorted) and each dof's number of
    ancestors, from the dofs' order: a dof's parent has a smaller id and a
    dof's descendants follow it (the bodies' depth-first order), so row i of D is its
    ancestors (root first: the one with k ancestors is the row's k-th entry), i, and
    the ids after i up to its subtree's end; row i of M is the ancestors and i (only i
    for a simple dof)."""
    nv = len(parent)
    depth = [0] * nv
    chain = [None] * nv  # the ancestors and the dof itself, root first
    for i in range(nv):
        p = parent[i]
        if p < 0:
            chain[i] = [i]
        else:
            depth[i] = depth[p] + 1
            chain[i] = chain[p] + [i]
    size = [1] * nv  # dofs in each dof's subtree
    for i in range(nv - 1, -1, -1):
        if parent[i] >= 0:
            size[parent[i]] += size[i]
    d_nnz, d_adr, d_col = [0] * nv, [0] * nv, []
    m_nnz, m_adr, m_col = [0] * nv, [0] * nv, []
    for i in range(nv):
        d_adr[i], m_adr[i] = len(d_col), len(m_col)
        d_nnz[i] = depth[i] + size[i]
        d_col += chain[i]
        d_col += range(i + 1, i + size[i])
        if simple[i]:
            m_nnz[i] = 1
            m_col.append(i)
        else:
            m_nnz[i] = depth[i] + 1
            m_col += chain[i]
    return d_nnz, d_adr, d_col, m_nnz, m_adr, m_col, depth


def _body_dof(nbody: int, dofnum: list, parent: list, dofadr: list):
    """B (rownnz, rowadr, colind): each body's row holds its ancestors' dofs, then its
    subtree's, which are consecutive (bodies in depth-first order; the world's row
    holds every dof)."""
    count = list(dofnum)  # dofs in each body's subtree
    for i in range(nbody - 1, 0, -1):
        count[parent[i]] += count[i]
    rownnz, rowadr, colind = [0] * nbody, [0] * nbody, []
    above = [[] for _ in range(nbody)]  # the ancestors' dofs, root first
    start = 0  # the first dof of body i's subtree
    for i in range(nbody):
        p = parent[i]
        if i > 0 and p > 0:
            above[i] = above[p] + list(range(dofadr[p], dofadr[p] + dofnum[p]))
        rowadr[i] = len(colind)
        rownnz[i] = len(above[i]) + count[i]
        colind += above[i]
        colind += range(start, start + count[i])
        start += dofnum[i]
    return rownnz, rowadr, colind


def fill_sparse(out) -> None:
    """D_*, B_*, M_*, mapM2D, mapD2M, mapM2M and the sizes nB, nC, nD into ``out``."""
    i32 = np.int32

    def ints(a) -> list:  # (tolist: Python ints at once; iterating numpy ints is slow)
        return np.asarray(a).reshape(-1).tolist()

    parent, simple, madr = ints(out.dof_parentid), ints(out.dof_simplenum), ints(out.dof_Madr)
    nv = len(parent)
    d_nnz, d_adr, d_col, m_nnz, m_adr, m_col, depth = _dof_patterns(parent, simple)
    body_parent = ints(out.body_parentid)
    b_nnz, b_adr, b_col = _body_dof(len(body_parent), ints(out.body_dofnum), body_parent,
                                    ints(out.body_dofadr))
    # mapM2D: for each D entry, the M entry of the same (row, col) or its mirror (an
    # ancestor's column of a descendant's row), -1 where a simple dof's row has none
    map_m2d = []
    for i in range(nv):
        k = depth[i]
        if simple[i]:
            map_m2d += [-1] * k
            map_m2d.append(m_adr[i])
        else:
            map_m2d += range(m_adr[i], m_adr[i] + k + 1)
        for j in d_col[d_adr[i] + k + 1:d_adr[i] + d_nnz[i]]:
            map_m2d.append(-1 if simple[j] else m_adr[j] + k)
    # mapD2M: for each M entry, the D entry of the same (row, col)
    map_d2m = []
    for i in range(nv):
        if simple[i]:
            map_d2m.append(d_adr[i] + depth[i])
        else:
            map_d2m += range(d_adr[i], d_adr[i] + depth[i] + 1)
    # mapM2M: qM's legacy entry (dof_Madr: the diagonal, then the ancestors nearest
    # first) of each M entry (row i root first: the ancestor with k ancestors is
    # depth[i] - k entries after the diagonal)
    map_m2m = []
    for i in range(nv):
        if simple[i]:
            map_m2m.append(madr[i])
        else:
            map_m2m += range(madr[i] + depth[i], madr[i] - 1, -1)
    out.D_rownnz, out.D_rowadr = np.array(d_nnz, i32), np.array(d_adr, i32)
    # (D's diagonal: each row's entry after the dof's ancestors)
    out.D_diag, out.D_colind = np.array(depth, i32), np.array(d_col, i32)
    out.B_rownnz, out.B_rowadr = np.array(b_nnz, i32), np.array(b_adr, i32)
    out.B_colind = np.array(b_col, i32)
    out.M_rownnz, out.M_rowadr = np.array(m_nnz, i32), np.array(m_adr, i32)
    out.M_colind, out.mapM2M = np.array(m_col, i32), np.array(map_m2m, i32)
    out.mapM2D, out.mapD2M = np.array(map_m2d, i32), np.array(map_d2m, i32)
    values = out.__dict__
    values["_size_nB"], values["_size_nC"], values["_size_nD"] = \
        len(b_col), len(m_col), len(d_col)
