"""<custom>: numeric, text and tuple fields compiled as MuJoCo 3.4.0 compiles them
(text_adr/size/data, tuple_adr/size/objtype/objid/objprm), and tuples naming objects
that do not exist rejected with MuJoCo's messages."""
import re

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

BODY = """
  <asset><texture name="tx" type="2d" builtin="checker" width="8" height="8"/>
    <material name="mat" texture="tx"/>
    <mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
  <worldbody>
    <body name="b1"><joint name="j1"/><geom name="g1" size=".1" material="mat"/>
      <site name="s1"/><camera name="c1"/></body>
    <body name="b2" pos="1 0 0"><freejoint name="free"/><geom name="g2" type="mesh" mesh="tet"/></body>
  </worldbody>
  <actuator><motor name="m1" joint="j1"/></actuator>
  <sensor><jointpos name="sn" joint="j1"/></sensor>
  <keyframe><key name="k0"/></keyframe>
"""


def _xml(custom: str, extra: str = "") -> str:
    return f"<mujoco>{BODY}{extra}<custom>{custom}</custom></mujoco>"


GOOD = _xml("""
    <numeric name="n1" data="1 2 3"/>
    <text name="t1" data="hello world"/>
    <text name="t2" data="x"/>
    <tuple name="tup1">
      <element objtype="body" objname="b2" prm="0.5"/>
      <element objtype="xbody" objname="b1"/>
      <element objtype="geom" objname="g2" prm="-3"/>
      <element objtype="joint" objname="free" prm="1e3"/>
      <element objtype="site" objname="s1"/>
      <element objtype="camera" objname="c1"/>
      <element objtype="actuator" objname="m1"/>
      <element objtype="sensor" objname="sn"/>
      <element objtype="mesh" objname="tet"/>
      <element objtype="material" objname="mat"/>
      <element objtype="texture" objname="tx"/>
      <element objtype="key" objname="k0"/>
      <element objtype="numeric" objname="n1"/>
      <element objtype="text" objname="t2"/>
    </tuple>
    <tuple name="tup2"><element objtype="tuple" objname="tup1" prm="2"/>
      <element objtype="body" objname="world"/></tuple>""")


def test_texts_and_tuples_match_mujoco():
    mjm = mujoco.MjModel.from_xml_string(GOOD)
    m = tiphys.load_model_from_string(GOOD)
    arrays = compile_spec(parse_xml(GOOD))
    for name in ("text_adr", "text_size", "tuple_adr", "tuple_size", "tuple_objtype",
                 "tuple_objid"):
        np.testing.assert_array_equal(getattr(m, name).to_numpy()[:len(getattr(mjm, name))],
                                      getattr(mjm, name), err_msg=name)
    np.testing.assert_array_equal(m.tuple_objprm.to_numpy()[:mjm.ntupledata], mjm.tuple_objprm)
    assert bytes(m.text_data.to_numpy()[:mjm.ntextdata].astype(np.uint8)) == mjm.text_data
    assert mjm.ntupledata == 16 and len(set(mjm.tuple_objtype)) == 15
    assert compare_model(arrays, mjm) == []


def test_discardvisual_keeps_a_geom_named_in_a_tuple():
    xml = GOOD.replace("<mujoco>", '<mujoco><compiler discardvisual="true"/>') \
        .replace('<geom name="g2" type="mesh" mesh="tet"/>',
                 '<geom name="g2" type="mesh" mesh="tet" contype="0" conaffinity="0"/>')
    xml = xml.replace('<element objtype="material" objname="mat"/>', "") \
        .replace('<element objtype="texture" objname="tx"/>', "")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    assert m.ngeom == mjm.ngeom == 2
    np.testing.assert_array_equal(m.tuple_objid.to_numpy()[:mjm.ntupledata], mjm.tuple_objid)


BAD = {
    "unknown name": ('<tuple name="t"><element objtype="body" objname="nope"/></tuple>',
                     "unrecognized object 'nope' in tuple 0"),
    "wrong type": ('<tuple name="t"><element objtype="geom" objname="b1"/></tuple>',
                   "unrecognized object 'b1' in tuple 0"),
    "dof has no names": ('<tuple name="t"><element objtype="dof" objname="j1"/></tuple>',
                         "unrecognized object 'j1' in tuple 0"),
    "second tuple": ('<tuple name="a"><element objtype="body" objname="b1"/></tuple>'
                     '<tuple name="t"><element objtype="site" objname="zz"/></tuple>',
                     "unrecognized object 'zz' in tuple 1"),
    "unknown type": ('<tuple name="t"><element objtype="bodie" objname="b1"/></tuple>',
                     "unknown object type"),
    "empty": ('<tuple name="t"/>', "tuple 't' (id = 0) is empty"),
    "two names in one": ('<tuple name="t"><element objtype="body" objname="b1 b2"/></tuple>',
                         "has object arrays with different sizes"),
    "no name": ('<tuple name="t"><element objtype="body" objname="b1"/>'
                '<element objtype="body" objname=" "/></tuple>',
                "has object arrays with different sizes"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_tuples_give_mujocos_error(case):
    custom, message = BAD[case]
    xml = _xml(custom)
    with pytest.raises(ValueError, match=re.escape(message)):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match=re.escape(message)) as ours:
        tiphys.load_model_from_string(xml)
    assert ours.value.line is not None and ours.value.element is not None


def test_put_model_keeps_texts_and_tuples():
    mjm = mujoco.MjModel.from_xml_string(GOOD)
    m = tiphys.put_model(mjm)
    assert bytes(m.text_data.to_numpy()[:mjm.ntextdata].astype(np.uint8)) == mjm.text_data
    np.testing.assert_array_equal(m.tuple_objid.to_numpy()[:mjm.ntupledata], mjm.tuple_objid)
