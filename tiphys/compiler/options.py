"""<option>/<flag>, <size>, <statistic> and <visual>."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..kernels.consts import (CONE_ELLIPTIC, CONE_PYRAMIDAL, INT_EULER, INT_IMPLICIT,
                              INT_IMPLICITFAST, INT_RK4, JAC_AUTO, JAC_DENSE, JAC_SPARSE, SOL_CG,
                              SOL_NEWTON, SOL_PGS)
from .attrs import Attrs

# MJCF <flag> attributes in mjtDisableBit / mjtEnableBit order (bit i is 1 << i)
DISABLE_FLAGS = ("constraint", "equality", "frictionloss", "limit", "contact", "spring",
                 "damper", "gravity", "clampctrl", "warmstart", "filterparent", "actuation",
                 "refsafe", "sensor", "midphase", "eulerdamp", "autoreset", "nativeccd",
                 "island")
ENABLE_FLAGS = ("override", "energy", "fwdinv", "invdiscrete", "multiccd", "sleep")
# MJCF keywords -> mjtIntegrator, mjtCone, mjtJacobian, mjtSolver
INTEGRATORS = {"Euler": INT_EULER, "RK4": INT_RK4, "implicit": INT_IMPLICIT,
               "implicitfast": INT_IMPLICITFAST}
CONES = {"pyramidal": CONE_PYRAMIDAL, "elliptic": CONE_ELLIPTIC}
JACOBIANS = {"dense": JAC_DENSE, "sparse": JAC_SPARSE, "auto": JAC_AUTO}
SOLVERS = {"PGS": SOL_PGS, "CG": SOL_CG, "Newton": SOL_NEWTON}
ENABLE_DISABLE = {"disable": 0, "enable": 1}


@dataclass(frozen=True)
class Option:
    """mjOption: physics options. Frozen: discrete values drive kernel specialisation."""

    timestep: float = 0.002
    impratio: float = 1.0
    tolerance: float = 1e-8
    ls_tolerance: float = 0.01
    noslip_tolerance: float = 1e-6
    ccd_tolerance: float = 1e-6
    sleep_tolerance: float = 1e-4
    gravity: tuple = (0.0, 0.0, -9.81)
    wind: tuple = (0.0, 0.0, 0.0)
    magnetic: tuple = (0.0, -0.5, 0.0)
    density: float = 0.0
    viscosity: float = 0.0
    o_margin: float = 0.0
    o_solref: tuple = (0.02, 1.0)
    o_solimp: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    o_friction: tuple = (1.0, 1.0, 0.005, 0.0001, 0.0001)
    integrator: int = INT_EULER
    cone: int = CONE_PYRAMIDAL
    jacobian: int = JAC_AUTO
    solver: int = SOL_NEWTON
    iterations: int = 100
    ls_iterations: int = 50
    noslip_iterations: int = 0
    ccd_iterations: int = 35
    sdf_iterations: int = 10
    sdf_initpoints: int = 40
    disableflags: int = 0
    enableflags: int = 0
    disableactuator: int = 0

    def disabled(self, flag: str) -> bool:
        return bool(self.disableflags & (1 << DISABLE_FLAGS.index(flag)))

    def enabled(self, flag: str) -> bool:
        return bool(self.enableflags & (1 << ENABLE_FLAGS.index(flag)))


_VEC = {"gravity": 3, "wind": 3, "magnetic": 3, "o_solref": 2, "o_solimp": 5,
        "o_friction": 5}
_KEYWORDS = {"integrator": INTEGRATORS, "cone": CONES, "jacobian": JACOBIANS,
             "solver": SOLVERS}
_INTS = ("iterations", "ls_iterations", "noslip_iterations", "ccd_iterations",
         "sdf_iterations", "sdf_initpoints")


_FLAG_FIELDS = ("disableflags", "enableflags", "disableactuator")


def set_option(opt: Option, name: str, value) -> Option:
    """``opt`` with field ``name`` set to ``value``, checked as the XML reader checks
    it: vectors of the field's length, non-negative ints, keywords (``"RK4"``,
    ``"elliptic"``, ...) or their mjt enum values, numbers elsewhere."""
    names = [f.name for f in fields(Option)]
    if name not in names:
        raise AttributeError(f"opt has no field {name!r}; the fields are {', '.join(names)}")

    def bad(what):
        return ValueError(f"opt.{name}: {what}, got {value!r}")

    if name in _VEC:
        try:
            v = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise bad(f"expected {_VEC[name]} numbers") from None
        if v.size != _VEC[name]:
            raise bad(f"expected {_VEC[name]} numbers")
        new = tuple(float(x) for x in v)
    elif name in _KEYWORDS:
        table = _KEYWORDS[name]
        if isinstance(value, str):
            if value not in table:
                raise bad(f"expected one of {', '.join(table)}")
            new = table[value]
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
                and int(value) in table.values():
            new = int(value)
        else:
            raise bad(f"expected one of {', '.join(table)} (or its value "
                      f"{', '.join(str(v) for v in table.values())})")
    elif name in _INTS or name in _FLAG_FIELDS:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise bad("expected a non-negative integer")
        new = int(value)
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise bad("expected a number")
        new = float(value)
    return replace(opt, **{name: new})


_OPTION_FIELDS = tuple((f.name, f.default) for f in fields(Option))


def read_option(spec) -> Option:
    values = {}
    for el in spec.sections("option"):
        a = Attrs(el)
        given = a._vals  # (the attributes written: most options are not)
        for name, default in _OPTION_FIELDS:
            if name not in given or given[name] is None or \
                    name in ("disableflags", "enableflags", "disableactuator"):
                continue
            if name in _VEC:
                exact = name not in ("o_solref", "o_solimp", "o_friction")
                base = values.get(name, default)
                values[name] = tuple(a.floats(name, _VEC[name], base, exact=exact))
            elif name in _KEYWORDS:
                values[name] = a.keyword(name, _KEYWORDS[name])
            elif name in _INTS:
                v = a.int(name)
                if v < 0:
                    raise a.error("must be non-negative", name)
                values[name] = v
            else:
                v = a.float(name)
                if v is not None:  # empty text: MuJoCo keeps the default
                    values[name] = v
        groups = a.ints("actuatorgroupdisable")
        if groups is not None:
            mask = 0
            for g in groups:
                if not 0 <= g <= 30:
                    raise a.error("actuator group must be in [0, 30]", "actuatorgroupdisable")
                mask |= 1 << int(g)
            values["disableactuator"] = mask
        for flag_el in el.find("flag"):
            fa = Attrs(flag_el)
            dis = values.get("disableflags", 0)
            ena = values.get("enableflags", 0)
            for i, name in enumerate(DISABLE_FLAGS):
                v = fa.keyword(name, ENABLE_DISABLE)
                if v is not None:
                    dis = (dis & ~(1 << i)) if v else (dis | (1 << i))
            for i, name in enumerate(ENABLE_FLAGS):
                v = fa.keyword(name, ENABLE_DISABLE)
                if v is not None:
                    ena = (ena | (1 << i)) if v else (ena & ~(1 << i))
            values["disableflags"], values["enableflags"] = dis, ena
    return Option(**values)


_SIZE_INT = ("njmax", "nconmax", "nstack", "nuserdata", "nkey", "nuser_body", "nuser_jnt",
             "nuser_geom", "nuser_site", "nuser_cam", "nuser_tendon", "nuser_actuator",
             "nuser_sensor")


def read_size(spec) -> dict:
    out = {"nuserdata": 0, "nkey": 0, "njmax": -1, "nconmax": -1, "memory": -1}
    for el in spec.sections("size"):
        a = Attrs(el)
        for name in _SIZE_INT:
            v = a.int(name)
            if v is not None:
                if v < -1:
                    raise a.error("must be -1 or non-negative", name)
                out[name] = v
        mem = a.str("memory")
        if mem is not None:
            out["memory"] = _parse_memory(a, mem)
    return out


def _parse_memory(a, text: str) -> int:
    t = text.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50,
            "E": 1 << 60}
    scale = 1
    if t and t[-1].upper() in mult:
        scale = mult[t[-1].upper()]
        t = t[:-1]
    try:
        value = int(t)
    except ValueError:
        raise a.error(f"invalid memory size '{text}'", "memory") from None
    if value < 0:
        raise a.error("memory must be non-negative", "memory")
    return value * scale


@dataclass
class Statistic:
    """mjStatistic; user-given values (NaN where the compiler computes them)."""

    meaninertia: float = float("nan")
    meanmass: float = float("nan")
    meansize: float = float("nan")
    extent: float = float("nan")
    center: np.ndarray = field(default_factory=lambda: np.full(3, np.nan))


def read_statistic(spec) -> Statistic:
    st = Statistic()
    for el in spec.sections("statistic"):
        a = Attrs(el)
        for name in ("meaninertia", "meanmass", "meansize", "extent"):
            v = a.float(name)
            if v is not None:
                if v <= 0:
                    raise a.error("must be positive", name)
                setattr(st, name, v)
        c = a.floats("center", 3)
        if c is not None:
            st.center = c
    return st


# <visual> defaults for the attributes the engine reads; the rest is kept as text.
_VISUAL_DEFAULTS = {
    "global": {"fovy": 45.0, "ipd": 0.068, "azimuth": 90.0, "elevation": -45.0,
               "linewidth": 1.0, "glow": 0.3, "offwidth": 640, "offheight": 480,
               "realtime": 1.0, "orthographic": 0},
    "quality": {"shadowsize": 4096, "offsamples": 4, "numslices": 28, "numstacks": 16,
                "numquads": 4},
    "headlight": {"ambient": (0.1, 0.1, 0.1), "diffuse": (0.4, 0.4, 0.4),
                  "specular": (0.5, 0.5, 0.5), "active": 1},
    "map": {"stiffness": 100.0, "stiffnessrot": 500.0, "force": 0.005, "torque": 0.1,
            "alpha": 0.3, "fogstart": 3.0, "fogend": 10.0, "znear": 0.01, "zfar": 50.0,
            "haze": 0.3, "shadowclip": 1.0, "shadowscale": 0.6, "actuatortendon": 2.0},
    "scale": {},
    "rgba": {"fog": (0.0, 0.0, 0.0, 1.0), "haze": (1.0, 1.0, 1.0, 1.0)},
}


# the non-float <visual> attributes, as mjXReader::Visual reads them (the same name may
# have another type elsewhere: <global bvactive> is a keyword, <rgba bvactive> a colour;
# <headlight active> is an integer, not a keyword)
_VISUAL_TYPES = {
    ("global", "cameraid"): "int", ("global", "orthographic"): "bool",
    ("global", "offwidth"): "int", ("global", "offheight"): "int",
    ("global", "ellipsoidinertia"): "bool", ("global", "bvactive"): "bool",
    ("quality", "shadowsize"): "int", ("quality", "offsamples"): "int",
    ("quality", "numslices"): "int", ("quality", "numstacks"): "int",
    ("quality", "numquads"): "int", ("headlight", "active"): "int",
}


def read_visual(spec) -> dict:
    """<visual> as nested dicts: numbers parsed where the default is numeric."""
    vis = {k: dict(v) for k, v in _VISUAL_DEFAULTS.items()}
    for section in spec.sections("visual"):
        for el in section.children:
            a = Attrs(el)
            table = vis.setdefault(el.tag, {})
            for name, text in el.items():
                kind = _VISUAL_TYPES.get((el.tag, name))
                if kind == "bool":
                    table[name] = a.bool(name)
                elif kind == "int":
                    table[name] = a.int(name)
                else:
                    n = 4 if el.tag == "rgba" else 3 if el.tag == "headlight" else 1
                    v = a.floats(name, n)
                    if v is None:  # empty text: MuJoCo keeps the default
                        continue
                    table[name] = float(v[0]) if n == 1 else tuple(float(x) for x in v)
    return vis
