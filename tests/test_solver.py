"""The constraint solver (kernels/solver.py) against mujoco.mj_fwdConstraint.

Decoupled from row construction: MuJoCo 3.4.0 builds the rows (mj_fwdPosition,
mj_fwdVelocity, mj_fwdActuation, mj_fwdAcceleration, jacobian="dense"); its efc_*
rows and contacts are copied into tiphys Data (padded to njmax), while qM, its
factor, qfrc_smooth and qacc_smooth come from tiphys's own stages. Outputs are
poisoned (NaN, -7), ``solve`` runs, and efc_b, efc_force, efc_state,
qfrc_constraint, qacc and solver_niter are compared with mj_fwdConstraint on the
same state, world by world, each scaled by its largest magnitude.

Islands: the models keep MuJoCo's default island flag (CG and Newton then solve each
constraint island on its own; tiphys's island runs on the copied rows first) unless
a test asks for <flag island="disable"/>; several tests run both. With islands the
iteration counts and statistics are those of each island (solver_niter[island],
mjData.solver[island]), and MuJoCo's final states are its iefc_state (its efc_state
is left at the warmstart test's).

Tolerances, in f64:
- MuJoCo's tolerance 1e-8: tiphys does MuJoCo's arithmetic up to summation order, so
  both engines take the same iterates: equal iteration counts, equal per-iteration
  statistics (mjData.solver), outputs to 1e-9 (measured ~1e-14; CG on an
  ill-conditioned problem: see the equality test).
- tolerance 1e-12 (converged): Newton agrees to 1e-9; CG and PGS stop when the
  improvement reaches the cost's round-off, so see CONVERGED_TOL.
- PGS with elliptic cones: forces on the cone surface are "satisfied" or "cone" by
  round-off, so those states (and the counts made from them) may differ.
- Line searches that end where the slope is round-off may take one evaluation more
  or less (neval; see LS_FLAT): an island is a small problem whose own scale makes
  the line search's tolerance tighter, so islands get there more often.
"""
import json
import os
import sys
import zlib

import mujoco
import numpy as np
import pytest

import subproc
import tiphys
from oracle import corpus_dir, load_pair_from_xml, strip_later_sections
from tiphys.kernels.smooth import com_pos, com_vel, crb, factor_m, kinematics, rne
from tiphys.kernels.actuation import actuation, transmission, velocity
from tiphys.kernels.forward import fwd_acceleration
from tiphys.kernels.island import island
from tiphys.kernels.passive import passive
from tiphys.kernels.solver import STAT_NAMES, solve, solver_stats
from tiphys.kernels.tendon import tendon

HERE = os.path.dirname(os.path.abspath(__file__))
SOLVERS = ("PGS", "CG", "Newton")
NWORLD = 4

CONTACT_XML = """
<mujoco>
  <option solver="{solver}" cone="{cone}" tolerance="{tolerance}" iterations="{iterations}"
          jacobian="dense" impratio="{impratio}">
    <flag island="{island}" warmstart="{warmstart}"/>
  </option>
  <default><geom condim="{condim}" friction="0.8 0.02 0.002"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="4 4 .1"/>
    <body name="box" pos="0 0 .05"><freejoint/><geom type="box" size=".1 .08 .05"/></body>
    <body name="capsule" pos=".4 0 .04">
      <freejoint/><geom type="capsule" size=".04 .12" euler="0 90 0"/>
    </body>
    <body name="ball" pos="-.4 0 .06"><freejoint/><geom type="sphere" size=".06"/></body>
  </worldbody>
</mujoco>
"""

# limits (hinge, slide, ball, tendon), dof and tendon frictionloss, and a contact
JOINT_XML = """
<mujoco>
  <option solver="{solver}" cone="{cone}" tolerance="{tolerance}" iterations="{iterations}"
          jacobian="dense">
    <flag island="{island}" warmstart="{warmstart}"/>
  </option>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1" condim="{condim}"/>
    <body name="box" pos=".5 .5 .05">
      <freejoint/><geom type="box" size=".05 .05 .05" condim="{condim}"/>
    </body>
    <body pos="0 0 .95">
      <joint name="h1" type="hinge" axis="0 1 0" range="-60 60" frictionloss=".3"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".04"/>
      <body pos="0 0 -.4">
        <joint name="s1" type="slide" axis="0 0 1" range="-.1 .1" frictionloss=".5"/>
        <joint name="h2" type="hinge" axis="1 0 0" range="-30 45" frictionloss=".1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".04"/>
        <body pos="0 0 -.4">
          <joint name="b1" type="ball" range="0 40" frictionloss=".2"/>
          <geom type="sphere" size=".08" pos="0 0 -.1" condim="{condim}"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t" limited="true" range="-.3 .3" frictionloss=".2">
      <joint joint="h1" coef="1"/><joint joint="h2" coef="-1"/>
    </fixed>
  </tendon>
</mujoco>
"""

# connect, weld and joint equalities next to contacts
EQUALITY_XML = """
<mujoco>
  <option solver="{solver}" cone="{cone}" tolerance="{tolerance}" iterations="{iterations}"
          jacobian="dense">
    <flag island="{island}" warmstart="{warmstart}"/>
  </option>
  <default><geom condim="{condim}"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="a" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="b" pos=".3 0 .05"><freejoint/><geom type="capsule" size=".05 .1"/></body>
    <body name="c" pos="-.4 0 .3">
      <freejoint/><geom type="sphere" size=".06"/>
    </body>
    <body name="arm" pos="0 .6 .3">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <body pos=".3 0 0">
        <joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect body1="a" body2="b" anchor=".2 0 0"/>
    <weld body1="c" relpose="-.4 0 .3 1 0 0 0"/>
    <joint joint1="j2" joint2="j1" polycoef=".1 -.5 .2 0 0"/>
  </equality>
</mujoco>
"""

TIGHT = dict(tolerance="1e-12", iterations="200", impratio="1", island="enable",
             warmstart="enable")
# MuJoCo's default (islands: CG and Newton solve each island on its own) and without
ISLAND_FLAGS = ("enable", "disable")

_MODELS = {}


def load_xml(template, **params):
    """tiphys and MuJoCo models of a template (compiled once per module)."""
    xml = template.format(**dict(TIGHT, **params))
    if xml not in _MODELS:
        _MODELS[xml] = (tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml))
    return _MODELS[xml]


def load_humanoid(flags=None, **opt):
    """The gym humanoid (stripped of later sections) with options and flags set."""
    from lxml import etree
    flags = flags or {}
    key = ("humanoid",) + tuple(sorted(opt.items())) + tuple(sorted(flags.items()))
    if key not in _MODELS:
        path = os.path.join(corpus_dir(), "gym/humanoid.xml")
        root = etree.fromstring(strip_later_sections(path))
        el = root.find("option")
        if el is None:
            el = etree.SubElement(root, "option")
        for k, v in opt.items():
            el.set(k, v)
        if flags:
            flag = el.find("flag")
            if flag is None:
                flag = etree.SubElement(el, "flag")
            for k, v in flags.items():
                flag.set(k, v)
        _MODELS[key] = load_pair_from_xml(path, etree.tostring(root), "solver")
    return _MODELS[key]


# ---------------------------------------------------------------------------------------
# states
# ---------------------------------------------------------------------------------------

def _quat_small(rng, angle):
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    a = rng.uniform(-angle, angle)
    return np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * axis])


def contact_state(mjm, seed, nworld=NWORLD, free_world=0):
    """Bodies resting on (slightly in) the floor; world ``free_world`` has them in the
    air (no rows at all)."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    qvel = rng.normal(scale=0.3, size=(nworld, mjm.nv))
    for w in range(nworld):
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            qpos[w, adr:adr + 2] += rng.uniform(-0.05, 0.05, 2)
            qpos[w, adr + 2] += rng.uniform(-0.01, 0.004) + (1.0 if w == free_world else 0)
            qpos[w, adr + 3:adr + 7] = _quat_small(rng, 0.08)
    return qpos, qvel


def joint_state(mjm, seed, nworld=NWORLD):
    """Joints around and beyond their limits, the tip near the floor."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(nworld):
        qpos[w, 2] += rng.uniform(-0.01, 0.003)  # the box in the floor
        qpos[w, 3:7] = _quat_small(rng, 0.1)
        qpos[w, 7] = rng.choice([-1, 1]) * np.deg2rad(rng.uniform(50, 70))
        qpos[w, 8] = rng.uniform(-0.12, 0.12)
        qpos[w, 9] = np.deg2rad(rng.uniform(-40, 55))
        qpos[w, 10:14] = _quat_small(rng, np.deg2rad(50))
    qvel = rng.normal(scale=1.0, size=(nworld, mjm.nv))
    return qpos, qvel


def equality_state(mjm, seed, nworld=NWORLD):
    """Free bodies near rest on the floor, equalities violated, random velocities."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(nworld):
        for body in range(3):
            adr = 7 * body
            qpos[w, adr:adr + 3] += rng.uniform(-0.02, 0.02, 3)
            qpos[w, adr + 3:adr + 7] = _quat_small(rng, 0.1)
        qpos[w, 21:23] = rng.uniform(-1, 1, 2)
    qvel = rng.normal(scale=0.5, size=(nworld, mjm.nv))
    return qpos, qvel


def humanoid_state(mjm, seed, nworld=NWORLD):
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    qpos[:, 2] = rng.uniform(0.95, 1.05, nworld)  # feet in the floor
    qpos[:, 7:] += rng.uniform(-0.6, 0.6, (nworld, mjm.nq - 7))  # some beyond limits
    qvel = rng.normal(scale=0.5, size=(nworld, mjm.nv))
    return qpos, qvel


# ---------------------------------------------------------------------------------------
# both engines on the same state
# ---------------------------------------------------------------------------------------

EFC_FLOAT = ("pos", "margin", "frictionloss", "diagApprox", "D", "R", "vel", "aref")


def mujoco_rows(mjm, qpos, qvel, warmstart=None):
    """Per world: MuJoCo's rows and contacts before mj_fwdConstraint, and its outputs."""
    md = mujoco.MjData(mjm)
    out = []
    for w in range(qpos.shape[0]):
        mujoco.mj_resetData(mjm, md)
        md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
        if warmstart is not None:
            md.qacc_warmstart[:] = warmstart[w]
        mujoco.mj_fwdPosition(mjm, md)
        mujoco.mj_fwdVelocity(mjm, md)
        mujoco.mj_fwdActuation(mjm, md)
        mujoco.mj_fwdAcceleration(mjm, md)
        nefc = md.nefc
        if mujoco.mj_isSparse(mjm):
            J = np.zeros((nefc, mjm.nv))
            mujoco.mju_sparse2dense(J, md.efc_J, md.efc_J_rownnz, md.efc_J_rowadr,
                                    md.efc_J_colind)
        else:
            J = md.efc_J.reshape(nefc, mjm.nv).copy()
        rec = {"nefc": nefc, "ne": md.ne, "nf": md.nf, "nl": md.nl, "ncon": md.ncon,
               "efc_J": J, "efc_type": md.efc_type.copy(), "efc_id": md.efc_id.copy(),
               "qacc_warmstart": md.qacc_warmstart.copy(),
               "qacc_smooth": md.qacc_smooth.copy(), "qM": md.qM.copy(),
               "qfrc_smooth": md.qfrc_smooth.copy()}
        for k in EFC_FLOAT:
            rec["efc_" + k] = getattr(md, "efc_" + k).copy()
        con = md.contact
        rec["contact"] = {"mu": con.mu.copy(), "friction": con.friction.copy(),
                          "dim": con.dim.copy(), "efc_address": con.efc_address.copy(),
                          "geom": con.geom.copy()}
        mujoco.mj_fwdConstraint(mjm, md)
        state = md.efc_state.copy()
        if by_islands(mjm, md):
            # MuJoCo's island solvers leave efc_state as the warmstart test left it
            # (at qacc_smooth); their final states are in iefc_state
            state[md.map_iefc2efc] = md.iefc_state
        nslot = min(mujoco.mjNISLAND, max(1, md.nisland))
        rec["want"] = {"efc_b": md.efc_b.copy(), "efc_force": md.efc_force.copy(),
                       "efc_state": state, "qacc": md.qacc.copy(),
                       "qfrc_constraint": md.qfrc_constraint.copy(),
                       "solver_niter": md.solver_niter.copy(),
                       "nisland": md.nisland,
                       "stats": [{k: np.array([getattr(md.solver[200 * slot + i], k)
                                               for i in range(min(200, md.solver_niter[
                                                   slot]))])
                                  for k in STAT_NAMES} for slot in range(nslot)]}
        out.append(rec)
    return out


def _put(arr, values):
    full = np.zeros(arr.shape + tuple(getattr(arr, "element_shape", ()) or ()),
                    dtype=arr.to_numpy().dtype)
    full[tuple(slice(0, n) for n in values.shape)] = values
    arr.from_numpy(full)


def tiphys_solve(m, recs, qpos, qvel, njmax=None, nconmax=None, tamper=None,
                 mujoco_smooth=False):
    """tiphys's smooth stages on the state, MuJoCo's rows copied in, outputs poisoned,
    solve; returns d. ``tamper(arrays)`` may edit the copied row arrays first. With
    ``mujoco_smooth``, MuJoCo's qM, qfrc_smooth and qacc_smooth are copied in too and
    factor_m is the only smooth stage that runs (fewer kernels to compile)."""
    nworld = len(recs)
    njmax = njmax or max(1, max(r["nefc"] for r in recs)) + 3
    nconmax = nconmax or max(1, max(r["ncon"] for r in recs)) + 2
    d = tiphys.make_data(m, nworld, nconmax=nconmax, njmax=njmax)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    if mujoco_smooth:
        for k in ("qM", "qfrc_smooth", "qacc_smooth"):
            _put(getattr(d, k), np.array([r[k] for r in recs]))
        factor_m(m, d)
    else:
        kinematics(m, d)
        com_pos(m, d)
        tendon(m, d)
        crb(m, d)
        factor_m(m, d)
        transmission(m, d)
        velocity(m, d)
        com_vel(m, d)
        passive(m, d)
        rne(m, d)
        actuation(m, d)
        fwd_acceleration(m, d)
    nv = m.nv
    rows = {k: np.zeros((nworld, njmax)) for k in ("efc_" + f for f in EFC_FLOAT)}
    rows["efc_J"] = np.zeros((nworld, njmax, max(1, nv)))
    for k in ("efc_type", "efc_id"):
        rows[k] = np.zeros((nworld, njmax), dtype=np.int32)
    con = {"contact_mu": np.zeros((nworld, nconmax)),
           "contact_friction": np.zeros((nworld, nconmax, 5)),
           "contact_dim": np.zeros((nworld, nconmax), dtype=np.int32),
           "contact_efc_address": np.full((nworld, nconmax), -1, dtype=np.int32),
           "contact_geom": np.full((nworld, nconmax, 2), -1, dtype=np.int32)}
    for w, r in enumerate(recs):
        n = r["nefc"]
        for k in rows:
            if k == "efc_J":
                rows[k][w, :n, :nv] = r[k]
            else:
                rows[k][w, :n] = r[k][:n]
        nc = r["ncon"]
        for k in ("mu", "friction", "dim", "efc_address", "geom"):
            con["contact_" + k][w, :nc] = r["contact"][k][:nc]
    if tamper:
        tamper(rows)
    for k, v in list(rows.items()) + list(con.items()):
        _put(getattr(d, k), v)
    for k in ("ne", "nf", "nl", "nefc", "ncon"):
        _put(getattr(d, k), np.array([r[k] for r in recs], dtype=np.int32))
    _put(d.qacc_warmstart, np.array([r["qacc_warmstart"] for r in recs]))
    for k in ("efc_b", "efc_force", "qfrc_constraint", "qacc"):
        arr = getattr(d, k)
        arr.from_numpy(np.full(arr.shape, np.nan, dtype=arr.to_numpy().dtype))
    for k in ("efc_state", "solver_niter"):
        arr = getattr(d, k)
        shape = arr.shape + tuple(getattr(arr, "element_shape", ()) or ())
        arr.from_numpy(np.full(shape, -7, dtype=np.int32))
    island(m, d)
    solve(m, d)
    return d


def by_islands(mjm, md):
    """Whether MuJoCo's mj_fwdConstraint solved md by islands."""
    return bool(md.nisland) and mjm.opt.noslip_iterations == 0 and \
        not mjm.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_ISLAND and \
        mjm.opt.solver != mujoco.mjtSolver.mjSOL_PGS


def _cone_boundary(r, i):
    """MuJoCo's dual force of elliptic contact row i lies on its cone surface (to
    round-off), where PGS's top-zone/cone state is decided by round-off."""
    con = r["contact"]
    c = r["efc_id"][i]
    adr, dim, mu = con["efc_address"][c], con["dim"][c], con["mu"][c]
    f = r["want"]["efc_force"][adr:adr + dim]
    t = np.linalg.norm(f[1:] / con["friction"][c][:dim - 1])
    return abs(mu * f[0] / mu - t) <= 1e-9 * max(1.0, abs(f[0]))


def compare(m, d, recs, tol, niter=0, stats=False, worlds=None, state_slack=0.0):
    """Asserts every output of every world (or of ``worlds``) within ``tol`` of
    MuJoCo's, scaled by the largest magnitude of each; iteration counts (of each
    island MuJoCo solved, or of the whole world) within ``niter`` (None: not
    compared); with ``stats``, MuJoCo's per-iteration solver statistics (of each
    island). ``state_slack`` (f32 runs): a row's state may differ from MuJoCo's where
    MuJoCo's force lies within that (scaled) of the state boundary. Returns the largest
    scaled error per output and the iteration counts [(tiphys, MuJoCo)] of every
    island."""
    got = {k: d.numpy(k) for k in ("efc_b", "efc_force", "efc_state", "qacc",
                                   "qfrc_constraint", "solver_niter")}
    worst = {}
    iters = []
    for w, r in enumerate(recs):
        if worlds is not None and w not in worlds:
            continue
        n = r["nefc"]
        want = r["want"]
        for k in ("efc_b", "efc_force", "qacc", "qfrc_constraint"):
            ours = got[k][w, :n] if k.startswith("efc") else got[k][w]
            theirs = want[k]
            assert np.all(np.isfinite(ours)), f"world {w} {k}: {ours}"
            scale = max(1.0, float(np.abs(theirs).max(initial=0)))
            err = float(np.abs(ours - theirs).max(initial=0)) / scale
            worst[k] = max(worst.get(k, 0.0), err)
            assert err < tol, f"world {w} {k}: scaled error {err:.3g}\n{ours}\n{theirs}"
        ours_state = got["efc_state"][w, :n]
        for i in np.flatnonzero(ours_state != want["efc_state"]):
            pgs_cone = m.opt.solver == 0 and \
                r["efc_type"][i] == mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC and \
                {ours_state[i], want["efc_state"][i]} == {0, 4} and _cone_boundary(r, i)
            tie = state_slack > 0 and _state_boundary(r, i, state_slack)
            assert pgs_cone or tie, \
                f"world {w} efc_state {ours_state} != {want['efc_state']}"
        np.testing.assert_array_equal(got["solver_niter"][w] >= 0, True)
        nslot = len(want["stats"])
        for slot in range(nslot):
            ours_n, theirs_n = int(got["solver_niter"][w][slot]), \
                int(want["solver_niter"][slot])
            iters.append((ours_n, theirs_n))
            if niter is not None:
                assert abs(ours_n - theirs_n) <= niter, \
                    f"world {w} island {slot}: {ours_n} iterations, MuJoCo {theirs_n}"
        if niter is not None:
            np.testing.assert_array_equal(got["solver_niter"][w][nslot:],
                                          want["solver_niter"][nslot:])
        if stats and n:
            for slot in range(nslot):
                st = solver_stats(m, d, slot)
                ref = want["stats"][slot]
                k = min(int(want["solver_niter"][slot]), st["nactive"].shape[1])
                counts = ("nactive", "nchange", "neval", "nupdate")
                if m.opt.solver == 0 and m.opt.cone == 1:
                    counts = ()  # from dual states, decided by round-off on cone surfaces
                for name in counts:
                    ours_c, theirs_c = st[name][w, :k], ref[name][:k]
                    if name == "neval":
                        # a line search that ends where the slope is round-off (below
                        # 1e-5 of its tolerance) may stop one evaluation apart, and so
                        # may one that ends at the same step as MuJoCo's (the same final
                        # slope to 1e-9: on an Intel Xeon, warmstart Newton's world 1
                        # island 2 took 10 evaluations to MuJoCo's 9 and both ended
                        # with slope 1.18468952e-14)
                        ls_ours, ls_ref = st["lineslope"][w, :k], ref["lineslope"][:k]
                        flat = np.minimum(ls_ours, ls_ref)
                        same = np.isclose(ls_ours, ls_ref, rtol=1e-9, atol=0)
                        near = (np.abs(ours_c - theirs_c) <= 1) & ((flat < LS_FLAT) | same)
                        ours_c = np.where(near, theirs_c, ours_c)
                    np.testing.assert_array_equal(ours_c, theirs_c,
                                                  err_msg=f"world {w} {slot} {name}")
                for name in ("improvement", "gradient"):
                    # improvements are differences of costs: round-off of the largest
                    a, b = st[name][w, :k], ref[name][:k]
                    atol = 1e-11 + 1e-13 * float(np.abs(b).max(initial=0))
                    np.testing.assert_allclose(a, b, rtol=1e-6, atol=atol,
                                               err_msg=f"world {w} {slot} {name}")
    return worst, iters


# lineslope (|slope| at the step found, scaled as the line search's tolerance
# tolerance * ls_tolerance = 1e-10) below which the slope is round-off
LS_FLAT = 1e-15


def _state_boundary(r, i, slack):
    """Row i's force (MuJoCo's) within ``slack`` (scaled by the largest force) of where
    its state changes: zero, or the friction-loss bound."""
    f = r["want"]["efc_force"]
    eps = slack * max(1.0, float(np.abs(f).max(initial=0)))
    bound = abs(float(r["efc_frictionloss"][i])) if "efc_frictionloss" in r else 0.0
    return abs(f[i]) <= eps or (bound > 0 and abs(abs(f[i]) - bound) <= eps)


def run_both(m, mjm, qpos, qvel, warmstart=None, **kw):
    recs = mujoco_rows(mjm, qpos, qvel, warmstart)
    d = tiphys_solve(m, recs, qpos, qvel, **kw)
    return d, recs


# ---------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------

def _contact_model(solver, cone, condim, **opt):
    return load_xml(CONTACT_XML, solver=solver, cone=cone, condim=condim,
                    impratio="1" if cone == "pyramidal" else "3", **opt)


@pytest.mark.parametrize("island", ISLAND_FLAGS)
@pytest.mark.parametrize("condim", [1, 3, 4, 6])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_contacts_match_mujoco_iteration_by_iteration(solver, cone, condim, island):
    """MuJoCo's default tolerance and iterations, with and without islands: the same
    iterates, so the same iteration counts and per-iteration statistics (per island
    for CG and Newton with islands), and outputs to round-off. World 0 has no rows at
    all."""
    m, mjm = _contact_model(solver, cone, condim, tolerance="1e-8", iterations="100",
                            island=island)
    qpos, qvel = contact_state(mjm, f"contacts {solver} {cone} {condim}")
    d, recs = run_both(m, mjm, qpos, qvel)
    assert recs[0]["nefc"] == 0 and all(r["nefc"] > 0 for r in recs[1:])
    if cone == "elliptic" and condim > 1:
        assert all((r["efc_type"] == mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC).any()
                   for r in recs[1:])
    if island == "enable":
        assert max(r["want"]["nisland"] for r in recs) >= 2
    compare(m, d, recs, 1e-9, niter=0, stats=True)


# Newton converges to round-off; CG and PGS stop when an improvement falls below
# 1e-12 of the cost scale, which is the cost's own round-off, while CG's scaled
# gradient is still ~1e-6: the two engines may stop one iteration apart there.
CONVERGED_TOL = {"Newton": 1e-9, "CG": 1e-5, "PGS": 1e-6}


@pytest.mark.parametrize("condim", [1, 3, 4, 6])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_contacts_converged_solution_matches_mujoco(solver, cone, condim):
    """tolerance 1e-12: both engines run to convergence (see CONVERGED_TOL). The line
    search's own tolerance (1e-14 of the search length) is then at round-off, and so
    is when the last iterations stop improving: MuJoCo's own iteration count moves
    under 1e-14 kicks of qpos (CG, elliptic, condim 4: 119 or 125). Each island's
    count must lie within one of the counts MuJoCo gives under such kicks."""
    m, mjm = _contact_model(solver, cone, condim, tolerance="1e-12",
                            iterations="2000" if solver == "PGS" else "200")
    qpos, qvel = contact_state(mjm, f"converged {solver} {cone} {condim}", free_world=2)
    d, recs = run_both(m, mjm, qpos, qvel)
    assert recs[2]["nefc"] == 0
    iters = compare(m, d, recs, CONVERGED_TOL[solver], niter=None)[1]
    spread = _kicked_niter(mjm, qpos, qvel, recs)
    for (ours, _), (world, slot) in zip(iters, _slots(recs)):
        low, high = spread[world, slot]
        assert low - 1 <= ours <= high + 1, \
            f"world {world} island {slot}: {ours} iterations, MuJoCo {low}..{high} " \
            f"under 1e-14 kicks"


def _slots(recs):
    """(world, island slot) in the order compare() lists iteration counts."""
    return [(w, slot) for w, r in enumerate(recs) for slot in range(len(r["want"]["stats"]))]


def _kicked_niter(mjm, qpos, qvel, recs, nkick=12, seed=0):
    """{(world, slot): (fewest, most)} iterations of MuJoCo's solver over ``recs``'s
    state and ``nkick`` copies of it with qpos kicked by 1e-14 (relative); kicks that
    change a world's rows are left out."""
    rng = np.random.default_rng(seed)
    out = {key: [int(recs[key[0]]["want"]["solver_niter"][key[1]])] * 2
           for key in _slots(recs)}
    for _ in range(nkick):
        kicked = mujoco_rows(mjm, qpos * (1 + 1e-14 * rng.standard_normal(qpos.shape)),
                             qvel)
        for (w, slot), span in out.items():
            if kicked[w]["nefc"] == recs[w]["nefc"]:
                n = int(kicked[w]["want"]["solver_niter"][slot])
                span[0], span[1] = min(span[0], n), max(span[1], n)
    return out


@pytest.mark.parametrize("island", ISLAND_FLAGS)
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_limits_frictionloss_tendon_match_mujoco(solver, cone, island):
    """Hinge, slide, ball and tendon limits, dof and tendon frictionloss, a contact
    (with islands: the pendulum's, the box's on the floor)."""
    m, mjm = load_xml(JOINT_XML, solver=solver, cone=cone, condim=3, tolerance="1e-8",
                      iterations="100", island=island)
    qpos, qvel = joint_state(mjm, f"joints {solver} {cone}")
    d, recs = run_both(m, mjm, qpos, qvel)
    types = set(np.concatenate([r["efc_type"] for r in recs]).tolist())
    T = mujoco.mjtConstraint
    assert {T.mjCNSTR_FRICTION_DOF, T.mjCNSTR_FRICTION_TENDON, T.mjCNSTR_LIMIT_JOINT,
            T.mjCNSTR_LIMIT_TENDON} <= types
    assert any(r["ncon"] for r in recs)
    compare(m, d, recs, 1e-9, niter=0, stats=True)


@pytest.mark.parametrize("island", ISLAND_FLAGS)
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_equalities_match_mujoco(solver, cone, island):
    """Connect, weld and joint equality rows (always quadratic) with contacts.

    The stiff weld on a light body makes this problem ill-conditioned: CG needs
    ~150 iterations, and although both engines take the same number with the same
    improvements (to 1e-10), round-off in the last iterations moves the forces by
    ~1e-6 of their scale (qacc by ~1e-7); Newton and PGS agree to round-off. With
    islands the weld's body is an island of its own."""
    cg = solver == "CG"
    m, mjm = load_xml(EQUALITY_XML, solver=solver, cone=cone, condim=4, tolerance="1e-8",
                      iterations="1000" if cg else "100", island=island)
    qpos, qvel = equality_state(mjm, f"equality {solver} {cone}")
    d, recs = run_both(m, mjm, qpos, qvel)
    assert all(r["ne"] == 3 + 6 + 1 and r["ncon"] for r in recs)
    compare(m, d, recs, 1e-5 if cg else 1e-9, niter=1 if cg else 0, stats=not cg)


@pytest.mark.parametrize("island", ISLAND_FLAGS)
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_humanoid_matches_mujoco(solver, cone, island):
    """The gym humanoid in the floor with joints beyond their limits (its own
    iterations="50" caps PGS and CG); one tree, so one island with islands on."""
    m, mjm = load_humanoid(solver=solver, cone=cone, jacobian="dense",
                           flags={"island": island})
    qpos, qvel = humanoid_state(mjm, "humanoid")
    d, recs = run_both(m, mjm, qpos, qvel)
    assert all(r["nl"] and r["ncon"] for r in recs)
    compare(m, d, recs, 1e-9, niter=0, stats=True)


@pytest.mark.parametrize("model", ["contacts", "joints", "humanoid"])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_pgs_dense_and_matrix_free_rows_match_mujoco(model, cone, monkeypatch):
    """PGS sweeps a world of at most PGS_DENSE rows on its AR matrix (as mj_solPGS) and
    a larger one matrix-free. With the limit set between the worlds' row counts, both
    kinds run in one batch, and both match MuJoCo iteration by iteration; each world
    also matches itself solved the other way (to round-off: another summation)."""
    import tiphys.kernels.solver as solver_kernels
    if model == "contacts":
        m, mjm = _contact_model("PGS", cone, 4, tolerance="1e-8", iterations="100")
        qpos, qvel = contact_state(mjm, f"pgs rows {cone}")
    elif model == "joints":
        m, mjm = load_xml(JOINT_XML, solver="PGS", cone=cone, condim=3, tolerance="1e-8",
                          iterations="100")
        qpos, qvel = joint_state(mjm, f"pgs rows {cone}")
    else:
        m, mjm = load_humanoid(solver="PGS", cone=cone, jacobian="dense")
        qpos, qvel = humanoid_state(mjm, "humanoid")
    recs = mujoco_rows(mjm, qpos, qvel)
    counts = sorted({r["nefc"] for r in recs if r["nefc"]})
    assert len(counts) >= 2, counts
    outputs = []
    for limit in (counts[-1], counts[0], 0):  # all dense; mixed; all matrix-free
        monkeypatch.setattr(solver_kernels, "PGS_DENSE", limit)
        d = tiphys_solve(m, recs, qpos, qvel)
        compare(m, d, recs, 1e-9, niter=0, stats=True)
        assert d.scratch.solver["ndense"] == min(d.njmax, limit)
        outputs.append(d.numpy("efc_force"))
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=0, atol=1e-9 * max(
        1.0, np.abs(outputs[0]).max()))
    np.testing.assert_allclose(outputs[2], outputs[0], rtol=0, atol=1e-9 * max(
        1.0, np.abs(outputs[0]).max()))


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("solver", ["Newton", "CG"])
def test_islands_solved_apart_match_mujoco(solver, cone):
    """MuJoCo's default options and flags: three bodies on the floor make up to three
    islands per world, each solved with its own scale (1 / its M diagonal sum),
    iterations (solver_niter[island]) and statistics; every one matches MuJoCo's, and
    the same model with islands off takes other iterates (so the islands are not
    solved as one system by accident)."""
    m, mjm = _contact_model(solver, cone, 3, tolerance="1e-8", iterations="100",
                            island="enable")
    qpos, qvel = contact_state(mjm, f"islands {solver} {cone}", free_world=-1)
    d, recs = run_both(m, mjm, qpos, qvel)
    assert min(r["want"]["nisland"] for r in recs) >= 1
    assert sum(r["want"]["nisland"] >= 2 for r in recs) >= 3
    compare(m, d, recs, 1e-9, niter=0, stats=True)
    off, mjm_off = _contact_model(solver, cone, 3, tolerance="1e-8", iterations="100",
                                  island="disable")
    d_off, recs_off = run_both(off, mjm_off, qpos, qvel)
    compare(off, d_off, recs_off, 1e-9, niter=0, stats=solver == "Newton")
    assert d.numpy("solver_niter")[:, 1].any()
    assert not d_off.numpy("solver_niter")[:, 1:].any()
    assert not np.array_equal(d.numpy("qacc"), d_off.numpy("qacc"))


@pytest.mark.parametrize("solver", SOLVERS)
def test_warmstart_matches_mujoco(solver):
    """qacc_warmstart near the solution (kept: fewer iterations), far from it (cost
    above qacc_smooth's: dropped), and the warmstart disable flag. In world 0 the
    ball is in the air: with islands its dofs are in none and start (and end) at
    qacc_smooth even where the warm start is kept. CG's statistics are not compared
    from the near start: its iterates there amplify round-off (gradients ~1e-5
    apart relative, outputs still within 1e-10)."""
    m, mjm = _contact_model(solver, "elliptic", 3, tolerance="1e-8", iterations="100")
    qpos, qvel = contact_state(mjm, f"warmstart {solver}", nworld=3, free_world=-1)
    qpos[0, 16] += 1.0
    solved = np.array([r["want"]["qacc"] for r in mujoco_rows(mjm, qpos, qvel)])
    rng = np.random.default_rng(zlib.crc32(b"warmstart"))
    near = solved + rng.normal(scale=1e-3, size=solved.shape)
    far = solved + rng.normal(scale=1e3, size=solved.shape)
    d, recs_near = run_both(m, mjm, qpos, qvel, warmstart=near)
    compare(m, d, recs_near, 1e-9, niter=0, stats=solver != "CG")
    assert (d.numpy("dof_island")[0, 12:] == -1).all() and d.numpy("nisland")[0] >= 1
    np.testing.assert_array_equal(d.numpy("qacc")[0, 12:], d.numpy("qacc_smooth")[0, 12:])
    d, recs_far = run_both(m, mjm, qpos, qvel, warmstart=far)
    compare(m, d, recs_far, 1e-9, niter=0, stats=True)
    m_cold, mjm_cold = _contact_model(solver, "elliptic", 3, tolerance="1e-8",
                                      iterations="100", warmstart="disable")
    d, recs_cold = run_both(m_cold, mjm_cold, qpos, qvel, warmstart=near)
    compare(m_cold, d, recs_cold, 1e-9, niter=0, stats=True)
    near_iters = sum(r["want"]["solver_niter"].sum() for r in recs_near)
    cold_iters = sum(r["want"]["solver_niter"].sum() for r in recs_cold)
    assert near_iters < cold_iters
    assert [r["want"]["solver_niter"].tolist() for r in recs_far] == \
        [r["want"]["solver_niter"].tolist() for r in recs_cold]


@pytest.mark.parametrize("solver", SOLVERS)
def test_nan_in_one_world_leaves_the_others(solver):
    m, mjm = _contact_model(solver, "elliptic", 4, tolerance="1e-8", iterations="100")
    qpos, qvel = contact_state(mjm, f"nan {solver}", free_world=-1)
    recs = mujoco_rows(mjm, qpos, qvel)

    def poison(rows):
        rows["efc_aref"][1, :recs[1]["nefc"]] = np.nan

    d = tiphys_solve(m, recs, qpos, qvel, tamper=poison)
    compare(m, d, recs, 1e-9, niter=0, worlds=(0, 2, 3))
    niter = d.numpy("solver_niter")[1]
    assert 0 <= niter.min() <= niter.max() <= 100


# f32 against MuJoCo's f64. Newton converges quadratically to the f32 solution (~1e-6).
# CG and PGS stop when the scaled cost improvement falls below tolerance: in f32 the
# cost itself is only resolved to ~1e-7 of its size, so improvements drop to zero
# while CG's scaled gradient is still ~1e-2 (measured: CG ~1e-3 from MuJoCo's answer,
# PGS ~4e-5).
F32_TOL = {"Newton": 2e-5, "PGS": 5e-4, "CG": 1e-2}


def _f32_errors():
    """Run in a subprocess (Taichi's precision is per process): contacts, limits and
    frictionloss in f32, each solver and cone; largest scaled errors."""
    tiphys.init(arch="cpu", precision="f32")
    out = {}
    for solver in SOLVERS:
        for cone in ("pyramidal", "elliptic"):
            m, mjm = load_xml(JOINT_XML, solver=solver, cone=cone, condim=3,
                              tolerance="1e-8", iterations="100")
            qpos, qvel = joint_state(mjm, f"f32 {solver} {cone}")
            d, recs = run_both(m, mjm, qpos, qvel)
            worst, iters = compare(m, d, recs, 1.0, niter=None,
                                   state_slack=F32_TOL[solver])
            out[f"{solver} {cone}"] = worst
    return out


def test_solver_f32_matches_mujoco_to_single_precision():
    res = subproc.run([os.path.abspath(__file__), "f32"], key="cpu-f32", cwd=HERE)
    assert res.returncode == 0, res.stderr[-3000:]
    errors = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(errors) == 6
    for case, worst in errors.items():
        for k, err in worst.items():
            assert err < F32_TOL[case.split()[0]], f"{case} {k}: scaled error {err}"


if __name__ == "__main__" and sys.argv[1:] == ["f32"]:
    print(json.dumps(_f32_errors()))
