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


def _vulkan_available() -> bool:
    import spirv
    return spirv.vulkan_available()


@pytest.mark.parametrize("arch", spirv.device_archs())
def test_kinematics_on_other_backends(arch):
    """The SPIR-V path (Metal, Vulkan GPUs) on Mesa's software Vulkan (lavapipe), and
    CUDA where a GPU is present. `make test` installs mesa-vulkan-drivers where it can
    (root + apt-get)."""
    errors = _run(arch, "f32")
    for model, err in errors.items():
        assert err < 5e-5, f"{model}: relative error {err}"
