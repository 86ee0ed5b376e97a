"""Benchmark: tiphys stage chains over many worlds vs MuJoCo C.

    python benchmarks/run.py                      # every benchmark, every nworld
    python benchmarks/run.py step --nworld 1 64   # one benchmark, chosen sizes
    tiphys bench --quick --out /tmp/bench         # the same through the CLI

Benchmarks (``BENCHES``): ``kinematics`` times ``tiphys.kinematics`` +
``tiphys.com_pos``; ``step`` times ``--steps`` calls of ``tiphys.step`` (the whole
pipeline: collision, constraints, actuators, tendons, the model's integrator). The
tables below are the rest of the configuration: scenes x nworld x precision. Each
(scene, precision) pair runs in its own worker process (a fresh Taichi runtime, so
f64 and f32 never share one). The worker also times MuJoCo, single-threaded, running
the same chain (mj_kinematics + mj_comPos, or mj_step) on the same states from a
Python loop, right after tiphys; the loop's own cost (setting the state from Python)
is measured separately and reported.

Results (results.json and RESULTS.md) go to ``--out`` (default
~/.cache/tiphys/bench, or $XDG_CACHE_HOME/tiphys/bench): never into the checkout.
The other scripts in this folder (bench_step.py, bench_contact.py, ...) time more
specialised set-ups and keep their own sections of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
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
    note: str = ""


SCENES = (
    Scene("strider (bundled)", "{bundled}",
          note="`tiphys/scenes/scene.xml`: a 4-legged walker (free joint, 16 hinges, 12 "
               "position servos) and 5 free objects"),
    Scene("gym humanoid", "{corpus}/gym/humanoid.xml",
          note="gymnasium 1.4.0 `humanoid.xml` from the corpus, as the file is (17 motors, "
               "fixed tendons, contacts)"),
)
# what each benchmark times: (tiphys functions, MuJoCo functions, what one call is)
BENCHES = {
    "kinematics": (("kinematics", "com_pos"), ("mj_kinematics", "mj_comPos"),
                   "one call of kinematics + com_pos"),
    "step": (("step",), ("mj_step",), "--steps calls of step"),
}
NWORLDS = (1, 64, 1024, 4096)
QUICK_NWORLDS = (1, 64)
STEPS = 10           # step calls per timed call of the step benchmark
PRECISIONS = ("f64", "f32")
ARCH = "cpu"
SEED = 0
MIN_TIME = 0.25      # seconds per timed batch
BATCHES = 3          # timed batches; the median is reported
CHECK_WORLDS = 8     # worlds compared against MuJoCo per configuration


def default_out() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tiphys", "bench")


# --------------------------------------------------------------------------- scenes


def scene_file(scene: Scene) -> str:
    from tiphys.scenes import scene_path
    return scene.path.format(corpus=CORPUS, bundled=scene_path())


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


def worker(scene_index: int, precision: str, nworlds: tuple, path: str, benches: tuple,
           steps: int) -> None:
    """Time tiphys on one scene at one precision; progress and a JSON result on stdout."""
    import mujoco
    import taichi as ti

    import tiphys
    from tiphys.cli import random_qpos
    from tiphys.launch import count_launches
    from tiphys.scenes.gait import float_np_dtype

    t0 = time.perf_counter()
    tiphys.init(arch=ARCH, precision=precision)
    t_init = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = tiphys.load_model(path)
    t_model = time.perf_counter() - t0
    mjm = mujoco.MjModel.from_xml_path(path)
    mjd = mujoco.MjData(mjm)

    rows = []
    for bench in benches:
        ours, theirs, _ = BENCHES[bench]
        nstep = steps if bench == "step" else 1
        for nworld in nworlds:
            t0 = time.perf_counter()
            d = tiphys.make_data(m, nworld)
            t_data = time.perf_counter() - t0
            qpos = random_qpos(m.arrays, nworld, np.random.default_rng(SEED))

            def start(d=d):
                d.qpos.from_numpy(qpos.astype(float_np_dtype(d.qpos)))

            def call(d=d):
                for _ in range(nstep):
                    for name in ours:
                        getattr(tiphys, name)(m, d)
                ti.sync()

            start()
            t0 = time.perf_counter()
            call()
            t_first = time.perf_counter() - t0
            start()
            with count_launches() as launches:
                for name in ours:
                    getattr(tiphys, name)(m, d)
            ti.sync()
            start()
            per_call = time_per_call(call)

            # correctness: one pass of the chain from the same state in both engines
            tiphys.reset_data(m, d)
            start()
            for name in ours:
                getattr(tiphys, name)(m, d)
            fields = ("xpos", "xmat", "subtree_com", "cinert", "cdof") if bench != "step" \
                else ("qpos", "qvel")
            err = {}
            for worldid in range(min(nworld, CHECK_WORLDS)):
                mujoco.mj_resetData(mjm, mjd)
                mjd.qpos[:] = qpos[worldid]
                for name in theirs:
                    getattr(mujoco, name)(mjm, mjd)
                for name in fields:
                    a = d.numpy(name)[worldid].reshape(-1)
                    b = np.asarray(getattr(mjd, name)).reshape(-1)
                    err[name] = max(err.get(name, 0.0), float(np.abs(a - b).max()))
            row = dict(bench=bench, precision=precision, arch=ARCH, nworld=nworld,
                       steps_per_call=nstep, tiphys_s_per_call=per_call,
                       tiphys_evals_per_s=nworld * nstep / per_call,
                       launches_per_call=launches["n"], first_call_s=t_first,
                       make_data_s=t_data, max_abs_err=max(err.values()), err=err)
            row.update(mujoco_timing(mjm, mjd, qpos, theirs, nstep))
            row["ratio"] = row["tiphys_evals_per_s"] / row["mujoco_evals_per_s"]
            rows.append(row)
            print(f"PROGRESS {bench} {nworld}", flush=True)
    print("RESULT " + json.dumps(dict(
        init_s=t_init, load_model_s=t_model, rows=rows,
        sizes=dict(nq=m.nq, nv=m.nv, nu=m.nu, nbody=m.nbody, njnt=m.njnt, ngeom=m.ngeom,
                   nsite=m.nsite, ntendon=m.ntendon))), flush=True)


def run_worker(scene_index, precision, nworlds, path, benches, steps, progress, task) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), *benches, "--worker", str(scene_index),
           "--precision", precision, "--nworld", *map(str, nworlds), "--path", path,
           "--steps", str(steps)]
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


def mujoco_timing(mjm, mjd, states: np.ndarray, functions=("mj_kinematics", "mj_comPos"),
                  nstep: int = 1) -> dict:
    """MuJoCo C: ``functions`` (``nstep`` times) on each state from a Python loop.

    Runs in the worker right after the tiphys timing of the same states, so both
    engines see the same load on a shared machine.
    """
    import mujoco

    nworld = len(states)
    calls = [getattr(mujoco, name) for name in functions]

    def evaluate():
        for q in states:
            mujoco.mj_resetData(mjm, mjd)
            mjd.qpos[:] = q
            for _ in range(nstep):
                for fn in calls:
                    fn(mjm, mjd)

    def loop_only():
        for q in states:
            mujoco.mj_resetData(mjm, mjd)
            mjd.qpos[:] = q

    per_pass = time_per_call(evaluate)
    overhead = time_per_call(loop_only)
    evals = nworld * nstep
    return dict(mujoco_s_per_pass=per_pass, mujoco_evals_per_s=evals / per_pass,
                mujoco_loop_overhead_s_per_eval=overhead / evals,
                mujoco_loop_overhead_frac=overhead / per_pass,
                mujoco_c_only_evals_per_s=evals / max(per_pass - overhead, 1e-12))


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
    cfg = results["config"]
    precisions = tuple(cfg["precisions"])
    lines = [
        "# Benchmarks",
        "",
        "Written by `benchmarks/run.py` (`tiphys bench`); raw numbers in `results.json`.",
        "",
        f"- date: {mach['date']}; whole run {results['total_s']:.0f} s",
        f"- machine: {mach['nproc']} CPU cores, {mach['cpu']} ({mach['platform']})",
        f"- load average (1 min) when the run started: {mach['loadavg_before']}, when it "
        f"ended: {mach.get('loadavg_after', '?')} (other work on the machine skews numbers)",
        f"- versions: tiphys {mach['tiphys']}, Taichi {mach['taichi']}, MuJoCo "
        f"{mach['mujoco']}, numpy {mach['numpy']}, Python {mach['python']}",
        "",
        "What is measured, per benchmark: `kinematics` is one call of `tiphys.kinematics` + "
        "`tiphys.com_pos`; `step` is "
        f"{cfg['steps']} calls of `tiphys.step` (the whole pipeline, the model's own "
        "options). tiphys runs on `nworld` worlds at once (Taichi CPU backend, all cores, "
        "`ti.sync()` included); MuJoCo C runs the same chain (`mj_kinematics` + `mj_comPos`, "
        "or `mj_step`) on the same `nworld` random states one after another from a Python "
        "loop (one thread). Rates are world-evaluations (world-steps) per second; ratio = "
        "tiphys / MuJoCo. MuJoCo is timed in the same worker process right after tiphys on "
        "the same states (so both see the same machine load), next to each precision's "
        f"run; each ratio uses its own neighbour. Each time is the median of {BATCHES} "
        f"batches of at least {MIN_TIME} s.",
        "",
        "MuJoCo's Python loop costs something too: `MuJoCo loop share` is the part of "
        "MuJoCo's time spent iterating and setting the state from Python (measured with "
        "the `mj_*` calls left out); `MuJoCo C only` removes it (the ratios do not: they "
        "compare what a Python user gets). `err` is the largest absolute difference to "
        "MuJoCo after one pass of the chain from the same state (kinematics: xpos, xmat, "
        f"subtree_com, cinert, cdof; step: qpos, qvel) on {CHECK_WORLDS} worlds.",
        "",
    ]
    for scene in results["scenes"]:
        s = scene["sizes"]
        lines += [f"## {scene['name']}", "",
                  f"{scene['note']}. nq={s['nq']} nv={s['nv']} nu={s.get('nu', 0)} "
                  f"nbody={s['nbody']} njnt={s['njnt']} ngeom={s['ngeom']} "
                  f"nsite={s['nsite']}.", ""]
        for bench in cfg["benches"]:
            head = "| nworld | " + " | ".join(
                f"tiphys {p} | MuJoCo | ratio {p}" for p in precisions) + \
                " | MuJoCo loop share | MuJoCo C only | launches/call | " + \
                " | ".join(f"err {p}" for p in precisions) + " |"
            ncol = head.count("|") - 1
            what = BENCHES[bench][2].replace("--steps", str(cfg["steps"]))
            lines += [f"### {bench}: {what}", "", head,
                      "|" + "---:|" * ncol]
            for row in scene["table"]:
                cells = [row[p][bench] for p in precisions]
                loop = np.mean([c["mujoco_loop_overhead_frac"] for c in cells])
                c_only = np.mean([c["mujoco_c_only_evals_per_s"] for c in cells])
                parts = [str(row["nworld"])]
                for c in cells:
                    parts += [f"{_si(c['tiphys_evals_per_s'])}/s",
                              f"{_si(c['mujoco_evals_per_s'])}/s", f"**{c['ratio']:.2f}x**"]
                parts += [f"{100 * loop:.0f}%", f"{_si(c_only)}/s",
                          str(cells[0]["launches_per_call"])]
                parts += [f"{c['max_abs_err']:.1e}" for c in cells]
                lines.append("| " + " | ".join(parts) + " |")
            lines.append("")
        load = {p: scene["workers"][p]["load_model_s"] for p in scene["workers"]}
        lines += ["Start-up (per worker process): load_model "
                  + ", ".join(f"{p} {load[p]:.2f} s" for p in load)
                  + "; the first call of each benchmark (Taichi compile or offline-cache "
                  "load) is in results.json (`first_call_s`).", ""]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The benchmark options (shared with `tiphys bench`)."""
    parser = argparse.ArgumentParser(
        prog="tiphys bench", description="Time tiphys against MuJoCo C on many worlds.")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("benches", nargs="*", metavar="BENCH", default=[],
                        help=f"benchmarks to run: {', '.join(BENCHES)} (default: all)")
    parser.add_argument("--nworld", type=int, nargs="+", metavar="N",
                        help=f"world counts (default: {' '.join(map(str, NWORLDS))}; "
                             f"--quick: {' '.join(map(str, QUICK_NWORLDS))})")
    parser.add_argument("--steps", type=int, default=STEPS,
                        help=f"step calls per timed call of the step benchmark "
                             f"(default {STEPS})")
    parser.add_argument("--precision", nargs="+", choices=PRECISIONS,
                        default=list(PRECISIONS), help="precisions (default: f64 f32)")
    parser.add_argument("--scene", nargs="+", metavar="NAME",
                        help="scenes whose name contains NAME (default: all: "
                             + ", ".join(s.name for s in SCENES) + ")")
    parser.add_argument("--quick", action="store_true",
                        help=f"nworld {' and '.join(map(str, QUICK_NWORLDS))} only")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help=f"folder for results.json and RESULTS.md (default "
                             f"{default_out()}; never the checkout unless given)")


def check_arguments(args) -> None:
    """ValueError for bad benchmark arguments (before any work)."""
    unknown = [b for b in args.benches if b not in BENCHES]
    if unknown:
        raise ValueError(f"unknown benchmark {', '.join(unknown)}: choose from "
                         f"{', '.join(BENCHES)}")
    if args.nworld is not None and min(args.nworld) < 1:
        raise ValueError("--nworld values must be >= 1")
    if args.steps < 1:
        raise ValueError("--steps must be >= 1")
    if args.scene:
        names = [s.name for s in SCENES]
        for want in args.scene:
            if not any(want.lower() in n.lower() for n in names):
                raise ValueError(f"no scene matches {want!r}: scenes are {', '.join(names)}")


def main(argv=None) -> int:
    parser = build_parser()
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    benches = tuple(args.benches) or tuple(BENCHES)
    if args.worker is not None:
        worker(args.worker, args.precision[0], tuple(args.nworld), args.path, benches,
               args.steps)
        return 0
    try:
        check_arguments(args)
    except ValueError as exc:
        parser.error(str(exc))

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console()
    out_dir = os.path.abspath(args.out or default_out())
    os.makedirs(out_dir, exist_ok=True)
    nworlds = tuple(args.nworld) if args.nworld else \
        (QUICK_NWORLDS if args.quick else NWORLDS)
    precisions = tuple(args.precision)
    chosen = [s for s in SCENES if not args.scene or
              any(w.lower() in s.name.lower() for w in args.scene)]
    scenes = [s for s in chosen if os.path.isfile(scene_file(s))]
    for s in chosen:
        if s not in scenes:
            console.print(f"[yellow]skipping {s.name}[/yellow]: {scene_file(s)} not found "
                          f"(run `make corpus`)")
    t_start = time.perf_counter()
    results = dict(machine=machine_info(), config=dict(
        benches=benches, nworlds=nworlds, precisions=precisions, steps=args.steps,
        arch=ARCH, seed=SEED, min_time=MIN_TIME, batches=BATCHES), scenes=[])
    with Progress("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        for scene in scenes:
            path = scene_file(scene)
            workers = {}
            for precision in precisions:
                task = progress.add_task(f"{scene.name}: tiphys {ARCH} {precision} + MuJoCo",
                                         total=len(nworlds) * len(benches))
                workers[precision] = run_worker(SCENES.index(scene), precision, nworlds,
                                                path, benches, args.steps, progress, task)
            table = []
            for i, nworld in enumerate(nworlds):
                row = {"nworld": nworld}
                for precision in precisions:
                    row[precision] = {r["bench"]: r for r in workers[precision]["rows"]
                                      if r["nworld"] == nworld}
                table.append(row)
            entry = asdict(scene)
            entry.update(sizes=workers[precisions[0]]["sizes"], workers=workers, table=table)
            results["scenes"].append(entry)
    results["total_s"] = time.perf_counter() - t_start
    results["machine"]["loadavg_after"] = round(os.getloadavg()[0], 2)
    text = markdown(results)
    console.print(text, soft_wrap=True, markup=False, highlight=False)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    md_path = os.path.join(out_dir, "RESULTS.md")
    kept = ""  # the sections the other bench_*.py scripts write (from the first
    if os.path.exists(md_path):  # "<!-- bench" marker on) survive
        old = open(md_path).read()
        if "<!-- bench" in old:
            kept = "\n" + old[old.index("<!-- bench"):]
    with open(md_path, "w") as f:
        f.write(text + "\n" + kept)
    console.print(f"wrote {out_dir}/results.json and RESULTS.md "
                  f"({results['total_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
