"""The skin MuJoCo 3.4.0 gives a box cable (mjCComposite::MakeSkin2, MakeSkin2Subgrid,
MakeCableBones and MakeCableBonesSubgrid in src/user/user_composite.cc).

The cable's vertices make a grid of ``count[0]`` columns and a few rows across the box
(2 rows, or 3 rows of bones when the skin is subdivided); the skin is that grid twice
(two sides), all vertices at the origin, closed along its border by thin triangles,
and inflated by the box's full height so that the sides part. Each vertex follows the
bones of the cable bodies:

- plain: vertex (ix, iy) of both sides hangs on its own bone with weight 1, the bone
  at +-(box half width) across the body of column ix (the last column at the far end
  of the last body);
- ``subgrid=k``: k vertices are added between neighbouring bone rows and columns, and
  each vertex is a bicubic (Hermite) blend of the 4 x 4 bones around its square, the
  derivatives at the square's corners taken by central differences (one-sided on the
  grid's border). The blend weights are computed here from the bicubic basis and the
  difference stencils, with MuJoCo's arithmetic order (mju_mulMatMat: row by row, terms
  in column order, zero terms skipped), so that exactly the same weights are non-zero.
"""
from __future__ import annotations

import numpy as np

from ..errors import error_at
from .attrs import BOOL, Attrs

# the four corners of a bicubic patch, in the order of its 16 constraints (value,
# x-derivative, y-derivative, cross derivative, each at these corners)
_CORNERS = ((0, 0), (1, 0), (1, 1), (0, 1))


def _mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b summed as mju_mulMatMat sums it (each row: the rows of b scaled by the
    row's entries in order, zero entries skipped)."""
    out = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            if a[i, k]:
                out[i] = out[i] + b[k] * a[i, k]
    return out


def _basis() -> np.ndarray:
    """W with C = W [f; f_x; f_y; f_xy]: the coefficients C (x^i y^j at 4 i + j) of the
    bicubic taking the given values and derivatives at the corners (exact integers)."""
    rows = []
    for order in ((0, 0), (1, 0), (0, 1), (1, 1)):  # f, f_x, f_y, f_xy
        for cx, cy in _CORNERS:
            row = np.zeros(16)
            for i in range(4):
                for j in range(4):
                    if i < order[0] or j < order[1]:
                        continue
                    cf = (i if order[0] else 1) * (j if order[1] else 1)
                    row[4 * i + j] = cf * cx ** (i - order[0]) * cy ** (j - order[1])
            rows.append(row)
    return np.rint(np.linalg.inv(np.array(rows)))


def _stencil(c: int, low: bool, high: bool) -> dict:
    """Difference weights (grid offset -> weight) for a derivative at corner coordinate
    c (0 or 1) of the patch: central, or one-sided at the grid's low/high border."""
    if (c == 0 and low) or (c == 1 and high):
        return {0: -1.0, 1: 1.0}
    return {c - 1: -0.5, c + 1: 0.5}


def _differences(xclass: int, yclass: int) -> np.ndarray:
    """D: the 16 constraints from the 4 x 4 bones around a patch (bone (dx, dy),
    dx, dy in -1..2, at column 4 (dx + 1) + dy + 1). ``xclass``/``yclass``: 0 at the
    low border, 2 at the high border, 1 inside."""
    d = np.zeros((16, 16))

    def col(x, y):
        return 4 * (x + 1) + y + 1

    for r, (cx, cy) in enumerate(_CORNERS):
        sx = _stencil(cx, xclass == 0, xclass == 2)
        sy = _stencil(cy, yclass == 0, yclass == 2)
        d[r, col(cx, cy)] = 1.0
        for x, w in sx.items():
            d[4 + r, col(x, cy)] = w
        for y, w in sy.items():
            d[8 + r, col(cx, y)] = w
        for x, wx in sx.items():
            for y, wy in sy.items():
                d[12 + r, col(x, y)] = wx * wy
    return d


def subgrid_weights(subgrid: int) -> np.ndarray:
    """(3, 3, N, 16) bone weights of the N = (subgrid + 2)^2 points of a patch, per
    border class (x, y)."""
    step = 1.0 / (1 + subgrid)
    xy = []
    for sx in range(subgrid + 2):
        for sy in range(subgrid + 2):
            x, y = sx * step, sy * step
            xy.append([1, y, y * y, y * y * y,
                       x * 1, x * y, x * y * y, x * y * y * y,
                       x * x * 1, x * x * y, x * x * y * y, x * x * y * y * y,
                       x * x * x * 1, x * x * x * y, x * x * x * y * y,
                       x * x * x * y * y * y])
    xy_w = _mul(np.array(xy, dtype=np.float64), _basis())
    return np.array([[_mul(xy_w, _differences(dx, dy)) for dy in range(3)]
                     for dx in range(3)])


def _grid_faces(c0: int, c1: int) -> list:
    """The triangles of a c0 x c1 vertex grid drawn twice (the second side wound the
    other way), then the thin triangles closing its four borders."""
    nn = c0 * c1
    face = []
    for side in range(2):
        o = side * nn
        for ix in range(c0 - 1):
            for iy in range(c1 - 1):
                face += [o + ix * c1 + iy, o + (ix + 1) * c1 + iy + (side == 1),
                         o + (ix + 1) * c1 + iy + (side == 0),
                         o + ix * c1 + iy, o + (ix + (side == 0)) * c1 + iy + 1,
                         o + (ix + (side == 1)) * c1 + iy + 1]
    for ix in range(c0 - 1):  # along x at iy = 0, then at iy = c1 - 1
        a, b = ix * c1, (ix + 1) * c1
        face += [a, nn + b, b, a, nn + a, nn + b]
    for ix in range(c0 - 1):
        a, b = ix * c1 + c1 - 1, (ix + 1) * c1 + c1 - 1
        face += [a, b, nn + b, a, nn + b, nn + a]
    for iy in range(c1 - 1):  # along y at ix = 0, then at ix = c0 - 1
        face += [iy, iy + 1, nn + iy + 1, iy, nn + iy + 1, nn + iy]
    a = (c0 - 1) * c1
    for iy in range(c1 - 1):
        face += [iy + a, nn + iy + 1 + a, iy + 1 + a, iy + a, nn + iy + a, nn + iy + 1 + a]
    return face


def cable_skin(r, size):
    """The SkinData of the box cable read by composite.py's reader ``r`` whose box
    has ``size``: named ``<prefix>Skin``, in the composite's <skin> material, rgba,
    group (and texture coordinates)."""
    from .skin import SkinData
    sk = SkinData(r.skin if r.skin is not None else r.el, r.prefix + "Skin")
    sk.rgba = np.ones(4, dtype=np.float32)
    texcoord, subgrid = False, 0
    if r.skin is not None:
        a = Attrs(r.skin, {})
        sk.material = a.str("material", "")
        sk.rgba = np.asarray(a.floats("rgba", 4, (1, 1, 1, 1)), dtype=np.float32)
        sk.group = a.int("group", 0)
        texcoord = bool(a.keyword("texcoord", BOOL, 0))
        subgrid = a.int("subgrid", 0)
    sk.inflate = np.float32(2 * size[2])
    n0 = r.count[0]
    n1 = 3 if subgrid > 0 else 2  # bone rows across the box
    c0, c1 = n0 + (n0 - 1) * max(subgrid, 0), n1 + (n1 - 1) * max(subgrid, 0)
    nn = c0 * c1
    if texcoord:
        ix, iy = np.meshgrid(np.arange(c0, dtype=np.float32),
                             np.arange(c1, dtype=np.float32), indexing="ij")
        one = np.stack([ix / np.float32(c0 - 1), iy / np.float32(c1 - 1)], -1).reshape(-1)
        sk.texcoord = np.concatenate([one, one]).astype(np.float32)
    sk.vert = np.zeros(3 * 2 * nn, dtype=np.float32)
    sk.face = np.asarray(_grid_faces(c0, c1), dtype=np.int64)
    bindpos = []
    for ix in range(n0):
        for iy in range(n1):
            if ix == 0:
                name = f"{r.prefix}B_first"
            elif ix >= n0 - 2:
                name = f"{r.prefix}B_last"
            else:
                name = f"{r.prefix}B_{ix}"
            sk.bodyname.append(name)
            across = -size[1] if iy == 0 else (size[1] if iy == n1 - 1 else 0.0)
            bindpos += [-2 * size[0] if ix == n0 - 1 else 0.0, across, 0.0]
    sk.bindpos = np.asarray(bindpos, dtype=np.float32)
    sk.bindquat = np.tile(np.array([1, 0, 0, 0], dtype=np.float32), n0 * n1)
    if subgrid <= 0:
        for bone in range(n0 * n1):
            sk.vertid.append(np.array([bone, nn + bone], dtype=np.int64))
            sk.vertweight.append(np.ones(2, dtype=np.float32))
        return sk
    ids = [[] for _ in range(n0 * n1)]
    weights = [[] for _ in range(n0 * n1)]
    table = subgrid_weights(subgrid)
    for ix in range(n0 - 1):  # one bone square at a time
        for iy in range(n1 - 1):
            xclass = 0 if ix == 0 else (2 if ix == n0 - 2 else 1)
            yclass = 0 if iy == 0 else (2 if iy == n1 - 2 else 1)
            bones = [(ix + dx) * n1 + iy + dy for dx in range(-1, 3) for dy in range(-1, 3)]
            # (the last square of a row or column also owns its far vertices)
            for dx in range(1 + subgrid + (ix == n0 - 2)):
                for dy in range(1 + subgrid + (iy == n1 - 2)):
                    vid = (ix * (1 + subgrid) + dx) * c1 + iy * (1 + subgrid) + dy
                    row = table[xclass, yclass, dx * (2 + subgrid) + dy]
                    for k, w in enumerate(row):
                        if w:
                            if not 0 <= bones[k] < n0 * n1:  # (a 2-vertex cable)
                                raise error_at(r.el, "skin subgrid needs a cable of at "
                                                     "least 3 vertices", "count")
                            ids[bones[k]] += [vid, vid + nn]
                            weights[bones[k]] += [w, w]
    sk.vertid = [np.asarray(v, dtype=np.int64) for v in ids]
    sk.vertweight = [np.asarray(w, dtype=np.float32) for w in weights]
    return sk
