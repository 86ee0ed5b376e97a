"""Bounding-volume hierarchies: the bvh_* fields and body_/mesh_/flex_ bvhadr, bvhnum.

Follows MuJoCo 3.4.0 (user_objects.cc: mjCBoundingVolumeHierarchy::Make / MakeBVH and
mjCBody::ComputeBVH; user_mesh.cc: mjCMesh::SetBoundingVolume / MakeCenter and
mjCFlex::CreateBVH; user_model.cc: the copy into mjModel and FuseStatic). Written anew:

- a hierarchy is built over its elements: a body's colliding geoms (contype or
  conaffinity nonzero), a mesh's faces, a flex's active elements;
- each node's box is the union of its elements' boxes in the hierarchy's frame
  (a body's inertial frame; a mesh's or flex's own), widened by mjEPS on a side
  thinner than mjEPS; a node of one element is a leaf (bvh_nodeid: the geom id, the
  face or element index), any other is split in two halves (the first ``n // 2``)
  along its box's longest side (a side wins only when longer by mjEPS), ordered by the
  elements' reference points (geom positions, face circumcenters, element box
  centers) on that axis, points within mjEPS of each other ordered by element order;
- nodes are numbered in pre-order (left subtree first), so a node with ``n`` elements
  has its left child next to it and its right child ``2 * (n // 2)`` later.

That order is not a strict weak order where points chain within mjEPS of each other
or are NaN (a degenerate face's circumcenter); there MuJoCo's halves are whatever its
std::nth_element (libc++, LLVM 20, in MuJoCo's Linux wheels) makes of them, which
depends on the elements' arrangement left by the levels above. So every hierarchy is
built node by node with a port of that selection (_bvhtree.c, or ``_exact_tree`` in
Python). Without the C twin, hierarchies are built level by level over all of them at
once (numpy, a sort per level), and those where a level meets such ties are rebuilt
node by node in Python.

bvh_* holds the bodies' hierarchies, then the meshes', then the flexes'
(``nbvhstatic`` = bodies + meshes, whose boxes are in ``bvh_aabb``; the flexes' boxes
move with the flex, ``nbvhdynamic``).
"""
from __future__ import annotations

import numpy as np

try:
    from ._bvhtree import tree as _c_tree
except ImportError as exc:  # not built (no C compiler at install): _exact_tree in Python
    if exc.name != f"{__package__}._bvhtree":
        raise
    _c_tree = None

EPS = 1e-14  # mjEPS


class Forest:
    """Hierarchies built by ``build_forest``: node arrays, one hierarchy after another."""

    def __init__(self, depth, child, element, aabb, roots, counts):
        self.depth = depth        # (nnode,) level below the root
        self.child = child        # (nnode, 2) node indices within the hierarchy; -1: none
        self.element = element    # (nnode,) element index of a leaf; -1: inner node
        self.aabb = aabb          # (nnode, 6) center, half size
        self.roots = roots        # (ntree,) root node of each hierarchy; -1: empty
        self.counts = counts      # (ntree,) nodes of each hierarchy


def build_forest(lo: np.ndarray, hi: np.ndarray, point: np.ndarray,
                 counts, use_c: bool = True) -> Forest:
    """One hierarchy per consecutive group of ``counts`` elements, each element with its
    box ``lo``..``hi`` (N, 3) and reference point ``point`` (N, 3), all in that
    hierarchy's frame. Element order is the order ties are broken in.

    Where _bvhtree is built each hierarchy is made by it, node by node as MuJoCo;
    otherwise level by level in numpy, and the hierarchies whose order has ties that
    are not a strict weak order again node by node (_exact_tree in Python)."""
    if use_c and _c_tree is not None:
        return _forest_c(lo, hi, point, counts)
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    nodes = np.where(counts > 0, 2 * counts - 1, 0)
    nnode = int(nodes.sum())
    depth = np.zeros(nnode, dtype=np.int32)
    child = np.full((nnode, 2), -1, dtype=np.int32)
    element = np.full(nnode, -1, dtype=np.int32)
    aabb = np.zeros((nnode, 6))
    node_base = np.concatenate([[0], np.cumsum(nodes)[:-1]]).astype(np.int64)
    roots = np.where(counts > 0, node_base, -1).astype(np.int32)
    elem_base = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    keep = counts > 0
    start, stop = elem_base[keep], (elem_base + counts)[keep]
    node = node_base[keep]
    level = 0
    perm = np.arange(n, dtype=np.int64)
    tree_of = np.repeat(np.arange(counts.size), counts)
    odd_trees = set()
    lo = np.asarray(lo, dtype=np.float64).reshape(n, 3)
    hi = np.asarray(hi, dtype=np.float64).reshape(n, 3)
    point = np.asarray(point, dtype=np.float64).reshape(n, 3)
    while start.size:
        cnt = stop - start
        # union of the element boxes of each segment (segments are disjoint, in order)
        edges = np.empty(2 * start.size, dtype=np.int64)
        edges[0::2], edges[1::2] = start, stop
        plo = np.concatenate([lo[perm], np.zeros((1, 3))])
        phi = np.concatenate([hi[perm], np.zeros((1, 3))])
        nlo = np.minimum.reduceat(plo, edges, axis=0)[0::2]
        nhi = np.maximum.reduceat(phi, edges, axis=0)[0::2]
        flat = np.abs(nlo - nhi) < EPS
        nlo = np.where(flat, nlo - EPS, nlo)
        nhi = np.where(flat, nhi + EPS, nhi)
        aabb[node, :3] = (nhi + nlo) / 2
        aabb[node, 3:] = (nhi - nlo) / 2
        depth[node] = level
        leaf = cnt == 1
        element[node[leaf]] = perm[start[leaf]]
        inner = ~leaf
        if not inner.any():
            break
        s, e, nd = start[inner], stop[inner], node[inner]
        side = (nhi - nlo)[inner]
        axis = np.zeros(s.size, dtype=np.int64)
        axis[side[:, 1] >= side[:, 0] + EPS] = 1
        axis[side[:, 2] >= side[np.arange(s.size), axis] + EPS] = 2
        odd_trees.update(tree_of[perm[s[_order_segments(perm, point, s, e, axis)]]].tolist())
        m = (e - s) // 2
        child[nd, 0] = nd + 1
        child[nd, 1] = nd + 2 * m
        start = np.stack([s, s + m], axis=1).ravel()
        stop = np.stack([s + m, e], axis=1).ravel()
        node = np.stack([nd + 1, nd + 2 * m], axis=1).ravel()
        level += 1
    # children as MuJoCo stores them: indices within their own hierarchy
    base = np.repeat(node_base, nodes).astype(np.int32)
    child = np.where(child >= 0, child - base[:, None], -1).astype(np.int32)
    for t in sorted(odd_trees):
        a, b = int(elem_base[t]), int(elem_base[t] + counts[t])
        r0 = int(node_base[t])
        d, c, el, bx = _exact_tree(lo[a:b], hi[a:b], point[a:b], use_c)
        sl = slice(r0, r0 + len(d))
        depth[sl], child[sl], aabb[sl] = d, c, bx
        element[sl] = np.where(el >= 0, el + a, -1)
    return Forest(depth, child, element, aabb, roots, nodes.astype(np.int32))


def _forest_c(lo, hi, point, counts) -> Forest:
    """build_forest with _bvhtree: each hierarchy written by the C builder straight
    into its rows of the forest's arrays."""
    counts = [int(c) for c in counts]
    n = sum(counts)
    nodes = [2 * c - 1 if c > 0 else 0 for c in counts]
    nnode = sum(nodes)
    depth = np.zeros(nnode, dtype=np.int32)
    child = np.full((nnode, 2), -1, dtype=np.int32)
    element = np.full(nnode, -1, dtype=np.int32)
    aabb = np.zeros((nnode, 6))
    lo, hi, point = (np.ascontiguousarray(x, dtype=np.float64).reshape(n, 3)
                     for x in (lo, hi, point))
    roots, starts = [], []  # per tree: root node, first element
    a = r = 0
    for c, m in zip(counts, nodes):
        roots.append(r if c else -1)
        starts.append(a)
        if c:
            _c_tree(lo[a:a + c], hi[a:a + c], point[a:a + c], depth[r:r + m],
                    child[r:r + m], element[r:r + m], aabb[r:r + m])
        a, r = a + c, r + m
    if nnode:  # element indices from the hierarchy's own to the forest's
        base = np.repeat(np.array(starts, dtype=np.int32), nodes)
        element = np.where(element >= 0, element + base, -1).astype(np.int32)
    return Forest(depth, child, element, aabb, np.array(roots, dtype=np.int32),
                  np.array(nodes, dtype=np.int32))


def _order_segments(perm, point, start, stop, axis):
    """Order ``perm[start:stop]`` of every segment by the points' coordinate ``axis``
    (points within EPS: by element index), in place. Returns the segments where that
    order is not MuJoCo's for certain: a run of points each within EPS of the next
    but spanning more, or a NaN point (a degenerate face's circumcenter)."""
    cnt = stop - start
    seg = np.repeat(np.arange(start.size), cnt)
    pos = _ranges(start, cnt)
    elem = perm[pos]
    value = point[elem, axis[seg]]
    first = np.lexsort((elem, value, seg))
    v, sg = value[first], seg[first]
    brk = np.ones(v.size, dtype=bool)
    brk[1:] = (sg[1:] != sg[:-1]) | ~(np.abs(v[1:] - v[:-1]) <= EPS)
    tie = np.empty(v.size, dtype=np.int64)
    tie[first] = np.cumsum(brk)
    order = np.lexsort((elem, tie))
    perm[pos] = elem[order]
    tmin = np.full(v.size + 1, np.inf)
    tmax = np.full(v.size + 1, -np.inf)
    t = tie[first]
    with np.errstate(invalid="ignore"):
        np.minimum.at(tmin, t, v)
        np.maximum.at(tmax, t, v)
    wide = ~(tmax - tmin <= EPS)  # NaN too
    wide[0] = False
    odd_seg = np.zeros(start.size, dtype=bool)
    odd_seg[sg[wide[t]]] = True
    return odd_seg


def _exact_tree(lo, hi, point, use_c=True):
    """One hierarchy built node by node as MuJoCo does, its halves chosen by
    ``nth_element_libcxx`` (for orders that are not strict weak orders); returns
    (depth, child, element, aabb) in pre-order. In C where _bvhtree is built."""
    n = len(lo)
    if use_c and _c_tree is not None:
        out = (np.zeros(2 * n - 1, np.int32), np.zeros((2 * n - 1, 2), np.int32),
               np.zeros(2 * n - 1, np.int32), np.zeros((2 * n - 1, 6)))
        _c_tree(*(np.ascontiguousarray(x, dtype=np.float64) for x in (lo, hi, point)), *out)
        return out
    depth, child, element, aabb = [], [], [], []
    cols = [point[:, k].tolist() for k in range(3)]

    def make(items, level):
        nlo = lo[items].min(axis=0)
        nhi = hi[items].max(axis=0)
        flat = np.abs(nlo - nhi) < EPS
        nlo = np.where(flat, nlo - EPS, nlo)
        nhi = np.where(flat, nhi + EPS, nhi)
        index = len(depth)
        depth.append(level)
        child.append([-1, -1])
        element.append(-1)
        aabb.append(np.concatenate([(nhi + nlo) / 2, (nhi - nlo) / 2]))
        if len(items) == 1:
            element[index] = items[0]
            return index
        side = nhi - nlo
        axis = 0
        if side[1] >= side[0] + EPS:
            axis = 1
        if side[2] >= side[axis] + EPS:
            axis = 2
        m = len(items) // 2
        items = nth_element_libcxx(items, m, cols[axis])
        child[index][0] = make(items[:m], level + 1)
        child[index][1] = make(items[m:], level + 1)
        return index

    make(list(range(n)), 0)  # (recursion depth: about log2 n, the halves being halves)
    return (np.array(depth, dtype=np.int32), np.array(child, dtype=np.int32).reshape(-1, 2),
            np.array(element, dtype=np.int32), np.array(aabb).reshape(-1, 6))


def nth_element_libcxx(items: list, nth: int, value: list) -> list:
    """``items`` (element indices) after libc++'s std::nth_element (LLVM 20, the C++
    library of MuJoCo's Linux wheels) with MuJoCo's BVH comparator: by ``value``
    unless within EPS, then by index. Written from libc++'s algorithm (sort3,
    selection sort, guarded partition) so that non-strict orders (NaN values compare
    as ties) give the same arrangement."""
    a = list(items)

    def less(x, y):
        d = value[x] - value[y]
        if abs(d) > EPS:
            return value[x] < value[y]
        return x < y

    def swap(i, j):
        a[i], a[j] = a[j], a[i]

    def sort3(x, y, z):
        if not less(a[y], a[x]):
            if not less(a[z], a[y]):
                return 0
            swap(y, z)
            if less(a[y], a[x]):
                swap(x, y)
                return 2
            return 1
        if less(a[z], a[y]):
            swap(x, z)
            return 1
        swap(x, y)
        if less(a[z], a[y]):
            swap(y, z)
            return 2
        return 1

    def selection_sort(first, last):
        for f in range(first, last - 1):
            m = f
            for i in range(f + 1, last):
                if less(a[i], a[m]):
                    m = i
            if m != f:
                swap(f, m)

    first, last = 0, len(a)
    while True:
        if nth == last:
            return a
        n = last - first
        if n <= 1:
            return a
        if n == 2:
            if less(a[last - 1], a[first]):
                swap(first, last - 1)
            return a
        if n == 3:
            sort3(first, first + 1, last - 1)
            return a
        if n <= 7:
            selection_sort(first, last)
            return a
        m = first + n // 2
        lm1 = last - 1
        swaps = sort3(first, m, lm1)
        i, j = first, lm1
        if not less(a[i], a[m]):
            guard = False
            while True:
                j -= 1
                if i == j:
                    break
                if less(a[j], a[m]):
                    guard = True
                    break
            if guard:
                swap(i, j)
                swaps += 1
            else:
                i += 1
                j = last
                j -= 1
                if not less(a[first], a[j]):
                    while True:
                        if i == j:
                            return a
                        if less(a[first], a[i]):
                            swap(i, j)
                            swaps += 1
                            i += 1
                            break
                        i += 1
                if i == j:
                    return a
                while True:
                    while not less(a[first], a[i]):
                        i += 1
                    j -= 1
                    while less(a[first], a[j]):
                        j -= 1
                    if i >= j:
                        break
                    swap(i, j)
                    swaps += 1
                    i += 1
                if nth < i:
                    return a
                first = i
                continue
        i += 1
        if i < j:
            while True:
                while less(a[i], a[m]):
                    i += 1
                j -= 1
                while not less(a[j], a[m]):
                    j -= 1
                if i >= j:
                    break
                swap(i, j)
                swaps += 1
                if m == i:
                    m = j
                i += 1
        if i != m and less(a[m], a[i]):
            swap(i, m)
            swaps += 1
        if nth == i:
            return a
        if swaps == 0:
            lo_, hi_ = (first, i) if nth < i else (i, last)
            jj = mm = lo_
            done = False
            while True:
                jj += 1
                if jj == hi_:
                    done = True
                    break
                if less(a[jj], a[mm]):
                    break
                mm = jj
            if done:
                return a
        if nth < i:
            last = i
        else:
            i += 1
            first = i


def _ranges(start, cnt):
    total = int(cnt.sum())
    offs = np.repeat(start - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    return np.arange(total, dtype=np.int64) + offs


# ---------------------------------------------------------------------------------
# elements of each kind of hierarchy


def _rot(quat, vec):
    """Rotate vectors (..., 3) by quaternions (..., 4), as mjuu_rotVecQuat."""
    w, x, y, z = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    v0, v1, v2 = vec[..., 0], vec[..., 1], vec[..., 2]
    t0 = w * v0 + y * v2 - z * v1
    t1 = w * v1 + z * v0 - x * v2
    t2 = w * v2 + x * v1 - y * v0
    out = np.empty(t0.shape + (3,))
    out[..., 0] = v0 + 2 * (y * t2 - z * t1)
    out[..., 1] = v1 + 2 * (z * t0 - x * t2)
    out[..., 2] = v2 + 2 * (x * t1 - y * t0)
    return out


def _rows(a, n, width):
    """The first (world's) ``n`` rows of a compiled field."""
    return np.asarray(a, dtype=np.float64).reshape(-1, width)[:n]


_CORNER = np.array([[(v >> k) & 1 for k in range(3)] for v in range(8)], dtype=bool)
_CORNER_LIST = _CORNER.tolist()


def geom_elements(ipos, iquat, pos, quat, box):
    """(lo, hi, point) of geoms (pos, quat, aabb per geom) in their body's inertial
    frame (ipos, iquat per geom)."""
    if len(box) <= _FEW_GEOMS:
        return _few_geom_elements(ipos, iquat, pos, quat, box)
    qinv = iquat * np.array([1.0, -1.0, -1.0, -1.0])
    blo, bhi = box[:, :3] - box[:, 3:], box[:, :3] + box[:, 3:]
    corner = np.where(_CORNER[None], bhi[:, None, :], blo[:, None, :])  # (k, 8, 3)
    rel = pos - ipos
    frame = _rot(quat[:, None], corner) + rel[:, None, :]
    # the corners and the position rotated back in one call (elementwise: the same
    # numbers as two calls); the corners' min/max on a (k, 8, 3) array of their own,
    # the layout numpy's reduction had (its pick between 0.0 and -0.0 may follow it)
    both = _rot(qinv[:, None], np.concatenate([frame, rel[:, None, :]], axis=1))
    frame = np.ascontiguousarray(both[:, :8])
    return frame.min(axis=1), frame.max(axis=1), np.ascontiguousarray(both[:, 8])


_FEW_GEOMS = 4  # up to this many geoms, their corners on Python floats (measured)


def _rot1(q, v):
    """_rot of one vector (Python floats): the same operations in the same order."""
    w, x, y, z = q
    v0, v1, v2 = v
    t0 = w * v0 + y * v2 - z * v1
    t1 = w * v1 + z * v0 - x * v2
    t2 = w * v2 + x * v1 - y * v0
    return (v0 + 2 * (y * t2 - z * t1), v1 + 2 * (z * t0 - x * t2),
            v2 + 2 * (x * t1 - y * t0))


def _few_geom_elements(ipos, iquat, pos, quat, box):
    """geom_elements for a few geoms: the corners rotated on Python floats (numpy's
    per-call cost dominates at this size; elementwise arithmetic rounds alike), the
    min/max over the corners still by numpy's reduction (its choice between 0.0 and
    -0.0, and its NaN, are kept) on an array of the same layout."""
    k = len(box)
    frames, points = [], []
    for ip, iq, p, q, bx in zip(np.asarray(ipos).tolist(), np.asarray(iquat).tolist(),
                                np.asarray(pos).tolist(), np.asarray(quat).tolist(),
                                np.asarray(box).tolist()):
        qinv = (iq[0] * 1.0, iq[1] * -1.0, iq[2] * -1.0, iq[3] * -1.0)
        lo = (bx[0] - bx[3], bx[1] - bx[4], bx[2] - bx[5])
        hi = (bx[0] + bx[3], bx[1] + bx[4], bx[2] + bx[5])
        rel = (p[0] - ip[0], p[1] - ip[1], p[2] - ip[2])
        for corner in _CORNER_LIST:
            c = _rot1(q, [hi[i] if corner[i] else lo[i] for i in range(3)])
            frames.append(_rot1(qinv, (c[0] + rel[0], c[1] + rel[1], c[2] + rel[2])))
        points.append(_rot1(qinv, rel))
    frame = np.array(frames, dtype=np.float64).reshape(k, 8, 3)
    return (frame.min(axis=1), frame.max(axis=1),
            np.array(points, dtype=np.float64).reshape(k, 3))


def fused_nodeids(history) -> np.ndarray:
    """bvh_nodeid of a body that fusestatic merged others into: MuJoCo rebuilds its
    hierarchy after each merge but keeps the node pointer list of the earlier builds,
    appending to it and overwriting only the new leaves' slots, so an inner node
    shows the geom (or none) an earlier build had in its slot. ``history``: the
    body's snapshots (tree._bvh_snapshot), first build first."""
    slots = []
    for geoms, pos, quat, box, ipos, iquat in history:
        k = len(geoms)
        if not k:
            continue
        lo, hi, pt = geom_elements(np.repeat(ipos[None], k, 0), np.repeat(iquat[None], k, 0),
                                   pos, quat, box)
        forest = build_forest(lo, hi, pt, [k])
        slots.extend([None] * len(forest.depth))
        for j, e in enumerate(forest.element.tolist()):
            if e >= 0:
                slots[j] = geoms[e]
        last = len(forest.depth)
    return np.array([-1 if g is None else g.id for g in slots[:last]], dtype=np.int32)


def body_elements(out):
    """(lo, hi, point, geomid, counts): each body's colliding geoms, boxes and positions
    in the body's inertial frame."""
    nbody = len(out.body_geomadr)
    ngeom = len(out.geom_type)
    body = np.asarray(out.geom_bodyid, dtype=np.int64).reshape(ngeom)
    use = (np.asarray(out.geom_contype) != 0) | (np.asarray(out.geom_conaffinity) != 0)
    geomid = np.nonzero(use)[0]
    gb = body[geomid]
    # geoms are grouped by body in body order (body_geomadr), so geomid is too
    counts = np.bincount(gb, minlength=nbody)
    lo, hi, point = geom_elements(
        _rows(out.body_ipos, nbody, 3)[gb], _rows(out.body_iquat, nbody, 4)[gb],
        _rows(out.geom_pos, ngeom, 3)[geomid], _rows(out.geom_quat, ngeom, 4)[geomid],
        _rows(out.geom_aabb, ngeom, 6)[geomid])
    return lo, hi, point, geomid, counts


def _dot3(a, b):
    """Row-wise dot products summed left to right (as mjuu_dot3)."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _cross(a, b):
    """Row-wise cross products, each component as np.cross computes it (one product
    minus the other), without its per-call axis handling."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    out = np.empty(a.shape)
    out[:, 0] = a1 * b2 - a2 * b1
    out[:, 1] = a2 * b0 - a0 * b2
    out[:, 2] = a0 * b1 - a1 * b0
    return out


def mesh_elements(vert: np.ndarray, face: np.ndarray):
    """(lo, hi, point) of a mesh's faces: the face boxes (as MuJoCo stores them, center
    and half size) and circumcenters, from the double-precision vertices."""
    vert = np.asarray(vert, dtype=np.float64).reshape(-1, 3)
    face = np.asarray(face, dtype=np.int64).reshape(-1, 3)
    p = vert[face]  # (nface, 3, 3)
    mn, mx = p.min(axis=1), p.max(axis=1)
    c, h = 0.5 * (mn + mx), 0.5 * (mx - mn)
    a = p[:, 0] - p[:, 2]
    b = p[:, 1] - p[:, 2]
    nrm = _cross(a, b)
    na2, nb2 = _dot3(a, a), _dot3(b, b)
    area = np.sqrt(_dot3(nrm, nrm))
    vec = na2[:, None] * b - nb2[:, None] * a
    res = _cross(vec, nrm)
    with np.errstate(divide="ignore", invalid="ignore"):  # degenerate faces: as MuJoCo
        center = res / (2 * area * area)[:, None] + p[:, 2]
    return c - h, c + h, center


def flex_elements(vx: np.ndarray, elem, dim: int, radius: float, active):
    """(lo, hi, point, elemid) of a flex's active elements in its reference pose."""
    idx = np.asarray(elem, dtype=np.int64).reshape(-1, dim + 1)
    elemid = np.nonzero(np.asarray(active, dtype=bool))[0]
    p = np.asarray(vx, dtype=np.float64).reshape(-1, 3)[idx[elemid]]
    mn, mx = p.min(axis=1), p.max(axis=1)
    c = 0.5 * (mx + mn)
    h = 0.5 * (mx - mn) + radius
    return c - h, c + h, c, elemid


# ---------------------------------------------------------------------------------
# Model fields


def fill_bvh(out, meshes, flexes, fuse_excess: int = 0, fused=()) -> None:
    """bvh_*, body_bvhadr/num, mesh_bvhadr/num, flex_bvhadr/num and the sizes nbvh,
    nbvhstatic, nbvhdynamic. ``meshes``: the compiled meshes (mesh order);
    ``flexes``: (vx, elem, dim, radius, active) per flex; ``fuse_excess``: the static
    volumes MuJoCo 3.4.0 counts too many when fusestatic merges a body with colliding
    geoms into a parent that has some (one per such merge; user_model.cc FuseStatic):
    nbvh and nbvhstatic include them and the arrays end in as many zero entries."""
    blo, bhi, bpt, geomid, bcount = body_elements(out)
    parts = [(blo, bhi, bpt)]
    counts = [bcount]
    for cm in meshes:
        vert = cm.vert_double if cm.vert_double is not None else cm.vert
        parts.append(mesh_elements(vert, cm.face))
        counts.append([cm.nface])
    flex_ids = []
    for vx, elem, dim, radius, active in flexes:
        lo, hi, pt, eid = flex_elements(vx, elem, dim, radius, active)
        parts.append((lo, hi, pt))
        flex_ids.append(eid)
        counts.append([len(eid)])
    counts = np.concatenate([np.asarray(c, dtype=np.int64) for c in counts])
    lo = np.concatenate([p[0] for p in parts]).reshape(-1, 3)
    hi = np.concatenate([p[1] for p in parts]).reshape(-1, 3)
    pt = np.concatenate([p[2] for p in parts]).reshape(-1, 3)
    forest = build_forest(lo, hi, pt, counts)

    nbody, nmesh, nflex = len(bcount), len(meshes), len(flexes)
    # element index -> the id MuJoCo stores: geom id, face index, element index
    ids = [geomid]
    for cm in meshes:
        ids.append(np.arange(cm.nface))
    ids.extend(flex_ids)
    ids = np.concatenate([np.asarray(i, dtype=np.int64) for i in ids]) if ids \
        else np.zeros(0, np.int64)
    leaf = forest.element >= 0
    nodeid = np.full(forest.element.shape, -1, dtype=np.int32)
    nodeid[leaf] = ids[forest.element[leaf]]
    for body, history in fused:  # (fusestatic: bodies that others were merged into)
        adr, num = int(forest.roots[body.id]), int(forest.counts[body.id])
        if num:
            nodeid[adr:adr + num] = fused_nodeids(history)

    roots, num = forest.roots, forest.counts
    out.body_bvhadr = roots[:nbody].astype(np.int32)
    out.body_bvhnum = num[:nbody].astype(np.int32)
    out.mesh_bvhadr = roots[nbody:nbody + nmesh].astype(np.int32)
    out.mesh_bvhnum = num[nbody:nbody + nmesh].astype(np.int32)
    out.flex_bvhadr = roots[nbody + nmesh:].astype(np.int32)
    out.flex_bvhnum = num[nbody + nmesh:].astype(np.int32)
    nstatic = int(num[:nbody + nmesh].sum())
    ndynamic = len(forest.depth) - nstatic
    extra = int(fuse_excess)
    out.bvh_depth = np.concatenate([forest.depth, np.zeros(extra, np.int32)])
    out.bvh_child = np.concatenate([forest.child, np.zeros((extra, 2), np.int32)])
    out.bvh_nodeid = np.concatenate([nodeid, np.zeros(extra, np.int32)])
    out.bvh_aabb = np.concatenate([forest.aabb[:nstatic], np.zeros((extra, 6))])
    out._size_nbvh = len(forest.depth) + extra
    out._size_nbvhstatic = nstatic + extra
    out._size_nbvhdynamic = ndynamic
