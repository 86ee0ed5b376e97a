"""Small scalar helpers of the mesh compiler (tiphys/compiler/mesh.py and the modules
it calls), evaluated in the same operation order as MuJoCo 3.4.0's compiler so that
results agree to the last bit in the common cases: normalisation, quaternion and 3x3
products, the Jacobi eigen-solver for principal inertia axes, sequential sums, cross
and dot products, triangle areas and normals.
"""

from __future__ import annotations

import math

import numpy as np

from ..kernels.consts import EPS, MINVAL

EIG_EPS = 1e-12     # tolerance of the Jacobi eigen-solver

_F32 = np.float32  # mesh vertices are single precision, as in mjModel


def _stable_argsort(a: np.ndarray) -> np.ndarray:
    """np.argsort(a, kind="stable") of an integer array, several times faster: the
    keys made unique (each value times len(a) plus its position) sort to the one
    stable order under numpy's default (vectorised, unstable) sort."""
    a = np.asarray(a)
    n = len(a)
    if n == 0:
        return np.argsort(a, kind="stable")
    lo, hi = int(a.min()), int(a.max())
    if (hi - lo + 1) * n >= 2**63:
        return np.argsort(a, kind="stable")
    return np.argsort((a.astype(np.int64) - lo) * n + np.arange(n))


def _normvec(v):
    """Normalise a list in place unless its length is already ~1; return the old length."""
    s = 0.0
    for x in v:
        s += x * x
    if s < EPS:
        return 0.0
    s = math.sqrt(s)
    if abs(s - 1.0) > EPS:
        for i in range(len(v)):
            v[i] /= s
    return s


def _quat2mat(q):
    if q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0:
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    q00 = q[0] * q[0]; q01 = q[0] * q[1]; q02 = q[0] * q[2]; q03 = q[0] * q[3]
    q11 = q[1] * q[1]; q12 = q[1] * q[2]; q13 = q[1] * q[3]
    q22 = q[2] * q[2]; q23 = q[2] * q[3]; q33 = q[3] * q[3]
    m = [0.0] * 9
    m[0] = q00 + q11 - q22 - q33
    m[4] = q00 - q11 + q22 - q33
    m[8] = q00 - q11 - q22 + q33
    m[1] = 2 * (q12 - q03)
    m[2] = 2 * (q13 + q02)
    m[3] = 2 * (q12 + q03)
    m[5] = 2 * (q23 - q01)
    m[6] = 2 * (q13 - q02)
    m[7] = 2 * (q23 + q01)
    return m


def _mulquat(a, b):
    r = [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]]
    _normvec(r)
    return r


def _mulmat3(A, B):
    return [A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j]
            for i in range(3) for j in range(3)]


def _eig3(mat):
    """Eigen-decomposition of a symmetric 3x3 matrix (row-major list of 9).

    Cyclic Jacobi rotations accumulated as a quaternion; eigenvalues sorted in
    decreasing order.  Returns (eigval[3], quat[4]); the columns of
    quat2mat(quat) are the eigenvectors.
    """
    quat = [1.0, 0.0, 0.0, 0.0]
    eigval = [0.0, 0.0, 0.0]
    for _ in range(500):
        ev = _quat2mat(quat)
        evT = [ev[0], ev[3], ev[6], ev[1], ev[4], ev[7], ev[2], ev[5], ev[8]]
        D = _mulmat3(_mulmat3(evT, mat), ev)
        eigval = [D[0], D[4], D[8]]
        if abs(D[1]) > abs(D[2]) and abs(D[1]) > abs(D[5]):
            rk, ck, rotk = 0, 1, 2
        elif abs(D[2]) > abs(D[5]):
            rk, ck, rotk = 0, 2, 1
        else:
            rk, ck, rotk = 1, 2, 0
        off = D[3 * rk + ck]
        if abs(off) < EIG_EPS:
            break
        tau = (D[4 * ck] - D[4 * rk]) / (2 * off)
        if tau >= 0:
            t = 1.0 / (tau + math.sqrt(1 + tau * tau))
        else:
            t = -1.0 / (-tau + math.sqrt(1 + tau * tau))
        c = 1.0 / math.sqrt(1 + t * t)
        if c > 1.0 - EIG_EPS:
            break
        rot = [0.0, 0.0, 0.0, 0.0]
        s = math.sqrt(0.5 - 0.5 * c)
        rot[rotk + 1] = -s if tau >= 0 else s
        if rotk == 1:
            rot[rotk + 1] = -rot[rotk + 1]
        rot[0] = math.sqrt(1.0 - rot[rotk + 1] * rot[rotk + 1])
        _normvec(rot)
        quat = _mulquat(quat, rot)
        _normvec(quat)
    # bubble sort, decreasing (lead indices 0, 1, 0)
    for j in range(3):
        j1 = j % 2
        if eigval[j1] + EIG_EPS < eigval[j1 + 1]:
            eigval[j1], eigval[j1 + 1] = eigval[j1 + 1], eigval[j1]
            rot = [0.707106781186548, 0.0, 0.0, 0.0]
            rot[(j1 + 2) % 3 + 1] = rot[0]
            quat = _mulquat(quat, rot)
            _normvec(quat)
    return eigval, quat


def _seqsum(x, axis=0):
    """Strictly sequential (left to right) sum, like a C accumulation loop."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[axis] == 0:
        shape = list(x.shape)
        del shape[axis]
        return np.zeros(shape)
    return np.take(np.cumsum(x, axis=axis), -1, axis=axis)


def _cross(b, c):
    """Row-wise cross product, same formula as the compiler's."""
    return np.stack([b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1],
                     b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
                     b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]], axis=1)


def _dot3(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _triangles(vert, face, want_normal=True):
    """Per-face (area, unit normal, centre) as the compiler's triangle helper.

    Faces whose doubled area is below MINVAL get area 0 and keep their raw
    (unnormalised) cross product as normal.
    """
    v1 = vert[face[:, 0]]
    v2 = vert[face[:, 1]]
    v3 = vert[face[:, 2]]
    center = np.stack([(v1[:, i] + v2[:, i] + v3[:, i]) / 3 for i in range(3)], axis=1)
    nrm = _cross(v2 - v1, v3 - v1)
    ln = np.sqrt(_dot3(nrm, nrm))
    small = ln < MINVAL
    if want_normal:
        safe = np.where(small, 1.0, ln)
        nrm = np.where(small[:, None], nrm, nrm / safe[:, None])
    area = np.where(small, 0.0, 0.5 * ln)
    return area, nrm, center


def _mulmat(m, v):
    """Rows of v multiplied by the 3x3 matrix m (row-major list): res = m @ v."""
    return np.stack([m[0] * v[:, 0] + m[1] * v[:, 1] + m[2] * v[:, 2],
                     m[3] * v[:, 0] + m[4] * v[:, 1] + m[5] * v[:, 2],
                     m[6] * v[:, 0] + m[7] * v[:, 1] + m[8] * v[:, 2]], axis=1)


def _mulmatT(m, v):
    """res = m^T @ v for each row of v."""
    return np.stack([m[0] * v[:, 0] + m[3] * v[:, 1] + m[6] * v[:, 2],
                     m[1] * v[:, 0] + m[4] * v[:, 1] + m[7] * v[:, 2],
                     m[2] * v[:, 0] + m[5] * v[:, 1] + m[8] * v[:, 2]], axis=1)
