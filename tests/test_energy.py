"""energy_pos and energy_vel against mj_energyPos and mj_energyVel.

Both engines see the same random states (several worlds, each different): tiphys runs
forward on all worlds at once, then energy_pos / energy_vel on energy poisoned with NaN;
MuJoCo runs mj_forward world by world with <flag energy="enable"/> (which calls
mj_energyPos and mj_energyVel). Models: a hand-written one with stiff free, ball,
hinge and slide joints (springref off zero), fixed and spatial tendons with a spring
deadband (lengthspring below, inside and above the length), gravity on or off, springs
on or off; and gym corpus robots. Models come from ``tiphys.put_model`` of MuJoCo's
compiled model, so the stage is compared on identical tables.
"""
import os

import mujoco
import numpy as np
import pytest
import subproc
import spirv
from oracle import corpus_dir
from tiphys.kernels.energy import energy_pos, energy_vel

import tiphys

NWORLD = 3
RTOL = 1e-10

SCENE = """
<mujoco>
  <option gravity="0.3 -0.5 -9.81">
    <flag energy="enable" {flags}/>
  </option>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <site name="anchor" pos="0 0 2"/>
    <body name="free" pos="0 0 1">
      <joint type="free" stiffness="3"/>
      <geom type="box" size=".1 .2 .3" mass="2"/>
      <site name="s1" pos=".1 0 .3"/>
      <body name="ball" pos="0 .1 -.5" quat="0.9 0.1 0.3 0.2">
        <joint type="ball" stiffness="2"/>
        <geom type="capsule" size=".05" fromto="0 0 0 .1 0 -.4"/>
        <body pos=".1 0 -.4">
          <joint name="h1" axis="0 1 0" stiffness="4" springref="20"/>
          <joint name="s1" type="slide" axis="1 0 1" stiffness="5" springref=".1"/>
          <geom size=".1" pos=".05 0 0"/>
          <site name="s2" pos="0 0 -.1"/>
          <body pos="0 0 -.2">
            <joint name="h2" axis="1 0 0" stiffness="1"/>
            <geom type="box" size=".05 .05 .1" euler="10 20 30"/>
          </body>
        </body>
      </body>
    </body>
    <body name="simple" pos="1 0 0">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="z" type="slide" axis="0 0 1" stiffness="2"/>
      <geom type="sphere" size=".1"/>
    </body>
    <body name="unsprung" pos="-1 0 1">
      <freejoint/>
      <geom type="ellipsoid" size=".1 .2 .3"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="above" stiffness="7" springlength="-5 -4">
      <joint joint="h1" coef="1"/><joint joint="x" coef="-.5"/>
    </fixed>
    <fixed name="inside" stiffness="3" springlength="-50 50">
      <joint joint="h2" coef="2"/>
    </fixed>
    <fixed name="below" stiffness="2" springlength="4 5">
      <joint joint="s1" coef="1"/><joint joint="z" coef="1"/>
    </fixed>
    <spatial name="rope" stiffness="11" springlength=".3">
      <site site="anchor"/><site site="s1"/><site site="s2"/>
    </spatial>
  </tendon>
</mujoco>
"""

_MODELS = {}


def _pair(xml):
    if xml not in _MODELS:
        mjm = mujoco.MjModel.from_xml_string(xml)
        _MODELS[xml] = (tiphys.put_model(mjm), mjm)
    return _MODELS[xml]


def _state(mjm, seed):
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (NWORLD, 1))
    qpos += rng.uniform(-0.5, 0.5, qpos.shape)
    for j in range(mjm.njnt):  # quaternions: normalized, and one left off unit length
        adr = mjm.jnt_qposadr[j]
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            adr += 3
        if mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            q = qpos[:, adr:adr + 4]
            qpos[:, adr:adr + 4] = q / np.linalg.norm(q, axis=1, keepdims=True)
            qpos[0, adr:adr + 4] *= 1.1
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    return qpos, qvel


def _set(arr, values):
    full = np.zeros(arr.to_numpy().shape, dtype=arr.to_numpy().dtype)
    full[tuple(slice(0, n) for n in values.shape)] = values
    arr.from_numpy(full)


def check(m, mjm, seed=1):
    """Largest relative error of (potential, kinetic) over the worlds."""
    qpos, qvel = _state(mjm, seed)
    mjm.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    md = mujoco.MjData(mjm)
    want = np.zeros((NWORLD, 2))
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        md.energy[:] = np.nan
        mujoco.mj_energyPos(mjm, md)
        mujoco.mj_energyVel(mjm, md)
        want[w] = md.energy
    d = tiphys.make_data(m, NWORLD)
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    tiphys.forward(m, d)
    d.energy.from_numpy(np.full((NWORLD, 2), np.nan))
    energy_pos(m, d)
    energy_vel(m, d)
    ours = d.numpy("energy")
    assert np.all(np.isfinite(ours)), ours
    err = np.abs(ours - want) / np.maximum(1.0, np.abs(want))
    assert err.max() <= RTOL, f"energy {ours} vs MuJoCo {want}"
    return err.max(axis=0), want


@pytest.mark.parametrize("flags", ["", 'gravity="disable"', 'spring="disable"',
                                   'gravity="disable" spring="disable"'])
def test_scene_energy_matches_mujoco(flags):
    m, mjm = _pair(SCENE.format(flags=flags))
    err, want = check(m, mjm, seed=len(flags))
    if flags == "":
        # the deadband: tendon lengths below, inside and above their spring ranges
        md = mujoco.MjData(mjm)
        mujoco.mj_forward(mjm, md)
        lo, hi = mjm.tendon_lengthspring[:, 0], mjm.tendon_lengthspring[:, 1]
        assert md.ten_length[0] > hi[0] and lo[1] < md.ten_length[1] < hi[1] and \
            md.ten_length[2] < lo[2], md.ten_length
    if "spring" in flags and "gravity" in flags:
        assert not want[:, 0].any()
    print(flags, err)


def test_each_term_is_nonzero_where_mujoco_says_so():
    """Springs only (gravity off): positive potential, positive kinetic energy."""
    m, mjm = _pair(SCENE.format(flags='gravity="disable"'))
    _, want = check(m, mjm, seed=11)
    assert (want[:, 0] > 0).all() and (want[:, 1] > 0).all()


@pytest.mark.parametrize("rel", ["gym/humanoid.xml", "gym/ant.xml", "gym/hopper.xml",
                                 "gym/half_cheetah.xml", "gym/swimmer.xml"])
def test_corpus_energy_matches_mujoco(rel):
    mjm = mujoco.MjModel.from_xml_path(os.path.join(corpus_dir(), rel))
    m = tiphys.put_model(mjm)
    err, _ = check(m, mjm, seed=len(rel))
    print(rel, err)


@pytest.mark.parametrize("arch", spirv.archs())
def test_energy_in_f32_matches_mujoco(arch):
    """The kernels in f32 (a subprocess: Taichi's precision is per process), after the
    position stages they read (kinematics, tendons, the mass matrix)."""
    code = f"""
import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import numpy as np, mujoco, tiphys
tiphys.init(arch={arch!r}, precision="f32")
from tiphys.kernels.energy import energy_pos, energy_vel
xml = {SCENE.format(flags="")!r}
mjm = mujoco.MjModel.from_xml_string(xml)
m = tiphys.put_model(mjm)
md = mujoco.MjData(mjm)
md.qvel[:] = np.linspace(-1, 1, mjm.nv)
mujoco.mj_forward(mjm, md)
d = tiphys.make_data(m, 1)
d.qvel.from_numpy(md.qvel[None].astype(np.float32))
tiphys.fwd_position(m, d)
energy_pos(m, d); energy_vel(m, d)
e = d.numpy("energy")[0]
print(float(np.max(np.abs(e - md.energy) / np.maximum(1, np.abs(md.energy)))))
"""
    res = subproc.run(["-c", code], key=f"{arch}-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    assert float(res.stdout.strip().splitlines()[-1]) < 1e-5
