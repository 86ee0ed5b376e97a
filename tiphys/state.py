"""Simulation state as flat vectors, per world or for all worlds at once: mj_stateSize,
mj_getState, mj_setState, mj_extractState, mj_copyState and mj_setKeyframe.

A state is named by a bit mask of ``State`` elements, MuJoCo's mjtState (the
``mujoco.mjtState`` values work as well); its vector holds the selected elements in
bit order: time, qpos, qvel, act, qacc_warmstart, ctrl, qfrc_applied, xfrc_applied,
eq_active (stored as 0./1.), mocap_pos, mocap_quat, userdata and plugin_state (the
npluginstate floats of the model's plugin instances, tiphys.plugin). ``get_state`` returns (nworld, size), or (size,) for
one world; the copies run on the device, one small launch per element.
"""
from __future__ import annotations

import enum
from typing import Optional

import numpy as np
import taichi as ti

from . import backend
from .kernels import support as _k
from .kernels.consts import (NSTATE, STATE_ACT, STATE_CTRL, STATE_EQ_ACTIVE, STATE_FULLPHYSICS,
                             STATE_INTEGRATION, STATE_MOCAP_POS, STATE_MOCAP_QUAT, STATE_PHYSICS,
                             STATE_PLUGIN, STATE_QFRC_APPLIED, STATE_QPOS, STATE_QVEL, STATE_TIME,
                             STATE_USER, STATE_USERDATA, STATE_WARMSTART, STATE_XFRC_APPLIED)
from .model import Data, Model, name2id


class State(enum.IntFlag):
    """mjtState: the elements of a state vector, and MuJoCo's composite masks."""
    TIME = STATE_TIME
    QPOS = STATE_QPOS
    QVEL = STATE_QVEL
    ACT = STATE_ACT
    WARMSTART = STATE_WARMSTART
    CTRL = STATE_CTRL
    QFRC_APPLIED = STATE_QFRC_APPLIED
    XFRC_APPLIED = STATE_XFRC_APPLIED
    EQ_ACTIVE = STATE_EQ_ACTIVE
    MOCAP_POS = STATE_MOCAP_POS
    MOCAP_QUAT = STATE_MOCAP_QUAT
    USERDATA = STATE_USERDATA
    PLUGIN = STATE_PLUGIN
    PHYSICS = STATE_PHYSICS
    FULLPHYSICS = STATE_FULLPHYSICS
    USER = STATE_USER
    INTEGRATION = STATE_INTEGRATION


# element bit -> (Data array, size attribute(s) of the model, vector width: -1 one
# scalar per world, 0 a row of scalars, k a row of k-vectors)
_ELEMENTS = (
    (State.TIME, "time", None, -1),
    (State.QPOS, "qpos", "nq", 0),
    (State.QVEL, "qvel", "nv", 0),
    (State.ACT, "act", "na", 0),
    (State.WARMSTART, "qacc_warmstart", "nv", 0),
    (State.CTRL, "ctrl", "nu", 0),
    (State.QFRC_APPLIED, "qfrc_applied", "nv", 0),
    (State.XFRC_APPLIED, "xfrc_applied", "nbody", 6),
    (State.EQ_ACTIVE, "eq_active", "neq", 0),
    (State.MOCAP_POS, "mocap_pos", "nmocap", 3),
    (State.MOCAP_QUAT, "mocap_quat", "nmocap", 4),
    (State.USERDATA, "userdata", "nuserdata", 0),
    (State.PLUGIN, "plugin_state", "npluginstate", 0),
)


def _spec(func: str, spec) -> int:
    try:
        bits = int(spec)
    except (TypeError, ValueError):
        raise ValueError(f"{func}: spec must be an int mask of State bits, got {spec!r}") \
            from None
    if bits < 0 or bits >= 1 << NSTATE:
        raise ValueError(f"{func}: invalid state spec {bits}: bits beyond mjNSTATE={NSTATE} "
                         f"(State.INTEGRATION = {int(State.INTEGRATION)} has them all)")
    return bits


def _counts(m: Model, bit: State, size_attr, width) -> tuple[int, int]:
    """(number of rows n, total floats) of one element."""
    if bit == State.TIME:
        return 1, 1
    n = int(getattr(m, size_attr))
    return n, n * max(width, 1)


def _layout(m: Model, bits: int):
    """The selected elements as (bit, array name, rows, width, offset, size)."""
    out, offset = [], 0
    for bit, name, size_attr, width in _ELEMENTS:
        if bits & bit:
            n, size = _counts(m, bit, size_attr, width)
            out.append((bit, name, n, width, offset, size))
            offset += size
    return out, offset


def state_size(m: Model, spec) -> int:
    """Number of floats in a state vector of ``spec`` (mj_stateSize)."""
    return _layout(m, _spec("state_size", spec))[1]


def _world_range(func: str, d: Data, world) -> tuple[int, int]:
    if world is None:
        return 0, d.nworld
    try:
        w = int(world)
    except (TypeError, ValueError):
        raise ValueError(f"{func}: world must be an int or None, got {world!r}") from None
    if w != world or not 0 <= w < d.nworld:
        raise IndexError(f"{func}: world {world!r} out of range (nworld={d.nworld})")
    return w, 1


def _np_float():
    return np.float64 if backend.float_dtype() == ti.f64 else np.float32


def get_state(m: Model, d: Data, spec, world: Optional[int] = None) -> np.ndarray:
    """The state vector of ``spec`` (mj_getState): numpy (nworld, size) for every world,
    or (size,) for ``world``."""
    w0, count = _world_range("get_state", d, world)
    layout, size = _layout(m, _spec("get_state", spec))
    state = ti.ndarray(backend.float_dtype(), (count, max(1, size)))
    for _, name, n, width, offset, esize in layout:
        if esize:
            _k.state_gather(getattr(d, name), n, width, w0, offset, state)
    out = state.to_numpy().astype(np.float64)[:, :size]
    return out[0] if world is not None else out


def set_state(m: Model, d: Data, state, spec, world: Optional[int] = None) -> None:
    """Write a state vector of ``spec`` into Data (mj_setState).

    ``world=None``: ``state`` is (nworld, size), one row per world, or (size,) for
    every world; ``world=w``: (size,) for that world only. eq_active entries are cast
    to int as MuJoCo casts them to mjtByte.
    """
    func = "set_state"
    w0, count = _world_range(func, d, world)
    layout, size = _layout(m, _spec(func, spec))
    a = np.asarray(state, dtype=np.float64)
    if a.shape == (size,):
        a = a[None]
    elif world is not None or a.shape != (d.nworld, size):
        want = f"({size},)" if world is not None else f"({size},) or ({d.nworld}, {size})"
        raise ValueError(f"{func}: state must have shape {want} for this spec, got "
                         f"{np.shape(state)}")
    if size == 0:
        return
    dev = ti.ndarray(backend.float_dtype(), a.shape)
    dev.from_numpy(a.astype(_np_float()))
    for _, name, n, width, offset, esize in layout:
        if esize:
            _k.state_scatter(dev, n, width, name == "eq_active", offset, w0, count,
                             getattr(d, name))


def extract_state(m: Model, src, srcspec, dstspec) -> np.ndarray:
    """The ``dstspec`` part of a ``srcspec`` state vector (mj_extractState); ``src``
    is (size,) or any batch (..., size). dstspec must be a subset of srcspec."""
    func = "extract_state"
    srcbits, dstbits = _spec(func, srcspec), _spec(func, dstspec)
    if srcbits & dstbits != dstbits:
        raise ValueError(f"{func}: dstspec {dstbits} is not a subset of srcspec {srcbits}")
    layout, size = _layout(m, srcbits)
    a = np.asarray(src, dtype=np.float64)
    if a.ndim == 0 or a.shape[-1] != size:
        raise ValueError(f"{func}: src must have {size} entries in its last axis for "
                         f"srcspec {srcbits}, got shape {a.shape}")
    parts = [a[..., offset:offset + esize] for bit, _, _, _, offset, esize in layout
             if bit & dstbits]
    return np.concatenate(parts, axis=-1) if parts else a[..., :0].copy()


def copy_state(m: Model, src: Data, dst: Data, spec, src_world: Optional[int] = None,
               dst_world: Optional[int] = None) -> None:
    """Copy the ``spec`` state elements from ``src`` to ``dst`` on the device
    (mj_copyState). ``src`` and ``dst`` may be the same Data.

    - both worlds None: every world to the same world (equal nworld needed);
    - both ints: one world to one world;
    - ``src_world`` only: that world of src to every world of dst (e.g. to restart a
      batch from one state);
    - ``dst_world`` only: src must have one world.
    """
    func = "copy_state"
    bits = _spec(func, spec)
    if src_world is None and dst_world is None and src.nworld != dst.nworld:
        raise ValueError(f"{func}: src has {src.nworld} worlds and dst {dst.nworld}; give "
                         f"src_world (and dst_world) to copy between them")
    if src_world is None and dst_world is not None and src.nworld != 1:
        raise ValueError(f"{func}: dst_world without src_world needs a one-world src, "
                         f"src has {src.nworld} worlds")
    s0, scount = _world_range(func + " src", src, src_world)
    d0, dcount = _world_range(func + " dst", dst, dst_world)
    for _, name, n, width, _, esize in _layout(m, bits)[0]:
        if esize:
            _k.state_copy(getattr(src, name), n, width, name == "eq_active", s0, scount, d0,
                          dcount, getattr(dst, name))


_KEY_FIELDS = (("key_time", State.TIME), ("key_qpos", State.QPOS), ("key_qvel", State.QVEL),
               ("key_act", State.ACT), ("key_mpos", State.MOCAP_POS),
               ("key_mquat", State.MOCAP_QUAT), ("key_ctrl", State.CTRL))


def set_keyframe(m: Model, d: Data, k, world: int = 0) -> None:
    """Copy one world's state into model keyframe ``k`` (id or name), as mj_setKeyframe:
    time, qpos, qvel, act, mocap_pos, mocap_quat and ctrl, in the host model
    (``m.arrays.key_*``) and on the device (``m.key_*``); reset_data(keyframe=k) then
    restores it."""
    func = "set_keyframe"
    if isinstance(k, str):
        kid = name2id(m, "key", k)
        if kid < 0:
            raise ValueError(f"{func}: no keyframe named {k!r}")
        k = kid
    k = _key_id(func, k, m.nkey)
    spec = 0
    for _, bit in _KEY_FIELDS:
        spec |= bit
    state = get_state(m, d, spec, world)
    a = m.arrays
    for name, bit in _KEY_FIELDS:
        host = np.array(getattr(a, name), dtype=np.float64)
        value = extract_state(m, state, spec, bit).reshape(host[k].shape)
        host[k] = value
        setattr(a, name, host)
        dev = getattr(m, name)
        full = dev.to_numpy()
        if name == "key_time":
            full[k] = value
        elif value.size:
            rows = value.reshape((-1,) + full.shape[2:])  # (n,) or (nmocap, 3 or 4)
            full[k][:rows.shape[0]] = rows
        dev.from_numpy(full)


def _key_id(func: str, k, nkey: int) -> int:
    try:
        i = int(k)
    except (TypeError, ValueError):
        raise ValueError(f"{func}: keyframe must be an int id or a name, got {k!r}") from None
    if i != k or not 0 <= i < nkey:
        raise IndexError(f"{func}: keyframe {k!r} out of range (nkey={nkey})")
    return i
