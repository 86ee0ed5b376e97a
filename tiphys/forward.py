"""The pipeline: forward and step as fixed sequences of stage launches.

mj_forward's order: kinematics, com_pos, camlight, flex, tendon, crb, factor_m,
collision, make_constraint, island, transmission, (velocity) flex_velocity, velocity,
com_vel, passive,
reference_constraint, rne; actuation, fwd_acceleration, solve. Stages a model cannot
need (collision without candidate pairs, the constraint stages without any possible
row) are left out on the host, decided once per set of options.

Sensors and energy run where MuJoCo's mj_forwardSkip, mj_step1/mj_step2 and
mj_inverseSkip run them: sensor_pos (and energy_pos with <flag energy="enable"/>,
unless an e_potential sensor computed it) after the position stages, sensor_vel (and
energy_vel) after the velocity stages, sensor_acc after the solver (in inverse: after
the constraint forces). RK4's inner evaluations and compare_fwd_inv skip the sensors.
"""
from __future__ import annotations

import numpy as np

from .kernels import callbacks
from .kernels.collision_driver import collision
from .kernels.actuation import actuation, advance_activation, transmission, velocity
from .kernels.check import check
from .kernels.config import per_options
from .kernels.constraint import make_constraint, reference_constraint
from .kernels.consts import (INT_EULER, INT_IMPLICIT, INT_IMPLICITFAST, INT_RK4, STAGE_ACC,
                             STAGE_NONE, STAGE_POS, STAGE_VEL)
from .kernels.energy import energy_pos, energy_vel
from .kernels.flex import flex, flex_velocity
from .kernels.forward import fwd_acceleration
from .kernels.island import clear_islands, island
from .kernels.integrate import (RK4_A, RK4_B, euler, implicit, implicitfast, integrate_awake,
                                integration_acc, rk4_stage)
from .kernels.inverse import (DISCRETE_NONE, compare_inverse, discrete_mode,
                              inverse_acceleration)
from .kernels.passive import passive
from .kernels.sensor import energy_sensor, sensor_plan, sensor_pos, sensor_vel
from .kernels import sleep
from .kernels.smooth import camlight, com_pos, com_vel, crb, factor_m, kinematics, rne
from .kernels.solver import solve
from .kernels.tendon import tendon
from .model import Data, Model, checks_model_data
from . import replay
from .report import stepped

_INTEGRATOR_NAMES = {INT_EULER: "Euler", INT_RK4: "RK4", INT_IMPLICIT: "implicit",
                     INT_IMPLICITFAST: "implicitfast"}


def contacts_possible(m: Model) -> bool:
    """True if some geom pair may collide: the model has collision candidates
    (contype/conaffinity, weld/parent filters, <exclude>, explicit <pair>s, as
    mj_collision filters them); False when contacts or constraints are disabled."""
    from .kernels.collision_driver import plan
    return plan(m).ncand > 0


def constraint_rows_possible(m: Model) -> bool:
    """True if some world may get constraint rows with the current options: active
    equalities, friction loss, limits or contact candidates."""
    return per_options(m, "rows_possible", _rows_possible)


def _rows_possible(m: Model) -> bool:
    opt = m.opt
    a = m.arrays
    possible = False
    if not opt.disabled("constraint"):
        limit = not opt.disabled("limit")
        friction = not opt.disabled("frictionloss")
        possible = bool(
            (m.neq and not opt.disabled("equality")) or
            (m.njnt and limit and np.any(np.asarray(a.jnt_limited)[:m.njnt])) or
            (m.ntendon and limit and np.any(np.asarray(a.tendon_limited)[:m.ntendon])) or
            (m.nv and friction and np.any(m.param("dof_frictionloss")[..., :m.nv] > 0))
            or (m.ntendon and friction and
                np.any(m.param("tendon_frictionloss")[..., :m.ntendon] > 0))
            or contacts_possible(m))
    return possible


@checks_model_data
def forward(m: Model, d: Data) -> None:
    """Forward dynamics of every world, as mj_forward.

    Runs kinematics, com_pos, camlight, tendon, crb, factor_m, collision,
    make_constraint, island, transmission, velocity, com_vel, passive,
    reference_constraint, rne, actuation, fwd_acceleration, solve (qacc = qacc_smooth
    where a world has no constraint rows); sensor_pos, sensor_vel and sensor_acc (and
    the energies with <flag energy="enable"/>) after their stages, as mj_forward.
    """
    _check_sleep(m)
    replay.run("forward", _forward, m, d)


def fwd_position(m: Model, d: Data) -> None:
    """mj_fwdPosition: kinematics (com_pos, camlight, flex, tendon), crb and factor_m,
    collision, make_constraint, island
    and transmission (sensors are not part of it, as in MuJoCo)."""
    rows = constraint_rows_possible(m)
    sleeping = sleep.active(m)
    if sleeping:
        sleep.save_poses(m, d)
        d._sleep_used = True
    elif d._sleep_used:  # the flag was turned off: mj_wake wakes every tree
        sleep.wake_all(m, d)
        d._sleep_used = False
    kinematics(m, d)
    if sleeping:
        sleep.wake_moved(m, d)  # mj_kinematics: trees the user moved or pushed
    com_pos(m, d)
    camlight(m, d)
    flex(m, d)
    tendon(m, d)
    if sleeping:
        sleep.wake_tendons(m, d)
    crb(m, d)
    factor_m(m, d)
    if rows:
        if contacts_possible(m):
            collision(m, d)
            if sleeping:
                # contacts of awake trees with sleeping ones wake those; then the
                # contacts between bodies that are neither awake go
                sleep.wake_contacts(m, d)
        else:
            d.ncon.fill(0)
    if sleeping:
        sleep.wake_equalities(m, d)
    if rows:
        make_constraint(m, d)
        island(m, d)
    transmission(m, d, contacts=rows)


def fwd_velocity(m: Model, d: Data) -> None:
    """mj_fwdVelocity: flex edge, tendon and actuator velocities, com_vel, passive,
    reference_constraint, rne (bias forces)."""
    rows = constraint_rows_possible(m)
    flex_velocity(m, d)
    velocity(m, d)
    com_vel(m, d)
    passive(m, d)
    if rows:
        reference_constraint(m, d)
    rne(m, d)


def _position_sensors(m: Model, d: Data, skipsensor: bool) -> None:
    """After the position stages, as mj_forwardSkip / mj_step1: sensor_pos (unless
    skipped), then energy_pos with the energy flag unless an e_potential sensor
    computed it; without the flag (and no such sensor) both energies are zeroed
    (tiphys zeroes them only when one of its energy stages wrote them since: d.energy
    is zero from make_data/reset_data otherwise)."""
    by_sensor = False
    if not skipsensor:
        sensor_pos(m, d)
        by_sensor = energy_sensor(m, STAGE_POS)
        if by_sensor or energy_sensor(m, STAGE_VEL):  # (e_kinetic's stage is pos too)
            d._energy_set = True
    if by_sensor:
        return
    if m.opt.enabled("energy"):
        energy_pos(m, d)
        d._energy_set = True
    elif d._energy_set:
        d.energy.fill(0)  # zero already unless an energy stage wrote it
        d._energy_set = False


def _velocity_sensors(m: Model, d: Data, skipsensor: bool) -> None:
    """After the velocity stages: sensor_vel (unless skipped), then energy_vel with the
    energy flag unless an e_kinetic sensor computed it."""
    by_sensor = False
    if not skipsensor:
        sensor_vel(m, d)
        by_sensor = energy_sensor(m, STAGE_VEL)
    if not by_sensor and m.opt.enabled("energy"):
        energy_vel(m, d)
        d._energy_set = True


def _acc_sensors(m: Model, d: Data, qacc=None) -> None:
    """sensor_acc, imported when the model has acceleration-stage sensors."""
    if m.nsensor and not m.opt.disabled("sensor") and sensor_plan(m).acc.n:
        from .kernels.sensor_acc import sensor_acc
        sensor_acc(m, d, qacc)


def _acceleration(m: Model, d: Data) -> None:
    """Actuation, the smooth acceleration and the constraint solver."""
    actuation(m, d)
    fwd_acceleration(m, d)
    if constraint_rows_possible(m):
        solve(m, d)
        d._constrained = True
    else:
        if d._constrained:  # options changed: clear forces
            d.qfrc_constraint.fill(0)
            d.nefc.fill(0)
            d.ncon.fill(0)
            clear_islands(d)
            d._constrained = False
        d.qacc.copy_from(d.qacc_smooth)


def _forward(m: Model, d: Data, skipstage: int = 0, skipsensor: bool = False,
             control: bool = True) -> None:
    """mj_forwardSkip (``control``: call the control callback). With sleeping trees,
    sleeping sensors keep their values (sleep.keep_sensors)."""
    keep = not skipsensor and sleep.active(m)
    if keep:
        sleep.save_sensors(m, d)
    if skipstage < STAGE_POS:
        fwd_position(m, d)
        _position_sensors(m, d, skipsensor)
    if skipstage < STAGE_VEL:
        fwd_velocity(m, d)
        _velocity_sensors(m, d, skipsensor)
    if control and not m.opt.disabled("actuation"):
        callbacks.run("control", m, d)  # mjcb_control
    _acceleration(m, d)
    if not skipsensor:
        _acc_sensors(m, d)
    if keep:
        sleep.keep_sensors(m, d)


@checks_model_data
def step(m: Model, d: Data) -> None:
    """Advance every world by one timestep: forward, then the model's integrator.
    With <flag fwdinv="enable"/>, compare_fwd_inv runs before integrating (solver_fwdinv).

    Euler, RK4, implicit and implicitfast, as MuJoCo's (the implicit ones with the
    analytic velocity derivatives of actuators, dampers, fluid and, for implicit, RNE).
    """
    _check_integrator(m)
    replay.run("step", _step, m, d)
    stepped(d)


def _step(m: Model, d: Data) -> None:
    """mj_step's stages (replay.run replays them once recorded)."""
    check(m, d, "pos")
    check(m, d, "vel")
    _forward(m, d)
    check(m, d, "acc")
    if m.opt.enabled("fwdinv"):
        compare_fwd_inv(m, d)
    if m.opt.integrator == INT_RK4:
        runge_kutta(m, d)
    else:
        _integrate(m, d)


def _check_sleep(m: Model, stepping: bool = False) -> None:
    """What tiphys does not simulate with sleeping trees yet (<flag sleep="enable"/>):
    refused, never silently stepped awake (see tiphys/sleep.py)."""
    if sleep.active(m):
        from .sleep import check_supported
        check_supported(m, stepping)


def _check_integrator(m: Model) -> None:
    _check_sleep(m, stepping=True)
    integrator = m.opt.integrator
    if integrator not in _INTEGRATOR_NAMES:
        name = _INTEGRATOR_NAMES.get(integrator, integrator)
        raise NotImplementedError(f"step: integrator {name}")


def runge_kutta(m: Model, d: Data, n: int = 4) -> None:
    """mj_RungeKutta(m, d, N): the RK4 integration of every world after ``forward``
    (three more forward evaluations without sensors, then the weighted update of
    qpos, qvel, act and time). MuJoCo supports N = 4 only; so does tiphys."""
    if n != 4:
        raise ValueError(f"runge_kutta: supported RK orders: N=4 (got {n!r})")
    for slot, coefs in enumerate(RK4_A):
        rk4_stage(m, d, slot, coefs[:slot + 1])
        _forward(m, d, skipsensor=True)  # as MuJoCo: no sensors, energy recomputed
    rk4_stage(m, d, 3, RK4_B, final=True)


@checks_model_data
def step1(m: Model, d: Data) -> None:
    """First half of step, as mj_step1: position and velocity stages (kinematics to rne).

    Set ctrl, qfrc_applied or xfrc_applied afterwards, then call step2.
    """
    _check_sleep(m)
    replay.run("step1", _step1, m, d)


def _step1(m: Model, d: Data) -> None:
    """mj_step1's stages (replay.run replays them once recorded)."""
    keep = sleep.active(m)
    if keep:  # sleeping sensors keep their values (see _forward)
        sleep.save_sensors(m, d)
    check(m, d, "pos")
    check(m, d, "vel")
    fwd_position(m, d)
    _position_sensors(m, d, False)
    fwd_velocity(m, d)
    _velocity_sensors(m, d, False)
    if keep:
        sleep.keep_sensors(m, d)
    callbacks.run("control", m, d)  # mjcb_control, as mj_step1 (whatever the flags)


@checks_model_data
def step2(m: Model, d: Data) -> None:
    """Second half of step, as mj_step2: acceleration, then Euler, or the implicit
    integrators (RK4 uses Euler here, as MuJoCo)."""
    _check_integrator(m)
    replay.run("step2", _step2, m, d)
    stepped(d)


def _step2(m: Model, d: Data) -> None:
    """mj_step2's stages (replay.run replays them once recorded)."""
    keep = sleep.active(m)
    if keep:
        sleep.save_sensors(m, d)
    _acceleration(m, d)
    _acc_sensors(m, d)
    if keep:
        sleep.keep_sensors(m, d)
    check(m, d, "acc")
    if m.opt.enabled("fwdinv"):
        compare_fwd_inv(m, d)
    _integrate(m, d)


def _integrate(m: Model, d: Data) -> None:
    """The integration after the acceleration stages: implicitfast, implicit, or Euler
    (for Euler and, as in mj_step2, for RK4)."""
    if sleep.active(m):
        _advance_sleeping(m, d)
        return
    integrator = m.opt.integrator
    if integrator == INT_IMPLICITFAST:
        implicitfast(m, d)
    elif integrator == INT_IMPLICIT:
        implicit(m, d)
    else:
        euler(m, d)


@checks_model_data
def inverse(m: Model, d: Data) -> None:
    """Inverse dynamics of every world, as mj_inverse.

    From qpos, qvel, qacc: the position and velocity stages (what step1 writes:
    kinematics to rne, incl. collision, make_constraint, transmission and
    reference_constraint), then, with <flag invdiscrete="enable"/>, qacc read as the
    integrator's discrete-time acceleration (mj_discreteAcc: Euler with dof damping,
    implicit, implicitfast; RK4 raises ValueError as MuJoCo errors), the constraint
    forces of qacc (mj_invConstraint: efc_state, efc_force from jar = J qacc - aref,
    qfrc_constraint = J' efc_force) and qfrc_inverse = M qacc + qfrc_bias -
    qfrc_passive - qfrc_constraint. qacc is left as given. Sensors run as in mj_inverse:
    sensor_pos and sensor_vel after their stages (energy_pos/energy_vel with the
    energy flag), sensor_acc after the constraint forces (with invdiscrete, on the
    continuous-time qacc).
    """
    discrete_mode(m)  # bad options fail here, replayed or not
    _check_sleep(m)
    replay.run("inverse", _inverse_all, m, d)


def _inverse_all(m: Model, d: Data) -> None:
    """mj_inverse's stages (replay.run replays them once recorded)."""
    _inverse(m, d, STAGE_NONE, False)


def _inverse(m: Model, d: Data, skipstage: int, skipsensor: bool) -> None:
    """mj_inverseSkip (with sleeping trees, sleeping sensors keep their values)."""
    discrete = discrete_mode(m)  # bad options fail before any work
    _check_sleep(m)
    rows = constraint_rows_possible(m)
    energy = m.opt.enabled("energy")
    keep = not skipsensor and sleep.active(m)
    if keep:
        sleep.save_sensors(m, d)
    if skipstage < STAGE_POS:
        fwd_position(m, d)
        if not skipsensor:
            sensor_pos(m, d)
        if energy:
            energy_pos(m, d)
    if skipstage < STAGE_VEL:
        fwd_velocity(m, d)
        if not skipsensor:
            sensor_vel(m, d)
        if energy:
            energy_vel(m, d)
    if energy:
        d._energy_set = True
    if not rows and d._constrained:  # options changed
        d.nefc.fill(0)
        d.ncon.fill(0)
        clear_islands(d)
        d._constrained = False
    inverse_acceleration(m, d, rows)
    if not skipsensor:
        # with invdiscrete, MuJoCo's acc sensors see the continuous-time qacc of
        # mj_discreteAcc (d.qacc keeps the given one)
        _acc_sensors(m, d, d.scratch.inverse["qacc"] if discrete != DISCRETE_NONE
                     else None)
    if keep:
        sleep.keep_sensors(m, d)


@checks_model_data
def compare_fwd_inv(m: Model, d: Data) -> None:
    """Compare forward and inverse dynamics after forward, as mj_compareFwdInv.

    Runs the acceleration part of inverse on forward's qacc (no position or velocity
    stages) and writes per world solver_fwdinv = (norm of forward's qfrc_constraint
    minus the inverse's, norm of qfrc_applied + J' xfrc_applied + qfrc_actuator minus
    qfrc_inverse); both are 0 in worlds without constraint rows. Writes qfrc_inverse
    (as MuJoCo, except that worlds without rows get theirs too); forward's efc_force,
    efc_state and qfrc_constraint are kept.
    """
    compare_inverse(m, d, constraint_rows_possible(m))




def _skipstage(func: str, skipstage) -> int:
    try:
        stage = int(skipstage)
    except (TypeError, ValueError):
        stage = None
    if stage is None or stage != skipstage or not STAGE_NONE <= stage <= STAGE_ACC:
        raise ValueError(f"{func}: skipstage must be an mjtStage (0 none, 1 pos, 2 vel, "
                         f"3 acc), got {skipstage!r}")
    return stage


@checks_model_data
def forward_skip(m: Model, d: Data, skipstage: int = STAGE_NONE,
                 skipsensor: bool = False) -> None:
    """forward without the stages whose inputs did not change, as mj_forwardSkip.

    ``skipstage`` (mjtStage): 0 runs everything; 1 (STAGE_POS) skips the position
    stages (kinematics to make_constraint and transmission: qpos unchanged since they
    ran); 2 or 3 (STAGE_VEL, STAGE_ACC) also skips the velocity stages (velocity,
    com_vel, passive, reference_constraint, rne). The acceleration stages (actuation,
    fwd_acceleration, solve) always run, and sensor_acc after them. ``skipsensor``
    skips sensor_pos, sensor_vel and sensor_acc (the energies are still computed with
    <flag energy="enable"/>; without it they are zeroed), as MuJoCo.
    """
    _check_sleep(m)
    _forward(m, d, _skipstage("forward_skip", skipstage), bool(skipsensor))


@checks_model_data
def inverse_skip(m: Model, d: Data, skipstage: int = STAGE_NONE,
                 skipsensor: bool = False) -> None:
    """inverse without the stages whose inputs did not change, as mj_inverseSkip:
    ``skipstage`` and ``skipsensor`` as in forward_skip (the position stages of
    inverse are mj_invPosition's, the velocity stages mj_invVelocity's)."""
    _inverse(m, d, _skipstage("inverse_skip", skipstage), bool(skipsensor))


def _advance_sleeping(m: Model, d: Data) -> None:
    """The integrator's step with sleeping trees, in mj_advance's order: the
    acceleration to integrate (computed first, as mj_Euler / mj_implicit do),
    activations advance, mj_sleep puts trees to sleep (their qvel and qacc zeroed), the
    velocity-dependent stages run again (mj_forwardSkip(mjSTAGE_POS), without the
    control callback), the awake arrays are updated, then the awake trees are
    integrated.

    MuJoCo runs the second pass only when some tree fell asleep; tiphys runs it in every
    world (no data-dependent branch on the host), with the activations of before the
    step where no tree fell asleep: there it recomputes what the first pass computed,
    bit for bit."""
    s = sleep.scratch(m, d)
    integration_acc(m, d, s.qacc_int)
    acts = m.na > 0 and not m.opt.disabled("actuation")
    if acts:
        sleep.copy_rows(m, d, d.act, s.act_pre)
    advance_activation(m, d)
    slept = sleep.sleep(m, d)
    if acts:
        sleep.copy_rows(m, d, d.act, s.act_new)
        sleep.select_rows(m, d, slept, s.act_new, s.act_pre, d.act)
    _forward(m, d, skipstage=STAGE_POS, control=False)
    if acts:
        sleep.copy_rows(m, d, s.act_new, d.act)
    sleep.update_sleep(m, d)
    integrate_awake(m, d, s.qacc_int)
