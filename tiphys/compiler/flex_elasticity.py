"""Flex elasticity at compile time (MuJoCo 3.4.0, user_mesh.cc): the stiffness of
triangles (2D stretching) and tetrahedra (3D) as metric tensors of edge-length
changes, the bending stiffness of the flap (two triangles) around each edge, and the
linear-elasticity matrix of trilinear/quadratic node grids. Written anew from the
formulas; the operations follow MuJoCo's order so that results round alike."""
from __future__ import annotations

import math

import numpy as np

# -- elasticity (user_mesh.cc's formulas) ---------------------------------------------

_FACE3 = ((2, 1, 0), (0, 1, 3), (1, 2, 3), (2, 0, 3))
_EDGE2FACE3 = ((2, 3), (1, 3), (2, 1), (1, 0), (0, 2), (0, 3))
_FACE2 = ((1, 2), (2, 0), (0, 1))


def _cross(a, b):
    """Row-wise cross products of (n, 3) arrays (np.cross is slow on small ones)."""
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def _metric(basis, mu, la):
    """MetricTensor for every element at once: ``basis`` (n, nedge, 3, 3) symmetric
    edge bases; the upper triangle of mu tr(B1 B2) + la tr(B1) tr(B2), row by row."""
    ne = basis.shape[1]
    trE = basis[:, :, 0, 0] + basis[:, :, 1, 1] + basis[:, :, 2, 2]
    out = []
    for e1 in range(ne):
        for e2 in range(e1, ne):
            # tr(B1 B2) = sum_ij B1[i, j] B2[j, i]
            trEE = (basis[:, e1] * basis[:, e2].transpose(0, 2, 1)).sum(axis=(1, 2))
            out.append(mu * trEE + la * trE[:, e2] * trE[:, e1])
    return np.stack(out, axis=1)


def _sym_outer(a, b, scale):
    return (a[:, :, None] * b[:, None, :] + b[:, :, None] * a[:, None, :]) / scale[:, None, None]


def stiffness_3d(x, elems, E, nu):
    """(n, 21) stiffness of the tetrahedra ``elems`` (n, 4) with vertices ``x``."""
    X = x[np.asarray(elems, dtype=np.int64)]
    vol = (_cross(X[:, 1] - X[:, 0], X[:, 2] - X[:, 0]) * (X[:, 3] - X[:, 0])).sum(1) / 6
    mu = E / (2 * (1 + nu)) * np.abs(vol) / 4 * 4
    la = E * nu / ((1 + nu) * (1 - 2 * nu)) * np.abs(vol) / 4 * 4
    basis = []
    for e in range(6):
        fl, fr = _FACE3[_EDGE2FACE3[e][0]], _FACE3[_EDGE2FACE3[e][1]]
        nl = _cross(X[:, fl[1]] - X[:, fl[0]], X[:, fl[2]] - X[:, fl[0]])
        nr = _cross(X[:, fr[1]] - X[:, fr[0]], X[:, fr[2]] - X[:, fr[0]])
        basis.append(_sym_outer(nl, nr, 36 * 2 * vol * vol))
    return _metric(np.stack(basis, axis=1), mu, la)


def stiffness_2d(x, elems, E, nu, thickness):
    """(n, 6) stretching stiffness of the triangles ``elems`` (n, 3)."""
    X = x[np.asarray(elems, dtype=np.int64)]
    area = np.sqrt((_cross(X[:, 1] - X[:, 0], X[:, 2] - X[:, 0]) ** 2).sum(1)) / 2
    mu = E / (2 * (1 + nu)) * np.abs(area) / 4 * thickness
    la = E * nu / ((1 + nu) * (1 - 2 * nu)) * np.abs(area) / 4 * thickness
    basis = []
    for e in range(3):
        fl, fr = _FACE2[_FACE2[e][0]], _FACE2[_FACE2[e][1]]
        el_ = X[:, fl[0]] - X[:, fl[1]]
        er = X[:, fr[1]] - X[:, fr[0]]
        n = _cross(er, el_)
        nn = np.sqrt((n * n).sum(1))
        n = np.where((nn >= 1e-15)[:, None], n / np.where(nn >= 1e-15, nn, 1.0)[:, None], n)
        basis.append(_sym_outer(_cross(n, el_), _cross(er, n), 8 * area * area))
    return _metric(np.stack(basis, axis=1), mu, la)


def _cot(x, v0, v1, v2):
    e1, e2 = x[v1] - x[v0], x[v2] - x[v0]
    n = np.cross(e1, e2)
    return np.float64(np.dot(e1, e2)) / np.sqrt(np.dot(n, n))  # (IEEE: inf on 0)


def _area(x, v):
    return float(np.linalg.norm(np.cross(x[v[1]] - x[v[0]], x[v[2]] - x[v[0]]))) / 2


def bending(out, x, v, mu, thickness):
    if v[3] == -1:
        return
    with np.errstate(all="ignore"):  # degenerate flaps: inf/nan as MuJoCo's
        _bending_flap(out, x, v, mu, thickness)


def _bending_flap(out, x, v, mu, thickness):
    a01, a02 = _cot(x, v[0], v[1], v[2]), _cot(x, v[0], v[3], v[1])
    a03, a04 = _cot(x, v[1], v[2], v[0]), _cot(x, v[1], v[0], v[3])
    c = (a03 + a04, a01 + a02, -(a01 + a03), -(a02 + a04))
    volume = np.float64(_area(x, v) + _area(x, (v[1], v[0], v[3])))
    stiff = 3 * mu * thickness ** 3 / (24 * volume)
    v0, v1, v2, v3 = (x[k] for k in v)
    e0, e1, e2, e3, e4 = v1 - v0, v2 - v0, v3 - v0, v2 - v1, v3 - v1
    t0 = -(a03 * e1 + a01 * e3)
    t1 = -(a04 * e2 + a02 * e4)
    sqr = np.float64(np.dot(e0, e0))
    cos_theta = -np.float64(np.dot(t0, t1)) / sqr
    for i in range(4):
        for j in range(4):
            out[4 * i + j] += c[i] * c[j] * cos_theta * stiff
    n = np.cross(e0, e1)
    out[16] = np.dot(n, e2) * (a01 - a03) * (a04 - a02) * stiff / (sqr * np.sqrt(sqr))


def _gauss(n):
    p0, d = 0.5, 0.5
    if n == 2:
        return [-d / math.sqrt(3) + p0, d / math.sqrt(3) + p0], [d, d]
    return ([p0, -d / math.sqrt(3.0 / 5.0) + p0, d / math.sqrt(3.0 / 5.0) + p0],
            [8.0 / 9.0 * d, 5.0 / 9.0 * d, 5.0 / 9.0 * d])


def _phi(s, i, order):
    if order == 1:
        return 1 - s if i == 0 else s
    return (2 * s * s - 3 * s + 1, 4 * (s - s * s), 2 * s * s - s)[i]


def _dphi(s, i, order):
    if order == 1:
        return -1.0 if i == 0 else 1.0
    return (4 * s - 3, 4 * (1 - 2 * s), 4 * s - 1)[i]


def linear_stiffness(nodes, E, nu, order, size):
    """Linear elasticity on the node grid (trilinear/quadratic flexcomps): the
    (3n x 3n) matrix, stored from the start of the flex's stiffness block."""
    nb = order + 1
    n = nb ** 3
    ndof = 3 * n
    K = np.zeros(size)
    pts, w = _gauss(nb)
    d = nodes[n - 1] - nodes[0]
    detJ = d[0] * d[1] * d[2]
    invJ = 1.0 / d
    la = E * nu / (1 + nu) / (1 - 2 * nu)
    mu = E / (2 * (1 + nu))
    for ps in range(nb):
        for pt in range(nb):
            for pu in range(nb):
                s, t, u = pts[ps], pts[pt], pts[pu]
                dvol = w[ps] * w[pt] * w[pu] * detJ
                F = []
                for bx in range(nb):
                    for by in range(nb):
                        for bz in range(nb):
                            F.append((_dphi(s, bx, order) * _phi(t, by, order) * _phi(u, bz, order),
                                      _phi(s, bx, order) * _dphi(t, by, order) * _phi(u, bz, order),
                                      _phi(s, bx, order) * _phi(t, by, order) * _dphi(u, bz, order)))
                G = np.array(F) * invJ  # gradients in world units, per basis function
                # du[k] = G[i] in row k, dv[l] = G[j] in row l: trace terms in closed form
                for i in range(n):
                    for j in range(n):
                        gh = float(G[i] @ G[j])
                        for k in range(3):
                            for l_ in range(3):
                                # tr(du) tr(dv) and tr(sym(du) sym(dv)) for du = row k
                                # G[i], dv = row l G[j]
                                ss = 0.5 * (G[i][l_] * G[j][k] + (gh if k == l_ else 0.0))
                                K[ndof * (3 * i + k) + 3 * j + l_] -= \
                                    la * G[i][k] * G[j][l_] * dvol + mu * ss * dvol
    return K
