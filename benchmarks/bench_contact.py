"""Benchmark: tiphys.step with contacts (gym humanoid and ant) vs MuJoCo C rollout.

    python benchmarks/bench_contact.py           # nworld 1, 64, 1024, 8192; appends to RESULTS.md
    python benchmarks/bench_contact.py --quick   # nworld 1 and 64, nothing written

Models: the corpus' gymnasium ``humanoid.xml`` (RK4, PGS, 17 motors, fixed tendons)
and ``ant.xml`` (RK4, Newton, 8 motors), exactly as the files are, contacts on.

Start states: 256 base worlds per model, qpos0 with small random joint offsets and
velocities, settled by MuJoCo under random controls until the body lies or stands on
the floor (humanoid 0.9 s, ant 1 s); larger batches reuse them (world w starts from
base w % 256). Controls: uniform in ctrlrange, a new draw every 10 steps, per world.
Both engines run the same steps from the same states with the same controls:
tiphys ``step`` on all worlds at once (Taichi CPU backend, all cores; the control
upload every 10 steps and ``ti.sync()`` included), MuJoCo ``mujoco.rollout.rollout``
with one MjData per core (nthread = os.cpu_count()). Each batch starts from the
start states (re-uploaded, not timed). Rates are world-steps per second, best of 3
batches of at least 0.3 s (tiphys: of 2 batches of 2 steps when steps take seconds).

Also measured, per worker (f64 and f32 each in a fresh process):
- per-stage time: steps run with every stage function of tiphys/forward.py wrapped in
  ``ti.sync()`` (RK4's four forward passes all counted), grouped as in mj_step;
- mean contacts, constraint rows and solver iterations per world, tiphys and MuJoCo
  (a Python mj_step loop; MuJoCo's iterations are its largest island's), over the
  same 50 steps of 32 worlds, and the largest qpos difference after those steps;
- kernel launches per step.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import functools
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np

from results_md import write_section  # benchmarks/ is on sys.path when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARK = "<!-- bench_contact.py -->"

# name, corpus file, settle steps before the timed window
MODELS = (("humanoid", "gym/humanoid.xml", 300), ("ant", "gym/ant.xml", 100))
NWORLDS = (1, 64, 1024, 8192)
QUICK_NWORLDS = (1, 64)
NBASE = 256          # distinct start states per model
HOLD = 10            # steps per control draw
MIN_S = 0.3          # seconds per timed batch
STAGE_NWORLD = 1024  # batch of the per-stage pass (64 with --quick)
STAT_NWORLD, STAT_STEPS = 32, 50

# stage functions of tiphys/forward.py, grouped as mj_step's parts
STAGE_GROUPS = (
    ("kinematics, com_pos, camlight, tendon", ("kinematics", "com_pos", "camlight", "tendon")),
    ("crb, factor_m", ("crb", "factor_m")),
    ("collision", ("collision",)),
    ("make_constraint", ("make_constraint",)),
    ("transmission, velocity, com_vel, reference_constraint, rne",
     ("transmission", "velocity", "com_vel", "reference_constraint", "rne")),
    ("passive, actuation, fwd_acceleration", ("passive", "actuation", "fwd_acceleration")),
    ("solve", ("solve",)),
    ("integrate (euler / implicit / rk4_stage)",
     ("euler", "implicit", "implicitfast", "rk4_stage")),
    ("check (bad qpos/qvel/qacc)", ("check",)),
)


def corpus_path(rel: str) -> str:
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from oracle import corpus_dir
    path = os.path.join(corpus_dir(), rel)
    if not os.path.isfile(path):
        raise SystemExit(f"{path} is missing: run `make corpus` first")
    return path


# --------------------------------------------------------------------------- states


def start_states(mjm, datas, settle: int, seed: int = 0) -> np.ndarray:
    """NBASE full-physics states: qpos0 with small random joint offsets and velocities,
    rolled out by MuJoCo for ``settle`` steps under random controls."""
    import mujoco
    from mujoco import rollout
    rng = np.random.default_rng(seed)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    md = mujoco.MjData(mjm)
    state = np.zeros((NBASE, mujoco.mj_stateSize(mjm, spec)))
    free = 7 if mjm.njnt and mjm.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE else 0
    for w in range(NBASE):
        mujoco.mj_resetData(mjm, md)
        md.qpos[free:] += 0.05 * rng.standard_normal(mjm.nq - free)
        md.qvel[:] = 0.1 * rng.standard_normal(mjm.nv)
        mujoco.mj_getState(mjm, md, state[w], spec)
    ctrl = random_controls(mjm, NBASE, settle, rng)
    out = rollout.rollout(mjm, datas, state, ctrl, nstep=settle)[0]
    return np.ascontiguousarray(out[:, -1])


def random_controls(mjm, nworld: int, nstep: int, rng) -> np.ndarray:
    """(nworld, nstep, nu) controls, uniform in ctrlrange, a new draw every HOLD steps."""
    lo, hi = mjm.actuator_ctrlrange.T
    limited = mjm.actuator_ctrllimited.astype(bool)
    lo, hi = np.where(limited, lo, -1.0), np.where(limited, hi, 1.0)
    nhold = -(-nstep // HOLD)
    draws = rng.uniform(lo, hi, (nworld, nhold, mjm.nu))
    return np.repeat(draws, HOLD, axis=1)[:, :nstep]


def split_state(mjm, state: np.ndarray) -> dict:
    """time, qpos, qvel, act of full-physics states, (nworld, ...) each."""
    import mujoco
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    md = mujoco.MjData(mjm)
    out = {k: [] for k in ("time", "qpos", "qvel", "act")}
    for row in state:
        mujoco.mj_setState(mjm, md, row, spec)
        out["time"].append(md.time)
        out["qpos"].append(md.qpos.copy())
        out["qvel"].append(md.qvel.copy())
        out["act"].append(md.act.copy())
    return {k: np.array(v) for k, v in out.items()}


def _padded(field, value: np.ndarray) -> np.ndarray:
    import taichi as ti
    dtype = field.dtype
    dtype = np.float64 if getattr(dtype, "dtype", dtype) == ti.f64 else np.float32
    full = np.zeros(field.shape, dtype=dtype)
    full[tuple(slice(0, n) for n in value.shape)] = value
    return full


class Runner:
    """tiphys Data for one batch, its start state and control uploads prepared."""

    def __init__(self, m, mjm, base: dict, nworld: int, ctrl: np.ndarray):
        import tiphys
        self.m, self.nworld = m, nworld
        self.d = d = tiphys.make_data(m, nworld)
        idx = np.arange(nworld) % NBASE
        self.start = [(getattr(d, k), _padded(getattr(d, k), v[idx])) for k, v in base.items()]
        self.start.append((d.qacc_warmstart, np.zeros(d.qacc_warmstart.shape,
                                                      self.start[0][1].dtype)))
        self.ctrl = [_padded(d.ctrl, ctrl[:, t]) for t in range(0, ctrl.shape[1], HOLD)]

    def reset(self):
        for field, value in self.start:
            field.from_numpy(value)

    def run(self, nstep: int) -> int:
        import taichi as ti
        import tiphys
        for t in range(nstep):
            if t % HOLD == 0:
                self.d.ctrl.from_numpy(self.ctrl[t // HOLD])
            tiphys.step(self.m, self.d)
        ti.sync()
        return nstep


# --------------------------------------------------------------------------- timing


def _best_rate(fn, nworld, repeats, reset=None, min_s=0.0) -> float:
    """World-steps/s: best of ``repeats`` batches, each ``fn()`` calls (``fn`` returns
    its step count) until ``min_s`` seconds have passed, after an untimed ``reset()``."""
    best = 0.0
    for _ in range(repeats):
        if reset:
            reset()
        nstep, elapsed = 0, 0.0
        t0 = time.perf_counter()
        while nstep == 0 or elapsed < min_s:
            nstep += fn()
            elapsed = time.perf_counter() - t0
        best = max(best, nworld * nstep / elapsed)
    return best


def stage_times(m, runner, nstep: int) -> tuple[dict, float, float]:
    """Seconds per step of each stage function (synced), the sum of a synced step and
    a plain step's time, over ``nstep`` steps."""
    import taichi as ti
    fwd = sys.modules["tiphys.forward"]
    names = [n for _, group in STAGE_GROUPS for n in group]
    spent = collections.Counter()
    originals = {n: getattr(fwd, n) for n in names}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            ti.sync()
            t0 = time.perf_counter()
            fn(*args, **kwargs)
            ti.sync()
            spent[name] += time.perf_counter() - t0
        return wrapper

    runner.reset()
    runner.run(1)
    for n in names:
        setattr(fwd, n, timed(n, originals[n]))
    try:
        t0 = time.perf_counter()
        runner.run(nstep)
        synced = time.perf_counter() - t0
    finally:
        for n in names:
            setattr(fwd, n, originals[n])
    runner.reset()
    runner.run(1)
    t0 = time.perf_counter()
    runner.run(nstep)
    plain = time.perf_counter() - t0
    return ({label: sum(spent[n] for n in group) / nstep for label, group in STAGE_GROUPS},
            synced / nstep, plain / nstep)


def contact_stats(m, mjm, base_state, base, ctrl) -> dict:
    """Mean ncon, nefc, solver iterations per world and step, tiphys vs MuJoCo, over
    the same STAT_STEPS steps of STAT_NWORLD worlds; largest |qpos| gap at the end."""
    import mujoco
    import tiphys
    nw = STAT_NWORLD
    runner = Runner(m, mjm, base, nw, ctrl)
    runner.reset()
    d = runner.d
    ours = collections.Counter()
    for t in range(STAT_STEPS):
        if t % HOLD == 0:
            d.ctrl.from_numpy(runner.ctrl[t // HOLD])
        tiphys.step(m, d)
        ours["ncon"] += d.numpy("ncon").sum()
        ours["nefc"] += d.numpy("nefc").sum()
        ours["niter"] += d.numpy("solver_niter").max(axis=1).sum()
    qpos_ours = d.numpy("qpos")
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    md = mujoco.MjData(mjm)
    theirs = collections.Counter()
    gap = 0.0
    for w in range(nw):
        mujoco.mj_resetData(mjm, md)
        mujoco.mj_setState(mjm, md, base_state[w % NBASE], spec)
        for t in range(STAT_STEPS):
            md.ctrl[:] = ctrl[w, t]
            mujoco.mj_step(mjm, md)
            theirs["ncon"] += md.ncon
            theirs["nefc"] += md.nefc
            theirs["niter"] += int(md.solver_niter[:max(1, md.nisland)].max())
        gap = max(gap, float(np.abs(qpos_ours[w] - md.qpos).max()))
    n = nw * STAT_STEPS
    return dict(ours={k: float(v) / n for k, v in ours.items()},
                mujoco={k: float(v) / n for k, v in theirs.items()}, qpos_gap=gap,
                warnings=int((d.numpy("warning_number").sum(axis=1) > 0).sum()))


def bench_model(name, rel, settle, precision, nworlds, quick) -> dict:
    import mujoco
    import taichi as ti
    from mujoco import rollout

    import tiphys
    from tiphys.launch import count_launches
    path = corpus_path(rel)
    t0 = time.perf_counter()
    m = tiphys.load_model(path)
    t_load = time.perf_counter() - t0
    mjm = mujoco.MjModel.from_xml_path(path)
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(mjm) for _ in range(nthread)]
    base_state = start_states(mjm, datas, settle)
    base = split_state(mjm, base_state)
    rng = np.random.default_rng(1)
    rows, first_step = [], None
    for nworld in nworlds:
        print(f"  {name} {precision} nworld {nworld}", file=sys.stderr, flush=True)
        guess = 4 * HOLD
        mj_nstep = max(guess, min(400, math.ceil(20000 / nworld)))
        ctrl = random_controls(mjm, nworld, mj_nstep, rng)
        runner = Runner(m, mjm, base, nworld, ctrl[:, :guess])
        runner.reset()
        t0 = time.perf_counter()
        runner.run(1)
        first = time.perf_counter() - t0
        if first_step is None:
            first_step = first
            with count_launches() as launches:
                tiphys.step(m, runner.d)
            ti.sync()
        runner.reset()
        t0 = time.perf_counter()
        runner.run(1)
        per_step = time.perf_counter() - t0
        nstep = max(2, min(guess, math.ceil(MIN_S / per_step)))
        repeats = 2 if nstep * per_step > 3.0 else 3
        rate = _best_rate(functools.partial(runner.run, nstep), nworld, repeats,
                          runner.reset)
        ncon = float(runner.d.numpy("ncon").mean())
        del runner
        # MuJoCo: the same start states and controls, a window long enough to time
        mj_nstep = max(nstep, min(400, math.ceil(20000 / nworld)))
        init = base_state[np.arange(nworld) % NBASE]
        out = np.empty((nworld, mj_nstep, base_state.shape[1]))
        warm = np.zeros((nworld, mjm.nv))

        def run_mujoco():
            rollout.rollout(mjm, datas, init, ctrl[:, :mj_nstep], nstep=mj_nstep,
                            initial_warmstart=warm, state=out)
            return mj_nstep

        mj_rate = _best_rate(run_mujoco, nworld, 3, min_s=MIN_S)
        rows.append(dict(nworld=nworld, tiphys=rate, mujoco=mj_rate, first_s=first,
                         nstep=nstep, mj_nstep=mj_nstep, ncon_end=ncon))
    snw = 64 if quick else STAGE_NWORLD
    ctrl = random_controls(mjm, snw, 4 * HOLD, rng)
    runner = Runner(m, mjm, base, snw, ctrl)
    stages, synced, plain = stage_times(m, runner, 3 if quick else 5)
    del runner
    ctrl = random_controls(mjm, STAT_NWORLD, STAT_STEPS, rng)
    stats = contact_stats(m, mjm, base_state, base, ctrl)
    return dict(name=name, file=rel, nq=mjm.nq, nv=mjm.nv, nu=mjm.nu, ngeom=mjm.ngeom,
                integrator=int(mjm.opt.integrator), solver=int(mjm.opt.solver),
                iterations=int(mjm.opt.iterations), timestep=float(mjm.opt.timestep),
                settle=settle, load_s=t_load, first_step_s=first_step,
                launches=launches["n"], rows=rows, stage_nworld=snw, stages=stages,
                stage_synced_s=synced, stage_plain_s=plain, stats=stats)


def worker(precision: str, nworlds, quick: bool, arch: str = "cpu") -> dict:
    import tiphys
    tiphys.init(arch=arch, precision=precision)
    models = [bench_model(name, rel, settle, precision, nworlds, quick)
              for name, rel, settle in MODELS]
    return dict(precision=precision, arch=arch, nthread=os.cpu_count(), models=models)


# --------------------------------------------------------------------------- report


def _fmt(x):
    return f"{x / 1e6:.2f}M/s" if x >= 1e6 else f"{x / 1e3:.1f}k/s" if x >= 1e3 else f"{x:.0f}/s"


def _cpu() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return cpu


def report(results, elapsed) -> str:
    import mujoco
    import taichi as ti
    by = {r["precision"]: r for r in results}
    r64, r32 = by["f64"], by["f32"]
    integrators = {0: "Euler", 1: "RK4", 2: "implicit", 3: "implicitfast"}
    solvers = {0: "PGS", 1: "CG", 2: "Newton"}
    version = ".".join(map(str, ti.__version__)) if isinstance(ti.__version__, tuple) \
        else ti.__version__
    lines = [
        MARK,
        "## step with contacts: gym humanoid and ant (`benchmarks/bench_contact.py`)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')};"
        f" whole run {elapsed:.0f} s",
        f"- machine: {os.cpu_count()} CPU cores, {_cpu()} ({platform.platform()}); load average "
        f"(1 min) at the end: {os.getloadavg()[0]:.2f} (shared machine: numbers are rough)",
        f"- versions: Taichi {version}, MuJoCo {mujoco.__version__}",
        "",
        "Models as the corpus files have them, contacts on. Start states: 256 per model, "
        "qpos0 with small random joint offsets and velocities, settled by MuJoCo under "
        "random controls (bodies on the floor); world w starts from state w % 256. Controls "
        "uniform in ctrlrange, redrawn every 10 steps, per world. tiphys: `tiphys.step` on "
        "all worlds at once (Taichi CPU backend, all cores; control uploads and `ti.sync()` "
        "included). MuJoCo: `mujoco.rollout.rollout`, same start states and controls, "
        f"nthread={r64['nthread']} (one MjData per core), timed in the same worker process "
        "right after tiphys. Rates are world-steps/s, best of 3 batches of >= 0.3 s "
        "(tiphys at 8192 worlds: best of 2 batches of 2 steps); ratio = tiphys / MuJoCo.",
        "",
    ]
    for k, mod in enumerate(r64["models"]):
        mod32 = r32["models"][k]
        lines += [
            f"### {mod['name']}: `{mod['file']}`",
            "",
            f"nq={mod['nq']} nv={mod['nv']} nu={mod['nu']} ngeom={mod['ngeom']}, "
            f"{integrators.get(mod['integrator'])}, {solvers.get(mod['solver'])} "
            f"(iterations={mod['iterations']}), timestep {mod['timestep']:g} s; "
            f"{mod['launches']} kernel launches per step (f64); first step (Taichi compile "
            f"or cache load) f64 {mod['first_step_s']:.1f} s, f32 {mod32['first_step_s']:.1f} s.",
            "",
            "| nworld | steps timed | tiphys f64 | MuJoCo | ratio f64 | tiphys f32 | MuJoCo "
            "| ratio f32 | ncon/world at the end (f64) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for a, b in zip(mod["rows"], mod32["rows"]):
            lines.append(
                f"| {a['nworld']} | {a['nstep']} | {_fmt(a['tiphys'])} | {_fmt(a['mujoco'])} | "
                f"**{a['tiphys'] / a['mujoco']:.3f}x** | {_fmt(b['tiphys'])} | "
                f"{_fmt(b['mujoco'])} | **{b['tiphys'] / b['mujoco']:.3f}x** | "
                f"{a['ncon_end']:.2f} |")
        s64, s32 = mod["stats"], mod32["stats"]
        lines += [
            "",
            f"Same {STAT_STEPS} steps of {STAT_NWORLD} worlds in both engines (tiphys steps "
            "all at once; MuJoCo a Python mj_step loop, its iterations those of its largest "
            "island), means per world and step:",
            "",
            "| | ncon | nefc | solver iterations | largest qpos gap to MuJoCo after the steps "
            "| worlds with warnings |",
            "|---|---:|---:|---:|---:|---:|",
            f"| tiphys f64 | {s64['ours']['ncon']:.2f} | {s64['ours']['nefc']:.2f} | "
            f"{s64['ours']['niter']:.2f} | {s64['qpos_gap']:.1e} | {s64['warnings']} |",
            f"| tiphys f32 | {s32['ours']['ncon']:.2f} | {s32['ours']['nefc']:.2f} | "
            f"{s32['ours']['niter']:.2f} | {s32['qpos_gap']:.1e} | {s32['warnings']} |",
            f"| MuJoCo | {s64['mujoco']['ncon']:.2f} | {s64['mujoco']['nefc']:.2f} | "
            f"{s64['mujoco']['niter']:.2f} | | |",
            "",
            f"Per stage, nworld {mod['stage_nworld']}: each stage function of "
            "`tiphys/forward.py` between `ti.sync()`s (RK4's four forward passes all counted); "
            f"a step with these syncs took f64 {mod['stage_synced_s'] * 1e3:.1f} ms, f32 "
            f"{mod32['stage_synced_s'] * 1e3:.1f} ms, one without f64 "
            f"{mod['stage_plain_s'] * 1e3:.1f} ms, f32 {mod32['stage_plain_s'] * 1e3:.1f} ms. "
            "Shares are of the synced step; what they leave is host code outside the stage "
            "functions.",
            "",
            "| stage | f64 ms/step | f64 share | f32 ms/step | f32 share |",
            "|---|---:|---:|---:|---:|",
        ]
        for label, _ in STAGE_GROUPS:
            a, b = mod["stages"][label], mod32["stages"][label]
            lines.append(f"| {label} | {a * 1e3:.2f} | {100 * a / mod['stage_synced_s']:.0f}% | "
                         f"{b * 1e3:.2f} | {100 * b / mod32['stage_synced_s']:.0f}% |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="nworld 1 and 64, nothing written")
    ap.add_argument("--worker", choices=("f64", "f32"), help=argparse.SUPPRESS)
    ap.add_argument("--nworld", type=int, nargs="*")
    ap.add_argument("--arch", default="cpu", help="tiphys backend (MuJoCo runs on the CPU)")
    args = ap.parse_args()
    nworlds = args.nworld or (QUICK_NWORLDS if args.quick else NWORLDS)
    if args.worker:
        print(json.dumps(worker(args.worker, nworlds, args.quick, args.arch)))
        return
    t0 = time.perf_counter()
    results = []
    for precision in ("f64", "f32"):
        print(f"worker {precision} ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--worker", precision, "--arch", args.arch,
               "--nworld", *map(str, nworlds)]
        if args.quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # progress on stderr
        if proc.returncode:
            raise SystemExit(f"worker {precision} failed (exit {proc.returncode})")
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    section = report(results, time.perf_counter() - t0)
    print(section)
    if not args.quick:
        write_section(MARK, section)


if __name__ == "__main__":
    main()
