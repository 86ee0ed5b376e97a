"""The built wheel contains every kernels/*.py as tiphys/kernels/*.py."""
import glob
import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_wheel_contains_all_kernels(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), REPO], check=True, capture_output=True)
    wheels = glob.glob(str(tmp_path / "tiphys-*.whl"))
    assert len(wheels) == 1
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    kernels = [os.path.basename(p) for p in glob.glob(os.path.join(REPO, "kernels", "*.py"))]
    assert kernels
    for k in kernels:
        assert f"tiphys/kernels/{k}" in names, k
    for sub in ("spec", "compiler", "io", "plugin"):
        for p in glob.glob(os.path.join(REPO, "tiphys", sub, "*.py")):
            assert f"tiphys/{sub}/{os.path.basename(p)}" in names, p
