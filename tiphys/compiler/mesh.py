"""Compile-time processing of ``<mesh>`` assets: the mesh compile driver and the
process's mesh cache.

The goal is to reproduce what MuJoCo 3.4.0's compiler stores in ``mjModel``
for meshes (``mesh_vert``, ``mesh_face``, ``mesh_pos`` ...), together with the
derived quantities that geoms using a mesh need (mass, principal inertia,
bounding box, bounding radius). Height fields are compiled in hfield.py.

Everything here is a pure function of plain Python / numpy values.

Outline of the mesh pipeline (same order as MuJoCo, because several steps
depend on the order, e.g. normals are computed on the raw vertices):

1. load vertices/faces/normals/texcoords from the file (binary STL, OBJ, MSH:
   mesh_io.py) or from inline data.  Vertices are single precision at this
   stage.  Binary STL vertices are de-duplicated (exact float equality); OBJ /
   MSH / inline vertices are kept as they are.
2. validate (>= 4 vertices, multiples of 3, face indices in range, ...).
3. optionally check face orientation consistency (``inertia="exact"``).
4. convex hull (needed for collisions, ``inertia="convex"`` or when there
   are no faces) on the raw vertices (hull.py), and the polygons of coplanar
   faces merged (polygons.py).
5. vertex normals (when not given), on the raw vertices.
6. user transform: subtract ``refpos``, rotate by the inverse of
   ``refquat``, multiply by ``scale``.
7. volume / surface, centre of mass and inertia of the solid (or shell),
   principal axes via a Jacobi eigen-solver written as MuJoCo's (mesh_math.py).
8. move the mesh to its centre of mass and rotate it into the principal
   axes; ``pos``/``quat`` remember that transform.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from ..errors import ModelError
from ..kernels.consts import EPS, MINVAL
from . import progress
from .decoded import ByteLRU
from .hull import _make_graph
from .mesh_io import _content_type, _read_msh, _read_obj_full, _read_stl
from .mesh_math import (_F32, _cross, _dot3, _eig3, _mulmat, _mulmatT, _normvec, _quat2mat,
                        _seqsum, _stable_argsort, _triangles)
from .polygons import PURE_PYTHON_ENV, make_polygons, polygon_normals

try:
    from ._meshsum import accumulate as _c_accumulate
    from ._meshsum import inertia_products as _c_inertia_products
    from ._meshsum import normals as _c_normals
    from ._meshsum import triangles as _c_triangles
    MESHSUM_ERROR = None
except ImportError as exc:  # not built (no C compiler at install): the numpy sums
    if exc.name != f"{__package__}._meshsum":
        raise
    _c_accumulate = _c_normals = _c_triangles = _c_inertia_products = None
    MESHSUM_ERROR = f"{type(exc).__name__}: {exc}"

__all__ = [
    "CompiledMesh",
    "compile_mesh",
    "clear_mesh_cache",
    "INERTIA_MODES",
]

INERTIA_MODES = ("convex", "legacy", "exact", "shell")


# ----------------------------------------------------------------------------
# vertex normals

def _ordered_accumulate(acc32: np.ndarray, idx: np.ndarray, vals: np.ndarray):
    """acc32[idx[k]] += vals[k] for k in order, each addition done in double then
    rounded to single precision (as 'float += double' in C); vals may have columns
    (acc32 then has as many). In place, in C where _meshsum is built (and
    TIPHYS_PURE_PYTHON_MESH is unset, empty or 0), else in numpy."""
    if (len(idx) and _c_accumulate is not None and acc32.flags.c_contiguous
            and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")):
        _c_accumulate(acc32.reshape(len(acc32), -1), np.ascontiguousarray(idx, np.int64),
                      np.ascontiguousarray(vals, np.float64).reshape(len(idx), -1))
        return acc32
    return _ordered_accumulate_numpy(acc32, idx, vals)


def _ordered_accumulate_numpy(acc32: np.ndarray, idx: np.ndarray, vals: np.ndarray):
    """_ordered_accumulate in numpy (the reference): the k-th additions to every row
    are done together, each such level touching a row at most once."""
    if len(idx) == 0:
        return acc32
    order = _stable_argsort(idx)  # each row's additions, in order
    sidx = idx[order]
    start = np.r_[0, np.flatnonzero(sidx[1:] != sidx[:-1]) + 1]
    counts = np.diff(np.r_[start, len(sidx)])
    bycount = np.argsort(-counts, kind="stable")  # rows with more additions first
    start = start[bycount]
    nrows = np.searchsorted(-counts[bycount], -np.arange(int(counts.max())), side="left")
    for level, n in enumerate(nrows.tolist()):  # the rows with more than `level`
        sel = order[start[:n] + level]
        ii = sidx[start[:n] + level]
        acc32[ii] = (acc32[ii].astype(np.float64) + vals[sel]).astype(np.float32)
    return acc32


def _make_normals(vert: np.ndarray, face: np.ndarray, smooth: bool):
    """Area-weighted vertex normals; sharp edges (dot < 0.8) removed unless smooth.
    In C where _meshsum is built (and TIPHYS_PURE_PYTHON_MESH is unset, empty or 0),
    else in numpy."""
    if _use_c():
        out = np.zeros((vert.shape[0], 3), np.float32)
        _c_normals(np.ascontiguousarray(vert, np.float64),
                   np.ascontiguousarray(face, np.int64).reshape(-1, 3), bool(smooth),
                   float(EPS), float(MINVAL), out)
        return out.ravel()
    return _make_normals_numpy(vert, face, smooth)


def _make_normals_numpy(vert: np.ndarray, face: np.ndarray, smooth: bool):
    """_make_normals in numpy (the reference)."""
    nv = vert.shape[0]
    v0 = vert[face[:, 0]]
    vec01 = vert[face[:, 1]] - v0
    vec02 = vert[face[:, 2]] - v0
    nrm = _cross(vec01, vec02)
    s = _dot3(nrm, nrm)
    ln = np.sqrt(s)
    ok = s >= EPS
    renorm = ok & (np.abs(ln - 1) > EPS)
    nrm = np.where(renorm[:, None], nrm / np.where(renorm, ln, 1.0)[:, None], nrm)
    area = np.where(ok, ln, 0.0)
    contrib = nrm * area[:, None]                      # (nf,3)
    idx = face.ravel()                                  # order: face-major, then corner
    cvals = np.repeat(contrib, 3, axis=0)               # (3nf,3)
    normal = _ordered_accumulate(np.zeros((nv, 3), dtype=np.float32), idx, cvals)
    if not smooth:
        vn = normal.astype(np.float64)[idx]             # (3nf,3) vertex normal per corner
        s2 = _dot3(vn, vn)
        l2 = np.sqrt(s2)
        ok2 = s2 >= EPS
        rn = ok2 & (np.abs(l2 - 1) > EPS)
        vn = np.where(rn[:, None], vn / np.where(rn, l2, 1.0)[:, None], vn)
        fn = np.repeat(nrm, 3, axis=0)
        remove = _dot3(fn, vn) < 0.8
        nremove = _ordered_accumulate(np.zeros((nv, 3), dtype=np.float32), idx[remove],
                                      cvals[remove])
        normal = (normal - nremove).astype(np.float32)
    # normalise in single precision
    ln32 = np.sqrt(normal[:, 0] * normal[:, 0] + normal[:, 1] * normal[:, 1]
                   + normal[:, 2] * normal[:, 2]).astype(np.float32)
    good = ln32.astype(np.float64) > MINVAL
    out = np.zeros_like(normal)
    out[good] = normal[good] / ln32[good, None]
    out[~good] = np.array([0, 0, 1], dtype=np.float32)
    return out.ravel()


_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
_PAIR_A, _PAIR_B = [a for a, _ in _PAIRS], [b for _, b in _PAIRS]
_ROWS_AT_ONCE = 4096  # faces up to which the six products are made in one pass


def _use_c() -> bool:
    """Whether _meshsum's C is to be used (built, TIPHYS_PURE_PYTHON_MESH unset, empty
    or 0)."""
    return _c_accumulate is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")


def _face_triangles(vert, face, want_normal=True):
    """mesh_math's _triangles (the reference), in C where _use_c()."""
    if _use_c():
        nf = len(face)
        area, nrm, cen = np.empty(nf), np.empty((nf, 3)), np.empty((nf, 3))
        _c_triangles(np.ascontiguousarray(vert, np.float64),
                     np.ascontiguousarray(face, np.int64).reshape(-1, 3), bool(want_normal),
                     float(MINVAL), area, nrm, cen)
        return area, nrm, cen
    return _triangles(vert, face, want_normal)


def _inertia_products(vert, face, wc) -> list:
    """The six sums over faces of wc * (the triangle's second-moment term) for the
    index pairs _PAIRS, each summed in face order, the faces' corners D, E, F taken
    from ``vert`` (nvert, 3) by ``face`` (nface, 3); ``wc``: the faces' weights divided
    by the denominator. In C where _use_c(), else in numpy (the reference)."""
    if _use_c():
        return _c_inertia_products(np.ascontiguousarray(vert, np.float64),
                                   np.ascontiguousarray(face, np.int64).reshape(-1, 3),
                                   np.ascontiguousarray(wc, np.float64))
    D, E, F = vert[face[:, 0]], vert[face[:, 1]], vert[face[:, 2]]
    def term(Da, Db, Ea, Eb, Fa, Fb):
        return (2 * (Da * Db + Ea * Eb + Fa * Fb)
                + Da * Eb + Db * Ea
                + Da * Fb + Db * Fa
                + Ea * Fb + Eb * Fa)

    if len(wc) <= _ROWS_AT_ONCE:
        # small meshes: the six pairs as six rows of one array (the same operations
        # element by element, fewer numpy calls); larger ones pair by pair, whose
        # arrays stay in the cache
        Dt, Et, Ft = D.T, E.T, F.T
        a, b = _PAIR_A, _PAIR_B
        return _seqsum(wc[None, :] * term(Dt[a], Dt[b], Et[a], Et[b], Ft[a], Ft[b]),
                       axis=1).tolist()
    return [float(_seqsum(wc * term(D[:, a], D[:, b], E[:, a], E[:, b], F[:, a], F[:, b])))
            for a, b in _PAIRS]


# ----------------------------------------------------------------------------
# compiled mesh

@dataclass
class CompiledMesh:
    """A mesh as MuJoCo 3.4.0 stores it in mjModel (one entry of the mesh_* arrays)."""

    name: str
    vert: np.ndarray          # (nvert,3) float64 holding the float32 values of mesh_vert
    face: np.ndarray          # (nface,3) int32, mesh_face
    normal: np.ndarray        # (nnormal,3) float32 values, mesh_normal
    facenormal: np.ndarray    # (nface,3) int32, mesh_facenormal
    texcoord: np.ndarray      # (ntexcoord,2) float32 values, mesh_texcoord (may be empty)
    facetexcoord: np.ndarray  # (nface,3) int32, mesh_facetexcoord (zeros when no texcoord)
    pos: np.ndarray           # (3,) mesh_pos
    quat: np.ndarray          # (4,) mesh_quat
    scale: np.ndarray         # (3,) mesh_scale
    graph: np.ndarray         # int32 mesh_graph entries (empty when no hull was made)
    volume: float             # solid volume (0 for inertia="shell")
    surface: float            # surface area (only for inertia="shell", else 0)
    inertia_mode: str         # "convex" | "legacy" | "exact" | "shell"
    boxsz: np.ndarray         # (3,) half-sizes of the equivalent inertia box
    aamm: np.ndarray          # (6,) min(3), max(3) of the (double precision) vertices
    vert_double: np.ndarray = field(repr=False, default=None)  # (nvert,3) before float rounding
    # polygons (coplanar faces merged; see make_polygons): mesh_polynormal, the local
    # vertex ids of each polygon, and for each vertex the (local) polygons through it
    polynormal: np.ndarray = field(repr=False, default=None)   # (npoly,3)
    polyvertnum: np.ndarray = field(repr=False, default=None)  # (npoly,)
    polyvert: np.ndarray = field(repr=False, default=None)     # (sum polyvertnum,)
    polymapnum: np.ndarray = field(repr=False, default=None)   # (nvert,)
    polymap: np.ndarray = field(repr=False, default=None)      # (sum polymapnum,)
    # compile_mesh_geometry's mesh until finish_mesh: what finish_mesh needs (None once
    # done), and whether the hull was asked for (finish_mesh's needhull)
    pending: Optional["_Pending"] = field(repr=False, default=None, compare=False)
    hull_asked: bool = field(repr=False, default=False, compare=False)

    # -- sizes as mjModel counts them
    @property
    def nvert(self) -> int:
        return int(self.vert.shape[0])

    @property
    def npoly(self) -> int:
        return int(self.polyvertnum.shape[0])

    @property
    def nface(self) -> int:
        return int(self.face.shape[0])

    @property
    def nnormal(self) -> int:
        return int(self.normal.shape[0])

    @property
    def ntexcoord(self) -> int:
        return int(self.texcoord.shape[0])

    @property
    def has_texcoord(self) -> bool:
        return self.texcoord.shape[0] > 0

    @property
    def szgraph(self) -> int:
        return int(self.graph.shape[0])

    def volume_ref(self) -> float:
        """Volume, or surface area for shell inertia (what geom mass is density times)."""
        return self.surface if self.inertia_mode == "shell" else self.volume

    def geom_inertia(self, density: float, shell: bool = False):
        """(mass, principal inertia (3,)) of a mesh geom with this density.

        The inertia is about the mesh centre of mass in the principal frame
        (which is the geom frame after mesh pos/quat are folded in).  MuJoCo
        rejects ``shellinertia`` on mesh geoms: shell inertia is a property of
        the mesh asset (``inertia="shell"``).
        """
        if shell:
            raise ModelError("for mesh geoms, inertia should be specified in the mesh asset")
        mass = density * self.volume_ref() if density != 0 else 0.0
        return mass, self.inertia_for_mass(mass)

    def geom_mass_from_mass(self, mass: float):
        """(mass, inertia, density) for a mesh geom given an explicit mass
        (MuJoCo leaves inertia at 0 when the volume is below 1e-14)."""
        vol = self.volume_ref()
        if mass == 0:
            return 0.0, np.zeros(3), 0.0
        if vol > EPS:
            return mass, self.inertia_for_mass(mass), mass / vol
        return 0.0, np.zeros(3), None

    def inertia_for_mass(self, mass: float) -> np.ndarray:
        b = self.boxsz
        return np.array([mass * (b[1] * b[1] + b[2] * b[2]) / 3,
                         mass * (b[0] * b[0] + b[2] * b[2]) / 3,
                         mass * (b[0] * b[0] + b[1] * b[1]) / 3])

    def aabb(self) -> np.ndarray:
        a = self.aamm
        return np.array([(a[3] + a[0]) / 2, (a[4] + a[1]) / 2, (a[5] + a[2]) / 2,
                         (a[3] - a[0]) / 2, (a[4] - a[1]) / 2, (a[5] - a[2]) / 2])

    def geom_size(self) -> np.ndarray:
        """geom_size of a mesh geom: largest |coordinate| along each axis."""
        a = self.aamm
        return np.array([max(abs(a[0]), abs(a[3])), max(abs(a[1]), abs(a[4])),
                         max(abs(a[2]), abs(a[5]))])

    def rbound(self) -> float:
        h = self.geom_size()
        return math.sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2])

    def fit_size(self, geom_type: str, fitaabb: bool = False, fitscale: float = 1.0):
        """Size and centre offset of a primitive geom fitted to this mesh
        (geom type other than mesh with mesh attribute).  Returns (size(3,), center(3,))."""
        size = np.zeros(3)
        center = np.zeros(3)
        if not fitaabb:
            b = self.boxsz
            if geom_type == "sphere":
                size[0] = (b[0] + b[1] + b[2]) / 3
            elif geom_type == "capsule":
                size[0] = (b[0] + b[1]) / 2
                size[1] = max(0.0, b[2] - size[0] / 2)
            elif geom_type == "cylinder":
                size[0] = (b[0] + b[1]) / 2
                size[1] = b[2]
            elif geom_type in ("ellipsoid", "box"):
                size[:] = b
            else:
                raise ModelError(f"invalid geom type in fitting mesh {self.name}")
        else:
            a = self.aamm
            center[:] = [(a[0] + a[3]) / 2, (a[1] + a[4]) / 2, (a[2] + a[5]) / 2]
            half = [a[3] - center[0], a[4] - center[1], a[5] - center[2]]
            if geom_type == "sphere":
                size[0] = max(max(half[0], half[1]), half[2])
            elif geom_type in ("capsule", "cylinder"):
                size[0] = max(half[0], half[1])
                size[1] = half[2]
                if geom_type == "capsule":
                    size[1] -= size[0]
            elif geom_type in ("ellipsoid", "box"):
                size[:] = half
            else:
                raise ModelError(f"invalid fittype in mesh {self.name}")
        return size * fitscale, center


def _sqrt_nan(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _as_flat(x, dtype):
    if x is None:
        return None
    a = np.asarray(x, dtype=dtype).ravel()
    return a if a.size else None


# Compiled meshes of this process, as MuJoCo keeps its own (mjCache): loading a model
# again, or another model with the same mesh files, skips the mesh pipeline. Keyed by
# a digest of every input but the name (file contents, not paths or times, so an
# edited file is compiled anew); least recently used entries go first past the size.
# A resource provider with ``modified`` saying a file has not changed lets the file go
# unread too (tiphys/io/resources.py).
MESH_CACHE_BYTES = 256 << 20
_mesh_cache = ByteLRU(MESH_CACHE_BYTES)  # key -> the compiled mesh


def clear_mesh_cache() -> None:
    """Forget every compiled mesh (the next load compiles its meshes anew, reading
    every file), SDF plugins' surfaces and decoded height-field and texture files
    included."""
    _mesh_cache.clear()
    from ..io.resources import forget_resources
    forget_resources()
    from .decoded import clear_decoded
    clear_decoded()
    from .sdf_mesh import clear_sdf_cache
    clear_sdf_cache()


def _mesh_key(inputs: dict) -> bytes | None:
    """Digest of compile_mesh's inputs, or None for inputs it cannot key exactly."""
    digest = hashlib.sha1(usedforsecurity=False)
    for arg in sorted(inputs):
        val = inputs[arg]
        digest.update(arg.encode() + b"=")
        if val is None:
            digest.update(b"N")
        elif isinstance(val, (bytes, bytearray, memoryview)):
            data = memoryview(val).cast("B")
            digest.update(b"B%d:" % len(data))
            digest.update(data)
        else:
            try:
                arr = np.asarray(val)
            except ValueError:  # ragged: left uncached (compile_mesh reports it)
                return None
            if arr.dtype == object:
                return None
            digest.update(f"{arr.dtype.str}{arr.shape}:".encode())
            digest.update(arr.tobytes())
    return digest.digest()


def _mesh_nbytes(cm: CompiledMesh) -> int:
    return sum(getattr(cm, f.name).nbytes for f in dataclasses.fields(cm)
               if isinstance(getattr(cm, f.name), np.ndarray))


def _copy_mesh(cm: CompiledMesh, name: str) -> CompiledMesh:
    """A CompiledMesh of its own (arrays copied): callers may change what they get."""
    arrays = {f.name: getattr(cm, f.name).copy() for f in dataclasses.fields(cm)
              if isinstance(getattr(cm, f.name), np.ndarray)}
    return dataclasses.replace(cm, name=name, **arrays)


def _cache_inputs(file_digest, inputs: dict) -> dict:
    """compile_mesh's inputs as its cache keys them: the file by its digest."""
    if inputs.get("inertia") == "convex":  # the hull is built anyway: one entry for both
        inputs = dict(inputs, needhull=True)
    return dict(inputs, file_digest=file_digest)


def mesh_cached(*, file_digest: bytes, **inputs) -> bool:
    """Whether compile_mesh would take the mesh of a file with this digest (and these
    other inputs, compile_mesh's but the name and the bytes) from the cache."""
    if MESH_CACHE_BYTES <= 0:
        return False
    key = _mesh_key(_cache_inputs(file_digest, inputs))
    return key is not None and key in _mesh_cache


def compile_mesh(*, name: str = "", file_bytes: Optional[bytes] = None,
                 file_digest: Optional[bytes] = None,
                 file_name: Optional[str] = None, content_type: Optional[str] = None,
                 vertex=None, face=None, normal=None, texcoord=None,
                 scale: Sequence[float] = (1, 1, 1), refpos: Sequence[float] = (0, 0, 0),
                 refquat: Sequence[float] = (1, 0, 0, 0), inertia: str = "legacy",
                 maxhullvert: int = -1, smoothnormal: bool = False,
                 needhull: bool = True, reorient: bool = True) -> CompiledMesh:
    """Compile one mesh asset as MuJoCo 3.4.0 does (from the process's mesh cache when
    the same inputs were compiled before; see MESH_CACHE_BYTES).

    ``file_bytes``/``file_name`` give the file contents and its name (the name
    picks the format unless ``content_type`` is given); ``file_digest``, when known,
    is tiphys.io.resources.content_digest of the contents, and without the contents
    names a file whose mesh is cached (mesh_cached).  ``vertex``, ``face``,
    ``normal``, ``texcoord`` are the inline attributes as flat sequences.
    ``needhull`` says whether the convex hull graph is wanted (MuJoCo builds
    it when a mesh geom using it can collide - contype or conaffinity nonzero
    or in an explicit pair - or when the mesh inertia is "convex"; without
    faces the hull is always built because it supplies the faces).
    ``reorient`` False keeps the vertices where they are (mesh_pos 0, mesh_quat
    identity; the inertia box is still the principal one), as MuJoCo does for the
    meshes it makes from SDF plugins.
    """
    progress.step(f"mesh {name}" if name else "mesh")
    if inertia == "convex":  # the hull is built anyway: one cache entry for both asks
        needhull = True
    inputs = {"file_name": file_name,
              "content_type": content_type, "vertex": vertex, "face": face,
              "normal": normal, "texcoord": texcoord, "scale": scale, "refpos": refpos,
              "refquat": refquat, "inertia": inertia, "maxhullvert": maxhullvert,
              "smoothnormal": smoothnormal, "needhull": needhull, "reorient": reorient}
    if file_bytes is not None and file_digest is None:
        from ..io.resources import content_digest
        file_digest = content_digest(file_bytes)
    key = _mesh_key(_cache_inputs(file_digest, inputs)) if MESH_CACHE_BYTES > 0 else None
    hit = _mesh_cache.get(key) if key is not None else None
    if hit is not None:
        return _copy_mesh(hit, name)
    if file_bytes is None and file_digest is not None:
        raise RuntimeError(f"compile_mesh: the mesh of file '{file_name}' is no longer "
                           f"cached: pass its bytes")
    cm = _compile_mesh(name=name, file_bytes=file_bytes, **inputs)
    _cache_put(key, cm)
    return cm


def _cache_put(key, cm: CompiledMesh) -> None:
    if key is not None:
        nbytes = _mesh_nbytes(cm)
        if nbytes <= MESH_CACHE_BYTES:
            _mesh_cache.put(key, _copy_mesh(cm, ""), nbytes)


class _Pending:
    """What finish_mesh needs to complete a mesh compile_mesh_geometry left without
    its hull graph and polygons: the vertices as read (before the user transform and
    the move to the centre of mass) and the faces, the hull's cap, and the cache keys
    of the full compile with and without the hull."""

    __slots__ = ("raw", "faces", "maxhullvert", "keys")

    def __init__(self, raw, faces, maxhullvert, keys):
        self.raw, self.faces, self.maxhullvert, self.keys = raw, faces, maxhullvert, keys


def compile_mesh_geometry(*, name: str = "", file_bytes: Optional[bytes] = None,
                          file_digest: Optional[bytes] = None, needhull: bool = True,
                          **inputs) -> CompiledMesh:
    """compile_mesh up to what a geom reads (pos, quat, volume, inertia box, bounds):
    the hull graph and the polygons, which change none of these, wait for finish_mesh
    (a mesh that a visual geom asks for first and a colliding one next is so compiled
    once). Takes a cached full compile of the same inputs, with the hull or without,
    where there is one (that mesh's ``pending`` is None: finish_mesh gives it back when
    its hull is the one asked for). ``needhull``: the geom's ask (the cache is looked
    up with it first)."""
    progress.step(f"mesh {name}" if name else "mesh")
    if file_bytes is not None and file_digest is None:
        from ..io.resources import content_digest
        file_digest = content_digest(file_bytes)
    keys = {}
    if MESH_CACHE_BYTES > 0:
        for hull in (needhull, not needhull):
            keys[hull] = _mesh_key(_cache_inputs(file_digest, dict(inputs, needhull=hull)))
            hit = _mesh_cache.get(keys[hull]) if keys[hull] is not None else None
            if hit is not None:
                cm = _copy_mesh(hit, name)
                cm.pending, cm.hull_asked = None, hull or inputs.get("inertia") == "convex"
                return cm
    if file_bytes is None and file_digest is not None:
        raise RuntimeError(f"compile_mesh: the mesh of file '{inputs.get('file_name')}' is "
                           f"no longer cached: pass its bytes")
    return _compile_mesh(name=name, file_bytes=file_bytes, needhull=needhull,
                         geometry_only=True, cache_keys=keys, **inputs)


def finish_mesh(cm: CompiledMesh, needhull: bool) -> Optional[CompiledMesh]:
    """The mesh of compile_mesh_geometry completed, in place, with the hull graph (when
    ``needhull`` or when it was made already) and the polygons, as compile_mesh
    makes them, and cached; None for a cached full mesh whose hull is not the one
    asked for (the caller then compiles it with compile_mesh)."""
    pend = cm.pending
    if pend is None:
        return cm if needhull == cm.hull_asked or cm.inertia_mode == "convex" else None
    if needhull and cm.graph.size == 0:
        cm.graph = _make_graph(pend.raw, pend.maxhullvert).astype(np.int32)
    if cm.graph.size:
        nv_g, nf_g = int(cm.graph[0]), int(cm.graph[1])
        poly_faces = cm.graph[2 + 3 * nv_g + 3 * nf_g:].reshape(-1, 3)
    else:
        poly_faces = pend.faces
    _set_polygons(cm, pend.raw, poly_faces)
    cm.pending, cm.hull_asked = None, needhull
    _cache_put(pend.keys.get(needhull), cm)
    return cm


def _set_polygons(cm: CompiledMesh, raw: np.ndarray, poly_faces: np.ndarray) -> None:
    """The polygon fields of a mesh: merged on the vertices as read, their normals
    from the final vertices."""
    polyvertnum, polyvert, polymapnum, polymap = make_polygons(raw, poly_faces)
    cm.polynormal = polygon_normals(cm.vert_double, polyvertnum, polyvert)
    cm.polyvertnum, cm.polyvert = polyvertnum, polyvert
    cm.polymapnum, cm.polymap = polymapnum, polymap


def _compile_mesh(*, name, file_bytes, file_name, content_type, vertex, face, normal,
                  texcoord, scale, refpos, refquat, inertia, maxhullvert, smoothnormal,
                  needhull, reorient=True, geometry_only=False,
                  cache_keys=None) -> CompiledMesh:
    """compile_mesh without the cache (``geometry_only``: compile_mesh_geometry's part,
    finish_mesh to come; ``cache_keys`` are then its cache keys, by needhull)."""
    if inertia not in INERTIA_MODES:
        raise ModelError(f"invalid mesh inertia '{inertia}'")
    if maxhullvert != -1 and maxhullvert < 4:
        raise ModelError("maxhullvert must be larger than 3")
    scale = np.asarray(scale, dtype=np.float64).reshape(3)
    refpos = [float(x) for x in refpos]
    refquat = [float(x) for x in refquat]
    righthand = scale[0] * scale[1] * scale[2] > 0
    if inertia == "convex":
        needhull = True

    spec_vert = _as_flat(vertex, np.float32)
    spec_face = _as_flat(face, np.int64)
    spec_normal = _as_flat(normal, np.float32)
    spec_tex = _as_flat(texcoord, np.float32)

    # inline data checks (done even when a file is given)
    if spec_vert is not None and spec_vert.size % 3:
        raise ModelError("vertex data must be a multiple of 3")
    if spec_face is not None and spec_face.size % 3:
        raise ModelError("face data must be a multiple of 3")

    def check_finite(v32):
        fin = np.all(np.isfinite(v32.reshape(-1, 3)), axis=1)
        if not np.all(fin):
            raise ModelError(f"vertex coordinate {int(np.nonzero(~fin)[0][0])} is not finite")

    is_obj = False
    if file_name is not None or file_bytes is not None:
        fname = file_name or "<mesh>"
        ctype = _content_type(file_name, content_type)
        if not ctype:
            if content_type:
                raise ModelError(f"invalid content type: '{content_type}'")
            raise ModelError(f"unknown or unsupported mesh file: '{fname}'")
        if file_bytes is None:
            raise ModelError(f"could not read mesh file '{fname}'")
        data = bytes(file_bytes)
        if ctype == "model/stl":
            loaded = _read_stl(data, fname, righthand)
        elif ctype == "model/obj":
            is_obj = True
            if len(data) == 0:
                loaded = dict(vert=np.zeros(0, np.float32), face=np.zeros(0, np.int64),
                              normal=None, texcoord=None, facenormal=None, facetexcoord=None)
            else:
                loaded = _read_obj_full(data, fname, righthand)
        elif ctype == "model/vnd.mujoco.msh":
            loaded = _read_msh(data, fname, righthand)
        else:
            raise ModelError(f"unsupported mesh type: '{ctype}'")
        vert32 = loaded["vert"]
        if vert32 is not None and vert32.size:
            check_finite(vert32)
        f_face, f_normal, f_tex = loaded["face"], loaded["normal"], loaded["texcoord"]
        f_fn, f_ft = loaded["facenormal"], loaded["facetexcoord"]
        nonempty = lambda a: a is not None and len(a) > 0  # noqa: E731
        if nonempty(f_normal) and spec_normal is not None:
            raise ModelError("repeated normal specification")
        if not nonempty(f_normal):
            f_normal = spec_normal
        if nonempty(f_tex) and spec_tex is not None:
            raise ModelError("repeated texcoord specification")
        if not nonempty(f_tex):
            f_tex = spec_tex
        if nonempty(f_face) and spec_face is not None:
            raise ModelError("repeated face specification")
        if not nonempty(f_face):
            f_face = spec_face
        if nonempty(vert32) and spec_vert is not None:
            raise ModelError("repeated vertex specification")
        if not nonempty(vert32):
            vert32 = spec_vert
        if nonempty(f_fn) and spec_normal is not None:
            raise ModelError("repeated facenormal specification")
        vert32 = vert32 if vert32 is not None else np.zeros(0, np.float32)
        face_ = f_face
        normal_ = f_normal
        tex_ = f_tex
        facenormal_ = f_fn if nonempty(f_fn) else None
        facetex_ = f_ft if nonempty(f_ft) else None
    else:
        vert32 = spec_vert if spec_vert is not None else np.zeros(0, np.float32)
        face_ = spec_face
        normal_ = spec_normal
        tex_ = spec_tex
        facenormal_ = None
        facetex_ = None

    if vert32.size:
        check_finite(vert32)
    face_ = np.zeros(0, np.int64) if face_ is None else np.asarray(face_, np.int64)
    normal_ = np.zeros(0, np.float32) if normal_ is None else np.asarray(normal_, np.float32)
    tex_ = np.zeros(0, np.float32) if tex_ is None else np.asarray(tex_, np.float32)

    # ---- initial checks
    if vert32.size < 12:
        raise ModelError("at least 4 vertices required")
    if vert32.size % 3:
        raise ModelError("vertex data must be a multiple of 3")
    if normal_.size % 3:
        raise ModelError("normal data must be a multiple of 3")
    if tex_.size % 2:
        raise ModelError("texcoord must be a multiple of 2")
    if face_.size % 3:
        raise ModelError("face data must be a multiple of 3")
    nvert = vert32.size // 3
    if tex_.size and tex_.size != 2 * nvert and facetex_ is None and not is_obj:
        raise ModelError("texcoord must be 2*nv if face texcoord indices are not provided "
                         "in an OBJ file")
    bad = np.nonzero((face_ >= nvert) | (face_ < 0))[0]
    if bad.size:
        i = int(bad[0])
        raise ModelError(f"in face {i // 3}, vertex index {int(face_[i])} does not exist")

    vert = vert32.astype(np.float64).reshape(-1, 3)
    faces = face_.reshape(-1, 3)

    # ---- orientation check (exact inertia only)
    if inertia == "exact" and faces.shape[0]:
        area, _, _ = _face_triangles(vert, faces, want_normal=False)
        keep = faces[area > math.sqrt(MINVAL)]
        if keep.shape[0]:
            he = np.concatenate([keep[:, [0, 1]], keep[:, [1, 2]], keep[:, [2, 0]]])
            uniq, cnt = np.unique(he, axis=0, return_counts=True)
            dup = uniq[cnt > 1]
            if dup.shape[0]:
                a, b = int(dup[0][0]), int(dup[0][1])
                raise ModelError(
                    f"faces of mesh '{name}' have inconsistent orientation. Please check the "
                    f"faces containing the vertices {a + 1} and {b + 1}.")

    # ---- convex hull
    graph = np.zeros(0, dtype=np.int32)
    if (needhull and not geometry_only) or inertia == "convex" or faces.shape[0] == 0:
        graph = _make_graph(vert, maxhullvert)
    if faces.shape[0] == 0:
        nv_g, nf_g = int(graph[0]), int(graph[1])
        faces = graph[2 + 3 * nv_g + 3 * nf_g:].astype(np.int64).reshape(-1, 3)
        face_ = faces.ravel()

    # ---- normals
    if normal_.size == 0:
        normal_ = _make_normals(vert, faces, smoothnormal)
        facenormal_ = faces.ravel().copy()
    if facenormal_ is not None and facenormal_.size != face_.size:
        raise ModelError("face data must have the same size as face normal data")
    if facetex_ is None and tex_.size:
        facetex_ = face_.copy()
    if facenormal_ is None:
        per_vertex = normal_.size // vert32.size
        facenormal_ = per_vertex * face_

    # (the polygons: _set_polygons at the end, from these vertices as read)
    raw = vert

    # ---- user transformation
    if refpos[0] != 0 or refpos[1] != 0 or refpos[2] != 0:
        vert = np.stack([vert[:, 0] - refpos[0], vert[:, 1] - refpos[1],
                         vert[:, 2] - refpos[2]], axis=1)
    nrm = normal_.reshape(-1, 3)
    if refquat[0] != 1 or refquat[1] != 0 or refquat[2] != 0 or refquat[3] != 0:
        q = list(refquat)
        _normvec(q)
        m = _quat2mat(q)
        vert = _mulmatT(m, vert)
        nrm = _mulmatT(m, nrm.astype(np.float64)).astype(np.float32)
    if scale[0] != 1 or scale[1] != 1 or scale[2] != 1:
        vert = vert * scale[None, :]
        nrm = (nrm.astype(np.float64) * scale[None, :]).astype(np.float32)
    nrm = nrm.astype(np.float32)
    ln = (nrm[:, 0] * nrm[:, 0] + nrm[:, 1] * nrm[:, 1] + nrm[:, 2] * nrm[:, 2]).astype(np.float32)
    goodn = ln.astype(np.float64) > MINVAL
    scl = np.ones_like(ln)
    scl[goodn] = _F32(1) / np.sqrt(ln[goodn])
    nrm = (nrm * scl[:, None]).astype(np.float32)
    nrm[~goodn] = np.array([0, 0, 1], np.float32)

    # ---- centroid of the surface
    area, tnormal, tcenter = _face_triangles(vert, faces)
    total_area = float(_seqsum(area))
    facecen = _seqsum(area[:, None] * tcenter, axis=0)
    if total_area >= MINVAL:
        facecen = facecen / total_area
    if total_area < MINVAL:
        raise ModelError(f"mesh surface area is too small: {name}")

    # faces used for volume / inertia
    if inertia == "convex":
        nv_g, nf_g = int(graph[0]), int(graph[1])
        vfaces = graph[2 + 3 * nv_g + 3 * nf_g:].astype(np.int64).reshape(-1, 3)
    else:
        vfaces = faces

    surface = 0.0
    volume = 0.0
    if inertia == "shell":
        w = area
        s = float(_seqsum(w))
        com = _seqsum(w[:, None] * (tcenter * 3.0 / 4.0 + facecen[None, :] / 4.0), axis=0)
        if s >= MINVAL:
            com = com / s
        surface = s
        if surface < MINVAL:
            raise ModelError(f"mesh surface area is too small: {name}")
    else:
        if vfaces is faces:
            va, vn_, vc = area, tnormal, tcenter
        else:
            va, vn_, vc = _face_triangles(vert, vfaces)
        vol = _dot3(vc - facecen[None, :], vn_) * va / 3
        if inertia == "legacy":
            vol = np.abs(vol)
        s = float(_seqsum(vol))
        com = _seqsum(vol[:, None] * (vc * 3.0 / 4.0 + facecen[None, :] / 4.0), axis=0)
        if s >= MINVAL:
            com = com / s
        volume = s
        if volume < MINVAL:
            if volume < 0:
                raise ModelError(f"mesh volume is negative (misoriented triangles): {name}")
            raise ModelError(f"mesh volume is too small: {name} . Try setting inertia to shell")

    # ---- inertia about the centre of mass
    vc_ = vert - com[None, :]
    ff = vfaces if inertia != "shell" else faces
    ia, inrm, icen = _face_triangles(vc_, ff)
    if inertia == "shell":
        w = ia
        C = 12
    else:
        w = _dot3(icen, inrm) * ia / 3
        C = 20
    if inertia == "legacy":
        w = np.abs(w)
    total = float(_seqsum(w))
    P = _inertia_products(vc_, ff, w / C)
    inert = [P[1] + P[2], P[0] + P[2], P[0] + P[1], -P[3], -P[4], -P[5]]
    if inertia == "shell":
        surface = total
    else:
        volume = total

    full = [inert[0], inert[3], inert[4],
            inert[3], inert[1], inert[5],
            inert[4], inert[5], inert[2]]
    eigval, quat = _eig3(full)
    if eigval[2] <= 0:
        raise ModelError(f"eigenvalue of mesh inertia must be positive: {name}")
    atol, rtol = 1e-9, 1e-6
    e0, e1, e2 = eigval
    if (e0 + e1 < e2 * (1.0 - rtol) - atol or e0 + e2 < e1 * (1.0 - rtol) - atol
            or e1 + e2 < e0 * (1.0 - rtol) - atol):
        raise ModelError(f"eigenvalues of mesh inertia violate A + B >= C: {name}")
    vref = surface if inertia == "shell" else volume
    # (NaN, as std::sqrt in MuJoCo, where the tolerance above let A + B < C through;
    # users of boxsz reject it)
    boxsz = np.array([0.5 * _sqrt_nan(6 * (e1 + e2 - e0) / vref),
                      0.5 * _sqrt_nan(6 * (e0 + e2 - e1) / vref),
                      0.5 * _sqrt_nan(6 * (e0 + e1 - e2) / vref)])

    # ---- move to the centre of mass, rotate into the principal frame
    if not reorient:
        com = np.zeros(3)
        quat = np.array([1.0, 0.0, 0.0, 0.0])
    vert = np.stack([vert[:, 0] - com[0], vert[:, 1] - com[1], vert[:, 2] - com[2]], axis=1)
    m = _quat2mat([quat[0], -quat[1], -quat[2], -quat[3]])
    vert = _mulmat(m, vert)
    nrm = _mulmat(m, nrm.astype(np.float64)).astype(np.float32)
    aamm = np.concatenate([vert.min(axis=0), vert.max(axis=0)])

    ntex = tex_.size // 2
    texcoord = tex_.reshape(-1, 2).astype(np.float32) if ntex else np.zeros((0, 2), np.float32)
    if facetex_ is not None and ntex:
        facetexcoord = np.asarray(facetex_, np.int64).reshape(-1, 3).astype(np.int32)
    else:
        facetexcoord = np.zeros((faces.shape[0], 3), np.int32)

    cm = CompiledMesh(
        name=name,
        vert=vert.astype(np.float32).astype(np.float64),
        face=faces.astype(np.int32),
        normal=nrm.astype(np.float32),
        facenormal=np.asarray(facenormal_, np.int64).reshape(-1, 3).astype(np.int32),
        texcoord=texcoord,
        facetexcoord=facetexcoord,
        pos=np.asarray(com, dtype=np.float64).copy(),
        quat=np.asarray(quat, dtype=np.float64),
        scale=scale.copy(),
        graph=graph.astype(np.int32),
        volume=float(volume),
        surface=float(surface),
        inertia_mode=inertia,
        boxsz=boxsz,
        aamm=aamm,
        vert_double=vert,
    )
    cm.pending = _Pending(raw, faces, maxhullvert, cache_keys or {})
    if geometry_only:
        return cm
    return finish_mesh(cm, needhull)
