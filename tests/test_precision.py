"""Every kernel also runs in f32 (GPUs, Metal and Vulkan have no usable f64)."""
import json
import os

import pytest

import spirv
import subproc

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["gym/humanoid.xml", "gym/ant.xml", "mjwarp/pendula.xml", "mjwarp/mug/mug.xml"]


def _run(arch, precision):
    res = subproc.run([os.path.join(HERE, "precision_check.py"), arch, precision]
                      + MODELS, key=f"{arch}-{precision}")
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_kinematics_f32_on_cpu_matches_mujoco_to_single_precision():
    errors = _run("cpu", "f32")
    assert set(errors) == set(MODELS)
    for model, err in errors.items():
        assert err < 5e-5, f"{model}: relative error {err}"


@pytest.mark.parametrize("arch", spirv.device_archs())
def test_kinematics_on_other_backends(arch):
    """The SPIR-V path (Metal, Vulkan GPUs) on Mesa's software Vulkan (lavapipe), and
    CUDA where a GPU is present. `make test` installs mesa-vulkan-drivers where it can
    (root + apt-get)."""
    errors = _run(arch, "f32")
    for model, err in errors.items():
        assert err < 5e-5, f"{model}: relative error {err}"


def test_device_probe_retries_then_names_what_taichi_printed(monkeypatch):
    """A driver this machine has that Taichi never starts on is an error, not a silent
    skip of every test on that backend; one failed start among the tries is not."""
    answers = iter([(False, "first"), (True, "")])
    monkeypatch.setattr(spirv, "_probe", lambda arch: next(answers))
    assert spirv._starts("vulkan", expected=True)
    monkeypatch.setattr(spirv, "_probe", lambda arch: (False, "VK_ERROR_INITIALIZATION_FAILED"))
    assert not spirv._starts("vulkan", expected=False)
    with pytest.raises(RuntimeError, match="(?s)vulkan driver.*3 tries.*VK_ERROR_INITIALIZATION_FAILED"):
        spirv._starts("vulkan", expected=True)


def test_cuda_runs_without_fast_math_unless_asked():
    """On CUDA Taichi's fast math swaps sine, cosine, division and square root for
    approximations, which put test_sensor_acc's f32 torque sensors 1.15e-4 off MuJoCo
    (4.6e-6 without it; H200, 2026-11-28): tiphys turns it off there. A user may still
    ask for it; the CPU and SPIR-V backends keep Taichi's default."""
    from tiphys import backend
    for arch in ("cuda", "gpu"):  # ("gpu" picks CUDA where there is one)
        assert backend.taichi_options(arch, {})["fast_math"] is False
    assert backend.taichi_options("cuda", {"fast_math": True})["fast_math"] is True
    for arch in ("cpu", "vulkan", "metal"):
        assert "fast_math" not in backend.taichi_options(arch, {})
    cpu = backend.taichi_options("cpu", {"offline_cache": False})
    assert cpu["offline_cache"] is False and cpu["random_seed"] == 0
    assert cpu["advanced_optimization"] is False and cpu["cpu_max_num_threads"] >= 1
