"""``<replicate>``: the elements outside the body tree that name replicated ones.

MuJoCo 3.4.0's reader parses ``<worldbody>`` last, after contact, equality, tendon,
actuator, sensor and custom. A ``<replicate>`` parses its children once as a template
subtree, attaches ``count`` copies of it (``mjs_attach`` with the suffix ``sep`` + the
copy index zero-padded to the digits of ``count``), then deletes the template. Nested
replicates run first, so a name ends with the innermost suffix first (``a`` + inner +
outer).

Each attach (``mjCModel::operator+=`` on itself) tries to copy every pair, exclude,
tendon, equality, actuator, sensor and tuple the model holds at that moment (earlier
copies included), in that order of kinds, with the suffix applied to the element's
name and references. A copy is kept when its references resolve and is appended to
its list (``mjCModel::CopyList``). The rules (each kind's ``ResolveReferences``):

- tendon: each wrap first tries its object and side site with the suffix (a geom wrap
  without a side site tries a site named just the suffix, and so falls back), then
  without it; the copy needs at least one wrap found with the suffix;
- pair / exclude / sensor: both names with the suffix; if exactly one is found, the
  other is looked up without it; a sensor without objects (clock, energy, ...) is
  always copied, so it is copied again on each later copy (clock, clock0, clock1,
  clock01, ...);
- equality / actuator / tuple: every reference with the suffix, no fallback.

Deleting the template then removes the elements that resolved before the deletion and
do not after it (``mjCModel::RemoveFromList``: pairs, excludes, tendons, equalities,
actuators, sensors in that order; tuples stay). So the original elements that named
template objects disappear, and the copies stay.

An ``<attach>`` (attach.py) runs the same bookkeeping: where the walk meets the
attached subtree, the child model's pairs ... tuples are copied in the namespace
(prefix, suffix) of the attach when their references resolve (``_ns``), and a later
replicate treats them as the model's own.

``expand_replicated_references(spec)`` does all this by name bookkeeping and returns a
Spec whose sections list the resulting elements, names and references rewritten; the
body tree itself is replicated by the tree builder.
"""
from __future__ import annotations

import copy
from collections import Counter
from typing import Optional

# element tag in the body tree -> name table it belongs to
_TREE_KINDS = {"body": "body", "joint": "joint", "freejoint": "joint", "geom": "geom",
               "site": "site", "camera": "camera", "light": "light"}
# copy order of mjCModel::operator+= and delete order of mjCModel::operator-=
_COPY_ORDER = ("pair", "exclude", "tendon", "equality", "actuator", "sensor", "tuple")
_REMOVE_ORDER = ("pair", "exclude", "tendon", "equality", "actuator", "sensor")
_ACTUATOR_TARGETS = (("joint", "joint"), ("jointinparent", "joint"), ("tendon", "tendon"),
                     ("cranksite", "site"), ("site", "site"), ("body", "body"))
# mjtObj names (mju_str2Type) of the sensor / tuple object types
_OBJ_NAMES = {1: "body", 2: "xbody", 3: "joint", 4: "dof", 5: "geom", 6: "site",
              7: "camera", 8: "light", 9: "flex", 10: "mesh", 11: "skin", 12: "hfield",
              13: "texture", 14: "material", 15: "pair", 16: "exclude", 17: "equality",
              18: "tendon", 19: "actuator", 20: "sensor", 21: "numeric", 22: "text",
              23: "tuple", 24: "key", 25: "plugin"}
_ASSET_KINDS = ("mesh", "hfield", "texture", "material", "skin")


class _Item:
    """One pair/exclude/tendon/equality/actuator/sensor/tuple as the model holds it:
    the spec element it was written as, and its current name and references."""

    __slots__ = ("kind", "el", "name", "attrs", "children", "info", "copied")

    def __init__(self, kind, el, name, attrs, children=None, info=None, copied=False):
        self.kind, self.el, self.name = kind, el, name
        self.attrs = attrs          # attribute -> current value (references)
        self.children = children    # per child element: attribute -> value (wraps, tuples)
        self.info = info            # kind-specific, fixed (types of the references)
        self.copied = copied


def _has(el, name) -> bool:
    return el.get_attr(name) is not None


class _Model:
    """Names in the model while the reader works through the worldbody."""

    def __init__(self, spec):
        self.tree = {k: Counter() for k in set(_TREE_KINDS.values())}
        self.tree["body"]["world"] += 1
        self.assets = {k: set() for k in _ASSET_KINDS}
        for section in spec.sections("asset"):
            for el in section.children:
                if el.tag in self.assets and _has(el, "name"):
                    self.assets[el.tag].add(el.attr("name"))
        self.lists = {k: [] for k in _COPY_ORDER}
        self.list_names = {k: Counter() for k in _COPY_ORDER}

    def snapshot(self):
        return ({k: Counter(v) for k, v in self.tree.items()},
                {k: Counter(v) for k, v in self.list_names.items()})

    def tables(self):
        return self.tree, self.list_names

    def append(self, item):
        self.lists[item.kind].append(item)
        if item.name:
            self.list_names[item.kind][item.name] += 1

    def drop(self, item):
        if item.name:
            self.list_names[item.kind][item.name] -= 1


def _found(tables, kind, name) -> bool:
    tree, lists = tables
    if kind == "xbody":
        kind = "body"
    if kind in tree:
        return tree[kind][name] > 0
    if kind in lists:
        return lists[kind][name] > 0
    return False


def _ns(name: str, s) -> str:
    """``name`` in a namespace: a replicate suffix, or (prefix, suffix) of an attach."""
    if isinstance(s, tuple):
        return s[0] + name + s[1]
    return name + s


class _Resolver:
    """``resolve(item, s, tables)``: the copy of ``item`` in namespace ``s`` (see _ns) as
    the kind's ResolveReferences leaves it, or None when MuJoCo would throw."""

    def __init__(self, assets):
        self.assets = assets

    def found(self, tables, kind, name) -> bool:
        if kind in self.assets:
            return name in self.assets[kind]
        return _found(tables, kind, name)

    def resolve(self, item, s, tables) -> Optional[_Item]:
        if item.info is None:  # an element the compiler will reject: never resolves
            return None
        return getattr(self, "_" + item.kind)(item, s, tables)

    @staticmethod
    def _named(item, s, attrs, children=None):
        return _Item(item.kind, item.el, _ns(item.name, s) if item.name else "", attrs,
                     children, item.info, copied=True)

    def _two(self, item, s, tables, kind1, kind2, a1, a2, fallback=True):
        """pair / exclude / sensor: two names, the unfound one unsuffixed when only the
        other is found. ``kind`` None: no object on that side."""
        n1, n2 = item.attrs.get(a1), item.attrs.get(a2)
        f1 = f2 = True
        if kind1 is not None:
            n1 = _ns(n1 or "", s)
            f1 = self.found(tables, kind1, n1)
        if kind2 is not None:
            n2 = _ns(n2 or "", s)
            f2 = self.found(tables, kind2, n2)
        if fallback and kind1 is not None and kind2 is not None:
            if not f1 and f2:
                n1 = item.attrs.get(a1) or ""
                f1 = self.found(tables, kind1, n1)
            elif f1 and not f2:
                n2 = item.attrs.get(a2) or ""
                f2 = self.found(tables, kind2, n2)
        if not (f1 and f2):
            return None
        attrs = dict(item.attrs)
        if kind1 is not None:
            attrs[a1] = n1
        if kind2 is not None:
            attrs[a2] = n2
        return attrs

    def _pair(self, item, s, tables):
        attrs = self._two(item, s, tables, "geom", "geom", "geom1", "geom2")
        return None if attrs is None else self._named(item, s, attrs)

    def _exclude(self, item, s, tables):
        attrs = self._two(item, s, tables, "body", "body", "body1", "body2")
        return None if attrs is None else self._named(item, s, attrs)

    def _sensor(self, item, s, tables):
        (k1, a1), (k2, a2) = item.info
        if k1 is not None and not (item.attrs.get(a1) or ""):
            return None  # missing name of the sensorized object
        if k2 is not None and not (item.attrs.get(a2) or ""):
            return None
        attrs = self._two(item, s, tables, k1, k2, a1, a2)
        return None if attrs is None else self._named(item, s, attrs)

    def _equality(self, item, s, tables):
        kind, (a1, a2) = item.info
        n1, n2 = item.attrs.get(a1) or "", item.attrs.get(a2) or ""
        n1 = _ns(n1, s) if n1 else n1
        n2 = _ns(n2, s) if n2 else n2
        if not self.found(tables, kind, n1):
            return None
        if n2 and not self.found(tables, kind, n2):
            return None
        attrs = dict(item.attrs)
        if n1:
            attrs[a1] = n1
        if n2:
            attrs[a2] = n2
        return self._named(item, s, attrs)

    def _actuator(self, item, s, tables):
        attrs = dict(item.attrs)
        for attr, kind in item.info:
            name = _ns(attrs.get(attr), s) if attrs.get(attr) else ""
            if not self.found(tables, kind, name):
                return None
            attrs[attr] = name
        return self._named(item, s, attrs)

    def _tendon(self, item, s, tables):
        children, failures, nwrap = [], 0, 0
        for tag, wrap in zip(item.info, item.children):
            wrap = dict(wrap)
            if tag == "pulley":
                children.append(wrap)
                continue
            nwrap += 1
            attr, kind = {"site": ("site", "site"), "geom": ("geom", "geom"),
                          "joint": ("joint", "joint")}[tag]
            name, side = wrap.get(attr) or "", wrap.get("sidesite") or ""
            ok = self.found(tables, kind, _ns(name, s))
            if ok and tag == "geom" and _ns(side, s):
                ok = self.found(tables, "site", _ns(side, s))
            if ok:
                wrap[attr] = _ns(name, s)
                if tag == "geom" and side:
                    wrap["sidesite"] = _ns(side, s)
            else:  # the namespace removed: must resolve now
                if not self.found(tables, kind, name):
                    return None
                if tag == "geom" and side and not self.found(tables, "site", side):
                    return None
                failures += 1
            children.append(wrap)
        if failures == nwrap:
            return None  # no attached reference found
        return self._named(item, s, dict(item.attrs), children)

    def _tuple(self, item, s, tables):
        children = []
        for kind, child in zip(item.info, item.children):
            child = dict(child)
            name = _ns(child.get("objname") or "", s)
            if kind is None or not self.found(tables, kind, name):
                return None
            child["objname"] = name
            children.append(child)
        return self._named(item, s, dict(item.attrs), children)


# ------------------------------------------------------------------------------------
# reading the sections into items
# ------------------------------------------------------------------------------------

def _items(spec):
    from .sensor import _read as read_sensor  # the sensor reader's object types
    out = {k: [] for k in _COPY_ORDER}
    for section in spec.sections("contact"):
        for el in section.children:
            if el.tag in ("pair", "exclude"):
                refs = ("geom1", "geom2") if el.tag == "pair" else ("body1", "body2")
                out[el.tag].append(_Item(el.tag, el, el.attr("name") or "",
                                         {a: el.attr(a) for a in refs}, info=True))
    for section in spec.sections("tendon"):
        for el in section.children:
            tags = tuple(c.tag for c in el.children)
            ok = all(t in ("site", "geom", "joint", "pulley") for t in tags)
            out["tendon"].append(_Item("tendon", el, el.attr("name") or "", {},
                                       [dict(c.items()) for c in el.children],
                                       tags if ok else None))
    for section in spec.sections("equality"):
        for el in section.children:
            if el.tag in ("connect", "weld"):
                site = _has(el, "site1")
                info = ("site", ("site1", "site2")) if site else ("body", ("body1", "body2"))
            elif el.tag == "joint":
                info = ("joint", ("joint1", "joint2"))
            elif el.tag == "tendon":
                info = ("tendon", ("tendon1", "tendon2"))
            else:
                info = None  # flex
            attrs = {a: el.attr(a) for a in info[1]} if info else {}
            out["equality"].append(_Item("equality", el, el.attr("name") or "", attrs,
                                         info=info))
    for section in spec.sections("actuator"):
        for el in section.children:
            given = [(a, k) for a, k in _ACTUATOR_TARGETS if _has(el, a)]
            info = None
            if len(given) == 1 and el.tag != "plugin":
                attr, kind = given[0]
                info = [given[0]]
                if attr == "site" and el.attr("refsite"):
                    info.append(("refsite", "site"))
                if attr == "cranksite":
                    info.append(("slidersite", "site"))
            attrs = {a: el.attr(a) for a, _ in info} if info else {}
            out["actuator"].append(_Item("actuator", el, el.attr("name") or "", attrs,
                                         info=info))
    for section in spec.sections("sensor"):
        for el in section.children:
            info, attrs = None, {}
            try:
                s = read_sensor(el)
            except Exception:  # rejected by the sensor compiler, which reports it
                s = None
            if s is not None:
                k1 = _OBJ_NAMES.get(s.objtype) if s.objtype else None
                k2 = _OBJ_NAMES.get(s.reftype) if s.reftype else None
                info = ((k1, s.objattr), (k2, s.refattr))
                attrs = {a: el.attr(a) for (k, a) in info if k is not None}
            out["sensor"].append(_Item("sensor", el, el.attr("name") or "", attrs,
                                       info=info))
    for section in spec.sections("custom"):
        for el in section.children:
            if el.tag == "tuple":
                kinds = tuple(_OBJ_NAMES.get(_obj_type(c.attr("objtype")))
                              for c in el.children)
                out["tuple"].append(_Item("tuple", el, el.attr("name") or "", {},
                                          [dict(c.items()) for c in el.children], kinds))
    return out


def _obj_type(text):
    for k, v in _OBJ_NAMES.items():
        if v == text:
            return k
    return 0


# ------------------------------------------------------------------------------------
# the walk
# ------------------------------------------------------------------------------------

class _Expander:
    def __init__(self, spec):
        self.model = _Model(spec)
        self.resolver = _Resolver(self.model.assets)
        for kind, items in _items(spec).items():
            for item in items:
                self.model.append(item)
        self.changed = False
        self.own_key = next((k for sec in spec.sections("keyframe") for k in sec.children),
                            None)

    def walk(self, el) -> list:
        """Register the tree elements under ``el``; returns (kind, name) of each."""
        made = []
        for child in el.children:
            tag = child.tag
            if tag == "replicate":
                made += self.replicate(child)
                continue
            kind = _TREE_KINDS.get(tag)
            if kind is not None and _has(child, "name") and child.attr("name"):
                name = child.attr("name")
                self.model.tree[kind][name] += 1
                made.append((kind, name))
            if tag in ("body", "frame"):
                made += self.walk(child)
            attached = child.__dict__.get("attach_items")
            if attached is not None:
                self.attach(*attached)
        return made

    def attach(self, ns, items, attached) -> None:
        """An <attach>ed child's items (attach.py), copied where their references
        resolve once the subtree is in (mjCModel::operator+=); ``attached(actuator
        elements copied)`` then moves the keyframe values."""
        self.changed = True
        model, res = self.model, self.resolver
        actuators = []
        for kind in _COPY_ORDER:
            tables = model.tables()
            kept = [res.resolve(item, ns, tables) for item in items[kind]]
            for cand in kept:
                if cand is not None:
                    model.append(cand)
                    if kind == "actuator":
                        actuators.append(cand.el)
        attached(actuators)

    def replicate(self, el) -> list:
        template = self.walk(el)
        try:
            count = int(el.attr("count"))
        except (TypeError, ValueError):
            return template  # the tree builder reports it
        if count <= 0:
            return template
        self.changed = True
        model, res = self.model, self.resolver
        sep = el.attr("sep") or ""
        digits = len(str(count))
        made = []
        if el.__dict__.get("attached_replicate"):
            # a replicate of an <attach>ed model, made in that model (attach.py takes
            # its elements as they came out): here only the copies' names
            for i in range(count):
                s = sep + str(i).zfill(digits)
                for kind, name in template:
                    model.tree[kind][name + s] += 1
                    made.append((kind, name + s))
            for kind, name in template:
                model.tree[kind][name] -= 1
            return made
        if self.own_key is not None:
            key = self.own_key
            raise NotImplementedError(
                f"{key.xml_file or '<string>'}:{key.xml_line}: <key> in a model with "
                f"<replicate> (line {el.xml_line}) is not supported yet: MuJoCo 3.4.0 "
                f"copies every keyframe for each replicated copy (names with the "
                f"suffix, values following the copied joints) and sizes it to the model "
                f"as read up to the <replicate>")
        for i in range(count):
            s = sep + str(i).zfill(digits)
            for kind, name in template:
                model.tree[kind][name + s] += 1
                made.append((kind, name + s))
            for kind in _COPY_ORDER:
                items = model.lists[kind]
                for j in range(len(items)):
                    cand = res.resolve(items[j], s, model.tables())
                    if cand is not None:
                        model.append(cand)
        # deleting the template copies the model first, which makes every actuator
        # forget the keyframe values it carried (attach.py)
        for item in model.lists["actuator"]:
            state = item.el.__dict__.get("attach_key_state")
            if state is not None:
                state.values.clear()
        old = model.snapshot()
        for kind, name in template:
            model.tree[kind][name] -= 1
        for kind in _REMOVE_ORDER:
            keep = []
            for item in model.lists[kind]:
                if (res.resolve(item, "", old) is not None
                        and res.resolve(item, "", model.tables()) is None):
                    model.drop(item)
                else:
                    keep.append(item)
            model.lists[kind] = keep
        return made


def _materialize(item):
    if not item.copied:
        return item.el
    el = copy.copy(item.el)
    if "name" in el.attr_names:
        el.set("name", item.name or None)
    for attr, value in item.attrs.items():
        el.set(attr, value)
    if item.children is not None:
        kids = []
        for child, attrs in zip(item.el.children, item.children):
            c = copy.copy(child)
            for attr, value in attrs.items():
                c.set(attr, value)
            kids.append(c)
        el.children = kids
    else:
        el.children = list(item.el.children)
    return el


def _has_replicate(elements) -> bool:
    """Whether a <replicate> is among the elements or their descendants (a walk with a
    stack: faster than nested generators in deep trees)."""
    stack = list(elements)
    while stack:
        el = stack.pop()
        if el.tag == "replicate":
            return True
        stack.extend(el.children)
    return False


def expand_replicated_references(spec):
    """``spec`` itself when it has no ``<replicate>``; otherwise a copy whose contact,
    tendon, equality, actuator, sensor and custom sections hold the elements MuJoCo's
    replication leaves (see the module docstring). ``spec`` is not changed."""
    worlds = spec.sections("worldbody")
    if not _has_replicate(worlds) and not getattr(spec, "has_attach", False):
        return spec
    ex = _Expander(spec)
    for w in worlds:
        ex.walk(w)
    if not ex.changed:
        return spec
    lists = {k: [_materialize(i) for i in v] for k, v in ex.model.lists.items()}
    new_children = {
        "contact": lists["pair"] + lists["exclude"],
        "tendon": lists["tendon"],
        "equality": lists["equality"],
        "actuator": lists["actuator"],
        "sensor": lists["sensor"],
    }
    custom_other = [c for s in spec.sections("custom") for c in s.children
                    if c.tag != "tuple"]
    new_children["custom"] = custom_other + lists["tuple"]
    root = copy.copy(spec.root)
    children, placed = [], set()
    for section in spec.root.children:
        tag = section.tag
        if tag not in new_children:
            children.append(section)
            continue
        if tag in placed:
            continue  # merged into the first section of its kind
        placed.add(tag)
        sec = copy.copy(section)
        sec.children = new_children[tag]
        children.append(sec)
    root.children = children
    for tag, elements in new_children.items():
        if tag not in placed and elements:  # (attached elements, the model has none)
            root.add(tag).children = elements
    out = copy.copy(spec)
    out.root = root
    return out
