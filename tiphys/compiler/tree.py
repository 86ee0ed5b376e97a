"""The kinematic tree: bodies, joints, geoms, sites, cameras and lights.

Walks ``<worldbody>`` depth-first (MuJoCo's body order), resolving default
classes, ``<frame>`` transforms and orientation alternatives, and computes each
element's local pose and the per-geom mass and inertia.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..errors import error_at
from ..kernels.consts import (ALIGNFREE_AUTO, ALIGNFREE_FALSE, ALIGNFREE_TRUE, CAMLIGHT_FIXED,
                              CAMLIGHT_TARGETBODY, CAMLIGHT_TARGETBODYCOM, CAMLIGHT_TRACK,
                              CAMLIGHT_TRACKCOM, EPS, GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER,
                              GEOM_ELLIPSOID, GEOM_HFIELD, GEOM_MESH, GEOM_PLANE, GEOM_SDF,
                              GEOM_SPHERE, GEOM_TYPE_NAMES, INERTIAFROMGEOM_AUTO,
                              INERTIAFROMGEOM_TRUE, JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE,
                              JOINT_TYPE_NAMES, LIGHT_DIRECTIONAL, LIGHT_IMAGE, LIGHT_POINT,
                              LIGHT_SPOT, LIMITED_AUTO, LIMITED_FALSE, LIMITED_TRUE, MAXVAL, MINVAL)
from . import rotation as rot
from .attrs import BOOL, LIMITED, Attrs

# MJCF keywords -> mjtGeom, mjtJoint, mjtCamLight, mjtLightType
GEOM_TYPES = {name: t for t, name in enumerate(GEOM_TYPE_NAMES)}
JOINT_TYPES = {name: t for t, name in enumerate(JOINT_TYPE_NAMES)}
CAMLIGHT_MODES = {"fixed": CAMLIGHT_FIXED, "track": CAMLIGHT_TRACK, "trackcom": CAMLIGHT_TRACKCOM,
                  "targetbody": CAMLIGHT_TARGETBODY, "targetbodycom": CAMLIGHT_TARGETBODYCOM}
LIGHT_TYPES = {"spot": LIGHT_SPOT, "directional": LIGHT_DIRECTIONAL, "point": LIGHT_POINT,
               "image": LIGHT_IMAGE}
# size entries that must be positive, per geom type
GEOM_NSIZE = {GEOM_PLANE: 0, GEOM_HFIELD: 0, GEOM_SPHERE: 1, GEOM_CAPSULE: 2,
              GEOM_ELLIPSOID: 3, GEOM_CYLINDER: 2, GEOM_BOX: 3, GEOM_MESH: 0, GEOM_SDF: 0}
FLUID_SHAPES = {"none": 0, "ellipsoid": 1}
ALIGNFREE = {"false": ALIGNFREE_FALSE, "true": ALIGNFREE_TRUE, "auto": ALIGNFREE_AUTO}
SOLREF0 = (0.02, 1.0)
_ORIENTATIONS = ("quat", "axisangle", "xyaxes", "zaxis", "euler")  # alternatives
_QUAT0 = (1.0, 0, 0, 0)
SOLIMP0 = (0.9, 0.95, 0.001, 0.5, 2.0)
_JNT_NDOF = {JNT_FREE: 6, JNT_BALL: 3, JNT_SLIDE: 1, JNT_HINGE: 1}  # dofs per joint type


@dataclass
class Frame:
    pos: np.ndarray
    quat: np.ndarray
    childclass: Optional[str]


# <body sleep> -> mjtSleepPolicy (the compiler's own choices, AUTO_NEVER = 1 and
# AUTO_ALLOWED = 2, replace AUTO in sleep.py)
SLEEP_AUTO = 0
SLEEP_POLICY = {"auto": SLEEP_AUTO, "never": 3, "allowed": 4, "init": 5}


@dataclass
class Body:
    el: object
    id: int
    parent: Optional["Body"]
    name: str
    childclass: Optional[str]
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
    ipos: Optional[np.ndarray] = None
    iquat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
    mass: float = 0.0
    inertia: np.ndarray = field(default_factory=lambda: np.zeros(3))
    explicit_inertial: bool = False
    mocap: bool = False
    gravcomp: float = 0.0
    sleep: int = 0  # <body sleep> (mjtSleepPolicy: auto, never, allowed, init)
    joints: list = field(default_factory=list)
    geoms: list = field(default_factory=list)
    sites: list = field(default_factory=list)
    cameras: list = field(default_factory=list)
    lights: list = field(default_factory=list)
    children: list = field(default_factory=list)
    weldid: int = 0
    dofnum: int = 0
    contype: int = 0
    conaffinity: int = 0
    margin: float = 0.0


class TreeBuilder:
    """Builds the body list from a Spec; ``ctx`` gives compiler options and assets."""

    def __init__(self, spec, defaults, ctx):
        self.spec = spec
        self.defaults = defaults
        self.ctx = ctx
        self.bodies: list[Body] = []
        self.joints, self.geoms, self.sites, self.cameras, self.lights = [], [], [], [], []
        self._defaults_of = {}
        self._suffix = []
        self._geom_protos = {}  # (geom element, childclass) -> its fields, in <replicate>

    # -- orientation ---------------------------------------------------------------
    def orientation(self, a: Attrs, quat_default=_QUAT0, allow_quat=True):
        """Quaternion from quat / axisangle / xyaxes / zaxis / euler (at most one)."""
        if quat_default is _QUAT0 and a._vals.keys().isdisjoint(_ORIENTATIONS):
            return np.array([1.0, 0.0, 0.0, 0.0])  # (the common case: none given)
        given = [k for k in _ORIENTATIONS if a.text(k) is not None and a.has_numbers(k)]
        # explicit attributes beat those inherited from defaults
        explicit = [k for k in given if a.explicit(k)]
        if len(explicit) > 1:
            raise a.error(f"multiple orientation specifiers: {', '.join(explicit)}",
                          explicit[1])
        kind = explicit[0] if explicit else (given[-1] if given else None)
        if kind == "quat":
            # MuJoCo keeps an alternative (euler, axisangle, ...) apart from the quat,
            # and an alternative resolved at compile time replaces the quat: one a
            # default class gives beats the element's own quat
            inherited = [k for k in given if k != "quat"]
            if inherited:
                kind = inherited[-1]
        # conversions in MuJoCo's order of operations (ResolveOrientation), so that
        # frames come out with the same bits (see rot.eig3 for why bits matter)
        if kind is None or kind == "quat":
            q = a.floats("quat", 4, quat_default)
            if rot.normalize(q)[1] < EPS:
                raise a.error("quaternion has zero norm", "quat")
            return rot.normvec(q)[0]
        degree = self.ctx.degree
        if kind == "axisangle":
            v = a.floats("axisangle", 4)
            axis, n = rot.normvec(v[:3])
            if n < EPS:
                raise a.error("axisangle too small", "axisangle")
            angle = float(rot.deg2rad(v[3])) if degree else float(v[3])
            half = angle / 2
            return np.concatenate([[math.cos(half)], math.sin(half) * axis])
        if kind == "xyaxes":
            v = a.floats("xyaxes", 6)
            x, n = rot.normvec(v[:3])
            if n < EPS:
                raise a.error("xaxis too small", "xyaxes")
            y = [float(c) for c in v[3:]]
            d = x[0] * y[0] + x[1] * y[1] + x[2] * y[2]
            y = [y[0] - x[0] * d, y[1] - x[1] * d, y[2] - x[2] * d]
            y, n = rot.normvec(y)
            if n < EPS:
                raise a.error("yaxis too small", "xyaxes")
            z, n = rot.normvec([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                                x[0] * y[1] - x[1] * y[0]])
            if n < EPS:
                raise a.error("cross(xaxis, yaxis) too small", "xyaxes")
            return rot.frame2quat(x, y, z)
        if kind == "zaxis":
            z, n = rot.normvec(a.floats("zaxis", 3))
            if n < EPS:
                raise a.error("zaxis too small", "zaxis")
            return rot.z2quat(z)
        euler = a.floats("euler", 3)
        if degree:
            euler = rot.deg2rad(euler)
        return rot.euler2quat(euler, self.ctx.eulerseq)

    # -- walking --------------------------------------------------------------------
    def build(self):
        world = Body(el=None, id=0, parent=None, name="world", childclass=None)
        self.bodies.append(world)
        for wb in self.spec.root.find("worldbody"):
            self._children(wb, world, None, None)
        # world geoms inside <frame>: composed here (moving bodies do it in _finish_body)
        for g in world.geoms:
            if g.frame is not None:
                g.pos, g.quat = rot.frame_accum(g.frame.pos, g.frame.quat, g.pos, g.quat)
        _collision_summary(world)
        return self.bodies

    # -- compiler options that rewrite the tree ------------------------------------
    def fuse_static(self, referenced: set) -> None:
        """compiler fusestatic: merge bodies without joints into their parents.

        As MuJoCo: mocap bodies and bodies whose name is referenced elsewhere stay;
        mass is accumulated into the parent (not into the world); children, geoms
        and sites move to the parent with their frames composed. Bodies carrying
        cameras or lights also stay (MuJoCo 3.4.0 crashes fusing those).
        """
        i = 1
        self.bvh_fuse_excess = 0
        self.bvh_history = {}
        while i < len(self.bodies):
            b = self.bodies[i]
            if b.joints or b.mocap or (b.name and b.name in referenced) or b.cameras \
                    or b.lights:
                i += 1
                continue
            par = b.parent
            # the parent's hierarchy is rebuilt after each merge; MuJoCo keeps stale
            # leaf pointers of the earlier builds (bvh.fused_nodeids)
            history = self.bvh_history.setdefault(id(par), (par, []))[1]
            if not history:
                history.append(_bvh_snapshot(par))
            if par.id != 0 and b.mass >= MINVAL:
                _accumulate_inertia(par, b)
            for c in b.children:
                c.pos, c.quat = rot.frame_accum(b.pos, b.quat, c.pos, c.quat)
                c.parent = par
            k = par.children.index(b)
            par.children[k:k + 1] = b.children
            # MuJoCo's bvh count: the merged hierarchy (2(p + q) - 1 nodes) is counted
            # against the parent's and the body's (2p - 1 and 2q - 1), one too many
            if _colliding(par.geoms) and _colliding(b.geoms):
                self.bvh_fuse_excess += 1
            for obj in b.geoms + b.sites:
                obj.pos, obj.quat = rot.frame_accum(b.pos, b.quat, obj.pos, obj.quat)
                obj.body = par
            par.geoms.extend(b.geoms)
            par.sites.extend(b.sites)
            _collision_summary(par)
            history.append(_bvh_snapshot(par))
            del self.bodies[i]
            for k, body in enumerate(self.bodies):
                body.id = k
            for body in self.bodies[1:]:
                body.weldid = body.id if body.joints else body.parent.weldid

    def discard_visual(self, keep=()) -> None:
        """compiler discardvisual: drop geoms that cannot collide (contype=conaffinity=0),
        except those named in ``keep`` (geoms of explicit <pair>s).

        Body inertias were computed with them and stay as they are (as MuJoCo)."""
        for b in self.bodies:
            b.geoms = [g for g in b.geoms
                       if g.contype != 0 or g.conaffinity != 0 or (g.name and g.name in keep)]

    def _cls(self, el, childclass):
        cls = getattr(el, "class_", None)  # (el.get_attr("class"), one call less)
        if cls is not None:
            self.defaults.check_class(cls, el)
            return cls
        return childclass or "main"

    def _attrs(self, el, tag, childclass):
        defaults = self.defaults.get(self._cls(el, childclass), tag, el)
        self._defaults_of[id(el)] = defaults
        return Attrs(el, defaults)

    def defaults_for(self, obj) -> dict:
        """The default-class attributes an element was compiled with."""
        return self._defaults_of.get(id(obj.el), {})

    def _children(self, el, body: Body, frame: Optional[Frame], childclass):
        for child in el.children:
            tag = child.tag
            if tag == "body":
                self._body(child, body, frame, childclass)
            elif tag == "frame":
                self._frame(child, body, frame, childclass)
            elif tag == "joint":
                self._joint(child, body, frame, childclass, free=False)
            elif tag == "freejoint":
                self._joint(child, body, frame, childclass, free=True)
            elif tag == "geom":
                self._geom(child, body, frame, childclass)
            elif tag == "site":
                self._site(child, body, frame, childclass)
            elif tag == "camera":
                self._camera(child, body, frame, childclass)
            elif tag == "light":
                self._light(child, body, frame, childclass)
            elif tag == "inertial":
                self._inertial(child, body)
            elif tag == "replicate":
                self._replicate(child, body, frame, childclass)
            elif tag == "flexcomp":
                from .flex import expand_flexcomp
                expand_flexcomp(self, child, body, childclass)
            elif tag == "composite":
                from .composite import expand_composite
                expand_composite(self, child, body, frame, childclass)
            elif tag == "plugin":  # passive-force plugins (mujoco.elasticity.cable)
                from .composite import body_plugin
                body_plugin(self, child, body)
            else:  # attach, composite
                raise NotImplementedError(
                    f"{child.xml_file or '<string>'}:{child.xml_line}: <{tag}> is not "
                    f"supported yet")

    def _name(self, el) -> str:
        """Element name with the suffixes of enclosing <replicate>s (innermost first)."""
        name = getattr(el, "name", None)  # (el.get_attr("name"), one call less)
        if not self._suffix:
            return name or ""
        return self._suffixed(name) or ""

    def _suffixed(self, name):
        """A reference made inside <replicate>, with the copies' suffixes."""
        if not name:
            return name
        return name + "".join(reversed(self._suffix))

    def _replicate(self, el, body, frame, childclass):
        a = Attrs(el, {})
        if el.attr("prefix") is not None:
            # 3.4.0's reader never reads it (its schema does not check <replicate>'s
            # attributes): names get only the sep + index suffix
            warnings.warn(f"{el.xml_file or '<string>'}:{el.xml_line}: <replicate "
                          f"prefix> is ignored (as by MuJoCo 3.4.0)", stacklevel=2)
        count = a.int("count")
        if count is None:
            raise a.error("missing required attribute", "count")
        if count <= 0:
            raise a.error("count must be positive", "count")
        cc = el.attr("childclass")
        self.defaults.check_class(cc, el, "childclass")
        offset = a.floats("offset", 3, (0, 0, 0))
        euler = a.floats("euler", 3, (0, 0, 0))
        if self.ctx.degree:
            euler = rot.deg2rad(euler)
        sep = a.str("sep", "")
        step = rot.euler2quat(euler, self.ctx.eulerseq)
        pos, quat = np.zeros(3), np.array([1.0, 0, 0, 0])
        digits = len(str(count))
        for i in range(count):
            # the i-th copy's rotation is resolved from i*euler directly (not accumulated)
            fpos, fquat = pos.copy(), rot.euler2quat(euler * i, self.ctx.eulerseq)
            if frame is not None:
                fpos, fquat = rot.frame_accum(frame.pos, frame.quat, fpos, fquat)
            self._suffix.append(sep + str(i).zfill(digits))
            self._children(el, body, Frame(fpos, fquat, cc or (frame.childclass if frame
                                                              else None)), cc or childclass)
            self._suffix.pop()
            pos, quat = rot.frame_accum(pos, quat, offset, step)

    def _frame(self, el, body, frame, childclass):
        cc = el.attr("childclass")
        self.defaults.check_class(cc, el, "childclass")
        a = Attrs(el, {})
        pos = a.floats("pos", 3, (0, 0, 0))
        quat = self.orientation(a)
        if el.__dict__.get("attach_reset_frame"):
            frame = None  # (attach.py: a body moved by a second <attach> of it)
        if frame is not None:
            pos, quat = rot.frame_accum(frame.pos, frame.quat, pos, quat)
        inner = Frame(pos, quat, cc or (frame.childclass if frame else None))
        own = el.__dict__.get("attach_compiler")  # an <attach>ed model's <compiler> (attach.py)
        if not own:
            self._children(el, body, inner, cc or childclass)
            return
        ctx, self.ctx = self.ctx, replace(self.ctx, **own)
        try:
            self._children(el, body, inner, cc or childclass)
        finally:
            self.ctx = ctx

    def _body(self, el, parent: Body, frame, childclass):
        cc = el.attr("childclass")
        self.defaults.check_class(cc, el, "childclass")
        a = Attrs(el, {})
        b = Body(el=el, id=len(self.bodies), parent=parent, name=self._name(el),
                 childclass=cc or childclass)
        b.weldid = b.id if _has_joints(el) else parent.weldid
        self.bodies.append(b)
        parent.children.append(b)
        b.pos = a.floats("pos", 3, (0, 0, 0))
        b.quat = self.orientation(a)
        b.mocap = bool(a.bool("mocap", 0))
        b.gravcomp = a.float("gravcomp", 0.0)
        b.sleep = a.keyword("sleep", SLEEP_POLICY, SLEEP_AUTO)
        self._children(el, b, None, b.childclass)
        self._finish_body(b, frame)

    def _inertial(self, el, body: Body):
        a = Attrs(el, {})
        body.explicit_inertial = True
        body.ipos = a.floats("pos", 3)
        if body.ipos is None:
            raise a.error("missing required attribute", "pos")
        body.mass = a.float("mass")
        if body.mass is None:
            raise a.error("missing required attribute", "mass")
        if a.has_numbers("fullinertia"):
            if a.floats("diaginertia", 3, (0, 0, 0)).any():
                raise a.error("fullinertia and diagonal inertia cannot both be specified",
                              "fullinertia")
            if any(a.has_numbers(k) for k in ("quat", "axisangle", "xyaxes", "zaxis", "euler")):
                raise a.error("fullinertia and inertial orientation cannot both be specified",
                              "fullinertia")
            f = a.floats("fullinertia", 6)
            full = np.array([[f[0], f[3], f[4]], [f[3], f[1], f[5]], [f[4], f[5], f[2]]])
            ev, q = rot.eig3(full)
            if ev[2] < EPS:
                raise a.error("inertia must have positive eigenvalues", "fullinertia")
            body.inertia, body.iquat = ev, q
        else:
            # MuJoCo: diaginertia is optional (zero); a moving body then fails the
            # mass/inertia check
            body.inertia = a.floats("diaginertia", 3, (0, 0, 0))
            body.iquat = self.orientation(a)

    # -- joints ---------------------------------------------------------------------
    def _joint(self, el, body: Body, frame, childclass, free: bool):
        if body.id == 0:
            raise error_at(el, "joints are not allowed in the world body")
        if free:
            # a freejoint takes only name/group/align; default classes do not apply
            a = Attrs(el, {})
            j = _Joint(el=el, body=body, name=self._name(el), type=0)
            j.group = a.int("group", 0)
            j.align = a.keyword("align", ALIGNFREE, ALIGNFREE_AUTO)
        else:
            a = self._attrs(el, "joint", childclass)
            # read in this order (it decides which error a bad joint reports), then
            # made at once (the dataclass's array defaults are not built to be dropped)
            name = self._name(el)
            jtype = a.keyword("type", JOINT_TYPES, JNT_HINGE)
            group = a.int("group", 0)
            pos = a.floats("pos", 3, (0, 0, 0))
            axis = a.floats("axis", 3, (0, 0, 1))
            limited = a.keyword("limited", LIMITED, LIMITED_AUTO)
            actfrclimited = a.keyword("actuatorfrclimited", LIMITED, LIMITED_AUTO)
            solref = a.floats("solreflimit", 2, SOLREF0, exact=False)
            solimp = a.floats("solimplimit", 5, SOLIMP0, exact=False)
            solref_friction = a.floats("solreffriction", 2, SOLREF0, exact=False)
            solimp_friction = a.floats("solimpfriction", 5, SOLIMP0, exact=False)
            stiffness = a.float("stiffness", 0.0)
            rng = a.floats("range", 2, (0, 0))
            actfrcrange = a.floats("actuatorfrcrange", 2, (0, 0))
            j = _Joint(el=el, body=body, name=name, type=jtype, group=group, pos=pos,
                       axis=axis, limited=limited, actfrclimited=actfrclimited,
                       solref=solref, solimp=solimp, solref_friction=solref_friction,
                       solimp_friction=solimp_friction, stiffness=stiffness, range=rng,
                       actfrcrange=actfrcrange)
            j.actgravcomp = a.bool("actuatorgravcomp", 0)
            j.margin = a.float("margin", 0.0)
            j.ref = a.float("ref", 0.0)
            j.ref_spec = j.ref  # as written (keyframe padding), before unit conversion
            j.springref = a.float("springref", 0.0)
            j.armature = a.float("armature", 0.0)
            j.damping = a.float("damping", 0.0)
            j.frictionloss = a.float("frictionloss", 0.0)
            sd = a.floats("springdamper", 2, (0, 0))
            if sd[0] or sd[1]:
                if sd[0] <= 0 or sd[1] <= 0:
                    raise a.error("when defined, springdamper values must be positive",
                                  "springdamper")
                j.springdamper = sd
        self._compile_joint(j, a, frame)
        body.joints.append(j)
        self.joints.append(j)

    def _compile_joint(self, j, a: Attrs, frame):
        ctx = self.ctx
        if j.type == JNT_FREE:
            j.limited = LIMITED_FALSE
        elif j.limited == LIMITED_AUTO:
            hasrange = not (j.range[0] == 0 and j.range[1] == 0)
            if not ctx.autolimits and hasrange:
                raise a.error("joint has `range` but not `limited`; set autolimits=\"true\", "
                              "specify `limited` explicitly, or remove `range`", "range")
        j.is_limited = j.limited == LIMITED_TRUE or (
            j.limited == LIMITED_AUTO and j.range[0] < j.range[1])
        if j.is_limited:
            if j.range[0] >= j.range[1] and j.type != JNT_BALL:
                raise a.error("range[0] should be smaller than range[1]", "range")
            if j.range[0] and j.type == JNT_BALL:
                raise a.error("range[0] should be 0 in ball joint", "range")
            if ctx.degree and j.type in (JNT_BALL, JNT_HINGE):
                j.range = j.range * (math.pi / 180.0)
        if j.type in (JNT_FREE, JNT_BALL):
            j.actfrclimited = LIMITED_FALSE
        elif j.actfrclimited == LIMITED_AUTO:
            hasrange = not (j.actfrcrange[0] == 0 and j.actfrcrange[1] == 0)
            if not ctx.autolimits and hasrange:
                raise a.error("joint has `actuatorfrcrange` but not `actuatorfrclimited`",
                              "actuatorfrcrange")
        j.is_actfrclimited = j.actfrclimited == LIMITED_TRUE or (
            j.actfrclimited == LIMITED_AUTO and j.actfrcrange[0] < j.actfrcrange[1])
        if j.is_actfrclimited and j.actfrcrange[0] >= j.actfrcrange[1]:
            raise a.error("actfrcrange[0] should be smaller than actfrcrange[1]",
                          "actuatorfrcrange")
        if j.type in (JNT_FREE, JNT_BALL):
            j.axis = np.array([0.0, 0.0, 1.0])
        elif frame is not None:
            j.axis = rot.rotate(frame.quat, j.axis)
        j.axis, n = rot.normalize(j.axis)
        if n < EPS:
            raise a.error("axis too small", "axis")
        if j.type == JNT_FREE:
            j.pos = np.zeros(3)
        elif frame is not None:
            j.pos = frame.pos + rot.rotate(frame.quat, j.pos)
        if j.type == JNT_HINGE and ctx.degree:
            j.ref *= math.pi / 180.0
            j.springref *= math.pi / 180.0

    # -- geoms ----------------------------------------------------------------------
    def _geom(self, el, body: Body, frame, childclass):
        # a geom inside <replicate> is read once: its copies differ in body, name and
        # frame only (mesh and hfield geoms, whose assets are attached, are read anew)
        key = (id(el), childclass) if self._suffix else None
        proto = self._geom_protos.get(key) if key else None
        if proto is not None:
            g = object.__new__(_Geom)
            g.__dict__.update({k: v.copy() if type(v) is np.ndarray else v
                               for k, v in proto.items()})
            g.body, g.name, g.frame = body, self._name(el), frame
            body.geoms.append(g)
            self.geoms.append(g)
            return
        a = self._attrs(el, "geom", childclass)
        g = _Geom(el=el, body=body, name=self._name(el))
        g.type = a.keyword("type", GEOM_TYPES, GEOM_SPHERE)
        g.sdf_plugin = None
        if g.type == GEOM_SDF:
            g.sdf_plugin = self._sdf_plugin(el)
        elif el.children and el.find("plugin"):
            from .plugins import refuse
            raise refuse(self.spec, el.find("plugin")[0], "<geom><plugin>")
        g.contype = a.int("contype", 1)
        g.conaffinity = a.int("conaffinity", 1)
        g.condim = a.int("condim", 3)
        if g.condim not in (1, 3, 4, 6):
            raise a.error("invalid condim, must be 1, 3, 4 or 6", "condim")
        g.group = a.int("group", 0)
        g.priority = a.int("priority", 0)
        g.size = a.floats("size", 3, (0, 0, 0), exact=False)
        g.material = a.str("material")
        g.friction = a.floats("friction", 3, (1, 0.005, 0.0001), exact=False)
        g.mass = a.float("mass")
        g.density = a.float("density", 1000.0)
        g.shell = a.keyword("shellinertia", BOOL, 0)
        g.solmix = a.float("solmix", 1.0)
        g.solref = a.floats("solref", 2, SOLREF0, exact=False)
        g.solimp = a.floats("solimp", 5, SOLIMP0, exact=False)
        g.margin = a.float("margin", 0.0)
        g.gap = a.float("gap", 0.0)
        g.rgba = a.floats("rgba", 4, (0.5, 0.5, 0.5, 1))
        g.hfield = a.str("hfield")
        g.mesh = a.str("mesh")
        g.fitscale = a.float("fitscale", 1.0)
        g.fluidshape = a.keyword("fluidshape", FLUID_SHAPES, 0)
        g.fluidcoef = a.floats("fluidcoef", 5, (0.5, 0.25, 1.5, 1.0, 1.0), exact=False)
        fromto = _fromto_given(a)
        g.pos = a.floats("pos", 3, (0, 0, 0))
        if fromto is not None:
            if g.type not in (GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX):
                raise a.error("fromto requires capsule, cylinder, box or ellipsoid", "fromto")
            if g.pos.any():
                raise a.error("both pos and fromto defined", "fromto")
            g.pos, g.quat = self._fromto(a, g.size, g.type, fromto)
            _orientation_syntax(a)  # ignored, but MuJoCo still reads it
        else:
            g.quat = self.orientation(a)
        self.ctx.geom_assets(g, a)
        if g.type not in (GEOM_PLANE, GEOM_HFIELD, GEOM_MESH, GEOM_SDF):
            self._checksize(a, g.size, g.type)
        elif g.type == GEOM_PLANE and g.size[2] <= 0:
            # MuJoCo: plane size(3) must be positive (visual grid spacing)
            raise a.error("plane size(3) must be positive", "size")
        g.aabb, g.rbound = _aabb_rbound(g)
        g.mass_, g.inertia = 0.0, np.zeros(3)
        g.frame = frame
        if key and not g.mesh and not g.hfield:
            self._geom_protos[key] = {k: v.copy() if type(v) is np.ndarray else v
                                      for k, v in g.__dict__.items()}
        body.geoms.append(g)
        self.geoms.append(g)

    def _sdf_plugin(self, el):
        """(instance name or "" when in place, <plugin> element) of a <geom
        type="sdf">'s plugin (mjCGeom::Compile's checks; the instance id is resolved
        with the other plugins); None without one: the geom is the signed distance of
        its mesh's octree (built with the meshes, octree.py)."""
        if not (el.children and el.find("plugin")):
            return None
        from .plugins import sdf_instance
        pel = el.find("plugin")[0]
        sdf_instance(self.spec, el, pel, "geom")
        return pel.attr("instance") or "", pel

    def _fromto(self, a: Attrs, size, gtype, fromto):
        f = fromto.tolist()  # (Python floats: the same doubles as numpy's)
        vec, n = rot.normvec([f[0] - f[3], f[1] - f[4], f[2] - f[5]])
        # (mjuu_normvec: 0 below sqrt(mjEPS), as MuJoCo)
        size[1] = n / 2
        if size[1] < EPS:
            raise a.error("fromto points too close", "fromto")
        if gtype in (GEOM_ELLIPSOID, GEOM_BOX):
            size[2] = size[1]
            size[1] = size[0]
        pos = np.array([(f[0] + f[3]) / 2, (f[1] + f[4]) / 2, (f[2] + f[5]) / 2])
        return pos, rot.z2quat(vec)

    def _checksize(self, a, size, gtype):
        for i in range(GEOM_NSIZE[gtype]):
            if size[i] <= 0:
                raise a.error(f"size {i} must be positive", "size")

    def _site(self, el, body: Body, frame, childclass):
        a = self._attrs(el, "site", childclass)
        s = _Site(el=el, body=body, name=self._name(el))
        s.type = a.keyword("type", GEOM_TYPES, GEOM_SPHERE)
        if s.type in (GEOM_PLANE, GEOM_HFIELD, GEOM_MESH, GEOM_SDF):
            raise a.error("meshes, hfields, sdfs and planes not allowed in site", "type")
        s.group = a.int("group", 0)
        s.material = a.str("material")
        s.size = a.floats("size", 3, (0.005, 0.005, 0.005), exact=False)
        s.rgba = a.floats("rgba", 4, (0.5, 0.5, 0.5, 1))
        fromto = _fromto_given(a)
        s.pos = a.floats("pos", 3, (0, 0, 0))
        if fromto is not None:
            if s.type not in (GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX):
                raise a.error("fromto requires capsule, cylinder, box or ellipsoid", "fromto")
            if s.pos.any():
                raise a.error("both pos and fromto defined", "fromto")
            s.pos, s.quat = self._fromto(a, s.size, s.type, fromto)
            _orientation_syntax(a)  # ignored, but MuJoCo still reads it
        else:
            s.quat = self.orientation(a)
        if frame is not None:
            s.pos, s.quat = rot.frame_accum(frame.pos, frame.quat, s.pos, s.quat)
        s.quat = rot.normalize(s.quat)[0]
        self._checksize(a, s.size, s.type)
        body.sites.append(s)
        self.sites.append(s)

    def _camera(self, el, body: Body, frame, childclass):
        a = self._attrs(el, "camera", childclass)
        c = _Camera(el=el, body=body, name=self._name(el))
        c.mode = a.keyword("mode", CAMLIGHT_MODES, CAMLIGHT_FIXED)
        # MuJoCo: target="" is none; inside <replicate> the target gets the copy's
        # suffix (mjCCamera::NameSpace), so it names a body of the same copy
        c.target = self._suffixed(a.str("target")) or None
        c.orthographic = a.bool("orthographic", 0)
        c.fovy = a.float("fovy", 45.0)
        c.ipd = a.float("ipd", 0.068)
        c.resolution = a.ints("resolution", 2, (1, 1))
        c.sensorsize = a.floats("sensorsize", 2, (0, 0))
        focal = a.floats("focal", 2, (0, 0))
        focalpixel = a.floats("focalpixel", 2, (0, 0))
        principal = a.floats("principal", 2, (0, 0))
        principalpixel = a.floats("principalpixel", 2, (0, 0))
        c.pos = a.floats("pos", 3, (0, 0, 0))
        c.quat = self.orientation(a)
        if frame is not None:
            c.pos, c.quat = rot.frame_accum(frame.pos, frame.quat, c.pos, c.quat)
        c.quat = rot.normalize(c.quat)[0]
        if c.fovy >= 180:
            raise a.error("fovy too large", "fovy")
        # MuJoCo's reader: principal/focal need sensorsize; focal/sensorsize need
        # resolution; fovy and sensorsize exclude each other
        given = {k: a.explicit(k) and a.has_numbers(k) for k in (
            "principal", "principalpixel", "focal", "focalpixel", "sensorsize",
            "resolution", "fovy")}
        has_focal = given["focal"] or given["focalpixel"]
        if (given["principal"] or given["principalpixel"] or has_focal) \
                and not given["sensorsize"]:
            raise a.error("missing required attribute", "sensorsize")
        if (has_focal or given["sensorsize"]) and not given["resolution"]:
            raise a.error("missing required attribute", "resolution")
        if c.resolution[0] < 0 or c.resolution[1] < 0:
            raise a.error("camera resolution cannot be negative", "resolution")
        if given["fovy"] and given["sensorsize"]:
            raise a.error("either 'fovy' or 'sensorsize' attribute can be specified, "
                          "not both", "fovy")
        if (principal[0] and principalpixel[0]) or (principal[1] and principalpixel[1]):
            raise a.error("principal length duplicated", "principal")
        if (focal[0] and focalpixel[0]) or (focal[1] and focalpixel[1]):
            raise a.error("focal length duplicated", "focal")
        c.intrinsic = np.zeros(4)
        if c.sensorsize[0] > 0 and c.sensorsize[1] > 0:
            # MuJoCo computes the pixel density in single precision
            density = np.float32(c.resolution) / np.float32(c.sensorsize)
            c.intrinsic = np.array([
                focalpixel[0] / density[0] + focal[0], focalpixel[1] / density[1] + focal[1],
                principalpixel[0] / density[0] + principal[0],
                principalpixel[1] / density[1] + principal[1]], dtype=np.float64)
            c.fovy = math.atan2(c.sensorsize[1] / 2, c.intrinsic[1]) * 360.0 / math.pi
        else:
            c.intrinsic[0] = c.intrinsic[1] = self.ctx.znear
        body.cameras.append(c)
        self.cameras.append(c)

    def _light(self, el, body: Body, frame, childclass):
        a = self._attrs(el, "light", childclass)
        li = _Light(el=el, body=body, name=self._name(el))
        li.mode = a.keyword("mode", CAMLIGHT_MODES, CAMLIGHT_FIXED)
        li.target = self._suffixed(a.str("target")) or None  # as a camera's
        if a.has("type"):
            li.type = a.keyword("type", LIGHT_TYPES, LIGHT_SPOT)
        else:
            li.type = 1 if a.bool("directional", 0) else 0
        li.castshadow = a.bool("castshadow", 1)
        li.active = a.bool("active", 1)
        li.texture = self._suffixed(a.str("texture"))  # mjCLight::NameSpace too
        li.pos = a.floats("pos", 3, (0, 0, 0))
        li.dir = a.floats("dir", 3, (0, 0, -1))
        li.bulbradius = a.float("bulbradius", 0.02)
        li.intensity = a.float("intensity", 0.0)
        li.range = a.float("range", 10.0)
        li.attenuation = a.floats("attenuation", 3, (1, 0, 0))
        li.cutoff = a.float("cutoff", 45.0)
        li.exponent = a.float("exponent", 10.0)
        li.ambient = a.floats("ambient", 3, (0, 0, 0))
        li.diffuse = a.floats("diffuse", 3, (0.7, 0.7, 0.7))
        li.specular = a.floats("specular", 3, (0.3, 0.3, 0.3))
        if frame is not None:
            li.pos = frame.pos + rot.rotate(frame.quat, li.pos)
            li.dir = rot.rotate(frame.quat, li.dir)
        li.dir, n = rot.normalize(li.dir)
        if n < EPS:
            raise a.error("zero direction in light", "dir")
        body.lights.append(li)
        self.lights.append(li)

    # -- body inertia ---------------------------------------------------------------
    def _finish_body(self, b: Body, frame: Optional[Frame]):
        ctx = self.ctx
        # joints decide weldid; a plane on a moving body is an error
        for g in b.geoms:
            if g.type == GEOM_PLANE and b.weldid != 0:
                raise error_at(g.el, "plane only allowed in static bodies", "type")
        infer = ctx.inertiafromgeom == INERTIAFROMGEOM_TRUE or (
            ctx.inertiafromgeom == INERTIAFROMGEOM_AUTO and b.ipos is None)
        for g in b.geoms:
            use = (not b.explicit_inertial or ctx.inertiafromgeom == INERTIAFROMGEOM_TRUE) and \
                ctx.inertiagrouprange[0] <= g.group <= ctx.inertiagrouprange[1]
            _geom_mass(g, use)
            if g.frame is not None:
                g.pos, g.quat = rot.frame_accum(g.frame.pos, g.frame.quat, g.pos, g.quat)
            if g.fluidshape == 1:
                g.fluid = _fluid(g)
        _collision_summary(b)
        if infer:
            self._inertia_from_geoms(b)
        if b.ipos is None:
            b.ipos = b.pos.copy()
            b.iquat = b.quat.copy()
        if frame is not None:
            b.pos, b.quat = rot.frame_accum(frame.pos, frame.quat, b.pos, b.quat)
        b.mass = max(b.mass, ctx.boundmass)
        b.inertia = np.maximum(b.inertia, ctx.boundinertia)
        inertia = b.inertia.tolist()  # (Python floats: the same doubles)
        if b.mass < 0 or any(x < 0 for x in inertia):
            raise error_at(b.el, "mass and inertia cannot be negative")
        i0, i1, i2 = inertia
        if i0 + i1 < i2 or i0 + i2 < i1 or i1 + i2 < i0:
            if ctx.balanceinertia:
                b.inertia = np.full(3, (i0 + i1 + i2) / 3.0)
            else:
                raise error_at(b.el, "inertia must satisfy A + B >= C; use 'balanceinertia' "
                                     "to fix")
        for j in b.joints:
            b.dofnum += _JNT_NDOF[j.type]
        if b.dofnum > 6:
            raise error_at(b.el, f"more than 6 dofs in body '{b.name}'")
        hasball = False
        for j in b.joints:
            if j.type in (JNT_BALL, JNT_HINGE) and hasball:
                raise error_at(b.el, f"ball followed by rotation in body '{b.name}'")
            hasball = hasball or j.type == JNT_BALL
        nfree = sum(j.type == JNT_FREE for j in b.joints)
        if nfree > 1 or (nfree == 1 and len(b.joints) > 1):
            raise error_at(b.el, "free joint can only appear by itself")
        if nfree and b.parent.id != 0:
            raise error_at(b.el, "free joint can only be used on top level")
        if b.mocap and (b.dofnum or b.parent.id != 0):
            raise error_at(b.el, f"mocap body '{b.name}' is not a fixed child of world",
                           "mocap")
        align = (len(b.joints) == 1 and b.joints[0].type == JNT_FREE and not b.children and
                 (b.joints[0].align == ALIGNFREE_TRUE or
                  (b.joints[0].align == ALIGNFREE_AUTO and ctx.alignfree)))
        if align:
            b.pos, b.quat = rot.frame_accum(b.pos, b.quat, b.ipos, b.iquat)
            inv_pos, inv_quat = rot.frame_invert(b.ipos, b.iquat)
            b.ipos, b.iquat = np.zeros(3), np.array([1.0, 0, 0, 0])
            for obj in b.geoms + b.sites + b.cameras:
                obj.pos, obj.quat = rot.frame_accum(inv_pos, inv_quat, obj.pos, obj.quat)
            for li in b.lights:
                li.pos = inv_pos + rot.rotate(inv_quat, li.pos)
                li.dir = rot.rotate(inv_quat, li.dir)

    def _inertia_from_geoms(self, b: Body):
        lo, hi = self.ctx.inertiagrouprange
        sel = [g for g in b.geoms if lo <= g.group <= hi and g.mass_ > EPS]
        if len(sel) == 1:
            g = sel[0]
            b.ipos, b.iquat, b.mass, b.inertia = g.pos.copy(), g.quat.copy(), g.mass_, \
                g.inertia.copy()
        elif len(sel) > 1:
            mass = sum(g.mass_ for g in sel)
            if mass < EPS:
                raise error_at(b.el, "body mass is too small, cannot compute center of mass")
            com = sum(g.mass_ * g.pos for g in sel) / mass
            # summed in MuJoCo's order (see rot.eig3: equal moments need exact bits)
            toti = [0.0] * 6
            for g in sel:
                inert0 = rot.global_inertia6(g.inertia, g.quat)
                inert1 = rot.offcenter6(g.mass_, g.pos - com)
                toti = [toti[k] + inert0[k] + inert1[k] for k in range(6)]
            ev, q = rot.eig3(rot.full_from6(toti))
            if ev[2] < EPS:
                raise error_at(b.el, "inertia must have positive eigenvalues")
            b.ipos, b.iquat, b.mass, b.inertia = com, q, mass, ev


def _bvh_snapshot(b: Body):
    """(colliding geoms, their pos, quat, aabb, the body's ipos, iquat) now."""
    geoms = [g for g in b.geoms if g.contype or g.conaffinity]
    ipos = np.zeros(3) if b.ipos is None else np.array(b.ipos, dtype=float)
    return (geoms, np.array([g.pos for g in geoms], dtype=float).reshape(-1, 3),
            np.array([g.quat for g in geoms], dtype=float).reshape(-1, 4),
            np.array([g.aabb for g in geoms], dtype=float).reshape(-1, 6),
            ipos, np.array(b.iquat, dtype=float))


def _colliding(geoms) -> bool:
    return any(g.contype or g.conaffinity for g in geoms)


def _collision_summary(b: Body) -> None:
    """OR of geom contype/conaffinity and max margin, over the body's geoms as compiled
    (discardvisual removes geoms later without updating these, as MuJoCo)."""
    b.contype = b.conaffinity = 0
    b.margin = 0.0
    for g in b.geoms:
        b.contype |= g.contype
        b.conaffinity |= g.conaffinity
        b.margin = max(b.margin, g.margin)


def _accumulate_inertia(par: Body, b: Body) -> None:
    """Fold body b's inertia into its parent's, as MuJoCo's fusestatic does.

    MuJoCo composes the child's inertial frame as ipos + R(iquat) pos (the frame
    order reversed) and keeps the child's iquat unrotated; both are reproduced,
    since MuJoCo is the reference."""
    other_ipos, _ = rot.frame_accum(b.ipos, b.iquat, b.pos, b.quat)
    masses = (par.mass, b.mass)
    iposs = (np.zeros(3) if par.ipos is None else par.ipos, other_ipos)
    iquats = (par.iquat, b.iquat)
    inertias = (par.inertia, b.inertia)
    total = masses[0] + masses[1]
    if total < MINVAL:
        par.mass, par.inertia = 0.0, np.zeros(3)
        par.ipos, par.iquat = np.zeros(3), np.array([1.0, 0, 0, 0])
        return
    com = (masses[0] * iposs[0] + masses[1] * iposs[1]) / total
    toti = [0.0] * 6
    for m, p, q, inertia in zip(masses, iposs, iquats, inertias):
        inert_a = rot.global_inertia6(inertia, q)
        inert_b = rot.offcenter6(m, p - com)
        toti = [toti[k] + inert_a[k] + inert_b[k] for k in range(6)]
    ev, quat = rot.eig3(rot.full_from6(toti))
    if ev[2] < EPS:
        raise error_at(b.el, "error 'inertia must have positive eigenvalues' in fusing static "
                             "body inertias")
    par.mass, par.ipos, par.iquat, par.inertia = total, com, quat, ev


def _fromto_given(a: Attrs):
    """fromto, or None where it is not given. As MuJoCo's, a fromto whose first value
    is NaN is not defined: an element's own "nan ..." hides its default class's
    (tiphys.copy_back writes that where it gives a pose instead)."""
    fromto = a.floats("fromto", 6, finite=False)
    if fromto is None or np.isnan(fromto[0]):
        return None
    if not np.isfinite(fromto).all():
        return a.floats("fromto", 6)  # (the reader's error for a value not finite)
    return fromto


def _orientation_syntax(a: Attrs):
    """Check the numbers of orientation attributes that fromto makes irrelevant."""
    for name, n in (("quat", 4), ("axisangle", 4), ("xyaxes", 6), ("zaxis", 3),
                    ("euler", 3)):
        a.floats(name, n)


def _has_joints(el) -> bool:
    for c in el.children:
        if c.tag in ("joint", "freejoint") or (c.tag == "frame" and _has_joints(c)):
            return True
    return False


@dataclass
class _Joint:
    el: object
    body: Body
    name: str
    type: int
    group: int = 0
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0, 1]))
    limited: int = LIMITED_AUTO
    actfrclimited: int = LIMITED_AUTO
    solref: np.ndarray = field(default_factory=lambda: np.array(SOLREF0))
    solimp: np.ndarray = field(default_factory=lambda: np.array(SOLIMP0))
    solref_friction: np.ndarray = field(default_factory=lambda: np.array(SOLREF0))
    solimp_friction: np.ndarray = field(default_factory=lambda: np.array(SOLIMP0))
    stiffness: float = 0.0
    range: np.ndarray = field(default_factory=lambda: np.zeros(2))
    actfrcrange: np.ndarray = field(default_factory=lambda: np.zeros(2))
    actgravcomp: int = 0
    margin: float = 0.0
    ref: float = 0.0
    springref: float = 0.0
    armature: float = 0.0
    damping: float = 0.0
    frictionloss: float = 0.0
    springdamper: Optional[np.ndarray] = None
    align: int = ALIGNFREE_AUTO
    is_limited: bool = False
    is_actfrclimited: bool = False


class _Geom:
    def __init__(self, el, body, name):
        self.el, self.body, self.name = el, body, name
        self.fluid = np.zeros(12)
        self.meshobj = None
        self.hfieldobj = None
        self.dataid = -1
        self.fitmesh = False  # a primitive fitted to the mesh dataid names
        self.matid = -1


class _Site:
    def __init__(self, el, body, name):
        self.el, self.body, self.name = el, body, name
        self.matid = -1


class _Camera:
    def __init__(self, el, body, name):
        self.el, self.body, self.name = el, body, name


class _Light:
    def __init__(self, el, body, name):
        self.el, self.body, self.name = el, body, name
        self.texid = -1


def _volume(g) -> float:
    if g.type in (GEOM_MESH, GEOM_SDF):
        return g.meshobj.volume_ref()
    s = g.size
    shell = g.shell
    if g.type == GEOM_SPHERE:
        return 4 * math.pi * s[0] ** 2 if shell else 4 * math.pi * s[0] ** 3 / 3
    if g.type == GEOM_CAPSULE:
        h, r = 2 * s[1], s[0]
        return (4 * math.pi * r * r + 2 * math.pi * r * h) if shell else \
            math.pi * (r * r * h + 4 * r ** 3 / 3)
    if g.type == GEOM_CYLINDER:
        h, r = 2 * s[1], s[0]
        return (2 * math.pi * r * r + 2 * math.pi * r * h) if shell else math.pi * r * r * h
    if g.type == GEOM_ELLIPSOID:
        if shell:
            p = 1.6075
            t = (s[0] * s[1]) ** p + (s[1] * s[2]) ** p + (s[2] * s[0]) ** p
            return 4 * math.pi * (t / 3) ** (1 / p)
        return 4 * math.pi * s[0] * s[1] * s[2] / 3
    if g.type in (GEOM_HFIELD, GEOM_BOX):
        if shell:
            return 8 * (s[0] * s[1] + s[1] * s[2] + s[2] * s[0])
        return 8 * s[0] * s[1] * s[2]
    return 0.0


def _principal_inertia(g) -> np.ndarray:
    m = g.mass_
    s = g.size
    if g.type in (GEOM_MESH, GEOM_SDF):
        return g.meshobj.inertia_for_mass(m)
    if g.type == GEOM_SPHERE:
        return np.full(3, 2 * m * s[0] ** 2 / (3 if g.shell else 5))
    if g.type == GEOM_CAPSULE:
        hh, h, r = s[1], 2 * s[1], s[0]
        if not g.shell:
            ms = m * 4 * r / (4 * r + 3 * h)
            mc = m - ms
            ix = mc * (3 * r * r + h * h) / 12 + 2 * ms * r * r / 5 + ms * h * (3 * r + 2 * h) / 8
            iz = mc * r * r / 2 + 2 * ms * r * r / 5
            return np.array([ix, ix, iz])
        asph, acyl = 4 * math.pi * r * r, 2 * math.pi * r * h
        ms = m * asph / (asph + acyl)
        mc = m - ms
        hs_com = r / 2
        hs_pos = hh + hs_com
        si = 2 * ms * r * r / 3
        ix = mc * (6 * r * r + h * h) / 12 + si + ms * (hs_pos ** 2 - hs_com ** 2)
        iz = mc * r * r + si
        return np.array([ix, ix, iz])
    if g.type == GEOM_CYLINDER:
        hh, h, r = s[1], 2 * s[1], s[0]
        if not g.shell:
            ix = m * (3 * r * r + h * h) / 12
            return np.array([ix, ix, m * r * r / 2])
        adisk, acyl = math.pi * r * r, 2 * math.pi * r * h
        md = m * adisk / (2 * adisk + acyl)
        mc = m - 2 * md
        ix = mc * (6 * r * r + h * h) / 12 + 2 * (md * r * r / 4 + md * hh * hh)
        iz = mc * r * r + 2 * (md * r * r / 2)
        return np.array([ix, ix, iz])
    s00, s11, s22 = s[0] ** 2, s[1] ** 2, s[2] ** 2
    if g.type == GEOM_ELLIPSOID:
        if not g.shell:
            return m * np.array([s11 + s22, s00 + s22, s00 + s11]) / 5
        eps = 1e-6
        va = 4 * math.pi * s[0] * s[1] * s[2] / 3
        ae, be, ce = s[0] + eps, s[1] + eps, s[2] + eps
        vb = 4 * math.pi * ae * be * ce / 3
        dens = m / (vb - va)
        ia = va * dens * np.array([s11 + s22, s00 + s22, s00 + s11]) / 5
        ib = vb * dens * np.array([be * be + ce * ce, ae * ae + ce * ce, ae * ae + be * be]) / 5
        return ib - ia
    if g.type in (GEOM_HFIELD, GEOM_BOX):
        if not g.shell:
            return m * np.array([s11 + s22, s00 + s22, s00 + s11]) / 3
        lx, ly, lz = 2 * s
        a0, a1, a2 = lx * ly, ly * lz, lz * lx
        tot = 2 * (a0 + a1 + a2)
        m0, m1, m2 = m * a0 / tot, m * a1 / tot, m * a2 / tot
        ix = 2 * (m0 * s22 + m2 * s11 + m0 * ly * ly / 12 + m1 * (ly * ly + lz * lz) / 12
                  + m2 * lz * lz / 12)
        iy = 2 * (m0 * s22 + m1 * s00 + m0 * lx * lx / 12 + m1 * lz * lz / 12
                  + m2 * (lx * lx + lz * lz) / 12)
        iz = 2 * (m1 * s00 + m2 * s11 + m0 * (lx * lx + ly * ly) / 12 + m1 * ly * ly / 12
                  + m2 * lx * lx / 12)
        return np.array([ix, iy, iz])
    return np.zeros(3)


def _geom_mass(g, infer: bool):
    if not infer:
        return
    if g.mass is not None:
        if g.mass == 0:
            g.mass_, g.density = 0.0, 0.0
        elif _volume(g) > EPS:
            g.mass_ = g.mass
            g.density = g.mass / _volume(g)
            g.inertia = _principal_inertia(g)
    else:
        if g.density == 0:
            g.mass_ = 0.0
        else:
            g.mass_ = g.density * _volume(g)
            g.inertia = _principal_inertia(g)
    inertia = g.inertia.tolist()
    if g.mass_ < 0 or any(x < 0 for x in inertia) or g.density < 0:
        raise error_at(g.el, "mass, inertia or density are negative in geom")
    if not (math.isfinite(g.mass_) and all(map(math.isfinite, inertia))):
        # MuJoCo keeps NaN/inf here (a silently broken body); reject it
        raise error_at(g.el, "mass or inertia of geom is not finite")


def _aabb_rbound(g):
    """The geom's local aabb (center, half sizes) and bounding-sphere radius (on
    Python floats: the same doubles as the arithmetic on numpy scalars)."""
    if g.type in (GEOM_MESH, GEOM_SDF):
        aamm = np.asarray(g.meshobj.aamm, dtype=np.float64)
        h = np.maximum(np.abs(aamm[:3]), np.abs(aamm[3:]))
        rbound = float(np.sqrt(np.dot(h, h)))
        aamm = aamm.tolist()
    else:
        s = g.size.tolist()
        if g.type == GEOM_HFIELD:
            hs = g.hfieldobj.size
            aamm = [-hs[0], -hs[1], -hs[3], hs[0], hs[1], hs[2]]
            rbound = math.sqrt(hs[0] ** 2 + hs[1] ** 2 + max(hs[2] ** 2, hs[3] ** 2))
        elif g.type == GEOM_SPHERE:
            aamm = [-s[0]] * 3 + [s[0]] * 3
            rbound = s[0]
        elif g.type == GEOM_CAPSULE:
            aamm = [-s[0], -s[0], -s[0] - s[1], s[0], s[0], s[0] + s[1]]
            rbound = s[0] + s[1]
        elif g.type == GEOM_CYLINDER:
            aamm = [-s[0], -s[0], -s[1], s[0], s[0], s[1]]
            rbound = math.sqrt(s[0] ** 2 + s[1] ** 2)
        elif g.type == GEOM_PLANE:
            big = MAXVAL
            aamm = [-big, -big, -big, big, big, 0.0]
            rbound = 0.0
        else:
            aamm = [-s[0], -s[1], -s[2], s[0], s[1], s[2]]
            rbound = max(s) if g.type == GEOM_ELLIPSOID else \
                math.sqrt(float(np.dot(g.size, g.size)))
    lo, hi = aamm[:3], aamm[3:]
    aabb = np.array([(hi[0] + lo[0]) / 2, (hi[1] + lo[1]) / 2, (hi[2] + lo[2]) / 2,
                     (hi[0] - lo[0]) / 2, (hi[1] - lo[1]) / 2, (hi[2] - lo[2]) / 2])
    return aabb, rbound


_KRONROD_W = (0.01146766, 0.03154605, 0.05239501, 0.07032663, 0.08450236, 0.09517529,
              0.10221647, 0.10474107, 0.10221647, 0.09517529, 0.08450236, 0.07032663,
              0.05239501, 0.03154605, 0.01146766)


# The quadrature nodes l = x^3/(1-x)^2 and dl/dx at the 15 Kronrod abscissae, to
# the digits MuJoCo uses (recomputing them from rounded abscissae drifts ~1e-8).
_KRONROD_L = (7.865151709349917e-08, 1.7347976913907274e-05, 0.0003548008144506193,
              0.002846636252924549, 0.014094260903596077, 0.053063261727396636,
              0.17041978741317773, 0.5, 1.4036301548686991, 3.9353484827022642,
              11.644841677041734, 39.53187807410903, 177.5711362220801,
              1429.4772912937397, 54087.416549217705)
_KRONROD_D = (5.538677720489877e-05, 0.002080868285293228, 0.016514126520723166,
              0.07261900344370877, 0.23985243401862602, 0.6868318249020725,
              1.8551129519182894, 5.0, 14.060031152313941, 43.28941239611009,
              156.58546376397112, 747.9826085305024, 5827.4042950027115,
              116754.0197944512, 25482945.327264845)



def _kappa(dx, dy, dz):
    """Added-mass coefficient of an ellipsoid along its first semi-axis (quadrature)."""
    ix, iy, iz = 1 / (dx * dx), 1 / (dy * dy), 1 / (dz * dz)
    scale = (dx ** 3 * dy * dz) ** 0.4
    kappa = 0.0
    for w, lam0, d in zip(_KRONROD_W, _KRONROD_L, _KRONROD_D):
        lam = scale * lam0
        denom = (1 + lam * ix) * math.sqrt((1 + lam * ix) * (1 + lam * iy) * (1 + lam * iz))
        kappa += scale * d / denom * w
    return kappa * ix


def _fluid(g) -> np.ndarray:
    s = g.size
    if g.type == GEOM_SPHERE:
        dx = dy = dz = s[0]
    elif g.type == GEOM_CAPSULE:
        dx, dy, dz = s[0], s[0], s[1] + s[0]
    elif g.type == GEOM_CYLINDER:
        dx, dy, dz = s[0], s[0], s[1]
    else:
        dx, dy, dz = s[0], s[1], s[2]
    vol = 4.0 / 3.0 * math.pi * dx * dy * dz
    kx, ky, kz = _kappa(dx, dy, dz), _kappa(dy, dz, dx), _kappa(dz, dx, dy)

    def fac(a, b, ka, kb):
        return (a * a - b * b) ** 2 * abs(kb - ka) / max(
            EPS, abs(2 * (a * a - b * b) + (a * a + b * b) * (ka - kb)))

    ixf = fac(dy, dz, ky, kz)
    iyf = fac(dz, dx, kz, kx)
    izf = fac(dx, dy, kx, ky)
    vm = [vol * k / max(EPS, 2 - k) for k in (kx, ky, kz)]
    vi = [vol * f / 5 for f in (ixf, iyf, izf)]
    return np.array([1.0, *g.fluidcoef, *vm, *vi])
