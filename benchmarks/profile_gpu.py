"""Where a batched step spends its device time: Taichi's kernel profiler over a few
steps of gym humanoid, gym ant and the three-humanoid scene, and the step rate
against ``mujoco.rollout`` on all cores (same start states and controls as
bench_contact.py).

    python benchmarks/profile_gpu.py --arch cuda --precision f32 \
        --scene humanoid:8192 ant:8192 humanoid3:4096 [--profile] [--steps 10] \
        [--fast-math]

Without ``--profile`` it prints world-steps/s of tiphys and MuJoCo and the ratio; with
it (a separate process: the profiler times every launch) the kernels sorted by total
time per step, with their launches per step. Nothing is written to RESULTS.md: this
is the tool for deciding what to speed up, the tables come from bench_contact.py and
bench_large.py.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import bench_contact as bc  # noqa: E402  (benchmarks/ is on sys.path)

SETTLE = {"humanoid": 300, "ant": 100, "humanoid3": 100}


def scene(name: str):
    """(tiphys model, MuJoCo model) of a named scene."""
    import mujoco

    import tiphys
    if name == "humanoid3":
        from bench_large import humanoid3_xml
        from oracle import corpus_dir
        xml = humanoid3_xml(corpus_dir())
        return tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    path = bc.corpus_path(f"gym/{name}.xml")
    return tiphys.load_model(path), mujoco.MjModel.from_xml_path(path)


def run_scene(name: str, nworld: int, profile: bool, steps: int) -> None:
    import mujoco
    import taichi as ti
    from mujoco import rollout

    from tiphys.launch import count_launches
    m, mjm = scene(name)
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(mjm) for _ in range(nthread)]
    base_state = bc.start_states(mjm, datas, SETTLE[name])
    base = bc.split_state(mjm, base_state)
    rng = np.random.default_rng(1)
    nstep = max(steps, 2 * bc.HOLD)
    ctrl = bc.random_controls(mjm, nworld, nstep, rng)
    runner = bc.Runner(m, mjm, base, nworld, ctrl)
    runner.reset()
    t0 = time.perf_counter()
    runner.run(1)
    first = time.perf_counter() - t0
    with count_launches() as launches:
        runner.run(1)
    runner.reset()
    runner.run(bc.HOLD)
    if profile:
        runner.reset()
        ti.profiler.clear_kernel_profiler_info()
        runner.run(steps)
        info = _profiler_table()
        total = sum(t for t, _ in info.values())
        print(f"\n## {name} nworld {nworld}: {launches['n']} launches per step, "
              f"kernel time per step {total / steps:.2f} ms (profiler)")
        print("| kernel | ms per step | share | tasks per step | mean us |")
        print("|---|---:|---:|---:|---:|")
        for kname, (t_ms, count) in sorted(info.items(), key=lambda kv: -kv[1][0])[:30]:
            print(f"| {kname} | {t_ms / steps:.3f} | {100 * t_ms / total:.1f}% | "
                  f"{count / steps:.1f} | {1e3 * t_ms / count:.1f} |", flush=True)
        return
    rate = bc._best_rate(lambda: runner.run(nstep), nworld, 3, runner.reset, min_s=1.0)
    init = base_state[np.arange(nworld) % bc.NBASE]
    out = np.empty((nworld, nstep, base_state.shape[1]))
    warm = np.zeros((nworld, mjm.nv))

    def run_mujoco():
        rollout.rollout(mjm, datas, init, ctrl, nstep=nstep, initial_warmstart=warm,
                        state=out)
        return nstep

    mj_rate = bc._best_rate(run_mujoco, nworld, 3, min_s=1.0)
    print(f"{name:10s} nworld {nworld:6d}: tiphys {rate:12.0f}/s  MuJoCo ({nthread} threads) "
          f"{mj_rate:12.0f}/s  ratio {rate / mj_rate:.3f}x  {1e3 * nworld / rate:.2f} ms/step  "
          f"{launches['n']} launches  first step {first:.1f} s", flush=True)


def _profiler_table() -> dict:
    """{kernel: (total ms, offloaded tasks run)} from Taichi's kernel profiler, whose
    records name tasks ``<kernel>_c<n>_<i>_<kind>...``: summed per kernel."""
    from taichi.profiler.kernel_profiler import get_default_kernel_profiler
    prof = get_default_kernel_profiler()
    prof._update_records()
    table = {}
    for rec in prof._traced_records:
        base = re.sub(r"_c\d+_\d+.*$", "", rec.name)
        t, c = table.get(base, (0.0, 0))
        table[base] = (t + rec.kernel_time, c + 1)
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="cuda")
    ap.add_argument("--precision", default="f32")
    ap.add_argument("--scene", nargs="*", default=["humanoid:8192", "ant:8192",
                                                    "humanoid3:4096"])
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--fast-math", action="store_true",
                    help="Taichi's fast math on (tiphys turns it off on CUDA): what exact "
                         "math costs")
    args = ap.parse_args()
    import tiphys
    kwargs = {"kernel_profiler": True} if args.profile else {}
    if args.fast_math:
        kwargs["fast_math"] = True
    tiphys.init(arch=args.arch, precision=args.precision, **kwargs)
    for item in args.scene:
        name, nworld = item.split(":")
        run_scene(name, int(nworld), args.profile, args.steps)


if __name__ == "__main__":
    main()
