"""Fetch third-party MJCF models into an ignored cache (used by the tests).

- mujoco-warp==3.5.0 wheel: its mujoco_warp/test_data folder  -> <dest>/mjwarp
- gymnasium wheel: gymnasium/envs/mujoco/assets                -> <dest>/gym
- the installed mujoco wheel's testdata folder                -> <dest>/mjtest
- dm_control==1.0.50 wheel: dm_control/suite (robots with many sensors) -> <dest>/dmc
Models are read from here at test time; nothing is copied into the repository.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

WHEELS = {
    "mjwarp": ("mujoco-warp==3.5.0", "mujoco_warp/test_data/"),
    "gym": ("gymnasium==1.4.0", "gymnasium/envs/mujoco/assets/"),
    "dmc": ("dm_control==1.0.50", "dm_control/suite/"),
}


def _extract(wheel: str, prefix: str, dest: str) -> int:
    n = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                out = os.path.join(dest, name[len(prefix):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(name) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                n += 1
    return n


def main(dest: str) -> None:
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for key, (req, prefix) in WHEELS.items():
            target = os.path.join(dest, key)
            if os.path.isdir(target) and os.listdir(target):
                continue
            subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                   "--only-binary=:all:", "-d", tmp, req])
            wheel = [f for f in os.listdir(tmp) if f.lower().startswith(
                req.split("==")[0].replace("-", "_")) and f.endswith(".whl")]
            if not wheel:
                raise SystemExit(f"no wheel downloaded for {req}")
            n = _extract(os.path.join(tmp, wheel[0]), prefix, target)
            print(f"corpus: {n} files from {req} -> {target}")
    import mujoco
    src = os.path.join(os.path.dirname(mujoco.__file__), "testdata")
    target = os.path.join(dest, "mjtest")
    if os.path.isdir(src) and not os.path.isdir(target):
        shutil.copytree(src, target)
        print(f"corpus: mujoco testdata -> {target}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(".cache", "corpus"))
