"""mujoco.elasticity.cable: MuJoCo's cable elasticity plugin (plugin/elasticity/cable.cc),
a passive-force plugin batched over worlds (kernels/plugin_cable.py).

The plugin acts on the consecutive bodies that carry its instance (body_plugin; a
<composite type="cable"> gives it to every body it makes). Each body but the first
bends and twists against the previous one through the quaternion of its own ball (or
free) joint: a torque -k (omega - omega0) / L on the pair, with omega the rotation
vector of the body's joint frame, omega0 its value at qpos0 (zero with
``flat="true"``), L the distance of the two bodies at qpos0, and k = (G J, E Iy, E Iz)
from the body's first geom (a circle's torsion constant and second moments of area for
a capsule or cylinder, a rectangle's for a box; other shapes: no stiffness).

Config: twist (G, shear modulus), bend (E, Young's modulus), flat ("true": the
reference shape is straight), vmax (stress colour scale of MuJoCo's visualisation,
not used by the forces). All of it is fixed when the model is made, as MuJoCo's
plugin fixes it when its mjData is made.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..kernels.consts import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER
from ..kernels.plugin_cable import (CABLE_NEXT, CABLE_PREV, CABLE_STIFF, cable_apply,
                                    cable_torque)
from . import PASSIVE, Instance, Plugin, launch

# what C's strtod reads as a whole number (decimal, hexadecimal, inf, nan)
_C_NUMBER = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
    r"|(?i:inf(?:inity)?|nan(?:\([0-9a-zA-Z_]*\))?))")


def _whole_number(text: str) -> bool:
    """CheckAttr: the text, blanks removed, is one number to its end (or empty)."""
    s = "".join(text.split())
    return s == "" or _C_NUMBER.fullmatch(s) is not None


def _number(inst: Instance, key: str) -> float:
    """strtod of the attribute (0 when absent or empty)."""
    text = "".join((inst.config.get(key) or "").split())
    if text.lower().lstrip("+-").startswith("0x"):
        sign = -1.0 if text.startswith("-") else 1.0
        body = text.lstrip("+-")
        return sign * float.fromhex(body if "p" in body.lower() else body + "p0")
    return inst.value(key) or 0.0


def _bodies(arrays, instance: Instance):
    """(first body, number of bodies) of the instance, or an error message when they
    are not consecutive (MuJoCo's mju_error in the plugin)."""
    bodies = sorted(instance.bodies)
    if not bodies:
        return 0, 0, None
    i0, n = bodies[0], len(bodies)
    if bodies != list(range(i0, i0 + n)):
        return i0, n, "This body does not have the requested plugin instance"
    for i in bodies[1:]:
        # (MuJoCo reads the quaternion of a joint the body does not have)
        if int(np.asarray(arrays.body_jntnum)[i]) == 0:
            return i0, n, f"cable body {i} has no joint to bend with"
    return i0, n, None


def _quat2vel(q):
    """mju_quat2Vel with dt = 1, on Python floats."""
    axis = [q[1], q[2], q[3]]
    norm = math.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    if norm < 1e-15:
        axis = [1.0, 0.0, 0.0]
    else:
        axis = [x / norm for x in axis]
    speed = 2 * math.atan2(norm, q[0])
    if speed > math.pi:
        speed -= 2 * math.pi
    return [x * speed for x in axis]


def _sub_quat(qa, qb):
    """mju_subQuat: the rotation vector from qb to qa."""
    n = [qb[0], -qb[1], -qb[2], -qb[3]]
    d = [n[0] * qa[0] - n[1] * qa[1] - n[2] * qa[2] - n[3] * qa[3],
         n[0] * qa[1] + n[1] * qa[0] + n[2] * qa[3] - n[3] * qa[2],
         n[0] * qa[2] - n[1] * qa[3] + n[2] * qa[0] + n[3] * qa[1],
         n[0] * qa[3] + n[1] * qa[2] - n[2] * qa[1] + n[3] * qa[0]]
    return _quat2vel(d)


def _section(gtype: int, size) -> tuple:
    """(torsion constant J, second moments Iy, Iz) of the geom's cross-section."""
    if gtype in (GEOM_CYLINDER, GEOM_CAPSULE):
        r4 = math.pow(size[0], 4)
        return math.pi * r4 / 2, math.pi * r4 / 4., math.pi * r4 / 4.
    if gtype == GEOM_BOX:
        h, w = size[1], size[2]
        a, b = max(h, w), min(h, w)
        j = a * math.pow(b, 3) * (16. / 3. - 3.36 * b / a *
                                  (1 - math.pow(b, 4) / math.pow(a, 4) / 12))
        return j, math.pow(2 * w, 3) * 2 * h / 12., math.pow(2 * h, 3) * 2 * w / 12.
    return 0.0, 0.0, 0.0


class Cable(Plugin):
    """Cable bending and twisting (mujoco.elasticity.cable)."""

    replayable = True  # its hook only launches kernels (tiphys/replay.py)
    name = "mujoco.elasticity.cable"
    capabilities = PASSIVE
    attributes = ("twist", "bend", "flat", "vmax")

    @classmethod
    def check(cls, arrays, instance: Instance):
        """Cable::Create's validation, with its message."""
        if not (_whole_number(instance.config.get("twist") or "") and
                _whole_number(instance.config.get("bend") or "")):
            return "Invalid parameter specification in cable plugin"
        return _bodies(arrays, instance)[2]

    def __init__(self, m, instances: list):
        super().__init__(m, instances)
        a = m.arrays
        from ..compiler.tendon import HostKinematics
        qpos0 = np.asarray(a.qpos0, dtype=np.float64)
        qpos0 = qpos0.reshape(-1, qpos0.shape[-1])[0]
        body_quat = np.asarray(a.body_quat, dtype=np.float64).reshape(-1, 4)[:len(
            a.body_parentid)]
        geom_size = np.asarray(a.geom_size, dtype=np.float64).reshape(-1, 3)
        xpos = HostKinematics(a, qpos0).xpos
        bodyids, flags, prm, qadr = [], [], [], []
        for inst in instances:
            i0, n, _ = _bodies(a, inst)
            twist, bend = _number(inst, "twist"), _number(inst, "bend")
            flat = inst.config.get("flat", "") == "true"
            for b in range(n):
                i = i0 + b
                has_prev, has_next = b > 0, b < n - 1
                adr = -1
                if int(a.body_jntnum[i]) > 0:
                    adr = int(a.jnt_qposadr[int(a.body_jntadr[i])]) + \
                        int(a.body_dofnum[i]) - 3
                omega0 = [0.0, 0.0, 0.0]
                if has_prev and not flat:
                    omega0 = _sub_quat(body_quat[i].tolist(), qpos0[adr:adr + 4].tolist())
                j = iy = iz = 0.0
                geomid = int(a.body_geomadr[i])
                if geomid >= 0:
                    j, iy, iz = _section(int(a.geom_type[geomid]), geom_size[geomid])
                k = [j * twist, iy * bend, iz * bend]
                length = float(np.sqrt(np.sum((xpos[i] - xpos[i - 1]) ** 2))) \
                    if has_prev else 0.0
                bodyids.append(i)
                flags.append((CABLE_PREV if has_prev else 0) | (CABLE_NEXT if has_next else 0)
                             | (CABLE_STIFF if any(k) else 0))
                prm.append(k + [length] + omega0)
                qadr.append(adr)
        nbody = len(a.body_parentid)
        body_cable = np.full(nbody, -1, dtype=np.int32)
        body_cable[bodyids] = np.arange(len(bodyids), dtype=np.int32)
        self.ncable = len(bodyids)
        self.host_arrays = {
            "cable_body": np.array(bodyids, dtype=np.int32),
            "cable_flags": np.array(flags, dtype=np.int32),
            "cable_prm": np.array(prm, dtype=np.float64).reshape(-1, 7),
            "cable_qadr": np.array(qadr, dtype=np.int32),
            "body_cable": body_cable,
        }

    def _torque(self, d):
        """The per-body torque buffer (nworld, ncable, 3) of Data ``d`` (made once)."""
        cache = d.__dict__.setdefault("_tiphys_plugin_arrays", {})
        key = (id(self), "torque")
        arr = cache.get(key)
        if arr is None or arr[0] is not self:
            import taichi as ti

            from ..backend import float_dtype
            from ..kernels.config import tag_worlds
            buf = ti.Vector.ndarray(3, float_dtype(), (d.nworld, max(1, self.ncable)))
            arr = cache[key] = (self, tag_worlds(buf, d.serial_load))
        return arr[1]

    def passive(self, m, d) -> None:
        """Reads qpos, xquat, cdof; adds the cables' torques to qfrc_passive."""
        if not self.ncable:
            return
        arrays = self.device(d)
        torque = self._torque(d)
        launch(cable_torque, m, d, ncable=self.ncable, cable_torque_out=torque,
               cable_body=arrays["cable_body"], cable_flags=arrays["cable_flags"],
               cable_prm=arrays["cable_prm"], cable_qadr=arrays["cable_qadr"])
        launch(cable_apply, m, d, cable_torque_in=torque, body_cable=arrays["body_cable"])
