"""rne_post_constraint and contact_force against mj_rnePostConstraint and mj_contactForce.

Both engines run forward on the same random states (several worlds, each different):
tiphys on all worlds at once, MuJoCo (mj_forward) world by world, solvers at tolerance
1e-12 (MuJoCo's default flags: islands solved apart). The contacts and constraint rows
must agree in number, order, type and id; then MuJoCo's qacc and efc_force (the
solver's output, equal to ~1e-10 only) are copied into tiphys's Data, so the stage
itself is compared on the same state: outputs poisoned with NaN first, cacc, cfrc_int,
cfrc_ext and every contact's force (contact frame, and world frame against MuJoCo's
frame' force) to RTOL of each field's largest magnitude in that world. The end-to-end
results (tiphys's own solver output) are compared too, to E2E_RTOL.

Models: gym ant, humanoid (pyramidal and elliptic) and hopper touching the floor; a
hand-written scene with condim 1/3/4/6 contacts (floor and body-body), a contact in the
margin gap (left out of the solver), connect and weld equalities (body and site
anchors, world anchors), a joint equality and xfrc_applied on every body but one, in
both cones; a contact-free model (ncon = nefc = 0) with xfrc_applied, with and without
gravity; flex equalities are refused. Run as a script (``python tests/test_rne_post.py
f32``) it checks the scene in f32.
"""
import json
import os
import sys

import mujoco
import numpy as np
import pytest

import subproc
import tiphys
from test_forward import TIGHT, _constrained_state, load_both
from test_smooth import SPRINGS

NWORLD = 3
RTOL = 1e-11
E2E_RTOL = 1e-8
F32_TOL = 1e-5
OUTPUTS = ("cacc", "cfrc_int", "cfrc_ext")

SCENE = """
<mujoco>
  <option cone="{cone}" tolerance="1e-12" iterations="200" gravity=".5 -.3 -9.81"/>
  <default><geom friction=".9 .03 .004"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 .1" condim="1"/>
    <site name="wsite" pos="1 .6 .41"/>
    <body name="box" pos="0 0 .045">
      <freejoint/><geom type="box" size=".1 .08 .05" condim="1"/>
    </body>
    <body name="top" pos="0 0 .13">
      <freejoint/><geom type="sphere" size=".04" condim="3"/>
    </body>
    <body name="capsule" pos=".4 0 .035">
      <freejoint/><geom type="capsule" size=".04 .12" euler="0 90 0" condim="3"/>
    </body>
    <body name="ball4" pos="-.4 0 .055">
      <freejoint/><geom type="sphere" size=".06" condim="4"/>
    </body>
    <body name="ball6" pos="0 .4 .075">
      <freejoint/><geom type="sphere" size=".08" condim="6"/>
    </body>
    <body name="gap" pos="0 -.4 .09">
      <freejoint/><geom type="sphere" size=".06" condim="3" margin=".05" gap=".05"/>
    </body>
    <body name="arm" pos=".6 .6 .4">
      <joint name="j1" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03" contype="0" conaffinity="0"/>
      <body name="arm2" pos=".2 0 0">
        <joint name="j2" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03" contype="0" conaffinity="0"/>
        <site name="tip" pos=".2 0 0"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect site1="tip" site2="wsite"/>
    <weld body1="ball6" body2="arm2" anchor=".01 .02 .03"/>
    <connect body1="box" anchor=".1 0 .05"/>
    <joint joint1="j2" joint2="j1" polycoef=".1 -.5 .2 0 0"/>
    <weld body1="arm" body2="capsule" torquescale=".5"/>
  </equality>
</mujoco>
"""

_CACHE = {}


def _scene(cone):
    xml = SCENE.format(cone=cone)
    if xml not in _CACHE:
        _CACHE[xml] = (tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml))
    return _CACHE[xml]


def _scene_state(mjm, nworld, seed):
    """Near qpos0 (bodies resting on the floor, equalities nearly satisfied): small
    random displacements and rotations, so no constraint force dwarfs the others."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[:, adr:adr + 3] += rng.uniform(-0.005, 0.005, (nworld, 3))
            quat = qpos[:, adr + 3:adr + 7] + rng.normal(scale=0.05, size=(nworld, 4))
            qpos[:, adr + 3:adr + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        else:
            qpos[:, adr] += rng.uniform(-0.05, 0.05, nworld)
    qvel = rng.normal(scale=0.5, size=(nworld, mjm.nv))
    xfrc = rng.normal(size=(nworld, mjm.nbody, 6))
    xfrc[:, 2] = 0.0  # one body without applied force (MuJoCo skips zero wrenches)
    return qpos, qvel, xfrc


def _set(arr, values):
    full = np.zeros(arr.to_numpy().shape, dtype=arr.to_numpy().dtype)
    full[tuple(slice(0, n) for n in values.shape)] = values
    arr.from_numpy(full)


def _poison(d, names):
    for name in names:
        arr = getattr(d, name)
        host = arr.to_numpy()
        arr.from_numpy(np.full(host.shape, np.nan, dtype=host.dtype))


def _mujoco(mjm, qpos, qvel, xfrc):
    """mj_forward + mj_rnePostConstraint + mj_contactForce per world."""
    md = mujoco.MjData(mjm)
    out = []
    for w in range(qpos.shape[0]):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        md.xfrc_applied[:] = xfrc[w]
        mujoco.mj_forward(mjm, md)
        _poison_mj(md)
        mujoco.mj_rnePostConstraint(mjm, md)
        force = np.zeros((md.ncon, 6))
        world = np.zeros((md.ncon, 6))
        for i in range(md.ncon):
            mujoco.mj_contactForce(mjm, md, i, force[i])
            frame = md.contact[i].frame.reshape(3, 3)
            world[i] = np.concatenate([frame.T @ force[i, :3], frame.T @ force[i, 3:]])
        res = {name: np.array(getattr(md, name)) for name in OUTPUTS}
        res.update(ncon=md.ncon, nefc=md.nefc, ne=md.ne, qacc=md.qacc.copy(),
                   efc_force=md.efc_force.copy(), efc_type=md.efc_type.copy(),
                   efc_id=md.efc_id.copy(), force=force, world=world,
                   geom=np.array([c.geom for c in md.contact]).reshape(-1, 2),
                   efc_address=np.array([c.efc_address for c in md.contact], dtype=int))
        out.append(res)
    return out


def _poison_mj(md):
    for name in OUTPUTS:
        getattr(md, name)[:] = np.nan


def _close(name, ours, want, rtol):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    err = float(np.abs(ours - want).max(initial=0.0)) / scale
    assert err <= rtol, f"{name}: relative error {err:.3g}"
    return err


def check_both(m, mjm, qpos, qvel, xfrc=None):
    """Compare rne_post_constraint and contact_force with MuJoCo on these states;
    returns the largest stage and end-to-end errors, the number of contacts per
    (dim, in the solver), of contacts between two moving bodies and of equality
    rows."""
    nworld = qpos.shape[0]
    xfrc = np.zeros((nworld, mjm.nbody, 6)) if xfrc is None else xfrc
    theirs = _mujoco(mjm, qpos, qvel, xfrc)
    d = tiphys.make_data(m, nworld)
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    _set(d.xfrc_applied, xfrc)
    tiphys.forward(m, d)
    ncon, nefc, ne = d.numpy("ncon"), d.numpy("nefc"), d.numpy("ne")
    geom, adr = d.numpy("contact_geom"), d.numpy("contact_efc_address")
    dims = d.numpy("contact_dim")
    efc_type, efc_id = d.numpy("efc_type"), d.numpy("efc_id")
    counts = {}
    between = 0  # contacts in the solver between two moving bodies
    for w, res in enumerate(theirs):
        n, r = res["ncon"], res["nefc"]
        assert (ncon[w], nefc[w], ne[w]) == (n, r, res["ne"]), f"world {w} sizes"
        assert np.array_equal(geom[w, :n], res["geom"]), f"world {w} contact geoms"
        assert np.array_equal(adr[w, :n], res["efc_address"]), f"world {w} efc_address"
        assert np.array_equal(efc_type[w, :r], res["efc_type"]), f"world {w} efc_type"
        assert np.array_equal(efc_id[w, :r], res["efc_id"]), f"world {w} efc_id"
        for k in range(n):
            key = (int(dims[w, k]), bool(adr[w, k] >= 0))
            counts[key] = counts.get(key, 0) + 1
            if adr[w, k] >= 0 and mjm.geom_bodyid[geom[w, k]].all():
                between += 1
    # end to end: tiphys's own solver output
    _poison(d, OUTPUTS)
    tiphys.rne_post_constraint(m, d)
    e2e = 0.0
    for name in OUTPUTS:
        ours = d.numpy(name)
        for w, res in enumerate(theirs):
            e2e = max(e2e, _close(f"end-to-end {name} world {w}", ours[w], res[name],
                                  E2E_RTOL))
    # the stage alone: MuJoCo's qacc and efc_force; stale contacts past ncon
    _set(d.qacc, np.stack([res["qacc"] for res in theirs]))
    force = np.zeros(d.efc_force.to_numpy().shape)
    for w, res in enumerate(theirs):
        force[w, :res["nefc"]] = res["efc_force"]
    d.efc_force.from_numpy(force.astype(d.efc_force.to_numpy().dtype))
    _stale_contacts(d, ncon)
    _poison(d, OUTPUTS)
    tiphys.rne_post_constraint(m, d)
    local = tiphys.contact_force(m, d)
    world = tiphys.contact_force(m, d, world_frame=True)
    assert local.shape == world.shape == (nworld, d.nconmax, 6)
    worst = 0.0
    for name in OUTPUTS:
        ours = d.numpy(name)
        for w, res in enumerate(theirs):
            worst = max(worst, _close(f"{name} world {w}", ours[w], res[name], RTOL))
    for w, res in enumerate(theirs):
        n = res["ncon"]
        worst = max(worst, _close(f"contact_force world {w}", local[w, :n], res["force"],
                                  RTOL))
        worst = max(worst, _close(f"contact_force world frame, world {w}", world[w, :n],
                                  res["world"], RTOL))
        assert not local[w, n:].any() and not world[w, n:].any(), \
            f"world {w}: slots past ncon not zero"
    return dict(stage=worst, e2e=e2e, contacts=counts, between=between, ne=int(ne.sum()))


def _stale_contacts(d, ncon):
    """Slots past ncon made to look like live contacts: they must still be ignored."""
    adr = d.contact_efc_address.to_numpy()
    dim = d.contact_dim.to_numpy()
    for w in range(d.nworld):
        adr[w, ncon[w]:] = 0
        dim[w, ncon[w]:] = 3
    d.contact_efc_address.from_numpy(adr)
    d.contact_dim.from_numpy(dim)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_scene_with_every_condim_equalities_and_xfrc_matches_mujoco(cone):
    m, mjm = _scene(cone)
    qpos, qvel, xfrc = _scene_state(mjm, NWORLD, seed=3)
    res = check_both(m, mjm, qpos, qvel, xfrc)
    # every contact dimension in the solver, a contact left out of it (in the gap) and
    # all five equalities (connect 3 + weld 6 + connect 3 + joint 1 + weld 6 rows)
    counts = res["contacts"]
    assert {1, 3, 4, 6} <= {dim for dim, live in counts if live}, counts
    assert (3, False) in counts and res["between"] >= NWORLD, res
    assert res["ne"] == 19 * NWORLD, res
    print(cone, res)


@pytest.mark.parametrize("rel,cone", [("gym/ant.xml", "pyramidal"),
                                      ("gym/humanoid.xml", "pyramidal"),
                                      ("gym/humanoid.xml", "elliptic"),
                                      ("gym/hopper.xml", "pyramidal")])
def test_corpus_robots_touching_the_floor_match_mujoco(rel, cone):
    m, mjm = load_both(rel, cone=cone, **TIGHT)
    qpos, qvel = _constrained_state(mjm, NWORLD, seed=len(rel))
    res = check_both(m, mjm, qpos, qvel)
    assert sum(n for (_, live), n in res["contacts"].items() if live) >= NWORLD, res
    print(rel, cone, res)


@pytest.mark.parametrize("gravity", ["enable", "disable"])
def test_contact_free_model_matches_mujoco(gravity):
    """ncon = nefc = 0: applied forces only; the world's cacc is -gravity or zero."""
    xml = SPRINGS.replace('timestep="0.005"/>',
                          f'timestep="0.005"><flag gravity="{gravity}"/></option>')
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    rng = np.random.default_rng(7)
    qpos = np.tile(mjm.qpos0, (NWORLD, 1)) + rng.uniform(-1, 1, (NWORLD, mjm.nq))
    qvel = rng.normal(size=(NWORLD, mjm.nv))
    xfrc = rng.normal(size=(NWORLD, mjm.nbody, 6))
    res = check_both(m, mjm, qpos, qvel, xfrc)
    assert not res["contacts"] and res["ne"] == 0, res
    print(gravity, res)


def test_flex_equality_is_not_implemented():
    """The rows of a flex equality are simulated (tests/test_flex_engine.py), but their
    forces on the bodies (MuJoCo's cfrc_ext term) are not: rne_post_constraint refuses
    the model by name rather than leaving them out."""
    xml = """<mujoco><worldbody>
      <flexcomp name="f" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2">
        <contact contype="0" conaffinity="0"/>
        <edge equality="true"/></flexcomp></worldbody></mujoco>"""
    m = tiphys.put_model(mujoco.MjModel.from_xml_string(xml))
    d = tiphys.make_data(m, 1)
    tiphys.forward(m, d)
    with pytest.raises(NotImplementedError, match="flex equality constraints"):
        tiphys.rne_post_constraint(m, d)


# ------------------------------------------------------------------------------------
# f32 (a subprocess: Taichi's precision is per process)
# ------------------------------------------------------------------------------------

def test_f32_matches_mujoco_to_single_precision():
    res = subproc.run([os.path.abspath(__file__), "f32"], key="cpu-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(worst) == {"pyramidal", "elliptic"}
    for cone, err in worst.items():
        assert err < F32_TOL, f"{cone}: relative error {err}"


def _f32_main():
    """The scene in f32 with MuJoCo's qacc and efc_force; prints JSON: the largest
    error per cone relative to each output's magnitude."""
    tiphys.init(arch="cpu", precision="f32")
    out = {}
    for cone in ("pyramidal", "elliptic"):
        xml = SCENE.format(cone=cone)
        m = tiphys.load_model_from_string(xml)
        mjm = mujoco.MjModel.from_xml_string(xml)
        qpos, qvel, xfrc = _scene_state(mjm, NWORLD, seed=3)
        theirs = _mujoco(mjm, qpos, qvel, xfrc)
        d = tiphys.make_data(m, NWORLD)
        _set(d.qpos, qpos)
        _set(d.qvel, qvel)
        _set(d.xfrc_applied, xfrc)
        tiphys.forward(m, d)
        if any(int(d.numpy("nefc")[w]) != res["nefc"] for w, res in enumerate(theirs)):
            out[cone] = float("inf")
            continue
        _set(d.qacc, np.stack([res["qacc"] for res in theirs]))
        force = np.zeros(d.efc_force.to_numpy().shape)
        for w, res in enumerate(theirs):
            force[w, :res["nefc"]] = res["efc_force"]
        d.efc_force.from_numpy(force.astype(np.float32))
        _poison(d, OUTPUTS)
        tiphys.rne_post_constraint(m, d)
        local = tiphys.contact_force(m, d)
        worst = 0.0
        for w, res in enumerate(theirs):
            pairs = [(d.numpy(name)[w], res[name]) for name in OUTPUTS]
            pairs.append((local[w, :res["ncon"]], res["force"]))
            for ours, want in pairs:
                scale = max(1.0, float(np.abs(want).max(initial=0.0)))
                worst = max(worst, float(np.abs(ours - want).max(initial=0.0)) / scale)
        out[cone] = worst if np.isfinite(worst) else float("inf")
    print(json.dumps(out))


if __name__ == "__main__" and sys.argv[1:] == ["f32"]:
    _f32_main()
