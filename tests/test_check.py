"""Bad-state checks (mj_checkPos / mj_checkVel / mj_checkAcc, bad controls) per world:
MuJoCo's warning counts and reset, and nothing leaks into the other worlds."""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.kernels.check import warnings_of
from tiphys.kernels.consts import WARN_BADCTRL, WARN_BADQACC, WARN_BADQPOS, WARN_BADQVEL

XML = """<mujoco><option timestep="0.01"><flag contact="disable" {flags}/></option>
  <worldbody>
    <body pos="0 0 1"><joint name="h" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <body pos=".3 0 0"><joint type="slide" axis="1 0 0"/><geom size=".05"/></body>
    </body>
    <body pos="1 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
  </worldbody>
  <actuator><motor joint="h" gear="2"/></actuator>
  <keyframe><key name="k" qpos=".3 .1 1 0 1.2 1 0 0 0" ctrl=".5"/></keyframe>
</mujoco>"""
NWORLD = 4


@pytest.fixture(scope="module")
def models():
    xml = XML.format(flags="")
    return tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)


def _start(m, mjm, nworld=NWORLD, keyframe=None):
    d = tiphys.make_data(m, nworld, keyframe=keyframe)
    rng = np.random.default_rng(5)
    qvel = rng.normal(size=(nworld, m.nv))
    d.qvel.from_numpy(qvel)
    d.ctrl.from_numpy(rng.normal(size=(nworld, m.nu)))
    return d


def _state(d):
    return {k: d.numpy(k).copy() for k in ("qpos", "qvel", "act", "ctrl", "time")}


@pytest.mark.parametrize("field,warn", [("qpos", WARN_BADQPOS), ("qvel", WARN_BADQVEL)])
def test_bad_state_resets_only_that_world_like_mujoco(models, field, warn):
    m, mjm = models
    clean = _start(m, mjm)
    tiphys.step(m, clean)
    d = _start(m, mjm)
    values = d.numpy(field)
    values[2, 1] = np.nan if field == "qpos" else 2e10
    getattr(d, field).from_numpy(values)
    tiphys.step(m, d)
    w = warnings_of(d)
    assert w[2, warn] == 1 and w.sum() == 1
    assert d.numpy("warning_lastinfo")[2, warn] == 1
    a, b = _state(d), _state(clean)
    for k in a:  # other worlds: exactly the clean run
        np.testing.assert_array_equal(np.delete(a[k], 2, axis=0), np.delete(b[k], 2, axis=0))
    # the bad world: MuJoCo's mj_step after the same bad value (reset to qpos0, step)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = d.numpy("qpos")[0] * 0 + mjm.qpos0
    mjd.qvel[:] = 0
    getattr(mjd, field)[1] = np.nan if field == "qpos" else 2e10
    mujoco.mj_step(mjm, mjd)
    assert mjd.warning[warn].number == 1 and mjd.warning[warn].lastinfo == 1
    np.testing.assert_allclose(a["qpos"][2], mjd.qpos, atol=1e-12)
    np.testing.assert_allclose(a["qvel"][2], mjd.qvel, atol=1e-12)
    np.testing.assert_allclose(a["time"][2], mjd.time, atol=1e-15)


def test_bad_qacc_resets_to_keyframe_and_rests_one_step(models):
    m, mjm = models
    d = _start(m, mjm, keyframe="k")
    force = np.zeros((NWORLD, m.nv))
    force[1, 3] = 1e300  # qacc beyond 1e10 in world 1 only
    d.qfrc_applied.from_numpy(force)
    tiphys.step(m, d)
    w = warnings_of(d)
    assert w[1, WARN_BADQACC] == 1 and w.sum() == 1
    key = mjm.key("k")
    np.testing.assert_array_equal(d.numpy("qpos")[1], key.qpos)  # qacc 0: rests at the key
    np.testing.assert_array_equal(d.numpy("qvel")[1], 0)
    np.testing.assert_array_equal(d.numpy("ctrl")[1], key.ctrl)
    np.testing.assert_allclose(d.numpy("time")[1], mjm.opt.timestep)
    assert d.numpy("qfrc_applied")[1].max() == 0
    tiphys.step(m, d)  # and simulates normally afterwards
    assert np.isfinite(d.numpy("qpos")).all() and warnings_of(d).sum() == 1


def test_autoreset_disabled_counts_and_keeps_the_world_apart():
    xml = XML.format(flags='autoreset="disable"')
    m = tiphys.load_model_from_string(xml)
    clean = _start(m, None)
    tiphys.step(m, clean)
    d = _start(m, None)
    qpos = d.numpy("qpos")
    qpos[3, 0] = np.inf
    d.qpos.from_numpy(qpos)
    tiphys.step(m, d)
    assert warnings_of(d)[3, WARN_BADQPOS] == 2  # MuJoCo 3.4.0 counts it twice then
    assert not np.isfinite(d.numpy("qpos")[3]).all()  # not reset
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[0] = np.inf
    mujoco.mj_step(mjm, mjd)
    assert mjd.warning[WARN_BADQPOS].number == 2
    for k in ("qpos", "qvel"):
        np.testing.assert_array_equal(d.numpy(k)[:3], clean.numpy(k)[:3])


def test_bad_ctrl_is_zeroed_like_mujoco(models):
    """A bad control (after clamping) makes the world's actuators see zero controls;
    ctrl itself is left as set."""
    m, mjm = models
    d = _start(m, mjm)
    ctrl = d.numpy("ctrl")
    ctrl[0, 0] = np.nan
    d.ctrl.from_numpy(ctrl)
    tiphys.forward(m, d)
    assert warnings_of(d)[0, WARN_BADCTRL] == 1 and warnings_of(d).sum() == 1
    assert np.isnan(d.numpy("ctrl")[0, 0]) and d.numpy("ctrl")[1, 0] != 0
    force = d.numpy("actuator_force")
    assert force[0, 0] == 0 and force[1, 0] != 0
    mjd = mujoco.MjData(mjm)
    mjd.ctrl[0] = np.nan
    mujoco.mj_forward(mjm, mjd)
    assert mjd.warning[WARN_BADCTRL].number == 1 and mjd.actuator_force[0] == 0
