"""Ray casting, batched over worlds and rays (MuJoCo 3.4.0's engine_ray.c).

A ray is ``pnt + x vec`` for ``x >= 0``; ``vec`` need not be unit length, and every
distance is in units of ``|vec|`` (``x``), as MuJoCo's. -1 means no intersection.

- Primitives (plane, sphere, capsule, ellipsoid, cylinder, box) as mju_rayGeom: a
  bounding-sphere test first (capsule, cylinder, box), then the analytic roots.
- Meshes as mj_rayMesh: the box of ``geom_size`` around the geom frame first, then
  the mesh's triangles (not its convex hull), nearest hit. MuJoCo walks a BVH of the
  triangles; tiphys builds its own (median splits, built once per model on the host,
  boxes slightly inflated so that no triangle is lost to round-off) and takes the
  nearest triangle hit, which is what MuJoCo's traversal returns.
- SDF geoms as ray_sdf: the box of ``geom_size`` first, then up to 40 steps of sphere
  tracing of the plugin's shape, or of the mesh's octree for an sdf geom without a
  plugin (kernels/sdf.py's oct_eval, on the octree's rows of the ray tables), along
  the unit direction in the geom's frame (the distance is in units of that unit
  direction, as MuJoCo's, whatever ``vec``'s length). In f32 a hit is a step below
  1e-5 instead of 1e-7: rays that pass the surface that close, which MuJoCo (f64)
  marches for 40 steps without a hit, hit there.
- Height fields as mj_rayHfield: the base box, then the top box's ray segment walked
  over the grid cells it crosses (two triangles per cell) and the four side walls.
- A ray against the scene as mj_ray: geoms skipped when on ``bodyexclude``, invisible
  (rgba alpha 0 without a material, or a material with alpha 0), on a static body
  (body_weldid 0) when ``flg_static`` is 0, or in a group the mask leaves out; the
  nearest hit wins, the lower geom id on ties.
- mj_multiRay (many directions from one point, ``cutoff``) with MuJoCo's pruning,
  which can drop hits that mj_ray finds: bodies whose collision geoms' bounding
  sphere the ray misses (the sphere centred at xipos + the box centre, unrotated, as
  MuJoCo), geoms farther than cutoff + rbound, and geoms outside the azimuth /
  elevation range of their box corners seen from the point.

``ray_scene`` is the ray function other kernels call (the rangefinder sensor); its
arrays come from ``ray_args(m, d)``. The host entry points are in tiphys/ray.py.
"""

import numpy as np
import taichi as ti

from . import config
from .math import param_row, quat2mat, quat_z2vec
from .loop_limit import limit_reached
from .sdf import SDF_NATTR, SDF_OCTREE, oct_eval, sdf_distance
from .consts import (EPS, GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD,
                     GEOM_MESH, GEOM_PLANE, GEOM_SDF, GEOM_SPHERE, MINVAL, NGROUP, PI)

ND = ti.types.ndarray()
GROUP_ALL = (1 << NGROUP) - 1  # the mask that keeps every group (MuJoCo's geomgroup NULL)

# geom_int columns: type, body, flags, then per type: mesh (BVH root node, bvh node
# count), hfield (hfield id, nrow, ncol, adr)
GI_TYPE, GI_BODY, GI_FLAGS, GI_A, GI_B, GI_C, GI_D = range(7)
GI_WIDTH = 8
# flags: bits 0-2 the group (clamped to 0..5), then
FLAG_STATIC = 8  # the geom's body is welded to the world (body_weldid 0)
FLAG_MATERIAL = 16  # the geom has a material: its alpha decides, geom_rgba is ignored
FLAG_MAT_HIDDEN = 32  # ... and that material's alpha is 0
BVH_LEAF = 4  # triangles per BVH leaf
BVH_STACK = 48  # traversal stack; build refuses deeper trees


# ---------------------------------------------------------------- primitives

@ti.func
def _ray_map(pos, mat, pnt, vec):
    """The ray in the frame (pos, mat): lpnt = mat' (pnt - pos), lvec = mat' vec."""
    dif = pnt - pos
    lpnt = ti.Vector([mat[0, 0] * dif[0] + mat[1, 0] * dif[1] + mat[2, 0] * dif[2],
                      mat[0, 1] * dif[0] + mat[1, 1] * dif[1] + mat[2, 1] * dif[2],
                      mat[0, 2] * dif[0] + mat[1, 2] * dif[1] + mat[2, 2] * dif[2]])
    lvec = ti.Vector([mat[0, 0] * vec[0] + mat[1, 0] * vec[1] + mat[2, 0] * vec[2],
                      mat[0, 1] * vec[0] + mat[1, 1] * vec[1] + mat[2, 1] * vec[2],
                      mat[0, 2] * vec[0] + mat[1, 2] * vec[1] + mat[2, 2] * vec[2]])
    return lpnt, lvec


@ti.func
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@ti.func
def _ray_quad(a, b, c):
    """Roots x0 <= x1 of a x^2 + 2 b x + c = 0 (both -1 when none or a ~ 0) and the
    smallest non-negative one (-1 if none)."""
    x0 = -1.0
    x1 = -1.0
    x = -1.0
    det = b * b - a * c
    if not (det < 0.0 or a < MINVAL):
        det = ti.sqrt(det)
        x0 = (-b - det) / a
        x1 = (-b + det) / a
        if x0 >= 0.0:
            x = x0
        elif x1 >= 0.0:
            x = x1
    return x, x0, x1


@ti.func
def ray_sphere(pos, dist_sqr, pnt, vec):
    """Nearest x >= 0 with |pnt + x vec - pos|^2 = dist_sqr, -1 if none."""
    dif = pnt - pos
    a = vec[0] * vec[0] + vec[1] * vec[1] + vec[2] * vec[2]
    b = vec[0] * dif[0] + vec[1] * dif[1] + vec[2] * dif[2]
    c = dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2] - dist_sqr
    x, _, _ = _ray_quad(a, b, c)
    return x


@ti.func
def ray_plane(pos, mat, size, pnt, vec):
    """Front face of the plane (z up), inside its rendered rectangle when size > 0."""
    lpnt, lvec = _ray_map(pos, mat, pnt, vec)
    x = -1.0
    if not lvec[2] > -MINVAL:
        sol = -lpnt[2] / lvec[2]
        if sol >= 0.0:
            p0 = lpnt[0] + sol * lvec[0]
            p1 = lpnt[1] + sol * lvec[1]
            if (size[0] <= 0.0 or ti.abs(p0) <= size[0]) and \
                    (size[1] <= 0.0 or ti.abs(p1) <= size[1]):
                x = sol
    return x


@ti.func
def ray_capsule(pos, mat, size, pnt, vec):
    x = -1.0
    ssz = size[0] + size[1]
    if ray_sphere(pos, ssz * ssz, pnt, vec) >= 0.0:
        lpnt, lvec = _ray_map(pos, mat, pnt, vec)
        # round side, between the flat ends
        a = lvec[0] * lvec[0] + lvec[1] * lvec[1]
        b = lvec[0] * lpnt[0] + lvec[1] * lpnt[1]
        c = lpnt[0] * lpnt[0] + lpnt[1] * lpnt[1] - size[0] * size[0]
        sol, _, _ = _ray_quad(a, b, c)
        if sol >= 0.0 and ti.abs(lpnt[2] + sol * lvec[2]) <= size[1]:
            x = sol
        # the two caps: only the outer half of each sphere
        a = lvec[0] * lvec[0] + lvec[1] * lvec[1] + lvec[2] * lvec[2]
        for side in ti.static((1, -1)):
            ldif = ti.Vector([lpnt[0], lpnt[1], lpnt[2] - side * size[1]])
            b = lvec[0] * ldif[0] + lvec[1] * ldif[1] + lvec[2] * ldif[2]
            c = ldif[0] * ldif[0] + ldif[1] * ldif[1] + ldif[2] * ldif[2] - \
                size[0] * size[0]
            _, xa, xb = _ray_quad(a, b, c)
            for k in ti.static(range(2)):
                xk = xa if k == 0 else xb
                zk = lpnt[2] + xk * lvec[2]
                outer = zk >= size[1] if side == 1 else zk <= -size[1]
                if xk >= 0.0 and outer:
                    if x < 0.0 or xk < x:
                        x = xk
    return x


@ti.func
def ray_ellipsoid(pos, mat, size, pnt, vec):
    lpnt, lvec = _ray_map(pos, mat, pnt, vec)
    s = ti.Vector([1.0 / (size[0] * size[0]), 1.0 / (size[1] * size[1]),
                   1.0 / (size[2] * size[2])])
    a = s[0] * lvec[0] * lvec[0] + s[1] * lvec[1] * lvec[1] + s[2] * lvec[2] * lvec[2]
    b = s[0] * lvec[0] * lpnt[0] + s[1] * lvec[1] * lpnt[1] + s[2] * lvec[2] * lpnt[2]
    c = s[0] * lpnt[0] * lpnt[0] + s[1] * lpnt[1] * lpnt[1] + s[2] * lpnt[2] * lpnt[2] - 1.0
    x, _, _ = _ray_quad(a, b, c)
    return x


@ti.func
def ray_cylinder(pos, mat, size, pnt, vec):
    x = -1.0
    ssz = size[0] * size[0] + size[1] * size[1]
    if ray_sphere(pos, ssz, pnt, vec) >= 0.0:
        lpnt, lvec = _ray_map(pos, mat, pnt, vec)
        # flat ends, within the radius
        if ti.abs(lvec[2]) > MINVAL:
            for side in ti.static((-1, 1)):
                sol = (side * size[1] - lpnt[2]) / lvec[2]
                if sol >= 0.0:
                    p0 = lpnt[0] + sol * lvec[0]
                    p1 = lpnt[1] + sol * lvec[1]
                    if p0 * p0 + p1 * p1 <= size[0] * size[0]:
                        if x < 0.0 or sol < x:
                            x = sol
        # round side, between the ends
        a = lvec[0] * lvec[0] + lvec[1] * lvec[1]
        b = lvec[0] * lpnt[0] + lvec[1] * lpnt[1]
        c = lpnt[0] * lpnt[0] + lpnt[1] * lpnt[1] - size[0] * size[0]
        sol, _, _ = _ray_quad(a, b, c)
        if sol >= 0.0 and ti.abs(lpnt[2] + sol * lvec[2]) <= size[1]:
            if x < 0.0 or sol < x:
                x = sol
    return x


@ti.func
def ray_box_all(pos, mat, size, pnt, vec):
    """Nearest hit of the box and every face's hit (all[2 axis + (side + 1) / 2], -1
    for faces missed), as MuJoCo's ray_box."""
    x = -1.0
    hits = ti.Vector([-1.0, -1.0, -1.0, -1.0, -1.0, -1.0])
    ssz = size[0] * size[0] + size[1] * size[1] + size[2] * size[2]
    if ray_sphere(pos, ssz, pnt, vec) >= 0.0:
        lpnt, lvec = _ray_map(pos, mat, pnt, vec)
        for i in ti.static(range(3)):
            j0 = 0 if i != 0 else 1
            j1 = 2 if i != 2 else 1
            if ti.abs(lvec[i]) > MINVAL:
                for side in ti.static((-1, 1)):
                    sol = (side * size[i] - lpnt[i]) / lvec[i]
                    if sol >= 0.0:
                        p0 = lpnt[j0] + sol * lvec[j0]
                        p1 = lpnt[j1] + sol * lvec[j1]
                        if ti.abs(p0) <= size[j0] and ti.abs(p1) <= size[j1]:
                            if x < 0.0 or sol < x:
                                x = sol
                            hits[2 * i + (side + 1) // 2] = sol
    return x, hits


@ti.func
def ray_box(pos, mat, size, pnt, vec):
    x, _ = ray_box_all(pos, mat, size, pnt, vec)
    return x


@ti.func
def ray_primitive(geomtype, pos, mat, size, pnt, vec):
    """mju_rayGeom: plane, sphere, capsule, ellipsoid, cylinder or box (-1 for other
    types; the host rejects them)."""
    x = -1.0
    if geomtype == GEOM_PLANE:
        x = ray_plane(pos, mat, size, pnt, vec)
    elif geomtype == GEOM_SPHERE:
        x = ray_sphere(pos, size[0] * size[0], pnt, vec)
    elif geomtype == GEOM_CAPSULE:
        x = ray_capsule(pos, mat, size, pnt, vec)
    elif geomtype == GEOM_ELLIPSOID:
        x = ray_ellipsoid(pos, mat, size, pnt, vec)
    elif geomtype == GEOM_CYLINDER:
        x = ray_cylinder(pos, mat, size, pnt, vec)
    elif geomtype == GEOM_BOX:
        x = ray_box(pos, mat, size, pnt, vec)
    return x


# ---------------------------------------------------------------- triangles

@ti.func
def _normalize3(v):
    """mju_normalize3: v / |v|, or (1, 0, 0) when |v| < mjMINVAL."""
    norm = ti.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    out = ti.Vector([1.0, 0.0, 0.0])
    if not norm < MINVAL:
        out = v * (1.0 / norm)
    return out


@ti.func
def _normal_basis(lvec):
    """Two unit vectors spanning the plane normal to lvec (MuJoCo's b0, b1)."""
    b0 = ti.Vector([1.0, 1.0, 1.0])
    if ti.abs(lvec[0]) >= ti.abs(lvec[1]) and ti.abs(lvec[0]) >= ti.abs(lvec[2]):
        b0[0] = 0.0
    elif ti.abs(lvec[1]) >= ti.abs(lvec[2]):
        b0[1] = 0.0
    else:
        b0[2] = 0.0
    b1 = b0 + lvec * (-_dot3(lvec, b0) / _dot3(lvec, lvec))
    b1 = _normalize3(b1)
    b0 = _normalize3(b1.cross(lvec))
    return b0, b1


@ti.func
def ray_triangle(v0, v1, v2, lpnt, lvec, b0, b1):
    """Distance along the ray to triangle (v0, v1, v2) (may be negative: behind), -1
    when the ray misses it; b0, b1 from _normal_basis(lvec)."""
    x = -1.0
    d0 = v0 - lpnt
    d1 = v1 - lpnt
    d2 = v2 - lpnt
    p00 = _dot3(b0, d0)
    p01 = _dot3(b1, d0)
    p10 = _dot3(b0, d1)
    p11 = _dot3(b1, d1)
    p20 = _dot3(b0, d2)
    p21 = _dot3(b1, d2)
    outside = (p00 > 0.0 and p10 > 0.0 and p20 > 0.0) or \
        (p00 < 0.0 and p10 < 0.0 and p20 < 0.0) or \
        (p01 > 0.0 and p11 > 0.0 and p21 > 0.0) or \
        (p01 < 0.0 and p11 < 0.0 and p21 < 0.0)
    if not outside:
        a0 = p00 - p20
        a1 = p10 - p20
        a2 = p01 - p21
        a3 = p11 - p21
        det = a0 * a3 - a1 * a2
        if not ti.abs(det) < MINVAL:
            t0 = (a3 * (-p20) - a1 * (-p21)) / det
            t1 = (-a2 * (-p20) + a0 * (-p21)) / det
            if not (t0 < 0.0 or t1 < 0.0 or t0 + t1 > 1.0):
                e0 = v0 - v2
                e1 = v1 - v2
                e2 = lpnt - v2
                nrm = e0.cross(e1)
                denom = _dot3(lvec, nrm)
                if not ti.abs(denom) < MINVAL:
                    x = -_dot3(e2, nrm) / denom
    return x


@ti.func
def _big():
    """A float beyond any distance (mjMAXVAL's role), finite in f32 too."""
    return 1e300 if ti.static(config.precision() == "f64") else 1e30


@ti.func
def _slab(center, half, lpnt, lvec, best):
    """True if the ray meets the box (center, half) in the mesh frame at some
    0 <= t (< best when best >= 0)."""
    tmin = 0.0
    tmax = _big()
    if best >= 0.0:
        tmax = best
    hit = True
    for k in ti.static(range(3)):
        lo = center[k] - half[k]
        hi = center[k] + half[k]
        if ti.abs(lvec[k]) < MINVAL:
            if lpnt[k] < lo or lpnt[k] > hi:
                hit = False
        else:
            inv = 1.0 / lvec[k]
            t1 = (lo - lpnt[k]) * inv
            t2 = (hi - lpnt[k]) * inv
            tmin = ti.max(tmin, ti.min(t1, t2))
            tmax = ti.min(tmax, ti.max(t1, t2))
    return hit and tmin <= tmax


# ---------------------------------------------------------------- meshes, hfields

@ti.func
def ray_mesh(worldid, geomid, pnt, vec, geom_int: ti.template(), geom_size: ti.template(),
             geom_xpos: ti.template(), geom_xmat: ti.template(), mesh_vert: ti.template(),
             tri_vert: ti.template(), bvh_box: ti.template(), bvh_node: ti.template()):
    """mj_rayMesh: the geom_size box, then the nearest triangle hit (BVH walk)."""
    pos = geom_xpos[worldid, geomid]
    mat = geom_xmat[worldid, geomid]
    size = geom_size[param_row(worldid, geom_size), geomid]
    x = -1.0
    if ray_box(pos, mat, size, pnt, vec) >= 0.0:
        lpnt, lvec = _ray_map(pos, mat, pnt, vec)
        b0, b1 = _normal_basis(lvec)
        stack = ti.Vector([0] * BVH_STACK, ti.i32)
        stack[0] = geom_int[geomid][GI_A]
        nstack = 1
        while nstack > 0:
            nstack -= 1
            node = stack[nstack]
            box = bvh_box[node]
            if _slab(ti.Vector([box[0], box[1], box[2]]), ti.Vector([box[3], box[4], box[5]]),
                     lpnt, lvec, x):
                info = bvh_node[node]
                if info[1] < 0:  # leaf: -count triangles from info[0]
                    for t in range(info[0], info[0] - info[1]):
                        tri = tri_vert[t]
                        sol = ray_triangle(mesh_vert[tri[0]], mesh_vert[tri[1]],
                                           mesh_vert[tri[2]], lpnt, lvec, b0, b1)
                        if sol >= 0.0 and (x < 0.0 or sol < x):
                            x = sol
                else:  # children info[0], info[1]
                    stack[nstack] = info[1]
                    stack[nstack + 1] = info[0]
                    nstack += 2
    return x


@ti.func
def ray_hfield(worldid, geomid, pnt, vec, geom_int: ti.template(), geom_xpos: ti.template(),
               geom_xmat: ti.template(), hfield_size: ti.template(),
               hfield_data: ti.template()):
    """mj_rayHfield: base box, the grid triangles under the ray's segment through the
    top box, and the side walls of the top box."""
    gi = geom_int[geomid]
    hid = gi[GI_A]
    nrow = gi[GI_B]
    ncol = gi[GI_C]
    adr = gi[GI_D]
    size = hfield_size[hid]
    pos = geom_xpos[worldid, geomid]
    mat = geom_xmat[worldid, geomid]
    zaxis = ti.Vector([mat[0, 2], mat[1, 2], mat[2, 2]])
    base_size = ti.Vector([size[0], size[1], size[3] * 0.5])
    base_pos = pos - zaxis * (size[3] * 0.5)
    top_size = ti.Vector([size[0], size[1], size[2] * 0.5])
    top_pos = pos + zaxis * (size[2] * 0.5)
    x = ray_box(base_pos, mat, base_size, pnt, vec)
    top_intersect, hits = ray_box_all(top_pos, mat, top_size, pnt, vec)
    if top_intersect >= 0.0:
        lpnt, lvec = _ray_map(pos, mat, pnt, vec)
        b0, b1 = _normal_basis(lvec)
        # the ray's segment through the top box
        seg0 = 0.0
        seg1 = top_intersect
        for i in ti.static(range(6)):
            if hits[i] > seg1:
                seg0 = top_intersect
                seg1 = hits[i]
        dx = (2.0 * size[0]) / (ncol - 1)
        dy = (2.0 * size[1]) / (nrow - 1)
        sx0 = (lpnt[0] + seg0 * lvec[0] + size[0]) / dx
        sx1 = (lpnt[0] + seg1 * lvec[0] + size[0]) / dx
        sy0 = (lpnt[1] + seg0 * lvec[1] + size[1]) / dy
        sy1 = (lpnt[1] + seg1 * lvec[1] + size[1]) / dy
        cmin = ti.max(0, ti.cast(ti.floor(ti.min(sx0, sx1)), ti.i32) - 1)
        cmax = ti.min(ncol - 1, ti.cast(ti.ceil(ti.max(sx0, sx1)), ti.i32) + 1)
        rmin = ti.max(0, ti.cast(ti.floor(ti.min(sy0, sy1)), ti.i32) - 1)
        rmax = ti.min(nrow - 1, ti.cast(ti.ceil(ti.max(sy0, sy1)), ti.i32) + 1)
        for r in range(rmin, rmax):
            for c in range(cmin, cmax):
                va = ti.Vector([dx * c - size[0], dy * r - size[1],
                                hfield_data[adr + r * ncol + c] * size[2]])
                vb = ti.Vector([dx * (c + 1) - size[0], dy * (r + 1) - size[1],
                                hfield_data[adr + (r + 1) * ncol + c + 1] * size[2]])
                vc = ti.Vector([dx * (c + 1) - size[0], dy * r - size[1],
                                hfield_data[adr + r * ncol + c + 1] * size[2]])
                vd = ti.Vector([dx * c - size[0], dy * (r + 1) - size[1],
                                hfield_data[adr + (r + 1) * ncol + c] * size[2]])
                sol = ray_triangle(va, vb, vc, lpnt, lvec, b0, b1)
                if sol >= 0.0 and (x < 0.0 or sol < x):
                    x = sol
                sol = ray_triangle(va, vb, vd, lpnt, lvec, b0, b1)
                if sol >= 0.0 and (x < 0.0 or sol < x):
                    x = sol
        # side walls of the top box: hit when below the grid's edge profile
        for i in ti.static(range(4)):
            if hits[i] >= 0.0 and (hits[i] < x or x < 0.0):
                z = (lpnt[2] + hits[i] * lvec[2]) / size[2]
                y = 0.0
                z0 = 0.0
                z1 = 0.0
                y0 = 0.0
                if ti.static(i < 2):
                    col = ncol - 1 if i == 1 else 0
                    y = (lpnt[1] + hits[i] * lvec[1] + size[1]) / dy
                    y0 = ti.max(0.0, ti.min(ti.cast(nrow - 2, float), ti.floor(y)))
                    iy = ti.cast(y0, ti.i32)  # y0 is integral
                    z0 = hfield_data[adr + iy * ncol + col]
                    z1 = hfield_data[adr + (iy + 1) * ncol + col]
                else:
                    row = (nrow - 1) * ncol if i == 3 else 0
                    y = (lpnt[0] + hits[i] * lvec[0] + size[0]) / dx
                    y0 = ti.max(0.0, ti.min(ti.cast(ncol - 2, float), ti.floor(y)))
                    iy = ti.cast(y0, ti.i32)  # y0 is integral
                    z0 = hfield_data[adr + iy + row]
                    z1 = hfield_data[adr + iy + 1 + row]
                if z < z0 * (y0 + 1.0 - y) + z1 * (y - y0):
                    x = hits[i]
    return x


# ---------------------------------------------------------------- sdf

SDF_MARCH = 40  # ray_sdf's steps
RAY_CUT = -2  # _ray_batch's geomid of a ray whose thread a loop limiter cut short
SDF_HIT = 1e-7  # its kMinDist (f64)
SDF_HIT_F32 = 1e-5  # tiphys' in f32, where 1e-7 is below a coordinate's rounding step
SDF_FAR = 1e6  # a distance past which it gives up


class _OctRows:
    """A mesh octree's node arrays as rows of the ray tables (RayTables: the nodes'
    boxes and coefficients in bvh_box from row ``base``, 3 rows a node; their children
    in bvh_node from row ``base``, 4 rows a node): [node] reads what oct_aabb,
    oct_coeff or oct_child ("aabb", "coeff", "child") would, in Taichi scope."""

    _data_oriented = True  # Taichi passes the object itself through calls
    _is_taichi_function = False  # made in Taichi scope without a warning (see epa.Polytope)

    def __init__(self, rows, base, what: str):
        self.rows, self.base, self.what = rows, base, what

    def __getitem__(self, node):
        sub = ti.lang.impl.subscript
        if self.what == "aabb":
            return sub(None, self.rows, self.base + 3 * node)
        if self.what == "coeff":
            rows = [sub(None, self.rows, self.base + 3 * node + 1 + r) for r in range(2)]
            return ti.Vector([sub(None, rows[k // 6], k % 6) for k in range(8)])
        rows = [sub(None, self.rows, self.base + 4 * node + r) for r in range(4)]
        return ti.Vector([sub(None, rows[k // 2], k % 2) for k in range(8)])


@ti.func
def ray_sdf(pos, mat, size, gi, bvh_box: ti.template(), bvh_node: ti.template(), pnt,
            vec):
    """ray_sdf: sphere tracing of an sdf geom's shape inside the box of its geom_size,
    along the unit direction in the geom's frame (so the distance is in units of that
    unit direction, also when ``vec`` is not one, as in MuJoCo); -1 if missed. A hit is
    a step below 1e-7, as MuJoCo's (1e-5 in f32). The shape (RayTables): a plugin's
    (kernels/sdf.py kind gi[GI_A], attributes in the first five of bvh_box[gi[GI_B]]),
    or the mesh's octree (kind SDF_OCTREE, root node gi[GI_B], rows from gi[GI_C] of
    bvh_box and gi[GI_D] of bvh_node)."""
    x = -1.0
    if ray_box(pos, mat, size, pnt, vec) >= 0.0:
        kind = gi[GI_A]
        attr6 = bvh_box[gi[GI_B] if kind != SDF_OCTREE else 0]
        attr = ti.Vector([attr6[k] for k in ti.static(range(SDF_NATTR))])
        lpnt, lvec = _ray_map(pos, mat, pnt, vec)
        lvec = _normalize3(lvec)
        total = 0.0
        for _ in range(SDF_MARCH):
            p = ti.Vector([lpnt[0] + total * lvec[0], lpnt[1] + total * lvec[1],
                           lpnt[2] + total * lvec[2]])
            dist = 0.0
            if kind == SDF_OCTREE:
                dist, unused_grad = oct_eval(gi[GI_B], p, False,
                                             _OctRows(bvh_node, gi[GI_D], "child"),
                                             _OctRows(bvh_box, gi[GI_C], "aabb"),
                                             _OctRows(bvh_box, gi[GI_C], "coeff"))
            else:
                dist = sdf_distance(kind, attr, p)
            total += dist
            if ti.abs(dist) < ti.static(SDF_HIT if config.precision() == "f64" else
                                        SDF_HIT_F32):
                x = total
                break
            if dist > SDF_FAR:
                break
    return x


# ---------------------------------------------------------------- geoms, scene

@ti.func
def ray_geom_id(worldid, geomid, pnt, vec, geom_int: ti.template(), geom_size: ti.template(),
                geom_xpos: ti.template(), geom_xmat: ti.template(), mesh_vert: ti.template(),
                tri_vert: ti.template(), bvh_box: ti.template(), bvh_node: ti.template(),
                hfield_size: ti.template(), hfield_data: ti.template()):
    """Distance to geom ``geomid`` of world ``worldid``, -1 if missed."""
    gtype = geom_int[geomid][GI_TYPE]
    x = -1.0
    if gtype == GEOM_MESH:
        x = ray_mesh(worldid, geomid, pnt, vec, geom_int, geom_size, geom_xpos, geom_xmat,
                     mesh_vert, tri_vert, bvh_box, bvh_node)
    elif gtype == GEOM_HFIELD:
        x = ray_hfield(worldid, geomid, pnt, vec, geom_int, geom_xpos, geom_xmat, hfield_size,
                       hfield_data)
    elif gtype == GEOM_SDF:
        x = ray_sdf(geom_xpos[worldid, geomid], geom_xmat[worldid, geomid],
                    geom_size[param_row(worldid, geom_size), geomid], geom_int[geomid],
                    bvh_box, bvh_node, pnt, vec)
    else:
        x = ray_primitive(gtype, geom_xpos[worldid, geomid], geom_xmat[worldid, geomid],
                          geom_size[param_row(worldid, geom_size), geomid], pnt, vec)
    return x


@ti.func
def ray_eliminated(worldid, geomid, groupmask, flg_static, bodyexclude,
                   geom_int: ti.template(), geom_rgba: ti.template()):
    """mj_ray's geom filter (ray_eliminate): 1 if the ray ignores this geom."""
    gi = geom_int[geomid]
    flags = gi[GI_FLAGS]
    out = 0
    if gi[GI_TYPE] < 0 or gi[GI_BODY] == bodyexclude:
        out = 1
    elif flags & FLAG_MATERIAL:
        if flags & FLAG_MAT_HIDDEN:
            out = 1
    elif geom_rgba[param_row(worldid, geom_rgba), geomid][3] == 0.0:
        out = 1
    if flg_static == 0 and (flags & FLAG_STATIC):
        out = 1
    if (groupmask >> (flags & 7)) & 1 == 0:
        out = 1
    return out


@ti.func
def ray_scene(worldid, pnt, vec, groupmask, flg_static, bodyexclude,
              geom_int: ti.template(), geom_size: ti.template(), geom_rgba: ti.template(),
              geom_xpos: ti.template(), geom_xmat: ti.template(), mesh_vert: ti.template(),
              tri_vert: ti.template(), bvh_box: ti.template(), bvh_node: ti.template(),
              hfield_size: ti.template(), hfield_data: ti.template()):
    """One ray against every geom of world ``worldid``, as mj_ray: returns
    ``(dist, geomid)``, (-1, -1) when nothing is hit.

    Signature (stable; the rangefinder sensor calls it):
      ``ray_scene(worldid: i32, pnt: 3-vector, vec: 3-vector (nonzero), groupmask: i32
      (bit g keeps geom group g; GROUP_ALL = 63 is MuJoCo's geomgroup=NULL),
      flg_static: i32 (0 drops geoms of bodies welded to the world), bodyexclude: i32
      (-1: none), *ray_args(m, d))``
    where ``ray_args(m, d)`` gives, in this order, the ndarrays geom_int (tiphys
    packed: type, body, flags, mesh/hfield addresses), m.geom_size, m.geom_rgba,
    d.geom_xpos, d.geom_xmat, m.mesh_vert, tri_vert and bvh_box, bvh_node (tiphys's
    mesh triangles and BVH), m.hfield_size, m.hfield_data. Reads geom_xpos and
    geom_xmat of world ``worldid`` (run kinematics first).
    """
    dist = -1.0
    hit = -1
    for geomid in range(geom_int.shape[0]):
        if ray_eliminated(worldid, geomid, groupmask, flg_static, bodyexclude, geom_int,
                          geom_rgba) == 0:
            x = ray_geom_id(worldid, geomid, pnt, vec, geom_int, geom_size, geom_xpos,
                            geom_xmat, mesh_vert, tri_vert, bvh_box, bvh_node, hfield_size,
                            hfield_data)
            if x >= 0.0 and (x < dist or dist < 0.0):
                dist = x
                hit = geomid
    return dist, hit


# ---------------------------------------------------------------- kernels

@ti.kernel
def _ray_batch(
    # model (ray_args order)
    geom_int: ND, geom_size: ND, geom_rgba: ND, geom_xpos: ND, geom_xmat: ND,
    mesh_vert: ND, tri_vert: ND, bvh_box: ND, bvh_node: ND, hfield_size: ND,
    hfield_data: ND,
    # rays: pnts, vecs (nworld or 1, nray, 3); options
    pnts: ND, vecs: ND, groupmask: ti.i32, flg_static: ti.i32, bodyexclude: ti.i32,
    single: ti.i32, probe: ti.i32,
    # out (nworld, nray); geomid RAY_CUT where a loop limiter cut the ray's thread
    # short (kernels/loop_limit.py; a ray the cut thread never reached keeps the value
    # the caller filled in)
    dist: ND, geomid: ND,
):
    for worldid, rayid in ti.ndrange(dist.shape[0], dist.shape[1]):
        wp = param_row(worldid, pnts)
        wv = param_row(worldid, vecs)
        pnt = ti.Vector([pnts[wp, rayid, 0], pnts[wp, rayid, 1], pnts[wp, rayid, 2]])
        vec = ti.Vector([vecs[wv, rayid, 0], vecs[wv, rayid, 1], vecs[wv, rayid, 2]])
        # ray_scene's loop, written out so that one geom (single >= 0: mj_rayMesh /
        # mj_rayHfield, no filter) shares it: one inlined copy of the geometry
        first = 0
        end = geom_int.shape[0]
        if single >= 0:
            first = single
            end = single + 1
        best = -1.0
        hit = -1
        for g in range(first, end):
            if single >= 0 or ray_eliminated(worldid, g, groupmask, flg_static, bodyexclude,
                                             geom_int, geom_rgba) == 0:
                x = ray_geom_id(worldid, g, pnt, vec, geom_int, geom_size, geom_xpos,
                                geom_xmat, mesh_vert, tri_vert, bvh_box, bvh_node,
                                hfield_size, hfield_data)
                if x >= 0.0 and (x < best or best < 0.0):
                    best = x
                    hit = g
        if limit_reached(probe):
            hit = RAY_CUT
        dist[worldid, rayid] = best
        geomid[worldid, rayid] = hit


@ti.kernel
def _ray_geom(pos: ND, mat: ND, size: ND, pnt: ND, vec: ND, geomtype: ND, dist: ND):
    for i in range(dist.shape[0]):
        p = ti.Vector([pos[i, k] for k in ti.static(range(3))])
        r = ti.Matrix([[mat[i, 3 * a + b] for b in ti.static(range(3))]
                       for a in ti.static(range(3))])
        s = ti.Vector([size[i, k] for k in ti.static(range(3))])
        q = ti.Vector([pnt[i, k] for k in ti.static(range(3))])
        v = ti.Vector([vec[i, k] for k in ti.static(range(3))])
        dist[i] = ray_primitive(geomtype[i], p, r, s, q, v)


@ti.func
def _flex_vertex(flexvert_xpos: ti.template(), worldid, v):
    return ti.Vector([flexvert_xpos[worldid, v][k] for k in ti.static(range(3))])


@ti.kernel
def _ray_flex(flexvert_xpos: ND, flex_dim: ND, flex_vertadr: ND, flex_vertnum: ND,
              flex_radius: ND, flex_edgeadr: ND, flex_edgenum: ND, flex_edge: ND,
              flex_elemadr: ND, flex_elemnum: ND, flex_elemdataadr: ND, flex_elem: ND,
              flex_elemlayer: ND, flexid: ti.i32, flex_layer: ti.i32, flg_vert: ti.i32,
              flg_edge: ti.i32, flg_face: ti.i32, flg_skin: ti.i32, pnts: ND, vecs: ND,
              probe: ti.i32, dist: ND, vertid: ND):
    """mju_rayFlex of flex ``flexid`` in every world: the distance to the nearest hit
    of its edges' capsules (drawn edges, or a 2D/3D skin), else its vertices' spheres
    (drawn vertices), and of its faces (drawn faces or skin; of a 3D flex the surface
    layer with the skin, else layer ``flex_layer``), with the flex vertex nearest
    that hit (-1 and -1: missed, or outside the flex's bounding box; vertid RAY_CUT
    where a loop limiter cut the thread short, as in _ray_batch)."""
    for worldid in range(dist.shape[0]):
        pnt = ti.Vector([pnts[worldid, k] for k in ti.static(range(3))])
        vec = ti.Vector([vecs[worldid, k] for k in ti.static(range(3))])
        dim = flex_dim[flexid]
        vadr = flex_vertadr[flexid]
        radius = flex_radius[flexid]
        lo = _flex_vertex(flexvert_xpos, worldid, vadr)
        hi = lo
        for i in range(1, flex_vertnum[flexid]):
            p = _flex_vertex(flexvert_xpos, worldid, vadr + i)
            for j in ti.static(range(3)):
                if lo[j] > p[j]:
                    lo[j] = p[j]
                if hi[j] < p[j]:
                    hi[j] = p[j]
        lo -= radius
        hi += radius
        eye = ti.Matrix.identity(float, 3)
        x = -1.0
        vid = -1
        if ray_box(0.5 * (lo + hi), eye, 0.5 * (hi - lo), pnt, vec) >= 0.0:
            b0, b1 = _normal_basis(vec)
            skin = dim > 1 and flg_skin != 0
            if flg_edge != 0 or skin:
                for e in range(flex_edgeadr[flexid], flex_edgeadr[flexid] + flex_edgenum[flexid]):
                    i1 = flex_edge[e][0]
                    i2 = flex_edge[e][1]
                    v1 = _flex_vertex(flexvert_xpos, worldid, vadr + i1)
                    v2 = _flex_vertex(flexvert_xpos, worldid, vadr + i2)
                    dif = v2 - v1
                    length = ti.sqrt(dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2])
                    if not length < MINVAL:
                        dif = dif * (1.0 / length)
                    else:
                        dif = ti.Vector([1.0, 0.0, 0.0])
                    mat = quat2mat(quat_z2vec(dif))
                    size = ti.Vector([radius, 0.5 * length, 0.0])
                    sol = ray_capsule(0.5 * (v1 + v2), mat, size, pnt, vec)
                    if sol >= 0.0 and (x < 0.0 or sol < x):
                        x = sol
                        hit = pnt + vec * sol
                        if (v1 - hit).norm() < (v2 - hit).norm():
                            vid = i1
                        else:
                            vid = i2
            elif flg_vert != 0:
                for v in range(flex_vertnum[flexid]):
                    sol = ray_sphere(_flex_vertex(flexvert_xpos, worldid, vadr + v),
                                     radius * radius, pnt, vec)
                    if sol >= 0.0 and (x < 0.0 or sol < x):
                        x = sol
                        vid = v
            if dim > 1 and (flg_face != 0 or flg_skin != 0):
                for e in range(flex_elemnum[flexid]):
                    layer = flex_elemlayer[flex_elemadr[flexid] + e]
                    hidden = dim == 3 and ((flg_skin != 0 and layer > 0) or
                                           (flg_skin == 0 and layer != flex_layer))
                    if not hidden:
                        data = flex_elemdataadr[flexid] + e * (dim + 1)
                        ntri = 1 if dim == 2 else 4
                        for t in range(ntri):
                            # corners (0 1 2), (0 1 3), (0 2 3), (1 2 3) of the element
                            c0 = 0 if t < 3 else 1
                            c1 = 1 if t < 2 else 2
                            c2 = 2 if t == 0 else 3
                            e0 = flex_elem[data + c0]
                            e1 = flex_elem[data + c1]
                            e2 = flex_elem[data + c2]
                            p0 = _flex_vertex(flexvert_xpos, worldid, vadr + e0)
                            p1 = _flex_vertex(flexvert_xpos, worldid, vadr + e1)
                            p2 = _flex_vertex(flexvert_xpos, worldid, vadr + e2)
                            sol = ray_triangle(p0, p1, p2, pnt, vec, b0, b1)
                            if sol >= 0.0 and (x < 0.0 or sol < x):
                                x = sol
                                hit = pnt + vec * sol
                                d0 = (p0 - hit).norm()
                                d1 = (p1 - hit).norm()
                                d2 = (p2 - hit).norm()
                                if d0 <= d1 and d0 <= d2:
                                    vid = e0
                                elif d1 <= d2:
                                    vid = e1
                                else:
                                    vid = e2
        if limit_reached(probe):
            vid = RAY_CUT
        dist[worldid] = x
        vertid[worldid] = vid


@ti.func
def _longitude(v):
    return ti.atan2(v[1], v[0])


@ti.func
def _latitude(v):
    return ti.atan2(ti.sqrt(v[0] * v[0] + v[1] * v[1]), v[2])


@ti.kernel
def _multi_ray(
    # model (ray_args order)
    geom_int: ND, geom_size: ND, geom_rgba: ND, geom_xpos: ND, geom_xmat: ND,
    mesh_vert: ND, tri_vert: ND, bvh_box: ND, bvh_node: ND, hfield_size: ND,
    hfield_data: ND,
    # bodies: geoms, root box of the collision geoms (center, half; half[0] < 0: none)
    body_geomadr: ND, body_geomnum: ND, body_bvh: ND, geom_aabb: ND, geom_rbound: ND,
    xipos: ND,
    # rays: pnts (nworld or 1, 3), vecs (nworld or 1, nray, 3); options
    pnts: ND, vecs: ND, groupmask: ti.i32, flg_static: ti.i32, bodyexclude: ti.i32,
    cutoff: float,
    # scratch (nworld, ngeom): elimination flag and bounding angles
    geom_elim: ND, geom_ba: ND,
    # out (nworld, nray)
    dist: ND, geomid: ND,
):
    nworld = dist.shape[0]
    nbody = body_geomnum.shape[0]
    # mju_multiRayPrepare
    for worldid, geomid in ti.ndrange(nworld, geom_int.shape[0]):
        wp = param_row(worldid, pnts)
        pnt = ti.Vector([pnts[wp, 0], pnts[wp, 1], pnts[wp, 2]])
        elim = ray_eliminated(worldid, geomid, groupmask, flg_static, bodyexclude, geom_int,
                              geom_rgba)
        ba = ti.Vector([0.0, 0.0, 0.0, 0.0])
        bodyid = geom_int[geomid][GI_BODY]
        if elim == 0 and bodyid >= 0 and body_bvh[bodyid][3] >= 0.0:
            xpos = geom_xpos[worldid, geomid]
            xmat = geom_xmat[worldid, geomid]
            aabb = geom_aabb[geomid]
            if (xpos - pnt).norm() > cutoff + geom_rbound[param_row(worldid, geom_rbound),
                                                          geomid]:
                elim = 1
            else:
                # the point inside the geom's box: every direction
                local = xmat.transpose() @ (pnt - xpos) - ti.Vector([aabb[0], aabb[1],
                                                                     aabb[2]])
                inside = True
                for k in ti.static(range(3)):
                    if ti.abs(local[k]) > aabb[3 + k]:
                        inside = False
                if inside:
                    ba = ti.Vector([-PI, 0.0, PI, PI])
                else:
                    big = _big()
                    ba = ti.Vector([big, big, -big, -big])
                    for v in ti.static(range(8)):
                        vert = ti.Vector([
                            aabb[0] + aabb[3] if v & 1 else aabb[0] - aabb[3],
                            aabb[1] + aabb[4] if v & 2 else aabb[1] - aabb[4],
                            aabb[2] + aabb[5] if v & 4 else aabb[2] - aabb[5]])
                        box = xmat @ vert + xpos
                        rel = box - pnt
                        azimuth = _longitude(rel)
                        elevation = _latitude(rel)
                        ba[0] = ti.min(ba[0], azimuth)
                        ba[1] = ti.min(ba[1], elevation)
                        ba[2] = ti.max(ba[2], azimuth)
                        ba[3] = ti.max(ba[3], elevation)
                    if ba[2] - ba[0] > PI:
                        ba = ti.Vector([-PI, 0.0, PI, PI])
        geom_elim[worldid, geomid] = elim
        geom_ba[worldid, geomid] = ba
    # mju_singleRay for every ray
    for worldid, rayid in ti.ndrange(nworld, dist.shape[1]):
        wp = param_row(worldid, pnts)
        wv = param_row(worldid, vecs)
        pnt = ti.Vector([pnts[wp, 0], pnts[wp, 1], pnts[wp, 2]])
        vec = ti.Vector([vecs[wv, rayid, 0], vecs[wv, rayid, 1], vecs[wv, rayid, 2]])
        azimuth = _longitude(vec)
        elevation = _latitude(vec)
        best = -1.0
        hit = -1
        for bodyid in range(nbody):
            bvh = body_bvh[bodyid]
            has_bvh = bvh[3] >= 0.0
            skip = False
            if has_bvh:
                center = ti.Vector([bvh[0], bvh[1], bvh[2]]) + xipos[worldid, bodyid]
                ssz = bvh[3] * bvh[3] + bvh[4] * bvh[4] + bvh[5] * bvh[5]
                if ray_sphere(center, ssz, pnt, vec) < 0.0:
                    skip = True
            if not skip:
                for k in range(body_geomnum[bodyid]):
                    g = body_geomadr[bodyid] + k
                    if geom_elim[worldid, g] == 0:
                        ba = geom_ba[worldid, g]
                        if not has_bvh or not (azimuth < ba[0] or elevation < ba[1] or
                                               azimuth > ba[2] or elevation > ba[3]):
                            x = ray_geom_id(worldid, g, pnt, vec, geom_int, geom_size,
                                            geom_xpos, geom_xmat, mesh_vert, tri_vert,
                                            bvh_box, bvh_node, hfield_size, hfield_data)
                            if x >= 0.0 and (x < best or best < 0.0):
                                best = x
                                hit = g
        dist[worldid, rayid] = best
        geomid[worldid, rayid] = hit


# ---------------------------------------------------------------- host-side tables

def _quat_rotate(q, v):
    """Rotate the rows of v (n, 3) by the unit quaternion q (4,)."""
    u = np.asarray(q[1:], dtype=np.float64)
    t = 2.0 * np.cross(u, v)
    return v + q[0] * t + np.cross(u, t)


def _build_bvh(verts: np.ndarray, faces: np.ndarray, first_node: int, first_tri: int):
    """A BVH over one mesh's triangles: median splits of the centroids along the
    longest box axis, BVH_LEAF triangles per leaf. Returns (boxes (n, 6): center,
    half-size, inflated; nodes (n, 2): children, or (first triangle, -count); face
    order)."""
    tris = verts[faces]  # (nface, 3, 3)
    lo_t = tris.min(axis=1)
    hi_t = tris.max(axis=1)
    cent = tris.mean(axis=1)
    boxes, nodes, order = [], [], []
    depth_max = [0]

    def build(idx, depth):
        depth_max[0] = max(depth_max[0], depth)
        node = len(boxes)
        lo = lo_t[idx].min(axis=0)
        hi = hi_t[idx].max(axis=0)
        # inflate: a triangle on the box boundary must not be lost to round-off
        pad = 1e-6 * max(float(np.max(hi - lo)), 1e-9) + 1e-9
        boxes.append(np.r_[(lo + hi) / 2, (hi - lo) / 2 + pad])
        nodes.append([0, 0])
        if len(idx) <= BVH_LEAF:
            nodes[node] = [first_tri + len(order), -len(idx)]
            order.extend(idx.tolist())
            return node
        axis = int(np.argmax(hi - lo))
        half = len(idx) // 2
        part = idx[np.argpartition(cent[idx, axis], half)]
        left = build(part[:half], depth + 1)
        right = build(part[half:], depth + 1)
        nodes[node] = [first_node + left, first_node + right]
        return node

    build(np.arange(len(faces)), 0)
    if depth_max[0] + 2 > BVH_STACK:
        raise NotImplementedError(f"ray casting: mesh BVH depth {depth_max[0]}")
    return np.array(boxes), np.array(nodes, dtype=np.int32), np.array(order, dtype=np.int64)


def _int_vec_array(values: np.ndarray, width: int):
    values = np.asarray(values, dtype=np.int32).reshape(-1, width)
    if len(values) == 0:
        values = np.zeros((1, width), np.int32)
    arr = ti.Vector.ndarray(width, ti.i32, shape=(len(values),))
    arr.from_numpy(values)
    return arr


def _float_vec_array(values: np.ndarray, width: int, dtype):
    values = np.asarray(values, dtype=np.float64).reshape(-1, width)
    if len(values) == 0:
        values = np.zeros((1, width))
    arr = ti.Vector.ndarray(width, dtype, shape=(len(values),))
    arr.from_numpy(values.astype(np.float64 if dtype == ti.f64 else np.float32))
    return arr


class RayTables:
    """Per-model arrays the ray functions read besides the Model's own: geom_int,
    the mesh triangles (global vertex ids) in BVH order, the BVH boxes and nodes, and
    for mj_multiRay the root box of each body's collision geoms (MuJoCo's body BVH
    root, in the body's inertial frame)."""

    def __init__(self, m):
        a = m.arrays
        ngeom = m.ngeom
        gtype = np.asarray(a.geom_type, dtype=np.int64)[:ngeom]
        bodyid = np.asarray(a.geom_bodyid)[:ngeom]
        dataid = np.asarray(a.geom_dataid)[:ngeom]
        matid = np.asarray(a.geom_matid)[:ngeom]
        group = np.clip(np.asarray(a.geom_group)[:ngeom], 0, NGROUP - 1)
        weld = np.asarray(a.body_weldid)[:m.nbody]
        mat_rgba = np.asarray(a.mat_rgba).reshape(-1, 4)
        flags = group.astype(np.int64)
        flags |= np.where(weld[bodyid] == 0, FLAG_STATIC, 0)
        flags |= np.where(matid >= 0, FLAG_MATERIAL, 0)
        hidden = np.zeros(ngeom, bool)
        has_mat = matid >= 0
        hidden[has_mat] = mat_rgba[matid[has_mat], 3] == 0
        flags |= np.where(hidden, FLAG_MAT_HIDDEN, 0)
        gi = np.zeros((max(ngeom, 1), GI_WIDTH), np.int64)
        gi[:, GI_TYPE] = -1
        gi[:ngeom, GI_TYPE] = gtype
        gi[:ngeom, GI_BODY] = bodyid
        gi[:ngeom, GI_FLAGS] = flags
        # meshes: one BVH per mesh, shared by its geoms
        fdtype = m.geom_size.dtype
        if hasattr(fdtype, "dtype"):
            fdtype = fdtype.dtype
        boxes, nodes, tris, roots = [np.zeros((0, 6))], [np.zeros((0, 2), np.int32)], \
            [np.zeros((0, 3), np.int64)], {}
        nnode = ntri = 0
        mesh_vert = np.asarray(a.mesh_vert, dtype=np.float64).reshape(-1, 3)
        mesh_face = np.asarray(a.mesh_face, dtype=np.int64).reshape(-1, 3)
        for meshid in sorted(set(dataid[gtype == GEOM_MESH].tolist())):
            vadr = int(a.mesh_vertadr[meshid])
            vnum = int(a.mesh_vertnum[meshid])
            fadr = int(a.mesh_faceadr[meshid])
            fnum = int(a.mesh_facenum[meshid])
            faces = mesh_face[fadr:fadr + fnum]
            if fnum == 0:
                raise NotImplementedError(f"ray casting: mesh {meshid} has no faces")
            b, n, order = _build_bvh(mesh_vert[vadr:vadr + vnum], faces, nnode, ntri)
            roots[meshid] = nnode
            boxes.append(b)
            nodes.append(n)
            tris.append(faces[order] + vadr)
            nnode += len(b)
            ntri += len(order)
        for g in np.nonzero(gtype == GEOM_MESH)[0]:
            gi[g, GI_A] = roots[int(dataid[g])]
        # sdf geoms: the plugin shape's kind, and its attributes in a row of bvh_box
        sdf_geoms = {g: v for plugin in getattr(m, "plugins", ())
                     for g, v in getattr(plugin, "sdf_geoms", {}).items()}
        octree_sdf = []
        for g in np.nonzero(gtype == GEOM_SDF)[0]:
            if int(g) not in sdf_geoms:
                octree_sdf.append(int(g))
                continue
            kind, values = sdf_geoms[int(g)]
            gi[g, GI_A] = kind
            gi[g, GI_B] = nnode
            boxes.append(np.r_[values, 0.0].reshape(1, 6))
            nnode += 1
        # sdf geoms without a plugin: every mesh octree's nodes as rows (_OctRows)
        if octree_sdf:
            noct = int(a.sizes.get("noct", 0))
            aabb = np.asarray(a.oct_aabb, dtype=np.float64).reshape(-1, 6)[:noct]
            coeff = np.asarray(a.oct_coeff, dtype=np.float64).reshape(-1, 8)[:noct]
            rows = np.zeros((noct, 3, 6))
            rows[:, 0] = aabb
            rows[:, 1] = coeff[:, :6]
            rows[:, 2, :2] = coeff[:, 6:]
            box_base = nnode
            boxes.append(rows.reshape(-1, 6))
            nnode += 3 * noct
            node_base = sum(len(n) for n in nodes)
            nodes.append(np.asarray(a.oct_child, dtype=np.int32).reshape(-1, 8)[:noct]
                         .reshape(-1, 2))
            octadr = np.asarray(a.mesh_octadr).reshape(-1)
            for g in octree_sdf:
                gi[g, GI_A] = SDF_OCTREE
                gi[g, GI_B] = int(octadr[dataid[g]])
                gi[g, GI_C] = box_base
                gi[g, GI_D] = node_base
        for g in np.nonzero(gtype == GEOM_HFIELD)[0]:
            hid = int(dataid[g])
            gi[g, GI_A] = hid
            gi[g, GI_B] = int(a.hfield_nrow[hid])
            gi[g, GI_C] = int(a.hfield_ncol[hid])
            gi[g, GI_D] = int(a.hfield_adr[hid])
        self.geom_int = _int_vec_array(gi, GI_WIDTH)
        self.tri_vert = _int_vec_array(np.concatenate(tris), 3)
        self.bvh_box = _float_vec_array(np.concatenate(boxes), 6, fdtype)
        self.bvh_node = _int_vec_array(np.concatenate(nodes), 2)
        self.ntri = ntri
        self.nnode = nnode  # (BVH nodes, one row per plugin sdf geom, octree rows)
        self.body_bvh = _float_vec_array(body_collision_boxes(m), 6, fdtype)


def body_collision_boxes(m) -> np.ndarray:
    """(nbody, 6): center and half-size of the box around each body's collision geoms
    (contype or conaffinity nonzero) in the body's inertial frame, as MuJoCo's body
    BVH root (bvh_aabb[body_bvhadr]); half-size -1 for bodies without one. Where
    geom_pos, geom_quat, body_ipos or body_iquat are given per world (tiphys.params),
    the box holds every world's."""
    a = m.arrays
    out = np.full((max(m.nbody, 1), 6), -1.0)
    out[:, :3] = 0.0
    geom_aabb = np.asarray(a.geom_aabb).reshape(-1, 6)
    sets = {name: m.param(name) for name in ("geom_pos", "geom_quat", "body_ipos",
                                             "body_iquat")}
    nset = max(len(v) for v in sets.values())
    corners = np.array([[v & 1, (v >> 1) & 1, (v >> 2) & 1] for v in range(8)], bool)
    for b in range(m.nbody):
        adr, num = int(a.body_geomadr[b]), int(a.body_geomnum[b])
        geoms = [g for g in range(adr, adr + num)
                 if a.geom_contype[g] or a.geom_conaffinity[g]] if num > 0 else []
        if not geoms:
            continue
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for k in range(nset):
            geom_pos, geom_quat, body_ipos, body_iquat = (
                v[k % len(v)] for v in sets.values())
            iq = body_iquat[b]
            qinv = np.array([iq[0], -iq[1], -iq[2], -iq[3]])
            for g in geoms:
                box = geom_aabb[g]
                verts = np.where(corners, box[:3] + box[3:], box[:3] - box[3:])
                verts = _quat_rotate(geom_quat[g], verts) + (geom_pos[g] - body_ipos[b])
                verts = _quat_rotate(qinv, verts)
                lo = np.minimum(lo, verts.min(axis=0))
                hi = np.maximum(hi, verts.max(axis=0))
        flat = np.abs(lo - hi) < EPS  # MuJoCo inflates flat boxes
        lo[flat] -= EPS
        hi[flat] += EPS
        out[b] = np.r_[(hi + lo) / 2, (hi - lo) / 2]
    return out


def ray_tables(m) -> RayTables:
    """The model's RayTables, built on first use and kept on the model."""
    tables = m.plans.ray_tables
    if tables is None:
        tables = m.plans.ray_tables = RayTables(m)
    return tables


def ray_args(m, d) -> tuple:
    """The arrays ``ray_scene`` (and ray_geom_id) take after its scalar arguments, in
    order: geom_int, geom_size, geom_rgba, geom_xpos, geom_xmat, mesh_vert, tri_vert,
    bvh_box, bvh_node, hfield_size, hfield_data."""
    t = ray_tables(m)
    return (t.geom_int, m.geom_size, m.geom_rgba, d.geom_xpos, d.geom_xmat, m.mesh_vert,
            t.tri_vert, t.bvh_box, t.bvh_node, m.hfield_size, m.hfield_data)
