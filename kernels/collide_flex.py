"""Flex collisions, following MuJoCo 3.4.0's engine_collision_driver.c (mj_collision's
body:flex and flex:flex branches and flex self-collisions, mj_collidePlaneFlex,
mj_contactParam and mj_setContact with flex sides).

The host driver (collision_driver.py) merges the flex candidates into the geom-pair
candidates by bodyflex signature ((body << 16) + nbody + flex, ((nbody + f1) << 16) +
nbody + f2; self-collisions after every pair), as mj_collision walks the broadphase's
bodyflex pairs, so that the contacts come out in MuJoCo's order through the same keys
(candidate * KEY_STRIDE + index) and the same finalize. A candidate is (geom or -1,
(f, kind, sub, maxcon, f1, e1)):

- kind PLANE_VERTS: a plane against the vertices sub .. sub + KEY_STRIDE - 1 of flex f
  (mj_collidePlaneFlex, split in chunks of KEY_STRIDE vertices: one contact per
  vertex at most, the key's index is the vertex within the chunk);
- kind GEOM_ELEM: a non-plane geom against element sub of flex f (mj_collideGeomElem,
  kernels/collide_flex_elem.py);
- kind ELEM_ELEM: element e1 of flex f1 against element sub of flex f (mj_collideElems:
  flex-flex pairs, and self-collisions of selfcollide="narrow" or without midphase);
- kind SELF_SAP: slot sub of a flex's self-collision midphase (mj_collideFlexSAP's
  sweep, or mj_collideTree's traversal of the flex BVH): each world's sweep or
  traversal (collide_flex_elem.flex_sap) fills the slots with element pairs in the
  order MuJoCo finds them, one slot per possible pair;
- kinds ELEM_VERT (element sub, vertex f1's slot) and TET_FACE (element sub, face e1's
  slot, its opposite vertex in f1's): internal collisions (mj_collideFlexInternal).

MuJoCo's midphase sorts a pair's contacts by (geom or element, element or vertex),
the order the candidates are listed in; it holds only the active elements of a 3D
flex and collides only planes of world-welded bodies, and so do the candidates.
Refused (``unsupported``): heightfield-element pairs, passive flex contacts.

Contacts of a flex vertex have geom = (plane, -1), flex = (-1, f), vert = (-1, i),
elem = (-1, -1); those of an element elem = (-1, e) or (e1, e), flex = (-1, f) or (f1,
f), vert = (-1, -1); internal ones vert = (v, -1), elem = (-1, e) (element-vertex) or
vert = (-1, v), elem = (e, -1) (a face) (i, e, v local to the flex, as MuJoCo).
Their constraint rows go through the vertex's body, or the element's vertex bodies
weighted by inverse distance (kernels/constraint.py ``_contact_bodies``, MuJoCo's
mj_elemBodyWeight).
"""
import numpy as np
import taichi as ti

from .collide_flex_elem import (ELEM_ELEM, ELEM_VERT, GEOM_ELEM, SELF_SAP, TET_FACE,
                                TET_FACE_VERT, narrow_elem, sap_pairs)
from .collide_flex_elem import maxcon as elem_maxcon
from .collision import KEY_STRIDE, contact_param, emit_one
from .consts import GEOM_HFIELD, GEOM_PLANE, GEOM_SDF, GEOM_TYPE_NAMES, MINMU, MINVAL
from .math import param_row

ND = ti.types.ndarray()

PLANE_VERTS = 0  # GEOM_ELEM = 1: collide_flex_elem


# ------------------------------------------------------------------------------------
# host: candidates and what tiphys refuses
# ------------------------------------------------------------------------------------

def _bitmask_ok(ct1, ca1, ct2, ca2) -> bool:
    return bool((int(ct1) & int(ca2)) or (int(ct2) & int(ca1)))


def flex_entries(a, opt, bct, bca, excl):
    """The geom-flex candidates of mj_collision's body:flex pairs, as (signature,
    (g, -1, -1, (f, kind, sub, maxcon))), in the order mj_collision collides them
    within a pair (geoms ascending; a plane's vertices, a geom's elements ascending:
    the midphase's contacts sorted by (geom, element or vertex) come in that order).
    ``bct``/``bca``: per body, the OR of its geoms' contype/conaffinity; ``excl``: the
    exclude signatures."""
    nflex = len(np.asarray(a.flex_dim))
    if nflex == 0:
        return []
    nbody = len(a.body_parentid)
    fct = np.asarray(a.flex_contype)
    fca = np.asarray(a.flex_conaffinity)
    gadr = np.asarray(a.body_geomadr)
    gnum = np.asarray(a.body_geomnum)
    geom_type = np.asarray(a.geom_type)
    contype = np.asarray(a.geom_contype)
    conaff = np.asarray(a.geom_conaffinity)
    vertnum = np.asarray(a.flex_vertnum)
    elemnum = np.asarray(a.flex_elemnum)
    dims = np.asarray(a.flex_dim)
    weld = np.asarray(a.body_weldid)
    bvhadr = np.asarray(a.flex_bvhadr)
    elemadr = np.asarray(a.flex_elemadr)
    layer = np.asarray(a.flex_elemlayer)
    active = np.asarray(a.flex_activelayers)
    midphase = not opt.disabled("midphase")
    vertadr = np.asarray(a.flex_vertadr)
    vertbody = np.asarray(a.flex_vertbodyid)
    elem = np.asarray(a.flex_elem)
    dataadr = np.asarray(a.flex_elemdataadr)

    def elem_bodies(f, e):
        dim = int(dims[f])
        data = int(dataadr[f]) + e * (dim + 1)
        return {int(vertbody[int(vertadr[f]) + int(v)]) for v in elem[data:data + dim + 1]}

    out = []
    for b in range(nbody):
        if not (bct[b] or bca[b]) or gnum[b] == 0:
            continue
        for f in range(nflex):
            if not (fct[f] or fca[f]) or not _bitmask_ok(bct[b], bca[b], fct[f], fca[f]):
                continue
            sig = (b << 16) + nbody + f
            if sig in excl:
                continue
            # mj_collideTree (midphase: the body has colliding geoms, so a hierarchy)
            # collides planes of world-welded bodies only, and a 3D flex's active
            # elements only (its hierarchy holds no others)
            tree = midphase and int(bvhadr[f]) >= 0
            elems = range(int(elemnum[f]))
            if tree and int(dims[f]) == 3:
                e0 = int(elemadr[f])
                elems = [e for e in elems if int(layer[e0 + e]) < int(active[f])]
            for g in range(gadr[b], gadr[b] + gnum[b]):
                if not _bitmask_ok(contype[g], conaff[g], fct[f], fca[f]):
                    continue
                if geom_type[g] == GEOM_PLANE:
                    if tree and int(weld[b]) != 0:
                        continue
                    for sub in range(0, int(vertnum[f]), KEY_STRIDE):
                        n = min(KEY_STRIDE, int(vertnum[f]) - sub)
                        out.append((sig, (int(g), -1, -1,
                                          (f, PLANE_VERTS, sub, n, -1, -1))))
                else:
                    n = elem_maxcon(int(geom_type[g]), int(dims[f]))
                    for e in elems:
                        if b in elem_bodies(f, e):  # mj_collideGeomElem's same-body skip
                            continue
                        out.append((sig, (int(g), -1, -1, (f, GEOM_ELEM, e, n, -1, -1))))

    def pair_elems(f):
        """The elements a flex's midphase hierarchy holds (3D: the active ones)."""
        elems = range(int(elemnum[f]))
        if int(dims[f]) == 3:
            e0 = int(elemadr[f])
            elems = [e for e in elems if int(layer[e0 + e]) < int(active[f])]
        return elems

    def elem_pairs(sig, f1, elems1, f2, elems2, self_pairs):
        count = len(elems1) * (len(elems1) - 1) // 2 if self_pairs else \
            len(elems1) * len(elems2)
        if count > MAX_ELEM_PAIRS:
            what = f"flex #{f1} with itself" if self_pairs else f"flex #{f1} with flex #{f2}"
            raise NotImplementedError(
                f"flex collisions: {what}: {count} element pairs (tiphys lists element "
                f"pairs once, without MuJoCo's midphase, up to {MAX_ELEM_PAIRS}); give "
                f"the flexes fewer elements or contype/conaffinity that keep them apart")
        n = 2 if int(dims[f1]) == 1 and int(dims[f2]) == 1 else 1
        for e1 in elems1:
            bodies1 = elem_bodies(f1, e1)
            for e2 in elems2:
                if self_pairs and e2 <= e1:
                    continue
                if bodies1 & elem_bodies(f2, e2):  # mj_collideElems' same-body skip
                    continue
                out.append((sig, (-1, -1, -1, (f2, ELEM_ELEM, e2, n, f1, e1))))

    # flex:flex pairs (their contacts sorted by element pair, as the loops give them)
    for f1 in range(nflex):
        for f2 in range(f1 + 1, nflex):
            if not (fct[f1] or fca[f1]) or not (fct[f2] or fca[f2]) or \
                    not _bitmask_ok(fct[f1], fca[f1], fct[f2], fca[f2]):
                continue
            sig = ((nbody + f1) << 16) + nbody + f2
            if sig in excl:
                continue
            tree = midphase and int(bvhadr[f1]) >= 0 and int(bvhadr[f2]) >= 0
            elems1 = pair_elems(f1) if tree else range(int(elemnum[f1]))
            elems2 = pair_elems(f2) if tree else range(int(elemnum[f2]))
            elem_pairs(sig, f1, elems1, f2, elems2, False)

    # self-collisions, after every pair: element pairs of active elements in loop
    # order (mj_collision's direct path; its midphases are refused, ``unsupported``)
    selfcollide = np.asarray(a.flex_selfcollide)
    evpair = np.asarray(a.flex_evpair).reshape(-1, 2)
    sap_base = [0]
    for f in range(nflex):
        if int(np.asarray(a.flex_rigid)[f]) or not (int(fct[f]) & int(fca[f])):
            continue
        sig = SELF_SIGNATURE + f
        if int(np.asarray(a.flex_internal)[f]):  # mj_collideFlexInternal
            adr = int(np.asarray(a.flex_evpairadr)[f])
            for e, v in evpair[adr:adr + int(np.asarray(a.flex_evpairnum)[f])]:
                out.append((sig, (-1, -1, -1, (f, ELEM_VERT, int(e), 1, int(v), -1))))
            if int(dims[f]) == 3:
                for e in range(int(elemnum[f])):
                    data = int(dataadr[f]) + 4 * e
                    for face, k in enumerate(TET_FACE_VERT):
                        v = int(elem[data + k])
                        out.append((sig, (-1, -1, -1, (f, TET_FACE, e, 1, v, face))))
        mode = int(selfcollide[f])
        if mode == FLEXSELF_NONE:
            continue
        elems = pair_elems(f)  # mj_isElemActive
        if self_midphase(a, opt, f):
            # mj_collideFlexSAP or mj_collideTree: one slot per possible pair, filled
            # per world in the order the sweep or the traversal finds them
            # (collide_flex_elem.flex_sap); the traversal also meets each leaf itself
            n = len(elems)
            count = n * (n - 1) // 2 if self_sap(a, opt, f) else n * (n + 1) // 2
            if count > MAX_ELEM_PAIRS:
                raise NotImplementedError(
                    f"flex collisions: flex #{f} with itself: {count} element pairs "
                    f"(tiphys keeps a slot per pair for its sweep, up to "
                    f"{MAX_ELEM_PAIRS})")
            for k in range(count):
                out.append((sig, (-1, -1, -1, (f, SELF_SAP, sap_base[0] + k, 1, f, -1))))
            sap_base[0] += count
            continue
        elem_pairs(sig, f, elems, f, elems, True)
    return out


MAX_ELEM_PAIRS = 1_000_000  # element-pair candidates per flex pair (host-enumerated)
FLEXSELF_NONE = 0  # mjtFlexSelf
FLEXSELF_NARROW = 1
FLEXSELF_SAP = 3
FLEXSELF_AUTO = 4
SELF_SIGNATURE = 1 << 40  # sorts self-collisions after every bodyflex pair


def self_midphase(a, opt, f) -> bool:
    """Whether mj_collision self-collides flex f through a midphase (SAP or its BVH)."""
    return not opt.disabled("midphase") and \
        int(np.asarray(a.flex_selfcollide)[f]) != FLEXSELF_NARROW and \
        int(np.asarray(a.flex_bvhadr)[f]) >= 0


def self_sap(a, opt, f) -> bool:
    """Whether that midphase is mj_collideFlexSAP (selfcollide "sap", or "auto" below
    3D); "bvh" and 3D "auto" take the flex's BVH (mj_collideTree)."""
    mode = int(np.asarray(a.flex_selfcollide)[f])
    return self_midphase(a, opt, f) and (
        mode == FLEXSELF_SAP or (mode == FLEXSELF_AUTO and int(np.asarray(a.flex_dim)[f]) < 3))


def unsupported(m, entries, names) -> list:
    """Phrases naming what of the model's flex collisions tiphys does not simulate yet
    (heightfield-element pairs, passive contacts) under
    the model's options; ``entries``: the candidates of collision_driver, ``names``:
    the flexes' names."""
    a = m.arrays
    opt = m.opt
    if opt.disabled("contact") or opt.disabled("constraint"):
        return []
    nflex = len(np.asarray(a.flex_dim))
    out = []
    gnames = list(getattr(m, "names", {}).get("geom", []))
    geom_type = np.asarray(a.geom_type)
    seen = set()
    for g, _, _, info in entries:
        if info is None or info[1] != GEOM_ELEM or (g, info[0]) in seen or \
                int(geom_type[g]) not in (GEOM_HFIELD, GEOM_SDF):
            continue
        seen.add((g, info[0]))
        gname = gnames[g] if g < len(gnames) and gnames[g] else f"#{g}"
        out.append(f"flex {names[info[0]]!r} collisions with geom {gname!r} "
                   f"({GEOM_TYPE_NAMES[int(geom_type[g])]})")
    fct = np.asarray(a.flex_contype)
    fca = np.asarray(a.flex_conaffinity)
    for f in range(nflex):
        if not (fct[f] or fca[f]):
            continue
        if int(np.asarray(a.flex_passive)[f]):
            out.append(f"flex {names[f]!r} passive contacts (passive=\"true\")")
        if int(np.asarray(a.flex_rigid)[f]) or not (int(fct[f]) & int(fca[f])):
            continue
    return out


# ------------------------------------------------------------------------------------
# device: plane against flex vertices
# ------------------------------------------------------------------------------------

@ti.kernel
def _narrow_plane_flex(
    override: ti.template(), o_margin: float,
    # candidates: flex_list[k] for k < nflexcand, each (g, -1) and (f, kind, sub, n)
    flex_list: ND, nflexcand: ti.i32, lanes: ti.i32, cand_geom: ND, cand_flex: ND,
    # model
    geom_margin: ND, flex_margin: ND, flex_radius: ND, flex_vertadr: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, flexvert_xpos: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    """mj_collidePlaneFlex over each candidate's chunk of vertices."""
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        k = lane
        while k < nflexcand and world_mask[worldid] != 0:
            cand = flex_list[k]
            k += lanes
            info = cand_flex[cand]
            if info[1] == PLANE_VERTS:
                g = cand_geom[0, cand, 0]
                f = info[0]
                margin = 0.0
                if ti.static(override):
                    margin = o_margin
                else:
                    margin = ti.max(geom_margin[param_row(worldid, geom_margin), g],
                                    flex_margin[f])
                radius = flex_radius[f]
                pos = geom_xpos[worldid, g]
                mat = geom_xmat[worldid, g]
                nrm = ti.Vector([mat[0, 2], mat[1, 2], mat[2, 2]])
                zero = ti.Vector([0.0, 0.0, 0.0])
                for i in range(info[3]):
                    v = flexvert_xpos[worldid, flex_vertadr[f] + info[2] + i]
                    dist = (v - pos).dot(nrm)
                    if dist <= margin + radius:
                        cdist = dist - radius
                        cpos = v + nrm * (-cdist * 0.5 - radius)
                        emit_one(worldid, cand * KEY_STRIDE + i, cdist, cpos, nrm, zero, ncon,
                                 contact_dist, contact_pos, contact_frame, contact_key)


# ------------------------------------------------------------------------------------
# device: parameters and ids of flex contacts (mj_contactParam, mj_setContact)
# ------------------------------------------------------------------------------------

@ti.kernel
def _finalize_flex(
    override: ti.template(), o_margin: float, osr0: float, osr1: float, osi0: float,
    osi1: float, osi2: float, osi3: float, osi4: float, of0: float, of1: float, of2: float,
    of3: float, of4: float,
    # candidates (sap_pairs: the element pairs of the self-collision sweeps' slots)
    cand_geom: ND, cand_flex: ND, sap_pairs: ND,
    # model
    geom_priority: ND, geom_condim: ND, geom_solmix: ND, geom_solref: ND, geom_solimp: ND,
    geom_friction: ND, geom_margin: ND, geom_gap: ND, flex_priority: ND, flex_condim: ND,
    flex_solmix: ND, flex_solref: ND, flex_solimp: ND, flex_friction: ND, flex_margin: ND,
    flex_gap: ND,
    # data
    ncon: ND, contact_key: ND, contact_dist: ND, contact_includemargin: ND,
    contact_friction: ND, contact_solref: ND, contact_solreffriction: ND,
    contact_solimp: ND, contact_dim: ND, contact_exclude: ND, contact_flex: ND,
    contact_elem: ND, contact_vert: ND,
):
    """Parameters and flex/elem/vert ids of the geom-flex contacts (after the geom
    pairs' finalize, which leaves them alone)."""
    nworld = ncon.shape[0]
    nconmax = contact_dist.shape[1]
    for worldid, conid in ti.ndrange(nworld, nconmax):
        if conid < ncon[worldid]:
            key = contact_key[worldid, conid]
            cand = key // KEY_STRIDE
            info = cand_flex[cand]
            f = info[0]
            if f >= 0:
                # side 1: geom g (geom-flex) or flex f1 (element pairs)
                g = cand_geom[0, cand, 0]
                kind = info[1]
                f1 = -1  # side 0's flex: none (a geom), f1 (element pairs), f (internal)
                if kind == ELEM_ELEM:
                    f1 = info[4]
                elif kind == ELEM_VERT or kind == TET_FACE or kind == SELF_SAP:
                    f1 = f
                p1 = 0
                c1 = 0
                mix1 = 0.0
                ref1 = ti.Vector([0.0, 0.0])
                imp1 = ti.Vector([0.0, 0.0, 0.0, 0.0, 0.0])
                fri1 = ti.Vector([0.0, 0.0, 0.0])
                margin1 = 0.0
                gap1 = 0.0
                if g >= 0:
                    p1 = geom_priority[g]
                    c1 = geom_condim[g]
                    mix1 = geom_solmix[param_row(worldid, geom_solmix), g]
                    ref1 = geom_solref[param_row(worldid, geom_solref), g]
                    imp1 = geom_solimp[param_row(worldid, geom_solimp), g]
                    fri1 = geom_friction[param_row(worldid, geom_friction), g]
                    margin1 = geom_margin[param_row(worldid, geom_margin), g]
                    gap1 = geom_gap[param_row(worldid, geom_gap), g]
                else:
                    p1 = flex_priority[f1]
                    c1 = flex_condim[f1]
                    mix1 = flex_solmix[f1]
                    ref1 = flex_solref[f1]
                    imp1 = flex_solimp[f1]
                    fri1 = flex_friction[f1]
                    margin1 = flex_margin[f1]
                    gap1 = flex_gap[f1]
                condim, solref, solimp, friction = contact_param(
                    p1, c1, mix1, ref1, imp1, fri1, flex_priority[f], flex_condim[f],
                    flex_solmix[f], flex_solref[f], flex_solimp[f], flex_friction[f])
                margin = ti.max(margin1, flex_margin[f])
                gap = ti.max(gap1, flex_gap[f])
                solreffriction = ti.Vector([0.0, 0.0])
                if ti.static(override):
                    margin = o_margin
                    solref = ti.Vector([osr0, osr1])
                    solreffriction = solref
                    solimp = ti.Vector([osi0, osi1, osi2, osi3, osi4])
                    friction = ti.Vector([of0, of1, of2, of3, of4])
                if f1 == f:  # self and internal collisions ignore margin and gap
                    margin = 0.0
                    gap = 0.0
                if kind == TET_FACE:
                    condim = 1
                for j in ti.static(range(5)):
                    friction[j] = ti.max(MINMU, friction[j])
                includemargin = margin - gap
                contact_dim[worldid, conid] = condim
                contact_includemargin[worldid, conid] = includemargin
                contact_solref[worldid, conid] = solref
                contact_solreffriction[worldid, conid] = solreffriction
                contact_solimp[worldid, conid] = solimp
                contact_friction[worldid, conid] = friction
                contact_exclude[worldid, conid] = \
                    1 if contact_dist[worldid, conid] >= includemargin else 0
                contact_flex[worldid, conid] = ti.Vector([f1, f])
                if kind == PLANE_VERTS:
                    contact_vert[worldid, conid] = ti.Vector([-1, info[2] + key % KEY_STRIDE])
                    contact_elem[worldid, conid] = ti.Vector([-1, -1])
                elif kind == ELEM_VERT:  # vertex v (side 0) in element e (side 1)
                    contact_vert[worldid, conid] = ti.Vector([info[4], -1])
                    contact_elem[worldid, conid] = ti.Vector([-1, info[2]])
                elif kind == TET_FACE:  # element e's face (side 0), its opposite vertex
                    contact_vert[worldid, conid] = ti.Vector([-1, info[4]])
                    contact_elem[worldid, conid] = ti.Vector([info[2], -1])
                elif kind == SELF_SAP:  # the sweep's pair of this slot
                    contact_vert[worldid, conid] = ti.Vector([-1, -1])
                    contact_elem[worldid, conid] = sap_pairs[worldid, info[2]]
                else:
                    contact_vert[worldid, conid] = ti.Vector([-1, -1])
                    f0 = -1
                    if kind == ELEM_ELEM:
                        f0 = info[5]
                    contact_elem[worldid, conid] = ti.Vector([f0, info[2]])


# ------------------------------------------------------------------------------------
# host
# ------------------------------------------------------------------------------------

def narrow_flex(m, d, plan, sweep) -> None:
    """The geom-flex candidates of the worlds in ``sweep.mask``: planes against
    vertices (one launch) and geoms against elements (collide_flex_elem)."""
    from .bind import launch
    opt = m.opt
    dist, pos, frame, key = sweep.emit
    if plan.elem_analytic or plan.elem_convex or plan.elem_elem:
        narrow_elem(m, d, plan, sweep)
    if not plan.plane_flex:
        return
    launch(_narrow_plane_flex, m, d, override=bool(opt.enabled("override")),
           o_margin=float(opt.o_margin), flex_list=plan.flex_list,
           nflexcand=plan.nflexcand, lanes=sweep.lists[2], cand_geom=sweep.cand[0],
           cand_flex=plan.cand_flex,
           world_mask=sweep.mask, contact_dist=dist, contact_pos=pos, contact_frame=frame,
           contact_key=key)


def finalize_flex(m, d, plan, cand) -> None:
    """Parameters and ids of the geom-flex contacts (after collision.finalize)."""
    from .bind import launch
    opt = m.opt
    osr0, osr1 = (float(x) for x in opt.o_solref)
    osi0, osi1, osi2, osi3, osi4 = (float(x) for x in opt.o_solimp)
    of0, of1, of2, of3, of4 = (float(x) for x in opt.o_friction)
    launch(_finalize_flex, m, d, override=bool(opt.enabled("override")),
           o_margin=float(opt.o_margin), osr0=osr0, osr1=osr1, osi0=osi0, osi1=osi1,
           osi2=osi2, osi3=osi3, osi4=osi4, of0=of0, of1=of1, of2=of2, of3=of3, of4=of4,
           cand_geom=cand[0], cand_flex=plan.cand_flex, sap_pairs=sap_pairs(m, d, plan))
