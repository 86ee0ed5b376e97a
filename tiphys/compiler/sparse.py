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


def _dofdof(nv: int, parent: list, simple: list, reduced: bool, upper: bool):
    rownnz = [0] * nv
    for i in range(nv - 1, -1, -1):
        rownnz[i] += 1
        if not (reduced and simple[i]):
            j = parent[i]
            while j >= 0:
                rownnz[i] += 1
                if upper:
                    rownnz[j] += 1
                j = parent[j]
    rowadr = [0] * nv
    for i in range(1, nv):
        rowadr[i] = rowadr[i - 1] + rownnz[i - 1]
    colind = [0] * (rowadr[-1] + rownnz[-1] if nv else 0)
    remaining = list(rownnz)
    for i in range(nv - 1, -1, -1):  # filled from the end of each row: sorted rows
        remaining[i] -= 1
        colind[rowadr[i] + remaining[i]] = i
        if not (reduced and simple[i]):
            j = parent[i]
            while j >= 0:
                remaining[i] -= 1
                colind[rowadr[i] + remaining[i]] = j
                if upper:
                    remaining[j] -= 1
                    colind[rowadr[j] + remaining[j]] = i
                j = parent[j]
    return rownnz, rowadr, colind


def _body_dof(nbody: int, dofnum: list, parent: list, dofadr: list):
    rownnz = [0] * nbody
    for i in range(nbody - 1, 0, -1):
        rownnz[i] += dofnum[i]
        rownnz[parent[i]] += rownnz[i]
    for i in range(nbody):
        j = parent[i]
        while j > 0:
            rownnz[i] += dofnum[j]
            j = parent[j]
    rowadr = [0] * nbody
    for i in range(1, nbody):
        rowadr[i] = rowadr[i - 1] + rownnz[i - 1]
    rows = [[] for _ in range(nbody)]
    for i in range(nbody - 1, 0, -1):
        rows[i].extend(range(dofadr[i], dofadr[i] + dofnum[i]))
        rows[parent[i]].extend(rows[i])
    for i in range(nbody):
        j = parent[i]
        while j > 0:
            rows[i].extend(range(dofadr[j], dofadr[j] + dofnum[j]))
            j = parent[j]
    colind = [c for row in rows for c in sorted(row)]
    return rownnz, rowadr, colind


def fill_sparse(out) -> None:
    """D_*, B_*, M_*, mapM2D, mapD2M, mapM2M and the sizes nB, nC, nD into ``out``."""
    i32 = np.int32

    def ints(a) -> list:  # (tolist: Python ints at once; iterating numpy ints is slow)
        return np.asarray(a).reshape(-1).tolist()

    parent, simple, madr = ints(out.dof_parentid), ints(out.dof_simplenum), ints(out.dof_Madr)
    nv = len(parent)
    d_nnz, d_adr, d_col = _dofdof(nv, parent, simple, reduced=False, upper=True)
    m_nnz, m_adr, m_col = _dofdof(nv, parent, simple, reduced=True, upper=False)
    diag = [d_col[d_adr[i]:d_adr[i] + d_nnz[i]].index(i) for i in range(nv)]
    body_parent = ints(out.body_parentid)
    b_nnz, b_adr, b_col = _body_dof(len(body_parent), ints(out.body_dofnum), body_parent,
                                    ints(out.body_dofadr))
    # (row, col) pairs keyed as row * nv + col: ints hash faster than tuples
    # mapM2D: for each D entry, the M entry of the same (row, col) or its mirror
    where_m = {}
    for i in range(nv):
        row = i * nv
        for k in range(m_adr[i], m_adr[i] + m_nnz[i]):
            where_m[row + m_col[k]] = k
    get_m = where_m.get
    map_m2d = [get_m(i * nv + j if j <= i else j * nv + i, -1)
               for i in range(nv) for j in d_col[d_adr[i]:d_adr[i] + d_nnz[i]]]
    # mapD2M: for each M entry, the D entry of the same (row, col)
    where_d = {}
    for i in range(nv):
        row = i * nv
        for k in range(d_adr[i], d_adr[i] + d_nnz[i]):
            where_d[row + d_col[k]] = k
    map_d2m = [where_d[i * nv + j] for i in range(nv)
               for j in m_col[m_adr[i]:m_adr[i] + m_nnz[i]]]
    # mapM2M: qM's legacy entry (dof_Madr: the diagonal, then the ancestors nearest
    # first) of each M entry
    map_m2m = [-1] * len(m_col)
    remaining = list(m_nnz)
    for i in range(nv - 1, -1, -1):
        adr = madr[i]
        remaining[i] -= 1
        map_m2m[m_adr[i] + remaining[i]] = adr
        adr += 1
        if not simple[i]:
            j = parent[i]
            while j >= 0:
                remaining[i] -= 1
                map_m2m[m_adr[i] + remaining[i]] = adr
                adr += 1
                j = parent[j]
    out.D_rownnz, out.D_rowadr = np.array(d_nnz, i32), np.array(d_adr, i32)
    out.D_diag, out.D_colind = np.array(diag, i32), np.array(d_col, i32)
    out.B_rownnz, out.B_rowadr = np.array(b_nnz, i32), np.array(b_adr, i32)
    out.B_colind = np.array(b_col, i32)
    out.M_rownnz, out.M_rowadr = np.array(m_nnz, i32), np.array(m_adr, i32)
    out.M_colind, out.mapM2M = np.array(m_col, i32), np.array(map_m2m, i32)
    out.mapM2D, out.mapD2M = np.array(map_m2d, i32), np.array(map_d2m, i32)
    values = out.__dict__
    values["_size_nB"], values["_size_nC"], values["_size_nD"] = \
        len(b_col), len(m_col), len(d_col)
