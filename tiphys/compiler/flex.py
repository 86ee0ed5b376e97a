"""Flexes: ``<deformable><flex>`` and ``<flexcomp>`` (the flex_* / flexedge_* fields).

Follows MuJoCo 3.4.0 (user_flexcomp.cc: mjCFlexcomp::Make and its generators;
user_mesh.cc: mjCFlex::Compile, CreateShellPair, the flap stencil and the
stiffness/bending formulas; user_model.cc: the copy into mjModel; engine_setconst.c:
flexedge_length0 and flexedge_invweight0). The algorithms are written anew here:

- a ``<flexcomp>`` is expanded while the body tree is built (TreeBuilder calls
  ``expand_flexcomp`` at the element's place among its parent's children): its points
  and elements are generated, transformed by its pose, and every vertex that is not
  pinned becomes a child body ``<name>_<i>`` (explicit inertial, slide joints, an
  optional sphere geom), made from synthetic spec elements so that default classes
  apply as they do in MuJoCo (the parent's childclass);
- ``compile_flexes`` then compiles every flex (in document order) against the
  compiled tree at qpos0, as mjCFlex::Compile, and fills the Model arrays.

The flex bounding volume hierarchies (flex_bvhadr/bvhnum, bvh_*) are built by
bvh.fill_bvh from the reference-pose vertices compiled here.

Not done: binary GMSH 2.2 files and flexcomp plugins.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import error_at
from ..spec.element import element_class, new_element
from ..spec.schema import SCHEMA
from .attrs import Attrs, parse_floats, parse_ints
from .flex_elasticity import bending as bending_, linear_stiffness, stiffness_2d, stiffness_3d

MINVAL = 1e-15
EPS = 1e-14  # mjEPS
_NUM_EDGES = (1, 3, 6)
# local edges of a simplex, per dim (eledge in user_mesh.cc)
_ELEDGE = (((0, 1),), ((1, 2), (2, 0), (0, 1)),
           ((0, 1), (1, 2), (2, 0), (2, 3), (0, 3), (1, 3)))
_SELFCOLLIDE = {"none": 0, "narrow": 1, "bvh": 2, "sap": 3, "auto": 4}
_ELASTIC2D = {"none": 0, "bend": 1, "stretch": 2, "both": 3}
_FCOMP_TYPES = ("grid", "box", "cylinder", "ellipsoid", "square", "disc", "circle", "mesh",
                "gmsh", "direct")
_DOFS = ("full", "radial", "trilinear", "quadratic")


@dataclass
class FlexSpec:
    """mjsFlex: one flex before compilation."""
    el: object
    name: str = ""
    dim: int = 2
    radius: float = 0.005
    material: str = ""
    rgba: tuple = (0.5, 0.5, 0.5, 1.0)
    flatskin: bool = False
    group: int = 0
    contype: int = 1
    conaffinity: int = 1
    condim: int = 3
    priority: int = 0
    friction: tuple = (1.0, 0.005, 0.0001)
    solmix: float = 1.0
    solref: tuple = (0.02, 1.0)
    solimp: tuple = (0.9, 0.95, 0.001, 0.5, 2.0)
    margin: float = 0.0
    gap: float = 0.0
    internal: bool = False
    selfcollide: int = 4
    activelayers: int = 1
    vertcollide: bool = False
    passive: bool = False
    edgestiffness: float = 0.0
    edgedamping: float = 0.0
    young: float = 0.0
    poisson: float = 0.0
    damping: float = 0.0
    thickness: float = -1.0
    elastic2d: int = 0
    vertbody: list = field(default_factory=list)
    nodebody: list = field(default_factory=list)
    vert: list = field(default_factory=list)
    node: list = field(default_factory=list)
    elem: list = field(default_factory=list)
    texcoord: list = field(default_factory=list)
    elemtexcoord: list = field(default_factory=list)
    order: int = 0  # interpolation order set by a flexcomp (trilinear 1, quadratic 2)
    equality: Optional[tuple] = None  # flexcomp <edge equality>: (solref, solimp)


# ------------------------------------------------------------------------ reading

def _floatvec(el, name):
    text = el.get_attr(name) if el is not None else None
    if text is None:
        return None
    return parse_floats(el, name, text)


def _intvec(el, name):
    text = el.get_attr(name) if el is not None else None
    if text is None:
        return None
    return parse_ints(el, name, text)


def _partial(a: Attrs, name, default):
    """MuJoCo's non-exact ReadAttr: 1..n values over the default."""
    v = a.floats(name, len(default), default, exact=False)
    return tuple(float(x) for x in v)


def _read_common(fs: FlexSpec, el, a: Attrs):
    fs.material = a.str("material", fs.material)
    fs.radius = a.float("radius", fs.radius)
    rgba = a.floats("rgba", 4)
    if rgba is not None:
        fs.rgba = tuple(float(x) for x in rgba)
    fs.flatskin = bool(a.bool("flatskin", fs.flatskin))
    fs.dim = a.int("dim", fs.dim)
    fs.group = a.int("group", fs.group)


def _read_contact(fs: FlexSpec, cont):
    if cont is None:
        return
    a = Attrs(cont, {})
    fs.contype = a.int("contype", fs.contype)
    fs.conaffinity = a.int("conaffinity", fs.conaffinity)
    fs.condim = a.int("condim", fs.condim)
    fs.priority = a.int("priority", fs.priority)
    fs.friction = _partial(a, "friction", fs.friction)
    fs.solmix = a.float("solmix", fs.solmix)
    fs.solref = _partial(a, "solref", fs.solref)
    fs.solimp = _partial(a, "solimp", fs.solimp)
    fs.margin = a.float("margin", fs.margin)
    fs.gap = a.float("gap", fs.gap)
    fs.internal = bool(a.bool("internal", fs.internal))
    fs.selfcollide = a.keyword("selfcollide", _SELFCOLLIDE, fs.selfcollide)
    fs.vertcollide = bool(a.bool("vertcollide", fs.vertcollide))
    fs.passive = bool(a.bool("passive", fs.passive))
    fs.activelayers = a.int("activelayers", fs.activelayers)


def _read_elasticity(fs: FlexSpec, el):
    if el is None:
        return
    a = Attrs(el, {})
    fs.young = a.float("young", fs.young)
    fs.poisson = a.float("poisson", fs.poisson)
    fs.damping = a.float("damping", fs.damping)
    fs.thickness = a.float("thickness", fs.thickness)
    fs.elastic2d = a.keyword("elastic2d", _ELASTIC2D, fs.elastic2d)


def read_flex(el) -> FlexSpec:
    """OneFlex: a ``<deformable><flex>`` element."""
    fs = FlexSpec(el=el, name=el.attr("name") or "")
    a = Attrs(el, {})
    _read_common(fs, el, a)
    body = el.get_attr("body")
    if body is None:
        raise error_at(el, "required attribute missing: 'body'", "body")
    fs.vertbody = body.split()
    node = el.get_attr("node")
    if node is not None:
        fs.nodebody = node.split()
    fs.vert = _floatvec(el, "vertex") or []
    elem = _intvec(el, "element")
    if elem is None:
        raise error_at(el, "required attribute missing: 'element'", "element")
    fs.elem = elem
    fs.texcoord = _floatvec(el, "texcoord") or []
    fs.elemtexcoord = _intvec(el, "elemtexcoord") or []
    _read_contact(fs, el.first("contact"))
    edge = el.first("edge")
    if edge is not None:
        ea = Attrs(edge, {})
        fs.edgestiffness = ea.float("stiffness", fs.edgestiffness)
        fs.edgedamping = ea.float("damping", fs.edgedamping)
    _read_elasticity(fs, el.first("elasticity"))
    return fs


# ------------------------------------------------------------------- flexcomp

class _Fcomp:
    """mjCFlexcomp: the generator's parameters and outputs."""

    def __init__(self, el, builder):
        a = Attrs(el, {})
        self.el, self.a = el, a
        name = el.get_attr("name")
        if name is None:
            raise error_at(el, "required attribute missing: 'name'", "name")
        self.name = name
        self.type = a.keyword("type", {t: t for t in _FCOMP_TYPES}, "grid")
        count = a.ints("count")
        if count is not None and len(count) != 3:
            raise a.error("attribute 'count' does not have enough data" if len(count) < 3
                          else "attribute 'count' has too much data", "count")
        self.count = [10, 10, 10] if count is None else [int(c) for c in count]
        self.spacing = [float(x) for x in a.floats("spacing", 3, (0.02, 0.02, 0.02))]
        self.scale = [float(x) for x in a.floats("scale", 3, (1.0, 1.0, 1.0))]
        self.mass = a.float("mass", 1.0)
        self.inertiabox = a.float("inertiabox", 0.005)
        self.file = el.get_attr("file") or ""
        fs = self.fs = FlexSpec(el=el, name=name)
        _read_common(fs, el, a)
        origin = a.floats("origin", 3)
        if origin is None and self.type == "mesh" and fs.dim == 3:
            raise a.error("origin must be specified for mesh flexcomps if dim=3", "origin")
        self.origin = [0.0, 0.0, 0.0] if origin is None else [float(x) for x in origin]
        self.pos = [float(x) for x in a.floats("pos", 3, (0.0, 0.0, 0.0))]
        # MuJoCo rotates the points by the quat as written (not normalized); the
        # alternative orientations give unit quaternions
        raw = a.floats("quat", 4)
        self.quat = builder.orientation(a) if raw is None else raw
        self.rigid = bool(a.bool("rigid", False))
        self.point = _floatvec(el, "point") or []
        self.element = _intvec(el, "element") or []
        self.texcoord = _floatvec(el, "texcoord") or []
        self.elemtexcoord = []
        self.dof = a.keyword("dof", {d: d for d in _DOFS}, "full")
        self.equality = False
        eq_solref, eq_solimp = (0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0)
        edge = el.first("edge")
        if edge is not None:
            ea = Attrs(edge, {})
            self.equality = bool(ea.bool("equality", False))
            eq_solref = _partial(ea, "solref", eq_solref)
            eq_solimp = _partial(ea, "solimp", eq_solimp)
            fs.edgestiffness = ea.float("stiffness", fs.edgestiffness)
            fs.edgedamping = ea.float("damping", fs.edgedamping)
        _read_elasticity(fs, el.first("elasticity"))
        if fs.elastic2d >= 2 and self.equality:
            raise error_at(el, "elasticity and edge constraints cannot both be present")
        _read_contact(fs, el.first("contact"))
        if self.equality:
            fs.equality = (eq_solref, eq_solimp)
        self.pinid, self.pinrange, self.pingrid, self.pingridrange = [], [], [], []
        for pin in el.find("pin"):
            for attr, lst in (("id", self.pinid), ("range", self.pinrange),
                              ("grid", self.pingrid), ("gridrange", self.pingridrange)):
                v = _intvec(pin, attr)
                if v:
                    lst.extend(v)
        if el.find("plugin"):
            raise NotImplementedError(f"{el.xml_file or '<string>'}:{el.xml_line}: "
                                      f"<flexcomp><plugin> is not supported yet")

    def fail(self, message):
        return error_at(self.el, message)

    # -- generators -----------------------------------------------------------------
    def grid_id(self, *ix):
        c = self.count
        if len(ix) == 2:
            return ix[0] * c[1] + ix[1]
        return ix[0] * c[1] * c[2] + ix[1] * c[2] + ix[2]

    def make_grid(self):
        dim, c, sp = self.fs.dim, self.count, self.spacing
        point, element = self.point, self.element
        needtex = not self.texcoord and bool(self.fs.material)
        if dim == 1:
            for ix in range(c[0]):
                if self.type == "circle":
                    if ix >= c[0] - 1:
                        continue
                    theta = 2 * math.pi / (c[0] - 1)
                    radius = sp[0] / math.sin(theta / 2) / 2
                    point += [radius * math.cos(theta * ix), radius * math.sin(theta * ix), 0.0]
                    element += [ix, 0 if ix == c[0] - 2 else ix + 1]
                else:
                    point += [sp[0] * (ix - 0.5 * (c[0] - 1)), 0.0, 0.0]
                    if ix < c[0] - 1:
                        element += [ix, ix + 1]
        elif dim == 2:
            for ix in range(c[0]):
                for iy in range(c[1]):
                    q2t = [[0, 1, 2], [0, 2, 3]]
                    p = (sp[0] * (ix - 0.5 * (c[0] - 1)), sp[1] * (iy - 0.5 * (c[1] - 1)))
                    point += [p[0], p[1], 0.0]
                    if needtex:
                        self.texcoord += [ix / max(c[0] - 1, 1), iy / max(c[1] - 1, 1)]
                    if self.type == "disc" and ((p[0] < -EPS and p[1] > -EPS)
                                                or (p[0] > -EPS and p[1] < -EPS)):
                        q2t[0][2] = 3
                        q2t[1][0] = 1
                    if ix < c[0] - 1 and iy < c[1] - 1:
                        v = (c[2] * c[1] * ix + c[2] * iy, c[2] * c[1] * (ix + 1) + c[2] * iy,
                             c[2] * c[1] * (ix + 1) + c[2] * (iy + 1),
                             c[2] * c[1] * ix + c[2] * (iy + 1))
                        for s in range(2):
                            element += [v[k] for k in q2t[s]]
        else:
            c2t = ((0, 3, 1, 7), (0, 1, 4, 7), (1, 3, 2, 7), (1, 2, 6, 7), (1, 5, 4, 7),
                   (1, 6, 5, 7))
            for ix in range(c[0]):
                for iy in range(c[1]):
                    for iz in range(c[2]):
                        point += [sp[0] * (ix - 0.5 * (c[0] - 1)), sp[1] * (iy - 0.5 * (c[1] - 1)),
                                  sp[2] * (iz - 0.5 * (c[2] - 1))]
                        if needtex:
                            self.texcoord += [float(np.float32(ix) / np.float32(max(c[0] - 1, 1))),
                                              float(np.float32(iy) / np.float32(max(c[1] - 1, 1)))]
                        if ix < c[0] - 1 and iy < c[1] - 1 and iz < c[2] - 1:
                            def vid(dx, dy, dz):
                                return c[2] * c[1] * (ix + dx) + c[2] * (iy + dy) + iz + dz
                            v = (vid(0, 0, 0), vid(1, 0, 0), vid(1, 1, 0), vid(0, 1, 0),
                                 vid(0, 0, 1), vid(1, 0, 1), vid(1, 1, 1), vid(0, 1, 1))
                            for tet in c2t:
                                element += [v[k] for k in tet]
        if not element:
            raise self.fail("No elements were created in grid")

    def box_id(self, ix, iy, iz):
        c = self.count
        if iz == 0:
            return ix * c[1] + iy + 1
        if iz == c[2] - 1:
            return c[0] * c[1] + ix * c[1] + iy + 1
        if iy == 0:
            return 2 * c[0] * c[1] + ix * (c[2] - 2) + iz
        if iy == c[1] - 1:
            return 2 * c[0] * c[1] + c[0] * (c[2] - 2) + ix * (c[2] - 2) + iz
        if ix == 0:
            return 2 * c[0] * c[1] + 2 * c[0] * (c[2] - 2) + (iy - 1) * (c[2] - 2) + iz
        return (2 * c[0] * c[1] + 2 * c[0] * (c[2] - 2) + (c[1] - 2) * (c[2] - 2)
                + (iy - 1) * (c[2] - 2) + iz)

    def box_project(self, ix, iy, iz):
        c, sp = self.count, self.spacing
        pos = [2.0 * ix / (c[0] - 1) - 1, 2.0 * iy / (c[1] - 1) - 1, 2.0 * iz / (c[2] - 1) - 1]
        size = [0.5 * sp[k] * (c[k] - 1) for k in range(3)]
        if self.type == "box":
            return [pos[k] * size[k] for k in range(3)]
        if self.type == "cylinder":
            L0 = max(abs(pos[0]), abs(pos[1]))
            n = math.sqrt(pos[0] * pos[0] + pos[1] * pos[1])
            if n >= 1e-15:  # mjuu_normvec: leaves tiny vectors alone
                pos[0] /= n
                pos[1] /= n
            return [pos[0] * size[0] * L0, pos[1] * size[1] * L0, pos[2] * size[2]]
        n = math.sqrt(pos[0] * pos[0] + pos[1] * pos[1] + pos[2] * pos[2])
        if n >= 1e-15:
            pos = [x / n for x in pos]
        return [pos[k] * size[k] for k in range(3)]

    def make_square(self):
        self.fs.dim = 2
        self.make_grid()
        if self.type == "disc":
            c, sp = self.count, self.spacing
            size = (0.5 * sp[0] * (c[0] - 1), 0.5 * sp[1] * (c[1] - 1))
            pt = self.point
            for i in range(len(pt) // 3):
                x, y = pt[3 * i], pt[3 * i + 1]
                L0 = max(abs(x), abs(y))
                n = math.sqrt(x * x + y * y)
                if n >= 1e-15:
                    x, y = x / n, y / n
                pt[3 * i], pt[3 * i + 1] = x * size[0] * L0, y * size[1] * L0

    def make_box(self):
        dim, c = self.fs.dim, self.count
        if min(c) < 2:  # (MuJoCo 3.4.0 loops forever on such a box)
            raise self.fail(f"{self.type} flexcomp needs counts of at least 2")
        point, element = self.point, self.element
        needtex = not self.texcoord and bool(self.fs.material)
        tex = self.texcoord

        def f32div(a, b):
            return float(np.float32(a) / np.float32(b))
        if dim == 3:
            point += [0.0, 0.0, 0.0]
        if needtex:
            tex += [0.0, 0.0]
        idx = {}
        n = 0
        zs = range(0, c[2], max(c[2] - 1, 1))
        ys = range(0, c[1], max(c[1] - 1, 1))
        xs = range(0, c[0], max(c[0] - 1, 1))
        # (MuJoCo makes a 2D box open: no top face; its sides reach the top row)
        opened = dim == 2
        for iz in zs:
            if opened and iz != 0:
                continue
            for ix in range(c[0]):
                for iy in range(c[1]):
                    point += self.box_project(ix, iy, iz)
                    idx[(ix, iy, iz)] = n
                    n += 1
                    if needtex:
                        tex += [f32div(ix, max(c[0] - 1, 1)), f32div(iy, max(c[1] - 1, 1))]
        for iy in ys:
            for ix in range(c[0]):
                for iz in range(c[2]):
                    if iz > 0 and (opened or iz < c[2] - 1):
                        point += self.box_project(ix, iy, iz)
                        idx[(ix, iy, iz)] = n
                        n += 1
                        if needtex:
                            tex += [f32div(ix, max(c[0] - 1, 1)), f32div(iz, max(c[2] - 1, 1))]
        for ix in xs:
            for iy in range(c[1]):
                for iz in range(c[2]):
                    if iz > 0 and (opened or iz < c[2] - 1) and 0 < iy < c[1] - 1:
                        point += self.box_project(ix, iy, iz)
                        idx[(ix, iy, iz)] = n
                        n += 1
                        if needtex:
                            tex += [f32div(iy, max(c[1] - 1, 1)), f32div(iz, max(c[2] - 1, 1))]
        B = self.box_id
        for iz in zs:
            if opened and iz != 0:
                continue
            for ix in range(c[0] - 1):
                for iy in range(c[1] - 1):
                    if dim == 3:
                        element += [0, B(ix, iy, iz), B(ix + 1, iy, iz), B(ix + 1, iy + 1, iz),
                                    0, B(ix, iy, iz), B(ix, iy + 1, iz), B(ix + 1, iy + 1, iz)]
                    else:
                        s1, s2 = (1, 0) if iz == 0 else (0, 1)
                        element += [idx[(ix, iy, iz)], idx[(ix + 1, iy + s1, iz)],
                                    idx[(ix + 1, iy + s2, iz)], idx[(ix, iy, iz)],
                                    idx[(ix + s2, iy + 1, iz)], idx[(ix + s1, iy + 1, iz)]]
        for iy in ys:
            for ix in range(c[0] - 1):
                for iz in range(c[2] - 1):
                    if dim == 3:
                        element += [0, B(ix, iy, iz), B(ix + 1, iy, iz), B(ix + 1, iy, iz + 1),
                                    0, B(ix, iy, iz), B(ix, iy, iz + 1), B(ix + 1, iy, iz + 1)]
                    else:
                        x0, dx = (ix, 1) if iy == 0 else (ix + 1, -1)
                        element += [idx[(x0, iy, iz)], idx[(x0 + dx, iy, iz)],
                                    idx[(x0 + dx, iy, iz + 1)], idx[(x0, iy, iz)],
                                    idx[(x0 + dx, iy, iz + 1)], idx[(x0, iy, iz + 1)]]
        for ix in xs:
            for iy in range(c[1] - 1):
                for iz in range(c[2] - 1):
                    if dim == 3:
                        element += [0, B(ix, iy, iz), B(ix, iy + 1, iz), B(ix, iy + 1, iz + 1),
                                    0, B(ix, iy, iz), B(ix, iy, iz + 1), B(ix, iy + 1, iz + 1)]
                    else:
                        y0, dy = (iy, 1) if ix != 0 else (iy + 1, -1)
                        element += [idx[(ix, y0, iz)], idx[(ix, y0 + dy, iz)],
                                    idx[(ix, y0 + dy, iz + 1)], idx[(ix, y0, iz)],
                                    idx[(ix, y0 + dy, iz + 1)], idx[(ix, y0, iz + 1)]]

    def make_mesh(self, builder):
        if not self.file:
            raise self.fail("File is required")
        if self.fs.dim < 2:
            raise self.fail("Flex dim must be at least 2 for mesh")
        if self.file.lower().endswith(".msh"):
            raise self.fail("legacy MSH files are not supported in flexcomp")
        vert, face, texcoord, facetex = _load_mesh(builder, self.el, self.file)
        if len(vert) == 0 or len(face) == 0:
            raise self.fail("Vertex and face data required")
        self.point = [float(x) for x in np.asarray(vert, dtype=np.float64).ravel()]
        if texcoord is not None and len(texcoord):
            self.texcoord = [float(x) for x in np.asarray(texcoord).ravel()]
            self.elemtexcoord = [int(x) for x in np.asarray(facetex).ravel()]
        face = [int(x) for x in np.asarray(face).ravel()]
        if self.fs.dim == 2:
            self.element = face
            return
        o = self.origin
        self.point = list(o) + self.point
        pt = self.point
        for i in range(0, len(face), 3):
            tet = (face[i] + 1, face[i + 1] + 1, face[i + 2] + 1)
            e = [[pt[3 * t + k] - o[k] for k in range(3)] for t in tet]
            nrm = _cross(e[0], e[1])
            if nrm[0] * e[2][0] + nrm[1] * e[2][1] + nrm[2] * e[2][2] < MINVAL:
                continue
            self.element += [0, tet[0], tet[1], tet[2]]

    def make_gmsh(self, builder):
        from .gmsh import GmshError, load_gmsh
        if not self.file:
            raise self.fail("File is required")
        data = builder.ctx.assets.files.read(self.el, "file", self.file, "flexcomp")
        try:
            dim, point, element = load_gmsh(data)
        except GmshError as exc:
            raise self.fail(str(exc)) from None
        except NotImplementedError as exc:
            raise NotImplementedError(f"{self.el.xml_file or '<string>'}:{self.el.xml_line}: "
                                      f"<flexcomp type=\"gmsh\">: {exc}") from None
        self.fs.dim = dim
        self.point, self.element = point, element

    # -- mjCFlexcomp::Make ------------------------------------------------------------
    def make(self, builder, parent_name):
        fs, c = self.fs, self.count
        direct = self.type in ("direct", "mesh", "gmsh")
        if not parent_name:
            raise self.fail("Parent body must have name")
        if fs.dim < 1 or fs.dim > 3:
            raise self.fail("Invalid dim, must be between 1 and 3")
        for k in range(3):
            if c[k] < 1 or (self.dof == "radial" and c[k] < 2 and fs.dim == 3):
                raise self.fail("Count too small")
        minspace = 2 * fs.radius + fs.margin
        if not direct and min(self.spacing) < minspace:
            raise self.fail("Spacing must be larger than geometry size")
        if min(self.scale) < MINVAL:
            raise self.fail("Scale must be larger than mjMINVAL")
        if self.mass < MINVAL or self.inertiabox < MINVAL:
            raise self.fail("Mass and inertiabox must be larger than mjMINVAL")
        if self.type in ("grid", "circle"):
            self.make_grid()
        elif self.type in ("box", "cylinder", "ellipsoid"):
            self.make_box()
        elif self.type in ("square", "disc"):
            self.make_square()
        elif self.type == "mesh":
            self.make_mesh(builder)
        elif self.type == "gmsh":
            self.make_gmsh(builder)
        if self.type in ("box", "cylinder") or (self.type == "grid" and fs.dim == 3):
            fs.flatskin = True
        dim = fs.dim
        if len(self.pinrange) % 2:
            raise self.fail("Pin range number must be multiple of 2")
        if len(self.pingrid) % dim:
            raise self.fail("Pin grid number must be multiple of dim")
        if len(self.pingridrange) % (2 * dim):
            raise self.fail("Pin grid range number of must be multiple of 2*dim")
        if self.type != "grid" and (self.pingrid or self.pingridrange):
            raise self.fail("Pin grid(range) can only be used with grid type")
        if dim == 1 and (self.pingrid or self.pingridrange):
            raise self.fail("Pin grid(range) cannot be used with dim=1")
        if not self.point or not self.element:
            raise self.fail("Point and element required")
        if len(self.point) % 3:
            raise self.fail("Point size must be a multiple of 3")
        if len(self.element) % (dim + 1):
            raise self.fail("Element size must be a multiple of dim+1")
        npnt = len(self.point) // 3
        for i, e in enumerate(self.element):
            if e < 0 or e >= npnt:
                raise self.fail(f"element {i} has point id {e}, number of points is {npnt}")
        pt = np.array(self.point, dtype=np.float64).reshape(npnt, 3)
        if direct and self.scale != [1.0, 1.0, 1.0]:
            pt = pt * np.array(self.scale)
        # pose: mjuu_trnVecPose (rotate, then translate)
        q = [float(x) for x in self.quat]
        pt = np.array([[x + o for x, o in zip(_rot_vec_quat(p, q), self.pos)]
                       for p in pt.tolist()]).reshape(npnt, 3)
        pinned = [self.rigid] * npnt
        rigid, centered = self.rigid, False
        if not rigid:
            for p in self.pinid:
                if p < 0 or p >= npnt:
                    raise self.fail("pinid out of range")
                pinned[p] = True
            for i in range(0, len(self.pinrange), 2):
                lo, hi = self.pinrange[i], self.pinrange[i + 1]
                if not (0 <= lo < npnt and 0 <= hi < npnt):
                    raise self.fail("pinrange out of range")
                for k in range(lo, hi + 1):
                    pinned[k] = True
            for i in range(0, len(self.pingrid), dim):
                g = self.pingrid[i:i + dim]
                if any(g[k] < 0 or g[k] >= c[k] for k in range(dim)):
                    raise self.fail("pingrid out of range")
                if dim > 1:
                    pinned[self.grid_id(*g)] = True
            for i in range(0, len(self.pingridrange), 2 * dim):
                g = self.pingridrange[i:i + 2 * dim]
                if any(g[k] < 0 or g[k] >= c[k % dim] for k in range(2 * dim)):
                    raise self.fail("pingridrange out of range")
                if dim == 2:
                    for ix in range(g[0], g[2] + 1):
                        for iy in range(g[1], g[3] + 1):
                            pinned[self.grid_id(ix, iy)] = True
                elif dim == 3:
                    for ix in range(g[0], g[3] + 1):
                        for iy in range(g[1], g[4] + 1):
                            for iz in range(g[2], g[5] + 1):
                                pinned[self.grid_id(ix, iy, iz)] = True
            if self.dof == "radial":
                pinned[0] = True
            if all(pinned):
                rigid = True
            elif not any(pinned):
                centered = True
        used = [True] * npnt
        if direct:
            used = [False] * npnt
            for e in self.element:
                used[e] = True
            if not all(used):
                shift = np.cumsum([0] + [0 if u else 1 for u in used])[:-1]
                # a point's new id: its id less the unused points before it
                self.element = [e - int(shift[e]) for e in self.element]
        fs.elem = list(self.element)
        fs.texcoord = list(self.texcoord)
        fs.elemtexcoord = list(self.elemtexcoord)
        point = pt.ravel().tolist()
        interp = self.dof in ("trilinear", "quadratic")
        if rigid:  # (MuJoCo returns here: a rigid flexcomp adds no edge equality)
            fs.vert = point
            fs.vertbody = [parent_name]
            fs.equality = None
            return fs, []
        bodymass = self.mass / npnt
        bodyinertia = bodymass * (2.0 * self.inertiabox * self.inertiabox) / 3.0
        made = []  # (name, pos, mass, inertia, joint axes, geom group or None)
        for i in range(npnt):
            if not used[i]:
                continue
            if pinned[i] or interp:
                fs.vertbody.append(parent_name)
                continue
            p = point[3 * i:3 * i + 3]
            if self.dof == "radial":
                n = math.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
                axes = [[x / n for x in p] if n >= 1e-15 else list(p)]
            else:
                axes = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
            bname = f"{self.name}_{i}"
            made.append((bname, p, bodymass, bodyinertia, axes, 4 if fs.vertcollide else None))
            fs.vertbody.append(bname)
            if not centered:
                point[3 * i:3 * i + 3] = [0.0, 0.0, 0.0]
        if interp:
            order = 1 if self.dof == "trilinear" else 2
            fs.order = order
            lo, hi = pt.min(axis=0), pt.max(axis=0)
            step = 1.0 / order
            massp2 = (1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0)
            node = []
            idx = 0
            for i in range(order + 1):
                for j in range(order + 1):
                    for k in range(order + 1):
                        npos = [lo[0] + i * step * (hi[0] - lo[0]),
                                lo[1] + j * step * (hi[1] - lo[1]),
                                lo[2] + k * step * (hi[2] - lo[2])]
                        npos = [float(x) for x in npos]
                        if idx < npnt and pinned[idx]:  # (MuJoCo reads past the end)
                            node += npos
                            fs.nodebody.append(parent_name)
                            idx += 1
                            continue
                        node += [0.0, 0.0, 0.0]
                        m = self.mass / 8 if order == 1 else \
                            self.mass * massp2[i] * massp2[j] * massp2[k]
                        inertia = m * (2.0 * self.inertiabox * self.inertiabox) / 3.0
                        bname = f"{self.name}_{i}_{j}_{k}"
                        made.append((bname, npos, m, inertia, [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                                     0 if fs.vertcollide else None))
                        fs.nodebody.append(bname)
                        idx += 1
            if not centered:
                fs.node = node
        if not centered or interp:
            fs.vert = point
        return fs, made


def _load_mesh(builder, el, file):
    """mjCMesh::LoadFromResource(resource, remove_repeated=true) with tiphys's mesh
    readers: (vertices, faces, texcoords or None, face texcoords)."""
    from ..errors import ModelError
    from .mesh_io import _content_type, _dedup_vertices, _read_obj_full, _read_stl
    data = builder.ctx.assets.files.read(el, "file", file, "flexcomp")
    ctype = _content_type(file, None)
    try:
        if ctype == "model/stl":
            loaded = _read_stl(data, file, True)
        elif ctype == "model/obj":
            loaded = _read_obj_full(data, file, True)
            vert, face = _dedup_vertices(np.asarray(loaded["vert"], np.float32).ravel(),
                                         np.asarray(loaded["face"]))
            loaded["vert"], loaded["face"] = vert, face
        else:
            raise ModelError(f"unknown or unsupported mesh file: '{file}'")
    except ModelError as exc:
        raise error_at(el, exc.detail, "file") from None
    vert = np.asarray(loaded["vert"], dtype=np.float32).astype(np.float64)
    return vert, loaded["face"], loaded["texcoord"], loaded["facetexcoord"]


def _rot_vec_quat(v, q):
    """mjuu_rotVecQuat (q need not be a unit quaternion)."""
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


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _synthetic(tag, path, el, **attrs):
    schema_attrs = _SCHEMA_ATTRS[tag]
    cls = element_class(path, schema_attrs)
    new = new_element(cls, el.xml_file, el.xml_line)
    for k, v in attrs.items():
        new.set(k, v)
    return new


def _body_schema():
    body = SCHEMA["children"]["body"]
    return {"body": body["attrs"], "inertial": body["children"]["inertial"]["attrs"],
            "joint": body["children"]["joint"]["attrs"],
            "geom": body["children"]["geom"]["attrs"],
            "site": body["children"]["site"]["attrs"]}


_SCHEMA_ATTRS = _body_schema()


def _fmt(values):
    return " ".join(repr(float(x)) for x in values)


def expand_flexcomp(builder, el, body, childclass):
    """mjCFlexcomp::Make at the flexcomp's place in its parent's children: the child
    bodies it adds are built now (so their ids come in MuJoCo's order); the flex itself
    is kept on ``builder.flexcomps`` for compile_flexes."""
    comp = _Fcomp(el, builder)
    parent_name = "world" if body.id == 0 else body.name
    fs, made = comp.make(builder, parent_name)
    path = ("mujoco", "worldbody", "body")
    for bname, pos, mass, inertia, axes, group in made:
        b = _synthetic("body", path, el, name=bname, pos=_fmt(pos))
        b.children.append(_synthetic("inertial", path + ("inertial",), el, pos="0 0 0",
                                     mass=repr(float(mass)),
                                     diaginertia=_fmt([inertia] * 3)))
        if group is not None:
            g = _synthetic("geom", path + ("geom",), el, type="sphere",
                           size=repr(float(fs.radius)))
            if group:
                g.set("group", str(group))
            b.children.append(g)
        for axis in axes:
            b.children.append(_synthetic("joint", path + ("joint",), el, type="slide",
                                         pos="0 0 0", axis=_fmt(axis)))
        # MuJoCo: the new body takes its parent body's class (a <frame>'s childclass
        # and pose do not apply)
        builder._body(b, body, None, body.childclass)
    if not hasattr(builder, "flexcomps"):
        builder.flexcomps = {}
    builder.flexcomps[id(el)] = fs


# ---------------------------------------------------------------------- compile

def _flexcomp_elements(spec) -> list:
    out = []

    def walk(el):
        for child in el.children:
            if child.tag == "flexcomp":
                out.append(child)
            elif child.tag in ("body", "frame", "replicate"):
                walk(child)
    for section in spec.sections("worldbody"):
        walk(section)
    return out


def flex_specs(spec, builder) -> list:
    """Every flex in MuJoCo's order: its reader reads <deformable> before
    <worldbody>, so the <deformable> flexes come first, then the flexcomps in the
    order the body tree is read."""
    comps = getattr(builder, "flexcomps", {})
    out = [read_flex(child) for section in spec.sections("deformable")
           for child in section.children if child.tag == "flex"]
    out += [comps[id(el)] for el in _flexcomp_elements(spec) if id(el) in comps]
    return out


def equality_elements(spec, builder) -> list:
    """<equality> children, then the flexcomps with <edge equality="true"> (MuJoCo
    reads <worldbody> last): the order MuJoCo adds equality constraints."""
    comps = getattr(builder, "flexcomps", {})
    out = [el for section in spec.sections("equality") for el in section.children]
    out += [el for el in _flexcomp_elements(spec)
            if id(el) in comps and comps[id(el)].equality is not None]
    return out


def flexcomp_equality(builder, el):
    """(solref, solimp) of a flexcomp's edge equality."""
    return builder.flexcomps[id(el)].equality


class _Compiled:
    pass


def _compile_one(fs: FlexSpec, body_ids: dict, xpos0, xquat0, body_joints, mat_ids):
    from . import rotation as rot
    el, dim = fs.el, fs.dim
    r = _Compiled()
    r.fs = fs
    interp = bool(fs.nodebody)
    if dim < 1 or dim > 3:
        raise error_at(el, "dim must be 1, 2 or 3", "dim")
    if not fs.elem:
        raise error_at(el, "elem is empty", "element")
    if len(fs.elem) % (dim + 1):
        raise error_at(el, "elem size must be multiple of (dim+1)", "element")
    if not fs.vertbody and not interp:
        raise error_at(el, "vertbody and nodebody are both empty", "body")
    if len(fs.vert) % 3:
        raise error_at(el, "vert size must be a multiple of 3", "vertex")
    if fs.edgestiffness > 0 and dim > 1:
        raise error_at(el, "edge stiffness only available for dim=1, please use elasticity "
                           "plugins")
    if interp and fs.selfcollide != 0:
        raise error_at(el, "trilinear interpolation cannot do self-collision")
    if interp and fs.internal:
        raise error_at(el, "trilinear interpolation cannot do internal collisions")
    elem = list(fs.elem)
    nelem = len(elem) // (dim + 1)
    rigid = centered = False
    if not fs.vert:
        centered = True
        nvert = len(fs.vertbody)
    else:
        nvert = len(fs.vert) // 3
        if len(fs.vertbody) == 1:
            rigid = True
    if nvert < dim + 1:
        raise error_at(el, "not enough vertices")
    nnode = len(fs.nodebody)
    order = fs.order
    if nnode and not order:
        order = int(round(nnode ** (1.0 / 3))) - 1
        if nnode != (order + 1) ** 3:
            raise error_at(el, f"number of nodes must be {order}^3 but it is {nnode}")
    if any(e < 0 or e >= nvert for e in elem):
        raise error_at(el, "elem vertex id out of range", "element")
    texcoord = list(fs.texcoord)
    elemtexcoord = list(fs.elemtexcoord)
    if texcoord and len(texcoord) != 2 * nvert and not elemtexcoord:
        raise error_at(el, "two texture coordinates per vertex expected", "texcoord")
    if not elemtexcoord and texcoord:
        elemtexcoord = elem[:3 * nelem]
    matid = -1
    if fs.material:
        if fs.material not in mat_ids:
            raise error_at(el, f"unknown material '{fs.material}' in flex", "material")
        matid = mat_ids[fs.material]
    if not interp and not rigid and len(fs.vertbody) != nvert:
        # (MuJoCo 3.4.0 reads past the body list)
        raise error_at(el, f"{len(fs.vertbody)} bodies for {nvert} vertices: expected one "
                           f"body or one per vertex", "body")
    vertbodyid = []
    for name in fs.vertbody:
        if name not in body_ids:
            raise error_at(el, f"unknown body '{name}' in flex", "body")
        b = body_ids[name]
        vertbodyid.append(b)
        if body_joints[b] != 3 and dim == 2 and fs.elastic2d in (1, 3):
            raise error_at(el, "pins are not supported for bending")
    nodebodyid = []
    for name in fs.nodebody:
        if name not in body_ids:
            raise error_at(el, f"unknown body '{name}' in flex", "node")
        nodebodyid.append(body_ids[name])
    for e in range(nelem):
        s = sorted(elem[e * (dim + 1):(e + 1) * (dim + 1)])
        if any(s[k] == s[k + 1] for k in range(dim)):
            raise error_at(el, "repeated vertex in element", "element")
    if not rigid and not interp:
        rigid = all(b == vertbodyid[0] for b in vertbodyid)
    if not centered and not interp:
        centered = all(v == 0 for v in fs.vert)
    if not centered and interp:
        centered = all(v == 0 for v in fs.node)
    vert = np.array(fs.vert, dtype=np.float64).reshape(-1, 3)
    vx = np.zeros((nvert, 3))
    for i in range(nvert):
        b = vertbodyid[0] if rigid else vertbodyid[i]
        vx[i] = xpos0[b]
        if not centered or interp:
            vx[i] = vx[i] + rot.quat2mat(xquat0[b]) @ vert[i]
    if interp:
        vertbodyid = [-1] * nvert
    node = np.array(fs.node, dtype=np.float64).reshape(-1, 3)
    nx = np.zeros((nnode, 3))
    for i in range(nnode):
        b = nodebodyid[i]
        nx[i] = xpos0[b]
        if not centered:
            nx[i] = nx[i] + rot.quat2mat(xquat0[b]) @ node[i]
    if dim == 3:
        for e in range(nelem):
            v = elem[4 * e:4 * e + 4]
            a, b, c = vx[v[1]] - vx[v[0]], vx[v[2]] - vx[v[0]], vx[v[3]] - vx[v[0]]
            if float(np.dot(np.cross(a, b), c)) > 0:
                elem[4 * e + 1], elem[4 * e + 2] = elem[4 * e + 2], elem[4 * e + 1]
    # edges, numbered as first met
    nle = _NUM_EDGES[dim - 1]
    edges, edge_of, elemedge = [], {}, []
    for e in range(nelem):
        v = elem[e * (dim + 1):(e + 1) * (dim + 1)]
        for a, b in _ELEDGE[dim - 1]:
            key = (min(v[a], v[b]), max(v[a], v[b]))
            k = edge_of.get(key)
            if k is None:
                k = edge_of[key] = len(edges)
                edges.append(key)
            elemedge.append(k)
    nedge = len(edges)
    flaps = _flaps(elem, nelem) if dim == 2 else None
    stiffness = np.zeros((nelem, 21))
    bending = np.zeros((nedge, 17))
    if fs.young > 0:
        if fs.poisson < 0 or fs.poisson >= 0.5:
            raise error_at(el, "Poisson ratio must be in [0, 0.5)", "poisson")
        if interp:
            min_size = nx.size * nx.size // 21  # (integer division, as MuJoCo)
            if min_size > nelem:
                raise error_at(el, f"Trilinear dofs are require at least {min_size} elements")
            stiffness.ravel()[:] = linear_stiffness(nx, fs.young, fs.poisson, order,
                                                     stiffness.size)
        else:
            el4 = np.array(elem, dtype=np.int64).reshape(nelem, dim + 1)
            with np.errstate(all="ignore"):  # degenerate elements: inf/nan, as MuJoCo
                if dim == 2 and fs.elastic2d >= 2 and fs.thickness > 0:
                    stiffness[:, :6] = stiffness_2d(vx, el4, fs.young, fs.poisson,
                                                    fs.thickness)
                elif dim == 3:
                    stiffness[:] = stiffness_3d(vx, el4, fs.young, fs.poisson)
        if dim == 2 and fs.elastic2d in (1, 3):
            if fs.thickness < 0:
                raise error_at(el, "thickness must be positive for bending stiffness",
                               "thickness")
            mu = fs.young / (2 * (1 + fs.poisson))
            for e in range(nedge):
                bending_(bending[e], vx, flaps[e], mu, fs.thickness)
    shell, elemlayer, evpair = _shell_pair(elem, nelem, dim)
    # the root of the element bounding volumes (active elements): vert0 on [0, 1]
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for e in range(nelem):
        if dim == 3 and elemlayer[e] >= fs.activelayers:
            continue
        pts = vx[elem[e * (dim + 1):(e + 1) * (dim + 1)]]
        mn, mx = pts.min(axis=0), pts.max(axis=0)
        c, s = 0.5 * (mx + mn), 0.5 * (mx - mn) + fs.radius
        lo, hi = np.minimum(lo, c - s), np.maximum(hi, c + s)
    center, half = 0.5 * (hi + lo), 0.5 * (hi - lo)
    with np.errstate(divide="ignore", invalid="ignore"):  # flat: inf/nan, as MuJoCo
        vert0 = (vx - center) / (2 * (half - fs.radius)) + 0.5
    r.__dict__.update(
        dim=dim, nvert=nvert, nnode=nnode, nedge=nedge, nelem=nelem, elem=elem, edges=edges,
        elemedge=elemedge, flaps=flaps, stiffness=stiffness, bending=bending, shell=shell,
        elemlayer=elemlayer, evpair=evpair, vert0=vert0, node0=nx, vx=vx, rigid=rigid,
        centered=centered, interp=interp, order=order, vertbodyid=vertbodyid,
        nodebodyid=nodebodyid, matid=matid, texcoord=texcoord, elemtexcoord=elemtexcoord,
        vert=vert, node=node)
    return r


def _flaps(elem, nelem):
    """The flap stencil of each edge of a triangle flex: its two vertices (as met
    first) and the opposite vertex of each adjacent triangle (-1: border)."""
    flaps, edge_of = [], {}
    for t in range(nelem):
        v = elem[3 * t:3 * t + 3]
        for a, b in _ELEDGE[1]:
            key = (min(v[a], v[b]), max(v[a], v[b]))
            opposite = v[(b + 1) % 3]
            k = edge_of.get(key)
            if k is None:
                edge_of[key] = len(flaps)
                flaps.append([v[a], v[b], opposite, -1])
            else:
                flaps[k][3] = opposite
    return flaps


def _shell_pair(elem, nelem, dim):
    """Border fragments (shell), element layers from the border (3D) and
    element-vertex collision pairs (1D, 2D), as CreateShellPair."""
    n1 = dim + 1
    # each element's fragments: vertices (dim of them), in MuJoCo's slot order
    local = {1: ((0,), (1,)), 2: ((0, 1), (2, 0), (1, 2)),
             3: ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2))}[dim]
    frags = []
    for e in range(nelem):
        v = elem[e * n1:(e + 1) * n1]
        for f in local:
            orig = [v[k] for k in f]
            key = sorted(orig) if dim > 1 else orig
            frags.append(key + [e] + orig)
    frags.sort()
    border = [False] * nelem
    borderfrag = [False] * len(frags)
    connect = []
    cnt = 1
    for n in range(1, len(frags)):
        if frags[n - 1][:dim] == frags[n][:dim]:
            connect.append([frags[n - 1][dim], frags[n][dim]] + frags[n][:dim])
            cnt += 1
        else:
            if cnt == 1:
                border[frags[n - 1][dim]] = True
                borderfrag[n - 1] = True
            cnt = 1
    if cnt == 1:
        border[frags[-1][dim]] = True
        borderfrag[-1] = True
    shell = []
    for i, f in enumerate(frags):
        if borderfrag[i]:
            shell.extend(f[dim + 1:])
    if dim < 3:
        layer = [0] * nelem
    else:
        layer = [0 if border[e] else nelem + 1 for e in range(nelem)]
        change = True
        while change:
            change = False
            for c in connect:
                e1, e2 = c[0], c[1]
                if layer[e1] > layer[e2] + 1:
                    layer[e1] = layer[e2] + 1
                    change = True
                elif layer[e2] > layer[e1] + 1:
                    layer[e2] = layer[e1] + 1
                    change = True
    evpair = []
    if dim < 3:
        for c in connect:
            if border[c[0]] or border[c[1]]:
                frag = c[2:]
                for ei in range(2):
                    ev = elem[c[ei] * n1:(c[ei] + 1) * n1]
                    for v in ev:
                        if v not in frag:
                            evpair += [c[1 - ei], v]
                            break
    return shell, layer, evpair


# ---------------------------------------------------------------------- arrays

def compile_flexes(spec, builder, out) -> None:
    """Compile every flex and fill the flex_* / flexedge_* arrays and sizes of ``out``.

    Needs the tree arrays, material ids and the qpos0 kinematics (out._kinematics0)."""
    specs = flex_specs(spec, builder)
    bodies = builder.bodies
    body_ids = {}
    for b in bodies:
        if b.name:
            body_ids.setdefault(b.name, b.id)
    body_ids.setdefault("world", 0)
    k0 = getattr(out, "_kinematics0", None)
    if k0 is None and specs:
        from .tendon import HostKinematics
        k0 = HostKinematics(out, out.qpos0)
    mat_ids = {}
    for i, n in enumerate(getattr(builder.ctx.assets, "names", lambda: {})().get("material",
                                                                                 [])):
        if n:
            mat_ids.setdefault(n, i)
    body_joints = [len(b.joints) for b in bodies]
    comp = [_compile_one(fs, body_ids, k0.xpos, k0.xquat, body_joints, mat_ids)
            for fs in specs]
    _fill(out, comp, specs, bodies)
    # the element hierarchies (bvh.fill_bvh, with the bodies' and meshes')
    out._flex_bvh_input = [
        (c.vx, c.elem, c.dim, c.fs.radius,
         [c.dim < 3 or c.elemlayer[e] < c.fs.activelayers for e in range(c.nelem)])
        for c in comp]
    # flex_edgeequality: an equality constraint names the flex (setConst needs it)
    eq_names = {fs.name for fs in specs if fs.equality is not None}
    eq_names |= {el.attr("flex") for section in spec.sections("equality")
                 for el in section.children if el.tag == "flex"}
    for i, (c, fs) in enumerate(zip(comp, specs)):
        out.flex_edgeequality[i] = int(fs.name in eq_names)
        c.skipjacobian = not (out.flex_edgeequality[i] or fs.edgedamping or fs.edgestiffness
                              or fs.damping)
    _edge_constants(out, comp, k0)
    out.flex_names = [fs.name for fs in specs]
    out.flex_els = [fs.el for fs in specs]


def _fill(out, comp, specs, bodies):
    nflex = len(comp)
    f = {}

    def col(name, values, dtype, shape=None):
        arr = np.array(values, dtype=dtype)
        if shape is not None:
            arr = arr.reshape(shape)
        f[name] = arr

    col("flex_contype", [c.fs.contype for c in comp], np.int32)
    col("flex_conaffinity", [c.fs.conaffinity for c in comp], np.int32)
    col("flex_condim", [c.fs.condim for c in comp], np.int32)
    col("flex_priority", [c.fs.priority for c in comp], np.int32)
    col("flex_solmix", [c.fs.solmix for c in comp], np.float64)
    col("flex_solref", [c.fs.solref for c in comp], np.float64, (nflex, 2))
    col("flex_solimp", [c.fs.solimp for c in comp], np.float64, (nflex, 5))
    col("flex_friction", [c.fs.friction for c in comp], np.float64, (nflex, 3))
    col("flex_margin", [c.fs.margin for c in comp], np.float64)
    col("flex_gap", [c.fs.gap for c in comp], np.float64)
    col("flex_internal", [int(c.fs.internal) for c in comp], np.int32)
    col("flex_selfcollide", [c.fs.selfcollide for c in comp], np.int32)
    col("flex_activelayers", [c.fs.activelayers for c in comp], np.int32)
    col("flex_passive", [int(c.fs.passive) for c in comp], np.int32)
    col("flex_dim", [c.dim for c in comp], np.int32)
    col("flex_matid", [c.matid for c in comp], np.int32)
    col("flex_group", [c.fs.group for c in comp], np.int32)
    col("flex_interp", [c.order if c.interp else 0 for c in comp], np.int32)
    adr = {k: 0 for k in ("node", "vert", "edge", "elem", "elemdata", "elemedge", "shell",
                          "evpair", "texcoord")}
    cols = {k: [] for k in ("nodeadr", "nodenum", "vertadr", "vertnum", "edgeadr", "edgenum",
                            "elemadr", "elemnum", "elemdataadr", "elemedgeadr", "shellnum",
                            "shelldataadr", "evpairadr", "evpairnum", "texcoordadr")}
    nodebodyid, vertbodyid, edge, edgeflap, elem, elemtex, elemedge, elemlayer = \
        [], [], [], [], [], [], [], []
    shell, evpair, vert, vert0, node, node0, stiffness, bending = [], [], [], [], [], [], [], []
    texcoord, edge_rigid = [], []
    weld = [b.weldid for b in bodies]
    for c in comp:
        cols["nodeadr"].append(adr["node"])
        cols["nodenum"].append(c.nnode)
        cols["vertadr"].append(adr["vert"])
        cols["vertnum"].append(c.nvert)
        cols["edgeadr"].append(adr["edge"])
        cols["edgenum"].append(c.nedge)
        cols["elemadr"].append(adr["elem"])
        cols["elemnum"].append(c.nelem)
        cols["elemdataadr"].append(adr["elemdata"])
        cols["elemedgeadr"].append(adr["elemedge"])
        shellnum = len(c.shell) // c.dim
        cols["shellnum"].append(shellnum)
        cols["shelldataadr"].append(adr["shell"] if shellnum else -1)
        cols["evpairadr"].append(adr["evpair"] if c.evpair else -1)
        cols["evpairnum"].append(len(c.evpair) // 2)
        evpair += c.evpair
        elem += c.elem
        if not c.texcoord:
            cols["texcoordadr"].append(-1)
            elemtex += c.elem
        else:
            cols["texcoordadr"].append(adr["texcoord"])
            texcoord += c.texcoord
            et = list(c.elemtexcoord)[:len(c.elem)]
            elemtex += et + [0] * (len(c.elem) - len(et))
        elemedge += c.elemedge
        elemlayer += c.elemlayer
        shell += c.shell
        stiffness.append(c.stiffness)
        bending.append(c.bending)
        if c.centered and not c.interp:
            vert.append(np.zeros((c.nvert, 3)))
        else:
            vert.append(c.vert.reshape(c.nvert, 3))
        if c.centered and c.interp:
            node.append(np.zeros((c.nnode, 3)))
        elif c.interp:
            node.append(c.node.reshape(c.nnode, 3))
        vert0.append(c.vert0)
        node0.append(c.node0)
        vertbodyid += [c.vertbodyid[0]] * c.nvert if c.rigid else c.vertbodyid
        nodebodyid += [c.nodebodyid[0]] * c.nnode if (c.rigid and c.nnode) else c.nodebodyid
        bend = c.dim == 2 and c.fs.elastic2d in (1, 3)
        for k, (v1, v2) in enumerate(c.edges):
            edge.append((v1, v2))
            edgeflap.append((c.flaps[k][2], c.flaps[k][3]) if bend else (-1, -1))
            if c.rigid:
                edge_rigid.append(1)
            elif not c.interp:
                edge_rigid.append(int(weld[c.vertbodyid[v1]] == weld[c.vertbodyid[v2]]))
            else:
                edge_rigid.append(0)
        adr["node"] += c.nnode
        adr["vert"] += c.nvert
        adr["edge"] += c.nedge
        adr["elem"] += c.nelem
        adr["elemdata"] += (c.dim + 1) * c.nelem
        adr["elemedge"] += _NUM_EDGES[c.dim - 1] * c.nelem
        adr["shell"] += len(c.shell)
        adr["evpair"] += len(c.evpair) // 2
        adr["texcoord"] += len(c.texcoord) // 2
    for k, v in cols.items():
        col("flex_" + k, v, np.int32)
    col("flex_nodebodyid", nodebodyid, np.int32)
    col("flex_vertbodyid", vertbodyid, np.int32)
    col("flex_edge", edge, np.int32, (-1, 2))
    col("flex_edgeflap", edgeflap, np.int32, (-1, 2))
    col("flex_elem", elem, np.int32)
    col("flex_elemtexcoord", elemtex, np.int32)
    col("flex_elemedge", elemedge, np.int32)
    col("flex_elemlayer", elemlayer, np.int32)
    col("flex_shell", shell, np.int32)
    col("flex_evpair", evpair, np.int32, (-1, 2))

    def cat(parts, width):
        parts = [np.asarray(p, dtype=np.float64).reshape(-1, width) for p in parts]
        return np.concatenate(parts) if parts else np.zeros((0, width))
    f["flex_vert"] = cat(vert, 3)
    f["flex_vert0"] = cat(vert0, 3)
    f["flex_node"] = cat(node, 3)
    f["flex_node0"] = cat(node0, 3)
    f["flex_radius"] = np.array([c.fs.radius for c in comp], dtype=np.float64)
    f["flex_stiffness"] = cat(stiffness, 21)
    f["flex_bending"] = cat(bending, 17)
    col("flex_damping", [c.fs.damping for c in comp], np.float64)
    col("flex_edgestiffness", [c.fs.edgestiffness for c in comp], np.float64)
    col("flex_edgedamping", [c.fs.edgedamping for c in comp], np.float64)
    col("flex_edgeequality", [0] * nflex, np.int32)  # set by compile_equality
    col("flex_rigid", [int(c.rigid) for c in comp], np.int32)
    col("flexedge_rigid", edge_rigid, np.int32)
    col("flex_centered", [int(c.centered) for c in comp], np.int32)
    col("flex_flatskin", [int(c.fs.flatskin) for c in comp], np.int32)
    f["flex_rgba"] = np.array([np.float32(x) for c in comp for x in c.fs.rgba],
                              dtype=np.float64).reshape(nflex, 4)
    f["flex_texcoord"] = np.array([np.float32(x) for x in texcoord],
                                  dtype=np.float64).reshape(-1, 2)
    for k, v in f.items():
        setattr(out, k, v)
    sizes = dict(nflex=nflex, nflexnode=adr["node"], nflexvert=adr["vert"],
                 nflexedge=adr["edge"], nflexelem=adr["elem"], nflexelemdata=adr["elemdata"],
                 nflexelemedge=adr["elemedge"], nflexshelldata=adr["shell"],
                 nflexevpair=adr["evpair"], nflextexcoord=adr["texcoord"])
    for k, v in sizes.items():
        setattr(out, "_size_" + k, int(v))


def _edge_constants(out, comp, k0):
    """flexedge_length0 (mj_flex at qpos0, every flex taken as non-rigid) and
    flexedge_invweight0 (setConst), from the edge Jacobians mj_flex leaves in mjData.

    mj_flex makes Jacobian rows only for flexes with edge forces (equality, edge
    stiffness or damping, elasticity damping); the others' rows are zero. With sparse
    Jacobians (mj_isSparse) a row is stored after the previous edge's row, and the
    rows of a flex without forces have address and size 0: the next flex's rows then
    start again at 0 and overwrite the rows already stored. setConst reads the rows
    from that storage, so the result is reproduced here as it is (MuJoCo 3.4.0)."""
    length0, invw = [], []
    nv = len(out.dof_bodyid)
    sparse = out.opt.jacobian == 1 or (out.opt.jacobian == 2 and nv >= 60)
    rows = {}  # edge -> dense Jacobian row (dense storage)
    rowadr, rownnz = [], []
    store_val, store_col = {}, {}  # sparse storage: address -> value, column
    e = 0
    for c in comp:
        for v1, v2 in c.edges:
            d = c.vx[v2] - c.vx[v1]
            L = math.sqrt(float(d @ d))
            length0.append(0.0 if c.interp else L)
            rowadr.append(0)
            rownnz.append(0)
            if nv and not c.interp and not c.skipjacobian:
                vb = [c.vertbodyid[0]] * c.nvert if c.rigid else c.vertbodyid
                b1, b2 = vb[v1], vb[v2]
                jp1, _ = k0.jac(c.vx[v1], b1)
                jp2, _ = k0.jac(c.vx[v2], b2)
                vec = d / L if L >= MINVAL else d  # (mju_normalize3 leaves tiny ones)
                row = vec @ (jp2 - jp1)
                if not sparse:
                    rows[e] = row
                else:
                    if e > 0:
                        rowadr[e] = rowadr[e - 1] + rownnz[e - 1]
                    chain = sorted(set(k0.chain(b1)) | set(k0.chain(b2)))
                    for k, col in enumerate(chain):
                        store_val[rowadr[e] + k] = row[col]
                        store_col[rowadr[e] + k] = col
                    rownnz[e] = len(chain)
            e += 1
    Minv = None
    e = 0
    for c in comp:
        for v1, v2 in c.edges:
            w = 0.0
            if nv and not c.interp and not out.flexedge_rigid[e]:
                b1, b2 = c.vertbodyid[v1], c.vertbodyid[v2]
                if out.body_simple[b1] == 2 and out.body_simple[b2] == 2:
                    w = (1 / out.body_mass[b1] + 1 / out.body_mass[b2]) / 2
                else:
                    J = np.zeros(nv)
                    if sparse:
                        for k in range(rowadr[e], rowadr[e] + rownnz[e]):
                            J[store_col[k]] = store_val[k]
                    elif e in rows:
                        J = rows[e]
                    if J.any():
                        if Minv is None:
                            from .actuator import _block_inverse
                            Minv = _block_inverse(k0.mass_blocks()).dense()
                        w = float(J @ Minv @ J)
            invw.append(w)
            e += 1
    out.flexedge_length0 = np.array(length0, dtype=np.float64)
    out.flexedge_invweight0 = np.array(invw, dtype=np.float64)
