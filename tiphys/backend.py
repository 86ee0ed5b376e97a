"""Taichi initialisation and the engine's float precision.

The settings themselves live in kernels/config.py (tiphys.kernels.config), which the
kernels read; ``precision``, ``float_dtype``, ``arch``, ``generation`` and ``ensure_init``
are re-exported from there."""
from __future__ import annotations

import contextlib
import ctypes
import io
import os
import weakref

import numpy as np
import taichi as ti

from . import launch
from .kernels import config as _config

_STATE = _config.STATE  # the one record of the settings, shared with the kernels


class InitError(RuntimeError):
    """tiphys.init asked to switch a backend that already runs."""


def _short_position_info(self, node) -> str:
    """Where an AST node is, for Taichi's compile-error messages: file, line, function,
    the source line and a caret line under the node.

    Taichi 1.7.4 builds this text for every name and statement it transforms, wrapping
    each source line with textwrap, and only shows it when compilation fails. On a
    whole step that is half of the Python-side kernel transform, which runs in every
    new process even when the offline cache holds the compiled kernels (measured on the
    bundled scene: a warm first step of 8.6 s, 2.5 s of it here). This keeps the same
    facts in the message without the wrapping."""
    lineno = node.lineno + self.lineno_offset
    code = self.src[node.lineno - 1] if 0 < node.lineno <= len(self.src) else ""
    msg = f'File "{self.file}", line {lineno}, in {self.func.func.__name__}:\n{code}\n'
    end = getattr(node, "end_col_offset", None)
    if end is not None and getattr(node, "end_lineno", node.lineno) == node.lineno:
        start = self.indent + node.col_offset
        msg += " " * start + "^" * max(1, self.indent + end - start) + "\n"
    return msg


# function -> (file, source lines as Taichi tidies them, first line, the dedented
# text): what _tree_and_ctx parses
_SOURCES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _tree_and_ctx(self, excluded_parameters=(), is_kernel=True, arg_features=None,
                  args=None, ast_builder=None, is_real_function=False):
    """Taichi 1.7.4's ``kernel_impl._get_tree_and_ctx`` with each function's source read
    once per process.

    Taichi reads a function's source (inspect.getsourcelines: tokenizing its file) and
    re-wraps every line with textwrap each time the function is transformed, and a
    ti.func is transformed once per kernel that inlines it: ~2600 times on the bundled
    scene's first step, ~1.5 s of a warm first step (the offline cache still needs the
    transform to find its key). The source of a function does not change within a
    process (Taichi's own caching assumes the same), so the text is kept; the tree is
    still parsed fresh each time, because the transform writes into it."""
    from taichi.lang import kernel_impl as ki
    func = self.func
    cached = _SOURCES.get(func)
    if cached is None:
        file = ki.getsourcefile(func)
        src, start_lineno = ki.getsourcelines(func)
        src = [ki.textwrap.fill(line, tabsize=4, width=9999) for line in src]
        cached = _SOURCES[func] = (file, src, start_lineno,
                                   ki.textwrap.dedent("\n".join(src)))
    file, src, start_lineno, text = cached
    tree = ki.ast.parse(text)
    tree.body[0].decorator_list = []
    global_vars = ki._get_global_vars(func)
    if is_kernel or is_real_function:
        for i in self.template_slot_locations:  # template parameters become globals
            global_vars[self.arguments[i].name] = args[i]
    return tree, ki.ASTTransformerContext(
        excluded_parameters=excluded_parameters, is_kernel=is_kernel, func=self,
        arg_features=arg_features, global_vars=global_vars, argument_data=args, src=src,
        start_lineno=start_lineno, file=file, ast_builder=ast_builder,
        is_real_function=is_real_function)


def _full_index(arr, key) -> bool:
    """Whether ``key`` names one element of ``arr`` (an int per dimension): what Taichi
    itself answers; anything else (fewer indices, slices, index arrays) numpy does."""
    ints = (int, np.integer)
    if isinstance(key, ints):
        return len(arr.shape) == 1
    return (isinstance(key, tuple) and len(key) == len(arr.shape)
            and all(isinstance(k, ints) for k in key))


def _numpy_style(cls) -> None:
    """Data and Model fields are Taichi ndarrays. Taichi reads and writes one element
    at a time and rejects anything else; for the rest, numpy's indexing on a host copy
    (``d.qpos[0]``, ``d.qpos[:, 2] = ...``), and ``np.asarray(d.qpos)``; on the CPU
    backends ``from_numpy``/``to_numpy`` copy memory instead of launching kernels. Arrays keep
    Taichi's padding (a size MuJoCo has as 0 is 1 here); ``d.numpy(name)`` removes it."""
    get, put = cls.__getitem__, cls.__setitem__

    def __getitem__(self, key):
        if key is None or _full_index(self, key):
            return get(self, key)
        return download(self)[key]

    def __setitem__(self, key, value):
        if key is None or _full_index(self, key):
            return put(self, key, value)
        host = download(self)
        host[key] = value
        upload(self, host)

    def __array__(self, dtype=None, copy=None):
        host = download(self)
        return host if dtype is None else host.astype(dtype)

    cls.__getitem__, cls.__setitem__, cls.__array__ = __getitem__, __setitem__, __array__
    taichi_from_numpy, taichi_to_numpy = TAICHI_NUMPY.setdefault(
        cls, (cls.from_numpy, cls.to_numpy))

    def from_numpy(self, arr):
        """Taichi's from_numpy; on the CPU backends a numpy cast and a memory copy (the
        same values: Taichi's kernel casts each number as numpy's astype does) instead
        of a kernel launched through Taichi's Python path (~0.25 ms, more than a
        one-world step)."""
        if not (_host_backend() and isinstance(arr, np.ndarray) and arr.dtype.kind in "fiu"
                and _plain(self)):
            return taichi_from_numpy(self, arr)
        if tuple(self.arr.total_shape()) != tuple(arr.shape):
            raise ValueError(f"Mismatch shape: {tuple(self.arr.shape)} expected, but "
                             f"{tuple(arr.shape)} provided")
        upload(self, arr.astype(numpy_dtype(self), copy=False))

    def to_numpy(self):
        """Taichi's to_numpy; on the CPU backends a memory copy (no kernel launch)."""
        if not (_host_backend() and _plain(self)):
            return taichi_to_numpy(self)
        return download(self)

    cls.from_numpy, cls.to_numpy = from_numpy, to_numpy


# ndarray class -> Taichi's own (from_numpy, to_numpy), before _numpy_style
TAICHI_NUMPY: dict = {}


def _plain(arr) -> bool:
    """An ndarray of f64, f32 or i32 numbers (what numpy_dtype names exactly)."""
    return _number_type(arr) in (ti.f64, ti.f32, ti.i32)


def _patch_taichi() -> None:
    from taichi.lang import kernel_impl
    from taichi.lang.ast import ast_transformer_utils as utils
    if ti.__version__ != (1, 7, 4):
        return
    ctx = getattr(utils, "ASTTransformerContext", None)
    if ctx is not None and hasattr(ctx, "get_pos_info"):
        ctx.get_pos_info = _short_position_info
    if hasattr(kernel_impl, "_get_tree_and_ctx"):
        kernel_impl._get_tree_and_ctx = _tree_and_ctx
    from taichi.lang._ndarray import ScalarNdarray
    from taichi.lang.matrix import MatrixNdarray, VectorNdarray
    for cls in (ScalarNdarray, VectorNdarray, MatrixNdarray):
        _numpy_style(cls)


_patch_taichi()
launch.install()


# Taichi trims its offline cache to 100 MB by default (dropping a quarter of the
# kernels, least recently used first, whenever a process leaves it larger); tiphys's
# kernels for two precisions and a few backends are more than that, so a warm machine
# would keep recompiling some of them
OFFLINE_CACHE_BYTES = 1 << 30

_ARCHS = {"cpu": "cpu", "cuda": "cuda", "vulkan": "vulkan", "metal": "metal", "gpu": "gpu"}

# Backends on which ``init`` turns Taichi's own IR optimisation passes off
# (``advanced_optimization=False``) unless the caller sets it. On the CPU those passes
# were three quarters of a cold compile and bought no speed, because LLVM optimises the
# same loops after them (gym humanoid, f64, 2-core Intel Xeon, 2026-11-27: first step
# with an empty offline cache 32-34 s -> 10-11 s; steps/s at 1 and 64 worlds equal
# within the noise; the f32 sensor check's three scenes 112 s -> 21 s). On Vulkan
# through lavapipe the same check compiled in 35 s instead of 94 s, with the same
# results; what the passes are worth on a Vulkan GPU's driver is not measured yet
# (pass advanced_optimization=True to have them). CUDA and Metal keep Taichi's default
# until measured there.
QUICK_COMPILE_ARCHS = frozenset({"cpu", "vulkan"})
# Backends where Taichi's fast math is off unless ``fast_math=True`` is given. On CUDA it
# swaps sine, cosine, division and square root for approximations: in f32 against
# MuJoCo's f64 the torque sensors of test_sensor_acc's pyramidal scene were off by
# 1.15e-4 (relative) with it and 4.6e-6 without (H200, 2026-11-28); the CPU and
# Vulkan (lavapipe) give 9.5e-6 with Taichi's default fast math. ("gpu" may pick CUDA.)
EXACT_MATH_ARCHS = frozenset({"cuda", "gpu"})


def _describe(arch: str, precision: str, options: dict) -> str:
    extra = "".join(f", {k}={v!r}" for k, v in sorted(options.items()))
    return f"arch={arch!r}, precision={precision!r}{extra}"


CPU_BLOCK = 16


def taichi_options(arch: str, given: dict) -> dict:
    """The keyword arguments ``init`` passes to ``ti.init`` on ``arch``: ``given`` with
    tiphys's defaults filled in where absent (offline cache on, Taichi quiet, seed 0,
    no IR optimisation passes on QUICK_COMPILE_ARCHS, no fast math on
    EXACT_MATH_ARCHS, every core on the CPU)."""
    out = dict(given)
    out.setdefault("offline_cache", True)
    out.setdefault("log_level", os.environ.get("TIPHYS_TI_LOG", "warn"))
    out.setdefault("random_seed", 0)
    if arch in QUICK_COMPILE_ARCHS:
        out.setdefault("advanced_optimization", False)
    if arch in EXACT_MATH_ARCHS:
        out.setdefault("fast_math", False)
    if arch == "cpu":
        out.setdefault("cpu_max_num_threads", os.cpu_count() or 1)
        # Taichi 1.7.4's make_cpu_multithreaded_range_for pass cuts every parallel loop
        # into one static block per thread of at least 512 iterations, so that a loop
        # over up to 512 worlds ran on one thread. Without it the thread pool hands out
        # blocks of default_cpu_block_dim iterations to whichever thread is free.
        out.setdefault("make_cpu_multithreading_loop", False)
        out.setdefault("default_cpu_block_dim", int(os.environ.get("TIPHYS_CPU_BLOCK", CPU_BLOCK)))
    return out


def init(arch: str = "cpu", precision: str = "f64", *, reinit: bool = False,
         **kwargs) -> None:
    """Initialise Taichi. ``arch``: cpu|cuda|vulkan|metal|gpu; ``precision``: f64|f32.

    Taichi runs one backend per process. Calling ``init`` again with the same settings
    (a re-run notebook cell) does nothing; with other settings it raises InitError (a
    RuntimeError) naming both, because switching would invalidate every Model and Data
    made so far.
    ``reinit=True`` switches anyway: Models and Data made before then raise a clear
    error when used. Extra keyword arguments go to ``ti.init``. The Taichi offline
    cache is kept on so that kernels compile once per machine. On the backends of
    QUICK_COMPILE_ARCHS Taichi's IR optimisation passes are off unless
    ``advanced_optimization=True`` is given (compiles ~3x faster, same speed there).
    On CUDA (and "gpu") fast math is off unless ``fast_math=True`` is given
    (EXACT_MATH_ARCHS).
    ``serial_worlds`` (or the environment's TIPHYS_SERIAL_WORLDS): on a CPU backend,
    calls on a Data whose serial load is at most this run kernels whose loops are
    serial, which skips Taichi's thread-pool wake-up (~45 µs per loop). The load
    (``d.serial_load``, kernels/config.serial_load) is the Data's worlds weighted by
    its model's work, counted in gym humanoid worlds: 140 on 2 threads is 140
    humanoids, ~40 worlds of three humanoids, ~270 ants. Default
    ``launch.default_serial_worlds(cpu_max_num_threads)`` (140 on 2 threads), 0 never.
    Calls on a larger load run kernels whose ``ti.ndrange`` loops are parallel over
    worlds only (world twins, tiphys/launch.py; ``TIPHYS_WORLD_TWINS=0``: Taichi's
    parallel loops over every index). On the CPU Taichi's pass that cuts each
    parallel loop into one block of at least 512 iterations per thread is off
    (``make_cpu_multithreading_loop``): its threads take ``default_cpu_block_dim``
    (CPU_BLOCK) iterations at a time.
    """
    if arch not in _ARCHS:
        raise ValueError(f"arch must be one of {sorted(_ARCHS)}, not {arch!r}")
    if precision not in ("f64", "f32"):
        raise ValueError(f"precision must be 'f64' or 'f32', not {precision!r}")
    serial_worlds = kwargs.pop("serial_worlds", None)
    if serial_worlds is None and os.environ.get("TIPHYS_SERIAL_WORLDS"):
        serial_worlds = int(os.environ["TIPHYS_SERIAL_WORLDS"])
    if serial_worlds is not None and (isinstance(serial_worlds, bool) or
                                      not isinstance(serial_worlds, int) or serial_worlds < 0):
        raise ValueError(f"serial_worlds must be an int >= 0, not {serial_worlds!r}")
    kwargs = taichi_options(arch, kwargs)
    log_level = kwargs["log_level"]
    if serial_worlds is None:
        serial_worlds = launch.default_serial_worlds(kwargs.get("cpu_max_num_threads", 1))
    options = dict(kwargs)  # the effective settings: defaults given explicitly match
    options["serial_worlds"] = serial_worlds
    if _STATE["initialized"] and not reinit:
        if (_STATE["arch"], _STATE["precision"], _STATE["options"]) == \
                (arch, precision, options):
            return
        old = {k: v for k, v in _STATE["options"].items() if options.get(k) != v}
        new = {k: v for k, v in options.items() if _STATE["options"].get(k) != v}
        raise InitError(
            f"tiphys.init({_describe(arch, precision, new)}): tiphys already runs with "
            f"{_describe(_STATE['arch'], _STATE['precision'], old)}. Taichi has one "
            f"backend per process and switching it invalidates every Model and Data made "
            f"so far: restart the process (notebook kernel), or pass reinit=True to "
            f"switch anyway (then load the models again)")
    fdtype = ti.f64 if precision == "f64" else ti.f32
    # ti.init prints "[Taichi] Starting on arch=..." unconditionally; keep it only when
    # the user asked Taichi to talk (TIPHYS_TI_LOG=info/debug/trace)
    quiet = log_level in ("warn", "error", "critical")
    with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
        ti.init(arch=getattr(ti, _ARCHS[arch]), default_fp=fdtype, default_ip=ti.i32,
                **{"offline_cache_max_size_of_files": OFFLINE_CACHE_BYTES, **kwargs})
    launch.configure(ti.lang.impl.current_cfg().arch in (ti.x64, ti.arm64), serial_worlds)
    _STATE.update(initialized=True, arch=arch, precision=precision, options=options,
                  generation=_STATE["generation"] + 1)


# ---------------------------------------------------------------------------------------
# Bulk allocation and upload of Model/Data arrays
# ---------------------------------------------------------------------------------------

def numpy_dtype(arr):
    """The numpy dtype of an ndarray's numbers (f64, f32 or i32; the element type of a
    vector or matrix ndarray)."""
    dtype = _number_type(arr)
    return np.float64 if dtype == ti.f64 else np.float32 if dtype == ti.f32 else np.int32


def _number_type(arr):
    """The Taichi type of an ndarray's numbers (of its elements' numbers for a vector or
    matrix ndarray)."""
    dtype = arr.dtype
    return dtype.dtype if hasattr(dtype, "dtype") else dtype


def _host_backend() -> bool:
    return ti.lang.impl.current_cfg().arch in (ti.x64, ti.arm64)


@contextlib.contextmanager
def quiet_allocations(label: str = "tiphys Model/Data array"):
    """Allocate ndarrays without Taichi 1.7.4's per-allocation stack capture.

    Taichi formats the whole Python stack into every ndarray it creates (a note it
    keeps for a failed allocation); a model and its Data allocate ~800 arrays, which
    made that half of ``load_model`` + ``make_data`` on a small model. Inside this
    block the note is ``label`` instead. tiphys estimates a Data's bytes before it
    allocates (make_data), so the lost stack never names a cause worth more."""
    from taichi.lang import _ndarray, matrix
    saved = _ndarray.get_traceback, matrix.get_traceback

    def note(stacklevel=1):
        return label

    _ndarray.get_traceback = matrix.get_traceback = note
    try:
        yield
    finally:
        _ndarray.get_traceback, matrix.get_traceback = saved


def _host_address(arr) -> int:
    """Where a CPU backend keeps an ndarray's elements (C order, AoS), or 0 elsewhere."""
    if not _host_backend():
        return 0
    return ti.lang.impl.get_runtime().prog.get_ndarray_data_ptr_as_int(arr.arr)


def upload(arr, host: np.ndarray) -> None:
    """``arr.from_numpy(host)``; on the CPU backends a plain memory copy. Taichi's
    from_numpy launches a kernel and synchronises (~0.3 ms on 2 cores: a model's
    ~400 arrays took longer than compiling it); a CPU kernel runs inside its launch
    call, so nothing is in flight when Python copies."""
    address = _host_address(arr)
    if not address:
        arr.from_numpy(host)
        return
    host = np.ascontiguousarray(host)
    nbytes = arr.arr.nelement() * arr.arr.element_size()
    if tuple(host.shape) != tuple(arr.arr.total_shape()) or host.nbytes != nbytes:
        raise ValueError(f"upload: shape {host.shape} ({host.nbytes} bytes) does not fill "
                         f"an ndarray of shape {tuple(arr.arr.total_shape())} "
                         f"({nbytes} bytes)")
    ctypes.memmove(address, host.ctypes.data, nbytes)


def download(arr) -> np.ndarray:
    """``arr.to_numpy()``; on the CPU backends a plain memory copy (no kernel launch)."""
    address = _host_address(arr)
    if not address:
        return arr.to_numpy()
    host = np.empty(tuple(arr.arr.total_shape()), dtype=numpy_dtype(arr))
    ctypes.memmove(host.ctypes.data, address, host.nbytes)
    return host


def zero(arr) -> None:
    """``arr.fill(0)``; on the CPU backends a memset (Taichi fills a vector or matrix
    ndarray through a kernel it builds anew for every call, ~2 ms each)."""
    address = _host_address(arr)
    if not address:
        arr.fill(0)
        return
    ctypes.memset(address, 0, arr.arr.nelement() * arr.arr.element_size())


_config.set_default_init(init)
# the readers, as tiphys.backend.*
ensure_init = _config.ensure_init
generation = _config.generation
float_dtype = _config.float_dtype
precision = _config.precision
arch = _config.arch
