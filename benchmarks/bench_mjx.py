"""Benchmark: tiphys against MJX (MuJoCo's JAX port) on the same CPU cores.

    python benchmarks/bench_mjx.py                   # humanoid and ant, 1, 64 and 1024 worlds
    python benchmarks/bench_mjx.py --nworld 1 64 --quick   # shorter; nothing written

Both engines step a batch of worlds of the same corpus model (gym humanoid, gym ant:
contacts on; the solver set to Newton in both, as MJX has no PGS) from the same start
states (qpos0 with small random joint offsets and velocities, zero controls):
- tiphys: ``tiphys.step`` on all worlds at once, Taichi CPU backend, f64;
- MJX (``mujoco-mjx``, the test extra): ``jax.vmap(mjx.step)`` over the batch, ten
  steps per ``jax.jit``-compiled call (``jax.lax.scan``), on JAX's CPU backend, in f64
  (``jax_enable_x64``) and in its default f32, each in a process of its own (JAX's
  precision is per process).
Rates are world-steps/s, best of 3 batches of at least ``--seconds``; the first call of
each (Taichi's kernel load, MJX's XLA compile for that batch size) is timed apart.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_contact import _best_rate, _cpu, corpus_path  # noqa: E402
from results_md import write_section  # noqa: E402

MARK = "<!-- bench_mjx.py -->"
MODELS = (("gym humanoid", "gym/humanoid.xml"), ("gym ant", "gym/ant.xml"))
NWORLDS = (1, 64, 1024)
# Above this many worlds MJX steps the batch as chunks of CHUNK worlds (``jax.lax.map``
# over ``jax.vmap``d chunks). With jaxlib 0.10.2 a batch of 1024 humanoid worlds
# deadlocked on this 2-core machine (2026-11-28): gdb showed two batched LAPACK
# kernels of the Newton solver (Cholesky, triangular solve) each waiting in
# ``jax::ParallelBatchMap`` for tasks that no idle thread of the pool picked up;
# ``--xla_cpu_multi_thread_eigen=false`` and synchronous CPU dispatch did not help.
# Chunks of 128 run.
CHUNK = 128
TIMEOUT_S = 900  # per worker process
SCAN = 10  # MJX steps per jitted call


def _start(mjm, nworld: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    qpos[:, 7:] += rng.uniform(-.05, .05, (nworld, mjm.nq - 7))
    qvel = rng.uniform(-.05, .05, (nworld, mjm.nv))
    return qpos, qvel


def tiphys_worker(rel: str, nworlds, seconds: float) -> dict:
    import mujoco
    import taichi as ti
    import tiphys
    tiphys.init(arch="cpu", precision="f64")
    path = corpus_path(rel)
    mjm = mujoco.MjModel.from_xml_path(path)
    m = tiphys.load_model(path)
    m.opt.solver = "Newton"  # (MJX has no PGS)
    rows = []
    for nworld in nworlds:
        d = tiphys.make_data(m, nworld)
        qpos, qvel = _start(mjm, nworld)
        d.qpos.from_numpy(np.pad(qpos, ((0, 0), (0, d.qpos.shape[1] - mjm.nq))))
        d.qvel.from_numpy(np.pad(qvel, ((0, 0), (0, d.qvel.shape[1] - mjm.nv))))
        start = time.perf_counter()
        tiphys.step(m, d)
        ti.sync()
        first = time.perf_counter() - start

        def run():
            tiphys.step(m, d)
            ti.sync()
            return 1
        rate = _best_rate(run, nworld, 3, min_s=seconds)
        ncon = float(np.mean(d.numpy("ncon")))
        rows.append(dict(nworld=nworld, rate=rate, first=first, ncon=ncon))
    return dict(rows=rows)


def mjx_worker(rel: str, nworlds, seconds: float, x64: bool) -> dict:
    import jax
    if x64:
        jax.config.update("jax_enable_x64", True)
    import mujoco
    from mujoco import mjx
    mjm = mujoco.MjModel.from_xml_path(corpus_path(rel))
    mjm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON  # (MJX has no PGS)
    mx = mjx.put_model(mjm)

    vstep = jax.vmap(mjx.step, in_axes=(None, 0))

    rows = []
    for nworld in nworlds:
        step = vstep
        if nworld > CHUNK and nworld % CHUNK == 0:
            def step(mx, dx, n=nworld):
                split = jax.tree.map(lambda x: x.reshape((n // CHUNK, CHUNK) + x.shape[1:]),
                                     dx)
                out = jax.lax.map(lambda d: vstep(mx, d), split)
                return jax.tree.map(lambda x: x.reshape((n,) + x.shape[2:]), out)

        def steps(dx, step=step):
            return jax.lax.scan(lambda dx, _: (step(mx, dx), None), dx, None,
                                length=SCAN)[0]
        steps = jax.jit(steps)
        qpos, qvel = _start(mjm, nworld)
        base = mjx.make_data(mx)
        dx = jax.vmap(lambda q, v: base.replace(qpos=q, qvel=v))(qpos, qvel)
        # (make_data's integer fields are int32, a step's int64 under x64: the scan's
        # carry takes the step's types)
        shapes = jax.eval_shape(vstep, mx, dx)
        dx = jax.tree.map(lambda x, s: x.astype(s.dtype), dx, shapes)
        start = time.perf_counter()
        dx = steps(dx)
        jax.block_until_ready(dx.qpos)
        first = time.perf_counter() - start
        state = {"dx": dx}

        def run():
            state["dx"] = steps(state["dx"])
            jax.block_until_ready(state["dx"].qpos)
            return SCAN
        rate = _best_rate(run, nworld, 3, min_s=seconds)
        rows.append(dict(nworld=nworld, rate=rate, first=first))
    return dict(rows=rows)


def _fmt(x: float) -> str:
    return f"{x / 1e3:.1f}k/s" if x >= 1e3 else f"{x:.0f}/s"


def _run(kind: str, rel: str, nworlds, seconds: float) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--model", rel, "--seconds",
           str(seconds), "--nworld", *map(str, nworlds)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{kind} worker for {rel} did not finish in {TIMEOUT_S} s") from None
    if proc.returncode:
        raise SystemExit(f"{kind} worker for {rel} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="0.3 s batches, nothing written")
    ap.add_argument("--nworld", type=int, nargs="*")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--worker", choices=("tiphys", "mjx64", "mjx32"), help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    args = ap.parse_args()
    nworlds = args.nworld or NWORLDS
    seconds = args.seconds or (0.3 if args.quick else 1.0)
    if args.worker:
        if args.worker == "tiphys":
            out = tiphys_worker(args.model, nworlds, seconds)
        else:
            out = mjx_worker(args.model, nworlds, seconds, x64=args.worker == "mjx64")
        print(json.dumps(out))
        return
    import mujoco
    t0 = time.perf_counter()
    lines = [
        MARK,
        "## tiphys against MJX on the CPU (`benchmarks/bench_mjx.py`)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
        f"- machine: {os.cpu_count()} CPU cores, {_cpu()} ({platform.platform()})",
        f"- MuJoCo / MJX {mujoco.__version__}; JAX on its CPU backend; tiphys on Taichi's "
        "CPU backend in f64",
        "",
        "Solver Newton in both (MJX has no PGS; the corpus humanoid's own is PGS), "
        "otherwise the corpus files' options. World-steps/s (best of 3 batches); "
        "*first call*: Taichi's kernel load / MJX's XLA compile for that batch size "
        f"(MJX: {SCAN} steps per jitted call; above {CHUNK} worlds the batch is stepped "
        f"in chunks of {CHUNK}, see CHUNK in the script). ncon: mean contacts per world "
        "after the timed steps (tiphys).",
        "",
        "| model | nworld | tiphys f64 | MJX f64 | MJX f32 | tiphys / MJX f64 | tiphys / MJX f32 "
        "| first call tiphys / MJX f64 / MJX f32 | ncon |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rel in MODELS:
        print(f"{name} ...", file=sys.stderr, flush=True)
        ours = _run("tiphys", rel, nworlds, seconds)["rows"]
        m64 = _run("mjx64", rel, nworlds, seconds)["rows"]
        m32 = _run("mjx32", rel, nworlds, seconds)["rows"]
        for a, b, c in zip(ours, m64, m32):
            lines.append(
                f"| {name} | {a['nworld']} | {_fmt(a['rate'])} | {_fmt(b['rate'])} | "
                f"{_fmt(c['rate'])} | **{a['rate'] / b['rate']:.2f}x** | "
                f"**{a['rate'] / c['rate']:.2f}x** | {a['first']:.1f} / {b['first']:.1f} / "
                f"{c['first']:.1f} s | {a['ncon']:.1f} |")
    lines[3] += f"; whole run {time.perf_counter() - t0:.0f} s"
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        write_section(MARK, text)


if __name__ == "__main__":
    main()
