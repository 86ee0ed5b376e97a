"""Batched control and passive callbacks (kernels/callbacks.py) against MuJoCo 3.4.0's
mjcb_control and mjcb_passive: the same control law and passive forces written once
for all worlds in tiphys and per MjData in MuJoCo give the same 100-step trajectories
in Euler, RK4 and implicitfast; the callbacks are called as often as MuJoCo calls its
own (RK4's four evaluations, step1, disabled actuation, disabled springs and
dampers), also once steps are replayed; reset_callbacks removes them. f64 CPU."""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys import replay

NWORLD = 3
NSTEP = 100

XML = """<mujoco>
  <option timestep="0.005" integrator="{integrator}"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="a" pos="0 0 .8">
      <joint name="j0" axis="0 1 0" damping=".05"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" mass="1"/>
      <body pos=".3 0 0">
        <joint name="j1" axis="0 1 0" stiffness=".5"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" mass=".7"/>
        <body pos=".3 0 0">
          <joint name="j2" axis="1 0 0"/>
          <geom type="box" size=".08 .08 .08" mass="2"/>
        </body>
      </body>
    </body>
    <body pos=".5 .5 .3"><freejoint/><geom type="sphere" size=".08" mass=".4"/></body>
  </worldbody>
  <actuator>
    <motor joint="j0" gear="2" ctrlrange="-1 1" ctrllimited="true"/>
    <motor joint="j1" gear="1"/>
    <position joint="j2" kp="3"/>
  </actuator>
</mujoco>"""

KP, KD = np.array([2.0, 1.5, 0.8]), np.array([0.3, 0.2, 0.1])
TARGET = np.array([0.4, -0.6, 0.3])
JOINT_QPOS, JOINT_QVEL = [0, 1, 2], [0, 1, 2]


def control_law(qpos, qvel):
    return KP * (TARGET - qpos[..., JOINT_QPOS]) - KD * qvel[..., JOINT_QVEL]


def passive_law(qpos, qvel):
    out = -0.02 * qvel
    out[..., 1] += 0.2 * np.sin(3 * qpos[..., 1])
    return out


@pytest.fixture(autouse=True)
def _clean():
    tiphys.init(arch="cpu", precision="f64")
    yield
    tiphys.reset_callbacks()
    mujoco.set_mjcb_control(None)
    mujoco.set_mjcb_passive(None)


def _tiphys_callbacks(counts):
    def control(m, d):
        counts["control"] += 1
        d.ctrl.from_numpy(control_law(d.numpy("qpos"), d.numpy("qvel")))

    def passive(m, d):
        counts["passive"] += 1
        qfrc = d.numpy("qfrc_passive")
        d.qfrc_passive.from_numpy(qfrc + passive_law(d.numpy("qpos"), d.numpy("qvel")))
    return control, passive


def _mujoco_callbacks(counts):
    def control(m, d):
        counts["control"] += 1
        d.ctrl[:] = control_law(d.qpos, d.qvel)

    def passive(m, d):
        counts["passive"] += 1
        d.qfrc_passive[:] += passive_law(d.qpos, d.qvel)
    return control, passive


def _start(mjm):
    rng = np.random.default_rng(7)
    qpos = np.tile(mjm.qpos0, (NWORLD, 1))
    qpos[:, :3] += rng.normal(0, .3, (NWORLD, 3))
    qvel = rng.normal(0, .5, (NWORLD, mjm.nv))
    return qpos, qvel


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast"])
def test_trajectories_match_mujoco_callbacks(integrator):
    xml = XML.format(integrator=integrator)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos, qvel = _start(mjm)
    theirs, mj_counts = [], {"control": 0, "passive": 0}
    control, passive = _mujoco_callbacks(mj_counts)
    mujoco.set_mjcb_control(control)
    mujoco.set_mjcb_passive(passive)
    try:
        for w in range(NWORLD):
            mjd = mujoco.MjData(mjm)
            mjd.qpos[:], mjd.qvel[:] = qpos[w], qvel[w]
            for _ in range(NSTEP):
                mujoco.mj_step(mjm, mjd)
            theirs.append(np.concatenate([mjd.qpos, mjd.qvel, mjd.ctrl]))
    finally:
        mujoco.set_mjcb_control(None)
        mujoco.set_mjcb_passive(None)
    counts = {"control": 0, "passive": 0}
    control, passive = _tiphys_callbacks(counts)
    tiphys.set_control_callback(control)
    tiphys.set_passive_callback(passive)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    for _ in range(NSTEP):
        tiphys.step(m, d)
    ours = np.concatenate([d.numpy("qpos"), d.numpy("qvel"), d.numpy("ctrl")], 1)
    assert np.abs(ours - np.array(theirs)).max() < 1e-10
    # one batched call per MuJoCo call of one world (RK4: four per step), replays or not
    assert counts == {k: v // NWORLD for k, v in mj_counts.items()}
    assert counts["control"] == NSTEP * (4 if integrator == "RK4" else 1)
    assert d.scratch.replay is None or not any(r.ready for r in d.scratch.replay.values())


def test_calls_follow_mujocos_flags_and_step1():
    xml = XML.format(integrator="Euler")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    counts = {"control": 0, "passive": 0}
    mj_counts = {"control": 0, "passive": 0}
    tiphys.set_control_callback(_tiphys_callbacks(counts)[0])
    tiphys.set_passive_callback(_tiphys_callbacks(counts)[1])
    mujoco.set_mjcb_control(_mujoco_callbacks(mj_counts)[0])
    mujoco.set_mjcb_passive(_mujoco_callbacks(mj_counts)[1])
    d = tiphys.make_data(m, 1)
    mjd = mujoco.MjData(mjm)
    for flags in (0, 1 << 11, (1 << 2) | (1 << 3)):  # none; actuation; spring and damper
        for model in (m, mjm):
            model.opt.disableflags = flags
        tiphys.forward(m, d)
        mujoco.mj_forward(mjm, mjd)
        tiphys.step1(m, d)
        mujoco.mj_step1(mjm, mjd)
        tiphys.step2(m, d)
        mujoco.mj_step2(mjm, mjd)
        assert counts == mj_counts, flags
    assert counts["control"] > 0 and counts["passive"] > 0


def test_reset_callbacks_and_bad_input():
    m = tiphys.load_model_from_string(XML.format(integrator="Euler"))
    d = tiphys.make_data(m, 1)
    counts = {"control": 0, "passive": 0}
    control, passive = _tiphys_callbacks(counts)
    assert tiphys.set_control_callback(control) is None
    assert tiphys.set_control_callback(control) is control
    tiphys.set_passive_callback(passive)
    tiphys.set_sensor_callback(lambda m, d, stage: None)
    tiphys.reset_callbacks()
    for _ in range(3):
        tiphys.step(m, d)
    assert counts == {"control": 0, "passive": 0}
    assert tiphys.set_sensor_callback(None) is None
    with pytest.raises(TypeError, match="callable"):
        tiphys.set_control_callback(3)
    with pytest.raises(TypeError, match="callable"):
        tiphys.set_passive_callback("f")


def test_a_callback_installed_after_steps_were_recorded_runs():
    m = tiphys.load_model_from_string(XML.format(integrator="Euler"))
    d = tiphys.make_data(m, 2)
    for _ in range(5):
        tiphys.step(m, d)
    assert d.scratch.replay["step"].ready
    counts = {"control": 0, "passive": 0}
    control, passive = _tiphys_callbacks(counts)
    tiphys.set_control_callback(control)
    tiphys.set_passive_callback(passive)
    for _ in range(4):
        tiphys.step(m, d)
    assert counts == {"control": 4, "passive": 4}
    tiphys.reset_callbacks()
    saved = replay.ENABLED
    for _ in range(4):
        tiphys.step(m, d)
    assert replay.ENABLED == saved and counts == {"control": 4, "passive": 4}
