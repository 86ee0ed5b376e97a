"""Bounding-volume hierarchies (bvh_*, body_/mesh_/flex_bvhadr, bvhnum) against MuJoCo.

Each model is compiled by tiphys (tiphys/compiler/bvh.py) and by MuJoCo 3.4.0, and the
hierarchy fields are compared entry by entry: the integer topology (depth, children,
leaf ids, addresses) exactly, the boxes to rtol 1e-6.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from oracle import compare_arrays, corpus_dir
from tiphys.compiler import bvh
from tiphys.compiler.bvh import build_forest
from tiphys.compiler.compile import compile_spec
from tiphys.spec.parse import parse_xml

FIELDS = ("body_bvhadr", "body_bvhnum", "bvh_depth", "bvh_child", "bvh_nodeid", "bvh_aabb",
          "mesh_bvhadr", "mesh_bvhnum", "flex_bvhadr", "flex_bvhnum")
SIZES = ("nbvh", "nbvhstatic", "nbvhdynamic")


def _compare(xml: str):
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    for k in SIZES:
        assert arrays.sizes[k] == getattr(mjm, k), k
    errors = [compare_arrays(f, getattr(arrays, f),
                             np.asarray(getattr(mjm, f)).reshape(np.shape(getattr(arrays, f))))
              for f in FIELDS]
    assert [e for e in errors if e] == []
    return arrays, mjm


GEOMS = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <geom type="box" size=".1 .2 .3" pos="1 0 0" euler="10 20 30"/>
    <geom type="sphere" size=".1" pos="-1 0 .2" contype="0" conaffinity="0"/>
    <geom type="capsule" size=".05" fromto="0 1 0 0 1 1"/>
    <body name="several" pos="0 0 1" euler="0 30 0">
      <freejoint/>
      <geom type="box" size=".1 .2 .3" pos=".3 0 0"/>
      <geom type="sphere" size=".1" pos="-.3 0 0"/>
      <geom type="capsule" size=".05 .2" pos="0 .3 0" euler="90 0 0"/>
      <geom type="ellipsoid" size=".1 .2 .05" pos="0 -.3 .1" euler="0 45 0"/>
      <geom type="cylinder" size=".1 .05" pos="0 0 .4" contype="0" conaffinity="0"/>
      <geom type="sphere" size=".02" pos="0 0 -.4" contype="2" conaffinity="0"/>
      <geom type="sphere" size=".02" pos=".1 .1 -.2" contype="0" conaffinity="4"/>
    </body>
    <body name="one" pos="2 0 1"><joint type="hinge"/><geom size=".1"/></body>
    <body name="visual" pos="3 0 1">
      <joint type="hinge"/><geom size=".1" contype="0" conaffinity="0"/>
    </body>
    <body name="inertial" pos="0 2 1">
      <joint type="ball"/>
      <inertial pos=".1 .2 .3" quat="0.5 0.5 -0.5 0.5" mass="1" diaginertia="1 2 3"/>
      <geom type="box" size=".1 .1 .1" pos="0 0 0"/>
      <geom type="box" size=".1 .1 .1" pos=".5 0 0" euler="0 0 45"/>
      <geom type="box" size=".1 .1 .1" pos="0 .5 0"/>
      <geom type="box" size=".1 .1 .1" pos="0 0 .5"/>
    </body>
    <body name="empty" pos="0 3 1"><joint type="slide"/>
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body>
  </worldbody>
</mujoco>
"""


def test_body_hierarchies_over_colliding_geoms_match_mujoco():
    arrays, mjm = _compare(GEOMS)
    # the body of visual geoms only has none; a single geom is one leaf
    assert mjm.body_bvhnum[mjm.body("visual").id] == 0
    assert mjm.body_bvhadr[mjm.body("visual").id] == -1
    assert mjm.body_bvhnum[mjm.body("one").id] == 1


# many geoms at the same point or at points equal up to round-off (rotated frames):
# the median split orders them by geom order
TIES = """
<mujoco>
  <worldbody>
    <body name="ties" euler="0 0 33">
      <freejoint/>
      {geoms}
    </body>
    <body name="ring" euler="17 29 41" pos="1 1 1">
      <freejoint/>
      {ring}
    </body>
  </worldbody>
</mujoco>
"""


def test_tied_geom_positions_keep_mujocos_order():
    geoms = "\n".join(f'<geom size=".{i + 1}" pos="0 0 0"/>' for i in range(7))
    ring = "\n".join(
        f'<geom type="box" size=".05 .05 .05" pos="{np.cos(a):.17g} {np.sin(a):.17g} 0" '
        f'euler="0 0 {np.degrees(a):.17g}"/>'
        for a in np.linspace(0, 2 * np.pi, 12, endpoint=False))
    _compare(TIES.format(geoms=geoms, ring=ring))


MESHES = """
<mujoco>
  <asset>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <mesh name="sphere" builtin="sphere" params="3"/>
    <mesh name="torus" builtin="supertorus" params="24 .3 1 1"/>
    <mesh name="unused" vertex="0 0 0  1 0 0  0 1 0  0 0 2"/>
  </asset>
  <worldbody>
    <geom type="mesh" mesh="tet"/>
    <body pos="0 0 1"><freejoint/>
      <geom type="mesh" mesh="sphere"/>
      <geom type="mesh" mesh="torus" pos=".5 0 0" euler="0 90 0"/>
      <geom type="mesh" mesh="tet" pos="0 .5 0" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_mesh_face_hierarchies_match_mujoco():
    arrays, mjm = _compare(MESHES)
    assert (np.asarray(mjm.mesh_bvhnum) == 2 * np.asarray(mjm.mesh_facenum) - 1).all()


FLEX = """
<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <flexcomp name="cloth" type="grid" count="6 5 1" spacing=".1 .1 .1" dim="2"
              radius=".01" pos="0 0 1"/>
    <flexcomp name="rope" type="grid" count="7 1 1" spacing=".1 .1 .1" dim="1"
              radius=".02" pos="0 1 1"/>
    <flexcomp name="solid" type="grid" count="4 4 4" spacing=".1 .1 .1" dim="3"
              radius=".0" pos="1 0 1">
      <contact activelayers="1"/>
    </flexcomp>
    <body pos="0 -1 1"><freejoint/><geom size=".1"/><geom size=".1" pos=".2 0 0"/></body>
  </worldbody>
</mujoco>
"""


def test_flex_hierarchies_follow_the_static_ones_and_match_mujoco():
    arrays, mjm = _compare(FLEX)
    assert arrays.sizes["nbvhdynamic"] == int(np.sum(mjm.flex_bvhnum)) > 0


FUSE = """
<mujoco>
  <compiler fusestatic="true"/>
  <asset><mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/></asset>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body name="still" pos="0 0 2"><geom size=".1"/></body>
    <body name="a" pos="0 0 1"><freejoint/>
      {ageoms}
      <body name="b" pos=".3 0 0" euler="0 0 30">
        {bgeoms}
        <body name="c" pos="0 .2 0"><geom type="mesh" mesh="tet"/></body>
      </body>
    </body>
    {flex}
  </worldbody>
</mujoco>
"""
_FLEX = ('<flexcomp name="cloth" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
         'radius=".01" pos="0 0 3"/>')


@pytest.mark.parametrize("ageoms,bgeoms,flex", [
    ('<geom size=".1"/>', '<geom type="box" size=".1 .1 .1"/><geom size=".05" pos=".2 0 0"/>',
     ""),
    ('<geom size=".1"/>', '<geom size=".1"/>', _FLEX),
    ("", '<geom size=".1"/><geom size=".1" pos="0 0 .2"/>', _FLEX),
    ('<geom size=".1"/>', '<geom size=".1" contype="0" conaffinity="0"/>', ""),
])
def test_fused_static_bodies_rebuild_their_parents_hierarchy(ageoms, bgeoms, flex):
    # MuJoCo counts one volume too many per merge of two non-empty hierarchies; the
    # arrays end in zero entries for them, after the flexes'
    arrays, mjm = _compare(FUSE.format(ageoms=ageoms, bgeoms=bgeoms, flex=flex))
    assert mjm.nbody == arrays.sizes["nbody"]


def test_model_without_geoms_has_no_hierarchy():
    arrays, _ = _compare("<mujoco><worldbody><body><joint/>"
                         "<inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/>"
                         "</body></worldbody></mujoco>")
    assert arrays.sizes["nbvh"] == 0


def test_forest_splits_at_the_median_in_preorder():
    # four points on x: the root halves them, left subtree numbered first
    point = np.array([[3, 0, 0], [0, 0, 0], [2, 0, 0], [1, 0, 0]], dtype=float)
    forest = build_forest(point - .1, point + .1, point, [4])
    assert forest.child.tolist() == [[1, 4], [2, 3], [-1, -1], [-1, -1], [5, 6],
                                     [-1, -1], [-1, -1]]
    assert forest.element.tolist() == [-1, -1, 1, 3, -1, 2, 0]
    assert forest.depth.tolist() == [0, 1, 2, 2, 1, 2, 2]


@pytest.mark.parametrize("rel,pure", [
    ("mjwarp/mug/mug.xml", False), ("mjwarp/aloha_pot/scene.xml", False),
    ("mjwarp/flex/floppy.xml", False),
    # degenerate faces (NaN circumcenters) and split points chained within mjEPS
    ("robosuite/objects/milk.xml", False), ("robosuite/objects/milk.xml", True),
    ("robosuite/robots/iiwa/robot.xml", False)])
def test_corpus_models_with_meshes_and_flexes_match_mujoco(rel, pure, monkeypatch):
    import os
    if pure:  # the numpy build with its Python node-by-node rebuild
        monkeypatch.setattr(bvh, "_c_tree", None)
    path = os.path.join(corpus_dir(), rel)
    if not os.path.exists(path):
        pytest.skip(f"corpus model {rel} not present")
    mjm = mujoco.MjModel.from_xml_path(path)
    from tiphys.api import load_spec
    arrays = compile_spec(load_spec(path))
    for k in SIZES:
        assert arrays.sizes[k] == getattr(mjm, k), k
    errors = [compare_arrays(f, getattr(arrays, f),
                             np.asarray(getattr(mjm, f)).reshape(np.shape(getattr(arrays, f))))
              for f in FIELDS]
    assert [e for e in errors if e] == []


def _forest_arrays(f):
    return (f.depth, f.child, f.element, f.aabb, f.roots, f.counts)


@pytest.mark.parametrize("seed", range(4))
def test_numpy_and_node_by_node_builds_agree_on_ties_and_nans(seed):
    """The level-by-level numpy build (with its node-by-node Python rebuild of the
    hierarchies whose order is not a strict weak order) gives what the C twin gives;
    the C twin is what the corpus compares with MuJoCo."""
    if bvh._c_tree is None:
        pytest.skip("tiphys/compiler/_bvhtree was not built")
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 200, size=6)
    n = int(counts.sum())
    point = rng.normal(size=(n, 3))
    point[: n // 3] = np.round(point[: n // 3], 1)                 # exact ties
    point[n // 3: n // 2, 0] = .5 + rng.integers(0, 4, n // 2 - n // 3) * 4e-15  # EPS chains
    point[rng.integers(0, n, size=5)] = np.nan                     # degenerate faces
    half = np.abs(rng.normal(size=(n, 3))) * .1
    lo, hi = np.nan_to_num(point - half), np.nan_to_num(point + half)
    a = _forest_arrays(build_forest(lo, hi, point, counts, use_c=True))
    b = _forest_arrays(build_forest(lo, hi, point, counts, use_c=False))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    for t in range(len(counts)):
        c = int(counts[t])
        if c:
            e0 = int(counts[:t].sum())
            one = bvh._exact_tree(lo[e0:e0 + c], hi[e0:e0 + c], point[e0:e0 + c],
                                  use_c=False)
            r = int(a[4][t])
            np.testing.assert_array_equal(one[2], np.where(a[2][r:r + 2 * c - 1] >= 0,
                                                           a[2][r:r + 2 * c - 1] - e0, -1))
