"""Sensor plugins (tiphys.plugin's SENSOR capability) and mujoco.sensor.touch_grid against
MuJoCo 3.4.0 with its bundled plugin library (libsensor, loaded by the mujoco package):
compiled fields field by field, sensordata after forward on random contact states in
several worlds (outputs poisoned with NaN), 100-step trajectories (a pad carrying a box,
a ball and a capsule, both friction cones; MuJoCo's own model/plugin/sensor/touch_grid.xml
on its height field), the config errors with MuJoCo's messages, state vectors, reset and
transition_fd with a sensor plugin, the stages of user sensor plugins, and f32.

MjModel.plugin holds MuJoCo's global registry slot, tiphys's Model.plugin its own
registry's: that field is compared by plugin name. f64 on the CPU unless said.
"""
import base64
import json

import mujoco
import numpy as np
import pytest
import taichi as ti

import spirv
import subproc
import tiphys
from tiphys import plugin as registry
from oracle import compare_model

NWORLD = 3
TOL = 1e-10

PAD = """<mujoco>
  <option timestep="0.004" cone="{cone}"/>
  <extension><plugin plugin="mujoco.sensor.touch_grid">
    <instance name="shared"><config key="nchannel" value="6"/><config key="size" value="5 3"/>
      <config key="fov" value="170 80"/><config key="gamma" value=".4"/></instance>
  </plugin></extension>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="pad" pos="0 0 .05">
      <joint name="lift" type="slide" axis="0 0 1" damping="5"/>
      <joint name="tilt" axis="1 0 0" damping="2" stiffness="20"/>
      <geom type="box" size=".3 .3 .05" mass="2"/>
      <site name="up" pos="0 0 -.02" zaxis="0 0 -1"/>
      <site name="side" pos=".25 0 .05" zaxis="-1 0 .3"/>
      <body name="plate" pos="0 0 .05">
        <geom type="box" size=".15 .15 .01" pos="0 0 .01" mass=".2"/>
      </body>
    </body>
    <body name="box" pos=".1 .05 .3">
      <freejoint/><geom type="box" size=".05 .04 .03" mass=".3"/>
    </body>
    <body name="ball" pos="-.12 -.08 .35">
      <freejoint/><geom size=".04" condim="6" mass=".2"/>
    </body>
    <body name="cap" pos="0 .18 .4" euler="0 90 20">
      <freejoint/><geom type="capsule" size=".02 .06" condim="4" mass=".2"/>
    </body>
    <body name="flat" pos=".2 -.15 .3">
      <freejoint/><geom type="{flat}" size=".03 .02" condim="1" mass=".1"/>
    </body>
  </worldbody>
  <actuator><motor joint="lift" gear="10"/></actuator>
  <sensor>
    <plugin name="grid_up" instance="shared" objtype="site" objname="up"/>
    <touch site="up"/>
    <plugin name="grid_side" plugin="mujoco.sensor.touch_grid" objtype="site" objname="side"
            cutoff="1.5">
      <config key="size" value="9 5"/><config key="fov" value="180 90"/>
      <config key="nchannel" value="3"/>
    </plugin>
    <plugin name="grid_shared" instance="shared" objtype="site" objname="side"/>
    <plugin name="grid_fine" plugin="mujoco.sensor.touch_grid" objtype="site" objname="up"
            reftype="xbody" refname="box" user="1 2 3">
      <config key="size" value="24 16"/><config key="fov" value="150 75"/>
      <config key="gamma" value="1"/>
    </plugin>
  </sensor>
</mujoco>"""

# MuJoCo 3.4.0's own example, model/plugin/sensor/touch_grid.xml (Apache-2.0), with its
# height field a.png (below, base64): an ellipsoid with a touch grid on a bumpy floor
TOUCH_GRID_XML = """<mujoco model="touchtest">
  <compiler autolimits="true"/>

  <extension>
    <plugin plugin="mujoco.sensor.touch_grid"/>
  </extension>

  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1=".1 .2 .3" rgb2=".2 .3 .4" width="300" height="300" mark="edge" markrgb=".2 .3 .4"/>
    <material name="grid" texture="grid" texrepeat="3 1" texuniform="true"/>
    <hfield file="a.png" size="0.2 0.2 0.02 0.015"/>
  </asset>

  <visual>
      <headlight ambient=".7 .7 .7" diffuse=".2 .2 .2" specular="0.1 0.1 0.1"/>
      <map znear="0.01"/>
      <scale contactwidth=".02" contactheight=".5"/>
  </visual>

  <default>
    <geom friction="0.4" solimp="0 0.95 0.02"/>
  </default>

  <statistic center="0 0 1" extent="1" meansize=".1"/>

  <worldbody>
    <light pos="1 0 .3" dir="-1 0 -.3"/>
    <light pos="-1 0 .3" dir="1 0 -.3"/>
    <geom name="floor" pos="0 0 -0.01" type="plane" size="1 1 .01"/>

    <geom name="a" type="hfield" hfield="a" rgba=".5 .5 .7 1"/>

    <body name="ball" pos="0 0 1">
      <joint name="x" type="slide" axis="1 0 0" damping="1"/>
      <joint name="y" type="slide" axis="0 1 0" damping="1"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <joint name="rx" axis="1 0 0" springdamper="0.2 1"/>
      <joint name="ry" axis="0 1 0" springdamper="0.2 1"/>
      <geom type="ellipsoid" size=".3 .5 .1" mass="0.1" rgba=".5 .5 .5 .3"/>
      <site name="touch" pos="0 0 .1"/>
    </body>
  </worldbody>

  <sensor>
    <plugin name="touch" plugin="mujoco.sensor.touch_grid" objtype="site" objname="touch">
      <config key="size" value="7 7"/>
      <config key="fov" value="45 45"/>
      <config key="gamma" value="0"/>
      <config key="nchannel" value="3"/>
    </plugin>
  </sensor>
</mujoco>"""
A_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAA4AAAAQCAAAAAAD/xHmAAAAiklEQVQIHWNgIAispx8/sz5LEMor"
    "vAoGu4XBPP2rV1e42E+8erUCwm1fz8PAwLr26kGYZiYuJobqq1fYwRy1iRevXly/+8pVThBP6yLQ"
    "nCtXgASYO+nKRTMObvm5V69ygbhbrm4Dkrz7YbJXr2bru6y6egUiqw/SdvXCNqhiBv1Zp451KlZC"
    "FeMBAINgQCQzTX/VAAAAAElFTkSuQmCC")

MODELS = {"pad_pyramidal": (PAD.format(cone="pyramidal", flat="cylinder"), None),
          "pad_elliptic": (PAD.format(cone="elliptic", flat="cylinder"), None),
          "mujoco_touch_grid_xml": (TOUCH_GRID_XML, {"a.png": A_PNG})}
SENSOR_FIELDS = ("sensor_type", "sensor_datatype", "sensor_needstage", "sensor_objtype",
                 "sensor_objid", "sensor_reftype", "sensor_refid", "sensor_intprm",
                 "sensor_dim", "sensor_adr", "sensor_cutoff", "sensor_noise", "sensor_user",
                 "sensor_plugin")
PLUGIN_FIELDS = ("plugin_stateadr", "plugin_statenum", "plugin_attr", "plugin_attradr",
                 "actuator_plugin", "body_plugin", "geom_plugin")


def _models(name):
    xml, assets = MODELS[name]
    return (tiphys.load_model_from_string(xml, assets=assets),
            mujoco.MjModel.from_xml_string(xml, assets or {}))


@pytest.fixture(scope="module", params=sorted(MODELS))
def pair(request):
    return (request.param, *_models(request.param))


def _mujoco_plugin_names(mjm) -> list:
    """MuJoCo's plugin of each instance by name: every plugin here is the touch grid,
    whose MuJoCo slot is the one the touch-grid model's first instance has."""
    slot = int(mujoco.MjModel.from_xml_string(*MODELS["pad_pyramidal"][:1]).plugin[0])
    return ["mujoco.sensor.touch_grid" if int(s) == slot else f"slot {int(s)}"
            for s in mjm.plugin]


# ----------------------------------------------------------------------------- compile

def test_compiled_fields_match_mujoco(pair):
    name, m, mjm = pair
    a = m.arrays
    assert not compare_model(a, mjm, skip=("plugin",)), name
    for size in ("nplugin", "npluginattr", "npluginstate", "nsensor", "nsensordata"):
        assert getattr(m, size) == getattr(mjm, size), (name, size)
    for field in SENSOR_FIELDS + PLUGIN_FIELDS:
        ours = np.asarray(getattr(a, field)).reshape(-1)
        theirs = np.asarray(getattr(mjm, field)).reshape(-1)
        if field == "plugin_attr":
            theirs = theirs.astype(np.uint8)
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{name} {field}")
    assert [registry.plugin_at(int(s)).name for s in a.plugin] == _mujoco_plugin_names(mjm)
    assert [tiphys.id2name(m, "sensor", i) for i in range(m.nsensor)] == \
        [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_SENSOR, i) for i in range(mjm.nsensor)]


def test_instances_are_numbered_extension_then_actuators_then_sensors():
    """In-place instances in MuJoCo's reading order: <extension> first, then the
    actuator section's, then the sensor section's, wherever the sections are."""
    xml = """<mujoco>
  <sensor>
    <plugin plugin="mujoco.sensor.touch_grid" objtype="site" objname="s">
      <config key="size" value="2 2"/><config key="fov" value="30 30"/></plugin>
    <plugin instance="g" objtype="site" objname="s"/>
  </sensor>
  <worldbody><body><joint name="j"/><geom size=".1"/><site name="s"/></body></worldbody>
  <actuator><plugin joint="j" plugin="mujoco.pid"><config key="kp" value="2"/></plugin>
  </actuator>
  <extension><plugin plugin="mujoco.pid"/><plugin plugin="mujoco.sensor.touch_grid">
    <instance name="g"><config key="size" value="3 1"/><config key="fov" value="10 10"/>
    <config key="nchannel" value="2"/></instance></plugin></extension>
</mujoco>"""
    m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    assert list(m.arrays.sensor_plugin) == list(mjm.sensor_plugin) == [2, 0]
    assert list(m.arrays.actuator_plugin) == list(mjm.actuator_plugin) == [1]
    for field in ("sensor_dim", "sensor_adr", "plugin_attr", "plugin_attradr"):
        np.testing.assert_array_equal(np.asarray(getattr(m.arrays, field)).reshape(-1),
                                      np.asarray(getattr(mjm, field)).reshape(-1)
                                      .astype(np.asarray(getattr(m.arrays, field)).dtype))


# ----------------------------------------------------------------------------- forward

def _contact_states(mjm, nworld, seed):
    """States of MuJoCo's own runs (objects settled on the pad, or on the height field),
    a different time and control per world, with random velocities added."""
    rng = np.random.default_rng(seed)
    states = []
    for w in range(nworld):
        md = mujoco.MjData(mjm)
        nstep = 150 + 60 * w if mjm.nu else 350 + 60 * w
        for t in range(nstep):
            if mjm.nu:
                md.ctrl[:] = 0.6 * np.sin(0.02 * t + w)
            mujoco.mj_step(mjm, md)
        states.append({"qpos": md.qpos.copy(), "qvel": md.qvel + 0.05 * rng.normal(size=mjm.nv),
                       "ctrl": md.ctrl.copy(), "time": md.time})
    return {key: np.array([s[key] for s in states]) for key in states[0]}


def _set(d, state):
    for key, value in state.items():
        arr = getattr(d, key)
        value = np.asarray(value)
        full = np.zeros(arr.shape, dtype=arr.to_numpy().dtype)
        full[tuple(slice(0, n) for n in value.shape)] = value
        arr.from_numpy(full)


def _unwritten(m) -> np.ndarray:
    """sensordata entries MuJoCo's touch grid leaves as they were: those of every sensor
    of an instance but its first (TouchGrid::Compute writes the first one only)."""
    a = m.arrays
    mask = np.zeros(m.nsensordata, dtype=bool)
    seen = set()
    for sid in range(m.nsensor):
        inst = int(a.sensor_plugin[sid])
        if inst >= 0:
            if inst in seen:
                mask[a.sensor_adr[sid]:a.sensor_adr[sid] + a.sensor_dim[sid]] = True
            seen.add(inst)
    return mask


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_matches_mujoco_on_contact_states(name):
    m, mjm = _models(name)
    state = _contact_states(mjm, NWORLD, len(name))
    d = tiphys.make_data(m, NWORLD)
    _set(d, state)
    poisoned = ("sensordata", "cacc", "cfrc_int", "cfrc_ext")
    for field in poisoned:
        arr = getattr(d, field)
        host = arr.to_numpy()
        arr.from_numpy(np.full(host.shape, np.nan, dtype=host.dtype))
    tiphys.forward(m, d)
    unwritten = _unwritten(m)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:], md.qvel[:], md.ctrl[:] = state["qpos"][w], state["qvel"][w], state["ctrl"][w]
        md.time = state["time"][w]
        mujoco.mj_forward(mjm, md)
        ours = d.numpy("sensordata")[w]
        theirs = md.sensordata
        assert np.isnan(ours[unwritten]).all()  # left as they were, as MuJoCo leaves them
        ours, theirs = ours[~unwritten], theirs[~unwritten]
        assert np.isfinite(ours).all(), (name, w)
        assert np.count_nonzero(theirs) >= 3, (name, w)  # contacts in the grids
        scale = max(1.0, float(np.abs(theirs).max()))
        assert np.abs(ours - theirs).max() <= TOL * scale, (name, w, ours, theirs)
        for field in poisoned[1:]:  # mj_rnePostConstraint runs for the plugin, as MuJoCo
            theirs = getattr(md, field)
            ours = d.numpy(field)[w]
            scale = max(1.0, float(np.abs(theirs).max()))
            assert np.abs(ours - theirs).max() <= TOL * scale, (name, field, w)


def test_forward_writes_the_grids_as_mujoco_in_detail():
    """The pad's grids bin the contacts of the pad's whole weld (the plate on it): the
    6-channel grid's sign flip and channel order, the side grid clipped by its cutoff."""
    m, mjm = _models("pad_pyramidal")
    state = _contact_states(mjm, 1, 3)
    d = tiphys.make_data(m, 1)
    _set(d, state)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    md.qpos[:], md.qvel[:], md.ctrl[:] = state["qpos"][0], state["qvel"][0], state["ctrl"][0]
    mujoco.mj_forward(mjm, md)
    ours = d.numpy("sensordata")[0]
    for sid in range(m.nsensor):
        adr, dim = mjm.sensor_adr[sid], mjm.sensor_dim[sid]
        np.testing.assert_allclose(ours[adr:adr + dim], md.sensordata[adr:adr + dim],
                                   rtol=0, atol=TOL * max(1, np.abs(md.sensordata).max()),
                                   err_msg=mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_SENSOR,
                                                             sid))
    side = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, "grid_side")
    values = ours[mjm.sensor_adr[side]:mjm.sensor_adr[side] + mjm.sensor_dim[side]]
    assert np.isclose(np.abs(values).max(), 1.5)  # the cutoff binds
    up = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_SENSOR, "grid_up")
    normal = ours[mjm.sensor_adr[up]:mjm.sensor_adr[up] + 15]
    # the objects' weight, negative: the pad's id is below the objects' (MuJoCo's sign)
    assert normal.sum() < -0.5 * 9.81 * (0.3 + 0.2 + 0.2 + 0.1)


def test_inverse_computes_the_grids_as_mj_inverse():
    """mj_inverse runs the sensors too: the grids from the inverse constraint forces."""
    m, mjm = _models("pad_elliptic")
    state = _contact_states(mjm, 2, 21)
    md = mujoco.MjData(mjm)
    qacc = []
    for w in range(2):
        md.qpos[:], md.qvel[:], md.ctrl[:] = state["qpos"][w], state["qvel"][w], \
            state["ctrl"][w]
        mujoco.mj_forward(mjm, md)
        qacc.append(md.qacc + 0.1 * np.sin(np.arange(mjm.nv) + w))
    state["qacc"] = np.array(qacc)
    d = tiphys.make_data(m, 2)
    _set(d, state)
    tiphys.inverse(m, d)
    for w in range(2):
        md.qpos[:], md.qvel[:], md.ctrl[:] = state["qpos"][w], state["qvel"][w], \
            state["ctrl"][w]
        md.qacc[:] = state["qacc"][w]
        mujoco.mj_inverse(mjm, md)
        theirs = md.sensordata[~_unwritten(m)]
        ours = d.numpy("sensordata")[w][~_unwritten(m)]
        assert np.count_nonzero(theirs) >= 3
        assert np.abs(ours - theirs).max() <= TOL * max(1.0, np.abs(theirs).max()), w


# -------------------------------------------------------------------------- trajectory

NSTEP = 100


def _trajectories(name, nworld=2, nstep=NSTEP):
    """From MuJoCo's contact states (objects landed), both engines step on."""
    m, mjm = _models(name)
    state = _contact_states(mjm, nworld, 11)
    d = tiphys.make_data(m, nworld)
    _set(d, state)
    mds = [mujoco.MjData(mjm) for _ in range(nworld)]
    for w, md in enumerate(mds):
        md.qpos[:], md.qvel[:], md.time = state["qpos"][w], state["qvel"][w], state["time"][w]
    fields = ("qpos", "qvel", "sensordata")
    ours = {f: [] for f in fields}
    theirs = {f: [] for f in fields}
    for t in range(nstep):
        ctrl = np.array([[0.6 * np.sin(0.05 * t + w)] * mjm.nu for w in range(nworld)])
        if mjm.nu:
            _set(d, {"ctrl": ctrl})
        tiphys.step(m, d)
        for w, md in enumerate(mds):
            md.ctrl[:] = ctrl[w]
            mujoco.mj_step(mjm, md)
        for f in fields:
            ours[f].append(d.numpy(f))
            theirs[f].append(np.array([np.asarray(getattr(md, f)).copy() for md in mds]))
    return ({f: np.array(v) for f, v in ours.items()},
            {f: np.array(v) for f, v in theirs.items()})


@pytest.mark.parametrize("name", sorted(MODELS))
def test_trajectory_matches_mujoco(name):
    ours, theirs = _trajectories(name)
    assert np.count_nonzero(theirs["sensordata"][-1]) >= 3  # the grids see contacts
    for f in ours:
        scale = max(1.0, float(np.abs(theirs[f]).max()))
        err = float(np.abs(ours[f] - theirs[f]).max()) / scale
        assert err <= TOL, (name, f, err)


# --------------------------------------------------------------------------- bad input

def _tg(config, sensor_attrs='objtype="site" objname="s"', extension=True):
    ext = ('<extension><plugin plugin="mujoco.sensor.touch_grid"/></extension>'
           if extension else "")
    return f"""<mujoco>{ext}
  <worldbody><geom type="plane" size="1 1 .1"/>
    <body name="b" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/>
      <site name="s" pos="0 0 -.1" zaxis="0 0 1"/></body></worldbody>
  <sensor><plugin plugin="mujoco.sensor.touch_grid" {sensor_attrs}>{config}</plugin></sensor>
</mujoco>"""


SIZE_FOV = '<config key="size" value="7 7"/><config key="fov" value="45 45"/>'
BAD = {
    "negative size": (_tg('<config key="size" value="-7 -7"/><config key="fov" value="45 45"/>'),
                      "Horizontal and vertical resolutions must be positive"),
    "zero size": (_tg('<config key="size" value="0 7"/><config key="fov" value="45 45"/>'),
                  "Horizontal and vertical resolutions must be positive"),
    "two spaces in size": (_tg('<config key="size" value="7  7"/><config key="fov" '
                               'value="45 45"/>'),
                           "Both horizontal and vertical resolutions must be specified"),
    "fov zero": (_tg('<config key="size" value="7 7"/><config key="fov" value="0 45"/>'),
                 "`fov[0]` must be a float between (0, 180] degrees"),
    "fov too wide": (_tg('<config key="size" value="7 7"/><config key="fov" value="181 45"/>'),
                     "`fov[0]` must be a float between (0, 180] degrees"),
    "fov too tall": (_tg('<config key="size" value="7 7"/><config key="fov" value="45 91"/>'),
                     "`fov[1]` must be a float between (0, 90] degrees"),
    "no fov": (_tg('<config key="size" value="7 7"/>'),
               "Both horizontal and vertical fields of view must be specified"),
    "gamma": (_tg(SIZE_FOV + '<config key="gamma" value="1.5"/>'),
              "`gamma` must be a nonnegative float between [0, 1]"),
    "gamma not a number": (_tg(SIZE_FOV + '<config key="gamma" value="x"/>'),
                           "Invalid or missing parameters in touch_grid sensor plugin"),
    "nchannel": (_tg(SIZE_FOV + '<config key="nchannel" value="7"/>'),
                 "nchannel must be between 1 and 6"),
    # (a negative nchannel makes a negative dim first, as a negative size)
    "negative nchannel": (_tg(SIZE_FOV + '<config key="nchannel" value="-1"/>'),
                          "sensordata too large"),
    "not on a site": (_tg(SIZE_FOV, 'objtype="body" objname="b"'),
                      "Touch Grid sensor must be attached to a site"),
    "no object": (_tg(SIZE_FOV, ''), "Touch Grid sensor must be attached to a site"),
    "negative dim": (_tg('<config key="size" value="-7 7"/><config key="fov" value="45 45"/>'),
                     "sensordata too large"),
    "objtype without objname": (_tg(SIZE_FOV, 'objtype="site"'),
                                "objtype is specified but objname is not"),
    "refname without reftype": (_tg(SIZE_FOV, 'objtype="site" objname="s" refname="b"'),
                                "refname is specified but reftype is not"),
    "unknown object": (_tg(SIZE_FOV, 'objtype="site" objname="zz"'),
                       "unrecognized name 'zz' of sensorized object"),
    "negative cutoff": (_tg(SIZE_FOV, 'objtype="site" objname="s" cutoff="-1"'),
                        "negative cutoff in sensor"),
    "not declared": (_tg(SIZE_FOV, extension=False),
                     "unrecognized plugin 'mujoco.sensor.touch_grid'"),
    "unknown instance": (_tg("").replace('plugin="mujoco.sensor.touch_grid" objtype',
                                         'instance="nope" objtype'),
                         "unrecognized name 'nope' for plugin instance"),
    "neither": (_tg("").replace('plugin="mujoco.sensor.touch_grid" objtype', 'objtype'),
                "neither 'plugin' nor 'instance' is specified for sensor"),
    "actuator plugin on a sensor": (
        _tg('<config key="kp" value="1"/>').replace(
            'plugin="mujoco.sensor.touch_grid" objtype', 'plugin="mujoco.pid" objtype')
        .replace('<plugin plugin="mujoco.sensor.touch_grid"/>', '<plugin plugin="mujoco.pid"/>'),
        "plugin 'mujoco.pid' does not support sensors"),
    "unknown key": (_tg(SIZE_FOV + '<config key="sise" value="1"/>'),
                    "unrecognized attribute 'plugin:sise' for plugin mujoco.sensor.touch_grid'"),
    "noise": (_tg(SIZE_FOV, 'objtype="site" objname="s" noise="1"'), "noise"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_touch_grid_input_gives_mujocos_error(case):
    xml, message = BAD[case]
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_string(xml)
    assert message in str(theirs.value), str(theirs.value)
    with pytest.raises(tiphys.ModelError) as ours:
        tiphys.load_model_from_string(xml)
    assert message in str(ours.value), str(ours.value)
    assert ours.value.line is not None and ours.value.element is not None


@pytest.mark.parametrize("size", ["", "7"])
def test_missing_size_is_an_error_not_a_crash(size):
    """MuJoCo 3.4.0's nsensordata reads size[0] and size[1] before Create checks that
    there are two: with none it crashes, with one it reads past the list, so its error
    depends on what memory holds ("sensor_adr out of bounds" on one run, the size
    message on another). tiphys checks first and always gives the size message."""
    config = (f'<config key="size" value="{size}"/>' if size else '') + \
        '<config key="fov" value="45 45"/>'
    with pytest.raises(tiphys.ModelError,
                       match="Both horizontal and vertical resolutions must be specified"):
        tiphys.load_model_from_string(_tg(config))


def test_config_is_read_as_mujoco_reads_it():
    """strtod prefixes, a fractional nchannel truncated, 0 channels meaning 1, a
    trailing space: the same dims as MuJoCo, or the same error."""
    for config, ok in (('<config key="size" value="3.9 2"/><config key="fov" value="1e1 0x10"/>'
                        '<config key="nchannel" value="2.7"/>', True),
                       ('<config key="size" value="3 2 "/><config key="fov" value="10 10"/>'
                        '<config key="nchannel" value="0"/>', True),
                       ('<config key="size" value="3 2x"/><config key="fov" value="10 10"/>'
                        '<config key="gamma" value=" 0.5 "/>', True),
                       # checked without its spaces ("23"), read with them (2)
                       ('<config key="size" value="3 2"/><config key="fov" value="10 10"/>'
                        '<config key="nchannel" value="2 3"/>', True),
                       ('<config key="size" value="3 2"/><config key="fov" value="10 10"/>'
                        '<config key="nchannel" value="2x"/>', False)):
        xml = _tg(config)
        if not ok:
            with pytest.raises(ValueError, match="Invalid or missing parameters"):
                mujoco.MjModel.from_xml_string(xml)
            with pytest.raises(tiphys.ModelError, match="Invalid or missing parameters"):
                tiphys.load_model_from_string(xml)
            continue
        m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
        assert list(m.arrays.sensor_dim) == list(mjm.sensor_dim), config


# ------------------------------------------------------------------------------- state

def test_state_reset_and_transition_fd_with_a_sensor_plugin():
    from tiphys import derivative
    m, mjm = _models("pad_elliptic")
    assert m.npluginstate == mjm.npluginstate == 0
    for spec in (tiphys.State.FULLPHYSICS, tiphys.State.PLUGIN | tiphys.State.QPOS):
        assert tiphys.state_size(m, spec) == mujoco.mj_stateSize(mjm, int(spec))
    state = _contact_states(mjm, 2, 5)
    d = tiphys.make_data(m, 2)
    _set(d, state)
    # get_state / set_state round trip, then reset of one world
    full = tiphys.get_state(m, d, tiphys.State.FULLPHYSICS)
    d2 = tiphys.make_data(m, 2)
    tiphys.set_state(m, d2, full, tiphys.State.FULLPHYSICS)
    _set(d2, {"ctrl": state["ctrl"]})
    tiphys.forward(m, d)
    tiphys.forward(m, d2)
    np.testing.assert_array_equal(d.numpy("sensordata"), d2.numpy("sensordata"))
    assert np.count_nonzero(d2.numpy("sensordata")) > 0
    tiphys.reset_data(m, d2, world=1)
    assert not np.any(d2.numpy("sensordata")[1])  # mj_resetData zeroes sensordata
    np.testing.assert_array_equal(d2.numpy("sensordata")[0], d.numpy("sensordata")[0])
    md = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, md)
    tiphys.forward(m, d2)
    np.testing.assert_allclose(d2.numpy("sensordata")[1], md.sensordata, rtol=0, atol=TOL)
    # transition_fd's sensor derivatives C, D against mjd_transitionFD
    out = derivative.transition_fd(m, d, 1e-6, False)
    ndx = 2 * mjm.nv + mjm.na
    for w in range(2):
        md = mujoco.MjData(mjm)
        md.qpos[:], md.qvel[:], md.ctrl[:] = state["qpos"][w], state["qvel"][w], \
            state["ctrl"][w]
        md.time = state["time"][w]
        A, B = np.zeros((ndx, ndx)), np.zeros((ndx, mjm.nu))
        C, D = np.zeros((mjm.nsensordata, ndx)), np.zeros((mjm.nsensordata, mjm.nu))
        mujoco.mjd_transitionFD(mjm, md, 1e-6, 0, A, B, C, D)
        for ours, theirs in ((out.A[w], A), (out.B[w], B), (out.C[w], C), (out.D[w], D)):
            assert np.abs(theirs).max() > 0
            assert np.abs(ours - theirs).max() <= 1e-5 * max(1.0, np.abs(theirs).max())


def test_saved_touch_grid_model_computes_as_the_original(tmp_path):
    m, mjm = _models("pad_pyramidal")
    path = str(tmp_path / "pad.npz")
    tiphys.save_model(m, path)
    m2 = tiphys.load_model(path)
    assert [inst.sensors for inst in m2.plugins[0].instances] == [[0, 3], [2], [4]]
    state = _contact_states(mjm, 2, 9)
    outs = []
    for model in (m, m2):
        d = tiphys.make_data(model, 2)
        _set(d, state)
        tiphys.forward(model, d)
        outs.append(d.numpy("sensordata"))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.count_nonzero(outs[0]) > 0


# ------------------------------------------------------------------ user sensor plugins

ND = ti.types.ndarray()


@ti.kernel
def _copy_sensor(src: ND, col: ti.i32, adr: ti.i32, sensordata: ND):
    for worldid in range(sensordata.shape[0]):
        sensordata[worldid, adr] = src[worldid, col]


def _copier(stage: int, field: str):
    """A sensor plugin of needstage ``stage`` whose sensor is ``field``[:, 0] (its value
    when the stage's sensors run)."""

    class Copier(registry.Plugin):
        name = f"tests.copy_{field}_{stage}"
        capabilities = registry.SENSOR
        needstage = stage

        @classmethod
        def nsensordata(cls, instance, sensor):
            return 1

        def compute_sensor(self, m, d):
            for inst in self.instances:
                for sid in inst.sensors:
                    registry.launch(_copy_sensor, m, d, src=getattr(d, field), col=0,
                                    adr=int(m.arrays.sensor_adr[sid]))

    Copier.__name__ = f"Copy_{field}_{stage}"
    return registry.register_plugin(Copier)


def test_user_sensor_plugins_run_at_their_stage_and_are_clipped():
    """A plugin's sensors are computed at the end of its needstage (none: with the
    position sensors) and clipped by their cutoff like the built-in ones: copies of
    qpos (none, pos), qvel (vel) and qacc (acc) against jointpos/jointvel and qacc."""
    plugins = [_copier(0, "qpos"), _copier(1, "qpos"), _copier(2, "qvel"), _copier(3, "qacc")]
    ext = "".join(f'<plugin plugin="{p.name}"/>' for p in plugins)
    sensors = "".join(f'<plugin plugin="{p.name}" cutoff="{c}"/>'
                      for p, c in zip(plugins, ("0", ".05", ".3", "0")))
    xml = f"""<mujoco><extension>{ext}</extension>
  <worldbody><body><joint name="j" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0"
    size=".03" mass="1"/></body></worldbody>
  <sensor>{sensors}<jointpos joint="j"/><jointvel joint="j"/></sensor>
</mujoco>"""
    m = tiphys.load_model_from_string(xml)
    assert list(m.arrays.sensor_needstage) == [0, 1, 2, 3, 1, 2]
    d = tiphys.make_data(m, 2)
    _set(d, {"qpos": np.array([[0.4], [-0.02]]), "qvel": np.array([[-1.0], [0.1]])})
    tiphys.forward(m, d)
    s = d.numpy("sensordata")
    qpos, qvel, qacc = d.numpy("qpos")[:, 0], d.numpy("qvel")[:, 0], d.numpy("qacc")[:, 0]
    np.testing.assert_array_equal(s[:, 0], qpos)  # needstage none: no cutoff, as MuJoCo
    np.testing.assert_array_equal(s[:, 1], np.clip(qpos, -.05, .05))
    np.testing.assert_array_equal(s[:, 2], np.clip(qvel, -.3, .3))
    np.testing.assert_array_equal(s[:, 3], qacc)
    np.testing.assert_array_equal(s[:, 4], qpos)
    np.testing.assert_array_equal(s[:, 5], qvel)
    assert np.all(qacc != 0)


def test_sensor_plugin_without_compute_sensor_is_refused():
    class NoCompute(registry.Plugin):
        name = "tests.sensor_nocompute"
        capabilities = registry.SENSOR

        @classmethod
        def nsensordata(cls, instance, sensor):
            return 1
    registry.register_plugin(NoCompute)
    xml = """<mujoco><extension><plugin plugin="tests.sensor_nocompute"/></extension>
  <sensor><plugin plugin="tests.sensor_nocompute"/></sensor></mujoco>"""
    with pytest.raises(TypeError, match="needs a compute_sensor hook"):
        tiphys.load_model_from_string(xml)


# -------------------------------------------------------------------------------- f32

F32_SCRIPT = """
import json, sys
import mujoco, numpy as np, tiphys
from tiphys.kernels.sensor import plugin_sensors
tiphys.init(arch=sys.argv[-1], precision="f32")
xml = sys.stdin.read()
m = tiphys.load_model_from_string(xml)
mjm = mujoco.MjModel.from_xml_string(xml)
nworld = 2
mds = [mujoco.MjData(mjm) for _ in range(nworld)]
for w, md in enumerate(mds):
    for t in range(150 + 50 * w):
        md.ctrl[:] = 0.6 * np.sin(0.02 * t + w)
        mujoco.mj_step(mjm, md)
    mujoco.mj_forward(mjm, md)
d = tiphys.make_data(m, nworld, nconmax=64, njmax=256)
def put(name, values):
    arr = getattr(d, name)
    full = np.zeros(arr.to_numpy().shape, dtype=arr.to_numpy().dtype)
    for w, v in enumerate(values):
        v = np.asarray(v).reshape((-1,) + full.shape[2:]) if full.ndim > 2 else np.ravel(v)
        full[w, :len(v)] = v
    arr.from_numpy(full)
con = [md.contact[:md.ncon] for md in mds]
d.ncon.from_numpy(np.array([md.ncon for md in mds], dtype=np.int32))
put("site_xpos", [md.site_xpos for md in mds])
put("site_xmat", [md.site_xmat for md in mds])
put("contact_pos", [c.pos for c in con])
put("contact_frame", [c.frame for c in con])
put("contact_friction", [c.friction for c in con])
put("contact_dim", [c.dim for c in con])
put("contact_geom", [c.geom for c in con])
put("contact_efc_address", [c.efc_address for c in con])
put("efc_force", [md.efc_force for md in mds])
sd = d.sensordata.to_numpy()
d.sensordata.from_numpy(np.full(sd.shape, np.nan, dtype=sd.dtype))
plugin_sensors(m, d, 3)
ours = d.numpy("sensordata")
theirs = np.array([md.sensordata for md in mds])
grids = np.zeros(mjm.nsensordata, dtype=bool)
for sid in range(mjm.nsensor):
    if mjm.sensor_plugin[sid] >= 0 and mjm.sensor_plugin[sid] not in mjm.sensor_plugin[:sid]:
        grids[mjm.sensor_adr[sid]:mjm.sensor_adr[sid] + mjm.sensor_dim[sid]] = True
print(json.dumps([float(np.abs(ours[:, grids] - theirs[:, grids]).max()),
                  float(np.abs(theirs[:, grids]).max()), int(np.count_nonzero(theirs[:, grids])),
                  int(np.isnan(ours[:, grids]).sum())]))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs())
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_touch_grid_runs_in_f32(arch, cone):
    """f32 on the CPU, and on Vulkan (SPIR-V: Metal's path) where a device exists: the
    sensor plugins' stage end (kernels/sensor.py's plugin_sensors: the touch grids and
    their cutoff) on MuJoCo's contacts, contact forces and site frames in two worlds
    (upstream results from MuJoCo: a cheap compile on lavapipe, tests/spirv.py)."""
    res = subproc.run(["-c", F32_SCRIPT, arch], key=f"{arch}-f32",
                      input=PAD.format(cone=cone, flat="cylinder"))
    assert res.returncode == 0, res.stderr[-3000:]
    err, scale, nonzero, nan = json.loads(res.stdout.strip().splitlines()[-1])
    assert nan == 0 and nonzero >= 6 and scale > 1, (nan, nonzero, scale)
    assert err < 1e-5 * scale, (err, scale)
