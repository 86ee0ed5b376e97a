"""URDF files (tiphys.spec.urdf), compiled as MuJoCo 3.4.0's mj_loadXML compiles them:
field by field against MuJoCo on hand-made files covering every URDF feature MuJoCo
reads, and on the URDF files of the pybullet wheel (tools/fetch_corpus.py): every file
MuJoCo loads, tiphys compiles to the same model; every file MuJoCo refuses, tiphys
refuses too."""
import glob
import os

import mujoco
import numpy as np
import pytest
from oracle import compare_model, corpus_dir

import tiphys
from tiphys.api import load_spec
from tiphys.compiler.compile import compile_spec
from tiphys.errors import ModelError
from tiphys.spec import parse_xml

FEATURES = """<?xml version="0.0"?>
<robot name="features">
  <mujoco><compiler discardvisual="{discard}" balanceinertia="true"/>
          <option timestep="0.004"/></mujoco>
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="world"/>
  <link name="base">
    <inertial><origin xyz="0 0 0.1" rpy="0.1 0.2 0.3"/><mass value="2"/>
      <inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0.01" ixz="0" iyz="0.02"/></inertial>
    <visual name="v0"><origin xyz="0 0 0.1"/><geometry><box size="0.2 0.3 0.4"/></geometry>
      <material name="red"/></visual>
    <collision name="c0"><origin xyz="0 0 0.1" rpy="0 1.5 0"/>
      <geometry><box size="0.2 0.3 0.4"/></geometry></collision>
    <collision name="c0"><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><mass value="0.5"/>
      <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><cylinder radius="0.03" length="0.4"/></geometry>
      <material name="inline"><color rgba="0 0.5 0.5 1"/></material></visual>
    <collision><geometry><capsule radius="0.03" length="0.4"/></geometry></collision>
  </link>
  <link name="hand"><collision><geometry><cylinder radius="0.02" length="0.1"/></geometry>
    </collision></link>
  <link name="slider"><collision><geometry><sphere radius="0.02"/></geometry></collision></link>
  <link name="ballend"><collision><geometry><sphere radius="0.03"/></geometry></collision></link>
  <link name="plate"><collision><geometry><box size="0.1 0.1 0.01"/></geometry></collision></link>
  <link name="loose"><inertial><mass value="1"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.04"/></geometry></collision></link>
  <link name="fixedpart"><collision><geometry><box size="0.05 0.05 0.05"/></geometry></collision></link>
  <joint name="anchor" type="fixed"><parent link="world"/><child link="base"/>
    <origin xyz="0 0 0.5"/></joint>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0.1 0 0.2" rpy="0.5 -0.2 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1.5" effort="-20" velocity="3"/>
    <dynamics damping="0.3" friction="0.05"/></joint>
  <joint name="wrist" type="continuous"><parent link="arm"/><child link="hand"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 0 1"/><limit lower="-3"/></joint>
  <joint name="rail" type="prismatic"><parent link="hand"/><child link="slider"/>
    <origin xyz="0 0 0.05"/><axis xyz="1 1 0"/><limit lower="0.2" upper="0.1"/></joint>
  <joint name="socket" type="spherical"><parent link="slider"/><child link="ballend"/></joint>
  <joint name="glide" type="planar"><parent link="ballend"/><child link="plate"/>
    <axis xyz="0 0.6 0.8"/><dynamics damping="0.1"/><limit lower="-0.1" upper="0.1"/></joint>
  <joint name="float" type="floating"><parent link="world"/><child link="loose"/>
    <origin xyz="1 0 1"/></joint>
  <joint name="weld" type="fixed"><parent link="arm"/><child link="fixedpart"/>
    <origin xyz="0 0.1 0"/></joint>
</robot>
"""


def _both(text, tmp_path, name="robot.urdf"):
    path = tmp_path / name
    path.write_text(text)
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(load_spec(str(path)))
    return mjm, arrays


@pytest.mark.parametrize("discard", ["true", "false"])
def test_every_urdf_feature_compiles_as_in_mujoco(tmp_path, discard):
    mjm, arrays = _both(FEATURES.format(discard=discard), tmp_path)
    assert mjm.njnt == 8 and mjm.ngeom == (9 if discard == "true" else 11)
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors[:20])


def test_meshes_are_named_by_file_and_scale(tmp_path):
    cube = "\n".join(f"v {x} {y} {z}" for x in (0, 1) for y in (0, 1) for z in (0, 1))
    cube += "\nf 1 2 4\nf 1 4 3\nf 5 7 8\nf 5 8 6\nf 1 5 6\nf 1 6 2\n"
    cube += "f 3 4 8\nf 3 8 7\nf 1 3 7\nf 1 7 5\nf 2 6 8\nf 2 8 4\n"
    (tmp_path / "cube.obj").write_text(cube)
    urdf = """<robot name="meshes">
      <link name="a"><collision><geometry><mesh filename="package://x/meshes/cube.obj"/>
        </geometry></collision>
        <collision><geometry><mesh filename="cube.obj" scale="0.5 0.5 0.5"/></geometry>
        </collision><collision><geometry><mesh filename="cube.obj"/></geometry></collision>
      </link></robot>"""
    mjm, arrays = _both(urdf, tmp_path)
    assert mjm.nmesh == 2
    assert tiphys.id2name(tiphys.Model(arrays), "mesh", 1) == "cube1"
    assert not compare_model(arrays, mjm)


@pytest.mark.parametrize("rel", ["r2d2.urdf", "pendulum5.urdf", "cartpole.urdf"])
def test_a_urdf_robot_steps_as_in_mujoco(rel):
    """(FEATURES above is for the compiler only: its zero-inertia link makes contact
    forces unbounded, so no two solvers agree on its dynamics.)"""
    path = os.path.join(corpus_dir(), "urdf", "pybullet", rel)
    mjm = mujoco.MjModel.from_xml_path(path)
    mjd = mujoco.MjData(mjm)
    m = tiphys.load_model(path)
    d = tiphys.make_data(m, 1)
    for _ in range(100):
        mujoco.mj_step(mjm, mjd)
        tiphys.step(m, d)
    np.testing.assert_allclose(d.numpy("qpos")[0], mjd.qpos, rtol=1e-9, atol=1e-9)


BAD = [
    ("joint type", '<joint name="j" type="hinge"><parent link="a"/><child link="b"/></joint>',
     "invalid joint type in URDF joint definition"),
    ("missing child", '<joint name="j" type="fixed"><parent link="a"/><child link="zz"/>'
     '</joint>', "URDF joint parent or child missing"),
    ("two parents", '<joint name="j" type="fixed"><parent link="a"/><child link="b"/>'
     '</joint><joint name="k" type="fixed"><parent link="a"/><child link="b"/></joint>',
     "URDF body has multiple parents: b"),
    ("repeated axis", '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
     '<axis xyz="1 0 0"/><axis xyz="0 1 0"/></joint>', "repeated element: 'axis'"),
    ("no geometry", '<link name="c"><collision><geometry/></collision></link>',
     "visual geometry specification not found"),
    ("repeated link", '<link name="a"/>', "repeated URDF name: a"),
]


@pytest.mark.parametrize("what,extra,message", BAD, ids=[b[0] for b in BAD])
def test_bad_urdf_names_file_line_and_element(tmp_path, what, extra, message):
    text = f'<robot name="bad">\n<link name="a"/>\n<link name="b"/>\n{extra}\n</robot>'
    path = tmp_path / "bad.urdf"
    path.write_text(text)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(ModelError, match=message) as err:
        load_spec(str(path))
    assert "bad.urdf:" in str(err.value)


def test_urdf_text_compiles_from_a_string():
    arrays = compile_spec(parse_xml(FEATURES.format(discard="true")))
    mjm = mujoco.MjModel.from_xml_string(FEATURES.format(discard="true"))
    assert not compare_model(arrays, mjm)


def _pybullet_urdfs():
    root = os.path.join(corpus_dir(), "urdf", "pybullet")
    return sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(
        root, "**", "*.urdf"), recursive=True))


def _compile_both(path):
    try:
        mjm = mujoco.MjModel.from_xml_path(path)
    except ValueError:
        mjm = None
    try:
        arrays = compile_spec(load_spec(path))
    except (ModelError, NotImplementedError, ValueError) as exc:
        arrays = exc
    return mjm, arrays


def test_pybullet_corpus_is_present():
    assert len(_pybullet_urdfs()) > 1000, "run make corpus (tools/fetch_corpus.py)"


@pytest.mark.parametrize("rel", [r for r in _pybullet_urdfs() if not r.startswith("random_")])
def test_pybullet_urdf_as_mujoco(rel):
    """Each file: the same model as MuJoCo's, or refused where MuJoCo refuses it."""
    mjm, arrays = _compile_both(os.path.join(corpus_dir(), "urdf", "pybullet", rel))
    if mjm is None:
        assert isinstance(arrays, Exception), "MuJoCo refuses this file; tiphys must too"
        return
    assert not isinstance(arrays, Exception), f"MuJoCo loads it; tiphys: {arrays}"
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors[:20])


def test_pybullet_random_urdfs_as_mujoco():
    """The ~1000 generated objects of random_urdfs/, in one test: the same verdicts."""
    rels = [r for r in _pybullet_urdfs() if r.startswith("random_")]
    assert len(rels) > 900
    loaded = 0
    for rel in rels:
        mjm, arrays = _compile_both(os.path.join(corpus_dir(), "urdf", "pybullet", rel))
        if mjm is None:
            assert isinstance(arrays, Exception), rel
        else:
            loaded += 1
            assert not isinstance(arrays, Exception), (rel, arrays)
            assert not compare_model(arrays, mjm), rel
