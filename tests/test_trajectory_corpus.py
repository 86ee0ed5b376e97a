"""100-step trajectories of corpus models with contacts against mj_step, and how far
the two engines drift apart over time.

Every corpus model that has contact candidates (sensor/deformable/extension sections
stripped in both engines; tendons, actuators and equalities kept), MuJoCo's islands off
in both (tiphys solves each world as one system), 2 worlds from qpos0 or a keyframe
with small random velocities and controls, 100 steps of the model's own integrator.

Tolerance, and why: per step the engines differ by round-off (~1e-15 of the state), and
contact dynamics amplify any difference (chaos; solver iteration counts flip, contacts
appear a step earlier; a body resting exactly on the floor at distance 0 is in or
out of contact by round-off). The yardstick is MuJoCo against itself: the same rollout
with every qpos and qvel moved by +-1e-10, +-1e-12 and +-1e-14 (random signs) gives
MuJoCo's own sensitivity s_k after k steps (the largest of the three). tiphys passes
when its distance to MuJoCo stays within 1e-7 + 10 max(s_1..s_k) at every step k. The report
lists the distance at steps 1, 10, 50 and 100 and MuJoCo's own s_100.
"""
import os
import zlib

import mujoco
import numpy as np
import pytest
from lxml import etree

import tiphys
import tiphys.kernels.check
from conftest import record
from oracle import corpus_dir, corpus_models, load_pair_from_xml, mujoco_model, \
    strip_later_sections
from tiphys.forward import contacts_possible

GROUP = "trajectories (100 steps with contacts)"
NWORLD = 2
NSTEP = 100
KICKS = (1e-10, 1e-12, 1e-14)
REPORT_STEPS = (1, 10, 50, 100)
BAD_STATE = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
             mujoco.mjtWarning.mjWARN_BADQACC)


def _load(rel):
    """(tiphys Model, MjModel) with islands off, or None (recorded) when either engine
    cannot take the model or it has no contact candidates."""
    path = os.path.join(corpus_dir(), rel)
    try:
        mujoco_model(path)
    except ValueError:
        return None  # MuJoCo rejects the file as written: the compiler tests cover it
    root = etree.fromstring(strip_later_sections(path, ("sensor", "deformable",
                                                        "extension")))
    opt = root.find("option")
    if opt is None:
        opt = etree.Element("option")
        root.insert(0, opt)
    flag = opt.find("flag")
    if flag is None:
        flag = etree.SubElement(opt, "flag")
    flag.set("island", "disable")
    try:
        m, mjm = load_pair_from_xml(path, etree.tostring(root), "traj")
    except ValueError:
        record(GROUP, rel, "not yet: needs <extension> plugins")
        return None
    except NotImplementedError as exc:
        record(GROUP, rel, "not yet: " + str(exc).split(": ", 1)[-1])
        return None
    if mjm.nv == 0 or not contacts_possible(m):
        return None  # no contacts possible: the trajectory tests without contacts cover it
    return m, mjm


def _initial(mjm, rng):
    bases = [mjm.qpos0] + [mjm.key_qpos[k] for k in range(mjm.nkey)]
    qpos = np.array([bases[w % len(bases)] for w in range(NWORLD)], dtype=np.float64)
    qvel = rng.normal(scale=0.1, size=(NWORLD, mjm.nv))
    lo, hi = mjm.actuator_ctrlrange.T
    ctrl = np.where(mjm.actuator_ctrllimited != 0,
                    lo + (hi - lo) * rng.uniform(size=(NWORLD, mjm.nu)),
                    rng.uniform(-0.5, 0.5, size=(NWORLD, mjm.nu)))
    return qpos, qvel, ctrl


def _mujoco_rollout(mjm, qpos, qvel, ctrl):
    """(NSTEP x state) after each mj_step, and the first step (1-based) at which MuJoCo
    found a bad qpos/qvel/qacc and reset the data (NSTEP + 1 if never)."""
    md = mujoco.MjData(mjm)
    md.qpos[:] = qpos
    md.qvel[:] = qvel
    md.ctrl[:] = ctrl
    out = np.zeros((NSTEP, mjm.nq + mjm.nv))
    unstable = NSTEP + 1
    for k in range(NSTEP):
        mujoco.mj_step(mjm, md)
        out[k] = np.concatenate([md.qpos, md.qvel])
        if unstable > NSTEP and any(md.warning[i].number for i in BAD_STATE):
            unstable = k + 1
    return out, unstable


@pytest.mark.parametrize("rel", corpus_models())
def test_corpus_trajectory(rel):
    pair = _load(rel)
    if pair is None:
        return
    m, mjm = pair
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    qpos, qvel, ctrl = _initial(mjm, rng)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    if mjm.nu:
        d.ctrl.from_numpy(ctrl)
    ours = np.zeros((NSTEP, NWORLD, mjm.nq + mjm.nv))
    for k in range(NSTEP):
        tiphys.step(m, d)
        ours[k] = np.concatenate([d.numpy("qpos"), d.numpy("qvel")], axis=1)
    dist = np.zeros(NSTEP)
    own = np.zeros(NSTEP)
    horizon = NSTEP  # steps compared: all, or those before MuJoCo finds the model unstable
    unstable_worlds = []
    for w in range(NWORLD):
        want, unstable = _mujoco_rollout(mjm, qpos[w], qvel[w], ctrl[w])
        if unstable <= NSTEP:
            unstable_worlds.append(w)
            horizon = min(horizon, unstable - 1)
        scale = np.maximum(1.0, np.abs(want).max(axis=1))
        dist = np.maximum(dist, np.abs(ours[:, w] - want).max(axis=1) / scale)
        for size in KICKS:
            sq = size * rng.choice((-1.0, 1.0), size=mjm.nq)
            sv = size * rng.choice((-1.0, 1.0), size=mjm.nv)
            kicked, _ = _mujoco_rollout(mjm, qpos[w] + sq, qvel[w] + sv, ctrl[w])
            own = np.maximum(own, np.abs(kicked - want).max(axis=1) / scale)
    dist[~np.isfinite(dist)] = np.inf
    # the spread MuJoCo has reached so far: once kicked runs have been that far apart
    # (a contact that came or went, an EPA normal that flipped), a later step may
    # still carry the difference even where MuJoCo's own kicked runs happen to have
    # re-converged at that very step
    limit = 1e-7 + 10.0 * np.maximum.accumulate(own)
    bad = np.nonzero(dist[:horizon] > limit[:horizon])[0]
    shown = [k for k in REPORT_STEPS if k <= horizon]
    status = ("ok" if bad.size == 0 else f"DIVERGED at step {bad[0] + 1}") + \
        " (dist " + ", ".join(f"{k}:{dist[k - 1]:.1e}" for k in shown) + \
        f"; MuJoCo kicked: {own[horizon - 1]:.1e})" if horizon else "no step compared"
    if unstable_worlds:
        # MuJoCo resets such a world (mj_checkAcc) and runs mj_forward again before
        # integrating; tiphys resets it on the device and rests it for that step: the
        # runs are compared up to the instability, and tiphys must flag it too
        flagged = tiphys.kernels.check.warnings_of(d)[:, 4:7].sum(axis=1)
        status += f"; unstable in MuJoCo at step {horizon + 1} (worlds {unstable_worlds}" + \
            (", tiphys flags them too)" if all(flagged[w] for w in unstable_worlds)
             else ", NOT FLAGGED by tiphys)")
        assert all(flagged[w] for w in unstable_worlds), status
    record(GROUP, rel, status)
    assert bad.size == 0, status
