"""Saved models (tiphys.saved): a model written by save_model and read by load_model
has every host array, name and option of the compiled one, its per-world parameters,
and steps bit for bit as the original."""
import os

import numpy as np
import pytest
from oracle import corpus_dir

import tiphys
from tiphys.errors import ModelError

MODELS = ("gym/humanoid.xml", "gym/ant.xml", "mjwarp/tendon/fixed.xml")


def _same_arrays(a, b):
    names = {k for k, v in vars(a).items() if isinstance(v, np.ndarray)}
    assert names == {k for k, v in vars(b).items() if isinstance(v, np.ndarray)}
    for k in names:
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype and x.shape == y.shape, k
        np.testing.assert_array_equal(x, y, err_msg=k)
    assert a.sizes == b.sizes and a.names == b.names and a.vis == b.vis
    assert a.model_name == b.model_name


@pytest.mark.parametrize("name", MODELS)
def test_a_saved_model_is_the_compiled_one(tmp_path, name):
    path = os.path.join(corpus_dir(), name)
    if not os.path.exists(path):
        pytest.fail(f"corpus model {name} missing: run make corpus")
    m = tiphys.load_model(path)
    m.opt.timestep = 0.004  # options set since compiling are saved too
    file = tmp_path / "model.npz"
    tiphys.save_model(m, file)
    m2 = tiphys.load_model(str(file))
    _same_arrays(m.arrays, m2.arrays)
    assert m2.opt == m.opt and m2.opt.timestep == 0.004
    for mm in (m, m2):
        d = tiphys.make_data(mm, 2)
        qvel = np.random.default_rng(0).normal(0, 0.3, (2, mm.nv))
        d.qvel.from_numpy(qvel)
        d.ctrl.from_numpy(np.full((2, max(1, mm.nu)), 0.2))
        for _ in range(5):
            tiphys.step(mm, d)
        mm.result = d.numpy("qpos")
    np.testing.assert_array_equal(m2.result, m.result)


def test_per_world_parameters_are_saved(tmp_path):
    m = tiphys.load_model(os.path.join(corpus_dir(), "gym/ant.xml"))
    friction = np.tile(m.arrays.geom_friction, (3, 1, 1)) * [[[0.5]], [[1.0]], [[1.5]]]
    tiphys.set_param(m, "geom_friction", friction)
    tiphys.save_model(m, tmp_path / "ant.npz")
    m2 = tiphys.load_model(str(tmp_path / "ant.npz"))
    np.testing.assert_array_equal(tiphys.get_param(m2, "geom_friction"), friction)


def test_bad_files_name_the_file(tmp_path):
    junk = tmp_path / "junk.npz"
    np.savez(junk, x=np.zeros(3))
    with pytest.raises(ModelError, match="junk.npz.*not a saved tiphys model"):
        tiphys.saved.load_saved_model(str(junk))
    m = tiphys.load_model(os.path.join(corpus_dir(), "gym/ant.xml"))
    old = tmp_path / "old.npz"
    tiphys.save_model(m, old)
    archive = dict(np.load(old))
    import json
    meta = json.loads(archive["__tiphys_meta__"].tobytes().decode())
    meta["version"] = 99
    archive["__tiphys_meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(old, **archive)
    with pytest.raises(ModelError, match="version 99; this tiphys reads"):
        tiphys.load_model(str(old))


def test_copy_model_is_independent_and_steps_the_same():
    """copy_model (mj_copyModel): its own arrays, options and per-world parameters; a
    change to one model leaves the other as it was, and unchanged copies step alike."""
    import numpy as np
    import tiphys
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .3"><freejoint/><geom size=".1" mass="1"/></body></worldbody>
      <custom><tuple name="t"><element objtype="body" objname="world"/></tuple></custom>
      </mujoco>"""
    m = tiphys.load_model_from_string(xml)
    m.opt.timestep = 0.004
    tiphys.set_param(m, "geom_friction", np.array([[[1, .005, .0001]] * 2,
                                                   [[.3, .005, .0001]] * 2]))
    c = tiphys.copy_model(m)
    assert c.opt.timestep == 0.004 and c.arrays.names_buffer == m.arrays.names_buffer
    np.testing.assert_array_equal(c.param("geom_friction"), m.param("geom_friction"))
    d1, d2 = tiphys.make_data(m, 2), tiphys.make_data(c, 2)
    for _ in range(30):
        tiphys.step(m, d1)
        tiphys.step(c, d2)
    np.testing.assert_array_equal(d1.numpy("qpos"), d2.numpy("qpos"))
    c.opt.timestep = 0.001
    tiphys.set_param(c, "body_mass", np.array([0.0, 5.0]))
    assert m.opt.timestep == 0.004
    assert m.param("body_mass")[0][1] == 1.0 and c.param("body_mass")[0][1] == 5.0
    assert m.arrays.body_mass is not c.arrays.body_mass
