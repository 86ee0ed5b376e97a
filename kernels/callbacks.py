"""MuJoCo's physics callbacks as batched host callbacks: ``mjcb_control``,
``mjcb_passive``, ``mjcb_act_dyn``, ``mjcb_act_gain``, ``mjcb_act_bias`` and
``mjcb_contactfilter`` (the user-sensor callback, ``mjcb_sensor``, is
kernels/sensor.py's).

Each is one Python function for the whole batch, called where MuJoCo calls its
callback, once for all worlds (MuJoCo calls the actuator and contact-filter callbacks
once per actuator or geom pair; here one call covers every world and every actuator or
pair of the stage):

- control ``fn(m, d)``: in ``forward`` (every evaluation: RK4's stages too) after the
  velocity stages and before actuation, unless actuation is disabled; and at the end
  of ``step1`` (whatever the flag, as mj_step1). It writes ``d.ctrl`` (and may write
  ``qfrc_applied``, ``xfrc_applied``) of every world, e.g. with a Taichi kernel or
  ``d.ctrl.from_numpy(...)``.
- passive ``fn(m, d)``: at the end of the passive stage, after springs, dampers,
  gravity compensation and fluid forces are summed into ``qfrc_passive`` (and before
  passive plugins), unless springs and dampers are both disabled. It adds its forces
  to ``d.qfrc_passive`` of every world.
- act_dyn, act_gain, act_bias ``fn(m, d, ids) -> values``: in the actuation stage
  (mj_fwdActuation), unless actuation is disabled, for the actuators of dyntype,
  gaintype or biastype "user". ``ids`` is a host int32 array of those actuators' ids
  (act_dyn: every user-dynamics actuator with activations; act_gain, act_bias: those
  MuJoCo calls, i.e. not in a disabled actuator group and not a plugin actuator);
  ``values`` holds one number per world and id: a numpy array (or anything
  ``np.asarray`` takes) of shape (nworld, len(ids)), or (len(ids),) for every world,
  or a Taichi ndarray of shape (nworld, len(ids)), which stays on the device.
  The stage runs in MuJoCo's order: built-in act_dot first (the user actuators'
  act_dot zeroed), then act_dyn, whose values become the act_dot of the actuators
  with one activation (one with several activations writes ``d.act_dot`` itself, as
  MuJoCo's higher-order case, and its column is ignored; returning None means the
  callback wrote ``d.act_dot`` for all of them); then act_gain and act_bias, whose
  values are the gain and bias of force = gain * (ctrl or act) + bias. The callbacks
  may read ``act_dot`` (act_gain and act_bias: every actuator's, as MuJoCo's do),
  ``ctrl``, ``act``, ``actuator_length`` and ``actuator_velocity``. Without a callback
  tiphys does what MuJoCo does: user dynamics leave act_dot at zero, a user gain is 1
  and a user bias 0. (Differences from MuJoCo's per-actuator calls: a callback sees
  the act_dot of every built-in actuator, not only of those before it, and act_gain
  runs for all actuators before act_bias.)
- contactfilter ``fn(m, d, geom) -> discard``: in ``collision``, before the
  narrowphase. ``geom`` is a host int32 array (npair, 2) of the geom pairs MuJoCo
  would hand its filter (every pair of geoms of two bodies that pass the body-level
  filters: contype/conaffinity of the bodies, weld, parent, <exclude>; with a
  detector for the two types; geom1 the geom of lower type, as mj_collideGeoms orders
  them; explicit <pair>s are never filtered, as in MuJoCo; with the midphase on, a
  body pair with several geoms leaves out the geoms with neither contype nor
  conaffinity, which MuJoCo's BVHs leave out); the same pairs for every world, in
  MuJoCo's contact order. ``discard`` is true where a pair is dropped:
  shape (nworld, npair) or (npair,), numpy or (nworld, npair) Taichi ndarray.
  Installing a filter replaces the geom-level contype/conaffinity test, as in MuJoCo
  (mj_collideGeoms applies the bitmask only when no filter is set). MuJoCo calls its
  filter only on pairs whose bounding volumes overlap (its broadphase and midphase
  run first); tiphys's broadphase runs per world inside the narrowphase, so the
  callback sees every candidate pair, and culled pairs find no contact either way: a
  filter that depends on (m, d, geom1, geom2) gives MuJoCo's contacts. Models on the
  dynamic broadphase (kernels/collision_driver.py DYNAMIC_MIN_PAIRS: the pairs are
  never enumerated) raise NotImplementedError with a filter installed.

A step that calls a callback is not replayed from a recording (tiphys/replay.py):
the callback runs every time, as MuJoCo's does.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import taichi as ti
from taichi.lang._ndarray import Ndarray

from . import config

KINDS = ("control", "passive", "act_dyn", "act_gain", "act_bias", "contactfilter")
_CALLBACKS: dict = dict.fromkeys(KINDS)


def _set(kind: str, fn: Optional[Callable]) -> Optional[Callable]:
    if fn is not None and not callable(fn):
        raise TypeError(f"set_{kind}_callback: fn must be callable or None")
    previous = _CALLBACKS[kind]
    _CALLBACKS[kind] = fn
    return previous


def set_control_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the control callback (MuJoCo's mjcb_control), ``fn(m, d)`` for every
    world at once; ``None`` removes it. Returns the previous one."""
    return _set("control", fn)


def set_passive_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the passive-force callback (MuJoCo's mjcb_passive), ``fn(m, d)`` for
    every world at once, adding to ``d.qfrc_passive``; ``None`` removes it. Returns
    the previous one."""
    return _set("passive", fn)


def set_act_dyn_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the user actuator-dynamics callback (MuJoCo's mjcb_act_dyn),
    ``fn(m, d, ids) -> act_dot`` of shape (nworld, len(ids)) for the actuators of
    dyntype "user" (see the module docstring); ``None`` removes it. Returns the
    previous one."""
    return _set("act_dyn", fn)


def set_act_gain_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the user actuator-gain callback (MuJoCo's mjcb_act_gain),
    ``fn(m, d, ids) -> gain`` of shape (nworld, len(ids)) for the actuators of
    gaintype "user"; ``None`` removes it (their gain is then 1). Returns the previous
    one."""
    return _set("act_gain", fn)


def set_act_bias_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the user actuator-bias callback (MuJoCo's mjcb_act_bias),
    ``fn(m, d, ids) -> bias`` of shape (nworld, len(ids)) for the actuators of
    biastype "user"; ``None`` removes it (their bias is then 0). Returns the previous
    one."""
    return _set("act_bias", fn)


def set_contactfilter_callback(fn: Optional[Callable]) -> Optional[Callable]:
    """Install the contact-filter callback (MuJoCo's mjcb_contactfilter),
    ``fn(m, d, geom) -> discard``: ``geom`` the (npair, 2) candidate geom pairs,
    ``discard`` true for the pairs to drop, shape (nworld, npair) or (npair,) (see
    the module docstring). It replaces the geom-level contype/conaffinity test, as in
    MuJoCo; ``None`` removes it. Returns the previous one."""
    return _set("contactfilter", fn)


def installed() -> tuple:
    """The installed callbacks (replay keys include them)."""
    return tuple(_CALLBACKS[k] for k in KINDS)


def get(kind: str) -> Optional[Callable]:
    """The installed ``kind`` callback, or None."""
    return _CALLBACKS[kind]


def run(kind: str, m, d) -> None:
    """Call the ``kind`` callback, if any, on all worlds."""
    fn = _CALLBACKS[kind]
    if fn is not None:
        config.opaque()  # a Python callback: a replayed step would skip it
        fn(m, d)


def values(kind: str, m, d, ids: np.ndarray, dtype, allow_none: bool = False):
    """Call the ``kind`` callback (installed) with ``ids`` (host int32, read-only) and
    return its values as a device array of shape (nworld or 1, len(ids)) and dtype
    ``dtype`` (a Taichi ndarray the callback returned is used as it is), or None when
    ``allow_none`` and the callback returned None. A result of another shape is a
    ValueError naming the callback."""
    fn = _CALLBACKS[kind]
    config.opaque()  # a Python callback: a replayed step would skip it
    out = fn(m, d, ids)
    n, nw = len(ids), d.nworld
    if out is None:
        if allow_none:
            return None
        raise ValueError(f"{kind} callback returned None; expected {_expected(kind, nw, n)}")
    if isinstance(out, Ndarray):
        if tuple(out.shape) != (nw, n):
            raise ValueError(f"{kind} callback returned a Taichi ndarray of shape "
                             f"{tuple(out.shape)}; expected {_expected(kind, nw, n)}")
        return out
    arr = np.asarray(out)
    if arr.shape not in ((nw, n), (n,)):
        raise ValueError(f"{kind} callback returned an array of shape {arr.shape}; "
                         f"expected {_expected(kind, nw, n)}")
    rows = 1 if arr.ndim == 1 else nw
    dev = _buffer(d, kind, rows, n, dtype)
    if n:
        dev.from_numpy(_host(arr.reshape(rows, n), dtype))
    return dev


def _expected(kind, nw, n) -> str:
    what = "discard flags" if kind == "contactfilter" else "values"
    return f"{what} of shape ({nw}, {n}) or ({n},), or a Taichi ndarray ({nw}, {n})"


def _host(arr, dtype) -> np.ndarray:
    if dtype == ti.i32:
        return np.ascontiguousarray(arr != 0, dtype=np.int32)
    return np.ascontiguousarray(arr, dtype=np.float64 if dtype == ti.f64 else np.float32)


def _buffer(d, kind, rows, n, dtype):
    """The Data's device array for ``kind``'s values (scratch "callbacks"), made once
    per shape."""
    table = d.scratch.callbacks
    if table is None:
        table = d.scratch.callbacks = {}
    key = (kind, rows, n, dtype)
    arr = table.get(key)
    if arr is None:
        arr = table[key] = d.scratch.tag(ti.ndarray(dtype, shape=(rows, max(1, n))))
    return arr


def reset_callbacks() -> None:
    """Remove every user callback: control, passive, actuator dynamics, gain and bias,
    contact filter and user sensors (MuJoCo's mj_resetCallbacks)."""
    from .sensor import set_sensor_callback
    _CALLBACKS.update(dict.fromkeys(KINDS))
    set_sensor_callback(None)
