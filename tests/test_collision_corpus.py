"""Contacts on the corpus against MuJoCo 3.4.0: every model (later-issue sections
stripped in both engines), several worlds near the model's initial pose (qpos0 and
keyframes, plus noise), kinematics + collision in both engines, contacts compared in
MuJoCo's order. Analytic pairs to 1e-9; pairs found by GJK/EPA (convex, hfield) to
1e-5, since both engines stop iterating at ccd_tolerance."""
import zlib

import mujoco
import numpy as np
import pytest

import tiphys
from conftest import record
from corpus_xfail import corpus_params, not_yet, stage_models
from oracle import collide_both, compare_contacts, stripped_corpus_pair
from test_collide_convex import within_mujoco_noise
from tiphys.kernels.collision_driver import detector_kind

NWORLD = 4
GROUP = "collision (contacts at random states)"


def corpus_states(mjm, rng, nworld):
    """qpos near the initial pose: qpos0 or a keyframe, free bodies nudged a little,
    other joints moved by up to 0.1."""
    bases = [mjm.qpos0] + [mjm.key_qpos[k] for k in range(mjm.nkey)]
    qpos = np.zeros((nworld, mjm.nq))
    for w in range(nworld):
        q = np.array(bases[w % len(bases)], dtype=np.float64)
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            t = mjm.jnt_type[j]
            if t == mujoco.mjtJoint.mjJNT_FREE:
                q[adr:adr + 3] += rng.uniform(-0.02, 0.02, 3)
                quat = q[adr + 3:adr + 7] + rng.normal(scale=0.05, size=4)
                q[adr + 3:adr + 7] = quat / np.linalg.norm(quat)
            elif t == mujoco.mjtJoint.mjJNT_BALL:
                quat = q[adr:adr + 4] + rng.normal(scale=0.1, size=4)
                q[adr:adr + 4] = quat / np.linalg.norm(quat)
            else:
                q[adr] += rng.uniform(-0.1, 0.1)
        qpos[w] = q
    return qpos


def _atol(mjm, contact):
    g1, g2 = (int(g) for g in contact["geom"])
    kind = detector_kind(*sorted((int(mjm.geom_type[g1]), int(mjm.geom_type[g2]))))
    return 1e-9 if kind == "primitive" else 1e-5


@pytest.mark.parametrize("rel", corpus_params("test_collision_corpus", stage_models()))
def test_corpus_contacts(rel):
    with not_yet("test_collision_corpus", GROUP, rel):
        m, mjm = stripped_corpus_pair(rel)
        rng = np.random.default_rng(zlib.crc32(rel.encode()))
        qpos = corpus_states(mjm, rng, NWORLD)
        d = tiphys.make_data(m, NWORLD)
        ours, theirs = collide_both(m, d, mjm, qpos)
    errors = []
    for w in range(NWORLD):
        if len(ours[w]) != len(theirs[w]):
            world_errors = compare_contacts(ours[w], theirs[w])
        else:
            world_errors = []
            for a, b in zip(ours[w], theirs[w]):
                world_errors += compare_contacts([a], [b], atol=_atol(mjm, b))
        # GJK/EPA on curved or mesh shapes: MuJoCo's own answer moves this much when qpos
        # moves by round-off; accept ours if it is one of those answers
        if world_errors and not within_mujoco_noise(mjm, qpos[w], ours[w], 1e-5):
            errors += world_errors
    ncon = sum(len(c) for c in theirs)
    record(GROUP, rel, f"match ({ncon} contacts)" if not errors else
           f"MISMATCH: {errors[0]}")
    assert not errors, errors[:5]
