"""Benchmark: headless frame time of a 1000-geom scene, with and without stepping.

    python benchmarks/bench_render.py           # 640x480 and 1280x720; writes RESULTS.md
    python benchmarks/bench_render.py --quick   # 640x480 only, nothing written

Scene: a textured floor and 999 free bodies (spheres, capsules, ellipsoids, cylinders,
boxes, in turn) resting on it in a 32 x 32 grid, a directional and a spot light, one
world (f64, Taichi CPU backend; GGUI draws through Mesa's software Vulkan, lavapipe,
when there is no GPU). A frame is what ``tiphys.render`` does: the vertex kernel
(every vertex moved and lit from geom_xpos/geom_xmat), GGUI's draw and the image read
back to numpy (which waits for the rasteriser). Times are medians of >= 10 frames.

- "render only": frames of a fixed state;
- "step + render": one ``tiphys.step`` (contacts on) then a frame, as the viewer does
  when it draws after every step; "real-time steps per frame" is how many steps a
  30 fps viewer would need per frame (frame period / timestep) and whether the
  measured step time fits them in.
For reference, MuJoCo's own OpenGL renderer (``mujoco.Renderer``, EGL on Mesa's
llvmpipe: the same CPU rasteriser family, with shadows and reflections) on the same
scene and size, when an EGL context can be made.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import numpy as np

from results_md import write_section  # benchmarks/ is on sys.path when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARK = "<!-- bench_render.py -->"
NGEOM_OBJECTS = 999
SIZES = ((640, 480), (1280, 720))
QUICK_SIZES = ((640, 480),)
NFRAME = 10


def scene_xml(n: int = NGEOM_OBJECTS) -> str:
    kinds = (
        'type="sphere" size=".1"', 'type="capsule" size=".06 .1" euler="0 90 0"',
        'type="ellipsoid" size=".12 .08 .06"', 'type="cylinder" size=".08 .08"',
        'type="box" size=".09 .07 .08"')
    side = int(np.ceil(np.sqrt(n)))
    bodies = []
    for k in range(n):
        x, y = (k % side - side / 2) * 0.3, (k // side - side / 2) * 0.3
        kind = kinds[k % len(kinds)]
        z = {0: 0.1, 1: 0.06, 2: 0.06, 3: 0.08, 4: 0.08}[k % len(kinds)]
        rgb = 0.3 + 0.6 * np.random.default_rng(k).random(3)
        bodies.append(f'<body pos="{x:.2f} {y:.2f} {z}"><freejoint/><geom {kind} '
                      f'rgba="{rgb[0]:.2f} {rgb[1]:.2f} {rgb[2]:.2f} 1"/></body>')
    return f"""<mujoco model="render1000">
  <option timestep="0.004"/>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="256" height="256"
             rgb1=".2 .25 .3" rgb2=".3 .35 .4"/>
    <material name="floor" texture="grid" texrepeat="10 10"/>
  </asset>
  <worldbody>
    <light pos="0 0 8" dir="0 0 -1" directional="true" diffuse=".7 .7 .7"/>
    <light pos="3 -3 4" dir="-1 1 -1.3" cutoff="50"/>
    <geom type="plane" size="6 6 .1" material="floor"/>
    <camera name="view" pos="0 -9 6" xyaxes="1 0 0 0 .55 .83"/>
    {"".join(bodies)}
  </worldbody>
</mujoco>"""


def _median_ms(fn, n=NFRAME) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def measure(sizes) -> dict:
    import taichi as ti

    import tiphys
    from tiphys.kernels import render as rk
    from tiphys.viewer.renderer import Renderer

    tiphys.init("cpu", "f64")
    t0 = time.perf_counter()
    m = tiphys.load_model_from_string(scene_xml())
    d = tiphys.make_data(m, 1)
    tiphys.forward(m, d)
    ti.sync()
    out = {"ngeom": m.ngeom, "load_s": time.perf_counter() - t0, "sizes": []}
    for width, height in sizes:
        t0 = time.perf_counter()
        r = Renderer(m, width, height)
        setup = time.perf_counter() - t0
        t0 = time.perf_counter()
        r.render(d, "view")
        first = time.perf_counter() - t0
        pose = r.camera_pose(d, "view")

        def vertices():
            rk.geom_vertices(r.dev, d, r.params, False, r.vbo.data)
            ti.sync()

        row = {
            "size": f"{width}x{height}", "setup_s": setup, "first_s": first,
            "nvert": r.template.nvert, "ntri": sum(len(t) for t in r.template.pass_tri) // 3,
            "vertex_ms": _median_ms(vertices),
            "draw_ms": _median_ms(lambda: r.draw(d, pose)),
            "render_ms": _median_ms(lambda: r.render(d, "view")),
        }

        def step_only():
            tiphys.step(m, d)
            ti.sync()

        step_only()
        row["step_ms"] = _median_ms(step_only)

        def step_and_render():
            tiphys.step(m, d)
            r.render(d, "view")

        row["step_render_ms"] = _median_ms(step_and_render)
        row["ncon"] = int(d.ncon.to_numpy()[0])
        row["mujoco_ms"] = mujoco_render_ms(width, height)
        out["sizes"].append(row)
        r.close()
    out["timestep"] = float(m.opt.timestep)
    return out


def mujoco_render_ms(width, height):
    """MuJoCo's renderer (EGL) on the same scene, or None without an EGL context."""
    try:
        import mujoco
        from mujoco import egl, gl_context
        gl_context.GLContext = egl.GLContext
        mjm = mujoco.MjModel.from_xml_string(scene_xml())
        mjm.vis.global_.offwidth, mjm.vis.global_.offheight = width, height
        mjd = mujoco.MjData(mjm)
        mujoco.mj_forward(mjm, mjd)
        r = mujoco.Renderer(mjm, height, width)
    except Exception:  # noqa: BLE001 - no EGL here
        return None

    def frame():
        r.update_scene(mjd, camera="view")
        r.render()

    frame()
    ms = _median_ms(frame)
    r.close()
    return ms


def section(res: dict, elapsed: float) -> str:
    fps_steps = (1 / 30) / res["timestep"]
    lines = [
        MARK,
        "## Rendering: 1000 geoms headless (`benchmarks/bench_render.py`)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"
        f"; whole run {elapsed:.0f} s",
        f"- machine: {os.cpu_count()} CPU cores ({platform.platform()}), no GPU: GGUI on "
        f"Mesa's lavapipe; load average (1 min) at the end: {os.getloadavg()[0]:.2f} "
        f"(shared machine: numbers are rough)",
        "",
        f"Scene: a textured floor and {res['ngeom'] - 1} resting free bodies (5 primitive "
        f"kinds), {res['ngeom']} geoms, one world, f64 on the Taichi CPU backend. A frame "
        "= the vertex kernel (move and light every vertex from geom_xpos/geom_xmat), "
        "GGUI's draw and the read-back of the image (which waits for the software "
        "rasteriser). Medians of 10 frames. *step + render*: one `tiphys.step` (contacts "
        "on) and one frame.",
        "",
        "| image | vertices | triangles | vertex kernel | draw (submit) | frame (render only) "
        "| step | step + render | contacts | MuJoCo renderer (EGL) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["sizes"]:
        mj = f"{r['mujoco_ms']:.1f} ms" if r["mujoco_ms"] is not None else "n/a"
        lines.append(
            f"| {r['size']} | {r['nvert']:,} | {r['ntri']:,} | {r['vertex_ms']:.1f} ms | "
            f"{r['draw_ms']:.1f} ms | **{r['render_ms']:.1f} ms** "
            f"({1e3 / r['render_ms']:.0f} fps) | {r['step_ms']:.1f} ms | "
            f"**{r['step_render_ms']:.1f} ms** | {r['ncon']} | {mj} |")
    first = res["sizes"][0]
    can = first["step_ms"] * fps_steps + first["render_ms"] <= 1e3 / 30
    lines += [
        "",
        f"Set-up (tessellation, upload) {first['setup_s']:.2f} s; first frame (kernel "
        f"compile or cache load) {first['first_s']:.2f} s; model load {res['load_s']:.2f} s.",
        f"Real time at 30 fps needs {fps_steps:.1f} steps of {res['timestep']:g} s per "
        f"frame: {fps_steps * first['step_ms'] + first['render_ms']:.0f} ms per frame here, "
        + ("which fits." if can else "which does not fit in 33 ms: the viewer runs slower "
                                     "than real time on this machine and says so."),
        "",
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="640x480 only, nothing written")
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = measure(QUICK_SIZES if args.quick else SIZES)
    text = section(res, time.perf_counter() - t0)
    print(text)
    if not args.quick:
        write_section(MARK, text)
    # Mesa's EGL (MuJoCo's renderer) and Vulkan (GGUI) contexts, both torn down at
    # interpreter exit, crash in the driver (exit 139) after everything is written:
    # leave without the teardown so `make bench` goes on
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
