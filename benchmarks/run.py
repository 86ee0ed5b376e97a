"""Benchmark: tiphys kinematics + com_pos over many worlds vs MuJoCo C.

    python benchmarks/run.py            # full table, writes results.json + RESULTS.md
    python benchmarks/run.py --quick    # nworld 1 and 64 only, nothing written

The tables below are the whole configuration: scenes x nworld x precision. Each
(scene, precision) pair runs in its own worker process (a fresh Taichi runtime,
so f64 and f32 never share one). The worker also times MuJoCo, single-threaded,
calling mj_kinematics + mj_comPos once per state from a Python loop, right after
tiphys on the same states; the loop's own cost (setting qpos from Python) is
measured separately and reported.
Dynamics do not exist yet: when `step` lands, this table gains a `step` stage.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPUS = os.environ.get("TIPHYS_CORPUS", os.path.join(REPO, ".cache", "corpus"))


@dataclass(frozen=True)
class Scene:
    name: str
    path: str             # MJCF file; "{corpus}" and "{bundled}" are expanded
    strip: tuple = ()     # top-level sections removed (in both engines) before compiling
    note: str = ""


SCENES = (
    Scene("strider (bundled)", "{bundled}",
          note="`tiphys/scenes/scene.xml`: a 4-legged walker (free joint, 16 hinges) and 5 "
               "free objects"),
    Scene("gym humanoid", "{corpus}/gym/humanoid.xml", strip=("actuator", "tendon"),
          note="gymnasium 1.4.0 `humanoid.xml` from the corpus; `<actuator>` and `<tendon>` "
               "stripped (tiphys does not compile them yet)"),
)
NWORLDS = (1, 64, 1024, 4096)
PRECISIONS = ("f64", "f32")
ARCH = "cpu"
SEED = 0
MIN_TIME = 0.25      # seconds per timed batch
BATCHES = 3          # timed batches; the median is reported
CHECK_WORLDS = 8     # worlds compared against MuJoCo per configuration


# --------------------------------------------------------------------------- scenes


def scene_file(scene: Scene) -> str:
    from tiphys.scenes import scene_path
    return scene.path.format(corpus=CORPUS, bundled=scene_path())


def scene_xml(scene: Scene) -> bytes:
    """The scene's MJCF with the ``strip`` sections removed."""
    from lxml import etree

    path = scene_file(scene)
    tree = etree.parse(path)
    root = tree.getroot()
    for tag in scene.strip:
        for el in root.findall(tag):
            root.remove(el)
    for key in root.iter("key"):  # keyframe ctrl/act index the stripped actuators
        if "actuator" in scene.strip:
            key.attrib.pop("ctrl", None)
            key.attrib.pop("act", None)
    return etree.tostring(tree)


def materialize(scene: Scene) -> str:
    """A file with the scene as benchmarked, next to the original (relative assets work)."""
    path = scene_file(scene)
    if not scene.strip:
        return path
    fd, out = tempfile.mkstemp(prefix=".bench-", suffix=".xml", dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
        f.write(scene_xml(scene))
    return out


# --------------------------------------------------------------------------- timing


def time_per_call(fn, min_time=MIN_TIME, batches=BATCHES) -> float:
    """Median seconds per ``fn()`` over ``batches`` batches of >= ``min_time`` each."""
    fn()
    reps, elapsed = 1, 0.0
    while True:  # calibrate the batch size
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time or reps >= 1 << 20:
            break
        reps = max(reps * 2, int(reps * min_time / max(elapsed, 1e-9)) + 1)
    samples = [elapsed / reps]
    for _ in range(batches - 1):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        samples.append((time.perf_counter() - t0) / reps)
    return float(np.median(samples))


# --------------------------------------------------------------------------- worker


def worker(scene_index: int, precision: str, nworlds: tuple, path: str) -> None:
    """Time tiphys on one scene at one precision; progress and a JSON result on stdout."""
    import mujoco
    import taichi as ti

    import tiphys
    from tiphys.cli import count_launches, float_np_dtype, random_qpos

    scene = SCENES[scene_index]
    t0 = time.perf_counter()
    tiphys.init(arch=ARCH, precision=precision)
    t_init = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = tiphys.load_model(path)
    t_model = time.perf_counter() - t0
    mjm = mujoco.MjModel.from_xml_path(path)
    mjd = mujoco.MjData(mjm)

    rows = []
    for nworld in nworlds:
        t0 = time.perf_counter()
        d = tiphys.make_data(m, nworld)
        t_data = time.perf_counter() - t0
        qpos = random_qpos(m.arrays, nworld, np.random.default_rng(SEED))
        d.qpos.from_numpy(qpos.astype(float_np_dtype(d.qpos)))

        def call(d=d):
            tiphys.kinematics(m, d)
            tiphys.com_pos(m, d)
            ti.sync()

        t0 = time.perf_counter()
        call()
        t_first = time.perf_counter() - t0
        with count_launches() as launches:
            tiphys.kinematics(m, d)
            tiphys.com_pos(m, d)
        ti.sync()
        per_call = time_per_call(call)

        err = {}
        for worldid in range(min(nworld, CHECK_WORLDS)):
            mjd.qpos[:] = qpos[worldid]
            mujoco.mj_kinematics(mjm, mjd)
            mujoco.mj_comPos(mjm, mjd)
            for name in ("xpos", "xmat", "subtree_com", "cinert", "cdof"):
                ours = d.numpy(name)[worldid].reshape(-1)
                theirs = np.asarray(getattr(mjd, name)).reshape(-1)
                err[name] = max(err.get(name, 0.0), float(np.abs(ours - theirs).max()))
        row = dict(scene=scene.name, precision=precision, arch=ARCH, nworld=nworld,
                   tiphys_s_per_call=per_call, tiphys_evals_per_s=nworld / per_call,
                   launches_per_call=launches["n"], first_call_s=t_first,
                   make_data_s=t_data, max_abs_err=max(err.values()), err=err)
        row.update(mujoco_timing(mjm, mjd, qpos))
        row["ratio"] = row["tiphys_evals_per_s"] / row["mujoco_evals_per_s"]
        rows.append(row)
        print(f"PROGRESS {nworld}", flush=True)
    print("RESULT " + json.dumps(dict(
        init_s=t_init, load_model_s=t_model, rows=rows,
        sizes=dict(nq=m.nq, nv=m.nv, nbody=m.nbody, njnt=m.njnt, ngeom=m.ngeom,
                   nsite=m.nsite))), flush=True)


def run_worker(scene_index, precision, nworlds, path, progress, task) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(scene_index),
           "--precision", precision, "--nworld", ",".join(map(str, nworlds)), "--path", path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    result = None
    for line in proc.stdout:
        if line.startswith("PROGRESS"):
            progress.update(task, advance=1)
        elif line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
    stderr = proc.stderr.read()
    if proc.wait() != 0 or result is None:
        raise RuntimeError(f"worker {cmd} failed:\n{stderr}")
    return result


# --------------------------------------------------------------------------- MuJoCo


def mujoco_timing(mjm, mjd, states: np.ndarray) -> dict:
    """MuJoCo C: mj_kinematics + mj_comPos on each state from a Python loop.

    Runs in the worker right after the tiphys timing of the same states, so both
    engines see the same load on a shared machine.
    """
    import mujoco

    nworld = len(states)

    def evaluate():
        for q in states:
            mjd.qpos[:] = q
            mujoco.mj_kinematics(mjm, mjd)
            mujoco.mj_comPos(mjm, mjd)

    def loop_only():
        for q in states:
            mjd.qpos[:] = q

    per_pass = time_per_call(evaluate)
    overhead = time_per_call(loop_only)
    return dict(mujoco_s_per_pass=per_pass, mujoco_evals_per_s=nworld / per_pass,
                mujoco_loop_overhead_s_per_eval=overhead / nworld,
                mujoco_loop_overhead_frac=overhead / per_pass,
                mujoco_c_only_evals_per_s=nworld / max(per_pass - overhead, 1e-12))


# --------------------------------------------------------------------------- report


def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import mujoco
    import taichi

    import tiphys
    return dict(nproc=os.cpu_count(), cpu=cpu, platform=platform.platform(),
                loadavg_before=round(os.getloadavg()[0], 2),
                python=platform.python_version(), numpy=np.__version__,
                taichi=".".join(map(str, taichi.__version__)), mujoco=mujoco.__version__,
                tiphys=tiphys.__version__,
                date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))


def _si(x: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def markdown(results: dict) -> str:
    mach = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`benchmarks/run.py`); raw numbers in `results.json`.",
        "",
        f"- date: {mach['date']}; whole run {results['total_s']:.0f} s",
        f"- machine: {mach['nproc']} CPU cores, {mach['cpu']} ({mach['platform']})",
        f"- load average (1 min) when the run started: {mach['loadavg_before']}, when it "
        f"ended: {mach.get('loadavg_after', '?')} (other work on the machine skews numbers)",
        f"- versions: tiphys {mach['tiphys']}, Taichi {mach['taichi']}, MuJoCo "
        f"{mach['mujoco']}, numpy {mach['numpy']}, Python {mach['python']}",
        "",
        "What is measured: one call of `tiphys.kinematics` + `tiphys.com_pos` on `nworld` "
        "worlds at once (Taichi CPU backend, all cores, `ti.sync()` included), against MuJoCo "
        "C running `mj_kinematics` + `mj_comPos` on the same `nworld` random states one after "
        "another from a Python loop (one thread). Rates are world-evaluations per second; "
        "ratio = tiphys / MuJoCo. MuJoCo is timed in the same worker process right after "
        "tiphys on the same states (so both see the same machine load), once next to the "
        "f64 run and once next to the f32 run; each ratio uses its own neighbour. Each time "
        f"is the median of {BATCHES} batches of at least {MIN_TIME} s. Dynamics (`step`) do "
        "not exist yet, so this is the only stage chain there is to time.",
        "",
        "MuJoCo's Python loop costs something too: `MuJoCo loop share` is the part of "
        "MuJoCo's time spent iterating and setting `qpos` from Python (measured with the "
        "`mj_*` calls left out); `MuJoCo C only` removes it (the ratios do not: they compare "
        "what a Python user gets). `err` is the largest absolute difference to MuJoCo over "
        f"xpos, xmat, subtree_com, cinert, cdof on {CHECK_WORLDS} worlds.",
        "",
    ]
    for scene in results["scenes"]:
        s = scene["sizes"]
        lines += [f"## {scene['name']}", "",
                  f"{scene['note']}. nq={s['nq']} nv={s['nv']} nbody={s['nbody']} "
                  f"njnt={s['njnt']} ngeom={s['ngeom']} nsite={s['nsite']}.", "",
                  "| nworld | tiphys f64 | MuJoCo | ratio f64 | tiphys f32 | MuJoCo "
                  "| ratio f32 | MuJoCo loop share | MuJoCo C only | launches/call "
                  "| err f64 | err f32 |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in scene["table"]:
            f64, f32 = row["f64"], row["f32"]
            loop = 0.5 * (f64["mujoco_loop_overhead_frac"] + f32["mujoco_loop_overhead_frac"])
            c_only = 0.5 * (f64["mujoco_c_only_evals_per_s"] + f32["mujoco_c_only_evals_per_s"])
            lines.append(
                f"| {row['nworld']} | {_si(f64['tiphys_evals_per_s'])}/s "
                f"| {_si(f64['mujoco_evals_per_s'])}/s | **{f64['ratio']:.2f}x** "
                f"| {_si(f32['tiphys_evals_per_s'])}/s "
                f"| {_si(f32['mujoco_evals_per_s'])}/s | **{f32['ratio']:.2f}x** "
                f"| {100 * loop:.0f}% | {_si(c_only)}/s | {f64['launches_per_call']} "
                f"| {f64['max_abs_err']:.1e} | {f32['max_abs_err']:.1e} |")
        first = {p: scene["workers"][p]["rows"][0]["first_call_s"] for p in scene["workers"]}
        load = {p: scene["workers"][p]["load_model_s"] for p in scene["workers"]}
        one = {p: scene["workers"][p]["rows"][0] for p in scene["workers"]}
        if one["f64"]["nworld"] == 1:
            lines += ["", f"At nworld 1 a call takes {one['f64']['tiphys_s_per_call'] * 1e3:.2f} "
                      f"ms (f64) for {one['f64']['launches_per_call']} kernel launches: that is "
                      "launch overhead, not arithmetic; batching is what amortises it."]
        lines += ["", "Start-up (per worker process): load_model "
                  + ", ".join(f"{p} {load[p]:.2f} s" for p in load)
                  + "; first kinematics+com_pos call (Taichi compile or offline-cache load) "
                  + ", ".join(f"{p} {first[p]:.2f} s" for p in first) + ".", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="nworld 1 and 64 only; write nothing")
    parser.add_argument("--out", default=HERE, help="folder for results.json and RESULTS.md")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--precision", help=argparse.SUPPRESS)
    parser.add_argument("--nworld", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.precision, tuple(int(n) for n in args.nworld.split(",")),
               args.path)
        return 0

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console()
    nworlds = (1, 64) if args.quick else NWORLDS
    scenes = [s for s in SCENES if os.path.isfile(scene_file(s))]
    for s in SCENES:
        if s not in scenes:
            console.print(f"[yellow]skipping {s.name}[/yellow]: {scene_file(s)} not found "
                          f"(run `make corpus`)")
    t_start = time.perf_counter()
    results = dict(machine=machine_info(), config=dict(
        nworlds=nworlds, precisions=PRECISIONS, arch=ARCH, seed=SEED, min_time=MIN_TIME,
        batches=BATCHES), scenes=[])
    with Progress("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        for scene in scenes:
            path = materialize(scene)
            try:
                workers = {}
                for precision in PRECISIONS:
                    task = progress.add_task(f"{scene.name}: tiphys {ARCH} {precision} + MuJoCo",
                                             total=len(nworlds))
                    workers[precision] = run_worker(SCENES.index(scene), precision, nworlds,
                                                    path, progress, task)
            finally:
                if path != scene_file(scene):
                    os.remove(path)
            table = []
            for i, nworld in enumerate(nworlds):
                row = {"nworld": nworld}
                for precision in PRECISIONS:
                    row[precision] = workers[precision]["rows"][i]
                table.append(row)
            entry = asdict(scene)
            entry.update(sizes=workers[PRECISIONS[0]]["sizes"], workers=workers, table=table)
            results["scenes"].append(entry)
    results["total_s"] = time.perf_counter() - t_start
    results["machine"]["loadavg_after"] = round(os.getloadavg()[0], 2)
    text = markdown(results)
    console.print(text, soft_wrap=True, markup=False, highlight=False)
    if not args.quick:
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        md_path = os.path.join(args.out, "RESULTS.md")
        kept = ""  # the sections the other bench_*.py scripts write (from the first
        if os.path.exists(md_path):  # "<!-- bench" marker on) survive
            old = open(md_path).read()
            if "<!-- bench" in old:
                kept = "\n" + old[old.index("<!-- bench"):]
        with open(md_path, "w") as f:
            f.write(text + "\n" + kept)
        console.print(f"wrote {args.out}/results.json and RESULTS.md "
                      f"({results['total_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
