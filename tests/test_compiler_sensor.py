"""<sensor> compiled against MuJoCo 3.4.0: every sensor_* field, nsensor, nsensordata,
nuser_sensor and the sensor names, for every standard sensor type and each object /
reference type variant; MuJoCo's compile-time errors for bad sensors, each raised as
a ModelError naming the element and the attribute."""
import mujoco
import numpy as np
import pytest

import tiphys
from oracle import compare_model
from tiphys.compiler.compile import compile_spec
from tiphys.spec import parse_xml

SENSOR_FIELDS = ("sensor_type", "sensor_datatype", "sensor_needstage", "sensor_objtype",
                 "sensor_objid", "sensor_reftype", "sensor_refid", "sensor_intprm",
                 "sensor_dim", "sensor_adr", "sensor_cutoff", "sensor_noise", "sensor_user",
                 "sensor_plugin")

# a model with one of everything a sensor can name
WORLD = """
<mujoco>
  <size {size}/>
  <asset>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale=".1 .1 .1"/>
    <hfield name="hf" nrow="3" ncol="3" size="1 1 .1 .1"/>
    <texture name="tex" type="2d" builtin="checker" width="8" height="8"/>
    <material name="mat" texture="tex"/>
  </asset>
  <custom>
    <numeric name="num" data="1 2"/>
    <text name="txt" data="hello"/>
    <tuple name="tup"><element objtype="body" objname="b1"/></tuple>
  </custom>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <geom name="terrain" type="hfield" hfield="hf" pos="3 0 0"/>
    <site name="wsite" pos="0 0 1"/>
    <camera name="cam" pos="0 -2 1" euler="60 0 0" resolution="64 48"/>
    <camera name="cam_nores" pos="0 -2 1" resolution="0 10"/>
    <light name="lamp" pos="0 0 3"/>
    <body name="b1" pos="0 0 1">
      <freejoint name="free"/>
      <geom name="g1" size=".1" mass="1"/>
      <site name="s1" pos=".1 0 0" size=".05"/>
      <body name="b2" pos=".3 0 0">
        <joint name="hinge" axis="0 1 0" range="-1 1"/>
        <geom name="g2" type="capsule" size=".05 .1"/>
        <site name="s2" size=".05"/>
        <camera name="cam2" resolution="10 10"/>
        <body name="b3" pos=".3 0 0">
          <joint name="slide" type="slide" axis="1 0 0" limited="false"/>
          <joint name="ball" type="ball" range="0 1"/>
          <geom name="g3" type="box" size=".05 .05 .05"/>
          <geom name="gm" type="mesh" mesh="tet" pos=".05 .02 0"/>
          <site name="s3" size=".05"/>
        </body>
      </body>
    </body>
    <body name="b4" pos="1 0 1">
      <joint name="ball2" type="ball"/>
      <geom name="g4" size=".1"/>
    </body>
  </worldbody>
  <contact>
    <pair name="p1" geom1="g1" geom2="floor"/>
    <exclude name="ex" body1="b1" body2="b2"/>
  </contact>
  <equality>
    <joint name="eq" joint1="hinge" joint2="slide"/>
  </equality>
  <tendon>
    <fixed name="ten" range="0 1"><joint joint="hinge" coef="1"/></fixed>
    <fixed name="ten_free"><joint joint="slide" coef="1"/></fixed>
  </tendon>
  <actuator>
    <motor name="act" joint="hinge"/>
    <position name="act2" joint="slide" kp="10"/>
  </actuator>
  <sensor>
{sensors}
  </sensor>
  <keyframe><key name="k0"/></keyframe>
</mujoco>
"""


def model_xml(sensors: str, size: str = "") -> str:
    return WORLD.format(sensors=sensors, size=size)


def compare_sensors(xml: str):
    """Both engines' compile of ``xml``: every sensor field, the sizes, the names."""
    arrays = compile_spec(parse_xml(xml))
    mjm = mujoco.MjModel.from_xml_string(xml)
    for k in ("nsensor", "nsensordata", "nuser_sensor"):
        assert arrays.sizes[k] == getattr(mjm, k), k
    for name in SENSOR_FIELDS:
        ours = np.asarray(getattr(arrays, name))
        theirs = np.asarray(getattr(mjm, name)).reshape(ours.shape)
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
    assert arrays.names["sensor"] == [mjm.sensor(i).name for i in range(mjm.nsensor)]
    return arrays, mjm


# one (id, sensor elements) per type and object/reference variant
CASES = [
    ("touch", '<touch name="t" site="s1"/>'),
    ("accelerometer", '<accelerometer site="s2" noise=".1"/>'),
    ("velocimeter", '<velocimeter site="s3" cutoff="2"/>'),
    ("gyro", '<gyro site="wsite" user="1 2 3"/>'),
    ("force", '<force site="s2"/>'),
    ("torque", '<torque site="s3" cutoff="5" noise=".5"/>'),
    ("magnetometer", '<magnetometer site="s1"/>'),
    ("rangefinder", '<rangefinder site="s1" cutoff="10"/>'),
    ("camprojection", '<camprojection site="s1" camera="cam"/>'
                      '<camprojection site="s3" camera="cam2"/>'),
    ("jointpos", '<jointpos joint="hinge"/><jointpos joint="slide"/>'),
    ("jointvel", '<jointvel joint="slide"/>'),
    ("tendonpos", '<tendonpos tendon="ten"/>'),
    ("tendonvel", '<tendonvel tendon="ten_free"/>'),
    ("actuatorpos", '<actuatorpos actuator="act"/>'),
    ("actuatorvel", '<actuatorvel actuator="act2"/>'),
    ("actuatorfrc", '<actuatorfrc actuator="act2" cutoff="3"/>'),
    ("jointactuatorfrc", '<jointactuatorfrc joint="hinge"/>'),
    ("tendonactuatorfrc", '<tendonactuatorfrc tendon="ten"/>'),
    ("ballquat", '<ballquat joint="ball"/>'),
    ("ballangvel", '<ballangvel joint="ball2"/>'),
    ("jointlimitpos", '<jointlimitpos joint="hinge"/><jointlimitpos joint="ball"/>'),
    ("jointlimitvel", '<jointlimitvel joint="hinge"/>'),
    ("jointlimitfrc", '<jointlimitfrc joint="ball"/>'),
    ("tendonlimitpos", '<tendonlimitpos tendon="ten"/>'),
    ("tendonlimitvel", '<tendonlimitvel tendon="ten"/>'),
    ("tendonlimitfrc", '<tendonlimitfrc tendon="ten"/>'),
    ("framepos", '<framepos objtype="body" objname="b2"/>'
                 '<framepos objtype="xbody" objname="b2"/>'
                 '<framepos objtype="geom" objname="g3"/>'
                 '<framepos objtype="site" objname="s1"/>'
                 '<framepos objtype="camera" objname="cam2"/>'
                 '<framepos objtype="body" objname="world"/>'),
    ("framepos_ref", '<framepos objtype="site" objname="s3" reftype="body" refname="b1"/>'
                     '<framepos objtype="geom" objname="g2" reftype="xbody" refname="b3"/>'
                     '<framepos objtype="body" objname="b3" reftype="geom" refname="g1"/>'
                     '<framepos objtype="xbody" objname="b1" reftype="site" refname="s2"/>'
                     '<framepos objtype="camera" objname="cam" reftype="camera" '
                     'refname="cam2"/>'),
    ("framequat", '<framequat objtype="xbody" objname="b3" reftype="site" refname="s1"/>'
                  '<framequat objtype="body" objname="b1"/>'),
    ("frameaxes", '<framexaxis objtype="geom" objname="g1"/>'
                  '<frameyaxis objtype="site" objname="s2" reftype="body" refname="b1"/>'
                  '<framezaxis objtype="camera" objname="cam" reftype="xbody" '
                  'refname="b2"/>'),
    ("framevel", '<framelinvel objtype="site" objname="s1" cutoff="1"/>'
                 '<frameangvel objtype="body" objname="b2" reftype="geom" refname="g3"/>'
                 '<framelinvel objtype="xbody" objname="b3" reftype="camera" refname="cam"/>'),
    ("frameacc", '<framelinacc objtype="site" objname="s1"/>'
                 '<frameangacc objtype="body" objname="b2" noise="1"/>'
                 '<framelinacc objtype="camera" objname="cam2"/>'),
    ("subtree", '<subtreecom body="b1"/><subtreelinvel body="b2"/>'
                '<subtreeangmom body="world"/>'),
    ("insidesite", '<insidesite site="s1" objtype="body" objname="b2"/>'
                   '<insidesite site="wsite" objtype="xbody" objname="b3"/>'
                   '<insidesite site="s2" objtype="geom" objname="g4"/>'
                   '<insidesite site="s3" objtype="site" objname="s1"/>'
                   '<insidesite site="s3" objtype="camera" objname="cam"/>'),
    ("distance", '<distance geom1="g1" geom2="g2"/>'
                 '<distance body1="b1" body2="b3" cutoff=".5"/>'
                 '<distance geom1="g3" body2="b4"/>'
                 '<distance body1="b2" geom2="floor"/>'),
    ("normal", '<normal geom1="g1" geom2="g4" cutoff="1"/><normal body1="b1" geom2="g2"/>'),
    ("fromto", '<fromto geom1="g2" geom2="g1"/><fromto body1="b4" body2="b2"/>'),
    ("contact", '<contact/>'
                '<contact geom1="g1"/>'
                '<contact body1="b1" geom2="floor" num="3"/>'
                '<contact subtree1="b1" subtree2="b4" data="found force torque dist pos '
                'normal tangent" reduce="mindist"/>'
                '<contact site="s1" body2="b2" data="force dist" reduce="maxforce" num="2"/>'
                '<contact geom2="g4" data="pos" reduce="netforce"/>'
                '<contact body2="world" data="normal tangent" reduce="none"/>'),
    ("energy_clock", '<e_potential name="ep"/><e_kinetic cutoff="3"/><clock noise=".1"/>'),
    ("user", '<user name="u1" dim="2"/>'
             '<user dim="0" needstage="vel"/>'
             '<user dim="3" datatype="axis" needstage="none" objtype="site" objname="s1"/>'
             '<user dim="4" datatype="quaternion" objtype="joint" objname="ball"/>'
             '<user dim="1" datatype="positive" needstage="acc" cutoff="2" '
             'objtype="body" objname="b2"/>'
             '<user dim="5" datatype="real" needstage="pos" objtype="xbody" objname="b1"/>'),
    ("user_objtypes", '<user dim="1" objtype="geom" objname="floor"/>'
                      '<user dim="1" objtype="camera" objname="cam2"/>'
                      '<user dim="1" objtype="light" objname="lamp"/>'
                      '<user dim="1" objtype="mesh" objname="tet"/>'
                      '<user dim="1" objtype="hfield" objname="hf"/>'
                      '<user dim="1" objtype="texture" objname="tex"/>'
                      '<user dim="1" objtype="material" objname="mat"/>'
                      '<user dim="1" objtype="pair" objname="p1"/>'
                      '<user dim="1" objtype="exclude" objname="ex"/>'
                      '<user dim="1" objtype="equality" objname="eq"/>'
                      '<user dim="1" objtype="tendon" objname="ten"/>'
                      '<user dim="1" objtype="actuator" objname="act2"/>'
                      '<user dim="1" objtype="numeric" objname="num"/>'
                      '<user dim="1" objtype="text" objname="txt"/>'
                      '<user dim="1" objtype="tuple" objname="tup"/>'
                      '<user dim="1" objtype="key" objname="k0"/>'
                      '<clock name="c0"/><user dim="1" objtype="sensor" objname="c0"/>'
                      '<user dim="1" objtype="sensor" objname="last"/>'
                      '<clock name="last"/>'),
    ("tactile", '<tactile name="tac" geom="g3" mesh="tet"/><tactile geom="gm" mesh="tet"/>'),
]


@pytest.mark.parametrize("sensors", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_sensor_fields_match_mujoco(sensors):
    compare_sensors(model_xml(sensors))


def test_all_sensors_together_match_mujoco_and_whole_model():
    xml = model_xml("\n".join(c[1] for c in CASES))
    arrays, mjm = compare_sensors(xml)
    assert mjm.nsensor > 100
    assert set(arrays.sensor_type) == set(range(49)) - {mujoco.mjtSensor.mjSENS_PLUGIN}
    assert not compare_model(arrays, mjm)


@pytest.mark.parametrize("size", ["", 'nuser_sensor="-1"', 'nuser_sensor="0"',
                                  'nuser_sensor="5"'])
def test_user_data_is_padded_to_nuser_sensor(size):
    sensors = ('<jointpos joint="hinge"/>' if "0" in size else
               '<jointpos joint="hinge" user="1 2"/><clock user="3 -4.5 5e3"/>'
               '<e_kinetic user=""/>')
    compare_sensors(model_xml(sensors, size))


def test_empty_noise_and_cutoff_read_as_absent():
    compare_sensors(model_xml('<jointpos joint="hinge" noise="" cutoff=" "/>'))


def test_models_without_sensors_have_empty_sensor_arrays():
    arrays, mjm = compare_sensors("<mujoco><worldbody/></mujoco>")
    assert arrays.sizes["nsensor"] == 0 and arrays.names["sensor"] == []


def test_put_model_and_load_model_agree():
    xml = model_xml("\n".join(c[1] for c in CASES[:12]))
    ours = tiphys.load_model_from_string(xml)
    theirs = tiphys.put_model(mujoco.MjModel.from_xml_string(xml))
    for name in SENSOR_FIELDS:
        np.testing.assert_array_equal(getattr(ours, name).to_numpy(),
                                      getattr(theirs, name).to_numpy(), err_msg=name)
    assert ours.nsensordata == theirs.nsensordata
    assert tiphys.id2name(ours, "sensor", 0) == "t"


# (id, sensor elements, the attribute tiphys names: of two conflicting ones, the one
# MuJoCo's priority order would pass over)
BAD = [
    ("missing_site", '<touch/>', "site"),
    ("missing_joint", '<jointpos/>', "joint"),
    ("missing_tendon", '<tendonpos/>', "tendon"),
    ("missing_actuator", '<actuatorfrc/>', "actuator"),
    ("missing_body", '<subtreecom/>', "body"),
    ("missing_camera", '<camprojection site="s1"/>', "camera"),
    ("empty_joint", '<jointpos joint=""/>', "joint"),
    ("unknown_site", '<gyro site="nope"/>', "site"),
    ("unknown_joint", '<jointvel joint="nope"/>', "joint"),
    ("unknown_tendon", '<tendonvel tendon="nope"/>', "tendon"),
    ("unknown_actuator", '<actuatorpos actuator="nope"/>', "actuator"),
    ("unknown_body", '<subtreelinvel body="nope"/>', "body"),
    ("unknown_camera", '<camprojection site="s1" camera="nope"/>', "camera"),
    ("camera_no_resolution", '<camprojection site="s1" camera="cam_nores"/>', "camera"),
    ("jointpos_on_ball", '<jointpos joint="ball"/>', "joint"),
    ("jointvel_on_free", '<jointvel joint="free"/>', "joint"),
    ("jointactuatorfrc_on_ball", '<jointactuatorfrc joint="ball"/>', "joint"),
    ("ballquat_on_hinge", '<ballquat joint="hinge"/>', "joint"),
    ("ballangvel_on_free", '<ballangvel joint="free"/>', "joint"),
    ("jointlimit_unlimited", '<jointlimitpos joint="slide"/>', "joint"),
    ("jointlimitfrc_unlimited_ball", '<jointlimitfrc joint="ball2"/>', "joint"),
    ("tendonlimit_unlimited", '<tendonlimitvel tendon="ten_free"/>', "tendon"),
    ("frame_missing_objtype", '<framepos objname="b1"/>', "objtype"),
    ("frame_missing_objname", '<framepos objtype="body"/>', "objname"),
    ("frame_bad_objtype", '<framepos objtype="foo" objname="b1"/>', "objtype"),
    ("frame_joint_objtype", '<framequat objtype="joint" objname="hinge"/>', "objtype"),
    ("frame_unknown_obj", '<framexaxis objtype="site" objname="nope"/>', "objname"),
    ("frame_refname_without_reftype", '<framepos objtype="body" objname="b1" refname="b2"/>',
     "refname"),
    ("frame_reftype_without_refname", '<framepos objtype="body" objname="b1" reftype="body"/>',
     "refname"),
    ("frame_unknown_ref", '<frameangvel objtype="body" objname="b1" reftype="site" '
                          'refname="nope"/>', "refname"),
    ("frame_ref_joint", '<framelinvel objtype="body" objname="b1" reftype="joint" '
                        'refname="hinge"/>', "reftype"),
    ("frame_ref_empty", '<framepos objtype="body" objname="b1" reftype="body" refname=""/>',
     "refname"),
    ("framelinacc_reftype", '<framelinacc objtype="body" objname="b1" reftype="body" '
                            'refname="b2"/>', "reftype"),
    ("frame_dof", '<framepos objtype="dof" objname="hinge"/>', "objname"),
    ("insidesite_missing_site", '<insidesite objtype="body" objname="b1"/>', "site"),
    ("insidesite_bad_objtype", '<insidesite site="s1" objtype="tendon" objname="ten"/>',
     "objtype"),
    ("insidesite_unknown_site", '<insidesite site="nope" objtype="body" objname="b1"/>',
     "site"),
    ("distance_no_first", '<distance geom2="g1"/>', "geom1"),
    ("distance_both_first", '<distance geom1="g1" body1="b1" geom2="g2"/>', "geom1"),
    ("distance_no_second", '<normal geom1="g1"/>', "geom2"),
    ("distance_both_second", '<fromto geom1="g1" geom2="g2" body2="b2"/>', "geom2"),
    ("distance_same_geom", '<distance geom1="g1" geom2="g1"/>', "geom2"),
    ("distance_same_body", '<fromto body1="b2" body2="b2"/>', "body2"),
    ("distance_hfield", '<distance geom1="g1" geom2="terrain"/>', "geom2"),
    ("distance_hfield_first", '<normal geom1="terrain" body2="b1"/>', "geom1"),
    ("distance_unknown_geom", '<distance geom1="nope" geom2="g1"/>', "geom1"),
    ("distance_unknown_body", '<distance geom1="g1" body2="nope"/>', "body2"),
    ("contact_two_first", '<contact geom1="g1" body1="b1"/>', "geom1"),
    ("contact_site_and_subtree", '<contact site="s1" subtree1="b1"/>', "subtree1"),
    ("contact_two_second", '<contact geom2="g1" subtree2="b1"/>', "geom2"),
    ("contact_two_second_reversed", '<contact subtree2="b1" body2="b2"/>', "subtree2"),
    ("contact_data_order", '<contact data="force found"/>', "data"),
    ("contact_data_duplicate", '<contact data="force force"/>', "data"),
    ("contact_data_unknown", '<contact data="found speed"/>', "data"),
    ("contact_reduce_unknown", '<contact reduce="max"/>', "reduce"),
    ("contact_num_zero", '<contact num="0"/>', "num"),
    ("contact_num_negative", '<contact num="-2"/>', "num"),
    ("contact_num_float", '<contact num="1.5"/>', "num"),
    ("contact_unknown_geom", '<contact geom1="nope"/>', "geom1"),
    ("contact_unknown_subtree", '<contact subtree2="nope"/>', "subtree2"),
    ("contact_unknown_site", '<contact site="nope"/>', "site"),
    ("user_missing_dim", '<user/>', "dim"),
    ("user_negative_dim", '<user dim="-1"/>', "dim"),
    ("user_axis_dim", '<user dim="2" datatype="axis"/>', "dim"),
    ("user_quaternion_dim", '<user dim="3" datatype="quaternion"/>', "dim"),
    ("user_objtype_without_objname", '<user dim="1" objtype="body"/>', "objname"),
    ("user_objname_without_objtype", '<user dim="1" objname="b1"/>', "objtype"),
    ("user_unknown_object", '<user dim="1" objtype="geom" objname="nope"/>', "objname"),
    ("user_bad_datatype", '<user dim="1" datatype="vector"/>', "datatype"),
    ("user_bad_needstage", '<user dim="1" needstage="later"/>', "needstage"),
    ("user_dof", '<user dim="1" objtype="dof" objname="hinge"/>', "objname"),
    ("tactile_missing_mesh", '<tactile geom="g1"/>', "mesh"),
    ("tactile_missing_geom", '<tactile mesh="tet"/>', "geom"),
    ("tactile_unknown_mesh", '<tactile geom="g1" mesh="nope"/>', "mesh"),
    ("tactile_unknown_geom", '<tactile geom="nope" mesh="tet"/>', "geom"),
    ("negative_noise", '<jointpos joint="hinge" noise="-1"/>', "noise"),
    ("negative_cutoff", '<touch site="s1" cutoff="-.1"/>', "cutoff"),
    ("noise_too_much_data", '<jointpos joint="hinge" noise="1 2"/>', "noise"),
    ("cutoff_not_a_number", '<jointpos joint="hinge" cutoff="a"/>', "cutoff"),
    ("user_not_numbers", '<jointpos joint="hinge" user="1 x"/>', "user"),
    ("cutoff_overflow", '<jointpos joint="hinge" cutoff="1e400"/>', "cutoff"),
    ("user_overflow", '<jointpos joint="hinge" user="1 -1e999"/>', "user"),
    ("cutoff_on_quaternion", '<framequat objtype="body" objname="b1" cutoff="1"/>', "cutoff"),
    ("cutoff_on_ballquat", '<ballquat joint="ball" cutoff="1"/>', "cutoff"),
    ("cutoff_on_axis", '<framexaxis objtype="body" objname="b1" cutoff="1"/>', "cutoff"),
    ("cutoff_on_user_axis", '<user dim="3" datatype="axis" cutoff="1"/>', "cutoff"),
    ("class_attribute", '<jointpos joint="hinge" class="main"/>', "class"),
    ("unknown_attribute", '<touch site="s1" joint="hinge"/>', "joint"),
    ("repeated_name", '<clock name="c"/><e_kinetic name="c"/>', "name"),
]


@pytest.mark.parametrize("sensors,attribute", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_sensor_is_rejected_like_mujoco(sensors, attribute):
    xml = model_xml(sensors)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError) as info:
        compile_spec(parse_xml(xml))
    assert info.value.attribute == attribute, str(info.value)
    assert info.value.line is not None and info.value.element is not None, str(info.value)


@pytest.mark.parametrize("size,sensors", [
    ('nuser_sensor="1"', '<jointpos joint="hinge" user="1 2"/>'),
    ('nuser_sensor="0"', '<clock user="1"/>'),
])
def test_too_many_user_values_is_rejected_like_mujoco(size, sensors):
    xml = model_xml(sensors, size)
    with pytest.raises(ValueError, match="user has more values than nuser_sensor"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="user has more values than nuser_sensor") \
            as info:
        compile_spec(parse_xml(xml))
    assert info.value.attribute == "user"


def test_sensor_defaults_are_rejected_like_mujoco():
    xml = model_xml('<jointpos joint="hinge"/>').replace(
        "<asset>", '<default><sensor noise="1"/></default>\n  <asset>')
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError):
        compile_spec(parse_xml(xml))


def test_error_names_file_line_element_and_attribute():
    xml = model_xml('<clock/>\n<jointpos joint="nope"/>')
    with pytest.raises(tiphys.ModelError) as info:
        compile_spec(parse_xml(xml))
    line = xml.splitlines().index('<jointpos joint="nope"/>') + 1
    assert str(info.value).startswith(f"<string>:{line}: <jointpos>: joint: ")
    assert "unrecognized name 'nope'" in str(info.value)


def test_plugin_sensor_needs_its_plugin_declared():
    """(plugin sensors themselves: tests/test_plugin_touch.py)"""
    xml = ("<mujoco>\n  <sensor>\n    <plugin plugin=\"mujoco.sensor.touch_grid\"/>\n"
           "  </sensor>\n</mujoco>")
    with pytest.raises(tiphys.ModelError, match=r"<string>:3: <plugin>: plugin: unrecognized plugin "
                                                r"'mujoco.sensor.touch_grid'"):
        compile_spec(parse_xml(xml))


def test_infinite_and_nan_values_read_like_mujoco():
    compare_sensors(model_xml('<jointpos joint="hinge" cutoff="inf" user="inf -inf nan"/>'
                              '<clock noise="inf"/>'))


def test_sensordata_is_sized_by_nsensordata():
    xml = model_xml("\n".join(c[1] for c in CASES[:20]))
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, 2)
    assert d.numpy("sensordata").shape == (2, mjm.nsensordata)


FUSE = """
<mujoco>
  <compiler fusestatic="true" {extra}/>
  <worldbody>
    <body name="a">
      <freejoint/>
      <geom name="ga" size=".1"/>
      <body name="st" pos=".2 0 0">
        <geom name="gst" size=".05"/><site name="ss"/>
        <geom name="vis" size=".02" contype="0" conaffinity="0"/>
      </body>
      <frame><body pos=".2 0 0"><geom name="gu" size=".05"/><site name="us"/></body></frame>
      <site name="late"/><geom name="glate" size=".01"/>
      <body name="c"><joint/><geom name="gc" size=".1"/><site name="sc"/></body>
    </body>
  </worldbody>
  <sensor>
{sensors}
  </sensor>
</mujoco>
"""


def test_fusestatic_resolves_names_with_pre_fusion_ids_like_mujoco():
    # MuJoCo 3.4.0 keeps the name->id maps made before fusing static bodies: a site or
    # geom name gets its pre-fusion index, used as an index into the fused lists
    xml = FUSE.format(extra="", sensors="""
    <touch site="ss"/><touch site="us"/><touch site="late"/><touch site="sc"/>
    <framepos objtype="geom" objname="gu"/><framepos objtype="geom" objname="glate"/>
    <distance geom1="gst" geom2="gc"/>
    <framepos objtype="site" objname="us" reftype="geom" refname="gu"/>""")
    arrays, mjm = compare_sensors(xml)
    assert not compare_model(arrays, mjm)


def test_fusestatic_keeps_bodies_of_force_sensor_sites_like_mujoco():
    xml = FUSE.format(extra="", sensors='<force site="ss"/><torque site="us"/>')
    arrays, mjm = compare_sensors(xml)
    assert not compare_model(arrays, mjm)


def test_discardvisual_keeps_sensor_geoms_like_mujoco():
    xml = FUSE.format(extra='discardvisual="true"', sensors='<distance geom1="vis" body2="c"/>')
    compare_sensors(xml)


def test_discardvisual_keeps_meshes_that_sensors_name_like_mujoco():
    xml = """
<mujoco>
  <compiler discardvisual="true"/>
  <asset>
    <mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
    <mesh name="oct" vertex="1 0 0 -1 0 0 0 1 0 0 -1 0 0 0 1 0 0 -1" scale=".1 .1 .1"/>
  </asset>
  <worldbody>
    <body name="b"><joint/><geom size=".1"/>
      <geom type="mesh" mesh="oct" contype="0" conaffinity="0"/></body>
  </worldbody>
  <sensor><user dim="1" objtype="mesh" objname="oct"/></sensor>
</mujoco>"""
    arrays, mjm = compare_sensors(xml)
    assert arrays.sizes["nmesh"] == mjm.nmesh
    assert not compare_model(arrays, mjm)


def test_sensor_references_for_fusestatic_and_discardvisual():
    from tiphys.compiler.sensor import (fuse_blocking_bodies, sensor_geom_names,
                                        sensor_mesh_names)
    spec = parse_xml(FUSE.format(extra="", sensors="""
    <force site="ss"/><torque site="us"/><touch site="sc"/>
    <framepos objtype="geom" objname="g1" reftype="geom" refname="g2"/>
    <framepos objtype="body" objname="a" reftype="site" refname="ss"/>
    <distance geom1="g3" body2="a"/><contact geom2="g4"/><tactile geom="g5" mesh="m"/>
    <user dim="1" objtype="geom" objname="g6"/><user dim="1" objtype="mesh" objname="m2"/>"""))
    assert fuse_blocking_bodies(spec) == {"st"}  # the unnamed body is fused anyway
    assert sensor_geom_names(spec) == {"g1", "g2", "g3", "g4", "g5", "g6"}
    assert sensor_mesh_names(spec) == {"m", "m2"}


TACTILE = """
<mujoco>
  <asset>
    <mesh name="m0" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale=".1 .1 .1"/>
    <mesh name="m1" vertex="0 0 0  1 0 0  0 1 0  0 0 1  1 1 1" scale=".1 .1 .1"/>
  </asset>
  <worldbody>
    <body name="vis"><freejoint/><geom name="v" size=".1" contype="0" conaffinity="0"/></body>
    <body name="col"><freejoint/><geom name="c" size=".1"/><geom type="mesh" mesh="m0"/></body>
  </worldbody>
  <sensor>
    <tactile geom="c" mesh="{mesh}"/>
  </sensor>
</mujoco>
"""


def test_tactile_checks_the_body_of_the_geom_numbered_like_its_mesh():
    # mj_validateReferences (3.4.0) takes the tactile sensor's mesh id as a geom id:
    # mesh m1 (id 1) -> geom 1 ("c", with collisions) passes; m0 -> geom 0 ("v") fails
    compare_sensors(TACTILE.format(mesh="m1"))
    xml = TACTILE.format(mesh="m0")
    with pytest.raises(ValueError, match="Touch sensor requires a body with at least one"):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(tiphys.ModelError, match="Touch sensor requires a body") as info:
        compile_spec(parse_xml(xml))
    assert info.value.attribute == "mesh"
