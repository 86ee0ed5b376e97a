"""Convex hull of a mesh and its graph (MuJoCo 3.4.0's user_mesh.cc MakeGraph): Qhull,
through scipy's copy, with MuJoCo's options, laid out as mjModel's ``mesh_graph``
(the hull graph GJK's hill climbing walks, kernels/convex_support.py).
"""

from __future__ import annotations

import os
import pickle

import numpy as np

from ..errors import ModelError
from .mesh_math import _cross, _dot3, _stable_argsort
from .polygons import PURE_PYTHON_ENV

try:
    from ._meshsum import hull_edges as _c_hull_edges
except ImportError as exc:  # not built: the numpy edge lists (mesh.py reports the error)
    if exc.name != f"{__package__}._meshsum":
        raise
    _c_hull_edges = None


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
    order = np.asarray(order, dtype=np.int64)
    vert_edgeadr, edge_local = _hull_edges(simp, order)
    numvert = len(order)
    if len(edge_local) != numvert + 3 * nface:
        raise ModelError("qhull error: convex hull graph has the wrong size")
    graph = np.concatenate([np.array([numvert, nface]), vert_edgeadr, order, edge_local,
                            faces.ravel()]).astype(np.int32)
    return graph


def _hull_edges(simp: np.ndarray, order: np.ndarray):
    """(vert_edgeadr, edge_localid) of the hull graph: for each hull vertex g, in
    ``order``, the local ids of the vertices that share a facet with it, each once, in
    the order they are first met going through g's facets in facet order and each
    facet's vertices in their order; then -1. (MuJoCo's loop over facets and their
    vertices, as arrays: every (g, facet, corner) triple sorted, the first of each
    (g, neighbour) kept.) In C where _meshsum is built (and TIPHYS_PURE_PYTHON_MESH is
    unset, empty or 0), else in numpy."""
    nface = len(simp)
    local = np.full(int(simp.max()) + 1 if simp.size else 1, -1, np.int64)
    local[order] = np.arange(len(order))
    if _c_hull_edges is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0"):
        vert_edgeadr = np.empty(len(order), np.int64)
        edge_local = np.empty(len(order) + 6 * nface, np.int64)
        size = _c_hull_edges(np.ascontiguousarray(simp, np.int64).reshape(-1, 3), local,
                             vert_edgeadr, edge_local)
        if size >= 0:
            return vert_edgeadr, edge_local[:size]
    own = np.repeat(simp, 3, axis=1).ravel()        # g, for each of its facet's corners
    other = np.tile(simp, (1, 3)).ravel()           # the corner's vertex
    keep = own != other
    g, g1 = local[own[keep]], local[other[keep]]
    # (g, facet, corner) in lexicographic order; the triples come facet by facet
    key = g * (3 * nface) + (np.flatnonzero(keep) // 9) * 3 + np.flatnonzero(keep) % 3
    srt = _stable_argsort(key)
    g, g1 = g[srt], g1[srt]
    _, first = np.unique(g * len(order) + g1, return_index=True)
    first.sort()
    g, g1 = g[first], g1[first]
    nbr = np.bincount(g, minlength=len(order))  # neighbours of each hull vertex
    vert_edgeadr = np.cumsum(nbr + 1) - (nbr + 1)   # each list ends with -1
    rank = np.arange(len(g)) - (np.cumsum(nbr) - nbr)[g]  # of g1 in g's list
    edge_local = np.full(int(nbr.sum()) + len(order), -1, np.int64)
    edge_local[vert_edgeadr[g] + rank] = g1
    return vert_edgeadr, edge_local


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
