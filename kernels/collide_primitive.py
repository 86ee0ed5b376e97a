"""Analytic narrowphase for primitive pairs (MuJoCo's engine_collision_primitive).

Every detector has the signature ``f(out, margin, pos1, mat1, size1, pos2, mat2,
size2)`` (geom 1 of lower type; normal from geom 1 to geom 2) and appends its
contacts with ``add``/``add_tangent`` (see kernels/collision.py). ``mat`` is the
geom's rotation (MuJoCo's row-major xmat), so its columns are the geom's axes.

The detectors follow MuJoCo 3.4.0 step by step, comparisons included (``not a > b``
where MuJoCo returns early on ``a > b``), so that they return the same contacts in
the same order and take the same branches in degenerate poses.
"""
import taichi as ti

from . import config
from .collision import add, add_tangent
from .consts import MINVAL


def _flat_disk_sqr() -> float:
    """Squared length of a cylinder's rim direction below which plane_cylinder takes the
    disk as parallel to the plane. f64: MuJoCo's mjMINVAL^2. f32: rounding alone leaves
    ~1e-14 there, whose direction is noise (contacts off by up to the radius, e.g. a
    cylinder standing on a tilted plane), so use 1e-12 as MuJoCo Warp does."""
    return MINVAL * MINVAL if config.precision() == "f64" else 1e-12


@ti.func
def _axis(mat, j: ti.template()):
    """Column ``j`` of a rotation: the geom's local axis ``j`` in world coordinates."""
    return ti.Vector([mat[0, j], mat[1, j], mat[2, j]])


@ti.func
def _normalize(v):
    """mju_normalize3: (unit vector, norm); [1, 0, 0] when the norm is below mjMINVAL."""
    norm = v.norm()
    unit = ti.Vector([1.0, 0.0, 0.0])
    if not norm < MINVAL:
        unit = v * (1.0 / norm)
    return unit, norm


@ti.func
def _plane_sphere(margin, plane_pos, normal, center, radius):
    """mjraw_PlaneSphere without the append: (hit, dist, pos)."""
    cdist = (center - plane_pos).dot(normal)
    hit = not cdist > margin + radius
    dist = cdist - radius
    return hit, dist, center + normal * (-dist / 2 - radius)


@ti.func
def _sphere_sphere(out: ti.template(), margin, pos1, mat1, radius1, pos2, mat2, radius2):
    """mjraw_SphereSphere: one contact between two spheres, or none; returns the count.

    Coincident centres take the normal from the cross product of the geoms' z axes
    (x when those are parallel), as MuJoCo does."""
    dif = pos1 - pos2
    cdist_sqr = dif.dot(dif)
    min_dist = margin + radius1 + radius2
    n = 0
    if not cdist_sqr > min_dist * min_dist:
        dist = ti.sqrt(cdist_sqr) - radius1 - radius2
        normal, length = _normalize(pos2 - pos1)
        if length < MINVAL:
            normal, _ = _normalize(_axis(mat1, 2).cross(_axis(mat2, 2)))
        add(out, dist, normal * (radius1 + dist / 2) + pos1, normal)
        n = 1
    return n


@ti.func
def plane_sphere(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    hit, dist, pos = _plane_sphere(margin, pos1, _axis(mat1, 2), pos2, size2[0])
    if hit:
        add(out, dist, pos, _axis(mat1, 2))


@ti.func
def plane_capsule(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """The capsule's two end spheres against the plane; the tangent hint is the axis."""
    normal = _axis(mat1, 2)
    axis = _axis(mat2, 2)
    segment = axis * size2[1]
    for k in ti.static(range(2)):
        end = pos2 + segment if ti.static(k == 0) else pos2 - segment
        hit, dist, pos = _plane_sphere(margin, pos1, normal, end, size2[0])
        if hit:
            add_tangent(out, dist, pos, normal, axis)


@ti.func
def plane_cylinder(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """Up to 4 contacts: the rim points nearest the plane on both caps, then two more
    on the lower cap's rim (an equilateral triangle with the first) when it is close."""
    normal = _axis(mat1, 2)
    axis = _axis(mat2, 2)
    # make the axis point towards the plane
    prjaxis = normal.dot(axis)
    if prjaxis > 0:
        axis = -axis
        prjaxis = -prjaxis
    dist0 = (pos2 - pos1).dot(normal)
    # rim direction nearest the plane: -normal without its component along the axis
    vec = axis * prjaxis - normal
    len_sqr = vec.dot(vec)
    if len_sqr >= ti.static(_flat_disk_sqr()):
        vec = vec * (size2[0] / ti.sqrt(len_sqr))
    else:  # disk parallel to the plane: the cylinder's x axis
        vec = _axis(mat2, 0) * size2[0]
    prjvec = vec.dot(normal)
    axis = axis * size2[1]
    prjaxis = prjaxis * size2[1]

    first = dist0 + prjaxis + prjvec
    if not first > margin:
        add(out, first, pos2 + vec + axis + normal * (-first * 0.5), normal)
        second = dist0 - prjaxis + prjvec
        if not second > margin:
            add(out, second, pos2 + vec - axis + normal * (-second * 0.5), normal)
        third = dist0 + prjaxis - prjvec * 0.5
        if not third > margin:
            side, _ = _normalize(vec.cross(axis))
            side = side * (size2[0] * ti.sqrt(3.0) / 2)
            lift = normal * (-third * 0.5)
            add(out, third, pos2 + side + axis + vec * -0.5 + lift, normal)
            add(out, third, pos2 - side + axis + vec * -0.5 + lift, normal)


@ti.func
def plane_box(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """The box corners below the margin that face the plane, first 4 in corner order."""
    normal = _axis(mat1, 2)
    dist = (pos2 - pos1).dot(normal)
    for i in ti.static(range(8)):
        vec = ti.Vector([size2[0] if ti.static(i & 1) else -size2[0],
                         size2[1] if ti.static(i & 2) else -size2[1],
                         size2[2] if ti.static(i & 4) else -size2[2]])
        corner = mat2 @ vec
        ldist = normal.dot(corner)
        if out.n < 4 and not (dist + ldist > margin or ldist > 0):
            cdist = dist + ldist
            add(out, cdist, corner + pos2 + normal * (-cdist / 2), normal)


@ti.func
def sphere_sphere(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    _sphere_sphere(out, margin, pos1, mat1, size1[0], pos2, mat2, size2[0])


@ti.func
def sphere_capsule(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """The sphere against the nearest point of the capsule's segment."""
    axis = _axis(mat2, 2)
    x = ti.min(ti.max(axis.dot(pos1 - pos2), -size2[1]), size2[1])
    _sphere_sphere(out, margin, pos1, mat1, size1[0], axis * x + pos2, mat2, size2[0])


@ti.func
def sphere_cylinder(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """Side (sphere-sphere with the axis point), cap (plane-sphere) or rim corner
    (sphere against a point); a centre inside picks the nearer of side and cap."""
    radius = size2[0]
    height = size2[1]
    axis = _axis(mat2, 2)
    vec = pos1 - pos2
    x = axis.dot(vec)
    a_proj = axis * x
    p_proj = vec - a_proj
    p_proj_sqr = p_proj.dot(p_proj)
    collide_side = ti.abs(x) < height
    collide_cap = p_proj_sqr < radius * radius
    if collide_side and collide_cap:  # centre inside: keep the shallower direction
        if height - ti.abs(x) < radius - ti.sqrt(p_proj_sqr):
            collide_side = False
        else:
            collide_cap = False
    if collide_side:
        _sphere_sphere(out, margin, pos1, mat1, size1[0], a_proj + pos2, mat2, radius)
    elif collide_cap:
        # the cap is a plane with normal +-axis; MuJoCo flips the plane-sphere normal
        cap_normal = axis if x > 0 else -axis
        hit, dist, pos = _plane_sphere(margin, pos2 + cap_normal * height, cap_normal,
                                       pos1, size1[0])
        if hit:
            add(out, dist, pos, -cap_normal)
    else:  # rim: a sphere of radius 0 at the nearest rim point
        rim = p_proj * (radius / ti.sqrt(p_proj_sqr))
        corner = axis * (height if x > 0 else -height) + rim + pos2
        _sphere_sphere(out, margin, pos1, mat1, size1[0], corner, mat2, 0.0)


@ti.func
def capsule_capsule(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """Nearest points of the two segments (sphere-sphere there); parallel axes test
    the segment ends instead and may return two contacts."""
    axis1 = _axis(mat1, 2) * size1[1]
    axis2 = _axis(mat2, 2) * size2[1]
    dif = pos1 - pos2
    ma = axis1.dot(axis1)
    mb = -axis1.dot(axis2)
    mc = axis2.dot(axis2)
    u = -axis1.dot(dif)
    v = axis2.dot(dif)
    det = ma * mc - mb * mb
    r1 = size1[0]
    r2 = size2[0]
    if ti.abs(det) >= MINVAL:
        x1 = (mc * u - mb * v) / det
        x2 = (ma * v - mb * u) / det
        if x1 > 1:
            x1 = 1.0
            x2 = (v - mb) / mc
        elif x1 < -1:
            x1 = -1.0
            x2 = (v + mb) / mc
        if x2 > 1:
            x2 = 1.0
            x1 = _clip1((u - mb) / ma)
        elif x2 < -1:
            x2 = -1.0
            x1 = _clip1((u + mb) / ma)
        _sphere_sphere(out, margin, axis1 * x1 + pos1, mat1, r1, axis2 * x2 + pos2, mat2, r2)
    else:
        # ends of segment 1 against segment 2
        n = _sphere_sphere(out, margin, pos1 + axis1, mat1, r1,
                           axis2 * _clip1((v - mb) / mc) + pos2, mat2, r2)
        n += _sphere_sphere(out, margin, pos1 - axis1, mat1, r1,
                            axis2 * _clip1((v + mb) / mc) + pos2, mat2, r2)
        # then, while fewer than two, ends of segment 2 against segment 1
        if n < 2:
            n += _sphere_sphere(out, margin, axis1 * _clip1((u - mb) / ma) + pos1, mat1, r1,
                                pos2 + axis2, mat2, r2)
        if n < 2:
            _sphere_sphere(out, margin, axis1 * _clip1((u + mb) / ma) + pos1, mat1, r1,
                           pos2 - axis2, mat2, r2)


@ti.func
def _clip1(x):
    """mju_clip(x, -1, 1)."""
    y = x
    if x < -1:
        y = -1.0
    elif x > 1:
        y = 1.0
    return y
