"""<composite>: MuJoCo 3.4.0's composite objects (xml_native_reader's OneComposite and
mjCComposite::Make / MakeCable / AddCableBody, user_composite.cc).

3.4.0 builds one type, ``cable``: a chain of ``count[0] - 1`` bodies along a curve
(``curve``/``size``, or the given ``vertex`` list), each with a capsule or cylinder geom
from one vertex to the next, a ball joint (the first body: ball, a free joint with
``initial="free"``, none with ``initial="none"``), sites on the first and last bodies,
the contact exclusions of neighbours, a custom text ``composite_<prefix>`` and, with a
``<plugin>`` child, the bodies' plugin (``mujoco.elasticity.cable``; an in-place one is
the instance ``composite<prefix>``). The types 3.4.0 no longer builds (particle, grid,
rope, loop, cloth) are refused with its messages, which name the replacement
(replicate, flex, cable, flexcomp, shell). A box cable gets the skin MuJoCo gives it
(cable_skin.py; inside a <replicate>, MuJoCo 3.4.0's skin names bodies that do not
exist: the model is refused with its message).

The bodies are built by the tree builder from synthetic elements, placed where the
composite is (a <frame>'s pose applies to the first body). Their geom, site and joint
take the composite's own <geom>, <site> and <joint> attributes on MuJoCo's built-in
defaults: the model's default classes do not apply (mjCComposite keeps its own mjCDef),
joints and sites are in group 3. Vertices are single precision, as MuJoCo keeps them.
What the rest of the compiler needs is kept on ``builder.composites`` (one
:class:`Composite` per cable, in tree order): its text, exclusions and plugin.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import error_at
from ..kernels.consts import GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, MINVAL
from . import rotation as rot
from .attrs import BOOL, Attrs
from .flex import _fmt, _synthetic as synthetic
from .tree import GEOM_TYPES, JOINT_TYPES

# mjtCompType, with the keywords the reader maps
TYPES = {"particle": 0, "grid": 1, "cable": 2, "rope": 3, "loop": 4, "cloth": 5}
CABLE = TYPES["cable"]
# what 3.4.0 says of the types it no longer builds
_DEPRECATED = {TYPES["particle"]: ("particle", "replicate"), TYPES["grid"]: ("grid", "flex"),
               TYPES["rope"]: ("rope", "cable"), TYPES["loop"]: ("loop", "flexcomp"),
               TYPES["cloth"]: ("cloth", "shell")}
# mjtCompShape of the curve keywords
_LINE, _COS, _SIN, _ZERO = 0, 1, 2, 3
SHAPES = {"s": _LINE, "cos(s)": _COS, "sin(s)": _SIN, "0": _ZERO}
JOINT_KINDS = {"main": 0}
CABLE_PLUGIN = "mujoco.elasticity.cable"
# a default class with no attributes: composite elements take MuJoCo's built-in values
NO_CLASS = "\0composite"

# the attributes of the composite's children copied onto the elements it makes
_GEOM_ATTRS = ("type", "contype", "conaffinity", "condim", "group", "priority", "size",
               "material", "rgba", "friction", "mass", "density", "solmix", "solref",
               "solimp", "margin", "gap")
_SITE_ATTRS = ("size", "group", "material", "rgba")
_JOINT_ATTRS = ("group", "stiffness", "damping", "armature", "range", "margin",
                "solreflimit", "solimplimit", "frictionloss", "solreffriction",
                "solimpfriction")  # (not "limited": 3.4.0's reader never reads it)


@dataclass
class Composite:
    """What a cable adds outside its bodies: the custom text (name, data), the contact
    exclusions (body name pairs), and its plugin: None, or (plugin name, instance name,
    in place, the <plugin> element, its config) with the (synthetic) elements of the
    bodies that carry it."""
    el: object
    text: tuple
    excludes: list = field(default_factory=list)
    plugin: Optional[tuple] = None
    plugin_bodies: list = field(default_factory=list)
    skin: Optional[object] = None  # a box cable's skin (compiler/skin.py SkinData)


def _where(el) -> str:
    return f"{el.xml_file or '<string>'}:{el.xml_line}"


def _first(el, tag):
    for child in el.children:
        if child.tag == tag:
            return child
    return None


def _read_curve(el, text: Optional[str]) -> list:
    """The curve keywords, as the reader's stream loop takes them (a trailing blank
    reads the last word once more)."""
    curve = [_ZERO, _ZERO, _ZERO]
    if not text:
        return curve
    words = text.split()
    if text != text.rstrip() and words:
        words.append(words[-1])
    if not words:
        words = [""]
    for i, word in enumerate(words):
        if i > 2:
            raise error_at(el, "The curve array must have a maximum of 3 components",
                           "curve")
        if word not in SHAPES:
            raise error_at(el, "The curve array contains an invalid shape", "curve")
        curve[i] = SHAPES[word]
    return curve


class _Reader:
    """OneComposite: the composite's attributes and children, checked in MuJoCo's
    order."""

    def __init__(self, el):
        a = Attrs(el, {})
        self.el = el
        self.prefix = a.str("prefix", "")
        if a.text("type") is None:
            raise error_at(el, "required attribute missing: 'type'", "type")
        self.type = _keyword(a, "type", TYPES)
        count = a.ints("count")
        self.count = [1, 1, 1]
        if count is not None:
            if not 1 <= len(count) <= 3:
                raise error_at(el, f"expected 1 to 3 numbers, got {len(count)}", "count")
            self.count[:len(count)] = [int(c) for c in count]
        self.offset = [float(x) for x in a.floats("offset", 3, (0.0, 0.0, 0.0))]
        self.quat = [float(x) for x in a.floats("quat", 4, (1.0, 0.0, 0.0, 0.0))]
        self.plugin_el = _first(el, "plugin")
        if self.plugin_el is not None:
            from .plugins import _read_config as read_config
            self.plugin_name = self.plugin_el.attr("plugin") or ""
            self.instance_name = self.plugin_el.attr("instance") or ""
            self.config = read_config(self.plugin_el) if not self.instance_name else {}
        self.curve = _read_curve(el, a.text("curve"))
        self.initial = a.str("initial", "ball")
        self.size = [float(x) for x in a.floats("size", 3, (1.0, 0.0, 0.0), exact=False)]
        vertex = a.floats("vertex")
        self.vertex = [] if vertex is None else \
            [float(x) for x in np.asarray(vertex, dtype=np.float32)]
        self.skin = _first(el, "skin")
        if self.skin is not None:
            s = Attrs(self.skin, {})
            s.keyword("texcoord", BOOL)
            s.floats("rgba", 4)
            s.float("inflate")
            s.int("subgrid")
            group = s.int("group", 0)
            if group < 0 or group >= 6:
                raise error_at(self.skin, "skin group must be between 0 and 5", "group")
        self.geom = _first(el, "geom")
        self.geom_type = GEOM_TYPES["sphere"]
        if self.geom is not None:
            g = Attrs(self.geom, {})
            self.geom_type = _keyword(g, "type", GEOM_TYPES, self.geom_type)
            g.floats("size", 3, (0, 0, 0), exact=False)
            for key in ("contype", "conaffinity", "condim", "group", "priority"):
                g.int(key)
            g.floats("friction", 3, (0, 0, 0), exact=False)
            g.floats("solref", 2, (0, 0), exact=False)
            g.floats("solimp", 5, (0, 0, 0, 0, 0), exact=False)
            for key in ("solmix", "margin", "gap", "mass", "density"):
                g.float(key)
            g.floats("rgba", 4)
        self.site = _first(el, "site")
        if self.site is not None:
            s = Attrs(self.site, {})
            s.floats("size", 3, (0, 0, 0), exact=False)
            s.int("group")
            s.floats("rgba", 4)
        self.joint = None
        for jel in el.children:
            if jel.tag != "joint":
                continue
            j = Attrs(jel, {})
            if j.text("kind") is None:
                raise error_at(jel, "required attribute missing: 'kind'", "kind")
            _keyword(j, "kind", JOINT_KINDS)
            if self.joint is not None and self.type != TYPES["particle"]:
                raise error_at(el, "Only particles are allowed to have multiple joints")
            self.joint = jel
            _keyword(j, "type", JOINT_TYPES)
            j.floats("axis", 3)
            j.floats("solreffix", 2, (0, 0), exact=False)
            j.floats("solimpfix", 5, (0, 0, 0, 0, 0), exact=False)
            j.int("group")
            j.floats("solreflimit", 2, (0, 0), exact=False)
            j.floats("solimplimit", 5, (0, 0, 0, 0, 0), exact=False)
            j.floats("solreffriction", 2, (0, 0), exact=False)
            j.floats("solimpfriction", 5, (0, 0, 0, 0, 0), exact=False)
            for key in ("stiffness", "margin", "armature", "damping", "frictionloss"):
                j.float(key)
            j.floats("range", 2)


def _keyword(a: Attrs, name: str, table: dict, default=None):
    """MapValue: MuJoCo's message for a word not in the table."""
    text = a.text(name)
    if text is None:
        return default
    if text not in table:
        raise a.error(f"invalid keyword: '{text}'", name)
    return table[text]


def _make_checks(r: _Reader) -> None:
    """mjCComposite::Make's checks before it dispatches on the type, then the type's."""
    el = r.el
    if any(c < 1 for c in r.count):
        raise error_at(el, "Positive counts expected in composite", "count")
    if sum(x * x for x in r.size) < MINVAL and not r.vertex:
        raise error_at(el, "Positive spacing or length expected in composite", "size")
    if r.vertex:
        if r.count[0] > 1:
            raise error_at(el, "Either vertex or count can be specified, not both", "vertex")
        r.count[0] = len(r.vertex) // 3
        r.count[1] = 1
    first, dim = False, 0
    for c in r.count:
        if c == 1:
            first = True
        else:
            dim += 1
            if first:
                raise error_at(el, "Singleton counts must come last", "count")
    subgrid = 0 if r.skin is None else (Attrs(r.skin, {}).int("subgrid", 0))
    if r.skin is not None and subgrid > 0 and r.type != CABLE and \
            (r.count[0] < 3 or r.count[1] < 3):
        raise error_at(el, "At least 3x3 required for skin subgrid")
    if r.plugin_el is not None:
        if r.type != CABLE:
            raise error_at(el, "Only cable composite supports plugins")
        if r.plugin_name != CABLE_PLUGIN:
            raise error_at(el, "Only mujoco.elasticity.cable is supported by composites")
    if r.type in _DEPRECATED:
        old, new = _DEPRECATED[r.type]
        raise error_at(el, f'The "{old}" composite type is deprecated. Please use "{new}" '
                           f'instead.', "type")
    if dim != 1:
        raise error_at(el, "Cable must be one-dimensional", "count")
    if r.geom_type not in (GEOM_CYLINDER, GEOM_CAPSULE, GEOM_BOX):
        raise error_at(r.geom if r.geom is not None else el,
                       "Cable geom type must be sphere, capsule or box", "type")


# ------------------------------------------------------------------ cable geometry
# (MuJoCo's user_util arithmetic, on Python floats)

def _cross(b, c):
    return [b[1] * c[2] - b[2] * c[1], b[2] * c[0] - b[0] * c[2], b[0] * c[1] - b[1] * c[0]]


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _rot_vec_quat(v, q):
    """mjuu_rotVecQuat."""
    if v[0] == 0 and v[1] == 0 and v[2] == 0:
        return [0.0, 0.0, 0.0]
    if q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0:
        return list(v)
    t = [q[0] * v[0] + q[2] * v[2] - q[3] * v[1],
         q[0] * v[1] + q[3] * v[0] - q[1] * v[2],
         q[0] * v[2] + q[1] * v[1] - q[2] * v[0]]
    return [v[0] + 2 * (q[2] * t[2] - q[3] * t[1]),
            v[1] + 2 * (q[3] * t[0] - q[1] * t[2]),
            v[2] + 2 * (q[1] * t[1] - q[2] * t[0])]


def _normvec(v):
    out, n = rot.normvec(v)
    return out.tolist(), n


def _update_frame(normal, edge, tprv, tnxt, first):
    """mjuu_updateFrame: (frame quaternion, new normal, edge length)."""
    tangent, _ = _normvec(edge)
    if first:
        binormal, _ = _normvec(_cross(tangent, tnxt))
        normal, _ = _normvec(_cross(binormal, tangent))
    else:
        binormal, n = _normvec(_cross(tprv, tangent))
        angle = math.atan2(n, _dot(tprv, tangent))
        if angle == 0:
            darboux = [1.0, 0.0, 0.0, 0.0]
        else:
            s = math.sin(angle * 0.5)
            darboux = [math.cos(angle * 0.5), binormal[0] * s, binormal[1] * s,
                       binormal[2] * s]
        normal, _ = _normvec(_rot_vec_quat(normal, darboux))
        binormal, _ = _normvec(_cross(tangent, normal))
    quat = rot.frame2quat(tangent, normal, binormal).tolist()
    return quat, normal, math.sqrt(_dot(edge, edge))


def cable_vertices(r: _Reader) -> list:
    """The vertices (float32 values as Python floats, 3 per vertex): the given ones, or
    the curve's points rotated by ``quat``."""
    if r.vertex:
        return list(r.vertex)
    n = r.count[0]
    out = []
    for ix in range(n):
        v = [0.0, 0.0, 0.0]
        for k in range(3):
            shape = r.curve[k]
            if shape == _LINE:
                v[k] = ix * r.size[0] / (n - 1)
            elif shape == _COS:
                v[k] = r.size[1] * math.cos(math.pi * ix * r.size[2] / (n - 1))
            elif shape == _SIN:
                v[k] = r.size[1] * math.sin(math.pi * ix * r.size[2] / (n - 1))
        out += _rot_vec_quat(v, r.quat)
    return [float(x) for x in np.asarray(out, dtype=np.float32)]


def _sub32(u, i, j):
    """u[i] - u[j] for vertex indices, in single precision (MuJoCo subtracts floats)."""
    return [float(np.float32(u[3 * i + k]) - np.float32(u[3 * j + k])) for k in range(3)]


def cable_bodies(r: _Reader, u: list) -> list:
    """AddCableBody for each edge: (body name, pos, quat, joint name, site name or None,
    site x, edge length, name of the next body for the exclusion or None)."""
    p = r.prefix
    n = r.count[0]
    last_idx = n - 2
    normal, prev_quat = [0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]
    out = []
    for ix in range(n - 1):
        first, last, secondlast = ix == 0, ix == last_idx, ix == last_idx - 1
        edge = _sub32(u, ix + 1, ix)
        tprev, length_prev = [0.0, 0.0, 0.0], 0.0
        if not first:
            tprev, length_prev = _normvec(_sub32(u, ix, ix - 1))
        # (MuJoCo leaves the next tangent unset for the last edge; a one-edge cable
        # reads it uninitialised: zero here)
        tnext = [0.0, 0.0, 0.0]
        if not last:
            tnext, _ = _normvec(_sub32(u, ix + 2, ix + 1))
        quat, normal, length = _update_frame(normal, edge, tprev, tnext, first)
        if first:
            name, nxt, jname, sname = f"{p}B_first", f"{p}B_{ix + 1}", f"{p}J_first", \
                f"{p}S_first"
        elif last:
            name, nxt, jname, sname = f"{p}B_last", f"{p}B_first", f"{p}J_last", \
                f"{p}S_last"
        elif secondlast:
            name, nxt, jname, sname = f"{p}B_{ix}", f"{p}B_last", f"{p}J_{ix}", None
        else:
            name, nxt, jname, sname = f"{p}B_{ix}", f"{p}B_{ix + 1}", f"{p}J_{ix}", None
        if first:
            pos = [r.offset[k] + u[3 * ix + k] for k in range(3)]
            bquat = quat
        else:
            pos = [length_prev, 0.0, 0.0]
            neg = [prev_quat[0], -prev_quat[1], -prev_quat[2], -prev_quat[3]]
            bquat = rot.quat_mul(neg, quat).tolist()
        prev_quat = quat
        if first and r.initial == "none":
            jname = None
        out.append((name, pos, bquat, jname, sname if (first or last) else None,
                    length if last else 0.0, length, None if last else nxt))
    return out


# ------------------------------------------------------------------ elements

_PATH = ("mujoco", "worldbody", "body")


def _element(tag, where, **attrs):
    """A synthetic body, joint, geom or site (flex.py's, as flexcomp makes them); the
    attributes given as None are left unwritten."""
    path = _PATH if tag == "body" else _PATH + (tag,)
    return synthetic(tag, path, where, **{k: v for k, v in attrs.items() if v is not None})


def _copied(src, names) -> dict:
    if src is None:
        return {}
    return {k: src.attr(k) for k in names if src.attr(k) is not None}


def expand_composite(builder, el, body, frame, childclass) -> None:
    """mjCComposite::Make at the composite's place among its parent's children: the
    cable's bodies are built now (their ids in MuJoCo's order); its text, exclusions and
    plugin go on ``builder.composites``."""
    r = _Reader(el)
    _make_checks(r)
    u = cable_vertices(r)
    made = cable_bodies(r, u)
    builder.defaults.classes.setdefault(NO_CLASS, {})
    comp = Composite(el=el, text=("composite_" + r.prefix, "rope_" + r.prefix))
    if r.plugin_el is not None:
        if builder._suffix:
            raise NotImplementedError(
                f"{_where(el)}: <composite><plugin> inside <replicate> is not supported yet")
        instance = r.instance_name or "composite" + r.prefix
        comp.plugin = (r.plugin_name, instance, not r.instance_name, r.plugin_el, r.config)
    gsrc = _copied(r.geom, _GEOM_ATTRS)
    ssrc = _copied(r.site, _SITE_ATTRS)
    ssrc.setdefault("group", "3")
    jsrc = _copied(r.joint, _JOINT_ATTRS)
    jsrc.setdefault("group", "3")
    gwhere = r.geom if r.geom is not None else el
    box_size = _geom_size(r)
    top = parent = None
    els = []
    for ix, (name, pos, quat, jname, sname, sx, length, nxt) in enumerate(made):
        b = _element("body", el, name=name, pos=_fmt(pos), quat=_fmt(quat))
        els.append(b)
        if r.geom_type == GEOM_BOX:  # a box half as long as the edge, centred on it
            box = dict(gsrc)
            box["size"] = _fmt([length / 2, *box_size[1:]])
            b.children.append(_element("geom", gwhere, name=f"{r.prefix}G{ix}",
                                       pos=_fmt([length / 2, 0, 0]), **box))
        else:
            b.children.append(_element("geom", gwhere, name=f"{r.prefix}G{ix}",
                                       fromto=_fmt([0, 0, 0, length, 0, 0]), **gsrc))
        if jname is not None:
            jattrs = dict(jsrc)
            free = ix == 0 and r.initial == "free"
            if free:
                for key in ("damping", "armature", "frictionloss"):
                    jattrs.pop(key, None)
            b.children.append(_element("joint", r.joint if r.joint is not None else el,
                                       name=jname, type="free" if free else "ball",
                                       **jattrs))
        if sname is not None:
            b.children.append(_element("site", r.site if r.site is not None else el,
                                       name=sname, pos=_fmt([sx, 0, 0]), quat="1 0 0 0",
                                       **ssrc))
        if nxt is not None:  # (in a <replicate>, the copy's names)
            comp.excludes.append((builder._suffixed(name), builder._suffixed(nxt)))
        if parent is None:
            top = b
        else:
            parent.children.append(b)
        parent = b
    # the first body in the composite's frame; the rest nested, on built-in defaults
    builder._body(top, body, frame, NO_CLASS)
    if comp.plugin is not None:
        comp.plugin_bodies = els
    if r.geom_type == GEOM_BOX:
        from .cable_skin import cable_skin
        if builder._suffix:  # MuJoCo's skin names the bodies without the copy's suffix
            raise error_at(r.el, f"unknown body '{r.prefix}B_first' in skin")
        comp.skin = cable_skin(r, _geom_size(r))
    builder.__dict__.setdefault("composites", []).append(comp)


def _geom_size(r: _Reader) -> list:
    """The size of the composite's <geom> (MuJoCo's default geom size: zeros)."""
    if r.geom is None:
        return [0.0, 0.0, 0.0]
    return [float(x) for x in Attrs(r.geom, {}).floats("size", 3, (0, 0, 0), exact=False)]


def composite_skins(builder) -> list:
    """The box cables' skins (SkinData), in tree order (MuJoCo adds them as it reads
    <worldbody>, after the <asset> and <deformable> skins)."""
    return [c.skin for c in getattr(builder, "composites", ()) if c.skin is not None]


def body_plugin(builder, el, body) -> None:
    """A ``<body><plugin>`` written by hand: the body takes the (passive) plugin, an
    instance of ``<extension>`` (``instance=``) or one in place with its ``<config>``s,
    in tree order with the cables' (what plugins.py's _body_plugins resolves)."""
    from .plugins import _read_config as read_config
    if builder._suffix:
        raise NotImplementedError(
            f"{_where(el)}: <body><plugin> inside <replicate> is not supported yet")
    pname = el.attr("plugin") or ""
    iname = el.attr("instance") or ""
    config = read_config(el) if not iname else {}
    comp = Composite(el=el, text=None, plugin=(pname, iname, not iname, el, config),
                     plugin_bodies=[body.el])
    builder.__dict__.setdefault("composites", []).append(comp)


def composite_excludes(builder) -> list:
    """(body name 1, body name 2, element) of every cable's exclusions, in tree order
    (MuJoCo adds them after the <contact> section's)."""
    return [(n1, n2, c.el) for c in getattr(builder, "composites", ())
            for n1, n2 in c.excludes]


def add_composite_texts(builder, out) -> None:
    """The cables' custom texts after the <custom> ones (MuJoCo reads <worldbody>
    last): names, ntext and ntextdata; one per <composite> element, also when a
    <replicate> copies it (MuJoCo adds it when it reads the element)."""
    comps, seen = [], set()
    for c in getattr(builder, "composites", ()):
        if c.text is None:  # a body's own <plugin>
            continue
        if id(c.el) not in seen:  # (a <replicate>d composite adds its text once)
            seen.add(id(c.el))
            comps.append(c)
    if not comps:
        return
    out.text_names = list(out.text_names) + [c.text[0] for c in comps]
    out.text_values = list(out.text_values) + [c.text[1] for c in comps]
    values = out.__dict__
    values["_size_ntext"] = values.get("_size_ntext", 0) + len(comps)
    values["_size_ntextdata"] = values.get("_size_ntextdata", 0) + \
        sum(len(c.text[1]) + 1 for c in comps)
