"""Scratch and plans are declared (kernels/scratch.py): running every stage hangs no
new attribute on a Model or a Data, the stages' work arrays live in ``d.scratch`` and
their host plans in ``m.plans``, and forget_plans drops every plan."""
import copy
import math

import numpy as np
import pytest

import tiphys
from tiphys.kernels.scratch import PLANS, SCRATCH, Plans, Scratch

XML = """<mujoco><option integrator="INTEGRATOR"/>
  <worldbody><geom name="floor" type="plane" size="2 2 .1"/>
    <site name="top" pos="0 0 1"/>
    <body name="box" pos="0 0 .1"><freejoint/><geom name="b" type="box" size=".1 .1 .1"/>
      <site name="s"/></body>
    <body name="arm" pos=".5 0 .5"><joint name="h" type="hinge" axis="0 1 0" range="-1 1"/>
      <geom name="c" type="capsule" size=".03 .2"/></body>
  </worldbody>
  <tendon><spatial name="t"><site site="top"/><site site="s"/></spatial></tendon>
  <actuator><motor joint="h"/></actuator>
  <sensor><accelerometer site="s"/><touch site="s"/><distance geom1="b" geom2="c"/>
    <subtreelinvel body="box"/><tendonpos tendon="t"/></sensor>
</mujoco>"""


def _run_everything(m, d):
    tiphys.forward(m, d)
    for _ in range(3):
        tiphys.step(m, d)
    tiphys.inverse(m, d)
    tiphys.ray(m, d, np.array([0.0, 0.0, 2.0]), np.array([0.0, 0.0, -1.0]))
    tiphys.transition_fd(m, d, 1e-6, False)


@pytest.fixture(scope="module")
def model():
    return tiphys.load_model_from_string(XML.replace("INTEGRATOR", "RK4"))


def test_stages_hang_nothing_new_on_model_or_data():
    m = tiphys.load_model_from_string(XML.replace("INTEGRATOR", "implicit"))
    d = tiphys.make_data(m, 2)
    model_attrs, data_attrs = set(vars(m)), set(vars(d))
    _run_everything(m, d)
    tiphys.reset_data(m, d, world=1)
    assert set(vars(m)) == model_attrs
    assert set(vars(d)) == data_attrs
    assert isinstance(d.scratch, Scratch) and isinstance(m.plans, Plans)
    made = {name for name in SCRATCH if getattr(d.scratch, name) is not None}
    assert {"lu", "inverse", "fd_data", "reset_world", "geom_pairs"} <= made
    planned = {name for name in PLANS if getattr(m.plans, name) is not None}
    assert {"collision", "sensor", "sensor_acc", "ray_tables"} <= planned
    with pytest.raises(AttributeError):
        d.scratch.undeclared = 1
    with pytest.raises(AttributeError):
        m.plans.undeclared = 1


def test_forget_plans_and_copies_keep_their_own(model):
    m = copy.copy(model)
    d = tiphys.make_data(m, 1)
    tiphys.step(m, d)
    assert m.plans.collision is not None
    twin = copy.copy(m)
    assert twin.plans is not m.plans and twin.plans.collision is m.plans.collision
    twin.plans.collision = None  # a copy's later plans stay its own
    assert m.plans.collision is not None
    m.forget_plans()
    assert all(getattr(m.plans, name) is None for name in PLANS)
    tiphys.step(m, d)  # made again on use
    assert m.plans.collision is not None


def test_scratch_arrays_serve_the_data_worlds(model):
    """Scratch arrays carry their Data's serial load, as the Data fields do (the
    launch code picks serial loops by it): the worlds weighted by the model's work."""
    from tiphys.kernels.config import WORLDS_TAG, serial_load
    d = tiphys.make_data(model, 300)
    sizes = model.arrays.sizes
    cost = sizes["nv"] + 0.1 * sizes["nv"] ** 2 / max(1, sizes["ntree"]) + sizes["ngeom"]
    want = math.ceil(300 * cost / (23 + 0.1 * 23 * 23 + 18))
    assert d.serial_load == serial_load(300, sizes) == want
    tiphys.step(model, d)
    for array in d.scratch.rk4:
        assert getattr(array, WORLDS_TAG) == want
    assert getattr(d.qpos, WORLDS_TAG) == want
    assert tiphys.make_data(model, 1).serial_load == 1  # one world: serial loops
