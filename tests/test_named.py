"""Named access (tiphys.named) against MuJoCo's Python bindings: every attribute a tiphys
view has that MuJoCo's view of the same object also has gives the same values, world by
world; assignments write the object's rows."""
import os

import mujoco
import numpy as np
import pytest

from oracle import corpus_dir

import tiphys
from tiphys import named

MODEL = "gym/humanoid.xml"  # bodies, joints of three kinds, tendons, actuators, sensors
NW = 2
TYPES = ("body", "joint", "geom", "site", "camera", "light", "actuator", "tendon", "sensor")


@pytest.fixture(scope="module")
def pair():
    path = os.path.join(corpus_dir(), MODEL)
    mjm = mujoco.MjModel.from_xml_path(path)
    mjd = [mujoco.MjData(mjm) for _ in range(NW)]
    m = tiphys.load_model(path)
    d = tiphys.make_data(m, NW)
    rng = np.random.default_rng(0)
    qpos = np.tile(mjm.qpos0, (NW, 1))
    qpos[:, 7:] += rng.normal(0, 0.2, (NW, mjm.nq - 7))
    qvel = rng.normal(0, 0.5, (NW, mjm.nv))
    ctrl = rng.uniform(-0.4, 0.4, (NW, mjm.nu))
    for w in range(NW):
        mjd[w].qpos[:], mjd[w].qvel[:], mjd[w].ctrl[:] = qpos[w], qvel[w], ctrl[w]
        mujoco.mj_forward(mjm, mjd[w])
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    d.ctrl.from_numpy(ctrl)
    tiphys.forward(m, d)
    return mjm, mjd, m, d


def _count(m, objtype):
    return getattr(m, named.TYPES[objtype][0])


@pytest.mark.parametrize("objtype", TYPES)
def test_data_views_match_mujoco(pair, objtype):
    mjm, mjd, m, d = pair
    compared = set()
    for i in range(_count(m, objtype)):
        view = getattr(d, objtype)(i)
        name = tiphys.id2name(m, objtype, i)
        if name:
            assert getattr(d, objtype)(name).id == i
        for attr in dir(view):
            # MuJoCo's joint view takes cdof / cdof_dot rows from the joint's id, not its
            # dof address (tiphys slices them like qvel)
            if attr in ("id", "name") or (objtype == "joint" and attr.startswith("cdof")):
                continue
            for w in range(NW):
                mj_view = getattr(mjd[w], objtype)(i)
                if not hasattr(mj_view, attr):
                    continue
                want = np.asarray(getattr(mj_view, attr), dtype=np.float64)
                got = getattr(view, attr)[w]
                np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-8,
                                           atol=1e-8, err_msg=f"{objtype} {i} {attr}")
                compared.add(attr)
    if _count(m, objtype):
        assert compared, f"no {objtype} attribute compared"


@pytest.mark.parametrize("objtype", TYPES + ("equality", "mesh", "pair", "exclude", "key"))
def test_model_views_match_mujoco(pair, objtype):
    mjm, _, m, _ = pair
    for i in range(_count(m, objtype)):
        view = getattr(m, objtype)(i)
        mj_view = getattr(mjm, objtype)(i)
        for attr in dir(view):
            if attr in ("id", "name") or not hasattr(mj_view, attr):
                continue
            want = np.asarray(getattr(mj_view, attr))
            got = np.asarray(getattr(view, attr))
            if got.size != want.size:  # MuJoCo's joint view: bodyid is dof_bodyid
                assert (objtype, attr) == ("joint", "bodyid"), (objtype, attr)
                continue
            tol = 1e-6 if want.dtype == np.float32 else 1e-10  # rgba etc.: float32
            np.testing.assert_allclose(got.reshape(want.shape), want, rtol=tol, atol=tol,
                                       err_msg=f"{objtype} {i} {attr}")


def test_assignments_write_every_world_or_each(pair):
    _, _, m, d = pair
    d.actuator(1).ctrl = [0.25, -0.5]
    np.testing.assert_array_equal(d.numpy("ctrl")[:, 1], [0.25, -0.5])
    d.joint(3).qvel = 0.125
    vadr = int(m.arrays.jnt_dofadr[3])
    np.testing.assert_array_equal(d.numpy("qvel")[:, vadr], [0.125, 0.125])
    name = tiphys.id2name(m, "geom", 0)
    m.geom(name).friction = [[0.7, 0.01, 0.001], [0.9, 0.01, 0.001]]   # one per world
    np.testing.assert_array_equal(tiphys.get_param(m, "geom_friction")[:, 0, 0], [0.7, 0.9])
    m.geom(name).friction = [0.8, 0.01, 0.001]                           # every world
    np.testing.assert_array_equal(m.geom(name).friction[:, 0], [0.8, 0.8])


def test_bad_names_and_attributes_are_clear_errors(pair):
    _, _, m, d = pair
    with pytest.raises(KeyError, match="no body named 'nose'"):
        d.body("nose")
    with pytest.raises(KeyError, match=r"give a name or an id in \[0, "):
        m.geom(10 ** 6)
    with pytest.raises(AttributeError, match="has no attribute 'xpoz'; it has"):
        d.body(1).xpoz
    with pytest.raises(AttributeError, match="body_parentid.*read-only"):
        m.body(1).parentid = 0
    with pytest.raises(AttributeError, match="Data has no mesh view"):
        d.mesh(0)


def test_data_arrays_index_like_numpy(pair):
    """d.qpos[0], slices, index writes and np.asarray act as on a numpy array (a copy
    of the device array); one element per dimension still reads the device directly."""
    _, mjd, m, d = pair
    np.testing.assert_allclose(d.qpos[1], mjd[1].qpos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(d.xpos)[0, 1], mjd[0].xpos[1], atol=1e-12)
    np.testing.assert_allclose(d.xpos[:, 1], [mjd[0].xpos[1], mjd[1].xpos[1]], atol=1e-12)
    assert d.qpos[0, 2] == pytest.approx(mjd[0].qpos[2], abs=1e-12)
    saved = d.numpy("qvel")
    d.qvel[:, 0] = [1.5, -1.5]
    np.testing.assert_array_equal(d.numpy("qvel")[:, 0], [1.5, -1.5])
    np.testing.assert_array_equal(d.numpy("qvel")[:, 1:], saved[:, 1:])
    d.qvel[0] = saved[0]
    d.qvel[1, 0] = saved[1, 0]
    np.testing.assert_array_equal(d.numpy("qvel"), saved)


@pytest.mark.parametrize("kind", ["scalar", "vector", "matrix"])
@pytest.mark.parametrize("dtype", ["f64", "f32", "i32"])
def test_from_numpy_and_to_numpy_give_taichis_values(kind, dtype):
    """On the CPU backends ndarrays' from_numpy/to_numpy copy memory (tiphys/backend.py)
    instead of launching Taichi's kernels: the same numbers for every input dtype
    Taichi casts (floats to floats, ints, unsigned ints, floats to ints), the same
    shape error, and other inputs left to Taichi."""
    import taichi as ti
    from taichi.lang._ndarray import ScalarNdarray
    from taichi.lang.matrix import MatrixNdarray, VectorNdarray
    from tiphys import backend
    tiphys.init(arch="cpu", precision="f64")
    tdtype = getattr(ti, dtype)
    make = {"scalar": lambda: ti.ndarray(tdtype, (4, 3)),
            "vector": lambda: ti.Vector.ndarray(3, tdtype, (4, 3)),
            "matrix": lambda: ti.Matrix.ndarray(2, 3, tdtype, (4,))}[kind]
    cls = {"scalar": ScalarNdarray, "vector": VectorNdarray, "matrix": MatrixNdarray}[kind]
    taichi_from, taichi_to = backend.TAICHI_NUMPY[cls]
    probe = make()
    shape = tuple(probe.arr.total_shape())
    rng = np.random.default_rng(5)
    inputs = [rng.normal(0, 100, shape), rng.normal(0, 100, shape).astype(np.float32),
              rng.integers(-1000, 1000, shape), rng.integers(0, 200, shape).astype(np.uint8),
              np.asfortranarray(rng.normal(0, 3, shape)),
              rng.normal(0, 100, shape + (2,))[..., 0]]  # not contiguous
    for value in inputs:
        ours, theirs = make(), make()
        ours.from_numpy(value)
        taichi_from(theirs, value)
        assert ours.to_numpy().tobytes() == taichi_to(theirs).tobytes()
        assert ours.to_numpy().dtype == taichi_to(theirs).dtype
        assert ours.to_numpy().shape == taichi_to(theirs).shape
    with pytest.raises(ValueError, match="Mismatch shape"):
        make().from_numpy(np.zeros(shape[:-1] + (shape[-1] + 1,)))
    with pytest.raises(TypeError):
        make().from_numpy([0.0] * int(np.prod(shape)))  # a list: Taichi's own error
