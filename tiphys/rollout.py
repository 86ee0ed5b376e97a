"""Open-loop rollouts of every world at once, as ``mujoco.rollout.rollout``.

    state, sensordata = tiphys.rollout(m, d, initial_state, control)

World w is batch entry w: it starts from ``initial_state[w]`` (the mjSTATE_FULLPHYSICS
vector: time, qpos, qvel, act, plugin state), zero warmstart unless given, and at each
step t takes ``control[w, t]`` (a state vector of ``control_spec``, mjSTATE_CTRL by
default) before ``step``. The user inputs the control does not set are cleared first, as
mujoco.rollout clears them: ctrl, qfrc_applied and xfrc_applied to zero, mocap bodies to
their model pose, eq_active to the model's. Outputs: the full physics state and the
sensor values after each step, (nworld, nstep, nstate) and (nworld, nstep,
nsensordata). A world that raises a warning (tiphys's per-world warning counters, as
MuJoCo's) stops there: its remaining outputs repeat its last ones, as mujoco.rollout
fills them. The outputs gather on the device and come back in one copy each at the end.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import taichi as ti

from . import backend
from .forward import step
from .kernels import support as _k
from .model import Data, Model, check_pair
from .state import State, _layout, _np_float, _spec, set_state, state_size


def _rows(name: str, value, nworld: int, width: int, extra=()) -> np.ndarray:
    """``value`` as (nworld or 1, *extra, width) float64, or a ValueError naming it."""
    a = np.asarray(value, dtype=np.float64)
    want = tuple(extra) + (width,)
    if a.shape == want:
        a = a[None]
    if a.ndim != len(want) + 1 or a.shape[0] not in (1, nworld) or a.shape[-1] != width:
        raise ValueError(f"rollout: {name} must have shape ([{nworld} or 1], "
                         f"{', '.join(str(x) for x in want)}), got {np.shape(value)}")
    return a


def rollout(m: Model, d: Data, initial_state, control=None, *,
            control_spec=State.CTRL, nstep: Optional[int] = None,
            initial_warmstart=None) -> tuple[np.ndarray, np.ndarray]:
    """Roll out every world of ``d`` from its initial state under open-loop controls
    (mujoco.rollout.rollout with nbatch = nworld); returns (state, sensordata) as
    numpy arrays of (nworld, nstep, nstate) and (nworld, nstep, nsensordata).

    ``initial_state``: ([nworld or 1], nstate) of State.FULLPHYSICS;
    ``control``: ([nworld or 1], [nstep or 1], ncontrol) of ``control_spec``, or None;
    ``nstep``: the number of steps (inferred from ``control`` when it has more than one
    step); ``initial_warmstart``: ([nworld or 1], nv) qacc_warmstart, zero when None.
    """
    check_pair(m, d, "rollout")
    nw = d.nworld
    cspec = _spec("rollout", control_spec)
    full = int(State.FULLPHYSICS)
    if cspec & ~int(State.USER):
        raise ValueError("rollout: control_spec can only contain bits of State.USER (ctrl, "
                         "qfrc_applied, xfrc_applied, eq_active, mocap, userdata), as in "
                         "mujoco.rollout")
    nstate, ncontrol = state_size(m, full), state_size(m, cspec)
    state0 = _rows("initial_state", initial_state, nw, nstate)
    ctrl = None
    if control is not None:
        ctrl = np.asarray(control, dtype=np.float64)
        if ctrl.ndim == 2:
            ctrl = ctrl[None]
        if ctrl.ndim != 3 or ctrl.shape[0] not in (1, nw) or ctrl.shape[2] != ncontrol:
            raise ValueError(f"rollout: control must have shape ([{nw} or 1], [nstep or 1], "
                             f"{ncontrol}), got {np.shape(control)}")
        if ctrl.shape[1] > 1:
            if nstep is not None and nstep != ctrl.shape[1]:
                raise ValueError(f"rollout: nstep={nstep} but control has {ctrl.shape[1]} "
                                 f"steps")
            nstep = ctrl.shape[1]
    if nstep is None:
        raise ValueError("rollout: give nstep, or a control with more than one step")
    if isinstance(nstep, bool) or not isinstance(nstep, (int, np.integer)) or nstep < 1:
        raise ValueError(f"rollout: nstep must be a positive integer, not {nstep!r}")
    nstep = int(nstep)

    # clear the user inputs the control does not set, as mujoco.rollout does
    a = m.arrays
    cleared = {State.CTRL: np.zeros(m.nu), State.QFRC_APPLIED: np.zeros(m.nv),
               State.XFRC_APPLIED: np.zeros(6 * m.nbody)}
    if m.nmocap:
        mocap = np.asarray(a.body_mocapid)
        bodies = [b for b in np.argsort(mocap) if mocap[b] >= 0]
        cleared[State.MOCAP_POS] = np.asarray(a.body_pos)[bodies].reshape(-1)
        cleared[State.MOCAP_QUAT] = np.asarray(a.body_quat)[bodies].reshape(-1)
    if m.neq:
        cleared[State.EQ_ACTIVE] = np.asarray(a.eq_active0, dtype=np.float64).reshape(-1)
    for bit, value in cleared.items():
        if not cspec & bit and value.size:
            set_state(m, d, value, bit)
    set_state(m, d, state0 if len(state0) == nw else state0[0], full)
    warm = np.zeros((1, m.nv)) if initial_warmstart is None else \
        _rows("initial_warmstart", initial_warmstart, nw, m.nv)
    if m.nv:
        set_state(m, d, warm if len(warm) == nw else warm[0], State.WARMSTART)
    d.warning_number.fill(0)

    fdt = backend.float_dtype()
    out_state = ti.ndarray(fdt, (nw, nstep * nstate))
    nsens = m.nsensordata
    out_sens = ti.ndarray(fdt, (nw, max(1, nstep * nsens)))
    stopped = ti.ndarray(ti.i32, (nw,))
    stopped.fill(0)
    cdev = None
    if ctrl is not None and ncontrol:
        cdev = ti.ndarray(fdt, (ctrl.shape[0], ctrl.shape[1] * ncontrol))
        cdev.from_numpy(ctrl.reshape(ctrl.shape[0], -1).astype(_np_float()))
    clayout = _layout(m, cspec)[0]
    slayout = _layout(m, full)[0]
    for t in range(nstep):
        if t:
            _k.rollout_stop(d.warning_number, stopped)
        if cdev is not None:
            tc = t if ctrl.shape[1] > 1 else 0
            for _, name, n, width, offset, size in clayout:
                if size:
                    _k.state_scatter(cdev, n, width, name == "eq_active",
                                     tc * ncontrol + offset, 0, nw, getattr(d, name))
        step(m, d)
        for _, name, n, width, offset, size in slayout:
            if size:
                _k.state_gather(getattr(d, name), n, width, 0, t * nstate + offset,
                                out_state)
        if nsens:
            _k.state_gather(d.sensordata, nsens, 0, 0, t * nsens, out_sens)
        if t:
            _k.rollout_hold(stopped, t, out_state, nstate, out_sens, nsens)
    states = out_state.to_numpy().astype(np.float64).reshape(nw, nstep, nstate)
    sens = out_sens.to_numpy().astype(np.float64)[:, :nstep * nsens].reshape(nw, nstep, nsens)
    return states, sens
