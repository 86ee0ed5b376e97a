"""Benchmark: a user-written actuator plugin against a built-in actuator (issue 19).

    python benchmarks/bench_plugin.py [--nworld 1 64 4096] [--steps 200] [--arch cpu]

Models: the three-link arm of ``demos/dcmotor_plugin.py``, driven once by the demo's
``demo.dcmotor`` plugin (three Taichi kernels: act_dot, compute, advance) and once by
MuJoCo's built-in first-order actuators (``<general dyntype="filter">``, gain and
back-EMF damping). tiphys ``step`` on all worlds (``ti.sync()`` and a control upload
every 10 steps included), and MuJoCo ``rollout`` of the built-in arm on all cores as
the yardstick. Prints launches per step and host ms per step next to each rate;
writes its section of RESULTS.md (CPU runs only).
"""
import argparse
import datetime
import os
import platform
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "demos"))

from results_md import write_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK = "<!-- bench_plugin.py -->"


def mujoco_rate(xml: str, nworld: int, nstep: int) -> float:
    """World-steps/s of mujoco.rollout on the built-in arm, one MjData per core."""
    import time

    import mujoco
    from mujoco import rollout
    mjm = mujoco.MjModel.from_xml_string(xml)
    datas = [mujoco.MjData(mjm) for _ in range(os.cpu_count() or 1)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.zeros((nworld, mujoco.mj_stateSize(mjm, spec)))
    mujoco.mj_getState(mjm, datas[0], state[0], spec)
    state[:] = state[0]
    ctrl = np.repeat(np.random.default_rng(0).uniform(-1, 1, (nworld, nstep // 10 + 1,
                                                              mjm.nu)), 10, axis=1)[:, :nstep]
    rollout.rollout(mjm, datas, state, ctrl, nstep=nstep)
    t0 = time.perf_counter()
    rollout.rollout(mjm, datas, state, ctrl, nstep=nstep)
    return nworld * nstep / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nworld", type=int, nargs="*", default=[1, 64, 4096])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--arch", default="cpu")
    args = ap.parse_args()
    import tiphys
    from tiphys.launch import count_launches
    import dcmotor_plugin as demo
    tiphys.init(arch=args.arch, precision="f64" if args.arch == "cpu" else "f32")
    models = {"plugin": tiphys.load_model_from_string(demo.arm_xml(False)),
              "built-in": tiphys.load_model_from_string(demo.arm_xml(True))}
    launches = {}
    for name, m in models.items():
        d = tiphys.make_data(m, 1)
        tiphys.step(m, d)
        with count_launches() as counted:
            tiphys.step(m, d)
        launches[name] = counted["n"]
    rows = []
    for nworld in args.nworld:
        row = {"nworld": nworld}
        for name, m in models.items():
            row[name] = demo.rate(m, nworld, args.steps)
        row["mujoco"] = mujoco_rate(demo.arm_xml(True), nworld, args.steps)
        rows.append(row)
        print(f"nworld {nworld}: plugin {row['plugin'][0]:.0f}/s, built-in "
              f"{row['built-in'][0]:.0f}/s, MuJoCo {row['mujoco']:.0f}/s", file=sys.stderr)
    lines = [MARK, "## A user-written actuator plugin against a built-in actuator "
             "(`benchmarks/bench_plugin.py`)", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
             f"- machine: {os.cpu_count()} CPU cores ({platform.platform()}); tiphys on "
             f"{args.arch}, MuJoCo 3.4.0 rollout of the built-in arm on all cores",
             f"- the arm of `demos/dcmotor_plugin.py` (3 hinges), {args.steps} steps; "
             f"launches per step: plugin {launches['plugin']}, built-in "
             f"{launches['built-in']}", "",
             "| nworld | tiphys, DC motor plugin | ms/step | tiphys, built-in actuator | "
             "ms/step | plugin / built-in time | MuJoCo (built-in) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        (pr, pms), (br, bms) = r["plugin"], r["built-in"]
        lines.append(f"| {r['nworld']} | {pr:.0f}/s | {pms:.2f} | {br:.0f}/s | {bms:.2f} | "
                     f"{pms / bms:.2f}x | {r['mujoco']:.0f}/s |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.arch == "cpu":
        write_section(MARK, text)


if __name__ == "__main__":
    main()
