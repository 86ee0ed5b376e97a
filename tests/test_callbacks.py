"""Batched callbacks (kernels/callbacks.py) against MuJoCo 3.4.0's own.

Control and passive (mjcb_control, mjcb_passive): the same control law and passive
forces written once for all worlds in tiphys and per MjData in MuJoCo give the same
100-step trajectories in Euler, RK4 and implicitfast; the callbacks are called as
often as MuJoCo calls its own (RK4's four evaluations, step1, disabled actuation,
disabled springs and dampers), also once steps are replayed; reset_callbacks removes
them.

User actuators (mjcb_act_dyn, mjcb_act_gain, mjcb_act_bias): forward outputs (act_dot,
actuator_force, qfrc_actuator, qacc; poisoned with NaN first) on random states of
several worlds, with and without the callbacks (MuJoCo's defaults), and 100-step
trajectories in Euler, RK4 and implicitfast; the ids are those MuJoCo calls its
callbacks for (a disabled actuator group left out); a Taichi ndarray result; replays
recorded before a callback is installed do not skip it.

Contact filter (mjcb_contactfilter): contacts field by field on random states of
several worlds with a different filter per world (one that lets through a pair the
geom bitmask would drop: the filter replaces it, explicit pairs never filtered), the
pairs MuJoCo asks about among those tiphys gives, a short trajectory, and removing
the filter restores the bitmask. f64 CPU throughout."""
import json
import os
import sys

import mujoco
import numpy as np
import pytest
import taichi as ti

import subproc
import tiphys
from tiphys import replay
from tiphys.kernels import collision_driver

from oracle import collide_both, compare_contacts, random_free_qpos

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
    if __name__ != "__main__":
        tiphys.init(arch="cpu", precision="f64")
    yield
    tiphys.reset_callbacks()
    mujoco.set_mjcb_control(None)
    mujoco.set_mjcb_passive(None)
    mujoco.set_mjcb_act_dyn(None)
    mujoco.set_mjcb_act_gain(None)
    mujoco.set_mjcb_act_bias(None)
    mujoco.set_mjcb_contactfilter(None)


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


# ------------------------------------------------------------------ user actuators

ACT_XML = """<mujoco>
  <option timestep="0.005" integrator="{integrator}" actuatorgroupdisable="3"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="j0" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" mass="1"/>
      <body pos=".3 0 0">
        <joint name="j1" axis="0 1 0" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" mass=".7"/>
        <body pos=".3 0 0">
          <joint name="j2" axis="1 0 0" damping=".1"/>
          <geom type="box" size=".06 .06 .06" mass=".5"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="j0" dyntype="user" gaintype="user" biastype="user" ctrllimited="true"
             ctrlrange="-1 1"/>
    <general joint="j1" dyntype="user" actdim="2" biastype="user"/>
    <general joint="j2" dyntype="user" gaintype="user" actearly="true" actlimited="true"
             actrange="-1 1"/>
    <general joint="j1" gaintype="user" biastype="affine" biasprm="0 -1 -.2"/>
    <general joint="j0" gaintype="user" biastype="user" group="3"/>
    <general joint="j2" dyntype="filter" dynprm=".05" gaintype="user" biastype="user"
             group="2"/>
  </actuator>
</mujoco>"""

# which actuators MuJoCo calls each callback for (actuator 4 is in disabled group 3)
ACT_IDS = {"dyn": [0, 1, 2], "gain": [0, 2, 3, 5], "bias": [0, 1, 5]}


def dyn_law(i, ctrl, act, vel):
    """act_dot of user-dynamics actuator i (actuator 1, second order: its two rows)."""
    if i == 0:
        return ctrl[..., 0] - 2 * act[..., 0]
    if i == 1:
        return act[..., 2], ctrl[..., 1] - act[..., 1] - 0.3 * act[..., 2]
    return 3 * (ctrl[..., 2] - act[..., 3]) + 0.1 * vel[..., 2]


def gain_law(i, length, vel, act_dot):
    if i == 0:
        return 1.5 + length[..., 0]
    if i == 2:
        return 2 - 0.5 * np.tanh(vel[..., 2])
    if i == 3:
        return 0.8 + 0.1 * act_dot[..., 0]  # reads another actuator's act_dot
    return 0.5 + 0.2 * act_dot[..., 4]


def bias_law(i, length, vel):
    if i == 0:
        return -0.7 * vel[..., 0] - 0.2 * length[..., 0]
    if i == 1:
        return -0.5 * length[..., 1]
    return 0.3 * np.sin(length[..., 5])


def _mujoco_act_callbacks(calls):
    def dyn(m, d, i):
        calls.append(("dyn", i))
        value = dyn_law(i, d.ctrl, d.act, d.actuator_velocity)
        if m.actuator_actnum[i] == 1:
            return value
        adr = m.actuator_actadr[i]
        d.act_dot[adr:adr + 2] = value
        return 0.0

    def gain(m, d, i):
        calls.append(("gain", i))
        return gain_law(i, d.actuator_length, d.actuator_velocity, d.act_dot)

    def bias(m, d, i):
        calls.append(("bias", i))
        return bias_law(i, d.actuator_length, d.actuator_velocity)
    return dyn, gain, bias


def _tiphys_act_callbacks(calls, as_ndarray=False):
    def dyn(m, d, ids):
        calls.append(("dyn", tuple(ids)))
        ctrl, act, vel = d.numpy("ctrl"), d.numpy("act"), d.numpy("actuator_velocity")
        act_dot = d.numpy("act_dot")
        out = np.zeros((d.nworld, len(ids)))
        for k, i in enumerate(ids):
            value = dyn_law(i, ctrl, act, vel)
            if m.actuator_actnum[i] == 1:
                out[:, k] = value
            else:  # several activations: written into act_dot, as MuJoCo's callback
                adr = m.actuator_actadr[i]
                act_dot[:, adr], act_dot[:, adr + 1] = value
        d.act_dot.from_numpy(act_dot)
        return out

    def gain(m, d, ids):
        calls.append(("gain", tuple(ids)))
        length, vel = d.numpy("actuator_length"), d.numpy("actuator_velocity")
        out = np.stack([gain_law(i, length, vel, d.numpy("act_dot")) for i in ids], 1)
        if as_ndarray:  # a device array is used as it is
            arr = ti.ndarray(ti.f64, shape=out.shape)
            arr.from_numpy(out)
            return arr
        return out

    def bias(m, d, ids):
        calls.append(("bias", tuple(ids)))
        length, vel = d.numpy("actuator_length"), d.numpy("actuator_velocity")
        return np.stack([bias_law(i, length, vel) for i in ids], 1)
    return dyn, gain, bias


def _act_state(mjm, seed):
    rng = np.random.default_rng(seed)
    return {"qpos": rng.uniform(-0.6, 0.6, (NWORLD, mjm.nq)),
            "qvel": rng.normal(0, 0.8, (NWORLD, mjm.nv)),
            "act": rng.uniform(-0.8, 0.8, (NWORLD, mjm.na)),
            "ctrl": rng.uniform(-1.4, 1.4, (NWORLD, mjm.nu))}


ACT_OUTPUTS = ("act_dot", "actuator_force", "qfrc_actuator", "qacc")


def _mujoco_forward(mjm, state):
    out = {k: [] for k in ACT_OUTPUTS}
    for w in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        for name, value in state.items():
            getattr(mjd, name)[:] = value[w]
        mujoco.mj_forward(mjm, mjd)
        for k in ACT_OUTPUTS:
            out[k].append(getattr(mjd, k).copy())
    return {k: np.array(v) for k, v in out.items()}


def _tiphys_forward(m, state):
    d = tiphys.make_data(m, NWORLD)
    for name, value in state.items():
        getattr(d, name).from_numpy(value)
    for k in ACT_OUTPUTS:
        arr = getattr(d, k)
        arr.from_numpy(np.full(arr.shape, np.nan))
    tiphys.forward(m, d)
    return {k: d.numpy(k) for k in ACT_OUTPUTS}


@pytest.mark.parametrize("with_callbacks", [True, False])
def test_user_actuators_forward_matches_mujoco(with_callbacks):
    xml = ACT_XML.format(integrator="Euler")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    mj_calls, calls = [], []
    if with_callbacks:
        dyn, gain, bias = _mujoco_act_callbacks(mj_calls)
        mujoco.set_mjcb_act_dyn(dyn)
        mujoco.set_mjcb_act_gain(gain)
        mujoco.set_mjcb_act_bias(bias)
        dyn, gain, bias = _tiphys_act_callbacks(calls)
        tiphys.set_act_dyn_callback(dyn)
        tiphys.set_act_gain_callback(gain)
        tiphys.set_act_bias_callback(bias)
    for seed in range(3):
        state = _act_state(mjm, seed)
        theirs = _mujoco_forward(mjm, state)
        ours = _tiphys_forward(m, state)
        for k in ACT_OUTPUTS:
            assert np.abs(ours[k] - theirs[k]).max() < 1e-10, (k, ours[k], theirs[k])
    if with_callbacks:
        # one batched call per MuJoCo call of one world and actuator, for MuJoCo's ids
        for kind, ids in ACT_IDS.items():
            assert sorted({i for k, i in mj_calls if k == kind}) == ids
            assert [c for c in calls if c[0] == kind] == [(kind, tuple(ids))] * 3
            assert len([c for c in mj_calls if c[0] == kind]) == 3 * NWORLD * len(ids)
    else:
        assert not calls and not mj_calls


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast"])
def test_user_actuator_trajectories_match_mujoco(integrator):
    xml = ACT_XML.format(integrator=integrator)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    state = _act_state(mjm, 11)
    mj_calls, calls = [], []
    dyn, gain, bias = _mujoco_act_callbacks(mj_calls)
    mujoco.set_mjcb_act_dyn(dyn)
    mujoco.set_mjcb_act_gain(gain)
    mujoco.set_mjcb_act_bias(bias)
    theirs = []
    for w in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        for name, value in state.items():
            getattr(mjd, name)[:] = value[w]
        for _ in range(NSTEP):
            mujoco.mj_step(mjm, mjd)
        theirs.append(np.concatenate([mjd.qpos, mjd.qvel, mjd.act]))
    dyn, gain, bias = _tiphys_act_callbacks(calls, as_ndarray=integrator == "RK4")
    tiphys.set_act_dyn_callback(dyn)
    tiphys.set_act_gain_callback(gain)
    tiphys.set_act_bias_callback(bias)
    d = tiphys.make_data(m, NWORLD)
    for name, value in state.items():
        getattr(d, name).from_numpy(value)
    for _ in range(NSTEP):
        tiphys.step(m, d)
    ours = np.concatenate([d.numpy("qpos"), d.numpy("qvel"), d.numpy("act")], 1)
    assert np.abs(ours - np.array(theirs)).max() < 1e-9
    per_step = 4 if integrator == "RK4" else 1
    for kind, ids in ACT_IDS.items():
        n = len([c for c in calls if c[0] == kind])
        assert n == NSTEP * per_step
        assert len([c for c in mj_calls if c[0] == kind]) == n * NWORLD * len(ids)


def test_user_actuator_callbacks_run_after_recorded_steps_and_bad_results():
    xml = ACT_XML.format(integrator="Euler")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    state = _act_state(mjm, 5)
    d = tiphys.make_data(m, NWORLD)
    for name, value in state.items():
        getattr(d, name).from_numpy(value)
    mjds = []
    for w in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        for name, value in state.items():
            getattr(mjd, name)[:] = value[w]
        mjds.append(mjd)

    def both(nstep):
        for _ in range(nstep):
            tiphys.step(m, d)
            for mjd in mjds:
                mujoco.mj_step(mjm, mjd)
        theirs = np.array([np.concatenate([x.qpos, x.qvel, x.act]) for x in mjds])
        ours = np.concatenate([d.numpy("qpos"), d.numpy("qvel"), d.numpy("act")], 1)
        assert np.abs(ours - theirs).max() < 1e-9

    both(5)  # no callbacks: MuJoCo's defaults, and the steps are recorded
    assert replay.ENABLED is False or d.scratch.replay["step"].ready
    calls, mj_calls = [], []
    tiphys.set_act_gain_callback(_tiphys_act_callbacks(calls)[1])
    mujoco.set_mjcb_act_gain(_mujoco_act_callbacks(mj_calls)[1])
    both(4)
    assert len(calls) == 4 and len(mj_calls) == 4 * NWORLD * len(ACT_IDS["gain"])
    assert d.scratch.replay is None or "step" not in d.scratch.replay or \
        not d.scratch.replay["step"].ready
    tiphys.set_act_gain_callback(None)
    mujoco.set_mjcb_act_gain(None)
    both(4)  # recorded again, then replayed
    assert len(calls) == 4
    assert replay.ENABLED is False or d.scratch.replay["step"].ready
    tiphys.set_act_bias_callback(lambda m, d, ids: np.zeros((d.nworld, len(ids) + 1)))
    with pytest.raises(ValueError, match=r"act_bias callback returned an array of shape "
                                         r"\(3, 4\); expected .*\(3, 3\)"):
        tiphys.forward(m, d)
    tiphys.set_act_bias_callback(lambda m, d, ids: None)
    with pytest.raises(ValueError, match="act_bias callback returned None"):
        tiphys.forward(m, d)
    # one row for every world; None from act_dyn: it wrote act_dot itself
    tiphys.set_act_bias_callback(lambda m, d, ids: np.full(len(ids), 0.25))
    tiphys.set_act_dyn_callback(lambda m, d, ids: None)
    tiphys.forward(m, d)
    assert np.all(d.numpy("act_dot")[:, :4] == 0)  # the user dynamics' (4: a filter's)
    force, act = d.numpy("actuator_force"), d.numpy("act")
    assert np.allclose(force[:, 0], act[:, 0] + 0.25)  # no gain callback: gain 1
    assert np.allclose(force[:, 1], act[:, 2] + 0.25)
    with pytest.raises(TypeError, match="callable"):
        tiphys.set_act_dyn_callback(1)


# ------------------------------------------------------------------ contact filter

FILTER_XML = """<mujoco>
  <option timestep="0.004"/>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1"/>
    <body name="a" pos="0 0 .15"><freejoint/>
      <geom name="ball_a" type="sphere" size=".1" contype="2" conaffinity="2"/>
    </body>
    <body name="b" pos=".05 0 .35"><freejoint/>
      <geom name="box_b" type="box" size=".1 .1 .1"/>
      <geom name="visual_b" type="sphere" size=".05" pos=".1 0 .1" contype="0"
            conaffinity="0"/>
      <geom name="cap_b" type="capsule" size=".05 .1" pos="-.1 0 0" contype="2"
            conaffinity="2"/>
    </body>
    <body name="c" pos="0 .05 .6"><freejoint/>
      <geom name="ball_c" type="sphere" size=".12"/>
    </body>
    <body name="e" pos=".2 0 .2"><freejoint/>
      <geom name="cap_e" type="capsule" size=".05 .2" euler="0 90 0" contype="4"
            conaffinity="1"/>
    </body>
  </worldbody>
  <contact>
    <pair geom1="ball_c" geom2="floor"/>
  </contact>
</mujoco>"""

BOX_B, CAP_B = 2, 4


def filter_law(world, g1, g2):
    """World 0 keeps every pair (also cap_b with the floor, which the geom bitmask
    drops; ball_a and the floor never meet: their bodies' bitmasks do not match),
    world 1 drops box_b's pairs, world 2 drops everything (the explicit pair stays)."""
    g1, g2 = np.asarray(g1), np.asarray(g2)
    if world == 0:
        return np.zeros(np.broadcast(g1, g2).shape, dtype=bool)
    if world == 1:
        return (g1 == BOX_B) | (g2 == BOX_B)
    return np.ones(np.broadcast(g1, g2).shape, dtype=bool)


def _tiphys_filter(calls, as_ndarray=False):
    def contactfilter(m, d, geom):
        calls.append(geom.copy())
        out = np.stack([filter_law(w, geom[:, 0], geom[:, 1]) for w in range(d.nworld)])
        if as_ndarray:
            arr = ti.ndarray(ti.i32, shape=out.shape)
            arr.from_numpy(out.astype(np.int32))
            return arr
        return out
    return contactfilter


def _set_mujoco_filter(world, calls):
    def contactfilter(m, d, g1, g2):
        calls.add((g1, g2))
        return int(filter_law(world, g1, g2))
    mujoco.set_mjcb_contactfilter(contactfilter)


@pytest.mark.parametrize("as_ndarray,midphase", [(False, True), (True, True),
                                                 (False, False)])
def test_contact_filter_contacts_match_mujoco(as_ndarray, midphase):
    xml = FILTER_XML if midphase else FILTER_XML.replace(
        '<option timestep="0.004"/>',
        '<option timestep="0.004"><flag midphase="disable"/></option>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    calls, mj_calls = [], set()
    tiphys.set_contactfilter_callback(_tiphys_filter(calls, as_ndarray))
    d = tiphys.make_data(m, NWORLD)
    rng = np.random.default_rng(3)
    seen = set()
    for trial in range(6):
        qpos = random_free_qpos(mjm, rng, NWORLD, spread=0.12, center=(0, 0, 0))
        qpos[:, 2::7] = np.clip(qpos[:, 2::7], 0.02, None)  # near or on the floor
        qpos[:, 9] = rng.uniform(0.05, 0.15, NWORLD)  # body b's capsule in the floor
        ours = []
        # MuJoCo's filter differs per world: run each world with its own
        for w in range(NWORLD):
            _set_mujoco_filter(w, mj_calls)
            o, theirs = collide_both(m, d, mjm, qpos)
            ours.append(o[w])
            errors = compare_contacts(o[w], theirs[w], atol=1e-9)
            assert not errors, (trial, w, errors)
            seen |= {tuple(c["geom"].astype(int)) for c in theirs[w]}
    assert (0, CAP_B) in seen  # a pair the geom bitmask drops, let through
    assert any(BOX_B in g for g in seen)
    # tiphys asks about a superset of MuJoCo's pairs (MuJoCo: those whose bounding
    # volumes overlap), never about the explicit pair; about the visual geom (no
    # contype, no conaffinity) only where MuJoCo does: without its midphase, whose BVH
    # leaves it out; a filter that keeps such a pair makes it collide, in both
    pairs = {tuple(int(x) for x in p) for p in calls[0]}
    assert all(np.array_equal(c, calls[0]) for c in calls)
    assert mj_calls and mj_calls <= pairs
    assert (0, 5) not in pairs and (5, 0) not in pairs
    visual = 3
    assert any(visual in p for p in pairs) == (not midphase)
    assert any(visual in p for p in seen) == (not midphase)


def test_contact_filter_trajectory_and_removal():
    mjm = mujoco.MjModel.from_xml_string(FILTER_XML)
    m = tiphys.load_model_from_string(FILTER_XML)
    calls = []
    tiphys.set_contactfilter_callback(_tiphys_filter(calls))
    d = tiphys.make_data(m, NWORLD)
    for _ in range(NSTEP):
        tiphys.step(m, d)
    assert len(calls) == NSTEP
    assert np.ptp(d.numpy("qpos")[:, 2::7], axis=0).max() > 0.1  # the filters matter
    for w in range(NWORLD):
        _set_mujoco_filter(w, set())
        mjd = mujoco.MjData(mjm)
        for _ in range(NSTEP):
            mujoco.mj_step(mjm, mjd)
        assert np.abs(d.numpy("qpos")[w] - mjd.qpos).max() < 1e-9, w
        assert np.abs(d.numpy("qvel")[w] - mjd.qvel).max() < 1e-9, w
    # without a filter the geom bitmask is back: cap_b goes through the floor
    tiphys.set_contactfilter_callback(None)
    mujoco.set_mjcb_contactfilter(None)
    rng = np.random.default_rng(4)
    qpos = random_free_qpos(mjm, rng, NWORLD, spread=0.12)
    qpos[:, 2::7] = np.clip(qpos[:, 2::7], 0.02, None)
    qpos[:, 9] = 0.08
    ours, theirs = collide_both(m, d, mjm, qpos)
    for w in range(NWORLD):
        assert not compare_contacts(ours[w], theirs[w], atol=1e-9)
        assert not any(tuple(c["geom"].astype(int)) == (0, CAP_B) for c in ours[w])
        assert any(tuple(c["geom"].astype(int)) == (0, BOX_B) for c in ours[w])
    assert len(calls) == NSTEP
    # steps recorded without the filter do not skip it once it is installed again
    for _ in range(4):
        tiphys.step(m, d)
    assert replay.ENABLED is False or d.scratch.replay["step"].ready
    tiphys.set_contactfilter_callback(_tiphys_filter(calls))
    for _ in range(3):
        tiphys.step(m, d)
    assert len(calls) == NSTEP + 3


def test_contact_filter_bad_results_and_dynamic_broadphase(monkeypatch):
    m = tiphys.load_model_from_string(FILTER_XML)
    d = tiphys.make_data(m, NWORLD)
    tiphys.set_contactfilter_callback(lambda m, d, geom: np.zeros((len(geom), 2)))
    with pytest.raises(ValueError, match="contactfilter callback returned an array"):
        tiphys.forward(m, d)
    # one row: the same for every world
    tiphys.set_contactfilter_callback(lambda m, d, geom: np.ones(len(geom), dtype=bool))
    tiphys.forward(m, d)
    geom = d.numpy("contact_geom")
    for w in range(NWORLD):  # only the explicit pair is left
        assert {tuple(g) for g in geom[w, :d.numpy("ncon")[w]]} <= {(0, 5), (5, 0)}
    monkeypatch.setattr(collision_driver, "DYNAMIC_MIN_PAIRS", 1)
    m2 = tiphys.load_model_from_string(FILTER_XML)
    d2 = tiphys.make_data(m2, 1)
    with pytest.raises(NotImplementedError, match="contact-filter callback.*dynamic"):
        tiphys.forward(m2, d2)


# ------------------------------------------------------------------ f32

def _f32_errors():
    """User-actuator forward outputs (scaled by their size) and filtered contacts'
    largest differences from MuJoCo, in f32 (run in a helper process: Taichi's
    precision is per process)."""
    tiphys.init(arch="cpu", precision="f32")
    out = {}
    try:
        xml = ACT_XML.format(integrator="Euler")
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = tiphys.load_model_from_string(xml)
        setters = (mujoco.set_mjcb_act_dyn, mujoco.set_mjcb_act_gain,
                   mujoco.set_mjcb_act_bias)
        for setter, fn in zip(setters, _mujoco_act_callbacks([])):
            setter(fn)
        tiphys.set_act_dyn_callback(_tiphys_act_callbacks([])[0])
        tiphys.set_act_gain_callback(_tiphys_act_callbacks([])[1])
        tiphys.set_act_bias_callback(_tiphys_act_callbacks([])[2])
        state = _act_state(mjm, 2)
        theirs = _mujoco_forward(mjm, state)
        ours = _tiphys_forward(m, state)
        for k in ACT_OUTPUTS:
            out[k] = float(np.abs(ours[k] - theirs[k]).max() / (1 + np.abs(theirs[k]).max()))
        mjm = mujoco.MjModel.from_xml_string(FILTER_XML)
        m = tiphys.load_model_from_string(FILTER_XML)
        tiphys.set_contactfilter_callback(_tiphys_filter([]))
        d = tiphys.make_data(m, NWORLD)
        qpos = random_free_qpos(mjm, np.random.default_rng(3), NWORLD, spread=0.12)
        qpos[:, 2::7] = np.clip(qpos[:, 2::7], 0.02, None)
        qpos[:, 9] = 0.08
        errors = []
        for w in range(NWORLD):
            _set_mujoco_filter(w, set())
            o, t = collide_both(m, d, mjm, qpos)
            errors += compare_contacts(o[w], t[w], atol=1e-4)  # f32 detectors
        out["contacts"] = errors
    finally:
        for setter in (mujoco.set_mjcb_act_dyn, mujoco.set_mjcb_act_gain,
                       mujoco.set_mjcb_act_bias, mujoco.set_mjcb_contactfilter):
            setter(None)
        tiphys.reset_callbacks()
    return out


def test_user_actuators_and_contact_filter_in_f32():
    here = os.path.dirname(os.path.abspath(__file__))
    res = subproc.run([os.path.abspath(__file__), "f32"], key="cpu-f32", cwd=here)
    assert res.returncode == 0, res.stderr[-3000:]
    errors = json.loads(res.stdout.strip().splitlines()[-1])
    assert errors.pop("contacts") == []
    for k, err in errors.items():
        assert err < 1e-5, (k, err)


if __name__ == "__main__" and sys.argv[1:] == ["f32"]:
    print(json.dumps(_f32_errors()))
