"""Host-side rotation math for the compiler (numpy, float64).

Conventions are MuJoCo's: quaternions are (w, x, y, z); matrices are row-major
3x3 and map local to global coordinates.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels.consts import EPS

EIG_EPS = 1e-12  # Jacobi termination
_EYE3 = np.eye(3)  # copied (np.eye itself is slow for a 3x3)


def unit_quats(n: int) -> np.ndarray:
    """An (n, 4) array of identity quaternions (as np.tile of (1, 0, 0, 0), faster)."""
    q = np.zeros((n, 4))
    q[:, 0] = 1.0
    return q


def rows(v: np.ndarray, n: int) -> np.ndarray:
    """``n`` copies of ``v`` stacked (np.tile(v, (n, 1)), faster)."""
    out = np.empty((n,) + v.shape, dtype=v.dtype)
    out[:] = v
    return out


def pyfloats(v) -> list:
    """Python floats of a vector (the same doubles; plain arithmetic on them is
    faster than on numpy scalars)."""
    if type(v) is np.ndarray and v.dtype == np.float64:
        return v.tolist()
    return [float(c) for c in v]


def normalize(v: np.ndarray) -> tuple[np.ndarray, float]:
    """(v / |v|, |v|); a vector of norm < EPS is returned as a default unit vector."""
    v = np.asarray(v, dtype=np.float64)
    n = math.sqrt(np.dot(v, v))  # (sqrt is correctly rounded: np.sqrt's bits)
    if n < EPS:
        out = np.zeros_like(v)
        out[0] = 1.0
        return out, n
    return v / n, n


def quat_mul(a, b) -> np.ndarray:
    """Normalized product a * b, in MuJoCo's arithmetic (mjuu_mulquat)."""
    return np.array(_mulquat_exact(pyfloats(a), pyfloats(b)))


def quat_mul_batch(a, b) -> np.ndarray:
    """:func:`quat_mul` of each row pair of two (n, 4) arrays: the same arithmetic,
    element by element (mjuu_mulquat, then mjuu_normvec's sequential sum)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    if len(a) < 16:  # (fewer numpy calls one by one)
        return np.array([_mulquat_exact(x, y) for x, y in zip(a.tolist(), b.tolist())]
                        ).reshape(-1, 4)
    a0, a1, a2, a3 = a.T
    b0, b1, b2, b3 = b.T
    r = np.stack([a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
                  a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                  a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
                  a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0], axis=1)
    nrm = 0.0 + r[:, 0] * r[:, 0]
    nrm = nrm + r[:, 1] * r[:, 1]
    nrm = nrm + r[:, 2] * r[:, 2]
    nrm = nrm + r[:, 3] * r[:, 3]
    nrm = np.sqrt(nrm, where=nrm >= EPS, out=np.zeros_like(nrm))
    scale = (nrm >= EPS) & (np.abs(nrm - 1) > EPS)
    r[scale] /= nrm[scale][:, None]
    return r


def quat_neg(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=np.float64)


_EYE3_ROWS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def _quat2mat_rows(w, x, y, z) -> list:
    """quat2mat's matrix as nested lists of Python floats (the same arithmetic)."""
    if w == 1 and x == 0 and y == 0 and z == 0:
        return _EYE3_ROWS
    return [[w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z]]


def quat2mat(q) -> np.ndarray:
    w, x, y, z = q.tolist() if type(q) is np.ndarray and q.dtype == np.float64 else q
    if w == 1 and x == 0 and y == 0 and z == 0:
        return _EYE3.copy()
    return np.array(_quat2mat_rows(w, x, y, z))


def quat2mat_batch(q) -> np.ndarray:
    """:func:`quat2mat` of each row of an (n, 4) array, element for element the same
    arithmetic (so the same bits), identity quaternions included."""
    q = np.asarray(q, dtype=np.float64).reshape(-1, 4)
    if len(q) < 16:  # (fewer numpy calls one by one, into one array)
        return np.array([_quat2mat_rows(*qi) for qi in q.tolist()],
                        dtype=np.float64).reshape(-1, 3, 3)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    m = np.empty((len(q), 3, 3))
    m[:, 0, 0] = w * w + x * x - y * y - z * z
    m[:, 0, 1] = 2 * (x * y - w * z)
    m[:, 0, 2] = 2 * (x * z + w * y)
    m[:, 1, 0] = 2 * (x * y + w * z)
    m[:, 1, 1] = w * w - x * x + y * y - z * z
    m[:, 1, 2] = 2 * (y * z - w * x)
    m[:, 2, 0] = 2 * (x * z - w * y)
    m[:, 2, 1] = 2 * (y * z + w * x)
    m[:, 2, 2] = w * w - x * x - y * y + z * z
    m[(w == 1) & (x == 0) & (y == 0) & (z == 0)] = _EYE3
    return m


def matvec_batch(mats, vecs) -> np.ndarray:
    """mats[i] @ vecs[i] for stacks of 3x3 matrices and 3-vectors (the stacked matmul
    computes each item as the single product does)."""
    return (mats @ np.asarray(vecs, dtype=np.float64).reshape(-1, 3, 1))[:, :, 0]


def rotate(q, v) -> np.ndarray:
    return quat2mat(q) @ np.asarray(v, dtype=np.float64)


def mat2quat(mat) -> np.ndarray:
    """Quaternion of a rotation matrix (columns are the frame's axes)."""
    r = np.asarray(mat, dtype=np.float64)
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    q = np.zeros(4)
    if tr > 0:
        q[0] = 0.5 * math.sqrt(1 + tr)
        q[1] = 0.25 * (r[2, 1] - r[1, 2]) / q[0]
        q[2] = 0.25 * (r[0, 2] - r[2, 0]) / q[0]
        q[3] = 0.25 * (r[1, 0] - r[0, 1]) / q[0]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        q[1] = 0.5 * math.sqrt(1 + r[0, 0] - r[1, 1] - r[2, 2])
        q[0] = 0.25 * (r[2, 1] - r[1, 2]) / q[1]
        q[2] = 0.25 * (r[0, 1] + r[1, 0]) / q[1]
        q[3] = 0.25 * (r[0, 2] + r[2, 0]) / q[1]
    elif r[1, 1] > r[2, 2]:
        q[2] = 0.5 * math.sqrt(1 - r[0, 0] + r[1, 1] - r[2, 2])
        q[0] = 0.25 * (r[0, 2] - r[2, 0]) / q[2]
        q[1] = 0.25 * (r[0, 1] + r[1, 0]) / q[2]
        q[3] = 0.25 * (r[1, 2] + r[2, 1]) / q[2]
    else:
        q[3] = 0.5 * math.sqrt(1 - r[0, 0] - r[1, 1] + r[2, 2])
        q[0] = 0.25 * (r[1, 0] - r[0, 1]) / q[3]
        q[1] = 0.25 * (r[0, 2] + r[2, 0]) / q[3]
        q[2] = 0.25 * (r[1, 2] + r[2, 1]) / q[3]
    return normalize(q)[0]


def z2quat(vec) -> np.ndarray:
    """Minimal rotation taking the z axis to ``vec`` (mjuu_z2quat, same arithmetic)."""
    v = pyfloats(vec)
    axis = [0.0 * v[2] - 1.0 * v[1], 1.0 * v[0] - 0.0 * v[2], 0.0 * v[1] - 0.0 * v[0]]
    s = _normvec_exact(axis)
    if s < 1e-10:
        axis = [1.0, 0.0, 0.0]
    ang = math.atan2(s, v[2])
    sa = math.sin(ang / 2)
    return np.array([math.cos(ang / 2), axis[0] * sa, axis[1] * sa, axis[2] * sa])


def axisangle2quat(axis, angle) -> np.ndarray:
    if angle == 0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    s = math.sin(angle / 2)
    return np.array([math.cos(angle / 2), axis[0] * s, axis[1] * s, axis[2] * s])


def frame_accum(pos, quat, child_pos, child_quat):
    """Compose (pos, quat) with a child frame expressed in it (mjuu_frameaccum)."""
    q = pyfloats(quat)
    m = _quat2mat9(q)
    v0, v1, v2 = pyfloats(child_pos)
    p = pyfloats(pos)
    res = [p[0] + (m[0] * v0 + m[1] * v1 + m[2] * v2),
           p[1] + (m[3] * v0 + m[4] * v1 + m[5] * v2),
           p[2] + (m[6] * v0 + m[7] * v1 + m[8] * v2)]
    return np.array(res), np.array(_mulquat_exact(q, pyfloats(child_quat)))


def frame_invert(pos, quat):
    qn = quat_neg(quat)
    return -rotate(qn, pos), qn


def local_pos(pos_global, frame_pos, frame_quat) -> np.ndarray:
    return quat2mat(frame_quat).T @ (np.asarray(pos_global) - np.asarray(frame_pos))


# -- principal axes of inertia, bit for bit as MuJoCo's compiler ----------------------
#
# When two or three principal moments are equal the eigenvector basis is not unique, and
# the one Jacobi iteration lands on depends on the last bits of the input matrix (which
# off-diagonal element is largest, ties included). MuJoCo's compiler (mjuu_eig3,
# mjuu_globalinertia, mjuu_offcenter in user_util.cc) works on plain doubles in a fixed
# order of operations; the helpers below do the same arithmetic in the same order on
# Python floats (IEEE doubles, no fused multiply-add, no BLAS), so that body_iquat
# comes out identical, not merely equivalent.

def _normvec_exact(v: list) -> float:
    """mjuu_normvec: sequential sum of squares; divide only when the norm is not
    within mjEPS of 1; leave vectors of squared norm < mjEPS unchanged."""
    nrm = 0.0
    for x in v:
        nrm += x * x
    if nrm < EPS:
        return 0.0
    nrm = math.sqrt(nrm)
    if abs(nrm - 1) > EPS:
        for i in range(len(v)):
            v[i] /= nrm
    return nrm


def _quat2mat9(q) -> list:
    """mjuu_quat2mat: row-major 9-list."""
    w, x, y, z = q if type(q) is list else pyfloats(q)
    if w == 1 and x == 0 and y == 0 and z == 0:
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    q00, q01, q02, q03 = w * w, w * x, w * y, w * z
    q11, q12, q13 = x * x, x * y, x * z
    q22, q23, q33 = y * y, y * z, z * z
    return [q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02),
            2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01),
            2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33]


def _mulmat9(A, B) -> list:
    """mjuu_mulmat: row-major 3x3 product, each entry summed left to right."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = A
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = B
    return [a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7,
            a0 * b2 + a1 * b5 + a2 * b8,
            a3 * b0 + a4 * b3 + a5 * b6, a3 * b1 + a4 * b4 + a5 * b7,
            a3 * b2 + a4 * b5 + a5 * b8,
            a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7,
            a6 * b2 + a7 * b5 + a8 * b8]


def mulquat_exact(a: list, b: list) -> list:
    """:func:`quat_mul` on Python floats, as a list (mjuu_mulquat + mjuu_normvec)."""
    return _mulquat_exact(a, b)


def _mulquat_exact(a, b) -> list:
    """mjuu_mulquat (normalized with mjuu_normvec)."""
    r = [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]]
    _normvec_exact(r)
    return r


def eig3(mat) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (decreasing) and the quaternion of the eigenvector frame, as
    MuJoCo's compiler computes them (mjuu_eig3), bit for bit.

    Jacobi iteration: the frame is a quaternion q (start: identity); each sweep
    forms D = R(q)' M R(q), picks the largest off-diagonal |D[r,c]| (ties go to
    (0,1) only if strictly larger than both others, else (0,2) if strictly larger
    than (1,2), else (1,2)), stops when it is below 1e-12 or the rotation's cosine
    is within 1e-12 of 1, and otherwise right-multiplies q by the 2x2 Schur
    rotation about the remaining axis. Then a three-pass bubble sort (lead indices
    0, 1, 0) swaps adjacent eigenvalues only when they differ by more than 1e-12,
    each swap right-multiplying q by a 90 degree turn about the third axis. Equal
    moments are therefore never swapped, and the basis of a degenerate subspace is
    whatever the iteration reached: reproducing MuJoCo's choice needs the same
    arithmetic, hence the exact-order helpers.
    """
    m = [float(x) for x in np.asarray(mat, dtype=np.float64).reshape(9)]
    quat = [1.0, 0.0, 0.0, 0.0]
    eigval = [0.0, 0.0, 0.0]
    for _ in range(500):
        ev = _quat2mat9(quat)
        evT = [ev[0], ev[3], ev[6], ev[1], ev[4], ev[7], ev[2], ev[5], ev[8]]
        D = _mulmat9(_mulmat9(evT, m), ev)
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
        r = [0.0, 0.0, 0.0, 0.0]
        half = math.sqrt(0.5 - 0.5 * c)
        r[rotk + 1] = -half if tau >= 0 else half
        if rotk == 1:
            r[rotk + 1] = -r[rotk + 1]
        r[0] = math.sqrt(1.0 - r[rotk + 1] * r[rotk + 1])
        _normvec_exact(r)
        quat = _mulquat_exact(quat, r)
        _normvec_exact(quat)
    for j in range(3):
        j1 = j % 2
        if eigval[j1] + EIG_EPS < eigval[j1 + 1]:
            eigval[j1], eigval[j1 + 1] = eigval[j1 + 1], eigval[j1]
            r = [0.707106781186548, 0.0, 0.0, 0.0]
            r[(j1 + 2) % 3 + 1] = r[0]
            quat = _mulquat_exact(quat, r)
            _normvec_exact(quat)
    return np.array(eigval), np.array(quat)


def global_inertia6(inertia_diag, quat) -> list:
    """mjuu_globalinertia: (xx, yy, zz, xy, xz, yz) of a principal inertia rotated
    by quat, in MuJoCo's order of operations."""
    mat = _quat2mat9(quat)
    loc = [float(x) for x in inertia_diag]
    tmp = [mat[0] * loc[0], mat[3] * loc[0], mat[6] * loc[0],
           mat[1] * loc[1], mat[4] * loc[1], mat[7] * loc[1],
           mat[2] * loc[2], mat[5] * loc[2], mat[8] * loc[2]]
    return [mat[0] * tmp[0] + mat[1] * tmp[3] + mat[2] * tmp[6],
            mat[3] * tmp[1] + mat[4] * tmp[4] + mat[5] * tmp[7],
            mat[6] * tmp[2] + mat[7] * tmp[5] + mat[8] * tmp[8],
            mat[0] * tmp[1] + mat[1] * tmp[4] + mat[2] * tmp[7],
            mat[0] * tmp[2] + mat[1] * tmp[5] + mat[2] * tmp[8],
            mat[3] * tmp[2] + mat[4] * tmp[5] + mat[5] * tmp[8]]


def offcenter6(mass, vec) -> list:
    """mjuu_offcenter: parallel-axis term (xx, yy, zz, xy, xz, yz), MuJoCo's order."""
    m = float(mass)
    v0, v1, v2 = (float(x) for x in vec)
    return [m * (v1 * v1 + v2 * v2), m * (v0 * v0 + v2 * v2), m * (v0 * v0 + v1 * v1),
            -m * v0 * v1, -m * v0 * v2, -m * v1 * v2]


def full_from6(f) -> np.ndarray:
    """The symmetric 3x3 matrix of (xx, yy, zz, xy, xz, yz)."""
    return np.array([[f[0], f[3], f[4]], [f[3], f[1], f[5]], [f[4], f[5], f[2]]],
                    dtype=np.float64)


def euler2quat(euler, seq: str) -> np.ndarray:
    """Euler angles (radians); lowercase axes rotate with the frame, uppercase are fixed.

    MuJoCo's order of operations (ResolveOrientation): each turn multiplied in with
    mjuu_mulquat, the result normalized with mjuu_normvec."""
    if len(euler) == 3:
        a0, a1, a2 = euler
        if a0 == 0 and a1 == 0 and a2 == 0 and math.copysign(1.0, a0) > 0 and \
                math.copysign(1.0, a1) > 0 and math.copysign(1.0, a2) > 0:
            # no turn (replicate copies without euler, ...): made once per sequence,
            # by the code below
            q = _NO_TURN.get(seq)
            if q is None:
                q = _NO_TURN[seq] = _euler2quat((0.0, 0.0, 0.0), seq)
            return q.copy()
    return _euler2quat(euler, seq)


_NO_TURN: dict = {}  # sequence -> euler2quat of three +0.0 angles


def _euler2quat(euler, seq: str) -> np.ndarray:
    quat = [1.0, 0.0, 0.0, 0.0]
    for angle, axis in zip(euler, seq):
        angle = float(angle)
        r = [math.cos(angle / 2), 0.0, 0.0, 0.0]
        r["xyz".index(axis.lower()) + 1] = math.sin(angle / 2)
        quat = _mulquat_exact(quat, r) if axis.islower() else _mulquat_exact(r, quat)
    _normvec_exact(quat)
    return np.array(quat)


def deg2rad(x):
    """MuJoCo's degree conversion, x / 180 * pi (not x * pi / 180: other bits)."""
    return np.asarray(x, dtype=np.float64) / 180.0 * math.pi


def normvec(v) -> tuple[np.ndarray, float]:
    """mjuu_normvec on a copy: (normalized vector, norm); the norm is 0 (and the
    vector unchanged) when its squared norm is below mjEPS."""
    out = [float(x) for x in v]
    n = _normvec_exact(out)
    return np.array(out), n


def frame2quat(x, y, z) -> np.ndarray:
    """mjuu_frame2quat: quaternion of the frame with axes (columns) x, y, z."""
    m = (pyfloats(x), pyfloats(y), pyfloats(z))  # m[col][row]
    q = [0.0, 0.0, 0.0, 0.0]
    if m[0][0] + m[1][1] + m[2][2] > 0:
        q[0] = 0.5 * math.sqrt(1 + m[0][0] + m[1][1] + m[2][2])
        q[1] = 0.25 * (m[1][2] - m[2][1]) / q[0]
        q[2] = 0.25 * (m[2][0] - m[0][2]) / q[0]
        q[3] = 0.25 * (m[0][1] - m[1][0]) / q[0]
    elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        q[1] = 0.5 * math.sqrt(1 + m[0][0] - m[1][1] - m[2][2])
        q[0] = 0.25 * (m[1][2] - m[2][1]) / q[1]
        q[2] = 0.25 * (m[1][0] + m[0][1]) / q[1]
        q[3] = 0.25 * (m[2][0] + m[0][2]) / q[1]
    elif m[1][1] > m[2][2]:
        q[2] = 0.5 * math.sqrt(1 - m[0][0] + m[1][1] - m[2][2])
        q[0] = 0.25 * (m[2][0] - m[0][2]) / q[2]
        q[1] = 0.25 * (m[1][0] + m[0][1]) / q[2]
        q[3] = 0.25 * (m[2][1] + m[1][2]) / q[2]
    else:
        q[3] = 0.5 * math.sqrt(1 - m[0][0] - m[1][1] + m[2][2])
        q[0] = 0.25 * (m[0][1] - m[1][0]) / q[3]
        q[1] = 0.25 * (m[2][0] + m[0][2]) / q[3]
        q[2] = 0.25 * (m[2][1] + m[1][2]) / q[3]
    _normvec_exact(q)
    return np.array(q)


def global_inertia(inertia_diag, quat) -> np.ndarray:
    """3x3 inertia matrix of a principal inertia rotated by quat."""
    r = quat2mat(quat)
    return r @ np.diag(inertia_diag) @ r.T


def offcenter(mass, vec) -> np.ndarray:
    """Parallel-axis term mass*(|v|^2 I - v v^T)."""
    v = np.asarray(vec, dtype=np.float64)
    return mass * (np.dot(v, v) * np.eye(3) - np.outer(v, v))
