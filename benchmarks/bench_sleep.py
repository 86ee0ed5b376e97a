"""Benchmark: sleeping trees (<flag sleep="enable"/>) on a pile at rest, against MuJoCo C.

    python benchmarks/bench_sleep.py                 # 100 objects, 1 and 64 worlds
    python benchmarks/bench_sleep.py --objects 300 --nworld 1 --quick

The pile of ``bench_large.pile_xml`` (mixed free primitives in layers over a plane) is
settled by MuJoCo with sleep on (``--settle`` steps); then both engines step from that
state (qpos, qvel and tree_asleep copied into every tiphys world), with the flag on
and off: tiphys ``step`` on all worlds (``ti.sync()`` included), MuJoCo ``mj_step`` on
one MjData (one core). Printed: world-steps/s, the ratio, trees asleep and contacts
per world at the end. With the flag on tiphys still computes every stage for every
tree (kernels/sleep.py) and runs the velocity and acceleration stages a second time
each step, so this measures what sleep costs it, not a speed-up.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_large import pile_xml  # noqa: E402
from results_md import write_section  # noqa: E402

MARK = "<!-- bench_sleep.py -->"


def _xml(base: str, flag: str) -> str:
    return base.replace('<option timestep="0.002"/>',
                        f'<option timestep="0.002"><flag sleep="{flag}"/></option>')


def _best(fn, repeat: int = 3) -> float:
    return min(fn() for _ in range(repeat))


def run(objects: int, settle: int, nworlds, steps: int) -> list[dict]:
    import mujoco

    import taichi as ti
    import tiphys
    tiphys.init(arch="cpu", precision="f64")
    base = pile_xml(objects)
    settled = mujoco.MjModel.from_xml_string(_xml(base, "enable"))
    state = mujoco.MjData(settled)
    for _ in range(settle):
        mujoco.mj_step(settled, state)
    rows = []
    for flag in ("enable", "disable"):
        xml = _xml(base, flag)
        mjm = mujoco.MjModel.from_xml_string(xml)
        mjd = mujoco.MjData(mjm)

        def mujoco_batch() -> float:
            mujoco.mj_setState(mjm, mjd, _full_state(settled, state),
                               mujoco.mjtState.mjSTATE_INTEGRATION)
            if flag == "enable":  # off, every tree steps awake
                mjd.tree_asleep[:] = state.tree_asleep
            t = time.perf_counter()
            for _ in range(steps):
                mujoco.mj_step(mjm, mjd)
            return (time.perf_counter() - t) / steps

        mj_s = _best(mujoco_batch)
        m = tiphys.load_model_from_string(xml)
        for nw in nworlds:
            d = tiphys.make_data(m, nw)

            def tiphys_batch() -> float:
                d.qpos.from_numpy(np.tile(state.qpos, (nw, 1)))
                d.qvel.from_numpy(np.tile(state.qvel, (nw, 1)))
                if flag == "enable":
                    d.tree_asleep.from_numpy(
                        np.tile(state.tree_asleep, (nw, 1)).astype(np.int32))
                for _ in range(3):
                    tiphys.step(m, d)
                ti.sync()
                t = time.perf_counter()
                for _ in range(steps):
                    tiphys.step(m, d)
                ti.sync()
                return (time.perf_counter() - t) / steps

            ti_s = _best(tiphys_batch)
            rows.append(dict(flag=flag, nworld=nw, tiphys=nw / ti_s, mujoco=1.0 / mj_s,
                             asleep=int(np.sum(d.numpy("tree_asleep")[0] >= 0)),
                             mj_asleep=int(np.sum(mjd.tree_asleep >= 0)),
                             ncon=int(d.numpy("ncon")[0]), mj_ncon=int(mjd.ncon)))
            print(rows[-1], flush=True)
    return rows


def _full_state(mjm, mjd):
    import mujoco
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    out = np.empty(mujoco.mj_stateSize(mjm, spec))
    mujoco.mj_getState(mjm, mjd, out, spec)
    return out


def report(rows, objects: int, ntree: int, elapsed: float) -> str:
    lines = [MARK, f"## Sleeping trees: a pile of {objects} objects at rest "
             "(`benchmarks/bench_sleep.py`)", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"
             f"; whole run {elapsed:.0f} s",
             f"- machine: {os.cpu_count()} CPU cores ({platform.platform()}); tiphys cpu f64, "
             "MuJoCo 3.4.0 `mj_step` on one core; both from MuJoCo's state after settling "
             "with sleep on", "",
             "| sleep flag | worlds | tiphys | MuJoCo (1 world) | ratio | trees asleep "
             "(tiphys / MuJoCo) | contacts (tiphys / MuJoCo) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['flag']} | {r['nworld']} | {r['tiphys']:.1f}/s | "
                     f"{r['mujoco']:.1f}/s | **{r['tiphys'] / r['mujoco']:.3f}x** | "
                     f"{r['asleep']} / {r['mj_asleep']} of {ntree} | "
                     f"{r['ncon']} / {r['mj_ncon']} |")
    lines += ["", "tiphys computes every stage for every tree with the flag on and runs "
              "the velocity and acceleration stages twice per step (kernels/sleep.py), so "
              "sleep costs it time where MuJoCo saves some."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--settle", type=int, default=3000)
    parser.add_argument("--nworld", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="do not write RESULTS.md")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = run(args.objects, args.settle, args.nworld, args.steps)
    text = report(rows, args.objects, args.objects, time.perf_counter() - start)
    print(text)
    if not args.quick:
        write_section(MARK, text)


if __name__ == "__main__":
    main()
