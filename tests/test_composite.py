"""<composite> against MuJoCo 3.4.0: cables compiled field by field (bodies, joints,
geoms, sites, names, excludes, texts and the cable plugin's fields), the types 3.4.0
no longer builds refused with its messages, and bad input with its messages.

MjModel.plugin holds MuJoCo's global registry slot, tiphys's Model.plugin its own: that
field is compared by plugin name (tests/test_plugin.py does the same).
"""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys import plugin as registry
from tiphys.errors import ModelError
from oracle import compare_model

OBJECTS = ("body", "joint", "geom", "site", "text", "exclude", "plugin", "equality",
           "actuator")
_MJOBJ = {"body": mujoco.mjtObj.mjOBJ_BODY, "joint": mujoco.mjtObj.mjOBJ_JOINT,
          "geom": mujoco.mjtObj.mjOBJ_GEOM, "site": mujoco.mjtObj.mjOBJ_SITE,
          "text": mujoco.mjtObj.mjOBJ_TEXT, "exclude": mujoco.mjtObj.mjOBJ_EXCLUDE,
          "plugin": mujoco.mjtObj.mjOBJ_PLUGIN, "equality": mujoco.mjtObj.mjOBJ_EQUALITY,
          "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR}
_NUMBER = {"body": "nbody", "joint": "njnt", "geom": "ngeom", "site": "nsite",
           "text": "ntext", "exclude": "nexclude", "plugin": "nplugin",
           "equality": "neq", "actuator": "nu"}

EXT = '<extension><plugin plugin="mujoco.elasticity.cable"/></extension>'
CABLE_PLUGIN = """<plugin plugin="mujoco.elasticity.cable">
  <config key="twist" value="1e7"/><config key="bend" value="4e6"/>
  <config key="vmax" value="0.05"/></plugin>"""

MODELS = {
    # MuJoCo's model/plugin/elasticity/cable.xml (Apache-2.0), without its scene include
    "mujoco_cable_xml": f"""<mujoco model="Cable">{EXT}
  <statistic center="0 0 .3" extent="1"/>
  <compiler autolimits="true"/>
  <size memory="2M"/>
  <worldbody>
    <geom name="floor" size="0 0 .05" type="plane"/>
    <composite type="cable" curve="s" count="41 1 1" size="1" offset="-.3 0 .6"
               initial="none">
      {CABLE_PLUGIN}
      <joint kind="main" damping=".015"/>
      <geom type="capsule" size=".005" rgba=".8 .2 .1 1" condim="1"/>
    </composite>
    <body name="slider" pos=".7 0 .6">
      <joint type="slide" axis="1 0 0" damping=".1"/>
      <geom size=".01"/>
    </body>
  </worldbody>
  <equality>
    <connect name="right_boundary" body1="B_last" body2="slider" anchor=".025 0 0"/>
  </equality>
  <contact>
    <exclude body1="B_last" body2="slider"/>
  </contact>
  <actuator>
    <motor site="S_last" gear="0 0 0 1 0 0" ctrlrange="-.03 .03"/>
  </actuator>
</mujoco>""",
    # a curved free cable: every curve shape, a rotation, a prefix, default classes
    # that must not apply, joint attributes, a site child, a <skin> (ignored: capsule)
    "curved_free": f"""<mujoco>{EXT}
  <default><geom rgba="0 1 0 1" density="7"/><joint damping="3" group="1"/>
    <site size=".2"/></default>
  <worldbody>
    <composite prefix="c" type="cable" curve="s cos(s) sin(s)" count="9" size="1 .2 1.3"
               offset="0 .1 .5" initial="free" quat="1 0 .1 0">
      {CABLE_PLUGIN}
      <joint kind="main" damping=".01" armature=".001" stiffness=".2" frictionloss=".03"
             margin=".01" solreflimit=".03 1.1" solimplimit=".8 .9 .01"
             solreffriction=".04 1" solimpfriction=".7 .8 .02"/>
      <geom type="capsule" size=".01" density="500" friction=".5 .01 .001" priority="1"
            solref=".01 .5" solimp=".8 .9 .002" margin=".002" gap=".001" solmix="2"
            contype="2" conaffinity="3" group="2"/>
      <site size=".02" rgba="1 0 0 1" group="4"/>
      <skin rgba="0 0 1 1" inflate=".01"/>
    </composite>
  </worldbody>
</mujoco>""",
    # given vertices, cylinders, ball root, inside a <frame> in a moving body; a second
    # cable whose plugin is an <extension> instance; ball joints limited by range
    "vertex_frame_instance": """<mujoco>
  <compiler autolimits="true"/>
  <extension><plugin plugin="mujoco.elasticity.cable">
    <instance name="stiff"><config key="twist" value="5e5"/><config key="bend" value="2e5"/>
      <config key="flat" value="true"/></instance>
  </plugin></extension>
  <worldbody>
    <body name="base" pos="0 0 1">
      <joint type="hinge" axis="0 0 1"/>
      <geom size=".05"/>
      <frame pos=".1 0 0" euler="0 0 30">
        <composite prefix="v" type="cable" vertex="0 0 0  .1 0 .02  .2 .03 .03  .3 .02 0
                                                   .4 0 -.02  .45 -.03 -.03">
          <plugin plugin="mujoco.elasticity.cable">
            <config key="twist" value="3e5"/><config key="bend" value="1e5"/></plugin>
          <joint kind="main" range="0 60" damping=".02"/>
          <geom type="cylinder" size=".008" mass=".01"/>
        </composite>
      </frame>
    </body>
    <composite prefix="w" type="cable" curve="0 s 0" count="7 1 1" size=".6" offset="1 0 1">
      <plugin plugin="mujoco.elasticity.cable" instance="stiff"/>
      <geom type="capsule" size=".006"/>
    </composite>
  </worldbody>
</mujoco>""",
    # a cable without plugin, next to an in-place PID actuator plugin (instance order)
    "no_plugin_with_pid": """<mujoco>
  <extension><plugin plugin="mujoco.pid"/></extension>
  <worldbody>
    <body name="cart"><joint name="slide" type="slide" axis="1 0 0"/>
      <geom size=".1" mass="1"/></body>
    <composite type="cable" curve="s 0 s" count="5" size=".5" offset="0 0 1">
      <geom type="capsule" size=".02"/>
    </composite>
  </worldbody>
  <actuator><plugin joint="slide" plugin="mujoco.pid">
    <config key="kp" value="3"/></plugin></actuator>
</mujoco>""",
}
MODELS["pid_then_cable"] = MODELS["no_plugin_with_pid"].replace(
    '<extension><plugin plugin="mujoco.pid"/></extension>',
    '<extension><plugin plugin="mujoco.pid"/>'
    '<plugin plugin="mujoco.elasticity.cable"/></extension>').replace(
    '<geom type="capsule" size=".02"/>', CABLE_PLUGIN + '<geom type="capsule" size=".02"/>')

# MuJoCo's model/plugin/elasticity/coil.xml (Apache-2.0), its scene include replaced by
# a floor: a free coil from a vertex list, an actuated helix with initial="fixed" (a
# ball joint: only "free" and "none" mean something else)
MODELS["mujoco_coil_xml"] = """<mujoco model="Coil">
  <worldbody><geom name="floor" size="0 0 .05" type="plane"/></worldbody>

  <extension>
    <plugin plugin="mujoco.elasticity.cable"/>
  </extension>

  <statistic center="0 0 .2" extent="1"/>

  <compiler autolimits="true"/>

  <visual>
    <global elevation="-30"/>
  </visual>

  <default>
    <geom solref="0.01 1" solimp=".95 .99 .0001"/>
  </default>

  <worldbody>
    <composite prefix="free" type="cable" offset="-.25 0 .3" initial="free"
      vertex="
        0.1         0.          0.
        0.0809017   0.05877853  0.001256637
        0.0309017   0.09510565  0.002513274
       -0.0309017   0.09510565  0.003769911
       -0.0809017   0.05877853  0.005026548
       -0.1         0.          0.006283185
       -0.0809017  -0.05877853  0.007539822
       -0.0309017  -0.09510565  0.008796459
        0.0309017  -0.09510565  0.010053096
        0.0809017  -0.05877853  0.011309734
        0.1        -0.          0.012566371
        0.0809017   0.05877853  0.01256637
        0.0309017   0.09510565  0.02513274
       -0.0309017   0.09510565  0.03769911
       -0.0809017   0.05877853  0.05026548
       -0.1         0.          0.06283185
       -0.0809017  -0.05877853  0.07539822
       -0.0309017  -0.09510565  0.08796459
        0.0309017  -0.09510565  0.10053096
        0.0809017  -0.05877853  0.11309734
        0.1        -0.          0.12566371
        0.0809017   0.05877853  0.13823008
        0.0309017   0.09510565  0.15079645
       -0.0309017   0.09510565  0.16336282
       -0.0809017   0.05877853  0.17592919
       -0.1         0.          0.18849556
       -0.0809017  -0.05877853  0.20106193
       -0.0309017  -0.09510565  0.2136283
        0.0309017  -0.09510565  0.22619467
        0.0809017  -0.05877853  0.23876104
        0.1        -0.          0.25132741">
      <plugin plugin="mujoco.elasticity.cable">
        <!--Units are in Pa (SI)-->
        <config key="twist" value="5e8"/>
        <config key="bend" value="15e8"/>
        <config key="vmax" value="2"/>
      </plugin>
      <joint kind="main" damping="0.12" armature="0.01"/>
      <geom type="capsule" size=".005" rgba=".8 .2 .1 1"/>
    </composite>
    <composite prefix="actuated" type="cable" curve="cos(s) sin(s) s" count="41 1 1"
      size="0.251327412 .1 4" offset="0.25 0 .05" initial="fixed">
      <plugin plugin="mujoco.elasticity.cable">
        <!--Units are in Pa (SI)-->
        <config key="twist" value="5e8"/>
        <config key="bend" value="15e8"/>
        <config key="vmax" value="2"/>
      </plugin>
      <joint kind="main" damping="0.1" armature="0.01"/>
      <geom type="capsule" size=".005" rgba=".8 .2 .1 1"/>
    </composite>
    <body name="slider" pos="0.35 0 0.301327412">
      <joint name="slide" type="slide" axis="0 0 1" damping="5"/>
      <geom size=".01"/>
    </body>
  </worldbody>

  <equality>
    <connect name="right_boundary" body1="actuatedB_last" body2="slider" anchor="0.03 0 0" solref="0.0002 1"/>
  </equality>

  <contact>
    <exclude body1="actuatedB_last" body2="slider"/>
  </contact>

  <actuator>
    <position joint="slide" name="extend" gear="1 0 0 0 0 0" ctrlrange="-.25 1" kp="100"/>
  </actuator>
</mujoco>"""

# a vertical cable (degenerate moving frames) in a body whose childclass must not
# apply, with a composite <site> and the joint's range with autolimits
MODELS["vertical_childclass"] = f"""<mujoco>{EXT}
  <compiler autolimits="true"/>
  <default><default class="x"><geom rgba="1 0 0 1" size=".3"/><joint damping="9"/>
    <site rgba="0 0 1 1"/></default></default>
  <worldbody>
    <body name="top" pos="0 0 2" childclass="x">
      <geom size=".05"/>
      <composite prefix="z" type="cable" curve="0 0 s" count="6" size="-.8" initial="none">
        {CABLE_PLUGIN}
        <joint kind="main" range="0 45" stiffness=".1"/>
        <geom type="cylinder" size=".01"/>
        <site size=".03"/>
      </composite>
    </body>
  </worldbody>
</mujoco>"""

# fusestatic keeps B_first (initial="none": no joint), which the exclusions name
MODELS["fusestatic"] = MODELS["mujoco_cable_xml"].replace(
    '<compiler autolimits="true"/>', '<compiler autolimits="true" fusestatic="true"/>')

# copies of a cable: the exclusions per copy (its names), one text
MODELS["replicated"] = """<mujoco><worldbody><replicate count="2" offset="0 1 0">
  <composite type="cable" curve="s" count="4" size="1"><geom type="capsule" size=".01"/>
  </composite></replicate></worldbody></mujoco>"""

PLUGIN_FIELDS = ("plugin_stateadr", "plugin_statenum", "plugin_attr", "plugin_attradr",
                 "actuator_plugin", "body_plugin", "geom_plugin")


def _mujoco_plugin_names(mjm) -> list:
    """Plugin name of each of MuJoCo's instances (its registry slots by name)."""
    slots = {}
    for name, xml in (("mujoco.elasticity.cable", MODELS["curved_free"]),
                      ("mujoco.pid", MODELS["no_plugin_with_pid"])):
        slots[int(mujoco.MjModel.from_xml_string(xml).plugin[0])] = name
    return [slots[int(s)] for s in mjm.plugin]


# body plugins written by hand (no composite): the chain of test_plugin_cable, and
# one with an in-place instance per body
MODELS["hand_written"] = """<mujoco>
  <extension><plugin plugin="mujoco.elasticity.cable">
    <instance name="c"><config key="twist" value="1e6"/><config key="bend" value="4e5"/>
    </instance></plugin></extension>
  <worldbody>
    <body name="b0" pos="0 0 1"><joint type="ball"/>
      <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/><plugin instance="c"/>
      <body name="b1" pos=".1 0 0" euler="0 15 0"><joint type="ball"/>
        <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/><plugin instance="c"/>
        <body name="b2" pos=".1 0 0"><joint type="ball"/>
          <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/>
          <plugin plugin="mujoco.elasticity.cable" instance="c"/>
          <body name="b3" pos=".1 0 0"><joint type="ball"/>
            <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/>
            <plugin plugin="mujoco.elasticity.cable">
              <config key="twist" value="3e5"/><config key="bend" value="2e5"/></plugin>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module", params=sorted(MODELS))
def pair(request):
    xml = MODELS[request.param]
    return request.param, tiphys.load_model_from_string(xml), \
        mujoco.MjModel.from_xml_string(xml)


def test_cable_compiles_as_mujoco(pair):
    name, m, mjm = pair
    a = m.arrays
    assert not compare_model(a, mjm, skip=("plugin",)), name
    assert mjm.nbody > 4 and m.nbody == mjm.nbody
    if name == "hand_written":
        assert np.all(np.asarray(a.body_plugin)[1:] >= 0)
    for field in PLUGIN_FIELDS:
        ours = np.asarray(getattr(a, field)).reshape(-1)
        theirs = np.asarray(getattr(mjm, field)).reshape(-1)
        if field == "plugin_attr":
            theirs = theirs.astype(np.uint8)
        np.testing.assert_array_equal(ours, theirs, err_msg=field)
    assert [registry.plugin_at(int(s)).name for s in np.asarray(a.plugin)[:m.nplugin]] \
        == _mujoco_plugin_names(mjm)
    for obj in OBJECTS:
        n = int(getattr(mjm, _NUMBER[obj]))
        assert getattr(m, _NUMBER[obj]) == n, obj
        assert [tiphys.id2name(m, obj, i) or "" for i in range(n)] == \
            [mujoco.mj_id2name(mjm, _MJOBJ[obj], i) or "" for i in range(n)], obj
    assert m.ntextdata == mjm.ntextdata


def test_cable_poses_match_bit_for_bit():
    """Body frames and geom sizes come from the same float32 vertices and frame
    arithmetic as MuJoCo's (exactly, not only to the compare tolerance)."""
    for xml in (MODELS["curved_free"], MODELS["vertex_frame_instance"]):
        a = tiphys.load_model_from_string(xml).arrays
        mjm = mujoco.MjModel.from_xml_string(xml)
        for field in ("body_pos", "body_quat", "geom_size", "site_pos"):
            np.testing.assert_allclose(getattr(a, field), getattr(mjm, field), rtol=0,
                                       atol=4e-16, err_msg=field)


def test_composite_defaults_ignore_default_classes():
    """The composite's elements take MuJoCo's built-in values, not <default>'s."""
    m = tiphys.load_model_from_string(MODELS["curved_free"])
    a = m.arrays
    assert np.allclose(a.geom_rgba, [.5, .5, .5, 1])
    assert (np.asarray(a.jnt_group) == 3).all()  # composite joints: group 3
    assert np.allclose(a.site_size, [.02, .005, .005])  # not <default>'s .2


# ------------------------------------------------------------------ refused types

DEPRECATED = {
    "particle": 'The "particle" composite type is deprecated. Please use "replicate" '
                'instead.',
    "grid": 'The "grid" composite type is deprecated. Please use "flex" instead.',
    "rope": 'The "rope" composite type is deprecated. Please use "cable" instead.',
    "loop": 'The "loop" composite type is deprecated. Please use "flexcomp" instead.',
    "cloth": 'The "cloth" composite type is deprecated. Please use "shell" instead.',
}


def _both_fail(xml):
    """(MuJoCo's message, tiphys's ModelError) for a model both refuse."""
    with pytest.raises(ValueError) as mj:
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError) as ours:
        tiphys.load_model_from_string(xml)
    return str(mj.value), str(ours.value)


@pytest.mark.parametrize("ctype", sorted(DEPRECATED))
def test_deprecated_types_are_refused_with_mujocos_message(ctype):
    xml = f"""<mujoco><worldbody>
  <composite type="{ctype}" count="4 1 1" size="1"><geom type="capsule" size=".01"/>
  </composite></worldbody></mujoco>"""
    theirs, ours = _both_fail(xml)
    assert DEPRECATED[ctype] in theirs
    assert DEPRECATED[ctype] in ours and ":2:" in ours and "composite" in ours


def _cable(attrs='count="5" curve="s" size="1"', inner='<geom type="capsule" size=".01"/>',
           ext=EXT):
    return f"""<mujoco>{ext}<worldbody>
  <composite type="cable" {attrs}>{inner}</composite></worldbody></mujoco>"""


BAD = {
    "unknown_type": (_cable().replace('type="cable"', 'type="blob"'),
                     "invalid keyword: 'blob'"),
    "no_type": (_cable().replace('type="cable" ', ''), "required attribute missing: 'type'"),
    "count_zero": (_cable('count="0 1 1" size="1"'), "Positive counts expected in composite"),
    "size_zero": (_cable('count="5" size="0 0 0"'),
                  "Positive spacing or length expected in composite"),
    "vertex_and_count": (_cable('count="3" vertex="0 0 0 1 0 0 2 0 0"'),
                         "Either vertex or count can be specified, not both"),
    "singleton_first": (_cable('count="1 5 1" size="1"'), "Singleton counts must come last"),
    "two_dimensional": (_cable('count="5 5 1" size="1"'), "Cable must be one-dimensional"),
    "sphere_geom": (_cable(inner='<geom type="sphere" size=".01"/>'),
                    "Cable geom type must be sphere, capsule or box"),
    "no_geom": (_cable(inner=''), "Cable geom type must be sphere, capsule or box"),
    "curve_four": (_cable('count="5" curve="s 0 0 0" size="1"'),
                   "The curve array must have a maximum of 3 components"),
    "curve_word": (_cable('count="5" curve="s x" size="1"'),
                   "The curve array contains an invalid shape"),
    "curve_trailing_blank": (_cable('count="5" curve="s 0 0 " size="1"'),
                             "The curve array must have a maximum of 3 components"),
    "joint_no_kind": (_cable(inner='<joint damping="1"/><geom type="capsule" size=".01"/>'),
                      "required attribute missing: 'kind'"),
    "joint_bad_kind": (_cable(inner='<joint kind="x"/><geom type="capsule" size=".01"/>'),
                       "invalid keyword: 'x'"),
    "two_joints": (_cable(inner='<joint kind="main"/><joint kind="main"/>'
                                '<geom type="capsule" size=".01"/>'),
                   "Only particles are allowed to have multiple joints"),
    "skin_group": (_cable(inner='<skin group="7"/><geom type="capsule" size=".01"/>'),
                   "skin group must be between 0 and 5"),
    "plugin_not_cable": (_cable(inner='<plugin plugin="mujoco.pid"/>'
                                      '<geom type="capsule" size=".01"/>',
                                ext='<extension><plugin plugin="mujoco.pid"/></extension>'),
                         "Only mujoco.elasticity.cable is supported by composites"),
    "plugin_instance_only": (_cable(inner='<plugin instance="c"/>'
                                          '<geom type="capsule" size=".01"/>',
                                    ext='<extension><plugin plugin="mujoco.elasticity.cable">'
                                        '<instance name="c"/></plugin></extension>'),
                             "Only mujoco.elasticity.cable is supported by composites"),
    "plugin_on_grid": (_cable('count="4 4 1" size="1"').replace('"cable"', '"grid"').replace(
        '<geom', CABLE_PLUGIN + '<geom'), "Only cable composite supports plugins"),
    "plugin_unknown_key": (_cable(inner='<plugin plugin="mujoco.elasticity.cable">'
                                        '<config key="stretch" value="1"/></plugin>'
                                        '<geom type="capsule" size=".01"/>'),
                           "unrecognized attribute 'plugin:stretch' for plugin "
                           "mujoco.elasticity.cable'"),
    "plugin_not_active": (_cable(inner=CABLE_PLUGIN + '<geom type="capsule" size=".01"/>',
                                 ext=''), "unrecognized plugin 'mujoco.elasticity.cable'"),
    "bad_twist": (_cable(inner='<plugin plugin="mujoco.elasticity.cable">'
                               '<config key="twist" value="1e6x"/></plugin>'
                               '<geom type="capsule" size=".01"/>'),
                  "Invalid parameter specification in cable plugin"),
    "bad_bend": (_cable(inner='<plugin plugin="mujoco.elasticity.cable">'
                              '<config key="bend" value="stiff"/></plugin>'
                              '<geom type="capsule" size=".01"/>'),
                 "Invalid parameter specification in cable plugin"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_composite_gets_mujocos_message(case):
    xml, message = BAD[case]
    theirs, ours = _both_fail(xml)
    assert message in theirs, theirs
    assert message in ours, ours
    assert "<string>:" in ours  # located at the file and line


def test_config_numbers_with_blanks_are_accepted_as_mujoco_does():
    xml = _cable(inner='<plugin plugin="mujoco.elasticity.cable">'
                       '<config key="twist" value=" 1 e6"/><config key="bend" value=""/>'
                       '</plugin><geom type="capsule" size=".01"/>')
    mujoco.MjModel.from_xml_string(xml)
    assert tiphys.load_model_from_string(xml).nplugin == 1


def test_unknown_instance_is_a_clear_error():
    """(MuJoCo 3.4.0 crashes on this model.)"""
    xml = _cable(inner='<plugin plugin="mujoco.elasticity.cable" instance="nope"/>'
                       '<geom type="capsule" size=".01"/>')
    with pytest.raises(ModelError, match="unrecognized name 'nope' for plugin instance"):
        tiphys.load_model_from_string(xml)


def test_box_cable_in_replicate_is_refused_like_mujoco():
    """MuJoCo gives box cables a skin (tests/test_skin.py compares it); in a
    <replicate>, the skin names the bodies without the copies' suffixes."""
    xml = _cable(inner='<geom type="box" size=".01 .02 .005"/>', ext="")
    xml = xml.replace("<composite", '<replicate count="2" offset="0 1 0"><composite')
    xml = xml.replace("</composite>", "</composite></replicate>")
    with pytest.raises(ValueError, match="unknown body 'B_first' in skin"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError, match="<string>:2: .*unknown body 'B_first' in skin"):
        tiphys.load_model_from_string(xml)
