"""Geom distances (MuJoCo 3.4.0's mj_geomDistance), for ``tiphys.geom_distance`` and the
geom distance sensors (kernels/sensor.py).

Convex pairs and box-box run the native ccd (kernels/collide_convex.py's ``_ccd``: GJK,
and EPA on penetration) in distance mode; the other pairs run their collision function
with the cutoff as margin and keep the deepest contact, as MuJoCo does (plane-convex,
the analytic detectors of kernels/collide_primitive.py, heightfields through
kernels/collide_hfield.py).
"""
import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .collide_convex import (MAX_PLANE_MESH, _ccd, _check_options, _light_compile, _object,
                             _plane_convex)
from .collision import ND, detector_kind, geom_pose, new_list, primitive_table
from .consts import GEOM_BOX, GEOM_HFIELD, GEOM_PLANE, GEOM_TYPE_NAMES
from .convex_support import _row
from .epa import Polytope, polytope_capacity, polytope_scratch
from .gjk import _new_status
from .math import param_row


def _float():
    return ti.f64 if config.precision() == "f64" else ti.f32


@ti.func
def pair_distance(worldid, g1, g2, distmax, mode: ti.template(), detector: ti.template(),
                   maxcon: ti.template(), flip: ti.template(), pt: ti.template(), tol, kmax,
                   geom_type: ti.template(), geom_dataid: ti.template(),
                   geom_size: ti.template(), geom_rbound: ti.template(),
                   mesh_vertadr: ti.template(), mesh_vertnum: ti.template(),
                   mesh_graphadr: ti.template(), mesh_vert: ti.template(),
                   mesh_graph: ti.template(), geom_xpos: ti.template(),
                   geom_xmat: ti.template()):
    """mj_geomDistance of one pair in one world (for geom_distance and the geom
    distance sensors): native ccd for convex pairs, otherwise the pair's collision
    function with distmax as margin and its deepest contact."""
    dist = distmax
    fromto = ti.Vector.zero(float, 6)
    if ti.static(mode == "ccd"):
        o1 = _object(worldid, g1, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                     geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
        o2 = _object(worldid, g2, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                     geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
        st = _new_status()
        _ccd(st, o1, o2, pt, mesh_vert, mesh_graph, tol, kmax, distmax)
        if st.nx > 0:
            for i in ti.static(range(3)):
                fromto[i] = st.x1[i]
                fromto[3 + i] = st.x2[i]
        if st.dist < distmax:
            dist = st.dist
    else:
        ga = g2 if ti.static(flip) else g1
        gb = g1 if ti.static(flip) else g2
        out = new_list(maxcon)
        if ti.static(mode == "plane"):
            o2 = _object(worldid, gb, 0.0, geom_type, geom_dataid, geom_size, geom_xpos,
                         geom_xmat, mesh_vertadr, mesh_vertnum, mesh_graphadr)
            rw = param_row(worldid, geom_rbound)
            _plane_convex(out, distmax, geom_xpos[worldid, ga], geom_xmat[worldid, ga],
                          o2, geom_rbound[rw, gb], mesh_vert, mesh_graph)
        else:
            pos1, mat1, size1 = geom_pose(worldid, ga, geom_xpos, geom_xmat, geom_size)
            pos2, mat2, size2 = geom_pose(worldid, gb, geom_xpos, geom_xmat, geom_size)
            detector(out, distmax, pos1, mat1, size1, pos2, mat2, size2)
        smallest = -1
        for i in range(out.n):
            if out.dist[i] < dist:
                dist = out.dist[i]
                smallest = i
        if smallest >= 0:
            sign = -1.0 if ti.static(flip) else 1.0
            pos = _row(out.pos, smallest)
            nrm = _row(out.normal, smallest)
            for i in ti.static(range(3)):
                fromto[i] = pos[i] - 0.5 * sign * dist * nrm[i]
                fromto[3 + i] = pos[i] + 0.5 * sign * dist * nrm[i]
    return dist, fromto


@ti.kernel
def _geom_distance(
    mode: ti.template(), detector: ti.template(), maxcon: ti.template(), flip: ti.template(),
    cap: ti.template(), g1: ti.i32, g2: ti.i32, distmax: float, tol: float, kmax: ti.i32,
    geom_type: ND, geom_dataid: ND, geom_size: ND, geom_rbound: ND,
    mesh_vertadr: ND, mesh_vertnum: ND, mesh_graphadr: ND, mesh_vert: ND, mesh_graph: ND,
    geom_xpos: ND, geom_xmat: ND, epa_floats: ND, epa_ints: ND, dist_out: ND,
    fromto_out: ND,
):
    for worldid in range(geom_xpos.shape[0]):
        pt = Polytope((epa_floats, epa_ints), worldid, cap)
        dist, fromto = pair_distance(
            worldid, g1, g2, distmax, mode, detector, maxcon, flip, pt, tol, kmax,
            geom_type, geom_dataid, geom_size, geom_rbound, mesh_vertadr, mesh_vertnum,
            mesh_graphadr, mesh_vert, mesh_graph, geom_xpos, geom_xmat)
        dist_out[worldid] = dist
        fromto_out[worldid] = fromto


def geom_distance(m, d, g1: int, g2: int, distmax: float):
    """Smallest signed distance between geoms g1 and g2 in every world, as
    mj_geomDistance: (dist (nworld,), fromto (nworld, 6)) as numpy arrays; fromto runs
    from the witness point on g1 to the one on g2 (zeros when nothing within distmax).

    Reads geom_xpos/geom_xmat (run kinematics first). Convex pairs and box-box use the
    native ccd in distance mode; the other pairs (plane, analytic) run their collision
    function with distmax as margin, as MuJoCo does (heightfields: mjc_ConvexHField;
    sdf pairs: mjc_SDF, which gives only overlaps; hfield-sdf: distmax, as MuJoCo's
    mjc_HFieldSDF gives nothing)."""
    g1, g2 = int(g1), int(g2)
    gtype = np.asarray(m.arrays.geom_type)
    opt = m.opt
    _check_options(opt)
    flip = bool(gtype[g1] > gtype[g2])
    t1, t2 = sorted((int(gtype[g1]), int(gtype[g2])))
    kind = detector_kind(t1, t2)
    nworld = d.nworld
    dist = ti.ndarray(_float(), shape=(nworld,))
    fromto = ti.Vector.ndarray(6, _float(), shape=(nworld,))
    if kind is None:
        return np.full(nworld, float(distmax)), np.zeros((nworld, 6))
    detector, maxcon = 0, 1
    if kind == "convex" and t1 != GEOM_PLANE or (t1, t2) == (GEOM_BOX, GEOM_BOX):
        mode, flip = "ccd", False  # the geoms in the caller's order
    elif kind == "convex":
        mode, maxcon = "plane", MAX_PLANE_MESH
    elif kind == "primitive":
        mode = "primitive"
        detector, maxcon = primitive_table()[(t1, t2)]  # static: every primitive pair
    elif kind == "hfield":
        from .collide_hfield import hfield_distance
        ga, gb = (g2, g1) if flip else (g1, g2)
        hfield_distance(m, d, ga, gb, flip, distmax, dist, fromto)
        return dist.to_numpy().astype(np.float64), fromto.to_numpy().astype(np.float64)
    elif kind == "sdf" and t1 == GEOM_HFIELD:  # mjc_HFieldSDF: no contact
        import warnings
        warnings.warn("geom_distance: hfield-sdf pairs give no contacts (MuJoCo 3.4.0's "
                      "mjc_HFieldSDF: 'HField vs SDF collision not yet supported!')",
                      RuntimeWarning, stacklevel=2)
        return np.full(nworld, float(distmax)), np.zeros((nworld, 6))
    elif kind == "sdf":
        from .collide_sdf import sdf_pair_distance
        ga, gb = (g2, g1) if flip else (g1, g2)
        sdf_pair_distance(m, d, ga, gb, flip, distmax, dist, fromto)
        return dist.to_numpy().astype(np.float64), fromto.to_numpy().astype(np.float64)
    else:
        raise NotImplementedError(
            f"geom_distance: {GEOM_TYPE_NAMES[t1]}-{GEOM_TYPE_NAMES[t2]} ({kind}) pairs")
    cap = polytope_capacity(opt.ccd_iterations)
    epa_floats, epa_ints = polytope_scratch(d, cap, nworld)
    with _light_compile():
        launch(_geom_distance, m, d, mode=mode, detector=detector, maxcon=maxcon,
               flip=flip, cap=cap, g1=g1, g2=g2, distmax=float(distmax),
               tol=float(opt.ccd_tolerance), kmax=int(opt.ccd_iterations),
               epa_floats=epa_floats, epa_ints=epa_ints, dist_out=dist, fromto_out=fromto)
    return dist.to_numpy().astype(np.float64), fromto.to_numpy().astype(np.float64)
