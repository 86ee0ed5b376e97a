"""The `tiphys` command line, run in-process (one Taichi start-up for the module)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tiphys
from tiphys.cli import ensure_backend, main, random_qpos
from tiphys.compiler.compile import compile_spec
from tiphys.scenes import scene_path

from oracle import corpus_dir


@pytest.fixture(scope="module", autouse=True)
def cpu_f64():
    # conftest already runs tiphys.init(arch="cpu", precision="f64"); a second init
    # would invalidate other modules' arrays, so only init when it has not happened
    ensure_backend("cpu", "f64")


def test_bundled_scene_ships_as_package_data():
    path = scene_path()
    assert os.path.isfile(path)
    assert path.endswith(os.path.join("tiphys", "scenes", "scene.xml"))


def test_bundled_scene_compiles_like_mujoco():
    mujoco = pytest.importorskip("mujoco")
    from oracle import compare_model

    mjm = mujoco.MjModel.from_xml_path(scene_path())
    arrays = compile_spec(tiphys.load_spec(scene_path()))
    assert compare_model(arrays, mjm) == []
    # what the scene promises: a free-floating walker, loose objects, plane, light, camera
    assert mjm.nu == mjm.ntendon == mjm.nsensor == mjm.neq == 0
    assert (mjm.jnt_type == mujoco.mjtJoint.mjJNT_FREE).sum() >= 4
    assert (mjm.jnt_type == mujoco.mjtJoint.mjJNT_HINGE).sum() >= 8
    assert mujoco.mjtGeom.mjGEOM_PLANE in mjm.geom_type
    assert mjm.nlight >= 1 and mjm.ncam >= 1 and mjm.nkey >= 1


def test_info_on_bundled_scene(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "strider" in out
    assert "compiled" in out and "not compiled yet" not in out
    for word in ("nq", "nbody", "ngeom", "hinge", "free", "timestep", "implicitfast",
                 "compile"):
        assert word in out


def test_info_on_corpus_model_with_sensors_reports_missing_feature(capsys):
    path = os.path.join(corpus_dir(), "mjtest", "model.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "not compiled yet" in out
    assert "sensor" in out
    assert "rangefinder" in out  # spec-level counts of the uncompiled section
    assert "body" in out and "timestep" in out


def test_info_on_corpus_model_with_actuators_compiles(capsys):
    path = os.path.join(corpus_dir(), "gym", "ant.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "not compiled yet" not in out
    assert "nu" in out and "body" in out


def test_info_on_broken_model_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "broken.xml"
    bad.write_text('<mujoco>\n  <worldbody>\n    <geom size="a b"/>\n  </worldbody>\n'
                   '</mujoco>\n')
    assert main(["info", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "broken.xml:3" in captured.err
    assert "size" in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_info_on_malformed_xml_exits_2(tmp_path, capsys):
    bad = tmp_path / "malformed.xml"
    bad.write_text("<mujoco>\n  <worldbody>\n    <body>\n</mujoco>\n")
    assert main(["info", str(bad)]) == 2
    assert "malformed.xml" in capsys.readouterr().err


def test_info_on_missing_file_exits_2(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope.xml")]) == 2
    assert "nope.xml" in capsys.readouterr().err


def test_run_few_worlds_few_steps(capsys):
    assert main(["run", "--nworld", "4", "--steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "world-evaluations/s" in out
    assert "kernel launches per call" in out
    assert "results finite" in out and "yes" in out


def test_view_and_render_are_not_faked(capsys):
    for cmd in ("view", "render"):
        assert main([cmd]) == 2
        assert "later issue" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "info" in capsys.readouterr().out


def test_random_qpos_respects_limits_and_normalises_quaternions():
    arrays = compile_spec(tiphys.load_spec(scene_path()))
    qpos = random_qpos(arrays, 64, np.random.default_rng(1))
    assert qpos.shape == (64, arrays.sizes["nq"])
    for jntid, jtype in enumerate(arrays.jnt_type):
        adr = arrays.jnt_qposadr[jntid]
        if jtype == 0:
            np.testing.assert_allclose(np.linalg.norm(qpos[:, adr + 3:adr + 7], axis=1), 1.0)
        elif jtype == 3 and arrays.jnt_limited[jntid]:
            lo, hi = arrays.jnt_range[jntid]
            assert (qpos[:, adr] >= lo).all() and (qpos[:, adr] <= hi).all()


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "tiphys.cli", "view"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert "later issue" in proc.stderr
