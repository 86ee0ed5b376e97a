"""General convex narrowphase (MuJoCo's mjc_Convex, mjc_PlaneConvex): the driver.

mjc_Convex serves every convex pair without an analytic detector. It is MuJoCo 3.4.0's
native ccd (engine_collision_gjk.c, the default unless the ``nativeccd`` disable flag
is set): GJK on the Minkowski difference of the two support functions and, when the
shapes overlap, EPA on an expanding polytope for the penetration depth. Each shape is
inflated by margin/2, so a contact exists for dist < margin. Spheres and capsules are
first shrunk to their point / segment and GJK runs in distance mode (a shallow contact
is that distance minus the radii); only when their cores overlap do GJK + EPA run on
the full shapes. The contact lies midway between the two witness points and its
normal points from geom 1 to geom 2. ``opt.ccd_iterations`` bounds GJK and EPA and
sizes the polytope, ``opt.ccd_tolerance`` is their tolerance (boxes and meshes without
margin converge exactly, as in MuJoCo).

The stages live in modules of their own:

- kernels/convex_support.py: the objects and their support functions (hill climbing
  on mesh hull graphs);
- kernels/gjk.py: GJK and its signed-volume subdistance;
- kernels/epa.py: EPA's polytope and its expansion;
- kernels/multiccd.py: MuJoCo's multicontact (face clipping);
- kernels/geom_distance.py: mj_geomDistance, which runs the same ccd in distance mode.

With the ``multiccd`` enable flag, box-mesh and mesh-mesh pairs without margin (the
pairs MuJoCo's maxContacts allows 4 contacts in one pass; box-box has its own
detector) run MuJoCo's multicontact after EPA (kernels/multiccd.py); where nothing
aligns the EPA contact stays alone. The other pairs but spheres and ellipsoids get up
to four more contacts from rotating both geoms by +-1e-3 rad about the first
contact's tangents and colliding again.

mjc_PlaneConvex (plane vs ellipsoid or mesh) takes the support point against the
plane normal and, for meshes, up to two more hull vertices next to it within the
margin.

The kernels are compiled without Taichi's advanced IR passes and without fast-math
(see ``_light_compile``): minutes of compile time become seconds, and f64 results then
follow MuJoCo's arithmetic to the last bits on polytopes.
"""
import math

import numpy as np
import taichi as ti

from .bind import launch
from .collision import (ND, add, compile_options, emit, geom_pose, list_count, list_entry,
                        make_frame, near_pair, new_list)
from .consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_ELLIPSOID, GEOM_MESH, GEOM_PLANE, GEOM_SDF,
                     GEOM_SPHERE)
from .convex_support import MAX_LIMIT, _hillclimb, _mesh_vertex, _new_obj, _normalize, _row
from .epa import (EPA_OK, Polytope, _clear_polytope, _epa, _polytope, polytope_capacity,
                  polytope_scratch)
from .gjk import _gjk, _new_status
from .math import param_row, quat2mat
from .multiccd import PolyInts, _multicontact, clip_rows, pack_poly_ints, polygon_capacity

MAX_PLANE_MESH = 3
TOL_PLANE_MESH = 0.3
MULTICCD_TOL = 1e-3  # distinct contacts: farther apart than this * min(rbound)
MULTICCD_SIN = math.sin(0.5e-3)  # perturbation of +-1e-3 rad, as a quaternion
MULTICCD_COS = math.cos(0.5e-3)

KIND_CONVEX = 1  # index of "convex" in collision.KINDS (the plan's candidate lists)


# ------------------------------------------------------------------------------------
# mjc_ccd, mjc_Convex, mjc_PlaneConvex
# ------------------------------------------------------------------------------------

@ti.func
def _ccd(st: ti.template(), o1: ti.template(), o2: ti.template(),
         pt: ti.template(), mesh_vert: ti.template(), mesh_graph: ti.template(), tol,
         kmax, cutoff):
    """mjc_ccd with one contact: st.dist < 0 is a penetration (witness points x1, x2),
    otherwise the distance up to ``cutoff`` (MAX_LIMIT beyond; intersection only when
    cutoff is 0). ``pt``: the thread's Polytope (kernels/epa.py) for EPA."""
    st.nx = 0
    st.nsimplex = 0
    st.dist = 0.0
    shrinkable = o1.type == GEOM_SPHERE or o1.type == GEOM_CAPSULE or o2.type == GEOM_SPHERE or \
        o2.type == GEOM_CAPSULE
    npass = 2 if shrinkable else 1
    margin1 = o1.margin
    margin2 = o2.margin
    done = False
    for p in range(npass):
        if not done:
            shrink = shrinkable and p == 0
            full1 = 0.0
            full2 = 0.0
            c = cutoff
            if shrink:
                if o1.type == GEOM_SPHERE or o1.type == GEOM_CAPSULE:
                    full1 = o1.size[0] + 0.5 * margin1
                    o1.margin = 0.0
                    o1.shrink = 1
                if o2.type == GEOM_SPHERE or o2.type == GEOM_CAPSULE:
                    full2 = o2.size[0] + 0.5 * margin2
                    o2.margin = 0.0
                    o2.shrink = 1
                c = cutoff + full1 + full2
            st.x1 = o1.pos
            st.x2 = o2.pos
            _gjk(st, o1, o2, mesh_vert, mesh_graph, tol, kmax, c)
            if shrink:
                o1.margin = margin1
                o2.margin = margin2
                o1.shrink = 0
                o2.shrink = 0
                if st.dist > tol:  # shallow: inflate the cores' distance
                    n = _normalize(st.x2 - st.x1)
                    st.x1 += full1 * n
                    st.x2 -= full2 * n
                    st.dist -= full1 + full2
                    if st.dist > cutoff:
                        st.dist = MAX_LIMIT
                    done = True
    if not done and st.dist <= tol and st.nsimplex > 1:
        st.dist = 0.0  # assume touching
        _clear_polytope(pt)
        if _polytope(pt, st, o1, o2, mesh_vert, mesh_graph) == EPA_OK:
            _epa(pt, st, o1, o2, mesh_vert, mesh_graph, tol, kmax)


@ti.func
def _axis_rotation(axis, sn):
    """mju_quat2Mat(mju_axisAngle2Quat(axis, angle)) with sin(angle/2) = sn."""
    return quat2mat(ti.Vector([MULTICCD_COS, axis[0] * sn, axis[1] * sn, axis[2] * sn]))


@ti.func
def _convex(out: ti.template(), o1: ti.template(), o2: ti.template(), margin, rbound1,
            rbound2, pt: ti.template(), multiccd: ti.template(),
            mesh_vert: ti.template(), mesh_graph: ti.template(), tol, kmax,
            polyadr1, polyadr2, polycap: ti.template(), poly: ti.template()):
    """mjc_Convex: one contact. With multiccd, box/mesh pairs without margin get up to
    four from clipping their touching faces (multicontact), the other pairs but
    spheres and ellipsoids up to four more from perturbed poses. ``poly``: the
    mesh_poly* arrays (normal, vertadr, vertnum, vert, mapadr, mapnum, map)."""
    pos1 = o1.pos
    mat1 = o1.mat
    pos2 = o2.pos
    mat2 = o2.mat
    npass = 5 if ti.static(multiccd) else 1
    perturb = False
    origin = ti.Vector([0.0, 0.0, 0.0])
    frame = ti.Matrix.identity(float, 3)
    tolerance = MULTICCD_TOL * ti.min(rbound1, rbound2)
    for p in range(npass):
        if p == 0 or perturb:
            if ti.static(multiccd):  # (a single pass, p = 0, without multiccd)
                if p > 0:
                    axis = _row(frame, 1 if p <= 2 else 2)
                    sn = -MULTICCD_SIN if p % 2 == 1 else MULTICCD_SIN
                    rot = _axis_rotation(axis, sn)
                    rel1 = origin - pos1
                    o1.mat = rot @ mat1
                    o1.pos = pos1 - (rot @ rel1 - rel1)
                    rel2 = origin - pos2
                    o2.mat = rot.transpose() @ mat2
                    o2.pos = pos2 - (rot.transpose() @ rel2 - rel2)
            st = _new_status()
            _ccd(st, o1, o2, pt, mesh_vert, mesh_graph, tol, kmax, 0.0)
            if st.dist < 0 and st.nx > 0:
                normal = _normalize(st.x1 - st.x2)
                pos = 0.5 * (st.x1 + st.x2)
                if p == 0:
                    nadd = 0
                    if ti.static(multiccd):
                        # maxContacts > 1 in MuJoCo: contacts from the mesh polygons /
                        # box faces after EPA, and no perturbations
                        native = (o1.type == GEOM_BOX or o1.type == GEOM_MESH) and \
                            (o2.type == GEOM_BOX or o2.type == GEOM_MESH) and margin <= 0
                        if native:
                            nadd = _multicontact(out, st, pt, o1, o2, margin + st.dist,
                                                 polyadr1, polyadr2, polycap, mesh_vert,
                                                 *poly)
                        smooth = o1.type == GEOM_SPHERE or o1.type == GEOM_ELLIPSOID or \
                            o2.type == GEOM_SPHERE or o2.type == GEOM_ELLIPSOID
                        perturb = not native and not smooth
                        origin = pos
                        frame = make_frame(normal, ti.Vector([0.0, 0.0, 0.0]))
                    if nadd == 0:
                        add(out, margin + st.dist, pos, normal)
                else:
                    distinct = True
                    for i in range(out.n):
                        if (_row(out.pos, i) - pos).norm() <= tolerance:
                            distinct = False
                    if distinct:
                        add(out, out.dist[0], pos, normal)
    o1.pos = pos1
    o1.mat = mat1
    o2.pos = pos2
    o2.mat = mat2


@ti.func
def _plane_convex(out: ti.template(), margin, pos1, mat1, o2: ti.template(), rbound2,
                  mesh_vert: ti.template(), mesh_graph: ti.template()):
    """mjc_PlaneConvex: the support point against the plane normal, and for a mesh up to
    two hull vertices around it within the margin."""
    normal = ti.Vector([mat1[0, 2], mat1[1, 2], mat1[2, 2]])
    direction = -normal
    mat2 = o2.mat
    pos2 = o2.pos
    local = mat2.transpose() @ direction
    vec = pos2
    if o2.type == GEOM_ELLIPSOID:
        size = o2.size
        vec = mat2 @ (_normalize(local * size) * size) + pos2
    if o2.type == GEOM_MESH:
        ibest = -1
        if o2.gadr < 0:
            best = -1e10
            for i in range(o2.vnum):
                vdot = local.dot(_mesh_vertex(mesh_vert, o2.vadr, i))
                if vdot > best:
                    best = vdot
                    ibest = i
            o2.midx = ibest
        else:
            ibest, midx = _hillclimb(o2.gadr, o2.vadr, o2.midx, local, mesh_vert,
                                     mesh_graph, 1)
            o2.midx = midx
        if ibest >= 0:
            vec = mat2 @ _mesh_vertex(mesh_vert, o2.vadr, ibest) + pos2
    dist = normal.dot(vec - pos1)
    if dist <= margin:
        add(out, dist, vec - normal * (0.5 * dist), normal)
        if o2.type == GEOM_MESH:
            threshold = normal.dot(pos2 - pos1) - margin
            first = vec - normal * (0.5 * dist)  # the first contact's position
            minsep = TOL_PLANE_MESH * rbound2
            if o2.gadr < 0:
                for i in range(o2.vnum):
                    if out.n < MAX_PLANE_MESH and i != o2.midx:
                        v = _mesh_vertex(mesh_vert, o2.vadr, i)
                        if local.dot(v) > threshold:
                            _add_plane_mesh(out, v, pos1, normal, pos2, mat2, first,
                                            minsep)
            elif o2.midx >= 0:
                gadr = o2.gadr
                numvert = mesh_graph[gadr]
                globalid = gadr + 2 + numvert
                edges = gadr + 2 + 2 * numvert
                i = mesh_graph[gadr + 2 + o2.midx]
                while mesh_graph[edges + i] >= 0 and out.n < MAX_PLANE_MESH:
                    v = _mesh_vertex(mesh_vert, o2.vadr,
                                     mesh_graph[globalid + mesh_graph[edges + i]])
                    if local.dot(v) > threshold:
                        _add_plane_mesh(out, v, pos1, normal, pos2, mat2, first, minsep)
                    i += 1


@ti.func
def _add_plane_mesh(out: ti.template(), v, pos1, normal, pos2, mat2, first, minsep):
    pnt = mat2 @ v + pos2
    if (pnt - first).norm() >= minsep:
        dist = normal.dot(pnt - pos1)
        add(out, dist, pnt - normal * (0.5 * dist), normal)


# ------------------------------------------------------------------------------------
# the narrowphase kernel
# ------------------------------------------------------------------------------------

@ti.func
def _object(worldid, g, margin, geom_type: ti.template(), geom_dataid: ti.template(),
            geom_size: ti.template(), geom_xpos: ti.template(), geom_xmat: ti.template(),
            mesh_vertadr: ti.template(), mesh_vertnum: ti.template(),
            mesh_graphadr: ti.template()):
    pos, mat, size = geom_pose(worldid, g, geom_xpos, geom_xmat, geom_size)
    gtype = geom_type[g]
    if gtype == GEOM_SDF:  # (mjc_PlaneConvex: an sdf geom's support is its mesh's)
        gtype = GEOM_MESH
    mesh_id = geom_dataid[g] if gtype == GEOM_MESH else -1
    return _new_obj(gtype, pos, mat, size, margin, mesh_id, mesh_vertadr, mesh_vertnum,
                    mesh_graphadr)


@ti.kernel
def _narrow_convex(
    cap: ti.template(), multiccd: ti.template(), maxcon: ti.template(),
    polycap: ti.template(), override: ti.template(),
    o_margin: float, tol: float, kmax: ti.i32,
    # candidates: lists[l, KIND_CONVEX, k] for k < counts[l, KIND_CONVEX], l = world or 0
    cand_geom: ND, cand_pair: ND, lists: ND, counts: ND, lanes: ti.i32,
    all_lists: ND,
    # model
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND, geom_margin: ND,
    pair_margin_arr: ND, mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND,
    mesh_vert: ND, mesh_graph: ND, mesh_polynormal: ND,
    poly_ints: ND,  # multiccd.POLY_INTS packed (mesh_polyadr, mesh_polyvertadr, ...)
    # scratch: one EPA polytope per thread (worldid * lanes + lane)
    epa_floats: ND, epa_ints: ND,
    # data
    geom_xpos: ND, geom_xmat: ND, world_mask: ND,
    ncon: ND, contact_dist: ND, contact_pos: ND, contact_frame: ND, contact_key: ND,
):
    nworld = geom_xpos.shape[0]
    for worldid, lane in ti.ndrange(nworld, lanes):
        n = list_count(worldid, KIND_CONVEX, counts, world_mask)
        pt = Polytope((epa_floats, epa_ints), worldid * lanes + lane, cap)
        k = lane
        while k < n:
            cand = list_entry(worldid, KIND_CONVEX, k, lists, counts, all_lists)
            k += lanes
            g1, g2, margin, near = near_pair(worldid, cand, cand_geom, cand_pair, geom_type,
                                             geom_rbound, geom_margin, pair_margin_arr,
                                             geom_xpos, geom_xmat, override, o_margin)
            if near:
                out = new_list(maxcon)
                rw = param_row(worldid, geom_rbound)
                o2 = _object(worldid, g2, margin, geom_type, geom_dataid, geom_size,
                             geom_xpos, geom_xmat, mesh_vertadr, mesh_vertnum,
                             mesh_graphadr)
                if geom_type[g1] == GEOM_PLANE:
                    o2.margin = 0.0
                    _plane_convex(out, margin, geom_xpos[worldid, g1], geom_xmat[worldid, g1],
                                  o2, geom_rbound[rw, g2], mesh_vert, mesh_graph)
                else:
                    o1 = _object(worldid, g1, margin, geom_type, geom_dataid, geom_size,
                                 geom_xpos, geom_xmat, mesh_vertadr, mesh_vertnum,
                                 mesh_graphadr)
                    polyadr1 = 0
                    polyadr2 = 0
                    if ti.static(multiccd):
                        mesh_polyadr = PolyInts(poly_ints, 0)
                        if o1.type == GEOM_MESH:
                            polyadr1 = mesh_polyadr[geom_dataid[g1]]
                        if o2.type == GEOM_MESH:
                            polyadr2 = mesh_polyadr[geom_dataid[g2]]
                    _convex(out, o1, o2, margin, geom_rbound[rw, g1], geom_rbound[rw, g2],
                            pt, multiccd, mesh_vert, mesh_graph, tol, kmax, polyadr1,
                            polyadr2, polycap,
                            (mesh_polynormal, PolyInts(poly_ints, 1), PolyInts(poly_ints, 2),
                             PolyInts(poly_ints, 3), PolyInts(poly_ints, 4),
                             PolyInts(poly_ints, 5), PolyInts(poly_ints, 6)))
                emit(worldid, cand, out, ncon, contact_dist, contact_pos, contact_frame,
                     contact_key)


def _light_compile():
    """Compile the kernels launched inside without Taichi's advanced IR optimizations
    and without fast-math.

    GJK + EPA inline into one large kernel whose compile time grows much faster than
    its size under those passes (the CFG pass above all: over 10 minutes instead of
    ~15 s; Genesis turns cfg_optimization off globally for the same reason); LLVM /
    SPIR-V optimize the result anyway. Without fast-math no operation is reordered
    or fused, so the f64 iterates are MuJoCo's."""
    return compile_options(advanced_optimization=False, fast_math=False)



def _check_options(opt):
    if opt.disabled("nativeccd"):
        raise NotImplementedError(
            "collision: libccd's MPR (option flag nativeccd=\"disable\") is not "
            "implemented; tiphys always runs MuJoCo's native ccd")


def _poly_ints(m, d):
    """multiccd's polygon ints of model ``m`` packed in one array (multiccd.POLY_INTS),
    made once per Data (and model)."""
    have = d.scratch.poly_ints
    if have is None or have[0] is not m.arrays:
        packed = pack_poly_ints(m.arrays)
        arr = d.scratch.tag(ti.ndarray(ti.i32, shape=(len(packed),)))
        arr.from_numpy(packed)
        have = d.scratch.poly_ints = (m.arrays, arr)
    return have[1]


def narrow_convex(m, d, plan, sweep):
    """Convex pairs of the worlds in ``sweep.mask`` (one launch): mjc_Convex and
    mjc_PlaneConvex.

    Reads geom_xpos/geom_xmat and the model's geom, pair and mesh fields; appends
    contacts (dist, pos, normal, sort key) to the buffers like kernels/collision.py's
    ``emit`` (finalize sorts them and sets their parameters)."""
    if plan.convex_count == 0:
        return
    opt = m.opt
    _check_options(opt)
    cap = polytope_capacity(opt.ccd_iterations)
    multiccd = bool(opt.enabled("multiccd"))
    polycap = 0  # clipper room, only compiled in with multiccd
    if multiccd:
        polyvertnum = np.asarray(m.arrays.mesh_polyvertnum)
        polycap = polygon_capacity(polyvertnum.max() if polyvertnum.size else 4)
    lists, counts, lanes, all_lists = sweep.lists
    dist, pos, frame, key = sweep.emit
    epa_floats, epa_ints = polytope_scratch(d, cap, d.nworld * lanes,
                                            clip_rows=clip_rows(polycap))
    poly_ints = _poly_ints(m, d)
    with _light_compile():
        launch(_narrow_convex, m, d, cap=cap, multiccd=multiccd, maxcon=plan.convex_maxcon,
               polycap=polycap, override=bool(opt.enabled("override")),
               o_margin=float(opt.o_margin), tol=float(opt.ccd_tolerance),
               kmax=int(opt.ccd_iterations), cand_geom=sweep.cand[0], cand_pair=sweep.cand[1], lists=lists, counts=counts,
               lanes=lanes, all_lists=all_lists, pair_margin_arr=m.pair_margin,
               world_mask=sweep.mask, poly_ints=poly_ints, epa_floats=epa_floats,
               epa_ints=epa_ints,
               contact_dist=dist, contact_pos=pos, contact_frame=frame, contact_key=key)
