"""General convex narrowphase (MuJoCo's mjc_Convex, mjc_PlaneConvex) and geom distances.

mjc_Convex serves every convex pair without an analytic detector. It is MuJoCo 3.4.0's
native ccd (engine_collision_gjk.c, the default unless the ``nativeccd`` disable flag
is set): GJK on the Minkowski difference of the two support functions and, when the
shapes overlap, EPA on an expanding polytope for the penetration depth. Each shape is
inflated by margin/2, so a contact exists for dist < margin. Spheres and capsules are
first shrunk to their point / segment and GJK runs in distance mode (a shallow contact
is that distance minus the radii); only when their cores overlap do GJK + EPA run on
the full shapes. The contact lies midway between the two witness points and its
normal points from geom 1 to geom 2. ``opt.ccd_iterations`` bounds GJK and EPA and
sizes the polytope, ``opt.ccd_tolerance`` is their tolerance (boxes and meshes without
margin converge exactly, as in MuJoCo).

With the ``multiccd`` enable flag, box-mesh and mesh-mesh pairs without margin (the
pairs MuJoCo's maxContacts allows 4 contacts in one pass; box-box has its own
detector) run MuJoCo's multicontact after EPA: from the vertices of EPA's final face
on each shape it finds the box faces / mesh polygons (``mesh_poly*``, coplanar hull
faces merged by the compiler) that may touch; two faces with opposite normals, or an
edge lying on a face, are clipped one against the other (Sutherland-Hodgman), the
clipped polygon pruned to its largest quadrilateral, and its vertices are the
contacts, all at EPA's depth; where nothing aligns the EPA contact stays alone. The
other pairs but spheres and ellipsoids get up to four more contacts from rotating
both geoms by +-1e-3 rad about the first contact's tangents and colliding again.
The clipper's polygon buffers have room for the model's largest polygon (at most
MuJoCo's 150 vertices, see ``polygon_capacity``) and are only compiled in with
multiccd.

mjc_PlaneConvex (plane vs ellipsoid or mesh) takes the support point against the
plane normal and, for meshes, up to two more hull vertices next to it within the
margin.

Support points of meshes follow MuJoCo: all vertices are searched when the mesh has no
hull graph or fewer than 10 vertices, otherwise hill climbing runs on the hull graph.
On a convex hull a vertex no neighbour improves on is the global maximum, so hill
climbing returns the exact support point; only exact ties (same dot product) may pick
a different vertex of the same face than MuJoCo would, as neighbour order in tiphys'
``mesh_graph`` can differ inside Qhull-merged facets.

Fixed-size local arrays stand in for MuJoCo's polytope buffers: vertices 5 + N and
faces 6 N for N >= ccd_iterations (MuJoCo's own sizing for N > 170; below that it
keeps room for 1020 faces, which 35 iterations never came close to in the tests:
163 at most). Every backend runs the same code, in f64 and f32. The kernels are
compiled without Taichi's advanced IR passes and without fast-math (see
``_light_compile``): minutes of compile time become seconds, and f64 results then
follow MuJoCo's arithmetic to the last bits on polytopes.
"""
import math

import numpy as np
import taichi as ti

from . import config
from .collision import (ND, add, compile_options, detector_kind, emit, geom_pose, list_count,
                        list_entry, make_frame, near_pair, new_list, primitive_table)
from .consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD, GEOM_MESH,
                     GEOM_PLANE, GEOM_SPHERE, GEOM_TYPE_NAMES, MAXVAL, MINVAL)

MINVAL2 = MINVAL * MINVAL
MAXVAL2 = MAXVAL * MAXVAL
MAX_LIMIT = 1e30  # stands for mjMAX_LIMIT (DBL_MAX), also representable in f32
FLT_MAX = 3.4028234663852886e38
MESH_HILLCLIMB_MIN = 10
MAX_PLANE_MESH = 3
TOL_PLANE_MESH = 0.3
MULTICCD_TOL = 1e-3  # distinct contacts: farther apart than this * min(rbound)
MULTICCD_SIN = math.sin(0.5e-3)  # perturbation of +-1e-3 rad, as a quaternion
MULTICCD_COS = math.cos(0.5e-3)

KIND_CONVEX = 1  # index of "convex" in collision.KINDS (the plan's candidate lists)


# ------------------------------------------------------------------------------------
# local state: two objects, GJK's status, EPA's polytope
# ------------------------------------------------------------------------------------

def polytope_capacity(ccd_iterations: int):
    """(vertices, faces) of the EPA polytope: MuJoCo's 5 + N and 6 N for N iterations,
    N rounded up (35, the default, then powers of two) so that nearby iteration
    counts share one compiled kernel."""
    n = 35
    while n < int(ccd_iterations):
        n = 64 if n == 35 else 2 * n
    return 5 + n, 6 * n


@ti.func
def _new_polytope(nv: ti.template(), nf: ti.template()):
    return ti.types.struct(
        nverts=ti.i32, pv=ti.types.matrix(nv, 3, float), pv1=ti.types.matrix(nv, 3, float),
        pv2=ti.types.matrix(nv, 3, float), pi=ti.types.matrix(nv, 2, ti.i32),
        nfaces=ti.i32, fvert=ti.types.matrix(nf, 3, ti.i32),
        fadj=ti.types.matrix(nf, 3, ti.i32), fv=ti.types.matrix(nf, 3, float),
        fd2=ti.types.vector(nf, float), fidx=ti.types.vector(nf, ti.i32),
        nmap=ti.i32, map=ti.types.vector(nf, ti.i32), nedges=ti.i32,
        hidx=ti.types.vector(nf, ti.i32), hedge=ti.types.vector(nf, ti.i32),
        stack=ti.types.vector(nf, ti.i32))(
        nverts=0, pv=ti.Matrix.zero(float, nv, 3), pv1=ti.Matrix.zero(float, nv, 3),
        pv2=ti.Matrix.zero(float, nv, 3), pi=ti.Matrix.zero(ti.i32, nv, 2),
        nfaces=0, fvert=ti.Matrix.zero(ti.i32, nf, 3), fadj=ti.Matrix.zero(ti.i32, nf, 3),
        fv=ti.Matrix.zero(float, nf, 3), fd2=ti.Vector.zero(float, nf),
        fidx=ti.Vector.zero(ti.i32, nf), nmap=0, map=ti.Vector.zero(ti.i32, nf),
        nedges=0, hidx=ti.Vector.zero(ti.i32, nf), hedge=ti.Vector.zero(ti.i32, nf),
        stack=ti.Vector.zero(ti.i32, nf))


@ti.func
def _new_status():
    return ti.types.struct(
        sv=ti.types.matrix(4, 3, float), sv1=ti.types.matrix(4, 3, float),
        sv2=ti.types.matrix(4, 3, float), si=ti.types.matrix(4, 2, ti.i32), nsimplex=ti.i32,
        x1=ti.types.vector(3, float), x2=ti.types.vector(3, float), dist=float,
        nx=ti.i32)(
        sv=ti.Matrix.zero(float, 4, 3), sv1=ti.Matrix.zero(float, 4, 3),
        sv2=ti.Matrix.zero(float, 4, 3), si=ti.Matrix.zero(ti.i32, 4, 2), nsimplex=0,
        x1=ti.Vector.zero(float, 3), x2=ti.Vector.zero(float, 3), dist=0.0, nx=0)


@ti.func
def _new_obj(gtype, pos, mat, size, margin, mesh_id, mesh_vertadr: ti.template(),
             mesh_vertnum: ti.template(), mesh_graphadr: ti.template()):
    vadr = 0
    vnum = 0
    gadr = -1
    if mesh_id >= 0:
        vadr = mesh_vertadr[mesh_id]
        vnum = mesh_vertnum[mesh_id]
        gadr = mesh_graphadr[mesh_id]
    return ti.types.struct(
        type=ti.i32, pos=ti.types.vector(3, float), mat=ti.types.matrix(3, 3, float),
        size=ti.types.vector(3, float), margin=float, shrink=ti.i32, vadr=ti.i32,
        vnum=ti.i32, gadr=ti.i32, vidx=ti.i32, midx=ti.i32)(
        type=gtype, pos=pos, mat=mat, size=size, margin=margin, shrink=0, vadr=vadr,
        vnum=vnum, gadr=gadr, vidx=-1, midx=-1)


# ------------------------------------------------------------------------------------
# small vector helpers
# ------------------------------------------------------------------------------------

@ti.func
def _row(mat, i):
    return ti.Vector([mat[i, 0], mat[i, 1], mat[i, 2]])


@ti.func
def _set_row(mat: ti.template(), i, v):
    for k in ti.static(range(3)):
        mat[i, k] = v[k]


@ti.func
def _det3(v1, v2, v3):
    return (v1[0] * (v2[1] * v3[2] - v2[2] * v3[1])
            + v1[1] * (v2[2] * v3[0] - v2[0] * v3[2])
            + v1[2] * (v2[0] * v3[1] - v2[1] * v3[0]))


@ti.func
def _normalize(v):
    """mju_normalize3: unit vector, or (1, 0, 0) when too small."""
    n = v.norm()
    out = ti.Vector([1.0, 0.0, 0.0])
    if n >= MINVAL:
        out = v * (1.0 / n)
    return out


@ti.func
def _same_sign(a, b):
    # an int, not a bool: vectors of bools break Vulkan pipelines (lavapipe)
    return ti.select((a > 0 and b > 0) or (a < 0 and b < 0), 1, 0)


@ti.func
def _equal3(a, b):
    return ti.abs(a[0] - b[0]) < MINVAL and ti.abs(a[1] - b[1]) < MINVAL and \
        ti.abs(a[2] - b[2]) < MINVAL


# ------------------------------------------------------------------------------------
# support functions
# ------------------------------------------------------------------------------------

@ti.func
def _mesh_vertex(mesh_vert: ti.template(), vadr, i):
    v = mesh_vert[vadr + i]
    return ti.Vector([v[0], v[1], v[2]])


@ti.func
def _support_one(gtype, pos, mat, size, margin, shrink, vadr, vnum, gadr, vidx, midx,
                 direction, mesh_vert: ti.template(), mesh_graph: ti.template()):
    """Support point of one object in unit direction ``direction`` (MuJoCo's per-type
    support plus margin/2), and the updated (vidx, midx): boxes and meshes record
    their support vertex, hill climbing its local id."""
    local = mat.transpose() @ direction
    res = pos
    if gtype == GEOM_SPHERE:
        if shrink == 0:
            res = size[0] * direction + pos
    if gtype == GEOM_CAPSULE:
        if shrink != 0:
            scl = size[1] if local[2] >= 0 else -size[1]
            res = ti.Vector([mat[0, 2], mat[1, 2], mat[2, 2]]) * scl + pos
        else:
            ls = local * size[0]
            ls[2] += size[1] if local[2] >= 0 else -size[1]
            res = mat @ ls + pos
    if gtype == GEOM_ELLIPSOID:
        ls = local * size
        norm2 = ls.dot(ls)
        if norm2 < MINVAL2:
            res = ti.Vector([mat[0, 0], mat[1, 0], mat[2, 0]]) * size[0] + pos
        else:
            inv = 1.0 / ti.sqrt(norm2)
            res = mat @ (ls * (inv * size)) + pos
    if gtype == GEOM_CYLINDER:
        n2 = local[0] * local[0] + local[1] * local[1]
        scl = 0.0
        if n2 >= MINVAL2:
            scl = size[0] / ti.sqrt(n2)
        ls = ti.Vector([scl * local[0], scl * local[1],
                        size[1] if local[2] >= 0 else -size[1]])
        res = mat @ ls + pos
    if gtype == GEOM_BOX:
        ls = ti.Vector([size[0] if local[0] >= 0 else -size[0],
                        size[1] if local[1] >= 0 else -size[1],
                        size[2] if local[2] >= 0 else -size[2]])
        vidx = 0
        for k in ti.static(range(3)):
            if ls[k] > 0:
                vidx |= 1 << k
        res = mat @ ls + pos
    if gtype == GEOM_MESH:
        imax = 0
        if gadr < 0 or vnum < MESH_HILLCLIMB_MIN:
            # exhaustive search, ties keep the previous support vertex (mjc_meshSupport)
            best = -FLT_MAX
            if vidx >= 0:
                imax = vidx
                best = local.dot(_mesh_vertex(mesh_vert, vadr, imax))
            for i in range(vnum):
                vdot = local.dot(_mesh_vertex(mesh_vert, vadr, i))
                if vdot > best:
                    best = vdot
                    imax = i
        else:
            imax, midx = _hillclimb(gadr, vadr, midx, local, mesh_vert, mesh_graph, 0)
        vidx = imax
        res = mat @ _mesh_vertex(mesh_vert, vadr, imax) + pos
    if margin > 0:
        res += direction * (0.5 * margin)
    return res, vidx, midx


def _is_prism(obj) -> bool:
    """Compile-time test: a heightfield prism object (collide_hfield's _new_prism)."""
    return "prism" in obj.keys


@ti.func
def _prism_support(prism, direction):
    """mjc_prism_support: the best of the three bottom (direction z < 0) or top vertices
    of the triangular prism (rows 0-2 bottom, 3-5 top)."""
    base = 0 if direction[2] < 0 else 3
    ibest = base
    best = _row(prism, base).dot(direction)
    for k in ti.static(range(1, 3)):
        vdot = _row(prism, base + k).dot(direction)
        if vdot > best:
            best = vdot
            ibest = base + k
    return _row(prism, ibest)


@ti.func
def _support_pair(o1: ti.template(), o2: ti.template(), direction,
                  mesh_vert: ti.template(), mesh_graph: ti.template()):
    """support() of engine_collision_gjk.c: the support points of object 1 along
    ``direction`` and of object 2 against it. One loop over the two objects, so that
    the support code is inlined once per call site (it dominates compile time). A
    heightfield prism (always object 1) has its own support function."""
    p1 = ti.Vector([0.0, 0.0, 0.0])
    p2 = ti.Vector([0.0, 0.0, 0.0])
    if ti.static(_is_prism(o1)):
        p1 = _prism_support(o1.prism, direction)
        res, vidx, midx = _support_one(
            o2.type, o2.pos, o2.mat, o2.size, o2.margin, o2.shrink, o2.vadr, o2.vnum,
            o2.gadr, o2.vidx, o2.midx, -direction, mesh_vert, mesh_graph)
        p2 = res
        o2.vidx = vidx
        o2.midx = midx
    else:
        for j in range(2):
            first = j == 0
            res, vidx, midx = _support_one(
                ti.select(first, o1.type, o2.type), ti.select(first, o1.pos, o2.pos),
                ti.select(first, o1.mat, o2.mat), ti.select(first, o1.size, o2.size),
                ti.select(first, o1.margin, o2.margin),
                ti.select(first, o1.shrink, o2.shrink),
                ti.select(first, o1.vadr, o2.vadr), ti.select(first, o1.vnum, o2.vnum),
                ti.select(first, o1.gadr, o2.gadr), ti.select(first, o1.vidx, o2.vidx),
                ti.select(first, o1.midx, o2.midx), ti.select(first, direction, -direction),
                mesh_vert, mesh_graph)
            if first:
                p1 = res
                o1.vidx = vidx
                o1.midx = midx
            else:
                p2 = res
                o2.vidx = vidx
                o2.midx = midx
    return p1, p2


@ti.func
def _hillclimb(gadr, vadr, midx, local, mesh_vert: ti.template(), mesh_graph: ti.template(),
               include_start: ti.template()):
    """Hill climbing on the hull graph from local id ``midx`` (0 when unset); returns
    (vertex id, local id). ``include_start``: libccd's variant, which also scores the
    start vertex (mjccd_support), else mjc_hillclimbSupport."""
    numvert = mesh_graph[gadr]
    edgeadr = gadr + 2
    globalid = gadr + 2 + numvert
    edges = gadr + 2 + 2 * numvert
    imax = midx if midx >= 0 else 0
    best = -FLT_MAX
    if ti.static(include_start):
        best = local.dot(_mesh_vertex(mesh_vert, vadr, mesh_graph[globalid + imax]))
    prev = -1
    while imax != prev:
        prev = imax
        i = mesh_graph[edgeadr + prev]
        while mesh_graph[edges + i] >= 0:
            sub = mesh_graph[edges + i]
            vdot = local.dot(_mesh_vertex(mesh_vert, vadr, mesh_graph[globalid + sub]))
            if vdot > best:
                best = vdot
                imax = sub
            i += 1
    return mesh_graph[globalid + imax], imax


@ti.func
def _discrete(o1: ti.template(), o2: ti.template()):
    return o1.margin == 0 and o2.margin == 0 and \
        (o1.type == GEOM_MESH or o1.type == GEOM_BOX or o1.type == GEOM_HFIELD) and \
        (o2.type == GEOM_MESH or o2.type == GEOM_BOX or o2.type == GEOM_HFIELD)


# ------------------------------------------------------------------------------------
# GJK (engine_collision_gjk.c: gjk, gjkIntersect, the signed-volume subdistance)
# ------------------------------------------------------------------------------------

@ti.func
def _project_origin_line(v1, v2):
    diff = v2 - v1
    scl = -(v2.dot(diff) / diff.dot(diff))
    return v2 + scl * diff


@ti.func
def _project_origin_plane(v1, v2, v3):
    """Projection of the origin on the plane (v1, v2, v3); ret 1 if degenerate."""
    diff21 = v2 - v1
    diff31 = v3 - v1
    diff32 = v3 - v2
    ret = 0
    res = ti.Vector([0.0, 0.0, 0.0])
    n = diff32.cross(diff21)
    nv = n.dot(v2)
    nn = n.dot(n)
    if nn == 0:
        ret = 1
    elif nv != 0 and nn > MINVAL:
        res = n * (nv / nn)
    else:
        n = diff21.cross(diff31)
        nv = n.dot(v1)
        nn = n.dot(n)
        if nn == 0:
            ret = 1
        elif nv != 0 and nn > MINVAL:
            res = n * (nv / nn)
        else:
            n = diff31.cross(diff32)
            nv = n.dot(v3)
            nn = n.dot(n)
            res = n * (nv / nn)
    return ret, res


@ti.func
def _s1d(s1, s2):
    p_o = _project_origin_line(s1, s2)
    mu_max = s1[0] - s2[0]
    index = 0
    mu = s1[1] - s2[1]
    if ti.abs(mu) >= ti.abs(mu_max):
        mu_max = mu
        index = 1
    mu = s1[2] - s2[2]
    if ti.abs(mu) >= ti.abs(mu_max):
        mu_max = mu
        index = 2
    c1 = p_o[index] - s2[index]
    c2 = s1[index] - p_o[index]
    lam = ti.Vector([0.0, 1.0])
    if _same_sign(mu_max, c1) and _same_sign(mu_max, c2):
        lam = ti.Vector([c1 / mu_max, c2 / mu_max])
    return lam


@ti.func
def _tri_minors(s1, s2, s3):
    m14 = s2[1] * s3[2] - s2[2] * s3[1] - s1[1] * s3[2] + s1[2] * s3[1] + s1[1] * s2[2] \
        - s1[2] * s2[1]
    m24 = s2[0] * s3[2] - s2[2] * s3[0] - s1[0] * s3[2] + s1[2] * s3[0] + s1[0] * s2[2] \
        - s1[2] * s2[0]
    m34 = s2[0] * s3[1] - s2[1] * s3[0] - s1[0] * s3[1] + s1[1] * s3[0] + s1[0] * s2[1] \
        - s1[1] * s2[0]
    mu1 = ti.abs(m14)
    mu2 = ti.abs(m24)
    mu3 = ti.abs(m34)
    m_max = m34
    x = 0
    y = 1
    if mu1 >= mu2 and mu1 >= mu3:
        m_max = m14
        x = 1
        y = 2
    elif mu2 >= mu3:
        m_max = m24
        x = 0
        y = 2
    return m_max, x, y


@ti.func
def _tri_cofactors(p, s1, s2, s3, x, y):
    c31 = p[x] * s2[y] + p[y] * s3[x] + s2[x] * s3[y] - p[x] * s3[y] - p[y] * s2[x] \
        - s3[x] * s2[y]
    c32 = p[x] * s3[y] + p[y] * s1[x] + s3[x] * s1[y] - p[x] * s1[y] - p[y] * s3[x] \
        - s1[x] * s3[y]
    c33 = p[x] * s1[y] + p[y] * s2[x] + s1[x] * s2[y] - p[x] * s2[y] - p[y] * s1[x] \
        - s2[x] * s1[y]
    return ti.Vector([c31, c32, c33])


@ti.func
def _s2d(s1, s2, s3):
    ret, p_o = _project_origin_plane(s1, s2, s3)
    lam = ti.Vector([0.0, 0.0, 0.0])
    if ret != 0:
        l2 = _s1d(s1, s2)
        lam = ti.Vector([l2[0], l2[1], 0.0])
    else:
        m_max, x, y = _tri_minors(s1, s2, s3)
        c = _tri_cofactors(p_o, s1, s2, s3, x, y)
        comp = ti.Vector([_same_sign(m_max, c[0]), _same_sign(m_max, c[1]),
                          _same_sign(m_max, c[2])])
        if comp[0] and comp[1] and comp[2]:
            lam = c / m_max
        else:
            pts = ti.Matrix.rows([s1, s2, s3])
            dmin = MAX_LIMIT
            for e in range(3):
                if not comp[e]:
                    a = 0 if e > 0 else 1
                    b = 1 if e > 1 else 2
                    sa = _row(pts, a)
                    sb = _row(pts, b)
                    l2 = _s1d(sa, sb)
                    xx = l2[0] * sa + l2[1] * sb
                    d = xx.dot(xx)
                    if e == 0 or d < dmin:
                        lam = ti.Vector([0.0, 0.0, 0.0])
                        lam[a] = l2[0]
                        lam[b] = l2[1]
                        dmin = d
    return lam


@ti.func
def _s3d(pts):
    s1 = _row(pts, 0)
    s2 = _row(pts, 1)
    s3 = _row(pts, 2)
    s4 = _row(pts, 3)
    c = ti.Vector([-_det3(s2, s3, s4), _det3(s1, s3, s4), -_det3(s1, s2, s4),
                   _det3(s1, s2, s3)])
    m_det = c[0] + c[1] + c[2] + c[3]
    comp = ti.Vector([_same_sign(m_det, c[0]), _same_sign(m_det, c[1]),
                      _same_sign(m_det, c[2]), _same_sign(m_det, c[3])])
    lam = ti.Vector([0.0, 0.0, 0.0, 0.0])
    if comp[0] and comp[1] and comp[2] and comp[3]:
        lam = c / m_det
    else:
        dmin = MAX_LIMIT
        for f in range(4):
            if not comp[f]:
                a = 0 if f > 0 else 1
                b = 1 if f > 1 else 2
                cc = 2 if f > 2 else 3
                sa = _row(pts, a)
                sb = _row(pts, b)
                sc = _row(pts, cc)
                l3 = _s2d(sa, sb, sc)
                xx = l3[0] * sa + l3[1] * sb + l3[2] * sc
                d = xx.dot(xx)
                if f == 0 or d < dmin:
                    lam = ti.Vector([0.0, 0.0, 0.0, 0.0])
                    lam[a] = l3[0]
                    lam[b] = l3[1]
                    lam[cc] = l3[2]
                    dmin = d
    return lam


@ti.func
def _subdistance(n, sv):
    lam = ti.Vector([1.0, 0.0, 0.0, 0.0])
    if n == 4:
        lam = _s3d(sv)
    elif n == 3:
        l3 = _s2d(_row(sv, 0), _row(sv, 1), _row(sv, 2))
        lam = ti.Vector([l3[0], l3[1], l3[2], 0.0])
    elif n == 2:
        l2 = _s1d(_row(sv, 0), _row(sv, 1))
        lam = ti.Vector([l2[0], l2[1], 0.0, 0.0])
    return lam


@ti.func
def _lincomb(lam, pts, n):
    res = ti.Vector([0.0, 0.0, 0.0])
    for i in range(n):
        res += lam[i] * _row(pts, i)
    return res


@ti.func
def _signed_distance(v1, v2, v3):
    normal = (v3 - v1).cross(v2 - v1)
    norm2 = normal.dot(normal)
    dist = MAX_LIMIT
    if norm2 > MINVAL2 and norm2 < MAXVAL2:
        normal = normal * (1.0 / ti.sqrt(norm2))
        dist = normal.dot(v1)
    return dist, normal


@ti.func
def _gjk_intersect(st: ti.template(), o1: ti.template(), o2: ti.template(),
                   mesh_vert: ti.template(), mesh_graph: ti.template(),
                   k, kmax):
    """Origin inside the Minkowski difference? 1 yes (st.simplex is a tetrahedron
    around it), 0 no, -1 inconclusive; also returns the iteration count."""
    sv = st.sv
    sv1 = st.sv1
    sv2 = st.sv2
    si = st.si
    s = ti.Vector([0, 1, 2, 3])
    ret = -1
    while k < kmax:
        dist = ti.Vector([0.0, 0.0, 0.0, 0.0])
        normals = ti.Matrix.zero(float, 4, 3)
        for f in ti.static(range(4)):
            tri = ti.static(((2, 1, 3), (0, 2, 3), (1, 0, 3), (0, 1, 2))[f])
            df, nf = _signed_distance(_row(sv, s[tri[0]]), _row(sv, s[tri[1]]),
                                      _row(sv, s[tri[2]]))
            dist[f] = df
            _set_row(normals, f, nf)
        if dist[0] == 0 or dist[1] == 0 or dist[2] == 0 or dist[3] == 0:
            break
        i = 0 if dist[0] < dist[1] else 1
        j = 2 if dist[2] < dist[3] else 3
        index = i if dist[i] < dist[j] else j
        if dist[index] > 0:
            for r in ti.static(range(4)):
                _set_row(st.sv, r, _row(sv, s[r]))
                _set_row(st.sv1, r, _row(sv1, s[r]))
                _set_row(st.sv2, r, _row(sv2, s[r]))
                st.si[r, 0] = si[s[r], 0]
                st.si[r, 1] = si[s[r], 1]
            st.nsimplex = 4
            ret = 1
            break
        nrm = _row(normals, index)
        p1, p2 = _support_pair(o1, o2, nrm, mesh_vert, mesh_graph)
        r = s[index]
        _set_row(sv, r, p1 - p2)
        _set_row(sv1, r, p1)
        _set_row(sv2, r, p2)
        si[r, 0] = o1.vidx
        si[r, 1] = o2.vidx
        if nrm.dot(p1 - p2) < 0:
            st.nsimplex = 0
            ret = 0
            break
        a = (index + 1) & 3
        b = (index + 2) & 3
        tmp = s[a]
        s[a] = s[b]
        s[b] = tmp
        k += 1
    return ret, k


@ti.func
def _gjk(st: ti.template(), o1: ti.template(), o2: ti.template(),
         mesh_vert: ti.template(), mesh_graph: ti.template(), tol, kmax, cutoff):
    """GJK from the centers in st.x1/x2. Distance mode when cutoff > 0 (st.dist is the
    distance, MAX_LIMIT past the cutoff), else intersection mode (st.dist MAX_LIMIT when
    apart, 0 with a tetrahedron around the origin, or a small distance)."""
    get_dist = cutoff > 0
    backup = not get_dist
    n = 0
    k = 0
    lam = ti.Vector([1.0, 0.0, 0.0, 0.0])
    cutoff2 = cutoff * cutoff
    eps = 0.5 * tol * tol
    if _discrete(o1, o2):
        eps = 0.0
    x_k = st.x1 - st.x2
    x_norm = 0.0
    early = 0  # 1: apart (or degenerate), 2: gjkIntersect found the origin
    while k < kmax:
        xn2 = x_k.dot(x_k)
        if xn2 < MINVAL2:
            x_norm = xn2
            break
        x_norm = ti.sqrt(xn2)
        dneg = x_k * (1.0 / x_norm)
        p1, p2 = _support_pair(o1, o2, -dneg, mesh_vert, mesh_graph)
        s_k = p1 - p2
        _set_row(st.sv, n, s_k)
        _set_row(st.sv1, n, p1)
        _set_row(st.sv2, n, p2)
        st.si[n, 0] = o1.vidx
        st.si[n, 1] = o2.vidx
        if x_k.dot(x_k - s_k) < eps:
            if k == 0:
                n = 1
            break
        vs = x_k.dot(s_k)
        if not get_dist:
            if vs > 0:
                early = 1
                break
        elif cutoff < MAX_LIMIT:
            if vs > 0 and vs * vs / x_k.dot(x_k) >= cutoff2:
                early = 1
                break
        if n == 3 and backup:
            ret, k2 = _gjk_intersect(st, o1, o2, mesh_vert, mesh_graph, k, kmax)
            k = k2
            if ret == 1:
                early = 2
                break
            if ret == 0:
                early = 1
                break
            backup = False
        lam = _subdistance(n + 1, st.sv)
        n = 0
        for i in range(4):
            if lam[i] != 0:
                _set_row(st.sv, n, _row(st.sv, i))
                _set_row(st.sv1, n, _row(st.sv1, i))
                _set_row(st.sv2, n, _row(st.sv2, i))
                st.si[n, 0] = st.si[i, 0]
                st.si[n, 1] = st.si[i, 1]
                lam[n] = lam[i]
                n += 1
        if n < 1:
            early = 1
            break
        x_next = _lincomb(lam, st.sv, n)
        if _equal3(x_next, x_k):
            break
        x_k = x_next
        if n == 4:
            x_norm = 0.0
            break
        k += 1
    if early == 1:
        st.nsimplex = 0
        st.nx = 0
        st.dist = MAX_LIMIT
    elif early == 2:
        st.nx = 0
        st.dist = 0.0
    else:
        st.x1 = _lincomb(lam, st.sv1, n)
        st.x2 = _lincomb(lam, st.sv2, n)
        st.nx = 1
        st.nsimplex = n
        st.dist = x_norm


# ------------------------------------------------------------------------------------
# EPA (engine_collision_gjk.c: polytope2/3/4, epa, horizon)
# ------------------------------------------------------------------------------------

EPA_OK = 0
EPA_FAILED = 1


@ti.func
def _epa_support(pt: ti.template(), o1: ti.template(), o2: ti.template(),
                 mesh_vert: ti.template(), mesh_graph: ti.template(),
                 d, dnorm):
    direction = ti.Vector([1.0, 0.0, 0.0])
    if dnorm > MINVAL:
        direction = d / dnorm
    p1, p2 = _support_pair(o1, o2, direction, mesh_vert, mesh_graph)
    n = pt.nverts
    pt.nverts += 1
    _set_row(pt.pv, n, p1 - p2)
    _set_row(pt.pv1, n, p1)
    _set_row(pt.pv2, n, p2)
    pt.pi[n, 0] = o1.vidx
    pt.pi[n, 1] = o2.vidx
    return n


@ti.func
def _insert_vertex(pt: ti.template(), st: ti.template(), i):
    n = pt.nverts
    pt.nverts += 1
    _set_row(pt.pv, n, _row(st.sv, i))
    _set_row(pt.pv1, n, _row(st.sv1, i))
    _set_row(pt.pv2, n, _row(st.sv2, i))
    pt.pi[n, 0] = st.si[i, 0]
    pt.pi[n, 1] = st.si[i, 1]


@ti.func
def _attach_face(pt: ti.template(), v1, v2, v3, adj1, adj2, adj3):
    """Append a face; returns its squared distance to the origin (0 if degenerate)."""
    f = pt.nfaces
    pt.nfaces += 1
    pt.fvert[f, 0] = v1
    pt.fvert[f, 1] = v2
    pt.fvert[f, 2] = v3
    pt.fadj[f, 0] = adj1
    pt.fadj[f, 1] = adj2
    pt.fadj[f, 2] = adj3
    ret, v = _project_origin_plane(_row(pt.pv, v3), _row(pt.pv, v2), _row(pt.pv, v1))
    d2 = 0.0
    if ret == 0:
        _set_row(pt.fv, f, v)
        d2 = v.dot(v)
        pt.fd2[f] = d2
        pt.fidx[f] = -1
    return d2


@ti.func
def _replace_simplex3(pt: ti.template(), st: ti.template(), v1, v2, v3):
    verts = ti.Vector([v1, v2, v3])
    for r in ti.static(range(3)):
        _set_row(st.sv, r, _row(pt.pv, verts[r]))
        _set_row(st.sv1, r, _row(pt.pv1, verts[r]))
        _set_row(st.sv2, r, _row(pt.pv2, verts[r]))
        st.si[r, 0] = pt.pi[verts[r], 0]
        st.si[r, 1] = pt.pi[verts[r], 1]
    st.nsimplex = 3
    pt.nfaces = 0
    pt.nverts = 0
    pt.nmap = 0


@ti.func
def _fill_map(pt: ti.template(), n):
    for i in range(n):
        pt.map[i] = i
        pt.fidx[i] = i
    pt.nmap = n


@ti.func
def _same_side(p0, p1, p2, p3):
    n = (p1 - p0).cross(p2 - p0)
    dot1 = n.dot(p3 - p0)
    dot2 = n.dot(-p0)
    return (dot1 > 0 and dot2 > 0) or (dot1 < 0 and dot2 < 0)


@ti.func
def _test_tetra(p0, p1, p2, p3):
    return _same_side(p0, p1, p2, p3) and _same_side(p1, p2, p3, p0) and \
        _same_side(p2, p3, p0, p1) and _same_side(p3, p0, p1, p2)


@ti.func
def _rot120(axis):
    """Rotation by 120 degrees about ``axis`` (rotmat in engine_collision_gjk.c)."""
    n = axis.norm()
    u1 = axis[0] / n
    u2 = axis[1] / n
    u3 = axis[2] / n
    sn = 0.86602540378
    cs = -0.5
    return ti.Matrix([
        [cs + u1 * u1 * (1 - cs), u1 * u2 * (1 - cs) - u3 * sn, u1 * u3 * (1 - cs) + u2 * sn],
        [u2 * u1 * (1 - cs) + u3 * sn, cs + u2 * u2 * (1 - cs), u2 * u3 * (1 - cs) - u1 * sn],
        [u1 * u3 * (1 - cs) - u2 * sn, u2 * u3 * (1 - cs) + u1 * sn, cs + u3 * u3 * (1 - cs)]])


@ti.func
def _ray_triangle(v1, v2, v3, v4, v5):
    d12 = v2 - v1
    d13 = v3 - v1
    d14 = v4 - v1
    d15 = v5 - v1
    vol1 = _det3(d13, d14, d12)
    vol2 = _det3(d14, d15, d12)
    vol3 = _det3(d15, d13, d12)
    res = 0
    if vol1 >= 0 and vol2 >= 0 and vol3 >= 0:
        res = 1
    elif vol1 <= 0 and vol2 <= 0 and vol3 <= 0:
        res = -1
    return res


@ti.func
def _tri_affine(v1, v2, v3, p):
    m_max, x, y = _tri_minors(v1, v2, v3)
    return _tri_cofactors(p, v1, v2, v3, x, y) / m_max


@ti.func
def _tri_point_intersect(v1, v2, v3, p):
    lam = _tri_affine(v1, v2, v3, p)
    res = False
    if lam[0] >= 0 and lam[1] >= 0 and lam[2] >= 0:
        pr = v1 * lam[0] + v2 * lam[1] + v3 * lam[2]
        res = (pr - p).norm() < MINVAL
    return res


@ti.func
def _polytope(pt: ti.template(), st: ti.template(), o1: ti.template(), o2: ti.template(),
              mesh_vert: ti.template(), mesh_graph: ti.template()):
    """The initial EPA polytope from GJK's simplex (polytope4 / polytope2, falling back
    to polytope3 on a face through the origin); returns EPA_OK or EPA_FAILED."""
    ret = EPA_OK
    stage = st.nsimplex
    if stage == 4:
        for i in range(4):
            _insert_vertex(pt, st, i)
        tbl = ti.Matrix([[0, 1, 2, 1, 3, 2], [0, 3, 1, 2, 3, 0], [0, 2, 3, 0, 3, 1],
                         [3, 2, 1, 2, 0, 1]])
        for j in range(4):
            d2 = _attach_face(pt, tbl[j, 0], tbl[j, 1], tbl[j, 2], tbl[j, 3], tbl[j, 4],
                              tbl[j, 5])
            if d2 < MINVAL2:
                _replace_simplex3(pt, st, tbl[j, 0], tbl[j, 1], tbl[j, 2])
                stage = 3
                break
        if stage == 4:
            if not _test_tetra(_row(pt.pv, 0), _row(pt.pv, 1), _row(pt.pv, 2),
                               _row(pt.pv, 3)):
                ret = EPA_FAILED
            else:
                _fill_map(pt, 4)
    elif stage == 2:
        _insert_vertex(pt, st, 0)
        _insert_vertex(pt, st, 1)
        v1 = _row(st.sv, 0)
        v2 = _row(st.sv, 1)
        diff = v2 - v1
        value = MAX_LIMIT
        index = 0
        for i in range(3):
            if ti.abs(diff[i]) < value:
                value = ti.abs(diff[i])
                index = i
        e = ti.Vector([0.0, 0.0, 0.0])
        e[index] = 1.0
        d = e.cross(diff)
        rot = _rot120(diff)
        for i in range(3):
            _epa_support(pt, o1, o2, mesh_vert, mesh_graph, d, d.norm())
            d = rot @ d
        tbl = ti.Matrix([[0, 2, 3, 1, 3, 2], [0, 4, 2, 2, 4, 0], [0, 3, 4, 0, 5, 1],
                         [1, 3, 2, 5, 0, 4], [1, 2, 4, 3, 1, 5], [1, 4, 3, 4, 2, 3]])
        for j in range(6):
            d2 = _attach_face(pt, tbl[j, 0], tbl[j, 1], tbl[j, 2], tbl[j, 3], tbl[j, 4],
                              tbl[j, 5])
            if d2 < MINVAL2:
                _replace_simplex3(pt, st, tbl[j, 0], tbl[j, 1], tbl[j, 2])
                stage = 3
                break
        if stage == 2:
            if _ray_triangle(v1, v2, _row(pt.pv, 2), _row(pt.pv, 3), _row(pt.pv, 4)) == 0:
                ret = EPA_FAILED
            else:
                _fill_map(pt, 6)
    if stage == 3:
        v1 = _row(st.sv, 0)
        v2 = _row(st.sv, 1)
        v3 = _row(st.sv, 2)
        n = (v2 - v1).cross(v3 - v1)
        n_norm = n.norm()
        if n_norm < MINVAL:
            ret = EPA_FAILED
        else:
            for i in range(3):
                _insert_vertex(pt, st, i)
            sgn = -1.0
            for i in range(2):  # v5 (against n) is vertex 3, v4 (along n) vertex 4
                _epa_support(pt, o1, o2, mesh_vert, mesh_graph, sgn * n, n_norm)
                sgn = 1.0
            if _tri_point_intersect(v1, v2, v3, _row(pt.pv, 4)) or \
                    _tri_point_intersect(v1, v2, v3, _row(pt.pv, 3)):
                ret = EPA_FAILED
            else:
                tbl = ti.Matrix([[4, 0, 1, 1, 3, 2], [4, 2, 0, 2, 4, 0], [4, 1, 2, 0, 5, 1],
                                 [3, 1, 0, 5, 0, 4], [3, 0, 2, 3, 1, 5],
                                 [3, 2, 1, 4, 2, 3]])
                for j in range(6):
                    d2 = _attach_face(pt, tbl[j, 0], tbl[j, 1], tbl[j, 2], tbl[j, 3],
                                      tbl[j, 4], tbl[j, 5])
                    if d2 < MINVAL2:
                        ret = EPA_FAILED
                        break
                if ret == EPA_OK:
                    _fill_map(pt, 6)
    return ret


@ti.func
def _delete_face(pt: ti.template(), f):
    idx = pt.fidx[f]
    if idx >= 0:
        pt.nmap -= 1
        last = pt.map[pt.nmap]
        pt.map[idx] = last
        pt.fidx[last] = idx
    pt.fidx[f] = -2


@ti.func
def _get_edge(pt: ti.template(), f, vertex):
    e = 2
    if pt.fvert[f, 0] == vertex:
        e = 0
    elif pt.fvert[f, 1] == vertex:
        e = 1
    return e


@ti.func
def _horizon(pt: ti.template(), face, w):
    """Delete the faces visible from w (depth first from ``face``, in MuJoCo's order)
    and list the horizon edges; an explicit stack replaces MuJoCo's recursion. Stack
    entries pack (face, entry edge, next step)."""
    nf = ti.static(pt.fd2.n)
    _delete_face(pt, face)
    pt.stack[0] = (face * 4 + 2) * 8 + 1
    top = 0
    while top >= 0:
        code = pt.stack[top]
        f = code // 32
        e = (code // 8) % 4
        k = code % 8
        kmax = 3 if top == 0 else 2
        if k > kmax:
            top -= 1
        else:
            pt.stack[top] = code + 1
            i = (e + k) % 3
            a = pt.fadj[f, i]
            if pt.fidx[a] > -2:
                adj_edge = _get_edge(pt, a, pt.fvert[f, (i + 1) % 3])
                if _row(pt.fv, a).dot(w) - pt.fd2[a] > MINVAL and top + 1 < nf:
                    _delete_face(pt, a)
                    top += 1
                    pt.stack[top] = (a * 4 + adj_edge) * 8 + 1
                elif pt.nedges < nf:
                    pt.hidx[pt.nedges] = a
                    pt.hedge[pt.nedges] = adj_edge
                    pt.nedges += 1


@ti.func
def _epa(pt: ti.template(), st: ti.template(), o1: ti.template(), o2: ti.template(),
         mesh_vert: ti.template(), mesh_graph: ti.template(), tol,
         kmax):
    """Expand the polytope towards the penetration depth; st.dist = -depth and the
    witness points in st.x1/x2 (st.nx = 0 when it fails); rows 0-2 of the simplex
    (st.sv1, sv2, si) then hold the vertices of the face they lie on."""
    nf = ti.static(pt.fd2.n)
    upper = MAX_LIMIT
    upper2 = MAX_LIMIT
    face = -1
    tolerance = tol
    discrete = _discrete(o1, o2)
    if ti.static(config.precision() == "f64"):
        if discrete:
            tolerance = MINVAL
    k = 0
    while k < kmax:
        pface = face
        lower2 = MAX_LIMIT
        for i in range(pt.nmap):
            f = pt.map[i]
            if pt.fd2[f] < lower2:
                face = f
                lower2 = pt.fd2[f]
        if lower2 > upper2 or face < 0:
            face = pface
            break
        if lower2 <= 0:
            break
        lower = ti.sqrt(lower2)
        fv = _row(pt.fv, face)
        wi = _epa_support(pt, o1, o2, mesh_vert, mesh_graph, fv, lower)
        w = _row(pt.pv, wi)
        upper_k = fv.dot(w) / lower
        if upper_k < upper:
            upper = upper_k
            upper2 = upper * upper
        if upper - lower < tolerance:
            break
        if discrete:
            repeated = False
            for i in range(pt.nverts - 1):
                if pt.pi[wi, 0] == pt.pi[i, 0] and pt.pi[wi, 1] == pt.pi[i, 1]:
                    repeated = True
            if repeated:
                break
        _horizon(pt, face, w)
        if pt.nedges < 3:
            face = -1
            break
        nedges = pt.nedges
        if nedges > nf - pt.nfaces:
            break  # MuJoCo: "EPA: out of memory for faces on expanding polytope"
        nfaces = pt.nfaces
        bad = False
        for i in range(nedges):
            hor = pt.hidx[i]
            hedge = pt.hedge[i]
            v1 = pt.fvert[hor, hedge]
            v2 = pt.fvert[hor, (hedge + 1) % 3]
            pt.fadj[hor, hedge] = nfaces + i
            d2 = _attach_face(pt, wi, v2, v1, nfaces + (i + nedges - 1) % nedges, hor,
                              nfaces + (i + 1) % nedges)
            if d2 == 0:
                bad = True
                break
            if d2 >= lower2 and d2 <= upper2:
                pt.map[pt.nmap] = pt.nfaces - 1
                pt.fidx[pt.nfaces - 1] = pt.nmap
                pt.nmap += 1
        pt.nedges = 0
        if bad:
            face = -1
            break
        if pt.nmap == 0:
            break
        k += 1
    if face >= 0:
        i1 = pt.fvert[face, 0]
        i2 = pt.fvert[face, 1]
        i3 = pt.fvert[face, 2]
        lam = _tri_affine(_row(pt.pv, i1), _row(pt.pv, i2), _row(pt.pv, i3),
                          _row(pt.fv, face))
        st.x1 = lam[0] * _row(pt.pv1, i1) + lam[1] * _row(pt.pv1, i2) \
            + lam[2] * _row(pt.pv1, i3)
        st.x2 = lam[0] * _row(pt.pv2, i1) + lam[1] * _row(pt.pv2, i2) \
            + lam[2] * _row(pt.pv2, i3)
        st.dist = -ti.sqrt(pt.fd2[face])
        st.nx = 1
        for r in ti.static(range(3)):  # the final face, for multicontact
            v = pt.fvert[face, r]
            _set_row(st.sv1, r, _row(pt.pv1, v))
            _set_row(st.sv2, r, _row(pt.pv2, v))
            st.si[r, 0] = pt.pi[v, 0]
            st.si[r, 1] = pt.pi[v, 1]
    else:
        st.nx = 0
        st.dist = 0.0


# ------------------------------------------------------------------------------------
# multicontact (engine_collision_gjk.c): box/mesh pairs without margin, with multiccd
# ------------------------------------------------------------------------------------

FACE_TOL = 0.99999872  # mjFACE_TOL: normals this close to opposite are aligned faces
EDGE_TOL = 0.00159999931  # mjEDGE_TOL: an edge this close to perpendicular lies on a face
MAX_POLYVERT = 150  # mjMAX_POLYVERT: polygon sizes and polygons per vertex are capped here
# boxFace: each face's 4 corners (bit k set: +size[k]) packed 3 bits each, MuJoCo's order
BOX_FACES = tuple(c[0] | c[1] << 3 | c[2] << 6 | c[3] << 9 for c in (
    (7, 3, 1, 5), (2, 6, 4, 0), (2, 3, 7, 6), (4, 5, 1, 0), (6, 7, 5, 4), (3, 2, 0, 1)))


def polygon_capacity(max_polyvert: int) -> int:
    """Most vertices of one face the clipper holds: MuJoCo's cap (150) on the model's
    largest polygon, at least a box face's 4, rounded up (8, 16, 32, 64, 150) so that
    similar models share one compiled kernel."""
    n = min(MAX_POLYVERT, max(4, int(max_polyvert)))
    for cap in (8, 16, 32, 64):
        if n <= cap:
            return cap
    return MAX_POLYVERT


@ti.func
def _box_corner(pos, mat, size, bits):
    local = ti.Vector([size[0] if bits & 1 else -size[0], size[1] if bits & 2 else -size[1],
                       size[2] if bits & 4 else -size[2]])
    return mat @ local + pos


@ti.func
def _face_size(gtype, polyadr, face, mesh_polyvertnum: ti.template()):
    n = 4
    if gtype == GEOM_MESH:
        n = ti.min(mesh_polyvertnum[polyadr + face], MAX_POLYVERT)
    return n


@ti.func
def _face_vertex(gtype, pos, mat, size, vadr, polyadr, face, k, mesh_vert: ti.template(),
                 mesh_polyvertadr: ti.template(), mesh_polyvertnum: ti.template(),
                 mesh_polyvert: ti.template()):
    """Vertex k of a box face (boxFace) or mesh polygon (meshFace: reversed order)."""
    res = ti.Vector([0.0, 0.0, 0.0])
    if gtype == GEOM_BOX:
        codes = ti.Vector(BOX_FACES)
        res = _box_corner(pos, mat, size, (codes[face] >> (3 * k)) & 7)
    else:
        adr = mesh_polyvertadr[polyadr + face]
        nvert = ti.min(mesh_polyvertnum[polyadr + face], MAX_POLYVERT)
        res = mat @ _mesh_vertex(mesh_vert, vadr, mesh_polyvert[adr + nvert - 1 - k]) + pos
    return res


@ti.func
def _face_normal(gtype, mat, polyadr, face, mesh_polynormal: ti.template()):
    """World normal of box face ``face`` (+x, -x, +y, -y, +z, -z) or mesh polygon."""
    res = ti.Vector([0.0, 0.0, 0.0])
    if gtype == GEOM_BOX:
        axis = face // 2
        col = ti.Vector([mat[0, axis], mat[1, axis], mat[2, axis]])
        res = col if face % 2 == 0 else -col
    else:
        n = mesh_polynormal[polyadr + face]
        res = mat @ ti.Vector([n[0], n[1], n[2]])
    return res


@ti.func
def _intersect(adr1, n1, adr2, n2, mesh_polymap: ti.template()):
    """Up to two common entries of two polygon lists, in the first list's order."""
    res = ti.Vector([-1, -1])
    count = 0
    i = 0
    while i < n1 and count < 2:
        j = 0
        while j < n2 and count < 2:
            if mesh_polymap[adr1 + i] == mesh_polymap[adr2 + j]:
                res[count] = mesh_polymap[adr1 + i]
                count += 1
            j += 1
        i += 1
    return count, res


@ti.func
def _face_set(gtype, mat, vadr, dim, i1, i2, i3, direction, mesh_polymapadr: ti.template(),
              mesh_polymapnum: ti.template(), mesh_polymap: ti.template()):
    """Faces that may touch, given the 1-3 distinct vertices of the EPA face on this
    shape (boxNormals / meshNormals): (count, explicit face ids, polymap address: the
    ids are polymap entries from there when >= 0)."""
    count = 0
    ids = ti.Vector([0, 0, 0])
    mapadr = -1
    if gtype == GEOM_BOX:
        if dim == 1:
            count = 3
            for a in ti.static(range(3)):
                ids[a] = 2 * a + (0 if i1 & (1 << a) else 1)
        else:
            for a in ti.static(range(3)):
                bit = 1 << a
                up = (i1 & bit) != 0 and (i2 & bit) != 0 and (dim == 2 or (i3 & bit) != 0)
                down = (i1 & bit) == 0 and (i2 & bit) == 0 and (dim == 2 or (i3 & bit) == 0)
                if up or down:
                    ids[count] = 2 * a + (0 if up else 1)
                    count += 1
            if count != (1 if dim == 3 else 2):
                # boxNormals2: the box face whose normal is that of the contact
                local = mat.transpose() @ direction
                local = local * (1.0 / ti.sqrt(local.dot(local)))
                count = 0
                for f in range(6):
                    if count == 0:
                        val = local[f // 2] if f % 2 == 0 else -local[f // 2]
                        if val > FACE_TOL:
                            ids[0] = f
                            count = 1
    else:
        adr1 = mesh_polymapadr[vadr + i1]
        num1 = mesh_polymapnum[vadr + i1]
        if dim == 1:
            count = ti.min(num1, MAX_POLYVERT)
            mapadr = adr1
        else:
            n, edgeset = _intersect(adr1, num1, mesh_polymapadr[vadr + i2],
                                    mesh_polymapnum[vadr + i2], mesh_polymap)
            if dim == 2:
                count = n
                ids[0] = edgeset[0]
                ids[1] = edgeset[1]
            elif n > 0:
                adr3 = mesh_polymapadr[vadr + i3]
                num3 = mesh_polymapnum[vadr + i3]
                for k in range(n):
                    if count == 0:
                        for j in range(num3):
                            if count == 0 and edgeset[k] == mesh_polymap[adr3 + j]:
                                ids[0] = edgeset[k]
                                count = 1
    return count, ids, mapadr


@ti.func
def _set_face(ids, mapadr, k, mesh_polymap: ti.template()):
    return ids[k] if mapadr < 0 else mesh_polymap[mapadr + k]


@ti.func
def _edge_end(gtype, pos, mat, size, vadr, polyadr, dim, i1, p2, k, mesh_vert: ti.template(),
              mesh_polyvertadr: ti.template(), mesh_polyvertnum: ti.template(),
              mesh_polyvert: ti.template(), mesh_polymapadr: ti.template(),
              mesh_polymap: ti.template()):
    """Far end of edge k through the EPA face's vertex (boxEdgeNormals /
    meshEdgeNormals): the other EPA vertex for dim 2, else a neighbour on the shape."""
    res = p2
    if dim == 1:
        if gtype == GEOM_BOX:
            res = _box_corner(pos, mat, size, i1 ^ (1 << k))
        else:
            face = mesh_polymap[mesh_polymapadr[vadr + i1] + k]
            adr = mesh_polyvertadr[polyadr + face]
            nvert = mesh_polyvertnum[polyadr + face]
            found = -1
            for j in range(nvert):
                if found < 0 and mesh_polyvert[adr + j] == i1:
                    found = j
            prev = nvert - 1 if found == 0 else found - 1
            res = mat @ _mesh_vertex(mesh_vert, vadr, mesh_polyvert[adr + prev]) + pos
    return res


@ti.func
def _same_point(a, b):
    """polygonClip's duplicate test: MuJoCo's 1e-15 per coordinate in f64; in f32,
    where a vertex that lies on a clipping edge comes back from the intersection a
    few ulps off, a few ulps of the coordinates."""
    res = False
    if ti.static(config.precision() == "f64"):
        res = _equal3(a, b)
    else:
        scale = ti.max(1.0, ti.max(ti.abs(a).max(), ti.abs(b).max()))
        res = (a - b).norm() <= 1e-6 * scale
    return res


@ti.func
def _area4(a, b, c, d):
    e = (d - a).cross(b - d)
    f = (c - b).cross(a - c)
    return 0.5 * (e + f).norm()


@ti.func
def _next_vertex(i, n):
    return 0 if i == n - 1 else i + 1


@ti.func
def _polygon_quad(buf: ti.template(), off, n):
    """polygonQuad: four vertices of the polygon spanning the largest quadrilateral."""
    a = 0
    b = 1
    c = 2
    d = 3
    res = ti.Vector([0, 1, 2, 3])
    m = _area4(_row(buf, off), _row(buf, off + 1), _row(buf, off + 2), _row(buf, off + 3))
    while a < n:
        while True:
            dn = _next_vertex(d, n)
            mn = _area4(_row(buf, off + a), _row(buf, off + b), _row(buf, off + c),
                        _row(buf, off + dn))
            if mn <= m:
                break
            m = mn
            d = dn
            res = ti.Vector([a, b, c, d])
            while True:
                cn = _next_vertex(c, n)
                mn = _area4(_row(buf, off + a), _row(buf, off + b), _row(buf, off + cn),
                            _row(buf, off + d))
                if mn <= m:
                    break
                m = mn
                c = cn
                res = ti.Vector([a, b, c, d])
            while True:
                bn = _next_vertex(b, n)
                mn = _area4(_row(buf, off + a), _row(buf, off + bn), _row(buf, off + c),
                            _row(buf, off + d))
                if mn <= m:
                    break
                m = mn
                b = bn
                res = ti.Vector([a, b, c, d])
        if b == a:
            b = _next_vertex(b, n)
            if c == b:
                c = _next_vertex(c, n)
                if d == c:
                    d = _next_vertex(d, n)
        a += 1
    return res


@ti.func
def _multicontact(out: ti.template(), st: ti.template(), o1: ti.template(),
                  o2: ti.template(), dist, polyadr1, polyadr2, polycap: ti.template(),
                  mesh_vert: ti.template(), mesh_polynormal: ti.template(),
                  mesh_polyvertadr: ti.template(), mesh_polyvertnum: ti.template(),
                  mesh_polyvert: ti.template(), mesh_polymapadr: ti.template(),
                  mesh_polymapnum: ti.template(), mesh_polymap: ti.template()):
    """MuJoCo's multicontact after EPA for box/mesh pairs: the faces (or an edge and a
    face) of both shapes aligned with the contact, one clipped against the other, give
    up to four contacts at depth ``dist``; returns how many were added (0: keep EPA's
    single contact). st.sv1/sv2/si rows 0-2 hold the final EPA face (see _epa)."""
    direction = st.x2 - st.x1
    dnorm = direction.norm()
    # per side: simplexDim of the EPA face's vertices on that shape, its face set
    dims = ti.Vector([0, 0])
    v1i = ti.Vector([0, 0])
    v2row = ti.Vector([1, 1])
    nset = ti.Vector([0, 0])
    ids = ti.Matrix.zero(ti.i32, 2, 3)
    mapadr = ti.Vector([-1, -1])
    for s in range(2):
        first = s == 0
        i1 = st.si[0, s]
        i2 = st.si[1, s]
        i3 = st.si[2, s]
        dim = 1
        if i1 != i2:
            dim = 2 if i3 == i1 or i3 == i2 else 3
        elif i1 != i3:
            dim = 2
            i2 = i3
            v2row[s] = 2
        dims[s] = dim
        v1i[s] = i1
        cnt, fids, madr = _face_set(
            ti.select(first, o1.type, o2.type), ti.select(first, o1.mat, o2.mat),
            ti.select(first, o1.vadr, o2.vadr), dim, i1, i2, i3,
            ti.select(first, -direction, direction), mesh_polymapadr, mesh_polymapnum,
            mesh_polymap)
        nset[s] = cnt
        for k in ti.static(range(3)):
            ids[s, k] = fids[k]
        mapadr[s] = madr
    # alignedFaces: a face of each shape, normals opposite
    fi = -1
    fj = -1
    i = 0
    while i < nset[0] and fi < 0:
        n1 = _face_normal(o1.type, o1.mat, polyadr1,
                          _set_face(_row(ids, 0), mapadr[0], i, mesh_polymap),
                          mesh_polynormal)
        j = 0
        while j < nset[1] and fi < 0:
            n2 = _face_normal(o2.type, o2.mat, polyadr2,
                              _set_face(_row(ids, 1), mapadr[1], j, mesh_polymap),
                              mesh_polynormal)
            if n1.dot(n2) < -FACE_TOL:
                fi = i
                fj = j
            j += 1
        i += 1
    # else alignedFaceEdge: an edge of the shape with the simpler feature on a face
    # of the other; es is the edge's side
    es = -1
    edge_end = ti.Vector([0.0, 0.0, 0.0])
    if fi < 0:
        if dims[0] < 3 and dims[0] <= dims[1]:
            es = 0
        elif dims[1] < 3:
            es = 1
    if es >= 0:
        first = es == 0
        gtype = ti.select(first, o1.type, o2.type)
        pos = ti.select(first, o1.pos, o2.pos)
        mat = ti.select(first, o1.mat, o2.mat)
        size = ti.select(first, o1.size, o2.size)
        vadr = ti.select(first, o1.vadr, o2.vadr)
        polyadr = ti.select(first, polyadr1, polyadr2)
        p1 = ti.select(first, _row(st.sv1, 0), _row(st.sv2, 0))
        p2 = ti.select(first, _row(st.sv1, v2row[es]), _row(st.sv2, v2row[es]))
        fs = 1 - es
        ftype = ti.select(first, o2.type, o1.type)
        fmat = ti.select(first, o2.mat, o1.mat)
        fpolyadr = ti.select(first, polyadr2, polyadr1)
        nedge = 1
        if dims[es] == 1:
            nedge = 3
            if gtype == GEOM_MESH:
                nedge = ti.min(mesh_polymapnum[vadr + v1i[es]], MAX_POLYVERT)
        found = False
        i = 0
        while i < nset[fs] and not found:
            fn = _face_normal(ftype, fmat, fpolyadr,
                              _set_face(_row(ids, fs), mapadr[fs], i, mesh_polymap),
                              mesh_polynormal)
            j = 0
            while j < nedge and not found:
                end = _edge_end(gtype, pos, mat, size, vadr, polyadr, dims[es], v1i[es], p2,
                                j, mesh_vert, mesh_polyvertadr, mesh_polyvertnum,
                                mesh_polyvert, mesh_polymapadr, mesh_polymap)
                if ti.abs(_normalize(end - p1).dot(fn)) < EDGE_TOL:
                    found = True
                    fi = i
                    edge_end = end
                j += 1
            i += 1
        if not found:
            es = -1
            fi = -1
    nadd = 0
    if fi >= 0:
        # the clipping face (cs: its side) and the clipped polygon: a face or an edge
        cs = 1 if es == 0 else 0
        cfirst = cs == 0
        cface = _set_face(_row(ids, cs), mapadr[cs], fi, mesh_polymap)
        ctype = ti.select(cfirst, o1.type, o2.type)
        cpos = ti.select(cfirst, o1.pos, o2.pos)
        cmat = ti.select(cfirst, o1.mat, o2.mat)
        csize = ti.select(cfirst, o1.size, o2.size)
        cvadr = ti.select(cfirst, o1.vadr, o2.vadr)
        cpolyadr = ti.select(cfirst, polyadr1, polyadr2)
        cnormal = _face_normal(ctype, cmat, cpolyadr, cface, mesh_polynormal)
        approx = cnormal * (-dnorm if es == 1 else dnorm)
        cap = ti.static(2 * polycap)
        buf = ti.Matrix.zero(float, 2 * cap, 3)
        npoly = 2
        if es >= 0:
            _set_row(buf, 0, ti.select(es == 0, _row(st.sv1, 0), _row(st.sv2, 0)))
            _set_row(buf, 1, edge_end)
        else:
            pface = _set_face(_row(ids, 1), mapadr[1], fj, mesh_polymap)
            approx = _face_normal(o2.type, o2.mat, polyadr2, pface, mesh_polynormal) * dnorm
            npoly = _face_size(o2.type, polyadr2, pface, mesh_polyvertnum)
            for iv in range(npoly):
                _set_row(buf, iv, _face_vertex(o2.type, o2.pos, o2.mat, o2.size, o2.vadr,
                                               polyadr2, pface, iv, mesh_vert,
                                              mesh_polyvertadr, mesh_polyvertnum,
                                              mesh_polyvert))
        nclip = _face_size(ctype, cpolyadr, cface, mesh_polyvertnum)
        off = 0  # the current polygon is buf[off:off + npoly], the clipped one the other half
        if nclip >= 3:
            prev = ti.Vector([0.0, 0.0, 0.0])
            for e in range(nclip + 1):
                v = _face_vertex(ctype, cpos, cmat, csize, cvadr, cpolyadr, cface, e % nclip,
                                 mesh_vert, mesh_polyvertadr, mesh_polyvertnum, mesh_polyvert)
                if e > 0:
                    # planeNormal: the plane through edge (prev, v) along the face normal
                    pn = (v - prev).cross((prev + cnormal) - prev)
                    pd = pn.dot(prev)
                    coff = cap - off
                    nout = 0
                    for iv in range(npoly):
                        p = _row(buf, off + iv)
                        q = _row(buf, off + (iv + 1 if iv < npoly - 1 else 0))
                        in1 = (p - prev).dot(pn) > -MINVAL
                        in2 = (q - prev).dot(pn) > -MINVAL
                        if in1 or in2:
                            if not (in1 and in2):
                                # planeIntersect: where PQ crosses the plane
                                pq = q - p
                                temp = pn.dot(pq)
                                if temp != 0.0:
                                    t = (pd - pn.dot(p)) / temp
                                    if t >= 0.0 and t <= 1.0 and nout < cap:
                                        _set_row(buf, coff + nout, p + t * pq)
                                        nout += 1
                            if in2 and nout < cap:
                                _set_row(buf, coff + nout, q)
                                nout += 1
                    off = coff
                    npoly = nout
                prev = v
            if npoly > 4:
                quad = _polygon_quad(buf, off, npoly)
                for iq in range(4):
                    x2 = _row(buf, off + quad[iq])
                    x1 = x2 - approx
                    add(out, dist, 0.5 * (x1 + x2), _normalize(x1 - x2))
                nadd = 4
            elif npoly >= 1:
                kept = ti.Matrix.zero(float, 4, 3)
                for iv in range(npoly):
                    x2 = _row(buf, off + iv)
                    dup = False
                    for jk in range(nadd):
                        if _same_point(_row(kept, jk), x2):
                            dup = True
                    if not dup:
                        _set_row(kept, nadd, x2)
                        nadd += 1
                        x1 = x2 - approx
                        add(out, dist, 0.5 * (x1 + x2), _normalize(x1 - x2))
    return nadd


# ------------------------------------------------------------------------------------
# mjc_ccd, mjc_Convex, mjc_PlaneConvex
# ------------------------------------------------------------------------------------

@ti.func
def _ccd(st: ti.template(), o1: ti.template(), o2: ti.template(),
         cap: ti.template(), mesh_vert: ti.template(), mesh_graph: ti.template(), tol,
         kmax, cutoff):
    """mjc_ccd with one contact: st.dist < 0 is a penetration (witness points x1, x2),
    otherwise the distance up to ``cutoff`` (MAX_LIMIT beyond; intersection only when
    cutoff is 0)."""
    st.nx = 0
    st.nsimplex = 0
    st.dist = 0.0
    shrinkable = o1.type == GEOM_SPHERE or o1.type == GEOM_CAPSULE or o2.type == GEOM_SPHERE or \
        o2.type == GEOM_CAPSULE
    npass = 2 if shrinkable else 1
    margin1 = o1.margin
    margin2 = o2.margin
    done = False
    for p in range(npass):
        if not done:
            shrink = shrinkable and p == 0
            full1 = 0.0
            full2 = 0.0
            c = cutoff
            if shrink:
                if o1.type == GEOM_SPHERE or o1.type == GEOM_CAPSULE:
                    full1 = o1.size[0] + 0.5 * margin1
                    o1.margin = 0.0
                    o1.shrink = 1
                if o2.type == GEOM_SPHERE or o2.type == GEOM_CAPSULE:
                    full2 = o2.size[0] + 0.5 * margin2
                    o2.margin = 0.0
                    o2.shrink = 1
                c = cutoff + full1 + full2
            st.x1 = o1.pos
            st.x2 = o2.pos
            _gjk(st, o1, o2, mesh_vert, mesh_graph, tol, kmax, c)
            if shrink:
                o1.margin = margin1
                o2.margin = margin2
                o1.shrink = 0
                o2.shrink = 0
                if st.dist > tol:  # shallow: inflate the cores' distance
                    n = _normalize(st.x2 - st.x1)
                    st.x1 += full1 * n
                    st.x2 -= full2 * n
                    st.dist -= full1 + full2
                    if st.dist > cutoff:
                        st.dist = MAX_LIMIT
                    done = True
    if not done and st.dist <= tol and st.nsimplex > 1:
        st.dist = 0.0  # assume touching
        pt = _new_polytope(cap[0], cap[1])
        if _polytope(pt, st, o1, o2, mesh_vert, mesh_graph) == EPA_OK:
            _epa(pt, st, o1, o2, mesh_vert, mesh_graph, tol, kmax)


@ti.func
def _axis_rotation(axis, sn):
    """mju_quat2Mat(mju_axisAngle2Quat(axis, angle)) with sin(angle/2) = sn."""
    q = ti.Vector([MULTICCD_COS, axis[0] * sn, axis[1] * sn, axis[2] * sn])
    q00 = q[0] * q[0]
    q01 = q[0] * q[1]
    q02 = q[0] * q[2]
    q03 = q[0] * q[3]
    q11 = q[1] * q[1]
    q12 = q[1] * q[2]
    q13 = q[1] * q[3]
    q22 = q[2] * q[2]
    q23 = q[2] * q[3]
    q33 = q[3] * q[3]
    return ti.Matrix([[q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02)],
                      [2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01)],
                      [2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33]])


@ti.func
def _convex(out: ti.template(), o1: ti.template(), o2: ti.template(), margin, rbound1,
            rbound2, cap: ti.template(), multiccd: ti.template(),
            mesh_vert: ti.template(), mesh_graph: ti.template(), tol, kmax,
            polyadr1, polyadr2, polycap: ti.template(), poly: ti.template()):
    """mjc_Convex: one contact. With multiccd, box/mesh pairs without margin get up to
    four from clipping their touching faces (multicontact), the other pairs but
    spheres and ellipsoids up to four more from perturbed poses. ``poly``: the
    mesh_poly* arrays (normal, vertadr, vertnum, vert, mapadr, mapnum, map)."""
    pos1 = o1.pos
    mat1 = o1.mat
    pos2 = o2.pos
    mat2 = o2.mat
    npass = 5 if ti.static(multiccd) else 1
    perturb = False
    origin = ti.Vector([0.0, 0.0, 0.0])
    frame = ti.Matrix.identity(float, 3)
    tolerance = MULTICCD_TOL * ti.min(rbound1, rbound2)
    for p in range(npass):
        if p == 0 or perturb:
            if p > 0:
                axis = _row(frame, 1 if p <= 2 else 2)
                sn = -MULTICCD_SIN if p % 2 == 1 else MULTICCD_SIN
                rot = _axis_rotation(axis, sn)
                rel1 = origin - pos1
                o1.mat = rot @ mat1
                o1.pos = pos1 - (rot @ rel1 - rel1)
                rel2 = origin - pos2
                o2.mat = rot.transpose() @ mat2
                o2.pos = pos2 - (rot.transpose() @ rel2 - rel2)
            st = _new_status()
            _ccd(st, o1, o2, cap, mesh_vert, mesh_graph, tol, kmax, 0.0)
            if st.dist < 0 and st.nx > 0:
                normal = _normalize(st.x1 - st.x2)
                pos = 0.5 * (st.x1 + st.x2)
                if p == 0:
                    nadd = 0
                    if ti.static(multiccd):
                        # maxContacts > 1 in MuJoCo: contacts from the mesh polygons /
                        # box faces after EPA, and no perturbations
                        native = (o1.type == GEOM_BOX or o1.type == GEOM_MESH) and \
                            (o2.type == GEOM_BOX or o2.type == GEOM_MESH) and margin <= 0
                        if native:
                            nadd = _multicontact(out, st, o1, o2, margin + st.dist,
                                                 polyadr1, polyadr2, polycap, mesh_vert,
                                                 *poly)
                        smooth = o1.type == GEOM_SPHERE or o1.type == GEOM_ELLIPSOID or \
                            o2.type == GEOM_SPHERE or o2.type == GEOM_ELLIPSOID
                        perturb = not native and not smooth
                        origin = pos
                        frame = make_frame(normal, ti.Vector([0.0, 0.0, 0.0]))
                    if nadd == 0:
                        add(out, margin + st.dist, pos, normal)
                else:
                    distinct = True
                    for i in range(out.n):
                        if (_row(out.pos, i) - pos).norm() <= tolerance:
                            distinct = False
                    if distinct:
                        add(out, out.dist[0], pos, normal)
    o1.pos = pos1
    o1.mat = mat1
    o2.pos = pos2
    o2.mat = mat2


@ti.func
def _plane_convex(out: ti.template(), margin, pos1, mat1, o2: ti.template(), rbound2,
                  mesh_vert: ti.template(), mesh_graph: ti.template()):
    """mjc_PlaneConvex: the support point against the plane normal, and for a mesh up to
    two hull vertices around it within the margin."""
    normal = ti.Vector([mat1[0, 2], mat1[1, 2], mat1[2, 2]])
    direction = -normal
    mat2 = o2.mat
    pos2 = o2.pos
    local = mat2.transpose() @ direction
    vec = pos2
    if o2.type == GEOM_ELLIPSOID:
        size = o2.size
        vec = mat2 @ (_normalize(local * size) * size) + pos2
    if o2.type == GEOM_MESH:
        ibest = -1
        if o2.gadr < 0:
            best = -1e10
            for i in range(o2.vnum):
                vdot = local.dot(_mesh_vertex(mesh_vert, o2.vadr, i))
                if vdot > best:
                    best = vdot
                    ibest = i
            o2.midx = ibest
        else:
            ibest, midx = _hillclimb(o2.gadr, o2.vadr, o2.midx, local, mesh_vert,
                                     mesh_graph, 1)
            o2.midx = midx
        if ibest >= 0:
            vec = mat2 @ _mesh_vertex(mesh_vert, o2.vadr, ibest) + pos2
    dist = normal.dot(vec - pos1)
    if dist <= margin:
        add(out, dist, vec - normal * (0.5 * dist), normal)
        if o2.type == GEOM_MESH:
            threshold = normal.dot(pos2 - pos1) - margin
            first = vec - normal * (0.5 * dist)  # the first contact's position
            minsep = TOL_PLANE_MESH * rbound2
            if o2.gadr < 0:
                for i in range(o2.vnum):
                    if out.n < MAX_PLANE_MESH and i != o2.midx:
                        v = _mesh_vertex(mesh_vert, o2.vadr, i)
                        if local.dot(v) > threshold:
                            _add_plane_mesh(out, v, pos1, normal, pos2, mat2, first,
                                            minsep)
            elif o2.midx >= 0:
                gadr = o2.gadr
                numvert = mesh_graph[gadr]
                globalid = gadr + 2 + numvert
                edges = gadr + 2 + 2 * numvert
                i = mesh_graph[gadr + 2 + o2.midx]
                while mesh_graph[edges + i] >= 0 and out.n < MAX_PLANE_MESH:
                    v = _mesh_vertex(mesh_vert, o2.vadr,
                                     mesh_graph[globalid + mesh_graph[edges + i]])
                    if local.dot(v) > threshold:
                        _add_plane_mesh(out, v, pos1, normal, pos2, mat2, first, minsep)
                    i += 1


@ti.func
def _add_plane_mesh(out: ti.template(), v, pos1, normal, pos2, mat2, first, minsep):
    pnt = mat2 @ v + pos2
    if (pnt - first).norm() >= minsep:
        dist = normal.dot(pnt - pos1)
        add(out, dist, pnt - normal * (0.5 * dist), normal)


# ------------------------------------------------------------------------------------
# the narrowphase kernel
# ------------------------------------------------------------------------------------

@ti.func
def _object(worldid, g, margin, geom_type: ti.template(), geom_dataid: ti.template(),
            geom_size: ti.template(), geom_xpos: ti.template(), geom_xmat: ti.template(),
            mesh_vertadr: ti.template(), mesh_vertnum: ti.template(),
            mesh_graphadr: ti.template()):
    pos, mat, size = geom_pose(worldid, g, geom_xpos, geom_xmat, geom_size)
    gtype = geom_type[g]
    mesh_id = geom_dataid[g] if gtype == GEOM_MESH else -1
    return _new_obj(gtype, pos, mat, size, margin, mesh_id, mesh_vertadr, mesh_vertnum,
                    mesh_graphadr)


@ti.kernel
def _narrow_convex(
    cap: ti.template(), multiccd: ti.template(), maxcon: ti.template(),
    polycap: ti.template(), override: ti.template(),
    o_margin: float, tol: float, kmax: ti.i32,
    # candidates: lists[l, KIND_CONVEX, k] for k < counts[l, KIND_CONVEX], l = world or 0
    cand_geom: ND, cand_pair: ND, lists: ND, counts: ND, lanes: ti.i32,
    all_lists: ND,
    # model
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND, geom_margin: ND,
    pair_margin_arr: ND, mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND,
    mesh_vert: ND, mesh_graph: ND, mesh_polyadr: ND, mesh_polynormal: ND,
    mesh_polyvertadr: ND, mesh_polyvertnum: ND, mesh_polyvert: ND, mesh_polymapadr: ND,
    mesh_polymapnum: ND, mesh_polymap: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        n = list_count(worldid, KIND_CONVEX, counts, world_mask)
        k = lane
        while k < n:
            cand = list_entry(worldid, KIND_CONVEX, k, lists, counts, all_lists)
            k += lanes
            g1, g2, margin, near = near_pair(worldid, cand, cand_geom, cand_pair, geom_type,
                                             geom_rbound, geom_margin, pair_margin_arr,
                                             geom_xpos, geom_xmat, override, o_margin)
            if near:
                out = new_list(maxcon)
                rw = worldid % geom_rbound.shape[0]
                o2 = _object(worldid, g2, margin, geom_type, geom_dataid, geom_size,
                             geom_xpos, geom_xmat, mesh_vertadr, mesh_vertnum,
                             mesh_graphadr)
                if geom_type[g1] == GEOM_PLANE:
                    o2.margin = 0.0
                    _plane_convex(out, margin, geom_xpos[worldid, g1], geom_xmat[worldid, g1],
                                  o2, geom_rbound[rw, g2], mesh_vert, mesh_graph)
                else:
                    o1 = _object(worldid, g1, margin, geom_type, geom_dataid, geom_size,
                                 geom_xpos, geom_xmat, mesh_vertadr, mesh_vertnum,
                                 mesh_graphadr)
                    polyadr1 = 0
                    polyadr2 = 0
                    if ti.static(multiccd):
                        if o1.type == GEOM_MESH:
                            polyadr1 = mesh_polyadr[geom_dataid[g1]]
                        if o2.type == GEOM_MESH:
                            polyadr2 = mesh_polyadr[geom_dataid[g2]]
                    _convex(out, o1, o2, margin, geom_rbound[rw, g1], geom_rbound[rw, g2],
                            cap, multiccd, mesh_vert, mesh_graph, tol, kmax, polyadr1,
                            polyadr2, polycap,
                            (mesh_polynormal, mesh_polyvertadr, mesh_polyvertnum,
                             mesh_polyvert, mesh_polymapadr, mesh_polymapnum, mesh_polymap))
                emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                     contact_key)


def _light_compile():
    """Compile the kernels launched inside without Taichi's advanced IR optimizations
    and without fast-math.

    GJK + EPA inline into one large kernel whose compile time grows much faster than
    its size under those passes (the CFG pass above all: over 10 minutes instead of
    ~15 s; Genesis turns cfg_optimization off globally for the same reason); LLVM /
    SPIR-V optimize the result anyway. Without fast-math no operation is reordered
    or fused, so the f64 iterates are MuJoCo's."""
    return compile_options(advanced_optimization=False, fast_math=False)


def _float():
    return ti.f64 if config.precision() == "f64" else ti.f32


def _check_options(opt):
    if opt.disabled("nativeccd"):
        raise NotImplementedError(
            "collision: libccd's MPR (option flag nativeccd=\"disable\") is not "
            "implemented; tiphys always runs MuJoCo's native ccd")


def narrow_convex(m, d, plan, sweep):
    """Convex pairs of the worlds in ``sweep.mask`` (one launch): mjc_Convex and
    mjc_PlaneConvex.

    Reads geom_xpos/geom_xmat and the model's geom, pair and mesh fields; appends
    contacts (dist, pos, normal, sort key) to the buffers like kernels/collision.py's
    ``emit`` (finalize sorts them and sets their parameters)."""
    if plan.convex_count == 0:
        return
    opt = m.opt
    _check_options(opt)
    cap = polytope_capacity(opt.ccd_iterations)
    multiccd = bool(opt.enabled("multiccd"))
    polycap = 0  # clipper room, only compiled in with multiccd
    if multiccd:
        polyvertnum = np.asarray(m.arrays.mesh_polyvertnum)
        polycap = polygon_capacity(polyvertnum.max() if polyvertnum.size else 4)
    with _light_compile():
        _narrow_convex(
            cap, multiccd, plan.convex_maxcon, polycap,
            bool(opt.enabled("override")), float(opt.o_margin), float(opt.ccd_tolerance),
            int(opt.ccd_iterations), plan.cand_geom, plan.cand_pair, *sweep.lists,
            m.geom_type, m.geom_dataid, m.geom_size, m.geom_rbound, m.geom_margin,
            m.pair_margin, m.mesh_vertadr, m.mesh_vertnum, m.mesh_graphadr, m.mesh_vert,
            m.mesh_graph, m.mesh_polyadr, m.mesh_polynormal, m.mesh_polyvertadr,
            m.mesh_polyvertnum, m.mesh_polyvert, m.mesh_polymapadr, m.mesh_polymapnum,
            m.mesh_polymap, d.geom_xpos, d.geom_xmat, sweep.mask, d.ncon, *sweep.emit)


# ------------------------------------------------------------------------------------
# geom distance (mj_geomDistance)
# ------------------------------------------------------------------------------------

@ti.func
def pair_distance(worldid, g1, g2, distmax, mode: ti.template(), detector: ti.template(),
                   maxcon: ti.template(), flip: ti.template(), cap: ti.template(), tol, kmax,
                   geom_type: ti.template(), geom_dataid: ti.template(),
                   geom_size: ti.template(), geom_rbound: ti.template(),
                   mesh_vertadr: ti.template(), mesh_vertnum: ti.template(),
                   mesh_graphadr: ti.template(), mesh_vert: ti.template(),
                   mesh_graph: ti.template(), geom_xpos: ti.template(),
                   geom_xmat: ti.template()):
    """mj_geomDistance of one pair in one world (for geom_distance and the geom
    distance sensors): native ccd for convex pairs, otherwise the pair's collision
    function with distmax as margin and its deepest contact."""
    dist = distmax
    fromto = ti.Vector.zero(float, 6)
    if ti.static(mode == "ccd"):
        o1 = _object(worldid, g1, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                     geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
        o2 = _object(worldid, g2, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                     geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
        st = _new_status()
        _ccd(st, o1, o2, cap, mesh_vert, mesh_graph, tol, kmax, distmax)
        if st.nx > 0:
            for i in ti.static(range(3)):
                fromto[i] = st.x1[i]
                fromto[3 + i] = st.x2[i]
        if st.dist < distmax:
            dist = st.dist
    else:
        ga = g2 if ti.static(flip) else g1
        gb = g1 if ti.static(flip) else g2
        out = new_list(maxcon)
        if ti.static(mode == "plane"):
            o2 = _object(worldid, gb, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                         geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
            rw = worldid % geom_rbound.shape[0]
            _plane_convex(out, distmax, geom_xpos[worldid, ga], geom_xmat[worldid, ga],
                          o2, geom_rbound[rw, gb], mesh_vert, mesh_graph)
        else:
            pos1, mat1, size1 = geom_pose(worldid, ga, geom_xpos, geom_xmat, geom_size)
            pos2, mat2, size2 = geom_pose(worldid, gb, geom_xpos, geom_xmat, geom_size)
            detector(out, distmax, pos1, mat1, size1, pos2, mat2, size2)
        smallest = -1
        for i in range(out.n):
            if out.dist[i] < dist:
                dist = out.dist[i]
                smallest = i
        if smallest >= 0:
            sign = -1.0 if ti.static(flip) else 1.0
            pos = _row(out.pos, smallest)
            nrm = _row(out.normal, smallest)
            for i in ti.static(range(3)):
                fromto[i] = pos[i] - 0.5 * sign * dist * nrm[i]
                fromto[3 + i] = pos[i] + 0.5 * sign * dist * nrm[i]
    return dist, fromto


@ti.kernel
def _geom_distance(
    mode: ti.template(), detector: ti.template(), maxcon: ti.template(), flip: ti.template(),
    cap: ti.template(), g1: ti.i32, g2: ti.i32, distmax: float, tol: float, kmax: ti.i32,
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND,
    mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND, mesh_vert: ND, mesh_graph: ND,
    geom_xpos: ND, geom_xmat: ND, dist_out: ND, fromto_out: ND,
):
    for worldid in range(geom_xpos.shape[0]):
        dist, fromto = pair_distance(
            worldid, g1, g2, distmax, mode, detector, maxcon, flip, cap, tol, kmax,
            geom_type, geom_dataid, geom_size, geom_rbound, mesh_vertadr, mesh_vertnum,
            mesh_graphadr, mesh_vert, mesh_graph, geom_xpos, geom_xmat)
        dist_out[worldid] = dist
        fromto_out[worldid] = fromto


def geom_distance(m, d, g1: int, g2: int, distmax: float):
    """Smallest signed distance between geoms g1 and g2 in every world, as
    mj_geomDistance: (dist (nworld,), fromto (nworld, 6)) as numpy arrays; fromto runs
    from the witness point on g1 to the one on g2 (zeros when nothing within distmax).

    Reads geom_xpos/geom_xmat (run kinematics first). Convex pairs and box-box use the
    native ccd in distance mode; the other pairs (plane, analytic) run their collision
    function with distmax as margin, as MuJoCo does (heightfields: mjc_ConvexHField).
    SDFs raise NotImplementedError."""
    g1, g2 = int(g1), int(g2)
    gtype = np.asarray(m.arrays.geom_type)
    opt = m.opt
    _check_options(opt)
    flip = bool(gtype[g1] > gtype[g2])
    t1, t2 = sorted((int(gtype[g1]), int(gtype[g2])))
    kind = detector_kind(t1, t2)
    nworld = d.nworld
    dist = ti.ndarray(_float(), shape=(nworld,))
    fromto = ti.Vector.ndarray(6, _float(), shape=(nworld,))
    if kind is None:
        return np.full(nworld, float(distmax)), np.zeros((nworld, 6))
    detector, maxcon = 0, 1
    if kind == "convex" and t1 != GEOM_PLANE or (t1, t2) == (GEOM_BOX, GEOM_BOX):
        mode, flip = "ccd", False  # the geoms in the caller's order
    elif kind == "convex":
        mode, maxcon = "plane", MAX_PLANE_MESH
    elif kind == "primitive":
        mode = "primitive"
        detector, maxcon = primitive_table()[(t1, t2)]  # static: every primitive pair
    elif kind == "hfield":
        from .collide_hfield import hfield_distance
        ga, gb = (g2, g1) if flip else (g1, g2)
        hfield_distance(m, d, ga, gb, flip, distmax, dist, fromto)
        return dist.to_numpy().astype(np.float64), fromto.to_numpy().astype(np.float64)
    else:
        raise NotImplementedError(
            f"geom_distance: {GEOM_TYPE_NAMES[t1]}-{GEOM_TYPE_NAMES[t2]} ({kind}) pairs")
    with _light_compile():
        _geom_distance(mode, detector, maxcon, flip, polytope_capacity(opt.ccd_iterations),
                       g1, g2, float(distmax), float(opt.ccd_tolerance),
                       int(opt.ccd_iterations), m.geom_type, m.geom_dataid, m.geom_size,
                       m.geom_rbound, m.mesh_vertadr, m.mesh_vertnum, m.mesh_graphadr,
                       m.mesh_vert, m.mesh_graph, d.geom_xpos, d.geom_xmat, dist, fromto)
    return dist.to_numpy().astype(np.float64), fromto.to_numpy().astype(np.float64)
