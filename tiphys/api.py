"""Loading models: MJCF files/strings and MuJoCo-compiled models."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .compiler.compile import compile_spec
from .errors import ModelError
from .lengthrange import set_length_range
from .model import Model, ModelArrays
from .spec import Spec, parse_xml
from .types import MODEL_EXTRA_FIELDS, MODEL_FIELDS, MODEL_SIZES, numpy_shape


def load_spec(path: str, assets: Optional[dict] = None) -> Spec:
    """Parse an MJCF file into an editable Spec. ``path`` is opened as MuJoCo's
    mj_loadXML opens it: from ``assets`` (name -> bytes), else from the registered
    resource provider its scheme names ("mem:robot.xml"), else from the file system;
    relative names inside a provider's model start from the provider's ``getdir``."""
    from .io.resources import FILE_PROVIDER, ResourceReader
    try:
        res, tried = ResourceReader("", assets).open(path)
    except ModelError as exc:  # a provider failing
        raise ModelError(f"cannot read model file: {exc.detail}", file=path) \
            from exc.__cause__
    if res is None:
        raise ModelError(f"cannot read model file: tried {'; '.join(tried)}", file=path)
    if res.provider is FILE_PROVIDER:  # (the directory made absolute, as parse_xml does)
        return parse_xml(res.content, filename=path, assets=assets)
    return parse_xml(res.content, filename=path, assets=assets, basedir=res.dir)


def compile_model(spec: Spec) -> Model:
    """Compile a Spec into a device Model (actuator length ranges simulated on it)."""
    m = Model(compile_spec(spec))
    set_length_range(m)
    return m


def copy_model(m: Model) -> Model:
    """A new Model with its own copy of every array (mj_copyModel): the host arrays
    copied, uploaded again, with ``m``'s current options and per-world parameters;
    changing one model never changes the other."""
    a = ModelArrays()
    for name, value in vars(m.arrays).items():
        setattr(a, name, value.copy() if isinstance(value, np.ndarray) else value)
    a.sizes = dict(m.arrays.sizes)
    a.opt = m.opt.frozen
    a.lengthrange_pending = []  # (m's length ranges are in its arrays already)
    out = Model(a)
    if m._params:
        from .params import set_param
        for name, values in m._params.items():
            set_param(out, name, np.array(values, copy=True))
    return out


def recompile(spec: Spec, m: Model, d) -> tuple:
    """Compile the edited ``spec`` again and carry ``d``'s state over (mj_recompile):
    returns a new (Model, Data) with as many worlds, the same time, and, for the joints,
    actuators and mocap bodies still in the spec (the same elements), each world's
    qpos, qvel, act, ctrl and mocap pose; new joints start at qpos0, new mocap bodies
    at their body pose, new actuators with zero ctrl and their reset act. ``m`` and
    ``d`` are left as they were."""
    from .compiler.compile import _JNT_DOFS, _JNT_QPOS
    from .model import _set_padded, make_data
    new = compile_model(spec)
    d2 = make_data(new, d.nworld)
    old, cur = m.arrays, new.arrays
    state = {name: d.numpy(name) for name in ("qpos", "qvel", "act", "ctrl", "mocap_pos",
                                              "mocap_quat", "time")}
    fresh = {name: d2.numpy(name) for name in state}

    def index(els):
        return {id(el): i for i, el in enumerate(els or ()) if el is not None}

    was = index(getattr(old, "joint_els", None))
    for j, el in enumerate(getattr(cur, "joint_els", None) or ()):
        k = was.get(id(el))
        if k is None or int(old.jnt_type[k]) != int(cur.jnt_type[j]):
            continue
        nq, nv = _JNT_QPOS[int(cur.jnt_type[j])], _JNT_DOFS[int(cur.jnt_type[j])]
        a, b = int(cur.jnt_qposadr[j]), int(old.jnt_qposadr[k])
        fresh["qpos"][:, a:a + nq] = state["qpos"][:, b:b + nq]
        a, b = int(cur.jnt_dofadr[j]), int(old.jnt_dofadr[k])
        fresh["qvel"][:, a:a + nv] = state["qvel"][:, b:b + nv]
    was = index(getattr(old, "actuator_els", None))
    for i, el in enumerate(getattr(cur, "actuator_els", None) or ()):
        k = was.get(id(el))
        if k is None:
            continue
        fresh["ctrl"][:, i] = state["ctrl"][:, k]
        n, n0 = int(cur.actuator_actnum[i]), int(old.actuator_actnum[k])
        if n and n == n0:
            a, b = int(cur.actuator_actadr[i]), int(old.actuator_actadr[k])
            fresh["act"][:, a:a + n] = state["act"][:, b:b + n]
    was = index(getattr(old, "body_els", None))
    for i, el in enumerate(getattr(cur, "body_els", None) or ()):
        k = was.get(id(el))
        if k is None or int(cur.body_mocapid[i]) < 0 or int(old.body_mocapid[k]) < 0:
            continue
        a, b = int(cur.body_mocapid[i]), int(old.body_mocapid[k])
        fresh["mocap_pos"][:, a] = state["mocap_pos"][:, b]
        fresh["mocap_quat"][:, a] = state["mocap_quat"][:, b]
    fresh["time"] = state["time"]
    for name, value in fresh.items():
        if value.size:
            _set_padded(getattr(d2, name), value)
    return new, d2



def load_model(path: str, assets: Optional[dict] = None) -> Model:
    """Load and compile an MJCF file (``assets``: optional name -> bytes VFS), or load
    a model saved by ``save_model`` (tiphys.saved) without compiling."""
    from .saved import is_saved_model, load_saved_model
    if is_saved_model(path):
        return load_saved_model(path)
    return compile_model(load_spec(path, assets))


def load_model_from_string(xml: str, assets: Optional[dict] = None,
                           basedir: Optional[str] = None) -> Model:
    """Compile MJCF text; referenced files come from ``assets`` (name -> bytes) or basedir."""
    return compile_model(parse_xml(xml, assets=assets, basedir=basedir))


_OBJ_NAMES = {"body": "mjOBJ_BODY", "joint": "mjOBJ_JOINT", "geom": "mjOBJ_GEOM",
              "site": "mjOBJ_SITE", "camera": "mjOBJ_CAMERA", "light": "mjOBJ_LIGHT",
              "mesh": "mjOBJ_MESH", "hfield": "mjOBJ_HFIELD", "texture": "mjOBJ_TEXTURE",
              "material": "mjOBJ_MATERIAL", "numeric": "mjOBJ_NUMERIC", "text": "mjOBJ_TEXT",
              "tuple": "mjOBJ_TUPLE", "key": "mjOBJ_KEY", "pair": "mjOBJ_PAIR",
              "exclude": "mjOBJ_EXCLUDE", "equality": "mjOBJ_EQUALITY",
              "tendon": "mjOBJ_TENDON", "actuator": "mjOBJ_ACTUATOR", "sensor": "mjOBJ_SENSOR",
              "flex": "mjOBJ_FLEX", "skin": "mjOBJ_SKIN"}
_COUNT = {"body": "nbody", "joint": "njnt", "geom": "ngeom", "site": "nsite", "camera": "ncam",
          "light": "nlight", "mesh": "nmesh", "hfield": "nhfield", "texture": "ntex",
          "material": "nmat", "numeric": "nnumeric", "text": "ntext", "tuple": "ntuple",
          "key": "nkey", "pair": "npair", "exclude": "nexclude", "equality": "neq",
          "tendon": "ntendon", "actuator": "nu", "sensor": "nsensor", "flex": "nflex",
          "skin": "nskin"}


def model_arrays_from_mujoco(mjm) -> ModelArrays:
    """Host arrays from a model compiled by MuJoCo itself (``mujoco.MjModel``)."""
    import mujoco  # the oracle is only needed here

    out = ModelArrays()
    sizes = {k: int(getattr(mjm, k)) for k in MODEL_SIZES if hasattr(mjm, k)}
    for k in MODEL_SIZES:
        sizes.setdefault(k, 0)
    out.sizes = sizes
    for name, shape, dtype, _ in MODEL_FIELDS:
        arr = getattr(mjm, name)
        arr = np.frombuffer(arr, dtype=np.uint8) if isinstance(arr, bytes) else \
            np.asarray(arr)  # (text_data comes as bytes)
        setattr(out, name, arr.reshape(numpy_shape(shape, sizes)[:] if "*" not in shape
                                       else numpy_shape(shape, sizes)[1:]))
    out.opt = _option_from_mujoco(mjm.opt)
    from .compiler.options import Statistic
    out.stat = Statistic(meaninertia=float(mjm.stat.meaninertia),
                         meanmass=float(mjm.stat.meanmass), meansize=float(mjm.stat.meansize),
                         extent=float(mjm.stat.extent), center=np.array(mjm.stat.center))
    out.vis = {"map": {"znear": float(mjm.vis.map.znear), "zfar": float(mjm.vis.map.zfar)}}
    names = {}
    for kind, objname in _OBJ_NAMES.items():
        n = sizes.get(_COUNT[kind], 0) if _COUNT[kind] in sizes else \
            int(getattr(mjm, _COUNT[kind]))
        obj = getattr(mujoco.mjtObj, objname)
        names[kind] = [mujoco.mj_id2name(mjm, obj, i) or "" for i in range(n)]
    out.names = names
    out.model_name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_MODEL, 0) or ""
    mocap = [i for i in range(mjm.nbody) if mjm.body_mocapid[i] >= 0]
    mocap.sort(key=lambda i: mjm.body_mocapid[i])
    out.mocap_pos0 = np.array([mjm.body_pos[i] for i in mocap]).reshape(-1, 3)
    out.mocap_quat0 = np.array([mjm.body_quat[i] for i in mocap]).reshape(-1, 4)
    from .compiler.compile import _levels
    _levels(out)
    return out


def _option_from_mujoco(opt):
    from dataclasses import fields

    from .compiler.options import Option
    values = {}
    for f in fields(Option):
        v = getattr(opt, f.name)
        values[f.name] = tuple(float(x) for x in v) if isinstance(f.default, tuple) else \
            type(f.default)(v)
    return Option(**values)


# MjModel size fields that tiphys's Model does not carry. Each either names a feature
# tiphys does not simulate yet (put_model refuses a model that has it, rather than
# dropping it silently), or is MuJoCo bookkeeping that tiphys derives or does not need.
UNSUPPORTED_SIZES: dict = {}
# Model sizes tiphys compiles and carries but does not simulate yet: put_model and
# make_data refuse a model that has them.
# (flexes: kernels/flex.py's check_flex names the flex features it refuses: the flex
# collisions tiphys does not have yet, interpolated flexes)
NOT_SIMULATED_SIZES: dict = {}
# Model sizes tiphys compiles and simulates but put_model cannot take from MuJoCo:
# mjModel.plugin holds MuJoCo's global plugin slots, which its Python bindings do not
# name (tiphys's own registry numbers them differently).
PUT_MODEL_REFUSED_SIZES = {
    "nplugin": "plugin instances (<plugin>, <instance>): MuJoCo's plugin slots are not "
               "named by its Python bindings; compile the MJCF with tiphys.load_model",
}
IGNORED_SIZES = {
    # sparse-matrix sizes tiphys derives from the topology itself
    "nB": "sparse body-dof nonzeros", "nC": "sparse reduced dof-dof nonzeros",
    "nD": "sparse dof-dof nonzeros", "nJmom": "sparse actuator_moment nonzeros",
    # memory and name bookkeeping of mjModel / mjData
    "narena": "arena bytes", "nbuffer": "model buffer bytes", "nnames": "name characters",
    "nnames_map": "name hash slots", "npaths": "path characters",
    # buffer sizes: make_data(m, nworld, nconmax=, njmax=) chooses them
    "nconmax": "contact buffer size", "njmax": "constraint buffer size",
    "nemax": "equality rows (derived)", "ngravcomp": "gravcomp bodies (derived)",
}


def unsupported_features(mjm) -> list[str]:
    """What a ``mujoco.MjModel`` holds that tiphys would drop, as 'name=count (what)'."""
    found = []
    for name, what in {**NOT_SIMULATED_SIZES, **UNSUPPORTED_SIZES,
                       **PUT_MODEL_REFUSED_SIZES}.items():
        count = int(getattr(mjm, name, 0) or 0)
        if count:
            found.append(f"{name}={count} ({what})")
    return found


def put_model(mjm) -> Model:
    """A tiphys Model from a model compiled by MuJoCo (``mujoco.MjModel``).

    Raises NotImplementedError, naming each element, when the model has something
    tiphys does not simulate yet (flex-heightfield collisions, interpolated
    flexes, plugins): building the
    Model without it would silently simulate a different model.
    """
    missing = unsupported_features(mjm)
    if missing:
        raise NotImplementedError(
            "put_model: tiphys does not support these elements of the MuJoCo model yet "
            "and would drop them: " + ", ".join(missing))
    m = Model(model_arrays_from_mujoco(mjm))
    from .kernels.flex import check_flex
    check_flex(m, "put_model")
    return m


__all__ = ["load_model", "load_model_from_string", "load_spec", "compile_model", "put_model",
           "MODEL_EXTRA_FIELDS"]
