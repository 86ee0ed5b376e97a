"""Prepared launches (tiphys/launch.py): a kernel launched again with the same
arguments skips Taichi's per-argument Python work, with the same results."""
import gc

import numpy as np
import pytest
import taichi as ti

import tiphys
import tiphys.launch as launch


@ti.kernel
def _axpy(y: ti.types.ndarray(), x: ti.types.ndarray(), a: float, n: ti.i32):
    for i in range(n):
        y[i] += a * x[i]


@ti.kernel
def _total(x: ti.types.ndarray()) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@pytest.fixture(autouse=True)
def _prepared(monkeypatch):
    """Prepared launches on for these tests (whatever the environment says), none left
    behind."""
    monkeypatch.setattr(launch, "ENABLED", True)
    yield
    launch.forget()


def _table(kernel):
    return kernel._primal.__dict__.get("_tiphys_prepared")


def test_repeated_launches_are_prepared_and_give_the_same_results():
    assert ti.lang.kernel_impl.Kernel.__call__ is launch._call
    x = ti.ndarray(ti.f64, 5)
    x.from_numpy(np.arange(5.0))
    y = ti.ndarray(ti.f64, 5)
    y.fill(0.0)
    for _ in range(3):
        _axpy(y, x, 2.0, 5)
    assert np.array_equal(y.to_numpy(), 6.0 * np.arange(5.0))
    assert len(_table(_axpy)) == 1
    _axpy(y, x, -1.0, 3)  # another scalar: another entry, not a stale one
    assert np.array_equal(y.to_numpy(), np.array([0, 5, 10, 18, 24.0]))
    assert len(_table(_axpy)) == 2
    # a kernel that returns a value takes Taichi's own path every time
    assert _total(x) == 10.0 and _total(x) == 10.0
    assert _table(_total) is False


def test_a_freed_array_drops_its_entries():
    x = ti.ndarray(ti.f64, 4)
    x.fill(1.0)
    y = ti.ndarray(ti.f64, 4)
    y.fill(0.0)
    _axpy(y, x, 1.0, 4)
    key = launch._key((y, x, 1.0, 4))
    assert key in _table(_axpy)
    del x
    gc.collect()
    assert key not in _table(_axpy)
    z = ti.ndarray(ti.f64, 4)  # may reuse the freed object's id: no stale entry matches
    z.fill(3.0)
    _axpy(y, z, 1.0, 4)
    _axpy(y, z, 1.0, 4)
    assert np.array_equal(y.to_numpy(), np.full(4, 7.0))


def test_step_is_the_same_with_and_without_prepared_launches(monkeypatch):
    xml = """<mujoco><option integrator="RK4"/><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .02"><freejoint/><geom type="box" size=".1 .05 .03"/></body>
      <body pos=".3 0 .025" euler="0 90 0"><freejoint/><geom type="capsule" size=".03 .1"/></body>
      </worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    runs = []
    for enabled in (False, True):
        monkeypatch.setattr(launch, "ENABLED", enabled)
        d = tiphys.make_data(m, 3)
        for _ in range(40):
            tiphys.step(m, d)
        runs.append((d.numpy("qpos"), d.numpy("qvel"), d.numpy("ncon")))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
    assert runs[1][2].min() > 0  # resting on the plane: contacts in every world


def _fresh_notice(monkeypatch, after_s):
    """The compile notice as in a new process, given after ``after_s`` seconds."""
    monkeypatch.setitem(launch._NOTICE, "shown", False)
    monkeypatch.setitem(launch._NOTICE, "spent", 0.0)
    monkeypatch.setattr(launch, "NOTICE_AFTER_S", after_s)


def test_first_launches_say_they_are_compiling(monkeypatch, capsys):
    """A process whose first launches take long prints 'compiling kernels (one-time)'
    once, on stderr, while they run; later launches and later kernels print nothing."""
    _fresh_notice(monkeypatch, 0.0)

    @ti.kernel
    def fresh(x: ti.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = 2.0 * x[i] + 1.0

    @ti.kernel
    def fresh_too(x: ti.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = x[i] - 1.0

    x = ti.ndarray(ti.f64, 4)
    fresh(x)
    err = capsys.readouterr().err
    assert err.count("compiling kernels (one-time") == 1, err
    fresh(x)
    fresh_too(x)
    assert "compiling" not in capsys.readouterr().err
    np.testing.assert_array_equal(x.to_numpy(), np.full(4, 2.0))  # (0 * 2 + 1) * 2 + 1 - 1


def test_quick_first_launches_stay_quiet(monkeypatch, capsys):
    _fresh_notice(monkeypatch, 3600.0)

    @ti.kernel
    def quiet(x: ti.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = 3.0

    x = ti.ndarray(ti.f64, 2)
    quiet(x)
    assert "compiling" not in capsys.readouterr().err
    assert launch._NOTICE["spent"] > 0.0


def test_count_launches_counts_prepared_and_taichi_launches_and_restores_the_patch():
    x = ti.ndarray(ti.f64, 3)
    x.fill(1.0)
    y = ti.ndarray(ti.f64, 3)
    y.fill(0.0)
    _axpy(y, x, 1.0, 3)  # prepared from here on
    with launch.count_launches() as counter:
        for _ in range(4):
            _axpy(y, x, 1.0, 3)  # prepared
        _axpy(y, x, 0.5, 3)  # a new argument tuple: Taichi's own path
        assert _total(x) == 3.0  # returns a value: never prepared
    assert counter["n"] == 6
    assert np.array_equal(y.to_numpy(), np.full(3, 5.5))
    assert ti.lang.kernel_impl.Kernel.__call__ is launch._call
    _axpy(y, x, 1.0, 3)
    assert counter["n"] == 6  # nothing counted after the block
