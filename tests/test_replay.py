"""Recorded steps (tiphys/replay.py): a step replayed from its recording gives the
same bits as the stages run from Python, it really is replayed (the stage drivers do
not run), and every change the host code decides on makes it record again: options,
parameters, field arrays, the user-sensor callback, a freed array, launch counting.

f64 on the CPU (the only backend whose launch contexts can be launched twice)."""
import importlib
import platform
import sys

import numpy as np
import pytest

import tiphys
from tiphys import launch, replay

fwd = importlib.import_module("tiphys.forward")

NWORLD = 3

XML = """<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body pos="0 0 .3">
      <freejoint/>
      <geom type="box" size=".1 .08 .05" mass="1"/>
      <body pos=".15 0 0">
        <joint name="h" axis="0 1 0" range="-1 1" limited="true" damping=".1"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03" mass=".3"/>
      </body>
    </body>
    <body pos=".6 0 .2">
      <freejoint/>
      <geom type="sphere" size=".07" mass=".5"/>
    </body>
  </worldbody>
  <actuator><motor joint="h" gear="2"/></actuator>
  <sensor><jointpos joint="h"/><user dim="2" needstage="pos"/></sensor>
</mujoco>"""

PID = """<mujoco>
  <extension><plugin plugin="mujoco.pid"><instance name="p">
    <config key="kp" value="20"/><config key="ki" value="2"/><config key="kd" value="1"/>
  </instance></plugin></extension>
  <worldbody><body><joint name="j" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03" mass="1"/></body></worldbody>
  <actuator><plugin joint="j" instance="p" actdim="1"/></actuator>
</mujoco>"""


@pytest.fixture(autouse=True)
def _cpu_f64():
    tiphys.init(arch="cpu", precision="f64")
    if not launch.REPLAY["on"]:
        pytest.fail("contexts are not replayed on the CPU backend (TIPHYS_REPLAY_LAUNCHES=0?)")
    yield
    tiphys.set_sensor_callback(None)


def _run(m, nstep, replayed, seed=0, between=None, nworld=NWORLD):
    """qpos, qvel and sensordata after ``nstep`` steps with random controls, with
    replays on or off; ``between(k, m, d)`` runs before step k."""
    saved = replay.ENABLED
    replay.ENABLED = replayed
    try:
        d = tiphys.make_data(m, nworld)
        rng = np.random.default_rng(seed)
        for k in range(nstep):
            if between is not None:
                between(k, m, d)
            if m.nu:
                d.ctrl.from_numpy(rng.uniform(-1, 1, (nworld, m.nu)))
            tiphys.step(m, d)
        return d, {name: d.numpy(name) for name in ("qpos", "qvel", "sensordata", "act")}
    finally:
        replay.ENABLED = saved


def _same(a, b):
    for name in a:
        assert np.array_equal(a[name], b[name], equal_nan=True), name


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicitfast"])
def test_replayed_steps_are_bit_for_bit_the_staged_ones(integrator, native, monkeypatch):
    monkeypatch.setitem(replay.NATIVE, "on", native)
    m = tiphys.load_model_from_string(XML.replace('timestep="0.005"',
                                      f'timestep="0.005" integrator="{integrator}"'))
    d, on = _run(m, 40, True)
    recording = d.scratch.replay["step"]
    assert recording.ready
    assert bool(recording.native) == (native and NATIVE_HERE)
    _, off = _run(m, 40, False)
    _same(on, off)


# where the native replay must work: the platforms tiphys/_native_replay.c reads
# Taichi's layouts on (a failed build of the helper fails the tests below here)
NATIVE_HERE = sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64")


@pytest.mark.skipif(not NATIVE_HERE, reason="native replays are for Linux on x86-64/arm64")
@pytest.mark.parametrize("nworld", [1, 64])
def test_native_replay_calls_every_launch_of_the_step(nworld):
    """On this platform a ready recording becomes native: every recorded launch's
    tasks are found (one pair per task, at least one per launch) and, on x86-64, the
    array fills become C twins of the runtime's fill among them."""
    assert replay._native_replay is not None, "tiphys/_native_replay.c was not built"
    m = tiphys.load_model_from_string(XML.replace('timestep="0.005"',
                                      'timestep="0.005" integrator="RK4"'))
    d = tiphys.make_data(m, nworld)
    for _ in range(6):
        tiphys.step(m, d)
    recording = d.scratch.replay["step"]
    assert recording.ready and recording.native
    steps, kept = recording.native
    launches = [call for call in recording.calls
                if getattr(call[0], "__name__", None) == "launch_kernel"]
    fills = [call for call in recording.calls if call[0] is launch._fill_again]
    assert len(launches) + len(fills) == len(recording.calls)
    pairs = sum(len(step) // 16 for step in steps if isinstance(step, bytes))
    assert pairs >= len(launches) + len(fills) and len(launches) > 20
    if platform.machine() == "x86_64":  # the runtime fills there: all of it one run
        assert fills and len(kept) == len(fills)
        assert len(steps) == 1 and isinstance(steps[0], bytes)
    # the replayed step moves the worlds as the staged one does
    ref = tiphys.make_data(m, nworld)
    replay.ENABLED = False
    try:
        for _ in range(7):
            tiphys.step(m, ref)
    finally:
        replay.ENABLED = True
    tiphys.step(m, d)
    assert np.array_equal(d.numpy("qpos"), ref.numpy("qpos"))


@pytest.mark.skipif(not NATIVE_HERE, reason="native replays are for Linux on x86-64/arm64")
def test_native_replay_refuses_what_is_not_a_launch():
    """The helper checks what it reads: objects of other types, or a launch's objects in
    the wrong places, give None (Taichi's own launch is kept), never a crash."""
    from taichi.lang import impl
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    for _ in range(6):
        tiphys.step(m, d)
    function, compiled, ctx = next(call for call in d.scratch.replay["step"].calls
                                   if getattr(call[0], "__name__", None) == "launch_kernel")
    prog = impl.get_runtime().prog
    native = replay._native_replay
    tasks, context = native.tasks(prog, compiled, ctx)
    assert tasks and context
    for args in [(prog, ctx, compiled), (compiled, prog, ctx), (prog, compiled, prog),
                 (object(), object(), object()), (prog, d.qpos, ctx), (1, 2, 3)]:
        assert native.tasks(*args) is None


def test_a_ready_recording_skips_the_stage_drivers(monkeypatch):
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    calls = []
    real = fwd._step
    monkeypatch.setattr(fwd, "_step", lambda m, d: (calls.append(1), real(m, d)))
    for _ in range(6):
        tiphys.step(m, d)
    # recorded from the first call on that launches only prepared contexts; the
    # second such call agrees and makes it ready; later calls replay
    assert 2 <= len(calls) <= 4
    n = len(calls)
    for _ in range(5):
        tiphys.step(m, d)
    assert len(calls) == n
    # time advances in replays as in staged steps
    assert np.allclose(d.numpy("time"), 11 * m.opt.timestep)


def test_forward_is_replayed_too():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    rng = np.random.default_rng(3)
    qpos = d.numpy("qpos") + rng.normal(0, .05, (NWORLD, m.nq))
    qvel = rng.normal(0, .5, (NWORLD, m.nv))
    outs = []
    for replayed in (True, False):
        replay.ENABLED = replayed
        try:
            for _ in range(5):
                d.qpos.from_numpy(qpos)
                d.qvel.from_numpy(qvel)
                tiphys.forward(m, d)
        finally:
            replay.ENABLED = True
        outs.append({name: d.numpy(name) for name in ("qacc", "efc_force", "sensordata")})
    assert d.scratch.replay["forward"].ready
    _same(outs[0], outs[1])


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
def test_step1_and_step2_are_replayed_too(integrator):
    """step1 and step2 (a control set between them) record and replay like step, the
    same bits as with replays off."""
    m = tiphys.load_model_from_string(XML.replace('timestep="0.005"',
                                      f'timestep="0.005" integrator="{integrator}"'))
    outs = []
    for replayed in (True, False):
        replay.ENABLED = replayed
        try:
            d = tiphys.make_data(m, NWORLD)
            rng = np.random.default_rng(4)
            for _ in range(30):
                tiphys.step1(m, d)
                d.ctrl.from_numpy(rng.uniform(-1, 1, (NWORLD, m.nu)))
                tiphys.step2(m, d)
        finally:
            replay.ENABLED = True
        outs.append({name: d.numpy(name) for name in ("qpos", "qvel", "sensordata")})
        if replayed:
            for name in ("step1", "step2"):
                recording = d.scratch.replay[name]
                assert recording.ready and bool(recording.native) == NATIVE_HERE
    _same(outs[0], outs[1])


def test_inverse_is_replayed_too():
    """inverse records and replays like forward: the same qfrc_inverse, forces and
    sensors as with replays off, from new states each call."""
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    rng = np.random.default_rng(8)
    states = [(d.numpy("qpos") + rng.normal(0, .05, (NWORLD, m.nq)),
               rng.normal(0, .5, (NWORLD, m.nv)), rng.normal(0, 2, (NWORLD, m.nv)))
              for _ in range(6)]
    outs = []
    for replayed in (True, False):
        replay.ENABLED = replayed
        try:
            runs = []
            for qpos, qvel, qacc in states:
                d.qpos.from_numpy(qpos)
                d.qvel.from_numpy(qvel)
                d.qacc.from_numpy(qacc)
                tiphys.inverse(m, d)
                runs.append({name: d.numpy(name) for name in
                             ("qfrc_inverse", "efc_force", "sensordata", "qacc")})
        finally:
            replay.ENABLED = True
        outs.append(runs)
    assert d.scratch.replay["inverse"].ready
    for a, b in zip(*outs):
        _same(a, b)


def test_option_changes_record_again():
    m = tiphys.load_model_from_string(XML)

    def change(k, m, d):
        if k == 10:
            m.opt.timestep = 0.002
        if k == 20:
            m.opt.disableflags |= 1 << 4  # mjDSBL_CONTACT
        if k == 30:
            m.opt.disableflags &= ~(1 << 4)
    _, on = _run(m, 40, True, between=change)
    m2 = tiphys.load_model_from_string(XML)
    _, off = _run(m2, 40, False, between=change)
    _same(on, off)


def test_set_param_records_again():
    m = tiphys.load_model_from_string(XML)

    def change(k, m, d):
        if k == 12:  # frictionloss makes constraint rows possible where there were
            tiphys.set_param(m, "dof_frictionloss",   # only contacts and the limit
                             np.full((NWORLD, m.nv), 0.05))
        if k == 25:
            tiphys.set_param(m, "body_mass", np.asarray(m.arrays.body_mass) * 2)
    d, on = _run(m, 40, True, between=change)
    assert d.scratch.replay["step"].ready
    _, off = _run(tiphys.load_model_from_string(XML), 40, False, between=change)
    _same(on, off)


def test_a_sensor_callback_installed_later_is_called():
    m = tiphys.load_model_from_string(XML)
    seen = []

    def callback(m, d, stage):
        seen.append(stage)
        values = d.numpy("sensordata")
        values[:, 1:3] = len(seen)
        d.sensordata.from_numpy(values)

    def change(k, m, d):
        if k == 10:
            tiphys.set_sensor_callback(callback)
    d, on = _run(m, 15, True, between=change)
    assert len(seen) == 5  # every step after it was installed: no replay skips it
    assert np.all(on["sensordata"][:, 1:3] == 5)


def test_replacing_a_field_array_records_again():
    import taichi as ti
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    for _ in range(5):
        tiphys.step(m, d)
    assert d.scratch.replay["step"].ready
    ctrl = ti.ndarray(d.ctrl.dtype, d.ctrl.shape)
    ctrl.from_numpy(np.full((NWORLD, m.nu), 0.7))
    d.ctrl = ctrl  # a new array: the old recording launches with the old one
    before = d.numpy("qvel")
    tiphys.step(m, d)
    ref = tiphys.make_data(m, NWORLD)
    replay.ENABLED = False
    try:
        for _ in range(5):
            tiphys.step(m, ref)
        ref.ctrl.from_numpy(np.full((NWORLD, m.nu), 0.7))
        tiphys.step(m, ref)
    finally:
        replay.ENABLED = True
    assert not np.array_equal(before, d.numpy("qvel"))
    assert np.array_equal(d.numpy("qvel"), ref.numpy("qvel"))


def test_a_freed_array_drops_the_recording():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    for _ in range(5):
        tiphys.step(m, d)
    recording = d.scratch.replay["step"]
    assert recording.ready and recording.key is not None
    watched = {id(ref()) for ref in recording.refs}
    assert {id(d.qpos), id(d.qvel), id(d.ctrl), id(d.qacc_warmstart)} <= watched
    ref = next(ref for ref in recording.refs if ref() is d.qacc_warmstart)
    ref.__callback__(ref)  # what the array's end calls
    assert recording.key is None
    tiphys.step(m, d)  # records again (and is not replayed with the dropped one)
    assert d.scratch.replay["step"] is not recording


def test_counted_steps_launch_every_kernel():
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    for _ in range(5):
        tiphys.step(m, d)
    with launch.count_launches() as counter:
        tiphys.step(m, d)
    replay.ENABLED = False
    try:
        with launch.count_launches() as staged:
            tiphys.step(m, d)
    finally:
        replay.ENABLED = True
    assert counter["n"] == staged["n"] > 10


def test_plugin_models_replay_only_declared_plugins(monkeypatch):
    from tiphys.plugin.pid import Pid
    m = tiphys.load_model_from_string(PID)
    d, on = _run(m, 30, True)
    assert d.scratch.replay["step"].ready
    _, off = _run(m, 30, False)
    _same(on, off)
    monkeypatch.setattr(Pid, "replayable", False)
    d = tiphys.make_data(m, NWORLD)
    for _ in range(5):
        tiphys.step(m, d)
    assert d.scratch.replay is None or "step" not in d.scratch.replay


@pytest.mark.skipif(not NATIVE_HERE, reason="native replays are for Linux on x86-64/arm64")
def test_native_replay_reads_through_a_pipe_too():
    """Where a seccomp profile forbids process_vm_readv the helper reads Taichi's
    objects by writing them into a pipe: the same tasks and contexts are found."""
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    for _ in range(6):
        tiphys.step(m, d)
    recording = d.scratch.replay["step"]
    native = replay._native_replay
    try:
        native.read_by_pipe(True)
        again = replay.native_program(recording.calls, recording.prog)
    finally:
        native.read_by_pipe(False)
    def pairs(program):
        """the program's (task, context) pairs, a fill's context as its spec's bytes
        (each program has its own copy of the specs)"""
        steps, kept = program
        words = np.frombuffer(b"".join(s for s in steps if isinstance(s, bytes)), np.uint64)
        out, fills = [], iter(kept)
        for task, context in words.reshape(-1, 2):
            out.append((int(task), next(fills) if task == native.FILL_TASK else int(context)))
        return out
    assert again and pairs(again) == pairs(recording.native)


@pytest.mark.skipif(not NATIVE_HERE or platform.machine() != "x86_64",
                    reason="Taichi's runtime fills arrays only on x86-64 CPUs")
@pytest.mark.parametrize("dtype,values", [
    ("f32", [0.0, -0.0, 0.1, -1e-40, 3.4e38, 1e39, float("inf"), float("nan"), 7]),
    ("i32", [0, -1, 2 ** 31 - 1, -2 ** 31, 12345]),
    ("u32", [0, 1, 2 ** 32 - 1]),
])
def test_native_fills_are_the_runtime_fills(dtype, values):
    """The C twin of Ndarray.fill sets the same bits as Taichi's runtime fill, for
    each kind of value a fill is given."""
    import taichi as ti
    from taichi.lang import impl
    prog = impl.get_runtime().prog
    native = replay._native_replay
    for value in values:
        ours, theirs = ti.ndarray(getattr(ti, dtype), (5, 3)), ti.ndarray(getattr(ti, dtype), (5, 3))
        theirs.fill(value)
        spec = replay._fill_spec(prog, ours, value)
        assert spec is not None
        native.run(np.array([native.FILL_TASK, spec[1]], dtype=np.uint64).tobytes())
        assert ours.to_numpy().tobytes() == theirs.to_numpy().tobytes(), value
    # arrays the runtime does not fill (f64, vectors) stay Python calls
    assert replay._fill_spec(prog, ti.ndarray(ti.f64, 4), 1.0) is None
    assert replay._fill_spec(prog, ti.Vector.ndarray(3, ti.f32, 4), 1.0) is None
