"""Benchmark: large scenes (issue 17) against MuJoCo C on the same machine.

    python benchmarks/bench_large.py           # all three scenes; writes RESULTS.md
    python benchmarks/bench_large.py --quick   # shorter settling, fewer worlds; nothing written

Scenes:
- ``pile500``: 500 free primitives (boxes, spheres, capsules, ellipsoids, cylinders,
  sizes 3.5-6 cm, random orientations) in five staggered layers just above a plane
  (each layer shifted by half a cell, so that it falls into the gaps), settled by
  MuJoCo for SETTLE steps so that they rest on each other; then both engines step
  from that state, 1 world (tiphys: ``step`` on the CPU backend, ``ti.sync()``
  included; MuJoCo: ``mj_step`` in a loop, one thread), REPEATS batches of TIMED_STEPS
  steps each, the engines alternately, the best batch of each reported.
- ``render1000``: the 999-object scene of bench_render.py (objects resting on a plane
  in a grid), same method.
- ``grid10k``: 10,000 free spheres and boxes resting on a plane in a 100 x 100 grid
  (the dynamic broadphase: kernels/broadphase_dynamic.py), settled 20 steps, same
  method.
- ``humanoid3``: three dm_control humanoids attached side by side with MjSpec (81 dofs,
  contacts with the floor and each other), at 1, 64 and 4096 worlds (--quick: 1, 64):
  tiphys ``step`` on all worlds against ``mujoco.rollout`` with one MjData per core.

For each: time per step (or world-steps/s), contacts and constraint rows per world in
both engines, tiphys's launches per step and device bytes per world after stepping
(the Data fields from the field table plus the work arrays the stages keep: solver,
Newton's sparse Hessian, collision's emission and broadphase buffers), make_data's
time, and MuJoCo's arena + buffer bytes per MjData.
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

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "<!-- bench_large.py -->"
KINDS = ("box", "sphere", "capsule", "ellipsoid", "cylinder")
SETTLE, QUICK_SETTLE = 200, 100
TIMED_STEPS = 3
REPEATS = 3  # single-world scenes: batches of TIMED_STEPS steps per engine, best kept


def pile_xml(n: int = 500, seed: int = 0) -> str:
    """``n`` free primitives of the five kinds in layers of 10 x 10 (13 cm apart, every
    other layer shifted by half a cell), each just above the one below, over a plane."""
    rng = np.random.default_rng(seed)
    bodies = []
    for k in range(n):
        layer, rem = divmod(k, 100)
        row, col = divmod(rem, 10)
        kind = KINDS[k % len(KINDS)]
        a, b, c = rng.uniform(0.035, 0.06, 3)
        size = {"box": f"{a:.3f} {b:.3f} {c:.3f}", "sphere": f"{a:.3f}",
                "capsule": f"{0.6 * a:.3f} {b:.3f}", "ellipsoid": f"{a:.3f} {b:.3f} {c:.3f}",
                "cylinder": f"{a:.3f} {0.8 * b:.3f}"}[kind]
        x, y = 0.13 * (col - 4.5) + 0.065 * (layer % 2), 0.13 * (row - 4.5)
        z = 0.08 + 0.14 * layer
        euler = rng.uniform(-np.pi, np.pi, 3)
        bodies.append(f'<body pos="{x:.3f} {y:.3f} {z:.3f}" euler="{euler[0]:.3f} '
                      f'{euler[1]:.3f} {euler[2]:.3f}"><freejoint/><geom type="{kind}" '
                      f'size="{size}"/></body>')
    return f"""<mujoco model="pile{n}">
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    {chr(10).join(bodies)}
  </worldbody>
</mujoco>"""


def grid_xml(n: int = 10000, spacing: float = 0.12) -> str:
    """``n`` free spheres and boxes (alternating) resting on a plane in a square grid,
    ``spacing`` apart (5 cm sizes: neighbours do not touch, each rests on the plane)."""
    side = int(np.ceil(np.sqrt(n)))
    bodies = []
    for k in range(n):
        x, y = spacing * (k % side - side / 2), spacing * (k // side - side / 2)
        geom = 'size=".05"' if k % 2 == 0 else 'type="box" size=".045 .045 .045"'
        z = 0.05 if k % 2 == 0 else 0.045
        bodies.append(f'<body pos="{x:.3f} {y:.3f} {z}"><freejoint/><geom {geom}/></body>')
    return f"""<mujoco model="grid{n}">
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="{spacing * side} {spacing * side} .1"/>
    {chr(10).join(bodies)}
  </worldbody>
</mujoco>"""


def humanoid3_xml(corpus: str) -> str:
    """Three dm_control humanoids side by side (MjSpec attach), as one MJCF text."""
    import mujoco
    path = os.path.join(corpus, "dmc", "humanoid.xml")
    parent = mujoco.MjSpec.from_file(path)
    for k in (1, 2):
        child = mujoco.MjSpec.from_file(path)
        frame = parent.worldbody.add_frame(pos=[0, 1.2 * k, 0])
        frame.attach_body(child.worldbody.first_body(), f"h{k}_", "")
    parent.compile()
    return parent.to_xml()


def _mj_bytes(mjm) -> int:
    return int(mjm.narena + mjm.nbuffer)


def _array_bytes(obj, seen: set) -> int:
    """Bytes of the Taichi ndarrays reachable from ``obj`` (dicts, sequences,
    namespaces), each counted once."""
    from taichi.lang._ndarray import Ndarray
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, Ndarray):
        n = int(np.prod(obj.shape)) * int(np.prod(getattr(obj, "element_shape", ()) or (1,)))
        return n * (8 if "64" in str(obj.dtype) else 4)
    if isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, (list, tuple)):
        items = obj
    elif hasattr(obj, "__dict__") and not callable(obj):
        items = vars(obj).values()
    else:
        return 0
    return sum(_array_bytes(v, seen) for v in items)


def _device_bytes(m, d) -> int:
    """Device bytes per world after stepping: the Data fields (from the field table)
    plus every work array the stages keep on the Data (solver, Newton's sparse
    Hessian, collision's emission buffers) and the collision plan keeps for it
    (broadphase)."""
    from tiphys.kernels.collision_driver import plan
    from tiphys.kernels.scratch import SCRATCH
    from tiphys.model import DATA_EXTRA_FIELDS, DATA_FIELDS, data_bytes
    seen = {id(getattr(d, name)) for name, *_ in DATA_FIELDS + DATA_EXTRA_FIELDS}
    scratch = sum(_array_bytes(getattr(d.scratch, name), seen) for name in SCRATCH
                  if name not in ("bound", "fd_data"))  # (bound: the Data's own arrays)
    scratch += _array_bytes(plan(m)._sweeps.get(d), seen)
    return data_bytes(d._sizes, d.nworld) // d.nworld + scratch // d.nworld


def _stats(d) -> tuple[float, float]:
    return float(d.numpy("ncon").mean()), float(d.numpy("nefc").mean())


def single_world(name: str, xml: str, settle: int) -> dict:
    """Settle with MuJoCo, then time both engines from the settled state."""
    import mujoco
    import taichi as ti

    import tiphys
    from tiphys.launch import count_launches
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    t0 = time.perf_counter()
    for _ in range(settle):
        mujoco.mj_step(mjm, mjd)
    settle_s = time.perf_counter() - t0
    qpos, qvel = mjd.qpos.copy(), mjd.qvel.copy()
    spec = mujoco.mjtState.mjSTATE_INTEGRATION  # (with MuJoCo's warm start)
    settled = np.zeros(mujoco.mj_stateSize(mjm, spec))
    mujoco.mj_getState(mjm, mjd, settled, spec)

    def mujoco_batch() -> float:
        mujoco.mj_setState(mjm, mjd, settled, spec)
        t0 = time.perf_counter()
        for _ in range(TIMED_STEPS):
            mujoco.mj_step(mjm, mjd)
        return (time.perf_counter() - t0) / TIMED_STEPS

    # tiphys from the same state
    t0 = time.perf_counter()
    m = tiphys.load_model_from_string(xml)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = tiphys.make_data(m, 1)
    make_data_s = time.perf_counter() - t0

    def reset():
        d.qpos.from_numpy(qpos[None])
        d.qvel.from_numpy(qvel[None])

    reset()
    t0 = time.perf_counter()
    tiphys.step(m, d)
    ti.sync()
    first_s = time.perf_counter() - t0
    with count_launches() as launches:
        tiphys.step(m, d)
    ti.sync()
    def tiphys_batch() -> float:
        reset()
        ti.sync()
        t0 = time.perf_counter()
        for _ in range(TIMED_STEPS):
            tiphys.step(m, d)
        ti.sync()
        return (time.perf_counter() - t0) / TIMED_STEPS

    # the engines alternately, the best of REPEATS batches each (a shared machine's
    # slow spells then hit neither engine's figure alone)
    ti_s = mj_s = float("inf")
    for _ in range(REPEATS):
        mj_s = min(mj_s, mujoco_batch())
        ti_s = min(ti_s, tiphys_batch())
    mj_ncon, mj_nefc, mj_nisland = int(mjd.ncon), int(mjd.nefc), int(mjd.nisland)
    ncon, nefc = _stats(d)
    tiphys.check_warnings(m, d)
    nbytes = _device_bytes(m, d)
    return dict(name=name, nbody=mjm.nbody - 1, nv=mjm.nv, settle=settle, settle_s=settle_s,
                tiphys_s=ti_s, mujoco_s=mj_s, ncon=ncon, nefc=nefc, mj_ncon=mj_ncon,
                mj_nefc=mj_nefc, mj_nisland=mj_nisland, launches=launches["n"], bytes=nbytes,
                mj_bytes=_mj_bytes(mjm), njmax=int(d.njmax), load_s=load_s,
                first_s=first_s, make_data_s=make_data_s)


def many_worlds(name: str, xml: str, nworlds, settle: int) -> dict:
    """World-steps/s of tiphys step against mujoco.rollout, same start state (MuJoCo
    settled, small per-world velocity noise)."""
    import mujoco
    import taichi as ti
    from mujoco import rollout

    import tiphys
    from tiphys.launch import count_launches
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    for _ in range(settle):
        mujoco.mj_step(mjm, mjd)
    m = tiphys.load_model_from_string(xml)
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(mjm) for _ in range(nthread)]
    rows = []
    for nworld in nworlds:
        rng = np.random.default_rng(nworld)
        qpos = np.repeat(mjd.qpos[None], nworld, 0)
        qvel = mjd.qvel[None] + 0.01 * rng.standard_normal((nworld, mjm.nv))
        d = tiphys.make_data(m, nworld)

        def reset():
            d.qpos.from_numpy(qpos)
            d.qvel.from_numpy(qvel)

        reset()
        tiphys.step(m, d)
        ti.sync()
        with count_launches() as launches:
            tiphys.step(m, d)
        ti.sync()
        reset()
        t0 = time.perf_counter()
        tiphys.step(m, d)
        ti.sync()
        per = time.perf_counter() - t0
        nstep = int(max(2, min(50, 1.0 / per)))
        best = 0.0
        for _ in range(2):
            reset()
            t0 = time.perf_counter()
            for _ in range(nstep):
                tiphys.step(m, d)
            ti.sync()
            best = max(best, nworld * nstep / (time.perf_counter() - t0))
        ncon, nefc = _stats(d)
        tiphys.check_warnings(m, d)
        nbytes = _device_bytes(m, d)
        del d
        # MuJoCo rollout from the same states
        state = np.zeros((nworld, mujoco.mj_stateSize(mjm, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
        mjd2 = mujoco.MjData(mjm)
        for w in range(nworld):
            mjd2.qpos[:] = qpos[w]
            mjd2.qvel[:] = qvel[w]
            mjd2.time = mjd.time
            mujoco.mj_getState(mjm, mjd2, state[w], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        mj_nstep = int(max(5, min(200, 20000 // nworld)))
        ctrl = np.zeros((nworld, mj_nstep, mjm.nu))
        out = np.empty((nworld, mj_nstep, state.shape[1]))
        mj_best = 0.0
        for _ in range(2):
            t0 = time.perf_counter()
            rollout.rollout(mjm, datas, state, ctrl, nstep=mj_nstep, state=out)
            mj_best = max(mj_best, nworld * mj_nstep / (time.perf_counter() - t0))
        mujoco.mj_setState(mjm, mjd2, out[0, -1], mujoco.mjtState.mjSTATE_FULLPHYSICS)
        mujoco.mj_forward(mjm, mjd2)
        rows.append(dict(nworld=nworld, tiphys=best, mujoco=mj_best, ncon=ncon, nefc=nefc,
                         mj_ncon=int(mjd2.ncon), mj_nefc=int(mjd2.nefc),
                         launches=launches["n"], bytes=nbytes, nstep=nstep))
        print(f"  {name} nworld {nworld}: tiphys {best:.0f}/s, MuJoCo {mj_best:.0f}/s",
              file=sys.stderr, flush=True)
    return dict(name=name, nv=mjm.nv, nbody=mjm.nbody - 1, settle=settle, rows=rows,
                mj_bytes=_mj_bytes(mjm), nthread=nthread)


def report(single, multi, elapsed) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [MARK, "## Large scenes (`benchmarks/bench_large.py`)", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}; "
             f"whole run {elapsed:.0f} s",
             f"- machine: {os.cpu_count()} CPU cores, {_cpu()} ({platform.platform()}); load "
             f"average (1 min) at the end: {load:.2f}",
             "- both engines with each model's options as written (jacobian auto: sparse "
             "from nv 60 in both; islands on); tiphys on the CPU backend in f64, MuJoCo 3.4.0",
             "", f"One world, from a state MuJoCo settled (time per step over {TIMED_STEPS} "
             f"steps, the best of {REPEATS} such batches per engine, taken alternately):", "",
             "| scene | bodies | nv | tiphys ms/step | MuJoCo ms/step | tiphys / MuJoCo time "
             "| contacts (tiphys / MuJoCo) | rows (tiphys / MuJoCo) | MuJoCo islands | launches | bytes per world "
             "(tiphys / MuJoCo) | make_data s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in single:
        lines.append(
            f"| {r['name']} | {r['nbody']} | {r['nv']} | {1e3 * r['tiphys_s']:.1f} | "
            f"{1e3 * r['mujoco_s']:.1f} | {r['tiphys_s'] / r['mujoco_s']:.2f}x | "
            f"{r['ncon']:.0f} / {r['mj_ncon']} | {r['nefc']:.0f} / {r['mj_nefc']} | "
            f"{r['mj_nisland']} | {r['launches']} | {r['bytes'] / 2**20:.1f} MiB / {r['mj_bytes'] / 2**20:.1f} MiB | "
            f"{r['make_data_s']:.2f} |")
    for res in multi:
        lines += ["", f"{res['name']} ({res['nv']} dofs, {res['nbody']} bodies): world-steps/s, "
                  f"tiphys `step` on all worlds against `mujoco.rollout` on {res['nthread']} "
                  "threads, from a MuJoCo-settled state with per-world velocity noise:", "",
                  "| nworld | tiphys | MuJoCo | ratio | contacts / world (tiphys / MuJoCo world 0) "
                  "| rows / world | launches | bytes per world (tiphys / MuJoCo) |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in res["rows"]:
            lines.append(
                f"| {r['nworld']} | {r['tiphys']:.0f} | {r['mujoco']:.0f} | "
                f"**{r['tiphys'] / r['mujoco']:.3f}x** | {r['ncon']:.1f} / {r['mj_ncon']} | "
                f"{r['nefc']:.0f} / {r['mj_nefc']} | {r['launches']} | "
                f"{r['bytes'] / 2**20:.2f} MiB / {res['mj_bytes'] / 2**20:.2f} MiB |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--scenes", nargs="*",
                    default=["pile500", "render1000", "grid10k", "humanoid3"])
    ap.add_argument("--arch", default="cpu", help="tiphys backend (MuJoCo runs on the CPU)")
    ap.add_argument("--precision", default="f64")
    ap.add_argument("--nworld", type=int, nargs="*", help="humanoid3's batches")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    import tiphys
    from bench_render import scene_xml
    from oracle import corpus_dir
    tiphys.init(arch=args.arch, precision=args.precision)
    settle = QUICK_SETTLE if args.quick else SETTLE
    start = time.perf_counter()
    single, multi = [], []
    for name in args.scenes:
        print(f"{name} ...", file=sys.stderr, flush=True)
        if name == "pile500":
            single.append(single_world(name, pile_xml(), settle))
        elif name == "render1000":
            single.append(single_world(name, scene_xml(), 20))
        elif name == "grid10k":
            single.append(single_world(name, grid_xml(), 20))
        elif name == "humanoid3":
            nworlds = args.nworld or ((1, 64) if args.quick else (1, 64, 4096))
            multi.append(many_worlds(name, humanoid3_xml(corpus_dir()), nworlds, 100))
        else:
            raise SystemExit(f"unknown scene {name!r}: pile500, render1000, grid10k, "
                             "humanoid3")
    text = report(single, multi, time.perf_counter() - start)
    print(text)
    if not args.quick and args.arch == "cpu":
        write_section(MARK, text)


if __name__ == "__main__":
    main()
