"""Compiler mismatches against MuJoCo 3.4.0 found on models from MuJoCo's own test
data, each reproduced by a small model and compared field by field:

- ``<joint springdamper="timeconst dampratio">`` on every joint type: jnt_stiffness
  and dof_damping from the joint's inertia at qpos0 (MuJoCo: AutoSpringDamper);
- a site transmission with a refsite and a rotational gear: actuator_length0 (MuJoCo
  composes the site orientations as site_quat * xquat);
- principal inertial frames (body_iquat) when principal moments are equal, from
  fullinertia, from several geoms, from meshes and from fusestatic: the eigenvector
  basis is not unique, and MuJoCo's Jacobi iteration picks one from the exact bits
  of the inertia matrix, so the compiler reproduces its arithmetic;
- geoms of the world body inside ``<frame>`` / ``<replicate>`` (frame not applied).
"""
import platform

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from oracle import compare_model


def _match(xml):
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(tiphys.parse_xml(xml))
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)
    return arrays, mjm


# ------------------------------------------------------------------------------------
# springdamper
# ------------------------------------------------------------------------------------

SPRINGDAMPER = """
<mujoco>
  <default><default class="sd"><joint springdamper=".2 .7"/></default></default>
  <worldbody>
    <body name="floating" pos="0 0 1">
      <joint type="free" springdamper="0.1 1"/>
      <geom type="box" size=".1 .2 .3" mass="2"/>
      <body name="ball" pos=".2 0 0" euler="10 20 30">
        <joint type="ball" springdamper="0.1 1" armature=".01"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <body name="hinge" pos=".3 0 0">
          <joint axis="1 0 0" springref="45" springdamper="0.3 0.5" damping="7"
                 stiffness="9"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
          <body name="slide" pos="0 0 -.3">
            <joint type="slide" axis="0 1 1" springref=".2" class="sd"/>
            <geom size=".05"/>
          </body>
        </body>
      </body>
    </body>
    <body name="alone" pos="1 0 0">
      <joint type="ball" springdamper="0.05 2"/>
      <geom type="ellipsoid" size=".1 .2 .3"/>
      <body pos="0 0 .3">
        <joint name="plain" axis="0 1 0" stiffness="3" damping="4"/>
        <geom size=".05"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_springdamper_every_joint_type():
    arrays, mjm = _match(SPRINGDAMPER)
    # every joint but "plain" gets its stiffness and damping from springdamper
    # (overriding explicit stiffness/damping), the same damping on all its dofs
    plain = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "plain")
    for j in range(mjm.njnt):
        adr, n = mjm.jnt_dofadr[j], {0: 6, 1: 3}.get(int(mjm.jnt_type[j]), 1)
        damping = arrays.dof_damping[adr:adr + n]
        assert np.all(damping == damping[0])
        if j != plain:
            assert arrays.jnt_stiffness[j] > 0 and damping[0] > 0
    assert arrays.jnt_stiffness[plain] == 3 and arrays.dof_damping[mjm.jnt_dofadr[plain]] == 4


def test_springdamper_rule():
    """stiffness = I / (timeconst * dampratio)^2, damping = 2 I / timeconst, with I
    the joint's mean inertia ndof / sum(dof_invweight0)."""
    xml = """<mujoco><worldbody><body><joint type="ball" springdamper=".25 .5"/>
             <geom type="box" size=".1 .2 .3"/></body></worldbody></mujoco>"""
    arrays, mjm = _match(xml)
    inertia = 3 / mjm.dof_invweight0[:3].sum()
    np.testing.assert_allclose(arrays.jnt_stiffness[0], inertia / (.25 * .5) ** 2, rtol=1e-12)
    np.testing.assert_allclose(arrays.dof_damping, 2 * inertia / .25, rtol=1e-12)


def test_springdamper_simple_bodies():
    # free and slide-only bodies are "simple": dof_invweight0 comes from the mass alone
    xml = """<mujoco><worldbody>
      <body><joint type="free" springdamper=".1 1"/><geom type="box" size=".1 .2 .3"/></body>
      <body pos="1 0 0"><joint type="slide" axis="1 0 0" springdamper=".1 1"/>
        <joint type="slide" axis="0 1 0" springdamper=".2 1"/><geom size=".1"/></body>
      <body pos="2 0 0"><joint type="ball" springdamper=".1 1"/>
        <geom type="box" size=".1 .2 .3"/></body></worldbody></mujoco>"""
    arrays, mjm = _match(xml)
    assert list(mjm.body_simple) == [1, 1, 2, 1]
    assert np.all(arrays.jnt_stiffness > 0)


def test_springdamper_with_tendon_armature_and_tendons():
    # dof_invweight0 (hence the inertia) sees the tendon armature in M
    xml = """<mujoco><worldbody>
      <body><joint name="a" springdamper=".1 1"/><geom size=".1" pos=".2 0 0"/>
        <site name="s0" pos=".2 0 0"/>
        <body pos=".3 0 0"><joint name="b" type="slide" springdamper=".2 1"/>
          <geom size=".1"/><site name="s1"/></body></body>
      <site name="w" pos="0 .5 0"/></worldbody>
      <tendon><spatial armature=".3"><site site="w"/><site site="s0"/><site site="s1"/>
      </spatial><fixed stiffness="1"><joint joint="a" coef="1"/><joint joint="b" coef="2"/>
      </fixed></tendon></mujoco>"""
    _match(xml)


def test_springdamper_bad_values_raise():
    xml = """<mujoco><worldbody><body><joint springdamper="0.1 -1"/><geom size=".1"/>
             </body></worldbody></mujoco>"""
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="springdamper"):
        compile_spec(tiphys.parse_xml(xml))


# ------------------------------------------------------------------------------------
# site transmission with a refsite
# ------------------------------------------------------------------------------------

REFSITE = """
<mujoco>
  <worldbody>
    <body pos="0 0 .6" euler="10 0 0">
      <joint type="free"/>
      <body name="base" quat="0 0 .7071068 .7071068">
        <geom type="box" size=".06 .11 .16" euler="5 80 3"/>
        <site name="ref" quat=".9 .1 -.2 .3"/>
        <body pos=".17 -.09 0" quat=".5 -.5 .5 -.5">
          <joint axis="0 0 1" range="-1 1"/>
          <geom type="box" size=".03 .04 .05" pos="-.01 0 .06"/>
          <body pos="-.19 0 .07" quat="0 0 -1 0">
            <joint axis="0 0 1" range="0 2.4"/>
            <geom type="box" size=".01 .02 .1" pos="-.08 -.02 0" euler="0 90 0"/>
            <site name="foot" pos="-.21 -.08 0" quat=".66 .66 -.24 -.24"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    {actuators}
  </actuator>
</mujoco>
"""


@pytest.mark.parametrize("gear", ["1 0 0 0 0 0", "0 0 0 0 .1 0", "0 0 0 .3 -.2 1",
                                  "1 -2 .5 .3 .2 -1"])
def test_refsite_length0_acc0(gear):
    act = f'<general site="foot" refsite="ref" gear="{gear}"/>' \
          f'<general site="ref" refsite="foot" gear="{gear}"/>'
    arrays, mjm = _match(REFSITE.format(actuators=act))
    if gear == "0 0 0 0 .1 0":
        assert abs(mjm.actuator_length0[0]) > 1e-3  # the rotation part is exercised


def test_refsite_position_actuator_dampratio():
    # dampratio -> biasprm[2] uses dof_M0 and the refsite moment
    act = '<position site="foot" refsite="ref" gear="0 0 0 0 1 0" kp="50" dampratio="1"/>'
    _match(REFSITE.format(actuators=act))


def test_refsite_lengthrange_rotational():
    xml = REFSITE.format(actuators='<general site="foot" refsite="ref" gear="0 0 0 0 1 0"/>')
    xml = xml.replace("<worldbody>", '<compiler><lengthrange mode="all"/></compiler>'
                                     '<option><flag gravity="disable"/></option><worldbody>')
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    np.testing.assert_allclose(m.arrays.actuator_length0, mjm.actuator_length0, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(m.arrays.actuator_lengthrange, mjm.actuator_lengthrange,
                               rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------------------------
# principal inertial frames with equal moments
# ------------------------------------------------------------------------------------

# MuJoCo's x86-64 wheels do plain double arithmetic (no fused multiply-add), which the
# compiler reproduces bit for bit; elsewhere only compare_model's tolerance is asked
BITWISE = platform.machine().lower() in ("x86_64", "amd64")


def _same_frames(arrays, mjm):
    if BITWISE:
        np.testing.assert_array_equal(arrays.body_iquat, mjm.body_iquat)


def _body(content, orient=""):
    return (f'<mujoco><worldbody><body name="b" pos="1 2 3" {orient}><freejoint/>'
            f'{content}</body></worldbody></mujoco>')


INERTIA = {
    "full_diag_all_equal": '<inertial pos="0 0 0" mass="1" fullinertia="1 1 1 0 0 0"/>',
    "full_diag_two_equal": '<inertial pos="0 0 0" mass="1" fullinertia="1 2 2 0 0 0"/>',
    "full_symmetric": '<inertial pos="0 0 0" mass="1" fullinertia="2 2 2 .5 .5 .5"/>',
    "full_symmetric_neg": '<inertial pos=".1 0 0" mass="1" fullinertia="2 2 2 -.5 -.5 -.5"/>',
    "full_offdiagonal": '<inertial pos="0 0 0" mass="1" fullinertia="2.5 2.5 2 -.5 0 0"/>',
    "full_offdiagonal_yz": '<inertial pos="0 0 0" mass="1" fullinertia="2 2.5 2.5 0 0 .5"/>',
    "boxes_rotated": '<geom type="box" size=".1 .1 .1" euler="10 20 30"/>'
                     '<geom type="box" size=".1 .1 .1" pos=".2 .2 .2" euler="0 0 45"/>',
    "cylinder_fromto": '<geom type="cylinder" fromto="0 0 0 .3 .3 .3" size=".05"/>'
                       '<geom pos=".3 .3 .3" size=".05"/>',
    "capsules_axisangle": '<geom type="capsule" size=".05 .2" axisangle="1 1 1 120"/>'
                          '<geom type="capsule" size=".05 .2" axisangle="1 1 1 120" '
                          'pos=".2 0 0"/>',
    "xyaxes_zaxis": '<geom type="box" size=".1 .1 .3" xyaxes="1 -1 0 1 1 -2"/>'
                    '<geom type="box" size=".1 .1 .3" zaxis="1 1 1" pos=".1 .1 .1"/>',
    "quat": '<geom type="ellipsoid" size=".1 .1 .2" quat=".3 .2 -.4 .5"/>'
            '<geom type="ellipsoid" size=".15 .15 .1" quat=".3 .2 -.4 .5"/>',
    "three_spheres": '<geom size=".1" pos="1 0 0"/><geom size=".1" pos="0 1 0"/>'
                     '<geom size=".1" pos="0 0 1"/>',
}


@pytest.mark.parametrize("name", sorted(INERTIA))
def test_inertia_equal_moments(name):
    arrays, mjm = _match(_body(INERTIA[name], orient='euler="10 20 30"'))
    # two or three moments equal (up to rounding): the degenerate case is exercised
    ev = np.sort(mjm.body_inertia[1])
    assert min(ev[1] - ev[0], ev[2] - ev[1]) < 1e-9 * ev[2]
    _same_frames(arrays, mjm)


TET = '<asset><mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/></asset>'


def test_inertia_equal_moments_mesh():
    """A regular-ish tetrahedron has two equal principal moments: its frame (geom_quat)
    and the frame of a body made of two of them (body_iquat) match MuJoCo's."""
    xml = f"""<mujoco>{TET}<worldbody>
      <body name="two"><geom type="mesh" mesh="tet"/><geom type="mesh" mesh="tet"/></body>
      <body name="one" pos="2 0 0"><geom type="mesh" mesh="tet"/></body>
      <body name="moved" pos="0 2 0"><geom type="mesh" mesh="tet" euler="0 0 90"/>
        <geom type="mesh" mesh="tet" pos=".5 0 0"/></body></worldbody></mujoco>"""
    arrays, mjm = _match(xml)
    _same_frames(arrays, mjm)


def test_inertia_equal_moments_fusestatic():
    xml = """<mujoco><compiler fusestatic="true"/><worldbody>
      <body name="b"><freejoint/><geom type="box" size=".1 .1 .1" euler="0 0 30"/>
        <body pos=".2 .2 .2" euler="0 45 0"><geom type="box" size=".1 .1 .1"/></body>
      </body></worldbody></mujoco>"""
    arrays, mjm = _match(xml)
    _same_frames(arrays, mjm)


def test_inertia_equal_moments_random_bodies():
    """Random bodies of symmetric geoms in every orientation syntax."""
    rng = np.random.default_rng(7)

    def orient():
        k = rng.integers(5)
        r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
        return [f'euler="{r(-180, 180)} {r(-180, 180)} {r(-180, 180)}"',
                f'axisangle="{r(-3, 4)} {r(-3, 4)} 1 {r(-180, 180)}"',
                f'xyaxes="1 {r(-2, 3)} 0 {r(-2, 3)} 1 {r(-2, 3)}"',
                f'zaxis="{r(-2, 3)} {r(-2, 3)} 1"', ""][k]

    shapes = ['type="capsule" size=".05 .2"', 'type="cylinder" size=".05 .1"',
              'type="box" size=".1 .1 .1"', 'type="box" size=".1 .1 .3"', 'size=".1"']
    for _ in range(25):
        geoms = "".join(
            f'<geom {shapes[rng.integers(len(shapes))]} {orient()} '
            f'pos="{" ".join(str(x) for x in rng.integers(-2, 3, 3) * .1)}"/>'
            for _ in range(rng.integers(2, 4)))
        _match(_body(geoms, orient()))


# ------------------------------------------------------------------------------------
# world geoms inside <frame> and <replicate> (found on the same corpus)
# ------------------------------------------------------------------------------------

def test_world_geoms_in_frames_and_replicate():
    xml = """<mujoco><default><geom type="box" size=".1 .2 .3"/></default><worldbody>
      <frame name="f1" pos=".1 .2 .3" euler="0 0 30">
        <geom name="g1" pos=".5 0 0" euler="0 0 20"/>
        <frame pos=".01 .02 .03" quat="0 1 0 0"><geom quat="0 -1 0 0"/>
          <site name="s" pos="0 0 .1"/></frame>
        <body name="b"><joint/><geom/></body>
      </frame>
      <replicate count="4" euler="0 0 90">
        <geom type="plane" size=".1 .5 .01" zaxis="1 0 0" pos="-.5 0 .1"/>
      </replicate>
    </worldbody></mujoco>"""
    arrays, mjm = _match(xml)
    assert not np.allclose(mjm.geom_pos[0], [.5, 0, 0])  # the frame moved it
