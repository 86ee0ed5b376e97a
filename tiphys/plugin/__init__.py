"""Engine plugins: tiphys's form of MuJoCo's mjpPlugin.

A plugin is a registered Python class (:class:`Plugin`): a name (``mujoco.pid``,
``my.lab.motor``), capability flags (MuJoCo's mjtPluginCapabilityBit: ACTUATOR, SENSOR,
PASSIVE, SDF), the config attributes it declares (``<config key= value=/>``, checked
at compile time with MuJoCo's errors), and

- compile-time class methods on one instance's config (a ``{key: text}`` dict):
  ``nstate`` (floats of Data.plugin_state), ``actuator_actdim`` (the activations the
  plugin keeps for one of its actuators, before any built-in dynamics' one) and
  ``check`` (MuJoCo's ``init`` validation: an error message, or None);
- batched device hooks on an object made once per Model (``Plugin(m, instances)``, for
  all of the model's instances of the class): ``reset``, ``act_dot``, ``compute``,
  ``advance``, ``passive``, ``compute_sensor``. Each launches Taichi kernels over every
  world and instance at once: no Python per world, no host round trip, no numpy inside
  ``step``. A hook left None is not called. SDF plugins have no hook: the collision
  stage evaluates their shapes on the device, which it can for MuJoCo's own
  (tiphys.plugin.sdf: bolt, bowl, gear, nut, torus, known by their ``sdf_kind``); any
  other SDF class makes the compiler refuse the plugin with NotImplementedError.

A sensor plugin (SENSOR) also gives ``needstage`` (mjtStage: the sensor stage whose end
computes its sensors; NONE counts as POS, as in MuJoCo) and the class method
``nsensordata`` (the values of one of its sensors: the sensor's ``sensor_dim``).

The engine calls the hooks where MuJoCo calls them (engine_forward.c): ``act_dot``
after the built-in activation dynamics, ``compute`` after the built-in actuator forces
and before the tendon and actuator force limits (mj_fwdActuation); ``advance`` at the
end of every integrator step, after time advanced (mj_advance); ``passive`` (MuJoCo's
``compute`` with mjPLUGIN_PASSIVE) at the end of mj_passive, adding to qfrc_passive,
skipped with both the spring and the damper disable flags; ``reset`` in reset_data
after plugin_state was zeroed; ``compute_sensor`` at the end of sensor_pos, sensor_vel
or sensor_acc (mj_sensorPos/Vel/Acc, its ``needstage``), after the built-in and user
sensors of that stage and before that stage's cutoff, which then clips the plugin's
sensors too.

Registration: ``register_plugin(cls)``, and classes (or lists of them) that installed
packages declare under the entry-point group ``tiphys.plugins``, loaded the first time
a name is not found. MuJoCo's own plugins that tiphys does not implement yet are known
by name (:data:`NOT_YET`), so that a model using them is refused with
NotImplementedError rather than called unknown.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

ACTUATOR = 1 << 0  # mjPLUGIN_ACTUATOR
SENSOR = 1 << 1  # mjPLUGIN_SENSOR
PASSIVE = 1 << 2  # mjPLUGIN_PASSIVE
SDF = 1 << 3  # mjPLUGIN_SDF
CAPABILITY_NAMES = {ACTUATOR: "actuator", SENSOR: "sensor", PASSIVE: "passive",
                    SDF: "SDF"}
ENTRY_POINT_GROUP = "tiphys.plugins"


@dataclass
class Instance:
    """One compiled plugin instance (mjCPlugin): its id, its plugin's registry slot and
    class, its config (key -> text, in the plugin's declared order), its name ("" when
    in place), the actuators it drives, the sensors it computes, the bodies it is on
    (body_plugin), and its
    plugin_state address and size."""
    id: int
    slot: int
    cls: type
    config: dict
    name: str = ""
    actuators: list = field(default_factory=list)
    bodies: list = field(default_factory=list)  # passive plugins: the bodies it acts on
    sensors: list = field(default_factory=list)  # its sensors' ids (sensor_plugin)
    geoms: list = field(default_factory=list)  # SDF plugins: its geoms (geom_plugin)
    stateadr: int = 0
    statenum: int = 0

    def value(self, key: str) -> Optional[float]:
        """The attribute as a number, None when absent or empty (MuJoCo's plugins read
        their attributes with strtod: the longest number at the start of the text, 0
        when there is none)."""
        text = self.config.get(key)
        if text is None or text == "":
            return None
        return _strtod(text)


def _strtod(text: str) -> float:
    s = text.lstrip()
    for end in range(len(s), 0, -1):
        try:
            return float(s[:end])
        except ValueError:
            continue
    return 0.0


class Plugin:
    """Base class of a tiphys plugin; see the module docstring.

    Subclasses set ``name``, ``capabilities`` and ``attributes`` and override what
    they support. The object a model makes (``cls(m, instances)``) keeps what its
    kernels need in ``host_arrays`` (name -> numpy array, built once per model from
    the instances' config); ``device(d)`` gives them as device arrays of that Data
    (made on first use and kept on it: launches with them are prepared once)."""

    name: str = ""
    capabilities: int = 0
    attributes: tuple = ()

    # --- compile time, per instance --------------------------------------------------
    @classmethod
    def nstate(cls, instance: Instance) -> int:
        """Floats of Data.plugin_state this instance keeps (plugin->nstate)."""
        return 0

    @classmethod
    def actuator_actdim(cls, instance: Instance, actuator: int) -> int:
        """Activations the plugin keeps for ``actuator`` (before the built-in dynamics'
        one, if the actuator has dyntype filter, filterexact or integrator)."""
        return 0

    @classmethod
    def check(cls, arrays, instance: Instance) -> Optional[str]:
        """MuJoCo's ``init`` validation of an instance on the compiled model arrays:
        the error message, or None."""
        return None

    # --- per model ---------------------------------------------------------------------
    def __init__(self, m, instances: list):
        self.instances = instances
        self.host_arrays: dict = {}

    def device(self, d) -> dict:
        """``host_arrays`` as device arrays of Data ``d`` (one copy per Data)."""
        cache = d.__dict__.setdefault("_tiphys_plugin_arrays", {})
        arrays = cache.get(id(self))
        if arrays is None or arrays[0] is not self:
            import taichi as ti

            from ..backend import float_dtype
            from ..kernels.config import tag_worlds
            fdtype = float_dtype()
            made = {}
            for key, value in self.host_arrays.items():
                value = np.asarray(value)
                integer = value.dtype.kind in "iub"
                shape = tuple(max(1, n) for n in value.shape)
                arr = ti.ndarray(ti.i32 if integer else fdtype, shape)
                full = np.zeros(shape, dtype=np.int32 if integer else
                                (np.float64 if fdtype == ti.f64 else np.float32))
                full[tuple(slice(0, n) for n in value.shape)] = value
                arr.from_numpy(full)
                made[key] = tag_worlds(arr, d.serial_load)
            arrays = cache[id(self)] = (self, made)
        return arrays[1]

    # --- batched hooks (None: not called) ---------------------------------------------
    reset = None  # reset(m, d, world=None): after plugin_state was zeroed
    act_dot = None  # act_dot(m, d): after the built-in activation dynamics
    compute = None  # compute(m, d): actuator forces (after the built-in ones)
    advance = None  # advance(m, d): after an integrator step advanced time
    passive = None  # passive(m, d): adds to qfrc_passive, at the end of mj_passive
    compute_sensor = None  # compute_sensor(m, d): its sensors' values, at needstage

    # --- sensor plugins ----------------------------------------------------------------
    needstage: int = 0  # mjtStage of its sensors (MuJoCo's default: mjSTAGE_NONE)
    nsensordata = None  # classmethod nsensordata(instance, sensor) -> sensor_dim


_REGISTRY: list = []  # slot -> class
_BY_NAME: dict = {}
_DISCOVERED = [False]

# MuJoCo 3.4.0's first-party plugins tiphys does not implement yet: name -> capability
NOT_YET: dict = {}


def register_plugin(cls) -> type:
    """Register a plugin class (usable as a decorator); returns it. Registering the
    same class again does nothing; another class under a taken name is a ValueError."""
    if not (isinstance(cls, type) and issubclass(cls, Plugin)):
        raise TypeError(f"register_plugin: {cls!r} is not a tiphys.plugin.Plugin class")
    name = cls.name
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_plugin: {cls.__name__} has no name")
    if not isinstance(cls.capabilities, int) or cls.capabilities <= 0 or \
            cls.capabilities & ~(ACTUATOR | SENSOR | PASSIVE | SDF):
        raise ValueError(f"register_plugin: {name}: capabilities must be a non-empty "
                         f"combination of ACTUATOR, SENSOR, PASSIVE and SDF")
    attrs = tuple(cls.attributes)
    if len(set(attrs)) != len(attrs) or not all(isinstance(a, str) and a for a in attrs):
        raise ValueError(f"register_plugin: {name}: attributes must be distinct names")
    old = _BY_NAME.get(name)
    if old is cls:
        return cls
    if old is not None:
        raise ValueError(f"register_plugin: a plugin named {name!r} is already registered "
                         f"({old.__module__}.{old.__qualname__})")
    _BY_NAME[name] = cls
    _REGISTRY.append(cls)
    return cls


def load_entry_points() -> list:
    """Register every plugin installed packages declare under the entry-point group
    ``tiphys.plugins`` (an entry point names a Plugin class or a list of them), as
    mj_loadAllPluginLibraries loads every library of a directory; returns the names
    registered so far. Done by itself the first time a plugin name is not found."""
    _DISCOVERED[0] = False
    _discover()
    return registered()


def get_config(m, instance: int, attr: str):
    """The config text of attribute ``attr`` of plugin instance ``instance``, None when
    the plugin declares no such attribute (mj_getPluginConfig; "" when not given)."""
    n = int(m.nplugin)
    if not 0 <= instance < n:
        raise IndexError(f"get_config: plugin instance {instance} out of range "
                         f"(nplugin={n})")
    cls = plugin_at(int(np.asarray(m.arrays.plugin).reshape(-1)[instance]))
    if attr not in cls.attributes:
        return None
    chars = bytes(int(c) & 0xFF for c in np.asarray(m.arrays.plugin_attr).reshape(-1)[
        :int(m.npluginattr)])
    start = int(np.asarray(m.arrays.plugin_attradr).reshape(-1)[instance])
    return chars[start:].split(b"\0")[cls.attributes.index(attr)].decode()


def _discover() -> None:
    """Register the plugins installed packages declare (entry points, once)."""
    if _DISCOVERED[0]:
        return
    _DISCOVERED[0] = True
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        loaded = ep.load()
        for cls in loaded if isinstance(loaded, (list, tuple)) else (loaded,):
            if _BY_NAME.get(getattr(cls, "name", None)) is not cls:
                register_plugin(cls)


def find_plugin(name: str):
    """(slot, class) of a registered plugin, (-1, None) when none has that name."""
    cls = _BY_NAME.get(name)
    if cls is None:
        _discover()
        cls = _BY_NAME.get(name)
    if cls is None:
        return -1, None
    return _REGISTRY.index(cls), cls


def plugin_at(slot: int):
    """The class registered at ``slot`` (Model.plugin holds these slots)."""
    return _REGISTRY[slot]


def registered() -> list:
    """Names of the registered plugins, in slot order."""
    return [cls.name for cls in _REGISTRY]


def unimplemented_capabilities(cls) -> int:
    """Capabilities of ``cls`` whose hooks tiphys does not call yet: SDF for any class
    but MuJoCo's first-party SDF shapes (tiphys.plugin.sdf, whose device distance
    functions the collision stage knows by their ``sdf_kind``)."""
    missing = cls.capabilities & ~(ACTUATOR | SENSOR | PASSIVE | SDF)
    if cls.capabilities & SDF and getattr(cls, "sdf_kind", -1) < 0:
        missing |= SDF
    return missing


def make_plugins(m) -> tuple:
    """The per-model plugin objects of a Model, one per plugin class in use, in order
    of first instance (what the engine's hooks are called on)."""
    a = m.arrays
    ninst = int(m.nplugin)
    if not ninst:
        return ()
    insts = getattr(a, "plugin_instances", None)
    if insts is None:
        insts = instances_from_arrays(a)
    by_cls: dict = {}
    for inst in insts:
        by_cls.setdefault(inst.cls, []).append(inst)
    for cls in by_cls:
        if cls.capabilities & ACTUATOR and cls.compute is None:
            # (MuJoCo: "`compute` is a null function pointer", when it is called)
            raise TypeError(f"plugin '{cls.name}': an actuator plugin needs a compute hook "
                            f"(its actuators' forces)")
        _check_sensor_hooks(cls)
    _check_passive_hooks(by_cls)
    return tuple(cls(m, lst) for cls, lst in by_cls.items())


def _check_passive_hooks(classes) -> None:
    """A passive plugin needs its ``passive`` hook (MuJoCo: "`compute` is a null
    function pointer", when mj_passive calls it)."""
    for cls in classes:
        if cls.capabilities & PASSIVE and cls.passive is None:
            raise TypeError(f"plugin '{cls.name}': a passive plugin needs a passive hook "
                            f"(its forces)")


def _check_sensor_hooks(cls) -> None:
    """A sensor plugin needs compute_sensor (MuJoCo: "`compute` is null for plugin",
    when it is called) and a needstage of mjtStage."""
    if not cls.capabilities & SENSOR:
        return
    if cls.compute_sensor is None:
        raise TypeError(f"plugin '{cls.name}': a sensor plugin needs a compute_sensor hook "
                        f"(its sensors' values)")
    if cls.needstage not in (0, 1, 2, 3):
        raise TypeError(f"plugin '{cls.name}': needstage must be an mjtStage (0 none, 1 "
                        f"pos, 2 vel, 3 acc), got {cls.needstage!r}")


def init_check(m, func: str = "make_data") -> None:
    """Every instance's ``check`` on the model (MuJoCo runs plugin->init when it makes
    an mjData, and fails with "mj_initPlugin: plugin->init failed for plugin id i");
    ValueError with the plugin's message. A compiled model passed them already."""
    for plugin in m.plugins:
        for inst in plugin.instances:
            msg = inst.cls.check(m.arrays, inst)
            if msg:
                raise ValueError(f"{func}: mj_initPlugin: plugin->init failed for plugin "
                                 f"id {inst.id}: {msg}")


def instances_from_arrays(a) -> list:
    """Instances rebuilt from the plugin fields of model arrays (plugin, plugin_attr,
    plugin_attradr, plugin_stateadr/statenum, actuator_plugin)."""
    sizes = a.sizes
    n = int(sizes.get("nplugin", 0))
    attr = bytes(int(c) & 0xFF for c in np.asarray(a.plugin_attr).reshape(-1)[
        :int(sizes.get("npluginattr", 0))])
    adr = np.asarray(a.plugin_attradr).reshape(-1)[:n]
    out = []
    act_plugin = np.asarray(a.actuator_plugin).reshape(-1)[:int(sizes.get("nu", 0))]
    body_plugin = np.asarray(a.body_plugin).reshape(-1)[:int(sizes.get("nbody", 0))]
    sensor_plugin = np.asarray(a.sensor_plugin).reshape(-1)[:int(sizes.get("nsensor", 0))]
    geom_plugin = np.asarray(a.geom_plugin).reshape(-1)[:int(sizes.get("ngeom", 0))]
    for i in range(n):
        cls = plugin_at(int(np.asarray(a.plugin).reshape(-1)[i]))
        values = attr[int(adr[i]):].split(b"\0")
        config = {}
        for k, key in enumerate(cls.attributes):
            text = values[k].decode() if k < len(values) else ""
            if text:
                config[key] = text
        out.append(Instance(i, int(np.asarray(a.plugin).reshape(-1)[i]), cls, config,
                            actuators=[int(j) for j in np.flatnonzero(act_plugin == i)],
                            bodies=[int(j) for j in np.flatnonzero(body_plugin == i)],
                            sensors=[int(j) for j in np.flatnonzero(sensor_plugin == i)],
                            geoms=[int(j) for j in np.flatnonzero(geom_plugin == i)],
                            stateadr=int(np.asarray(a.plugin_stateadr).reshape(-1)[i]),
                            statenum=int(np.asarray(a.plugin_statenum).reshape(-1)[i])))
    return out


def launch(kernel, m, d, **given):
    """Launch a plugin's kernel with its parameters bound by name to Model and Data
    fields and sizes (kernels.bind.launch); ``given`` holds the others (its own
    arrays, from ``device(d)``, and scalars)."""
    from ..kernels.bind import launch as bound_launch
    return bound_launch(kernel, m, d, **given)

from .pid import Pid  # noqa: E402  (registered first: slot 0, as MuJoCo's first plugin)
from .cable import Cable  # noqa: E402
from .touch_grid import TouchGrid  # noqa: E402
from .sdf import SDF_PLUGINS  # noqa: E402

register_plugin(Pid)
register_plugin(Cable)
register_plugin(TouchGrid)
for _sdf in SDF_PLUGINS:
    register_plugin(_sdf)

__all__ = ["ACTUATOR", "SENSOR", "PASSIVE", "SDF", "Plugin", "Instance", "register_plugin",
           "find_plugin", "plugin_at", "registered", "launch", "get_config",
           "load_entry_points", "NOT_YET"]
