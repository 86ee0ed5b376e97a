"""Benchmark: prepared launches (tiphys/launch.py) against Taichi's own launch path,
same process, same model, alternating; and the results of both bit for bit.

    python benchmarks/bench_launch.py [--arch cpu|cuda] [--precision f64|f32]
                                      [--model gym/humanoid.xml] [--nworld 1 64 1024]

Prints, per nworld, milliseconds per ``tiphys.step`` (``ti.sync()`` included, best of
3 batches of >= 1 s) with Taichi's path and with prepared launches, the launches per
step, and whether qpos after 30 steps from the same state is identical.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="cpu")
    ap.add_argument("--precision", default="f64")
    ap.add_argument("--model", default="gym/humanoid.xml")
    ap.add_argument("--nworld", type=int, nargs="*", default=[1, 64, 1024])
    args = ap.parse_args()
    import numpy as np
    import taichi as ti

    import tiphys
    import tiphys.launch as launch
    from oracle import corpus_dir
    from tiphys.launch import count_launches
    tiphys.init(arch=args.arch, precision=args.precision)
    m = tiphys.load_model(os.path.join(corpus_dir(), args.model))
    rows = []
    for nworld in args.nworld:
        times, qpos = {False: [], True: []}, {}
        for enabled in (False, True, False, True, False, True):
            launch.ENABLED = enabled
            d = tiphys.make_data(m, nworld)
            for _ in range(2):
                tiphys.step(m, d)
            ti.sync()
            t0, n = time.perf_counter(), 0
            while time.perf_counter() - t0 < 1.0:
                tiphys.step(m, d)
                n += 1
            ti.sync()
            times[enabled].append((time.perf_counter() - t0) / n)
            if enabled not in qpos:
                d = tiphys.make_data(m, nworld)
                for _ in range(30):
                    tiphys.step(m, d)
                qpos[enabled] = d.numpy("qpos")
        with count_launches() as launches:
            tiphys.step(m, d)
        ti.sync()
        row = dict(nworld=nworld, taichi_ms=1e3 * min(times[False]),
                   prepared_ms=1e3 * min(times[True]), launches=launches["n"],
                   identical=bool(np.array_equal(qpos[False], qpos[True])))
        rows.append(row)
        print(f"nworld {nworld}: Taichi path {row['taichi_ms']:.2f} ms/step, prepared "
              f"{row['prepared_ms']:.2f} ms/step ({row['taichi_ms'] / row['prepared_ms']:.2f}x),"
              f" {row['launches']} launches/step, identical results: {row['identical']}",
              flush=True)
    print(json.dumps(dict(arch=args.arch, precision=args.precision, model=args.model,
                          rows=rows)))


if __name__ == "__main__":
    main()
