"""Actuator length ranges simulated on the device (tiphys/lengthrange.py) against
MuJoCo 3.4.0's mj_setLengthRange at compile time.

Muscles (and, with mode="all", other actuators) on unlimited hinge and ball joints,
through spatial tendons (limited="false" too) and a site transmission with a refsite;
<compiler><lengthrange> modes and algorithm options; errors: an empty range, a
simulation that does not settle, and models whose simulation needs the constraint
solver (limits stay on during it whatever the model's flags say, as in MuJoCo).
"""
import re

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec

RTOL = 1e-6

MODEL = """
<mujoco>
  <compiler>{lengthrange}</compiler>
  <option timestep="0.005" integrator="{integrator}"/>
  <worldbody>
    <site name="anchor" pos="0 0 1"/>
    <site name="anchor2" pos="1.3 0.1 0.2"/>
    <site name="anchor3" pos="-1 0.2 1.4"/>
    <site name="ref" pos="1 0 0" euler="0 0 30"/>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" axis="0 1 0" {limit}/>
      <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".05"/>
      <site name="s1" pos=".05 0 -.15"/>
      <body name="lower" pos="0 0 -.4">
        <joint name="elbow" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <site name="s2" pos=".2 0 .03"/>
      </body>
    </body>
    <body name="wheel" pos="1 0 0">
      <joint name="axle" axis="0 1 0"/>
      <geom type="cylinder" size=".2 .02" euler="90 0 0"/>
      <site name="rim" pos=".2 0 0"/>
    </body>
    <body name="ballbody" pos="-1 0 1">
      <joint name="ball" type="ball"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
      <site name="bs" pos="0 .03 -.3"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="biceps">
      <site site="anchor"/><site site="s1"/><site site="s2"/>
    </spatial>
    <spatial name="belt" limited="false">
      <site site="anchor2"/><site site="rim"/>
    </spatial>
    <spatial name="balltendon">
      <site site="anchor3"/><site site="bs"/>
    </spatial>
  </tendon>
  <actuator>
    <muscle name="biceps" tendon="biceps"/>
    <muscle name="belt" tendon="belt"/>
    <muscle name="ball" tendon="balltendon"/>
    <general name="site" site="rim" refsite="ref" gear="0 .5 1 0 0 0" dyntype="muscle"
             gaintype="muscle" biastype="muscle"
             gainprm="0.75 1.05 -1 200 0.5 1.6 1.5 1.3 1.2"
             biasprm="0.75 1.05 -1 200 0.5 1.6 1.5 1.3 1.2"/>
    <muscle name="given" tendon="belt" lengthrange=".3 .5"/>
    <motor name="motor" tendon="biceps"/>
    {extra}
  </actuator>
</mujoco>
"""


def model_xml(lengthrange="", integrator="Euler", limit="", extra=""):
    return MODEL.format(lengthrange=lengthrange, integrator=integrator, limit=limit,
                        extra=extra)


def both(xml):
    return tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)


def assert_ranges_match(m, mjm):
    ours = m.arrays.actuator_lengthrange
    theirs = mjm.actuator_lengthrange
    scale = np.maximum(1e-3, np.abs(theirs).max(axis=1, keepdims=True))
    err = float((np.abs(ours - theirs) / scale).max())
    assert err <= RTOL, f"lengthrange relative error {err:.3g}:\n{ours}\nvs\n{theirs}"
    # the device Model got the same values
    np.testing.assert_array_equal(m.actuator_lengthrange.to_numpy()[:m.nu], ours)
    return err


def test_default_options_match_mujoco():
    """Every muscle without a range is simulated (RK4 models step with Euler here, as
    mj_step2); the given range and the motor (mode muscle) stay as they are."""
    xml = model_xml(integrator="RK4")
    arrays = compile_spec(tiphys.parse_xml(xml))
    assert arrays.lengthrange_pending == [0, 1, 2, 3]
    m, mjm = both(xml)
    assert_ranges_match(m, mjm)
    lr = m.arrays.actuator_lengthrange
    assert np.all(lr[:4, 0] < lr[:4, 1])
    assert lr[4].tolist() == [0.3, 0.5] and lr[5].tolist() == [0.0, 0.0]
    assert m.arrays.lengthrange_pending == []


def test_mode_all_no_existing_and_algorithm_options_match_mujoco():
    """mode="all", useexisting="false" (the given range is recomputed, the motor gets
    one), uselimit with no limits to use, non-default accel/maxforce/timeconst/timestep
    and a short horizon; implicitfast steps like Euler with these options."""
    opts = ('<lengthrange mode="all" useexisting="false" uselimit="true" accel="35" '
            'maxforce="4" timeconst=".5" timestep=".02" inttotal="6" interval="1.5" '
            'tolrange=".1"/>')
    m, mjm = both(model_xml(opts, integrator="implicitfast"))
    assert_ranges_match(m, mjm)
    lr = m.arrays.actuator_lengthrange
    assert np.all(lr[:, 0] < lr[:, 1])
    assert lr[4].tolist() != [0.3, 0.5]


def test_mode_none_simulates_nothing():
    m, mjm = both(model_xml('<lengthrange mode="none"/>'))
    assert_ranges_match(m, mjm)
    assert not np.any(m.arrays.actuator_lengthrange[:4])


def _mujoco_error(xml):
    with pytest.raises(ValueError) as info:
        mujoco.MjModel.from_xml_string(xml)
    return str(info.value)


def _numbers(text):
    return [float(x) for x in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)]


def test_unsettled_simulation_is_a_located_model_error():
    xml = model_xml('<lengthrange inttotal=".3" interval=".2" timestep=".01"/>')
    theirs = _mujoco_error(xml)
    with pytest.raises(tiphys.ModelError) as info:
        tiphys.load_model_from_string(xml)
    err = info.value
    assert err.detail.startswith("Lengthrange computation did not converge in actuator 0:")
    assert err.detail.split("\n")[0] in theirs
    np.testing.assert_allclose(_numbers(err.detail), _numbers(theirs.split("Error: ")[-1]),
                               rtol=1e-5)
    assert err.element == "muscle" and err.line == model_xml().splitlines().index(
        '    <muscle name="biceps" tendon="biceps"/>') + 1


def test_empty_range_is_a_located_model_error():
    """A site transmission without refsite has length 0: the range is empty."""
    xml = """<mujoco><compiler><lengthrange inttotal="1" interval=".5"/></compiler>
      <worldbody><body><joint axis="0 1 0"/><geom size=".1"/><site name="s" pos=".1 0 0"/>
      </body></worldbody>
      <actuator><motor joint="0" lengthrange="0 1"/><motor joint="0" lengthrange="0 1"/>
        <general site="s" gaintype="muscle" biastype="muscle" gainprm="{p}" biasprm="{p}"/>
      </actuator></mujoco>""".format(p="0.75 1.05 -1 200 0.5 1.6 1.5 1.3 1.2")
    xml = xml.replace('joint="0"', 'joint="j"').replace("<joint ", '<joint name="j" ')
    theirs = _mujoco_error(xml)
    with pytest.raises(tiphys.ModelError, match=r"Invalid lengthrange \(0, 0\) in actuator 2"
                       ) as info:
        tiphys.load_model_from_string(xml)
    assert info.value.detail in theirs
    assert info.value.element == "general" and info.value.line == 5


@pytest.mark.parametrize("flags", ["", '<option><flag constraint="disable"/></option>'])
def test_limits_are_simulated_with_the_constraint_solver(flags):
    """MuJoCo keeps limits on during the simulation even when the model disables them
    (its options replace the disable flags): both variants simulate the muscles
    against the joint limits with the constraint solver, as MuJoCo does."""
    xml = model_xml(limit='range="-60 60"').replace("<worldbody>", flags + "<worldbody>")
    m, mjm = both(xml)
    assert mjm.actuator_lengthrange[0, 0] < mjm.actuator_lengthrange[0, 1]
    assert_ranges_match(m, mjm)
    # copying limits needs no simulation
    m = tiphys.load_model_from_string(xml.replace(
        "<compiler>", '<compiler><lengthrange mode="none"/>'))
    assert m.nu == 6
