"""SDF narrowphase: MuJoCo 3.4.0's mjc_SDF (src/engine/engine_collision_sdf.c) for an
sdf geom (with an SDF plugin, or without one: its mesh's octree, kernels/sdf.py's
oct_eval) against a sphere, capsule, ellipsoid, cylinder, box, mesh (mjc_MeshSDF: the
mesh's octree where MuJoCo finds one, see geom_octrees, else its distance by ray
casting, see _geom_eval) or another sdf geom.

The pair is (g1, g2) with g2 the sdf geom (the one of higher type); everything runs in
g2's frame, the other geom's frame reached through (rotation21, offset21). As in
MuJoCo:

- start points: the intersection of g1's box (geom_aabb) with g2's box seen from g1's
  frame (its eight corners mapped), empty -> no contact; sdf_initpoints points of the
  Halton sequence (bases 2, 3, 5) over it, each mapped into g2's frame through g1's
  frame and back (MuJoCo's round trip, its rounding included);
- from each point: sdf_iterations steps of gradient descent with backtracking line
  search (Armijo factor 0.1, step halving from 2 down to 1e-4, stop when a step does
  not improve) on the "collision" objective A + B + |max(A, B)| (A: g2's distance at
  x, B: g1's at x seen from g1), then one step on the intersection max(A, B);
- a contact where that distance is <= 0 and the point is new (no earlier contact point
  of the pair within mjMINVAL), its normal minus the normalized difference of the two
  normalized gradients (the mid-surface's), its position the point moved by -dist/2
  along the normal, in the world frame; at most one contact per start point (and at
  most mjMAXCONPAIR). The margin is not used (MuJoCo's mjc_SDF ignores it).

The work runs in two passes (narrow_sdf): one thread per start point does its
descent and stores the result, then one thread per world takes each pair's results in
start order as above. The arithmetic is that of one loop over the start points, so
results do not change with the split; no thread runs a long loop (Mesa's lavapipe cuts
a thread's loops after 65535 iterations in all).

The distances and gradients of primitive geoms are MuJoCo's (geomDistance /
geomGradient: boxes inside use a radial field that turns into the face normals), those
of plugin shapes come from kernels/sdf.py. The descent is sensitive to rounding (the
plugins' gradients are forward differences with step 1e-8): the arithmetic follows
MuJoCo's order of operations. In f32 the plugins' difference step is larger
(kernels/sdf.py: fd_eps) and results are approximations.
"""
import taichi as ti

from .bind import launch
from .collide_convex import _light_compile
from .collide_hfield import _new_best
from .collision import KEY_STRIDE, ND, emit_one, list_count, list_entry, near_pair
from .consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD,
                     GEOM_MESH, GEOM_PLANE, GEOM_SDF, GEOM_SPHERE, MAXCONPAIR, MAXVAL,
                     MINVAL)
from .loop_limit import CUT_COLLISION, limit_reached, probe as loop_probe
from .math import mul_mat_t, normalize3, param_row, quat_mul, quat_normalize
from .ray import ray_mesh
from .sdf import SDF_NATTR, SDF_TORUS, fd_eps, oct_eval, sdf_distance, torus_gradient

KIND_SDF = 3  # index of "sdf" in collision.KINDS

SDF_COLLISION, SDF_INTERSECTION, SDF_MIDSURFACE = 0, 1, 2  # mjtSDFType's used here
ARMIJO = 0.1  # stepGradient's c
SHRINK = 0.5  # its rho
ALPHA_MIN = 1e-4  # its amin


# ------------------------------------------------------------------------------------
# MuJoCo's small vector routines, in its order of operations
# ------------------------------------------------------------------------------------

@ti.func
def _norm3(v):
    return ti.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


@ti.func
def _mat_vec(mat, v):
    return ti.Vector([mat[i, 0] * v[0] + mat[i, 1] * v[1] + mat[i, 2] * v[2]
                      for i in ti.static(range(3))])


@ti.func
def _rot_vec_quat(v, q):
    """mju_rotVecQuat."""
    out = v
    if v[0] == 0 and v[1] == 0 and v[2] == 0:
        out = ti.Vector([0.0, 0.0, 0.0])
    elif not (q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0):
        t0 = q[0] * v[0] + q[2] * v[2] - q[3] * v[1]
        t1 = q[0] * v[1] + q[3] * v[0] - q[1] * v[2]
        t2 = q[0] * v[2] + q[1] * v[1] - q[2] * v[0]
        out = ti.Vector([v[0] + 2 * (q[2] * t2 - q[3] * t1),
                         v[1] + 2 * (q[3] * t0 - q[1] * t2),
                         v[2] + 2 * (q[1] * t1 - q[2] * t0)])
    return out


@ti.func
def _mat2quat(m):
    """mju_mat2Quat."""
    q = ti.Vector([0.0, 0.0, 0.0, 0.0])
    if m[0, 0] + m[1, 1] + m[2, 2] > 0:
        q[0] = 0.5 * ti.sqrt(1 + m[0, 0] + m[1, 1] + m[2, 2])
        q[1] = 0.25 * (m[2, 1] - m[1, 2]) / q[0]
        q[2] = 0.25 * (m[0, 2] - m[2, 0]) / q[0]
        q[3] = 0.25 * (m[1, 0] - m[0, 1]) / q[0]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        q[1] = 0.5 * ti.sqrt(1 + m[0, 0] - m[1, 1] - m[2, 2])
        q[0] = 0.25 * (m[2, 1] - m[1, 2]) / q[1]
        q[2] = 0.25 * (m[0, 1] + m[1, 0]) / q[1]
        q[3] = 0.25 * (m[0, 2] + m[2, 0]) / q[1]
    elif m[1, 1] > m[2, 2]:
        q[2] = 0.5 * ti.sqrt(1 - m[0, 0] + m[1, 1] - m[2, 2])
        q[0] = 0.25 * (m[0, 2] - m[2, 0]) / q[2]
        q[1] = 0.25 * (m[0, 1] + m[1, 0]) / q[2]
        q[3] = 0.25 * (m[1, 2] + m[2, 1]) / q[2]
    else:
        q[3] = 0.5 * ti.sqrt(1 - m[0, 0] - m[1, 1] + m[2, 2])
        q[0] = 0.25 * (m[1, 0] - m[0, 1]) / q[3]
        q[1] = 0.25 * (m[0, 2] + m[2, 0]) / q[3]
        q[2] = 0.25 * (m[1, 2] + m[2, 1]) / q[3]
    return quat_normalize(q)


@ti.func
def _quat2mat(q):
    """mju_quat2Mat."""
    out = ti.Matrix.identity(float, 3)
    if not (q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0):
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
        out = ti.Matrix([[q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02)],
                         [2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01)],
                         [2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33]])
    return out


@ti.func
def _map_pose(pos1, quat1, pos2, quat2):
    """mapPose: (pos, mat) of (pos2, quat2)^-1 o (pos1, quat1), via mju_negPose and
    mju_mulPose."""
    negquat = ti.Vector([quat2[0], -quat2[1], -quat2[2], -quat2[3]])
    negpos = -_rot_vec_quat(pos2, negquat)
    quat = quat_normalize(quat_mul(negquat, quat1))
    pos = _rot_vec_quat(pos1, negquat) + negpos
    return pos, _quat2mat(quat)


@ti.func
def _halton(index, base):
    """mju_Halton."""
    n0 = index
    b = ti.cast(base, float)
    f = 1 / b
    hn = 0.0
    while n0 > 0:
        n1 = n0 // base
        r = n0 - n1 * base
        hn += f * r
        f /= b
        n0 = n1
    return hn


# ------------------------------------------------------------------------------------
# geomDistance / geomGradient
# ------------------------------------------------------------------------------------

@ti.func
def _radial_field(a, x, size):
    field = normalize3(ti.Vector([-size[0] / a[0], -size[1] / a[1], -size[2] / a[2]]))
    for i in ti.static(range(3)):
        if x[i] < 0:
            field[i] = -field[i]
    return field


@ti.func
def _geom_distance(gtype, size, kind, attr, x):
    out = 0.0
    if gtype == GEOM_PLANE:
        out = x[2]
    elif gtype == GEOM_SPHERE:
        out = _norm3(x) - size[0]
    elif gtype == GEOM_BOX:
        a = ti.Vector([ti.abs(x[0]) - size[0], ti.abs(x[1]) - size[1],
                       ti.abs(x[2]) - size[2]])
        if a[0] >= 0 or a[1] >= 0 or a[2] >= 0:
            b = ti.Vector([ti.max(a[0], 0.0), ti.max(a[1], 0.0), ti.max(a[2], 0.0)])
            out = _norm3(b) + ti.min(ti.max(a[0], ti.max(a[1], a[2])), 0.0)
        else:
            b = _radial_field(a, x, size)
            t0 = -a[0] / ti.abs(b[0])
            t1 = -a[1] / ti.abs(b[1])
            t2 = -a[2] / ti.abs(b[2])
            out = -ti.min(t0, ti.min(t1, t2)) * _norm3(b)
    elif gtype == GEOM_CAPSULE:
        a = ti.Vector([x[0], x[1], x[2] - ti.min(ti.max(x[2], -size[1]), size[1])])
        out = _norm3(a) - size[0]
    elif gtype == GEOM_ELLIPSOID:
        a = ti.Vector([x[0] / size[0], x[1] / size[1], x[2] / size[2]])
        b = ti.Vector([a[0] / size[0], a[1] / size[1], a[2] / size[2]])
        k0 = _norm3(a)
        k1 = _norm3(b)
        out = k0 * (k0 - 1.0) / k1
    elif gtype == GEOM_CYLINDER:
        a0 = ti.sqrt(x[0] * x[0] + x[1] * x[1]) - size[0]
        a1 = ti.abs(x[2]) - size[1]
        b0 = ti.max(a0, 0.0)
        b1 = ti.max(a1, 0.0)
        out = ti.min(ti.max(a0, a1), 0.0) + ti.sqrt(b0 * b0 + b1 * b1)
    return out


@ti.func
def _geom_gradient(gtype, size, kind, attr, x):
    grad = ti.Vector([0.0, 0.0, 0.0])
    if gtype == GEOM_PLANE:
        grad[2] = 1.0
    elif gtype == GEOM_SPHERE:
        c = _norm3(x)
        grad = ti.Vector([x[0] * (1.0 / c), x[1] * (1.0 / c), x[2] * (1.0 / c)])
    elif gtype == GEOM_BOX:
        a = ti.Vector([ti.abs(x[0]) - size[0], ti.abs(x[1]) - size[1],
                       ti.abs(x[2]) - size[2]])
        k = 0 if a[0] > a[1] else 1
        lbest = 2 if a[2] > a[k] else k
        if a[lbest] < 0:
            grad = _radial_field(a, x, size)
        else:
            b = ti.Vector([ti.max(a[0], 0.0), ti.max(a[1], 0.0), ti.max(a[2], 0.0)])
            c = _norm3(b)
            for i in ti.static(range(3)):
                if a[i] > 0:
                    grad[i] = b[i] / c * x[i] / ti.abs(x[i])
    elif gtype == GEOM_CAPSULE:
        a = ti.Vector([x[0], x[1], x[2] - ti.min(ti.max(x[2], -size[1]), size[1])])
        c = _norm3(a)
        grad = ti.Vector([a[0] / c, a[1] / c, a[2] / c])
    elif gtype == GEOM_ELLIPSOID:
        a = ti.Vector([x[0] / size[0], x[1] / size[1], x[2] / size[2]])
        b = ti.Vector([a[0] / size[0], a[1] / size[1], a[2] / size[2]])
        k0 = _norm3(a)
        k1 = _norm3(b)
        inv0 = 1.0 / k0
        inv1 = 1.0 / k1
        df0 = (2.0 * k0 - 1.0) * inv1
        df1 = k0 * (k0 - 1.0) * inv1 * inv1
        for i in ti.static(range(3)):
            grad[i] = b[i] * inv0 * df0 - b[i] * inv1 / (size[i] * size[i]) * df1
        grad = normalize3(grad)
    elif gtype == GEOM_CYLINDER:
        c = ti.sqrt(x[0] * x[0] + x[1] * x[1])
        e = ti.abs(x[2])
        a0 = c - size[0]
        a1 = e - size[1]
        tiny = 1.0 / MAXVAL
        ga = ti.Vector([x[0] / ti.max(c, tiny), x[1] / ti.max(c, tiny),
                        x[2] / ti.max(e, tiny)])
        j = 0 if a0 > a1 else 1
        aj = a0 if j == 0 else a1
        if aj < 0:
            if j == 0:
                grad = ti.Vector([ga[0], ga[1], 0.0])
            else:
                grad = ti.Vector([0.0, 0.0, ga[2]])
        else:
            b0 = ti.max(a0, 0.0)
            b1 = ti.max(a1, 0.0)
            bnorm = ti.max(ti.sqrt(b0 * b0 + b1 * b1), tiny)
            grad = ti.Vector([ga[0] * b0 / bnorm, ga[1] * b0 / bnorm, ga[2] * b1 / bnorm])
    return grad


# ------------------------------------------------------------------------------------
# the pair's objectives (mjc_distance / mjc_gradient)
# ------------------------------------------------------------------------------------

@ti.func
def _new_pair(g2, type2, size2, kind2, attr2, oct2, g1, type1, size1, kind1, attr1, oct1,
              relpos, relmat):
    """mjSDF: geom 0 is g2 (the sdf, evaluated at x), geom 1 is g1 (at relmat x +
    relpos); oct: the root node of the octree a geom is evaluated on, or -1."""
    return ti.types.struct(
        geom0=ti.i32, geom1=ti.i32,
        type0=ti.i32, size0=ti.types.vector(3, float), kind0=ti.i32,
        attr0=ti.types.vector(SDF_NATTR, float), oct0=ti.i32, type1=ti.i32,
        size1=ti.types.vector(3, float), kind1=ti.i32,
        attr1=ti.types.vector(SDF_NATTR, float), oct1=ti.i32,
        relpos=ti.types.vector(3, float), relmat=ti.types.matrix(3, 3, float))(
        geom0=g2, geom1=g1,
        type0=type2, size0=size2, kind0=kind2, attr0=attr2, oct0=oct2, type1=type1,
        size1=size1, kind1=kind1, attr1=attr1, oct1=oct1, relpos=relpos, relmat=relmat)


@ti.func
def _geom_eval(worldid, geomid, gtype, size, kind, attr, oct, p, want_grad,
               rays: ti.template(), meshes: ti.template(), octs: ti.template()):
    """(distance, gradient) of one geom at ``p`` (its frame); the gradient only with
    ``want_grad``. One call site of the plugin shapes, in a loop over the points a
    forward difference needs (kernels stay small enough to compile quickly).

    A geom with an octree (``oct`` its root node, see sdf_arrays: an sdf geom without a
    plugin, or a mesh geom where MuJoCo finds one) takes kernels/sdf.py's oct_eval;
    ``octs`` is (whether the model has such geoms: only then is it compiled in,
    oct_child, oct_aabb, oct_coeff).
    A mesh without one (mjc_MeshSDF) as MuJoCo 3.4.0's geomDistance: the ray from the
    point (in the world) toward the world's origin cast on the mesh (mj_rayMesh, in
    units of that ray's length, compared with its length as MuJoCo does), cast backwards
    and negated when past it; its gradient is +-(1, 1, 1) by the first ray."""
    dist = 0.0
    grad = ti.Vector([0.0, 0.0, 0.0])
    if ti.static(octs[0]) and oct >= 0:
        dist, grad = oct_eval(oct, p, want_grad, octs[1], octs[2], octs[3])
    elif ti.static(meshes) and gtype == GEOM_MESH:
        a = _mat_vec(rays[3][worldid, geomid], p) + rays[2][worldid, geomid]
        ray = -a
        r = _norm3(ray)
        first = -1.0
        for k in range(2):
            if k == 0 or first > r:
                x = ray_mesh(worldid, geomid, a, ray if k == 0 else -ray, *rays)
                if k == 0:
                    first = x
                    dist = x
                else:
                    dist = -x
        if want_grad:
            sign = 1.0 if first > r else -1.0
            grad = ti.Vector([sign, sign, sign])
    elif gtype == GEOM_SDF:
        eps = ti.static(fd_eps())
        n = 4 if want_grad and kind != SDF_TORUS else 1
        vals = ti.Vector([0.0, 0.0, 0.0, 0.0])
        for k in range(n):
            q = p
            if k > 0:
                q[k - 1] = p[k - 1] + eps
            vals[k] = sdf_distance(kind, attr, q)
        dist = vals[0]
        if want_grad:
            if kind == SDF_TORUS:
                grad = torus_gradient(attr, p)
            else:
                grad = ti.Vector([(vals[1] - vals[0]) / eps, (vals[2] - vals[0]) / eps,
                                  (vals[3] - vals[0]) / eps])
    else:
        dist = _geom_distance(gtype, size, kind, attr, p)
        if want_grad:
            grad = _geom_gradient(gtype, size, kind, attr, p)
    return dist, grad


@ti.func
def _pair_eval(worldid, s, x, want_grad, rays: ti.template(), meshes: ti.template(),
               octs: ti.template()):
    """(A, B, grad A, grad B in g2's frame): both geoms' distances (A: g2 at x, B: g1
    at x seen from g1) and, with ``want_grad``, their gradients."""
    y = _mat_vec(s.relmat, x) + s.relpos
    dists = ti.Vector([0.0, 0.0])
    grads = ti.Matrix.zero(float, 2, 3)
    for g in range(2):
        gtype = s.type0 if g == 0 else s.type1
        size = s.size0 if g == 0 else s.size1
        kind = s.kind0 if g == 0 else s.kind1
        attr = s.attr0 if g == 0 else s.attr1
        p = x if g == 0 else y
        geomid = s.geom0 if g == 0 else s.geom1
        oct = s.oct0 if g == 0 else s.oct1
        dist, grad = _geom_eval(worldid, geomid, gtype, size, kind, attr, oct, p,
                                want_grad, rays, meshes, octs)
        dists[g] = dist
        for k in ti.static(range(3)):
            grads[g, k] = grad[k]
    g0 = ti.Vector([grads[0, 0], grads[0, 1], grads[0, 2]])
    g1 = mul_mat_t(s.relmat, ti.Vector([grads[1, 0], grads[1, 1], grads[1, 2]]))
    return dists[0], dists[1], g0, g1


@ti.func
def _objective(objective, a, b, ga, gb):
    """mjc_distance and mjc_gradient of the pair from its geoms' values."""
    dist = 0.0
    grad = ti.Vector([0.0, 0.0, 0.0])
    if objective == SDF_COLLISION:
        dist = a + b + ti.abs(ti.max(a, b))
        grad = ga + gb
        pick = ga if a > b else gb
        grad += pick * (1.0 if ti.max(a, b) > 0 else -1.0)
    elif objective == SDF_INTERSECTION:
        dist = ti.max(a, b)
        grad = ga if a > b else gb
    else:
        dist = a - b
        grad = normalize3(normalize3(ga) - normalize3(gb))
    return dist, grad


@ti.func
def _bad(v):
    bad = False
    for i in ti.static(range(3)):
        if ti.math.isnan(v[i]) or v[i] > MAXVAL or v[i] < -MAXVAL:
            bad = True
    return bad


@ti.func
def _local_box(aabb):
    lo = ti.Vector([aabb[0] - aabb[3], aabb[1] - aabb[4], aabb[2] - aabb[5]])
    hi = ti.Vector([aabb[0] + aabb[3], aabb[1] + aabb[4], aabb[2] + aabb[5]])
    return lo, hi


@ti.func
def _contact_point(worldid, s, x0, niter, rays: ti.template(), meshes: ti.template(),
                   octs: ti.template()):
    """From a start point: stepGradient on the collision objective (``niter`` steps),
    then one on the intersection, then the mid-surface gradient there: (distance,
    point, gradient). Written as one loop over the evaluations (a state machine) so
    that the geoms' functions are inlined once: each pass evaluates the pair at ``p``,
    with gradients when a descent step starts or at the end."""
    x = x0
    dist = MAXVAL
    grad = ti.Vector([0.0, 0.0, 0.0])
    base = x0
    dist0 = 0.0
    alpha = 0.0
    wolfe = 0.0
    phase = 0  # 0 collision descent, 1 intersection descent, 2 mid-surface gradient
    steps = niter
    step = 0
    starting = True  # the next evaluation starts a descent step (gradient at x)
    p = x0
    running = True
    while running:
        want_grad = starting or phase == 2
        a, b, ga, gb = _pair_eval(worldid, s, p, want_grad, rays, meshes, octs)
        value, slope = _objective(phase, a, b, ga, gb)
        advance = False  # this descent is over: go to the next phase
        if phase == 2:
            grad = slope
            running = False
        elif starting:
            if step >= steps:
                advance = True
            elif _bad(slope):
                dist = MAXVAL
                advance = True
            else:
                grad = slope
                base = p
                dist0 = value
                alpha = 2.0
                wolfe = -ARMIJO * alpha * (grad[0] * grad[0] + grad[1] * grad[1]
                                           + grad[2] * grad[2])
                starting = False
        else:
            dist = value
            x = p
            if not (alpha > ALPHA_MIN and dist - dist0 > wolfe):
                step += 1
                starting = True
                if dist0 < dist:
                    advance = True
        if advance:
            phase += 1
            step = 0
            steps = 1
            starting = True
            if phase == 2:
                p = x  # (the mid-surface gradient at the final point)
        if running and not starting:
            alpha *= SHRINK
            wolfe *= SHRINK
            p = ti.Vector([base[0] + -alpha * grad[0], base[1] + -alpha * grad[1],
                           base[2] + -alpha * grad[2]])
        elif running and starting and phase < 2:
            p = x
    return dist, x, grad


@ti.func
def _pair_setup(worldid, g1, g2, geom_type: ti.template(), geom_size: ti.template(),
                geom_aabb: ti.template(), sdf_kind: ti.template(), sdf_attr: ti.template(),
                sdf_oct: ti.template(), geom_xpos: ti.template(), geom_xmat: ti.template()):
    """mjc_SDF's set-up for the pair (g1, g2) of world ``worldid``: whether the boxes
    overlap, their intersection (lo, hi) in g1's frame, the pair for _pair_eval, the two
    maps a start point takes (g1's frame to itself, then into g2's: MuJoCo's round trip)
    and g2's pose (quat2, pos2) that contacts are reported in. Both passes (_descend,
    _accept) compute it, with the same arithmetic."""
    sw = param_row(worldid, geom_size)
    pos1 = geom_xpos[worldid, g1]
    pos2 = geom_xpos[worldid, g2]
    quat1 = _mat2quat(geom_xmat[worldid, g1])
    quat2 = _mat2quat(geom_xmat[worldid, g2])
    offset2, rotation2 = _map_pose(pos1, quat1, pos1, quat1)
    offset21, rotation21 = _map_pose(pos2, quat2, pos1, quat1)
    offset12, rotation12 = _map_pose(pos1, quat1, pos2, quat2)

    # the boxes in g1's frame and their intersection
    lo1, hi1 = _local_box(geom_aabb[g1])
    c2 = geom_aabb[g2]
    lo2 = ti.Vector([MAXVAL, MAXVAL, MAXVAL])
    hi2 = ti.Vector([-MAXVAL, -MAXVAL, -MAXVAL])
    for i in ti.static(range(8)):
        corner = ti.Vector([c2[0] + c2[3] if i & 1 else c2[0] - c2[3],
                            c2[1] + c2[4] if i & 2 else c2[1] - c2[4],
                            c2[2] + c2[5] if i & 4 else c2[2] - c2[5]])
        v = _mat_vec(rotation21, corner) + offset21
        for k in ti.static(range(3)):
            lo2[k] = ti.min(lo2[k], v[k])
            hi2[k] = ti.max(hi2[k], v[k])
    lo = ti.Vector([ti.max(lo1[k], lo2[k]) for k in ti.static(range(3))])
    hi = ti.Vector([ti.min(hi1[k], hi2[k]) for k in ti.static(range(3))])
    overlap = not (hi[0] < lo[0] or hi[1] < lo[1] or hi[2] < lo[2])
    s = _new_pair(g2, geom_type[g2], geom_size[sw, g2], sdf_kind[g2], sdf_attr[g2],
                  sdf_oct[g2], g1, geom_type[g1], geom_size[sw, g1], sdf_kind[g1],
                  sdf_attr[g1], sdf_oct[g1], offset21, rotation21)
    return overlap, lo, hi, s, rotation2, offset2, rotation12, offset12, quat2, pos2


@ti.func
def _descend(worldid, slot, start, g1, g2, niter, geom_type: ti.template(),
             geom_size: ti.template(), geom_aabb: ti.template(), sdf_kind: ti.template(),
             sdf_attr: ti.template(), sdf_oct: ti.template(), geom_xpos: ti.template(),
             geom_xmat: ti.template(), descents: ti.template(), rays: ti.template(),
             meshes: ti.template(), octs: ti.template()):
    """mjc_SDF's descent from start point ``start`` of the pair (g1, g2): the Halton
    point over the boxes' intersection, _contact_point from it, and its result (distance,
    point, gradient) stored in descents[worldid, slot, start] (nothing when the boxes do
    not overlap)."""
    overlap, lo, hi, s, rotation2, offset2, rotation12, offset12, _q, _p = _pair_setup(
        worldid, g1, g2, geom_type, geom_size, geom_aabb, sdf_kind, sdf_attr, sdf_oct,
        geom_xpos, geom_xmat)
    if overlap:
        x = ti.Vector([lo[0] + (hi[0] - lo[0]) * _halton(start, 2),
                       lo[1] + (hi[1] - lo[1]) * _halton(start, 3),
                       lo[2] + (hi[2] - lo[2]) * _halton(start, 5)])
        y = _mat_vec(rotation2, x) + offset2
        x = _mat_vec(rotation12, y) + offset12
        dist, x, grad = _contact_point(worldid, s, x, niter, rays, meshes, octs)
        descents[worldid, slot, start] = ti.Vector([dist, x[0], x[1], x[2], grad[0],
                                                    grad[1], grad[2]])


@ti.func
def _accept(worldid, cand, slot, g1, g2, ninit, record: ti.template(), best: ti.template(),
            geom_type: ti.template(), geom_size: ti.template(), geom_aabb: ti.template(),
            sdf_kind: ti.template(), sdf_attr: ti.template(), sdf_oct: ti.template(),
            geom_xpos: ti.template(), geom_xmat: ti.template(), descents: ti.template(),
            points: ti.template(), ncon: ti.template(), contact_dist: ti.template(),
            contact_pos: ti.template(), contact_frame: ti.template(),
            contact_key: ti.template()):
    """mjc_SDF's contacts of the pair (g1, g2) from its descents (_descend), in start
    order: a point that ended inside both geoms (distance <= 0) and is new (no earlier
    accepted point within mjMINVAL) is a contact, at most MAXCONPAIR of them; emitted with
    keys of candidate ``cand``, or with ``record`` only the deepest one below best.dist
    kept in ``best`` (mj_geomDistance). The accepted points so far are kept in the
    world's row of ``points``."""
    overlap, _lo, _hi, _s, _r2, _o2, _r12, _o12, quat2, pos2 = _pair_setup(
        worldid, g1, g2, geom_type, geom_size, geom_aabb, sdf_kind, sdf_attr, sdf_oct,
        geom_xpos, geom_xmat)
    if overlap:
        cnt = 0
        for start in range(ninit):
            r = descents[worldid, slot, start]
            dist = r[0]
            x = ti.Vector([r[1], r[2], r[3]])
            grad = ti.Vector([r[4], r[5], r[6]])
            known = False
            for i in range(MAXCONPAIR):  # (a fixed trip count)
                if i < cnt:
                    q = points[worldid, i]
                    d0 = x[0] - q[0]
                    d1 = x[1] - q[1]
                    d2 = x[2] - q[2]
                    if ti.sqrt(d0 * d0 + d1 * d1 + d2 * d2) < MINVAL:
                        known = True
            if not dist > 0 and not known and cnt < MAXCONPAIR:
                points[worldid, cnt] = x
                normal = _rot_vec_quat(-grad, quat2)
                pos = _rot_vec_quat(x, quat2) + pos2
                pos = pos + normal * (-dist / 2)
                if ti.static(record):
                    if dist < best.dist:
                        best.dist = dist
                        best.pos = pos
                        best.normal = normal
                        best.n += 1
                else:
                    emit_one(worldid, cand * KEY_STRIDE + cnt, dist, pos, normal,
                             ti.Vector([0.0, 0.0, 0.0]), ncon, contact_dist, contact_pos,
                             contact_frame, contact_key)
                cnt += 1


@ti.func
def _slot_pair(worldid, k, override: ti.template(), o_margin, cand_geom: ti.template(),
               cand_pair: ti.template(), lists: ti.template(), counts: ti.template(),
               all_lists: ti.template(), geom_type: ti.template(),
               geom_rbound: ti.template(), geom_margin: ti.template(),
               pair_margin_arr: ti.template(), geom_xpos: ti.template(),
               geom_xmat: ti.template(), world_mask: ti.template()):
    """(cand, g1, g2, live) of the world's k-th SDF candidate: live when it exists, its
    bounding spheres are near and g1 is no height field (mjc_HFieldSDF: no contacts, as
    in MuJoCo 3.4.0)."""
    cand, g1, g2, live = 0, 0, 0, False
    if k < list_count(worldid, KIND_SDF, counts, world_mask):
        cand = list_entry(worldid, KIND_SDF, k, lists, counts, all_lists)
        g1, g2, _, near = near_pair(worldid, cand, cand_geom, cand_pair, geom_type,
                                    geom_rbound, geom_margin, pair_margin_arr, geom_xpos,
                                    geom_xmat, override, o_margin)
        live = near and geom_type[g1] != GEOM_HFIELD
    return cand, g1, g2, live


@ti.kernel
def _narrow_sdf_descend(
    override: ti.template(), meshes: ti.template(), octrees: ti.template(),
    o_margin: float, niter: ti.i32, slot0: ti.i32, probe: ti.i32,
    # candidates: lists[l, KIND_SDF, k] for k < counts[l, KIND_SDF], l = world or 0
    cand_geom: ND, cand_pair: ND, lists: ND, counts: ND, all_lists: ND,
    # model
    geom_type: ND, geom_size: ND, geom_aabb: ND, geom_rbound: ND, geom_margin: ND,
    pair_margin_arr: ND, sdf_kind: ND, sdf_attr: ND, sdf_oct: ND,
    # mesh octrees
    oct_child: ND, oct_aabb: ND, oct_coeff: ND,
    # meshes (mjc_MeshSDF's rays: ray.py's tables)
    geom_int: ND, mesh_vert: ND, tri_vert: ND, bvh_box: ND, bvh_node: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, world_mask: ND,
    # out: per (world, candidate slot - slot0, start point) the descent's result; the
    # threads a loop limiter cut (kernels/loop_limit.py)
    descents: ND, loop_cut: ND,
):
    for worldid, slot, start in ti.ndrange(geom_xpos.shape[0], descents.shape[1],
                                           descents.shape[2]):
        _, g1, g2, live = _slot_pair(worldid, slot0 + slot, override, o_margin, cand_geom,
                                     cand_pair, lists, counts, all_lists, geom_type,
                                     geom_rbound, geom_margin, pair_margin_arr, geom_xpos,
                                     geom_xmat, world_mask)
        if live:
            _descend(worldid, slot, start, g1, g2, niter, geom_type, geom_size, geom_aabb,
                     sdf_kind, sdf_attr, sdf_oct, geom_xpos, geom_xmat, descents,
                     (geom_int, geom_size, geom_xpos, geom_xmat, mesh_vert, tri_vert,
                      bvh_box, bvh_node), meshes, (octrees, oct_child, oct_aabb, oct_coeff))
        if limit_reached(probe):
            ti.atomic_add(loop_cut[worldid][CUT_COLLISION], 1)


@ti.kernel
def _narrow_sdf_emit(
    override: ti.template(), o_margin: float, slot0: ti.i32, probe: ti.i32,
    cand_geom: ND, cand_pair: ND, lists: ND, counts: ND, all_lists: ND,
    # model
    geom_type: ND, geom_size: ND, geom_aabb: ND, geom_rbound: ND, geom_margin: ND,
    pair_margin_arr: ND, sdf_kind: ND, sdf_attr: ND, sdf_oct: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, world_mask: ND, descents: ND, points: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
    loop_cut: ND,
):
    # (one thread per world, its candidates in order: the redo pass of worlds whose
    # emission buffer overflowed needs that order; and on lavapipe a (world, lane)
    # variant whose threads walked their candidates in a while loop stopped after a
    # pair's second or third start point)
    nslot = descents.shape[1]
    for worldid in range(geom_xpos.shape[0]):
        for slot in range(nslot):
            cand, g1, g2, live = _slot_pair(worldid, slot0 + slot, override, o_margin,
                                            cand_geom, cand_pair, lists, counts, all_lists,
                                            geom_type, geom_rbound, geom_margin,
                                            pair_margin_arr, geom_xpos, geom_xmat,
                                            world_mask)
            if live:
                best = _new_best(0.0)  # (unused: contacts are emitted)
                _accept(worldid, cand, slot, g1, g2, descents.shape[2], False, best,
                        geom_type, geom_size, geom_aabb, sdf_kind, sdf_attr, sdf_oct,
                        geom_xpos, geom_xmat, descents, points, ncon, contact_dist,
                        contact_pos, contact_frame, contact_key)
        if limit_reached(probe):
            ti.atomic_add(loop_cut[worldid][CUT_COLLISION], 1)


def geom_octrees(arrays):
    """Per geom, the root node of the mesh octree MuJoCo 3.4.0's SDF collision
    evaluates it on, or -1: an sdf geom without a plugin, its mesh's (mesh_octadr of
    geom_dataid); a mesh geom, mesh_octadr[g] when mesh_octnum[g] != 0 (MuJoCo passes
    the geom id where geomDistance reads the mesh arrays: the octree of the mesh whose
    index is the geom's, not the geom's own mesh; for a geom id past nmesh it reads
    past the arrays' end, tiphys takes no octree). NotImplementedError for an sdf
    geom without a plugin whose mesh has no octree (MuJoCo stops with an error)."""
    import numpy as np
    ngeom = int(arrays.sizes.get("ngeom", 0))
    nmesh = int(arrays.sizes.get("nmesh", 0))
    gtype = np.asarray(arrays.geom_type).reshape(-1)[:ngeom]
    plugin = np.asarray(arrays.geom_plugin).reshape(-1)[:ngeom]
    dataid = np.asarray(arrays.geom_dataid).reshape(-1)[:ngeom]
    octadr = np.asarray(arrays.mesh_octadr).reshape(-1)[:nmesh]
    octnum = np.asarray(arrays.mesh_octnum).reshape(-1)[:nmesh]
    root = np.full(max(1, ngeom), -1, dtype=np.int32)
    for g in range(ngeom):
        if gtype[g] == GEOM_SDF and plugin[g] == -1:
            if dataid[g] < 0 or octadr[dataid[g]] < 0:
                raise NotImplementedError(
                    f"collision: sdf geom {g} without a plugin: its mesh has no octree")
            root[g] = octadr[dataid[g]]
        elif gtype[g] == GEOM_MESH and g < nmesh and octnum[g] != 0:
            root[g] = octadr[g]
    return root


def sdf_shapes(m):
    """Per geom (at least one entry), its SDF plugin's shape (kernels/sdf.py kind, -1
    for other geoms) and its attributes (defaults applied), as numpy arrays."""
    import numpy as np

    ngeom = int(m.ngeom)
    kind = np.full(max(1, ngeom), -1, dtype=np.int32)
    attr = np.zeros((max(1, ngeom), SDF_NATTR))
    for plugin in m.plugins:  # (tiphys.plugin.sdf's classes list their geoms)
        for g, (shape, values) in getattr(plugin, "sdf_geoms", {}).items():
            kind[g] = shape
            attr[g] = values
    return kind, attr


def sdf_arrays(m, d):
    """Per geom, its SDF plugin's shape (kernels/sdf.py kind, -1 for other geoms), its
    attributes (defaults applied) and the root of the octree it is evaluated on
    (geom_octrees), as device arrays made once per Model and Data."""
    have = d.scratch.sdf_geom
    if have is not None and have[0] is m.arrays:
        return have[1:4]
    import numpy as np

    kind, attr = sdf_shapes(m)
    root = geom_octrees(m.arrays)
    from .config import float_dtype
    kind_arr = d.scratch.tag(ti.ndarray(ti.i32, shape=kind.shape))
    kind_arr.from_numpy(kind)
    attr_arr = d.scratch.tag(ti.Vector.ndarray(SDF_NATTR, float_dtype(),
                                               shape=(attr.shape[0],)))
    attr_arr.from_numpy(attr.astype(np.float64 if float_dtype() == ti.f64 else np.float32))
    root_arr = d.scratch.tag(ti.ndarray(ti.i32, shape=root.shape))
    root_arr.from_numpy(root)
    d.scratch.sdf_geom = (m.arrays, kind_arr, attr_arr, root_arr, bool((root >= 0).any()))
    return kind_arr, attr_arr, root_arr


def _mesh_pairs(m, pairs) -> bool:
    """Whether mesh-sdf pairs are collided (a collision plan's candidates, or a set of
    two geoms): only then is the mesh's ray casting compiled in. (Vulkan once refused
    them: lavapipe lost contacts, which was its loop limit cutting a thread that ran all
    of a world's descents, see narrow_sdf; on the corpus' mesh.xml lavapipe's f32
    contacts now equal the CPU's.)"""
    import numpy as np
    cached = getattr(pairs, "sdf_meshes", None)
    if cached is not None:
        return cached
    gtype = np.asarray(m.arrays.geom_type).reshape(-1)
    if isinstance(pairs, set):
        found = bool(any(int(gtype[g]) == GEOM_MESH for g in pairs))
    elif pairs.dynamic:
        found = (GEOM_MESH, GEOM_SDF) in pairs.type_pairs
    else:
        found = bool(any(int(gtype[g1]) == GEOM_MESH and int(gtype[g2]) == GEOM_SDF
                         for g1, g2, _ in pairs.cand_host if g2 >= 0))
    if not isinstance(pairs, set):
        pairs.sdf_meshes = found  # (once per collision plan)
    return found


def _octree_pairs(m, d) -> bool:
    """Whether the model has geoms evaluated on octrees (geom_octrees): only then is
    the octree's code compiled in (on lavapipe's SPIR-V its presence alone moved the
    plugin shapes' f32 descent)."""
    sdf_arrays(m, d)
    return d.scratch.sdf_geom[4]


def _ray_tables(m) -> dict:
    """The ray tables mjc_MeshSDF's rays read (ray.py's RayTables)."""
    from .ray import ray_tables
    t = ray_tables(m)
    return {"geom_int": t.geom_int, "tri_vert": t.tri_vert, "bvh_box": t.bvh_box,
            "bvh_node": t.bvh_node}


DESCENT_ENTRIES = 1 << 20  # descents scratch entries (7 floats each) to aim for, at most


def _descents(d, nslot, ninit):
    """The descents scratch: per (world, candidate slot, start point) the distance,
    point and gradient of one start's descent (_descend), read by _accept. Sized for
    ``nslot`` slots, or as many as keep it near DESCENT_ENTRIES entries (then the
    candidates run in chunks of that many slots); returns (array, slots per chunk)."""
    chunk = int(max(1, min(nslot, DESCENT_ENTRIES // max(1, d.nworld * ninit))))
    shape = (d.nworld, chunk, max(1, ninit))
    if d.scratch.sdf_descents is None:
        d.scratch.sdf_descents = {}
    arr = d.scratch.sdf_descents.get(shape)
    if arr is None:
        from .config import float_dtype
        arr = d.scratch.sdf_descents[shape] = d.scratch.tag(
            ti.Vector.ndarray(7, float_dtype(), shape=shape))
    return arr, chunk


def _points(d):
    """The per-world contact points scratch of _accept (one thread per world walks its
    pairs in turn)."""
    points = d.scratch.sdf_points
    if points is None:
        from .config import float_dtype
        points = d.scratch.sdf_points = d.scratch.tag(
            ti.Vector.ndarray(3, float_dtype(), shape=(d.nworld, MAXCONPAIR)))
    return points


def narrow_sdf(m, d, plan, sweep):
    """SDF pairs of the worlds in ``sweep.mask``, as mjc_SDF, in two launches: every
    start point's descent (_narrow_sdf_descend: one thread per world, candidate and
    start point), then each pair's contacts from its descents in start order
    (_narrow_sdf_emit: one thread per world, over its candidates in order); in chunks
    of candidates where the descents scratch would be large (_descents). No thread runs
    long loops: Mesa's lavapipe cuts a thread's loops after 65535 iterations in all
    (solver.loop_limit), and one thread per world running every descent of its pairs
    passed that (the gem octree against a sphere, 40 start points: the 37th start
    point's descent was cut, and the contacts of the later ones lost).

    Reads geom_xpos/geom_xmat and the model's geom, pair and plugin fields; appends
    contacts (dist, pos, normal, sort key) like kernels/collision.py's ``emit``
    (finalize sorts them and sets their parameters)."""
    if plan.sdf_count == 0:
        return
    opt = m.opt
    lists, counts, _, all_lists = sweep.lists  # (one emitting thread per world)
    # candidate slots: the model's SDF candidates, or the dynamic broadphase's list
    nslot = int(lists.shape[2]) if plan.dynamic else int(plan.sdf_count)
    ninit = int(opt.sdf_initpoints)
    if ninit <= 0:
        return
    dist, pos, frame, key = sweep.emit
    kind, attr, root = sdf_arrays(m, d)
    descents, chunk = _descents(d, nslot, ninit)
    common = dict(override=bool(opt.enabled("override")), o_margin=float(opt.o_margin),
                  cand_geom=sweep.cand[0], cand_pair=sweep.cand[1], lists=lists,
                  counts=counts, all_lists=all_lists, pair_margin_arr=m.pair_margin,
                  sdf_kind=kind, sdf_attr=attr, sdf_oct=root, world_mask=sweep.mask,
                  descents=descents, probe=loop_probe())
    meshes, octrees = _mesh_pairs(m, plan), _octree_pairs(m, d)
    rays, points = _ray_tables(m), _points(d)
    with _light_compile():
        for slot0 in range(0, nslot, chunk):
            launch(_narrow_sdf_descend, m, d, meshes=meshes, octrees=octrees,
                   niter=int(opt.sdf_iterations), slot0=slot0, **rays, **common)
            launch(_narrow_sdf_emit, m, d, slot0=slot0, points=points,
                   contact_dist=dist, contact_pos=pos, contact_frame=frame,
                   contact_key=key, **common)


@ti.kernel
def _sdf_distance_descend(
    meshes: ti.template(), octrees: ti.template(), g1: ti.i32, g2: ti.i32, niter: ti.i32,
    probe: ti.i32,
    geom_type: ND, geom_size: ND, geom_aabb: ND, sdf_kind: ND, sdf_attr: ND, sdf_oct: ND,
    oct_child: ND, oct_aabb: ND, oct_coeff: ND,
    geom_int: ND, mesh_vert: ND, tri_vert: ND, bvh_box: ND, bvh_node: ND,
    geom_xpos: ND, geom_xmat: ND, descents: ND, loop_cut: ND,
):
    for worldid, start in ti.ndrange(geom_xpos.shape[0], descents.shape[2]):
        _descend(worldid, 0, start, g1, g2, niter, geom_type, geom_size, geom_aabb,
                 sdf_kind, sdf_attr, sdf_oct, geom_xpos, geom_xmat, descents,
                 (geom_int, geom_size, geom_xpos, geom_xmat, mesh_vert, tri_vert, bvh_box,
                  bvh_node), meshes, (octrees, oct_child, oct_aabb, oct_coeff))
        if limit_reached(probe):
            ti.atomic_add(loop_cut[worldid][CUT_COLLISION], 1)


@ti.kernel
def _sdf_distance(
    g1: ti.i32, g2: ti.i32, flip: ti.i32, distmax: float, ninit: ti.i32,
    geom_type: ND, geom_size: ND, geom_aabb: ND, sdf_kind: ND, sdf_attr: ND, sdf_oct: ND,
    geom_xpos: ND, geom_xmat: ND, descents: ND, points: ND, dist_out: ND, fromto_out: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
    probe: ti.i32, loop_cut: ND,
):
    for worldid in range(geom_xpos.shape[0]):
        best = _new_best(distmax)
        _accept(worldid, -1, 0, g1, g2, ninit, True, best, geom_type, geom_size,
                geom_aabb, sdf_kind, sdf_attr, sdf_oct, geom_xpos, geom_xmat, descents,
                points, ncon, contact_dist, contact_pos, contact_frame, contact_key)
        fromto = ti.Vector.zero(float, 6)
        if best.n > 0:
            sign = -1.0 if flip else 1.0
            normal = normalize3(best.normal)  # (mju_makeFrame's)
            for i in ti.static(range(3)):
                fromto[i] = best.pos[i] + normal[i] * (-0.5 * sign * best.dist)
                fromto[3 + i] = best.pos[i] + normal[i] * (0.5 * sign * best.dist)
        dist_out[worldid] = best.dist
        fromto_out[worldid] = fromto
        if limit_reached(probe):
            ti.atomic_add(loop_cut[worldid][CUT_COLLISION], 1)


def sdf_pair_distance(m, d, g1, g2, flip, distmax, dist, fromto):
    """geom_distance for an sdf pair (geoms ordered by type, the sdf second): MuJoCo
    calls mjc_SDF (which ignores the margin: only overlaps give contacts) and keeps
    the deepest contact below distmax (the descents and then the pair's contacts, as
    narrow_sdf). Writes ``dist`` (nworld,) and ``fromto`` (nworld, 6 vectors)."""
    opt = m.opt
    kind, attr, root = sdf_arrays(m, d)
    ninit = max(0, int(opt.sdf_initpoints))
    descents, _ = _descents(d, 1, ninit)
    common = dict(g1=int(g1), g2=int(g2), sdf_kind=kind, sdf_attr=attr, sdf_oct=root,
                  descents=descents, probe=loop_probe())
    with _light_compile():
        if ninit > 0:
            launch(_sdf_distance_descend, m, d, meshes=_mesh_pairs(m, {g1, g2}),
                   octrees=_octree_pairs(m, d), niter=int(opt.sdf_iterations),
                   **_ray_tables(m), **common)
        launch(_sdf_distance, m, d, points=_points(d), flip=int(flip),
               distmax=float(distmax), ninit=ninit, dist_out=dist, fromto_out=fromto,
               **common)
