#!/bin/bash
# Prepare .whl/ (git-ignored through .git/info/exclude) with what a lent GPU machine
# lacks for tiphys: taichi 1.7.4 for CPython 3.12 without its C API library, examples
# and headers (56 MB -> 35 MB, so that the repository and a corpus subset fit in the
# 64 MiB a device call carries), mujoco 3.4.0 and the small pure-Python needs.
# Run once, here, from the repository root: tools/device/make_wheels.sh
set -euo pipefail
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$@"; }
dl mujoco==3.4.0 glfw==2.11.0 pyopengl==3.1.10 trimesh==5.2.0 dill==0.4.1
if [ ! -f .whl/taichi-slim.zip ]; then
  tmp=$(mktemp -d)
  dl taichi==1.7.4 -d "$tmp"
  python3 - "$tmp"/taichi-1.7.4-*.whl .whl/taichi-slim.zip <<'PY'
import sys, zipfile
src, dst = sys.argv[1:]
drop = ("taichi/examples/", "taichi/_lib/c_api/", "taichi-1.7.4.data/data/include/",
        "taichi-1.7.4.data/data/lib/cmake/", "taichi-1.7.4.data/data/share/",
        "taichi/assets/static/imgs/")
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
    for item in zin.infolist():
        if not item.filename.startswith(drop):
            zout.writestr(item, zin.read(item.filename))
PY
  rm -rf "$tmp"
fi
cp tools/device/check.sh .whl/
du -sh .whl
