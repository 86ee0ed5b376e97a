"""<body sleep> and tree_sleep_policy compiled as MuJoCo 3.4.0 compiles them (the
user's policy on movable root bodies, then setFixed's automatic choice), with its
errors; sleeping itself is tests/test_sleep.py."""
import re

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

TWO = ('<body name="a" sleep="{s}"><freejoint/><geom size=".1"/><site name="s1"/>'
       '<body name="c"{cs}><joint name="hc"/><geom size=".1"/></body></body>'
       '<body name="b" pos="1 0 0"><joint name="h"/><geom size=".1"/><site name="s2"/></body>'
       '<body name="d" pos="2 0 0"><freejoint/><geom size=".1"/><site name="s3"/></body>')


def _xml(s="auto", cs="", extra=""):
    return f"<mujoco><worldbody>{TWO.format(s=s, cs=cs)}</worldbody>{extra}</mujoco>"


GOOD = {
    "auto": _xml(),
    "never": _xml("never"),
    "init and a motor": _xml("init", extra='<actuator><motor joint="h"/></actuator>'),
    "allowed, motor on its child": _xml("allowed", extra='<actuator><motor joint="hc"/></actuator>'),
    "site actuator": _xml(extra='<actuator><motor site="s3" gear="1 0 0 0 0 0"/></actuator>'),
    "body actuator": _xml(extra='<actuator><adhesion body="d" ctrlrange="0 1"/></actuator>'),
    "actuated tendon": _xml(extra='<tendon><spatial name="t"><site site="s1"/><site site="s2"/>'
                                  '</spatial></tendon><actuator><motor tendon="t"/></actuator>'),
    "springy tendon": _xml(extra='<tendon><spatial stiffness="3"><site site="s2"/>'
                                 '<site site="s3"/></spatial></tendon>'),
    "slack tendon on two trees": _xml(extra='<tendon><spatial><site site="s2"/>'
                                            '<site site="s3"/></spatial></tendon>'),
    "tendon on three trees": _xml(extra='<tendon><spatial><site site="s1"/><site site="s2"/>'
                                        '<site site="s3"/></spatial></tendon>'),
    "fixed tendon": _xml(extra='<tendon><fixed damping="1"><joint joint="h" coef="1"/>'
                              '<joint joint="hc" coef="1"/></fixed></tendon>'),
}


@pytest.mark.parametrize("case", sorted(GOOD))
def test_tree_sleep_policy_matches_mujoco(case):
    xml = GOOD[case]
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    np.testing.assert_array_equal(arrays.tree_sleep_policy, mjm.tree_sleep_policy)
    assert compare_model(arrays, mjm) == []


def test_flex_trees_never_sleep():
    xml = ('<mujoco><worldbody><body name="a"><freejoint/><geom size=".1"/></body>'
           '<flexcomp name="rope" type="grid" count="4 1 1" spacing=".1 .1 .1" '
           'dim="1"><edge equality="true"/></flexcomp></worldbody></mujoco>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    assert 1 in list(mjm.tree_sleep_policy)
    np.testing.assert_array_equal(arrays.tree_sleep_policy, mjm.tree_sleep_policy)


BAD = {
    "child body": (_xml(cs=' sleep="never"'), "sleep policy only allowed for movable root bodies"),
    "static body": ('<mujoco><worldbody><body sleep="never"><geom size=".1"/></body>'
                    '</worldbody></mujoco>', "sleep policy only allowed for movable root bodies"),
    "unknown word": (_xml("bogus"), "invalid keyword"),
    "springy tendon on an allowed tree": (
        _xml("allowed", extra='<tendon><spatial stiffness="1"><site site="s1"/>'
                              '<site site="s2"/></spatial></tendon>'),
        "tree 0 connected to tendon 0 with non-zero stiffness or damping, sleeping not allowed"),
    "three trees and init": (
        _xml("init", extra='<tendon><spatial><site site="s1"/><site site="s2"/>'
                           '<site site="s3"/></spatial></tendon>'),
        "tree 0 connected to tendon 0 which spans more than 2 trees, sleeping not allowed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_sleep_policy_gives_mujocos_error(case):
    xml, message = BAD[case]
    with pytest.raises(ValueError, match=re.escape(message)):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match=re.escape(message)) as ours:
        tiphys.load_model_from_string(xml)
    assert ours.value.line is not None


def test_a_model_with_body_sleep_steps_with_the_flag_off():
    """MuJoCo ignores the policy while <flag sleep> is off; so does tiphys."""
    m = tiphys.load_model_from_string(_xml("init"))
    d = tiphys.make_data(m, 2)
    tiphys.step(m, d)
