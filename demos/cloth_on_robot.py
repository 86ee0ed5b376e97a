"""Cloth falling on a robot arm, next to a soft block: flex simulation you can watch.

    python demos/cloth_on_robot.py                     # a window (needs a display)
    python demos/cloth_on_robot.py --frames out/ --seconds 2   # headless PNG frames
    python demos/cloth_on_robot.py --nworld 16 --seconds 1     # many worlds, rates only

A 10x10 cloth (``<flexcomp type="grid">``, edge equality constraints) drops onto a
three-joint arm that sweeps under it (position actuators driven by a Taichi kernel on
the device: no host round trip per step), and a 5x5x5 soft block (``<flexcomp
type="box" dim="3" dof="radial">`` on a free body) settles on the floor. Flex contacts
with the floor, the arm's capsules and sphere, and each other are MuJoCo 3.4.0's
(planes against vertices, geoms against elements).

The window is tiphys's GGUI viewer (space pauses, right-drag pushes bodies, F1 shows
the keys); it runs in real time where the machine allows and shows the real-time
factor. Headless, the demo steps ``--seconds`` of simulated time in every world,
writes a PNG of world 0 every ``--every`` steps into ``--frames``, and prints the
step rate next to MuJoCo C's on the same model (one world, same process).
"""
import argparse
import math
import os
import time
from typing import Optional

import numpy as np
import taichi as ti

import tiphys

SCENE = """
<mujoco model="cloth on a robot">
  <option timestep="0.002" solver="CG" tolerance="1e-6" integrator="implicitfast"/>
  <visual><global azimuth="135" elevation="-25"/></visual>
  <statistic center="0 0 .5" extent="1.2"/>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="64" height="64"
             rgb1=".2 .3 .4" rgb2=".3 .4 .5"/>
    <material name="grid" texture="grid" texrepeat="6 6"/>
  </asset>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1" directional="true"/>
    <geom name="floor" type="plane" size="2 2 .1" material="grid"/>
    <body name="base" pos="0 0 .1">
      <geom type="cylinder" size=".12 .1" rgba=".3 .3 .35 1"/>
      <body name="upper" pos="0 0 .1">
        <joint name="yaw" axis="0 0 1" damping="5"/>
        <joint name="shoulder" axis="0 1 0" range="-90 90" damping="5"/>
        <geom type="capsule" fromto="0 0 0 0 0 .45" size=".06" rgba=".8 .5 .2 1"/>
        <body name="fore" pos="0 0 .45">
          <joint name="elbow" axis="0 1 0" range="-120 120" damping="3"/>
          <geom type="capsule" fromto="0 0 0 .35 0 0" size=".05" rgba=".8 .5 .2 1"/>
          <geom type="sphere" pos=".38 0 0" size=".08" rgba=".9 .9 .9 1"/>
        </body>
      </body>
    </body>
    <body name="drop" pos=".15 0 1.1">
      <flexcomp name="cloth" type="grid" count="10 10 1" spacing=".06 .06 .06" mass=".5"
                radius=".01" rgba=".2 .6 .9 1">
        <edge equality="true" damping=".001"/>
        <contact condim="3" selfcollide="none"/>
      </flexcomp>
    </body>
    <body name="block" pos="-.55 .35 .3">
      <freejoint/>
      <geom size=".05" contype="0" conaffinity="0" group="4"/>
      <flexcomp name="block" type="box" count="5 5 5" spacing=".05 .05 .05" radius=".01"
                dim="3" dof="radial" rgba=".9 .3 .3 1">
        <contact internal="false" selfcollide="none"/>
        <edge equality="true"/>
      </flexcomp>
    </body>
  </worldbody>
  <actuator>
    <position joint="yaw" kp="50" ctrlrange="-3 3"/>
    <position joint="shoulder" kp="80" ctrlrange="-1.5 1.5"/>
    <position joint="elbow" kp="40" ctrlrange="-2 2"/>
  </actuator>
</mujoco>
"""


@ti.kernel
def _sweep(time_: ti.types.ndarray(), ctrl: ti.types.ndarray()):
    """The arm's targets at each world's time: a slow yaw sweep (phase-shifted per
    world), the shoulder nodding, the elbow bent."""
    for w in range(ctrl.shape[0]):
        t = time_[w] + 0.3 * w
        ctrl[w, 0] = ti.sin(0.8 * t)
        ctrl[w, 1] = 0.4 + 0.3 * ti.sin(1.6 * t)
        ctrl[w, 2] = -0.5


def controlled_step(m, d) -> None:
    _sweep(d.time, d.ctrl)
    tiphys.step(m, d)


def mujoco_rate(seconds: float) -> float:
    """MuJoCo C's steps per second on the same scene and controls (one world)."""
    import mujoco
    mjm = mujoco.MjModel.from_xml_string(SCENE)
    mjd = mujoco.MjData(mjm)
    n = int(round(seconds / mjm.opt.timestep))
    start = time.perf_counter()
    for _ in range(n):
        t = mjd.time
        mjd.ctrl[:] = (math.sin(0.8 * t), 0.4 + 0.3 * math.sin(1.6 * t), -0.5)
        mujoco.mj_step(mjm, mjd)
    return n / (time.perf_counter() - start)


def headless(m, d, seconds: float, frames: Optional[str], every: int) -> dict:
    from tiphys.viewer.renderer import Renderer
    renderer = Renderer(m, 640, 480) if frames else None
    if frames:
        os.makedirs(frames, exist_ok=True)
    nstep = int(round(seconds / m.opt.timestep))
    controlled_step(m, d)  # the first step compiles (or loads) the kernels
    ti.sync()
    written = []
    start = time.perf_counter()
    drawing = 0.0
    for k in range(1, nstep + 1):
        controlled_step(m, d)
        if renderer is not None and k % every == 0:
            t0 = time.perf_counter()
            from PIL import Image
            path = os.path.join(frames, f"frame_{k:05d}.png")
            Image.fromarray(renderer.render(d, None, 0)).save(path)
            written.append(path)
            drawing += time.perf_counter() - t0
    ti.sync()
    elapsed = time.perf_counter() - start - drawing
    if renderer is not None:
        renderer.close()
    qpos = d.numpy("qpos")
    return {"steps": nstep, "steps_per_s": nstep / elapsed, "frames": written,
            "finite": bool(np.isfinite(qpos).all()),
            "lowest_cloth_vertex": float(d.numpy("flexvert_xpos")[0][:100, 2].min())}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nworld", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=None,
                        help="simulated seconds to run headless (default: open a window)")
    parser.add_argument("--frames", default=None, help="folder for PNG frames (headless)")
    parser.add_argument("--every", type=int, default=50, help="steps between frames")
    parser.add_argument("--arch", default="cpu")
    parser.add_argument("--no-mujoco", action="store_true",
                        help="do not time MuJoCo C on the same scene")
    args = parser.parse_args(argv)

    tiphys.init(arch=args.arch, precision="f64" if args.arch == "cpu" else "f32")
    m = tiphys.load_model_from_string(SCENE)
    d = tiphys.make_data(m, args.nworld)

    from tiphys.viewer.renderer import has_display
    if args.seconds is None and args.frames is None and has_display():
        from tiphys.viewer.viewer import Viewer
        viewer = Viewer(m, d, title="tiphys: cloth on a robot")
        try:
            viewer.run(step=controlled_step)
        finally:
            viewer.close()
        return {}
    seconds = 2.0 if args.seconds is None else args.seconds
    result = headless(m, d, seconds, args.frames, args.every)
    realtime = result["steps_per_s"] * float(m.opt.timestep)
    print(f"{result['steps']} steps in {args.nworld} world(s): "
          f"{result['steps_per_s']:.0f} steps/s per world, "
          f"{realtime * args.nworld:.2f}x real time summed over worlds "
          f"(nv={m.nv}, finite: {result['finite']})")
    if result["frames"]:
        print(f"{len(result['frames'])} frames in {args.frames}")
    if not args.no_mujoco:
        try:
            rate = mujoco_rate(seconds)
            result["mujoco_steps_per_s"] = rate
            print(f"MuJoCo C, one world, same scene: {rate:.0f} steps/s "
                  f"(tiphys {result['steps_per_s'] * args.nworld / rate:.2f}x of it in "
                  f"world-steps)")
        except ImportError:
            print("(mujoco not installed: no comparison)")
    return result


if __name__ == "__main__":
    main()
