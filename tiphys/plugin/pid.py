"""mujoco.pid: MuJoCo's PID actuator plugin (plugin/actuator/pid.cc), batched over
worlds (kernels/plugin_pid.py).

Config: kp, ki, kd (default 0), imax (bound on the integral term's force: the error
integral is clamped to +-imax / ki; only with ki != 0), slewmax (bound on the
control's rate, applied once time > 0). Activations per actuator: 1 with ki != 0, +1
with slewmax, +1 for a dyntype of filter, filterexact or integrator (whose activation
is then the control); ``actdim`` on the actuator must say so. No plugin_state.
"""
from __future__ import annotations

import numpy as np

from ..kernels.consts import DYN_FILTER, DYN_FILTEREXACT, DYN_INTEGRATOR
from ..kernels.plugin_pid import PID_IMAX, PID_INTEGRAL, PID_SLEW, pid_act_dot, pid_compute
from . import ACTUATOR, Instance, Plugin, launch


def _config(inst: Instance):
    """(kp, ki, kd, imax / ki or None, slewmax or None), as PidConfig::FromModel."""
    kp = inst.value("kp") or 0.0
    ki = inst.value("ki") or 0.0
    kd = inst.value("kd") or 0.0
    imax_force = inst.value("imax")
    imax = imax_force / ki if imax_force is not None and ki else None
    return kp, ki, kd, imax, inst.value("slewmax")


class Pid(Plugin):
    """PID controller actuator (mujoco.pid)."""

    replayable = True  # its hooks only launch kernels (tiphys/replay.py)
    name = "mujoco.pid"
    capabilities = ACTUATOR
    attributes = ("kp", "ki", "kd", "imax", "slewmax")

    @classmethod
    def actuator_actdim(cls, instance: Instance, actuator: int) -> int:
        _, ki, _, _, slewmax = _config(instance)
        return int(bool(ki)) + int(slewmax is not None)

    @classmethod
    def check(cls, arrays, instance: Instance):
        """Pid::Create's validation, with its messages."""
        _, _, _, imax, slewmax = _config(instance)
        if imax is not None and imax < 0:
            return "negative imax"
        if (slewmax or 0.0) < 0:
            return "slewmax must be non-negative"
        if not instance.actuators:
            return f"actuator not found for plugin instance {instance.id}"
        for actid in instance.actuators:
            actnum = int(arrays.actuator_actnum[actid])
            expected = cls.actuator_actdim(instance, actid)
            if int(arrays.actuator_dyntype[actid]) in (DYN_FILTER, DYN_FILTEREXACT,
                                                       DYN_INTEGRATOR):
                expected += 1
            if actnum != expected:
                return (f"actuator {actid} has actdim {actnum}, expected {expected}. Add "
                        f"actdim=\"{expected}\" to the actuator plugin element.")
        return None

    def __init__(self, m, instances: list):
        super().__init__(m, instances)
        ids, prm, flags = [], [], []
        for inst in instances:
            kp, ki, kd, imax, slewmax = _config(inst)
            flag = (PID_INTEGRAL if ki else 0) | (PID_IMAX if imax is not None else 0) | \
                (PID_SLEW if slewmax is not None else 0)
            for actid in inst.actuators:
                ids.append(actid)
                prm.append((kp, ki, kd, imax or 0.0, slewmax or 0.0))
                flags.append(flag)
        self.npid = len(ids)
        self.host_arrays = {
            "pid_actuator": np.array(ids, dtype=np.int32),
            "pid_prm": np.array(prm, dtype=np.float64).reshape(-1, 5),
            "pid_flags": np.array(flags, dtype=np.int32),
        }

    def act_dot(self, m, d) -> None:
        """Reads time, ctrl, act, actuator_length; writes act_dot of the PID entries."""
        launch(pid_act_dot, m, d, timestep=float(m.opt.timestep), npid=self.npid,
               **self.device(d))

    def compute(self, m, d) -> None:
        """Reads time, ctrl, act, act_dot, actuator_length, actuator_velocity; writes
        actuator_force of the PID actuators."""
        launch(pid_compute, m, d, timestep=float(m.opt.timestep), npid=self.npid,
               **self.device(d))
