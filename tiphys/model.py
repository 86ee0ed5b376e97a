"""Model and Data on the device: Taichi arrays generated from the tables in types.py."""
from __future__ import annotations

import dataclasses
import os
import weakref
from types import SimpleNamespace
from typing import Optional

import numpy as np
import taichi as ti

from . import backend
from .kernels.config import BOUND_NAMES_ATTR, serial_load, tag_worlds
from .kernels.consts import JAC_AUTO, JAC_SPARSE
from .kernels.sleep import AWAKE as SLEEP_AWAKE
from .kernels.scratch import Plans, Scratch
from .types import DATA_EXTRA_FIELDS, DATA_FIELDS, MODEL_EXTRA_FIELDS, MODEL_FIELDS, \
    MODEL_SIZES, numpy_shape, parse_shape

OBJ_TYPES = {
    # object type -> (count attribute, names key)
    "body": "nbody", "joint": "njnt", "geom": "ngeom", "site": "nsite", "camera": "ncam",
    "light": "nlight", "mesh": "nmesh", "hfield": "nhfield", "texture": "ntex",
    "material": "nmat", "pair": "npair", "exclude": "nexclude", "equality": "neq",
    "tendon": "ntendon", "actuator": "nu", "sensor": "nsensor", "numeric": "nnumeric",
    "text": "ntext", "tuple": "ntuple", "key": "nkey", "flex": "nflex", "plugin": "nplugin",
    "skin": "nskin",
}
_OBJ_ALIASES = {"jnt": "joint", "cam": "camera", "tex": "texture", "mat": "material",
                "eq": "equality", "keyframe": "key", "xbody": "body"}


def _make_array(shape: str, dtype: str, sizes: dict, nworld: int = 1, nbatch: int = 1,
                load: Optional[int] = None):
    """A Taichi ndarray for a table entry; zero-size dimensions are padded to 1. An
    entry with a world dimension is an array of a Data: ``load`` is that Data's serial
    load (config.serial_load), which it is tagged with.

    ndarrays, not fields: kernels take them as arguments, so one compiled kernel
    serves every model (fields would recompile every kernel for every model).
    """
    dims, elem = parse_shape(shape)
    full = numpy_shape(shape, sizes, nworld, nbatch)
    array_shape = tuple(max(1, n) for n in full[:len(dims)])
    tdtype = backend.float_dtype() if dtype == "f" else ti.i32
    if not elem:
        arr = ti.ndarray(tdtype, shape=array_shape)
    elif len(elem) == 1:
        arr = ti.Vector.ndarray(elem[0], tdtype, shape=array_shape)
    else:
        arr = ti.Matrix.ndarray(elem[0], elem[1], tdtype, shape=array_shape)
    if "nworld" in dims:  # kernels given it run serial loops for a small load
        tag_worlds(arr, load)
    return arr


def _fill(array_dev, array: np.ndarray, shape: str, sizes: dict, nworld=1, nbatch=1):
    """Copy a numpy array into a (possibly padded) device array."""
    want = numpy_shape(shape, sizes, nworld, nbatch)
    array = np.asarray(array).reshape(want)
    if 0 in want[:len(parse_shape(shape)[0])]:
        return
    backend.upload(array_dev, array.astype(backend.numpy_dtype(array_dev)))



class ModelOptions:
    """``m.opt``: the model's physics options (mjOption), settable as in MuJoCo:
    ``m.opt.timestep = 0.001``, ``m.opt.integrator = "RK4"`` (or its mjtIntegrator
    value), ``m.opt.gravity = (0, 0, -1)``, ``m.opt.disableflags |= ...``. A value is
    checked as the XML reader checks it and takes effect at the next call (step,
    forward, ...), in every world. Behind it is an immutable Option (``m.opt.frozen``,
    replaced on each change), which is what plans cached per options compare; the
    whole options can also be replaced (``m.opt = dataclasses.replace(m.opt.frozen,
    ...)``). A change of ``jacobian`` that switches between dense and sparse rows
    applies to Data made afterwards (Data made before raise, naming it)."""

    def __init__(self, model: "Model"):
        object.__setattr__(self, "_model", model)
        self._refresh()

    def _refresh(self) -> None:
        frozen = self._model._opt
        values = {f.name: getattr(frozen, f.name) for f in dataclasses.fields(frozen)}
        self.__dict__.update(values, frozen=frozen)

    def __setattr__(self, name: str, value) -> None:
        from .compiler.options import set_option
        if name == "frozen":
            raise AttributeError("opt.frozen is read-only: set a field, or assign m.opt")
        self._model._opt = set_option(self._model._opt, name, value)
        self._refresh()

    def disabled(self, flag: str) -> bool:
        return self.frozen.disabled(flag)

    def enabled(self, flag: str) -> bool:
        return self.frozen.enabled(flag)

    def __eq__(self, other) -> bool:
        other = other.frozen if isinstance(other, ModelOptions) else other
        return self.frozen == other

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self.frozen).replace("Option(", "ModelOptions(", 1)


class Model:
    """A compiled model on the device.

    Sizes are Python ints (``m.nq``, ``m.nbody``, ...); every field of the model
    table is a Taichi ndarray under MuJoCo's name (``m.body_pos``); ``m.opt``,
    ``m.stat`` and ``m.vis`` hold options and statistics; ``m.arrays`` keeps the
    host copy (numpy) the fields were made from.
    """

    def __init__(self, arrays: "ModelArrays"):
        backend.ensure_init()
        # what Data made from this model (or a copy.copy of it, which shares the device
        # arrays) carries, so that every (m, d) entry can check the pair on the host
        self._tiphys_key = object()
        self._tiphys_generation = backend.generation()
        self.arrays = arrays
        sizes = arrays.sizes
        for name in MODEL_SIZES:
            setattr(self, name, int(sizes[name]))
        self.opt = arrays.opt
        self.stat = arrays.stat
        self.vis = arrays.vis
        self.names = arrays.names
        # bodies with gravity compensation when compiled (mjModel.ngravcomp): as in
        # MuJoCo, body_gravcomp given later acts only in a model compiled with some
        self.ngravcomp = int(np.count_nonzero(np.asarray(arrays.body_gravcomp).reshape(
            -1)[:self.nbody]))
        self.plans = Plans()  # host plans of the stages (kernels/scratch.py PLANS)
        self._params = {}  # field -> (n, ...) host values of fields set per world
        self._param_version = 0  # counts set_param calls (Data caches compare it)
        with backend.quiet_allocations():
            for name, shape, dtype, _ in MODEL_FIELDS + MODEL_EXTRA_FIELDS:
                arr = _make_array(shape, dtype, sizes)
                _fill(arr, getattr(arrays, name), shape, sizes)
                setattr(self, name, arr)
        # the plugin objects whose batched hooks the engine calls (tiphys.plugin), one
        # per plugin class in use, made once per model
        from .plugin import make_plugins
        self.plugins = make_plugins(self)

    @property
    def opt(self) -> ModelOptions:
        """Physics options (mjOption), settable field by field: see ModelOptions."""
        return self._opt_view

    @opt.setter
    def opt(self, value) -> None:
        from .compiler.options import Option
        if isinstance(value, ModelOptions):
            value = value.frozen
        if not isinstance(value, Option):
            raise TypeError(f"m.opt takes an Option (e.g. dataclasses.replace("
                            f"m.opt.frozen, ...)), not {type(value).__name__}")
        object.__setattr__(self, "_opt", value)
        view = self.__dict__.get("_opt_view")
        if view is None:
            object.__setattr__(self, "_opt_view", ModelOptions(self))
        else:
            view._refresh()

    @property
    def is_sparse(self) -> bool:
        """mj_isSparse: whether constraint rows carry sparse Jacobians (efc_J_rownnz /
        rowadr / colind): option jacobian="sparse", or "auto" with nv >= 60. Read from
        the current options, so it follows ``m.opt`` when that is replaced."""
        jac = self.opt.jacobian
        return jac == JAC_SPARSE or (jac == JAC_AUTO and self.nv >= 60)

    def param(self, name: str) -> np.ndarray:
        """Host values of a per-world parameter field (tiphys.params), shaped
        (n, *field shape): n = 1 when one value serves every world. What host code
        deciding from a parameter reads (never ``arrays`` alone, which holds the
        compiled values)."""
        values = self._params.get(name)
        if values is not None:
            return values
        one = np.asarray(getattr(self.arrays, name))
        return one.reshape((1,) + one.shape)

    def param_worlds(self) -> dict:
        """{field: n} of the fields given per world (n > 1)."""
        return {name: values.shape[0] for name, values in self._params.items()}

    def forget_plans(self) -> None:
        """Drop the host plans kept on this model (rebuilt on next use): after its
        parameters change, what was planned from them may no longer hold."""
        self._param_version += 1
        self.plans = Plans()

    def __copy__(self) -> "Model":
        """A shallow copy (the device arrays are shared) with its own Plans, which
        starts with this model's plans."""
        out = Model.__new__(Model)
        out.__dict__.update(self.__dict__)
        out.plans = self.plans.copy()
        object.__setattr__(out, "_opt_view", ModelOptions(out))  # its own options
        return out

    def __repr__(self):
        return f"<tiphys.Model nq={self.nq} nv={self.nv} nbody={self.nbody} ngeom={self.ngeom}>"


EFC_J_BUDGET = 2 * 2**30  # bytes of dense efc_J (sparse models: of efc_J_sparse and
# efc_J_colind) the default njmax (njnnz) may take


def _budget_capped(name: str, value: int, unit_bytes: int, what: str, of: str,
                   nworld: int, stacklevel: int = 4, who: str = "make_constraint") -> int:
    """A default size (``name``, ``unit_bytes`` for all worlds per unit) capped to what
    EFC_J_BUDGET holds, with a warning saying so (make_data's njmax, njnnz and
    nhnnz)."""
    cap = max(1, EFC_J_BUDGET // unit_bytes) if unit_bytes else value
    if value <= cap:
        return value
    import warnings
    warnings.warn(
        f"make_data: the default {name}={value} {what} would take "
        f"{value * unit_bytes / 2**30:.1f} GiB{of} for {nworld} worlds; using {name}={cap} "
        f"({who} warns if a world needs more; set make_data(m, nworld, "
        f"{name}=...) to choose)", RuntimeWarning, stacklevel=stacklevel)
    return cap


HESSIAN_NNZ_BYTES = 48  # H and L (values and columns), Lcone, L by column, per non-zero


HESSIAN_DENSE_NNZ = 2**19  # up to this many (nv up to 1023): the dense lower triangle
HESSIAN_NNZ_PER_DOF = 32  # beyond: each tree's dense block plus this many per dof


def default_nhnnz(m, nworld: int) -> int:
    """Non-zeros per world of Newton's sparse Hessian factor (sparse models): a dense
    lower triangle, nv (nv + 1) / 2, which no fill-in can exceed, for models up to
    HESSIAN_DENSE_NNZ of it; for bigger ones (big scenes: islands couple few trees)
    each kinematic tree's dense block plus HESSIAN_NNZ_PER_DOF per dof for the
    couplings contacts add. Capped to what EFC_J_BUDGET holds for ``nworld`` worlds
    (with a warning when the model runs Newton); an island whose factor does not fit
    is solved by CG and reported."""
    from .kernels.consts import SOL_NEWTON
    full = m.nv * (m.nv + 1) // 2
    if full > HESSIAN_DENSE_NNZ:
        treenv = np.bincount(np.asarray(m.arrays.dof_treeid)[:m.nv].astype(np.int64),
                             minlength=1)
        blocks = int(np.sum(treenv * (treenv + 1) // 2))
        full = min(full, max(HESSIAN_DENSE_NNZ, blocks + HESSIAN_NNZ_PER_DOF * m.nv))
    unit = nworld * HESSIAN_NNZ_BYTES
    if m.opt.solver != SOL_NEWTON:
        return max(1, min(full, EFC_J_BUDGET // unit))
    return max(1, _budget_capped("nhnnz", full, unit, "sparse Hessian non-zeros per world",
                                 " of Newton's factor", nworld, stacklevel=5,
                                 who="solve"))


def _count_arg(name: str, value, minimum: int = 0) -> int:
    """An int argument (a Python or numpy integer, not a bool, float or string)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"make_data: {name} must be an integer, not {value!r}")
    if value < minimum:
        raise ValueError(f"make_data: {name} must be >= {minimum}, not {value}")
    return int(value)


def check_model(m, func: str) -> None:
    """A clear error when ``m`` is not a usable tiphys Model."""
    if not isinstance(m, Model):
        hint = (": convert it with tiphys.put_model(mjm)" if type(m).__name__ == "MjModel"
                else "")
        raise TypeError(f"{func}: expected a tiphys.Model, got {type(m).__name__}{hint}")
    if m._tiphys_generation != backend.generation():
        raise RuntimeError(f"{func}: this Model was made before tiphys.init(..., reinit=True) "
                           f"restarted Taichi, which freed its arrays; load it again")


def octree_sdf_refusal(arrays, names=None):
    """The reason make_data refuses a model with ``<geom type="sdf">`` without a plugin
    whose mesh has no octree (naming the geoms; MuJoCo stops with an error there), or
    None. The compiler builds the octrees of sdf geoms' meshes, so a compiled model
    only gets here from arrays edited by hand. Host arrays only."""
    from .kernels.consts import GEOM_SDF
    ngeom = int(arrays.sizes.get("ngeom", 0))
    nmesh = int(arrays.sizes.get("nmesh", 0))
    gtype = np.asarray(arrays.geom_type).reshape(-1)[:ngeom]
    plugin = np.asarray(arrays.geom_plugin).reshape(-1)[:ngeom]
    dataid = np.asarray(arrays.geom_dataid).reshape(-1)[:ngeom]
    octadr = np.asarray(arrays.mesh_octadr).reshape(-1)[:nmesh]
    ids = [g for g in np.nonzero((gtype == GEOM_SDF) & (plugin == -1))[0].tolist()
           if not 0 <= dataid[g] < nmesh or octadr[dataid[g]] < 0]
    if not ids:
        return None
    names = list((names or {}).get("geom", []))
    listed = ", ".join(f"'{names[g]}'" if g < len(names) and names[g] else f"#{g}"
                       for g in ids)
    return (f"geom {listed}: <geom type=\"sdf\"> without a <plugin> whose mesh has no "
            f"octree (mesh_octadr -1) is not supported")


def check_octree_sdf(m, func: str) -> None:
    """NotImplementedError naming the sdf geoms without a plugin (octree_sdf_refusal)."""
    reason = octree_sdf_refusal(m.arrays, getattr(m, "names", None))
    if reason:
        raise NotImplementedError(f"{func}: {reason}")


def check_param_worlds(m, nworld: int, func: str) -> None:
    """Fields given per world (tiphys.set_param) must have ``nworld`` sets."""
    wrong = {name: n for name, n in m.param_worlds().items() if n != nworld}
    if wrong:
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(wrong.items()))
        raise ValueError(f"{func}: the Model has parameters given per world for another "
                         f"number of worlds than the Data's {nworld}: {listed}; give them "
                         f"for {nworld} worlds with tiphys.set_param (or one value for all)")


def check_pair(m, d, func: str) -> None:
    """``d`` must be Data made by make_data from ``m`` (or from a copy.copy of ``m``):
    host-side identity checks only, no device work."""
    if getattr(d, "_tiphys_model_key", None) is getattr(m, "_tiphys_key", False):
        if m._tiphys_generation == backend.generation():
            if m._params:
                check_param_worlds(m, d._param_worlds, func)
            if d.is_sparse != m.is_sparse:
                raise ValueError(
                    f"{func}: this Data was made with {'sparse' if d.is_sparse else 'dense'} "
                    f"constraint Jacobians, but the model's option jacobian now selects "
                    f"{'sparse' if m.is_sparse else 'dense'} ones; make a new Data with "
                    f"tiphys.make_data after changing m.opt.jacobian")
            return
    check_model(m, func)
    if not isinstance(d, Data):
        hint = (": make one with tiphys.make_data(m, nworld)" if type(d).__name__ == "MjData"
                else "")
        raise TypeError(f"{func}: expected a tiphys.Data, got {type(d).__name__}{hint}")
    other = d._tiphys_model_repr
    what = (f"another Model object with the same sizes ({other}: a separate load_model / "
            f"put_model gives a new Model)" if other == repr(m) else
            f"another Model ({other}), not for the one passed ({m!r})")
    raise ValueError(f"{func}: this Data was made for {what}; make the Data with "
                     f"tiphys.make_data(m, nworld) from the Model you pass with it")


def data_bytes(sizes: dict, nworld: int) -> int:
    """Device bytes of a Data's fields (padding included) at the current precision."""
    fbytes = 8 if backend.precision() == "f64" else 4
    total = 0
    for _, shape, dtype, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
        dims, elem = parse_shape(shape)
        full = numpy_shape(shape, sizes, nworld)
        n = int(np.prod([max(1, k) for k in full[:len(dims)]], dtype=np.int64))
        n *= int(np.prod(elem, dtype=np.int64)) if elem else 1
        total += n * (fbytes if dtype == "f" else 4)
    return total


def available_memory() -> tuple[Optional[int], str]:
    """(bytes free for new arrays, what was measured): free device memory on CUDA (the
    driver's cuMemGetInfo), available RAM on the CPU backend; (None, why) where it
    cannot be known (Vulkan, Metal: the driver does not say)."""
    arch = backend.arch()
    if arch == "cpu":
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024, "available RAM"
        except OSError:
            pass
        try:
            return (os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
                    "available RAM")
        except (ValueError, OSError, AttributeError):
            return None, "unknown RAM"
    if arch in ("cuda", "gpu"):
        import ctypes
        try:
            cuda = ctypes.CDLL("libcuda.so.1")
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            if cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0:
                return int(free.value), "free CUDA device memory"
        except (OSError, AttributeError):
            pass
    return None, f"unknown {arch} device memory"


def check_memory(sizes: dict, nworld: int) -> None:
    """MemoryError, saying how many worlds fit, when the Data would not fit."""
    need = data_bytes(sizes, nworld)
    if need < 2**28:  # small: not worth asking the system
        return
    free, what = available_memory()
    if free is None or need <= free:
        return
    per_world = data_bytes(sizes, 2) - data_bytes(sizes, 1)
    fixed = data_bytes(sizes, 1) - per_world
    fit = max(0, (free - fixed) // max(1, per_world))
    gib = 2.0**30
    raise MemoryError(
        f"make_data: {nworld} worlds need about {need / gib:.1f} GiB "
        f"({per_world / 2**20:.2f} MiB per world with nconmax={sizes['nconmax']}, "
        f"njmax={sizes['njmax']}), but only {free / gib:.1f} GiB of {what} is left: "
        f"about {fit} worlds fit; lower nworld (or nconmax / njmax)")


class Data:
    """Simulation state and results for ``nworld`` worlds; every field is (nworld, ...)."""

    def __init__(self, m: Model, nworld: int, nconmax: Optional[int] = None,
                 njmax: Optional[int] = None, param_worlds: Optional[int] = None,
                 njnnz: Optional[int] = None, nhnnz: Optional[int] = None,
                 nbroadmax: Optional[int] = None, load: Optional[int] = None):
        check_model(m, "make_data")
        from .kernels.flex import check_flex, flex_jacobian_nnz
        check_flex(m, "make_data")
        check_octree_sdf(m, "make_data")
        self.nworld = _count_arg("nworld", nworld, minimum=1)
        # the worlds the model's per-world parameters are for: nworld, except in the
        # expanded Data of tiphys.derivative (world c * n + w is a copy of world w)
        self._param_worlds = self.nworld if param_worlds is None else param_worlds
        check_param_worlds(m, self._param_worlds, "make_data")
        sizes = dict(m.arrays.sizes)
        if nconmax is None:
            from .kernels.collision_driver import default_nconmax
            nconmax = default_nconmax(m)
        self.nconmax = _count_arg("nconmax", nconmax)
        sizes["nconmax"] = self.nconmax
        if nbroadmax is None:
            from .kernels.collision_driver import default_nbroadmax
            nbroadmax = default_nbroadmax(m)
        # pair slots per world of the dynamic broadphase (big scenes; 0 otherwise); a
        # contact's sort key is its slot * 64 + its index (an int32)
        self.nbroadmax = _count_arg("nbroadmax", nbroadmax)
        if self.nbroadmax >= 2**31 // 64:
            raise ValueError(f"make_data: nbroadmax must be < {2**31 // 64}, not {nbroadmax}")
        # one dense efc_J row in all worlds (sparse models keep no dense rows)
        row_bytes = self.nworld * max(1, m.nv) * 8 if not m.is_sparse else 0
        if njmax is None:
            from .constraints import default_njmax
            njmax = default_njmax(m, self.nconmax)
            njmax = _budget_capped("njmax", njmax, row_bytes,
                                   "constraint rows per world", " of dense efc_J", self.nworld)
        njmax = _count_arg("njmax", njmax)
        sizes["njmax"] = njmax
        sizes["nislandmax"] = m.ntree  # an island holds at least one tree
        # sparse Jacobians (m.is_sparse): non-zeros per world of the constraint rows and
        # the tendons' column lists; none for dense models
        if m.is_sparse:
            if njnnz is None:
                from .constraints import default_njnnz
                njnnz = default_njnnz(m, njmax)
                nnz_bytes = self.nworld * 12  # a value (f64) and its column index
                njnnz = _budget_capped("njnnz", njnnz, nnz_bytes,
                                       "Jacobian non-zeros per world", "", self.nworld)
            njnnz = _count_arg("njnnz", njnnz)
            sizes["njten"] = m.ntendon * m.nv
            if nhnnz is None:
                nhnnz = default_nhnnz(m, self.nworld)
            nhnnz = _count_arg("nhnnz", nhnnz, minimum=1)
        else:
            njnnz = 0
            nhnnz = 0
            sizes["njten"] = 0
        sizes["njnnz"] = njnnz
        sizes["nJflex"] = flex_jacobian_nnz(m)  # flex edge Jacobian non-zeros per world
        self.njnnz = njnnz
        # non-zeros per world of Newton's sparse Hessian factor (sparse models)
        self.nhnnz = nhnnz
        # whether the rows keep sparse Jacobians (m.is_sparse when this Data was made)
        self.is_sparse = bool(m.is_sparse)
        # the dense efc_J: njmax x nv per world, 1 x 1 for sparse models
        sizes["njdense"] = 1 if m.is_sparse else njmax
        sizes["nvdense"] = 1 if m.is_sparse else m.nv
        check_memory(sizes, self.nworld)
        if row_bytes and njmax * row_bytes > 4 * EFC_J_BUDGET:
            raise ValueError(
                f"make_data: njmax={njmax} rows per world need "
                f"{njmax * row_bytes / 2**30:.1f} GiB of dense efc_J for {self.nworld} "
                f"worlds (nv={m.nv}); lower njmax or nworld")
        self.njmax = njmax
        # the worlds weighted by the model's work (serial loops up to serial_worlds), or
        # ``load`` (tiphys.derivative: a batch of columns runs the kernels its whole
        # expansion would, so that results do not depend on the batch size)
        self.serial_load = serial_load(self.nworld, sizes) if load is None else int(load)
        with backend.quiet_allocations():
            for name, shape, dtype, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
                setattr(self, name, _make_array(shape, dtype, sizes, nworld=self.nworld,
                                                load=self.serial_load))
        self._sizes = sizes
        self._tiphys_model_key = m._tiphys_key
        self._tiphys_model_repr = repr(m)
        self._tiphys_model_ref = weakref.ref(m)  # for named access (d.body("torso"))
        # what autoreset restores (reset_data sets it), the keyframe it is of, and the
        # model's set_param count it was made at (made again when that changed)
        self._reset_state, self._reset_keyframe, self._reset_version = None, None, 0
        self._plugin_reset = None  # plugin_state after the reset hooks (autoreset)
        self.scratch = Scratch(self.serial_load)  # stages' work arrays (kernels/scratch.py)
        # whether an energy stage wrote d.energy since the last one that zeroes it, and
        # whether the last forward had constraint rows (tiphys/forward.py: clearing
        # what the options no longer compute)
        self._energy_set = False
        self._constrained = False
        self._islands_set = False  # island fields hold islands (kernels/island.py)
        self._sleep_used = False  # stepped with the sleep flag on (tiphys/forward.py)
        # steps since the warnings were last reported, and the counts reported then
        # (tiphys/report.py)
        self._steps_since_report, self._reported_warnings = 0, None
        self._reported_hessian = None  # efc_H_overflow counts reported
        self._reported_broadphase = None  # broadphase_overflow counts reported
        self._reported_loop_cut = None  # loop_cut counts reported

    def _make_reset_state(self, m: Model) -> dict:
        """The reset state autoreset restores (kernels/check.py makes it on first use,
        and again after tiphys.set_param changed the model): qpos0, or the keyframe
        reset_data last reset to."""
        self._reset_version = m._param_version
        return reset_state_arrays(m, self, self._reset_keyframe)

    def field_shape(self, name: str) -> tuple:
        """The MuJoCo-sized shape of a Data field (without the padding)."""
        for fname, shape, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
            if fname == name:
                return numpy_shape(shape, self._sizes, self.nworld)
        raise KeyError(name)

    def _named_model(self) -> "Model":
        """The Model this Data was made from (named access needs its names)."""
        m = self._tiphys_model_ref()
        if m is None:
            raise ValueError("named access: the Model this Data was made from no longer "
                             "exists; keep a reference to it")
        return m

    def numpy(self, name: str) -> np.ndarray:
        """A Data field as numpy, padding removed. Reading results also reports the
        capacity overflows counted on the device since the last report (tiphys.report).

        With sparse Jacobians (the Data of a model with ``m.is_sparse``) ``efc_J`` is,
        as MuJoCo's in sparse mode, the non-zeros (nworld, njnnz): efc_J_sparse, row r's
        at efc_J_rowadr[w, r] .. + efc_J_rownnz[w, r], columns efc_J_colind; no dense
        matrix is kept (tiphys.support.efc_J_dense builds one on the host)."""
        from .report import report
        report(self)
        if name == "efc_J" and self.is_sparse:
            name = "efc_J_sparse"
        want = self.field_shape(name)
        arr = backend.download(getattr(self, name))
        return arr[tuple(slice(0, n) for n in want)]

    def torch(self, name: str, copy: bool = False):
        """Data field ``name`` as a torch tensor of MuJoCo's shape (nworld, ...), sharing
        this Data's memory on the CPU and CUDA backends (writes go into the Data), a
        copy elsewhere or with ``copy=True`` (tiphys/interop.py)."""
        from .interop import torch_view
        return torch_view(self, name, copy)

    def from_torch(self, name: str, tensor) -> None:
        """Write a torch tensor into Data field ``name`` (on the device where torch
        shares it: tiphys/interop.py)."""
        from .interop import from_torch
        from_torch(self, name, tensor)

    def __repr__(self):
        return f"<tiphys.Data nworld={self.nworld}>"


class ModelArrays(SimpleNamespace):
    """Host (numpy) model: every table field plus sizes, opt, stat, vis, names."""


def make_data(m: Model, nworld: int = 1, keyframe=None, nconmax: Optional[int] = None,
              njmax: Optional[int] = None, njnnz: Optional[int] = None,
              nhnnz: Optional[int] = None, nbroadmax: Optional[int] = None) -> Data:
    """Allocate Data for ``nworld`` worlds and reset every world to qpos0 (or a keyframe).

    ``nconmax``: contact slots per world (default from the model's candidate geom
    pairs; a collision that finds more keeps the first nconmax in pair order and
    warns, naming this option). ``njmax``: constraint rows per world (default: every
    equality, friction and limit row the model can have plus the rows of nconmax
    contacts; make_constraint warns, naming this option, when a world needs more).
    ``njnnz``: non-zeros per world of the sparse constraint Jacobian, for models with
    sparse Jacobians (``m.is_sparse``; default: njmax times the widest row the model
    can make; make_constraint drops whole elements past it and warns, naming this
    option); ignored for dense models. ``nhnnz``: non-zeros per world of the Newton
    solver's sparse Hessian factor, for models with sparse Jacobians (default: a dense
    lower triangle, nv (nv + 1) / 2, within a memory budget; an island whose factor
    does not fit what the world's islands before it left is solved by CG, and the
    overflow is reported, naming this option); ignored for dense models.
    ``nbroadmax``: pair slots per world of the dynamic broadphase, which models with
    many geoms take (kernels/collision_driver.py, DYNAMIC_MIN_PAIRS): the overlapping
    body pairs and the candidate geom pairs each fit in this many (default: per moving
    body, 16 plus one per plane-bearing body); a world that needs more keeps the first
    pairs in MuJoCo's order and the overflow is reported, naming this option; 0 and
    ignored for other models. The model's plugin instances are checked first, as
    mujoco.MjData runs each plugin's init (ValueError with the plugin's message).
    """
    from .plugin import init_check
    check_model(m, "make_data")
    init_check(m)
    d = Data(m, nworld, nconmax, njmax, njnnz=njnnz, nhnnz=nhnnz, nbroadmax=nbroadmax)
    reset_data(m, d, keyframe)
    return d


def reset_data(m: Model, d: Data, keyframe=None, world: Optional[int] = None) -> None:
    """Reset state to the model defaults, or to keyframe ``keyframe`` (id or name).

    ``world=None`` resets all worlds, an int resets only that world.
    """
    check_pair(m, d, "reset_data")
    a = m.arrays
    nw = d.nworld
    if world is not None and (not isinstance(world, (int, np.integer)) or not 0 <= world < nw):
        raise IndexError(f"reset_data: world {world!r} out of range (nworld={nw})")
    qpos0 = m.param("qpos0")  # (1 or nworld, nq)
    state = {
        "time": np.zeros(nw), "qpos": qpos0[np.arange(nw) % len(qpos0)],
        "qvel": np.zeros((nw, m.nv)), "act": np.zeros((nw, m.na)),
        "ctrl": np.zeros((nw, m.nu)),
        "eq_active": np.tile(np.asarray(a.eq_active0).reshape(-1)[:m.neq], (nw, 1)),
        "mocap_pos": np.tile(a.mocap_pos0, (nw, 1, 1)),
        "mocap_quat": np.tile(a.mocap_quat0, (nw, 1, 1)),
        "tree_asleep": np.full((nw, m.ntree), SLEEP_AWAKE),  # every tree awake
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
    if world is not None:
        _reset_world(m, d, keyframe, int(world), state)
    else:
        d._reset_keyframe = keyframe
        d._reset_state = d._make_reset_state(m)
        for name, _, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
            field = getattr(d, name)
            if name in state:
                _set_padded(field, state[name])
            else:
                backend.zero(field)  # on the device: no host array as large as the field
        _reset_plugins(m, d, None)
    from .sleep import reset_sleep
    reset_sleep(m, d, world, keyframe)


def _reset_plugins(m: Model, d: Data, world: Optional[int]) -> None:
    """The plugins' reset hooks (mj_resetData: after plugin_state was zeroed), and the
    state they leave kept for autoreset (kernels/check.py), on the device."""
    for plugin in m.plugins:
        if plugin.reset is not None:
            plugin.reset(m, d, world)
    if not m.npluginstate:
        return
    from .kernels.check import copy_row
    if d._plugin_reset is None:
        d._plugin_reset = _make_array("nworld npluginstate", "f", d._sizes, nworld=d.nworld,
                                       load=d.serial_load)
        world = None
    if world is None:
        d._plugin_reset.copy_from(d.plugin_state)
    else:
        copy_row(d.plugin_state, d._plugin_reset, int(world))


def _reset_world(m: Model, d: Data, keyframe, world: int, state: dict) -> None:
    """reset_data of one world, on the device: its slice of each state field from a
    one-world copy of the reset state (made once per keyframe), zeros elsewhere; the
    other worlds are not touched and nothing is read back."""
    from .kernels.check import copy_world, zero_world
    cache = d.scratch.reset_world
    if cache is None:
        cache = d.scratch.reset_world = {}
    # a world's reset state differs from world 0's only by qpos0 given per world
    row = world if keyframe is None and "qpos0" in m._params else 0
    key = (keyframe, m._param_version, row)
    one = cache.get(key)
    if one is None:
        table = {name: (shape, dtype) for name, shape, dtype, _ in
                 DATA_FIELDS + DATA_EXTRA_FIELDS}
        one = {}
        for name, value in state.items():  # every value has one row per world
            arr = _make_array(*table[name], d._sizes, nworld=1, load=d.serial_load)
            _set_padded(arr, np.asarray(value)[row:row + 1])
            one[name] = arr
        cache[key] = one
    for name, _, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
        field = getattr(d, name)
        if name in one:
            copy_world(one[name], field, world)
        else:
            zero_world(field, world)
    _reset_plugins(m, d, world)


RESET_FIELDS = ("time", "qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat")


def reset_state_arrays(m: Model, d: Data, keyframe=None) -> dict:
    """One world's reset state (qpos0 or the keyframe) as device arrays shaped like
    the Data fields with nworld = 1 (qpos: one row per world when qpos0 is given per
    world): what autoreset (kernels/check.py) restores."""
    a = m.arrays
    state = {"time": np.zeros(1), "qpos": m.param("qpos0"),
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
        n = len(state[name])
        arr = _make_array(shape, dtype, d._sizes, nworld=n, load=d.serial_load)
        _set_padded(arr, np.asarray(state[name], dtype=np.float64).reshape(
            numpy_shape(shape, d._sizes, n)))
        out[name] = arr
    return out


def _set_padded(field, value: np.ndarray) -> None:
    full = np.zeros(tuple(field.shape) + value.shape[len(field.shape):],
                    dtype=backend.numpy_dtype(field))
    full[tuple(slice(0, n) for n in value.shape)] = value
    backend.upload(field, full)


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


def checks_model_data(func):
    """Wrap a public ``func(m, d, ...)`` so that it first checks (on the host, by
    identity) that ``d`` was made from ``m`` (check_pair)."""
    import functools

    if getattr(func, "_tiphys_checks_pair", False):
        return func
    name = func.__name__

    @functools.wraps(func)
    def entry(*args, **kwargs):
        m = args[0] if args else kwargs.get("m")
        d = args[1] if len(args) > 1 else kwargs.get("d")
        check_pair(m, d, name)
        return func(*args, **kwargs)

    entry._tiphys_checks_pair = True
    return entry


# the names a kernel's parameters bind to (kernels/bind.py): the table fields and sizes
setattr(Model, BOUND_NAMES_ATTR, frozenset(
    [name for name, *_ in MODEL_FIELDS + MODEL_EXTRA_FIELDS] + list(MODEL_SIZES)))
setattr(Data, BOUND_NAMES_ATTR, frozenset(
    name for name, *_ in DATA_FIELDS + DATA_EXTRA_FIELDS))


def _count_field_sets(cls) -> None:
    """Give ``cls`` a ``__setattr__`` that counts, in ``fields_set``, every assignment
    of one of its bound names (a field array replaced, a size changed), so that
    name-bound launches (kernels/bind.py) look their arguments up again."""
    names = getattr(cls, BOUND_NAMES_ATTR)
    assign = object.__setattr__

    def __setattr__(self, name, value):
        if name in names:
            assign(self, "fields_set", self.__dict__.get("fields_set", 0) + 1)
        assign(self, name, value)

    cls.__setattr__ = __setattr__


_count_field_sets(Model)
_count_field_sets(Data)

