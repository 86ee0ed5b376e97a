"""The CPU backends' host-memory path for Model/Data arrays (tiphys/backend.py upload,
download, zero): the same bytes as Taichi's from_numpy / to_numpy / fill, for every
element kind and dtype the tables use, and a clear error for a wrong shape."""
import numpy as np
import pytest
import taichi as ti

import tiphys
from tiphys import backend
from tiphys.scenes import scene_path


def _arrays():
    fdt = backend.float_dtype()
    return [ti.ndarray(fdt, shape=(3, 5)), ti.ndarray(ti.i32, shape=(4,)),
            ti.Vector.ndarray(3, fdt, shape=(2, 4)), ti.Matrix.ndarray(3, 3, fdt, shape=(2, 3)),
            ti.Vector.ndarray(4, ti.i32, shape=(5,))]


@pytest.mark.parametrize("index", range(5))
def test_upload_download_zero_match_taichi(index):
    tiphys.backend.ensure_init()
    ours, theirs = _arrays()[index], _arrays()[index]
    shape = tuple(ours.arr.total_shape())
    kind = backend.numpy_dtype(ours)
    rng = np.random.default_rng(index)
    host = (rng.integers(-9, 9, size=shape) if kind == np.int32
            else rng.standard_normal(shape)).astype(kind)
    backend.upload(ours, host)
    theirs.from_numpy(host)
    assert np.array_equal(ours.to_numpy(), theirs.to_numpy())
    got = backend.download(ours)
    assert got.dtype == theirs.to_numpy().dtype and got.shape == shape
    assert np.array_equal(got, host)
    backend.zero(ours)
    theirs.fill(0)
    assert np.array_equal(backend.download(ours), theirs.to_numpy())
    assert not backend.download(ours).any()


def test_upload_of_a_wrong_shape_is_an_error():
    tiphys.backend.ensure_init()
    arr = ti.Vector.ndarray(3, backend.float_dtype(), shape=(2, 4))
    with pytest.raises(ValueError, match=r"shape \(2, 4\).*\(2, 4, 3\)"):
        backend.upload(arr, np.zeros((2, 4)))


def test_data_reads_and_numpy_indexing_after_a_step():
    m = tiphys.load_model(scene_path())
    d = tiphys.make_data(m, nworld=2)
    tiphys.step(m, d)
    for name in ("qpos", "xpos", "xmat", "ncon"):
        field = getattr(d, name)
        assert np.array_equal(d.numpy(name), field.to_numpy()[tuple(
            slice(0, n) for n in d.field_shape(name))])
    d.qvel[1, 0] = 0.25  # numpy-style write through the host path
    assert d.numpy("qvel")[1, 0] == 0.25 and d.qvel[1][0] == 0.25
