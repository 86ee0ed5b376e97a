"""Actuator length ranges by simulation, as MuJoCo's mj_setLengthRange, on the device.

The compiler copies ranges from limits where the <compiler><lengthrange> options allow
and lists the other actuators that need one (``arrays.lengthrange_pending``). Here
they are simulated all at once with tiphys' own pipeline: world 2k pushes pending
actuator k toward its shortest length, world 2k+1 toward its longest. Each step does
what evalAct does: scale qvel by exp(-h / max(0.01, timeconst)), step1, apply
qfrc_applied = +-moment scaled so that inv(M) qfrc_applied has norm ``accel`` (capped at
``maxforce``), step2. The options during the simulation are mjCModel::LengthRange's:
the disable flags are *replaced* by frictionloss, contact, spring, damper, gravity and
actuation (so joint/tendon limits and equality constraints stay active whatever the
model's flags say), and the timestep is the length-range one.

The extreme lengths over the last ``interval`` of ``inttotal`` seconds give the range;
a range that is empty or that did not settle (spread above ``tolrange`` times the
range) is a ModelError with MuJoCo's message, located at the actuator element. A world
whose state goes bad (NaN, or beyond 1e10) is one too ("Unstable lengthrange
simulation"); MuJoCo's step checks would instead reset it to qpos0 and go on.
"""
from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import taichi as ti

from . import backend
from .compiler.options import Option
from .errors import error_at
from .forward import step1, step2
from .kernels.consts import (DSBL_ACTUATION, DSBL_CONTACT, DSBL_DAMPER, DSBL_FRICTIONLOSS,
                             DSBL_GRAVITY, DSBL_SPRING, INT_EULER, INT_IMPLICITFAST, MAXVAL)
from .kernels.lengthrange import lengthrange_decay, lengthrange_force
from .model import Model, make_data

_LR_DISABLED = (DSBL_FRICTIONLOSS | DSBL_CONTACT | DSBL_SPRING | DSBL_DAMPER | DSBL_GRAVITY
                | DSBL_ACTUATION)
_MAXSTEPS = 10_000_000


def lengthrange_options(opt: Option, lropt) -> Option:
    """The model options during the length-range simulation (mjCModel::LengthRange).

    implicitfast becomes Euler: with actuation, spring and damper disabled its velocity
    derivative is zero, so both solve M qacc = qfrc_smooth and add h qacc to qvel.
    """
    timestep = lropt.timestep if lropt.timestep > 0 else opt.timestep
    integrator = INT_EULER if opt.integrator == INT_IMPLICITFAST else opt.integrator
    return replace(opt, disableflags=_LR_DISABLED, timestep=float(timestep), integrator=integrator)


def step_schedule(timestep: float, inttotal: float, interval: float) -> tuple[int, int]:
    """(steps, first recorded step): mj_setLengthRange steps while time < inttotal and
    records the lengths of the steps that end after inttotal - interval; time adds up
    the timestep in double precision exactly as there."""
    if not timestep > 0:
        raise ValueError("lengthrange timestep must be positive")
    if inttotal / timestep > _MAXSTEPS:
        raise ValueError(f"lengthrange inttotal / timestep exceeds {_MAXSTEPS} steps")
    t, nstep, first = 0.0, 0, -1
    while t < inttotal:
        t += timestep
        if first < 0 and t > inttotal - interval:
            first = nstep
        nstep += 1
    return nstep, (nstep if first < 0 else first)


def _where(el) -> str:
    return f"{getattr(el, 'xml_file', None) or '<string>'}:{getattr(el, 'xml_line', None)}: " \
           f"<{getattr(el, 'tag', 'actuator')}>"


def set_length_range(m: Model) -> None:
    """Simulate the length range of every actuator the compiler left pending, then write
    actuator_lengthrange into ``m.arrays`` and the device Model.

    Raises ModelError (at the actuator element) for an invalid or unconverged range or
    an unstable simulation; NotImplementedError when the simulation needs something the
    pipeline does not support yet. Limits and equalities are
    simulated with the constraint solver, as in MuJoCo.
    """
    a = m.arrays
    pending = list(getattr(a, "lengthrange_pending", None) or ())
    if not pending:
        return
    lropt = a.lropt
    els = getattr(a, "actuator_els", None) or [None] * m.nu
    lr = copy.copy(m)  # shares the device arrays; only the options differ
    lr.opt = lengthrange_options(m.opt.frozen, lropt)
    try:
        nstep, first = step_schedule(lr.opt.timestep, lropt.inttotal, lropt.interval)
    except ValueError as exc:
        raise error_at(els[pending[0]], str(exc)) from None
    try:
        lmin, lmax, bad = _simulate(lr, pending, lropt, nstep, first)
    except NotImplementedError as exc:
        raise NotImplementedError(f"{_where(els[pending[0]])}: lengthrange simulation: "
                                  f"{exc}") from None
    rng = np.array(a.actuator_lengthrange, dtype=np.float64).reshape(m.nu, 2)
    for k, actid in enumerate(pending):
        el = els[actid]
        if bad[2 * k] or bad[2 * k + 1]:
            raise error_at(el, f"Unstable lengthrange simulation in actuator {actid}")
        lo, hi = float(lmin[2 * k]), float(lmax[2 * k + 1])
        rng[actid] = lo, hi
        dif = hi - lo
        if not dif > 0:
            raise error_at(el, f"Invalid lengthrange ({lo:g}, {hi:g}) in actuator {actid}")
        for side, sep in ((0, "  "), (1, " ")):  # MuJoCo's side-1 text: one space less
            spread_lo, spread_hi = float(lmin[2 * k + side]), float(lmax[2 * k + side])
            if spread_hi - spread_lo > lropt.tolrange * dif:
                raise error_at(el, f"Lengthrange computation did not converge in actuator "
                                   f"{actid}:\n  eval ({spread_lo:g}, {spread_hi:g})\n"
                                   f"{sep}range ({lo:g}, {hi:g})")
    a.actuator_lengthrange = rng
    m.actuator_lengthrange.from_numpy(
        rng.astype(np.float64 if backend.float_dtype() == ti.f64 else np.float32))
    a.lengthrange_pending = []


def _simulate(lr: Model, pending: list, lropt, nstep: int, first: int):
    """Run the batched simulation; (lmin, lmax, bad) per world, numpy."""
    nworld = 2 * len(pending)
    d = make_data(lr, nworld)
    fdtype = backend.float_dtype()
    npf = np.float64 if fdtype == ti.f64 else np.float32
    lr_actuator = ti.ndarray(ti.i32, len(pending))
    lr_actuator.from_numpy(np.asarray(pending, dtype=np.int32))
    lr_acc = ti.ndarray(fdtype, (nworld, max(1, lr.nv)))
    lr_min = ti.ndarray(fdtype, nworld)
    lr_max = ti.ndarray(fdtype, nworld)
    lr_updated = ti.ndarray(ti.i32, nworld)
    for arr, dtype in ((lr_min, npf), (lr_max, npf), (lr_updated, np.int32)):
        arr.from_numpy(np.zeros(nworld, dtype=dtype))
    factor = math.exp(-lr.opt.timestep / max(0.01, lropt.timeconst))
    for k in range(nstep):
        lengthrange_decay(lr, d, factor)
        step1(lr, d)
        lengthrange_force(lr, d, lr_actuator, lropt.accel, lropt.maxforce, k >= first,
                          lr_acc, lr_min, lr_max, lr_updated)
        step2(lr, d)
    bad = np.zeros(nworld, dtype=bool)
    for name in ("qpos", "qvel", "qacc"):
        values = d.numpy(name).reshape(nworld, -1)
        bad |= ~np.all(np.abs(values) <= MAXVAL, axis=1)
    return lr_min.to_numpy(), lr_max.to_numpy(), bad
