"""The <contact> section: explicit geom pairs (<pair>) and body-pair exclusions (<exclude>).

As MuJoCo's compiler: a pair's geoms are ordered by body id (geom1 on the lower
body), its signature is ``body1 << 16 | body2``; pairs and excludes are sorted by
signature (stably), which the collision driver relies on to merge them.
"""
from __future__ import annotations

import numpy as np

from ..errors import error_at
from .attrs import Attrs
from .empty import replay_empty

SOLREF0 = (0.02, 1.0)
SOLIMP0 = (0.9, 0.95, 0.001, 0.5, 2.0)
FRICTION0 = (1.0, 1.0, 0.005, 0.0001, 0.0001)


def referenced_geom_names(spec) -> set:
    """Names of geoms used by <pair>: discardvisual must keep them."""
    names = set()
    for section in spec.sections("contact"):
        for el in section.children:
            if el.tag == "pair":
                names.update(n for n in (el.attr("geom1"), el.attr("geom2")) if n)
    return names


def compile_contact(spec, defaults, builder, out) -> None:
    """Fill pair_* and exclude_signature (and their sizes and names) into ``out``."""
    from .composite import composite_excludes
    extra = composite_excludes(builder)
    if not extra and not any(section.children for section in spec.sections("contact")):
        replay_empty(out, "contact", lambda ns: _fill(ns, [], []))
        return
    bodies = builder.bodies
    geoms = [g for b in bodies for g in b.geoms]
    geom_id = {}
    for i, g in enumerate(geoms):
        if g.name and g.name not in geom_id:
            geom_id[g.name] = i
    geom_body = [b.id for b in bodies for _ in b.geoms]
    body_id = {}
    for b in bodies:
        if b.name and b.name not in body_id:
            body_id[b.name] = b.id
    pairs, excludes = [], []
    for section in spec.sections("contact"):
        for el in section.children:
            if el.tag == "pair":
                pairs.append(_pair(el, defaults, geom_id, geom_body))
            elif el.tag == "exclude":
                excludes.append(_exclude(el, body_id))
    excludes += [_body_pair(n1, n2, el, body_id, len(excludes) + i)
                 for i, (n1, n2, el) in enumerate(extra)]
    # MuJoCo's compiler sorts both by signature (stable: ties keep the written order)
    pairs.sort(key=lambda p: p["sig"])
    excludes.sort(key=lambda e: e["sig"])
    _fill(out, pairs, excludes)


def _fill(out, pairs, excludes) -> None:
    out.pair_dim = np.array([p["dim"] for p in pairs], dtype=np.int64)
    out.pair_geom1 = np.array([p["g1"] for p in pairs], dtype=np.int64)
    out.pair_geom2 = np.array([p["g2"] for p in pairs], dtype=np.int64)
    out.pair_signature = np.array([p["sig"] for p in pairs], dtype=np.int64)
    for key, n in (("solref", 2), ("solreffriction", 2), ("solimp", 5), ("friction", 5)):
        setattr(out, "pair_" + key, np.array([p[key] for p in pairs]).reshape(len(pairs), n))
    out.pair_margin = np.array([p["margin"] for p in pairs], dtype=np.float64)
    out.pair_gap = np.array([p["gap"] for p in pairs], dtype=np.float64)
    out.exclude_signature = np.array([e["sig"] for e in excludes], dtype=np.int64)
    out.pair_names = [p["name"] for p in pairs]
    out.pair_els = [p["el"] for p in pairs]
    out.exclude_names = [e["name"] for e in excludes]
    out.exclude_els = [e["el"] for e in excludes]
    out._size_npair = len(pairs)
    out._size_nexclude = len(excludes)


def _pair(el, defaults, geom_id, geom_body) -> dict:
    cls = el.attr("class") or "main"
    a = Attrs(el, defaults.get(cls, "pair", el))
    ids = []
    for attr in ("geom1", "geom2"):
        name = el.attr(attr)
        if not name:
            raise error_at(el, "pair needs two geoms", attr)
        if name not in geom_id:
            raise error_at(el, f"unknown geom '{name}'", attr)
        ids.append(geom_id[name])
    g1, g2 = ids
    if geom_body[g1] > geom_body[g2]:
        g1, g2 = g2, g1
    dim = a.int("condim", 3)
    if dim not in (1, 3, 4, 6):
        raise a.error(f"invalid condim {dim} in contact pair, expected 1, 3, 4 or 6",
                      "condim")
    return dict(
        el=el, name=el.attr("name") or "", g1=g1, g2=g2, dim=dim,
        sig=(geom_body[g1] << 16) + geom_body[g2],
        solref=a.floats("solref", 2, SOLREF0, exact=False),
        solreffriction=a.floats("solreffriction", 2, (0.0, 0.0), exact=False),
        solimp=a.floats("solimp", 5, SOLIMP0, exact=False),
        friction=a.floats("friction", 5, FRICTION0, exact=False),
        margin=a.float("margin", 0.0), gap=a.float("gap", 0.0))


def _body_pair(name1, name2, el, body_id, index) -> dict:
    """An exclusion a <composite> adds (by body names: the first body of that name).
    (A 3-vertex cable names a body it does not make, as MuJoCo 3.4.0's does.)"""
    for name in (name1, name2):
        if name not in body_id:
            raise error_at(el, f"body '{name}' not found in bodypair {index}")
    b1, b2 = sorted((body_id[name1], body_id[name2]))
    return dict(el=el, name="", sig=(b1 << 16) + b2)


def _exclude(el, body_id) -> dict:
    ids = []
    for attr in ("body1", "body2"):
        name = el.attr(attr)
        if not name:
            raise error_at(el, "exclude needs two bodies", attr)
        if name not in body_id:
            raise error_at(el, f"unknown body '{name}'", attr)
        ids.append(body_id[name])
    b1, b2 = sorted(ids)
    return dict(el=el, name=el.attr("name") or "", sig=(b1 << 16) + b2)
