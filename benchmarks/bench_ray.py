"""Benchmark: tiphys.distributed.RayRollout throughput on this machine.

    python benchmarks/bench_ray.py [--model gym/ant.xml] [--nworld 64] [--nstep 200]
                                   [--workers 1 2 4]

World-steps per second of a rollout of ``--nworld`` worlds (random initial poses,
random controls) split over 1, 2 and 4 Ray workers on a local Ray instance, next to
the same rollout in this one process (``tiphys.rollout``); each pool is warmed with
one short rollout first (its kernels compiled or loaded), and the gathered results
are checked equal to the single process's, world by world.
"""
import argparse
import os
import platform
import time

import numpy as np

import tiphys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gym/ant.xml", help="relative to the corpus")
    ap.add_argument("--nworld", type=int, default=64)
    ap.add_argument("--nstep", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4])
    args = ap.parse_args()
    import ray
    corpus = os.environ.get("TIPHYS_CORPUS", os.path.join(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))), ".cache", "corpus"))
    path = os.path.join(corpus, args.model)
    m = tiphys.load_model(path)
    d = tiphys.make_data(m, args.nworld)
    rng = np.random.default_rng(0)
    state0 = tiphys.get_state(m, d, tiphys.State.FULLPHYSICS)
    control = rng.uniform(-1, 1, (args.nworld, args.nstep, m.nu))
    tiphys.rollout(m, d, state0, control[:, :5])  # warm
    t = time.perf_counter()
    want, _ = tiphys.rollout(m, d, state0, control)
    single = args.nworld * args.nstep / (time.perf_counter() - t)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"{args.model}, {args.nworld} worlds x {args.nstep} steps")
    print(f"one process: {single:,.0f} world-steps/s")
    ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    for n in args.workers:
        with tiphys.distributed.RayRollout(path, nworker=n) as pool:
            pool.rollout(state0, control[:, :5])  # warm
            t = time.perf_counter()
            state, _ = pool.rollout(state0, control)
            rate = args.nworld * args.nstep / (time.perf_counter() - t)
            same = np.array_equal(state, want)
        print(f"{n} Ray worker(s): {rate:,.0f} world-steps/s ({rate / single:.2f}x one "
              f"process), results equal: {same}")
    ray.shutdown()


if __name__ == "__main__":
    main()
