"""The interactive viewer: ``Viewer(m, d)`` in a user's loop, or ``run()`` by itself.

    viewer = tiphys.Viewer(m, d)
    while viewer.is_running():
        if not viewer.paused:
            tiphys.step(m, d)
        viewer.sync()           # input, perturbation, draw, show

``run()`` (what ``tiphys view`` calls) steps the simulation itself at real time
(``<visual><global realtime>``), and says so in the status line when it cannot.

Input handling is plain methods (``key``, ``mouse_press``, ``mouse_move``,
``mouse_release``) fed by the window's events in ``sync``; tests and scripts call
them directly. Mouse positions are window fractions in [0, 1], y up.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import taichi as ti

from ..kernels import render as rk
from ..kernels.consts import OBJ_GEOM
from ..model import check_pair
from . import geometry as geo
from .renderer import (CameraPose, FreeCamera, RenderOptions, Renderer, check_world,
                       imgui_cwd)

KEYS = (
    ("Space", "pause / run"),
    ("Right arrow", "one step while paused"),
    ("Backspace", "reset to the initial state"),
    ("0 ... 9", "show world k"),
    ("G", "tile a grid of worlds side by side (again: one world)"),
    ("[  ]", "previous / next model camera"),
    ("Escape", "free camera"),
    ("T", "track the selected body (again: stop)"),
    ("C", "contact points"),
    ("F", "contact forces"),
    ("B", "body frames"),
    ("J", "joint axes"),
    ("M", "centres of mass"),
    ("S", "sites"),
    ("N", "tendons"),
    ("O", "fog"),
    ("K", "skins"),
    ("V  E  A  X", "flex vertices / edges / element faces / skin (MuJoCo's flex flags)"),
    ("Shift+0 ... 5", "geom group on / off"),
    ("=  -", "zoom in / out"),
    ("H", "this help"),
)
MOUSE = (
    ("left drag", "rotate the camera"),
    ("right drag", "move the camera"),
    ("middle drag", "zoom"),
    ("double click", "select a body (again on nothing: deselect)"),
    ("Ctrl+right drag", "pull the selected body (force)"),
    ("Ctrl+left drag", "twist the selected body (torque)"),
)
_TOGGLES = {"c": "contact_points", "f": "contact_forces", "b": "frames", "j": "joints",
            "m": "com", "s": "sites", "n": "tendons", "o": "fog", "k": "skins",
            # MuJoCo's simulate has no keys for its flex flags (only check boxes)
            "v": "flex_vert", "e": "flex_edge", "a": "flex_face", "x": "flex_skin"}
DOUBLE_CLICK_S = 0.35
MAX_GRID = 16


@dataclass
class Perturbation:
    body: int
    world: int
    localpos: np.ndarray   # selection point in the body frame
    refselpos: np.ndarray  # where the spring pulls it (world)
    refquat: np.ndarray    # orientation the torque spring pulls to
    translate: bool = False
    rotate: bool = False


class Viewer:
    """Interactive GGUI viewer of Data ``d`` (world ``world``, or a grid of worlds)."""

    def __init__(self, m, d, width: int = 1280, height: int = 800, world: int = 0,
                 title: str = "tiphys", show_window: bool = True):
        check_pair(m, d, "Viewer")
        self.m, self.d = m, d
        self.renderer = Renderer(m, width, height, show_window=show_window, title=title)
        self.window = self.renderer.window
        self.show_window = show_window
        self.options = RenderOptions()
        self.world = check_world(d, world)
        self.grid = False
        self.free = FreeCamera.default(m)
        self.camid = -1
        self.track = -1
        self.selected = -1
        self.paused = False
        self.show_help = False
        self.step_request = 0
        self.reset_request = False
        self.pert: Optional[Perturbation] = None
        self._drag = None   # (button, x, y, ctrl)
        self._last_click = (-1.0, 0.0, 0.0)
        self._running = True
        self._vis = geo.visual(m)
        self._pert_prm = ti.ndarray(ti.f64, (rk.NPERT,))
        # statistics for the status line
        self.realtime = float(self._vis["global"].get("realtime", 1.0))
        self.rtf = 0.0
        self.steps_per_s = 0.0
        self.fps = 0.0
        self.behind = False
        self._frame_times = []

    # ---------------------------------------------------------------- state
    def is_running(self) -> bool:
        return self._running and (not self.show_window or self.window.running)

    def close(self) -> None:
        if self.pert is not None:
            self._end_perturbation()
        if self._running:
            self._running = False
            self.renderer.close()

    @property
    def worlds(self) -> list:
        if self.grid:
            return list(range(min(self.d.nworld, MAX_GRID)))
        return [self.world]

    # ---------------------------------------------------------------- input
    def key(self, name: str, ctrl: bool = False, shift: bool = False) -> bool:
        """Handle one key press (GGUI's key name); True when it did something."""
        k = name.lower() if len(name) == 1 else name
        if k == " ":
            self.paused = not self.paused
        elif k == "Right":
            if self.paused:
                self.step_request += 1
        elif k == "BackSpace":
            self.reset_request = True
        elif k.isdigit() and len(k) == 1:
            n = int(k)
            if shift:
                if n > 5:
                    return False
                self.options.geomgroup[n] = 0 if self.options.geomgroup[n] else 1
            elif n < self.d.nworld:
                self.world = n
                self.grid = False
            else:
                return False
        elif k == "g":
            self.grid = not self.grid and self.d.nworld > 1
            self._frame_worlds()
        elif k == "]":
            self._cycle_camera(+1)
        elif k == "[":
            self._cycle_camera(-1)
        elif k == "Escape":
            self.camid = -1
        elif k == "t":
            self.track = -1 if self.track >= 0 or self.selected <= 0 else self.selected
        elif k in _TOGGLES:
            attr = _TOGGLES[k]
            setattr(self.options, attr, not getattr(self.options, attr))
        elif k in ("=", "+"):
            self.zoom(-0.1)
        elif k == "-":
            self.zoom(0.1)
        elif k == "h":
            self.show_help = not self.show_help
        else:
            return False
        return True

    def _cycle_camera(self, step: int) -> None:
        if self.m.ncam == 0:
            self.camid = -1
            return
        n = self.m.ncam + 1  # -1 (free) and the model cameras
        self.camid = (self.camid + 1 + step) % n - 1

    def mouse_press(self, button: str, x: float, y: float, ctrl: bool = False) -> None:
        """A mouse button went down at window fraction (x, y), y up."""
        now = time.monotonic()
        last_t, lx, ly = self._last_click
        if button == "LMB" and not ctrl and now - last_t < DOUBLE_CLICK_S and \
                abs(x - lx) < 0.01 and abs(y - ly) < 0.01:
            self.select(x, y)
            self._last_click = (-1.0, 0.0, 0.0)
        elif button == "LMB":
            self._last_click = (now, x, y)
        self._drag = (button, x, y, ctrl)
        if ctrl and self.selected > 0 and button in ("LMB", "RMB"):
            self._begin_perturbation(translate=button == "RMB")

    def mouse_move(self, x: float, y: float) -> None:
        if self._drag is None:
            return
        button, x0, y0, ctrl = self._drag
        aspect = self.renderer.width / self.renderer.height
        dx, dy = (x - x0) * aspect, y - y0  # in units of the window height
        self._drag = (button, x, y, ctrl)
        if ctrl and self.pert is not None:
            self._move_perturbation(dx, dy)
        elif button == "LMB":
            self.rotate(dx, dy)
        elif button == "RMB":
            self.pan(dx, dy)
        elif button == "MMB":
            self.zoom(-dy)

    def mouse_release(self, button: str) -> None:
        self._drag = None
        if self.pert is not None:
            self._end_perturbation()

    # ---------------------------------------------------------------- camera
    def _to_free(self) -> None:
        """Leave a model camera for the free camera, keeping the view."""
        if self.camid >= 0:
            pose = self.camera_pose()
            self.free.lookat = pose.pos + self.free.distance * pose.forward
            self.free.azimuth = math.degrees(math.atan2(pose.forward[1], pose.forward[0]))
            self.free.elevation = math.degrees(math.asin(np.clip(pose.forward[2], -1, 1)))
            self.camid = -1

    def rotate(self, dx: float, dy: float) -> None:
        """mjv_moveCamera's rotation: 180 degrees per window height."""
        self._to_free()
        self.free.azimuth -= 180.0 * dx
        self.free.elevation = float(np.clip(self.free.elevation - 180.0 * dy, -89.0, 89.0))

    def pan(self, dx: float, dy: float) -> None:
        """Move the look-at point with the mouse in the view plane."""
        self._to_free()
        self.track = -1
        pos, fwd, up = self.free.frame()
        right = np.cross(fwd, up)
        scale = 2.0 * self.free.distance * math.tan(math.radians(self._fovy()) / 2)
        self.free.lookat = self.free.lookat - scale * (dx * right + dy * up)

    def zoom(self, amount: float) -> None:
        """Scale the camera distance by exp(amount)."""
        self._to_free()
        self.free.distance = float(np.clip(self.free.distance * math.exp(amount),
                                           1e-3 * float(self.m.stat.extent),
                                           20 * float(self.m.stat.extent)))

    def _fovy(self) -> float:
        return float(self._vis["global"]["fovy"])

    def camera_pose(self) -> CameraPose:
        r = self.renderer
        r.set_worlds(self.worlds)
        if self.camid >= 0:
            return r.camera_pose(self.d, self.camid, self.world)
        if self.track > 0:
            tile = self.worlds.index(self.world) if self.world in self.worlds else 0
            self.free.lookat = r.body_position(self.d, self.world, self.track) + \
                r.offsets[tile]
        return r.camera_pose(self.d, self.free, self.world)

    def _frame_worlds(self) -> None:
        """Free camera back to MuJoCo's default, moved to see every shown world."""
        r = self.renderer
        r.set_worlds(self.worlds)
        self.camid, self.track = -1, -1
        self.free = r.grid_camera()

    # ---------------------------------------------------------------- selection
    def ray(self, x: float, y: float):
        """Camera ray (origin, unit direction) through window fraction (x, y)."""
        pose = self.camera_pose()
        fwd = pose.forward / np.linalg.norm(pose.forward)
        up = pose.up / np.linalg.norm(pose.up)
        right = np.cross(fwd, up)
        aspect = self.renderer.width / self.renderer.height
        if pose.orthographic:
            h = 0.5 * pose.fovy
            origin = pose.pos + (2 * x - 1) * h * aspect * right + (2 * y - 1) * h * up
            return origin, fwd
        t = math.tan(math.radians(pose.fovy) / 2)
        direction = fwd + (2 * x - 1) * t * aspect * right + (2 * y - 1) * t * up
        return pose.pos, direction / np.linalg.norm(direction)

    def select(self, x: float, y: float) -> int:
        """Select the body drawn at window fraction (x, y) (a segmentation frame);
        nothing or a static body there deselects. Returns the body id or -1."""
        r = self.renderer
        pose = self.camera_pose()
        r.draw(self.d, pose, self.options, segmentation=True)
        seg = r.decode_segmentation(np.clip(np.rint(r.read()[..., :3] * 255), 0, 255).astype(
            np.uint8))
        h, w = seg.shape[:2]
        px = int(np.clip(x * w, 0, w - 1))
        py = int(np.clip((1 - y) * h, 0, h - 1))
        objid, objtype, world = (int(v) for v in seg[py, px])
        body = -1
        if objid >= 0:
            a = self.m.arrays
            body = int(a.geom_bodyid[objid] if objtype == OBJ_GEOM else a.site_bodyid[objid])
            if world >= 0:
                self.world = world
        self.selected = body if body > 0 else -1
        if self.selected > 0:
            # the selection point: where the ray passes closest to the object's centre
            origin, direction = self.ray(x, y)
            center = self._object_center(objid, objtype, self.world)
            tile = self.worlds.index(self.world) if self.world in self.worlds else 0
            center = center + r.offsets[tile]
            point = origin + max(0.0, float(np.dot(center - origin, direction))) * direction
            rk.pick_pose(self.d.xpos, self.d.xmat, self.world, self.selected, r._pose_buf)
            pose_b = r._pose_buf.to_numpy()
            bpos, bmat = pose_b[:3] + r.offsets[tile], pose_b[3:].reshape(3, 3)
            self._sel_local = bmat.T @ (point - bpos)
        return self.selected

    def _object_center(self, objid, objtype, world) -> np.ndarray:
        d, r = self.d, self.renderer
        if objtype == OBJ_GEOM:
            rk.pick_pose(d.geom_xpos, d.geom_xmat, world, objid, r._pose_buf)
        else:
            rk.pick_pose(d.site_xpos, d.site_xmat, world, objid, r._pose_buf)
        return r._pose_buf.to_numpy()[:3].copy()

    # ---------------------------------------------------------------- perturbation
    def _body_frame(self, body):
        r = self.renderer
        rk.pick_pose(self.d.xpos, self.d.xmat, self.world, body, r._pose_buf)
        p = r._pose_buf.to_numpy()
        return p[:3].copy(), p[3:].reshape(3, 3).copy()

    def _begin_perturbation(self, translate: bool) -> None:
        body = self.selected
        bpos, bmat = self._body_frame(body)
        local = getattr(self, "_sel_local", np.zeros(3))
        from ..compiler.rotation import mat2quat

        sets = self.m.param("body_iquat")  # (1 or nworld, nbody, 4)
        iquat = np.asarray(sets[self.world % len(sets)], dtype=np.float64)[body]
        xquat = mat2quat(bmat)
        refquat = _quat_mul(xquat, iquat)
        self.pert = Perturbation(body, self.world, local, bmat @ local + bpos, refquat,
                                 translate=translate, rotate=not translate)

    def _move_perturbation(self, dx: float, dy: float) -> None:
        """mjv_movePerturb: the reference point follows the mouse in the view plane;
        the reference orientation turns with the drag."""
        p = self.pert
        pose = self.camera_pose()
        fwd = pose.forward / np.linalg.norm(pose.forward)
        up = pose.up / np.linalg.norm(pose.up)
        right = np.cross(fwd, up)
        if p.translate:
            depth = max(1e-6, float(np.dot(p.refselpos - pose.pos, fwd)))
            scale = 2.0 * depth * math.tan(math.radians(pose.fovy) / 2)
            p.refselpos = p.refselpos + scale * (dx * right + dy * up)
        else:
            angle = math.pi * math.hypot(dx, dy)
            if angle > 0:
                axis = (dx * up - dy * right) / math.hypot(dx, dy)
                q = np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])
                p.refquat = _quat_mul(q, p.refquat)
                p.refquat /= np.linalg.norm(p.refquat)

    def apply_perturbation(self) -> None:
        """Write the perturbation force into xfrc_applied (before each step)."""
        p = self.pert
        if p is None:
            return
        sets = self.m.param("body_invweight0")  # (1 or nworld, nbody, 2)
        w0 = np.asarray(sets[p.world % len(sets)], dtype=np.float64)[p.body]
        mp = self._vis["map"]
        prm = np.zeros(rk.NPERT)
        prm[rk.PERT_LOCALPOS:rk.PERT_LOCALPOS + 3] = p.localpos
        prm[rk.PERT_REFSELPOS:rk.PERT_REFSELPOS + 3] = p.refselpos
        prm[rk.PERT_REFQUAT:rk.PERT_REFQUAT + 4] = p.refquat
        prm[rk.PERT_STIFF] = float(mp["stiffness"])
        prm[rk.PERT_STIFFROT] = float(mp["stiffnessrot"])
        # MuJoCo's local mass at the selection point; here the body's mean
        # translational mass in qpos0 (1 / body_invweight0)
        prm[rk.PERT_MASS] = 1.0 / max(w0[0], 1e-15) if w0[0] > 0 else 1.0
        prm[rk.PERT_INERTIA] = 1.0 / max(w0[1], 1e-15) if w0[1] > 0 else 1.0
        prm[rk.PERT_TRANSLATE] = float(p.translate)
        prm[rk.PERT_ROTATE] = float(p.rotate)
        self._pert_prm.from_numpy(prm)
        rk.perturb(self.m, self.d, p.world, p.body, self._pert_prm)

    def _tile_offset(self) -> np.ndarray:
        r = self.renderer
        r.set_worlds(self.worlds)
        tile = self.worlds.index(self.world) if self.world in self.worlds else 0
        return r.offsets[tile]

    def _end_perturbation(self) -> None:
        p, self.pert = self.pert, None
        rk.clear_perturb(self.d, p.world, p.body)

    # ---------------------------------------------------------------- text
    def status_text(self) -> str:
        d = self.d
        t = float(d.time.to_numpy()[self.world])
        parts = [f"t = {t:.3f} s"]
        if self.paused:
            parts.append("paused")
        else:
            rt = f"x{self.rtf:.2f} real time"
            if self.behind:
                rt += f" (slower than the requested x{self.realtime:g})"
            parts.append(rt)
        parts.append(f"{self.steps_per_s:,.0f} steps/s")
        parts.append(f"{self.fps:.0f} fps")
        shown = f"worlds 0-{len(self.worlds) - 1}" if self.grid else f"world {self.world}"
        parts.append(f"{shown} of {d.nworld}")
        if self.camid >= 0:
            from ..model import id2name
            parts.append(f"camera {id2name(self.m, 'camera', self.camid) or self.camid}")
        if self.selected > 0:
            from ..model import id2name
            parts.append(f"selected {id2name(self.m, 'body', self.selected) or self.selected}")
        parts.append("H: help")
        return "  |  ".join(parts)

    @staticmethod
    def help_text() -> str:
        rows = [f"{k:<16} {v}" for k, v in KEYS] + [""] + [f"{k:<16} {v}" for k, v in MOUSE]
        return "\n".join(rows)

    # ---------------------------------------------------------------- frame
    def _poll_events(self) -> None:
        win = self.window
        ctrl = win.is_pressed(ti.ui.CTRL)
        shift = win.is_pressed(ti.ui.SHIFT)
        x, y = win.get_cursor_pos()
        for e in win.get_events():
            if e.key in (ti.ui.LMB, ti.ui.RMB, ti.ui.MMB):
                if e.type == ti.ui.PRESS:
                    self.mouse_press(e.key, x, y, ctrl)
                else:
                    self.mouse_release(e.key)
            elif e.type == ti.ui.PRESS:
                if e.key == ti.ui.ESCAPE and self.camid < 0 and self.selected <= 0:
                    continue  # GGUI closes the window on Escape itself
                self.key(e.key, ctrl, shift)
        self.mouse_move(x, y)

    def _perturb_line(self) -> Optional[np.ndarray]:
        p = self.pert
        if p is None or not p.translate:
            return None
        bpos, bmat = self._body_frame(p.body)
        off = self._tile_offset()
        line = np.zeros((2, 12), dtype=np.float32)
        line[0, :3], line[1, :3] = bmat @ p.localpos + bpos + off, p.refselpos + off
        line[:, 5] = 1.0
        line[:, 8:12] = (0.9, 0.2, 0.2, 1.0)
        return line

    def _draw_gui(self) -> None:
        gui = self.window.get_gui()
        with gui.sub_window("status", 0.0, 0.0, 1.0, 0.05) as g:
            g.text(self.status_text())
        if self.show_help:
            with gui.sub_window("help", 0.0, 0.05, 0.42, 0.62) as g:
                for k, v in KEYS + MOUSE:
                    g.text(f"{k}: {v}")

    def sync(self) -> None:
        """Handle input, apply the perturbation, draw ``d`` and show the window."""
        if self.show_window:
            self._poll_events()
        if self.reset_request:
            self.reset()
        self.apply_perturbation()
        pose = self.camera_pose()
        self.renderer.draw(self.d, pose, self.options, extra_lines=self._perturb_line())
        now = time.perf_counter()
        self._frame_times = [t for t in self._frame_times if now - t < 1.0] + [now]
        self.fps = float(len(self._frame_times))
        if self.show_window:
            self._draw_gui()
            with imgui_cwd():
                self.window.show()

    def image(self) -> np.ndarray:
        """The last drawn frame, (H, W, 3) uint8."""
        return np.clip(np.rint(self.renderer.read()[..., :3] * 255), 0, 255).astype(np.uint8)

    def reset(self) -> None:
        from ..forward import forward
        from ..model import reset_data

        self.reset_request = False
        if self.pert is not None:
            self._end_perturbation()
        reset_data(self.m, self.d)
        forward(self.m, self.d)

    # ---------------------------------------------------------------- managed loop
    def advance(self, wall_dt: float, step_time: float = 0.0, budget: float = 1 / 30) -> int:
        """Steps to run now: simulated time follows wall-clock time x realtime, unless
        that takes longer than ``budget`` seconds at ``step_time`` per step; then it
        runs what fits and marks the viewer as behind."""
        if self.step_request:
            n, self.step_request = self.step_request, 0
            return n
        if self.paused:
            return 0
        timestep = float(self.m.opt.timestep)
        self._debt = getattr(self, "_debt", 0.0) + wall_dt * self.realtime
        want = int(self._debt / timestep)
        cap = want if step_time <= 0 else max(1, int(budget / step_time))
        n = min(want, cap)
        self.behind = want > cap
        self._debt = 0.0 if self.behind else self._debt - n * timestep
        return n

    def run(self, duration: Optional[float] = None, step=None) -> None:
        """Step and draw until the window closes (or ``duration`` wall seconds pass);
        ``step(m, d)`` advances the simulation (default tiphys.step)."""
        from ..forward import forward
        from ..forward import step as step_fn

        step = step or step_fn
        forward(self.m, self.d)
        t_start = last = time.perf_counter()
        step_time = 0.0
        steps_window = []
        while self.is_running():
            now = time.perf_counter()
            if duration is not None and now - t_start > duration:
                break
            n = self.advance(now - last, step_time)
            last = now
            if n:
                t0 = time.perf_counter()
                for _ in range(n):
                    self.apply_perturbation()
                    step(self.m, self.d)
                ti.sync()
                step_time = (time.perf_counter() - t0) / n
                steps_window.append((time.perf_counter(), n))
            now = time.perf_counter()
            steps_window = [(t, k) for t, k in steps_window if now - t < 1.0]
            self.steps_per_s = float(sum(k for _, k in steps_window))
            self.rtf = 0.0 if self.paused else self.steps_per_s * float(self.m.opt.timestep)
            self.sync()


def _quat_mul(a, b) -> np.ndarray:
    return np.array([
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])
