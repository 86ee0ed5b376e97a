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
import functools
import subprocess
import sys

# analytic detectors exist for these; every other pair runs the convex narrowphase
PRIMITIVE_TYPES = ("plane", "sphere", "capsule", "box")


def _probe(arch: str) -> bool:
    probe = f"import taichi as ti; ti.init(arch=ti.{arch}); import sys; " \
            f"sys.exit(0 if ti.lang.impl.current_cfg().arch == ti.{arch} else 1)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


@functools.lru_cache(maxsize=None)
def vulkan_available() -> bool:
    return _probe("vulkan")


@functools.lru_cache(maxsize=None)
def cuda_available() -> bool:
    import ctypes.util
    return ctypes.util.find_library("cuda") is not None and _probe("cuda")


def archs() -> list:
    """cpu, vulkan where a Vulkan device exists (Mesa's lavapipe on CPU machines: the
    SPIR-V path Metal and non-CUDA GPUs use), and cuda where an NVIDIA GPU is present
    (CI has none; a GPU machine runs these same checks)."""
    return ["cpu"] + (["vulkan"] if vulkan_available() else []) + \
        (["cuda"] if cuda_available() else [])


def device_archs() -> list:
    """The backends other than the CPU that this machine has."""
    return [arch for arch in archs() if arch != "cpu"]
