"""Named access, as MuJoCo's Python bindings give it: ``d.body("torso").xpos``,
``d.joint("hip").qpos``, ``d.actuator("motor").ctrl = u``, ``m.geom("floor").friction``.

``d.<type>(name or id)`` is a view of one object's rows of the Data fields, for every
world: reading an attribute returns numpy (nworld, ...) (one host copy of the field);
assigning one writes those rows in every world (one value, or one per world). The
attribute names are MuJoCo's: the field name without the object type's prefix
(``d.geom("g").xpos`` is geom_xpos, ``d.actuator("a").force`` is actuator_force,
``d.tendon("t").length`` is ten_length, ``d.sensor("s").data`` the sensor's slice of
sensordata); a joint's qpos-sized and dof-sized fields (qpos, qvel, qacc, qfrc_*, ...)
are sliced to that joint, an actuator's act to its activations.

``m.<type>(name or id)`` is a view of one object's model fields (``m.body("b").mass``
is body_mass[b]; a joint's jnt_* fields, its dof_* fields and qpos0 / qpos_spring
sliced to it). Reading gives the field's row (rows of every world, (nworld, ...), where
the field was set per world); assigning one of the per-world parameter fields
(tiphys.PARAM_FIELDS) sets that row through tiphys.set_param, for every world or per
world; the other model fields are compiled and read-only.
"""
from __future__ import annotations

import numpy as np

from .types import DATA_FIELDS, MODEL_FIELDS, parse_shape

# object type -> (its count, the prefix of its model fields, of its Data fields)
TYPES = {
    "body": ("nbody", "body_", ""), "joint": ("njnt", "jnt_", ""),
    "geom": ("ngeom", "geom_", "geom_"), "site": ("nsite", "site_", "site_"),
    "camera": ("ncam", "cam_", "cam_"), "light": ("nlight", "light_", "light_"),
    "actuator": ("nu", "actuator_", "actuator_"), "tendon": ("ntendon", "tendon_", "ten_"),
    "sensor": ("nsensor", "sensor_", ""), "equality": ("neq", "eq_", "eq_"),
    "mesh": ("nmesh", "mesh_", None), "hfield": ("nhfield", "hfield_", None),
    "material": ("nmat", "mat_", None), "texture": ("ntex", "tex_", None),
    "pair": ("npair", "pair_", None), "exclude": ("nexclude", "exclude_", None),
    "key": ("nkey", "key_", None), "numeric": ("nnumeric", "numeric_", None),
    "text": ("ntext", "text_", None), "tuple": ("ntuple", "tuple_", None),
}
ALIASES = {"jnt": "joint", "cam": "camera", "eq": "equality", "mat": "material",
           "tex": "texture", "keyframe": "key"}


def _first_dim(shape: str):
    dims = [t for t in parse_shape(shape)[0] if t not in ("*", "nworld")]
    return dims[0] if dims else None


def _resolve(m, objtype: str, key) -> int:
    from .model import id2name, name2id
    count = getattr(m, TYPES[objtype][0])
    if isinstance(key, str):
        i = name2id(m, objtype, key)
        if i < 0:
            raise KeyError(f"the model has no {objtype} named {key!r}")
        return i
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < count:
        return int(key)
    raise KeyError(f"{objtype} {key!r}: give a name or an id in [0, {count})"
                   + ("" if not isinstance(key, (int, np.integer)) else
                      f" ({objtype} names: {id2name(m, objtype, 0)!r}, ...)" if count else ""))


def _slices(m, objtype: str, i: int) -> dict:
    """Size name -> the index (int or slice) of object i along that dimension."""
    a = m.arrays
    out = {TYPES[objtype][0]: i}
    if objtype == "joint":
        jtype = int(np.asarray(a.jnt_type)[i])
        nq, nv = {0: (7, 6), 1: (4, 3)}.get(jtype, (1, 1))
        qadr, vadr = int(np.asarray(a.jnt_qposadr)[i]), int(np.asarray(a.jnt_dofadr)[i])
        out.update(nq=slice(qadr, qadr + nq), nv=slice(vadr, vadr + nv))
    elif objtype == "actuator":
        adr, num = int(np.asarray(a.actuator_actadr)[i]), int(np.asarray(a.actuator_actnum)[i])
        if adr >= 0:
            out["na"] = slice(adr, adr + num)
    elif objtype == "sensor":
        adr, dim = int(np.asarray(a.sensor_adr)[i]), int(np.asarray(a.sensor_dim)[i])
        out["nsensordata"] = slice(adr, adr + dim)
    return out


def _data_attrs(objtype: str) -> dict:
    """Attribute name -> (Data field, size name it is indexed by) for a type."""
    count, _, prefix = TYPES[objtype]
    out = {}
    for name, shape, _, _ in DATA_FIELDS:  # MuJoCo's fields (the extra ones are scratch)
        dim = _first_dim(shape)
        if objtype == "sensor" and name == "sensordata":
            out["data"] = (name, "nsensordata")
        elif objtype == "joint" and dim in ("nq", "nv", "njnt"):
            out[name] = (name, dim)
        elif objtype == "actuator" and name == "act":
            out[name] = (name, "na")
        elif dim == count and prefix is not None:
            attr = name[len(prefix):] if prefix and name.startswith(prefix) else name
            out[attr] = (name, dim)
    return out


def _model_attrs(objtype: str) -> dict:
    count, prefix, _ = TYPES[objtype]
    out = {}
    for name, shape, _, _ in MODEL_FIELDS:
        dim = _first_dim(shape)
        if name.startswith(prefix) and dim == count:
            out[name[len(prefix):]] = (name, dim)
        elif objtype == "joint" and name in ("qpos0", "qpos_spring"):
            out[name] = (name, "nq")
    if objtype == "joint":  # the joint's dofs: dof_damping as damping, ... (dof_bodyid,
        # dof_solref, ... by their full names where a jnt_ field has the short one)
        for name, shape, _, _ in MODEL_FIELDS:
            if name.startswith("dof_") and _first_dim(shape) == "nv":
                short = name[4:]
                out[name if short in out else short] = (name, "nv")
    return out


class _View:
    """One object of a model: its id, name, and the fields an attribute names."""

    def __init__(self, m, objtype: str, key, attrs: dict, **extra):
        from .model import id2name
        i = _resolve(m, objtype, key)
        self.__dict__.update(_m=m, _type=objtype, id=i, _attrs=attrs,
                             _index=_slices(m, objtype, i), name=id2name(m, objtype, i) or "",
                             **extra)

    def _where(self, attr, prefix):
        try:
            field, dim = self._attrs[attr]
        except KeyError:
            raise AttributeError(f"{prefix}.{self._type}(...) has no attribute {attr!r}; it "
                                 f"has {', '.join(sorted(self._attrs))}") from None
        if dim not in self._index:
            raise AttributeError(f"{self._type} {self.name or self.id} has no {attr} "
                                 f"(it has no {dim} entries)")
        return field, self._index[dim]

    def __dir__(self):
        return sorted(set(self._attrs) | {"id", "name"})


class DataView(_View):
    """One object's rows of the Data fields, every world (see the module doc)."""

    def __init__(self, m, d, objtype: str, key):
        objtype = ALIASES.get(objtype, objtype)
        if TYPES[objtype][2] is None:
            raise AttributeError(f"Data has no {objtype} view (MuJoCo's mjData has no "
                                 f"{objtype} fields); use m.{objtype}({key!r})")
        super().__init__(m, objtype, key, _data_attrs(objtype), _d=d)

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        field, index = self._where(attr, "d")
        return np.array(self._d.numpy(field)[:, index])

    def __setattr__(self, attr, value):
        from .model import _set_padded
        field, index = self._where(attr, "d")
        d = self._d
        full = d.numpy(field).copy()
        full[:, index] = value
        _set_padded(getattr(d, field), full)

    def __repr__(self):
        return f"<tiphys {self._type} view {self.name or self.id!r} of {self._d!r}>"


class ModelView(_View):
    """One object's model fields (see the module doc)."""

    def __init__(self, m, objtype: str, key):
        objtype = ALIASES.get(objtype, objtype)
        super().__init__(m, objtype, key, _model_attrs(objtype))

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        from .params import PARAM_FIELDS
        field, index = self._where(attr, "m")
        if field in PARAM_FIELDS:
            values = self._m.param(field)  # (1 or nworld, ...)
            rows = np.array(values[:, index])
            return rows[0] if len(values) == 1 else rows
        return np.array(np.asarray(getattr(self._m.arrays, field))[index])

    def __setattr__(self, attr, value):
        from .params import PARAM_FIELDS, get_param, set_param
        field, index = self._where(attr, "m")
        if field not in PARAM_FIELDS:
            raise AttributeError(f"m.{self._type}(...).{attr} ({field}) is compiled and "
                                 f"read-only; the fields a model takes per world are "
                                 f"tiphys.PARAM_FIELDS")
        values = get_param(self._m, field)
        value = np.asarray(value, dtype=np.float64)
        one_row = values[0][index].shape
        if len(values) == 1 and value.shape != one_row and value.ndim == len(one_row) + 1:
            values = np.repeat(values, len(value), axis=0)  # now one set per world
        values[:, index] = value
        set_param(self._m, field, values[0] if len(values) == 1 else values)

    def __repr__(self):
        return f"<tiphys {self._type} view {self.name or self.id!r} of {self._m!r}>"


def _install() -> None:
    from .model import Data, Model

    def data_method(objtype):
        def view(self, key):
            return DataView(self._named_model(), self, objtype, key)
        view.__name__ = objtype
        view.__doc__ = f"Named access to a {objtype}'s Data rows (tiphys.named)."
        return view

    def model_method(objtype):
        def view(self, key):
            return ModelView(self, objtype, key)
        view.__name__ = objtype
        view.__doc__ = f"Named access to a {objtype}'s model fields (tiphys.named)."
        return view

    for objtype in list(TYPES) + list(ALIASES):
        canonical = ALIASES.get(objtype, objtype)
        setattr(Model, objtype, model_method(canonical))
        setattr(Data, objtype, data_method(canonical))  # raises for model-only types


_install()
