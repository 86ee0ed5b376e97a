"""Flexes in the renderer (tiphys.viewer): a 2D cloth (smooth skin, and flat skin), a 3D
soft block (its shell) and a 1D rope (edge cylinders) drawn from flexvert_xpos after
they moved, against MuJoCo 3.4.0's own renderer: per-flex pixel masks of the
segmentation rendering from several cameras and worlds, and the flex colours in the
lit image. Hidden groups hide flexes."""
import numpy as np
import pytest

import mujoco
import tiphys
from tiphys.viewer.renderer import RenderOptions

from test_render import H, W, SteadyRenderer, _mujoco_renderer


NWORLD = 2
OBJ_FLEX = int(mujoco.mjtObj.mjOBJ_FLEX)

XML = """<mujoco>
  <option timestep="0.004" gravity="0 0 -9.81"/>
  <visual><global offwidth="320" offheight="240"/></visual>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <camera name="side" pos="0 -1.6 0.9" xyaxes="1 0 0 0 0.5 1"/>
    <camera name="above" pos="0.1 -0.3 1.8" xyaxes="1 0 0 0 1 0.15"/>
    <geom type="plane" size="2 2 .1" rgba=".3 .3 .3 1" contype="0" conaffinity="0"/>
    <flexcomp name="cloth" type="grid" count="7 7 1" spacing=".06 .06 .06" pos="-.35 0 .6"
              dim="2" radius=".01" rgba=".9 .2 .2 1" mass=".5">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0 6"/>
    </flexcomp>
    <flexcomp name="flat" type="grid" count="5 5 1" spacing=".06 .06 .06" pos=".05 .2 .5"
              dim="2" radius=".008" rgba=".2 .9 .2 1" mass=".3" flatskin="true">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0"/>
    </flexcomp>
    <flexcomp name="block" type="grid" count="3 3 3" spacing=".07 .07 .07" pos=".4 0 .4"
              dim="3" radius="0" rgba=".2 .3 .9 1" mass="1">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0 1 2"/>
    </flexcomp>
    <flexcomp name="rope" type="grid" count="8 1 1" spacing=".06 .06 .06" pos="-.1 -.3 .65"
              dim="1" radius=".02" rgba=".9 .8 .1 1" mass=".2">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0"/>
    </flexcomp>
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def scene():
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    mjds = []
    for world in range(NWORLD):  # the worlds move apart: different pushes
        mjd = mujoco.MjData(mjm)
        mjd.qvel[:] = np.random.default_rng(world).normal(0, .3, mjm.nv)
        for _ in range(40 + 30 * world):
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_forward(mjm, mjd)
        mjds.append(mjd)
    d.qpos.from_numpy(np.stack([x.qpos for x in mjds]))
    d.qvel.from_numpy(np.stack([x.qvel for x in mjds]))
    tiphys.forward(m, d)
    assert np.allclose(d.numpy("flexvert_xpos").reshape(NWORLD, -1, 3),
                       np.stack([x.flexvert_xpos for x in mjds]), atol=1e-9)
    r = SteadyRenderer(m, W, H)
    yield mjm, mjds, m, d, r
    r.close()


def test_flex_silhouettes_match_mujoco_renderer(scene, monkeypatch):
    mjm, mjds, m, d, r = scene
    mjr = _mujoco_renderer(mjm, monkeypatch)
    try:
        seen = set()
        for world in range(NWORLD):
            for cam in ("side", "above"):
                mjr.enable_segmentation_rendering()
                mjr.update_scene(mjds[world], camera=cam)
                theirs = mjr.render()
                ours = r.segment(d, cam, world)
                for f in range(mjm.nflex):
                    a = (theirs[..., 0] == f) & (theirs[..., 1] == OBJ_FLEX)
                    b = (ours[..., 0] == f) & (ours[..., 1] == OBJ_FLEX)
                    if a.sum() < 30:
                        continue
                    seen.add(f)
                    iou = (a & b).sum() / (a | b).sum()
                    # a rope's open tube ends: MuJoCo culls the inside faces one
                    # sees through an end, GGUI draws them (a few pixels of a thin tube)
                    bound = 0.8 if mjm.flex_dim[f] == 1 else 0.97
                    assert iou > bound, (world, cam, f, iou)
        assert seen == set(range(mjm.nflex))
    finally:
        mjr.close()


def test_flexes_take_their_colours_and_groups(scene):
    mjm, mjds, m, d, r = scene
    img = r.render(d, "side", 0)
    seg = r.segment(d, "side", 0)
    rgba = np.asarray(m.arrays.flex_rgba).reshape(-1, 4)
    for f in range(m.nflex):
        mask = (seg[..., 0] == f) & (seg[..., 1] == OBJ_FLEX)
        assert mask.sum() > 30, f
        mean = img[mask][:, :3].mean(0)
        # lit, so darker or brighter, but the dominant channel is the flex's own
        assert np.argmax(mean) == np.argmax(rgba[f, :3]), (f, mean)
    hidden = RenderOptions(flexgroup=[0, 0, 0, 0, 0, 0])
    seg = r.segment(d, "side", 0, options=hidden)
    assert not np.any(seg[..., 1] == OBJ_FLEX)
    seg = r.segment(d, "side", 0)
    assert np.any(seg[..., 1] == OBJ_FLEX)


def test_flexes_follow_the_simulation(scene):
    mjm, mjds, m, d, r = scene
    before = r.segment(d, "side", 0)
    d2 = tiphys.make_data(m, 1)
    d2.qpos.from_numpy(d.numpy("qpos")[:1])
    for _ in range(60):
        tiphys.step(m, d2)
    after = r.segment(d2, "side", 0)
    cloth = lambda s: (s[..., 0] == 0) & (s[..., 1] == OBJ_FLEX)  # noqa: E731
    assert cloth(before).sum() > 30 and cloth(after).sum() > 30
    assert (cloth(before) != cloth(after)).sum() > 20
