"""Ray casting (tiphys.ray) against MuJoCo 3.4.0: mj_ray, mj_multiRay, mj_rayMesh,
mj_rayHfield and mju_rayGeom.

Models: the mujoco-warp ray test scene (every primitive, two meshes, a height field),
the mug (a 24k-triangle mesh and boxes), the height-field scene, and SCENE below
(free and hinged bodies, a static body, geom groups including out-of-range ones,
alpha 0 by rgba and by material, visual-only geoms, an infinite plane). Several worlds
with different random states (SCENE's bodies moved, so every world sees a different
scene); rays from random points, most aimed near a random geom, some random. Distances
must match to 1e-9 of the ray length scale (f64, the same arithmetic up to
round-off); the geom id must match unless MuJoCo's distance to our geom equals its
own (a tie between touching geoms, decided by round-off).

Run as a script (``python tests/test_ray.py f32``) it prints the f32 errors.
"""
import json
import os
import sys

import mujoco
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiphys  # noqa: E402
from oracle import corpus_dir  # noqa: E402
import spirv  # noqa: E402
import subproc  # noqa: E402
from tiphys.ray import (MAXVAL, multi_ray, ray, ray_batch, ray_geom, ray_hfield,  # noqa: E402
                        ray_mesh)

NWORLD = 3
NRAY = 120
TOL = 1e-9

SCENE = """
<mujoco>
  <asset>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale=".4 .4 .4"/>
    <mesh name="oct" vertex="1 0 0  -1 0 0  0 1 0  0 -1 0  0 0 1  0 0 -1" scale=".2 .25 .3"/>
    <hfield name="hf" nrow="4" ncol="5" size=".6 .5 .3 .1"
            elevation="0 .2 .5 .3 0  .1 .9 1 .4 .2  0 .6 .8 .7 .1  .3 .2 0 .5 .4"/>
    <material name="hidden" rgba="1 1 1 0"/>
    <material name="shown" rgba="1 0 0 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <geom name="wall" type="plane" size="1.5 1 .1" pos="0 -2 1" euler="-90 0 0"/>
    <geom name="terrain" type="hfield" hfield="hf" pos="1.6 -.4 .05" euler="0 0 30"/>
    <geom name="post" type="box" size=".1 .1 .6" pos="-1.2 -1 .6" group="3"/>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom type="sphere" size=".2"/>
      <geom type="capsule" size=".1 .3" pos=".3 0 0" euler="0 90 0" group="1"/>
      <geom type="box" size=".1 .2 .3" pos="0 .4 0" rgba="1 1 1 0"/>
      <geom type="ellipsoid" size=".1 .15 .05" pos="0 -.35 0" contype="0" conaffinity="0"/>
    </body>
    <body name="b" pos=".8 .3 1.2">
      <freejoint/>
      <geom type="ellipsoid" size=".2 .1 .3"/>
      <geom type="cylinder" size=".15 .25" pos="0 0 .5" material="hidden"/>
      <geom type="mesh" mesh="tet" pos="0 -.5 0" material="shown" rgba="1 1 1 0"/>
      <geom type="cylinder" size=".12 .2" pos="0 .4 -.3" group="7"/>
    </body>
    <body name="c" pos="-.6 .5 .8">
      <geom type="box" size=".15 .25 .1" euler="10 20 30"/>
      <body name="c2" pos="0 0 .4">
        <geom type="capsule" size=".05" fromto="0 0 0 .2 .2 .2" group="-2"/>
      </body>
    </body>
    <body name="d" pos="-.5 -.6 1">
      <joint type="hinge" axis="0 1 0"/>
      <geom type="mesh" mesh="oct" group="2"/>
      <geom type="cylinder" size=".08 .3" pos="0 0 .5" euler="30 0 0" group="4"/>
    </body>
    <body name="e" pos=".3 -1 .5">
      <freejoint/>
      <geom type="box" size=".1 .1 .1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""

MODELS = {
    "scene": SCENE,
    "ray": "mjwarp/ray.xml",
    "mug": "mjwarp/mug/mug.xml",
    "hfield": "mjwarp/hfield/hfield.xml",
}

_CACHE = {}


def _load(name):
    if name not in _CACHE:
        src = MODELS[name]
        if src.lstrip().startswith("<"):
            m = tiphys.load_model_from_string(src)
            mjm = mujoco.MjModel.from_xml_string(src)
        else:
            path = os.path.join(corpus_dir(), src)
            m = tiphys.load_model(path)
            mjm = mujoco.MjModel.from_xml_path(path)
        _CACHE[name] = (m, mjm)
    return _CACHE[name]


def _states(mjm, seed, nworld=NWORLD):
    """Random qpos per world: free bodies moved around their place and turned, hinges
    turned (world 0 keeps qpos0)."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(1, nworld):
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                qpos[w, adr:adr + 3] += rng.uniform(-0.3, 0.3, 3)
                q = rng.normal(size=4)
                qpos[w, adr + 3:adr + 7] = q / np.linalg.norm(q)
            elif mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                qpos[w, adr] = rng.uniform(-3, 3)
    return qpos


def _pair(name, seed=0, nworld=NWORLD):
    """(m, mjm, d, [MjData per world]) with kinematics run in both engines."""
    m, mjm = _load(name)
    qpos = _states(mjm, seed, nworld)
    d = tiphys.make_data(m, nworld)
    if mjm.nq:
        d.qpos.from_numpy(qpos)
    tiphys.kinematics(m, d)
    mds = []
    for w in range(nworld):
        md = mujoco.MjData(mjm)
        md.qpos[:] = qpos[w]
        mujoco.mj_kinematics(mjm, md)
        mds.append(md)
    return m, mjm, d, mds


def _rays(mjm, md, rng, nray=NRAY):
    """Origins in the model's box; 80% aimed near a random geom center, the rest
    random (some pointing away from everything)."""
    center, extent = mjm.stat.center, mjm.stat.extent
    pnts = center + rng.uniform(-0.8, 0.8, (nray, 3)) * extent
    targets = md.geom_xpos[rng.integers(0, mjm.ngeom, nray)] + rng.normal(0, 0.1, (nray, 3))
    vecs = targets - pnts
    k = nray // 5
    vecs[:k] = rng.normal(size=(k, 3))
    vecs *= rng.uniform(0.5, 2.0, (nray, 1))  # distances are in units of |vec|
    return pnts, vecs


def _mj_ray(mjm, md, pnt, vec, geomgroup, flg_static, bodyexclude):
    gid = np.zeros(1, np.int32)
    dist = mujoco.mj_ray(mjm, md, pnt, vec, geomgroup, flg_static, bodyexclude, gid)
    return dist, int(gid[0])


def _mj_geom_dist(mjm, md, g, pnt, vec):
    """MuJoCo's distance from the ray to geom g alone."""
    t = mjm.geom_type[g]
    if t == mujoco.mjtGeom.mjGEOM_MESH:
        return mujoco.mj_rayMesh(mjm, md, g, pnt, vec)
    if t == mujoco.mjtGeom.mjGEOM_HFIELD:
        return mujoco.mj_rayHfield(mjm, md, g, pnt, vec)
    return mujoco.mju_rayGeom(md.geom_xpos[g], md.geom_xmat[g], mjm.geom_size[g], pnt, vec, t)


def _check_hits(mjm, md, pnts, vecs, dist, gid, want_dist, want_gid, what):
    """Distances to TOL; geom ids equal, or a round-off tie (MuJoCo's own distance to
    our geom equals its answer). Returns (max error, number of hits)."""
    scale = np.maximum(1.0, np.abs(want_dist))
    err = np.abs(dist - want_dist) / scale
    i = int(np.argmax(err))
    assert err[i] <= TOL, f"{what}: ray {i}: {dist[i]} vs MuJoCo {want_dist[i]}"
    for i in np.nonzero(gid != want_gid)[0]:
        assert gid[i] >= 0 and want_gid[i] >= 0, \
            f"{what}: ray {i}: geom {gid[i]} vs MuJoCo {want_gid[i]}"
        tie = _mj_geom_dist(mjm, md, gid[i], pnts[i], vecs[i])
        assert abs(tie - want_dist[i]) <= TOL * scale[i], \
            f"{what}: ray {i}: geom {gid[i]} vs MuJoCo {want_gid[i]} (not a tie)"
    return float(err.max()), int((want_dist >= 0).sum())


RAY_OPTIONS = {
    "all": (None, 1, -1),
    "groups": (np.array([1, 0, 1, 0, 0, 1], np.uint8), 1, -1),
    "nostatic": (None, 0, -1),
    "exclude": (np.array([0, 1, 1, 1, 1, 1], np.uint8), 1, 1),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_ray_matches_mj_ray(name):
    m, mjm, d, mds = _pair(name, seed=len(name))
    rng = np.random.default_rng(1)
    for option, (geomgroup, flg_static, bodyexclude) in RAY_OPTIONS.items():
        if name != "scene" and option != "all":
            continue  # the filters are exercised on SCENE, which has every case
        # per-world rays: each world its own origins and directions
        pv = [_rays(mjm, md, rng) for md in mds]
        pnts = np.stack([p for p, _ in pv])
        vecs = np.stack([v for _, v in pv])
        dist, gid = ray_batch(m, d, pnts, vecs, geomgroup, bool(flg_static),
                                   bodyexclude)
        hits = 0
        for w, md in enumerate(mds):
            want = [_mj_ray(mjm, md, pnts[w, i], vecs[w, i], geomgroup, flg_static,
                            bodyexclude) for i in range(NRAY)]
            _, n = _check_hits(mjm, md, pnts[w], vecs[w], dist[w], gid[w],
                               np.array([x for x, _ in want]),
                               np.array([g for _, g in want]), f"{name}/{option} world {w}")
            hits += n
        assert hits > NRAY // 4, f"{name}/{option}: only {hits} hits"
        # one ray per world (mj_ray's own shape), shared and per-world arguments
        d1, g1 = ray(m, d, pnts[:, 0], vecs[:, 0], geomgroup, bool(flg_static),
                          bodyexclude)
        np.testing.assert_array_equal(d1, dist[:, 0])
        np.testing.assert_array_equal(g1, gid[:, 0])
        d2, g2 = ray(m, d, pnts[0, 0], vecs[0, 0], geomgroup, bool(flg_static),
                          bodyexclude)
        for w, md in enumerate(mds):
            want = _mj_ray(mjm, md, pnts[0, 0], vecs[0, 0], geomgroup, flg_static,
                           bodyexclude)
            assert abs(d2[w] - want[0]) <= TOL * max(1, abs(want[0]))


def test_ray_filters_take_effect():
    """The SCENE filters each change some answer (so the comparisons above are not
    vacuous): hidden geoms are never hit, groups and static bodies and the excluded
    body are dropped."""
    m, mjm, d, mds = _pair("scene", seed=5)
    md = mds[0]
    rng = np.random.default_rng(2)
    pnts, vecs = _rays(mjm, md, rng, 400)
    base = ray_batch(m, d, pnts, vecs)[1][0]
    hidden = [g for g in range(mjm.ngeom) if (mjm.geom_matid[g] < 0 and mjm.geom_rgba[g, 3]
                                               == 0) or (mjm.geom_matid[g] >= 0 and
                                                         mjm.mat_rgba[mjm.geom_matid[g], 3] == 0)]
    assert hidden and not np.isin(base, hidden).any()
    for option, (geomgroup, flg_static, bodyexclude) in RAY_OPTIONS.items():
        if option == "all":
            continue
        gid = ray_batch(m, d, pnts, vecs, geomgroup, bool(flg_static), bodyexclude)[1][0]
        assert (gid != base).any(), option


def test_multi_ray_matches_mj_multi_ray():
    cut_effect = 0
    for name in ("scene", "ray", "mug"):
        m, mjm, d, mds = _pair(name, seed=3 + len(name))
        rng = np.random.default_rng(4)
        pnts = np.stack([_rays(mjm, md, rng, 1)[0][0] for md in mds])
        # directions towards every geom (and around), from each world's point
        vecs = np.stack([md.geom_xpos[rng.integers(0, mjm.ngeom, NRAY)] - pnts[w]
                         + rng.normal(0, .15, (NRAY, 3)) for w, md in enumerate(mds)])
        hits = {}
        for cutoff in (MAXVAL, 0.6 * mjm.stat.extent):
            for option in ("all", "exclude"):
                geomgroup, flg_static, bodyexclude = RAY_OPTIONS[option]
                bodyexclude = min(bodyexclude, mjm.nbody - 1)
                dist, gid = multi_ray(m, d, pnts, vecs, geomgroup, bool(flg_static),
                                           bodyexclude, cutoff)
                hits[cutoff, option] = 0
                for w, md in enumerate(mds):
                    want_d = np.zeros(NRAY)
                    want_g = np.zeros(NRAY, np.int32)
                    mujoco.mj_multiRay(mjm, md, pnts[w], vecs[w].reshape(-1), geomgroup,
                                       flg_static, bodyexclude, want_g, want_d, NRAY, cutoff)
                    hits[cutoff, option] += _check_hits(
                        mjm, md, np.tile(pnts[w], (NRAY, 1)), vecs[w], dist[w], gid[w],
                        want_d, want_g, f"{name} cutoff {cutoff} world {w}")[1]
        assert hits[MAXVAL, "all"] > NRAY, (name, hits)
        cut_effect += hits[MAXVAL, "all"] > hits[0.6 * mjm.stat.extent, "all"]
    assert cut_effect > 0  # the cutoff drops geoms somewhere


def test_multi_ray_pruning_is_mujocos():
    """mj_multiRay's pruning differs from mj_ray; tiphys reproduces it: a lifted
    box seen from below through an edge, outside the elevation range of its corners."""
    xml = """<mujoco><worldbody>
      <body pos="0 .1 1"><freejoint/><geom type="box" size="1 .02 .02"/></body>
    </worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, 1)
    tiphys.kinematics(m, d)
    md = mujoco.MjData(mjm)
    mujoco.mj_kinematics(mjm, md)
    vec = np.array([[0.0, 0.1, 1.0]])
    dist, gid = multi_ray(m, d, np.zeros(3), vec)
    want_d, want_g = np.zeros(1), np.zeros(1, np.int32)
    mujoco.mj_multiRay(mjm, md, np.zeros(3), vec.reshape(-1), None, 1, -1, want_g, want_d, 1,
                       MAXVAL)
    assert want_g[0] == -1 and gid[0, 0] == -1
    assert ray(m, d, np.zeros(3), vec[0])[1][0] == 0  # mj_ray does hit it
    assert _mj_ray(mjm, md, np.zeros(3), vec[0], None, 1, -1)[1] == 0


@pytest.mark.parametrize("name", ["scene", "ray", "mug", "hfield"])
def test_ray_mesh_and_hfield_match_mujoco(name):
    m, mjm, d, mds = _pair(name, seed=7)
    rng = np.random.default_rng(8)
    geoms = [g for g in range(mjm.ngeom) if mjm.geom_type[g] in
             (mujoco.mjtGeom.mjGEOM_MESH, mujoco.mjtGeom.mjGEOM_HFIELD)]
    assert geoms
    for g in geoms[:6]:
        hits = 0
        for _ in range(8):
            pnts = np.stack([mds[w].geom_xpos[g] + rng.uniform(-1, 1, 3) * mjm.geom_rbound[g]
                             * 2 for w in range(NWORLD)])
            vecs = np.stack([mds[w].geom_xpos[g] - pnts[w] + rng.normal(0, .3, 3) *
                             mjm.geom_rbound[g] for w in range(NWORLD)])
            is_mesh = mjm.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
            fn = ray_mesh if is_mesh else ray_hfield
            got = fn(m, d, g, pnts, vecs)
            for w, md in enumerate(mds):
                want = (mujoco.mj_rayMesh if is_mesh else mujoco.mj_rayHfield)(
                    mjm, md, g, pnts[w], vecs[w])
                assert abs(got[w] - want) <= TOL * max(1, abs(want)), (g, w, got[w], want)
                hits += want >= 0
        assert hits > 0, g


def test_ray_geom_matches_mju_ray_geom():
    rng = np.random.default_rng(9)
    n = 400
    types = rng.choice([0, 2, 3, 4, 5, 6], n)
    pos = rng.normal(size=(n, 3))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    mat = np.zeros((n, 9))
    for i in range(n):
        mujoco.mju_quat2Mat(mat[i], q[i])
    size = rng.uniform(0.1, 1.0, (n, 3))
    size[types == 0, :2] *= rng.choice([0, 1], (np.sum(types == 0), 2))  # some infinite
    pnt = pos + rng.normal(scale=2.0, size=(n, 3))
    vec = pos - pnt + rng.normal(scale=0.5, size=(n, 3))
    pnt[:20] = pos[:20]  # from inside
    got = ray_geom(pos, mat, size, pnt, vec, types)
    want = np.array([mujoco.mju_rayGeom(pos[i], mat[i], size[i], pnt[i], vec[i], types[i])
                     for i in range(n)])
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)
    for t in (0, 2, 3, 4, 5, 6):
        assert np.sum(want[types == t] >= 0) > 5 and np.sum(want[types == t] < 0) > 0, t
    # one ray, one geom: a float; (3, 3) matrices; type names
    i = int(np.argmax(want))
    one = ray_geom(pos[i], mat[i].reshape(3, 3), size[i], pnt[i], vec[i],
                        int(types[i]))
    assert isinstance(one, float) and abs(one - want[i]) <= TOL * max(1, want[i])
    assert ray_geom(np.zeros(3), np.eye(3), np.ones(3), [0, 0, 5.0], [0, 0, -1.0],
                         "box") == 4.0


def test_ray_rejects_bad_input():
    m, mjm, d, _ = _pair("scene", seed=0, nworld=2)
    with pytest.raises(ValueError, match="zero length"):
        ray(m, d, np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="zero length"):
        ray_batch(m, d, np.zeros((2, 3)), [[0, 0, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="zero length"):
        multi_ray(m, d, np.zeros(3), [[0, 0, 1e-20]])
    with pytest.raises(ValueError, match="shape"):
        ray(m, d, np.zeros(2), [0, 0, 1])
    with pytest.raises(ValueError, match="shape"):
        ray(m, d, np.zeros((3, 3)), [0, 0, 1])  # 3 worlds' points for 2 worlds
    with pytest.raises(ValueError, match="shape"):
        ray_batch(m, d, np.zeros((5, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="finite"):
        ray(m, d, [0, 0, np.nan], [0, 0, 1])
    with pytest.raises(ValueError, match="geomgroup"):
        ray(m, d, np.zeros(3), [0, 0, 1], geomgroup=[1, 1, 1])
    with pytest.raises(ValueError, match="bodyexclude"):
        ray(m, d, np.zeros(3), [0, 0, 1], bodyexclude=mjm.nbody)
    with pytest.raises(ValueError, match="bodyexclude"):
        ray(m, d, np.zeros(3), [0, 0, 1], bodyexclude=-2)
    mesh = int(np.nonzero(mjm.geom_type == mujoco.mjtGeom.mjGEOM_MESH)[0][0])
    hfield = int(np.nonzero(mjm.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)[0][0])
    with pytest.raises(ValueError, match="not a mesh"):
        ray_mesh(m, d, hfield, np.zeros(3), [0, 0, 1])
    with pytest.raises(ValueError, match="not an hfield"):
        ray_hfield(m, d, mesh, np.zeros(3), [0, 0, 1])
    with pytest.raises(ValueError, match="invalid geom id"):
        ray_mesh(m, d, mjm.ngeom, np.zeros(3), [0, 0, 1])
    with pytest.raises(ValueError, match="invalid geom id"):
        ray_hfield(m, d, -1, np.zeros(3), [0, 0, 1])
    with pytest.raises(ValueError, match="unsupported geom type"):
        ray_geom(np.zeros(3), np.eye(3), np.ones(3), np.zeros(3), [0, 0, 1], 7)
    with pytest.raises(ValueError, match="zero length"):
        ray_geom(np.zeros(3), np.eye(3), np.ones(3), np.zeros(3), np.zeros(3), 2)
    with pytest.raises(ValueError, match="cutoff"):
        multi_ray(m, d, np.zeros(3), [[0, 0, 1]], cutoff=-1)


def _f32_report():
    """f32 errors of ray_batch on every model (scene-relative: distances x |vec|)."""
    for name in MODELS:
        m, mjm, d, mds = _pair(name, seed=len(name))
        rng = np.random.default_rng(1)
        pv = [_rays(mjm, md, rng) for md in mds]
        pnts = np.stack([p for p, _ in pv])
        vecs = np.stack([v for _, v in pv])
        dist, gid = ray_batch(m, d, pnts, vecs)
        worst, wrong = 0.0, 0
        for w, md in enumerate(mds):
            want = [_mj_ray(mjm, md, pnts[w, i], vecs[w, i], None, 1, -1) for i in range(NRAY)]
            wd = np.array([x for x, _ in want])
            both = (wd >= 0) & (dist[w] >= 0)
            worst = max(worst, float(np.max(np.abs(dist[w] - wd)[both]
                                             * np.linalg.norm(vecs[w], axis=1)[both])))
            wrong += int(np.sum((wd >= 0) != (dist[w] >= 0)))
        print(f"{name}: f32 max distance error {worst:.2e}, hit/miss disagreements {wrong}"
              f" of {NRAY * NWORLD}")


# --------------------------------------------------------------- loop-limited backends

# a 300 x 300 height field (a terrain), a rangefinder looking across it from one corner
# (its segment through the field's top box spans ~280 x 280 cells) and one looking
# down; elevations are written by the script
TERRAIN = """<mujoco>
  <asset><hfield name="terrain" nrow="300" ncol="300" size="4 4 .5 .1"/></asset>
  <worldbody>
    <geom type="hfield" hfield="terrain"/>
    <body name="eyes">
      <site name="across" pos="-3.9 -3.9 .52" zaxis="1 1 -.065"/>
      <site name="down" pos=".3 .2 2" zaxis="0 0 -1"/>
    </body>
  </worldbody>
  <sensor><rangefinder site="across"/><rangefinder site="down"/></sensor>
</mujoco>"""

LIMITED_RAYS_SCRIPT = """
import json, sys, warnings
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
from tiphys.ray import ray_batch
xml = sys.stdin.read()
mjm = mujoco.MjModel.from_xml_string(xml)
r, c = np.meshgrid(np.arange(300), np.arange(300), indexing="ij")
mjm.hfield_data[:] = (0.5 + 0.25 * np.sin(r / 7.0) * np.cos(c / 11.0)).reshape(-1)
m = tiphys.put_model(mjm)
d = tiphys.make_data(m, 2)
mjd = mujoco.MjData(mjm)
mujoco.mj_forward(mjm, mjd)
tiphys.kinematics(m, d)
pnts = np.array([mjd.site_xpos[0], mjd.site_xpos[1]])
vecs = np.array([mjd.site_xmat[0].reshape(3, 3)[:, 2], mjd.site_xmat[1].reshape(3, 3)[:, 2]])
out = {"mujoco": mjd.sensordata.tolist()}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist, geomid = ray_batch(m, d, pnts, vecs)
out["ray"] = [[None if np.isnan(x) else float(x) for x in row] for row in dist]
out["ray_warnings"] = [str(w.message) for w in caught]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tiphys.sensor_pos(m, d)
    out["sensor"] = d.numpy("sensordata").tolist()
out["sensor_warnings"] = [str(w.message) for w in caught]
from tiphys.kernels.loop_limit import loop_limit
out["limit"] = loop_limit()
print(json.dumps(out))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs()[:1])
def test_rays_cut_by_a_loop_limit_are_reported(arch):
    """Mesa's lavapipe cuts a thread's loops after 65535 iterations, silently
    (kernels/loop_limit.py). A ray across a 300 x 300 height field tests the ~90,000
    cells under it: on lavapipe its thread is cut, so ``ray_batch`` returns NaN for it
    with a warning naming the limit, and a rangefinder looking the same way warns when
    sensordata is read. The ray looking down is short: right, or cut and NaN with the
    long one when lavapipe runs the two in one SIMD vector (whose lanes share the loop
    counter). Where there is no limit (the CPU, CUDA, a GPU's Vulkan) both match MuJoCo
    and nothing warns."""
    res = subproc.run(["-c", LIMITED_RAYS_SCRIPT, arch], key=f"{arch}-f32", input=TERRAIN)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    across, down = out["mujoco"]
    assert across > 1.0 and down > 0.5  # both hit the terrain
    assert (arch == "cpu") <= (out["limit"] is None)
    if out["limit"] is None:
        assert not out["ray_warnings"] and not out["sensor_warnings"]
        for w in range(2):
            assert out["ray"][w] == pytest.approx([across, down], abs=1e-4)
            assert out["sensor"][w] == pytest.approx([across, down], abs=1e-4)
    else:
        assert [row[0] for row in out["ray"]] == [None, None]
        # the short rays are right, or cut with the long one that shares their SIMD lanes
        for w in range(2):
            assert out["ray"][w][1] is None or out["ray"][w][1] == pytest.approx(down, abs=1e-4)
        ncut = sum(x is None for row in out["ray"] for x in row)
        assert len(out["ray_warnings"]) == 1
        assert "65535 iterations" in out["ray_warnings"][0]
        assert f"for {ncut} of 4 ray(s)" in out["ray_warnings"][0]
        cut = [msg for msg in out["sensor_warnings"]
               if "rangefinder or tactile sensor thread(s)" in msg]
        assert len(cut) == 1 and "in 2 world(s)" in cut[0], out["sensor_warnings"]

if __name__ == "__main__":
    tiphys.init(arch="cpu", precision=sys.argv[1] if len(sys.argv) > 1 else "f32")
    _f32_report()
