"""Skins posed as MuJoCo poses them (mjv_updateActiveSkin) and rays against them
(mju_raySkin), per world.

A skin's vertices are the weighted sum over its bones of the bind-pose vertex moved by
the bone's body (rotation xquat * conj(bindquat), translation xpos - R bindpos),
accumulated in single precision as MuJoCo accumulates them into mjvScene.skinvert;
normals are the area-weighted sums of the face normals (single precision), and
``inflate`` moves each vertex along its normal. The ray test is mju_raySkin's: the
vertices' bounding box first (ray_box), then every face (ray_triangle), the nearest
hit, and the face vertex nearest the hit point.
"""
import taichi as ti

from .consts import MINVAL
from .math import quat2mat, quat_mul
from .ray import _normal_basis, ray_box, ray_triangle

ND = ti.types.ndarray()


@ti.func
def _vf(verts: ti.template(), w, v):
    return ti.Vector([ti.cast(verts[w, v, k], float) for k in ti.static(range(3))])


@ti.kernel
def _skin_pose(skinid: ti.i32, skin_vertadr: ND, skin_vertnum: ND, skin_faceadr: ND,
               skin_facenum: ND, skin_boneadr: ND, skin_bonenum: ND, skin_bonebodyid: ND,
               skin_bonebindpos: ND, skin_bonebindquat: ND, skin_bonevertadr: ND,
               skin_bonevertnum: ND, skin_bonevertid: ND, skin_bonevertweight: ND,
               skin_vert: ND, skin_face: ND, skin_inflate: ND, xpos: ND, xquat: ND,
               verts: ND, normals: ND):
    """verts/normals[w, :vertnum] of skin ``skinid`` in every world (float32, as
    mjv_updateActiveSkin writes mjvScene.skinvert/skinnormal)."""
    for w in range(verts.shape[0]):
        vadr = skin_vertadr[skinid]
        nvert = skin_vertnum[skinid]
        for v in range(nvert):
            for k in ti.static(range(3)):
                verts[w, v, k] = ti.f32(0.0)
                normals[w, v, k] = ti.f32(0.0)
        for j in range(skin_boneadr[skinid], skin_boneadr[skinid] + skin_bonenum[skinid]):
            bind = ti.Vector([skin_bonebindpos[j][k] for k in ti.static(range(3))])
            bq = ti.Vector([skin_bonebindquat[j][k] for k in ti.static(range(4))])
            body = skin_bonebodyid[j]
            xq = ti.Vector([xquat[w, body][k] for k in ti.static(range(4))])
            rot = quat2mat(quat_mul(xq, ti.Vector([bq[0], -bq[1], -bq[2], -bq[3]])))
            translate = ti.Vector([xpos[w, body][k] for k in ti.static(range(3))]) - rot @ bind
            for k in range(skin_bonevertadr[j], skin_bonevertadr[j] + skin_bonevertnum[j]):
                vid = skin_bonevertid[k]
                weight = ti.cast(skin_bonevertweight[k], ti.f32)
                p = ti.Vector([skin_vert[vadr + vid][i] for i in ti.static(range(3))])
                p1 = rot @ p + translate
                for i in ti.static(range(3)):
                    verts[w, vid, i] = verts[w, vid, i] + weight * ti.cast(p1[i], ti.f32)
        for f in range(skin_faceadr[skinid], skin_faceadr[skinid] + skin_facenum[skinid]):
            a = skin_face[f][0]
            b = skin_face[f][1]
            c = skin_face[f][2]
            pa = _vf(verts, w, a)
            nrm = (_vf(verts, w, b) - pa).cross(_vf(verts, w, c) - pa)
            for r in ti.static(range(3)):
                vid = a if r == 0 else (b if r == 1 else c)
                for t in ti.static(range(3)):
                    normals[w, vid, t] = ti.cast(ti.cast(normals[w, vid, t], float) + nrm[t],
                                                 ti.f32)
        for v in range(nvert):
            n0 = normals[w, v, 0]
            n1 = normals[w, v, 1]
            n2 = normals[w, v, 2]
            s = ti.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
            scl = ti.f32(1.0) / ti.max(ti.f32(MINVAL), s)
            normals[w, v, 0] = n0 * scl
            normals[w, v, 1] = n1 * scl
            normals[w, v, 2] = n2 * scl
        inflate = ti.cast(skin_inflate[skinid], ti.f32)
        if inflate != 0:
            for v in range(nvert):
                for k in ti.static(range(3)):
                    verts[w, v, k] = verts[w, v, k] + inflate * normals[w, v, k]


@ti.kernel
def _ray_skin(skinid: ti.i32, skin_vertnum: ND, skin_faceadr: ND, skin_facenum: ND,
              skin_face: ND, verts: ND, pnts: ND, vecs: ND, dist: ND, vertid: ND):
    """mju_raySkin on each world's posed skin (verts from _skin_pose)."""
    for w in range(verts.shape[0]):
        nvert = skin_vertnum[skinid]
        pnt = ti.Vector([pnts[w, k] for k in ti.static(range(3))])
        vec = ti.Vector([vecs[w, k] for k in ti.static(range(3))])
        lo = _vf(verts, w, 0)
        hi = _vf(verts, w, 0)
        for v in range(1, nvert):
            p = _vf(verts, w, v)
            for j in ti.static(range(3)):
                if lo[j] > p[j]:
                    lo[j] = p[j]
                if hi[j] < p[j]:
                    hi[j] = p[j]
        x = -1.0
        best = -1
        eye = ti.Matrix([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        if nvert > 0 and ray_box(0.5 * (lo + hi), eye, 0.5 * (hi - lo), pnt, vec) >= 0.0:
            b0, b1 = _normal_basis(vec)
            for f in range(skin_faceadr[skinid], skin_faceadr[skinid] + skin_facenum[skinid]):
                ia = skin_face[f][0]
                ib = skin_face[f][1]
                ic = skin_face[f][2]
                va = _vf(verts, w, ia)
                vb = _vf(verts, w, ib)
                vc = _vf(verts, w, ic)
                sol = ray_triangle(va, vb, vc, pnt, vec, b0, b1)
                if sol >= 0.0 and (x < 0.0 or sol < x):
                    x = sol
                    hit = pnt + sol * vec
                    near = ia
                    dmin = (hit - va).norm()
                    db = (hit - vb).norm()
                    if db < dmin:
                        dmin = db
                        near = ib
                    if (hit - vc).norm() < dmin:
                        near = ic
                    best = near
        dist[w] = x
        vertid[w] = best
