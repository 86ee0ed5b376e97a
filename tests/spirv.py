"""What the Vulkan (SPIR-V) tests share: which archs run, and what they keep cheap.

The SPIR-V path (Metal, non-CUDA GPUs) is tested on Mesa's software Vulkan, lavapipe,
which `make test` installs where it can. lavapipe compiles every pipeline with LLVM
the first time it meets it; the Mesa shader cache keeps the result, but a new machine
has an empty cache and pays the whole compile inside the test run. That cost is far
from linear in kernel size. Measured on a 2-core machine (Mesa 22.3, LLVM 15, loaded):
a kernel with one dynamically indexed local 64x3 array compiles in 7 s, 256x3 in
188 s, because lavapipe lowers every dynamic index of a local array into straight-line
code over the whole array and LLVM's instruction scheduler is quadratic in the size of
a basic block. The convex narrowphase kept EPA's polytope in local arrays of 1020
faces (MuJoCo's sizing) and did not compile in useful time on lavapipe with a cold
cache (more than 20 minutes). It now keeps the polytope in per-thread global scratch
(kernels/epa.py) and compiles cold in ~45 s (box-mesh, Mesa's shader cache off, same
loaded 2-core machine): still too slow for every test run, so the pairs stay out.

So each Vulkan test exercises its own stage on a scene whose other stages are cheap to
compile: only analytic collision pairs (no pair that needs the convex narrowphase),
and upstream results taken from MuJoCo where the stage under test reads them.
"""
import ctypes.util
import functools
import glob
import os
import subprocess
import sys

# analytic detectors exist for these; every other pair runs the convex narrowphase
PRIMITIVE_TYPES = ("plane", "sphere", "capsule", "box")


# The archs found, decided once per test run: the pytest-xdist controller probes before
# its workers start (conftest.pytest_configure) and hands the answer to them in this
# variable. Each worker probing on its own once made two workers collect different
# tests (one found lavapipe, the other did not, under the load of collection), which
# fails the whole run before a test starts (CI, 2026-11-28).
ARCHS_ENV = "TIPHYS_TEST_DEVICE_ARCHS"
PROBE_TRIES = 3


def _probe(arch: str) -> tuple:
    """(whether Taichi starts on `arch` in a fresh process, what that process printed)."""
    probe = f"import taichi as ti; ti.init(arch=ti.{arch}); import sys; " \
            f"sys.exit(0 if ti.lang.impl.current_cfg().arch == ti.{arch} else 1)"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return run.returncode == 0, run.stdout + run.stderr


def _lavapipe_installed() -> bool:
    """Mesa's software Vulkan and the loader, as `make vulkan` installs them."""
    return bool(glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json")) and \
        ctypes.util.find_library("vulkan") is not None


def _starts(arch: str, expected: bool) -> bool:
    """Whether Taichi starts on `arch`, asked up to PROBE_TRIES times. A device this
    machine has (`expected`) that never starts is an error naming what Taichi printed,
    not a silent skip of every test on it."""
    for _ in range(PROBE_TRIES):
        ok, printed = _probe(arch)
        if ok:
            return True
    if expected:
        raise RuntimeError(f"this machine has a {arch} driver but Taichi did not start on "
                           f"{arch} in {PROBE_TRIES} tries; the last printed:\n{printed}")
    return False


@functools.lru_cache(maxsize=None)
def _device_archs() -> tuple:
    if ARCHS_ENV in os.environ:
        return tuple(arch for arch in os.environ[ARCHS_ENV].split(",") if arch)
    found = tuple(arch for arch, present in (
        ("vulkan", _starts("vulkan", expected=_lavapipe_installed())),
        ("cuda", ctypes.util.find_library("cuda") is not None and _starts("cuda", expected=False)))
        if present)
    os.environ[ARCHS_ENV] = ",".join(found)
    return found


def vulkan_available() -> bool:
    return "vulkan" in _device_archs()


def cuda_available() -> bool:
    return "cuda" in _device_archs()


def archs() -> list:
    """cpu, vulkan where a Vulkan device exists (Mesa's lavapipe on CPU machines: the
    SPIR-V path Metal and non-CUDA GPUs use), and cuda where an NVIDIA GPU is present
    (CI has none; a GPU machine runs these same checks)."""
    return ["cpu"] + (["vulkan"] if vulkan_available() else []) + \
        (["cuda"] if cuda_available() else [])


def cpu_and_cuda() -> list:
    """cpu, and cuda where an NVIDIA GPU is present: for checks too slow to compile on
    lavapipe in the suite's time (a GPU machine runs them on CUDA)."""
    return ["cpu"] + (["cuda"] if cuda_available() else [])


def device_archs() -> list:
    """The backends other than the CPU that this machine has."""
    return [arch for arch in archs() if arch != "cpu"]
