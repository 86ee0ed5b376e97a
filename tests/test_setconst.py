"""tiphys.set_const (mj_setConst) against MuJoCo 3.4.0.

The same fields are changed in a mujoco.MjModel and in the tiphys Model (set_param:
masses, inertias, body frames, armature, qpos0, gears, tendon armature, ...); then
mujoco.mj_setConst and tiphys.set_const run, and every Model field both engines have
is compared (oracle.compare_model, 1e-6 relative), stat included. Each case first
checks that the change made the derived constants stale (the comparison fails before
set_const), so a set_const that did nothing cannot pass. The device arrays must hold
what the host copy holds.
"""
import copy
import os

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.setconst import SET_CONST_FIELDS
from oracle import compare_model, corpus_dir, load_pair_from_xml, stripped_corpus_pair

HERE = os.path.dirname(os.path.abspath(__file__))

TENDONS = """
<mujoco>
  <compiler autolimits="true"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-1.5 1.5"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <site name="s0" pos="0.05 0 0.05"/>
      <body name="fore" pos="0.4 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" range="-2 0.2"/>
        <joint name="wrist" type="slide" axis="1 0 0" range="-0.1 0.1"/>
        <geom type="capsule" fromto="0 0 0 0.35 0 0" size="0.03"/>
        <geom name="wrap" type="cylinder" size="0.05 0.02" zaxis="0 1 0"/>
        <site name="s1" pos="0.2 0 0.04"/>
        <site name="side" pos="0 0 0.1"/>
      </body>
    </body>
    <body name="ball" pos="0.5 0.5 1">
      <joint name="ballj" type="ball" pos="0 0 0.1"/>
      <geom type="box" size="0.05 0.1 0.02" pos="0.1 0 0"/>
      <site name="s2" pos="0.1 0 0"/>
    </body>
    <body name="slider" pos="-0.5 0 1">
      <joint name="sx" type="slide" axis="1 0 0"/>
      <joint name="sy" type="slide" axis="0 1 0"/>
      <geom type="box" size="0.05 0.05 0.05"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="flexor" stiffness="20" springlength="-1 -1">
      <site site="s0"/>
      <geom geom="wrap" sidesite="side"/>
      <site site="s1"/>
    </spatial>
    <fixed name="coupled" armature="0.02">
      <joint joint="shoulder" coef="1"/>
      <joint joint="elbow" coef="-0.5"/>
    </fixed>
    <fixed name="sliders" armature="0.3">
      <joint joint="sx" coef="1"/>
      <joint joint="sy" coef="0.5"/>
    </fixed>
    <spatial name="cross" armature="0.05">
      <site site="s1"/>
      <site site="s2"/>
    </spatial>
  </tendon>
  <actuator>
    <muscle name="m" tendon="flexor" lengthrange="0.3 0.7"/>
    <position name="p" joint="shoulder" kp="30" dampratio="0.7"/>
    <position name="pw" joint="wrist" kp="100" dampratio="1"/>
    <motor name="ball" joint="ballj" gear="1 0.5 0.2 0 0 0"/>
    <general name="t" tendon="coupled" gainprm="2" biastype="affine" biasprm="0 -2 1"/>
    <motor name="site" site="s2" gear="0 0 1 0 0.3 0"/>
  </actuator>
</mujoco>
"""

EQUALITIES = """
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.05"/>
      <site name="sa" pos="0.1 0 0"/>
    </body>
    <body name="b" pos="0.5 0 1" euler="0 30 0">
      <freejoint/>
      <geom type="sphere" size="0.1"/>
      <site name="sb" pos="-0.1 0 0"/>
      <body name="c" pos="0 0.3 0">
        <joint type="ball"/>
        <geom type="capsule" size="0.03" fromto="0 0 0 0 0.2 0"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect body1="a" body2="b" anchor="0.2 0 0"/>
    <connect site1="sa" site2="sb"/>
    <weld body1="a" body2="c"/>
    <weld body1="b" body2="a" relpose="0.1 0 0 1 0 0 0" anchor="0 0.1 0"/>
    <weld site1="sa" site2="sb"/>
    <connect body1="c" anchor="0 0.1 0.1"/>
  </equality>
</mujoco>
"""

CAMLIGHT = """
<mujoco>
  <worldbody>
    <light name="fixed" pos="0 0 3" dir="0 0 -1"/>
    <camera name="world" pos="1 1 1" xyaxes="1 0 0 0 1 1"/>
    <body name="root" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1"/>
      <camera name="track" mode="track" pos="0 -1 0.3" xyaxes="1 0 0 0 0.3 1"/>
      <camera name="trackcom" mode="trackcom" pos="0.2 -1 0.3"/>
      <light name="spot" mode="targetbody" target="arm" pos="0 0 1"/>
      <body name="arm" pos="0.2 0 0">
        <joint type="ball"/>
        <geom type="capsule" size="0.03" fromto="0 0 0 0.3 0 0"/>
        <camera name="target" mode="targetbody" target="root" pos="0.3 0 0.2"/>
        <camera name="targetcom" mode="targetbodycom" target="root" pos="0.1 0.3 0"/>
        <light name="lcom" mode="trackcom" pos="0 0.2 0.5" dir="0 -1 -1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _xml_pair(xml, tag):
    return load_pair_from_xml(os.path.join(HERE, "setconst.xml"), xml.encode(), tag)


def _change(m, mjm, name, value):
    getattr(mjm, name)[:] = np.asarray(value).reshape(getattr(mjm, name).shape)
    tiphys.set_param(m, name, np.asarray(value).reshape(np.asarray(getattr(m.arrays, name)).shape))


def _perturb(m, mjm, rng, names):
    a = m.arrays
    for name in names:
        v = np.asarray(getattr(a, name), dtype=np.float64)
        if name in ("body_pos", "jnt_pos", "cam_pos", "light_pos", "site_pos"):
            v = v + rng.uniform(-0.05, 0.05, v.shape)
        elif name == "jnt_axis":
            v = v + rng.uniform(-0.2, 0.2, v.shape)
            v = v / np.linalg.norm(v, axis=1, keepdims=True)
        elif name in ("body_quat", "cam_quat"):
            v = v + rng.uniform(-0.2, 0.2, v.shape)
            v = v / np.linalg.norm(v, axis=1, keepdims=True)
        elif name == "dof_armature" or name == "tendon_armature":
            v = v + rng.uniform(0.0, 0.05, v.shape)
        else:
            v = v * rng.uniform(0.5, 2.0, v.shape)
        _change(m, mjm, name, v)


def _new_qpos0(m, rng):
    """qpos0 with free joints moved and turned, ball joints turned, hinges/slides moved
    (which changes nothing at qpos0 but must still be handled)."""
    a = m.arrays
    q = np.array(a.qpos0, dtype=np.float64)
    for jt, adr in zip(a.jnt_type.tolist(), a.jnt_qposadr.tolist()):
        if jt == 0:
            q[adr:adr + 3] += rng.uniform(-0.3, 0.3, 3)
            quat = q[adr + 3:adr + 7] + rng.normal(size=4) * 0.3
            q[adr + 3:adr + 7] = quat / np.linalg.norm(quat)
        elif jt == 1:
            quat = np.array([1.0, 0, 0, 0]) + rng.normal(size=4) * 0.3
            q[adr:adr + 4] = quat / np.linalg.norm(quat)
        else:
            q[adr] += rng.uniform(-0.2, 0.2)
    return q


def _set_const_both(m, mjm):
    mujoco.mj_setConst(mjm, mujoco.MjData(mjm))
    tiphys.set_const(m)


def _check(m, mjm, stale=True):
    if stale:  # the changed fields left MuJoCo's recomputed constants apart from ours
        before = compare_model(m.arrays, _recomputed(mjm))
        assert before, "the change left every derived constant as it was"
    _set_const_both(m, mjm)
    errors = compare_model(m.arrays, mjm)
    assert not errors, "\n".join(errors)
    for name in SET_CONST_FIELDS:  # the device arrays hold the host values
        host = np.asarray(getattr(m.arrays, name), dtype=np.float64)
        if host.size:
            dev = getattr(m, name).to_numpy().reshape(-1)[:host.size]
            np.testing.assert_array_equal(dev, host.reshape(-1), err_msg=name)
    assert m.ngravcomp == mjm.ngravcomp
    assert m.stat is m.arrays.stat


def _recomputed(mjm):
    other = copy.copy(mjm)
    mujoco.mj_setConst(other, mujoco.MjData(other))
    return other


BODY_FIELDS = ("body_mass", "body_inertia", "body_pos", "body_quat", "body_ipos",
               "dof_armature", "jnt_pos", "jnt_axis")


# manipulator: "simple" bodies (several joints) whose changed joint frames MuJoCo's
# mass matrix ignores (a simple dof's row of M is its dof_M0)
@pytest.mark.parametrize("rel", ["gym/humanoid.xml", "gym/ant.xml", "dmc/manipulator.xml"])
def test_corpus_models_after_body_changes(rel):
    if not os.path.exists(os.path.join(corpus_dir(), rel)):
        pytest.skip(f"corpus model {rel} missing")
    m, mjm = stripped_corpus_pair(rel)
    rng = np.random.default_rng(1)
    _perturb(m, mjm, rng, BODY_FIELDS)
    gravcomp = np.array(m.arrays.body_gravcomp)
    gravcomp[1:4] = (0.5, 1.0, 0.2)  # ngravcomp follows
    _change(m, mjm, "body_gravcomp", gravcomp)
    _check(m, mjm)
    assert m.ngravcomp == 3
    # then qpos0 alone: a free root moved and turned (hinges and slides at another
    # qpos0 change nothing: mj_kinematics turns them by qpos - qpos0)
    _change(m, mjm, "qpos0", _new_qpos0(m, rng))
    _check(m, mjm, stale=bool(np.isin(m.arrays.jnt_type, (0, 1)).any()))


def test_tendons_and_actuators():
    m, mjm = _xml_pair(TENDONS, "ten")
    # as compiled (the tendon armature of the two-slide "simple" body stays on the
    # diagonal of M, as in MuJoCo's sparsity)
    assert not compare_model(m.arrays, mjm)
    rng = np.random.default_rng(2)
    _perturb(m, mjm, rng, BODY_FIELDS + ("site_pos", "geom_size", "actuator_gear"))
    _change(m, mjm, "tendon_armature", [0.0, 0.07, 0.2, 0.01])
    _check(m, mjm)
    # a dampratio given again (biasprm[2] > 0) and spring lengths left to setSpring
    b = np.array(m.arrays.actuator_biasprm)
    b[1, 2], b[2, 2] = 0.5, 2.0
    _change(m, mjm, "actuator_biasprm", b)
    ls = np.array(m.arrays.tendon_lengthspring)
    ls[[0, 3]] = -1
    _change(m, mjm, "tendon_lengthspring", ls)
    qs = _new_qpos0(m, rng)
    _change(m, mjm, "qpos_spring", qs)
    _change(m, mjm, "qpos0", _new_qpos0(m, rng))
    _check(m, mjm)
    assert m.arrays.actuator_biasprm[1, 2] < 0 and m.arrays.actuator_biasprm[2, 2] < 0
    assert not np.any(m.arrays.tendon_lengthspring == -1)


def test_equalities():
    m, mjm = _xml_pair(EQUALITIES, "eq")
    rng = np.random.default_rng(3)
    _perturb(m, mjm, rng, ("body_pos", "body_quat", "body_mass", "body_inertia"))
    # a connect's anchor and a weld's relative pose given anew (quaternion 0: computed;
    # not normalized: normalized)
    data = np.array(m.arrays.eq_data)
    data[0, 0:3] = (0.1, 0.2, -0.1)
    data[2, 0:3] = (0.0, 0.05, 0.1)
    data[2, 6:10] = 0.0
    data[3, 6:10] = (2.0, 0.0, 0.2, 0.0)
    data[5, 0:3] = (0.0, 0.0, 0.3)
    _change(m, mjm, "eq_data", data)
    _change(m, mjm, "qpos0", _new_qpos0(m, rng))
    _check(m, mjm)


def test_cameras_and_lights():
    m, mjm = _xml_pair(CAMLIGHT, "cam")
    rng = np.random.default_rng(4)
    _perturb(m, mjm, rng, ("body_pos", "body_mass", "body_ipos", "cam_pos", "cam_quat",
                           "light_pos"))
    d = np.array(m.arrays.light_dir) + rng.uniform(-0.3, 0.3, m.arrays.light_dir.shape)
    _change(m, mjm, "light_dir", d / np.linalg.norm(d, axis=1, keepdims=True))
    _check(m, mjm)
    _change(m, mjm, "qpos0", _new_qpos0(m, rng))
    _check(m, mjm)


def test_unchanged_model_stays_and_statistic_is_recomputed():
    """Without changes set_const reproduces the compiled constants (to MuJoCo's
    tolerance), except a <statistic> value, which mj_setConst replaces as MuJoCo does."""
    xml = TENDONS.replace("<worldbody>", '<statistic meansize="0.7" extent="5"/><worldbody>', 1)
    m, mjm = _xml_pair(xml, "stat")
    assert m.stat.meansize == 0.7 == mjm.stat.meansize
    _check(m, mjm, stale=False)
    assert m.stat.meansize != 0.7 and m.stat.extent != 5


def test_data_is_checked_and_simulation_uses_the_new_constants():
    m, mjm = _xml_pair(EQUALITIES, "sim")
    d = tiphys.make_data(m, 2)
    other = tiphys.load_model_from_string(EQUALITIES)
    with pytest.raises(ValueError, match="another Model"):
        tiphys.set_const(m, tiphys.make_data(other, 1))
    with pytest.raises(TypeError, match="expected a tiphys.Model"):
        tiphys.set_const(mjm)
    rng = np.random.default_rng(5)
    _perturb(m, mjm, rng, ("body_pos", "body_mass"))
    twin = copy.copy(m)  # shares the device arrays, the host copy and the statistics
    tiphys.set_const(m, d)
    assert twin.stat is m.stat and twin.arrays is m.arrays
    mujoco.mj_setConst(mjm, mujoco.MjData(mjm))
    # a forward with the recomputed eq_data / invweights matches MuJoCo's
    mjd = mujoco.MjData(mjm)
    qpos = np.tile(mjm.qpos0, (2, 1))
    qpos[:, :3] += rng.uniform(-0.05, 0.05, (2, 3))
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(np.zeros((2, m.nv)))
    d.qacc.from_numpy(np.full((2, m.nv), np.nan))
    tiphys.forward(m, d)
    for w in range(2):
        mjd.qpos[:] = qpos[w]
        mjd.qvel[:] = 0
        mujoco.mj_forward(mjm, mjd)
        np.testing.assert_allclose(d.qacc.to_numpy()[w], mjd.qacc, rtol=1e-6, atol=1e-8)


def test_per_world_parameters_are_refused():
    m = tiphys.load_model_from_string(EQUALITIES)
    tiphys.set_param(m, "body_mass", np.tile(m.arrays.body_mass, (3, 1)))
    with pytest.raises(ValueError, match=r"body_mass \(3 worlds\)"):
        tiphys.set_const(m)
    tiphys.set_param(m, "body_mass", m.arrays.body_mass)  # one value again: accepted
    tiphys.set_const(m)


def test_flex_models_are_refused():
    xml = """<mujoco><worldbody><flexcomp name="f" type="grid" count="3 3 1"
      spacing="0.1 0.1 0.1" dim="2"><edge equality="true"/></flexcomp>
      </worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    with pytest.raises(NotImplementedError, match="flex"):
        tiphys.set_const(m)


def test_a_field_written_on_the_device_only_is_refused():
    m = tiphys.load_model_from_string(EQUALITIES)
    mass = m.body_mass.to_numpy()
    mass[0, 1] *= 2
    m.body_mass.from_numpy(mass)  # not through set_param: m.arrays keeps the old value
    with pytest.raises(ValueError, match="body_mass differs from the host copy"):
        tiphys.set_const(m)
