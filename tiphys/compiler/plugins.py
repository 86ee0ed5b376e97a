"""Plugin instances: <extension><plugin><instance><config> and in-place instances on
actuators, sensors and bodies (a <composite type="cable">'s, or a <body><plugin>),
compiled as MuJoCo's xml_native_reader (Extension, OnePlugin, ReadPluginConfigs),
mjCModel::ResolvePlugin, mjCPlugin::Compile and mjCModel::CopyPlugins do.

Instances are numbered as MuJoCo numbers them: those of the <extension> sections
(which its reader takes first, wherever they are), then each in-place plugin (an
<actuator><plugin>, <sensor><plugin>, <mesh><plugin> or sdf <geom><plugin> without
``instance=``) in reading order: the meshes' (<asset>), the actuators', then the
sensors', then those of <worldbody>, which MuJoCo reads last: the sdf geoms' or the
bodies' (one per composite, named ``composite<prefix>``; a model with both is refused,
their interleaving is not tracked). ``plugin`` holds tiphys's registry slot
(tiphys.plugin), not MuJoCo's global one. A plugin MuJoCo has and tiphys does not
implement yet (tiphys.plugin.NOT_YET), or one whose capabilities need hooks tiphys does
not call yet (an SDF plugin other than MuJoCo's shapes), raises NotImplementedError
naming it and the element; so do in-place plugins on other geoms and on flexcomps (the
compiler passes of those elements call :func:`refuse`; meshes and sdf geoms call
:func:`sdf_instance`).
"""
from __future__ import annotations

import numpy as np

from .. import plugin as registry
from ..errors import ModelError, error_at


def _where(el) -> str:
    return f"{getattr(el, 'xml_file', None) or '<string>'}:{getattr(el, 'xml_line', None)}"


def _capability_text(flags: int) -> str:
    return "/".join(name for bit, name in registry.CAPABILITY_NAMES.items() if flags & bit)


def _not_yet(el, what: str, plugin_name: str, flags: int) -> NotImplementedError:
    return NotImplementedError(
        f"{_where(el)}: {what}: plugin '{plugin_name}' ({_capability_text(flags)} plugin) "
        f"is not supported yet")


def _instance_plugin_name(spec, instance: str) -> str:
    if spec is None:
        return ""
    for section in spec.sections("extension"):
        for pel in section.find("plugin"):
            for inst in pel.find("instance"):
                if inst.attr("name") == instance:
                    return pel.attr("plugin") or ""
    return ""


def refuse(spec, el, what: str) -> NotImplementedError:
    """The NotImplementedError for an in-place ``<plugin>`` element ``el`` (of a body,
    geom, mesh, flexcomp, ...) that tiphys does not simulate yet, naming the
    plugin (given, or that of the referenced instance) and the element."""
    name = el.attr("plugin") or _instance_plugin_name(spec, el.attr("instance") or "") or "?"
    flags = registry.NOT_YET.get(name, 0)
    if not flags:
        _, cls = registry.find_plugin(name)
        flags = cls.capabilities if cls is not None else 0
    if flags:
        return _not_yet(el, what, name, flags)
    return NotImplementedError(f"{_where(el)}: {what}: plugin '{name}' is not supported yet")


def sdf_instance(spec, owner, el, what: str):
    """(plugin class, config) of an SDF ``<plugin>`` element ``el`` of a mesh or geom
    (``owner``): the explicit instance it names, or its own (in place: ``plugin=`` and
    <config> children), with mjCModel::ResolvePlugin's errors and the element's
    capability check."""
    pname, iname = el.attr("plugin") or "", el.attr("instance") or ""
    if not pname and not iname:
        raise error_at(el, f"neither 'plugin' nor 'instance' is specified for {what}")
    active, declared = _read_extensions(spec)
    if iname:
        decl = next((d for d in declared if d.name == iname), None)
        if decl is None:
            raise error_at(el, f"unrecognized name '{iname}' for plugin instance",
                           "instance")
    if pname and pname not in active:
        raise error_at(el, f"unrecognized plugin '{pname}'", "plugin")
    if not iname:
        decl = _Declared(pname, "", _read_config(el), el)
    elif pname and pname != decl.plugin_name:
        # (MuJoCo 3.4.0 silently gives the instance the named plugin instead)
        raise error_at(el, f"plugin '{pname}' does not match the plugin "
                           f"'{decl.plugin_name}' of instance '{iname}'", "plugin")
    _, cls = registry.find_plugin(decl.plugin_name)
    if not cls.capabilities & registry.SDF:
        # (mjCGeom::Compile's message says "sign distance", mjCMesh's "signed distance")
        kind = "sign" if what == "geom" else "signed"
        raise error_at(owner, f"plugin '{cls.name}' does not support {kind} distance "
                              f"fields")
    return cls, decl.config


class _Declared:
    """An instance as read: plugin name, instance name, config (key -> text), the
    element to report errors at, and the element the config came from."""

    def __init__(self, plugin_name, name, config, el):
        self.plugin_name, self.name, self.config, self.el = plugin_name, name, config, el


def _read_config(el) -> dict:
    """ReadPluginConfigs: <config key= value=/> children, both required, keys unique."""
    config = {}
    for child in el.children:
        if child.tag != "config":
            continue
        key, value = child.attr("key"), child.attr("value")
        for attr, text in (("key", key), ("value", value)):
            if text is None:
                raise error_at(child, f"required attribute missing: '{attr}'", attr)
        if key in config:
            raise error_at(child, f"duplicate config key: {key}", "key")
        config[key] = value
    return config


def _read_extensions(spec) -> tuple[set, list]:
    """(active plugin names, explicit instances in order) of every <extension>."""
    active, declared = set(), []
    for section in spec.sections("extension"):
        for pel in section.children:
            if pel.tag != "plugin":
                continue
            name = pel.attr("plugin")
            if name is None:
                raise error_at(pel, "required attribute missing: 'plugin'", "plugin")
            if name not in registry.NOT_YET and registry.find_plugin(name)[1] is None:
                raise error_at(pel, f"plugin {name} not found", "plugin")
            active.add(name)
            for inst in pel.find("instance"):
                iname = inst.attr("name")
                if iname is None:
                    raise error_at(inst, "required attribute missing: 'name'", "name")
                if name in registry.NOT_YET:
                    raise _not_yet(inst, f"<instance name=\"{iname}\">", name,
                                   registry.NOT_YET[name])
                declared.append(_Declared(name, iname, _read_config(inst), inst))
    return active, declared


def check_extensions(spec) -> None:
    """What MuJoCo's XML reader checks of the <extension> sections (unknown plugins,
    instances without a name, config keys), and NotImplementedError for an instance of
    a plugin tiphys does not simulate yet: run before the other compiler passes."""
    _read_extensions(spec)


def _body_plugins(builder, active: set, by_name: dict) -> tuple[list, list]:
    """(in-place declarations, [(body id, declaration)]) of the bodies' plugins, which
    <composite type="cable"> gives its bodies (in tree order: MuJoCo reads <worldbody>
    after the sections that hold the other in-place plugins). mjCBody::Compile's
    ResolvePlugin and capability check, with its messages."""
    inplace, refs = [], []
    comps = getattr(builder, "composites", ())
    body_id = {id(b.el): b.id for b in builder.bodies} if comps else {}
    for comp in comps:
        if comp.plugin is None:
            continue
        pname, iname, in_place, el, config = comp.plugin
        if in_place:
            if pname not in active:
                raise error_at(el, f"unrecognized plugin '{pname}'", "plugin")
            decl = _Declared(pname, iname, config, el)
            inplace.append(decl)
        else:
            decl = by_name.get(iname)
            if decl is None:
                raise error_at(el, f"unrecognized name '{iname}' for plugin instance",
                               "instance")
            if pname and pname not in active:
                raise error_at(el, f"unrecognized plugin '{pname}'", "plugin")
            if pname and pname != decl.plugin_name:
                raise error_at(el, "'plugin' attribute does not match that of the "
                                   "instance", "plugin")
        _, cls = registry.find_plugin(decl.plugin_name)
        if cls is None or not cls.capabilities & registry.PASSIVE:
            raise error_at(el, f"plugin '{decl.plugin_name}' does not support passive "
                               f"forces")
        refs += [(body_id[id(b)], decl) for b in comp.plugin_bodies if id(b) in body_id]
    return inplace, refs


def compile_plugins(spec, out, builder=None) -> None:
    """Instances and every plugin field: nplugin, npluginattr, npluginstate, plugin,
    plugin_stateadr, plugin_statenum, plugin_attr, plugin_attradr, actuator_plugin,
    sensor_plugin, body_plugin (the bodies of cables and of <body><plugin>s), and for
    plugin sensors sensor_dim (the plugin's nsensordata), sensor_needstage (its
    needstage), then sensor_adr and nsensordata again; out.plugin_instances keeps the
    instances (tiphys.plugin.Instance) for the Model's plugin objects.
    Needs the actuator and sensor arrays (fill_actuators, compile_sensors)."""
    active, explicit = _read_extensions(spec)
    refs = getattr(out, "actuator_plugin_refs", [])
    sensor_refs = getattr(out, "sensor_plugin_refs", [])
    # MuJoCo's reader takes the <extension> sections before the model's elements,
    # wherever they are in the document: explicit instances first, then the in-place
    # ones in reading order (the actuator section before the sensor section)
    inplace = [(i, _Declared(pname, "", _read_config(el), el))
               for i, ref in enumerate(refs) if ref is not None
               for pname, iname, el in (ref,) if not iname]
    inplace_sensors = [(i, _Declared(pname, "", _read_config(el), el))
                       for i, ref in enumerate(sensor_refs) if ref is not None
                       for pname, iname, el in (ref,) if not iname]
    by_name = {d.name: d for d in explicit}
    body_inplace, body_refs = _body_plugins(builder, active, by_name)
    # SDF plugins in place: the meshes' (the <asset> section, read before the actuators)
    # and the sdf geoms' (in <worldbody>, with the bodies')
    mesh_inplace = [_Declared(pel.attr("plugin"), "", _read_config(pel), pel)
                    for section in spec.sections("asset") for el in section.children
                    if el.tag == "mesh" and el.find("plugin")
                    for pel in (el.find("plugin")[0],)
                    if pel.attr("plugin") and not pel.attr("instance")]
    geom_refs = getattr(out, "geom_plugin_refs", [])
    geom_inplace = {geomid: _Declared(pel.attr("plugin"), "", _read_config(pel), pel)
                    for geomid, ref in enumerate(geom_refs) if ref is not None
                    for iname, pel in (ref,) if not iname}
    if geom_inplace and body_inplace:
        el = next(iter(geom_inplace.values())).el
        raise NotImplementedError(
            f"{_where(el)}: <geom><plugin> in place together with in-place body plugins: "
            f"plugin '{el.attr('plugin')}' (SDF plugin) is not supported yet (their "
            f"instances are numbered in <worldbody> reading order)")
    decls = explicit + mesh_inplace + [d for _, d in inplace] + \
        [d for _, d in inplace_sensors] + list(geom_inplace.values()) + body_inplace
    ids = {id(d): k for k, d in enumerate(decls)}

    # actuators and sensors: ResolvePlugin and the capability check of their Compile
    act_plugin = _resolve_users(refs, dict(inplace), by_name, active, ids, "actuator",
                                registry.ACTUATOR, getattr(out, "actuator_names", []))
    sensor_plugin = _resolve_users(sensor_refs, dict(inplace_sensors), by_name, active,
                                   ids, "sensor", registry.SENSOR, [])

    # mjCPlugin::Compile: the config flattened in the plugin's declared order
    instances, attr, attradr = [], bytearray(), []
    for k, decl in enumerate(decls):
        slot, cls = registry.find_plugin(decl.plugin_name)
        missing = registry.unimplemented_capabilities(cls)
        if missing:
            raise _not_yet(decl.el, f"<{decl.el.tag}>", cls.name, missing)
        rest = dict(decl.config)
        config = {}
        attradr.append(len(attr))
        for key in cls.attributes:
            text = rest.pop(key, None)
            if text is not None:
                config[key] = text
                attr += text.encode()
            attr.append(0)
        if not cls.attributes:
            attr.append(0)
        if rest:
            key = next(iter(sorted(rest)))
            raise error_at(decl.el, f"unrecognized attribute 'plugin:{key}' for plugin "
                                    f"{cls.name}'")
        inst = registry.Instance(k, slot, cls, config, name=decl.name,
                                 actuators=[int(j) for j in np.flatnonzero(act_plugin == k)],
                                 sensors=[int(j) for j in np.flatnonzero(sensor_plugin == k)],
                                 bodies=[b for b, d in body_refs if d is decl])
        instances.append(inst)

    # CopyPlugins: plugin_state addresses
    stateadr = 0
    for inst in instances:
        inst.stateadr = stateadr
        inst.statenum = int(inst.cls.nstate(inst))
        stateadr += inst.statenum

    for geomid, ref in enumerate(geom_refs):
        if ref is not None:  # (sdf_instance checked the name when the geom was read)
            decl = by_name[ref[0]] if ref[0] else geom_inplace[geomid]
            out.geom_plugin[geomid] = ids[id(decl)]
            instances[out.geom_plugin[geomid]].geoms.append(geomid)
    if hasattr(out, "geom_plugin_refs"):
        del out.geom_plugin_refs
    _plugin_sensors(out, instances, sensor_plugin)
    out.actuator_plugin = act_plugin
    out.body_plugin = np.full(len(out.body_parentid), -1, dtype=np.int32)
    for bodyid, decl in body_refs:
        out.body_plugin[bodyid] = ids[id(decl)]
    out.plugin = np.array([inst.slot for inst in instances], dtype=np.int32)
    out.plugin_stateadr = np.array([inst.stateadr for inst in instances], dtype=np.int32)
    out.plugin_statenum = np.array([inst.statenum for inst in instances], dtype=np.int32)
    out.plugin_attr = np.frombuffer(bytes(attr), dtype=np.uint8).astype(np.int32)
    out.plugin_attradr = np.array(attradr, dtype=np.int32)
    out.plugin_instances = instances
    out.plugin_names = [inst.name for inst in instances]
    out.plugin_els = [decl.el for decl in decls]
    values = out.__dict__
    values["_size_nplugin"] = len(instances)
    values["_size_npluginattr"] = len(attr)
    values["_size_npluginstate"] = stateadr
    del out.actuator_plugin_refs
    if hasattr(out, "sensor_plugin_refs"):
        del out.sensor_plugin_refs


def _resolve_users(refs, inplace_of, by_name, active, ids, kind, capability, names):
    """Instance id of each element (actuator or sensor) that has a <plugin> (-1 for the
    others), as mjCModel::ResolvePlugin and the element's capability check."""
    n = len(refs)
    users = np.full(n, -1, dtype=np.int32)
    for i, ref in enumerate(refs):
        if ref is None:
            continue
        pname, iname, el = ref
        if not pname and not iname:
            if kind == "actuator":
                name = names[i] if i < len(names) else ""
                raise error_at(el, f"neither 'plugin' nor 'instance' is specified for "
                                   f"actuator '{name}', (id = {i})")
            raise error_at(el, f"neither 'plugin' nor 'instance' is specified for {kind}")
        if iname:
            decl = by_name.get(iname)
            if decl is None:
                raise error_at(el, f"unrecognized name '{iname}' for plugin instance",
                               "instance")
            if pname and pname != decl.plugin_name:
                raise error_at(el, f"plugin '{pname}' does not match the plugin "
                                   f"'{decl.plugin_name}' of instance '{iname}'", "plugin")
        else:
            decl = inplace_of[i]
            if pname not in active:
                raise error_at(el, f"unrecognized plugin '{pname}'", "plugin")
            if pname in registry.NOT_YET:
                raise _not_yet(el, f"<{kind}><plugin>", pname, registry.NOT_YET[pname])
        _, cls = registry.find_plugin(decl.plugin_name)
        if not cls.capabilities & capability:
            what = "actuators" if kind == "actuator" else "sensors"
            raise error_at(el, f"plugin '{cls.name}' does not support {what}")
        users[i] = ids[id(decl)]
    return users


def _plugin_sensors(out, instances, sensor_plugin) -> None:
    """CopyPlugins for plugin sensors: sensor_plugin, each plugin sensor's dim (the
    plugin's nsensordata) and needstage (the plugin's), then sensor_adr and nsensordata
    over every sensor again."""
    out.sensor_plugin = sensor_plugin
    if not len(sensor_plugin) or not np.any(sensor_plugin >= 0):
        return
    dim = np.array(out.sensor_dim, dtype=np.int32)
    needstage = np.array(out.sensor_needstage, dtype=np.int32)
    for inst in instances:
        cls = inst.cls
        for sid in inst.sensors:
            if cls.nsensordata is None:
                raise TypeError(f"plugin '{cls.name}': a sensor plugin needs the class "
                                f"method nsensordata (MuJoCo: `nsensordata` is null)")
            dim[sid] = int(cls.nsensordata(inst, sid))
            needstage[sid] = int(cls.needstage)
    out.sensor_dim = dim
    out.sensor_needstage = needstage
    out.sensor_adr = np.concatenate([[0], np.cumsum(dim)[:-1]]).astype(np.int32)
    total = int(dim.sum())
    if total < 0:  # (a plugin gave a negative dim: MuJoCo then fails to make mjData)
        el = out.sensor_els[int(np.flatnonzero(dim < 0)[0])]
        raise error_at(el, "could not create mjData: Invalid data: sensordata too large")
    from .compile import _setsize
    _setsize(out, nsensordata=total)


def check_plugins(out) -> None:
    """Each instance's own validation (MuJoCo runs plugin->init when the compiler makes
    its mjData, and fails the compile): a ModelError with the plugin's message, at the
    element of the instance (an actuator's for an in-place one)."""
    for inst, el in zip(out.plugin_instances, out.plugin_els):
        msg = inst.cls.check(out, inst)
        if msg:
            raise ModelError(
                f"mj_initPlugin: plugin->init failed for plugin id {inst.id}: {msg}",
                file=getattr(el, "xml_file", None), line=getattr(el, "xml_line", None),
                element=getattr(el, "tag", None))
