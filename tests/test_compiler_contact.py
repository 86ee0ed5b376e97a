"""The <contact> section (<pair>, <exclude>) compiled against MuJoCo 3.4.0, and bad input."""
import mujoco
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from oracle import compare_model

MODEL = """
<mujoco>
  <compiler discardvisual="{discard}"/>
  <default>
    <pair friction="0.5 0.4 0.01"/>
    <default class="soft"><pair condim="6" solref="0.05 0.8" solimp="0.8 0.9 0.01"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom name="ga" size=".1"/>
      <geom name="ga2" type="box" size=".1 .1 .1" pos=".2 0 0"/>
      <body name="b" pos="0 0 .3">
        <joint/>
        <geom name="gb" type="capsule" size=".1 .2"/>
      </body>
    </body>
    <body name="c" pos="1 0 1">
      <freejoint/>
      <geom name="gc" type="box" size=".1 .1 .1" contype="0" conaffinity="0"/>
    </body>
    <body name="d" pos="2 0 1"><freejoint/><geom name="gd" size=".1"/></body>
  </worldbody>
  <contact>
    <pair geom1="gc" geom2="ga" margin="0.01" gap="0.005" solref="-100 -5"/>
    <pair name="p2" class="soft" geom1="gb" geom2="floor" solreffriction="0.03 1"/>
    <pair geom1="gd" geom2="gc" condim="1" friction="1 2 3 4 5"/>
    <pair name="late" geom1="floor" geom2="ga2" condim="4"/>
    <exclude body1="d" body2="a"/>
    <exclude name="e2" body1="world" body2="b"/>
    <exclude body1="c" body2="a"/>
  </contact>
</mujoco>
"""


@pytest.mark.parametrize("discard", ["false", "true"])
def test_pairs_and_excludes_match_mujoco(discard):
    xml = MODEL.format(discard=discard)
    arrays = compile_spec(tiphys.parse_xml(xml))
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert compare_model(arrays, mjm) == []
    assert arrays.sizes["npair"] == 4 and arrays.sizes["nexclude"] == 3
    # sorted by signature, geom1 on the lower body
    assert list(arrays.pair_signature) == sorted(arrays.pair_signature)
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_PAIR, i) or "" for i in range(4)]
    assert arrays.names["pair"] == names
    m = tiphys.load_model_from_string(xml)
    assert tiphys.name2id(m, "pair", "late") == mujoco.mj_name2id(
        mjm, mujoco.mjtObj.mjOBJ_PAIR, "late")
    assert tiphys.name2id(m, "exclude", "e2") == mujoco.mj_name2id(
        mjm, mujoco.mjtObj.mjOBJ_EXCLUDE, "e2")


def test_discardvisual_keeps_pair_geoms():
    xml = """<mujoco><compiler discardvisual="true"/><worldbody>
      <geom name="floor" type="plane" size="1 1 .1"/>
      <body><freejoint/><geom name="vis" size=".1" contype="0" conaffinity="0"/>
        <geom name="drop" size=".05" contype="0" conaffinity="0"/></body>
    </worldbody><contact><pair geom1="vis" geom2="floor"/></contact></mujoco>"""
    arrays = compile_spec(tiphys.parse_xml(xml))
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert arrays.sizes["ngeom"] == mjm.ngeom == 2
    assert compare_model(arrays, mjm) == []


BAD = [
    ('<pair geom1="nope" geom2="ga"/>', "geom1", "unknown geom 'nope'"),
    ('<pair geom1="ga" geom2="nope"/>', "geom2", "unknown geom 'nope'"),
    ('<pair geom2="ga"/>', "geom1", "two geoms"),
    ('<pair geom1="ga" geom2="floor" condim="2"/>', "condim", "invalid condim"),
    ('<pair geom1="ga" geom2="floor" friction="1 x"/>', "friction", ""),
    ('<pair geom1="ga" geom2="floor" solimp="1 2 3 4 5 6"/>', "solimp", ""),
    ('<pair geom1="ga" geom2="floor" class="missing"/>', "class", "unknown default class"),
    ('<exclude body1="a" body2="zz"/>', "body2", "unknown body 'zz'"),
    ('<exclude body1="a"/>', "body2", "two bodies"),
]


@pytest.mark.parametrize("snippet,attr,message", BAD)
def test_bad_contact_input(snippet, attr, message):
    xml = f"""<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
      <body name="a"><freejoint/><geom name="ga" size=".1"/></body></worldbody>
      <contact>
        {snippet}
      </contact></mujoco>"""
    with pytest.raises(tiphys.ModelError) as exc:
        tiphys.load_model_from_string(xml)
    err = exc.value
    assert err.line == 4 and err.attribute == attr
    assert message in str(err)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)  # MuJoCo rejects it too
