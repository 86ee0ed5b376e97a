"""mj_copyBack: write a compiled Model's parameters back into the Spec it came from.

MuJoCo's mj_copyBack (mjCModel::CopyBack, src/user/user_model.cc at 3.4.0) copies the
values a user may edit in an mjModel into the spec it was compiled from: options,
statistics, qpos0/qpos_spring (joint ref/springref), body frames and inertials, joint
and dof parameters, geom/site/camera/light frames and parameters, material colours,
contact pairs, equality data, tendon and actuator parameters, sensor noise/cutoff, user
data, numeric/tuple data, height fields and keyframes. mj_saveXML then writes the spec
in MuJoCo's canonical form: frames flattened, radians, quaternions.

``copy_back(spec, m)`` writes the same values into a tiphys Spec but keeps the tree as
the user wrote it. It compiles ``spec`` again and writes an attribute only where ``m``'s
value differs from that compile, in the element's own terms: inside its ``<frame>``
elements, in degrees where ``<compiler angle="degree">`` says so, a quaternion in place
of euler/axisangle/xyaxes/zaxis (an axisangle where the default class gives one of
those: it would beat a quat), pos/quat/size in place of a geom's or site's ``fromto``
(an element's own ``fromto="nan ..."`` hides one its default class gives, as in MuJoCo),
a mesh geom's pose before its mesh's offset, a ``<freejoint>`` or actuator shortcut that
must take a parameter it has no attribute for as the ``<joint type="free">`` or
``<general>`` it stands for (every value given; the same element object, so that
tiphys.recompile carries its state over). An attribute on an element beats its
default class. Compiling ``spec.to_xml()`` with tiphys or MuJoCo then gives the model
MuJoCo gets after mj_copyBack and mj_saveXML on its own spec (tests/test_copyback.py).

Values are read from ``m.opt``, ``m.vis``, ``m.stat`` and the host copy ``m.arrays``: what
``tiphys.set_param`` writes, and, for the fields it does not take (materials, lights,
keyframes, user data, ...), ``m.arrays`` as the user changed it.

As MuJoCo, which writes these from the spec and not from the copied-back values (the
result is the same model): a body's mass and inertia are written only when it has an
``<inertial>`` and ``inertiafromgeom`` is not "true" (otherwise compiling computes them
from the geoms again); mesh and height-field geoms take no size, and a geom or site
gets only the size values its type uses (MuJoCo's writer drops the others from every
element, so they come from the default class again: values no stage reads); camera
intrinsics
(and the fovy of a camera with a sensor size), connect and weld data between sites,
and a fixed tendon's width and colour are not written; a height field read from a
file keeps the file's; mesh offsets (mesh_pos/quat) move only the poses written for
mesh geoms. And as MuJoCo's writer, compiled values the compiler derived are written
out so that compiling again keeps them: a length range it computed (muscles), and the
stiffness and damping of a ``springdamper`` joint (in place of springdamper) when the
inertia they came from changed.

Cost: one compile of ``spec`` (and, for muscles, its length-range simulation), as
tiphys.compile_model.

Refused, with ValueError: parameters given per world (which world's value?), a spec
that does not compile to a model of ``m``'s sizes and names, a device array written
without its host copy. With NotImplementedError naming the element: a changed value of
an element the spec does not hold one-to-one (made by ``<replicate>``, ``<attach>`` or
``<asset><model>``, ``<composite>``, ``<flexcomp>``), a changed pose of an element that
fusestatic moved to another body or alignfree re-expressed, a plugin actuator's
parameters, a primitive geom fitted to a mesh.
"""
from __future__ import annotations

import math
from dataclasses import fields as dc_fields
from typing import Optional

import numpy as np

from .compiler import rotation as rot
from .kernels.consts import (EQ_CONNECT, EQ_JOINT, EQ_TENDON, EQ_WELD, GEOM_BOX,
                             GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD,
                             GEOM_MESH, GEOM_PLANE, GEOM_SDF, GEOM_SPHERE,
                             INERTIAFROMGEOM_TRUE, JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE,
                             OBJ_SITE)
from .model import Model, check_model

# geom type -> how many size values MuJoCo writes for it (mjGEOMINFO)
_GEOM_NSIZE = {GEOM_PLANE: 3, GEOM_HFIELD: 0, GEOM_SPHERE: 1, GEOM_CAPSULE: 2,
               GEOM_ELLIPSOID: 3, GEOM_CYLINDER: 2, GEOM_BOX: 3, GEOM_MESH: 0, GEOM_SDF: 0}
_ORIENT_ALT = ("axisangle", "xyaxes", "zaxis", "euler")


def _txt(values) -> str:
    """Numbers as MJCF text, every double kept (repr is the shortest exact form)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    return " ".join(repr(float(x)) for x in v)


def _write_rows(el, changed, a, rows) -> None:
    """For each (field, attribute, row) whose field is in ``changed``: that row of the
    field as the element's attribute (numbers as _txt writes them)."""
    for field, attr, row in rows:
        if field in changed:
            el.set(attr, _txt(getattr(a, field)[row]))


def _txt_int(values) -> str:
    return " ".join(str(int(x)) for x in np.asarray(values).reshape(-1))


class _Walk:
    """Where each element of the spec's bodies sits: the accumulated <frame> pose it
    is written in (None outside frames), and which elements are inside <replicate>."""

    def __init__(self, spec, builder):
        self.frame = {}  # id(element) -> (pos, quat) or None
        self.childclass = {}  # id(element) -> the childclass in effect there
        self.body = {}  # id(element) -> the <body> element it is in (None: the world)
        self.replicated = set()  # ids of elements inside <replicate>
        self.builder = builder
        from .compiler.attrs import Attrs
        self._attrs = Attrs
        for w in spec.sections("worldbody"):
            self._children(w, None, False, None)

    def _children(self, el, frame, replicated, cc, body=None):
        for c in el.children:
            tag = c.tag
            if replicated:
                self.replicated.add(id(c))
            if tag == "frame":
                a = self._attrs(c, {})
                pos = a.floats("pos", 3, (0, 0, 0))
                quat = self.builder.orientation(a)
                if frame is not None:
                    pos, quat = rot.frame_accum(frame[0], frame[1], pos, quat)
                self._children(c, (pos, quat), replicated, c.get_attr("childclass") or cc,
                               body)
            elif tag == "replicate":
                self._children(c, frame, True, c.get_attr("childclass") or cc, body)
            elif tag == "body":
                self.frame[id(c)] = frame
                self._children(c, None, replicated, c.get_attr("childclass") or cc, c)
            elif tag in ("joint", "freejoint", "geom", "site", "camera", "light"):
                self.frame[id(c)] = frame
                self.childclass[id(c)] = cc
                self.body[id(c)] = body
            else:  # composite, flexcomp, attach, ...
                self._children(c, frame, True, cc, body)


class _CopyBack:
    def __init__(self, spec, m: Model, base):
        from .compiler.compile import _compiler_options
        from .compiler.defaults import DefaultTree
        from .compiler.tree import TreeBuilder

        self.spec, self.m, self.a, self.b = spec, m, m.arrays, base
        self.ctx = _compiler_options(spec)
        builder = TreeBuilder(spec, DefaultTree(spec), self.ctx)
        self.walk = _Walk(spec, builder)
        self.in_spec = {id(el) for el in spec.root.iter()} - self.walk.replicated
        # what the inertia at qpos0 comes from (springdamper joints are computed from it)
        self.inertia_changed = any(self.changed(f) for f in (
            "body_pos", "body_quat", "body_ipos", "body_iquat", "body_mass", "body_inertia",
            "jnt_pos", "jnt_axis", "qpos0", "dof_armature", "geom_size", "geom_pos",
            "geom_quat", "mesh_pos", "mesh_quat"))
        self.aligned = {i for i, el in enumerate(base.body_els)
                        if i and el is not None and id(el) in self.in_spec
                        and self._aligned(el)}

    # -- helpers ---------------------------------------------------------------------
    def changed(self, name: str, i: Optional[int] = None) -> bool:
        new, old = np.asarray(getattr(self.a, name)), np.asarray(getattr(self.b, name))
        if i is not None:
            new, old = new[i], old[i]
        return not np.array_equal(new, old, equal_nan=True)

    def element(self, el, what: str, i: int):
        """``el`` when the spec holds it one-to-one; else NotImplementedError."""
        if el is not None and id(el) in self.in_spec:
            return el
        name = (self.a.names.get(what) or [""] * (i + 1))[i] if hasattr(self.a, "names") \
            else ""
        label = f"{what} {i}" + (f" '{name}'" if name else "")
        where = ""
        if el is not None and getattr(el, "xml_line", None) is not None:
            where = f" (<{el.tag}> at {el.xml_file or '<string>'}:{el.xml_line})"
        raise NotImplementedError(
            f"copy_back: {label}{where} has changed values, but it was made by "
            f"<replicate>, <attach>, <composite> or <flexcomp> (or another expansion): "
            f"the spec holds no element of its own to write them to")

    def owned(self, el, kind: str, i: int, bodyid: int):
        """``el``, when its compiled pose is still given in the frame of the body it is
        written in: not so for what fusestatic moved to a parent body, or what
        alignfree re-expressed in a free body's inertial frame."""
        body = self.b.body_els[bodyid]
        if self.walk.body.get(id(el), body) is not body:
            raise NotImplementedError(
                f"copy_back: {kind} {i} ({el.xml_file or '<string>'}:{el.xml_line}) has "
                f"a changed pose, but fusestatic moved it to another body: the spec's "
                f"element is written in its own body's frame")
        if bodyid in self.aligned:
            raise NotImplementedError(
                f"copy_back: {kind} {i} ({el.xml_file or '<string>'}:{el.xml_line}) has "
                f"a changed pose on a free body aligned to its inertia (alignfree): its "
                f"compiled frame is not the one the spec writes it in")
        return el

    @staticmethod
    def local(frame, pos, quat):
        """(pos, quat) of a pose given in the body frame, expressed in ``frame``."""
        if frame is None:
            return np.asarray(pos, dtype=np.float64), np.asarray(quat, dtype=np.float64)
        ipos, iquat = rot.frame_invert(frame[0], frame[1])
        return rot.frame_accum(ipos, iquat, pos, quat)

    def set_quat(self, el, quat):
        """Give ``el`` the orientation ``quat``: a quat attribute in place of its own
        alternative (euler, axisangle, ...); an axisangle where its default class gives
        an alternative, which would beat a quat (as in MuJoCo)."""
        for k in _ORIENT_ALT:
            if el.get_attr(k) is not None:
                el.set(k, None)
        inherited = el.tag in ("geom", "site", "camera") and any(
            self.walk.builder._attrs(el, el.tag, self.walk.childclass.get(id(el))).text(k)
            is not None for k in _ORIENT_ALT)
        if not inherited:
            el.set("quat", _txt(quat))
            return
        q = np.asarray(quat, dtype=np.float64)
        q = q / np.linalg.norm(q)
        n = float(np.linalg.norm(q[1:]))
        axis = q[1:] / n if n > 0 else np.array([0.0, 0.0, 1.0])
        angle = 2.0 * math.atan2(n, float(q[0]))
        el.set("quat", None)
        el.set("axisangle", _txt(np.append(axis, self.angle(angle))))

    def angle(self, values):
        return np.asarray(values) * (180.0 / math.pi) if self.ctx.degree else values

    # -- sections --------------------------------------------------------------------
    def run(self):
        self.option()
        self.visual()
        self.statistic()
        self.bodies()
        self.joints()
        self.geoms()
        self.sites()
        self.cameras()
        self.lights()
        self.materials()
        self.pairs()
        self.equalities()
        self.tendons()
        self.actuators()
        self.sensors()
        self.custom()
        self.hfields()
        self.keys()

    def option(self):
        from .compiler.options import (CONES, DISABLE_FLAGS, ENABLE_FLAGS, INTEGRATORS,
                                       JACOBIANS, SOLVERS, Option)
        new, old = self.m.opt.frozen, self.b.opt
        keywords = {"integrator": INTEGRATORS, "cone": CONES, "jacobian": JACOBIANS,
                    "solver": SOLVERS}
        changes = {}
        for f in dc_fields(Option):
            v, v0 = getattr(new, f.name), getattr(old, f.name)
            if v == v0:
                continue
            changes[f.name] = (v, v0)
        if not changes:
            return
        sections = self.spec.sections("option")
        el = sections[-1] if sections else self.spec.root.add("option")
        for name, (v, v0) in changes.items():
            if name in keywords:
                el.set(name, {c: k for k, c in keywords[name].items()}[int(v)])
            elif name in ("disableflags", "enableflags"):
                names = DISABLE_FLAGS if name == "disableflags" else ENABLE_FLAGS
                flag = el.first("flag") or el.add("flag")
                for bit, fname in enumerate(names):
                    if (v ^ v0) >> bit & 1:
                        on = bool(v >> bit & 1)
                        word = ("disable" if on else "enable") if name == "disableflags" \
                            else ("enable" if on else "disable")
                        flag.set(fname, word)
            elif name == "disableactuator":
                groups = [str(g) for g in range(31) if v >> g & 1]
                el.set("actuatorgroupdisable", " ".join(groups) if groups else None)
            elif isinstance(v, tuple):
                el.set(name, _txt(v))
            elif isinstance(v, int):
                el.set(name, str(v))
            else:
                el.set(name, repr(float(v)))

    def visual(self):
        changes = [(section, name, value)
                   for section, table in self.m.vis.items()
                   for name, value in table.items()
                   if value != self.b.vis.get(section, {}).get(name)]
        if not changes:
            return
        sections = self.spec.sections("visual")
        vis = sections[-1] if sections else self.spec.root.add("visual")
        for section, name, value in changes:
            el = vis.first(section) or vis.add(section)
            if isinstance(value, bool):
                el.set(name, "true" if value else "false")
            elif isinstance(value, (int, np.integer)):
                el.set(name, str(int(value)))
            elif isinstance(value, (tuple, list, np.ndarray)):
                el.set(name, _txt(value))
            else:
                el.set(name, repr(float(value)))

    def statistic(self):
        new, old = self.m.stat, self.b.stat
        changes = {}
        for name in ("meaninertia", "meanmass", "meansize", "extent"):
            if float(getattr(new, name)) != float(getattr(old, name)):
                changes[name] = repr(float(getattr(new, name)))
        if not np.array_equal(np.asarray(new.center), np.asarray(old.center)):
            changes["center"] = _txt(new.center)
        if not changes:
            return
        sections = self.spec.sections("statistic")
        el = sections[-1] if sections else self.spec.root.add("statistic")
        for k, v in changes.items():
            el.set(k, v)

    def bodies(self):
        a, b = self.a, self.b
        # free joints: qpos0 is the body's pose (MuJoCo copies it, then the body's own
        # body_pos/quat over it: the latter wins)
        for i in range(1, len(b.body_els)):
            pos_changed = self.changed("body_pos", i)
            quat_changed = self.changed("body_quat", i)
            inert = any(self.changed(f, i) for f in ("body_ipos", "body_iquat", "body_mass",
                                                     "body_inertia"))
            user = self.changed("body_user", i) if np.asarray(a.body_user).size else False
            if not (pos_changed or quat_changed or inert or user):
                continue
            el = self.element(b.body_els[i], "body", i)
            if (pos_changed or quat_changed or inert) and self._aligned(el):
                raise NotImplementedError(
                    f"copy_back: body '{el.get_attr('name') or i}' has a free joint aligned "
                    f"to its inertia (alignfree): its written frame is not its compiled one")
            frame = self.walk.frame.get(id(el))
            if pos_changed or quat_changed:
                pos, quat = self.local(frame, a.body_pos[i], a.body_quat[i])
                if pos_changed or frame is not None:
                    el.set("pos", _txt(pos))
                if quat_changed or frame is not None:
                    self.set_quat(el, quat)
            if inert:
                self._inertial(el, i)
            if user:
                el.set("user", _txt(a.body_user[i]))

    def _aligned(self, el) -> bool:
        free = [c for c in el.children if c.tag in ("joint", "freejoint")]
        if len(free) != 1 or any(c.tag == "body" for c in el.children):
            return False
        j = free[0]
        if j.tag == "joint" and j.get_attr("type") != "free":
            return False
        align = j.get_attr("align")
        return align == "true" or (align in (None, "auto") and self.ctx.alignfree)

    def _inertial(self, el, i):
        inertial = el.first("inertial")
        if inertial is None or self.ctx.inertiafromgeom == INERTIAFROMGEOM_TRUE:
            return  # compiled from the geoms again, as after MuJoCo's copy-back
        a = self.a
        inertial.set("fullinertia", None)
        inertial.set("pos", _txt(a.body_ipos[i]))
        self.set_quat(inertial, a.body_iquat[i])
        inertial.set("mass", repr(float(a.body_mass[i])))
        inertial.set("diaginertia", _txt(a.body_inertia[i]))

    def joints(self):
        a, b = self.a, self.b
        qpos_fields = ("qpos0", "qpos_spring")
        for i, el0 in enumerate(b.joint_els):
            jtype = int(a.jnt_type[i])
            qadr, dadr = int(a.jnt_qposadr[i]), int(a.jnt_dofadr[i])
            jfields = ["jnt_pos", "jnt_axis", "jnt_stiffness", "jnt_range", "jnt_solref",
                       "jnt_solimp", "jnt_margin"]
            dfields = ["dof_solref", "dof_solimp", "dof_armature", "dof_damping",
                       "dof_frictionloss"]
            ch = {f for f in jfields if self.changed(f, i)}
            ch |= {f for f in dfields if self.changed(f, dadr)}
            if np.asarray(a.jnt_user).size and self.changed("jnt_user", i):
                ch.add("jnt_user")
            if jtype in (JNT_SLIDE, JNT_HINGE):
                ch |= {f for f in qpos_fields if self.changed(f, qadr)}
            # (a springdamper joint's stiffness and damping come from the inertia)
            sd = self.inertia_changed and el0 is not None and self._springdamper(el0)
            if not ch and not sd:
                continue
            if jtype == JNT_FREE:
                ch -= {"jnt_pos", "jnt_axis"}  # (always zero and z: MuJoCo writes none)
            elif jtype == JNT_BALL:
                ch.discard("jnt_axis")
            if not ch and not sd:
                continue
            el = self.element(el0, "joint", i)
            if ch & {"jnt_pos", "jnt_axis"}:
                self.owned(el, "joint", i, int(a.jnt_bodyid[i]))
            frame = self.walk.frame.get(id(el))
            if el.tag == "freejoint":
                # a <freejoint> takes no parameters: it becomes <joint type="free">
                el = self._free_joint(el, i)
            if "jnt_pos" in ch and jtype != JNT_FREE:
                pos = a.jnt_pos[i] if frame is None else \
                    rot.local_pos(a.jnt_pos[i], frame[0], frame[1])
                el.set("pos", _txt(pos))
            if "jnt_axis" in ch and jtype not in (JNT_FREE, JNT_BALL):
                axis = a.jnt_axis[i] if frame is None else \
                    rot.quat2mat(frame[1]).T @ np.asarray(a.jnt_axis[i])
                el.set("axis", _txt(axis))
            if sd or (ch & {"jnt_stiffness", "dof_damping"} and self._springdamper(el)):
                # stiffness and damping computed from the joint's inertia at qpos0:
                # kept as compiled (MuJoCo writes them, never springdamper)
                self._hide(el, "springdamper", "0 0")
                ch |= {"jnt_stiffness", "dof_damping"}
            if "jnt_stiffness" in ch:
                el.set("stiffness", repr(float(a.jnt_stiffness[i])))
            if "jnt_range" in ch:
                rng = np.array(a.jnt_range[i], dtype=np.float64)
                if jtype in (JNT_HINGE, JNT_BALL):
                    rng = self.angle(rng)
                el.set("range", _txt(rng))
            _write_rows(el, ch, a, (
                ("jnt_solref", "solreflimit", i), ("jnt_solimp", "solimplimit", i),
                ("jnt_margin", "margin", i), ("jnt_user", "user", i),
                ("dof_solref", "solreffriction", dadr),
                ("dof_solimp", "solimpfriction", dadr), ("dof_armature", "armature", dadr),
                ("dof_damping", "damping", dadr), ("dof_frictionloss", "frictionloss", dadr)))
            if "qpos0" in ch:
                ref = float(a.qpos0[qadr])
                el.set("ref", repr(float(self.angle(ref)) if jtype == JNT_HINGE else ref))
            if "qpos_spring" in ch:
                ref = float(a.qpos_spring[qadr])
                el.set("springref", repr(float(self.angle(ref)) if jtype == JNT_HINGE
                                         else ref))
        # free joints' qpos0 is the body pose: written by bodies() (body_pos/quat)

    def _springdamper(self, el) -> bool:
        if el.tag != "joint":
            return False
        attrs = self.walk.builder._attrs(el, "joint", self.walk.childclass.get(id(el)))
        sd = attrs.floats("springdamper", 2, (0, 0))
        return bool(sd[0] or sd[1])

    def _hide(self, el, attr, neutral):
        """Take ``attr`` off ``el``; where its default class gives one, hide that with
        ``neutral`` (a value the compiler reads as not given)."""
        el.set(attr, None)
        attrs = self.walk.builder._attrs(el, el.tag, self.walk.childclass.get(id(el)))
        if attrs.text(attr) is not None:
            el.set(attr, neutral)

    def _free_joint(self, el, i):
        """<freejoint> ``el`` made a <joint type="free"> with every parameter given (a
        <freejoint> takes no default class; a <joint> would)."""
        a = self.a
        given = {k: el.get_attr(k) for k in ("name", "align")}
        new = self._replace(el, "joint")
        new.set("type", "free")
        for k, v in given.items():
            if v is not None:
                new.set(k, v)
        dadr = int(a.jnt_dofadr[i])
        new.set("group", str(int(a.jnt_group[i])))
        new.set("stiffness", repr(float(a.jnt_stiffness[i])))
        new.set("margin", repr(float(a.jnt_margin[i])))
        new.set("solreflimit", _txt(a.jnt_solref[i]))
        new.set("solimplimit", _txt(a.jnt_solimp[i]))
        new.set("solreffriction", _txt(a.dof_solref[dadr]))
        new.set("solimpfriction", _txt(a.dof_solimp[dadr]))
        new.set("armature", repr(float(a.dof_armature[dadr])))
        new.set("damping", repr(float(a.dof_damping[dadr])))
        new.set("frictionloss", repr(float(a.dof_frictionloss[dadr])))
        new.set("actuatorgravcomp", "true" if int(a.jnt_actgravcomp[i]) else "false")
        new.set("range", _txt(a.jnt_range[i]))
        new.set("actuatorfrcrange", _txt(a.jnt_actfrcrange[i]))
        if np.asarray(a.jnt_user).size:
            new.set("user", _txt(a.jnt_user[i]))
        return new

    def _replace(self, el, tag):
        """``el`` made a <tag> element, in place: the same object (tiphys.recompile
        carries the state of a joint or actuator over by element), its attributes
        cleared but for its children."""
        parent = self._parent_of(el)
        probe = parent.add(tag)  # (the class the reader makes for <tag> there)
        parent.children.pop()
        keep = ("children", "xml_file", "xml_line", "xml_incdir")
        for key in [k for k in el.__dict__ if k not in keep]:
            del el.__dict__[key]
        el.__class__ = type(probe)
        return el

    def _parent_of(self, el):
        for p in self.spec.root.iter():
            for c in p.children:
                if c is el:
                    return p
        raise ValueError("element not in spec")  # (checked by element() before)

    def _has_fromto(self, el) -> bool:
        text = self.walk.builder._attrs(el, el.tag,
                                        self.walk.childclass.get(id(el))).text("fromto")
        return text is not None and not text.split()[0].lower().startswith("nan")

    def _pose(self, el, pos, quat, mesh_pose=None):
        """Write a geom's or site's compiled pose in the element's own terms."""
        frame = self.walk.frame.get(id(el))
        if mesh_pose is not None:  # compiled = frame * local * mesh offset
            mpos, mquat = rot.frame_invert(*mesh_pose)
            pos, quat = rot.frame_accum(pos, quat, mpos, mquat)
        p, q = self.local(frame, pos, quat)
        self._hide(el, "fromto", "nan nan nan nan nan nan")  # (MuJoCo: NaN, not given)
        el.set("pos", _txt(p))
        self.set_quat(el, q)

    def geoms(self):
        a, b = self.a, self.b
        simple = ("geom_friction", "geom_solref", "geom_solimp", "geom_rgba", "geom_solmix",
                  "geom_margin", "geom_gap")
        for i, el0 in enumerate(b.geom_els):
            gtype = int(a.geom_type[i])
            mesh = int(a.geom_dataid[i]) if gtype in (GEOM_MESH, GEOM_SDF) else -1
            nsize = _GEOM_NSIZE.get(gtype, 0)
            size_ch = nsize > 0 and self.changed("geom_size", i)
            pose_ch = self.changed("geom_pos", i) or self.changed("geom_quat", i) or (
                mesh >= 0 and (self.changed("mesh_pos", mesh) or
                               self.changed("mesh_quat", mesh)))
            ch = {f for f in simple if self.changed(f, i)}
            if np.asarray(a.geom_user).size and self.changed("geom_user", i):
                ch.add("geom_user")
            if not (ch or size_ch or pose_ch):
                continue
            el = self.element(el0, "geom", i)
            if pose_ch or size_ch:
                self.owned(el, "geom", i, int(a.geom_bodyid[i]))
            fromto = self._has_fromto(el)
            if (size_ch or pose_ch) and gtype not in (GEOM_MESH, GEOM_SDF) \
                    and el.get_attr("mesh"):
                raise NotImplementedError(
                    f"copy_back: geom '{el.get_attr('name') or i}' "
                    f"({el.xml_file or '<string>'}:{el.xml_line}) is a primitive fitted to "
                    f"mesh '{el.get_attr('mesh')}': its size and pose come from the mesh")
            if pose_ch or (fromto and size_ch):
                mesh_pose = (a.mesh_pos[mesh], a.mesh_quat[mesh]) if mesh >= 0 else None
                self._pose(el, a.geom_pos[i], a.geom_quat[i], mesh_pose)
            if size_ch or (fromto and pose_ch):
                el.set("size", _txt(a.geom_size[i][:nsize]))
            names = {"geom_friction": "friction", "geom_solref": "solref",
                     "geom_solimp": "solimp", "geom_rgba": "rgba", "geom_solmix": "solmix",
                     "geom_margin": "margin", "geom_gap": "gap", "geom_user": "user"}
            for f in ch:
                el.set(names[f], _txt(getattr(a, f)[i]))

    def sites(self):
        a, b = self.a, self.b
        for i, el0 in enumerate(b.site_els):
            stype = int(a.site_type[i])
            nsize = _GEOM_NSIZE.get(stype, 0)
            size_ch = nsize > 0 and self.changed("site_size", i)
            pose_ch = self.changed("site_pos", i) or self.changed("site_quat", i)
            rgba_ch = self.changed("site_rgba", i)
            user_ch = np.asarray(a.site_user).size and self.changed("site_user", i)
            if not (size_ch or pose_ch or rgba_ch or user_ch):
                continue
            el = self.element(el0, "site", i)
            if pose_ch or size_ch:
                self.owned(el, "site", i, int(a.site_bodyid[i]))
            fromto = self._has_fromto(el)
            if pose_ch or (fromto and size_ch):
                self._pose(el, a.site_pos[i], a.site_quat[i])
            if size_ch or (fromto and pose_ch):
                el.set("size", _txt(a.site_size[i][:nsize]))
            if rgba_ch:
                el.set("rgba", _txt(a.site_rgba[i]))
            if user_ch:
                el.set("user", _txt(a.site_user[i]))

    def cameras(self):
        a, b = self.a, self.b
        for i, el0 in enumerate(b.cam_els):
            pose_ch = self.changed("cam_pos", i) or self.changed("cam_quat", i)
            # (cam_intrinsic: MuJoCo copies it back, but writes the focal and principal
            # values the spec gave, so an edit is lost there: left out here too)
            ch = {f for f in ("cam_fovy", "cam_ipd", "cam_resolution") if self.changed(f, i)}
            if np.asarray(a.cam_user).size and self.changed("cam_user", i):
                ch.add("cam_user")
            if not (pose_ch or ch):
                continue
            el = self.element(el0, "camera", i)
            if pose_ch:
                self.owned(el, "camera", i, int(a.cam_bodyid[i]))
            if pose_ch:
                frame = self.walk.frame.get(id(el))
                p, q = self.local(frame, a.cam_pos[i], a.cam_quat[i])
                el.set("pos", _txt(p))
                self.set_quat(el, q)
            sensor = a.cam_sensorsize[i][0] > 0 and a.cam_sensorsize[i][1] > 0
            if "cam_fovy" in ch and not sensor:  # (with a sensor size, from intrinsics)
                el.set("fovy", repr(float(a.cam_fovy[i])))
            if "cam_ipd" in ch:
                el.set("ipd", repr(float(a.cam_ipd[i])))
            if "cam_resolution" in ch:
                el.set("resolution", _txt_int(a.cam_resolution[i]))
            if "cam_user" in ch:
                el.set("user", _txt(a.cam_user[i]))

    def lights(self):
        a, b = self.a, self.b
        names = {"light_attenuation": "attenuation", "light_cutoff": "cutoff",
                 "light_exponent": "exponent", "light_ambient": "ambient",
                 "light_diffuse": "diffuse", "light_specular": "specular"}
        for i, el0 in enumerate(b.light_els):
            pos_ch, dir_ch = self.changed("light_pos", i), self.changed("light_dir", i)
            ch = [f for f in names if self.changed(f, i)]
            if not (pos_ch or dir_ch or ch):
                continue
            el = self.element(el0, "light", i)
            if pos_ch or dir_ch:
                self.owned(el, "light", i, int(a.light_bodyid[i]))
            frame = self.walk.frame.get(id(el))
            if pos_ch:
                pos = a.light_pos[i] if frame is None else \
                    rot.local_pos(a.light_pos[i], frame[0], frame[1])
                el.set("pos", _txt(pos))
            if dir_ch:
                d = a.light_dir[i] if frame is None else \
                    rot.quat2mat(frame[1]).T @ np.asarray(a.light_dir[i])
                el.set("dir", _txt(d))
            for f in ch:
                el.set(names[f], _txt(getattr(a, f)[i]))

    def materials(self):
        a, b = self.a, self.b
        names = {"mat_texrepeat": "texrepeat", "mat_emission": "emission",
                 "mat_specular": "specular", "mat_shininess": "shininess",
                 "mat_reflectance": "reflectance", "mat_rgba": "rgba"}
        for i, el0 in enumerate(getattr(b, "mat_els", None) or ()):
            ch = [f for f in names if self.changed(f, i)]
            if ch:
                el = self.element(el0, "material", i)
                for f in ch:
                    el.set(names[f], _txt(getattr(a, f)[i]))

    def pairs(self):
        names = {"pair_solref": "solref", "pair_solreffriction": "solreffriction",
                 "pair_solimp": "solimp", "pair_margin": "margin", "pair_gap": "gap",
                 "pair_friction": "friction"}
        self._simple("pair_els", "pair", names)

    def _simple(self, els_name, kind, names, skip=None):
        a, b = self.a, self.b
        for i, el0 in enumerate(getattr(b, els_name, None) or ()):
            ch = [f for f in names if self.changed(f, i)]
            if ch and skip is not None and el0 is not None:
                ch = [f for f in ch if f not in skip(el0)]
            if ch:
                el = self.element(el0, kind, i)
                for f in ch:
                    el.set(names[f], _txt(getattr(a, f)[i]))

    def equalities(self):
        a, b = self.a, self.b
        for i, el0 in enumerate(b.eq_els):
            ch = [f for f in ("eq_data", "eq_solref", "eq_solimp") if self.changed(f, i)]
            if not ch:
                continue
            el = self.element(el0, "equality", i)
            if "eq_solref" in ch:
                el.set("solref", _txt(a.eq_solref[i]))
            if "eq_solimp" in ch:
                el.set("solimp", _txt(a.eq_solimp[i]))
            if "eq_data" not in ch:
                continue
            data = np.asarray(a.eq_data[i], dtype=np.float64)
            etype = int(a.eq_type[i])
            by_site = int(a.eq_objtype[i]) == OBJ_SITE
            if etype == EQ_CONNECT and not by_site:
                el.set("anchor", _txt(data[:3]))
            elif etype == EQ_WELD:
                if not by_site:
                    el.set("anchor", _txt(data[:3]))
                    el.set("relpose", _txt(data[3:10]))
                el.set("torquescale", repr(float(data[10])))
            elif etype in (EQ_JOINT, EQ_TENDON):
                el.set("polycoef", _txt(data[:5]))
            # (connect/weld between sites: MuJoCo writes no data for them)

    def tendons(self):
        names = {"tendon_range": "range", "tendon_actfrcrange": "actuatorfrcrange",
                 "tendon_solref_lim": "solreflimit", "tendon_solimp_lim": "solimplimit",
                 "tendon_solref_fri": "solreffriction", "tendon_solimp_fri": "solimpfriction",
                 "tendon_rgba": "rgba", "tendon_width": "width", "tendon_margin": "margin",
                 "tendon_stiffness": "stiffness", "tendon_damping": "damping",
                 "tendon_armature": "armature", "tendon_frictionloss": "frictionloss"}
        if np.asarray(self.a.tendon_user).size:
            names["tendon_user"] = "user"
        self._simple("tendon_els", "tendon", names,
                     # a fixed tendon takes no width nor colour (MuJoCo writes none)
                     skip=lambda el: ("tendon_width", "tendon_rgba") if el.tag == "fixed"
                     else ())

    def actuators(self):
        a, b = self.a, self.b
        names = {"actuator_ctrlrange": "ctrlrange", "actuator_forcerange": "forcerange",
                 "actuator_actrange": "actrange", "actuator_lengthrange": "lengthrange",
                 "actuator_gear": "gear", "actuator_cranklength": "cranklength"}
        if np.asarray(a.actuator_user).size:
            names["actuator_user"] = "user"
        prm = ("actuator_dynprm", "actuator_gainprm", "actuator_biasprm")
        for i, el0 in enumerate(b.actuator_els):
            ch = [f for f in names if self.changed(f, i)]
            if "actuator_lengthrange" not in ch and self._computed_lengthrange(el0, i):
                ch.append("actuator_lengthrange")
            prm_ch = any(self.changed(f, i) for f in prm)
            if not (ch or prm_ch):
                continue
            el = self.element(el0, "actuator", i)
            if el.tag == "plugin":
                raise NotImplementedError(
                    f"copy_back: actuator {i} ({el.xml_file or '<string>'}:{el.xml_line}) "
                    f"is a plugin actuator: its parameters are the plugin's configuration")
            # a shortcut that lacks an attribute to write (adhesion: gear) becomes the
            # <general> it stands for, as one whose dyn/gain/bias parameters change
            missing = any(names[f] not in el.attr_names for f in ch)
            if (prm_ch or missing) and el.tag != "general":
                el = self._general(el, i)
                prm_ch = True
            if prm_ch:
                el.set("dynprm", _txt(a.actuator_dynprm[i]))
                el.set("gainprm", _txt(a.actuator_gainprm[i]))
                el.set("biasprm", _txt(a.actuator_biasprm[i]))
            for f in ch:
                el.set(names[f], _txt(getattr(a, f)[i]))

    def _computed_lengthrange(self, el, i) -> bool:
        """Whether actuator i's length range was computed by the compiler (from its
        joint's or tendon's limits, or simulated): MuJoCo copies it back and writes it,
        so that compiling again keeps it whatever else changed (an edited joint range,
        tendon path, ...); so is it here."""
        lr = np.asarray(self.a.actuator_lengthrange[i], dtype=np.float64)
        if not lr.any() or el is None or el.tag == "plugin" or id(el) not in self.in_spec:
            return False
        given = self.walk.builder._attrs(el, el.tag, None).floats("lengthrange", 2, (0, 0))
        return not np.array_equal(given, lr)

    def _general(self, el, i):
        """The actuator shortcut ``el`` made the <general> it compiles to."""
        from .compiler.actuator import BIAS, DYN, GAIN
        a = self.a
        given = {k: el.get_attr(k) for k in (
            "name", "class", "joint", "jointinparent", "tendon", "slidersite", "cranksite",
            "site", "refsite", "body", "user")}
        new = self._replace(el, "general")
        for k, v in given.items():
            if v is not None:
                new.set(k, v)
        tf = {0: "false", 1: "true"}
        new.set("group", str(int(a.actuator_group[i])))
        new.set("ctrllimited", tf[int(a.actuator_ctrllimited[i])])
        new.set("forcelimited", tf[int(a.actuator_forcelimited[i])])
        new.set("actlimited", tf[int(a.actuator_actlimited[i])])
        for f, k in (("actuator_ctrlrange", "ctrlrange"),
                     ("actuator_forcerange", "forcerange"),
                     ("actuator_actrange", "actrange"),
                     ("actuator_lengthrange", "lengthrange"), ("actuator_gear", "gear")):
            new.set(k, _txt(getattr(a, f)[i]))
        if float(a.actuator_cranklength[i]):  # (only a slider-crank takes one)
            new.set("cranklength", repr(float(a.actuator_cranklength[i])))
        new.set("actearly", tf[int(a.actuator_actearly[i])])
        if int(a.actuator_actnum[i]) != (0 if int(a.actuator_dyntype[i]) == 0 else 1):
            new.set("actdim", str(int(a.actuator_actnum[i])))
        for f, table, k in (("actuator_dyntype", DYN, "dyntype"),
                            ("actuator_gaintype", GAIN, "gaintype"),
                            ("actuator_biastype", BIAS, "biastype")):
            new.set(k, {v: n for n, v in table.items()}[int(getattr(a, f)[i])])
        return new

    def sensors(self):
        names = {"sensor_cutoff": "cutoff", "sensor_noise": "noise"}
        if np.asarray(self.a.sensor_user).size:
            names["sensor_user"] = "user"
        self._simple("sensor_els", "sensor", names)

    def custom(self):
        a, b = self.a, self.b
        numerics = [c for s in self.spec.sections("custom") for c in s.children
                    if c.tag == "numeric"]
        for i in range(int(a.sizes.get("nnumeric", 0))):
            adr, n = int(a.numeric_adr[i]), int(a.numeric_size[i])
            new = np.asarray(a.numeric_data)[adr:adr + n]
            if np.array_equal(new, np.asarray(b.numeric_data)[adr:adr + n]):
                continue
            el = numerics[i] if i < len(numerics) and id(numerics[i]) in self.in_spec \
                else None
            el = self.element(el, "numeric", i)
            el.set("data", _txt(new))
            if el.get_attr("size") is not None:
                el.set("size", str(n))
        for i, el0 in enumerate(getattr(b, "tuple_els", None) or ()):
            adr, n = int(a.tuple_adr[i]), int(a.tuple_size[i])
            new = np.asarray(a.tuple_objprm)[adr:adr + n]
            if np.array_equal(new, np.asarray(b.tuple_objprm)[adr:adr + n]):
                continue
            el = self.element(el0, "tuple", i)
            elements = [c for c in el.children if c.tag == "element"]
            for k, e in enumerate(elements):
                if new[k] != np.asarray(b.tuple_objprm)[adr + k]:
                    e.set("prm", repr(float(new[k])))

    def hfields(self):
        a, b = self.a, self.b
        for i, el0 in enumerate(getattr(b, "hfield_els", None) or ()):
            adr = int(a.hfield_adr[i])
            nrow, ncol = int(a.hfield_nrow[i]), int(a.hfield_ncol[i])
            new = np.asarray(a.hfield_data)[adr:adr + nrow * ncol]
            if np.array_equal(new, np.asarray(b.hfield_data)[adr:adr + nrow * ncol]):
                continue
            el = self.element(el0, "hfield", i)
            if el.get_attr("file") is not None:
                continue  # from a file: MuJoCo writes no elevation for it either
            # the elevation is written top row first (MuJoCo flips the rows back)
            el.set("elevation", _txt(new.reshape(nrow, ncol)[::-1]))

    def keys(self):
        a, b = self.a, self.b
        nkey = int(a.sizes.get("nkey", 0))
        if not nkey:
            return
        keys = [c for s in self.spec.sections("keyframe") for c in s.children
                if c.tag == "key"]
        fields = [(f, k) for f, k in (("key_time", "time"), ("key_qpos", "qpos"),
                                      ("key_qvel", "qvel"), ("key_act", "act"),
                                      ("key_mpos", "mpos"), ("key_mquat", "mquat"),
                                      ("key_ctrl", "ctrl"))
                  if np.asarray(getattr(a, f)).size]
        # a key that does not give qpos (mpos, mquat) takes qpos0 (the mocap bodies'
        # pose): where those change, the key keeps its compiled values, as MuJoCo's
        mocap = [i for i in range(len(a.body_mocapid)) if int(a.body_mocapid[i]) >= 0]
        implied = set()
        if self.changed("qpos0"):
            implied.add("key_qpos")
        if any(self.changed("body_pos", i) for i in mocap):
            implied.add("key_mpos")
        if any(self.changed("body_quat", i) for i in mocap):
            implied.add("key_mquat")
        changed = [[f for f, _ in fields if self.changed(f, i)] for i in range(nkey)]
        if len(keys) < nkey and (implied or any(changed[len(keys):])):
            # keys <size nkey> pads with: written out, each value given
            sections = self.spec.sections("keyframe")
            section = sections[-1] if sections else self.spec.root.add("keyframe")
            for i in range(len(keys), nkey):
                el = section.add("key")
                self.in_spec.add(id(el))
                keys.append(el)
                changed[i] = [f for f, _ in fields]
        for i in range(nkey):
            el = keys[i] if i < len(keys) and id(keys[i]) in self.in_spec else None
            if el is None:
                if changed[i] or implied:  # (an attached model's key)
                    self.element(None, "key", i)
                continue
            ch = changed[i] + [f for f, k in fields if f in implied and f not in changed[i]
                               and el.get_attr(k) is None]
            for f, k in fields:
                if f in ch:
                    el.set(k, _txt(getattr(a, f)[i]))


def copy_back(spec, m: Model) -> None:
    """mj_copyBack: write ``m``'s current parameters into ``spec``, the Spec it was
    compiled from, so that compiling ``spec`` (or its ``to_xml()``) gives ``m``'s
    values. See the module's docstring for what is written and how."""
    from .compiler.compile import compile_spec
    from .lengthrange import set_length_range
    from .setconst import _check_host_copy, refuse_per_world
    from .spec import Spec

    check_model(m, "copy_back")
    if not isinstance(spec, Spec):
        raise TypeError(f"copy_back: expected a tiphys.Spec, got {type(spec).__name__}")
    refuse_per_world(m, "copy_back", "a spec holds one model")
    _check_host_copy(m, "copy_back")
    base = compile_spec(spec)
    if getattr(base, "lengthrange_pending", None):
        mb = Model(base)  # the length ranges compiling computes, to compare with
        set_length_range(mb)
        base = mb.arrays
    _check_match(base, m.arrays)
    _CopyBack(spec, m, base).run()


def _check_match(base, a) -> None:
    diff = [f"{k} {a.sizes.get(k)} in the model, {v} from the spec"
            for k, v in base.sizes.items() if a.sizes.get(k) != v]
    if diff:
        raise ValueError("copy_back: the spec does not compile to a model of the same "
                         "sizes (was it compiled from this spec, and has the spec changed "
                         "since?): " + "; ".join(diff[:6]))
    for kind, names in base.names.items():
        if list(names) != list(a.names.get(kind, names)):
            raise ValueError(f"copy_back: the spec's {kind} names differ from the model's "
                             f"(was it compiled from this spec?)")
