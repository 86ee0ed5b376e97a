"""Device distance and gradient of MuJoCo's first-party SDF plugins (plugin/sdf/*.cc of
MuJoCo 3.4.0: bolt, bowl, gear, nut, torus), and of mesh octrees (oct_eval: sdf geoms
without a plugin, engine_collision_sdf.c's oct_distance / oct_gradient), as the
collision stage calls them (kernels/collide_sdf.py).

A shape is picked by its kind (SDF_*; tiphys/plugin/sdf.py gives each plugin class its
kind) and reads its attributes as a vector of SDF_NATTR numbers in the plugin's
attribute order (defaults applied). The formulas and their order of operations are the
plugins'; the gradient is analytic for the torus and, as in MuJoCo, a forward
difference with step 1e-8 for the others. In f32 that step is below the resolution of
the coordinates (the difference would be 0 or one rounding step over 1e-8): there the
step is FD_EPS_F32, about the square root of f32's epsilon (a deviation from MuJoCo
that keeps the gradient meaningful; f32 results are approximations anyway).
"""
import taichi as ti

from . import config
from .consts import MINVAL, PI

SDF_BOLT, SDF_BOWL, SDF_GEAR, SDF_NUT, SDF_TORUS = range(5)
SDF_NATTR = 5  # the most attributes one of them has (the gear's)
SDF_OCTREE = 5  # (ray tables) an sdf geom on its mesh's octree, not a plugin shape
FD_EPS_F64 = 1e-8  # the plugins' finite-difference step
FD_EPS_F32 = 5e-4  # tiphys' step in f32


def fd_eps() -> float:
    """The finite-difference step of the precision in use (FD_EPS_F64 or FD_EPS_F32)."""
    return FD_EPS_F64 if config.precision() == "f64" else FD_EPS_F32


@ti.func
def _screw(p, radius):
    rad = ti.sqrt(p[0] * p[0] + p[1] * p[1]) - radius
    sqrt12 = ti.sqrt(2.0) / 2.0
    azimuth = ti.atan2(p[1], p[0])
    wave = p[2] * 12.0 - azimuth / PI / 2.0
    triangle = ti.abs(wave - ti.floor(wave) - 0.5)
    thread = (rad - triangle / 12.0) * sqrt12
    return rad, thread, sqrt12


@ti.func
def _hex_head(p, rad, sqrt12):
    k = 6.0 / PI / 2.0
    angle = -ti.floor(ti.atan2(p[1], p[0]) * k + 0.5) / k
    s0 = ti.sin(angle)
    s1 = ti.sin(angle + PI * 0.5)
    head = (s1 * p[0] + -s0 * p[1]) - 0.5
    head = ti.max(head, ti.abs(p[2] + 0.25) - 0.25)
    return ti.max(head, (p[2] + rad - 0.22) * sqrt12)


@ti.func
def _bolt(p, attr):
    rad, thread, sqrt12 = _screw(p, attr[0])
    bolt = ti.max(thread, -(0.5 - ti.abs(p[2] + 0.5)))
    cone = (p[2] - rad) * sqrt12
    bolt = ti.max(bolt, -(cone + 1.0 * sqrt12))
    return ti.min(bolt, _hex_head(p, rad, sqrt12))


@ti.func
def _nut(p, attr):
    rad, thread, sqrt12 = _screw(p, attr[0])
    cone = (p[2] - rad) * sqrt12
    hole = ti.max(thread, -(cone + 0.5 * sqrt12))
    hole = ti.min(hole, -cone - 0.05 * sqrt12)
    return ti.max(_hex_head(p, rad, sqrt12), -hole)


@ti.func
def _bowl(p, attr):
    height = attr[0]
    radius = attr[1]
    width = ti.sqrt(radius * radius - height * height)
    q0 = ti.sqrt(p[0] * p[0] + p[1] * p[1])
    out = 0.0
    if height * q0 < width * p[2]:
        d0 = q0 - width
        d1 = p[2] - height
        out = ti.sqrt(d0 * d0 + d1 * d1)
    else:
        out = ti.abs(ti.sqrt(q0 * q0 + p[2] * p[2]) - radius)
    return out - attr[2]


@ti.func
def _smooth_union(a, b, k):
    h = ti.min(ti.max(0.5 + 0.5 * (b - a) / k, 0.0), 1.0)
    return b * (1.0 - h) + a * h - k * h * (1.0 - h)


@ti.func
def _mod(x, y):
    return x - y * ti.floor(x / y)


@ti.func
def _gear2d(p, attr):
    D = attr[1]
    N = attr[2]
    psi = 3.096e-5 * N * N - 6.557e-3 * N + 0.551
    R = D / 2.0
    rho = ti.sqrt(p[0] * p[0] + p[1] * p[1])
    Pd = N / D
    P = PI / Pd
    a = 1.0 / Pd
    Ro = (D + 2.0 * a) / 2.0
    h = 2.2 / Pd
    innerR = Ro - h - 0.14 * D
    if attr[4] >= 0.0:
        innerR = attr[4] / 2.0
    out = 0.0
    if innerR - rho > 0.0:
        out = innerR - rho
    elif Ro - rho < -0.2:
        out = rho - Ro
    else:
        Rb = D * ti.cos(psi) / 2.0
        fi = ti.atan2(p[1], p[0]) + attr[0]
        stride = P / R
        inv_alpha = ti.acos(Rb / R)
        inv_phi = ti.tan(inv_alpha) - inv_alpha
        shift = stride / 2.0 - 2.0 * inv_phi
        fia = _mod(fi + shift / 2.0, stride) - shift / 2.0
        fib = _mod(-fi - shift + shift / 2.0, stride) - shift / 2.0
        dista = -1.0e6
        distb = -1.0e6
        if Rb < rho:
            acos_rb = ti.acos(Rb / rho)
            ta = ti.sqrt(rho * rho - Rb * Rb)
            dista = ta - Rb * (fia + acos_rb)
            distb = ta - Rb * (fib + acos_rb)
        cogs = ti.max(dista, distb)
        walls = ti.max(fia - (stride - shift), fib - (stride - shift))
        cogs = ti.max(walls, cogs)
        outer = rho - Ro
        k = 0.0035 * D
        cogs = ti.max(ti.max(outer, cogs),
                      -_smooth_union(ti.max(outer, -cogs), ti.max(cogs, -outer), k))
        cogs = _smooth_union(rho - (Ro - h), cogs, Rb - Ro + h)
        out = ti.max(cogs, -(rho - innerR))
    return out


@ti.func
def _gear(p, attr):
    d2 = _gear2d(p, attr)
    w1 = ti.abs(p[2]) - attr[3] / 2.0
    a0 = ti.max(d2, 0.0)
    a1 = ti.max(w1, 0.0)
    return ti.min(ti.max(d2, w1), 0.0) + ti.sqrt(a0 * a0 + a1 * a1)


@ti.func
def _torus(p, attr):
    q = ti.sqrt(p[0] * p[0] + p[1] * p[1]) - attr[0]
    return ti.sqrt(q * q + p[2] * p[2]) - attr[1]


@ti.func
def sdf_distance(kind, attr, p):
    """The plugin's sdf_distance at ``p`` (its frame)."""
    out = 0.0
    if kind == SDF_BOLT:
        out = _bolt(p, attr)
    elif kind == SDF_BOWL:
        out = _bowl(p, attr)
    elif kind == SDF_GEAR:
        out = _gear(p, attr)
    elif kind == SDF_NUT:
        out = _nut(p, attr)
    else:
        out = _torus(p, attr)
    return out


@ti.func
def torus_gradient(attr, p):
    """The torus' analytic gradient."""
    len_xy = ti.sqrt(p[0] * p[0] + p[1] * p[1])
    q = len_xy - attr[0]
    gq0 = p[0] / len_xy
    gq1 = p[1] / len_xy
    len_qz = ti.max(ti.sqrt(q * q + p[2] * p[2]), MINVAL)
    return ti.Vector([q * gq0 / len_qz, q * gq1 / len_qz, p[2] / len_qz])


@ti.func
def sdf_gradient(kind, attr, p):
    """The plugin's sdf_gradient at ``p``: the torus' analytic one, a forward
    difference (step fd_eps()) for the others."""
    grad = ti.Vector([0.0, 0.0, 0.0])
    if kind == SDF_TORUS:
        grad = torus_gradient(attr, p)
    else:
        eps = ti.static(fd_eps())
        dist0 = sdf_distance(kind, attr, p)
        for i in ti.static(range(3)):
            q = p
            q[i] = p[i] + eps
            grad[i] = (sdf_distance(kind, attr, q) - dist0) / eps
    return grad


# ------------------------------------------------------------------------------------
# mesh octrees (sdf geoms without a plugin): oct_distance / oct_gradient
# ------------------------------------------------------------------------------------

OCT_BOX_EPS = 1e-6  # boxProjection's step into the root box


@ti.func
def _oct_box_projection(p, box):
    """boxProjection: the distance from ``p`` to the box (center, half sizes) when
    outside, the largest (negative) face distance inside; and the point, moved just
    inside the box (OCT_BOX_EPS past the faces it is beyond) when outside."""
    r = ti.Vector([p[0] - box[0], p[1] - box[1], p[2] - box[2]])
    q = ti.Vector([ti.abs(r[0]) - box[3], ti.abs(r[1]) - box[4], ti.abs(r[2]) - box[5]])
    point = p
    out = 0.0
    if q[0] <= 0 and q[1] <= 0 and q[2] <= 0:
        out = ti.max(q[0], ti.max(q[1], q[2]))
    else:
        dist_sqr = 0.0
        for i in ti.static(range(3)):
            if q[i] >= 0:
                dist_sqr += q[i] * q[i]
                step = q[i] + OCT_BOX_EPS
                point[i] -= step if r[i] > 0 else -step
        out = ti.sqrt(dist_sqr)
    return out, point


@ti.func
def _oct_leaf(root, p, oct_child: ti.template(), oct_aabb: ti.template()):
    """findOct: the leaf (its node index) reached from node ``root`` by descending
    into the octant of ``p``, and ``p``'s coordinates in that leaf's box (0..1). MuJoCo
    also checks that ``p`` lies in each node's box (1e-8 slack) and stops with an error
    when it does not, which after the projection into the root box does not happen."""
    node = root
    coord = ti.Vector([0.0, 0.0, 0.0])
    for _ in range(100):  # (findOct's iteration bound)
        box = oct_aabb[node]
        for j in ti.static(range(3)):
            lo = box[j] - box[3 + j]
            hi = box[j] + box[3 + j]
            coord[j] = (p[j] - lo) / (hi - lo)
        child = oct_child[node]
        octant = (1 if coord[0] >= 0.5 else 0) + (2 if coord[1] >= 0.5 else 0) \
            + (4 if coord[2] >= 0.5 else 0)
        leaf = True
        next_node = -1
        for k in ti.static(range(8)):
            if child[k] != -1:
                leaf = False
            if octant == k:
                next_node = child[k]
        if leaf:
            break
        node = root + next_node
    return node, coord


@ti.func
def _oct_corner_weight(j: ti.template(), coord, axis: ti.template()):
    """Trilinear weight of corner ``j`` at ``coord`` (axis -1), or its derivative along
    ``axis`` (0, 1, 2) with respect to the leaf coordinates."""
    w = 1.0
    for a in ti.static(range(3)):
        if ti.static(a == axis):
            w *= ti.static(1.0 if (j >> a) & 1 else -1.0)
        elif ti.static((j >> a) & 1):
            w *= coord[a]
        else:
            w *= 1 - coord[a]
    return w


@ti.func
def oct_eval(root, p, want_grad, oct_child: ti.template(), oct_aabb: ti.template(),
             oct_coeff: ti.template()):
    """(oct_distance, oct_gradient) of the octree rooted at node ``root`` at ``p`` (the
    mesh's frame); the gradient only with ``want_grad``. Inside the root box: trilinear
    interpolation of the leaf's corner coefficients, and its analytic gradient, taken
    (as MuJoCo's) with respect to the leaf's unit coordinates. Outside: the value at
    the point projected into the box plus the distance to the box, and the gradient a
    forward difference of that (step fd_eps()). One call site of the leaf search, in a
    loop over the points the difference needs."""
    eps = ti.static(fd_eps())
    # (no dynamically indexed local vectors: on lavapipe's SPIR-V they moved results)
    dist0 = 0.0
    diff = ti.Vector([0.0, 0.0, 0.0])
    grad = ti.Vector([0.0, 0.0, 0.0])
    outside = False
    for k in range(4):
        if k == 0 or (want_grad and outside):
            x = p
            for i in ti.static(range(3)):
                if k == i + 1:
                    x[i] = p[i] + eps
            box_dist, point = _oct_box_projection(x, oct_aabb[root])
            node, coord = _oct_leaf(root, point, oct_child, oct_aabb)
            coeff = oct_coeff[node]
            sdf = 0.0
            for j in ti.static(range(8)):
                sdf += _oct_corner_weight(j, coord, -1) * coeff[j]
            value = sdf + box_dist if box_dist > 0 else sdf
            if k == 0:
                dist0 = value
                outside = box_dist > 0
                if want_grad and not outside:
                    for j in ti.static(range(8)):
                        for a in ti.static(range(3)):
                            grad[a] += _oct_corner_weight(j, coord, a) * coeff[j]
            for i in ti.static(range(3)):
                if k == i + 1:
                    diff[i] = value
    if want_grad and outside:
        grad = ti.Vector([(diff[0] - dist0) / eps, (diff[1] - dist0) / eps,
                          (diff[2] - dist0) / eps])
    return dist0, grad
