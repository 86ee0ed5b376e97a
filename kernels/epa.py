"""EPA (MuJoCo 3.4.0's engine_collision_gjk.c: polytope2/3/4, epa, horizon).

When GJK (kernels/gjk.py) finds the objects overlapping, its simplex seeds a polytope
that EPA expands towards the boundary of the Minkowski difference; the nearest face
gives the penetration depth and the witness points.

One slot per thread of global scratch arrays (Polytope) stands in for MuJoCo's
polytope buffers: vertices 5 + N and faces 6 N for N >= ccd_iterations (MuJoCo's own
sizing for N > 170; below that it keeps room for 1020 faces, which 35 iterations never
came close to in the tests: 163 at most). Every backend runs the same code, in f64 and
f32.
"""
import taichi as ti

from . import config
from .consts import MINVAL
from .convex_support import (MAX_LIMIT, MINVAL2, _det3, _discrete, _row, _set_row,
                             _support_pair)
from .gjk import _project_origin_plane, _tri_cofactors, _tri_minors


# ------------------------------------------------------------------------------------
# the polytope
# ------------------------------------------------------------------------------------

def polytope_capacity(ccd_iterations: int):
    """(vertices, faces) of the EPA polytope: MuJoCo's 5 + N and 6 N for N iterations,
    N rounded up (35, the default, then powers of two) so that nearby iteration
    counts share one compiled kernel."""
    n = 35
    while n < int(ccd_iterations):
        n = 64 if n == 35 else 2 * n
    return 5 + n, 6 * n


def polytope_scratch(d, cap, nslot: int, clip_rows: int = 0):
    """(floats, ints): room for ``nslot`` polytopes of capacity ``cap`` (one per thread
    of a launch, see Polytope) and, in the same floats, ``clip_rows`` rows of 3 for
    multiccd's clipper; made once per Data and capacity, grown when a launch needs
    more slots or clipper rows than any before it."""
    store = d.scratch.epa
    if store is None:
        store = d.scratch.epa = {}
    nv, nf = cap
    nfloat = max(FLOATS_V * nv + FLOATS_F * nf, 3 * int(clip_rows))
    have = store.get(cap)
    if have is None or have[0] < nslot or have[1] < nfloat:
        tag = d.scratch.tag
        if have is not None:
            nslot, nfloat = max(int(nslot), have[0]), max(nfloat, have[1])
        nslot = max(int(nslot), 1)
        have = store[cap] = (nslot, nfloat, (
            tag(ti.ndarray(config.float_dtype(), shape=(nslot, nfloat))),
            tag(ti.ndarray(ti.i32, shape=(nslot, INTS_V * nv + INTS_F * nf)))))
    return have[2]


FLOATS_V, FLOATS_F = 9, 4  # per vertex: pv, pv1, pv2; per face: fv, fd2
INTS_V, INTS_F = 2, 11  # per vertex: pi; per face: fvert, fadj, fidx, map, hidx, hedge, stack


class _Block:
    """``rows`` x ``width`` entries of one thread's slot in a scratch array, indexed
    [row, col] (or [row] when width is 1) in Taichi scope, like the local matrices they
    replace."""

    _data_oriented = True  # Taichi passes the object itself through assignments and calls

    def __init__(self, arr, slot, base: int, width: int):
        self.arr, self.slot, self.base, self.width = arr, slot, base, width

    def __getitem__(self, key):
        if isinstance(key, tuple):
            row, col = key
            k = self.base + row * self.width + col
        else:
            k = self.base + key
        return ti.lang.impl.subscript(None, self.arr, self.slot, k)


class Polytope:
    """EPA's polytope (MuJoCo's mjPolytope): its vertices (pv, the Minkowski difference,
    and pv1/pv2, the points on each object, pi their vertex ids) and faces (fvert
    vertices, fadj neighbours, fv the origin's projection, fd2 its squared norm, fidx
    the face's place in ``map``, the faces EPA may still expand), the horizon
    (hidx/hedge) and _horizon's stack, in slot ``slot`` of the global scratch arrays
    ``scratch`` = polytope_scratch(...); the counts are locals of the thread. ``clip``
    is the same slot's floats as rows of 3, for multiccd's polygon clipping after EPA.

    Made in Taichi scope, once per thread (``slot`` unique among the launch's threads),
    and passed down as a template. Global scratch rather than local matrices: Taichi
    compiles local arrays of this size (hundreds of rows) into code that takes LLVM
    seconds to JIT every process (and SPIR-V minutes), the same code in global memory
    a fraction of that."""

    _data_oriented = True
    # Taichi warns on a call of a plain Python callable in Taichi scope unless it has
    # this attribute; False keeps it from being treated as a ti.func otherwise
    _is_taichi_function = False

    def __init__(self, scratch, slot, cap):
        floats, ints = scratch
        nv, nf = cap
        self.nv, self.nf = nv, nf
        slot = ti.lang.impl.expr_init(slot)
        self.pv = _Block(floats, slot, 0, 3)
        self.pv1 = _Block(floats, slot, 3 * nv, 3)
        self.pv2 = _Block(floats, slot, 6 * nv, 3)
        self.fv = _Block(floats, slot, 9 * nv, 3)
        self.fd2 = _Block(floats, slot, 9 * nv + 3 * nf, 1)
        self.pi = _Block(ints, slot, 0, 2)
        base = 2 * nv
        self.fvert = _Block(ints, slot, base, 3)
        self.fadj = _Block(ints, slot, base + 3 * nf, 3)
        self.fidx = _Block(ints, slot, base + 6 * nf, 1)
        self.map = _Block(ints, slot, base + 7 * nf, 1)
        self.hidx = _Block(ints, slot, base + 8 * nf, 1)
        self.hedge = _Block(ints, slot, base + 9 * nf, 1)
        self.stack = _Block(ints, slot, base + 10 * nf, 1)
        # multiccd's clipper (kernels/multiccd.py), after EPA is done with the slot
        self.clip = _Block(floats, slot, 0, 3)
        self.nverts = ti.lang.impl.expr_init(0)
        self.nfaces = ti.lang.impl.expr_init(0)
        self.nmap = ti.lang.impl.expr_init(0)
        self.nedges = ti.lang.impl.expr_init(0)


@ti.func
def _clear_polytope(pt: ti.template()):
    """An empty polytope (the arrays are written before they are read)."""
    pt.nverts = 0
    pt.nfaces = 0
    pt.nmap = 0
    pt.nedges = 0


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
    # a degenerate face keeps stale fv/fd2/fidx: never read, every caller stops on d2 0
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
    nf = ti.static(pt.nf)
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
    nf = ti.static(pt.nf)
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
