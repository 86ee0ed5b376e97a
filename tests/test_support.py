"""Support functions (jac_dot, jac_point_axis, angmom_mat, object_velocity,
object_acceleration, local2global, differentiate_pos, integrate_pos, normalize_quat,
get/set_total_mass, mul_jac_vec, mul_jac_t_vec, forward_skip, inverse_skip,
check_pos/vel/acc, print_model, print_data) against MuJoCo's function of the same
name, on several worlds at different random states."""
import io

import mujoco
import numpy as np
import pytest

import subproc
import tiphys
from tiphys.kernels.check import warnings_of
from tiphys.kernels.consts import WARN_BADQACC, WARN_BADQPOS, WARN_BADQVEL
from tiphys.types import DATA_FIELDS, MODEL_FIELDS

NWORLD = 3
# free, ball, hinge and slide joints, a body welded to its parent, a rotated tip with
# an offset geom, sites, a camera, a mocap body, a limited joint, a connect equality
# and contacts (constraint rows for mul_jac_vec), actuators with activation
XML = """<mujoco>
  <size nuserdata="2"/>
  <option timestep="0.005" tolerance="1e-12" iterations="200"><flag island="disable"/></option>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="mocap" mocap="true" pos="1 1 1">
      <geom type="box" size=".05 .05 .05" contype="0" conaffinity="0"/></body>
    <body name="torso" pos="0 0 .3">
      <freejoint/>
      <geom type="box" size=".2 .1 .05"/>
      <site name="s0" pos=".1 .05 0" quat="0.9 0.1 0.3 0"/>
      <camera name="c0" pos="0 -1 .3" xyaxes="1 0 0 0 .3 1"/>
      <body name="arm" pos=".2 0 0" quat="0.8 0 0.6 0">
        <joint name="ball" type="ball" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/>
        <body name="fore" pos=".2 0 0">
          <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" limited="true"
                 stiffness="2"/>
          <geom type="capsule" fromto="0 0 0 .2 0 0" size=".025"/>
          <body name="tip" pos=".2 0 0" quat="0.7 0.7 0.1 0">
            <joint name="slide" type="slide" axis="1 0 0" range="-.1 .1"/>
            <geom type="sphere" size=".03" pos=".02 0 .01"/>
            <site name="s1" pos="0 .01 0"/>
          </body>
        </body>
      </body>
      <body name="welded" pos="-.2 0 0"><geom type="sphere" size=".04"/></body>
    </body>
    <body name="pend" pos="1 0 1">
      <joint name="h2" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
    </body>
  </worldbody>
  <equality><connect body1="pend" body2="world" anchor="1 0 1"/></equality>
  <actuator>
    <motor joint="hinge" gear="2"/>
    <general joint="slide" dyntype="filter" dynprm=".1" gainprm="10" biastype="affine"
             biasprm="0 -10"/>
    <velocity joint="h2" kv="1"/>
  </actuator>
</mujoco>"""
FRAMED = (("body", "nbody"), ("xbody", "nbody"), ("geom", "ngeom"), ("site", "nsite"),
          ("camera", "ncam"))


def _random_state(mjm, rng, nworld=NWORLD):
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-0.3, 0.3, (nworld, mjm.nq))
    return (qpos, rng.normal(size=(nworld, mjm.nv)), rng.normal(size=(nworld, mjm.nu)),
            rng.normal(size=(nworld, mjm.na)))


def _start(m, mjm, qpos, qvel, ctrl, act):
    """tiphys Data and MjData per world at the same state, after forward and
    rne_post_constraint."""
    d = tiphys.make_data(m, qpos.shape[0])
    for name, value in (("qpos", qpos), ("qvel", qvel), ("ctrl", ctrl), ("act", act)):
        getattr(d, name).from_numpy(value)
    tiphys.forward(m, d)
    tiphys.rne_post_constraint(m, d)
    mds = []
    for w in range(qpos.shape[0]):
        md = mujoco.MjData(mjm)
        md.qpos[:], md.qvel[:], md.ctrl[:], md.act[:] = qpos[w], qvel[w], ctrl[w], act[w]
        mujoco.mj_forward(mjm, md)
        mujoco.mj_rnePostConstraint(mjm, md)
        mds.append(md)
    return d, mds


@pytest.fixture(scope="module")
def setup():
    m = tiphys.load_model_from_string(XML)
    mjm = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(11)
    d, mds = _start(m, mjm, *_random_state(mjm, rng))
    assert any(md.ncon > 0 for md in mds)  # contact rows as well as limits, equality
    return m, mjm, d, mds, rng


def _close(ours, want, tol=1e-12, msg=""):
    want = np.asarray(want)
    np.testing.assert_allclose(np.reshape(ours, want.shape), want, rtol=0,
                               atol=tol * max(1.0, np.abs(want).max(initial=0)), err_msg=msg)


def test_jac_dot_matches_mj_jac_dot(setup):
    m, mjm, d, mds, rng = setup
    for body in range(mjm.nbody):
        point = rng.normal(size=(NWORLD, 3))
        jacp, jacr = tiphys.jac_dot(m, d, point, body)
        assert jacp.shape == jacr.shape == (NWORLD, 3, mjm.nv)
        for w, md in enumerate(mds):
            wp, wr = np.zeros((3, mjm.nv)), np.zeros((3, mjm.nv))
            mujoco.mj_jacDot(mjm, md, wp, wr, point[w], body)
            _close(jacp[w], wp, msg=f"jacp body {body} world {w}")
            _close(jacr[w], wr, msg=f"jacr body {body} world {w}")


def test_jac_point_axis_and_angmom_mat_match_mujoco(setup):
    m, mjm, d, mds, rng = setup
    axis = rng.normal(size=3)  # one axis for every world, a point per world
    for body in range(mjm.nbody):
        point = rng.normal(size=(NWORLD, 3))
        jpoint, jaxis = tiphys.jac_point_axis(m, d, point, axis, body)
        mat = tiphys.angmom_mat(m, d, body)
        for w, md in enumerate(mds):
            wp, wa = np.zeros((3, mjm.nv)), np.zeros((3, mjm.nv))
            mujoco.mj_jacPointAxis(mjm, md, wp, wa, point[w], axis, body)
            _close(jpoint[w], wp, msg=f"jac point body {body} world {w}")
            _close(jaxis[w], wa, msg=f"jac axis body {body} world {w}")
            want = np.zeros((3, mjm.nv))
            mujoco.mj_angmomMat(mjm, md, want, body)
            _close(mat[w], want, msg=f"angmom body {body} world {w}")


def test_object_velocity_and_acceleration_match_mujoco(setup):
    m, mjm, d, mds, _ = setup
    for kind, count in FRAMED:
        objtype = getattr(mujoco.mjtObj, "mjOBJ_" + kind.upper())
        for objid in range(getattr(mjm, count)):
            for local in (False, True):
                vel = tiphys.object_velocity(m, d, kind, objid, local)
                acc = tiphys.object_acceleration(m, d, objtype, objid, local)
                for w, md in enumerate(mds):
                    want = np.zeros(6)
                    mujoco.mj_objectVelocity(mjm, md, objtype, objid, want, local)
                    _close(vel[w], want, msg=f"{kind} {objid} local={local} world {w}")
                    mujoco.mj_objectAcceleration(mjm, md, objtype, objid, want, local)
                    _close(acc[w], want, 1e-10, f"acc {kind} {objid} local={local} w {w}")


def test_local2global_matches_mujoco_for_every_sameframe(setup):
    m, mjm, d, mds, rng = setup
    for body in range(mjm.nbody):
        for sameframe in range(5):
            pos = rng.normal(size=(NWORLD, 3))
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)
            xpos, xmat = tiphys.local2global(m, d, pos, quat, body, sameframe)
            for w, md in enumerate(mds):
                want_pos, want_mat = np.zeros(3), np.zeros(9)
                mujoco.mj_local2Global(md, want_pos, want_mat, pos[w], quat, body, sameframe)
                _close(xpos[w], want_pos, msg=f"xpos body {body} sameframe {sameframe}")
                _close(xmat[w], want_mat, msg=f"xmat body {body} sameframe {sameframe}")
    xpos, xmat = tiphys.local2global(m, d, None, quat, 2)
    assert xpos is None and xmat.shape == (NWORLD, 3, 3)


def test_qpos_differences_integration_and_normalization_match_mujoco(setup):
    m, mjm, d, _, rng = setup
    qpos1, qvel, _, _ = _random_state(mjm, rng)
    qpos2 = qpos1 + rng.normal(size=qpos1.shape) * 0.2
    dt = 0.013
    qvel12 = tiphys.differentiate_pos(m, dt, qpos1, qpos2)
    integrated = qpos1.copy()
    tiphys.integrate_pos(m, integrated, qvel, dt)  # numpy: in place, as MuJoCo
    normalized = tiphys.normalize_quat(m, qpos2)
    for w in range(NWORLD):
        want = np.zeros(mjm.nv)
        mujoco.mj_differentiatePos(mjm, want, dt, qpos1[w], qpos2[w])
        _close(qvel12[w], want, msg=f"differentiate_pos world {w}")
        want = qpos1[w].copy()
        mujoco.mj_integratePos(mjm, want, qvel[w], dt)
        _close(integrated[w], want, msg=f"integrate_pos world {w}")
        want = qpos2[w].copy()
        mujoco.mj_normalizeQuat(mjm, want)
        _close(normalized[w], want, msg=f"normalize_quat world {w}")
    # 1-D arguments broadcast; integrating the difference gets back to qpos2 (normalized)
    one = tiphys.differentiate_pos(m, dt, qpos1[0], qpos2[0])
    _close(one, qvel12[0])
    back = tiphys.integrate_pos(m, qpos1[0].copy(), one, dt)
    _close(back, normalized[0], 1e-9)
    # a Taichi array (d.qpos) is updated on the device
    e = tiphys.make_data(m, NWORLD)
    e.qpos.from_numpy(qpos1)
    tiphys.integrate_pos(m, e.qpos, qvel, dt)
    _close(e.numpy("qpos"), integrated)
    e.qpos.from_numpy(qpos2)
    tiphys.normalize_quat(m, e.qpos)
    _close(e.numpy("qpos"), normalized)


def test_set_total_mass_matches_mujoco_and_forward_sees_it(setup):
    _, _, _, _, rng = setup
    m = tiphys.load_model_from_string(XML)  # the model changes: its own copy
    mjm = mujoco.MjModel.from_xml_string(XML)
    assert tiphys.get_total_mass(m) == pytest.approx(mujoco.mj_getTotalmass(mjm), rel=1e-15)
    tiphys.set_total_mass(m, 23.5)
    mujoco.mj_setTotalmass(mjm, 23.5)
    assert tiphys.get_total_mass(m) == pytest.approx(mujoco.mj_getTotalmass(mjm), rel=1e-14)
    for name in ("body_mass", "body_inertia", "body_subtreemass"):
        want = getattr(mjm, name)
        _close(getattr(m.arrays, name), want, msg=name)
        _close(getattr(m, name).to_numpy()[0], want, msg=name)
    d, mds = _start(m, mjm, *_random_state(mjm, rng, 2))
    for w, md in enumerate(mds):
        full = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, full, md.qM)
        _close(tiphys.full_m(m, d)[w], full, msg="qM after set_total_mass")
        _close(d.numpy("qacc")[w], md.qacc, 1e-8, "qacc after set_total_mass")
    with pytest.raises(ValueError, match="newmass"):
        tiphys.set_total_mass(m, [1.0, 2.0])


def test_mul_jac_vec_and_transpose_match_mujoco(setup):
    m, mjm, d, mds, rng = setup
    vec = rng.normal(size=(NWORLD, mjm.nv))
    res = tiphys.mul_jac_vec(m, d, vec)
    efc = rng.normal(size=(NWORLD, d.njmax))
    rest = tiphys.mul_jac_t_vec(m, d, efc)
    nefc = d.numpy("nefc")
    for w, md in enumerate(mds):
        assert nefc[w] == md.nefc > 0
        want = np.zeros(md.nefc)
        mujoco.mj_mulJacVec(mjm, md, want, vec[w])
        _close(res[w, :md.nefc], want, msg=f"J vec world {w}")
        assert not res[w, md.nefc:].any()
        want = np.zeros(mjm.nv)
        mujoco.mj_mulJacTVec(mjm, md, want, efc[w, :md.nefc])
        _close(rest[w], want, msg=f"J' vec world {w}")
    with pytest.raises(ValueError, match="nefc"):
        tiphys.mul_jac_t_vec(m, d, efc[:, :1])


def test_forward_and_inverse_skip_match_mujoco(setup):
    m, mjm, _, _, rng = setup
    qpos, qvel, ctrl, act = _random_state(mjm, rng)
    d, mds = _start(m, mjm, qpos, qvel, ctrl, act)
    # new velocities and a moved qpos: skipping the position stages keeps the old
    # kinematics (MuJoCo does the same), so the results show what was skipped
    qvel2, qpos2 = rng.normal(size=qvel.shape), qpos + 0.1
    d.qvel.from_numpy(qvel2)
    d.qpos.from_numpy(qpos2)
    tiphys.forward_skip(m, d, mujoco.mjtStage.mjSTAGE_POS, True)
    for w, md in enumerate(mds):
        md.qvel[:], md.qpos[:] = qvel2[w], qpos2[w]
        mujoco.mj_forwardSkip(mjm, md, mujoco.mjtStage.mjSTAGE_POS, 1)
        for name in ("xpos", "qfrc_bias", "qfrc_passive", "actuator_velocity"):
            _close(d.numpy(name)[w], getattr(md, name), 1e-12, f"{name} world {w}")
        _close(d.numpy("qacc")[w], md.qacc, 1e-8, f"qacc world {w}")
    ctrl2 = rng.normal(size=ctrl.shape)  # new controls only: skip the velocity stages too
    d.ctrl.from_numpy(ctrl2)
    tiphys.forward_skip(m, d, 2)
    for w, md in enumerate(mds):
        md.ctrl[:] = ctrl2[w]
        mujoco.mj_forwardSkip(mjm, md, mujoco.mjtStage.mjSTAGE_VEL, 0)
        _close(d.numpy("actuator_force")[w], md.actuator_force, 1e-12)
        _close(d.numpy("qacc")[w], md.qacc, 1e-8, f"qacc (skip vel) world {w}")
    qacc = rng.normal(size=qvel.shape)  # inverse from a new qacc, positions skipped
    d.qacc.from_numpy(qacc)
    tiphys.inverse_skip(m, d, 1)
    for w, md in enumerate(mds):
        md.qacc[:] = qacc[w]
        mujoco.mj_inverseSkip(mjm, md, mujoco.mjtStage.mjSTAGE_POS, 0)
        _close(d.numpy("qfrc_inverse")[w], md.qfrc_inverse, 1e-8, f"qfrc_inverse world {w}")
    tiphys.inverse(m, d)  # nothing skipped: the new qpos takes effect
    tiphys.forward_skip(m, d, mujoco.mjtStage.mjSTAGE_NONE)
    for w, md in enumerate(mds):
        mujoco.mj_inverse(mjm, md)
        _close(d.numpy("qfrc_inverse")[w], md.qfrc_inverse, 1e-8, f"inverse world {w}")
        mujoco.mj_forward(mjm, md)
        _close(d.numpy("xpos")[w], md.xpos, 1e-12, f"xpos world {w}")
        _close(d.numpy("qacc")[w], md.qacc, 1e-8, f"qacc (no skip) world {w}")
    with pytest.raises(ValueError, match="skipstage"):
        tiphys.forward_skip(m, d, 4)
    with pytest.raises(ValueError, match="skipstage"):
        tiphys.inverse_skip(m, d, -1)


def test_check_pos_vel_acc_match_mujoco(setup):
    m, mjm, _, _, rng = setup
    d, mds = _start(m, mjm, *_random_state(mjm, rng))
    qpos, qvel, qacc = d.numpy("qpos"), d.numpy("qvel"), d.numpy("qacc")
    qpos[0, 4], qvel[1, 2], qacc[2, 5] = np.nan, 2e10, -np.inf
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    d.qacc.from_numpy(qacc)
    tiphys.check_pos(m, d)
    tiphys.check_vel(m, d)
    tiphys.check_acc(m, d)
    for w, md in enumerate(mds):
        md.qpos[:], md.qvel[:], md.qacc[:] = qpos[w], qvel[w], qacc[w]
        mujoco.mj_checkPos(mjm, md)
        mujoco.mj_checkVel(mjm, md)
        mujoco.mj_checkAcc(mjm, md)
    warn = warnings_of(d)
    lastinfo = d.numpy("warning_lastinfo")
    for w, md in enumerate(mds):
        for k in (WARN_BADQPOS, WARN_BADQVEL, WARN_BADQACC):
            assert warn[w, k] == md.warning[k].number, (w, k)
            assert lastinfo[w, k] == md.warning[k].lastinfo, (w, k)
        for name in ("time", "qpos", "qvel", "ctrl", "act", "qfrc_applied"):
            _close(d.numpy(name)[w], getattr(md, name), 1e-12, f"{name} world {w}")
        _close(d.numpy("qacc")[w], md.qacc, 1e-8, f"qacc world {w}")
    assert warn[:, WARN_BADQACC].tolist() == [0, 0, 1]


def test_support_rejects_bad_arguments(setup):
    m, mjm, d, _, _ = setup
    with pytest.raises(IndexError, match="body"):
        tiphys.jac_dot(m, d, np.zeros(3), mjm.nbody)
    with pytest.raises(ValueError, match="point"):
        tiphys.jac_dot(m, d, np.zeros((NWORLD + 1, 3)), 1)
    with pytest.raises(ValueError, match="axis"):
        tiphys.jac_point_axis(m, d, np.zeros(3), np.zeros(4), 1)
    with pytest.raises(IndexError, match="body"):
        tiphys.angmom_mat(m, d, -1)
    with pytest.raises(IndexError, match="objid"):
        tiphys.object_velocity(m, d, "geom", mjm.ngeom)
    with pytest.raises(ValueError, match="objtype"):
        tiphys.object_acceleration(m, d, "joint", 0)
    with pytest.raises(IndexError, match="sameframe"):
        tiphys.local2global(m, d, np.zeros(3), np.array([1.0, 0, 0, 0]), 1, 5)
    with pytest.raises(ValueError, match="quat"):
        tiphys.local2global(m, d, np.zeros(3), np.zeros(3), 1)
    with pytest.raises(ValueError, match="qpos2"):
        tiphys.differentiate_pos(m, 0.1, np.zeros(mjm.nq), np.zeros(mjm.nq + 1))
    with pytest.raises(ValueError, match="rows"):
        tiphys.integrate_pos(m, np.zeros((2, mjm.nq)), np.zeros((3, mjm.nv)), 0.1)
    with pytest.raises(ValueError, match="vec"):
        tiphys.mul_jac_vec(m, d, np.zeros(mjm.nv + 1))


def test_print_model_covers_mujocos_fields(setup, tmp_path):
    m, mjm, _, _, _ = setup
    mujoco.mj_printModel(mjm, str(tmp_path / "mj.txt"))
    theirs = set((tmp_path / "mj.txt").read_text().split())
    ours = tiphys.print_model(m, str(tmp_path / "ti.txt"))
    assert (tmp_path / "ti.txt").read_text() == ours
    words = set(ours.split())
    shared = [name for name, *_ in MODEL_FIELDS if name in theirs]
    assert len(shared) > 100
    missing = [name for name in shared if name not in words]
    assert not missing, missing
    for i in range(mjm.nbody):  # one section per body, with its values
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, i)
        assert f"BODY {i} ({name})" in ours
    assert f"{mjm.body_mass[2]:.6g}" in ours and "timestep" in ours and "meaninertia" in ours


def test_print_data_covers_every_field_of_the_world(setup):
    m, mjm, d, mds, _ = setup
    buf = io.StringIO()
    text = tiphys.print_data(m, d, buf, world=1)
    assert buf.getvalue() == text
    words = set(text.split())
    for name, *_ in DATA_FIELDS:
        if name not in ("ncon", "ne", "nf", "nl", "nefc") and not name.startswith("warning"):
            shape = d.field_shape(name)[1:]
            if 0 not in shape:
                assert name.upper() in words, name
    for value in mds[1].qpos:  # world 1's values, not world 0's
        assert f"{value:.6g}" in text
    assert f"nefc {mds[1].nefc}" in " ".join(text.split())
    with pytest.raises(IndexError, match="world"):
        tiphys.print_data(m, d, buf, world=NWORLD)


def test_support_kernels_in_f32_match_mujoco_to_single_precision():
    """The same kernels in f32 (as on GPUs), in a subprocess (precision is per
    process), on MuJoCo's own kinematics copied into Data (no pipeline compile)."""
    import json
    import os
    res = subproc.run([os.path.abspath(__file__), "f32"], key="cpu-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    errors = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(errors) == 10
    for name, err in errors.items():
        assert err < 2e-6, f"{name}: relative error {err}"


def _f32_errors() -> dict:
    """Relative errors of the support kernels in the current precision, with Data's
    kinematics, velocities, accelerations and constraint Jacobian set from MuJoCo."""
    m = tiphys.load_model_from_string(XML)
    mjm = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(21)
    qpos, qvel, ctrl, act = _random_state(mjm, rng)
    mds = []
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qpos[:], md.qvel[:], md.ctrl[:], md.act[:] = qpos[w], qvel[w], ctrl[w], act[w]
        mujoco.mj_forward(mjm, md)
        mujoco.mj_rnePostConstraint(mjm, md)
        mds.append(md)
    assert not mujoco.mj_isSparse(mjm)
    d = tiphys.make_data(m, NWORLD)
    for name in ("qpos", "qvel", "xpos", "xquat", "xmat", "xipos", "ximat", "geom_xpos",
                 "geom_xmat", "site_xpos", "site_xmat", "cam_xpos", "cam_xmat",
                 "subtree_com", "cdof", "cdof_dot", "cvel", "cacc", "efc_J", "nefc"):
        full = getattr(d, name).to_numpy()
        for w, md in enumerate(mds):
            value = np.asarray(getattr(md, name))
            if name == "efc_J":
                value = value.reshape(md.nefc, mjm.nv)
            value = value.reshape(full[w][tuple(slice(0, n) for n in value.shape)].shape) \
                if value.ndim else value
            if value.ndim:
                full[w][tuple(slice(0, n) for n in value.shape)] = value
            else:
                full[w] = value
        getattr(d, name).from_numpy(full)

    def rel(ours, want):
        want = np.asarray(want)
        return float(np.abs(np.reshape(ours, want.shape) - want).max() /
                     max(1.0, np.abs(want).max()))

    errors = {k: 0.0 for k in ("jac_dot", "jac_point_axis", "angmom_mat",
                               "object_velocity", "object_acceleration", "local2global",
                               "differentiate_pos", "integrate_pos", "mul_jac_vec",
                               "mul_jac_t_vec")}
    point, axis = rng.normal(size=(NWORLD, 3)), rng.normal(size=3)
    for body in range(mjm.nbody):
        jd = tiphys.jac_dot(m, d, point, body)
        jpa = tiphys.jac_point_axis(m, d, point, axis, body)
        am = tiphys.angmom_mat(m, d, body)
        vel = tiphys.object_velocity(m, d, "xbody", body, True)
        acc = tiphys.object_acceleration(m, d, "body", body)
        quat = np.array([0.5, 0.5, -0.5, 0.5])
        xpos, xmat = tiphys.local2global(m, d, point[0], quat, body)
        for w, md in enumerate(mds):
            a, b = np.zeros((3, mjm.nv)), np.zeros((3, mjm.nv))
            mujoco.mj_jacDot(mjm, md, a, b, point[w], body)
            errors["jac_dot"] = max(errors["jac_dot"], rel(jd[0][w], a), rel(jd[1][w], b))
            mujoco.mj_jacPointAxis(mjm, md, a, b, point[w], axis, body)
            errors["jac_point_axis"] = max(errors["jac_point_axis"], rel(jpa[0][w], a),
                                           rel(jpa[1][w], b))
            mujoco.mj_angmomMat(mjm, md, a, body)
            errors["angmom_mat"] = max(errors["angmom_mat"], rel(am[w], a))
            r = np.zeros(6)
            mujoco.mj_objectVelocity(mjm, md, mujoco.mjtObj.mjOBJ_XBODY, body, r, 1)
            errors["object_velocity"] = max(errors["object_velocity"], rel(vel[w], r))
            mujoco.mj_objectAcceleration(mjm, md, mujoco.mjtObj.mjOBJ_BODY, body, r, 0)
            errors["object_acceleration"] = max(errors["object_acceleration"],
                                                rel(acc[w], r))
            p, mat = np.zeros(3), np.zeros(9)
            mujoco.mj_local2Global(md, p, mat, point[0], quat, body, 0)
            errors["local2global"] = max(errors["local2global"], rel(xpos[w], p),
                                         rel(xmat[w], mat))
    qpos2 = qpos + rng.normal(size=qpos.shape) * 0.2
    dv = tiphys.differentiate_pos(m, 0.01, qpos, qpos2)
    ip = tiphys.integrate_pos(m, qpos.copy(), qvel, 0.01)
    vec, efc = rng.normal(size=(NWORLD, mjm.nv)), rng.normal(size=(NWORLD, d.njmax))
    jv, jtv = tiphys.mul_jac_vec(m, d, vec), tiphys.mul_jac_t_vec(m, d, efc)
    for w, md in enumerate(mds):
        v = np.zeros(mjm.nv)
        mujoco.mj_differentiatePos(mjm, v, 0.01, qpos[w], qpos2[w])
        errors["differentiate_pos"] = max(errors["differentiate_pos"], rel(dv[w], v))
        p = qpos[w].copy()
        mujoco.mj_integratePos(mjm, p, qvel[w], 0.01)
        errors["integrate_pos"] = max(errors["integrate_pos"], rel(ip[w], p))
        o = np.zeros(md.nefc)
        mujoco.mj_mulJacVec(mjm, md, o, vec[w])
        errors["mul_jac_vec"] = max(errors["mul_jac_vec"], rel(jv[w, :md.nefc], o))
        mujoco.mj_mulJacTVec(mjm, md, v, efc[w, :md.nefc])
        errors["mul_jac_t_vec"] = max(errors["mul_jac_t_vec"], rel(jtv[w], v))
    return errors


if __name__ == "__main__":
    import json
    import sys
    tiphys.init(arch="cpu", precision=sys.argv[1])
    print(json.dumps(_f32_errors()))
