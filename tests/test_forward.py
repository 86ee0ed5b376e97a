"""forward / step against mj_forward / mj_step.

Trajectories: 200 Euler steps with contacts and constraints disabled in both engines
(<flag contact="disable" constraint="disable"/>), several worlds with different initial
velocities; qpos/qvel agree to 1e-7. With constraints (contacts, limits, friction
loss): forward on corpus robots touching the floor and 100-step trajectories of small
models, both solvers run to tolerance 1e-12 (MuJoCo's default flags: constraint
islands solved apart; the corpus robots also with islands off).
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


TIGHT = dict(tolerance="1e-12", iterations="200")
ISLAND_FLAGS = ({}, {"island": "disable"})  # MuJoCo's default (islands) and without


def _constrained_state(mjm, nworld, seed):
    """Random joint angles and velocities; the root (free joint, or the first slide
    joint) lowered until every world touches the floor in MuJoCo."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    root = None
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            root = adr + 2
        elif mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE and root is None and \
                np.allclose(mjm.jnt_axis[j], [0, 0, 1]):
            root = adr  # planar robots: the vertical slide
        elif mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            qpos[:, adr] += rng.uniform(-0.4, 0.4, nworld)
    qvel = rng.normal(scale=0.5, size=(nworld, mjm.nv))
    md = mujoco.MjData(mjm)
    for _ in range(60):
        ncon = []
        for q in qpos:
            md.qpos[:] = q
            mujoco.mj_forward(mjm, md)
            ncon.append(md.ncon)
        if min(ncon) > 0 or root is None:
            break
        qpos[:, root] -= 0.05
    return qpos, qvel


def assert_forward_match(m, mjm, qpos, qvel, tol=1e-7):
    """tiphys.forward and mj_forward agree on ncon, nefc, qacc, qfrc_constraint and
    efc_force (solvers run to tolerance 1e-12: agreement to ~1e-7 of each scale)."""
    nworld = qpos.shape[0]
    d = tiphys.make_data(m, nworld)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    rows = 0
    for w in range(nworld):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        assert d.numpy("ncon")[w] == md.ncon and d.numpy("nefc")[w] == md.nefc, w
        rows += md.nefc
        for name in ("qacc", "qfrc_constraint"):
            want = getattr(md, name)
            np.testing.assert_allclose(d.numpy(name)[w], want, rtol=0,
                                       atol=tol * max(1.0, np.abs(want).max()),
                                       err_msg=f"{name} world {w}")
        force = d.numpy("efc_force")[w, :md.nefc]
        np.testing.assert_allclose(force, md.efc_force, rtol=0,
                                   atol=tol * max(1.0, np.abs(md.efc_force).max(initial=0)),
                                   err_msg=f"efc_force world {w}")
    return d, rows


@pytest.mark.parametrize("flags", ISLAND_FLAGS, ids=["islands", "whole"])
@pytest.mark.parametrize("rel", ["gym/ant.xml", "gym/humanoid.xml", "gym/hopper.xml"])
def test_forward_with_contacts_and_limits_matches_mujoco(rel, flags):
    m, mjm = load_both(rel, flags=flags, **TIGHT)
    qpos, qvel = _constrained_state(mjm, NWORLD, seed=len(rel))
    d, rows = assert_forward_match(m, mjm, qpos, qvel)
    assert d.numpy("ncon").min() > 0 and rows > 0  # contacts in every world


@pytest.mark.parametrize("xml", [
    '<body><joint limited="true" range="-1 1"/><geom size=".1" contype="0"/></body>',
    '<body><joint frictionloss="1"/><geom size=".1" contype="0"/></body>',
    '<body><freejoint/><geom size=".1"/></body><geom type="plane" size="1 1 1"/>',
], ids=["limit", "frictionloss", "contact"])
def test_constraint_models_step_like_mujoco(xml):
    """Limits, friction loss and contacts through step: 100 steps agree with MuJoCo."""
    opt = '<option tolerance="1e-12" iterations="200"/>'
    full = f"<mujoco>{opt}<worldbody>{xml}</worldbody></mujoco>"
    m = tiphys.load_model_from_string(full)
    mjm = mujoco.MjModel.from_xml_string(full)
    rng = np.random.default_rng(9)
    qvel = rng.normal(scale=2.0, size=(NWORLD, m.nv))
    d, want = rollout_both(m, mjm, qvel, nstep=100)
    assert_trajectory_match(d, want, tol=1e-8)


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
    d = tiphys.make_data(m, 1)
    tiphys.step(m, d)
    assert d.numpy("ncon")[0] == 0
    assert np.isfinite(d.numpy("qacc")).all()
