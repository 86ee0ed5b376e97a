"""<sensor> section: sensor_* fields and the sensordata layout, as MuJoCo 3.4.0 compiles them.

Two passes, as MuJoCo's reader and compiler:
- reading (mjXReader::Sensor): each element fixes its type, the object and reference
  types it attaches to, and the names; missing or conflicting attributes are errors
  here. Sensors take no ``class``: 3.4.0 has no sensor defaults;
- compiling (mjCSensor::Compile), in order: user data against nuser_sensor, noise and
  cutoff signs, name resolution (objid/refid), datatype/needstage/dim from the type,
  the type's own checks (joint kind, limits, camera resolution, ...), cutoff against
  the datatype. ``sensor_adr`` is the running sum of ``sensor_dim``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import error_at
from ..kernels.consts import (DATATYPE_AXIS, DATATYPE_POSITIVE, DATATYPE_QUATERNION, DATATYPE_REAL,
                              GEOM_HFIELD, JNT_BALL, JNT_HINGE, JNT_SLIDE, OBJ_ACTUATOR, OBJ_BODY,
                              OBJ_CAMERA, OBJ_DOF, OBJ_EQUALITY, OBJ_EXCLUDE, OBJ_FLEX, OBJ_GEOM,
                              OBJ_HFIELD, OBJ_JOINT, OBJ_KEY, OBJ_LIGHT, OBJ_MATERIAL, OBJ_MESH,
                              OBJ_NUMERIC, OBJ_PAIR, OBJ_PLUGIN, OBJ_SENSOR, OBJ_SITE, OBJ_SKIN,
                              OBJ_TENDON, OBJ_TEXT, OBJ_TEXTURE, OBJ_TUPLE, OBJ_UNKNOWN, OBJ_XBODY,
                              SENS_ACCELEROMETER, SENS_ACTUATORFRC, SENS_ACTUATORPOS,
                              SENS_ACTUATORVEL, SENS_BALLANGVEL, SENS_BALLQUAT, SENS_CAMPROJECTION,
                              SENS_CLOCK, SENS_CONTACT, SENS_E_KINETIC, SENS_E_POTENTIAL,
                              SENS_FORCE, SENS_FRAMEANGACC, SENS_FRAMEANGVEL, SENS_FRAMELINACC,
                              SENS_FRAMELINVEL, SENS_FRAMEPOS, SENS_FRAMEQUAT, SENS_FRAMEXAXIS,
                              SENS_FRAMEYAXIS, SENS_FRAMEZAXIS, SENS_GEOMDIST, SENS_GEOMFROMTO,
                              SENS_GEOMNORMAL, SENS_GYRO, SENS_INSIDESITE, SENS_JOINTACTFRC,
                              SENS_JOINTLIMITFRC, SENS_JOINTLIMITPOS, SENS_JOINTLIMITVEL,
                              SENS_JOINTPOS, SENS_JOINTVEL, SENS_MAGNETOMETER, SENS_PLUGIN,
                              SENS_RANGEFINDER, SENS_SUBTREEANGMOM, SENS_SUBTREECOM,
                              SENS_SUBTREELINVEL, SENS_TACTILE, SENS_TENDONACTFRC,
                              SENS_TENDONLIMITFRC, SENS_TENDONLIMITPOS, SENS_TENDONLIMITVEL,
                              SENS_TENDONPOS, SENS_TENDONVEL, SENS_TORQUE, SENS_TOUCH, SENS_USER,
                              SENS_VELOCIMETER, STAGE_ACC, STAGE_NONE, STAGE_POS, STAGE_VEL)
from .empty import replay_empty
from .attrs import parse_floats, parse_ints

# MJCF object type names -> mjtObj
OBJ_TYPES = {"body": OBJ_BODY, "xbody": OBJ_XBODY, "joint": OBJ_JOINT, "dof": OBJ_DOF,
             "geom": OBJ_GEOM, "site": OBJ_SITE, "camera": OBJ_CAMERA, "light": OBJ_LIGHT,
             "flex": OBJ_FLEX, "mesh": OBJ_MESH, "skin": OBJ_SKIN, "hfield": OBJ_HFIELD,
             "texture": OBJ_TEXTURE, "material": OBJ_MATERIAL, "pair": OBJ_PAIR,
             "exclude": OBJ_EXCLUDE, "equality": OBJ_EQUALITY, "tendon": OBJ_TENDON,
             "actuator": OBJ_ACTUATOR, "sensor": OBJ_SENSOR, "numeric": OBJ_NUMERIC,
             "text": OBJ_TEXT, "tuple": OBJ_TUPLE, "key": OBJ_KEY, "plugin": OBJ_PLUGIN}
_SPATIAL = (OBJ_BODY, OBJ_XBODY, OBJ_GEOM, OBJ_SITE, OBJ_CAMERA)

_DATATYPE = {"real": DATATYPE_REAL, "positive": DATATYPE_POSITIVE, "axis": DATATYPE_AXIS,
             "quaternion": DATATYPE_QUATERNION}
_STAGE = {"none": STAGE_NONE, "pos": STAGE_POS, "vel": STAGE_VEL, "acc": STAGE_ACC}
# contact sensor data fields (mjtConDataField) in their required order, and their sizes
_CONDATA = ("found", "force", "torque", "dist", "pos", "normal", "tangent")
_CONDATA_SIZE = (1, 3, 3, 1, 3, 3, 3)
_REDUCE = {"none": 0, "mindist": 1, "maxforce": 2, "netforce": 3}


# element -> (type, object attribute, object type) for sensors on one named object
_SIMPLE = {
    "touch": (SENS_TOUCH, "site", OBJ_SITE),
    "accelerometer": (SENS_ACCELEROMETER, "site", OBJ_SITE),
    "velocimeter": (SENS_VELOCIMETER, "site", OBJ_SITE),
    "gyro": (SENS_GYRO, "site", OBJ_SITE),
    "force": (SENS_FORCE, "site", OBJ_SITE),
    "torque": (SENS_TORQUE, "site", OBJ_SITE),
    "magnetometer": (SENS_MAGNETOMETER, "site", OBJ_SITE),
    "camprojection": (SENS_CAMPROJECTION, "site", OBJ_SITE),
    "rangefinder": (SENS_RANGEFINDER, "site", OBJ_SITE),
    "jointpos": (SENS_JOINTPOS, "joint", OBJ_JOINT),
    "jointvel": (SENS_JOINTVEL, "joint", OBJ_JOINT),
    "tendonpos": (SENS_TENDONPOS, "tendon", OBJ_TENDON),
    "tendonvel": (SENS_TENDONVEL, "tendon", OBJ_TENDON),
    "actuatorpos": (SENS_ACTUATORPOS, "actuator", OBJ_ACTUATOR),
    "actuatorvel": (SENS_ACTUATORVEL, "actuator", OBJ_ACTUATOR),
    "actuatorfrc": (SENS_ACTUATORFRC, "actuator", OBJ_ACTUATOR),
    "jointactuatorfrc": (SENS_JOINTACTFRC, "joint", OBJ_JOINT),
    "tendonactuatorfrc": (SENS_TENDONACTFRC, "tendon", OBJ_TENDON),
    "ballquat": (SENS_BALLQUAT, "joint", OBJ_JOINT),
    "ballangvel": (SENS_BALLANGVEL, "joint", OBJ_JOINT),
    "jointlimitpos": (SENS_JOINTLIMITPOS, "joint", OBJ_JOINT),
    "jointlimitvel": (SENS_JOINTLIMITVEL, "joint", OBJ_JOINT),
    "jointlimitfrc": (SENS_JOINTLIMITFRC, "joint", OBJ_JOINT),
    "tendonlimitpos": (SENS_TENDONLIMITPOS, "tendon", OBJ_TENDON),
    "tendonlimitvel": (SENS_TENDONLIMITVEL, "tendon", OBJ_TENDON),
    "tendonlimitfrc": (SENS_TENDONLIMITFRC, "tendon", OBJ_TENDON),
    "subtreecom": (SENS_SUBTREECOM, "body", OBJ_BODY),
    "subtreelinvel": (SENS_SUBTREELINVEL, "body", OBJ_BODY),
    "subtreeangmom": (SENS_SUBTREEANGMOM, "body", OBJ_BODY),
}
_FRAME = {"framepos": SENS_FRAMEPOS, "framequat": SENS_FRAMEQUAT, "framexaxis": SENS_FRAMEXAXIS,
          "frameyaxis": SENS_FRAMEYAXIS, "framezaxis": SENS_FRAMEZAXIS,
          "framelinvel": SENS_FRAMELINVEL, "frameangvel": SENS_FRAMEANGVEL,
          "framelinacc": SENS_FRAMELINACC, "frameangacc": SENS_FRAMEANGACC}
_GEOMDIST = {"distance": SENS_GEOMDIST, "normal": SENS_GEOMNORMAL, "fromto": SENS_GEOMFROMTO}
_GLOBAL = {"e_potential": SENS_E_POTENTIAL, "e_kinetic": SENS_E_KINETIC, "clock": SENS_CLOCK}

_POSITIVE_TYPES = (SENS_TOUCH, SENS_RANGEFINDER, SENS_INSIDESITE)
_AXIS_TYPES = (SENS_FRAMEXAXIS, SENS_FRAMEYAXIS, SENS_FRAMEZAXIS, SENS_GEOMNORMAL)
_QUAT_TYPES = (SENS_BALLQUAT, SENS_FRAMEQUAT)
_ACC_TYPES = (SENS_TOUCH, SENS_ACCELEROMETER, SENS_FORCE, SENS_TORQUE, SENS_ACTUATORFRC,
              SENS_JOINTACTFRC, SENS_TENDONACTFRC, SENS_JOINTLIMITFRC, SENS_TENDONLIMITFRC,
              SENS_FRAMELINACC, SENS_FRAMEANGACC, SENS_CONTACT, SENS_TACTILE)
_VEL_TYPES = (SENS_VELOCIMETER, SENS_GYRO, SENS_JOINTVEL, SENS_TENDONVEL, SENS_ACTUATORVEL,
              SENS_BALLANGVEL, SENS_JOINTLIMITVEL, SENS_TENDONLIMITVEL, SENS_FRAMELINVEL,
              SENS_FRAMEANGVEL, SENS_SUBTREELINVEL, SENS_SUBTREEANGMOM)
_DIM = {SENS_CAMPROJECTION: 2, SENS_BALLQUAT: 4, SENS_FRAMEQUAT: 4, SENS_GEOMFROMTO: 6}
_DIM.update({t: 3 for t in (SENS_ACCELEROMETER, SENS_VELOCIMETER, SENS_GYRO, SENS_FORCE,
                            SENS_TORQUE, SENS_MAGNETOMETER, SENS_BALLANGVEL, SENS_FRAMEPOS,
                            SENS_FRAMEXAXIS, SENS_FRAMEYAXIS, SENS_FRAMEZAXIS, SENS_FRAMELINVEL,
                            SENS_FRAMEANGVEL, SENS_FRAMELINACC, SENS_FRAMEANGACC,
                            SENS_SUBTREECOM, SENS_SUBTREELINVEL, SENS_SUBTREEANGMOM,
                            SENS_GEOMNORMAL)})
# sensors that need no sensorized object
_OBJECTLESS = (SENS_E_POTENTIAL, SENS_E_KINETIC, SENS_CLOCK, SENS_PLUGIN, SENS_CONTACT, SENS_USER)


@dataclass
class _Sensor:
    el: object
    type: int
    name: str = ""
    objtype: int = OBJ_UNKNOWN
    objname: str = ""
    objattr: Optional[str] = None  # the attributes the names came from (for errors)
    reftype: int = OBJ_UNKNOWN
    refname: str = ""
    refattr: Optional[str] = None
    datatype: int = DATATYPE_REAL
    needstage: int = STAGE_ACC
    dim: int = 0
    intprm: list = field(default_factory=lambda: [0, 0, 0])
    cutoff: float = 0.0
    noise: float = 0.0
    user: np.ndarray = field(default_factory=lambda: np.zeros(0))
    objid: int = -1
    refid: int = -1
    plugin: Optional[tuple] = None  # <plugin>: (plugin name, instance name, element)


# ------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------

def _text(el, name) -> Optional[str]:
    """An attribute's text, or None when absent."""
    return el.get_attr(name)


def _required(el, name) -> str:
    text = _text(el, name)
    if text is None:
        raise error_at(el, f"required attribute missing: '{name}'", name)
    return text


def _floats(el, name, text) -> list:
    """Numbers as MuJoCo reads them: "inf" and "nan" are taken, overflow is an error."""
    values = parse_floats(el, name, text)
    for tok, value in zip(text.split(), values):
        if np.isinf(value) and "inf" not in tok.lower():
            raise error_at(el, f"number is too large, got '{tok}'", name)
    return values


def _scalar(el, name) -> Optional[float]:
    """ReadAttr with one value: None when absent or empty; more values are an error."""
    text = _text(el, name)
    if text is None:
        return None
    values = _floats(el, name, text)
    if not values:
        return None
    if len(values) > 1:
        raise error_at(el, f"attribute '{name}' has too much data", name)
    return values[0]


def _int(el, name, required=False) -> Optional[int]:
    text = _text(el, name)
    if text is None:
        if required:
            raise error_at(el, f"required attribute missing: '{name}'", name)
        return None
    values = parse_ints(el, name, text)
    if len(values) != 1:
        raise error_at(el, f"expected one integer, got '{text}'", name)
    return values[0]


def _keyword(el, name, table) -> Optional[int]:
    text = _text(el, name)
    if text is None:
        return None
    if text not in table:
        raise error_at(el, f"invalid keyword '{text}', expected one of {', '.join(table)}",
                       name)
    return table[text]


def _objtype(text: str) -> int:
    """mju_str2Type: an unknown word is mjOBJ_UNKNOWN (the compiler rejects it later)."""
    return OBJ_TYPES.get(text, OBJ_UNKNOWN)


def _read_frame(s: _Sensor, el, with_ref: bool):
    s.objtype = _objtype(_required(el, "objtype"))
    s.objname, s.objattr = _required(el, "objname"), "objname"
    if not with_ref:
        return
    reftype = _text(el, "reftype")
    if reftype is not None:
        s.reftype = _objtype(reftype)
        s.refname, s.refattr = _required(el, "refname"), "refname"
    elif _text(el, "refname") is not None:
        raise error_at(el, f"refname '{_text(el, 'refname')}' given but reftype is missing",
                       "refname")


def _read_geomdist(s: _Sensor, el):
    for side, (body, geom) in ((1, ("body1", "geom1")), (2, ("body2", "geom2"))):
        has_body, has_geom = _text(el, body) is not None, _text(el, geom) is not None
        if has_body == has_geom:
            raise error_at(el, f"exactly one of ({geom}, {body}) must be specified",
                           geom)
        attr = body if has_body else geom
        objtype = OBJ_BODY if has_body else OBJ_GEOM
        if side == 1:
            s.objtype, s.objname, s.objattr = objtype, el.attr(attr), attr
        else:
            s.reftype, s.refname, s.refattr = objtype, el.attr(attr), attr


def _read_contact(s: _Sensor, el):
    first = [(a, t) for a, t in (("site", OBJ_SITE), ("body1", OBJ_BODY),
                                 ("subtree1", OBJ_XBODY), ("geom1", OBJ_GEOM))
             if _text(el, a) is not None]
    if len(first) > 1:
        raise error_at(el, "at most one of (geom1, body1, subtree1, site) can be specified",
                       first[1][0])  # the one MuJoCo's priority order passes over
    if first:
        s.objattr, s.objtype = first[0]
        s.objname = el.attr(s.objattr)
    second = [(a, t) for a, t in (("body2", OBJ_BODY), ("subtree2", OBJ_XBODY),
                                  ("geom2", OBJ_GEOM)) if _text(el, a) is not None]
    if len(second) > 1:
        raise error_at(el, "at most one of (geom2, body2, subtree2) can be specified",
                       second[1][0])
    if second:
        s.refattr, s.reftype = second[0]
        s.refname = el.attr(s.refattr)
    dataspec = 1  # found
    data = _text(el, "data")
    if data is not None and data.split():
        seen, fields = set(), []
        for key in data.split():
            if key in seen:
                raise error_at(el, f"duplicate keyword '{key}'", "data")
            if key not in _CONDATA:
                raise error_at(el, f"invalid keyword '{key}', expected one of "
                                   f"{', '.join(_CONDATA)}", "data")
            seen.add(key)
            fields.append(_CONDATA.index(key))
        if any(b <= a for a, b in zip(fields, fields[1:])):
            raise error_at(el, f"data attributes must be in order: {', '.join(_CONDATA)}",
                           "data")
        dataspec = sum(1 << f for f in fields)
    reduce = _keyword(el, "reduce", _REDUCE)
    num = _int(el, "num")
    num = 1 if num is None else num
    if num <= 0:
        raise error_at(el, "'num' must be positive in sensor", "num")
    s.intprm = [dataspec, 0 if reduce is None else reduce, num]


def _read_user(s: _Sensor, el):
    objname, objtype = _text(el, "objname"), _text(el, "objtype")
    if objtype is not None:
        if objname is None:
            raise error_at(el, f"objtype '{objtype}' given but objname is missing", "objname")
        s.objtype = _objtype(objtype)
    elif objname is not None:
        raise error_at(el, f"objname '{objname}' given but objtype is missing", "objtype")
    if objname is not None:
        s.objname, s.objattr = objname, "objname"
    s.dim = _int(el, "dim", required=True)
    needstage = _keyword(el, "needstage", _STAGE)
    if needstage is not None:
        s.needstage = needstage
    datatype = _keyword(el, "datatype", _DATATYPE)
    if datatype is not None:
        s.datatype = datatype


def _read_plugin(s: _Sensor, el):
    """mjXReader's plugin sensor: the plugin and instance names (OnePlugin; the
    instance is resolved by compile_plugins) and an optional object and reference,
    each a type and a name given together."""
    s.plugin = (el.attr("plugin") or "", el.attr("instance") or "", el)
    s.objtype = _objtype(_text(el, "objtype") or "")
    objname = _text(el, "objname") or ""
    if s.objtype != OBJ_UNKNOWN and not objname:
        raise error_at(el, "objtype is specified but objname is not", "objname")
    if s.objtype == OBJ_UNKNOWN and objname:
        raise error_at(el, "objname is specified but objtype is not", "objtype")
    s.objname, s.objattr = objname, "objname"
    s.reftype = _objtype(_text(el, "reftype") or "")
    refname = _text(el, "refname") or ""
    if s.reftype != OBJ_UNKNOWN and not refname:
        raise error_at(el, "reftype is specified but refname is not", "refname")
    if s.reftype == OBJ_UNKNOWN and refname:
        raise error_at(el, "refname is specified but reftype is not", "reftype")
    s.refname, s.refattr = refname, "refname"


def _read(el, spec=None) -> _Sensor:
    tag = el.tag
    s = _Sensor(el, -1, name=el.attr("name") or "")
    cutoff, noise = _scalar(el, "cutoff"), _scalar(el, "noise")
    s.cutoff = 0.0 if cutoff is None else cutoff
    s.noise = 0.0 if noise is None else noise
    user = _text(el, "user")
    if user is not None:
        s.user = np.array(_floats(el, "user", user), dtype=np.float64)
    if tag in _SIMPLE:
        s.type, s.objattr, s.objtype = _SIMPLE[tag]
        s.objname = _required(el, s.objattr)
        if tag == "camprojection":
            s.reftype, s.refattr = OBJ_CAMERA, "camera"
            s.refname = _required(el, "camera")
    elif tag in _FRAME:
        s.type = _FRAME[tag]
        _read_frame(s, el, with_ref=s.type not in (SENS_FRAMELINACC, SENS_FRAMEANGACC))
    elif tag == "insidesite":
        s.type = SENS_INSIDESITE
        s.reftype, s.refattr = OBJ_SITE, "site"
        s.refname = _required(el, "site")
        _read_frame(s, el, with_ref=False)
    elif tag in _GEOMDIST:
        s.type = _GEOMDIST[tag]
        _read_geomdist(s, el)
    elif tag == "contact":
        s.type = SENS_CONTACT
        _read_contact(s, el)
    elif tag in _GLOBAL:
        s.type = _GLOBAL[tag]
    elif tag == "user":
        s.type = SENS_USER
        _read_user(s, el)
    elif tag == "tactile":
        s.type = SENS_TACTILE
        s.reftype, s.refattr = OBJ_GEOM, "geom"
        s.refname = _required(el, "geom")
        s.objtype, s.objattr = OBJ_MESH, "mesh"
        s.objname = _required(el, "mesh")
    elif tag == "plugin":
        s.type = SENS_PLUGIN
        _read_plugin(s, el)
    else:
        raise error_at(el, "unrecognized sensor type")
    return s


# ------------------------------------------------------------------------------------
# compiling
# ------------------------------------------------------------------------------------

def _name_tables(spec, builder, out, sensors) -> dict:
    """mjtObj -> {name: id} for every object kind a sensor may name (first one wins)."""
    bodies = builder.bodies
    assets = builder.ctx.assets.names() if builder.ctx.assets is not None else {}
    custom = {"numeric": [], "text": [], "tuple": []}
    for section in spec.sections("custom"):
        for el in section.children:
            if el.tag in custom:
                custom[el.tag].append(el.attr("name") or "")
    geoms = [g for b in bodies for g in b.geoms]
    sites = [s for b in bodies for s in b.sites]
    if builder.ctx.fusestatic:
        # MuJoCo resolves these names with the name->id maps made before fusing:
        # a name gets its pre-fusion index, taken as an index into the fused lists
        geoms = _prefusion_order(spec, builder.geoms, geoms)
        sites = _prefusion_order(spec, builder.sites, sites)
    lists = {
        "body": [b.name for b in bodies],
        "joint": [j.name for b in bodies for j in b.joints],
        "geom": [g.name for g in geoms],
        "site": [s.name for s in sites],
        "camera": [c.name for b in bodies for c in b.cameras],
        "light": [li.name for b in bodies for li in b.lights],
        "tendon": list(getattr(out, "tendon_names", [])),
        "actuator": list(getattr(out, "actuator_names", [])),
        "pair": list(getattr(out, "pair_names", [])),
        "exclude": list(getattr(out, "exclude_names", [])),
        "equality": list(getattr(out, "eq_names", [])),
        "sensor": [s.name for s in sensors],
        "key": [k.attr("name") or "" for s in spec.sections("keyframe") for k in s.children],
    }
    lists.update(custom)
    lists.update(assets)
    lists["xbody"] = lists["body"]
    tables = {}
    for kind, names in lists.items():
        table = {}
        for i, name in enumerate(names):
            if name:
                table.setdefault(name, i)
        tables[OBJ_TYPES[kind]] = table
    return tables


def _prefusion_order(spec, built, fused) -> list:
    """``built`` (geoms or sites in the order the tree builder made them) in MuJoCo's
    list order before fusestatic: by owning body in depth-first order, then as
    written. ``fused`` when an object cannot be traced to its body element."""
    body_index, owner = {}, {}

    def walk(el, body):
        for child in el.children:
            if child.tag == "body":
                body_index[id(child)] = len(body_index) + 1
                walk(child, child)
            elif child.tag in ("frame", "replicate"):
                walk(child, body)
            else:
                owner[id(child)] = body

    for world in spec.sections("worldbody"):
        walk(world, world)
        body_index[id(world)] = 0
    keys = []
    for i, obj in enumerate(built):
        body = owner.get(id(obj.el))
        if body is None or len(built) != len(fused):
            return fused
        keys.append((body_index[id(body)], i))
    if len({id(o.el) for o in built}) != len(built):  # replicated: elements are shared
        return fused
    return [built[i] for _, i in sorted(keys)]


def _resolve(s: _Sensor, tables):
    """mjCSensor::ResolveReferences: objid and refid, with their checks."""
    el = s.el
    if s.objtype != OBJ_UNKNOWN:
        if not s.objname:
            raise error_at(el, "missing name of sensorized object in sensor", s.objattr)
        s.objid = tables.get(s.objtype, {}).get(s.objname, -1)
        if s.objid < 0:
            raise error_at(el, f"unrecognized name '{s.objname}' of sensorized object",
                           s.objattr)
    elif s.type not in _OBJECTLESS:
        raise error_at(el, "invalid type in sensor", "objtype")
    if s.reftype != OBJ_UNKNOWN:
        if not s.refname:
            raise error_at(el, "missing name of reference frame object in sensor",
                           s.refattr)
        s.refid = tables.get(s.reftype, {}).get(s.refname, -1)
        if s.refid < 0:
            raise error_at(el, f"unrecognized name '{s.refname}' of object", s.refattr)
        if s.reftype not in _SPATIAL:
            raise error_at(el, "reference frame object must be (x)body, geom, site or "
                               "camera in sensor", "reftype")


def _check(s: _Sensor, out):
    """The type's own checks (mjCSensor::Compile's switch)."""
    el, t = s.el, s.type
    if t == SENS_CAMPROJECTION:
        if not np.all(out.cam_resolution[s.refid]):
            raise error_at(el, "camera projection sensor requires camera resolution",
                           "camera")
    elif t in (SENS_JOINTPOS, SENS_JOINTVEL, SENS_JOINTACTFRC):
        if int(out.jnt_type[s.objid]) not in (JNT_SLIDE, JNT_HINGE):
            raise error_at(el, "joint must be slide or hinge in sensor", s.objattr)
    elif t in (SENS_BALLQUAT, SENS_BALLANGVEL):
        if int(out.jnt_type[s.objid]) != JNT_BALL:
            raise error_at(el, "joint must be ball in sensor", s.objattr)
    elif t in (SENS_JOINTLIMITPOS, SENS_JOINTLIMITVEL, SENS_JOINTLIMITFRC):
        if not out.jnt_limited[s.objid]:
            raise error_at(el, "joint must be limited in sensor", s.objattr)
    elif t in (SENS_TENDONLIMITPOS, SENS_TENDONLIMITVEL, SENS_TENDONLIMITFRC):
        if not out.tendon_limited[s.objid]:
            raise error_at(el, "tendon must be limited in sensor", s.objattr)
    elif t in _FRAME.values() or t == SENS_INSIDESITE:
        if s.objtype not in _SPATIAL:
            raise error_at(el, "sensor must be attached to (x)body, geom, site or camera",
                           "objtype")
    elif t in (SENS_GEOMDIST, SENS_GEOMNORMAL, SENS_GEOMFROMTO):
        if s.objtype == s.reftype and s.objid == s.refid:
            raise error_at(el, "1st body/geom must be different from 2nd body/geom",
                           s.refattr)
        for objtype, objid, attr in ((s.objtype, s.objid, s.objattr),
                                     (s.reftype, s.refid, s.refattr)):
            if objtype == OBJ_GEOM and int(out.geom_type[objid]) == GEOM_HFIELD:
                raise error_at(el, "height fields are not supported in geom distance "
                                   "sensors", attr)
    elif t == SENS_PLUGIN:
        name, instance, _ = s.plugin
        if not name and not instance:
            raise error_at(el, "neither 'plugin' nor 'instance' is specified for sensor")
    elif t == SENS_USER:
        if s.dim < 0:
            raise error_at(el, "sensor dim must be non-negative in sensor", "dim")
        if s.datatype == DATATYPE_AXIS and s.dim != 3:
            raise error_at(el, "datatype AXIS requires dim=3 in sensor", "dim")
        if s.datatype == DATATYPE_QUATERNION and s.dim != 4:
            raise error_at(el, "datatype QUATERNION requires dim=4 in sensor", "dim")


def _dim(s: _Sensor, out) -> int:
    if s.type == SENS_CONTACT:
        dataspec, _, num = s.intprm
        return num * sum(size for i, size in enumerate(_CONDATA_SIZE) if dataspec >> i & 1)
    if s.type == SENS_TACTILE:
        return 3 * int(out.mesh_vertnum[s.objid])
    if s.type == SENS_USER:
        return s.dim
    if s.type == SENS_PLUGIN:
        return 0  # the plugin's nsensordata, set by compile_plugins
    return _DIM.get(s.type, 1)


def _compile(s: _Sensor, tables, out, nuser: int):
    el = s.el
    if len(s.user) > nuser:
        raise error_at(el, "user has more values than nuser_sensor in sensor", "user")
    if s.noise < 0:
        raise error_at(el, "negative noise in sensor", "noise")
    if s.cutoff < 0:
        raise error_at(el, "negative cutoff in sensor", "cutoff")
    _resolve(s, tables)
    if s.type != SENS_USER:
        s.datatype = (DATATYPE_POSITIVE if s.type in _POSITIVE_TYPES
                      else DATATYPE_AXIS if s.type in _AXIS_TYPES
                      else DATATYPE_QUATERNION if s.type in _QUAT_TYPES else DATATYPE_REAL)
        s.needstage = (STAGE_ACC if s.type in _ACC_TYPES else STAGE_VEL
                       if s.type in _VEL_TYPES else STAGE_POS)
    _check(s, out)
    s.dim = _dim(s, out)
    if s.cutoff > 0 and (s.datatype == DATATYPE_QUATERNION
                         or (s.datatype == DATATYPE_AXIS and s.type != SENS_GEOMNORMAL)):
        raise error_at(el, "cutoff applied to axis or quaternion datatype in sensor",
                       "cutoff")


def _validate_tactile(sensors, out):
    """mj_validateReferences' tactile check, as 3.4.0 writes it: the body of the geom
    whose id equals the sensor's *mesh* id must have a collision geom (past the last
    geom, MuJoCo reads out of bounds; the models tried there were rejected)."""
    ngeom = len(out.geom_bodyid)
    for s in sensors:
        if s.type != SENS_TACTILE:
            continue
        ok = False
        if s.objid < ngeom:
            body = int(out.geom_bodyid[s.objid])
            adr, num = int(out.body_geomadr[body]), int(out.body_geomnum[body])
            ok = any(out.geom_contype[adr:adr + num] | out.geom_conaffinity[adr:adr + num])
        if not ok:
            raise error_at(s.el, "Touch sensor requires a body with at least one collision "
                                 "geom", "mesh")


def compile_sensors(spec, defaults, builder, out, size) -> None:
    """Fill sensor_* (with nsensor, nsensordata, nuser_sensor and the sensor names).

    Needs the tree, the assets (mesh sizes), tendons, actuators, contact pairs and
    equalities already in ``out``.
    """
    sensors = [_read(el, spec) for section in spec.sections("sensor")
               for el in section.children]
    nuser = size.get("nuser_sensor", -1)
    if nuser == -1:
        nuser = max([len(s.user) for s in sensors] + [0])
    tables = _name_tables(spec, builder, out, sensors) if sensors else {}
    for s in sensors:
        _compile(s, tables, out, nuser)
    _validate_tactile(sensors, out)
    if sensors:
        _fill_sensors(out, sensors, nuser)
    else:
        replay_empty(out, ("sensors", nuser), lambda ns: _fill_sensors(ns, [], nuser))


def _fill_sensors(out, sensors, nuser):
    n = len(sensors)

    def ints(values):
        return np.array(values, dtype=np.int32).reshape(n)

    out.sensor_type = ints([s.type for s in sensors])
    out.sensor_datatype = ints([s.datatype for s in sensors])
    out.sensor_needstage = ints([s.needstage for s in sensors])
    out.sensor_objtype = ints([s.objtype for s in sensors])
    out.sensor_objid = ints([s.objid for s in sensors])
    out.sensor_reftype = ints([s.reftype for s in sensors])
    out.sensor_refid = ints([s.refid for s in sensors])
    out.sensor_intprm = np.array([s.intprm for s in sensors], dtype=np.int32).reshape(n, 3)
    out.sensor_dim = ints([s.dim for s in sensors])
    out.sensor_adr = ints(np.cumsum([0] + [s.dim for s in sensors])[:-1])
    out.sensor_cutoff = np.array([s.cutoff for s in sensors], dtype=np.float64).reshape(n)
    out.sensor_noise = np.array([s.noise for s in sensors], dtype=np.float64).reshape(n)
    user = np.zeros((n, nuser))
    for i, s in enumerate(sensors):
        user[i, :len(s.user)] = s.user
    out.sensor_user = user
    out.sensor_plugin = np.full(n, -1, dtype=np.int32)  # (compile_plugins sets them)
    out.sensor_plugin_refs = [s.plugin for s in sensors]
    out.sensor_names = [s.name for s in sensors]
    out.sensor_els = [s.el for s in sensors]
    from .compile import _setsize
    _setsize(out, nsensor=n, nsensordata=int(sum(s.dim for s in sensors)),
             nuser_sensor=nuser)


# ------------------------------------------------------------------------------------
# what sensors keep from fusestatic and discardvisual
# ------------------------------------------------------------------------------------

def sensor_geom_names(spec) -> set:
    """Names of geoms that sensors name: discardvisual keeps them (MuJoCo marks a
    sensorized or reference geom as not visual)."""
    names = set()
    for section in spec.sections("sensor"):
        for el in section.children:
            attrs = el.attr_names
            for typ, name in (("objtype", "objname"), ("reftype", "refname")):
                if typ in attrs and el.attr(typ) == "geom" and el.attr(name):
                    names.add(el.attr(name))
            for attr in ("geom1", "geom2", "geom"):
                if attr in attrs and el.attr(attr):
                    names.add(el.attr(attr))
    return names


def sensor_mesh_names(spec) -> set:
    """Names of meshes that sensors name (tactile, user objtype="mesh"): discardvisual
    keeps them even when no remaining geom uses them."""
    names = set()
    for section in spec.sections("sensor"):
        for el in section.children:
            if el.tag == "tactile" and el.attr("mesh"):
                names.add(el.attr("mesh"))
            elif "objtype" in el.attr_names and el.attr("objtype") == "mesh" \
                    and el.attr("objname"):
                names.add(el.attr("objname"))
    return names


def fuse_blocking_bodies(spec) -> set:
    """Names of bodies that fusestatic keeps because a force or torque sensor measures
    at one of their sites (MuJoCo refuses to fuse those; unnamed bodies are fused)."""
    sites = {el.attr("site") for section in spec.sections("sensor")
             for el in section.children if el.tag in ("force", "torque") and el.attr("site")}
    names = set()
    if not sites:
        return names

    def walk(el, body_name):
        for child in el.children:
            if child.tag == "body":
                walk(child, child.attr("name"))
            elif child.tag == "site":
                if body_name and child.attr("name") in sites:
                    names.add(body_name)
            else:
                walk(child, body_name)  # frames, replicates: same body

    for world in spec.sections("worldbody"):
        walk(world, None)
    return names
