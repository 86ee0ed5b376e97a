"""URDF -> MJCF, as MuJoCo 3.4.0 reads a ``<robot>`` file (mj_loadXML's URDF parser).

The URDF tree becomes the MJCF tree MuJoCo's parser would build with its spec API, so
that tiphys's MJCF compiler then compiles the same model:

- compiler defaults for URDF: strippath, fusestatic and discardvisual on (a
  ``<mujoco><compiler>`` inside the URDF may change them; ``<option>`` and ``<size>``
  there are read too); angles in radians, origins' rpy as extrinsic X-Y-Z Euler angles;
- links become bodies, nested by the joints (each link one parent; the links without
  one are children of the world, in file order; a link named ``world`` is the world);
  a body sits at its joint's origin; ``<inertial>`` gives mass, centre (origin) and the
  full inertia (all zero: diagonal zeros and the origin's orientation);
- joints: revolute and continuous -> hinge, prismatic -> slide, floating -> free,
  spherical -> ball, planar -> slide + slide + hinge (``_TX``, ``_TY``, ``_RZ``), fixed
  -> none; ``<dynamics>`` damping and friction (frictionloss), ``<limit>`` lower/upper
  as the range (not limited when only one is given or lower > upper), effort as the
  actuator force range;
- ``<collision>`` -> colliding geoms, ``<visual>`` (kept only with discardvisual off)
  -> geoms of group 1 that neither collide nor weigh; box / cylinder / sphere /
  capsule / mesh, MuJoCo's half-sizes; a material colour (inline or a named
  ``<material>`` anywhere in the file) colours that geom and the following ones of
  the link, as in MuJoCo; meshes are assets named after their file (stripped of
  directories with strippath), one per file and scale.
Errors name the URDF file, line and element, with MuJoCo's messages.
"""
from __future__ import annotations

import warnings

from lxml import etree

from ..errors import ModelError

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar",
               "spherical")
TRUE = ("true", "1")


def _num(x: float) -> str:
    return repr(float(x))


def _strippath(name: str) -> str:
    cut = max(name.rfind("/"), name.rfind("\\"))
    return name[cut + 1:] if cut >= 0 else name


def _stripext(name: str) -> str:
    dot = name.rfind(".")
    return name[:dot] if dot >= 0 else name


class _Urdf:
    def __init__(self, root, label):
        self.root = root
        self.label = label
        self.materials = {}  # name -> rgba text, the first definition with a colour
        self.meshes = {}  # mesh name -> [(scale, asset name)]
        self.mesh_assets = []
        self.geom_names = set()

    def error(self, el, msg):
        return ModelError(msg, file=self.label, line=getattr(el, "sourceline", None),
                          element=el.tag if el is not None else None)

    def floats(self, el, attr, n, default=None, required=False):
        text = el.get(attr)
        if text is None:
            if required:
                raise self.error(el, f"required attribute missing: '{attr}'")
            return default
        parts = text.split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise self.error(el, f"bad format in attribute '{attr}'") from None
        if len(values) != n:
            raise self.error(el, f"bad format in attribute '{attr}'")
        return values

    def sub(self, el, tag, required=False):
        """The one <tag> child of el (MuJoCo refuses a repeated one)."""
        found = [c for c in el if c.tag == tag]
        if len(found) > 1:
            raise self.error(found[1], f"repeated element: '{tag}'")
        if found:
            return found[0]
        if required:
            raise self.error(el, f"required sub-element missing: '{tag}'")
        return None

    def text(self, el, attr, required=False):
        v = el.get(attr)
        if v is None and required:
            raise self.error(el, f"required attribute missing: '{attr}'")
        return v

    def origin(self, el, node):
        """pos / euler of ``node`` from el's <origin> (none: the identity)."""
        o = self.sub(el, "origin")
        if o is None:
            return
        xyz = self.floats(o, "xyz", 3)
        if xyz is not None:
            node.set("pos", " ".join(_num(v) for v in xyz))
        rpy = self.floats(o, "rpy", 3)
        if rpy is not None:
            node.set("euler", " ".join(_num(v) for v in rpy))

    # -- materials --------------------------------------------------------------
    def find_materials(self, el):
        if el.tag == "material":
            name = el.get("name")
            if name and name not in self.materials:
                color = self.sub(el, "color")
                if color is not None:
                    self.floats(color, "rgba", 4, required=True)
                    self.materials[name] = color.get("rgba")
        for c in el:
            if isinstance(c.tag, str):
                self.find_materials(c)

    # -- geoms ------------------------------------------------------------------
    def geom(self, el, body, collision, rgba, strippath):
        geometry = self.sub(el, "geometry", required=True)
        g = etree.SubElement(body, "geom")
        g.sourceline = el.sourceline
        if collision:
            g.set("contype", "1")
            g.set("conaffinity", "1")
        else:
            g.set("contype", "0")
            g.set("conaffinity", "0")
            g.set("group", "1")
            g.set("density", "0")
        shape = None
        for kind in ("box", "cylinder", "sphere", "capsule", "mesh"):
            shape = self.sub(geometry, kind)
            if shape is not None:
                break
        if shape is None:
            raise self.error(geometry, "visual geometry specification not found")
        if kind == "box":
            size = self.floats(shape, "size", 3, required=True)
            g.set("type", "box")
            g.set("size", " ".join(_num(v / 2) for v in size))
        elif kind in ("cylinder", "capsule"):
            r = self.floats(shape, "radius", 1, required=True)[0]
            length = self.floats(shape, "length", 1, required=True)[0]
            g.set("type", kind)
            g.set("size", f"{_num(r)} {_num(length / 2)}")
        elif kind == "sphere":
            g.set("type", "sphere")
            g.set("size", _num(self.floats(shape, "radius", 1, required=True)[0]))
        else:
            g.set("type", "mesh")
            g.set("mesh", self.mesh(shape, strippath))
        if rgba is not None:
            g.set("rgba", rgba)
        self.origin(el, g)
        return g

    def mesh(self, el, strippath):
        file = self.text(el, "filename", required=True)
        scale = tuple(self.floats(el, "scale", 3, default=[1.0, 1.0, 1.0]))
        if strippath:
            file = _strippath(file)
        name = _stripext(_strippath(file))
        known = self.meshes.setdefault(name, [])
        for s, asset in known:
            if s == scale:
                return asset
        asset = name if not known else name + str(len(known))
        known.append((scale, asset))
        self.mesh_assets.append((asset, file, scale, el.sourceline))
        return asset

    def name_geom(self, g, name):
        if name not in self.geom_names:
            if name:
                g.set("name", name)
            self.geom_names.add(name)
        elif name:
            warnings.warn(f"{self.label}: geom with duplicate name '{name}' encountered in "
                          f"URDF, creating an unnamed geom", RuntimeWarning, stacklevel=4)

    # -- the model --------------------------------------------------------------
    def convert(self):
        root = self.root
        mj = etree.Element("mujoco")
        mj.sourceline = root.sourceline
        if root.get("name") is not None:
            mj.set("model", root.get("name"))
        # MuJoCo's defaults for URDF, then the file's own <mujoco> sections
        compiler = {"strippath": "true", "fusestatic": "true", "discardvisual": "true"}
        extra = self.sub(root, "mujoco")
        sections = []
        user_compiler = None
        if extra is not None:
            user_compiler = self.sub(extra, "compiler")
            for tag in ("option", "size"):
                s = self.sub(extra, tag)
                if s is not None:
                    sections.append(s)
        comp = etree.SubElement(mj, "compiler")
        if user_compiler is not None:
            comp.sourceline = user_compiler.sourceline
            compiler.update(user_compiler.attrib)
            for c in user_compiler:
                comp.append(_copy(c))
        compiler.update(angle="radian", eulerseq="XYZ")  # as MuJoCo forces them
        for k, v in compiler.items():
            comp.set(k, v)
        for s in sections:
            mj.append(_copy(s))
        strippath = compiler["strippath"].strip().lower() in TRUE
        discardvisual = compiler["discardvisual"].strip().lower() in TRUE
        self.find_materials(root)

        links, parent, children = [], {}, {}
        link_el = {}
        for el in root:
            if el.tag == "link":
                name = self.text(el, "name", required=True)
                if name in link_el:
                    raise self.error(el, f"repeated URDF name: {name}")
                links.append(name)
                link_el[name] = el
                parent[name] = None
                children[name] = []
        joint_of = {}
        for el in root:
            if el.tag == "joint":
                p = self.text(self.sub(el, "parent", required=True), "link", required=True)
                c = self.text(self.sub(el, "child", required=True), "link", required=True)
                if p not in link_el or c not in link_el:
                    raise self.error(el, "URDF joint parent or child missing")
                if parent[c] is not None:
                    raise self.error(el, f"URDF body has multiple parents: {c}")
                parent[c] = p
                children[p].append(c)
                joint_of[c] = el

        world = etree.SubElement(mj, "worldbody")
        bodies = {"world": world}

        def add(name, into):
            node = into
            if name != "world":
                node = etree.SubElement(into, "body")
                node.set("name", name)
                node.sourceline = link_el[name].sourceline
                bodies[name] = node
            for c in children[name]:
                add(c, node)

        for name in links:
            if parent[name] is None:
                add(name, world)
        for name in links:  # links in file order (meshes are made in this order)
            self.link(link_el[name], bodies.get(name, world), strippath, discardvisual)
        for name in links:
            if name in joint_of:
                self.joint(joint_of[name], bodies[name])
        if self.mesh_assets:
            asset = etree.Element("asset")
            for name, file, scale, line in self.mesh_assets:
                m = etree.SubElement(asset, "mesh")
                m.sourceline = line
                m.set("name", name)
                m.set("file", file)
                m.set("scale", " ".join(_num(v) for v in scale))
            mj.insert(mj.index(world), asset)
        return mj

    def link(self, el, body, strippath, discardvisual):
        # a link's own geoms and inertial go before its child bodies
        first_child = next((i for i, c in enumerate(body) if c.tag == "body"), len(body))
        made = []
        inertial = self.sub(el, "inertial")
        if inertial is not None and body.tag == "body":
            node = etree.Element("inertial")
            node.sourceline = inertial.sourceline
            o = self.sub(inertial, "origin")
            xyz = self.floats(o, "xyz", 3) if o is not None else None
            node.set("pos", " ".join(_num(v) for v in (xyz or [0.0, 0.0, 0.0])))
            mass = self.floats(self.sub(inertial, "mass", required=True), "value", 1,
                               required=True)[0]
            node.set("mass", _num(mass))
            iel = self.sub(inertial, "inertia", required=True)
            full = [self.floats(iel, k, 1, required=True)[0]
                    for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")]
            if any(v != 0 for v in full):
                # MuJoCo's compiler orients the inertia by its principal axes (the
                # origin's rpy is overwritten), as an MJCF fullinertia
                node.set("fullinertia", " ".join(_num(v) for v in full))
            else:
                node.set("diaginertia", "0 0 0")
                rpy = self.floats(o, "rpy", 3) if o is not None else None
                if rpy is not None:
                    node.set("euler", " ".join(_num(v) for v in rpy))
            made.append(node)
        rgba = None
        for c in el:
            if c.tag not in ("visual", "collision"):
                continue
            if c.tag == "visual":
                mat = self.sub(c, "material")
                if mat is not None:
                    color = self.sub(mat, "color")
                    if color is not None:
                        self.floats(color, "rgba", 4, required=True)
                        rgba = color.get("rgba")
                    else:
                        name = self.text(mat, "name", required=True)
                        rgba = self.materials.get(name, rgba)
                if discardvisual:
                    continue
            g = self.geom(c, etree.Element("tmp"), c.tag == "collision", rgba, strippath)
            self.name_geom(g, c.get("name") or "")
            made.append(g)
        for i, node in enumerate(made):
            body.insert(first_child + i, node)

    def joint(self, el, body):
        kind = self.text(el, "type", required=True)
        if kind not in JOINT_TYPES:
            raise self.error(el, "invalid joint type in URDF joint definition")
        name = self.text(el, "name", required=True)
        for k in ("pos", "euler"):
            body.attrib.pop(k, None)
        self.origin(el, body)
        axis = [1.0, 0.0, 0.0]
        ax = self.sub(el, "axis")
        if ax is not None:
            axis = self.floats(ax, "xyz", 3, required=True)
        at = next((i for i, c in enumerate(body) if c.tag != "inertial"), len(body))

        def add(jname, jtype, jaxis):
            j = etree.Element("joint")
            j.sourceline = el.sourceline
            j.set("name", jname)
            j.set("type", jtype)
            j.set("pos", "0 0 0")
            if jaxis is not None:
                j.set("axis", " ".join(_num(v) for v in jaxis))
            body.insert(at + len(made), j)
            made.append(j)
            return j

        made = []
        if kind == "fixed":
            return
        if kind in ("revolute", "continuous"):
            add(name, "hinge", axis)
        elif kind == "prismatic":
            add(name, "slide", axis)
        elif kind == "floating":
            add(name, "free", None)
        elif kind == "spherical":
            add(name, "ball", axis)
        else:  # planar: two slides across the plane's normal, and a hinge about it
            from ..compiler import rotation as rot
            mat = rot.quat2mat(rot.z2quat(axis)).reshape(3, 3)
            add(name + "_TX", "slide", mat[:, 0])
            add(name + "_TY", "slide", mat[:, 1])
            add(name + "_RZ", "hinge", axis)
        dyn = self.sub(el, "dynamics")
        if dyn is not None:
            damping = self.floats(dyn, "damping", 1)
            friction = self.floats(dyn, "friction", 1)
            for j in made:
                if damping is not None:
                    j.set("damping", _num(damping[0]))
                if friction is not None:
                    j.set("frictionloss", _num(friction[0]))
        lim = self.sub(el, "limit")
        if lim is not None:
            j = made[0]
            lo = self.floats(lim, "lower", 1)
            hi = self.floats(lim, "upper", 1)
            rng = [lo[0] if lo else 0.0, hi[0] if hi else 0.0]
            if lo is not None or hi is not None:
                j.set("range", f"{_num(rng[0])} {_num(rng[1])}")
            if (lo is None) != (hi is None) or rng[0] > rng[1]:
                j.set("limited", "false")
            effort = self.floats(lim, "effort", 1)
            if effort is not None and abs(effort[0]) > 0:
                e = abs(effort[0])
                j.set("actuatorfrcrange", f"{_num(-e)} {_num(e)}")


def _copy(el):
    out = etree.fromstring(etree.tostring(el))
    for a, b in zip(el.iter(), out.iter()):
        b.sourceline = a.sourceline
    return out


def urdf_to_mjcf(root, label=None):
    """The MJCF tree (lxml ``<mujoco>``) MuJoCo's URDF parser builds from ``root``."""
    return _Urdf(root, label).convert()


def is_urdf(node) -> bool:
    return isinstance(node.tag, str) and node.tag == "robot"


__all__ = ["urdf_to_mjcf", "is_urdf"]
