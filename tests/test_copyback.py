"""tiphys.copy_back (mj_copyBack) against MuJoCo 3.4.0's own mj_copyBack.

The oracle: MuJoCo compiles the file, the same edits are made to its mjModel,
mj_copyBack writes them into its spec and mj_saveXMLString writes that spec (both
called through ctypes: the Python bindings do not expose mj_copyBack, and their
``MjSpec.to_xml`` compiles the spec again first, which discards the copied-back
values). tiphys: load_spec, compile_model, the same edits (set_param), copy_back,
``spec.to_xml()``. Both texts are compiled by MuJoCo and the tiphys XML also by tiphys;
every model field is compared. MuJoCo's writer is set to 17 significant digits for
the oracle (as MuJoCo's own tests do: its FullFloatPrecision), so that its 6-digit
default does not move what the compiler derives (inertia eigenvectors, BVHs).
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
import pytest

import tiphys
from tests.oracle import compare_arrays, compare_model, corpus_dir
from tiphys.api import model_arrays_from_mujoco
from tiphys.types import MODEL_FIELDS

mujoco = pytest.importorskip("mujoco")

RTOL, ATOL = 1e-7, 1e-10


def _lib():
    path = glob.glob(os.path.join(os.path.dirname(mujoco.__file__), "libmujoco.so*"))[0]
    lib = ctypes.CDLL(path)
    lib.mj_copyBack.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.mj_copyBack.restype = ctypes.c_int
    lib.mj_saveXMLString.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                     ctypes.c_char_p, ctypes.c_int]
    lib.mj_saveXMLString.restype = ctypes.c_int
    lib._mjPRIVATE__set_xml_precision.argtypes = [ctypes.c_int]
    return lib


def mujoco_copy_back_xml(spec, mjm) -> str:
    """MuJoCo's mj_copyBack(spec, mjm), then mj_saveXMLString(spec) (no recompile)."""
    lib = _lib()
    assert lib.mj_copyBack(spec._address, mjm._address) == 1
    err = ctypes.create_string_buffer(1000)
    lib._mjPRIVATE__set_xml_precision(17)
    try:
        size = lib.mj_saveXMLString(spec._address, None, 0, err, 1000)
        buf = ctypes.create_string_buffer(size + 1)
        assert lib.mj_saveXMLString(spec._address, buf, size + 1, err, 1000) == 0, err.value
    finally:
        lib._mjPRIVATE__set_xml_precision(6)
    return buf.value.decode()


def _compile_next_to(path, xml: str, tag: str, engine: str):
    """Compile ``xml`` as if it were a file next to ``path`` (relative assets)."""
    tmp = os.path.join(os.path.dirname(path), f".tiphys_{tag}_{os.getpid()}_"
                                              f"{os.path.basename(path)}")
    with open(tmp, "w") as f:
        f.write(xml)
    try:
        if engine == "mujoco":
            return mujoco.MjModel.from_xml_path(tmp)
        return tiphys.compile_model(tiphys.load_spec(tmp))
    finally:
        os.remove(tmp)


# -- edits --------------------------------------------------------------------------
def _unit(q):
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


class Edits:
    """Random edits, drawn once, applied the same way to both engines' own values."""

    def __init__(self, mjm, seed, fields=None):
        self.rng = np.random.default_rng(seed)
        self.mjm = mjm
        self.ops = []  # (field, rows, kind, delta)
        for name, kind, pick in _EDITS:
            if fields is not None and name not in fields:
                continue
            arr = np.asarray(getattr(mjm, name))
            if arr.size == 0:
                continue
            rows = pick(mjm) if pick else np.arange(arr.shape[0])
            rows = [r for r in rows if self.rng.random() < 0.5] or list(rows[:1])
            if not len(rows):
                continue
            shape = (len(rows),) + arr.shape[1:]
            self.ops.append((name, np.array(rows), kind, self.rng.uniform(0.05, 0.2, shape)))

    def apply(self, get, put):
        for name, rows, kind, delta in self.ops:
            v = np.array(get(name), dtype=np.float64).reshape(
                np.shape(getattr(self.mjm, name)))
            if kind == "add":
                v[rows] = v[rows] + delta
            elif kind == "scale":
                v[rows] = v[rows] * (1 + delta)
            elif kind == "scale_row":  # one factor per row (inertia stays valid)
                v[rows] = v[rows] * (1 + delta[:, :1])
            elif kind == "quat":
                v[rows] = _unit(v[rows] + delta)
            elif kind == "widen":  # a limit range, kept ordered (and >= 0 where it was)
                v[rows, 0] -= np.where(v[rows, 0] < 0, delta[:, 0], 0)
                v[rows, 1] += delta[:, 1]
            elif kind == "unit01":  # colours
                v[rows] = np.clip(v[rows] * 0.5 + delta, 0, 1)
            put(name, v)


def _hinge_slide_qpos(m):
    return [int(m.jnt_qposadr[j]) for j in range(m.njnt) if m.jnt_type[j] in (2, 3)]


def _limited(m):
    return [j for j in range(m.njnt) if m.jnt_limited[j] and m.jnt_type[j] in (2, 3)]


def _primitive_geoms(m):
    return [g for g in range(m.ngeom) if m.geom_type[g] in (2, 3, 4, 5, 6)]


def _limited_tendons(m):
    return [t for t in range(m.ntendon) if m.tendon_limited[t]]


def _limited_ctrl(m):
    return [u for u in range(m.nu) if m.actuator_ctrllimited[u]]


def _actfrclimited_tendons(m):
    return [t for t in range(m.ntendon) if m.tendon_actfrclimited[t]]


def _forcelimited(m):
    return [u for u in range(m.nu) if m.actuator_forcelimited[u]]


def _actlimited(m):
    return [u for u in range(m.nu) if m.actuator_actlimited[u]]


def _slidercrank(m):
    return [u for u in range(m.nu) if m.actuator_trntype[u] == 2]


def _tendons_with_armature(m):
    return [t for t in range(m.ntendon) if m.tendon_armature[t] > 0]


def _cutoff_sensors(m):
    return [s for s in range(m.nsensor) if m.sensor_cutoff[s] > 0]


def _moving_bodies(m):
    return list(range(1, m.nbody))


def _hinge_slide(m):
    return [j for j in range(m.njnt) if m.jnt_type[j] in (2, 3)]


_EDITS = (
    ("qpos0", "add", _hinge_slide_qpos),
    ("qpos_spring", "add", _hinge_slide_qpos),
    ("body_pos", "add", _moving_bodies),
    ("body_quat", "quat", _moving_bodies),
    ("body_ipos", "add", _moving_bodies),
    ("body_mass", "scale", _moving_bodies),
    ("body_inertia", "scale_row", _moving_bodies),
    ("jnt_pos", "add", _hinge_slide),
    ("jnt_axis", "quat", _hinge_slide),  # (a unit vector: normalised as a quaternion)
    ("jnt_stiffness", "add", None),
    ("jnt_range", "widen", _limited),
    ("jnt_solref", "scale", None),
    ("jnt_solimp", "unit01", None),
    ("jnt_margin", "add", None),
    ("dof_solref", "scale", None),
    ("dof_armature", "add", None),
    ("dof_damping", "add", None),
    ("dof_frictionloss", "add", None),
    ("geom_size", "scale", _primitive_geoms),
    ("geom_pos", "add", None),
    ("geom_quat", "quat", None),
    ("geom_friction", "scale", None),
    ("geom_solref", "scale", None),
    ("geom_solmix", "scale", None),
    ("geom_margin", "add", None),
    ("geom_gap", "add", None),
    ("geom_rgba", "unit01", None),
    ("site_size", "scale", None),
    ("site_pos", "add", None),
    ("site_quat", "quat", None),
    ("site_rgba", "unit01", None),
    ("cam_pos", "add", None),
    ("cam_quat", "quat", None),
    ("cam_fovy", "add", None),
    ("light_pos", "add", None),
    ("light_diffuse", "unit01", None),
    ("mat_rgba", "unit01", None),
    ("mat_specular", "unit01", None),
    ("pair_friction", "scale", None),
    ("pair_margin", "add", None),
    ("eq_solref", "scale", None),
    ("tendon_range", "widen", _limited_tendons),
    ("tendon_stiffness", "add", None),
    ("tendon_damping", "add", None),
    ("tendon_width", "add", None),
    ("actuator_gainprm", "scale", None),
    ("actuator_biasprm", "scale", None),
    ("actuator_dynprm", "scale", None),
    ("actuator_ctrlrange", "widen", _limited_ctrl),
    ("actuator_gear", "scale", None),
    ("sensor_noise", "add", None),
    ("sensor_cutoff", "add", _cutoff_sensors),
    ("key_qpos", "add", None),
    ("key_ctrl", "add", None),
    ("key_time", "add", None),
    ("key_qvel", "add", None),
    ("key_act", "add", None),
    ("key_mpos", "add", None),
    ("key_mquat", "quat", None),
    # fields the corpus models above seldom have
    ("body_user", "add", None),
    ("jnt_user", "add", None),
    ("geom_user", "add", None),
    ("site_user", "add", None),
    ("cam_user", "add", None),
    ("tendon_user", "add", None),
    ("actuator_user", "add", None),
    ("sensor_user", "add", None),
    ("mesh_pos", "add", None),
    ("mesh_quat", "quat", None),
    ("hfield_data", "unit01", None),
    ("cam_ipd", "add", None),
    ("cam_intrinsic", "scale", None),
    ("light_dir", "quat", None),  # (a unit vector)
    ("light_attenuation", "add", None),
    ("light_cutoff", "add", None),
    ("light_exponent", "add", None),
    ("light_ambient", "unit01", None),
    ("light_specular", "unit01", None),
    ("mat_texrepeat", "scale", None),
    ("mat_emission", "unit01", None),
    ("mat_shininess", "unit01", None),
    ("mat_reflectance", "unit01", None),
    ("pair_solref", "scale", None),
    ("pair_solreffriction", "scale", None),
    ("pair_solimp", "unit01", None),
    ("pair_gap", "add", None),
    ("eq_data", "add", None),
    ("eq_solimp", "unit01", None),
    ("tendon_actfrcrange", "widen", _actfrclimited_tendons),
    ("tendon_solref_lim", "scale", None),
    ("tendon_solimp_lim", "unit01", None),
    ("tendon_solref_fri", "scale", None),
    ("tendon_solimp_fri", "unit01", None),
    ("tendon_margin", "add", None),
    ("tendon_armature", "add", _tendons_with_armature),  # (not with geom wrapping)
    ("tendon_frictionloss", "add", None),
    ("tendon_rgba", "unit01", None),
    ("actuator_forcerange", "widen", _forcelimited),
    ("actuator_actrange", "widen", _actlimited),
    ("actuator_cranklength", "add", _slidercrank),
    ("numeric_data", "add", None),
    ("tuple_objprm", "add", None),
)


def _tiphys_put(m):
    params = set(tiphys.PARAM_FIELDS)

    def put(name, value):
        if name in params:
            tiphys.set_param(m, name, value.reshape(tiphys.param_shape(m, name)))
        else:  # (fields set_param does not give: the host copy, as copy_back reads it)
            setattr(m.arrays, name, value.reshape(np.shape(getattr(m.arrays, name))))
    return put


def run_both(path, seed=0, fields=None, opt=None, stat=None):
    """(MjModel of MuJoCo's copy-back XML, MjModel and tiphys arrays of tiphys's)."""
    spec_mj = mujoco.MjSpec.from_file(path)
    mjm = spec_mj.compile()
    spec = tiphys.load_spec(path)
    m = tiphys.compile_model(spec)
    edits = Edits(mjm, seed, fields)
    edits.apply(lambda n: getattr(mjm, n),
                lambda n, v: np.copyto(getattr(mjm, n), v.reshape(getattr(mjm, n).shape)))
    edits.apply(lambda n: np.asarray(getattr(m.arrays, n)), _tiphys_put(m))
    for name, value in (opt or {}).items():
        setattr(mjm.opt, name, value)
        setattr(m.opt, name, value)
    for name, value in (stat or {}).items():
        setattr(mjm.stat, name, value)
        setattr(m.stat, name, value)
    ref_xml = mujoco_copy_back_xml(spec_mj, mjm)
    tiphys.copy_back(spec, m)
    xml = spec.to_xml()
    ref = _compile_next_to(path, ref_xml, "ref", "mujoco")
    ours_mj = _compile_next_to(path, xml, "ours", "mujoco")
    ours = _compile_next_to(path, xml, "ours", "tiphys")
    return ref, ours_mj, ours, edits


def compare(arrays, ref, skip=()) -> list[str]:
    """Every field; those MuJoCo keeps in float32 (colours, lights, materials) to its
    precision (an edit is rounded to float32 once in MuJoCo's model, once when MuJoCo
    reads tiphys's XML)."""
    f32 = tuple(name for name, _, _, _ in MODEL_FIELDS
                if np.asarray(getattr(ref, name)).dtype == np.float32)
    errors = compare_model(arrays, ref, rtol=RTOL, atol=ATOL, skip=tuple(skip) + f32)
    errors += [e for e in compare_model(arrays, ref, rtol=2e-6, atol=1e-7,
                                        skip=tuple(skip) + ("hfield_data",) + tuple(
                                            n for n, _, _, _ in MODEL_FIELDS if n not in f32))
               if not e.startswith(("opt.", "stat."))]
    # MuJoCo writes a height field's elevation with 6 digits whatever the precision
    # set, and compiling scales it to [0, 1] again (dividing by the edited data's
    # range, ~0.15 here): its rounding grows to a few 1e-6. A wrong or missing copy
    # is off by ~0.1.
    err = compare_arrays("hfield_data", arrays.hfield_data, ref.hfield_data, rtol=0,
                         atol=1e-5)
    return errors + ([err] if err and "hfield_data" not in skip else [])


_NSIZE = {0: 3, 1: 3, 2: 1, 3: 2, 4: 3, 5: 2, 6: 3, 7: 0, 8: 0}


def _used_sizes(a):
    """geom/site sizes with the values their type does not use zeroed: MuJoCo's writer
    writes a sphere's one size (a capsule's two), so its copy-back resets the others
    to the default class's whether edited or not (the same model for the engine)."""
    for kind in ("geom", "site"):
        size = np.array(getattr(a, kind + "_size"), dtype=np.float64)
        for i, t in enumerate(np.asarray(getattr(a, kind + "_type"))):
            if _NSIZE.get(int(t), 3):
                size[i, _NSIZE[int(t)]:] = 0
        setattr(a, kind + "_size", size)
    return a


def check_same(path, seed=0, fields=None, skip=(), opt=None, stat=None):
    ref, ours_mj, ours, edits = run_both(path, seed, fields, opt, stat)
    assert edits.ops, "no edits drawn"
    ref_a = _used_sizes(model_arrays_from_mujoco(ref))
    for kind in ("geom", "site"):
        np.copyto(getattr(ref, kind + "_size"), getattr(ref_a, kind + "_size"))
    errors = compare(_used_sizes(ours.arrays), ref, skip)
    errors += [f"(MuJoCo compiling tiphys's XML) {e}" for e in
               compare(_used_sizes(model_arrays_from_mujoco(ours_mj)), ref, skip)]
    assert not errors, "\n".join(errors[:20])
    return edits


# -- corpus models --------------------------------------------------------------------
CORPUS = (
    "gym/humanoid.xml",  # degree angles, <size nkey> padding keys, fromto capsules
    "gym/ant.xml",  # degree angles, motors
    "dmc/walker.xml",  # defaults, fromto
    "dmc/quadruped.xml",  # fromto given by default classes, tendons, sensors
    "dmc/finger.xml",  # <frame>, position actuators, sensors
    "dmc/fish.xml",  # position actuators, ellipsoids, tendons
    "dmc/swimmer.xml",  # <frame> with childclass
    "dmc/stacker.xml",  # sites whose default classes give euler (written as axisangle)
    "mjwarp/aloha_pot/scene.xml",  # Menagerie's ALOHA: meshes, position actuators, keys
    "robosuite/robots/ur5e/robot.xml",  # meshes
    "gymrobotics/hand/manipulate_block.xml",  # tendons, position actuators, meshes
)


def _corpus(rel):
    path = os.path.join(corpus_dir(), rel)
    if not os.path.exists(path):
        pytest.skip(f"corpus model {rel} not present")  # (the corpus is fetched by make)
    return path


@pytest.mark.parametrize("rel", CORPUS)
@pytest.mark.parametrize("seed", (0, 1))
def test_copy_back_matches_mujoco_on_corpus(rel, seed):
    edits = check_same(_corpus(rel), seed)
    assert len(edits.ops) > 20


# -- snippets ---------------------------------------------------------------------------
SNIPPET = """
<mujoco>
  <compiler angle="degree" eulerseq="zyx"/>
  <option timestep="0.004"/>
  <default>
    <geom friction=".7 .1 .1" rgba=".2 .3 .4 1"/>
    <default class="limb"><joint damping="3" range="-30 40"/><geom type="capsule" size=".05"/>
      <default class="springy"><joint springdamper=".3 .5"/></default>
    </default>
  </default>
  <asset><material name="mat" rgba=".5 .5 .5 1" specular=".3"/></asset>
  <worldbody>
    <light name="l" pos="0 0 3" dir="0 0 -1"/>
    <camera name="c" pos="1 1 1" xyaxes="0 -1 0 .5 0 1"/>
    <frame pos="0 0 1" euler="10 20 30" childclass="limb">
      <body name="a" pos=".1 0 0" axisangle="0 1 0 15">
        <freejoint name="free"/>
        <geom name="ga" fromto="0 0 0 .3 0 0"/>
        <frame pos="0 .1 0" zaxis="0 1 1">
          <site name="s" pos=".1 0 0" size=".02"/>
          <body name="b" pos="0 0 .1">
            <joint name="hinge"/>
            <joint name="slide" type="slide" axis="1 0 0" range="-.1 .2"
                   springdamper=".5 1"/>
            <geom name="gb" size=".05 .1 .02" euler="0 90 0" type="box" material="mat"/>
            <body name="c" pos="0 0 .3">
              <inertial pos="0 0 .1" mass="2" fullinertia=".3 .2 .1 0 0 0"/>
              <joint name="ball" type="ball" range="0 60" class="springy"/>
              <geom name="gc" type="ellipsoid" size=".1 .05 .04"/>
            </body>
          </body>
        </frame>
      </body>
    </frame>
    <body name="mocap" mocap="true" pos="1 0 0"><geom size=".1" contype="0"/></body>
  </worldbody>
  <tendon><fixed name="t" range="-1 1"><joint joint="hinge" coef="1"/></fixed></tendon>
  <equality><joint joint1="hinge" joint2="slide" polycoef="0 1 0 0 0"/>
    <connect body1="c" body2="mocap" anchor="0 0 0"/></equality>
  <actuator>
    <position name="p" joint="hinge" kp="10" kv="1" ctrlrange="-1 1"/>
    <velocity name="v" joint="slide" kv="3"/>
    <intvelocity name="iv" joint="hinge" kp="5" actrange="-1 1"/>
    <motor name="m" tendon="t" gear="2"/>
  </actuator>
  <sensor><jointpos joint="hinge" noise=".1"/><touch site="s"/></sensor>
  <keyframe><key name="k" qpos="0 0 1 1 0 0 0 .1 .05 1 0 0 0" ctrl="0 0 0 1"/></keyframe>
</mujoco>
"""


@pytest.fixture
def snippet(tmp_path):
    path = tmp_path / "snippet.xml"
    path.write_text(SNIPPET)
    return str(path)


@pytest.mark.parametrize("seed", range(4))
def test_copy_back_snippet_every_form(snippet, seed):
    """Degrees and eulerseq, every orientation form, nested frames with childclass,
    fromto from the element, a freejoint, fullinertia, defaults, actuator shortcuts
    turned into <general>, equality data, keys, options and flags, statistics."""
    check_same(snippet, seed, opt={"timestep": 0.003, "gravity": np.array([0, 0, -5.0]),
                                   "integrator": 3, "solver": 1, "o_margin": 0.01,
                                   "disableflags": 1 << 9 | 1 << 5, "enableflags": 1 << 1,
                                   "iterations": 7},
               stat={"meaninertia": 2.5, "extent": 7.0, "center": np.array([1.0, 2, 3])})


SNIPPET_ASSETS = """
<mujoco model="assets">
  <compiler angle="radian" inertiafromgeom="true"/>
  <size nuser_body="1" nuser_jnt="2" nuser_geom="1" nuser_site="1" nuser_cam="1"
        nuser_tendon="1" nuser_actuator="1" nuser_sensor="1" nkey="2"/>
  <option><flag warmstart="disable"/></option>
  <statistic meansize="0.2"/>
  <custom>
    <numeric name="n" data="1 2 3"/>
    <tuple name="tu"><element objtype="body" objname="a" prm="0.5"/></tuple>
  </custom>
  <asset>
    <mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1" scale=".2 .2 .2"/>
    <hfield name="hf" nrow="3" ncol="4" size="1 1 .2 .1"
            elevation="0 1 2 3 4 5 6 7 8 9 10 11"/>
    <texture name="tex" type="2d" builtin="checker" width="8" height="8"/>
    <material name="m1" texture="tex" texrepeat="2 2" emission=".1" shininess=".3"/>
  </asset>
  <worldbody>
    <geom type="hfield" hfield="hf" pos="0 0 -1"/>
    <light name="lf" pos="0 0 3" dir="0 0 -1" cutoff="30" attenuation="1 0 0"/>
    <frame pos="0 0 1" quat="0.9 0 0.3 0.1">
      <light name="lin" pos="0 1 0" dir="0 1 -1"/>
      <camera name="cam" pos="0 -1 0" euler="1 0 0" sensorsize="1 1" focal=".5 .5"
              resolution="64 48"/>
    </frame>
    <body name="a" pos="0 0 1" user="3">
      <inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>
      <joint name="j1" axis="0 1 0" springref=".2" stiffness="2" user="1 2"/>
      <geom name="mg" type="mesh" mesh="tet" pos=".1 0 0" euler="0 0 .3" user="7"/>
      <geom name="box" type="box" size=".1 .1 .1" material="m1"/>
      <site name="s1" pos=".2 0 0" user="4"/>
      <site name="s2" type="capsule" fromto="-.2 0 0 -.2 0 .3" size=".02"/>
      <body name="b" pos="0 0 .5">
        <joint name="j2" type="slide" axis="0 0 1" range="-.5 .5"/>
        <geom name="cyl" type="cylinder" size=".05 .1"/>
        <site name="s3" pos="0 .1 0"/>
        <camera name="c2" mode="trackcom" pos="1 0 0" zaxis="1 0 0"/>
      </body>
    </body>
    <body name="w" pos="1 0 1"><joint name="j3" type="ball"/><geom name="ws" size=".1"/>
      <site name="s4"/></body>
    <body name="mc" mocap="true" pos="0 2 0">
      <geom size=".05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <contact>
    <pair name="p" geom1="box" geom2="ws" friction=".5 .5 .01 .001 .001" margin=".01"/>
  </contact>
  <equality>
    <weld name="we" body1="w" body2="mc" relpose="0 0 0 1 0 0 0"/>
    <connect name="cs" site1="s3" site2="s4"/>
    <connect name="cb" body1="b" body2="w" anchor="0 0 .1"/>
  </equality>
  <tendon>
    <spatial name="sp" width=".01" rgba="1 0 0 1" range="0 2" user="5"
             actuatorfrcrange="-5 5">
      <site site="s1"/><site site="s3"/>
    </spatial>
  </tendon>
  <actuator>
    <muscle name="mu" tendon="sp" user="6"/>
    <cylinder name="cy" joint="j2" area=".1" ctrlrange="0 1"/>
    <damper name="da" joint="j1" kv="1" ctrlrange="0 1"/>
    <adhesion name="ad" body="b" gain="2" ctrlrange="0 1"/>
    <general name="ge" joint="j1" forcerange="-1 1" dyntype="filter" dynprm=".1"
             actrange="-1 1" gainprm="3"/>
  </actuator>
  <sensor>
    <jointpos name="sj" joint="j1" noise=".1" cutoff="1" user="8"/>
    <tendonpos tendon="sp"/>
  </sensor>
  <keyframe><key name="k0" time=".5" qpos="0 0 1 0 0 0" act="0 0.1 0"/></keyframe>
</mujoco>
"""


@pytest.mark.parametrize("seed", range(4))
def test_copy_back_snippet_assets_and_the_rest(tmp_path, seed):
    """inertiafromgeom="true" with an <inertial> (not written back), user data of every
    kind, a mesh geom and its mesh's offset, a height field's elevation, materials,
    lights and a camera with intrinsics in a <frame>, a site's fromto, a pair, weld and
    connect (bodies and sites), a spatial tendon, muscle/cylinder/damper/adhesion
    shortcuts, numeric and tuple data, a key and one <size nkey> pads."""
    path = tmp_path / "assets.xml"
    path.write_text(SNIPPET_ASSETS)
    check_same(str(path), seed)


def test_copy_back_without_edits_leaves_the_spec_as_it_was(snippet):
    spec = tiphys.load_spec(snippet)
    before = spec.to_xml()
    tiphys.copy_back(spec, tiphys.compile_model(spec))
    assert spec.to_xml() == before


def test_copy_back_writes_in_the_elements_own_terms(snippet):
    spec = tiphys.load_spec(snippet)
    m = tiphys.compile_model(spec)
    rng = np.array(m.arrays.jnt_range)
    j = m.names["joint"].index("hinge")
    rng[j] = np.radians([-45.0, 50.0])
    tiphys.set_param(m, "jnt_range", rng)
    damping = np.array(m.arrays.dof_damping)
    damping[int(m.arrays.jnt_dofadr[j])] = 7.0
    tiphys.set_param(m, "dof_damping", damping)
    gain = np.array(m.arrays.actuator_gainprm)
    gain[0, 0] = 20.0
    tiphys.set_param(m, "actuator_gainprm", gain)
    tiphys.copy_back(spec, m)
    hinge = spec.find("joint", "hinge")
    assert [float(x) for x in hinge.get_attr("range").split()] == pytest.approx([-45, 50])
    assert float(hinge.get_attr("damping")) == 7.0
    assert spec.find("position", "p") is None  # (its gains changed: now a <general>)
    general = spec.find("general", "p")
    assert general is not None and general.get_attr("joint") == "hinge"
    assert float(general.get_attr("gainprm").split()[0]) == 20.0
    assert spec.find("velocity", "v") is not None  # (unchanged: left as written)


# -- bad input ----------------------------------------------------------------------
def test_copy_back_refuses_per_world_parameters(snippet):
    spec = tiphys.load_spec(snippet)
    m = tiphys.compile_model(spec)
    mass = np.repeat(np.asarray(m.arrays.body_mass)[None], 3, axis=0)
    tiphys.set_param(m, "body_mass", mass)
    with pytest.raises(ValueError, match=r"copy_back: body_mass \(3 worlds\) given per world"):
        tiphys.copy_back(spec, m)


def test_copy_back_refuses_a_spec_of_another_model(snippet, tmp_path):
    spec = tiphys.load_spec(snippet)
    m = tiphys.compile_model(spec)
    spec.find("body", "c").add("geom", type="sphere", size="0.1")
    with pytest.raises(ValueError, match="copy_back: the spec does not compile to a model "
                                         "of the same sizes.*ngeom"):
        tiphys.copy_back(spec, m)
    other = tiphys.parse_xml(SNIPPET.replace('name="gb"', 'name="gx"'))
    with pytest.raises(ValueError, match="copy_back: the spec's geom names differ"):
        tiphys.copy_back(other, tiphys.compile_model(tiphys.load_spec(snippet)))


def test_copy_back_refuses_wrong_types(snippet):
    spec = tiphys.load_spec(snippet)
    with pytest.raises(TypeError, match="copy_back: expected a tiphys.Model"):
        tiphys.copy_back(spec, spec)
    with pytest.raises(TypeError, match="copy_back: expected a tiphys.Spec"):
        tiphys.copy_back(SNIPPET, tiphys.compile_model(spec))


def test_copy_back_refuses_a_device_array_written_alone(snippet):
    spec = tiphys.load_spec(snippet)
    m = tiphys.compile_model(spec)
    values = m.body_mass.to_numpy()
    values[..., 1] += 1.0
    m.body_mass.from_numpy(values)
    with pytest.raises(ValueError, match="copy_back: the device array body_mass differs"):
        tiphys.copy_back(spec, m)


REPLICATED = """
<mujoco>
  <worldbody>
    <replicate count="3" offset=".5 0 0">
      <body name="r" pos="0 0 1"><joint/><geom name="g" size=".1"/></body>
    </replicate>
    <body name="plain"><geom name="p" size=".1"/></body>
  </worldbody>
</mujoco>
"""


def test_copy_back_refuses_changed_replicated_elements():
    spec = tiphys.parse_xml(REPLICATED)
    m = tiphys.compile_model(spec)
    friction = np.array(m.arrays.geom_friction)
    last = m.names["geom"].index("p")
    friction[last, 0] = 0.5  # an element of its own: written
    tiphys.set_param(m, "geom_friction", friction)
    tiphys.copy_back(spec, m)
    assert spec.find("geom", "p").get_attr("friction") == "0.5 0.005 0.0001"
    friction[1, 0] = 0.3  # a copy made by <replicate>: refused
    tiphys.set_param(m, "geom_friction", friction)
    with pytest.raises(NotImplementedError, match=r"copy_back: geom 1 'g1'.*<replicate>"):
        tiphys.copy_back(spec, m)


def test_copy_back_refuses_a_plugin_or_mesh_fitted_change(tmp_path):
    xml = """<mujoco><asset><mesh name="box" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
      <worldbody><body><joint/><geom name="fit" type="box" mesh="box"/></body></worldbody>
    </mujoco>"""
    spec = tiphys.parse_xml(xml)
    m = tiphys.compile_model(spec)
    size = np.array(m.arrays.geom_size)
    size[0] *= 2
    tiphys.set_param(m, "geom_size", size)
    with pytest.raises(NotImplementedError, match="copy_back: geom 'fit'.*fitted to mesh"):
        tiphys.copy_back(spec, m)


def test_copy_back_refuses_poses_fusestatic_or_alignfree_moved():
    xml = """<mujoco><compiler fusestatic="{fuse}" alignfree="{align}"/><worldbody>
      <body name="a"><freejoint/><geom name="ga" size=".1" pos=".1 0 0"/>
        <body name="fixed" pos="0 0 .3"><geom name="gf" size=".1"/></body>
      </body>
      <body name="free" pos="1 0 0"><freejoint/><geom name="gl" size=".1" pos=".2 0 0"/>
      </body></worldbody></mujoco>"""

    def edit(spec, field, geom, value):
        m = tiphys.compile_model(spec)
        values = np.array(getattr(m.arrays, field))
        values[m.names["geom"].index(geom)] = value
        tiphys.set_param(m, field, values)
        tiphys.copy_back(spec, m)

    spec = tiphys.parse_xml(xml.format(fuse="true", align="false"))
    edit(spec, "geom_friction", "gf", (0.5, 0.01, 0.001))  # (not a pose: written)
    assert spec.find("geom", "gf").get_attr("friction") == "0.5 0.01 0.001"
    with pytest.raises(NotImplementedError, match="copy_back: geom 1.*fusestatic moved it"):
        edit(spec, "geom_pos", "gf", (0.0, 0.1, 0.3))
    spec = tiphys.parse_xml(xml.format(fuse="false", align="true"))
    with pytest.raises(NotImplementedError, match="copy_back: geom 2.*alignfree"):
        edit(spec, "geom_pos", "gl", (0.0, 0.1, 0.0))


def test_copy_back_refuses_changed_copies_in_a_corpus_model():
    """mjwarp's n_humanoid: humanoids made by <replicate> (with <attach>)."""
    path = _corpus("mjwarp/humanoid/n_humanoid.xml")
    spec = tiphys.load_spec(path)
    m = tiphys.compile_model(spec)
    tiphys.copy_back(spec, m)  # (nothing changed: nothing to write, nothing refused)
    damping = np.array(m.arrays.dof_damping)
    damping[7] += 1.0
    tiphys.set_param(m, "dof_damping", damping)
    with pytest.raises(NotImplementedError,
                       match="copy_back: joint 2 '_abdomen_y-0'.*<replicate>"):
        tiphys.copy_back(spec, m)


def test_copy_back_then_recompile_keeps_the_state(snippet):
    """A <freejoint> or actuator shortcut that copy_back rewrites stays the same spec
    element, so tiphys.recompile carries its state over."""
    spec = tiphys.load_spec(snippet)
    m = tiphys.compile_model(spec)
    d = tiphys.make_data(m, 2)
    qpos = d.numpy("qpos")
    qpos[:, :3] += [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    tiphys.set_state(m, d, qpos, tiphys.State.QPOS)
    ctrl = np.array([[0.5, 0.1, 0.2, 0.3], [0.6, 0.2, 0.3, 0.4]])
    tiphys.set_state(m, d, ctrl, tiphys.State.CTRL)
    damping = np.array(m.arrays.dof_damping)
    damping[:6] = 0.25  # the free joint's dofs
    tiphys.set_param(m, "dof_damping", damping)
    gain = np.array(m.arrays.actuator_gainprm)
    gain[0, 0] = 20.0  # the position actuator's kp
    tiphys.set_param(m, "actuator_gainprm", gain)
    joint = spec.find("freejoint", "free")
    actuator = spec.find("position", "p")
    tiphys.copy_back(spec, m)
    assert joint.tag == "joint" and joint.get_attr("type") == "free"
    assert actuator.tag == "general" and spec.find("general", "p") is actuator
    m2, d2 = tiphys.recompile(spec, m, d)
    np.testing.assert_array_equal(d2.numpy("qpos"), d.numpy("qpos"))
    np.testing.assert_array_equal(d2.numpy("ctrl"), d.numpy("ctrl"))
    np.testing.assert_allclose(np.asarray(m2.arrays.dof_damping)[:6], 0.25)
    assert np.asarray(m2.arrays.actuator_gainprm)[0, 0] == 20.0


def test_copy_back_visual(snippet):
    """mj_copyBack copies the visual options too (tiphys.Model keeps <visual> as
    nested dicts, ``m.vis``)."""
    spec_mj = mujoco.MjSpec.from_file(snippet)
    mjm = spec_mj.compile()
    spec = tiphys.load_spec(snippet)
    m = tiphys.compile_model(spec)
    mjm.vis.map.znear, m.vis["map"]["znear"] = 0.02, 0.02
    mjm.vis.global_.fovy, m.vis["global"]["fovy"] = 60.0, 60.0
    mjm.vis.global_.offwidth, m.vis["global"]["offwidth"] = 800, 800
    mjm.vis.headlight.diffuse, m.vis["headlight"]["diffuse"] = (0.2, 0.3, 0.4), \
        (0.2, 0.3, 0.4)
    ref = _compile_next_to(snippet, mujoco_copy_back_xml(spec_mj, mjm), "ref", "mujoco")
    tiphys.copy_back(spec, m)
    ours = _compile_next_to(snippet, spec.to_xml(), "ours", "mujoco")
    ours_t = _compile_next_to(snippet, spec.to_xml(), "ours", "tiphys")
    for model in (ref, ours):
        assert model.vis.map.znear == pytest.approx(0.02)
        assert model.vis.global_.fovy == 60.0 and model.vis.global_.offwidth == 800
        np.testing.assert_allclose(model.vis.headlight.diffuse, (0.2, 0.3, 0.4), rtol=1e-6)
    assert ours_t.vis["map"]["znear"] == 0.02 and ours_t.vis["global"]["offwidth"] == 800
    assert ours_t.vis["headlight"]["diffuse"] == (0.2, 0.3, 0.4)
