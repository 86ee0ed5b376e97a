"""The `tiphys` command line, run in-process (one Taichi start-up for the module)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tiphys
from tiphys.cli import bench_argv, ensure_backend, main, random_qpos
from tiphys.compiler.compile import compile_spec
from tiphys.scenes import scene_path
from tiphys.scenes.gait import GaitDriver, gait_for

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
    import mujoco
    from oracle import compare_model

    mjm = mujoco.MjModel.from_xml_path(scene_path())
    arrays = compile_spec(tiphys.load_spec(scene_path()))
    assert compare_model(arrays, mjm) == []
    # what the scene promises: a free-floating walker with servos on its twelve leg
    # joints, loose objects, plane, light, camera
    assert mjm.ntendon == mjm.nsensor == mjm.neq == 0
    assert mjm.nu == 12
    assert (mjm.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT).all()
    legs = {mjm.joint(j).name for j in mjm.actuator_trnid[:, 0]}
    assert legs == {f"{leg}_{j}" for leg in ("fl", "fr", "hl", "hr")
                    for j in ("hip_x", "hip_y", "knee")}
    assert (mjm.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE).all()  # position servos
    assert (mjm.jnt_type == mujoco.mjtJoint.mjJNT_FREE).sum() >= 4
    assert (mjm.jnt_type == mujoco.mjtJoint.mjJNT_HINGE).sum() >= 8
    assert mujoco.mjtGeom.mjGEOM_PLANE in mjm.geom_type
    assert mjm.nlight >= 1 and mjm.ncam >= 1 and mjm.nkey >= 1


def test_info_on_bundled_scene(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "strider" in out
    assert "compiled" in out and "not supported yet" not in out
    for word in ("nq", "nbody", "ngeom", "hinge", "free", "timestep", "implicitfast",
                 "compile"):
        assert word in out


def test_info_on_corpus_octree_sdf_model_compiles(capsys):
    """cow.xml (sdf geoms without a plugin: their meshes' octrees) is simulated now."""
    path = os.path.join(corpus_dir(), "mjwarp", "collision_sdf", "cow.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "compiled" in out and "not supported yet" not in out
    assert "body" in out and "timestep" in out


def test_info_on_model_it_cannot_simulate_reports_it(capsys, monkeypatch):
    """A model that compiles but that make_data refuses (today: an sdf geom without a
    plugin whose mesh has no octree, which the compiler does not produce) is reported
    with the reason."""
    import tiphys.model
    monkeypatch.setattr(tiphys.model, "octree_sdf_refusal",
                        lambda arrays, names=None: "geom 'cow1': the reason")
    path = os.path.join(corpus_dir(), "mjwarp", "collision_sdf", "cow.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "not supported yet" in out and "geom 'cow1': the reason" in out


def test_info_on_corpus_flex_model_compiles(capsys):
    path = os.path.join(corpus_dir(), "mjwarp", "flex", "floppy.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "compiled" in out and "not supported yet" not in out
    assert "nflex" in out  # the compiled flex sizes


def test_info_on_corpus_model_with_sensors_compiles(capsys):
    path = os.path.join(corpus_dir(), "mjtest", "model.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "not supported yet" not in out
    assert "every section of this model is supported" in out


def test_info_on_corpus_model_with_actuators_compiles(capsys):
    path = os.path.join(corpus_dir(), "gym", "ant.xml")
    if not os.path.isfile(path):
        pytest.skip("corpus not fetched (make corpus)")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "not supported yet" not in out
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


def test_run_steps_the_bundled_scene_with_contacts(capsys):
    assert main(["run", "--nworld", "3", "--steps", "30"]) == 0
    out = capsys.readouterr().out
    assert "strider, 3 worlds x 30 steps" in out
    for row in ("world-steps/s", "steps/s", "real-time factor", "first step (Taichi compile)",
                "kernel launches per step", "contacts / world", "constraint rows / world",
                "solver iterations", "worlds with warnings", "torso height",
                "torso distance walked", "torso upright", "trot"):
        assert row in out, row
    assert "results finite" in out and "yes" in out
    # the loose objects land after 2 cm of fall (16 steps): contacts are found
    cells = out.split("contacts / world")[1].split()
    assert cells[2] == "mean," and cells[4] == "max"
    assert int(cells[3]) >= 5


def test_run_model_without_actuators_or_free_body(tmp_path, capsys):
    xml = tmp_path / "pendulum.xml"
    xml.write_text('<mujoco><worldbody><body><joint type="hinge" axis="0 1 0"/>'
                   '<geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/></body>'
                   '</worldbody></mujoco>')
    assert main(["run", str(xml), "--nworld", "2", "--steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "no actuators" in out
    assert "distance walked" not in out
    assert "results finite" in out


def test_run_rejects_bad_sizes(capsys):
    assert main(["run", "--nworld", "0"]) == 2
    assert "--nworld" in capsys.readouterr().err


def test_gait_stays_in_ctrlrange_and_generic_gait_uses_it():
    import mujoco
    mjm = mujoco.MjModel.from_xml_path(scene_path())
    m = tiphys.load_model(scene_path())
    gait = gait_for(m)
    lo, hi = mjm.actuator_ctrlrange.T
    assert (gait.offset - np.abs(gait.amp) >= lo).all()
    assert (gait.offset + np.abs(gait.amp) <= hi).all()
    assert np.abs(gait.amp).max() > 0  # the trot moves the legs
    xml = ('<mujoco><worldbody><body><joint name="a" type="hinge"/><joint name="b" '
           'type="hinge" axis="0 1 0"/><geom size=".1"/></body></worldbody><actuator>'
           '<motor joint="a" ctrlrange="-2 6"/><motor joint="b" ctrllimited="false"/>'
           '</actuator></mujoco>')
    generic = gait_for(tiphys.load_model_from_string(xml))
    mjg = mujoco.MjModel.from_xml_string(xml)
    lo, hi = mjg.actuator_ctrlrange[0]
    np.testing.assert_allclose(generic.offset, [(lo + hi) / 2, 0.0])
    np.testing.assert_allclose(generic.amp, [(hi - lo) / 4, 0.25])


def test_run_gait_steps_the_bundled_scene_like_mujoco():
    """The control `tiphys run` computes on the device, stepped with contacts, against
    MuJoCo stepping the same scene with the same controls (MuJoCo's default flags:
    constraint islands solved apart)."""
    import mujoco
    m = tiphys.load_model(scene_path())
    phases = np.array([0.0, 2.0, 4.5])
    d = tiphys.make_data(m, len(phases))
    d.ctrl.fill(np.nan)  # poisoned: the gait kernel must write every control
    gait = gait_for(m)
    driver = GaitDriver(gait, phases, d)
    mjm = mujoco.MjModel.from_xml_path(scene_path())
    mjds = [mujoco.MjData(mjm) for _ in phases]
    ncon = 0
    for _ in range(60):
        driver.apply(d)
        ctrl = d.numpy("ctrl")
        for w, mjd in enumerate(mjds):
            mjd.ctrl[:] = gait.offset + gait.amp * np.sin(gait.omega * mjd.time + gait.phase
                                                          + phases[w])
            np.testing.assert_allclose(ctrl[w], mjd.ctrl, rtol=0, atol=1e-12)
            mujoco.mj_step(mjm, mjd)
        tiphys.step(m, d)
        assert (d.numpy("ncon") == [mjd.ncon for mjd in mjds]).all()
        ncon = min(mjd.ncon for mjd in mjds)
    assert ncon > 5  # walker feet and loose objects on the floor
    qpos = d.numpy("qpos")
    for w, mjd in enumerate(mjds):
        np.testing.assert_allclose(qpos[w], mjd.qpos, rtol=0, atol=1e-10)
        assert not np.allclose(mjd.ctrl, mjds[0].ctrl) or w == 0  # phases differ


def test_view_without_a_display_suggests_render(capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["view"]) == 2
    err = capsys.readouterr().err
    assert "no display" in err and "tiphys render" in err


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
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, "-m", "tiphys.cli", "view"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 2
    assert "no display" in proc.stderr


def test_commands_print_no_taichi_banner(tmp_path):
    """Neither `tiphys --help` nor a command prints Taichi's banner or start-up line."""
    for argv in (["--help"], ["info", "--device"]):
        proc = subprocess.run([sys.executable, "-m", "tiphys.cli", *argv],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout + proc.stderr
        assert "[Taichi]" not in text, text
        assert "usage: tiphys" in text or "strider" in text
    assert list(tmp_path.iterdir()) == []


def test_bench_arguments(capsys):
    from tiphys.cli import bench_out_default, build_parser

    assert main(["bench", "nope"]) == 2
    assert "unknown benchmark nope" in capsys.readouterr().err
    assert main(["bench", "--nworld", "0"]) == 2
    assert main(["bench", "--steps", "0"]) == 2
    args = build_parser().parse_args(["bench", "step", "--nworld", "1", "64", "--steps", "5",
                                      "--precision", "f32"])
    argv = bench_argv(args)
    assert argv[:1] == ["step"] and argv[argv.index("--nworld") + 1:][:2] == ["1", "64"]
    assert argv[argv.index("--out") + 1] == bench_out_default()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert not bench_out_default().startswith(repo)


def test_bench_writes_only_where_told(tmp_path):
    """A small real run: the results land in --out, nothing in the checkout, and the
    report describes what exists (kinematics is timed; nothing claims it is missing).
    (kinematics alone: a new process compiles every kernel it runs, since the test
    workers' Taichi cache is written when they exit, and a whole step is ~30 s more of
    compiling on 2 cores with empty caches; the step benchmark runs in `make bench`.)"""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bench_dir = os.path.join(repo, "benchmarks")
    before = {f: os.path.getmtime(os.path.join(bench_dir, f)) for f in os.listdir(bench_dir)}
    out = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "tiphys.cli", "bench", "kinematics",
                           "--nworld", "1", "--steps", "1", "--precision", "f64", "--scene",
                           "strider", "--out", str(out)], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = {f: os.path.getmtime(os.path.join(bench_dir, f)) for f in os.listdir(bench_dir)}
    assert after == before
    assert sorted(p.name for p in out.iterdir()) == ["RESULTS.md", "results.json"]
    report = (out / "RESULTS.md").read_text()
    assert "### kinematics" in report and "### step" not in report
    for claim in ("not exist", "does not compile", "do not compile"):
        assert claim not in report
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


def test_cli_in_a_process_running_other_settings_says_so(capsys):
    """In-process (a notebook): the CLI does not switch the running backend."""
    assert main(["run", "--nworld", "1", "--steps", "1", "--precision", "f32"]) == 2
    err = capsys.readouterr().err
    assert "precision='f32'" in err and "precision='f64'" in err and "Traceback" not in err
