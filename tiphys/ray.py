"""Ray casting for every world at once: mj_ray, mj_multiRay, mj_rayMesh, mj_rayHfield,
mju_rayGeom, mju_rayFlex, and ``ray_batch`` (many rays per world in one launch, for lidars).

Rays are ``pnt + x vec``, ``x >= 0``; results are the distance ``x`` (in units of
``|vec|``) to the nearest surface, -1 when nothing is hit, and the geom hit (-1).
The scene functions read geom_xpos / geom_xmat (multi_ray also xipos): run
``kinematics`` (or forward / step) first. The geometry is kernels/ray.py's.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence

import numpy as np
import taichi as ti

from .kernels import ray as _k
from .kernels.loop_limit import loop_limit, probe as loop_probe
from .kernels.consts import (GEOM_BOX, GEOM_CAPSULE, GEOM_CYLINDER, GEOM_ELLIPSOID, GEOM_HFIELD,
                             GEOM_MESH, GEOM_PLANE, GEOM_SPHERE, GEOM_TYPE_NAMES, MAXVAL, MINVAL,
                             NGROUP)

_PRIMITIVES = {t: GEOM_TYPE_NAMES[t] for t in (GEOM_PLANE, GEOM_SPHERE, GEOM_CAPSULE,
                                                GEOM_ELLIPSOID, GEOM_CYLINDER, GEOM_BOX)}


def _fdtype(m):
    dtype = m.geom_size.dtype
    return dtype.dtype if hasattr(dtype, "dtype") else dtype


def _np_float(dtype):
    return np.float64 if dtype == ti.f64 else np.float32


def _device(values: np.ndarray, dtype) -> "ti.Ndarray":
    arr = ti.ndarray(dtype, values.shape)
    arr.from_numpy(np.ascontiguousarray(values, dtype=_np_float(dtype) if dtype in
                                        (ti.f32, ti.f64) else np.int32))
    return arr


def _vectors(name: str, value, nworld: int, nray: Optional[int]) -> np.ndarray:
    """A point / direction argument as (1 or nworld, nray or 1, 3) float64.

    nray None: one ray per world, accepted as (3,) or (nworld, 3). Else rays: (nray, 3)
    shared by every world or (nworld, nray, 3)."""
    v = np.asarray(value, dtype=np.float64)
    if nray is None:
        if v.shape == (3,):
            v = v.reshape(1, 1, 3)
        elif v.shape == (nworld, 3):
            v = v.reshape(nworld, 1, 3)
        else:
            raise ValueError(f"{name}: expected shape (3,) or ({nworld}, 3), got {v.shape}")
    else:
        if v.ndim == 2 and v.shape[1] == 3:
            v = v[None]
        if not (v.ndim == 3 and v.shape[0] in (1, nworld) and v.shape[2] == 3 and
                v.shape[1] in (1, nray)):
            raise ValueError(f"{name}: expected shape ({nray}, 3) or ({nworld}, {nray}, 3), "
                             f"got {np.asarray(value).shape}")
        if v.shape[1] != nray:
            v = np.broadcast_to(v, (v.shape[0], nray, 3))
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: values must be finite")
    return v


def _check_vecs(name: str, vecs: np.ndarray) -> None:
    norm = np.linalg.norm(vecs, axis=-1)
    bad = np.argwhere(norm < MINVAL)  # mj_ray's "vector length is too small"
    if len(bad):
        raise ValueError(f"{name}: ray direction has zero length (at index {tuple(bad[0])})")


def _groupmask(geomgroup) -> int:
    """mjvOption.geomgroup (6 flags; None keeps every group) as a bit mask."""
    if geomgroup is None:
        return _k.GROUP_ALL
    g = np.asarray(geomgroup).reshape(-1)
    if g.shape != (NGROUP,):
        raise ValueError(f"geomgroup: expected {NGROUP} flags (one per geom group) or "
                         f"None, got shape {np.asarray(geomgroup).shape}")
    return int(sum(1 << i for i in range(NGROUP) if g[i]))


def _bodyexclude(m, bodyexclude) -> int:
    b = int(bodyexclude)
    if not -1 <= b < m.nbody:
        raise ValueError(f"bodyexclude: invalid body id {bodyexclude} (-1 for none; model "
                         f"has {m.nbody} bodies)")
    return b


def _geom_of_type(m, geomid, geomtype: int, what: str) -> int:
    g = int(geomid)
    if not 0 <= g < m.ngeom:
        raise ValueError(f"{what}: invalid geom id {geomid} (model has {m.ngeom} geoms)")
    if int(m.arrays.geom_type[g]) != geomtype:
        raise ValueError(f"{what}: geom {g} is not a{'n' if what == 'ray_hfield' else ''} "
                         f"{'hfield' if geomtype == GEOM_HFIELD else 'mesh'}")
    return g


def _cast(m, d, pnts: np.ndarray, vecs: np.ndarray, groupmask: int, flg_static: int,
          bodyexclude: int, single: int):
    nworld, nray = d.nworld, pnts.shape[1]
    dtype = _fdtype(m)
    dist = ti.ndarray(dtype, (nworld, nray))
    geomid = ti.ndarray(ti.i32, (nworld, nray))
    probe = _loop_probe(geomid)
    _k._ray_batch(*_k.ray_args(m, d), _device(pnts, dtype), _device(vecs, dtype),
                  groupmask, flg_static, bodyexclude, single, probe, dist, geomid)
    return _flag_cut(dist.to_numpy().astype(np.float64), geomid.to_numpy(), "ray")


def _loop_probe(ids) -> int:
    """The ray kernels' ``probe`` argument (kernels/loop_limit.py); where the backend
    limits a thread's loops, ``ids`` (a device array) is first filled with RAY_CUT, the
    mark of a ray that a stopped thread never reached."""
    probe = loop_probe()
    if probe:
        ids.fill(_k.RAY_CUT)
    return probe


def _flag_cut(dist: np.ndarray, ids: np.ndarray, what: str, stacklevel: int = 4):
    """Rays whose kernel thread a loop limiter cut short (id RAY_CUT: kernels/ray.py)
    get distance NaN and id -1, with a warning; the arrays, so changed."""
    cut = ids == _k.RAY_CUT
    if cut.any():
        dist[cut] = np.nan
        ids[cut] = -1
        first = np.argwhere(cut)[0]
        where = f"world {first[0]}" + (f", ray {first[1]}" if len(first) > 1 else "")
        warnings.warn(
            f"{what}: this backend cuts a kernel thread's loops short after {loop_limit()} "
            f"iterations (Mesa's lavapipe), and it did so for {int(cut.sum())} of "
            f"{cut.size} ray(s) (first: {where}): their distances are NaN; shorten what "
            f"the rays cross (large height fields, meshes and flexes cost most), or run on "
            f"the CPU or a GPU", RuntimeWarning, stacklevel=stacklevel)
    return dist, ids


def ray(m, d, pnt, vec, geomgroup: Optional[Sequence[int]] = None, flg_static: bool = True,
        bodyexclude: int = -1):
    """One ray per world against its geoms, as mj_ray.

    ``pnt``, ``vec``: (3,) for every world or (nworld, 3). ``geomgroup``: 6 flags (None
    keeps every group); ``flg_static``: False drops geoms of bodies welded to the
    world; ``bodyexclude``: a body id whose geoms are ignored (-1: none). Geoms with
    alpha 0 (their rgba without a material, else the material's) are never hit.
    Returns numpy ``(dist (nworld,), geomid (nworld,))``.
    """
    pnts = _vectors("pnt", pnt, d.nworld, None)
    vecs = _vectors("vec", vec, d.nworld, None)
    _check_vecs("vec", vecs)
    dist, geomid = _cast(m, d, pnts, vecs, _groupmask(geomgroup), int(bool(flg_static)),
                         _bodyexclude(m, bodyexclude), -1)
    return dist[:, 0], geomid[:, 0]


def ray_batch(m, d, pnts, vecs, geomgroup: Optional[Sequence[int]] = None,
              flg_static: bool = True, bodyexclude: int = -1):
    """Many rays per world (a lidar), each as mj_ray, in one launch over worlds x rays.

    ``pnts``, ``vecs``: (nray, 3) shared by every world or (nworld, nray, 3); either may
    be (1, 3) / (nworld, 1, 3) to share one origin or direction. Returns numpy
    ``(dist (nworld, nray), geomid (nworld, nray))``.
    """
    p = np.asarray(pnts, dtype=np.float64)
    v = np.asarray(vecs, dtype=np.float64)
    if p.ndim not in (2, 3) or v.ndim not in (2, 3):
        raise ValueError(f"ray_batch: pnts and vecs must be (nray, 3) or (nworld, nray, 3), "
                         f"got {p.shape} and {v.shape}")
    nray = max(p.shape[-2], v.shape[-2])
    pnts = _vectors("pnts", p, d.nworld, nray)
    vecs = _vectors("vecs", v, d.nworld, nray)
    _check_vecs("vecs", vecs)
    return _cast(m, d, pnts, vecs, _groupmask(geomgroup), int(bool(flg_static)),
                 _bodyexclude(m, bodyexclude), -1)


def multi_ray(m, d, pnt, vecs, geomgroup: Optional[Sequence[int]] = None,
              flg_static: bool = True, bodyexclude: int = -1, cutoff: float = MAXVAL):
    """Many rays from one point per world, as mj_multiRay (with its pruning: geoms
    farther than ``cutoff`` + their bounding radius are skipped, and MuJoCo's body
    spheres and bounding angles, which can miss hits that ``ray`` finds).

    ``pnt``: (3,) or (nworld, 3); ``vecs``: (nray, 3) or (nworld, nray, 3). Returns numpy
    ``(dist (nworld, nray), geomid (nworld, nray))``. Reads geom_xpos, geom_xmat, xipos.
    """
    pnts = _vectors("pnt", pnt, d.nworld, None)[:, 0]
    v = np.asarray(vecs, dtype=np.float64)
    if v.ndim not in (2, 3) or v.shape[-1] != 3:
        raise ValueError(f"multi_ray: vecs must be (nray, 3) or (nworld, nray, 3), got "
                         f"{v.shape}")
    nray = v.shape[-2]
    vecs = _vectors("vecs", v, d.nworld, nray)
    _check_vecs("vecs", vecs)
    cutoff = float(cutoff)
    if not cutoff >= 0:
        raise ValueError(f"multi_ray: cutoff must be >= 0, got {cutoff}")
    t = _k.ray_tables(m)
    dtype = _fdtype(m)
    nworld = d.nworld
    ngeom = max(1, m.ngeom)
    elim = ti.ndarray(ti.i32, (nworld, ngeom))
    ba = ti.Vector.ndarray(4, dtype, (nworld, ngeom))
    dist = ti.ndarray(dtype, (nworld, nray))
    geomid = ti.ndarray(ti.i32, (nworld, nray))
    _k._multi_ray(*_k.ray_args(m, d), m.body_geomadr, m.body_geomnum, t.body_bvh,
                  m.geom_aabb, m.geom_rbound, d.xipos, _device(pnts, dtype),
                  _device(vecs, dtype), _groupmask(geomgroup), int(bool(flg_static)),
                  _bodyexclude(m, bodyexclude), cutoff, elim, ba, dist, geomid)
    return dist.to_numpy().astype(np.float64), geomid.to_numpy()


def ray_mesh(m, d, geomid: int, pnt, vec) -> np.ndarray:
    """Distance along the ray to mesh geom ``geomid`` (its triangles), per world, as
    mj_rayMesh (no group / visibility filter). ``pnt``, ``vec``: (3,) or (nworld, 3).
    Returns numpy (nworld,), -1 where missed."""
    g = _geom_of_type(m, geomid, GEOM_MESH, "ray_mesh")
    pnts = _vectors("pnt", pnt, d.nworld, None)
    vecs = _vectors("vec", vec, d.nworld, None)
    _check_vecs("vec", vecs)
    return _cast(m, d, pnts, vecs, _k.GROUP_ALL, 1, -1, g)[0][:, 0]


def ray_hfield(m, d, geomid: int, pnt, vec) -> np.ndarray:
    """Distance along the ray to height-field geom ``geomid``, per world, as
    mj_rayHfield. ``pnt``, ``vec``: (3,) or (nworld, 3). Returns numpy (nworld,)."""
    g = _geom_of_type(m, geomid, GEOM_HFIELD, "ray_hfield")
    pnts = _vectors("pnt", pnt, d.nworld, None)
    vecs = _vectors("vec", vec, d.nworld, None)
    _check_vecs("vec", vecs)
    return _cast(m, d, pnts, vecs, _k.GROUP_ALL, 1, -1, g)[0][:, 0]


def ray_flex(m, d, flex_layer: int, flg_vert, flg_edge, flg_face, flg_skin, flexid: int,
             pnt, vec) -> tuple:
    """Distance along the ray to flex ``flexid`` and the flex vertex nearest the hit,
    per world, as mju_rayFlex (the same arguments, MuJoCo's order): edges as capsules
    of the flex radius when ``flg_edge`` (or a 2D/3D flex with ``flg_skin``), else
    vertices as spheres when ``flg_vert``; faces of a 2D/3D flex when ``flg_face`` or
    ``flg_skin`` (a 3D flex: its surface layer with the skin, else layer
    ``flex_layer``). Reads flexvert_xpos (run forward first). ``pnt``, ``vec``: (3,) or
    (nworld, 3). Returns numpy (dist (nworld,), vertid (nworld,)): -1 and -1 where
    missed. (MuJoCo's mj_ray, and so the rangefinder, tests geoms only; so does
    tiphys's ray.)"""
    nflex = int(getattr(m, "nflex", 0) or 0)
    if not isinstance(flexid, (int, np.integer)) or not 0 <= int(flexid) < nflex:
        raise ValueError(f"ray_flex: flexid {flexid!r} out of range (the model has {nflex} "
                         f"flex(es))")
    io = _one_ray_per_world(m, d, pnt, vec)
    from .kernels.bind import launch
    probe = _loop_probe(io["vertid"])
    launch(_k._ray_flex, m, d, flexid=int(flexid), flex_layer=int(flex_layer),
           flg_vert=int(bool(flg_vert)), flg_edge=int(bool(flg_edge)),
           flg_face=int(bool(flg_face)), flg_skin=int(bool(flg_skin)), probe=probe, **io)
    return _flag_cut(io["dist"].to_numpy().astype(np.float64), io["vertid"].to_numpy(),
                     "ray_flex", stacklevel=3)


def _one_ray_per_world(m, d, pnt, vec) -> dict:
    """The device arguments of a ray per world: pnts, vecs ((3,) or (nworld, 3),
    checked) and the outputs dist (nworld,), vertid (nworld,)."""
    pnts = _vectors("pnt", pnt, d.nworld, None).reshape(-1, 3)
    vecs = _vectors("vec", vec, d.nworld, None).reshape(-1, 3)
    _check_vecs("vec", vecs[:, None])
    dtype = _fdtype(m)
    return {"pnts": _device(np.broadcast_to(pnts, (d.nworld, 3)), dtype),
            "vecs": _device(np.broadcast_to(vecs, (d.nworld, 3)), dtype),
            "dist": ti.ndarray(dtype, (d.nworld,)),
            "vertid": ti.ndarray(ti.i32, (d.nworld,))}


def _skin_arrays(m, d, name: str, skinid):
    nskin = int(getattr(m, "nskin", 0) or 0)
    if not isinstance(skinid, (int, np.integer)) or not 0 <= int(skinid) < nskin:
        raise ValueError(f"{name}: skinid {skinid!r} out of range (the model has {nskin} "
                         f"skin(s))")
    nvert = max(1, int(np.asarray(m.arrays.skin_vertnum)[int(skinid)]))
    scratch = d.scratch.skin_pose
    if scratch is None:
        scratch = d.scratch.skin_pose = {}
    pair = scratch.get(nvert)
    if pair is None:
        pair = scratch[nvert] = (ti.ndarray(ti.f32, (d.nworld, nvert, 3)),
                                 ti.ndarray(ti.f32, (d.nworld, nvert, 3)))
    from .kernels import ray_skin as _rs
    from .kernels.bind import launch
    launch(_rs._skin_pose, m, d, skinid=int(skinid), verts=pair[0], normals=pair[1])
    return pair


def skin_vertices(m, d, skinid: int) -> np.ndarray:
    """Skin ``skinid``'s vertices in every world as MuJoCo's mjv_updateActiveSkin
    poses them into mjvScene.skinvert (bones' body poses, single precision, inflated
    along the normals): numpy float32 (nworld, skin_vertnum, 3). Reads xpos, xquat
    (run kinematics or forward first)."""
    verts, _ = _skin_arrays(m, d, "skin_vertices", skinid)
    n = int(np.asarray(m.arrays.skin_vertnum)[int(skinid)])
    return verts.to_numpy()[:, :n]


def ray_skin(m, d, skinid: int, pnt, vec) -> tuple:
    """Distance along the ray to skin ``skinid`` and the skin vertex nearest the hit,
    per world, as mju_raySkin on the skin posed by mjv_updateActiveSkin (see
    skin_vertices): ``pnt``, ``vec``: (3,) or (nworld, 3). Returns numpy (dist
    (nworld,), vertid (nworld,)): -1 and -1 where missed. (Skins are visual: mj_ray and
    the rangefinder do not see them, in MuJoCo as in tiphys.)"""
    verts, _ = _skin_arrays(m, d, "ray_skin", skinid)
    io = _one_ray_per_world(m, d, pnt, vec)
    from .kernels import ray_skin as _rs
    from .kernels.bind import launch
    launch(_rs._ray_skin, m, d, skinid=int(skinid), verts=verts, **io)
    return io["dist"].to_numpy().astype(np.float64), io["vertid"].to_numpy()


def ray_geom(pos, mat, size, pnt, vec, geomtype) -> np.ndarray:
    """Distance along rays to primitive geoms, as mju_rayGeom, batched: every argument
    is one value or n of them (pos, size, pnt, vec: (3,) / (n, 3); mat: (9,), (3, 3),
    (n, 9) or (n, 3, 3); geomtype: an int / name or (n,)). Types: plane, sphere,
    capsule, ellipsoid, cylinder, box. Returns a float for scalar input, else (n,)."""
    names = {v: k for k, v in _PRIMITIVES.items()}
    gt = np.asarray([names.get(t, t) if isinstance(t, str) else t
                     for t in np.atleast_1d(np.asarray(geomtype, dtype=object))])
    for t in gt:
        if isinstance(t, str) or int(t) not in _PRIMITIVES:
            raise ValueError(f"ray_geom: unsupported geom type {t!r} (one of "
                             f"{sorted(_PRIMITIVES.values())}; meshes and height fields: "
                             f"ray_mesh, ray_hfield)")
    gt = gt.astype(np.int32)
    mat_arr = np.asarray(mat, dtype=np.float64)
    if mat_arr.shape[-2:] == (3, 3):
        mat_arr = mat_arr.reshape(mat_arr.shape[:-2] + (9,))
    args = {"pos": np.asarray(pos, np.float64), "mat": mat_arr,
            "size": np.asarray(size, np.float64), "pnt": np.asarray(pnt, np.float64),
            "vec": np.asarray(vec, np.float64)}
    scalar = all(v.ndim == 1 for v in args.values()) and np.ndim(geomtype) == 0
    n = 1
    for name, v in list(args.items()) + [("geomtype", gt)]:
        if v.ndim > (1 if name == "geomtype" else 2):
            raise ValueError(f"ray_geom: {name} has shape {v.shape}")
        count = v.shape[0] if v.ndim == (1 if name == "geomtype" else 2) else 1
        if count != 1:
            if n not in (1, count):
                raise ValueError(f"ray_geom: {name} has {count} entries, others {n}")
            n = count
    width = {"pos": 3, "mat": 9, "size": 3, "pnt": 3, "vec": 3}
    for name, v in args.items():
        if v.shape[-1] != width[name]:
            raise ValueError(f"ray_geom: {name} must have {width[name]} values per entry, "
                             f"got shape {v.shape}")
        args[name] = np.broadcast_to(v.reshape(-1, width[name]), (n, width[name]))
        if not np.all(np.isfinite(args[name])):
            raise ValueError(f"ray_geom: {name} must be finite")
    _check_vecs("vec", args["vec"])
    from . import backend
    dtype = backend.float_dtype()
    dist = ti.ndarray(dtype, (n,))
    _k._ray_geom(*(_device(args[k], dtype) for k in ("pos", "mat", "size", "pnt", "vec")),
                 _device(np.broadcast_to(gt, (n,)), ti.i32), dist)
    out = dist.to_numpy().astype(np.float64)
    return float(out[0]) if scalar else out
