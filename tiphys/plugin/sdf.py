"""MuJoCo's first-party signed-distance-field plugins (plugin/sdf/*.cc of MuJoCo 3.4.0):
mujoco.sdf.bolt, bowl, gear, nut and torus, registered in MuJoCo's order.

Each is an SDF plugin (capability SDF, no state) with MuJoCo's config attributes and
defaults. Its shape is used twice, as in MuJoCo:

- at compile time, a ``<mesh>`` with the plugin gets the surface marching cubes extracts
  from the distance sampled over the plugin's box (tiphys/compiler/sdf_mesh.py); the
  numpy ``distance`` here is the plugin's ``sdf_staticdistance``, ``aabb`` its
  ``sdf_aabb`` (center, half sizes) and ``attribute_values`` its ``sdf_attribute``
  (a value that is not a number is MuJoCo's error "invalid attribute value for 'x'");
- in the collision stage, a ``<geom type="sdf">`` with the plugin is collided by
  gradient descent on the device (kernels/collide_sdf.py), its distance and gradient
  being the device functions of kernels/sdf.py, selected by ``sdf_kind``.

``check`` is the plugin's ``init`` validation (CheckAttr on the attributes each plugin
checks: the text without whitespace must be a whole number, or empty), with MuJoCo's
warning text as the message.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..kernels.sdf import SDF_BOLT, SDF_BOWL, SDF_GEAR, SDF_NUT, SDF_TORUS, SDF_NATTR
from . import SDF, Plugin
from .touch_grid import _check_attr, strtod

def _stod(text: str) -> Optional[float]:
    """std::stod: the number at the start of the text (after whitespace), None when
    there is none (std::invalid_argument)."""
    value, used = strtod(text)
    if used == 0:
        return None
    return value


class SdfPlugin(Plugin):
    """Base of the SDF plugins: attributes, defaults, which attributes ``init`` checks
    and the message it fails with, the device kind, the numpy distance and the box."""

    capabilities = SDF
    defaults: tuple = ()
    checked: tuple = ()  # the attributes Create passes through CheckAttr
    invalid: str = ""  # Create's warning when one fails
    sdf_kind: int = -1  # kernels/sdf.py's id of the shape

    def __init__(self, m, instances: list):
        super().__init__(m, instances)
        # what the collision stage reads (kernels/collide_sdf.py): geom -> (device
        # shape kind, attribute values)
        self.sdf_geoms = {g: (self.sdf_kind, self.attribute_values(inst.config))
                          for inst in instances for g in inst.geoms}

    @classmethod
    def check(cls, arrays, instance) -> Optional[str]:
        for key in cls.checked:
            if not _check_attr(instance.config.get(key, "")):
                return cls.invalid
        return None

    @classmethod
    def attribute_values(cls, config: dict) -> np.ndarray:
        """sdf_attribute (SdfDefault::GetDefaults): each attribute's number, its
        default when empty; ValueError "invalid attribute value for 'x'" when the text
        does not start with a number."""
        out = np.zeros(SDF_NATTR)
        for k, (key, default) in enumerate(zip(cls.attributes, cls.defaults)):
            text = config.get(key, "")
            if text == "":
                out[k] = default
                continue
            value = _stod(text)
            if value is None:
                raise ValueError(f"invalid attribute value for '{key}'")
            out[k] = value
        return out

    @staticmethod
    def distance(p: np.ndarray, attr: np.ndarray) -> np.ndarray:
        """The signed distance at points ``p`` (..., 3), in the plugin's frame."""
        raise NotImplementedError

    @staticmethod
    def aabb(attr: np.ndarray) -> np.ndarray:
        """sdf_aabb: (center x, y, z, half size x, y, z)."""
        raise NotImplementedError


def _xy(p):
    return p[..., 0], p[..., 1], p[..., 2]


def _screw(p, radius):
    """The thread shared by the nut and the bolt: (radius offset, thread, sqrt(2)/2)."""
    x, y, z = _xy(p)
    rad = np.sqrt(x * x + y * y) - radius
    sqrt12 = np.sqrt(2.0) / 2.0
    azimuth = np.arctan2(y, x)
    wave = z * 12.0 - azimuth / np.pi / 2.0
    triangle = np.abs(wave - np.floor(wave) - 0.5)
    thread = (rad - triangle / 12.0) * sqrt12
    return rad, thread, sqrt12


def _hex_head(p, rad, sqrt12):
    """The hexagonal head shared by the nut and the bolt."""
    x, y, z = _xy(p)
    k = 6.0 / np.pi / 2.0
    angle = -np.floor(np.arctan2(y, x) * k + 0.5) / k
    s0 = np.sin(angle)
    s1 = np.sin(angle + np.pi * 0.5)
    head = (s1 * x + -s0 * y) - 0.5
    head = np.maximum(head, np.abs(z + 0.25) - 0.25)
    return np.maximum(head, (z + rad - 0.22) * sqrt12)


class Bolt(SdfPlugin):
    name = "mujoco.sdf.bolt"
    attributes = ("radius",)
    defaults = (0.26,)
    checked = ("radius",)
    invalid = "Invalid parameter specification in Bolt plugin"
    sdf_kind = SDF_BOLT

    @staticmethod
    def distance(p, attr):
        rad, thread, sqrt12 = _screw(p, attr[0])
        z = p[..., 2]
        bolt = np.maximum(thread, -(0.5 - np.abs(z + 0.5)))
        cone = (z - rad) * sqrt12
        bolt = np.maximum(bolt, -(cone + 1.0 * sqrt12))
        return np.minimum(bolt, _hex_head(p, rad, sqrt12))

    @staticmethod
    def aabb(attr):
        return np.array([0.0, 0.0, 0.0, 0.6, 0.6, 1.0])


class Bowl(SdfPlugin):
    name = "mujoco.sdf.bowl"
    attributes = ("height", "radius", "thickness")
    defaults = (0.4, 1.0, 0.02)
    checked = ("radius", "height", "thickness")
    invalid = "Invalid parameter specification in Bowl plugin"
    sdf_kind = SDF_BOWL

    @staticmethod
    def distance(p, attr):
        height, radius, thick = attr[0], attr[1], attr[2]
        width = np.sqrt(radius * radius - height * height)
        x, y, z = _xy(p)
        q0 = np.sqrt(x * x + y * y)
        d0 = q0 - width
        d1 = z - height
        rim = np.sqrt(d0 * d0 + d1 * d1)
        shell = np.abs(np.sqrt(q0 * q0 + z * z) - radius)
        return np.where(height * q0 < width * z, rim, shell) - thick

    @staticmethod
    def aabb(attr):
        r = attr[1] + attr[2]
        return np.array([0.0, 0.0, 0.0, r, r, r])


def _smooth_union(a, b, k):
    h = np.clip(0.5 + 0.5 * (b - a) / k, 0.0, 1.0)
    return b * (1.0 - h) + a * h - k * h * (1.0 - h)


def _smooth_intersection(a, b, k):
    return np.maximum(np.maximum(a, b), -_smooth_union(np.maximum(a, -b), np.maximum(b, -a), k))


def _mod(x, y):
    return x - y * np.floor(x / y)


class Gear(SdfPlugin):
    name = "mujoco.sdf.gear"
    attributes = ("alpha", "diameter", "teeth", "thickness", "innerdiameter")
    defaults = (0.0, 2.8, 25.0, 0.2, -1.0)
    checked = ("alpha", "diameter", "teeth", "innerdiameter")
    invalid = "Invalid parameter specification in Gear plugin"
    sdf_kind = SDF_GEAR

    @staticmethod
    def distance2d(p, attr):
        D, N, alpha = attr[1], attr[2], attr[0]
        psi = 3.096e-5 * N * N - 6.557e-3 * N + 0.551
        R = D / 2.0
        x, y, _ = _xy(p)
        rho = np.sqrt(x * x + y * y)
        Pd = N / D
        P = np.pi / Pd
        a = 1.0 / Pd
        Ro = (D + 2.0 * a) / 2.0
        h = 2.2 / Pd
        innerR = Ro - h - 0.14 * D
        if attr[4] >= 0.0:
            innerR = attr[4] / 2.0
        Rb = D * np.cos(psi) / 2.0
        fi = np.arctan2(y, x) + alpha
        stride = P / R
        inv_alpha = np.arccos(Rb / R)
        inv_phi = np.tan(inv_alpha) - inv_alpha
        shift = stride / 2.0 - 2.0 * inv_phi
        fia = _mod(fi + shift / 2.0, stride) - shift / 2.0
        fib = _mod(-fi - shift + shift / 2.0, stride) - shift / 2.0
        outside = Rb < rho
        with np.errstate(invalid="ignore", divide="ignore"):
            acos_rb = np.arccos(Rb / np.where(outside, rho, 1.0))
            ta = np.sqrt(np.where(outside, rho * rho - Rb * Rb, 0.0))
        dista = np.where(outside, ta - Rb * (fia + acos_rb), -1.0e6)
        distb = np.where(outside, ta - Rb * (fib + acos_rb), -1.0e6)
        cogs = np.maximum(dista, distb)
        walls = np.maximum(fia - (stride - shift), fib - (stride - shift))
        cogs = np.maximum(walls, cogs)
        cogs = _smooth_intersection(rho - Ro, cogs, 0.0035 * D)
        cogs = _smooth_union(rho - (Ro - h), cogs, Rb - Ro + h)
        cogs = np.maximum(cogs, -(rho - innerR))
        out = np.where(Ro - rho < -0.2, rho - Ro, cogs)
        return np.where(innerR - rho > 0.0, innerR - rho, out)

    @staticmethod
    def distance(p, attr):
        d2 = Gear.distance2d(p, attr)
        w1 = np.abs(p[..., 2]) - attr[3] / 2.0
        a0 = np.maximum(d2, 0.0)
        a1 = np.maximum(w1, 0.0)
        return np.minimum(np.maximum(d2, w1), 0.0) + np.sqrt(a0 * a0 + a1 * a1)

    @staticmethod
    def aabb(attr):
        r = attr[1] / 2.0 * 1.25
        return np.array([0.0, 0.0, 0.0, r, r, attr[3] / 2.0 * 1.1])


class Nut(SdfPlugin):
    name = "mujoco.sdf.nut"
    attributes = ("radius",)
    defaults = (0.26,)
    checked = ("radius",)
    invalid = "Invalid parameter specification in Nut plugin"
    sdf_kind = SDF_NUT

    @staticmethod
    def distance(p, attr):
        rad, thread, sqrt12 = _screw(p, attr[0])
        z = p[..., 2]
        cone = (z - rad) * sqrt12
        hole = np.maximum(thread, -(cone + 0.5 * sqrt12))
        hole = np.minimum(hole, -cone - 0.05 * sqrt12)
        return np.maximum(_hex_head(p, rad, sqrt12), -hole)

    @staticmethod
    def aabb(attr):
        return np.array([0.0, 0.0, 0.0, 0.6, 0.6, 1.0])


class Torus(SdfPlugin):
    name = "mujoco.sdf.torus"
    attributes = ("radius1", "radius2")
    defaults = (0.35, 0.15)
    checked = ("radius1", "radius2")
    invalid = "Invalid radius1 or radius2 parameters in Torus plugin"
    sdf_kind = SDF_TORUS

    @staticmethod
    def distance(p, attr):
        x, y, z = _xy(p)
        q = np.sqrt(x * x + y * y) - attr[0]
        return np.sqrt(q * q + z * z) - attr[1]

    @staticmethod
    def aabb(attr):
        r = attr[0] + attr[1]
        return np.array([0.0, 0.0, 0.0, r, r, attr[1]])


SDF_PLUGINS = (Bolt, Bowl, Gear, Nut, Torus)  # MuJoCo's registration order
