"""Every orientation form and fromto, with random values, against MuJoCo's compile."""
import itertools
import zlib

import mujoco
import numpy as np
import pytest

from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml
from oracle import compare_model

SEQS = ["".join(p) for p in itertools.product("xyzXYZ", repeat=3)][::7] + ["xyz", "XYZ",
                                                                           "zyx", "ZYX"]


def _v(rng, n, scale=1.0):
    return " ".join(f"{x:.6f}" for x in rng.uniform(-scale, scale, n))


def _model(rng, angle, seq):
    parts = []
    for i in range(6):
        ori = [f'quat="{_v(rng, 4)}"', f'axisangle="{_v(rng, 3)} {_v(rng, 1, 180)}"',
               f'xyaxes="{_v(rng, 6)}"', f'zaxis="{_v(rng, 3)}"', f'euler="{_v(rng, 3, 90)}"',
               ""][i]
        gtype = ["capsule", "cylinder", "box", "ellipsoid"][i % 4]
        fromto = f'fromto="{_v(rng, 6)}"'
        parts.append(f"""
        <body pos="{_v(rng, 3)}" {ori}>
          <joint type="hinge" axis="{_v(rng, 3)}" pos="{_v(rng, 3)}" range="-30 45"
                 ref="{_v(rng, 1, 20)}" springref="{_v(rng, 1, 20)}"/>
          <geom type="{gtype}" size=".1 .2 .3" {fromto}/>
          <geom type="box" size=".1 .2 .3" pos="{_v(rng, 3)}" {ori}/>
          <site type="capsule" size=".1" {fromto}/>
          <site pos="{_v(rng, 3)}" {ori}/>
          <camera pos="{_v(rng, 3)}" {ori}/>
          <frame pos="{_v(rng, 3)}" {ori}>
            <geom type="ellipsoid" size=".1 .2 .3" pos="{_v(rng, 3)}"/>
            <joint type="slide" axis="{_v(rng, 3)}"/>
            <light pos="{_v(rng, 3)}" dir="{_v(rng, 3)}"/>
          </frame>
          <inertial pos="{_v(rng, 3)}" mass="2" diaginertia=".3 .2 .15" {ori}/>
        </body>""")
    return f"""<mujoco><compiler angle="{angle}" eulerseq="{seq}"/>
      <worldbody>{''.join(parts)}</worldbody></mujoco>"""


@pytest.mark.parametrize("seq", SEQS)
@pytest.mark.parametrize("angle", ["degree", "radian"])
def test_orientations_match_mujoco(angle, seq):
    rng = np.random.default_rng(zlib.crc32(f"{angle}{seq}".encode()))
    xml = _model(rng, angle, seq)
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert not compare_model(compile_spec(parse_xml(xml)), mjm)


@pytest.mark.parametrize("given", [
    '<geom size=".1" quat="0 0 1 0"/>',  # the default's euler beats the element's quat
    '<geom size=".1" class="q"/>',  # ... and a child class's quat
    '<geom size=".1" class="q" euler="0 0 10"/>',  # the element's own alternative wins
    '<geom size=".1" axisangle="1 0 0 30"/>',
    '<site quat="0 0 1 0"/>',
    '<camera quat="0 0 1 0"/>',
])
def test_default_class_alternative_beats_an_elements_quat(given):
    """MuJoCo keeps a default class's euler/axisangle/... apart from the quat; resolved
    when compiling, it replaces the element's own quat (only an alternative on the
    element beats it)."""
    xml = f"""<mujoco><default><geom euler="0 15 0"/><site euler="0 15 0"/>
      <camera euler="0 15 0"/><default class="q"><geom quat="0 1 0 0"/></default>
      </default><worldbody><body>{given}</body></worldbody></mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml)
    errors = compare_model(compile_spec(parse_xml(xml)), mjm)
    assert not errors, errors
