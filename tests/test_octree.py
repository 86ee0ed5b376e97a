"""Mesh octrees (oct_depth/child/aabb/coeff, mesh_octadr/octnum, noct) against MuJoCo.

MuJoCo 3.4.0 builds an octree, with the mesh's signed distance at its corners, for
every mesh of a ``<geom type="sdf">`` (tiphys/compiler/octree.py). A geom without a
plugin (the octree is its shape) compiles; make_data and put_model refuse it by name
until the collisions evaluate octrees.
"""
from __future__ import annotations

import os

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_arrays, corpus_dir
from tiphys.compiler import octree
from tiphys.compiler.compile import compile_spec
from tiphys.spec.parse import parse_xml

mujoco.mj_loadPluginLibrary(os.path.join(os.path.dirname(mujoco.__file__), "plugin",
                                         "libsdf_plugin.so"))
mujoco.mj_setCacheCapacity(mujoco.mj_getCache(), 0)  # (its cache keeps octrees)

FIELDS = ("mesh_octadr", "mesh_octnum", "oct_depth", "oct_child", "oct_aabb", "oct_coeff")

# a closed, not convex mesh: a box with a notch, and an icosphere-like builtin
NOTCH = ("0 0 0  2 0 0  2 1 0  1 1 0  1 .5 0  0 .5 0 "
         "0 0 1  2 0 1  2 1 1  1 1 1  1 .5 1  0 .5 1")

XML = """
<mujoco>
  <extension><plugin plugin="mujoco.sdf.torus">
    <instance name="torus"><config key="radius1" value="0.3"/>
      <config key="radius2" value="0.1"/></instance></plugin></extension>
  <asset>
    <mesh name="ball" builtin="sphere" params="2"/>
    <mesh name="plain" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <mesh name="made"><plugin instance="torus"/></mesh>
  </asset>
  <worldbody>
    <body pos="0 0 1"><freejoint/>
      <geom type="sdf" mesh="ball"><plugin instance="torus"/></geom>
    </body>
    <body pos="1 0 1"><freejoint/>
      <geom type="sdf" mesh="made"><plugin instance="torus"/></geom>
    </body>
    <geom type="mesh" mesh="plain"/>
  </worldbody>
</mujoco>
"""


def _compare(arrays, mjm):
    assert arrays.sizes["noct"] == mjm.noct
    errors = [compare_arrays(f, getattr(arrays, f),
                             np.asarray(getattr(mjm, f)).reshape(np.shape(getattr(arrays, f))))
              for f in FIELDS]
    assert [e for e in errors if e] == []


def test_octrees_of_sdf_geoms_meshes_match_mujoco():
    """Only the file/vertex mesh of an sdf geom gets one: not a plain mesh geom's mesh,
    not a mesh made by the SDF plugin itself."""
    mjm = mujoco.MjModel.from_xml_string(XML)
    arrays = compile_spec(parse_xml(XML))
    _compare(arrays, mjm)
    assert mjm.mesh_octnum[0] > 0 and mjm.mesh_octnum[1] == mjm.mesh_octnum[2] == 0


def _mesh_pair(mesh_xml, name):
    """MuJoCo's model of ``<geom type="sdf">`` on the mesh, and tiphys's compiled mesh."""
    sdf = (f"<mujoco><asset>{mesh_xml}</asset><worldbody><body>"
           f"<geom type='sdf' mesh='{name}'/></body></worldbody></mujoco>")
    plain = sdf.replace("type='sdf'", "type='mesh'")
    mjm = mujoco.MjModel.from_xml_string(sdf)
    import tiphys.compiler.compile as cc
    seen = {}
    fill = cc.fill_bvh

    def spy(out, meshes, *args):
        seen["meshes"] = meshes
        return fill(out, meshes, *args)

    cc.fill_bvh = spy
    try:
        compile_spec(parse_xml(plain))
    finally:
        cc.fill_bvh = fill
    return mjm, seen["meshes"][0]


@pytest.mark.parametrize("mesh_xml", [
    f'<mesh name="m" vertex="{NOTCH}"/>',
    '<mesh name="m" builtin="supertorus" params="16 .3 1 1"/>',
])
def test_build_octree_matches_mujoco_on_meshes(mesh_xml):
    mjm, cm = _mesh_pair(mesh_xml, "m")
    depth, child, aabb, coeff = octree.build_octree(cm.vert_double, cm.face, cm.aamm)
    assert len(depth) == mjm.noct > 1
    np.testing.assert_array_equal(depth, mjm.oct_depth)
    np.testing.assert_array_equal(child, mjm.oct_child.reshape(-1, 8))
    np.testing.assert_allclose(aabb, mjm.oct_aabb.reshape(-1, 6), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(coeff, mjm.oct_coeff.reshape(-1, 8), rtol=1e-9, atol=1e-12)
    # negative inside: the center of the first leaf's box nearest the mesh center
    assert coeff.min() < 0 < coeff.max()


def test_build_octree_matches_mujoco_on_the_cow():
    """mjwarp/collision_sdf/cow.xml's mesh (5856 faces, 49001 nodes, balanced to one
    level between neighbors, hanging corners averaged)."""
    path = os.path.join(corpus_dir(), "mjwarp/collision_sdf/asset/spot.obj")
    if not os.path.exists(path):
        pytest.skip("corpus mesh spot.obj not present")
    mjm, cm = _mesh_pair(f'<mesh name="spot" file="{path}"/>', "spot")
    depth, child, aabb, coeff = octree.build_octree(cm.vert_double, cm.face, cm.aamm)
    np.testing.assert_array_equal(depth, mjm.oct_depth)
    np.testing.assert_array_equal(child, mjm.oct_child.reshape(-1, 8))
    np.testing.assert_allclose(aabb, mjm.oct_aabb.reshape(-1, 6), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(coeff, mjm.oct_coeff.reshape(-1, 8), rtol=1e-9, atol=1e-12)


def test_sdf_geom_without_plugin_compiles_and_is_simulated():
    """(its collisions: tests/test_collide_octree_sdf.py)"""
    xml = (f"<mujoco><asset><mesh name='m' vertex='{NOTCH}'/></asset><worldbody>"
           "<body><freejoint/><geom name='notch' type='sdf' mesh='m'/></body>"
           "</worldbody></mujoco>")
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    _compare(arrays, mjm)
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    tiphys.step(m, d)


def test_put_model_carries_octree_sdf_geoms():
    mjm = mujoco.MjModel.from_xml_string(
        f"<mujoco><asset><mesh name='m' vertex='{NOTCH}'/></asset><worldbody><body>"
        "<freejoint/><geom type='sdf' mesh='m'/></body></worldbody></mujoco>")
    assert mjm.noct > 0
    m = tiphys.put_model(mjm)
    for name in ("oct_child", "oct_aabb", "oct_coeff", "mesh_octadr", "mesh_octnum"):
        want = getattr(mjm, name)
        np.testing.assert_array_equal(np.asarray(getattr(m.arrays, name)).reshape(want.shape),
                                      want, err_msg=name)
    tiphys.make_data(m, 1)
