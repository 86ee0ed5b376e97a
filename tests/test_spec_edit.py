"""Spec editing (issue 20): elements added, changed and removed on a loaded Spec,
compiled again, and saved with Spec.to_xml: MuJoCo compiles the saved file to the
same model tiphys compiles from the edited Spec, field by field."""
import os

import mujoco
import pytest
from oracle import compare_model, corpus_dir

import tiphys
from tiphys.api import load_spec
from tiphys.compiler.compile import compile_spec


def _edit(spec):
    spec.find("geom", "torso_geom").set("size", "0.3")
    body = spec.worldbody.add("body", name="crate", pos="1 0 0.3")
    body.add("freejoint", name="crate_free")
    body.add("geom", name="crate_geom", type="box", size="0.1 0.1 0.1", rgba="1 0 0 1")
    arm = body.add("body", name="lid", pos="0 0 0.12")
    arm.add("joint", name="lid_hinge", type="hinge", axis="0 1 0", range="-1 1")
    arm.add("geom", type="capsule", fromto="0 0 0 0.2 0 0", size="0.02", class_="main")
    actuator = spec.root.first("actuator")
    actuator.remove(actuator.children[0])
    actuator.add("motor", name="lid_motor", joint="lid_hinge", gear="3")
    spec.root.first("option").set("timestep", "0.005")


def test_edited_spec_compiles_as_mujoco_compiles_its_xml(tmp_path):
    spec = load_spec(os.path.join(corpus_dir(), "gym/ant.xml"))
    before = compile_spec(spec)  # compiled once before the edits: nothing may stay stale
    _edit(spec)
    arrays = compile_spec(spec)
    assert arrays.sizes["nbody"] == before.sizes["nbody"] + 2
    assert arrays.sizes["nu"] == before.sizes["nu"]
    assert arrays.opt.timestep == 0.005
    path = tmp_path / "edited.xml"
    path.write_text(spec.to_xml())
    mjm = mujoco.MjModel.from_xml_path(str(path))
    errors = compare_model(arrays, mjm)
    assert not errors, "\n".join(errors[:20])
    m = tiphys.compile_model(spec)
    d = tiphys.make_data(m, 1)
    d.actuator("lid_motor").ctrl = 0.5
    tiphys.step(m, d)
    assert d.joint("lid_hinge").qvel[0, 0] != 0


def test_bad_edits_are_clear_errors():
    spec = load_spec(os.path.join(corpus_dir(), "gym/ant.xml"))
    body = spec.find("body", "torso")
    with pytest.raises(ValueError, match="<body> cannot contain <motor>"):
        body.add("motor")
    with pytest.raises(AttributeError, match="<geom> has no attribute 'colour'"):
        body.add("geom", colour="red")
    body.add("inertial", pos="0 0 0", mass="1")
    with pytest.raises(ValueError, match="<inertial> may appear only once"):
        body.add("inertial", pos="0 0 0", mass="2")
    with pytest.raises(ValueError, match="is not a child"):
        spec.worldbody.remove(spec.find("geom", "torso_geom"))
    assert spec.find("body", "no such body") is None


def test_spec_copy_is_deep():
    """Spec.copy (mj_copySpec): editing the copy leaves the original's model as it was."""
    import numpy as np
    import tiphys
    spec = tiphys.parse_xml('<mujoco><worldbody><body name="b"><freejoint/>'
                            '<geom size=".1"/></body></worldbody></mujoco>')
    twin = spec.copy()
    twin.find("body", "b").first("geom").set("size", ".3")
    twin.worldbody.add("geom", type="plane", size="1 1 .1")
    a, b = tiphys.compile_model(spec), tiphys.compile_model(twin)
    assert (a.ngeom, b.ngeom) == (1, 2)
    assert a.arrays.geom_size[0][0] == 0.1 and np.isclose(b.arrays.geom_size[1][0], 0.3)
