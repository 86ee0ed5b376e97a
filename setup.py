"""The optional C accelerators of the compiler (tiphys/compiler/_polytree.c: mesh
polygons; _objscan.c: the OBJ reader's fast path; _mt64.c: std::mt19937_64 for the
builtin textures; _meshsum.c: ordered float32 sums for vertex normals; _bvhtree.c:
bounding-volume hierarchies as MuJoCo builds them) and of the step
(tiphys/_native_replay.c: recorded CPU launches called without Taichi's launcher);
the project's
metadata is in pyproject.toml. Where they cannot be
built (no C compiler or no Python headers) the install goes on and tiphys uses the
Python code paths."""
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# the buffer protocol belongs to the stable C API from Python 3.11
LIMITED = sys.version_info >= (3, 11)


class BuildExt(build_ext):
    """Floating-point flags per compiler: IEEE double, no fused multiply-add, so that
    the C walk compares normals exactly as Python does."""

    def build_extensions(self):
        if self.compiler.compiler_type == "msvc":
            args = ["/fp:precise"]
        else:
            args = ["-O2", "-fno-fast-math", "-ffp-contract=off"]
        for ext in self.extensions:
            ext.extra_compile_args = args
        super().build_extensions()


setup(
    ext_modules=[Extension(
        f"tiphys.compiler.{name}", [f"tiphys/compiler/{name}.c"], optional=True,
        define_macros=[("Py_LIMITED_API", "0x030B0000")] if LIMITED else [],
        py_limited_api=LIMITED) for name in ("_polytree", "_objscan", "_mt64", "_meshsum", "_bvhtree")]
    + [Extension(
        "tiphys._native_replay", ["tiphys/_native_replay.c"], optional=True,
        define_macros=[("Py_LIMITED_API", "0x030B0000")] if LIMITED else [],
        py_limited_api=LIMITED)],
    cmdclass={"build_ext": BuildExt},
)
