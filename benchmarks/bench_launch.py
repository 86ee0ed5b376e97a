"""Benchmark: prepared launches and serial twins (tiphys/launch.py) against Taichi's
own launch path, same process, same model, alternating; and the results bit for bit.

    python benchmarks/bench_launch.py [--arch cpu|cuda] [--precision f64|f32]
                                      [--model gym/humanoid.xml] [--nworld 1 64 1024]

Prints, per nworld, milliseconds per ``tiphys.step`` (``ti.sync()`` included, best of
3 batches of >= 1 s) with Taichi's path, with prepared launches, and (CPU backends)
with prepared launches and serial twins (every loop serial, used up to
``serial_worlds`` worlds: the setting is forced on for this column whatever nworld),
with serial twins and each launch's filled context replayed, the step's recorded
launches replayed from Python, and (the default on CPU backends where
tiphys/_native_replay.c is built) the recording replayed natively, straight into the
compiled tasks; the launches and ndarray
arguments per step, and whether qpos after 30 steps from the same state is identical
in the columns of the same serial setting (it also sets the narrowphase's lanes).
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
    import tiphys.replay as replay_mod
    from oracle import corpus_dir
    from tiphys.launch import count_launches
    tiphys.init(arch=args.arch, precision=args.precision)
    m = tiphys.load_model(os.path.join(corpus_dir(), args.model))
    # (name, prepared launches on, serial twins up to this many worlds, contexts
    # replayed, native replays); the settings are read when a Data's arrays first
    # launch
    serial = launch.SERIAL["worlds"] if launch.SERIAL["cpu"] else 0
    replay = launch.REPLAY["on"]
    native = replay_mod.NATIVE["on"]
    modes = [("taichi", False, 0, False, False), ("prepared", True, 0, False, False)]
    if serial:
        modes.append(("serial", True, 1 << 30, False, False))
    if replay:
        modes.append(("replayed", True, 1 << 30 if serial else 0, True, False))
        if native and replay_mod._native_replay is not None:
            modes.append(("native", True, 1 << 30 if serial else 0, True, True))
    rows = []
    for nworld in args.nworld:
        times, qpos = {name: [] for name, *_ in modes}, {}
        for _ in range(3):
            for name, enabled, worlds, replayed, natively in modes:
                launch.ENABLED = enabled
                launch.SERIAL["worlds"] = worlds
                launch.REPLAY["on"] = replayed
                replay_mod.NATIVE["on"] = natively
                d = tiphys.make_data(m, nworld)
                for _ in range(2):
                    tiphys.step(m, d)
                ti.sync()
                t0, n = time.perf_counter(), 0
                while time.perf_counter() - t0 < 1.0:
                    tiphys.step(m, d)
                    n += 1
                ti.sync()
                times[name].append((time.perf_counter() - t0) / n)
                if name not in qpos:
                    d = tiphys.make_data(m, nworld)
                    for _ in range(30):
                        tiphys.step(m, d)
                    qpos[name] = d.numpy("qpos")
        with count_launches() as launches:
            tiphys.step(m, d)
        ti.sync()
        # the serial setting also picks the narrowphase's lanes (one per world where
        # loops are serial), which can order contacts differently: columns are
        # compared with the first column of the same setting
        first = {}
        for name, _, worlds, *_ in modes:
            first.setdefault(worlds, name)
        identical = all(np.array_equal(qpos[first[worlds]], qpos[name])
                        for name, _, worlds, *_ in modes)
        row = dict(nworld=nworld, launches=launches["n"], arrays=launches["arrays"],
                   identical=identical)
        for name in times:
            row[f"{name}_ms"] = 1e3 * min(times[name])
        rows.append(row)
        text = ", ".join(f"{name} {row[name + '_ms']:.2f} ms/step" for name in times)
        print(f"nworld {nworld}: {text}; {row['launches']} launches and "
              f"{row['arrays']} array arguments per step, identical results: "
              f"{row['identical']}", flush=True)
    launch.SERIAL["worlds"] = serial
    launch.REPLAY["on"] = replay
    replay_mod.NATIVE["on"] = native
    print(json.dumps(dict(arch=args.arch, precision=args.precision, model=args.model,
                          rows=rows)))


if __name__ == "__main__":
    main()
