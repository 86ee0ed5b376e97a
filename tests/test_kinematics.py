"""kinematics / com_pos / camlight against mj_kinematics + mj_comPos + mj_camlight.

Corpus models (later-issue sections stripped in both engines), several worlds with
different random states, outputs poisoned with NaN first, f64 on the CPU.
"""
import os
import zlib

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import StrippedModel, corpus_dir, mujoco_model, stripped_corpus_pair
from conftest import record
from corpus_xfail import corpus_params, not_yet, stage_models

OUTPUTS = ("xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos",
           "geom_xmat", "site_xpos", "site_xmat", "subtree_com", "cinert", "cdof",
           "cam_xpos", "cam_xmat", "light_xpos", "light_xdir")
NWORLD = 4


def poison(d, names):
    for name in names:
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.to_numpy().shape, np.nan, dtype=arr.to_numpy().dtype))


def random_state(mjm, nworld, rng):
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    qpos += rng.uniform(-1.0, 1.0, size=qpos.shape)  # quaternions are normalized by both
    mpos = rng.normal(size=(nworld, mjm.nmocap, 3))
    mquat = rng.normal(size=(nworld, mjm.nmocap, 4))
    return qpos, mpos, mquat


def run_both(m, mjm, nworld, seed):
    rng = np.random.default_rng(seed)
    qpos, mpos, mquat = random_state(mjm, nworld, rng)
    d = tiphys.make_data(m, nworld)
    if mjm.nq:
        d.qpos.from_numpy(qpos)
    if mjm.nmocap:
        d.mocap_pos.from_numpy(mpos)
        d.mocap_quat.from_numpy(mquat)
    poison(d, OUTPUTS)
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.camlight(m, d)
    md = mujoco.MjData(mjm)
    expected = []
    for w in range(nworld):
        md.qpos[:] = qpos[w]
        md.mocap_pos[:] = mpos[w]
        md.mocap_quat[:] = mquat[w]
        mujoco.mj_kinematics(mjm, md)
        mujoco.mj_comPos(mjm, md)
        mujoco.mj_camlight(mjm, md)
        expected.append({k: getattr(md, k).copy() for k in OUTPUTS})
    return d, expected


def assert_outputs_match(d, expected, rtol=1e-9, atol=1e-9):
    for name in OUTPUTS:
        ours = d.numpy(name)
        for w, exp in enumerate(expected):
            want = exp[name]
            got = ours[w].reshape(want.shape)
            assert not np.isnan(got).any(), f"{name}: world {w} not written"
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale,
                                       err_msg=f"{name} world {w}")


MODELS = stage_models()


@pytest.mark.parametrize("rel", corpus_params("test_kinematics", MODELS))
def test_kinematics_matches_mujoco_on_corpus(rel):
    with not_yet("test_kinematics", "kinematics", rel):
        m, mjm = stripped_corpus_pair(rel)
    d, expected = run_both(m, mjm, NWORLD, seed=zlib.crc32(rel.encode()))
    assert_outputs_match(d, expected)
    record("kinematics", rel, "match")


def test_put_model_kinematics_matches_mujoco():
    path = os.path.join(corpus_dir(), "mjwarp", "pendula.xml")
    mjm = mujoco_model(path)  # tendons/actuators included: put_model takes MuJoCo's compile
    m = tiphys.put_model(mjm)
    d, expected = run_both(m, mjm, 3, seed=1)
    assert_outputs_match(d, expected)


def test_worlds_are_independent_and_nan_stays_in_its_world():
    path = os.path.join(corpus_dir(), "gym", "ant.xml")
    with StrippedModel(path) as tmp:
        m = tiphys.load_model(tmp)
    d = tiphys.make_data(m, 3)
    q = np.tile(m.arrays.qpos0, (3, 1))
    q[1, :] = np.nan
    q[2, 7:] += 0.3
    d.qpos.from_numpy(q)
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    xpos = d.numpy("xpos")
    assert np.isnan(xpos[1, 1:]).all()
    assert np.isfinite(xpos[0]).all() and np.isfinite(xpos[2]).all()
    assert not np.allclose(xpos[0], xpos[2])
    assert np.isfinite(d.numpy("cdof")[[0, 2]]).all()


@pytest.mark.parametrize("rel", ["gym/humanoid.xml", "mjwarp/pendula.xml",
                                 "mjwarp/primitives.xml", "mjtest/model.xml"])
def test_kinematics_serial_tree_pass_for_many_worlds(rel):
    """From SERIAL_TREE_MIN_WORLDS worlds on, one thread walks each world's tree."""
    from tiphys.kernels.smooth import SERIAL_TREE_MIN_WORLDS
    with StrippedModel(os.path.join(corpus_dir(), rel)) as tmp:
        mjm = mujoco_model(tmp)
        m = tiphys.load_model(tmp)
    d, expected = run_both(m, mjm, SERIAL_TREE_MIN_WORLDS, seed=3)
    assert_outputs_match(d, expected)
