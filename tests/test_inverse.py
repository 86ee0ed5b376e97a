"""inverse (mj_inverse) and compare_fwd_inv (mj_compareFwdInv) against MuJoCo 3.4.0.

Corpus models with contacts (pyramidal and elliptic cones, condim 1 to 6), joint and
tendon limits, friction loss, connect / weld / joint / tendon equalities and soft
solref / solimp: several worlds with random qpos (touching the floor), qvel and qacc
(each world its own scale, so rows land in every constraint state), outputs poisoned
first (NaN, -7); nefc, efc_state, efc_force, qfrc_constraint and qfrc_inverse are
compared world by world, each to 1e-9 of its largest magnitude in f64 (inverse is
direct: the same arithmetic up to summation order). The discrete-time inverse
(invdiscrete) with Euler, implicit and implicitfast likewise. compare_fwd_inv after an
unconverged forward (few iterations: both engines take the same iterates, island by
island)
against mj_compareFwdInv; and the round trip: Newton to tolerance 1e-12, then inverse
gives back qfrc_applied + J' xfrc_applied + qfrc_actuator and forward's constraint
forces, and compare_fwd_inv is at round-off, as MuJoCo's own check.

Run as a script (``python tests/test_inverse.py f32``) it prints the f32 errors of the
main comparison.
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

NWORLD = 4
TOL = 1e-9
# per-world scale of the random qacc: small ones leave the reference acceleration in
# charge (rows quadratic), large ones push rows out of contact, friction loss to its
# linear zones, and elliptic contacts into the cone zone
QACC_SCALES = (0.3, 3.0, 30.0, 300.0)
# mjtConstraintState
SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS, CONE = range(5)

# keyframes made for contacts: mjwarp/constraints.xml's keyframe 2 has contacts in
# every cone state
CONTACT_KEY = {"mjwarp/constraints.xml": 2}

_PAIRS = {}


# simple dofs (MuJoCo's dof_simplenum: M diagonal) coupled by a damped tendon: the
# implicitfast discrete map drops qDeriv off M's reduced sparsity
SIMPLE_SLIDES = """
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .1">
      <joint name="x" type="slide" axis="1 0 0" damping=".5"/>
      <joint name="y" type="slide" axis="0 1 0" range="-.1 .1"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size=".1"/>
    </body>
  </worldbody>
  <tendon>
    <fixed damping="3"><joint joint="x" coef="1"/><joint joint="y" coef="2"/></fixed>
  </tendon>
</mujoco>
"""


def load_pair(rel, flags=None, **opt):
    """tiphys and MuJoCo models of a corpus file (as written: actuators, tendons and
    equalities kept) or of an XML string, with options and flags changed; compiled
    once per module."""
    key = (rel, tuple(sorted((flags or {}).items())), tuple(sorted(opt.items())))
    if key not in _PAIRS:
        from_string = rel.lstrip().startswith("<")
        path = os.path.join(corpus_dir(), "inline.xml" if from_string else rel)
        root = etree.fromstring(rel) if from_string else etree.parse(path).getroot()
        el = root.find("option")
        if el is None:
            el = etree.Element("option")
            root.insert(0, el)
        for k, v in opt.items():
            el.set(k, v)
        if flags:
            flag = el.find("flag")
            if flag is None:
                flag = etree.SubElement(el, "flag")
            for k, v in flags.items():
                flag.set(k, v)
        if from_string:
            xml = etree.tostring(root).decode()
            _PAIRS[key] = (tiphys.load_model_from_string(xml),
                           mujoco.MjModel.from_xml_string(xml))
        else:
            _PAIRS[key] = load_pair_from_xml(path, etree.tostring(root), "inverse")
    return _PAIRS[key]


def random_state(mjm, rel, seed, nworld=NWORLD, free_world=None):
    """qpos with the robot of model ``rel`` touching the floor in every world (around
    the keyframe CONTACT_KEY names for it, else random joint angles and the root
    lowered until MuJoCo finds contacts), qvel, and qacc of per-world scale; world
    ``free_world`` is lifted off the floor."""
    rng = np.random.default_rng(seed)
    key = CONTACT_KEY.get(rel)
    if key is not None:
        qpos = np.tile(mjm.key_qpos[key], (nworld, 1))
        qpos += rng.uniform(-0.005, 0.005, qpos.shape)
    else:
        qpos = np.tile(mjm.qpos0, (nworld, 1))
        root = None
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            jtype = mjm.jnt_type[j]
            if jtype == mujoco.mjtJoint.mjJNT_FREE:
                root = adr + 2
            elif jtype == mujoco.mjtJoint.mjJNT_SLIDE and root is None and \
                    np.allclose(mjm.jnt_axis[j], [0, 0, 1]):
                root = adr  # planar robots: the vertical slide
            elif jtype in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                qpos[:, adr] += rng.uniform(-0.6, 0.6, nworld)  # some past their limits
        md = mujoco.MjData(mjm)
        for _ in range(60):
            ncon = []
            for q in qpos:
                md.qpos[:] = q
                mujoco.mj_kinematics(mjm, md)
                mujoco.mj_collision(mjm, md)
                ncon.append(md.ncon)
            if min(ncon) > 0 or root is None:
                break
            qpos[:, root] -= 0.05
        if free_world is not None:  # lifted, limited joints mid-range: no rows
            qpos[free_world] = mjm.qpos0
            qpos[free_world, root] += 5.0
            for j in np.flatnonzero(mjm.jnt_limited):
                if mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                    qpos[free_world, mjm.jnt_qposadr[j]] = mjm.jnt_range[j].mean()
    qvel = rng.normal(scale=0.5, size=(nworld, mjm.nv))
    qacc = rng.normal(size=(nworld, mjm.nv)) * np.array(QACC_SCALES[:nworld])[:, None]
    return qpos, qvel, qacc


def _full(arr, value):
    from tiphys.backend import numpy_dtype
    shape = arr.shape + tuple(getattr(arr, "element_shape", ()) or ())
    return np.full(shape, value, dtype=numpy_dtype(arr))


def poison(d):
    for name in ("qfrc_inverse", "qfrc_constraint", "efc_force", "solver_fwdinv"):
        arr = getattr(d, name)
        arr.from_numpy(_full(arr, np.nan))
    d.efc_state.from_numpy(_full(d.efc_state, -7))


def tiphys_inverse(m, qpos, qvel, qacc):
    d = tiphys.make_data(m, qpos.shape[0])
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    d.qacc.from_numpy(qacc)
    poison(d)
    tiphys.inverse(m, d)
    return d


def assert_inverse_match(d, mjm, qpos, qvel, qacc, tol=TOL):
    """tiphys's inverse (already run on d) against mj_inverse world by world; returns
    (the histogram of MuJoCo's efc_state over all worlds, the worst relative error)."""
    got = {name: d.numpy(name) for name in ("nefc", "efc_state", "efc_force",
                                             "qfrc_constraint", "qfrc_inverse", "qacc")}
    np.testing.assert_array_equal(got["qacc"], qacc)  # inverse leaves qacc as given
    md = mujoco.MjData(mjm)
    states = np.zeros(5, dtype=int)
    worst = 0.0
    for w in range(qpos.shape[0]):
        md.qpos[:], md.qvel[:], md.qacc[:] = qpos[w], qvel[w], qacc[w]
        mujoco.mj_inverse(mjm, md)
        n = md.nefc
        assert got["nefc"][w] == n, f"nefc world {w}"
        np.testing.assert_array_equal(got["efc_state"][w, :n], md.efc_state,
                                      err_msg=f"efc_state world {w}")
        states += np.bincount(md.efc_state, minlength=5)
        for name, ours, want in (
                ("efc_force", got["efc_force"][w, :n], md.efc_force),
                ("qfrc_constraint", got["qfrc_constraint"][w], md.qfrc_constraint),
                ("qfrc_inverse", got["qfrc_inverse"][w], md.qfrc_inverse)):
            scale = max(1.0, np.abs(want).max(initial=0))
            err = np.abs(ours - want).max(initial=0) / scale
            worst = max(worst, err)
            assert err <= tol, f"{name} world {w}: relative error {err:.3g}"
    return states, worst


# ---------------------------------------------------------------------------------------
# mj_inverse
# ---------------------------------------------------------------------------------------

INVERSE_CASES = {
    "ant-pyramidal": ("gym/ant.xml", {}, dict(cone="pyramidal")),
    "humanoid-elliptic": ("gym/humanoid.xml", {}, dict(cone="elliptic", impratio="3")),
    "hopper": ("gym/hopper.xml", {}, {}),
    # connect, weld, joint and tendon equalities, friction loss, ball and tendon limits,
    # condim 1/3/4/6 contacts, custom and negative solref / solimp
    "constraints-elliptic": ("mjwarp/constraints.xml", {}, dict(cone="elliptic")),
    "constraints-pyramidal": ("mjwarp/constraints.xml", {}, dict(cone="pyramidal")),
    # sparse Jacobians: J qacc and J' f over the rows' non-zeros
    "constraints-elliptic-sparse": ("mjwarp/constraints.xml", {},
                                    dict(cone="elliptic", jacobian="sparse")),
    "constraints-pyramidal-sparse": ("mjwarp/constraints.xml", {},
                                     dict(cone="pyramidal", jacobian="sparse")),
    "humanoid-elliptic-sparse": ("gym/humanoid.xml", {},
                                 dict(cone="elliptic", impratio="3", jacobian="sparse")),
}
# states each case must produce somewhere (so no comparison passes vacuously)
EXPECTED_STATES = {
    "ant-pyramidal": (SATISFIED, QUADRATIC),
    "humanoid-elliptic": (QUADRATIC, CONE),
    "hopper": (SATISFIED, QUADRATIC),
    "constraints-elliptic": (QUADRATIC, LINEARNEG, LINEARPOS, CONE),
    "constraints-pyramidal": (SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS),
    "constraints-elliptic-sparse": (QUADRATIC, LINEARNEG, LINEARPOS, CONE),
    "constraints-pyramidal-sparse": (SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS),
    "humanoid-elliptic-sparse": (QUADRATIC, CONE),
}


@pytest.mark.parametrize("case", list(INVERSE_CASES))
def test_inverse_matches_mj_inverse(case):
    rel, flags, opt = INVERSE_CASES[case]
    m, mjm = load_pair(rel, flags, **opt)
    qpos, qvel, qacc = random_state(mjm, rel, seed=len(case))
    d = tiphys_inverse(m, qpos, qvel, qacc)
    assert m.is_sparse == case.endswith("-sparse") == bool(mujoco.mj_isSparse(mjm))
    states, _ = assert_inverse_match(d, mjm, qpos, qvel, qacc)
    for state in EXPECTED_STATES[case]:
        assert states[state] > 0, f"no row in state {state}: {states}"


@pytest.mark.parametrize("integrator, rel", [
    ("Euler", "gym/hopper.xml"),  # dof damping
    ("implicit", "gym/ant.xml"),
    ("implicitfast", "mjwarp/constraints.xml"),  # tendon damping, position actuator kv
    ("implicitfast", SIMPLE_SLIDES),
], ids=["Euler-hopper", "implicit-ant", "implicitfast-constraints",
        "implicitfast-simple-dofs"])
def test_invdiscrete_matches_mj_inverse(integrator, rel):
    m, mjm = load_pair(rel, {"invdiscrete": "enable"}, integrator=integrator,
                       cone="elliptic")
    assert np.any(mjm.dof_damping > 0)  # the Euler map is not the identity
    qpos, qvel, qacc = random_state(mjm, rel, seed=len(rel) + 7)
    d = tiphys_inverse(m, qpos, qvel, qacc)
    assert_inverse_match(d, mjm, qpos, qvel, qacc)
    # the discrete map matters: MuJoCo's continuous-time inverse of the same qacc differs
    md = mujoco.MjData(mjm)
    md.qpos[:], md.qvel[:], md.qacc[:] = qpos[-1], qvel[-1], qacc[-1]
    mjm.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
    try:
        mujoco.mj_inverse(mjm, md)
    finally:
        mjm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
    assert np.abs(md.qfrc_inverse - d.numpy("qfrc_inverse")[-1]).max() > 1e-6


def test_invdiscrete_with_rk4_raises():
    m, _ = load_pair("gym/hopper.xml", {"invdiscrete": "enable"}, integrator="RK4")
    d = tiphys.make_data(m, 1)
    with pytest.raises(ValueError, match="RK4"):
        tiphys.inverse(m, d)


# ---------------------------------------------------------------------------------------
# mj_compareFwdInv and the forward -> inverse round trip
# ---------------------------------------------------------------------------------------

def _forward_inputs(mjm, seed, nworld=NWORLD):
    """ctrl, qfrc_applied and xfrc_applied, random per world."""
    rng = np.random.default_rng(seed)
    ctrl = rng.uniform(-1, 1, (nworld, mjm.nu))
    lo, hi = mjm.actuator_ctrlrange[:, 0], mjm.actuator_ctrlrange[:, 1]
    limited = mjm.actuator_ctrllimited.astype(bool)
    ctrl[:, limited] = lo[limited] + (ctrl[:, limited] + 1) / 2 * (hi - lo)[limited]
    qfrc = rng.normal(size=(nworld, mjm.nv))
    xfrc = rng.normal(size=(nworld, mjm.nbody, 6))
    xfrc[:, 0] = 0
    return ctrl, qfrc, xfrc


def _tiphys_forward(m, qpos, qvel, ctrl, qfrc, xfrc):
    d = tiphys.make_data(m, qpos.shape[0])
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    if m.nu:
        d.ctrl.from_numpy(ctrl)
    d.qfrc_applied.from_numpy(qfrc)
    d.xfrc_applied.from_numpy(xfrc)
    tiphys.forward(m, d)
    return d


def _mujoco_forward(mjm, md, w, qpos, qvel, ctrl, qfrc, xfrc):
    mujoco.mj_resetData(mjm, md)
    md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
    md.ctrl[:], md.qfrc_applied[:], md.xfrc_applied[:] = ctrl[w], qfrc[w], xfrc[w]
    mujoco.mj_forward(mjm, md)


@pytest.mark.parametrize("rel, opt", [
    ("mjwarp/constraints.xml", dict(cone="elliptic", iterations="1")),  # Newton
    ("gym/ant.xml", dict(solver="CG", iterations="3")),  # world 0 in the air: nefc 0
], ids=["constraints-newton", "ant-cg"])
def test_compare_fwd_inv_matches_mujoco(rel, opt):
    m, mjm = load_pair(rel, {}, **opt)
    qpos, qvel, _ = random_state(mjm, rel, seed=5, free_world=0 if "ant" in rel else None)
    ctrl, qfrc, xfrc = _forward_inputs(mjm, seed=6)
    d = _tiphys_forward(m, qpos, qvel, ctrl, qfrc, xfrc)
    kept = {name: d.numpy(name) for name in ("efc_force", "efc_state", "qfrc_constraint")}
    d.solver_fwdinv.from_numpy(_full(d.solver_fwdinv, np.nan))
    tiphys.compare_fwd_inv(m, d)
    got = d.numpy("solver_fwdinv")
    for name, value in kept.items():  # forward's results are kept
        np.testing.assert_array_equal(d.numpy(name), value, err_msg=name)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        _mujoco_forward(mjm, md, w, qpos, qvel, ctrl, qfrc, xfrc)
        mujoco.mj_compareFwdInv(mjm, md)
        want = md.solver_fwdinv
        if md.nefc == 0:
            np.testing.assert_array_equal(got[w], [0.0, 0.0])
            continue
        # the solver's qfrc_constraint is J' f(J qacc - aref) of its own qacc: the first
        # gap is round-off; unconverged, the second is far above it
        scale = max(1.0, np.abs(md.qfrc_inverse).max(), np.abs(md.qfrc_constraint).max())
        assert abs(got[w, 0] - want[0]) <= 1e-9 * scale, (w, got[w], want)
        assert want[1] > 1e-6 * scale, want
        np.testing.assert_allclose(got[w, 1], want[1], rtol=1e-6, err_msg=f"world {w}")
    if "ant" in rel:
        assert d.numpy("nefc")[0] == 0 and d.numpy("nefc")[1:].min() > 0


def test_step_with_fwdinv_flag_fills_solver_fwdinv():
    """<flag fwdinv="enable"/>: mj_step compares forward and inverse before integrating;
    step does the same (solver_fwdinv after one step) and the trajectory is unchanged."""
    rel = "mjwarp/constraints.xml"
    m, mjm = load_pair(rel, {"fwdinv": "enable"}, cone="elliptic",
                       iterations="1")
    qpos, qvel, _ = random_state(mjm, rel, seed=7)
    ctrl, qfrc, xfrc = _forward_inputs(mjm, seed=8)
    d = _tiphys_forward(m, qpos, qvel, ctrl, qfrc, xfrc)
    d.solver_fwdinv.from_numpy(_full(d.solver_fwdinv, np.nan))
    tiphys.step(m, d)
    got = d.numpy("solver_fwdinv")
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        mujoco.mj_resetData(mjm, md)
        md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
        md.ctrl[:], md.qfrc_applied[:], md.xfrc_applied[:] = ctrl[w], qfrc[w], xfrc[w]
        mujoco.mj_step(mjm, md)
        scale = max(1.0, np.abs(md.qfrc_inverse).max(), np.abs(md.qfrc_constraint).max())
        assert md.solver_fwdinv[1] > 1e-6 * scale
        assert abs(got[w, 0] - md.solver_fwdinv[0]) <= 1e-9 * scale, (w, got[w])
        np.testing.assert_allclose(got[w, 1], md.solver_fwdinv[1], rtol=1e-6)
        np.testing.assert_allclose(d.numpy("qpos")[w], md.qpos, rtol=0, atol=1e-9)


@pytest.mark.parametrize("rel, opt", [
    ("mjwarp/constraints.xml", dict(cone="elliptic")),
    ("gym/humanoid.xml", dict(cone="pyramidal")),
], ids=["constraints-elliptic", "humanoid-pyramidal"])
def test_inverse_of_newton_forward_gives_back_the_applied_forces(rel, opt):
    m, mjm = load_pair(rel, None, solver="Newton", tolerance="1e-12", iterations="200",
                       ls_iterations="50", **opt)
    qpos, qvel, _ = random_state(mjm, rel, seed=9)
    ctrl, qfrc, xfrc = _forward_inputs(mjm, seed=10)
    d = _tiphys_forward(m, qpos, qvel, ctrl, qfrc, xfrc)
    fwd = {name: d.numpy(name) for name in ("efc_force", "qfrc_constraint", "qfrc_smooth",
                                            "qfrc_passive", "qfrc_bias", "nefc")}
    assert fwd["nefc"].min() > 0
    tiphys.compare_fwd_inv(m, d)
    fwdinv = d.numpy("solver_fwdinv")
    poison(d)
    tiphys.inverse(m, d)  # qacc from forward
    # qfrc_applied + J' xfrc_applied + qfrc_actuator, as forward summed it
    applied = fwd["qfrc_smooth"] - fwd["qfrc_passive"] + fwd["qfrc_bias"]
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        _mujoco_forward(mjm, md, w, qpos, qvel, ctrl, qfrc, xfrc)
        mujoco.mj_compareFwdInv(mjm, md)
        scale = max(1.0, np.abs(applied[w]).max(), np.abs(fwd["qfrc_constraint"][w]).max())
        # as small as MuJoCo's own gaps after its converged forward
        assert fwdinv[w].max() <= max(1e-8 * scale, 10 * md.solver_fwdinv.max()), \
            (w, fwdinv[w], md.solver_fwdinv)
        np.testing.assert_allclose(d.numpy("qfrc_inverse")[w], applied[w], rtol=0,
                                   atol=1e-8 * scale, err_msg=f"qfrc_inverse world {w}")
        np.testing.assert_allclose(d.numpy("qfrc_constraint")[w], fwd["qfrc_constraint"][w],
                                   rtol=0, atol=1e-8 * scale, err_msg=f"world {w}")
        n = fwd["nefc"][w]
        np.testing.assert_allclose(d.numpy("efc_force")[w, :n], fwd["efc_force"][w, :n],
                                   rtol=0, atol=1e-8 * scale, err_msg=f"world {w}")


def _main(precision):
    """Errors of the main comparison at a given precision (the script mode)."""
    tiphys.init(arch="cpu", precision=precision)
    tol = TOL if precision == "f64" else 1e-3
    for case, (rel, flags, opt) in INVERSE_CASES.items():
        m, mjm = load_pair(rel, flags, **opt)
        qpos, qvel, qacc = random_state(mjm, rel, seed=len(case))
        if precision == "f32":  # both engines start from the state tiphys stores
            qpos, qvel, qacc = (x.astype(np.float32).astype(np.float64)
                                for x in (qpos, qvel, qacc))
        d = tiphys_inverse(m, qpos, qvel, qacc)
        try:
            _, worst = assert_inverse_match(d, mjm, qpos, qvel, qacc, tol=tol)
            print(f"{case}: worst relative error {worst:.3g}")
        except AssertionError as exc:  # f32 may flip a state right at a zone boundary
            print(f"{case}: {' '.join(str(exc).split())[:200]}")


if __name__ == "__main__":
    _main(sys.argv[1] if len(sys.argv) > 1 else "f64")
