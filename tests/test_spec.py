"""The Spec: an editable element tree that round-trips to MJCF."""
import os

import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml
from tiphys.types import MODEL_FIELDS
from oracle import corpus_dir, corpus_models

MODELS = [m for m in corpus_models() if m.startswith(("gym/", "mjwarp/tendon", "mjwarp/mug"))]


@pytest.mark.parametrize("rel", MODELS)
def test_spec_round_trips_through_xml(rel):
    path = os.path.join(corpus_dir(), rel)
    spec = tiphys.load_spec(path)
    again = parse_xml(spec.to_xml(), filename=path)
    assert again.to_xml() == spec.to_xml()
    for a, b in zip(spec.root.iter(), again.root.iter()):
        assert a.tag == b.tag and dict(a.items()) == dict(b.items())


def test_spec_is_editable_and_recompiles():
    xml = """<mujoco><worldbody><body name="b" pos="0 0 1"><joint/>
             <geom name="g" size=".1"/></body></worldbody></mujoco>"""
    spec = parse_xml(xml)
    body = spec.root.first("worldbody").first("body")
    assert body.tag == "body" and body.pos == "0 0 1" and body.xml_line == 1
    body.set("pos", "1 2 3")
    geom = body.first("geom")
    geom.set("size", "0.5")
    arrays = compile_spec(spec)
    np.testing.assert_allclose(arrays.body_pos[1], [1, 2, 3])
    assert arrays.geom_size[0, 0] == 0.5
    with pytest.raises(AttributeError):
        geom.set("sizes", "1")
    assert [f[0] for f in MODEL_FIELDS if f[0] == "body_pos"]


def test_include_and_defaults_with_childclass():
    main = """<mujoco>
      <include file="defaults.xml"/>
      <worldbody>
        <body childclass="arm"><joint name="j1"/><geom name="g1" size=".1"/>
          <frame euler="0 0 90"><joint name="j2"/><geom name="g2" class="main" size=".1"/></frame>
        </body>
      </worldbody></mujoco>"""
    defaults = """<mujoco><default><geom rgba="1 0 0 1"/>
      <default class="arm"><joint axis="1 0 0" damping="2"/><geom rgba="0 1 0 1"/></default>
      </default></mujoco>"""
    import mujoco
    m = tiphys.load_model_from_string(main, assets={"defaults.xml": defaults.encode()})
    mjm = mujoco.MjModel.from_xml_string(main, {"defaults.xml": defaults.encode()})
    from oracle import compare_model
    assert not compare_model(m.arrays, mjm)
    np.testing.assert_allclose(m.arrays.geom_rgba, [[0, 1, 0, 1], [1, 0, 0, 1]])
    np.testing.assert_allclose(m.arrays.jnt_axis[1], [0, 1, 0], atol=1e-12)


def test_a_body_directly_under_mujoco_is_checked_then_ignored_as_in_mujoco():
    """MuJoCo's schema accepts <mujoco><body> (its worldbody entry is named "body") and
    its reader never reads it (gymnasium-robotics' fetch/robot.xml): the same model,
    with a warning saying so; a bad attribute in it is still an error, as in MuJoCo."""
    import mujoco
    import pytest
    import tiphys
    xml = ('<mujoco><body name="x"><geom size=".1"/></body><worldbody>'
           '<geom size=".2"/></worldbody></mujoco>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    with pytest.warns(UserWarning, match="directly under <mujoco> is ignored"):
        m = tiphys.load_model_from_string(xml)
    assert (m.nbody, m.ngeom) == (mjm.nbody, mjm.ngeom) == (1, 1)
    bad = xml.replace('name="x"', 'nme="x"')
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(bad)
    with pytest.raises(tiphys.ModelError, match="unknown attribute"):
        tiphys.load_model_from_string(bad)


def test_print_schema_is_mujocos():
    """print_schema prints the schema tiphys reads exactly as mj_printSchema prints
    MuJoCo 3.4.0's, as text and as both HTML forms."""
    import mujoco
    import tiphys
    for html, pad in ((False, False), (True, False), (True, True)):
        assert tiphys.print_schema(html, pad) == mujoco.mj_printSchema(html, pad), (html, pad)
