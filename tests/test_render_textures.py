"""Textures in the renderer against MuJoCo 3.4.0's own renderer, on what a new user hit
with dm_control's cheetah: a long, thin checker plane (100 x 0.8) keeps its checker
along its length, and a starry skybox (a gradient with random white marks) is drawn as
its filtered gradient, not as white fans of triangles around marked vertices."""
import numpy as np

import mujoco
import tiphys

from test_render import H, W, SteadyRenderer, _mujoco_renderer

XML = """<mujoco>
  <visual><global offwidth="320" offheight="240"/></visual>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1=".1 .2 .3" rgb2=".5 .6 .7"
             width="300" height="300"/>
    <material name="grid" texture="grid" texrepeat="1 1" texuniform="true"/>
    <texture name="sky" type="skybox" builtin="gradient" rgb1=".4 .6 .8" rgb2="0 0 0"
             width="400" height="400" mark="random" markrgb="1 1 1" random="0.02"/>
  </asset>
  <worldbody>
    <light pos="0 0 5" dir="0 0 -1" directional="true"/>
    <camera name="down" pos="3 0 4" xyaxes="1 0 0 0 1 0"/>
    <camera name="horizon" pos="0 -4 .6" xyaxes="1 0 0 0 0.1 1"/>
    <camera name="up" pos="0 0 3" xyaxes="1 0 0 0 -1 0" fovy="100"/>
    <geom name="floor" type="plane" size="100 .8 .5" pos="98 0 0" material="grid"/>
    <body pos="0 0 .3"><freejoint/><geom type="sphere" size=".1" rgba=".8 .5 .2 1"/></body>
  </worldbody>
</mujoco>"""


def _scene():
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 1)
    tiphys.fwd_kinematics(m, d)  # what the renderer draws from (mjv_updateScene)
    return mjm, mjd, m, d


def test_long_plane_keeps_its_checker(monkeypatch):
    mjm, mjd, m, d = _scene()
    mjr = _mujoco_renderer(mjm, monkeypatch)
    r = SteadyRenderer(m, W, H)
    try:
        mjr.update_scene(mjd, camera="down")
        theirs = mjr.render().astype(float).sum(-1)
        mjr.enable_segmentation_rendering()
        mjr.update_scene(mjd, camera="down")
        seg = mjr.render()
        ours = r.render(d, "down", 0).astype(float).sum(-1)
    finally:
        mjr.close()
        r.close()
    # where MuJoCo draws the plane (geom 0): the pixels compared (tiphys's own
    # segmentation is compared with MuJoCo's in test_render.py)
    floor = (seg[..., 0] == 0) & (seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM)
    assert floor.sum() > 0.3 * H * W
    # light and dark cells alternate along x in both, at the same places
    light_theirs = theirs > np.median(theirs[floor])
    light_ours = ours > np.median(ours[floor])
    agree = (light_theirs == light_ours)[floor].mean()
    assert agree > 0.9, agree
    row = light_ours[H // 2][floor[H // 2]]
    assert np.count_nonzero(np.diff(row.astype(int))) >= 4  # several cells across


def test_starry_skybox_is_its_filtered_gradient(monkeypatch):
    mjm, mjd, m, d = _scene()
    mjr = _mujoco_renderer(mjm, monkeypatch)
    r = SteadyRenderer(m, W, H)
    try:
        mjr.update_scene(mjd, camera="up")
        theirs = mjr.render().astype(float)
        ours = r.render(d, "up", 0).astype(float)
        seg = r.segment(d, "up", 0)
    finally:
        mjr.close()
        r.close()
    sky = seg[..., 1] < 0
    assert sky.mean() > 0.9
    # no white fans: nothing brighter than the gradient's bright end (rgb1 .4 .6 .8,
    # with its share of averaged-in marks)
    assert ours[sky].sum(-1).max() < 1.1 * 255 * (.4 + .6 + .8)
    # the mean colour is MuJoCo's (its stars averaged in), within 12/255
    diff = np.abs(ours[sky].mean(0) - theirs[sky].mean(0))
    assert np.all(diff < 12), diff
