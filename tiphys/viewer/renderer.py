"""Headless and windowed drawing of a model with Taichi's GGUI.

``Renderer`` owns a GGUI window (hidden for headless rendering), the model's
tessellated objects (``geometry.build_scene``, once) and the vertex buffers that
``kernels/render.py`` fills from the Data's device arrays each frame. ``render``
is the one-call version: ``tiphys.render(m, d, camera="top", world=3)`` returns an
(H, W, 3) uint8 image, row 0 at the top.
"""

import atexit
import contextlib
import ctypes
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import numpy as np
import taichi as ti

from .. import backend
from ..kernels import render as rk
from ..kernels.consts import OBJ_FLEX, OBJ_GEOM, OBJ_SITE, OBJ_SKIN
from ..model import check_pair, id2name, name2id
from . import geometry as geo

MAX_LIGHTS = 8  # MuJoCo's OpenGL renderer enables 8 lights (the headlight first)


class RenderError(RuntimeError):
    """Rendering is not possible here (no Vulkan driver, no display)."""


VULKAN_HELP = ("tiphys draws with Taichi's GGUI, which needs a Vulkan driver. On a machine "
               "without a GPU, Mesa's software Vulkan (lavapipe) works: install the Debian/"
               "Ubuntu packages mesa-vulkan-drivers and libvulkan1 (`sudo apt-get install "
               "mesa-vulkan-drivers libvulkan1`, or `make vulkan` as root).")


def open_window(title: str, width: int, height: int, show: bool):
    """A GGUI window; a clear RenderError when Vulkan (or a display) is missing."""
    backend.ensure_init()
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, not {width}x{height}")
    if show and not has_display():
        raise RenderError("no display to open a window on (DISPLAY and WAYLAND_DISPLAY are "
                          "unset); render images headless instead: `tiphys render MODEL -o "
                          "frame.png` or tiphys.render(m, d)")
    try:
        with imgui_cwd():
            window = ti.ui.Window(title, (int(width), int(height)), vsync=False,
                                  show_window=show)
        if not _ALL_WINDOWS:
            atexit.register(_exit_in_cache_dir)
        _ALL_WINDOWS.append(window)
        _keep_past_exit(window)
        return window
    except RuntimeError as exc:
        if "Vulkan" in str(exc) or "GGUI" in str(exc):
            raise RenderError(f"{exc}. {VULKAN_HELP}") from None
        raise


def _keep_past_exit(window) -> None:
    """Never let the interpreter's teardown destroy ``window``: Taichi 1.7.4's GGUI
    windows share Dear ImGui's Vulkan objects, and the second window destroyed shuts
    ImGui down again and crashes (SIGSEGV in ImGui_ImplVulkan_DestroyDeviceObjects, so
    a script that drew with two windows exited with status 139). One reference that is
    never given back keeps each window until the process ends; the operating system
    takes its memory back then."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(window))


def _ggui_dir() -> str:
    """Where GGUI's Dear ImGui may write its imgui.ini: ~/.cache/tiphys/ggui (or
    $XDG_CACHE_HOME/tiphys/ggui), else a folder in the temp dir."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for path in (os.path.join(base, "tiphys", "ggui"),
                 os.path.join(tempfile.gettempdir(),
                              f"tiphys-ggui-{getattr(os, 'getuid', lambda: 0)()}")):
        try:
            os.makedirs(path, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    return tempfile.gettempdir()


@contextlib.contextmanager
def imgui_cwd():
    """Run GGUI calls in tiphys's cache folder. Dear ImGui (inside GGUI) saves its window
    layout to "imgui.ini" in the *current* folder when a window starts, every few
    seconds of frames and when the window is destroyed, and Taichi 1.7.4 offers no way
    to change that path or turn it off; without this, every render would leave an
    imgui.ini wherever the user ran it."""
    try:
        old = os.getcwd()
    except OSError:  # the current folder was removed
        old = None
    os.chdir(_ggui_dir())
    try:
        yield
    finally:
        if old is not None:
            os.chdir(old)


_ALL_WINDOWS: list = []
_EXITING = {"done": False}


def _exit_in_cache_dir() -> None:
    """Dear ImGui saves imgui.ini in the current folder when a GGUI window goes away:
    make that folder tiphys's cache folder at exit. (tiphys's own windows are kept past
    the exit, see _keep_past_exit; this covers any other.)"""
    _EXITING["done"] = True
    try:
        os.chdir(_ggui_dir())
    except OSError:
        pass


# Taichi 1.7.4's GGUI windows share Vulkan state: destroying one window crashes the
# next frame of any other. So windows are never destroyed: a closed (or collected)
# Renderer hands its hidden window back to this pool, and the next Renderer of the
# same size takes it; shown windows are kept until the process exits.
_WINDOW_POOL: dict = {}
_KEPT_WINDOWS: list = []


def _acquire_window(title: str, width: int, height: int, show: bool):
    free = _WINDOW_POOL.get((width, height)) if not show else None
    if free:
        return free.pop()
    window = open_window(title, width, height, show)
    if show:
        _KEPT_WINDOWS.append(window)
    return window


def _release_window(window, width: int, height: int, show: bool) -> None:
    if _EXITING["done"]:  # the interpreter is tearing the windows down
        return
    if show:
        window.running = False
    else:
        _WINDOW_POOL.setdefault((width, height), []).append(window)


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


# --------------------------------------------------------------------------- cameras


@dataclass
class FreeCamera:
    """MuJoCo's free camera: looks at ``lookat`` from ``distance`` at ``azimuth`` and
    ``elevation`` (degrees)."""

    lookat: np.ndarray
    distance: float
    azimuth: float
    elevation: float

    @classmethod
    def default(cls, m) -> "FreeCamera":
        """mjv_defaultFreeCamera: stat.center, 1.5 stat.extent, visual/global angles."""
        g = geo.visual(m)["global"]
        return cls(np.array(m.stat.center, dtype=np.float64), 1.5 * float(m.stat.extent),
                   float(g["azimuth"]), float(g["elevation"]))

    def frame(self):
        """(position, forward, up) as mjv_updateCamera."""
        az, el = math.radians(self.azimuth), math.radians(self.elevation)
        fwd = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
        up = np.array([-math.sin(el) * math.cos(az), -math.sin(el) * math.sin(az),
                       math.cos(el)])
        return np.asarray(self.lookat, dtype=np.float64) - self.distance * fwd, fwd, up


@dataclass
class CameraPose:
    pos: np.ndarray
    forward: np.ndarray
    up: np.ndarray
    fovy: float           # degrees; for an orthographic camera, the view height
    orthographic: bool = False


CameraArg = Union[None, int, str, FreeCamera]


def camera_id(m, camera: CameraArg) -> int:
    """-1 for the free camera, else the model camera's id; clear errors otherwise."""
    if camera is None or isinstance(camera, FreeCamera):
        return -1
    if isinstance(camera, str):
        camid = name2id(m, "camera", camera)
        if camid < 0:
            names = [id2name(m, "camera", i) or f"#{i}" for i in range(m.ncam)]
            raise ValueError(f"unknown camera '{camera}'; the model's cameras: "
                             f"{', '.join(names) if names else 'none'} (or the free camera)")
        return camid
    camid = int(camera)
    if not -1 <= camid < m.ncam:
        raise ValueError(f"camera id {camid} out of range: the model has {m.ncam} cameras "
                         f"(-1 is the free camera)")
    return camid


def check_world(d, world: int) -> int:
    world = int(world)
    if not 0 <= world < d.nworld:
        raise IndexError(f"world {world} out of range: the Data has {d.nworld} worlds "
                         f"(0..{d.nworld - 1})")
    return world


# --------------------------------------------------------------------------- options


@dataclass
class RenderOptions:
    """What to draw. ``geomgroup``/``sitegroup``/``flexgroup``/``skingroup``: MuJoCo's
    visibility groups 0-5."""

    geomgroup: list = field(default_factory=lambda: [1, 1, 1, 0, 0, 0])
    sitegroup: list = field(default_factory=lambda: [1, 1, 1, 0, 0, 0])
    flexgroup: list = field(default_factory=lambda: [1, 1, 1, 0, 0, 0])
    skingroup: list = field(default_factory=lambda: [1, 1, 1, 0, 0, 0])
    skins: bool = True  # MuJoCo's mjVIS_SKIN
    # MuJoCo's mjVIS_FLEXVERT, mjVIS_FLEXEDGE, mjVIS_FLEXFACE, mjVIS_FLEXSKIN and
    # mjvOption.flex_layer (the layer of a 3D flex's elements whose faces are drawn)
    flex_vert: bool = False
    flex_edge: bool = True
    flex_face: bool = False
    flex_skin: bool = True
    flex_layer: int = 0
    sites: bool = True
    frames: bool = False
    joints: bool = False
    tendons: bool = True  # MuJoCo draws tendons by default
    contact_points: bool = False
    contact_forces: bool = False
    com: bool = False
    fog: bool = False
    skybox: bool = True
    headlight: bool = True

    def flex_flags(self) -> geo.FlexFlags:
        return geo.FlexFlags(bool(self.flex_vert), bool(self.flex_edge), bool(self.flex_face),
                             bool(self.flex_skin), int(self.flex_layer))

    def overlay_mask(self) -> int:
        return ((rk.SHOW_FRAMES if self.frames else 0) | (rk.SHOW_JOINTS if self.joints else 0)
                | (rk.SHOW_TENDONS if self.tendons else 0)
                | (rk.SHOW_FORCES if self.contact_forces else 0))

    def marker_mask(self) -> int:
        return (rk.SHOW_CONTACTS if self.contact_points else 0) | (
            rk.SHOW_COM if self.com else 0)


# --------------------------------------------------------------------------- buffers


def _field_info(buf, start: int = 0, stop: Optional[int] = None):
    """GGUI's description of a vertex/index buffer: a numpy array (host memory) or a
    Taichi ndarray on the GGUI device (Vulkan: drawn in place, no copy)."""
    from taichi._lib import core as _ti_core
    from taichi.ui.utils import get_field_info

    if isinstance(buf, np.ndarray):
        return get_field_info(buf[start:stop])
    # taichi 1.7.4's get_field_info calls a method its Ndarray lacks; fill it ourselves
    info = _ti_core.FieldInfo()
    info.valid = True
    info.field_source = _ti_core.FieldSource.TaichiNDarray
    info.dev_alloc = buf.arr.device_allocation()
    info.dtype = buf.dtype
    info.num_elements = int(np.prod(buf.shape))
    info.shape = tuple(buf.shape)
    return info


# The model matrix of every mesh tiphys draws: one instance, the identity. Taichi
# 1.7.4's GGUI gives each mesh an instance-transform buffer and, for a mesh drawn
# without transforms, leaves it unwritten; its vertex shader still reads it
# (model = I * (1 - has_attribute) + transform * has_attribute, has_attribute = 0),
# so garbage there that happens to be NaN or Inf (memory a freed buffer held)
# turns the mesh's every vertex into NaN and the mesh vanishes, in that frame and in
# every later one that gets the same memory. That was the objects (floor, sky, skins,
# whole frames) missing from images in full test runs. With the identity as the
# transform GGUI writes the buffer each draw: model = 0 * I + 1 * I = I exactly.
_IDENTITY_TRANSFORM = np.eye(4, dtype=np.float32)[None]
SEGMENT_TRIES = 3  # segmentation frames drawn before a corrupt one is an error


class _Buffer:
    """A float32 (rows, 12) GGUI vertex buffer: numpy on the CPU backend (the kernels
    write it in place), a device ndarray on Vulkan (GGUI reads it in place)."""

    def __init__(self, rows: int, on_device: bool):
        rows = max(1, int(rows))
        self.rows = rows
        self.on_device = on_device
        self.data = ti.ndarray(ti.f32, (rows, 12)) if on_device else \
            np.zeros((rows, 12), dtype=np.float32)

    def numpy(self) -> np.ndarray:
        return self.data.to_numpy() if self.on_device else self.data


class DeviceScene:
    """The template on the device plus the current tile layout (what the kernels read)."""

    def __init__(self, m, template: geo.SceneTemplate):
        self.template = template
        t = template
        self.nvert = t.nvert
        self.nobj = t.nobj

        def up(arr, dtype, shape=None):
            arr = np.asarray(arr)
            shape = shape or arr.shape
            dev = ti.ndarray(dtype, tuple(max(1, s) for s in shape))
            full = np.zeros(dev.shape, dtype=np.float32 if dtype == ti.f32 else np.int32)
            full[tuple(slice(0, s) for s in arr.shape)] = arr
            dev.from_numpy(full)
            return dev

        self.vert_obj = up(t.vert_obj, ti.i32)
        self.vert_pos = up(t.vert_pos, ti.f32, (t.nvert, 3))
        self.vert_nrm = up(t.vert_nrm, ti.f32, (t.nvert, 3))
        self.vert_rgba = up(t.vert_rgba, ti.f32, (t.nvert, 4))
        self._obj_int_host = np.zeros((max(1, t.nobj), 4), dtype=np.int32)
        self._obj_int_host[:t.nobj, 0] = t.obj_kind
        self._obj_int_host[:t.nobj, 1] = t.obj_id
        self.obj_int = ti.ndarray(ti.i32, self._obj_int_host.shape)
        self.obj_float = up(t.obj_material, ti.f32, (t.nobj, 4))
        a = m.arrays
        nlight = min(m.nlight, MAX_LIGHTS - 1)
        table = np.zeros((max(1, nlight), rk.LIGHT_COLUMNS), dtype=np.float32)
        for i in range(nlight):
            table[i, rk.L_TYPE] = a.light_type[i]
            table[i, rk.L_ACTIVE] = a.light_active[i]
            table[i, rk.L_AMB:rk.L_AMB + 3] = np.asarray(a.light_ambient).reshape(-1, 3)[i]
            table[i, rk.L_DIF:rk.L_DIF + 3] = np.asarray(a.light_diffuse).reshape(-1, 3)[i]
            table[i, rk.L_SPEC:rk.L_SPEC + 3] = np.asarray(a.light_specular).reshape(-1, 3)[i]
            table[i, rk.L_ATT:rk.L_ATT + 3] = np.asarray(a.light_attenuation).reshape(-1, 3)[i]
            table[i, rk.L_CUTOFF] = a.light_cutoff[i]
            table[i, rk.L_EXP] = a.light_exponent[i]
        self.nlight = nlight
        self.light_table = up(table, ti.f32)
        self.npoint = 2 * m.nwrap
        self.lines_per_tile = 3 * m.nbody + m.njnt + self.npoint
        self.tile_world = None
        self.tile_offset = None
        self.ntile = 0
        unit, tri = geo._grid_sphere(8, 6)
        self.marker_unit = unit.reshape(-1, 3)
        self.marker_tri = tri
        self.nmarker_vert = len(self.marker_unit)
        self.marker_sphere = up(self.marker_unit, ti.f32)
        fx = t.flex  # the flex objects' moving vertices (None without flexes)
        self.nflexrow = 0 if fx is None else len(fx.vert)
        if self.nflexrow:
            self.fv_vert = up(fx.vert, ti.i32)
            self.fv_int = up(fx.mode_int, ti.i32)
            self.fv_float = up(fx.mode_float, ti.f32)
            self.norm_adr = up(fx.norm_adr, ti.i32)
            self.norm_num = up(fx.norm_num, ti.i32)
            self.norm_pair = up(fx.norm_pair, ti.i32, (max(1, len(fx.norm_pair)), 2))
        self.nflexsub = 0 if fx is None else len(fx.sub_vert)
        if self.nflexsub:
            self.sub_vert = up(fx.sub_vert, ti.i32)
            self.sub_corner = up(fx.sub_corner, ti.i32)
            self.sub_weight = up(fx.sub_weight, ti.f32)

        sk = t.skin  # the skins' moving vertices (None without skins)
        self.nskinvert = 0 if sk is None else len(sk.vert)
        if self.nskinvert:
            self.sv_vert = up(sk.vert, ti.i32)
            self.sv_skin = up(sk.skin, ti.i32)
            self.sv_adr = up(sk.adr, ti.i32)
            self.sv_num = up(sk.num, ti.i32)
            self.sv_entry = up(sk.entry, ti.i32)
            self.sv_bone = up(sk.bone, ti.i32)
            self.sv_face = up(sk.face, ti.i32, (max(1, len(sk.face)), 3))
            self.sv_face_adr = up(sk.face_adr, ti.i32)
            self.sv_face_num = up(sk.face_num, ti.i32)
            self.sv_face_of = up(sk.face_of, ti.i32)
        self.skin_xpos = None

    def set_visibility(self, options: RenderOptions) -> None:
        t = self.template
        groups = np.clip(t.obj_group, 0, 5)
        geom_on = np.asarray(options.geomgroup, dtype=bool)[groups]
        site_on = np.asarray(options.sitegroup, dtype=bool)[groups] & bool(options.sites)
        flex_on = np.asarray(options.flexgroup, dtype=bool)[groups]
        skin_on = np.asarray(options.skingroup, dtype=bool)[groups] & bool(options.skins)
        visible = np.select([t.obj_kind == rk.KIND_GEOM, t.obj_kind == rk.KIND_FLEX,
                             t.obj_kind == rk.KIND_SKIN], [geom_on, flex_on, skin_on],
                            site_on)
        self._obj_int_host[:t.nobj, 2] = t.obj_flags | np.where(visible, rk.FLAG_VISIBLE, 0)
        self.obj_int.from_numpy(self._obj_int_host)

    def set_tiles(self, worlds: Sequence[int], offsets: np.ndarray) -> None:
        self.ntile = len(worlds)
        self.tile_world = ti.ndarray(ti.i32, (self.ntile,))
        self.tile_world.from_numpy(np.asarray(worlds, dtype=np.int32))
        self.tile_offset = ti.ndarray(ti.f32, (self.ntile, 3))
        self.tile_offset.from_numpy(np.asarray(offsets, dtype=np.float32).reshape(-1, 3))
        t = self.template
        # pass p holds ntile copies of its vertices; row = base + tile * count
        counts = np.diff(t.pass_start)
        region = np.concatenate([[0], np.cumsum(counts * self.ntile)])
        self.pass_region = region
        vert_pass = np.searchsorted(t.pass_start, np.arange(t.nvert), side="right") - 1
        row = np.zeros((max(1, t.nvert), 2), dtype=np.int32)
        row[:t.nvert, 0] = region[vert_pass] + np.arange(t.nvert) - t.pass_start[vert_pass]
        row[:t.nvert, 1] = counts[vert_pass]
        self.vert_row = ti.ndarray(ti.i32, row.shape)
        self.vert_row.from_numpy(row)
        self.pass_indices = []
        for p in range(geo.NPASS):
            tri = t.pass_tri[p]
            idx = (tri[None, :] + counts[p] * np.arange(self.ntile)[:, None]).reshape(-1)
            self.pass_indices.append(idx.astype(np.int32))
        self.vbo_rows = int(region[-1])
        if self.nskinvert:  # each tile's skin vertices before inflation (skin_vertices)
            self.skin_xpos = ti.ndarray(ti.f32, (self.ntile, self.nskinvert, 3))


def tile_offsets(m, n: int, spacing: Optional[float] = None) -> np.ndarray:
    """Grid positions of n worlds, centred on the origin (rows go -y, columns +x)."""
    if spacing is None:
        spacing = 1.2 * float(m.stat.extent)
    cols = int(math.ceil(math.sqrt(n)))
    rows = int(math.ceil(n / cols))
    k = np.arange(n)
    col, row = k % cols, k // cols
    out = np.zeros((n, 3))
    out[:, 0] = (col - (cols - 1) / 2) * spacing
    out[:, 1] = -(row - (rows - 1) / 2) * spacing
    return out


@ti.kernel
def _unset_worlds(xmat: ti.types.ndarray(), worlds: ti.types.ndarray(), n: ti.i32) -> ti.i32:
    """How many of ``worlds`` have never had kinematics: the world body's xmat is the
    identity once kinematics ran and all zeros after make_data / reset_data."""
    count = 0
    for k in range(n):
        mat = xmat[worlds[k], 0]
        total = 0.0
        for i in ti.static(range(3)):
            for j in ti.static(range(3)):
                total += ti.abs(mat[i, j])
        if total == 0.0:
            count += 1
    return count


class Renderer:
    """Draws Data of one model into a GGUI window (hidden: headless).

    ``render(d, camera, world)`` returns an image; ``draw`` only draws (the
    interactive viewer shows the window afterwards).
    """

    def __init__(self, m, width: int = 640, height: int = 480, show_window: bool = False,
                 title: str = "tiphys"):
        self.m = m
        self.width, self.height = int(width), int(height)
        self.show_window = bool(show_window)
        self.window = _acquire_window(title, self.width, self.height, self.show_window)
        self._closed = False
        self.canvas = self.window.get_canvas()
        self.scene = self.window.get_scene()
        self.camera = ti.ui.Camera()
        self.vis = geo.visual(m)
        self.on_device = backend.arch() == "vulkan"
        self._rigid = geo.rigid_objects(m)  # kept: the flex flags rebuild the rest
        self._flex_flags = geo.FlexFlags()
        self.template = geo.build_scene(m, self._flex_flags, self._rigid)
        self.dev = DeviceScene(m, self.template)
        self.options = RenderOptions()
        self._visibility_key = None
        texs = geo.Textures(m.arrays)
        self.sky_unit, sky_tri, self.sky_colour = geo.sky_dome(texs, self.template.skybox)
        self.sky_index = geo._fix_winding(-self.sky_unit, -self.sky_unit,
                                          sky_tri).reshape(-1).astype(np.int32)
        self.sky_vbo = np.zeros((len(self.sky_unit), 12), dtype=np.float32)
        if self.sky_colour is not None:
            self.sky_vbo[:, 8:12] = self.sky_colour
            self.sky_vbo[:, 11] = 1.0
        self.params = ti.ndarray(ti.f32, (rk.NPARAM,))
        self.scales = ti.ndarray(ti.f32, (8,))
        meansize = float(getattr(m.stat, "meansize", 0.2))
        sc = self.vis["scale"]
        meanmass = float(getattr(m.stat, "meanmass", 1.0)) or 1.0
        self.scales.from_numpy(np.array([
            sc["framelength"] * meansize, sc["jointlength"] * meansize,
            float(self.vis["map"]["force"]) / meanmass, sc["forcewidth"] * meansize * 3,
            sc["contactwidth"] * meansize * 0.5, sc["com"] * meansize, 0, 0],
            dtype=np.float32))
        self.worlds = None
        self.set_worlds([0])
        self._pose_buf = ti.ndarray(ti.f64, (12,))

    # ---------------------------------------------------------------- layout
    def set_worlds(self, worlds: Sequence[int], spacing: Optional[float] = None) -> None:
        """Show these worlds, tiled side by side (one world: no offset)."""
        worlds = [int(w) for w in worlds]
        if not worlds:
            raise ValueError("at least one world to show")
        if self.worlds == worlds and spacing is None:
            return
        self.worlds = worlds
        self._spacing = spacing
        self._world_ids = ti.ndarray(ti.i32, (len(worlds),))
        self._world_ids.from_numpy(np.asarray(worlds, dtype=np.int32))
        offsets = np.zeros((1, 3)) if len(worlds) == 1 else tile_offsets(self.m, len(worlds),
                                                                           spacing)
        self.offsets = offsets
        self.dev.set_tiles(worlds, offsets)
        self.vbo = _Buffer(self.dev.vbo_rows, self.on_device)
        self.lines = _Buffer(2 * self.dev.ntile * self._lines_per_tile(), self.on_device)
        nmark = self.dev.ntile * self._markers_per_tile() * self.dev.nmarker_vert
        self.markers = _Buffer(nmark, self.on_device)
        per = self._markers_per_tile()
        tri = self.dev.marker_tri.reshape(-1)
        self.marker_index = (tri[None, :] + self.dev.nmarker_vert * np.arange(
            self.dev.ntile * per)[:, None]).reshape(-1).astype(np.int32)
        self._dnconmax = None

    def _use_flex_flags(self, flags: "geo.FlexFlags") -> None:
        """Rebuild the flexes' objects when the flex flags change (the vertex buffers
        hold only what the flags draw: vertex spheres and edge cylinders of a large
        cloth would cost memory and time every frame)."""
        if flags == self._flex_flags or not self.m.nflex:
            return
        self._flex_flags = flags
        self.template = geo.build_scene(self.m, flags, self._rigid)
        self.dev = DeviceScene(self.m, self.template)
        self._visibility_key = None
        worlds, self.worlds = self.worlds, None
        self.set_worlds(worlds, self._spacing)

    def _lines_per_tile(self, nconmax: Optional[int] = None) -> int:
        n = nconmax if nconmax is not None else getattr(self, "_nconmax", 0)
        return self.dev.lines_per_tile + 3 * n

    def _markers_per_tile(self) -> int:
        return getattr(self, "_nconmax", 0) + self.m.nbody

    def _fit_contacts(self, d) -> None:
        """Overlay buffers sized by the Data's contact capacity."""
        if getattr(self, "_nconmax", None) != d.nconmax:
            self._nconmax = d.nconmax
            worlds, self.worlds = self.worlds, None
            self.set_worlds(worlds)

    # ---------------------------------------------------------------- cameras
    def camera_pose(self, d, camera: CameraArg = None, world: int = 0) -> CameraPose:
        """The view of camera ``camera`` (None/FreeCamera: free camera, int id, name) in
        world ``world`` (model cameras move with their world's tile)."""
        m = self.m
        world = check_world(d, world)
        camid = camera_id(m, camera)
        glob = self.vis["global"]
        if camid < 0:
            free = camera if isinstance(camera, FreeCamera) else FreeCamera.default(m)
            pos, fwd, up = free.frame()
            ortho = bool(glob.get("orthographic", 0))
            fovy = float(glob["fovy"])
            if ortho:  # MuJoCo: the free orthographic camera's fovy is a length
                fovy = float(glob["fovy"])
            return CameraPose(pos, fwd, up, fovy, ortho)
        rk.pick_pose(d.cam_xpos, d.cam_xmat, world, camid, self._pose_buf)
        pose = self._pose_buf.to_numpy()
        mat = pose[3:].reshape(3, 3)
        tile = self.worlds.index(world) if world in self.worlds else 0
        pos = pose[:3] + self.offsets[tile]
        return CameraPose(pos, -mat[:, 2], mat[:, 1], float(m.arrays.cam_fovy[camid]),
                          bool(m.arrays.cam_orthographic[camid]))

    def body_position(self, d, world: int, body: int) -> np.ndarray:
        rk.pick_pose(d.xpos, d.xmat, world, body, self._pose_buf)
        return self._pose_buf.to_numpy()[:3].copy()

    # ---------------------------------------------------------------- drawing
    def _params(self, pose: CameraPose, options: RenderOptions) -> np.ndarray:
        p = np.zeros(rk.NPARAM, dtype=np.float32)
        head = self.vis["headlight"]
        p[rk.P_CAM:rk.P_CAM + 3] = pose.pos
        p[rk.P_HEAD_AMB:rk.P_HEAD_AMB + 3] = head["ambient"]
        p[rk.P_HEAD_DIF:rk.P_HEAD_DIF + 3] = head["diffuse"]
        p[rk.P_HEAD_SPEC:rk.P_HEAD_SPEC + 3] = head["specular"]
        headlight = bool(head.get("active", 1)) and options.headlight
        p[rk.P_HEAD_ON] = float(headlight)
        p[rk.P_HEAD_DIR:rk.P_HEAD_DIR + 3] = pose.forward
        p[rk.P_ORTHO] = float(pose.orthographic)
        extent = float(self.m.stat.extent)
        mp = self.vis["map"]
        p[rk.P_FOG_ON] = float(options.fog)
        p[rk.P_FOG_START] = float(mp["fogstart"]) * extent
        p[rk.P_FOG_END] = float(mp["fogend"]) * extent
        p[rk.P_FOG_RGB:rk.P_FOG_RGB + 3] = np.asarray(self.vis["rgba"]["fog"])[:3]
        # MuJoCo adds global ambient light only when the scene has no lights at all
        nlight = int(headlight) + int(np.sum(np.asarray(self.m.arrays.light_active)[
            :self.dev.nlight] != 0)) if self.m.nlight else int(headlight)
        p[rk.P_GLOBAL_AMB] = 0.0 if nlight else 0.3
        return p

    def _set_camera(self, pose: CameraPose) -> None:
        extent = float(self.m.stat.extent)
        mp = self.vis["map"]
        cam = self.camera
        cam.position(*(float(x) for x in pose.pos))
        cam.lookat(*(float(x) for x in pose.pos + pose.forward))
        cam.up(*(float(x) for x in pose.up))
        cam.z_near(float(mp["znear"]) * extent)
        cam.z_far(float(mp["zfar"]) * extent)
        if pose.orthographic:
            half_h = 0.5 * pose.fovy
            half_w = half_h * self.width / self.height
            cam.projection_mode(ti.ui.ProjectionMode.Orthogonal)
            cam.left(-half_w)
            cam.right(half_w)
            cam.top(half_h)
            cam.bottom(-half_h)
        else:
            cam.projection_mode(ti.ui.ProjectionMode.Perspective)
            cam.fov(float(pose.fovy))
        self.scene.set_camera(cam)

    def _mesh(self, buf, start: int, stop: int, indices: np.ndarray) -> None:
        if len(indices) == 0:
            return
        data = buf.data if isinstance(buf, _Buffer) else buf
        if isinstance(data, np.ndarray):
            vbo_info = _field_info(data, start, stop)
            offset = 0
        else:
            vbo_info = _field_info(data)
            offset = start
        count = (stop if stop is not None else len(data)) - start
        self.scene.scene.mesh_instance(vbo_info, True, _field_info(indices), (0.5, 0.5, 0.5),
                                       False, _field_info(_IDENTITY_TRANSFORM), 1, 0,
                                       len(indices), 0, count, offset, False)

    def draw(self, d, pose: CameraPose, options: Optional[RenderOptions] = None,
             segmentation: bool = False, extra_lines: Optional[np.ndarray] = None) -> None:
        """Fill the buffers from ``d`` and draw them (call ``read``/``window.show`` next)."""
        options = options or self.options
        check_pair(self.m, d, "render")
        if max(self.worlds) >= d.nworld:
            raise IndexError(f"world {max(self.worlds)} out of range: the Data has "
                             f"{d.nworld} worlds")
        if _unset_worlds(d.xmat, self._world_ids, len(self.worlds)):
            shown = ", ".join(map(str, self.worlds))
            raise ValueError(
                f"render: the Data has no positions to draw yet in world(s) {shown} "
                f"(make_data and reset_data leave xpos/xmat/geom_xpos zero, as MuJoCo's "
                f"mj_resetData does, and the picture would only show the sky): call "
                f"tiphys.forward(m, d) (or kinematics, step) first")
        drawn_per_world = sorted(set(self.m.param_worlds()) & {"geom_size", "geom_rgba"})
        if drawn_per_world:
            raise NotImplementedError(
                f"render: {' and '.join(drawn_per_world)} given per world "
                f"(tiphys.set_param): the renderer draws each geom with the one size and "
                f"colour it was built with; per-world sizes and colours are not drawn yet")
        self._use_flex_flags(options.flex_flags())
        self._fit_contacts(d)
        key = (tuple(options.geomgroup), tuple(options.sitegroup), options.sites,
               tuple(options.flexgroup), tuple(options.skingroup), options.skins)
        if key != self._visibility_key:
            self.dev.set_visibility(options)
            self._visibility_key = key
        params = self._params(pose, options)
        self.params.from_numpy(params)
        rk.geom_vertices(self.dev, d, self.params, segmentation, self.vbo.data)
        if self.dev.nflexrow:
            rk.flex_vertices(self.dev, d, self.params, segmentation, self.vbo.data)
            if self.dev.nflexsub:
                rk.flex_subvertices(self.dev, d, self.params, segmentation, self.vbo.data)
        if self.dev.nskinvert:
            rk.skin_vertices(self.m, self.dev, d, self.params, segmentation, self.vbo.data)
        self._set_camera(pose)
        self.canvas.set_background_color((0.0, 0.0, 0.0))
        self.scene.ambient_light((1.0, 1.0, 1.0))
        if not segmentation and options.skybox and self.sky_colour is not None:
            radius = 0.9 * float(self.vis["map"]["zfar"]) * float(self.m.stat.extent)
            self.sky_vbo[:, 0:3] = pose.pos + radius * self.sky_unit
            self.sky_vbo[:, 3:6] = -self.sky_unit
            self._mesh(self.sky_vbo, 0, None, self.sky_index)
        region = self.dev.pass_region
        for p in range(geo.NPASS):
            self._mesh(self.vbo, int(region[p]), int(region[p + 1]), self.dev.pass_indices[p])
        if not segmentation:
            mask = options.marker_mask()
            if mask:
                rk.overlay_markers(self.m, d, self.dev, mask, self.scales, self.params,
                                   self.markers.data)
                self._mesh(self.markers, 0, self.markers.rows, self.marker_index)
            mask = options.overlay_mask()
            if mask:
                rk.overlay_lines(self.m, d, self.dev, mask, self.scales, self.lines.data)
                self._lines(self.lines.data, 2 * self.dev.ntile * self._lines_per_tile())
            if extra_lines is not None and len(extra_lines):
                self._lines(np.ascontiguousarray(extra_lines, dtype=np.float32),
                            len(extra_lines))
        self.canvas.scene(self.scene)

    def _lines(self, data, count: int, width: float = 2.0) -> None:
        from taichi.ui.utils import get_field_info

        self.scene.scene.lines(_field_info(data) if not isinstance(data, np.ndarray) else
                               get_field_info(data), get_field_info(None), True,
                               (0.5, 0.5, 0.5), width, count, 0, count, 0)

    def read(self) -> np.ndarray:
        """The drawn image, (height, width, 4) float32 in [0, 1], row 0 at the top."""
        with imgui_cwd():
            img = self.window.get_image_buffer_as_numpy()
        return np.ascontiguousarray(np.transpose(img, (1, 0, 2))[::-1])

    def render(self, d, camera: CameraArg = None, world: int = 0, *,
               options: Optional[RenderOptions] = None, segmentation: bool = False,
               worlds: Optional[Sequence[int]] = None) -> np.ndarray:
        """An (H, W, 3) uint8 image of world ``world`` (or ``worlds`` tiled)."""
        world = check_world(d, world)
        shown = [check_world(d, w) for w in worlds] if worlds is not None else [world]
        self.set_worlds(shown)
        pose = self.camera_pose(d, camera, world)
        if worlds is not None and camera_id(self.m, camera) < 0 and len(shown) > 1 and \
                not isinstance(camera, FreeCamera):
            pose = self.grid_pose()
        self.draw(d, pose, options, segmentation)
        img = self.read()
        return np.clip(np.rint(img[..., :3] * 255), 0, 255).astype(np.uint8)

    def grid_camera(self) -> FreeCamera:
        """MuJoCo's default free camera moved back to see every tile."""
        free = FreeCamera.default(self.m)
        if len(self.offsets) > 1:
            free.lookat = free.lookat + self.offsets.mean(0)
            span = float(np.ptp(self.offsets[:, :2], axis=0).max())
            free.distance += 1.6 * span
        return free

    def grid_pose(self) -> CameraPose:
        pos, fwd, up = self.grid_camera().frame()
        return CameraPose(pos, fwd, up, float(self.vis["global"]["fovy"]))

    def segment(self, d, camera: CameraArg = None, world: int = 0,
                options: Optional[RenderOptions] = None,
                worlds: Optional[Sequence[int]] = None) -> np.ndarray:
        """Per-pixel (object id, object type, world) like MuJoCo's segmentation
        rendering: (H, W, 3) int32 of geom/site/flex/skin id, mjtObj type (5 geom,
        6 site, 9 flex, 11 skin) and the world drawn there; -1 on the background.

        Every pixel of a segmentation frame is the background or the colour of an
        object of a shown world. A frame with any other colour did not come from
        tiphys's buffers (GGUI/lavapipe returned a corrupt frame: README, "Viewer"):
        it is drawn again, SEGMENT_TRIES frames in all, and then a RenderError says
        so; a wrong segmentation is never returned."""
        bad = 0
        for _ in range(SEGMENT_TRIES):
            img = self.render(d, camera, world, options=options, segmentation=True,
                              worlds=worlds)
            code = self._segment_codes(img)
            bad = self._foreign_pixels(code)
            if not bad:
                return self._decode_codes(code)
        raise RenderError(
            f"segmentation: {SEGMENT_TRIES} frames in a row came back with pixels of no "
            f"object ({bad} in the last), so GGUI's frame is not what tiphys drew; "
            f"a new Renderer (or process) may draw it right")

    @staticmethod
    def _segment_codes(img: np.ndarray) -> np.ndarray:
        """Each pixel's (tile * nobj + object) code (segment_colour's inverse), -1 on the
        background."""
        return img[..., 0].astype(np.int64) + 256 * img[..., 1].astype(np.int64) + \
            65536 * img[..., 2].astype(np.int64) - 1

    def _foreign_pixels(self, code: np.ndarray) -> int:
        """Pixels of a segmentation frame (its _segment_codes) whose colour is no
        object's of the shown worlds (nor the background's)."""
        return int(np.count_nonzero(code >= max(1, self.template.nobj) * len(self.worlds)))

    def decode_segmentation(self, img: np.ndarray) -> np.ndarray:
        return self._decode_codes(self._segment_codes(img))

    def _decode_codes(self, code: np.ndarray) -> np.ndarray:
        """(object id, object type, world) of each pixel from its _segment_codes."""
        t = self.template
        nobj = max(1, t.nobj)
        obj, tile = code % nobj, code // nobj
        out = np.full(code.shape[:2] + (3,), -1, dtype=np.int32)
        valid = (code >= 0) & (tile < len(self.worlds))
        out[valid, 0] = t.obj_id[obj[valid]]
        kind = t.obj_kind[obj[valid]]
        out[valid, 1] = np.select([kind == rk.KIND_GEOM, kind == rk.KIND_FLEX,
                                   kind == rk.KIND_SKIN], [OBJ_GEOM, OBJ_FLEX, OBJ_SKIN],
                                  OBJ_SITE)
        out[valid, 2] = np.asarray(self.worlds)[tile[valid]]
        return out

    def close(self) -> None:
        """Give the window back (see _WINDOW_POOL); the Renderer is unusable after."""
        if not getattr(self, "_closed", True):
            self._closed = True
            _release_window(self.window, self.width, self.height, self.show_window)

    def __del__(self):
        self.close()


def _renderer_for(m, width: int, height: int) -> Renderer:
    """A Renderer cached on the model (one per image size)."""
    cache = m.plans.renderers
    if cache is None:
        cache = m.plans.renderers = {}
    key = (int(width), int(height))
    if key not in cache:
        cache[key] = Renderer(m, width, height)
    return cache[key]


def render(m, d, camera: CameraArg = None, world: int = 0, width: int = 640,
           height: int = 480, *, options: Optional[RenderOptions] = None,
           segmentation: bool = False, worlds: Optional[Sequence[int]] = None) -> np.ndarray:
    """Render world ``world`` of ``d`` headless: an (height, width, 3) uint8 image.

    ``camera``: None (MuJoCo's default free camera), a model camera name or id, or a
    FreeCamera. ``worlds``: several worlds tiled side by side. ``segmentation``: draw
    object ids instead of colours (see Renderer.segment). Call ``tiphys.forward``
    (or step) first: the image shows the Data's current geom_xpos/geom_xmat, and a
    world whose positions were never computed (straight from make_data or reset_data)
    raises ValueError rather than drawing an empty sky.
    """
    check_pair(m, d, "render")
    camera_id(m, camera)
    check_world(d, world)
    return _renderer_for(m, width, height).render(d, camera, world, options=options,
                                                 segmentation=segmentation, worlds=worlds)
