"""Per-world model parameters (tiphys.set_param / get_param, tiphys/params.py).

Each world's forward (qacc, contacts' forces, constraint rows) is compared with MuJoCo's
mj_forward on a model given that world's values, f64 on the CPU, outputs poisoned with
NaN first; plus the reset state from a per-world qpos0, a forward on a subset of worlds,
the host plans that read parameters, and every bad input.
"""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.support import _forward_worlds

XML = """
<mujoco>
  <option timestep="0.002"><flag island="disable"/></option>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1"/>
    <body name="box" pos="0 0 0.09">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.08 0.1" mass="1.3"/>
    </body>
    <body name="ball" pos="0.4 0 0.11">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.12" mass="0.7"/>
    </body>
    <body name="arm" pos="-0.5 0 0.6" gravcomp="0.3">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.2" stiffness="0.5"
             range="-1 1" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" contype="0"
            conaffinity="0"/>
      <body pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03" contype="0"
              conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" gear="2"/>
    <position joint="elbow" kp="5"/>
  </actuator>
</mujoco>
"""
NWORLD = 3
OUTPUTS = ("qacc", "qfrc_passive", "qfrc_actuator", "qfrc_constraint", "actuator_force")


def _per_world(mjm, rng):
    """Per-world values of several parameters: world w scales them by its own factors."""
    scale = lambda shape: rng.uniform(0.5, 1.5, size=(NWORLD,) + shape)  # noqa: E731
    return {
        "body_mass": mjm.body_mass * scale((mjm.nbody,)),
        "geom_friction": mjm.geom_friction * scale((mjm.ngeom, 1)),
        "geom_size": mjm.geom_size * scale((mjm.ngeom, 1)),
        "dof_damping": mjm.dof_damping + scale((mjm.nv,)),
        "dof_frictionloss": np.stack([np.zeros(mjm.nv)] + [rng.uniform(0, 0.3, mjm.nv)
                                                           for _ in range(NWORLD - 1)]),
        "jnt_stiffness": mjm.jnt_stiffness * scale((mjm.njnt,)),
        "actuator_gainprm": mjm.actuator_gainprm * scale((mjm.nu, 1)),
        "body_gravcomp": np.stack([np.zeros(mjm.nbody)] * (NWORLD - 1) +
                                  [np.r_[0.0, 0.0, 0.5, 1.0, 0.4]]),
    }


def _state(mjm, rng):
    qpos = np.tile(mjm.qpos0, (NWORLD, 1))
    qpos[:, 2] -= rng.uniform(0.0, 0.01, NWORLD)  # the box presses into the floor
    qpos[:, 9] -= rng.uniform(0.0, 0.01, NWORLD)  # the ball too
    qpos[:, 14:16] = rng.uniform(-1.2, 1.2, (NWORLD, 2))  # past the hinge's range
    return {"qpos": qpos, "qvel": rng.normal(size=(NWORLD, mjm.nv)),
            "ctrl": rng.normal(size=(NWORLD, mjm.nu))}


def _forward(m, state):
    d = tiphys.make_data(m, NWORLD)
    for name, value in state.items():
        getattr(d, name).from_numpy(value)
    for name in OUTPUTS:
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape + tuple(getattr(arr, "element_shape", ())),
                               np.nan))
    tiphys.forward(m, d)
    return d


def _mujoco_world(xml, params, state, w):
    """MuJoCo's answer for world w: its parameters written into the compiled mjModel.
    One difference is taken over into the reference: tiphys computes the inertia of a
    simple dof (a free body's) from the current masses, where mj_crb copies dof_M0,
    which MuJoCo computes only when compiling (mj_setConst); so dof_M0 is taken from
    mj_setConst on a copy with that world's masses, and every other derived constant
    keeps its compiled value in both engines."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    for name, values in params.items():
        getattr(mjm, name)[:] = values[w]
    if "body_mass" in params or "body_inertia" in params:
        fresh = mujoco.MjModel.from_xml_string(xml)
        for name in ("body_mass", "body_inertia"):
            if name in params:
                getattr(fresh, name)[:] = params[name][w]
        mujoco.mj_setConst(fresh, mujoco.MjData(fresh))
        mjm.dof_M0[:] = fresh.dof_M0
    mjd = mujoco.MjData(mjm)
    for name, value in state.items():
        getattr(mjd, name)[:] = value[w]
    mujoco.mj_forward(mjm, mjd)
    return mjm, mjd


def _model_with_params(seed):
    """XML's model with _per_world's parameters set, and a random state per world."""
    mjm = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(seed)
    params, state = _per_world(mjm, rng), _state(mjm, rng)
    m = tiphys.load_model_from_string(XML)
    for name, values in params.items():
        tiphys.set_param(m, name, values)
    return m, params, state


def test_each_world_matches_mujoco_with_its_parameters():
    m, params, state = _model_with_params(3)
    d = _forward(m, state)
    got = {name: d.numpy(name) for name in OUTPUTS}
    ncon = d.numpy("ncon")
    for w in range(NWORLD):
        _, mjd = _mujoco_world(XML, params, state, w)
        assert ncon[w] == mjd.ncon > 0
        for name in OUTPUTS:
            np.testing.assert_allclose(got[name][w], getattr(mjd, name), rtol=1e-7,
                                       atol=1e-9, err_msg=f"{name}, world {w}")
    # the parameters did act: the worlds differ, and world 0 has no friction-loss rows
    assert not np.allclose(got["qacc"][0], got["qacc"][1])


def test_one_value_for_all_worlds_updates_the_host_copy():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    mass = mjm.body_mass * 2.0
    tiphys.set_param(m, "body_mass", mass)
    np.testing.assert_array_equal(m.arrays.body_mass, mass)
    np.testing.assert_array_equal(tiphys.get_param(m, "body_mass"), mass[None])
    assert m.param_worlds() == {}
    tiphys.set_param(m, "body_mass", np.stack([mass, mass * 3]))
    assert m.param_worlds() == {"body_mass": 2}
    np.testing.assert_array_equal(m.arrays.body_mass, mass)  # the compiled value stays
    assert tiphys.param_shape(m, "geom_friction") == (mjm.ngeom, 3)
    assert "body_mass" in tiphys.PARAM_FIELDS and "body_parentid" not in tiphys.PARAM_FIELDS


def test_per_world_qpos0_resets_each_world_to_its_own():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    qpos0 = np.tile(mjm.qpos0, (NWORLD, 1))
    qpos0[:, 0] = [0.0, 0.5, -0.5]
    d = tiphys.make_data(m, NWORLD)
    tiphys.set_param(m, "qpos0", qpos0)
    tiphys.reset_data(m, d)
    np.testing.assert_array_equal(d.numpy("qpos"), qpos0)
    d.qpos.from_numpy(np.zeros((NWORLD, mjm.nq)))
    tiphys.reset_data(m, d, world=2)
    np.testing.assert_array_equal(d.numpy("qpos")[2], qpos0[2])
    np.testing.assert_array_equal(d.numpy("qpos")[:2], 0.0)
    # autoreset of a world whose velocity went bad restores that world's qpos0
    qvel = np.zeros((NWORLD, mjm.nv))
    qvel[1, 0] = np.nan
    d.qvel.from_numpy(qvel)
    tiphys.check_vel(m, d)
    np.testing.assert_array_equal(d.numpy("qpos")[1], qpos0[1])
    np.testing.assert_array_equal(d.numpy("qpos")[0], 0.0)


def test_forward_on_some_worlds_uses_their_parameters():
    """check_acc's autoreset re-runs forward on the reset worlds only, gathered into a
    smaller Data: each keeps its own parameters there."""
    m, _, state = _model_with_params(5)
    whole = _forward(m, state)
    part = _forward(m, state)
    for name in OUTPUTS:
        getattr(part, name).fill(0)
    _forward_worlds(m, part, np.array([2, 0]))
    for name in OUTPUTS:
        want, got = whole.numpy(name), part.numpy(name)
        np.testing.assert_array_equal(got[[0, 2]], want[[0, 2]], err_msg=name)
        np.testing.assert_array_equal(got[1], 0.0, err_msg=name)


def test_gravcomp_acts_only_in_a_model_compiled_with_some():
    """As in MuJoCo (mj_gravcomp tests mjModel.ngravcomp), body_gravcomp given to a
    model compiled without gravity compensation has no effect."""
    xml = XML.replace('gravcomp="0.3"', "")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    assert m.ngravcomp == mjm.ngravcomp == 0
    rng = np.random.default_rng(4)
    state = _state(mjm, rng)
    gravcomp = np.tile(np.r_[0.0, 0.5, 0.5, 1.0, 1.0], (NWORLD, 1))
    tiphys.set_param(m, "body_gravcomp", gravcomp)
    d = _forward(m, state)
    _, mjd = _mujoco_world(xml, {"body_gravcomp": gravcomp}, state, 0)
    np.testing.assert_array_equal(d.numpy("qfrc_gravcomp")[0], mjd.qfrc_gravcomp)
    np.testing.assert_allclose(d.numpy("qacc")[0], mjd.qacc, rtol=1e-7, atol=1e-9)


def test_plans_follow_parameters_that_switch_a_stage_on():
    """The model is compiled without friction loss; giving it in one world adds that
    world's friction-loss rows (the host plan is made again)."""
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    rng = np.random.default_rng(9)
    state = _state(mjm, rng)
    d = _forward(m, state)
    nf_before = d.numpy("nf")
    loss = np.zeros((NWORLD, mjm.nv))
    loss[1] = 0.4
    tiphys.set_param(m, "dof_frictionloss", loss)
    d = _forward(m, state)
    nf = d.numpy("nf")
    assert nf_before.tolist() == [0] * NWORLD and nf.tolist() == [0, mjm.nv, 0]
    _, mjd = _mujoco_world(XML, {"dof_frictionloss": loss}, state, 1)
    np.testing.assert_allclose(d.numpy("qacc")[1], mjd.qacc, rtol=1e-7, atol=1e-9)


def test_bad_input_is_named():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    with pytest.raises(ValueError, match="no model field named 'body_mas'.*body_mass"):
        tiphys.set_param(m, "body_mas", mjm.body_mass)
    with pytest.raises(ValueError, match="body_parentid is not a per-world parameter"):
        tiphys.set_param(m, "body_parentid", mjm.body_parentid)
    with pytest.raises(ValueError, match=r"shape \(5,\).*not \(2, 4\)"):
        tiphys.set_param(m, "body_mass", np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"NaN at index \(1, 2\)"):
        bad = np.tile(mjm.body_mass, (2, 1))
        bad[1, 2] = np.nan
        tiphys.set_param(m, "body_mass", bad)
    with pytest.raises(TypeError, match="needs numbers"):
        tiphys.set_param(m, "body_mass", "heavy")
    with pytest.raises(TypeError, match="expected a tiphys.Model"):
        tiphys.set_param(mjm, "body_mass", mjm.body_mass)
    d = tiphys.make_data(m, NWORLD)
    tiphys.set_param(m, "body_mass", np.tile(mjm.body_mass, (2, 1)))
    with pytest.raises(ValueError, match=r"forward: .*Data's 3: body_mass \(2\)"):
        tiphys.forward(m, d)
    with pytest.raises(ValueError, match=r"make_data: .*Data's 4: body_mass \(2\)"):
        tiphys.make_data(m, 4)
    tiphys.set_param(m, "body_mass", mjm.body_mass)  # one value again: any nworld
    tiphys.forward(m, d)
