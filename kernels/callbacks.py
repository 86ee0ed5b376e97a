"""MuJoCo's physics callbacks as batched host callbacks: ``mjcb_control`` and
``mjcb_passive`` (the user-sensor callback, ``mjcb_sensor``, is kernels/sensor.py's).

Each is one Python function for the whole batch, ``fn(m, d)``, called where MuJoCo
calls its callback, once for all worlds:

- control: in ``forward`` (every evaluation: RK4's stages too) after the velocity
  stages and before actuation, unless actuation is disabled; and at the end of
  ``step1`` (whatever the flag, as mj_step1). It writes ``d.ctrl`` (and may write
  ``qfrc_applied``, ``xfrc_applied``) of every world, e.g. with a Taichi kernel or
  ``d.ctrl.from_numpy(...)``.
- passive: at the end of the passive stage, after springs, dampers, gravity
  compensation and fluid forces are summed into ``qfrc_passive`` (and before passive
  plugins), unless springs and dampers are both disabled. It adds its forces to
  ``d.qfrc_passive`` of every world.

A step that calls a callback is not replayed from a recording (tiphys/replay.py):
the callback runs every time, as MuJoCo's does.
"""
from __future__ import annotations

from typing import Callable, Optional

from . import config

_CALLBACKS: dict = {"control": None, "passive": None}


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


def installed() -> tuple:
    """The installed callbacks (replay keys include them)."""
    return _CALLBACKS["control"], _CALLBACKS["passive"]


def run(kind: str, m, d) -> None:
    """Call the ``kind`` callback, if any, on all worlds."""
    fn = _CALLBACKS[kind]
    if fn is not None:
        config.opaque()  # a Python callback: a replayed step would skip it
        fn(m, d)


def reset_callbacks() -> None:
    """Remove every user callback: control, passive and user sensors (MuJoCo's
    mj_resetCallbacks)."""
    from .sensor import set_sensor_callback
    _CALLBACKS.update(control=None, passive=None)
    set_sensor_callback(None)
