"""tiphys.rollout against mujoco.rollout.rollout: the same initial states, controls and
options give the same states and sensor values, world by world (f64, CPU)."""
import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout

import tiphys

XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body name="ball" pos="0 0 .3">
      <freejoint/>
      <geom type="sphere" size=".08" mass=".5"/>
      <site name="s_ball"/>
    </body>
    <body name="arm" pos=".5 0 .5">
      <joint name="hinge" type="hinge" axis="0 1 0" damping=".05"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <body name="tip" pos=".3 0 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-.1 .1" limited="true"/>
        <geom type="box" size=".04 .04 .04"/>
      </body>
    </body>
    <body name="target" mocap="true" pos="-.5 0 .5">
      <geom type="sphere" size=".05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <equality>
    <connect name="pull" body1="tip" body2="target" anchor="0 0 0" active="false"/>
  </equality>
  <actuator>
    <motor joint="hinge" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <position joint="slide" kp="20"/>
  </actuator>
  <sensor>
    <jointpos joint="hinge"/>
    <accelerometer site="s_ball"/>
    <framepos objtype="body" objname="tip"/>
  </sensor>
</mujoco>
"""

NW, NSTEP = 3, 25


@pytest.fixture(scope="module")
def models():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    return mjm, m


def _initial(mjm, rng):
    d = mujoco.MjData(mjm)
    nstate = mujoco.mj_stateSize(mjm, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    out = np.empty((NW, nstate))
    for w in range(NW):
        mujoco.mj_resetData(mjm, d)
        d.qpos[:3] += rng.normal(0, 0.05, 3)
        d.qvel[:] = rng.normal(0, 0.3, mjm.nv)
        d.qpos[7] = rng.uniform(-0.5, 0.5)
        mujoco.mj_getState(mjm, d, out[w], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    return out


def _compare(mjm, m, initial, control, **kw):
    mj_state, mj_sens = mj_rollout.rollout(mjm, mujoco.MjData(mjm), initial, control, **kw)
    d = tiphys.make_data(m, NW)
    st, sens = tiphys.rollout(m, d, initial, control, **kw)
    assert st.shape == mj_state.shape and sens.shape == mj_sens.shape
    np.testing.assert_allclose(st, mj_state, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sens, mj_sens, rtol=1e-8, atol=1e-8)
    return st, sens


def test_rollout_matches_mujoco_world_by_world(models):
    mjm, m = models
    rng = np.random.default_rng(0)
    initial = _initial(mjm, rng)
    control = rng.uniform(-1, 1, (NW, NSTEP, mjm.nu))
    st, _ = _compare(mjm, m, initial, control)
    assert np.ptp(st[:, -1, 1]) > 1e-3  # the worlds really differ


def test_singleton_rows_and_steps_are_tiled(models):
    mjm, m = models
    rng = np.random.default_rng(1)
    initial = _initial(mjm, rng)[:1]                 # one initial state for every world
    control = rng.uniform(-1, 1, (NW, 1, mjm.nu))    # one control per world for every step
    _compare(mjm, m, initial, control, nstep=NSTEP)


def test_other_control_specs_and_warmstart(models):
    """Controls of mocap pose, eq_active and applied forces; an initial warmstart."""
    mjm, m = models
    rng = np.random.default_rng(2)
    initial = _initial(mjm, rng)
    spec = (mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_MOCAP_POS
            | mujoco.mjtState.mjSTATE_EQ_ACTIVE | mujoco.mjtState.mjSTATE_QFRC_APPLIED)
    ncontrol = mujoco.mj_stateSize(mjm, spec)
    control = np.zeros((NW, NSTEP, ncontrol))
    control[..., :mjm.nu] = rng.uniform(-1, 1, (NW, NSTEP, mjm.nu))
    control[..., mjm.nu:mjm.nu + mjm.nv] = rng.normal(0, 0.1, (NW, NSTEP, mjm.nv))
    control[..., mjm.nu + mjm.nv] = np.arange(NSTEP) >= 10   # the weld turns on at step 10
    control[..., -3:] = [-0.4, 0.0, 0.6]
    warm = rng.normal(0, 0.1, (NW, mjm.nv))
    _compare(mjm, m, initial, control, control_spec=int(spec), initial_warmstart=warm)


def test_a_world_stops_at_its_first_warning_as_in_mujoco(models):
    """NaN control: MuJoCo zeroes it and raises mjWARN_BADCTRL; the rollout of that
    world stops and repeats its last outputs; the other worlds go on."""
    mjm, m = models
    rng = np.random.default_rng(3)
    initial = _initial(mjm, rng)
    control = rng.uniform(-1, 1, (NW, NSTEP, mjm.nu))
    control[1, 6, 0] = np.nan
    st, sens = _compare(mjm, m, initial, control)
    np.testing.assert_array_equal(st[1, 7:], np.repeat(st[1, 6:7], NSTEP - 7, axis=0))
    assert np.ptp(st[0, 7:, 0]) > 0  # time goes on in world 0


def test_bad_arguments_are_clear_errors(models):
    mjm, m = models
    d = tiphys.make_data(m, NW)
    initial = _initial(mjm, np.random.default_rng(4))
    with pytest.raises(ValueError, match="give nstep"):
        tiphys.rollout(m, d, initial)
    with pytest.raises(ValueError, match="initial_state must have shape"):
        tiphys.rollout(m, d, initial[:, :5], nstep=3)
    with pytest.raises(ValueError, match="control must have shape"):
        tiphys.rollout(m, d, initial, np.zeros((2, 4, mjm.nu)))
    with pytest.raises(ValueError, match="nstep=5 but control has 4 steps"):
        tiphys.rollout(m, d, initial, np.zeros((NW, 4, mjm.nu)), nstep=5)
    with pytest.raises(ValueError, match="control_spec can only contain bits of State.USER"):
        tiphys.rollout(m, d, initial, nstep=2, control_spec=tiphys.State.QPOS)
    with pytest.raises(ValueError, match="nstep must be a positive integer"):
        tiphys.rollout(m, d, initial, nstep=0)
