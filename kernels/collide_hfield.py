"""Heightfield narrowphase: MuJoCo's mjc_ConvexHField for every hfield-convex pair.

A height field is a grid of ``nrow x ncol`` elevations over the rectangle
[-x, x] x [-y, y] of its geom frame, scaled by ``z_top`` and standing on a base of
depth ``z_bottom`` (hfield_size). It is never collided as one shape: every grid cell
splits into two triangles, each the top of a triangular prism reaching down to
-z_bottom, and each prism near the other geom is collided with it by the convex
GJK/EPA of gjk.py and epa.py (penetration only: a prism yields a contact when it
overlaps the geom). As in MuJoCo 3.4.0:

- everything runs in the height field's frame: the other geom's pose is expressed
  relative to it and the contacts are rotated back at the end;
- early exits: the geom's bounding sphere (rbound + margin) against the field's box,
  then the geom's axis-aligned box in the field frame (six support points) against
  it; the same box bounds the sub-grid of cells visited (rows rmin..rmax-1, columns
  cmin..cmax);
- prisms are visited row by row, column by column, the two triangles of a cell in
  order, each built by sliding the previous prism's vertices (addPrismVert); a prism
  whose three top vertices are all below the geom's lowest point is skipped;
- the margin raises the prism tops and inflates the other geom by margin/2 (MuJoCo
  counts it this way, so a contact at dist d < 0 is reported even within the margin
  only through that inflation);
- at most MAXCONPAIR (50) contacts per pair; support searches of meshes keep their
  warm start from prism to prism.
"""
import taichi as ti

from .bind import launch
from .collide_convex import _ccd, _check_options, _light_compile, _object
from .collision import KEY_STRIDE, ND, emit_one, list_count, list_entry, near_pair
from .consts import GEOM_HFIELD, MAXCONPAIR
from .convex_support import _normalize, _support_one
from .epa import Polytope, polytope_capacity, polytope_scratch
from .gjk import _new_status
from .math import param_row

KIND_HFIELD = 2  # index of "hfield" in collision.KINDS


@ti.func
def _new_best(dist):
    """The deepest contact so far (geom_distance): dist, pos, normal, count."""
    return ti.types.struct(dist=float, pos=ti.types.vector(3, float),
                           normal=ti.types.vector(3, float), n=ti.i32)(
        dist=dist, pos=ti.Vector.zero(float, 3), normal=ti.Vector.zero(float, 3), n=0)


@ti.func
def _new_prism():
    """A prism object: collide_convex's object fields (type HFIELD, identity frame, no
    margin) plus its six vertices, rows 0-2 bottom and 3-5 top."""
    return ti.types.struct(
        type=ti.i32, pos=ti.types.vector(3, float), mat=ti.types.matrix(3, 3, float),
        size=ti.types.vector(3, float), margin=float, shrink=ti.i32, vadr=ti.i32,
        vnum=ti.i32, gadr=ti.i32, vidx=ti.i32, midx=ti.i32,
        prism=ti.types.matrix(6, 3, float))(
        type=GEOM_HFIELD, pos=ti.Vector.zero(float, 3), mat=ti.Matrix.identity(float, 3),
        size=ti.Vector.zero(float, 3), margin=0.0, shrink=0, vadr=0, vnum=0, gadr=-1,
        vidx=-1, midx=-1, prism=ti.Matrix.zero(float, 6, 3))


@ti.func
def _add_prism_vert(p: ti.template(), x, y, z):
    """addPrismVert: drop the oldest vertex, append (x, y) at the bottom and top."""
    for k in ti.static(range(3)):
        p.prism[0, k] = p.prism[1, k]
        p.prism[1, k] = p.prism[2, k]
        p.prism[3, k] = p.prism[4, k]
        p.prism[4, k] = p.prism[5, k]
    p.prism[2, 0] = x
    p.prism[5, 0] = x
    p.prism[2, 1] = y
    p.prism[5, 1] = y
    p.prism[5, 2] = z


@ti.func
def _grid_vertex(p: ti.template(), r, c, i, dx, dy, size0, size1, size2, margin, adr, ncol,
                 hfield_data: ti.template()):
    row = r + 1 - i
    _add_prism_vert(p, dx * c - size0, dy * row - size1,
                    hfield_data[adr + row * ncol + c] * size2 + margin)


@ti.func
def _hfield_convex(worldid, cand, g1, g2, margin, record: ti.template(), best: ti.template(),
                   pt: ti.template(), tol, kmax,
                   geom_type: ti.template(), geom_dataid: ti.template(),
                   geom_size: ti.template(), geom_rbound: ti.template(),
                   hfield_size: ti.template(), hfield_nrow: ti.template(),
                   hfield_ncol: ti.template(), hfield_adr: ti.template(),
                   hfield_data: ti.template(), mesh_vertadr: ti.template(),
                   mesh_vertnum: ti.template(), mesh_graphadr: ti.template(),
                   mesh_vert: ti.template(), mesh_graph: ti.template(),
                   geom_xpos: ti.template(), geom_xmat: ti.template(), ncon: ti.template(),
                   contact_dist: ti.template(), contact_pos: ti.template(),
                   contact_frame: ti.template(), contact_key: ti.template()):
    pos1 = geom_xpos[worldid, g1]
    mat1 = geom_xmat[worldid, g1]
    hid = geom_dataid[g1]
    nrow = hfield_nrow[hid]
    ncol = hfield_ncol[hid]
    adr = hfield_adr[hid]
    hs = hfield_size[hid]
    size0 = hs[0]
    size1 = hs[1]
    size2 = hs[2]
    size3 = hs[3]
    # the other geom in the height field's frame
    rel = pos1 * 0.0
    diff = geom_xpos[worldid, g2] - pos1
    for k in ti.static(range(3)):
        rel[k] = mat1[0, k] * diff[0] + mat1[1, k] * diff[1] + mat1[2, k] * diff[2]
    radius = geom_rbound[param_row(worldid, geom_rbound), g2] + margin
    if not (size0 < rel[0] - radius or -size0 > rel[0] + radius or
            size1 < rel[1] - radius or -size1 > rel[1] + radius or
            size2 < rel[2] - radius or -size3 > rel[2] + radius):
        o2 = _object(worldid, g2, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                     geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
        o2.pos = rel
        o2.mat = mat1.transpose() @ o2.mat
        # the geom's box in the field frame, from its support points along +-x, y, z
        lo = rel * 0.0
        hi = rel * 0.0
        for k in ti.static(range(3)):
            for s in ti.static(range(2)):
                direction = ti.Vector([0.0, 0.0, 0.0])
                direction[k] = 1.0 if s == 0 else -1.0
                res, vidx, midx = _support_one(
                    o2.type, o2.pos, o2.mat, o2.size, o2.margin, o2.shrink, o2.vadr, o2.vnum,
                    o2.gadr, o2.vidx, o2.midx, direction, mesh_vert, mesh_graph)
                o2.vidx = vidx
                o2.midx = midx
                if ti.static(s == 0):
                    hi[k] = res[k]
                else:
                    lo[k] = res[k]
        if not (lo[0] - margin > size0 or hi[0] + margin < -size0 or
                lo[1] - margin > size1 or hi[1] + margin < -size1 or
                lo[2] - margin > size2 or hi[2] + margin < -size3):
            cmin = ti.max(0, ti.cast(ti.floor((lo[0] + size0) / (2.0 * size0) * (ncol - 1)),
                                     ti.i32))
            cmax = ti.min(ncol - 1, ti.cast(ti.ceil((hi[0] + size0) / (2.0 * size0)
                                                    * (ncol - 1)), ti.i32))
            rmin = ti.max(0, ti.cast(ti.floor((lo[1] + size1) / (2.0 * size1) * (nrow - 1)),
                                     ti.i32))
            rmax = ti.min(nrow - 1, ti.cast(ti.ceil((hi[1] + size1) / (2.0 * size1)
                                                    * (nrow - 1)), ti.i32))
            o2.margin = margin
            dx = (2.0 * size0) / (ncol - 1)
            dy = (2.0 * size1) / (nrow - 1)
            zmin = lo[2]
            p = _new_prism()
            for k in ti.static(range(3)):
                p.prism[k, 2] = -size3
            n = 0
            r = rmin
            while r < rmax and n < MAXCONPAIR:
                _grid_vertex(p, r, cmin, 0, dx, dy, size0, size1, size2, margin, adr, ncol,
                             hfield_data)
                _grid_vertex(p, r, cmin, 1, dx, dy, size0, size1, size2, margin, adr, ncol,
                             hfield_data)
                c = cmin + 1
                while c <= cmax and n < MAXCONPAIR:
                    for i in range(2):
                        if n < MAXCONPAIR:
                            _grid_vertex(p, r, c, i, dx, dy, size0, size1, size2, margin,
                                         adr, ncol, hfield_data)
                            if not (p.prism[3, 2] < zmin and p.prism[4, 2] < zmin and
                                    p.prism[5, 2] < zmin):
                                center = ti.Vector([0.0, 0.0, 0.0])
                                for v in ti.static(range(6)):
                                    center += ti.Vector([p.prism[v, 0], p.prism[v, 1],
                                                         p.prism[v, 2]])
                                p.pos = center * (1.0 / 6.0)
                                st = _new_status()
                                _ccd(st, p, o2, pt, mesh_vert, mesh_graph, tol, kmax, 0.0)
                                if st.dist < 0:
                                    normal = mat1 @ _normalize(st.x1 - st.x2)
                                    pos = mat1 @ (0.5 * (st.x1 + st.x2)) + pos1
                                    if ti.static(record):
                                        if st.dist < best.dist:  # geom_distance
                                            best.dist = st.dist
                                            best.pos = pos
                                            best.normal = normal
                                            best.n += 1
                                    else:
                                        emit_one(worldid, cand * KEY_STRIDE + n, st.dist,
                                                 pos, normal, ti.Vector([0.0, 0.0, 0.0]),
                                                 ncon, contact_dist, contact_pos,
                                                 contact_frame, contact_key)
                                    n += 1
                    c += 1
                r += 1


@ti.kernel
def _narrow_hfield(
    cap: ti.template(), override: ti.template(), o_margin: float,
    tol: float, kmax: ti.i32,
    cand_geom: ND, cand_pair: ND, lists: ND, counts: ND, lanes: ti.i32,
    all_lists: ND,
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND, geom_margin: ND,
    pair_margin_arr: ND, hfield_size: ND, hfield_nrow: ND, hfield_ncol: ND, hfield_adr: ND,
    hfield_data: ND, mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND,
    mesh_vert: ND, mesh_graph: ND,
    geom_xpos: ND, geom_xmat: ND, world_mask: ND, epa_floats: ND, epa_ints: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        n = list_count(worldid, KIND_HFIELD, counts, world_mask)
        pt = Polytope((epa_floats, epa_ints), worldid * lanes + lane, cap)
        k = lane
        while k < n:
            cand = list_entry(worldid, KIND_HFIELD, k, lists, counts, all_lists)
            k += lanes
            g1, g2, margin, near = near_pair(worldid, cand, cand_geom, cand_pair, geom_type,
                                             geom_rbound, geom_margin, pair_margin_arr,
                                             geom_xpos, geom_xmat, override, o_margin)
            if near:
                best = _new_best(0.0)  # unused: contacts are emitted
                _hfield_convex(worldid, cand, g1, g2, margin, False, best, pt, tol, kmax,
                               geom_type,
                               geom_dataid, geom_size, geom_rbound, hfield_size, hfield_nrow,
                               hfield_ncol, hfield_adr, hfield_data, mesh_vertadr,
                               mesh_vertnum, mesh_graphadr, mesh_vert, mesh_graph,
                               geom_xpos, geom_xmat, ncon, contact_dist, contact_pos,
                               contact_frame, contact_key)


def narrow_hfield(m, d, plan, sweep):
    """Heightfield pairs of the worlds in ``sweep.mask`` (one launch), as
    mjc_ConvexHField.

    Reads geom_xpos/geom_xmat and the model's geom, pair, hfield and mesh fields;
    appends contacts (dist, pos, normal, sort key) like kernels/collision.py's ``emit``
    (finalize sorts them and sets their parameters)."""
    if plan.hfield_count == 0:
        return
    opt = m.opt
    _check_options(opt)
    cap = polytope_capacity(opt.ccd_iterations)
    lists, counts, lanes, all_lists = sweep.lists
    dist, pos, frame, key = sweep.emit
    epa_floats, epa_ints = polytope_scratch(d, cap, d.nworld * lanes)
    with _light_compile():
        launch(_narrow_hfield, m, d, cap=cap, override=bool(opt.enabled("override")),
               o_margin=float(opt.o_margin), tol=float(opt.ccd_tolerance),
               kmax=int(opt.ccd_iterations), cand_geom=sweep.cand[0], cand_pair=sweep.cand[1], lists=lists, counts=counts,
               lanes=lanes, all_lists=all_lists, pair_margin_arr=m.pair_margin,
               world_mask=sweep.mask, epa_floats=epa_floats, epa_ints=epa_ints,
               contact_dist=dist, contact_pos=pos, contact_frame=frame, contact_key=key)


@ti.kernel
def _hfield_distance(
    cap: ti.template(), g1: ti.i32, g2: ti.i32, flip: ti.i32, distmax: float, tol: float,
    kmax: ti.i32, geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND,
    hfield_size: ND, hfield_nrow: ND, hfield_ncol: ND, hfield_adr: ND, hfield_data: ND,
    mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND, mesh_vert: ND, mesh_graph: ND,
    geom_xpos: ND, geom_xmat: ND, epa_floats: ND, epa_ints: ND, dist_out: ND,
    fromto_out: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    for worldid in range(geom_xpos.shape[0]):
        best = _new_best(distmax)
        pt = Polytope((epa_floats, epa_ints), worldid, cap)
        _hfield_convex(worldid, -1, g1, g2, distmax, True, best, pt, tol, kmax,
                       geom_type, geom_dataid, geom_size, geom_rbound, hfield_size,
                       hfield_nrow, hfield_ncol, hfield_adr, hfield_data, mesh_vertadr,
                       mesh_vertnum, mesh_graphadr, mesh_vert, mesh_graph, geom_xpos,
                       geom_xmat, ncon, contact_dist, contact_pos, contact_frame,
                       contact_key)
        fromto = ti.Vector.zero(float, 6)
        if best.n > 0:
            sign = -1.0 if flip else 1.0
            for i in ti.static(range(3)):
                fromto[i] = best.pos[i] - 0.5 * sign * best.dist * best.normal[i]
                fromto[3 + i] = best.pos[i] + 0.5 * sign * best.dist * best.normal[i]
        dist_out[worldid] = best.dist
        fromto_out[worldid] = fromto


def hfield_distance(m, d, g1, g2, flip, distmax, dist, fromto):
    """geom_distance for a heightfield pair (geoms ordered hfield first): MuJoCo calls
    mjc_ConvexHField with distmax as margin and keeps the deepest contact."""
    opt = m.opt
    cap = polytope_capacity(opt.ccd_iterations)
    epa_floats, epa_ints = polytope_scratch(d, cap, d.nworld)
    with _light_compile():
        launch(_hfield_distance, m, d, cap=cap, g1=int(g1), g2=int(g2), flip=int(flip),
               distmax=float(distmax), tol=float(opt.ccd_tolerance),
               kmax=int(opt.ccd_iterations), epa_floats=epa_floats, epa_ints=epa_ints,
               dist_out=dist, fromto_out=fromto)
