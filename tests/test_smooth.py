"""crb / factor_m / solve_m / mul_m / com_vel / passive / rne / fwd_acceleration against
mj_makeM, mj_factorM, mj_solveM, mj_mulM, mj_comVel, mj_passive, mj_rne and
mj_fwdAcceleration.

Corpus models (later-issue sections stripped in both engines) and hand-written models
that exercise springs of every joint type, gravcomp and the disable flags; several
worlds with different random states, outputs poisoned with NaN first, f64 on the CPU.
"""
import zlib

import mujoco
import numpy as np
import pytest

import tiphys
from conftest import record
from corpus_xfail import corpus_params, not_yet, stage_models
from oracle import stripped_corpus_pair

NWORLD = 3
OUTPUTS = ("crb", "qM", "qLDiagInv", "cvel", "cdof_dot", "qfrc_spring", "qfrc_damper",
           "qfrc_gravcomp", "qfrc_passive", "qfrc_bias", "qfrc_smooth", "qacc_smooth")
RTOL = 1e-9


def poison(d, names):
    for name in names:
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.to_numpy().shape, np.nan, dtype=arr.to_numpy().dtype))


def random_inputs(mjm, nworld, rng):
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-1.0, 1.0, size=(nworld, mjm.nq))
    return {
        "qpos": qpos,
        "qvel": rng.normal(size=(nworld, mjm.nv)),
        "qfrc_applied": rng.normal(size=(nworld, mjm.nv)),
        "xfrc_applied": rng.normal(size=(nworld, mjm.nbody, 6)) * (
            rng.uniform(size=(nworld, mjm.nbody, 1)) < 0.5),
    }


def run_tiphys(m, state, vec):
    nworld = state["qpos"].shape[0]
    d = tiphys.make_data(m, nworld)
    for name, value in state.items():
        if value.size:
            getattr(d, name).from_numpy(value)
    poison(d, OUTPUTS)
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.crb(m, d)
    tiphys.factor_m(m, d)
    tiphys.com_vel(m, d)
    tiphys.passive(m, d)
    tiphys.rne(m, d)
    tiphys.fwd_acceleration(m, d)
    out = {name: d.numpy(name) for name in OUTPUTS}
    if m.nv:
        y = tiphys.make_data(m, nworld).qvel  # any (nworld, nv) float ndarray
        y.from_numpy(vec)
        x = tiphys.make_data(m, nworld).qvel
        tiphys.solve_m(m, d, x, y)
        out["solve"] = x.to_numpy()[:, :m.nv]
        tiphys.mul_m(m, d, x, y)
        out["mul"] = x.to_numpy()[:, :m.nv]
        tiphys.solve_m(m, d, y, y)  # in place
        out["solve_inplace"] = y.to_numpy()[:, :m.nv]
        out["full"] = tiphys.full_m(m, d)
    return out


def run_mujoco(mjm, state, vec):
    md = mujoco.MjData(mjm)
    expected = []
    for w in range(state["qpos"].shape[0]):
        for name, value in state.items():
            getattr(md, name)[:] = value[w]
        mujoco.mj_kinematics(mjm, md)
        mujoco.mj_comPos(mjm, md)
        mujoco.mj_makeM(mjm, md)
        mujoco.mj_factorM(mjm, md)
        mujoco.mj_comVel(mjm, md)
        mujoco.mj_passive(mjm, md)
        mujoco.mj_rne(mjm, md, 0, md.qfrc_bias)
        mujoco.mj_fwdAcceleration(mjm, md)
        exp = {name: getattr(md, name).copy() for name in OUTPUTS}
        if mjm.nv:
            x = np.zeros(mjm.nv)
            mujoco.mj_solveM(mjm, md, x.reshape(1, -1), vec[w].reshape(1, -1).copy())
            exp["solve"] = exp["solve_inplace"] = x
            res = np.zeros(mjm.nv)
            mujoco.mj_mulM(mjm, md, res, vec[w].copy())
            exp["mul"] = res
            full = np.zeros((mjm.nv, mjm.nv))
            mujoco.mj_fullM(mjm, full, md.qM)
            exp["full"] = full
        expected.append(exp)
    return expected


def assert_match(ours, expected, rtol=RTOL):
    errors = {}
    for name, values in ours.items():
        for w, exp in enumerate(expected):
            want = np.asarray(exp[name])
            got = values[w].reshape(want.shape)
            assert not np.isnan(got).any(), f"{name}: world {w} not written"
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            err = float(np.abs(got - want).max(initial=0.0)) / scale
            errors[name] = max(errors.get(name, 0.0), err)
            assert err <= rtol, f"{name} world {w}: relative error {err:.3g}"
    return errors


def compare(m, mjm, seed, nworld=NWORLD):
    rng = np.random.default_rng(seed)
    state = random_inputs(mjm, nworld, rng)
    vec = rng.normal(size=(nworld, mjm.nv))
    return assert_match(run_tiphys(m, state, vec), run_mujoco(mjm, state, vec))


@pytest.mark.parametrize("rel", corpus_params("test_smooth", stage_models()))
def test_smooth_stages_match_mujoco_on_corpus(rel):
    with not_yet("test_smooth", "smooth", rel):
        m, mjm = stripped_corpus_pair(rel)
        compare(m, mjm, seed=zlib.crc32(rel.encode()))
    record("smooth", rel, "match")


SPRINGS = """
<mujoco>
  <option gravity="0.3 -0.5 -9.81" timestep="0.005"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="free" pos="0 0 1" gravcomp="0.5">
      <joint type="free" stiffness="3" damping="0.2" armature="0.1"/>
      <geom type="box" size=".1 .2 .3" mass="2"/>
      <body name="ball" pos="0 .1 -.5" quat="0.9 0.1 0.3 0.2" gravcomp="1">
        <joint type="ball" stiffness="2" damping="0.5" armature="0.05"/>
        <geom type="capsule" size=".05" fromto="0 0 0 .1 0 -.4"/>
        <body pos=".1 0 -.4">
          <joint axis="0 1 0" stiffness="4" springref="20" damping="1"/>
          <joint type="slide" axis="1 0 1" stiffness="5" springref=".1" armature=".2"/>
          <geom size=".1" pos=".05 0 0"/>
          <body pos="0 0 -.2" gravcomp="0.7">
            <joint axis="1 0 0" actuatorgravcomp="true" stiffness="1"/>
            <geom type="box" size=".05 .05 .1" euler="10 20 30"/>
          </body>
        </body>
      </body>
    </body>
    <body name="simple" pos="1 0 0">
      <joint type="slide" axis="1 0 0" damping=".3"/>
      <joint type="slide" axis="0 0 1" stiffness="2"/>
      <geom type="sphere" size=".1"/>
    </body>
    <body name="simplefree" pos="-1 0 1">
      <freejoint/>
      <geom type="ellipsoid" size=".1 .2 .3"/>
    </body>
    <body pos="0 2 0">
      <body name="welded" pos="0 0 1" gravcomp="2">
        <joint axis="0 0 1" damping="2"/>
        <geom type="box" size=".1 .1 .1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _with_flags(xml, **flags):
    attrs = " ".join(f'{k}="{v}"' for k, v in flags.items())
    return xml.replace('timestep="0.005"/>', f'timestep="0.005"><flag {attrs}/></option>')


@pytest.mark.parametrize("flags", [
    {}, {"gravity": "disable"}, {"spring": "disable"}, {"damper": "disable"},
    {"spring": "disable", "damper": "disable"},
])
def test_springs_dampers_gravcomp_match_mujoco(flags):
    xml = _with_flags(SPRINGS, **flags) if flags else SPRINGS
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert np.any(mjm.dof_simplenum), "the model should have simple dofs"
    errors = compare(m, mjm, seed=7, nworld=4)
    assert set(errors) >= set(OUTPUTS)


def test_per_world_parameters_are_used():
    """A '*' parameter given per world (dof_damping here) acts in its own world only."""
    m = tiphys.load_model_from_string(SPRINGS)
    damping = np.stack([m.arrays.dof_damping, 2.0 * m.arrays.dof_damping])
    tiphys.set_param(m, "dof_damping", damping)
    d = tiphys.make_data(m, 2)
    d.qvel.from_numpy(np.ones((2, m.nv)))
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.passive(m, d)
    damper = d.numpy("qfrc_damper")
    np.testing.assert_allclose(damper[1], 2.0 * damper[0])
    assert np.any(damper[0] != 0)


def test_fluid_forces_in_passive_match_mujoco():
    """Fluid forces are part of passive (more cases in test_integrators.py)."""
    xml = SPRINGS.replace('timestep="0.005"',
                          'timestep="0.005" density="1.2" viscosity="0.3"')
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    rng = np.random.default_rng(17)
    qvel = rng.normal(size=(2, mjm.nv))
    d = tiphys.make_data(m, 2)
    d.qvel.from_numpy(qvel)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    for w in range(2):
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        assert np.abs(md.qfrc_fluid).max() > 0
        np.testing.assert_allclose(d.numpy("qfrc_fluid")[w], md.qfrc_fluid, rtol=0, atol=1e-10)
        np.testing.assert_allclose(d.numpy("qfrc_passive")[w], md.qfrc_passive, rtol=0,
                                   atol=1e-10)


def test_com_vel_serial_tree_pass_for_many_worlds():
    """From SERIAL_TREE_MIN_WORLDS worlds on, com_vel runs one thread per world."""
    from tiphys.kernels.smooth import SERIAL_TREE_MIN_WORLDS
    m = tiphys.load_model_from_string(SPRINGS)
    mjm = mujoco.MjModel.from_xml_string(SPRINGS)
    nworld = SERIAL_TREE_MIN_WORLDS
    rng = np.random.default_rng(2)
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-1, 1, (nworld, mjm.nq))
    qvel = rng.normal(size=(nworld, mjm.nv))
    d = tiphys.make_data(m, nworld)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    poison(d, ("cvel", "cdof_dot"))
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.com_vel(m, d)
    md = mujoco.MjData(mjm)
    for w in (0, 1, nworld - 1):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_kinematics(mjm, md)
        mujoco.mj_comPos(mjm, md)
        mujoco.mj_comVel(mjm, md)
        for name in ("cvel", "cdof_dot"):
            np.testing.assert_allclose(d.numpy(name)[w], getattr(md, name), rtol=0,
                                       atol=1e-12, err_msg=name)
