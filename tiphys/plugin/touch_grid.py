"""mujoco.sensor.touch_grid: MuJoCo's touch-grid sensor plugin (plugin/sensor/touch_grid.cc),
batched over worlds (kernels/plugin_touch.py).

Config: nchannel (1 to 6 images of the contact force:torque components, normal first;
0 or absent: 1), size (horizontal and vertical bins), fov (horizontal field of view in
(0, 180] degrees, vertical in (0, 90]), gamma (foveal deformation in [0, 1], default 0).
A sensor of it is attached to a site (``objtype="site"``); its dim is nchannel * size[0]
* size[1]; it needs the acceleration stage (the constraint forces). No plugin_state.

The config is read as TouchGrid::Create reads it (strtod; a list split at every single
space, so two spaces make an empty item that counts as 0), with its messages. Only the
first sensor of an instance is computed, as in MuJoCo (Compute looks up the first
sensor that names the instance); others sharing it keep their sensordata.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..kernels.consts import CONE_PYRAMIDAL, OBJ_SITE, STAGE_ACC
from ..kernels.plugin_touch import (TG_ADR, TG_EDGEADR, TG_NCHANNEL, TG_NX, TG_NY, TG_SITE,
                                    TG_WELD, TG_WIDTH, touch_grid_compute)
from . import SENSOR, Instance, Plugin, launch

_WHITESPACE = " \t\n\v\f\r"
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?")
_SPECIAL = re.compile(r"[+-]?(?:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)


def strtod(text: str) -> tuple:
    """C's strtod: (value, characters consumed); (0.0, 0) when no number starts the
    text (after leading whitespace)."""
    body = text.lstrip(_WHITESPACE)
    skipped = len(text) - len(body)
    best = None
    for pattern in (_HEX, _SPECIAL, _DECIMAL):
        match = pattern.match(body)
        if match and (best is None or match.end() > best.end()):
            best = match
    if best is None:
        return 0.0, 0
    token = best.group()
    if best.re is _HEX:
        sign = -1.0 if token.startswith("-") else 1.0
        digits = token.lstrip("+-")
        if "p" not in digits.lower():
            digits += "p0"
        value = sign * float.fromhex(digits)
    elif best.re is _SPECIAL:
        value = float(token.split("(")[0])
    else:
        value = float(token)
    return value, skipped + best.end()


def _number(text: str) -> float:
    return strtod(text)[0]


def _to_int(value: float) -> int:
    """A C double -> int conversion (truncation; what x86 gives outside the range)."""
    if not math.isfinite(value) or not -2.0 ** 31 < value < 2.0 ** 31:
        return -2 ** 31
    return int(value)


def _check_attr(text: str) -> bool:
    """CheckAttr: the text without whitespace is one number, or empty."""
    value = "".join(ch for ch in text if ch not in _WHITESPACE)
    return strtod(value)[1] == len(value)


def _items(text: str) -> list:
    """ReadVector's items: the text split at every single space (getline), a trailing
    space making no empty item."""
    parts = text.split(" ")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def _config(inst: Instance) -> dict:
    return {key: inst.config.get(key, "") for key in TouchGrid.attributes}


def _nchannel(text: str) -> int:
    nchannel = _to_int(_number(text))
    return nchannel if nchannel else 1


def parse(inst: Instance):
    """(nchannel, size, fov, gamma) as TouchGrid::Create reads them, or the message of
    its mju_error."""
    cfg = _config(inst)
    if not (_check_attr(cfg["gamma"]) and _check_attr(cfg["nchannel"])):
        return "Invalid or missing parameters in touch_grid sensor plugin"
    nchannel = _nchannel(cfg["nchannel"])
    if nchannel < 1 or nchannel > 6:
        return "nchannel must be between 1 and 6"
    size = [_to_int(_number(item)) for item in _items(cfg["size"])]
    if len(size) != 2:
        return "Both horizontal and vertical resolutions must be specified"
    if size[0] <= 0 or size[1] <= 0:
        return "Horizontal and vertical resolutions must be positive"
    fov = [_number(item) for item in _items(cfg["fov"])]
    if len(fov) != 2:
        return "Both horizontal and vertical fields of view must be specified"
    if fov[0] <= 0 or fov[0] > 180:
        return "`fov[0]` must be a float between (0, 180] degrees"
    if fov[1] <= 0 or fov[1] > 90:
        return "`fov[1]` must be a float between (0, 90] degrees"
    gamma = _number(cfg["gamma"])
    if gamma < 0 or gamma > 1:
        return "`gamma` must be a nonnegative float between [0, 1]"
    return nchannel, size, fov, gamma


def _linspace(lower: float, upper: float, n: int) -> list:
    """LinSpace: n values from lower, each the last plus (upper - lower) / (n - 1)."""
    step = (upper - lower) / (n - 1) if n > 1 else 0.0
    out = []
    for _ in range(n):
        out.append(lower)
        lower += step
    return out


def _fovea(x: float, gamma: float) -> float:
    if not gamma:
        return x
    g = max(0.0, min(1.0, gamma))
    return g * math.pow(x, 5.0) + (1 - g) * x


def bin_edges(size, fov, gamma) -> tuple:
    """BinEdges: the horizontal and vertical bin edges (radians), in MuJoCo's
    arithmetic."""
    edges = []
    for n, angle in zip(size, fov):
        scale = angle * math.pi / 180
        edges.append([_fovea(x, gamma) * scale for x in _linspace(-1.0, 1.0, n + 1)])
    return tuple(edges)


class TouchGrid(Plugin):
    """Touch-grid sensor (mujoco.sensor.touch_grid)."""

    replayable = True  # its hook only launches a kernel (tiphys/replay.py)
    name = "mujoco.sensor.touch_grid"
    capabilities = SENSOR
    attributes = ("nchannel", "size", "fov", "gamma")
    needstage = STAGE_ACC

    @classmethod
    def nsensordata(cls, instance: Instance, sensor: int) -> int:
        """nchannel * size[0] * size[1] (0 while size has fewer than two values: the
        check then fails with MuJoCo's message, where MuJoCo reads past the list)."""
        cfg = _config(instance)
        size = [_to_int(_number(item)) for item in _items(cfg["size"])]
        if len(size) < 2:
            return 0
        return _nchannel(cfg["nchannel"]) * size[0] * size[1]

    @classmethod
    def check(cls, arrays, instance: Instance):
        """TouchGrid::Create's and its constructor's validation, with their messages."""
        parsed = parse(instance)
        if isinstance(parsed, str):
            return parsed
        objtype = np.asarray(arrays.sensor_objtype).reshape(-1)
        for sid in instance.sensors:
            if int(objtype[sid]) != OBJ_SITE:
                return "Touch Grid sensor must be attached to a site"
        return None

    def __init__(self, m, instances: list):
        super().__init__(m, instances)
        a = m.arrays
        adr = np.asarray(a.sensor_adr).reshape(-1)
        dim = np.asarray(a.sensor_dim).reshape(-1)
        objid = np.asarray(a.sensor_objid).reshape(-1)
        site_bodyid = np.asarray(a.site_bodyid).reshape(-1)
        body_weldid = np.asarray(a.body_weldid).reshape(-1)
        rows, edges, zero = [], [], []
        for inst in instances:
            if not inst.sensors:
                continue  # (no sensor names it: nothing to compute)
            parsed = parse(inst)
            if isinstance(parsed, str):
                raise ValueError(f"mj_initPlugin: plugin->init failed for plugin id "
                                 f"{inst.id}: {parsed}")
            nchannel, size, fov, gamma = parsed
            sid = inst.sensors[0]
            row = np.zeros(TG_WIDTH, dtype=np.int32)
            row[TG_ADR], row[TG_SITE] = adr[sid], objid[sid]
            row[TG_WELD] = body_weldid[site_bodyid[objid[sid]]]
            row[TG_NCHANNEL], row[TG_NX], row[TG_NY] = nchannel, size[0], size[1]
            row[TG_EDGEADR] = len(edges)
            xedges, yedges = bin_edges(size, fov, gamma)
            edges += xedges + yedges
            zero += range(int(adr[sid]), int(adr[sid] + dim[sid]))
            rows.append(row)
        self.ntouch = len(rows)
        self.nzero = len(zero)
        self.host_arrays = {
            "tg_int": np.array(rows, dtype=np.int32).reshape(-1, TG_WIDTH),
            "tg_edges": np.array(edges, dtype=np.float64),
            "tg_zero": np.array(zero, dtype=np.int32),
        }

    def compute_sensor(self, m, d) -> None:
        """Reads ncon, contact_pos, contact_frame, contact_friction, contact_dim,
        contact_geom, contact_efc_address, efc_force, site_xpos, site_xmat; writes the
        sensordata of the grids."""
        if not self.ntouch:
            return
        launch(touch_grid_compute, m, d, ntouch=self.ntouch, nzero=self.nzero,
               pyramidal=m.opt.cone == CONE_PYRAMIDAL, **self.device(d))
