"""Flex elements against geoms and against each other: MuJoCo 3.4.0's
mj_collideGeomElem and mj_collideElems (engine_collision_driver.c) and mjc_ConvexElem
(engine_collision_convex.c).

Each GEOM_ELEM candidate of kernels/collide_flex.py is one (geom, flex, element):

- the geom's bounding sphere (rbound + margin) against the element's box (elements
  with a vertex on the geom's body make no candidate: collide_flex.flex_entries);
- a line element against a sphere, capsule or box: the capsule between its two
  vertices with the flex radius (mj_makeCapsule) and the analytic detectors of
  kernels/collide_primitive.py / collide_box.py (capsule-box with the normals turned
  to point from the geom to the element);
- a sphere against a triangle: mjraw_SphereTriangle;
- everything else: the native ccd (kernels/collide_convex.py's _convex, one contact)
  with the element as a convex object, its vertices inflated by the flex radius
  (convex_support._elem_support). Heightfields are refused on the host.

An ELEM_ELEM candidate (two elements: of two flexes, or of one flex colliding with
itself, then without margin) is tested box against box, then two line elements as
capsules (capsule-capsule), any other two by the native ccd with two element objects.

Three launches: the analytic geom-element pairs (small, exact math), the ccd
geom-element pairs and the element pairs (GJK + EPA, compiled light, as
collide_convex's kernels); each only when the model has such candidates. A fourth,
``flex_sap``, runs each self-colliding flex's midphase per world (serial): the SAP
sweep (O(n^2) in its active elements) or the traversal of the flex BVH against itself,
filling the flex's pair slots in the order MuJoCo meets the pairs.

The sweep's axis is the longest side of the flex BVH's root box, combined node by
node from the element boxes as mj_updateDynamicBVH does (with its rounding: exact ties,
a square cloth pinned at its corners, break as in MuJoCo); the hierarchy is the model's
(bvh_child / bvh_nodeid at flex_bvhadr, compiled as MuJoCo's).
"""
import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .collide_box import capsule_box
from .collide_convex import _check_options, _convex, _light_compile, _object
from .collide_primitive import capsule_capsule, sphere_capsule
from .collision import ND, emit, exact_math, new_list
from .consts import GEOM_BOX, GEOM_CAPSULE, GEOM_FLEX, GEOM_SPHERE, MINVAL
from .epa import Polytope, polytope_capacity, polytope_scratch
from .math import normalize3, param_row, quat2mat, quat_z2vec

GEOM_ELEM = 1  # collide_flex's candidate kinds (that module imports this one)
ELEM_ELEM = 2
ELEM_VERT = 3  # internal: a predefined (element, vertex) pair (mj_collideElemVert)
TET_FACE = 4  # internal: a tetrahedron's face against its opposite vertex (planeVertex)
TET_FACE_VERT = (3, 1, 2, 0)  # per face (0,1,2), (0,2,3), (0,3,1), (1,3,2): the vertex
SELF_SAP = 5  # a slot of a flex's self-collision sweep (mj_collideFlexSAP), per world
SAP_MAX = 0x10000  # mj_SAP's marker of an interval's end
ANALYTIC_MAXCON = 2


def analytic(gtype: int, dim: int) -> bool:
    """Whether mj_collideGeomElem takes an analytic detector for this pair."""
    return (dim == 1 and gtype in (GEOM_SPHERE, GEOM_CAPSULE, GEOM_BOX)) or \
        (dim == 2 and gtype == GEOM_SPHERE)


def maxcon(gtype: int, dim: int) -> int:
    return 2 if dim == 1 and gtype in (GEOM_CAPSULE, GEOM_BOX) else 1


@ti.func
def _make_capsule(v1, v2, radius):
    """mj_makeCapsule: (pos, mat, size) of the capsule between two vertices."""
    dif = v1 - v2
    length = dif.norm()
    pos = (v1 + v2) * 0.5
    mat = quat2mat(quat_z2vec(normalize3(dif)))
    return pos, mat, ti.Vector([radius, 0.5 * length, 0.0])


@ti.func
def _area_sign(p1, p2, p3):
    v = (p1[0] - p3[0]) * (p2[1] - p3[1]) - (p2[0] - p3[0]) * (p1[1] - p3[1])
    return 1.0 if v > 0 else (-1.0 if v < 0 else 0.0)


@ti.func
def _point_segment(p, u, v):
    """Nearest point to p on segment (u, v) in 2D and its distance."""
    uv = v - u
    up = p - u
    a = uv.dot(up) / ti.max(MINVAL, uv.dot(uv))
    res = u + uv * a
    if a <= 0:
        res = u
    elif a >= 1:
        res = v
    return res, ti.sqrt((res[0] - p[0]) * (res[0] - p[0]) + (res[1] - p[1]) * (res[1] - p[1]))


@ti.func
def _sphere_triangle(out: ti.template(), margin, s, rs, t1, t2, t3, rt):
    """mjraw_SphereTriangle: a sphere against a triangle of radius rt."""
    rbound = margin + rs + rt
    S = s - t1
    A = t2 - t1
    B = t3 - t1
    N = normalize3(A.cross(B))
    dst_s = N.dot(S)
    if ti.abs(dst_s) <= rbound:
        P = S - N * dst_s
        len_a = A.norm()
        V1 = normalize3(A)
        V2 = normalize3(N.cross(A))
        o = ti.Vector([0.0, 0.0])
        a = ti.Vector([len_a, 0.0])
        b = ti.Vector([V1.dot(B), V2.dot(B)])
        p = ti.Vector([V1.dot(P), V2.dot(P)])
        sign1 = _area_sign(p, o, a)
        sign2 = _area_sign(p, a, b)
        sign3 = _area_sign(p, b, o)
        X = P
        if not (sign1 == sign2 and sign2 == sign3):
            x0, d0 = _point_segment(p, o, a)
            x1, d1 = _point_segment(p, a, b)
            x2, d2 = _point_segment(p, b, o)
            best = x2
            if d0 < d1 and d0 < d2:
                best = x0
            elif d1 < d2:
                best = x1
            X = V1 * best[0] + V2 * best[1]
        nrm = X - S
        dst = nrm.norm()
        nrm = normalize3(nrm)
        if dst <= rbound:
            dist = dst - rs - rt
            out.n = 0
            out.dist[0] = dist
            for k in ti.static(range(3)):
                out.pos[0, k] = s[k] + nrm[k] * (rs + dist / 2)
                out.normal[0, k] = nrm[k]
                out.tangent[0, k] = 0.0
            out.n = 1


@ti.func
def elem_candidate(worldid, cand, override: ti.template(), o_margin, cand_geom: ti.template(),
                   cand_flex: ti.template(), geom_rbound: ti.template(),
                   geom_margin: ti.template(), flex_margin: ti.template(),
                   flex_dim: ti.template(), flex_elemdataadr: ti.template(),
                   flex_elemadr: ti.template(), geom_xpos: ti.template(),
                   flexelem_aabb: ti.template()):
    """(g, f, e, margin, data, near) of a geom-element candidate: mj_collideGeomElem's
    margin and its bounding test (``data``: the element's first vertex id address; its
    same-body test is static: collide_flex.flex_entries makes no such candidate)."""
    g = cand_geom[0, cand, 0]
    info = cand_flex[cand]
    f = info[0]
    e = info[2]
    margin = 0.0
    if ti.static(override):
        margin = o_margin
    else:
        margin = ti.max(geom_margin[param_row(worldid, geom_margin), g], flex_margin[f])
    dim = flex_dim[f]
    data = flex_elemdataadr[f] + e * (dim + 1)
    near = info[1] == GEOM_ELEM
    if near:
        box = flexelem_aabb[worldid, flex_elemadr[f] + e]
        bound = geom_rbound[param_row(worldid, geom_rbound), g] + margin
        s = geom_xpos[worldid, g]
        for k in ti.static(range(3)):
            if s[k] + bound < box[k] - box[3 + k] or s[k] - bound > box[k] + box[3 + k]:
                near = False
    return g, f, e, margin, data, near


@ti.kernel
def _narrow_elem_analytic(
    override: ti.template(), o_margin: float,
    # candidates
    flex_list: ND, nflexcand: ti.i32, lanes: ti.i32, cand_geom: ND, cand_flex: ND,
    # model
    geom_type: ND, geom_size: ND, geom_rbound: ND, geom_margin: ND,
    flex_margin: ND, flex_radius: ND, flex_dim: ND, flex_elem: ND, flex_elemdataadr: ND,
    flex_elemadr: ND, flex_vertadr: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, flexvert_xpos: ND, flexelem_aabb: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    """The analytic geom-element pairs."""
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        k = lane
        while k < nflexcand and world_mask[worldid] != 0:
            cand = flex_list[k]
            k += lanes
            g, f, e, margin, data, near = elem_candidate(
                worldid, cand, override, o_margin, cand_geom, cand_flex, geom_rbound,
                geom_margin, flex_margin, flex_dim, flex_elemdataadr, flex_elemadr,
                geom_xpos, flexelem_aabb)
            gtype = geom_type[g]
            dim = flex_dim[f]
            line = dim == 1 and (gtype == GEOM_SPHERE or gtype == GEOM_CAPSULE or
                                 gtype == GEOM_BOX)
            if near and (line or (dim == 2 and gtype == GEOM_SPHERE)):
                out = new_list(ANALYTIC_MAXCON)
                vbase = flex_vertadr[f]
                radius = flex_radius[f]
                pos = geom_xpos[worldid, g]
                mat = geom_xmat[worldid, g]
                size = geom_size[param_row(worldid, geom_size), g]
                v0 = flexvert_xpos[worldid, vbase + flex_elem[data]]
                v1 = flexvert_xpos[worldid, vbase + flex_elem[data + 1]]
                if line:
                    cpos, cmat, csize = _make_capsule(v0, v1, radius)
                    if gtype == GEOM_SPHERE:
                        sphere_capsule(out, margin, pos, mat, size, cpos, cmat, csize)
                    elif gtype == GEOM_CAPSULE:
                        capsule_capsule(out, margin, pos, mat, size, cpos, cmat, csize)
                    else:
                        capsule_box(out, margin, cpos, cmat, csize, pos, mat, size)
                        for i in ti.static(range(ANALYTIC_MAXCON)):
                            for j in ti.static(range(3)):
                                out.normal[i, j] = -out.normal[i, j]
                else:
                    v2 = flexvert_xpos[worldid, vbase + flex_elem[data + 2]]
                    _sphere_triangle(out, margin, pos, size[0], v0, v1, v2, radius)
                emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                     contact_key)


@ti.func
def _new_elem(worldid, f, e, data, margin, flex_dim: ti.template(), flex_elem: ti.template(),
              flex_elemadr: ti.template(), flex_vertadr: ti.template(),
              flex_radius: ti.template(), flexvert_xpos: ti.template(),
              flexelem_aabb: ti.template()):
    """A flex element as a ccd object (mjCCDObj of type mjGEOM_FLEX): collide_convex's
    object fields plus its vertices, their count and the flex radius; its center is the
    element box's."""
    box = flexelem_aabb[worldid, flex_elemadr[f] + e]
    o = ti.types.struct(
        type=ti.i32, pos=ti.types.vector(3, float), mat=ti.types.matrix(3, 3, float),
        size=ti.types.vector(3, float), margin=float, shrink=ti.i32, vadr=ti.i32,
        vnum=ti.i32, gadr=ti.i32, vidx=ti.i32, midx=ti.i32,
        elem=ti.types.matrix(4, 3, float), nvert=ti.i32, radius=float)(
        type=GEOM_FLEX, pos=ti.Vector([box[0], box[1], box[2]]),
        mat=ti.Matrix.identity(float, 3), size=ti.Vector.zero(float, 3), margin=margin,
        shrink=0, vadr=0, vnum=0, gadr=-1, vidx=-1, midx=-1,
        elem=ti.Matrix.zero(float, 4, 3), nvert=flex_dim[f] + 1, radius=flex_radius[f])
    for i in range(flex_dim[f] + 1):
        v = flexvert_xpos[worldid, flex_vertadr[f] + flex_elem[data + i]]
        for k in ti.static(range(3)):
            o.elem[i, k] = v[k]
    return o


@ti.kernel
def _narrow_elem_convex(
    cap: ti.template(), override: ti.template(), o_margin: float, tol: float, kmax: ti.i32,
    # candidates
    flex_list: ND, nflexcand: ti.i32, lanes: ti.i32, cand_geom: ND, cand_flex: ND,
    # model
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND, geom_margin: ND,
    mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND, mesh_vert: ND,
    mesh_graph: ND, flex_margin: ND, flex_radius: ND, flex_dim: ND, flex_elem: ND,
    flex_elemdataadr: ND, flex_elemadr: ND, flex_vertadr: ND,
    # scratch: one EPA polytope per thread
    epa_floats: ND, epa_ints: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, flexvert_xpos: ND, flexelem_aabb: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    """mjc_ConvexElem: the geom-element pairs without an analytic detector."""
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        pt = Polytope((epa_floats, epa_ints), worldid * lanes + lane, cap)
        k = lane
        while k < nflexcand and world_mask[worldid] != 0:
            cand = flex_list[k]
            k += lanes
            g, f, e, margin, data, near = elem_candidate(
                worldid, cand, override, o_margin, cand_geom, cand_flex, geom_rbound,
                geom_margin, flex_margin, flex_dim, flex_elemdataadr, flex_elemadr,
                geom_xpos, flexelem_aabb)
            gtype = geom_type[g]
            dim = flex_dim[f]
            line = dim == 1 and (gtype == GEOM_SPHERE or gtype == GEOM_CAPSULE or
                                 gtype == GEOM_BOX)
            if near and not line and not (dim == 2 and gtype == GEOM_SPHERE):
                out = new_list(1)
                o1 = _object(worldid, g, margin, geom_type, geom_dataid, geom_size,
                             geom_xpos, geom_xmat, mesh_vertadr, mesh_vertnum,
                             mesh_graphadr)
                o2 = _new_elem(worldid, f, e, data, margin, flex_dim, flex_elem,
                               flex_elemadr, flex_vertadr, flex_radius, flexvert_xpos,
                               flexelem_aabb)
                rw = param_row(worldid, geom_rbound)
                _convex(out, o1, o2, margin, geom_rbound[rw, g], 0.0, pt, False, mesh_vert,
                        mesh_graph, tol, kmax, 0, 0, 0, ())
                emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                     contact_key)


@ti.func
def _face_corner(face, i):
    """Vertex i (0..2) of tetrahedron face ``face``: (0,1,2), (0,2,3), (0,3,1), (1,3,2)."""
    c = 0
    if face == 0:
        c = i
    elif face == 1:
        c = 0 if i == 0 else i + 1
    elif face == 2:
        c = 0 if i == 0 else (3 if i == 1 else 1)
    else:
        c = 1 if i == 0 else (3 if i == 1 else 2)
    return c


@ti.func
def _plane_vertex(out: ti.template(), t0, t1, t2, v, rad):
    """planeVertex: vertex v against the plane of triangle (t0, t1, t2), both of radius
    rad; the normal points from the face to the vertex side."""
    nrm = normalize3((t1 - t0).cross(t2 - t0))
    dst = (v - t0).dot(nrm)
    if dst > -2 * rad:
        out.dist[0] = -dst - 2 * rad
        for k in ti.static(range(3)):
            out.pos[0, k] = v[k] - 0.5 * dst * nrm[k]
            out.normal[0, k] = -nrm[k]
            out.tangent[0, k] = 0.0
        out.n = 1


@ti.func
def _internal(out: ti.template(), worldid, info, override: ti.template(), o_margin,
              flex_margin: ti.template(), flex_radius: ti.template(),
              flex_dim: ti.template(), flex_elem: ti.template(),
              flex_elemdataadr: ti.template(), flex_elemadr: ti.template(),
              flex_vertadr: ti.template(), flexvert_xpos: ti.template(),
              flexelem_aabb: ti.template()):
    """mj_collideFlexInternal's two parts: a predefined element-vertex pair
    (mj_collideElemVert, detectors without margin; MuJoCo makes such pairs for lines and
    triangles only, so its ccd branch for tetrahedra never runs) and a tetrahedron face
    against its opposite vertex."""
    f = info[0]
    e = info[2]
    vbase = flex_vertadr[f]
    radius = flex_radius[f]
    vert = flexvert_xpos[worldid, vbase + info[4]]
    dim = flex_dim[f]
    data = flex_elemdataadr[f] + e * (dim + 1)
    if info[1] == TET_FACE:
        face = info[5]
        _plane_vertex(out, flexvert_xpos[worldid, vbase + flex_elem[data + _face_corner(face, 0)]],
                      flexvert_xpos[worldid, vbase + flex_elem[data + _face_corner(face, 1)]],
                      flexvert_xpos[worldid, vbase + flex_elem[data + _face_corner(face, 2)]],
                      vert, radius)
    else:
        margin = 0.0
        if ti.static(override):
            margin = o_margin
        else:
            margin = flex_margin[f]
        box = flexelem_aabb[worldid, flex_elemadr[f] + e]
        rbound = margin + radius
        near = True
        for k in ti.static(range(3)):
            if box[k] - box[3 + k] > vert[k] + rbound or box[k] + box[3 + k] < vert[k] - rbound:
                near = False
        if near:
            v0 = flexvert_xpos[worldid, vbase + flex_elem[data]]
            v1 = flexvert_xpos[worldid, vbase + flex_elem[data + 1]]
            if dim == 1:
                cpos, cmat, csize = _make_capsule(v0, v1, radius)
                sphere_capsule(out, 0.0, vert, ti.Matrix.identity(float, 3),
                               ti.Vector([radius, 0.0, 0.0]), cpos, cmat, csize)
            elif dim == 2:
                _sphere_triangle(out, 0.0, vert, radius, v0, v1,
                                 flexvert_xpos[worldid, vbase + flex_elem[data + 2]], radius)


@ti.func
def _apart(f1, e1, f2, e2, flex_dim: ti.template(), flex_elem: ti.template(),
           flex_elemdataadr: ti.template(), flex_vertadr: ti.template(),
           flex_vertbodyid: ti.template()):
    """No vertex of one element on a body of the other (mj_collideElems' skip)."""
    d1 = flex_dim[f1]
    d2 = flex_dim[f2]
    data1 = flex_elemdataadr[f1] + e1 * (d1 + 1)
    data2 = flex_elemdataadr[f2] + e2 * (d2 + 1)
    ok = True
    for i1 in range(d1 + 1):
        b1 = flex_vertbodyid[flex_vertadr[f1] + flex_elem[data1 + i1]]
        for i2 in range(d2 + 1):
            if b1 >= 0 and b1 == flex_vertbodyid[flex_vertadr[f2] + flex_elem[data2 + i2]]:
                ok = False
    return ok


@ti.kernel
def _flex_sap(
    override: ti.template(), o_margin: float,
    nsap: ti.i32, sap_flex: ND, sap_base: ND, sap_slots: ND, sap_tree: ND,
    # the flexes' BVHs (MuJoCo's, pre-order): per flex its first node and node count
    sap_nodeadr: ND, sap_nodenum: ND, sap_child: ND, sap_nodeid: ND,
    # model
    flex_dim: ND, flex_elemnum: ND, flex_elemadr: ND, flex_elemlayer: ND,
    flex_activelayers: ND, flex_margin: ND,
    # data
    flexelem_aabb: ND, world_mask: ND,
    # scratch (per world) and out
    sap_value: ND, sap_id: ND, sap_order: ND, sap_active: ND, sap_elid: ND, sap_node: ND,
    sap_stack: ND, sap_pairs: ND,
):
    """Per world and self-colliding flex: its BVH boxes (mj_updateDynamicBVH), then
    mj_collideTree's traversal (``_traverse``) or mj_collideFlexSAP's sweep
    (``_sweep``); the element pairs fill the flex's slots in that order (the rest:
    -1)."""
    for worldid in range(flexelem_aabb.shape[0]):
        if world_mask[worldid] != 0:
            for s in range(nsap):
                f = sap_flex[s]
                base = sap_base[s]
                e0 = flex_elemadr[f]
                n = 0
                for e in range(flex_elemnum[f]):
                    if flex_dim[f] < 3 or flex_elemlayer[e0 + e] < flex_activelayers[f]:
                        sap_elid[worldid, n] = e
                        n += 1
                # the flex BVH's boxes, leaves up (mj_updateDynamicBVH): its root's sizes
                nadr = sap_nodeadr[s]
                for r in range(sap_nodenum[s]):
                    i = sap_nodenum[s] - 1 - r
                    leaf = sap_nodeid[nadr + i]
                    if leaf >= 0:
                        sap_node[worldid, i] = flexelem_aabb[worldid, e0 + leaf]
                    else:
                        c1 = sap_node[worldid, sap_child[nadr + i][0]]
                        c2 = sap_node[worldid, sap_child[nadr + i][1]]
                        box = ti.Vector.zero(float, 6)
                        for k in ti.static(range(3)):
                            lo = ti.min(c1[k] - c1[3 + k], c2[k] - c2[3 + k])
                            hi = ti.max(c1[k] + c1[3 + k], c2[k] + c2[3 + k])
                            box[k] = 0.5 * (hi + lo)
                            box[3 + k] = 0.5 * (hi - lo)
                        sap_node[worldid, i] = box
                npair = 0
                if sap_tree[s] != 0:
                    npair = _traverse(worldid, f, base, nadr, override, o_margin, flex_margin,
                                      sap_child, sap_nodeid, sap_node, sap_stack, sap_pairs)
                else:
                    npair = _sweep(worldid, base, n, e0, flexelem_aabb, sap_node, sap_value,
                                   sap_id, sap_order, sap_active, sap_elid, sap_pairs)
                for k in range(npair, sap_slots[s]):
                    sap_pairs[worldid, base + k] = ti.Vector([-1, -1])


@ti.func
def _traverse(worldid, f, base, nadr, override: ti.template(), o_margin,
              flex_margin: ti.template(), sap_child: ti.template(), sap_nodeid: ti.template(),
              sap_node: ti.template(), sap_stack: ti.template(), sap_pairs: ti.template()):
    """mj_collideTree of a flex with itself: a stack of node pairs from the root pair,
    leaf pairs (node1 <= node2) to the slots in the order they are popped, internal
    pairs pruned by their boxes (with the flex margin) and split on the side of larger
    (MuJoCo's) surface measure."""
    margin = 0.0
    if ti.static(override):
        margin = o_margin
    else:
        margin = flex_margin[f]
    sap_stack[worldid, 0] = ti.Vector([0, 0])
    nstack = 1
    npair = 0
    while nstack > 0:
        nstack -= 1
        top = sap_stack[worldid, nstack]
        n1 = top[0]
        n2 = top[1]
        if n1 <= n2:
            c1 = sap_child[nadr + n1]
            c2 = sap_child[nadr + n2]
            leaf1 = c1[0] < 0 and c1[1] < 0
            leaf2 = c2[0] < 0 and c2[1] < 0
            if leaf1 and leaf2:
                sap_pairs[worldid, base + npair] = ti.Vector([sap_nodeid[nadr + n1],
                                                              sap_nodeid[nadr + n2]])
                npair += 1
            else:
                b1 = sap_node[worldid, n1]
                b2 = sap_node[worldid, n2]
                apart = False
                for k in ti.static(range(3)):
                    if b1[k] + b1[3 + k] + margin < b2[k] - b2[3 + k] or \
                            b2[k] + b2[3 + k] + margin < b1[k] - b1[3 + k]:
                        apart = True
                if not apart:
                    first = True  # split node 1
                    if leaf1:
                        first = False
                    elif not leaf2:
                        x1 = b1[3] - b1[0]
                        y1 = b1[4] - b1[1]
                        z1 = b1[5] - b1[2]
                        x2 = b2[3] - b2[0]
                        y2 = b2[4] - b2[1]
                        z2 = b2[5] - b2[2]
                        first = x1 * y1 + y1 * z1 + z1 * x1 > x2 * y2 + y2 * z2 + z2 * x2
                    # (MuJoCo's stack holds both trees' node counts; so does this one)
                    for i in ti.static(range(2)):
                        if nstack < sap_stack.shape[1]:
                            if first:
                                if c1[i] != -1:
                                    sap_stack[worldid, nstack] = ti.Vector([c1[i], n2])
                                    nstack += 1
                            else:
                                if c2[i] != -1:
                                    sap_stack[worldid, nstack] = ti.Vector([n1, c2[i]])
                                    nstack += 1
    return npair


@ti.func
def _sweep(worldid, base, n, e0, flexelem_aabb: ti.template(), sap_node: ti.template(),
           sap_value: ti.template(), sap_id: ti.template(), sap_order: ti.template(),
           sap_active: ti.template(), sap_elid: ti.template(), sap_pairs: ti.template()):
    """mj_SAP over the n active elements along the longest side of the flex BVH's root
    box; returns the number of pairs written from slot ``base``."""
    root = sap_node[worldid, 0]
    size = ti.Vector([root[3], root[4], root[5]])
    axis = 2
    if size[0] > size[1] and size[0] > size[2]:
        axis = 0
    elif size[1] > size[2]:
        axis = 1
    ay = 1 if axis == 0 else 0
    az = 1 if axis == 2 else 2
    for i in range(n):
        box = flexelem_aabb[worldid, e0 + sap_elid[worldid, i]]
        sap_value[worldid, 2 * i] = ti.cast(box[axis] - box[3 + axis], ti.f32)
        sap_id[worldid, 2 * i] = i
        sap_value[worldid, 2 * i + 1] = ti.cast(box[axis] + box[3 + axis], ti.f32)
        sap_id[worldid, 2 * i + 1] = i + SAP_MAX
    for i in range(2 * n):  # a stable sort: rank by (value, position)
        vi = sap_value[worldid, i]
        r = 0
        for j in range(2 * n):
            vj = sap_value[worldid, j]
            if vj < vi or (vj == vi and j < i):
                r += 1
        sap_order[worldid, r] = i
    cnt = 0
    npair = 0
    for t in range(2 * n):
        idm = sap_id[worldid, sap_order[worldid, t]]
        if idm < SAP_MAX:
            b2 = flexelem_aabb[worldid, e0 + sap_elid[worldid, idm]]
            for j in range(cnt):
                id1 = sap_active[worldid, j]
                b1 = flexelem_aabb[worldid, e0 + sap_elid[worldid, id1]]
                if not (b1[ay] - b1[3 + ay] > b2[ay] + b2[3 + ay] or
                        b2[ay] - b2[3 + ay] > b1[ay] + b1[3 + ay] or
                        b1[az] - b1[3 + az] > b2[az] + b2[3 + az] or
                        b2[az] - b2[3 + az] > b1[az] + b1[3 + az]):
                    sap_pairs[worldid, base + npair] = ti.Vector(
                        [sap_elid[worldid, id1], sap_elid[worldid, idm]])
                    npair += 1
            sap_active[worldid, cnt] = idm
            cnt += 1
        else:
            rm = idm - SAP_MAX
            found = -1
            for j in range(cnt):
                if found < 0 and sap_active[worldid, j] == rm:
                    found = j
            if found >= 0:
                for j in range(found, cnt - 1):
                    sap_active[worldid, j] = sap_active[worldid, j + 1]
                cnt -= 1
    return npair


@ti.kernel
def _narrow_elem_pairs(
    cap: ti.template(), override: ti.template(), o_margin: float, tol: float, kmax: ti.i32,
    # candidates (sap_pairs: per world, the element pair of each sweep slot)
    flex_list: ND, nflexcand: ti.i32, lanes: ti.i32, cand_flex: ND, sap_pairs: ND,
    # model
    flex_margin: ND, flex_radius: ND, flex_dim: ND, flex_elem: ND, flex_elemdataadr: ND,
    flex_elemadr: ND, flex_vertadr: ND, flex_vertbodyid: ND, mesh_vert: ND, mesh_graph: ND,
    # scratch: one EPA polytope per thread
    epa_floats: ND, epa_ints: ND,
    # data
    flexvert_xpos: ND, flexelem_aabb: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    """mj_collideElems: two lines as capsules (capsule-capsule), any other two elements
    by the native ccd (mjc_ConvexElem); elements of one flex without margin."""
    nworld = flexvert_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        pt = Polytope((epa_floats, epa_ints), worldid * lanes + lane, cap)
        k = lane
        while k < nflexcand and world_mask[worldid] != 0:
            cand = flex_list[k]
            k += lanes
            info = cand_flex[cand]
            if info[1] == ELEM_ELEM or info[1] == SELF_SAP:
                f2 = info[0]
                e2 = info[2]
                f1 = info[4]
                e1 = info[5]
                valid = True
                if info[1] == SELF_SAP:  # the sweep's pair in this slot, if any
                    pr = sap_pairs[worldid, info[2]]
                    e1 = pr[0]
                    e2 = pr[1]
                    valid = e1 >= 0 and _apart(f1, e1, f2, e2, flex_dim, flex_elem,
                                               flex_elemdataadr, flex_vertadr,
                                               flex_vertbodyid)
                margin = 0.0
                if ti.static(override):
                    margin = o_margin
                else:
                    margin = ti.max(flex_margin[f1], flex_margin[f2])
                if f1 == f2:
                    margin = 0.0
                box1 = flexelem_aabb[worldid, flex_elemadr[f1] + ti.max(e1, 0)]
                box2 = flexelem_aabb[worldid, flex_elemadr[f2] + ti.max(e2, 0)]
                near = valid
                for j in ti.static(range(3)):
                    if box1[j] + box1[3 + j] + margin < box2[j] - box2[3 + j] or \
                            box2[j] + box2[3 + j] + margin < box1[j] - box1[3 + j]:
                        near = False
                if near:
                    dim1 = flex_dim[f1]
                    dim2 = flex_dim[f2]
                    data1 = flex_elemdataadr[f1] + e1 * (dim1 + 1)
                    data2 = flex_elemdataadr[f2] + e2 * (dim2 + 1)
                    out = new_list(ANALYTIC_MAXCON)
                    if dim1 == 1 and dim2 == 1:
                        b1 = flex_vertadr[f1]
                        b2 = flex_vertadr[f2]
                        pos1, mat1, size1 = _make_capsule(
                            flexvert_xpos[worldid, b1 + flex_elem[data1]],
                            flexvert_xpos[worldid, b1 + flex_elem[data1 + 1]], flex_radius[f1])
                        pos2, mat2, size2 = _make_capsule(
                            flexvert_xpos[worldid, b2 + flex_elem[data2]],
                            flexvert_xpos[worldid, b2 + flex_elem[data2 + 1]], flex_radius[f2])
                        capsule_capsule(out, margin, pos1, mat1, size1, pos2, mat2, size2)
                    else:
                        o1 = _new_elem(worldid, f1, e1, data1, margin, flex_dim, flex_elem,
                                       flex_elemadr, flex_vertadr, flex_radius, flexvert_xpos,
                                       flexelem_aabb)
                        o2 = _new_elem(worldid, f2, e2, data2, margin, flex_dim, flex_elem,
                                       flex_elemadr, flex_vertadr, flex_radius, flexvert_xpos,
                                       flexelem_aabb)
                        _convex(out, o1, o2, margin, 0.0, 0.0, pt, False, mesh_vert,
                                mesh_graph, tol, kmax, 0, 0, 0, ())
                    emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                         contact_key)
            elif info[1] == ELEM_VERT or info[1] == TET_FACE:
                out = new_list(1)
                _internal(out, worldid, info, override, o_margin, flex_margin, flex_radius,
                          flex_dim, flex_elem, flex_elemdataadr, flex_elemadr, flex_vertadr,
                          flexvert_xpos, flexelem_aabb)
                emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                     contact_key)


def sap_pairs(m, d, plan):
    """The Data's per-world sweep slots of the plan's SAP self-collisions (a 1 x 1
    placeholder without them): (nworld, slots) element pairs."""
    have = d.scratch.flex_sap
    if have is None or have[0] is not plan:
        nw = d.nworld
        tag = d.scratch.tag
        nslot = max(1, plan.sap_nslot)
        maxn = max(1, plan.sap_maxn)
        arrays = dict(
            sap_pairs=tag(ti.Vector.ndarray(2, ti.i32, shape=(nw, nslot))),
            sap_value=tag(ti.ndarray(ti.f32, shape=(nw, 2 * maxn))),
            sap_id=tag(ti.ndarray(ti.i32, shape=(nw, 2 * maxn))),
            sap_order=tag(ti.ndarray(ti.i32, shape=(nw, 2 * maxn))),
            sap_active=tag(ti.ndarray(ti.i32, shape=(nw, maxn))),
            sap_elid=tag(ti.ndarray(ti.i32, shape=(nw, maxn))),
            sap_node=tag(ti.Vector.ndarray(6, config.float_dtype(),
                                           shape=(nw, max(1, plan.sap_maxnode)))),
            sap_stack=tag(ti.Vector.ndarray(2, ti.i32, shape=(nw, 2 * max(1, plan.sap_maxnode)))))
        have = d.scratch.flex_sap = (plan, arrays)
    return have[1]["sap_pairs"]


def flex_sap(m, d, plan, sweep) -> None:
    """The SAP self-collision sweeps of the worlds in ``sweep.mask`` (one launch)."""
    if not plan.sap_nslot:
        return
    sap_pairs(m, d, plan)
    launch(_flex_sap, m, d, override=bool(m.opt.enabled("override")),
           o_margin=float(m.opt.o_margin), nsap=plan.sap_n, sap_flex=plan.sap_flex,
           sap_base=plan.sap_base, sap_slots=plan.sap_slots, sap_tree=plan.sap_tree,
           sap_nodeadr=plan.sap_nodeadr,
           sap_nodenum=plan.sap_nodenum, sap_child=plan.sap_child,
           sap_nodeid=plan.sap_nodeid, world_mask=sweep.mask, **d.scratch.flex_sap[1])


def narrow_elem(m, d, plan, sweep) -> None:
    """The geom-element candidates of the worlds in ``sweep.mask``: one launch for the
    analytic pairs, one for the ccd pairs (each only when the plan has such pairs)."""
    opt = m.opt
    lists = sweep.lists
    dist, pos, frame, key = sweep.emit
    flex_sap(m, d, plan, sweep)
    common = dict(override=bool(opt.enabled("override")), o_margin=float(opt.o_margin),
                  flex_list=plan.flex_list, nflexcand=plan.nflexcand, lanes=lists[2],
                  cand_geom=sweep.cand[0], cand_flex=plan.cand_flex, world_mask=sweep.mask,
                  contact_dist=dist, contact_pos=pos, contact_frame=frame, contact_key=key)
    if plan.elem_analytic:
        with exact_math():
            launch(_narrow_elem_analytic, m, d, **common)
    if plan.elem_convex or plan.elem_elem:
        _check_options(opt)
        cap = polytope_capacity(opt.ccd_iterations)
        epa_floats, epa_ints = polytope_scratch(d, cap, d.nworld * lists[2])
        ccd = dict(cap=cap, tol=float(opt.ccd_tolerance), kmax=int(opt.ccd_iterations),
                   epa_floats=epa_floats, epa_ints=epa_ints)
        with _light_compile():
            if plan.elem_convex:
                launch(_narrow_elem_convex, m, d, **ccd, **common)
            if plan.elem_elem:
                pairs = {k: v for k, v in common.items() if k != "cand_geom"}
                launch(_narrow_elem_pairs, m, d, sap_pairs=sap_pairs(m, d, plan), **ccd,
                       **pairs)


def elem_kinds(a, entries) -> tuple:
    """(analytic, convex): whether the candidates hold geom-element pairs of each kind."""
    geom_type = np.asarray(a.geom_type)
    dims = np.asarray(a.flex_dim)
    kinds = {analytic(int(geom_type[g]), int(dims[info[0]]))
             for g, _, _, info in entries if info is not None and info[1] == GEOM_ELEM}
    return True in kinds, False in kinds
