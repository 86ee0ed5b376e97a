"""SDF collisions on mesh octrees (``<geom type="sdf" mesh=...>`` without a plugin:
kernels/sdf.py's oct_eval, MuJoCo 3.4.0's oct_distance / oct_gradient) against
MuJoCo: contacts on the same geom poses (tests/test_collide_sdf.py's compare_worlds:
MuJoCo's mj_collision runs on tiphys' geom_xpos/geom_xmat), forward at random states,
a short trajectory of the corpus' cow.xml within MuJoCo's own round-off spread, and
rays, tactile sensors on mesh geoms with octrees, and the refusals of what is not
done (a tactile sensor that an sdf geom without a plugin can touch, where MuJoCo
stops; an sdf geom whose mesh has no octree). f64 on the CPU; f32 (collisions and
tactile sensors) on the CPU and on Vulkan (Mesa's lavapipe) where a device exists.
"""
from __future__ import annotations

import json
import os

import mujoco
import numpy as np
import pytest

import spirv
import subproc
import tiphys
from oracle import corpus_dir, random_free_qpos
from test_collide_sdf import (F32_SCRIPT, _trajectory, check_f32_worlds,
                              check_tactile_worlds, compare_worlds)
from tiphys.kernels.collide_sdf import geom_octrees

NWORLD = 8

# two small convex meshes (their hulls); the sdf geoms' meshes get octrees
ASSETS = """<asset>
    <mesh name="gem" vertex="0 0 .12  .1 0 0  -.05 .09 0  -.05 -.09 .01  0 0 -.08
                              .06 .05 .05"/>
    <mesh name="plain" vertex="-.1 -.1 -.05  .1 -.1 -.05  .1 .1 -.05  -.1 .1 -.05  0 0 .1"/>
  </asset>"""
PRIMITIVE = """<mujoco><option sdf_iterations="10" sdf_initpoints="30"/>{assets}
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .3"><freejoint/><geom type="sdf" mesh="gem"/></body>
    <body pos=".05 0 .4"><freejoint/><geom type="{other}" size="{size}"/></body>
  </worldbody></mujoco>"""
SIZES = {"sphere": ".1", "capsule": ".05 .1", "ellipsoid": ".1 .07 .05",
         "cylinder": ".07 .05", "box": ".1 .07 .05"}


def _cow():
    path = os.path.join(corpus_dir(), "mjwarp", "collision_sdf", "cow.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    return path


@pytest.mark.parametrize("other", list(SIZES))
def test_octree_sdf_against_primitives_matches_mujoco(other):
    xml = PRIMITIVE.format(assets=ASSETS, other=other, size=SIZES[other])
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    assert mjm.mesh_octnum[0] > 0 and mjm.geom_plugin[1] == -1
    qpos = random_free_qpos(mjm, np.random.default_rng(1), NWORLD, spread=0.06)
    assert compare_worlds(m, mjm, qpos, nconmax=300).get((2, 1), 0) >= 40


def test_octree_sdf_on_plane_matches_mujoco():
    """plane-sdf is mjc_PlaneConvex on the sdf geom's mesh (here the octree's mesh)."""
    xml = PRIMITIVE.format(assets=ASSETS, other="sphere", size=".1").replace(
        '<body pos="0 0 .3">', '<body pos="0 0 .05">')
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(2), NWORLD, spread=0.04)
    assert compare_worlds(m, mjm, qpos, nconmax=300).get((0, 1), 0) >= 5


# geom 0 is a mesh geom of mesh 1 ("plain", no octree); MuJoCo's geomDistance looks up
# mesh_octnum with the geom id 0, finds mesh 0's ("gem") octree and evaluates geom 0
# on it. The spare meshes keep every geom id below nmesh (past it MuJoCo reads outside
# the array).
MESH_SDF = """<mujoco><option sdf_iterations="10" sdf_initpoints="30"/>
  <asset>
    <mesh name="gem" vertex="0 0 .12  .1 0 0  -.05 .09 0  -.05 -.09 .01  0 0 -.08
                              .06 .05 .05"/>
    <mesh name="plain" vertex="-.1 -.1 -.05  .1 -.1 -.05  .1 .1 -.05  -.1 .1 -.05  0 0 .1"/>
    <mesh name="spare1" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <mesh name="spare2" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
  </asset>
  <worldbody>
    <geom type="mesh" mesh="plain" pos="0 0 .3"/>
    <body pos="0 0 .35"><freejoint/><geom type="sdf" mesh="gem"/></body>
    <body pos="-.05 0 .3"><freejoint/><geom type="sdf" mesh="gem"/></body>
  </worldbody></mujoco>"""


def test_octree_sdf_against_mesh_and_sdf_matches_mujoco():
    mjm = mujoco.MjModel.from_xml_string(MESH_SDF)
    m = tiphys.load_model_from_string(MESH_SDF)
    np.testing.assert_array_equal(geom_octrees(m.arrays)[:3], [0, 0, 0])
    qpos = random_free_qpos(mjm, np.random.default_rng(1), NWORLD, spread=0.06)
    ncon = compare_worlds(m, mjm, qpos, nconmax=300)
    assert ncon.get((0, 1), 0) >= 40 and ncon.get((0, 2), 0) >= 40, ncon
    assert ncon.get((1, 2), 0) >= 40, ncon


def test_octree_sdf_geom_distance_matches_mujoco():
    """geom_distance (mj_geomDistance: mjc_SDF's deepest contact below distmax) of the
    octree pairs, on the same geom poses."""
    mjm = mujoco.MjModel.from_xml_string(MESH_SDF)
    m = tiphys.load_model_from_string(MESH_SDF)
    qpos = random_free_qpos(mjm, np.random.default_rng(3), NWORLD, spread=0.06)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    tiphys.kinematics(m, d)
    xpos, xmat = d.geom_xpos.to_numpy(), d.geom_xmat.to_numpy()
    mjd = mujoco.MjData(mjm)
    touching = 0
    for g1, g2 in ((0, 1), (1, 2), (2, 0)):
        dist, fromto = tiphys.geom_distance(m, d, g1, g2, 0.5)
        for w in range(NWORLD):
            mjd.qpos[:] = qpos[w]
            mujoco.mj_kinematics(mjm, mjd)
            mjd.geom_xpos[:] = xpos[w, :mjm.ngeom]
            mjd.geom_xmat[:] = xmat[w, :mjm.ngeom].reshape(-1, 9)
            want_fromto = np.zeros(6)
            want = mujoco.mj_geomDistance(mjm, mjd, g1, g2, 0.5, want_fromto)
            np.testing.assert_allclose(dist[w], want, rtol=0, atol=1e-12)
            np.testing.assert_allclose(fromto[w], want_fromto, rtol=0, atol=1e-12)
            touching += want < 0
    assert touching >= 12


def _cow_state(mjm, nworld, seed):
    """The corpus' cow.xml with the torus and the free cow moved onto the fixed cow
    (random orientations, heights around contact)."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(nworld):
        for adr, center in ((0, [0.0, 0.0, 1.0]), (7, [0.05, 0.0, 1.0])):
            qpos[w, adr:adr + 3] = np.array(center) + rng.uniform(-.2, .2, 3)
            q = rng.normal(size=4)
            qpos[w, adr + 3:adr + 7] = q / np.linalg.norm(q)
    return qpos


def test_cow_contacts_match_mujoco():
    """cow.xml: the two cows (octrees of one mesh, 49001 nodes) and the torus plugin."""
    path = _cow()
    mjm = mujoco.MjModel.from_xml_path(path)
    m = tiphys.load_model(path)
    ncon = compare_worlds(m, mjm, _cow_state(mjm, 4, 0), nconmax=400)
    # torus (1) with each cow (2 fixed, 3 free), and the cows together
    assert min(ncon.get(pair, 0) for pair in ((1, 2), (1, 3), (2, 3))) >= 50, ncon


def _mujoco_forward_on_poses(mjm, mjd, xpos, xmat):
    """mj_forward with the geom poses replaced by ``xpos``/``xmat`` after the
    kinematics (mj_fwdPosition's calls, then mj_forwardSkip past the position stage):
    the SDF descent moves contacts by up to ~0.1 under 1e-16 changes of the poses, so
    forward is compared with MuJoCo's on tiphys' poses."""
    mujoco.mj_fwdKinematics(mjm, mjd)
    mjd.geom_xpos[:] = xpos[:mjm.ngeom]
    mjd.geom_xmat[:] = xmat[:mjm.ngeom].reshape(-1, 9)
    mujoco.mj_makeM(mjm, mjd)
    mujoco.mj_factorM(mjm, mjd)
    mujoco.mj_collision(mjm, mjd)
    mujoco.mj_makeConstraint(mjm, mjd)
    mujoco.mj_island(mjm, mjd)
    mujoco.mj_transmission(mjm, mjd)
    mujoco.mj_projectConstraint(mjm, mjd)
    mujoco.mj_forwardSkip(mjm, mjd, mujoco.mjtStage.mjSTAGE_POS, 0)


def test_cow_forward_matches_mujoco():
    """forward at random states with contacts (qacc, qfrc_constraint, efc_force; solver
    tolerance 1e-12) against mj_forward on the same geom poses."""
    path = _cow()
    mjm = mujoco.MjModel.from_xml_path(path)
    m = tiphys.load_model(path)
    for model in (mjm.opt, m.opt):
        model.tolerance = 1e-12
        model.iterations = 200
    nworld = 4
    qpos = _cow_state(mjm, nworld, 1)
    qvel = np.random.default_rng(2).normal(scale=0.3, size=(nworld, mjm.nv))
    d = tiphys.make_data(m, nworld)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    tiphys.forward(m, d)
    xpos, xmat = d.geom_xpos.to_numpy(), d.geom_xmat.to_numpy()
    mjd = mujoco.MjData(mjm)
    rows = 0
    for w in range(nworld):
        mjd.qpos[:] = qpos[w]
        mjd.qvel[:] = qvel[w]
        _mujoco_forward_on_poses(mjm, mjd, xpos[w], xmat[w])
        assert d.numpy("ncon")[w] == mjd.ncon and d.numpy("nefc")[w] == mjd.nefc, w
        rows += mjd.nefc
        for name in ("qacc", "qfrc_constraint", "efc_force"):
            want = getattr(mjd, name)
            got = d.numpy(name)[w][:len(want)]
            np.testing.assert_allclose(got, want, rtol=0,
                                       atol=1e-7 * max(1.0, np.abs(want).max()),
                                       err_msg=f"{name} world {w}")
    assert rows > 300


def test_cow_trajectory_matches_mujoco():
    """cow.xml with the torus and the free cow started on the fixed cow (about 100
    contacts of the three sdf pairs all along): tiphys within MuJoCo's own spread under
    kicks of 1e-14."""
    path = _cow()
    mjm = mujoco.MjModel.from_xml_path(path)
    mjm.qpos0[2] = 1.3  # (the torus, from 5.7)
    mjm.qpos0[9] = 1.18  # (the free cow, from 2.2)
    m = tiphys.load_model(path)
    m.arrays.qpos0[:] = mjm.qpos0
    _trajectory(m, mjm)


# ------------------------------------------------------------------------ refusals

def test_sdf_geom_whose_mesh_has_no_octree_is_refused():
    """The compiler always builds the octree of an sdf geom's mesh; arrays where it is
    missing (MuJoCo stops with an error there) are refused by make_data, by name."""
    m = tiphys.load_model_from_string(MESH_SDF.replace('<geom type="sdf" mesh="gem"/>',
                                                       '<geom name="g" type="sdf" '
                                                       'mesh="gem"/>', 1))
    m.arrays.mesh_octadr[0] = -1
    with pytest.raises(NotImplementedError, match=r"make_data: geom 'g', #2: <geom "
                                                  r"type=\"sdf\"> without a <plugin> whose "
                                                  r"mesh has no octree"):
        tiphys.make_data(m, 1)


def test_rays_on_octree_sdf_geoms_match_mujoco():
    """mj_ray's ray_sdf on the octrees (sphere tracing inside the geom's box; the
    mesh geom 0 is a plain ray-mesh target): rays of random lengths aimed near the
    geoms, the geom hit and the distance."""
    mjm = mujoco.MjModel.from_xml_string(MESH_SDF)
    m = tiphys.load_model_from_string(MESH_SDF)
    qpos = random_free_qpos(mjm, np.random.default_rng(4), 1, spread=0.3)
    d = tiphys.make_data(m, 1)
    d.qpos.from_numpy(qpos)
    tiphys.kinematics(m, d)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = qpos[0]
    mujoco.mj_kinematics(mjm, mjd)
    rng = np.random.default_rng(0)
    nray = 200
    targets = mjd.geom_xpos[rng.integers(0, mjm.ngeom, nray)] + \
        rng.uniform(-.08, .08, (nray, 3))
    pnts = rng.uniform(-1, 1, (nray, 3))
    vecs = (targets - pnts) * rng.uniform(0.5, 2, (nray, 1))
    dist, geomid = tiphys.ray_batch(m, d, pnts[None], vecs[None])
    hit = set()
    for i in range(nray):
        g = np.array([-1], dtype=np.int32)
        x = mujoco.mj_ray(mjm, mjd, pnts[i], vecs[i], None, 1, -1, g)
        assert geomid[0, i] == g[0], (i, geomid[0, i], g[0])
        assert abs(dist[0, i] - x) < 1e-12, (i, dist[0, i], x)
        hit.add(int(g[0]))
    assert {0, 1, 2} <= hit


def test_rangefinders_on_octree_sdf_geoms_match_mujoco():
    """rangefinder sensors (ray_scene) looking down at the sdf geoms, random poses."""
    xml = MESH_SDF.replace("</worldbody>", """
      <site name="a" pos="0 0 1"/><site name="b" pos=".03 .02 1"/>
      <site name="c" pos="-.05 0 1" zaxis=".1 0 1"/></worldbody>
      <sensor><rangefinder site="a"/><rangefinder site="b"/><rangefinder site="c"/>
      </sensor>""").replace('<mujoco>', '<mujoco><option gravity="0 0 0"/>')
    xml = xml.replace('<site name="a" pos="0 0 1"/>', '<site name="a" pos="0 0 1" '
                      'zaxis="0 0 -1"/>').replace('<site name="b" pos=".03 .02 1"/>',
                                                  '<site name="b" pos=".03 .02 1" '
                                                  'zaxis="0 .1 -1"/>')
    xml = xml.replace('zaxis=".1 0 1"', 'zaxis=".1 0 -1"')
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(5), NWORLD, spread=0.04)
    d = tiphys.make_data(m, NWORLD, nconmax=300)
    d.qpos.from_numpy(qpos)
    tiphys.forward(m, d)
    ours = d.numpy("sensordata")
    mjd = mujoco.MjData(mjm)
    hits = 0
    for w in range(NWORLD):
        mjd.qpos[:] = qpos[w]
        mujoco.mj_forward(mjm, mjd)
        np.testing.assert_allclose(ours[w, :mjm.nsensordata], mjd.sensordata, rtol=0,
                                   atol=1e-9, err_msg=f"world {w}")
        hits += int(np.sum(mjd.sensordata > 0))
    assert hits >= 12


# a taxel plate under a box pressed onto a mesh geom whose mesh has an octree (an sdf
# geom uses the mesh too, far away and touching nothing)
TACTILE = """<mujoco><option sdf_iterations="10" sdf_initpoints="30"/>
  <asset>
    <mesh name="gem" vertex="0 0 .12  .1 0 0  -.05 .09 0  -.05 -.09 .01  0 0 -.08
                              .06 .05 .05" scale="2 2 1"/>
    <mesh name="plate" builtin="plate" params="6 6" scale=".1 .1 .05"/>
  </asset>
  <worldbody>
    <geom name="target" type="mesh" mesh="gem" euler="0 0 30"/>
    <geom type="sdf" mesh="gem" pos="3 0 0" contype="{contype}" conaffinity="0"/>
    <body name="finger" pos=".01 .02 .162"><freejoint/>
      <geom type="box" size=".1 .1 .05" mass=".1"/>
      <geom name="pad" type="mesh" mesh="plate" contype="0" conaffinity="0" mass="0"/>
    </body>
  </worldbody>
  <sensor><tactile geom="pad" mesh="plate"/></sensor>
</mujoco>"""


def test_tactile_on_mesh_octree_matches_mujoco():
    """The taxels' pressures from the mesh's octree (oct_distance at the taxel in the
    mesh geom's frame) and the tangential speeds, against MuJoCo on the same qpos and
    qvel."""
    xml = TACTILE.format(contype=0)
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert mjm.mesh_octadr[0] == 0 and mjm.mesh_octadr[1] == -1
    pressed = check_tactile_worlds(xml, seed=0, spread=.03, ntaxel=36)
    assert pressed >= 2 * NWORLD, pressed


def test_tactile_next_to_an_sdf_geom_without_plugin_is_refused():
    """An sdf geom without a plugin that can touch the sensor's body: MuJoCo 3.4.0's
    tactile sensor stops with a FatalError once it does (it looks up the geom's
    plugin); tiphys refuses the model's sensors instead."""
    import subprocess
    import sys
    xml = TACTILE.format(contype=1)
    # (in a process of its own: MuJoCo reads outside mjModel.plugin there)
    done = subprocess.run([sys.executable, "-c", """
import sys, mujoco
mjm = mujoco.MjModel.from_xml_string(sys.stdin.read())
mjd = mujoco.MjData(mjm)
mjd.qpos[:3] = [3.01, .02, .15]  # the box on the sdf geom
try:
    mujoco.mj_forward(mjm, mjd)
except mujoco.FatalError as exc:
    print(exc)
"""], input=xml, capture_output=True, text=True, timeout=120)
    assert "signed distance field" in done.stdout, (done.stdout, done.stderr)
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match=r"tactile sensor 0 next to sdf geom 1, "
                                                  r"which has no plugin and can touch geom 2"):
        tiphys.forward(m, d)


# -------------------------------------------------------------------------------- f32

F32_GEM = """<mujoco><option sdf_iterations="10" sdf_initpoints="40"/>{assets}
  <worldbody>
    <body><freejoint/><geom type="sdf" mesh="gem"/></body>
    <body><freejoint/><geom type="sphere" size=".12"/></body>
  </worldbody>
</mujoco>"""


# the corpus' cow mesh (an octree of 49001 nodes) as a free sdf geom at the origin, a
# sphere at its side (F32_SCRIPT moves it around (.47, 0, .3)) and the corpus' die (a
# mesh geom: its distance by ray casting, mjc_MeshSDF) under its legs; the die and the
# sphere do not collide (that pair would need the convex narrowphase: tests/spirv.py)
F32_COW = """<mujoco><compiler meshdir="{dir}"/>
  <option sdf_iterations="10" sdf_initpoints="40"/>
  <asset><mesh name="die" file="die.obj"/><mesh name="spot" file="spot.obj"/></asset>
  <worldbody>
    <geom type="mesh" mesh="die" pos="0 0 -1.9" contype="2" conaffinity="2"/>
    <body><freejoint/><geom type="sdf" mesh="spot" contype="3" conaffinity="3"/></body>
    <body><freejoint/><geom type="sphere" size=".2" contype="1" conaffinity="1"/></body>
  </worldbody>
</mujoco>"""


def _check_f32_counts(stdout: str) -> None:
    """F32_SCRIPT's contact count per world within one (and a tenth) of MuJoCo's (f64):
    lost contacts show, the f32 descent's few extra or missing ones do not."""
    worlds = json.loads(stdout.strip().splitlines()[-1])
    for ours, theirs, *_ in worlds:
        assert abs(ours - theirs) <= 1 + theirs // 10, worlds
    assert sum(w[1] for w in worlds) >= 40, worlds


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs()[:1])
def test_octree_sdf_collision_runs_in_f32(arch):
    """f32 in six worlds (test_collide_sdf's f32 script: the deepest contact and the
    contact count per world against MuJoCo's, f64): on the CPU, a sphere against the
    gem's octree (the sphere's centre within 0.05 of (0.15, 0, 0.05)); on Vulkan
    (SPIR-V: Metal's path) where a device exists, the corpus' cow against a sphere and
    a mesh (F32_COW). Mesa's lavapipe cuts a thread's loops after 65535 iterations; one
    thread running all of a world's descents (before) found 6 of this scene's 27 to 33
    contacts per world, and a wrong deepest one."""
    if arch == "cpu":
        script = F32_SCRIPT.replace("np.array([.38, 0, .05])", "np.array([.15, 0, .05])")
        xml = F32_GEM.format(assets=ASSETS)
    else:
        script = F32_SCRIPT.replace("np.array([.38, 0, .05])", "np.array([.47, 0, .3])")
        xml = F32_COW.format(dir=os.path.join(os.path.dirname(_cow()), "asset"))
    assert script != F32_SCRIPT
    res = subproc.run(["-c", script, arch], key=f"{arch}-f32", input=xml)
    assert res.returncode == 0, res.stderr[-3000:]
    check_f32_worlds(res.stdout)
    _check_f32_counts(res.stdout)


# A taxel plate on a free body that an sdf geom (a pyramid's octree) presses onto a
# mesh geom whose mesh has an octree (the same pyramid): the contact comes from the
# SDF descent, so no pair needs the convex narrowphase (tests/spirv.py); the taxels
# lie inside the target pyramid, where its octree gives their pressures.
TACTILE_PRESS = """<mujoco><option sdf_iterations="10" sdf_initpoints="30"/>
  <asset>
    <mesh name="plain" vertex="-.1 -.1 -.05  .1 -.1 -.05  .1 .1 -.05  -.1 .1 -.05  0 0 .1"/>
    <mesh name="plate" builtin="plate" params="6 6" scale=".1 .1 .05"/>
  </asset>
  <worldbody>
    <geom name="target" type="mesh" mesh="plain" euler="0 0 20"/>
    <body name="finger" pos="0 0 .14"><freejoint/>
      <geom type="sdf" mesh="plain"/>
      <geom name="pad" type="mesh" mesh="plate" pos="0 0 -.14" contype="0" conaffinity="0"
            mass="0"/>
    </body>
  </worldbody>
  <sensor><tactile geom="pad" mesh="plate"/></sensor>
</mujoco>"""


def test_tactile_pressed_by_an_sdf_geom_on_a_mesh_octree_matches_mujoco():
    xml = TACTILE_PRESS
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert mjm.mesh_octadr[0] == 0 and mjm.mesh_octadr[1] == -1
    pressed = check_tactile_worlds(xml, seed=0, spread=.01, ntaxel=36)
    assert pressed >= 4 * NWORLD, pressed


TACTILE_F32_SCRIPT = """
import json, sys
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
from test_collide_sdf import tactile_state
from tiphys.kernels.sensor_acc import sensor_acc
xml = sys.stdin.read()
m = tiphys.load_model_from_string(xml)
mjm = mujoco.MjModel.from_xml_string(xml)
nworld = 6
qpos, qvel = tactile_state(mjm, nworld, seed=7, spread=.01, tilt=.05)
d = tiphys.make_data(m, nworld)
d.qpos.from_numpy(qpos.astype(np.float32))
d.qvel.from_numpy(qvel.astype(np.float32))
# the stages a tactile sensor reads (contacts, cvel); the solver is not compiled
tiphys.fwd_position(m, d)
tiphys.fwd_velocity(m, d)
sensor_acc(m, d)
ours, ncon = d.numpy("sensordata"), d.numpy("ncon")
out = []
for w in range(nworld):
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = qpos[w]
    mjd.qvel[:] = qvel[w]
    mujoco.mj_forward(mjm, mjd)
    out.append([int(ncon[w]), int(mjd.ncon), ours[w].tolist(), mjd.sensordata.tolist()])
# the same worlds with 70,000 copies of their first contact: the thread listing a
# sensor's touching geoms walks them all (a loop limiter cuts it; elsewhere the
# sensordata is the same)
import warnings
many = 70000
d2 = tiphys.make_data(m, nworld, nconmax=many)
d2.qpos.from_numpy(qpos.astype(np.float32))
d2.qvel.from_numpy(qvel.astype(np.float32))
tiphys.fwd_position(m, d2)
tiphys.fwd_velocity(m, d2)
geom = d2.numpy("contact_geom")
geom[:, :] = geom[:, :1]
d2.contact_geom.from_numpy(geom)
d2.ncon.from_numpy(np.full(nworld, many, np.int32))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sensor_acc(m, d2)
    same = bool(np.array_equal(d2.numpy("sensordata"), ours))
from tiphys.kernels.loop_limit import loop_limit
print(json.dumps([out, same, [str(x.message) for x in caught], loop_limit()]))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs()[:1])
def test_tactile_on_a_mesh_octree_runs_in_f32(arch):
    """TACTILE_PRESS in f32 (the CPU, and Vulkan where a device exists: SPIR-V, Metal's
    path) against MuJoCo in f64 on the same states: every world touches in both, and
    every taxel's pressure and tangential speeds agree to f32 precision. Then a loop
    limiter's cut of the tactile threads is reported."""
    res = subproc.run(["-c", TACTILE_F32_SCRIPT, arch], key=f"{arch}-f32",
                      input=TACTILE_PRESS)
    assert res.returncode == 0, res.stderr[-3000:]
    worlds, same, caught, limit = json.loads(res.stdout.strip().splitlines()[-1])
    # 70,000 contacts: on a loop-limited backend (lavapipe: 65535 iterations per
    # thread, kernels/loop_limit.py) the tactile threads are cut and reading warns;
    # elsewhere the sensordata is what the real contacts gave
    cut = [msg for msg in caught if "rangefinder or tactile sensor thread(s)" in msg]
    assert (arch == "cpu") <= (limit is None)
    if limit is None:
        assert same and not caught, caught
    else:
        assert len(cut) == 1 and "65535 iterations" in cut[0], caught
    pressed = 0
    for w, (ncon, mj_ncon, ours, theirs) in enumerate(worlds):
        assert ncon > 0 and mj_ncon > 0, (w, ncon, mj_ncon)
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5, err_msg=f"world {w}")
        pressed += int(np.count_nonzero(np.asarray(theirs)[:36]))
    assert pressed >= 24, pressed
