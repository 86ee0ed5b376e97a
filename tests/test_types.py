"""The Model/Data tables: names, order and shapes pinned against mujoco.MjModel/MjData."""
import mujoco
import numpy as np
from mujoco.introspect import structs

import tiphys
from tiphys.types import (DATA_FIELDS, MODEL_EXTRA_FIELDS, MODEL_FIELDS, MODEL_SIZES,
                          numpy_shape)


def _is_subsequence(ours, theirs):
    it = iter(theirs)
    return all(name in it for name in ours)


def test_model_field_names_and_order_follow_mjmodel():
    mj = [f.name for f in structs.STRUCTS["mjModel"].fields]
    names = [f[0] for f in MODEL_FIELDS]
    missing = [n for n in names if n not in mj]
    assert not missing, f"not MjModel fields: {missing}"
    assert _is_subsequence(names, mj), "Model table order differs from mjModel's"
    sizes = [s for s in MODEL_SIZES if s != "nbodysubtree"]
    assert _is_subsequence(sizes, mj), "size order differs from mjModel's"
    extra = [f[0] for f in MODEL_EXTRA_FIELDS]
    assert not set(extra) & set(mj), "tiphys-only fields must not shadow MuJoCo names"


def test_data_field_names_and_order_follow_mjdata():
    mj = [f.name for f in structs.STRUCTS["mjData"].fields]
    names = [f[0] for f in DATA_FIELDS]
    missing = [n for n in names if n not in mj]
    assert not missing, f"not MjData fields: {missing}"
    assert _is_subsequence(names, mj), "Data table order differs from mjData's"


XML = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <camera name="cam" pos="0 -2 1" xyaxes="1 0 0 0 1 2"/>
    <geom type="plane" size="5 5 .1"/>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom type="box" size=".1 .2 .3"/>
      <site name="s"/>
      <body name="b" pos="0 0 -.5">
        <joint type="ball"/>
        <geom type="capsule" size=".05" fromto="0 0 0 0 0 -.4"/>
        <body name="c"><joint name="h" axis="0 1 0"/><joint type="slide"/><geom size=".1"/>
          <site name="s2" pos="0 0 -.1"/></body>
      </body>
    </body>
    <body name="mocap" mocap="true" pos="1 1 1"><geom size=".1" contype="0"/></body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="h" coef="1"/></fixed>
    <spatial name="sp"><site site="s"/><site site="s2"/></spatial></tendon>
  <actuator><motor joint="h"/><position tendon="sp" kp="3"/></actuator>
  <keyframe><key name="k" qpos="0 0 2 1 0 0 0 1 0 0 0 .5 .1"/></keyframe>
</mujoco>
"""


def test_every_field_has_mujocos_shape():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    for name, shape, _, _ in MODEL_FIELDS:
        want = numpy_shape(shape, m.arrays.sizes)
        if shape.startswith("*"):
            padded = tuple(max(1, n) for n in want[1:])  # zero-size dims are padded
            got = getattr(m, name).to_numpy().shape[1:]
            assert got == (padded[:len(got)] if len(got) < len(padded) else padded), name
            want = want[1:]
        theirs = getattr(mjm, name)
        size = len(theirs) if isinstance(theirs, bytes) else np.asarray(theirs).size
        assert size == int(np.prod(want)), name
    d = tiphys.make_data(m, 5)
    md = mujoco.MjData(mjm)
    for name, _, _, _ in DATA_FIELDS:
        ours = d.numpy(name)
        assert ours.shape[0] == 5, name
        theirs = np.asarray(getattr(md, name))
        assert ours[0].size == theirs.size, name
    for size in MODEL_SIZES:
        if hasattr(mjm, size):
            assert getattr(m, size) == getattr(mjm, size), size
