"""Euler, RK4, implicit, implicitfast, step1/step2 and inverse against MuJoCo on
constraint-free models.

Trajectories: 200 steps with contacts and constraints disabled in both engines, three
worlds with different initial states; qpos/qvel (and act) agree to 1e-7. The implicit
integrators' velocity derivative qDeriv (actuators, dof and tendon damping, both fluid
models, RNE) is also compared entry by entry with MjData.qDeriv. A corpus test runs
every corpus model with actuators or tendons in RK4, implicit and implicitfast.
"""
import dataclasses
import json
import os
import zlib

import mujoco
import numpy as np
import pytest

import subproc
import tiphys
from conftest import record
from corpus_xfail import corpus_params, not_yet
from oracle import corpus_dir
from test_actuation import CANDIDATES, random_state
from test_actuation import load_both as load_with_actuators
from test_forward import NSTEP, NWORLD, assert_trajectory_match, load_both, rollout_both

FLAGS = {"contact": "disable", "constraint": "disable"}
MODELS = ("gym/humanoid.xml", "gym/ant.xml", "gym/hopper.xml", "gym/half_cheetah.xml",
          "gym/inverted_double_pendulum.xml")


@pytest.mark.parametrize("integrator", ["RK4", "implicitfast"])
@pytest.mark.parametrize("rel", MODELS)
def test_integrator_trajectory_matches_mujoco(rel, integrator):
    m, mjm = load_both(rel, FLAGS, integrator=integrator)
    rng = np.random.default_rng(len(rel) + len(integrator))
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    d, want = rollout_both(m, mjm, qvel)
    assert_trajectory_match(d, want)


def test_implicitfast_without_damper_matches_mujoco():
    m, mjm = load_both("gym/humanoid.xml", dict(FLAGS, damper="disable"),
                       integrator="implicitfast")
    qvel = np.random.default_rng(4).normal(size=(2, mjm.nv))
    d, want = rollout_both(m, mjm, qvel, nstep=50)
    assert_trajectory_match(d, want)


@pytest.mark.parametrize("rel", ["gym/humanoid.xml", "gym/hopper.xml",
                                 "gym/inverted_double_pendulum.xml"])
def test_implicit_trajectory_matches_mujoco(rel):
    m, mjm = load_both(rel, FLAGS, integrator="implicit")
    qvel = np.random.default_rng(len(rel)).normal(size=(NWORLD, mjm.nv))
    d, want = rollout_both(m, mjm, qvel)
    assert_trajectory_match(d, want)


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "implicit"])
def test_step1_step2_match_mujoco(integrator):
    m, mjm = load_both("gym/ant.xml", FLAGS, integrator=integrator)
    rng = np.random.default_rng(8)
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    qfrc = rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    d.qvel.from_numpy(qvel)
    mds = []
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qvel[:] = qvel[w]
        mds.append(md)
    for _ in range(20):
        tiphys.step1(m, d)
        d.qfrc_applied.from_numpy(qfrc)
        tiphys.step2(m, d)
        for w, md in enumerate(mds):
            mujoco.mj_step1(mjm, md)
            md.qfrc_applied[:] = qfrc[w]
            mujoco.mj_step2(mjm, md)
    for w, md in enumerate(mds):
        np.testing.assert_allclose(d.numpy("qpos")[w], md.qpos, rtol=0, atol=1e-9)
        np.testing.assert_allclose(d.numpy("qvel")[w], md.qvel, rtol=0, atol=1e-9)


@pytest.mark.parametrize("rel", ["gym/humanoid.xml", "gym/ant.xml", "gym/walker2d.xml"])
def test_inverse_matches_mj_inverse(rel):
    m, mjm = load_both(rel, FLAGS)
    rng = np.random.default_rng(21)
    qpos = np.tile(mjm.qpos0, (NWORLD, 1)) + rng.uniform(-0.5, 0.5, (NWORLD, mjm.nq))
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    qacc = rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    d.qacc.from_numpy(qacc)
    tiphys.inverse(m, d)
    got = d.numpy("qfrc_inverse")
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:], md.qvel[:], md.qacc[:] = qpos[w], qvel[w], qacc[w]
        mujoco.mj_inverse(mjm, md)
        scale = max(1.0, np.abs(md.qfrc_inverse).max())
        np.testing.assert_allclose(got[w], md.qfrc_inverse, rtol=0, atol=1e-9 * scale)


def test_inverse_of_forward_gives_applied_force():
    m, _ = load_both("gym/hopper.xml", FLAGS)
    rng = np.random.default_rng(2)
    d = tiphys.make_data(m, NWORLD)
    d.qvel.from_numpy(rng.normal(size=(NWORLD, m.nv)))
    qfrc = rng.normal(size=(NWORLD, m.nv))
    d.qfrc_applied.from_numpy(qfrc)
    tiphys.forward(m, d)
    tiphys.inverse(m, d)
    np.testing.assert_allclose(d.numpy("qfrc_inverse"), qfrc, rtol=0, atol=1e-9)


ELLIPSOID_FLUID = """
<mujoco>
  <option density="1.2" viscosity="0.02" wind="0.5 -0.3 0.2">
    <flag contact="disable" constraint="disable"/>
  </option>
  <worldbody>
    <body name="fish" pos="0 0 1">
      <freejoint/>
      <geom type="ellipsoid" size=".3 .1 .05" fluidshape="ellipsoid" fluidcoef=".5 .25 1.5 1 1"/>
      <geom type="capsule" size=".03 .1" pos=".3 0 0" fluidshape="ellipsoid"/>
      <body name="tail" pos="-.35 0 0">
        <joint type="hinge" axis="0 0 1" damping=".01"/>
        <geom type="box" size=".1 .05 .01" pos="-.1 0 0" fluidshape="ellipsoid"/>
        <geom type="cylinder" size=".02 .05" pos="-.2 0 0"/>
      </body>
    </body>
    <body name="box" pos="1 0 1">
      <joint type="ball"/>
      <geom type="box" size=".2 .1 .3"/>
      <body pos="0 0 -.5">
        <joint type="slide" axis="1 0 0"/>
        <geom type="sphere" size=".1" fluidshape="ellipsoid"/>
        <geom type="sphere" size=".05" pos=".1 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _fluid_vs_mujoco(m, mjm, rng, scale=1.0):
    qpos = np.tile(mjm.qpos0, (NWORLD, 1)) + rng.uniform(-0.5, 0.5, (NWORLD, mjm.nq))
    qvel = scale * rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
        mujoco.mj_forward(mjm, md)
        assert np.abs(md.qfrc_fluid).max() > 1e-3
        for name in ("qfrc_fluid", "qfrc_passive", "qacc"):
            want = getattr(md, name)
            np.testing.assert_allclose(d.numpy(name)[w], want, rtol=0,
                                       atol=1e-9 * max(1.0, np.abs(want).max()), err_msg=name)


def test_inertia_box_fluid_matches_mujoco_on_swimmer():
    m, mjm = load_both("gym/swimmer.xml", FLAGS)
    assert mjm.opt.density > 0 and mjm.opt.viscosity > 0 and not mjm.geom_fluid[:, 0].any()
    _fluid_vs_mujoco(m, mjm, np.random.default_rng(5))


def test_inertia_box_fluid_with_wind_matches_mujoco():
    m, mjm = load_both("gym/hopper.xml", FLAGS, density="1000", viscosity="0.5",
                       wind="1 -2 0.5")
    _fluid_vs_mujoco(m, mjm, np.random.default_rng(6))


def test_ellipsoid_fluid_matches_mujoco():
    # put_model: the kernel on MuJoCo's own geom_fluid (tiphys' compiler computes the
    # virtual mass/inertia coefficients to only ~1e-8 relative of MuJoCo's)
    mjm = mujoco.MjModel.from_xml_string(ELLIPSOID_FLUID)
    m = tiphys.put_model(mjm)
    assert mjm.geom_fluid[:, 0].any()
    _fluid_vs_mujoco(m, mjm, np.random.default_rng(7), scale=3.0)


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicit", "implicitfast"])
def test_fluid_trajectory_matches_mujoco(integrator):
    m, mjm = load_both("gym/swimmer.xml", FLAGS, integrator=integrator)
    qvel = np.random.default_rng(9).normal(size=(NWORLD, mjm.nv))
    d, want = rollout_both(m, mjm, qvel)
    assert_trajectory_match(d, want)


# ---------------------------------------------------------------------------------------
# actuators, tendons and fluid in every integrator
# ---------------------------------------------------------------------------------------

INTEGRATORS = {"Euler": 0, "RK4": 1, "implicit": 2, "implicitfast": 3}

# Every actuator dynamics type (none, integrator, filter, filterexact, muscle), every
# velocity-dependent gain and bias (velocity, damper, intvelocity, position with kv and
# with dampratio, general affine gains/biases on joint, tendon and site transmissions),
# actearly, fixed and spatial tendons with damping, dof damping on ball/hinge/slide
# joints and a free body with simple (diagonal-inertia) dofs. With density/viscosity
# set, bodies with fluidshape="ellipsoid" geoms use the ellipsoid fluid model and the
# others the inertia box. No limits, no contacts (the constraint solver comes later).
ACTUATED = """
<mujoco>
  <option wind="0.3 -0.2 0.1"><flag contact="disable"/></option>
  <default><joint limited="false"/><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <site name="anchor" pos="0 0.5 2"/>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom type="capsule" size=".1 .2" fluidshape="ellipsoid"/>
      <site name="s0" pos="0 .1 .2"/>
      <body name="arm" pos=".2 0 0">
        <joint name="shoulder" type="ball" damping=".2"/>
        <geom type="box" size=".2 .05 .05" pos=".2 0 0" fluidshape="ellipsoid"/>
        <site name="s1" pos=".3 0 .05"/>
        <body name="forearm" pos=".4 0 0">
          <joint name="elbow" axis="0 1 0" damping=".1"/>
          <joint name="slide" type="slide" axis="1 0 0"/>
          <geom type="ellipsoid" size=".15 .04 .03" pos=".15 0 0" fluidshape="ellipsoid"/>
          <site name="s2" pos=".2 0 0"/>
        </body>
      </body>
      <body name="leg" pos="-.2 0 0">
        <joint name="hip" axis="1 0 0" damping=".05"/>
        <joint name="knee" axis="0 1 0"/>
        <geom type="cylinder" size=".04 .2" pos="0 0 -.2"/>
        <site name="s3" pos="0 0 -.3"/>
      </body>
    </body>
    <body name="float" pos="0 1 1">
      <freejoint/>
      <geom type="ellipsoid" size=".1 .2 .3" fluidshape="ellipsoid"/>
    </body>
    <body name="pendulum" pos="1 0 1">
      <joint name="p1" axis="0 1 0"/>
      <geom type="sphere" size=".1" pos="0 0 -.3" fluidshape="ellipsoid"/>
      <body pos="0 0 -.3">
        <joint name="p2" axis="1 0 0" damping=".3"/>
        <geom type="capsule" size=".03 .15" pos="0 0 -.15"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fixed" damping=".4">
      <joint joint="elbow" coef="1"/>
      <joint joint="hip" coef="-.5"/>
      <joint joint="p1" coef=".7"/>
    </fixed>
    <spatial name="spatial" damping=".3" stiffness="2">
      <site site="s0"/>
      <site site="s1"/>
      <site site="s2"/>
    </spatial>
    <spatial name="rope" damping=".2">
      <site site="anchor"/>
      <site site="s3"/>
    </spatial>
  </tendon>
  <actuator>
    <motor joint="knee" gear="2"/>
    <general joint="hip" dyntype="integrator" gaintype="affine" gainprm="1 0 -.3"
             biastype="affine" biasprm="0 -1 -.2"/>
    <general joint="p1" dyntype="filter" dynprm=".05" gaintype="affine" gainprm="2 .1 .5"/>
    <general joint="p2" dyntype="filterexact" dynprm=".03" actlimited="true"
             actrange="-.5 .5" gainprm="3"/>
    <muscle joint="elbow" lengthrange="-1 1"/>
    <velocity joint="slide" kv="2"/>
    <damper joint="knee" kv=".7" ctrlrange="0 1"/>
    <intvelocity joint="p2" kp="5" actrange="-1 1"/>
    <position joint="hip" kp="20" kv="1"/>
    <position joint="elbow" kp="10" dampratio="1"/>
    <velocity tendon="fixed" kv="1.5"/>
    <general tendon="spatial" dyntype="filter" dynprm=".1" gaintype="affine"
             gainprm="1 0 .4" biastype="affine" biasprm="0 0 -.3" actearly="true"/>
    <position site="s2" refsite="s0" kp="3" kv=".5" gear="1 0 0 0 0 0"/>
    <general joint="shoulder" gear="0 1 0" gaintype="affine" gainprm="1 0 .2"
             biastype="affine" biasprm="0 0 -.4"/>
  </actuator>
</mujoco>
"""
FLUID = {"density": 300.0, "viscosity": 0.5}


@pytest.fixture(scope="module")
def actuated():
    """(tiphys Model, MjModel) of ACTUATED; put_model keeps the compiler out of these
    comparisons (it is tested against MuJoCo's on its own)."""
    mjm = mujoco.MjModel.from_xml_string(ACTUATED)
    return tiphys.put_model(mjm), mjm


def _set_options(m, mjm, integrator, fluid=None):
    """The same integrator in both engines; fluid: FLUID's density and viscosity (True),
    none (False) or the model's own (None)."""
    values = dict(integrator=INTEGRATORS[integrator])
    if fluid is not None:
        values.update(FLUID if fluid else dict(density=0.0, viscosity=0.0))
    m.opt = dataclasses.replace(m.opt.frozen, **values)
    for name, value in values.items():
        setattr(mjm.opt, name, value)


def _random_state(mjm, seed, nworld=NWORLD, scale=1.0):
    rng = np.random.default_rng(seed)
    return {"qpos": np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-.5, .5, (nworld, mjm.nq)),
            "qvel": scale * rng.normal(size=(nworld, mjm.nv)),
            "ctrl": rng.uniform(-1, 1, (nworld, mjm.nu)),
            "act": rng.uniform(-1, 1, (nworld, mjm.na))}


def _make_data(m, state):
    d = tiphys.make_data(m, state["qpos"].shape[0])
    for name, value in state.items():
        if value.size:
            getattr(d, name).from_numpy(value)
    return d


def _mujoco_data(mjm, state, w):
    md = mujoco.MjData(mjm)
    for name, value in state.items():
        getattr(md, name)[:] = value[w]
    return md


def _unstable(md) -> bool:
    """MuJoCo met a bad qpos/qvel/qacc (and reset the world)."""
    return any(md.warning[int(k)].number for k in (
        mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
        mujoco.mjtWarning.mjWARN_BADQACC))


def _rel_err(got, want) -> float:
    if want.size == 0:
        return 0.0
    if not np.isfinite(got).all():
        return np.inf
    return float(np.max(np.abs(got - want))) / max(1.0, float(np.max(np.abs(want))))


def _mujoco_qderiv(mjm, md):
    """MjData.qDeriv (MuJoCo's sparse D layout) as a dense matrix."""
    dense = np.zeros((mjm.nv, mjm.nv))
    for i in range(mjm.nv):
        adr, nnz = mjm.D_rowadr[i], mjm.D_rownnz[i]
        dense[i, mjm.D_colind[adr:adr + nnz]] = md.qDeriv[adr:adr + nnz]
    return dense


@pytest.mark.parametrize("fluid", [False, True], ids=["no_fluid", "fluid"])
@pytest.mark.parametrize("integrator", ["implicit", "implicitfast"])
def test_qderiv_matches_mujoco(actuated, integrator, fluid):
    """smooth_vel against the qDeriv mj_step leaves (it is computed from the state before
    the step): actuators, dof/tendon damping, both fluid models; RNE for implicit."""
    from tiphys.kernels.derivative import dense_qderiv, smooth_vel
    m, mjm = actuated
    _set_options(m, mjm, integrator, fluid)
    state = _random_state(mjm, seed=31 + fluid, scale=3.0)
    d = _make_data(m, state)
    tiphys.forward(m, d)
    smooth_vel(m, d, flg_bias=integrator == "implicit")
    got = dense_qderiv(m, d)
    for w in range(NWORLD):
        md = _mujoco_data(mjm, state, w)
        mujoco.mj_step(mjm, md)
        want = _mujoco_qderiv(mjm, md)
        asym = np.abs(want - want.T).max()
        # implicitfast's qDeriv is symmetric; implicit's is not (RNE, fluid)
        assert asym < 1e-12 if integrator == "implicitfast" else asym > 1e-3
        np.testing.assert_allclose(got[w], want, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_actuated_trajectory_matches_mujoco(actuated, integrator):
    """With both fluid models on (without fluid, qDeriv is compared above and the
    corpus test below steps implicit and implicitfast)."""
    m, mjm = actuated
    _set_options(m, mjm, integrator, fluid=True)
    state = _random_state(mjm, seed=zlib.crc32(integrator.encode()))
    d = _make_data(m, state)
    for _ in range(NSTEP):
        tiphys.step(m, d)
    for w in range(NWORLD):
        md = _mujoco_data(mjm, state, w)
        for _ in range(NSTEP):
            mujoco.mj_step(mjm, md)
        assert not _unstable(md)
        for name in ("qpos", "qvel", "act", "qacc_warmstart"):
            err = _rel_err(d.numpy(name)[w], getattr(md, name))
            assert err < 1e-7, (name, w, err)
        assert d.numpy("time")[w] == pytest.approx(md.time, rel=1e-12)


def test_implicitfast_fast_path_with_activations_matches_mujoco():
    """Activations but nothing velocity-dependent except dof damping: implicitfast takes
    the one-launch M + h diag(damping) path and still advances act."""
    xml = """<mujoco><option integrator="implicitfast"/><worldbody><body>
      <joint name="j0" axis="0 1 0" damping=".5"/><geom size=".1" pos="0 0 -.3"/>
      <body pos="0 0 -.3"><joint name="j1" axis="1 0 0"/><geom size=".1" pos="0 0 -.3"/>
      </body></body></worldbody><actuator>
      <general joint="j0" dyntype="filterexact" dynprm=".02" actlimited="true"
               actrange="-.3 .3"/>
      <general joint="j1" dyntype="integrator"/><motor joint="j1"/></actuator></mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.put_model(mjm)
    from tiphys.kernels.derivative import velocity_dependent
    assert m.na == 2 and not velocity_dependent(m)
    state = _random_state(mjm, seed=12)
    d = _make_data(m, state)
    for _ in range(NSTEP):
        tiphys.step(m, d)
    for w in range(NWORLD):
        md = _mujoco_data(mjm, state, w)
        for _ in range(NSTEP):
            mujoco.mj_step(mjm, md)
        for name in ("qpos", "qvel", "act"):
            assert _rel_err(d.numpy(name)[w], getattr(md, name)) < 1e-7, name


# ---------------------------------------------------------------------------------------
# corpus models with their actuators and tendons, in every integrator
# ---------------------------------------------------------------------------------------

CORPUS_NSTEP = 20
CORPUS_NWORLD = 2


@pytest.mark.parametrize("rel", corpus_params("test_integrators", CANDIDATES))
def test_corpus_trajectory_in_each_integrator_matches_mujoco(rel):
    """implicit and implicitfast (and RK4 where there are activations: without, its
    trajectories are covered above) with the model's actuators and tendons (contacts
    and constraints disabled), 20 steps from random ctrl/act and a perturbed qpos0.
    Integrator/model pairs that MuJoCo itself finds unstable (bad qacc) are reported,
    not compared."""
    group = "integrator trajectories"
    with not_yet("test_integrators", group, rel):
        m, mjm = load_with_actuators(os.path.join(corpus_dir(), rel), FLAGS)
    worst = 0.0
    notes = []
    for integrator in ("RK4", "implicit", "implicitfast")[0 if mjm.na else 1:]:
        _set_options(m, mjm, integrator)
        rng = np.random.default_rng(zlib.crc32((rel + integrator).encode()))
        state = random_state(mjm, rng, CORPUS_NWORLD)
        state["qpos"] = np.tile(mjm.qpos0, (CORPUS_NWORLD, 1)) + \
            rng.uniform(-0.1, 0.1, size=(CORPUS_NWORLD, mjm.nq))
        state["qvel"] *= 0.1
        with not_yet("test_integrators", group, rel):
            d = _make_data(m, state)
            for _ in range(CORPUS_NSTEP):
                tiphys.step(m, d)
        for w in range(CORPUS_NWORLD):
            md = _mujoco_data(mjm, state, w)
            for _ in range(CORPUS_NSTEP):
                mujoco.mj_step(mjm, md)
            if _unstable(md):
                notes.append(f"{integrator} unstable in MuJoCo, not compared")
                break
            for name in ("qpos", "qvel", "act"):
                err = _rel_err(d.numpy(name)[w], getattr(md, name))
                assert err < 1e-7, (integrator, name, w, err)
                worst = max(worst, err)
    record(group, rel, f"match (max rel err {worst:.2g}" +
           "".join(f"; {n}" for n in notes) + ")")


# ---------------------------------------------------------------------------------------
# f32
# ---------------------------------------------------------------------------------------

F32_SCRIPT = """
import dataclasses, json, sys
import mujoco, numpy as np, tiphys
tiphys.init(arch="cpu", precision="f32")
xml, fluid = json.loads(sys.stdin.read())
mjm = mujoco.MjModel.from_xml_string(xml)
mjm.opt.density, mjm.opt.viscosity = fluid["density"], fluid["viscosity"]
m = tiphys.put_model(mjm)
out = {}
for name, k in (("RK4", 1), ("implicit", 2), ("implicitfast", 3)):
    m.opt = dataclasses.replace(m.opt.frozen, integrator=k)
    mjm.opt.integrator = k
    rng = np.random.default_rng(k)
    state = {"qpos": mjm.qpos0 + rng.uniform(-.5, .5, (2, mjm.nq)),
             "qvel": rng.normal(size=(2, mjm.nv)), "ctrl": rng.uniform(-1, 1, (2, mjm.nu)),
             "act": rng.uniform(-1, 1, (2, mjm.na))}
    d = tiphys.make_data(m, 2)
    for key, value in state.items():
        getattr(d, key).from_numpy(value.astype(np.float32))
    for _ in range(10):
        tiphys.step(m, d)
    md = mujoco.MjData(mjm)
    err = 0.0
    for w in range(2):
        for key, value in state.items():
            getattr(md, key)[:] = value[w]
        for _ in range(10):
            mujoco.mj_step(mjm, md)
        got = d.numpy("qvel")[w].astype(np.float64)
        err = max(err, float(np.abs(got - md.qvel).max() / max(1.0, np.abs(md.qvel).max())))
    out[name] = err
print(json.dumps(out))
"""


def test_integrators_run_in_f32():
    """RK4, implicit and implicitfast (all derivative kernels: both fluid models, RNE,
    actuators, tendons) compile and run in f32 and stay within single precision of
    MuJoCo's f64 over 10 steps (Taichi's precision is per process: a subprocess)."""
    res = subproc.run(["-c", F32_SCRIPT], key="cpu-f32",
                      input=json.dumps([ACTUATED, FLUID]))
    assert res.returncode == 0, res.stderr[-3000:]
    errors = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(errors) == {"RK4", "implicit", "implicitfast"}
    for name, err in errors.items():
        assert err < 1e-4, (name, err)
