"""Benchmark: tiphys.transition_fd on many worlds vs MuJoCo C's mjd_transitionFD looped.

    python benchmarks/bench_fd.py           # nworld 64 and 1024; writes its RESULTS.md section
    python benchmarks/bench_fd.py --quick   # nworld 16, nothing written

Model: the corpus' gymnasium ``humanoid.xml`` with its integrator switched from RK4 to
Euler (mjd_transitionFD refuses RK4), otherwise as the file is: PGS, contacts, 17
motors. States: nworld distinct states, qpos0 with small random joint offsets and
velocities settled by MuJoCo for 150 steps under random controls (bodies on the
floor), then a fresh random control per world (some at their range limits) and a cold
warmstart. Both engines compute A and B (forward differences, eps 1e-6 in f64; the
f32 run uses eps 1e-3, f32's useful nudge, against MuJoCo at the same eps) of the same
states: tiphys ``transition_fd`` on all worlds at once (one expanded batch of
(1 + 2 nv + nu) x nworld worlds, chunked to its memory budget; Taichi CPU backend,
all cores), MuJoCo ``mjd_transitionFD`` in a Python loop over the worlds (one
thread), timed in the same worker process right after tiphys. Times are the best of
2 calls after a first (compile / cache-load) call; each precision runs in its own
process. err: the largest |A - A_MuJoCo| (and B) over all worlds, relative to that
world's largest |A_MuJoCo| (B_MuJoCo) entry.
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

import numpy as np

from results_md import write_section  # benchmarks/ is on sys.path when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARK = "<!-- bench_fd.py -->"
NWORLDS = (64, 1024)
QUICK_NWORLDS = (16,)
SETTLE = 150


def model_pair():
    """(tiphys Model, MjModel) of the corpus humanoid with the Euler integrator."""
    import mujoco
    import tiphys
    from lxml import etree
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from oracle import corpus_dir
    path = os.path.join(corpus_dir(), "gym/humanoid.xml")
    if not os.path.isfile(path):
        raise SystemExit(f"{path} is missing: run `make corpus` first")
    root = etree.parse(path).getroot()
    root.find("option").set("integrator", "Euler")
    tmp = os.path.join(os.path.dirname(path), f".bench_fd_{os.getpid()}.xml")
    with open(tmp, "wb") as f:
        f.write(etree.tostring(root))
    try:
        return tiphys.load_model(tmp), mujoco.MjModel.from_xml_path(tmp)
    finally:
        os.remove(tmp)


def states(mjm, nworld: int, seed: int = 0) -> dict:
    """qpos, qvel, ctrl per world (see the module docstring)."""
    import mujoco
    from mujoco import rollout
    rng = np.random.default_rng(seed)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    md = mujoco.MjData(mjm)
    init = np.zeros((nworld, mujoco.mj_stateSize(mjm, spec)))
    for w in range(nworld):
        mujoco.mj_resetData(mjm, md)
        md.qpos[7:] += 0.05 * rng.standard_normal(mjm.nq - 7)
        md.qvel[:] = 0.1 * rng.standard_normal(mjm.nv)
        mujoco.mj_getState(mjm, md, init[w], spec)
    lo, hi = mjm.actuator_ctrlrange.T
    ctrl = np.repeat(rng.uniform(lo, hi, (nworld, SETTLE // 10, mjm.nu)), 10, axis=1)
    datas = [mujoco.MjData(mjm) for _ in range(os.cpu_count() or 1)]
    final = rollout.rollout(mjm, datas, init, ctrl, nstep=SETTLE)[0][:, -1]
    out = {"qpos": [], "qvel": []}
    for row in final:
        mujoco.mj_setState(mjm, md, row, spec)
        out["qpos"].append(md.qpos.copy())
        out["qvel"].append(md.qvel.copy())
    out = {k: np.array(v) for k, v in out.items()}
    out["ctrl"] = rng.uniform(lo, hi, (nworld, mjm.nu))
    out["ctrl"][::4, 0] = hi[0]  # some controls at a limit: one-sided nudges
    return out


def bench(m, mjm, nworld: int, eps: float, centered: bool) -> dict:
    import mujoco
    import taichi as ti
    import tiphys
    s = states(mjm, nworld)
    d = tiphys.make_data(m, nworld)
    for key, value in s.items():
        getattr(d, key).from_numpy(value)
    t0 = time.perf_counter()
    tiphys.transition_fd(m, d, eps, centered, outputs="AB")
    ti.sync()
    first = time.perf_counter() - t0
    forward_module = sys.modules["tiphys.forward"]
    plain_step = forward_module.step
    in_step = [0.0]

    def timed_step(m, de):  # the second timed call measures the share spent in step
        ti.sync()
        t = time.perf_counter()
        plain_step(m, de)
        ti.sync()
        in_step[0] += time.perf_counter() - t

    best = float("inf")
    for k in range(2):
        forward_module.step = timed_step if k else plain_step
        t0 = time.perf_counter()
        try:
            out = tiphys.transition_fd(m, d, eps, centered, outputs="AB")
            ti.sync()
        finally:
            forward_module.step = plain_step
        took = time.perf_counter() - t0
        best = min(best, took)
    step_share = in_step[0] / took
    ndx = 2 * mjm.nv + mjm.na
    md = mujoco.MjData(mjm)
    A = np.zeros((nworld, ndx, ndx))
    B = np.zeros((nworld, ndx, mjm.nu))
    t0 = time.perf_counter()
    for w in range(nworld):
        md.qpos[:], md.qvel[:], md.ctrl[:] = s["qpos"][w], s["qvel"][w], s["ctrl"][w]
        md.qacc_warmstart[:] = 0
        mujoco.mjd_transitionFD(mjm, md, eps, int(centered), A[w], B[w], None, None)
    mj_time = time.perf_counter() - t0

    def rel(ours, want):
        scale = np.maximum(np.abs(want).max(axis=(1, 2)), 1e-300)
        return float((np.abs(ours - want).max(axis=(1, 2)) / scale).max())

    ncon = []
    for w in range(min(nworld, 64)):
        md.qpos[:], md.qvel[:] = s["qpos"][w], s["qvel"][w]
        mujoco.mj_forward(mjm, md)
        ncon.append(md.ncon)
    from tiphys.derivative import _columns_per_batch
    ncol = 1 + 2 * mjm.nv + mjm.na + mjm.nu
    if centered:
        ncol = 2 * ncol - 1
    per = _columns_per_batch(d, ncol, None)
    return dict(nworld=nworld, centered=centered, eps=eps, tiphys=best, first=first,
                mujoco=mj_time, err_a=rel(out.A, A), err_b=rel(out.B, B), ncol=ncol,
                batch_worlds=per * nworld, nbatch=-(-ncol // per), step_share=step_share,
                ncon=float(np.mean(ncon)))


def worker(precision: str, nworlds) -> dict:
    import tiphys
    tiphys.init(arch="cpu", precision=precision)
    m, mjm = model_pair()
    eps = 1e-6 if precision == "f64" else 1e-3
    runs = []
    for nworld in nworlds:
        print(f"{precision} nworld {nworld} ...", file=sys.stderr, flush=True)
        runs.append(bench(m, mjm, nworld, eps, False))
    if precision == "f64":
        print(f"{precision} nworld {nworlds[-1]} centered ...", file=sys.stderr, flush=True)
        runs.append(bench(m, mjm, nworlds[-1], eps, True))
    return dict(precision=precision, runs=runs, nq=mjm.nq, nv=mjm.nv, nu=mjm.nu)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def report(results, elapsed) -> str:
    import mujoco
    import taichi as ti
    version = ".".join(map(str, ti.__version__)) if isinstance(ti.__version__, tuple) \
        else ti.__version__
    r0 = results[0]
    lines = [
        MARK,
        "## transition_fd: gym humanoid, many worlds (`benchmarks/bench_fd.py`)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')};"
        f" whole run {elapsed:.0f} s",
        f"- machine: {os.cpu_count()} CPU cores, {_cpu()} ({platform.platform()}); load average "
        f"(1 min) at the end: {os.getloadavg()[0]:.2f} (shared machine: numbers are rough)",
        f"- versions: Taichi {version}, MuJoCo {mujoco.__version__}",
        "",
        f"Corpus `gym/humanoid.xml`, integrator switched to Euler (nq={r0['nq']} "
        f"nv={r0['nv']} nu={r0['nu']}, PGS, contacts). A and B of mjd_transitionFD at the "
        "same settled states in both engines: tiphys `transition_fd` on all worlds at once "
        "(Taichi CPU backend, all cores, `ti.sync()` included, best of 2 after a first call), "
        "MuJoCo C `mjd_transitionFD` looped over the worlds from Python (one thread). "
        "ratio = MuJoCo time / tiphys time (> 1: tiphys faster). err: largest entry error "
        "relative to the matrix's largest entry, worst world. f32 uses eps 1e-3 (MuJoCo "
        "too): at 1e-6 an f32 difference is mostly round-off.",
        "",
        "| precision | nworld | differences | eps | worlds stepped (batches) | tiphys | "
        "MuJoCo | ratio | per world: tiphys / MuJoCo | in step | err A | err B | first call |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for run in r["runs"]:
            n = run["nworld"]
            lines.append(
                f"| {r['precision']} | {n} | {'centered' if run['centered'] else 'forward'} | "
                f"{run['eps']:g} | {run['ncol'] * n} ({run['nbatch']}) | {run['tiphys']:.2f} s"
                f" | {run['mujoco']:.2f} s | **{run['mujoco'] / run['tiphys']:.2f}x** | "
                f"{run['tiphys'] / n * 1e3:.2f} / {run['mujoco'] / n * 1e3:.2f} ms | "
                f"{run['step_share']:.0%} | {run['err_a']:.1e} | {run['err_b']:.1e} | "
                f"{run['first']:.1f} s |")
    lines += [
        "",
        f"Contacts per world at these states: {r0['runs'][-1]['ncon']:.1f} (mean of the "
        "first 64). Each column of A and B is a full `step` of its own world (no stage is "
        "skipped, unlike MuJoCo's mj_stepSkip), so tiphys steps (1 + 2 nv + nu) x nworld "
        "worlds, twice the nudges when centered. `in step`: the share of a call spent in "
        "`tiphys.step` of the expanded batches (the rest: copying the worlds, nudging, "
        "gathering and differencing on the device, the host copy of A and B); tiphys's "
        "speed here is its batched step's (see the step benchmarks above).",
    ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="nworld 16, nothing written")
    ap.add_argument("--worker", choices=("f64", "f32"), help=argparse.SUPPRESS)
    ap.add_argument("--nworld", type=int, nargs="*")
    args = ap.parse_args()
    nworlds = args.nworld or (QUICK_NWORLDS if args.quick else NWORLDS)
    if args.worker:
        print(json.dumps(worker(args.worker, nworlds)))
        return
    t0 = time.perf_counter()
    results = []
    for precision in ("f64", "f32"):
        print(f"worker {precision} ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--worker", precision, "--nworld", *map(str, nworlds)]
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
