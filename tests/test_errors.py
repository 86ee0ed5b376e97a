"""Bad models raise a located ModelError (DESIGN.md section 6).

Each case compiles a small bad MJCF text and checks that ``tiphys.ModelError`` is
raised (never another exception type) and that it names the right file, line,
element and attribute. Each case also records what MuJoCo 3.4.0 does with the
same text; ``test_mujoco_agrees`` checks that record, so that a disagreement is
a deliberate, documented one.
"""
from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass, field
from typing import Optional

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from tiphys.errors import ModelError
from tiphys.spec import parse_xml

FILE = "model.xml"


def compile_text(xml, assets=None, filename=FILE):
    return compile_spec(parse_xml(xml, filename=filename, assets=assets))


def body(inner: str) -> str:
    """A model whose worldbody holds ``inner``; ``inner`` starts on line 3."""
    return f"<mujoco>\n  <worldbody>\n{inner}\n  </worldbody>\n</mujoco>\n"


def asset(inner: str) -> str:
    """A model whose asset section holds ``inner``; ``inner`` starts on line 3."""
    return f"<mujoco>\n  <asset>\n{inner}\n  </asset>\n</mujoco>\n"


def _png(width, height) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    data = (np.arange(width * height).reshape(height, width) % 251).astype(np.uint8)
    Image.fromarray(data, "L").save(buf, format="PNG")
    return buf.getvalue()


# A hinge body with mass, for cases that need a valid moving body around the error.
ARM = '    <body name="arm">\n      <joint name="hinge"/>\n      <geom size="0.1"/>\n    </body>'


def eq(inner: str) -> str:
    """A model with a hinge arm (site "s"), a ball body, a fixed tendon "t", and
    ``inner`` inside <equality> starting on line 14."""
    return ('<mujoco>\n  <worldbody>\n    <body name="arm">\n      <joint name="hinge"/>\n'
            '      <geom size="0.1"/>\n      <site name="s"/>\n    </body>\n'
            '    <body name="ball">\n      <joint name="b" type="ball"/>\n'
            '      <geom size="0.1"/>\n    </body>\n  </worldbody>\n  <equality>\n'
            f'{inner}\n  </equality>\n  <tendon>\n    <fixed name="t">\n'
            '      <joint joint="hinge" coef="1"/>\n    </fixed>\n  </tendon>\n</mujoco>\n')

# MuJoCo's verdict on each case: it rejects the text too ("reject"), or it accepts
# it and tiphys rejects deliberately ("accept": see the reason in the case).
REJECT, ACCEPT = "reject", "accept"


@dataclass
class Case:
    id: str
    xml: str
    line: Optional[int]
    element: Optional[str]
    attribute: Optional[str]
    match: str
    assets: dict = field(default_factory=dict)
    file: str = FILE
    mujoco: str = REJECT
    why: str = ""  # why tiphys rejects what MuJoCo accepts


CASES = [
    # -- attribute values ---------------------------------------------------------------
    Case("malformed-number", body('    <geom size="a b"/>'), 3, "geom", "size",
         "expected numbers"),
    Case("pos-two-numbers", body('    <geom size="1" pos="1 2"/>'), 3, "geom", "pos",
         "expected 3 numbers, got 2"),
    Case("quat-five-numbers", body('    <geom size="1" quat="1 0 0 0 0"/>'), 3, "geom",
         "quat", "expected 4 numbers, got 5"),
    Case("nan-in-pos", body('    <geom size="1" pos="nan 0 0"/>'), 3, "geom", "pos",
         "finite", mujoco=ACCEPT,
         why="MuJoCo only warns about NaN; a NaN position is a silently broken model"),
    Case("inf-in-pos", body('    <body pos="0 inf 0">\n      <geom size="1"/>\n    </body>'),
         3, "body", "pos", "finite", mujoco=ACCEPT,
         why="MuJoCo accepts inf; an infinite position is a silently broken model"),
    Case("float-overflow", body('    <geom size="1" pos="1e400 0 0"/>'), 3, "geom", "pos",
         "finite"),
    Case("int-not-integer", body('    <geom size="1" group="1.5"/>'), 3, "geom", "group",
         "expected integers"),
    Case("int-out-of-range", body('    <geom size="1" contype="2147483648"/>'), 3, "geom",
         "contype", "out of range"),
    Case("int-huge", body('    <geom size="1" conaffinity="99999999999999999999"/>'), 3,
         "geom", "conaffinity", "out of range"),
    Case("invalid-keyword", body('    <geom type="sphr" size="1"/>'), 3, "geom", "type",
         "invalid keyword 'sphr'"),
    Case("invalid-option-keyword", '<mujoco>\n  <option integrator="rk5"/>\n</mujoco>', 2,
         "option", "integrator", "invalid keyword"),
    Case("invalid-condim", body('    <geom size="1" condim="2"/>'), 3, "geom", "condim",
         "condim"),
    Case("visual-count", '<mujoco>\n  <visual>\n    <map znear="0 -1"/>\n  </visual>\n'
         '</mujoco>', 3, "map", "znear", "expected 1 numbers, got 2"),
    Case("visual-rgba-count", '<mujoco>\n  <visual>\n    <rgba fog="1 1"/>\n  </visual>\n'
         '</mujoco>', 3, "rgba", "fog", "expected 4 numbers, got 2"),
    # -- schema ---------------------------------------------------------------------------
    Case("unknown-element", body('    <gem size="1"/>'), 3, "gem", None, "unknown element"),
    Case("unknown-attribute", body('    <geom size="1" sise="1"/>'), 3, "geom", "sise",
         "unknown attribute"),
    Case("joint-in-worldbody", body('    <joint/>'), 3, "joint", None, "unknown element"),
    Case("repeated-unique-element", '<mujoco>\n  <compiler>\n    <lengthrange/>\n'
         '    <lengthrange/>\n  </compiler>\n</mujoco>', 4, "lengthrange", None,
         "only once"),
    Case("wrong-root", '<mjcf>\n</mjcf>', 1, "mjcf", None, "root element"),
    Case("xml-syntax-error", '<mujoco>\n  <worldbody>\n    <geom size="1">\n  </worldbody>\n'
         '</mujoco>', 4, None, None, "XML syntax error"),
    Case("unclosed-attribute", '<mujoco>\n  <worldbody>\n    <geom size="1/>\n  </worldbody>'
         '\n</mujoco>', None, None, None, "XML syntax error"),
    # -- default classes ------------------------------------------------------------------
    Case("unknown-class", body('    <geom size="1" class="nope"/>'), 3, "geom", "class",
         "unknown default class 'nope'"),
    Case("unknown-childclass",
         body('    <body childclass="nope">\n      <geom size="1"/>\n    </body>'), 3, "body",
         "childclass", "unknown default class 'nope'"),
    Case("repeated-default-class", '<mujoco>\n  <default>\n    <default class="a"/>\n'
         '    <default class="a"/>\n  </default>\n</mujoco>', 4, "default", "class",
         "repeated default class"),
    Case("nested-default-without-class", '<mujoco>\n  <default>\n    <default/>\n'
         '  </default>\n</mujoco>', 3, "default", "class", "class name"),
    # -- references -----------------------------------------------------------------------
    Case("unknown-mesh", body('    <geom type="mesh" mesh="nope"/>'), 3, "geom", "mesh",
         "unknown mesh 'nope'"),
    Case("unknown-hfield", body('    <geom type="hfield" hfield="nope"/>'), 3, "geom",
         "hfield", "unknown hfield 'nope'"),
    Case("unknown-material", body('    <geom size="1" material="nope"/>'), 3, "geom",
         "material", "unknown material 'nope'"),
    Case("unknown-camera-target", body('    <camera mode="targetbody" target="nope"/>'), 3,
         "camera", "target", "unknown body 'nope'"),
    Case("mesh-geom-without-mesh", body('    <geom type="mesh"/>'), 3, "geom", "mesh",
         "valid mesh"),
    Case("hfield-geom-without-hfield", body('    <geom type="hfield"/>'), 3, "geom",
         "hfield", "valid hfield"),
    # -- duplicate names ------------------------------------------------------------------
    Case("duplicate-body",
         body('    <body name="a">\n      <geom size="1"/>\n    </body>\n'
              '    <body name="a">\n      <geom size="1"/>\n    </body>'), 6, "body", "name",
         "repeated name 'a' in body"),
    Case("duplicate-joint",
         body('    <body>\n      <joint name="j"/>\n      <joint name="j" axis="1 0 0"/>\n'
              '      <geom size="1"/>\n    </body>'), 5, "joint", "name",
         "repeated name 'j' in joint"),
    Case("duplicate-mesh",
         asset('    <mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>\n'
               '    <mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>'), 4, "mesh", "name",
         "repeated name 'm' in mesh"),
    # -- files ----------------------------------------------------------------------------
    Case("missing-asset-file", asset('    <mesh file="nothere.stl"/>'), 3, "mesh", "file",
         "nothere.stl"),
    Case("missing-include", '<mujoco>\n  <include file="nothere.xml"/>\n</mujoco>', 2,
         "include", "file", "nothere.xml"),
    Case("recursive-include", '<mujoco>\n  <include file="a.xml"/>\n</mujoco>', 2, "include",
         "file", "already included", file="b.xml",
         assets={"a.xml": b'<mujoco>\n  <include file="b.xml"/>\n</mujoco>',
                 "b.xml": b'<mujoco>\n  <include file="a.xml"/>\n</mujoco>'}),
    Case("repeated-include", '<mujoco>\n  <include file="a.xml"/>\n'
         '  <include file="a.xml"/>\n</mujoco>', 3, "include", "file", "already included",
         assets={"a.xml": b'<mujoco>\n  <worldbody>\n    <geom size="1"/>\n  </worldbody>\n'
                          b'</mujoco>'}),
    Case("error-inside-include", '<mujoco>\n  <include file="part.xml"/>\n</mujoco>', 3,
         "geom", "pos", "expected 3 numbers", file="part.xml",
         assets={"part.xml": b'<mujoco>\n  <worldbody>\n    <geom size="1" pos="1"/>\n'
                             b'  </worldbody>\n</mujoco>'}),
    Case("syntax-error-inside-include", '<mujoco>\n  <include file="part.xml"/>\n</mujoco>',
         3, None, None, "XML syntax error", file="part.xml",
         assets={"part.xml": b'<mujoco>\n  <worldbody>\n</mujoco>'}),
    Case("empty-stl", asset('    <mesh file="m.stl"/>'), 3, "mesh", "file", "empty",
         assets={"m.stl": b""}),
    Case("garbage-stl", asset('    <mesh file="m.stl"/>'), 3, "mesh", "file",
         "number of faces", assets={"m.stl": b"garbage!" * 20}),
    Case("truncated-stl", asset('    <mesh file="m.stl"/>'), 3, "mesh", "file", "size",
         assets={"m.stl": b"\0" * 80 + struct.pack("<I", 10) + b"\0" * 60}),
    Case("garbage-obj", asset('    <mesh file="m.obj"/>'), 3, "mesh", "file",
         "at least 4 vertices", assets={"m.obj": b"\x00\xff garbage \x80"}),
    Case("garbage-msh", asset('    <mesh file="m.msh"/>'), 3, "mesh", "file", "MSH",
         assets={"m.msh": b"1234"}),
    Case("unknown-mesh-format", asset('    <mesh file="m.xyz"/>'), 3, "mesh", "file",
         "m.xyz", assets={"m.xyz": b"1234"}),
    Case("garbage-png-hfield", asset('    <hfield file="h.png" size="1 1 1 1"/>'), 3,
         "hfield", None, "error decoding PNG", assets={"h.png": b"notapng"}),
    Case("truncated-png-hfield", asset('    <hfield file="h.png" size="1 1 1 1"/>'), 3,
         "hfield", None, "error decoding PNG", assets={"h.png": _png(4, 3)[:40]}),
    Case("hfield-png-one-row", asset('    <hfield file="h.png" size="1 1 1 1"/>'), 3,
         "hfield", None, "at least 2 rows and 2 columns", assets={"h.png": _png(5, 1)},
         mujoco=ACCEPT, why="MuJoCo divides by nrow-1 = 0 in every heightfield collision"),
    Case("hfield-inline-one-column",
         asset('    <hfield name="h" nrow="3" ncol="1" size="1 1 1 1"/>'), 3, "hfield",
         None, "at least 2 rows and 2 columns", mujoco=ACCEPT,
         why="MuJoCo divides by ncol-1 = 0 in every heightfield collision"),
    Case("hfield-binary-wrong-size", asset('    <hfield file="h.bin" size="1 1 1 1"/>'), 3,
         "hfield", None, "unexpected file size",
         assets={"h.bin": struct.pack("<ii", 2, 2) + b"\0" * 8}),
    # -- meshes and height fields ---------------------------------------------------------
    Case("mesh-too-few-vertices", asset('    <mesh name="m" vertex="0 0 0 1 0 0 0 1 0"/>'),
         3, "mesh", None, "at least 4 vertices"),
    Case("mesh-vertex-count", asset('    <mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1 5"/>'),
         3, "mesh", None, "multiple of 3"),
    Case("mesh-face-index", asset('    <mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1" '
                                  'face="0 1 7"/>'), 3, "mesh", None,
         "vertex index 7 does not exist"),
    Case("hfield-elevation-length",
         asset('    <hfield name="h" nrow="2" ncol="2" size="1 1 1 1" elevation="1 2 3"/>'),
         3, "hfield", None, "nrow*ncol"),
    Case("hfield-elevation-without-nrow",
         asset('    <hfield name="h" nrow="2" size="1 1 1 1" elevation="1 2 3 4"/>'),
         3, "hfield", None, "nrow"),
    Case("hfield-size-not-positive",
         asset('    <hfield name="h" nrow="2" ncol="2" size="1 1 0 1"/>'), 3, "hfield",
         None, "not positive"),
    Case("hfield-negative-ncol",
         asset('    <hfield name="h" nrow="2" ncol="-2" size="1 1 1 1"/>'), 3, "hfield",
         None, "hfield not specified"),
    # -- geoms ----------------------------------------------------------------------------
    Case("zero-size", body('    <geom size="0"/>'), 3, "geom", "size",
         "size 0 must be positive"),
    Case("negative-size", body('    <geom type="box" size="1 -1 1"/>'), 3, "geom", "size",
         "size 1 must be positive"),
    Case("capsule-zero-length", body('    <geom type="capsule" size="0.1 0"/>'), 3, "geom",
         "size", "size 1 must be positive"),
    Case("fromto-on-sphere", body('    <geom type="sphere" size="1" fromto="0 0 0 1 0 0"/>'),
         3, "geom", "fromto", "fromto requires"),
    Case("pos-and-fromto",
         body('    <geom type="capsule" size="1" pos="1 0 0" fromto="0 0 0 1 0 0"/>'), 3,
         "geom", "fromto", "both pos and fromto"),
    Case("degenerate-fromto",
         body('    <geom type="capsule" size="1" fromto="1 1 1 1 1 1"/>'), 3, "geom",
         "fromto", "too close"),
    Case("geom-negative-mass",
         body('    <body>\n      <geom size="1" mass="-1"/>\n    </body>'), 4, "geom", None,
         "negative"),
    Case("geom-negative-density",
         body('    <body>\n      <geom size="1" density="-1"/>\n    </body>'), 4, "geom",
         None, "negative"),
    Case("plane-on-moving-body",
         body('    <body>\n      <joint/>\n      <geom size="1"/>\n'
              '      <geom type="plane" size="1 1 1"/>\n    </body>'), 6, "geom", "type",
         "plane only allowed in static bodies"),
    Case("site-of-type-mesh", body('    <site type="mesh"/>'), 3, "site", "type",
         "not allowed in site"),
    # -- orientation ----------------------------------------------------------------------
    Case("zero-quat", body('    <geom size="1" quat="0 0 0 0"/>'), 3, "geom", "quat",
         "zero norm"),
    Case("two-orientations", body('    <geom size="1" quat="1 0 0 0" euler="0 0 0"/>'), 3,
         "geom", "euler", "multiple orientation"),
    Case("parallel-xyaxes", body('    <geom size="1" xyaxes="1 0 0 1 0 0"/>'), 3, "geom",
         "xyaxes", "yaxis too small"),
    Case("bad-euler-sequence-length", '<mujoco>\n  <compiler eulerseq="xy"/>\n</mujoco>', 2,
         "compiler", "eulerseq", "3 characters"),
    Case("bad-euler-sequence-axis", '<mujoco>\n  <compiler eulerseq="xyw"/>\n</mujoco>', 2,
         "compiler", "eulerseq", "3 characters", mujoco=ACCEPT,
         why="MuJoCo checks the axes only when an euler angle is used; tiphys checks the "
             "option itself"),
    # -- joints ---------------------------------------------------------------------------
    Case("bad-joint-range",
         body('    <body>\n      <joint limited="true" range="1 -1"/>\n'
              '      <geom size="1"/>\n    </body>'), 4, "joint", "range",
         "range[0] should be smaller"),
    Case("empty-joint-range",
         body('    <body>\n      <joint limited="true" range="1 1"/>\n'
              '      <geom size="1"/>\n    </body>'), 4, "joint", "range",
         "range[0] should be smaller"),
    Case("range-without-autolimits",
         '<mujoco>\n  <compiler autolimits="false"/>\n  <worldbody>\n    <body>\n'
         '      <joint range="0 1"/>\n      <geom size="1"/>\n    </body>\n  </worldbody>\n'
         '</mujoco>', 5, "joint", "range", "limited"),
    Case("ball-range-start", body('    <body>\n      <joint type="ball" range="-1 1"/>\n'
                                  '      <geom size="1"/>\n    </body>'), 4, "joint",
         "range", "should be 0 in ball joint"),
    Case("zero-joint-axis", body('    <body>\n      <joint axis="0 0 0"/>\n'
                                 '      <geom size="1"/>\n    </body>'), 4, "joint", "axis",
         "axis too small"),
    Case("negative-springdamper", body('    <body>\n      <joint springdamper="-1 1"/>\n'
                                       '      <geom size="1"/>\n    </body>'), 4, "joint",
         "springdamper", "must be positive"),
    Case("free-joint-not-top-level",
         body('    <body>\n      <joint/>\n      <geom size="1"/>\n      <body>\n'
              '        <freejoint/>\n        <geom size="1"/>\n      </body>\n    </body>'),
         6, "body", None, "top level"),
    Case("two-free-joints",
         body('    <body>\n      <freejoint/>\n      <freejoint/>\n'
              '      <geom size="1"/>\n    </body>'), 3, "body", None, "more than 6 dofs"),
    Case("free-joint-with-hinge",
         body('    <body>\n      <joint type="free"/>\n      <joint/>\n'
              '      <geom size="1"/>\n    </body>'), 3, "body", None, "more than 6 dofs"),
    Case("ball-then-hinge",
         body('    <body name="b">\n      <joint type="ball"/>\n      <joint type="hinge"/>\n'
              '      <geom size="1"/>\n    </body>'), 3, "body", None,
         "ball followed by rotation"),
    Case("mocap-with-joint",
         body('    <body mocap="true">\n      <joint/>\n      <geom size="1"/>\n    </body>'),
         3, "body", "mocap", "not a fixed child of world"),
    Case("mocap-not-child-of-world",
         body('    <body>\n      <joint/>\n      <geom size="1"/>\n'
              '      <body mocap="true">\n        <geom size="1"/>\n      </body>\n'
              '    </body>'), 6, "body", "mocap", "not a fixed child of world"),
    # -- inertia --------------------------------------------------------------------------
    Case("inertial-without-mass",
         body('    <body>\n      <inertial pos="0 0 0" diaginertia="1 1 1"/>\n    </body>'),
         4, "inertial", "mass", "missing required attribute"),
    Case("inertial-without-pos",
         body('    <body>\n      <inertial mass="1" diaginertia="1 1 1"/>\n    </body>'),
         4, "inertial", "pos", "missing required attribute"),
    Case("moving-body-without-inertia",
         body('    <body>\n      <joint/>\n      <inertial pos="0 0 0" mass="1"/>\n'
              '    </body>'), 3, "body", None, "mass and inertia of moving bodies"),
    Case("moving-body-negative-mass",
         body('    <body>\n      <joint/>\n'
              '      <inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/>\n    </body>'),
         3, "body", None, "mass and inertia of moving bodies"),
    Case("moving-body-massless-geom",
         body('    <body>\n      <joint/>\n      <geom size="1" mass="0"/>\n    </body>'),
         3, "body", None, "mass and inertia of moving bodies"),
    Case("moving-body-empty", body('    <body>\n      <joint/>\n    </body>'), 3, "body",
         None, "mass and inertia of moving bodies"),
    Case("negative-mass-boundmass",
         '<mujoco>\n  <compiler boundmass="-1"/>\n  <worldbody>\n    <body>\n'
         '      <joint/>\n      <inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/>\n'
         '    </body>\n  </worldbody>\n</mujoco>', 4, "body", None, "cannot be negative"),
    Case("fullinertia-not-positive",
         body('    <body>\n      <inertial pos="0 0 0" mass="1" fullinertia="1 1 1 2 0 0"/>\n'
              '    </body>'), 4, "inertial", "fullinertia", "positive eigenvalues"),
    Case("fullinertia-and-diaginertia",
         body('    <body>\n      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1" '
              'fullinertia="1 1 1 0 0 0"/>\n    </body>'), 4, "inertial", "fullinertia",
         "cannot both"),
    Case("inertia-triangle",
         body('    <body>\n      <inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/>\n'
              '    </body>'), 3, "body", None, "A + B >= C"),
    # -- cameras and lights ---------------------------------------------------------------
    Case("camera-fovy", body('    <camera fovy="180"/>'), 3, "camera", "fovy", "too large"),
    Case("light-zero-dir", body('    <light dir="0 0 0"/>'), 3, "light", "dir",
         "zero direction"),
    # -- keyframes, custom, size ----------------------------------------------------------
    Case("keyframe-qpos-length",
         f'<mujoco>\n  <worldbody>\n{ARM}\n  </worldbody>\n  <keyframe>\n'
         f'    <key qpos="1 2"/>\n  </keyframe>\n</mujoco>', 9, "key", "qpos",
         "invalid qpos size"),
    Case("keyframe-qvel-length",
         f'<mujoco>\n  <worldbody>\n{ARM}\n  </worldbody>\n  <keyframe>\n'
         f'    <key qvel="1 2 3"/>\n  </keyframe>\n</mujoco>', 9, "key", "qvel",
         "invalid qvel size"),
    Case("custom-numeric-size", '<mujoco>\n  <custom>\n    <numeric name="a" size="501"/>\n'
         '  </custom>\n</mujoco>', 3, "numeric", "size", "between 1 and 500"),
    Case("custom-numeric-data-too-long",
         '<mujoco>\n  <custom>\n    <numeric name="a" size="2" data="1 2 3"/>\n'
         '  </custom>\n</mujoco>', 3, "numeric", "data", "longer than size"),
    Case("option-negative-iterations", '<mujoco>\n  <option iterations="-1"/>\n</mujoco>',
         2, "option", "iterations", "non-negative", mujoco=ACCEPT,
         why="MuJoCo accepts a negative iteration count, which makes the solver a no-op"),
    Case("size-huge-nkey", '<mujoco>\n  <size nkey="2147483647"/>\n</mujoco>', 2, "size",
         "nkey", "could not allocate memory", mujoco=None,
         why="MuJoCo tries to allocate ~17 GB; tiphys refuses arrays over 4 GiB"),
    Case("size-huge-nuser", body('    <geom size="1"/>').replace(
         "<mujoco>\n", '<mujoco>\n  <size nuser_geom="2147483647"/>\n'), 2, "size",
         "nuser_geom", "could not allocate memory", mujoco=None,
         why="MuJoCo tries to allocate ~17 GB; tiphys refuses arrays over 4 GiB"),
    # -- equality constraints -------------------------------------------------------------
    Case("eq-unknown-body", eq('    <connect body1="nope" anchor="0 0 0"/>'), 14, "connect",
         "body1", "unknown element 'nope'"),
    Case("eq-unknown-body2", eq('    <weld body1="arm" body2="nope"/>'), 14, "weld", "body2",
         "unknown element 'nope'"),
    Case("eq-unknown-site", eq('    <weld site1="s" site2="nope"/>'), 14, "weld", "site2",
         "unknown element 'nope'"),
    Case("eq-unknown-joint", eq('    <joint joint1="nope"/>'), 14, "joint", "joint1",
         "unknown element 'nope'"),
    Case("eq-unknown-tendon", eq('    <tendon tendon1="t" tendon2="nope"/>'), 14, "tendon",
         "tendon2", "unknown element 'nope'"),
    Case("eq-mixed-body-site", eq('    <connect body1="arm" anchor="0 0 0" site2="s"/>'), 14,
         "connect", "site2", "cannot be mixed"),
    Case("eq-connect-without-anchor", eq('    <connect body1="arm"/>'), 14, "connect",
         "anchor", "both body1 and anchor"),
    Case("eq-weld-one-site", eq('    <weld site1="s"/>'), 14, "weld", "site2",
         "site1 and site2 must be defined"),
    Case("eq-weld-body2-only", eq('    <weld body2="arm"/>'), 14, "weld", "body1",
         "either body1 must be defined"),
    Case("eq-anchor-two-numbers", eq('    <connect body1="arm" anchor="0 0"/>'), 14,
         "connect", "anchor", "does not have enough data"),
    Case("eq-relpose-eight-numbers", eq('    <weld body1="arm" relpose="0 0 0 1 0 0 0 1"/>'),
         14, "weld", "relpose", "too much data"),
    Case("eq-polycoef-six-numbers", eq('    <joint joint1="hinge" polycoef="0 1 0 0 0 0"/>'),
         14, "joint", "polycoef", "too much data"),
    Case("eq-polycoef-not-numbers", eq('    <tendon tendon1="t" polycoef="0 one"/>'), 14,
         "tendon", "polycoef", "expected numbers"),
    Case("eq-joint1-missing", eq('    <joint joint2="hinge"/>'), 14, "joint", "joint1",
         "required attribute missing"),
    Case("eq-repeated-joint", eq('    <joint joint1="hinge" joint2="hinge"/>'), 14, "joint",
         "joint2", "is repeated"),
    Case("eq-weld-world-to-itself", eq('    <weld body1="world"/>'), 14, "weld", "body1",
         "is repeated"),
    Case("eq-ball-joint", eq('    <joint joint1="hinge" joint2="b"/>'), 14, "joint", "joint2",
         "only HINGE and SLIDE"),
    Case("eq-bad-active", eq('    <joint joint1="hinge" active="maybe"/>'), 14, "joint",
         "active", "invalid keyword"),
    Case("eq-unknown-class", eq('    <joint joint1="hinge" class="nope"/>'), 14, "joint",
         "class", "unknown default class 'nope'"),
    Case("eq-solref-three-numbers", eq('    <joint joint1="hinge" solref="1 2 3"/>'), 14,
         "joint", "solref", "expected 1 to 2 numbers"),
    Case("eq-repeated-name", eq('    <joint name="e" joint1="hinge"/>\n'
                                '    <weld name="e" body1="arm"/>'), 15,
         "weld", "name", "repeated name 'e'"),
]

# Inertia eigenvalues that violate A + B >= C by less than the mesh tolerance.
_DEGENERATE_MESH = ('    <mesh name="m" vertex="0.5 2 0  1e-20 1e-09 -2  -1 0.5 -0.459  1e6 -1 0" '
                    'scale="1e-20 2 -0.406" inertia="shell"/>')

# Regressions for leaks found by tests/test_fuzz.py (other exception types before).
REGRESSIONS = [
    # ints beyond int64 raised OverflowError in numpy; beyond int32 in the int32 arrays
    Case("fuzz-int64-overflow", body('    <geom size="1" contype="15576620273493004645"/>'),
         3, "geom", "contype", "out of range"),
    Case("fuzz-int32-overflow-group", body('    <geom size="1" group="2147483648"/>'), 3,
         "geom", "group", "out of range"),
    # a <visual> value with the wrong count raised TypeError (znear read as a tuple)
    Case("fuzz-visual-znear-count", '<mujoco>\n  <visual>\n    <map znear="0 -1"/>\n'
         '  </visual>\n</mujoco>', 3, "map", "znear", "expected 1 numbers"),
    # a numeric with a huge size allocated it (and MuJoCo limits it to 500)
    Case("fuzz-numeric-huge-size", '<mujoco>\n  <custom>\n'
         '    <numeric name="n" size="100000000"/>\n  </custom>\n</mujoco>', 3, "numeric",
         "size", "between 1 and 500"),
    # (600 values: MuJoCo 3.4.0 itself dies of stack smashing on 501 to ~509 values)
    Case("fuzz-numeric-long-data", '<mujoco>\n  <custom>\n    <numeric name="n" data="'
         + " ".join(["1"] * 600) + '"/>\n  </custom>\n</mujoco>', 3, "numeric", "data",
         "too much data"),
    # a mesh whose inertia eigenvalues pass A + B >= C only within tolerance made
    # math.sqrt raise ValueError (MuJoCo: NaN box, then "nan size in geom")
    Case("fuzz-mesh-inertia-box-nan",
         f'<mujoco>\n  <asset>\n{_DEGENERATE_MESH}\n  </asset>\n  <worldbody>\n    <body>\n'
         f'      <geom type="cylinder" mesh="m" contype="0" conaffinity="0"/>\n    </body>\n'
         f'  </worldbody>\n</mujoco>', 7, "geom", "mesh", "nan size in geom"),
    Case("fuzz-mesh-geom-inertia-nan",
         f'<mujoco>\n  <asset>\n{_DEGENERATE_MESH}\n  </asset>\n  <worldbody>\n    <body>\n'
         f'      <geom type="mesh" mesh="m" contype="0" conaffinity="0"/>\n    </body>\n'
         f'  </worldbody>\n</mujoco>', 7, "geom", None, "not finite", mujoco=ACCEPT,
         why="MuJoCo gives the static body a NaN inertia"),
    # found by differential fuzzing against MuJoCo (tiphys accepted, MuJoCo rejects):
    Case("fuzz-comma-separated", '<mujoco>\n  <option gravity="1,2,3"/>\n</mujoco>', 2,
         "option", "gravity", "expected numbers"),
    Case("fuzz-underscore-number", body('    <geom size="1_0"/>'), 3, "geom", "size",
         "expected numbers"),
    Case("fuzz-non-ascii-digit", body('    <geom size="1" group="\u0661"/>'), 3, "geom",
         "group", "expected integers"),
    Case("fuzz-hex-int", '<mujoco>\n  <size nkey="0x10"/>\n</mujoco>', 2, "size", "nkey",
         "expected integers"),
    Case("fuzz-numeric-without-name", '<mujoco>\n  <custom>\n    <numeric data="1 2"/>\n'
         '  </custom>\n</mujoco>', 3, "numeric", "name", "missing required attribute"),
    Case("fuzz-camera-focal-without-sensorsize",
         body('    <camera focal="0.3 5" resolution="10 10"/>'), 3, "camera", "sensorsize",
         "missing required attribute"),
    Case("fuzz-camera-sensorsize-without-resolution",
         body('    <camera sensorsize="0.3 5"/>'), 3, "camera", "resolution",
         "missing required attribute"),
    Case("fuzz-camera-negative-resolution", body('    <camera resolution="-1 10"/>'), 3,
         "camera", "resolution", "cannot be negative"),
    Case("fuzz-camera-fovy-and-sensorsize",
         body('    <camera fovy="40" sensorsize="0.3 5" resolution="10 10"/>'), 3, "camera",
         "fovy", "not both"),
    Case("fuzz-orientation-beside-fromto",
         body('    <site type="capsule" size="0.1" fromto="0 0 0 1 0 0" quat="x"/>'), 3,
         "site", "quat", "expected numbers"),
    Case("fuzz-subnormal-number", body('    <geom size="1" gap="1e-320"/>'), 3, "geom", "gap",
         "underflow"),
    Case("fuzz-text-without-data", '<mujoco>\n  <custom>\n    <text name="t"/>\n'
         '  </custom>\n</mujoco>', 3, "text", "data", "missing required attribute"),
    Case("fuzz-tuple-without-name", '<mujoco>\n  <custom>\n    <tuple/>\n  </custom>\n'
         '</mujoco>', 3, "tuple", "name", "missing required attribute"),
    Case("fuzz-empty-single-int", body('    <geom size="1" priority=""/>'), 3, "geom",
         "priority", "expected 1 integers, got 0"),
    Case("fuzz-empty-keeps-class-value",
         '<mujoco>\n  <default>\n    <joint range="1 -1"/>\n  </default>\n  <worldbody>\n'
         '    <body>\n      <joint range="" limited="true"/>\n      <geom size="1"/>\n'
         '    </body>\n  </worldbody>\n</mujoco>', 7, "joint", "range",
         "range[0] should be smaller"),
    Case("fuzz-empty-asset-class",
         asset('    <material name="m" class=""/>'), 3, "material", "class",
         "unknown default class ''"),
    # a huge <size nkey>/<nuser_*> raised MemoryError (or swapped for minutes)
    Case("fuzz-size-nkey-memory",
         f'<mujoco>\n  <size nkey="2147483647"/>\n  <worldbody>\n{ARM}\n  </worldbody>\n'
         f'</mujoco>', 2, "size", "nkey", "could not allocate memory", mujoco=None,
         why="MuJoCo tries to allocate the keyframes"),
    Case("fuzz-size-nuser-memory",
         f'<mujoco>\n  <size nuser_body="2147483647"/>\n  <worldbody>\n{ARM}\n'
         f'  </worldbody>\n</mujoco>', 2, "size", "nuser_body", "could not allocate memory",
         mujoco=None, why="MuJoCo tries to allocate the user fields"),
]


def _check(case: Case):
    with pytest.raises(ModelError) as info:
        compile_text(case.xml, assets=case.assets)
    exc = info.value
    msg = str(exc)
    assert case.match in msg, msg
    assert exc.file == case.file, msg
    assert msg.startswith(f"{case.file}:"), msg
    if case.line is not None:
        assert exc.line == case.line, msg
        assert msg.startswith(f"{case.file}:{case.line}: "), msg
    assert exc.element == case.element, msg
    if case.element is not None:
        assert f"<{case.element}>: " in msg, msg
        assert exc.line is not None, msg
    assert exc.attribute == case.attribute, msg
    if case.attribute is not None:
        assert f"{case.attribute}: " in msg, msg
    return exc


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_model(case):
    _check(case)


@pytest.mark.parametrize("case", REGRESSIONS, ids=[c.id for c in REGRESSIONS])
def test_fuzz_regression(case):
    _check(case)


_MJ_CASES = [c for c in CASES + REGRESSIONS if c.mujoco is not None]


@pytest.mark.parametrize("case", _MJ_CASES, ids=[c.id for c in _MJ_CASES])
def test_mujoco_agrees(case):
    """MuJoCo rejects the same text, or accepts it for the recorded reason."""
    if case.mujoco == REJECT:
        with pytest.raises(Exception):
            mujoco.MjModel.from_xml_string(case.xml, dict(case.assets))
    else:
        assert case.why
        mujoco.MjModel.from_xml_string(case.xml, dict(case.assets))


# -- accepted inputs that once leaked or that MuJoCo accepts ---------------------------------

ACCEPTED = {
    # MuJoCo reads an empty number list as an absent attribute (fuzz leaks: empty
    # euler/axisangle/xyaxes/zaxis/fullinertia raised TypeError/ValueError)
    "empty-pos": body('    <geom size="1" pos=""/>'),
    "empty-euler": body('    <body euler="">\n      <geom size="1"/>\n    </body>'),
    "empty-euler-beside-quat":
        body('    <body euler="" quat="0 1 0 0">\n      <geom size="1"/>\n    </body>'),
    "empty-fullinertia": body('    <body>\n      <inertial pos="0 0 0" mass="1" '
                              'fullinertia="" diaginertia="1 1 1"/>\n    </body>'),
    "empty-zaxis-camera": body('    <camera zaxis=""/>'),
    "empty-xyaxes-frame": body('    <frame xyaxes="">\n      <geom size="1"/>\n    </frame>'),
    "empty-option-timestep": '<mujoco>\n  <option timestep=""/>\n</mujoco>',
    "empty-visual-znear": '<mujoco>\n  <visual>\n    <map znear=""/>\n  </visual>\n</mujoco>',
    # a static inertial needs no inertia (MuJoCo: zero)
    "static-inertial-without-inertia":
        body('    <body>\n      <inertial pos="0 0 0" mass="1"/>\n    </body>'),
    "fullinertia-with-zero-diaginertia":
        body('    <body>\n      <inertial pos="0 0 0" mass="1" diaginertia="0 0 0" '
             'fullinertia="3 3 3 0 0 0"/>\n    </body>'),
    # a moving body whose mass is in a static child
    "mass-in-static-child":
        body('    <body>\n      <joint/>\n      <body>\n        <geom size="1"/>\n'
             '      </body>\n    </body>'),
    # MuJoCo 3.4 pads short keyframe vectors (qpos from qpos0, mocap from the bodies)
    "short-keyframe": '<mujoco>\n  <worldbody>\n    <body>\n      <freejoint/>\n'
                      '      <geom size="1"/>\n    </body>\n    <body mocap="true">\n'
                      '      <geom size="1"/>\n    </body>\n  </worldbody>\n  <keyframe>\n'
                      '    <key qpos="1 2 3 0" qvel="1" mpos="1 2" mquat="0 1"/>\n'
                      '  </keyframe>\n</mujoco>',
    "empty-keyframe-vectors": f'<mujoco>\n  <worldbody>\n{ARM}\n  </worldbody>\n'
                              f'  <keyframe>\n    <key qpos="" qvel=""/>\n  </keyframe>\n'
                              f'</mujoco>',
    "hex-float": body('    <geom size="0x1p-3"/>'),
    "empty-int-vector": body('    <camera resolution=""/>'),
    "empty-keeps-class-range":
        '<mujoco>\n  <default>\n    <joint range="-1 1"/>\n  </default>\n  <worldbody>\n'
        '    <body>\n      <joint range="" limited="true"/>\n      <geom size="1"/>\n'
        '    </body>\n  </worldbody>\n</mujoco>',
    # a primitive fitted to a mesh takes the mesh's material (geom_matid)
    "fitted-geom-mesh-material": asset('    <material name="r" rgba="1 0 0 1"/>\n'
                                       '    <mesh name="m" material="r" vertex="0 0 0 1 0 0 '
                                       '0 1 0 0 0 1"/>').replace(
        "</mujoco>", '  <worldbody>\n    <geom type="box" mesh="m"/>\n'
                     '    <geom type="mesh" mesh="m"/>\n  </worldbody>\n</mujoco>'),
    # a singular mass matrix made the tendon/actuator constants raise LinAlgError
    "coincident-hinges": body('    <body>\n      <joint name="a" axis="1 0 0"/>\n'
                              '      <joint name="b" axis="1 0 0"/>\n      <geom size="1"/>\n'
                              '    </body>'),
    # empty references are none in MuJoCo
    "empty-target": body('    <camera target=""/>\n    <light target=""/>'),
    "empty-texture-and-file": asset(
        '    <material name="r" texture=""/>\n'
        '    <mesh name="m" file="" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>').replace(
        "</mujoco>", '  <worldbody>\n    <geom type="mesh" mesh="m"/>\n  </worldbody>\n'
                     '</mujoco>'),
    "numeric-size-500": '<mujoco>\n  <custom>\n    <numeric name="a" size="500"/>\n'
                        '  </custom>\n</mujoco>',
    "int32-limits": body('    <geom size="1" contype="-2147483648" group="2147483647"/>'),
    # a PNG height field ignores nrow/ncol (as MuJoCo does)
    "png-hfield-ignores-nrow": (asset('    <hfield name="h" file="h.png" nrow="2" ncol="2" '
                                      'size="1 1 1 1"/>'), {"h.png": _png(4, 3)}),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted(name):
    xml, assets = ACCEPTED[name] if isinstance(ACCEPTED[name], tuple) else (ACCEPTED[name], {})
    out = compile_text(xml, assets=assets)
    m = mujoco.MjModel.from_xml_string(xml, dict(assets))
    for k in ("nbody", "ngeom", "nq", "nhfield", "nnumericdata", "nkey", "nmocap"):
        assert out.sizes[k] == getattr(m, k), k
    for k in ("key_qpos", "key_qvel", "key_mpos", "key_mquat", "geom_size", "geom_matid",
              "jnt_range", "jnt_limited"):
        np.testing.assert_allclose(np.asarray(getattr(out, k)).reshape(-1),
                                   getattr(m, k).reshape(-1), atol=1e-12, err_msg=k)
    np.testing.assert_allclose(out.body_mass, m.body_mass)
    np.testing.assert_allclose(out.body_pos, m.body_pos, atol=1e-12)
    np.testing.assert_allclose(out.body_quat, m.body_quat, atol=1e-12)
    if m.nhfield:
        np.testing.assert_array_equal(out.hfield_nrow, m.hfield_nrow)
        np.testing.assert_array_equal(out.hfield_ncol, m.hfield_ncol)
        np.testing.assert_allclose(out.hfield_data, m.hfield_data, atol=1e-6)


# -- the public loaders ---------------------------------------------------------------------

# (tests/conftest.py has run tiphys.init(arch="cpu", precision="f64"))

def test_missing_asset_names_path_and_providers(tmp_path):
    path = tmp_path / "scene.xml"
    path.write_text(asset('    <mesh name="m" file="meshes/nothere.stl"/>'))
    with pytest.raises(ModelError) as info:
        tiphys.load_model(str(path))
    exc = info.value
    msg = str(exc)
    assert exc.file == "scene.xml" and exc.line == 3, msg
    assert exc.element == "mesh" and exc.attribute == "file", msg
    assert "meshes/nothere.stl" in msg
    assert "assets dict" in msg  # the providers tried ...
    assert str(tmp_path / "meshes" / "nothere.stl") in msg  # ... and the file path


def test_missing_asset_from_string():
    with pytest.raises(ModelError) as info:
        tiphys.load_model_from_string(asset('    <hfield file="h.png" size="1 1 1 1"/>'),
                                      assets={"other.png": b""})
    exc = info.value
    assert exc.line == 3 and exc.element == "hfield" and exc.attribute == "file", str(exc)
    assert "h.png" in str(exc) and "assets dict" in str(exc)


def test_missing_model_file(tmp_path):
    with pytest.raises(ModelError) as info:
        tiphys.load_model(str(tmp_path / "nothere.xml"))
    assert "nothere.xml" in str(info.value)


def test_syntax_error_in_file(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text('<mujoco>\n  <worldbody>\n    <geom size="1"\n  </worldbody>\n</mujoco>\n')
    with pytest.raises(ModelError) as info:
        tiphys.load_model(str(path))
    assert info.value.file == "broken.xml" or info.value.file.endswith("broken.xml")
    assert info.value.line is not None and info.value.line >= 3


def test_include_from_directory(tmp_path):
    (tmp_path / "part.xml").write_text(
        '<mujoco>\n  <worldbody>\n    <geom size="1" condim="5"/>\n  </worldbody>\n</mujoco>')
    path = tmp_path / "scene.xml"
    path.write_text('<mujoco>\n  <include file="part.xml"/>\n</mujoco>\n')
    with pytest.raises(ModelError) as info:
        tiphys.load_model(str(path))
    exc = info.value
    assert (exc.file, exc.line, exc.element, exc.attribute) == \
        ("part.xml", 3, "geom", "condim"), str(exc)


def test_error_attributes_format():
    exc = ModelError("expected numbers", file="scene.xml", line=12, element="geom",
                     attribute="size")
    assert str(exc) == "scene.xml:12: <geom>: size: expected numbers"
    assert (exc.file, exc.line, exc.element, exc.attribute) == ("scene.xml", 12, "geom",
                                                                "size")


_QHULL_EXIT = """
import tiphys
from tiphys.compiler.compile import compile_spec
xml = ('<mujoco><asset><mesh name="m" maxhullvert="10" vertex="0 0.5 1  1e-20 2 -1  0.5 1 -1 '
       ' -1 1 2  1 0.883 1e-09  1 1e-09 2  1 0 1e-20  1 0 -0.982  -1 1e-09 1e-09  0 1 1e-20 '
       ' 1e-09 1e-20 0  1000000.0 1e-20 0.217"/></asset>'
       '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>')
out = compile_spec(tiphys.parse_xml(xml, filename="hull.xml"))
assert out.sizes["nmeshgraph"] > 0
print("compiled")
"""


def test_fuzz_regression_qhull_early_stop_keeps_process():
    """A capped hull (maxhullvert) of badly scaled points: Qhull's Voronoi pass used to
    call exit(5) and take the whole process down (found by the mesh fuzzing)."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _QHULL_EXIT], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "compiled" in proc.stdout, (proc.returncode,
                                                                proc.stderr[-2000:])


def test_stray_text_is_ignored_with_a_warning_as_mujoco_ignores_it():
    import mujoco
    xml = ('<mujoco>\n  <visual>\n    <map znear=".02"/>\n  </visual>>\n  <worldbody>\n'
           '    <geom size="1">hello</geom>\n  </worldbody>\n</mujoco>')
    mujoco.MjModel.from_xml_string(xml)  # MuJoCo loads it
    with pytest.warns(UserWarning) as rec:
        arrays = compile_spec(parse_xml(xml))
    messages = [str(w.message) for w in rec]
    assert any(":2: <visual>: text after the element ignored" in m for m in messages), \
        messages
    assert any(":6: <geom>: text content ignored" in m for m in messages), messages
    assert arrays.sizes["ngeom"] == 1


def test_kernel_compile_errors_still_name_file_line_and_source():
    """tiphys shortens the position text Taichi builds for every AST node (compile
    speed); a kernel that fails to compile must still say where, with the code."""
    import taichi as ti

    @ti.kernel
    def broken():  # no annotations: this file has `from __future__ import annotations`
        for i in range(3):
            print(no_such_name + i)  # noqa: F821

    with pytest.raises(Exception) as err:
        broken()
    text = str(err.value)
    assert os.path.basename(__file__) in text and "in broken" in text
    assert "print(no_such_name + i)" in text and "^^^^^^^^^^^^" in text
