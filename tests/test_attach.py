"""<asset><model> + <attach> compiled against MuJoCo 3.4.0: models attached under the
world, a body, a frame with a pose and a childclass, inside <replicate>s, whole child
worlds, the same child attached several times; every model field and every name list
compared (default classes, meshes and textures from the child's own directories,
actuators, sensors, tendons, equalities, pairs, excludes, custom data and keyframes
that follow the attached elements, in MuJoCo's order); MuJoCo's errors; the Spec
editing API round trip; mjwarp/humanoid/n_humanoid.xml from the corpus."""
import os

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model, corpus_dir, mujoco_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

ROBOT = """\
<mujoco model="robot">
  <compiler meshdir="meshes" texturedir="tex"/>
  <option timestep="0.001"/>
  <default>
    <geom rgba=".5 .5 .5 1" material="mat"/>
    <motor ctrlrange="-2 2"/>
    <default class="arm">
      <joint damping="0.3" range="-90 90" armature="0.01"/>
      <geom type="capsule" size="0.02" friction="0.5"/>
      <position kp="20"/>
      <default class="hand">
        <geom type="sphere" size="0.03" material="wood"/>
        <site size="0.01" rgba="1 0 0 1"/>
      </default>
    </default>
    <default class="ball">
      <joint type="ball"/>
    </default>
  </default>
  <asset>
    <texture name="wood" type="2d" file="wood.png"/>
    <texture type="skybox" builtin="gradient" rgb1="1 1 1" rgb2="0 0 0" width="8" height="8"/>
    <material name="mat" rgba="0 1 0 1"/>
    <material name="wood" texture="wood"/>
    <mesh name="tet" file="tet.obj"/>
    <hfield name="terrain" file="height.png" size="1 1 .1 .1"/>
    <hfield file="height.png" size="2 2 .2 .1"/>
    <mesh file="prism.obj" scale="2 2 2"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 .1"/>
    <geom name="terrain" type="hfield" hfield="terrain" pos="3 0 0"/>
    <light name="sun" pos="0 0 3"/>
    <body name="mocap" mocap="true" pos="0.3 0 0.2">
      <geom type="box" size=".01 .01 .01" contype="0" conaffinity="0"/>
    </body>
    <body name="base" pos="0 0 0.1" childclass="arm">
      <freejoint name="root"/>
      <geom name="base" type="box" size="0.05 0.05 0.02" class="main"/>
      <geom name="tet" type="mesh" mesh="tet"/>
      <site name="base_site" pos="0 0 0.02"/>
      <camera name="cam" pos="0 -0.5 0.2" mode="targetbody" target="hand"/>
      <body name="upper" pos="0 0 0.02" euler="0 10 0">
        <joint name="shoulder" axis="0 1 0"/>
        <geom name="upper" fromto="0 0 0 0 0 0.2"/>
        <geom name="tet2" type="mesh" mesh="tet" pos="0 0 .1" class="main"/>
        <frame pos="0 0 0.1" euler="0 0 30">
          <site name="mid_site"/>
        </frame>
        <body name="lower" pos="0 0 0.2">
          <joint name="elbow" axis="0 1 0" range="-120 10"/>
          <joint name="wrist" class="ball"/>
          <geom name="lower" fromto="0 0 0 0 0 0.15"/>
          <geom name="prism" type="mesh" mesh="prism" class="main"/>
          <body name="hand" pos="0 0 0.15" childclass="hand">
            <joint name="finger" type="slide" axis="1 0 0" range="0 0.02"/>
            <geom name="hand"/>
            <site name="tip"/>
            <light name="handlight" mode="targetbody" target="upper"/>
          </body>
        </body>
      </body>
    </body>
    <body name="other" pos="1 0 0">
      <joint name="other_j"/>
      <geom size=".05"/>
    </body>
  </worldbody>
  <contact>
    <pair name="p1" geom1="upper" geom2="hand" condim="1"/>
    <pair geom1="floor" geom2="hand"/>
    <exclude body1="base" body2="upper"/>
  </contact>
  <tendon>
    <fixed name="couple">
      <joint joint="shoulder" coef="1"/><joint joint="elbow" coef="-0.5"/>
    </fixed>
    <spatial name="rope" width="0.005"><site site="base_site"/><site site="tip"/></spatial>
    <fixed name="far"><joint joint="other_j" coef="1"/></fixed>
  </tendon>
  <equality>
    <joint name="eqj" joint1="finger" joint2="elbow" polycoef="0 0.1 0 0 0"/>
    <connect name="eqc" body1="hand" body2="other" anchor="0 0 0"/>
    <weld body1="mocap" body2="base"/>
  </equality>
  <actuator>
    <motor name="m_shoulder" joint="shoulder" gear="10"/>
    <position name="p_elbow" joint="elbow" class="arm"/>
    <motor name="m_other" joint="other_j"/>
    <motor name="m_rope" tendon="rope"/>
    <general name="g_site" site="tip" refsite="base_site" gear="0 0 1 0 0 0"/>
  </actuator>
  <sensor>
    <jointpos name="s_shoulder" joint="shoulder"/>
    <framepos name="s_tip" objtype="site" objname="tip"/>
    <framepos name="s_rel" objtype="site" objname="tip" reftype="body" refname="base"/>
    <clock name="s_clock"/>
    <actuatorfrc name="s_act" actuator="m_shoulder"/>
    <tendonpos name="s_ten" tendon="couple"/>
    <jointpos name="s_other" joint="other_j"/>
  </sensor>
  <custom>
    <numeric name="num" data="1 2 3"/>
    <text name="txt" data="hello"/>
    <tuple name="tup">
      <element objtype="body" objname="hand" prm="1"/>
      <element objtype="joint" objname="elbow" prm="2"/>
    </tuple>
    <tuple name="tup_far"><element objtype="body" objname="other"/></tuple>
  </custom>
  <keyframe>
    <key name="home" time="0.5" qpos="0 0 0.3 1 0 0 0 0.1 0.2 1 0 0 0 0.01 0.3"
         qvel="1 2 3 4 5 6 7 8 9 10 11 12 13" ctrl="0.1 0.2 0.3 0.4 0.5" mpos="0.1 0.2 0.3"
         mquat="0 1 0 0"/>
    <key name="bent" qpos="0 0 0.3 1 0 0 0 0.5 -0.5 0.7071 0.7071 0 0 0.02 -0.3"/>
  </keyframe>
</mujoco>
"""

ARM = """\
<mujoco model="arm">
  <default>
    <joint damping="0.1" range="-45 45"/>
    <geom type="capsule" size="0.02" rgba="0 .5 .5 1"/>
    <default class="tip"><geom type="sphere" size="0.03"/></default>
  </default>
  <asset>
    <material name="m" rgba="1 1 0 1"/>
    <mesh name="tet" file="meshes/tet.obj"/>
  </asset>
  <worldbody>
    <geom name="post" type="box" size=".02 .02 .1" pos="0 0 .1" material="m"/>
    <site name="anchor" pos="0 0 .2"/>
    <camera name="overview" pos="1 1 1" xyaxes="-1 1 0 0 0 1"/>
    <body name="link1" pos="0 0 .2">
      <joint name="j1" axis="0 0 1"/>
      <geom name="link1" fromto="0 0 0 .2 0 0"/>
      <body name="link2" pos=".2 0 0">
        <joint name="j2" axis="0 1 0"/>
        <geom name="link2" fromto="0 0 0 .2 0 0"/>
        <geom name="tip" class="tip" pos=".2 0 0"/>
        <geom name="tet" type="mesh" mesh="tet" pos=".1 0 0"/>
        <site name="tip" pos=".2 0 0"/>
      </body>
    </body>
  </worldbody>
  <tendon><spatial name="t"><site site="anchor"/><site site="tip"/></spatial></tendon>
  <actuator>
    <position name="p1" joint="j1" kp="10"/>
    <motor name="m2" joint="j2" ctrlrange="-1 1"/>
    <motor name="mt" tendon="t"/>
  </actuator>
  <sensor>
    <jointpos name="j1" joint="j1"/>
    <framepos name="tip" objtype="site" objname="tip"/>
    <tendonpos name="t" tendon="t"/>
  </sensor>
  <keyframe><key name="k" qpos="0.3 -0.2" ctrl="0.5 0.1 0"/></keyframe>
</mujoco>
"""

# a child with a <compiler> of its own: its elements compile with it
RADARM = """\
<mujoco model="radarm">
  <compiler angle="radian" eulerseq="zyx" autolimits="false" boundmass="0.5"
            boundinertia="0.0001" inertiafromgeom="true"/>
  <default>
    <joint damping="0.1" range="-0.5 0.5" limited="true"/>
    <geom type="capsule" size="0.02"/>
  </default>
  <worldbody>
    <body name="link1" pos="0 0 .2" euler="0.1 0.2 0.3">
      <joint name="j1" axis="0 0 1" ref="0.2" springref="0.1"/>
      <geom name="link1" fromto="0 0 0 .2 0 0"/>
      <frame euler="0.3 0 0.1">
        <body name="link2" pos=".2 0 0" axisangle="0 0 1 0.5">
          <joint name="j2" axis="0 1 0" range="-1 1"/>
          <geom name="link2" fromto="0 0 0 .2 0 0"/>
          <site name="tip" pos=".2 0 0" euler="0.5 0.5 0"/>
          <body name="link3" pos=".2 0 0">
            <joint name="b3" type="ball" range="0 1"/><geom size=".03" type="sphere"/>
          </body>
        </body>
      </frame>
    </body>
  </worldbody>
  <tendon><fixed name="t" range="-1 1" limited="true"><joint joint="j1" coef="1"/></fixed></tendon>
  <actuator>
    <motor name="m1" joint="j1" ctrlrange="-1 1" ctrllimited="true"/>
    <position name="p2" joint="j2" kp="3" ctrlrange="-0.5 0.5" ctrllimited="true"/>
  </actuator>
</mujoco>
"""

# a child with <replicate>s of its own
LEGS = """\
<mujoco model="legs">
  <compiler angle="radian"/>
  <default>
    <joint damping=".2" range="-1 1"/><geom size=".03"/>
    <default class="foot"><geom type="sphere" size=".04" rgba="1 0 0 1"/></default>
  </default>
  <worldbody>
    <body name="hub" pos="0 0 .5">
      <freejoint name="hub"/>
      <geom type="cylinder" size=".1 .02"/>
      <replicate count="3" euler="0 0 2.0943951" sep="_">
        <body name="leg" pos=".1 0 0" childclass="foot">
          <joint name="hip" axis="0 1 0"/>
          <geom name="leg" type="capsule" fromto="0 0 0 .2 0 -.2" class="main"/>
          <geom name="foot" pos=".2 0 -.2"/>
          <site name="toe" pos=".2 0 -.24"/>
        </body>
      </replicate>
    </body>
    <replicate count="2" offset="1 0 0">
      <geom name="post" type="box" size=".05 .05 .05"/>
    </replicate>
  </worldbody>
  <actuator><motor name="hip" joint="hip" gear="2"/></actuator>
  <sensor><touch name="toe" site="toe"/><jointpos name="hip" joint="hip"/></sensor>
  <contact><exclude body1="hub" body2="leg"/></contact>
</mujoco>
"""

TET = """\
v 0 0 0
v 0.1 0 0
v 0 0.1 0
v 0 0 0.1
f 1 3 2
f 1 2 4
f 1 4 3
f 2 3 4
"""

PRISM = """\
v 0 0 0
v 0.1 0 0
v 0 0.1 0
v 0 0 0.1
f 1 3 2
f 1 2 4
f 1 4 3
f 2 3 4
v 0.05 0.05 0.2
f 2 3 5
"""


# parent models, written next to child/ (keys: the scenes compared)
SCENES = {
    "world": """\
<mujoco model="s1">
  <compiler meshdir="pm" texturedir="pt"/>
  <default><geom rgba="1 0 0 1"/><joint damping="9"/></default>
  <asset>
    <model name="robot" file="child/robot.xml"/>
    <material name="red" rgba="1 0 0 1"/>
  </asset>
  <worldbody>
    <geom name="ground" type="plane" size="3 3 .1"/>
    <attach model="robot" body="base" prefix="r1/"/>
    <body name="pole" pos="0 1 0.5"><joint name="pj"/><geom size=".05" material="red"/>
      <attach model="robot" body="upper" prefix="r2/"/>
    </body>
    <frame pos="1 2 0.3" euler="10 20 30" childclass="blue">
      <attach model="robot" body="base" prefix="r3_"/>
    </frame>
  </worldbody>
  <default>
    <default class="blue"><geom rgba="0 0 1 1"/></default>
  </default>
  <actuator><motor name="pm" joint="pj"/></actuator>
  <keyframe><key name="parent_key" time="2" ctrl="1 2 3"/></keyframe>
</mujoco>
""",
    "whole": """\
<mujoco>
  <asset><model name="arm" file="child/arm.xml"/></asset>
  <worldbody>
    <light pos="0 0 4"/>
    <body name="holder" pos="0 0 1" euler="0 0 45">
      <geom size=".1"/>
      <attach model="arm" prefix="w-"/>
      <geom name="after" size=".05" pos="0 0 .2"/>
    </body>
    <frame pos="1 0 0"><attach model="arm" prefix="f-"/></frame>
  </worldbody>
</mujoco>
""",
    "replicate": """\
<mujoco>
  <asset><model file="child/arm.xml"/></asset>
  <worldbody>
    <replicate count="2" offset="0.5 0 0" sep="#">
      <body name="b" pos="0 1 0"><joint name="j"/><geom size=".1"/></body>
    </replicate>
    <attach model="arm" body="link1" prefix="a/"/>
    <replicate count="3" euler="0 0 30">
      <frame pos="1 0 0" quat="0.9 0 0.1 0.3">
        <attach model="arm" body="link2" prefix="u_"/>
      </frame>
    </replicate>
  </worldbody>
  <actuator><motor name="mj" joint="j"/></actuator>
  <sensor><jointpos name="sj" joint="j"/></sensor>
</mujoco>
""",
    "body": """\
<mujoco>
  <default>
    <default class="blue"><geom rgba="0 0 1 1" size=".2"/><joint damping="3"/></default>
  </default>
  <asset><model name="arm" file="child/arm.xml"/><material name="m" rgba="1 0 1 1"/></asset>
  <worldbody>
    <body name="cart" pos="0 0 .5" childclass="blue">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom name="cart" type="box" size=".2 .1 .05" material="m"/>
      <attach model="arm" body="link1" prefix="left/"/>
      <frame pos="0 .3 0" zaxis="0 1 1">
        <attach model="arm" body="link2" prefix="right/"/>
      </frame>
      <body name="after" pos="0 0 .3"><joint name="after"/><geom size=".05"/></body>
    </body>
  </worldbody>
  <tendon><fixed name="own"><joint joint="slide" coef="1"/></fixed></tendon>
  <actuator><motor name="own" joint="slide"/></actuator>
  <sensor><jointpos name="own" joint="slide"/></sensor>
  <custom><numeric name="own" data="1"/></custom>
</mujoco>
""",
    "nested_replicate": """\
<mujoco>
  <asset><model name="arm" file="child/arm.xml"/></asset>
  <worldbody>
    <replicate count="2" offset="1 0 0" sep="x">
      <replicate count="2" offset="0 1 0" sep="y">
        <attach model="arm" body="link1" prefix="a-"/>
      </replicate>
    </replicate>
  </worldbody>
</mujoco>
""",
    "radian": """\
<mujoco>
  <asset><model name="rad" file="child/radarm.xml"/></asset>
  <worldbody>
    <body name="base" euler="0 0 30">
      <joint name="bj" range="-30 30"/>
      <geom size=".1"/>
      <attach model="rad" body="link1" prefix="r/"/>
    </body>
    <frame euler="10 0 0"><attach model="rad" prefix="w/"/></frame>
  </worldbody>
  <tendon><fixed name="pt" range="-1 1"><joint joint="bj" coef="1"/></fixed></tendon>
  <actuator><motor name="pm" joint="bj" ctrlrange="-1 1"/></actuator>
</mujoco>
""",
    "empty_prefix": """\
<mujoco>
  <default>
    <geom rgba="1 0 0 1" size=".3" friction=".1"/><joint damping="7" range="-1 1"/>
    <motor ctrlrange="-5 5"/>
    <default class="tip"><geom type="box" size=".1 .1 .1"/></default></default>
  <asset><model name="arm" file="child/arm.xml"/></asset>
  <worldbody>
    <body name="mine" pos="0 2 0"><joint name="mj"/><geom/><geom name="mytip" class="tip"/></body>
    <attach model="arm" body="link1" prefix=""/>
    
  </worldbody>
  <actuator><motor joint="mj"/></actuator>
</mujoco>
""",
    "whole_robot": """\
<mujoco>
  <asset><model name="robot" file="child/robot.xml"/></asset>
  <worldbody><attach model="robot" prefix="w/"/></worldbody>
</mujoco>
""",
    "child_replicates": """\
<mujoco>
  <asset><model name="legs" file="child/legs.xml"/></asset>
  <worldbody>
    <attach model="legs" body="hub" prefix="a/"/>
    <frame pos="2 0 0" euler="0 0 90"><attach model="legs" prefix="b/"/></frame>
    <replicate count="2" offset="0 3 0" sep="-">
      <attach model="legs" body="hub" prefix="c/"/>
    </replicate>
  </worldbody>
</mujoco>
""",
    "autolimits": """\
<mujoco>
  <compiler autolimits="false" angle="radian"/>
  <asset><model name="arm" file="child/arm.xml"/></asset>
  <worldbody>
    <body name="b" euler="0 0 0.5"><joint name="bj" range="-1 1" limited="true"/><geom size=".1"/>
      <attach model="arm" body="link1" prefix="a/"/>
    </body>
  </worldbody>
</mujoco>
""",
}


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """The child models (in child/, with meshdir/texturedir of their own), meshes and
    PNGs."""
    from PIL import Image
    root = tmp_path_factory.mktemp("attach")
    child = root / "child"
    (child / "meshes").mkdir(parents=True)
    (child / "tex").mkdir()
    (child / "robot.xml").write_text(ROBOT)
    (child / "arm.xml").write_text(ARM)
    (child / "radarm.xml").write_text(RADARM)
    (child / "legs.xml").write_text(LEGS)
    (child / "meshes" / "tet.obj").write_text(TET)
    (child / "meshes" / "prism.obj").write_text(PRISM)
    Image.new("RGB", (8, 8), (200, 50, 20)).save(child / "tex" / "wood.png")
    heights = (np.arange(64).reshape(8, 8) * 3).astype(np.uint8)
    Image.fromarray(heights, "L").save(child / "meshes" / "height.png")
    return root


_OBJ = {"body": ("mjOBJ_BODY", "nbody"), "hfield": ("mjOBJ_HFIELD", "nhfield"),
        "joint": ("mjOBJ_JOINT", "njnt"),
        "geom": ("mjOBJ_GEOM", "ngeom"), "site": ("mjOBJ_SITE", "nsite"),
        "camera": ("mjOBJ_CAMERA", "ncam"), "light": ("mjOBJ_LIGHT", "nlight"),
        "mesh": ("mjOBJ_MESH", "nmesh"), "texture": ("mjOBJ_TEXTURE", "ntex"),
        "material": ("mjOBJ_MATERIAL", "nmat"), "pair": ("mjOBJ_PAIR", "npair"),
        "exclude": ("mjOBJ_EXCLUDE", "nexclude"), "equality": ("mjOBJ_EQUALITY", "neq"),
        "tendon": ("mjOBJ_TENDON", "ntendon"), "actuator": ("mjOBJ_ACTUATOR", "nu"),
        "sensor": ("mjOBJ_SENSOR", "nsensor"), "numeric": ("mjOBJ_NUMERIC", "nnumeric"),
        "text": ("mjOBJ_TEXT", "ntext"), "tuple": ("mjOBJ_TUPLE", "ntuple"),
        "key": ("mjOBJ_KEY", "nkey")}


def _name_errors(arrays, mjm) -> list:
    errors = []
    for kind, (obj, size) in _OBJ.items():
        objtype = getattr(mujoco.mjtObj, obj)
        theirs = [mujoco.mj_id2name(mjm, objtype, i) or ""
                  for i in range(getattr(mjm, size))]
        ours = list(arrays.names.get(kind, []))
        if ours != theirs:
            errors.append(f"{kind} names: {ours} != {theirs}")
    return errors


def _check(path):
    """Compile ``path`` with both engines; every field and name list must agree."""
    mjm = mujoco_model(str(path))
    arrays = compile_spec(tiphys.load_spec(str(path)))
    errors = compare_model(arrays, mjm) + _name_errors(arrays, mjm)
    assert not errors, "\n".join(errors)
    return arrays, mjm


def _write(models_dir, name, xml):
    path = models_dir / name
    path.write_text(xml)
    return path


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_attach_matches_mujoco(models_dir, scene):
    arrays, mjm = _check(_write(models_dir, scene + ".xml", SCENES[scene]))
    assert mjm.nbody > 1  # (something was attached)


def test_attached_elements_follow_what_was_attached(models_dir):
    """The child's elements that name objects left out are not copied; those inside
    are, prefixed (checked on MuJoCo's model too, so the scene tests see them)."""
    arrays, mjm = _check(_write(models_dir, "world.xml", SCENES["world"]))
    names = arrays.names
    assert "r1/m_shoulder" in names["actuator"] and "r1/m_other" not in names["actuator"]
    assert "r2/m_shoulder" in names["actuator"] and "r2/m_rope" not in names["actuator"]
    assert "r1/eqc" not in names["equality"] and "r1/eqj" in names["equality"]
    assert "r1/s_clock" in names["sensor"] and "r1/s_other" not in names["sensor"]
    assert names["key"][:1] == ["parent_key"] and "r3_home" in names["key"]
    assert "r1/prism" in names["mesh"] and "r1/wood" in names["texture"]
    assert names["hfield"] == ["r1/terrain", "r1/height", "r2/terrain", "r2/height",
                               "r3_terrain", "r3_height"]


def test_keyframe_values_move_with_the_attached_elements(models_dir):
    """A joint left out by one attach keeps that attach's keyframe values and hands
    them to the next attach of the same child (MuJoCo's SaveState/ForgetKeyframes):
    r3_'s root carries r2/home's values."""
    arrays, mjm = _check(_write(models_dir, "world.xml", SCENES["world"]))
    k = list(arrays.names["key"]).index("r2/home")
    root = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "r3_root")
    adr = mjm.jnt_qposadr[root]
    np.testing.assert_array_equal(arrays.key_qpos[k, adr:adr + 3], [0, 0, 0.3])
    assert not np.allclose(arrays.key_qpos[k, adr:adr + 3], mjm.qpos0[adr:adr + 3])


def test_attach_errors_match_mujoco(models_dir):
    cases = {
        '<attach model="nope" body="link1" prefix="a"/>': "could not find model 'nope'",
        '<attach model="arm" body="nobody" prefix="a"/>': "could not find body 'nobody'",
        '<attach model="arm" body="link1"/>': "prefix: missing required attribute",
        '<attach body="link1" prefix="a"/>': "model: missing required attribute",
        '<attach model="arm" body="link1" prefix="a"/><body name="alink2"/>':
            "repeated name 'alink2' in body",
    }
    for body, message in cases.items():
        path = _write(models_dir, "bad.xml", f"""
<mujoco>
  <asset><model name="arm" file="child/arm.xml"/></asset>
  <worldbody>{body}</worldbody>
</mujoco>""")
        with pytest.raises(ValueError):
            mujoco.MjModel.from_xml_path(str(path))
        with pytest.raises(tiphys.ModelError, match=message) as exc:
            tiphys.load_model(str(path))
        assert "bad.xml:4" in str(exc.value)
    path = _write(models_dir, "bad.xml", """
<mujoco>
  <asset><model name="arm" file="child/missing.xml"/></asset>
</mujoco>""")
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(tiphys.ModelError, match="could not parse model file.*missing.xml"):
        tiphys.load_model(str(path))


def test_unsupported_attachments_raise(models_dir):
    (models_dir / "child" / "withkeys.xml").write_text(
        LEGS.replace("</mujoco>", '<keyframe><key qpos="0 0 1 1 0 0 0 0 0 0"/></keyframe>'
                                  "</mujoco>"))
    cases = {
        # a child's own <replicate> makes its keyframes pending in the child
        '<asset><model name="r" file="child/withkeys.xml"/></asset>'
        '<worldbody><attach model="r" body="hub" prefix="a"/></worldbody>':
            "<keyframe> with <replicate>",
    }
    for body, message in cases.items():
        path = _write(models_dir, "unsupported.xml", f"<mujoco>{body}</mujoco>")
        with pytest.raises(NotImplementedError, match=message):
            tiphys.load_model(str(path))


def test_second_attach_inside_replicate_fails_as_in_mujoco(models_dir):
    """A second attach of a body attached before, inside a <replicate>: MuJoCo 3.4.0
    gives the replicate's copies parents of their own, hence mismatched parents."""
    for inner in ('<attach model="r" body="link1" prefix="a"/>',
                  '<frame pos="0 0 1"><attach model="r" body="link1" prefix="a"/></frame>'):
        path = _write(models_dir, "again.xml", f"""<mujoco>
  <asset><model name="r" file="child/arm.xml"/></asset>
  <worldbody><attach model="r" body="link1" prefix="a"/>
    <replicate count="2" offset="1 0 0">{inner}</replicate></worldbody>
</mujoco>""")
        with pytest.raises(ValueError, match="Frame and body 'alink1' have mismatched"):
            mujoco.MjModel.from_xml_path(str(path))
        with pytest.raises(tiphys.ModelError, match=r"again.xml:4: <attach>: Frame and body "
                                                    r"'alink1' have mismatched parents"):
            tiphys.load_model(str(path))


def test_model_file_in_an_included_file(models_dir):
    """<model file> in an included file is found from the including file's directory,
    as MuJoCo's reader finds it."""
    (models_dir / "sub").mkdir(exist_ok=True)
    (models_dir / "sub" / "part.xml").write_text("""<mujoco>
  <asset><model name="arm" file="../child/arm.xml"/></asset>
  <worldbody><attach model="arm" body="link1" prefix="inc/"/></worldbody>
</mujoco>""")
    arrays, _ = _check(_write(models_dir, "inc.xml",
                              '<mujoco><include file="sub/part.xml"/></mujoco>'))
    assert "inc/link2" in arrays.names["body"]


def test_model_asset_refused_only_when_attached(models_dir):
    """A <model> asset holding what an attach does not support yet compiles as long as
    nothing is attached from it."""
    (models_dir / "child" / "withflex.xml").write_text(
        '<mujoco><worldbody><body name="a"><joint/><geom size=".1"/></body><body name="f">'
        '<flexcomp name="f" type="grid" count="2 2 1" spacing=".1 .1 .1" dim="2"/>'
        '</body></worldbody></mujoco>')
    xml = """<mujoco><asset><model name="w" file="child/withflex.xml"/>
<model name="arm" file="child/arm.xml"/></asset>
<worldbody><attach model="{}" body="{}" prefix="x"/></worldbody></mujoco>"""
    _check(_write(models_dir, "unused.xml", xml.format("arm", "link1")))
    path = _write(models_dir, "unused.xml", xml.format("w", "f"))
    mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(NotImplementedError, match="<flexcomp> in a model used by <attach>"):
        tiphys.load_model(str(path))


def test_attach_from_assets_dict():
    """The child model and its mesh from the in-memory VFS, as MuJoCo reads them."""
    assets = {"arm.xml": ARM.replace("meshes/tet.obj", "tet.obj").encode(),
              "tet.obj": TET.encode()}
    xml = """<mujoco><asset><model name="arm" file="arm.xml"/></asset>
<worldbody><attach model="arm" body="link1" prefix="v/"/></worldbody></mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml, assets)
    arrays = compile_spec(parse_xml(xml, assets=assets))
    errors = compare_model(arrays, mjm) + _name_errors(arrays, mjm)
    assert not errors, "\n".join(errors)
    assert "v/tet" in arrays.names["mesh"]


def test_spec_with_attach_round_trips(models_dir):
    """The Spec keeps <model> and <attach> as written (compiling does not change it):
    its XML recompiles to the same model; <attach> added with the editing API
    compiles as MuJoCo compiles the same text."""
    path = _write(models_dir, "rep.xml", SCENES["replicate"])
    spec = tiphys.load_spec(str(path))
    before = spec.to_xml()
    compile_spec(spec)
    assert spec.to_xml() == before
    again = parse_xml(before, basedir=str(models_dir))
    mjm = mujoco.MjModel.from_xml_path(str(path))
    assert not compare_model(compile_spec(again), mjm)
    spec.worldbody.add("attach", model="arm", body="link2", prefix="new/")
    edited = _write(models_dir, "edited.xml", spec.to_xml())
    arrays, mjm = _check(edited)
    assert "new/link2" in arrays.names["body"]


def test_n_humanoid_matches_mujoco():
    path = os.path.join(corpus_dir(), "mjwarp", "humanoid", "n_humanoid.xml")
    if not os.path.exists(path):
        pytest.skip("corpus not present")
    arrays, mjm = _check(path)
    assert mjm.nu == 63 and mjm.nkey == 3


# nested composition: a gripper attached by an arm, the arm attached by a scene (three
# times: under a body, in a frame, its whole world); each model with <compiler>
# settings, default classes of the same names, assets from its own directories, and
# actuators, tendons, equalities and sensors that name the attached elements
NEST_GRIPPER = """<mujoco model="gripper">
  <compiler angle="radian" meshdir="meshes" autolimits="true"/>
  <default>
    <joint damping="0.1"/>
    <default class="finger">
      <joint type="slide" range="0 0.04" armature="0.001"/>
      <geom type="box" size="0.01 0.01 0.03" material="red" friction="0.8"/>
    </default>
    <position kp="30" ctrlrange="0 0.04"/>
  </default>
  <asset><material name="red" rgba="1 0 0 1"/><mesh name="palm" file="tet.obj"/></asset>
  <worldbody>
    <body name="palm" pos="0 0 0.05" euler="0 0 0.3">
      <joint name="wrist" axis="0 0 1" range="-1.5 1.5"/>
      <geom type="mesh" mesh="palm"/>
      <site name="grip_site" pos="0 0 0.05"/>
      <replicate count="2" euler="0 0 3.14159">
        <site name="pad" pos="0.03 0 0.05"/>
      </replicate>
      <body name="left" pos="0.02 0 0.06" childclass="finger">
        <joint name="left" axis="1 0 0"/><geom name="left"/>
      </body>
      <body name="right" pos="-0.02 0 0.06" childclass="finger">
        <joint name="right" axis="-1 0 0"/><geom name="right"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="split"><joint joint="left" coef="0.5"/><joint joint="right" coef="0.5"/></fixed>
  </tendon>
  <equality><joint joint1="left" joint2="right"/></equality>
  <actuator>
    <position name="grip" tendon="split"/>
    <motor name="wrist" joint="wrist" gear="2" ctrlrange="-1 1"/>
  </actuator>
  <sensor>
    <tendonpos name="opening" tendon="split"/>
    <framepos name="tip" objtype="site" objname="grip_site"/>
  </sensor>
  <contact><exclude body1="left" body2="right"/></contact>
  {keys}
</mujoco>"""

NEST_ARM = """<mujoco model="arm">
  <compiler angle="degree"/>
  <default>
    <joint damping="0.5" range="-90 90" limited="true"/>
    <geom type="capsule" size="0.02" rgba=".4 .4 .8 1"/>
    <default class="finger"><geom friction="0.6"/></default>
  </default>
  <asset>
    <model name="gripper" file="grip/gripper.xml"/>
    <material name="red" rgba="0.5 0 0 1"/>
  </asset>
  <worldbody>
    <body name="base">
      <joint name="yaw" axis="0 0 1"/>
      <geom fromto="0 0 0 0 0 0.2" class="finger"/>
      <body name="upper" pos="0 0 0.2" euler="0 30 0">
        <joint name="shoulder" axis="0 1 0"/>
        <geom fromto="0 0 0 0 0 0.3"/>
        <body name="fore" pos="0 0 0.3">
          <joint name="elbow" axis="0 1 0"/>
          <geom fromto="0 0 0 0 0 0.25" material="red"/>
          <frame pos="0 0 0.25" euler="0 0 45">
            <attach model="gripper" body="palm" prefix="g/"/>
          </frame>
        </body>
      </body>
    </body>
    <attach model="gripper" prefix="spare/"/>
  </worldbody>
  <actuator>
    <motor name="yaw" joint="yaw" gear="10"/>
    <position name="wristpos" joint="g/wrist" kp="5"/>
  </actuator>
  <sensor><jointpos name="elbow" joint="elbow"/><tendonpos name="o" tendon="g/split"/></sensor>
  <keyframe>
    <key name="home" qpos="0.1 0.2 0.3 0.4 0.01 0.01 0.5 0.02 0.02" ctrl="0.1 0.3 0.02 0 0.03 0.2"/>
  </keyframe>
</mujoco>"""

NEST_SCENE = """<mujoco model="scene">
  <compiler angle="radian"/>
  <default><geom rgba="0 1 0 1"/></default>
  <asset><model name="arm" file="arm/arm.xml"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="mount" pos="0.3 0 0.1"><attach model="arm" body="base" prefix="L/"/></body>
    <frame pos="-0.3 0 0.1" euler="0 0 1"><attach model="arm" body="base" prefix="R/"/></frame>
    <attach model="arm" prefix="W/"/>
    <body name="loose" pos="0 1 0"><attach model="arm" body="g/palm" prefix="P/"/></body>
  </worldbody>
  <actuator><motor name="extra" joint="L/g/left"/></actuator>
  <sensor><framepos name="ltip" objtype="site" objname="L/g/grip_site"/></sensor>
  <keyframe><key name="mine" time="1"/></keyframe>
</mujoco>"""


def _nested_models(root, keys="", arm_keys=True):
    (root / "arm" / "grip" / "meshes").mkdir(parents=True, exist_ok=True)
    (root / "arm" / "grip" / "meshes" / "tet.obj").write_text(TET)
    (root / "arm" / "grip" / "gripper.xml").write_text(NEST_GRIPPER.replace("{keys}", keys))
    arm = NEST_ARM if arm_keys else NEST_ARM[:NEST_ARM.index("  <keyframe>")] + "</mujoco>"
    (root / "arm" / "arm.xml").write_text(arm)
    return _write(root, "scene.xml", NEST_SCENE)


def test_nested_attach_matches_mujoco(tmp_path):
    """A model that itself attaches another is attached with what it attached (names
    prefixed twice), as MuJoCo parses the child with its own <attach>es first: every
    field, name and keyframe as MuJoCo 3.4.0 compiles them, the child alone too."""
    scene = _nested_models(tmp_path)
    arrays, mjm = _check(tmp_path / "arm" / "arm.xml")
    assert "spare/g/palm" not in arrays.names["body"] and "g/palm" in arrays.names["body"]
    arrays, mjm = _check(scene)
    names = arrays.names
    for prefix in ("L/", "R/", "W/"):
        assert prefix + "g/wrist" in names["joint"]
        assert prefix + "g/grip" in names["actuator"]
    assert "W/spare/left" in names["body"] and "P/g/left" in names["body"]
    assert names["key"] == ["mine", "L/home", "R/home", "W/home", "P/home"]
    # the gripper's slide range is in its own (radian) units, the arm's hinge in degrees
    j = names["joint"].index("L/g/left")
    np.testing.assert_array_equal(arrays.jnt_range[j], [0, 0.04])


def test_three_levels_and_a_relative_path(tmp_path, monkeypatch):
    """Three levels of <attach> (the scene's model attaches the arm, which attaches the
    gripper), opened from the working directory by a relative path. (The arm has no
    keyframes here: they would be pending keyframes of the scene, as below.)"""
    _nested_models(tmp_path / "m", arm_keys=False)
    _write(tmp_path, "top.xml", """<mujoco>
  <asset><model name="s" file="m/scene.xml"/></asset>
  <worldbody><attach model="s" prefix="Z:"/></worldbody>
  <actuator><motor name="z" joint="Z:R/g/right"/></actuator>
</mujoco>""")
    monkeypatch.chdir(tmp_path)
    arrays, mjm = _check("top.xml")
    assert "Z:W/spare/right" in arrays.names["joint"]


def test_keyframes_of_a_nested_attach_raise(tmp_path):
    """A model attached by a model used by <attach> with keyframes of its own: MuJoCo
    3.4.0 warns that it does not name them correctly (and names them in the first
    attach only); refused until that is reproduced. The arm alone compiles as MuJoCo
    compiles it."""
    scene = _nested_models(tmp_path, '<keyframe><key name="open" qpos="0.5 0.03 0.03"/>'
                                     '</keyframe>')
    grip = tmp_path / "arm" / "grip" / "gripper.xml"  # (no <replicate>: refused alone)
    text = grip.read_text()
    grip.write_text(text[:text.index("      <replicate")] +
                    text[text.index("</replicate>") + len("</replicate>"):])
    arrays, _ = _check(tmp_path / "arm" / "arm.xml")
    assert arrays.names["key"] == ["home", "g/open", "spare/open"]
    with pytest.raises(NotImplementedError, match="keyframes of a model attached by <attach>"):
        tiphys.load_model(str(scene))


def test_keyframe_act_follows_the_attached_actuators(tmp_path):
    """<key act> of an attached child: split by its actuators' activation counts
    (filter, intvelocity, a user dyntype with actdim 2; a motor has none) and placed at
    the copies' actadr, as MuJoCo's SaveState/RestoreState place it; an attach of part
    of the child keeps the values of the actuators it copies."""
    (tmp_path / "child.xml").write_text("""<mujoco>
  <worldbody>
    <body name="b"><joint name="j1"/><geom size=".1"/>
      <body name="c" pos="0 0 .3"><joint name="j2"/><geom size=".1"/></body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="j1"/>
    <general name="f" joint="j1" dyntype="filter" dynprm="0.1"/>
    <intvelocity name="iv" joint="j2" kp="3" actrange="-1 1"/>
    <general name="u" joint="j2" dyntype="user" actdim="2"/>
  </actuator>
  <keyframe><key name="k" qpos="0.1 0.2" act="0.5 0.6 0.7 0.8" ctrl="1 2 3 4"/>
    <key name="noact" qpos="0.3 0.4"/></keyframe>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", """<mujoco>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody><body name="p"><joint name="pj"/><geom size=".1"/></body>
    <attach model="c" body="b" prefix="A"/>
    <frame pos="1 0 0"><attach model="c" body="c" prefix="B"/></frame>
  </worldbody>
  <actuator><general joint="pj" dyntype="integrator"/></actuator>
  <keyframe><key name="own" act="9"/></keyframe>
</mujoco>"""))
    assert arrays.names["key"] == ["own", "Ak", "Anoact", "Bk", "Bnoact"]
    np.testing.assert_array_equal(arrays.key_act[3], [0, 0, 0, 0, 0, 0.6, 0.7, 0.8])


@pytest.mark.parametrize("child_strip", ["false", "true"])
@pytest.mark.parametrize("parent_strip", ["false", "true"])
def test_attached_asset_files_follow_the_parents_strippath(tmp_path, child_strip,
                                                           parent_strip):
    """An attached child's mesh compiles in the parent: the parent's strippath keeps
    the file name alone (then found in the child's meshdir), the child's own does not
    apply; the kept path follows the same rule."""
    (tmp_path / "sub" / "meshes" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / "meshes" / "tet.obj").write_text(TET)
    big = "\n".join(" ".join(str(float(x) * 10) for x in line.split()[1:]).join(("v ", ""))
                    if line.startswith("v ") else line for line in TET.splitlines())
    (tmp_path / "sub" / "meshes" / "deep" / "tet.obj").write_text(big)
    (tmp_path / "sub" / "child.xml").write_text(f"""<mujoco>
  <compiler meshdir="meshes" strippath="{child_strip}"/>
  <asset><mesh name="t" file="deep/tet.obj"/></asset>
  <worldbody><body name="b"><joint/><geom type="mesh" mesh="t"/></body></worldbody>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", f"""<mujoco>
  <compiler strippath="{parent_strip}"/>
  <asset><model name="c" file="sub/child.xml"/></asset>
  <worldbody><attach model="c" body="b" prefix="A"/></worldbody>
</mujoco>"""))
    small = parent_strip == "true"
    assert (arrays.mesh_vert.max() < 0.1) == small
    assert bytes(mjm.paths).rstrip(b"\0") == (b"tet.obj" if small else b"deep/tet.obj")


def test_a_second_attach_moves_the_body(tmp_path):
    """<attach> of a body attached before copies nothing: the body takes the new
    attach's frames (nested, in the parent's angle units; the child's own compiler
    still applies inside), keeping its place in the tree, again at a third attach; a
    root of a whole-world attach moves too. A body under another parent is MuJoCo's
    error."""
    (tmp_path / "child.xml").write_text("""<mujoco><compiler angle="radian"/>
  <worldbody><body name="b" pos="0 0 1" euler="0 0 0.5"><joint name="j" range="-1 1"/>
    <geom size=".1"/><body name="c" pos="0 0 .5"><joint/><geom size=".1"/></body></body>
  </worldbody>
  <actuator><motor joint="j"/></actuator>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", """<mujoco>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody>
    <attach model="c" prefix="W"/>
    <frame euler="0 0 30" pos="1 0 0"><frame pos="0 1 0" euler="10 0 0">
      <attach model="c" body="b" prefix="W"/></frame></frame>
    <body name="p" pos="1 0 0">
      <attach model="c" body="b" prefix="A"/>
      <frame pos="0 0 2" euler="0 0 90"><attach model="c" body="b" prefix="A"/></frame>
      <geom size=".1"/>
      <frame pos="0 3 0"><attach model="c" body="b" prefix="A"/></frame>
    </body>
  </worldbody>
</mujoco>"""))
    assert arrays.names["body"] == ["world", "Wb", "Wc", "p", "Ab", "Ac"]
    assert len(arrays.actuator_trnid) == mjm.nu == 2  # (a move copies nothing)
    np.testing.assert_allclose(arrays.body_pos[4], [0, 3, 1])
    for body in ("Wc", "Wb"):
        path = _write(tmp_path, "bad.xml", f"""<mujoco>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody><attach model="c" prefix="W"/>
    <body name="q"><geom size=".1"/><attach model="c" body="{body[1:]}" prefix="W"/></body>
  </worldbody>
</mujoco>""")
        with pytest.raises(ValueError, match="mismatched parents"):
            mujoco.MjModel.from_xml_path(str(path))
        with pytest.raises(tiphys.ModelError, match=f"bad.xml:4.*Frame and body '{body}' "
                                                    f"have mismatched parents"):
            tiphys.load_model(str(path))


def test_short_parent_keyframes_are_padded_as_mujoco_pads_them(tmp_path):
    """A parent keyframe shorter than the model with attached elements: padded from
    the spec as written (free joints 0 0 0 1 0 0 0, ball joints 1 0 0 0, hinges and
    slides their ``ref`` unconverted, mocap bodies their ``pos``/``quat``), for the
    attached joints and mocap bodies and the parent's later ones alike; the child's
    own keyframes follow."""
    (tmp_path / "child.xml").write_text("""<mujoco>
  <worldbody><body name="b" pos="0 0 1" quat="0 1 0 0"><freejoint name="f"/><geom size=".1"/>
    <body name="c" pos=".2 0 0"><joint name="h" ref="0.3"/><geom size=".1" pos=".1 0 0"/>
      <body name="d" pos=".2 0 0"><joint name="s" type="slide" ref="0.2"/><geom size=".1"/>
        <body name="e" pos=".2 0 0"><joint name="ball" type="ball"/>
          <geom size=".1" pos=".1 .1 0"/></body></body></body></body>
    <body name="m" mocap="true" pos="1 2 3"><geom size=".1"/></body>
  </worldbody>
  <keyframe><key name="home" qpos="1 2 3 1 0 0 0 0.5 0.6 0 1 0 0" mpos="7 7 7"/></keyframe>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", """<mujoco>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody><body name="p"><joint name="pj" ref="0.1"/><geom size=".1"/></body>
    <attach model="c" body="b" prefix="A"/>
    <body name="late" pos="0 0 3"><joint name="lj" ref="0.4" type="slide"/><geom size=".1"/></body>
    <body name="pm" mocap="true" pos="4 4 4"><geom size=".1"/></body>
    <frame pos="1 1 1"><attach model="c" prefix="B"/></frame>
  </worldbody>
  <keyframe><key name="k" qpos="0.7 1 2 3"/>
    <key name="k3" qpos="0.7 1 2 3 1 0 0 0 .1 .2 1 0 0 0 .9" mpos="1 1 1 2 2 2"/></keyframe>
</mujoco>"""))
    assert arrays.names["key"] == ["k", "k3", "Ahome", "Bhome"]
    assert not np.allclose(arrays.key_qpos[0], arrays.qpos0)


def test_later_elements_take_the_classes_mujoco_gives_them(tmp_path):
    """After an <attach> whose classes take names the model has (the child's main with
    an empty prefix, "a" + "rm" against the model's "arm"), an element without
    ``class`` takes the newest class of its body's or frame's class name (the attached
    one: def_map), one with ``class`` the model's own (FindDefault), and the actuators
    the model's own main; elements before the attach keep the model's classes."""
    (tmp_path / "child.xml").write_text("""<mujoco model="c">
  <default>
    <geom type="sphere" size=".05" rgba="1 0 0 1"/><joint damping="3"/><motor gear="7"/>
    <default class="rm"><geom type="box" size=".1 .1 .1" rgba="0 1 0 1"/>
      <joint damping="5"/></default>
    <default class="only"><geom type="capsule" size=".02 .3" rgba="0 0 1 1"/></default>
  </default>
  <worldbody><body name="b"><joint name="cj"/><geom/><geom class="rm"/></body></worldbody>
  <actuator><motor joint="cj"/></actuator>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", """<mujoco>
  <default>
    <geom size=".3" rgba=".5 .5 .5 1"/><joint damping="1"/><motor gear="2"/>
    <default class="arm"><geom type="cylinder" size=".2 .4" rgba="1 1 0 1"/>
      <joint damping="9"/></default>
  </default>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody>
    <geom name="before"/>
    <body name="pre" childclass="arm"><joint name="pj0"/><geom name="pre_g"/></body>
    <attach model="c" body="b" prefix=""/>
    <attach model="c" body="b" prefix="a"/>
    <geom name="after_world"/>
    <geom name="after_explicit_arm" class="arm"/>
    <geom name="after_only" class="only"/>
    <body name="post" childclass="arm" pos="1 0 0"><joint name="pj"/><geom name="post_g"/>
      <body name="post2" pos="0 1 0"><joint name="pj2"/><geom name="post2_g"/></body></body>
    <frame childclass="arm" pos="0 0 1"><geom name="frame_g"/></frame>
    <body name="plain" pos="2 0 0"><joint name="pl"/><geom name="plain_g"/></body>
  </worldbody>
  <actuator><motor name="late" joint="pj"/><motor name="late_arm" joint="pj2" class="arm"/>
  </actuator>
</mujoco>"""))
    names = arrays.names["geom"]
    rgba = {n: tuple(arrays.geom_rgba[names.index(n)]) for n in
            ("before", "after_world", "after_explicit_arm", "post2_g", "plain_g")}
    assert rgba == {"before": (.5, .5, .5, 1), "after_world": (1, 0, 0, 1),
                    "after_explicit_arm": (1, 1, 0, 1), "post2_g": (0, 1, 0, 1),
                    "plain_g": (1, 0, 0, 1)}


def test_nested_attach_of_corpus_robots(tmp_path):
    """Published models composed two levels deep: robosuite's Panda arm and its gripper
    attached by one model, that model attached twice by a scene (126 meshes)."""
    root = os.path.join(corpus_dir(), "robosuite")
    if not os.path.isdir(root):
        pytest.skip("corpus not present")
    _write(tmp_path, "armgrip.xml", f"""<mujoco model="armgrip">
  <asset>
    <model name="panda" file="{root}/robots/panda/robot.xml"/>
    <model name="grip" file="{root}/grippers/panda_gripper.xml"/>
  </asset>
  <worldbody>
    <body name="mount" pos="0 0 0.9"><attach model="panda" body="base" prefix="arm_"/></body>
    <body name="tool" pos="0.5 0 1.2"><freejoint/>
      <attach model="grip" body="right_gripper" prefix="g_"/></body>
  </worldbody>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", """<mujoco model="scene">
  <asset><model name="ag" file="armgrip.xml"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1"/>
    <frame pos="1 0 0"><attach model="ag" prefix="L/"/></frame>
    <frame pos="-1 0 0" euler="0 0 180"><attach model="ag" prefix="R/"/></frame>
  </worldbody>
</mujoco>"""))
    assert mjm.nmesh == 126 and "R/g_gripper_finger_joint2" in arrays.names["actuator"]


def test_an_attach_naming_a_body_of_the_model_moves_it(tmp_path):
    """An <attach> whose prefixed body name is a body the model defined before (in
    the same body, directly or inside frames) copies nothing and gives that body its
    frame, as MuJoCo's reader does; one in another body is MuJoCo's "mismatched
    parents"; one defined after is a repeated name; a replicated body's copies have
    other names, so the model is attached."""
    (tmp_path / "child.xml").write_text("""<mujoco><compiler angle="radian"/>
  <worldbody><body name="b" pos="0 0 1"><joint name="j"/><geom size=".1"/></body>
  </worldbody>
  <actuator><motor joint="j"/></actuator>
</mujoco>""")
    arrays, mjm = _check(_write(tmp_path, "scene.xml", """<mujoco>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody>
    <body name="Ab" pos="0 0 1"><joint/><geom size=".1"/></body>
    <frame pos="1 0 0"><body name="Bb" pos="0 0 2" euler="0 0 30"><geom size=".1"/></body>
    </frame>
    <geom size=".2"/>
    <frame pos="0 3 0" euler="0 0 90"><attach model="c" body="b" prefix="A"/></frame>
    <attach model="c" body="b" prefix="B"/>
    <frame pos="5 0 0"><attach model="c" body="b" prefix="A"/></frame>
    <body name="p"><geom size=".1"/>
      <frame pos="0 0 .5"><body name="Cb"><geom size=".1"/></body></frame>
      <attach model="c" body="b" prefix="C"/></body>
    <replicate count="2" offset="1 0 0"><body name="Db"><geom size=".1"/></body></replicate>
    <attach model="c" body="b" prefix="D"/>
  </worldbody>
</mujoco>"""))
    assert arrays.names["body"] == ["world", "Ab", "Bb", "p", "Cb", "Db0", "Db1", "Db"]
    np.testing.assert_allclose(arrays.body_pos[1], [5, 0, 1])
    # the attach's frame gives a pose only: the moved body's geoms keep their class
    arrays, mjm = _check(_write(tmp_path, "cc.xml", """<mujoco>
  <default><geom size=".1"/><default class="X"><geom size=".3"/></default></default>
  <asset><model name="c" file="child.xml"/></asset>
  <worldbody><body name="Ab" pos="0 0 1"><geom name="g"/></body>
    <frame childclass="X" pos="1 0 0"><attach model="c" body="b" prefix="A"/></frame>
  </worldbody>
</mujoco>"""))
    assert arrays.geom_size[0, 0] == 0.1
    errors = {'<body name="Ab"><geom size=".1"/></body><body name="q"><geom size=".1"/>'
              '<attach model="c" body="b" prefix="A"/></body>':
                  "Frame and body 'Ab' have mismatched parents",
              '<attach model="c" body="b" prefix="A"/><body name="Ab"><geom size=".1"/>'
              '</body>': "repeated name 'Ab'"}
    for body, message in errors.items():
        path = _write(tmp_path, "bad.xml", '<mujoco><asset><model name="c" file="child.xml"/>'
                                           f'</asset><worldbody>{body}</worldbody></mujoco>')
        with pytest.raises(ValueError, match=message):
            mujoco.MjModel.from_xml_path(str(path))
        with pytest.raises(tiphys.ModelError, match=message):
            tiphys.load_model(str(path))
