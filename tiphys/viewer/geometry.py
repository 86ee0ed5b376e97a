"""Triangle meshes of a model's geoms and sites, built once per model on the host.

Every geom and site becomes an *object*: vertices and normals in its own frame,
a base colour per vertex (rgba or material colour, times the texture sampled at
the vertex) and triangles. ``kernels/render.py`` moves them into the world each
frame from ``geom_xpos/geom_xmat`` (``site_xpos/site_xmat``) and lights them.

Vertices are grouped in draw passes: opaque objects, planes (drawn after the
opaque objects so that a plane seen from below, which MuJoCo makes translucent,
blends over what lies behind it) and transparent objects (drawn last).

Texture fallbacks (GGUI draws per-vertex colour, no texture images): a plane's
2D texture is cut into cells of flat colour aligned with the texture's pixels
(a builtin checker is exact), other geoms sample their texture at the vertices, and
a textured flex's faces are cut into sub-triangles of flat colour (their vertices
placed between the faces' moving corners every frame).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernels.consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD,
                              GEOM_MESH, GEOM_PLANE, GEOM_SDF, GEOM_SPHERE, GEOM_TYPE_NAMES,
                              NTEXROLE, TEXROLE_RGB, TEXTURE_2D, TEXTURE_SKYBOX)
from ..kernels.render import (FLAG_PLANE, FLAG_STATIC, FLEX_EDGE, FLEX_FACE, FLEX_SIDE,
                              FLEX_SKIN, FLEX_VERT, KIND_FLEX, KIND_GEOM, KIND_SITE, KIND_SKIN)

PASS_OPAQUE, PASS_PLANE, PASS_TRANSPARENT = range(3)
NPASS = 3
SKY_SAMPLES = 9  # per side of the patch averaged for a sky sphere vertex (sky_dome)
MAX_PLANE_CELLS = 128  # per side of a square plane; MAX_PLANE_CELLS**2 cells in all
VISUAL_SCALE = {  # mjVisual.scale defaults (MuJoCo 3.4.0)
    "forcewidth": 0.1, "contactwidth": 0.3, "contactheight": 0.1, "connect": 0.2,
    "com": 0.4, "camera": 0.3, "light": 0.3, "selectpoint": 0.2, "jointlength": 1.0,
    "jointwidth": 0.1, "actuatorlength": 0.7, "actuatorwidth": 0.2, "framelength": 1.0,
    "framewidth": 0.1, "constraint": 0.1, "slidercrank": 0.2, "frustum": 10.0,
}


def visual(m) -> dict:
    """``m.vis`` completed with MuJoCo's defaults (a put_model model carries only a few)."""
    from ..compiler.options import _VISUAL_DEFAULTS

    vis = {k: dict(v) for k, v in _VISUAL_DEFAULTS.items()}
    vis["scale"].update(VISUAL_SCALE)
    for section, values in (getattr(m, "vis", None) or {}).items():
        vis.setdefault(section, {}).update(values)
    return vis


@dataclass
class Part:
    """One tessellated object: local vertices, normals, colours and triangles."""

    pos: np.ndarray
    nrm: np.ndarray
    rgba: np.ndarray
    tri: np.ndarray


@dataclass
class FlexTemplate:
    """How the vertices of the flex objects move (kernels/render.py ``_flex_vertices``):
    per flex vertex row k, its template vertex ``vert[k]``, ``mode_int[k]`` = (mode,
    v, a, b) flex vertex ids and ``mode_float[k]`` = 3 numbers (see the FLEX_* modes in
    kernels/render.py); the smooth normal of flex vertex v sums the unit normals of the
    faces (v, a, b) listed in ``norm_pair[norm_adr[v]:norm_adr[v] + norm_num[v]]``.
    A textured face is drawn as sub-triangles whose vertices ``sub_vert`` mix the
    face's corner vertices (written first, not drawn themselves) with the weights
    ``sub_weight`` (kernels/render.py ``flex_subvertices``)."""

    vert: np.ndarray        # (K,) template vertex ids
    mode_int: np.ndarray    # (K, 4)
    mode_float: np.ndarray  # (K, 3)
    norm_adr: np.ndarray    # (nflexvert,)
    norm_num: np.ndarray    # (nflexvert,)
    norm_pair: np.ndarray   # (P, 2)
    sub_vert: np.ndarray    # (S,) template vertex ids of textured sub-triangle corners
    sub_corner: np.ndarray  # (S, 3) template vertex ids of their face's corners
    sub_weight: np.ndarray  # (S, 2) weights of corners 1 and 2 (corner 0: the rest)


@dataclass
class SkinTemplate:
    """How the vertices of the skins move (kernels/render.py ``skin_vertices``), per
    skin vertex v (global over all skins, MuJoCo's skin_vert order): its template
    vertex ``vert[v]``, its skin ``skin[v]``, its bone entries ``entry[adr[v]:adr[v] +
    num[v]]`` (skin_bonevert ids, in bone order, as mjv_updateActiveSkin adds them)
    with their bones ``bone[...]``, and the skin faces around it
    ``face_of[face_adr[v]:face_adr[v] + face_num[v]]`` (rows of ``face``: global skin
    vertex ids), in face order."""

    vert: np.ndarray      # (V,) template vertex ids
    skin: np.ndarray      # (V,) skin ids
    adr: np.ndarray       # (V,)
    num: np.ndarray       # (V,)
    entry: np.ndarray     # (E,) skin_bonevert ids
    bone: np.ndarray      # (E,) skin bone ids
    face: np.ndarray      # (F, 3) global skin vertex ids
    face_adr: np.ndarray  # (V,)
    face_num: np.ndarray  # (V,)
    face_of: np.ndarray   # (3F,) face ids


@dataclass
class SceneTemplate:
    """All objects of a model, vertices sorted by draw pass."""

    vert_obj: np.ndarray   # (N,) object of each vertex
    vert_pos: np.ndarray   # (N, 3) f32, object frame
    vert_nrm: np.ndarray   # (N, 3) f32, object frame
    vert_rgba: np.ndarray  # (N, 4) f32 base colour
    pass_start: np.ndarray  # (NPASS + 1,) vertex ranges of the passes
    pass_tri: list          # NPASS arrays of triangle corner indices, relative to the pass
    obj_kind: np.ndarray    # (O,) KIND_GEOM / KIND_SITE
    obj_id: np.ndarray      # (O,) geom or site id
    obj_type: np.ndarray    # (O,) mjtGeom
    obj_group: np.ndarray   # (O,)
    obj_flags: np.ndarray   # (O,) FLAG_PLANE | FLAG_STATIC (visibility is added per view)
    obj_material: np.ndarray  # (O, 4) f32: emission, specular, shininess, 0
    obj_alpha: np.ndarray   # (O,) rgba alpha
    skybox: np.ndarray = field(default=None)  # (texid) or None
    flex: "FlexTemplate" = field(default=None)  # the flexes' moving vertices, or None
    skin: "SkinTemplate" = field(default=None)  # the skins' moving vertices, or None

    @property
    def nvert(self) -> int:
        return len(self.vert_obj)

    @property
    def nobj(self) -> int:
        return len(self.obj_kind)


# ------------------------------------------------------------------ primitive shapes


def _grid_sphere(nslice: int, nstack: int):
    """Unit-sphere rings: (theta, phi) grid with a duplicated seam; triangles."""
    theta = np.linspace(0.0, np.pi, nstack + 1)          # from +z down
    phi = np.linspace(0.0, 2 * np.pi, nslice + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    unit = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1)
    return unit, _grid_tris(nstack + 1, nslice + 1)


def _grid_tris(rows: int, cols: int) -> np.ndarray:
    """Two counter-clockwise triangles per cell of a rows x cols vertex grid."""
    r, c = np.meshgrid(np.arange(rows - 1), np.arange(cols - 1), indexing="ij")
    a = (r * cols + c).ravel()
    b, d, e = a + 1, a + cols, a + cols + 1
    return np.stack([a, d, b, b, d, e], -1).reshape(-1, 3)


def sphere(radius, nslice, nstack):
    unit, tri = _grid_sphere(nslice, nstack)
    unit = unit.reshape(-1, 3)
    return unit * radius, unit.copy(), tri


def ellipsoid(size, nslice, nstack):
    unit, tri = _grid_sphere(nslice, nstack)
    unit = unit.reshape(-1, 3)
    size = np.asarray(size, dtype=np.float64)
    nrm = unit / size
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    return unit * size, nrm, tri


def capsule(radius, half, nslice, nstack):
    """Hemispheres joined by a cylinder: the sphere's equator ring is doubled."""
    nstack += nstack % 2
    theta = np.linspace(0.0, np.pi, nstack + 1)
    theta = np.concatenate([theta[:nstack // 2 + 1], theta[nstack // 2:]])
    shift = np.where(np.arange(len(theta)) <= nstack // 2, half, -half)
    phi = np.linspace(0.0, 2 * np.pi, nslice + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    unit = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1)
    pos = unit * radius
    pos[..., 2] += shift[:, None]
    return pos.reshape(-1, 3), unit.reshape(-1, 3), _grid_tris(len(theta), nslice + 1)


def cylinder(radius, half, nslice, nstack):
    phi = np.linspace(0.0, 2 * np.pi, nslice + 1)
    ring = np.stack([np.cos(phi), np.sin(phi), np.zeros_like(phi)], -1)
    rows = max(2, nstack // 4 + 1)
    z = np.linspace(half, -half, rows)
    side = (ring[None] * radius + z[:, None, None] * np.array([0, 0, 1.0])).reshape(-1, 3)
    parts = [(side, np.tile(ring, (rows, 1)), _grid_tris(rows, nslice + 1))]
    for sign in (1.0, -1.0):
        rim = ring * radius + np.array([0, 0, sign * half])
        pos = np.vstack([[0, 0, sign * half], rim])
        nrm = np.tile([0, 0, sign], (len(pos), 1))
        k = np.arange(1, nslice + 1)
        tri = np.stack([np.zeros_like(k), k, k + 1], -1)
        if sign < 0:
            tri = tri[:, [0, 2, 1]]
        parts.append((pos, nrm, tri))
    return _merge(parts)


def box(size, ncell):
    """Six faces, each an ncell[axis-pair] grid with the face's normal."""
    size = np.asarray(size, dtype=np.float64)
    parts = []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        nu, nv = ncell[u], ncell[v]
        gu = np.linspace(-size[u], size[u], nu + 1)
        gv = np.linspace(-size[v], size[v], nv + 1)
        U, V = np.meshgrid(gu, gv, indexing="ij")
        for sign in (1.0, -1.0):
            pos = np.zeros((nu + 1, nv + 1, 3))
            pos[..., u], pos[..., v], pos[..., axis] = U, V, sign * size[axis]
            nrm = np.zeros_like(pos)
            nrm[..., axis] = sign
            tri = _grid_tris(nu + 1, nv + 1)
            if sign < 0:
                tri = tri[:, [0, 2, 1]]
            parts.append((pos.reshape(-1, 3), nrm.reshape(-1, 3), tri))
    return _merge(parts)


def _merge(parts):
    pos, nrm, tri, base = [], [], [], 0
    for p, n, t in parts:
        pos.append(p)
        nrm.append(n)
        tri.append(np.asarray(t) + base)
        base += len(p)
    return np.vstack(pos), np.vstack(nrm), np.vstack(tri)


def mesh(a, meshid):
    """A mesh asset with one vertex per face corner (MuJoCo's face normals)."""
    vadr, fadr = a.mesh_vertadr[meshid], a.mesh_faceadr[meshid]
    nface = a.mesh_facenum[meshid]
    face = np.asarray(a.mesh_face[fadr:fadr + nface]).reshape(-1, 3)
    vert = np.asarray(a.mesh_vert, dtype=np.float64).reshape(-1, 3)[vadr:][:a.mesh_vertnum[meshid]]
    pos = vert[face.ravel()]
    e1 = vert[face[:, 1]] - vert[face[:, 0]]
    e2 = vert[face[:, 2]] - vert[face[:, 0]]
    flat = np.cross(e1, e2)
    flat /= np.maximum(np.linalg.norm(flat, axis=1, keepdims=True), 1e-12)
    nrm = np.repeat(flat, 3, axis=0)
    nadr, nnum = a.mesh_normaladr[meshid], a.mesh_normalnum[meshid]
    fnormal = np.asarray(a.mesh_facenormal[fadr:fadr + nface]).reshape(-1, 3)
    if nnum > 0 and fnormal.size and fnormal.min() >= 0 and fnormal.max() < nnum:
        normals = np.asarray(a.mesh_normal, dtype=np.float64).reshape(-1, 3)[nadr:nadr + nnum]
        nrm = normals[fnormal.ravel()]
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
    uv = None
    tadr, tnum = a.mesh_texcoordadr[meshid], a.mesh_texcoordnum[meshid]
    ftex = np.asarray(a.mesh_facetexcoord[fadr:fadr + nface]).reshape(-1, 3)
    if tadr >= 0 and tnum > 0 and ftex.size and ftex.min() >= 0 and ftex.max() < tnum:
        uv = np.asarray(a.mesh_texcoord, dtype=np.float64).reshape(-1, 2)[tadr:tadr + tnum]
        uv = uv[ftex.ravel()]
    tri = np.arange(3 * nface).reshape(-1, 3)
    return pos, nrm, tri, uv


def hfield(a, hid):
    """Top surface of flat triangles split as MuJoCo's (cell diagonal from (r, c) to
    (r+1, c+1)), four side walls and the bottom."""
    nrow, ncol = int(a.hfield_nrow[hid]), int(a.hfield_ncol[hid])
    sx, sy, sz, base = (float(v) for v in a.hfield_size[hid])
    adr = a.hfield_adr[hid]
    h = np.asarray(a.hfield_data[adr:adr + nrow * ncol], dtype=np.float64).reshape(nrow, ncol)
    x = np.linspace(-sx, sx, ncol)
    y = np.linspace(-sy, sy, nrow)
    X, Y = np.meshgrid(x, y)  # (nrow, ncol): row r is y, column c is x
    top = np.stack([X, Y, h * sz], -1)
    r, c = np.meshgrid(np.arange(nrow - 1), np.arange(ncol - 1), indexing="ij")
    a0 = (r * ncol + c).ravel()
    b0, d0, e0 = a0 + 1, a0 + ncol, a0 + ncol + 1
    corners = np.concatenate([np.stack([a0, e0, d0], -1), np.stack([a0, b0, e0], -1)])
    flat = top.reshape(-1, 3)
    pos = flat[corners.reshape(-1)]
    tri_pos = pos.reshape(-1, 3, 3)
    face = np.cross(tri_pos[:, 1] - tri_pos[:, 0], tri_pos[:, 2] - tri_pos[:, 0])
    face /= np.maximum(np.linalg.norm(face, axis=1, keepdims=True), 1e-15)
    face[face[:, 2] < 0] *= -1
    parts = [(pos, np.repeat(face, 3, axis=0), np.arange(len(pos)).reshape(-1, 3))]
    edges = (  # (top edge points, outward normal)
        (top[0, :], (0, -1, 0)), (top[-1, ::-1], (0, 1, 0)),
        (top[::-1, 0], (-1, 0, 0)), (top[:, -1], (1, 0, 0)))
    for edge, n in edges:
        bottom = edge.copy()
        bottom[:, 2] = -base
        pos = np.vstack([edge, bottom])
        k = len(edge)
        i = np.arange(k - 1)
        t = np.concatenate([np.stack([i, i + 1, i + k], -1), np.stack([i + 1, i + k + 1, i + k], -1)])
        parts.append((pos, np.tile(n, (2 * k, 1)), t))
    corners = np.array([[-sx, -sy, -base], [sx, -sy, -base], [sx, sy, -base], [-sx, sy, -base]])
    parts.append((corners, np.tile([0, 0, -1.0], (4, 1)), np.array([[0, 2, 1], [0, 3, 2]])))
    return _merge(parts)


def _fix_winding(pos, nrm, tri):
    """Orient triangles counter-clockwise about their vertex normals."""
    p = pos[tri]
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    flip = np.einsum("ij,ij->i", face, nrm[tri].sum(1)) < 0
    tri = tri.copy()
    tri[flip] = tri[flip][:, [0, 2, 1]]
    return tri


# ------------------------------------------------------------------------- textures


class Textures:
    """Texel lookups on the host model's tex_* arrays (None when tex_data is absent)."""

    def __init__(self, a):
        self.a = a
        self.data = getattr(a, "tex_data", None)
        self.ntex = int(a.sizes.get("ntex", 0))

    def available(self, texid: int) -> bool:
        return self.data is not None and 0 <= texid < self.ntex and \
            int(self.a.tex_width[texid]) > 0

    def image(self, texid: int) -> np.ndarray:
        """(height, width, 4) float RGBA in [0, 1]."""
        a = self.a
        w, h, c = int(a.tex_width[texid]), int(a.tex_height[texid]), int(a.tex_nchannel[texid])
        adr = int(a.tex_adr[texid])
        raw = np.asarray(self.data[adr:adr + w * h * c], dtype=np.float64).reshape(h, w, c) / 255
        out = np.ones((h, w, 4))
        if c == 1:
            out[..., :3] = raw
        else:
            out[..., :min(c, 4)] = raw[..., :4]
        return out

    def sample_2d(self, texid, s, t) -> np.ndarray:
        img = self.image(texid)
        h, w = img.shape[:2]
        col = np.clip(np.floor((s - np.floor(s)) * w).astype(int), 0, w - 1)
        row = np.clip(np.floor((t - np.floor(t)) * h).astype(int), 0, h - 1)
        return img[row, col]

    def sample_cube(self, texid, direction) -> np.ndarray:
        """OpenGL cube-map lookup; faces stored +x, -x, +y, -y, +z, -z."""
        img = self.image(texid)
        w = img.shape[1]
        if img.shape[0] < 6 * w:  # a single repeated face
            faces = np.repeat(img[None, :w], 6, axis=0)
        else:
            faces = img[:6 * w].reshape(6, w, w, 4)
        d = np.asarray(direction, dtype=np.float64).reshape(-1, 3)
        ax = np.argmax(np.abs(d), axis=1)
        x, y, z = d[:, 0], d[:, 1], d[:, 2]
        ma = np.maximum(np.abs(d[np.arange(len(d)), ax]), 1e-12)
        pos = d[np.arange(len(d)), ax] >= 0
        face = 2 * ax + (~pos)
        sc = np.select([face == 0, face == 1, face == 2, face == 3, face == 4],
                       [-z, z, x, x, x], -x)
        tc = np.select([face == 2, face == 3], [z, -z], -y)
        s = np.clip(((sc / ma + 1) / 2 * w).astype(int), 0, w - 1)
        t = np.clip(((tc / ma + 1) / 2 * w).astype(int), 0, w - 1)
        return faces[face, t, s]

    def mean(self, texid) -> np.ndarray:
        return self.image(texid).reshape(-1, 4).mean(0)


def _material(a, matid, rgba):
    """MuJoCo's setMaterial: colour, emission, specular, shininess, texture id."""
    rgba = np.asarray(rgba, dtype=np.float64).copy()
    emission, specular, shininess, texid = 0.0, 0.5, 0.5, -1
    if matid >= 0:
        emission = float(a.mat_emission[matid])
        specular = float(a.mat_specular[matid])
        shininess = float(a.mat_shininess[matid])
        texid = int(np.asarray(a.mat_texid).reshape(-1, NTEXROLE)[matid, TEXROLE_RGB])
        if np.allclose(rgba, [0.5, 0.5, 0.5, 1.0], rtol=0, atol=0):
            rgba = np.asarray(a.mat_rgba, dtype=np.float64).reshape(-1, 4)[matid].copy()
    return rgba, emission, specular, shininess, texid


# --------------------------------------------------------------------------- planes


def _plane_borders(half, scl, k):
    """Cell edges along one plane axis at the texture's pixel borders s = i / k (k
    cells per texture period; k = 0: the plane's two ends only)."""
    if k <= 0 or scl <= 0:
        return np.array([-half, half])
    s0, s1 = -0.5 * scl * half - 0.5, 0.5 * scl * half - 0.5
    ks = np.arange(np.floor(s0 * k) + 1, np.ceil(s1 * k))
    inner = (ks / k + 0.5) / (0.5 * scl)
    return np.concatenate([[-half], inner[(inner > -half) & (inner < half)], [half]])


def _plane_grid(halves, scl, ncell_tex):
    """Both axes' cell edges: the finest texture pixel borders (up to ncell_tex cells
    per period, halved on the axis with more cells) that keep the plane within
    MAX_PLANE_CELLS**2 cells in all (so a long, thin plane keeps its checker along its
    length), then each cell subdivided for per-vertex lighting towards
    MAX_PLANE_CELLS / 2 cells per side, within the same budget."""
    budget = MAX_PLANE_CELLS * MAX_PLANE_CELLS
    span = [scl[k] * halves[k] if scl[k] > 0 and ncell_tex[k] > 0 else 0.0 for k in range(2)]
    ks = [int(ncell_tex[k]) if span[k] > 0 else 0 for k in range(2)]

    def cells(k):
        return max(1.0, span[k] * ks[k]) if ks[k] else 1.0

    while cells(0) * cells(1) > budget and (ks[0] or ks[1]):
        axis = 0 if cells(0) >= cells(1) and ks[0] else 1
        if not ks[axis]:
            axis = 1 - axis
        ks[axis] //= 2  # 1 -> 0: no texture borders along that axis
    edges = [_plane_borders(halves[k], scl[k], ks[k]) for k in range(2)]
    n = [len(e) - 1 for e in edges]
    sub = [max(1, int(np.ceil(MAX_PLANE_CELLS / 2 / n[k]))) for k in range(2)]
    while n[0] * sub[0] * n[1] * sub[1] > budget and (sub[0] > 1 or sub[1] > 1):
        axis = 0 if sub[0] >= sub[1] else 1
        sub[axis] -= 1
    out = []
    for k in range(2):
        fine = [np.linspace(edges[k][i], edges[k][i + 1], sub[k] + 1)[:-1]
                for i in range(n[k])]
        out.append(np.concatenate(fine + [[halves[k]]]))
    return out


def plane(a, geomid, size, texs: Textures, texid, matid, extent, zfar):
    """Plane cells of flat colour (4 vertices each, normal +z); colour from the texture
    at each cell's centre with MuJoCo's plane mapping (texrepeat, texuniform)."""
    halves, scl = [], []
    for k in range(2):
        rep = float(np.asarray(a.mat_texrepeat).reshape(-1, 2)[matid, k]) if matid >= 0 else 1.0
        uniform = matid >= 0 and bool(a.mat_texuniform[matid])
        if size[k] > 0:
            halves.append(float(size[k]))
            scl.append(rep * (1.0 if uniform else 1.0 / max(1e-15, size[k])))
        else:  # infinite: MuJoCo draws it out to zfar; we draw what the cell budget allows
            period = 2.0 / rep if rep > 0 else zfar
            halves.append(float(min(0.5 * zfar, 0.25 * MAX_PLANE_CELLS * period,
                                    max(10 * extent, 0.05 * zfar))))
            scl.append(rep)
    textured = texs.available(texid) and int(a.tex_type[texid]) == TEXTURE_2D
    ntex = [int(a.tex_width[texid]), int(a.tex_height[texid])] if textured else [0, 0]
    gx, gy = _plane_grid(halves, scl, [min(ntex[0], 4), min(ntex[1], 4)])
    x0, x1 = np.meshgrid(gx[:-1], gy[:-1], indexing="ij")
    x1_, y1_ = np.meshgrid(gx[1:], gy[1:], indexing="ij")
    x0, y0, x1, y1 = x0.ravel(), x1.ravel(), x1_.ravel(), y1_.ravel()
    ncell = len(x0)
    pos = np.zeros((ncell, 4, 3))
    pos[:, 0, :2] = np.stack([x0, y0], -1)
    pos[:, 1, :2] = np.stack([x1, y0], -1)
    pos[:, 2, :2] = np.stack([x1, y1], -1)
    pos[:, 3, :2] = np.stack([x0, y1], -1)
    nrm = np.tile([0, 0, 1.0], (ncell * 4, 1))
    base = 4 * np.arange(ncell)[:, None]
    tri = np.concatenate([base + [0, 1, 2], base + [0, 2, 3]])
    colour = np.ones((ncell, 4))
    if textured:
        cx, cy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
        colour = texs.sample_2d(texid, 0.5 * scl[0] * cx - 0.5, -0.5 * scl[1] * cy - 0.5)
    return pos.reshape(-1, 3), nrm, tri, np.repeat(colour, 4, axis=0)


# ------------------------------------------------------------------------ the scene


def _texture_colours(texs, texid, a, kind, pos, nrm, size, matid, uv=None, has_data=False):
    """Per-vertex texture colour for a non-plane object (white without a texture)."""
    n = len(pos)
    if not texs.available(texid):
        return np.ones((n, 4))
    if uv is not None:
        return texs.sample_2d(texid, uv[:, 0], uv[:, 1])
    size = np.where(np.asarray(size, dtype=np.float64) > 0, size, 1.0)
    unit = pos if has_data else pos / size  # MuJoCo's object coordinates
    if int(a.tex_type[texid]) == TEXTURE_2D:
        rep = np.asarray(a.mat_texrepeat, dtype=np.float64).reshape(-1, 2)[matid]
        scl = rep / size[:2] if has_data else rep.copy()
        if bool(a.mat_texuniform[matid]):
            scl = scl * size[:2]
        return texs.sample_2d(texid, 0.5 * scl[0] * unit[:, 0] - 0.5,
                              -0.5 * scl[1] * unit[:, 1] - 0.5)
    f = size if bool(a.mat_texuniform[matid]) else np.ones(3)
    return texs.sample_cube(texid, unit * f)


def _cells(size, extent, limit=8):
    """Box face subdivisions: enough for per-vertex lighting of large boxes."""
    return [int(np.clip(np.ceil(2 * s / max(1e-9, 0.1 * extent)), 1, limit)) for s in size]


@dataclass(frozen=True)
class FlexFlags:
    """How flexes are drawn: MuJoCo's mjvOption flags mjVIS_FLEXVERT, mjVIS_FLEXEDGE,
    mjVIS_FLEXFACE, mjVIS_FLEXSKIN and its flex_layer, with MuJoCo 3.4.0's defaults."""

    vert: bool = False
    edge: bool = True
    face: bool = False
    skin: bool = True
    layer: int = 0


def build_scene(m, flex: FlexFlags = None, rigid=None) -> SceneTemplate:
    """Tessellate every geom, site, flex and skin of model ``m`` (host arrays
    ``m.arrays``).

    Flexes are drawn as MuJoCo's mjv_updateScene and mjr_render draw them with the
    ``flex`` flags (MuJoCo's defaults when None: skin and edges on, faces and
    vertices off), see _flex_objects. Their vertices move every frame (FlexTemplate).
    Skins are drawn as MuJoCo draws them (its mjVIS_SKIN on): one object per skin, its
    vertices placed every frame from the bones' body poses, moved out along their
    smooth normals by the skin's inflate (SkinTemplate). ``rigid``: the geoms' and
    sites' objects from an earlier ``rigid_objects(m)`` (built here when None)."""
    a = m.arrays
    vis = visual(m)
    nslice = int(vis["quality"].get("numslices", 28))
    texs = Textures(a)
    objs, parts = (list(rigid[0]), list(rigid[1])) if rigid is not None else \
        rigid_objects(m)
    flex_rows = _flex_objects(m, a, nslice, texs, flex or FlexFlags(), objs, parts)
    skin_objs = _skin_objects(m, a, texs, objs, parts)
    return _assemble(m, texs, objs, parts, flex_rows, skin_objs)


def rigid_objects(m):
    """The geoms and sites of ``m`` tessellated: (object rows, Parts), as build_scene
    lists them (they do not change with the flex flags)."""
    a = m.arrays
    vis = visual(m)
    nslice = int(vis["quality"].get("numslices", 28))
    nstack = int(vis["quality"].get("numstacks", 16))
    extent = float(m.stat.extent)
    zfar = float(vis["map"]["zfar"]) * extent
    texs = Textures(a)
    parts, objs = [], []

    def add(kind, objid, gtype, group, rgba, matid, size, body, built, uv=None,
            has_data=False, colour=None):
        pos, nrm, tri = built[:3]
        rgba, emission, specular, shininess, texid = _material(a, matid, rgba)
        if colour is None:
            colour = _texture_colours(texs, texid, a, gtype, pos, nrm, size, matid, uv,
                                      has_data)
        vrgba = colour * rgba
        tri = _fix_winding(pos, nrm, np.asarray(tri, dtype=np.int64))
        flags = (FLAG_PLANE if gtype == GEOM_PLANE else 0) | (FLAG_STATIC if body == 0 else 0)
        if gtype == GEOM_PLANE:
            p = PASS_PLANE
        elif rgba[3] < 0.995:
            p = PASS_TRANSPARENT
        else:
            p = PASS_OPAQUE
        objs.append((kind, objid, gtype, group, flags, emission, specular, shininess,
                     rgba[3], p))
        parts.append(Part(pos, nrm, vrgba, tri))

    geom_size = np.asarray(a.geom_size, dtype=np.float64).reshape(-1, 3)
    geom_rgba = np.asarray(a.geom_rgba, dtype=np.float64).reshape(-1, 4)
    for g in range(m.ngeom):
        gtype = int(a.geom_type[g])
        size = geom_size[g]
        matid = int(a.geom_matid[g])
        dataid = int(a.geom_dataid[g])
        uv, colour, has_data = None, None, False
        if gtype == GEOM_PLANE:
            texid = _material(a, matid, geom_rgba[g])[4]
            *built, colour = plane(a, g, size, texs, texid, matid, extent, zfar)
        elif gtype == GEOM_SPHERE:
            built = sphere(size[0], nslice, nstack)
        elif gtype == GEOM_CAPSULE:
            built = capsule(size[0], size[1], nslice, nstack)
        elif gtype == GEOM_ELLIPSOID:
            built = ellipsoid(size, nslice, nstack)
        elif gtype == GEOM_CYLINDER:
            built = cylinder(size[0], size[1], nslice, nstack)
        elif gtype == GEOM_BOX:
            built = box(size, _cells(size, extent))
        elif gtype in (GEOM_MESH, GEOM_SDF):  # (an sdf geom: its mesh, as MuJoCo)
            *built, uv = mesh(a, dataid)
            has_data = True
        elif gtype == GEOM_HFIELD:
            built = hfield(a, dataid)
            has_data = True
        else:
            name = GEOM_TYPE_NAMES[gtype] if 0 <= gtype < len(GEOM_TYPE_NAMES) else str(gtype)
            raise NotImplementedError(f"rendering geom type '{name}' (geom {g})")
        add(KIND_GEOM, g, gtype, int(a.geom_group[g]), geom_rgba[g], matid, size,
            int(a.geom_bodyid[g]), built, uv, has_data, colour)

    site_size = np.asarray(a.site_size, dtype=np.float64).reshape(-1, 3)
    site_rgba = np.asarray(a.site_rgba, dtype=np.float64).reshape(-1, 4)
    ls, lt = nslice, nstack
    for s in range(m.nsite):
        stype, size = int(a.site_type[s]), site_size[s]
        if stype == GEOM_CAPSULE:
            built = capsule(size[0], size[1], ls, lt)
        elif stype == GEOM_ELLIPSOID:
            built = ellipsoid(size, ls, lt)
        elif stype == GEOM_CYLINDER:
            built = cylinder(size[0], size[1], ls, lt)
        elif stype == GEOM_BOX:
            built = box(size, (1, 1, 1))
        else:
            built = sphere(size[0], ls, lt)
        add(KIND_SITE, s, stype, int(a.site_group[s]), site_rgba[s], int(a.site_matid[s]),
            size, int(a.site_bodyid[s]), built)

    return objs, parts


def _assemble(m, texs, objs, parts, flex_rows, skin_objs) -> SceneTemplate:
    """The SceneTemplate of all objects: vertices sorted by draw pass."""
    a = m.arrays
    obj_pass = np.array([o[9] for o in objs], dtype=np.int64)
    order = np.argsort(obj_pass, kind="stable")
    vert_obj, pos, nrm, rgba = [], [], [], []
    pass_tri = [[] for _ in range(NPASS)]
    pass_count = np.zeros(NPASS, dtype=np.int64)
    obj_start = np.zeros(len(objs), dtype=np.int64)  # each object's first vertex
    nvert = 0
    for o in order:
        part, p = parts[o], obj_pass[o]
        obj_start[o] = nvert
        nvert += len(part.pos)
        pass_tri[p].append(part.tri + pass_count[p])
        pass_count[p] += len(part.pos)
        vert_obj.append(np.full(len(part.pos), o, dtype=np.int32))
        pos.append(part.pos)
        nrm.append(part.nrm)
        rgba.append(part.rgba)

    def cat(xs, shape, dtype):
        return np.concatenate(xs).astype(dtype) if xs else np.zeros(shape, dtype=dtype)

    pass_start = np.concatenate([[0], np.cumsum(pass_count)]).astype(np.int64)
    obj = np.array([o[:9] for o in objs], dtype=np.float64).reshape(-1, 9)
    sky = None
    for t in range(texs.ntex):
        if int(a.tex_type[t]) == TEXTURE_SKYBOX and texs.available(t):
            sky = t  # MuJoCo draws the first skybox texture
            break
    return SceneTemplate(
        vert_obj=cat(vert_obj, (0,), np.int32), vert_pos=cat(pos, (0, 3), np.float32),
        vert_nrm=cat(nrm, (0, 3), np.float32), vert_rgba=cat(rgba, (0, 4), np.float32),
        pass_start=pass_start,
        pass_tri=[cat(t, (0, 3), np.int32).reshape(-1) for t in pass_tri],
        obj_kind=obj[:, 0].astype(np.int32), obj_id=obj[:, 1].astype(np.int32),
        obj_type=obj[:, 2].astype(np.int32), obj_group=obj[:, 3].astype(np.int32),
        obj_flags=obj[:, 4].astype(np.int32),
        obj_material=np.concatenate([obj[:, 5:8], np.zeros((len(obj), 1))], 1).astype(
            np.float32),
        obj_alpha=obj[:, 8].astype(np.float32), skybox=sky,
        flex=_flex_template(m, flex_rows, obj_start),
        skin=_skin_template(m, skin_objs, obj_start))


def _flex_faces(a, f):
    """The skin triangles of flex ``f`` as global flex vertex ids: its elements (2D) or
    its shell (3D); None for a 1D flex."""
    dim, vadr = int(a.flex_dim[f]), int(a.flex_vertadr[f])
    if dim == 2:
        adr, num, data = int(a.flex_elemdataadr[f]), int(a.flex_elemnum[f]), a.flex_elem
    elif dim == 3:
        adr, num, data = int(a.flex_shelldataadr[f]), int(a.flex_shellnum[f]), a.flex_shell
    else:
        return None
    return np.asarray(data, dtype=np.int64).ravel()[adr:adr + 3 * num].reshape(-1, 3) + vadr


FLEX_VERT_SPHERE = (12, 8)  # slices, stacks of a flex vertex's sphere
FLEX_TEX_SUB = 8  # most subdivisions per side of a textured flex triangle
FLEX_TEX_BUDGET = 1 << 16  # most textured sub-triangles per flex


def _tet_faces(elem):
    """The four faces of tetrahedra (E, 4) in MuJoCo's order (mjv_updateActiveFlex)."""
    return elem[:, [[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]]].reshape(-1, 3)


def _flex_objects(m, a, nslice, texs, flags: FlexFlags, objs, parts) -> list:
    """Append one object per drawn flex to ``objs``/``parts`` (as build_scene's other
    objects), drawn as MuJoCo 3.4.0 draws it with the flags ``flags``:

    - faces (mjv_updateActiveFlex): none for a 1D flex or with FLEXFACE and FLEXSKIN
      both off; with FLEXSKIN on, the skin (element triangles of a 2D flex, both sides
      at +-radius along smoothed vertex normals, closed along the boundary; the shell
      of a 3D flex); with only FLEXFACE on, element faces with flat normals offset by
      the radius along them (a 2D element: both sides; a 3D element of the chosen
      layer: its four faces);
    - vertex spheres and edge cylinders (mjr_render) of the flex radius, with
      FLEXVERT / FLEXEDGE on, unless the skin is drawn, and never with radius 0;
    - nothing at all for a flex whose colour has alpha 0.

    A flex whose material has a 2D texture and that has texture coordinates has its
    faces cut into sub-triangles of flat colour, the texture sampled at their
    centres (texcoords as MuJoCo passes them to OpenGL: flex_elemtexcoord for
    elements, the vertex ids for shells and for the side strips); vertices and edges
    are never textured. Returns, per object, (object index, rows, subs): rows =
    ((mode, v, a, b) (N, 4), (x, y, z) (N, 3)), subs = (corners (S, 3) local rows,
    weights (S, 2)) of the textured sub-triangle vertices, which follow the rows
    (FlexTemplate)."""
    out = []
    nflex = int(getattr(m, "nflex", 0) or 0)
    if not nflex:
        return out
    rgba_all = np.asarray(a.flex_rgba, dtype=np.float64).reshape(-1, 4)
    edge_all = np.asarray(a.flex_edge, dtype=np.int64).reshape(-1, 2)
    elem_all = np.asarray(a.flex_elem, dtype=np.int64).ravel()
    elemtex_all = np.asarray(a.flex_elemtexcoord, dtype=np.int64).ravel()
    layer_all = np.asarray(a.flex_elemlayer, dtype=np.int64).ravel()
    shell_all = np.asarray(a.flex_shell, dtype=np.int64).ravel()
    texcoord_all = np.asarray(getattr(a, "flex_texcoord", np.zeros((0, 2))),
                              dtype=np.float64).reshape(-1, 2)
    flat = np.asarray(getattr(a, "flex_flatskin", np.zeros(nflex)), dtype=bool).ravel()
    vunit, vtri = _grid_sphere(*FLEX_VERT_SPHERE)
    vunit = vunit.reshape(-1, 3)
    for f in range(nflex):
        dim = int(a.flex_dim[f])
        vadr, nvert = int(a.flex_vertadr[f]), int(a.flex_vertnum[f])
        r = float(a.flex_radius[f])
        rgba, emission, specular, shininess, texid = _material(a, int(a.flex_matid[f]),
                                                               rgba_all[f])
        if rgba[3] == 0:
            continue  # MuJoCo leaves a flex of alpha 0 out of the scene
        faceused = dim > 1 and (flags.face or flags.skin)
        skinned = faceused and flags.skin
        rows = _Rows()
        tris = []
        faces, face_uv = [], []  # textured: corner rows and texcoord ids, (F, 3) each
        tadr = int(a.flex_texcoordadr[f])
        textured = tadr >= 0 and texs.available(texid) and \
            int(a.tex_type[texid]) == TEXTURE_2D
        eadr, enum = int(a.flex_elemdataadr[f]), int(a.flex_elemnum[f])
        elem = elem_all[eadr:eadr + (dim + 1) * enum].reshape(-1, dim + 1)
        elemtex = elemtex_all[eadr:eadr + (dim + 1) * enum].reshape(-1, dim + 1)

        def triangles(corners, uv):
            if textured:
                faces.append(corners)
                face_uv.append(uv)
            else:
                tris.append(corners)

        def flat_faces(mode, tri, x, y):
            """A row per corner of the faces ``tri`` (global vertex ids), as (v, a, b) in
            cyclic order; returns the corner rows (F, 3)."""
            cyc = tri[:, [[0, 1, 2], [1, 2, 0], [2, 0, 1]]]  # (F, 3 corners, 3)
            first = rows.add(mode, cyc[..., 0], cyc[..., 1], cyc[..., 2], x, y, 0.0)
            return first + np.arange(3 * len(tri)).reshape(-1, 3)

        if r > 0 and flags.vert and not skinned:
            v = np.repeat(np.arange(vadr, vadr + nvert), len(vunit))
            unit = np.tile(vunit, (nvert, 1))
            first = rows.add(FLEX_VERT, v, -1, -1, r * unit[:, 0], r * unit[:, 1],
                             r * unit[:, 2])
            tris.append((vtri[None] + first + len(vunit) * np.arange(nvert)[:, None, None])
                        .reshape(-1, 3))
        if r > 0 and flags.edge and not skinned:
            adr, num = int(a.flex_edgeadr[f]), int(a.flex_edgenum[f])
            phi = np.linspace(0.0, 2 * np.pi, nslice + 1)
            ring_tri = _grid_tris(2, nslice + 1)
            ring = len(phi) * 2
            ends = edge_all[adr:adr + num] + vadr
            t = np.tile(np.repeat([0.0, 1.0], len(phi)), num)
            ph = np.tile(np.tile(phi, 2), num)
            first = rows.add(FLEX_EDGE, -1, np.repeat(ends[:, 0], ring),
                             np.repeat(ends[:, 1], ring), t, r * np.cos(ph), r * np.sin(ph))
            tris.append((ring_tri[None] + first + ring * np.arange(num)[:, None, None])
                        .reshape(-1, 3))
        if faceused and not flags.skin:  # element faces, flat normals
            if dim == 2:
                tri = np.concatenate([elem, elem[:, [0, 2, 1]]])
                tex = np.concatenate([elemtex, elemtex[:, [0, 2, 1]]])
            else:
                eladr = int(a.flex_elemadr[f])
                keep = layer_all[eladr:eladr + enum] == flags.layer
                tri, tex = _tet_faces(elem[keep]), _tet_faces(elemtex[keep])
            triangles(flat_faces(FLEX_FACE, tri + vadr, r, 0.0), tex)
        elif skinned:
            if dim == 2:
                sides = [(1.0, elem, elemtex), (-1.0, elem[:, [0, 2, 1]], elemtex[:, [0, 2, 1]])]
            else:
                shell = _flex_faces(a, f) - vadr
                sides = [(1.0, shell, shell)]
            for sign, tri, tex in sides:
                if flat[f]:  # a vertex per face corner: the face's own normal
                    triangles(flat_faces(FLEX_SKIN, tri + vadr, sign * r, sign), tex)
                else:  # a vertex per flex vertex: smooth normals
                    first = rows.add(FLEX_SKIN, np.arange(vadr, vadr + nvert), -1, -1,
                                     sign * r, sign, 0.0)
                    triangles(tri + first, tex)
            if dim == 2:  # the two sides closed along the boundary (shell fragments)
                nshell, sadr = int(a.flex_shellnum[f]), int(a.flex_shelldataadr[f])
                frag = shell_all[sadr:sadr + 2 * nshell].reshape(-1, 2)
                # per fragment (i0, i1): MuJoCo's makeSide at +r from i0 to i1, then at
                # -r from i1 to i0; corners (j0, +), (j1, -), (j1, +) along N
                j0 = np.stack([frag[:, 0], frag[:, 1]], 1).ravel()
                j1 = np.stack([frag[:, 1], frag[:, 0]], 1).ravel()
                rad = np.tile([r, -r], len(frag))
                nsign = np.tile([1.0, -1.0], len(frag))
                corner_v = np.stack([j0, j1, j1], 1)
                k = np.array([1.0, -1.0, 1.0])
                first = rows.add(FLEX_SIDE, corner_v + vadr, (j0 + vadr)[:, None],
                                 (j1 + vadr)[:, None], k[None] * rad[:, None],
                                 np.repeat(nsign[:, None], 3, 1), 0.0)
                triangles(first + np.arange(3 * len(j0)).reshape(-1, 3), corner_v)
        subs, sub_colour = None, None
        if faces:
            uv = texcoord_all[tadr:]
            ids = np.concatenate(face_uv)
            if len(ids) and (ids.min() < 0 or ids.max() >= len(uv)):
                raise NotImplementedError(
                    f"drawing the texture of flex {f}: its faces name texture coordinates "
                    f"{ids.min()}..{ids.max()}, it has {len(uv)} from flex_texcoordadr "
                    f"{tadr} (MuJoCo reads past them)")
            subs, sub_colour, sub_tri = _textured_faces(np.concatenate(faces), uv[ids], texs,
                                                        texid, len(rows))
            tris.append(sub_tri)
        if not sum(len(t) for t in tris):
            continue
        n = len(rows) + (0 if subs is None else len(subs[0]))
        colour = np.ones((n, 4))
        if sub_colour is not None:
            colour[len(rows):] = sub_colour
        p = PASS_TRANSPARENT if rgba[3] < 0.995 else PASS_OPAQUE
        objs.append((KIND_FLEX, f, -1, int(a.flex_group[f]), 0, emission, specular,
                     shininess, rgba[3], p))
        parts.append(Part(np.zeros((n, 3)), np.zeros((n, 3)), colour * rgba,
                          np.concatenate(tris).astype(np.int64)))
        out.append((len(objs) - 1, rows.arrays(), subs))
    return out


class _Rows:
    """A flex object's rows of FlexTemplate (mode, v, a, b) and (x, y, z), added in
    blocks (numbers or arrays, broadcast together)."""

    def __init__(self):
        self._ints, self._floats, self._n = [], [], 0

    def __len__(self) -> int:
        return self._n

    def add(self, mode, v, va, vb, x, y, z) -> int:
        """Add rows; returns the first one's index."""
        ints = np.broadcast_arrays(*(np.asarray(c, dtype=np.int64) for c in (mode, v, va, vb)),
                                   *(np.asarray(c, dtype=np.float64) for c in (x, y, z)))
        shape = ints[0].shape
        self._ints.append(np.stack([c.ravel() for c in ints[:4]], 1).astype(np.int64))
        self._floats.append(np.stack([c.ravel() for c in ints[4:]], 1))
        first = self._n
        self._n += int(np.prod(shape))
        return first

    def arrays(self):
        """((N, 4) int, (N, 3) float)."""
        if not self._ints:
            return np.zeros((0, 4), dtype=np.int64), np.zeros((0, 3))
        return np.concatenate(self._ints), np.concatenate(self._floats)


def _textured_faces(faces, uv, texs, texid, first):
    """Textured triangles cut into sub-triangles of flat colour: ``faces`` (F, 3) corner
    rows, ``uv`` (F, 3, 2) their texture coordinates. Each side is cut into k parts
    (k up to FLEX_TEX_SUB: about one per texel the face spans, fewer when the flex
    would pass FLEX_TEX_BUDGET sub-triangles), each sub-triangle gets three vertices
    of its own (numbered from ``first``), placed at barycentric weights of its face's
    corners and coloured with the texture at its centre. Returns ((corners (S, 3),
    weights (S, 2)), colours (S, 4), triangles (S / 3, 3))."""
    nface = len(faces)
    img_w, img_h = int(texs.a.tex_width[texid]), int(texs.a.tex_height[texid])
    span = np.ptp(uv, axis=1).max() if nface else 0.0
    k = int(np.clip(np.ceil(span * max(img_w, img_h)), 1, FLEX_TEX_SUB))
    k = max(1, min(k, int(np.sqrt(FLEX_TEX_BUDGET / max(1, nface)))))
    corner = []  # (w1, w2) of the sub-triangles' corners, in the face's winding
    for i in range(k):
        for j in range(k - i):
            corner.append([(i, j), (i + 1, j), (i, j + 1)])
            if i + j <= k - 2:
                corner.append([(i + 1, j), (i + 1, j + 1), (i, j + 1)])
    w = np.asarray(corner, dtype=np.float64).reshape(-1, 3, 2) / k   # (T, 3, 2)
    centre = w.mean(1)                                               # (T, 2)
    bary = np.concatenate([1.0 - centre.sum(1, keepdims=True), centre], 1)  # (T, 3)
    at = np.einsum("tc,fcd->ftd", bary, uv)                          # (F, T, 2)
    colour = texs.sample_2d(texid, at[..., 0].ravel(), at[..., 1].ravel())  # (F*T, 4)
    ntri = nface * len(w)
    corners = np.repeat(faces, 3 * len(w), axis=0)
    weights = np.tile(w.reshape(-1, 2), (nface, 1))
    tri = first + np.arange(3 * ntri).reshape(-1, 3)
    return (corners, weights), np.repeat(colour, 3, axis=0), tri


def _flex_template(m, flex_rows, obj_start):
    """The FlexTemplate of build_scene's flex objects (None without any)."""
    if not flex_rows:
        return None
    a = m.arrays
    vert, mode_int, mode_float = [], [], []
    sub_vert, sub_corner, sub_weight = [], [], []
    for o, (ints, floats), subs in flex_rows:
        vert.append(obj_start[o] + np.arange(len(ints)))
        mode_int.append(ints)
        mode_float.append(floats)
        if subs is not None:
            corners, weights = subs
            sub_vert.append(obj_start[o] + len(ints) + np.arange(len(corners)))
            sub_corner.append(obj_start[o] + corners)
            sub_weight.append(weights)
    # faces around each flex vertex for its smoothed normal: element triangles of 2D
    # flexes, shell triangles of 3D flexes, each listed as (v, a, b) in cyclic order
    nflexvert = int(m.nflexvert)
    pairs = [[] for _ in range(nflexvert)]
    for f in range(int(m.nflex)):
        faces = _flex_faces(a, f)
        for i0, i1, i2 in () if faces is None else faces:
            pairs[i0].append((i1, i2))
            pairs[i1].append((i2, i0))
            pairs[i2].append((i0, i1))
    num = np.array([len(p) for p in pairs], dtype=np.int32)
    adr = np.concatenate([[0], np.cumsum(num)[:-1]]).astype(np.int32) if nflexvert else \
        np.zeros(0, dtype=np.int32)
    flat = [pair for p in pairs for pair in p]

    def cat(xs, shape, dtype):
        return np.concatenate(xs).astype(dtype) if xs else np.zeros(shape, dtype=dtype)

    return FlexTemplate(
        vert=cat(vert, (0,), np.int32),
        mode_int=cat(mode_int, (0, 4), np.int32),
        mode_float=cat(mode_float, (0, 3), np.float32),
        norm_adr=adr, norm_num=num,
        norm_pair=np.asarray(flat, dtype=np.int32).reshape(-1, 2),
        sub_vert=cat(sub_vert, (0,), np.int32),
        sub_corner=cat(sub_corner, (0, 3), np.int32),
        sub_weight=cat(sub_weight, (0, 2), np.float32))


def _skin_objects(m, a, texs, objs, parts) -> list:
    """Append every skin as an object (one vertex per skin vertex, its faces as
    triangles, colour from skin_rgba or its material, the material's texture sampled at
    the skin's texture coordinates) to ``objs``/``parts``; returns their object
    indices, one per skin. Positions and normals are written every frame."""
    out = []
    nskin = int(getattr(m, "nskin", 0) or 0)
    rgba_all = np.asarray(a.skin_rgba, dtype=np.float64).reshape(-1, 4)
    face_all = np.asarray(a.skin_face, dtype=np.int64).reshape(-1, 3)
    tex_all = np.asarray(a.skin_texcoord, dtype=np.float64).reshape(-1, 2)
    for s in range(nskin):
        vnum = int(a.skin_vertnum[s])
        fadr, fnum = int(a.skin_faceadr[s]), int(a.skin_facenum[s])
        rgba, emission, specular, shininess, texid = _material(a, int(a.skin_matid[s]),
                                                               rgba_all[s])
        colour = np.ones((vnum, 4))
        tadr = int(a.skin_texcoordadr[s])
        if tadr >= 0 and texs.available(texid):
            uv = tex_all[tadr:tadr + vnum]
            colour = texs.sample_2d(texid, uv[:, 0], uv[:, 1])
        p = PASS_TRANSPARENT if rgba[3] < 0.995 else PASS_OPAQUE
        objs.append((KIND_SKIN, s, -1, int(a.skin_group[s]), 0, emission, specular,
                     shininess, rgba[3], p))
        parts.append(Part(np.zeros((vnum, 3)), np.zeros((vnum, 3)), colour * rgba,
                          face_all[fadr:fadr + fnum].copy()))
        out.append(len(objs) - 1)
    return out


def _skin_template(m, skin_objs, obj_start):
    """The SkinTemplate of build_scene's skin objects (None without any)."""
    if not skin_objs:
        return None
    a = m.arrays
    nskinvert = int(m.nskinvert)
    vert = np.zeros(nskinvert, dtype=np.int32)
    skin = np.zeros(nskinvert, dtype=np.int32)
    entries = [[] for _ in range(nskinvert)]
    faces_of = [[] for _ in range(nskinvert)]
    faces = []
    bonevertid = np.asarray(a.skin_bonevertid, dtype=np.int64).ravel()
    face_all = np.asarray(a.skin_face, dtype=np.int64).reshape(-1, 3)
    for s, o in enumerate(skin_objs):
        vadr, vnum = int(a.skin_vertadr[s]), int(a.skin_vertnum[s])
        vert[vadr:vadr + vnum] = obj_start[o] + np.arange(vnum)
        skin[vadr:vadr + vnum] = s
        badr, bnum = int(a.skin_boneadr[s]), int(a.skin_bonenum[s])
        for bone in range(badr, badr + bnum):
            kadr, knum = int(a.skin_bonevertadr[bone]), int(a.skin_bonevertnum[bone])
            for k in range(kadr, kadr + knum):
                entries[vadr + int(bonevertid[k])].append((k, bone))
        fadr, fnum = int(a.skin_faceadr[s]), int(a.skin_facenum[s])
        for f in range(fadr, fadr + fnum):
            tri = face_all[f] + vadr
            faces.append(tri)
            for v in tri:
                faces_of[int(v)].append(f)
    num = np.array([len(e) for e in entries], dtype=np.int32)
    fnum = np.array([len(f) for f in faces_of], dtype=np.int32)
    flat = np.array([e for es in entries for e in es], dtype=np.int32).reshape(-1, 2)
    return SkinTemplate(
        vert=vert, skin=skin, adr=(np.cumsum(num) - num).astype(np.int32), num=num,
        entry=flat[:, 0].copy(), bone=flat[:, 1].copy(),
        face=np.asarray(faces, dtype=np.int32).reshape(-1, 3),
        face_adr=(np.cumsum(fnum) - fnum).astype(np.int32), face_num=fnum,
        face_of=np.array([f for fs in faces_of for f in fs], dtype=np.int32))


def sky_dome(texs: Textures, texid, nslice=48, nstack=24):
    """Unit directions and colours of a sky sphere (MuJoCo maps world z to the cube's
    +y face: the lookup direction is (x, z, -y)); black when there is no skybox.

    A vertex's colour is the texture's mean over the patch of sky around it (SKY_SAMPLES
    x SKY_SAMPLES directions across one sphere cell), as a texture filtered down to the
    sphere's resolution would show: a nearest texel would turn one random mark (a
    star) into a white fan of triangles."""
    unit, tri = _grid_sphere(nslice, nstack)
    unit = unit.reshape(-1, 3)
    if texid is None:
        return unit, tri, None
    lookup = np.stack([unit[:, 0], unit[:, 2], -unit[:, 1]], -1)
    helper = np.where(np.abs(lookup[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    t1 = np.cross(lookup, helper)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(lookup, t1)
    half = np.tan(np.pi / max(nstack, 1) / 2)
    steps = np.linspace(-half, half, SKY_SAMPLES)
    total = np.zeros((len(unit), 4))
    for a in steps:
        for b in steps:
            total += texs.sample_cube(texid, lookup + a * t1 + b * t2)
    return unit, tri, total / SKY_SAMPLES ** 2
