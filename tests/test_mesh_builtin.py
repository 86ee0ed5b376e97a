"""<mesh builtin="..." params="...">: every builtin of MuJoCo 3.4.0 (sphere,
hemisphere, supersphere, supertorus, cone, wedge, plate) compiled field by field as
MuJoCo compiles it, with MuJoCo's errors for bad parameters."""
import re

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

CASES = [("sphere", "0"), ("sphere", "2"), ("sphere", "4"), ("hemisphere", "0"),
         ("hemisphere", "4"), ("hemisphere", "10"), ("supersphere", "8 0.5 1.5"),
         ("supersphere", "3 1 1"), ("supersphere", "12 2 0"), ("supertorus", "8 0.3 1 1"),
         ("supertorus", "5 1 0.5 2"), ("cone", "6 0.5"), ("cone", "5 0"), ("cone", "32 2"),
         ("wedge", "3 4 60 40 0.2"), ("wedge", "5 2 180 10 1"), ("plate", "3 4"),
         ("plate", "2 2")]


def _xml(mesh_attrs: str, collide: bool = True, extra: str = "") -> str:
    geom = '' if collide else ' contype="0" conaffinity="0"'
    return (f'<mujoco><asset><mesh name="m" {mesh_attrs}/></asset><worldbody>'
            f'<body><freejoint/><geom type="mesh" mesh="m"{geom}/>{extra}</body>'
            f'</worldbody></mujoco>')


@pytest.mark.parametrize("kind,params", CASES)
def test_builtin_mesh_compiles_as_in_mujoco(kind, params):
    """Vertices (single precision, as MuJoCo stores them), faces, normals, the hull,
    polygons, inertia and every other field; flat ones (plate) drawn, not colliding."""
    collide = kind != "plate"
    xml = _xml(f'builtin="{kind}" params="{params}" scale=".1 .2 .3" refpos=".1 0 0"',
               collide)
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    assert compare_model(arrays, mjm) == []
    assert mjm.nmeshvert > 0
    for name in ("mesh_vert", "mesh_normal", "mesh_face", "mesh_facenormal",
                 "mesh_polyvert"):  # bit for bit
        np.testing.assert_array_equal(np.asarray(getattr(arrays, name)).reshape(-1),
                                      getattr(mjm, name).reshape(-1), err_msg=name)


def test_plate_forces_shell_inertia_and_steps():
    """A plate's inertia is shell whatever the attribute says (MuJoCo sets it in
    mjs_makeMesh); a default class gives the rest; builtin is not a default attribute."""
    xml = ('<mujoco><default><mesh scale="2 1 1"/></default>'
           '<asset><mesh name="m" builtin="supertorus" params="6 .5 1 1"/>'
           '<mesh name="p" builtin="plate" params="2 3" inertia="convex"/></asset>'
           '<worldbody><body><freejoint/><geom type="mesh" mesh="m"/><geom type="mesh" '
           'mesh="p" contype="0" conaffinity="0"/></body></worldbody></mujoco>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert compare_model(compile_spec(parse_xml(xml)), mjm) == []
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 2)
    tiphys.step(m, d)
    bad = xml.replace('<mesh scale="2 1 1"/>', '<mesh builtin="sphere"/>')
    with pytest.raises(ValueError, match="builtin"):
        mujoco.MjModel.from_xml_string(bad)
    with pytest.raises(tiphys.ModelError, match="builtin"):
        tiphys.load_model_from_string(bad)


BAD = {
    "sphere params": ('builtin="sphere" params="1 2"', "Sphere mesh type requires 1 parameter"),
    "sphere negative": ('builtin="sphere" params="-1"', "Sphere subdivision cannot be negative"),
    "sphere too fine": ('builtin="sphere" params="5"',
                        "Sphere subdivision cannot be greater than 4"),
    "hemisphere too fine": ('builtin="hemisphere" params="11"',
                            "Hemisphere resolution cannot be greater than 10"),
    "hemisphere negative": ('builtin="hemisphere" params="-2"',
                            "Hemisphere resolution cannot be negative"),
    "supersphere count": ('builtin="supersphere" params="3 1"',
                          "Supersphere mesh type requires 3 parameters"),
    "supersphere res": ('builtin="supersphere" params="2 1 1"',
                        "Supersphere resolution must be greater than 2"),
    "supersphere e": ('builtin="supersphere" params="4 -1 1"',
                      "Supersphere 'e' cannot be negative"),
    "supersphere n": ('builtin="supersphere" params="4 1 -1"',
                      "Supersphere 'n' cannot be negative"),
    "supertorus radius": ('builtin="supertorus" params="4 1.5 1 1"',
                          "Supertorus radius must be in (0, 1]"),
    "supertorus res": ('builtin="supertorus" params="2 .5 1 1"',
                       "Supertorus resolution must be greater than 3"),
    "supertorus s": ('builtin="supertorus" params="4 .5 0 1"',
                     "Supertorus 's' must be greater than 0"),
    "supertorus t": ('builtin="supertorus" params="4 .5 1 -1"',
                     "Supertorus 't' must be greater than 0"),
    "wedge count": ('builtin="wedge" params="3 4 60 40"',
                    "Wedge builtin mesh types require 5 parameters"),
    "wedge fov": ('builtin="wedge" params="3 4 181 40 0"',
                  "fov[0] must be a float between (0, 180] degrees"),
    "wedge fov 1": ('builtin="wedge" params="3 4 60 91 0"',
                    "`fov[1]` must be a float between (0, 90] degrees"),
    "wedge size": ('builtin="wedge" params="0 4 60 40 0"',
                   "Horizontal and vertical resolutions must be positive"),
    "wedge gamma": ('builtin="wedge" params="3 4 60 40 2"',
                    "`gamma` must be a nonnegative float between [0, 1]"),
    "plate count": ('builtin="plate" params="3"', "Plate builtin mesh type requires 2 parameters"),
    "plate size": ('builtin="plate" params="3 -1"',
                   "Horizontal and vertical resolutions must be positive"),
    "cone count": ('builtin="cone" params="3"', "Cone mesh type requires 2 parameters"),
    "none": ('builtin="none" params="1"', "Unsupported mesh type"),
    "with vertices": ('builtin="sphere" params="1" vertex="0 0 0 1 0 0 0 1 0 0 0 1"',
                      "builtin mesh cannot be used with user vertex data"),
    "with a file": ('builtin="sphere" params="1" file="x.obj"',
                    "builtin cannot be used with a mesh file"),
    "unknown builtin": ('builtin="cube" params="1"', "invalid keyword"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_builtin_gives_mujocos_error(case):
    attrs, message = BAD[case]
    xml = _xml(attrs)
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_string(xml)
    if case != "unknown builtin":  # MuJoCo: "invalid keyword: 'cube'"
        assert message in str(theirs.value), str(theirs.value)
    with pytest.raises(tiphys.ModelError, match=re.escape(message)) as ours:
        tiphys.load_model_from_string(xml)
    assert ours.value.line is not None and ours.value.element == "mesh"


def test_missing_params_is_an_error():
    xml = _xml('builtin="sphere"')
    with pytest.raises(ValueError, match="params"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="required attribute missing") as ours:
        tiphys.load_model_from_string(xml)
    assert ours.value.attribute == "params"
