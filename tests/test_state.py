"""State API (state_size, get_state, set_state, extract_state, copy_state,
set_keyframe, reset_data with a keyframe per world) against mj_stateSize, mj_getState,
mj_setState, mj_extractState, mj_copyState, mj_setKeyframe and mj_resetDataKeyframe,
on several worlds holding different random values in every state element."""
import mujoco
import numpy as np
import pytest

import tiphys
from tiphys import State

NWORLD = 4
# every state element non-empty: activations, controls, an equality, a mocap body,
# userdata, and keyframes to write and reset to
XML = """<mujoco>
  <size nuserdata="3"/>
  <worldbody>
    <body name="mocap" mocap="true" pos="1 1 1"><geom type="box" size=".05 .05 .05"/></body>
    <body name="torso" pos="0 0 .3">
      <freejoint/>
      <geom type="box" size=".2 .1 .05"/>
      <body name="arm" pos=".2 0 0">
        <joint name="ball" type="ball"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/>
        <body name="tip" pos=".2 0 0">
          <joint name="slide" type="slide" axis="1 0 0"/>
          <geom type="sphere" size=".03"/>
        </body>
      </body>
    </body>
    <body name="pend" pos="1 0 1">
      <joint name="h2" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>
    </body>
  </worldbody>
  <equality><connect body1="pend" body2="world" anchor="1 0 1"/>
    <weld body1="tip" body2="pend" active="false"/></equality>
  <actuator>
    <general joint="slide" dyntype="filter" dynprm=".1" gainprm="10"/>
    <general joint="h2" dyntype="integrator"/>
    <motor joint="h2"/>
  </actuator>
  <keyframe>
    <key name="k0" time="1.5" qpos="0 0 .4 1 0 0 0  0.9 0.1 0.3 0.3  .2  .1"
         qvel="1 0 0 0 .1 0  .2 .1 0  .3 .4" act=".5 .25" ctrl=".1 .2 .3" mpos="1 1 2"
         mquat="0 1 0 0"/>
    <key name="k1"/>
  </keyframe>
</mujoco>"""

# (Data array, MjData attribute) of each state element, in mjtState bit order
ELEMENTS = (("time", "time"), ("qpos", "qpos"), ("qvel", "qvel"), ("act", "act"),
            ("qacc_warmstart", "qacc_warmstart"), ("ctrl", "ctrl"),
            ("qfrc_applied", "qfrc_applied"), ("xfrc_applied", "xfrc_applied"),
            ("eq_active", "eq_active"), ("mocap_pos", "mocap_pos"),
            ("mocap_quat", "mocap_quat"), ("userdata", "userdata"))
SINGLE = [1 << i for i in range(13)]
COMPOSITE = [int(getattr(mujoco.mjtState, "mjSTATE_" + n))
             for n in ("PHYSICS", "FULLPHYSICS", "USER", "INTEGRATION")]


def _random_mask(rng) -> int:
    return int(rng.integers(1, 1 << 13))


@pytest.fixture(scope="module")
def models():
    return tiphys.load_model_from_string(XML), mujoco.MjModel.from_xml_string(XML)


def _random_state(m, mjm, rng, nworld=NWORLD):
    """Data and one MjData per world with the same random value in every element."""
    d = tiphys.make_data(m, nworld)
    values = {
        "time": rng.uniform(0, 10, nworld),
        "qpos": rng.normal(size=(nworld, mjm.nq)),
        "qvel": rng.normal(size=(nworld, mjm.nv)),
        "act": rng.normal(size=(nworld, mjm.na)),
        "qacc_warmstart": rng.normal(size=(nworld, mjm.nv)),
        "ctrl": rng.normal(size=(nworld, mjm.nu)),
        "qfrc_applied": rng.normal(size=(nworld, mjm.nv)),
        "xfrc_applied": rng.normal(size=(nworld, mjm.nbody, 6)),
        "eq_active": rng.integers(0, 2, (nworld, mjm.neq)),
        "mocap_pos": rng.normal(size=(nworld, mjm.nmocap, 3)),
        "mocap_quat": rng.normal(size=(nworld, mjm.nmocap, 4)),
        "userdata": rng.normal(size=(nworld, mjm.nuserdata)),
    }
    for name, value in values.items():
        full = getattr(d, name).to_numpy()
        full[tuple(slice(0, n) for n in value.shape)] = value
        getattr(d, name).from_numpy(full)
    mds = []
    for w in range(nworld):
        md = mujoco.MjData(mjm)
        for name, attr in ELEMENTS:
            if name == "time":
                md.time = values["time"][w]
            else:
                getattr(md, attr)[:] = values[name][w]
        mds.append(md)
    return d, mds


def _assert_same_state(d, w, md):
    for name, attr in ELEMENTS:
        ours = d.numpy(name)[w]
        np.testing.assert_array_equal(np.reshape(ours, -1), np.reshape(getattr(md, attr), -1),
                                      err_msg=f"{name} world {w}")


def _mj_get(mjm, md, spec):
    out = np.zeros(mujoco.mj_stateSize(mjm, spec))
    mujoco.mj_getState(mjm, md, out, spec)
    return out


def test_state_size_matches_mj_state_size(models):
    m, mjm = models
    rng = np.random.default_rng(1)
    for spec in SINGLE + COMPOSITE + [_random_mask(rng) for _ in range(20)]:
        assert tiphys.state_size(m, spec) == mujoco.mj_stateSize(mjm, spec), spec
    assert tiphys.state_size(m, mujoco.mjtState.mjSTATE_INTEGRATION) == \
        mujoco.mj_stateSize(mjm, mujoco.mjtState.mjSTATE_INTEGRATION)
    for name in ("PHYSICS", "FULLPHYSICS", "USER", "INTEGRATION"):
        assert int(getattr(State, name)) == int(getattr(mujoco.mjtState, "mjSTATE_" + name))


def test_get_state_matches_mj_get_state_per_world_and_for_all(models):
    m, mjm = models
    rng = np.random.default_rng(2)
    d, mds = _random_state(m, mjm, rng)
    for spec in SINGLE + COMPOSITE + [_random_mask(rng) for _ in range(6)]:
        every = tiphys.get_state(m, d, spec)
        assert every.shape == (NWORLD, mujoco.mj_stateSize(mjm, spec))
        for w, md in enumerate(mds):
            want = _mj_get(mjm, md, spec)
            np.testing.assert_array_equal(every[w], want, err_msg=f"spec {spec} world {w}")
        w = int(rng.integers(NWORLD))
        np.testing.assert_array_equal(tiphys.get_state(m, d, spec, world=w),
                                      _mj_get(mjm, mds[w], spec))


def test_set_state_matches_mj_set_state(models):
    m, mjm = models
    rng = np.random.default_rng(3)
    spec = int(State.INTEGRATION)
    size = tiphys.state_size(m, spec)
    d, mds = _random_state(m, mjm, rng)
    # one row per world
    rows = rng.normal(size=(NWORLD, size))
    eq = size - mjm.nuserdata - 7 * mjm.nmocap - mjm.neq  # eq_active entries: 0 or 1
    rows[:, eq:eq + mjm.neq] = rng.integers(0, 2, (NWORLD, mjm.neq))
    tiphys.set_state(m, d, rows, spec)
    for w, md in enumerate(mds):
        mujoco.mj_setState(mjm, md, rows[w], spec)
        _assert_same_state(d, w, md)
    # one world only: the others keep their state
    spec = int(State.QPOS | State.CTRL | State.MOCAP_QUAT | State.TIME)
    row = rng.normal(size=tiphys.state_size(m, spec))
    tiphys.set_state(m, d, row, spec, world=2)
    mujoco.mj_setState(mjm, mds[2], row, spec)
    for w, md in enumerate(mds):
        _assert_same_state(d, w, md)
    # one vector for every world
    spec = int(State.QVEL | State.XFRC_APPLIED | State.USERDATA)
    row = rng.normal(size=tiphys.state_size(m, spec))
    tiphys.set_state(m, d, row, spec)
    for w, md in enumerate(mds):
        mujoco.mj_setState(mjm, md, row, spec)
        _assert_same_state(d, w, md)


def test_extract_state_matches_mj_extract_state(models):
    m, mjm = models
    rng = np.random.default_rng(4)
    d, mds = _random_state(m, mjm, rng)
    for _ in range(12):
        src = _random_mask(rng)
        dst = src & _random_mask(rng)
        full = tiphys.get_state(m, d, src)
        ours = tiphys.extract_state(m, full, src, dst)
        assert ours.shape == (NWORLD, mujoco.mj_stateSize(mjm, dst))
        for w in range(NWORLD):
            want = np.zeros(mujoco.mj_stateSize(mjm, dst))
            mujoco.mj_extractState(mjm, full[w], src, want, dst)
            np.testing.assert_array_equal(ours[w], want)
            np.testing.assert_array_equal(tiphys.extract_state(m, full[w], src, dst), want)


def test_copy_state_matches_mj_copy_state(models):
    m, mjm = models
    rng = np.random.default_rng(5)
    src, src_mds = _random_state(m, mjm, rng)
    dst, dst_mds = _random_state(m, mjm, rng)
    spec = int(State.PHYSICS | State.EQ_ACTIVE | State.MOCAP_POS | State.XFRC_APPLIED)
    tiphys.copy_state(m, src, dst, spec)  # every world to the same world
    for w in range(NWORLD):
        mujoco.mj_copyState(mjm, src_mds[w], dst_mds[w], spec)
        _assert_same_state(dst, w, dst_mds[w])
    spec = int(State.INTEGRATION)
    tiphys.copy_state(m, src, dst, spec, src_world=3, dst_world=1)  # one to one
    mujoco.mj_copyState(mjm, src_mds[3], dst_mds[1], spec)
    for w in range(NWORLD):
        _assert_same_state(dst, w, dst_mds[w])
    spec = int(State.TIME | State.QVEL | State.MOCAP_QUAT | State.USERDATA)
    tiphys.copy_state(m, dst, dst, spec, src_world=0)  # world 0 to every world
    for w in range(NWORLD):
        mujoco.mj_copyState(mjm, dst_mds[0], dst_mds[w], spec)
        _assert_same_state(dst, w, dst_mds[w])
    one, one_mds = _random_state(m, mjm, rng, nworld=1)
    tiphys.copy_state(m, one, dst, State.FULLPHYSICS, dst_world=2)  # one-world src
    mujoco.mj_copyState(mjm, one_mds[0], dst_mds[2], State.FULLPHYSICS)
    for w in range(NWORLD):
        _assert_same_state(dst, w, dst_mds[w])


def test_set_keyframe_and_reset_to_it_per_world_match_mujoco():
    m = tiphys.load_model_from_string(XML)  # set_keyframe writes the model: own copy
    mjm = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(6)
    d, mds = _random_state(m, mjm, rng)
    tiphys.set_keyframe(m, d, 1, world=2)
    tiphys.set_keyframe(m, d, "k0", world=3)
    mujoco.mj_setKeyframe(mjm, mds[2], 1)
    mujoco.mj_setKeyframe(mjm, mds[3], 0)
    for name in ("key_time", "key_qpos", "key_qvel", "key_act", "key_mpos", "key_mquat",
                 "key_ctrl"):
        want = np.asarray(getattr(mjm, name))
        np.testing.assert_array_equal(np.reshape(getattr(m.arrays, name), want.shape), want,
                                      err_msg=name)
        dev = getattr(m, name).to_numpy()
        np.testing.assert_array_equal(dev.reshape(mjm.nkey, -1)[:, :want[0].size],
                                      want.reshape(mjm.nkey, -1), err_msg=name)
    # reset one world to each keyframe; the others keep their state
    for world, key in ((0, 1), (1, 0)):
        tiphys.reset_data(m, d, keyframe=key, world=world)
        mujoco.mj_resetDataKeyframe(mjm, mds[world], key)
    for w, md in enumerate(mds):
        _assert_same_state(d, w, md)
    # and every world to a keyframe, by name
    tiphys.reset_data(m, d, keyframe="k0")
    for md in mds:
        mujoco.mj_resetDataKeyframe(mjm, md, 0)
    for w, md in enumerate(mds):
        _assert_same_state(d, w, md)


def test_state_api_rejects_bad_input(models):
    m, mjm = models
    d = tiphys.make_data(m, 2)
    other = tiphys.make_data(m, 3)
    with pytest.raises(ValueError, match="spec"):
        tiphys.get_state(m, d, 1 << 13)
    with pytest.raises(ValueError, match="spec"):
        tiphys.state_size(m, -1)
    with pytest.raises(ValueError, match="spec"):
        tiphys.set_state(m, d, np.zeros(1), "qpos")
    with pytest.raises(ValueError, match="state must have shape"):
        tiphys.set_state(m, d, np.zeros((2, m.nq + 1)), State.QPOS)
    with pytest.raises(ValueError, match="state must have shape"):
        tiphys.set_state(m, d, np.zeros((2, m.nq)), State.QPOS, world=0)
    with pytest.raises(IndexError, match="world"):
        tiphys.get_state(m, d, State.QPOS, world=2)
    with pytest.raises(IndexError, match="world"):
        tiphys.set_state(m, d, np.zeros(m.nq), State.QPOS, world=-1)
    with pytest.raises(ValueError, match="not a subset"):
        tiphys.extract_state(m, np.zeros(m.nq), State.QPOS, State.QPOS | State.QVEL)
    with pytest.raises(ValueError, match="src must have"):
        tiphys.extract_state(m, np.zeros(m.nq + 1), State.QPOS, State.QPOS)
    with pytest.raises(ValueError, match="worlds"):
        tiphys.copy_state(m, d, other, State.QPOS)
    with pytest.raises(IndexError, match="dst"):
        tiphys.copy_state(m, d, other, State.QPOS, src_world=0, dst_world=3)
    with pytest.raises(IndexError, match="keyframe"):
        tiphys.set_keyframe(m, d, mjm.nkey)
    with pytest.raises(ValueError, match="keyframe"):
        tiphys.set_keyframe(m, d, "nope")
    with pytest.raises(IndexError, match="world"):
        tiphys.set_keyframe(m, d, 0, world=5)
    with pytest.raises(IndexError, match="world"):
        tiphys.reset_data(m, d, keyframe=0, world=2)
