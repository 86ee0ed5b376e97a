"""@ti.func math shared by the kernels: quaternions, rotations, spatial algebra."""
import taichi as ti

from .consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_PLANE,
                     GEOM_SPHERE, JNT_BALL, JNT_FREE, MINVAL, PI)


@ti.func
def param_row(worldid, arr: ti.template()):
    """The row of a parameter array of 1 or n sets (n divides the worlds) that world
    ``worldid`` reads: worldid % n, without an integer division where n is 1 or the
    world is below n (all but tiphys.derivative's expanded Data)."""
    n = arr.shape[0]
    row = 0
    if n > 1:
        row = worldid
        if worldid >= n:
            row = worldid % n
    return row


@ti.func
def jnt_ndof(jtype):
    """The dofs of a joint of type ``jtype``: 6 free, 3 ball, 1 hinge or slide."""
    ndof = 1
    if jtype == JNT_FREE:
        ndof = 6
    elif jtype == JNT_BALL:
        ndof = 3
    return ndof


@ti.func
def quat_mul(a, b):
    return ti.Vector([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                      a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                      a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                      a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])


@ti.func
def quat_normalize(q):
    """Unit quaternion; a zero quaternion becomes the identity. As mju_normalize4, a
    quaternion whose norm is within mjMINVAL of 1 is kept as it is (round-off in xquat,
    and so in xmat and every position below it, then agrees with MuJoCo bit for bit)."""
    n = q.norm()
    out = ti.Vector([1.0, 0.0, 0.0, 0.0])
    if n >= MINVAL:
        out = q
        if ti.abs(n - 1.0) > MINVAL:
            out = q * (1.0 / n)
    return out


@ti.func
def quat2mat(q):
    w, x, y, z = q[0], q[1], q[2], q[3]
    return ti.Matrix([[w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z]])


@ti.func
def quat_z2vec(vec):
    """mju_quatZ2Vec: the rotation taking the z axis to ``vec`` (identity for a vector
    shorter than MINVAL; a NaN vector gives NaN, as MuJoCo's)."""
    quat = ti.Vector([1.0, 0.0, 0.0, 0.0])
    n = vec.norm()
    if not n < MINVAL:
        vn = vec * (1.0 / n)
        axis = ti.Vector([-vn[1], vn[0], 0.0])  # z x vn
        a = axis.norm()
        if a < MINVAL:
            if vn[2] < 0:
                quat = ti.Vector([0.0, 1.0, 0.0, 0.0])
        else:
            axis = axis * (1.0 / a)
            angle = ti.atan2(a, vn[2])
            if angle != 0:
                s = ti.sin(angle * 0.5)
                quat = ti.Vector([ti.cos(angle * 0.5), axis[0] * s, axis[1] * s, axis[2] * s])
    return quat


@ti.func
def rot_vec_quat(v, q):
    """Rotate v by unit quaternion q (v + 2w(u x v) + 2u x (u x v))."""
    u = ti.Vector([q[1], q[2], q[3]])
    t = 2.0 * u.cross(v)
    return v + q[0] * t + u.cross(t)


@ti.func
def axis_angle2quat(axis, angle):
    s = ti.sin(0.5 * angle)
    return ti.Vector([ti.cos(0.5 * angle), axis[0] * s, axis[1] * s, axis[2] * s])


@ti.func
def inert_com(inertia, ximat, offset, mass):
    """com-based inertia (10 values) of a body: rotated inertia + parallel axis, m*c, m."""
    r = ximat
    i00 = 0.0
    i11 = 0.0
    i22 = 0.0
    i01 = 0.0
    i02 = 0.0
    i12 = 0.0
    for k in ti.static(range(3)):
        i00 += r[0, k] * r[0, k] * inertia[k]
        i11 += r[1, k] * r[1, k] * inertia[k]
        i22 += r[2, k] * r[2, k] * inertia[k]
        i01 += r[0, k] * r[1, k] * inertia[k]
        i02 += r[0, k] * r[2, k] * inertia[k]
        i12 += r[1, k] * r[2, k] * inertia[k]
    c = offset
    return ti.Vector([i00 + mass * (c[1] * c[1] + c[2] * c[2]),
                      i11 + mass * (c[0] * c[0] + c[2] * c[2]),
                      i22 + mass * (c[0] * c[0] + c[1] * c[1]),
                      i01 - mass * c[0] * c[1], i02 - mass * c[0] * c[2],
                      i12 - mass * c[1] * c[2],
                      mass * c[0], mass * c[1], mass * c[2], mass])


@ti.func
def dof_com(axis, offset):
    """Motion dof (rot:lin) of a rotation about axis through a point at -offset from com."""
    lin = axis.cross(offset)
    return ti.Vector([axis[0], axis[1], axis[2], lin[0], lin[1], lin[2]])


@ti.func
def mul_inert_vec(i, v):
    """com-based inertia (10 values) times a motion vector (rot:lin) -> force (rot:lin)."""
    return ti.Vector([
        i[0] * v[0] + i[3] * v[1] + i[4] * v[2] - i[8] * v[4] + i[7] * v[5],
        i[3] * v[0] + i[1] * v[1] + i[5] * v[2] + i[8] * v[3] - i[6] * v[5],
        i[4] * v[0] + i[5] * v[1] + i[2] * v[2] - i[7] * v[3] + i[6] * v[4],
        i[8] * v[1] - i[7] * v[2] + i[9] * v[3],
        i[6] * v[2] - i[8] * v[0] + i[9] * v[4],
        i[7] * v[0] - i[6] * v[1] + i[9] * v[5]])


@ti.func
def cross_motion(vel, v):
    """Spatial cross product of two motion vectors (rot:lin)."""
    return ti.Vector([
        -vel[2] * v[1] + vel[1] * v[2],
        vel[2] * v[0] - vel[0] * v[2],
        -vel[1] * v[0] + vel[0] * v[1],
        -vel[2] * v[4] + vel[1] * v[5] - vel[5] * v[1] + vel[4] * v[2],
        vel[2] * v[3] - vel[0] * v[5] + vel[5] * v[0] - vel[3] * v[2],
        -vel[1] * v[3] + vel[0] * v[4] - vel[4] * v[0] + vel[3] * v[1]])


@ti.func
def cross_force(vel, f):
    """Spatial cross product of a motion vector and a force vector (rot:lin)."""
    return ti.Vector([
        -vel[2] * f[1] + vel[1] * f[2] - vel[5] * f[4] + vel[4] * f[5],
        vel[2] * f[0] - vel[0] * f[2] + vel[5] * f[3] - vel[3] * f[5],
        -vel[1] * f[0] + vel[0] * f[1] - vel[4] * f[3] + vel[3] * f[4],
        -vel[2] * f[4] + vel[1] * f[5],
        vel[2] * f[3] - vel[0] * f[5],
        -vel[1] * f[3] + vel[0] * f[4]])


@ti.func
def quat_integrate(quat, vel, dt):
    """Rotate quat by the angular velocity vel (local frame) over dt, as mju_quatIntegrate."""
    norm = vel.norm()
    axis = ti.Vector([1.0, 0.0, 0.0])
    if norm >= MINVAL:
        axis = vel * (1.0 / norm)
    return quat_mul(quat_normalize(quat), axis_angle2quat(axis, dt * norm))


@ti.func
def sub_quat(qa, qb):
    """3D rotation vector taking qb to qa (qb * quat(res) = qa), as mju_subQuat."""
    qneg = ti.Vector([qb[0], -qb[1], -qb[2], -qb[3]])
    dif = quat_mul(qneg, qa)
    axis = ti.Vector([dif[1], dif[2], dif[3]])
    sin_a_2 = axis.norm()
    if sin_a_2 < MINVAL:
        axis = ti.Vector([1.0, 0.0, 0.0])
    else:
        axis = axis * (1.0 / sin_a_2)
    speed = 2.0 * ti.atan2(sin_a_2, dif[0])
    if speed > PI:
        speed -= 2.0 * PI
    return axis * speed


@ti.func
def mul_mat_t(mat, v):
    """mat' v for a 3x3 matrix, in mju_mulMatTVec3's order."""
    return ti.Vector([mat[0, i] * v[0] + mat[1, i] * v[1] + mat[2, i] * v[2]
                      for i in ti.static(range(3))])


@ti.func
def normalize3(v):
    """mju_normalize3: v / |v|, or (1, 0, 0) when |v| < mjMINVAL (and when |v| is NaN)."""
    norm = ti.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    out = ti.Vector([1.0, 0.0, 0.0])
    if norm >= MINVAL:
        out = v * (1.0 / norm)
    return out


@ti.func
def transform_motion(vec, dif, rot, local):
    """A com-based motion vector (rot:lin) moved to the point ``dif`` away from the
    com and, with ``local``, rotated into the frame ``rot`` (mju_transformSpatial,
    flg_force 0): (ang, lin)."""
    ang = ti.Vector([vec[0], vec[1], vec[2]])
    lin = ti.Vector([vec[3], vec[4], vec[5]]) - dif.cross(ang)
    if local:
        ang = mul_mat_t(rot, ang)
        lin = mul_mat_t(rot, lin)
    return ang, lin


@ti.func
def inside_geom(pos, mat, size, gtype, point):
    """mju_insideGeom: 1 if ``point`` is strictly inside the primitive (pos, mat,
    size), else 0."""
    vec = point - pos
    inside = 0
    if gtype == GEOM_SPHERE:
        inside = 1 if vec.dot(vec) < size[0] * size[0] else 0
    else:
        p = mul_mat_t(mat, vec)
        if gtype == GEOM_CAPSULE:
            z = p[2] - ti.min(ti.max(p[2], -size[1]), size[1])
            if p[0] * p[0] + p[1] * p[1] + z * z < size[0] * size[0]:
                inside = 1
        elif gtype == GEOM_ELLIPSOID:
            if (p[0] * p[0] / (size[0] * size[0]) + p[1] * p[1] / (size[1] * size[1])
                    + p[2] * p[2] / (size[2] * size[2])) < 1.0:
                inside = 1
        elif gtype == GEOM_CYLINDER:
            if ti.abs(p[2]) < size[1] and p[0] * p[0] + p[1] * p[1] < size[0] * size[0]:
                inside = 1
        elif gtype == GEOM_BOX:
            if ti.abs(p[0]) < size[0] and ti.abs(p[1]) < size[1] and ti.abs(p[2]) < size[2]:
                inside = 1
        elif gtype == GEOM_PLANE:
            if p[2] < 0.0:
                inside = 1
    return inside
