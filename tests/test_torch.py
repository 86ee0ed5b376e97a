"""PyTorch views of Data arrays (tiphys/interop.py): the view shares the Data's memory
on the CPU backend, both ways, with MuJoCo's shapes and the engine's dtype."""
import numpy as np
import pytest

import tiphys

torch = pytest.importorskip("torch")  # the test extra installs it (pyproject.toml)

XML = """<mujoco><worldbody><body><freejoint/><geom size=".1"/></body>
  <body pos="1 0 0"><joint name="h"/><geom type="capsule" fromto="0 0 0 0 0 .3" size=".05"/>
  </body></worldbody><actuator><motor joint="h"/></actuator></mujoco>"""


def test_views_share_the_datas_memory_both_ways():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 3)
    qpos = d.torch("qpos")
    assert tuple(qpos.shape) == (3, m.nq) and qpos.dtype == torch.float64
    np.testing.assert_array_equal(qpos.numpy(), d.numpy("qpos"))
    ctrl = d.torch("ctrl")
    ctrl.copy_(torch.tensor([[0.5], [-1.0], [2.0]], dtype=torch.float64))
    np.testing.assert_array_equal(d.numpy("ctrl"), [[0.5], [-1.0], [2.0]])
    tiphys.step(m, d)
    # the same view sees what the step wrote (no copy was taken)
    np.testing.assert_array_equal(qpos.numpy(), d.numpy("qpos"))
    assert qpos[0, 2].item() < 0  # the free body fell
    xpos = d.torch("xpos")
    assert tuple(xpos.shape) == (3, m.nbody, 3)
    np.testing.assert_array_equal(xpos.numpy(), d.numpy("xpos"))
    ncon = d.torch("ncon")
    assert ncon.dtype == torch.int32


def test_from_torch_and_copies():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 2)
    d.from_torch("ctrl", torch.tensor([1.5], dtype=torch.float32))  # every world
    np.testing.assert_array_equal(d.numpy("ctrl"), [[1.5], [1.5]])
    d.from_torch("qvel", torch.arange(2 * m.nv, dtype=torch.float64).reshape(2, m.nv))
    np.testing.assert_array_equal(d.numpy("qvel"), np.arange(2 * m.nv).reshape(2, m.nv))
    copied = d.torch("qvel", copy=True)
    copied.zero_()
    assert d.numpy("qvel").any()
    with pytest.raises(ValueError, match="takes shape"):
        d.from_torch("ctrl", torch.zeros(3, 2))
    with pytest.raises(KeyError, match="not a Data field"):
        d.torch("nope")
