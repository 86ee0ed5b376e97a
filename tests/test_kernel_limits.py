"""Portability limits every kernel must respect: Taichi's SPIR-V backends (Vulkan,
Metal) bind at most 32 ndarray arguments per kernel; a 33rd is silently wrong or
crashes (measured on lavapipe). Checked statically over every kernel module."""
import importlib
import inspect
import pkgutil

import taichi as ti

import tiphys.kernels

MAX_NDARRAY_ARGS = 32


def _kernels():
    for info in pkgutil.iter_modules(tiphys.kernels.__path__):
        mod = importlib.import_module(f"tiphys.kernels.{info.name}")
        for name, obj in vars(mod).items():
            if callable(obj) and hasattr(obj, "_primal"):  # a @ti.kernel
                yield f"{info.name}.{name}", obj


def _ndarray_args(kernel) -> int:
    sig = inspect.signature(kernel._primal.func)
    return sum(isinstance(p.annotation, type(ti.types.ndarray()))
               for p in sig.parameters.values())


def test_every_kernel_fits_spirv_argument_limit():
    found = dict(_kernels())
    assert len(found) > 20 and "collision._finalize" in found
    too_many = {name: n for name, k in found.items() if (n := _ndarray_args(k)) > MAX_NDARRAY_ARGS}
    assert not too_many, too_many
