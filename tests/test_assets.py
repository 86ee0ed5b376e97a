"""Asset file lookup and <include> against MuJoCo 3.4.0 (the oracle).

Each case writes a small model tree in tmp_path: the asset file (an OBJ mesh, a PNG
height field, a PNG texture, six PNG cube faces) in the place MuJoCo should pick and
decoys with other contents in every place a wrong rule would pick (the model
directory, meshdir, texturedir, assetdir, the including file's directory...). Both
engines load the same file from disk; they must both load or both fail, and where
both load, the compiled asset arrays (mesh_vert, hfield_*, tex_*) must be equal, so
a file taken from the wrong place shows up as different data.

The rules (MuJoCo 3.4.0 src/xml/xml_util.cc ResolveFilePath, src/xml/xml.cc
IncludeXML, src/user/user_mesh.cc and user_objects.cc Compile) are written out in
tiphys/compiler/assets.py (AssetFiles) and tiphys/spec/parse.py (_include).
Compile only: no device Model is made.
"""
from __future__ import annotations

import io
import os
import struct
import tempfile
import zipfile
from dataclasses import dataclass

import numpy as np
import pytest

import mujoco  # noqa: E402 (pinned test dependency)
from PIL import Image  # noqa: E402

import tiphys  # noqa: E402
from tiphys.api import load_spec  # noqa: E402
from tiphys.compiler.compile import compile_spec  # noqa: E402
from tiphys.errors import ModelError  # noqa: E402

# MuJoCo caches compiled assets by file name: every oracle compile must read the files
mujoco.mj_setCacheCapacity(mujoco.mj_getCache(), 0)


# -- distinguishable file contents ------------------------------------------------------

def obj_cube(k: int) -> bytes:
    """An OBJ box whose size says which copy it is."""
    h = 0.1 * (k + 1)
    verts = [(x, y, z) for x in (-h, h) for y in (-2 * h, 2 * h) for z in (-3 * h, 3 * h)]
    faces = [(1, 3, 4, 2), (5, 6, 8, 7), (1, 2, 6, 5), (3, 7, 8, 4), (1, 5, 7, 3),
             (2, 4, 8, 6)]
    lines = [f"v {x} {y} {z}" for x, y, z in verts] + [f"f {a} {b} {c} {d}"
                                                      for a, b, c, d in faces]
    return ("\n".join(lines) + "\n").encode()


def stl_cube(k: int) -> bytes:
    """A binary STL of obj_cube(k)'s box (12 triangles)."""
    h = 0.1 * (k + 1)
    v = [(x, y, z) for x in (-h, h) for y in (-2 * h, 2 * h) for z in (-3 * h, 3 * h)]
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2),
             (1, 3, 7, 5)]
    tris = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    out = b"\0" * 80 + struct.pack("<I", len(tris))
    for t in tris:
        out += struct.pack("<3f", 0, 0, 0)
        for i in t:
            out += struct.pack("<3f", *v[i])
        out += b"\0\0"
    return out


def gmsh_tets(k: int) -> bytes:
    """An ASCII GMSH 4.1 file with two tetrahedra, scaled by which copy it is."""
    h = 0.1 * (k + 1)
    points = [(0, 0, 0), (h, 0, 0), (0, h, 0), (0, 0, h), (h, h, h)]
    tets = [(1, 2, 3, 4), (2, 3, 4, 5)]
    lines = ["$MeshFormat", "4.1 0 8", "$EndMeshFormat", "$Nodes", "1 5 1 5", "3 1 0 5"]
    lines += [str(i + 1) for i in range(5)] + [" ".join(map(str, p)) for p in points]
    lines += ["$EndNodes", "$Elements", "1 2 1 2", "3 1 4 2"]
    lines += [" ".join(map(str, (i + 1,) + t)) for i, t in enumerate(tets)]
    return "\n".join(lines + ["$EndElements", ""]).encode()


def png(width: int, height: int, seed: int, mode: str = "L") -> bytes:
    rng = np.random.default_rng(seed)
    shape = (height, width) if mode == "L" else (height, width, 3)
    img = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


# -- asset kinds --------------------------------------------------------------------------

@dataclass
class Kind:
    file: str                  # the file name the model uses
    asset: str                 # <asset> children, {file} is the file attribute value
    geom: str                  # a geom using it
    content: object            # copy index -> bytes
    fields: tuple              # compiled arrays compared
    section: str = "asset"     # where ``asset`` goes (a flexcomp: in <worldbody>)


FACES = ("fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")

KINDS = {
    "mesh": Kind("box.obj", '<mesh name="m" file="{file}"/>',
                 '<geom type="mesh" mesh="m"/>', obj_cube,
                 ("mesh_vertnum", "mesh_vert", "mesh_face")),
    "hfield": Kind("terrain.png", '<hfield name="h" file="{file}" size="1 1 0.5 0.1"/>',
                   '<geom type="hfield" hfield="h"/>',
                   lambda k: png(k + 2, k + 3, k),
                   ("hfield_nrow", "hfield_ncol", "hfield_data")),
    "texture": Kind("tex.png", '<texture name="t" type="2d" file="{file}"/>'
                    '<material name="mat" texture="t"/>',
                    '<geom size="0.1" material="mat"/>',
                    lambda k: png(k + 1, k + 2, 100 + k, "RGB"),
                    ("tex_width", "tex_height", "tex_data")),
    "cube": Kind("face.png", '<texture name="t" type="cube" '
                 + " ".join(f'{a}="{{file}}"' for a in FACES) + '/>'
                 '<material name="mat" texture="t"/>',
                 '<geom size="0.1" material="mat"/>',
                 lambda k: png(k + 1, k + 1, 200 + k, "RGB"),
                 ("tex_width", "tex_height", "tex_data")),
    "skin": Kind("s.skn", '<skin name="s" file="{file}"/>', "", lambda k: skn(scale=k + 1),
                 ("skin_vertnum", "skin_vert")),
    # a flexcomp's file: its points become the bodies' positions
    "flexcomp-obj": Kind("box.obj", '<flexcomp name="f" type="mesh" file="{file}" dim="2" '
                         'radius="0.01"/>', "", obj_cube, ("body_pos",), "worldbody"),
    "flexcomp-stl": Kind("box.stl", '<flexcomp name="f" type="mesh" file="{file}" dim="2" '
                         'radius="0.01"/>', "", stl_cube, ("body_pos",), "worldbody"),
    "flexcomp-gmsh": Kind("tets.msh", '<flexcomp name="f" type="gmsh" file="{file}" '
                          'radius="0.01"/>', "", gmsh_tets, ("body_pos",), "worldbody"),
}


# -- model trees ------------------------------------------------------------------------

@dataclass
class Layout:
    """Where the asset is declared and which copies of its file exist.

    ``copies`` are directories (relative to tmp_path) that get a copy of the file,
    each with different contents. ``compiler`` is the main model's <compiler>
    attributes; with ``include`` the asset is declared in that file (relative to the
    model), whose root is ``root`` and which may set ``inc_compiler``. ``file`` is the
    file attribute ({name} the file name, {abs} an absolute directory).
    """

    copies: tuple
    compiler: str = ""
    include: str = ""
    inc_compiler: str = ""
    root: str = "mujocoinclude"
    file: str = "{name}"
    model_dir: str = ""
    nested: str = ""           # the include itself includes this file (relative to it)


DIRS = ("", "a", "m", "t", "sub", "sub/m", "sub/t", "sub/a", "m/sub", "abs", "deep")
LAYOUTS = {
    "none": Layout(DIRS),
    "assetdir": Layout(DIRS, 'assetdir="a"'),
    "meshdir": Layout(DIRS, 'meshdir="m"'),
    "texturedir": Layout(DIRS, 'texturedir="t"'),
    "assetdir+meshdir": Layout(DIRS, 'assetdir="a" meshdir="m"'),
    "assetdir+texturedir": Layout(DIRS, 'assetdir="a" texturedir="t"'),
    "only-in-texturedir": Layout(("t",), 'meshdir="m" texturedir="t"'),
    "only-in-meshdir": Layout(("m",), 'meshdir="m" texturedir="t"'),
    "only-in-assetdir": Layout(("a",), 'assetdir="a" meshdir="m" texturedir="t"'),
    "trailing-slash-dirs": Layout(DIRS, 'meshdir="m/" texturedir="t/"'),
    "dot-dot-dir": Layout(("", "assets", "models/m"), 'meshdir="../assets" '
                          'texturedir="../assets"', model_dir="models"),
    "absolute-file": Layout(DIRS, 'assetdir="a" meshdir="m" texturedir="t"',
                            file="{abs}/{name}"),
    "absolute-dir": Layout(DIRS, 'meshdir="{abs}" texturedir="{abs}" assetdir="{abs}"'),
    "strippath": Layout(DIRS, 'strippath="true" meshdir="m" texturedir="t"',
                        file="deep/{name}"),
    "subdir-in-name": Layout(DIRS, 'meshdir="m"', file="sub/{name}"),
    "backslash-in-name": Layout(DIRS, 'meshdir="m"', file="./sub\\{name}"),
    "dot-dot-in-name": Layout(DIRS, 'meshdir="m" texturedir="t"', file="../sub/{name}"),
    "include-sub": Layout(DIRS, include="sub/inc.xml"),
    "include-sub-only-there": Layout(("sub", "sub/m", "sub/t"), include="sub/inc.xml"),
    "include-sub-meshdir": Layout(DIRS, 'meshdir="m" texturedir="t"',
                                  include="sub/inc.xml"),
    "include-sub-meshdir-only-there": Layout(("sub", "sub/m", "sub/t", "sub/a"),
                                             'meshdir="m" texturedir="t"',
                                             include="sub/inc.xml"),
    "include-sub-assetdir-only-there": Layout(("sub", "sub/a"), 'assetdir="a"',
                                              include="sub/inc.xml"),
    # a copy in the model directory and in the including file's directory only: a name
    # probed in the model directory alone (a flexcomp's) is kept, then not found in meshdir
    "include-sub-meshdir-top-copy": Layout(("", "sub"), 'meshdir="m" texturedir="t"',
                                           include="sub/inc.xml"),
    "include-sub-assetdir-top-copy": Layout(("", "sub"), 'assetdir="a"',
                                            include="sub/inc.xml"),
    "include-sets-dirs": Layout(DIRS, include="sub/inc.xml",
                                inc_compiler='meshdir="m" texturedir="t"'),
    "include-sets-dirs-only-sub": Layout(("sub", "sub/m", "sub/t"), include="sub/inc.xml",
                                         inc_compiler='meshdir="m" texturedir="t"'),
    "include-sets-assetdir": Layout(DIRS, 'meshdir="m" texturedir="t"',
                                    include="sub/inc.xml", inc_compiler='assetdir="a"'),
    "include-mujoco-root": Layout(("sub",), include="sub/inc.xml", root="mujoco"),
    "include-any-root": Layout(("sub",), include="sub/inc.xml", root="whatever"),
    "nested-include": Layout(("sub", "sub/inner", "inner"), include="sub/inc.xml",
                             nested="inner/inc2.xml"),
    "nested-include-top-wins": Layout(("sub/inner", "inner"), include="sub/inc.xml",
                                      nested="inner/inc2.xml"),
    "include-parent-dir": Layout(("models", "shared", "shared/m"), 'meshdir="m"',
                                 include="../shared/inc.xml", model_dir="models"),
    "include-absolute": Layout(("", "abs", "abs/m"), include="{abs}/inc.xml",
                               inc_compiler='meshdir="m" texturedir="m"'),
    "missing-everywhere": Layout(()),
}


def build(tmp_path, kind: Kind, layout: Layout):
    """Write the tree; returns the main model's path."""
    absdir = tmp_path / "abs"
    for k, d in enumerate(layout.copies):
        path = tmp_path / d / kind.file if d else tmp_path / kind.file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(kind.content(k))
    fmt = {"name": kind.file, "abs": str(absdir)}
    asset = kind.asset.format(file=layout.file.format(**fmt))
    compiler = f"<compiler {layout.compiler.format(**fmt)}/>" if layout.compiler else ""
    if layout.include:
        inc_compiler = f"<compiler {layout.inc_compiler}/>" if layout.inc_compiler else ""
        body = f"<{kind.section}>{asset}</{kind.section}>"
        if layout.nested:
            inner = tmp_path / layout.model_dir / layout.include
            inner = inner.parent / layout.nested
            inner.parent.mkdir(parents=True, exist_ok=True)
            inner.write_text(f"<{layout.root}>\n  {body}\n</{layout.root}>\n")
            body = f'<include file="{layout.nested}"/>'
        inc = tmp_path / layout.model_dir / layout.include.format(**fmt)
        inc.parent.mkdir(parents=True, exist_ok=True)
        inc.write_text(f"<{layout.root}>\n  {inc_compiler}\n  {body}\n</{layout.root}>\n")
        decl = f'<include file="{layout.include.format(**fmt)}"/>'
    else:
        decl = f"<{kind.section}>{asset}</{kind.section}>"
    model = tmp_path / layout.model_dir / "model.xml"
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_text(f"<mujoco>\n  {compiler}\n  {decl}\n  <worldbody>\n    "
                     f"{kind.geom}\n  </worldbody>\n</mujoco>\n")
    return model


def load_both(path, fields):
    """(MuJoCo's arrays or error, tiphys's arrays or error) for one model file."""
    try:
        mjm = mujoco.MjModel.from_xml_path(str(path))
        theirs = {f: np.asarray(getattr(mjm, f)) for f in fields}
    except ValueError as exc:
        theirs = exc
    try:
        arrays = compile_spec(load_spec(str(path)))
        ours = {f: np.asarray(getattr(arrays, f)) for f in fields}
    except ModelError as exc:
        ours = exc
    return theirs, ours


def assert_same(theirs, ours):
    if isinstance(theirs, Exception) or isinstance(ours, Exception):
        assert isinstance(theirs, Exception) and isinstance(ours, Exception), \
            f"MuJoCo: {theirs!r}\ntiphys: {ours!r}"
        return
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name].reshape(value.shape), value, rtol=1e-6,
                                   atol=1e-7, err_msg=name)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_asset_file_lookup_matches_mujoco(tmp_path, kind, layout):
    path = build(tmp_path, KINDS[kind], LAYOUTS[layout])
    theirs, ours = load_both(path, KINDS[kind].fields)
    assert_same(theirs, ours)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("kind", ["mesh", "hfield", "flexcomp-obj"])
def test_asset_lookup_from_string_matches_mujoco(tmp_path, monkeypatch, kind, layout):
    """Text without a file name: names start from the working directory, and names
    taken relative to an included file stay relative (so meshdir goes in front)."""
    path = build(tmp_path, KINDS[kind], LAYOUTS[layout])
    monkeypatch.chdir(path.parent)
    xml = path.read_text()
    fields = KINDS[kind].fields
    try:
        mjm = mujoco.MjModel.from_xml_string(xml)
        theirs = {f: np.asarray(getattr(mjm, f)) for f in fields}
    except ValueError as exc:
        theirs = exc
    try:
        arrays = compile_spec(tiphys.parse_xml(xml))
        ours = {f: np.asarray(getattr(arrays, f)) for f in fields}
    except ModelError as exc:
        ours = exc
    assert_same(theirs, ours)


# -- the rules, pinned: these say which copy MuJoCo takes, so a change in MuJoCo's rules
# shows up here and not only as an agreement between the engines
@pytest.mark.parametrize("layout, expected", [
    ("meshdir", "m"),                  # height fields open in meshdir...
    ("texturedir", ""),                # ...never in texturedir
    ("assetdir", "a"),
    ("include-sub", ""),               # in an included file: the model directory first
    ("include-sub-only-there", "sub"),  # then the including file's directory
    ("include-sub-meshdir-only-there", "sub"),  # which is not put under meshdir
    ("include-sets-dirs", "m"),        # <compiler> in an included file counts
    ("nested-include", "sub/inner"),
    ("strippath", "m"),
])
def test_hfield_lookup_rules(tmp_path, layout, expected):
    lay = LAYOUTS[layout]
    path = build(tmp_path, KINDS["hfield"], lay)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(load_spec(str(path)))
    k = lay.copies.index(expected)
    img = Image.open(io.BytesIO(KINDS["hfield"].content(k)))
    assert (mjm.hfield_nrow[0], mjm.hfield_ncol[0]) == (img.height, img.width)
    assert (arrays.hfield_nrow[0], arrays.hfield_ncol[0]) == (img.height, img.width)
    np.testing.assert_allclose(arrays.hfield_data, mjm.hfield_data, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("layout, expected", [
    ("meshdir", "m"),
    ("assetdir", "a"),
    ("include-sub", ""),                # in an included file: the model directory first
    ("include-sub-meshdir", "m"),       # probed there without meshdir, opened in meshdir
    ("include-sub-meshdir-top-copy", None),   # so a copy there alone fails to load
    ("include-sub-assetdir-top-copy", None),
    ("include-sub-meshdir-only-there", "sub"),  # else the including file's directory,
    ("include-sub-assetdir-only-there", "sub"),  # not put under meshdir or assetdir
    ("include-sets-dirs", "m"),
    ("nested-include", "sub/inner"),
    ("strippath", "m"),
])
@pytest.mark.parametrize("kind", ["flexcomp-obj", "flexcomp-gmsh"])
def test_flexcomp_file_lookup_rules(tmp_path, kind, layout, expected):
    """Which copy a <flexcomp file> loads (MuJoCo 3.4.0 mjXReader::OneFlexcomp probes
    the bare model directory, mjCFlexcomp::MakeMesh/MakeGMSH put meshdir in front)."""
    lay = LAYOUTS[layout]
    path = build(tmp_path, KINDS[kind], lay)
    theirs, ours = load_both(path, ("body_pos",))
    if expected is None:
        assert isinstance(theirs, ValueError) and "Error opening file" in str(theirs)
        assert isinstance(ours, ModelError) and ours.element == "flexcomp", ours
        assert os.path.join(str(tmp_path), "m" if "meshdir" in layout else "a") in str(ours)
        return
    k = lay.copies.index(expected)
    extent = 0.1 * (k + 1) * (3 if kind == "flexcomp-obj" else 1)  # largest coordinate
    assert np.isclose(np.abs(theirs["body_pos"]).max(), extent)
    np.testing.assert_allclose(ours["body_pos"], theirs["body_pos"], atol=1e-7)


def test_include_sub_with_meshdir_keeps_include_dir_for_hfield_only(tmp_path):
    """An included height field that is not in assetdir is taken from the including
    file's directory even when meshdir has it; a mesh is found in meshdir."""
    for d, k in (("m", 1), ("sub", 2)):
        (tmp_path / d).mkdir(exist_ok=True)
        (tmp_path / d / "terrain.png").write_bytes(png(k + 2, k + 3, k))
        (tmp_path / d / "box.obj").write_bytes(obj_cube(k))
    (tmp_path / "sub" / "inc.xml").write_text(
        '<mujocoinclude><asset><hfield name="h" file="terrain.png" size="1 1 1 1"/>'
        '<mesh name="b" file="box.obj"/></asset></mujocoinclude>')
    path = tmp_path / "model.xml"
    path.write_text('<mujoco><compiler meshdir="m"/><include file="sub/inc.xml"/>'
                    '<worldbody><geom type="hfield" hfield="h"/><geom type="mesh" mesh="b"/>'
                    '</worldbody></mujoco>')
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(load_spec(str(path)))
    assert mjm.hfield_nrow[0] == 2 + 3 and arrays.hfield_nrow[0] == 2 + 3
    assert np.isclose(np.abs(mjm.mesh_vert).max(), 0.3 * 2)  # copy 1: h = 0.2, z = 3h
    np.testing.assert_allclose(arrays.mesh_vert, mjm.mesh_vert, atol=1e-6)


# -- the assets dict (VFS) ----------------------------------------------------------------

@pytest.mark.parametrize("key, compiler, file", [
    ("box.obj", 'meshdir="m"', "box.obj"),
    ("BOX.OBJ", "", "box.obj"),          # file names compare case-insensitively
    ("m/box.obj", "", "deep/box.obj"),   # only the file name counts
    ("box.obj", 'meshdir="/nonexistent/dir"', "../x/box.obj"),
    ("other.obj", "", "box.obj"),        # missing: both fail
])
def test_assets_dict_lookup_matches_mujoco(key, compiler, file):
    xml = (f'<mujoco><compiler {compiler}/><asset><mesh name="m" file="{file}"/></asset>'
           '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
    assets = {key: obj_cube(3)}
    try:
        theirs = {"mesh_vert": mujoco.MjModel.from_xml_string(xml, assets).mesh_vert}
    except ValueError as exc:
        theirs = exc
    try:
        ours = {"mesh_vert": compile_spec(tiphys.parse_xml(xml, assets=assets)).mesh_vert}
    except ModelError as exc:
        ours = exc
    assert_same(theirs, ours)


def test_includes_and_assets_from_assets_dict_match_mujoco():
    xml = ('<mujoco><compiler meshdir="meshes"/><include file="parts/outer.xml"/>'
           '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
    assets = {
        "parts/outer.xml": b'<mujocoinclude><include file="inner.xml"/></mujocoinclude>',
        "inner.xml": b'<mujocoinclude><option timestep="0.004"/><asset>'
                     b'<mesh name="m" file="sub/Box.obj"/></asset></mujocoinclude>',
        "box.obj": obj_cube(2)}
    mjm = mujoco.MjModel.from_xml_string(xml, assets)
    arrays = compile_spec(tiphys.parse_xml(xml, assets=assets))
    assert arrays.opt.timestep == mjm.opt.timestep == 0.004
    np.testing.assert_allclose(arrays.mesh_vert, mjm.mesh_vert, atol=1e-6)


def test_assets_dict_exact_key_disambiguates():
    """Two keys with the same file name: MuJoCo's Python API refuses the dict; tiphys
    takes the key equal to the whole name, and names both keys when none is."""
    xml = ('<mujoco><compiler assetdir="meshes"/><asset><mesh name="a" file="cube.obj"/>'
           '<mesh name="b" file="more/cube.obj"/></asset></mujoco>')
    assets = {"meshes/cube.obj": obj_cube(0), "meshes/more/cube.obj": obj_cube(1)}
    with pytest.raises(ValueError, match="Repeated file name"):
        mujoco.MjModel.from_xml_string(xml, assets)
    arrays = compile_spec(tiphys.parse_xml(xml, assets=assets))
    assert np.isclose(np.abs(arrays.mesh_vert[:8]).max(), 0.3)
    assert np.isclose(np.abs(arrays.mesh_vert[8:]).max(), 0.6)
    with pytest.raises(ModelError, match="ambiguous") as info:
        compile_spec(tiphys.parse_xml(xml.replace('assetdir="meshes"', ""), assets=assets))
    assert "meshes/cube.obj" in str(info.value) and info.value.element == "mesh"


def test_zipped_model_with_assetdir_loads_from_assets_dict():
    """MuJoCo's own test model (corpus mjtest/MJCF_Root.zip): assetdir and texturedir,
    a mesh in a subdirectory of assetdir, a height field named '../textures/x.png'
    (found through meshdir = assetdir). MuJoCo's Python API cannot take these files
    as one assets dict (two 'cube.stl'), so compare with MuJoCo on the unzipped tree."""
    corpus = os.environ.get("TIPHYS_CORPUS") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".cache", "corpus")
    zpath = os.path.join(corpus, "mjtest", "MJCF_Root.zip")
    if not os.path.exists(zpath):
        pytest.skip("corpus zip not fetched")
    with zipfile.ZipFile(zpath) as z:
        files = {n.split("/", 1)[1]: z.read(n) for n in z.namelist()
                 if not n.endswith("/")}
    xml = files.pop("model_with_assetdir.xml")
    arrays = compile_spec(tiphys.parse_xml(xml, assets=files))
    with tempfile.TemporaryDirectory() as d:
        for name, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        with open(os.path.join(d, "model.xml"), "wb") as f:
            f.write(xml)
        mjm = mujoco.MjModel.from_xml_path(os.path.join(d, "model.xml"))
    for name in ("mesh_vert", "hfield_data", "hfield_nrow", "tex_data"):
        np.testing.assert_allclose(np.asarray(getattr(arrays, name)).reshape(-1),
                                   np.asarray(getattr(mjm, name)).reshape(-1), atol=1e-6,
                                   err_msg=name)


# -- skins ------------------------------------------------------------------------------

def skn(nvert=4, scale=1) -> bytes:
    """A SKN skin file: a tetrahedron (edge ``scale``) bound to the world body with one
    bone."""
    vert = [scale * x for x in (0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1)]
    face = [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]
    out = struct.pack("<4i", nvert, 0, 4, 1) + struct.pack(f"<{3 * nvert}f", *vert)
    out += struct.pack("<12i", *face)
    out += b"world".ljust(40, b"\0") + struct.pack("<7f", 0, 0, 0, 1, 0, 0, 0)
    out += struct.pack("<i", nvert) + struct.pack(f"<{nvert}i", *range(nvert))
    out += struct.pack(f"<{nvert}f", *([1.0] * nvert))
    return out


def test_skin_file_opens_in_meshdir_as_in_mujoco(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "s.skn").write_bytes(skn())
    path = tmp_path / "model.xml"
    path.write_text('<mujoco><compiler meshdir="m"/><asset><skin file="s.skn"/></asset>'
                    '<worldbody><geom size="1"/></worldbody></mujoco>')
    mjm = mujoco.MjModel.from_xml_path(str(path))  # skins open in meshdir, like meshes
    assert mjm.nskin == 1 and mjm.skin_vertnum[0] == 4
    arrays = compile_spec(load_spec(str(path)))
    assert arrays.sizes["nskin"] == 1 and arrays.names["skin"] == ["s"]
    np.testing.assert_array_equal(arrays.skin_vert, mjm.skin_vert)
    np.testing.assert_array_equal(arrays.skin_face, mjm.skin_face)


# -- <include> ------------------------------------------------------------------------------

def _write(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode() if isinstance(text, str) else text)
    return tmp_path / "model.xml"


MAIN = '<mujoco>\n  <include file="{inc}"/>\n  <worldbody>\n    <geom size="1"/>\n' \
       '  </worldbody>\n</mujoco>\n'


@pytest.mark.parametrize("root", ["mujocoinclude", "mujoco", "anything"])
def test_include_root_name_is_ignored(tmp_path, root):
    path = _write(tmp_path, {
        "model.xml": MAIN.format(inc="parts/part.xml"),
        "parts/part.xml": f'<{root} model="ignored">\n  <option timestep="0.005"/>\n'
                          f'  <default><geom rgba="1 0 0 1"/></default>\n</{root}>\n'})
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(load_spec(str(path)))
    assert mjm.opt.timestep == 0.005 and arrays.opt.timestep == 0.005
    np.testing.assert_array_equal(arrays.geom_rgba.reshape(-1), mjm.geom_rgba.reshape(-1))


@pytest.mark.parametrize("text, words", [
    ("<mujocoinclude/>", "empty include file"),
    ("<mujocoinclude>just text</mujocoinclude>", "empty include file"),
    ("", "empty file"),
    ("<!-- nothing -->", "root element missing"),
])
def test_bad_include_file_rejected_like_mujoco(tmp_path, text, words):
    path = _write(tmp_path, {"model.xml": MAIN.format(inc="part.xml"), "part.xml": text})
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(ModelError) as info:
        load_spec(str(path))
    exc = info.value
    assert words in str(exc)
    assert (exc.file, exc.line, exc.element, exc.attribute) == \
        ("model.xml", 2, "include", "file"), str(exc)


@pytest.mark.parametrize("files", [
    # a nested include is found relative to the including file...
    {"model.xml": MAIN.format(inc="a/outer.xml"),
     "a/outer.xml": '<mujocoinclude><include file="inner.xml"/></mujocoinclude>',
     "a/inner.xml": '<mujocoinclude><option timestep="0.003"/></mujocoinclude>'},
    # ...unless the model directory has a file of that name, which wins
    {"model.xml": MAIN.format(inc="a/outer.xml"),
     "a/outer.xml": '<mujocoinclude><include file="inner.xml"/></mujocoinclude>',
     "a/inner.xml": '<mujocoinclude><option timestep="0.003"/></mujocoinclude>',
     "inner.xml": '<mujocoinclude><option timestep="0.004"/></mujocoinclude>'},
    # the same file twice: refused
    {"model.xml": '<mujoco><include file="p.xml"/><include file="p.xml"/></mujoco>',
     "p.xml": '<mujoco><option timestep="0.003"/></mujoco>'},
    # a file that includes itself: refused
    {"model.xml": MAIN.format(inc="p.xml"),
     "p.xml": '<mujoco><include file="p.xml"/></mujoco>'},
])
def test_nested_includes_match_mujoco(tmp_path, files):
    path = _write(tmp_path, files)
    try:
        theirs = mujoco.MjModel.from_xml_path(str(path)).opt.timestep
    except ValueError as exc:
        theirs = exc
    try:
        ours = float(compile_spec(load_spec(str(path))).opt.timestep)
    except ModelError as exc:
        ours = exc
    if isinstance(theirs, Exception) or isinstance(ours, Exception):
        assert isinstance(theirs, Exception) and isinstance(ours, Exception), (theirs, ours)
        assert "already included" in str(ours) and ours.element == "include"
    else:
        assert ours == theirs


def test_include_model_compiles_like_mujoco(tmp_path):
    """A model split over <mujocoinclude> files in subdirectories, with assets."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "box.obj").write_bytes(obj_cube(2))
    (tmp_path / "assets" / "terrain.png").write_bytes(png(4, 5, 7))
    path = _write(tmp_path, {
        "model.xml": '<mujoco model="split">\n  <include file="parts/common.xml"/>\n'
                     '  <worldbody>\n    <include file="parts/robot.xml"/>\n'
                     '  </worldbody>\n</mujoco>\n',
        "parts/common.xml": '<mujocoinclude>\n  <compiler assetdir="assets" angle="radian"/>\n'
                            '  <asset>\n    <mesh name="box" file="box.obj"/>\n'
                            '    <hfield name="h" file="terrain.png" size="1 1 .2 .1"/>\n'
                            '  </asset>\n</mujocoinclude>\n',
        "parts/robot.xml": '<mujocoinclude>\n  <geom type="hfield" hfield="h"/>\n'
                           '  <body pos="0 0 1">\n    <joint type="hinge" range="0 1"/>\n'
                           '    <geom type="mesh" mesh="box"/>\n  </body>\n'
                           '</mujocoinclude>\n'})
    from oracle import compare_model
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(load_spec(str(path)))
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)


# -- error messages -------------------------------------------------------------------------

def test_missing_mesh_names_paths_and_dirs(tmp_path):
    path = _write(tmp_path, {
        "model.xml": '<mujoco>\n  <compiler meshdir="m"/>\n  <include file="sub/inc.xml"/>\n'
                     '</mujoco>\n',
        "sub/inc.xml": '<mujocoinclude>\n  <asset>\n    <mesh file="gone.obj"/>\n'
                       '  </asset>\n</mujocoinclude>\n'})
    with pytest.raises(ModelError) as info:
        compile_spec(load_spec(str(path)))
    exc = info.value
    assert (exc.file, exc.line, exc.element, exc.attribute) == \
        ("inc.xml", 3, "mesh", "file"), str(exc)
    msg = str(exc)
    assert "gone.obj" in msg
    assert f"{tmp_path}/m/gone.obj" in msg          # where it was looked for first
    assert f"{tmp_path}/sub/gone.obj" in msg        # then, from the include's directory
    assert "assets dict" in msg and "meshdir" in msg


def test_missing_texture_face_names_attribute(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "r.png").write_bytes(png(2, 2, 0, "RGB"))
    path = _write(tmp_path, {
        "model.xml": '<mujoco>\n  <compiler texturedir="t"/>\n  <asset>\n'
                     '    <texture type="skybox" fileright="r.png" fileleft="l.png"/>\n'
                     '  </asset>\n</mujoco>\n'})
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(ModelError) as info:
        compile_spec(load_spec(str(path)))
    exc = info.value
    assert (exc.line, exc.element, exc.attribute) == (4, "texture", "fileleft"), str(exc)
    assert f"{tmp_path}/t/l.png" in str(exc) and "texturedir='t'" in str(exc)


def test_missing_include_names_both_paths(tmp_path):
    path = _write(tmp_path, {
        "model.xml": MAIN.format(inc="a/outer.xml"),
        "a/outer.xml": '<mujocoinclude>\n  <include file="gone.xml"/>\n</mujocoinclude>'})
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(ModelError) as info:
        load_spec(str(path))
    exc = info.value
    assert (exc.file, exc.line, exc.element, exc.attribute) == \
        ("outer.xml", 2, "include", "file"), str(exc)
    assert f"{tmp_path}/gone.xml" in str(exc) and f"{tmp_path}/a/gone.xml" in str(exc)
