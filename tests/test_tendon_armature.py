"""Tendon armature against MuJoCo 3.4.0: qM (mj_tendonArmature inside the tree sparsity),
its factor and solves, the velocity-product term in qfrc_bias (mj_tendonBias),
qacc_smooth, qfrc_inverse, and 200-step Euler / RK4 trajectories.

Fixed tendons (also over a simple body, whose reduced sparsity keeps only the
diagonal) and spatial tendons with pulleys whose sites ride on free, ball, hinge and
slide joints and on the world; contacts off, no limits; several worlds at random
states, f64 on the CPU.
"""
import mujoco
import numpy as np
import pytest

import tiphys

NWORLD = 4
STAGE_RTOL = 1e-9
TRAJ_RTOL = 1e-7

XML = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}">
    <flag contact="disable"/>
  </option>
  <worldbody>
    <site name="w0" pos="0 0 2"/>
    <site name="w1" pos=".5 .3 1.5"/>
    <body name="free" pos="0 0 1">
      <freejoint/>
      <geom type="box" size=".1 .15 .2" mass="2"/>
      <site name="f0" pos=".1 0 .1"/>
      <body name="ball" pos="0 .2 -.3" quat="0.9 0.1 0.3 0.2">
        <joint name="ball" type="ball" damping=".2"/>
        <geom type="capsule" fromto="0 0 0 .1 0 -.4" size=".05"/>
        <site name="b0" pos=".1 0 -.3"/>
        <body pos=".1 0 -.4">
          <joint name="h1" axis="0 1 0"/>
          <joint name="s1" type="slide" axis="1 0 1" armature=".1"/>
          <geom size=".1" pos=".05 0 0"/>
          <site name="h0" pos=".1 .05 0"/>
        </body>
      </body>
    </body>
    <body name="arm" pos="1 0 1">
      <joint name="a1" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
      <site name="a0" pos=".3 0 0"/>
      <body pos=".4 0 0">
        <joint name="a2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
        <site name="a3" pos="0 .02 -.25"/>
      </body>
    </body>
    <body name="simple" pos="-1 0 0">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size=".1"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fx" armature=".7">
      <joint joint="a1" coef="1"/><joint joint="a2" coef="-.5"/><joint joint="h1" coef=".3"/>
    </fixed>
    <fixed name="fsimple" armature=".4">
      <joint joint="x" coef="1"/><joint joint="z" coef="2"/>
    </fixed>
    <spatial name="sp" armature=".3">
      <site site="w0"/><site site="f0"/><site site="b0"/><site site="h0"/>
    </spatial>
    <spatial name="pulley" armature=".5" damping=".1" stiffness="2">
      <site site="w1"/><site site="a0"/>
      <pulley divisor="2"/>
      <site site="a0"/><site site="a3"/>
      <pulley divisor="3"/>
      <site site="f0"/><site site="a3"/>
    </spatial>
    <spatial name="noarm">
      <site site="w0"/><site site="a3"/>
    </spatial>
  </tendon>
</mujoco>
"""

STAGE_OUTPUTS = ("qM", "qLDiagInv", "qfrc_bias", "qfrc_passive", "qacc_smooth")


@pytest.fixture(scope="module")
def euler_pair():
    xml = XML.format(integrator="Euler")
    return tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)


@pytest.fixture(scope="module")
def rk4_pair():
    xml = XML.format(integrator="RK4")
    return tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)


def _random_state(mjm, rng, nworld=NWORLD):
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-0.8, 0.8, size=(nworld, mjm.nq))
    qvel = rng.normal(size=(nworld, mjm.nv))
    return qpos, qvel


def _relerr(got, want):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    return float(np.abs(got - want).max(initial=0.0)) / scale


def test_model_exercises_what_it_should(euler_pair):
    m, mjm = euler_pair
    assert np.count_nonzero(mjm.tendon_armature) == 4
    # the simple body's two slides keep simple dofs coupled by an armature tendon
    assert mjm.dof_simplenum[-2:].tolist() == [2, 1]
    assert set(mjm.jnt_type.tolist()) == {0, 1, 2, 3}


def test_stages_match_mujoco(euler_pair):
    m, mjm = euler_pair
    rng = np.random.default_rng(3)
    qpos, qvel = _random_state(mjm, rng)
    vec = rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    for name in STAGE_OUTPUTS + ("qfrc_inverse",):
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape, np.nan))
    tiphys.forward(m, d)
    got = {name: d.numpy(name) for name in STAGE_OUTPUTS}
    x = tiphys.make_data(m, NWORLD).qvel
    y = tiphys.make_data(m, NWORLD).qvel
    y.from_numpy(vec)
    tiphys.solve_m(m, d, x, y)
    got["solve"] = x.to_numpy()
    tiphys.mul_m(m, d, x, y)
    got["mul"] = x.to_numpy()
    got["full"] = tiphys.full_m(m, d)
    tiphys.inverse(m, d)  # qacc = qacc_smooth: qfrc_inverse = qfrc_passive
    got["qfrc_inverse"] = d.numpy("qfrc_inverse")

    md = mujoco.MjData(mjm)
    bias_share = 0.0
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        want = {name: getattr(md, name).copy() for name in STAGE_OUTPUTS}
        want["solve"] = np.zeros(mjm.nv)
        mujoco.mj_solveM(mjm, md, want["solve"].reshape(1, -1), vec[w].reshape(1, -1))
        want["mul"] = np.zeros(mjm.nv)
        mujoco.mj_mulM(mjm, md, want["mul"], vec[w].copy())
        want["full"] = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, want["full"], md.qM)
        mujoco.mj_inverse(mjm, md)
        want["qfrc_inverse"] = md.qfrc_inverse.copy()
        for name, value in want.items():
            assert not np.isnan(got[name][w]).any(), f"{name}: world {w} not written"
            err = _relerr(got[name][w].reshape(value.shape), value)
            assert err <= STAGE_RTOL, f"{name} world {w}: relative error {err:.3g}"
        # the armature terms are not negligible: without them bias and M differ
        plain = mujoco.MjData(mjm)
        plain.qpos[:] = qpos[w]
        plain.qvel[:] = qvel[w]
        mujoco.mj_fwdPosition(mjm, plain)
        mujoco.mj_comVel(mjm, plain)
        mujoco.mj_rne(mjm, plain, 0, plain.qfrc_bias)
        bias_share = max(bias_share, _relerr(plain.qfrc_bias, md.qfrc_bias))
    assert bias_share > 1e-3


def _trajectory(pair, seed, nstep=200):
    m, mjm = pair
    rng = np.random.default_rng(seed)
    qpos, qvel = _random_state(mjm, rng)
    qvel *= 0.5
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    for _ in range(nstep):
        tiphys.step(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        md.time = 0.0
        for _ in range(nstep):
            mujoco.mj_step(mjm, md)
        for name in ("qpos", "qvel"):
            err = _relerr(d.numpy(name)[w], getattr(md, name))
            assert err <= TRAJ_RTOL, f"{name} world {w}: relative error {err:.3g}"


def test_euler_trajectories_match_mujoco(euler_pair):
    _trajectory(euler_pair, seed=11)


def test_rk4_trajectories_match_mujoco(rk4_pair):
    _trajectory(rk4_pair, seed=12)
