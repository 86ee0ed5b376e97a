"""forward / step against mj_forward / mj_step on constraint-free models.

Trajectories: 200 Euler steps with contacts and constraints disabled in both engines
(<flag contact="disable" constraint="disable"/>), several worlds with different initial
velocities; qpos/qvel agree to 1e-7. Models that need what is not implemented yet
(contacts, limits, actuators, other integrators...) raise NotImplementedError.
"""
import os

import mujoco
import numpy as np
import pytest
from lxml import etree

import tiphys
from oracle import corpus_dir, load_pair_from_xml, strip_later_sections
from test_smooth import SPRINGS

NWORLD = 3
NSTEP = 200
TRAJECTORY_MODELS = ("gym/ant.xml", "gym/humanoid.xml", "gym/hopper.xml",
                     "gym/half_cheetah.xml", "gym/walker2d.xml",
                     "gym/inverted_double_pendulum.xml", "mjwarp/pendula.xml")


def _set_option(root, flags=None, **attrs):
    opt = root.find("option")
    if opt is None:
        opt = etree.Element("option")
        root.insert(0, opt)
    for k, v in attrs.items():
        opt.set(k, v)
    if flags:
        flag = opt.find("flag")
        if flag is None:
            flag = etree.SubElement(opt, "flag")
        for k, v in flags.items():
            flag.set(k, v)


def load_both(rel, flags=None, **attrs):
    """tiphys and MuJoCo models of a stripped corpus file with options changed."""
    path = os.path.join(corpus_dir(), rel)
    root = etree.fromstring(strip_later_sections(path))
    _set_option(root, flags, **attrs)
    return load_pair_from_xml(path, etree.tostring(root), "forward")


def rollout_both(m, mjm, qvel, nstep=NSTEP, qpos=None):
    nworld = qvel.shape[0]
    d = tiphys.make_data(m, nworld)
    if qpos is not None:
        d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    for _ in range(nstep):
        tiphys.step(m, d)
    md = mujoco.MjData(mjm)
    want = []
    for w in range(nworld):
        mujoco.mj_resetData(mjm, md)
        if qpos is not None:
            md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        for _ in range(nstep):
            mujoco.mj_step(mjm, md)
        want.append((md.qpos.copy(), md.qvel.copy(), md.time))
    return d, want


def assert_trajectory_match(d, want, tol=1e-7):
    qpos, qvel, time = d.numpy("qpos"), d.numpy("qvel"), d.numpy("time")
    for w, (wq, wv, wt) in enumerate(want):
        np.testing.assert_allclose(qpos[w], wq, rtol=0, atol=tol, err_msg=f"qpos world {w}")
        np.testing.assert_allclose(qvel[w], wv, rtol=0, atol=tol * max(1.0, np.abs(wv).max()),
                                   err_msg=f"qvel world {w}")
        assert time[w] == pytest.approx(wt, rel=1e-12)


@pytest.mark.parametrize("rel", TRAJECTORY_MODELS)
def test_euler_trajectory_matches_mujoco(rel):
    m, mjm = load_both(rel, {"contact": "disable", "constraint": "disable"},
                       integrator="Euler")
    rng = np.random.default_rng(len(rel))
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    d, want = rollout_both(m, mjm, qvel)
    assert_trajectory_match(d, want)


def test_euler_without_eulerdamp_matches_mujoco():
    m, mjm = load_both("gym/humanoid.xml", {"contact": "disable", "constraint": "disable",
                                            "eulerdamp": "disable"}, integrator="Euler")
    assert mjm.dof_damping.any()
    qvel = np.random.default_rng(3).normal(size=(2, mjm.nv))
    d, want = rollout_both(m, mjm, qvel, nstep=50)
    assert_trajectory_match(d, want)


def test_springs_gravcomp_xfrc_trajectory_matches_mujoco():
    m = tiphys.load_model_from_string(SPRINGS)
    mjm = mujoco.MjModel.from_xml_string(SPRINGS)
    rng = np.random.default_rng(5)
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    xfrc = rng.normal(size=(NWORLD, mjm.nbody, 6))
    qfrc = rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    d.qvel.from_numpy(qvel)
    d.xfrc_applied.from_numpy(xfrc)
    d.qfrc_applied.from_numpy(qfrc)
    for _ in range(100):
        tiphys.step(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        mujoco.mj_resetData(mjm, md)
        md.qvel[:] = qvel[w]
        md.xfrc_applied[:] = xfrc[w]
        md.qfrc_applied[:] = qfrc[w]
        for _ in range(100):
            mujoco.mj_step(mjm, md)
        np.testing.assert_allclose(d.numpy("qpos")[w], md.qpos, rtol=0, atol=1e-7)
        np.testing.assert_allclose(d.numpy("qvel")[w], md.qvel, rtol=0, atol=1e-7)
        np.testing.assert_allclose(d.numpy("qacc_warmstart")[w], md.qacc_warmstart,
                                   rtol=0, atol=1e-6)


def test_forward_matches_mj_forward():
    m = tiphys.load_model_from_string(SPRINGS)
    mjm = mujoco.MjModel.from_xml_string(SPRINGS)
    rng = np.random.default_rng(11)
    qpos = np.tile(mjm.qpos0, (NWORLD, 1)) + rng.uniform(-1, 1, (NWORLD, mjm.nq))
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    d.qacc.from_numpy(np.full((NWORLD, mjm.nv), np.nan))
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        for name in ("qacc", "qacc_smooth", "qfrc_bias", "qfrc_passive", "qM"):
            want = getattr(md, name)
            np.testing.assert_allclose(d.numpy(name)[w], want, rtol=0,
                                       atol=1e-9 * max(1.0, np.abs(want).max()), err_msg=name)


def test_step_raises_for_contacts():
    m, _ = load_both("gym/ant.xml")
    d = tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match="contacts"):
        tiphys.step(m, d)
    with pytest.raises(NotImplementedError, match="contacts"):
        tiphys.forward(m, d)


@pytest.mark.parametrize("xml, what", [
    ('<body><joint limited="true" range="-1 1"/><geom size=".1" contype="0"/></body>',
     "limits"),
    ('<body><joint frictionloss="1"/><geom size=".1" contype="0"/></body>', "frictionloss"),
    ('<body><freejoint/><geom size=".1"/></body><geom type="plane" size="1 1 1"/>',
     "contacts"),
])
def test_unsupported_features_raise(xml, what):
    m = tiphys.load_model_from_string(f"<mujoco><worldbody>{xml}</worldbody></mujoco>")
    d = tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match=what):
        tiphys.step(m, d)


def test_disabled_constraints_do_not_raise():
    xml = """<mujoco><option><flag constraint="disable"/></option><worldbody>
      <body><joint limited="true" range="-1 1" frictionloss="1"/><geom size=".1"/></body>
      <geom type="plane" size="1 1 1"/></worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    tiphys.step(m, d)
    assert d.numpy("time")[0] == pytest.approx(m.opt.timestep)


def test_overlapping_parent_child_geoms_are_filtered():
    """Parent-child geom pairs never collide (filterparent): no contact, no error."""
    xml = """<mujoco><worldbody><body><freejoint/><geom size=".1"/>
      <body><joint/><geom size=".1"/></body></body></worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    tiphys.step(m, tiphys.make_data(m, 1))
