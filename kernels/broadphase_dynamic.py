"""Dynamic broadphase for big scenes: each world's candidate geom pairs, built on the
device every step, in MuJoCo's contact order (src/engine/engine_collision_driver.c,
mj_collision and mj_broadphase).

kernels/collision_driver.py takes this path when enumerating every allowed geom pair
on the host would be too big (DYNAMIC_MIN_PAIRS). Nothing here is quadratic in the
number of bodies: memory is per swept body plus ``nbroadmax`` pair slots per world.
Per world:

1. ``_bounds``: each swept body's box (the union of its collidable geoms' bounding
   spheres grown by their margins; a plane, or any geom without a bounding radius,
   makes the box infinite) and its interval along the sweep axis;
2. ``_sort``: insertion sort of the world's persistent body order by the intervals'
   lower ends (nearly sorted from the last step: close to linear);
3. ``_sweep``: one thread per sorted position scans forward while the intervals
   overlap; a pair whose boxes overlap and that MuJoCo's body filters keep (body
   contype/conaffinity, same weld body, filterparent, <exclude>) is owned by its lower
   body, counted per owner and listed unordered. ``_scan_bodies`` gives each owner its
   segment, ``_scatter_pairs`` moves the pairs there (a world whose unordered list
   overflowed sweeps again, writing into the segments) and ``_sort_partners`` sorts
   each segment, so that the body pairs are in signature order ((body1 << 16) +
   body2), as mj_collision walks them;
4. ``_geom_pairs`` (count, then write): per body pair, the geom pairs the per-geom
   filters keep (geom bitmasks, a collision function for the type pair, not one of
   the pair's explicit <pair>s) whose bounding spheres overlap (mj_filterSphere);
   ``_explicit`` does the same for the explicit <pair>s (always tested, as
   mj_collision merges them); ``_scan_geoms`` merges both by signature, explicit
   pairs first, giving each its slot; ``_order_segments`` sorts the geom pairs of a
   body pair that MuJoCo sends through its midphase by (geom1, geom2), as its
   contactSort orders their contacts. The slot order is MuJoCo's contact order and
   the narrowphase keys contacts by slot; ``_kind_lists`` files the slots by
   detector kind.

A world whose body pairs or geom pairs do not fit ``nbroadmax`` keeps the first
pairs in signature order (an owner's pairs all or none), counts the overflow in
``broadphase_overflow`` (tiphys/report.py warns, naming make_data's ``nbroadmax``)
and never touches another world's lists.

Parallel over (world, body) or (world, lane) except ``_sort``, ``_scan_bodies`` and
``_scan_geoms`` (and finalize's scan of the contacts per candidate,
kernels/collision.py), which run one thread per world: O(n) work that suits the CPU
and many worlds; at one world on a GPU they are the serial part (a parallel scan would lift
it). No launch reads anything back and none depends on the data on the host.
"""
import taichi as ti

from .bind import launch
from .collision import pair_margin, sphere_filter
from .consts import NGEOMTYPES
from .math import param_row

ND = ti.types.ndarray()

BIG = 1e30  # half-extent of an infinite box (planes): finite in f32 as well
BOX_SLACK = 1e-5  # relative growth of the boxes: rounding never drops a near pair


@ti.kernel
def _bounds(
    override: ti.template(), o_margin: float, ax: float, ay: float, az: float,
    # model
    bp_body: ND, nsweep: ti.i32, body_geomadr: ND, body_geomnum: ND, geom_contype: ND,
    geom_conaffinity: ND, geom_rbound: ND, geom_margin: ND,
    # data
    geom_xpos: ND,
    # out
    box_lo: ND, box_hi: ND, lo: ND, hi: ND,
):
    nworld = geom_xpos.shape[0]
    axis = ti.Vector([ax, ay, az])
    for worldid, i in ti.ndrange(nworld, nsweep):
        rw = param_row(worldid, geom_rbound)
        mw = param_row(worldid, geom_margin)
        b = bp_body[i]
        blo = ti.Vector([BIG, BIG, BIG])
        bhi = ti.Vector([-BIG, -BIG, -BIG])
        infinite = False
        for g in range(body_geomadr[b], body_geomadr[b] + body_geomnum[b]):
            if geom_contype[g] != 0 or geom_conaffinity[g] != 0:
                r = geom_rbound[rw, g]
                margin = geom_margin[mw, g]
                if ti.static(override):
                    margin = o_margin
                if r <= 0:
                    infinite = True
                else:
                    c = geom_xpos[worldid, g]
                    ext = r + margin
                    slack = BOX_SLACK * (1.0 + ext + ti.max(ti.abs(c[0]), ti.abs(c[1]),
                                                            ti.abs(c[2])))
                    blo = ti.min(blo, c - (ext + slack))
                    bhi = ti.max(bhi, c + (ext + slack))
        if infinite:
            blo = ti.Vector([-BIG, -BIG, -BIG])
            bhi = ti.Vector([BIG, BIG, BIG])
        box_lo[worldid, i] = blo
        box_hi[worldid, i] = bhi
        # the box's interval along the axis (its corners' extreme projections)
        l = 0.0
        h = 0.0
        for k in ti.static(range(3)):
            if axis[k] >= 0:
                l += axis[k] * blo[k]
                h += axis[k] * bhi[k]
            else:
                l += axis[k] * bhi[k]
                h += axis[k] * blo[k]
        lo[worldid, i] = l
        hi[worldid, i] = h


@ti.kernel
def _sort(nsweep: ti.i32, order: ND, lo: ND):
    """Insertion sort of each world's persistent order by interval start."""
    for worldid in range(order.shape[0]):
        for i in range(1, nsweep):
            a = order[worldid, i]
            key = lo[worldid, a]
            j = i
            while j > 0 and lo[worldid, order[worldid, j - 1]] > key:
                order[worldid, j] = order[worldid, j - 1]
                j -= 1
            order[worldid, j] = a


@ti.kernel
def _gather(nsweep: ti.i32, order: ND, lo: ND, hi: ND, box_lo: ND, box_hi: ND, slo: ND,
            shi: ND, sbox_lo: ND, sbox_hi: ND):
    """Intervals and boxes in sorted order: the sweep reads them contiguously."""
    for worldid, i in ti.ndrange(order.shape[0], nsweep):
        b = order[worldid, i]
        slo[worldid, i] = lo[worldid, b]
        shi[worldid, i] = hi[worldid, b]
        sbox_lo[worldid, i] = box_lo[worldid, b]
        sbox_hi[worldid, i] = box_hi[worldid, b]


@ti.func
def _excluded(sig, bp_exclude: ti.template(), nexclude_sorted):
    """Binary search of the sorted exclude signatures."""
    lo = _first_at_least(sig, bp_exclude, nexclude_sorted)
    return lo < nexclude_sorted and bp_exclude[lo] == sig


@ti.func
def _body_pair_ok(b1, b2, filterparent: ti.template(), body_contype: ti.template(),
                  body_conaffinity: ti.template(), body_weldid: ti.template(),
                  body_parentid: ti.template(), bp_exclude: ti.template(), nexclude_sorted):
    """MuJoCo's body-level filters for bodies b1 < b2 (mj_collision, filterBodyPair)."""
    ok = (body_contype[b1] & body_conaffinity[b2]) != 0 or \
        (body_contype[b2] & body_conaffinity[b1]) != 0
    w1 = body_weldid[b1]
    w2 = body_weldid[b2]
    if w1 == w2:
        ok = False
    if ti.static(filterparent):
        if w1 != 0 and w2 != 0 and (w1 == body_weldid[body_parentid[w2]]
                                    or w2 == body_weldid[body_parentid[w1]]):
            ok = False
    if ok and nexclude_sorted > 0:
        if _excluded((b1 << 16) + b2, bp_exclude, nexclude_sorted):
            ok = False
    return ok


@ti.kernel
def _sweep(
    write: ti.template(), filterparent: ti.template(),
    # model
    bp_body: ND, nsweep: ti.i32, bp_exclude: ND, nexclude_sorted: ti.i32,
    body_contype: ND, body_conaffinity: ND, body_weldid: ND, body_parentid: ND,
    # scratch (s*: in sorted order)
    order: ND, slo: ND, shi: ND, sbox_lo: ND, sbox_hi: ND, bcount: ND, bstart: ND,
    bfill: ND, bowner: ND, bpartner: ND, nbpair: ND, raw_owner: ND, raw_partner: ND,
    nraw: ND,
):
    """Overlapping, unfiltered-out body pairs. First pass (write False): counted per
    owner and kept unordered in raw_owner/raw_partner (nraw[w] of them). Second pass
    (write True), only for the worlds whose raw list overflowed (nraw[w] < 0 after
    _scan_bodies): written straight into the owners' segments, so that what such a
    world keeps does not depend on thread timing."""
    for worldid, i in ti.ndrange(order.shape[0], nsweep):
        if ti.static(write):
            if nraw[worldid] >= 0:
                continue
        a = order[worldid, i]
        hia = shi[worldid, i]
        alo = sbox_lo[worldid, i]
        ahi = sbox_hi[worldid, i]
        j = i + 1
        while j < nsweep:
            if slo[worldid, j] > hia:
                break
            blo = sbox_lo[worldid, j]
            bhi = sbox_hi[worldid, j]
            jb = j
            j += 1
            if alo[0] <= bhi[0] and blo[0] <= ahi[0] and alo[1] <= bhi[1] and \
                    blo[1] <= ahi[1] and alo[2] <= bhi[2] and blo[2] <= ahi[2]:
                b = order[worldid, jb]
                own = ti.min(a, b)
                other = ti.max(a, b)
                if _body_pair_ok(bp_body[own], bp_body[other], filterparent, body_contype,
                                 body_conaffinity, body_weldid, body_parentid, bp_exclude,
                                 nexclude_sorted):
                    if ti.static(write):
                        start = bstart[worldid, own]
                        if start + bcount[worldid, own] <= nbpair[worldid]:
                            slot = start + ti.atomic_add(bfill[worldid, own], 1)
                            bowner[worldid, slot] = own
                            bpartner[worldid, slot] = other
                    else:
                        ti.atomic_add(bcount[worldid, own], 1)
                        slot = ti.atomic_add(nraw[worldid], 1)
                        if slot < raw_owner.shape[1]:
                            raw_owner[worldid, slot] = own
                            raw_partner[worldid, slot] = other


@ti.kernel
def _scatter_pairs(lanes: ti.i32, bstart: ND, bcount: ND, bfill: ND, bowner: ND,
                   bpartner: ND, nbpair: ND, raw_owner: ND, raw_partner: ND, nraw: ND):
    """The raw pairs into their owners' segments (worlds whose raw list fit)."""
    for worldid, lane in ti.ndrange(raw_owner.shape[0], lanes):
        slot = lane
        while slot < nraw[worldid]:
            own = raw_owner[worldid, slot]
            start = bstart[worldid, own]
            if start + bcount[worldid, own] <= nbpair[worldid]:
                k = start + ti.atomic_add(bfill[worldid, own], 1)
                bowner[worldid, k] = own
                bpartner[worldid, k] = raw_partner[worldid, slot]
            slot += lanes


@ti.kernel
def _clear_counts(nsweep: ti.i32, bcount: ND, nraw: ND):
    for worldid, i in ti.ndrange(bcount.shape[0], nsweep):
        bcount[worldid, i] = 0
        if i == 0:
            nraw[worldid] = 0


@ti.kernel
def _scan_bodies(nsweep: ti.i32, bcount: ND, bstart: ND, bfill: ND, bowner: ND, nbpair: ND,
                 nraw: ND, broadphase_overflow: ND):
    """Each owner's segment; nbpair[w] = the body pairs of the owners that fit; nraw[w]
    = -1 where the raw list overflowed (the second sweep writes that world)."""
    cap = bowner.shape[1]
    for worldid in range(bcount.shape[0]):
        if nraw[worldid] > cap:
            nraw[worldid] = -1
        total = 0
        kept = -1
        for i in range(nsweep):
            bstart[worldid, i] = total
            bfill[worldid, i] = 0
            if kept < 0 and total + bcount[worldid, i] > cap:
                kept = total
            total += bcount[worldid, i]
        broadphase_overflow[worldid][1] = 0
        if kept < 0:
            kept = total
        else:
            broadphase_overflow[worldid][0] += 1
            broadphase_overflow[worldid][1] = total
        nbpair[worldid] = kept


SHORT_SEGMENT = 32  # insertion sort up to this many partners, merge sort beyond


@ti.kernel
def _sort_partners(nsweep: ti.i32, bcount: ND, bstart: ND, bpartner: ND, nbpair: ND,
                   buf: ND):
    """Sort each owner's partners (owner ids are in body order: signature order). A
    body with an infinite box (a plane) has every body as a partner, in sweep order:
    long segments are merge sorted, through the same slots of ``buf``."""
    for worldid, i in ti.ndrange(bcount.shape[0], nsweep):
        start = bstart[worldid, i]
        n = bcount[worldid, i]
        if start + n <= nbpair[worldid]:
            if n <= SHORT_SEGMENT:
                for k in range(start + 1, start + n):
                    v = bpartner[worldid, k]
                    j = k
                    while j > start and bpartner[worldid, j - 1] > v:
                        bpartner[worldid, j] = bpartner[worldid, j - 1]
                        j -= 1
                    bpartner[worldid, j] = v
            else:
                width = 1
                in_buf = False  # where the sorted runs of ``width`` are
                while width < n:
                    lo = 0
                    while lo < n:
                        mid = ti.min(lo + width, n)
                        hi = ti.min(lo + 2 * width, n)
                        a = lo
                        b = mid
                        for k in range(lo, hi):
                            take_a = False
                            if a < mid and b < hi:
                                if in_buf:
                                    take_a = buf[worldid, start + a] <= buf[worldid, start + b]
                                else:
                                    take_a = bpartner[worldid, start + a] <= \
                                        bpartner[worldid, start + b]
                            else:
                                take_a = a < mid
                            src = a if take_a else b
                            if take_a:
                                a += 1
                            else:
                                b += 1
                            if in_buf:
                                bpartner[worldid, start + k] = buf[worldid, start + src]
                            else:
                                buf[worldid, start + k] = bpartner[worldid, start + src]
                        lo = hi
                    in_buf = not in_buf
                    width *= 2
                if in_buf:
                    for k in range(start, start + n):
                        bpartner[worldid, k] = buf[worldid, k]


@ti.func
def _first_at_least(sig, bp_xsig: ti.template(), nxpair):
    """The first of the nxpair sorted signatures that is at least sig (a lower bound)."""
    lo = 0
    hi = nxpair
    while lo < hi:
        mid = (lo + hi) // 2
        if bp_xsig[mid] < sig:
            lo = mid + 1
        else:
            hi = mid
    return lo


@ti.func
def _record(worldid, slot, g1, g2, pairid, code, cand_geom: ti.template(),
            cand_pair: ti.template(), cand_code: ti.template()):
    cand_geom[worldid, slot, 0] = g1
    cand_geom[worldid, slot, 1] = g2
    cand_pair[worldid, slot] = pairid
    cand_code[worldid, slot] = code


@ti.kernel
def _geom_pairs(
    write: ti.template(), override: ti.template(), o_margin: float, lanes: ti.i32,
    # model
    bp_body: ND, bp_xsig: ND, bp_xpair: ND, nxpair: ti.i32, bp_typekind: ND,
    body_geomadr: ND, body_geomnum: ND, geom_type: ND, geom_contype: ND,
    geom_conaffinity: ND, geom_rbound: ND, geom_margin: ND, pair_geom1: ND, pair_geom2: ND,
    # data
    geom_xpos: ND, geom_xmat: ND,
    # scratch / out
    bowner: ND, bpartner: ND, nbpair: ND, gcount: ND, goff: ND, ncand: ND,
    cand_geom: ND, cand_pair: ND, cand_code: ND,
):
    """Per body pair: the geom pairs that pass the per-geom filters and the bounding
    spheres, counted (write False) or written at the pair's offset (write True);
    ``lanes`` threads per world."""
    for worldid, lane in ti.ndrange(bowner.shape[0], lanes):
        k = lane
        while k < nbpair[worldid]:
            b1 = bp_body[bowner[worldid, k]]
            b2 = bp_body[bpartner[worldid, k]]
            sig = (b1 << 16) + b2
            x0 = _first_at_least(sig, bp_xsig, nxpair)
            gw = param_row(worldid, geom_margin)
            n = 0
            base = 0
            if ti.static(write):
                base = goff[worldid, k]
            for g1 in range(body_geomadr[b1], body_geomadr[b1] + body_geomnum[b1]):
                for g2 in range(body_geomadr[b2], body_geomadr[b2] + body_geomnum[b2]):
                    keep = (geom_contype[g1] & geom_conaffinity[g2]) != 0 or \
                        (geom_contype[g2] & geom_conaffinity[g1]) != 0
                    t1 = geom_type[g1]
                    t2 = geom_type[g2]
                    code = ti.min(t1, t2) * NGEOMTYPES + ti.max(t1, t2)
                    kind = bp_typekind[code]
                    if kind < 0:
                        keep = False
                    if keep:
                        x = x0
                        while x < nxpair and bp_xsig[x] == sig:
                            p = bp_xpair[x]
                            if (pair_geom1[p] == g1 and pair_geom2[p] == g2) or \
                                    (pair_geom1[p] == g2 and pair_geom2[p] == g1):
                                keep = False
                            x += 1
                    if keep:
                        margin = ti.max(geom_margin[gw, g1], geom_margin[gw, g2])
                        if ti.static(override):
                            margin = o_margin
                        if sphere_filter(worldid, g1, g2, margin, geom_type, geom_rbound,
                                         geom_xpos, geom_xmat):
                            keep = False
                    if keep:
                        if ti.static(write):
                            slot = base + n
                            if slot < ncand[worldid]:
                                lo_g = g1
                                hi_g = g2
                                if t1 > t2:
                                    lo_g = g2
                                    hi_g = g1
                                _record(worldid, slot, lo_g, hi_g, -1, code, cand_geom,
                                        cand_pair, cand_code)
                        n += 1
            if not ti.static(write):
                gcount[worldid, k] = n
            k += lanes


@ti.kernel
def _explicit(
    write: ti.template(), override: ti.template(), o_margin: float,
    # model
    bp_xpair: ND, nxpair: ti.i32, bp_typekind: ND, geom_type: ND, geom_rbound: ND,
    geom_margin: ND, pair_margin_arr: ND, pair_geom1: ND, pair_geom2: ND,
    # data
    geom_xpos: ND, geom_xmat: ND,
    # scratch / out
    xcount: ND, xoff: ND, ncand: ND, cand_geom: ND, cand_pair: ND, cand_code: ND,
):
    """The explicit <pair>s whose bounding volumes overlap (with the pair's margin)."""
    for worldid, e in ti.ndrange(xcount.shape[0], nxpair):
        p = bp_xpair[e]
        g1 = pair_geom1[p]
        g2 = pair_geom2[p]
        if geom_type[pair_geom1[p]] > geom_type[pair_geom2[p]]:
            g1 = pair_geom2[p]
            g2 = pair_geom1[p]
        margin = pair_margin(worldid, g1, g2, p, geom_margin, pair_margin_arr, override,
                             o_margin)
        near = not sphere_filter(worldid, g1, g2, margin, geom_type, geom_rbound, geom_xpos,
                                 geom_xmat)
        if ti.static(write):
            slot = xoff[worldid, e]
            if near and slot < ncand[worldid]:
                code = geom_type[g1] * NGEOMTYPES + geom_type[g2]
                _record(worldid, slot, g1, g2, p, code, cand_geom, cand_pair, cand_code)
        else:
            xcount[worldid, e] = 1 if near else 0


@ti.kernel
def _scan_geoms(
    bp_body: ND, bp_xsig: ND, nxpair: ti.i32,
    bowner: ND, bpartner: ND, nbpair: ND, gcount: ND, goff: ND, xcount: ND, xoff: ND,
    ncand: ND, counts: ND, broadphase_overflow: ND,
):
    """Slots of the geom pairs: body pairs and explicit pairs merged by signature,
    explicit pairs first (mj_collision's merge); ncand[w] = the slots that fit."""
    cap = goff.shape[1]
    for worldid in range(bowner.shape[0]):
        total = 0
        e = 0
        for k in range(nbpair[worldid]):
            sig = (bp_body[bowner[worldid, k]] << 16) + bp_body[bpartner[worldid, k]]
            while e < nxpair and bp_xsig[e] <= sig:
                xoff[worldid, e] = total
                total += xcount[worldid, e]
                e += 1
            goff[worldid, k] = total
            total += gcount[worldid, k]
        while e < nxpair:
            xoff[worldid, e] = total
            total += xcount[worldid, e]
            e += 1
        for kind in range(counts.shape[1]):
            counts[worldid, kind] = 0
        ncand[worldid] = ti.min(total, cap)
        if total > cap:
            if broadphase_overflow[worldid][1] == 0:
                broadphase_overflow[worldid][0] += 1
            broadphase_overflow[worldid][1] = ti.max(broadphase_overflow[worldid][1], total)


@ti.kernel
def _order_segments(
    lanes: ti.i32, bp_body: ND, body_geomnum: ND, bowner: ND,
    bpartner: ND, nbpair: ND, gcount: ND, goff: ND, ncand: ND, cand_geom: ND,
    cand_code: ND,
):
    """A body pair that MuJoCo collides through its midphase (mj_collideTree: both
    bodies have a BVH, one has several geoms) has its contacts sorted by their
    (geom1, geom2), geom1 the one of lower type (contactSort); its geom pairs are
    sorted so here (distinct pairs: no ties), instead of the all-to-all loop order."""
    for worldid, lane in ti.ndrange(bowner.shape[0], lanes):
        k = lane
        while k < nbpair[worldid]:
            b1 = bp_body[bowner[worldid, k]]
            b2 = bp_body[bpartner[worldid, k]]
            start = goff[worldid, k]
            end = ti.min(start + gcount[worldid, k], ncand[worldid])
            if body_geomnum[b1] > 1 or body_geomnum[b2] > 1:
                for i in range(start + 1, end):
                    g1 = cand_geom[worldid, i, 0]
                    g2 = cand_geom[worldid, i, 1]
                    code = cand_code[worldid, i]
                    j = i
                    while j > start and (cand_geom[worldid, j - 1, 0] > g1 or (
                            cand_geom[worldid, j - 1, 0] == g1
                            and cand_geom[worldid, j - 1, 1] > g2)):
                        cand_geom[worldid, j, 0] = cand_geom[worldid, j - 1, 0]
                        cand_geom[worldid, j, 1] = cand_geom[worldid, j - 1, 1]
                        cand_code[worldid, j] = cand_code[worldid, j - 1]
                        j -= 1
                    cand_geom[worldid, j, 0] = g1
                    cand_geom[worldid, j, 1] = g2
                    cand_code[worldid, j] = code
            k += lanes


@ti.kernel
def _kind_lists(lanes: ti.i32, bp_typekind: ND, ncand: ND, cand_code: ND, lists: ND,
                counts: ND):
    """Each candidate slot into the list of its detector kind (any order: contacts are
    keyed by slot)."""
    for worldid, lane in ti.ndrange(cand_code.shape[0], lanes):
        slot = lane
        while slot < ncand[worldid]:
            kind = bp_typekind[cand_code[worldid, slot]]
            k = ti.atomic_add(counts[worldid, kind], 1)
            lists[worldid, kind, k] = slot
            slot += lanes


@ti.kernel
def _init_order(order: ND, nsweep: ti.i32):
    for worldid, i in ti.ndrange(order.shape[0], nsweep):
        order[worldid, i] = i


def init_state(st):
    """Identity order of a fresh state (outside the step: once per Data)."""
    _init_order(st.order, st.nsweep)


def broadphase(m, d, st):
    """Fill the per-world candidate lists of ``st`` (the dynamic state made by
    kernels/collision_driver.py): cand_geom/cand_pair/cand_code (nworld, nbroadmax),
    lists (nworld, nkind, nbroadmax) and counts (nworld, nkind). Reads geom_xpos and
    geom_xmat; writes broadphase_overflow."""
    opt = m.opt
    override = bool(opt.enabled("override"))
    o_margin = float(opt.o_margin)
    ax, ay, az = st.axis
    common = dict(bp_body=st.bp_body, nsweep=st.nsweep)
    launch(_bounds, m, d, override=override, o_margin=o_margin, ax=ax, ay=ay, az=az,
           box_lo=st.box_lo, box_hi=st.box_hi, lo=st.lo, hi=st.hi, **common)
    launch(_sort, m, d, nsweep=st.nsweep, order=st.order, lo=st.lo)
    launch(_gather, m, d, nsweep=st.nsweep, order=st.order, lo=st.lo, hi=st.hi,
           box_lo=st.box_lo, box_hi=st.box_hi, slo=st.slo, shi=st.shi, sbox_lo=st.sbox_lo,
           sbox_hi=st.sbox_hi)
    launch(_clear_counts, m, d, nsweep=st.nsweep, bcount=st.bcount, nraw=st.nraw)
    sweep = dict(filterparent=st.filterparent, bp_exclude=st.bp_exclude,
                 nexclude_sorted=st.nexclude, order=st.order, slo=st.slo, shi=st.shi,
                 sbox_lo=st.sbox_lo, sbox_hi=st.sbox_hi, bcount=st.bcount, bstart=st.bstart,
                 bfill=st.bfill, bowner=st.bowner, bpartner=st.bpartner, nbpair=st.nbpair,
                 raw_owner=st.goff, raw_partner=st.gcount, nraw=st.nraw,  # (free here)
                 **common)
    launch(_sweep, m, d, write=False, **sweep)
    launch(_scan_bodies, m, d, nsweep=st.nsweep, bcount=st.bcount, bstart=st.bstart,
           bfill=st.bfill, bowner=st.bowner, nbpair=st.nbpair, nraw=st.nraw)
    launch(_scatter_pairs, m, d, lanes=st.lanes, bstart=st.bstart, bcount=st.bcount, bfill=st.bfill,
           bowner=st.bowner, bpartner=st.bpartner, nbpair=st.nbpair, raw_owner=st.goff,
           raw_partner=st.gcount, nraw=st.nraw)
    launch(_sweep, m, d, write=True, **sweep)
    launch(_sort_partners, m, d, nsweep=st.nsweep, bcount=st.bcount, bstart=st.bstart,
           bpartner=st.bpartner, nbpair=st.nbpair, buf=st.gcount)  # (gcount: free here)
    out = dict(ncand=st.ncand, cand_geom=st.cand_geom, cand_pair=st.cand_pair,
               cand_code=st.cand_code)
    pairs = dict(bp_body=st.bp_body, bp_xsig=st.bp_xsig, bp_xpair=st.bp_xpair,
                 nxpair=st.nxpair, bp_typekind=st.bp_typekind, bowner=st.bowner,
                 bpartner=st.bpartner, nbpair=st.nbpair, gcount=st.gcount, goff=st.goff,
                 **out)
    explicit = dict(bp_xpair=st.bp_xpair, nxpair=st.nxpair, bp_typekind=st.bp_typekind,
                    pair_margin_arr=m.pair_margin, xcount=st.xcount, xoff=st.xoff, **out)
    launch(_geom_pairs, m, d, write=False, override=override, o_margin=o_margin,
           lanes=st.lanes, **pairs)
    if st.nxpair:
        launch(_explicit, m, d, write=False, override=override, o_margin=o_margin,
               **explicit)
    launch(_scan_geoms, m, d, bp_body=st.bp_body, bp_xsig=st.bp_xsig, nxpair=st.nxpair,
           bowner=st.bowner, bpartner=st.bpartner, nbpair=st.nbpair, gcount=st.gcount,
           goff=st.goff, xcount=st.xcount, xoff=st.xoff, ncand=st.ncand, counts=st.counts)
    launch(_geom_pairs, m, d, write=True, override=override, o_margin=o_margin,
           lanes=st.lanes, **pairs)
    if st.nxpair:
        launch(_explicit, m, d, write=True, override=override, o_margin=o_margin,
               **explicit)
    if st.midphase:
        launch(_order_segments, m, d, lanes=st.lanes, bp_body=st.bp_body, bowner=st.bowner,
               bpartner=st.bpartner, nbpair=st.nbpair, gcount=st.gcount, goff=st.goff,
               ncand=st.ncand, cand_geom=st.cand_geom, cand_code=st.cand_code)
    launch(_kind_lists, m, d, lanes=st.lanes, bp_typekind=st.bp_typekind, ncand=st.ncand,
           cand_code=st.cand_code, lists=st.lists, counts=st.counts)
