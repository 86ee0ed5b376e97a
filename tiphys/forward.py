"""The pipeline: forward and step as fixed sequences of stage launches.

Contacts are detected (tiphys.collision) but constraint forces (contacts, limits,
friction loss, equalities) need the solver of the next issue: a model that would
need them raises NotImplementedError instead of silently dropping forces.
"""
from __future__ import annotations

import numpy as np

from .kernels.actuation import actuation, transmission, velocity
from .kernels.check import check
from .kernels.forward import fwd_acceleration
from .kernels.integrate import RK4_A, RK4_B, euler, implicit, implicitfast, rk4_stage
from .kernels.inverse import inverse_combine
from .kernels.passive import passive
from .kernels.smooth import camlight, com_pos, com_vel, crb, factor_m, kinematics, rne
from .kernels.tendon import tendon
from .model import Data, Model

_INTEGRATOR_NAMES = {0: "Euler", 1: "RK4", 2: "implicit", 3: "implicitfast"}


def contacts_possible(m: Model) -> bool:
    """True if some geom pair may collide: the model has collision candidates
    (contype/conaffinity, weld/parent filters, <exclude>, explicit <pair>s, as
    mj_collision filters them); False when contacts or constraints are disabled."""
    from .contacts import plan
    return plan(m).ncand > 0


def check_supported(m: Model) -> None:
    """Raise NotImplementedError for anything forward/step would otherwise drop."""
    opt = m.opt
    if getattr(m, "_tiphys_supported_opt", None) is opt:
        return  # checked before with these options
    a = m.arrays
    no_constraint = opt.disabled("constraint")
    reasons = []
    if contacts_possible(m):
        reasons.append("contact forces (tiphys.collision(m, d) detects the contacts; the "
                       "constraint solver that applies them comes next; disable with "
                       "<flag contact=\"disable\"/>)")
    if m.njnt and not (no_constraint or opt.disabled("limit")) and \
            np.any(np.asarray(a.jnt_limited)[:m.njnt]):
        reasons.append("joint limits")
    if m.nv and not (no_constraint or opt.disabled("frictionloss")) and \
            np.any(np.asarray(a.dof_frictionloss)[..., :m.nv] > 0):
        reasons.append("dof frictionloss")
    if m.neq and not (no_constraint or opt.disabled("equality")):
        reasons.append("equality constraints")
    if m.ntendon and not (no_constraint or opt.disabled("limit")) and \
            np.any(np.asarray(a.tendon_limited)[:m.ntendon]):
        reasons.append("tendon limits")
    if m.ntendon and not (no_constraint or opt.disabled("frictionloss")) and \
            np.any(np.asarray(a.tendon_frictionloss)[..., :m.ntendon] > 0):
        reasons.append("tendon frictionloss")
    if m.nu and np.any(np.asarray(a.actuator_trntype)[:m.nu] == 5):
        reasons.append("body transmission (adhesion actuators)")
    if reasons:
        raise NotImplementedError("forward: " + ", ".join(reasons) + " not supported yet")
    m._tiphys_supported_opt = opt


def forward(m: Model, d: Data) -> None:
    """Forward dynamics of every world, as mj_forward for constraint-free models.

    Runs kinematics, com_pos, camlight, tendon, crb, factor_m, transmission, velocity,
    com_vel, passive, rne, actuation, fwd_acceleration; qacc = qacc_smooth (no
    constraints). Raises NotImplementedError for models with contacts, limits,
    frictionloss, equalities or body transmissions.
    """
    check_supported(m)
    _forward(m, d)


def _position_velocity(m: Model, d: Data) -> None:
    """The position- and velocity-dependent stages (mj_fwdPosition + mj_fwdVelocity)."""
    kinematics(m, d)
    com_pos(m, d)
    camlight(m, d)
    tendon(m, d)
    crb(m, d)
    factor_m(m, d)
    transmission(m, d)
    velocity(m, d)
    com_vel(m, d)
    passive(m, d)
    rne(m, d)


def _acceleration(m: Model, d: Data) -> None:
    """Actuation and the smooth acceleration (no constraints yet: qacc = qacc_smooth)."""
    actuation(m, d)
    fwd_acceleration(m, d)
    d.qacc.copy_from(d.qacc_smooth)


def _forward(m: Model, d: Data) -> None:
    _position_velocity(m, d)
    _acceleration(m, d)


def step(m: Model, d: Data) -> None:
    """Advance every world by one timestep: forward, then the model's integrator.

    Euler, RK4, implicit and implicitfast, as MuJoCo's (the implicit ones with the
    analytic velocity derivatives of actuators, dampers, fluid and, for implicit, RNE).
    """
    check_supported(m)
    integrator = m.opt.integrator
    _check_integrator(m)
    check(m, d, "pos")
    check(m, d, "vel")
    _forward(m, d)
    check(m, d, "acc")
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
    check_supported(m)
    check(m, d, "pos")
    check(m, d, "vel")
    _position_velocity(m, d)


def step2(m: Model, d: Data) -> None:
    """Second half of step, as mj_step2: acceleration, then Euler, or the implicit
    integrators (RK4 uses Euler here, as MuJoCo)."""
    check_supported(m)
    _check_integrator(m)
    _acceleration(m, d)
    check(m, d, "acc")
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
    """Inverse dynamics of every world, as mj_inverse for constraint-free models.

    From qpos, qvel, qacc: runs the position and velocity stages (writing what
    step1 writes), then qfrc_inverse = M qacc + qfrc_bias - qfrc_passive.
    Raises NotImplementedError with the invdiscrete flag.
    """
    if m.opt.enabled("invdiscrete"):
        raise NotImplementedError("inverse: <flag invdiscrete=\"enable\"/>")
    step1(m, d)
    inverse_combine(m, d)
