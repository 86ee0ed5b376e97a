"""Engine plugins (tiphys.plugin) against MuJoCo 3.4.0 with its bundled plugin
libraries: mujoco.pid compiled field by field, forward outputs on random states,
200-step trajectories in Euler, implicitfast, implicit and RK4, state vectors, bad
input with MuJoCo's messages, and a user plugin registered with register_plugin.

MjModel.plugin holds MuJoCo's global registry slot, tiphys's Model.plugin its own
registry's: that field is compared by plugin name. f64 on the CPU; one f32 check in a
subprocess.
"""
import json
import os
import sys

import mujoco
import numpy as np
import pytest

import spirv
import subproc
import tiphys
from tiphys import plugin as registry
from tiphys.compiler.compile import compile_spec
from oracle import compare_model

NWORLD = 3
TOL = 1e-10

BODY = """
  <option timestep="0.005"/>
  <default><default class="limited"><general ctrlrange="-2 2" ctrllimited="true"/></default>
  </default>
  <worldbody>
    <body name="b1">
      <joint name="slide" type="slide" axis="1 0 0" damping="0.1"/>
      <geom type="box" size=".1 .1 .1" mass="1" contype="0" conaffinity="0"/>
      <body name="b2" pos="0 0 -.3">
        <joint name="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03" mass=".5" contype="0"
              conaffinity="0"/>
        <site name="tip" pos="0 0 -.3"/>
        <body name="b3" pos="0 0 -.3">
          <joint name="hinge2" axis="1 0 0" damping=".05"/>
          <geom size=".08" mass="1" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="t" actuatorfrcrange="-1.5 1.5">
    <joint joint="hinge" coef="1"/><joint joint="hinge2" coef="-.5"/></fixed></tendon>
"""

MODELS = {
    # one <extension> instance shared by two actuators, mixed with built-in actuators
    "shared": """<mujoco>%s
  <extension><plugin plugin="mujoco.pid"><instance name="p">
    <config key="kp" value="20"/><config key="ki" value="4"/><config key="kd" value="1.5"/>
    <config key="imax" value="2"/><config key="slewmax" value="5"/>
  </instance></plugin></extension>
  <actuator>
    <motor joint="hinge2" gear="2"/>
    <plugin name="pid_slide" joint="slide" instance="p" actdim="2"/>
    <plugin joint="hinge" instance="p" actdim="2" class="limited" gear="2" group="1"/>
    <position tendon="t" kp="5"/>
  </actuator>
</mujoco>""",
    # in-place config, with and without ki, on a joint and a force-limited tendon
    "inplace": """<mujoco>%s
  <extension><plugin plugin="mujoco.pid"/></extension>
  <actuator>
    <plugin joint="slide" plugin="mujoco.pid">
      <config key="kp" value="30"/><config key="kd" value="2"/></plugin>
    <plugin tendon="t" plugin="mujoco.pid" actdim="1" forcerange="-2 2">
      <config key="kp" value="10"/><config key="ki" value="3"/></plugin>
    <general joint="hinge2" dyntype="filter" dynprm=".1" gainprm="2"/>
  </actuator>
</mujoco>""",
    # built-in dynamics on PID actuators: the filter's or integrator's activation last
    "dyn": """<mujoco>%s
  <extension><plugin plugin="mujoco.pid"/></extension>
  <actuator>
    <plugin joint="slide" plugin="mujoco.pid" dyntype="filter" dynprm=".05" actdim="2">
      <config key="kp" value="20"/><config key="ki" value="2"/><config key="kd" value="1"/>
    </plugin>
    <plugin joint="hinge" plugin="mujoco.pid" dyntype="integrator" actdim="2"
            actlimited="true" actrange="-1 1">
      <config key="kp" value="15"/><config key="kd" value="1"/>
      <config key="slewmax" value="3"/></plugin>
    <plugin joint="hinge2" plugin="mujoco.pid" dyntype="filterexact" dynprm=".1"
            actearly="true" actdim="1">
      <config key="kp" value="2"/><config key="kd" value=".1"/></plugin>
  </actuator>
</mujoco>""",
    # slewmax without ki (imax then ignored), ki without imax, a site transmission
    "noki": """<mujoco>%s
  <extension><plugin plugin="mujoco.pid">
    <instance name="q"><config key="kp" value="12"/><config key="kd" value="1"/>
      <config key="slewmax" value="2"/><config key="imax" value="5"/></instance>
    <instance name="r"><config key="kp" value="5"/><config key="ki" value="1"/></instance>
  </plugin></extension>
  <actuator>
    <plugin joint="slide" instance="q" actdim="1"/>
    <plugin joint="hinge" instance="r" actdim="1" ctrlrange="-.5 .5"/>
    <plugin site="tip" instance="q" actdim="1" gear="0 0 1 0 0 0"/>
    <velocity joint="hinge2" kv=".3"/>
  </actuator>
</mujoco>""",
}
MODELS = {k: v % BODY for k, v in MODELS.items()}
# MuJoCo 3.4.0's own example, model/plugin/actuator/pid.xml (Apache-2.0): P, PD, PID and
# PID with a clamped integral on four sliders that meet a floor
MODELS["mujoco_pid_xml"] = """<mujoco model="PID Controllers">
  <size memory="10M"/>

  <visual>
    <headlight diffuse=".2 .2 .2"/>
    <global elevation="-30" />
  </visual>
  <statistic extent="0.50" />

  <extension>
    <plugin plugin="mujoco.pid">
      <!-- pure proportional gain, bounces up and down -->
      <instance name="pid1">
        <config key="kp" value="4.0"/>
      </instance>
      <!-- PD controller - settles below setpoint -->
      <instance name="pid2">
        <config key="kp" value="4.0"/>
        <config key="kd" value="0.4"/>
      </instance>
      <!-- PID controller - reaches setpoint -->
      <instance name="pid3">
        <config key="kp" value="4.0"/>
        <config key="ki" value="4"/>
        <config key="kd" value="0.4"/>
      </instance>
      <!-- PID controller with clamped I term. -->
      <instance name="pid4">
        <config key="kp" value="4.0"/>
        <config key="ki" value="4"/>
        <config key="kd" value="0.4"/>
        <config key="imax" value=".5"/>
      </instance>
    </plugin>
  </extension>

  <default>
    <geom type="sphere" size="0.01" rgba="1 1 1 1" />
  </default>

  <worldbody>
    <light pos="0.4 -.15 .6" dir="-1 .5 -1" diffuse=".7 .7 .7"/>
    <light pos="-.4 -.15 .6" dir="1 .5 -1" diffuse=".7 .7 .7"/>
    <geom name="floor" type="plane" pos="0 0 -0.1" size="0 0 100" />
    <body pos="-0.06 0 0">
      <joint name="j1" type="slide" axis="0 0 1" />
      <geom/>
    </body>
    <body pos="-0.02 0 0" >
      <joint name="j2" type="slide" axis="0 0 1" />
      <geom/>
    </body>
    <body pos="0.02 0 0" >
      <joint name="j3" type="slide" axis="0 0 1" />
      <geom/>
    </body>
    <body pos="0.06 0 0" >
      <joint name="j4" type="slide" axis="0 0 1" />
      <geom/>
    </body>
  </worldbody>
  <actuator>
    <plugin joint="j1" plugin="mujoco.pid" instance="pid1" ctrlrange="0 0.15" />
    <plugin joint="j2" plugin="mujoco.pid" instance="pid2" ctrlrange="0 0.15" />
    <plugin joint="j3" plugin="mujoco.pid" instance="pid3" ctrlrange="0 0.15" actdim="1" />
    <plugin joint="j4" plugin="mujoco.pid" instance="pid4" ctrlrange="0 0.15" actdim="1" />
  </actuator>
</mujoco>"""

PLUGIN_FIELDS = ("plugin_stateadr", "plugin_statenum", "plugin_attr", "plugin_attradr",
                 "actuator_plugin", "body_plugin", "geom_plugin", "sensor_plugin")


def _mujoco_slot_names() -> dict:
    """MuJoCo's registry slot of mujoco.pid (its slots are not named in Python)."""
    mjm = mujoco.MjModel.from_xml_string(MODELS["inplace"])
    return {int(mjm.plugin[0]): "mujoco.pid"}


@pytest.fixture(scope="module", params=sorted(MODELS))
def pair(request):
    xml = MODELS[request.param]
    return request.param, tiphys.load_model_from_string(xml), \
        mujoco.MjModel.from_xml_string(xml)


# ----------------------------------------------------------------------------- compile

def test_compiled_fields_match_mujoco(pair):
    name, m, mjm = pair
    a = m.arrays
    assert not compare_model(a, mjm, skip=("plugin",)), name
    for size in ("nplugin", "npluginattr", "npluginstate", "na", "nu"):
        assert getattr(m, size) == getattr(mjm, size), size
    for field in PLUGIN_FIELDS + ("actuator_actnum", "actuator_actadr", "actuator_dyntype",
                                  "actuator_actearly", "actuator_dynprm", "actuator_gear",
                                  "actuator_ctrlrange", "actuator_ctrllimited"):
        ours = np.asarray(getattr(a, field)).reshape(-1)
        theirs = np.asarray(getattr(mjm, field)).reshape(-1)
        if field == "plugin_attr":
            theirs = theirs.astype(np.uint8)
        np.testing.assert_array_equal(ours, theirs, err_msg=field)
    slots = _mujoco_slot_names()
    assert [registry.plugin_at(int(s)).name for s in a.plugin] == \
        [slots[int(s)] for s in mjm.plugin]
    assert [tiphys.id2name(m, "plugin", i) for i in range(m.nplugin)] == \
        [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_PLUGIN, i) for i in range(mjm.nplugin)]


def test_plugin_attr_keeps_the_declared_attribute_order():
    m = tiphys.load_model_from_string(MODELS["shared"])
    text = bytes(np.asarray(m.arrays.plugin_attr, dtype=np.uint8)).split(b"\0")
    assert text[:5] == [b"20", b"4", b"1.5", b"2", b"5"]  # kp ki kd imax slewmax


# ----------------------------------------------------------------------------- forward

OUTPUTS = ("actuator_force", "act_dot", "qfrc_actuator", "qacc")


def _random_state(mjm, rng, nworld=NWORLD):
    ctrl = rng.uniform(-2.5, 2.5, size=(nworld, mjm.nu))
    return {"qpos": mjm.qpos0 + rng.uniform(-.6, .6, (nworld, mjm.nq)),
            "qvel": rng.normal(size=(nworld, mjm.nv)), "ctrl": ctrl,
            "act": rng.uniform(-1.5, 1.5, (nworld, mjm.na)),
            # world 0 at time 0: the PID's slew limit waits for time > 0
            "time": np.concatenate([[0.0], rng.uniform(0.1, 2.0, nworld - 1)])}


def _set(d, state):
    for key, value in state.items():
        arr = getattr(d, key)
        full = np.zeros(arr.shape, dtype=arr.to_numpy().dtype)
        full[tuple(slice(0, n) for n in value.shape)] = value
        arr.from_numpy(full)


def _poison(d, names):
    for name in names:
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape, np.nan, dtype=arr.to_numpy().dtype))


def _check_forward(name, m, mjm, state):
    """forward on NaN-poisoned outputs of every world, against mj_forward per world."""
    d = tiphys.make_data(m, NWORLD)
    _set(d, state)
    _poison(d, OUTPUTS)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        for key, value in state.items():
            if key == "time":
                md.time = value[w]
            else:
                getattr(md, key)[:] = value[w]
        mujoco.mj_forward(mjm, md)
        for out in OUTPUTS:
            ours, theirs = d.numpy(out)[w], np.asarray(getattr(md, out))
            assert np.isfinite(ours).all(), (name, out)
            scale = max(1.0, float(np.abs(theirs).max()))
            assert np.abs(ours - theirs).max() <= TOL * scale, (name, out, w, ours, theirs)


def test_forward_matches_mujoco_on_random_states(pair):
    name, m, mjm = pair
    _check_forward(name, m, mjm, _random_state(mjm, np.random.default_rng(len(name))))


# -------------------------------------------------------------------------- trajectory

INTEGRATORS = {"Euler": 0, "RK4": 1, "implicit": 2, "implicitfast": 3}
NSTEP = 200


def _ctrl(t, nworld, nu):
    k = np.arange(1, nu + 1)[None, :]
    w = np.arange(nworld)[:, None]
    return 1.8 * np.sin(0.04 * t * k + w) + 0.3 * np.cos(0.11 * t + k * w)


def _trajectories(xml, integrator, nworld=2, nstep=NSTEP):
    """(tiphys, MuJoCo) arrays of qpos, qvel, act, actuator_force after each step."""
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m.opt.integrator = INTEGRATORS[integrator]
    mjm.opt.integrator = INTEGRATORS[integrator]
    rng = np.random.default_rng(7)
    qpos0 = mjm.qpos0 + rng.uniform(-.3, .3, (nworld, mjm.nq))
    d = tiphys.make_data(m, nworld)
    _set(d, {"qpos": qpos0})
    mds = [mujoco.MjData(mjm) for _ in range(nworld)]
    for w, md in enumerate(mds):
        md.qpos[:] = qpos0[w]
    fields = ("qpos", "qvel", "act", "actuator_force")
    ours = {f: [] for f in fields}
    theirs = {f: [] for f in fields}
    for t in range(nstep):
        ctrl = _ctrl(t, nworld, mjm.nu)
        _set(d, {"ctrl": ctrl})
        tiphys.step(m, d)
        for f in fields:
            ours[f].append(d.numpy(f))
        for w, md in enumerate(mds):
            md.ctrl[:] = ctrl[w]
            mujoco.mj_step(mjm, md)
        for f in fields:
            theirs[f].append(np.array([np.asarray(getattr(md, f)).copy() for md in mds]))
    return ({f: np.array(v) for f, v in ours.items()},
            {f: np.array(v) for f, v in theirs.items()})


@pytest.mark.parametrize("integrator", sorted(INTEGRATORS))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_trajectory_matches_mujoco(model, integrator):
    ours, theirs = _trajectories(MODELS[model], integrator)
    for f in ours:
        scale = max(1.0, float(np.abs(theirs[f]).max()))
        err = float(np.abs(ours[f] - theirs[f]).max()) / scale
        assert err <= TOL, (model, integrator, f, err)


def test_slew_limit_and_integral_clamp_are_active():
    """The limits bind and still match: the previous control moves by slewmax * h at
    some steps, and the integral sits at +-imax / ki."""
    xml = MODELS["shared"].replace('<config key="imax" value="2"/>',
                                   '<config key="imax" value=".4"/>')
    ours, theirs = _trajectories(xml, "Euler", nstep=120)
    for f in ours:
        np.testing.assert_allclose(ours[f], theirs[f], rtol=0, atol=TOL, err_msg=f)
    act = ours["act"]  # (nstep, nworld, na): per PID actuator integral, previous ctrl
    assert np.isclose(np.abs(act[:, :, [0, 2]]).max(), .4 / 4)
    steps = np.abs(np.diff(act[:, :, [1, 3]], axis=0))
    assert np.isclose(steps.max(), 5 * 0.005)


# ------------------------------------------------------------------------------- state

def test_state_vectors_carry_plugin_state():
    m = tiphys.load_model_from_string(MODELS["shared"])
    d = tiphys.make_data(m, 2)
    assert tiphys.state_size(m, tiphys.State.PLUGIN) == 0  # the PID keeps its state in act
    mjm = mujoco.MjModel.from_xml_string(MODELS["shared"])
    for spec in (tiphys.State.FULLPHYSICS, tiphys.State.PLUGIN | tiphys.State.ACT):
        assert tiphys.state_size(m, spec) == mujoco.mj_stateSize(mjm, int(spec))
    m2, _ = _motor_models()
    d2 = tiphys.make_data(m2, 3)
    assert tiphys.state_size(m2, tiphys.State.PLUGIN) == 2
    full = tiphys.get_state(m2, d2, tiphys.State.FULLPHYSICS)
    np.testing.assert_array_equal(full[:, -2:], [[-1.0, -1.0]] * 3)  # reset hook's e0
    vec = np.arange(6.0).reshape(3, 2)
    tiphys.set_state(m2, d2, vec, tiphys.State.PLUGIN)
    np.testing.assert_array_equal(tiphys.get_state(m2, d2, tiphys.State.PLUGIN), vec)
    np.testing.assert_array_equal(d2.numpy("plugin_state"), vec)
    tiphys.reset_data(m2, d2, world=1)
    np.testing.assert_array_equal(d2.numpy("plugin_state"), [[0, 1], [-1, -1], [4, 5]])



# ------------------------------------------------------------------------- user plugin

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "demos"))
import dcmotor_plugin  # noqa: E402  (demos/: the user-plugin example, registered on import)
from dcmotor_plugin import DCMotor  # noqa: E402


MOTOR = """<mujoco>%s
  <extension><plugin plugin="demo.dcmotor">
    <instance name="m1"><config key="kt" value=".8"/><config key="r" value="2"/>
      <config key="l" value=".05"/><config key="e0" value="-1"/></instance>
  </plugin></extension>
  <actuator>
    <plugin joint="hinge" instance="m1" actdim="1"/>
    <motor joint="slide"/>
    <plugin joint="hinge2" plugin="demo.dcmotor" actdim="1">
      <config key="kt" value=".3"/><config key="r" value="1"/><config key="l" value=".02"/>
      <config key="e0" value="-1"/>
    </plugin>
  </actuator>
</mujoco>""" % BODY

# the same motors in MuJoCo: dyntype user through mjcb_act_dyn, gain kt
MOTOR_MJ = """<mujoco>%s
  <actuator>
    <general joint="hinge" dyntype="user" gainprm=".8"/>
    <motor joint="slide"/>
    <general joint="hinge2" dyntype="user" gainprm=".3"/>
  </actuator>
</mujoco>""" % BODY
MOTOR_PRM = {0: (.8, 2.0, .05), 2: (.3, 1.0, .02)}


def _motor_models():
    return tiphys.load_model_from_string(MOTOR), mujoco.MjModel.from_xml_string(MOTOR_MJ)


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_registered_user_plugin_compiles_and_steps_like_a_callback(integrator):
    assert registry.find_plugin("demo.dcmotor")[1] is DCMotor
    m, mjm = _motor_models()
    assert m.nplugin == 2 and m.npluginstate == 2 and m.na == 2
    assert list(m.arrays.actuator_plugin) == [0, -1, 1]
    m.opt.integrator = mjm.opt.integrator = INTEGRATORS[integrator]

    def act_dyn(mjm_, md_, i):
        kt, r, inductance = MOTOR_PRM[i]
        return (md_.ctrl[i] - r * md_.act[mjm_.actuator_actadr[i]] -
                kt * md_.actuator_velocity[i]) / inductance

    nworld = 2
    d = tiphys.make_data(m, nworld)
    mds = [mujoco.MjData(mjm) for _ in range(nworld)]
    heat = np.full((nworld, 2), -1.0)
    mujoco.set_mjcb_act_dyn(act_dyn)
    try:
        for t in range(100):
            ctrl = _ctrl(t, nworld, 3)
            _set(d, {"ctrl": ctrl})
            tiphys.step(m, d)
            for w, md in enumerate(mds):
                md.ctrl[:] = ctrl[w]
                mujoco.mj_step(mjm, md)
                for k, actid in enumerate((0, 2)):
                    i = md.act[mjm.actuator_actadr[actid]]
                    heat[w, k] += mjm.opt.timestep * MOTOR_PRM[actid][1] * i * i
    finally:
        mujoco.set_mjcb_act_dyn(None)
    for f in ("qpos", "qvel", "act", "actuator_force"):
        theirs = np.array([getattr(md, f) for md in mds])
        np.testing.assert_allclose(d.numpy(f), theirs, rtol=0, atol=1e-10, err_msg=f)
    np.testing.assert_allclose(d.numpy("plugin_state"), heat, rtol=1e-12, atol=1e-12)


def test_autoreset_restores_the_plugin_state_the_reset_hooks_left():
    """A world reset by autoreset (a NaN velocity: mj_checkVel then mj_resetData) gets
    its plugin_state back as the plugins' reset hooks left it (e0 = -1), MuJoCo's
    mj_resetData calling them again; the other worlds keep theirs, and a world reset
    alone by reset_data keeps its new reset state for later autoresets."""
    m, _ = _motor_models()
    d = tiphys.make_data(m, 3)
    for t in range(20):
        _set(d, {"ctrl": _ctrl(t, 3, 3)})
        tiphys.step(m, d)
    before = d.numpy("plugin_state")
    assert (before > -0.999).all()  # heat was added in every world
    qvel = d.numpy("qvel")
    qvel[1, 0] = np.nan
    _set(d, {"qvel": qvel})
    tiphys.step(m, d)
    after = d.numpy("plugin_state")
    assert d.numpy("warning_number")[1][mujoco.mjtWarning.mjWARN_BADQVEL] == 1
    assert (after[[0, 2]] > before[[0, 2]]).all()  # stepped on
    # world 1: reset to e0 = -1, then one step of heat from the reset state
    assert np.all(after[1] >= -1.0) and np.all(after[1] < before[1])
    tiphys.reset_data(m, d, world=2)
    tiphys.set_state(m, d, np.full((3, 2), 7.0), tiphys.State.PLUGIN)
    qvel = d.numpy("qvel")
    qvel[2, 0] = np.inf
    _set(d, {"qvel": qvel})
    _set(d, {"ctrl": np.zeros((3, 3))})
    tiphys.step(m, d)
    np.testing.assert_array_equal(d.numpy("plugin_state")[2], [-1.0, -1.0])  # zero ctrl,
    # act reset to 0: no heat in the step after the reset


def test_dcmotor_demo_steps_both_arms():
    """demos/dcmotor_plugin.py: the plugin arm and its built-in twin both step."""
    out = dcmotor_plugin.main(["--nworld", "4", "--steps", "20"])
    assert len(out) == 2 and all(rate > 0 for rate, _ms in out.values())


def test_register_plugin_checks_the_class():
    with pytest.raises(TypeError):
        registry.register_plugin(object)

    class Nameless(registry.Plugin):
        capabilities = registry.ACTUATOR
    with pytest.raises(ValueError, match="no name"):
        registry.register_plugin(Nameless)

    class Taken(registry.Plugin):
        name = "mujoco.pid"
        capabilities = registry.ACTUATOR
    with pytest.raises(ValueError, match="already registered"):
        registry.register_plugin(Taken)
    assert registry.register_plugin(DCMotor) is DCMotor  # again: nothing happens


def test_user_plugin_with_unimplemented_capability_is_refused():
    class Probe(registry.Plugin):
        name = "tests.probe_sdf"
        capabilities = registry.SDF | registry.ACTUATOR
    registry.register_plugin(Probe)
    xml = MOTOR.replace("demo.dcmotor", "tests.probe_sdf").replace(
        '<config key="kt" value=".3"/>', "")
    with pytest.raises(NotImplementedError,
                       match=r"plugin 'tests.probe_sdf' \(SDF plugin\) is not "
                             r"supported yet"):
        compile_spec(tiphys.parse_xml(xml))


def test_user_plugin_check_message_is_a_model_error():
    xml = MOTOR.replace('<config key="l" value=".05"/>', '<config key="l" value="0"/>')
    with pytest.raises(tiphys.ModelError, match="inductance l must be positive") as info:
        tiphys.load_model_from_string(xml)
    assert info.value.line is not None


# --------------------------------------------------------------------------- bad input

def _pid(instance_config, actuators, ext=True):
    ext_xml = ('<extension><plugin plugin="mujoco.pid">%s</plugin></extension>'
               % instance_config) if ext else ""
    return f"<mujoco>{BODY}\n  {ext_xml}\n  <actuator>{actuators}</actuator>\n</mujoco>"


BAD = {
    "unknown plugin": ('<mujoco><extension><plugin plugin="mujoco.nope"/></extension>'
                       '</mujoco>', "plugin mujoco.nope not found"),
    "unknown key": (_pid('<instance name="p"><config key="foo" value="1"/></instance>',
                         '<plugin joint="slide" instance="p"/>'),
                    "unrecognized attribute 'plugin:foo' for plugin mujoco.pid'"),
    "unknown in-place key": (_pid('', '<plugin joint="slide" plugin="mujoco.pid">'
                                      '<config key="kq" value="1"/></plugin>'),
                             "unrecognized attribute 'plugin:kq' for plugin mujoco.pid'"),
    "negative imax": (_pid('<instance name="p"><config key="ki" value="2"/>'
                           '<config key="imax" value="-1"/></instance>',
                           '<plugin joint="slide" instance="p" actdim="1"/>'),
                      "negative imax"),
    "negative slewmax": (_pid('<instance name="p"><config key="slewmax" value="-1"/>'
                              '</instance>', '<plugin joint="slide" instance="p" actdim="1"/>'),
                         "slewmax must be non-negative"),
    "actdim mismatch": (_pid('<instance name="p"><config key="ki" value="2"/></instance>',
                             '<plugin joint="slide" instance="p"/>'),
                        'actuator 0 has actdim 0, expected 1. Add actdim="1" to the '
                        'actuator plugin element.'),
    "actdim without filter state": (
        _pid('', '<plugin joint="slide" plugin="mujoco.pid" dyntype="filter" actdim="1">'
                 '<config key="ki" value="2"/></plugin>'),
        'actuator 0 has actdim 1, expected 2.'),
    "missing instance": (_pid('', '<plugin joint="slide" instance="q"/>'),
                         "unrecognized name 'q' for plugin instance"),
    "not declared": (_pid('', '<plugin joint="slide" plugin="mujoco.pid"/>', ext=False),
                     "unrecognized plugin 'mujoco.pid'"),
    "neither": (_pid('', '<plugin joint="slide"/>'),
                "neither 'plugin' nor 'instance' is specified for actuator '', (id = 0)"),
    "duplicate key": (_pid('<instance name="p"><config key="kp" value="1"/>'
                           '<config key="kp" value="2"/></instance>',
                           '<plugin joint="slide" instance="p"/>'),
                      "duplicate config key: kp"),
    "unused instance": (_pid('<instance name="p"><config key="kp" value="1"/></instance>',
                             '<motor joint="slide"/>'),
                        "actuator not found for plugin instance 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_plugin_input_gives_mujocos_error(case):
    xml, message = BAD[case]
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_string(xml)
    assert message in str(theirs.value), str(theirs.value)
    with pytest.raises(tiphys.ModelError) as ours:
        tiphys.load_model_from_string(xml)
    assert message in str(ours.value), str(ours.value)
    assert ours.value.line is not None and ours.value.element is not None


def test_put_model_refuses_plugin_models_naming_them():
    with pytest.raises(NotImplementedError, match="nplugin=1"):
        tiphys.put_model(mujoco.MjModel.from_xml_string(MODELS["shared"]))


# -------------------------------------------------------------------------------- f32

F32_SCRIPT = """
import json, sys
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
xml = sys.stdin.read()
m = tiphys.load_model_from_string(xml)
mjm = mujoco.MjModel.from_xml_string(xml)
d = tiphys.make_data(m, 2)
mds = [mujoco.MjData(mjm) for _ in range(2)]
worst = 0.0
for t in range(50):
    ctrl = np.stack([np.sin(0.05 * t * np.arange(1, mjm.nu + 1) + w) for w in range(2)])
    d.ctrl.from_numpy(ctrl.astype(np.float32))
    tiphys.step(m, d)
    for w, md in enumerate(mds):
        md.ctrl[:] = ctrl[w]
        mujoco.mj_step(mjm, md)
for f in ("qpos", "qvel", "act", "actuator_force"):
    theirs = np.array([getattr(md, f) for md in mds])
    worst = max(worst, float(np.abs(d.numpy(f) - theirs).max() / max(1, np.abs(theirs).max())))
print(json.dumps(worst))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs())
def test_pid_runs_in_f32(arch):
    """f32 on the CPU, and on Vulkan (SPIR-V: Metal's path) where a device exists."""
    res = subproc.run(["-c", F32_SCRIPT, arch], key=f"{arch}-f32", input=MODELS["shared"])
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert worst < 1e-3, worst


def test_get_config_reads_an_instances_attribute():
    m = tiphys.load_model_from_string(MODELS["noki"])
    assert registry.get_config(m, 0, "slewmax") == "2"
    assert registry.get_config(m, 1, "imax") == ""
    assert registry.get_config(m, 1, "nope") is None
    with pytest.raises(IndexError):
        registry.get_config(m, 2, "kp")


def test_entry_point_plugins_are_discovered(monkeypatch):
    import importlib.metadata

    class Discovered(registry.Plugin):
        name = "tests.discovered"
        capabilities = registry.ACTUATOR

    class EntryPoint:
        def load(self):
            return [Discovered]

    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [EntryPoint()] if group == "tiphys.plugins" else [])
    assert "tests.discovered" in registry.load_entry_points()
    assert registry.find_plugin("tests.discovered")[1] is Discovered


def test_saved_plugin_model_steps_as_the_original(tmp_path):
    m = tiphys.load_model_from_string(MOTOR)
    path = str(tmp_path / "motor.npz")
    tiphys.save_model(m, path)
    m2 = tiphys.load_model(path)
    assert [registry.plugin_at(int(s)).name for s in m2.arrays.plugin] == ["demo.dcmotor"] * 2
    outs = []
    for model in (m, m2):
        d = tiphys.make_data(model, 2)
        for t in range(20):
            _set(d, {"ctrl": _ctrl(t, 2, 3)})
            tiphys.step(model, d)
        outs.append((d.numpy("qpos"), d.numpy("act"), d.numpy("plugin_state")))
    for ours, theirs in zip(*outs):
        np.testing.assert_array_equal(ours, theirs)


def test_transition_fd_matches_mujoco_with_pid():
    from tiphys import derivative
    xml = MODELS["shared"]
    m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    state = _random_state(mjm, np.random.default_rng(3), 2)
    state["time"] = np.array([0.0, 0.7])  # the slew limit off and on
    d = tiphys.make_data(m, 2)
    _set(d, state)
    out = derivative.transition_fd(m, d, 1e-6, False)
    ndx = 2 * mjm.nv + mjm.na
    for w in range(2):
        md = mujoco.MjData(mjm)
        for key, value in state.items():
            if key == "time":
                md.time = value[w]
            else:
                getattr(md, key)[:] = value[w]
        A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
        mujoco.mjd_transitionFD(mjm, md, 1e-6, 0, A, B, None, None)
        for ours, theirs in ((out.A[w], A), (out.B[w], B)):
            assert np.abs(theirs).max() > 0
            assert np.abs(ours - theirs).max() <= 1e-6 * max(1.0, np.abs(theirs).max())


def test_extension_instances_come_first_wherever_the_section_is():
    """MuJoCo's reader takes <extension> before the model's elements: its instances
    are numbered before the in-place ones even when the section comes last."""
    xml = f"""<mujoco>{BODY}
  <actuator>
    <plugin joint="slide" plugin="mujoco.pid"><config key="kp" value="3"/></plugin>
    <plugin joint="hinge" instance="p" actdim="1"/>
  </actuator>
  <extension><plugin plugin="mujoco.pid">
    <instance name="p"><config key="ki" value="1"/></instance></plugin></extension>
</mujoco>"""
    m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    assert list(m.arrays.actuator_plugin) == list(mjm.actuator_plugin) == [1, 0]
    np.testing.assert_array_equal(m.arrays.plugin_attr, mjm.plugin_attr.astype(np.uint8))


def test_every_actuator_attribute_of_a_plugin_actuator_compiles_like_mujoco():
    xml = """<mujoco>
  <size nuser_actuator="2"/>
  <worldbody>
    <site name="base" pos="0 0 .2" zaxis="1 0 0"/>
    <body name="b"><joint name="ball" type="ball"/><geom size=".1" mass="1"/>
      <site name="crank" pos=".1 0 0"/>
      <body pos="0 0 -.3"><joint name="h" axis="0 1 0"/><geom size=".05" mass=".3"/></body>
    </body>
  </worldbody>
  <extension><plugin plugin="mujoco.pid"><instance name="p">
    <config key="kp" value="3"/><config key="ki" value=".5"/></instance></plugin></extension>
  <actuator>
    <plugin name="a0" jointinparent="ball" instance="p" actdim="1" gear="0 1 0 0 0 0"
            ctrllimited="true" ctrlrange="-1 1" forcelimited="true" forcerange="-3 3"
            group="2" user="1 2"/>
    <plugin name="a1" cranksite="crank" slidersite="base" cranklength=".25" instance="p"
            actdim="2" dyntype="integrator" actlimited="true" actrange="-.5 .5"
            lengthrange="-1 1" actearly="true"/>
    <plugin name="a2" joint="h" plugin="mujoco.pid" dyntype="muscle" actdim="1"
            dynprm=".02 .05"><config key="kd" value=".1"/><config key="ki" value=".2"/>
    </plugin>
  </actuator>
</mujoco>"""
    m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    assert not compare_model(m.arrays, mjm, skip=("plugin",))
    state = _random_state(mjm, np.random.default_rng(5))
    state["qpos"][:, :4] /= np.linalg.norm(state["qpos"][:, :4], axis=1, keepdims=True)
    _check_forward("attributes", m, mjm, state)


def test_rollout_matches_mujoco_rollout_with_pid():
    from mujoco import rollout as mj_rollout
    xml = MODELS["dyn"]
    m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    nworld, nstep = 2, 60
    full = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
    md = mujoco.MjData(mjm)
    state0 = []
    for w in range(nworld):
        md.qpos[:] = mjm.qpos0 + 0.2 * (w + 1)
        md.act[:] = 0.1 * w
        vec = np.zeros(mujoco.mj_stateSize(mjm, full))
        mujoco.mj_getState(mjm, md, vec, full)
        state0.append(vec)
    state0 = np.array(state0)
    control = np.stack([_ctrl(t, nworld, mjm.nu) for t in range(nstep)], axis=1)
    theirs, _ = mj_rollout.rollout(mjm, mujoco.MjData(mjm), state0, control)
    ours, _ = tiphys.rollout(m, tiphys.make_data(m, nworld), state0, control)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL * max(1, np.abs(theirs).max()))


def test_make_data_runs_the_plugins_init_checks():
    """mujoco.MjData runs plugin->init (FatalError "mj_initPlugin: plugin->init failed
    for plugin id 0" after mjModel.plugin_attr was edited to ki=2); make_data too."""
    m = tiphys.load_model_from_string(MODELS["inplace"])
    m.plugins[0].instances[0].config["ki"] = "2"
    with pytest.raises(ValueError, match=r"make_data: mj_initPlugin: plugin->init failed for "
                                         r"plugin id 0: actuator 0 has actdim 0, expected 1"):
        tiphys.make_data(m)


def test_actuator_plugin_without_compute_is_refused():
    class NoCompute(registry.Plugin):
        name = "tests.nocompute"
        capabilities = registry.ACTUATOR
        attributes = DCMotor.attributes
        actuator_actdim = DCMotor.actuator_actdim
    registry.register_plugin(NoCompute)
    xml = MOTOR.replace("demo.dcmotor", "tests.nocompute")
    with pytest.raises(TypeError, match="needs a compute hook"):
        tiphys.load_model_from_string(xml)
