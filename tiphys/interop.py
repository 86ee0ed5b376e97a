"""PyTorch views of Data arrays: ``d.torch("qpos")`` and ``d.from_torch("ctrl", t)``.

On the CPU and CUDA backends a view shares the Data array's memory (no copy): it is
made from the array's address (Taichi 1.7.4's ndarrays have no DLPack), through the
numpy array interface on the CPU and ``__cuda_array_interface__`` on CUDA, and keeps
the array alive. Writing into it (``view.copy_(actions)``, ``view[:] = ...``) writes
the Data, so a policy's actions reach ``ctrl`` without a host round trip. The view is
MuJoCo-sized, (nworld, ...) with tiphys's padding removed (a slice of the padded
array, so possibly not contiguous), and has the engine's float type (float64 for
``precision="f64"``, float32 for f32; int32 for integer fields).

Order of work: ``d.torch`` waits for the engine's queued kernels (``ti.sync``) before
it returns; on CUDA, torch's own stream must be finished before the next ``step``
reads what torch wrote (``torch.cuda.synchronize()``, or ``d.from_torch``, which does
it). On other backends (Vulkan, Metal) there is no shared memory with torch:
``d.torch`` returns a copy (``copy=True`` asks for one anywhere), and ``d.from_torch``
copies a tensor in through the host.

torch is an optional dependency (``pip install tiphys[torch]``): a clear ImportError
says so when it is missing.
"""
from __future__ import annotations

import numpy as np
import taichi as ti
from taichi.lang import impl

_TYPESTR = {ti.f64: "<f8", ti.f32: "<f4", ti.i32: "<i4"}


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("d.torch / d.from_torch need PyTorch, an optional dependency "
                          "of tiphys: pip install tiphys[torch]") from None
    return torch


class _Interface:
    """The array interface of a Data array's memory; holds the array while a view of
    it lives."""

    def __init__(self, field, key: str, ptr: int, shape: tuple, typestr: str):
        self.field = field
        setattr(self, key, {"shape": shape, "typestr": typestr, "data": (ptr, False),
                            "version": 3 if key == "__array_interface__" else 2,
                            "strides": None})


def _check_name(d, name: str):
    from .types import DATA_EXTRA_FIELDS, DATA_FIELDS
    if name not in {f[0] for f in DATA_FIELDS + DATA_EXTRA_FIELDS}:
        raise KeyError(f"d.torch: '{name}' is not a Data field (see tiphys.types.DATA_FIELDS)")
    return getattr(d, name)


def _shared(field):
    """(interface key, address) of a Data array torch can share, or None."""
    arch = impl.current_cfg().arch
    if arch not in (ti.cpu, ti.cuda):
        return None
    ptr = impl.get_runtime().prog.get_ndarray_data_ptr_as_int(field.arr)
    return ("__array_interface__" if arch == ti.cpu else "__cuda_array_interface__"), ptr


def torch_view(d, name: str, copy: bool = False):
    """Data field ``name`` as a torch tensor of MuJoCo's shape (nworld, ...) sharing
    the Data's memory on the CPU and CUDA backends (a copy elsewhere, or with
    ``copy=True``)."""
    torch = _torch()
    field = _check_name(d, name)
    want = d.field_shape(name)
    ti.sync()
    shared = None if copy else _shared(field)
    if shared is None:
        return torch.from_numpy(np.ascontiguousarray(d.numpy(name)))
    key, ptr = shared
    dtype = field.dtype
    if dtype not in _TYPESTR:
        raise TypeError(f"d.torch: field '{name}' has Taichi dtype {dtype}, which has no "
                        f"torch view")
    full = tuple(field.shape) + tuple(getattr(field, "element_shape", ()) or ())
    holder = _Interface(field, key, ptr, full, _TYPESTR[dtype])
    if key == "__array_interface__":
        tensor = torch.from_numpy(np.asarray(holder))
    else:
        tensor = torch.as_tensor(holder, device="cuda")
    return tensor[tuple(slice(0, n) for n in want)]


def from_torch(d, name: str, tensor) -> None:
    """Write ``tensor`` (MuJoCo's shape (nworld, ...), or without the world axis for
    every world) into Data field ``name``: on the device where torch shares it (CUDA:
    device to device, after torch's stream is done), through the host elsewhere."""
    torch = _torch()
    field = _check_name(d, name)
    want = d.field_shape(name)
    shared = _shared(field)
    if shared is not None:
        view = torch_view(d, name)
        src = tensor.to(device=view.device, dtype=view.dtype)
        if tuple(src.shape) != tuple(want) and tuple(src.shape) != tuple(want[1:]):
            raise ValueError(f"d.from_torch: '{name}' takes shape {tuple(want)} (or "
                             f"{tuple(want[1:])} for every world), not {tuple(src.shape)}")
        view.copy_(src.expand(view.shape))
        if view.device.type == "cuda":
            torch.cuda.current_stream(view.device).synchronize()
        return
    value = tensor.detach().cpu().numpy()
    if value.shape == tuple(want[1:]):
        value = np.broadcast_to(value, want)
    if value.shape != tuple(want):
        raise ValueError(f"d.from_torch: '{name}' takes shape {tuple(want)} (or "
                         f"{tuple(want[1:])} for every world), not {value.shape}")
    from .model import _set_padded
    _set_padded(field, np.asarray(value))
