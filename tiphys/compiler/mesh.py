"""Compile-time processing of ``<mesh>`` and ``<hfield>`` assets.

The goal is to reproduce what MuJoCo 3.4.0's compiler stores in ``mjModel``
for meshes (``mesh_vert``, ``mesh_face``, ``mesh_pos`` ...) and height fields
(``hfield_data`` ...), together with the derived quantities that geoms using a
mesh need (mass, principal inertia, bounding box, bounding radius).

Everything here is a pure function of plain Python / numpy values.

Outline of the mesh pipeline (same order as MuJoCo, because several steps
depend on the order, e.g. normals are computed on the raw vertices):

1. load vertices/faces/normals/texcoords from the file (binary STL, OBJ, MSH)
   or from inline data.  Vertices are single precision at this stage.  Binary
   STL vertices are de-duplicated (exact float equality); OBJ / MSH / inline
   vertices are kept as they are.
2. validate (>= 4 vertices, multiples of 3, face indices in range, ...).
3. optionally check face orientation consistency (``inertia="exact"``).
4. convex hull (needed for collisions, ``inertia="convex"`` or when there
   are no faces) on the raw vertices.
5. vertex normals (when not given), on the raw vertices.
6. user transform: subtract ``refpos``, rotate by the inverse of
   ``refquat``, multiply by ``scale``.
7. volume / surface, centre of mass and inertia of the solid (or shell),
   principal axes via a Jacobi eigen-solver written as MuJoCo's.
8. move the mesh to its centre of mass and rotate it into the principal
   axes; ``pos``/``quat`` remember that transform.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import hashlib
import io
import itertools
import math
import os
import pickle
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from tiphys.errors import ModelError
from tiphys.compiler import progress
from tiphys.kernels.consts import EPS, MINVAL

__all__ = [
    "CompiledMesh",
    "CompiledHfield",
    "compile_mesh",
    "compile_hfield",
    "mesh_content_type",
    "INERTIA_MODES",
    "polygon_arrays",
]

EIG_EPS = 1e-12     # tolerance of the Jacobi eigen-solver

INERTIA_MODES = ("convex", "legacy", "exact", "shell")

_F32 = np.float32


# ----------------------------------------------------------------------------
# small scalar helpers (evaluated in the same operation order as the compiler,
# so that results agree to the last bit in the common cases)

def _normvec(v):
    """Normalise a list in place unless its length is already ~1; return the old length."""
    s = 0.0
    for x in v:
        s += x * x
    if s < EPS:
        return 0.0
    s = math.sqrt(s)
    if abs(s - 1.0) > EPS:
        for i in range(len(v)):
            v[i] /= s
    return s


def _quat2mat(q):
    if q[0] == 1 and q[1] == 0 and q[2] == 0 and q[3] == 0:
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    q00 = q[0] * q[0]; q01 = q[0] * q[1]; q02 = q[0] * q[2]; q03 = q[0] * q[3]
    q11 = q[1] * q[1]; q12 = q[1] * q[2]; q13 = q[1] * q[3]
    q22 = q[2] * q[2]; q23 = q[2] * q[3]; q33 = q[3] * q[3]
    m = [0.0] * 9
    m[0] = q00 + q11 - q22 - q33
    m[4] = q00 - q11 + q22 - q33
    m[8] = q00 - q11 - q22 + q33
    m[1] = 2 * (q12 - q03)
    m[2] = 2 * (q13 + q02)
    m[3] = 2 * (q12 + q03)
    m[5] = 2 * (q23 - q01)
    m[6] = 2 * (q13 - q02)
    m[7] = 2 * (q23 + q01)
    return m


def _mulquat(a, b):
    r = [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]]
    _normvec(r)
    return r


def _mulmat3(A, B):
    return [A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j]
            for i in range(3) for j in range(3)]


def _eig3(mat):
    """Eigen-decomposition of a symmetric 3x3 matrix (row-major list of 9).

    Cyclic Jacobi rotations accumulated as a quaternion; eigenvalues sorted in
    decreasing order.  Returns (eigval[3], quat[4]); the columns of
    quat2mat(quat) are the eigenvectors.
    """
    quat = [1.0, 0.0, 0.0, 0.0]
    eigval = [0.0, 0.0, 0.0]
    for _ in range(500):
        ev = _quat2mat(quat)
        evT = [ev[0], ev[3], ev[6], ev[1], ev[4], ev[7], ev[2], ev[5], ev[8]]
        D = _mulmat3(_mulmat3(evT, mat), ev)
        eigval = [D[0], D[4], D[8]]
        if abs(D[1]) > abs(D[2]) and abs(D[1]) > abs(D[5]):
            rk, ck, rotk = 0, 1, 2
        elif abs(D[2]) > abs(D[5]):
            rk, ck, rotk = 0, 2, 1
        else:
            rk, ck, rotk = 1, 2, 0
        off = D[3 * rk + ck]
        if abs(off) < EIG_EPS:
            break
        tau = (D[4 * ck] - D[4 * rk]) / (2 * off)
        if tau >= 0:
            t = 1.0 / (tau + math.sqrt(1 + tau * tau))
        else:
            t = -1.0 / (-tau + math.sqrt(1 + tau * tau))
        c = 1.0 / math.sqrt(1 + t * t)
        if c > 1.0 - EIG_EPS:
            break
        rot = [0.0, 0.0, 0.0, 0.0]
        s = math.sqrt(0.5 - 0.5 * c)
        rot[rotk + 1] = -s if tau >= 0 else s
        if rotk == 1:
            rot[rotk + 1] = -rot[rotk + 1]
        rot[0] = math.sqrt(1.0 - rot[rotk + 1] * rot[rotk + 1])
        _normvec(rot)
        quat = _mulquat(quat, rot)
        _normvec(quat)
    # bubble sort, decreasing (lead indices 0, 1, 0)
    for j in range(3):
        j1 = j % 2
        if eigval[j1] + EIG_EPS < eigval[j1 + 1]:
            eigval[j1], eigval[j1 + 1] = eigval[j1 + 1], eigval[j1]
            rot = [0.707106781186548, 0.0, 0.0, 0.0]
            rot[(j1 + 2) % 3 + 1] = rot[0]
            quat = _mulquat(quat, rot)
            _normvec(quat)
    return eigval, quat


def _seqsum(x, axis=0):
    """Strictly sequential (left to right) sum, like a C accumulation loop."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[axis] == 0:
        shape = list(x.shape)
        del shape[axis]
        return np.zeros(shape)
    return np.take(np.cumsum(x, axis=axis), -1, axis=axis)


def _cross(b, c):
    """Row-wise cross product, same formula as the compiler's."""
    return np.stack([b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1],
                     b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
                     b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]], axis=1)


def _dot3(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _triangles(vert, face, want_normal=True):
    """Per-face (area, unit normal, centre) as the compiler's triangle helper.

    Faces whose doubled area is below MINVAL get area 0 and keep their raw
    (unnormalised) cross product as normal.
    """
    v1 = vert[face[:, 0]]
    v2 = vert[face[:, 1]]
    v3 = vert[face[:, 2]]
    center = np.stack([(v1[:, i] + v2[:, i] + v3[:, i]) / 3 for i in range(3)], axis=1)
    nrm = _cross(v2 - v1, v3 - v1)
    ln = np.sqrt(_dot3(nrm, nrm))
    small = ln < MINVAL
    if want_normal:
        safe = np.where(small, 1.0, ln)
        nrm = np.where(small[:, None], nrm, nrm / safe[:, None])
    area = np.where(small, 0.0, 0.5 * ln)
    return area, nrm, center


# ----------------------------------------------------------------------------
# content types

_CT_RE = re.compile(r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(;.*)?$")


def _content_type(file_name: Optional[str], content_type: Optional[str]) -> str:
    """Asset type from an explicit content type, else from the file extension."""
    if content_type:
        if not _CT_RE.match(content_type):
            return ""
        return content_type.split(";", 1)[0]
    if not file_name:
        return ""
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    dot = base.rfind(".")
    ext = base[dot:].lower() if dot >= 0 else ""
    return {".stl": "model/stl", ".obj": "model/obj", ".ply": "model/ply",
            ".msh": "model/vnd.mujoco.msh", ".png": "image/png"}.get(ext, "")


def mesh_content_type(file_name: Optional[str], content_type: Optional[str]) -> str:
    """Public helper: the content type the compiler would use for a mesh file."""
    return _content_type(file_name, content_type)


# ----------------------------------------------------------------------------
# file loaders.  Each returns a dict with float32 'vert' (flat), int 'face'
# (flat), float32 'normal', 'texcoord' and int 'facenormal', 'facetexcoord'.

def _dedup_vertices(vert32: np.ndarray, face: np.ndarray):
    """Merge bit-identical float vertices (+0 == -0), keeping first occurrences in order."""
    v = vert32.reshape(-1, 3)
    n = v.shape[0]
    if n == 0:
        return vert32, face
    key = np.ascontiguousarray(v + _F32(0.0))  # turns -0 into +0
    kv = key.view(np.dtype((np.void, 12))).ravel()
    _, first, inverse = np.unique(kv, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if len(first) == n:
        return vert32, face
    order = np.argsort(first, kind="stable")       # unique ids by first appearance
    newid = np.empty(len(first), dtype=np.int64)
    newid[order] = np.arange(len(first))
    remap = newid[inverse]
    newvert = v[first[order]].ravel()
    return newvert, remap[face]


def _read_stl(data: bytes, fname: str, righthand: bool):
    if len(data) == 0:
        raise ModelError(f"STL file '{fname}' is empty")
    if len(data) < 84:
        raise ModelError(f"invalid header in STL file '{fname}'")
    nfaces = int(np.frombuffer(data, dtype="<i4", count=1, offset=80)[0])
    if nfaces < 1 or nfaces > 200000:
        raise ModelError(f"number of faces should be between 1 and 200000 in STL file "
                         f"'{fname}'; perhaps this is an ASCII file?")
    if nfaces * 50 != len(data) - 84:
        raise ModelError(f"STL file '{fname}' has wrong size; perhaps this is an ASCII file?")
    rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)),
                                              ("a", "<u2")]), count=nfaces, offset=84)
    v = np.ascontiguousarray(rec["v"].reshape(-1, 3)).astype(np.float32)
    if np.any(np.abs(v.astype(np.float64)) > 2.0 ** 30):
        raise ModelError(f"vertex in STL file '{fname}' exceed maximum bounds")
    face = np.arange(3 * nfaces, dtype=np.int64).reshape(-1, 3)
    if not righthand:
        face = face[:, [0, 2, 1]]
    face = face.ravel()
    if not np.all(np.isfinite(v)):
        bad = int(np.nonzero(~np.all(np.isfinite(v), axis=1))[0][0])
        raise ModelError(f"vertex coordinate {3 * bad} is not finite")
    vert, face = _dedup_vertices(v.ravel(), face)
    return dict(vert=vert, face=face, normal=None, texcoord=None,
                facenormal=None, facetexcoord=None)


def _read_msh(data: bytes, fname: str, righthand: bool):
    if len(data) == 0:
        raise ModelError(f"MSH file '{fname}' is empty")
    if len(data) < 16:
        raise ModelError(f"missing header in MSH file '{fname}'")
    nv, nn, nt, nf = (int(x) for x in np.frombuffer(data, dtype="<i4", count=4))
    if (nv < 4 or nf < 0 or nn < 0 or nt < 0 or (nn > 0 and nn != nv)
            or (nt > 0 and nt != nv)):
        raise ModelError(f"invalid sizes in MSH file '{fname}'")
    lim = 2**31 - 1
    if nv >= lim // 12 or nn >= lim // 12 or nt >= lim // 8 or nf >= lim // 12:
        raise ModelError(f"too large sizes in MSH file '{fname}'.")
    if len(data) != 16 + 12 * nv + 12 * nn + 8 * nt + 12 * nf:
        raise ModelError(f"unexpected file size in MSH file '{fname}'")
    off = 16
    vert = np.frombuffer(data, dtype="<f4", count=3 * nv, offset=off).astype(np.float32)
    off += 12 * nv
    normal = texcoord = None
    if nn:
        normal = np.frombuffer(data, dtype="<f4", count=3 * nv, offset=off).astype(np.float32)
        off += 12 * nv
    if nt:
        texcoord = np.frombuffer(data, dtype="<f4", count=2 * nv, offset=off).astype(np.float32)
        off += 8 * nv
    face = facenormal = facetexcoord = None
    if nf:
        f = np.frombuffer(data, dtype="<i4", count=3 * nf, offset=off).astype(np.int64)
        facenormal = f.copy()
        if texcoord is not None:
            facetexcoord = f.copy()
        face = f.reshape(-1, 3)
        if not righthand:
            face = face[:, [0, 2, 1]]
        face = face.ravel()
    return dict(vert=vert, face=face, normal=normal, texcoord=texcoord,
                facenormal=facenormal, facetexcoord=facetexcoord)


# --- OBJ (semantics of the tinyobjloader version MuJoCo 3.4.0 bundles) --------

_NUM_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INT_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?\d+)")
# fast paths of the OBJ reader, for the well-formed lines that make up nearly every
# file: anything they do not match takes the general path, which gives the same result
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_V_LINE_RE = re.compile(rf"\s*({_NUM})\s+({_NUM})\s+({_NUM})(?:\s.*)?")
_VT_LINE_RE = re.compile(rf"\s*({_NUM})\s+({_NUM})(?:\s.*)?")
_TRIPLE_RE = re.compile(r"(\d+)(?:/(\d+)|//(\d+)|/(\d+)/(\d+))?")


def _atoi(s: str) -> int:
    m = _INT_RE.match(s)
    return int(m.group(1)) if m else 0


def _parse_real(tok: Optional[str], default=0.0) -> float:
    if tok is None:
        return default
    m = _NUM_RE.match(tok)
    if not m or m.end() != len(tok):
        return default
    try:
        return float(tok)
    except ValueError:
        return default


def _fix_index(idx: int, n: int):
    if idx > 0:
        return idx - 1
    if idx == 0:
        return None
    return n + idx


def _parse_triple(tok: str, nv: int, nvn: int, nvt: int):
    """'i', 'i/j', 'i//k' or 'i/j/k' -> (v, vt, vn) zero-based, -1 if absent; None on error."""
    parts = tok.split("/")
    v = _fix_index(_atoi(parts[0]), nv)
    if v is None:
        return None
    vt = vn = -1
    if len(parts) == 1:
        return v, vt, vn
    if parts[1] == "" and len(parts) >= 3:
        vn = _fix_index(_atoi(parts[2]), nvn)
        if vn is None:
            return None
        return v, vt, vn
    vt = _fix_index(_atoi(parts[1]), nvt)
    if vt is None:
        return None
    if len(parts) == 2:
        return v, vt, vn
    vn = _fix_index(_atoi(parts[2]), nvn)
    if vn is None:
        return None
    return v, vt, vn


def _pnpoly(vx, vy, tx, ty):
    c = False
    j = 2
    for i in range(3):
        if ((vy[i] > ty) != (vy[j] > ty)) and (
                tx < (vx[j] - vx[i]) * (ty - vy[i]) / (vy[j] - vy[i]) + vx[i]):
            c = not c
        j = i
    return c


def _triangulate_polygon(poly, v32):
    """Ear-clipping of one polygon face in single precision; list of index triples."""
    npolys = len(poly)
    nv = len(v32)
    out = []
    if npolys == 3:
        return [tuple(poly)]
    zero = _F32(0.0)
    axes = [1, 2]
    eps = _F32(np.finfo(np.float32).eps)
    for k in range(npolys):
        a = poly[k % npolys][0]
        b = poly[(k + 1) % npolys][0]
        c = poly[(k + 2) % npolys][0]
        if not (0 <= a < nv and 0 <= b < nv and 0 <= c < nv):
            continue
        p0, p1, p2 = v32[a], v32[b], v32[c]
        e0 = [p1[i] - p0[i] for i in range(3)]
        e1 = [p2[i] - p1[i] for i in range(3)]
        cx = abs(e0[1] * e1[2] - e0[2] * e1[1])
        cy = abs(e0[2] * e1[0] - e0[0] * e1[2])
        cz = abs(e0[0] * e1[1] - e0[1] * e1[0])
        if cx > eps or cy > eps or cz > eps:
            if not (cx > cy and cx > cz):
                axes[0] = 0
                if cz > cx and cz > cy:
                    axes[1] = 1
            break

    def coord(vi, ax):
        if 0 <= vi < nv:
            return v32[vi][ax]
        return zero

    area = zero
    half = _F32(0.5)
    for k in range(npolys):
        a = poly[k % npolys][0]
        b = poly[(k + 1) % npolys][0]
        if not (0 <= a < nv and 0 <= b < nv):
            continue
        area = area + (v32[a][axes[0]] * v32[b][axes[1]] - v32[a][axes[1]] * v32[b][axes[0]]) * half

    rem = list(poly)
    guess = 0
    remaining_iter = npolys
    prev_remaining = len(rem)
    while len(rem) > 3 and remaining_iter > 0:
        n = len(rem)
        if guess >= n:
            guess -= n
        if prev_remaining != n:
            prev_remaining = n
            remaining_iter = n
        else:
            remaining_iter -= 1
        ind = [rem[(guess + k) % n] for k in range(3)]
        vx = [coord(t[0], axes[0]) for t in ind]
        vy = [coord(t[0], axes[1]) for t in ind]
        e0x = vx[1] - vx[0]
        e0y = vy[1] - vy[0]
        e1x = vx[2] - vx[1]
        e1y = vy[2] - vy[1]
        cross = e0x * e1y - e0y * e1x
        if cross * area < zero:
            guess += 1
            continue
        overlap = False
        for other in range(3, n):
            idx = (guess + other) % n
            ovi = rem[idx][0]
            if not (0 <= ovi < nv):
                continue
            if _pnpoly(vx, vy, v32[ovi][axes[0]], v32[ovi][axes[1]]):
                overlap = True
                break
        if overlap:
            guess += 1
            continue
        out.append(tuple(ind))
        del rem[(guess + 1) % n]
    if len(rem) == 3:
        out.append(tuple(rem))
    return out


# --- OBJ, whole-file fast path --------------------------------------------------
# Nearly every exported OBJ file is all well-formed lines: "v x y z", "vn", "vt", and
# triangles "f" written in one index form throughout. Such a file is read with one
# regular-expression pass per line kind over the whole text instead of a Python step
# per line. Each pattern takes only lines that the general reader (_read_obj_full)
# reads to the same numbers, and the file is left to the general reader unless every
# line the general reader would look at (counted by its first token, as it sees it)
# was taken: the result is the same either way.
_FNUM = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_FAST_V_RE = re.compile(
    rf"\nv[ \t]+({_FNUM})[ \t]+({_FNUM})[ \t]+({_FNUM})(?:[ \t][^\n]*)?(?=\n)")
_FAST_VN_RE = re.compile(
    rf"\nvn[ \t]+({_FNUM})[ \t]+({_FNUM})[ \t]+({_FNUM})(?:[ \t][^\n]*)?(?=\n)")
_FAST_VT_RE = re.compile(rf"\nvt[ \t]+({_FNUM})[ \t]+({_FNUM})(?:[ \t][^\n]*)?(?=\n)")
# the lines the general reader treats as each kind (it strips leading spaces and tabs)
_ANY_V_RE = re.compile(r"\n[ \t]*v[ \t]")
_ANY_VN_RE = re.compile(r"\n[ \t]*vn[ \t]")
_ANY_VT_RE = re.compile(r"\n[ \t]*vt[ \t]")
_ANY_F_RE = re.compile(r"\n[ \t]*f[ \t]")
_ANY_LP_RE = re.compile(r"\n[ \t]*[lp][ \t]")
_ANY_GO_RE = re.compile(r"\n[ \t]*[go][ \t]")
# triangles in one index form: (corner pattern, which of (v, vt, vn) each group is)
_FACE_FORMS = tuple(
    (re.compile(rf"\nf[ \t]+{c}[ \t]+{c}[ \t]+{c}[ \t]*(?=\n)"), slots)
    for c, slots in ((r"([0-9]+)", (0,)),
                     (r"([0-9]+)/([0-9]+)", (0, 1)),
                     (r"([0-9]+)//([0-9]+)", (0, 2)),
                     (r"([0-9]+)/([0-9]+)/([0-9]+)", (0, 1, 2))))


def _floats(rows, width: int) -> list:
    """The numbers of findall's rows, flat, as the general reader's float() reads them."""
    return list(map(float, itertools.chain.from_iterable(rows))) if width > 1 else \
        list(map(float, rows))


def _read_obj_fast(text: str):
    """(v, vn, vt, tris) as the general reader gives them, or None where the file has
    a line that only the general reader takes (see the patterns above)."""
    text = "\n" + text + "\n"
    if _ANY_LP_RE.search(text):
        return None
    v = _FAST_V_RE.findall(text)
    vn = _FAST_VN_RE.findall(text)
    vt = _FAST_VT_RE.findall(text)
    if (len(v) != len(_ANY_V_RE.findall(text)) or len(vn) != len(_ANY_VN_RE.findall(text))
            or len(vt) != len(_ANY_VT_RE.findall(text))):
        return None
    first = _ANY_F_RE.search(text)
    tris = np.zeros((0, 3, 3), np.int64)
    if first is not None:
        # the first shape: from the first face to the next "g" or "o" line
        end = _ANY_GO_RE.search(text, first.start())
        end = len(text) if end is None else end.start() + 1
        form = next((f for f in _FACE_FORMS if f[0].match(text, first.start())), None)
        if form is None:
            return None
        pattern, slots = form
        rows = pattern.findall(text, first.start(), end)
        nface = len(_ANY_F_RE.findall(text))
        if len(rows) != len(_ANY_F_RE.findall(text, first.start(), end)) or (
                nface > len(rows) and len(pattern.findall(text, end - 1)) != nface - len(rows)):
            return None
        idx = np.fromiter(map(int, itertools.chain.from_iterable(rows)), np.int64,
                          len(rows) * 3 * len(slots)).reshape(-1, 3, len(slots))
        if idx.size and idx.min() < 1:  # index 0: the general reader's error
            return None
        tris = np.full((len(rows), 3, 3), -1, np.int64)
        tris[:, :, list(slots)] = idx - 1
    return _floats(v, 3), _floats(vn, 3), _floats(vt, 2), tris


def _read_obj_full(data: bytes, fname: str, righthand: bool):
    """Parse an OBJ file; MuJoCo uses all v/vn/vt lines but only the first shape's faces."""
    text = data.decode("latin-1")
    if "\r" in text:  # the general reader's line ends: "\r\n", "\n" or "\r"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    fast = _read_obj_fast(text)
    v, vn, vt, tris = fast if fast is not None else _read_obj_lines(text, fname)
    vert = np.asarray(v, dtype=np.float32)
    normal = np.asarray(vn, dtype=np.float32)
    texcoord = np.asarray(vt, dtype=np.float32)
    b, c = (1, 2) if righthand else (2, 1)
    tris = tris[:, [0, b, c], :]
    face, ft, fn = tris[:, :, 0].ravel(), tris[:, :, 1].ravel(), tris[:, :, 2].ravel()
    if len(texcoord):
        texcoord = texcoord.copy()
        texcoord[1::2] = _F32(1.0) - texcoord[1::2]
    return dict(vert=vert, face=np.asarray(face, dtype=np.int64),
                normal=normal if len(normal) else None,
                texcoord=texcoord if len(texcoord) else None,
                facenormal=np.asarray(fn, dtype=np.int64) if len(normal) else None,
                facetexcoord=np.asarray(ft, dtype=np.int64) if len(texcoord) else None)


def _read_obj_lines(text: str, fname: str):
    """The general OBJ reader, one line at a time (lines split at "\n"): (v, vn, vt)
    flat lists of floats and the first shape's triangles as an (n, 3, 3) array of
    (vertex, texcoord, normal) ids, -1 where absent."""
    v: list = []
    vn: list = []
    vt: list = []
    first_shape = None
    cur_faces: list = []
    cur_other = False
    v32 = None

    def export(faces):
        nonlocal v32
        tris = []
        if faces:
            if v32 is None or len(v32) != len(v) // 3:
                arr = np.asarray(v, dtype=np.float32).reshape(-1, 3)
                v32 = [tuple(r) for r in arr]
            for poly in faces:
                if len(poly) < 3:
                    continue
                tris.extend(_triangulate_polygon(poly, v32))
        return tris

    for raw in text.split("\n"):
        tok = raw.lstrip(" \t")
        if not tok or tok[0] == "#":
            continue
        c0 = tok[0]
        c1 = tok[1] if len(tok) > 1 else ""
        c2 = tok[2] if len(tok) > 2 else ""
        if c0 == "v" and c1 in (" ", "\t"):
            m = _V_LINE_RE.fullmatch(tok, 2)
            if m:
                v.extend(map(float, m.groups()))
                continue
            parts = tok[2:].split()
            v.extend(_parse_real(parts[i] if i < len(parts) else None) for i in range(3))
        elif c0 == "v" and c1 == "n" and c2 in (" ", "\t"):
            m = _V_LINE_RE.fullmatch(tok, 3)
            if m:
                vn.extend(map(float, m.groups()))
                continue
            parts = tok[3:].split()
            vn.extend(_parse_real(parts[i] if i < len(parts) else None) for i in range(3))
        elif c0 == "v" and c1 == "t" and c2 in (" ", "\t"):
            m = _VT_LINE_RE.fullmatch(tok, 3)
            if m:
                vt.extend(map(float, m.groups()))
                continue
            parts = tok[3:].split()
            vt.extend(_parse_real(parts[i] if i < len(parts) else None) for i in range(2))
        elif c0 in ("l", "p", "f") and c1 in (" ", "\t"):
            poly = []
            for t in tok[2:].split():
                if t.isdigit() and t.isascii() and t[0] != "0":  # a plain vertex index
                    poly.append((int(t) - 1, -1, -1))
                    continue
                m = _TRIPLE_RE.fullmatch(t)
                if m:  # positive indices only (0 and negative ones: the general path)
                    a, b, c, d, e = m.groups()
                    r = (int(a) - 1, int(b or d or 0) - 1, int(c or e or 0) - 1)
                    if r[0] >= 0 and (b is None or r[1] >= 0) and (c is None or r[2] >= 0) \
                            and (d is None or (r[1] >= 0 and r[2] >= 0)):
                        poly.append(r)
                        continue
                r = _parse_triple(t, len(v) // 3, len(vn) // 3, len(vt) // 2)
                if r is None:
                    raise ModelError(f"could not parse OBJ file '{fname}'")
                poly.append(r)
            if first_shape is not None:
                continue
            if c0 == "f":
                cur_faces.append(poly)
            else:
                cur_other = True
        elif c0 in ("g", "o") and c1 in (" ", "\t"):
            if first_shape is None:
                tris = export(cur_faces)
                if tris or (c0 == "o" and cur_other):
                    first_shape = tris
            cur_faces = []
            cur_other = False
    if first_shape is None:
        first_shape = export(cur_faces)
    return v, vn, vt, np.asarray(first_shape, dtype=np.int64).reshape(-1, 3, 3)


# ----------------------------------------------------------------------------
# convex hull graph

def _qhull(vert: np.ndarray, opts: str):
    """Run Qhull like MuJoCo does ("Qt" [+ "TA<n>"], then triangulate).

    Returns (facets, vertex_order): facets as an (nface,3) array of point
    ids in Qhull's facet order with each facet's vertices in Qhull's order,
    and the hull vertices in Qhull's vertex-list order (None if unavailable).
    """
    pts = np.ascontiguousarray(vert, dtype=np.float64)
    try:
        from scipy.spatial._qhull import _Qhull  # private, but exposes Qhull's lists
    except ImportError:  # pragma: no cover
        _Qhull = None
    if _Qhull is not None:
        q = _Qhull(b"i", pts, opts.encode(), required_options=b"Qt")
        try:
            q.triangulate()
            simp = np.asarray(q.get_simplex_facet_array()[0], dtype=np.int64)
            if "TA" in opts:
                # after an early stop (TA) on badly scaled points, Qhull's Voronoi
                # pass can hit an internal error that calls exit(): run it in a
                # child process so that bad input cannot kill this one
                order = _guarded(lambda: _voronoi_order(q, simp))
            else:
                order = _voronoi_order(q, simp)
        finally:
            q.close()
        return simp, order
    from scipy.spatial import ConvexHull  # pragma: no cover
    hull = ConvexHull(pts, qhull_options=opts)  # pragma: no cover
    return np.asarray(hull.simplices, dtype=np.int64), None  # pragma: no cover


def _voronoi_order(q, simp):
    """Hull vertices in Qhull's vertex-list order, or None where the Voronoi pass
    does not give every hull vertex a region of its own.

    The Voronoi extraction walks Qhull's vertex list; the region index of each
    hull vertex is its position in that list. It raises no error of its own on
    valid hulls (checked on every corpus and Menagerie mesh, with and without TA):
    where Qhull fails here it calls exit(), which ``_guarded`` turns into None. Any
    exception is therefore a bug and propagates."""
    point_region = np.asarray(q.get_voronoi_diagram()[4])
    hv = np.unique(simp)
    pr = point_region[hv]
    if np.all(pr >= 0) and len(np.unique(pr)) == len(hv):
        return hv[np.argsort(pr, kind="stable")]
    return None  # the caller then orders the vertices from the facets instead


def _guarded(fn):
    """``fn()`` (an int array or None) run in a forked child; None if the child dies
    without an answer (Qhull's exit()); an exception raised by ``fn`` is raised here."""
    if not hasattr(os, "fork"):  # pragma: no cover
        return fn()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no Python cleanup, only the result down the pipe
        code = 1
        try:
            os.close(rfd)
            try:
                res = fn()
                data = b"\x01" + (b"" if res is None
                                  else np.asarray(res, dtype=np.int64).tobytes())
            except BaseException as exc:  # noqa: BLE001 - handed to the parent
                try:
                    data = b"\x02" + pickle.dumps(exc)
                except Exception:  # noqa: BLE001 - an exception that cannot be pickled
                    data = b"\x02" + pickle.dumps(RuntimeError(repr(exc)))
            view = memoryview(data)
            while view:
                view = view[os.write(wfd, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    chunks = []
    while True:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if status == 0 and data.startswith(b"\x02"):
        raise pickle.loads(data[1:])
    if status != 0 or not data.startswith(b"\x01") or len(data) == 1:
        return None
    return np.frombuffer(data[1:], dtype=np.int64).copy()


def _make_graph(vert: np.ndarray, maxhullvert: int):
    """Convex hull graph in MuJoCo's mesh_graph layout.

    Layout: [numvert, numface, vert_edgeadr[numvert], vert_globalid[numvert],
    edge_localid[numvert + 3*numface], face_globalid[3*numface]], where
    edge_localid lists, for every hull vertex, the (local ids of) vertices
    sharing a hull triangle with it, terminated by -1, and face_globalid are
    the hull triangles, outward oriented.

    Computed with Qhull (scipy's copy) with MuJoCo's options: "Qt" (triangulated
    output) and "TA<maxhullvert-4>" to cap the number of hull vertices.
    """
    from scipy.spatial import QhullError  # type: ignore[attr-defined]

    opts = "Qt"
    if maxhullvert > -1:
        opts += f" TA{maxhullvert - 4}"
    try:
        simp, order = _qhull(vert, opts)
    except (QhullError, ValueError, RuntimeError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"qhull error: {msg}")
    nface = simp.shape[0]
    if nface == 0:
        raise ModelError("qhull error: empty convex hull")

    # outward orientation: swap the first two vertices of inward facets
    p = vert[simp]
    nrm = _cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    hv = np.unique(simp)
    cen = vert[hv].mean(axis=0)
    outward = _dot3(nrm, p[:, 0] - cen[None, :]) >= 0
    faces = np.where(outward[:, None], simp, simp[:, [1, 0, 2]])

    if order is None:
        order = _qhull_vertex_order(simp, hv)
    order = [int(g) for g in order]
    numvert = len(order)
    local = {g: i for i, g in enumerate(order)}
    nbr: dict = {g: [] for g in order}
    for fi in range(nface):
        for g in simp[fi]:
            nbr[int(g)].append(fi)
    vert_edgeadr = []
    edge_local: list = []
    for g in order:
        vert_edgeadr.append(len(edge_local))
        seen = set()
        for fi in nbr[g]:
            for g1 in simp[fi]:
                g1 = int(g1)
                if g1 != g and g1 not in seen:
                    seen.add(g1)
                    edge_local.append(local[g1])
        edge_local.append(-1)
    if len(edge_local) != numvert + 3 * nface:
        raise ModelError("qhull error: convex hull graph has the wrong size")
    graph = np.concatenate([np.array([numvert, nface]), np.array(vert_edgeadr),
                            np.array(order), np.array(edge_local),
                            faces.ravel()]).astype(np.int32)
    return graph


def _qhull_vertex_order(simp, verts):
    """Fallback ordering of hull vertices (decreasing Qhull vertex number as
    implied by the facets' vertex order) when Qhull's vertex list is not
    available; only the order of vert_globalid / edge lists depends on it."""
    import heapq
    verts = [int(x) for x in verts]
    newer = {g: set() for g in verts}
    indeg = {g: 0 for g in verts}
    for f in simp:
        a, b, c = (int(x) for x in f)
        for hi, lo in ((a, b), (b, c), (a, c)):
            if lo not in newer[hi]:
                newer[hi].add(lo)
                indeg[lo] += 1
    heap = [g for g in verts if indeg[g] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        g = heapq.heappop(heap)
        out.append(g)
        for n in newer[g]:
            indeg[n] -= 1
            if indeg[n] == 0:
                heapq.heappush(heap, n)
    if len(out) != len(verts):
        out = verts
    return np.asarray(out, dtype=np.int64)


# ----------------------------------------------------------------------------
# mesh polygons (mesh_poly*): coplanar faces merged, as MuJoCo's MakePolygons

FACE_TOL = 0.99999872  # two faces are one polygon when their normals' dot exceeds this


def _makenormals(vert: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Unit normals of triangles (rows of ``faces``) with the compiler's arithmetic,
    operation for operation (a near-zero cross product is divided anyway, as MuJoCo
    does: [1, 0, 0] / |n|, inf or nan when |n| is 0)."""
    v = np.asarray(vert, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
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
        (or is dropped, where emplace meets an equivalent polygon first)."""
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
        elif bound is equiv:  # find's answer
            bound.insert_face(*face)
        # else: find saw no equivalent lower bound, and emplace stops at the first
        # equivalent node: the face is dropped, as in MuJoCo

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
    polys = _PolygonSet()
    with _gc_paused():  # millions of small objects: no use scanning them meanwhile
        add = polys.add
        for normal, face in zip(_makenormals(vert, faces).tolist(), faces.tolist()):
            add(normal, face)
        polygons = []
        for poly in polys:
            if poly.edges is None:  # a single face
                polygons.append(poly.face)
            else:
                polygons.extend(path for path in poly.paths() if len(path) >= 3)
            poly.parent = None  # no cycles left: the tree is freed as soon as dropped
        del polys, add  # freed here, so the collector never has to scan it
        polyvertnum = np.fromiter(map(len, polygons), np.int32, len(polygons))
        polyvert = np.fromiter(itertools.chain.from_iterable(polygons), np.int32,
                               int(polyvertnum.sum()))
    polyid = np.repeat(np.arange(len(polygons), dtype=np.int32), polyvertnum)
    polymap = polyid[np.argsort(polyvert, kind="stable")]
    polymapnum = np.bincount(polyvert, minlength=len(vert)).astype(np.int32)
    return polyvertnum, polyvert, polymapnum, polymap


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


# ----------------------------------------------------------------------------
# vertex normals

def _ordered_accumulate(acc32: np.ndarray, idx: np.ndarray, vals: np.ndarray):
    """acc32[idx[k]] += vals[k] for k in order, each addition done in double then
    rounded to single precision (as 'float += double' in C)."""
    if len(idx) == 0:
        return acc32
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    start = np.r_[0, np.nonzero(np.diff(sidx))[0] + 1]
    counts = np.diff(np.r_[start, len(sidx)])
    rank = np.arange(len(sidx)) - np.repeat(start, counts)
    rk = np.empty_like(rank)
    rk[order] = rank
    for r in range(int(rk.max()) + 1):
        sel = rk == r
        ii = idx[sel]
        acc32[ii] = (acc32[ii].astype(np.float64) + vals[sel]).astype(np.float32)
    return acc32


def _make_normals(vert: np.ndarray, face: np.ndarray, smooth: bool):
    """Area-weighted vertex normals; sharp edges (dot < 0.8) removed unless smooth."""
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
    normal = np.zeros((nv, 3), dtype=np.float32)
    for k in range(3):
        col = normal[:, k].copy()
        normal[:, k] = _ordered_accumulate(col, idx, cvals[:, k])
    if not smooth:
        vn = normal.astype(np.float64)[idx]             # (3nf,3) vertex normal per corner
        s2 = _dot3(vn, vn)
        l2 = np.sqrt(s2)
        ok2 = s2 >= EPS
        rn = ok2 & (np.abs(l2 - 1) > EPS)
        vn = np.where(rn[:, None], vn / np.where(rn, l2, 1.0)[:, None], vn)
        fn = np.repeat(nrm, 3, axis=0)
        remove = _dot3(fn, vn) < 0.8
        nremove = np.zeros((nv, 3), dtype=np.float32)
        ridx = idx[remove]
        rvals = cvals[remove]
        for k in range(3):
            col = nremove[:, k].copy()
            nremove[:, k] = _ordered_accumulate(col, ridx, rvals[:, k])
        normal = (normal - nremove).astype(np.float32)
    # normalise in single precision
    ln32 = np.sqrt(normal[:, 0] * normal[:, 0] + normal[:, 1] * normal[:, 1]
                   + normal[:, 2] * normal[:, 2]).astype(np.float32)
    good = ln32.astype(np.float64) > MINVAL
    out = np.zeros_like(normal)
    out[good] = normal[good] / ln32[good, None]
    out[~good] = np.array([0, 0, 1], dtype=np.float32)
    return out.ravel()


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
MESH_CACHE_BYTES = 256 << 20
_mesh_cache: collections.OrderedDict = collections.OrderedDict()  # key -> (mesh, nbytes)


def clear_mesh_cache() -> None:
    """Forget every compiled mesh (the next load compiles its meshes anew)."""
    _mesh_cache.clear()


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


def compile_mesh(*, name: str = "", file_bytes: Optional[bytes] = None,
                 file_name: Optional[str] = None, content_type: Optional[str] = None,
                 vertex=None, face=None, normal=None, texcoord=None,
                 scale: Sequence[float] = (1, 1, 1), refpos: Sequence[float] = (0, 0, 0),
                 refquat: Sequence[float] = (1, 0, 0, 0), inertia: str = "legacy",
                 maxhullvert: int = -1, smoothnormal: bool = False,
                 needhull: bool = True) -> CompiledMesh:
    """Compile one mesh asset as MuJoCo 3.4.0 does (from the process's mesh cache when
    the same inputs were compiled before; see MESH_CACHE_BYTES).

    ``file_bytes``/``file_name`` give the file contents and its name (the name
    picks the format unless ``content_type`` is given).  ``vertex``, ``face``,
    ``normal``, ``texcoord`` are the inline attributes as flat sequences.
    ``needhull`` says whether the convex hull graph is wanted (MuJoCo builds
    it when a mesh geom using it can collide - contype or conaffinity nonzero
    or in an explicit pair - or when the mesh inertia is "convex"; without
    faces the hull is always built because it supplies the faces).
    """
    progress.step(f"mesh {name}" if name else "mesh")
    inputs = {"file_bytes": file_bytes, "file_name": file_name,
              "content_type": content_type, "vertex": vertex, "face": face,
              "normal": normal, "texcoord": texcoord, "scale": scale, "refpos": refpos,
              "refquat": refquat, "inertia": inertia, "maxhullvert": maxhullvert,
              "smoothnormal": smoothnormal, "needhull": needhull}
    key = _mesh_key(inputs) if MESH_CACHE_BYTES > 0 else None
    hit = _mesh_cache.get(key) if key is not None else None
    if hit is not None:
        _mesh_cache.move_to_end(key)
        return _copy_mesh(hit[0], name)
    cm = _compile_mesh(name=name, **inputs)
    if key is not None:
        nbytes = _mesh_nbytes(cm)
        if nbytes <= MESH_CACHE_BYTES:
            _mesh_cache[key] = (_copy_mesh(cm, ""), nbytes)
            total = sum(n for _, n in _mesh_cache.values())
            while total > MESH_CACHE_BYTES:
                total -= _mesh_cache.popitem(last=False)[1][1]
    return cm


def _compile_mesh(*, name, file_bytes, file_name, content_type, vertex, face, normal,
                  texcoord, scale, refpos, refquat, inertia, maxhullvert, smoothnormal,
                  needhull) -> CompiledMesh:
    """compile_mesh without the cache."""
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
        area, _, _ = _triangles(vert, faces, want_normal=False)
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
    if needhull or faces.shape[0] == 0:
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

    # ---- polygons (merged on the raw vertices; normals from the final ones below)
    if graph.size:
        nv_g, nf_g = int(graph[0]), int(graph[1])
        poly_faces = graph[2 + 3 * nv_g + 3 * nf_g:].reshape(-1, 3)
    else:
        poly_faces = faces
    polyvertnum, polyvert, polymapnum, polymap = make_polygons(vert, poly_faces)

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
    area, tnormal, tcenter = _triangles(vert, faces)
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
            va, vn_, vc = _triangles(vert, vfaces)
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
    D = vc_[ff[:, 0]]
    E = vc_[ff[:, 1]]
    F = vc_[ff[:, 2]]
    ia, inrm, icen = _triangles(vc_, ff)
    if inertia == "shell":
        w = ia
        C = 12
    else:
        w = _dot3(icen, inrm) * ia / 3
        C = 20
    if inertia == "legacy":
        w = np.abs(w)
    total = float(_seqsum(w))
    kk = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
    P = []
    for a, b in kk:
        term = (2 * (D[:, a] * D[:, b] + E[:, a] * E[:, b] + F[:, a] * F[:, b])
                + D[:, a] * E[:, b] + D[:, b] * E[:, a]
                + D[:, a] * F[:, b] + D[:, b] * F[:, a]
                + E[:, a] * F[:, b] + E[:, b] * F[:, a])
        P.append(float(_seqsum(w / C * term)))
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

    return CompiledMesh(
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
        polynormal=polygon_normals(vert, polyvertnum, polyvert),
        polyvertnum=polyvertnum,
        polyvert=polyvert,
        polymapnum=polymapnum,
        polymap=polymap,
    )


def _mulmat(m, v):
    """Rows of v multiplied by the 3x3 matrix m (row-major list): res = m @ v."""
    return np.stack([m[0] * v[:, 0] + m[1] * v[:, 1] + m[2] * v[:, 2],
                     m[3] * v[:, 0] + m[4] * v[:, 1] + m[5] * v[:, 2],
                     m[6] * v[:, 0] + m[7] * v[:, 1] + m[8] * v[:, 2]], axis=1)


def _mulmatT(m, v):
    """res = m^T @ v for each row of v."""
    return np.stack([m[0] * v[:, 0] + m[3] * v[:, 1] + m[6] * v[:, 2],
                     m[1] * v[:, 0] + m[4] * v[:, 1] + m[7] * v[:, 2],
                     m[2] * v[:, 0] + m[5] * v[:, 1] + m[8] * v[:, 2]], axis=1)


# ----------------------------------------------------------------------------
# height fields

@dataclass
class CompiledHfield:
    """A height field as MuJoCo 3.4.0 stores it (hfield_size/nrow/ncol/data)."""

    name: str
    size: np.ndarray      # (4,) radius_x, radius_y, elevation_z, base_z
    nrow: int
    ncol: int
    data: np.ndarray      # (nrow*ncol,) float32, normalised to [0,1], row 0 = lowest y

    def aabb(self) -> np.ndarray:
        s = self.size
        return np.array([0.0, 0.0, (s[2] - s[3]) / 2, s[0], s[1], (s[2] + s[3]) / 2])

    def rbound(self) -> float:
        s = self.size
        return math.sqrt(s[0] * s[0] + s[1] * s[1] + max(s[2] * s[2], s[3] * s[3]))

    def geom_size(self) -> np.ndarray:
        s = self.size
        return np.array([s[0], s[1], 0.25 * s[2] + 0.5 * s[3]])


def _png_grey(data: bytes, fname: str) -> np.ndarray:
    """Decode a PNG to 8-bit grey the way lodepng's LCT_GREY conversion does:
    grey images keep their value (16-bit: high byte), colour images use the red
    channel, palettes their entry's red value; alpha is ignored."""
    from PIL import Image
    if not data:
        raise ModelError(f"empty PNG file '{fname}'")
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception as exc:  # noqa: BLE001
        reason = "not a PNG file" if "cannot identify image" in str(exc) else exc
        raise ModelError(f"error decoding PNG file '{fname}': {reason}") from None
    if img.format != "PNG":
        raise ModelError(f"error decoding PNG file '{fname}': not a PNG file")
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        a = np.asarray(img).astype(np.int64)
        if mode == "I" and img.info.get("transparency") is None and a.max(initial=0) <= 255 \
                and getattr(img, "bits", 8) <= 8:
            return a.astype(np.uint8)
        return (a >> 8).astype(np.uint8)
    if mode == "1":
        return (np.asarray(img.convert("L"))).astype(np.uint8)
    if mode in ("L", "LA"):
        return np.asarray(img.getchannel(0)).astype(np.uint8)
    if mode == "P":
        rgb = img.convert("RGB")
        return np.asarray(rgb.getchannel(0)).astype(np.uint8)
    rgb = img.convert("RGBA") if mode not in ("RGB", "RGBA") else img
    return np.asarray(rgb.getchannel(0)).astype(np.uint8)


def compile_hfield(*, name: str = "", file_bytes: Optional[bytes] = None,
                   file_name: Optional[str] = None, content_type: Optional[str] = None,
                   nrow: int = 0, ncol: int = 0, size=(0, 0, 0, 0),
                   elevation=None) -> CompiledHfield:
    """Compile one height field as MuJoCo 3.4.0 does.

    ``elevation`` is the inline attribute, row-major with the *first* row at
    the top (largest y), as in MJCF; it is flipped so that hfield_data row 0
    is the bottom row.  Without file and elevation, nrow x ncol zeros.
    """
    size = np.asarray(size, dtype=np.float64).reshape(-1)
    if size.size != 4:
        raise ModelError("hfield size must have 4 values")
    nrow = int(nrow or 0)
    ncol = int(ncol or 0)
    has_file = file_name is not None or file_bytes is not None
    data = None
    if not has_file and nrow > 0 and ncol > 0:
        if elevation is not None and np.asarray(elevation).size:
            e = np.asarray(elevation, dtype=np.float32).ravel()
            if e.size != nrow * ncol:
                raise ModelError("elevation data length must match nrow*ncol")
            data = e.reshape(nrow, ncol)[::-1].ravel().copy()
        else:
            data = np.zeros(nrow * ncol, np.float32)
    elif not has_file and elevation is not None and np.asarray(elevation).size:
        raise ModelError("hfield elevation requires positive nrow and ncol")

    for i in range(4):
        if not size[i] > 0:
            raise ModelError("size parameter is not positive in hfield")

    if has_file:
        nrow = ncol = 0
        fname = file_name or "<hfield>"
        ctype = _content_type(file_name, content_type) or "image/vnd.mujoco.hfield"
        if ctype not in ("image/png", "image/vnd.mujoco.hfield"):
            raise ModelError(f"unsupported content type: '{ctype}'")
        if file_bytes is None:
            raise ModelError(f"could not read hfield file '{fname}'")
        buf = bytes(file_bytes)
        if ctype == "image/png":
            img = _png_grey(buf, fname)
            nrow, ncol = int(img.shape[0]), int(img.shape[1])
            data = img[::-1].astype(np.float32).ravel()
        else:
            if len(buf) < 1:
                raise ModelError(f"could not read hfield file '{fname}'")
            if len(buf) < 8:
                raise ModelError(f"hfield missing header '{fname}'")
            nrow, ncol = (int(x) for x in np.frombuffer(buf, dtype="<i4", count=2))
            if nrow < 1 or ncol < 1:
                raise ModelError(f"non-positive hfield dimensions in file '{fname}'")
            if len(buf) != nrow * ncol * 4 + 8:
                raise ModelError(f"unexpected file size in file '{fname}'")
            data = np.frombuffer(buf, dtype="<f4", count=nrow * ncol, offset=8).astype(np.float32)

    if nrow < 1 or ncol < 1 or data is None or data.size == 0:
        raise ModelError("hfield not specified")
    if nrow < 2 or ncol < 2:
        # MuJoCo accepts these, then divides by ncol-1 / nrow-1 in every collision
        source = f"file '{file_name}'" if has_file and file_name else "data"
        raise ModelError(f"hfield {source} has {nrow} row(s) and {ncol} column(s); a "
                         f"height field needs at least 2 rows and 2 columns")
    data = data.astype(np.float32)
    emin = min(_F32(1e10), data.min())
    emax = max(_F32(-1e10), data.max())
    if emin > emax:
        raise ModelError(f"invalid data range in hfield '{file_name or ''}'")
    data = (data - emin).astype(np.float32)
    rng = _F32(emax - emin)
    if float(rng) > EPS:
        data = (data / rng).astype(np.float32)
    return CompiledHfield(name=name, size=size.copy(), nrow=nrow, ncol=ncol, data=data)
