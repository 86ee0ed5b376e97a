"""SDF collisions (kernels/collide_sdf.py: MuJoCo 3.4.0's mjc_SDF; plane-sdf through
mjc_PlaneConvex on the sdf's mesh) against mj_collision, and short trajectories of the
corpus SDF models against mj_step; f64 on the CPU, several worlds, contacts poisoned
with NaN first.

MuJoCo's SDF contacts are round-off sensitive: the gradient descent branches on
comparisons (line-search acceptance, which geom is deeper), the plugins' gradients are
forward differences with step 1e-8 and a box's distance inside is a min over its faces,
so moving one coordinate of qpos by 1e-15 moves MuJoCo's own box-torus contacts by up
to 0.1 (and nut, bolt or gear contacts by up to 1e-5). Contacts are therefore compared
on the same geom poses: MuJoCo's mj_collision runs on tiphys' geom_xpos and geom_xmat
(which match MuJoCo's kinematics to 1e-12, checked), and then every contact matches to
TOL in every world. Trajectories are compared against MuJoCo's own spread under kicks
of 1e-14 (as tests/test_trajectory_corpus.py does).
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
from oracle import (_poison_contacts, contact_arrays, corpus_dir, mujoco_contacts,
                    random_free_qpos, tiphys_contacts)
from tiphys.kernels.collision_driver import collision

mujoco.mj_loadPluginLibrary(os.path.join(os.path.dirname(mujoco.__file__), "plugin",
                                         "libsdf_plugin.so"))

NWORLD = 8
TOL = 1e-12
POSE_TOL = 1e-12
CONTACT_FIELDS = ("dist", "pos", "frame", "friction", "solref", "solimp",
                  "includemargin")

PLUGIN_CONFIG = {"gear": '<config key="diameter" value="1"/>'}


def shapes(*names: str) -> str:
    """The plugin instances and meshes of the named shapes, and no others: MuJoCo builds
    every plugin mesh of a model when it compiles (marching cubes over the SDF), so a
    model that carried all five for one geom paid for four it never used."""
    plugins = "".join(f'<plugin plugin="mujoco.sdf.{n}"><instance name="{n}">'
                      f'{PLUGIN_CONFIG.get(n, "")}</instance></plugin>' for n in names)
    meshes = "".join(f'<mesh name="{n}"><plugin instance="{n}"/></mesh>' for n in names)
    return f"<extension>{plugins}</extension><asset>{meshes}</asset>"


PLUGIN_SHAPES = ("torus", "bowl", "gear", "nut", "bolt")
SHAPES = shapes(*PLUGIN_SHAPES)
# a plugin shape on a free body above the plane, and {others}: the bodies it meets
# (test_sdf_against_primitives_matches_mujoco puts one of each primitive type there in
# one model: MuJoCo compiles a plugin's mesh by marching cubes, ~3.5 s for the torus,
# so one compile per shape, not per pair)
AROUND = """<mujoco><option sdf_iterations="10" sdf_initpoints="40"/>
  {shapes}
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .3"><freejoint/>
      <geom type="sdf" mesh="{shape}" friction=".7"><plugin instance="{shape}"/></geom>
    </body>
    {others}
  </worldbody>
</mujoco>"""


def pair_xml(shape: str, other: str, size: str, where: str) -> str:
    """The shape and one primitive geom (its type and size) on a free body at ``where``."""
    return AROUND.format(shapes=shapes(shape), shape=shape,
                         others=f'<body pos="{where}"><freejoint/>'
                                f'<geom type="{other}" size="{size}"/></body>')


SIZES = {"sphere": ".2", "capsule": ".1 .2", "ellipsoid": ".2 .15 .1",
         "cylinder": ".15 .1", "box": ".2 .15 .1"}


def _mujoco_collide(mjm, qpos):
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = qpos
    mujoco.mj_kinematics(mjm, mjd)
    mujoco.mj_collision(mjm, mjd)
    return mujoco_contacts(mjd)


def compare_worlds(m, mjm, qpos, nconmax=None):
    """Collide every world with both engines on tiphys' geom poses and assert that the
    contacts match; returns the number of contacts compared per geom pair."""
    d = tiphys.make_data(m, len(qpos), nconmax=nconmax)
    full = np.zeros(d.qpos.shape)
    full[:, :mjm.nq] = qpos
    d.qpos.from_numpy(full)
    tiphys.kinematics(m, d)
    _poison_contacts(d)
    collision(m, d)
    arrays = contact_arrays(d)
    xpos, xmat = d.geom_xpos.to_numpy(), d.geom_xmat.to_numpy()
    # plane-sdf contacts besides the deepest follow the hull graph's edges, whose order
    # differs from Qhull's (oracle.KNOWN_GAPS): MuJoCo gets tiphys' graph (the same
    # vertices and faces)
    graph = np.asarray(m.arrays.mesh_graph).reshape(-1)[:mjm.nmeshgraph]
    assert graph.shape == mjm.mesh_graph.shape
    mjm.mesh_graph[:] = graph
    ncon = {}
    for w in range(len(qpos)):
        mjd = mujoco.MjData(mjm)
        mjd.qpos[:] = qpos[w]
        mujoco.mj_kinematics(mjm, mjd)
        np.testing.assert_allclose(xpos[w, :mjm.ngeom], mjd.geom_xpos, rtol=0, atol=POSE_TOL)
        np.testing.assert_allclose(xmat[w, :mjm.ngeom].reshape(-1, 9), mjd.geom_xmat,
                                   rtol=0, atol=POSE_TOL)
        mjd.geom_xpos[:] = xpos[w, :mjm.ngeom]
        mjd.geom_xmat[:] = xmat[w, :mjm.ngeom].reshape(-1, 9)
        mujoco.mj_collision(mjm, mjd)
        theirs = mujoco_contacts(mjd)
        ours = tiphys_contacts(d, w, arrays)
        assert len(ours) == len(theirs), (w, len(ours), len(theirs))
        for i, (a, b) in enumerate(zip(ours, theirs)):
            np.testing.assert_array_equal(a["geom"], b["geom"], err_msg=f"world {w} #{i}")
            for k in CONTACT_FIELDS:
                np.testing.assert_allclose(a[k], b[k], rtol=0, atol=TOL,
                                           err_msg=f"world {w} contact {i} {k} {a['geom']}")
        for c in ours:
            pair = tuple(int(g) for g in c["geom"])
            ncon[pair] = ncon.get(pair, 0) + 1
    return ncon


@pytest.mark.parametrize("shape", PLUGIN_SHAPES)
def test_sdf_against_primitives_matches_mujoco(shape):
    """Each plugin shape against a sphere, capsule, ellipsoid, cylinder and box (and
    the plane, through its mesh), random poses around contact."""
    where = "0 0 -.7" if shape == "bowl" else ".2 0 .5"  # (the bowl's shell)
    # the primitives collide with the shape and the plane, not with each other
    others = "".join(f'<body pos="{where}"><freejoint/><geom type="{other}" size="{size}" '
                     f'contype="2" conaffinity="1"/></body>' for other, size in SIZES.items())
    xml = AROUND.format(shapes=shapes(shape), shape=shape, others=others)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(1), NWORLD, spread=0.25)
    ncon = compare_worlds(m, mjm, qpos)
    for geom, other in enumerate(SIZES, start=2):  # (geom 0 is the plane, 1 the shape)
        assert ncon.get((geom, 1), 0) >= 5, (other, ncon)
    assert ncon.get((0, 1), 0) >= 5, ncon


SDF_SDF = """<mujoco><option sdf_iterations="6" sdf_initpoints="20"/>
  {shapes}
  <worldbody>
    <body pos="0 0 0"><freejoint/><geom type="sdf" mesh="{a}"><plugin instance="{a}"/></geom>
    </body>
    <body pos=".1 0 .2"><freejoint/><geom type="sdf" mesh="{b}"><plugin instance="{b}"/>
    </geom></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("a,b", [("torus", "torus"), ("torus", "gear"), ("nut", "bowl")])
def test_sdf_against_sdf_matches_mujoco(a, b):
    xml = SDF_SDF.format(shapes=shapes(*dict.fromkeys((a, b))), a=a, b=b)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(2), NWORLD, spread=0.2)
    assert compare_worlds(m, mjm, qpos).get((0, 1), 0) >= 5


def _corpus(name):
    path = os.path.join(corpus_dir(), "mjwarp", "collision_sdf", name)
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    return path


def test_nutbolt_contacts_match_mujoco():
    path = _corpus("nutbolt.xml")
    mjm = mujoco.MjModel.from_xml_path(path)
    m = tiphys.load_model(path)
    qpos = random_free_qpos(mjm, np.random.default_rng(0), NWORLD, spread=0.02)
    assert compare_worlds(m, mjm, qpos).get((1, 2), 0) > 50  # nut (1) and bolt (2)


def test_mesh_sdf_contacts_match_mujoco():
    """mjc_MeshSDF (the mesh's distance by ray casting): the corpus' mesh.xml, its torus
    on the die in random poses."""
    path = _corpus("mesh.xml")
    mjm = mujoco.MjModel.from_xml_path(path)
    m = tiphys.load_model(path)
    qpos = random_free_qpos(mjm, np.random.default_rng(0), NWORLD, spread=0.3,
                            center=(0, -0.05, -1.6))
    assert compare_worlds(m, mjm, qpos).get((2, 1), 0) > 20  # die (2), torus (1)


def test_hfield_sdf_gives_no_contacts_and_warns():
    """mjc_HFieldSDF gives no contacts in MuJoCo 3.4.0 (with a warning): tiphys too."""
    xml = f"""<mujoco>{SHAPES}
      <asset><hfield name="h" nrow="3" ncol="3" size="1 1 .1 .1"
              elevation="0 0 0 0 1 0 0 0 0"/></asset>
      <worldbody><geom type="hfield" hfield="h"/>
        <body pos="0 0 .1"><freejoint/>
          <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
      </worldbody></mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    tiphys.kinematics(m, d)
    with pytest.warns(RuntimeWarning, match="hfield-sdf pairs give no contacts"):
        collision(m, d)
    assert int(d.ncon.to_numpy()[0]) == 0
    assert len(_mujoco_collide(mjm, mjm.qpos0)) == 0


# --------------------------------------------------------------------------- trajectories

NSTEP = 60
KICK = 1e-14
NKICK = 4
TRAJ_FACTOR = 10.0
TRAJ_FLOOR = 1e-10

# cow.xml's torus (its config and options) on the plane and on a bowl's rim, without the
# cows (their octree SDF is not supported yet)
TORUS_DROP = """<mujoco>
  <extension>
    <plugin plugin="mujoco.sdf.torus"><instance name="torus">
      <config key="radius1" value="0.15"/><config key="radius2" value="0.05"/>
    </instance></plugin>
    <plugin plugin="mujoco.sdf.bowl"><instance name="bowl"/></plugin>
  </extension>
  <asset>
    <mesh name="torus"><plugin instance="torus"/></mesh>
    <mesh name="bowl"><plugin instance="bowl"/></mesh>
  </asset>
  <option sdf_iterations="10" sdf_initpoints="40"/>
  <default><geom solref="0.01 1" solimp=".95 .99 .0001" friction="0.5"/></default>
  <worldbody>
    <geom name="ground" type="plane" pos="0 0 -.02" size="10 10 .01" condim="1"/>
    <geom type="sdf" mesh="bowl" pos="2 0 .02"><plugin instance="bowl"/></geom>
    <body pos="0.1 .25 .02" euler="10 5 0"><freejoint/>
      <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
    <body pos="1.1 0 .47"><freejoint/>
      <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
  </worldbody>
</mujoco>"""


def _mujoco_rollout(mjm, qpos, qvel, kick=0.0, seed=0):
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = qpos
    mjd.qvel[:] = qvel
    if kick:
        rng = np.random.default_rng(seed)
        mjd.qpos[:] += kick * rng.choice([-1.0, 1.0], size=mjm.nq)
        mjd.qvel[:] += kick * rng.choice([-1.0, 1.0], size=mjm.nv)
    out = []
    for _ in range(NSTEP):
        mujoco.mj_step(mjm, mjd)
        out.append(np.concatenate([mjd.qpos, mjd.qvel]))
    return np.array(out)


def _trajectory(m, mjm):
    """NSTEP steps of 2 worlds (small random velocities) against mj_step; tiphys'
    distance to MuJoCo must stay within TRAJ_FLOOR + TRAJ_FACTOR x the running maximum
    of MuJoCo's own spread under NKICK kicks of 1e-14. Returns the largest ratio."""
    nw = 2
    rng = np.random.default_rng(3)
    qpos = np.tile(mjm.qpos0, (nw, 1))
    qvel = rng.normal(scale=0.05, size=(nw, mjm.nv))
    d = tiphys.make_data(m, nw)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    ours = []
    for _ in range(NSTEP):
        tiphys.step(m, d)
        ours.append(np.concatenate([d.qpos.to_numpy(), d.qvel.to_numpy()], axis=1))
    ours = np.array(ours)
    worst = 0.0
    for w in range(nw):
        ref = _mujoco_rollout(mjm, qpos[w], qvel[w])
        spread = np.max([np.abs(_mujoco_rollout(mjm, qpos[w], qvel[w], KICK, s) - ref)
                         .max(axis=1) for s in range(NKICK)], axis=0)
        allowance = TRAJ_FLOOR + TRAJ_FACTOR * np.maximum.accumulate(spread)
        dist = np.abs(ours[:, w] - ref).max(axis=1)
        bad = np.flatnonzero(dist > allowance)
        assert not bad.size, (f"world {w} step {bad[0] + 1}: distance {dist[bad[0]]} > "
                              f"allowance {allowance[bad[0]]}")
        worst = max(worst, float(np.max(dist / allowance)))
    return worst


def test_mesh_sdf_trajectory_matches_mujoco():
    """The corpus' mesh.xml with the torus started on the die."""
    path = _corpus("mesh.xml")
    mjm = mujoco.MjModel.from_xml_path(path)
    mjm.qpos0[2] = 1.49  # (the torus 1 cm above the die's top, lands at step ~22)
    _trajectory(tiphys.load_model(path), mjm)


def test_nutbolt_trajectory_matches_mujoco():
    path = _corpus("nutbolt.xml")
    _trajectory(tiphys.load_model(path), mujoco.MjModel.from_xml_path(path))


def test_torus_trajectory_matches_mujoco():
    m = tiphys.load_model_from_string(TORUS_DROP)
    mjm = mujoco.MjModel.from_xml_string(TORUS_DROP)
    d = tiphys.make_data(m, 1)
    tiphys.forward(m, d)
    geoms = {tuple(int(g) for g in pair)
             for pair in d.contact_geom.to_numpy()[0, :int(d.ncon.to_numpy()[0])]}
    assert geoms == {(0, 2), (1, 3)}  # plane-torus, and the bowl's rim under the other
    _trajectory(m, mjm)


# -------------------------------------------------------------------------------- f32

F32_SCRIPT = """
import json, os, sys
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
mujoco.mj_loadPluginLibrary(os.path.join(os.path.dirname(mujoco.__file__), "plugin",
                                         "libsdf_plugin.so"))
from tiphys.kernels.collision_driver import collision
xml = sys.stdin.read()
m = tiphys.load_model_from_string(xml)
mjm = mujoco.MjModel.from_xml_string(xml)
rng = np.random.default_rng(4)
nworld = 6
qpos = np.tile(mjm.qpos0, (nworld, 1))
qpos[:, 7:10] = np.array([.38, 0, .05]) + rng.uniform(-.05, .05, (nworld, 3))
q = rng.normal(size=(nworld, 4))
qpos[:, 10:14] = q / np.linalg.norm(q, axis=1)[:, None]
d = tiphys.make_data(m, nworld)
d.qpos.from_numpy(qpos.astype(np.float32))
tiphys.kinematics(m, d)
collision(m, d)
ncon = d.ncon.to_numpy()
dist, frame = d.contact_dist.to_numpy(), d.contact_frame.to_numpy()
out = []
for w in range(nworld):
    md = mujoco.MjData(mjm)
    md.qpos[:] = qpos[w]
    mujoco.mj_kinematics(mjm, md)
    mujoco.mj_collision(mjm, md)
    deep_t = int(np.argmin([c.dist for c in md.contact[:md.ncon]])) if md.ncon else -1
    deep_o = int(np.argmin(dist[w, :ncon[w]])) if ncon[w] else -1
    out.append([int(ncon[w]), int(md.ncon),
                float(dist[w, deep_o]) if deep_o >= 0 else 0.0,
                float(md.contact[deep_t].dist) if deep_t >= 0 else 0.0,
                float(np.dot(frame[w, deep_o, 0], md.contact[deep_t].frame[:3]))
                if deep_t >= 0 and deep_o >= 0 else 1.0,
                int(np.isnan(dist[w, :ncon[w]]).sum())])
print(json.dumps(out))
"""
F32_PAIR = """<mujoco><option sdf_iterations="10" sdf_initpoints="40"/>
  {shapes}
  <worldbody>
    <body><freejoint/><geom type="sdf" mesh="{shape}"><plugin instance="{shape}"/></geom>
    </body>
    <body><freejoint/><geom type="sphere" size=".12"/></body>
  </worldbody>
</mujoco>"""


# the torus on the CPU and the nut on a device backend (the CPU where there is none)
@pytest.mark.parametrize("arch,shape", [("cpu", "torus")] +
                         [(a, "nut") for a in (spirv.device_archs()[:1] or ["cpu"])])
def test_sdf_collision_runs_in_f32(arch, shape):
    """f32 on the CPU, and on Vulkan (SPIR-V: Metal's path) where a device exists: a
    sphere against the torus (analytic gradient) and the nut (a forward difference,
    with f32's step), six worlds; the deepest contact against MuJoCo's (f64)."""
    res = subproc.run(["-c", F32_SCRIPT, arch], key=f"{arch}-f32",
                      input=F32_PAIR.format(shapes=shapes(shape), shape=shape))
    assert res.returncode == 0, res.stderr[-3000:]
    check_f32_worlds(res.stdout)


def check_f32_worlds(stdout: str) -> None:
    """F32_SCRIPT's per-world result (its last line) against MuJoCo's: no NaN, the same
    worlds touching, the deepest contact's distance within 2e-3 and its normal within
    cos 0.99, and at least three worlds touching."""
    worlds = json.loads(stdout.strip().splitlines()[-1])
    touching = 0
    for ours, theirs, dist, mj_dist, cos, nan in worlds:
        assert nan == 0
        assert (ours > 0) == (theirs > 0), worlds
        if theirs:
            touching += 1
            assert abs(dist - mj_dist) < 2e-3, worlds
            assert cos > 0.99, worlds
    assert touching >= 3, worlds


LOOP_CUT_SCRIPT = """
import json, sys, warnings
import numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
from tiphys.kernels.collision_driver import collision
xml = sys.stdin.read()
out = []
for initpoints in (40, 1500):
    m = tiphys.load_model_from_string(xml.replace('sdf_initpoints="40"',
                                                  f'sdf_initpoints="{initpoints}"'))
    d = tiphys.make_data(m, 2)
    qpos = np.tile(np.asarray(m.arrays.qpos0).reshape(-1)[:m.nq], (2, 1))
    qpos[:, 7:10] = [.38, 0, .05]
    d.qpos.from_numpy(qpos.astype(np.float32))
    tiphys.kinematics(m, d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        collision(m, d)
        ncon = d.numpy("ncon")
    out.append([initpoints, ncon.tolist(), [str(w.message) for w in caught]])
from tiphys.kernels.loop_limit import loop_limit
print(json.dumps([out, loop_limit()]))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs()[:1])
def test_sdf_threads_cut_by_a_loop_limit_are_reported(arch):
    """Mesa's lavapipe cuts a thread's loops after 65535 iterations, silently
    (kernels/loop_limit.py). A torus-sphere pair with 1500 start points: the thread that
    takes the pair's descents in start order (1500 x 51 iterations) is cut there, and
    reading the results warns, naming the limit; with MuJoCo's default 40 start points
    nothing is cut. Where there is no limit (the CPU, CUDA, a GPU's Vulkan) neither
    warns."""
    res = subproc.run(["-c", LOOP_CUT_SCRIPT, arch], key=f"{arch}-f32",
                      input=F32_PAIR.format(shapes=shapes("torus"), shape="torus"))
    assert res.returncode == 0, res.stderr[-3000:]
    out, limit = json.loads(res.stdout.strip().splitlines()[-1])
    (n0, ncon0, caught0), (n1, ncon1, caught1) = out
    assert (arch == "cpu") <= (limit is None)
    assert (n0, n1) == (40, 1500) and min(ncon0 + ncon1) > 0
    cut = [msg for msg in caught1 if "cuts a kernel thread's loops short" in msg]
    assert not [msg for msg in caught0 if "loops short" in msg], caught0
    if limit is None:
        assert not cut, caught1
    else:
        assert len(cut) == 1 and "65535 iterations" in cut[0] and "in 2 world(s)" in cut[0], \
            caught1

# -------------------------------------------------------------------------------- rays

RAY_SCENE = """<mujoco>{shapes}<worldbody>
  <body euler="20 30 40"><geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
  <body pos="1.5 0 0" euler="-20 10 0">
    <geom type="sdf" mesh="nut"><plugin instance="nut"/></geom></body>
  <body pos="0 1.5 0"><geom type="sdf" mesh="gear"><plugin instance="gear"/></geom></body>
  <body pos="1.5 1.5 0"><geom type="sdf" mesh="bolt"><plugin instance="bolt"/></geom></body>
  <body pos="-1.5 0 0"><geom type="sdf" mesh="bowl"><plugin instance="bowl"/></geom></body>
  <geom type="sphere" size=".1" pos="0 -1 0"/>
</worldbody></mujoco>"""


def test_rays_on_sdf_geoms_match_mujoco():
    """mj_ray's ray_sdf (sphere tracing of the plugin shape inside the geom's box),
    rays of random lengths aimed near the geoms: the geom hit and the distance."""
    xml = RAY_SCENE.format(shapes=SHAPES)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    tiphys.kinematics(m, d)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_kinematics(mjm, mjd)
    rng = np.random.default_rng(0)
    nray = 200
    targets = mjd.geom_xpos[rng.integers(0, mjm.ngeom, nray)] + \
        rng.uniform(-.3, .3, (nray, 3))
    pnts = rng.uniform(-3, 3, (nray, 3)) + np.array([0.75, 0.75, 0])
    vecs = (targets - pnts) * rng.uniform(0.5, 2, (nray, 1))
    dist, geomid = tiphys.ray_batch(m, d, pnts[None], vecs[None])
    hit = set()
    for i in range(nray):
        g = np.array([-1], dtype=np.int32)
        x = mujoco.mj_ray(mjm, mjd, pnts[i], vecs[i], None, 1, -1, g)
        assert geomid[0, i] == g[0], (i, geomid[0, i], g[0])
        assert abs(dist[0, i] - x) < 1e-12, (i, dist[0, i], x)
        hit.add(int(g[0]))
    assert set(range(5)) <= hit  # every sdf geom was hit


# -------------------------------------------------------------------- geom distances

def test_geom_distance_on_sdf_pairs_matches_mujoco():
    """mj_geomDistance on sdf pairs (mjc_SDF: overlaps only, the deepest contact), in
    both geom orders, on the same geom poses; the plane-sdf pair through the mesh."""
    for shape in ("torus", "nut"):
        xml = pair_xml(shape, "capsule", ".1 .2", ".2 0 .5")
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = tiphys.load_model_from_string(xml)
        qpos = random_free_qpos(mjm, np.random.default_rng(1), NWORLD, spread=0.25)
        d = tiphys.make_data(m, NWORLD)
        d.qpos.from_numpy(qpos)
        tiphys.kinematics(m, d)
        xpos, xmat = d.geom_xpos.to_numpy(), d.geom_xmat.to_numpy()
        overlaps = 0
        for g1, g2 in ((1, 2), (2, 1), (0, 1)):
            dist, fromto = tiphys.geom_distance(m, d, g1, g2, 0.5)
            for w in range(NWORLD):
                mjd = mujoco.MjData(mjm)
                mjd.geom_xpos[:] = xpos[w, :mjm.ngeom]
                mjd.geom_xmat[:] = xmat[w, :mjm.ngeom].reshape(-1, 9)
                theirs = np.zeros(6)
                x = mujoco.mj_geomDistance(mjm, mjd, g1, g2, 0.5, theirs)
                overlaps += x < 0
                assert abs(dist[w] - x) < TOL, (shape, g1, g2, w, dist[w], x)
                np.testing.assert_allclose(fromto[w], theirs, rtol=0, atol=TOL)
        assert overlaps >= NWORLD, (shape, overlaps)


SENSOR_MODEL = """<mujoco><option sdf_iterations="10" sdf_initpoints="40"/>
  {shapes}
  <worldbody>
    <body pos="0 0 .3"><freejoint/>
      <geom name="shape" type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
    <body pos=".35 0 .45"><freejoint/><geom name="ball" type="sphere" size=".1"/></body>
  </worldbody>
  <sensor>
    <distance geom1="shape" geom2="ball" cutoff="1"/>
    <normal geom1="ball" geom2="shape" cutoff="1"/>
    <fromto geom1="shape" geom2="ball" cutoff="1"/>
  </sensor>
</mujoco>"""


def test_distance_sensors_on_sdf_geoms_match_mujoco():
    """Distance, normal and fromto sensors of a torus-sphere pair (sensor_pos) in worlds
    that overlap and worlds that do not (then: the cutoff)."""
    xml = SENSOR_MODEL.format(shapes=shapes("torus"))
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(5), NWORLD, spread=0.1)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    tiphys.forward(m, d)
    ours = d.numpy("sensordata")
    overlap = 0
    for w in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        mjd.qpos[:] = qpos[w]
        mujoco.mj_forward(mjm, mjd)
        overlap += mjd.sensordata[0] < 0
        # (the torus-sphere descent amplifies round-off of the poses ~1e4 times)
        np.testing.assert_allclose(ours[w], mjd.sensordata, rtol=0, atol=1e-9)
    assert 0 < overlap < NWORLD, overlap


# ---------------------------------------------------------------------------- tactile

TACTILE = """<mujoco>
  <extension><plugin plugin="mujoco.sdf.torus"><instance name="torus"/></plugin></extension>
  <asset>
    <mesh name="torus"><plugin instance="torus"/></mesh>
    <mesh name="cube" vertex="-.05 -.05 -.05  .05 -.05 -.05  -.05 .05 -.05  .05 .05 -.05
                              -.05 -.05 .05  .05 -.05 .05  -.05 .05 .05  .05 .05 .05"/>
  </asset>
  <worldbody>
    <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom>
    <body pos=".35 0 .17"><freejoint/>
      <geom type="sphere" size=".05"/>
      <geom name="pad" type="mesh" mesh="cube" contype="0" conaffinity="0" mass="0"/>
    </body>
  </worldbody>
  <sensor><tactile geom="pad" mesh="cube"/></sensor>
</mujoco>"""


def tactile_state(mjm, nworld: int, seed: int, spread: float, tilt: float):
    """(qpos, qvel) of ``nworld`` worlds of a model whose first joint is the free joint
    of the body carrying the taxels: moved by up to ``spread``, turned by a quaternion
    noise of scale ``tilt``, random velocities."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    qpos[:, :3] += rng.uniform(-spread, spread, (nworld, 3))
    quat = qpos[:, 3:7] + rng.normal(scale=tilt, size=(nworld, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qvel = rng.normal(scale=.3, size=(nworld, mjm.nv))
    return qpos, qvel


def check_tactile_worlds(xml: str, seed: int, spread: float, ntaxel: int) -> int:
    """Taxel sensordata of ``xml`` (a free body carrying the taxel geom) against
    MuJoCo's in NWORLD worlds: the body moved by up to ``spread`` and turned at random,
    random velocities, the same qpos and qvel in both. Returns how many of the first
    ``ntaxel`` pressures are non-zero over all worlds (MuJoCo's)."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos, qvel = tactile_state(mjm, NWORLD, seed, spread, tilt=.1)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    tiphys.forward(m, d)
    ours = d.numpy("sensordata")
    pressed = 0
    for w in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        mjd.qpos[:] = qpos[w]
        mjd.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, mjd)
        np.testing.assert_allclose(ours[w], mjd.sensordata, rtol=1e-9, atol=1e-12,
                                   err_msg=f"world {w}")
        pressed += np.count_nonzero(mjd.sensordata[:ntaxel])
    return pressed


def test_tactile_on_sdf_geom_matches_mujoco():
    """A taxel cube pressed into a torus: its corners' pressures from the torus' SDF
    and the tangential speeds, against MuJoCo (the same qpos and qvel)."""
    pressed = check_tactile_worlds(TACTILE, seed=6, spread=.02, ntaxel=8)
    assert pressed >= 2 * NWORLD, pressed


F32_RAY_SCRIPT = """
import json, os, sys
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
mujoco.mj_loadPluginLibrary(os.path.join(os.path.dirname(mujoco.__file__), "plugin",
                                         "libsdf_plugin.so"))
xml = sys.stdin.read()
mjm = mujoco.MjModel.from_xml_string(xml)
m = tiphys.load_model_from_string(xml)
d = tiphys.make_data(m, 1)
tiphys.kinematics(m, d)
mjd = mujoco.MjData(mjm)
mujoco.mj_kinematics(mjm, mjd)
rng = np.random.default_rng(0)
nray = 200
targets = mjd.geom_xpos[rng.integers(0, mjm.ngeom, nray)] + rng.uniform(-.3, .3, (nray, 3))
pnts = rng.uniform(-3, 3, (nray, 3)) + np.array([0.75, 0.75, 0])
vecs = (targets - pnts) * rng.uniform(0.5, 2, (nray, 1))
dist, geomid = tiphys.ray_batch(m, d, pnts[None], vecs[None])
out = []
for i in range(nray):
    g = np.array([-1], dtype=np.int32)
    x = mujoco.mj_ray(mjm, mjd, pnts[i], vecs[i], None, 1, -1, g)
    out.append([int(geomid[0, i]), int(g[0]), float(dist[0, i]), float(x)])
print(json.dumps(out))
"""


# one f32 backend: a device backend where there is one (its compile is the one at
# risk), else the CPU's (the same code in f32)
@pytest.mark.parametrize("arch", spirv.device_archs()[:1] or ["cpu"])
def test_rays_on_sdf_geoms_run_in_f32(arch):
    """f32 (CPU, and Vulkan where a device exists): the sphere tracing stops at 1e-5
    (f32 cannot resolve MuJoCo's 1e-7), so grazing rays may hit where f64 misses; the
    others hit the same geom at the same distance to f32 precision."""
    res = subproc.run(["-c", F32_RAY_SCRIPT, arch], key=f"{arch}-f32",
                      input=RAY_SCENE.format(shapes=SHAPES))
    assert res.returncode == 0, res.stderr[-3000:]
    rays = json.loads(res.stdout.strip().splitlines()[-1])
    same = [(x, mx) for g, mg, x, mx in rays if g == mg]
    assert len(same) >= 0.95 * len(rays), len(same)
    assert sum(g >= 0 for g, mg, _, _ in rays if g == mg) >= 100
    assert max(abs(x - mx) for x, mx in same) < 1e-4


# MuJoCo 3.4.0's own example model/plugin/sdf/primitives.xml (Apache-2.0), its
# <include file="scene.xml"/> replaced by the scene's ground plane: three tori stacked
# with a sphere, an ellipsoid, a capsule, a cylinder and a box
PRIMITIVES = """<mujoco>
  <extension><plugin plugin="mujoco.sdf.torus"><instance name="torus">
    <config key="radius1" value="0.35"/><config key="radius2" value="0.15"/>
  </instance></plugin></extension>
  <asset><mesh name="torus"><plugin instance="torus"/></mesh></asset>
  <option sdf_iterations="10" sdf_initpoints="20"/>
  <default><geom solref="0.01 1" solimp=".95 .99 .0001"/></default>
  <worldbody>
    <geom name="ground" type="plane" pos="0 0 -.02" size="10 10 .01" condim="1"/>
    <body pos="0 0 .175"><freejoint/>
      <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
    <body pos=".1 .1 1.2"><freejoint/>
      <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
    <body pos=".1 .1 2.6"><freejoint/>
      <geom type="sdf" mesh="torus"><plugin instance="torus"/></geom></body>
    <body pos="-.1 .2 2"><freejoint/><geom type="sphere" size="0.3"/></body>
    <body pos=".3 -.1 2" euler="0 0 45"><freejoint/>
      <geom type="ellipsoid" size=".4 .2 .2"/></body>
    <body pos="-.1 .1 .5"><freejoint/>
      <geom type="capsule" size=".1" fromto="-.2 -.2 .1 .2 .2 .1"/></body>
    <body pos=".2 -.2 .3"><freejoint/>
      <geom type="cylinder" size=".1" fromto="-.2 -.2 .1 .2 .2 .1"/></body>
    <body pos=".1 .1 3.5"><freejoint/><geom type="box" size=".2 .2 .2"/></body>
  </worldbody>
</mujoco>"""


def test_mujoco_primitives_example_trajectory_matches_mujoco():
    m = tiphys.load_model_from_string(PRIMITIVES)
    mjm = mujoco.MjModel.from_xml_string(PRIMITIVES)
    d = tiphys.make_data(m, 1)
    tiphys.forward(m, d)
    assert int(d.ncon.to_numpy()[0]) > 0  # (the lowest torus on the ground and cylinder)
    _trajectory(m, mjm)


IN_PLACE_PAIR = """<mujoco>
  <extension><plugin plugin="mujoco.sdf.torus"/></extension>
  <asset><mesh name="torus"><plugin plugin="mujoco.sdf.torus"/></mesh></asset>
  <worldbody>
    <body><freejoint/><geom type="sdf" mesh="torus">
      <plugin plugin="mujoco.sdf.torus">
        <config key="radius1" value=".3"/><config key="radius2" value=".1"/>
      </plugin></geom></body>
    <body pos=".3 0 .12"><freejoint/><geom type="sphere" size=".08"/></body>
  </worldbody>
</mujoco>"""


def test_in_place_sdf_geom_collides_with_its_own_config():
    """An sdf geom whose plugin is in place collides with its own config (a thinner
    torus than its mesh's default one), as MuJoCo."""
    mjm = mujoco.MjModel.from_xml_string(IN_PLACE_PAIR)
    m = tiphys.load_model_from_string(IN_PLACE_PAIR)
    qpos = random_free_qpos(mjm, np.random.default_rng(3), NWORLD, spread=0.05)
    assert compare_worlds(m, mjm, qpos).get((1, 0), 0) >= 5  # sphere (1), torus (0)
