"""<skin> against MuJoCo 3.4.0: skins compiled field by field (inline data, SKN
files, <asset> and <deformable> skins, the skin MuJoCo gives a box cable, materials,
fusestatic, discardvisual, the dog of dm_control), and bad input with MuJoCo's
messages, located at the element."""
import os
import struct

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from tiphys.errors import ModelError
from oracle import compare_model, corpus_dir

SKIN_FIELDS = [name for name in dir(mujoco.MjModel) if name.startswith("skin_")
               and name != "skin_pathadr"]
SKIN_SIZES = ("nskin", "nskinvert", "nskintexvert", "nskinface", "nskinbone",
              "nskinbonevert")

# a box of 8 vertices over two bodies joined by a hinge: each vertex weighted on both
# bones (weights not normalized, one vertex listed twice in a bone)
BOX_VERT = "-.1 -.1 0  .1 -.1 0  .1 .1 0  -.1 .1 0  -.1 -.1 .4  .1 -.1 .4  .1 .1 .4  -.1 .1 .4"
BOX_FACE = ("0 2 1  0 3 2  4 5 6  4 6 7  0 1 5  0 5 4  1 2 6  1 6 5  2 3 7  2 7 6  "
            "3 0 4  3 4 7")
BOX_TEX = "0 0  1 0  1 1  0 1  0 0  1 0  1 1  0 1"


def skn(vert, face, bones, texcoord=()) -> bytes:
    """SKN bytes: ``bones`` is a list of (body, bindpos, bindquat, vertid, vertweight)."""
    nvert, ntex, nface = len(vert) // 3, len(texcoord) // 2, len(face) // 3
    out = struct.pack("<4i", nvert, ntex, nface, len(bones))
    out += struct.pack(f"<{len(vert)}f", *vert) + struct.pack(f"<{len(texcoord)}f", *texcoord)
    out += struct.pack(f"<{len(face)}i", *face)
    for body, pos, quat, vid, vw in bones:
        out += body.encode().ljust(40, b"\0") + struct.pack("<7f", *pos, *quat)
        out += struct.pack("<i", len(vid)) + struct.pack(f"<{len(vid)}i", *vid)
        out += struct.pack(f"<{len(vw)}f", *vw)
    return out


def box_skn() -> bytes:
    vert = [float(v) for v in BOX_VERT.split()]
    face = [int(v) for v in BOX_FACE.split()]
    return skn(vert, face, [
        ("lower", (0, 0, 0), (1, 0, 0, 0), [0, 1, 2, 3, 4, 5, 6, 7],
         [1, 1, 1, 1, .25, .25, .25, .25]),
        ("upper", (0, 0, -.2), (0.9, 0.1, 0, 0), [4, 5, 6, 7, 0], [.75, .75, .75, .75, .5])])


def two_body(skins: str, asset: str = "", deformable: str = "", compiler: str = "") -> str:
    return f"""<mujoco>
  <compiler {compiler}/>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="8" height="8"/>
    <material name="mat" texture="grid" rgba=".8 .7 .6 1"/>
    {asset}
    {skins}
  </asset>
  <deformable>{deformable}</deformable>
  <worldbody>
    <body name="lower" pos="0 0 .1">
      <freejoint/>
      <geom type="box" size=".1 .1 .1"/>
      <body name="upper" pos="0 0 .2">
        <joint name="hinge" axis="1 0 0"/>
        <geom type="capsule" size=".05" fromto="0 0 0 0 0 .2"/>
      </body>
    </body>
    <body name="fixed" pos="1 0 0"><geom size=".1"/></body>
  </worldbody>
</mujoco>"""


INLINE = f"""<skin name="inline" material="mat" rgba=".1 .2 .3 .4" inflate=".01" group="2"
      vertex="{BOX_VERT}" face="{BOX_FACE}" texcoord="{BOX_TEX}">
      <bone body="lower" bindpos="0 0 -.1" bindquat="2 0 0 0" vertid="0 1 2 3 4 5 6 7 7"
            vertweight="3 3 3 3 1 1 1 1 .5"/>
      <bone body="upper" bindpos="0 0 -.3" bindquat=".7 .7 .1 0" vertid="4 5 6 7 0 1 2 3"
            vertweight="2 2 2 2 .5 .5 .5 .5"/>
    </skin>"""
DEFORMABLE = f"""<skin vertex="{BOX_VERT}" face="{BOX_FACE}" rgba="1 0 0 1">
      <bone body="world" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2 3 4 5 6 7"
            vertweight="1 1 1 1 1 1 1 1"/>
      <bone body="fixed" bindpos="1 0 0" bindquat="1 0 0 0" vertid="0 1 2 3"
            vertweight="1 1 1 1"/>
    </skin>"""


def posed_worlds(mjm, m, nworld: int, seed: int):
    """MuJoCo's MjData and a tiphys Data of ``nworld`` worlds in the same random poses
    of two_body's model (the free body moved and turned, the hinge bent), after
    MuJoCo's forward and tiphys's fwd_kinematics (all that skins and the renderer
    read)."""
    d = tiphys.make_data(m, nworld)
    rng = np.random.default_rng(seed)
    mjds = []
    for _ in range(nworld):
        mjd = mujoco.MjData(mjm)
        quat = rng.normal(size=4)
        mjd.qpos[:] = [*rng.uniform(-.2, .2, 3), *(quat / np.linalg.norm(quat)),
                       rng.uniform(-1, 1)]
        mujoco.mj_forward(mjm, mjd)
        mjds.append(mjd)
    d.qpos.from_numpy(np.stack([x.qpos for x in mjds]))
    tiphys.fwd_kinematics(m, d)
    return mjds, d


def _write(tmp_path, xml, files=None):
    for name, data in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    path = tmp_path / "model.xml"
    path.write_text(xml)
    return str(path)


def _both(path):
    return compile_spec(tiphys.load_spec(path)), mujoco.MjModel.from_xml_path(path)


def _check_same(arrays, mjm):
    for name in SKIN_FIELDS:  # exactly
        theirs = np.asarray(getattr(mjm, name))
        np.testing.assert_array_equal(np.asarray(getattr(arrays, name)).reshape(theirs.shape),
                                      theirs, err_msg=name)
    for name in SKIN_SIZES:
        assert arrays.sizes[name] == getattr(mjm, name), name
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_SKIN, i) or ""
             for i in range(mjm.nskin)]
    assert arrays.names["skin"] == names
    # and every other field too, at the usual tolerance
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)


def test_skin_fields_are_every_mjmodel_skin_field():
    table = {f[0] for f in tiphys.types.MODEL_FIELDS}
    assert set(SKIN_FIELDS) <= table
    assert set(SKIN_SIZES) <= set(tiphys.types.MODEL_SIZES)


def test_inline_file_and_deformable_skins_match_mujoco(tmp_path):
    path = _write(tmp_path, two_body(
        INLINE + '<skin file="box.skn" rgba="0 1 0 1"/>', deformable=DEFORMABLE,
        compiler='meshdir="meshes"'), {"meshes/box.skn": box_skn()})
    arrays, mjm = _both(path)
    assert mjm.nskin == 3 and arrays.names["skin"] == ["inline", "box", ""]
    _check_same(arrays, mjm)
    # the weights are normalized per vertex, in float32 as MuJoCo does
    w = arrays.skin_bonevertweight
    assert w.dtype == np.float64 and np.all(w == w.astype(np.float32))


def test_skin_with_texcoord_in_file_and_no_material(tmp_path):
    vert = [float(v) for v in BOX_VERT.split()]
    face = [int(v) for v in BOX_FACE.split()]
    tex = [float(v) for v in BOX_TEX.split()]
    data = skn(vert, face, [("upper", (0, 0, 0), (0, 0, 0, 0), list(range(8)), [1] * 8)],
               tex)
    path = _write(tmp_path, two_body('<skin name="t" file="t.skn" inflate="-.02"/>'),
                  {"t.skn": data})
    arrays, mjm = _both(path)
    assert mjm.skin_texcoordadr[0] == 0 and mjm.skin_matid[0] == -1
    _check_same(arrays, mjm)


@pytest.mark.parametrize("compiler", ['fusestatic="true"', 'strippath="true"'])
def test_skin_with_compiler_options_matches_mujoco(tmp_path, compiler):
    # fusestatic keeps the bodies a skin's <bone> names; discardvisual keeps skins but
    # drops their material; strippath looks for the file name alone in meshdir
    path = _write(tmp_path, two_body(INLINE + '<skin file="sub/box.skn"/>',
                                     deformable=DEFORMABLE,
                                     compiler=compiler + ' meshdir="m"'),
                  {"m/sub/box.skn": box_skn(), "m/box.skn": box_skn()})
    arrays, mjm = _both(path)
    _check_same(arrays, mjm)


def test_discardvisual_keeps_skins_without_their_material(tmp_path):
    path = _write(tmp_path, two_body(INLINE.replace('material="mat"', ""),
                                     deformable=DEFORMABLE,
                                     compiler='discardvisual="true"'))
    arrays, mjm = _both(path)
    _check_same(arrays, mjm)


def test_discardvisual_with_a_skin_material_is_rejected_like_mujoco(tmp_path):
    path = _write(tmp_path, two_body(INLINE, compiler='discardvisual="true"'))
    with pytest.raises(ValueError, match="object not found"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match="object not found") as exc:
        compile_spec(tiphys.load_spec(path))
    assert exc.value.element == "skin" and exc.value.attribute == "material"


def _box_cable(attrs="", skin="", prefix="c", count=6, compiler=""):
    return f"""<mujoco><compiler {compiler}/>
  <asset><material name="m" rgba="1 0 0 1"/></asset>
  <worldbody>
    <composite type="cable" prefix="{prefix}" curve="s" count="{count} 1 1" size="1"
               offset="0 0 .5" {attrs}>
      <geom type="box" size=".02 .05 .01"/>{skin}
    </composite>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("case", [
    dict(), dict(skin='<skin material="m" rgba=".1 .2 .3 1" group="2" texcoord="true"/>'),
    dict(skin='<skin inflate=".5"/>', attrs='initial="none"', compiler='fusestatic="true"'),
    dict(count=4, prefix="", skin='<skin texcoord="true"/>', attrs='initial="none"',
         compiler='fusestatic="true"'),
    # subdivided: bicubic bone weights
    dict(count=4, skin='<skin subgrid="1"/>'),
    dict(count=5, skin='<skin subgrid="2" texcoord="true" material="m"/>'),
    dict(count=8, skin='<skin subgrid="3" group="1"/>')])
def test_box_cable_skin_matches_mujoco(tmp_path, case):
    path = _write(tmp_path, _box_cable(**case))
    arrays, mjm = _both(path)
    assert mjm.nskin == 1
    _check_same(arrays, mjm)


@pytest.mark.parametrize("count, message", [
    (2, "unknown body 'cB_last' in skin"),  # one body: B_first, bones name B_last too
    (3, "body 'cB_1' not found in bodypair 0")])  # (every 3-vertex cable)
def test_short_box_cables_are_rejected_like_mujoco(tmp_path, count, message):
    path = _write(tmp_path, _box_cable(count=count))
    with pytest.raises(ValueError, match=message):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match=message):
        compile_spec(tiphys.load_spec(path))


def test_box_cable_skin_comes_after_the_model_skins(tmp_path):
    xml = two_body(INLINE, deformable=DEFORMABLE).replace(
        "<worldbody>", """<worldbody>
    <composite type="cable" prefix="k" curve="s" count="4 1 1" size=".5" offset="0 1 1">
      <geom type="box" size=".02 .05 .01"/></composite>""")
    arrays, mjm = _both(_write(tmp_path, xml))
    assert arrays.names["skin"] == ["inline", "", "kSkin"]
    _check_same(arrays, mjm)


def test_dog_skin_matches_mujoco():
    path = os.path.join(corpus_dir(), "dmc", "dog.xml")
    if not os.path.exists(path):
        pytest.skip("corpus not fetched (make corpus)")
    arrays, mjm = _both(path)
    assert mjm.nskin == 1 and mjm.nskinbone == 57
    _check_same(arrays, mjm)


def test_put_model_takes_skins():
    mjm = mujoco.MjModel.from_xml_string(two_body(INLINE, deformable=DEFORMABLE))
    m = tiphys.put_model(mjm)
    ours = tiphys.load_model_from_string(two_body(INLINE, deformable=DEFORMABLE))
    for name in SKIN_FIELDS:
        np.testing.assert_array_equal(getattr(m, name).to_numpy(),
                                      getattr(ours, name).to_numpy(), err_msg=name)
    assert tiphys.name2id(m, "skin", "inline") == 0


# -- bad input ------------------------------------------------------------------------

def _bone(body="lower", vertid="0 1 2 3 4 5 6 7", vertweight="1 1 1 1 1 1 1 1",
          extra=""):
    return (f'<bone body="{body}" bindpos="0 0 0" bindquat="1 0 0 0" vertid="{vertid}" '
            f'vertweight="{vertweight}" {extra}/>')


def _skin(bones=None, vertex=BOX_VERT, face=BOX_FACE, attrs=""):
    bones = _bone() if bones is None else bones
    v = f'vertex="{vertex}"' if vertex is not None else ""
    f = f'face="{face}"' if face is not None else ""
    return f'<skin name="bad" {v} {f} {attrs}>\n      {bones}</skin>'


BAD = {
    "vertid out of range": (_skin(_bone(vertid="0 1 2 3 4 5 6 8")),
                            "vertid 8 out of range in skin", "vertid"),
    "negative vertid": (_skin(_bone(vertid="0 1 2 3 4 5 6 -1")),
                        "vertid -1 out of range in skin", "vertid"),
    "zero total weight": (_skin(_bone(vertweight="1 1 1 1 1 1 1 0")),
                          "vertex 7 must have positive total weight in skin", None),
    "vertex without bone": (_skin(_bone(vertid="0 1 2 3 4 5 6", vertweight="1 1 1 1 1 1 1")),
                            "vertex 7 must have positive total weight in skin", None),
    "weights and ids differ": (_skin(_bone(vertweight="1 1 1")),
                               "vertid and vertweight must have same non-zero size in skin",
                               "vertweight"),
    "no bones": (_skin(""), "Missing data in skin", None),
    "no faces": (_skin(face=None), "Missing data in skin", None),
    "vertices not triples": (_skin(vertex="0 0 0 1"), "Vertex data must be multiple of 3",
                             "vertex"),
    "faces not triples": (_skin(face="0 1 2 3"), "Face data must be multiple of 3", "face"),
    "texcoord size": (_skin(attrs='texcoord="0 0 1 1"'),
                      "Vertex and texcoord data incompatible size", "texcoord"),
    "unknown body": (_skin(_bone(body="nobody")), "unknown body 'nobody' in skin", "body"),
    "unknown body and material": (_skin(_bone(body="nobody"), attrs='material="nomat"'),
                                  "material 'nomat' not found in skin 0", "material"),
    "unknown material": (_skin(attrs='material="nomat"'),
                         "material 'nomat' not found in skin 0", "material"),
    "group": (_skin(attrs='group="6"'), "skin group must be between 0 and 5", "group"),
    "file and data": (_skin(attrs='file="box.skn"'),
                      "Both skin data and file were specified: box.skn", "file"),
    "file type": ('<skin file="box.obj"/>', "Unknown skin file type: box.obj", "file"),
    "missing bone body": (_skin('<bone bindpos="0 0 0" bindquat="1 0 0 0" vertid="0" '
                                'vertweight="1"/>'), "missing required attribute", "body"),
    "missing bindquat": (_skin('<bone body="lower" bindpos="0 0 0" vertid="0" '
                               'vertweight="1"/>'), "missing required attribute", "bindquat"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_skin_is_rejected_like_mujoco(tmp_path, case):
    skin, message, attribute = BAD[case]
    path = _write(tmp_path, two_body(skin), {"box.skn": box_skn(), "box.obj": b"v 0 0 0\n"})
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_path(path)
    if "required" not in message:
        assert message in str(theirs.value)
    with pytest.raises(ModelError) as ours:
        compile_spec(tiphys.load_spec(path))
    err = ours.value
    assert message in str(err)
    at_bone = any(word in message for word in ("required", "vertid", "unknown body"))
    tag = "<bone" if at_bone else "<skin"
    line = next(i for i, text in enumerate(two_body(skin).splitlines(), 1) if tag in text)
    assert err.line == line and err.file and err.file.endswith("model.xml"), str(err)
    assert err.element == tag[1:], str(err)
    if attribute:
        assert err.attribute == attribute


def test_face_index_out_of_range_is_an_error_in_tiphys(tmp_path):
    # MuJoCo 3.4.0 compiles it (and its renderer would read past the vertices)
    path = _write(tmp_path, two_body(_skin(face=BOX_FACE + " 0 1 8")))
    mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match="face vertex index 8 out of range in skin") as exc:
        compile_spec(tiphys.load_spec(path))
    assert exc.value.attribute == "face" and exc.value.element == "skin"


def test_missing_skin_file_names_the_path(tmp_path):
    path = _write(tmp_path, two_body('<skin file="gone.skn"/>', compiler='meshdir="m"'))
    with pytest.raises(ValueError, match="gone.skn"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match="gone.skn") as exc:
        compile_spec(tiphys.load_spec(path))
    assert exc.value.attribute == "file" and exc.value.element == "skin"
    assert "m/gone.skn" in str(exc.value)


def _good_skn():
    return box_skn()


BAD_SKN = {
    "empty": (b"", "is empty"),
    "header": (b"\0" * 8, "missing header in SKN file"),
    "negative": (struct.pack("<4i", -1, 0, 0, 0), "negative size in header of SKN file"),
    "short": (struct.pack("<4i", 8, 0, 12, 2) + b"\0" * 20, "insufficient data in SKN file"),
    "short bone": (_good_skn()[:-200], "insufficient"),
    "trailing": (_good_skn() + b"\0\0\0\0", "unexpected buffer size in SKN file"),
    "bone count": (skn([0, 0, 0], [0, 0, 0], [("lower", (0, 0, 0), (1, 0, 0, 0), [], [])]),
                   "vertex count must be positive in SKN file"),
}


@pytest.mark.parametrize("case", list(BAD_SKN))
def test_bad_skn_file_is_rejected_like_mujoco(tmp_path, case):
    data, message = BAD_SKN[case]
    path = _write(tmp_path, two_body('<skin file="s.skn"/>'), {"s.skn": data})
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_path(path)
    assert message in str(theirs.value)
    with pytest.raises(ModelError, match=message) as ours:
        compile_spec(tiphys.load_spec(path))
    assert ours.value.element == "skin" and ours.value.attribute == "file"


def test_repeated_skin_name_is_an_error(tmp_path):
    path = _write(tmp_path, two_body(INLINE + INLINE.replace('group="2"', "")))
    with pytest.raises(ValueError, match="repeated name"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match="repeated name 'inline' in skin"):
        compile_spec(tiphys.load_spec(path))


# -- skins of attached models -----------------------------------------------------------

CHILD = f"""<mujoco model="child">
  <compiler meshdir="cm"/>
  <asset>
    <skin name="s" vertex="{BOX_VERT}" face="{BOX_FACE}" rgba="0 0 1 1">
      <bone body="b" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2 3 4 5 6 7"
            vertweight="1 1 1 1 1 1 1 1"/>
      <bone body="c" bindpos="0 0 .1" bindquat="1 0 0 0" vertid="4 5 6 7"
            vertweight="2 2 2 2"/>
    </skin>
    {{file}}
  </asset>
  <worldbody>
    <body name="b" pos="0 0 1"><joint/><geom size=".1"/>
      <body name="c" pos="0 0 .2"><joint/><geom size=".1"/></body>
    </body>
  </worldbody>
</mujoco>"""


def _attach_model(tmp_path, attach, file_skin=False, parent_skins=INLINE, child=CHILD):
    files = {"child.xml": child.replace(
        "{file}", '<skin file="box.skn"/>' if file_skin else "").encode(),
        "sub/cm/box.skn": box_skn()}
    xml = two_body(parent_skins, deformable=DEFORMABLE).replace(
        "<asset>", '<asset>\n    <model name="child" file="sub/child.xml"/>').replace(
        "</worldbody>", attach + "\n  </worldbody>")
    files["sub/child.xml"] = files.pop("child.xml")
    return _write(tmp_path, xml, files)


@pytest.mark.parametrize("attach", [
    '<body name="holder" pos="2 0 0"><attach model="child" prefix="a-"/></body>',
    '<frame pos="0 2 0"><attach model="child" body="b" prefix="k"/></frame>'])
def test_attached_model_skins_match_mujoco(tmp_path, attach):
    path = _attach_model(tmp_path, attach)
    arrays, mjm = _both(path)
    assert arrays.names["skin"] == ["inline", "", "s"]
    _check_same(arrays, mjm)


def test_attached_model_skin_from_file_names_unprefixed_bodies_like_mujoco(tmp_path):
    # the SKN file's bones name the parent's bodies "lower" and "upper" (MuJoCo 3.4.0
    # prefixes the bones' names before it reads the file)
    path = _attach_model(tmp_path, '<body name="h"><attach model="child" prefix="a-"/></body>',
                         file_skin=True)
    arrays, mjm = _both(path)
    assert arrays.names["skin"] == ["inline", "", "s", "box"]
    _check_same(arrays, mjm)


def test_attached_model_skin_errors_like_mujoco(tmp_path):
    twice = ('<body name="h1"><attach model="child" prefix="a-"/></body>'
             '<body name="h2"><attach model="child" prefix="b-"/></body>')
    path = _attach_model(tmp_path, twice)
    with pytest.raises(ValueError, match="repeated name 's' in skin"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match="repeated name 's' in skin"):
        compile_spec(tiphys.load_spec(path))
    # the skin's material is not prefixed: the attached material is not found
    child = CHILD.replace('<skin name="s"', '<material name="mm"/><skin name="s" '
                          'material="mm"')
    path = _attach_model(tmp_path, '<body name="h"><attach model="child" prefix="a-"/>'
                                   '</body>', child=child)
    with pytest.raises(ValueError, match="material 'mm' not found in skin 2"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match="material 'mm' not found in skin 2"):
        compile_spec(tiphys.load_spec(path))


def test_attached_skins_inside_replicate_fail_as_in_mujoco(tmp_path):
    """Inside <replicate> the attached skin's bones name the child's bodies without the
    copies' suffixes: MuJoCo 3.4.0 stops on the unknown body, and so does tiphys, at the
    bone."""
    inside = ('<replicate count="2" offset="3 0 0"><body name="h">'
              '<attach model="child" prefix="a-"/></body></replicate>')
    path = _attach_model(tmp_path, inside)
    with pytest.raises(ValueError, match="unknown body 'a-b' in skin"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ModelError, match=r"child.xml:\d+: <bone>: body: unknown body 'a-b' "
                                         r"in skin"):
        compile_spec(tiphys.load_spec(path))


def test_attached_skins_not_supported_yet_say_so(tmp_path):
    cable = ('<body name="h"><attach model="child" prefix="a-"/></body>'
             '<composite type="cable" prefix="z" curve="s" count="5 1 1" size="1">'
             '<geom type="box" size=".02 .05 .01"/></composite>')
    path = _attach_model(tmp_path, cable)
    mujoco.MjModel.from_xml_path(path)
    with pytest.raises(NotImplementedError, match="attached model together with a box"):
        compile_spec(tiphys.load_spec(path))
