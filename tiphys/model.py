"""Model and Data on the device: Taichi arrays generated from the tables in types.py."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

import numpy as np
import taichi as ti

from . import backend
from .types import DATA_EXTRA_FIELDS, DATA_FIELDS, MODEL_EXTRA_FIELDS, MODEL_FIELDS, \
    MODEL_SIZES, numpy_shape, parse_shape

OBJ_TYPES = {
    # object type -> (count attribute, names key)
    "body": "nbody", "joint": "njnt", "geom": "ngeom", "site": "nsite", "camera": "ncam",
    "light": "nlight", "mesh": "nmesh", "hfield": "nhfield", "texture": "ntex",
    "material": "nmat", "pair": "npair", "exclude": "nexclude", "equality": "neq",
    "tendon": "ntendon", "actuator": "nu", "sensor": "nsensor", "numeric": "nnumeric",
    "text": "ntext", "tuple": "ntuple", "key": "nkey",
}
_OBJ_ALIASES = {"jnt": "joint", "cam": "camera", "tex": "texture", "mat": "material",
                "eq": "equality", "keyframe": "key", "xbody": "body"}


def _make_array(shape: str, dtype: str, sizes: dict, nworld: int = 1, nbatch: int = 1):
    """A Taichi ndarray for a table entry; zero-size dimensions are padded to 1.

    ndarrays, not fields: kernels take them as arguments, so one compiled kernel
    serves every model (fields would recompile every kernel for every model).
    """
    dims, elem = parse_shape(shape)
    full = numpy_shape(shape, sizes, nworld, nbatch)
    array_shape = tuple(max(1, n) for n in full[:len(dims)])
    tdtype = backend.float_dtype() if dtype == "f" else ti.i32
    if not elem:
        return ti.ndarray(tdtype, shape=array_shape)
    if len(elem) == 1:
        return ti.Vector.ndarray(elem[0], tdtype, shape=array_shape)
    return ti.Matrix.ndarray(elem[0], elem[1], tdtype, shape=array_shape)


def _fill(array_dev, array: np.ndarray, shape: str, sizes: dict, nworld=1, nbatch=1):
    """Copy a numpy array into a (possibly padded) device array."""
    want = numpy_shape(shape, sizes, nworld, nbatch)
    array = np.asarray(array).reshape(want)
    if 0 in want[:len(parse_shape(shape)[0])]:
        return
    array_dev.from_numpy(array.astype(_np_dtype(array_dev)))


def _np_dtype(arr):
    dtype = arr.dtype
    if hasattr(dtype, "dtype"):  # vector/matrix ndarray element type
        dtype = dtype.dtype
    return np.float64 if dtype == ti.f64 else np.float32 if dtype == ti.f32 else np.int32


class Model:
    """A compiled model on the device.

    Sizes are Python ints (``m.nq``, ``m.nbody``, ...); every field of the model
    table is a Taichi ndarray under MuJoCo's name (``m.body_pos``); ``m.opt``,
    ``m.stat`` and ``m.vis`` hold options and statistics; ``m.arrays`` keeps the
    host copy (numpy) the fields were made from.
    """

    def __init__(self, arrays: "ModelArrays"):
        backend.ensure_init()
        self.arrays = arrays
        sizes = arrays.sizes
        for name in MODEL_SIZES:
            setattr(self, name, int(sizes[name]))
        self.opt = arrays.opt
        self.stat = arrays.stat
        self.vis = arrays.vis
        self.names = arrays.names
        self.nworld_param = 1
        for name, shape, dtype, _ in MODEL_FIELDS + MODEL_EXTRA_FIELDS:
            arr = _make_array(shape, dtype, sizes)
            _fill(arr, getattr(arrays, name), shape, sizes)
            setattr(self, name, arr)

    def __repr__(self):
        return f"<tiphys.Model nq={self.nq} nv={self.nv} nbody={self.nbody} ngeom={self.ngeom}>"


EFC_J_BUDGET = 2 * 2**30  # bytes of dense efc_J the default njmax may take


class Data:
    """Simulation state and results for ``nworld`` worlds; every field is (nworld, ...)."""

    def __init__(self, m: Model, nworld: int, nconmax: Optional[int] = None,
                 njmax: Optional[int] = None):
        if nworld < 1:
            raise ValueError("nworld must be >= 1")
        self.nworld = int(nworld)
        sizes = dict(m.arrays.sizes)
        if nconmax is None:
            from .contacts import default_nconmax
            nconmax = default_nconmax(m)
        if int(nconmax) < 0:
            raise ValueError("nconmax must be >= 0")
        self.nconmax = int(nconmax)
        sizes["nconmax"] = self.nconmax
        row_bytes = self.nworld * max(1, m.nv) * 8  # one dense efc_J row in all worlds
        if njmax is None:
            from .constraints import default_njmax
            njmax = default_njmax(m, self.nconmax)
            cap = max(1, EFC_J_BUDGET // row_bytes)
            if njmax > cap:
                import warnings
                warnings.warn(
                    f"make_data: the default njmax={njmax} constraint rows per world would "
                    f"take {njmax * row_bytes / 2**30:.1f} GiB of dense efc_J for "
                    f"{self.nworld} worlds; using njmax={cap} (make_constraint warns if a "
                    f"world needs more; set make_data(m, nworld, njmax=...) to choose)",
                    RuntimeWarning, stacklevel=3)
                njmax = cap
        if int(njmax) < 0:
            raise ValueError("njmax must be >= 0")
        if int(njmax) * row_bytes > 4 * EFC_J_BUDGET:
            raise ValueError(
                f"make_data: njmax={int(njmax)} rows per world need "
                f"{int(njmax) * row_bytes / 2**30:.1f} GiB of dense efc_J for {self.nworld} "
                f"worlds (nv={m.nv}); lower njmax or nworld")
        self.njmax = int(njmax)
        sizes["njmax"] = self.njmax
        for name, shape, dtype, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
            setattr(self, name, _make_array(shape, dtype, sizes, nworld=self.nworld))
        self._sizes = sizes

    def field_shape(self, name: str) -> tuple:
        """The MuJoCo-sized shape of a Data field (without the padding)."""
        for fname, shape, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
            if fname == name:
                return numpy_shape(shape, self._sizes, self.nworld)
        raise KeyError(name)

    def numpy(self, name: str) -> np.ndarray:
        """A Data field as numpy, padding removed."""
        want = self.field_shape(name)
        arr = getattr(self, name).to_numpy()
        return arr[tuple(slice(0, n) for n in want)]

    def __repr__(self):
        return f"<tiphys.Data nworld={self.nworld}>"


class ModelArrays(SimpleNamespace):
    """Host (numpy) model: every table field plus sizes, opt, stat, vis, names."""


def make_data(m: Model, nworld: int = 1, keyframe=None, nconmax: Optional[int] = None,
              njmax: Optional[int] = None) -> Data:
    """Allocate Data for ``nworld`` worlds and reset every world to qpos0 (or a keyframe).

    ``nconmax``: contact slots per world (default from the model's candidate geom
    pairs; a collision that finds more keeps the first nconmax in pair order and
    warns, naming this option). ``njmax``: constraint rows per world (default: every
    equality, friction and limit row the model can have plus the rows of nconmax
    contacts; make_constraint warns, naming this option, when a world needs more).
    """
    d = Data(m, nworld, nconmax, njmax)
    reset_data(m, d, keyframe)
    return d


def reset_data(m: Model, d: Data, keyframe=None, world: Optional[int] = None) -> None:
    """Reset state to the model defaults, or to keyframe ``keyframe`` (id or name).

    ``world=None`` resets all worlds, an int resets only that world.
    """
    a = m.arrays
    nw = d.nworld
    if world is not None and (not isinstance(world, (int, np.integer)) or not 0 <= world < nw):
        raise IndexError(f"reset_data: world {world!r} out of range (nworld={nw})")
    state = {
        "time": np.zeros(nw), "qpos": np.tile(a.qpos0, (nw, 1)),
        "qvel": np.zeros((nw, m.nv)), "act": np.zeros((nw, m.na)),
        "ctrl": np.zeros((nw, m.nu)),
        "eq_active": np.tile(np.asarray(a.eq_active0).reshape(-1)[:m.neq], (nw, 1)),
        "mocap_pos": np.tile(a.mocap_pos0, (nw, 1, 1)),
        "mocap_quat": np.tile(a.mocap_quat0, (nw, 1, 1)),
    }
    if keyframe is not None:
        k = keyframe if isinstance(keyframe, (int, np.integer)) else name2id(m, "key", keyframe)
        if not 0 <= k < m.nkey:
            raise ValueError(f"keyframe {keyframe!r} not in model (nkey={m.nkey})")
        state.update(time=np.full(nw, a.key_time[k]), qpos=np.tile(a.key_qpos[k], (nw, 1)),
                     qvel=np.tile(a.key_qvel[k], (nw, 1)), act=np.tile(a.key_act[k], (nw, 1)),
                     ctrl=np.tile(a.key_ctrl[k], (nw, 1)),
                     mocap_pos=np.tile(a.key_mpos[k].reshape(-1, 3), (nw, 1, 1)),
                     mocap_quat=np.tile(a.key_mquat[k].reshape(-1, 4), (nw, 1, 1)))
    if world is None:
        d._reset_state = reset_state_arrays(m, d, keyframe)
    for name, _, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
        field = getattr(d, name)
        if name in state:
            value = state[name]
        else:
            value = np.zeros(d.field_shape(name))
        if world is not None:
            current = d.numpy(name)
            current[world] = value[world]
            value = current
        _set_padded(field, value)


RESET_FIELDS = ("time", "qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat")


def reset_state_arrays(m: Model, d: Data, keyframe=None) -> dict:
    """One world's reset state (qpos0 or the keyframe) as device arrays shaped like
    the Data fields with nworld = 1: what autoreset (kernels/check.py) restores."""
    a = m.arrays
    state = {"time": np.zeros(1), "qpos": np.asarray(a.qpos0).reshape(1, -1),
             "qvel": np.zeros((1, m.nv)), "act": np.zeros((1, m.na)),
             "ctrl": np.zeros((1, m.nu)),
             "mocap_pos": np.asarray(a.mocap_pos0).reshape(1, -1, 3),
             "mocap_quat": np.asarray(a.mocap_quat0).reshape(1, -1, 4)}
    if keyframe is not None:
        k = keyframe if isinstance(keyframe, (int, np.integer)) else name2id(m, "key", keyframe)
        state.update(time=np.full(1, a.key_time[k]), qpos=a.key_qpos[k].reshape(1, -1),
                     qvel=a.key_qvel[k].reshape(1, -1), act=a.key_act[k].reshape(1, -1),
                     ctrl=a.key_ctrl[k].reshape(1, -1),
                     mocap_pos=a.key_mpos[k].reshape(1, -1, 3),
                     mocap_quat=a.key_mquat[k].reshape(1, -1, 4))
    shapes = {name: (shape, dtype) for name, shape, dtype, _ in DATA_FIELDS}
    out = {}
    for name in RESET_FIELDS:
        shape, dtype = shapes[name]
        arr = _make_array(shape, dtype, d._sizes, nworld=1)
        _set_padded(arr, np.asarray(state[name], dtype=np.float64).reshape(
            numpy_shape(shape, d._sizes, 1)))
        out[name] = arr
    return out


def _set_padded(field, value: np.ndarray) -> None:
    full = np.zeros(field.to_numpy().shape, dtype=_np_dtype(field))
    full[tuple(slice(0, n) for n in value.shape)] = value
    field.from_numpy(full)


def name2id(m, objtype: str, name: str) -> int:
    """Id of the named object of ``objtype`` ('body', 'joint', 'geom', ...); -1 if absent."""
    names = _names(m, objtype)
    try:
        return names.index(name)
    except ValueError:
        return -1


def id2name(m, objtype: str, objid: int) -> Optional[str]:
    """Name of object ``objid`` of ``objtype``; None if unnamed or out of range."""
    names = _names(m, objtype)
    if 0 <= objid < len(names):
        return names[objid] or None
    return None


def _names(m, objtype: str) -> list:
    key = _OBJ_ALIASES.get(objtype.lower(), objtype.lower())
    if key not in OBJ_TYPES:
        raise ValueError(f"unknown object type {objtype!r}; one of {sorted(OBJ_TYPES)}")
    return m.names.get(key, [])
