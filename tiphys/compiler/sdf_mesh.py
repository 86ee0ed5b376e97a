"""The visual mesh of an SDF plugin: MuJoCo 3.4.0's mjCMesh::LoadSDF.

A ``<mesh>`` with an SDF ``<plugin>`` (and no file) has no vertices of its own: MuJoCo
samples the plugin's static distance on a grid over the plugin's box (sdf_aabb: center
and half sizes) and extracts the zero level set with marching cubes (the MarchingCubeCpp
library, in single precision). The grid has floor(300 * h_i / (h_x + h_y + h_z)) + 1
points along axis i (h the half sizes); the mesh then compiles as a mesh given by
vertices, faces and normals, except that it is not moved to its center of mass nor
rotated into its principal axes (mesh_pos 0, mesh_quat identity).

:func:`marching_cubes` is that library's algorithm in numpy, with its vertex order
(edges as the cube sweep x fastest, then y, then z, first meets them), its triangle
order (cubes in the same order, each cube's triangles in its table's order), its
single-precision vertex interpolation and its normals (per vertex, the single-precision
sum of the cross products of its triangles, in triangle order, normalized).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .mesh import _ordered_accumulate

GRID_POINTS = 300.0  # LoadSDF's n: grid points along the three axes together

# MarchingCubeCpp's triangle table (public domain / MIT): for each cube configuration
# (bit c set when corner c is inside: corner c at (c & 1, c >> 1 & 1, c >> 2 & 1)), the
# triangle count in the low 4 bits, then the triangles' cube edges, 4 bits each. Edges
# 0-3 are along x at (y, z) = (0, 0), (1, 0), (0, 1), (1, 1); 4-7 along y at (x, z) =
# (0, 0), (1, 0), (0, 1), (1, 1); 8-11 along z at (x, y) = (0, 0), (1, 0), (0, 1), (1, 1).
_TRIS = (
    0, 33793, 36945, 159668546,
    18961, 144771090, 5851666, 595283255635,
    20913, 67640146, 193993474, 655980856339,
    88782242, 736732689667, 797430812739, 194554754,
    26657, 104867330, 136709522, 298069416227,
    109224258, 8877909667, 318136408323, 1567994331701604,
    189884450, 350847647843, 559958167731, 3256298596865604,
    447393122899, 651646838401572, 2538311371089956, 737032694307,
    29329, 43484162, 91358498, 374810899075,
    158485010, 178117478419, 88675058979, 433581536604804,
    158486962, 649105605635, 4866906995, 3220959471609924,
    649165714851, 3184943915608436, 570691368417972, 595804498035,
    124295042, 431498018963, 508238522371, 91518530,
    318240155763, 291789778348404, 1830001131721892, 375363605923,
    777781811075, 1136111028516116, 3097834205243396, 508001629971,
    2663607373704004, 680242583802939237, 333380770766129845, 179746658,
    42545, 138437538, 93365810, 713842853011,
    73602098, 69575510115, 23964357683, 868078761575828,
    28681778, 713778574611, 250912709379, 2323825233181284,
    302080811955, 3184439127991172, 1694042660682596, 796909779811,
    176306722, 150327278147, 619854856867, 1005252473234484,
    211025400963, 36712706, 360743481544788, 150627258963,
    117482600995, 1024968212107700, 2535169275963444, 4734473194086550421,
    628107696687956, 9399128243, 5198438490361643573, 194220594,
    104474994, 566996932387, 427920028243, 2014821863433780,
    492093858627, 147361150235284, 2005882975110676, 9671606099636618005,
    777701008947, 3185463219618820, 482784926917540, 2900953068249785909,
    1754182023747364, 4274848857537943333, 13198752741767688709, 2015093490989156,
    591272318771, 2659758091419812, 1531044293118596, 298306479155,
    408509245114388, 210504348563, 9248164405801223541, 91321106,
    2660352816454484, 680170263324308757, 8333659837799955077, 482966828984116,
    4274926723105633605, 3184439197724820, 192104450, 15217,
    45937, 129205250, 129208402, 529245952323,
    169097138, 770695537027, 382310500883, 2838550742137652,
    122763026, 277045793139, 81608128403, 1991870397907988,
    362778151475, 2059003085103236, 2132572377842852, 655681091891,
    58419234, 239280858627, 529092143139, 1568257451898804,
    447235128115, 679678845236084, 2167161349491220, 1554184567314086709,
    165479003923, 1428768988226596, 977710670185060, 10550024711307499077,
    1305410032576132, 11779770265620358997, 333446212255967269, 978168444447012,
    162736434, 35596216627, 138295313843, 891861543990356,
    692616541075, 3151866750863876, 100103641866564, 6572336607016932133,
    215036012883, 726936420696196, 52433666, 82160664963,
    2588613720361524, 5802089162353039525, 214799000387, 144876322,
    668013605731, 110616894681956, 1601657732871812, 430945547955,
    3156382366321172, 7644494644932993285, 3928124806469601813, 3155990846772900,
    339991010498708, 10743689387941597493, 5103845475, 105070898,
    3928064910068824213, 156265010, 1305138421793636, 27185,
    195459938, 567044449971, 382447549283, 2175279159592324,
    443529919251, 195059004769796, 2165424908404116, 1554158691063110021,
    504228368803, 1436350466655236, 27584723588724, 1900945754488837749,
    122971970, 443829749251, 302601798803, 108558722,
    724700725875, 43570095105972, 2295263717447940, 2860446751369014181,
    2165106202149444, 69275726195, 2860543885641537797, 2165106320445780,
    2280890014640004, 11820349930268368933, 8721082628082003989, 127050770,
    503707084675, 122834978, 2538193642857604, 10129,
    801441490467, 2923200302876740, 1443359556281892, 2901063790822564949,
    2728339631923524, 7103874718248233397, 12775311047932294245, 95520290,
    2623783208098404, 1900908618382410757, 137742672547, 2323440239468964,
    362478212387, 727199575803140, 73425410, 34337,
    163101314, 668566030659, 801204361987, 73030562,
    591509145619, 162574594, 100608342969108, 5553,
    724147968595, 1436604830452292, 176259090, 42001,
    143955266, 2385, 18433, 0,)


def _table():
    edges = np.full((256, 15), -1, dtype=np.int64)
    ntri = np.zeros(256, dtype=np.int64)
    for config, packed in enumerate(_TRIS):
        n = packed & 0xF
        ntri[config] = n
        for i in range(3 * n):
            edges[config, i] = (packed >> (4 + 4 * i)) & 0xF
    return edges, ntri


_EDGES, _NTRI = _table()


def marching_cubes(field: np.ndarray):
    """(vertices (nv, 3) float32 in grid units, faces (nf, 3) int64, normals (nv, 3)
    float32) of the zero level set of ``field`` (float32, indexed [z, y, x]), inside
    where the field is negative, as MarchingCubeCpp's marching_cube."""
    field = np.asarray(field, dtype=np.float32)
    nz, ny, nx = field.shape
    inside = field < 0
    ncx, ncy = nx - 1, ny - 1

    # every edge with a sign change gets a vertex: the cube that creates it is the
    # first of the sweep that has the edge, its place in that cube's edge order slot
    verts, keys, ids = [], [], []
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[2 - axis] = slice(0, -1)
        hi[2 - axis] = slice(1, None)
        va, vb = field[tuple(lo)], field[tuple(hi)]
        change = inside[tuple(lo)] != inside[tuple(hi)]
        k, j, i = np.nonzero(change)
        a, b = va[k, j, i], vb[k, j, i]
        t = a / (a - b)  # (single precision, as the library's)
        pos = np.stack([i, j, k], axis=1).astype(np.float32)
        pos[:, axis] = pos[:, axis] + t
        coord = [i, j, k]
        cube = [c.copy() for c in coord]
        slot = np.zeros(len(i), dtype=np.int64)
        bit = 1
        for other in range(3):
            if other == axis:
                continue
            cube[other] = np.maximum(coord[other] - 1, 0)
            slot += bit * (coord[other] - cube[other])
            bit = 2
        cubeid = (cube[2].astype(np.int64) * ncy + cube[1]) * ncx + cube[0]
        verts.append(pos)
        keys.append(cubeid * 12 + 4 * axis + slot)
        ids.append((axis, k, j, i))
    allkeys = np.concatenate(keys)
    order = np.argsort(allkeys, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    vertices = np.concatenate(verts)[order]

    # vertex id of each edge: per axis, an array over the edges of that axis
    edge_id = []
    start = 0
    for axis, (_, k, j, i) in enumerate(ids):
        shape = [nz, ny, nx]
        shape[2 - axis] -= 1
        arr = np.full(shape, -1, dtype=np.int64)
        arr[k, j, i] = rank[start:start + len(i)]
        start += len(i)
        edge_id.append(arr)

    # triangles of the cubes with both signs, in sweep order
    config = np.zeros((nz - 1, ny - 1, nx - 1), dtype=np.int64)
    for c in range(8):
        dx, dy, dz = c & 1, (c >> 1) & 1, (c >> 2) & 1
        config |= inside[dz:nz - 1 + dz, dy:ny - 1 + dy, dx:nx - 1 + dx].astype(np.int64) << c
    z, y, x = np.nonzero((config != 0) & (config != 255))
    conf = config[z, y, x]
    ex, ey, ez = edge_id
    cube_edges = np.stack([
        ex[z, y, x], ex[z, y + 1, x], ex[z + 1, y, x], ex[z + 1, y + 1, x],
        ey[z, y, x], ey[z, y, x + 1], ey[z + 1, y, x], ey[z + 1, y, x + 1],
        ez[z, y, x], ez[z, y, x + 1], ez[z, y + 1, x], ez[z, y + 1, x + 1]], axis=1)
    codes = _EDGES[conf]
    used = np.arange(15)[None, :] < 3 * _NTRI[conf][:, None]
    row = np.broadcast_to(np.arange(len(conf))[:, None], codes.shape)[used]
    faces = cube_edges[row, codes[used]].reshape(-1, 3)

    # normals: each triangle's cross product added to its three vertices, in order
    va, vb, vc = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    ab = va - vb
    cb = vc - vb
    n = np.stack([cb[:, 1] * ab[:, 2] - cb[:, 2] * ab[:, 1],
                  cb[:, 2] * ab[:, 0] - cb[:, 0] * ab[:, 2],
                  cb[:, 0] * ab[:, 1] - cb[:, 1] * ab[:, 0]], axis=1)
    normals = _ordered_accumulate(np.zeros((len(vertices), 3), dtype=np.float32),
                                  faces.ravel(), np.repeat(n, 3, axis=0).astype(np.float64))
    length = np.sqrt(normals[:, 0] * normals[:, 0] + normals[:, 1] * normals[:, 1]
                     + normals[:, 2] * normals[:, 2])
    with np.errstate(invalid="ignore", divide="ignore"):
        normals = normals / length[:, None]
    return vertices, faces, normals


# (plugin class, config) -> (vertex, face, normal): the marching-cubes surface of a
# plugin configuration, kept like the compiled meshes (compiler/mesh.py's cache, which
# clear_mesh_cache empties with this one)
_SDF_CACHE: "OrderedDict" = OrderedDict()
SDF_CACHE_ENTRIES = 16


def sdf_mesh(cls, config: dict):
    """(vertex, face, normal) flat arrays of the mesh MuJoCo makes for SDF plugin class
    ``cls`` with instance config ``config`` (LoadSDF); ValueError with MuJoCo's message
    for an attribute that is not a number. The same class and config in one process
    is computed once (copies are returned)."""
    key = (cls, tuple(sorted((str(k), str(v)) for k, v in config.items())))
    hit = _SDF_CACHE.get(key)
    if hit is None:
        hit = _sdf_surface(cls, config)
        _SDF_CACHE[key] = hit
        while len(_SDF_CACHE) > SDF_CACHE_ENTRIES:
            _SDF_CACHE.popitem(last=False)
    else:
        _SDF_CACHE.move_to_end(key)
    return tuple(a.copy() for a in hit)


def clear_sdf_cache() -> None:
    _SDF_CACHE.clear()


def _sdf_surface(cls, config: dict):
    attr = cls.attribute_values(config)
    aabb = cls.aabb(attr)
    total = aabb[3] + aabb[4] + aabb[5]
    nx, ny, nz = (int(np.floor(GRID_POINTS / total * aabb[3 + i])) + 1 for i in range(3))
    ii, jj, kk = np.arange(nx), np.arange(ny), np.arange(nz)
    px = aabb[0] - aabb[3] + 2 * aabb[3] * ii / (nx - 1)
    py = aabb[1] - aabb[4] + 2 * aabb[4] * jj / (ny - 1)
    pz = aabb[2] - aabb[5] + 2 * aabb[5] * kk / (nz - 1)
    points = np.stack(np.meshgrid(px, py, pz, indexing="ij"), axis=-1)  # [x, y, z]
    with np.errstate(invalid="ignore", divide="ignore"):
        field = cls.distance(points, attr).astype(np.float32).transpose(2, 1, 0)
    vert, face, normal = marching_cubes(field)
    grid = vert.astype(np.float64)
    scaled = np.stack([2 * aabb[3] * grid[:, 0] / (nx - 1) + aabb[0] - aabb[3],
                       2 * aabb[4] * grid[:, 1] / (ny - 1) + aabb[1] - aabb[4],
                       2 * aabb[5] * grid[:, 2] / (nz - 1) + aabb[2] - aabb[5]], axis=1)
    return (scaled.astype(np.float32).ravel(), face.ravel(),
            normal.astype(np.float32).ravel())
