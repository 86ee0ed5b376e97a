"""std::mt19937_64 in C (tiphys/compiler/_mt64.c) against the numpy twister it stands
in for (texture.py MT19937_64, the reference) and the C++ standard's check value; the
random marks and gradients of builtin textures against MuJoCo's, and the in-place
gradient blend against its plain formula. Host-side only.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from test_polytree import _c_compiler

from tiphys.api import load_spec
from tiphys.compiler import texture
from tiphys.compiler.compile import compile_spec
from tiphys.compiler.polygons import PURE_PYTHON_ENV

needs_c = pytest.mark.skipif(
    texture.MT64_ERROR is not None,
    reason=f"tiphys.compiler._mt64 is not built ({texture.MT64_ERROR}); "
           f"C compiler with Python headers: {_c_compiler() or 'none found'}")


def test_mt64_is_built_where_a_c_compiler_is_found():
    cc = _c_compiler()
    if cc is None:
        pytest.skip("no C compiler with Python headers: the numpy twister is expected")
    assert texture.MT64_ERROR is None, (
        f"C compiler {cc} found but tiphys.compiler._mt64 does not import "
        f"({texture.MT64_ERROR}); rebuild with `pip install -e .`")


def test_numpy_twister_meets_the_standards_check_value():
    # [rand.predef]: the 10000th output of a default-constructed mt19937_64 (seed 5489)
    assert int(texture.MT19937_64(5489).take(10000)[-1]) == 9981545732273789042


@needs_c
@pytest.mark.parametrize("seed", [0, 1, 42, 5489, 2**63, 2**64 - 1, -1])
def test_c_stream_is_the_numpy_twisters(seed):
    assert int(np.frombuffer(texture._c_stream(5489, 10000), np.uint64)[-1]) == \
        9981545732273789042
    for count in (0, 1, 311, 312, 313, 624, 1000, 4321):
        np.testing.assert_array_equal(np.frombuffer(texture._c_stream(seed, count), np.uint64),
                                      texture.MT19937_64(seed).take(count))
    with pytest.raises(ValueError):
        texture._c_stream(seed, -1)


@needs_c
def test_random_uniform_is_the_same_with_and_without_c(monkeypatch):
    got = texture._random_uniform(42, 100_000)
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    ref = texture._random_uniform(42, 100_000)
    assert got.tobytes() == ref.tobytes()


@needs_c
def test_c_below_is_the_numpy_draws_compared():
    """below() compares integers against the smallest output whose draw is not below
    the threshold: the same answers as the draws, also at thresholds equal to a draw,
    next to one, and at the ends."""
    draws = texture.MT19937_64(42).uniform(50_000)
    rng = np.random.default_rng(0)
    picks = draws[rng.integers(0, len(draws), 50)]
    thresholds = [0.0, -1.0, 1.0, 2.0, 1.0 - 2**-53, float("nan"), float("inf"), 5e-324,
                  2**-64, *rng.random(20), *picks, *np.nextafter(picks, 0),
                  *np.nextafter(picks, 2)]
    for threshold in thresholds:
        got = np.frombuffer(texture._c_below(42, len(draws), float(threshold)), np.uint8)
        np.testing.assert_array_equal(got.astype(bool), draws < threshold)


@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize("tex", [
    '<texture name="t" type="skybox" builtin="gradient" rgb1=".4 .6 .8" rgb2="0 0 0" '
    'width="64" height="384" mark="random" markrgb="1 1 1" random="0.02"/>',
    '<texture name="t" type="2d" builtin="checker" rgb1=".1 .2 .3" rgb2=".3 .2 .1" '
    'width="50" height="70" mark="random" markrgb=".8 .8 .8" random="0.3"/>'])
def test_random_marks_match_mujoco(tex, pure, monkeypatch, tmp_path):
    monkeypatch.setenv(PURE_PYTHON_ENV, pure)
    path = tmp_path / "m.xml"
    path.write_text(f'<mujoco><asset>{tex}<material name="m" texture="t"/></asset>'
                    '<worldbody><geom size=".1" material="m"/></worldbody></mujoco>')
    theirs = mujoco.MjModel.from_xml_path(str(path))
    ours = compile_spec(load_spec(str(path)))
    np.testing.assert_array_equal(np.asarray(ours.tex_data).ravel(), theirs.tex_data.ravel())


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_interp_is_the_plain_formula():
    def plain(rgb1, rgb2, pos):
        pos = np.asarray(pos, dtype=np.float64)
        alpha = 0.5 * (1 + pos / np.sqrt(1 + pos * pos) / (1.0 / np.sqrt(2)))
        alpha = np.clip(alpha, 0.0, 1.0)[..., None]
        x = alpha * np.asarray(rgb1) + (1 - alpha) * np.asarray(rgb2)
        return np.trunc(255.0 * x).astype(np.uint8)

    for seed in range(40):
        rng = np.random.default_rng(seed)
        pos = rng.normal(size=[(), (5,), (7, 9)][seed % 3]) * 10.0 ** int(rng.integers(-3, 3))
        if seed % 5 == 0 and pos.size > 1:
            pos.flat[:3] = [0.0, 1.0, -np.inf]
        rgb1, rgb2 = rng.random(3).tolist(), rng.random(3).tolist()
        want, got = plain(rgb1, rgb2, pos), texture._interp(rgb1, rgb2, pos)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
