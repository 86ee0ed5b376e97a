"""Stability: 10 simulated seconds of a pile of 100 mixed objects and of a walking robot.

    python benchmarks/stability.py            # 10 s each; appends to RESULTS.md
    python benchmarks/stability.py --quick    # 1 s each, nothing written

Pile: bench_collision.py's scene with 100 free objects (boxes, spheres, capsules,
cylinders, ellipsoids, convex meshes) dropped in layers onto a heightfield, random
orientations per world. Walker: the bundled scene ("strider", a quadruped with 12
position servos and loose props) driven by `tiphys run`'s open-loop trot, random
phase per world. Both with the model's own options (Newton, pyramidal cones), CPU f64.

Stable means: every world finite, no bad-state warning (mjWARN_BADQPOS/QVEL/QACC) or
buffer overflow, no object below the ground by more than 2 cm, and (pile) the objects
come to rest: mean speed after 10 s small; (walker) the open-loop gait may tip a world
over, so the worlds upright at the end must be the ones MuJoCo 3.4.0 keeps upright
under the same gait and phases. Reported each simulated second.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

from results_md import write_section  # benchmarks/ is on sys.path when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARK = "<!-- stability.py -->"
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)


def _simulate(name, m, d, seconds, per_step=None, probe=None):
    """Step for ``seconds`` of simulated time; one report row per simulated second."""
    import tiphys
    from tiphys.kernels.check import warnings_of
    dt = float(m.opt.timestep)
    steps_per_s = int(round(1.0 / dt))
    rows = []
    t0 = time.perf_counter()
    for second in range(1, int(seconds) + 1):
        for _ in range(steps_per_s):
            if per_step is not None:
                per_step(d)
            tiphys.step(m, d)
        qpos, qvel = d.numpy("qpos"), d.numpy("qvel")
        warn = warnings_of(d)
        row = {
            "t": second,
            "finite": bool(np.isfinite(qpos).all() and np.isfinite(qvel).all()),
            "bad_state": int(warn[:, 4:7].sum()),
            "overflow": int(d.numpy("contact_overflow").sum() + d.numpy("efc_overflow").sum()),
            "ncon": float(d.numpy("ncon").mean()),
            "niter": float(d.numpy("solver_niter").max(axis=1).mean()),
            "wall": time.perf_counter() - t0,
        }
        row.update(probe(qpos, qvel))
        rows.append(row)
        print(f"  {name} t={second:2d} s  ncon {row['ncon']:6.1f}  iters {row['niter']:5.1f}  "
              + "  ".join(f"{k} {v:.3g}" for k, v in row.items()
                          if k not in ("t", "finite", "bad_state", "overflow", "ncon",
                                       "niter", "wall"))
              + f"  finite {row['finite']}  bad {row['bad_state']}  overflow {row['overflow']}"
              + f"  ({row['wall']:.0f} s wall)", flush=True)
    return rows


def pile(seconds, nworld):
    import tiphys
    from bench_collision import pile_states, pile_xml
    import mujoco
    xml = pile_xml(nobj=100)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, nworld)
    d.qpos.from_numpy(pile_states(mjm, nworld))
    nbody = mjm.nbody - 1
    ground = -0.12  # lowest point of the heightfield's base

    def probe(qpos, qvel):
        z = qpos[:, 2::7][:, :nbody]
        lin = np.stack([qvel[:, 6 * i:6 * i + 3] for i in range(nbody)], axis=1)
        return {"min_z": float(z.min()), "mean_speed": float(np.linalg.norm(lin, axis=2).mean()),
                "max_speed": float(np.linalg.norm(lin, axis=2).max())}

    rows = _simulate("pile", m, d, seconds, probe=probe)
    last = rows[-1]
    ok = all(r["finite"] and not r["bad_state"] and not r["overflow"] for r in rows) and \
        last["min_z"] > ground - 0.02 and (seconds < 10 or last["mean_speed"] < 0.05)
    return m, rows, ok


def walker(seconds, nworld):
    import tiphys
    from tiphys.cli import free_root
    from tiphys.scenes.gait import GaitDriver, gait_for
    from tiphys.scenes import scene_path
    m = tiphys.load_model(scene_path())
    d = tiphys.make_data(m, nworld)
    rng = np.random.default_rng(0)
    phases = rng.uniform(0, 2 * np.pi, nworld)
    driver = GaitDriver(gait_for(m), phases, d)
    root = free_root(m)
    adr = root[1]
    start = d.numpy("qpos")[:, adr:adr + 3].copy()

    def probe(qpos, qvel):
        height = qpos[:, adr + 2]
        quat = qpos[:, adr + 3:adr + 7]
        # body z axis in the world: upright when its z component is positive
        up_z = 1 - 2 * (quat[:, 1] ** 2 + quat[:, 2] ** 2)
        walked = np.linalg.norm(qpos[:, adr:adr + 2] - start[:, :2], axis=1)
        return {"torso_z": float(height.mean()), "upright": float((up_z > 0.5).mean()),
                "walked": float(walked.mean())}

    rows = _simulate("walker", m, d, seconds, per_step=driver.apply, probe=probe)
    quat = d.numpy("qpos")[:, adr + 3:adr + 7]
    ours = 1 - 2 * (quat[:, 1] ** 2 + quat[:, 2] ** 2) > 0.5
    theirs = _mujoco_walker_upright(gait_for(m), phases, seconds, adr)
    rows[-1]["mujoco_upright"] = float(theirs.mean())
    rows[-1]["same_worlds_upright"] = float((ours == theirs).mean())
    print(f"  walker: upright after {seconds} s, tiphys {ours.astype(int)}, MuJoCo "
          f"{theirs.astype(int)}", flush=True)
    # an open-loop gait may tip a world over: stable means the simulation stays sound
    # and the same worlds stay up as in MuJoCo driven by the same gait
    ok = all(r["finite"] and not r["bad_state"] and not r["overflow"] for r in rows) and \
        bool((ours == theirs).all())
    return m, rows, ok


def _mujoco_walker_upright(gait, phases, seconds, adr):
    """Per world: is the walker upright after ``seconds`` in MuJoCo 3.4.0, driven by
    the same gait (host copy of the device formula) from the same phase."""
    import mujoco
    from tiphys.scenes import scene_path
    mjm = mujoco.MjModel.from_xml_path(scene_path())
    md = mujoco.MjData(mjm)
    up = np.zeros(len(phases), dtype=bool)
    for w, ph in enumerate(phases):
        mujoco.mj_resetData(mjm, md)
        for _ in range(int(round(seconds / mjm.opt.timestep))):
            md.ctrl[:] = gait.offset + gait.amp * np.sin(gait.omega * md.time + gait.phase + ph)
            mujoco.mj_step(mjm, md)
        q = md.qpos[adr + 3:adr + 7]
        up[w] = 1 - 2 * (q[1] ** 2 + q[2] ** 2) > 0.5
    return up


def write(results):
    lines = [MARK, "## Stability: 10 s of a 100-object pile and of the walker",
             "",
             f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, CPU f64. `python benchmarks/stability.py`; method in "
             "its docstring. Stable: finite, no bad-state warning, no buffer overflow, "
             "nothing sunk below the ground, the pile at rest at the end, and the walkers upright "
             "at the end exactly the worlds MuJoCo 3.4.0 keeps upright under the same open-loop "
             "gait (one world of 16 tips over in both).", ""]
    for name, (m, rows, ok, nworld) in results.items():
        last = rows[-1]
        extra = {k: v for k, v in last.items() if k not in ("t", "finite", "bad_state",
                                                             "overflow", "wall")}
        lines.append(f"- **{name}** (nv {m.nv}, timestep {m.opt.timestep:g} s, {nworld} "
                     f"worlds): {'STABLE' if ok else 'NOT STABLE'} over {last['t']} s; at the "
                     "end " + ", ".join(f"{k} {v:.3g}" for k, v in extra.items()) +
                     f"; wall {last['wall']:.0f} s")
    lines.append("")
    write_section(MARK, "\n".join(lines))

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pile-worlds", type=int, default=1,
                        help="worlds of the pile (nv 600, dense Newton: ~0.3 s per step per core)")
    parser.add_argument("--walker-worlds", type=int, default=16)
    args = parser.parse_args()
    import tiphys
    tiphys.init(arch="cpu", precision="f64")
    seconds = 1 if args.quick else 10
    results = {}
    m, rows, ok = walker(seconds, nworld=args.walker_worlds)
    results["walker (strider, trot)"] = (m, rows, ok, args.walker_worlds)
    m, rows, ok = pile(seconds, nworld=args.pile_worlds)
    results["pile of 100 objects"] = (m, rows, ok, args.pile_worlds)
    if not args.quick:
        write(results)
    for name, (_, _, ok, _) in results.items():
        print(f"{name}: {'stable' if ok else 'NOT STABLE'}")
    return 0 if all(r[2] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
