"""<equality> compiled against MuJoCo 3.4.0: every eq_* field (and the rest of the
model) for connect, weld, joint and tendon constraints in body and site forms, with
default classes, partial solref/solimp/polycoef, relpose given or computed at qpos0;
eq_active in Data; put_model."""
import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

EQUALITIES = """
<mujoco>
  <default>
    <equality solref=".03" solimp=".8 .9"/>
    <default class="soft">
      <equality active="false" solref="-200 -20" solimp=".5 .6 .01 .3 3"/>
    </default>
  </default>
  <worldbody>
    <site name="w0" pos=".1 .2 .3" quat="0 0 0 1"/>
    <body name="static" pos="0 0 1" euler="10 20 30"><geom size=".1"/></body>
    <body name="a" pos=".2 0 1" euler="0 30 0">
      <joint name="ha" axis="0 1 0" ref=".3"/>
      <geom size=".1" mass="2"/>
      <site name="sa" pos=".1 0 0" euler="20 0 0"/>
      <body name="a2" pos=".3 0 0">
        <joint name="sl" type="slide" axis="1 0 0" ref="-.1"/>
        <geom type="capsule" size=".05 .1"/>
      </body>
    </body>
    <body name="b" pos="-.3 .2 .8" quat="1 2 3 4">
      <freejoint/>
      <geom type="box" size=".1 .2 .3"/>
      <site name="sb" pos="0 .1 0"/>
    </body>
    <body name="c" pos=".5 .5 .5">
      <joint name="bc" type="ball"/>
      <geom size=".1"/>
      <body name="c2" pos="0 .2 0">
        <joint name="hc" axis="1 0 0"/>
        <geom type="box" size=".1 .05 .02"/>
      </body>
    </body>
    <body name="mocap" mocap="true" pos="1 1 1" euler="0 0 45"><geom size=".05"/></body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="ha" coef=".5"/><joint joint="sl" coef="-1"/></fixed>
    <fixed name="t2"><joint joint="hc" coef="2"/></fixed>
    <spatial name="t3"><site site="sa"/><site site="sb"/></spatial>
  </tendon>
  <equality>
    <connect name="c_body" body1="a" body2="b" anchor=".1 .2 .3"/>
    <connect body1="b" anchor="0 0 .1" solref=".05 .5"/>
    <connect name="c_site" site1="sa" site2="sb" class="soft"/>
    <weld name="w_body" body1="a2" body2="b" torquescale=".3"/>
    <weld body1="b" anchor=".1 0 0"/>
    <weld body1="c" body2="a" relpose=".1 .2 .3 1 1 0 0" active="true" class="soft"/>
    <weld body1="c" body2="a" relpose=".1 .2 .3 0 0 0 0" anchor="0 .1 0"/>
    <weld body1="mocap" body2="b" solimp=".95"/>
    <weld site1="w0" site2="sb" torquescale="2"/>
    <joint joint1="ha" joint2="sl" polycoef=".1 2"/>
    <joint joint1="hc" active="false"/>
    <tendon tendon1="t1" tendon2="t3" polycoef="0 1 0 0 .5"/>
    <tendon tendon1="t2"/>
  </equality>
</mujoco>
"""


def test_equality_fields_match_mujoco():
    arrays = compile_spec(parse_xml(EQUALITIES))
    mjm = mujoco.MjModel.from_xml_string(EQUALITIES)
    assert arrays.sizes["neq"] == mjm.neq == 13
    assert not compare_model(arrays, mjm, rtol=1e-12, atol=1e-12)
    # the forms are what the file says
    np.testing.assert_array_equal(arrays.eq_type, [0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(arrays.eq_objtype, [1, 1, 6, 1, 1, 1, 1, 1, 6, 0, 0, 0, 0])
    np.testing.assert_array_equal(arrays.eq_active0, mjm.eq_active0)
    assert arrays.names["equality"][:4] == ["c_body", "", "c_site", "w_body"]


def test_put_model_carries_equalities():
    mjm = mujoco.MjModel.from_xml_string(EQUALITIES)
    m = tiphys.put_model(mjm)
    ours = tiphys.load_model_from_string(EQUALITIES)
    for name in ("eq_type", "eq_obj1id", "eq_obj2id", "eq_objtype", "eq_active0",
                 "eq_solref", "eq_solimp", "eq_data"):
        np.testing.assert_allclose(getattr(m, name).to_numpy().reshape(-1),
                                   getattr(ours, name).to_numpy().reshape(-1), atol=1e-12,
                                   err_msg=name)
    assert tiphys.id2name(m, "equality", 3) == "w_body"


def test_eq_active_starts_from_eq_active0_and_resets():
    m = tiphys.load_model_from_string(EQUALITIES)
    mjm = mujoco.MjModel.from_xml_string(EQUALITIES)
    d = tiphys.make_data(m, 3)
    active = d.numpy("eq_active")
    assert active.shape == (3, mjm.neq)
    np.testing.assert_array_equal(active, np.tile(mjm.eq_active0, (3, 1)))
    flipped = 1 - active
    d.eq_active.from_numpy(flipped.astype(np.int32))
    tiphys.reset_data(m, d, world=1)
    np.testing.assert_array_equal(d.numpy("eq_active")[1], mjm.eq_active0)
    np.testing.assert_array_equal(d.numpy("eq_active")[0], flipped[0])


def test_flex_equality_names_an_unknown_flex_as_mujoco():
    # (flex equalities that compile are compared in tests/test_flex_compiler.py)
    xml = "<mujoco>\n  <equality>\n    <flex flex=\"f\"/>\n  </equality>\n</mujoco>"
    with pytest.raises(tiphys.ModelError, match=r"<string>:3: <flex>: flex: unknown element 'f' "
                                                r"in equality constraint"):
        compile_spec(parse_xml(xml))


def test_equality_default_njmax_counts_equality_rows():
    m = tiphys.load_model_from_string(EQUALITIES)
    d = tiphys.make_data(m, 1, nconmax=0)
    # 3 connects, 6 welds, 2 joint, 2 tendon couplings; the ball joint/limits: none
    assert d.njmax == 3 * 3 + 6 * 6 + 2 + 2
