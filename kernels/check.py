"""Bad-state checks of every world (mj_checkPos, mj_checkVel, mj_checkAcc and the
control check of mj_fwdActuation), counted in ``warning_number`` / ``warning_lastinfo``.

A value is bad when it is NaN or beyond +-1e10 (mju_isBad). A world with a bad qpos,
qvel or qacc is counted under mjWARN_BADQPOS / BADQVEL / BADQACC with the first bad
index as lastinfo and, unless the ``autoreset`` disable flag is set, reset on the
device to the reset state of its Data (qpos0 or the keyframe given to make_data /
reset_data): time, qpos, qvel, act, ctrl, mocap poses, qacc_warmstart, applied forces
and plugin_state (as the plugins' reset hooks left it at the last reset).
Other worlds are never read or written, so a diverging world cannot disturb them.

One deviation from MuJoCo, to avoid a host round trip per step: after a bad qacc
MuJoCo resets and runs mj_forward again before integrating; here the reset world's
qacc (and qfrc_smooth, qfrc_constraint, which the damped Euler and implicit updates
read) is set to zero, so it rests at its reset state for that step and simulates
normally from the next one.

Bad controls (after clamping) are handled in kernels/actuation.py as in
mj_fwdActuation: that world's actuators see zero controls (ctrl itself is kept) and
mjWARN_BADCTRL is counted.
"""
import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .consts import MAXVAL, WARN_BADQACC, WARN_BADQPOS, WARN_BADQVEL
from .sleep import AWAKE as SLEEP_AWAKE
from .math import param_row

ND = ti.types.ndarray()

# what each check reads: the state vector and its warning
_CHECKS = {"pos": WARN_BADQPOS, "vel": WARN_BADQVEL, "acc": WARN_BADQACC}


@ti.func
def _special(x):
    """(all exponent bits set: NaN or +-inf, mantissa bits set: NaN), read from the bits,
    since fast-math may fold x != x away."""
    special = False
    mantissa = False
    if ti.static(config.precision() == "f64"):
        bits = ti.bit_cast(ti.cast(x, ti.f64), ti.u64)
        special = ((bits >> 52) & 0x7FF) == 0x7FF
        mantissa = (bits & ti.u64(0xFFFFFFFFFFFFF)) != 0
    else:
        bits = ti.bit_cast(ti.cast(x, ti.f32), ti.u32)
        special = ((bits >> 23) & 0xFF) == 0xFF
        mantissa = (bits & ti.u32(0x7FFFFF)) != 0
    return special, mantissa


@ti.func
def is_nan(x):
    """NaN (from the bits, see _special)."""
    special, mantissa = _special(x)
    return special and mantissa


@ti.func
def is_bad(x):
    """NaN, +-inf or beyond +-MAXVAL."""
    special, _ = _special(x)
    return special or x > MAXVAL or x < -MAXVAL


@ti.kernel
def _check(warn: ti.template(), autoreset: ti.template(), n: ti.i32, values: ND,
           warning_number: ND, warning_lastinfo: ND,
           # reset state (one world) and the state it overwrites
           r_time: ND, r_qpos: ND, r_qvel: ND, r_act: ND, r_ctrl: ND, r_mocap_pos: ND,
           r_mocap_quat: ND, nq: ti.i32, nv: ti.i32, na: ti.i32, nu: ti.i32, nmocap: ti.i32,
           nbody: ti.i32, time: ND, qpos: ND, qvel: ND, act: ND, ctrl: ND, mocap_pos: ND,
           mocap_quat: ND, qacc_warmstart: ND, qfrc_applied: ND, xfrc_applied: ND, qacc: ND,
           qfrc_smooth: ND, qfrc_constraint: ND, npluginstate: ti.i32, plugin_state: ND,
           r_plugin_state: ND, ntree: ti.i32, tree_asleep: ND):
    for worldid in range(values.shape[0]):
        bad = -1
        for i in range(n):
            if bad < 0 and is_bad(values[worldid, i]):
                bad = i
        if bad >= 0:
            # mj_warning counts once; without a reset mj_check* counts again (MuJoCo
            # 3.4.0 counts twice), with one the reset clears the world's warnings first
            if ti.static(autoreset):
                for k in ti.static(range(8)):
                    warning_number[worldid][k] = 0
                warning_number[worldid][warn] = 1
            else:
                warning_number[worldid][warn] += 2
            warning_lastinfo[worldid][warn] = bad
            if ti.static(autoreset):
                time[worldid] = r_time[0]
                for i in range(nq):  # one qpos row per world when qpos0 is per world
                    qpos[worldid, i] = r_qpos[param_row(worldid, r_qpos), i]
                for i in range(nv):
                    qvel[worldid, i] = r_qvel[0, i]
                    qacc_warmstart[worldid, i] = 0.0
                    qfrc_applied[worldid, i] = 0.0
                    qacc[worldid, i] = 0.0
                    qfrc_smooth[worldid, i] = 0.0  # the implicit/damped Euler update
                    qfrc_constraint[worldid, i] = 0.0  # reads forces, not qacc
                for i in range(na):
                    act[worldid, i] = r_act[0, i]
                for i in range(nu):
                    ctrl[worldid, i] = r_ctrl[0, i]
                for i in range(nmocap):
                    mocap_pos[worldid, i] = r_mocap_pos[0, i]
                    mocap_quat[worldid, i] = r_mocap_quat[0, i]
                for i in range(nbody):
                    xfrc_applied[worldid, i] = ti.Vector.zero(float, 6)
                for i in range(npluginstate):  # as the plugins' reset hooks left it
                    plugin_state[worldid, i] = r_plugin_state[worldid, i]
                for i in range(ntree):  # every tree awake (the awake arrays follow in
                    tree_asleep[worldid, i] = SLEEP_AWAKE  # the next kinematics)


def _reset_state(m, d):
    """One world's reset state on the device (set by make_data / reset_data)."""
    state = d._reset_state
    if state is None or d._reset_version != m._param_version:
        state = d._reset_state = d._make_reset_state(m)  # again after set_param (qpos0)
    return state


def check(m, d, what: str) -> None:
    """mj_checkPos / mj_checkVel / mj_checkAcc (``what`` = 'pos', 'vel', 'acc') on
    every world."""
    warn = _CHECKS[what]
    values = {"pos": d.qpos, "vel": d.qvel, "acc": d.qacc}[what]
    n = {"pos": m.nq, "vel": m.nv, "acc": m.nv}[what]
    if n == 0:
        return
    r = _reset_state(m, d)
    launch(_check, m, d, warn=warn, autoreset=not m.opt.disabled("autoreset"), n=n,
           values=values, r_time=r["time"], r_qpos=r["qpos"], r_qvel=r["qvel"],
           r_act=r["act"], r_ctrl=r["ctrl"], r_mocap_pos=r["mocap_pos"],
           r_mocap_quat=r["mocap_quat"], r_plugin_state=plugin_reset_state(d))


def plugin_reset_state(d):
    """Each world's plugin_state as the plugins' reset hooks last left it (kept by
    make_data / reset_data: tiphys/model.py), which autoreset restores, as MuJoCo's
    mj_resetData calls the hooks again."""
    return d._plugin_reset if d._plugin_reset is not None else d.plugin_state


@ti.kernel
def copy_row(src: ti.types.ndarray(), dst: ti.types.ndarray(), worldid: ti.i32):
    """dst[worldid] = src[worldid] (one world's row of a (nworld, n) field)."""
    for i in range(src.shape[1]):
        dst[worldid, i] = src[worldid, i]


def warnings_of(d) -> np.ndarray:
    """(nworld, 8) warning counts, columns in mjtWarning order."""
    return d.warning_number.to_numpy()[:d.nworld]


@ti.kernel
def _zero_world(a: ti.types.ndarray(), worldid: ti.i32):
    for index in ti.grouped(a):
        if index[0] == worldid:
            a[index] = ti.zero(a[index])


@ti.kernel
def _copy_world(src: ti.types.ndarray(), dst: ti.types.ndarray(), worldid: ti.i32):
    for index in ti.grouped(src):  # src holds one world
        at = index
        at[0] = worldid
        dst[at] = src[index]


def zero_world(field, worldid: int) -> None:
    """Zero world ``worldid``'s slice of a Data field, on the device."""
    _zero_world(field, worldid)


def copy_world(src, field, worldid: int) -> None:
    """Copy a one-world array into world ``worldid``'s slice of a Data field."""
    _copy_world(src, field, worldid)
