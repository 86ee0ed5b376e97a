"""Narrowphase for box pairs (MuJoCo's engine_collision_box: mjc_SphereBox,
mjc_CapsuleBox, mjc_BoxBox).

Every detector has the signature ``f(out, margin, pos1, mat1, size1, pos2, mat2,
size2)`` (geom 1 of lower type; normal from geom 1 to geom 2; ``mat[i, j]`` is
MuJoCo's ``xmat[3 * i + j]``) and appends its contacts with ``add`` (see
kernels/collision.py). The algorithms are MuJoCo 3.4.0's, step by step and in the
same floating-point order where a decision depends on it: box_box's contacts are
removed afterwards when exactly equal or outside a box, as mj_collideGeoms does,
so exact ties (aligned boxes) have to come out the same.

box_box follows MuJoCo also where MuJoCo is odd: the face-corner loop of the
edge-edge case reuses its determinant variable for a squared distance, so the
corners after the first accepted one are tested with that distance.

Exact ties (a box resting on a box: two face axes separate equally, a corner exactly
on a clipping line) are decided by the last bit of the arithmetic. MuJoCo's C rounds
every product and sum; they come out the same here with ``fast_math=False``, while
Taichi's default fast math (fused multiply-add, reassociation) may break such a tie
the other way (a different, equally valid contact set).

The code is written for Taichi's compiler: selects instead of branches, ``&``/``|``
instead of ``and``/``or`` (which Taichi short-circuits into branches), and locals
assigned once. Taichi's CFG passes grow steeply with the branches and mutable locals
of a kernel; this keeps box_box's first compile near 15 s rather than a minute.
"""
import taichi as ti

from .collision import add
from .consts import MINVAL

# box-box: raw contact points before the driver's removal (4 clipped lines x 4, then
# 4 + 4 corners); MuJoCo keeps at most 9 of them (8 polygon corners + a box corner)
BOXBOX_RAW = 24
REMOVE_RATIO = 1.01  # mj_collideGeoms' kRemoveRatio for mju_outsideBox


# ------------------------------------------------------------------------------------
# 3x3 products in MuJoCo's summation order (engine_util_blas.c)
# ------------------------------------------------------------------------------------

@ti.func
def _mulv(mat, v):
    """mju_mulMatVec3: mat @ v."""
    return ti.Vector([mat[0, 0] * v[0] + mat[0, 1] * v[1] + mat[0, 2] * v[2],
                      mat[1, 0] * v[0] + mat[1, 1] * v[1] + mat[1, 2] * v[2],
                      mat[2, 0] * v[0] + mat[2, 1] * v[1] + mat[2, 2] * v[2]])


@ti.func
def _mulTv(mat, v):
    """mju_mulMatTVec3: mat^T @ v."""
    return ti.Vector([mat[0, 0] * v[0] + mat[1, 0] * v[1] + mat[2, 0] * v[2],
                      mat[0, 1] * v[0] + mat[1, 1] * v[1] + mat[2, 1] * v[2],
                      mat[0, 2] * v[0] + mat[1, 2] * v[1] + mat[2, 2] * v[2]])


@ti.func
def _mulTm(a, b):
    """mju_mulMatTMat3: a^T @ b."""
    return ti.Matrix([[a[0, i] * b[0, j] + a[1, i] * b[1, j] + a[2, i] * b[2, j]
                       for j in ti.static(range(3))] for i in ti.static(range(3))])


@ti.func
def _mulmT(a, b):
    """mju_mulMatMatT3: a @ b^T."""
    return ti.Matrix([[a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]
                       for j in ti.static(range(3))] for i in ti.static(range(3))])


@ti.func
def _mulm(a, b):
    """a @ b (only used with a signed permutation, where it is exact)."""
    return ti.Matrix([[a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]
                       for j in ti.static(range(3))] for i in ti.static(range(3))])


@ti.func
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@ti.func
def _row(mat, i):
    return ti.Vector([mat[i, 0], mat[i, 1], mat[i, 2]])


@ti.func
def _col(mat, j):
    return ti.Vector([mat[0, j], mat[1, j], mat[2, j]])


@ti.func
def _sel(cond, a, b):
    return ti.select(cond, a, b)


# ------------------------------------------------------------------------------------
# sphere : box
# ------------------------------------------------------------------------------------

@ti.func
def _sphere_box(out: ti.template(), margin, center_w, radius, pos2, mat2, size2):
    """mjraw_SphereBox for a sphere of ``radius`` at ``center_w`` (world frame)."""
    center = _mulTv(mat2, center_w - pos2)
    clamped = ti.Vector([ti.min(ti.max(center[k], -size2[k]), size2[k])
                         for k in ti.static(range(3))])
    dif = clamped - center
    dist = ti.sqrt(dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2])
    outside = dist > MINVAL
    unit = dif * (1 / _sel(outside, dist, 1.0))
    # centre inside the box: out through the nearest face (the first of equals)
    closest = (size2[0] + size2[1] + size2[2]) * 2
    face = 0
    for i in ti.static(range(6)):
        gap = ti.abs((size2[i // 2] if ti.static(i % 2) else -size2[i // 2]) - center[i // 2])
        face = _sel(closest > gap, i, face)
        closest = ti.min(closest, gap)
    nearest = ti.Vector([_sel(face // 2 == k, _sel(face % 2 != 0, -1.0, 1.0), 0.0)
                         for k in ti.static(range(3))])
    pos = _sel(outside, clamped * 0.5 + (center + unit * radius) * 0.5,
               center + nearest * ((radius - closest) / 2))
    if dist - radius <= margin:
        add(out, _sel(outside, dist, -closest) - radius, _mulv(mat2, pos) + pos2,
            _mulv(mat2, _sel(outside, unit, nearest)))


@ti.func
def sphere_box(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """mjc_SphereBox: at most one contact."""
    _sphere_box(out, margin, pos1, size1[0], pos2, mat2, size2)


# ------------------------------------------------------------------------------------
# capsule : box
# ------------------------------------------------------------------------------------

@ti.func
def _min_ratio(secondpos, num, den):
    """min(secondpos, num / |den|), where a zero ``den`` (C: +inf) changes nothing."""
    a = ti.abs(den)
    e1 = num / _sel(a > 0, a, 1.0)
    return _sel((a > 0) & (e1 < secondpos), e1, secondpos)


@ti.func
def _clamp1(x):
    return ti.min(ti.max(x, -1.0), 1.0)


@ti.func
def capsule_box(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """mjc_CapsuleBox: the segment point closest to the box (a face against a capsule
    end, or an edge against the segment), then a second point along the capsule
    when it lies low over the box; each becomes a sphere-box test (<= 2 contacts)."""
    halflength = size1[1]
    pos = _mulTv(mat2, pos1 - pos2)  # capsule centre in the box frame
    axis = _mulTv(mat2, _col(mat1, 2))
    halfaxis = axis * halflength
    axisdir = _sel(halfaxis[0] > 0, 1, 0) + _sel(halfaxis[1] > 0, 2, 0) + \
        _sel(halfaxis[2] > 0, 4, 0)

    bestdistmax = margin + 2 * (size1[0] + halflength + size2[0] + size2[1] + size2[2])
    bestdist = bestdistmax
    bestsegmentpos = 0.0
    bestboxpos = 0.0
    cltype = -4
    clface = -1
    clcorner = 0
    cledge = 0

    # a capsule end closest to a face of the box (the end clamped along <= 1 axis)
    for e in ti.static(range(2)):
        end = pos + halfaxis * (-1.0 if ti.static(e == 0) else 1.0)
        nclamp = 0
        lastaxis = -1
        for k in ti.static(range(3)):
            out_k = (end[k] < -size2[k]) | (end[k] > size2[k])
            nclamp += _sel(out_k, 1, 0)
            lastaxis = _sel(out_k, k, lastaxis)
        clamped = ti.Vector([ti.min(ti.max(end[k], -size2[k]), size2[k])
                             for k in ti.static(range(3))])
        dif = clamped - end
        dist = _dot(dif, dif)
        better = (nclamp <= 1) & (dist < bestdist)
        bestdist = _sel(better, dist, bestdist)
        bestsegmentpos = _sel(better, -1.0 if ti.static(e == 0) else 1.0, bestsegmentpos)
        cltype = _sel(better, -3 if ti.static(e == 0) else -1, cltype)
        clface = _sel(better, lastaxis, clface)

    # the segment closest to one of the 12 box edges (axis j, from corner i)
    mc = size1[1] * size1[1]
    for edgeid in range(12):
        j = edgeid // 4
        t = edgeid % 4
        i = ((t >> j) << (j + 1)) | (t & ((1 << j) - 1))  # the corners with bit j clear
        tmp3 = ti.Vector([_sel(k == j, 0.0, _sel((i & (1 << k)) != 0, size2[k], -size2[k]))
                          for k in ti.static(range(3))])
        dif = tmp3 - pos
        ma = size2[j] * size2[j]
        mb = -size2[j] * halfaxis[j]
        u = -size2[j] * dif[j]
        v = _dot(halfaxis, dif)
        det = ma * mc - mb * mb
        ok = ti.abs(det) >= MINVAL
        idet = 1 / _sel(ok, det, 1.0)
        x1a = (mc * u - mb * v) * idet
        x2a = (ma * v - mb * u) * idet
        # clamp x1 to the edge, then x2 to the segment (re-solving x1), as MuJoCo does
        hi1 = x1a > 1
        lo1 = x1a < -1
        x1b = _sel(hi1, 1.0, _sel(lo1, -1.0, x1a))
        s1b = _sel(hi1, 2, _sel(lo1, 0, 1))
        x2b = _sel(hi1, (v - mb) * (1 / mc), _sel(lo1, (v + mb) * (1 / mc), x2a))
        hi2 = x2b > 1
        lo2 = x2b < -1
        x1r = _sel(hi2, (u - mb) * (1 / ma), (u + mb) * (1 / ma))
        x1 = _sel(hi2 | lo2, _clamp1(x1r), x1b)
        s1 = _sel(hi2 | lo2, _sel(x1r > 1, 2, _sel(x1r < -1, 0, s1b)), s1b)
        x2 = _sel(hi2, 1.0, _sel(lo2, -1.0, x2b))
        s2 = _sel(hi2, 2, _sel(lo2, 0, 1))
        dif = dif + halfaxis * (-x2)
        dif = ti.Vector([_sel(k == j, dif[k] + size2[j] * x1, dif[k])
                         for k in ti.static(range(3))])
        d2 = _dot(dif, dif)
        better = ok & (d2 < bestdist - MINVAL)
        code = s1 * 3 + s2
        bestdist = _sel(better, d2, bestdist)
        bestsegmentpos = _sel(better, x2, bestsegmentpos)
        bestboxpos = _sel(better, x1, bestboxpos)
        clcorner = _sel(better, i + (1 << j) * (code // 6), clcorner)
        cledge = _sel(better, j, cledge)
        cltype = _sel(better, code, cltype)

    # cltype -3, -1: a capsule end over a face; 0..8: an edge (s1 * 3 + s2), where
    # cltype // 3 != 1 means the box's edge is closest at one of its corners
    secondpos = -4.0
    if (cltype >= 0) & (cltype // 3 != 1):
        # a box corner: the capsule points at it (no second point), or lies along a
        # face or an edge, where the second point goes
        c1 = axisdir ^ clcorner
        flip = (c1 == 3) | (c1 == 5) | (c1 == 6)
        mul = _sel(flip, -1.0, 1.0)
        c1 = _sel(flip, 7 - c1, c1)
        de = _sel(flip, 1 + bestsegmentpos, 1 - bestsegmentpos)
        dp = _sel(flip, 1 - bestsegmentpos, 1 + bestsegmentpos)
        ax = _sel(c1 == 2, 1, _sel(c1 == 4, 2, 0))
        ax1 = (ax + 1) % 3
        ax2 = (ax + 2) % 3
        along = _min_ratio(de, 2 * size2[ax], halfaxis[ax]) * mul
        across = _min_ratio(_min_ratio(dp, 2 * size2[ax1], halfaxis[ax1]), 2 * size2[ax2],
                            halfaxis[ax2]) * -mul
        secondpos = _sel((c1 == 0) | (c1 == 7), -4.0,
                         _sel(axis[ax] * axis[ax] > 0.5, along, across))
    elif cltype >= 0:
        # the middle of a box edge: a T (no second point) or an X configuration
        c1 = (axisdir ^ clcorner) & (7 - (1 << cledge))
        ax = cledge
        ax1 = (ax + 1) % 3
        ax2 = (ax + 2) % 3
        ax1 = _sel(ti.abs(axis[ax1]) > ti.abs(axis[ax2]), ax2, ax1)
        ax2 = 3 - ax - ax1
        up = (c1 & (1 << ax2)) != 0
        mul = _sel(up, 1.0, -1.0)
        sp = _min_ratio(_sel(up, 1 - bestsegmentpos, 1 + bestsegmentpos), 2 * size2[ax2],
                        halfaxis[ax2])
        e2 = _sel(((axisdir & (1 << ax)) != 0) == up, 1 - bestboxpos, 1 + bestboxpos)
        sp = _min_ratio(sp, size2[ax] * e2, halfaxis[ax]) * mul
        secondpos = _sel((c1 == 1) | (c1 == 2) | (c1 == 4), sp, -4.0)
    elif (cltype != -4) & (clface != -1):
        # a capsule end over a face: the farthest point still over the box
        mul = _sel(cltype == -3, 1.0, -1.0)
        sp = 2.0
        start = pos + halfaxis * (-mul)
        for k in ti.static(range(3)):
            h = halfaxis[k]
            use = (k != clface) & (h != 0)
            hs = _sel(use, h, 1.0)
            e1 = (size2[k] - start[k]) / hs * mul
            sp = _sel(use & (e1 > 0) & (e1 < sp), e1, sp)
            e1 = (-size2[k] - start[k]) / hs * mul
            sp = _sel(use & (e1 > 0) & (e1 < sp), e1, sp)
        secondpos = sp * mul

    if cltype != -4:
        centre = _mulv(mat2, pos + halfaxis * bestsegmentpos) + pos2
        _sphere_box(out, margin, centre, size1[0], pos2, mat2, size2)
        if secondpos > -3:
            centre = _mulv(mat2, pos + halfaxis * (secondpos + bestsegmentpos)) + pos2
            _sphere_box(out, margin, centre, size1[0], pos2, mat2, size2)


# ------------------------------------------------------------------------------------
# box : box
# ------------------------------------------------------------------------------------

@ti.func
def _face_rotation(face):
    """mjc_BoxBox's ``rotmore``: the signed permutation taking a box face's outward
    normal to +z (faces 0, 1, 2: the +x, +y, +z sides; 3, 4, 5: -x, -y, -z)."""
    return ti.Matrix([
        [_sel((face == 1) | (face == 2) | (face == 4), 1.0, _sel(face == 5, -1.0, 0.0)), 0.0,
         _sel(face == 0, -1.0, _sel(face == 3, 1.0, 0.0))],
        [0.0, _sel((face == 1) | (face == 4), 0.0, 1.0),
         _sel(face == 1, -1.0, _sel(face == 4, 1.0, 0.0))],
        [_sel(face == 0, 1.0, _sel(face == 3, -1.0, 0.0)),
         _sel(face == 1, 1.0, _sel(face == 4, -1.0, 0.0)),
         _sel(face == 2, 1.0, _sel(face == 5, -1.0, 0.0))]])


@ti.func
def _outside_box(point, pos, mat, size):
    """mju_outsideBox with inflation REMOVE_RATIO: 1 outside the inflated box, -1
    inside the deflated one, 0 between."""
    vec = _mulTv(mat, point - pos)
    big = size * REMOVE_RATIO
    small = size / REMOVE_RATIO
    out = (vec[0] > big[0]) | (vec[0] < -big[0]) | (vec[1] > big[1]) | \
        (vec[1] < -big[1]) | (vec[2] > big[2]) | (vec[2] < -big[2])
    inside = (vec[0] < small[0]) & (vec[0] > -small[0]) & (vec[1] < small[1]) & \
        (vec[1] > -small[1]) & (vec[2] < small[2]) & (vec[2] > -small[2])
    return _sel(out, 1, _sel(inside, -1, 0))


@ti.func
def _keep(buf: ti.template(), kept, valid, dist, local, frame, origin, hz, margin, pos1,
          mat1, size1, pos2, mat2, size2):
    """Store a valid contact (``local``: in the face frame, z from the face) unless
    mj_collideGeoms would drop it as lying outside one box and not inside the other.
    Branch-free: slot ``kept`` is written either way."""
    p = _mulv(frame, ti.Vector([local[0], local[1], local[2] + hz])) + origin
    out1 = _outside_box(p, pos1, mat1, size1 + margin)
    out2 = _outside_box(p, pos2, mat2, size2 + margin)
    bad = ((out1 == 1) & (out2 != -1)) | ((out2 == 1) & (out1 != -1))
    for k in ti.static(range(3)):
        buf[kept, k] = p[k]
    buf[kept, 3] = dist
    return kept + _sel(valid & (not bad), 1, 0)


@ti.func
def box_box(out: ti.template(), margin, pos1, mat1, size1, pos2, mat2, size2):
    """mjc_BoxBox (separating axes: 6 face normals, 9 edge crossings; the face case
    clips the other box's nearest face against the reference face, the edge case
    clips the edges' parallelogram), then mj_collideGeoms' removal of contacts
    outside a box and of exact duplicates. Up to 9 contacts."""
    pos21 = _mulTv(mat1, pos2 - pos1)
    pos12 = _mulTv(mat2, pos1 - pos2)
    rot = _mulTm(mat1, mat2)
    rott = rot.transpose()
    rotabs = ti.abs(rot)
    rottabs = ti.abs(rott)
    plen2 = _mulv(rotabs, size2)
    plen1 = _mulTv(rotabs, size1)

    penetration = margin
    for i in ti.static(range(3)):
        penetration += size1[i] * 3 + size2[i] * 3

    # face axes
    separated = False
    code = -1
    for i in ti.static(range(3)):
        f1 = -ti.abs(pos21[i]) + size1[i] + plen2[i]
        f2 = -ti.abs(pos12[i]) + size2[i] + plen1[i]
        separated = separated | (f1 < -margin) | (f2 < -margin)
        better1 = f1 < penetration
        penetration = _sel(better1, f1, penetration)
        code = _sel(better1, i + _sel(pos21[i] < 0, 3, 0), code)
        better2 = f2 < penetration
        penetration = _sel(better2, f2, penetration)
        code = _sel(better2, i + _sel(pos12[i] < 0, 3, 0) + 6, code)

    # edge-edge axes: box 1's axis i crossed with box 2's axis j (in box 1's frame)
    cle1 = 0
    cle2 = 0
    inside = False
    clnorm = ti.Vector([0.0, 0.0, 0.0])
    for axisid in range(9):
        i = axisid // 3
        j = axisid % 3
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        cross = ti.Vector([_sel(i2 == 0, rott[j, i1], _sel(i1 == 0, -rott[j, i2], 0.0)),
                           _sel(i2 == 1, rott[j, i1], _sel(i1 == 1, -rott[j, i2], 0.0)),
                           _sel(i2 == 2, rott[j, i1], _sel(i1 == 2, -rott[j, i2], 0.0))])
        norm = ti.sqrt(cross[0] * cross[0] + cross[1] * cross[1] + cross[2] * cross[2])
        ok = norm >= MINVAL
        norm = _sel(ok, norm, 1.0)  # axis skipped; keep the arithmetic finite
        axis = cross * (1 / norm)
        c2 = _dot(pos21, axis)
        # the other two axes of each box, in increasing order
        ka = _sel(i == 0, 1, 0)
        kb = _sel(i == 2, 1, 2)
        ja = _sel(j == 0, 1, 0)
        jb = _sel(j == 2, 1, 2)
        c3 = size1[ka] * ti.abs(axis[ka]) + size1[kb] * ti.abs(axis[kb]) \
            + size2[ja] * rotabs[i, 3 - ja - j] / norm + size2[jb] * rotabs[i, 3 - jb - j] / norm \
            - ti.abs(c2)
        separated = separated | (ok & (c3 < -margin))
        better = ok & (c3 < penetration * (1 - 1e-12))
        e1 = 0
        e2 = 0
        for k in ti.static(range(3)):
            e1 += _sel((k != i) & ((axis[k] > 0) != (c2 < 0)), 1 << k, 0)
            flip = (k - j + 3) % 3 == 1
            other = ti.max(0, ti.min(2, 3 - k - j))
            e2 += _sel((k != j) & (((rot[i, other] > 0) != (c2 < 0)) != flip), 1 << k, 0)
        penetration = _sel(better, c3, penetration)
        cle1 = _sel(better, e1, cle1)
        cle2 = _sel(better, e2, cle2)
        code = _sel(better, 12 + axisid, code)
        clnorm = _sel(better, axis, clnorm)
        inside = _sel(better, c2 < 0, inside)

    # contacts (world position, dist) that mj_collideGeoms keeps as inside the boxes
    buf = ti.Matrix.zero(float, BOXBOX_RAW, 4)
    n = 0
    normal = ti.Vector([0.0, 0.0, 0.0])
    if (not separated) & (code >= 0) & (code < 12):
        n, normal = _box_face(buf, margin, code, pos1, mat1, size1, pos2, mat2, size2,
                              pos21, pos12, rot)
    elif (not separated) & (code >= 12):
        n, normal = _box_edge(buf, margin, code, cle1, cle2, inside, clnorm, pos1, mat1,
                              size1, pos2, mat2, size2, pos21, rot, rotabs, rottabs)

    # and of contacts at exactly the same place, the last one
    for i in range(n):
        dup = False
        for j in range(i + 1, n):
            dup = dup | ((buf[i, 0] == buf[j, 0]) & (buf[i, 1] == buf[j, 1]) &
                         (buf[i, 2] == buf[j, 2]))
        if not dup:
            add(out, buf[i, 3], ti.Vector([buf[i, 0], buf[i, 1], buf[i, 2]]), normal)


@ti.func
def _box_face(buf: ti.template(), margin, code, pos1, mat1, size1, pos2, mat2, size2,
              pos21, pos12, rot):
    """mjc_BoxBox when a face normal separates least: the nearest face of the other
    box, clipped against the reference face (code = face + 6 * which box owns it)."""
    q1 = code % 6
    own2 = code >= 6  # the face is box 2's
    rotmore = _face_rotation(q1)
    r = _sel(own2, _mulmT(rotmore, rot), _mulm(rotmore, rot))
    p = _sel(own2, _mulv(rotmore, pos12), _mulv(rotmore, pos21))
    ss = ti.abs(_sel(own2, _mulv(rotmore, size2), _mulv(rotmore, size1)))
    s = _sel(own2, size1, size2)
    frame = _sel(own2, _mulmT(mat2, rotmore), _mulmT(mat1, rotmore))
    origin = _sel(own2, pos2, pos1)
    normal = _col(frame, 2) * _sel(own2, -1.0, 1.0)
    lx = ss[0]
    ly = ss[1]
    hz = ss[2]
    pz = p[2] - hz

    # the other box's corner nearest the face (p0) and its edges lying low over it
    sg = ti.Vector([_sel(r[2, 0] < 0, 1.0, -1.0), _sel(r[2, 1] < 0, 1.0, -1.0),
                    _sel(r[2, 2] < 0, 1.0, -1.0)])
    edge = ti.Matrix.rows([ti.Vector([r[0, i], r[1, i], r[2, i]]) * (s[i] * -2 * sg[i])
                           for i in ti.static(range(3))])
    p0 = ti.Vector([p[0], p[1], pz]) + ti.Vector([r[0, 0], r[1, 0], r[2, 0]]) * (s[0] * sg[0])
    p0 = p0 + ti.Vector([r[0, 1], r[1, 1], r[2, 1]]) * (s[1] * sg[1])
    p0 = p0 + ti.Vector([r[0, 2], r[1, 2], r[2, 2]]) * (s[2] * sg[2])
    low0 = ti.abs(r[2, 0]) < 0.5
    low1 = ti.abs(r[2, 1]) < 0.5
    low2 = ti.abs(r[2, 2]) < 0.5
    m = 1 + _sel(low0, 1, 0) + _sel(low1, 1, 0) + _sel(low2, 1, 0)
    # pts 1, 2: the low edges in axis order
    e1 = _sel(low0, 0, _sel(low1, 1, 2))
    e2 = _sel(low0 & low1, 1, 2)
    p1 = _row(edge, e1)
    p2 = _sel(m > 2, _row(edge, e2), ti.Vector([0.0, 0.0, 0.0]))
    p3 = p0 + p1
    p4 = p0 + p2
    p5 = p3 + p2
    nlines = _sel(m > 2, 4, _sel(m > 1, 1, 0))
    det = p1[0] * p2[1] - p2[0] * p1[1]
    inv = 1 / _sel(det != 0, det, 1.0)

    # candidates in MuJoCo's order (16 edge crossings with the face's border lines,
    # 4 face corners inside the other face, the other face's corners over this face),
    # computed branch-free for all three kinds and selected
    kept = 0
    for c in range(BOXBOX_RAW):
        # the other face's edges (start, direction): (p0, p1), (p0, p2), (p3, p2), (p4, p1)
        il = c // 4
        start = _sel(il < 2, p0, _sel(il == 2, p3, p4))
        dirn = _sel((il == 0) | (il == 3), p1, p2)
        xq = c % 4 < 2  # crossing x = +-lx, else y = +-ly
        la = _sel(xq, start[0], start[1])
        lb = _sel(xq, dirn[0], dirn[1])
        okb = ti.abs(lb) > MINVAL
        lc1 = (_sel(xq, lx, ly) * (2 * (c % 2) - 1) - la) * (1 / _sel(okb, lb, 1.0))
        lc2 = _sel(xq, start[1], start[0]) + _sel(xq, dirn[1], dirn[0]) * lc1
        line_ok = (il < nlines) & okb & (lc1 >= 0) & (lc1 <= 1) & \
            (ti.abs(lc2) <= _sel(xq, ly, lx))
        line_pt = start + dirn * lc1

        ic = ti.min(ti.max(c - 16, 0), 3)
        llx = _sel(ic // 2 != 0, lx, -lx)
        lly = _sel(ic % 2 != 0, ly, -ly)
        x = llx - p0[0]
        y = lly - p0[1]
        u = (x * p2[1] - y * p2[0]) * inv
        v = (y * p1[0] - x * p1[1]) * inv
        corner_ok = (m > 2) & (u > 0) & (v > 0) & (u < 1) & (v < 1)
        corner_pt = ti.Vector([llx, lly, p0[2] + u * p1[2] + v * p2[2]])

        ip = ti.max(c - 20, 0)
        cp = _sel(ip == 0, p0, _sel(ip == 1, p3, _sel(ip == 2, p4, p5)))
        cp_ok = (ip < (1 << (m - 1))) & ((ip == 0) | ((cp[0] > -lx) & (cp[0] < lx) &
                                                      (cp[1] > -ly) & (cp[1] < ly)))
        valid = _sel(c < 16, line_ok, _sel(c < 20, corner_ok, cp_ok))
        pt = _sel(c < 16, line_pt, _sel(c < 20, corner_pt, cp))
        # within the margin; the contact lies halfway between the surfaces
        half = pt[2] * 0.5
        kept = _keep(buf, kept, valid & (pt[2] <= margin), 2 * half,
                     ti.Vector([pt[0], pt[1], half]), frame, origin, hz, margin, pos1, mat1,
                     size1, pos2, mat2, size2)
    return kept, normal


@ti.func
def _box_edge(buf: ti.template(), margin, code, cle1, cle2, inside, clnorm, pos1, mat1,
              size1, pos2, mat2, size2, pos21, rot, rotabs, rottabs):
    """mjc_BoxBox when an edge-edge axis separates least: the face of box 2 along the
    crossing edges, projected along the axis onto box 1's face and clipped."""
    margin2 = margin * margin
    q1 = (code - 12) // 3
    q2 = (code - 12) % 3
    a1 = _sel(q2 == 1, 0, 1)
    a2 = _sel(q2 == 2, 0, 2)
    swap = rotabs[q1, a1] < rotabs[q1, a2]
    ax1 = _sel(swap, a2, a1)
    ax2 = _sel(swap, 3 - q2 - a2, a2)
    b1 = _sel(q1 == 1, 0, 1)
    b2 = _sel(q1 == 2, 0, 2)
    pax2 = _sel(rottabs[q2, b1] < rottabs[q2, b2], 3 - q1 - b2, b2)
    clface = _sel((cle1 & (1 << pax2)) != 0, pax2, pax2 + 3)

    rotmore = _face_rotation(clface)
    pf = _mulv(rotmore, pos21)
    rnorm = _mulv(rotmore, clnorm)
    r = _mulm(rotmore, rot)
    s = ti.abs(_mulTv(rotmore, size1))
    lx = s[0]
    ly = s[1]
    hz = s[2]
    p = ti.Vector([pf[0], pf[1], pf[2] - hz])
    frame = _mulmT(mat1, rotmore)
    sgn = _sel(inside, -1.0, 1.0)
    normal = _mulv(frame, rnorm) * sgn

    # box 2's face along the two edges (pu), in box 1's face frame
    sg1 = _sel((cle2 & (1 << ax1)) != 0, 1.0, -1.0)
    sg2 = _sel((cle2 & (1 << ax2)) != 0, 1.0, -1.0)
    eq = _col(r, q2)
    base = p + _col(r, ax1) * (size2[ax1] * sg1)
    base = base + _col(r, ax2) * (size2[ax2] * sg2)
    base2 = p + _col(r, ax1) * (size2[ax1] * -sg1)
    base2 = base2 + _col(r, ax2) * (size2[ax2] * sg2)
    pu = ti.Matrix.rows([base + eq * size2[q2], base + eq * (-size2[q2]),
                         base2 + eq * size2[q2], base2 + eq * (-size2[q2])])
    axi0 = _row(pu, 0)
    axi1 = _row(pu, 1) - axi0
    axi2 = _row(pu, 2) - axi0

    kept = 0
    if ti.abs(rnorm[2]) >= MINVAL:
        innorm = (1 / rnorm[2]) * sgn
        # its corners projected along the axis onto the face plane
        proj = ti.Matrix.rows([_row(pu, i) + rnorm * (-pu[i, 2] * (1 / rnorm[2]))
                               for i in ti.static(range(4))])
        pts0 = _row(proj, 0)
        pts1 = _row(proj, 1) - pts0
        pts2 = _row(proj, 2) - pts0
        # its edges (start, direction), projected (lines) and not (linesu)
        s01 = pts0 + pts1
        s02 = pts0 + pts2
        u01 = axi0 + axi1
        u02 = axi0 + axi2
        lines = ti.Matrix.rows([
            [pts0[0], pts0[1], pts0[2], pts1[0], pts1[1], pts1[2]],
            [pts0[0], pts0[1], pts0[2], pts2[0], pts2[1], pts2[2]],
            [s01[0], s01[1], s01[2], pts2[0], pts2[1], pts2[2]],
            [s02[0], s02[1], s02[2], pts1[0], pts1[1], pts1[2]]])
        linesu = ti.Matrix.rows([
            [axi0[0], axi0[1], axi0[2], axi1[0], axi1[1], axi1[2]],
            [axi0[0], axi0[1], axi0[2], axi2[0], axi2[1], axi2[2]],
            [u01[0], u01[1], u01[2], axi2[0], axi2[1], axi2[2]],
            [u02[0], u02[1], u02[2], axi1[0], axi1[1], axi1[2]]])
        # MuJoCo reuses this determinant's variable for the squared distance of each
        # accepted face corner; later corners divide by that
        det = pts1[0] * pts2[1] - pts2[0] * pts1[1]

        # candidates in MuJoCo's order (16 projected edges crossing the face's border
        # lines, 4 face corners within the projected face, 4 projected corners over
        # it), computed branch-free for all three kinds and selected
        n = 0
        nl = 0
        nf = 0
        for c in range(BOXBOX_RAW):
            nl = _sel(c == 16, n, nl)
            nf = _sel(c == 20, n, nf)
            il = ti.min(c // 4, 3)
            q = (c // 2) % 2
            la = lines[il, q]
            lb = lines[il, 3 + q]
            okb = ti.abs(lb) > MINVAL
            l = s[q] * (2 * (c % 2) - 1)
            lc1 = (l - la) * (1 / _sel(okb, lb, 1.0))
            lc2 = lines[il, 1 - q] + lines[il, 4 - q] * lc1
            line_ok = okb & (lc1 >= 0) & (lc1 <= 1) & (ti.abs(lc2) <= s[1 - q]) & \
                ((linesu[il, 2] + linesu[il, 5] * lc1) * innorm <= margin)
            line_pt = ti.Vector([
                linesu[il, 0] * 0.5 + linesu[il, 3] * (0.5 * lc1) +
                _sel(q == 0, 0.5 * l, 0.5 * lc2),
                linesu[il, 1] * 0.5 + linesu[il, 4] * (0.5 * lc1) +
                _sel(q == 0, 0.5 * lc2, 0.5 * l),
                linesu[il, 2] * 0.5 + linesu[il, 5] * (0.5 * lc1)])
            line_dist = line_pt[2] * innorm * 2

            ic = ti.min(ti.max(c - 16, 0), 3)
            llx = _sel(ic // 2 != 0, lx, -lx)
            lly = _sel(ic % 2 != 0, ly, -ly)
            x = llx - pts0[0]
            y = lly - pts0[1]
            # 1 / 0 is inf in MuJoCo: a huge finite stand-in keeps fast math defined
            inv = 1 / _sel(det != 0, det, 1e-30)
            u = (x * pts2[1] - y * pts2[0]) * inv
            v = (y * pts1[0] - x * pts1[1]) * inv
            uout = (u < 0) | (u > 1)
            vout = (v < 0) | (v > 1)
            near = (c >= 16) & (c < 20) & (not _sel(nl == 0, uout & vout, uout | vout))
            uc = ti.min(ti.max(u, 0.0), 1.0)
            vc = ti.min(ti.max(v, 0.0), 1.0)
            on2 = _row(pu, 0) * (1 - uc - vc) + _row(pu, 1) * uc
            on2 = on2 + _row(pu, 2) * vc
            gap = ti.Vector([llx, lly, 0.0]) - on2
            csq = _dot(gap, gap)
            det = _sel(near, csq, det)
            corner_ok = near & (not ((on2[2] > 0) & (csq > margin2)))
            corner_pt = ti.Vector([(llx + on2[0]) * 0.5, (lly + on2[1]) * 0.5,
                                   (0.0 + on2[2]) * 0.5])
            corner_dist = ti.sqrt(csq) * _sel(on2[2] < 0, -1.0, 1.0)

            ip = ti.min(ti.max(c - 20, 0), 3)
            px = proj[ip, 0]
            py = proj[ip, 1]
            xout = (px < -lx) | (px > lx)
            yout = (py < -ly) | (py > ly)
            skip = _sel(nl == 0, (nf != 0) & xout & yout, xout | yout)
            xlo = px < -lx
            xhi = px > lx
            ylo = py < -ly
            yhi = py > ly
            puz = pu[ip, 2]
            psq = _sel(xlo, (px + lx) * (px + lx), _sel(xhi, (px - lx) * (px - lx), 0.0)) \
                + _sel(ylo, (py + ly) * (py + ly), _sel(yhi, (py - ly) * (py - ly), 0.0)) \
                + puz * innorm * puz * innorm
            proj_ok = (not skip) & (not ((puz > 0) & (psq > margin2)))
            proj_pt = ti.Vector([
                _sel(xlo, -lx * 0.5, _sel(xhi, lx * 0.5, px * 0.5)) + pu[ip, 0] * 0.5,
                _sel(ylo, -ly * 0.5, _sel(yhi, ly * 0.5, py * 0.5)) + pu[ip, 1] * 0.5,
                0.0 + pu[ip, 2] * 0.5])
            proj_dist = ti.sqrt(psq) * _sel(puz < 0, -1.0, 1.0)

            valid = _sel(c < 16, line_ok, _sel(c < 20, corner_ok, proj_ok))
            n += _sel(valid, 1, 0)
            kept = _keep(buf, kept, valid, _sel(c < 16, line_dist,
                                                _sel(c < 20, corner_dist, proj_dist)),
                         _sel(c < 16, line_pt, _sel(c < 20, corner_pt, proj_pt)),
                         frame, pos1, hz, margin, pos1, mat1, size1, pos2, mat2, size2)
    return kept, normal
