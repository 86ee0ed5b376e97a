"""Name-bound kernel arguments (kernels/bind.py): parameters named as Model and Data
fields (and model sizes) are taken from them, the rest from the call; unknown names
fail loudly; a field array assigned anew is picked up."""
import numpy as np
import pytest
import taichi as ti

import tiphys
from tiphys.kernels.bind import launch

ND = ti.types.ndarray()

XML = """<mujoco><worldbody>
  <body><joint type="hinge"/><geom size=".1" mass="2"/></body>
  <body pos="1 0 0"><joint type="slide"/><geom size=".1" mass="3"/></body>
</worldbody></mujoco>"""


@ti.kernel
def _weighted(body_mass: ND, nbody: ti.i32, qpos: ND, scale: float, out: ND):
    for w in range(qpos.shape[0]):
        total = 0.0
        for b in range(nbody):
            total += body_mass[w % body_mass.shape[0], b]
        out[w] = scale * total + qpos[w, 0]


@ti.kernel
def _unbound(qpos: ND, no_such_field: ND):
    for w in range(qpos.shape[0]):
        qpos[w, 0] = no_such_field[w]


@pytest.fixture(scope="module")
def md():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 3)
    return m, d


def test_parameters_are_taken_by_name_from_data_model_and_the_call(md):
    m, d = md
    d.qpos.from_numpy(np.array([[0.5, 0.0], [1.5, 0.0], [2.5, 0.0]]))
    out = ti.ndarray(float, 3)
    launch(_weighted, m, d, scale=2.0, out=out)
    np.testing.assert_allclose(out.to_numpy(), 2.0 * 5.0 + np.array([0.5, 1.5, 2.5]))
    # a given value wins over the field of the same name
    qpos = ti.ndarray(float, (3, 2))
    qpos.fill(-1.0)
    launch(_weighted, m, d, scale=1.0, out=out, qpos=qpos)
    np.testing.assert_allclose(out.to_numpy(), np.full(3, 4.0))


def test_a_field_assigned_anew_is_used_by_the_next_launch(md):
    m, d = md
    out = ti.ndarray(float, 3)
    launch(_weighted, m, d, scale=1.0, out=out)
    before = out.to_numpy()
    saved = m.body_mass
    heavier = ti.ndarray(float, saved.shape)
    heavier.from_numpy(saved.to_numpy() * 10.0)
    m.body_mass = heavier
    try:
        launch(_weighted, m, d, scale=1.0, out=out)
        np.testing.assert_allclose(out.to_numpy() - d.numpy("qpos")[:, 0],
                                   10.0 * (before - d.numpy("qpos")[:, 0]))
    finally:
        m.body_mass = saved
    launch(_weighted, m, d, scale=1.0, out=out)
    np.testing.assert_array_equal(out.to_numpy(), before)


def test_unknown_names_are_errors_naming_kernel_and_parameter(md):
    m, d = md
    with pytest.raises(TypeError, match=r"_unbound.*'no_such_field'"):
        launch(_unbound, m, d)
    out = ti.ndarray(float, 3)
    with pytest.raises(TypeError, match=r"_weighted.*no parameter named sclae"):
        launch(_weighted, m, d, sclae=1.0, scale=1.0, out=out)
