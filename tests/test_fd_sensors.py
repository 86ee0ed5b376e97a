"""Sensor Jacobians of transition_fd (C, D) against mjd_transitionFD and of inverse_fd
(DsDq, DsDv, DsDa) against mjd_inverseFD, with the pipeline's own sensors (sensor_pos,
sensor_vel and sensor_acc run inside step and inverse).

The model: a free torso resting on a plane with a ball/hinge arm and a slide, Newton
(both engines take the same solver iterates, island by island, so the finite
differences of constraint-dependent sensors agree), implicitfast; sensors of every
stage, most of them acceleration-stage ones that read the solver's output (touch,
accelerometer, force, torque, frame accelerations, actuator and limit forces, a
contact sensor's force). Several worlds with random states and controls, forward and
centered differences; Jacobians compared to TOL of each matrix's largest entry (a
finite difference amplifies the engines' round-off by 1/eps). MuJoCo 3.4.0's centered
D has the opposite sign (its clampedDiff divides s- - s+); tiphys's does not, so the
centered comparison flips MuJoCo's D.
"""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys import derivative as tder

NWORLD = 3
EPS = 1e-6
TOL = 1e-6

MODEL = """
<mujoco>
  <option timestep="0.01" integrator="implicitfast" solver="Newton" cone="elliptic"
          tolerance="1e-12" iterations="100"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body name="torso" pos="0 0 .045">
      <freejoint/>
      <geom name="torso" type="box" size=".2 .1 .05"/>
      <site name="imu" pos=".05 .02 .03" euler="10 20 30"/>
      <site name="sole" type="box" size=".21 .11 .02" pos="0 0 -.04"/>
      <body name="upper" pos=".25 0 0">
        <joint name="ball" type="ball" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" contype="0" conaffinity="0"/>
        <site name="shoulder" pos=".05 0 0"/>
        <body name="lower" pos=".3 0 0">
          <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" damping=".2"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".04" contype="0"
                conaffinity="0"/>
          <site name="elbow" pos="0 0 -.1" euler="0 30 0"/>
        </body>
      </body>
      <body pos="-.25 0 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-.1 .1"/>
        <geom type="sphere" size=".06" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="a0" joint="hinge" ctrlrange="-1 1" ctrllimited="true"/>
    <position joint="slide" kp="20" ctrlrange="-.1 .1" ctrllimited="true"/>
    <motor joint="ball" gear="0 1 0 0 0 0"/>
  </actuator>
  <sensor>
    <jointpos joint="hinge"/>
    <jointvel joint="slide"/>
    <framepos objtype="site" objname="elbow"/>
    <gyro site="imu"/>
    <accelerometer site="imu"/>
    <force site="shoulder"/>
    <torque site="shoulder"/>
    <force site="elbow"/>
    <torque site="elbow"/>
    <framelinacc objtype="body" objname="lower"/>
    <frameangacc objtype="xbody" objname="upper"/>
    <actuatorfrc actuator="a0"/>
    <jointactuatorfrc joint="slide"/>
    <jointlimitfrc joint="slide"/>
    <touch site="sole"/>
    <contact geom1="torso" data="force" reduce="netforce"/>
  </sensor>
</mujoco>
"""

_MODELS = {}


def _load():
    if "m" not in _MODELS:
        mjm = mujoco.MjModel.from_xml_string(MODEL)
        _MODELS["m"] = (tiphys.put_model(mjm), mjm)
    return _MODELS["m"]


def _states(mjm, seed):
    """Resting on the floor (free root lowered slightly), joints and velocities random,
    controls inside their ranges, a warmstart from short MuJoCo rollouts."""
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("qpos", "qvel", "ctrl", "qacc_warmstart")}
    for _ in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qpos[:] = mjm.qpos0
        md.qpos[2] -= 0.002
        for j in range(1, mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
                q = np.array([1.0, *rng.normal(0, 0.2, 3)])
                md.qpos[adr:adr + 4] = q / np.linalg.norm(q)
            else:
                md.qpos[adr] += rng.uniform(-0.12, 0.12)
        md.qvel[:] = rng.normal(0, 0.2, mjm.nv)
        md.qvel[:6] *= 0.1
        lo, hi = mjm.actuator_ctrlrange[:, 0], mjm.actuator_ctrlrange[:, 1]
        md.ctrl[:] = np.where(mjm.actuator_ctrllimited.astype(bool),
                              rng.uniform(lo, hi) * 0.8, rng.normal(size=mjm.nu))
        for _ in range(2):
            mujoco.mj_step(mjm, md)
        for key, values in out.items():
            values.append(getattr(md, key).copy())
    return {k: np.array(v) for k, v in out.items()}


def _close(name, ours, want, tol=TOL):
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    err = float(np.abs(ours - want).max(initial=0)) / scale
    assert err <= tol, f"{name}: relative error {err:.3g} (scale {scale:.3g})"
    return err


@pytest.mark.parametrize("centered", [False, True], ids=["forward", "centered"])
def test_sensor_jacobians_match_mjd_transition_fd(centered):
    m, mjm = _load()
    s = _states(mjm, seed=3 + centered)
    d = tiphys.make_data(m, NWORLD)
    for key, value in s.items():
        getattr(d, key).from_numpy(value)
    out = tder.transition_fd(m, d, EPS, centered)
    ndx, ns = 2 * mjm.nv + mjm.na, mjm.nsensordata
    assert out.C.shape == (NWORLD, ns, ndx) and out.D.shape == (NWORLD, ns, mjm.nu)
    worst = 0.0
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        for key, value in s.items():
            getattr(md, key)[:] = value[w]
        mujoco.mj_forward(mjm, md)
        assert md.ncon > 0 and md.sensordata[mjm.sensor_adr[-2]] > 0  # touching
        A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
        C, D = np.zeros((ns, ndx)), np.zeros((ns, mjm.nu))
        mujoco.mjd_transitionFD(mjm, md, EPS, centered, A, B, C, D)
        if centered:
            # MuJoCo 3.4.0's centered sensor-control difference (clampedDiff) is
            # (s- - s+) / 2 eps; tiphys returns (s+ - s-) / 2 eps (kernels/fd.py). No
            # control here sits at a range limit, so every column is centered.
            D = -D
        worst = max(worst, _close(f"A world {w}", out.A[w], A),
                    _close(f"B world {w}", out.B[w], B))
        for i in range(mjm.nsensor):  # row block by row block, to name the sensor
            rows = slice(mjm.sensor_adr[i], mjm.sensor_adr[i] + mjm.sensor_dim[i])
            name = mujoco.mjtSensor(mjm.sensor_type[i]).name
            for label, ours, want, full in (("C", out.C[w][rows], C[rows], C),
                                            ("D", out.D[w][rows], D[rows], D)):
                scale = max(1.0, float(np.abs(full).max()))
                err = float(np.abs(ours - want).max(initial=0)) / scale
                assert err <= TOL, f"{label} {name} world {w}: relative error {err:.3g}"
                worst = max(worst, err)
        assert np.abs(C).max() > 0 and np.abs(D).max() > 0
    print("centered" if centered else "forward", worst)


@pytest.mark.parametrize("flg_actuation", [0, 1])
def test_inverse_sensor_jacobians_match_mjd_inverse_fd(flg_actuation):
    """DsDq, DsDv, DsDa of inverse_fd (sensors computed by inverse, sensor_acc after
    the constraint forces of qacc) against mjd_inverseFD. With flg_actuation, MuJoCo's
    actuatorfrc / jointactuatorfrc rows are left out: mj_inverse does not compute
    actuator forces, so those sensors read whatever the previous evaluation's
    mj_fwdActuation left (the nominal point reads the input's, every nudge the
    nominal's: differences of ~force / eps); tiphys evaluates every column from the
    input's Data (a derivative of 0)."""
    m, mjm = _load()
    s = _states(mjm, seed=7 + flg_actuation)
    rng = np.random.default_rng(flg_actuation)
    s["qacc"] = rng.normal(0, 1, (NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    for key, value in s.items():
        getattr(d, key).from_numpy(value)
    out = tder.inverse_fd(m, d, EPS, bool(flg_actuation))
    nv, ns = mjm.nv, mjm.nsensordata
    worst = 0.0
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        for key, value in s.items():
            getattr(md, key)[:] = value[w]
        want = {k: np.zeros((nv, ns)) for k in ("DsDq", "DsDv", "DsDa")}
        mujoco.mjd_inverseFD(mjm, md, EPS, flg_actuation, None, None, None,
                             want["DsDq"], want["DsDv"], want["DsDa"], None)
        keep = np.ones(ns, dtype=bool)
        if flg_actuation:
            for i in range(mjm.nsensor):
                if mjm.sensor_type[i] in (mujoco.mjtSensor.mjSENS_ACTUATORFRC,
                                          mujoco.mjtSensor.mjSENS_JOINTACTFRC):
                    keep[mjm.sensor_adr[i]:mjm.sensor_adr[i] + mjm.sensor_dim[i]] = False
        for key, value in want.items():
            assert np.abs(value).max() > 0, key
            worst = max(worst, _close(f"{key} world {w}", getattr(out, key)[w][:, keep],
                                      value[:, keep]))
    print("inverse", flg_actuation, worst)
