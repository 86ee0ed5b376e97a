"""Mesh polygons (``mesh_poly*``): coplanar faces merged, as MuJoCo 3.4.0's
MakePolygons (user_mesh.cc), for multiccd's face clipping (kernels/multiccd.py).

Faces join a polygon through MuJoCo's std::set of polygons, rebuilt here node for node
as libc++'s red-black tree (its comparator is not a strict weak order, so the tree's
shape decides which polygon a face joins); each polygon's boundary edges then give its
vertex loops.

The tree walk and each polygon's edges and loops have a C twin (_polytree.c, built
by setup.py where a C compiler is found) that gives the same answers from arrays and
is used when it imports; TIPHYS_PURE_PYTHON_MESH=1 in the environment keeps to the
Python code, which stays the reference.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os

import numpy as np

from ..kernels.consts import EPS, MINVAL
from .mesh_math import _stable_argsort

try:
    from ._polytree import polygons as _c_polygons
    from ._polytree import walk as _c_walk
    POLYTREE_ERROR = None
except ImportError as exc:  # not built (no C compiler at install): the Python walk
    if exc.name != f"{__package__}._polytree":
        raise
    _c_walk = _c_polygons = None
    POLYTREE_ERROR = f"{type(exc).__name__}: {exc}"
try:
    from ._meshsum import unit_normals as _c_unit_normals
except ImportError as exc:  # not built: the numpy normals (mesh.py reports the error)
    if exc.name != f"{__package__}._meshsum":
        raise
    _c_unit_normals = None

__all__ = ["polygon_arrays"]

PURE_PYTHON_ENV = "TIPHYS_PURE_PYTHON_MESH"  # set to 1: no C walk, even where built

FACE_TOL = 0.99999872  # two faces are one polygon when their normals' dot exceeds this


def _makenormals(vert: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Unit normals of triangles (rows of ``faces``) with the compiler's arithmetic,
    operation for operation (a near-zero cross product is divided anyway, as MuJoCo
    does: [1, 0, 0] / |n|, inf or nan when |n| is 0). In C (_meshsum) where it is
    built and TIPHYS_PURE_PYTHON_MESH is unset, empty or 0, else in numpy."""
    v = np.ascontiguousarray(vert, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
    if _c_unit_normals is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0"):
        out = np.empty((len(f), 3))
        _c_unit_normals(v, f, EPS, out)
        return out
    return _makenormals_numpy(v, f)


def _makenormals_numpy(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """_makenormals in numpy (the reference)."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    ab = b - a
    ac = c - a
    n = np.stack([ab[:, 1] * ac[:, 2] - ab[:, 2] * ac[:, 1],
                  ab[:, 2] * ac[:, 0] - ab[:, 0] * ac[:, 2],
                  ab[:, 0] * ac[:, 1] - ab[:, 1] * ac[:, 0]], axis=1)
    nrm = np.sqrt(n[:, 0] * n[:, 0] + n[:, 1] * n[:, 1] + n[:, 2] * n[:, 2])
    n[nrm < EPS] = (1.0, 0.0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return n / nrm[:, None]


class _Polygon:
    """Faces sharing one plane (MeshPolygon in MuJoCo's compiler): its boundary edges
    (directed), each tagged with the island of faces connected so far it bounds.

    MuJoCo keeps the edges in a vector and finds an edge by a linear scan, which is
    quadratic in the size of a large flat region. Here the edges live in a dict
    (edge -> (sequence number, island)) and islands in a union-find, which give the
    same answers: the sequence numbers restore the vector's order, a repeated edge's
    later copies wait in ``dups`` (a removal takes the oldest, as the scan does), and
    MuJoCo's island labels (merged islands take the smaller label, higher labels
    shift down, a new island takes the next label) are the ranks of the union-find
    roots when each root is the island created first."""

    __slots__ = ("normal", "face", "edges", "dups", "nedge", "uf", "nisland",
                 "left", "right", "parent", "black")

    def __init__(self, normal, face):
        self.normal = normal
        self.face = face    # the first face; edges are built when a second one joins
        self.edges = None
        self.dups = None
        self.left = self.right = self.parent = None
        self.black = False

    def _root(self, island):
        uf = self.uf
        while uf[island] != island:
            uf[island] = uf[uf[island]]
            island = uf[island]
        return island

    def _add_edge(self, edge, island):
        entry = (self.nedge, island)
        self.nedge += 1
        if edge in self.edges:
            if self.dups is None:
                self.dups = {}
            self.dups.setdefault(edge, []).append(entry)
        else:
            self.edges[edge] = entry

    def _take_edge(self, edge):
        """Remove (the oldest copy of) a boundary edge; its island root, or None."""
        entry = self.edges.pop(edge, None)
        if entry is None:
            return None
        if self.dups is not None:
            later = self.dups.get(edge)
            if later:
                self.edges[edge] = later.pop(0)
                if not later:
                    del self.dups[edge]
        return self._root(entry[1])

    def insert_face(self, v1, v2, v3):
        if self.edges is None:
            a, b, c = self.face
            self.edges, self.nedge, self.uf, self.nisland = {}, 0, [0], 1
            for edge in ((a, b), (b, c), (c, a)):
                self._add_edge(edge, 0)
        island = -1
        added = []
        for edge in ((v1, v2), (v2, v3), (v3, v1)):
            other = self._take_edge((edge[1], edge[0]))  # attach across a shared edge
            if other is None:
                added.append(edge)
            elif island == -1:
                island = other
            elif other != island:
                self.nisland -= 1
                lo, hi = (island, other) if island < other else (other, island)
                self.uf[hi] = lo
                island = lo
        if island == -1:
            island = len(self.uf)
            self.uf.append(island)
            self.nisland += 1
        for edge in added:
            self._add_edge(edge, island)

    def paths(self):
        """Closed vertex loops, one per island (edge 0 is never followed, as in MuJoCo)."""
        if self.edges is None:
            return [list(self.face)]
        entries = [(seq, edge, isl) for edge, (seq, isl) in self.edges.items()]
        for edge, later in (self.dups or {}).items():
            entries.extend((seq, edge, isl) for seq, isl in later)
        entries.sort()
        if len(entries) == 3:
            return [[e[1][0] for e in entries]]
        # every live island keeps a label, also one whose edges are all gone
        roots = [isl for isl, up in enumerate(self.uf) if up == isl]
        label = {root: k for k, root in enumerate(roots)}
        first = {}   # island label -> its first edge (edge 0 included)
        follow = {}  # (island label, vertex) -> end of the first edge k >= 1 leaving it
        for k, (_, (a, b), isl) in enumerate(entries):
            lab = label[self._root(isl)]
            first.setdefault(lab, (a, b))
            if k:
                follow.setdefault((lab, a), b)
        out = []
        for isl in range(self.nisland):
            if isl not in first:
                continue
            path = list(first[isl])
            nxt = path[-1]
            for _ in range(len(entries)):  # MuJoCo's bound on a walk that never closes
                nxt = follow.get((isl, nxt))
                if nxt is None:
                    break
                if nxt == path[0]:
                    out.append(path)
                    break
                path.append(nxt)
        return out


class _PolygonSet:
    """std::set<MeshPolygon> with MuJoCo's comparator, as libc++ (the library MuJoCo's
    wheels link) implements it: a red-black tree; find = lower bound + equivalence
    test, emplace = descent that stops at the first equivalent node. With a comparator
    that is not a strict weak order, the tree's shape decides which polygon a face
    joins, so the tree is rebuilt node for node.

    The comparator ("less"): normals whose dot exceeds FACE_TOL are equivalent (neither
    is less); otherwise the first coordinate that differs by more than MINVAL decides,
    the larger coordinate being the lesser normal; if none does, they are equivalent.
    So any two normals are exactly one of less, greater or equivalent, and ``add``
    does find and emplace in one descent: both walk the same path until the first
    equivalent node, where emplace stops (and drops the face) while the lower bound
    goes on to the left."""

    def __init__(self):
        self.end = _Polygon(None, None)  # end node: its left child is the root

    def add(self, normal, face):
        """One face: joins the polygon that find returns, else becomes a new polygon
        (or is dropped, where emplace meets an equivalent polygon first). Returns
        the polygon it joined or started, None where dropped."""
        nx, ny, nz = normal
        tol, minval = FACE_TOL, MINVAL
        parent, node = self.end, self.end.left
        bound = parent  # lower bound: the last node the walk went left from (the end
        # node, whose left child is the root, while it has gone left from none)
        equiv = None   # the last node equivalent to the normal on the walk
        while node is not None:
            parent = node
            mx, my, mz = node.normal
            if mx * nx + my * ny + mz * nz > tol:  # equivalent
                bound = equiv = node
                node = node.left
                continue
            # (a NaN dot is no equivalence: the coordinates may still decide; the
            # node is less than the normal where its deciding coordinate is larger)
            d = mx - nx
            if d > minval:
                node = node.right
                continue
            if d < -minval:
                bound = node
                node = node.left
                continue
            d = my - ny
            if d > minval:
                node = node.right
                continue
            if d < -minval:
                bound = node
                node = node.left
                continue
            d = mz - nz
            if d > minval:
                node = node.right
                continue
            if d < -minval:
                bound = node
                node = node.left
                continue
            bound = equiv = node  # no coordinate decides: equivalent
            node = node.left
        if equiv is None:  # no equivalent polygon on the walk: a new one
            poly = _Polygon(normal, face)
            poly.parent = parent
            if bound is parent:  # the walk's last step went left
                parent.left = poly
            else:
                parent.right = poly
            self._rebalance(poly)
            return poly
        if bound is equiv:  # find's answer
            bound.insert_face(*face)
            return bound
        # find saw no equivalent lower bound, and emplace stops at the first
        # equivalent node: the face is dropped, as in MuJoCo
        return None

    @staticmethod
    def _is_left(x):
        return x is x.parent.left

    def _rotate_left(self, x):
        y = x.right
        x.right = y.left
        if x.right is not None:
            x.right.parent = x
        y.parent = x.parent
        if self._is_left(x):
            x.parent.left = y
        else:
            x.parent.right = y
        y.left = x
        x.parent = y

    def _rotate_right(self, x):
        y = x.left
        x.left = y.right
        if x.left is not None:
            x.left.parent = x
        y.parent = x.parent
        if self._is_left(x):
            x.parent.left = y
        else:
            x.parent.right = y
        y.right = x
        x.parent = y

    def _rebalance(self, x):
        root = self.end.left
        x.black = x is root
        while x is not root and not x.parent.black:
            if self._is_left(x.parent):
                y = x.parent.parent.right
                if y is not None and not y.black:
                    x = x.parent
                    x.black = True
                    x = x.parent
                    x.black = x is root
                    y.black = True
                else:
                    if not self._is_left(x):
                        x = x.parent
                        self._rotate_left(x)
                    x = x.parent
                    x.black = True
                    x = x.parent
                    x.black = False
                    self._rotate_right(x)
                    break
            else:
                y = x.parent.parent.left
                if y is not None and not y.black:
                    x = x.parent
                    x.black = True
                    x = x.parent
                    x.black = x is root
                    y.black = True
                else:
                    if self._is_left(x):
                        x = x.parent
                        self._rotate_right(x)
                    x = x.parent
                    x.black = True
                    x = x.parent
                    x.black = False
                    self._rotate_left(x)
                    break

    def __iter__(self):
        stack, node = [], self.end.left
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node
            node = node.right


def make_polygons(vert: np.ndarray, faces: np.ndarray):
    """Merge coplanar faces into polygons as MuJoCo's compiler does (on the vertices
    before the user transform, faces of the hull graph when there is one); returns
    (polyvertnum, polyvert, polymapnum, polymap) as int32 arrays: each polygon's
    vertex count and the polygons' local vertex ids one after the other, and for
    each vertex the polygons through it (in polygon order)."""
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    normals = _makenormals(vert, faces)
    with _gc_paused():  # millions of small objects: no use scanning them meanwhile
        if c_walk_enabled():
            polyvertnum, polyvert = _polygons_c(normals, faces)
        else:
            polyvertnum, polyvert = _loop_arrays(_polygons_python(normals, faces))
    polyid = np.repeat(np.arange(len(polyvertnum), dtype=np.int32), polyvertnum)
    polymap = polyid[_stable_argsort(polyvert)]
    polymapnum = np.bincount(polyvert, minlength=len(vert)).astype(np.int32)
    return polyvertnum, polyvert, polymapnum, polymap


def c_walk_enabled() -> bool:
    """True when make_polygons walks the polygon tree in C: _polytree was built and
    TIPHYS_PURE_PYTHON_MESH is unset, empty or 0."""
    return _c_walk is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")


def _loop_arrays(loops: list):
    """(polyvertnum, polyvert) of vertex loops."""
    polyvertnum = np.fromiter(map(len, loops), np.int32, len(loops))
    polyvert = np.fromiter(itertools.chain.from_iterable(loops), np.int32,
                           int(polyvertnum.sum()))
    return polyvertnum, polyvert


def _polygons_python(normals: np.ndarray, faces: np.ndarray) -> list:
    """The polygons' vertex loops, in tree order; faces join polygons as they arrive."""
    polys = _PolygonSet()
    add = polys.add
    for normal, face in zip(normals.tolist(), faces.tolist()):
        add(normal, face)
    polygons = []
    for poly in polys:
        if poly.edges is None:  # a single face
            polygons.append(poly.face)
        else:
            polygons.extend(path for path in poly.paths() if len(path) >= 3)
        poly.parent = None  # no cycles left: the tree is freed as soon as dropped
    return polygons


def _polygons_c(normals: np.ndarray, faces: np.ndarray):
    """(polyvertnum, polyvert) as _loop_arrays(_polygons_python(...)), all in C: the
    tree walk tells which polygon each face joins; each polygon of several faces then
    takes them in face order, which builds the same edges, islands and loops (a
    polygon's edges depend on its own faces only)."""
    polyvertnum, polyvert = _c_polygons(np.ascontiguousarray(normals, np.float64),
                                        np.ascontiguousarray(faces, np.int64),
                                        FACE_TOL, MINVAL)
    return np.frombuffer(polyvertnum, np.int32), np.frombuffer(polyvert, np.int32)


def polygon_normals(vert: np.ndarray, polyvertnum, polyvert) -> np.ndarray:
    """(npoly, 3) normals from each polygon's first three vertices (final vertices)."""
    adr = np.cumsum(polyvertnum, dtype=np.int64) - polyvertnum
    return _makenormals(vert, polyvert[adr[:, None] + np.arange(3)]).reshape(-1, 3)


@contextlib.contextmanager
def _gc_paused():
    """The cyclic garbage collector off for a block that allocates many objects and
    frees none (each of its passes would scan them all again), then back as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def polygon_arrays(meshes) -> dict:
    """The mesh_poly* model fields and their sizes (nmeshpoly, nmeshpolyvert,
    nmeshpolymap) for a list of CompiledMesh, laid out as mjModel does: polygon and
    polymap addresses are global, polygon vertices and polymap entries mesh-local."""
    def cat(parts, dtype, width=None):
        parts = [np.asarray(p, dtype=dtype) for p in parts]
        if width:
            parts = [p.reshape(-1, width) for p in parts]
            return np.concatenate(parts) if parts else np.zeros((0, width), dtype)
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    polynum = np.array([m.npoly for m in meshes], dtype=np.int32)
    polyvertnum = cat([m.polyvertnum for m in meshes], np.int32)
    polymapnum = cat([m.polymapnum for m in meshes], np.int32)
    start = lambda n: (np.cumsum(np.r_[0, n])[:-1]).astype(np.int32)  # noqa: E731
    return dict(
        mesh_polynum=polynum, mesh_polyadr=start(polynum),
        mesh_polynormal=cat([m.polynormal for m in meshes], np.float64, 3),
        mesh_polyvertadr=start(polyvertnum), mesh_polyvertnum=polyvertnum,
        mesh_polyvert=cat([m.polyvert for m in meshes], np.int32),
        mesh_polymapadr=start(polymapnum), mesh_polymapnum=polymapnum,
        mesh_polymap=cat([m.polymap for m in meshes], np.int32),
        nmeshpoly=int(polynum.sum()), nmeshpolyvert=int(polyvertnum.sum()),
        nmeshpolymap=int(polymapnum.sum()))
