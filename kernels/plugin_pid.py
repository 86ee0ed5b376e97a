"""The PID actuator plugin's kernels (MuJoCo's plugin/actuator/pid.cc, mujoco.pid),
batched over worlds and PID actuators.

A PID actuator keeps its own activations first: the error integral (with a nonzero
ki) and then the previous control (with slewmax); an actuator with dyntype filter,
filterexact or integrator keeps the built-in dynamics' activation after them (its
last one), and takes that as its control. Per PID actuator the host plan
(tiphys/plugin/pid.py) gives ``pid_actuator`` (actuator id), ``pid_prm`` (kp, ki, kd,
the integral bound imax / ki, slewmax) and ``pid_flags`` (PID_INTEGRAL, PID_IMAX,
PID_SLEW).
"""
import taichi as ti

from .actuation import _clamped_ctrl, next_activation
from .consts import DYN_NONE
from .math import param_row

ND = ti.types.ndarray()

PID_INTEGRAL = 1  # ki != 0: act[actadr] is the error integral
PID_IMAX = 2  # imax given (with ki != 0): the integral is clamped to +-imax / ki
PID_SLEW = 4  # slewmax given: the next activation is the previous control


@ti.func
def _clip(x, lo, hi):
    """mju_clip: a NaN stays NaN."""
    res = x
    if x < lo:
        res = lo
    elif x > hi:
        res = hi
    return res


@ti.func
def _pid_ctrl(worldid, actid, early, slewmax, flags, timestep,
              actuator_dyntype: ti.template(), actuator_actadr: ti.template(),
              actuator_actnum: ti.template(), actuator_ctrllimited: ti.template(),
              actuator_ctrlrange: ti.template(), actuator_actlimited: ti.template(),
              actuator_actrange: ti.template(), actuator_dynprm: ti.template(),
              time: ti.template(), ctrl: ti.template(), act: ti.template(),
              act_dot: ti.template()):
    """Pid::GetCtrl: ctrl (clamped to ctrlrange when limited) for dyntype none, else the
    built-in activation (its next value with actearly); then, with slewmax and time > 0,
    clamped to within slewmax * h of the previous control."""
    dyntype = actuator_dyntype[actid]
    actadr = actuator_actadr[actid]
    u = 0.0
    if dyntype == DYN_NONE:  # clamped whatever the clampctrl flag, as Pid::GetCtrl
        u = _clamped_ctrl(worldid, actid, ctrl, 1, actuator_ctrllimited,
                          actuator_ctrlrange)
    else:
        last = actadr + actuator_actnum[actid] - 1
        u = act[worldid, last]
        if early != 0:
            u = next_activation(
                u, act_dot[worldid, last], dyntype,
                actuator_dynprm[param_row(worldid, actuator_dynprm), actid][0],
                actuator_actlimited[actid],
                actuator_actrange[param_row(worldid, actuator_actrange), actid], timestep)
    if flags & PID_SLEW and time[worldid] > 0:
        prev = act[worldid, actadr + (flags & PID_INTEGRAL)]
        u = _clip(u, prev - slewmax * timestep, prev + slewmax * timestep)
    return u


@ti.kernel
def pid_act_dot(
    # model
    actuator_dyntype: ND, actuator_actadr: ND, actuator_actnum: ND,
    actuator_ctrllimited: ND, actuator_ctrlrange: ND, actuator_actlimited: ND,
    actuator_actrange: ND, actuator_dynprm: ND, timestep: float,
    # plugin plan
    pid_actuator: ND, pid_prm: ND, pid_flags: ND, npid: ti.i32,
    # data in
    time: ND, ctrl: ND, act: ND, actuator_length: ND,
    # data out
    act_dot: ND,
):
    """Pid::ActDot: the rates that make the integral (clamped to +-imax / ki) and the
    previous control the next activations."""
    for worldid, k in ti.ndrange(act.shape[0], npid):
        actid = pid_actuator[k]
        flags = pid_flags[k]
        u = _pid_ctrl(worldid, actid, 0, pid_prm[k, 4], flags, timestep, actuator_dyntype,
                      actuator_actadr, actuator_actnum, actuator_ctrllimited,
                      actuator_ctrlrange, actuator_actlimited, actuator_actrange,
                      actuator_dynprm, time, ctrl, act, act_dot)
        error = u - actuator_length[worldid, actid]
        adr = actuator_actadr[actid]
        if flags & PID_INTEGRAL:
            integral = act[worldid, adr] + error * timestep
            if flags & PID_IMAX:
                integral = _clip(integral, -pid_prm[k, 3], pid_prm[k, 3])
            act_dot[worldid, adr] = (integral - act[worldid, adr]) / timestep
            adr += 1
        if flags & PID_SLEW:
            act_dot[worldid, adr] = (u - act[worldid, adr]) / timestep


@ti.kernel
def pid_compute(
    # model
    actuator_dyntype: ND, actuator_actadr: ND, actuator_actnum: ND,
    actuator_ctrllimited: ND, actuator_ctrlrange: ND, actuator_actlimited: ND,
    actuator_actrange: ND, actuator_dynprm: ND, actuator_actearly: ND, timestep: float,
    # plugin plan
    pid_actuator: ND, pid_prm: ND, pid_flags: ND, npid: ti.i32,
    # data in
    time: ND, ctrl: ND, act: ND, act_dot: ND, actuator_length: ND, actuator_velocity: ND,
    # data out
    actuator_force: ND,
):
    """Pid::Compute: force = kp error + kd d(error)/dt + ki integral, the control's rate
    being the built-in dynamics' act_dot (0 for dyntype none)."""
    for worldid, k in ti.ndrange(act.shape[0], npid):
        actid = pid_actuator[k]
        flags = pid_flags[k]
        u = _pid_ctrl(worldid, actid, actuator_actearly[actid], pid_prm[k, 4], flags, timestep,
                      actuator_dyntype, actuator_actadr, actuator_actnum,
                      actuator_ctrllimited, actuator_ctrlrange, actuator_actlimited,
                      actuator_actrange, actuator_dynprm, time, ctrl, act, act_dot)
        error = u - actuator_length[worldid, actid]
        adr = actuator_actadr[actid]
        u_dot = 0.0
        if actuator_dyntype[actid] != DYN_NONE:
            u_dot = act_dot[worldid, adr + actuator_actnum[actid] - 1]
        error_dot = u_dot - actuator_velocity[worldid, actid]
        integral = 0.0
        if flags & PID_INTEGRAL:
            integral = act[worldid, adr] + error * timestep
            if flags & PID_IMAX:
                integral = _clip(integral, -pid_prm[k, 3], pid_prm[k, 3])
        actuator_force[worldid, actid] = pid_prm[k, 0] * error + \
            pid_prm[k, 2] * error_dot + pid_prm[k, 1] * integral
