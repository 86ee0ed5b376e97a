"""Skins in the renderer (tiphys.viewer): skins bound to moving bodies (several bones
per vertex, inflated, a transparent one, one from a SKN file with texture
coordinates) and dm_control's dog, drawn from the bones' body poses, against MuJoCo
3.4.0's own renderer: per-skin pixel masks of the segmentation rendering (skins are
their own objects there: mjOBJ_SKIN and the skin id) from several cameras and worlds,
and the skin colours in the lit image. Hidden groups hide skins."""
import os

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.viewer.renderer import RenderOptions, Renderer

from oracle import corpus_dir
from test_render import H, W, _mujoco_renderer
from test_skin import DEFORMABLE, INLINE, box_skn, posed_worlds, two_body

NWORLD = 2
OBJ_SKIN = int(mujoco.mjtObj.mjOBJ_SKIN)
CAMERAS = """<light pos="0 0 3" dir="0 0 -1"/>
    <camera name="front" pos="0.3 -1.2 .5" xyaxes="1 0.2 0 0 0.3 1"/>
    <camera name="above" pos="0.4 -0.3 1.6" xyaxes="1 0 0 0 1 0.3"/>"""
# the inline skin in group 1 (drawn by default), the file skin recoloured green
XML = two_body(INLINE.replace('group="2"', 'group="1"') +
               '<skin name="file" file="box.skn" rgba=".1 .9 .1 1" inflate=".02"/>',
               deformable=DEFORMABLE).replace("<worldbody>", "<worldbody>" + CAMERAS)


def _iou(theirs, ours, skinid):
    a = (theirs[..., 0] == skinid) & (theirs[..., 1] == OBJ_SKIN)
    b = (ours[..., 0] == skinid) & (ours[..., 1] == OBJ_SKIN)
    return a.sum(), (a & b).sum() / max(1, (a | b).sum())


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    tiphys.init(arch="cpu", precision="f64")
    tmp = tmp_path_factory.mktemp("skin")
    (tmp / "box.skn").write_bytes(box_skn())
    path = tmp / "model.xml"
    path.write_text(XML)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    m = tiphys.load_model(str(path))
    mjds, d = posed_worlds(mjm, m, NWORLD, 3)
    r = Renderer(m, W, H)
    yield mjm, mjds, m, d, r
    r.close()


def test_skin_silhouettes_match_mujoco_renderer(scene, monkeypatch):
    mjm, mjds, m, d, r = scene
    mjr = _mujoco_renderer(mjm, monkeypatch)
    try:
        seen = set()
        for world in range(NWORLD):
            for cam in ("front", "above"):
                mjr.enable_segmentation_rendering()
                mjr.update_scene(mjds[world], camera=cam)
                theirs = mjr.render()
                ours = r.segment(d, cam, world)
                for s in range(mjm.nskin):
                    count, iou = _iou(theirs, ours, s)
                    if count < 30:
                        continue
                    seen.add(s)
                    assert iou > 0.97, (world, cam, s, iou)
        assert seen == set(range(mjm.nskin))
    finally:
        mjr.close()


def test_skins_take_their_colours_and_groups(scene):
    mjm, mjds, m, d, r = scene
    img = r.render(d, "front", 0)
    seg = r.segment(d, "front", 0)
    for name, channel in (("file", 1), ("", 0)):  # green; the world-bound one red
        s = [i for i in range(mjm.nskin)
             if (mujoco.mj_id2name(mjm, OBJ_SKIN, i) or "") == name][0]
        mask = (seg[..., 0] == s) & (seg[..., 1] == OBJ_SKIN)
        assert mask.sum() > 30, name
        assert np.argmax(img[mask][:, :3].mean(0)) == channel, name
    hidden = RenderOptions(skingroup=[0, 0, 0, 0, 0, 0])
    assert not np.any(r.segment(d, "front", 0, options=hidden)[..., 1] == OBJ_SKIN)
    assert not np.any(r.segment(d, "front", 0, options=RenderOptions(skins=False))[
        ..., 1] == OBJ_SKIN)
    group1_off = RenderOptions(skingroup=[1, 0, 1, 0, 0, 0])
    seg = r.segment(d, "front", 0, options=group1_off)
    assert not np.any((seg[..., 1] == OBJ_SKIN) & (seg[..., 0] == 0))  # the inline one
    assert np.any(seg[..., 1] == OBJ_SKIN)


def test_skins_follow_the_bodies(scene):
    mjm, mjds, m, d, r = scene
    before = r.segment(d, "front", 0)
    d2 = tiphys.make_data(m, 1)
    qpos = d.numpy("qpos")[:1].copy()
    qpos[0, -1] += 1.0  # bend the hinge: the upper bone turns
    d2.qpos.from_numpy(qpos)
    tiphys.fwd_kinematics(m, d2)
    after = r.segment(d2, "front", 0)
    inline = lambda s: (s[..., 0] == 0) & (s[..., 1] == OBJ_SKIN)  # noqa: E731
    assert inline(before).sum() > 30 and inline(after).sum() > 30
    assert (inline(before) != inline(after)).sum() > 20


def test_skins_of_every_tiled_world_are_drawn(scene):
    mjm, mjds, m, d, r = scene
    seg = r.segment(d, None, 0, worlds=list(range(NWORLD)))
    skin = seg[..., 1] == OBJ_SKIN
    for world in range(NWORLD):  # each tile its own world's skins
        assert (skin & (seg[..., 2] == world)).sum() > 30, world


def test_dog_skin_matches_mujoco_renderer(monkeypatch):
    path = os.path.join(corpus_dir(), "dmc", "dog.xml")
    if not os.path.exists(path):
        pytest.skip("corpus not fetched (make corpus)")
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_path(path)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[7:] += np.random.default_rng(0).normal(0, .2, mjm.nq - 7)
    mujoco.mj_forward(mjm, mjd)
    m = tiphys.load_model(path)
    d = tiphys.make_data(m, 1)
    d.qpos.from_numpy(mjd.qpos[None].copy())
    tiphys.fwd_kinematics(m, d)  # what the renderer draws from (mjv_updateScene)
    r = Renderer(m, W, H)
    mjr = _mujoco_renderer(mjm, monkeypatch)
    try:
        for cam in range(min(2, mjm.ncam)):  # (two of dog's cameras: the whole skin)
            mjr.enable_segmentation_rendering()
            mjr.update_scene(mjd, camera=cam)
            theirs, ours = mjr.render(), r.segment(d, cam, 0)
            count, iou = _iou(theirs, ours, 0)
            if count >= 30:  # (the message: what each image holds, if it fails)
                assert iou > 0.97, dict(
                    cam=cam, iou=iou, mujoco_skin=int(count),
                    tiphys_skin=int(((ours[..., 0] == 0) & (ours[..., 1] == OBJ_SKIN)).sum()),
                    tiphys_objects=int((ours[..., 0] >= 0).sum()),
                    mujoco_objects=int((theirs[..., 0] >= 0).sum()))
        # the lit skin: the texture's skin tone (red over green over blue)
        seg = r.segment(d, 1, 0)
        mask = (seg[..., 1] == OBJ_SKIN)
        assert mask.sum() > 1000
        mean = r.render(d, 1, 0)[mask][:, :3].mean(0)
        assert mean[0] > mean[1] > mean[2], mean
    finally:
        mjr.close()
        r.close()


@pytest.mark.parametrize("subgrid", [0, 2])
def test_box_cable_skin_matches_mujoco_renderer(monkeypatch, subgrid):
    # the skin MuJoCo gives a box cable: vertices bound across each body (or blended
    # from the bones around them), inflated
    xml = f"""<mujoco><worldbody>{CAMERAS}
    <composite type="cable" prefix="c" curve="s 0 cos(s)" count="8 1 1" size="1 .2 1"
               offset="-.5 0 .3">
      <geom type="box" size=".02 .08 .01"/><skin rgba=".9 .5 .1 1" subgrid="{subgrid}"/>
    </composite></worldbody></mujoco>"""
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:] = np.random.default_rng(1).normal(0, .15, mjm.nq)
    mujoco.mj_forward(mjm, mjd)
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    d.qpos.from_numpy(mjd.qpos[None].copy())
    tiphys.fwd_kinematics(m, d)
    r = Renderer(m, W, H)
    mjr = _mujoco_renderer(mjm, monkeypatch)
    try:
        mjr.enable_segmentation_rendering()
        mjr.update_scene(mjd, camera="front")
        count, iou = _iou(mjr.render(), r.segment(d, "front", 0), 0)
        assert count > 100 and iou > 0.97, (count, iou)
    finally:
        mjr.close()
        r.close()
