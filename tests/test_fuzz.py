"""Fuzzing the MJCF parser and compiler with mutated models (DESIGN.md section 6).

A few small valid seed models are mutated (elements deleted, duplicated, swapped,
moved or renamed; attributes dropped, added or corrupted with random strings,
wrong counts, huge/negative/zero numbers and nan; references renamed; the text
truncated or salted with random bytes) and fed to ``compile_spec(parse_xml(...))``.
Every outcome must be a normal return, a located ``ModelError`` or a
``NotImplementedError`` for one of the features in NOT_YET (the compiler's pinned
list of elements it does not compile yet, located like a ModelError); any other
exception, another NotImplementedError, or a hang, is a leak.
"""
from __future__ import annotations

import copy
import re
import signal
from contextlib import contextmanager
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from tiphys.compiler.compile import compile_spec
from tiphys.errors import ModelError
from tiphys.spec import parse_xml

SEED_TREE = """<mujoco model="tree">
  <compiler angle="degree" autolimits="true"/>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <default>
    <geom rgba="0.8 0.6 0.4 1" friction="1 0.005 0.0001"/>
    <joint damping="0.1"/>
    <default class="limb">
      <geom type="capsule" size="0.05"/>
      <joint type="hinge" axis="0 1 0" range="-90 90"/>
      <default class="finger">
        <geom size="0.02"/>
      </default>
    </default>
  </default>
  <worldbody>
    <light name="sun" pos="0 0 3" dir="0 0 -1" directional="true"/>
    <camera name="fixed" pos="0 -3 1" xyaxes="1 0 0 0 0.3 1"/>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <site name="origin" pos="0 0 0" size="0.01"/>
    <body name="torso" pos="0 0 1" childclass="limb">
      <freejoint name="root"/>
      <geom name="torso_geom" type="box" size="0.1 0.15 0.2"/>
      <camera name="track" mode="track" pos="0 -2 0" euler="80 0 0"/>
      <body name="arm" pos="0.2 0 0" euler="0 0 30">
        <joint name="shoulder" type="ball" range="0 60"/>
        <geom name="upper" fromto="0 0 0 0.3 0 0"/>
        <site name="elbow_site" type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
        <body name="forearm" pos="0.3 0 0" quat="1 0 0 0">
          <joint name="elbow"/>
          <geom name="lower" fromto="0 0 0 0.25 0 0" class="finger"/>
          <body name="hand" pos="0.25 0 0" axisangle="0 0 1 45">
            <joint name="wrist_slide" type="slide" axis="1 0 0" range="-0.1 0.1"/>
            <geom type="ellipsoid" size="0.03 0.02 0.01"/>
            <geom type="cylinder" size="0.01 0.02" pos="0.03 0 0" zaxis="1 0 0"/>
            <geom type="sphere" size="0.015" pos="0.05 0 0" class="finger"/>
          </body>
        </body>
      </body>
      <frame pos="0 0.3 0" euler="0 0 90">
        <body name="leg">
          <joint name="hip" axis="1 0 0"/>
          <geom fromto="0 0 0 0 0 -0.4"/>
          <inertial pos="0 0 -0.2" mass="1" diaginertia="0.01 0.01 0.002"/>
        </body>
      </frame>
    </body>
    <body name="mocap" mocap="true" pos="1 1 1">
      <geom type="box" size="0.05 0.05 0.05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <keyframe>
    <key name="home" time="0" qpos="0 0 1 1 0 0 0 1 0 0 0 0 0 0"/>
  </keyframe>
</mujoco>
"""

SEED_ASSETS = """<mujoco model="assets">
  <asset>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1" face="0 2 1  0 1 3  0 3 2  1 2 3"/>
    <mesh name="cube" scale="0.1 0.1 0.1" vertex="-1 -1 -1  1 -1 -1  1 1 -1  -1 1 -1  -1 -1 1  1 -1 1  1 1 1  -1 1 1"/>
    <hfield name="terrain" nrow="3" ncol="3" size="1 1 0.2 0.1" elevation="0 1 0  1 2 1  0 1 0"/>
    <texture name="grid" type="2d" builtin="checker" width="8" height="8" rgb1="0 0 0" rgb2="1 1 1"/>
    <material name="mat" texture="grid" rgba="1 1 1 1" texrepeat="2 2"/>
    <material name="red" rgba="1 0 0 1"/>
  </asset>
  <default>
    <default class="vis">
      <geom contype="0" conaffinity="0" group="2" material="red"/>
    </default>
  </default>
  <worldbody>
    <geom name="ground" type="hfield" hfield="terrain" material="mat"/>
    <body name="a" pos="0 0 1">
      <joint name="j" type="hinge" axis="1 0 0"/>
      <geom name="m" type="mesh" mesh="tet" density="500"/>
      <geom name="c" type="mesh" mesh="cube" class="vis" pos="0 0 0.5"/>
      <geom name="fit" type="box" mesh="cube" pos="0.5 0 0"/>
      <site name="s" material="red" type="box" size="0.01 0.02 0.03"/>
    </body>
    <body name="b" pos="1 0 1">
      <joint type="slide" axis="0 0 1" limited="true" range="-1 1"/>
      <geom type="sphere" size="0.1" mass="2"/>
      <light name="spot" mode="targetbody" target="a" pos="0 0 1"/>
      <camera name="cam" mode="targetbodycom" target="a" fovy="60"/>
    </body>
  </worldbody>
  <keyframe>
    <key name="k0" qpos="0.1 0.2"/>
    <key qvel="1 2"/>
  </keyframe>
</mujoco>
"""

SEED_MISC = """<mujoco model="misc">
  <compiler angle="radian" eulerseq="zyx" inertiafromgeom="auto"/>
  <size nkey="2"/>
  <visual><global fovy="50"/><map znear="0.02"/></visual>
  <statistic extent="2" center="0 0 0.5"/>
  <default>
    <site rgba="0 1 0 1"/>
    <default class="main2">
      <joint type="slide" limited="false"/>
    </default>
  </default>
  <custom>
    <numeric name="n1" data="1 2 3"/>
    <text name="t1" data="hello"/>
  </custom>
  <worldbody>
    <body name="base" pos="0 0 0.5" euler="0.1 0.2 0.3" gravcomp="0.5">
      <joint name="x" class="main2" axis="1 0 0"/>
      <joint name="y" class="main2" axis="0 1 0"/>
      <joint name="rz" type="hinge" axis="0 0 1" limited="true" range="-1 1" ref="0.1"/>
      <inertial pos="0 0 0" mass="2" fullinertia="0.1 0.1 0.1 0.01 0 0"/>
      <geom type="capsule" size="0.05 0.1" user="1 2"/>
      <site name="tip" pos="0 0 0.2" type="ellipsoid" size="0.01 0.02 0.03"/>
      <frame euler="0 0 1">
        <frame pos="0.1 0 0">
          <geom type="box" size="0.01 0.01 0.01" quat="0 1 0 0"/>
          <site type="cylinder" size="0.01 0.02"/>
        </frame>
      </frame>
      <body name="child" pos="0 0 0.3">
        <joint type="ball" damping="1" stiffness="2" armature="0.01"/>
        <geom type="sphere" size="0.05" density="2000"/>
        <light type="point" pos="0 0 0.1" castshadow="false"/>
        <camera name="c2" fovy="30" resolution="64 48"/>
      </body>
    </body>
  </worldbody>
  <keyframe>
    <key time="1" qpos="0 0 0 1 0 0 0"/>
  </keyframe>
</mujoco>
"""

SEED_FLEX = """
<mujoco model="flex">
  <worldbody>
    <body name="b0"><freejoint/><geom size="0.01"/></body>
    <body name="b1" pos="0.1 0 0"><freejoint/><geom size="0.01"/></body>
    <body name="b2" pos="0 0.1 0"><freejoint/><geom size="0.01"/></body>
    <body name="holder" pos="0 0 1">
      <flexcomp name="cloth" type="grid" count="3 3 1" spacing="0.1 0.1 0.1" dim="2"
                radius="0.01" dof="full" mass="1">
        <pin id="0"/>
        <elasticity young="100" poisson="0.2" thickness="0.01" elastic2d="stretch"/>
        <contact condim="3" selfcollide="none" vertcollide="true"/>
      </flexcomp>
      <flexcomp name="cube" type="box" count="3 3 3" spacing="0.1 0.1 0.1" dim="3"
                radius="0.01" pos="1 0 0">
        <edge equality="true"/>
      </flexcomp>
    </body>
  </worldbody>
  <deformable>
    <flex name="tri" dim="2" body="b0 b1 b2" element="0 1 2">
      <edge damping="0.1"/>
    </flex>
  </deformable>
  <equality>
    <flex flex="tri"/>
  </equality>
</mujoco>
"""

SEEDS = {"tree": SEED_TREE, "assets": SEED_ASSETS, "misc": SEED_MISC, "flex": SEED_FLEX}


# -- mutations ------------------------------------------------------------------------

# Attributes worth corrupting or adding (a mix of typed, keyword and reference ones).
ATTR_POOL = (
    "name", "class", "childclass", "pos", "quat", "euler", "axisangle", "xyaxes", "zaxis",
    "size", "type", "fromto", "mass", "density", "range", "limited", "axis", "ref",
    "condim", "group", "contype", "rgba", "friction", "mesh", "hfield", "material",
    "target", "mode", "fovy", "dir", "qpos", "qvel", "vertex", "face", "elevation",
    "nrow", "ncol", "diaginertia", "fullinertia", "mocap", "scale", "angle", "eulerseq",
    "inertiafromgeom", "gravcomp", "damping", "springdamper", "resolution", "sensorsize",
    "focal", "principalpixel", "texture", "texrepeat", "data", "nkey", "nuser_geom",
    "user", "shellinertia", "fitscale", "fluidshape", "maxhullvert", "inertia",
    "refpos", "refquat", "autolimits", "boundmass", "balanceinertia", "settotalmass",
    "time", "mpos", "mquat", "file", "builtin", "cutoff", "orthographic", "timestep",
    "gravity", "integrator", "znear", "extent", "inertiagrouprange", "solref", "solimp",
    "count", "spacing", "dim", "dof", "radius", "point", "element", "body", "young",
    "poisson", "thickness", "elastic2d", "selfcollide", "activelayers", "equality", "id",
    "gridrange", "inertiabox", "rigid", "flex",
)


def _schema_tables():
    """Tag -> attributes, and tag -> child tags, the schema allows for that tag."""
    from tiphys.spec.schema import SCHEMA
    attrs, children = {}, {}

    def walk(tag, node):
        attrs.setdefault(tag, set()).update(node.get("attrs") or ())
        children.setdefault(tag, set()).update(node.get("children") or ())
        for ctag, child in (node.get("children") or {}).items():
            walk(ctag, child)

    walk("mujoco", SCHEMA)
    attrs.setdefault("frame", set()).update(("name", "childclass", "pos", "quat", "axisangle",
                                             "xyaxes", "zaxis", "euler"))
    body = children.get("body", set()) | {"body", "frame"}
    for tag in ("worldbody", "frame", "body"):
        children[tag] = body
    children["mujoco"] = set(children["mujoco"]) | {"worldbody"}
    return ({k: sorted(v) for k, v in attrs.items()},
            {k: sorted(v) for k, v in children.items()})


SCHEMA_ATTRS, SCHEMA_CHILDREN = _schema_tables()

# Element tags for renaming/insertion.
TAG_POOL = ("body", "geom", "joint", "freejoint", "site", "camera", "light", "frame",
            "inertial", "default", "mesh", "hfield", "material", "key", "worldbody",
            "asset", "compiler", "include", "bogus", "numeric", "option", "size")

SPECIAL_VALUES = (
    "", " ", "nan", "inf", "-inf", "NaN nan nan", "0", "-0", "-1", "1e308", "-1e308",
    "1e-320", "1e400", "0 0 0", "0 0 0 0", "0 0 0 0 0 0", "-1 -1 -1", "1 2", "1 2 3 4 5",
    "1 2 3 4 5 6 7", "true", "false", "auto", "free", "ball", "slide", "hinge", "sphere",
    "plane", "mesh", "hfield", "box", "sdf", "a b", "0x10", "1,2,3", "1e5 1e5 1e5",
    "99999999999999999999", "-2147483649", "2147483648", "main", "limb", "finger", "vis",
    "main2", "tet", "cube", "terrain", "mat", "red", "grid", "a", "torso", "world",
    "0 1 0 0", "0 0 1", "1 0 0 0 1 0", "xyz", "XYZ", "xxx", "degree", "radian",
    "0 -1", "1 -1", "5 5", "-90 90", "0 0 0 1 0 0", "1 1 1 0 0 0", "0 0 0 0 0 1",
    "file.stl", "missing.obj", "x.png", "data:,abc",
)


def _number_lists():
    num = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True, width=64),
        st.integers(min_value=-10**20, max_value=10**20),
        st.sampled_from([0, -1, 1, 1e-300, 1e300, -0.0]))
    return st.lists(num, min_size=0, max_size=8).map(lambda xs: " ".join(map(str, xs)))


# mostly special values, then number lists, then arbitrary text
VALUES = st.integers(0, 9).flatmap(
    lambda k: st.sampled_from(SPECIAL_VALUES) if k < 5 else
    _number_lists() if k < 8 else st.text(max_size=12))

# One mutation: (kind, index, index2, value). Indices are taken modulo the number
# of candidates when the mutation is applied, so every drawn op is applicable.
TREE_OPS = ("delete", "duplicate", "swap", "move", "drop_attr", "set_attr", "add_attr",
            "copy_attr", "rename_tag", "insert_elem", "set_text")
TEXT_OPS = ("truncate", "insert_bytes", "delete_span", "dup_span")

# weights: attribute corruption is the most productive, text damage the least
TREE_WEIGHTED = TREE_OPS + ("set_attr",) * 6 + ("add_attr",) * 4 + ("copy_attr",) * 2 + \
    ("drop_attr",) * 2 + ("delete", "duplicate", "swap", "move")

TREE_OP = st.tuples(st.sampled_from(TREE_WEIGHTED), st.integers(0, 10**6),
                    st.integers(0, 10**6), VALUES)
TEXT_OP = st.tuples(st.sampled_from(TEXT_OPS), st.integers(0, 10**6), st.integers(0, 64),
                    st.binary(max_size=8))
# one text-level op (which mostly yields an XML syntax error) per eight
OPS = st.integers(0, 7).flatmap(lambda k: TEXT_OP if k == 0 else TREE_OP)


def _elements(root):
    return [e for e in root.iter() if isinstance(e.tag, str)]


def _apply_tree_op(root, op):
    kind, i, j, value = op
    els = _elements(root)
    el = els[i % len(els)]
    other = els[j % len(els)]
    parent = el.getparent()
    if kind == "delete":
        if parent is not None:
            parent.remove(el)
    elif kind == "duplicate":
        if parent is not None:
            el.addnext(copy.deepcopy(el))
    elif kind == "swap":
        if parent is not None and other.getparent() is not None and el is not other \
                and other not in el.iterancestors() and el not in other.iterancestors():
            a, b = copy.deepcopy(el), copy.deepcopy(other)
            el.getparent().replace(el, b)
            other.getparent().replace(other, a)
    elif kind == "move":
        # to another element of the parent's kind (a body into another body, ...)
        if parent is not None and other is not el and el not in other.iterancestors() \
                and (other.tag == parent.tag or j % 4 == 0):
            parent.remove(el)
            other.append(el)
    elif kind == "drop_attr":
        if el.attrib:
            keys = list(el.attrib)
            del el.attrib[keys[j % len(keys)]]
    elif kind == "set_attr":
        keys = list(el.attrib) or [ATTR_POOL[j % len(ATTR_POOL)]]
        el.set(keys[j % len(keys)], _xml_safe(value))
    elif kind == "add_attr":
        # mostly an attribute the element may have, sometimes any from the pool
        pool = SCHEMA_ATTRS.get(el.tag) if i % 8 else None
        pool = pool or ATTR_POOL
        el.set(pool[j % len(pool)], _xml_safe(value))
    elif kind == "copy_attr":
        # rename references: give el an attribute value taken from another element
        if other.attrib:
            keys = list(other.attrib)
            k = keys[i % len(keys)]
            target = list(el.attrib) or [k]
            el.set(target[j % len(target)], other.get(k))
    elif kind == "rename_tag":
        el.tag = TAG_POOL[j % len(TAG_POOL)]
    elif kind == "insert_elem":
        allowed = SCHEMA_CHILDREN.get(el.tag) if j % 4 else None
        tags = allowed or TAG_POOL
        tag = tags[j % len(tags)]
        child = etree.SubElement(el, tag)
        pool = SCHEMA_ATTRS.get(tag) or ATTR_POOL
        child.set(pool[i % len(pool)], _xml_safe(value))
    elif kind == "set_text":
        el.text = _xml_safe(value)


def _xml_safe(value: str) -> str:
    """Drop characters lxml refuses in attribute values (those are a text-level op)."""
    return "".join(c for c in value if c in "\t\n\r" or (" " <= c <= "\ud7ff")
                   or ("\ue000" <= c <= "\ufffd"))


def _apply_text_op(data: bytes, op) -> bytes:
    kind, i, n, blob = op
    pos = i % (len(data) + 1)
    if kind == "truncate":
        return data[:pos]
    if kind == "insert_bytes":
        return data[:pos] + blob + data[pos:]
    if kind == "delete_span":
        return data[:pos] + data[pos + n:]
    return data[:pos] + data[pos:pos + n] + data[pos:]  # dup_span


def mutate(seed_text: str, ops) -> bytes:
    root = etree.fromstring(seed_text.encode())
    text_ops = []
    for op in ops:
        if op[0] in TEXT_OPS:
            text_ops.append(op)
        else:
            _apply_tree_op(root, op)
    data = etree.tostring(root)
    for op in text_ops:
        data = _apply_text_op(data, op)
    return data


# -- the property ----------------------------------------------------------------------

class _Hang(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    """Turn a hang into an exception (SIGALRM; the main thread on POSIX only)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def handler(signum, frame):
        raise _Hang(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_compiles_or_model_error(data: bytes, name: str = "fuzz.xml"):
    """The acceptance rule of DESIGN.md section 6 for one input."""
    try:
        with time_limit(10):
            compile_spec(parse_xml(data, filename=name, assets={}))
    except ModelError as exc:
        assert str(exc).strip(), "ModelError with an empty message"
        assert exc.detail, "ModelError without a detail message"
        if exc.element is not None:
            assert exc.line is not None, f"ModelError names <{exc.element}> but no line: {exc}"
            assert isinstance(exc.line, int) and exc.line >= 1, exc.line
        if exc.line is not None:
            assert exc.file is not None, f"ModelError with a line but no file: {exc}"
    except NotImplementedError as exc:
        assert_not_yet(exc)


# The features the compiler does not take yet (tiphys/compiler: each raises
# NotImplementedError "file:line: <what> ... is not supported yet"); a mutation may
# create any of them from a valid seed. Anything else raising NotImplementedError fails.
NOT_YET = (
    r"<deformable><skin> \(skins\)",
    r"<flexcomp><plugin>",
    r'<flexcomp type="gmsh">: binary GMSH 2.2',
    r"<asset><(skin|model)>",
    r"<(attach|composite)> is not",  # children of <body>/<worldbody>
    # plugins tiphys does not simulate yet (tiphys/compiler/plugins.py), named
    r": plugin '[^']+' (\([\w/]+ plugin\) )?is not supported yet",
    r'<geom type="sdf">',
    r"<spatial><geom> wrapping a geom removed by discardvisual",
)
_LOCATED = re.compile(r"^[^:\n]+:\d+: ")


def assert_not_yet(exc: NotImplementedError):
    """A NotImplementedError must name its place and one feature of NOT_YET."""
    msg = str(exc)
    assert _LOCATED.match(msg), f"NotImplementedError without file:line: {msg}"
    assert "is not supported yet" in msg, msg
    assert any(re.search(p, msg) for p in NOT_YET), f"not a pinned not-yet feature: {msg}"


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_models_compile(seed):
    compile_spec(parse_xml(SEEDS[seed], filename=f"{seed}.xml"))


def _fuzz_settings(n):
    return settings(max_examples=n, deadline=timedelta(seconds=5), derandomize=True,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@pytest.mark.parametrize("seed", sorted(SEEDS))
@_fuzz_settings(100)
@given(ops=st.lists(OPS, min_size=1, max_size=4))
def test_fuzz_mutated_models(seed, ops):
    check_compiles_or_model_error(mutate(SEEDS[seed], ops), f"{seed}.xml")


# -- inline meshes ---------------------------------------------------------------------
# Small, often degenerate point sets (coplanar, duplicated, badly scaled) with the mesh
# options that change the processing: this is where Qhull and the inertia code live.

_COORD = st.sampled_from([0, 1, -1, 2, 0.5, -3, 1e-9, 1e-20, 1e6, 0.25])
_MESH_OPTS = st.fixed_dictionaries({}, optional={
    "scale": st.tuples(_COORD, _COORD, _COORD),
    "refpos": st.tuples(_COORD, _COORD, _COORD),
    "refquat": st.tuples(_COORD, _COORD, _COORD, _COORD),
    "inertia": st.sampled_from(["convex", "exact", "legacy", "shell"]),
    "maxhullvert": st.sampled_from([-1, 0, 4, 5, 6, 10]),
    "smoothnormal": st.sampled_from(["true", "false"]),
})
_GEOM_OPTS = st.fixed_dictionaries(
    {"type": st.sampled_from(["mesh", "mesh", "sphere", "capsule", "ellipsoid", "cylinder",
                              "box"])},
    optional={"contype": st.just(0), "mass": _COORD, "density": _COORD, "fitscale": _COORD,
              "shellinertia": st.just("true")})


def _fmt(v):
    return " ".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)


@_fuzz_settings(100)
@given(verts=st.lists(st.tuples(_COORD, _COORD, _COORD), min_size=3, max_size=12),
       faces=st.one_of(st.none(), st.lists(st.integers(-1, 12), min_size=3, max_size=24)),
       mesh=_MESH_OPTS, geom=_GEOM_OPTS, moving=st.booleans(), fitaabb=st.booleans())
def test_fuzz_inline_mesh(verts, faces, mesh, geom, moving, fitaabb):
    attrs = {"name": "m", "vertex": " ".join(_fmt(v) for v in verts), **mesh}
    if faces is not None:
        attrs["face"] = _fmt(faces[:len(faces) - len(faces) % 3] or faces)
    mesh_xml = " ".join(f'{k}="{_fmt(v)}"' for k, v in attrs.items())
    geom_xml = " ".join(f'{k}="{_fmt(v)}"' for k, v in geom.items())
    xml = (f'<mujoco>\n<compiler fitaabb="{str(fitaabb).lower()}"/>\n<asset>\n'
           f'<mesh {mesh_xml}/>\n</asset>\n<worldbody>\n<body>\n'
           f'{"<freejoint/>" if moving else ""}\n<geom mesh="m" {geom_xml}/>\n</body>\n'
           f'</worldbody>\n</mujoco>\n')
    check_compiles_or_model_error(xml.encode(), "mesh.xml")
