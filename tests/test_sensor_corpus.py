"""Sensors of real models written by others, compiled by tiphys, against MuJoCo 3.4.0.

Every corpus model with a <sensor> section (the dm_control suite's robots, MuJoCo's
own test model, MuJoCo Warp's tactile model): tiphys compiles the file as written
(its own compiler, not put_model), the sensor_* fields must equal MuJoCo's, then
NWORLD worlds at different random states (qpos0 or a keyframe moved a little, random
qvel and ctrl) run `forward` in both engines and every sensor's data is compared,
sensordata poisoned with NaN first.

MuJoCo's default flags (constraint islands solved apart) and the solver run to 1e-12
in both engines: position and velocity sensors must agree to POS_TOL of their scale,
acceleration-stage sensors (forces, touch, contact, accelerometers: the solver's
output) to ACC_TOL of their scale, where MuJoCo itself moves by ~1e-10 when its
solver stops an iteration earlier or later. Where the contacts themselves differ by
round-off (GJK/EPA on meshes and height fields: MuJoCo moves too under 1e-15 qpos
kicks), a sensor may differ by up to 10x MuJoCo's own spread under such kicks.
"""
import os
import zlib

import mujoco
import numpy as np
import pytest
from lxml import etree

import tiphys
from conftest import record
from corpus_xfail import corpus_params, mujoco_accepts, not_yet
from oracle import compare_arrays, corpus_dir, corpus_models, load_pair_from_xml

GROUP = "sensors (forward, sensordata)"
NWORLD = 3
POS_TOL = 1e-8
ACC_TOL = 1e-6
KICKS = (1e-15, -1e-15, 1e-14, -1e-14, 1e-12)
SENSOR_FIELDS = ("sensor_type", "sensor_datatype", "sensor_needstage", "sensor_objtype",
                 "sensor_objid", "sensor_reftype", "sensor_refid", "sensor_intprm",
                 "sensor_dim", "sensor_adr", "sensor_cutoff", "sensor_noise",
                 "sensor_user")


def _models_with_sensors():
    """Corpus models with a <sensor> section that MuJoCo compiles as written (those it
    rejects are fragments meant to be included: the compiler tests cover them)."""
    out = []
    for rel in corpus_models(include_extra=True):
        with open(os.path.join(corpus_dir(), rel), "rb") as f:
            if b"<sensor" in f.read() and mujoco_accepts(rel):
                out.append(rel)
    return out


def _load(rel):
    """(tiphys Model, MjModel) with a tight solver."""
    path = os.path.join(corpus_dir(), rel)
    root = etree.parse(path).getroot()
    opt = root.find("option")
    if opt is None:
        opt = etree.Element("option")
        root.insert(0, opt)
    opt.set("tolerance", "1e-12")
    opt.set("iterations", "300")
    opt.set("ls_iterations", "100")
    return load_pair_from_xml(path, etree.tostring(root), "sens")


def _random_state(mjm, rng):
    """qpos from qpos0/keyframes, hinge/slide moved by up to 0.1, quaternions kept unit;
    random qvel and ctrl."""
    bases = [mjm.qpos0] + [mjm.key_qpos[k] for k in range(mjm.nkey)]
    qpos = np.array([bases[w % len(bases)] for w in range(NWORLD)], dtype=np.float64)
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        if mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            qpos[:, adr] += rng.uniform(-0.1, 0.1, NWORLD)
    qvel = rng.normal(scale=0.3, size=(NWORLD, mjm.nv))
    lo, hi = mjm.actuator_ctrlrange.T
    ctrl = np.where(mjm.actuator_ctrllimited != 0,
                    lo + (hi - lo) * rng.uniform(size=(NWORLD, mjm.nu)),
                    rng.uniform(-0.5, 0.5, size=(NWORLD, mjm.nu)))
    return qpos, qvel, ctrl


@pytest.mark.parametrize("rel", corpus_params("test_sensor_corpus", _models_with_sensors()))
def test_corpus_sensors(rel):
    with not_yet("test_sensor_corpus", GROUP, rel):
        m, mjm = _load(rel)
        errors = [e for e in (compare_arrays(f, getattr(m.arrays, f), getattr(mjm, f),
                                             1e-6, 1e-9) for f in SENSOR_FIELDS) if e]
        assert not errors, errors
        rng = np.random.default_rng(zlib.crc32(rel.encode()))
        qpos, qvel, ctrl = _random_state(mjm, rng)
        d = tiphys.make_data(m, NWORLD)
        if mjm.nq:  # (a model without joints keeps its padded one-column arrays)
            d.qpos.from_numpy(qpos)
        if mjm.nv:
            d.qvel.from_numpy(qvel)
        if mjm.nu:
            d.ctrl.from_numpy(ctrl)
        d.sensordata.fill(np.nan)
        tiphys.forward(m, d)
        ours = d.numpy("sensordata")
    theirs = np.zeros_like(ours)
    own = np.zeros_like(ours)  # MuJoCo's own spread under round-off kicks of qpos
    md = mujoco.MjData(mjm)
    chaotic = 0
    subtree = np.isin(mjm.sensor_type, (mujoco.mjtSensor.mjSENS_SUBTREELINVEL,
                                        mujoco.mjtSensor.mjSENS_SUBTREEANGMOM)).any()
    for w in range(NWORLD):
        theirs[w] = _mujoco_sensors(mjm, md, qpos[w], qvel[w], ctrl[w])
        if subtree:  # mj_sensorVel fills the Data fields as well
            for f in ("subtree_linvel", "subtree_angmom"):
                np.testing.assert_allclose(d.numpy(f)[w], getattr(md, f), rtol=0,
                                           atol=POS_TOL * max(1, np.abs(getattr(md, f)).max()))
        ncon, dist = md.ncon, md.contact.dist.copy()
        if ncon != d.numpy("ncon")[w] or np.abs(
                d.numpy("contact_dist")[w, :ncon] - dist).max(initial=0) > 1e-9:
            # the collision itself differs by round-off (GJK/EPA on meshes and height
            # fields are round-off chaotic in MuJoCo too): measure MuJoCo's own spread
            chaotic += 1
            for kick in KICKS:
                nudged = qpos[w] + kick * rng.choice((-1.0, 1.0), size=mjm.nq)
                own[w] = np.maximum(own[w], np.abs(_mujoco_sensors(
                    mjm, md, nudged, qvel[w], ctrl[w]) - theirs[w]))
    worst = {}
    for i in range(mjm.nsensor):
        adr, dim = mjm.sensor_adr[i], mjm.sensor_dim[i]
        a, b = ours[:, adr:adr + dim], theirs[:, adr:adr + dim]
        tol = ACC_TOL if mjm.sensor_needstage[i] == mujoco.mjtStage.mjSTAGE_ACC else POS_TOL
        scale = max(1.0, float(np.abs(b).max()))
        err = np.abs(a - b) if np.isfinite(a).all() else np.full(a.shape, np.inf)
        allowed = np.maximum(tol * scale, 10 * own[:, adr:adr + dim])
        name = mujoco.mjtSensor(mjm.sensor_type[i]).name
        worst[name] = max(worst.get(name, 0.0), float(err.max()) / scale)
        assert np.all(err <= allowed), (rel, i, name, a, b, own[:, adr:adr + dim])
    top = max(worst.items(), key=lambda kv: kv[1]) if worst else ("-", 0.0)
    note = f"; {chaotic} world(s) with round-off-chaotic contacts, within 10x MuJoCo's " \
           f"own spread" if chaotic else ""
    record(GROUP, rel, f"match ({mjm.nsensor} sensors, {len(worst)} types; "
                       f"largest scaled error {top[1]:.1e} ({top[0]}){note})")


def _mujoco_sensors(mjm, md, qpos, qvel, ctrl):
    md.qpos[:], md.qvel[:], md.ctrl[:] = qpos, qvel, ctrl
    mujoco.mj_forward(mjm, md)
    return md.sensordata.copy()
