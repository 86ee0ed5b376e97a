"""The pipeline: forward and step as fixed sequences of stage launches.

mj_forward's order: kinematics, com_pos, camlight, tendon, crb, factor_m, collision,
make_constraint, transmission, (velocity) com_vel, passive, reference_constraint,
rne; actuation, fwd_acceleration, solve. Stages a model cannot need (collision
without candidate pairs, the constraint stages without any possible row) are left
out on the host, decided once per set of options.
"""
from __future__ import annotations

import numpy as np

from .contacts import collision
from .kernels.actuation import actuation, transmission, velocity
from .kernels.check import check
from .kernels.constraint import make_constraint, reference_constraint
from .kernels.forward import fwd_acceleration
from .kernels.integrate import RK4_A, RK4_B, euler, implicit, implicitfast, rk4_stage
from .kernels.inverse import compare_inverse, discrete_mode, inverse_acceleration
from .kernels.passive import passive
from .kernels.smooth import camlight, com_pos, com_vel, crb, factor_m, kinematics, rne
from .kernels.solver import solve
from .kernels.tendon import tendon
from .model import Data, Model

_INTEGRATOR_NAMES = {0: "Euler", 1: "RK4", 2: "implicit", 3: "implicitfast"}


def contacts_possible(m: Model) -> bool:
    """True if some geom pair may collide: the model has collision candidates
    (contype/conaffinity, weld/parent filters, <exclude>, explicit <pair>s, as
    mj_collision filters them); False when contacts or constraints are disabled."""
    from .contacts import plan
    return plan(m).ncand > 0


def constraint_rows_possible(m: Model) -> bool:
    """True if some world may get constraint rows with the current options: active
    equalities, friction loss, limits or contact candidates."""
    opt = m.opt
    cached = getattr(m, "_tiphys_rows_possible", None)
    if cached is not None and cached[0] is opt:
        return cached[1]
    a = m.arrays
    possible = False
    if not opt.disabled("constraint"):
        limit = not opt.disabled("limit")
        friction = not opt.disabled("frictionloss")
        possible = bool(
            (m.neq and not opt.disabled("equality")) or
            (m.njnt and limit and np.any(np.asarray(a.jnt_limited)[:m.njnt])) or
            (m.ntendon and limit and np.any(np.asarray(a.tendon_limited)[:m.ntendon])) or
            (m.nv and friction and np.any(np.asarray(a.dof_frictionloss)[..., :m.nv] > 0))
            or (m.ntendon and friction and
                np.any(np.asarray(a.tendon_frictionloss)[..., :m.ntendon] > 0))
            or contacts_possible(m))
    m._tiphys_rows_possible = (opt, possible)
    return possible


def forward(m: Model, d: Data) -> None:
    """Forward dynamics of every world, as mj_forward.

    Runs kinematics, com_pos, camlight, tendon, crb, factor_m, collision,
    make_constraint, transmission, velocity, com_vel, passive, reference_constraint,
    rne, actuation, fwd_acceleration, solve (qacc = qacc_smooth where a world has no
    constraint rows).
    """
    _forward(m, d)


def _position_velocity(m: Model, d: Data) -> None:
    """The position- and velocity-dependent stages (mj_fwdPosition + mj_fwdVelocity)."""
    _position(m, d)
    _velocity(m, d)


def _position(m: Model, d: Data) -> None:
    """mj_fwdPosition: kinematics to make_constraint and transmission."""
    rows = constraint_rows_possible(m)
    kinematics(m, d)
    com_pos(m, d)
    camlight(m, d)
    tendon(m, d)
    crb(m, d)
    factor_m(m, d)
    if rows:
        if contacts_possible(m):
            collision(m, d)
        else:
            d.ncon.fill(0)
        make_constraint(m, d)
    transmission(m, d, contacts=rows)


def _velocity(m: Model, d: Data) -> None:
    """mj_fwdVelocity: tendon/actuator velocities, com_vel, passive,
    reference_constraint, rne."""
    rows = constraint_rows_possible(m)
    velocity(m, d)
    com_vel(m, d)
    passive(m, d)
    if rows:
        reference_constraint(m, d)
    rne(m, d)


def _acceleration(m: Model, d: Data) -> None:
    """Actuation, the smooth acceleration and the constraint solver."""
    actuation(m, d)
    fwd_acceleration(m, d)
    if constraint_rows_possible(m):
        solve(m, d)
        d._tiphys_constrained = True
    else:
        if getattr(d, "_tiphys_constrained", False):  # options changed: clear forces
            d.qfrc_constraint.fill(0)
            d.nefc.fill(0)
            d.ncon.fill(0)
            d._tiphys_constrained = False
        d.qacc.copy_from(d.qacc_smooth)


def _forward(m: Model, d: Data) -> None:
    _position_velocity(m, d)
    _acceleration(m, d)


def step(m: Model, d: Data) -> None:
    """Advance every world by one timestep: forward, then the model's integrator.
    With <flag fwdinv="enable"/>, compare_fwd_inv runs before integrating (solver_fwdinv).

    Euler, RK4, implicit and implicitfast, as MuJoCo's (the implicit ones with the
    analytic velocity derivatives of actuators, dampers, fluid and, for implicit, RNE).
    """
    integrator = m.opt.integrator
    _check_integrator(m)
    check(m, d, "pos")
    check(m, d, "vel")
    _forward(m, d)
    check(m, d, "acc")
    if m.opt.enabled("fwdinv"):
        compare_fwd_inv(m, d)
    if integrator == 1:
        _rk4(m, d)
    else:
        _integrate(m, d)


def _check_integrator(m: Model) -> None:
    integrator = m.opt.integrator
    if integrator not in (0, 1, 2, 3):
        name = _INTEGRATOR_NAMES.get(integrator, integrator)
        raise NotImplementedError(f"step: integrator {name}")


def _rk4(m: Model, d: Data) -> None:
    """mj_RungeKutta(m, d, 4) after a forward pass: three more forward evaluations."""
    for slot, coefs in enumerate(RK4_A):
        rk4_stage(m, d, slot, coefs[:slot + 1])
        _forward(m, d)
    rk4_stage(m, d, 3, RK4_B, final=True)


def step1(m: Model, d: Data) -> None:
    """First half of step, as mj_step1: position and velocity stages (kinematics to rne).

    Set ctrl, qfrc_applied or xfrc_applied afterwards, then call step2.
    """
    check(m, d, "pos")
    check(m, d, "vel")
    _position_velocity(m, d)


def step2(m: Model, d: Data) -> None:
    """Second half of step, as mj_step2: acceleration, then Euler, or the implicit
    integrators (RK4 uses Euler here, as MuJoCo)."""
    _check_integrator(m)
    _acceleration(m, d)
    check(m, d, "acc")
    if m.opt.enabled("fwdinv"):
        compare_fwd_inv(m, d)
    _integrate(m, d)


def _integrate(m: Model, d: Data) -> None:
    """The integration after the acceleration stages: implicitfast, implicit, or Euler
    (for Euler and, as in mj_step2, for RK4)."""
    integrator = m.opt.integrator
    if integrator == 3:
        implicitfast(m, d)
    elif integrator == 2:
        implicit(m, d)
    else:
        euler(m, d)


def inverse(m: Model, d: Data) -> None:
    """Inverse dynamics of every world, as mj_inverse.

    From qpos, qvel, qacc: the position and velocity stages (what step1 writes:
    kinematics to rne, incl. collision, make_constraint, transmission and
    reference_constraint), then, with <flag invdiscrete="enable"/>, qacc read as the
    integrator's discrete-time acceleration (mj_discreteAcc: Euler with dof damping,
    implicit, implicitfast; RK4 raises ValueError as MuJoCo errors), the constraint
    forces of qacc (mj_invConstraint: efc_state, efc_force from jar = J qacc - aref,
    qfrc_constraint = J' efc_force) and qfrc_inverse = M qacc + qfrc_bias -
    qfrc_passive - qfrc_constraint. qacc is left as given. MuJoCo's sensor and energy
    stages are not run (tiphys has no sensors yet).
    """
    _inverse(m, d, STAGE_NONE)


def _inverse(m: Model, d: Data, skipstage: int) -> None:
    discrete_mode(m)  # bad options fail before any work
    rows = constraint_rows_possible(m)
    if skipstage < STAGE_POS:
        _position(m, d)
    if skipstage < STAGE_VEL:
        _velocity(m, d)
    if not rows and getattr(d, "_tiphys_constrained", False):  # options changed
        d.nefc.fill(0)
        d.ncon.fill(0)
        d._tiphys_constrained = False
    inverse_acceleration(m, d, rows)


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


# mjtStage
STAGE_NONE, STAGE_POS, STAGE_VEL, STAGE_ACC = 0, 1, 2, 3


def _skipstage(func: str, skipstage) -> int:
    try:
        stage = int(skipstage)
    except (TypeError, ValueError):
        stage = None
    if stage is None or stage != skipstage or not STAGE_NONE <= stage <= STAGE_ACC:
        raise ValueError(f"{func}: skipstage must be an mjtStage (0 none, 1 pos, 2 vel, "
                         f"3 acc), got {skipstage!r}")
    return stage


def forward_skip(m: Model, d: Data, skipstage: int = STAGE_NONE,
                 skipsensor: bool = False) -> None:
    """forward without the stages whose inputs did not change, as mj_forwardSkip.

    ``skipstage`` (mjtStage): 0 runs everything; 1 (STAGE_POS) skips the position
    stages (kinematics to make_constraint and transmission: qpos unchanged since they
    ran); 2 or 3 (STAGE_VEL, STAGE_ACC) also skips the velocity stages (velocity,
    com_vel, passive, reference_constraint, rne). The acceleration stages (actuation,
    fwd_acceleration, solve) always run. ``skipsensor`` skips MuJoCo's sensor stages;
    tiphys's forward runs no sensor stages yet, so it changes nothing here.
    """
    stage = _skipstage("forward_skip", skipstage)
    if stage < STAGE_POS:
        _position(m, d)
    if stage < STAGE_VEL:
        _velocity(m, d)
    _acceleration(m, d)


def inverse_skip(m: Model, d: Data, skipstage: int = STAGE_NONE,
                 skipsensor: bool = False) -> None:
    """inverse without the stages whose inputs did not change, as mj_inverseSkip:
    ``skipstage`` and ``skipsensor`` as in forward_skip (the position stages of
    inverse are mj_invPosition's, the velocity stages mj_invVelocity's)."""
    _inverse(m, d, _skipstage("inverse_skip", skipstage))
