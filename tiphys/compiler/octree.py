"""Mesh octrees (oct_depth, oct_child, oct_aabb, oct_coeff): the signed distance of a
mesh used by an ``<geom type="sdf">`` without a plugin.

Follows MuJoCo 3.4.0 (user_objects.cc: mjCOctree::CreateOctree, MakeOctree, boxTriangle,
BalanceOctree, FindNeighbor, MarkHangingNodes; user_mesh.cc: the coefficients from
TriangleMeshDistance). Written anew, level by level with numpy:

- the root box is the mesh's box grown 1.1 times about its center; a node is split in
  8 (children in slot order x + 2y + 4z, numbered breadth first) when a face meets it
  (the Schwarz-Seidel triangle-box test) and its level is below 6;
- then leaves are split until adjacent leaves differ by at most one level (passes over
  the leaves in node order, each looking across its 6 faces);
- a leaf corner in the middle of a coarser neighbor's edge or face "hangs": its value
  is the mean of that edge's 2 or that face's 4 corner values; every other corner gets
  the mesh's signed distance (negative inside; the sign from the angle-weighted
  pseudonormal of the nearest face, edge or vertex);
- oct_coeff holds each node's 8 corner values (corner j at x = j & 1, y = j & 2,
  z = j & 4).
"""
from __future__ import annotations

import numpy as np

MAX_LEVEL = 6


# ---------------------------------------------------------------------------------
# the tree


def _box_triangle(v, aamm):
    """boxTriangle for pairs: v (P, 3, 3) triangles, aamm (P, 6) boxes -> (P,) bool."""
    lo, hi = aamm[:, :3], aamm[:, 3:]
    hit = ~((v < lo[:, None, :]).all(axis=1) | (v > hi[:, None, :]).all(axis=1)).any(axis=1)
    e = np.stack([v[:, 1] - v[:, 0], v[:, 2] - v[:, 1], v[:, 0] - v[:, 2]], axis=1)
    e0, e1 = e[:, 0], e[:, 1]
    n = np.stack([e0[:, 1] * e1[:, 2] - e0[:, 2] * e1[:, 1],
                  e0[:, 2] * e1[:, 0] - e0[:, 0] * e1[:, 2],
                  e0[:, 0] * e1[:, 1] - e0[:, 1] * e1[:, 0]], axis=1)
    size = hi - lo
    c = np.where(n > 0, size, 0.0)
    v0 = v[:, 0]
    c1 = c - v0
    c2 = size - c - v0

    def dot3(a, b):
        return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]

    nl = dot3(n, lo)
    hit &= ~((nl + dot3(n, c1)) * (nl + dot3(n, c2)) > 0)
    for a in range(3):
        b, cc = (a + 1) % 3, (a + 2) % 3
        sign = np.where(n[:, a] >= 0, 1.0, -1.0)
        for i in range(3):
            ne0 = -e[:, i, cc] * sign
            ne1 = e[:, i, b] * sign
            d = (-(ne0 * v[:, i, b] + ne1 * v[:, i, cc]) + np.maximum(0.0, size[:, b] * ne0)
                 + np.maximum(0.0, size[:, cc] * ne1))
            hit &= ~(ne0 * lo[:, b] + ne1 * lo[:, cc] + d < 0)
    return hit


class _Tree:
    def __init__(self, box):
        self.aamm = [np.asarray(box, dtype=np.float64).reshape(1, 6)]
        self.level = [np.zeros(1, np.int64)]
        self.parent = [np.full(1, -1, np.int64)]
        self.slot = [np.full(1, -1, np.int64)]
        self.n = 1
        self.child = np.full((1, 8), -1, np.int64)

    def finish(self):
        self.aamm = np.concatenate(self.aamm)
        self.level = np.concatenate(self.level)
        self.parent = np.concatenate(self.parent)
        self.slot = np.concatenate(self.slot)
        self.center = (self.aamm[:, :3] + self.aamm[:, 3:]) / 2

    def subdivide(self, nodes, aamm_of):
        """8 children for each of ``nodes`` (in order), numbered from self.n."""
        k = len(nodes)
        if not k:
            return np.zeros(0, np.int64)
        first = self.n + 8 * np.arange(k)
        new = (first[:, None] + np.arange(8)[None]).ravel()
        par = np.repeat(nodes, 8)
        slot = np.tile(np.arange(8), k)
        p = aamm_of(par)
        mid = np.stack([(p[:, 3] + p[:, 0]) / 2, (p[:, 4] + p[:, 1]) / 2,
                        (p[:, 5] + p[:, 2]) / 2], axis=1)
        mid2 = np.stack([(p[:, 0] + p[:, 3]) / 2, (p[:, 1] + p[:, 4]) / 2,
                         (p[:, 2] + p[:, 5]) / 2], axis=1)
        bit = np.stack([(slot & 1) != 0, (slot & 2) != 0, (slot & 4) != 0], axis=1)
        lo = np.where(bit, mid, p[:, :3])
        hi = np.where(bit, p[:, 3:], mid2)
        self.aamm.append(np.concatenate([lo, hi], axis=1))
        self.level.append(np.repeat(self._level_of(nodes) + 1, 8))
        self.parent.append(par)
        self.slot.append(slot)
        child = np.full((self.n + 8 * k, 8), -1, np.int64)
        child[:self.n] = self.child
        child[nodes] = first[:, None] + np.arange(8)[None]
        self.child = child
        self.n += 8 * k
        return new

    def _level_of(self, nodes):
        return np.concatenate(self.level)[nodes]


def _make_tree(tri, box):
    """MakeOctree's breadth-first subdivision: returns the _Tree (before balancing)."""
    t = _Tree(box)
    nodes = np.zeros(1, np.int64)
    pair_node = np.zeros(len(tri), np.int64)
    pair_tri = np.arange(len(tri))
    level = 0
    while len(nodes):
        aamm = np.concatenate(t.aamm)
        hit = _box_triangle(tri[pair_tri], aamm[pair_node]) if len(pair_tri) else \
            np.zeros(0, bool)
        pn, pt = pair_node[hit], pair_tri[hit]
        if level >= MAX_LEVEL:
            break
        split = np.unique(pn)  # node order = breadth-first order
        new = t.subdivide(split, lambda idx: np.concatenate(t.aamm)[idx])
        if not len(new):
            break
        # each child gets its parent's colliding faces
        rank = np.searchsorted(split, pn)
        pair_node = (t.n - 8 * len(split) + 8 * rank)[:, None] + np.arange(8)[None]
        pair_tri = np.repeat(pt[:, None], 8, axis=1)
        pair_node, pair_tri = pair_node.ravel(), pair_tri.ravel()
        nodes = new
        level += 1
    t.finish()
    return t


def _neighbors(t, nodes, direction):
    """FindNeighbor for each of ``nodes`` in ``direction`` (dim = d // 2, side d % 2)."""
    dim, side = direction // 2, direction % 2
    bit = 1 << dim
    result = np.full(len(nodes), -1, np.int64)
    cur = nodes.copy()
    active = np.ones(len(nodes), bool)
    while active.any():
        par = np.where(active, t.parent[cur], -1)
        stop = active & (par == -1)
        active &= ~stop
        slot = t.slot[cur]
        inside = active & ((side != 0) != ((slot & bit) != 0))
        result[inside] = t.child[par[inside], slot[inside] ^ bit]
        active &= ~inside
        cur = np.where(active, par, cur)
    # descend to a leaf next to the node
    center = t.center[nodes]
    op = bit if side != 1 else 0
    while True:
        go = (result >= 0)
        go[go] = t.child[result[go], 0] != -1
        if not go.any():
            return result
        r = result[go]
        rc = t.center[r]
        c = center[go]
        nxt = ((c[:, 0] > rc[:, 0]).astype(np.int64) | ((c[:, 1] > rc[:, 1]) << 1)
               | ((c[:, 2] > rc[:, 2]) << 2))
        nxt = (nxt & ~bit) | op
        result[go] = t.child[r, nxt]


def _balance(t):
    """BalanceOctree: split leaves next to leaves two levels finer, until none is."""
    while True:
        leaves = np.nonzero(t.child[:, 0] == -1)[0]
        order, which = [], []
        for d in range(6):
            nb = _neighbors(t, leaves, d)
            ok = nb >= 0
            lv, nl = t.level[leaves], np.where(ok, t.level[np.maximum(nb, 0)], 0)
            coarse_leaf = ok & (nl > lv + 1)
            coarse_nb = ok & (lv > nl + 1)
            pos = np.arange(len(leaves))
            order.append(np.stack([pos[coarse_leaf], np.full(coarse_leaf.sum(), d),
                                   np.zeros(coarse_leaf.sum(), np.int64)], 1))
            which.append(leaves[coarse_leaf])
            order.append(np.stack([pos[coarse_nb], np.full(coarse_nb.sum(), d),
                                   np.ones(coarse_nb.sum(), np.int64)], 1))
            which.append(nb[coarse_nb])
        key = np.concatenate(order)
        todo = np.concatenate(which)
        if not len(todo):
            return
        todo = todo[np.lexsort((key[:, 2], key[:, 1], key[:, 0]))]
        _, first = np.unique(todo, return_index=True)
        todo = todo[np.sort(first)]
        todo = todo[t.child[todo, 0] == -1]
        aamm = t.aamm
        t.aamm, t.level, t.parent, t.slot = [aamm], [t.level], [t.parent], [t.slot]
        t.subdivide(todo, lambda idx: np.concatenate(t.aamm)[idx])
        t.finish()


# ---------------------------------------------------------------------------------
# corners, hanging corners and their values


def _corner_keys(t):
    """(nnode, 8) integer keys of the node corners (grid at the finest level)."""
    maxlev = int(t.level.max())
    ijk = np.zeros((t.n, 3), np.int64)
    for node in range(1, t.n):  # parents come before children
        p, s = t.parent[node], t.slot[node]
        ijk[node] = ijk[p] * 2 + np.array([s & 1, (s >> 1) & 1, (s >> 2) & 1])
    scale = 1 << (maxlev - t.level)
    corner = np.array([[j & 1, (j >> 1) & 1, (j >> 2) & 1] for j in range(8)])
    g = (ijk[:, None, :] + corner[None]) * scale[:, None, None]
    side = (1 << maxlev) + 1
    return (g[..., 0] * side + g[..., 1]) * side + g[..., 2]


def _hanging(t, keys):
    """MarkHangingNodes: {corner key: [keys it is the mean of]}."""
    pos = np.where(np.array([[j & 1, (j >> 1) & 1, (j >> 2) & 1] for j in range(8)])
                   [None].astype(bool), t.aamm[:, None, 3:], t.aamm[:, None, :3])
    hang = {}
    leaves = np.nonzero(t.child[:, 0] == -1)[0]
    nbs = [_neighbors(t, leaves, d) for d in range(6)]
    for i, leaf in enumerate(leaves.tolist()):
        for d in range(6):
            nb = int(nbs[d][i])
            if nb == -1 or t.level[nb] >= t.level[leaf]:
                continue
            dim, side = d // 2, d % 2
            d1, d2 = (dim + 1) % 3, (dim + 2) % 3
            for k in range(4):
                v = (side << dim) | ((k & 1) << d1) | (((k >> 1) & 1) << d2)
                key = int(keys[leaf, v])
                if hang.get(key):
                    continue
                p = pos[leaf, v]
                box = t.aamm[nb]
                is_min = np.abs(p - box[:3]) < 1e-9
                is_max = np.abs(p - box[3:]) < 1e-9
                planes = int((is_min | is_max).sum())
                if planes == 2:
                    mid = int(np.nonzero(~(is_min | is_max))[0][0])
                    bits = [0, 0, 0]
                    bits[(mid + 1) % 3] = int(is_max[(mid + 1) % 3])
                    bits[(mid + 2) % 3] = int(is_max[(mid + 2) % 3])
                    a = (bits[2] << 2) | (bits[1] << 1) | bits[0]
                    bits[mid] = 1
                    b = (bits[2] << 2) | (bits[1] << 1) | bits[0]
                    hang[key] = [int(keys[nb, a]), int(keys[nb, b])]
                elif planes == 1:
                    face = int(np.nonzero(is_min | is_max)[0][0])
                    deps = []
                    for j in range(4):
                        bits = [0, 0, 0]
                        bits[face] = int(is_max[face])
                        bits[(face + 1) % 3] = j & 1
                        bits[(face + 2) % 3] = (j >> 1) & 1
                        deps.append(int(keys[nb, (bits[2] << 2) | (bits[1] << 1) | bits[0]]))
                    hang[key] = deps
                else:
                    hang.setdefault(key, [])
    return hang, pos


# ---------------------------------------------------------------------------------
# signed distance to a triangle mesh (as TriangleMeshDistance: the nearest face, edge
# or vertex, signed by its angle-weighted pseudonormal)


def _normalized(v):
    n = np.sqrt((v * v).sum(axis=-1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return v / n


def _pseudonormals(vert, face):
    a, b, c = vert[face[:, 0]], vert[face[:, 1]], vert[face[:, 2]]
    fn = _normalized(np.cross(b - a, c - a))

    def angle(p, q, r):
        d = (_normalized(q - p) * _normalized(r - p)).sum(axis=1)
        return np.arccos(d)

    vn = np.zeros_like(vert)
    for k, (p, q, r) in enumerate(((a, b, c), (b, a, c), (c, b, a))):
        np.add.at(vn, face[:, k], angle(p, q, r)[:, None] * fn)
    vn = _normalized(vn)
    nv = len(vert)
    pairs = np.stack([np.stack([face[:, 0], face[:, 1]], 1), np.stack([face[:, 1], face[:, 2]], 1),
                      np.stack([face[:, 0], face[:, 2]], 1)], axis=1)  # (F, 3, 2): E01 E12 E02
    key = pairs.min(axis=2).astype(np.int64) * nv + pairs.max(axis=2)
    uniq, inv = np.unique(key.ravel(), return_inverse=True)
    en = np.zeros((len(uniq), 3))
    np.add.at(en, inv, np.repeat(fn, 3, axis=0))
    en = _normalized(en)[inv].reshape(-1, 3, 3)
    return fn, en, vn


def _point_triangle(p, a, b, c):
    """(squared distance, nearest point, entity): entity 0-2 vertex, 3 E01, 4 E12, 5 E02,
    6 face (Ericson's regions, as tmd::point_triangle_sq_unsigned)."""
    def dot(x, y):
        return (x * y).sum(axis=1)
    ab, ac, bc = b - a, c - a, c - b
    snom, sden = dot(p - a, ab), dot(p - b, a - b)
    tnom, tden = dot(p - a, ac), dot(p - c, a - c)
    unom, uden = dot(p - b, bc), dot(p - c, b - c)
    n = np.cross(ab, ac)
    vc = dot(n, np.cross(a - p, b - p))
    va = dot(n, np.cross(b - p, c - p))
    vb = dot(n, np.cross(c - p, a - p))
    ent = np.full(len(p), 6)
    near = np.empty_like(p)
    done = np.zeros(len(p), bool)

    def put(mask, e, q):
        m = mask & ~done
        ent[m] = e
        near[m] = q[m]
        done[m] = True

    with np.errstate(invalid="ignore", divide="ignore"):
        put((snom <= 0) & (tnom <= 0), 0, a)
        put((sden <= 0) & (unom <= 0), 1, b)
        put((tden <= 0) & (uden <= 0), 2, c)
        arc = (snom / (snom + sden))[:, None]
        put((vc <= 0) & (snom >= 0) & (sden >= 0), 3, (1 - arc) * a + arc * b)
        arc = (unom / (unom + uden))[:, None]
        put((va <= 0) & (unom >= 0) & (uden >= 0), 4, (1 - arc) * b + arc * c)
        arc = (tnom / (tnom + tden))[:, None]
        put((vb <= 0) & (tnom >= 0) & (tden >= 0), 5, (1 - arc) * a + arc * c)
        s = va + vb + vc
        u, v = (va / s)[:, None], (vb / s)[:, None]
        put(np.ones(len(p), bool), 6, u * a + v * b + (1 - u - v) * c)
    d = p - near
    return dot(d, d), near, ent


def signed_distance(points, vert, face, chunk=400000):
    """Signed distance of ``points`` (M, 3) to the triangle mesh (negative inside)."""
    from scipy.spatial import cKDTree
    vert = np.asarray(vert, dtype=np.float64)
    face = np.asarray(face, dtype=np.int64)
    tri = vert[face]
    center = tri.mean(axis=1)
    radius = np.sqrt(((tri - center[:, None]) ** 2).sum(axis=2)).max(axis=1)
    kd = cKDTree(center)
    k = min(8, len(face))
    _, near_idx = kd.query(points, k=k)
    near_idx = near_idx.reshape(len(points), k)
    pi = np.repeat(np.arange(len(points)), k)
    ti = near_idx.ravel()
    d2, _, _ = _point_triangle(points[pi], tri[ti, 0], tri[ti, 1], tri[ti, 2])
    ub = np.sqrt(d2.reshape(-1, k).min(axis=1))
    cand = kd.query_ball_point(points, ub * (1 + 1e-12) + 1e-300 + radius.max())
    counts = np.array([len(c) for c in cand])
    pi = np.repeat(np.arange(len(points)), counts)
    ti = np.fromiter((t for c in cand for t in c), dtype=np.int64, count=int(counts.sum()))
    keep = np.sqrt(((points[pi] - center[ti]) ** 2).sum(axis=1)) - radius[ti] <= ub[pi] * (1 + 1e-9)
    pi, ti = pi[keep], ti[keep]
    best = np.full(len(points), np.inf)
    sign_dot = np.zeros(len(points))
    fn, en, vn = _pseudonormals(vert, face)
    for s in range(0, len(pi), chunk):
        p_, t_ = pi[s:s + chunk], ti[s:s + chunk]
        d2, near, ent = _point_triangle(points[p_], tri[t_, 0], tri[t_, 1], tri[t_, 2])
        normal = np.where((ent == 6)[:, None], fn[t_], 0.0)
        for e in range(3):
            m = ent == e
            normal[m] = vn[face[t_[m], e]]
        for e in range(3):
            m = ent == 3 + e
            normal[m] = en[t_[m], e]
        sd = ((points[p_] - near) * normal).sum(axis=1)
        # the nearest (the first in the chunk order among equals)
        order = np.lexsort((np.arange(len(p_)), d2, p_))
        first = np.ones(len(order), bool)
        first[1:] = p_[order][1:] != p_[order][:-1]
        sel = order[first]
        pp = p_[sel]
        better = d2[sel] < best[pp]
        best[pp[better]] = d2[sel][better]
        sign_dot[pp[better]] = sd[sel][better]
    return np.where(sign_dot >= 0, 1.0, -1.0) * np.sqrt(best)


# ---------------------------------------------------------------------------------
# Model fields


def build_octree(vert, face, aamm):
    """(depth (n,), child (n, 8), aabb (n, 6), coeff (n, 8)) of a mesh's octree:
    ``vert`` the mesh's double-precision vertices, ``face`` its faces, ``aamm`` its box
    (min, max)."""
    vert = np.asarray(vert, dtype=np.float64).reshape(-1, 3)
    face = np.asarray(face, dtype=np.int64).reshape(-1, 3)
    aamm = np.asarray(aamm, dtype=np.float64)
    c = (aamm[:3] + aamm[3:]) / 2
    h = (aamm[3:] - aamm[:3]) / 2
    box = np.concatenate([c - 1.1 * h, c + 1.1 * h])
    t = _make_tree(vert[face], box)
    _balance(t)
    keys = _corner_keys(t)
    hang, pos = _hanging(t, keys)
    uniq, first, inv = np.unique(keys.ravel(), return_index=True, return_inverse=True)
    upos = pos.reshape(-1, 3)[first]
    coeff = np.full(len(uniq), np.nan)
    free = np.array([not hang.get(int(k)) for k in uniq.tolist()])
    coeff[free] = signed_distance(upos[free], vert, face)
    # hanging corners: the mean of their coarse neighbor's corners, breadth first
    index = {int(k): i for i, k in enumerate(uniq.tolist())}
    queue, head = [0], 0
    while head < len(queue):
        node = queue[head]
        head += 1
        for j in range(8):
            key = int(keys[node, j])
            deps = hang.get(key)
            i = index[key]
            if deps and np.isnan(coeff[i]):
                total = 0.0
                for dkey in deps:
                    value = coeff[index[dkey]]
                    if np.isnan(value):
                        raise ValueError("octree: a hanging corner before its neighbors")
                    total += value
                coeff[i] = total / len(deps)
        queue.extend(int(ch) for ch in t.child[node] if ch != -1)
    aabb = np.concatenate([(t.aamm[:, :3] + t.aamm[:, 3:]) / 2,
                           (t.aamm[:, 3:] - t.aamm[:, :3]) / 2], axis=1)
    return (t.level.astype(np.int32), t.child.astype(np.int32), aabb,
            coeff[inv].reshape(-1, 8))


def fill_octree(out, meshes, sdf_meshes) -> None:
    """oct_*, mesh_octadr/octnum and the size noct: an octree for each mesh in
    ``sdf_meshes`` (mesh ids: the meshes of ``<geom type="sdf">`` that have no
    ``<plugin>`` of their own, as MuJoCo 3.4.0 builds them)."""
    parts, adr, num = [], [], []
    total = 0
    for mid, cm in enumerate(meshes):
        if mid in sdf_meshes and cm.nface:
            vert = cm.vert_double if cm.vert_double is not None else cm.vert
            parts.append(build_octree(vert, cm.face, cm.aamm))
            adr.append(total)
            num.append(len(parts[-1][0]))
            total += num[-1]
        else:
            adr.append(-1)
            num.append(0)
    out.mesh_octadr = np.array(adr, dtype=np.int32)
    out.mesh_octnum = np.array(num, dtype=np.int32)

    def cat(k, shape):
        return np.concatenate([p[k] for p in parts]) if parts else np.zeros(shape)

    out.oct_depth = cat(0, (0,)).astype(np.int32)
    out.oct_child = cat(1, (0, 8)).astype(np.int32)
    out.oct_aabb = cat(2, (0, 6))
    out.oct_coeff = cat(3, (0, 8))
    out._size_noct = total
