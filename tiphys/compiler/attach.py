"""``<asset><model>`` and ``<attach>``: model composition as MuJoCo 3.4.0 does it.

MuJoCo's reader (src/xml/xml_native_reader.cc) parses each ``<model file>`` into a
child spec (named by the element's ``name``, else the child's model name), and on
``<attach model body prefix>`` (parsed with the rest of ``<worldbody>``, after every
other section) calls ``mjs_attach`` (src/user/user_api.cc, ``mjCFrame::operator+=``
and ``mjCBody::operator+=`` in src/user/user_objects.cc, ``mjCModel::operator+=`` in
src/user/user_model.cc). Without ``body`` the child's whole world is attached, as a
frame holding its bodies, geoms, sites, cameras and lights. The copy:

- puts ``prefix`` in front of every name and of the references the copied elements
  hold (geom/site material, geom mesh/hfield, camera/light target, light texture,
  material textures); element values were resolved from the child's default classes
  when the child was parsed, and the child's whole default tree is added to the
  parent with prefixed class names (``main`` becoming ``prefix + "main"``; here the
  copies name classes unique to their attach, so that a class of the parent with the
  same name cannot change them);
- appends every mesh, height field, texture, material, numeric and text of the child
  (assets named after their file when unnamed, then prefixed), compiled with the
  child's own directories;
- appends the child's pairs, excludes, tendons, equalities, actuators, sensors and
  tuples whose prefixed references resolve in the parent at that moment (each kind's
  ResolveReferences, as for ``<replicate>``): done with the replicate bookkeeping of
  ``replicate.py``, which meets the attached subtree where the reader meets it;
- makes the child's keyframes pending keyframes of the parent, named with the prefix,
  created after the parent's own. Their values live on the elements (SaveState writes
  them into every joint, mocap body and actuator of the child; a copy takes what its
  source carries and the source forgets it): an element left out by one attach keeps
  that attach's values and hands them to the next attach of the same child, only the
  first <replicate> copy of an element gets them, and a <replicate>'s deletion of its
  template makes every actuator forget its values. ``act`` is split by the child's
  actuators' activation counts (the child compiled once to know them). Entries no
  element carries take qpos0, the body pose or zero.

``expand_attachments(spec)`` rewrites a Spec into one without ``<model>``/``<attach>``:
the attached elements sit in the body tree where the ``<attach>`` was, renamed and
each given its (prefixed) default class explicitly; asset files are resolved with the
child's directories here. Where the child's ``<compiler>`` settings for angles, Euler
sequence, limits or inertia differ from the parent's (MuJoCo compiles each element
with its own model's), the subtree sits in an identity ``<frame>`` carrying them
(``attach_compiler``, read by the tree builder) and the copied tendons and actuators
carry them too (``element_ctx``). A child's own ``<replicate>``s stay in the copied
tree (the tree builder makes the copies, names prefixed then suffixed, as the child's
replication then the attach name them; replicate.py only counts their names), and
its section elements are taken as its replication leaves them. A child's own
``<model>``/``<attach>`` are made first, as MuJoCo's reader makes them when it parses
the child (the attached names prefixed twice, each subtree with its own model's
``<compiler>``, its assets from its own model's directories). The child's
``<asset><skin>``s are appended after the model's own skins, their bones' bodies
prefixed (their names and materials are not, as in MuJoCo). Refused with
NotImplementedError: a child holding <composite>, <flexcomp>, a body <plugin>,
<deformable> or <extension>, keyframes together with a <replicate>; a child whose own
attached models have keyframes (MuJoCo 3.4.0 warns that it names them wrongly); a
<replicate> ending after an attach of a model with keyframes in a model with keyframes
of its own (their order changes). A child's skins attached inside a <replicate>, and a
second attach inside a <replicate> of a body attached before, fail as MuJoCo 3.4.0
fails (unknown body; mismatched parents).

Elements after an <attach> take their default class as MuJoCo's reader gives it: one
without ``class`` the newest class of its body's or frame's class name (an attached
class of that name, e.g. the child's ``main`` after an attach with an empty prefix),
one with ``class`` the first class of that name (the model's own).

An <attach> whose prefixed body name is a body met before (attached before, or the
model's own) copies nothing: as MuJoCo's reader does (mjs_setFrame), it gives that
body the attach's frame in place of its own, the body keeping its place in the tree;
a body of another parent is MuJoCo's "mismatched parents" error.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ModelError, error_at
from ..io.resources import FILE_PROVIDER, VFS_PROVIDER, dir_part, is_abs, join_path
from ..spec.element import EXTRA_CHILDREN, element_class, new_element

# references (besides the name) that the copy prefixes, per body-tree element
_TREE_REFS = {"body": (), "frame": (), "replicate": (), "joint": (), "freejoint": (),
              "inertial": (),
              "geom": ("material", "mesh", "hfield"), "site": ("material",),
              "camera": ("target",), "light": ("target", "texture")}
# the same references inside default classes
_DEFAULT_REFS = {"geom": ("material", "mesh", "hfield"), "site": ("material",),
                 "camera": ("target",), "light": ("target", "texture"),
                 "material": ("texture",)}
_ASSET_FILES = {"mesh": ("file",), "hfield": ("file",),
                "texture": ("file", "fileright", "fileleft", "fileup", "filedown",
                            "filefront", "fileback")}
_CHILD_SECTIONS_REFUSED = ("deformable", "extension")
# compiler settings MuJoCo applies per element from the child's own <compiler>
_PER_ELEMENT_COMPILER = ("degree", "eulerseq", "autolimits", "inertiafromgeom",
                         "inertiagrouprange", "boundmass", "boundinertia", "balanceinertia",
                         "alignfree")
_NQ = {"free": 7, "ball": 4, "slide": 1, "hinge": 1}
_NV = {"free": 6, "ball": 3, "slide": 1, "hinge": 1}


def _where(el) -> str:
    return f"{el.xml_file or '<string>'}:{el.xml_line}"


@dataclass
class AttachedKey:
    """A keyframe of an attached child: made after the parent's own keyframes."""
    name: str
    time: float
    given: dict  # "qpos", "qvel", "ctrl", "mpos", "mquat" -> whether the child gave it


@dataclass
class _KeyState:
    """Values one attached joint, mocap body or actuator carries for pending keyframes
    (key name -> values). Copies of the element (<replicate>) share it; the first one
    compiled takes it, as MuJoCo moves the values to the first copy made."""
    values: dict = field(default_factory=dict)


class _Child:
    """A parsed ``<model>`` asset and what its elements were parsed with."""

    def __init__(self, spec, el):
        from .compile import _compiler_options
        from .defaults import DefaultTree
        self.refused = None  # (element, what) that an <attach> of this model refuses
        self.refused_error = None  # or the error its own attachments raised
        spec = self._expanded(spec)
        self.spec, self.el = spec, el
        for tag in _CHILD_SECTIONS_REFUSED:
            for section in spec.sections(tag):
                if section.children and self.refused is None:
                    self.refused = (section.children[0], f"<{tag}>")
        self.ctx = _compiler_options(spec)
        self.defaults = DefaultTree(spec)
        self.cls = {}  # id(element) -> its default class in the child
        self.has_replicate = False
        for wb in spec.sections("worldbody"):
            self._classes(wb, None)
        from .assets import AssetFiles
        self.files = AssetFiles(spec, self.ctx)
        self.state = {}  # id(element) -> key name -> values it carries (attach.py keys)
        self._key_elements = None
        self._resolved = None
        self._actdims = None

    def _expanded(self, spec):
        """The child with its own <attach>es made, as MuJoCo's reader makes them when
        it parses the child (mj_parse): an <attach> of it then copies the attached
        elements too, their names prefixed twice. What those attachments cannot do
        yet is raised when the child is attached, not when it is read."""
        models = [c for s in spec.sections("asset") for c in s.children if c.tag == "model"]
        attaches = _find_attach(spec.sections("worldbody"))
        if not models and attaches is None:
            return spec
        try:
            expanded = _Expansion(spec, models).run()
        except NotImplementedError as exc:
            self.refused_error = exc
            return spec
        if expanded.attached_keys:
            # the grandchild's keyframes are pending keyframes of the child: MuJoCo
            # 3.4.0 warns that it will not namespace them correctly, and names them
            # in the first attach only
            self.refused = (attaches, "keyframes of a model attached by <attach>")
        return expanded

    def resolved(self):
        """The child with its section elements as its replication and attachments
        leave them (made once: the keyframe values follow these elements)."""
        if self._resolved is None:
            from .replicate import expand_replicated_references
            self._resolved = expand_replicated_references(self.spec)
        return self._resolved

    def actdims(self) -> list:
        """The activation count of each of the child's actuators (in key_elements'
        order), as the child compiles them: its keyframes' act is split by them."""
        if self._actdims is None:
            from .compile import compile_spec
            self._actdims = compile_spec(self.spec).actuator_actnum.tolist()
        return self._actdims

    def key_elements(self):
        """(joints as (element, nq, nv), mocap bodies, actuators) in MuJoCo's order."""
        if self._key_elements is None:
            joints, mocaps = [], []
            for wb in self.spec.sections("worldbody"):
                self._key_walk(wb, joints, mocaps)
            # (with the actuators of the child's own <attach>es and <replicate>s)
            actuators = [el for s in self.resolved().sections("actuator")
                         for el in s.children]
            self._key_elements = joints, mocaps, actuators
        return self._key_elements

    def _key_walk(self, el, joints, mocaps):
        """The child's joints (element, nq, nv) and mocap bodies in MuJoCo's order: a
        body's joints (frames are transparent), then its child bodies', depth first."""
        from .attrs import Attrs
        if el.tag == "body" and Attrs(el).bool("mocap", 0):
            mocaps.append(el)
        bodies = []

        def collect(node):
            for c in node.children:
                if c.tag == "freejoint":
                    joints.append((c, 7, 6))
                elif c.tag == "joint":
                    jtype = c.get_attr("type") or self.defaults.get(
                        self.cls.get(id(c), "main"), "joint", c).get("type", "hinge")
                    if jtype not in _NQ:
                        raise error_at(c, f"unknown joint type '{jtype}'", "type")
                    joints.append((c, _NQ[jtype], _NV[jtype]))
                elif c.tag == "frame":
                    collect(c)
                elif c.tag == "body":
                    bodies.append(c)

        collect(el)
        for b in bodies:
            self._key_walk(b, joints, mocaps)

    def check_attachable(self, attach_el):
        if self.has_replicate and self.refused is None:
            keys = [k for s in self.spec.sections("keyframe") for k in s.children]
            if keys:
                # its own <replicate> makes the child's keyframes pending in the child
                self.refused = (keys[0], "<keyframe> with <replicate>")
        if self.refused_error is not None:
            raise NotImplementedError(f"{self.refused_error} (in a model used by <attach> "
                                      f"at {_where(attach_el)})")
        if self.refused is not None:
            el, what = self.refused
            raise NotImplementedError(f"{_where(el)}: {what} in a model used by <attach> "
                                      f"({_where(attach_el)}) is not supported yet")

    def _classes(self, el, childclass):
        for c in el.children:
            if c.tag in ("composite", "flexcomp", "plugin") and self.refused is None:
                self.refused = (c, f"<{c.tag}>")
            if c.tag == "replicate" and not c.__dict__.get("attached_replicate"):
                self.has_replicate = True  # (its own: an attached model's was made there)
            own = c.get_attr("class")
            self.cls[id(c)] = own if own is not None else (childclass or "main")
            if c.tag in ("body", "frame", "replicate"):
                self._classes(c, c.get_attr("childclass") or childclass)

    def compiler_overrides(self, parent_ctx) -> dict:
        """The child's per-element compiler settings that differ from the parent's."""
        return {key: getattr(self.ctx, key) for key in _PER_ELEMENT_COMPILER
                if getattr(self.ctx, key) != getattr(parent_ctx, key)}


def element_ctx(el, ctx):
    """The compiler settings ``el`` compiles with: an attached element keeps its
    model's (MuJoCo: each element's own ``compiler``)."""
    own = el.__dict__.get("attach_compiler") if el is not None else None
    return replace(ctx, **own) if own else ctx


def _new_frame(el, children, compiler: dict):
    """An identity <frame> made for ``el`` (an <attach>) around ``children``, whose
    elements compile with the <compiler> settings ``compiler`` (tree.py)."""
    cls = element_class(("mujoco", "worldbody", "frame"), EXTRA_CHILDREN["frame"]["attrs"])
    frame = new_element(cls, el.xml_file, el.xml_line)
    frame.__dict__["xml_incdir"] = getattr(el, "xml_incdir", "")
    frame.__dict__["attach_compiler"] = compiler
    frame.children = children
    return frame


def _enclosing_elements(spec, target) -> list:
    """The elements of ``spec``'s body tree that enclose ``target``, outermost first
    (below the worldbody)."""
    def path(el):
        if el is target:
            return []
        for c in el.children:
            found = path(c)
            if found is not None:
                return [c] + found
        return None

    for wb in spec.sections("worldbody"):
        found = path(wb)
        if found is not None:
            return found[:-1]
    return []


def _enclosing_compilers(spec, target) -> list:
    """The ``attach_compiler`` settings of the elements enclosing ``target``, outermost
    first (frames made by the child's own <attach>)."""
    return [own for own in (e.__dict__.get("attach_compiler")
                            for e in _enclosing_elements(spec, target)) if own]


def _replace_child(holder, old, new) -> None:
    """Put ``new`` in place of the child ``old`` (by identity) of ``holder``."""
    for i, c in enumerate(holder.children):
        if c is old:
            holder.children[i] = new
            return
    raise ValueError("not a child")  # (a bug: callers pass what they put there)


def _find_attach(elements):
    """The first <attach> among the elements and their descendants, or None."""
    stack = list(reversed(elements))
    while stack:
        el = stack.pop()
        if el.tag == "attach":
            return el
        stack.extend(reversed(el.children))
    return None


def _has_attach(elements) -> bool:
    return _find_attach(elements) is not None


def expand_attachments(spec):
    """``spec`` itself when it has no ``<model>`` asset or ``<attach>``; otherwise a
    copy with the attachments made (see the module docstring). ``spec`` is not
    changed; the copy has ``attached_defaults`` (class -> tag -> attributes) and
    ``attached_keys`` (AttachedKey list)."""
    models = [c for s in spec.sections("asset") for c in s.children if c.tag == "model"]
    worlds = spec.sections("worldbody")
    if not models and not _has_attach(worlds):
        return spec
    return _Expansion(spec, models).run()


class _Expansion:
    def __init__(self, spec, models):
        from .compile import _compiler_options
        self.spec = spec
        self.ctx = _compiler_options(spec)
        self.children = {}
        for el in models:
            child = _load_child(spec, el)
            self.children[el.attr("name") or child.spec.model_name] = child
        self.defaults = {}
        self.actuator_defaults = {}
        self.keys = []
        self.assets = []
        self.skins = []  # the children's <skin>s, appended as MuJoCo appends them
        self.in_replicate = 0
        self.custom = []
        self.attached_names = set()
        # attached root bodies by name: [the element holding it, what it holds in its
        # place (it, or the frames of a move), the body, the body or worldbody the
        # attach was in, the <compiler> settings it compiles with] (see _move)
        self.attached_roots = {}
        self.path = []  # the elements being rewritten, outermost first
        # the model's own bodies by name, found where an <attach> may move them:
        # [element holding them, the frames and body down from it, their body]
        self.own_bodies = {}
        self.own_keys = any(s.children for s in spec.sections("keyframe"))
        # class name -> the newest attached class of that name, which MuJoCo gives the
        # later elements that take the class from their body or frame (_reclass)
        self.implicit = {}

    def run(self):
        spec = self.spec
        root = copy.copy(spec.root)
        children = []
        for section in spec.root.children:
            if section.tag == "worldbody":
                section = self._rewrite(section)
            elif section.tag == "asset":
                section = copy.copy(section)
                section.children = [c for c in section.children if c.tag != "model"]
            children.append(section)
        root.children = children
        if self.assets:
            _last_section(root, "asset").children.extend(self.assets)
        if self.custom:
            _last_section(root, "custom").children.extend(self.custom)
        if self.skins:  # (after the model's own skins: see compiler/skin.py)
            _last_section(root, "deformable").children.extend(self.skins)
        out = copy.copy(spec)
        out.root = root
        out.attached_defaults = self.defaults
        out.attached_actuator_defaults = self.actuator_defaults
        out.attached_keys = self.keys
        out.has_attach = True
        return out

    # -- the body tree ---------------------------------------------------------------
    def _rewrite(self, el, cls="main"):
        """``el`` with its <attach>es made (a copy when anything inside changes).
        ``cls``: the default class ``el``'s container gives elements without one."""
        if not self.implicit and not _has_attach([el]):
            return el
        if el.tag not in ("worldbody", "body", "frame", "replicate"):
            return self._reclass(el, cls)
        inner = el.get_attr("childclass") or cls
        new = copy.copy(el)
        new.children = []
        self.in_replicate += el.tag == "replicate"
        self.path.append(el)
        for c in el.children:
            if c.tag == "attach":
                top = self._attach(c, new)
                if top is not None:
                    new.children.append(top)
                continue
            rc = self._rewrite(c, inner)
            new.children.append(rc)
            if not self.in_replicate and rc.tag in ("body", "frame"):
                self._register(new, rc)
        self.path.pop()
        self.in_replicate -= el.tag == "replicate"
        if el.tag == "replicate" and self.keys and self.own_keys:
            # the template's deletion makes the model's own keyframes pending too,
            # after the attached ones
            raise NotImplementedError(
                f"{_where(el)}: <replicate> ending after an <attach> of a model with "
                f"keyframes, in a model with its own <keyframe>s, is not supported yet")
        return new

    def _register(self, container, child) -> None:
        """The model's own bodies reachable from ``child`` (just put in ``container``)
        through frames: an <attach> naming one later in the same body moves it."""
        parent, _ = self._enclosing()

        def walk(node, path):
            if "attach_compiler" in node.__dict__:
                return  # (what an <attach> made: _attach registers its roots)
            if node.tag == "body":
                if node.get_attr("name"):
                    self.own_bodies[node.get_attr("name")] = [container, path + [node],
                                                              parent]
            elif node.tag == "frame":
                for c in node.children:
                    walk(c, path + [node])

        walk(child, [])

    def _own_to_move(self, name: str) -> None:
        """Make a registered own body movable as an attached root (_move): the frames
        between its container and it are copied (they may be the spec's own)."""
        container, path, parent = self.own_bodies.pop(name)
        holder = container
        for f in path[:-1]:
            fc = copy.copy(f)
            fc.children = list(f.children)
            _replace_child(holder, f, fc)
            holder = fc
        self.attached_roots[name] = [holder, path[-1], path[-1], parent, {}]

    def _before(self, a, b) -> bool:
        """Whether element ``a`` comes before ``b`` in the body tree (document order:
        what MuJoCo's reader has met when it reads ``b``)."""
        for wb in self.spec.sections("worldbody"):
            for node in wb.iter():
                if node is a or node is b:
                    return node is a
        return False

    def _reclass(self, el, cls: str):
        """An element after an <attach> that brought a class named ``cls``: MuJoCo's
        reader gives an element without ``class`` the newest class of its container's
        class name (``def_map``: the attached one), and one with ``class`` the first
        class of that name (``FindDefault``: the model's own, as here)."""
        attached = self.implicit.get(cls)
        if attached is None or "class" not in el._fields_of or el.get_attr("class"):
            return el
        new = copy.copy(el)
        new.set("class", attached)
        return new

    def _enclosing(self):
        """(the body or worldbody the element being rewritten is in, the <frame>s
        between them, outermost first)."""
        for i in range(len(self.path) - 1, -1, -1):
            if self.path[i].tag in ("body", "worldbody"):
                return self.path[i], self.path[i + 1:]
        return None, []

    def _move(self, el, name: str) -> None:
        """<attach> of a body attached before: MuJoCo (mjs_setFrame) gives that body
        the frame of this <attach> (its enclosing <frame>s, or an identity frame), in
        place of the one it had; the body keeps its place in the tree."""
        container, current, moved, parent, own = self.attached_roots[name]
        body, frames = self._enclosing()
        if body is not parent:
            raise error_at(el, f"Frame and body '{name}' have mismatched parents")
        if any(f.tag != "frame" for f in frames):
            # MuJoCo 3.4.0 gives a <replicate>'s copies parents of their own
            raise error_at(el, f"Frame and body '{name}' have mismatched parents")
        # an identity frame with the body's own <compiler>, inside copies of this
        # attach's frames, inside a frame that drops the frames around the old place
        # and compiles the new ones with this model's <compiler>
        inner = [_new_frame(el, [moved], own)]
        for f in reversed(frames):
            c = copy.copy(f)
            c.children = inner
            if c.get_attr("childclass"):  # (poses only: the body keeps its classes)
                c.set("childclass", None)
            inner = [c]
        mine = {k: getattr(self.ctx, k) for k in _PER_ELEMENT_COMPILER}
        outer = _new_frame(el, inner, mine)
        outer.__dict__["attach_reset_frame"] = True
        _replace_child(container, current, outer)
        self.attached_roots[name][1] = outer

    def _attach(self, el, container):
        model = el.get_attr("model")
        prefix = el.get_attr("prefix")
        if model is None:
            raise error_at(el, "missing required attribute", "model")
        if prefix is None:
            raise error_at(el, "missing required attribute", "prefix")
        bodyname = el.get_attr("body") or ""
        # a body of that name already: MuJoCo's reader gives it this frame (the model is
        # not looked at)
        if prefix + bodyname in self.attached_roots and bodyname:
            self._move(el, prefix + bodyname)
            return None
        if prefix + bodyname in self.attached_names and bodyname:
            # (a body inside an attached subtree: its parent is not here)
            raise error_at(el, f"Frame and body '{prefix + bodyname}' have mismatched "
                               f"parents")
        if bodyname and prefix + bodyname in self.own_bodies:
            self._own_to_move(prefix + bodyname)  # (a body of the model itself)
            self._move(el, prefix + bodyname)
            return None
        own_body = self.spec.find("body", prefix + bodyname) if bodyname else None
        if (own_body is not None and self._before(own_body, el)
                and all(e.tag != "replicate"
                        for e in _enclosing_elements(self.spec, own_body))):
            # defined before (MuJoCo's reader finds it), but not in this body (a
            # replicated body has its copies' names: not found, the model is attached)
            raise error_at(el, f"Frame and body '{prefix + bodyname}' have mismatched "
                               f"parents")
        child = self.children.get(model)
        if child is None:
            raise error_at(el, f"could not find model '{model}'", "model")
        child.check_attachable(el)
        own = child.compiler_overrides(self.ctx)
        if bodyname:
            src = child.spec.find("body", bodyname)
            if src is None:
                raise error_at(el, f"could not find body '{bodyname}'", "body")
            roots = [src]
            # a body the child attached itself keeps its own model's <compiler>
            for frame_own in _enclosing_compilers(child.spec, src):
                own = {**own, **frame_own}
        else:
            roots = [c for w in child.spec.sections("worldbody") for c in w.children]
        copier = _Copier(child, prefix, el, own)
        copier.parent_strippath = self.ctx.strippath
        copies = [copier.tree(r) for r in roots]
        if bodyname and not own:
            top = copies[0]
        else:  # the child's world frame, or a frame that gives the child's <compiler>
            top = _new_frame(el, copies, own)
        self.attached_names |= copier.body_names
        if not self.in_replicate:
            body, _ = self._enclosing()
            for c in copies:
                if c.tag == "body" and c.get_attr("name"):
                    holder = container if c is top else top
                    self.attached_roots[c.get_attr("name")] = [holder, c, c, body, own]
        # the section elements: defaults, assets, custom now; the rest resolved where
        # the reader meets the subtree (replicate.expand_replicated_references)
        for name, table in copier.default_tables().items():
            self.defaults.setdefault(name, table)
        for name in child.defaults.classes:
            self.implicit[prefix + name] = copier.cname(name)  # (see _reclass)
        from .actuator import default_actuators
        for name, st in default_actuators(child.spec).items():
            self.actuator_defaults[copier.cname(name)] = st
            self.actuator_defaults.setdefault(prefix + name, st)
        self.assets += copier.assets()
        # (inside a <replicate> the skins' bones still name the bodies without the
        # copies' suffixes: "unknown body" when the skins are compiled, as in MuJoCo)
        self.skins += copier.skins()
        self.custom += copier.custom()
        top.__dict__["attach_items"] = ((prefix, ""), copier.items(), copier.attached)
        self.keys += copier.keys()
        return top


def _last_section(root, tag):
    """The last <tag> section of ``root`` (a copy, placed where it was), made when
    there is none."""
    for i in range(len(root.children) - 1, -1, -1):
        if root.children[i].tag == tag:
            sec = copy.copy(root.children[i])
            sec.children = list(sec.children)
            root.children[i] = sec
            return sec
    children = root.children
    root.children = list(children)
    sec = root.add(tag)
    return sec


def _load_child(spec, el):
    from ..spec.parse import parse_xml
    file = el.get_attr("file")
    if not file:
        raise error_at(el, "missing required attribute", "file")
    content_type = el.get_attr("content_type")
    if content_type and content_type not in ("text/xml", "application/xml"):
        raise NotImplementedError(f"{_where(el)}: <model content_type=\"{content_type}\"> "
                                  f"is not supported yet")
    reader = spec.reader()
    incdir = getattr(el, "xml_incdir", "") or ""
    if incdir and not is_abs(file) and not reader.exists(file):
        # MuJoCo's ReadAttrFile: a name that does not open as written (from the working
        # directory) is taken relative to the including file's directory
        file = join_path(incdir, file)
    try:
        res, tried = reader.open(file)
    except ModelError as exc:  # an ambiguous assets-dict name, a provider failing
        raise ModelError(f"could not parse model file with error: {exc.detail}",
                         file=el.xml_file, line=el.xml_line, element="model",
                         attribute="file") from exc.__cause__
    if res is None:
        raise ModelError(f"could not parse model file with error: resource '{file}' not "
                         f"found; tried: {'; '.join(tried)}", file=el.xml_file,
                         line=el.xml_line, element="model", attribute="file")
    name = res.name if is_abs(res.name) else join_path(reader.modeldir, res.name)
    if res.provider in (FILE_PROVIDER, VFS_PROVIDER):
        basedir = dir_part(name) if is_abs(name) else (reader.modeldir or None)
    else:  # a provider's resource: its names start from the provider's directory
        basedir = res.dir
    try:
        child = parse_xml(res.content, filename=name, assets=spec.assets, basedir=basedir)
    except ModelError as exc:
        raise ModelError(f"could not parse model file with error: {exc}",
                         file=el.xml_file, line=el.xml_line, element="model",
                         attribute="file") from None
    return _Child(child, el)


class _Copier:
    """Copies of one child's elements for one <attach>, names prefixed."""

    def __init__(self, child: _Child, prefix: str, attach_el, compiler: dict):
        self.child, self.p, self.attach_el = child, prefix, attach_el
        self.compiler = compiler  # the child's own compiler settings, where they differ
        self.parent_strippath = False  # (the parent's <compiler strippath>)
        self.tag = f" (attached at {_where(attach_el)})"
        self.body_names = set()
        self.tree_copies = []  # (copy, id of the child's element): joints and bodies
        self.key_names = []  # the child's keyframes, (prefixed name, values)

    def _pre(self, value):
        return self.p + value if value else value

    def cls(self, el, own_default="main"):
        """The prefixed default class an element was parsed with."""
        c = self.child.cls.get(id(el))
        if c is None:
            c = el.get_attr("class") or own_default
        return self.cname(c)

    def cname(self, c: str) -> str:
        """The name a child's default class has here: the prefixed name made unique to
        this attach (values were resolved in the child, whatever the parent's classes
        are; ``prefix + "main"`` with an empty prefix is the parent's own main)."""
        return f"{self.p}{c}{self.tag}"

    def tree(self, el):
        new = copy.copy(el)
        refs = _TREE_REFS.get(el.tag)
        if refs is None:
            raise NotImplementedError(f"{_where(el)}: <{el.tag}> in a model used by "
                                      f"<attach> ({_where(self.attach_el)}) is not "
                                      f"supported yet")
        for attr in ("name",) + refs:
            if el.get_attr(attr):
                new.set(attr, self.p + el.get_attr(attr))
        if "class" in el._fields_of:
            new.set("class", self.cls(el))
        if el.get_attr("childclass"):
            new.set("childclass", self.cname(el.get_attr("childclass")))
        if el.tag == "replicate":  # replicated in the child: its copies' names only
            new.__dict__["attached_replicate"] = True
        # a frame of the child's own <attach>: its items come with the child's (items)
        new.__dict__.pop("attach_items", None)
        if el.tag == "body" and el.get_attr("name"):
            self.body_names.add(self.p + el.get_attr("name"))
        if el.tag in ("joint", "freejoint", "body"):
            self.tree_copies.append((new, id(el)))
        new.children = [self.tree(c) for c in el.children]
        return new

    def default_tables(self) -> dict:
        out = {}
        for name, tables in self.child.defaults.classes.items():
            new = {}
            for tag, attrs in tables.items():
                attrs = dict(attrs)
                for ref in _DEFAULT_REFS.get(tag, ()):
                    if attrs.get(ref):
                        attrs[ref] = self.p + attrs[ref]
                new[tag] = attrs
            out[self.cname(name)] = new
            out.setdefault(self.p + name, new)  # (what later elements may name)
        return out

    def assets(self) -> list:
        from .assets import AssetCompiler
        out = []
        for section in self.child.spec.sections("asset"):
            for el in section.children:
                if el.tag == "skin":  # (skins)
                    continue
                new = copy.copy(el)
                name = AssetCompiler._name(el, el.tag) if el.tag != "material" else \
                    (el.get_attr("name") or "")
                if name:
                    new.set("name", self.p + name)
                if "class" in el._fields_of:
                    new.set("class", self.cls(el))
                for attr in _ASSET_FILES.get(el.tag, ()):
                    value = el.get_attr(attr)
                    if value:
                        self._set_file(el, new, attr, el.tag)
                if el.tag == "material":
                    if el.get_attr("texture"):
                        new.set("texture", self.p + el.get_attr("texture"))
                    new.children = self._prefixed_children(el, "texture")
                out.append(new)
        return out

    def skins(self) -> list:
        """The child's <asset><skin>s as MuJoCo 3.4.0 attaches them: the bones' bodies
        prefixed, the skin's own name and material not (so a child skin with a
        material is refused as MuJoCo refuses it), the bones of a SKN file read later
        by their names in the file; marked ``attached_skin``."""
        out = []
        for section in self.child.spec.sections("asset"):
            for el in section.children:
                if el.tag != "skin":
                    continue
                new = copy.copy(el)
                if el.get_attr("file"):
                    self._set_file(el, new, "file", "skin")
                    if not el.get_attr("name"):  # (named after the file as written)
                        from .skin import skin_name
                        new.set("name", skin_name(el))
                new.children = self._prefixed_children(el, "body")
                new.__dict__["attached_skin"] = True
                out.append(new)
        return out

    def _prefixed_children(self, el, attr: str) -> list:
        """Copies of ``el``'s children with attribute ``attr`` (a reference) prefixed."""
        out = []
        for child in el.children:
            c = copy.copy(child)
            if child.get_attr(attr):
                c.set(attr, self.p + child.get_attr(attr))
            out.append(c)
        return out

    def _set_file(self, el, new, attr: str, kind: str) -> None:
        """``new``'s file attribute: the child's file as the parent must open it, and
        (``file``) the name kept for ``paths``. Found with the child's directories (an
        asset the child took from a model it attached: with that model's), stripped
        with the parent's ``strippath`` (MuJoCo compiles the asset in the parent: the
        child's own setting does not apply)."""
        sources = dict(el.__dict__.get("attach_file_sources", {}))
        files, orig, value = sources.setdefault(attr, (self.child.files, el,
                                                       el.get_attr(attr)))
        name, _ = files.name(orig, value, kind, strippath=self.parent_strippath)
        if not is_abs(name):
            name = join_path(files.reader.modeldir, name)
        new.set(attr, name)
        new.__dict__["attach_file_sources"] = sources  # (assets.py: found already)
        if attr == "file":
            new.__dict__["xml_stored_file"] = files.stored(orig, value, kind,
                                                           strippath=self.parent_strippath)

    def custom(self) -> list:
        out = []
        for section in self.child.spec.sections("custom"):
            for el in section.children:
                if el.tag in ("numeric", "text"):
                    new = copy.copy(el)
                    if el.get_attr("name"):
                        new.set("name", self.p + el.get_attr("name"))
                    out.append(new)
        return out

    def items(self) -> dict:
        """The child's pairs ... tuples as replicate bookkeeping items, not yet
        resolved (their references still the child's)."""
        from .replicate import _items
        out = _items(self.child.resolved())
        for kind, items in out.items():
            for item in items:
                el = item.el
                new = copy.copy(el)
                if "class" in el._fields_of:
                    new.set("class", self.cname(el.get_attr("class") or "main"))
                if el.children:
                    new.children = [copy.copy(c) for c in el.children]
                if kind == "actuator":
                    new.__dict__["attach_source"] = id(el)
                inner = el.__dict__.get("attach_compiler")  # (attached into the child)
                if self.compiler or inner:
                    new.__dict__["attach_compiler"] = {**self.compiler, **(inner or {})}
                item.el = new
        return out

    # -- keyframes -----------------------------------------------------------------------
    def keys(self) -> list:
        """The child's keyframes as pending keyframes of the parent (StoreKeyframes:
        checked against the child's sizes, named with the prefix)."""
        from .attrs import Attrs
        child = self.child
        keys = [k for s in child.spec.sections("keyframe") for k in s.children]
        if not keys:
            return []
        joints, mocaps, actuators = child.key_elements()
        sizes = {"qpos": sum(n for _, n, _ in joints), "qvel": sum(n for _, _, n in joints),
                 "ctrl": len(actuators), "mpos": 3 * len(mocaps), "mquat": 4 * len(mocaps)}
        if any(Attrs(k).floats("act") is not None for k in keys):
            sizes["act"] = sum(child.actdims())
        out = []
        for k in keys:
            a = Attrs(k)
            name = k.get_attr("name") or ""
            vals = {}
            for attr, n in sizes.items():
                v = a.floats(attr)
                if v is None:
                    continue
                if len(v) != n:
                    raise error_at(k, f"Keyframe '{name}' has invalid {attr} size, got "
                                      f"{len(v)}, should be {n}", attr)
                vals[attr] = np.asarray(v, dtype=np.float64)
            self.key_names.append((self.p + name, vals))
            out.append(AttachedKey(self.p + name, a.float("time", 0.0),
                                   {attr: attr in vals for attr in (*sizes, "act")}))
        return out

    def attached(self, actuator_copies) -> None:
        """When the subtree is in and the actuators copied (replicate.py calls it, in
        the reader's order): the child's elements take this attach's keyframe values
        (SaveState, into every element of the child), then the copies take what their
        sources carry and the sources forget it (ForgetKeyframes). Elements left out
        keep theirs, for a later attach of the same child."""
        child = self.child
        if self.key_names:
            joints, mocaps, actuators = child.key_elements()
            for full, vals in self.key_names:
                qa = va = 0
                for el, nqj, nvj in joints:
                    entry = child.state.setdefault(id(el), {}).setdefault(full, {})
                    if "qpos" in vals:
                        entry["qpos"] = vals["qpos"][qa:qa + nqj]
                    if "qvel" in vals:
                        entry["qvel"] = vals["qvel"][va:va + nvj]
                    qa, va = qa + nqj, va + nvj
                for i, el in enumerate(mocaps):
                    entry = child.state.setdefault(id(el), {}).setdefault(full, {})
                    if "mpos" in vals:
                        entry["mpos"] = vals["mpos"][3 * i:3 * i + 3]
                    if "mquat" in vals:
                        entry["mquat"] = vals["mquat"][4 * i:4 * i + 4]
                actdims = child.actdims() if "act" in vals else [0] * len(actuators)
                actadr = 0
                for i, el in enumerate(actuators):
                    if "ctrl" in vals:
                        entry = child.state.setdefault(id(el), {}).setdefault(full, {})
                        entry["ctrl"] = vals["ctrl"][i]
                    if actdims[i]:
                        entry = child.state.setdefault(id(el), {}).setdefault(full, {})
                        entry["act"] = vals["act"][actadr:actadr + actdims[i]]
                    actadr += actdims[i]
        copies = list(self.tree_copies) + [(el, el.__dict__["attach_source"])
                                           for el in actuator_copies]
        for new, source in copies:
            values = child.state.pop(source, None)
            if values:
                new.__dict__["attach_key_state"] = _KeyState(values)

def fill_attached_keys(keys, builder, out, row0: int) -> None:
    """Rows ``row0 ...`` of the key arrays from attached keyframes (MuJoCo's
    ResolveKeyframes): entries the attached elements carry, defaults elsewhere."""
    if not keys:
        return
    claimed = set()

    def take(el):
        state = el.__dict__.get("attach_key_state") if el is not None else None
        if state is None or id(state) in claimed:
            return None
        claimed.add(id(state))
        return state.values

    joint_vals = []
    for b in builder.bodies:
        for j in b.joints:
            joint_vals.append(take(j.el))
    body_vals = [take(b.el) if b.mocap else None for b in builder.bodies]
    act_vals = [take(el) for el in out.actuator_els]
    qposadr, dofadr = out.jnt_qposadr, out.jnt_dofadr
    mocapid = out.body_mocapid
    for r, key in enumerate(keys):
        i = row0 + r
        out.key_time[i] = key.time
        for jid, vals in enumerate(joint_vals):
            entry = (vals or {}).get(key.name)
            if not entry:
                continue
            if key.given["qpos"] and "qpos" in entry:
                q = entry["qpos"]
                out.key_qpos[i, qposadr[jid]:qposadr[jid] + len(q)] = q
            if key.given["qvel"] and "qvel" in entry:
                v = entry["qvel"]
                out.key_qvel[i, dofadr[jid]:dofadr[jid] + len(v)] = v
        for bid, vals in enumerate(body_vals):
            entry = (vals or {}).get(key.name)
            if not entry or mocapid[bid] < 0:
                continue
            if key.given["mpos"] and "mpos" in entry:
                out.key_mpos[i, mocapid[bid]] = entry["mpos"]
            if key.given["mquat"] and "mquat" in entry:
                out.key_mquat[i, mocapid[bid]] = entry["mquat"]
        for aid, vals in enumerate(act_vals):
            entry = (vals or {}).get(key.name)
            if entry and key.given["ctrl"] and "ctrl" in entry:
                out.key_ctrl[i, aid] = entry["ctrl"]
            if entry and key.given["act"] and "act" in entry:
                adr = out.actuator_actadr[aid]
                out.key_act[i, adr:adr + len(entry["act"])] = entry["act"]


__all__ = ["expand_attachments", "fill_attached_keys", "AttachedKey"]
