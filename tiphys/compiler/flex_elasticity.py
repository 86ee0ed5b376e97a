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


def _metric(basis, mu, la):
    ne = len(basis)
    trE = [basis[e][0] + basis[e][4] + basis[e][8] for e in range(ne)]
    out = []
    for e1 in range(ne):
        for e2 in range(e1, ne):
            trEE = 0.0
            for i in range(3):
                for j in range(3):
                    trEE += basis[e1][3 * i + j] * basis[e2][3 * j + i]
            out.append(mu * trEE + la * trE[e2] * trE[e1])
    return out


def stiffness_3d(x, v, E, nu):
    x0, x1, x2, x3 = (x[k] for k in v)
    vol = np.float64(np.dot(np.cross(x1 - x0, x2 - x0), x3 - x0)) / 6
    mu = E / (2 * (1 + nu)) * abs(vol) / 4 * 4
    la = E * nu / ((1 + nu) * (1 - 2 * nu)) * abs(vol) / 4 * 4
    basis = []
    for e in range(6):
        fl, fr = _FACE3[_EDGE2FACE3[e][0]], _FACE3[_EDGE2FACE3[e][1]]
        nl = np.cross(x[v[fl[1]]] - x[v[fl[0]]], x[v[fl[2]]] - x[v[fl[0]]])
        nr = np.cross(x[v[fr[1]]] - x[v[fr[0]]], x[v[fr[2]]] - x[v[fr[0]]])
        basis.append(((np.outer(nl, nr) + np.outer(nr, nl)) / (36 * 2 * vol * vol)).ravel())
    return _metric(basis, mu, la)


def stiffness_2d(x, v, E, nu, thickness):
    x0, x1, x2 = (x[k] for k in v)
    area = np.float64(np.linalg.norm(np.cross(x1 - x0, x2 - x0))) / 2
    mu = E / (2 * (1 + nu)) * abs(area) / 4 * thickness
    la = E * nu / ((1 + nu) * (1 - 2 * nu)) * abs(area) / 4 * thickness
    basis = []
    for e in range(3):
        fl, fr = _FACE2[_FACE2[e][0]], _FACE2[_FACE2[e][1]]
        el_ = x[v[fl[0]]] - x[v[fl[1]]]
        er = x[v[fr[1]]] - x[v[fr[0]]]
        n = np.cross(er, el_)
        nn = float(np.linalg.norm(n))
        if nn >= 1e-15:
            n = n / nn
        bl, br = np.cross(n, el_), np.cross(er, n)
        basis.append(((np.outer(bl, br) + np.outer(br, bl)) / (8 * area * area)).ravel())
    return _metric(basis, mu, la)


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
