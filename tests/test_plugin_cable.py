"""mujoco.elasticity.cable (tiphys/plugin/cable.py, kernels/plugin_cable.py) against
MuJoCo 3.4.0 with its bundled libelasticity: qfrc_passive after forward on random
states in several worlds (outputs poisoned with NaN), the disable flags that skip it,
200-step trajectories, and the plugin's fixed reference (qpos0, flat). f64 on the CPU;
one f32 run in a subprocess.

(No model of the corpus uses <composite> or this plugin: the models are written here,
MuJoCo's own model/plugin/elasticity/cable.xml among them, in tests/test_composite.py.)
"""
import json

import mujoco
import numpy as np
import pytest

import spirv
import subproc
import tiphys
from test_composite import CABLE_PLUGIN, EXT, MODELS as COMPOSITES

NWORLD = 3
TOL = 1e-12

MODELS = {
    "mujoco_cable_xml": COMPOSITES["mujoco_cable_xml"],
    "mujoco_coil_xml": COMPOSITES["mujoco_coil_xml"],
    "curved_free": COMPOSITES["curved_free"],
    "vertex_frame_instance": COMPOSITES["vertex_frame_instance"],
    "pid_then_cable": COMPOSITES["pid_then_cable"],
    "vertical_childclass": COMPOSITES["vertical_childclass"],
    # two cables sharing one instance is refused by MuJoCo's plugin only when their
    # bodies are not consecutive: here one composite, a ball root under a moving body
    "hanging": f"""<mujoco>{EXT}
  <option gravity="0 0 -9.81" timestep="0.002"/>
  <worldbody>
    <body name="hook" pos="0 0 1">
      <joint type="slide" axis="0 0 1" damping=".5"/>
      <geom size=".03" mass=".2"/>
      <composite type="cable" curve="s sin(s) 0" count="12" size=".8 .1 2" initial="ball"
                 quat=".7 0 .7 0">
        {CABLE_PLUGIN.replace('1e7', '2e6')}
        <joint kind="main" damping=".002"/>
        <geom type="capsule" size=".01" density="1200"/>
      </composite>
    </body>
  </worldbody>
</mujoco>""",
}


# two composites on one <extension> instance: MuJoCo's plugin takes its consecutive
# bodies as one chain (the second cable's first body bends against the first's last)
MODELS["shared_instance"] = """<mujoco>
  <extension><plugin plugin="mujoco.elasticity.cable">
    <instance name="c"><config key="twist" value="2e6"/><config key="bend" value="1e6"/>
    </instance></plugin></extension>
  <worldbody>
    <composite prefix="a" type="cable" curve="s" count="5" size=".5" offset="0 0 1">
      <plugin plugin="mujoco.elasticity.cable" instance="c"/>
      <geom type="capsule" size=".01"/></composite>
    <composite prefix="b" type="cable" curve="s sin(s)" count="5" size=".5 .1 1"
               offset="0 .3 1" initial="free">
      <plugin plugin="mujoco.elasticity.cable" instance="c"/>
      <geom type="capsule" size=".01"/></composite>
  </worldbody>
</mujoco>"""


# a chain written by hand, each body naming the instance with its own <plugin>
MODELS["hand_written"] = """<mujoco>
  <extension><plugin plugin="mujoco.elasticity.cable">
    <instance name="c"><config key="twist" value="1e6"/><config key="bend" value="4e5"/>
    </instance></plugin></extension>
  <option gravity="0 0 -9.81" timestep="0.002"/>
  <worldbody>
    <body name="b0" pos="0 0 1"><joint type="ball" damping=".001"/>
      <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/><plugin instance="c"/>
      <body name="b1" pos=".1 0 0" euler="0 15 0"><joint type="ball" damping=".001"/>
        <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/><plugin instance="c"/>
        <body name="b2" pos=".1 0 0" euler="10 0 20"><joint type="ball" damping=".001"/>
          <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/><plugin instance="c"/>
          <body name="b3" pos=".1 0 0"><joint type="ball" damping=".001"/>
            <geom type="capsule" fromto="0 0 0 .1 0 0" size=".01"/>
            <plugin plugin="mujoco.elasticity.cable" instance="c"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def _random_state(mjm, rng, nworld=NWORLD):
    """qpos0 moved: random unit quaternions near the reference for ball and free
    joints, random offsets elsewhere; random velocities."""
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        jtype = mjm.jnt_type[j]
        if jtype in (mujoco.mjtJoint.mjJNT_BALL, mujoco.mjtJoint.mjJNT_FREE):
            q0 = adr + (3 if jtype == mujoco.mjtJoint.mjJNT_FREE else 0)
            if jtype == mujoco.mjtJoint.mjJNT_FREE:
                qpos[:, adr:adr + 3] += rng.uniform(-.2, .2, (nworld, 3))
            q = qpos[:, q0:q0 + 4] + rng.normal(scale=.35, size=(nworld, 4))
            qpos[:, q0:q0 + 4] = q / np.linalg.norm(q, axis=1, keepdims=True)
        else:
            qpos[:, adr] += rng.uniform(-.3, .3, nworld)
    return {"qpos": qpos, "qvel": rng.normal(size=(nworld, mjm.nv))}


def _set(d, state):
    for key, value in state.items():
        arr = getattr(d, key)
        full = np.zeros(arr.shape, dtype=arr.to_numpy().dtype)
        full[tuple(slice(0, n) for n in value.shape)] = value
        arr.from_numpy(full)


def _poison(d, names):
    for name in names:
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape, np.nan, dtype=arr.to_numpy().dtype))


OUTPUTS = ("qfrc_passive", "qacc")


def _check_forward(xml, state, disable=0, tol=TOL):
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m.opt.disableflags = mjm.opt.disableflags = disable
    d = tiphys.make_data(m, NWORLD)
    _set(d, state)
    _poison(d, OUTPUTS)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    worst = 0.0
    for w in range(NWORLD):
        for key, value in state.items():
            getattr(md, key)[:] = value[w]
        mujoco.mj_forward(mjm, md)
        for out in OUTPUTS:
            ours, theirs = d.numpy(out)[w], np.asarray(getattr(md, out))
            assert np.isfinite(ours).all(), out
            scale = max(1.0, float(np.abs(theirs).max()))
            err = float(np.abs(ours - theirs).max()) / scale
            assert err <= (tol if out == "qfrc_passive" else 1e-9), (out, w, err)
            worst = max(worst, err)
    return m, mjm, md


@pytest.mark.parametrize("name", sorted(MODELS))
def test_qfrc_passive_matches_mujoco_on_random_states(name):
    xml = MODELS[name]
    mjm = mujoco.MjModel.from_xml_string(xml)
    _, _, md = _check_forward(xml, _random_state(mjm, np.random.default_rng(len(name))))
    # the cable's torques are there (not only the joints' dampers)
    assert np.abs(md.qfrc_passive - md.qfrc_damper - md.qfrc_spring).max() > 1e-4


@pytest.mark.parametrize("flags", ["spring", "damper", "spring damper", "gravity"])
def test_disable_flags(flags):
    """Both spring and damper disabled: mj_passive stops before the plugins; one of
    them disabled: the plugin still runs."""
    disable = 0
    for f in flags.split():
        disable |= int(getattr(mujoco.mjtDisableBit, "mjDSBL_" + f.upper()))
    xml = MODELS["curved_free"]
    mjm = mujoco.MjModel.from_xml_string(xml)
    state = _random_state(mjm, np.random.default_rng(5))
    _, _, md = _check_forward(xml, state, disable)
    if flags == "spring damper":
        assert not np.any(md.qfrc_passive)
    else:
        assert np.abs(md.qfrc_passive).max() > 1e-4


def test_reference_shape_is_the_compiled_one_at_qpos0():
    """At qpos0 a curved cable is at rest (omega0 from qpos0), and with flat="true"
    the same shape bends back towards a straight line."""
    xml = MODELS["curved_free"]
    mjm = mujoco.MjModel.from_xml_string(xml)
    state = {"qpos": np.tile(mjm.qpos0, (NWORLD, 1)), "qvel": np.zeros((NWORLD, mjm.nv))}
    _, _, md = _check_forward(xml, state)
    assert np.abs(md.qfrc_passive).max() < 1e-12
    flat = xml.replace('<config key="vmax"', '<config key="flat" value="true"/>'
                                             '<config key="vmax"')
    _, _, md = _check_forward(flat, state)
    assert np.abs(md.qfrc_passive).max() > 1e-4


NSTEP = 200


def _trajectories(xml, integrator, nworld=2, nstep=NSTEP):
    """(tiphys, MuJoCo) qpos and qvel after each step, from perturbed starts."""
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    m.opt.integrator = mjm.opt.integrator = integrator
    state = _random_state(mjm, np.random.default_rng(11), nworld)
    state["qvel"] *= 0.1
    d = tiphys.make_data(m, nworld)
    _set(d, state)
    mds = [mujoco.MjData(mjm) for _ in range(nworld)]
    for w, md in enumerate(mds):
        md.qpos[:], md.qvel[:] = state["qpos"][w], state["qvel"][w]
    ours, theirs = [], []
    for t in range(nstep):
        ctrl = 0.03 * np.sin(0.05 * t + np.arange(nworld))[:, None] * np.ones((1, mjm.nu))
        if mjm.nu:
            _set(d, {"ctrl": ctrl})
        tiphys.step(m, d)
        ours.append(np.concatenate([d.numpy("qpos"), d.numpy("qvel")], axis=1))
        for w, md in enumerate(mds):
            md.ctrl[:] = ctrl[w]
            mujoco.mj_step(mjm, md)
        theirs.append(np.array([np.concatenate([md.qpos, md.qvel]) for md in mds]))
    return np.array(ours), np.array(theirs)


@pytest.mark.parametrize("integrator", [mujoco.mjtIntegrator.mjINT_EULER,
                                        mujoco.mjtIntegrator.mjINT_IMPLICIT])
@pytest.mark.parametrize("name", ["mujoco_cable_xml", "mujoco_coil_xml", "hanging", "curved_free",
                                  "hand_written"])
def test_trajectory_matches_mujoco(name, integrator):
    ours, theirs = _trajectories(MODELS[name], int(integrator))
    scale = max(1.0, float(np.abs(theirs).max()))
    err = float(np.abs(ours - theirs).max()) / scale
    assert err <= 1e-9, (name, err)
    assert float(np.abs(theirs[-1] - theirs[0]).max()) > 1e-3  # it moved


def test_trajectory_with_rk4():
    ours, theirs = _trajectories(MODELS["curved_free"], int(mujoco.mjtIntegrator.mjINT_RK4))
    err = float(np.abs(ours - theirs).max()) / max(1.0, float(np.abs(theirs).max()))
    assert err <= 1e-9, err


# -------------------------------------------------------------------------------- f32

F32_SCRIPT = """
import json, sys
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
xml = sys.stdin.read()
m = tiphys.load_model_from_string(xml)
mjm = mujoco.MjModel.from_xml_string(xml)
d = tiphys.make_data(m, 2)
mds = [mujoco.MjData(mjm) for _ in range(2)]
qpos = np.tile(mjm.qpos0, (2, 1))
qpos[1, mjm.jnt_qposadr[3]:mjm.jnt_qposadr[3] + 4] = [.98, .1, .1, .1]
qpos[1, mjm.jnt_qposadr[3]:mjm.jnt_qposadr[3] + 4] /= np.linalg.norm(
    qpos[1, mjm.jnt_qposadr[3]:mjm.jnt_qposadr[3] + 4])
d.qpos.from_numpy(qpos.astype(np.float32))
for w, md in enumerate(mds):
    md.qpos[:] = qpos[w]
worst = 0.0
if sys.argv[-1] == "cpu":  # 50 whole steps
    fields = ("qpos", "qvel")
    for t in range(50):
        tiphys.step(m, d)
        for md in mds:
            mujoco.mj_step(mjm, md)
else:  # on lavapipe only the stages the cable needs (a whole step compiles for minutes)
    fields = ("qfrc_passive",)
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.passive(m, d)
    for md in mds:
        mujoco.mj_forward(mjm, md)
for f in fields:
    theirs = np.array([getattr(md, f) for md in mds])
    worst = max(worst, float(np.abs(d.numpy(f) - theirs).max() / max(1, np.abs(theirs).max())))
print(json.dumps(worst))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs())
def test_cable_runs_in_f32(arch):
    """f32: 50 steps on the CPU; on Vulkan the cable's forces after the position
    stages (kinematics, com_pos, passive), which compile in seconds on lavapipe."""
    res = subproc.run(["-c", F32_SCRIPT, arch], key=f"{arch}-f32", input=MODELS["hanging"])
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert worst < 1e-3, worst


# ---------------------------------------------------------------- a user passive plugin

import taichi as ti  # noqa: E402

from tiphys import plugin as registry  # noqa: E402


@ti.kernel
def _drag(drag_c: ti.types.ndarray(), nv: ti.i32, qvel: ti.types.ndarray(),
          qfrc_passive: ti.types.ndarray()):
    for worldid, dofid in ti.ndrange(qvel.shape[0], nv):
        qfrc_passive[worldid, dofid] -= drag_c[0] * qvel[worldid, dofid]


@registry.register_plugin
class Drag(registry.Plugin):
    """-c qvel on every dof (an <extension> instance: MuJoCo calls every passive
    plugin's compute in mj_passive, whatever it is attached to)."""
    name = "tests.drag"
    capabilities = registry.PASSIVE
    attributes = ("c",)

    def __init__(self, m, instances):
        super().__init__(m, instances)
        self.host_arrays = {"drag_c": np.array([sum(i.value("c") for i in instances)])}

    def passive(self, m, d):
        registry.launch(_drag, m, d, **self.device(d))


def test_user_passive_plugin_adds_to_qfrc_passive_after_the_cable():
    """A user passive plugin's forces land in qfrc_passive with the cable's: the same
    as MuJoCo's with the drag as an mjcb_passive callback (which mj_passive runs just
    before the plugins)."""
    c = 0.07
    xml = MODELS["curved_free"].replace(
        "</extension>", '</extension><extension><plugin plugin="tests.drag">'
                        f'<instance name="drag"><config key="c" value="{c}"/></instance>'
                        '</plugin></extension>')
    m = tiphys.load_model_from_string(xml)
    assert [p.name for p in m.plugins] == ["tests.drag", "mujoco.elasticity.cable"]
    mjm = mujoco.MjModel.from_xml_string(MODELS["curved_free"])
    state = _random_state(mjm, np.random.default_rng(2))
    d = tiphys.make_data(m, NWORLD)
    _set(d, state)
    _poison(d, OUTPUTS)
    tiphys.forward(m, d)
    mujoco.set_mjcb_passive(lambda _m, _d: _d.qfrc_passive.__isub__(c * _d.qvel))
    try:
        md = mujoco.MjData(mjm)
        for w in range(NWORLD):
            md.qpos[:], md.qvel[:] = state["qpos"][w], state["qvel"][w]
            mujoco.mj_forward(mjm, md)
            for out in OUTPUTS:
                theirs = np.asarray(getattr(md, out))
                err = np.abs(d.numpy(out)[w] - theirs).max() / max(1, np.abs(theirs).max())
                assert err < 1e-12, (out, w, err)
    finally:
        mujoco.set_mjcb_passive(None)


def test_passive_plugin_without_its_hook_is_refused():
    class Hookless(registry.Plugin):
        name = "tests.hookless_passive"
        capabilities = registry.PASSIVE
    registry.register_plugin(Hookless)
    xml = """<mujoco><extension><plugin plugin="tests.hookless_passive">
  <instance name="h"/></plugin></extension>
  <worldbody><body><joint/><geom size=".1"/></body></worldbody></mujoco>"""
    with pytest.raises(TypeError, match="a passive plugin needs a passive hook"):
        tiphys.load_model_from_string(xml)


def test_saved_cable_model_steps_as_the_original(tmp_path):
    """The plugin's bodies come back from body_plugin when a saved model is loaded."""
    m = tiphys.load_model_from_string(MODELS["curved_free"])
    path = str(tmp_path / "cable.npz")
    tiphys.save_model(m, path)
    m2 = tiphys.load_model(path)
    assert m2.plugins[0].instances[0].bodies == list(range(1, m.nbody))
    mjm = mujoco.MjModel.from_xml_string(MODELS["curved_free"])
    state = _random_state(mjm, np.random.default_rng(4), 2)
    outs = []
    for model in (m, m2):
        d = tiphys.make_data(model, 2)
        _set(d, state)
        for _ in range(20):
            tiphys.step(model, d)
        outs.append(d.numpy("qpos"))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_transition_fd_matches_mujoco_with_cable():
    """Finite-difference transition Jacobians (every forward inside runs the plugin;
    the differences are round-off of the states over eps = 1e-6)."""
    from tiphys import derivative
    xml = MODELS["curved_free"]
    m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
    state = _random_state(mjm, np.random.default_rng(3), 2)
    d = tiphys.make_data(m, 2)
    _set(d, state)
    out = derivative.transition_fd(m, d, 1e-6, False)
    ndx = 2 * mjm.nv + mjm.na
    for w in range(2):
        md = mujoco.MjData(mjm)
        md.qpos[:], md.qvel[:] = state["qpos"][w], state["qvel"][w]
        A = np.zeros((ndx, ndx))
        mujoco.mjd_transitionFD(mjm, md, 1e-6, False, A, None, None, None)
        assert np.abs(A).max() > 0
        assert np.abs(out.A[w] - A).max() <= 1e-6 * max(1.0, np.abs(A).max())


def test_a_jointless_body_in_the_chain_is_refused():
    """A second cable with initial="none" on the same instance puts a body without a
    joint inside the chain (MuJoCo reads an undefined joint there): an error."""
    xml = MODELS["shared_instance"].replace('initial="free"', 'initial="none"')
    with pytest.raises(tiphys.ModelError, match="cable body 5 has no joint to bend with"):
        tiphys.load_model_from_string(xml)
