"""Benchmark: flex scenes (issue 18) against MuJoCo C in the same run.

    python benchmarks/bench_flex.py                      # 1 and 64 worlds; writes RESULTS.md
    python benchmarks/bench_flex.py --nworld 1 64 1024 --steps 50
    python benchmarks/bench_flex.py --scenes rope --quick
    python benchmarks/bench_flex.py --arch cuda --precision f32 --nworld 1 64 1024 8192

Scenes (written here; tiphys f64 on the CPU unless ``--arch``/``--precision`` say
otherwise, each backend in its own section of RESULTS.md):
- ``cloth``: a 30 x 30 cloth (flexcomp grid, dim 2, 2700 dofs, edge equality rows) falling
  on a sphere and a box;
- ``cube``: a 6 x 6 x 6 soft cube (flexcomp grid, dim 3, elasticity) dropped on a plane;
- ``rope``: a 1D rope of 40 vertices pinned at one end, draped over a post (capsule).

Each scene is settled by MuJoCo first (``--settle`` steps), then both engines step from
that state: tiphys ``step`` on all worlds at once (``ti.sync()`` included), MuJoCo
``mujoco.rollout`` with one MjData per core. Printed per scene and world count:
world-steps/s of each, their ratio, contacts and constraint rows per world (both
engines), tiphys's launches per step and process CPU time per step (on the CPU
backend the kernels' work too), and tiphys's device bytes
per world. A scene whose flexes tiphys cannot simulate yet is listed with the
NotImplementedError it raises.
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

from results_md import write_section  # noqa: E402

MARK = "<!-- bench_flex.py -->"

SCENES = {
    "cloth": """<mujoco model="cloth">
  <option timestep="0.002" solver="CG" tolerance="1e-6" iterations="50"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <geom type="sphere" size=".15" pos="0 0 .15"/>
    <geom type="box" size=".12 .12 .12" pos=".35 .1 .12"/>
    <flexcomp name="cloth" type="grid" count="30 30 1" spacing=".03 .03 .03" pos=".1 .05 .5"
              dim="2" radius=".004" mass="1">
      <edge equality="true" damping=".01"/>
      <contact condim="3" solref=".01 1" selfcollide="none"/>
    </flexcomp>
  </worldbody>
</mujoco>""",
    "cube": """<mujoco model="cube">
  <option timestep="0.002" solver="CG" tolerance="1e-6" iterations="50"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <flexcomp name="cube" type="grid" count="6 6 6" spacing=".05 .05 .05" pos="0 0 .16"
              dim="3" radius=".002" mass="1">
      <elasticity young="3e3" poisson=".2" damping=".002"/>
      <contact condim="3" selfcollide="none"/>
    </flexcomp>
  </worldbody>
</mujoco>""",
    "rope": """<mujoco model="rope">
  <option timestep="0.002" solver="CG" tolerance="1e-6" iterations="50"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <geom type="capsule" fromto="0 -.3 .4 0 .3 .4" size=".03"/>
    <flexcomp name="rope" type="grid" count="40 1 1" spacing=".02 .02 .02" pos="-.35 0 .5"
              dim="1" radius=".01" mass=".3">
      <edge equality="true" damping=".01"/>
      <contact condim="3" selfcollide="none"/>
      <pin id="0"/>
    </flexcomp>
  </worldbody>
</mujoco>""",
}


def mujoco_rate(mjm, state, nworld: int, nstep: int) -> float:
    """World-steps/s of mujoco.rollout from ``state``, one MjData per core."""
    import mujoco
    from mujoco import rollout
    datas = [mujoco.MjData(mjm) for _ in range(os.cpu_count() or 1)]
    states = np.repeat(state[None], nworld, axis=0)
    rollout.rollout(mjm, datas, states, nstep=min(nstep, 5))
    t0 = time.perf_counter()
    rollout.rollout(mjm, datas, states, nstep=nstep)
    return nworld * nstep / (time.perf_counter() - t0)


def tiphys_rate(m, mjd, nworld: int, nstep: int):
    """(world-steps/s, host ms per step, launches per step, contacts and rows per
    world, device bytes per world) of tiphys.step from MuJoCo's settled state."""
    import taichi as ti
    import tiphys
    from tiphys.launch import count_launches
    from bench_large import _device_bytes
    d = tiphys.make_data(m, nworld)
    for name in ("qpos", "qvel", "act", "qacc_warmstart"):
        value = getattr(mjd, name)
        if value.size:
            field = getattr(d, name)
            field.from_numpy(np.repeat(value[None], nworld, axis=0).astype(
                field.to_numpy().dtype))
    for _ in range(3):
        tiphys.step(m, d)
    ti.sync()
    with count_launches() as counted:
        tiphys.step(m, d)
    ti.sync()
    t0 = time.perf_counter()
    h0 = time.process_time()
    for _ in range(nstep):
        tiphys.step(m, d)
    ti.sync()
    wall = time.perf_counter() - t0
    host = time.process_time() - h0
    ncon = float(d.numpy("ncon").mean())
    nefc = float(d.numpy("nefc").mean())
    return (nworld * nstep / wall, 1e3 * host / nstep, counted["n"], ncon, nefc,
            _device_bytes(m, d))


def device_name(arch: str) -> str:
    """", <GPU name>" on CUDA (nvidia-smi's name), else ""."""
    if arch != "cuda":
        return ""
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return f", GPU {out or 'unknown'}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nworld", type=int, nargs="*", default=[1, 64])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--settle", type=int, default=300)
    ap.add_argument("--scenes", nargs="*", default=sorted(SCENES))
    ap.add_argument("--quick", action="store_true", help="short settling; nothing written")
    ap.add_argument("--arch", default="cpu", help="tiphys backend (MuJoCo runs on the CPU)")
    ap.add_argument("--precision", default="f64")
    args = ap.parse_args()
    import mujoco
    import tiphys
    tiphys.init(arch=args.arch, precision=args.precision)
    mark = MARK if (args.arch, args.precision) == ("cpu", "f64") else \
        f"<!-- bench_flex.py {args.arch} {args.precision} -->"
    device = device_name(args.arch)
    settle = 50 if args.quick else args.settle
    rows, refused = [], {}
    for name in args.scenes:
        xml = SCENES[name]
        mjm = mujoco.MjModel.from_xml_string(xml)
        mjd = mujoco.MjData(mjm)
        for _ in range(settle):
            mujoco.mj_step(mjm, mjd)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state = np.zeros(mujoco.mj_stateSize(mjm, spec))
        mujoco.mj_getState(mjm, mjd, state, spec)
        try:
            m = tiphys.load_model_from_string(xml)
            tiphys.make_data(m, 1)
        except NotImplementedError as exc:
            refused[name] = str(exc)
            print(f"{name}: {exc}", file=sys.stderr)
            continue
        for nworld in args.nworld:
            nstep = max(3, args.steps // (1 if nworld < 256 else 4))
            rate, host_ms, launches, ncon, nefc, nbytes = tiphys_rate(m, mjd, nworld, nstep)
            mj = mujoco_rate(mjm, state, nworld, nstep)
            row = dict(scene=name, nworld=nworld, nv=mjm.nv, tiphys=rate, mujoco=mj,
                       host_ms=host_ms, launches=launches, ncon=ncon, nefc=nefc,
                       mj_ncon=int(mjd.ncon), mj_nefc=int(mjd.nefc), bytes=nbytes)
            rows.append(row)
            print(f"{name} nworld {nworld}: tiphys {rate:.1f}/s, MuJoCo {mj:.1f}/s "
                  f"({rate / mj:.3f}x); ncon {ncon:.0f} vs {mjd.ncon}, nefc {nefc:.0f} vs "
                  f"{mjd.nefc}; {launches} launches, host {host_ms:.2f} ms/step",
                  file=sys.stderr, flush=True)
    title = "" if mark == MARK else f" on {args.arch} {args.precision}"
    lines = [mark, f"## Flex scenes against MuJoCo C{title} (`benchmarks/bench_flex.py`)", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
             f"- machine: {os.cpu_count()} CPU cores ({platform.platform()}){device}; "
             f"tiphys {args.arch} {args.precision}, "
             f"MuJoCo 3.4.0 `rollout` on all cores; both from MuJoCo's state after "
             f"{settle} steps", "",
             "| scene | nv | worlds | tiphys | MuJoCo | ratio | contacts (tiphys / MuJoCo) | "
             "rows | launches | CPU ms/step (process) | MiB per world |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['scene']} | {r['nv']} | {r['nworld']} | {r['tiphys']:.1f}/s | "
                     f"{r['mujoco']:.1f}/s | **{r['tiphys'] / r['mujoco']:.3f}x** | "
                     f"{r['ncon']:.0f} / {r['mj_ncon']} | {r['nefc']:.0f} / {r['mj_nefc']} | "
                     f"{r['launches']} | {r['host_ms']:.2f} | {r['bytes'] / 2**20:.1f} |")
    for name, why in refused.items():
        lines.append(f"| {name} | | | refused: {why} | | | | | | | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        write_section(mark, text)


if __name__ == "__main__":
    main()
