"""<sensor> section: sensor_* fields and sensordata layout as MuJoCo 3.4.0 compiles them."""
from __future__ import annotations

import numpy as np


def compile_sensors(spec, defaults, builder, out, size) -> None:
    """Fill the sensor_* arrays of ``out`` (models without sensors for now)."""
    nuser = max(size.get("nuser_sensor", -1), 0)
    n = 0
    for name in ("type", "datatype", "needstage", "objtype", "objid", "reftype", "refid",
                 "dim", "adr", "plugin"):
        setattr(out, "sensor_" + name, np.zeros(n, dtype=np.int32))
    out.sensor_intprm = np.zeros((n, 3), dtype=np.int32)
    out.sensor_cutoff = np.zeros(n)
    out.sensor_noise = np.zeros(n)
    out.sensor_user = np.zeros((n, nuser))
    from .compile import _setsize
    _setsize(out, nsensor=n, nsensordata=0, nuser_sensor=nuser)
