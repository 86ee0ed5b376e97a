"""More compiler mismatches against MuJoCo 3.4.0 found by compiling the models of the
MuJoCo repository itself (model/ and test/), each reproduced by a small model and
compared field by field:

- several top-level ``<default>`` sections (one from an ``<include>``): all extend the
  one main class, in order; a nested class copies its parent when it is read, so it
  does not see what a later section adds to main (actuator defaults were reset);
- primitive geoms fitted to a mesh (``<geom type="box" mesh="m"/>``) keep the mesh id
  in geom_dataid, and discardvisual keeps that mesh;
- ``<replicate>``: tendons, actuators, sensors, equalities, pairs and excludes that
  name replicated elements are replicated with them (MuJoCo's attach rules, see
  tiphys/compiler/replicate.py); camera and light targets inside get the suffix;
- ``<replicate prefix>`` is accepted and ignored, as 3.4.0's reader does;
- ``<visual>`` attribute types per element: ``<rgba bvactive>`` is a colour,
  ``<global bvactive>`` a keyword, ``<headlight active>`` an integer.
"""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from oracle import compare_model


def _match(xml, assets=None):
    mjm = mujoco.MjModel.from_xml_string(xml, assets or {})
    arrays = compile_spec(tiphys.parse_xml(xml, assets=assets))
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)
    return arrays, mjm


def _names(mjm, objtype, n):
    return [mujoco.mj_id2name(mjm, objtype, i) for i in range(n)]


# ------------------------------------------------------------------------------------
# several top-level <default> sections
# ------------------------------------------------------------------------------------

TWO_DEFAULTS = """
<mujoco>
  {first}
  <default>
    <geom solimp=".9 .9 .01" size=".2"/>
    <motor gear="3"/>
    <joint stiffness="2"/>
    <default class="late"><geom size=".1"/><position kp="5"/></default>
  </default>
  <default class="main">
    <general dyntype="filter"/>
  </default>
  <worldbody>
    <body>
      <joint name="j"/><joint name="k" class="early" axis="1 0 0"/>
      <joint name="l" class="late" axis="0 1 0"/>
      <geom/><geom class="late" pos=".3 0 0"/><geom class="early" pos="0 .3 0" size=".15"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="j"/><motor joint="k" class="late"/>
    <position joint="l" class="early" kp="3"/><position joint="j" class="late"/>
    <general joint="k"/>
  </actuator>
</mujoco>
"""
FIRST = """<default>
    <motor ctrlrange="-1 1" ctrllimited="true"/>
    <geom rgba="1 0 0 1"/>
    <default class="early"><joint damping="1"/><geom rgba="0 1 0 1"/></default>
  </default>"""


def test_two_top_level_defaults_extend_main():
    arrays, mjm = _match(TWO_DEFAULTS.format(first=FIRST))
    # the first section's motor defaults survive the second section
    assert np.all(mjm.actuator_ctrllimited[:2] == 1)
    # "early" was copied from main before the second section: no stiffness
    assert mjm.jnt_stiffness.tolist() == [2, 0, 2]


def test_default_section_from_an_include_merges_with_the_main_file():
    inc = "<mujoco>" + FIRST + "</mujoco>"
    xml = TWO_DEFAULTS.format(first='<include file="defaults.xml"/>')
    arrays, mjm = _match(xml, {"defaults.xml": inc.encode()})
    assert np.all(mjm.actuator_ctrllimited[:2] == 1)


# ------------------------------------------------------------------------------------
# primitives fitted to meshes
# ------------------------------------------------------------------------------------

FITMESH = """
<mujoco>
  <compiler {compiler}/>
  <asset>
    <mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
    <mesh name="n" vertex="0 0 0 2 0 0 0 1 0 0 0 1" inertia="exact"/>
    <mesh name="k" vertex="0 0 0 2 0 0 0 3 0 0 0 1"/>
    <mesh name="unused" vertex="0 0 0 1 0 0 0 1 0 0 0 2"/>
  </asset>
  <worldbody>
    <body>
      <freejoint/>
      <geom type="box" mesh="n"/>
      <geom type="capsule" mesh="k" contype="0" conaffinity="0"/>
      <geom type="mesh" mesh="m"/>
    </body>
    <body pos="1 0 0">
      <freejoint/>
      <geom type="ellipsoid" mesh="k"/>
      <geom type="cylinder" mesh="m" contype="0" conaffinity="0"/>
      <geom type="sphere" mesh="unused" pos="0 0 1"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("compiler", ["", 'fitaabb="true"', 'discardvisual="true"',
                                      'fitaabb="true" discardvisual="true"'])
def test_fitted_primitives_keep_the_mesh_id(compiler):
    arrays, mjm = _match(FITMESH.format(compiler=compiler))
    fitted = mjm.geom_type != mujoco.mjtGeom.mjGEOM_MESH
    assert np.all(mjm.geom_dataid[fitted] >= 0)


# ------------------------------------------------------------------------------------
# <replicate> and the elements that name replicated ones
# ------------------------------------------------------------------------------------

REPLICATED_REFERENCES = """
<mujoco>
  <worldbody>
    <site name="top" pos="0 0 2"/>
    <body name="base">
      <joint name="hb" axis="1 0 0"/>
      <geom name="cyl" type="cylinder" size=".1 .1"/>
      <site name="side" pos=".2 0 0"/>
      <replicate count="3" offset=".5 0 0">
        <body name="b" pos="0 0 1">
          <joint name="j"/><geom name="g" size=".1"/><site name="s"/>
        </body>
      </replicate>
    </body>
    <body name="after" pos="0 1 0">
      <joint name="ja"/><geom name="ga" size=".1"/><site name="sa"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t1"><site site="s"/><geom geom="cyl" sidesite="side"/><site site="top"/></spatial>
    <spatial name="t2"><site site="top"/><site site="sa"/></spatial>
    <spatial name="t3"><site site="top"/><geom geom="g"/><site site="s"/></spatial>
    <fixed name="t4"><joint joint="j" coef="1"/><joint joint="hb" coef="2"/></fixed>
  </tendon>
  <equality>
    <connect body1="b" body2="base" anchor="0 0 0"/>
    <joint joint1="j"/>
  </equality>
  <contact>
    <pair geom1="g" geom2="cyl"/>
    <exclude body1="b" body2="base"/>
  </contact>
  <actuator>
    <motor name="m" joint="j"/><motor name="mh" joint="hb"/>
    <position tendon="t1" kp="2"/><general site="s" refsite="top"/>
  </actuator>
  <sensor>
    <clock name="c"/>
    <framepos objtype="site" objname="s" reftype="site" refname="top"/>
    <actuatorfrc actuator="m"/><jointpos joint="j"/><subtreecom body="b"/>
  </sensor>
</mujoco>
"""


def test_replicate_copies_the_elements_that_name_replicated_ones():
    spec = tiphys.parse_xml(REPLICATED_REFERENCES)
    before = spec.to_xml()
    arrays, mjm = _match(REPLICATED_REFERENCES)
    assert spec.to_xml() == before  # compiling leaves the spec as written
    O = mujoco.mjtObj
    # t2 names nothing replicated; t1 and t4 are copied per copy; t3's geom wrap has no
    # side site, so its suffixed lookup fails and the copies fall back to the deleted
    # template: gone, as in MuJoCo
    assert _names(mjm, O.mjOBJ_TENDON, mjm.ntendon) == [
        "t2", "t10", "t40", "t11", "t41", "t12", "t42"]
    assert _names(mjm, O.mjOBJ_ACTUATOR, mjm.nu) == [
        "mh", "m0", None, "m1", None, "m2", None]
    # a clock names no object: copied on every attach, copies of copies included
    assert _names(mjm, O.mjOBJ_SENSOR, mjm.nsensor).count(None) == 12
    assert mjm.nsensor == 20
    assert mjm.neq == 3 and mjm.npair == 3 and mjm.nexclude == 3


NESTED = """
<mujoco>
  <custom><tuple name="tup"><element objtype="body" objname="base"/></tuple></custom>
  <worldbody>
    <site name="top" pos="0 0 2"/>
    <body name="base">
      <joint name="hb" axis="1 0 0"/>
      <geom name="cyl" type="cylinder" size=".1 .1"/>
      <site name="side" pos=".2 0 0"/>
      <replicate count="2" offset="1 0 0" sep="_">
        <frame pos="0 .1 0">
          <site name="mid"/>
          <replicate count="3" offset="0 .3 0" euler="0 0 10">
            <body name="b" pos="0 0 1">
              <joint name="j"/><geom name="g" size=".1"/><site name="s"/>
              <camera name="cam" mode="targetbody" target="b"/>
              <light name="l" mode="targetbodycom" target="b"/>
            </body>
          </replicate>
        </frame>
      </replicate>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t1"><site site="s"/><geom geom="cyl" sidesite="side"/><site site="mid"/></spatial>
    <spatial name="t5"><site site="s"/><site site="top"/></spatial>
    <fixed name="t4"><joint joint="j" coef="1"/><joint joint="hb" coef="2"/></fixed>
  </tendon>
  <equality><joint joint1="j" joint2="hb"/><tendon tendon1="t5"/></equality>
  <contact><pair geom1="cyl" geom2="g"/><exclude body1="base" body2="b"/></contact>
  <actuator>
    <motor name="m" joint="j"/><position tendon="t5" kp="2"/>
    <general site="s" refsite="mid"/>
  </actuator>
  <sensor>
    <framepos objtype="site" objname="s" reftype="site" refname="mid"/>
    <actuatorfrc actuator="m"/><tendonpos tendon="t5"/><jointpos joint="hb"/>
  </sensor>
</mujoco>
"""


def test_nested_replicates_suffix_innermost_first():
    arrays, mjm = _match(NESTED)
    O = mujoco.mjtObj
    assert _names(mjm, O.mjOBJ_TENDON, 3) == ["t10_0", "t50_0", "t40_0"]
    assert mjm.cam_targetbodyid.tolist() == list(range(2, 8))
    assert mjm.light_targetbodyid.tolist() == list(range(2, 8))


SENSORS = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 .1"/>
    <body name="base" pos="0 0 1">
      <freejoint/><geom name="cyl" type="cylinder" size=".1 .1"/><camera name="c0"/>
      <replicate count="2" offset=".5 0 0" sep="x" euler="0 0 45">
        <body name="b" pos="0 0 1">
          <joint name="j"/><geom name="g" size=".1"/><site name="s"/><camera name="cam"/>
        </body>
      </replicate>
    </body>
  </worldbody>
  <tendon><fixed name="fx"><joint joint="j" coef="1"/></fixed></tendon>
  <actuator><motor name="m" joint="j"/><general name="gt" tendon="fx"/></actuator>
  <sensor>
    <distance geom1="g" geom2="floor"/>
    <distance body1="base" geom2="g"/>
    <normal geom1="g" body2="b"/>
    <contact subtree1="b" geom2="floor" data="found force"/>
    <contact site="s" num="2"/>
    <framequat objtype="camera" objname="cam" reftype="body" refname="base"/>
    <frameangvel objtype="xbody" objname="b" reftype="camera" refname="c0"/>
    <tendonpos tendon="fx"/><actuatorvel actuator="gt"/>
    <e_potential name="ep"/>
    <user name="u" dim="2"/>
    <user name="u2" dim="1" objtype="site" objname="s"/>
  </sensor>
</mujoco>
"""


def test_replicated_sensors_of_every_kind_of_reference():
    # object and reference: both suffixed, or one of them without the suffix when only
    # the other is found; objectless sensors (e_potential, user) copied on every attach
    arrays, mjm = _match(SENSORS)
    names = _names(mjm, mujoco.mjtObj.mjOBJ_SENSOR, mjm.nsensor)
    assert names.count("ep") == 1 and "epx0" in names and "epx0x1" in names


def test_replicated_tendon_drives_a_replicated_actuator():
    # MuJoCo's test/user/testdata/lengthrange.xml pattern, without the simulation
    xml = """
    <mujoco>
      <worldbody>
        <site name="a" size=".02"/>
        <replicate offset="0 .1 0" count="12">
          <body pos="1 0 1">
            <joint axis="0 -1 0" range="0 90"/>
            <geom type="capsule" size=".02" fromto="0 0 0 0 0 -1"/>
            <site name="b" pos="0 0 -1"/>
          </body>
        </replicate>
      </worldbody>
      <tendon><spatial name="b"><site site="a"/><site site="b"/></spatial></tendon>
      <actuator><position name="b" tendon="b" ctrlrange="0 3" kp="100"/></actuator>
      <sensor><tendonpos name="len" tendon="b"/></sensor>
    </mujoco>"""
    arrays, mjm = _match(xml)
    names = [f"b{i:02d}" for i in range(12)]
    assert _names(mjm, mujoco.mjtObj.mjOBJ_TENDON, mjm.ntendon) == names
    assert _names(mjm, mujoco.mjtObj.mjOBJ_ACTUATOR, mjm.nu) == names
    assert mjm.nsensor == 12


def test_reference_to_a_template_element_is_an_error_in_both():
    # "late" does not exist yet when the copies are attached (the worldbody is read in
    # order), so the tendon is not copied, and it is not removed with the template
    # either (it did not resolve before): it names the deleted template site
    xml = """
    <mujoco>
      <worldbody>
        <replicate count="2" offset="1 0 0"><body><geom size=".1"/><site name="s"/></body>
        </replicate>
        <site name="late"/>
      </worldbody>
      <tendon><spatial><site site="s"/><site site="late"/></spatial></tendon>
    </mujoco>"""
    with pytest.raises(ValueError, match="site 's' not found"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="site 's' not found"):
        compile_spec(tiphys.parse_xml(xml))


def test_replicate_prefix_is_accepted_and_ignored():
    xml = """
    <mujoco>
      <worldbody>
        <replicate count="3" offset=".2 0 0" prefix="A" sep="-">
          <replicate count="2" offset="0 .2 0">
            <body name="b" pos="0 0 .5"><freejoint/><geom name="g" size=".05"/></body>
          </replicate>
        </replicate>
      </worldbody>
    </mujoco>"""
    with pytest.warns(UserWarning, match="prefix"):
        arrays, mjm = _match(xml)
    assert mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, 0) == "g0-0"


# ------------------------------------------------------------------------------------
# <visual> attribute types
# ------------------------------------------------------------------------------------

@pytest.mark.parametrize("visual", [
    '<rgba bvactive="0 0 0 0" bv="1 0 0 .5"/><global bvactive="false"/>',
    '<global bvactive="true" ellipsoidinertia="true" orthographic="false" cameraid="-1"/>',
    '<headlight active="0" ambient=".2 .2 .2"/>',
    '<quality shadowsize="1024" numslices="10"/><map znear=".02" zfar="40"/>',
])
def test_visual_attributes_read_as_mujoco_reads_them(visual):
    xml = f"""<mujoco><visual>{visual}</visual>
      <worldbody><geom size=".1"/></worldbody></mujoco>"""
    _match(xml)


@pytest.mark.parametrize("visual", [
    '<global bvactive="0"/>',          # a keyword, not a number
    '<headlight active="true"/>',      # an integer, not a keyword
])
def test_visual_attributes_of_the_wrong_type_are_errors_in_both(visual):
    xml = f"""<mujoco><visual>{visual}</visual>
      <worldbody><geom size=".1"/></worldbody></mujoco>"""
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError):
        compile_spec(tiphys.parse_xml(xml))
