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


@ti.kernel
def _accumulate(body_mass: ND, nbody: ti.i32, qvel: ND, scale: float):
    for w in range(qvel.shape[0]):
        qvel[w, 0] += scale * body_mass[w % body_mass.shape[0], nbody - 1]


def test_repeated_calls_launch_directly_and_are_still_counted(md):
    """A call with the same given values launches its kept prepared launch (a replayed
    context on a CPU backend); count_launches still counts it; the sums come out as
    launches one by one would make them."""
    from tiphys import launch as launches
    m, d = md
    d.qvel.fill(0.0)
    for _ in range(3):
        launch(_accumulate, m, d, scale=0.5)
    np.testing.assert_allclose(d.numpy("qvel")[:, 0], np.full(3, 1.5 * 3.0))
    kept = [key for key in d.scratch.bound[2] if isinstance(key, tuple) and
            key[0] is _accumulate and ("scale", 0.5) in key]
    assert len(kept) == int(launches.REPLAY["on"])
    with launches.count_launches() as counter:
        launch(_accumulate, m, d, scale=0.5)
        launch(_accumulate, m, d, scale=0.5)
    assert counter["n"] == 2
    np.testing.assert_allclose(d.numpy("qvel")[:, 0], np.full(3, 2.5 * 3.0))
    # an array of the caller's own (not the Data's) is never kept by the cache
    out = ti.ndarray(float, 3)
    before = len(d.scratch.bound[2])
    launch(_weighted, m, d, scale=1.0, out=out)
    launch(_weighted, m, d, scale=1.0, out=out)
    assert not any(isinstance(key, tuple) and ("out", out) in key
                   for key in d.scratch.bound[2])
    assert len(d.scratch.bound[2]) <= before + 1  # at most the names' plan
