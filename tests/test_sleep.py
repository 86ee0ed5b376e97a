"""Sleeping trees (<flag sleep="enable"/>) against MuJoCo 3.4.0, step by step.

One scene holds what sleeps and wakes in different ways: a stack of two boxes (an
island of two trees), a sphere dropped on it much later (wakes the stack by contact),
a damped hinge pendulum with a joint limit, two spheres tied by a connect equality (an
island through an equality row), a box on two slides with friction loss, and sensors
on sleeping and awake bodies (a touch sensor under the stack); a limited tendon and an
inactive joint equality join the pendulum and the box. Each world gets its own
perturbations, mirrored in its own MuJoCo data: a push through xfrc_applied, qpos and
qvel edits on sleeping trees, the equality switched on between two sleeping trees. Compared every step: the sleep state and the
awake lists exactly, contact, row and island counts exactly, qpos, qvel and sensordata
to 1e-6 (the dropped sphere's bounce is what drifts, as without sleep).
"""
import numpy as np
import mujoco
import pytest

import tiphys

SCENE = """
<mujoco>
  <option integrator="{integrator}" solver="{solver}" cone="{cone}">
    <flag sleep="enable" island="{island}"/>
  </option>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body name="b1" pos="0 0 .11"><freejoint/><geom type="box" size=".1 .1 .1"/>
      <site name="s1"/></body>
    <body name="b2" pos="0.02 0.01 .32" euler="0 0 20"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="ball" pos="0 0 2.5"><freejoint/><geom type="sphere" size=".05" mass=".5"/>
    </body>
    <body name="pend" pos="1 0 1">
      <joint name="h" type="hinge" axis="0 1 0" damping=".5" range="-30 30" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
    </body>
    <body name="c1" pos="-1 0 .1"><freejoint/><geom type="sphere" size=".1"/></body>
    <body name="c2" pos="-1.3 0 .1"><freejoint/><geom type="sphere" size=".1"/></body>
    <body name="fr" pos="0 1 .2">
      <joint name="fx" type="slide" axis="1 0 0" frictionloss=".1"/>
      <joint type="slide" axis="0 0 1"/><geom type="box" size=".1 .1 .1"/></body>
  </worldbody>
  <equality>
    <connect body1="c1" body2="c2" anchor="-.15 0 0"/>
    <joint joint1="fx" joint2="h" active="false"/>
  </equality>
  <tendon>
    <fixed limited="true" range="-0.1 0.01"><joint joint="h" coef="1"/>
      <joint joint="fx" coef="1"/></fixed>
  </tendon>
  <sensor>
    <framepos objtype="body" objname="b2"/>
    <touch site="s1"/>
    <jointpos joint="h"/>
    <accelerometer site="s1"/>
    <framelinvel objtype="body" objname="ball"/>
  </sensor>
</mujoco>
"""

EXACT = ("tree_asleep", "tree_awake", "body_awake", "ntree_awake", "nbody_awake",
         "nparent_awake", "nv_awake", "ncon", "nefc", "nisland")
LISTS = (("body_awake_ind", "nbody_awake"), ("parent_awake_ind", "nparent_awake"),
         ("dof_awake_ind", "nv_awake"))
CLOSE = ("qpos", "qvel", "sensordata")


def _compare(d, w, mjd, step):
    errors = []
    for name in EXACT:
        ours = np.atleast_1d(d.numpy(name)[w])
        theirs = np.atleast_1d(np.asarray(getattr(mjd, name)))
        if ours.shape != theirs.shape or np.any(ours != theirs):
            errors.append(f"{name}: {ours} vs {theirs}")
    for name, count in LISTS:
        n = int(getattr(mjd, count))
        if np.any(d.numpy(name)[w][:n] != np.asarray(getattr(mjd, name))[:n]):
            errors.append(f"{name}")
    for name in CLOSE:
        theirs = np.asarray(getattr(mjd, name))
        err = np.abs(d.numpy(name)[w][:theirs.size] - theirs).max(initial=0.0)
        if not err <= 1e-6:
            errors.append(f"{name}: {err:.2e}")
    assert not errors, f"world {w}, step {step}: {errors}"


def _pair(xml, nworld=1):
    """MuJoCo's model and data, tiphys's model and data of ``nworld`` worlds."""
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    return mjm, mujoco.MjData(mjm), m, tiphys.make_data(m, nworld)


def _set(d, name, w, index, value):
    a = d.numpy(name)
    a[(w,) + tuple(np.atleast_1d(index))] = value
    getattr(d, name).from_numpy(a)


# (step, world, field, index, value): user changes on sleeping trees; the MuJoCo data of
# the same world gets the same. b1 = body 1, the hinge h = qpos 21, slide fx = qvel 31.
PERTURB = [
    (100, 2, "qpos", 21, 0.2),          # moves the sleeping pendulum: mj_kinematics wakes it
    (230, 2, "qvel", 31, 0.3),          # the friction box, asleep since step 205
    (250, 1, "xfrc_applied", (1, 2), 3.0),  # pushes the sleeping stack for 5 steps
    (255, 1, "xfrc_applied", (1, 2), 0.0),
    (260, 0, "eq_active", 1, 1),        # ties two sleeping trees: both wake
    (280, 1, "qvel", 31, 0.5),          # the box slides until the tendon's limit wakes the
    (300, 2, "eq_active", 1, 1),        # pendulum (step 295); both awake here
]


@pytest.mark.parametrize("integrator,solver,cone,island", [
    ("implicitfast", "Newton", "pyramidal", "enable"),
    ("Euler", "PGS", "elliptic", "enable"),
    ("implicit", "Newton", "pyramidal", "disable"),
])
def test_sleep_and_wake_match_mujoco(integrator, solver, cone, island):
    xml = SCENE.format(integrator=integrator, solver=solver, cone=cone, island=island)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    nworld = 3
    d = tiphys.make_data(m, nworld)
    mjds = [mujoco.MjData(mjm) for _ in range(nworld)]
    for w in range(nworld):
        _compare(d, w, mjds[w], "reset")
    slept = woke = 0
    for step in range(330):
        for when, w, name, index, value in PERTURB:
            if when == step:
                _set(d, name, w, index, value)
                getattr(mjds[w], name)[index] = value
        before = [mjd.tree_asleep.copy() for mjd in mjds]
        tiphys.step(m, d)
        for w, mjd in enumerate(mjds):
            mujoco.mj_step(mjm, mjd)
            slept += int(np.sum((before[w] < 0) & (mjd.tree_asleep >= 0)))
            woke += int(np.sum((before[w] >= 0) & (mjd.tree_asleep < 0)))
            _compare(d, w, mjd, step)
    # the scene exercises what it claims: trees fall asleep and wake up
    if island == "enable":
        assert slept >= 12 and woke >= 3, (slept, woke)
    else:  # a world with constraint rows but no islands sleeps nothing (mj_sleep)
        assert slept == 0 and woke == 0, (slept, woke)


def test_step1_step2_with_sleeping_trees():
    """mj_step1 / mj_step2 with sleep: the same states and sensors as MuJoCo's (the
    accelerometer under the stack keeps its value once the stack sleeps, step 158)."""
    xml = SCENE.format(integrator="Euler", solver="Newton", cone="pyramidal",
                       island="enable")
    mjm, mjd, m, d = _pair(xml)
    for step in range(170):
        mujoco.mj_step1(mjm, mjd)
        mujoco.mj_step2(mjm, mjd)
        tiphys.step1(m, d)
        tiphys.step2(m, d)
        _compare(d, 0, mjd, step)
    assert np.sum(mjd.tree_asleep >= 0) >= 5


INIT = """
<mujoco>
  <option><flag sleep="enable"/></option>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body name="resting" pos="0 0 .1" sleep="init"><freejoint/><geom type="box" size=".1 .1 .1"/>
    </body>
    <body name="other" pos="1 0 .1" sleep="{other}"><freejoint/><geom type="box" size=".1 .1 .1"/>
    </body>
    <body name="falling" pos="0 0 1"><freejoint/><geom type="sphere" size=".05"/></body>
  </worldbody>
  {extra}
</mujoco>
"""


def test_trees_that_start_asleep():
    """sleep="init": reset puts the tree to sleep (a forward pass, then mj_sleep); the
    sphere falling on it later wakes it."""
    xml = INIT.format(other="init", extra="")
    mjm, mjd, m, d = _pair(xml, 2)
    for w in range(2):
        _compare(d, w, mjd, "reset")
    assert list(mjd.tree_asleep[:2]) == [0, 1]
    for step in range(220):  # the sphere lands at step 196
        tiphys.step(m, d)
        mujoco.mj_step(mjm, mjd)
        for w in range(2):
            _compare(d, w, mjd, step)
    assert mjd.tree_asleep[0] < 0  # woken by the sphere


def test_one_world_reset_with_trees_that_start_asleep():
    """reset_data(world=k) with sleep="init" trees: that world as mj_resetData leaves
    it (the init trees asleep, the other tree's counter advanced), the other worlds
    untouched, and the steps after it as MuJoCo's."""
    mjm, _, m, d = _pair(INIT.format(other="init", extra=""), 3)
    for _ in range(30):
        tiphys.step(m, d)
    before = {name: d.numpy(name).copy() for name in ("qpos", "qvel", "tree_asleep", "qacc")}
    tiphys.reset_data(m, d, world=1)
    mjd = mujoco.MjData(mjm)
    _compare(d, 1, mjd, "reset")
    for name, value in before.items():
        np.testing.assert_array_equal(d.numpy(name)[[0, 2]], value[[0, 2]], err_msg=name)
    for step in range(20):
        tiphys.step(m, d)
        mujoco.mj_step(mjm, mjd)
        _compare(d, 1, mjd, step)


def test_init_tree_that_cannot_sleep_is_an_error():
    """A tree marked init in an island with a tree that is not cannot sleep at reset:
    MuJoCo's error, naming the tree's root body."""
    xml = INIT.format(other="auto", extra='<equality><weld body1="resting" body2="other"/>'
                                          '</equality>')
    with pytest.raises(Exception, match="only 0 could be slept"):
        mujoco.MjData(mujoco.MjModel.from_xml_string(xml))
    m = tiphys.load_model_from_string(xml)
    with pytest.raises(ValueError, match=r"1 trees were marked as sleep='init' but only 0 "
                                         r"could be slept \(world 0\)\. Body 'resting' "
                                         r"\(id=1\) is the root"):
        tiphys.make_data(m, 1)


def test_awake_arrays_after_reset_match_mujoco():
    """mj_resetData's mj_updateSleep, with sleep off: static bodies STATIC, mocap
    bodies AWAKE, every tree awake."""
    xml = """<mujoco><worldbody><body name="st" pos="0 0 1"><geom size=".1"/></body>
      <body mocap="true" pos="1 0 0"><geom size=".1"/></body>
      <body pos="0 1 1"><freejoint/><geom size=".1"/>
        <body><joint/><geom size=".1"/></body></body></worldbody></mujoco>"""
    mjm, mjd, m, d = _pair(xml, 2)
    for w in range(2):
        _compare(d, w, mjd, "reset")
    assert list(mjd.body_awake) == [-1, -1, 1, 1, 1]


ACTUATED = """
<mujoco>
  <option><flag sleep="enable"/></option>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="arm" pos="0 0 .5" sleep="allowed">
      <joint name="j" type="hinge" axis="0 1 0" damping="2"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.2" size=".03"/>
    </body>
    <body name="box" pos=".5 0 .1" sleep="allowed">
      <joint name="s" type="slide" axis="1 0 0"/><geom type="box" size=".1 .1 .1"/>
    </body>
  </worldbody>
  <actuator>
    <general joint="j" dyntype="integrator" gainprm="0"/>
    <motor joint="s"/>
  </actuator>
</mujoco>
"""


def test_actuators_of_sleeping_trees():
    """Actuators on trees allowed to sleep (<body sleep="allowed">): asleep, they give
    no force and keep their act_dot (the activation keeps integrating the value it had
    when the tree fell asleep), and a new control does not wake them, as in MuJoCo."""
    mjm, mjd, m, d = _pair(ACTUATED)
    mjd.ctrl[0] = 0.3  # act_dot of the integrator (its force is zero: gain 0)
    d.ctrl.from_numpy(np.array([[0.3, 0.0]]))
    asleep = []
    for step in range(700):
        if step == 600:
            mjd.ctrl[:] = (0.5, 1.0)
            d.ctrl.from_numpy(np.array([[0.5, 1.0]]))
        mujoco.mj_step(mjm, mjd)
        tiphys.step(m, d)
        _compare(d, 0, mjd, step)
        for name in ("act", "act_dot", "actuator_force", "qfrc_actuator"):
            np.testing.assert_allclose(d.numpy(name)[0], getattr(mjd, name), atol=1e-8,
                                       err_msg=f"{name} at step {step}")
        asleep.append(int(np.sum(mjd.tree_asleep >= 0)))
    assert asleep[599] == 2 and asleep[-1] == 2
    assert mjd.act_dot[0] == 0.3 and mjd.act[0] > 0.3  # the stale act_dot, integrated


SPRINGS = """
<mujoco>
  <option><flag sleep="enable" energy="enable"/></option>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .1">
      <joint type="slide" axis="1 0 0" stiffness="1" springref=".05" frictionloss=".1"/>
      <geom type="box" size=".1 .1 .1"/>
    </body>
    <body pos="1 0 .5"><joint type="hinge" axis="0 1 0" stiffness="2" springref="30"
      damping="1"/><geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/></body>
  </worldbody>
  <sensor><e_potential/><e_kinetic/></sensor>
</mujoco>
"""


def test_energy_leaves_out_sleeping_springs():
    """<flag energy>: the springs of sleeping trees are not in the potential energy
    (mj_energyPos), here a box held off its spring's rest length by friction loss."""
    mjm, mjd, m, d = _pair(SPRINGS)
    for step in range(60):
        mujoco.mj_step(mjm, mjd)
        tiphys.step(m, d)
        _compare(d, 0, mjd, step)
        np.testing.assert_allclose(d.numpy("energy")[0], mjd.energy, rtol=1e-9, atol=1e-12)
    assert mjd.tree_asleep[0] >= 0 > mjd.tree_asleep[1]  # the box sleeps, the hinge not


@pytest.mark.parametrize("change,what", [
    ('<option integrator="RK4"><flag sleep="enable"/></option>', "RK4"),
    ('<option><flag sleep="enable"/></option><tendon><fixed name="t"><joint joint="j" '
     'coef="1"/></fixed></tendon><equality><tendon tendon1="t"/></equality>',
     "tendon> equality"),
])
def test_what_is_refused(change, what):
    xml = f"""<mujoco>{change}<worldbody><body pos="0 0 1" sleep="allowed">
      <joint name="j" type="slide"/><geom size=".1"/></body></worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match=what):
        tiphys.step(m, d)
