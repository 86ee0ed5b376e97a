"""Support functions of the native convex collision (MuJoCo 3.4.0's mjCCDObj and
``mjc_*_support`` / ``mjc_hillclimbSupport`` of engine_collision_convex.c, ``support``
of engine_collision_gjk.c).

An object is one geom as GJK and EPA see it: type, pose, size and margin, and for a
mesh its vertex and hull-graph addresses plus the last support vertex (a warm start).
Each shape is inflated by margin/2; spheres and capsules may be shrunk to their point
/ segment (``shrink``). A heightfield prism (kernels/collide_hfield.py) is an object
with six vertices of its own and its own support function, and so is a flex element
(kernels/collide_flex_convex.py: up to four vertices and the flex radius).

Support points of meshes follow MuJoCo: all vertices are searched when the mesh has no
hull graph or fewer than 10 vertices, otherwise hill climbing runs on the hull graph.
On a convex hull a vertex no neighbour improves on is the global maximum, so hill
climbing returns the exact support point; only exact ties (same dot product) may pick
a different vertex of the same face than MuJoCo would, as neighbour order in tiphys'
``mesh_graph`` can differ inside Qhull-merged facets.

The small vector helpers shared by GJK, EPA and multicontact live here too.
"""
import taichi as ti

from .consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD, GEOM_MESH,
                     GEOM_SPHERE, MINVAL)

MINVAL2 = MINVAL * MINVAL
MAX_LIMIT = 1e30  # stands for mjMAX_LIMIT (DBL_MAX), also representable in f32
FLT_MAX = 3.4028234663852886e38
MESH_HILLCLIMB_MIN = 10


# ------------------------------------------------------------------------------------
# objects (mjCCDObj)
# ------------------------------------------------------------------------------------

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
    # the types whose support is mat @ ls + pos set ls and rotate: one matrix product
    # inlined per call site instead of one per type (Taichi compile time)
    ls = local
    rotate = False
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
            rotate = True
    if gtype == GEOM_ELLIPSOID:
        le = local * size
        norm2 = le.dot(le)
        if norm2 < MINVAL2:
            res = ti.Vector([mat[0, 0], mat[1, 0], mat[2, 0]]) * size[0] + pos
        else:
            inv = 1.0 / ti.sqrt(norm2)
            ls = le * (inv * size)
            rotate = True
    if gtype == GEOM_CYLINDER:
        n2 = local[0] * local[0] + local[1] * local[1]
        scl = 0.0
        if n2 >= MINVAL2:
            scl = size[0] / ti.sqrt(n2)
        ls = ti.Vector([scl * local[0], scl * local[1],
                        size[1] if local[2] >= 0 else -size[1]])
        rotate = True
    if gtype == GEOM_BOX:
        ls = ti.Vector([size[0] if local[0] >= 0 else -size[0],
                        size[1] if local[1] >= 0 else -size[1],
                        size[2] if local[2] >= 0 else -size[2]])
        vidx = 0
        for k in ti.static(range(3)):
            if ls[k] > 0:
                vidx |= 1 << k
        rotate = True
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
        ls = _mesh_vertex(mesh_vert, vadr, imax)
        rotate = True
    if rotate:
        res = mat @ ls + pos
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


def _is_elem(obj) -> bool:
    """Compile-time test: a flex element object (collide_flex_convex's _new_elem)."""
    return "elem" in obj.keys


@ti.func
def _elem_support(o, direction):
    """mjc_flexSupport of an element: its vertex farthest along ``direction`` (the
    first of equals), pushed out by the flex radius plus margin/2."""
    best = _row(o.elem, 0)
    bdot = best.dot(direction)
    for k in range(1, o.nvert):
        v = _row(o.elem, k)
        vdot = v.dot(direction)
        if vdot > bdot:
            bdot = vdot
            best = v
    return best + direction * (o.radius + 0.5 * o.margin)


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
    elif ti.static(_is_elem(o1)):  # two flex elements
        p1 = _elem_support(o1, direction)
        p2 = _elem_support(o2, -direction)
    elif ti.static(_is_elem(o2)):  # a geom against a flex element (object 2)
        res, vidx, midx = _support_one(
            o1.type, o1.pos, o1.mat, o1.size, o1.margin, o1.shrink, o1.vadr, o1.vnum,
            o1.gadr, o1.vidx, o1.midx, direction, mesh_vert, mesh_graph)
        p1 = res
        o1.vidx = vidx
        o1.midx = midx
        p2 = _elem_support(o2, -direction)
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
