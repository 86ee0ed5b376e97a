"""The noslip solver (kernels/noslip.py) against MuJoCo's mj_forward / mj_step with
opt.noslip_iterations > 0.

Both engines run the whole forward pass on the same state: the main solver (Newton,
CG or PGS, pyramidal or elliptic cones) to tolerance 1e-10, so that both take the
same iterates (tests/test_solver.py), then noslip from those forces. With noslip
MuJoCo solves each world whole even with islands on (its default, kept here; one
case also runs without): islands then only make the dofs in no island start from
qacc_smooth. Outputs are poisoned first
(NaN, -7). Compared per world, scaled by the largest magnitude of each: efc_force,
qfrc_constraint, qacc (1e-9; measured <= 5e-14), efc_state (dual states, up to those
decided by round-off: see _round_off_state), solver_niter (main + noslip sweeps: the
noslip_tolerance stopping rule) and the per-iteration statistics, noslip's after the
main solver's. Each case also checks that noslip moved MuJoCo's forces, so the
comparison is not the main solver's twice.
"""
import json
import os
import sys
import zlib

import mujoco
import numpy as np
import pytest
from lxml import etree

import subproc
import tiphys
from oracle import corpus_dir, load_pair_from_xml, strip_later_sections
from tiphys.kernels.solver import solver_stats

HERE = os.path.dirname(os.path.abspath(__file__))
SOLVERS = ("Newton", "CG", "PGS")
CONES = ("pyramidal", "elliptic")
NWORLD = 4
SLOPE = 20.0  # degrees; friction 0.8 > tan(20 deg): every body could stick
NSTEP = 100  # creep trajectories

# free bodies on a slope (box condim 3, capsule condim 4, ball condim 6, a frictionless
# pebble: condim 1 by priority over the slope's 3) and, out of their way, an arm with
# dof and tendon friction loss and joint limits
SCENE = """
<mujoco>
  <option solver="{solver}" cone="{cone}" tolerance="1e-10" iterations="{iterations}"
          noslip_iterations="{noslip}" noslip_tolerance="{noslip_tolerance}"
          timestep="{timestep}">
    <flag island="{island}"/>
  </option>
  <worldbody>
    <geom name="slope" type="plane" size="3 3 .1" euler="0 {slope} 0" friction=".8"/>
    <body name="box" pos="{bx} 0 {bz}" euler="0 {slope} 0">
      <freejoint/><geom type="box" size=".1 .08 .05" condim="3"/>
    </body>
    {others}
  </worldbody>
  {tendon}
</mujoco>
"""
OTHERS = """
    <body name="capsule" pos="-.4 .3 .2" euler="90 0 0">
      <freejoint/><geom type="capsule" size=".04 .12" condim="4"/>
    </body>
    <body name="ball" pos=".4 -.3 .2">
      <freejoint/><geom type="sphere" size=".06" condim="6"/>
    </body>
    <body name="pebble" pos="-.3 -.4 .2">
      <freejoint/><geom type="sphere" size=".03" condim="1" priority="1"/>
    </body>
    <body pos="0 1.5 1.2">
      <joint name="h1" type="hinge" axis="0 1 0" range="-60 60" frictionloss=".3"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".04" contype="0"
            conaffinity="0"/>
      <body pos="0 0 -.4">
        <joint name="s1" type="slide" axis="0 0 1" range="-.1 .1" frictionloss=".5"/>
        <joint name="h2" type="hinge" axis="1 0 0" range="-30 45" frictionloss=".1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".04" contype="0"
              conaffinity="0"/>
      </body>
    </body>
"""
TENDON = """
  <tendon>
    <fixed name="t" frictionloss=".2">
      <joint joint="h1" coef="1"/><joint joint="h2" coef="-1"/>
    </fixed>
  </tendon>
"""

_MODELS = {}


def scene(solver, cone, noslip=20, noslip_tolerance="1e-8", timestep="0.002",
          full=True, island="enable", jacobian=None):
    """tiphys and MuJoCo models of SCENE (compiled once per module); ``full``: with
    the other bodies and the arm, else the box alone."""
    th = np.deg2rad(SLOPE)
    # CG's stopping iteration at 1e-10 is decided by round-off in some states (one
    # more or fewer iteration than MuJoCo, then noslip starts from other forces): cap
    # CG's main solve below its convergence point so both engines run the same count
    iterations = 25 if solver == "CG" else 200
    xml = SCENE.format(solver=solver, cone=cone, noslip=noslip, iterations=iterations,
                       noslip_tolerance=noslip_tolerance, timestep=timestep, slope=SLOPE,
                       bx=0.0499 * np.sin(th), bz=0.0499 * np.cos(th),
                       others=OTHERS if full else "", tendon=TENDON if full else "",
                       island=island)
    if jacobian:
        xml = xml.replace("<option ", f'<option jacobian="{jacobian}" ', 1)
    if xml not in _MODELS:
        _MODELS[xml] = (tiphys.load_model_from_string(xml),
                        mujoco.MjModel.from_xml_string(xml))
    return _MODELS[xml]


def scene_state(mjm, seed, nworld=NWORLD):
    """Bodies dropped on the slope and settled by MuJoCo for a different time per
    world, then random velocities; arm joints around and beyond their limits."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    md = mujoco.MjData(mjm)
    qpos = np.zeros((nworld, mjm.nq))
    qvel = np.zeros((nworld, mjm.nv))
    for w in range(nworld):
        mujoco.mj_resetData(mjm, md)
        md.qvel[:] = rng.normal(scale=0.3, size=mjm.nv)
        for _ in range(60 + 40 * w):
            mujoco.mj_step(mjm, md)
        qpos[w] = md.qpos
        qvel[w] = md.qvel + rng.normal(scale=0.1, size=mjm.nv)
        if mjm.njnt > 1:
            arm = [mjm.jnt_qposadr[mjm.joint(name).id] for name in ("h1", "s1", "h2")]
            qpos[w, arm] = rng.uniform(-1.3, 1.3, 3) * np.array([1.2, 0.12, 0.8])
    return qpos, qvel


def mujoco_forward(mjm, qpos, qvel, warmstart=None):
    """Per world: MuJoCo's outputs of mj_forward, and its forces without noslip."""
    md = mujoco.MjData(mjm)
    out = []
    for w in range(qpos.shape[0]):
        rec = {}
        for noslip in (0, mjm.opt.noslip_iterations):
            saved = mjm.opt.noslip_iterations
            mjm.opt.noslip_iterations = noslip
            mujoco.mj_resetData(mjm, md)
            md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
            if warmstart is not None:
                md.qacc_warmstart[:] = warmstart[w]
            mujoco.mj_forward(mjm, md)
            mjm.opt.noslip_iterations = saved
            if noslip == 0:
                rec["force_soft"] = md.efc_force.copy()
        niter = int(md.solver_niter[0])
        rec.update(nefc=md.nefc, efc_type=md.efc_type.copy(), efc_id=md.efc_id.copy(),
                   efc_frictionloss=md.efc_frictionloss.copy(),
                   efc_force=md.efc_force.copy(), efc_state=md.efc_state.copy(),
                   qacc=md.qacc.copy(), qfrc_constraint=md.qfrc_constraint.copy(),
                   solver_niter=niter,
                   stats={k: np.array([getattr(md.solver[i], k)
                                       for i in range(min(200, niter))])
                          for k in ("improvement", "nactive", "nchange")},
                   contact=[(c.efc_address, c.dim, c.mu, c.friction.copy())
                            for c in md.contact[:md.ncon]])
        out.append(rec)
    return out


def tiphys_forward(m, qpos, qvel, warmstart=None):
    d = tiphys.make_data(m, qpos.shape[0])
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    if warmstart is not None:
        d.qacc_warmstart.from_numpy(warmstart)
    for k in ("efc_force", "qfrc_constraint", "qacc"):
        arr = getattr(d, k)
        arr.from_numpy(np.full(arr.shape, np.nan, dtype=arr.to_numpy().dtype))
    for k in ("efc_state", "solver_niter"):
        arr = getattr(d, k)
        shape = arr.shape + tuple(getattr(arr, "element_shape", ()) or ())
        arr.from_numpy(np.full(shape, -7, dtype=np.int32))
    tiphys.forward(m, d)
    return d


def _round_off_state(rec, i, ours):
    """Row i's dual state is decided by round-off: an elliptic contact whose force
    lies on its cone surface ("satisfied" or "cone"), a non-negative row (pyramid
    edge, limit) whose force noslip clamped to zero in one engine and left at
    round-off above it in the other ("satisfied" or "quadratic"), or likewise a
    friction-loss force at its bound ("quadratic" or "linear")."""
    f = rec["efc_force"]
    eps = 1e-9 * max(1.0, np.abs(f).max())
    states = {ours, rec["efc_state"][i]}
    T = mujoco.mjtConstraint
    if rec["efc_type"][i] in (T.mjCNSTR_FRICTION_DOF, T.mjCNSTR_FRICTION_TENDON):
        return states in ({1, 2}, {1, 3}) and \
            abs(abs(f[i]) - rec["efc_frictionloss"][i]) <= eps
    if rec["efc_type"][i] != T.mjCNSTR_CONTACT_ELLIPTIC:
        return states == {0, 1} and abs(f[i]) <= eps
    adr, dim, mu, fric = rec["contact"][rec["efc_id"][i]]
    t = np.linalg.norm(f[adr + 1:adr + dim] / fric[:dim - 1])
    return states == {0, 4} and abs(f[adr] - t) <= 1e-9 * max(1.0, abs(f[adr]))


def compare(m, d, recs, tol=1e-9, stats=True):
    """Asserts every output of every world within ``tol`` of MuJoCo's (scaled by the
    largest magnitude of each); returns the largest scaled error per output and the
    largest change noslip made to MuJoCo's forces."""
    got = {k: d.numpy(k) for k in ("nefc", "efc_force", "efc_state", "qacc",
                                   "qfrc_constraint", "solver_niter")}
    st = solver_stats(m, d) if stats else None
    worst = {}
    moved = 0.0
    for w, r in enumerate(recs):
        n = r["nefc"]
        assert got["nefc"][w] == n, f"world {w}: nefc {got['nefc'][w]} != {n}"
        for k in ("efc_force", "qfrc_constraint", "qacc"):
            ours = got[k][w, :n] if k.startswith("efc") else got[k][w]
            theirs = r[k]
            assert np.all(np.isfinite(ours)), f"world {w} {k}: {ours}"
            scale = max(1.0, float(np.abs(theirs).max(initial=0)))
            err = float(np.abs(ours - theirs).max(initial=0)) / scale
            worst[k] = max(worst.get(k, 0.0), err)
            assert err < tol, f"world {w} {k}: scaled error {err:.3g}\n{ours}\n{theirs}"
        if n:
            moved = max(moved, float(np.abs(r["efc_force"] - r["force_soft"]).max()) /
                        max(1.0, float(np.abs(r["efc_force"]).max())))
        state = got["efc_state"][w, :n]
        flips = np.flatnonzero(state != r["efc_state"])
        for i in flips:
            assert _round_off_state(r, i, state[i]), \
                f"world {w} row {i}: efc_state {state} != {r['efc_state']}"
        assert got["solver_niter"][w][0] == r["solver_niter"], \
            f"world {w}: {got['solver_niter'][w]} iterations, MuJoCo {r['solver_niter']}"
        assert not got["solver_niter"][w][1:].any()
        if stats and n:
            k = min(r["solver_niter"], st["improvement"].shape[1])
            a, b = st["improvement"][w, :k], r["stats"]["improvement"][:k]
            atol = 1e-11 + 1e-13 * float(np.abs(b).max(initial=0))
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=atol,
                                       err_msg=f"world {w} improvement")
            if m.opt.cone == 0 and not len(flips):  # counts of round-off states differ
                for name in ("nactive", "nchange"):
                    np.testing.assert_array_equal(st[name][w, :k], r["stats"][name][:k],
                                                  err_msg=f"world {w} {name}")
    return worst, moved


# ---------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("island", ("enable", "disable"))
@pytest.mark.parametrize("cone", CONES)
@pytest.mark.parametrize("solver", SOLVERS)
def test_noslip_matches_mujoco_on_slope_and_frictionloss(solver, cone, island):
    """Box, capsule, ball and pebble on a slope (every contact dimension: pyramid pairs
    of condim 3, 4 and 6, elliptic QCQPs in 2, 3 and 5 tangent dimensions,
    frictionless rows left alone), dof and tendon friction loss and limits;
    noslip_tolerance 1e-8 stops some worlds before the 20 sweeps."""
    m, mjm = scene(solver, cone, island=island)
    qpos, qvel = scene_state(mjm, f"slope {solver} {cone}")
    recs = mujoco_forward(mjm, qpos, qvel)
    T = mujoco.mjtConstraint
    types = set(np.concatenate([r["efc_type"] for r in recs]).tolist())
    contact = T.mjCNSTR_CONTACT_PYRAMIDAL if cone == "pyramidal" else \
        T.mjCNSTR_CONTACT_ELLIPTIC
    assert {T.mjCNSTR_FRICTION_DOF, T.mjCNSTR_FRICTION_TENDON, T.mjCNSTR_LIMIT_JOINT,
            T.mjCNSTR_CONTACT_FRICTIONLESS, contact} <= types
    dims = {c[1] for r in recs for c in r["contact"]}
    assert dims == {1, 3, 4, 6}
    d = tiphys_forward(m, qpos, qvel)
    worst, moved = compare(m, d, recs)
    assert moved > 1e-3
    sweeps = [r["solver_niter"] - n for r, n in zip(recs, _main_niter(mjm, qpos, qvel))]
    assert min(sweeps) < 20, sweeps  # the tolerance stopped at least one world


@pytest.mark.parametrize("island", ("enable", "disable"))
@pytest.mark.parametrize("cone", CONES)
def test_noslip_on_sparse_jacobians_matches_mujoco(cone, island):
    """The slope scene with jacobian="sparse": noslip (after Newton) reads each row's
    non-zeros; no dense efc_J is allocated."""
    m, mjm = scene("Newton", cone, island=island, jacobian="sparse")
    assert m.is_sparse and mujoco.mj_isSparse(mjm)
    qpos, qvel = scene_state(mjm, f"slope Newton {cone}")
    recs = mujoco_forward(mjm, qpos, qvel)
    d = tiphys_forward(m, qpos, qvel)
    assert d.efc_J.shape == (d.nworld, 1, 1)
    _worst, moved = compare(m, d, recs)
    assert moved > 1e-3


@pytest.mark.parametrize("solver", ("Newton", "CG"))
def test_noslip_with_dofs_in_no_island_matches_mujoco(solver):
    """The pebble lifted off the slope: with islands on, its dofs are in no island,
    and MuJoCo's warm start sets them to qacc_smooth before its whole-world solve
    (CG then takes other iterates than with islands off); a warm start near the
    solution so that it is kept."""
    m, mjm = scene(solver, "pyramidal")
    qpos, qvel = scene_state(mjm, f"slope {solver} pyramidal")
    pebble = mjm.jnt_qposadr[mjm.body("pebble").jntadr[0]]
    qpos[:, pebble + 2] += 1.0
    warm = np.array([r["qacc"] for r in mujoco_forward(mjm, qpos, qvel)]) + 1e-2
    recs = mujoco_forward(mjm, qpos, qvel, warm)
    d = tiphys_forward(m, qpos, qvel, warm)
    assert (d.numpy("nidof") < m.nv).all() and (d.numpy("nisland") > 0).all()
    compare(m, d, recs)


def _main_niter(mjm, qpos, qvel):
    """MuJoCo's main-solver iterations (noslip off) per world, the world solved whole
    as with noslip."""
    saved = mjm.opt.noslip_iterations, mjm.opt.disableflags
    mjm.opt.noslip_iterations = 0
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    md = mujoco.MjData(mjm)
    out = []
    for w in range(qpos.shape[0]):
        md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
        mujoco.mj_forward(mjm, md)
        out.append(int(md.solver_niter[0]))
    mjm.opt.noslip_iterations, mjm.opt.disableflags = saved
    return out


def _corpus_pair(rel, **opt):
    path = os.path.join(corpus_dir(), rel)
    root = etree.fromstring(strip_later_sections(path))
    el = root.find("option")
    if el is None:
        el = etree.Element("option")
        root.insert(0, el)
    for k, v in opt.items():
        el.set(k, v)
    return load_pair_from_xml(path, etree.tostring(root), "noslip")


def _robot_state(mjm, seed, nworld=3):
    """World 0 in the air with joints inside their ranges (no rows: noslip must leave
    it alone); the others with random joint angles, lowered until they touch."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    hinge = [j for j in range(mjm.njnt)
             if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    for j in hinge:
        adr = mjm.jnt_qposadr[j]
        lo, hi = mjm.jnt_range[j]
        qpos[0, adr] = 0.5 * (lo + hi)
        qpos[1:, adr] += rng.uniform(-0.4, 0.4, nworld - 1)
    qpos[0, 2] += 2.0
    qvel = rng.normal(scale=0.5, size=(nworld, mjm.nv))
    md = mujoco.MjData(mjm)
    for w in range(1, nworld):
        for _ in range(60):
            md.qpos[:] = qpos[w]
            mujoco.mj_forward(mjm, md)
            if md.ncon:
                break
            qpos[w, 2] -= 0.05
    return qpos, qvel


@pytest.mark.parametrize("rel,solver,cone", [("gym/ant.xml", "Newton", "pyramidal"),
                                             ("gym/humanoid.xml", "PGS", "elliptic")])
def test_noslip_matches_mujoco_on_corpus_robots(rel, solver, cone):
    """gym ant (Newton, pyramidal) and humanoid (its own PGS, 50 iterations;
    elliptic) touching the floor with noslip, and a world without rows."""
    m, mjm = _corpus_pair(rel, solver=solver, cone=cone, tolerance="1e-10",
                          noslip_iterations="10")
    qpos, qvel = _robot_state(mjm, rel)
    recs = mujoco_forward(mjm, qpos, qvel)
    assert recs[0]["nefc"] == 0 and all(r["contact"] for r in recs[1:])
    d = tiphys_forward(m, qpos, qvel)
    worst, moved = compare(m, d, recs)
    assert moved > 1e-5  # measured: ant 1.2e-4, humanoid 1.9e-3
    np.testing.assert_array_equal(d.numpy("qacc")[0], d.numpy("qacc_smooth")[0])


@pytest.mark.parametrize("cone", CONES)
def test_noslip_removes_creep_on_slope_like_mujoco(cone):
    """A box resting on a 20 degree slope with friction 0.8 creeps down it through
    the soft contacts; with noslip it (nearly) stays. 100 steps of 5 ms in both
    engines, two worlds: tiphys's trajectories match MuJoCo's, and noslip cuts the
    creep (measured along the slope after the landing; MuJoCo: 7e-4 and 3.5e-4 m
    without, 2e-6 m with) by more than 20 times."""
    th = np.deg2rad(SLOPE)
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    creep = {}
    for noslip in (0, 10):
        m, mjm = scene("Newton", cone, noslip=noslip, timestep="0.005", full=False)
        qvel = np.zeros((2, 6))
        qvel[1, :3] = -0.05 * down  # the second world starts sliding up a little
        d = tiphys.make_data(m, 2)
        d.qvel.from_numpy(qvel)
        md = mujoco.MjData(mjm)
        for k in range(NSTEP):
            tiphys.step(m, d)
            if k == 19:
                start = d.numpy("qpos")[:, :3]
        ours = (d.numpy("qpos")[:, :3] - start) @ down
        want = []
        for w in range(2):
            mujoco.mj_resetData(mjm, md)
            md.qvel[:] = qvel[w]
            for k in range(NSTEP):
                mujoco.mj_step(mjm, md)
                if k == 19:
                    x0 = md.qpos[:3].copy()
            want.append((md.qpos[:3] - x0) @ down)
            np.testing.assert_allclose(d.numpy("qpos")[w], md.qpos, rtol=0, atol=1e-8,
                                       err_msg=f"noslip {noslip} world {w}")
        np.testing.assert_allclose(ours, want, rtol=0, atol=1e-8)
        creep[noslip] = np.abs(ours)
    assert np.all(creep[0] > 1e-4), creep
    assert np.all(creep[10] < creep[0] / 20), creep


# f32 against MuJoCo's f64. Noslip's cost 0.5 f'Af + f'b has A = J M^-1 J' without R:
# only semi-definite where contacts are redundant (a box's four corners), so its
# minimizers form a flat valley, and f32 round-off moves the Gauss-Seidel sweeps
# along it: at the same cost (measured <= 2.2e-6 relative over several states) the
# forces differ by up to 3.6e-3 of their scale and qacc by up to 1.6e-3 (the ball's
# spin: small torques over a small inertia). The main solver is Newton or PGS (CG in
# f32: see tests/test_solver.py).
F32_TOL = {"cost": 2e-5, "efc_force": 2e-2, "qacc": 1e-2, "qfrc_constraint": 1e-2}


def _noslip_cost(mjm, qpos, qvel, force):
    """MuJoCo's noslip cost 0.5 (J'f)' M^-1 (J'f) + f'b of ``force`` on a state."""
    md = mujoco.MjData(mjm)
    md.qpos[:], md.qvel[:] = qpos, qvel
    mujoco.mj_forward(mjm, md)
    n = md.nefc
    jtf = md.efc_J.reshape(n, mjm.nv).T @ force[:n]
    minv_jtf = np.zeros(mjm.nv)
    mujoco.mj_solveM(mjm, md, minv_jtf.reshape(1, -1), jtf.reshape(1, -1))
    return 0.5 * jtf @ minv_jtf + force[:n] @ md.efc_b


def _f32_errors(arch):
    """Run in a subprocess (Taichi's precision and arch are per process)."""
    tiphys.init(arch=arch, precision="f32")
    out = {}
    for solver in ("Newton", "PGS"):
        for cone in CONES:
            m, mjm = scene(solver, cone)
            qpos, qvel = scene_state(mjm, f"f32 {solver} {cone}")
            recs = mujoco_forward(mjm, qpos, qvel)
            d = tiphys_forward(m, qpos, qvel)
            got = {k: d.numpy(k).astype(np.float64)
                   for k in ("efc_force", "qacc", "qfrc_constraint")}
            worst = {}
            for w, r in enumerate(recs):
                ours = _noslip_cost(mjm, qpos[w], qvel[w], got["efc_force"][w])
                theirs = _noslip_cost(mjm, qpos[w], qvel[w], r["efc_force"])
                errs = {"cost": abs(ours - theirs) / max(1.0, abs(theirs))}
                for k in ("efc_force", "qacc", "qfrc_constraint"):
                    v = got[k][w, :r["nefc"]] if k == "efc_force" else got[k][w]
                    scale = max(1.0, float(np.abs(r[k]).max(initial=0)))
                    errs[k] = float(np.abs(v - r[k]).max(initial=0)) / scale
                for k, err in errs.items():
                    worst[k] = max(worst.get(k, 0.0), err if np.isfinite(err) else 1e9)
            out[f"{solver} {cone}"] = worst
    return out


def test_noslip_f32_matches_mujoco_to_single_precision():
    res = subproc.run([os.path.abspath(__file__), "f32"], key="cpu-f32", cwd=HERE)
    assert res.returncode == 0, res.stderr[-3000:]
    errors = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(errors) == 4
    for case, worst in errors.items():
        for k, tol in F32_TOL.items():
            assert worst[k] < tol, f"{case} {k}: scaled error {worst[k]}"


if __name__ == "__main__" and sys.argv[1:2] == ["f32"]:
    print(json.dumps(_f32_errors(sys.argv[2] if len(sys.argv) > 2 else "cpu")))
