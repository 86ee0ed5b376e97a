"""Built-in meshes (``<mesh builtin="..." params="...">``), made as MuJoCo 3.4.0's
mjs_makeMesh makes them: the vertices, faces and normals a builtin writes into the
mesh's user data (single precision, as MuJoCo stores user data), which then compile
like an inline mesh.

Builtins and their params: ``sphere`` (subdivisions 0-4 of an icosahedron),
``hemisphere`` (resolution 0-10, with its bottom cap), ``supersphere`` (resolution,
e, n), ``supertorus`` (resolution, radius in (0, 1], s, t), ``wedge`` (two
resolutions, two fields of view in degrees, foveal gamma; a spherical patch of
points with tangent frames, as the touch grid's taxels), ``plate`` (two resolutions;
a grid at z = -1, shell inertia) and ``cone`` (edges, top radius; its faces come
from the convex hull). Each check and message is MuJoCo's."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..plugin.touch_grid import bin_edges, _linspace
from .rotation import _normvec_exact

BUILTINS = ("none", "sphere", "hemisphere", "cone", "supertorus", "supersphere", "wedge",
            "plate")

_F32 = np.float32


class BuiltinError(ValueError):
    """A builtin's parameters rejected with MuJoCo's message."""


def make(kind: str, params: list) -> tuple[np.ndarray, Optional[np.ndarray],
                                            Optional[np.ndarray], Optional[str]]:
    """(vertices, faces or None, normals or None, inertia mode forced or None) of a
    builtin mesh, vertices and normals as float32 values (flat), faces int (flat)."""
    n = len(params)
    if kind == "hemisphere":
        _count(n, 1, "Hemisphere mesh type requires 1 parameter")
        res = int(params[0])
        if res < 0:
            raise BuiltinError("Hemisphere resolution cannot be negative")
        if res > 10:
            raise BuiltinError("Hemisphere resolution cannot be greater than 10")
        return (*_hemisphere(res), None, None)
    if kind == "sphere":
        _count(n, 1, "Sphere mesh type requires 1 parameter")
        subdiv = int(params[0])
        if subdiv < 0:
            raise BuiltinError("Sphere subdivision cannot be negative")
        if subdiv > 4:
            raise BuiltinError("Sphere subdivision cannot be greater than 4")
        return (*_sphere(subdiv), None, None)
    if kind == "supersphere":
        _count(n, 3, "Supersphere mesh type requires 3 parameters")
        res = int(params[0])
        if res < 3:
            raise BuiltinError("Supersphere resolution must be greater than 2")
        if params[1] < 0:
            raise BuiltinError("Supersphere 'e' cannot be negative")
        if params[2] < 0:
            raise BuiltinError("Supersphere 'n' cannot be negative")
        return (*_supersphere(res, params[1], params[2]), None, None)
    if kind == "supertorus":
        _count(n, 4, "Supertorus mesh type requires 4 parameters")
        res = int(params[0])
        if res < 3:
            raise BuiltinError("Supertorus resolution must be greater than 3")
        if params[1] <= 0 or params[1] > 1:
            raise BuiltinError("Supertorus radius must be in (0, 1]")
        if params[2] <= 0:
            raise BuiltinError("Supertorus 's' must be greater than 0")
        if params[3] <= 0:
            raise BuiltinError("Supertorus 't' must be greater than 0")
        return (*_supertorus(res, *params[1:4]), None, None)
    if kind == "wedge":
        _count(n, 5, "Wedge builtin mesh types require 5 parameters")
        size = (int(params[0]), int(params[1]))
        fov, gamma = (params[2], params[3]), params[4]
        if fov[0] <= 0 or fov[0] > 180:
            raise BuiltinError("fov[0] must be a float between (0, 180] degrees")
        if fov[1] <= 0 or fov[1] > 90:
            raise BuiltinError("`fov[1]` must be a float between (0, 90] degrees")
        if size[0] <= 0 or size[1] <= 0:
            raise BuiltinError("Horizontal and vertical resolutions must be positive")
        if gamma < 0 or gamma > 1:
            raise BuiltinError("`gamma` must be a nonnegative float between [0, 1]")
        vert, normal = _wedge(size, fov, gamma)
        return vert, None, normal, None
    if kind == "plate":
        _count(n, 2, "Plate builtin mesh type requires 2 parameters")
        size = (int(params[0]), int(params[1]))
        if size[0] <= 0 or size[1] <= 0:
            raise BuiltinError("Horizontal and vertical resolutions must be positive")
        vert, face, normal = _plate(size)
        return vert, face, normal, "shell"
    if kind == "cone":
        _count(n, 2, "Cone mesh type requires 2 parameters")
        return _cone(int(params[0]), params[1]), None, None, None
    raise BuiltinError("Unsupported mesh type")


def _count(n: int, want: int, message: str) -> None:
    if n != want:
        raise BuiltinError(message)


def _hemisphere(res: int):
    """Rows of points from the north pole to the equator, each row's four arcs
    projected onto the unit sphere; a centre vertex closes the bottom cap."""
    pole = (0.0, 0.0, 1.0)
    equator = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0))
    nvert = 1 + 2 * (res + 1) * (res + 2) + 1
    vert = np.zeros(3 * nvert, dtype=_F32)
    vert[0:3] = pole
    v = 1
    for row in range(res + 1):
        for side in range(4):
            factor = (row + 1) / (res + 1)
            a, b = equator[side], equator[(side + 1) % 4]
            start = [pole[i] + factor * (a[i] - pole[i]) for i in range(3)]
            end = [pole[i] + factor * (b[i] - pole[i]) for i in range(3)]
            delta = [(end[i] - start[i]) / (row + 1) for i in range(3)]
            for i in range(row + 1):
                p = [start[j] + i * delta[j] for j in range(3)]
                norm = math.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
                vert[3 * v:3 * v + 3] = (p[0] / norm, p[1] / norm, p[2] / norm)
                v += 1
    face = [0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 1]
    for row in range(res):
        start_curr = 2 * row * (row + 1) + 1
        count_curr = 4 * (row + 1)
        start_next = start_curr + count_curr
        count_next = 4 * (row + 2)
        for side in range(4):
            for i in range(row + 2):
                vc = i + (row + 1) * side
                vn = i + (row + 2) * side
                face += [start_curr + vc % count_curr, start_next + vn % count_next,
                         start_next + (vn + 1) % count_next]
                if i < row + 1:
                    face += [start_curr + vc % count_curr, start_next + (vn + 1) % count_next,
                             start_curr + (vc + 1) % count_curr]
    start, count = 2 * res * (res + 1) + 1, 4 * (res + 1)
    for i in range(count):
        face += [start + i, nvert - 1, start + (i + 1) % count]
    return vert, np.array(face, dtype=np.int64)


def _sphere(subdiv: int):
    """An icosahedron on the unit sphere, each subdivision splitting every triangle in
    four at its edges' midpoints (made in single precision, shared between faces)."""
    phi = _F32((1.0 + math.sqrt(5.0)) / 2.0)
    one, zero = _F32(1.0), _F32(0.0)
    base = [-one, phi, zero, one, phi, zero, -one, -phi, zero, one, -phi, zero,
            zero, -one, phi, zero, one, phi, zero, -one, -phi, zero, one, -phi,
            phi, zero, -one, phi, zero, one, -phi, zero, -one, -phi, zero, one]
    norm = math.sqrt(1.0 + float(phi) * float(phi))
    vert = [_F32(float(v) / norm) for v in base]
    face = [0, 11, 5, 0, 5, 1, 0, 1, 7, 0, 7, 10, 0, 10, 11,
            1, 5, 9, 5, 11, 4, 11, 10, 2, 10, 7, 6, 7, 1, 8,
            3, 9, 4, 3, 4, 2, 3, 2, 6, 3, 6, 8, 3, 8, 9,
            4, 9, 5, 2, 4, 11, 6, 2, 10, 8, 6, 7, 9, 8, 1]
    two = _F32(2.0)
    for _ in range(subdiv):
        cache: dict = {}

        def midpoint(a: int, b: int) -> int:
            key = (min(a, b), max(a, b))
            hit = cache.get(key)
            if hit is not None:
                return hit
            x = (vert[3 * a] + vert[3 * b]) / two
            y = (vert[3 * a + 1] + vert[3 * b + 1]) / two
            z = (vert[3 * a + 2] + vert[3 * b + 2]) / two
            n = np.sqrt(x * x + y * y + z * z)
            index = len(vert) // 3
            vert.extend((x / n, y / n, z / n))
            cache[key] = index
            return index

        new = []
        for j in range(0, len(face), 3):
            v1, v2, v3 = face[j:j + 3]
            m12, m23, m31 = midpoint(v1, v2), midpoint(v2, v3), midpoint(v3, v1)
            new += [v1, m12, m31, v2, m23, m12, v3, m31, m23, m12, m23, m31]
        face = new
    return np.array(vert, dtype=_F32), np.array(face, dtype=np.int64)


def _aux_c(omega: float, m: float) -> float:
    c = math.cos(omega)
    return math.copysign(math.pow(abs(c), m), c)


def _aux_s(omega: float, m: float) -> float:
    s = math.sin(omega)
    return math.copysign(math.pow(abs(s), m), s)


def _supersphere(res: int, e: float, n: float):
    vert = [0.0, 0.0, -1.0]
    for i in range(1, res):
        v = -math.pi / 2 + i * math.pi / res
        for j in range(res):
            u = -math.pi + j * 2 * math.pi / res
            vert += [_aux_c(v, n) * _aux_c(u, e), _aux_c(v, n) * _aux_s(u, e), _aux_s(v, n)]
    vert += [0.0, 0.0, 1.0]
    nvert = (res - 1) * res + 2
    face = []
    for j in range(res):
        face += [0, 1 + (j + 1) % res, 1 + j]
    for i in range(res - 2):
        for j in range(res):
            v1 = 1 + i * res + j
            v2 = 1 + i * res + (j + 1) % res
            v4 = 1 + (i + 1) * res + j
            v3 = 1 + (i + 1) * res + (j + 1) % res
            face += [v1, v2, v4, v2, v3, v4]
    last = 1 + (res - 2) * res
    for j in range(res):
        face += [last + j, last + (j + 1) % res, nvert - 1]
    return np.array(vert, dtype=_F32), np.array(face, dtype=np.int64)


def _supertorus(res: int, radius: float, s: float, t: float):
    vert = np.zeros(3 * res * res, dtype=_F32)
    face = []
    for i in range(res):
        for j in range(res):
            u = 2 * math.pi * i / res
            v = 2 * math.pi * j / res
            k = i * res + j
            vert[3 * k:3 * k + 3] = ((1 + radius * _aux_c(v, s)) * _aux_c(u, t),
                                     (1 + radius * _aux_c(v, s)) * _aux_s(u, t),
                                     radius * _aux_s(v, s))
    for i in range(res):
        for j in range(res):
            i1, j1 = (i + 1) % res, (j + 1) % res
            v1, v2, v3, v4 = i * res + j, i1 * res + j, i1 * res + j1, i * res + j1
            face += [v1, v2, v4, v2, v3, v4]
    return vert, np.array(face, dtype=np.int64)


def _wedge(size, fov, gamma):
    """Points at the centres of the touch grid's bins on the unit sphere (azimuth,
    elevation), each with its tangent frame (normal, azimuth and elevation axes)."""
    x_edges, y_edges = bin_edges(size, fov, gamma)
    n = size[0] * size[1]
    vert = np.zeros(3 * n, dtype=_F32)
    normal = np.zeros(9 * n, dtype=_F32)
    for i in range(size[0]):
        for j in range(size[1]):
            a = 0.5 * (x_edges[i + 1] + x_edges[i])
            e = 0.5 * (y_edges[j + 1] + y_edges[j])
            r = 1.0
            k = i * size[1] + j
            vert[3 * k:3 * k + 3] = (r * math.cos(e) * math.sin(a), r * math.sin(e),
                                     -r * math.cos(e) * math.cos(a))
            ta = [r * math.cos(e) * math.cos(a), 0.0, r * math.cos(e) * math.sin(a)]
            te = [-r * math.sin(e) * math.sin(a), r * math.cos(e), r * math.sin(e) * math.cos(a)]
            _normvec_exact(ta)
            _normvec_exact(te)
            nrm = [te[1] * ta[2] - te[2] * ta[1], te[2] * ta[0] - te[0] * ta[2],
                   te[0] * ta[1] - te[1] * ta[0]]
            normal[9 * k:9 * k + 9] = nrm + ta + te
    return vert, normal


def _plate(size):
    _linspace(-1.0, 1.0, size[0] + 1)  # (MuJoCo makes the edges and does not use them)
    n = size[0] * size[1]
    vert = np.zeros(3 * n, dtype=_F32)
    normal = np.zeros(9 * n, dtype=_F32)
    face = np.zeros(6 * (size[0] - 1) * (size[1] - 1), dtype=np.int64)
    dx, dy = 2.0 / size[0], 2.0 / size[1]
    for i in range(size[0]):
        for j in range(size[1]):
            k = i * size[1] + j
            vert[3 * k:3 * k + 3] = (-1 + (i + 0.5) * dx, -1 + (j + 0.5) * dy, -1.0)
            normal[9 * k] = normal[9 * k + 4] = normal[9 * k + 8] = 1.0
            if i > 0 and j > 0:
                c = (i - 1) * (size[1] - 1) + j - 1
                face[6 * c:6 * c + 6] = ((i - 1) * size[1] + j - 1, i * size[1] + j - 1,
                                         (i - 1) * size[1] + j, i * size[1] + j,
                                         (i - 1) * size[1] + j, i * size[1] + j - 1)
    return vert, face, normal


def _cone(nedge: int, radius: float):
    """The bottom polygon at z = -1 and the top one (radius) at z = 1, or the apex
    (0, 0, 1) for radius <= 0: vertices only, the hull gives the faces."""
    count = 3 * (nedge + (nedge if radius > 0 else 1))
    vert = np.zeros(max(0, count), dtype=_F32)
    for i in range(nedge):
        vert[3 * i:3 * i + 3] = (math.cos(2 * i * math.pi / nedge),
                                 math.sin(2 * i * math.pi / nedge), -1.0)
    if radius > 0:
        for i in range(nedge, 2 * nedge):
            vert[3 * i:3 * i + 3] = (radius * math.cos(2 * i * math.pi / nedge),
                                     radius * math.sin(2 * i * math.pi / nedge), 1.0)
    elif count >= 3 * nedge + 3:
        vert[3 * nedge + 2] = 1.0
    return vert
