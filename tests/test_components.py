"""MuJoCo's components and the remaining sub-components and support functions:
mj_fwdKinematics, mj_fwdPosition, mj_fwdVelocity, mj_RungeKutta, mj_implicit,
mj_invPosition, mj_invVelocity, mj_invConstraint, mj_subtreeVel, mj_mulM2,
mj_solveM2, mj_addM, mj_addContact, against MuJoCo's function of the same name on
several worlds at different random states (outputs poisoned with NaN first)."""
import mujoco
import numpy as np
import pytest

import tiphys
from test_support import XML, _close, _random_state, _start

NWORLD = 3


@pytest.fixture(scope="module")
def setup():
    m = tiphys.load_model_from_string(XML)
    mjm = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(5)
    state = _random_state(mjm, rng)
    d, mds = _start(m, mjm, *state)
    return m, mjm, d, mds, state


def test_mul_m2_and_solve_m2_match_mujoco(setup):
    m, mjm, d, mds, _ = setup
    rng = np.random.default_rng(1)
    vec = rng.normal(size=(NWORLD, mjm.nv))
    res = np.full((NWORLD, mjm.nv), np.nan)
    x = np.full((NWORLD, mjm.nv), np.nan)
    tiphys.mul_m2(m, d, res, vec)
    tiphys.solve_m2(m, d, x, vec)
    for w, md in enumerate(mds):
        want = np.zeros(mjm.nv)
        mujoco.mj_mulM2(mjm, md, want, vec[w])
        _close(res[w], want, msg="mul_m2")
        want = np.zeros((1, mjm.nv))
        mujoco.mj_solveM2(mjm, md, want, vec[w:w + 1].copy(),
                          np.sqrt(md.qLDiagInv).reshape(1, -1))
        _close(x[w], want[0], msg="solve_m2")
        # the halves compose: |mul_m2 v|^2 = v'Mv and |solve_m2 v|^2 = v' inv(M) v
        M = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, M, md.qM)
        _close(res[w] @ res[w], vec[w] @ M @ vec[w])
        _close(x[w] @ x[w], vec[w] @ np.linalg.solve(M, vec[w]))
    # in place, as mj_solveM2 allows x == y
    y = vec.copy()
    tiphys.solve_m2(m, d, y, y)
    _close(y, x)


def test_add_m_matches_mujoco_dense(setup):
    m, mjm, d, mds, _ = setup
    rng = np.random.default_rng(2)
    dst = rng.normal(size=(NWORLD, mjm.nv, mjm.nv))
    want = dst.copy()
    out = tiphys.add_m(m, d, dst)
    assert out is dst
    for w, md in enumerate(mds):
        # mj_addM's dense form (all int* NULL) adds M's lower triangle; the Python
        # binding takes only the sparse form, so the reference is mj_fullM's tril
        M = np.zeros((mjm.nv, mjm.nv))
        mujoco.mj_fullM(mjm, M, md.qM)
        _close(dst[w], want[w] + np.tril(M), msg="add_m")
    with pytest.raises(ValueError, match="nworld, nv, nv"):
        tiphys.add_m(m, d, np.zeros((NWORLD, mjm.nv)))


def _user_contacts(mjm, mds):
    """One user contact in world 0 and two in world 2: a sphere touching the
    pendulum and the box, condim 3, 4 and 1."""
    rng = np.random.default_rng(3)
    out = []
    for w, geoms, dim in ((0, (1, 3), 3), (2, (2, 4), 4), (2, (1, 2), 1)):
        normal = rng.normal(size=3)
        normal /= np.linalg.norm(normal)
        tangent = np.cross(normal, rng.normal(size=3))
        tangent /= np.linalg.norm(tangent)
        frame = np.array([normal, tangent, np.cross(normal, tangent)])
        out.append(dict(world=w, geom=geoms, pos=mds[w].geom_xpos[geoms[0]] + 0.01,
                        frame=frame, dist=-0.003, dim=dim,
                        friction=(0.8, 0.8, 0.01, 1e-4, 1e-4), solref=(0.02, 1),
                        solreffriction=(0, 0), solimp=(0.9, 0.95, 0.001, 0.5, 2),
                        includemargin=0.0))
    return out


def test_add_contact_then_make_constraint_matches_mujoco(setup):
    m, mjm, d, mds, state = setup
    contacts = _user_contacts(mjm, mds)
    tiphys.collision(m, d)
    before = d.numpy("ncon").copy()
    status = tiphys.add_contact(
        m, d, [c["world"] for c in contacts], [c["geom"] for c in contacts],
        [c["pos"] for c in contacts], [c["frame"] for c in contacts],
        [c["dist"] for c in contacts], [c["dim"] for c in contacts],
        [c["friction"] for c in contacts], [c["solref"] for c in contacts],
        [c["solreffriction"] for c in contacts], [c["solimp"] for c in contacts],
        [c["includemargin"] for c in contacts])
    assert status.tolist() == [0, 0, 0]
    assert (d.numpy("ncon") - before).tolist() == [1, 0, 2]
    tiphys.make_constraint(m, d)
    nefc = d.numpy("nefc")
    efc_J, efc_pos = d.numpy("efc_J"), d.numpy("efc_pos")
    for w, md in enumerate(_mj_copy(mjm, mds)):
        mujoco.mj_forward(mjm, md)
        mujoco.mj_collision(mjm, md)
        for c in (c for c in contacts if c["world"] == w):
            con = mujoco.MjContact()
            con.geom[:] = c["geom"]
            con.geom1, con.geom2 = c["geom"]
            con.flex[:] = con.elem[:] = con.vert[:] = -1
            con.pos[:] = c["pos"]
            con.frame[:] = np.asarray(c["frame"]).reshape(-1)
            con.dist, con.dim, con.includemargin = c["dist"], c["dim"], c["includemargin"]
            con.friction[:], con.solref[:] = c["friction"], c["solref"]
            con.solreffriction[:], con.solimp[:] = c["solreffriction"], c["solimp"]
            con.mu = c["friction"][0]
            assert mujoco.mj_addContact(mjm, md, con) == 0
        mujoco.mj_makeConstraint(mjm, md)
        assert md.ncon == d.numpy("ncon")[w] and md.nefc == nefc[w], w
        _close(efc_J[w, :md.nefc], md.efc_J.reshape(md.nefc, mjm.nv), msg="efc_J")
        _close(efc_pos[w, :md.nefc], md.efc_pos, msg="efc_pos")
        for name in ("dist", "pos", "frame", "friction", "solimp", "dim", "geom"):
            ours = d.numpy("contact_" + name)[w, :md.ncon]
            _close(ours, np.array([getattr(cc, name) for cc in md.contact]).reshape(
                ours.shape), msg=name)
    tiphys.forward(m, d)  # restore the fixture's state for later tests


def test_add_contact_reports_a_full_buffer_and_bad_input(setup):
    m, mjm, _, _, state = setup
    d = tiphys.make_data(m, 2, nconmax=2)
    frame = np.eye(3)
    status = tiphys.add_contact(m, d, [0, 0, 0, 1], [(1, 2)] * 4, np.zeros((4, 3)),
                                [frame] * 4, -0.01)
    assert status.tolist() == [0, 0, 1, 0]
    assert d.numpy("ncon").tolist() == [2, 1]
    assert d.numpy("warning_number")[:, 1].tolist() == [1, 0]
    assert d.numpy("contact_overflow").tolist() == [1, 0]
    with pytest.raises(IndexError, match="world"):
        tiphys.add_contact(m, d, [2], [(1, 2)], [np.zeros(3)], [frame], 0.0)
    with pytest.raises(ValueError, match="geom"):
        tiphys.add_contact(m, d, [0], [(1, 99)], [np.zeros(3)], [frame], 0.0)
    with pytest.raises(ValueError, match="dim"):
        tiphys.add_contact(m, d, [0], [(1, 2)], [np.zeros(3)], [frame], 0.0, dim=2)
    with pytest.raises(ValueError, match="finite"):
        tiphys.add_contact(m, d, [0], [(1, 2)], [np.full(3, np.nan)], [frame], 0.0)


def _poison(d, names):
    for name in names:
        getattr(d, name).fill(np.nan)


def _mj_copy(mjm, mds):
    out = []
    for md in mds:
        c = mujoco.MjData(mjm)
        c.qpos[:], c.qvel[:], c.act[:], c.ctrl[:] = md.qpos, md.qvel, md.act, md.ctrl
        c.qacc[:], c.time = md.qacc, md.time
        out.append(c)
    return out


def test_fwd_kinematics_position_velocity_match_mujoco(setup):
    m, mjm, d, mds, _ = setup
    checks = (
        (tiphys.fwd_kinematics, mujoco.mj_fwdKinematics,
         ("xpos", "xquat", "xmat", "xipos", "geom_xpos", "site_xpos", "cam_xpos",
          "subtree_com", "cdof", "cinert", "ten_length")),
        (tiphys.fwd_position, mujoco.mj_fwdPosition,
         ("xpos", "qM", "qLDiagInv", "actuator_length", "efc_pos", "efc_D")),
        (tiphys.fwd_velocity, mujoco.mj_fwdVelocity,
         ("cvel", "cdof_dot", "qfrc_bias", "qfrc_passive", "actuator_velocity",
          "efc_vel", "efc_aref")),
    )
    for ours, theirs, fields in checks:
        _poison(d, [f for f in fields if not f.startswith("efc_")])
        ours(m, d)
        nefc = d.numpy("nefc")
        for w, md in enumerate(mds):
            theirs(mjm, md)
            assert nefc[w] == md.nefc
            for f in fields:
                got = d.numpy(f)[w]
                want = np.asarray(getattr(md, f))
                if f.startswith("efc_"):
                    got = got[:md.nefc]
                _close(got, want, msg=f"{ours.__name__}: {f}")


def test_runge_kutta_and_implicit_match_mujoco(setup):
    m, mjm, d, mds, state = setup
    with pytest.raises(ValueError, match="N=4"):
        tiphys.runge_kutta(m, d, 3)
    with pytest.raises(ValueError, match="implicit or implicitfast"):
        tiphys.implicit(m, d)  # the model's integrator is Euler
    for integrator, ours, theirs in (
            ("RK4", lambda m_, d_: tiphys.runge_kutta(m_, d_, 4),
             lambda mm, md: mujoco.mj_RungeKutta(mm, md, 4)),
            ("implicitfast", tiphys.implicit, mujoco.mj_implicit),
            ("implicit", tiphys.implicit, mujoco.mj_implicit)):
        xml = XML.replace('<option timestep="0.005"',
                          f'<option integrator="{integrator}" timestep="0.005"')
        mi = tiphys.load_model_from_string(xml)
        mjmi = mujoco.MjModel.from_xml_string(xml)
        di, mdsi = _start(mi, mjmi, *state)
        ours(mi, di)
        for w, md in enumerate(mdsi):
            theirs(mjmi, md)
            for f in ("qpos", "qvel", "act", "time"):
                _close(di.numpy(f)[w], getattr(md, f), tol=1e-9, msg=f"{integrator}: {f}")


def test_inverse_components_constraint_update_and_projection_match_mujoco(setup):
    m, mjm, d, mds, _ = setup
    rng = np.random.default_rng(4)
    qacc = rng.normal(size=(NWORLD, mjm.nv))
    mine = _mj_copy(mjm, mds)
    tiphys.inv_position(m, d)
    tiphys.inv_velocity(m, d)
    d.qacc.from_numpy(qacc)
    _poison(d, ("efc_force", "qfrc_constraint"))
    tiphys.inv_constraint(m, d)
    nefc = d.numpy("nefc")
    for w, md in enumerate(mine):
        mujoco.mj_invPosition(mjm, md)
        mujoco.mj_invVelocity(mjm, md)
        md.qacc[:] = qacc[w]
        mujoco.mj_invConstraint(mjm, md)
        assert nefc[w] == md.nefc
        _close(d.numpy("efc_force")[w, :md.nefc], md.efc_force, msg="inv_constraint")
        assert d.numpy("efc_state")[w, :md.nefc].tolist() == md.efc_state.tolist()
        _close(d.numpy("qfrc_constraint")[w], md.qfrc_constraint, msg="inv_constraint")
    # constraint_update from a jar of our choosing
    jar = rng.normal(scale=0.5, size=(NWORLD, d.njmax))
    _poison(d, ("efc_force", "qfrc_constraint"))
    cost = tiphys.constraint_update(m, d, jar)
    for w, md in enumerate(mine):
        want = np.zeros(1)
        mujoco.mj_constraintUpdate(mjm, md, jar[w, :md.nefc].copy(), want.reshape(1, 1), 0)
        _close(cost[w], want[0], msg="cost")
        _close(d.numpy("efc_force")[w, :md.nefc], md.efc_force, msg="constraint_update")
        assert d.numpy("efc_state")[w, :md.nefc].tolist() == md.efc_state.tolist()
        _close(d.numpy("qfrc_constraint")[w], md.qfrc_constraint, msg="constraint_update")
    with pytest.raises(ValueError, match="njmax"):
        tiphys.constraint_update(m, d, jar[:, :2])
    with pytest.raises(NotImplementedError, match="flg_coneHessian"):
        tiphys.constraint_update(m, d, jar, flg_cone_hessian=True)
    # efc_AR
    ar = tiphys.project_constraint(m, d)
    pgs = mujoco.MjModel.from_xml_string(XML)
    pgs.opt.solver = mujoco.mjtSolver.mjSOL_PGS  # MuJoCo allocates efc_AR for PGS only
    for w, md in enumerate(_mj_copy(pgs, mine)):
        mujoco.mj_forward(pgs, md)
        mujoco.mj_projectConstraint(pgs, md)
        n = md.nefc
        _close(ar[w, :n, :n], md.efc_AR.reshape(n, n), tol=1e-10, msg="efc_AR")
        assert not ar[w, n:].any() and not ar[w, :, n:].any()
    tiphys.forward(m, d)  # restore the fixture's state for later tests


def test_subtree_vel_matches_mujoco(setup):
    m, mjm, d, mds, _ = setup
    _poison(d, ("subtree_linvel", "subtree_angmom"))
    tiphys.subtree_vel(m, d)
    for w, md in enumerate(mds):
        mujoco.mj_subtreeVel(mjm, md)
        _close(d.numpy("subtree_linvel")[w], md.subtree_linvel, msg="subtree_linvel")
        _close(d.numpy("subtree_angmom")[w], md.subtree_angmom, msg="subtree_angmom")
