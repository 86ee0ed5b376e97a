"""The flex compiler (<deformable><flex>, <flexcomp>, <equality><flex>) against MuJoCo 3.4.0.

Each case is compiled by tiphys and by mujoco.MjModel.from_xml_string; every Model
field both have is compared (oracle.compare_model: the flex_*/flexedge_* fields, and
every body/joint/dof/geom/equality field of the tree the flexcomps add), sizes
included. Bad input must be rejected by both, with MuJoCo's message.
"""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec
from tiphys.spec.parse import parse_xml
from oracle import compare_model


def _wrap(body, extra="", top=""):
    return f"<mujoco>{top}<worldbody>{body}</worldbody>{extra}</mujoco>"


def _fc(attrs, inner=""):
    return f'<flexcomp name="f" {attrs}>{inner}</flexcomp>'


CASES = {
    # flexcomp types x dims x dofs
    "grid1": _wrap(_fc('type="grid" count="5 1 1" spacing=".1 .1 .1" dim="1" radius=".01"')),
    "grid2": _wrap(_fc('type="grid" count="4 3 1" spacing=".1 .1 .1" dim="2" radius=".01"')),
    "grid3": _wrap(_fc('type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" radius=".01"')),
    "circle1": _wrap(_fc('type="circle" count="8 1 1" spacing=".1 .1 .1" dim="1" '
                         'radius=".01"')),
    "box2": _wrap(_fc('type="box" count="4 3 3" spacing=".1 .1 .1" dim="2" radius=".01"')),
    "box3": _wrap(_fc('type="box" count="3 4 3" spacing=".1 .1 .1" dim="3" radius=".01"')),
    "cylinder2": _wrap(_fc('type="cylinder" count="5 5 3" spacing=".1 .1 .1" dim="2" '
                           'radius=".01"')),
    "cylinder3": _wrap(_fc('type="cylinder" count="4 4 3" spacing=".1 .1 .1" dim="3" '
                           'radius=".01"')),
    "ellipsoid2": _wrap(_fc('type="ellipsoid" count="4 4 4" spacing=".1 .1 .1" dim="2" '
                            'radius=".01"')),
    "ellipsoid3": _wrap(_fc('type="ellipsoid" count="4 3 5" spacing=".1 .1 .12" dim="3" '
                            'radius=".01"')),
    "square": _wrap(_fc('type="square" count="4 5 1" spacing=".1 .1 .1" radius=".01"')),
    "disc": _wrap(_fc('type="disc" count="5 5 1" spacing=".1 .1 .1" radius=".01"')),
    "direct2": _wrap(_fc('type="direct" dim="2" point="0 0 0 1 0 0 1 1 0 0 1 0 5 5 5" '
                         'element="0 1 2 0 2 3" scale="2 1 1"')),
    "direct3": _wrap(_fc('type="direct" dim="3" point="0 0 0 1 0 0 0 1 0 0 0 1 1 1 1" '
                         'element="0 1 2 3 1 2 3 4"')),
    "radial3": _wrap(_fc('type="ellipsoid" count="4 4 4" spacing=".1 .1 .1" dim="3" '
                         'radius=".01" dof="radial"')),
    "radial2": _wrap(_fc('type="ellipsoid" count="4 4 4" spacing=".1 .1 .1" dim="2" '
                         'radius=".01" dof="radial"')),
    "trilinear": _wrap(_fc('type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                           'radius=".01" dof="trilinear"',
                           '<elasticity young="1e4" poisson=".2"/><contact selfcollide="none"/>')),
    "quadratic": _wrap(_fc('type="grid" count="6 6 6" spacing=".1 .1 .1" dim="3" '
                           'radius=".01" dof="quadratic"',
                           '<elasticity young="1e4" poisson=".3"/><contact selfcollide="none" '
                           'vertcollide="true"/>')),
    "trilinear_box": _wrap(_fc('type="box" count="4 4 4" spacing=".1 .1 .1" dim="3" '
                               'radius=".01" dof="trilinear"',
                               '<contact selfcollide="none"/>')),
    # pins and rigid
    "pin_id": _wrap(_fc('type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" radius=".01"',
                        '<pin id="0 3"/><pin range="5 6"/>')),
    "pin_grid2": _wrap(_fc('type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" '
                           'radius=".01"', '<pin grid="0 0 3 3" gridrange="1 0 2 0"/>')),
    "pin_grid3": _wrap(_fc('type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                           'radius=".01"', '<pin grid="0 0 0" gridrange="2 0 0 2 2 2"/>')),
    "rigid": _wrap('<body name="r" pos="0 0 1"><freejoint/><geom size=".1"/>'
                   + _fc('type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" radius=".01" '
                         'rigid="true"') + '</body>'),
    "rigid_edge_equality": _wrap(_fc('type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
                                     'radius=".01" rigid="true"', '<edge equality="true"/>')),
    "allpinned": _wrap(_fc('type="grid" count="2 2 1" spacing=".1 .1 .1" dim="2" '
                           'radius=".01"', '<pin id="0 1 2 3"/>')),
    # elasticity, bending, edges
    "elastic3d": _wrap(_fc('type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                           'radius=".01"', '<elasticity young="5e4" poisson=".2" '
                           'damping=".002"/>')),
    "elastic2d_stretch": _wrap(_fc('type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" '
                                   'radius=".01"', '<elasticity young="1e3" poisson=".3" '
                                   'thickness=".01" elastic2d="stretch"/>')),
    "elastic2d_bend": _wrap(_fc('type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" '
                                'radius=".01"', '<elasticity young="1e3" poisson=".3" '
                                'thickness=".01" elastic2d="bend"/>')),
    "elastic2d_both": _wrap(_fc('type="disc" count="5 5 1" spacing=".1 .1 .1" radius=".01"',
                                '<elasticity young="2e3" poisson=".1" thickness=".02" '
                                'elastic2d="both"/>')),
    "edge1d": _wrap(_fc('type="grid" count="6 1 1" spacing=".1 .1 .1" dim="1" radius=".01"',
                        '<edge stiffness="10" damping=".5"/>')),
    "edge_equality": _wrap(_fc('type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
                               'radius=".01"', '<edge equality="true" solref=".03 1" '
                               'solimp=".8 .9 .01"/>'),
                           '<default><equality solref=".05 1"/></default>'
                           '<equality><flex flex="f" name="e"/><flex flex="f" active="false" '
                           'solimp=".7"/></equality>'),
    # contact attributes
    "contact": _wrap(_fc('type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" radius=".01"',
                         '<contact contype="2" conaffinity="3" condim="4" priority="1" '
                         'friction=".5 .01" solmix=".5" solref=".01 2" solimp=".8 .9" '
                         'margin=".001" gap=".0005" internal="true" selfcollide="bvh" '
                         'activelayers="2" vertcollide="true" passive="true"/>')),
    "contact_sap": _wrap(_fc('type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" '
                             'radius=".01"', '<contact selfcollide="sap" internal="false"/>')),
    # defaults, poses, visuals, mass
    "childclass": _wrap('<body name="p" childclass="c" pos="1 0 0">'
                        + _fc('type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
                              'radius=".01"', '<contact vertcollide="true"/>') + '</body>',
                        top='<default><default class="c"><joint damping=".1" armature=".01"/>'
                            '<geom contype="2" rgba="1 0 0 1" friction=".3"/></default>'
                            '</default>'),
    "moved_body": _wrap('<body name="m" pos=".3 .2 1" euler="10 20 30"><joint type="hinge"/>'
                        '<geom size=".05"/>'
                        + _fc('type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
                              'radius=".01" pos=".1 0 .2" euler="0 30 0"',
                              '<elasticity young="1e3" poisson=".3" thickness=".01"/>')
                        + '<body name="after"><geom size=".1"/></body></body>'),
    "quat_pose": _wrap(_fc('type="box" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                           'radius=".01" quat="1 .2 .3 .4" pos="0 0 1" mass="3" '
                           'inertiabox=".02"')),
    "axisangle": _wrap(_fc('type="grid" count="3 2 1" spacing=".1 .1 .1" dim="2" '
                           'radius=".01" axisangle="1 1 0 45" scale="2 2 2"')),
    "xyaxes_zaxis": _wrap(_fc('type="grid" count="3 2 1" spacing=".1 .1 .1" dim="2" '
                              'radius=".01" xyaxes="0 1 0 -1 0 0"')
                          + '<flexcomp name="g" type="grid" count="3 1 1" spacing=".1 .1 .1" '
                            'dim="1" radius=".01" zaxis="1 1 1"/>'),
    "material_tex": _wrap(_fc('type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
                              'radius=".01" material="m" rgba=".1 .2 .3 .4" group="2" '
                              'flatskin="true"'),
                          top='<asset><texture name="t" type="2d" builtin="checker" '
                              'width="8" height="8"/><material name="m" texture="t"/></asset>'),
    "two_flexcomps_and_bodies": _wrap(
        '<body name="a"><freejoint/><geom size=".1"/></body>'
        + _fc('type="grid" count="3 1 1" spacing=".1 .1 .1" dim="1" radius=".01"')
        + '<body name="b" pos="1 0 0"><joint/><geom size=".1"/>'
          '<flexcomp name="h" type="grid" count="2 2 1" spacing=".1 .1 .1" dim="2" '
          'radius=".01"><pin id="0"/></flexcomp></body>'),
    "in_frame": _wrap('<body name="b" pos="1 0 0" childclass="c"><joint/><geom size=".1"/>'
                      '<frame pos="0 0 1" euler="0 0 90" childclass="d">'
                      + _fc('type="grid" count="3 2 1" spacing=".1 .1 .1" dim="2" '
                            'radius=".01"', '<contact vertcollide="true"/>')
                      + '</frame></body>',
                      top='<default><default class="c"><joint damping="2"/></default>'
                          '<default class="d"><joint damping="3"/><geom priority="1"/>'
                          '</default></default>'),
    "grid3_material": _wrap(_fc('type="grid" count="3 3 2" spacing=".1 .1 .1" dim="3" '
                                'radius=".01" material="m"'),
                            top='<asset><material name="m"/></asset>'),
    # explicit <deformable><flex>
    "flex_nodes": _wrap(
        ''.join(f'<body name="n{i}{j}{k}" pos="{i} {j} {k}"><joint type="slide" axis="1 0 0"/>'
                f'<joint type="slide" axis="0 1 0"/><joint type="slide" axis="0 0 1"/>'
                f'<geom size=".01"/></body>' for i in (0, 1) for j in (0, 1) for k in (0, 1))
        + '<body name="p" pos=".5 .5 .5"/>',
        '<deformable><flex name="i" dim="3" body="p p p p p" '
        'vertex="0 0 0 .1 0 0 0 .1 0 0 0 .1 .1 .1 .1" element="0 1 2 3 1 2 3 4" '
        'node="n000 n001 n010 n011 n100 n101 n110 n111"><contact selfcollide="none"/>'
        '</flex></deformable>'),
    # mj_flex's sparse edge Jacobian storage (nv >= 60): the cube's rows overwrite the
    # triangle's (the cloth has no edge forces: rows of size 0), setConst reads them
    "sparse_rows_overwritten": _wrap(
        ''.join(f'<body name="b{i}" pos="{p}"><freejoint/><geom size=".01"/></body>'
                for i, p in enumerate(("0 0 0", ".1 0 0", "0 .1 0")))
        + '<body name="holder" pos="0 0 1">'
          '<flexcomp name="cloth" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
          'radius=".01"><pin id="0"/><elasticity young="100" poisson=".2" thickness=".01" '
          'elastic2d="stretch"/></flexcomp>'
          '<flexcomp name="cube" type="box" count="3 3 3" spacing=".1 .1 .1" dim="3" '
          'radius=".01" pos="1 0 0"><edge equality="true"/></flexcomp></body>',
        '<deformable><flex name="tri" dim="2" body="b0 b1 b2" element="0 1 2">'
        '<edge damping=".1"/></flex></deformable>'),
    # explicit <deformable><flex>
    "flex_dim1": _wrap('<body name="b0"><freejoint/><geom size=".01"/></body>'
                       '<body name="b1" pos=".1 0 0"><freejoint/><geom size=".01"/></body>'
                       '<body name="b2" pos=".2 0 0"><freejoint/><geom size=".01"/></body>',
                       '<deformable><flex name="rope" dim="1" body="b0 b1 b2" element="0 1 1 2" '
                       'radius=".005"><edge stiffness="3" damping=".1"/></flex></deformable>'),
    "flex_dim2_vertex": _wrap(
        '<body name="p" pos="0 0 1" euler="0 0 30"><joint type="slide"/>'
        '<geom size=".01"/></body>'
        '<body name="q" pos="1 0 1"><joint/><geom size=".01"/></body>',
        '<deformable><flex name="tri" dim="2" body="p p q q" vertex="0 0 0 .1 0 0 0 0 0 0 .1 0" '
        'element="0 1 2 1 3 2" texcoord="0 0 1 0 0 1 1 1" rgba="1 0 0 1">'
        '<contact condim="1" margin=".01"/></flex></deformable>'),
    "flex_dim2_rigid": _wrap('<body name="p"><freejoint/><geom size=".01"/></body>',
                             '<deformable><flex name="r" dim="2" body="p" '
                             'vertex="0 0 0 1 0 0 0 1 0" element="0 1 2"/></deformable>'),
    "flex_dim3": _wrap(
        ''.join(f'<body name="v{i}" pos="{x}"><freejoint/><geom size=".01"/></body>'
                for i, x in enumerate(("0 0 0", ".1 0 0", "0 .1 0", "0 0 .1", ".1 .1 .1")))
        , '<deformable><flex name="tet" dim="3" body="v0 v1 v2 v3 v4" element="0 1 2 3 1 2 3 4">'
          '<elasticity young="1e3" poisson=".25"/></flex></deformable>'),
    "flex_and_flexcomp_order": _wrap(
        _fc('type="grid" count="3 1 1" spacing=".1 .1 .1" dim="1" radius=".01"')
        + '<body name="c0"><freejoint/><geom size=".01"/></body>'
          '<body name="c1" pos=".1 0 0"><freejoint/><geom size=".01"/></body>',
        '<deformable><flex name="d" dim="1" body="c0 c1" element="0 1"/></deformable>'
        '<equality><flex flex="d"/></equality>'),
    "flex_elemtexcoord": _wrap(
        '<body name="p"><joint type="slide"/><geom size=".01"/></body>'
        '<body name="q" pos="1 0 0"><joint type="slide"/><geom size=".01"/></body>'
        '<body name="r" pos="0 1 0"><joint type="slide"/><geom size=".01"/></body>',
        '<deformable><flex name="t" dim="2" body="p q r" element="0 1 2" '
        'texcoord="0 0 1 0 0 1 .5 .5" elemtexcoord="0 1 3"/></deformable>'),
}


def _compile_both(xml):
    mjm = mujoco.MjModel.from_xml_string(xml)
    arrays = compile_spec(parse_xml(xml))
    return arrays, mjm


CASES["sparse_rows_dense"] = CASES["sparse_rows_overwritten"].replace(
    "<mujoco>", '<mujoco><option jacobian="dense"/>')


@pytest.mark.parametrize("case", sorted(CASES))
def test_flex_compiles_as_mujoco(case):
    arrays, mjm = _compile_both(CASES[case])
    assert mjm.nflex > 0
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_FLEX, i) or ""
             for i in range(mjm.nflex)]
    assert arrays.names["flex"] == names
    assert arrays.names["body"] == [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, i) or ""
                                    for i in range(mjm.nbody)]


def test_colliding_flex_model_loads_and_steps():
    """The Model carries the flex fields and steps with its flex contacts; make_data
    (hence step) and put_model refuse a flex collision tiphys does not simulate yet
    (passive contacts) rather than simulating it without its contacts."""
    xml = CASES["grid2"]
    m = tiphys.load_model_from_string(xml)
    assert m.arrays.sizes["nflex"] == 1
    mjm = mujoco.MjModel.from_xml_string(xml)
    np.testing.assert_array_equal(m.flex_vertbodyid.to_numpy()[:mjm.nflexvert],
                                  mjm.flex_vertbodyid)
    from tiphys.model import id2name, name2id
    assert name2id(m, "flex", "f") == 0 and id2name(m, "flex", 0) == "f"
    # the grid collides (default contype/conaffinity): simulated with its contacts
    # (tests/test_flex_collision.py); passive contacts are refused by name
    tiphys.step(m, tiphys.make_data(m, 1))
    passive = xml.replace("</flexcomp>", '<contact passive="true"/></flexcomp>')
    assert passive != xml
    m = tiphys.load_model_from_string(passive)
    with pytest.raises(NotImplementedError, match="flex collisions.*'f'.*not supported yet"):
        tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match="flex collisions.*'f'"):
        tiphys.put_model(mujoco.MjModel.from_xml_string(passive))


_GRID2 = 'type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" radius=".01"'
_BODIES3 = ''.join(f'<body name="v{i}" pos="{i} 0 0"><joint type="slide"/><geom size=".1"/>'
                   f'</body>' for i in range(3))

BAD = {
    "count_too_small": (_wrap(_fc('type="grid" count="0 3 1" spacing=".1 .1 .1" dim="2"')),
                        "Count too small"),
    "radial_count": (_wrap(_fc('type="ellipsoid" count="1 3 3" dim="3" spacing=".1 .1 .1" '
                               'dof="radial"')), "Count too small"),
    "spacing": (_wrap(_fc('type="grid" count="3 3 1" spacing=".01 .1 .1" dim="2" '
                          'radius=".01"')), "Spacing must be larger than geometry size"),
    "dim": (_wrap(_fc('type="grid" dim="4"')), "Invalid dim, must be between 1 and 3"),
    "mass": (_wrap(_fc(_GRID2 + ' mass="0"')),
             "Mass and inertiabox must be larger than mjMINVAL"),
    "pin_id": (_wrap(_fc(_GRID2, '<pin id="9"/>')), "pinid out of range"),
    "pin_range": (_wrap(_fc(_GRID2, '<pin range="0 9"/>')), "pinrange out of range"),
    "pin_grid": (_wrap(_fc(_GRID2, '<pin grid="0 3"/>')), "pingrid out of range"),
    "pin_gridrange": (_wrap(_fc(_GRID2, '<pin gridrange="0 0 3 0"/>')),
                      "pingridrange out of range"),
    "pin_grid_odd": (_wrap(_fc(_GRID2, '<pin grid="0 0 1"/>')),
                     "Pin grid number must be multiple of dim"),
    "pin_grid_box": (_wrap(_fc('type="box" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                               'radius=".01"', '<pin grid="0 0 0"/>')),
                     "Pin grid(range) can only be used with grid type"),
    "direct_elem_range": (_wrap(_fc('type="direct" dim="2" point="0 0 0 1 0 0 0 1 0" '
                                    'element="0 1 3"')),
                          "element 2 has point id 3, number of points is 3"),
    "direct_elem_size": (_wrap(_fc('type="direct" dim="2" point="0 0 0 1 0 0 0 1 0" '
                                   'element="0 1"')),
                         "Element size must be a multiple of dim+1"),
    "direct_point_size": (_wrap(_fc('type="direct" dim="1" point="0 0 0 1 0" element="0 1"')),
                          "Point size must be a multiple of 3"),
    "no_point": (_wrap(_fc('type="direct" dim="1"')), "Point and element required"),
    "repeated_vertex": (_wrap(_fc('type="direct" dim="2" point="0 0 0 1 0 0 0 1 0" '
                                  'element="0 1 1 0 1 2"')), "repeated vertex in element"),
    "poisson": (_wrap(_fc(_GRID2, '<elasticity young="10" poisson=".5"/>')),
                "Poisson ratio must be in [0, 0.5)"),
    "edge_stiffness_2d": (_wrap(_fc(_GRID2, '<edge stiffness="1"/>')),
                          "edge stiffness only available for dim=1"),
    "elasticity_and_equality": (_wrap(_fc(_GRID2, '<edge equality="true"/><elasticity '
                                          'young="10" elastic2d="stretch"/>')),
                                "elasticity and edge constraints cannot both be present"),
    "bending_thickness": (_wrap(_fc(_GRID2, '<elasticity young="10" elastic2d="bend"/>')),
                          "thickness must be positive for bending stiffness"),
    "bending_pins": (_wrap(_fc(_GRID2, '<pin id="0"/><elasticity young="10" thickness=".1" '
                                       'elastic2d="bend"/>')),
                     "pins are not supported for bending"),
    "texcoord_count": (_wrap(_fc('type="box" count="3 3 3" spacing=".1 .1 .1" dim="2" '
                                 'radius=".01" material="m"'),
                             top='<asset><material name="m"/></asset>'),
                       "two texture coordinates per vertex expected"),
    "quadratic_too_few": (_wrap(_fc('type="grid" count="4 4 4" spacing=".1 .1 .1" dim="3" '
                                    'radius=".01" dof="quadratic"',
                                    '<elasticity young="1e4"/><contact selfcollide="none"/>')),
                          "Trilinear dofs are require at least"),
    "trilinear_selfcollide": (_wrap(_fc('type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                                        'radius=".01" dof="trilinear"')),
                              "trilinear interpolation cannot do self-collision"),
    "no_name": (_wrap('<flexcomp type="grid" dim="2"/>'), "required attribute missing: 'name'"),
    "bad_type": (_wrap(_fc('type="foo"')), "invalid keyword"),
    "mesh_no_origin": (_wrap(_fc('type="mesh" file="a.obj" dim="3"')),
                       "origin must be specified for mesh flexcomps if dim=3"),
    "count_short": (_wrap(_fc('type="grid" count="3 3" dim="2"')),
                    "attribute 'count' does not have enough data"),
    "mesh_no_file": (_wrap(_fc('type="mesh" dim="2"')), "File is required"),
    "mesh_dim1": (_wrap(_fc('type="mesh" file="a.obj" dim="1"')),
                  "Flex dim must be at least 2 for mesh"),
    "unnamed_parent": (_wrap('<body>' + _fc(_GRID2) + '</body>'), "Parent body must have name"),
    "flex_unknown_body": (_wrap(_BODIES3, '<deformable><flex name="d" dim="1" body="v0 v9" '
                                          'element="0 1"/></deformable>'),
                          "unknown body 'v9' in flex"),
    "flex_elem_range": (_wrap(_BODIES3, '<deformable><flex name="d" dim="1" body="v0 v1 v2" '
                                        'element="0 3"/></deformable>'),
                        "elem vertex id out of range"),
    "flex_few_vertices": (_wrap(_BODIES3, '<deformable><flex name="d" dim="2" body="v0 v1" '
                                          'element="0 1 0"/></deformable>'),
                          "not enough vertices"),
    "flex_unknown_material": (_wrap(_BODIES3, '<deformable><flex name="d" dim="1" '
                                              'body="v0 v1" element="0 1" material="x"/>'
                                              '</deformable>'),
                              "unknown material 'x' in flex"),
    "flex_rigid_equality": (_wrap('<body name="p"><freejoint/><geom size=".1"/></body>',
                                  '<deformable><flex name="r" dim="2" body="p" '
                                  'vertex="0 0 0 1 0 0 0 1 0" element="0 1 2"/></deformable>'
                                  '<equality><flex flex="r"/></equality>'),
                            "rigid flex 'r' in equality constraint"),
    "flex_equality_unknown": (_wrap(_BODIES3, '<equality><flex flex="nope"/></equality>'),
                              "unknown element 'nope' in equality constraint"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_flex_input_fails_as_mujoco(case):
    xml, message = BAD[case]
    with pytest.raises(ValueError) as theirs:
        mujoco.MjModel.from_xml_string(xml)
    assert message in str(theirs.value), str(theirs.value)
    with pytest.raises(tiphys.ModelError) as ours:
        compile_spec(parse_xml(xml))
    assert message in str(ours.value), str(ours.value)
    assert str(ours.value).startswith("<string>:1: <"), str(ours.value)


def _cube_obj(texcoords: bool) -> bytes:
    v = [(x, y, z) for x in (-.1, .1) for y in (-.1, .1) for z in (-.1, .1)]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    lines = [f"v {x} {y} {z}" for x, y, z in v]
    if texcoords:
        lines += ["vt 0 0", "vt 1 0", "vt 1 1", "vt 0 1"]
        lines += [f"f {a+1}/1 {b+1}/2 {c+1}/3\nf {a+1}/1 {c+1}/3 {d+1}/4"
                  for a, b, c, d in quads]
    else:
        lines += [f"f {a+1} {b+1} {c+1}\nf {a+1} {c+1} {d+1}" for a, b, c, d in quads]
    return ("\n".join(lines) + "\n").encode()


def _cube_stl() -> bytes:
    import struct
    v = [(x, y, z) for x in (-.1, .1) for y in (-.1, .1) for z in (-.1, .1)]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    out = b"\0" * 80 + struct.pack("<i", len(tris))
    for t in tris:
        out += struct.pack("<3f", 0, 0, 0)
        for k in t:
            out += struct.pack("<3f", *v[k])
        out += b"\0\0"
    return out


MESH_CASES = {
    "mesh_obj2": (_fc('type="mesh" file="cube.obj" dim="2" radius=".01"'), "cube.obj", False),
    "mesh_obj2_tex": (_fc('type="mesh" file="cube.obj" dim="2" radius=".01" material="m"'),
                      "cube.obj", True),
    "mesh_obj3": (_fc('type="mesh" file="cube.obj" dim="3" origin="0 0 0" radius=".01" '
                      'pos="0 0 1" scale="2 1 1"', '<elasticity young="100" poisson=".3"/>'),
                  "cube.obj", False),
    "mesh_stl3": (_fc('type="mesh" file="cube.stl" dim="3" origin=".01 0 0" radius=".01"',
                      '<pin id="0 1"/>'), "cube.stl", False),
}


@pytest.mark.parametrize("case", sorted(MESH_CASES))
def test_mesh_flexcomp_compiles_as_mujoco(case, tmp_path):
    # (MuJoCo 3.4.0's flexcomp reads its file from disk only, not from the VFS)
    body, fname, tex = MESH_CASES[case]
    (tmp_path / fname).write_bytes(_cube_stl() if fname.endswith(".stl") else _cube_obj(tex))
    path = tmp_path / "model.xml"
    path.write_text(_wrap(body, top='<asset><material name="m"/></asset>'))
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(tiphys.load_spec(str(path)))
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)


_GMSH_POINTS = [(0, 0, 0), (.1, 0, 0), (0, .1, 0), (0, 0, .1), (.1, .1, .1)]
_GMSH_TETS = [(1, 2, 3, 4), (2, 3, 4, 5)]
_GMSH_TRIS = [(1, 2, 3), (2, 5, 3), (1, 2, 4)]


def _gmsh41(elements, dim, binary=False) -> bytes:
    import struct
    n, etype = len(_GMSH_POINTS), {2: 2, 3: 4}[dim]
    if binary:
        nodes = struct.pack("<4Q", 1, n, 1, n) + struct.pack("<3iQ", dim, 1, 0, n)
        nodes += struct.pack(f"<{n}Q", *range(1, n + 1))
        nodes += struct.pack(f"<{3 * n}d", *[x for p in _GMSH_POINTS for x in p])
        elems = struct.pack("<4Q", 1, len(elements), 1, len(elements))
        elems += struct.pack("<3iQ", dim, 1, etype, len(elements))
        for i, e in enumerate(elements):
            elems += struct.pack(f"<{len(e) + 1}Q", i + 1, *e)
        return (b"$MeshFormat\n4.1 1 8\n\x01\x00\x00\x00\n$EndMeshFormat\n$Nodes\n" + nodes
                + b"\n$EndNodes\n$Elements\n" + elems + b"\n$EndElements\n")
    lines = ["$MeshFormat", "4.1 0 8", "$EndMeshFormat", "$Nodes", f"1 {n} 1 {n}",
             f"{dim} 1 0 {n}"] + [str(i + 1) for i in range(n)]
    lines += [" ".join(map(str, p)) for p in _GMSH_POINTS]
    lines += ["$EndNodes", "$Elements", f"1 {len(elements)} 1 {len(elements)}",
              f"{dim} 1 {etype} {len(elements)}"]
    lines += [" ".join(map(str, (i + 1,) + e)) for i, e in enumerate(elements)]
    return ("\n".join(lines + ["$EndElements", ""])).encode()


def _gmsh22(elements, dim) -> bytes:
    n, etype = len(_GMSH_POINTS), {2: 2, 3: 4}[dim]
    lines = ["$MeshFormat", "2.2 0 8", "$EndMeshFormat", "$Nodes", str(n)]
    lines += [f"{i + 1} " + " ".join(map(str, p)) for i, p in enumerate(_GMSH_POINTS)]
    lines += ["$EndNodes", "$Elements", str(len(elements))]
    lines += [f"{i + 1} {etype} 2 0 1 " + " ".join(map(str, e)) for i, e in enumerate(elements)]
    return ("\n".join(lines + ["$EndElements", ""])).encode()


GMSH_CASES = {
    "gmsh41_tet": (_gmsh41(_GMSH_TETS, 3), '<elasticity young="100" poisson=".2"/>'),
    "gmsh41_tri_binary": (_gmsh41(_GMSH_TRIS, 2, binary=True), '<pin id="0"/>'),
    "gmsh41_tet_binary": (_gmsh41(_GMSH_TETS, 3, binary=True), ""),
    "gmsh22_tet": (_gmsh22(_GMSH_TETS, 3), ""),
    "gmsh22_tri": (_gmsh22(_GMSH_TRIS, 2), '<elasticity young="10" thickness=".01" '
                                           'elastic2d="stretch"/>'),
}


@pytest.mark.parametrize("case", sorted(GMSH_CASES))
def test_gmsh_flexcomp_compiles_as_mujoco(case, tmp_path):
    data, inner = GMSH_CASES[case]
    (tmp_path / "m.msh").write_bytes(data)
    path = tmp_path / "model.xml"
    path.write_text(_wrap(_fc('type="gmsh" file="m.msh" radius=".001" pos="0 0 1"', inner)))
    mjm = mujoco.MjModel.from_xml_path(str(path))
    arrays = compile_spec(tiphys.load_spec(str(path)))
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors)


def test_bad_gmsh_fails_as_mujoco(tmp_path):
    bad = _gmsh41(_GMSH_TETS, 3).replace(b"4.1 0 8", b"3.0 0 8")
    (tmp_path / "m.msh").write_bytes(bad)
    path = tmp_path / "model.xml"
    path.write_text(_wrap(_fc('type="gmsh" file="m.msh"')))
    message = "Only GMSH file format versions 4.1 and 2.2 are supported"
    with pytest.raises(ValueError, match=message):
        mujoco.MjModel.from_xml_path(str(path))
    with pytest.raises(tiphys.ModelError, match=message):
        compile_spec(tiphys.load_spec(str(path)))


def _random_flexcomp(rng) -> str:
    """A random flexcomp (type, dim, dof, counts, pose, pins, elasticity, contact, edge),
    within what MuJoCo 3.4.0 itself survives: it hangs on boxes with a count of 1 and
    crashes on 3D flexes without active layers, on circles of dim > 1 and on
    interpolated (trilinear, quadratic) non-grid flexcomps."""
    typ = rng.choice(["grid", "box", "cylinder", "ellipsoid", "square", "disc", "circle"])
    dim = 1 if typ == "circle" else rng.choice(
        [2, 3] if typ in ("box", "cylinder", "ellipsoid") else [1, 2, 3])
    dofs = ["full", "full", "radial"] + (["trilinear", "quadratic"]
                                         if dim == 3 and typ == "grid" else [])
    dof = rng.choice(dofs)
    low = 2 if typ in ("box", "cylinder", "ellipsoid") else 1
    c = [rng.randint(low, 5) for _ in range(3)]
    sp = [round(rng.uniform(.05, .2), 3) for _ in range(3)]
    attrs = (f'type="{typ}" dim="{dim}" dof="{dof}" count="{c[0]} {c[1]} {c[2]}" '
             f'spacing="{sp[0]} {sp[1]} {sp[2]}" radius=".01"')
    if rng.random() < .3:
        attrs += f' pos="{rng.uniform(-1, 1):.3f} 0 {rng.uniform(0, 1):.3f}"'
    if rng.random() < .3:
        attrs += f' euler="{rng.randint(0, 90)} {rng.randint(0, 90)} 0"'
    if rng.random() < .2:
        attrs += f' mass="{rng.uniform(.1, 5):.3f}" inertiabox="{rng.uniform(.001, .1):.3f}"'
    if rng.random() < .1 and dof in ("full", "radial"):
        attrs += ' rigid="true"'
    inner = ""
    if rng.random() < .4:
        inner += (f'<elasticity young="{rng.choice([0, 10, 1e3])}" '
                  f'poisson="{rng.choice([0, .2, .45])}" damping="{rng.choice([0, .01])}" '
                  f'thickness="{rng.choice([-1, .01])}" '
                  f'elastic2d="{rng.choice(["none", "bend", "stretch", "both"])}"/>')
    if rng.random() < .4:
        inner += (f'<contact selfcollide="{rng.choice(["none", "auto", "bvh"])}" '
                  f'vertcollide="{rng.choice(["true", "false"])}" '
                  f'activelayers="{rng.randint(1, 3)}" '
                  f'internal="{rng.choice(["true", "false"])}"/>')
    if rng.random() < .3:
        inner += (f'<edge equality="{rng.choice(["true", "false"])}" '
                  f'damping="{rng.choice([0, .1])}"/>')
    if rng.random() < .3:
        inner += f'<pin id="{rng.randint(0, 3)}"/>'
    if rng.random() < .2 and dim > 1:
        inner += f'<pin grid="{" ".join(str(rng.randint(0, 1)) for _ in range(dim))}"/>'
    body = f'<flexcomp name="f" {attrs}>{inner}</flexcomp>'
    if rng.random() < .3:
        body = (f'<body name="p" pos=".2 .1 .5" euler="10 0 20"><joint/><geom size=".05"/>'
                f'{body}</body>')
    return _wrap(body)


def _random_cases(n=48, seed=7):
    import random
    rng = random.Random(seed)
    return [_random_flexcomp(rng) for _ in range(n)]


@pytest.mark.parametrize("xml", _random_cases())
def test_random_flexcomp_matches_mujoco(xml):
    """Both compile it and every field matches, or both reject it."""
    try:
        mjm = mujoco.MjModel.from_xml_string(xml)
    except ValueError:
        with pytest.raises((tiphys.ModelError, NotImplementedError)):
            compile_spec(parse_xml(xml))
        return
    errors = compare_model(compile_spec(parse_xml(xml)), mjm)
    assert not errors, "\n".join(errors)
