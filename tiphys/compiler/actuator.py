"""<actuator>: <general> and its shortcuts, transmissions, and actuator constants.

MuJoCo keeps ONE actuator default per class: every actuator element inside a
<default> (general, motor, position, ...) is applied, in document order, to that one
default actuator, the shortcut setting its fields exactly as it would on a real
actuator. A real actuator starts from a copy of its class's default and applies its
own element the same way. :class:`ActState` is that object (mjsActuator) and
:func:`apply_element` is MuJoCo's OneActuator + mjs_setTo*.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from types import SimpleNamespace

import numpy as np

from ..errors import error_at
from ..kernels.consts import (BIAS_AFFINE, BIAS_MUSCLE, BIAS_NONE, BIAS_USER, DYN_FILTER,
                              DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_MUSCLE, DYN_NONE, DYN_USER,
                              GAIN_AFFINE, GAIN_FIXED, GAIN_MUSCLE, GAIN_USER, JNT_HINGE,
                              JNT_SLIDE, LIMITED_AUTO, LIMITED_TRUE, LRMODE_ALL, LRMODE_MUSCLE,
                              LRMODE_MUSCLEUSER, LRMODE_NONE, MINVAL, NBIAS, NDYN, NGAIN, TRN_BODY,
                              TRN_JOINT, TRN_JOINTINPARENT, TRN_SITE, TRN_SLIDERCRANK, TRN_TENDON,
                              TRN_UNDEFINED)
from .attach import element_ctx
from .attrs import BOOL, LIMITED, Attrs, parse_floats
from .empty import replay_empty

# MJCF keywords -> mjtDyn, mjtGain, mjtBias, mjtLRMode
DYN = {"none": DYN_NONE, "integrator": DYN_INTEGRATOR, "filter": DYN_FILTER,
       "filterexact": DYN_FILTEREXACT, "muscle": DYN_MUSCLE, "user": DYN_USER}
GAIN = {"fixed": GAIN_FIXED, "affine": GAIN_AFFINE, "muscle": GAIN_MUSCLE, "user": GAIN_USER}
BIAS = {"none": BIAS_NONE, "affine": BIAS_AFFINE, "muscle": BIAS_MUSCLE, "user": BIAS_USER}
LRMODE = {"none": LRMODE_NONE, "muscle": LRMODE_MUSCLE, "muscleuser": LRMODE_MUSCLEUSER,
          "all": LRMODE_ALL}
ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "damper", "intvelocity",
                 "cylinder", "muscle", "adhesion")
_TARGETS = (("joint", TRN_JOINT), ("jointinparent", TRN_JOINTINPARENT),
            ("tendon", TRN_TENDON), ("cranksite", TRN_SLIDERCRANK), ("site", TRN_SITE),
            ("body", TRN_BODY))


def _vec(n, *head):
    v = np.zeros(n)
    v[:len(head)] = head
    return v


@dataclass
class ActState:
    """mjsActuator: the fields an actuator element (or a default) writes."""
    el: object = None
    name: str = ""
    group: int = 0
    ctrllimited: int = LIMITED_AUTO
    forcelimited: int = LIMITED_AUTO
    actlimited: int = LIMITED_AUTO
    ctrlrange: np.ndarray = field(default_factory=lambda: np.zeros(2))
    forcerange: np.ndarray = field(default_factory=lambda: np.zeros(2))
    actrange: np.ndarray = field(default_factory=lambda: np.zeros(2))
    lengthrange: np.ndarray = field(default_factory=lambda: np.zeros(2))
    gear: np.ndarray = field(default_factory=lambda: _vec(6, 1))
    cranklength: float = 0.0
    trntype: int = TRN_UNDEFINED
    target: str = ""
    slidersite: str = ""
    refsite: str = ""
    dyntype: int = DYN_NONE
    gaintype: int = GAIN_FIXED
    biastype: int = BIAS_NONE
    actearly: int = 0
    dynprm: np.ndarray = field(default_factory=lambda: _vec(NDYN, 1))
    gainprm: np.ndarray = field(default_factory=lambda: _vec(NGAIN, 1))
    biasprm: np.ndarray = field(default_factory=lambda: _vec(NBIAS))
    actdim: int = -1
    inheritrange: float = 0.0
    user: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # <actuator><plugin>: the plugin's name and the instance's ("" when not given)
    plugin: bool = False
    plugin_name: str = ""
    plugin_instance: str = ""
    # compiled
    trnid: tuple = (-1, -1)
    is_ctrllimited: bool = False
    is_forcelimited: bool = False
    is_actlimited: bool = False

    def copy(self) -> "ActState":
        """A copy with its own arrays (the other fields are immutable values).

        apply_element changes the arrays of the state it is given in place: every
        state it is given is a copy (or a class's own default), never shared."""
        new = object.__new__(ActState)  # (copy.copy's reduce protocol is slow here)
        d = new.__dict__
        d.update(self.__dict__)
        for k in _ACT_ARRAYS:
            v = d[k]
            if type(v) is np.ndarray:
                d[k] = v.copy()
        return new


# the fields of ActState that hold arrays (those made by a default factory; no other
# field is ever given one)
_ACT_ARRAYS = tuple(f.name for f in fields(ActState) if f.default_factory is not MISSING)


def _read_values(a: Attrs, name, n, exact=True):
    """MuJoCo's ReadAttr: None when absent; too many values is an error; exact: n.
    ``a`` holds the element's own attributes only (no default class)."""
    text = a.text(name)
    if text is None:
        return None
    vals = parse_floats(a.el, name, text)
    if not vals:
        return None
    if exact and len(vals) < n:
        raise a.error(f"attribute '{name}' does not have enough data", name)
    if len(vals) > n:
        raise a.error(f"attribute '{name}' has too much data", name)
    return vals


def _read(a: Attrs, name, n, exact=True):
    vals = _read_values(a, name, n, exact)
    return None if vals is None else np.array(vals, dtype=np.float64)


def _read1(a: Attrs, name):
    vals = _read_values(a, name, 1)
    return None if vals is None else vals[0]


def apply_element(el, st: ActState) -> None:
    """OneActuator: apply one actuator element (real or in a default) to ``st``."""
    a = Attrs(el)
    tag = el.tag
    if "name" in el._fields_of and el.attr("name") is not None:
        st.name = el.attr("name")
    g = a.int("group")
    if g is not None:
        st.group = g
    for k in ("ctrllimited", "forcelimited", "actlimited"):
        if k in el._fields_of:
            v = a.keyword(k, LIMITED)
            if v is not None:
                setattr(st, k, v)
    for k in ("ctrlrange", "forcerange", "actrange", "lengthrange"):
        v = _read(a, k, 2)
        if v is not None:
            setattr(st, k, v)
    v = _read(a, "gear", 6, exact=False)
    if v is not None:
        st.gear[:len(v)] = v
    cnt = 0
    for attr, trn in _TARGETS:
        if el.get_attr(attr) is not None:
            st.target = el.attr(attr)
            st.trntype = trn
            cnt += 1
    if cnt > 1:
        raise a.error("actuator can have at most one of transmission target")
    r1 = _read1(a, "cranklength")
    if r1 is not None:
        st.cranklength = r1
    r2 = a.str("slidersite") if "slidersite" in el._fields_of else None
    if r2 is not None:
        st.slidersite = r2
    if (r1 is not None or r2 is not None) and st.trntype not in (TRN_SLIDERCRANK,
                                                                 TRN_UNDEFINED):
        raise a.error("cranklength and slidersite can only be used in slidercrank "
                      "transmission", "cranklength" if r1 is not None else "slidersite")
    r3 = a.str("refsite") if "refsite" in el._fields_of else None
    if r3 is not None:
        st.refsite = r3
        if st.trntype not in (TRN_SITE, TRN_UNDEFINED):
            raise a.error("refsite can only be used with site transmission", "refsite")

    err = None
    if tag == "plugin":  # OneActuator's plugin branch (the rest as every actuator)
        st.plugin = True
        st.plugin_name = el.attr("plugin") or ""
        st.plugin_instance = el.attr("instance") or ""
        v = a.keyword("dyntype", DYN)
        if v is not None:
            st.dyntype = v
        v = a.keyword("actearly", BOOL)
        if v is not None:
            st.actearly = v
        v = _read(a, "dynprm", NDYN, exact=False)
        if v is not None:
            st.dynprm[:len(v)] = v
        v = a.int("actdim")
        if v is not None:
            st.actdim = v
    elif tag == "general":
        for k, table in (("dyntype", DYN), ("gaintype", GAIN), ("biastype", BIAS)):
            v = a.keyword(k, table)
            if v is not None:
                setattr(st, k, v)
        v = a.keyword("actearly", BOOL)
        if v is not None:
            st.actearly = v
        for k, n in (("dynprm", NDYN), ("gainprm", NGAIN), ("biasprm", NBIAS)):
            v = _read(a, k, n, exact=False)
            if v is not None:
                getattr(st, k)[:len(v)] = v
        v = a.int("actdim")
        if v is not None:
            st.actdim = v
    elif tag == "motor":
        st.gainprm[0] = 1
        st.dyntype, st.gaintype, st.biastype = DYN_NONE, GAIN_FIXED, BIAS_NONE
    elif tag in ("position", "intvelocity"):
        kp = _read1(a, "kp")
        kp = st.gainprm[0] if kp is None else kp
        kv = _read1(a, "kv")
        dampratio = _read1(a, "dampratio")
        timeconst = _read1(a, "timeconst") if tag == "position" else None
        ir = _read1(a, "inheritrange")
        inheritrange = st.inheritrange if ir is None else ir
        err = _set_position(st, kp, kv, dampratio, timeconst, inheritrange)
        if err is None and tag == "intvelocity":
            st.dyntype = DYN_INTEGRATOR
            st.actlimited = LIMITED_TRUE
            if inheritrange > 0 and (st.actrange[0] or st.actrange[1]):
                err = ("actrange and inheritrange cannot both be defined", "inheritrange")
    elif tag == "velocity":
        kv = _read1(a, "kv")
        kv = st.gainprm[0] if kv is None else kv
        st.biasprm[:] = 0
        st.gainprm[0] = kv
        st.biasprm[2] = -kv
        st.dyntype, st.gaintype, st.biastype = DYN_NONE, GAIN_FIXED, BIAS_AFFINE
    elif tag == "damper":
        kv = _read1(a, "kv")
        kv = 0.0 if kv is None else kv
        st.gainprm[:] = 0
        st.gainprm[2] = -kv
        st.ctrllimited = LIMITED_TRUE
        st.dyntype, st.gaintype, st.biastype = DYN_NONE, GAIN_AFFINE, BIAS_NONE
        if kv < 0:
            err = ("damping coefficient cannot be negative", "kv")
        elif st.ctrlrange[0] < 0 or st.ctrlrange[1] < 0:
            err = ("damper control range cannot be negative", "ctrlrange")
    elif tag == "cylinder":
        timeconst = _read1(a, "timeconst")
        bias = _read(a, "bias", 3)
        area = _read1(a, "area")
        diameter = _read1(a, "diameter")
        st.dynprm[0] = st.dynprm[0] if timeconst is None else timeconst
        if bias is not None:
            st.biasprm[0] = bias[0]
        st.gainprm[0] = st.gainprm[0] if area is None else area
        if diameter is not None and diameter >= 0:
            st.gainprm[0] = math.pi / 4 * diameter * diameter
        st.dyntype, st.gaintype, st.biastype = DYN_FILTER, GAIN_FIXED, BIAS_AFFINE
    elif tag == "muscle":
        _set_muscle(st, a)
    elif tag == "adhesion":
        gain = _read1(a, "gain")
        gain = st.gainprm[0] if gain is None else gain
        st.gainprm[0] = gain
        st.ctrllimited = LIMITED_TRUE
        st.gaintype, st.biastype = GAIN_FIXED, BIAS_NONE
        if gain < 0:
            err = ("adhesion gain cannot be negative", "gain")
        elif st.ctrlrange[0] < 0 or st.ctrlrange[1] < 0:
            err = ("adhesion control range cannot be negative", "ctrlrange")
    if err is not None:
        raise a.error(err[0], err[1])
    user = a.floats("user", finite=False) if "user" in el._fields_of else None
    if user is not None:
        st.user = user


def _set_position(st, kp, kv, dampratio, timeconst, inheritrange):
    st.gainprm[0] = kp
    st.biasprm[1] = -kp
    if dampratio is not None and kv is not None:
        return ("kv and dampratio cannot both be defined", "dampratio")
    if kv is not None:
        if kv < 0:
            return ("kv cannot be negative", "kv")
        st.biasprm[2] = -kv
    if dampratio is not None:
        if dampratio < 0:
            return ("dampratio cannot be negative", "dampratio")
        st.biasprm[2] = dampratio
    if timeconst is not None:
        if timeconst < 0:
            return ("timeconst cannot be negative", "timeconst")
        st.dynprm[0] = timeconst
        st.dyntype = DYN_NONE if timeconst == 0 else DYN_FILTEREXACT
    st.inheritrange = inheritrange
    if inheritrange > 0 and (st.ctrlrange[0] or st.ctrlrange[1]):
        return ("ctrlrange and inheritrange cannot both be defined", "inheritrange")
    st.gaintype, st.biastype = GAIN_FIXED, BIAS_AFFINE
    return None


def _set_muscle(st, a):
    tausmooth = _read1(a, "tausmooth")
    tausmooth = st.dynprm[2] if tausmooth is None else tausmooth
    tc = _read(a, "timeconst", 2)
    tc = np.array([-1.0, -1.0]) if tc is None else tc
    rng = _read(a, "range", 2)
    rng = np.array([-1.0, -1.0]) if rng is None else rng
    vals = {}
    for k in ("force", "scale", "lmin", "lmax", "vmax", "fpmax", "fvmax"):
        v = _read1(a, k)
        vals[k] = -1.0 if v is None else v
    d, g = st.dynprm, st.gainprm
    if d[0] == 1:
        d[0] = 0.01
    if d[1] == 0:
        d[1] = 0.04
    for i, (old, new) in enumerate(((1, 0.75), (0, 1.05), (0, -1), (0, 200), (0, 0.5),
                                    (0, 1.6), (0, 1.5), (0, 1.3), (0, 1.2))):
        if g[i] == old:
            g[i] = new
    if tausmooth < 0:
        raise a.error("muscle tausmooth cannot be negative", "tausmooth")
    d[2] = tausmooth
    if tc[0] >= 0:
        d[0] = tc[0]
    if tc[1] >= 0:
        d[1] = tc[1]
    if rng[0] >= 0:
        g[0] = rng[0]
    if rng[1] >= 0:
        g[1] = rng[1]
    for i, k in enumerate(("force", "scale", "lmin", "lmax", "vmax", "fpmax", "fvmax")):
        if vals[k] >= 0:
            g[2 + i] = vals[k]
    st.biasprm[:9] = g[:9]
    st.dyntype, st.gaintype, st.biastype = DYN_MUSCLE, GAIN_MUSCLE, BIAS_MUSCLE


def default_actuators(spec) -> dict:
    """Class name -> the class's one default actuator (ActState)."""
    out = {}

    def walk(section, name, parent):
        if parent is not None:
            st = out[parent].copy()
        else:  # several top-level <default> sections all extend the one main class
            st = out.get("main") or ActState()
        for child in section.children:
            if child.tag in ACTUATOR_TAGS:
                apply_element(child, st)
        st.name = ""
        out[name] = st
        for sub in section.find("default"):
            walk(sub, sub.attr("class"), name)

    for section in spec.root.find("default"):
        walk(section, "main", None)
    if "main" not in out:
        out["main"] = ActState()
    # classes of <attach>ed models (attach.py), prefixed names
    for name, st in getattr(spec, "attached_actuator_defaults", {}).items():
        if name not in out:
            out[name] = st.copy()
    return out


def compile_actuators(spec, builder, tendons, ctx, nuser_actuator):
    """Parse and check every actuator; returns the list of ActState objects."""
    defaults = default_actuators(spec)
    bodies = builder.bodies
    joints = {j.name: j for b in bodies for j in b.joints if j.name}
    sites = {s.name: s for b in bodies for s in b.sites if s.name}
    bodymap = {b.name: b for b in bodies if b.name}
    tenmap = {t.name: t for t in tendons if t.name}
    acts = []
    for section in spec.sections("actuator"):
        for el in section.children:
            cls = el.attr("class") or "main"
            if cls not in defaults:
                raise error_at(el, f"unknown default class '{cls}'", "class")
            st = defaults[cls].copy()
            st.el = el
            st.name = ""
            apply_element(el, st)
            _compile_one(st, len(acts), ctx, joints, sites, bodymap, tenmap, nuser_actuator)
            acts.append(st)
    return acts


def _target_attr(st):
    for attr, trn in _TARGETS:
        if trn == st.trntype:
            return attr
    return None


def _compile_one(st, i, ctx, joints, sites, bodies, tendons, nuser):
    el = st.el
    ctx = element_ctx(el, ctx)
    a = Attrs(el)
    if nuser >= 0 and len(st.user) > nuser:
        raise a.error(f"user has more values than nuser_actuator in actuator '{st.name}' "
                      f"(id = {i})", "user")
    if not st.target:
        raise a.error("missing transmission target for actuator")
    attr = _target_attr(st)
    trnid1 = -1
    target = None
    if st.trntype in (TRN_JOINT, TRN_JOINTINPARENT):
        target = joints.get(st.target)
        if target is None:
            raise a.error(f"unknown transmission target '{st.target}' for actuator id = {i}",
                          attr)
    elif st.trntype == TRN_SLIDERCRANK:
        if not st.slidersite:
            raise a.error(f"missing base site for slider-crank '{st.name}' (id = {i})",
                          "slidersite")
        base = sites.get(st.slidersite)
        if base is None:
            raise a.error(f"base site '{st.slidersite}' not found for actuator {i}",
                          "slidersite")
        trnid1 = base.id
        if st.cranklength <= 0:
            raise a.error(f"crank length must be positive in actuator '{st.name}' "
                          f"(id = {i})", "cranklength")
        target = sites.get(st.target)
    elif st.trntype == TRN_TENDON:
        target = tendons.get(st.target)
    elif st.trntype == TRN_SITE:
        if st.refsite:
            ref = sites.get(st.refsite)
            if ref is None:
                raise a.error(f"reference site '{st.refsite}' not found for actuator {i}",
                              "refsite")
            trnid1 = ref.id
        target = sites.get(st.target)
    elif st.trntype == TRN_BODY:
        target = bodies.get(st.target)
    if target is None:
        raise a.error(f"transmission target '{st.target}' not found in actuator {i}", attr)
    st.trnid = (target.id, trnid1)

    if st.gaintype == GAIN_FIXED and st.biastype == BIAS_AFFINE and \
            st.gainprm[0] == -st.biasprm[1] and \
            st.inheritrange > 0:
        if st.dyntype in (DYN_NONE, DYN_FILTEREXACT):
            rattr = "ctrlrange"
        elif st.dyntype == DYN_INTEGRATOR:
            rattr = "actrange"
        else:
            raise a.error("inheritrange only available for position and intvelocity "
                          "actuators", "inheritrange")
        if st.trntype == TRN_JOINT:
            if target.type not in (JNT_SLIDE, JNT_HINGE):
                raise a.error("inheritrange can only be used with hinge and slide joints",
                              "inheritrange")
            trange = target.range
        elif st.trntype == TRN_TENDON:
            trange = target.range
        else:
            raise a.error("inheritrange can only be used with joint and tendon transmission",
                          "inheritrange")
        if trange[0] == trange[1]:
            raise a.error(f"inheritrange used but target '{st.target}' has no range defined "
                          f"in actuator {i}", "inheritrange")
        mean = 0.5 * (trange[1] + trange[0])
        radius = 0.5 * (trange[1] - trange[0]) * st.inheritrange
        setattr(st, rattr, np.array([mean - radius, mean + radius]))

    for kind in ("force", "ctrl", "act"):
        lim = getattr(st, kind + "limited")
        rng = getattr(st, kind + "range")
        if lim == LIMITED_AUTO and not ctx.autolimits and not (rng[0] == 0 and rng[1] == 0):
            raise a.error(f"actuator has `{kind}range` but not `{kind}limited`. set the "
                          f"autolimits=\"true\" compiler option, specify `{kind}limited` "
                          f"explicitly (\"true\" or \"false\"), or remove the `{kind}range` "
                          f"attribute.", kind + "range")
        setattr(st, "is_" + kind + "limited",
                lim == LIMITED_TRUE or (lim == LIMITED_AUTO and rng[0] < rng[1]))
    if st.is_forcelimited and st.forcerange[0] >= st.forcerange[1]:
        raise a.error("invalid force range for actuator", "forcerange")
    if st.is_ctrllimited and st.ctrlrange[0] >= st.ctrlrange[1]:
        raise a.error("invalid control range for actuator", "ctrlrange")
    if st.is_actlimited and st.actrange[0] >= st.actrange[1]:
        raise a.error("invalid actrange for actuator", "actrange")
    if st.is_actlimited and st.dyntype == DYN_NONE:
        raise a.error("actrange specified but dyntype is 'none' in actuator", "actrange")
    if st.plugin:  # a plugin keeps activations of its own (checked by the plugin)
        pass
    elif st.actdim > 1 and st.dyntype != DYN_USER:
        raise a.error("actdim > 1 is only allowed for dyntype 'user' in actuator", "actdim")
    elif st.actdim == 1 and st.dyntype == DYN_NONE:
        raise a.error("invalid actdim 1 in stateless actuator", "actdim")
    elif st.actdim == 0 and st.dyntype != DYN_NONE:
        raise a.error("invalid actdim 0 in stateful actuator", "actdim")
    if st.actdim < 0:
        st.actdim = int(st.dyntype != DYN_NONE)
    for prm, used in ((st.gainprm, st.gaintype == GAIN_MUSCLE),
                      (st.biasprm, st.biastype == BIAS_MUSCLE)):
        if not used:
            continue
        if prm[0] >= prm[1]:
            raise a.error("range[0]<range[1] required in muscle", "range")
        if prm[4] >= 1 or prm[5] <= 1:
            raise a.error("lmin<1<lmax required in muscle")
        if prm[3] <= 0 or prm[6] <= 0 or prm[7] <= 0 or prm[8] <= 0:
            raise a.error(f"positive scale, vmax, fpmax, fvmax required in muscle "
                          f"'{st.name}' (id = {i})")


def fill_actuators(out, acts, nuser):
    if not acts:
        replay_empty(out, ("actuators", nuser), lambda ns: _fill_actuators(ns, [], nuser))
        return 0
    return _fill_actuators(out, acts, nuser)


def _fill_actuators(out, acts, nuser):
    f = np.float64
    n = len(acts)
    out.actuator_trntype = np.array([s.trntype for s in acts], dtype=np.int32)
    out.actuator_dyntype = np.array([s.dyntype for s in acts], dtype=np.int32)
    out.actuator_gaintype = np.array([s.gaintype for s in acts], dtype=np.int32)
    out.actuator_biastype = np.array([s.biastype for s in acts], dtype=np.int32)
    out.actuator_trnid = np.array([s.trnid for s in acts], dtype=np.int32).reshape(n, 2)
    adr, actadr = 0, []
    for s in acts:
        actadr.append(adr if s.actdim else -1)
        adr += s.actdim
    out.actuator_actadr = np.array(actadr, dtype=np.int32)
    out.actuator_actnum = np.array([s.actdim for s in acts], dtype=np.int32)
    out.actuator_group = np.array([s.group for s in acts], dtype=np.int32)
    for k in ("ctrllimited", "forcelimited", "actlimited"):
        setattr(out, "actuator_" + k,
                np.array([getattr(s, "is_" + k) for s in acts], dtype=np.int32))
    out.actuator_actearly = np.array([s.actearly for s in acts], dtype=np.int32)
    for k, m in (("dynprm", NDYN), ("gainprm", NGAIN), ("biasprm", NBIAS), ("ctrlrange", 2),
                 ("forcerange", 2), ("actrange", 2), ("gear", 6), ("lengthrange", 2)):
        setattr(out, "actuator_" + k,
                np.array([getattr(s, k) for s in acts], dtype=f).reshape(n, m))
    out.actuator_cranklength = np.array([s.cranklength for s in acts], dtype=f)
    user = np.zeros((n, nuser))
    for i, s in enumerate(acts):
        user[i, :len(s.user)] = s.user
    out.actuator_user = user
    out.actuator_plugin = np.full(n, -1, dtype=np.int32)  # (compile_plugins sets them)
    out.actuator_plugin_refs = [(s.plugin_name, s.plugin_instance, s.el) if s.plugin
                                else None for s in acts]
    return adr  # na


# ------------------------------------------------------------------------------------
# constants at qpos0: actuator_length0, actuator_acc0, dampratio, lengthrange
# ------------------------------------------------------------------------------------

def _quat2vel(q):
    """mju_quat2Vel with dt = 1: the rotation vector of a unit quaternion."""
    v = np.asarray(q[1:], dtype=np.float64)
    s = np.linalg.norm(v)
    angle = 2 * math.atan2(s, q[0])
    if angle > math.pi:
        angle -= 2 * math.pi
    return v / s * angle if s > 0 else np.zeros(3)


def _quat_neg(q):
    return np.array([q[0], -q[1], -q[2], -q[3]])


def transmission(a, k, ten_length, ten_J):
    """mj_transmission at one pose: lengths (nu) and dense moments (nu x nv)."""
    from . import rotation as rot
    nu = len(a.actuator_trntype)
    nv = len(a.dof_bodyid)
    length = np.zeros(nu)
    moment = np.zeros((nu, nv))
    trnids, trntypes = a.actuator_trnid.reshape(nu, 2).tolist(), a.actuator_trntype.tolist()
    jnt_type, jnt_qposadr, jnt_dofadr = (a.jnt_type.tolist(), a.jnt_qposadr.tolist(),
                                         a.jnt_dofadr.tolist())
    for i in range(nu):
        tid, tid1 = trnids[i]
        gear = a.actuator_gear[i]
        trn = trntypes[i]
        if trn in (TRN_JOINT, TRN_JOINTINPARENT):
            jt, qa, da = jnt_type[tid], jnt_qposadr[tid], jnt_dofadr[tid]
            if jt in (2, 3):
                length[i] = k.qpos[qa] * gear[0]
                moment[i, da] = gear[0]
            elif jt == 1:
                quat = rot.normalize(k.qpos[qa:qa + 4])[0]
                axis = _quat2vel(quat)
                if trn == TRN_JOINT:
                    gax = gear[:3]
                else:
                    gax = rot.quat2mat(_quat_neg(quat)) @ gear[:3]
                length[i] = axis @ gax
                moment[i, da:da + 3] = gax
            else:
                if trn == TRN_JOINT:
                    gax = gear[3:6]
                else:
                    quat = rot.normalize(k.qpos[qa + 3:qa + 7])[0]
                    gax = rot.quat2mat(_quat_neg(quat)) @ gear[3:6]
                moment[i, da:da + 3] = gear[:3]
                moment[i, da + 3:da + 6] = gax
        elif trn == TRN_SLIDERCRANK:
            rod = a.actuator_cranklength[i]
            axis = k.site_xmat[tid1][:, 2]
            vec = k.site_xpos[tid] - k.site_xpos[tid1]
            av = vec @ axis
            det = av * av + rod * rod - vec @ vec
            if det <= 0:
                length[i] = av
                dlda, dldv = vec, axis
            else:
                sdet = math.sqrt(det)
                length[i] = av - sdet
                dldv = axis * (1 - av / sdet) + vec / sdet
                dlda = vec * (1 - av / sdet)
            jS, jrS = k.jac(k.site_xpos[tid1], a.site_bodyid[tid1])
            jA = np.cross(jrS.T, axis).T
            jac, _ = k.jac(k.site_xpos[tid], a.site_bodyid[tid])
            jac = jac - jS
            moment[i] = (dlda @ jA + dldv @ jac) * gear[0]
            length[i] *= gear[0]
        elif trn == TRN_TENDON:
            length[i] = ten_length[tid] * gear[0]
            moment[i] = ten_J[tid] * gear[0]
        elif trn == TRN_SITE:
            jac, jacS = k.jac(k.site_xpos[tid], a.site_bodyid[tid])
            if tid1 == -1:
                xm = k.site_xmat[tid]
                moment[i] = (xm @ gear[:3]) @ jac + (xm @ gear[3:6]) @ jacS
            else:
                common = _common_dof(a, a.site_bodyid[tid], a.site_bodyid[tid1])
                xr = k.site_xmat[tid1]
                if np.any(gear[:3]):
                    vec = xr.T @ (k.site_xpos[tid] - k.site_xpos[tid1])
                    length[i] += vec @ gear[:3]
                    jr, _ = k.jac(k.site_xpos[tid1], a.site_bodyid[tid1])
                    jd = jac - jr
                    for d in common:
                        jd[:, d] = 0
                    moment[i] += (xr @ gear[:3]) @ jd
                if np.any(gear[3:6]):
                    # MuJoCo 3.4.0 composes these as site_quat * xquat (the
                    # reverse of the site frame's xquat * site_quat); the kernel
                    # (kernels/actuation.py) does the same, so length0 must too
                    q = rot.quat_mul(a.site_quat[tid], k.xquat[a.site_bodyid[tid]])
                    qr = rot.quat_mul(a.site_quat[tid1], k.xquat[a.site_bodyid[tid1]])
                    vec = _quat2vel(rot.quat_mul(_quat_neg(qr), q))
                    length[i] += vec @ gear[3:6]
                    _, jrr = k.jac(k.site_xpos[tid1], a.site_bodyid[tid1])
                    jd = jacS - jrr
                    for d in common:
                        jd[:, d] = 0
                    moment[i] += (xr @ gear[3:6]) @ jd
        # TRN_BODY: no contacts at compile time: zero length and moment
    return length, moment


def _common_dof(a, b0, b1):
    """The common ancestral dof chain of two bodies (site transmission with refsite)."""
    w0, w1 = a.body_weldid[b0], a.body_weldid[b1]
    d0 = a.body_dofadr[w0] + a.body_dofnum[w0] - 1
    d1 = a.body_dofadr[w1] + a.body_dofnum[w1] - 1
    if d0 < 0 or d1 < 0:
        return []
    while d0 != d1:
        if d0 < d1:
            d1 = a.dof_parentid[d1]
        else:
            d0 = a.dof_parentid[d0]
        if d0 == -1 or d1 == -1:
            return []
    out = []
    while d0 >= 0:
        out.append(d0)
        d0 = a.dof_parentid[d0]
    return out


def actuator_constants(a, k, Minv, dof_M0, ten_length, ten_J):
    """set0's actuator constants: actuator_length0, actuator_acc0, and biasprm[2] of a
    position-like actuator given as a damping ratio (> 0) made the damping (< 0)."""
    length, moment = transmission(a, k, ten_length, ten_J)
    a.actuator_length0 = length
    nv = len(a.dof_bodyid)
    nu = len(a.actuator_trntype)
    if nv:
        acc0 = []
        for i in range(nu):
            nz = np.nonzero(moment[i])[0]  # Minv @ moment over the moment's nonzeros
            y = Minv[:, nz] @ moment[i][nz]
            acc0.append(math.sqrt(y.dot(y)))  # (np.linalg.norm's own arithmetic)
        a.actuator_acc0 = np.array(acc0, dtype=np.float64)
    else:
        a.actuator_acc0 = np.zeros(nu)
    for i in range(nu):
        g, b = a.actuator_gainprm[i], a.actuator_biasprm[i]
        if g[0] != -b[1] or b[2] <= 0:
            continue
        mass = 0.0
        for d in np.nonzero(moment[i])[0]:
            trn2 = moment[i, d] ** 2
            if trn2 > MINVAL:
                mass += dof_M0[d] / trn2
        b[2] = -(b[2] * 2 * math.sqrt(g[0] * mass))


def length_ranges(a, acts, lropt):
    """The length ranges that come from joint/tendon limits; ``a.lengthrange_pending``
    lists the actuators whose range must be simulated (mj_setLengthRange), after set0
    as in MuJoCo."""
    pending = []
    for i in range(len(acts)):
        if not needs_lengthrange(a, i, lropt):
            continue
        # MuJoCo 3.4.0 reads the transmission id as actuator_trnid[index] (the flat
        # array, not [2*index]); mirror it so the same limits are (or are not) copied
        tid = int(a.actuator_trnid.reshape(-1)[i])
        trn = a.actuator_trntype[i]
        if lropt.uselimit and tid >= 0:
            if trn in (TRN_JOINT, TRN_JOINTINPARENT) and tid < len(a.jnt_limited) \
                    and a.jnt_limited[tid]:
                a.actuator_lengthrange[i] = a.jnt_range[tid]
                continue
            if trn == TRN_TENDON and tid < len(a.tendon_limited) and a.tendon_limited[tid]:
                a.actuator_lengthrange[i] = a.tendon_range[tid]
                continue
        pending.append(i)
    # simulated on the device once the Model exists (tiphys/lengthrange.py)
    a.lengthrange_pending = pending
    a.lropt = lropt


def needs_lengthrange(a, i, lropt) -> bool:
    """mj_setLengthRange's first tests: does actuator i get a range by mode (muscle,
    muscleuser, all) and lack a usable existing one?"""
    ismuscle = a.actuator_gaintype[i] == GAIN_MUSCLE or a.actuator_biastype[i] == BIAS_MUSCLE
    isuser = a.actuator_gaintype[i] == GAIN_USER or a.actuator_biastype[i] == BIAS_USER
    mode = lropt.mode
    if mode == LRMODE_NONE or (mode == LRMODE_MUSCLE and not ismuscle) or \
            (mode == LRMODE_MUSCLEUSER and not ismuscle and not isuser):
        return False
    lr = a.actuator_lengthrange[i]
    return not (lropt.useexisting and lr[0] < lr[1])


@dataclass(frozen=True)
class LROpt:
    """mjLROpt: <compiler><lengthrange>, options of the actuator length-range computation."""
    mode: int = 1  # muscle
    useexisting: bool = True
    uselimit: bool = False
    accel: float = 20.0  # target acceleration used to compute the force
    maxforce: float = 0.0  # force cap; 0: none
    timeconst: float = 1.0  # velocity reduction time constant; min 0.01
    timestep: float = 0.01  # simulation timestep; 0: the model's
    inttotal: float = 10.0  # total simulated time
    interval: float = 2.0  # evaluation interval at the end
    tolrange: float = 0.05  # convergence tolerance, relative to the range


def read_lropt(spec) -> LROpt:
    values = {}
    for comp in spec.sections("compiler"):
        for el in comp.find("lengthrange"):
            a = Attrs(el)
            cur = LROpt(**values)
            values["mode"] = a.keyword("mode", LRMODE, cur.mode)
            values["useexisting"] = bool(a.bool("useexisting", cur.useexisting))
            values["uselimit"] = bool(a.bool("uselimit", cur.uselimit))
            for name in ("accel", "maxforce", "timeconst", "timestep", "inttotal",
                         "interval", "tolrange"):
                values[name] = a.float(name, getattr(cur, name))
    return LROpt(**values)


# ------------------------------------------------------------------------------------
# driver: tendons + actuators into ModelArrays
# ------------------------------------------------------------------------------------

def _nuser(size, key, objs):
    n = size.get(key, -1)
    if n == -1:
        n = max([len(o.user) for o in objs] + [0])
    return n


def _block_inverse(M):
    """inv(M) tree by tree (TreeBlocks: tendon armature is added only inside the tree
    sparsity, so M stays block diagonal over kinematic trees). Blocks of one size are
    inverted in one stacked call (LAPACK runs on each as on a single matrix). A
    singular block (e.g. two coincident hinges) gets the pseudo-inverse: MuJoCo's
    factorization goes on with clamped pivots; this must not leak LinAlgError (found
    by fuzzing)."""
    by_size = {}
    for t, block in enumerate(M.blocks):
        by_size.setdefault(len(block), []).append(t)
    invs = [None] * len(M.blocks)
    for trees in by_size.values():
        stack = np.array([M.blocks[t] for t in trees])
        try:
            inv = list(np.linalg.inv(stack))
        except np.linalg.LinAlgError:
            inv = []
            for block in stack:
                try:
                    inv.append(np.linalg.inv(block))
                except np.linalg.LinAlgError:
                    inv.append(np.linalg.pinv(block))
        for t, b in zip(trees, inv):
            invs[t] = b
    return type(M)(M.los, invs, M.tree_of)


def invweight0(out, k0, Minv):
    """body_invweight0 and dof_invweight0 at qpos0, as setConst (set0) computes them:
    the averaged diagonal of J inv(M) J' for each body's com and each joint (the
    products stacked over the bodies of one chain length). ``Minv``: TreeBlocks."""
    nbody = len(out.body_parentid)
    nv = len(out.dof_bodyid)
    bw = np.zeros((nbody, 2))
    weldid, simple, mass = out.body_weldid.tolist(), out.body_simple.tolist(), out.body_mass
    use = [False] * nbody
    for b in range(1, nbody):
        if weldid[b] == 0:
            continue
        if simple[b] == 2:
            bw[b, 0] = 1.0 / max(MINVAL, mass[b])
        elif nv:
            use[b] = True
    for group, jp, jr in (k0.body_jacs_of(use) if nv else ()):
        J = np.concatenate([jp, jr], axis=1)
        A = J @ np.array([Minv.sub(k0.chain(b)) for b in group]) @ J.transpose(0, 2, 1)
        # traces summed in order (as np.trace sums 3 numbers)
        d = A[:, (0, 1, 2, 3, 4, 5), (0, 1, 2, 3, 4, 5)]
        bw[group, 0] = ((d[:, 0] + d[:, 1]) + d[:, 2]) / 3
        bw[group, 1] = ((d[:, 3] + d[:, 4]) + d[:, 5]) / 3
    dw = [0.0] * nv
    diag = Minv.diag().tolist() if nv else []  # (each joint's dofs lie in one tree block)
    for adr, body, jtype in zip(out.jnt_dofadr.tolist(), out.jnt_bodyid.tolist(),
                                out.jnt_type.tolist()):
        if simple[body] == 2:
            dw[adr] = 1.0 / max(MINVAL, mass[body])
            continue
        dnum = {0: 6, 1: 3}.get(jtype, 1)
        d = diag[adr:adr + dnum]
        if dnum == 6:
            dw[adr:adr + 3] = [((d[0] + d[1]) + d[2]) / 3] * 3
            dw[adr + 3:adr + 6] = [((d[3] + d[4]) + d[5]) / 3] * 3
        elif dnum == 3:
            dw[adr:adr + 3] = [((d[0] + d[1]) + d[2]) / 3] * 3
        else:
            dw[adr] = d[0]
    dw = np.array(dw, dtype=np.float64)
    out.body_invweight0 = bw
    out.dof_invweight0 = dw


def auto_spring_damper(out, joints):
    """<joint springdamper="timeconst dampratio">: jnt_stiffness and dof_damping from
    the joint's mean inertia at qpos0, as MuJoCo's compiler does right after setConst
    (AutoSpringDamper; the length-range simulation runs with springs and dampers
    disabled, so it does not see them).

    The joint's inertia is ndof / sum(dof_invweight0 over its dofs) (free: 6 dofs,
    ball: 3, hinge/slide: 1); then, like a solref (timeconst, dampratio) pair,
    stiffness = inertia / (timeconst * dampratio)^2 and damping = 2 inertia / timeconst,
    the damping written to every dof of the joint.
    """
    for j in joints:
        sd = getattr(j, "springdamper", None)
        if sd is None or sd[0] <= 0 or sd[1] <= 0:
            continue
        timeconst, dampratio = float(sd[0]), float(sd[1])
        adr = int(out.jnt_dofadr[j.id])
        ndim = {0: 6, 1: 3}.get(int(out.jnt_type[j.id]), 1)
        inv = 0.0
        for i in range(adr, adr + ndim):
            inv += float(out.dof_invweight0[i])
        inertia = ndim / max(MINVAL, inv)
        out.jnt_stiffness[j.id] = inertia / max(
            MINVAL, timeconst * timeconst * dampratio * dampratio)
        out.dof_damping[adr:adr + ndim] = 2 * inertia / max(MINVAL, timeconst)


def compile_tendons_and_actuators(spec, defaults, builder, ctx, out, size):
    """Tendon and actuator arrays, their sizes, and their constants at qpos0.

    Needs the tree arrays (_assemble) and material ids (assets) in ``out``.
    """
    from . import tendon as ten

    n_t = size.get("nuser_tendon", -1)
    tendons = ten.compile_tendons(spec, defaults, builder, ctx, ctx.assets, n_t)
    nuser_t = _nuser(size, "nuser_tendon", tendons)
    ten.fill_tendons(out, tendons, nuser_t)
    n_a = size.get("nuser_actuator", -1)
    acts = compile_actuators(spec, builder, tendons, ctx, n_a)
    nuser_a = _nuser(size, "nuser_actuator", acts)
    na = fill_actuators(out, acts, nuser_a)
    nwrap = sum(len(t.path) for t in tendons)
    for k, v in (("ntendon", len(tendons)), ("nwrap", nwrap), ("nu", len(acts)), ("na", na),
                 ("nuser_tendon", nuser_t), ("nuser_actuator", nuser_a)):
        setattr(out, "_size_" + k, int(v))
    out.tendon_names = [t.name for t in tendons]
    out.tendon_els = [t.el for t in tendons]
    out.actuator_names = [s.name for s in acts]
    out.actuator_els = [s.el for s in acts]

    # constants at qpos0 (setConst: set0) and qpos_spring (setSpring)
    if not len(out.dof_bodyid) and not tendons and not acts:
        _constants_without_dofs(out)
        length_ranges(out, acts, read_lropt(spec))
        return
    k0 = ten.HostKinematics(out, out.qpos0)
    out._kinematics0 = k0  # (for compile_equality; removed when the compile ends)
    c = tendon_constants(out, k0)
    auto_spring_damper(out, [j for b in builder.bodies for j in b.joints])
    actuator_constants(out, k0, c.Minv_dense, c.dof_M0, c.L0, c.J0)
    length_ranges(out, acts, read_lropt(spec))
    spring_lengths(out, c.L0)


def _constants_without_dofs(out) -> None:
    """What tendon_constants and actuator_constants compute for a model without dofs,
    tendons and actuators (a static scene, an object's model), without its kinematics:
    empty arrays, and zero inverse weights for the bodies (all welded to the world).
    out._kinematics0 is None: compile_equality and compile_flexes make the kinematics
    when they need them."""
    out._kinematics0 = None
    out.tendon_length0 = np.zeros(0)
    out.tendon_invweight0 = np.zeros(0)
    out.dof_M0 = np.zeros(0)
    out.dof_invweight0 = np.zeros(0)
    out.body_invweight0 = np.zeros((len(out.body_parentid), 2))
    out.actuator_length0 = np.zeros(0)
    out.actuator_acc0 = np.zeros(0)


def tendon_constants(out, k0) -> SimpleNamespace:
    """set0 at qpos0 (kinematics ``k0``): tendon_length0, dof_M0, tendon_invweight0,
    body/dof_invweight0, and the mass matrix with tendon armature, whose diagonal
    (``out._qM_diag``) gives stat.meaninertia. Returns L0, J0 (the tendons' lengths and
    dense Jacobians), dof_M0 and inv(M) (TreeBlocks, and dense where there are tendons or
    actuators) for the actuator constants."""
    from . import tendon as ten

    nv = len(out.dof_bodyid)
    ntendon, nu = len(out.tendon_adr), len(out.actuator_trntype)
    L0, J0 = ten.tendon_kinematics(out, k0)
    out.tendon_length0 = L0
    M = k0.mass_blocks()  # tree by tree: no nv^2 memory for scenes of many trees
    dof_M0 = M.diag()
    simple = out.dof_simplenum.tolist()
    _simple_diagonal(M, simple)
    if nv:
        if ntendon and np.any(out.tendon_armature):
            # mj_tendonArmature: added only inside M's tree sparsity (dof and ancestors;
            # a simple dof's row holds its diagonal alone)
            mask = np.eye(nv, dtype=bool)
            for i in range(nv):
                j = out.dof_parentid[i]
                while j >= 0 and not simple[i]:
                    mask[i, j] = mask[j, i] = True
                    j = out.dof_parentid[j]
            arm = (out.tendon_armature[:, None, None] * J0[:, :, None] * J0[:, None, :]).sum(0)
            M = ten.TreeBlocks.from_dense(M.dense() + arm * mask, out.dof_treeid)
        out._qM_diag = M.diag()  # setconst: stat.meaninertia
        Minv = _block_inverse(M)
        # the products below run on the dense inverse, as they always have: the
        # order of BLAS's sums depends on the vectors' lengths
        Minv_dense = Minv.dense() if ntendon or nu else None
        out.tendon_invweight0 = np.array([J0[i] @ Minv_dense @ J0[i]
                                          for i in range(ntendon)])
    else:
        Minv = Minv_dense = np.zeros((0, 0))
        out.tendon_invweight0 = np.zeros(ntendon)
    out.dof_M0 = dof_M0
    invweight0(out, k0, Minv)
    return SimpleNamespace(L0=L0, J0=J0, dof_M0=dof_M0, Minv=Minv, Minv_dense=Minv_dense)


def _simple_diagonal(M, simplenum) -> None:
    """mj_crb: the row (and column) of M of a simple dof (dof_simplenum > 0) holds only
    its diagonal, dof_M0, whatever the current joint frames make of the rest (zero as
    compiled; not after jnt_axis or jnt_pos of such a body is changed)."""
    simple = {}  # tree -> its simple dofs' rows in the tree's block
    for d, n in enumerate(simplenum):
        if n:
            t = M.tree_of[d]
            simple.setdefault(t, []).append(d - M.los[t])
    for t, rows in simple.items():
        blk = M.blocks[t]
        if len(rows) == len(blk):  # (a tree of simple dofs only: a free body, most often)
            v = blk.diagonal().copy()
            blk[...] = 0.0
            blk.reshape(-1)[::len(blk) + 1] = v
            continue
        v = blk[rows, rows]
        blk[rows, :] = 0.0
        blk[:, rows] = 0.0
        blk[rows, rows] = v


def spring_lengths(out, L0) -> None:
    """setSpring: a tendon whose spring length is (-1, -1) takes its length at
    qpos_spring (``L0``: the lengths at qpos0, used when qpos_spring is qpos0)."""
    from . import tendon as ten

    ls = out.tendon_lengthspring
    unset = [i for i in range(len(ls)) if ls[i, 0] == -1 and ls[i, 1] == -1]
    if unset:
        if np.array_equal(out.qpos_spring, out.qpos0):
            Ls = L0
        else:
            Ls, _ = ten.tendon_kinematics(out, ten.HostKinematics(out, out.qpos_spring))
        for i in unset:
            ls[i] = Ls[i]
