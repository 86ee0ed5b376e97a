"""Benchmark: Gymnasium vector environments, tiphys.envs against Gymnasium's own.

    python benchmarks/bench_gym.py            # Ant, HalfCheetah, Humanoid; writes RESULTS.md
    python benchmarks/bench_gym.py --quick    # shorter, fewer sizes; nothing written

Env-steps per second (one env step = frame_skip physics steps plus observation, reward
and autoreset) with uniform random actions, on this machine's cores:
- tiphys: ``tiphys.envs.make_vec(task, N)`` (N worlds in one Data, CPU backend, f64);
  its ``step`` includes the host copies of the observation fields;
- Gymnasium: ``gymnasium.make_vec(task, N, vectorization_mode="async")`` (one process per
  env, MuJoCo C) and ``"sync"`` (all envs in this process), the same task and N.
Each figure is the best of 3 runs of at least ``--seconds`` (after a warm-up step).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

from bench_contact import _cpu  # benchmarks/ is on sys.path when run as a script
from results_md import write_section

MARK = "<!-- bench_gym.py -->"


def rate(env, seconds: float, seed: int = 0) -> float:
    """Env-steps per second of a vector env: best of 3 timed runs of >= ``seconds``."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    space = env.single_action_space
    n = env.num_envs

    def actions():
        return rng.uniform(space.low, space.high, (n,) + space.shape).astype(np.float32)

    env.step(actions())
    best = 0.0
    for _ in range(3):
        steps = 0
        t0 = time.perf_counter()
        while True:
            env.step(actions())
            steps += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds:
                break
        best = max(best, steps * n / elapsed)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tasks", nargs="*", default=["Ant-v5", "HalfCheetah-v5", "Humanoid-v5"])
    ap.add_argument("--sizes", nargs="*", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None)
    args = ap.parse_args()
    import gymnasium

    import tiphys
    import tiphys.envs as te
    tiphys.init(arch="cpu", precision="f64")
    sizes = args.sizes or ([1, 16] if args.quick else [1, 2, 16, 64, 256])
    seconds = args.seconds or (0.5 if args.quick else 2.0)
    start = time.perf_counter()
    rows = []
    for task in args.tasks:
        for n in sizes:
            print(f"{task} x {n} ...", file=sys.stderr, flush=True)
            t = te.make_vec(task, n)
            ti_rate = rate(t, seconds)
            t.close()
            g = gymnasium.make_vec(task, num_envs=n, vectorization_mode="sync")
            sync_rate = rate(g, seconds)
            g.close()
            async_rate = float("nan")
            if n <= 64:  # one process per env
                g = gymnasium.make_vec(task, num_envs=n, vectorization_mode="async")
                async_rate = rate(g, seconds)
                g.close()
            rows.append(dict(task=task, n=n, tiphys=ti_rate, sync=sync_rate,
                             async_=async_rate))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [MARK, "## Gymnasium vector environments (`benchmarks/bench_gym.py`)", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"
             f"; whole run {time.perf_counter() - start:.0f} s",
             f"- machine: {os.cpu_count()} CPU cores, {_cpu()} ({platform.platform()}); "
             f"load average (1 min) at the end: {load:.2f}",
             f"- gymnasium {gymnasium.__version__} (MuJoCo C 3.4.0); tiphys on the CPU backend "
             "in f64; uniform random actions; env-steps/s, best of 3 runs",
             "", "| task | envs | tiphys.envs | Gymnasium sync | Gymnasium async | tiphys / best "
             "Gymnasium |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        best = np.nanmax([r["sync"], r["async_"]])
        lines.append(f"| {r['task']} | {r['n']} | {r['tiphys']:.0f} | {r['sync']:.0f} | "
                     f"{r['async_']:.0f} | **{r['tiphys'] / best:.3f}x** |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        write_section(MARK, text)


if __name__ == "__main__":
    main()
