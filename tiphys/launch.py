"""Prepared kernel launches: the argument work of a (kernel, arguments) pair is done
once, and later launches with the same arguments only fill a launch context.

Taichi 1.7.4's ``Kernel.__call__`` does all of its argument work in Python on every
launch: it matches the arguments against the kernel's signature (feature extraction
for the compiled-instance lookup), type-checks each one and writes each into a new
launch context, then looks the compiled kernel up again. That costs several µs per
ndarray argument, and a step is ~130 launches of 15-40 arguments each: at one or a
few worlds most of a step's time. tiphys launches the same kernels with the same
Data and Model arrays every step, so after the first launch of a kernel with a given
argument tuple this keeps the compiled kernel and the list of (slot, value) settings,
and the next launch with the same arguments (the same ndarray objects, the same
scalar and template values) fills a new launch context from that list and goes
straight to the runtime's launch. (A filled context cannot be launched twice: the
runtime keeps state in it, and a replayed one corrupts later launches.) Anything else takes Taichi's
own path unchanged: keyword arguments, autodiff, kernels that return values or print,
arguments other than ndarrays, ints and floats (numpy arrays, fields, ...), a new
Taichi runtime (``init(..., reinit=True)``), and kernels whose arguments keep changing
(more than MAX_VARIANTS distinct tuples).

Entries hold weak references to their ndarrays: when one is freed, the entries that
point at it are dropped, so a launch never sees a stale allocation and Data can be
garbage-collected as before.

``count_launches()`` counts the launches in a ``with`` block (``tiphys run``'s
launches per step, the benchmarks): it wraps whatever ``Kernel.__call__`` is when the
block starts (``_call`` once tiphys has initialised Taichi) and puts it back at the
end, so prepared launches and Taichi's own path are counted alike.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from contextlib import contextmanager

from taichi.lang import impl, kernel_impl
from taichi.lang._ndarray import Ndarray
from taichi.lang.util import cook_dtype
from taichi.types import ndarray_type, primitive_types
from taichi.types.annotations import template
from taichi.types.utils import is_signed

MAX_VARIANTS = 64  # distinct argument tuples per kernel before it stops preparing
# on unless TIPHYS_PREPARED_LAUNCHES=0 (or tiphys.launch.ENABLED = False). The rendering
# check that once failed with them on (test_render's first segmentation image of
# world 0 without its geoms) fails the same way with them off: it depends on what
# the process compiled before (tests/test_ray.py first, empty Taichi cache), not on
# how kernels are launched; the vertex buffer handed to GGUI is the same bytes in a
# good and a bad run.
ENABLED = os.environ.get("TIPHYS_PREPARED_LAUNCHES", "1") != "0"

_taichi_call = kernel_impl.Kernel.__call__
_NONE = kernel_impl.AutodiffMode.NONE


class _Entry:
    __slots__ = ("prog", "kernel", "ndarrays", "floats", "ints", "refs")

    def matches(self, args) -> bool:
        """The entry's ndarrays are still these very objects (ids alone could be
        reused by a new array once one is freed)."""
        for position, ref in self.refs:
            if ref() is not args[position]:
                return False
        return True


_TABLES: dict = {}  # id -> every kernel's table of entries (see forget)


def forget() -> None:
    """Drop every prepared launch: called before Taichi's runtime is torn down
    (ti.reset, ti.init), while the kernels the entries point at still exist."""
    for table in list(_TABLES.values()):
        table.clear()


def _key(args):
    return tuple(id(a) if isinstance(a, Ndarray) else (a.__class__, a) for a in args)


def _prepare(kernel, args, key):
    """A filled launch context for ``args`` (the kernel is compiled already), or None
    when an argument is of a kind this does not replay."""
    instance_id, _ = kernel.mapper.lookup(args)
    t_kernel = kernel.compiled_kernels[(kernel.func, instance_id, kernel.autodiff_mode)]
    ndarrays, floats, ints = [], [], []
    arrays = [(position, value) for position, value in enumerate(args)
              if isinstance(value, Ndarray)]
    slot = 0
    for param, value in zip(kernel.arguments, args):
        needed = param.annotation
        if isinstance(needed, template):
            continue
        index = (slot,)
        slot += 1
        if isinstance(needed, ndarray_type.NdarrayType) and isinstance(value, Ndarray):
            if value.grad is not None:
                return None
            ndarrays.append((index, value.arr))
        elif id(needed) in primitive_types.real_type_ids and \
                isinstance(value, (int, float)) and not isinstance(value, bool):
            floats.append((index, float(value)))
        elif id(needed) in primitive_types.integer_type_ids and isinstance(value, int) and \
                not isinstance(value, bool) and is_signed(cook_dtype(needed)):
            ints.append((index, int(value)))
        else:
            return None
    entry = _Entry()
    entry.prog = impl.get_runtime().prog
    entry.kernel = t_kernel
    entry.ndarrays, entry.floats, entry.ints = tuple(ndarrays), tuple(floats), tuple(ints)
    table = kernel.__dict__["_tiphys_prepared"]

    def drop(_ref, table=table, key=key):
        table.pop(key, None)

    entry.refs = tuple((position, weakref.ref(a, drop)) for position, a in arrays)
    return entry


def _call(self, *args, **kwargs):
    table = self.__dict__.get("_tiphys_prepared")
    key = None
    if table and ENABLED and not kwargs:
        try:
            key = _key(args)
            entry = table.get(key)
        except TypeError:  # an unhashable template argument
            key = entry = None
        if entry is not None:
            runtime = impl.get_runtime()
            prog = runtime.prog
            if entry.prog is prog and not runtime.target_tape and entry.matches(args):
                # a new context each launch: the runtime does not let one be replayed;
                # the compiled kernel is looked up each time, as Taichi does (a held
                # reference would outlive the runtime's own cache entry)
                ctx = entry.kernel.make_launch_context()
                for index, arr in entry.ndarrays:
                    ctx.set_arg_ndarray(index, arr)
                for index, value in entry.floats:
                    ctx.set_arg_float(index, value)
                for index, value in entry.ints:
                    ctx.set_arg_int(index, value)
                prog.launch_kernel(
                    prog.compile_kernel(prog.config(), prog.get_device_caps(), entry.kernel),
                    ctx)
                return None
    if self.compiled_kernels or _NOTICE["shown"]:
        result = _taichi_call(self, *args, **kwargs)
    else:  # this kernel's first instance is compiled (or loaded from the cache) now
        result = _compiling(self, args, kwargs)
    if table is False or kwargs or not ENABLED:
        return result
    if table is None:
        if self.autodiff_mode != _NONE or self.return_type is not None or self.has_print:
            self.__dict__["_tiphys_prepared"] = False
            return result
        table = self.__dict__["_tiphys_prepared"] = {}
        _TABLES[id(table)] = table
    runtime = impl.get_runtime()
    if len(table) >= MAX_VARIANTS or runtime.target_tape or runtime.fwd_mode_manager:
        return result
    try:
        key = _key(args) if key is None else key
        hash(key)
    except TypeError:
        return result
    entry = _prepare(self, args, key)
    if entry is not None:
        table[key] = entry
    return result


# "compiling kernels (one-time)" on stderr once a process has spent this long in first
# launches (Taichi turning kernels into code, or loading them from its cache), so that
# a first step that takes seconds says why; TIPHYS_QUIET=1 keeps it quiet
NOTICE_AFTER_S = 1.0
NOTICE = ("tiphys: compiling kernels (one-time per process; Taichi's offline cache makes "
          "it faster from the second run on)")
_NOTICE = {"shown": os.environ.get("TIPHYS_QUIET", "0") not in ("", "0"), "spent": 0.0}


def _show_notice() -> None:
    if not _NOTICE["shown"]:
        _NOTICE["shown"] = True
        print(NOTICE, file=sys.stderr, flush=True)


def _compiling(kernel, args, kwargs):
    """A kernel's first launch, timed: the notice goes out while it runs once the
    first launches of the process have taken NOTICE_AFTER_S in all."""
    timer = threading.Timer(max(0.0, NOTICE_AFTER_S - _NOTICE["spent"]), _show_notice)
    timer.daemon = True
    start = time.perf_counter()
    timer.start()
    try:
        return _taichi_call(kernel, *args, **kwargs)
    finally:
        timer.cancel()
        _NOTICE["spent"] += time.perf_counter() - start


_taichi_reset = impl.reset


def _reset():
    forget()  # the entries point into the runtime that reset tears down
    _taichi_reset()


def install() -> None:
    """Route Taichi kernel calls through the prepared launches, and drop them whenever
    Taichi resets its runtime (ti.reset, ti.init) (once)."""
    if kernel_impl.Kernel.__call__ is not _call:
        kernel_impl.Kernel.__call__ = _call
    if impl.reset is not _reset:
        impl.reset = _reset


@contextmanager
def count_launches():
    """Count Taichi kernel launches inside the ``with`` block: ``counter["n"]``."""
    from taichi.lang.kernel_impl import Kernel

    counter = {"n": 0}
    original = Kernel.__call__

    def counting(self, *args, **kwargs):
        counter["n"] += 1
        return original(self, *args, **kwargs)

    Kernel.__call__ = counting
    try:
        yield counter
    finally:
        Kernel.__call__ = original
