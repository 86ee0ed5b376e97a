"""Benchmark: tiphys.step on a constraint-free gym humanoid vs MuJoCo C rollout.

    python benchmarks/bench_step.py            # nworld 1, 64, 1024, 4096; appends to RESULTS.md
    python benchmarks/bench_step.py --quick    # nworld 1 and 64, nothing written

The model is the corpus' gym humanoid with its actuator/tendon/sensor sections
stripped and `<flag contact="disable" constraint="disable"/>` (Euler integrator, as
the file has it). Each precision runs in its own worker process (fresh Taichi
runtime, CPU backend, all cores). MuJoCo runs `mujoco.rollout.rollout` from the same
initial states with one MjData per core (nthread = os.cpu_count()), in the same
worker right after tiphys. Rates are world-steps per second (nworld x steps / s);
each is the best of 3 batches of at least 0.3 s.
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
NWORLDS = (1, 64, 1024, 4096)
MARK = "<!-- bench_step.py -->"


def _model_xml() -> bytes:
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from lxml import etree
    from oracle import corpus_dir, strip_later_sections
    root = etree.fromstring(strip_later_sections(os.path.join(corpus_dir(), "gym/humanoid.xml")))
    opt = root.find("option")
    if opt is None:
        opt = etree.Element("option")
        root.insert(0, opt)
    flag = opt.find("flag")
    if flag is None:
        flag = etree.SubElement(opt, "flag")
    flag.set("contact", "disable")
    flag.set("constraint", "disable")
    return etree.tostring(root)


def _best_rate(fn, nworld, min_s=0.3, repeats=3):
    """World-steps/s: best of ``repeats`` batches of at least ``min_s`` seconds."""
    best = 0.0
    for _ in range(repeats):
        nstep, elapsed = 0, 0.0
        t0 = time.perf_counter()
        while elapsed < min_s:
            nstep += fn()
            elapsed = time.perf_counter() - t0
        best = max(best, nworld * nstep / elapsed)
    return best


def worker(precision: str, nworlds) -> dict:
    import mujoco
    from mujoco import rollout
    import taichi as ti
    import tiphys
    tiphys.init(arch="cpu", precision=precision)
    xml = _model_xml().decode()
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    nthread = os.cpu_count()
    datas = [mujoco.MjData(mjm) for _ in range(nthread)]
    rows = []
    for nworld in nworlds:
        rng = np.random.default_rng(nworld)
        qvel = 0.1 * rng.normal(size=(nworld, mjm.nv))
        d = tiphys.make_data(m, nworld)
        d.qvel.from_numpy(qvel)
        t0 = time.perf_counter()
        tiphys.step(m, d)
        ti.sync()
        first = time.perf_counter() - t0
        chunk = 10

        def run_tiphys():
            for _ in range(chunk):
                tiphys.step(m, d)
            ti.sync()
            return chunk

        rate = _best_rate(run_tiphys, nworld)
        # MuJoCo: the same initial states, rolled out in one call per batch
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state = np.zeros((nworld, mujoco.mj_stateSize(mjm, spec)))
        md = datas[0]
        for w in range(nworld):
            mujoco.mj_resetData(mjm, md)
            md.qvel[:] = qvel[w]
            mujoco.mj_getState(mjm, md, state[w], spec)
        mj_nstep = max(1, min(200, 20000 // nworld))

        def run_mujoco():
            rollout.rollout(mjm, datas, state, nstep=mj_nstep)
            return mj_nstep

        mj_rate = _best_rate(run_mujoco, nworld)
        rows.append(dict(nworld=nworld, tiphys=rate, mujoco=mj_rate, first_step_s=first))
    return dict(precision=precision, nq=mjm.nq, nv=mjm.nv, nbody=mjm.nbody,
                nthread=nthread, rows=rows)


def _fmt(x):
    return f"{x / 1e6:.2f}M/s" if x >= 1e6 else f"{x / 1e3:.1f}k/s" if x >= 1e3 else f"{x:.0f}/s"


def report(results, elapsed) -> str:
    import mujoco
    import taichi as ti
    r64 = next(r for r in results if r["precision"] == "f64")
    r32 = next(r for r in results if r["precision"] == "f32")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    lines = [
        MARK,
        "## step: constraint-free gym humanoid (`benchmarks/bench_step.py`)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')};"
        f" whole run {elapsed:.0f} s",
        f"- machine: {os.cpu_count()} CPU cores, {cpu} ({platform.platform()}); load average "
        f"(1 min) at the end: {os.getloadavg()[0]:.2f}",
        f"- versions: Taichi {ti.__version__}, MuJoCo {mujoco.__version__}",
        "",
        f"Model: corpus `gym/humanoid.xml`, actuators/tendons/sensors stripped, contacts and "
        f"constraints disabled, Euler (nq={r64['nq']} nv={r64['nv']} nbody={r64['nbody']}). "
        "Rates are world-steps per second (nworld x steps / s), best of 3 batches of >= 0.3 s. "
        "tiphys: `tiphys.step` on all worlds at once, Taichi CPU backend, `ti.sync()` included. "
        f"MuJoCo: `mujoco.rollout.rollout` on the same initial states, nthread={r64['nthread']} "
        "(one MjData per core), timed in the same worker process right after tiphys. "
        "ratio = tiphys / MuJoCo.",
        "",
        "| nworld | tiphys f64 | MuJoCo | ratio f64 | tiphys f32 | MuJoCo | ratio f32 | first step f64 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for a, b in zip(r64["rows"], r32["rows"]):
        lines.append(f"| {a['nworld']} | {_fmt(a['tiphys'])} | {_fmt(a['mujoco'])} | "
                     f"**{a['tiphys'] / a['mujoco']:.2f}x** | {_fmt(b['tiphys'])} | "
                     f"{_fmt(b['mujoco'])} | **{b['tiphys'] / b['mujoco']:.2f}x** | "
                     f"{a['first_step_s']:.2f} s |")
    lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", choices=("f64", "f32"))
    ap.add_argument("--nworld", type=int, nargs="*")
    args = ap.parse_args()
    nworlds = args.nworld or ((1, 64) if args.quick else NWORLDS)
    if args.worker:
        print(json.dumps(worker(args.worker, nworlds)))
        return
    t0 = time.perf_counter()
    results = []
    for precision in ("f64", "f32"):
        cmd = [sys.executable, __file__, "--worker", precision, "--nworld", *map(str, nworlds)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    section = report(results, time.perf_counter() - t0)
    print(section)
    if not args.quick:
        write_section(MARK, section)


if __name__ == "__main__":
    main()
