"""tendon / transmission / velocity / actuation / tendon passive forces / activation
integration against mj_forward's fields (mj_tendon, mj_transmission, mj_fwdVelocity,
mj_passive, mj_fwdActuation) and 200-step Euler trajectories of mj_step.

Corpus models with tendons or actuators keep those sections (the other later-issue
sections are stripped in both engines); 3 worlds with random qpos, qvel, ctrl, act;
outputs poisoned with NaN first; f64 on the CPU.
"""
import os
import zlib

import mujoco
import numpy as np
import pytest
from lxml import etree

import tiphys
from tiphys.forward import constraint_rows_possible
from tiphys.kernels.actuation import has_body_transmission
from conftest import record
from corpus_xfail import corpus_params, mujoco_accepts, not_yet
from oracle import _inline_includes, corpus_dir, corpus_models, load_pair_from_xml

NWORLD = 3
RTOL = 1e-9
STRIP = ("sensor", "equality", "contact", "deformable", "extension")
OUTPUTS = ("ten_wrapadr", "ten_wrapnum", "ten_J", "ten_length", "wrap_obj", "wrap_xpos",
           "actuator_length", "actuator_moment_dense", "ten_velocity", "actuator_velocity",
           "actuator_force", "act_dot", "qfrc_actuator", "qfrc_spring", "qfrc_damper",
           "qfrc_passive")


def stripped_root(path, flags=None):
    """The model's XML, includes inlined, with tendon and actuator kept; with flags
    given, those <flag>s are set and the integrator is Euler."""
    root = etree.parse(path, etree.XMLParser(remove_comments=True)).getroot()
    _inline_includes(root, os.path.dirname(path))
    for tag in STRIP:
        for el in root.findall(tag):
            root.remove(el)
    if flags:
        opt = root.find("option")
        if opt is None:
            opt = etree.Element("option")
            root.insert(0, opt)
        opt.set("integrator", "Euler")
        flag = opt.find("flag")
        if flag is None:
            flag = etree.SubElement(opt, "flag")
        for k, v in flags.items():
            flag.set(k, v)
    return root


def load_both(path, flags=None):
    return load_pair_from_xml(path, etree.tostring(stripped_root(path, flags)), "act")


def _candidates():
    """Corpus models with tendons or actuators (those MuJoCo rejects as written are
    fragments meant to be included: the compiler tests cover them)."""
    out = []
    for rel in corpus_models():
        if not mujoco_accepts(rel):
            continue
        root = stripped_root(os.path.join(corpus_dir(), rel))
        if root.find("tendon") is not None or root.find("actuator") is not None:
            out.append(rel)
    return out


CANDIDATES = _candidates()


def poison(d, names):
    for name in names:
        arr = getattr(d, name)
        host = arr.to_numpy()
        fill = -7 if host.dtype.kind == "i" else np.nan
        arr.from_numpy(np.full(host.shape, fill, dtype=host.dtype))


def random_state(mjm, rng, nworld=NWORLD):
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-0.5, 0.5, size=(nworld, mjm.nq))
    ctrl = rng.uniform(-1.5, 1.5, size=(nworld, mjm.nu))
    lo = mjm.actuator_ctrlrange[:, 0]
    hi = mjm.actuator_ctrlrange[:, 1]
    # mostly inside ctrlrange, some outside (clamping)
    ctrl = np.where(mjm.actuator_ctrllimited[None, :] != 0,
                    lo + (hi - lo) * rng.uniform(-0.2, 1.2, size=ctrl.shape), ctrl)
    return {"qpos": qpos, "qvel": rng.normal(size=(nworld, mjm.nv)),
            "ctrl": ctrl, "act": rng.uniform(-0.2, 1.2, size=(nworld, mjm.na))}


def dense_moment(mjm, md):
    out = np.zeros((mjm.nu, mjm.nv))
    for i in range(mjm.nu):
        adr = md.moment_rowadr[i]
        for k in range(md.moment_rownnz[i]):
            out[i, md.moment_colind[adr + k]] = md.actuator_moment[adr + k]
    return out


def mujoco_outputs(mjm, state):
    md = mujoco.MjData(mjm)
    res = {name: [] for name in OUTPUTS}
    for w in range(state["qpos"].shape[0]):
        for name, value in state.items():
            getattr(md, name)[:] = value[w]
        mujoco.mj_forward(mjm, md)
        for name in OUTPUTS:
            if name == "actuator_moment_dense":
                res[name].append(dense_moment(mjm, md))
            elif name == "ten_J":
                res[name].append(np.array(md.ten_J).reshape(mjm.ntendon, mjm.nv))
            elif name in ("wrap_obj", "wrap_xpos"):
                width = 2 if name == "wrap_obj" else 6
                res[name].append(np.array(getattr(md, name)).reshape(mjm.nwrap, width))
            else:
                res[name].append(np.array(getattr(md, name)).copy())
    return {k: np.array(v) for k, v in res.items()}


def tiphys_outputs(m, state):
    d = tiphys.make_data(m, state["qpos"].shape[0])
    for name, value in state.items():
        if value.size:
            getattr(d, name).from_numpy(value)
    poison(d, OUTPUTS)
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.camlight(m, d)
    tiphys.flex(m, d)
    tiphys.tendon(m, d)
    tiphys.crb(m, d)
    tiphys.factor_m(m, d)
    if has_body_transmission(m) and constraint_rows_possible(m):
        # body transmissions read the contacts (mj_fwdPosition's order)
        tiphys.collision(m, d)
        tiphys.make_constraint(m, d)
    tiphys.transmission(m, d)
    tiphys.flex_velocity(m, d)
    tiphys.velocity(m, d)
    tiphys.com_vel(m, d)
    tiphys.passive(m, d)
    tiphys.rne(m, d)
    tiphys.actuation(m, d)
    return {name: d.numpy(name) for name in OUTPUTS}


def _compare(ours, theirs, m):
    errs = []
    worst = 0.0
    for name in OUTPUTS:
        a, b = ours[name], theirs[name]
        if name in ("ten_wrapadr", "ten_wrapnum", "ten_J", "ten_length", "wrap_obj",
                    "wrap_xpos", "ten_velocity") and m.ntendon == 0:
            continue
        if name.startswith("wrap"):
            # only the slots the paths used are defined
            used = np.zeros(b.shape[:2] + (2,), bool)
            for w in range(b.shape[0]):
                n = int(theirs["ten_wrapadr"][w, -1] + theirs["ten_wrapnum"][w, -1]) \
                    if m.ntendon else 0
                flat = used[w].reshape(-1)
                flat[:n] = True
            if name == "wrap_xpos":
                used = np.repeat(used, 3, axis=-1)
            a, b = a[used], b[used]
        if a.shape != b.shape:
            errs.append(f"{name}: shape {a.shape} vs {b.shape}")
            continue
        scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
        err = float(np.max(np.abs(a - b))) / scale if b.size else 0.0
        if not np.isfinite(a).all():
            errs.append(f"{name}: non-finite")
        elif err > RTOL:
            errs.append(f"{name}: rel err {err:.3g}")
        worst = max(worst, err)
    return errs, worst


@pytest.mark.parametrize("rel", corpus_params("test_actuation", CANDIDATES))
def test_actuation_stages_match_mujoco_on_corpus(rel):
    path = os.path.join(corpus_dir(), rel)
    with not_yet("test_actuation", "actuation stages", rel):
        m, mjm = load_both(path)
        rng = np.random.default_rng(zlib.crc32(rel.encode()))
        state = random_state(mjm, rng)
        ours = tiphys_outputs(m, state)
    errs, worst = _compare(ours, mujoco_outputs(mjm, state), m)
    record("actuation stages", rel, "FAIL" if errs else f"ok (max rel err {worst:.2g})")
    assert not errs, errs


TRAJECTORY_MODELS = ("gym/half_cheetah.xml", "gym/humanoid.xml", "gym/hopper.xml",
                     "mjwarp/actuation/actuation.xml", "mjwarp/actuation/muscle.xml",
                     "mjwarp/actuation/site.xml", "mjwarp/actuation/tendon_force_limit.xml",
                     "mjwarp/tendon/damping.xml", "mjwarp/tendon/pulley_site.xml")


@pytest.mark.parametrize("rel", TRAJECTORY_MODELS)
def test_euler_trajectory_with_actuators_matches_mujoco(rel):
    path = os.path.join(corpus_dir(), rel)
    m, mjm = load_both(path, {"contact": "disable", "constraint": "disable"})
    rng = np.random.default_rng(1)
    state = random_state(mjm, rng)
    state["qpos"] = np.tile(mjm.qpos0, (NWORLD, 1)) + \
        rng.uniform(-0.1, 0.1, size=(NWORLD, mjm.nq))
    state["qvel"] *= 0.1
    d = tiphys.make_data(m, NWORLD)
    for name, value in state.items():
        if value.size:
            getattr(d, name).from_numpy(value)
    for _ in range(200):
        tiphys.step(m, d)
    md = mujoco.MjData(mjm)
    worst = 0.0
    for w in range(NWORLD):
        for name, value in state.items():
            getattr(md, name)[:] = value[w]
        for _ in range(200):
            mujoco.mj_step(mjm, md)
        for name in ("qpos", "qvel", "act"):
            want = getattr(md, name)
            got = d.numpy(name)[w]
            err = float(np.max(np.abs(got - want), initial=0.0)) / max(
                1.0, float(np.max(np.abs(want), initial=0.0)))
            worst = max(worst, err)
            assert err < 1e-7, (name, w, err)
    record("actuation trajectories", rel, f"ok (max rel err {worst:.2g})")


@pytest.mark.parametrize("jacobian", ["dense", "sparse"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_adhesion_matches_mujoco(cone, jacobian):
    """Body transmission (adhesion): the moment is minus the mean contact-normal
    Jacobian of the body's contacts, included (from efc_J) and in the margin gap."""
    path = os.path.join(corpus_dir(), "mjwarp/actuation/adhesion.xml")
    root = stripped_root(path)
    opt = etree.SubElement(root, "option")
    opt.set("cone", cone)
    opt.set("tolerance", "1e-12")
    opt.set("jacobian", jacobian)
    root.insert(0, opt)
    m, mjm = load_pair_from_xml(path, etree.tostring(root), f"adh-{jacobian}")
    assert m.is_sparse == (jacobian == "sparse")
    rng = np.random.default_rng(5)
    nworld = mjm.nkey + 2
    qpos = np.concatenate([mjm.key_qpos, np.tile(mjm.qpos0, (2, 1))])
    qpos[-1, 0] = 0.3  # no contact at all: zero moment
    state = {"qpos": qpos, "qvel": 0.1 * rng.normal(size=(nworld, mjm.nv)),
             "ctrl": rng.uniform(0, 1, size=(nworld, mjm.nu))}
    d = tiphys.make_data(m, nworld)
    for name, value in state.items():
        getattr(d, name).from_numpy(value)
    poison(d, ("actuator_moment_dense", "qfrc_actuator", "actuator_velocity", "qacc"))
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    gaps = 0
    for w in range(nworld):
        for name, value in state.items():
            getattr(md, name)[:] = value[w]
        mujoco.mj_forward(mjm, md)
        gaps += int(sum(c.exclude == 1 for c in md.contact))
        for name, want in (("actuator_moment_dense", dense_moment(mjm, md)),
                           ("qfrc_actuator", md.qfrc_actuator),
                           ("actuator_velocity", md.actuator_velocity), ("qacc", md.qacc)):
            got = d.numpy(name)[w]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * max(1.0, np.abs(want).max()),
                                       err_msg=f"{name} world {w}")
    assert gaps > 0  # the contacts in the margin gap are exercised
    assert np.abs(d.numpy("actuator_moment_dense")[:-1]).max() > 0.1
