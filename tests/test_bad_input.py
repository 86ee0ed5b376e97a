"""Nothing silently wrong: bad controls, models with elements tiphys would drop, a
second tiphys.init, Data of another Model, and make_data arguments that cannot work
each give MuJoCo's behaviour or a clear error."""
import copy
import re
import warnings

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys import backend
from tiphys.api import (IGNORED_SIZES, NOT_SIMULATED_SIZES, PUT_MODEL_REFUSED_SIZES,
                        UNSUPPORTED_SIZES)
from tiphys.kernels.check import warnings_of
from tiphys.kernels.consts import WARN_BADCTRL
from tiphys.types import MODEL_SIZES

# three actuators: two with a ctrlrange (clamped), one unlimited
XML = """<mujoco><option timestep="0.01"><flag contact="disable"/></option>
  <worldbody>
    <body pos="0 0 1"><joint name="h" type="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <body pos=".3 0 0"><joint name="s" type="slide" axis="1 0 0"/><geom size=".05"/></body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="h" gear="2" ctrlrange="-1 1"/>
    <position joint="s" kp="20" ctrlrange="-.2 .3"/>
    <motor joint="s"/>
  </actuator>
</mujoco>"""
NWORLD = 3


@pytest.fixture(scope="module")
def models():
    return tiphys.load_model_from_string(XML), mujoco.MjModel.from_xml_string(XML)


def _mujoco_step(mjm, ctrl):
    mjd = mujoco.MjData(mjm)
    mjd.ctrl[:] = ctrl
    mujoco.mj_step(mjm, mjd)
    return mjd


# ------------------------------------------------------------------ 1. bad controls

@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e11])
def test_bad_limited_ctrl_matches_mujoco_per_world(models, bad):
    """A NaN in a clamped control is not clamped into range (MuJoCo's mju_clip keeps
    it): that world's actuators see zero controls and mjWARN_BADCTRL is counted; an
    infinite or huge one is clamped, as in MuJoCo. Other worlds step normally."""
    m, mjm = models
    ctrl = np.array([[0.5, 0.1, -0.3]] * NWORLD)
    ctrl[1, 0] = bad
    d = tiphys.make_data(m, NWORLD)
    d.ctrl.from_numpy(ctrl)
    tiphys.step(m, d)
    warn = warnings_of(d)
    for w in range(NWORLD):
        mjd = _mujoco_step(mjm, ctrl[w])
        assert warn[w, WARN_BADCTRL] == mjd.warning[WARN_BADCTRL].number, (w, warn)
        np.testing.assert_allclose(d.numpy("actuator_force")[w], mjd.actuator_force,
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(d.numpy("qpos")[w], mjd.qpos, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(d.numpy("qvel")[w], mjd.qvel, rtol=1e-9, atol=1e-12)
    expected = 1 if np.isnan(bad) else 0
    assert warn[1, WARN_BADCTRL] == expected and warn[[0, 2], WARN_BADCTRL].sum() == 0
    if expected:
        # ctrl itself is kept (MuJoCo zeroes a local copy)
        assert np.isnan(d.numpy("ctrl")[1, 0])
        assert np.all(d.numpy("actuator_force")[1, [0, 2]] == 0)


def test_actuation_does_no_host_work_per_call(models, monkeypatch):
    """After the first call, actuation launches kernels only: no numpy (its host facts
    are cached per option set)."""
    from tiphys.kernels import actuation as act

    m, _ = models
    d = tiphys.make_data(m, 2)
    tiphys.forward(m, d)

    class NoNumpy:
        def __getattr__(self, name):
            raise AssertionError(f"numpy.{name} called in the per-step path")

    monkeypatch.setattr(act, "np", NoNumpy())
    act.actuation(m, d)
    tiphys.step(m, d)


# ------------------------------------------------------------------ 2. put_model

# passive flex contacts: a flex collision tiphys does not simulate yet
FLEX = """<mujoco><worldbody>
  <flexcomp name="cloth" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" radius=".01">
    <contact passive="true"/></flexcomp>
</worldbody></mujoco>"""


def test_put_model_refuses_colliding_flex_naming_it():
    mjm = mujoco.MjModel.from_xml_string(FLEX)
    with pytest.raises(NotImplementedError, match="flex collisions.*'cloth'.*not supported"):
        tiphys.put_model(mjm)


def test_every_mujoco_size_field_is_carried_refused_or_explained():
    """A size field MuJoCo adds must not be dropped silently: each MjModel count is in
    tiphys's Model table, refused by put_model, or listed as bookkeeping."""
    mjm = mujoco.MjModel.from_xml_string("<mujoco/>")
    sizes = {k for k in dir(mjm) if k.startswith("n") and isinstance(getattr(mjm, k), int)}
    known = set(MODEL_SIZES) | set(UNSUPPORTED_SIZES) | set(IGNORED_SIZES)
    assert sizes - known == set()
    assert not set(UNSUPPORTED_SIZES) & set(MODEL_SIZES)
    assert "noct" in MODEL_SIZES
    assert set(PUT_MODEL_REFUSED_SIZES) <= set(MODEL_SIZES) and "nplugin" in \
        PUT_MODEL_REFUSED_SIZES
    assert set(NOT_SIMULATED_SIZES) <= set(MODEL_SIZES)


def test_put_model_still_takes_supported_models(models):
    m, mjm = models
    put = tiphys.put_model(mjm)
    assert put.nu == m.nu == 3


# ------------------------------------------------------------------ 3. tiphys.init

def test_second_init_with_same_settings_keeps_models_working(models):
    m, _ = models
    d = tiphys.make_data(m, 2)
    tiphys.init(arch="cpu", precision="f64")  # as conftest did: a re-run cell
    tiphys.step(m, d)
    assert np.isfinite(d.numpy("qpos")).all()


def test_second_init_with_other_settings_names_both():
    with pytest.raises(RuntimeError) as info:
        tiphys.init(arch="cpu", precision="f32")
    text = str(info.value)
    assert "precision='f32'" in text and "precision='f64'" in text and "reinit" in text
    assert backend.precision() == "f64"
    with pytest.raises(RuntimeError, match="fast_math=False"):
        tiphys.init(arch="cpu", precision="f64", fast_math=False)
    tiphys.init(arch="cpu", precision="f64", offline_cache=True)  # a default, given


def test_models_from_before_a_reinit_raise_clearly(models, monkeypatch):
    m, _ = models
    d = tiphys.make_data(m, 1)
    # what init(..., reinit=True) records, without restarting this process's Taichi
    monkeypatch.setitem(backend._STATE, "generation", backend.generation() + 1)
    with pytest.raises(RuntimeError, match="before tiphys.init"):
        tiphys.step(m, d)
    with pytest.raises(RuntimeError, match="before tiphys.init"):
        tiphys.make_data(m, 1)


# ------------------------------------------------------------------ 4. Data knows its Model

def test_data_of_another_model_is_refused_everywhere(models):
    m, _ = models
    other = tiphys.load_model_from_string(XML)  # same sizes, another Model
    d = tiphys.make_data(m, 2)
    for func in (tiphys.step, tiphys.forward, tiphys.kinematics, tiphys.step1,
                 tiphys.actuation, tiphys.reset_data, tiphys.render):
        with pytest.raises(ValueError, match="another Model"):
            func(other, d)
    with pytest.raises(ValueError, match="another Model"):
        tiphys.copy_state(other, d, d, tiphys.State.PHYSICS)
    small = tiphys.load_model_from_string("<mujoco><worldbody><body><freejoint/>"
                                          "<geom size='.1'/></body></worldbody></mujoco>")
    with pytest.raises(ValueError, match="make_data") as info:
        tiphys.step(small, d)
    assert "nconmax" not in str(info.value)


def test_mujoco_objects_get_a_type_error(models):
    m, mjm = models
    d = tiphys.make_data(m, 1)
    with pytest.raises(TypeError, match="put_model"):
        tiphys.step(mjm, d)
    with pytest.raises(TypeError, match="make_data"):
        tiphys.step(m, mujoco.MjData(mjm))


def test_a_copy_of_the_model_shares_its_data(models):
    """copy.copy(m) shares the device arrays (lengthrange uses it for other options)."""
    m, _ = models
    d = tiphys.make_data(m, 1)
    tiphys.step(copy.copy(m), d)
    assert np.isfinite(d.numpy("qpos")).all()


# ------------------------------------------------------------------ 6. make_data

@pytest.mark.parametrize("nworld", [2.5, "3", True, 2.0, None])
def test_make_data_nworld_must_be_an_integer(models, nworld):
    m, _ = models
    with pytest.raises(TypeError, match="nworld must be an integer"):
        tiphys.make_data(m, nworld)


def test_make_data_takes_numpy_integers(models):
    m, _ = models
    assert tiphys.make_data(m, np.int64(2)).nworld == 2
    with pytest.raises(ValueError, match=">= 1"):
        tiphys.make_data(m, 0)


def test_make_data_too_many_worlds_says_how_many_fit(models):
    """Estimated from the Data table before any allocation (no numpy MemoryError, no
    Taichi allocation failure)."""
    from tiphys.model import available_memory, data_bytes

    m, _ = models
    free, what = available_memory()
    if free is None:
        pytest.skip(what)
    nworld = 10**8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a capped default njmax
        with pytest.raises(MemoryError, match=r"about (\d+) worlds fit") as info:
            tiphys.make_data(m, nworld)
    text = info.value.args[0]
    fit = int(re.search(r"about (\d+) worlds fit", text).group(1))
    assert 0 < fit < nworld
    sizes = dict(tiphys.make_data(m, 1)._sizes)
    sizes["nconmax"] = int(re.search(r"nconmax=(\d+)", text).group(1))
    sizes["njmax"] = int(re.search(r"njmax=(\d+)", text).group(1))
    assert data_bytes(sizes, fit) <= free * 1.05 < data_bytes(sizes, 2 * fit + 10)
