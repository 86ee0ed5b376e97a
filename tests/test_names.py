"""names, names_map, name_*adr, paths and *_pathadr laid out as MuJoCo 3.4.0's
CopyNames and CopyPaths lay them out (the whole corpus is compared field by field in
test_compiler_corpus; these cover what the corpus does not)."""
import mujoco
import numpy as np
import pytest

from oracle import compare_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

XML = """<mujoco model="nämes">
  <compiler {compiler}/>
  <asset>
    <mesh name="tet" file="{mesh}"/>
    <hfield name="hf" nrow="3" ncol="3" size="1 1 .1 .1"/>
    <texture name="sky" type="skybox" builtin="gradient" width="8" height="8"/>
    <material name="m"/>
  </asset>
  <worldbody>
    <body name="körper"><freejoint/><geom type="mesh" mesh="tet"/><geom size=".1"/>
      <site name="s"/></body>
    <body><joint name="j" type="slide"/><geom name="ÿ" size=".1"/></body>
    <body name="a b"><joint/><geom size=".1" name="g ç"/></body>
    <geom type="hfield" hfield="hf"/>
  </worldbody>
  <actuator><motor joint="j" name="m1"/><motor joint="j"/></actuator>
  <keyframe><key name="home"/><key/></keyframe>
  <custom><numeric name="n" data="1"/><text name="t" data="x"/></custom>
</mujoco>"""

OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n"


@pytest.mark.parametrize("compiler,mesh", [("", "tet.obj"), ('strippath="true"', "sub/../sub/tet.obj"),
                                           ('meshdir="sub"', "tet.obj")])
def test_names_and_paths_match_mujoco(tmp_path, compiler, mesh):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "tet.obj").write_text(OBJ)
    (tmp_path / "tet.obj").write_text(OBJ)
    path = tmp_path / "model.xml"
    path.write_text(XML.format(compiler=compiler, mesh=mesh))
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(parse_xml(path.read_text(), basedir=str(tmp_path)))
    assert compare_model(arrays, mjm) == []
    assert arrays.names_buffer == mjm.names
    assert bytes(np.asarray(arrays.paths, dtype=np.uint8)) == mjm.paths
    # names_map finds each named object as mj_name2id does
    for obj, field, kind in ((mujoco.mjtObj.mjOBJ_BODY, "name_bodyadr", "body"),
                             (mujoco.mjtObj.mjOBJ_GEOM, "name_geomadr", "geom")):
        for i, name in enumerate(arrays.names[kind]):
            if name:
                assert mujoco.mj_name2id(mjm, obj, name) == i


def test_hash_is_mujocos_on_signed_chars():
    """mj_hashString reads chars as signed: UTF-8 bytes above 127 are negative."""
    xml = "<mujoco><worldbody>" + "".join(
        f'<body name="{n}"><geom size=".1"/></body>' for n in
        ("ä", "ÿÿ", "日本", "a", "zz", "\u00e9t\u00e9", "x y")) + "</worldbody></mujoco>"
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    np.testing.assert_array_equal(arrays.names_map, mjm.names_map)
