"""MuJoCo's SDF plugins (mujoco.sdf.bolt, bowl, gear, nut, torus: tiphys/plugin/sdf.py)
against MuJoCo 3.4.0 with its bundled plugin library (libsdf_plugin.so).

Compile: a <mesh> with an SDF plugin gets MuJoCo's marching-cubes surface
(tiphys/compiler/sdf_mesh.py): vertices, faces and normals bit for bit, and
a <geom type="sdf"> every field MuJoCo gives it (geom_plugin, size, aabb, rbound, the
body's inertia from the mesh, ...); the config errors with MuJoCo's messages.
MjModel.plugin holds MuJoCo's global registry slot, tiphys's Model.plugin its own: that
field is compared by plugin name.
"""
from __future__ import annotations

import functools
import os

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model, corpus_dir
from tiphys import plugin as registry
from tiphys.compiler.sdf_mesh import marching_cubes
from tiphys.plugin.sdf import SDF_PLUGINS

mujoco.mj_loadPluginLibrary(os.path.join(os.path.dirname(mujoco.__file__), "plugin",
                                         "libsdf_plugin.so"))

# (plugin, config): every plugin with its defaults, and with attributes given
CONFIGS = {
    "torus_default": ("mujoco.sdf.torus", {}),
    "torus_small": ("mujoco.sdf.torus", {"radius1": "0.15", "radius2": "0.05"}),
    "bowl_default": ("mujoco.sdf.bowl", {}),
    "bowl_deep": ("mujoco.sdf.bowl", {"height": "0.2", "radius": "0.5", "thickness": ".03"}),
    "gear_default": ("mujoco.sdf.gear", {"alpha": "0"}),
    "gear_inner": ("mujoco.sdf.gear", {"diameter": "1", "teeth": "12", "thickness": ".3",
                                       "innerdiameter": ".4", "alpha": "0.1"}),
    "nut": ("mujoco.sdf.nut", {"radius": "0.26"}),
    "bolt": ("mujoco.sdf.bolt", {"radius": "0.255"}),
}

MODEL = """<mujoco>
  <extension><plugin plugin="{plugin}"><instance name="shape">{config}</instance></plugin>
  </extension>
  <asset><mesh name="shape"><plugin instance="shape"/></mesh></asset>
  <worldbody>
    <body pos=".1 .2 .3" euler="10 20 30"><freejoint/>
      <geom type="sdf" name="shape" mesh="shape" pos=".05 0 0" density="500">
        <plugin instance="shape"/>
      </geom>
      <geom type="box" size=".1 .1 .1" pos="0 0 1"/>
    </body>
  </worldbody>
</mujoco>"""

PLUGIN_FIELDS = ("plugin_stateadr", "plugin_statenum", "plugin_attr", "plugin_attradr",
                 "geom_plugin")


def model_xml(name: str) -> str:
    plugin, config = CONFIGS[name]
    text = "".join(f'<config key="{k}" value="{v}"/>' for k, v in config.items())
    return MODEL.format(plugin=plugin, config=text)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request):
    xml = model_xml(request.param)
    return (request.param, tiphys.load_model_from_string(xml),
            mujoco.MjModel.from_xml_string(xml))


@functools.lru_cache(maxsize=None)
def _slot_table() -> dict:
    """MuJoCo's plugin slot -> plugin name, for the SDF plugins (slots are global to the
    process: found once, by compiling one model per plugin, ~7 s)."""
    names = {}
    for cls in SDF_PLUGINS:
        xml = model_xml(next(k for k, v in CONFIGS.items() if v[0] == cls.name))
        names[int(mujoco.MjModel.from_xml_string(xml).plugin[0])] = cls.name
    return names


def _slot_names(mjm) -> list:
    """MuJoCo's plugin of each instance, by name."""
    names = _slot_table()
    return [names[int(s)] for s in mjm.plugin]


# ----------------------------------------------------------------------------- compile

def test_sdf_model_fields_match_mujoco(pair):
    name, m, mjm = pair
    a = m.arrays
    assert not compare_model(a, mjm, skip=("plugin",)), name
    for field in PLUGIN_FIELDS:
        ours = np.asarray(getattr(a, field)).reshape(-1)
        theirs = np.asarray(getattr(mjm, field)).reshape(-1)
        if field == "plugin_attr":
            theirs = theirs.astype(np.uint8)
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{name} {field}")
    assert [registry.plugin_at(int(s)).name for s in a.plugin] == _slot_names(mjm)


def test_marching_cubes_mesh_is_mujocos_bit_for_bit(pair):
    """Vertices, faces and normals exactly; the mesh is not moved to its center of mass
    (mesh_pos 0, mesh_quat identity)."""
    name, m, mjm = pair
    a = m.arrays
    np.testing.assert_array_equal(np.asarray(a.mesh_vert, np.float32),
                                  mjm.mesh_vert.astype(np.float32), err_msg=name)
    np.testing.assert_array_equal(np.asarray(a.mesh_face), mjm.mesh_face, err_msg=name)
    np.testing.assert_array_equal(np.asarray(a.mesh_normal, np.float32),
                                  mjm.mesh_normal.astype(np.float32), err_msg=name)
    np.testing.assert_array_equal(np.asarray(a.mesh_pos).reshape(-1, 3), mjm.mesh_pos)
    np.testing.assert_array_equal(np.asarray(a.mesh_quat).reshape(-1, 4), mjm.mesh_quat)


def test_marching_cubes_on_a_small_field():
    """Two cubes across a plane tilted in x: one vertex per edge crossing, shared
    between the cubes, the plane's normal at every vertex."""
    x, y, z = np.meshgrid(np.arange(3), np.arange(2), np.arange(2), indexing="ij")
    field = (x - 0.75 + 0.25 * y).astype(np.float32).transpose(2, 1, 0)
    vert, face, normal = marching_cubes(field)
    assert len(vert) == 4 and len(face) == 2  # the x-edges of the first cubes
    np.testing.assert_allclose(vert[:, 0], 0.75 - 0.25 * vert[:, 1])
    expected = -np.array([1.0, 0.25, 0.0]) / np.hypot(1.0, 0.25)
    for n in normal:
        assert abs(abs(np.dot(n, expected)) - 1) < 1e-6
    assert len({tuple(f) for f in face}) == 2


@pytest.mark.parametrize("model", ["nutbolt.xml", "mesh.xml"])
def test_corpus_sdf_models_compile_as_mujoco(model):
    path = os.path.join(corpus_dir(), "mjwarp", "collision_sdf", model)
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    m, mjm = tiphys.load_model(path), mujoco.MjModel.from_xml_path(path)
    assert not compare_model(m.arrays, mjm, skip=("plugin",))
    np.testing.assert_array_equal(np.asarray(m.arrays.geom_plugin), mjm.geom_plugin)


# ------------------------------------------------------------------------------ errors

ERROR_MODEL = """<mujoco><extension>
  <plugin plugin="mujoco.sdf.torus"><instance name="t">{config}</instance></plugin>
  <plugin plugin="mujoco.pid"><instance name="p"/></plugin></extension>
  <asset><mesh name="m" {mesh_attr}><plugin {mesh_plugin}/></mesh></asset>
  <worldbody><body><freejoint/><geom type="sdf" mesh="m"><plugin {geom_plugin}/></geom>
  </body></worldbody>
</mujoco>"""
GOOD = {"config": "", "mesh_attr": "", "mesh_plugin": 'instance="t"',
        "geom_plugin": 'instance="t"'}
ERRORS = {
    "scaled mesh": ({"mesh_attr": 'scale="2 1 1"'},
                    "attribute scale is not compatible with SDFs in mesh 'm', (id = 0)"),
    "mesh without instance": ({"mesh_plugin": ""},
                              "neither 'plugin' nor 'instance' is specified for mesh 'm', "
                              "(id = 0)"),
    "geom without instance": ({"geom_plugin": ""},
                              "neither 'plugin' nor 'instance' is specified for geom"),
    "mesh unknown instance": ({"mesh_plugin": 'instance="zz"'},
                              "unrecognized name 'zz' for plugin instance"),
    "geom unknown instance": ({"geom_plugin": 'instance="zz"'},
                              "unrecognized name 'zz' for plugin instance"),
    "mesh plugin not sdf": ({"mesh_plugin": 'instance="p"'},
                            "plugin 'mujoco.pid' does not support signed distance fields"),
    "geom plugin not sdf": ({"geom_plugin": 'instance="p"'},
                            "plugin 'mujoco.pid' does not support sign distance fields"),
    "inactive plugin named": ({"mesh_plugin": 'instance="t" plugin="mujoco.sdf.bowl"'},
                              "unrecognized plugin 'mujoco.sdf.bowl'"),
    "not a number": ({"config": '<config key="radius1" value="abc"/>'},
                     "invalid attribute value for 'radius1'"),
    "trailing text": ({"config": '<config key="radius2" value="0.3abc"/>'},
                      "mj_initPlugin: plugin->init failed for plugin id 0"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_sdf_config_errors_match_mujoco(case):
    changes, message = ERRORS[case]
    xml = ERROR_MODEL.format(**{**GOOD, **changes})
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_string(xml)
    assert message in str(theirs.value), str(theirs.value)
    with pytest.raises(tiphys.ModelError) as ours:
        tiphys.load_model_from_string(xml)
    assert message in str(ours.value), str(ours.value)
    assert ours.value.line is not None


def test_trailing_text_names_the_plugins_warning():
    xml = ERROR_MODEL.format(**{**GOOD, "config": '<config key="radius1" value=".3x"/>'})
    with pytest.raises(tiphys.ModelError,
                       match="Invalid radius1 or radius2 parameters in Torus plugin"):
        tiphys.load_model_from_string(xml)


def test_user_sdf_plugin_without_device_shape_is_refused():
    """An SDF plugin class other than MuJoCo's shapes has no device distance yet."""
    class Blob(registry.Plugin):
        name = "tests.sdf_blob"
        capabilities = registry.SDF
    registry.register_plugin(Blob)
    assert registry.unimplemented_capabilities(Blob) == registry.SDF
    for cls in SDF_PLUGINS:
        assert registry.unimplemented_capabilities(cls) == 0


# ------------------------------------------------------------------------------ render

def test_sdf_geoms_render_as_their_mesh_like_mujoco(monkeypatch):
    """The viewer draws an sdf geom with its (marching-cubes) mesh, as MuJoCo's renderer
    does: per-geom pixel masks of the corpus' nut and bolt against MuJoCo's
    segmentation rendering."""
    from test_render import H, W, _mujoco_renderer
    from tiphys.viewer.renderer import Renderer
    path = os.path.join(corpus_dir(), "mjwarp", "collision_sdf", "nutbolt.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    mjm = mujoco.MjModel.from_xml_path(path)
    m = tiphys.load_model(path)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    d = tiphys.make_data(m, 1)
    tiphys.fwd_kinematics(m, d)  # what the renderer draws from (mjv_updateScene)
    mjr = _mujoco_renderer(mjm, monkeypatch)
    ours_r = Renderer(m, W, H)
    try:
        mjr.enable_segmentation_rendering()
        mjr.update_scene(mjd, camera=-1)
        theirs = mjr.render()
        ours = ours_r.segment(d, None, 0)
        for g in (1, 2):  # nut, bolt
            a = (theirs[..., 0] == g) & (theirs[..., 1] == mujoco.mjtObj.mjOBJ_GEOM)
            b = (ours[..., 0] == g) & (ours[..., 1] == mujoco.mjtObj.mjOBJ_GEOM)
            assert a.sum() > 100, g
            assert (a & b).sum() / (a | b).sum() > 0.97, g
    finally:
        mjr.close()
        ours_r.close()


# ------------------------------------------------------------------------------ in place

IN_PLACE = """<mujoco>
  <extension>
    <plugin plugin="mujoco.sdf.torus"><instance name="t">
      <config key="radius1" value=".31"/></instance></plugin>
    <plugin plugin="mujoco.sdf.bowl"/><plugin plugin="mujoco.pid"/>
  </extension>
  <worldbody>
    <body><freejoint/><geom type="sdf" mesh="m2">
      <plugin plugin="mujoco.sdf.torus"><config key="radius1" value=".33"/></plugin></geom>
    </body>
    <body pos="0 0 2"><joint name="j"/><geom type="sdf" mesh="m1"><plugin instance="t"/></geom>
      <geom type="sdf" mesh="m3">
        <plugin plugin="mujoco.sdf.bowl"><config key="height" value=".35"/></plugin></geom>
    </body>
  </worldbody>
  <actuator><plugin joint="j" plugin="mujoco.pid"><config key="kp" value="2"/></plugin>
  </actuator>
  <asset>
    <mesh name="m1"><plugin instance="t"/></mesh>
    <mesh name="m2"><plugin plugin="mujoco.sdf.torus">
      <config key="radius1" value=".32"/></plugin></mesh>
    <mesh name="m3"><plugin plugin="mujoco.sdf.bowl"/></mesh>
  </asset>
</mujoco>"""


def test_in_place_sdf_plugins_are_numbered_as_mujoco():
    """In-place SDF plugins of meshes and geoms get instances of their own, numbered as
    MuJoCo reads them: <extension>'s, the meshes' (<asset>), the actuators', then the
    geoms' (<worldbody>); each mesh from its own config."""
    m = tiphys.load_model_from_string(IN_PLACE)
    mjm = mujoco.MjModel.from_xml_string(IN_PLACE)
    a = m.arrays
    assert not compare_model(a, mjm, skip=("plugin",))
    for field in PLUGIN_FIELDS + ("actuator_plugin",):
        ours = np.asarray(getattr(a, field)).reshape(-1)
        theirs = np.asarray(getattr(mjm, field)).reshape(-1)
        if field == "plugin_attr":
            theirs = theirs.astype(np.uint8)
        np.testing.assert_array_equal(ours, theirs, err_msg=field)
    assert [registry.plugin_at(int(s)).name for s in a.plugin] == [
        "mujoco.sdf.torus", "mujoco.sdf.torus", "mujoco.sdf.bowl", "mujoco.pid",
        "mujoco.sdf.torus", "mujoco.sdf.bowl"]
    np.testing.assert_array_equal(np.asarray(a.mesh_vert, np.float32),
                                  mjm.mesh_vert.astype(np.float32))


def test_in_place_sdf_plugin_needs_its_extension():
    xml = """<mujoco><asset><mesh name="t"><plugin plugin="mujoco.sdf.torus"/></mesh>
      </asset></mujoco>"""
    with pytest.raises(ValueError, match="unrecognized plugin 'mujoco.sdf.torus'"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="unrecognized plugin 'mujoco.sdf.torus'"):
        tiphys.load_model_from_string(xml)
