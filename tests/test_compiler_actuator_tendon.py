"""Tendon and actuator compilation against MuJoCo 3.4.0: every shortcut, every
transmission, defaults, qpos0 constants, keyframes and bad input."""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from oracle import compare_model

ARM = """
<mujoco>
  <compiler autolimits="true"/>
  {default}
  <worldbody>
    <site name="anchor" pos="0 0 1"/>
    <site name="side0" pos="0 .3 .9"/>
    <body name="free" pos="2 0 1">
      <freejoint name="free"/>
      <geom size=".1" mass="2"/>
      <site name="fs" pos=".1 0 0"/>
    </body>
    <body name="upper" pos="0 0 1">
      <joint name="ball" type="ball"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".05"/>
      <geom name="sphere" pos=".1 0 -.2" size=".06" contype="0" conaffinity="0"/>
      <site name="s1" pos="0 .1 -.1"/>
      <site name="side" pos=".3 0 -.2"/>
      <body name="lower" pos="0 0 -.4">
        <joint name="elbow" axis="0 1 0" range="-90 45" ref="10"/>
        <joint name="slide" type="slide" axis="1 0 0" range="-.1 .2" springref=".05"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <geom name="cyl" type="cylinder" size=".05 .05" pos="0 0 0" euler="90 0 0"
              contype="0" conaffinity="0"/>
        <site name="s2" pos=".2 .05 -.05"/>
        <site name="s3" pos=".3 0 .05" euler="0 30 0"/>
        <site name="crank" pos=".1 0 0"/>
      </body>
    </body>
    <body name="slider" pos="1 0 0">
      <joint name="rail" type="slide" axis="1 0 0"/>
      <geom size=".05"/>
      <site name="rail_site" euler="0 90 0"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fixed" stiffness="2" springlength="-1">
      <joint joint="elbow" coef="1"/><joint joint="slide" coef="-.5"/>
    </fixed>
    <spatial name="wrap_sphere" range=".1 2" width=".01" rgba="1 0 0 1">
      <site site="anchor"/><geom geom="sphere" sidesite="side"/><site site="s2"/>
    </spatial>
    <spatial name="wrap_cyl" springlength=".3" stiffness="1">
      <site site="s1"/><geom geom="cyl"/><site site="s3"/>
    </spatial>
    <spatial name="pulley" damping=".3" springlength=".2 .4">
      <site site="anchor"/><site site="s1"/>
      <pulley divisor="2"/>
      <site site="s1"/><site site="s2"/>
      <pulley divisor="2"/>
      <site site="s1"/><site site="s3"/>
    </spatial>
    <spatial name="cross" armature=".1" frictionloss=".2" solreflimit=".05"
             solimpfriction=".8 .9" margin=".01" user="1 2 3">
      <site site="fs"/><site site="s3"/>
    </spatial>
  </tendon>
  <actuator>
    {actuators}
  </actuator>
  {keyframe}
</mujoco>
"""


def _both(xml):
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(tiphys.parse_xml(xml))
    return arrays, mjm


def _match(xml):
    arrays, mjm = _both(xml)
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)
    return arrays, mjm


def arm(actuators="", default="", keyframe=""):
    return ARM.format(actuators=actuators, default=default, keyframe=keyframe)


def test_tendons_fixed_spatial_wraps_pulleys():
    arrays, mjm = _match(arm())
    assert mjm.ntendon == 5 and mjm.nwrap == 18
    # the wraps actually wrap at qpos0 (the lengths include arc segments)
    assert arrays.tendon_length0[1] > 0 and arrays.tendon_invweight0.min() > 0


SHORTCUTS = [
    '<motor joint="elbow" gear="2" ctrlrange="-1 1"/>',
    '<motor joint="ball" gear="1 2 3"/>',
    '<motor joint="free" gear="1 0 0 0 0 1" forcerange="-5 5"/>',
    '<motor jointinparent="ball" gear="0 1 0"/>',
    '<position joint="elbow" kp="10" kv="1"/>',
    '<position joint="elbow" kp="10" dampratio="1"/>',
    '<position joint="slide" kp="30" dampratio=".5" timeconst=".1"/>',
    '<position joint="elbow" kp="5" inheritrange="1"/>',
    '<position tendon="wrap_sphere" kp="5" inheritrange=".5"/>',
    '<velocity joint="slide" kv="3"/>',
    '<intvelocity joint="elbow" kp="4" inheritrange="1"/>',
    '<intvelocity joint="slide" kp="4" actrange="-.1 .1"/>',
    '<damper joint="elbow" kv="2" ctrlrange="0 1"/>',
    '<cylinder joint="slide" area="2" timeconst=".2"/>',
    '<cylinder joint="slide" diameter=".3" bias="1 2 3"/>',
    '<muscle tendon="wrap_cyl" lengthrange=".1 .5" force="100"/>',
    '<muscle tendon="fixed" lengthrange="-1 1" range=".5 1.2" timeconst=".02 .05" '
    'tausmooth=".1"/>',
    '<adhesion body="lower" gain="3" ctrlrange="0 1"/>',
    '<general joint="elbow" dyntype="filter" gaintype="affine" biastype="affine" '
    'dynprm=".3" gainprm="1 2 3" biasprm="4 5 6 7" actearly="true" user="1 2"/>',
    '<general joint="elbow" dyntype="integrator" actlimited="true" actrange="-1 1" '
    'ctrllimited="false" ctrlrange="-2 2"/>',
    '<general tendon="pulley" gear="3" group="2"/>',
    '<general tendon="cross"/>',
]


@pytest.mark.parametrize("act", SHORTCUTS)
def test_every_shortcut_matches_mujoco(act):
    _match(arm(act))


TRANSMISSIONS = [
    '<motor site="s3" gear="1 0 0 0 0 1"/>',
    '<motor site="s3" refsite="anchor" gear="1 2 0 0 0 1"/>',
    '<motor site="s2" refsite="s1" gear="0 0 1 1 0 0"/>',
    '<motor site="fs" refsite="s3" gear="1 1 1 1 1 1"/>',
    '<position cranksite="crank" slidersite="rail_site" cranklength=".5" kp="1"/>',
    '<general cranksite="crank" slidersite="rail_site" cranklength="2"/>',
    '<adhesion body="upper" ctrlrange="0 2"/>',
    '<general body="free"/>',
]


@pytest.mark.parametrize("act", TRANSMISSIONS)
def test_every_transmission_matches_mujoco(act):
    _match(arm(act))


def test_all_actuators_together_and_keyframe_ctrl_act():
    acts = "\n".join(SHORTCUTS + TRANSMISSIONS)
    arrays, mjm = _match(arm(acts))
    nu, na = mjm.nu, mjm.na
    assert nu == len(SHORTCUTS) + len(TRANSMISSIONS) and na > 0
    key = (f'<keyframe><key ctrl="{" ".join(["0.5"] * nu)}" '
           f'act="{" ".join(["0.25"] * na)}"/></keyframe>')
    arrays, mjm = _match(arm(acts, keyframe=key))
    assert arrays.key_ctrl.shape == (1, nu) and arrays.key_act.shape == (1, na)


DEFAULTS = """
<default>
  <tendon width=".02" rgba="0 1 0 1" stiffness="3" springlength=".7"/>
  <general ctrlrange="-3 3" gainprm="7 1"/>
  <position kp="20" kv="2"/>
  <default class="a">
    <motor gear="5" forcerange="-1 1"/>
    <default class="b">
      <general dyntype="integrator" actrange="-1 1"/>
    </default>
  </default>
  <default class="m">
    <muscle force="50" lmin=".4"/>
  </default>
  <default class="v">
    <velocity kv="9"/>
    <cylinder area="3"/>
  </default>
</default>
"""


@pytest.mark.parametrize("act", [
    '<general joint="elbow"/>',          # inherits the position shortcut of main
    '<position joint="elbow"/>',
    '<position joint="elbow" kp="1"/>',
    '<motor joint="elbow"/>',
    '<motor class="a" joint="elbow"/>',
    '<general class="a" joint="elbow" gear="1 2"/>',
    '<general class="b" joint="elbow"/>',
    '<intvelocity class="b" joint="elbow"/>',
    '<muscle class="m" tendon="wrap_cyl" lengthrange=".1 .3" range=".5 1.5"/>',
    '<velocity class="v" joint="elbow"/>',
    '<cylinder class="v" joint="elbow"/>',
    '<general class="v" joint="elbow"/>',
])
def test_actuator_defaults_follow_mujocos_single_default(act):
    _match(arm(act, default=DEFAULTS))


def test_tendon_defaults_and_sizes():
    xml = arm('<motor tendon="fixed"/>', default=DEFAULTS).replace(
        "<compiler", '<size nuser_tendon="5" nuser_actuator="2"/>\n  <compiler')
    arrays, mjm = _match(xml)
    assert arrays.sizes["nuser_tendon"] == 5 and arrays.sizes["nuser_actuator"] == 2


def test_tendon_armature_demotes_simple_bodies():
    xml = """<mujoco><worldbody>
      <body name="a"><joint name="x" type="slide" axis="1 0 0"/><geom size=".1"/>
        <site name="sa"/></body>
      <body name="b" pos="1 0 0"><joint name="y" type="slide" axis="1 0 0"/>
        <geom size=".1"/><site name="sb"/></body>
      </worldbody>
      <tendon><spatial armature=".5"><site site="sa"/><site site="sb"/></spatial></tendon>
    </mujoco>"""
    arrays, mjm = _match(xml)
    assert list(arrays.body_simple) == [1, 0, 0]


@pytest.mark.parametrize("muscle", ['<muscle tendon="wrap_sphere"/>',
                                    '<muscle joint="elbow"/>'])
def test_lengthrange_options(muscle):
    base = arm(muscle)
    # simulated by tiphys/lengthrange.py when the Model is built, against the limits
    # through the constraint solver (tests/test_lengthrange.py covers the simulation);
    # for the wrapping tendon MuJoCo's own simulation does not converge: same error
    try:
        mjm = mujoco.MjModel.from_xml_string(base)
    except ValueError as exc:
        with pytest.raises(tiphys.ModelError, match="did not converge") as info:
            tiphys.load_model_from_string(base)
        assert info.value.detail in str(exc)
    else:
        m = tiphys.load_model_from_string(base)
        np.testing.assert_allclose(m.arrays.actuator_lengthrange, mjm.actuator_lengthrange,
                                   rtol=1e-9, atol=1e-12)
    # uselimit copies the limits of the tendon / joint
    uselimit = '<compiler autolimits="true"><lengthrange uselimit="true"/></compiler>'
    arrays, _ = _match(base.replace('<compiler autolimits="true"/>', uselimit))
    assert arrays.actuator_lengthrange[0, 0] < arrays.actuator_lengthrange[0, 1]
    _match(base.replace('<compiler autolimits="true"/>',
                        '<compiler autolimits="true"><lengthrange mode="none"/></compiler>'))
    # mode="all": every actuator is simulated, the motor too
    xml = arm('<motor joint="slide"/>').replace(
        '<compiler autolimits="true"/>',
        '<compiler autolimits="true"><lengthrange mode="all"/></compiler>')
    np.testing.assert_allclose(tiphys.load_model_from_string(xml).arrays.actuator_lengthrange,
                               mujoco.MjModel.from_xml_string(xml).actuator_lengthrange,
                               rtol=1e-9, atol=1e-12)


BAD = [
    ('<motor joint="nope"/>', "nope"),
    ('<motor tendon="nope"/>', "nope"),
    ('<motor site="nope"/>', "nope"),
    ('<motor body="upper"/>', "body"),  # not a motor attribute (schema)
    ('<general body="nope"/>', "nope"),
    ('<motor site="s1" refsite="nope"/>', "nope"),
    ('<general cranksite="crank" slidersite="nope" cranklength="1"/>', "nope"),
    ('<general cranksite="crank" slidersite="rail_site"/>', "cranklength"),
    ('<general joint="elbow" gainprm="1 2 3 4 5 6 7 8 9 10 11"/>', "gainprm"),
    ('<general joint="elbow" biasprm="1 2 3 4 5 6 7 8 9 10 11"/>', "biasprm"),
    ('<general joint="elbow" dynprm="1 2 3 4 5 6 7 8 9 10 11"/>', "dynprm"),
    ('<general joint="elbow" gear="1 2 3 4 5 6 7"/>', "gear"),
    ('<motor joint="elbow" tendon="fixed"/>', "at most one"),
    ('<motor/>', "missing transmission target"),
    ('<motor joint="elbow" ctrlrange="1"/>', "ctrlrange"),
    ('<motor joint="elbow" ctrllimited="true" ctrlrange="1 -1"/>', "control range"),
    ('<position joint="elbow" kv="1" dampratio="1"/>', "dampratio"),
    ('<position joint="elbow" kv="-1"/>', "kv"),
    ('<position joint="elbow" ctrlrange="0 1" inheritrange="1"/>', "inheritrange"),
    ('<position joint="ball" inheritrange="1"/>', "inheritrange"),
    ('<damper joint="elbow" kv="-1"/>', "kv"),
    ('<damper joint="elbow" ctrlrange="-1 1"/>', "ctrlrange"),
    ('<general joint="elbow" actlimited="true" actrange="-1 1"/>', "actrange"),
    ('<general joint="elbow" actdim="1"/>', "actdim"),
    ('<muscle joint="elbow" lengthrange="0 1" range="1 .5"/>', "range"),
    ('<motor name="m" joint="elbow"/><motor name="m" joint="slide"/>', "repeated name"),
]


@pytest.mark.parametrize("act,what", BAD)
def test_bad_actuators_raise_located_model_errors(act, what):
    xml = arm(act)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match=what) as info:
        compile_spec(tiphys.parse_xml(xml))
    assert info.value.line is not None and info.value.element is not None


BAD_TENDONS = [
    '<spatial><site site="s1"/></spatial>',
    '<spatial><site site="s1"/><site site="nope"/></spatial>',
    '<spatial><site site="s1"/><geom geom="nope"/><site site="s2"/></spatial>',
    '<spatial><site site="s1"/><geom geom="sphere" sidesite="nope"/><site site="s2"/>'
    '</spatial>',
    '<spatial><site site="s1"/><geom geom="sphere"/></spatial>',
    '<spatial><site site="s1"/><site site="s2"/><pulley divisor="1"/></spatial>',
    '<spatial><site site="s1"/><site site="s1"/></spatial>',
    '<spatial><site site="s1"/><pulley divisor="-1"/><site site="s2"/><site site="s3"/>'
    '</spatial>',
    '<spatial width="0"><site site="s1"/><site site="s2"/></spatial>',
    '<spatial armature=".1"><site site="s1"/><geom geom="sphere"/><site site="s2"/>'
    '</spatial>',
    '<fixed><joint joint="nope" coef="1"/></fixed>',
    '<fixed/>',
    '<fixed limited="true" range="1 0"><joint joint="elbow" coef="1"/></fixed>',
    '<fixed springlength="2 1"><joint joint="elbow" coef="1"/></fixed>',
    '<fixed actuatorfrclimited="true" actuatorfrcrange="1 2"><joint joint="elbow" '
    'coef="1"/></fixed>',
]


@pytest.mark.parametrize("tendon", BAD_TENDONS)
def test_bad_tendons_raise_located_model_errors(tendon):
    xml = arm().replace("<tendon>", "<tendon>" + tendon)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError) as info:
        compile_spec(tiphys.parse_xml(xml))
    assert info.value.line is not None and info.value.element is not None


def test_keyframe_ctrl_length_checked():
    xml = arm('<motor joint="elbow"/>', keyframe='<keyframe><key ctrl="1 2"/></keyframe>')
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="ctrl"):
        compile_spec(tiphys.parse_xml(xml))


def test_actuator_plugin_compiles_like_mujoco():
    """An in-place mujoco.pid actuator (tests/test_plugin.py has the rest)."""
    xml = """<mujoco><extension><plugin plugin="mujoco.pid"/></extension>
      <worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody>
      <actuator><plugin joint="j" plugin="mujoco.pid"/></actuator></mujoco>"""
    ours = compile_spec(tiphys.parse_xml(xml))
    mjm = mujoco.MjModel.from_xml_string(xml)
    for name in ("actuator_plugin", "actuator_actnum", "actuator_actadr", "plugin_attradr"):
        assert list(np.asarray(getattr(ours, name))) == list(getattr(mjm, name)), name


WRAP = """
<mujoco>
  <worldbody>
    <site name="a" pos="-.3 0 .02"/>
    <geom name="ball" size=".1" contype="0" conaffinity="0"/>
    <geom name="drum" type="cylinder" size=".08 .1" pos="0 0 -.5" euler="90 0 0"
          contype="0" conaffinity="0"/>
    <site name="in" pos="0 0 .05"/>
    <site name="in_drum" pos="0 .01 -.5"/>
    <site name="out" pos="0 0 .3"/>
    <site name="c" pos="-.3 .05 -.45"/>
    <site name="a2" pos="-.3 0 .15"/>
    <site name="c2" pos="-.3 .05 -.35"/>
    <body pos="0 0 0">
      <joint name="h" axis="0 1 0" ref="{ref}"/>
      <joint name="h2" axis="1 0 0" ref="{ref2}"/>
      <geom type="capsule" fromto="0 0 0 .4 0 0" size=".02" pos="0 0 0"/>
      <site name="b" pos=".35 0 .01"/>
      <site name="d" pos=".1 .04 -.55"/>
      <site name="b2" pos=".3 0 .15"/>
      <site name="d2" pos=".3 .04 -.35"/>
    </body>
  </worldbody>
  <tendon>
    <spatial><site site="a"/><geom geom="ball" sidesite="{side}"/><site site="b"/></spatial>
    <spatial><site site="a"/><geom geom="ball"/><site site="b"/></spatial>
    <spatial><site site="c"/><geom geom="drum" sidesite="{side2}"/><site site="d"/></spatial>
    <spatial><site site="c"/><geom geom="drum"/><site site="d"/></spatial>
    <spatial><site site="a2"/><geom geom="ball" sidesite="in"/><site site="b2"/></spatial>
    <spatial><site site="c2"/><geom geom="drum" sidesite="in_drum"/><site site="d2"/>
    </spatial>
  </tendon>
  <actuator><position tendon="{act}" kp="3" dampratio="1"/></actuator>
</mujoco>
"""


@pytest.mark.parametrize("ref", [-170, -120, -60, -5, 0, 30, 90, 150])
@pytest.mark.parametrize("ref2,side,side2", [(0, "out", "c"), (25, "in", "in_drum"),
                                             (-40, "out", "in_drum")])
def test_wrapping_geometry_at_many_poses(ref, ref2, side, side2):
    for act in range(4):
        xml = WRAP.format(ref=ref, ref2=ref2, side=side, side2=side2, act=act)
        xml = xml.replace(f'tendon="{act}"', f'tendon="t{act}"')
        for i in range(6):
            xml = xml.replace("<spatial>", f'<spatial name="t{i}">', 1)
        _match(xml)
