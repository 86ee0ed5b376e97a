"""Resource providers (tiphys/io/resources.py) against MuJoCo 3.4.0.

One model tree - an <include> that includes another file relative to itself, OBJ,
STL and MSH meshes declared in the included file, PNG and binary height fields, a 2D PNG
texture, a cube texture from six per-face files, a one-file skybox, a SKN skin and a
gmsh flexcomp - is compiled by tiphys from files, from the assets dict, from a
registered in-memory provider and from data: URIs, and every Model field is compared
with MuJoCo's compile of the files. Then registration (MuJoCo's rules) and each kind
of bad input: an unknown scheme, a provider whose open says no, a provider that
raises, a missing file, a name climbing out of a provider's root with "..". Last,
``modified``: whether a mesh, height-field or texture file read before is read
again, counted in tiphys and in MuJoCo (a provider registered in MuJoCo's library,
in a process of its own).
Compile only: no device Model is made.
"""
from __future__ import annotations

import base64
import collections
import itertools
import struct

import mujoco
import numpy as np
import pytest
from oracle import compare_model
from test_assets import obj_cube, png
from test_flex_compiler import _GMSH_TETS, _gmsh41
from test_mesh import CUBE, CUBE_FACES, _msh
from test_skin import box_skn

import tiphys
from tiphys.api import load_spec
from tiphys.compiler.compile import compile_spec
from tiphys.compiler.mesh import clear_mesh_cache
from tiphys.errors import ModelError
from tiphys.io.resources import (
    Resource,
    ResourceProvider,
    ResourceReader,
    dir_part,
    get_provider,
    register_provider,
)

mujoco.mj_setCacheCapacity(mujoco.mj_getCache(), 0)

_PREFIXES = (f"mem{n}" for n in itertools.count())


# -- the model tree -----------------------------------------------------------------

def _stl_wedge() -> bytes:
    p = [(0, 0, 0), (.3, 0, 0), (0, .2, 0), (0, 0, .1)]
    tris = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    out = b"\0" * 80 + struct.pack("<I", len(tris))
    for t in tris:
        out += struct.pack("<12fH", 0, 0, 0, *p[t[0]], *p[t[1]], *p[t[2]], 0)
    return out


def _hfield_bin(nrow=3, ncol=4) -> bytes:
    data = np.linspace(0, 1, nrow * ncol, dtype=np.float32)
    return struct.pack("<2i", nrow, ncol) + data.tobytes()


FACES = ("right", "left", "up", "down", "front", "back")

FILES = {
    "assets/box.obj": obj_cube(2),
    "assets/wedge.stl": _stl_wedge(),
    "assets/cube.msh": _msh(CUBE, face=CUBE_FACES),
    "assets/terrain.png": png(5, 4, 3),
    "assets/terrain.bin": _hfield_bin(),
    "assets/box.skn": box_skn(),
    "assets/tet.msh": _gmsh41(_GMSH_TETS, 3),
    "textures/grid.png": png(8, 6, 4, "RGB"),
    "textures/sky.png": png(8, 8, 5, "RGB"),
    **{f"textures/{f}.png": png(4, 4, 10 + i, "RGB") for i, f in enumerate(FACES)},
}
MEDIA = {"obj": "model/obj", "stl": "model/stl", "png": "image/png",
         "bin": "image/vnd.mujoco.hfield", "msh": "model/vnd.mujoco.msh", "xml": "text/xml"}


def _main(ref, skin=True):
    faces = " ".join(f'file{f}="{ref("textures/" + f + ".png")}"' for f in FACES)
    tex_type = ' content_type="image/png"' if ref("textures/grid.png").startswith("data:") \
        else ""
    skin_el = f'<skin file="{ref("assets/box.skn")}"/>' if skin else ""
    return f"""<mujoco model="resources">
  <compiler meshdir="assets" texturedir="textures"/>
  <asset>
    <hfield name="terrain" file="{ref("assets/terrain.png")}" size="1 1 .2 .1"/>
    <hfield name="bin" file="{ref("assets/terrain.bin")}" size="1 1 .2 .1"/>
    <texture name="grid" type="2d" file="{ref("textures/grid.png")}"/>
    <texture name="cube" type="cube" {faces}{tex_type}/>
    <texture name="sky" type="skybox" file="{ref("textures/sky.png")}"{tex_type}/>
    <material name="grid" texture="grid"/>
    {skin_el}
  </asset>
  <include file="{ref("parts/robot.xml")}"/>
  <worldbody>
    <flexcomp name="f" type="gmsh" file="{ref("assets/tet.msh")}" radius=".001"
              pos="0 0 2"/>
  </worldbody>
</mujoco>
"""


def _robot(ref):
    return f"""<mujocoinclude>
  <asset>
    <mesh name="box" file="{ref("assets/box.obj")}"/>
    <mesh name="wedge" file="{ref("assets/wedge.stl")}"/>
    <mesh name="cube" file="{ref("assets/cube.msh")}" scale=".1 .1 .1"/>
  </asset>
  <worldbody>
    <geom type="hfield" hfield="terrain"/>
    <geom type="hfield" hfield="bin" pos="3 0 0"/>
    <body name="lower" pos="0 0 1">
      <freejoint/>
      <geom type="mesh" mesh="box" material="grid"/>
      <geom type="mesh" mesh="cube" pos=".4 0 0"/>
      <include file="{ref("parts/more.xml")}"/>
    </body>
  </worldbody>
</mujocoinclude>
"""


def _more(ref):
    return """<mujocoinclude>
  <body name="upper" pos="0 0 .4">
    <joint type="hinge" axis="1 0 0"/>
    <geom type="mesh" mesh="wedge"/>
  </body>
</mujocoinclude>
"""


def _plain(path):
    """A name as written in the files: meshes and textures under their directories'
    attributes, the nested include relative to the including file."""
    return path.split("/", 1)[1] if path.startswith(("assets/", "textures/")) else \
        ("more.xml" if path == "parts/more.xml" else path)


def _tree(skin=True) -> dict:
    """Every file of the model tree (relative path -> bytes)."""
    files = dict(FILES)
    files["model.xml"] = _main(_plain, skin).encode()
    files["parts/robot.xml"] = _robot(_plain).encode()
    files["parts/more.xml"] = _more(_plain).encode()
    return files


def _data_uri(path) -> str:
    """``path`` of the tree as a data: URI (an XML file with its own names so too)."""
    ext = path.rsplit(".", 1)[1]
    if path == "parts/robot.xml":
        data = _robot(_data_uri).encode()
    elif path == "parts/more.xml":
        data = _more(_data_uri).encode()
    else:
        data = FILES[path]
    return f"data:{MEDIA[ext]};base64,{base64.b64encode(data).decode()}"


def _write(tmp_path, files):
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path / "model.xml"


class MemProvider:
    """A provider of every callback over a dict (its ``data``), counting calls."""

    def __init__(self, files, prefix=None, allow_parent=False, open_ok=True, fail=None):
        self.prefix = prefix or next(_PREFIXES)
        self.open_ok, self.fail = open_ok, fail
        self.opened, self.closed, self.reads = [], [], collections.Counter()
        self.provider = ResourceProvider(self.prefix, self.open, self.read, self.close,
                                         getdir=self.getdir, data=files,
                                         allow_parent=allow_parent)
        register_provider(self.provider)

    def key(self, res: Resource) -> str:
        return res.name[len(self.prefix) + 1:]

    def open(self, res: Resource) -> bool:
        self.opened.append(res)
        if self.fail == "open":
            raise RuntimeError("disk on fire")
        files = res.provider.data  # (the provider's data, reached through the resource)
        if not self.open_ok or self.key(res) not in files:
            return False
        res.data = files[self.key(res)]
        return True

    def read(self, res: Resource):
        self.reads[self.key(res)] += 1
        if self.fail == "read":
            raise KeyError("lost " + self.key(res))
        return memoryview(res.data)

    def close(self, res: Resource) -> None:
        self.closed.append(res)
        res.data = None

    def getdir(self, res: Resource) -> str:
        return dir_part(res.name) or res.name[:len(self.prefix) + 1]  # ("mem:")

    def assert_balanced(self):
        """Every resource opened was closed, once."""
        assert self.opened, "the provider was never asked"
        assert collections.Counter(map(id, self.opened)) == \
            collections.Counter(map(id, self.closed))
        assert all(v == 1 for v in collections.Counter(map(id, self.closed)).values())


# -- the same Model from every source ------------------------------------------------------

@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """MuJoCo's compiles of the tree's files, with and without the skin."""
    out = {}
    for skin in (True, False):
        path = _write(tmp_path_factory.mktemp(f"tree{int(skin)}"), _tree(skin))
        out[skin] = mujoco.MjModel.from_xml_path(str(path))
    assert out[True].nskin == 1 and out[True].nmesh == 3 and out[True].nhfield == 2
    assert out[True].ntex == 3 and out[True].nflex == 1 and out[True].nbody > 3
    return out


PATH_FIELDS = ("paths", "mesh_pathadr", "skin_pathadr", "hfield_pathadr", "tex_pathadr")


def _check(spec, mjm, names_differ=False):
    """Every field equal; with ``names_differ`` (the XML names its files otherwise:
    data: URIs, prefixed names) the asset paths, which hold those names, are left out
    and checked to be the names written."""
    arrays = compile_spec(spec)
    skip = ()
    if names_differ:
        written = np.asarray(arrays.paths, dtype=np.uint8).tobytes().split(b"\0")
        assert any(n.startswith((b"data:", b"mem")) for n in written), written
        arrays.sizes = dict(arrays.sizes, npaths=mjm.npaths)
        skip = PATH_FIELDS
    errors = compare_model(arrays, mjm, skip=skip)
    assert not errors, "\n".join(errors)


def test_files_compile_as_mujoco(tmp_path, oracle):
    _check(load_spec(str(_write(tmp_path, _tree()))), oracle[True])


def test_assets_dict_compiles_as_mujoco(oracle):
    files = _tree()
    xml = files.pop("model.xml")
    _check(tiphys.parse_xml(xml, assets=files), oracle[True])
    # the main file from the assets dict too, as mj_loadXML(name, vfs)
    _check(load_spec("model.xml", assets=_tree()), oracle[True])


def test_registered_provider_compiles_as_mujoco(oracle):
    """The main file, its includes (the nested one found through the provider's
    getdir) and every asset from a provider; each resource closed once."""
    mem = MemProvider(_tree())
    _check(load_spec(f"{mem.prefix}:model.xml"), oracle[True])
    mem.assert_balanced()
    assert set(mem.reads) == set(_tree()), "some file did not come from the provider"
    names = {r.name for r in mem.opened}
    assert f"{mem.prefix}:parts/more.xml" in names  # (getdir "mem:parts/" + "more.xml")
    # MuJoCo matches schemes case-insensitively
    _check(load_spec(f"{mem.prefix.upper()}:model.xml"), oracle[True])
    mem.assert_balanced()


def test_provider_without_getdir_starts_names_from_nothing(oracle):
    """No getdir: names inside its resources start from "" (the working directory),
    as in MuJoCo; absolute names with the prefix still come from it."""
    tree = _tree()
    prefix = next(_PREFIXES)
    simple = ResourceProvider.simple(prefix, lambda name: tree[name[len(prefix) + 1:]])
    register_provider(simple)
    xml = _main(lambda p: f"{prefix}:{p}").replace(
        f'file="{prefix}:parts/robot.xml"', f'file="{prefix}:parts/robot2.xml"')
    tree["model.xml"] = xml.encode()
    tree["parts/robot2.xml"] = _robot(lambda p: f"{prefix}:{p}").encode()
    spec = load_spec(f"{prefix}:model.xml")
    assert spec.modeldir == ""
    _check(spec, oracle[True], names_differ=True)


def test_data_uris_compile_as_mujoco(oracle):
    """Every file as a data: URI, nested includes too (skins have no data: form: a
    skin file's type is its .skn extension)."""
    xml = _main(_data_uri, skin=False)
    _check(tiphys.parse_xml(xml), oracle[False], names_differ=True)


ATTACH_TREE = {
    "parent.xml": b"""<mujoco>
  <asset><model name="arm" file="child/arm.xml"/></asset>
  <worldbody>
    <body name="holder" pos="0 0 1"><geom size=".1"/>
      <attach model="arm" body="link" prefix="a_"/>
    </body>
  </worldbody>
</mujoco>""",
    "child/arm.xml": b"""<mujoco>
  <compiler meshdir="m"/>
  <asset><mesh name="box" file="box.obj"/></asset>
  <worldbody>
    <body name="link" pos="0 0 .5"><joint axis="0 1 0"/><geom type="mesh" mesh="box"/></body>
  </worldbody>
</mujoco>""",
    "child/m/box.obj": obj_cube(3),
}


def test_attached_model_from_provider_compiles_as_mujoco(tmp_path):
    """<asset><model file> from a provider; the child's meshdir-relative mesh from
    the provider too, relative to the child's directory (getdir)."""
    _write(tmp_path, ATTACH_TREE)
    mjm = mujoco.MjModel.from_xml_path(str(tmp_path / "parent.xml"))
    assert mjm.nmesh == 1
    mem = MemProvider(dict(ATTACH_TREE))
    arrays = compile_spec(load_spec(f"{mem.prefix}:parent.xml"))
    errors = compare_model(arrays, mjm, skip=PATH_FIELDS)
    assert not errors, "\n".join(errors)
    assert set(mem.reads) == set(ATTACH_TREE)
    mem.assert_balanced()


def test_changed_resource_is_not_served_stale(oracle):
    """A provider's bytes changed under the same name: the next compile has the new
    mesh (the compiled-mesh cache is keyed by content, not by name or time)."""
    tree = _tree()
    mem = MemProvider(tree)
    first = compile_spec(load_spec(f"{mem.prefix}:model.xml"))
    tree["assets/box.obj"] = obj_cube(5)
    second = compile_spec(load_spec(f"{mem.prefix}:model.xml"))
    assert not np.allclose(first.mesh_vert[:8], second.mesh_vert[:8])
    assert np.isclose(np.abs(second.mesh_vert[:8]).max(), 3 * 0.6)
    clear_mesh_cache()
    third = compile_spec(load_spec(f"{mem.prefix}:model.xml"))
    np.testing.assert_array_equal(second.mesh_vert, third.mesh_vert)
    mem.assert_balanced()


# -- registration ----------------------------------------------------------------------------

def _noop_provider(prefix, **kw):
    return ResourceProvider(prefix, lambda r: True, lambda r: b"", lambda r: None, **kw)


@pytest.mark.parametrize("prefix", ["", "1abc", "a b", "mem:", "ab/c", "ab_c", "\u00e9t\u00e9",
                                    "x"])
def test_invalid_prefix_refused(prefix):
    with pytest.raises(ValueError, match="prefix"):
        register_provider(_noop_provider(prefix))


def test_missing_callback_refused():
    p = _noop_provider(next(_PREFIXES))
    p.close = None
    with pytest.raises(ValueError, match="open, read and close"):
        register_provider(p)


def test_reregistering_same_provider_keeps_slot_and_other_one_is_refused():
    prefix = next(_PREFIXES)
    p = _noop_provider(prefix)
    slot = register_provider(p)
    assert register_provider(p) == slot  # identical: MuJoCo returns the same slot
    same = ResourceProvider(prefix.upper(), p.open, p.read, p.close)
    assert register_provider(same) == slot  # (the prefix compared case-insensitively)
    with pytest.raises(ValueError, match="already registered"):
        register_provider(_noop_provider(prefix.upper()))
    with pytest.raises(ValueError, match="already registered"):
        register_provider(ResourceProvider(prefix, p.open, p.read, p.close, data=object()))


def test_scheme_matching():
    prefix = next(_PREFIXES) + "http"
    p = _noop_provider(prefix)
    register_provider(p)
    assert get_provider(f"{prefix}://host/a.obj") is p
    assert get_provider(f"{prefix.upper()}://host/a.obj") is p
    assert get_provider(f"{prefix}s://host/a.obj") is None  # "https:" is not "http"
    assert get_provider(f"{prefix}//host/a.obj") is None    # the colon is required
    assert get_provider("C:/models/a.obj") is None           # a drive letter
    assert get_provider("data:,x") is not None


# -- bad input ---------------------------------------------------------------------------------

def _mesh_model(name):
    return (f'<mujoco>\n  <asset>\n    <mesh name="m" file="{name}"/>\n  </asset>\n'
            f'  <worldbody>\n    <geom type="mesh" mesh="m"/>\n  </worldbody>\n</mujoco>\n')


def _error(xml, tmp_path=None, **kw) -> ModelError:
    if tmp_path is not None:
        (tmp_path / "model.xml").write_text(xml)
        run = lambda: compile_spec(load_spec(str(tmp_path / "model.xml"), **kw))
    else:
        run = lambda: compile_spec(tiphys.parse_xml(xml, **kw))
    with pytest.raises(ModelError) as info:
        run()
    return info.value


def test_unknown_scheme_is_a_file_name_and_says_so(tmp_path):
    """As in MuJoCo, "foo:box.obj" with no provider "foo" is a file name."""
    xml = _mesh_model("nosuch:box.obj")
    (tmp_path / "model.xml").write_text(xml)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(tmp_path / "model.xml"))
    exc = _error(xml, tmp_path)
    assert (exc.file, exc.line, exc.element, exc.attribute) == \
        ("model.xml", 3, "mesh", "file"), str(exc)
    assert "no resource provider 'nosuch' is registered" in str(exc)
    assert f"{tmp_path}/nosuch:box.obj" in str(exc)
    # and it is one: a file of that name loads, in both engines
    (tmp_path / "nosuch:box.obj").write_bytes(obj_cube(1))
    mjm = mujoco.MjModel.from_xml_path(str(tmp_path / "model.xml"))
    arrays = compile_spec(load_spec(str(tmp_path / "model.xml")))
    np.testing.assert_allclose(arrays.mesh_vert, mjm.mesh_vert, atol=1e-6)


def test_missing_file_names_element_attribute_and_path(tmp_path):
    exc = _error(_mesh_model("gone.obj"), tmp_path)
    assert (exc.line, exc.element, exc.attribute) == (3, "mesh", "file")
    assert f"{tmp_path}/gone.obj" in str(exc) and "No such file" in str(exc)


def test_provider_open_false_names_the_provider():
    mem = MemProvider({"box.obj": obj_cube(1)}, open_ok=False)
    exc = _error(_mesh_model(f"{mem.prefix}:box.obj"))
    assert (exc.line, exc.element, exc.attribute) == (3, "mesh", "file")
    assert f"resource provider '{mem.prefix}'" in str(exc) and "open returned False" in \
        str(exc)
    mem.assert_balanced()  # (closed after a failed open too, as MuJoCo does)
    assert not mem.reads


def test_provider_missing_name_is_an_error_not_a_file_lookup():
    mem = MemProvider({})
    exc = _error(_mesh_model(f"{mem.prefix}:box.obj"))
    assert f"could not open '{mem.prefix}:box.obj'" in str(exc)
    assert "file '" not in str(exc)
    mem.assert_balanced()


@pytest.mark.parametrize("stage", ["open", "read"])
def test_provider_that_raises_is_chained(stage):
    mem = MemProvider({"box.obj": obj_cube(1)}, fail=stage)
    exc = _error(_mesh_model(f"{mem.prefix}:box.obj"))
    assert (exc.line, exc.element, exc.attribute) == (3, "mesh", "file")
    assert f"resource provider '{mem.prefix}' failed {stage}ing" in str(exc)
    cause = exc.__cause__
    assert isinstance(cause, RuntimeError if stage == "open" else KeyError), repr(cause)
    mem.assert_balanced()


def test_provider_failing_in_include_and_texture_face():
    mem = MemProvider({}, fail="read")
    mem.provider.data.update({"a.xml": b"<x><option/></x>", "r.png": png(2, 2, 0, "RGB")})
    exc = _error(f'<mujoco>\n  <include file="{mem.prefix}:a.xml"/>\n</mujoco>')
    assert (exc.line, exc.element, exc.attribute) == (2, "include", "file")
    assert isinstance(exc.__cause__, KeyError)
    exc = _error(f'<mujoco>\n  <asset>\n    <texture type="cube" '
                 f'fileright="{mem.prefix}:r.png" content_type="image/png"/>\n'
                 f'  </asset>\n</mujoco>')
    assert (exc.line, exc.element, exc.attribute) == (3, "texture", "fileright")
    mem.assert_balanced()


def test_provider_reading_no_bytes_is_refused():
    prefix = next(_PREFIXES)
    register_provider(ResourceProvider(prefix, lambda r: True, lambda r: "text",
                                       lambda r: None))
    exc = _error(_mesh_model(f"{prefix}:box.obj"))
    assert "read str, not bytes" in str(exc) and exc.attribute == "file"


def test_climbing_out_of_a_provider_is_refused_unless_allowed():
    files = {"x.obj": obj_cube(1), "a/x.obj": obj_cube(2)}
    mem = MemProvider(files)
    exc = _error(_mesh_model(f"{mem.prefix}:a/../../x.obj"))
    assert (exc.element, exc.attribute) == ("mesh", "file")
    assert f"root of resource provider '{mem.prefix}'" in str(exc)
    assert "allow_parent=True" in str(exc)
    assert not mem.opened  # refused before the provider is asked
    exc = _error(f'<mujoco>\n  <include file="{mem.prefix}:../x.xml"/>\n</mujoco>')
    assert (exc.line, exc.element, exc.attribute) == (2, "include", "file")
    assert "climbs above" in str(exc) and not mem.opened
    # inside its root, ".." is folded before the provider sees the name
    arrays = compile_spec(tiphys.parse_xml(_mesh_model(f"{mem.prefix}:a/b/../x.obj")))
    assert np.isclose(np.abs(arrays.mesh_vert).max(), 0.9)  # (a/x.obj's box)
    assert mem.opened[-1].name == f"{mem.prefix}:a/x.obj"
    # a model of the provider climbing with meshdir="../x" is refused the same way
    files["m/model.xml"] = (b'<mujoco><compiler meshdir="../.."/>' +
                            _mesh_model("x.obj")[8:].encode())
    with pytest.raises(ModelError, match="climbs above"):
        compile_spec(load_spec(f"{mem.prefix}:m/model.xml"))
    mem.assert_balanced()
    free = MemProvider({"../x.obj": obj_cube(1)}, allow_parent=True)
    compile_spec(tiphys.parse_xml(_mesh_model(f"{free.prefix}:a/../../x.obj")))
    assert free.opened[-1].name == f"{free.prefix}:../x.obj"


def test_plain_files_may_climb(tmp_path):
    """Menagerie's meshdir="../assets": for files, ".." stays allowed."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "box.obj").write_bytes(obj_cube(1))
    (tmp_path / "m").mkdir()
    xml = '<mujoco><compiler meshdir="../assets"/>' + _mesh_model("box.obj")[8:]
    (tmp_path / "m" / "model.xml").write_text(xml)
    mjm = mujoco.MjModel.from_xml_path(str(tmp_path / "m" / "model.xml"))
    arrays = compile_spec(load_spec(str(tmp_path / "m" / "model.xml")))
    np.testing.assert_allclose(arrays.mesh_vert, mjm.mesh_vert, atol=1e-6)


def test_main_file_errors_name_the_path(tmp_path):
    with pytest.raises(ModelError, match="No such file") as info:
        load_spec(str(tmp_path / "gone.xml"))
    assert info.value.file == str(tmp_path / "gone.xml")
    mem = MemProvider({}, fail="read")
    mem.provider.data["m.xml"] = b"<mujoco/>"
    with pytest.raises(ModelError, match=f"resource provider '{mem.prefix}' failed") as info:
        load_spec(f"{mem.prefix}:m.xml")
    assert isinstance(info.value.__cause__, KeyError)
    mem.assert_balanced()


def test_probe_opens_and_closes_without_reading():
    mem = MemProvider({"a.obj": b"v 0 0 0\n"})
    reader = ResourceReader("")
    assert reader.exists(f"{mem.prefix}:a.obj")
    assert not mem.reads
    mem.assert_balanced()


def test_data_uri_errors_and_wrapped_base64():
    exc = _error(_mesh_model("data:model/obj;base64,%%%"))
    assert (exc.line, exc.element, exc.attribute) == (3, "mesh", "file")
    assert "resource provider 'data' failed opening" in str(exc)
    exc = _error(_mesh_model("data:model/obj;base64"))
    assert "no comma" in str(exc)
    wrapped = base64.encodebytes(obj_cube(1)).decode().replace("\n", "&#10;")
    arrays = compile_spec(tiphys.parse_xml(_mesh_model(f"data:model/obj;base64,{wrapped}")))
    assert np.isclose(np.abs(arrays.mesh_vert).max(), 0.6)


def test_simple_provider_missing_name_does_not_open():
    prefix = next(_PREFIXES)
    files = {f"{prefix}:a.obj": obj_cube(0)}
    register_provider(ResourceProvider.simple(prefix, files.__getitem__))  # (full names)
    exc = _error(_mesh_model(f"{prefix}:b.obj"))
    assert f"could not open '{prefix}:b.obj' using the resource provider '{prefix}'" in \
        str(exc)
    arrays = compile_spec(tiphys.parse_xml(_mesh_model(f"{prefix}:a.obj")))
    assert np.isclose(np.abs(arrays.mesh_vert).max(), 0.3)


# -- modified: reusing what was read (MuJoCo's asset cache) ---------------------------------

# MuJoCo's side runs in a process of its own: its asset cache, once sized 0 (as this
# file does at import, for the field comparisons above), stays off for good, and a
# provider registered in MuJoCo stays registered. MuJoCo's Python API registers no
# provider, so the script registers one in MuJoCo's library through ctypes.
MJ_PROVIDER_SCRIPT = r"""
import base64, collections, ctypes as c, json, os, sys
import mujoco

lib = c.CDLL(os.path.join(os.path.dirname(mujoco.__file__),
                          f"libmujoco.so.{mujoco.__version__}"))


class Res(c.Structure):
    _fields_ = [("name", c.c_char_p), ("data", c.c_void_p),
                ("timestamp", c.c_char * 512), ("provider", c.c_void_p)]


OPEN = c.CFUNCTYPE(c.c_int, c.POINTER(Res))
READ = c.CFUNCTYPE(c.c_int, c.POINTER(Res), c.POINTER(c.c_void_p))
CLOSE = c.CFUNCTYPE(None, c.POINTER(Res))
GETDIR = c.CFUNCTYPE(None, c.POINTER(Res), c.POINTER(c.c_char_p), c.POINTER(c.c_int))
MODIFIED = c.CFUNCTYPE(c.c_int, c.POINTER(Res), c.c_char_p)


class Provider(c.Structure):
    _fields_ = [("prefix", c.c_char_p), ("open", OPEN), ("read", READ), ("close", CLOSE),
                ("getdir", GETDIR), ("modified", MODIFIED), ("data", c.c_void_p)]


KEEP = []


def run_case(n, files, modified, new_files):
    state = {"stamp": "v1", "reads": collections.Counter(), "asked": []}
    buffers = {}

    def key(res):  # ("pv0:/box.obj": MuJoCo joins "pv0:" and "box.obj" so)
        return res.contents.name.decode().split(":", 1)[1].lstrip("/")

    def open_(res):
        if key(res) not in files:
            return 0
        res.contents.timestamp = state["stamp"].encode()
        return 1

    def read(res, buf):
        state["reads"][key(res)] += 1
        data = buffers[key(res)] = c.create_string_buffer(files[key(res)])
        buf[0] = c.cast(data, c.c_void_p)
        return len(files[key(res)])

    def getdir(res, out, size):
        name = res.contents.name
        out[0] = name
        size[0] = max(name.rfind(b"/"), name.find(b":")) + 1

    def changed(res, stamp):
        state["asked"].append([key(res), stamp.decode()])
        return MODIFIERS[modified](stamp.decode())

    prefix = f"pv{n}"
    struct = Provider(prefix.encode(), OPEN(open_), READ(read), CLOSE(lambda res: None),
                      GETDIR(getdir), MODIFIED(changed) if modified else MODIFIED(), None)
    KEEP.append((struct, buffers))
    assert lib.mjp_registerResourceProvider(c.byref(struct)) > 0
    for k in range(2):
        if k == 1 and new_files is not None:
            files.update(new_files)
            state["stamp"] = "v2"
        mjm = mujoco.MjModel.from_xml_path(f"{prefix}:model.xml")
    return {"reads": state["reads"], "asked": state["asked"],
            **{f: getattr(mjm, f).tolist() for f in ("mesh_vert", "hfield_data", "tex_data")}}


cases = json.load(sys.stdin)
MODIFIERS = {name: eval(code) for name, code in cases["modifiers"].items()}
first, second = ({k: base64.b64decode(v) for k, v in cases[w].items()}
                 for w in ("files", "new_files"))
out = {}
for n, (name, (modified, new)) in enumerate(cases["cases"].items()):
    mujoco.mj_clearCache(mujoco.mj_getCache())
    out[name] = run_case(n, dict(first), modified, second if new else None)
print(json.dumps(out))
"""


class StampedMemProvider(MemProvider):
    """MemProvider whose resources get the timestamp ``self.stamp`` on open, and with
    ``modified`` (None: no callback)."""

    def __init__(self, files, modified):
        self.stamp, self.asked = "v1", []
        super().__init__(files)
        if modified is not None:
            def changed(res, stamp):
                self.asked.append((self.key(res), stamp))
                return modified(stamp)
            self.provider.modified = changed

    def open(self, res: Resource) -> bool:
        ok = super().open(res)
        res.timestamp = self.stamp
        return ok


ASSET_MODEL = b"""<mujoco><asset><mesh name="m" file="box.obj"/>
  <hfield name="h" file="terrain.png" size="1 1 1 1"/>
  <texture name="t" type="2d" file="tex.png"/><material name="mat" texture="t"/></asset>
  <worldbody><geom type="mesh" mesh="m"/><geom type="hfield" hfield="h"/>
    <geom size=".1" material="mat"/></worldbody></mujoco>"""
ASSET_FILES = {"model.xml": ASSET_MODEL, "box.obj": obj_cube(0), "terrain.png": png(5, 4, 1),
               "tex.png": png(3, 4, 2, "RGB")}
# what the second load finds in the "new" cases (with the timestamp "v2")
NEW_FILES = {"box.obj": obj_cube(4), "terrain.png": png(6, 5, 3), "tex.png": png(4, 2, 4, "RGB")}
DECODED = ("box.obj", "terrain.png", "tex.png")
# modified callbacks by name (source text: MuJoCo's side evaluates the same)
MODIFIERS = {"zero": "lambda stamp: 0", "one": "lambda stamp: 1", "minus": "lambda stamp: -1",
             "since-v1": "lambda stamp: int(stamp != 'v1')",
             "since-v2": "lambda stamp: int(stamp != 'v2')"}
# name: (modified, whether the second load finds NEW_FILES, reads of each decoded
# file, tiphys's mesh compiles) over two loads
MODIFIED_CASES = {
    # "not modified": the mesh, height field and image are reused, each file read once
    "unmodified": ("zero", False, 1, 1),
    # "modified": read again (tiphys decodes again only when the bytes differ)
    "modified-same-bytes": ("one", False, 2, 1),
    "modified-new-bytes": ("one", True, 2, 2),
    "older": ("minus", True, 2, 2),
    # no modified callback: MuJoCo assumes modified
    "no-callback": (None, False, 2, 1),
    "no-callback-new-bytes": (None, True, 2, 2),
    # a provider that compares timestamps: the new version is read, the same one not
    "timestamps-unchanged": ("since-v1", False, 1, 1),
    "timestamps-changed": ("since-v2", True, 2, 2),
    # a provider saying "not modified" of new bytes gets the old assets, in both
    "stale-by-its-word": ("zero", True, 1, 1),
}


@pytest.fixture(scope="module")
def mujoco_reuse():
    """MuJoCo's two loads of every MODIFIED_CASES case (in a process of its own)."""
    import json
    import subprocess
    import sys

    def b64(files):
        return {k: base64.b64encode(v).decode() for k, v in files.items()}
    cases = {"modifiers": MODIFIERS, "files": b64(ASSET_FILES), "new_files": b64(NEW_FILES),
             "cases": {name: (mod, new) for name, (mod, new, _, _) in MODIFIED_CASES.items()}}
    done = subprocess.run([sys.executable, "-c", MJ_PROVIDER_SCRIPT], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def fresh_mesh_cache():
    clear_mesh_cache()
    yield
    clear_mesh_cache()


@pytest.mark.parametrize("case", list(MODIFIED_CASES))
def test_modified_decides_whether_an_asset_is_read_again_as_in_mujoco(
        mujoco_reuse, fresh_mesh_cache, case):
    """A mesh, a height field and a texture from a provider, loaded twice: which files
    are read again, what modified is asked, and the assets, against MuJoCo's cache."""
    import tiphys.compiler.mesh as mesh_module
    modified, new, reads, compiles = MODIFIED_CASES[case]
    files = dict(ASSET_FILES)
    ours = StampedMemProvider(files, eval(MODIFIERS[modified]) if modified else None)
    compiled = []
    real = mesh_module._compile_mesh

    def counting(**kw):
        compiled.append(kw["file_name"])
        return real(**kw)
    mesh_module._compile_mesh = counting
    try:
        for k in range(2):
            if k == 1 and new:
                files.update(NEW_FILES)
                ours.stamp = "v2"
            arrays = compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    finally:
        mesh_module._compile_mesh = real
    ours.assert_balanced()
    theirs = mujoco_reuse[case]
    for name in DECODED:
        assert theirs["reads"][name] == ours.reads[name] == reads, name
    assert theirs["reads"]["model.xml"] == ours.reads["model.xml"] == 2
    # modified is asked once per file, on the second load, with the first load's
    # timestamp
    want = sorted([name, "v1"] for name in DECODED) if modified is not None else []
    assert sorted(theirs["asked"]) == sorted(list(a) for a in ours.asked) == want
    assert len(compiled) == compiles
    for field in ("mesh_vert", "hfield_data", "tex_data"):
        np.testing.assert_array_equal(np.asarray(getattr(arrays, field)).reshape(-1),
                                      np.asarray(theirs[field]).reshape(-1), field)
    old = not new or case == "stale-by-its-word"
    assert np.isclose(np.abs(np.asarray(theirs["mesh_vert"])).max(), 0.3 if old else 1.5)


def test_modified_mesh_reuse_keeps_its_compile_inputs(fresh_mesh_cache):
    """A mesh reused by its provider's word still compiles anew when its attributes
    differ (MuJoCo's cached mesh must match scale, inertia and maxhullvert): the file
    is then read again."""
    files = dict(ASSET_FILES)
    ours = StampedMemProvider(files, lambda stamp: 0)
    compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    files["model.xml"] = ASSET_MODEL.replace(b'file="box.obj"', b'file="box.obj" scale="2 1 1"')
    arrays = compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    assert ours.reads["box.obj"] == 2
    assert np.isclose(np.abs(arrays.mesh_vert[:, 0]).max(), 0.2)
    arrays = compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    assert ours.reads["box.obj"] == 2  # (that one is cached now)
    clear_mesh_cache()  # forgets what was read too
    compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    assert ours.reads["box.obj"] == 3
    ours.assert_balanced()


@pytest.mark.parametrize("answer, words", [
    (RuntimeError("clock gone"), "failed modified for"),
    ("0", "modified gave str, not int"),
])
def test_modified_failing_is_a_provider_error(fresh_mesh_cache, answer, words):
    def modified(stamp):
        if isinstance(answer, Exception):
            raise answer
        return answer
    ours = StampedMemProvider(dict(ASSET_FILES), modified)
    compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    with pytest.raises(ModelError, match=words) as info:
        compile_spec(load_spec(f"{ours.prefix}:model.xml"))
    assert info.value.element == "mesh" and info.value.attribute == "file"
    assert ours.prefix in str(info.value)
    ours.assert_balanced()
