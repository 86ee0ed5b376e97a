"""Multicontact (MuJoCo 3.4.0's engine_collision_gjk.c: multicontact, polygonClip):
with the ``multiccd`` enable flag, box-mesh and mesh-mesh pairs without margin get up to
four contacts in one pass.

From the vertices of EPA's final face on each shape it finds the box faces / mesh
polygons (``mesh_poly*``, coplanar hull faces merged by the compiler) that may touch;
two faces with opposite normals, or an edge lying on a face, are clipped one against
the other (Sutherland-Hodgman), the clipped polygon pruned to its largest
quadrilateral, and its vertices are the contacts, all at EPA's depth; where nothing
aligns the EPA contact stays alone (kernels/collide_convex.py's ``_convex`` decides).
The clipper's polygon buffers have room for the model's largest polygon (at most
MuJoCo's 150 vertices, see ``polygon_capacity``), are only compiled in with multiccd,
and live in the thread's EPA scratch slot (kernels/epa.py's Polytope.clip, free once
EPA is done): global memory compiles far faster than local arrays of that size.
"""
import numpy as np
import taichi as ti

from . import config
from .collision import add
from .consts import GEOM_BOX, GEOM_MESH, MINVAL
from .convex_support import _equal3, _mesh_vertex, _normalize, _row, _set_row

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


# the model's polygon int arrays multicontact reads, packed into one device array
# (collide_convex's poly_ints: Taichi's SPIR-V backends bind at most 32 arrays per kernel)
POLY_INTS = ("mesh_polyadr", "mesh_polyvertadr", "mesh_polyvertnum", "mesh_polyvert",
             "mesh_polymapadr", "mesh_polymapnum", "mesh_polymap")


def pack_poly_ints(arrays):
    """POLY_INTS of ModelArrays ``arrays`` as one int32 array: a header of their start
    offsets, then each array."""
    parts = [np.asarray(getattr(arrays, name), dtype=np.int32).reshape(-1)
             for name in POLY_INTS]
    starts = len(POLY_INTS) + np.cumsum([0] + [len(p) for p in parts[:-1]])
    return np.concatenate([starts.astype(np.int32)] + parts)


class PolyInts:
    """Array ``which`` (an index in POLY_INTS) of the packed polygon ints: [i] reads its
    entry i in Taichi scope, as the model array of that name would."""

    _data_oriented = True  # Taichi passes the object itself through calls
    _is_taichi_function = False  # made in Taichi scope without a warning (see epa.Polytope)

    def __init__(self, packed, which: int):
        self.packed, self.which = packed, which

    def __getitem__(self, i):
        sub = ti.lang.impl.subscript
        return sub(None, self.packed, sub(None, self.packed, self.which) + i)


def clip_rows(polycap: int) -> int:
    """Rows of 3 floats the clipper uses per thread (two polygons of up to 2 polycap
    vertices, the clipped one and its clip), in the thread's EPA scratch slot; 0
    without multiccd (polycap 0)."""
    return 4 * int(polycap)


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
def _multicontact(out: ti.template(), st: ti.template(), pt: ti.template(),
                  o1: ti.template(), o2: ti.template(), dist, polyadr1, polyadr2,
                  polycap: ti.template(),
                  mesh_vert: ti.template(), mesh_polynormal: ti.template(),
                  mesh_polyvertadr: ti.template(), mesh_polyvertnum: ti.template(),
                  mesh_polyvert: ti.template(), mesh_polymapadr: ti.template(),
                  mesh_polymapnum: ti.template(), mesh_polymap: ti.template()):
    """MuJoCo's multicontact after EPA for box/mesh pairs: the faces (or an edge and a
    face) of both shapes aligned with the contact, one clipped against the other, give
    up to four contacts at depth ``dist``; returns how many were added (0: keep EPA's
    single contact). st.sv1/sv2/si rows 0-2 hold the final EPA face (see _epa); the
    clipper's polygons go to the thread's EPA scratch slot (``pt.clip``)."""
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
        buf = pt.clip  # 2 * cap rows in the thread's EPA scratch (global, not local)
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
