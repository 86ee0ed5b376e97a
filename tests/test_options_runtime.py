"""Options set at run time (``m.opt.timestep = ...``), as in MuJoCo: each change takes
effect at the next step in every world, the same as MuJoCo with the same change."""
import copy
import dataclasses

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.kernels.consts import CONE_ELLIPTIC, INT_RK4, SOL_CG

XML = """
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .2">
      <freejoint/>
      <geom type="box" size=".1 .08 .06"/>
    </body>
    <body pos=".3 0 .3">
      <freejoint/>
      <geom type="capsule" size=".04 .1" euler="0 1 0"/>
    </body>
    <body pos="-.3 0 .5">
      <joint name="hinge" type="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
</mujoco>
"""

# (field, MuJoCo value, tiphys value: the same, or the MJCF keyword)
CHANGES = [
    ("timestep", 0.004, 0.004),
    ("gravity", [0.0, 1.0, -5.0], (0.0, 1.0, -5.0)),
    ("integrator", mujoco.mjtIntegrator.mjINT_RK4, "RK4"),
    ("integrator", mujoco.mjtIntegrator.mjINT_IMPLICITFAST, "implicitfast"),
    ("cone", mujoco.mjtCone.mjCONE_ELLIPTIC, CONE_ELLIPTIC),
    ("solver", mujoco.mjtSolver.mjSOL_CG, "CG"),
    ("iterations", 3, 3),
    ("impratio", 5.0, 5.0),
    ("wind", [2.0, 0.0, 0.0], [2.0, 0.0, 0.0]),
    ("density", 1.2, 1.2),
    ("o_margin", 0.01, 0.01),
    ("disableflags", int(mujoco.mjtDisableBit.mjDSBL_CONTACT),
     int(mujoco.mjtDisableBit.mjDSBL_CONTACT)),
    ("enableflags", int(mujoco.mjtEnableBit.mjENBL_OVERRIDE),
     int(mujoco.mjtEnableBit.mjENBL_OVERRIDE)),
]


def _run(m, d, mjm, mjd, nstep):
    for _ in range(nstep):
        mujoco.mj_step(mjm, mjd)
        tiphys.step(m, d)
    np.testing.assert_allclose(d.numpy("qpos")[0], mjd.qpos, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(d.numpy("qvel")[1], mjd.qvel, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("field,mj_value,value", CHANGES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CHANGES)])
def test_a_change_takes_effect_at_the_next_step_as_in_mujoco(field, mj_value, value):
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjd = mujoco.MjData(mjm)
    mjd.ctrl[:] = 0.3
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 2)
    d.ctrl.from_numpy(np.full((2, 1), 0.3))
    _run(m, d, mjm, mjd, 20)
    setattr(mjm.opt, field, mj_value)
    setattr(m.opt, field, value)
    assert np.allclose(getattr(m.opt, field), getattr(mjm.opt, field))
    _run(m, d, mjm, mjd, 30)


def test_options_read_back_and_replace_whole():
    m = tiphys.load_model_from_string(XML)
    m.opt.integrator = "RK4"
    assert m.opt.integrator == INT_RK4 and m.opt.frozen.integrator == INT_RK4
    m.opt = dataclasses.replace(m.opt.frozen, solver=SOL_CG, integrator=0)
    assert m.opt.solver == SOL_CG and m.opt.integrator == 0
    other = copy.copy(m)
    other.opt.timestep = 0.01
    assert m.opt.timestep == 0.002 and other.opt.timestep == 0.01


def test_bad_values_name_the_field():
    m = tiphys.load_model_from_string(XML)
    with pytest.raises(ValueError, match="opt.timestep: expected a number"):
        m.opt.timestep = "fast"
    with pytest.raises(ValueError, match="opt.integrator: expected one of Euler, RK4"):
        m.opt.integrator = "RK5"
    with pytest.raises(ValueError, match="opt.gravity: expected 3 numbers"):
        m.opt.gravity = (0, -9.81)
    with pytest.raises(ValueError, match="opt.iterations: expected a non-negative integer"):
        m.opt.iterations = -2
    with pytest.raises(AttributeError, match="opt has no field 'timestamp'"):
        m.opt.timestamp = 0.1
    with pytest.raises(TypeError, match="m.opt takes an Option"):
        m.opt = {"timestep": 0.1}
    assert m.opt.timestep == 0.002 and m.opt.integrator == 0  # nothing changed


def test_switching_jacobian_applies_to_new_data_and_old_data_says_so():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 1)
    m.opt.jacobian = "sparse"
    with pytest.raises(ValueError, match="made with dense constraint Jacobians.*make a new"):
        tiphys.step(m, d)
    d2 = tiphys.make_data(m, 1)
    tiphys.step(m, d2)
    assert d2.is_sparse


def test_sleep_flag_turned_on_and_off_at_run_time():
    """<flag sleep> set in m.opt.enableflags at run time: resting trees fall asleep as
    in MuJoCo with the same change; turned off again, every tree wakes (mj_wake) and
    steps on as MuJoCo's (the hinge's motor keeps its tree awake throughout)."""
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjd = mujoco.MjData(mjm)
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 2)
    bit = int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    asleep = []
    for step in range(700):
        if step in (0, 600):
            on = step == 0
            mjm.opt.enableflags = (mjm.opt.enableflags | bit) if on else \
                (mjm.opt.enableflags & ~bit)
            m.opt.enableflags = (int(m.opt.enableflags) | bit) if on else \
                (int(m.opt.enableflags) & ~bit)
        mujoco.mj_step(mjm, mjd)
        tiphys.step(m, d)
        for w in range(2):
            np.testing.assert_array_equal(d.numpy("tree_asleep")[w], mjd.tree_asleep)
            np.testing.assert_array_equal(d.numpy("body_awake")[w], mjd.body_awake)
            np.testing.assert_allclose(d.numpy("qpos")[w], mjd.qpos, atol=1e-8)
        asleep.append(int(np.sum(mjd.tree_asleep >= 0)))
    assert max(asleep[:600]) == 2 and asleep[-1] == 0  # box and capsule slept, then woke
