"""MuJoCo's flex drawing flags (mjVIS_FLEXVERT, mjVIS_FLEXEDGE, mjVIS_FLEXFACE,
mjVIS_FLEXSKIN, flex_layer) and flex textures in the renderer, against MuJoCo 3.4.0's
own renderer: for every combination of the four flags, a cloth (2D), a rope (1D) and a
soft cube (3D), deformed, cover the same pixels of the segmentation image as in
MuJoCo's (vertex spheres, edge cylinders, element faces and skins each drawn or left
out as mjv_updateScene and mjr_render decide, nothing of a flex of alpha 0); a
checker-textured cloth shows its checker where MuJoCo's does, with the skin and with
the element faces; tiled worlds draw each world's flexes."""
import itertools

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.viewer.renderer import FreeCamera, RenderOptions, tile_offsets

from test_render import H, W, SteadyRenderer, _mujoco_renderer

OBJ_FLEX = int(mujoco.mjtObj.mjOBJ_FLEX)
FLAGS = (mujoco.mjtVisFlag.mjVIS_FLEXVERT, mujoco.mjtVisFlag.mjVIS_FLEXEDGE,
         mujoco.mjtVisFlag.mjVIS_FLEXFACE, mujoco.mjtVisFlag.mjVIS_FLEXSKIN)

XML = """<mujoco>
  <option timestep="0.004"/>
  <visual><global offwidth="320" offheight="240"/></visual>
  <asset>
    <texture name="check" type="2d" builtin="checker" rgb1=".95 .95 .95" rgb2=".1 .1 .5"
             width="64" height="64"/>
    <material name="check" texture="check"/>
  </asset>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <camera name="side" pos="0 -1.3 1.0" xyaxes="1 0 0 0 .6 1"/>
    <camera name="down" pos="-.2 0 1.55" xyaxes="1 0 0 0 1 0"/>
    <flexcomp name="cloth" type="grid" count="5 5 1" spacing=".1 .1 .1" pos="-.35 .1 .5"
              dim="2" radius=".02" rgba=".9 .2 .2 1" mass=".5">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0 4"/>
    </flexcomp>
    <flexcomp name="rope" type="grid" count="6 1 1" spacing=".08 .08 .08" pos="-.3 -.25 .6"
              dim="1" radius=".025" rgba=".9 .8 .1 1" mass=".2">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0"/>
    </flexcomp>
    <flexcomp name="cube" type="grid" count="3 3 3" spacing=".1 .1 .1" pos=".3 0 .45"
              dim="3" radius=".015" rgba=".2 .3 .9 1" mass="1">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0 1 2"/>
    </flexcomp>
    <flexcomp name="textured" type="grid" count="6 6 1" spacing=".12 .12 .12" pos="-.2 0 .9"
              dim="2" radius=".01" material="check" mass=".5">
      <contact contype="0" conaffinity="0"/>
      <edge equality="true"/>
      <pin id="0 5"/>
    </flexcomp>
    <flexcomp name="ghost" type="grid" count="3 3 1" spacing=".1 .1 .1" pos="0 -.3 .4"
              dim="2" radius=".02" rgba="1 1 1 0" mass=".1">
      <contact contype="0" conaffinity="0"/>
      <pin id="0 1 2 3 4 5 6 7 8"/>
    </flexcomp>
  </worldbody>
</mujoco>"""
SHAPES = ("cloth", "rope", "cube")
NWORLD = 2


@pytest.fixture(scope="module")
def scene():
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjds = []
    for world in range(NWORLD):  # sag and twist: normals differ from vertex to vertex
        mjd = mujoco.MjData(mjm)
        mjd.qvel[:] = np.random.default_rng(3 + world).normal(0, .3, mjm.nv)
        for _ in range(40 + 25 * world):
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_forward(mjm, mjd)
        mjds.append(mjd)
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(np.stack([x.qpos for x in mjds]))
    d.qvel.from_numpy(np.stack([x.qvel for x in mjds]))
    tiphys.fwd_kinematics(m, d)  # what the renderer draws from (mjv_updateScene)
    assert np.allclose(d.numpy("flexvert_xpos").reshape(NWORLD, -1, 3),
                       np.stack([x.flexvert_xpos for x in mjds]), atol=1e-9)
    monkeypatch = pytest.MonkeyPatch()
    mjr = _mujoco_renderer(mjm, monkeypatch)
    r = SteadyRenderer(m, W, H)
    yield mjm, mjds, m, d, r, mjr
    r.close()
    mjr.close()
    monkeypatch.undo()


def _theirs(mjm, mjd, mjr, camera, flags, layer=0, segment=True):
    opt = mujoco.MjvOption()
    for flag, on in zip(FLAGS, flags):
        opt.flags[flag] = on
    opt.flex_layer = layer
    if segment:
        mjr.enable_segmentation_rendering()
    else:
        mjr.disable_segmentation_rendering()
    mjr.update_scene(mjd, camera=camera, scene_option=opt)
    return mjr.render()


def _options(flags, layer=0):
    vert, edge, face, skin = (bool(x) for x in flags)
    return RenderOptions(flex_vert=vert, flex_edge=edge, flex_face=face, flex_skin=skin,
                         flex_layer=layer)


def _compare_coverage(mjm, theirs, ours, names, what):
    for name in names:
        f = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_FLEX, name)
        a = (theirs[..., 0] == f) & (theirs[..., 1] == OBJ_FLEX)
        b = (ours[..., 0] == f) & (ours[..., 1] == OBJ_FLEX)
        if a.sum() == 0:  # MuJoCo draws nothing of it with these flags: neither do we
            assert b.sum() == 0, (what, name, b.sum())
            continue
        assert a.sum() > 40, (what, name, a.sum())  # the scene shows each flex well
        iou = (a & b).sum() / (a | b).sum()
        # an open edge tube's inside, seen through its end: MuJoCo culls those faces,
        # GGUI draws them (a few pixels of a rope's end without its vertex sphere)
        bound = 0.85 if mjm.flex_dim[f] == 1 else 0.9
        assert iou > bound, (what, name, iou)


@pytest.mark.parametrize("flags", list(itertools.product((0, 1), repeat=4)),
                         ids=lambda f: "vert%d-edge%d-face%d-skin%d" % f)
def test_flex_flags_match_mujoco_renderer(scene, flags):
    mjm, mjds, m, d, r, mjr = scene
    world = sum(flags) % NWORLD  # both worlds, across the combinations
    theirs = _theirs(mjm, mjds[world], mjr, "side", flags)
    ours = r.segment(d, "side", world, options=_options(flags))
    _compare_coverage(mjm, theirs, ours, SHAPES, flags)

    def drawn(seg):
        return {int(f) for f in np.unique(seg[..., 0][seg[..., 1] == OBJ_FLEX])}

    assert drawn(ours) == drawn(theirs)
    if any(flags):
        assert drawn(ours)


def test_flex_layer_picks_the_faces_of_inner_elements(scene):
    mjm, mjds, m, d, r, mjr = scene
    mjd = mjds[0]
    flags = (0, 0, 1, 0)
    for layer in (0, 1):
        theirs = _theirs(mjm, mjd, mjr, "side", flags, layer)
        ours = r.segment(d, "side", 0, options=_options(flags, layer))
        _compare_coverage(mjm, theirs, ours, ("cube",), layer)
    # the inner layer is smaller than the outer one
    cube = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_FLEX, "cube")
    area = [((r.segment(d, "side", 0, options=_options(flags, layer))[..., 0] == cube)).sum()
            for layer in (0, 1)]
    assert 0 < area[1] < area[0], area


@pytest.mark.parametrize("flags", [(0, 1, 0, 1), (0, 0, 1, 0)], ids=["skin", "faces"])
def test_textured_cloth_shows_the_checker(scene, flags):
    mjm, mjds, m, d, r, mjr = scene
    mjd = mjds[1]
    f = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_FLEX, "textured")
    seg_theirs = _theirs(mjm, mjd, mjr, "down", flags)
    theirs = _theirs(mjm, mjd, mjr, "down", flags, segment=False).astype(float).sum(-1)
    options = _options(flags)
    seg = r.segment(d, "down", 1, options=options)
    ours = r.render(d, "down", 1, options=options).astype(float).sum(-1)
    cloth = (seg[..., 0] == f) & (seg[..., 1] == OBJ_FLEX) & \
        (seg_theirs[..., 0] == f) & (seg_theirs[..., 1] == OBJ_FLEX)
    assert cloth.sum() > 0.2 * H * W
    # light and dark checker cells at the same places in both; the cells' borders
    # cross the elements (6 x 6 vertices), so vertex colours alone would not do (0.88)
    light_theirs = theirs > np.median(theirs[cloth])
    light_ours = ours > np.median(ours[cloth])
    agree = (light_theirs == light_ours)[cloth].mean()
    assert agree > 0.95, agree
    # a 2 x 2 checker (MuJoCo's builtin): the upper and lower rows of cells swap
    upper = light_ours[H // 4][cloth[H // 4]].astype(int)
    lower = light_ours[3 * H // 4][cloth[3 * H // 4]].astype(int)
    for row in (upper, lower):
        assert np.count_nonzero(np.diff(row)) >= 1
    assert upper[0] != lower[0] and upper[-1] != lower[-1]


@pytest.mark.parametrize("flags", [(1, 1, 1, 0), (0, 1, 0, 1)], ids=["faces", "skin"])
def test_tiled_worlds_draw_each_world_flexes(scene, flags):
    """Two worlds side by side: the second tile, seen from a camera moved by its offset,
    is the second world drawn alone (spheres, edges, faces, sub-triangles of the
    texture and skins are placed per tile)."""
    mjm, mjds, m, d, r, mjr = scene
    options = _options(flags)
    free = FreeCamera.default(m)
    free.distance *= 0.7
    alone = r.segment(d, free, 1, options=options)
    offset = tile_offsets(m, NWORLD)[1]
    moved = FreeCamera(free.lookat + offset, free.distance, free.azimuth, free.elevation)
    tiled = r.segment(d, moved, 1, options=options, worlds=[0, 1])
    assert np.array_equal(r.offsets[1], offset)
    for f in range(mjm.nflex):
        a = (alone[..., 0] == f) & (alone[..., 1] == OBJ_FLEX)
        b = (tiled[..., 0] == f) & (tiled[..., 1] == OBJ_FLEX) & (tiled[..., 2] == 1)
        if a.sum() == 0:
            assert b.sum() == 0
            continue
        assert (a & b).sum() / (a | b).sum() > 0.98, (flags, f)
