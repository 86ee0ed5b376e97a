"""GJK (MuJoCo 3.4.0's engine_collision_gjk.c: gjk, gjkIntersect and the signed-volume
subdistance algorithm).

GJK runs on the Minkowski difference of two objects' support functions
(kernels/convex_support.py). In distance mode it returns the distance and the witness
points up to a cutoff; in intersection mode it stops at a simplex that encloses the
origin, which EPA (kernels/epa.py) then expands. Its state (mjCCDStatus: the simplex,
the witness points, the distance) is one local struct, ``_new_status``.
"""
import taichi as ti

from .consts import MAXVAL, MINVAL
from .convex_support import (MAX_LIMIT, MINVAL2, _det3, _discrete, _equal3, _row, _set_row,
                             _support_pair)

MAXVAL2 = MAXVAL * MAXVAL


# ------------------------------------------------------------------------------------
# GJK's status (mjCCDStatus)
# ------------------------------------------------------------------------------------

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
def _same_sign(a, b):
    # an int, not a bool: vectors of bools break Vulkan pipelines (lavapipe)
    return ti.select((a > 0 and b > 0) or (a < 0 and b < 0), 1, 0)


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
