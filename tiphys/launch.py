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
scalar and template values) goes straight to the runtime's launch. On a CPU backend
the arrays go into the launch context by their host addresses (as Taichi passes numpy
arrays) and that one filled context is launched again every time: setting an ndarray
argument costs ~1 µs, most of a launch (a kernel of 30 arrays: ~40 µs filled each
time, ~8 µs replayed). On other backends a new context is filled from the list each
launch (a context filled with ndarrays cannot be launched twice: the runtime swaps
their allocations for addresses in it, and a replayed one writes elsewhere; host
addresses would make a GPU backend copy the arrays). Anything else takes Taichi's
own path unchanged: keyword arguments, autodiff, kernels that return values or print,
arguments other than ndarrays, ints and floats (numpy arrays, fields, ...), a new
Taichi runtime (``init(..., reinit=True)``), and kernels whose arguments keep changing
(more than MAX_VARIANTS distinct tuples).

Entries hold weak references to their ndarrays: when one is freed, the entries that
point at it are dropped, so a launch never sees a stale allocation and Data can be
garbage-collected as before.

Serial loop variants: on the CPU a parallel loop costs ~45 µs of thread-pool wake-up
per launch however little work it has (Taichi's pool wakes its workers and waits for
them even for one iteration), which at one or a few worlds is most of a step. Each
kernel therefore has a twin compiled with every loop serial (``ti.loop_config
(serialize=True)`` on each, applied while the twin is built), and a public
``f(m, d, ...)`` call runs the twins when ``d.nworld`` is at most ``serial_worlds``
(``worlds()``, set by model.checks_model_data). Results are the same either way: a
kernel's loops write disjoint entries, or reduce inside one world's serial loop.

``count_launches()`` counts the launches in a ``with`` block (``tiphys run``'s
launches per step, the benchmarks): it wraps whatever ``Kernel.__call__`` is when the
block starts (``_call`` once tiphys has initialised Taichi) and puts it back at the
end, so prepared launches and Taichi's own path are counted alike.
"""
from __future__ import annotations

import ast
import copy
import operator
import os
import sys
import threading
import time
import weakref
from contextlib import contextmanager
from typing import NamedTuple

from taichi.lang import impl, kernel_impl, misc
from taichi.lang._ndarray import Ndarray
from taichi.lang.ast.ast_transformer import ASTTransformer
from taichi.lang.util import cook_dtype
from taichi.types import ndarray_type, primitive_types
from taichi.types.annotations import template
from taichi.types.utils import is_signed

from .kernels.config import DIRECT, RECORDING, SERIAL, WORLDS_TAG, serial_loops
from .kernels.config import tag_worlds  # noqa: F401 (re-exported)

MAX_VARIANTS = 64  # distinct argument tuples per kernel before it stops preparing
# on unless TIPHYS_PREPARED_LAUNCHES=0 (or tiphys.launch.ENABLED = False). The rendering
# check that once failed with them on (test_render's first segmentation image of
# world 0 without its geoms) fails the same way with them off: it depends on what
# the process compiled before (tests/test_ray.py first, empty Taichi cache), not on
# how kernels are launched; the vertex buffer handed to GGUI is the same bytes in a
# good and a bad run.
ENABLED = os.environ.get("TIPHYS_PREPARED_LAUNCHES", "1") != "0"
# replayed contexts with host addresses (see above): on for CPU backends (configure),
# unless TIPHYS_REPLAY_LAUNCHES=0
REPLAY = {"on": False, "allowed": os.environ.get("TIPHYS_REPLAY_LAUNCHES", "1") != "0"}

_taichi_call = kernel_impl.Kernel.__call__
_build_for = None  # Taichi's ASTTransformer.build_For, wrapped by install()
_build_funcdef = None  # Taichi's ASTTransformer.build_FunctionDef, wrapped by install()

# serial twins: used on a CPU backend for launches on at most SERIAL["worlds"] worlds
# (configure(), from tiphys.init); "building" is true while a twin's loops are built;
# the one dict, kernels.config.SERIAL, so that kernels can ask (serial_loops)


def default_serial_worlds(threads: int) -> int:
    """Serial load (gym humanoid worlds, kernels/config.serial_load) up to which the
    serial twins beat the world twins: those save (1 - 1/threads) of the work and
    cost a thread-pool wake-up per loop. Measured with native replays and Taichi's
    512-iteration blocks off (2026-11-28, gym humanoid, 2 threads, ms per step,
    serial / world twins): 64 worlds 4.5 / 8.8, 128 worlds 9.3 / 10.0, 192 worlds
    14.1 / 12.7, 256 worlds 18.8 / 14.9, 1024 worlds 102 / 56. The break-even is near
    70 worlds' work per saved fraction (140 on 2 threads); one thread: always
    serial."""
    if threads <= 1:
        return 1 << 30
    return int(70 * threads / (threads - 1))


def configure(cpu: bool, serial_worlds: int) -> None:
    """Called by tiphys.init: serial twins on a CPU backend up to ``serial_worlds``
    worlds (0: never)."""
    SERIAL.update(cpu=bool(cpu), worlds=int(serial_worlds))
    REPLAY["on"] = bool(cpu) and REPLAY["allowed"]


def _variant(args):
    """The twin a launch with these arguments runs on a CPU backend: "serial" up to
    SERIAL["worlds"] worlds (its first world-tagged array's), "worlds" beyond (unless
    WORLD_TWINS is off), None for launches given no world-tagged array and on other
    backends (the kernel itself)."""
    if not SERIAL["cpu"]:
        return None
    for value in args:
        load = getattr(value, WORLDS_TAG, None)
        if load is not None:
            if serial_loops(load):
                return "serial"
            return "worlds" if WORLD_TWINS["on"] else None
    return None


# world twins: for Data of more than serial_worlds worlds on a CPU backend, each
# kernel's twin whose ndrange loops run parallel over their first index only, the
# rest of each iteration a serial loop (TIPHYS_WORLD_TWINS=0: the kernels' own
# parallel loops). Taichi parallelises a kernel's outermost loops over every index
# of an ndrange, one small body per (world, element) call; over worlds alone each
# thread runs whole worlds through ordinary loops, as the serial twins do.
WORLD_TWINS = {"on": os.environ.get("TIPHYS_WORLD_TWINS", "1") != "0"}


def _twin(kernel, kind: str = "serial"):
    """The kernel's twin of this kind (made once): the same function as a kernel of
    its own, whose loops are built serial ("serial") or parallel over worlds only
    ("worlds")."""
    attr = "_tiphys_twin" if kind == "serial" else "_tiphys_wtwin"
    twin = kernel.__dict__.get(attr)
    if twin is None:
        twin = kernel_impl.Kernel(kernel.func, kernel.autodiff_mode, kernel.classkernel)
        twin.__dict__["_tiphys_twin_kind"] = kind
        kernel.__dict__[attr] = twin
        _TWINNED.append(kernel)
    return twin


_TWINNED: list = []  # kernels that have a twin (dropped when Taichi resets)


def _twin_kind(kernel):
    """"serial" or "worlds" for a twin, False for a kernel itself."""
    return kernel.__dict__.get("_tiphys_twin_kind", False)


def _serializable(ctx, node) -> bool:
    """A range or ndrange loop (static loops unroll; Taichi cannot serialize a struct
    for over an ndarray's elements, ti.grouped(array))."""
    decorator = ASTTransformer.get_decorator(ctx, node.iter)
    if decorator == "grouped":
        return ASTTransformer.get_decorator(ctx, node.iter.args[0]) == "ndrange"
    return decorator == "ndrange" or (decorator == "" and isinstance(node.iter, ast.Call)
                                      and isinstance(node.iter.func, ast.Name)
                                      and node.iter.func.id == "range")


def _build_for_serial_aware(ctx, node):
    building = SERIAL["building"]
    if building:
        # both twins: an ndrange loop as a loop over its first index around the rest
        # (the same iterations in the same order; a serial twin's flat ndrange would
        # divide its counter to find the indices at every iteration), and a (world,
        # row) loop over the world's own rows
        split = _split_ndrange(ctx, node)
        if split is not None:
            node = _own_rows(split)
    if building == "serial" and _serializable(ctx, node):
        misc._parallelize(1)  # what ti.loop_config(serialize=True) does
    return _build_for(ctx, node)


# kernels whose top-level loops over worlds are merged into one in world twins
# (_merge_world_loops): every loop of each reads and writes, for a world, only that
# world's rows of the arrays the kernel's loops write (and the model), so that running
# a world's loops one after the other, worlds in parallel, computes what the loops run
# one after the other over all worlds compute, bit for bit. Checked by reading each.
MERGE_WORLD_LOOPS = {"on": os.environ.get("TIPHYS_MERGE_WORLD_LOOPS", "1") != "0"}
PER_WORLD_KERNELS = frozenset({
    "_rk4_stage", "_kinematics", "_com_pos", "_actuation_limits", "_crb", "_rne",
    "_fwd_acceleration", "_velocity", "_passive", "_camlight", "_finish", "_cfrc_ext",
    "_cacc_cfrc_int",
})


class _WorldLoop(NamedTuple):
    key: str  # the bound's dump: loops of equal keys run over the same worlds
    bound: ast.expr
    body: list  # the statements one world's iteration runs
    world: str  # the world index's name in them


def _world_loop(ctx, node):
    """A top-level loop over worlds as a _WorldLoop, on a copy of it: ``for w, ... in
    ti.ndrange(A, ...)`` (split as _split_ndrange, with _own_rows) or ``for w in
    range(A)``; None for any other statement."""
    if not isinstance(node, ast.For) or node.orelse:
        return None
    node = copy.deepcopy(node)  # (the kernel's cached tree is built again elsewhere)
    split = _split_ndrange(ctx, node)
    if split is not None:
        split = _own_rows(split)
        if len(split.iter.args) != 1:
            return None
        bound = split.iter.args[0]
        return _WorldLoop(ast.dump(bound), bound, split.body, split.target.id)
    if ASTTransformer.get_decorator(ctx, node.iter) == "" and isinstance(node.iter, ast.Call) \
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range" and \
            len(node.iter.args) == 1 and not node.iter.keywords and \
            isinstance(node.target, ast.Name) and not any(
                isinstance(inner, (ast.Break, ast.Continue)) for stmt in node.body
                for inner in ast.walk(stmt)):
        bound = node.iter.args[0]
        return _WorldLoop(ast.dump(bound), bound, node.body, node.target.id)
    return None


def _static_true():
    """``ti.static(True)``: a static if around statements gives them a variable scope."""
    return ast.Call(func=ast.Attribute(value=ast.Name(id="ti", ctx=ast.Load()), attr="static",
                                       ctx=ast.Load()),
                    args=[ast.Constant(value=True)], keywords=[])


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node):
        if node.id == self.old:
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node


def _merge_world_loops(ctx, body):
    """A world twin's kernel body (PER_WORLD_KERNELS) with each run of consecutive
    top-level loops over the same worlds as one loop over them, the runs' loops one
    after the other inside it: one parallel loop (one thread-pool wake-up, one wait
    for every thread) instead of one per loop. Anything else as it is."""
    out = []
    nodes, loops = [], []  # the run so far: its statements and their _WorldLoops
    target = "_tiphys_world"

    def flush():
        if len(loops) == 1:
            out.append(nodes[0])
        elif loops:
            inner = []
            for loop in loops:
                stmts = [_Rename(loop.world, target).visit(stmt) for stmt in loop.body]
                if len(stmts) == 1 and isinstance(stmts[0], ast.For):
                    inner.extend(stmts)  # (a split loop's inner loop: its own scope)
                else:  # a range loop's body, in a scope of its own as it had
                    inner.append(ast.If(test=_static_true(), body=stmts, orelse=[]))
            merged = ast.For(target=ast.Name(id=target, ctx=ast.Store()),
                             iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                           args=[loops[0].bound], keywords=[]),
                             body=inner, orelse=[])
            out.append(_locate(nodes[0], merged, merged.target, merged.iter,
                               merged.iter.func))
        nodes.clear()
        loops.clear()

    for node in body:
        found = _world_loop(ctx, node)
        if found is None or (loops and loops[0].key != found.key):
            flush()
        if found is None:
            out.append(node)
        else:
            nodes.append(node)
            loops.append(found)
    flush()
    return out


def _build_funcdef_merging(ctx, node):
    """Taichi's build_FunctionDef, with a world twin of a PER_WORLD_KERNELS kernel's
    loops over worlds merged (_merge_world_loops) on a copy of its tree."""
    if SERIAL["building"] == "worlds" and MERGE_WORLD_LOOPS["on"] and ctx.is_kernel and \
            getattr(getattr(ctx.func, "func", None), "__name__", None) in PER_WORLD_KERNELS:
        node = copy.copy(node)
        node.body = _merge_world_loops(ctx, node.body)
    return _build_funcdef(ctx, node)


def _own_rows(loop):
    """A split (world, row) loop (_split_ndrange) ``for a in range(A): for b in
    ti.ndrange(B): if b < X[a]: body`` (one bound A; the if alone in the loop, without
    else; X not named in its body) as ``for a in range(A): for b in range(min(B,
    X[a])): body``: in a twin, where each world's iterations run in one thread in
    order, a world visits its own rows (nefc of them, say) instead of all B slots; the
    same iterations in the same order. Any other split loop as it is."""
    inner = loop.body[0]
    if len(loop.iter.args) != 1 or not isinstance(inner.target, ast.Name) or \
            len(inner.body) != 1 or not isinstance(inner.body[0], ast.If):
        return loop
    a, b = loop.target.id, inner.target.id
    test = inner.body[0]
    cmp = test.test
    if test.orelse or not (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and
                           isinstance(cmp.ops[0], ast.Lt) and
                           isinstance(cmp.left, ast.Name) and cmp.left.id == b):
        return loop
    bound = cmp.comparators[0]
    if not (isinstance(bound, ast.Subscript) and isinstance(bound.value, ast.Name) and
            isinstance(bound.slice, ast.Name) and bound.slice.id == a):
        return loop
    array = bound.value.id
    for stmt in test.body:
        for name in ast.walk(stmt):
            if isinstance(name, ast.Name) and (name.id == array or (
                    name.id in (a, b) and not isinstance(name.ctx, ast.Load))):
                return loop  # the count read or passed on, or an index reassigned
    limit = ast.Call(func=ast.Name(id="min", ctx=ast.Load()),
                     args=[inner.iter.args[0], bound], keywords=[])
    rows = ast.For(target=inner.target,
                   iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[limit],
                                 keywords=[]),
                   body=test.body, orelse=[])
    loop.body = [rows]
    _locate(loop, rows, rows.iter, rows.iter.func, limit, limit.func)
    return loop


def _split_ndrange(ctx, node):
    """``for a, b, ... in ti.ndrange(A, B, ...)`` as ``for a in range(A): for b, ... in
    ti.ndrange(B, ...)`` (an outermost loop then runs parallel over a only, the rest of
    each iteration serial; the iterations and their order within each a are the same;
    in a serial twin, the same order without dividing a flat counter), or None for any
    other loop."""
    if ASTTransformer.get_decorator(ctx, node.iter) != "ndrange" or node.orelse:
        return None
    call = node.iter
    if call.keywords or len(call.args) < 2 or any(isinstance(a, ast.Starred)
                                                   for a in call.args):
        return None
    targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
    if len(targets) != len(call.args) or not all(isinstance(t, ast.Name) for t in targets):
        return None
    if any(isinstance(inner, ast.Break) for stmt in node.body for inner in ast.walk(stmt)):
        return None  # a break would leave only the inner loop
    first = call.args[0]
    if isinstance(first, ast.Tuple):
        if len(first.elts) != 2:
            return None
        bounds = list(first.elts)
    else:
        bounds = [first]
    rest = targets[1:]
    inner_target = rest[0] if len(rest) == 1 else ast.Tuple(elts=rest, ctx=ast.Store())
    inner = ast.For(target=inner_target,
                    iter=ast.Call(func=call.func, args=call.args[1:], keywords=[]),
                    body=node.body, orelse=[])
    outer = ast.For(target=targets[0],
                    iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=bounds,
                                  keywords=[]),
                    body=[inner], orelse=[])
    return _locate(node, outer, outer.iter, outer.iter.func, inner, inner.iter,
                   inner_target)


def _locate(node, *made):
    """The nodes a rewrite of loop ``node`` made, given its source location (Taichi's
    error messages point there); returns the first."""
    for new in made:
        ast.copy_location(new, node)
        if hasattr(new, "end_lineno"):
            new.end_lineno, new.end_col_offset = node.end_lineno, node.end_col_offset
    return ast.fix_missing_locations(made[0])


_NONE = kernel_impl.AutodiffMode.NONE


class _Entry:
    # refs: weak references to the entry's ndarrays, whose callbacks drop the entry
    # when one is freed, before its id can be reused: an entry found by the ids in its
    # key therefore has the very arrays of the call
    # ctx: the filled context launched again each time (CPU backends), else None;
    # compiled: the kernel's code, as the runtime's cache holds it (entries are
    # dropped before the runtime is torn down, see forget); name: the kernel
    # function's name (profiles of replayed steps)
    __slots__ = ("prog", "kernel", "ndarrays", "floats", "ints", "refs", "ctx",
                 "compiled", "name")


_TABLES: dict = {}  # id -> every kernel's table of entries (see forget)


def forget() -> None:
    """Drop every prepared launch: called before Taichi's runtime is torn down
    (ti.reset, ti.init), while the kernels the entries point at still exist."""
    for table in list(_TABLES.values()):
        table.clear()


def _taker(positions):
    if not positions:
        return lambda args: ()
    if len(positions) == 1:
        (position,) = positions
        return lambda args: (args[position],)
    return operator.itemgetter(*positions)


def _keyer(kernel):
    """The kernel's key function: an argument tuple -> (ids of the arguments in
    ndarray parameters, types and values of the others), built from C-level calls."""
    params = kernel.arguments
    arrays = tuple(i for i, p in enumerate(params)
                   if isinstance(p.annotation, ndarray_type.NdarrayType))
    others = tuple(i for i in range(len(params)) if i not in arrays)
    take_arrays, take_others = _taker(arrays), _taker(others)
    count = len(params)

    def key(args):
        if len(args) != count:
            raise TypeError("argument count")  # Taichi's own path says what is wrong
        values = take_others(args)
        return tuple(map(id, take_arrays(args))), tuple(map(type, values)), values

    kernel.__dict__["_tiphys_key"] = key
    return key


def _prepare(kernel, args, key, table):
    """A filled launch context for ``args`` (the kernel is compiled already), or None
    when an argument is of a kind this does not replay; it goes into ``table``."""
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
    prog = entry.prog = impl.get_runtime().prog
    entry.kernel = t_kernel
    entry.name = kernel.func.__name__
    entry.ndarrays, entry.floats, entry.ints = tuple(ndarrays), tuple(floats), tuple(ints)
    entry.compiled = prog.compile_kernel(prog.config(), prog.get_device_caps(), t_kernel)
    entry.ctx = _host_context(entry) if REPLAY["on"] else None
    def drop(_ref, table=table, key=key):
        table.pop(key, None)

    entry.refs = tuple((position, weakref.ref(a, drop)) for position, a in arrays)
    return entry


def _host_context(entry):
    """A launch context with the entry's arguments, its arrays given by host address
    (CPU backends only: there an ndarray's memory is host memory, and the runtime
    uses such an address as it is, so the context can be launched again)."""
    prog = entry.prog
    ctx = entry.kernel.make_launch_context()
    for index, arr in entry.ndarrays:
        ctx.set_arg_external_array_with_shape(
            index, prog.get_ndarray_data_ptr_as_int(arr), arr.nelement() * arr.element_size(),
            list(arr.shape), 0)
    for index, value in entry.floats:
        ctx.set_arg_float(index, value)
    for index, value in entry.ints:
        ctx.set_arg_int(index, value)
    return ctx


def _call(self, *args, **kwargs):
    table = self.__dict__.get("_tiphys_prepared")
    key = None
    if table and ENABLED and not kwargs:
        try:
            key = self.__dict__["_tiphys_key"](args)
            entry = table.get(key)
        except TypeError:  # an unhashable template argument, a wrong argument count
            key = entry = None
        if entry is not None:
            runtime = impl.get_runtime()
            prog = runtime.prog
            if entry.prog is prog and not runtime.target_tape:
                ctx = entry.ctx
                if ctx is None:  # not a CPU backend: a new context from the settings
                    ctx = entry.kernel.make_launch_context()
                    for index, arr in entry.ndarrays:
                        ctx.set_arg_ndarray(index, arr)
                    for index, value in entry.floats:
                        ctx.set_arg_float(index, value)
                    for index, value in entry.ints:
                        ctx.set_arg_int(index, value)
                prog.launch_kernel(entry.compiled, ctx)
                if RECORDING[0] is not None:
                    _record(prog, entry, ctx)
                return None
    if RECORDING[0] is not None:  # Taichi's own path: not a replayable launch
        RECORDING[0].ok = False
    target = self  # the kernel that runs: a twin on the CPU (serial, or over worlds)
    if self.autodiff_mode == _NONE and not _twin_kind(self):
        kind = _variant(args)
        if kind is not None:
            target = _twin(self, kind)
    building = SERIAL["building"]
    SERIAL["building"] = _twin_kind(target)
    try:
        if target.compiled_kernels or _NOTICE["shown"]:
            result = _taichi_call(target, *args, **kwargs)
        else:  # this kernel's first instance is compiled (or loaded from the cache) now
            result = _compiling(target, args, kwargs)
    finally:
        SERIAL["building"] = building
    if table is False or kwargs or not ENABLED:
        return result
    if table is None:
        if self.autodiff_mode != _NONE or self.return_type is not None or \
                self.has_print or target.has_print:
            self.__dict__["_tiphys_prepared"] = False
            return result
        table = self.__dict__["_tiphys_prepared"] = {}
        _TABLES[id(table)] = table
    runtime = impl.get_runtime()
    if len(table) >= MAX_VARIANTS or runtime.target_tape or runtime.fwd_mode_manager:
        return result
    try:
        key = (self.__dict__.get("_tiphys_key") or _keyer(self))(args) if key is None \
            else key
        hash(key)
    except TypeError:
        return result
    if any(isinstance(value, Ndarray) for value in key[2]):
        return result  # an array as a template argument: the key would keep it alive
    entry = _prepare(target, args, key, table)  # the twin's code, in this kernel's table
    if entry is not None:
        table[key] = entry
    return result


_COUNTING = [0]  # count_launches blocks open: direct launches step aside (counted)


def _direct_entry(kernel, args):
    """The prepared launch of ``kernel(*args)`` after such a launch (kernels/bind.py
    keeps it for its name-bound calls), or None: only replayed contexts (CPU backends),
    whose arguments cannot change under them."""
    primal = getattr(kernel, "_primal", None)
    if primal is None:
        return None
    table = primal.__dict__.get("_tiphys_prepared")
    keyer = primal.__dict__.get("_tiphys_key")
    if not table or keyer is None:
        return None
    try:
        entry = table.get(keyer(args))
    except TypeError:
        return None
    return entry if entry is not None and entry.ctx is not None else None


def _fire(entry) -> bool:
    """Launch a kept prepared launch, unless launches are being counted, prepared
    launches are off, the Taichi runtime is not the entry's (reset) or a tape records:
    then False, and the caller takes the kernel's own call."""
    runtime = impl.get_runtime()
    prog = runtime.prog
    if entry.prog is not prog or not ENABLED or _COUNTING[0] or runtime.target_tape:
        return False
    prog.launch_kernel(entry.compiled, entry.ctx)
    if RECORDING[0] is not None:
        _record(prog, entry, entry.ctx)
    return True


def _record(prog, entry, ctx) -> None:
    """Note a prepared launch in the call being recorded (tiphys/replay.py): only a
    context filled once (CPU backends) can be launched again."""
    rec = RECORDING[0]
    if entry.ctx is None or ctx is not entry.ctx:
        rec.ok = False
        return
    rec.calls.append((prog.launch_kernel, entry.compiled, ctx))
    arrays = rec.arrays
    for _, ref in entry.refs:
        array = ref()
        if array is None:
            rec.ok = False
        else:
            arrays[id(array)] = array


_ndarray_fill = Ndarray.fill


def _fill(self, val):
    """Ndarray.fill, noted in the call being recorded: where Taichi fills without a
    kernel (the runtime's fill routines), the replay calls fill again."""
    rec = RECORDING[0]
    if rec is None:
        return _ndarray_fill(self, val)
    count = len(rec.calls)
    result = _ndarray_fill(self, val)
    if rec.ok and len(rec.calls) == count:  # no kernel launch was noted
        rec.calls.append((_fill_again, weakref.ref(self), val))
        rec.arrays[id(self)] = self
    return result


def _fill_again(ref, val) -> None:
    _ndarray_fill(ref(), val)


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
    for kernel in _TWINNED:  # twins belong to the runtime too
        kernel.__dict__.pop("_tiphys_twin", None)
        kernel.__dict__.pop("_tiphys_wtwin", None)
    _TWINNED.clear()
    _taichi_reset()


def install() -> None:
    """Route Taichi kernel calls through the prepared launches (and serial twins),
    drop them whenever Taichi resets its runtime (ti.reset, ti.init), and let twins
    build their loops serial (once)."""
    global _build_for, _build_funcdef
    if kernel_impl.Kernel.__call__ is not _call:
        kernel_impl.Kernel.__call__ = _call
    if _build_for is None:
        _build_for = ASTTransformer.build_For
        ASTTransformer.build_For = staticmethod(_build_for_serial_aware)
    if _build_funcdef is None:
        _build_funcdef = ASTTransformer.build_FunctionDef
        ASTTransformer.build_FunctionDef = staticmethod(_build_funcdef_merging)
    if impl.reset is not _reset:
        impl.reset = _reset
    if Ndarray.fill is not _fill:
        Ndarray.fill = _fill
    DIRECT.update(entry=_direct_entry, fire=_fire)


@contextmanager
def count_launches():
    """Count Taichi kernel launches inside the ``with`` block: ``counter["n"]``, and
    the ndarray arguments they were given, ``counter["arrays"]`` (what most of a
    launch's host time goes to setting)."""
    from taichi.lang.kernel_impl import Kernel

    counter = {"n": 0, "arrays": 0}
    original = Kernel.__call__

    def counting(self, *args, **kwargs):
        counter["n"] += 1
        counter["arrays"] += sum(isinstance(value, Ndarray) for value in args)
        return original(self, *args, **kwargs)

    Kernel.__call__ = counting
    _COUNTING[0] += 1
    try:
        yield counter
    finally:
        _COUNTING[0] -= 1
        Kernel.__call__ = original
