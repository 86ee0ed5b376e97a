"""Fetch third-party MJCF models into an ignored cache (used by the tests).

- mujoco-warp==3.5.0 wheel: its mujoco_warp/test_data folder  -> <dest>/mjwarp
- gymnasium wheel: gymnasium/envs/mujoco/assets                -> <dest>/gym
- the installed mujoco wheel's testdata folder                -> <dest>/mjtest
- pybullet==3.2.7 wheel (any platform's: only its data is read): the URDF files of
  pybullet_data with the OBJ/STL meshes beside them             -> <dest>/urdf/pybullet
- dm_control==1.0.50 wheel: dm_control/suite (robots with many sensors) -> <dest>/dmc
- metaworld==3.1.1 wheel: metaworld/assets (Sawyer scenes and objects) -> <dest>/metaworld
- gymnasium-robotics==1.4.2 wheel: gymnasium_robotics/envs/assets (Fetch, Shadow hand,
  Adroit, mazes, kitchen)                                       -> <dest>/gymrobotics
- robosuite==1.5.2 wheel: robosuite/models/assets (robots, grippers, arenas, objects;
  157 MB download, 525 MB unpacked)                              -> <dest>/robosuite
- loco-mujoco==0.4.1 source archive (its only distribution with the models; 30 MB):
  loco_mujoco/environments/data (Atlas, Talos, Unitree H1/G1/A1, a torque and a muscle
  humanoid, the MyoSkeleton)                                     -> <dest>/loco
- Menagerie robots, through the mujoco-menagerie==2026.10.4 package (a 30 kB wheel
  whose registry pins each robot's archive; the archives come from the Menagerie
  GitHub releases): each robot folder's XML files and asset folders
  -> <dest>/menagerie/<robot>, plus <dest>/menagerie/index.json (robot -> default
  scene). Only on request, since the archives are not on PyPI: ``--menagerie``
  takes MENAGERIE_ROBOTS (the large robots the compile benchmark and
  tests/test_compile_speed.py use, ~75 MB to download), ``--menagerie-all`` all 69
  (~240 MB download, ~1.7 GB unpacked). Where the archives cannot be downloaded
  this source is skipped with a warning, and what uses it skips too.
Models are read from here at test time; nothing is copied into the repository.

    python tools/fetch_corpus.py [DEST] [--menagerie | --menagerie-all]
"""
from __future__ import annotations

import json
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
    "metaworld": ("metaworld==3.1.1", "metaworld/assets/"),
    "robosuite": ("robosuite==1.5.2", "robosuite/models/assets/"),
    "gymrobotics": ("gymnasium-robotics==1.4.2", "gymnasium_robotics/envs/assets/"),
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


MENAGERIE = "mujoco-menagerie==2026.10.4"
MENAGERIE_ROBOTS = ("berkeley_humanoid", "apptronik_apollo", "robotis_op3", "leap_hand",
                    "unitree_g1", "shadow_hand", "pndbotics_adam_lite", "flybody",
                    "rainbow_robotics_rby1")


def _copy_robot(src: str, dst: str) -> int:
    """A robot folder's XML files and its asset folders (no thumbnails, READMEs)."""
    n = 0
    for dirpath, _, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for f in files:
            if rel == "." and not f.endswith(".xml"):
                continue
            if f.startswith("."):  # the cache's own markers
                continue
            out = os.path.join(dst, rel, f)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            shutil.copyfile(os.path.join(dirpath, f), out)
            n += 1
    return n


def fetch_menagerie(dest: str, robots=MENAGERIE_ROBOTS) -> list:
    """Menagerie robots (names; None: all) into <dest>/menagerie; returns the robots
    now present. Robots already there are kept; download failures are warnings."""
    target = os.path.join(dest, "menagerie")
    index_path = os.path.join(target, "index.json")
    index = {}
    if os.path.isfile(index_path):
        with open(index_path) as f:
            index = json.load(f)
    if robots is not None and all(r in index for r in robots):
        return sorted(index)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--only-binary=:all:", "-d", tmp, MENAGERIE])
        wheel = [f for f in os.listdir(tmp) if f.startswith("mujoco_menagerie")][0]
        pkg = os.path.join(tmp, "pkg")
        with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
            z.extractall(pkg)
        sys.path.insert(0, pkg)
        try:
            import mujoco_menagerie as mm
            from mujoco_menagerie._errors import MenagerieError
        finally:
            sys.path.remove(pkg)
        cache = mm.Cache(dir=os.path.join(tmp, "cache"))
        for name in (mm.names() if robots is None else robots):
            if name in index:
                continue
            robot = mm.get(name)
            try:
                src = robot.path(cache, progress=None)
            except (MenagerieError, OSError) as exc:
                print(f"corpus: menagerie {name} skipped: {exc}", file=sys.stderr)
                continue
            n = _copy_robot(str(src), os.path.join(target, name))
            scene = robot.default_scene or robot.default_model
            index[name] = {"scene": robot.entry(scene).file, "oid": robot.oid}
            os.makedirs(target, exist_ok=True)
            with open(index_path, "w") as f:
                json.dump(index, f, indent=1, sort_keys=True)
            print(f"corpus: {n} files of menagerie {name} -> {target}/{name}")
    return sorted(index)


URDF_WHEEL = ("pybullet==3.2.7", "pybullet_data/")
URDF_EXTS = (".urdf", ".obj", ".stl")


def fetch_urdf(dest: str, tmp: str) -> None:
    """pybullet_data's URDF files and the meshes in their folders (MuJoCo's URDF reader
    strips mesh paths, so only those beside a URDF can load) -> <dest>/urdf/pybullet."""
    target = os.path.join(dest, "urdf", "pybullet")
    if os.path.isdir(target) and os.listdir(target):
        return
    req, prefix = URDF_WHEEL
    subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                           "--only-binary=:all:", "--python-version", "3.11",
                           "--platform", "manylinux2014_x86_64", "-d", tmp, req])
    wheel = [f for f in os.listdir(tmp) if f.startswith("pybullet-") and f.endswith(".whl")]
    if not wheel:
        raise SystemExit(f"no wheel downloaded for {req}")
    n = 0
    with zipfile.ZipFile(os.path.join(tmp, wheel[0])) as z:
        names = [x for x in z.namelist() if x.startswith(prefix)]
        folders = {os.path.dirname(x) for x in names if x.endswith(".urdf")}
        for name in names:
            if os.path.dirname(name) in folders and name.lower().endswith(URDF_EXTS):
                out = os.path.join(target, name[len(prefix):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(name) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                n += 1
    print(f"corpus: {n} URDF and mesh files from {req} -> {target}")


# sources published only as a source archive: (requirement, folder inside the archive)
SDISTS = {
    "loco": ("loco-mujoco==0.4.1", "loco_mujoco/environments/data/"),
}


def _extract_sdist(archive: str, prefix: str, dest: str) -> int:
    """The files under ``prefix`` (below the archive's top folder) of a .tar.gz source
    archive, without its Python files."""
    import tarfile
    n = 0
    with tarfile.open(archive) as t:
        for member in t.getmembers():
            name = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile() or not name.startswith(prefix) or \
                    name.endswith((".py", ".pyc")):
                continue
            out = os.path.join(dest, name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with t.extractfile(member) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            n += 1
    return n


def fetch_sdists(dest: str, tmp: str) -> None:
    for key, (req, prefix) in SDISTS.items():
        target = os.path.join(dest, key)
        if os.path.isdir(target) and os.listdir(target):
            continue
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--no-binary=:all:", "-d", tmp, req])
        name = req.split("==")[0]
        archive = [f for f in os.listdir(tmp) if f.replace("_", "-").startswith(name + "-")
                   and f.endswith(".tar.gz")]
        if not archive:
            raise SystemExit(f"no source archive downloaded for {req}")
        n = _extract_sdist(os.path.join(tmp, archive[0]), prefix, target)
        print(f"corpus: {n} files from {req} -> {target}")


def main(dest: str, menagerie: str | None = None) -> None:
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
        fetch_urdf(dest, tmp)
        fetch_sdists(dest, tmp)
    import mujoco
    src = os.path.join(os.path.dirname(mujoco.__file__), "testdata")
    target = os.path.join(dest, "mjtest")
    if os.path.isdir(src) and not os.path.isdir(target):
        shutil.copytree(src, target)
        print(f"corpus: mujoco testdata -> {target}")
    if menagerie is not None:
        fetch_menagerie(dest, None if menagerie == "all" else MENAGERIE_ROBOTS)


if __name__ == "__main__":
    flags = {"--menagerie": "large", "--menagerie-all": "all"}
    args = [a for a in sys.argv[1:] if a not in flags]
    chosen = [flags[a] for a in sys.argv[1:] if a in flags]
    main(args[0] if args else os.path.join(".cache", "corpus"),
         chosen[-1] if chosen else None)
