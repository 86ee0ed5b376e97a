"""The demo gait that ``tiphys run``, ``tiphys render`` and ``tiphys view`` drive a
model with: a trot for the bundled walker ("strider", scene.xml), one sinusoid per
actuator for any other model, with one random phase per world. The control itself is
computed on the device by kernels/gait.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import taichi as ti

from ..kernels.gait import gait_ctrl

_LEGS = ("fl", "fr", "hl", "hr")
_LEG_JOINTS = ("hip_x", "hip_y", "knee")


@dataclass
class Gait:
    """Open-loop control: ctrl[w, u] = offset[u] + amp[u] sin(omega[u] t_w + phase[u] + psi_w),
    with psi_w one random phase per world."""
    offset: np.ndarray
    amp: np.ndarray
    omega: np.ndarray
    phase: np.ndarray
    description: str


def gait_for(m) -> Gait:
    """The open-loop gait ``tiphys run`` drives a model with.

    A model with the bundled walker's twelve leg servos (``{fl,fr,hl,hr}_{hip_x,hip_y,
    knee}``) gets a 3 Hz trot: diagonal legs in phase, hip flexion swinging 0.3 rad
    about a slight crouch, knees bending a quarter period later. Any other model gets
    one 1 Hz sinusoid per actuator, spread in phase, around the middle of its
    ctrlrange with a quarter of its width (0 +- 0.25 when the control is unlimited).
    """
    from ..model import id2name

    nu = m.nu
    names = [id2name(m, "actuator", u) for u in range(nu)]
    offset, amp = np.zeros(nu), np.zeros(nu)
    omega, phase = np.zeros(nu), np.zeros(nu)
    trot = {f"{leg}_{j}" for leg in _LEGS for j in _LEG_JOINTS}
    if nu and trot <= set(names):
        omega[:] = 2 * np.pi * 3.0
        for leg in _LEGS:
            front = 1.0 if leg[0] == "f" else -1.0
            diagonal = 0.0 if leg in ("fl", "hr") else np.pi
            hip, knee = names.index(f"{leg}_hip_y"), names.index(f"{leg}_knee")
            offset[hip], amp[hip], phase[hip] = 0.3 * front, 0.3, diagonal
            offset[knee], amp[knee] = -0.6 * front, -0.3 * front
            phase[knee] = diagonal - np.pi / 2
        return Gait(offset, amp, omega, phase,
                    "trot: 3 Hz hip/knee sinusoids, random phase per world (on the device)")
    a = m.arrays
    lo, hi = np.asarray(a.actuator_ctrlrange, dtype=np.float64).reshape(-1, 2)[:nu].T
    limited = np.asarray(a.actuator_ctrllimited).reshape(-1)[:nu].astype(bool) & (lo < hi)
    offset[:] = np.where(limited, 0.5 * (lo + hi), 0.0)
    amp[:] = np.where(limited, 0.25 * (hi - lo), 0.25)
    omega[:] = 2 * np.pi * 1.0
    phase[:] = 2 * np.pi * np.arange(nu) / max(1, nu)
    return Gait(offset, amp, omega, phase,
                "1 Hz sinusoid per actuator in its ctrlrange, random phase per world (on the "
                "device)" if nu else "none (the model has no actuators)")


class GaitDriver:
    """A Gait's parameters on the device; ``apply(d)`` writes d.ctrl from d.time (one
    kernel launch, nothing copied)."""

    def __init__(self, gait: Gait, world_phase: np.ndarray, d):
        dtype = d.ctrl.dtype
        self.nu = len(gait.offset)

        def upload(values):
            arr = ti.ndarray(dtype, (max(1, len(values)),))
            arr.from_numpy(_padded(np.asarray(values, dtype=np.float64), arr))
            return arr

        self.world_phase = upload(world_phase)
        self.params = [upload(getattr(gait, k)) for k in ("offset", "amp", "omega", "phase")]

    def apply(self, d) -> None:
        if self.nu:
            gait_ctrl(self.nu, d.time, self.world_phase, *self.params, d.ctrl)


def _padded(array: np.ndarray, dev) -> np.ndarray:
    """``array`` zero-padded to the (possibly padded) shape of a device array."""
    shape = tuple(dev.shape)
    dtype = float_np_dtype(dev)
    if array.shape == shape:
        return array.astype(dtype)
    full = np.zeros(shape, dtype=dtype)
    full[tuple(slice(0, n) for n in array.shape)] = array
    return full


def float_np_dtype(dev) -> type:
    """numpy float type of a Taichi field or ndarray (f64 or f32)."""
    import taichi as ti

    dtype = dev.dtype
    dtype = getattr(dtype, "dtype", dtype)  # vector/matrix element type
    return np.float64 if dtype == ti.f64 else np.float32
