"""Headless rendering (GGUI on Vulkan, lavapipe without a GPU), the viewer's logic and
the `tiphys render`/`view` commands, checked against MuJoCo 3.4.0.

One model holds every geom type (plane with a checker texture, sphere, capsule,
ellipsoid, cylinder, box, mesh, heightfield), sites, a tendon, two lights and two
cameras; three worlds hold different states. Images must be real scenes: each geom
is drawn where MuJoCo's geom_xpos projects through MuJoCo's camera, silhouettes
match MuJoCo's own renderer (when it can open an EGL context), light and camera
choices change the picture. The texture, <statistic> and <visual> values the
renderer uses are compared with mujoco.MjModel.
"""
import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.cli import main
from tiphys.compiler.compile import compile_spec
from tiphys.viewer import geometry as geo
from tiphys.viewer.renderer import (FreeCamera, RenderError, RenderOptions, Renderer,
                                    render)
from tiphys.viewer.viewer import Viewer

W, H = 192, 144
NWORLD = 3


class SteadyRenderer(Renderer):
    """A Renderer that draws every image twice and insists the two agree: the same
    state must give the same pixels. (Frames of full test runs once lost objects
    that the next frame of the same state could lose again or not; the cause was
    GGUI's unwritten instance-transform buffer, see
    test_meshes_survive_nan_left_in_freed_ggui_memory.)"""

    def render(self, *args, **kwargs):
        first = super().render(*args, **kwargs)
        second = super().render(*args, **kwargs)
        assert np.array_equal(first, second), "two frames of the same state differ"
        return second


XML = """
<mujoco model="allgeoms">
  <visual>
    <global azimuth="120" elevation="-35" fovy="50"/>
    <headlight ambient="0.15 0.15 0.15" diffuse="0.5 0.5 0.5"/>
    <map fogstart="0.8" fogend="2"/>
    <rgba fog="0.4 0.5 0.6 1"/>
  </visual>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="64" height="64"
             rgb1=".1 .2 .3" rgb2=".35 .45 .55"/>
    <texture type="skybox" builtin="gradient" rgb1=".3 .5 .7" rgb2="0 0 0" width="64"
             height="64"/>
    <material name="grid" texture="grid" texrepeat="4 4"/>
    <material name="shiny" rgba=".2 .8 .2 1" specular="0.9" shininess="0.8"/>
    <hfield name="hf" nrow="9" ncol="11" size=".5 .4 .2 .1"
            elevation="0 0 0 0 0 0 0 0 0 0 0  0 1 1 1 1 1 1 1 1 1 0  0 1 2 2 2 2 2 2 2 1 0
                       0 1 2 3 3 3 3 3 2 1 0  0 1 2 3 4 4 4 3 2 1 0  0 1 2 3 3 3 3 3 2 1 0
                       0 1 2 2 2 2 2 2 2 1 0  0 1 1 1 1 1 1 1 1 1 0  0 0 0 0 0 0 0 0 0 0 0"/>
    <mesh name="tetra" vertex="-.15 -.15 0  .3 -.15 0  -.15 .3 0  -.15 -.15 .35"/>
  </asset>
  <worldbody>
    <light name="top" pos="0 0 4" dir="0 0 -1" directional="true" diffuse=".6 .6 .6"/>
    <light name="spot" pos="1 -1 2" dir="-1 1 -2" cutoff="60"/>
    <geom name="floor" type="plane" size="3 3 .1" material="grid"/>
    <geom name="hf" type="hfield" hfield="hf" pos="1.5 -1.3 0" rgba=".6 .5 .3 1"/>
    <camera name="front" pos="0 -4.5 2.2" xyaxes="1 0 0 0 .45 1"/>
    <camera name="top" pos="0 0.2 6" xyaxes="1 0 0 0 1 0" fovy="55"/>
    <site name="anchor" pos="-1.6 1.8 1.2" size=".06" rgba="1 1 1 1"/>
    <body name="sphere" pos="-1 0 .3"><freejoint/>
      <geom name="sphere" type="sphere" size=".3" rgba=".9 .1 .1 1"/>
      <site name="hook" pos="0 0 .3" size=".04"/>
      <body name="arm" pos="-.3 0 0"><joint name="hinge" axis="0 0 1"/>
        <geom name="arm" type="capsule" fromto="-.05 0 0 -.3 0 0" size=".08" rgba=".1 .8 .8 1"/>
      </body></body>
    <body name="capsule" pos="0 0 .12"><freejoint/>
      <geom name="capsule" type="capsule" size=".12 .25" euler="0 90 0" rgba=".1 .1 .9 1"/></body>
    <body name="ellipsoid" pos="1 0 .15"><freejoint/>
      <geom name="ellipsoid" type="ellipsoid" size=".3 .2 .15" material="shiny"/></body>
    <body name="cylinder" pos="-1 1.2 .25"><freejoint/>
      <geom name="cylinder" type="cylinder" size=".2 .25" rgba=".9 .9 .1 1"/></body>
    <body name="box" pos="0 1.2 .25"><freejoint/>
      <geom name="box" type="box" size=".25 .2 .25" rgba=".9 .5 .1 1"/></body>
    <body name="mesh" pos="1 1.2 0"><freejoint/>
      <geom name="mesh" type="mesh" mesh="tetra" rgba=".6 .1 .8 1"/></body>
  </worldbody>
  <tendon><spatial name="rope" width=".01"><site site="anchor"/><site site="hook"/></spatial>
  </tendon>
</mujoco>
"""
BODIES = ("sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")


def _world_qpos(mjm, world):
    """World 0: the model as written; others: bodies shifted and turned differently."""
    qpos = mjm.qpos0.copy()
    rng = np.random.default_rng(world)
    if world:
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            if mjm.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
                qpos[adr] = rng.uniform(-0.5, 0.5)
                continue
            qpos[adr:adr + 2] += rng.uniform(-0.25, 0.25, 2)
            quat = np.array([1.0, 0, 0, rng.uniform(-0.6, 0.6)])
            qpos[adr + 3:adr + 7] = quat / np.linalg.norm(quat)
    return qpos


@pytest.fixture(scope="module")
def scene():
    mjm = mujoco.MjModel.from_xml_string(XML)
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    mjds = []
    qpos = np.zeros((NWORLD, mjm.nq))
    for w in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        mjd.qpos[:] = _world_qpos(mjm, w)
        mujoco.mj_forward(mjm, mjd)
        mjds.append(mjd)
        qpos[w] = mjd.qpos
    d.qpos.from_numpy(qpos)
    tiphys.forward(m, d)
    return mjm, mjds, m, d


@pytest.fixture(scope="module")
def renderer(scene):
    _, _, m, _ = scene
    r = SteadyRenderer(m, W, H)
    yield r
    r.close()


def project(mjm, mjd, camid, points, width=W, height=H):
    """Pixel (col, row) of world points through MuJoCo's camera (pinhole, row 0 up)."""
    pos = mjd.cam_xpos[camid]
    mat = mjd.cam_xmat[camid].reshape(3, 3)
    local = (np.asarray(points) - pos) @ mat  # camera axes: x right, y up, -z forward
    f = 0.5 * height / np.tan(np.radians(mjm.cam_fovy[camid]) / 2)
    col = 0.5 * width + f * local[:, 0] / -local[:, 2]
    row = 0.5 * height - f * local[:, 1] / -local[:, 2]
    return np.stack([col, row], -1)


# ---------------------------------------------------------------- compiled values


def _tex_fields(a):
    return {n: np.asarray(getattr(a, n)).ravel().astype(np.int64) for n in (
        "tex_type", "tex_colorspace", "tex_height", "tex_width", "tex_nchannel", "tex_adr",
        "tex_data")}


def test_texture_arrays_match_mujoco(tmp_path):
    from PIL import Image

    cases = []
    for kind in ("2d", "cube", "skybox"):
        for builtin in ("gradient", "checker", "flat"):
            for mark in ("none", "edge", "cross", "random"):
                cases.append(f'<texture name="t" type="{kind}" builtin="{builtin}" '
                             f'mark="{mark}" random="0.05" markrgb="1 .5 .25" rgb1=".1 .9 .3" '
                             f'rgb2=".7 .2 .6" width="33" height="17"/>')
    cases.append('<texture name="t" type="2d" builtin="checker" width="8" height="6" '
                 'nchannel="4"/>')
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)).save(tmp_path / "g.png")
    Image.fromarray(rng.integers(0, 255, (5, 7, 4), dtype=np.uint8)).save(tmp_path / "a.png")
    for face in "RUB":
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(
            tmp_path / f"{face}.png")
    cases += [
        '<texture name="t" type="skybox" file="g.png" gridsize="3 4" gridlayout=".U..LFRB.D.."/>',
        '<texture name="t" type="cube" fileright="R.png" fileup="U.png" fileback="B.png" '
        'rgb1=".2 .3 .4"/>',
        '<texture name="t" type="cube" file="R.png"/>',
        '<texture name="t" type="2d" file="a.png" nchannel="4" hflip="true"/>',
        '<texture name="t" type="2d" file="a.png" vflip="true"/>',
    ]
    for case in cases:
        xml = (f'<mujoco><compiler texturedir="{tmp_path}"/><asset>{case}'
               f'<material name="m" texture="t"/></asset>'
               f'<worldbody><geom size="1" material="m"/></worldbody></mujoco>')
        ours = _tex_fields(compile_spec(tiphys.parse_xml(xml)))
        theirs = _tex_fields(mujoco.MjModel.from_xml_string(xml))
        for name, value in theirs.items():
            np.testing.assert_array_equal(ours[name], value, err_msg=f"{name}: {case}")


def test_statistic_and_visual_match_mujoco(scene):
    mjm, _, m, _ = scene
    np.testing.assert_allclose(m.stat.center, mjm.stat.center, rtol=1e-9, atol=1e-12)
    for name in ("extent", "meansize", "meanmass"):
        assert getattr(m.stat, name) == pytest.approx(getattr(mjm.stat, name), rel=1e-9)
    vis = geo.visual(m)
    for section, name in (("global", "fovy"), ("global", "azimuth"), ("global", "elevation"),
                          ("map", "znear"), ("map", "zfar"), ("map", "fogstart"),
                          ("map", "fogend"), ("map", "force"), ("map", "stiffness"),
                          ("map", "stiffnessrot"), ("quality", "numslices"),
                          ("quality", "numstacks"), ("scale", "framelength"),
                          ("scale", "com"), ("scale", "contactwidth")):
        theirs = getattr(getattr(mjm.vis, "global_" if section == "global" else section),
                         name)
        assert vis[section][name] == pytest.approx(theirs, rel=1e-6), (section, name)
    for name in ("ambient", "diffuse", "specular"):
        np.testing.assert_allclose(vis["headlight"][name],
                                   getattr(mjm.vis.headlight, name), rtol=1e-6)
    assert bool(vis["headlight"]["active"]) == bool(mjm.vis.headlight.active)
    for name in ("fog", "haze"):
        np.testing.assert_allclose(vis["rgba"][name], getattr(mjm.vis.rgba, name), rtol=1e-6)


# ---------------------------------------------------------------- images


def _closest_colour(pixel, colours):
    """Index of the colour whose direction in RGB is nearest the pixel's (lighting
    scales and saturates colours but keeps them apart)."""
    p = np.asarray(pixel[:3], dtype=float)
    c = np.asarray(colours, dtype=float)[:, :3]
    cos = c @ p / (np.linalg.norm(c, axis=1) * np.linalg.norm(p) + 1e-12)
    return int(np.argmax(cos))


@pytest.mark.parametrize("world", [0, 2])
def test_geoms_drawn_at_projected_positions(scene, renderer, world):
    mjm, mjds, m, d = scene
    mjd = mjds[world]
    cam = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, "top")
    seg = renderer.segment(d, "top", world)
    img = renderer.render(d, "top", world, options=RenderOptions(headlight=False))
    assert (seg[..., 2][seg[..., 0] >= 0] == world).all()
    pix = project(mjm, mjd, cam, mjd.geom_xpos)
    colours = [mjm.geom_rgba[g] if mjm.geom_matid[g] < 0 else mjm.mat_rgba[mjm.geom_matid[g]]
               for g in range(mjm.ngeom)]
    for g in range(mjm.ngeom):
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g)
        col, row = (int(round(v)) for v in pix[g])
        if name in ("floor", "hf"):
            continue  # the plane's centre is under the capsule; hf checked below
        assert (seg[row, col, 0], seg[row, col, 1]) == (g, 5), name
        candidates = [k for k in range(mjm.ngeom) if k > 1]  # not the textured planes
        assert candidates[_closest_colour(img[row, col], [colours[k] for k in candidates])] \
            == g, (name, img[row, col], colours[g])
    # the height field's peak and a point of the floor outside every object
    hf = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, "hf")
    col, row = (int(round(v)) for v in project(mjm, mjd, cam, [mjd.geom_xpos[hf]])[0])
    assert tuple(seg[row, col, :2]) == (hf, 5)
    col, row = (int(round(v)) for v in project(mjm, mjd, cam, [[-2.0, -1.5, 0.0]])[0])
    assert tuple(seg[row, col, :2]) == (0, 5)


def test_checker_floor_follows_the_texture(scene, renderer):
    """Floor pixels take the two checker colours where MuJoCo's texture mapping puts
    them (texrepeat 4 over the 6 m plane: 0.75 m squares)."""
    mjm, mjds, m, d = scene
    cam = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, "top")
    opts = RenderOptions(headlight=False, sites=False)
    img = renderer.render(d, "top", 0, options=opts).astype(float)
    seg = renderer.segment(d, "top", 0, options=opts)
    samples = []
    for x in np.arange(-2.6, 2.7, 0.75):
        for y in (-2.25, 2.625):
            col, row = (int(round(v)) for v in project(mjm, mjds[0], cam, [[x, y, 0]])[0])
            if 0 <= row < H and 0 <= col < W and seg[row, col, 0] == 0:
                s, t = 0.5 * (4 / 3) * x - 0.5, -0.5 * (4 / 3) * y - 0.5
                light = ((np.floor(2 * s) + np.floor(2 * t)) % 2) == 1
                samples.append((light, img[row, col].sum()))
    light = [v for k, v in samples if k]
    dark = [v for k, v in samples if not k]
    assert len(light) >= 3 and len(dark) >= 3
    assert min(light) > max(dark)


def _mujoco_renderer(mjm, monkeypatch):
    """MuJoCo's own OpenGL renderer; headless (no DISPLAY) through EGL (Mesa)."""
    from mujoco import gl_context

    if not os.environ.get("DISPLAY") and os.environ.get("MUJOCO_GL", "") in ("", "glfw"):
        try:
            from mujoco import egl
            monkeypatch.setattr(gl_context, "GLContext", egl.GLContext)
        except Exception as exc:  # noqa: BLE001 - no libEGL
            pytest.skip(f"MuJoCo's renderer needs EGL without a display: {exc}")
    try:
        return mujoco.Renderer(mjm, H, W)
    except Exception as exc:  # noqa: BLE001 - no usable OpenGL here
        pytest.skip(f"MuJoCo's own renderer cannot open an OpenGL context here: {exc}")


def test_silhouettes_match_mujoco_renderer(scene, renderer, monkeypatch):
    """Per-geom and per-site pixel masks against MuJoCo's segmentation rendering."""
    mjm, mjds, m, d = scene
    mjr = _mujoco_renderer(mjm, monkeypatch)
    try:
        for world in (0, 1):
            for cam in (-1, 0, 1):
                mjr.enable_segmentation_rendering()
                mjr.update_scene(mjds[world], camera=cam)
                theirs = mjr.render()
                ours = renderer.segment(d, None if cam < 0 else cam, world)
                # MuJoCo draws tendons as capsules (we draw lines): not compared
                keep = (theirs[..., 1] != mujoco.mjtObj.mjOBJ_TENDON)
                for objtype, count in ((5, mjm.ngeom), (6, mjm.nsite)):
                    for i in range(count):
                        a = (theirs[..., 0] == i) & (theirs[..., 1] == objtype) & keep
                        b = (ours[..., 0] == i) & (ours[..., 1] == objtype) & keep
                        if a.sum() < 20:
                            continue
                        iou = (a & b).sum() / (a | b).sum()
                        assert iou > 0.97, (world, cam, objtype, i, iou)
    finally:
        mjr.close()


def test_lighting_varies(scene, renderer):
    mjm, mjds, m, d = scene
    front = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, "front")
    lit = renderer.render(d, "front", 0).astype(float)
    dark = renderer.render(d, "front", 0, options=RenderOptions(headlight=False)).astype(float)
    seg = renderer.segment(d, "front", 0)
    objects = seg[..., 0] > 0
    assert lit[objects].mean() > dark[objects].mean() + 5
    # the sphere, lit from above: its top brighter than its underside
    sphere = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, "sphere")
    c = mjds[0].geom_xpos[sphere]
    top, low = project(mjm, mjds[0], front, [c + [0, 0, 0.22], c + [0, -0.2, -0.15]])
    pt = lit[int(round(top[1])), int(round(top[0]))]
    pl = lit[int(round(low[1])), int(round(low[0]))]
    assert pt[0] > pl[0] + 20
    # shading is smooth but not flat: the sphere's red channel spans a range
    red = lit[(seg[..., 0] == sphere) & (seg[..., 1] == 5), 0]
    assert red.max() - red.min() > 60
    # fog pulls far pixels to the fog colour
    fog = renderer.render(d, "front", 0, options=RenderOptions(fog=True)).astype(float)
    far = seg[..., 0] == 0
    fogrgb = 255 * np.array([0.4, 0.5, 0.6])
    assert np.abs(fog[far] - fogrgb).mean() < np.abs(lit[far] - fogrgb).mean() - 10


def test_skybox_gradient(scene, renderer):
    _, _, m, d = scene
    free = FreeCamera(np.array([0.0, 0.0, 1.0]), 3.0, 90.0, 10.0)  # looking up a little
    img = renderer.render(d, free, 0, options=RenderOptions(tendons=False)).astype(float)
    seg = renderer.segment(d, free, 0)
    sky = seg[..., 0] < 0
    rows = np.nonzero(sky.any(1))[0]
    assert len(rows) > 10
    top = img[rows[0]][sky[rows[0]]].mean(0)
    assert top[2] > top[0] and top[2] > 60  # the blue of rgb1 at the zenith side
    no_sky = renderer.render(d, free, 0, options=RenderOptions(skybox=False, tendons=False))
    assert no_sky[sky].max() == 0


def test_camera_choices_change_the_view(scene, renderer):
    _, _, m, d = scene
    images = [renderer.segment(d, c, 0)[..., 0] for c in (None, "front", "top", 1)]
    assert (images[2] == images[3]).all()  # name and id of the same camera
    for i, j in ((0, 1), (0, 2), (1, 2)):
        assert (images[i] != images[j]).mean() > 0.2
    turned = renderer.segment(d, FreeCamera.default(m), 0)[..., 0]
    assert (turned == images[0]).all()  # the default free camera is camera None
    free = FreeCamera.default(m)
    free.azimuth += 90
    assert (renderer.segment(d, free, 0)[..., 0] != images[0]).mean() > 0.1


def test_grid_of_worlds(scene, renderer):
    mjm, mjds, m, d = scene
    seg = renderer.segment(d, None, 0, worlds=[0, 1, 2])
    box = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, "box")
    shown = set(np.unique(seg[..., 2][(seg[..., 0] == box) & (seg[..., 1] == 5)]))
    assert shown == {0, 1, 2}
    # the same geom of different worlds lands at different places
    centres = [np.argwhere((seg[..., 0] == box) & (seg[..., 2] == w)).mean(0) for w in range(3)]
    assert min(np.linalg.norm(centres[i] - centres[j]) for i, j in ((0, 1), (1, 2), (0, 2))) > 5
    img = render(m, d, worlds=[0, 1, 2], width=W, height=H)
    assert img.shape == (H, W, 3) and img.std() > 10


def test_overlays(scene, renderer):
    mjm, mjds, m, d = scene
    base = renderer.render(d, "front", 0, options=RenderOptions(tendons=False)).astype(int)
    ncon = int(d.ncon.to_numpy()[0])
    assert ncon >= 4  # the resting objects touch the floor
    for option, colour in (("contact_points", (0.9, 0.6, 0.2)), ("com", (0.9, 0.9, 0.9)),
                           ("frames", None), ("joints", None), ("tendons", (0.9, 0.8, 0.3))):
        opts = RenderOptions(**{"tendons": False, option: True})
        img = renderer.render(d, "front", 0, options=opts).astype(int)
        changed = np.abs(img - base).sum(-1) > 30
        assert changed.sum() > 3, option
        if colour is not None:
            near = np.abs(img[changed] / 255.0 - np.array(colour)).max(-1) < 0.25
            assert near.sum() > 0, option
    # contact force arrows (shafts) are MuJoCo's mj_contactForce in the world frame,
    # scaled by vis.map.force / stat.meanmass, from the contact points
    renderer.render(d, "front", 0, options=RenderOptions(contact_forces=True))
    rows = renderer.lines.numpy()
    base = renderer.dev.lines_per_tile
    scale = mjm.vis.map.force / mjm.stat.meanmass
    mjd = mjds[0]
    assert mjd.ncon == ncon
    drawn = 0
    for k in range(mjd.ncon):
        frc = np.zeros(6)
        mujoco.mj_contactForce(mjm, mjd, k, frc)
        world = mjd.contact[k].frame.reshape(3, 3).T @ frc[:3]
        shaft = rows[2 * (base + 3 * k):2 * (base + 3 * k) + 2, :3]
        np.testing.assert_allclose(shaft[1] - shaft[0], scale * world, rtol=1e-4, atol=1e-5)
        if np.linalg.norm(world) * scale > 1e-5:
            np.testing.assert_allclose(shaft[0], mjd.contact[k].pos, atol=1e-5)
            drawn += 1
    assert drawn >= 2
    # contact points are drawn at MuJoCo's contact positions
    front = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_CAMERA, "front")
    img = renderer.render(d, "front", 0, options=RenderOptions(contact_points=True))
    hits = 0
    for con in mjds[0].contact[:mjds[0].ncon]:
        col, row = (int(round(v)) for v in project(mjm, mjds[0], front, [con.pos])[0])
        patch = img[max(0, row - 1):row + 2, max(0, col - 1):col + 2].reshape(-1, 3) / 255.0
        hits += bool((np.abs(patch - [0.9, 0.6, 0.2]).max(-1) < 0.2).any())
    assert hits >= 4  # others hide behind their objects
    # every contact slot's marker sphere is centred on MuJoCo's contact position
    verts = renderer.markers.numpy()[:, :3].reshape(-1, renderer.dev.nmarker_vert, 3)
    radius = 0.5 * mjm.vis.scale.contactwidth * mjm.stat.meansize
    for k in range(mjds[0].ncon):
        np.testing.assert_allclose(0.5 * (verts[k].max(0) + verts[k].min(0)), mjds[0].contact[k].pos,
                                   atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(verts[k] - mjds[0].contact[k].pos, axis=1),
                                   radius, rtol=1e-4)
    assert np.abs(verts[mjds[0].ncon:d.nconmax]).max() == 0  # unused slots collapse


def test_meshes_survive_nan_left_in_freed_ggui_memory(scene, renderer, monkeypatch):
    """Taichi 1.7.4's GGUI reads an instance transform for every mesh and multiplies it
    by zero when the mesh has none; its buffer is memory some freed buffer held
    before. Leave NaN in that memory (draw every pass once with NaN transforms, as
    GGUI's own mesh_instance allows) and the next frames must still show the scene:
    tiphys gives every mesh the identity transform."""
    from tiphys.viewer import renderer as rmod

    mjm, mjds, m, d = scene
    before = renderer.segment(d, 0, 0)
    assert (before[..., 0] >= 0).sum() > 0.2 * W * H
    with monkeypatch.context() as mp:  # one frame drawn with NaN transforms
        mp.setattr(rmod, "_IDENTITY_TRANSFORM", np.full((1, 4, 4), np.nan, np.float32))
        renderer.draw(d, renderer.camera_pose(d, 0, 0), segmentation=True)
        img = np.rint(renderer.read()[..., :3] * 255).astype(np.uint8)
    assert (renderer.decode_segmentation(img)[..., 0] >= 0).sum() == 0  # nothing seen
    for _ in range(3):
        assert np.array_equal(renderer.segment(d, 0, 0), before)


def test_corrupt_segmentation_frames_are_drawn_again_then_an_error(scene, renderer,
                                                                  monkeypatch):
    """A segmentation frame with colours of no object (what GGUI returned once, late in
    a full test run) is drawn again; if every try is corrupt, RenderError, never a
    wrong segmentation."""
    from tiphys.viewer import renderer as rmod

    mjm, mjds, m, d = scene
    good = renderer.segment(d, 0, 0)
    real_read = Renderer.read
    frames = {"n": 0, "corrupt": 1}

    def read(self):
        img = real_read(self)
        frames["n"] += 1
        if frames["n"] <= frames["corrupt"]:
            img = img.copy()
            img[:20, :20, :3] = np.array([38, 78, 116]) / 255.0  # a lit colour
        return img

    monkeypatch.setattr(Renderer, "read", read)
    plain = Renderer.render  # one frame per try (SteadyRenderer draws two)
    monkeypatch.setattr(SteadyRenderer, "render", plain)
    assert np.array_equal(renderer.segment(d, 0, 0), good)
    assert frames["n"] == 2  # the corrupt frame and the one drawn again
    frames.update(n=0, corrupt=10 ** 6)
    with pytest.raises(RenderError, match="pixels of no object"):
        renderer.segment(d, 0, 0)
    assert frames["n"] == rmod.SEGMENT_TRIES


def test_render_errors(scene):
    _, _, m, d = scene
    with pytest.raises(ValueError, match="unknown camera 'nope'.*front, top"):
        render(m, d, camera="nope")
    with pytest.raises(ValueError, match="camera id 7 out of range"):
        render(m, d, camera=7)
    with pytest.raises(IndexError, match="world 3 out of range: the Data has 3 worlds"):
        render(m, d, world=3)
    with pytest.raises(ValueError, match="image size"):
        Renderer(m, 0, 10)


def test_render_before_any_forward_is_a_clear_error(scene, renderer):
    """Straight from make_data (or reset_data) nothing has positions yet: MuJoCo would
    draw every geom collapsed at the origin, tiphys would draw only the sky. Either is
    silently wrong, so render says what to call first; after forward it draws."""
    _, _, m, _ = scene
    d = tiphys.make_data(m, 2)
    with pytest.raises(ValueError, match=r"no positions.*world\(s\) 1.*tiphys.forward"):
        renderer.render(d, world=1)
    tiphys.kinematics(m, d)
    assert renderer.render(d, world=1).shape == (H, W, 3)
    tiphys.reset_data(m, d)
    with pytest.raises(ValueError, match="no positions"):
        render(m, d, width=W, height=H)
    tiphys.forward(m, d)
    assert render(m, d, width=W, height=H).shape == (H, W, 3)
    other = tiphys.load_model_from_string(XML)
    with pytest.raises(ValueError, match="another Model"):
        render(other, d)


def test_render_leaves_no_imgui_ini_and_exits_cleanly_after_two_windows(tmp_path):
    """GGUI's Dear ImGui saves imgui.ini in the current folder when a window is
    destroyed; and destroying a second GGUI window at the interpreter's exit crashed
    (SIGSEGV in ImGui_ImplVulkan_DestroyDeviceObjects, exit status 139). A script that
    draws at two image sizes (two windows) exits with status 0 and leaves its folder
    as it was."""
    code = ("import tiphys\n"
            "m = tiphys.load_model_from_string('<mujoco><worldbody><geom size=\".1\"/>"
            "</worldbody></mujoco>')\n"
            "d = tiphys.make_data(m, 1)\n"
            "tiphys.forward(m, d)\n"
            "print('IMG', tiphys.render(m, d, width=32, height=24).shape)\n"
            "print('IMG', tiphys.render(m, d, width=24, height=16).shape)\n")
    cwd, cache = tmp_path / "work", tmp_path / "cache"
    cwd.mkdir()
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600, cwd=cwd)
    assert proc.returncode == 0, (proc.returncode, proc.stdout + proc.stderr)
    assert "IMG (24, 32, 3)" in proc.stdout and "IMG (16, 24, 3)" in proc.stdout
    assert list(cwd.iterdir()) == []


def test_missing_vulkan_is_a_clear_error(tmp_path):
    code = ("import tiphys\n"
            "from tiphys.viewer.renderer import RenderError, Renderer\n"
            "m = tiphys.load_model_from_string('<mujoco><worldbody><geom size=\".1\"/>"
            "</worldbody></mujoco>')\n"
            "try:\n    Renderer(m, 8, 8)\nexcept RenderError as e:\n    print('ERR', e)\n")
    env = dict(os.environ, VK_ICD_FILENAMES=str(tmp_path / "none.json"),
               VK_DRIVER_FILES=str(tmp_path / "none.json"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, cwd=tmp_path)
    assert "ERR" in proc.stdout, proc.stdout + proc.stderr
    assert "mesa-vulkan-drivers" in proc.stdout and "Vulkan" in proc.stdout


# ---------------------------------------------------------------- the viewer


@pytest.fixture(scope="module")
def viewer(scene):
    _, _, m, d = scene
    v = Viewer(m, d, W, H, show_window=False)
    yield v
    v.close()


def test_viewer_keys(scene, viewer):
    _, _, m, d = scene
    v = viewer
    assert v.key(" ") and v.paused
    assert v.key("Right") and v.step_request == 1 and v.advance(0.5) == 1
    assert v.advance(0.5) == 0  # paused
    assert v.key(" ") and not v.paused
    assert v.key("2") and v.world == 2 and v.worlds == [2]
    assert not v.key("7")  # no world 7
    assert v.key("g") and v.worlds == [0, 1, 2]
    assert v.key("g") and v.worlds == [2]
    assert v.key("]") and v.camid == 0 and v.key("]") and v.camid == 1
    assert v.key("]") and v.camid == -1 and v.key("[") and v.camid == 1
    assert v.key("Escape") and v.camid == -1
    for key, attr in (("c", "contact_points"), ("f", "contact_forces"), ("b", "frames"),
                      ("j", "joints"), ("m", "com"), ("n", "tendons"), ("o", "fog"),
                      ("k", "skins"), ("v", "flex_vert"), ("e", "flex_edge"),
                      ("a", "flex_face"), ("x", "flex_skin")):
        before = getattr(v.options, attr)
        assert v.key(key) and getattr(v.options, attr) != before
        v.key(key)
    assert v.key("s") and not v.options.sites and v.key("s")
    assert v.key("0", shift=True) and v.options.geomgroup[0] == 0 and v.key("0", shift=True)
    assert v.key("h") and v.show_help and v.key("h")
    assert not v.key("q")
    help_text = Viewer.help_text()
    for words in ("Space", "Backspace", "Right arrow", "Ctrl+right drag", "double click"):
        assert words in help_text
    v.key("0")


def test_viewer_camera_mouse(scene, viewer):
    v = viewer
    az, el, dist = v.free.azimuth, v.free.elevation, v.free.distance
    v.mouse_press("LMB", 0.5, 0.5)
    v.mouse_move(0.6, 0.45)
    v.mouse_release("LMB")
    assert v.free.azimuth < az and v.free.elevation > el
    look = v.free.lookat.copy()
    v.mouse_press("RMB", 0.5, 0.5)
    v.mouse_move(0.4, 0.5)
    v.mouse_release("RMB")
    assert np.linalg.norm(v.free.lookat - look) > 0.05
    v.key("=")
    assert v.free.distance < dist
    v.free = FreeCamera.default(v.m)


def test_viewer_select_track_and_perturb(scene, viewer):
    mjm, mjds, m, d = scene
    v = viewer
    v.key("0")
    v.camid = 1  # the top camera
    box_body = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_BODY, "box")
    box_geom = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, "box")
    col, row = project(mjm, mjds[0], 1, [mjds[0].geom_xpos[box_geom]])[0]
    x, y = col / W, 1 - row / H
    v.mouse_press("LMB", x, y)
    v.mouse_release("LMB")
    v.mouse_press("LMB", x, y)  # double click
    v.mouse_release("LMB")
    assert v.selected == box_body
    assert v.key("t") and v.track == box_body and v.key("t") and v.track == -1
    # ctrl + right drag pulls the box toward +x (the top camera's right)
    v.mouse_press("RMB", x, y, ctrl=True)
    assert v.pert is not None and v.pert.translate
    v.mouse_move(x + 0.1, y)
    target = v.pert.refselpos.copy()
    v.apply_perturbation()
    xfrc = d.numpy("xfrc_applied")
    assert xfrc[0, box_body, 0] > 1.0 and np.abs(xfrc[1:]).max() == 0
    assert abs(xfrc[0, box_body, 0]) > 5 * abs(xfrc[0, box_body, 1])
    v.sync()  # draws the perturbation line
    v.mouse_release("RMB")
    assert v.pert is None and np.abs(d.numpy("xfrc_applied")).max() == 0
    assert target[0] > mjds[0].xpos[box_body][0]
    # ctrl + left drag twists: a torque about the view axis
    v.mouse_press("LMB", x, y, ctrl=True)
    v.mouse_move(x + 0.1, y)
    v.apply_perturbation()
    torque = d.numpy("xfrc_applied")[0, box_body, 3:]
    assert np.abs(torque).max() > 0.1
    v.mouse_release("LMB")
    v.camid = -1
    # double click on nothing deselects
    v.mouse_press("LMB", 0.5, 0.99)
    v.mouse_press("LMB", 0.5, 0.99)
    assert v.selected == -1


def test_viewer_realtime_and_status(scene, viewer):
    _, _, m, d = scene
    v = viewer
    v.paused = False
    v._debt = 0.0
    timestep = m.opt.timestep
    assert v.advance(10 * timestep, step_time=1e-5) == 10 and not v.behind
    assert v.advance(1000 * timestep, step_time=1e-3, budget=0.02) == 20 and v.behind
    v.steps_per_s, v.rtf = 20.0, 20 * timestep
    status = v.status_text()
    assert "slower than the requested x1" in status and "steps/s" in status
    assert "world 0 of 3" in status
    v.paused = True
    assert "paused" in v.status_text()
    v.paused = False


def test_viewer_sync_reset_and_step(scene, viewer):
    mjm, mjds, m, d = scene
    v = viewer
    qpos = d.numpy("qpos").copy()
    v.sync()
    img = v.image()
    assert img.shape == (H, W, 3) and img.std() > 10
    v.key("BackSpace")
    v.sync()  # reset happens in sync
    np.testing.assert_allclose(d.numpy("qpos")[1], mjm.qpos0)
    d.qpos.from_numpy(qpos)
    tiphys.forward(m, d)
    v.run(duration=0.3)  # steps at real time in the background, headless
    assert float(d.time.to_numpy()[0]) > 0
    assert v.steps_per_s > 0


# ---------------------------------------------------------------- the commands


def test_cli_render_picture_and_gif(tmp_path, capsys):
    out = tmp_path / "frame.png"
    assert main(["render", "-o", str(out), "--camera", "overview", "--width", "96",
                 "--height", "64", "--steps", "2"]) == 0
    from PIL import Image
    img = np.asarray(Image.open(out))
    assert img.shape == (64, 96, 3) and img.std() > 10
    gif = tmp_path / "clip.gif"
    assert main(["render", "-o", str(gif), "--width", "64", "--height", "48",
                 "--duration", "0.1", "--fps", "20", "--nworld", "4", "--grid"]) == 0
    frames = Image.open(gif)
    assert frames.n_frames == 2
    assert "wrote" in capsys.readouterr().out


def test_cli_render_errors(tmp_path, capsys, monkeypatch):
    assert main(["render", "-o", str(tmp_path / "no" / "x.png")]) == 2
    assert "does not exist" in capsys.readouterr().err
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if not os.access(ro, os.W_OK):  # root writes anywhere
        assert main(["render", "-o", str(ro / "x.png")]) == 2
        assert "permission denied" in capsys.readouterr().err
    assert main(["render", "-o", str(tmp_path / "x.txt")]) == 2
    assert "output format" in capsys.readouterr().err
    assert main(["render", "-o", str(tmp_path / "x.png"), "--camera", "nope"]) == 2
    assert "unknown camera 'nope'" in capsys.readouterr().err
    assert main(["render", "-o", str(tmp_path / "x.png"), "--world", "5"]) == 2
    assert "world 5 out of range" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "imageio", None)  # the video extra not installed
    monkeypatch.setitem(sys.modules, "imageio.v2", None)
    assert main(["render", "-o", str(tmp_path / "clip.mp4")]) == 2
    assert "pip install 'tiphys[video]'" in capsys.readouterr().err


def test_cli_view_without_display(monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["view"]) == 2
    err = capsys.readouterr().err
    assert "no display" in err and "tiphys render" in err
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, 1)
    with pytest.raises(RenderError, match="no display"):
        Viewer(m, d)
