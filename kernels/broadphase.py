"""Sweep-and-prune broadphase: per world, the candidate pairs whose bounding spheres
overlap along one axis, as per-world lists for the narrowphase kernels.

Used for scenes with many geoms (kernels/collision_driver.py picks it by size), where testing
every candidate pair of every world costs more than sorting. One thread per world:
1. each geom's interval along the sweep axis (centre +- rbound + margin);
2. insertion sort of the world's persistent geom order (nearly sorted from the last
   call, so this is close to linear);
3. sweep: pairs whose intervals overlap, looked up in the model's (geom, geom) ->
   candidate map, kept if their bounding spheres overlap, appended to the list of
   their detector kind.
Candidates that SAP cannot bound (planes: infinite extent, explicit <pair>s: their
own margin) are copied into every world's lists first. A world whose list would
overflow gets ``overflow[w] = 1`` and counts of -1 - (the kind's number of
candidates): the narrowphase kernels then give that world every candidate from the
shared lists, on the device.
"""
import taichi as ti

from .bind import launch
from .collision import near_pair
from .math import param_row

ND = ti.types.ndarray()


@ti.func
def _append(worldid, kind, cand, lists: ti.template(), counts: ti.template(),
            overflow: ti.template()):
    """Add a candidate to the world's list of its kind; flag the world when full."""
    n = counts[worldid, kind]
    if n < lists.shape[2]:
        lists[worldid, kind, n] = cand
        counts[worldid, kind] = n + 1
    else:
        overflow[worldid] = 1


@ti.kernel
def _sap(
    override: ti.template(), o_margin: float, ax: float, ay: float, az: float,
    ux: float, uy: float, uz: float, vx: float, vy: float, vz: float,
    # model
    geom_type: ND, geom_rbound: ND, geom_margin: ND, pair_margin_arr: ND, ngeom: ti.i32,
    sap_geom: ND, nsap: ti.i32, pairmap: ND, cand_geom: ND, cand_pair: ND, cand_kind: ND,
    fixed: ND, nfixed: ti.i32,
    # data
    geom_xpos: ND, geom_xmat: ND,
    # scratch / out
    order: ND, lo: ND, hi: ND, ctr: ND, lists: ND, counts: ND, overflow: ND,
    all_counts: ND,
):
    nworld = geom_xpos.shape[0]
    axis = ti.Vector([ax, ay, az])
    # two axes across the sweep: a pair whose centers lie farther apart along either
    # than their radii reach cannot be near (the bounding-sphere test would refuse it),
    # so it skips the pair-map look-up and that test (ctr: both coordinates, radius)
    across_u = ti.Vector([ux, uy, uz])
    across_v = ti.Vector([vx, vy, vz])
    nkind = counts.shape[1]
    for worldid in range(nworld):
        rw = param_row(worldid, geom_rbound)
        mw = param_row(worldid, geom_margin)
        for k in range(nkind):
            counts[worldid, k] = 0
        overflow[worldid] = 0
        for i in range(nfixed):
            _append(worldid, cand_kind[fixed[i]], fixed[i], lists, counts, overflow)
        # intervals, then insertion sort of the persistent order by lower bound
        for i in range(nsap):
            g = sap_geom[i]
            pos = geom_xpos[worldid, g]
            c = pos.dot(axis)
            # a radius that covers the pair margin, max(margin1, margin2) or o_margin
            # (half of it on each side, as MuJoCo's broadphase boxes)
            m = geom_margin[mw, g]
            if ti.static(override):
                m = 0.5 * o_margin
            r = geom_rbound[rw, g] + ti.max(m, 0.0)
            lo[worldid, i] = c - r
            hi[worldid, i] = c + r
            ctr[worldid, i] = ti.Vector([pos.dot(across_u), pos.dot(across_v), r])
        for i in range(1, nsap):
            j = i
            while j > 0 and lo[worldid, order[worldid, j - 1]] > lo[worldid, order[worldid, j]]:
                tmp = order[worldid, j - 1]
                order[worldid, j - 1] = order[worldid, j]
                order[worldid, j] = tmp
                j -= 1
        for i in range(nsap):
            a = order[worldid, i]
            hia = hi[worldid, a]
            ca = ctr[worldid, a]
            j = i + 1
            while j < nsap:
                b = order[worldid, j]
                if lo[worldid, b] > hia:
                    break
                cb = ctr[worldid, b]
                # slack for the round-off of the projections against the sphere test's
                reach = (ca[2] + cb[2]) * 1.001 + 1e-6 * (
                    ti.abs(ca[0]) + ti.abs(cb[0]) + ti.abs(ca[1]) + ti.abs(cb[1]))
                cand = -1
                if ti.abs(ca[0] - cb[0]) <= reach and ti.abs(ca[1] - cb[1]) <= reach:
                    cand = pairmap[ti.min(a, b), ti.max(a, b)]
                if cand >= 0:
                    _g1, _g2, _margin, near = near_pair(
                        worldid, cand, cand_geom, cand_pair, geom_type, geom_rbound,
                        geom_margin, pair_margin_arr, geom_xpos, geom_xmat, override,
                        o_margin)
                    if near:
                        _append(worldid, cand_kind[cand], cand, lists, counts, overflow)
                j += 1
        if overflow[worldid] != 0:
            # the narrowphase then tests every candidate (list_count / list_entry)
            for k in range(nkind):
                counts[worldid, k] = -1 - all_counts[0, k]


@ti.kernel
def _init_order(order: ND, nsap: ti.i32):
    for worldid, i in ti.ndrange(order.shape[0], nsap):
        order[worldid, i] = i


def sap(m, d, sp):
    """Fill ``sp.lists`` (nworld, nkind, cap) and ``sp.counts`` (nworld, nkind) for the
    worlds of ``d``; ``sp`` is the per-Data SAP state made by kernels/collision_driver.py."""
    opt = m.opt
    if not sp.initialized:
        launch(_init_order, m, d, order=sp.order, nsap=sp.nsap)
        sp.initialized = True
    ax, ay, az = sp.axis
    (ux, uy, uz), (vx, vy, vz) = sp.across
    launch(_sap, m, d, override=bool(opt.enabled("override")), o_margin=float(opt.o_margin),
           ax=ax, ay=ay, az=az, ux=ux, uy=uy, uz=uz, vx=vx, vy=vy, vz=vz,
           pair_margin_arr=m.pair_margin, sap_geom=sp.sap_geom,
           nsap=sp.nsap, pairmap=sp.pairmap, cand_geom=sp.cand_geom, cand_pair=sp.cand_pair,
           cand_kind=sp.cand_kind, fixed=sp.fixed, nfixed=sp.nfixed, order=sp.order,
           lo=sp.lo, hi=sp.hi, ctr=sp.ctr, lists=sp.lists, counts=sp.counts,
           overflow=sp.overflow, all_counts=sp.all_counts)
