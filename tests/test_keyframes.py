"""Keyframes shorter than the model, compiled as MuJoCo 3.4.0 pads them: qpos from
the joints' references as the spec writes them (free 0 0 0 1 0 0 0, ball 1 0 0 0, hinge
and slide `ref` unconverted from degrees), mocap poses from the bodies' `pos`/`quat`
attributes as written (whole bodies only), the rest with zeros; compared field by
field with MuJoCo."""
import mujoco
import numpy as np
import pytest

import tiphys

JOINTS = """<mujoco><compiler angle="{angle}"/>
  <worldbody>
    <body pos="1 2 3" euler="10 20 30"><joint type="slide" ref=".7"/>
      <joint ref="40" springref="3"/><geom size=".1"/>
      <body pos="0 0 1"><joint type="ball"/><geom size=".1"/></body></body>
    <frame pos="3 3 3"><body name="f" pos="1 1 1"><freejoint/><geom size=".1"/></body></frame>
    <body pos="5 6 7" quat="0 1 0 0"><joint type="ball"/><joint type="slide" ref="2"/>
      <geom size=".1"/></body>
    <body pos="7 7 7" quat="0 0 1 0"><freejoint/><geom size=".1"/></body>
  </worldbody>
  <keyframe><key name="k" qpos="{qpos}"/><key name="full" qvel="1"/></keyframe>
</mujoco>"""

MOCAP = """<mujoco><worldbody>
    <body name="m1" mocap="true" pos="1 2 3" quat="0 1 0 0"><geom size=".1" contype="0"/></body>
    <body name="m2" mocap="true" pos="4 5 6" euler="0 0 90"><geom size=".1" contype="0"/></body>
    <frame pos="1 1 1" euler="0 0 45"><body name="m3" mocap="true" pos="1 1 1" quat="0 0 0 2">
      <geom size=".1" contype="0"/></body></frame>
  </worldbody>
  <keyframe><key mpos="{mpos}" mquat="{mquat}"/><key mpos="9 9 9 8 7 6 5 4 3"/></keyframe>
</mujoco>"""

CASES = [JOINTS.format(angle=a, qpos=q) for a in ("degree", "radian")
         for q in ("0.5", "0.5 0.6 1 2 3 1 0 0 0", "0.1 0.2 1 0 0 0 4 4 4 1 0 0 0 1")] + \
    [MOCAP.format(mpos=p, mquat=q) for p, q in (("9 9 9", "0 0 1 0"),
                                                ("9 9 9 8", "0 0 1 0 1"), ("1", "2"))]


@pytest.mark.parametrize("xml", CASES, ids=range(len(CASES)))
def test_short_keyframes_pad_as_mujoco(xml):
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_string(xml)
    a = tiphys.load_model_from_string(xml).arrays
    for name in ("key_qpos", "key_qvel", "key_act", "key_ctrl", "key_mpos", "key_mquat",
                 "key_time"):
        ours = np.asarray(getattr(a, name), dtype=np.float64).reshape(-1)
        np.testing.assert_allclose(ours, getattr(mjm, name).reshape(-1), rtol=0,
                                   atol=1e-12, err_msg=name)


REPLICATED = """<mujoco><worldbody>
  <replicate count="2" offset=".3 0 0">
    <body name="r"><joint name="j"/><geom size=".05" pos="1 0 0"/></body>
  </replicate></worldbody>
  <keyframe><key name="k" qpos="0.5"/></keyframe>
</mujoco>"""


def test_keyframes_with_replicate_are_refused_not_compiled_differently():
    """MuJoCo 3.4.0 reads <keyframe> before <worldbody> and copies each keyframe for
    every replicated copy (k0, k1, then k; each copy's joint takes the template's value,
    the others qpos0); tiphys does not do that yet, so it refuses instead of compiling
    one keyframe."""
    mjm = mujoco.MjModel.from_xml_string(REPLICATED)
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_KEY, i) for i in range(mjm.nkey)]
    assert names == ["k0", "k1", "k"]
    np.testing.assert_array_equal(mjm.key_qpos, [[0.5, 0], [0, 0.5], [0, 0]])
    with pytest.raises(NotImplementedError, match=r"<string>:5: <key> in a model with "
                                                  r"<replicate> \(line 2\)"):
        tiphys.load_model_from_string(REPLICATED)
