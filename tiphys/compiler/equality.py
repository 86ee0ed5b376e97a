"""<equality>: connect, weld, joint and tendon constraints (the eq_* model fields).

As MuJoCo's reader and compiler (OneEquality, mjCEquality, setConst):
- connect and weld take either bodies (``body1``, optional ``body2`` = world, an
  ``anchor``; weld also ``relpose``) or two sites (``site1``, ``site2``), never a mix;
- ``eq_data`` holds: connect: anchor in body1's frame, then (set at qpos0) the same
  point in body2's frame; weld: anchor in body2's frame, relative position and
  quaternion of body2 in body1's frame (computed at qpos0 unless ``relpose`` gives a
  nonzero quaternion), torquescale in slot 10; joint/tendon: the polynomial
  coefficients. Unused slots keep mjs_defaultEquality's values (data[1] = 1,
  data[10] = 1), except that a site connect is all zeros;
- ``eq_objtype`` is mjOBJ_BODY or mjOBJ_SITE for connect/weld, 0 for joint/tendon.
"""
from __future__ import annotations

import numpy as np

from ..errors import error_at
from ..kernels.consts import (EQ_CONNECT, EQ_FLEX, EQ_JOINT, EQ_TENDON, EQ_WELD, JNT_HINGE, JNT_SLIDE,
                              MINVAL, NEQDATA, OBJ_BODY, OBJ_SITE, OBJ_UNKNOWN)
from . import rotation as rot
from .attrs import BOOL, Attrs, parse_floats
from .empty import replay_empty

SOLREF0 = (0.02, 1.0)
SOLIMP0 = (0.9, 0.95, 0.001, 0.5, 2.0)
_TYPES = {"connect": EQ_CONNECT, "weld": EQ_WELD, "joint": EQ_JOINT, "tendon": EQ_TENDON,
          "flex": EQ_FLEX}
_HINGE_SLIDE = (JNT_SLIDE, JNT_HINGE)


def _read(el, name, n, exact=True):
    """MuJoCo's ReadAttr: None when absent or empty; exact: n values, else 1..n."""
    text = el.get_attr(name)
    if text is None:
        return None
    values = parse_floats(el, name, text)
    if not values:
        return None
    if exact and len(values) < n:
        raise error_at(el, f"attribute '{name}' does not have enough data", name)
    if len(values) > n:
        raise error_at(el, f"attribute '{name}' has too much data", name)
    return np.array(values, dtype=np.float64)


def _given(el, name):
    return el.get_attr(name) is not None


class _Eq:
    def __init__(self, el, eqtype):
        self.el = el
        self.type = eqtype
        self.name = el.attr("name") or ""
        self.objtype = OBJ_UNKNOWN
        self.name1 = ""
        self.name2 = ""
        self.attr1 = self.attr2 = None  # the attributes the names came from
        self.data = np.zeros(NEQDATA)
        self.data[1] = 1.0  # mjs_defaultEquality
        self.data[10] = 1.0  # torque:force ratio
        self.obj1 = self.obj2 = -1


def _body_or_site(eq, a: Attrs, weld: bool):
    """Reads the body or site form of a connect/weld (OneEquality's semantics checks)."""
    el = eq.el
    sites = [_given(el, "site1"), _given(el, "site2")]
    bodies = [_given(el, "body1"), _given(el, "body2")]
    anchor = _read(el, "anchor", 3)
    relpose = _read(el, "relpose", 7) if weld else None
    if anchor is not None:
        eq.data[0:3] = anchor
    if relpose is not None:
        eq.data[3:10] = relpose
    maybe_site = any(sites)
    maybe_body = any(bodies) or anchor is not None or relpose is not None
    if maybe_site and maybe_body:
        bad = "site1" if sites[0] else "site2"
        raise a.error("body and site semantics cannot be mixed", bad)
    site_form = all(sites)
    body_form = bodies[0] and (weld or anchor is not None)
    if site_form == body_form:
        if weld:
            raise a.error("either body1 must be defined and optionally {body2, anchor, "
                          "relpose}, or site1 and site2 must be defined",
                          "site2" if sites[0] else "site1" if sites[1] else "body1")
        raise a.error("either both body1 and anchor must be defined, or both site1 and "
                      "site2 must be defined",
                      "site2" if sites[0] else "site1" if sites[1] else
                      "anchor" if bodies[0] else "body1")
    if body_form:
        eq.objtype = OBJ_BODY
        eq.name1, eq.attr1 = el.attr("body1"), "body1"
        if bodies[1]:
            eq.name2, eq.attr2 = el.attr("body2"), "body2"
        if weld and anchor is None:
            eq.data[0:3] = 0.0
    else:
        eq.objtype = OBJ_SITE
        eq.name1, eq.attr1 = el.attr("site1"), "site1"
        eq.name2, eq.attr2 = el.attr("site2"), "site2"
    if weld:
        torquescale = _read(el, "torquescale", 1)
        if torquescale is not None:
            eq.data[10] = torquescale[0]


def _parse(el, defaults, builder=None) -> _Eq:
    if el.tag == "flexcomp":  # a flexcomp's <edge equality="true">
        from .flex import flexcomp_equality
        eq = _Eq(el, EQ_FLEX)
        eq.name = ""
        eq.name1, eq.attr1 = el.attr("name"), "name"
        eq.active = 1
        solref, solimp = flexcomp_equality(builder, el)
        eq.solref, eq.solimp = np.array(solref), np.array(solimp)
        return eq
    if el.tag not in _TYPES:
        raise error_at(el, "unrecognized equality constraint type")
    cls = el.attr("class") or "main"
    a = Attrs(el, defaults.get(cls, "equality", el))
    eq = _Eq(el, _TYPES[el.tag])
    if eq.type in (EQ_CONNECT, EQ_WELD):
        _body_or_site(eq, a, eq.type == EQ_WELD)
    elif eq.type == EQ_FLEX:
        if not _given(el, "flex"):
            raise a.error("required attribute missing: 'flex'", "flex")
        eq.name1, eq.attr1 = el.attr("flex"), "flex"
    else:
        first, second = ("joint1", "joint2") if eq.type == EQ_JOINT else ("tendon1", "tendon2")
        if not _given(el, first):
            raise a.error(f"required attribute missing: '{first}'", first)
        eq.name1, eq.attr1 = el.attr(first), first
        if _given(el, second) and el.attr(second):
            eq.name2, eq.attr2 = el.attr(second), second
        poly = _read(el, "polycoef", 5, exact=False)
        if poly is not None:
            eq.data[:len(poly)] = poly
    eq.active = int(a.keyword("active", BOOL, 1))
    eq.solref = a.floats("solref", 2, SOLREF0, exact=False)
    eq.solimp = a.floats("solimp", 5, SOLIMP0, exact=False)
    return eq


def _resolve(eq, tables, joint_type):
    """mjCEquality::ResolveReferences: object ids and their checks."""
    kind = {EQ_JOINT: "joint", EQ_TENDON: "tendon", EQ_FLEX: "flex"}.get(
        eq.type, "body" if eq.objtype == OBJ_BODY else "site")
    table = tables[kind]
    if eq.name1 not in table:
        raise error_at(eq.el, f"unknown element '{eq.name1}' in equality constraint",
                       eq.attr1)
    eq.obj1 = table[eq.name1]
    if eq.name2:
        if eq.name2 not in table:
            raise error_at(eq.el, f"unknown element '{eq.name2}' in equality constraint",
                           eq.attr2)
        eq.obj2 = table[eq.name2]
    elif kind == "body":
        eq.obj2 = 0  # missing body: the world
    if eq.obj1 == eq.obj2:
        raise error_at(eq.el, f"element '{eq.name1}' is repeated in equality constraint",
                       eq.attr2 or eq.attr1)
    if eq.type == EQ_JOINT:
        for obj, attr in ((eq.obj1, eq.attr1), (eq.obj2, eq.attr2)):
            if obj >= 0 and int(joint_type[obj]) not in _HINGE_SLIDE:
                raise error_at(eq.el, "only HINGE and SLIDE joint allowed in constraint",
                               attr)


def _mulquat(a, b):
    """mju_mulQuat (no normalization)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def eq_data0(a, k0=None) -> None:
    """setConst's missing eq_data of body connects and welds, at qpos0, in place on
    ``a.eq_data``: a connect's anchor in body2's frame; a weld without a relative pose
    gets body1's anchor and the relative orientation, one with it the quaternion
    normalized. ``k0``: kinematics at qpos0 (tendon.HostKinematics), made if None."""
    types, objtypes = a.eq_type.tolist(), a.eq_objtype.tolist()
    if k0 is None and OBJ_BODY in objtypes:
        from .tendon import HostKinematics
        k0 = HostKinematics(a, a.qpos0)
    for i, (typ, objtype, id1, id2) in enumerate(zip(types, objtypes, a.eq_obj1id.tolist(),
                                                     a.eq_obj2id.tolist())):
        data = a.eq_data[i]
        if typ == EQ_CONNECT:
            if objtype == OBJ_BODY:
                pos = k0.xpos[id1] + k0.xmat[id1] @ data[0:3]
                data[3:6] = k0.xmat[id2].T @ (pos - k0.xpos[id2])
            else:
                data[:] = 0.0  # site connect: unused
        elif typ == EQ_WELD and objtype == OBJ_BODY:
            quat = data[6:10]
            if np.any(quat != 0):  # given by relpose: mju_normalize4
                norm = float(np.sqrt(quat @ quat))
                if norm < MINVAL:
                    data[6:10] = (1.0, 0.0, 0.0, 0.0)
                elif abs(norm - 1) > MINVAL:
                    data[6:10] = quat * (1.0 / norm)
                continue
            pos = k0.xpos[id2] + k0.xmat[id2] @ data[0:3]
            data[3:6] = k0.xmat[id1].T @ (pos - k0.xpos[id1])
            data[6:10] = _mulquat(rot.quat_neg(k0.xquat[id1]), k0.xquat[id2])


def compile_equality(spec, defaults, builder, out) -> None:
    """Fill eq_* (and neq, the equality names) into ``out``.

    Needs the tree, tendon arrays (tendon names) and qpos0 in ``out``.
    """
    if not any(section.children for section in spec.sections("equality")) and \
            not getattr(builder, "flexcomps", None):  # (a flexcomp may add an equality)
        replay_empty(out, "equality", lambda ns: _fill(ns, []))
        return
    bodies = builder.bodies
    names = {
        "body": [b.name for b in bodies],
        "site": [s.name for b in bodies for s in b.sites],
        "joint": [j.name for b in bodies for j in b.joints],
        "tendon": list(out.tendon_names),
        "flex": list(out.flex_names),
    }
    tables = {}
    for kind, lst in names.items():
        tables[kind] = {}
        for i, name in enumerate(lst):
            if name:
                tables[kind].setdefault(name, i)
    eqs = []
    from .flex import equality_elements
    for el in equality_elements(spec, builder):
        eq = _parse(el, defaults, builder)
        _resolve(eq, tables, out.jnt_type)
        if eq.type == EQ_FLEX:
            if out.flex_rigid[eq.obj1]:
                raise error_at(eq.el, f"rigid flex '{eq.name1}' in equality constraint "
                                      f"{len(eqs)}", eq.attr1)
        eqs.append(eq)
    _fill(out, eqs)
    # the tendon/actuator pass's kinematics at qpos0, when it left them
    eq_data0(out, getattr(out, "_kinematics0", None))


def _fill(out, eqs) -> None:
    n = len(eqs)
    out.eq_type = np.array([eq.type for eq in eqs], dtype=np.int32)
    out.eq_obj1id = np.array([eq.obj1 for eq in eqs], dtype=np.int32)
    out.eq_obj2id = np.array([eq.obj2 for eq in eqs], dtype=np.int32)
    out.eq_objtype = np.array([eq.objtype for eq in eqs], dtype=np.int32)
    out.eq_active0 = np.array([eq.active for eq in eqs], dtype=np.int32)
    out.eq_solref = np.array([eq.solref for eq in eqs], dtype=np.float64).reshape(n, 2)
    out.eq_solimp = np.array([eq.solimp for eq in eqs], dtype=np.float64).reshape(n, 5)
    out.eq_data = np.array([eq.data for eq in eqs], dtype=np.float64).reshape(n, NEQDATA)
    out.eq_names = [eq.name for eq in eqs]
    out.eq_els = [eq.el for eq in eqs]
    out._size_neq = n
