"""Collision driver: bounding filter, narrowphase dispatch, contact buffer, parameters.

The host driver (collision_driver.py) builds each model's candidate geom pairs once, in
MuJoCo's order, from the static filters (contype/conaffinity, weld and parent rules,
<exclude>, explicit <pair>s). On the device every (world, candidate) pair is tested:
bounding spheres (mj_filterSphere), then the pair's narrowphase function, which
fills a small local contact list (``ContactList``). ``emit`` claims buffer slots
with one atomic per contact and writes dist, pos, frame (normal and optional
tangent hint) and a sort key (candidate * 64 + detector index). ``finalize`` then
clamps to nconmax (counting what was dropped), sorts each world's contacts by key
(MuJoCo's order, reproducible despite atomics), and sets the mixed parameters,
includemargin, exclude and the completed frame as mj_collideGeoms/mj_setContact do.

Narrowphase functions (``kernels/collide_*.py``) share one signature::

    f(out, margin, pos1, mat1, size1, pos2, mat2, size2)

and call ``add(out, dist, pos, normal)`` / ``add_tangent(...)`` per contact; the
normal points from geom 1 to geom 2, geom 1 being the one of lower type (MuJoCo's
order). Convex and heightfield detectors, which need mesh/hfield data, run their
own kernels with the same ``emit``.
"""
import contextlib
import functools

import taichi as ti
from taichi.lang import impl

from . import config
from .bind import launch
from .consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD,
                     GEOM_MESH, GEOM_PLANE, GEOM_SDF, GEOM_SPHERE, MINMU, MINVAL,
                     NGEOMTYPES, WARN_CONTACTFULL)
from .math import param_row

ND = ti.types.ndarray()


KEY_STRIDE = 64


@functools.lru_cache(maxsize=None)
def _contact_list(n: int, precision: str):
    return ti.types.struct(n=ti.i32, dist=ti.types.vector(n, float),
                           pos=ti.types.matrix(n, 3, float),
                           normal=ti.types.matrix(n, 3, float),
                           tangent=ti.types.matrix(n, 3, float))


def contact_list(n: int):
    """The local contact-list struct type for detectors returning up to ``n`` contacts."""
    return _contact_list(int(n), config.precision())


@ti.func
def new_list(n: ti.template()):
    """An empty local contact list with room for ``n`` contacts."""
    return ti.types.struct(n=ti.i32, dist=ti.types.vector(n, float),
                           pos=ti.types.matrix(n, 3, float), normal=ti.types.matrix(n, 3, float),
                           tangent=ti.types.matrix(n, 3, float))(
        n=0, dist=ti.Vector.zero(float, n), pos=ti.Matrix.zero(float, n, 3),
        normal=ti.Matrix.zero(float, n, 3), tangent=ti.Matrix.zero(float, n, 3))


@ti.func
def add_tangent(out: ti.template(), dist, pos, normal, tangent):
    """Append one contact (silently ignored past the list's capacity, which each
    detector sizes to the most it can return)."""
    cap = ti.static(out.dist.n)
    if out.n < cap:
        i = out.n
        out.dist[i] = dist
        for k in ti.static(range(3)):
            out.pos[i, k] = pos[k]
            out.normal[i, k] = normal[k]
            out.tangent[i, k] = tangent[k]
        out.n += 1


@ti.func
def add(out: ti.template(), dist, pos, normal):
    add_tangent(out, dist, pos, normal, ti.Vector([0.0, 0.0, 0.0]))


@ti.func
def geom_pose(worldid, g, geom_xpos: ti.template(), geom_xmat: ti.template(),
              geom_size: ti.template()):
    pos = geom_xpos[worldid, g]
    mat = geom_xmat[worldid, g]
    size = geom_size[param_row(worldid, geom_size), g]
    return pos, mat, size


@ti.func
def pair_margin(worldid, g1, g2, pairid, geom_margin: ti.template(),
                pair_margin_arr: ti.template(), override: ti.template(), o_margin):
    """Margin of a candidate (mj_assignMargin of the geoms' max or the pair's)."""
    margin = 0.0
    if ti.static(override):
        margin = o_margin
    else:
        if pairid >= 0:
            margin = pair_margin_arr[param_row(worldid, pair_margin_arr), pairid]
        else:
            gw = param_row(worldid, geom_margin)
            margin = ti.max(geom_margin[gw, g1], geom_margin[gw, g2])
    return margin


@ti.func
def sphere_filter(worldid, g1, g2, margin, geom_type: ti.template(),
                  geom_rbound: ti.template(), geom_xpos: ti.template(),
                  geom_xmat: ti.template()):
    """True if the bounding spheres (or a plane's half space) rule contact out."""
    rw = param_row(worldid, geom_rbound)
    r1 = geom_rbound[rw, g1]
    r2 = geom_rbound[rw, g2]
    p1 = geom_xpos[worldid, g1]
    p2 = geom_xpos[worldid, g2]
    out = False
    if r1 > 0 and r2 > 0:
        bound = r1 + r2 + margin
        out = (p1 - p2).norm_sqr() > bound * bound
    else:
        if geom_type[g1] == GEOM_PLANE and r2 > 0:
            mat = geom_xmat[worldid, g1]
            normal = ti.Vector([mat[0, 2], mat[1, 2], mat[2, 2]])
            out = (p2 - p1).dot(normal) > margin + r2
        if geom_type[g2] == GEOM_PLANE and r1 > 0:
            mat = geom_xmat[worldid, g2]
            normal = ti.Vector([mat[0, 2], mat[1, 2], mat[2, 2]])
            out = out or (p1 - p2).dot(normal) > margin + r1
    return out


@ti.func
def list_count(worldid, kind, counts: ti.template(), world_mask: ti.template()):
    """How many candidates of detector ``kind`` the world tests (lists and counts are
    per world under sweep-and-prune, shared otherwise); 0 when the world is masked
    out. A negative count -1 - n says the world's sweep-and-prune list overflowed: it
    tests all n candidates of the kind, from the shared lists (list_entry).
    Narrowphase kernels run ``lanes`` threads per world, thread ``lane`` taking slots
    lane, lane + lanes, ... below this count."""
    n = 0
    if world_mask[worldid] != 0:
        n = counts[param_row(worldid, counts), kind]
        if n < 0:
            n = -1 - n
    return n


@ti.func
def list_entry(worldid, kind, k, lists: ti.template(), counts: ti.template(),
               all_lists: ti.template()):
    cand = 0
    if counts[param_row(worldid, counts), kind] < 0:
        cand = all_lists[0, kind, k]
    else:
        cand = lists[param_row(worldid, lists), kind, k]
    return cand


@ti.func
def near_pair(worldid, cand, cand_geom: ti.template(), cand_pair: ti.template(),
              geom_type: ti.template(), geom_rbound: ti.template(),
              geom_margin: ti.template(), pair_margin_arr: ti.template(),
              geom_xpos: ti.template(), geom_xmat: ti.template(), override: ti.template(),
              o_margin):
    """(g1, g2, margin, near) of a candidate: its geoms, its margin, and whether the
    bounding volumes leave contact possible. Candidate arrays are (1 or nworld, ncand,
    ...): the model's shared list, or each world's own (dynamic broadphase)."""
    cw = param_row(worldid, cand_geom)
    g1 = cand_geom[cw, cand, 0]
    g2 = cand_geom[cw, cand, 1]
    margin = pair_margin(worldid, g1, g2, cand_pair[cw, cand], geom_margin, pair_margin_arr,
                         override, o_margin)
    far = sphere_filter(worldid, g1, g2, margin, geom_type, geom_rbound, geom_xpos,
                        geom_xmat)
    return g1, g2, margin, not far


@ti.func
def emit(worldid, cand, out: ti.template(), ncon: ti.template(),
         contact_dist: ti.template(), contact_pos: ti.template(),
         contact_frame: ti.template(), contact_key: ti.template()):
    """Claim slots in the world's buffer for the listed contacts (ncon counts every
    claim, also past capacity: finalize turns the excess into contact_overflow)."""
    # unrolled over the list's capacity: a dynamic loop over the local list inside the
    # narrowphase's while loop lost entries on Vulkan (SPIR-V), e.g. 2 of 4 box corners
    for i in ti.static(range(out.dist.n)):
        if i < out.n:
            emit_one(worldid, cand * KEY_STRIDE + i, out.dist[i],
                     ti.Vector([out.pos[i, 0], out.pos[i, 1], out.pos[i, 2]]),
                     ti.Vector([out.normal[i, 0], out.normal[i, 1], out.normal[i, 2]]),
                     ti.Vector([out.tangent[i, 0], out.tangent[i, 1], out.tangent[i, 2]]),
                     ncon, contact_dist, contact_pos, contact_frame, contact_key)


@ti.func
def emit_one(worldid, key, dist, pos, normal, tangent, ncon: ti.template(),
             contact_dist: ti.template(), contact_pos: ti.template(),
             contact_frame: ti.template(), contact_key: ti.template()):
    """One contact with sort key ``key`` (candidate * KEY_STRIDE + detector index)."""
    nconmax = contact_dist.shape[1]
    slot = ti.atomic_add(ncon[worldid], 1)
    if slot >= nconmax and nconmax > 0:
        # full: replace the largest key if this one is smaller, so that an ordered
        # re-run (collision() does one for overflowing worlds) keeps the nconmax
        # contacts of lowest (candidate, index), whatever order detectors ran in
        slot = -1
        kmax = key
        for j in range(nconmax):
            if contact_key[worldid, j] > kmax:
                kmax = contact_key[worldid, j]
                slot = j
    if slot >= 0 and slot < nconmax:
        contact_dist[worldid, slot] = dist
        contact_pos[worldid, slot] = pos
        contact_frame[worldid, slot] = ti.Matrix([
            [normal[0], normal[1], normal[2]],
            [tangent[0], tangent[1], tangent[2]],
            [0.0, 0.0, 0.0]])
        contact_key[worldid, slot] = key


# ------------------------------------------------------------------------------------
# primitive narrowphase: one launch for every analytic pair type the model has
# ------------------------------------------------------------------------------------

PRIMITIVE_DETECTORS = {
    # (type1, type2): (module, function name, max contacts) -- MuJoCo's analytic pairs
    (GEOM_PLANE, GEOM_SPHERE): ("collide_primitive", "plane_sphere", 1),
    (GEOM_PLANE, GEOM_CAPSULE): ("collide_primitive", "plane_capsule", 2),
    (GEOM_PLANE, GEOM_CYLINDER): ("collide_primitive", "plane_cylinder", 4),
    (GEOM_PLANE, GEOM_BOX): ("collide_primitive", "plane_box", 4),
    (GEOM_SPHERE, GEOM_SPHERE): ("collide_primitive", "sphere_sphere", 1),
    (GEOM_SPHERE, GEOM_CAPSULE): ("collide_primitive", "sphere_capsule", 1),
    (GEOM_SPHERE, GEOM_CYLINDER): ("collide_primitive", "sphere_cylinder", 1),
    (GEOM_CAPSULE, GEOM_CAPSULE): ("collide_primitive", "capsule_capsule", 2),
    (GEOM_SPHERE, GEOM_BOX): ("collide_box", "sphere_box", 1),
    (GEOM_CAPSULE, GEOM_BOX): ("collide_box", "capsule_box", 2),
    (GEOM_BOX, GEOM_BOX): ("collide_box", "box_box", 9),
}


# MuJoCo's mjCOLLISIONFUNC: every type pair (t1 <= t2) that has a collision function, as
# the tiphys narrowphase kind that runs it; pairs not listed have none in MuJoCo either
# (plane-plane, plane-hfield, hfield-hfield). Analytic pairs are the "primitive" kind,
# with their device function in PRIMITIVE_DETECTORS.
_CONVEX_PAIRS = (
    (GEOM_PLANE, GEOM_ELLIPSOID), (GEOM_PLANE, GEOM_MESH),  # mjc_PlaneConvex
    (GEOM_SPHERE, GEOM_ELLIPSOID), (GEOM_SPHERE, GEOM_MESH),  # mjc_Convex from here on
    (GEOM_CAPSULE, GEOM_ELLIPSOID), (GEOM_CAPSULE, GEOM_CYLINDER), (GEOM_CAPSULE, GEOM_MESH),
    (GEOM_ELLIPSOID, GEOM_ELLIPSOID), (GEOM_ELLIPSOID, GEOM_CYLINDER),
    (GEOM_ELLIPSOID, GEOM_BOX), (GEOM_ELLIPSOID, GEOM_MESH),
    (GEOM_CYLINDER, GEOM_CYLINDER), (GEOM_CYLINDER, GEOM_BOX), (GEOM_CYLINDER, GEOM_MESH),
    (GEOM_BOX, GEOM_MESH), (GEOM_MESH, GEOM_MESH),
)
DETECTOR_KINDS = {
    **{pair: "primitive" for pair in PRIMITIVE_DETECTORS},
    **{pair: "convex" for pair in _CONVEX_PAIRS},
    **{(GEOM_HFIELD, t): "hfield"  # mjc_ConvexHField
       for t in (GEOM_SPHERE, GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX, GEOM_MESH)},
    **{(t, GEOM_SDF): "sdf" for t in range(NGEOMTYPES) if t != GEOM_PLANE},
    (GEOM_PLANE, GEOM_SDF): "convex",  # mjc_PlaneConvex on the sdf's mesh
}

# detector kinds with their own kernels, in the order of the plan's candidate lists
KINDS = ("primitive", "convex", "hfield", "sdf")


def detector_kind(t1: int, t2: int):
    """'primitive' | 'convex' | 'hfield' | 'sdf' | None for a type pair with t1 <= t2
    (MuJoCo's mjCOLLISIONFUNC table)."""
    return DETECTOR_KINDS.get((t1, t2))


@functools.cache
def primitive_table():
    """(type1, type2) -> (detector, max contacts) for every pair in PRIMITIVE_DETECTORS;
    a renamed module or function raises (ImportError / AttributeError): the table is
    static, a pair listed there is never "not implemented yet"."""
    import importlib
    table = {}
    for pair, (module, name, maxcon) in PRIMITIVE_DETECTORS.items():
        mod = importlib.import_module(f"{__package__}.{module}")
        table[pair] = (getattr(mod, name), maxcon)
    return table


@ti.kernel
def _narrow_primitive(
    code: ti.template(), detector: ti.template(), maxcon: ti.template(),
    override: ti.template(), o_margin: float,
    # candidates: lists[l, KIND_PRIMITIVE, k] for k < counts[l, 0], l = world or 0
    cand_geom: ND, cand_pair: ND, cand_code: ND, lists: ND, counts: ND, lanes: ti.i32,
    all_lists: ND, first: ti.i32, last: ti.i32,
    # model
    geom_type: ND, geom_size: ND, geom_rbound: ND, geom_margin: ND, pair_margin_arr: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    """The candidates of detector ``code`` among list slots first .. last-1 (the
    detector's range of the shared list, or all of a world's own list)."""
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        n = ti.min(list_count(worldid, 0, counts, world_mask), last)
        k = first + lane
        while k < n:
            cand = list_entry(worldid, 0, k, lists, counts, all_lists)
            k += lanes
            if cand_code[param_row(worldid, cand_code), cand] == code:
                g1, g2, margin, near = near_pair(worldid, cand, cand_geom, cand_pair,
                                                 geom_type, geom_rbound, geom_margin,
                                                 pair_margin_arr, geom_xpos, geom_xmat,
                                                 override, o_margin)
                if near:
                    pos1, mat1, size1 = geom_pose(worldid, g1, geom_xpos, geom_xmat,
                                                  geom_size)
                    pos2, mat2, size2 = geom_pose(worldid, g2, geom_xpos, geom_xmat,
                                                  geom_size)
                    out = new_list(maxcon)
                    detector(out, margin, pos1, mat1, size1, pos2, mat2, size2)
                    emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                         contact_key)


@contextlib.contextmanager
def compile_options(**options):
    """Taichi compile options set for the kernels launched inside, restored after.
    They are read when a kernel compiles (first launch or an offline-cache miss), so
    they are set around each launch."""
    cfg = impl.current_cfg()
    saved = {name: getattr(cfg, name) for name in options}
    for name, value in options.items():
        setattr(cfg, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(cfg, name, value)


def exact_math():
    """Compile without fast math: every product and sum rounded as MuJoCo's C rounds
    them (no fused multiply-add, no reassociation), so that exact ties in the analytic
    detectors (a box resting on a box, a corner on a clipping line) break as MuJoCo
    breaks them, whatever code surrounds them."""
    return compile_options(fast_math=False)


def narrow_primitive(m, d, plan, sweep):
    """Analytic pairs of the worlds in ``sweep.mask``: one launch per geom type pair the
    model has (a kernel per detector compiles once and serves every model)."""
    if plan.prim_count == 0:
        return
    opt = m.opt
    table = primitive_table()
    mask = sweep.mask
    lists, counts, lanes, all_lists = sweep.lists
    cand_geom, cand_pair, cand_code = sweep.cand
    dist, pos, frame, key = sweep.emit
    # the shared list (not a world's own: sweep-and-prune, a contact filter) is sorted
    # by detector, each launch taking its own range (collision_driver, prim_ranges)
    shared = lists is getattr(plan, "static_lists", None)
    for code in plan.prim_codes:
        detector, maxcon = table[(code // NGEOMTYPES, code % NGEOMTYPES)]
        first, last = plan.prim_ranges[code] if shared else (0, 1 << 30)
        with exact_math():
            launch(_narrow_primitive, m, d, code=code, detector=detector, maxcon=maxcon,
                   override=bool(opt.enabled("override")), o_margin=float(opt.o_margin),
                   cand_geom=cand_geom, cand_pair=cand_pair,
                   cand_code=cand_code, lists=lists, counts=counts, lanes=lanes,
                   all_lists=all_lists, first=first, last=last,
                   pair_margin_arr=m.pair_margin, world_mask=mask,
                   contact_dist=dist, contact_pos=pos, contact_frame=frame,
                   contact_key=key)


# ------------------------------------------------------------------------------------
# finalize: clamp, sort, parameters
# ------------------------------------------------------------------------------------

@ti.func
def make_frame(normal, hint):
    """mju_makeFrame: unit normal, tangent from the hint (or y/z axis), binormal."""
    n = normal / ti.max(normal.norm(), MINVAL)
    t = hint
    if t.dot(t) < 0.25:
        t = ti.Vector([0.0, 0.0, 0.0])
        if n[1] < 0.5 and n[1] > -0.5:
            t[1] = 1.0
        else:
            t[2] = 1.0
    t = t - n * n.dot(t)
    tnorm = t.norm()
    if tnorm < MINVAL:  # hint along the normal: mju_normalize3 gives the x axis
        t = ti.Vector([1.0, 0.0, 0.0])
    else:
        t = t / tnorm
    b = n.cross(t)
    return ti.Matrix.rows([n, t, b])


@ti.kernel
def _finalize_rank(ncon: ND, emit_key: ND, emit_dist: ND, emit_pos: ND, emit_frame: ND,
                   contact_key: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND):
    """Each emitted contact goes to slot = its rank by key (keys are unique: candidate
    * KEY_STRIDE + detector index), one thread per contact; ranks past nconmax are
    dropped, so a world keeps the nconmax contacts of lowest (candidate, index)
    whatever order the threads emitted them in."""
    nworld = ncon.shape[0]
    cap = emit_dist.shape[1]
    nconmax = contact_dist.shape[1]
    for worldid, i in ti.ndrange(nworld, cap):
        n = ti.min(ncon[worldid], cap)
        if i < n:
            key = emit_key[worldid, i]
            rank = 0
            for j in range(n):
                if emit_key[worldid, j] < key:
                    rank += 1
            if rank < nconmax:
                contact_key[worldid, rank] = key
                contact_dist[worldid, rank] = emit_dist[worldid, i]
                contact_pos[worldid, rank] = emit_pos[worldid, i]
                contact_frame[worldid, rank] = emit_frame[worldid, i]


@ti.kernel
def _clear_slots(lanes: ti.i32, ncand: ND, ccount: ND):
    for worldid, lane in ti.ndrange(ccount.shape[0], lanes):
        k = lane
        while k < ncand[worldid]:
            ccount[worldid, k] = 0
            k += lanes


@ti.kernel
def _count_keys(lanes: ti.i32, ncon: ND, emit_key: ND, ccount: ND):
    """Contacts per candidate slot: the emitted keys of a candidate are slot * 64 + 0,
    1, ... (one thread emits them all), so the largest index + 1 counts them."""
    cap = emit_key.shape[1]
    for worldid, lane in ti.ndrange(ncon.shape[0], lanes):
        i = lane
        while i < ti.min(ncon[worldid], cap):
            key = emit_key[worldid, i]
            ti.atomic_max(ccount[worldid, key // KEY_STRIDE], key % KEY_STRIDE + 1)
            i += lanes


@ti.kernel
def _scan_slots(ncand: ND, ccount: ND, coff: ND):
    """Each candidate slot's first rank (one thread per world, O(candidates))."""
    for worldid in range(ccount.shape[0]):
        total = 0
        for k in range(ncand[worldid]):
            coff[worldid, k] = total
            total += ccount[worldid, k]


@ti.kernel
def _finalize_ranked(lanes: ti.i32, ncon: ND, coff: ND, emit_key: ND, emit_dist: ND,
                     emit_pos: ND, emit_frame: ND, contact_key: ND, contact_dist: ND,
                     contact_pos: ND, contact_frame: ND):
    """Each emitted contact to slot = its candidate's first rank + its index: the rank
    of its key (what the world keeps is the lowest keys, so a candidate keeps a prefix
    of its contacts), without comparing keys: O(contacts) for the big scenes of the
    dynamic broadphase, where _finalize_rank is O(contacts^2)."""
    cap = emit_dist.shape[1]
    nconmax = contact_dist.shape[1]
    for worldid, lane in ti.ndrange(ncon.shape[0], lanes):
        i = lane
        while i < ti.min(ncon[worldid], cap):
            key = emit_key[worldid, i]
            rank = coff[worldid, key // KEY_STRIDE] + key % KEY_STRIDE
            if rank < nconmax:
                contact_key[worldid, rank] = key
                contact_dist[worldid, rank] = emit_dist[worldid, i]
                contact_pos[worldid, rank] = emit_pos[worldid, i]
                contact_frame[worldid, rank] = emit_frame[worldid, i]
            i += lanes


@ti.kernel
def _finalize_count(ncon: ND, contact_overflow: ND, warning_number: ND,
                    warning_lastinfo: ND, nconmax: ti.i32):
    """ncon clamped to nconmax and the excess counted in contact_overflow; a world that
    found more counts mjWARN_CONTACTFULL (lastinfo: how many it found), reported on
    the host by check_warnings."""
    for worldid in range(ncon.shape[0]):
        n = ncon[worldid]
        kept = ti.min(n, nconmax)
        contact_overflow[worldid] = n - kept
        ncon[worldid] = kept
        if n > kept:
            warning_number[worldid][WARN_CONTACTFULL] += 1
            warning_lastinfo[worldid][WARN_CONTACTFULL] = n


def emit_buffers(d, cap: int):
    """(dist, pos, frame, key) arrays of ``cap`` slots per world that the narrowphase
    kernels emit into (finalize sorts them into the contact arrays), made once per
    Data and capacity."""
    buffers = d.scratch.contact_emit
    if buffers is None:
        buffers = d.scratch.contact_emit = {}
    out = buffers.get(cap)
    if out is None:
        shape = (d.nworld, max(1, cap))
        fdt = config.float_dtype()
        tag = d.scratch.tag
        out = (tag(ti.ndarray(fdt, shape=shape)), tag(ti.Vector.ndarray(3, fdt, shape=shape)),
               tag(ti.Matrix.ndarray(3, 3, fdt, shape=shape)),
               tag(ti.ndarray(ti.i32, shape=shape)))
        buffers[cap] = out
    return out


@ti.func
def contact_param(p1, c1, mix1, ref1, imp1, fri1, p2, c2, mix2, ref2, imp2, fri2):
    """mj_contactParam's mixing of two sides' parameters: (condim, solref, solimp,
    5D friction)."""
    condim = 3
    solref = ti.Vector([0.0, 0.0])
    solimp = ti.Vector([0.0, 0.0, 0.0, 0.0, 0.0])
    fri = ti.Vector([0.0, 0.0, 0.0])
    if p1 > p2:
        condim = c1
        solref = ref1
        solimp = imp1
        fri = fri1
    elif p1 < p2:
        condim = c2
        solref = ref2
        solimp = imp2
        fri = fri2
    else:
        condim = ti.max(c1, c2)
        mix = 0.5
        if mix1 >= MINVAL and mix2 >= MINVAL:
            mix = mix1 / (mix1 + mix2)
        elif mix1 < MINVAL and mix2 < MINVAL:
            mix = 0.5
        elif mix1 < MINVAL:
            mix = 0.0
        else:
            mix = 1.0
        if ref1[0] > 0 and ref2[0] > 0:
            solref = mix * ref1 + (1.0 - mix) * ref2
        else:
            solref = ti.min(ref1, ref2)
        solimp = mix * imp1 + (1.0 - mix) * imp2
        fri = ti.max(fri1, fri2)
    return condim, solref, solimp, ti.Vector([fri[0], fri[0], fri[1], fri[2], fri[2]])


@ti.kernel
def _finalize(
    override: ti.template(), osr0: float, osr1: float, osi0: float, osi1: float,
    osi2: float, osi3: float, osi4: float, of0: float, of1: float, of2: float, of3: float,
    of4: float,
    # candidates
    cand_geom: ND, cand_pair: ND, cand_margin_override: float,
    # model
    geom_priority: ND, geom_condim: ND, geom_solmix: ND, geom_solref: ND, geom_solimp: ND,
    geom_friction: ND, geom_margin: ND, geom_gap: ND,
    pair_dim: ND, pair_solref: ND, pair_solreffriction: ND, pair_solimp: ND,
    pair_margin_arr: ND, pair_gap: ND, pair_friction: ND,
    # data
    ncon: ND, contact_dist: ND, contact_key: ND, contact_includemargin: ND,
    contact_friction: ND, contact_solref: ND, contact_solreffriction: ND, contact_solimp: ND,
    contact_dim: ND, contact_exclude: ND,
):
    nworld = ncon.shape[0]
    nconmax = contact_dist.shape[1]
    for worldid, conid in ti.ndrange(nworld, nconmax):
        if conid < ncon[worldid]:
            cand = contact_key[worldid, conid] // KEY_STRIDE
            cw = param_row(worldid, cand_geom)
            g1 = cand_geom[cw, cand, 0]
            g2 = cand_geom[cw, cand, 1]
            if g2 < 0:  # a geom-flex contact: collide_flex.finalize_flex
                continue
            pairid = cand_pair[cw, cand]
            condim = 3
            margin = 0.0
            gap = 0.0
            solref = ti.Vector([0.0, 0.0])
            solreffriction = ti.Vector([0.0, 0.0])
            solimp = ti.Vector([0.0, 0.0, 0.0, 0.0, 0.0])
            friction = ti.Vector([0.0, 0.0, 0.0, 0.0, 0.0])
            if pairid >= 0:
                pw = param_row(worldid, pair_solref)
                condim = pair_dim[pairid]
                margin = pair_margin_arr[param_row(worldid, pair_margin_arr), pairid]
                gap = pair_gap[param_row(worldid, pair_gap), pairid]
                solref = pair_solref[pw, pairid]
                solimp = pair_solimp[param_row(worldid, pair_solimp), pairid]
                friction = pair_friction[param_row(worldid, pair_friction), pairid]
                srf = pair_solreffriction[param_row(worldid, pair_solreffriction), pairid]
                if srf[0] != 0 or srf[1] != 0:
                    solreffriction = srf
            else:
                gw = param_row(worldid, geom_margin)
                margin = ti.max(geom_margin[gw, g1], geom_margin[gw, g2])
                ggw = param_row(worldid, geom_gap)
                gap = ti.max(geom_gap[ggw, g1], geom_gap[ggw, g2])
                fw = param_row(worldid, geom_friction)
                rw = param_row(worldid, geom_solref)
                iw = param_row(worldid, geom_solimp)
                mw = param_row(worldid, geom_solmix)
                condim, solref, solimp, friction = contact_param(
                    geom_priority[g1], geom_condim[g1], geom_solmix[mw, g1],
                    geom_solref[rw, g1], geom_solimp[iw, g1], geom_friction[fw, g1],
                    geom_priority[g2], geom_condim[g2], geom_solmix[mw, g2],
                    geom_solref[rw, g2], geom_solimp[iw, g2], geom_friction[fw, g2])
            if ti.static(override):
                margin = cand_margin_override
                # (scalars: vector kernel arguments take Taichi's pre-init float type)
                solref = ti.Vector([osr0, osr1])
                solreffriction = solref  # mj_assignRef overrides both references
                solimp = ti.Vector([osi0, osi1, osi2, osi3, osi4])
                friction = ti.Vector([of0, of1, of2, of3, of4])
            for k in ti.static(range(5)):
                friction[k] = ti.max(MINMU, friction[k])
            includemargin = margin - gap
            dist = contact_dist[worldid, conid]
            contact_dim[worldid, conid] = condim
            contact_includemargin[worldid, conid] = includemargin
            contact_solref[worldid, conid] = solref
            contact_solreffriction[worldid, conid] = solreffriction
            contact_solimp[worldid, conid] = solimp
            contact_friction[worldid, conid] = friction
            contact_exclude[worldid, conid] = 1 if dist >= includemargin else 0


@ti.kernel
def _finalize_ids(cand_geom: ND, ncon: ND, contact_key: ND, contact_frame: ND,
                  contact_mu: ND, contact_geom: ND, contact_flex: ND, contact_elem: ND,
                  contact_vert: ND, contact_efc_address: ND):
    nworld = ncon.shape[0]
    nconmax = contact_key.shape[1]
    for worldid, conid in ti.ndrange(nworld, nconmax):
        if conid < ncon[worldid]:
            cand = contact_key[worldid, conid] // KEY_STRIDE
            frame = contact_frame[worldid, conid]
            contact_frame[worldid, conid] = make_frame(
                ti.Vector([frame[0, 0], frame[0, 1], frame[0, 2]]),
                ti.Vector([frame[1, 0], frame[1, 1], frame[1, 2]]))
            contact_efc_address[worldid, conid] = -1
            contact_mu[worldid, conid] = 0.0
            cw = param_row(worldid, cand_geom)
            contact_geom[worldid, conid] = ti.Vector([cand_geom[cw, cand, 0],
                                                      cand_geom[cw, cand, 1]])
            contact_flex[worldid, conid] = ti.Vector([-1, -1])
            contact_elem[worldid, conid] = ti.Vector([-1, -1])
            contact_vert[worldid, conid] = ti.Vector([-1, -1])


def finalize(m, d, cand, emit, order=None):
    """Sort each world's emitted contacts into MuJoCo's order, keep the first nconmax
    (contact_overflow counts the rest), and set their parameters (mj_contactParam,
    mj_setContact). ``cand``: the (cand_geom, cand_pair, cand_code) arrays the keys
    index; ``emit``: the emission buffers (emit_buffers); ``order``: None (rank each
    contact by comparing keys, in parallel) or, for per-world candidate lists (big
    scenes), (ncand, ccount, coff, lanes): the worlds' candidate counts, two (nworld,
    candidate capacity) int arrays to count and offset the contacts of each candidate
    in, and threads per world."""
    opt = m.opt
    cand_geom, cand_pair, _ = cand
    dist, pos, frame, key = emit
    if order is None:
        launch(_finalize_rank, m, d, emit_key=key, emit_dist=dist, emit_pos=pos,
               emit_frame=frame)
    else:
        ncand, ccount, coff, lanes = order
        launch(_clear_slots, m, d, lanes=lanes, ncand=ncand, ccount=ccount)
        launch(_count_keys, m, d, lanes=lanes, emit_key=key, ccount=ccount)
        launch(_scan_slots, m, d, ncand=ncand, ccount=ccount, coff=coff)
        launch(_finalize_ranked, m, d, lanes=lanes, coff=coff, emit_key=key, emit_dist=dist,
               emit_pos=pos, emit_frame=frame)
    launch(_finalize_count, m, d, nconmax=d.nconmax)
    osr0, osr1 = (float(x) for x in opt.o_solref)
    osi0, osi1, osi2, osi3, osi4 = (float(x) for x in opt.o_solimp)
    of0, of1, of2, of3, of4 = (float(x) for x in opt.o_friction)
    launch(_finalize, m, d, override=bool(opt.enabled("override")), osr0=osr0, osr1=osr1,
           osi0=osi0, osi1=osi1, osi2=osi2, osi3=osi3, osi4=osi4, of0=of0, of1=of1,
           of2=of2, of3=of3, of4=of4, cand_geom=cand_geom, cand_pair=cand_pair,
           cand_margin_override=float(opt.o_margin), pair_margin_arr=m.pair_margin)
    launch(_finalize_ids, m, d, cand_geom=cand_geom)


@ti.kernel
def _flag_overflow(ncon: ND, emit_key: ND, redo: ND):
    """After the parallel narrowphase: a world that emitted more contacts than its
    emission buffer holds (its threads raced for the last slots) is marked for the
    ordered re-run and its contacts are cleared."""
    cap = emit_key.shape[1]
    for worldid in range(ncon.shape[0]):
        redo[worldid] = 0
        if ncon[worldid] > cap:
            redo[worldid] = 1
            ncon[worldid] = 0


def flag_overflow(d, emit, redo):
    _flag_overflow(d.ncon, emit[3], redo)


# ---------------------------------------------------------------------------------------
# mj_addContact: contacts given by the user, appended to the worlds' lists
# ---------------------------------------------------------------------------------------

@ti.kernel
def _add_contacts(world: ND, slot: ND, geom: ND, pos: ND, frame: ND, dist: ND, dim: ND,
                  friction: ND, solref: ND, solreffriction: ND, solimp: ND,
                  includemargin: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND,
                  contact_includemargin: ND, contact_friction: ND, contact_solref: ND,
                  contact_solreffriction: ND, contact_solimp: ND, contact_dim: ND,
                  contact_geom: ND, contact_flex: ND, contact_elem: ND, contact_vert: ND,
                  contact_exclude: ND, contact_efc_address: ND):
    for k in range(world.shape[0]):
        w = world[k]
        c = slot[k]
        if c >= 0:
            contact_dist[w, c] = dist[k]
            contact_includemargin[w, c] = includemargin[k]
            contact_dim[w, c] = dim[k]
            contact_exclude[w, c] = 0
            contact_efc_address[w, c] = -1
            for i in ti.static(range(2)):
                contact_geom[w, c][i] = geom[k, i]
                contact_flex[w, c][i] = -1
                contact_elem[w, c][i] = -1
                contact_vert[w, c][i] = -1
                contact_solref[w, c][i] = solref[k, i]
                contact_solreffriction[w, c][i] = solreffriction[k, i]
            for i in ti.static(range(3)):
                contact_pos[w, c][i] = pos[k, i]
                for j in ti.static(range(3)):
                    contact_frame[w, c][i, j] = frame[k, i, j]
            for i in ti.static(range(5)):
                contact_friction[w, c][i] = friction[k, i]
                contact_solimp[w, c][i] = solimp[k, i]


def add_contacts(d, world, slot, values: dict):
    """Write the user's contacts into their slots (slot -1: dropped); one launch."""
    _add_contacts(world, slot, values["geom"], values["pos"], values["frame"],
                  values["dist"], values["dim"], values["friction"], values["solref"],
                  values["solreffriction"], values["solimp"], values["includemargin"],
                  d.contact_dist, d.contact_pos, d.contact_frame, d.contact_includemargin,
                  d.contact_friction, d.contact_solref, d.contact_solreffriction,
                  d.contact_solimp, d.contact_dim, d.contact_geom, d.contact_flex,
                  d.contact_elem, d.contact_vert, d.contact_exclude, d.contact_efc_address)
