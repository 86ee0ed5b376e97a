"""Mesh file readers of the compiler (MuJoCo 3.4.0's user_mesh.cc: LoadSTL, LoadOBJ
through the tinyobjloader it bundles, LoadMSH) and the content type that picks one.

Each reader returns a dict with float32 'vert' (flat), int 'face' (flat), float32
'normal', 'texcoord' and int 'facenormal', 'facetexcoord'. Binary STL vertices are
de-duplicated (exact float equality); OBJ / MSH vertices are kept as they are.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Optional

import numpy as np

from ..errors import ModelError
from .mesh_math import _F32
from .polygons import PURE_PYTHON_ENV

try:
    from ._objscan import scan as _c_scan
    OBJSCAN_ERROR = None
except ImportError as exc:  # not built (no C compiler at install): the regex fast path
    if exc.name != f"{__package__}._objscan":
        raise
    _c_scan, OBJSCAN_ERROR = None, f"{type(exc).__name__}: {exc}"

try:
    from ._meshsum import dedup as _c_dedup
except ImportError as exc:  # not built: the numpy merge (mesh.py reports the error)
    if exc.name != f"{__package__}._meshsum":
        raise
    _c_dedup = None

__all__ = ["mesh_content_type"]


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

def _equal_rows(key: np.ndarray):
    """The groups of bit-identical rows of a C-contiguous (n, 3) float32 array: each
    group's first row and each row's group (group order aside, np.unique's
    return_index and return_inverse on the rows' bytes). The rows are grouped by a
    64-bit hash of their 12 bytes, then every row is checked against its group's;
    on a collision (never met) the bytes themselves are sorted instead."""
    words = key.view(np.uint32).reshape(-1, 3)
    hi = (words[:, 0].astype(np.uint64) << np.uint64(32)) | words[:, 1]
    lo = words[:, 2].astype(np.uint64)
    h = hi ^ (lo * np.uint64(0x9E3779B97F4A7C15))
    srt = np.argsort(h)
    h = h[srt]
    new = np.r_[True, h[1:] != h[:-1]]
    group = np.cumsum(new) - 1            # of each row in sorted order
    starts = np.flatnonzero(new)
    rep = srt[starts][group]
    if np.array_equal(hi[srt], hi[rep]) and np.array_equal(lo[srt], lo[rep]):
        inverse = np.empty(len(srt), np.int64)
        inverse[srt] = group
        return np.minimum.reduceat(srt, starts), inverse
    kv = key.view(np.dtype((np.void, 12))).ravel()
    _, first, inverse = np.unique(kv, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def _dedup_vertices(vert32: np.ndarray, face: np.ndarray):
    """Merge bit-identical float vertices (+0 == -0), keeping first occurrences in order.
    In C where _meshsum is built (and TIPHYS_PURE_PYTHON_MESH is unset, empty or 0),
    else in numpy."""
    v = vert32.reshape(-1, 3)
    n = v.shape[0]
    if n == 0:
        return vert32, face
    if _c_dedup is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0"):
        first = np.empty(n, np.int64)
        remap = np.empty(n, np.int64)
        m = _c_dedup(np.ascontiguousarray(v, np.float32), first, remap)
        if m == n:
            return vert32, face
        return v[first[:m]].ravel(), remap[face]
    key = np.ascontiguousarray(v + _F32(0.0))  # turns -0 into +0
    first, inverse = _equal_rows(key)
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


def c_scan_enabled() -> bool:
    """True when OBJ files are first tried by the C fast path: _objscan was built and
    TIPHYS_PURE_PYTHON_MESH is unset, empty or 0."""
    return _c_scan is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")


def _read_obj_c(data: bytes):
    """_read_obj_fast's answer from the C scan (_objscan.c: the same files, the same
    numbers), as arrays; None where the C scan leaves the file to Python."""
    got = _c_scan(data)
    if got is None:
        return None
    v, vn, vt, tris = got
    return (np.frombuffer(v, np.float64), np.frombuffer(vn, np.float64),
            np.frombuffer(vt, np.float64), np.frombuffer(tris, np.int64).reshape(-1, 3, 3))


def _read_obj_full(data: bytes, fname: str, righthand: bool):
    """Parse an OBJ file; MuJoCo uses all v/vn/vt lines but only the first shape's faces."""
    if b"\r" in data:  # the general reader's line ends: "\r\n", "\n" or "\r"
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    fast = _read_obj_c(data) if c_scan_enabled() else None
    if fast is None:
        text = data.decode("latin-1")
        fast = _read_obj_fast(text)
        if fast is None:
            fast = _read_obj_lines(text, fname)
    v, vn, vt, tris = fast
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
