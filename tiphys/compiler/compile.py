"""Spec -> ModelArrays: the compiler driver."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._gc import gc_paused
from ..errors import ModelError, error_at
from ..kernels.consts import (GEOM_SDF, JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE, MINVAL,
                              SAMEFRAME_BODY, SAMEFRAME_BODYROT, SAMEFRAME_INERTIA,
                              SAMEFRAME_INERTIAROT, SAMEFRAME_NONE)
from ..model import ModelArrays
from ..types import MODEL_FIELDS, MODEL_SIZES
from . import rotation as rot
from .attach import expand_attachments, fill_attached_keys
from .attrs import BOOL, Attrs
from .defaults import DefaultTree
from .empty import replay_empty
from .replicate import expand_replicated_references
from .options import read_option, read_size, read_statistic, read_visual
from .progress import CompileProgress
from .actuator import compile_tendons_and_actuators
from .composite import add_composite_texts, composite_excludes, composite_skins
from .contact import compile_contact, referenced_geom_names
from .equality import compile_equality
from .bvh import fill_bvh
from .octree import fill_octree
from .flex import compile_flexes
from .plugins import check_extensions, check_plugins, compile_plugins
from .sensor import compile_sensors, fuse_blocking_bodies, sensor_geom_names, sensor_mesh_names
from .names import fill_names, fill_paths
from .sleep import fill_sleep_policy
from .sparse import fill_sparse
from .setconst import cameras0, lights0, set_stat, subtree_com, subtree_mass
from .skin import _fill_skins, compile_skins, skin_elements
from .tree import TreeBuilder

# Sections whose compiler passes belong to later issues: parsed and kept in the
# Spec, but compiling a model that uses them raises NotImplementedError.
_LATER: dict = {}


@dataclass
class CompileContext:
    degree: bool = True
    eulerseq: str = "xyz"
    meshdir: str = ""
    texturedir: str = ""
    autolimits: bool = True
    inertiafromgeom: int = 2
    inertiagrouprange: tuple = (0, 5)
    boundmass: float = 0.0
    boundinertia: float = 0.0
    balanceinertia: bool = False
    settotalmass: float = -1.0
    fitaabb: bool = False
    alignfree: bool = False
    discardvisual: bool = False
    fusestatic: bool = False
    strippath: bool = False
    znear: float = 0.01
    assets: Optional[object] = None

    def geom_assets(self, g, a: Attrs):
        self.assets.attach_geom(g, a)


def _compiler_options(spec) -> CompileContext:
    ctx = CompileContext()
    for el in spec.sections("compiler"):
        a = Attrs(el)
        ctx.degree = a.keyword("angle", {"degree": True, "radian": False}, ctx.degree)
        seq = a.str("eulerseq", ctx.eulerseq)
        if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
            raise a.error("euler sequence must be 3 characters from x, y, z, X, Y, Z",
                          "eulerseq")
        ctx.eulerseq = seq
        assetdir = a.str("assetdir")
        if assetdir is not None:
            ctx.meshdir = ctx.texturedir = assetdir
        ctx.meshdir = a.str("meshdir", ctx.meshdir)
        ctx.texturedir = a.str("texturedir", ctx.texturedir)
        ctx.autolimits = bool(a.bool("autolimits", ctx.autolimits))
        ctx.inertiafromgeom = a.keyword("inertiafromgeom", {"false": 0, "true": 1, "auto": 2},
                                        ctx.inertiafromgeom)
        rng = a.ints("inertiagrouprange", 2)
        if rng is not None:
            ctx.inertiagrouprange = (int(rng[0]), int(rng[1]))
        ctx.boundmass = a.float("boundmass", ctx.boundmass)
        ctx.boundinertia = a.float("boundinertia", ctx.boundinertia)
        ctx.balanceinertia = bool(a.bool("balanceinertia", ctx.balanceinertia))
        ctx.settotalmass = a.float("settotalmass", ctx.settotalmass)
        ctx.fitaabb = bool(a.bool("fitaabb", ctx.fitaabb))
        ctx.alignfree = bool(a.bool("alignfree", ctx.alignfree))
        ctx.discardvisual = bool(a.bool("discardvisual", ctx.discardvisual))
        ctx.fusestatic = bool(a.bool("fusestatic", ctx.fusestatic))
        ctx.strippath = bool(a.bool("strippath", ctx.strippath))
        a.keyword("coordinate", {"local": 0}, 0)
        a.bool("usethread", 1)
        a.bool("saveinertial", 0)
    return ctx


def _check_later_sections(spec):
    for tag, what in _LATER.items():
        for section in spec.sections(tag):
            if section.children:
                child = section.children[0]
                raise NotImplementedError(
                    f"{child.xml_file or '<string>'}:{child.xml_line}: <{tag}><{child.tag}> "
                    f"({what}) is not supported yet")


@gc_paused
def compile_spec(spec, progress: Optional[bool] = None) -> ModelArrays:
    """Compile a Spec into host arrays named and shaped like mujoco.MjModel's.

    ``progress``: a progress line on stderr for a compile that takes more than a few
    seconds (on a terminal a rich bar, erased at the end; elsewhere one plain line):
    None shows it when stderr is a terminal, True always, False never."""
    nmesh = sum(child.tag == "mesh" for section in spec.sections("asset")
                for child in section.children)
    label = os.path.basename(getattr(spec, "filename", None) or "") or "model"
    with CompileProgress(label, nmesh, progress):
        return _compile_spec(spec)


def _compile_spec(spec) -> ModelArrays:
    from .assets import AssetCompiler  # local: assets imports mesh processing

    _check_later_sections(spec)
    check_extensions(spec)  # (the XML reader's errors; plugins not simulated yet)
    # <asset><model> + <attach>: the attached elements written into the tree
    spec = expand_attachments(spec)
    # tendons, actuators, sensors, ... that name replicated elements are replicated too
    spec = expand_replicated_references(spec)
    ctx = _compiler_options(spec)
    defaults = DefaultTree(spec)
    vis = read_visual(spec)
    ctx.znear = float(np.float32(vis["map"]["znear"]))
    ctx.assets = AssetCompiler(spec, defaults, ctx)
    builder = TreeBuilder(spec, defaults, ctx)
    bodies = builder.build()
    if ctx.fusestatic:
        builder.fuse_static(_referenced_body_names(spec) | fuse_blocking_bodies(spec) |
                            {n for n1, n2, _ in composite_excludes(builder) for n in (n1, n2)} |
                            {n for sk in composite_skins(builder) for n in sk.bodyname})
        bodies = builder.bodies
    if ctx.discardvisual:
        builder.discard_visual(referenced_geom_names(spec) | sensor_geom_names(spec) |
                               tuple_geom_names(spec))
        ctx.assets.discard_unused_meshes(bodies, keep=sensor_mesh_names(spec))
    _check_moving_mass(bodies)
    if ctx.settotalmass > 0:
        total = sum(b.mass for b in bodies)
        if total > 0:
            scale = ctx.settotalmass / total
            for b in bodies:
                b.mass *= scale
                b.inertia = b.inertia * scale
    out = ModelArrays()
    out.opt = read_option(spec)
    out.stat = read_statistic(spec)
    out.vis = vis
    size = read_size(spec)
    _assemble(out, builder, ctx, size)
    ctx.assets.fill(out)
    # the elements the materials and height fields came from (tiphys.copy_back)
    out.mat_els, out.hfield_els = list(ctx.assets.mat_els), list(ctx.assets.hfield_els)
    compile_tendons_and_actuators(spec, defaults, builder, ctx, out, size)
    _flexes(spec, builder, out)
    _skins(spec, builder, ctx, out)
    fill_bvh(out, ctx.assets.compiled_meshes, out.__dict__.pop("_flex_bvh_input"),
             getattr(builder, "bvh_fuse_excess", 0),
             list(getattr(builder, "bvh_history", {}).values()))
    fill_octree(out, ctx.assets.compiled_meshes, _sdf_meshes(out, ctx.assets))
    compile_contact(spec, defaults, builder, out)
    compile_equality(spec, defaults, builder, out)
    del out._kinematics0
    compile_sensors(spec, defaults, builder, out, size)
    compile_plugins(spec, out, builder)  # (after the sensors: plugin sensors' dims, as
    # CopyPlugins)
    try:
        _keyframes(spec, out, size.get("nkey", 0), builder)
    except MemoryError:
        raise _size_error(spec, ("nkey",)) from None
    _custom(spec, out)
    add_composite_texts(builder, out)
    _resolve_materials(builder, ctx.assets, out)
    try:
        _user_fields(builder, size, out)
    except MemoryError:
        raise _size_error(spec, [k for _, k, _ in _USER]) from None
    out.names = _names(spec, builder, ctx.assets, out)
    fill_names(out, spec.model_name, _NAME_FIELDS)
    fill_paths(out, ctx.assets.paths(getattr(out, "skin_els", ())))
    fill_sparse(out)
    _texts_and_tuples(out)
    out.model_name = spec.model_name
    set_stat(out, out.stat)  # (its own qpos0 kinematics: MuJoCo's bits more often than
    # HostKinematics', measured over the corpus)
    fill_sleep_policy(builder, out)
    check_plugins(out)
    _levels(out)
    values = out.__dict__
    out.sizes = {k: int(values.pop(key, 0)) for k, key in _SIZE_KEYS}
    return out


def _sdf_meshes(out, assets) -> set:
    """The meshes MuJoCo builds an octree for: those of ``<geom type="sdf">`` (which
    sets the mesh's needsdf), except meshes made by an SDF ``<plugin>``."""
    ids = {int(m) for t, m in zip(np.asarray(out.geom_type).tolist(),
                                  np.asarray(out.geom_dataid).tolist())
           if t == GEOM_SDF and m >= 0}
    return {m for m in ids if not assets.mesh_els[m].find("plugin")}


def _flexes(spec, builder, out) -> None:
    """compile_flexes; a model with no flex (most) gets the fields it makes for none,
    made once (replay_empty: the same arrays, without its per-field work)."""
    if getattr(builder, "flexcomps", None) or any(
            child.tag == "flex" for section in spec.sections("deformable")
            for child in section.children):
        compile_flexes(spec, builder, out)
        return

    def make(ns):
        # the fields compile_flexes sets (it reads the tree arrays of ``out``)
        before = dict(out.__dict__)
        compile_flexes(spec, builder, out)
        for name, value in list(out.__dict__.items()):
            if before.get(name, ns) is not value:
                setattr(ns, name, value)

    replay_empty(out, "flex", make)


_NAME_FIELDS = {name for name, *_ in MODEL_FIELDS if name.startswith("name_")}


def _skins(spec, builder, ctx, out) -> None:
    """compile_skins (after the flexes, as MuJoCo compiles them); a model with no skin
    (most) gets the empty fields made once."""
    if skin_elements(spec) or composite_skins(builder):
        skins = compile_skins(spec, builder, ctx.assets, ctx, out)
        out.skin_names = [sk.name for sk in skins]
        out.skin_els = [sk.el for sk in skins]
        return
    replay_empty(out, "skin", lambda ns: _fill_skins(ns, []))
    out.skin_names, out.skin_els = [], []


_SIZE_KEYS = tuple((k, "_size_" + k) for k in MODEL_SIZES)  # (size, its field while compiling)
_MAX_ALLOC = 1 << 32  # bytes: a larger keyframe/user array is a bad <size>, not a hang


def _size_error(spec, names) -> ModelError:
    """An allocation that failed because of a huge <size> value, located at it."""
    for el in reversed(spec.sections("size")):
        for name in names:
            if el.attr(name) is not None:
                return error_at(el, "could not allocate memory", name)
    return ModelError("could not allocate memory")


_BODY_REFS = ("target", "body", "body1", "body2", "objname", "refname", "subtree1",
              "subtree2")


def _referenced_body_names(spec) -> set:
    """Names used as body references anywhere in the model (fusestatic keeps those)."""
    names = set()
    for el in spec.root.iter():
        if el.tag in ("body", "worldbody", "frame"):
            continue
        for attr in _BODY_REFS:
            if attr in el.attr_names and el.attr(attr):
                names.add(el.attr(attr))
    return names


# dofs and qpos numbers per joint type
_JNT_DOFS = {JNT_FREE: 6, JNT_BALL: 3, JNT_SLIDE: 1, JNT_HINGE: 1}
_JNT_QPOS = {JNT_FREE: 7, JNT_BALL: 4, JNT_SLIDE: 1, JNT_HINGE: 1}


def _check_moving_mass(bodies):
    """MuJoCo: a body with joints needs mass and inertia, its own or a static child's."""
    def valid(b):
        if b.mass >= MINVAL and bool((np.asarray(b.inertia) >= MINVAL).all()):
            return True
        return any(valid(c) for c in b.children if not c.joints)

    for b in bodies[1:]:
        if b.joints and not valid(b):
            raise error_at(b.el, "mass and inertia of moving bodies must be larger than "
                                 "mjMINVAL")


def _setsize(out, **kw):
    values = out.__dict__
    for k, v in kw.items():
        values["_size_" + k] = int(v)


def _assemble(out, builder, ctx, size):
    bodies = builder.bodies
    nbody = len(bodies)
    joints = [j for b in bodies for j in b.joints]
    geoms = [g for b in bodies for g in b.geoms]
    sites = [s for b in bodies for s in b.sites]
    cams = [c for b in bodies for c in b.cameras]
    lights = [li for b in bodies for li in b.lights]
    for lst in (joints, geoms, sites, cams, lights):
        for i, obj in enumerate(lst):
            obj.id = i
    nq = sum({0: 7, 1: 4, 2: 1, 3: 1}[j.type] for j in joints)
    nv = sum(b.dofnum for b in bodies)
    njnt, ngeom, nsite, ncam, nlight = len(joints), len(geoms), len(sites), len(cams), len(lights)
    mocap = [b for b in bodies if b.mocap]
    for i, b in enumerate(mocap):
        b.mocapid = i

    qpos0, qpos_spring = np.zeros(nq), np.zeros(nq)
    parentid, rootid, simple, sameframe = [0] * nbody, [0] * nbody, [0] * nbody, [0] * nbody
    jntadr_b, dofadr_b, lastdof = [-1] * nbody, [-1] * nbody, [-1] * nbody
    dofnum_b = [b.dofnum for b in bodies]
    ipos_b = []
    jnt_ndof, jnt_qposadr, jnt_dofadr, jnt_bodyid = [], [], [], []
    dof_parentid = []
    jntadr = dofadr = qposadr = 0
    for b in bodies:
        i = b.id
        pid = b.parent.id if b.parent else 0
        parentid[i] = pid
        rootid[i] = i if (i == 0 or pid == 0) else rootid[pid]
        if b.joints:
            jntadr_b[i] = jntadr
        if b.dofnum:
            dofadr_b[i] = dofadr
        ipos = np.zeros(3) if b.ipos is None else b.ipos
        ipos_b.append(ipos)
        lastdof[i] = lastdof[pid] if b.parent else -1
        sameframe[i] = sf = _sameframe_body(ipos, b.iquat)
        simple[i] = int(sf == SAMEFRAME_BODY and (rootid[i] == i or (
            parentid[pid] == 0 and dofnum_b[pid] == 0)))
        if pid > 0:
            simple[pid] = 0
        rotfound = False
        for j in b.joints:
            j.qposadr, j.dofadr = qposadr, dofadr
            jt = j.type
            jnt_qposadr.append(qposadr)
            jnt_dofadr.append(dofadr)
            jnt_bodyid.append(i)
            axis = j.axis.tolist()
            aligned = sum(abs(x) > rot.EPS for x in axis) == 1
            apos = [abs(x) for x in j.pos.tolist()]
            # (np.abs(pos).max() >= 1e-6: False when a value is NaN)
            off = not any(x != x for x in apos) and max(apos) >= 1e-6
            if rotfound or off or (jt in (JNT_SLIDE, JNT_HINGE) and not aligned):
                simple[i] = 0
            rotfound = rotfound or jt in (JNT_BALL, JNT_HINGE)
            if jt == JNT_FREE:
                qpos0[qposadr:qposadr + 3] = b.pos
                qpos0[qposadr + 3:qposadr + 7] = b.quat
                qpos_spring[qposadr:qposadr + 7] = qpos0[qposadr:qposadr + 7]
            elif jt == JNT_BALL:
                qpos0[qposadr:qposadr + 4] = (1, 0, 0, 0)
                qpos_spring[qposadr:qposadr + 4] = (1, 0, 0, 0)
            else:
                qpos0[qposadr] = j.ref
                qpos_spring[qposadr] = j.springref
            ndof = _JNT_DOFS[jt]
            jnt_ndof.append(ndof)
            for _ in range(ndof):
                dof_parentid.append(lastdof[i])
                lastdof[i] = dofadr
                dofadr += 1
            jntadr += 1
            qposadr += _JNT_QPOS[jt]
        if simple[i] and b.dofnum:
            simple[i] = 2 if all(j.type == JNT_SLIDE for j in b.joints) else 1
    weldid = [b.weldid for b in bodies]
    dof_bodyid = [i for i, n in zip(jnt_bodyid, jnt_ndof) for _ in range(n)]

    ntree = sum(1 for p in dof_parentid if p == -1)
    dof_treeid, t = [], -1
    for p in dof_parentid:
        t += p == -1
        dof_treeid.append(t)
    body_treeid = [dof_treeid[dofadr_b[weldid[i]]] if dofnum_b[weldid[i]] else -1
                   for i in range(nbody)]
    madr, nM = [], 0
    ddepth = [0] * nv  # a dof's row of M holds itself and its ancestors
    for i in range(nv):
        p = dof_parentid[i]
        ddepth[i] = 1 if p < 0 else ddepth[p] + 1
        madr.append(nM)
        nM += ddepth[i]
    simplenum, count = [0] * nv, 0
    for i in range(nv - 1, -1, -1):
        count = count + 1 if simple[dof_bodyid[i]] else 0
        simplenum[i] = count

    f = np.float64
    i32 = np.int32
    out.qpos0, out.qpos_spring = qpos0, qpos_spring
    out.body_parentid = np.array(parentid, dtype=i32)
    out.body_rootid = np.array(rootid, dtype=i32)
    out.body_weldid = np.array(weldid, dtype=i32)
    out.body_mocapid = np.array([getattr(b, "mocapid", -1) for b in bodies], dtype=i32)
    out.body_jntnum = np.array([len(b.joints) for b in bodies], dtype=i32)
    out.body_jntadr = np.array(jntadr_b, dtype=i32)
    out.body_dofnum = np.array(dofnum_b, dtype=i32)
    out.body_dofadr = np.array(dofadr_b, dtype=i32)
    out.body_geomnum = np.array([len(b.geoms) for b in bodies], dtype=i32)
    out.body_geomadr = np.array([b.geoms[0].id if b.geoms else -1 for b in bodies], dtype=i32)
    out.body_sameframe = np.array(sameframe, dtype=i32)
    out.body_contype = np.array([b.contype for b in bodies], dtype=i32)
    out.body_conaffinity = np.array([b.conaffinity for b in bodies], dtype=i32)
    out.body_simple = np.array(simple, dtype=i32)
    out.body_treeid = np.array(body_treeid, dtype=i32)
    out.body_pos = np.array([b.pos for b in bodies], dtype=f).reshape(nbody, 3)
    out.body_quat = np.array([b.quat for b in bodies], dtype=f).reshape(nbody, 4)
    out.body_ipos = np.array(ipos_b, dtype=f).reshape(nbody, 3)
    out.body_iquat = np.array([b.iquat for b in bodies], dtype=f).reshape(nbody, 4)
    out.body_inertia = np.array([b.inertia for b in bodies], dtype=f).reshape(nbody, 3)
    out.body_mass = np.array([b.mass for b in bodies], dtype=f)
    out.body_gravcomp = np.array([b.gravcomp for b in bodies], dtype=f)
    out.body_margin = np.array([b.margin for b in bodies], dtype=f)
    out.body_subtreemass = subtree_mass(out.body_mass, parentid)
    for k, n in (("solref", 2), ("solimp", 5), ("pos", 3), ("axis", 3), ("range", 2),
                 ("actfrcrange", 2)):
        setattr(out, "jnt_" + k,
                np.array([getattr(j, k) for j in joints], dtype=f).reshape(njnt, n))
    for k in ("stiffness", "margin"):
        setattr(out, "jnt_" + k, np.array([getattr(j, k) for j in joints], dtype=f))
    out.jnt_type = np.array([j.type for j in joints], dtype=i32)
    out.jnt_qposadr = np.array(jnt_qposadr, dtype=i32)
    out.jnt_dofadr = np.array(jnt_dofadr, dtype=i32)
    out.jnt_bodyid = np.array(jnt_bodyid, dtype=i32)
    out.jnt_group = np.array([j.group for j in joints], dtype=i32)
    out.jnt_limited = np.array([int(j.is_limited) for j in joints], dtype=i32)
    out.jnt_actfrclimited = np.array([int(j.is_actfrclimited) for j in joints], dtype=i32)
    out.jnt_actgravcomp = np.array([int(j.actgravcomp) for j in joints], dtype=i32)
    # dofs repeat their joint's values
    ndof = np.array(jnt_ndof, dtype=np.intp)
    out.dof_bodyid = np.array(dof_bodyid, dtype=i32)
    out.dof_jntid = np.repeat(np.arange(njnt, dtype=i32), ndof)
    out.dof_parentid = np.array(dof_parentid, dtype=i32)
    out.dof_treeid = np.array(dof_treeid, dtype=i32)
    out.dof_Madr = np.array(madr, dtype=i32)
    out.dof_simplenum = np.array(simplenum, dtype=i32)
    out.dof_solref = np.repeat(np.array([j.solref_friction for j in joints], dtype=f)
                               .reshape(njnt, 2), ndof, axis=0)
    out.dof_solimp = np.repeat(np.array([j.solimp_friction for j in joints], dtype=f)
                               .reshape(njnt, 5), ndof, axis=0)
    for k in ("frictionloss", "armature", "damping"):
        setattr(out, "dof_" + k,
                np.repeat(np.array([getattr(j, k) for j in joints], dtype=f), ndof))
    # bodies and dofs of each tree, in one pass over each (scenes have many trees)
    tree_body = [[] for _ in range(ntree)]
    for i, t in enumerate(body_treeid):
        if t >= 0:
            tree_body[t].append(i)
    tree_dofadr, tree_dofnum = [-1] * ntree, [0] * ntree
    for i, t in enumerate(dof_treeid):
        if tree_dofnum[t] == 0:
            tree_dofadr[t] = i
        tree_dofnum[t] += 1
    out.tree_bodyadr = np.array([tb[0] if tb else -1 for tb in tree_body], dtype=np.int32)
    out.tree_bodynum = np.array([len(tb) for tb in tree_body], dtype=np.int32)
    out.tree_dofadr = np.array(tree_dofadr, dtype=np.int32)
    out.tree_dofnum = np.array(tree_dofnum, dtype=np.int32)

    _geoms(out, geoms, bodies)
    if sites:
        _sites(out, sites, bodies)
    else:
        replay_empty(out, "sites", lambda ns: _sites(ns, [], bodies))
    poses = _global_poses(bodies) if (cams or lights) else (None,) * 3
    if cams:
        _cameras(out, cams, builder, poses)
    else:
        replay_empty(out, "cameras", lambda ns: _cameras(ns, [], builder, poses))
    if lights:
        _lights(out, lights, builder, poses)
    else:
        replay_empty(out, "lights", lambda ns: _lights(ns, [], builder, poses))
    out.mocap_pos0 = np.array([b.pos for b in mocap], dtype=f).reshape(len(mocap), 3)
    out.mocap_quat0 = np.array([b.quat for b in mocap], dtype=f).reshape(len(mocap), 4)
    _setsize(out, nq=nq, nv=nv, nu=0, na=0, nbody=nbody, njnt=njnt, ntree=ntree, nM=nM,
             ngeom=ngeom, nsite=nsite, ncam=ncam, nlight=nlight, nmocap=len(mocap),
             nuserdata=size["nuserdata"])
    out.bodies = bodies


def _vector(v):
    """A float64 vector as Python floats (the same doubles, compared faster than with
    numpy calls on 3 or 4 numbers); None for anything else."""
    if type(v) is np.ndarray and v.dtype == np.float64 and v.ndim == 1:
        return v.tolist()
    return None


def _same(a, b):
    va = _vector(a)
    if va is not None:
        if type(b) is int and b == 0:
            return all(abs(x) < 1e-6 for x in va)
        vb = _vector(b)
        if vb is not None and len(va) == len(vb):
            return all(abs(x - y) < 1e-6 for x, y in zip(va, vb))
    return bool(np.all(np.abs(np.asarray(a) - np.asarray(b)) < 1e-6))


def _same_quat(a, b):
    if _same(a, b):
        return True
    va, vb = _vector(a), _vector(b)
    if va is not None and vb is not None and len(va) == len(vb):
        return all(abs(x + y) < 1e-6 for x, y in zip(va, vb))
    return bool(np.all(np.abs(np.asarray(a) + np.asarray(b)) < 1e-6))


_QUNIT = np.array([1.0, 0, 0, 0])


def _is_zero(v) -> bool:
    for x in v:  # (a loop: faster than all() over a generator for 3 numbers)
        if not abs(x) < 1e-6:
            return False
    return True


def _is_near(a, b) -> bool:
    for x, y in zip(a, b):
        if not abs(x - y) < 1e-6:
            return False
    return True


def _is_near_quat(a, b) -> bool:
    if _is_near(a, b):
        return True
    for x, y in zip(a, b):
        if not abs(x + y) < 1e-6:
            return False
    return True


_QUNIT_L = [1.0, 0.0, 0.0, 0.0]


def _sameframe_body(ipos, iquat):
    p, q = _vector(ipos), _vector(iquat)
    if p is None or q is None or len(p) != 3 or len(q) != 4:
        return _sameframe_body_any(ipos, iquat)
    unitq = _is_near_quat(q, _QUNIT_L)
    if unitq and _is_zero(p):
        return SAMEFRAME_BODY
    return SAMEFRAME_BODYROT if unitq else SAMEFRAME_NONE


def _sameframe_body_any(ipos, iquat):
    if _same(ipos, 0) and _same_quat(iquat, _QUNIT):
        return SAMEFRAME_BODY
    if _same_quat(iquat, _QUNIT):
        return SAMEFRAME_BODYROT
    return SAMEFRAME_NONE


def _sameframe_obj(pos, quat, body, inertial=None):
    """``inertial``: a dict kept by the caller, body -> its inertial frame as lists."""
    key = id(body)
    frame = inertial.get(key) if inertial is not None else None
    if frame is None:
        ipos = np.zeros(3) if body.ipos is None else body.ipos
        frame = ipos, _vector(ipos), _vector(body.iquat)
        if inertial is not None:
            inertial[key] = frame
    ipos, ip, iq = frame
    p, q = _vector(pos), _vector(quat)
    if p is None or q is None or ip is None or iq is None or len(p) != 3 or \
            len(q) != 4 or len(ip) != 3 or len(iq) != 4:
        return _sameframe_obj_any(pos, quat, ipos, body.iquat)
    unitq = _is_near_quat(q, _QUNIT_L)
    if unitq:
        return SAMEFRAME_BODY if _is_zero(p) else SAMEFRAME_BODYROT
    if _is_near_quat(q, iq):
        return SAMEFRAME_INERTIA if _is_near(p, ip) else SAMEFRAME_INERTIAROT
    return SAMEFRAME_NONE


def _sameframe_obj_any(pos, quat, ipos, iquat):
    if _same(pos, 0) and _same_quat(quat, _QUNIT):
        return SAMEFRAME_BODY
    if _same_quat(quat, _QUNIT):
        return SAMEFRAME_BODYROT
    if _same(pos, ipos) and _same_quat(quat, iquat):
        return SAMEFRAME_INERTIA
    if _same_quat(quat, iquat):
        return SAMEFRAME_INERTIAROT
    return SAMEFRAME_NONE


def _geoms(out, geoms, bodies):
    f = np.float64
    n = len(geoms)
    ints = {k: [] for k in ("type", "contype", "conaffinity", "condim", "bodyid", "dataid",
                            "group", "priority", "sameframe")}
    inertial = {}
    for g in geoms:
        ints["type"].append(g.type)
        ints["contype"].append(g.contype)
        ints["conaffinity"].append(g.conaffinity)
        ints["condim"].append(g.condim)
        ints["bodyid"].append(g.body.id)
        ints["dataid"].append(g.dataid)
        ints["group"].append(g.group)
        ints["priority"].append(g.priority)
        ints["sameframe"].append(_sameframe_obj(g.pos, g.quat, g.body, inertial))
    for k, v in ints.items():
        setattr(out, "geom_" + k, np.array(v, dtype=np.int32))
    out.geom_plugin = np.full(n, -1, dtype=np.int32)  # (compile_plugins sets them)
    out.geom_plugin_refs = [getattr(g, "sdf_plugin", None) for g in geoms]
    out.geom_solmix = np.array([g.solmix for g in geoms], dtype=f)
    out.geom_solref = np.array([g.solref for g in geoms], dtype=f).reshape(n, 2)
    out.geom_solimp = np.array([g.solimp for g in geoms], dtype=f).reshape(n, 5)
    out.geom_size = np.array([g.size for g in geoms], dtype=f).reshape(n, 3)
    out.geom_aabb = np.array([g.aabb for g in geoms], dtype=f).reshape(n, 6)
    out.geom_rbound = np.array([g.rbound for g in geoms], dtype=f)
    out.geom_pos = np.array([g.pos for g in geoms], dtype=f).reshape(n, 3)
    out.geom_quat = np.array([g.quat for g in geoms], dtype=f).reshape(n, 4)
    out.geom_friction = np.array([g.friction for g in geoms], dtype=f).reshape(n, 3)
    out.geom_margin = np.array([g.margin for g in geoms], dtype=f)
    out.geom_gap = np.array([g.gap for g in geoms], dtype=f)
    out.geom_fluid = np.array([g.fluid for g in geoms], dtype=f).reshape(n, 12)
    out.geom_rgba = np.array([g.rgba for g in geoms], dtype=f).reshape(n, 4)


def _sites(out, sites, bodies):
    f = np.float64
    n = len(sites)
    out.site_type = np.array([s.type for s in sites], dtype=np.int32)
    out.site_bodyid = np.array([s.body.id for s in sites], dtype=np.int32)
    out.site_group = np.array([s.group for s in sites], dtype=np.int32)
    inertial = {}
    out.site_sameframe = np.array([_sameframe_obj(s.pos, s.quat, s.body, inertial)
                                   for s in sites], dtype=np.int32)
    out.site_size = np.array([s.size for s in sites], dtype=f).reshape(n, 3)
    out.site_pos = np.array([s.pos for s in sites], dtype=f).reshape(n, 3)
    out.site_quat = np.array([s.quat for s in sites], dtype=f).reshape(n, 4)
    out.site_rgba = np.array([s.rgba for s in sites], dtype=f).reshape(n, 4)


def _body_lookup(builder, name, el, attr):
    for b in builder.bodies:
        if b.name == name:
            return b.id
    raise error_at(el, f"unknown body '{name}'", attr)


def _global_poses(bodies):
    """Body poses and subtree centers of mass at qpos0 (no joint motion)."""
    n = len(bodies)
    if n < 32:  # few bodies: one by one (fewer numpy calls), quaternions as Python
        # floats (rot.rotate and rot.quat_mul's arithmetic, without their arrays)
        pos_of, quat_of = [np.zeros(3)] * n, [[1.0, 0.0, 0.0, 0.0]] * n
        for b in bodies[1:]:
            p = b.parent.id
            q = quat_of[p]
            pos_of[b.id] = pos_of[p] + rot.quat2mat(q) @ np.asarray(b.pos, dtype=np.float64)
            quat_of[b.id] = rot.mulquat_exact(q, rot.pyfloats(b.quat))
        xpos = np.array(pos_of, dtype=np.float64).reshape(n, 3)
        xquat = np.array(quat_of, dtype=np.float64).reshape(n, 4)
    else:
        xpos, xquat = np.zeros((n, 3)), rot.unit_quats(n)
        # level by level (each body's parent is done before it): stacked products,
        # each item with the arithmetic of the single one
        depth, levels = [0] * n, {}
        for b in bodies[1:]:
            depth[b.id] = depth[b.parent.id] + 1
            levels.setdefault(depth[b.id], []).append(b)
        for level in levels.values():
            ids = [b.id for b in level]
            par = [b.parent.id for b in level]
            pos = np.array([b.pos for b in level], dtype=np.float64).reshape(-1, 3)
            quat = np.array([b.quat for b in level], dtype=np.float64).reshape(-1, 4)
            xpos[ids] = xpos[par] + rot.matvec_batch(rot.quat2mat_batch(xquat[par]), pos)
            xquat[ids] = rot.quat_mul_batch(xquat[par], quat)
    ipos = np.array([np.zeros(3) if b.ipos is None else b.ipos for b in bodies],
                    dtype=np.float64).reshape(-1, 3)
    xipos = xpos + rot.matvec_batch(rot.quat2mat_batch(xquat), ipos)
    mass = np.array([b.mass for b in bodies])
    com = subtree_com(xipos, mass, [0] + [b.parent.id for b in bodies[1:]])
    return xpos, xquat, com


def _cameras(out, cams, builder, poses):
    f = np.float64
    n = len(cams)
    tb = [-1 if c.target is None else _body_lookup(builder, c.target, c.el, "target")
          for c in cams]
    out.cam_mode = np.array([c.mode for c in cams], dtype=np.int32)
    out.cam_bodyid = np.array([c.body.id for c in cams], dtype=np.int32)
    out.cam_targetbodyid = np.array(tb, dtype=np.int32)
    out.cam_pos = np.array([c.pos for c in cams], dtype=f).reshape(n, 3)
    out.cam_quat = np.array([c.quat for c in cams], dtype=f).reshape(n, 4)
    cameras0(out, *poses)
    out.cam_orthographic = np.array([c.orthographic for c in cams], dtype=np.int32)
    out.cam_fovy = np.array([c.fovy for c in cams], dtype=f)
    out.cam_ipd = np.array([c.ipd for c in cams], dtype=f)
    out.cam_resolution = np.array([c.resolution for c in cams], dtype=np.int32).reshape(n, 2)
    out.cam_sensorsize = np.array([c.sensorsize for c in cams], dtype=f).reshape(n, 2)
    out.cam_intrinsic = np.array([c.intrinsic for c in cams], dtype=f).reshape(n, 4)


def _lights(out, lights, builder, poses):
    f = np.float64
    n = len(lights)
    tb = [-1 if li.target is None else _body_lookup(builder, li.target, li.el, "target")
          for li in lights]
    out.light_mode = np.array([li.mode for li in lights], dtype=np.int32)
    out.light_bodyid = np.array([li.body.id for li in lights], dtype=np.int32)
    out.light_targetbodyid = np.array(tb, dtype=np.int32)
    out.light_type = np.array([li.type for li in lights], dtype=np.int32)
    out.light_castshadow = np.array([li.castshadow for li in lights], dtype=np.int32)
    out.light_active = np.array([li.active for li in lights], dtype=np.int32)
    for k in ("bulbradius", "intensity", "range", "cutoff", "exponent"):
        setattr(out, "light_" + k, np.array([getattr(li, k) for li in lights], dtype=f))
    for k in ("pos", "dir", "attenuation", "ambient", "diffuse", "specular"):
        setattr(out, "light_" + k,
                np.array([getattr(li, k) for li in lights], dtype=f).reshape(n, 3))
    lights0(out, *poses)


def _qpos_spec(out, nq):
    """The joints' reference positions as the spec writes them (MuJoCo's
    ComputeReference), which pad a short keyframe qpos."""
    ref = np.zeros(nq)
    for b in out.bodies:
        for j in b.joints:
            if j.type == JNT_FREE:
                ref[j.qposadr + 3] = 1.0
            elif j.type == JNT_BALL:
                ref[j.qposadr] = 1.0
            else:
                ref[j.qposadr] = j.ref_spec
    return ref


def _mocap_spec(out, what):
    """The mocap bodies' ``pos`` / ``quat`` attributes as written (zeros / 1 0 0 0 when
    not written, or written in another form), which pad a short keyframe mpos/mquat."""
    width, default = (3, (0.0, 0.0, 0.0)) if what == "pos" else (4, (1.0, 0.0, 0.0, 0.0))
    rows = []
    for b in out.bodies:
        if b.mocap:
            v = Attrs(b.el).floats(what, width) if b.el is not None else None
            rows.append(default if v is None else v)
    return np.asarray(rows, dtype=np.float64).reshape(-1)


_SPEC_PAD = {"qpos": _qpos_spec, "mpos": lambda out, nq: _mocap_spec(out, "pos"),
             "mquat": lambda out, nq: _mocap_spec(out, "quat")}


def _keyframes(spec, out, nkey_size=0, builder=None):
    keys = [k for section in spec.sections("keyframe") for k in section.children]
    attached = getattr(spec, "attached_keys", None)
    nq, nv, nmocap = len(out.qpos0), int(out._size_nv), int(out._size_nmocap)
    nu, na = int(out._size_nu), int(out._size_na)
    nkey_own = max(len(keys), nkey_size)
    nkey = nkey_own + len(attached or ())  # attached keyframes come last, as MuJoCo makes them
    if nkey * (nq + nv + 7 * nmocap + nu + na + 1) * 8 > _MAX_ALLOC:
        raise MemoryError
    if not nkey:  # (most models: empty arrays of the right shapes)
        out.key_time = np.zeros(0)
        out.key_qpos, out.key_qvel = np.zeros((0, nq)), np.zeros((0, nv))
        out.key_act, out.key_ctrl = np.zeros((0, na)), np.zeros((0, nu))
        out.key_mpos, out.key_mquat = np.zeros((0, nmocap, 3)), np.zeros((0, nmocap, 4))
        _setsize(out, nkey=0)
        return
    out.key_time = np.zeros(nkey)
    out.key_qpos = rot.rows(out.qpos0, nkey).reshape(nkey, nq)
    out.key_qvel = np.zeros((nkey, nv))
    out.key_act = np.zeros((nkey, na))
    out.key_ctrl = np.zeros((nkey, nu))
    out.key_mpos = rot.rows(out.mocap_pos0.reshape(-1), nkey).reshape(
        nkey, nmocap, 3)
    out.key_mquat = rot.rows(out.mocap_quat0.reshape(-1), nkey).reshape(
        nkey, nmocap, 4)
    for i, k in enumerate(keys):
        a = Attrs(k)
        out.key_time[i] = a.float("time", 0.0)
        for attr, arr, n in (("qpos", out.key_qpos, nq), ("qvel", out.key_qvel, nv),
                             ("act", out.key_act, na), ("ctrl", out.key_ctrl, nu),
                             ("mpos", out.key_mpos, 3 * nmocap),
                             ("mquat", out.key_mquat, 4 * nmocap)):
            v = a.floats(attr)
            if v is None:
                continue
            if len(v) > n:
                raise a.error(f"invalid {attr} size, expected length {n}", attr)
            # MuJoCo 3.4 pads a short vector (mjCModel::ExpandKeyframe) from the spec as
            # written, not from the compiled model: qpos from its reference (free
            # joints 0 0 0 1 0 0 0, ball joints 1 0 0 0, hinges and slides their `ref`
            # as written, degrees unconverted), mocap poses (whole bodies only) from
            # the bodies' `pos` and `quat` attributes as written (not their frames'
            # or other orientation forms), the rest with zeros
            width = {"mpos": 3, "mquat": 4}.get(attr, 1)
            if len(v) < n and attr in _SPEC_PAD:
                arr[i] = _SPEC_PAD[attr](out, nq).reshape(arr[i].shape)
            flat = arr[i].reshape(-1)
            k = len(v) - len(v) % width
            flat[:k] = v[:k]
            arr[i] = flat.reshape(arr[i].shape)
    fill_attached_keys(attached or (), builder, out, nkey_own)
    for i in range(nkey):
        for j in range(nmocap):
            out.key_mquat[i, j] = rot.normalize(out.key_mquat[i, j])[0]
        for jtype, adr in zip(out.jnt_type, out.jnt_qposadr):
            if jtype in (JNT_FREE, JNT_BALL):
                q = adr + (3 if jtype == JNT_FREE else 0)
                out.key_qpos[i, q:q + 4] = rot.normalize(out.key_qpos[i, q:q + 4])[0] \
                    if np.linalg.norm(out.key_qpos[i, q:q + 4]) >= rot.EPS else (1, 0, 0, 0)
    _setsize(out, nkey=nkey)


def _key_names(spec, out) -> list:
    names = [k.attr("name") or "" for s in spec.sections("keyframe") for k in s.children]
    attached = getattr(spec, "attached_keys", ())
    if attached:
        nown = len(out.key_time) - len(attached)
        names += [""] * (nown - len(names)) + [k.name for k in attached]
    return names


def _custom(spec, out):
    numeric, texts, tuples = [], [], []
    for section in spec.sections("custom"):
        for el in section.children:
            a = Attrs(el)
            if not el.attr("name"):  # MuJoCo: required attribute
                raise a.error("missing required attribute", "name")
            if el.tag == "numeric":
                v = a.floats("data")
                size = a.int("size")
                if v is None and size is None:
                    raise a.error("numeric needs data or size", "size")
                if size is None:
                    size = len(v)
                    if size > 500:
                        raise a.error("too much data (custom field size must be at most "
                                      "500)", "data")
                if not 1 <= size <= 500:  # MuJoCo's limit
                    raise a.error("custom field size must be between 1 and 500", "size")
                vals = np.zeros(size)
                if v is not None:
                    if len(v) > size:
                        raise a.error("numeric data longer than size", "data")
                    vals[:len(v)] = v
                numeric.append((el.attr("name") or "", vals))
            elif el.tag == "text":
                if el.attr("data") is None:  # MuJoCo: required attribute
                    raise a.error("missing required attribute", "data")
                texts.append(el)
            else:
                tuples.append(el)
    out.numeric_adr = np.cumsum([0] + [len(v) for _, v in numeric])[:-1].astype(np.int32)
    out.numeric_size = np.array([len(v) for _, v in numeric], dtype=np.int32)
    out.numeric_data = np.concatenate([v for _, v in numeric]) if numeric else np.zeros(0)
    out.numeric_names = [n for n, _ in numeric]
    out.text_names = [el.attr("name") or "" for el in texts]
    out.text_values = [el.attr("data") or "" for el in texts]
    textdata = sum(len(el.attr("data") or "") + 1 for el in texts)
    tupledata = sum(len(el.find("element")) for el in tuples)
    out.tuple_names = [el.attr("name") or "" for el in tuples]
    out.tuple_els = tuples
    _setsize(out, nnumeric=len(numeric), nnumericdata=len(out.numeric_data),
             ntext=len(texts), ntuple=len(tuples), ntextdata=textdata, ntupledata=tupledata)


def _tuple_objects(el) -> tuple[list, list, list]:
    """A <tuple>'s element types (mjtObj), names and parameters, read as MuJoCo's
    reader reads them: all names go into one list split at white space."""
    from .sensor import OBJ_TYPES
    types, names, prms = [], [], []
    for item in el.find("element"):
        a = Attrs(item)
        kind = a.text("objtype")
        if kind is None:
            raise a.error("required attribute missing", "objtype")
        if kind not in OBJ_TYPES:
            raise a.error("unknown object type", "objtype")
        types.append(OBJ_TYPES[kind])
        name = a.text("objname")
        if name is None:
            raise a.error("required attribute missing", "objname")
        names.extend(name.split())
        prms.append(a.float("prm", 0.0))
    return types, names, prms


def _texts_and_tuples(out) -> None:
    """text_* and tuple_* (mjCModel's CopyObjects and mjCTuple::ResolveReferences):
    each tuple object found by type and name among the compiled objects."""
    from .sensor import OBJ_TYPES
    values = out.text_values
    out.text_size = np.array([len(v) + 1 for v in values], dtype=np.int32)
    out.text_adr = (np.cumsum(out.text_size) - out.text_size).astype(np.int32)
    out.text_data = np.frombuffer(b"".join(v.encode() + b"\0" for v in values),
                                  dtype=np.uint8).astype(np.int32)
    kind_of = {code: kind for kind, code in OBJ_TYPES.items()}
    lookup: dict = {}
    objtype, objid, objprm, sizes = [], [], [], []
    for t, el in enumerate(out.tuple_els):
        types, names, prms = _tuple_objects(el)
        label = el.attr("name") or ""
        if not types:
            raise error_at(el, f"tuple '{label}' (id = {t}) is empty")
        if len(names) != len(types):
            raise error_at(el, f"tuple '{label}' (id = {t}) has object arrays with "
                               f"different sizes", "objname")
        for code, name in zip(types, names):
            kind = kind_of[code]
            kind = "body" if kind == "xbody" else kind
            table = lookup.get(kind)
            if table is None:
                table = lookup[kind] = {}
                for i, n in enumerate(out.names.get(kind, ())):
                    if n:
                        table.setdefault(n, i)
            if name not in table:
                raise error_at(el, f"unrecognized object '{name}' in tuple {t}")
            objid.append(table[name])
        objtype.extend(types)
        objprm.extend(prms)
        sizes.append(len(types))
    out.tuple_size = np.array(sizes, dtype=np.int32)
    out.tuple_adr = (np.cumsum(out.tuple_size) - out.tuple_size).astype(np.int32)
    out.tuple_objtype = np.array(objtype, dtype=np.int32)
    out.tuple_objid = np.array(objid, dtype=np.int32)
    out.tuple_objprm = np.array(objprm, dtype=np.float64)


def tuple_geom_names(spec) -> set:
    """Names of geoms in <tuple>s: MuJoCo marks them not visual (discardvisual keeps
    them)."""
    names = set()
    for section in spec.sections("custom"):
        for el in section.children:
            if el.tag == "tuple":
                for item in el.find("element"):
                    if item.attr("objtype") == "geom" and item.attr("objname"):
                        names.update(item.attr("objname").split())
    return names


_USER = (("body", "nuser_body", lambda bs: bs[1:]), ("jnt", "nuser_jnt", "joints"),
         ("geom", "nuser_geom", "geoms"), ("site", "nuser_site", "sites"),
         ("cam", "nuser_cam", "cameras"))


def _user_fields(builder, size, out):
    """<body|joint|geom|site|camera user="..."> padded to nuser_* (-1: the longest)."""
    # (most models: no default class gives user values, so only the elements' own)
    default_user = any("user" in d for cls in builder.defaults.classes.values()
                       for d in cls.values())
    for prefix, key, what in _USER:
        if callable(what):
            objs = what(builder.bodies)
            rows = [_NO_USER] + [_user_values(b.el) for b in objs]
        else:
            objs = [o for b in builder.bodies for o in getattr(b, what)]
            rows = [_user_values(o.el, builder.defaults_for(o))
                    if default_user or getattr(o.el, "user", None) is not None else _NO_USER
                    for o in objs]
        n = size.get(key, -1)
        longest = max(map(len, rows), default=0)
        if n == -1:
            n = longest
        if longest:  # (none has values, the common case: nothing to check or copy)
            for o, r in zip(objs if not callable(what) else [None] + list(objs), rows):
                if len(r) > n:
                    raise error_at(o.el if o is not None else None,
                                   f"user has more values than {key}", "user")
        if len(rows) * n * 8 > _MAX_ALLOC:
            raise MemoryError
        arr = np.zeros((len(rows), n))
        if longest:
            for i, r in enumerate(rows):
                if len(r):
                    arr[i, :len(r)] = r
        setattr(out, prefix + "_user", arr)
        _setsize(out, **{key: n})


_NO_USER = ()


def _user_values(el, defaults=None):
    if getattr(el, "user", None) is None and (not defaults or "user" not in defaults):
        return _NO_USER  # the common case, without reading attributes
    a = Attrs(el, defaults or {})
    v = a.floats("user", finite=False)
    return np.zeros(0) if v is None else v


def _resolve_materials(builder, assets, out):
    for kind, objs in (("geom", [g for b in builder.bodies for g in b.geoms]),
                       ("site", [s for b in builder.bodies for s in b.sites])):
        ids = []
        for o in objs:
            name = o.material
            if name is None and kind == "geom":
                # the mesh's material, for mesh geoms and primitives fitted to a mesh
                name = getattr(o, "mesh_material", None)
            if name and kind == "site" and assets.discard:
                # MuJoCo: discardvisual deletes materials but keeps site references
                raise error_at(o.el, f"material '{name}' not found (discardvisual removes "
                                     f"all materials)", "material")
            ids.append(assets.material_id(name, o.el) if name else -1)
        setattr(out, kind + "_matid", np.array(ids, dtype=np.int32))
    for li in builder.lights:
        li.texid = assets.texture_id(li.texture, li.el) if li.texture else -1
    out.light_texid = np.array([li.texid for li in builder.lights], dtype=np.int32)


def _names(spec, builder, assets, out):
    bodies = builder.bodies
    names = {
        "body": [b.name for b in bodies],
        "joint": [j.name for b in bodies for j in b.joints],
        "geom": [g.name for b in bodies for g in b.geoms],
        "site": [s.name for b in bodies for s in b.sites],
        "camera": [c.name for b in bodies for c in b.cameras],
        "light": [li.name for b in bodies for li in b.lights],
        "numeric": out.numeric_names, "text": out.text_names, "tuple": out.tuple_names,
        "key": _key_names(spec, out),
        "tendon": out.tendon_names, "actuator": out.actuator_names,
        "pair": out.pair_names, "exclude": out.exclude_names,
        "equality": out.eq_names, "sensor": out.sensor_names, "flex": out.flex_names,
        "plugin": out.plugin_names, "skin": out.skin_names,
    }
    names.update(assets.names())
    objects = {
        "body": [b.el for b in bodies],
        "joint": [j.el for b in bodies for j in b.joints],
        "geom": [g.el for b in bodies for g in b.geoms],
        "site": [s.el for b in bodies for s in b.sites],
        "camera": [c.el for b in bodies for c in b.cameras],
        "light": [li.el for b in bodies for li in b.lights],
        "tendon": out.tendon_els, "actuator": out.actuator_els,
        "pair": out.pair_els, "exclude": out.exclude_els,
        "equality": out.eq_els, "sensor": out.sensor_els, "flex": out.flex_els,
        "plugin": out.plugin_els, "skin": out.skin_els,
    }
    # the elements the joints and bodies came from (tiphys.recompile carries the state
    # of those still in the edited spec over, as mj_recompile)
    out.joint_els, out.body_els = objects["joint"], objects["body"]
    # (and those of the other body children: tiphys.copy_back writes to them)
    out.geom_els, out.site_els = objects["geom"], objects["site"]
    out.cam_els, out.light_els = objects["camera"], objects["light"]
    for kind, lst in names.items():
        seen = {}
        for i, n in enumerate(lst):
            if not n:
                continue
            if n in seen:
                el = objects.get(kind, [None] * len(lst))[i]
                raise ModelError(f"repeated name '{n}' in {kind}",
                                 file=getattr(el, "xml_file", None),
                                 line=getattr(el, "xml_line", None),
                                 element=getattr(el, "tag", None), attribute="name")
            seen[n] = i
    return names


def _levels(out):
    """Tree structure for single-launch tree passes: depths and subtree lists."""
    parent = out.body_parentid.tolist()
    nbody = len(parent)
    depth = [0] * nbody
    for i in range(1, nbody):
        depth[i] = depth[parent[i]] + 1
    depth = np.array(depth, dtype=np.int32)
    subtrees = [[i] for i in range(nbody)]
    for i in range(nbody - 1, 0, -1):
        j = parent[i]
        while True:
            subtrees[j].append(i)
            if j == 0:
                break
            j = parent[j]
    out.body_depth = depth
    out.body_subtree_num = np.array([len(s) for s in subtrees], dtype=np.int32)
    out.body_subtree_adr = np.cumsum([0] + [len(s) for s in subtrees])[:-1].astype(np.int32)
    out.body_subtree = np.array([i for s in subtrees for i in s], dtype=np.int32)
    if hasattr(out, "sizes"):
        out.sizes["nbodysubtree"] = len(out.body_subtree)
    else:
        _setsize(out, nbodysubtree=len(out.body_subtree))


def model_dir(spec) -> str:
    return spec.basedir or os.getcwd()


__all__ = ["compile_spec", "CompileContext", "BOOL"]
