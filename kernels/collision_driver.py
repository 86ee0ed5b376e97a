"""The collision stage's host driver: candidate pairs, buffers, the stage itself.

The static part of MuJoCo's broadphase is decided once per model here: which geom
pairs may ever collide (body-level contype/conaffinity, weld and parent filters,
<exclude>, geom-level bitmasks, a detector for the type pair) and the explicit
<pair>s, merged by body signature exactly as mj_collision does, so that the
candidate order is MuJoCo's contact order. Flex candidates (geom-vertex,
geom-element, element-element: kernels/collide_flex.py) are merged in by bodyflex
signature. The device then tests bounding volumes and runs the detectors for every
(world, candidate) (collision.py and the detector modules beside it).

With a contact-filter callback installed (kernels/callbacks.py, MuJoCo's
mjcb_contactfilter), the candidates are the geom pairs MuJoCo hands its filter (no
geom-level bitmask test), the callback marks the pairs to drop in each world, and
each world's detector lists are rebuilt without them before the narrowphase
(kernels/contact_filter.py); sweep-and-prune is then not used, and the dynamic
broadphase refuses the filter.
"""
from __future__ import annotations

import weakref
from types import SimpleNamespace

import numpy as np
import taichi as ti

from . import callbacks
from . import collision as kc
from .collision import DETECTOR_KINDS, KINDS, detector_kind
from .consts import (GEOM_HFIELD, GEOM_PLANE, GEOM_SDF, GEOM_TYPE_NAMES, MAXCONPAIR, NGEOMTYPES,
                     WARN_CONTACTFULL)

PRIMITIVE_MAXCON = {pair: v[2] for pair, v in kc.PRIMITIVE_DETECTORS.items()}

# narrowphase kind -> (module in tiphys.kernels, host function that runs its launch)
NARROWPHASE = {
    "primitive": ("collision", "narrow_primitive"),
    "convex": ("collide_convex", "narrow_convex"),
    "hfield": ("collide_hfield", "narrow_hfield"),
    "sdf": ("collide_sdf", "narrow_sdf"),
}

# pairs MuJoCo collides and tiphys does not yet: a model with such a candidate pair
# raises NotImplementedError naming the pair (check_detectors)
NOT_YET_PAIRS: set = set()


def narrowphase(kind: str):
    """The host function of a narrowphase kind (NARROWPHASE); a renamed module or
    function raises ImportError / AttributeError, never passes as "not yet"."""
    import importlib
    module, name = NARROWPHASE[kind]
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _pair_ok_bitmask(ct1, ca1, ct2, ca2) -> bool:
    return bool((ct1 & ca2) or (ct2 & ca1))


def candidate_pairs(a, opt):
    """Geom-pair candidates in MuJoCo's order: list of (g1, g2, pairid), with g1 the
    geom of lower type (as mj_collideGeoms orders them) and pairid -1 unless explicit."""
    return [e[:3] for e in candidate_entries(a, opt) if e[3] is None]


def candidate_entries(a, opt, user_filter: bool = False):
    """Every candidate in MuJoCo's order: geom pairs as (g1, g2, pairid, None) and the
    flex candidates of collide_flex.flex_entries as (g or -1, -1, -1, (f, kind, sub,
    maxcon, f1, e1)), merged by bodyflex signature as mj_collision merges them.
    ``user_filter``: a contact-filter callback replaces the geom-level bitmask test
    (mj_collideGeoms); only a midphase body pair still leaves out the geoms without
    contype and conaffinity (they are no leaves of the bodies' BVHs)."""
    nbody = len(a.body_parentid)
    if opt.disabled("constraint") or opt.disabled("contact") or nbody + _nflex(a) < 2:
        return []
    geom_type = np.asarray(a.geom_type)
    contype = np.asarray(a.geom_contype)
    conaff = np.asarray(a.geom_conaffinity)
    gadr = np.asarray(a.body_geomadr)
    gnum = np.asarray(a.body_geomnum)
    weld = np.asarray(a.body_weldid)
    parent = np.asarray(a.body_parentid)
    npair = len(a.pair_geom1)
    excl = set(int(s) for s in np.asarray(a.exclude_signature))
    filterparent = not opt.disabled("filterparent")
    midphase = not opt.disabled("midphase")
    bct = np.zeros(nbody, dtype=np.int64)
    bca = np.zeros(nbody, dtype=np.int64)
    for b in range(nbody):
        for g in range(gadr[b], gadr[b] + gnum[b]):
            bct[b] |= contype[g]
            bca[b] |= conaff[g]

    entries = []  # (signature, 0 explicit / 1 dynamic, order, (g1, g2, pairid))
    explicit = {}
    for p in range(npair):
        g1, g2 = int(a.pair_geom1[p]), int(a.pair_geom2[p])
        sig = int(a.pair_signature[p])
        explicit.setdefault(sig, set()).update({(g1, g2), (g2, g1)})
        entries.append((sig, 0, p, _ordered(geom_type, g1, g2, p)))
    order = 0
    from .collide_flex import flex_entries
    for sig, item in flex_entries(a, opt, bct, bca, excl):
        entries.append((sig, 1, order, item))
        order += 1
    for b1 in range(nbody):
        if not (bct[b1] or bca[b1]) or gnum[b1] == 0:
            continue
        for b2 in range(b1 + 1, nbody):
            if not (bct[b2] or bca[b2]) or gnum[b2] == 0:
                continue
            if not _pair_ok_bitmask(bct[b1], bca[b1], bct[b2], bca[b2]):
                continue
            w1, w2 = weld[b1], weld[b2]
            if w1 == w2:
                continue
            if filterparent and w1 != 0 and w2 != 0 and \
                    (w1 == weld[parent[w2]] or w2 == weld[parent[w1]]):
                continue
            sig = (b1 << 16) + b2
            if sig in excl:
                continue
            merged = explicit.get(sig, ())
            found = []
            tree = midphase and (gnum[b1] > 1 or gnum[b2] > 1)
            for g1 in range(gadr[b1], gadr[b1] + gnum[b1]):
                for g2 in range(gadr[b2], gadr[b2] + gnum[b2]):
                    if (g1, g2) in merged:
                        continue
                    if not user_filter:
                        if not _pair_ok_bitmask(contype[g1], conaff[g1], contype[g2],
                                                conaff[g2]):
                            continue
                    elif tree and not ((contype[g1] or conaff[g1]) and
                                       (contype[g2] or conaff[g2])):
                        continue
                    t1, t2 = sorted((geom_type[g1], geom_type[g2]))
                    if detector_kind(t1, t2) is None:
                        continue
                    found.append(_ordered(geom_type, g1, g2, -1))
            if tree:
                # MuJoCo collides such a body pair through its midphase (mj_collideTree),
                # whose contacts come sorted by (geom1, geom2), geom1 the one of lower
                # type, instead of in the bodies' geom order
                found.sort()
            for pair in found:
                entries.append((sig, 1, order, pair))
                order += 1
    entries.sort(key=lambda e: e[:3])
    out = []
    for e in entries:
        g1, g2, p, flexinfo = e[3]
        if flexinfo is None and detector_kind(geom_type[g1], geom_type[g2]) is None:
            continue  # explicit pair of a type pair without a detector
        out.append(e[3])
    return out


def _nflex(a) -> int:
    return len(np.asarray(a.flex_dim))


def _ordered(geom_type, g1, g2, p):
    if geom_type[g1] > geom_type[g2]:
        g1, g2 = g2, g1
    return (int(g1), int(g2), int(p), None)


def _maxcon(kind, t1, t2):
    if kind == "primitive":
        return PRIMITIVE_MAXCON[(t1, t2)]
    if kind in ("hfield", "sdf"):
        return MAXCONPAIR
    return 5 if kind == "convex" else 1


# dynamic broadphase (kernels/broadphase_dynamic.py) when the collidable geoms that have
# a bounding sphere could form at least this many pairs: no pair is enumerated on the
# host, each world builds its candidate list on the device every step
DYNAMIC_MIN_PAIRS = 200_000
DYNAMIC_PAIRS_PER_BODY = 16  # default nbroadmax: body pairs per swept moving body ...
DYNAMIC_CONTACTS_PER_GEOM = 8  # ... and default nconmax: contacts per moving geom

SAP_MIN_CANDIDATES = 2000  # sweep-and-prune above this many boundable candidates
SAP_AXIS = np.array([1.0, 0.7, 0.3]) / np.linalg.norm([1.0, 0.7, 0.3])  # oblique: stacks
# and grids aligned with the world axes do not all overlap along it
# two unit axes across SAP_AXIS (and each other): the sweep's pair test checks them too
_ACROSS_U = np.cross(SAP_AXIS, [0.0, 0.0, 1.0])
_ACROSS_U /= np.linalg.norm(_ACROSS_U)
SAP_ACROSS = (_ACROSS_U, np.cross(SAP_AXIS, _ACROSS_U))


class CollisionPlan(SimpleNamespace):
    """A model's candidate pairs on the device, grouped by detector kind."""

    def sweeps(self, d):
        """(first, redo): what the narrowphase kernels of each pass read, made once per
        Data. ``lists`` = (lists, counts, lanes, all_lists): lists[l, kind, k] for k <
        counts[l, kind] are candidate ids, l = world (sweep-and-prune) or 0 (every world
        tests all candidates of the kind); a world whose sweep-and-prune list
        overflowed has counts -1 - n and takes the n candidates of all_lists (the
        shared lists) instead; ``lanes`` threads per world share a list. ``mask``
        selects the worlds a pass runs, ``emit`` the buffers both passes emit into
        (EMIT_FACTOR x nconmax slots, or every contact the candidates can make if that
        is fewer). The first pass runs every world, in parallel lanes; finalize keeps
        the nconmax contacts of lowest key, so what a world keeps does not depend on
        thread timing. Only where a world can emit more than its buffer holds (big
        scenes) is there a redo pass: one thread per world over the shared lists in
        candidate order, for the worlds whose buffer overflowed (``redo`` is None when
        the buffer holds every contact the candidates can make)."""
        cached = self._sweeps.get(d)
        if cached is not None:
            return cached
        nw = d.nworld
        ones = ti.ndarray(ti.i32, shape=(nw,))
        ones.fill(1)
        if self.dynamic:
            return self._dynamic_sweeps(d, ones)
        shared = (self.static_lists, self.static_counts)
        sp = _sap_state(self, d) if self.sap else None
        if sp is not None:
            lists = (sp.lists, sp.counts, _narrow_lanes(sp.cap, d), self.static_lists)
        else:
            lists = (*shared, _narrow_lanes(self.static_cap, d), self.static_lists)
        cap = min(self.total_maxcon, EMIT_FACTOR * max(1, d.nconmax))
        emit = kc.emit_buffers(d, cap)
        cand = (self.cand_geom, self.cand_pair, self.cand_code)
        flt = _filter_state(self, d) if self.user_filter else None
        if flt is not None:
            shared = (flt.lists, flt.counts)
            lists = (*shared, _narrow_lanes(self.static_cap, d), self.static_lists)
        first = SimpleNamespace(lists=lists, mask=ones, sap=sp, dyn=None, emit=emit,
                                cand=cand, order=None, filter=flt)
        redo = None
        if self.total_maxcon > cap:
            redo_mask = ti.ndarray(ti.i32, shape=(nw,))
            redo_mask.fill(0)
            redo = SimpleNamespace(lists=(*shared, 1, self.static_lists), mask=redo_mask,
                                   emit=emit, cand=cand)
        self._sweeps[d] = (first, redo)
        return first, redo

    def _dynamic_sweeps(self, d, ones):
        """The passes of a dynamic-broadphase plan: each world's own candidate lists
        (kernels/broadphase_dynamic.py), in parallel lanes first, then one thread per
        world for the worlds whose emission buffer overflowed."""
        nw = d.nworld
        st = _dynamic_state(self, d)
        cand = (st.cand_geom, st.cand_pair, st.cand_code)
        ecap = EMIT_FACTOR * max(1, d.nconmax)
        emit = kc.emit_buffers(d, ecap)
        order = (st.ncand, st.ccount, st.coff, _lanes(max(ecap, st.cap), nw))
        lanes = _narrow_lanes(st.cap, d)
        first = SimpleNamespace(lists=(st.lists, st.counts, lanes, st.lists),
                                mask=ones, sap=None, dyn=st, emit=emit, cand=cand,
                                order=order, filter=None)
        redo_mask = ti.ndarray(ti.i32, shape=(nw,))
        redo_mask.fill(0)
        redo = SimpleNamespace(lists=(st.lists, st.counts, 1, st.lists), mask=redo_mask,
                               emit=emit, cand=cand)
        self._sweeps[d] = (first, redo)
        return first, redo


EMIT_FACTOR = 4  # emission buffer slots per contact slot (nconmax), at most
LANE_THREADS = 4096  # narrowphase threads per launch to aim for (worlds x lanes), CPU
LANE_THREADS_CUDA = 1 << 18  # the same on CUDA: ~2 resident threads per H100 core slot


def _lanes(cap, nworld):
    """Threads per world over a candidate list of capacity ``cap``: enough for about
    LANE_THREADS in all (CPU; LANE_THREADS_CUDA on CUDA, where one thread per world
    leaves most of the GPU idle and each thread scans its whole list), so that one
    world still spreads its pairs over the cores, while many worlds run few threads
    each, looping over short strides of the list instead of launching a thread for
    every (mostly empty) slot. Contacts are ranked by key after, so the lane count
    never changes results."""
    cuda = ti.lang.impl.current_cfg().arch == ti.cuda
    target = LANE_THREADS_CUDA if cuda else LANE_THREADS
    return int(max(1, min(cap, -(-target // nworld))))


def _narrow_lanes(cap, d):
    """The narrowphase's threads per world of Data ``d``: _lanes, except 1 where the
    launches run serial loops (a small load on the CPU: kernels/config.serial_loops),
    where lanes only split one thread's work and each would hold its own EPA scratch
    slot (~19 KB in f64; LANE_THREADS of them for one world)."""
    from .config import serial_loops
    return 1 if serial_loops(d.serial_load) else _lanes(cap, d.nworld)


def _int_array(values, shape):
    arr = ti.ndarray(ti.i32, shape=tuple(max(1, n) for n in shape))
    v = np.asarray(values, dtype=np.int32).reshape(shape)
    if v.size:
        full = np.zeros(arr.shape, dtype=np.int32)
        full[tuple(slice(0, n) for n in v.shape)] = v
        arr.from_numpy(full)
    return arr


def plan(m) -> CollisionPlan:
    """The model's collision plan (built on first use, rebuilt when options change)."""
    cached = m.plans.collision
    user_filter = callbacks.get("contactfilter") is not None
    key = (m.opt.disableflags, m.opt.enableflags, user_filter)
    if cached is not None and cached.key == key:
        return cached
    a = m.arrays
    if _dynamic(a, m.opt):
        p = _dynamic_plan(a, m.opt, key)
        p.user_filter = user_filter
        p.nflexcand = 0
        p.flex_entries = []
        p.dynamic_flex = [f for f in range(_nflex(a)) if
                          int(np.asarray(a.flex_contype)[f]) or
                          int(np.asarray(a.flex_conaffinity)[f])]
        m.plans.collision = p
        return p
    entries = candidate_entries(a, m.opt, user_filter)
    cands = [e[:3] for e in entries]
    geom_type = np.asarray(a.geom_type)
    kinds, codes, maxcons = [], [], []
    for g1, g2, _, flexinfo in entries:
        if flexinfo is not None:  # geom-flex: collide_flex, not a detector kind
            kinds.append("flex")
            codes.append(-1)
            maxcons.append(flexinfo[3])
            continue
        t1, t2 = int(geom_type[g1]), int(geom_type[g2])
        kind = detector_kind(t1, t2)
        kinds.append(kind)
        codes.append(t1 * NGEOMTYPES + t2)
        maxcons.append(_maxcon(kind, t1, t2))
    p = CollisionPlan(key=key, ncand=len(cands), kinds=kinds, dynamic=False,
                       _sweeps=weakref.WeakKeyDictionary())
    flex_list = [i for i, e in enumerate(entries) if e[3] is not None]
    p.flex_entries = entries if flex_list else []
    p.nflexcand = len(flex_list)
    p.flex_list = _int_array(flex_list, (len(flex_list),))
    cand_flex = np.full((max(1, len(cands)), 6), -1, dtype=np.int32)
    for i in flex_list:
        cand_flex[i] = entries[i][3]
    p.cand_flex = ti.Vector.ndarray(6, ti.i32, shape=(cand_flex.shape[0],))
    p.cand_flex.from_numpy(cand_flex)
    from .collide_flex import PLANE_VERTS
    from .collide_flex_elem import ELEM_ELEM, ELEM_VERT, SELF_SAP, TET_FACE, elem_kinds
    p.plane_flex = any(entries[i][3][1] == PLANE_VERTS for i in flex_list)
    p.elem_elem = any(entries[i][3][1] in (ELEM_ELEM, ELEM_VERT, TET_FACE, SELF_SAP)
                      for i in flex_list)
    _plan_flex_sap(p, a, m.opt,
                   [entries[i][3] for i in flex_list if entries[i][3][1] == SELF_SAP])
    p.elem_analytic, p.elem_convex = elem_kinds(a, p.flex_entries)
    # (1, ncand, ...): one list for every world (the dynamic broadphase has one each)
    p.cand_geom = _int_array([c[:2] for c in cands], (1, len(cands), 2))
    p.cand_pair = _int_array([c[2] for c in cands], (1, len(cands)))
    p.cand_code = _int_array(codes, (1, len(cands)))
    p.cand_host = np.array(cands, dtype=np.int64).reshape(-1, 3)
    p.total_maxcon = int(sum(maxcons))
    kind_id = [KINDS.index(k) if k in KINDS else -1 for k in kinds]
    p.cand_kind = _int_array(kind_id, (len(cands),))
    per_kind = [[i for i, k in enumerate(kind_id) if k == j] for j in range(len(KINDS))]
    # the primitive list by detector (code), so that each detector's launch takes its own
    # range of the shared list (prim_ranges) instead of testing every candidate's code;
    # the order does not matter: finalize sorts contacts by candidate
    prim = KINDS.index("primitive")
    per_kind[prim].sort(key=lambda i: (codes[i], i))
    p.prim_ranges = {}
    for pos, i in enumerate(per_kind[prim]):
        lo, _ = p.prim_ranges.get(codes[i], (pos, pos))
        p.prim_ranges[codes[i]] = (lo, pos + 1)
    p.static_cap = max([len(x) for x in per_kind] + [1])
    lists = np.full((1, len(KINDS), p.static_cap), -1, dtype=np.int32)
    for j, x in enumerate(per_kind):
        lists[0, j, :len(x)] = x
    p.static_lists = _int_array(lists, lists.shape)
    p.static_counts = _int_array([[len(x) for x in per_kind]], (1, len(KINDS)))
    for kind, x in zip(KINDS, per_kind):
        short = {"primitive": "prim"}.get(kind, kind)
        setattr(p, short + "_count", len(x))
        setattr(p, short + "_codes", tuple(sorted({codes[i] for i in x})))
        setattr(p, short + "_maxcon", max([maxcons[i] for i in x] + [1]))
    # the pairs a contact filter sees: geom pairs with a detector, not explicit
    filtered = [i for i, (g1, g2, pid) in enumerate(cands) if pid < 0 and kind_id[i] >= 0]
    p.user_filter = user_filter and bool(filtered)
    p.filter_geom = np.array([cands[i][:2] for i in filtered], dtype=np.int32).reshape(-1, 2)
    p.filter_geom.flags.writeable = False
    p.filter_index = np.full(max(1, len(cands)), -1, dtype=np.int32)
    p.filter_index[filtered] = np.arange(len(filtered))
    if p.user_filter:
        p.sap = False  # per-world filtered lists replace the sweep
    else:
        _plan_sap(p, a, cands, kind_id)
    m.plans.collision = p
    return p


def _filter_state(p, d) -> SimpleNamespace:
    """Per-Data arrays of the contact filter: each candidate's column in the
    callback's flags (or -1), and the worlds' filtered detector lists."""
    nw = d.nworld
    tag = d.scratch.tag
    index = tag(ti.ndarray(ti.i32, shape=p.filter_index.shape))
    index.from_numpy(p.filter_index)
    lists = tag(ti.ndarray(ti.i32, shape=(nw, len(KINDS), p.static_cap)))
    counts = tag(ti.ndarray(ti.i32, shape=(nw, len(KINDS))))
    return SimpleNamespace(index=index, lists=lists, counts=counts)


def _plan_flex_sap(p, a, opt, infos):
    """The self-collision midphases (SAP sweeps, BVH traversals): per flex its first slot,
    slot count and kind, its BVH, the most active elements one has
    (collide_flex_elem.flex_sap)."""
    from .collide_flex import self_sap
    flexes = sorted({info[0] for info in infos})
    p.sap_tree = _int_array([0 if self_sap(a, opt, f) else 1 for f in flexes],
                            (len(flexes),))
    base = [min(info[2] for info in infos if info[0] == f) for f in flexes]
    slots = [sum(1 for info in infos if info[0] == f) for f in flexes]
    p.sap_n = len(flexes)
    p.sap_nslot = len(infos)
    p.sap_flex = _int_array(flexes, (len(flexes),))
    p.sap_base = _int_array(base, (len(flexes),))
    p.sap_slots = _int_array(slots, (len(flexes),))
    p.sap_maxn = max([int(np.asarray(a.flex_elemnum)[f]) for f in flexes] + [1])
    # each flex's hierarchy over its active elements, as compiled (bvh_* at flex_bvhadr)
    children, nodeids, nodeadr, nodenum = [], [], [], []
    bvh_child = np.asarray(a.bvh_child).reshape(-1, 2)
    bvh_nodeid = np.asarray(a.bvh_nodeid).reshape(-1)
    for f in flexes:
        adr, num = int(np.asarray(a.flex_bvhadr)[f]), int(np.asarray(a.flex_bvhnum)[f])
        child = bvh_child[adr:adr + num] if num else np.zeros((0, 2), np.int32)
        nodeid = bvh_nodeid[adr:adr + num] if num else np.zeros(0, np.int32)
        nodeadr.append(sum(nodenum))
        nodenum.append(len(nodeid))
        children.append(child)
        nodeids.append(nodeid)
    child = np.concatenate(children) if children else np.zeros((0, 2), np.int32)
    p.sap_nodeadr = _int_array(nodeadr, (len(flexes),))
    p.sap_nodenum = _int_array(nodenum, (len(flexes),))
    p.sap_child = ti.Vector.ndarray(2, ti.i32, shape=(max(1, len(child)),))
    if len(child):
        p.sap_child.from_numpy(child.astype(np.int32))
    p.sap_nodeid = _int_array(np.concatenate(nodeids) if nodeids else [],
                              (int(sum(nodenum)),))
    p.sap_maxnode = max(nodenum + [1])


def _plan_sap(p, a, cands, kind_id):
    """Host tables for sweep-and-prune: which geoms are swept, the (geom, geom) ->
    candidate map over them, and the candidates every world keeps (planes, pairs)."""
    geom_type = np.asarray(a.geom_type)
    boundable = [i for i, (g1, g2, pid) in enumerate(cands) if pid < 0 and kind_id[i] >= 0
                 and geom_type[g1] != GEOM_PLANE and geom_type[g2] != GEOM_PLANE]
    p.sap = len(boundable) >= SAP_MIN_CANDIDATES
    if not p.sap:
        return
    geoms = sorted({int(g) for i in boundable for g in cands[i][:2]})
    local = {g: k for k, g in enumerate(geoms)}
    pairmap = np.full((len(geoms), len(geoms)), -1, dtype=np.int32)
    for i in boundable:
        g1, g2 = local[cands[i][0]], local[cands[i][1]]
        pairmap[min(g1, g2), max(g1, g2)] = i
    fixed = sorted(set(i for i in range(len(cands)) if kind_id[i] >= 0) - set(boundable))
    p.sap_geom = _int_array(geoms, (len(geoms),))
    p.sap_n = len(geoms)
    p.sap_pairmap = _int_array(pairmap, pairmap.shape)
    p.sap_fixed = _int_array(fixed, (len(fixed),))
    p.sap_nfixed = len(fixed)
    p.sap_cap = int(min(p.static_cap, len(fixed) + max(256, 16 * len(geoms))))


def _sap_state(p, d):
    """Per-Data sweep-and-prune scratch (persistent geom order)."""
    from . import config
    fdt = config.float_dtype()
    n, nw = p.sap_n, d.nworld
    return SimpleNamespace(
        initialized=False, nsap=n, sap_geom=p.sap_geom,
        pairmap=p.sap_pairmap, cand_geom=p.cand_geom, cand_pair=p.cand_pair,
        cand_kind=p.cand_kind, fixed=p.sap_fixed, nfixed=p.sap_nfixed, cap=p.sap_cap,
        all_counts=p.static_counts,
        axis=tuple(float(x) for x in SAP_AXIS),
        across=tuple(tuple(float(x) for x in v) for v in SAP_ACROSS),
        order=ti.ndarray(ti.i32, shape=(nw, n)), lo=ti.ndarray(fdt, shape=(nw, n)),
        hi=ti.ndarray(fdt, shape=(nw, n)), ctr=ti.Vector.ndarray(3, fdt, shape=(nw, n)),
        lists=ti.ndarray(ti.i32, shape=(nw, len(KINDS), p.sap_cap)),
        counts=ti.ndarray(ti.i32, shape=(nw, len(KINDS))),
        overflow=ti.ndarray(ti.i32, shape=(nw,)))


def _collidable(a) -> np.ndarray:
    return (np.asarray(a.geom_contype) != 0) | (np.asarray(a.geom_conaffinity) != 0)


def _dynamic(a, opt) -> bool:
    """Whether the model takes the dynamic broadphase (DYNAMIC_MIN_PAIRS), decided
    without enumerating pairs."""
    if opt.disabled("constraint") or opt.disabled("contact") or len(a.body_parentid) < 2:
        return False
    n = int(np.count_nonzero(_collidable(a) & (np.asarray(a.geom_type) != GEOM_PLANE)))
    return n * (n - 1) // 2 >= DYNAMIC_MIN_PAIRS


def _dynamic_plan(a, opt, key) -> CollisionPlan:
    """Static tables of the dynamic broadphase: the swept bodies, the explicit pairs and
    exclude signatures sorted, which type pairs may meet (the narrowphase launches)."""
    geom_type = np.asarray(a.geom_type)
    collidable = _collidable(a)
    gadr = np.asarray(a.body_geomadr)
    gnum = np.asarray(a.body_geomnum)
    weld = np.asarray(a.body_weldid)
    bct = np.asarray(a.body_contype)
    bca = np.asarray(a.body_conaffinity)
    rbound = np.asarray(a.geom_rbound).reshape(-1, len(geom_type))
    nbody = len(gadr)
    swept = [b for b in range(nbody) if (bct[b] or bca[b]) and gnum[b] > 0]
    infinite = 0
    for b in swept:
        g = np.arange(gadr[b], gadr[b] + gnum[b])
        g = g[collidable[g]]
        if np.any(rbound[:, g] <= 0):
            infinite += 1
    nmoving = sum(1 for b in swept if weld[b] != 0)
    # explicit pairs with a collision function, in mj_collision's order (signature, id)
    xpairs = []
    for pid in range(len(a.pair_geom1)):
        t1, t2 = sorted((int(geom_type[a.pair_geom1[pid]]), int(geom_type[a.pair_geom2[pid]])))
        if detector_kind(t1, t2) is not None:
            xpairs.append((int(a.pair_signature[pid]), pid, (t1, t2)))
    xpairs.sort()
    types = sorted({int(t) for t in geom_type[collidable]})
    type_pairs = {(t1, t2) for i, t1 in enumerate(types) for t2 in types[i:]
                  if detector_kind(t1, t2) is not None}
    type_pairs |= {x[2] for x in xpairs}
    typekind = np.full(NGEOMTYPES * NGEOMTYPES, -1, dtype=np.int32)
    for t1 in range(NGEOMTYPES):
        for t2 in range(t1, NGEOMTYPES):
            kind = detector_kind(t1, t2)
            if kind in KINDS:
                typekind[t1 * NGEOMTYPES + t2] = KINDS.index(kind)
    excl = sorted({int(x) for x in np.asarray(a.exclude_signature)})
    n = int(np.count_nonzero(collidable & (geom_type != GEOM_PLANE)))
    nplane = int(np.count_nonzero(collidable)) - n
    p = CollisionPlan(key=key, dynamic=True, sap=False, _sweeps=weakref.WeakKeyDictionary(),
                      # an upper bound of the candidates (none are enumerated)
                      ncand=n * (n - 1) // 2 + n * nplane + len(xpairs), type_pairs=type_pairs,
                      nsweep=len(swept), nmoving=nmoving, ninfinite=infinite,
                      nxpair=len(xpairs), nexclude=len(excl),
                      filterparent=not opt.disabled("filterparent"),
                      midphase=not opt.disabled("midphase"))
    p.bp_body = _int_array(swept, (len(swept),))
    p.bp_xsig = _int_array([x[0] for x in xpairs], (len(xpairs),))
    p.bp_xpair = _int_array([x[1] for x in xpairs], (len(xpairs),))
    p.bp_exclude = _int_array(excl, (len(excl),))
    p.bp_typekind = _int_array(typekind, typekind.shape)
    for kind in KINDS:
        short = {"primitive": "prim"}.get(kind, kind)
        pairs = [tp for tp in type_pairs if detector_kind(*tp) == kind]
        setattr(p, short + "_count", len(pairs))
        setattr(p, short + "_codes", tuple(sorted(t1 * NGEOMTYPES + t2 for t1, t2 in pairs)))
        setattr(p, short + "_maxcon",
                max([_maxcon(kind, t1, t2) for t1, t2 in pairs] + [1]))
    return p


def _dynamic_state(p, d):
    """Per-Data arrays of the dynamic broadphase: per swept body (order, boxes,
    intervals, pair counts) and per pair slot (d.nbroadmax of them)."""
    from . import config
    from .broadphase_dynamic import init_state
    fdt = config.float_dtype()
    nw, n = d.nworld, max(1, p.nsweep)
    cap = max(1, int(getattr(d, "nbroadmax", 0) or default_nbroadmax_of(p)))
    tag = d.scratch.tag

    def ints(*shape):
        return tag(ti.ndarray(ti.i32, shape=(nw, *shape)))

    st = SimpleNamespace(
        nsweep=p.nsweep, cap=cap, lanes=_lanes(cap, nw),
        axis=tuple(float(x) for x in SAP_AXIS),
        filterparent=p.filterparent, midphase=p.midphase, bp_body=p.bp_body,
        bp_exclude=p.bp_exclude, nexclude=p.nexclude, bp_xsig=p.bp_xsig,
        bp_xpair=p.bp_xpair, nxpair=p.nxpair, bp_typekind=p.bp_typekind,
        order=ints(n), lo=tag(ti.ndarray(fdt, shape=(nw, n))),
        hi=tag(ti.ndarray(fdt, shape=(nw, n))),
        box_lo=tag(ti.Vector.ndarray(3, fdt, shape=(nw, n))),
        box_hi=tag(ti.Vector.ndarray(3, fdt, shape=(nw, n))),
        slo=tag(ti.ndarray(fdt, shape=(nw, n))), shi=tag(ti.ndarray(fdt, shape=(nw, n))),
        sbox_lo=tag(ti.Vector.ndarray(3, fdt, shape=(nw, n))),
        sbox_hi=tag(ti.Vector.ndarray(3, fdt, shape=(nw, n))),
        bcount=ints(n), bstart=ints(n), bfill=ints(n), bowner=ints(cap), bpartner=ints(cap),
        nbpair=tag(ti.ndarray(ti.i32, shape=(nw,))),
        nraw=tag(ti.ndarray(ti.i32, shape=(nw,))), gcount=ints(cap), goff=ints(cap),
        xcount=ints(max(1, p.nxpair)), xoff=ints(max(1, p.nxpair)),
        ncand=tag(ti.ndarray(ti.i32, shape=(nw,))), cand_geom=ints(cap, 2),
        cand_pair=ints(cap), cand_code=ints(cap), lists=ints(len(KINDS), cap),
        ccount=ints(cap), coff=ints(cap),  # contacts per candidate (finalize)
        counts=ints(len(KINDS)))
    init_state(st)
    return st


def default_nbroadmax_of(p) -> int:
    return int(max(256, p.nmoving * (DYNAMIC_PAIRS_PER_BODY + p.ninfinite) + p.nxpair))


def collision_bytes(m, d) -> int:
    """Device bytes per world that collision keeps beside the Data fields: the
    emission buffers and, for dynamic-broadphase models, the broadphase arrays (made
    on the first collision; counted from the sizes here)."""
    p = plan(m)
    if p.ncand == 0:
        return 0
    fb = 8 if _precision() == "f64" else 4
    emit_cap = max(1, EMIT_FACTOR * max(1, d.nconmax))
    if not p.dynamic:
        emit_cap = min(p.total_maxcon, emit_cap)
    total = emit_cap * (13 * fb + 4)  # dist, pos, frame, key
    if p.dynamic:
        total += max(1, d.nbroadmax) * 8  # finalize's contacts per candidate
        n, cap = max(1, p.nsweep), max(1, d.nbroadmax)
        total += n * (4 * 4 + 16 * fb)  # order, counts, start, fill; intervals, boxes
        total += cap * 4 * (2 + 2 + 4 + len(KINDS))  # body pairs, offsets, cands, lists
        total += max(1, p.nxpair) * 8 + 4 * (2 + len(KINDS))
    return int(total)


def _precision() -> str:
    from .config import precision
    return precision()


def check_detectors(m) -> None:
    """NotImplementedError naming the geom type pairs tiphys cannot collide yet
    (NOT_YET_PAIRS; checked once per collision plan)."""
    p = plan(m)
    if getattr(p, "detectors_checked", False):
        return
    t = np.asarray(m.arrays.geom_type)
    if p.dynamic:
        missing = set(p.type_pairs) & NOT_YET_PAIRS
    else:
        missing = {(int(t[g1]), int(t[g2])) for g1, g2, _ in p.cand_host
                   if g2 >= 0} & NOT_YET_PAIRS
    if missing:
        raise NotImplementedError("collision: no detector yet for geom pairs " + ", ".join(
            sorted(f"{GEOM_TYPE_NAMES[a]}-{GEOM_TYPE_NAMES[b]}" for a, b in missing)))
    pairs = set(p.type_pairs) if p.dynamic else \
        {(int(t[g1]), int(t[g2])) for g1, g2, _ in p.cand_host if g2 >= 0}
    if (GEOM_HFIELD, GEOM_SDF) in pairs:
        import warnings
        warnings.warn("collision: hfield-sdf pairs give no contacts (MuJoCo 3.4.0's "
                      "mjc_HFieldSDF: 'HField vs SDF collision not yet supported!')",
                      RuntimeWarning, stacklevel=3)
    p.detectors_checked = True


def default_nconmax(m) -> int:
    """Contact slots per world: what the candidates could return, within reason."""
    p = plan(m)
    if p.ncand == 0:
        return 0
    moving = int(np.sum(np.asarray(m.arrays.body_weldid)[np.asarray(m.arrays.geom_bodyid)]
                        != 0))
    if p.dynamic:
        return int(max(64, DYNAMIC_CONTACTS_PER_GEOM * moving + p.nxpair))
    # flex: every plane-vertex contact, and for element candidates (there may be as
    # many as element pairs) a few contacts per element
    from .collide_flex import PLANE_VERTS
    flex = sum(e[3][3] for e in p.flex_entries if e[3] is not None and e[3][1] == PLANE_VERTS)
    if any(e[3] is not None and e[3][1] != PLANE_VERTS for e in p.flex_entries):
        flex += 4 * len(np.asarray(m.arrays.flex_elemlayer))
    # sdf pairs: one contact per start point that ends inside both geoms
    sdf = p.sdf_count * min(int(m.opt.sdf_initpoints), MAXCONPAIR)
    return int(min(p.total_maxcon, max(64, 8 * moving) + flex + sdf))


def default_nbroadmax(m) -> int:
    """Broadphase pair slots per world of the dynamic broadphase (0 for models on the
    static path): per swept moving body, DYNAMIC_PAIRS_PER_BODY neighbours plus one
    pair with each body whose box is infinite (planes), and the explicit pairs."""
    p = plan(m)
    if not p.dynamic:
        return 0
    return default_nbroadmax_of(p)


def collision(m, d) -> None:
    """Contacts of every world, as mj_collision: reads geom_xpos/geom_xmat (run
    kinematics first); writes ncon and the contact_* arrays (first ncon[w] slots of
    world w, in MuJoCo's order). When a world finds more than nconmax contacts, the
    first nconmax in pair order are kept, contact_overflow[w] counts the rest, and a
    RuntimeWarning names ``make_data(..., nconmax=)``."""
    p = plan(m)
    d.ncon.fill(0)
    if p.ncand == 0:
        return
    if d.nconmax == 0:
        raise ValueError(
            f"collision: this Data has nconmax=0 contact slots but the model has "
            f"{p.ncand} candidate geom pair(s); allocate slots with make_data(m, nworld, "
            f"nconmax=...) or turn contacts off with <flag contact=\"disable\"/>")
    check_detectors(m)
    if p.dynamic and p.user_filter:
        raise NotImplementedError(
            "collision: a contact-filter callback (set_contactfilter_callback) with the "
            f"dynamic broadphase (models whose geoms could form {DYNAMIC_MIN_PAIRS} pairs "
            "or more: kernels/collision_driver.py DYNAMIC_MIN_PAIRS) is not supported yet")
    first, redo = p.sweeps(d)
    if first.filter is not None:
        from .contact_filter import contact_filter
        contact_filter(m, d, p, first.filter)  # mjcb_contactfilter
    if first.sap is not None:
        from .broadphase import sap
        sap(m, d, first.sap)  # a world whose list overflows tests every candidate
    if first.dyn is not None:
        from .broadphase_dynamic import broadphase
        broadphase(m, d, first.dyn)
    _narrow(m, d, p, first)
    if redo is not None:
        # worlds whose emission buffer overflowed run again, one thread each in
        # candidate order, so that they keep the same contacts whatever the timing
        kc.flag_overflow(d, first.emit, redo.mask)
        _narrow(m, d, p, redo)
    kc.finalize(m, d, first.cand, first.emit, first.order)
    if p.nflexcand:
        from .collide_flex import finalize_flex
        finalize_flex(m, d, p, first.cand)


def _narrow(m, d, p, sweep):
    if p.nflexcand:
        from .collide_flex import narrow_flex
        narrow_flex(m, d, p, sweep)
    narrowphase("primitive")(m, d, p, sweep)
    if p.convex_count:
        narrowphase("convex")(m, d, p, sweep)
    if p.hfield_count:
        narrowphase("hfield")(m, d, p, sweep)
    if p.sdf_count:
        narrowphase("sdf")(m, d, p, sweep)


def add_contact(m, d, world, geom, pos, frame, dist, dim=3, friction=None, solref=None,
                solreffriction=None, solimp=None, includemargin=0.0) -> np.ndarray:
    """Append contacts to worlds' contact lists, as mj_addContact, several at once.

    ``world``: the world of each contact, shape (k,); ``geom`` (k, 2) geom ids;
    ``pos`` (k, 3); ``frame`` (k, 3, 3) (rows: normal, tangents); ``dist`` (k,);
    ``dim`` (k,) or one value; ``friction`` (k, 5), ``solref``/``solreffriction``
    (k, 2), ``solimp`` (k, 5), ``includemargin`` (k,): zero when not given, as a
    fresh mjContact's (solref = (0, 0) then means MuJoCo's defaults in
    make_constraint, as in MuJoCo). Contacts for one world are appended in the given
    order after its ncon contacts; flex/elem/vert are -1, exclude 0, efc_address -1
    (make_constraint fills it and contact_mu). Returns, per contact, 0 if added and 1
    if that world's buffer (nconmax) was full: then, as MuJoCo, mjWARN_CONTACTFULL is
    counted in ``warning_number`` (``warning_lastinfo`` = ncon) and in
    ``contact_overflow``. Call it after ``collision`` (or forward_skip's position
    stage) and before ``make_constraint``.
    """
    from .config import precision

    fdt = np.float64 if precision() == "f64" else np.float32
    world = np.atleast_1d(np.asarray(world, dtype=np.int64))
    k = world.shape[0]
    if np.any(world < 0) or np.any(world >= d.nworld):
        raise IndexError(f"add_contact: world out of range (nworld={d.nworld})")

    def arr(name, value, shape, dtype, default=0.0):
        v = np.full(shape, default, dtype=dtype) if value is None else \
            np.broadcast_to(np.asarray(value, dtype=dtype), shape).copy()
        if dtype != np.int32 and not np.all(np.isfinite(v)):
            raise ValueError(f"add_contact: {name} must be finite")
        return np.ascontiguousarray(v)

    values = {
        "geom": arr("geom", geom, (k, 2), np.int32),
        "pos": arr("pos", pos, (k, 3), fdt), "frame": arr("frame", frame, (k, 3, 3), fdt),
        "dist": arr("dist", dist, (k,), fdt), "dim": arr("dim", dim, (k,), np.int32),
        "friction": arr("friction", friction, (k, 5), fdt),
        "solref": arr("solref", solref, (k, 2), fdt),
        "solreffriction": arr("solreffriction", solreffriction, (k, 2), fdt),
        "solimp": arr("solimp", solimp, (k, 5), fdt),
        "includemargin": arr("includemargin", includemargin, (k,), fdt),
    }
    if np.any((values["geom"] < 0) | (values["geom"] >= m.ngeom)):
        raise ValueError(f"add_contact: geom ids must be in [0, ngeom={m.ngeom})")
    if not np.all(np.isin(values["dim"], (1, 3, 4, 6))):
        raise ValueError("add_contact: dim must be 1, 3, 4 or 6")
    ncon = d.ncon.to_numpy()
    nconmax = d.contact_dist.shape[1]
    slot = np.full(k, -1, dtype=np.int32)
    status = np.zeros(k, dtype=np.int32)
    full = []
    for i, w in enumerate(world):
        if ncon[w] < nconmax:
            slot[i] = ncon[w]
            ncon[w] += 1
        else:
            status[i] = 1
            full.append(w)
    kc.add_contacts(d, world.astype(np.int32), slot, values)
    d.ncon.from_numpy(ncon)
    if full:
        number = d.warning_number.to_numpy()
        lastinfo = d.warning_lastinfo.to_numpy()
        overflow = d.contact_overflow.to_numpy()
        for w in full:
            number[w, WARN_CONTACTFULL] += 1
            lastinfo[w, WARN_CONTACTFULL] = ncon[w]
            overflow[w] += 1
        d.warning_number.from_numpy(number)
        d.warning_lastinfo.from_numpy(lastinfo)
        d.contact_overflow.from_numpy(overflow)
    return status
