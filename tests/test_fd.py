"""Finite-difference and quaternion derivatives (tiphys.derivative) against MuJoCo 3.4.0:
mjd_transitionFD, mjd_inverseFD, mjd_subQuat, mjd_quatIntegrate.

Models: the corpus gym humanoid (integrator switched to Euler, as mjd_transitionFD
refuses RK4; PGS, contacts, 17 motors with ctrl limits) and ARM below (free root,
ball and hinge and slide joints so nq != nv, a filter actuator so na > 0, unlimited
and limited controls, implicitfast, Newton (both engines take the same solver
iterates, island by island), contacts). Several worlds with random states, each
with some controls exactly at their limits (the clamped nudges), random warmstarts
(every nudged step must start from the input's warmstart, as MuJoCo's). A finite
difference amplifies the engines' round-off difference by 1/eps, so Jacobians are
compared to 1e-6 of each matrix's largest entry (observed ~1e-9). The sensor
Jacobians (C, D, DsD*) are compared on ARM with jointpos / jointvel / actuatorfrc
sensors whose values a wrapped step / inverse writes (tiphys computes no sensors
yet), which tests the finite differences' handling of d.sensordata.

Run as a script (``python tests/test_fd.py f32``) it prints the f32 errors.
"""
import os
import sys

import mujoco
import numpy as np
import pytest
from lxml import etree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiphys  # noqa: E402
from oracle import corpus_dir, load_pair_from_xml  # noqa: E402
from tiphys import derivative as tder  # noqa: E402

NWORLD = 3
EPS = 1e-6
TOL = 1e-6

ARM = """
<mujoco>
  <option timestep="0.01" integrator="implicitfast" solver="Newton" cone="elliptic"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body name="torso" pos="0 0 .12">
      <freejoint/>
      <geom type="box" size=".2 .1 .05"/>
      <body pos=".25 0 0">
        <joint name="ball" type="ball" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <body pos=".3 0 0">
          <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" damping=".2"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".04"/>
        </body>
      </body>
      <body pos="-.25 0 0">
        <joint name="slide" type="slide" axis="1 0 0" range="-.1 .1"/>
        <geom type="sphere" size=".06"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" ctrlrange="-1 1" ctrllimited="true"/>
    <position joint="slide" kp="20" ctrlrange="-.1 .1" ctrllimited="true"/>
    <general joint="hinge" dyntype="filter" dynprm=".05" gainprm="2" ctrlrange="-1 1"
             ctrllimited="true"/>
    <motor joint="ball" gear="0 1 0 0 0 0" ctrllimited="false"/>
  </actuator>
</mujoco>
"""

_MODELS = {}


def _load(name):
    """(tiphys Model, MjModel) of 'humanoid' or 'arm', compiled once per module."""
    if name not in _MODELS:
        if name == "arm":
            _MODELS[name] = (tiphys.load_model_from_string(ARM),
                             mujoco.MjModel.from_xml_string(ARM))
        else:
            path = os.path.join(corpus_dir(), "gym/humanoid.xml")
            root = etree.parse(path).getroot()
            root.find("option").set("integrator", "Euler")
            _MODELS[name] = load_pair_from_xml(path, etree.tostring(root), "fd")
    return _MODELS[name]


def _states(mjm, seed, nworld=NWORLD):
    """Per-world qpos (joints moved, the root low enough for contacts in some worlds),
    qvel, act, ctrl (world w > 0: some controls exactly at their range limits) and a
    warmstart from a short MuJoCo rollout."""
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("qpos", "qvel", "act", "ctrl", "qacc_warmstart", "qacc")}
    for w in range(nworld):
        md = mujoco.MjData(mjm)
        md.qpos[:] = mjm.qpos0
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                md.qpos[adr + 2] += rng.uniform(-0.1, 0.1)
            elif mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
                q = np.array([1.0, *rng.normal(0, 0.3, 3)])
                md.qpos[adr:adr + 4] = q / np.linalg.norm(q)
            else:
                md.qpos[adr] += rng.uniform(-0.3, 0.3)
        md.qvel[:] = rng.normal(0, 0.5, mjm.nv)
        md.act[:] = rng.uniform(-0.5, 0.5, mjm.na)
        lo, hi = mjm.actuator_ctrlrange[:, 0], mjm.actuator_ctrlrange[:, 1]
        limited = mjm.actuator_ctrllimited.astype(bool)
        md.ctrl[:] = np.where(limited, rng.uniform(lo, hi), rng.normal(size=mjm.nu))
        for _ in range(3):  # a warmstart of the solver's own making
            mujoco.mj_step(mjm, md)
        if w > 0:  # controls at both ends of their ranges
            k = np.nonzero(limited)[0]
            md.ctrl[k[::3]] = hi[k[::3]]
            md.ctrl[k[1::3]] = lo[k[1::3]]
        md.qacc[:] = rng.normal(0, 2, mjm.nv)
        for key in out:
            out[key].append(getattr(md, key).copy())
    return {k: np.array(v) for k, v in out.items()}


def _data(m, mjm, s):
    d = tiphys.make_data(m, len(s["qpos"]))
    for key in s:
        if s[key].size:
            getattr(d, key).from_numpy(s[key])
    return d


def _mj_data(mjm, s, w):
    md = mujoco.MjData(mjm)
    for key in s:
        getattr(md, key)[:] = s[key][w]
    return md


def _assert_close(name, ours, want, tol=TOL):
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    err = float(np.abs(ours - want).max(initial=0)) / scale
    assert err <= tol, f"{name}: relative error {err:.3g} (scale {scale:.3g})"
    return err


@pytest.mark.parametrize("name", ["humanoid", "arm"])
@pytest.mark.parametrize("centered", [False, True], ids=["forward", "centered"])
def test_transition_fd_matches_mjd_transition_fd(name, centered):
    m, mjm = _load(name)
    s = _states(mjm, seed=11 + centered)
    d = _data(m, mjm, s)
    before = {k: d.numpy(k).copy() for k in s}
    out = tder.transition_fd(m, d, EPS, centered)
    ndx = 2 * mjm.nv + mjm.na
    assert out.A.shape == (NWORLD, ndx, ndx) and out.B.shape == (NWORLD, ndx, mjm.nu)
    assert out.C.shape == (NWORLD, 0, ndx) and out.D.shape == (NWORLD, 0, mjm.nu)
    for w in range(NWORLD):
        md = _mj_data(mjm, s, w)
        A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
        mujoco.mjd_transitionFD(mjm, md, EPS, centered, A, B, None, None)
        _assert_close(f"{name} A world {w}", out.A[w], A)
        _assert_close(f"{name} B world {w}", out.B[w], B)
        assert np.abs(B).max() > 0 and np.abs(A).max() > 0
    for k, v in before.items():  # d is read, not written
        np.testing.assert_array_equal(d.numpy(k), v, err_msg=k)


def test_transition_fd_clamped_controls():
    """Controls at a range limit are nudged inward: a column of B equals MuJoCo's
    one-sided difference, and centered B equals forward B to FD accuracy there."""
    m, mjm = _load("arm")
    s = _states(mjm, seed=3)
    hi = mjm.actuator_ctrlrange[:, 1]
    assert s["ctrl"][1, 0] == hi[0]  # at the upper limit in world 1
    d = _data(m, mjm, s)
    fwd = tder.transition_fd(m, d, EPS, False, outputs="B").B
    cen = tder.transition_fd(m, d, EPS, True, outputs="B").B
    col = fwd[1][:, 0]
    assert np.abs(col).max() > 0
    np.testing.assert_allclose(cen[1][:, 0], col, atol=1e-4 * np.abs(col).max())


def test_transition_fd_outputs_and_batches():
    """Only the requested matrices; batching the columns in small groups of worlds
    (max_worlds) gives bit-identical results."""
    m, mjm = _load("arm")
    s = _states(mjm, seed=5)
    d = _data(m, mjm, s)
    full = tder.transition_fd(m, d, EPS, True)
    part = tder.transition_fd(m, d, EPS, True, outputs="A", max_worlds=2 * NWORLD + 1)
    assert part.B is None and part.C is None and part.D is None
    np.testing.assert_array_equal(part.A, full.A)
    b = tder.transition_fd(m, d, EPS, True, outputs="B", max_worlds=1)
    assert b.A is None
    np.testing.assert_array_equal(b.B, full.B)


def test_transition_fd_per_world_parameters():
    """A per-world parameter stays with its world in every nudged copy."""
    m = tiphys.load_model_from_string(ARM)
    mjm = mujoco.MjModel.from_xml_string(ARM)
    s = _states(mjm, seed=9, nworld=2)
    damping = np.stack([mjm.dof_damping, 5.0 * mjm.dof_damping + 0.3])
    tiphys.set_param(m, "dof_damping", damping)
    d = _data(m, mjm, s)
    out = tder.transition_fd(m, d, EPS, False, outputs="AB")
    ndx = 2 * mjm.nv + mjm.na
    for w in range(2):
        mjm.dof_damping[:] = damping[w]
        A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
        mujoco.mjd_transitionFD(mjm, _mj_data(mjm, s, w), EPS, 0, A, B, None, None)
        _assert_close(f"A world {w}", out.A[w], A)
        _assert_close(f"B world {w}", out.B[w], B)


@pytest.mark.parametrize("name", ["humanoid", "arm"])
@pytest.mark.parametrize("flg_actuation", [0, 1])
def test_inverse_fd_matches_mjd_inverse_fd(name, flg_actuation):
    m, mjm = _load(name)
    s = _states(mjm, seed=21 + flg_actuation)
    d = _data(m, mjm, s)
    before = {k: d.numpy(k).copy() for k in s}
    out = tder.inverse_fd(m, d, EPS, bool(flg_actuation))
    nv, nM = mjm.nv, mjm.nM
    assert out.DsDq.shape == (NWORLD, nv, 0)
    for w in range(NWORLD):
        md = _mj_data(mjm, s, w)
        want = {k: np.zeros((nv, nv)) for k in ("DfDq", "DfDv", "DfDa")}
        want["DmDq"] = np.zeros((nv, nM))
        mujoco.mjd_inverseFD(mjm, md, EPS, flg_actuation, want["DfDq"], want["DfDv"],
                             want["DfDa"], None, None, None, want["DmDq"])
        for k, v in want.items():
            _assert_close(f"{name} {k} world {w}", getattr(out, k)[w], v)
            assert np.abs(v).max() > 0, k
    for k, v in before.items():
        np.testing.assert_array_equal(d.numpy(k), v, err_msg=k)
    few = tder.inverse_fd(m, d, EPS, bool(flg_actuation), outputs=("DfDv",), max_worlds=5)
    assert few.DfDq is None and few.DmDq is None
    np.testing.assert_array_equal(few.DfDv, out.DfDv)


def test_flg_actuation_subtracts_actuator_forces():
    """ARM's position actuator depends on the slide's position: flg_actuation changes
    DfDq by d qfrc_actuator / d qpos (compared above with MuJoCo); here, that the
    change is there."""
    m, mjm = _load("arm")
    s = _states(mjm, seed=23)
    d = _data(m, mjm, s)
    plain = tder.inverse_fd(m, d, EPS, False, outputs=("DfDq",)).DfDq
    act = tder.inverse_fd(m, d, EPS, True, outputs=("DfDq",)).DfDq
    assert np.abs(plain - act).max() > 1.0


SENSORS = """
  <sensor>
    <jointpos joint="hinge"/>
    <jointvel joint="slide"/>
    <actuatorfrc actuator="a0"/>
  </sensor>
</mujoco>"""


def _sensor_pair(actuatorfrc=True):
    """ARM with sensors, as MuJoCo compiles it and as put_model makes it for tiphys,
    and a function writing MuJoCo's values of those sensors into a tiphys Data."""
    xml = ARM.replace('<motor joint="hinge"', '<motor name="a0" joint="hinge"')
    sensors = SENSORS if actuatorfrc else SENSORS.replace(
        '    <actuatorfrc actuator="a0"/>\n', "")
    mjm = mujoco.MjModel.from_xml_string(xml.replace("</mujoco>", sensors))
    m = tiphys.put_model(mjm)
    hinge = mjm.jnt_qposadr[mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "hinge")]
    slide = mjm.jnt_dofadr[mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "slide")]

    def sense(fn):
        """fn (step or inverse) followed by the sensors of its input state (as MuJoCo's
        forward computes them before integrating), read back on the host."""
        def run(m, de):
            qpos, qvel = de.numpy("qpos").copy(), de.numpy("qvel").copy()
            fn(m, de)
            values = [qpos[:, hinge], qvel[:, slide]]
            if actuatorfrc:
                values.append(de.numpy("actuator_force")[:, 0])
            de.sensordata.from_numpy(np.stack(values, axis=1))
        return run
    return m, mjm, sense


def test_transition_fd_sensor_derivatives(monkeypatch):
    """C and D from d.sensordata, against MuJoCo's with jointpos, jointvel and
    actuatorfrc sensors. tiphys computes no sensors yet (another issue): step is wrapped to
    write those sensors' values, so that what is tested is transition_fd's part. In
    centered mode MuJoCo 3.4.0's D has the wrong sign (clampedDiff divides x- - x+);
    tiphys's D is the derivative in both modes."""
    m, mjm, sense = _sensor_pair()
    forward_module = sys.modules["tiphys.forward"]
    monkeypatch.setattr(forward_module, "step", sense(forward_module.step))
    s = _states(mjm, seed=41)
    d = _data(m, mjm, s)
    ndx, ns = 2 * mjm.nv + mjm.na, mjm.nsensordata
    for centered in (0, 1):
        out = tder.transition_fd(m, d, EPS, bool(centered))
        for w in range(NWORLD):
            A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
            C, D = np.zeros((ns, ndx)), np.zeros((ns, mjm.nu))
            mujoco.mjd_transitionFD(mjm, _mj_data(mjm, s, w), EPS, centered, A, B, C, D)
            if centered:  # MuJoCo's sign slip, only where both nudges were taken
                lo, hi = mjm.actuator_ctrlrange.T
                ctrl = s["ctrl"][w]
                both = (~mjm.actuator_ctrllimited.astype(bool)) | (
                    (ctrl - EPS >= lo) & (ctrl + EPS <= hi))
                D[:, both] *= -1
            _assert_close(f"A world {w}", out.A[w], A)
            _assert_close(f"C world {w}", out.C[w], C)
            _assert_close(f"D world {w}", out.D[w], D)
            assert np.abs(C).max() > 0 and np.abs(D).max() > 0


def test_inverse_fd_sensor_derivatives(monkeypatch):
    """DsDq, DsDv, DsDa from d.sensordata, against MuJoCo's (sensors written by a
    wrapped inverse, as above)."""
    m, mjm, sense = _sensor_pair(actuatorfrc=False)
    forward_module = sys.modules["tiphys.forward"]
    monkeypatch.setattr(forward_module, "inverse", sense(forward_module.inverse))
    s = _states(mjm, seed=43)
    d = _data(m, mjm, s)
    nv, ns = mjm.nv, mjm.nsensordata
    out = tder.inverse_fd(m, d, EPS)
    for w in range(NWORLD):
        want = {k: np.zeros((nv, ns)) for k in ("DsDq", "DsDv", "DsDa")}
        mujoco.mjd_inverseFD(mjm, _mj_data(mjm, s, w), EPS, 0, None, None, None,
                             want["DsDq"], want["DsDv"], want["DsDa"], None)
        for k, v in want.items():
            _assert_close(f"{k} world {w}", getattr(out, k)[w], v)
        assert np.abs(want["DsDq"]).max() > 0 and np.abs(want["DsDv"]).max() > 0


def test_sub_quat_deriv_matches_mjd_sub_quat():
    rng = np.random.default_rng(31)
    n = 64
    qa = rng.normal(size=(n, 4))
    qa /= np.linalg.norm(qa, axis=1, keepdims=True)
    qb = rng.normal(size=(n, 4))
    qb /= np.linalg.norm(qb, axis=1, keepdims=True)
    qb[:4] = qa[:4]  # zero rotation: the small-angle branch
    qb[4:8] = qa[4:8] + rng.normal(scale=1e-9, size=(4, 4))
    da, db = tder.sub_quat_deriv(qa, qb)
    for i in range(n):
        a, b = np.zeros((3, 3)), np.zeros((3, 3))
        mujoco.mjd_subQuat(qa[i], qb[i], a, b)
        np.testing.assert_allclose(da[i], a, rtol=0, atol=1e-12)
        np.testing.assert_allclose(db[i], b, rtol=0, atol=1e-12)
    one = tder.sub_quat_deriv(qa[9], qb[9])
    assert one[0].shape == (3, 3)
    np.testing.assert_array_equal(one[0], da[9])


def test_quat_integrate_deriv_matches_mjd_quat_integrate():
    rng = np.random.default_rng(32)
    n = 64
    vel = rng.normal(size=(n, 3))
    vel[:8] *= 1e-3  # |scale vel| <= 1/32: the Taylor branch
    vel[8] = 0
    scale = rng.uniform(-2, 2, n)
    dq, dv, ds = tder.quat_integrate_deriv(vel, scale)
    for i in range(n):
        a, b, c = np.zeros(9), np.zeros(9), np.zeros(3)
        mujoco.mjd_quatIntegrate(vel[i], scale[i], a, b, c)
        np.testing.assert_allclose(dq[i], a.reshape(3, 3), rtol=0, atol=1e-12)
        np.testing.assert_allclose(dv[i], b.reshape(3, 3), rtol=0, atol=1e-12)
        np.testing.assert_allclose(ds[i], c, rtol=0, atol=1e-12)
    one = tder.quat_integrate_deriv(vel[20], float(scale[20]))
    assert one[0].shape == (3, 3) and one[2].shape == (3,)
    np.testing.assert_array_equal(one[1], dv[20])
    shared = tder.quat_integrate_deriv(vel[:5], 0.7)[1]  # one scale for every vel
    for i in range(5):
        b = np.zeros(9)
        mujoco.mjd_quatIntegrate(vel[i], 0.7, np.zeros(9), b, np.zeros(3))
        np.testing.assert_allclose(shared[i], b.reshape(3, 3), rtol=0, atol=1e-12)


def test_derivatives_reject_bad_input():
    m, mjm = _load("arm")
    d = tiphys.make_data(m, 1)
    for bad in (0.0, -1e-6, np.nan):
        with pytest.raises(ValueError, match="eps"):
            tder.transition_fd(m, d, bad)
        with pytest.raises(ValueError, match="eps"):
            tder.inverse_fd(m, d, bad)
    with pytest.raises(ValueError, match="outputs"):
        tder.transition_fd(m, d, outputs="AX")
    with pytest.raises(ValueError, match="outputs"):
        tder.inverse_fd(m, d, outputs=("DfDx",))
    with pytest.raises(ValueError, match="max_worlds"):
        tder.transition_fd(m, d, max_worlds=0)
    rk4 = tiphys.load_model_from_string(ARM.replace("implicitfast", "RK4"))
    with pytest.raises(ValueError, match="RK4"):
        tder.transition_fd(rk4, tiphys.make_data(rk4, 1))
    with pytest.raises(ValueError, match="RK4"):
        tder.inverse_fd(rk4, tiphys.make_data(rk4, 1))
    noslip = tiphys.load_model_from_string(ARM.replace('cone="elliptic"',
                                                       'cone="elliptic" noslip_iterations="2"'))
    with pytest.raises(ValueError, match="noslip"):
        tder.inverse_fd(noslip, tiphys.make_data(noslip, 1))
    with pytest.raises(ValueError, match="shape"):
        tder.sub_quat_deriv(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="qa against"):
        tder.sub_quat_deriv(np.zeros((3, 4)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="shape"):
        tder.quat_integrate_deriv(np.zeros(4), 1.0)
    with pytest.raises(ValueError, match="finite"):
        tder.quat_integrate_deriv([np.inf, 0, 0], 1.0)


def _f32_report():
    for name in ("humanoid", "arm"):
        m, mjm = _load(name)
        s = _states(mjm, seed=11)
        d = _data(m, mjm, s)
        for eps in (1e-6, 1e-3):
            out = tder.transition_fd(m, d, eps, True, outputs="AB")
            ndx = 2 * mjm.nv + mjm.na
            worst = 0.0
            for w in range(NWORLD):
                A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
                mujoco.mjd_transitionFD(mjm, _mj_data(mjm, s, w), eps, 1, A, B, None, None)
                for ours, want in ((out.A[w], A), (out.B[w], B)):
                    worst = max(worst, np.abs(ours - want).max() / np.abs(want).max())
            print(f"{name}: f32 transition_fd eps {eps:g}: worst error relative to the "
                  f"matrix scale {worst:.2e}")


if __name__ == "__main__":
    tiphys.init(arch="cpu", precision=sys.argv[1] if len(sys.argv) > 1 else "f32")
    _f32_report()
