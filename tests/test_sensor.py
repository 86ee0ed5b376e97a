"""Position- and velocity-stage sensors, cutoff, the user callback and the sensor call
sites of the pipeline, against MuJoCo 3.4.0 (mj_forward, mj_step, mj_step1, mj_inverse).

Models are compiled by MuJoCo and put on the device with ``tiphys.put_model``. Several
worlds, each with different random qpos (unnormalized quaternions, joints past their
limits), qvel, ctrl and time; sensordata poisoned with NaN first; every value of every
sensor compared to MuJoCo's on the same state at 1e-8 (relative to max(1, |value|)).
SCENE has every pos/vel sensor type of MuJoCo 3.4.0 but the geom distance ones (their
own model below), every object and reference type of the frame sensors, rangefinders
that hit and miss, cameras with fovy and with intrinsics, every insidesite geom type,
limit rows present in some worlds only, a static body. The corpus models with sensors
(mjtest/model.xml) and gym ant/humanoid with generated sensors on every joint, body
and site are compared too. Max errors per type are printed (pytest -s). Run as a
script (``python tests/test_sensor.py f32``) it checks SCENE and GEOMDIST in f32.
"""
import functools
import json
import os
import sys

import mujoco
import numpy as np
import pytest
from lxml import etree

import subproc
import tiphys
from oracle import corpus_dir, strip_later_sections
from tiphys.kernels import sensor as sensor_mod
from tiphys.kernels.consts import SENS_E_KINETIC, SENS_USER

NWORLD = 4
TOL = 1e-8
F32_TOL = 1e-4

SCENE = """
<mujoco>
  <option gravity=".1 .2 -9.81" magnetic=".3 -.2 .5" timestep=".005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" pos="0 0 -1"/>
    <site name="ws" pos=".3 .1 .2" euler="10 20 30"/>
    <site name="rf_down" pos="0 0 2" euler="180 0 0"/>
    <camera name="wcam" pos="0 -3 1" euler="70 0 0" resolution="640 480"/>
    <camera name="icam" pos="2 0 1" xyaxes="0 1 0 -.3 0 1" resolution="320 200"
            sensorsize=".004 .003" focal=".005 .006"/>
    <body name="b1" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" range="-.3 .3" limited="true"/>
      <geom name="g1" type="capsule" size=".1 .3" pos=".1 0 0" euler="0 90 0"/>
      <site name="s1" pos=".2 .1 0" euler="5 10 15"/>
      <site name="rf1" pos=".3 0 0" euler="0 90 0"/>
      <camera name="c1" pos=".1 0 .2" euler="0 10 0"/>
      <body name="b2" pos=".5 0 0">
        <joint name="ball" type="ball"/>
        <geom name="g2" type="box" size=".1 .2 .05" pos="0 .1 0"/>
        <site name="s2" pos="0 0 .1" size=".3 .2 .25" type="box"/>
        <site name="sph" pos="0 0 -.2" size=".3" type="sphere"/>
        <site name="cap" pos="0 0 -.2" size=".2 .2" type="capsule" euler="30 0 0"/>
        <site name="ell" pos="0 0 -.3" size=".2 .3 .25" type="ellipsoid"/>
        <site name="cyl" pos="0 0 -.3" size=".25 .2" type="cylinder" euler="0 40 0"/>
        <body name="b3" pos="0 0 -.4">
          <joint name="slide" type="slide" axis="1 0 0" range="-.2 .2"/>
          <geom name="g3" type="sphere" size=".1" mass=".5"/>
          <geom name="g3b" type="cylinder" size=".05 .1" pos="0 0 -.1"/>
          <site name="s3" pos=".05 0 0"/>
        </body>
      </body>
    </body>
    <body name="free" pos="1 1 1">
      <freejoint/>
      <geom name="gfree" type="ellipsoid" size=".1 .2 .3"/>
      <site name="s4"/>
      <camera name="c2" pos="0 0 .3"/>
    </body>
    <body name="static" pos="-1 0 .5">
      <geom name="gstatic" type="box" size=".2 .2 .2"/>
      <site name="s5" pos="0 0 .3"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1" limited="true" range="-.1 .1">
      <joint joint="hinge" coef="1"/><joint joint="slide" coef="-.5"/>
    </fixed>
  </tendon>
  <actuator>
    <motor name="act0" joint="hinge"/>
    <position name="act1" joint="slide" kp="10"/>
    <motor name="act2" tendon="t1"/>
  </actuator>
  <sensor>
    <magnetometer site="s1"/>
    <magnetometer site="s5"/>
    <rangefinder site="rf_down"/>
    <rangefinder site="rf1"/>
    <rangefinder site="s3"/>
    <camprojection site="s3" camera="wcam"/>
    <camprojection site="s4" camera="icam"/>
    <jointpos joint="hinge"/><jointpos joint="slide"/>
    <tendonpos tendon="t1"/><actuatorpos actuator="act0"/><actuatorpos actuator="act2"/>
    <ballquat joint="ball"/>
    <jointlimitpos joint="hinge"/><jointlimitpos joint="slide"/>
    <tendonlimitpos tendon="t1"/>
    <framepos objtype="site" objname="s1"/>
    <framepos objtype="body" objname="b2" reftype="xbody" refname="b1"/>
    <framepos objtype="geom" objname="g2" reftype="camera" refname="c1"/>
    <framepos objtype="camera" objname="c2" reftype="body" refname="b3"/>
    <framepos objtype="xbody" objname="free" reftype="geom" refname="g1"/>
    <framepos objtype="site" objname="s3" reftype="site" refname="s5"/>
    <framequat objtype="xbody" objname="b3"/>
    <framequat objtype="body" objname="b2" reftype="site" refname="s1"/>
    <framequat objtype="camera" objname="c1" reftype="geom" refname="g1"/>
    <framequat objtype="geom" objname="gfree" reftype="xbody" refname="b2"/>
    <framequat objtype="site" objname="s4" reftype="body" refname="b3"/>
    <framequat objtype="site" objname="s2" reftype="camera" refname="wcam"/>
    <framexaxis objtype="site" objname="s2"/>
    <framexaxis objtype="body" objname="b3" reftype="xbody" refname="free"/>
    <frameyaxis objtype="geom" objname="g1" reftype="body" refname="free"/>
    <frameyaxis objtype="xbody" objname="b2" reftype="site" refname="s2"/>
    <framezaxis objtype="camera" objname="wcam" reftype="site" refname="s3"/>
    <framezaxis objtype="body" objname="free" reftype="geom" refname="g3"/>
    <subtreecom body="b1"/><subtreecom body="world"/><subtreecom body="b3"/>
    <insidesite objtype="body" objname="b3" site="s2"/>
    <insidesite objtype="xbody" objname="b3" site="sph"/>
    <insidesite objtype="geom" objname="g3b" site="cap"/>
    <insidesite objtype="site" objname="s3" site="ell"/>
    <insidesite objtype="camera" objname="c1" site="cyl"/>
    <insidesite objtype="geom" objname="g3" site="cyl"/>
    <e_potential/>
    <clock/>
    <velocimeter site="s1"/><velocimeter site="s5"/><gyro site="s3"/><gyro site="s4"/>
    <jointvel joint="hinge"/><jointvel joint="slide"/><tendonvel tendon="t1"/>
    <actuatorvel actuator="act1"/><actuatorvel actuator="act2"/>
    <ballangvel joint="ball"/>
    <jointlimitvel joint="hinge"/><jointlimitvel joint="slide"/><tendonlimitvel tendon="t1"/>
    <framelinvel objtype="site" objname="s3"/>
    <framelinvel objtype="body" objname="b3" reftype="xbody" refname="free"/>
    <framelinvel objtype="geom" objname="g2" reftype="camera" refname="c1"/>
    <framelinvel objtype="camera" objname="c2" reftype="site" refname="s1"/>
    <framelinvel objtype="xbody" objname="b2" reftype="body" refname="b1"/>
    <frameangvel objtype="geom" objname="g2" reftype="camera" refname="c1"/>
    <frameangvel objtype="xbody" objname="free"/>
    <frameangvel objtype="body" objname="b3" reftype="geom" refname="gfree"/>
    <frameangvel objtype="site" objname="s5" reftype="xbody" refname="b2"/>
    <subtreelinvel body="b1"/><subtreeangmom body="b1"/><subtreeangmom body="world"/>
    <subtreelinvel body="world"/><subtreeangmom body="b3"/><subtreelinvel body="static"/>
    <e_kinetic/>
  </sensor>
</mujoco>
"""


MAXERR: dict = {}


def _state(mjm, nworld, seed):
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-.5, .5, (nworld, mjm.nq))
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            qpos[:, adr:adr + 4] = rng.normal(size=(nworld, 4)) * 1.3
        elif mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[:, adr + 3:adr + 7] = rng.normal(size=(nworld, 4)) * .8
    qvel = rng.normal(size=(nworld, mjm.nv))
    ctrl = rng.normal(size=(nworld, mjm.nu))
    time = rng.uniform(0, 10, nworld)
    return qpos, qvel, ctrl, time


def _put(d, qpos, qvel, ctrl, time):
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    if ctrl.shape[1]:
        d.ctrl.from_numpy(ctrl)
    d.time.from_numpy(time)


def _poison(d, mjm):
    d.sensordata.from_numpy(np.full((d.nworld, max(1, mjm.nsensordata)), np.nan))


def _mujoco(mjm, qpos, qvel, ctrl, time, fn=mujoco.mj_forward):
    md = mujoco.MjData(mjm)
    out, energy = [], []
    for w in range(qpos.shape[0]):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        md.ctrl[:] = ctrl[w]
        md.time = time[w]
        fn(mjm, md)
        out.append(md.sensordata.copy())
        energy.append(md.energy.copy())
    return np.array(out), np.array(energy)


def _compare(mjm, got, want, worlds=None, stages=(1, 2), label="", skip=()):
    """Every sensor of the given stages (but the types in ``skip``); returns the largest
    error per type."""
    worlds = range(got.shape[0]) if worlds is None else worlds
    errs = {}
    for s in range(mjm.nsensor):
        if mjm.sensor_needstage[s] not in stages or mjm.sensor_type[s] in skip:
            continue
        adr, dim = mjm.sensor_adr[s], mjm.sensor_dim[s]
        name = mujoco.mjtSensor(mjm.sensor_type[s]).name[7:].lower()
        for w in worlds:
            g, e = got[w, adr:adr + dim], want[w, adr:adr + dim]
            err = np.abs(g - e)
            assert np.all(err <= TOL * np.maximum(1, np.abs(e))), \
                f"{label} sensor {s} ({name}) world {w}: {g} != {e}"
            errs[name] = max(errs.get(name, 0.0), float(err.max()))
    for k, v in errs.items():
        MAXERR[k] = max(MAXERR.get(k, 0.0), v)
    return errs


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    print("\nmax |tiphys - MuJoCo| per sensor type:")
    for k in sorted(MAXERR):
        print(f"  {k:16s} {MAXERR[k]:.2e}")


@pytest.fixture(scope="module")
def scene():
    mjm = mujoco.MjModel.from_xml_string(SCENE)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, NWORLD)
    return mjm, m, d


def test_scene_covers_every_pos_vel_type(scene):
    mjm = scene[0]
    want = set(sensor_mod.POS_TYPES + sensor_mod.VEL_TYPES) - {SENS_USER} - \
        set(sensor_mod.GEOM_SENSORS)
    assert want <= set(int(t) for t in mjm.sensor_type)


def test_forward_sensors_match_mujoco(scene):
    mjm, m, d = scene
    state = _state(mjm, NWORLD, 1)
    _put(d, *state)
    _poison(d, mjm)
    tiphys.forward(m, d)
    want, energy = _mujoco(mjm, *state)
    errs = _compare(mjm, d.numpy("sensordata"), want, label="forward")
    assert len(errs) >= 30
    # the e_potential / e_kinetic sensors computed the energy with the energy flag off
    np.testing.assert_allclose(d.numpy("energy"), energy, rtol=1e-10, atol=1e-10)
    assert np.abs(energy).min() > 0


def test_rangefinders_hit_and_miss(scene):
    """On test_forward_sensors_match_mujoco's states (set here too: -k may run this
    test alone)."""
    mjm, m, d = scene
    _put(d, *_state(mjm, NWORLD, 1))
    tiphys.forward(m, d)
    got = d.numpy("sensordata")
    rf = [mjm.sensor_adr[s] for s in range(mjm.nsensor)
          if mjm.sensor_type[s] == mujoco.mjtSensor.mjSENS_RANGEFINDER]
    values = got[:, rf]
    assert (values == -1).any() and (values > 0).any()


def _counted(kernel, name, launches):
    """``kernel``, appending ``name`` to ``launches`` at each launch (functools.wraps
    keeps the kernel's parameters, which kernels/bind.py binds by name)."""
    @functools.wraps(kernel)
    def launch(*args):
        launches.append(name)
        return kernel(*args)
    return launch


def test_sensor_pos_vel_direct(scene, monkeypatch):
    """The stage functions on their own, after forward: one launch for most types, one
    for the limits and rangefinders (plus the energy stages for the e_potential /
    e_kinetic sensors)."""
    mjm, m, d = scene
    state = _state(mjm, NWORLD, 2)
    _put(d, *state)
    tiphys.forward(m, d)
    want, _ = _mujoco(mjm, *state)
    launches = []
    for name in ("_sensor_pos", "_sensor_vel", "_sensor_extra", "_apply_cutoff"):
        monkeypatch.setattr(sensor_mod, name,
                            _counted(getattr(sensor_mod, name), name, launches))
    _poison(d, mjm)
    tiphys.sensor_pos(m, d)
    got = d.numpy("sensordata")
    pos = [s for s in range(mjm.nsensor) if mjm.sensor_needstage[s] == 1]
    for s in pos:
        a, n = mjm.sensor_adr[s], mjm.sensor_dim[s]
        assert not np.isnan(got[:, a:a + n]).any()
    assert launches == ["_sensor_pos", "_sensor_extra"]
    tiphys.sensor_vel(m, d)
    assert launches == ["_sensor_pos", "_sensor_extra", "_sensor_vel", "_sensor_extra"]
    _compare(mjm, d.numpy("sensordata"), want, label="direct")


def test_nan_world_does_not_affect_others(scene):
    mjm, m, d = scene
    qpos, qvel, ctrl, time = _state(mjm, NWORLD, 3)
    bad_qpos, bad_qvel = qpos.copy(), qvel.copy()
    bad_qpos[1] = np.nan
    bad_qvel[2] = np.nan
    _put(d, bad_qpos, bad_qvel, ctrl, time)
    _poison(d, mjm)
    tiphys.forward(m, d)
    want, _ = _mujoco(mjm, qpos, qvel, ctrl, time)
    got = d.numpy("sensordata")
    _compare(mjm, got, want, worlds=[0, 3], label="nan")
    _compare(mjm, got, want, worlds=[2], stages=(1,), label="nan qvel",
             skip=(SENS_E_KINETIC,))  # (its needstage is pos)


def test_skipsensor_leaves_sensordata(scene):
    mjm, m, d = scene
    _put(d, *_state(mjm, NWORLD, 4))
    for fn in (tiphys.forward_skip, tiphys.inverse_skip):
        _poison(d, mjm)
        fn(m, d, 0, True)
        assert np.isnan(d.numpy("sensordata")).all()
    tiphys.forward_skip(m, d, 0, False)
    assert not np.isnan(d.numpy("sensordata")).any()


def test_skipstage_recomputes_only_later_sensors(scene):
    """forward_skip(STAGE_POS) runs sensor_vel (and sensor_acc) but not sensor_pos."""
    mjm, m, d = scene
    state = _state(mjm, NWORLD, 5)
    _put(d, *state)
    tiphys.forward(m, d)
    want, _ = _mujoco(mjm, *state)
    _poison(d, mjm)
    tiphys.forward_skip(m, d, 1, False)
    got = d.numpy("sensordata")
    for s in range(mjm.nsensor):
        a, n = mjm.sensor_adr[s], mjm.sensor_dim[s]
        assert np.isnan(got[:, a:a + n]).all() == (mjm.sensor_needstage[s] == 1)
    _compare(mjm, got, want, stages=(2,), label="skip pos")


def test_step_step1_inverse_sensors_match_mujoco(scene):
    mjm, m, d = scene
    state = _state(mjm, NWORLD, 6)
    for fn, mjfn in ((tiphys.step, mujoco.mj_step), (tiphys.step1, mujoco.mj_step1),
                     (tiphys.inverse, mujoco.mj_inverse)):
        _put(d, *state)
        d.qacc.from_numpy(np.random.default_rng(0).normal(size=(NWORLD, mjm.nv)))
        _poison(d, mjm)
        fn(m, d)
        md = mujoco.MjData(mjm)
        want = []
        for w in range(NWORLD):
            md.qpos[:], md.qvel[:], md.ctrl[:] = state[0][w], state[1][w], state[2][w]
            md.time = state[3][w]
            md.qacc[:] = d.numpy("qacc")[w] if fn is tiphys.inverse else 0
            mjfn(mjm, md)
            want.append(md.sensordata.copy())
        _compare(mjm, d.numpy("sensordata"), np.array(want), label=fn.__name__)


def test_rk4_step_keeps_first_evaluation_sensors():
    """RK4's inner evaluations skip the sensors (sensordata is the state's before the
    step) but recompute the energy with the energy flag on, as mj_RungeKutta."""
    xml = SCENE.replace('timestep=".005"/>',
                        'timestep=".005" integrator="RK4"><flag energy="enable"/></option>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, 2)
    state = _state(mjm, 2, 7)
    _put(d, *state)
    _poison(d, mjm)
    tiphys.step(m, d)
    want, energy = _mujoco(mjm, *state, fn=mujoco.mj_step)
    _compare(mjm, d.numpy("sensordata"), want, label="rk4")
    np.testing.assert_allclose(d.numpy("energy"), energy, rtol=1e-7, atol=1e-7)


def test_energy_zeroed_without_flag_or_sensor():
    xml = "<mujoco><worldbody><body><freejoint/><geom size='.1'/></body></worldbody></mujoco>"
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, 2)
    d.qvel.from_numpy(np.ones((2, 6)))
    d._energy_set = True
    d.energy.from_numpy(np.full((2, 2), 5.0))
    tiphys.forward(m, d)
    assert (d.numpy("energy") == 0).all()


def test_disabled_sensors_write_nothing():
    xml = SCENE.replace('timestep=".005"/>', 'timestep=".005"><flag sensor="disable"/></option>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, 2)
    _poison(d, mjm)
    tiphys.forward(m, d)
    assert np.isnan(d.numpy("sensordata")).all()
    tiphys.sensor_pos(m, d)
    tiphys.sensor_vel(m, d)
    assert np.isnan(d.numpy("sensordata")).all()


CUTOFF = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 .1" pos="0 0 -1"/>
    <site name="rf" pos="0 0 2" euler="180 0 0"/>
    <body name="b1" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom size=".1"/>
      <site name="s1" pos=".2 .1 0"/>
      <body name="b2" pos=".5 0 0">
        <joint name="ball" type="ball"/>
        <geom type="box" size=".1 .2 .05"/>
        <site name="s2" pos="0 0 .1"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <jointpos joint="hinge" cutoff=".2"/>
    <rangefinder site="rf" cutoff="2.5"/>
    <rangefinder site="s2" cutoff=".1"/>
    <framepos objtype="site" objname="s2" cutoff=".3"/>
    <framequat objtype="site" objname="s2"/>
    <framexaxis objtype="site" objname="s2"/>
    <ballquat joint="ball"/>
    <gyro site="s2" cutoff=".4"/>
    <subtreeangmom body="b1" cutoff=".05"/>
    <jointvel joint="hinge" cutoff=".5"/>
    <clock cutoff="3"/>
    <e_kinetic cutoff=".5"/>
    <user needstage="pos" dim="2" cutoff=".7"/>
    <user needstage="vel" dim="3" cutoff="1.5" datatype="positive"/>
    <user needstage="pos" dim="1"/>
  </sensor>
</mujoco>
"""


@pytest.fixture(scope="module")
def cutoff_model():
    mjm = mujoco.MjModel.from_xml_string(CUTOFF)
    m = tiphys.put_model(mjm)
    return mjm, m, tiphys.make_data(m, NWORLD)


def _user_mujoco(m, d, stage):
    # user values from the state, different per stage, beyond the cutoffs
    for s in range(m.nsensor):
        if m.sensor_type[s] == mujoco.mjtSensor.mjSENS_USER and m.sensor_needstage[s] == stage:
            adr, dim = m.sensor_adr[s], m.sensor_dim[s]
            for j in range(dim):
                d.sensordata[adr + j] = 3 * d.qpos[j] + stage + 10 * d.qvel[j] * (stage == 2)


def _user_tiphys(calls):
    def fn(m, d, stage):
        calls.append(stage)
        data = d.sensordata.to_numpy()
        qpos, qvel = d.numpy("qpos"), d.numpy("qvel")
        a = m.arrays
        for s in range(m.nsensor):
            if a.sensor_type[s] == SENS_USER and a.sensor_needstage[s] == stage:
                adr, dim = a.sensor_adr[s], a.sensor_dim[s]
                for j in range(dim):
                    data[:, adr + j] = 3 * qpos[:, j] + stage + 10 * qvel[:, j] * (stage == 2)
        d.sensordata.from_numpy(data)
    return fn


def test_cutoff_and_user_callback_match_mujoco(cutoff_model):
    mjm, m, d = cutoff_model
    state = _state(mjm, NWORLD, 8)
    state[2].shape = (NWORLD, 0)
    calls = []
    previous = tiphys.set_sensor_callback(_user_tiphys(calls))
    mujoco.set_mjcb_sensor(_user_mujoco)
    try:
        _put(d, *state)
        _poison(d, mjm)
        tiphys.forward(m, d)
        want, _ = _mujoco(mjm, *state)
    finally:
        mujoco.set_mjcb_sensor(None)
        tiphys.set_sensor_callback(previous)
    assert calls == [1, 2]
    got = d.numpy("sensordata")
    _compare(mjm, got, want, label="cutoff")
    # the cutoffs did clip (real both sides, positive above only) somewhere
    cut = mjm.sensor_cutoff
    for s in range(mjm.nsensor):
        if cut[s] > 0 and mjm.sensor_datatype[s] in (0, 1):
            a, n = mjm.sensor_adr[s], mjm.sensor_dim[s]
            v = got[:, a:a + n] if mjm.sensor_datatype[s] else np.abs(got[:, a:a + n])
            assert v.max() <= cut[s] + 1e-12
    assert np.isclose(np.abs(got[:, mjm.sensor_adr[0]]), .2).any()


def test_user_sensors_zeroed_without_callback(cutoff_model):
    mjm, m, d = cutoff_model
    state = _state(mjm, NWORLD, 9)
    state[2].shape = (NWORLD, 0)
    _put(d, *state)
    _poison(d, mjm)
    tiphys.forward(m, d)
    want, _ = _mujoco(mjm, *state)
    _compare(mjm, d.numpy("sensordata"), want, label="no callback")
    users = [s for s in range(mjm.nsensor) if mjm.sensor_type[s] == SENS_USER]
    for s in users:
        a, n = mjm.sensor_adr[s], mjm.sensor_dim[s]
        assert (d.numpy("sensordata")[:, a:a + n] == 0).all()


def test_set_sensor_callback_checks_and_returns_previous():
    with pytest.raises(TypeError):
        tiphys.set_sensor_callback(3)
    f = lambda m, d, stage: None  # noqa: E731
    assert tiphys.set_sensor_callback(f) is None
    assert tiphys.set_sensor_callback(None) is f


@pytest.mark.parametrize("stage", [1, 2])
def test_apply_cutoff(cutoff_model, stage):
    """Real data clipped both ways, positive data from above, axis and quaternion data
    (framequat, framexaxis, ballquat) left, per-world cutoffs; other stages untouched."""
    mjm, m, d = cutoff_model
    rng = np.random.default_rng(stage)
    values = rng.normal(scale=4, size=(NWORLD, mjm.nsensordata))
    cutoff = rng.uniform(0, 2, (NWORLD, mjm.nsensor))
    cutoff[0, :3] = 0
    saved = m.sensor_cutoff
    m.sensor_cutoff = tiphys.model._make_array("* nsensor", "f", m.arrays.sizes, nbatch=NWORLD)
    m.sensor_cutoff.from_numpy(cutoff)
    try:
        d.sensordata.from_numpy(values)
        tiphys.apply_cutoff(m, d, stage)
    finally:
        m.sensor_cutoff = saved
    got = d.numpy("sensordata")
    for s in range(mjm.nsensor):
        a, n = mjm.sensor_adr[s], mjm.sensor_dim[s]
        for w in range(NWORLD):
            v, c, dt = values[w, a:a + n], cutoff[w, s], mjm.sensor_datatype[s]
            if mjm.sensor_needstage[s] == stage and c > 0 and dt == 0:
                v = np.clip(v, -c, c)
            elif mjm.sensor_needstage[s] == stage and c > 0 and dt == 1:
                v = np.minimum(v, c)
            np.testing.assert_array_equal(got[w, a:a + n], v)


# ---------------------------------------------------------------- corpus

def _with_sensors(rel):
    """A corpus model plus a sensor on every joint, body, site and tendon."""
    path = os.path.join(corpus_dir(), rel)
    root = etree.fromstring(strip_later_sections(path))
    mjm = mujoco.MjModel.from_xml_string(etree.tostring(root).decode())
    sensor = etree.SubElement(root, "sensor")
    names = lambda kind, n: [mujoco.mj_id2name(mjm, kind, i) for i in range(n)]  # noqa
    for j, name in enumerate(names(mujoco.mjtObj.mjOBJ_JOINT, mjm.njnt)):
        if not name:
            continue
        jt = mjm.jnt_type[j]
        if jt in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            limits = ("jointlimitpos", "jointlimitvel") if mjm.jnt_limited[j] else ()
            for tag in ("jointpos", "jointvel") + limits:
                etree.SubElement(sensor, tag, joint=name)
        elif jt == mujoco.mjtJoint.mjJNT_BALL:
            etree.SubElement(sensor, "ballquat", joint=name)
            etree.SubElement(sensor, "ballangvel", joint=name)
    bodies = [b for b in names(mujoco.mjtObj.mjOBJ_BODY, mjm.nbody)[1:] if b]
    for i, b in enumerate(bodies):
        ref = bodies[(i * 7 + 3) % len(bodies)]
        for tag in ("framepos", "framequat", "framexaxis", "framelinvel", "frameangvel"):
            etree.SubElement(sensor, tag, objtype="body", objname=b)
            etree.SubElement(sensor, tag, objtype="xbody", objname=b, reftype="body",
                             refname=ref)
        for tag in ("subtreecom", "subtreelinvel", "subtreeangmom"):
            etree.SubElement(sensor, tag, body=b)
    for s in [s for s in names(mujoco.mjtObj.mjOBJ_SITE, mjm.nsite) if s]:
        for tag in ("velocimeter", "gyro", "magnetometer", "rangefinder"):
            etree.SubElement(sensor, tag, site=s)
    for t in [t for t in names(mujoco.mjtObj.mjOBJ_TENDON, mjm.ntendon) if t]:
        etree.SubElement(sensor, "tendonpos", tendon=t)
        etree.SubElement(sensor, "tendonvel", tendon=t)
    for a in [a for a in names(mujoco.mjtObj.mjOBJ_ACTUATOR, mjm.nu) if a]:
        etree.SubElement(sensor, "actuatorpos", actuator=a)
        etree.SubElement(sensor, "actuatorvel", actuator=a)
    for tag in ("e_potential", "e_kinetic", "clock"):
        etree.SubElement(sensor, tag)
    return mujoco.MjModel.from_xml_string(etree.tostring(root).decode())


@pytest.mark.parametrize("rel", ["gym/ant.xml", "gym/humanoid.xml", "gym/hopper.xml"])
def test_corpus_models_with_generated_sensors(rel):
    mjm = _with_sensors(rel)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, 3)
    state = _state(mjm, 3, len(rel))
    _put(d, *state)
    _poison(d, mjm)
    tiphys.forward(m, d)
    want, energy = _mujoco(mjm, *state)
    _compare(mjm, d.numpy("sensordata"), want, label=rel)
    np.testing.assert_allclose(d.numpy("energy"), energy, rtol=1e-9, atol=1e-9)


def test_corpus_mjtest_model_pos_vel_sensors():
    path = os.path.join(corpus_dir(), "mjtest", "model.xml")
    mjm = mujoco.MjModel.from_xml_path(path)
    assert set(mjm.sensor_needstage) >= {1, 2}
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, 3)
    state = _state(mjm, 3, 11)
    _put(d, *state)
    _poison(d, mjm)
    tiphys.kinematics(m, d)
    tiphys.forward(m, d)
    want, _ = _mujoco(mjm, *state)
    _compare(mjm, d.numpy("sensordata"), want, label="mjtest")


# ---------------------------------------------------------------- geom distance

GEOMDIST = """
<mujoco>
  <asset>
    <mesh name="tet" vertex="0 0 0  .2 0 0  0 .2 0  0 0 .2"/>
    <hfield name="hf" nrow="4" ncol="5" size=".6 .5 .2 .1"
            elevation="0 .1 .2 .1 0  .1 .3 .4 .2 .1  0 .2 .5 .3 0  .1 .1 .2 .1 0"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" pos="0 0 -1"/>
    <geom name="hfield" type="hfield" hfield="hf" pos="2 2 -.5"/>
    <body name="a" pos="0 0 0">
      <freejoint/>
      <geom name="a_sph" type="sphere" size=".15"/>
      <geom name="a_cap" type="capsule" size=".05 .2" pos=".2 0 0" euler="0 90 0"/>
      <geom name="a_box" type="box" size=".1 .12 .08" pos="0 .25 0"/>
    </body>
    <body name="b" pos=".5 .1 .1">
      <freejoint/>
      <geom name="b_box" type="box" size=".1 .2 .1"/>
      <geom name="b_ell" type="ellipsoid" size=".1 .15 .2" pos="0 0 .3"/>
      <geom name="b_cyl" type="cylinder" size=".1 .1" pos=".2 0 -.2"/>
    </body>
    <body name="c" pos="-.3 .4 -.2">
      <freejoint/>
      <geom name="c_mesh" type="mesh" mesh="tet"/>
      <geom name="c_sph" type="sphere" size=".1" pos="0 0 .3"/>
    </body>
    <body name="h" pos="2 2 0">
      <freejoint/>
      <geom name="h_sph" type="sphere" size=".2"/>
    </body>
  </worldbody>
  <sensor>
    <distance geom1="a_sph" geom2="b_box" cutoff="2"/>
    <normal geom1="a_sph" geom2="b_box" cutoff="2"/>
    <fromto geom1="a_sph" geom2="b_box" cutoff="2"/>
    <distance body1="a" body2="b" cutoff="1"/>
    <normal body1="a" body2="b" cutoff="1"/>
    <fromto body1="b" body2="a" cutoff="1"/>
    <distance body1="a" geom2="c_mesh" cutoff="3"/>
    <fromto geom1="c_mesh" body2="b" cutoff="3"/>
    <distance geom1="b_ell" geom2="floor" cutoff="5"/>
    <normal geom1="floor" geom2="c_mesh" cutoff="5"/>
    <distance geom1="b_cyl" geom2="a_cap" cutoff=".05"/>
    <distance geom1="a_box" geom2="b_box" cutoff=".3"/>
    <distance geom1="b_ell" geom2="b_cyl" cutoff="1"/>
    <distance geom1="floor" geom2="a_sph" cutoff=".01"/>
    <distance body1="h" body2="world" cutoff="1"/>
    <fromto body1="world" body2="h" cutoff="1"/>
    <distance body1="h" body2="world" cutoff=".5"/>
  </sensor>
</mujoco>
"""


def test_geom_distance_sensors_match_mujoco(monkeypatch):
    """Every detector kind (analytic, native ccd incl. a mesh, plane-convex, heightfield
    through a body), body and geom operands, sensors sharing a signature, clipping of a
    penetration below -cutoff. Launches: one for all non-heightfield pairs, two per
    heightfield pair, one for the sensors."""
    launches = []
    for name in ("_sensor_pos", "_sensor_extra", "_geom_pairs", "_copy_pair"):
        monkeypatch.setattr(sensor_mod, name,
                            _counted(getattr(sensor_mod, name), name, launches))
    mjm = mujoco.MjModel.from_xml_string(GEOMDIST)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, NWORLD)
    state = _geomdist_state(mjm, NWORLD)
    _put(d, *state)
    _poison(d, mjm)
    tiphys.forward(m, d)
    want, _ = _mujoco(mjm, *state)
    got = d.numpy("sensordata")
    _compare(mjm, got, want, label="geomdist")
    dists = want[:, [mjm.sensor_adr[s] for s in range(mjm.nsensor)
                     if mjm.sensor_type[s] == mujoco.mjtSensor.mjSENS_GEOMDIST]]
    assert (dists < 0).any() and (dists > 0).any()
    assert (dists == -.5).any()  # clipped by the cutoff
    hfield_pairs = 3  # the sensors between body h and the world
    assert sorted(launches) == sorted(["_geom_pairs", "_sensor_extra"] +
                                      ["_copy_pair"] * hfield_pairs)


ACC = """
<mujoco>
  <option integrator="implicitfast"><flag invdiscrete="enable"/></option>
  <worldbody>
    <body name="b1" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping=".3"/>
      <geom size=".1"/>
      <body name="b2" pos=".5 0 0">
        <joint name="ball" type="ball"/>
        <geom type="box" size=".1 .2 .05"/>
        <site name="s2" pos="0 0 .1"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="hinge"/></actuator>
  <sensor>
    <jointpos joint="hinge"/>
    <gyro site="s2"/>
    <accelerometer site="s2"/>
    <framelinacc objtype="site" objname="s2"/>
    <jointactuatorfrc joint="hinge"/>
  </sensor>
</mujoco>
"""


def test_inverse_invdiscrete_and_step2_acc_sensors():
    """sensor_acc runs where MuJoCo runs it: in inverse after the constraint forces, on
    the continuous-time qacc with invdiscrete (qacc itself left as given); in step2
    after the solver."""
    mjm = mujoco.MjModel.from_xml_string(ACC)
    m = tiphys.put_model(mjm)
    d = tiphys.make_data(m, 3)
    state = _state(mjm, 3, 13)
    qacc = np.random.default_rng(1).normal(size=(3, mjm.nv))
    _put(d, *state)
    d.qacc.from_numpy(qacc)
    _poison(d, mjm)
    tiphys.inverse(m, d)
    np.testing.assert_array_equal(d.numpy("qacc"), qacc)
    md = mujoco.MjData(mjm)
    want = []
    for w in range(3):
        md.qpos[:], md.qvel[:], md.ctrl[:] = state[0][w], state[1][w], state[2][w]
        md.time, md.qacc[:] = state[3][w], qacc[w]
        mujoco.mj_inverse(mjm, md)
        want.append(md.sensordata.copy())
    _compare(mjm, d.numpy("sensordata"), np.array(want), stages=(1, 2, 3), label="inverse")
    _put(d, *state)
    _poison(d, mjm)
    tiphys.step1(m, d)
    tiphys.step2(m, d)
    want, _ = _mujoco(mjm, *state, fn=lambda mm, dd: (mujoco.mj_step1(mm, dd),
                                                      mujoco.mj_step2(mm, dd)))
    _compare(mjm, d.numpy("sensordata"), want, stages=(1, 2, 3), label="step2")


def _geomdist_state(mjm, nworld):
    rng = np.random.default_rng(12)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    qpos += rng.uniform(-.15, .15, qpos.shape)  # some geoms overlap, some apart
    return qpos, np.zeros((nworld, mjm.nv)), np.zeros((nworld, 0)), np.zeros(nworld)


# ---------------------------------------------------------------- f32 (a subprocess)

def test_f32_matches_mujoco_to_single_precision():
    res = subproc.run([os.path.abspath(__file__), "f32"], key="cpu-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(worst) >= 33
    for name, err in worst.items():
        assert err < F32_TOL, f"{name}: relative error {err}"


def _f32_main():
    """SCENE and GEOMDIST in f32; prints JSON: the largest error per sensor type,
    relative to max(1, |value|)."""
    tiphys.init(arch="cpu", precision="f32")
    worst = {}
    for xml in (SCENE, GEOMDIST):
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = tiphys.put_model(mjm)
        d = tiphys.make_data(m, NWORLD)
        state = _state(mjm, NWORLD, 1) if xml is SCENE else _geomdist_state(mjm, NWORLD)
        _put(d, *state)
        _poison(d, mjm)
        tiphys.forward(m, d)
        want, _ = _mujoco(mjm, *state)
        got = d.numpy("sensordata")
        for s in range(mjm.nsensor):
            adr, dim = mjm.sensor_adr[s], mjm.sensor_dim[s]
            name = mujoco.mjtSensor(mjm.sensor_type[s]).name[7:].lower()
            e = want[:, adr:adr + dim]
            err = np.abs(got[:, adr:adr + dim] - e) / np.maximum(1, np.abs(e))
            err = float(err.max()) if np.isfinite(err).all() else float("inf")
            worst[name] = max(worst.get(name, 0.0), err)
    print(json.dumps(worst))


if __name__ == "__main__" and sys.argv[1:] == ["f32"]:
    _f32_main()
