"""Benchmark: collision detection on a pile of mixed objects over a heightfield.

    python benchmarks/bench_collision.py           # nworld 1, 64, 1024; appends to RESULTS.md
    python benchmarks/bench_collision.py --quick   # nworld 1 and 64, nothing written

The scene (``pile_xml``): a 32x32 heightfield and N free objects (boxes, spheres,
capsules, cylinders, ellipsoids, convex meshes) stacked in a jittered grid so that
neighbours touch and the bottom layer presses into the terrain. Each world gets its own
random jitter and orientations. Timed: ``tiphys.kinematics`` + ``collision`` on all
worlds at once (Taichi CPU backend, all cores) against MuJoCo C running
``mj_kinematics`` + ``mj_collision`` on the same states one world after another
(one thread, from a Python loop). Rates are world-evaluations/s and contacts/s; each
time is the best of 3 batches of at least 0.3 s; results are checked first (ncon per
world equal to MuJoCo's).
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
MARK = "<!-- bench_collision.py -->"

_MESH = ("-.06 -.06 -.06  .06 -.06 -.06  -.06 .06 -.06  .06 .06 -.06  "
         "-.05 -.05 .06  .05 -.05 .06  -.05 .05 .06  .05 .05 .06")


def pile_xml(nobj: int = 120, nrow: int = 32, seed: int = 0) -> str:
    """A heightfield and ``nobj`` free objects of every convex type, stacked."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 4 * np.pi, nrow)
    elev = 0.5 + 0.25 * np.sin(x)[:, None] * np.cos(x)[None, :] + 0.1 * rng.random((nrow, nrow))
    elev_txt = " ".join(f"{v:.4f}" for v in elev.ravel())
    shapes = [
        'type="box" size=".06 .05 .04"', 'type="sphere" size=".06"',
        'type="capsule" size=".04 .05"', 'type="cylinder" size=".05 .04"',
        'type="ellipsoid" size=".07 .05 .04"', 'type="mesh" mesh="hull"',
    ]
    side = int(np.ceil(np.sqrt(nobj / 3)))
    bodies = []
    for i in range(nobj):
        layer, rem = divmod(i, side * side)
        r, c = divmod(rem, side)
        pos = (-0.15 * side / 2 + 0.15 * c, -0.15 * side / 2 + 0.15 * r, 0.1 + 0.11 * layer)
        bodies.append(f'<body pos="{pos[0]:.3f} {pos[1]:.3f} {pos[2]:.3f}"><freejoint/>'
                      f'<geom {shapes[i % len(shapes)]}/></body>')
    return f"""<mujoco model="pile">
  <asset>
    <hfield name="terrain" nrow="{nrow}" ncol="{nrow}" size="2 2 .2 .1" elevation="{elev_txt}"/>
    <mesh name="hull" vertex="{_MESH}"/>
  </asset>
  <worldbody>
    <geom type="hfield" hfield="terrain" pos="0 0 -.12"/>
    {chr(10).join(bodies)}
  </worldbody>
</mujoco>"""


def pile_states(mjm, nworld: int, seed: int = 1) -> np.ndarray:
    """Jittered positions and random orientations of every free body, per world."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        qpos[:, adr:adr + 3] += rng.uniform(-0.02, 0.02, (nworld, 3))
        q = rng.normal(size=(nworld, 4))
        qpos[:, adr + 3:adr + 7] = q / np.linalg.norm(q, axis=1, keepdims=True)
    return qpos


def _best(fn, min_s=0.3, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_s:
                break
        best = min(best, elapsed / n)
    return best


def run(nworlds, nobj):
    import mujoco
    import taichi as ti

    import tiphys
    from tiphys.kernels.collision_driver import collision, plan
    tiphys.init("cpu", "f64")
    xml = pile_xml(nobj)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    rows = []
    for nworld in nworlds:
        qpos = pile_states(mjm, nworld)
        d = tiphys.make_data(m, nworld, njmax=0)  # collision only: no constraint rows
        full = np.zeros(d.qpos.shape)
        full[:, :m.nq] = qpos
        d.qpos.from_numpy(full)

        def ours():
            tiphys.kinematics(m, d)
            collision(m, d)
            ti.sync()

        t0 = time.perf_counter()
        ours()
        first = time.perf_counter() - t0
        ncon = d.numpy("ncon")
        mjd = mujoco.MjData(mjm)
        ref = []
        for w in range(nworld):
            mjd.qpos[:] = qpos[w]
            mujoco.mj_kinematics(mjm, mjd)
            mujoco.mj_collision(mjm, mjd)
            ref.append(mjd.ncon)
        same = int(np.sum(ncon == np.array(ref)))
        t_ours = _best(ours)

        def theirs():
            for w in range(nworld):
                mjd.qpos[:] = qpos[w]
                mujoco.mj_kinematics(mjm, mjd)
                mujoco.mj_collision(mjm, mjd)

        t_mj = _best(theirs)
        rows.append(dict(nworld=nworld, t_ours=t_ours, t_mj=t_mj, ncon=int(ncon.sum()),
                         same=same, first=first, ncand=plan(m).ncand))
        print(f"nworld {nworld}: tiphys {nworld / t_ours:,.0f} worlds/s "
              f"({ncon.sum() / t_ours:,.0f} contacts/s), MuJoCo {nworld / t_mj:,.0f} worlds/s, "
              f"ratio {t_mj / t_ours:.2f}x, ncon equal in {same}/{nworld} worlds", flush=True)
    return m, mjm, rows


def write(m, mjm, rows, nobj):
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [MARK, "## collision: pile on a heightfield", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}; "
             f"machine: {os.cpu_count()} CPU cores ({platform.platform()}); load avg {load:.2f}",
             f"- scene: `benchmarks/bench_collision.py pile_xml({nobj})`: 32x32 heightfield, "
             f"{nobj} free objects (box, sphere, capsule, cylinder, ellipsoid, convex mesh); "
             f"ngeom={mjm.ngeom}, {rows[0]['ncand']} candidate geom pairs per world",
             "- timed: kinematics + collision, all worlds at once (tiphys, Taichi CPU f64, all "
             "cores) vs MuJoCo C mj_kinematics + mj_collision per world (one thread)", "",
             "| nworld | tiphys worlds/s | tiphys contacts/s | MuJoCo worlds/s | ratio | "
             "contacts/world | ncon = MuJoCo's | first call |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['nworld']} | {r['nworld'] / r['t_ours']:,.0f} | "
                     f"{r['ncon'] / r['t_ours']:,.0f} | {r['nworld'] / r['t_mj']:,.0f} | "
                     f"**{r['t_mj'] / r['t_ours']:.2f}x** | {r['ncon'] / r['nworld']:.1f} | "
                     f"{r['same']}/{r['nworld']} | {r['first']:.2f} s |")
    write_section(MARK, "\n".join(lines))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nobj", type=int, default=120)
    args = ap.parse_args()
    nworlds = (1, 64) if args.quick else (1, 64, 1024)
    m, mjm, rows = run(nworlds, args.nobj)
    if not args.quick:
        write(m, mjm, rows, args.nobj)


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    main()
