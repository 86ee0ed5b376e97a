"""Skins posed as mjv_updateActiveSkin poses them (tiphys.skin_vertices against
MuJoCo's mjvScene.skinvert, to a float32 ulp) and rays against them
(tiphys.ray_skin, mju_raySkin: here checked against a plain numpy intersection of
the same posed triangles, since the mujoco bindings take mju_raySkin's arrays as
scalars)."""
import mujoco
import numpy as np
import pytest

import tiphys
from test_skin import DEFORMABLE, INLINE, posed_worlds, two_body

XML = two_body(INLINE.replace('group="2"', 'group="1"'), deformable=DEFORMABLE)
NWORLD = 3


@pytest.fixture(scope="module")
def posed():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    mjds, d = posed_worlds(mjm, m, NWORLD, 5)
    return mjm, mjds, m, d


def _mujoco_skinvert(mjm, mjd):
    scn = mujoco.MjvScene(mjm, maxgeom=100)
    opt = mujoco.MjvOption()
    opt.skingroup[:] = 1
    mujoco.mjv_updateScene(mjm, mjd, opt, None, mujoco.MjvCamera(),
                           mujoco.mjtCatBit.mjCAT_ALL, scn)
    return np.asarray(scn.skinvert).reshape(-1, 3)


def test_skin_vertices_are_mujocos(posed):
    mjm, mjds, m, d = posed
    for s in range(mjm.nskin):
        adr, n = mjm.skin_vertadr[s], mjm.skin_vertnum[s]
        ours = tiphys.skin_vertices(m, d, s)
        assert ours.dtype == np.float32 and ours.shape == (NWORLD, n, 3)
        for w, mjd in enumerate(mjds):
            theirs = _mujoco_skinvert(mjm, mjd)[adr:adr + n]
            np.testing.assert_allclose(ours[w], theirs, rtol=2.5e-7, atol=1e-9, err_msg=str(s))


def _numpy_ray(verts, faces, pnt, vec):
    """Nearest hit (Moller-Trumbore) and the face vertex nearest it, or (-1, -1)."""
    best, vid = -1.0, -1
    for f in faces:
        v0, v1, v2 = (verts[i].astype(np.float64) for i in f)
        e1, e2 = v1 - v0, v2 - v0
        p = np.cross(vec, e2)
        det = e1 @ p
        if abs(det) < 1e-15:
            continue
        t = pnt - v0
        u = (t @ p) / det
        q = np.cross(t, e1)
        v = (vec @ q) / det
        x = (e2 @ q) / det
        if u < 0 or v < 0 or u + v > 1 or x < 0:
            continue
        if best < 0 or x < best:
            best = x
            hit = pnt + x * vec
            dists = [np.linalg.norm(hit - verts[i]) for i in f]
            vid = int(f[int(np.argmin(dists))])
    return best, vid


def test_rays_hit_the_posed_skin(posed):
    mjm, mjds, m, d = posed
    rng = np.random.default_rng(11)
    for s in range(mjm.nskin):
        faces = mjm.skin_face[mjm.skin_faceadr[s]:mjm.skin_faceadr[s] + mjm.skin_facenum[s]]
        verts = tiphys.skin_vertices(m, d, s)
        hits = 0
        for _ in range(8):
            center = verts.mean(axis=1)  # (nworld, 3): aim near each world's skin
            pnt = center + rng.uniform(-1, 1, (NWORLD, 3))
            vec = center + rng.uniform(-.05, .05, (NWORLD, 3)) - pnt
            dist, vertid = tiphys.ray_skin(m, d, s, pnt, vec)
            for w in range(NWORLD):
                want, wid = _numpy_ray(verts[w], faces, pnt[w], vec[w])
                assert dist[w] == pytest.approx(want, rel=1e-9, abs=1e-12), (s, w)
                assert vertid[w] == wid
                hits += want >= 0
        assert hits > 0
        # a ray pointing away misses
        dist, vertid = tiphys.ray_skin(m, d, s, [5, 5, 5], [1, 0, 0])
        assert (dist == -1).all() and (vertid == -1).all()
    with pytest.raises(ValueError, match="skinid"):
        tiphys.ray_skin(m, d, mjm.nskin, [0, 0, 0], [1, 0, 0])
