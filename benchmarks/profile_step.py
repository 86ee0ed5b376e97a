"""Where a replayed one-world CPU step spends its time, kernel by kernel.

    python benchmarks/profile_step.py [--model gym/humanoid.xml] [--nworld 1]
                                      [--steps 2000] [--top 25]

Steps the model (``--settle`` steps with random controls) until its step is replayed
natively (tiphys/replay.py), then runs the
native program with each compiled task timed (``_native_replay.timed``) and prints
the kernels by total time per step, with the share of the step, the number of tasks
and launches, and the whole step's time next to the sum (the rest: array fills and
the Python around the replay). Taichi's kernel profiler sees nothing of replayed
steps; this does, and it times exactly the code a step runs.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gym/humanoid.xml")
    ap.add_argument("--nworld", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--settle", type=int, default=10,
                    help="steps before profiling, with random controls redrawn every 10")
    ap.add_argument("--serial-worlds", type=int, default=None,
                    help="serial twins up to this many worlds (default: tiphys's)")
    args = ap.parse_args()
    import numpy as np

    import tiphys
    from tiphys import launch, replay
    from oracle import corpus_dir
    tiphys.init(arch="cpu", precision="f64")
    if args.serial_worlds is not None:
        launch.SERIAL["worlds"] = args.serial_worlds
    m = tiphys.load_model(os.path.join(corpus_dir(), args.model))
    d = tiphys.make_data(m, args.nworld)
    rng = np.random.default_rng(0)
    lo, hi = (m.actuator_ctrlrange.to_numpy().reshape(-1, 2)[:m.nu].T if m.nu else (0, 0))
    for k in range(max(10, args.settle)):
        if m.nu and k % 10 == 0:
            d.ctrl.from_numpy(rng.uniform(lo, hi, (args.nworld, m.nu)))
        tiphys.step(m, d)
    recording = d.scratch.replay["step"]
    if not recording.native:
        sys.exit("the step is not replayed natively here (see tiphys/replay.py)")
    names = {}
    for table in list(launch._TABLES.values()):
        for entry in list(table.values()):
            if entry.ctx is not None:
                names[id(entry.ctx)] = entry.name
    # which kernel each native pair belongs to, in the program's order
    labels = []
    steps = recording.native[0]
    for function, compiled, ctx in recording.calls:
        if getattr(function, "__name__", None) == "launch_kernel":
            tasks, _ = replay._native_replay.tasks(function.__self__, compiled, ctx)
            labels.extend([names.get(id(ctx), "?")] * len(tasks))
        elif function is launch._fill_again and \
                replay._fill_spec(recording.prog, compiled(), ctx) is not None:
            labels.append("(array fill)")  # a C twin of the runtime's fill
    launches = defaultdict(int)
    for function, compiled, ctx in recording.calls:
        if getattr(function, "__name__", None) == "launch_kernel":
            launches[names.get(id(ctx), "?")] += 1
    runs = [step for step in steps if isinstance(step, bytes)]
    slots = [np.zeros(len(run) // 16) for run in runs]
    # every CHUNK steps the worlds go back to the state after the warm-up steps (not
    # timed), so that the profile is of that state's neighbourhood, not of wherever
    # thousands of steps lead
    chunk = 50
    spec = tiphys.State.INTEGRATION
    start = tiphys.get_state(m, d, spec)
    nchunk = max(1, args.steps // chunk)
    timed_total = step_time = 0.0
    for _ in range(nchunk):
        tiphys.set_state(m, d, start, spec)
        t0 = time.perf_counter()
        for _ in range(chunk):
            for step in steps:
                if step.__class__ is bytes:
                    replay._native_replay.timed(step, slots[runs.index(step)])
                else:
                    step[0](step[1], step[2])
        timed_total += time.perf_counter() - t0
        tiphys.set_state(m, d, start, spec)
        t0 = time.perf_counter()
        for _ in range(chunk):
            tiphys.step(m, d)
        step_time += time.perf_counter() - t0
    nsteps = nchunk * chunk
    timed_total /= nsteps
    step_time /= nsteps
    per_pair = np.concatenate(slots) / nsteps
    assert len(per_pair) == len(labels)
    by_kernel, tasks = defaultdict(float), defaultdict(int)
    for label, t in zip(labels, per_pair):
        by_kernel[label] += t
        tasks[label] += 1
    total = per_pair.sum()
    print(f"{args.model}, {args.nworld} world(s): step {step_time * 1e6:.1f} us; tasks "
          f"{total * 1e6:.1f} us in {len(per_pair)} tasks of "
          f"{sum(launches.values())} launches (timed loop {timed_total * 1e6:.1f} us)")
    nefc = d.nefc.to_numpy()
    print(f"rows (nefc) at the profiled state: mean {nefc.mean():.1f}, max {nefc.max()}; "
          f"solver iterations of the last stage: mean "
          f"{d.solver_niter.to_numpy()[:, 0].mean():.1f}")
    print(f"{'kernel':40s} {'us/step':>9s} {'share':>6s} {'tasks':>6s} {'launches':>8s}")
    for label, t in sorted(by_kernel.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{label:40s} {t * 1e6:9.2f} {t / total:6.1%} {tasks[label]:6d} "
              f"{launches[label]:8d}")


if __name__ == "__main__":
    main()
