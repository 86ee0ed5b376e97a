"""Recorded steps: ``step``, ``forward``, ``inverse``, ``step1`` and ``step2`` replayed as
one list of launches.

On a CPU backend every launch of a step is a prepared launch (tiphys/launch.py): a
filled launch context handed to the runtime again. Once the stages' host code has
made its plans and scratch, a step launches the same contexts in the same order every
time, so the Python that decides them (stage drivers, option checks, argument
binding: about a quarter of a one-world step) only repeats itself. A recorded call
keeps that list and runs it in one loop.

Protocol, per Data and public function (``step``, ``forward``, ``inverse``, ``step1``,
``step2``):

- a call runs the stages as usual while it records what it launches: prepared
  launches (compiled kernel, context) and the runtime's array fills;
- a recording is kept only if the call did nothing a replay cannot repeat: every
  launch went through a replayable context (no first launch, no compile, no Taichi
  call path, no other array operation, no user callback: kernels.config.opaque);
- two successive calls with the same key that record the same launches make it
  ready; from then on a call with that key replays it.

The key holds everything the stages' host code decides on: the model, its options
object (replaced whenever an option changes), its plans (replaced by set_param),
field assignment counts of the model and the data (arrays or sizes replaced), the
data's host flags (constraint rows, energy, islands), the user callbacks, and
the launch settings. A recording also watches every array it
launches with: when one is freed, it is dropped. Replays are off while launches are
counted (``count_launches``), when prepared launches are off, on backends whose
contexts cannot be launched twice (GPUs), under an autodiff tape, and for models
with plugins whose class does not declare ``replayable = True``. ``TIPHYS_REPLAY=0``
turns them off.

What stays outside the recording: ``stepped`` (the warning report every
REPORT_EVERY steps) runs after every step, replayed or not.

Native replays: Taichi's CPU launcher spends ~0.7 us plus ~0.2 us per kernel parameter
on every launch before it calls the kernel's compiled tasks, most of a one-world step.
Where the C helper ``tiphys/_native_replay.c`` finds those tasks and the contexts'
RuntimeContexts (Taichi 1.7.4's layouts, checked), a ready recording is turned once
into runs of (task, context) pairs that C calls in order, the array fills among them
as C twins of the runtime's fill (32-bit words set to the value's bits). It is the
same compiled code on the same contexts, so results are bit for bit those of the
launches it replaces. Where the helper is missing, finds
anything unexpected, or Taichi runs in debug mode (which checks for errors after each
launch), the recording replays through ``launch_kernel`` as before.
``TIPHYS_NATIVE_REPLAY=0`` turns native replays off.
"""
from __future__ import annotations

import array
import os
import weakref

from taichi._lib import core as _ti_core
from taichi.lang import impl
from taichi.types import primitive_types

from .kernels.config import RECORDING, options_of
from .kernels import callbacks
from .kernels.sensor import sensor_callback
from . import launch as _launch

ENABLED = os.environ.get("TIPHYS_REPLAY", "1") != "0"
NATIVE = {"on": os.environ.get("TIPHYS_NATIVE_REPLAY", "1") != "0"}

try:
    from . import _native_replay
except ImportError:  # not built (no C compiler at install): replays go through Taichi
    _native_replay = None

_FILL_KINDS = {primitive_types.f32: "f", primitive_types.i32: "i", primitive_types.u32: "u"}


class Recorder:
    """What one call launched: ``calls``, (function, first, second) triples the replay
    calls as function(first, second); ``arrays``, weak references to every array they
    use; ``ok`` false once the call did something a replay cannot repeat."""

    __slots__ = ("calls", "arrays", "ok")

    def __init__(self):
        self.calls = []
        self.arrays = {}
        self.ok = True


class Recording:
    """One (Data, function) pair's replay state: the key and launches of the last
    recorded call (``pending``), and whether two calls agreed (``ready``)."""

    __slots__ = ("key", "calls", "ready", "refs", "prog", "native", "__weakref__")

    def __init__(self, key, rec: Recorder, prog):
        self.key = key
        self.calls = tuple(rec.calls)
        self.ready = False
        self.prog = prog
        self.native = None  # not tried yet; False: not available; else native_program
        me = weakref.ref(self)

        def dropped(_ref, me=me):
            recording = me()
            if recording is not None:
                recording.key = None  # an array it launches with is gone
        self.refs = [weakref.ref(array, dropped) for array in rec.arrays.values()]

    def same(self, rec: Recorder) -> bool:
        calls = rec.calls
        if len(calls) != len(self.calls):
            return False
        return all(a[1] is b[1] and (a[2] is b[2] or a[2] == b[2]) and a[0] == b[0]
                   for a, b in zip(self.calls, calls))


def native_program(calls, prog):
    """``calls`` as what ``_run_native`` runs: (steps, kept), steps a tuple of bytes of
    packed (task, context) address pairs, each launch's compiled tasks and each array
    fill Taichi's runtime makes (a C twin of it), with any other call as it is; kept,
    the fill specs the pairs point into. None where a launch's tasks cannot be found."""
    if _native_replay is None or not _native_replay.SUPPORTED or not NATIVE["on"] or \
            impl.current_cfg().debug:
        return None
    steps, pairs, kept = [], [], []
    for call in calls:
        function, first, second = call
        if getattr(function, "__name__", None) == "launch_kernel" and \
                getattr(function, "__self__", None) is prog:
            found = _native_replay.tasks(prog, first, second)
            if found is None:
                return None
            tasks, context = found
            for task in tasks:
                pairs.extend((task, context))
            continue
        if function is _launch._fill_again:
            spec = _fill_spec(prog, first(), second)
            if spec is not None:
                kept.append(spec[0])
                pairs.extend((_native_replay.FILL_TASK, spec[1]))
                continue
        if pairs:
            steps.append(array.array("Q", pairs).tobytes())
            pairs = []
        steps.append(call)
    if pairs:
        steps.append(array.array("Q", pairs).tobytes())
    return tuple(steps), tuple(kept)


def _fill_spec(prog, arr, value):
    """The C twin of ``arr.fill(value)`` where Taichi's CPU runtime fills it (an x64
    backend, an array of f32, i32 or u32 scalars: every 32-bit word of its allocation
    set to the value's bits), else None (the fill stays a Python call)."""
    if arr is None or impl.current_cfg().arch != _ti_core.Arch.x64 or \
            _ti_core.is_tensor(arr.element_type):
        return None
    kind = _FILL_KINDS.get(arr.dtype)
    # Taichi's fill takes an int, or a float for an f32 array
    if kind is None or not (type(value) is int or (kind == "f" and type(value) is float)):
        return None
    nbytes = arr.arr.nelement() * arr.arr.element_size()
    return _native_replay.fill(prog.get_ndarray_data_ptr_as_int(arr.arr), nbytes // 4, kind,
                               value)


def _run_native(native) -> None:
    run = _native_replay.run
    for step in native[0]:
        if step.__class__ is bytes:
            run(step)
        else:
            step[0](step[1], step[2])


def _plugins_replayable(m) -> bool:
    return all(getattr(type(p), "replayable", False) for p in getattr(m, "plugins", ()))


def _key(m, d, name: str):
    return (name, m, options_of(m), m.plans, m.fields_set, d.fields_set, d._constrained,
            d._energy_set, d._islands_set, d._sleep_used, sensor_callback(), callbacks.installed(),
            _launch.SERIAL["worlds"])


def _usable() -> bool:
    return (ENABLED and _launch.ENABLED and _launch.REPLAY["on"] and
            not _launch._COUNTING[0] and RECORDING[0] is None and
            not impl.get_runtime().target_tape)


def run(name: str, body, m, d) -> None:
    """``body(m, d)``, replayed from its recording when one is ready for this key,
    else run (and recorded when replays are usable)."""
    if not _usable():
        body(m, d)
        return
    table = d.scratch.replay
    if table is None:
        table = d.scratch.replay = {}
    recording = table.get(name)
    key = _key(m, d, name)
    prog = impl.get_runtime().prog
    if recording is not None and recording.ready and recording.key == key and \
            recording.prog is prog:
        native = recording.native
        if native is None:
            native = recording.native = native_program(recording.calls, prog) or False
        if native:
            _run_native(native)
            return
        for function, first, second in recording.calls:
            function(first, second)
        return
    if not _plugins_replayable(m):
        body(m, d)
        return
    rec = Recorder()
    RECORDING[0] = rec
    try:
        body(m, d)
    except BaseException:
        rec.ok = False
        raise
    finally:
        RECORDING[0] = None
        if not rec.ok:
            table.pop(name, None)
    if not rec.ok:
        return
    if recording is not None and recording.key == key and recording.prog is prog and \
            recording.same(rec):
        recording.ready = True
    else:
        table[name] = Recording(key, rec, prog)

