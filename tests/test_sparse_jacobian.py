"""Sparse constraint Jacobians (efc_J_rownnz / rowadr / colind, efc_J_sparse, nJ, and the
tendons' ten_J_rownnz / rowadr / colind) against MuJoCo 3.4.0 with jacobian="sparse".

Both engines get the same model and random states (several worlds); tiphys runs its
position and velocity stages on every world at once with the sparse outputs poisoned
(-7, NaN) first (test_constraint's harness, which also checks every dense efc field),
MuJoCo runs mj_fwdPosition per world. Row structure and column lists must be equal
exactly; the values to 1e-10 of their world's largest entry.
"""
import copy
import dataclasses
import json
import os
import sys
import warnings
import zlib

import mujoco
import numpy as np
import pytest

import spirv
import subproc
import test_constraint as tc
import tiphys
from oracle import StrippedModel, corpus_dir
from tiphys.kernels.consts import JAC_SPARSE

RTOL = 1e-10
SPARSE_INTS = ("nJ", "efc_J_rownnz", "efc_J_rowadr", "efc_J_colind", "ten_J_rownnz",
               "ten_J_rowadr", "ten_J_colind")


def sparse(xml):
    """The model with jacobian="sparse" forced on its <option>."""
    if "jacobian=" in xml:
        for old in ('jacobian="dense"', 'jacobian="auto"', 'jacobian="{jacobian}"'):
            xml = xml.replace(old, 'jacobian="sparse"')
        return xml
    if "<option" in xml:
        return xml.replace("<option", '<option jacobian="sparse"', 1)
    return xml.replace("<mujoco>", '<mujoco>\n  <option jacobian="sparse"/>', 1)


# spatial tendons wrapping spheres and cylinders (with and without a side site), a
# pulley, between bodies on one chain and on separate trees; limits, friction loss and
# a tendon equality on them; a fixed tendon repeating a dof's chain
WRAPPING = """
<mujoco>
  <option><flag contact="disable"/></option>
  <worldbody>
    <site name="w0" pos="0 0 1.5"/>
    <body name="a" pos="0 0 1">
      <joint name="a1" axis="0 1 0" range="-1 1"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0"/>
      <site name="sa" pos=".05 0 .05"/>
      <body name="a2" pos=".3 0 0">
        <joint name="a2" axis="0 1 0"/>
        <geom name="wrap_s" size=".08"/>
        <site name="side" pos="0 0 .2"/>
        <body name="a3" pos=".3 0 0">
          <joint name="a3" axis="0 0 1"/>
          <joint name="a3s" type="slide" axis="1 0 0"/>
          <geom type="capsule" size=".03" fromto="0 0 0 .2 0 0"/>
          <site name="sa3" pos=".2 0 -.05"/>
        </body>
      </body>
    </body>
    <body name="c" pos=".4 .5 1">
      <joint name="c1" type="ball"/>
      <geom name="wrap_c" type="cylinder" size=".06 .1"/>
      <body name="c2" pos="0 .3 0">
        <joint name="c2" axis="1 0 0"/>
        <geom size=".05"/>
        <site name="sc2" pos="0 .05 -.1"/>
      </body>
    </body>
    <body name="f" pos="-.5 0 1">
      <freejoint/>
      <geom type="box" size=".05 .05 .05"/>
      <site name="sf" pos=".05 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="sph" limited="true" range=".3 .62" frictionloss=".2">
      <site site="sa"/><geom geom="wrap_s" sidesite="side"/><site site="sa3"/>
    </spatial>
    <spatial name="cyl" limited="true" range=".5 .9" margin=".2">
      <site site="sa3"/><geom geom="wrap_c"/><site site="sc2"/>
    </spatial>
    <spatial name="pulley" frictionloss=".1">
      <site site="w0"/><site site="sa"/>
      <pulley divisor="2"/>
      <site site="sf"/><geom geom="wrap_s"/><site site="sc2"/>
    </spatial>
    <fixed name="fix" limited="true" range="-.3 .3" frictionloss=".3">
      <joint joint="a3" coef="1"/><joint joint="a1" coef="-.5"/><joint joint="c2" coef="2"/>
    </fixed>
  </tendon>
  <equality>
    <tendon tendon1="sph" tendon2="cyl" polycoef="0 .5 0 0 0"/>
    <tendon tendon1="pulley" tendon2="fix" polycoef="0 1 .1 0 0"/>
    <joint joint1="a3s" joint2="c2" polycoef="0 1 0 0 0"/>
    <connect body1="a3" body2="c2" anchor="0 0 0"/>
  </equality>
</mujoco>
"""

MODELS = {
    "equality": tc.EQUALITY,
    "friction_limits": tc.FRICTION_LIMITS,
    "contacts_pyramidal": tc.contacts_xml("pyramidal", 2.5, "sparse"),
    "contacts_elliptic": tc.contacts_xml("elliptic", 4, "sparse"),
    "combined": tc.COMBINED,
    "wrapping": WRAPPING,
}
SPREAD = {"friction_limits": 0.4, "contacts_pyramidal": 0.12, "contacts_elliptic": 0.12,
          "wrapping": 0.8}
CENTER = {"contacts_pyramidal": (0, 0, 0.05), "contacts_elliptic": (0, 0, 0.05)}


def _poison(d):
    for name in SPARSE_INTS:
        arr = getattr(d, name)
        arr.from_numpy(tc._full(arr, -7))
    d.efc_J_sparse.from_numpy(tc._full(d.efc_J_sparse, np.nan))


def mujoco_sparse(mjm, qpos, qvel, active=None):
    """Per world: MuJoCo's sparse Jacobian (rows, columns, values) and tendon columns."""
    assert mujoco.mj_isSparse(mjm)
    mjd = mujoco.MjData(mjm)
    out = []
    for w in range(len(qpos)):
        mjd.qpos[:] = qpos[w]
        mjd.qvel[:] = qvel[w]
        if active is not None and mjm.neq:
            mjd.eq_active[:] = active[w]
        mujoco.mj_fwdPosition(mjm, mjd)
        n, nnz = mjd.nefc, mjd.nJ
        nten = int(np.sum(mjd.ten_J_rownnz))
        out.append({
            "nefc": n, "nJ": nnz, "efc_J_rownnz": np.array(mjd.efc_J_rownnz[:n]),
            "efc_J_rowadr": np.array(mjd.efc_J_rowadr[:n]),
            "efc_J_colind": np.array(mjd.efc_J_colind[:nnz]),
            "efc_J_sparse": np.array(mjd.efc_J[:nnz]),
            "ten_J_rownnz": np.array(mjd.ten_J_rownnz).copy(),
            "ten_J_rowadr": np.array(mjd.ten_J_rowadr).copy(),
            "ten_J_colind": np.array(mjd.ten_J_colind).reshape(-1)[:nten].copy(),
            "ten_wrapnum": np.array(mjd.ten_wrapnum).copy(),
        })
    return out


def compare_sparse(d, theirs, stats=None, rtol=RTOL):
    """Mismatches of tiphys' sparse fields against MuJoCo's, every world (values to
    ``rtol`` of the world's largest entry)."""
    ours = {k: d.numpy(k) for k in SPARSE_INTS + ("efc_J_sparse", "nefc")}
    errors = []
    for w, t in enumerate(theirs):
        n, nnz = t["nefc"], t["nJ"]
        if int(ours["nefc"][w]) != n or int(ours["nJ"][w]) != nnz:
            errors.append(f"world {w}: nefc/nJ {ours['nefc'][w]}/{ours['nJ'][w]} != "
                          f"{n}/{nnz}")
            continue
        for k, size in (("efc_J_rownnz", n), ("efc_J_rowadr", n), ("efc_J_colind", nnz),
                        ("ten_J_rownnz", None), ("ten_J_rowadr", None),
                        ("ten_J_colind", len(t["ten_J_colind"]))):
            a = ours[k][w] if size is None else ours[k][w][:size]
            if size is None and k.startswith("ten_") and len(t[k]) == 0:
                continue
            if not np.array_equal(a, t[k]):
                i = int(np.argmax(a != t[k])) if a.shape == t[k].shape else -1
                errors.append(f"world {w} {k}: differs at {i} ({a[:12]} != {t[k][:12]})")
        a = np.asarray(ours["efc_J_sparse"][w][:nnz], dtype=np.float64)
        b = t["efc_J_sparse"]
        scale = max(float(np.abs(b).max()) if nnz else 0.0, 1e-300)
        err = np.abs(a - b) / scale
        if nnz and not np.all(err <= rtol):
            i = int(np.argmax(~(err <= rtol)))
            errors.append(f"world {w} efc_J_sparse[{i}]: {a[i]} != {b[i]}")
        if stats is not None:
            stats["rows"] += n
            stats["nnz"] += nnz
            stats["err"] = max(stats["err"], float(err.max()) if nnz else 0.0)
    return errors


def _stats():
    return {"rows": 0, "nnz": 0, "err": 0.0}


@pytest.mark.parametrize("name", list(MODELS))
def test_sparse_rows_match_mujoco(name, report):
    xml = sparse(MODELS[name])
    m, mjm = tc.pair(xml)
    assert m.is_sparse and mujoco.mj_isSparse(mjm)
    qpos, qvel, active = tc.random_state(mjm, zlib.crc32(name.encode()), tc.NWORLD,
                                         SPREAD.get(name, 0.3), CENTER.get(name, (0, 0, 0)))
    d = tiphys.make_data(m, tc.NWORLD)
    _poison(d)
    tc.run_tiphys(m, d, qpos, qvel, active)
    # the dense efc fields, row by row (MuJoCo's sparse J made dense)
    dense = tc.run_mujoco(mjm, qpos, qvel, active)
    ours = tc.fetch(d)
    errors = [e for w in range(tc.NWORLD) for e in tc.compare_world(ours, dense[w], w)]
    assert not errors, errors[:5]
    theirs = mujoco_sparse(mjm, qpos, qvel, active)
    stats = _stats()
    errors = compare_sparse(d, theirs, stats)
    assert not errors, errors[:5]
    report("sparse Jacobian rows", name,
           f"match ({stats['rows']} rows, {stats['nnz']} non-zeros, max err {stats['err']:.1e})")
    # every row type the model makes is there, and rows are narrower than nv
    types = tc._types(dense)
    assert types
    assert all(t["nJ"] < t["nefc"] * mjm.nv for t in theirs if t["nefc"])
    if name == "wrapping":
        assert {0, 2, 4} <= types
        # some worlds wrapped a tendon's path and others did not
        wrapnum = np.array([t["ten_wrapnum"] for t in theirs])
        assert (wrapnum.min(axis=0) < wrapnum.max(axis=0)).any()
    if name.startswith("contacts"):
        assert {5, 6 if name.endswith("pyramidal") else 7} <= types


def test_is_sparse_follows_mj_is_sparse():
    chain = "".join(f'<body pos="0 0 .1"><joint axis="0 1 0"/><geom size=".01"/>'
                    for _ in range(56))
    for jac in ("dense", "sparse", "auto"):
        for extra in (0, 1):  # a free body: nv 62, or nv 56 without one
            free = '<body><freejoint/><geom size=".1"/></body>' if extra else ""
            xml = (f'<mujoco><option jacobian="{jac}"/><worldbody>{chain}'
                   f'{"</body>" * 56}{free}</worldbody></mujoco>')
            m, mjm = tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)
            assert m.nv == mjm.nv
            assert m.is_sparse == bool(mujoco.mj_isSparse(mjm)), (jac, mjm.nv)
            d = tiphys.make_data(m, 1)
            assert (d.njnnz > 0) == m.is_sparse


def test_njnnz_overflow_warns_and_keeps_whole_elements():
    xml = sparse(tc.COMBINED)
    m, mjm = tc.pair(xml)
    qpos, qvel, active = tc.random_state(mjm, 11, 3)
    theirs = mujoco_sparse(mjm, qpos, qvel, active)
    need = min(t["nJ"] for t in theirs)
    d = tiphys.make_data(m, 3, njnnz=need // 2)
    _poison(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tc.run_tiphys(m, d, qpos, qvel, active)
    with pytest.warns(RuntimeWarning, match="njnnz"):
        tiphys.check_warnings(m, d)
    nefc, nJ = d.numpy("nefc"), d.numpy("nJ")
    over, rows_over = d.numpy("efc_J_overflow"), d.numpy("efc_overflow")
    ids, types = d.numpy("efc_id"), d.numpy("efc_type")
    for w, t in enumerate(theirs):
        n = int(nefc[w])
        assert 0 < n < t["nefc"] and nJ[w] <= need // 2
        # a prefix of MuJoCo's rows, ending at an element boundary
        assert np.array_equal(d.numpy("efc_J_rownnz")[w][:n], t["efc_J_rownnz"][:n])
        assert np.array_equal(d.numpy("efc_J_colind")[w][:nJ[w]], t["efc_J_colind"][:nJ[w]])
        assert (types[w][n - 1], ids[w][n - 1]) != (types[w][n - 1], ids[w][n])
        assert over[w] == t["nJ"] - nJ[w] and rows_over[w] == t["nefc"] - n
    # a model made dense before its options turned sparse has no room for it
    md, _ = tc.pair(tc.EQUALITY)
    dd = tiphys.make_data(md, 1)
    md2 = copy.copy(md)
    md2.opt = dataclasses.replace(md.opt.frozen, jacobian=JAC_SPARSE)
    with pytest.raises(ValueError, match="dense"):
        tiphys.make_constraint(md2, dd)


def test_mul_jac_vec_and_transpose_on_sparse_rows_match_mujoco():
    xml = sparse(tc.COMBINED)
    m, mjm = tc.pair(xml)
    qpos, qvel, active = tc.random_state(mjm, 21, 3)
    d = tiphys.make_data(m, 3)
    tc.run_tiphys(m, d, qpos, qvel, active)
    rng = np.random.default_rng(2)
    vec = rng.normal(size=(3, mjm.nv))
    efc = rng.normal(size=(3, d.njmax))
    jv, jtv = tiphys.mul_jac_vec(m, d, vec), tiphys.mul_jac_t_vec(m, d, efc)
    mjd = mujoco.MjData(mjm)
    for w in range(3):
        mjd.qpos[:], mjd.qvel[:], mjd.eq_active[:] = qpos[w], qvel[w], active[w]
        mujoco.mj_fwdPosition(mjm, mjd)
        n = mjd.nefc
        assert n > 0 and int(d.numpy("nefc")[w]) == n
        want = np.zeros(n)
        mujoco.mj_mulJacVec(mjm, mjd, want, vec[w])
        assert _rel(jv[w, :n], want) < 1e-12 and not jv[w, n:].any()
        want = np.zeros(mjm.nv)
        mujoco.mj_mulJacTVec(mjm, mjd, want, efc[w, :n])
        assert _rel(jtv[w], want) < 1e-12


# two trees coupled by a joint equality whose second column is zero (polycoef all 0):
# MuJoCo's sparse rows keep the column, and its islands join the trees; dense ones not
ZERO_COLUMN = """
<mujoco>
  <option jacobian="{jacobian}"><flag island="enable" contact="disable"/></option>
  <worldbody>
    <body name="a"><joint name="ja" axis="0 1 0" range="-1 1"/><geom size=".1"/></body>
    <body name="b" pos="1 0 0"><joint name="jb" axis="0 1 0"/><geom size=".1"/></body>
    <body name="c" pos="2 0 0"><joint name="jc" axis="0 1 0" range="-.1 .1"/>
      <geom size=".1"/></body>
  </worldbody>
  <equality><joint joint1="ja" joint2="jb" polycoef="0 0 0 0 0"/></equality>
</mujoco>
"""


@pytest.mark.parametrize("jacobian", ["dense", "sparse"])
def test_islands_follow_the_rows_columns(jacobian):
    xml = ZERO_COLUMN.format(jacobian=jacobian)
    m, mjm = tc.pair(xml)
    qpos = np.array([[0.3, -0.2, 0.5], [1.2, 0.4, -0.3]])
    qvel = np.zeros((2, 3))
    d = tiphys.make_data(m, 2)
    tc.run_tiphys(m, d, qpos, qvel)
    tiphys.island(m, d)
    mjd = mujoco.MjData(mjm)
    for w in range(2):
        mjd.qpos[:] = qpos[w]
        mujoco.mj_fwdPosition(mjm, mjd)
        assert int(d.numpy("nisland")[w]) == mjd.nisland
        assert np.array_equal(d.numpy("tree_island")[w], mjd.tree_island)
        assert np.array_equal(d.numpy("efc_island")[w][:mjd.nefc], mjd.efc_island)
    # sparse: trees a and b share an island; dense: b is in none
    assert (mjd.tree_island[0] == mjd.tree_island[1]) == (jacobian == "sparse")


# ------------------------------------------------------------------------------------
# corpus: humanoids forced sparse, and models with nv >= 60 (sparse by "auto")
# ------------------------------------------------------------------------------------

CORPUS = ("gym/humanoid.xml", "dmc/humanoid.xml", "dmc/humanoid_CMU.xml",
          "mjwarp/humanoid/n_humanoid.xml", "mjwarp/convex_collision/box100.xml")


@pytest.mark.parametrize("rel", CORPUS)
def test_corpus_sparse_rows(rel, report):
    path = os.path.join(corpus_dir(), rel)
    if not os.path.exists(path):
        pytest.skip(f"corpus model {rel} not present")
    with StrippedModel(path, tc.COMPILER_LATER) as tmp:
        mjm = mujoco.MjModel.from_xml_path(tmp)
    if mjm.nv < 60:  # small models: forced sparse
        mjm.opt.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
    m = tiphys.put_model(mjm)
    assert m.is_sparse
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    nworld = 3
    qpos, qvel = tc.corpus_states(mjm, rng, nworld)
    # lower free roots towards the floor, so that standing models touch it too
    for jnt in np.nonzero(mjm.jnt_type == mujoco.mjtJoint.mjJNT_FREE)[0]:
        z = mjm.jnt_qposadr[jnt] + 2
        qpos[:, z] *= rng.uniform(0.4, 0.9, nworld)
    dense = tc.run_mujoco(mjm, qpos, qvel)
    ncon = max([len(r["contacts"]) for r in dense] + [1])
    d = tiphys.make_data(m, nworld, nconmax=ncon,
                         njmax=max([r["nefc"] for r in dense] + [1]))
    _poison(d)
    tc.run_tiphys(m, d, qpos, qvel, contacts=[r["contacts"] for r in dense])
    ours = tc.fetch(d)
    errors = [e for w in range(nworld) for e in tc.compare_world(ours, dense[w], w)]
    assert not errors, errors[:5]
    theirs = mujoco_sparse(mjm, qpos, qvel)
    stats = _stats()
    errors = compare_sparse(d, theirs, stats)
    assert not errors, errors[:5]
    assert stats["rows"] > 0
    assert any((t["type"] >= 5).any() for t in dense), "no contact rows"
    report("sparse Jacobian rows (corpus)", rel,
           f"match (nv {mjm.nv}: {stats['rows']} rows, {stats['nnz']} non-zeros "
           f"(dense {stats['rows'] * mjm.nv}), max err {stats['err']:.1e})")


# ------------------------------------------------------------------------------------
# solvers: J v and J' f over the rows' non-zeros, same results as the dense path
# ------------------------------------------------------------------------------------

SOLVER_MODELS = {
    "contacts_pyramidal": (tc.contacts_xml("pyramidal", 1.5, "dense"), 0.12, (0, 0, 0.05)),
    "contacts_elliptic": (tc.contacts_xml("elliptic", 1.5, "dense"), 0.12, (0, 0, 0.05)),
    "friction_limits": (tc.FRICTION_LIMITS, 0.4, (0, 0, 0)),
    "wrapping": (WRAPPING, 0.8, (0, 0, 0)),
}
# CG stops at its tolerance and PGS (elliptic cones) converges slowly: where the dense
# and sparse sums round differently, their iterations may end one apart
SOLVER_RTOL = {"PGS": 1e-8, "CG": 1e-6, "Newton": 1e-10}


def _solver_xml(xml, jacobian, solver, island):
    xml = xml.replace(' jacobian="dense"', "")
    if "<option" not in xml:
        xml = xml.replace("<mujoco>", "<mujoco>\n  <option/>", 1)
    opts = f'<option jacobian="{jacobian}" solver="{solver}" tolerance="1e-12" ' \
           f'iterations="300"'
    xml = xml.replace("<option", opts, 1)
    if "<flag" in xml:
        return xml.replace("<flag", f'<flag island="{island}"', 1)
    return xml.replace("<option/>", f'<option><flag island="{island}"/></option>', 1) \
        if "<option/>" in xml else xml.replace(
            "</mujoco>", f'<option><flag island="{island}"/></option>\n</mujoco>', 1)


def _forward(xml, spread, center, seed, nworld=4):
    m = tiphys.load_model_from_string(xml)
    try:
        mjm = mujoco.MjModel.from_xml_string(xml)
    except ValueError:  # MuJoCo 3.4.0's sparse mj_projectConstraint fails on some
        mjm = None
    ref = mjm or mujoco.MjModel.from_xml_string(xml.replace('jacobian="sparse"',
                                                            'jacobian="dense"'))
    qpos, qvel, active = tc.random_state(ref, seed, nworld, spread, center)
    d = tiphys.make_data(m, nworld)
    tc._set(d.qpos, qpos)
    tc._set(d.qvel, qvel)
    if ref.neq:
        tc._set(d.eq_active, active)
    for name in ("qacc", "qfrc_constraint", "efc_force"):
        arr = getattr(d, name)
        arr.from_numpy(tc._full(arr, np.nan))
    tiphys.forward(m, d)
    out = {k: d.numpy(k) for k in ("qacc", "qfrc_constraint", "nefc")}
    force = d.numpy("efc_force")
    out["efc_force"] = np.concatenate([force[w][:n] for w, n in enumerate(out["nefc"])])
    if mjm is not None:
        mjd = mujoco.MjData(mjm)
        out["mujoco"] = []
        for w in range(nworld):
            mjd.qpos[:] = qpos[w]
            mjd.qvel[:] = qvel[w]
            if mjm.neq:
                mjd.eq_active[:] = active[w]
            mujoco.mj_forward(mjm, mjd)
            out["mujoco"].append(mjd.qacc.copy())
    return m, out


def _rel(a, b):
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-300))


@pytest.mark.parametrize("solver", ["PGS", "CG", "Newton"])
@pytest.mark.parametrize("island", ["enable", "disable"])
def test_sparse_solvers_match_the_dense_path(solver, island, report):
    worst = 0.0
    for name, (xml, spread, center) in SOLVER_MODELS.items():
        seed = zlib.crc32(name.encode())
        md, dense = _forward(_solver_xml(xml, "dense", solver, island), spread, center,
                             seed)
        ms, sparse = _forward(_solver_xml(xml, "sparse", solver, island), spread, center,
                              seed)
        assert ms.is_sparse and not md.is_sparse
        assert np.array_equal(dense["nefc"], sparse["nefc"]) and dense["nefc"].min() > 0
        for k in ("qacc", "qfrc_constraint", "efc_force"):
            err = _rel(sparse[k], dense[k])
            worst = max(worst, err)
            assert err <= SOLVER_RTOL[solver], (name, k, err)
        if "mujoco" in sparse:  # MuJoCo's own sparse solve
            err = _rel(sparse["qacc"], np.array(sparse["mujoco"]))
            assert err <= SOLVER_RTOL[solver], (name, "qacc vs MuJoCo", err)
    report("sparse Jacobian solvers", f"{solver} island={island}",
           f"match (sparse vs dense: max rel err {worst:.1e})")


# ------------------------------------------------------------------------------------
# f32 on the CPU and SPIR-V (a subprocess: Taichi's precision is per process)
# ------------------------------------------------------------------------------------

F32_MODELS = ("equality", "contacts_pyramidal", "contacts_elliptic", "wrapping")


@pytest.mark.parametrize("arch", spirv.archs())
def test_f32_sparse_rows_match_mujoco(arch):
    res = subproc.run([os.path.abspath(__file__), "f32", arch], key=f"{arch}-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(worst) == set(F32_MODELS) | {"solver_PGS", "solver_CG"}
    # the solvers: sparse in f32 against MuJoCo's f64 (measured 1.5e-6 PGS, 1e-3 CG:
    # CG runs all its iterations at f32 round-off, tolerance 1e-8, and stops ~1e-3 off)
    tol = {"solver_PGS": 1e-5, "solver_CG": 5e-3}
    for name, err in worst.items():
        assert err < tol.get(name, tc.F32_TOL), f"{name}: {err}"


def _f32_main(arch):
    """Sparse rows in f32 (MuJoCo's contacts) against MuJoCo; prints JSON: per model
    the largest value error relative to its world's largest entry (inf: a structure
    mismatch, whose first errors go to stderr)."""
    tiphys.init(arch=arch, precision="f32")
    out = {}
    for name in F32_MODELS:
        xml = sparse(MODELS[name])
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = tiphys.load_model_from_string(xml)
        qpos, qvel, active = tc.random_state(mjm, zlib.crc32(name.encode()), 4,
                                             SPREAD.get(name, 0.3),
                                             CENTER.get(name, (0, 0, 0)))
        dense = tc.run_mujoco(mjm, qpos, qvel, active)
        d = tiphys.make_data(m, 4, nconmax=max(1, max(len(r["contacts"]) for r in dense)))
        _poison(d)
        tc.run_tiphys(m, d, qpos, qvel, active, contacts=[r["contacts"] for r in dense])
        theirs = mujoco_sparse(mjm, qpos, qvel, active)
        stats = _stats()
        errors = compare_sparse(d, theirs, stats, rtol=np.inf)  # values: measured
        if errors:
            print(errors[:5], file=sys.stderr)
        out[name] = np.inf if errors else stats["err"]
    # the solvers on sparse rows (their kernels take the most arrays: SPIR-V's limit),
    # against MuJoCo's f64 answer on the same states (the dense solvers in f32 are
    # test_solver_vulkan's and test_solver's: compiling them again here for a
    # sparse-against-dense comparison was half of this check's cold time on lavapipe)
    xml = tc.contacts_xml("pyramidal", 1.5, "dense")
    for solver in ("PGS", "CG"):  # Newton shares CG's sparse products
        x = _solver_xml(xml, "sparse", solver, "enable").replace(' tolerance="1e-12"', "")
        _, res = _forward(x, 0.12, (0, 0, 0.05), 3)
        out[f"solver_{solver}"] = _rel(res["qacc"], np.array(res["mujoco"]))
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1:2] == ["f32"]:
        _f32_main(sys.argv[2] if len(sys.argv) > 2 else "cpu")


# ------------------------------------------------------------------------------------
# memory: no dense Jacobian for sparse models
# ------------------------------------------------------------------------------------

def test_sparse_data_keeps_no_dense_jacobian():
    """A sparse model's Data allocates efc_J as 1 x 1 per world (the rows live in
    efc_J_sparse); d.numpy("efc_J") gives the non-zeros, as MuJoCo's efc_J in sparse
    mode, and tiphys.support.efc_J_dense the matrix MuJoCo's mju_sparse2dense makes.
    A dense model's efc_J stays njmax x nv."""
    from tiphys.support import efc_J_dense
    xml = sparse(MODELS["contacts_pyramidal"])
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    assert m.is_sparse
    nworld = 3
    d = tiphys.make_data(m, nworld)
    assert d.is_sparse and d.efc_J.shape == (nworld, 1, 1)
    qpos, qvel, _active = tc.random_state(mjm, 11, nworld, 0.12, (0, 0, 0.05))
    tc._set(d.qpos, qpos)
    tc._set(d.qvel, qvel)
    tiphys.forward(m, d)
    assert np.array_equal(d.numpy("efc_J"), d.numpy("efc_J_sparse"))
    J = efc_J_dense(m, d)
    assert J.shape == (nworld, d.njmax, m.nv)
    nefc = d.numpy("nefc")
    assert nefc.min() > 0
    md = mujoco.MjData(mjm)
    for w in range(nworld):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_fwdPosition(mjm, md)
        want = np.zeros((md.nefc, mjm.nv))
        mujoco.mju_sparse2dense(want, md.efc_J, md.efc_J_rownnz, md.efc_J_rowadr,
                                md.efc_J_colind)
        assert md.nefc == nefc[w]
        np.testing.assert_allclose(J[w, :md.nefc], want, rtol=0,
                                   atol=RTOL * np.abs(want).max())
        assert not J[w, md.nefc:].any()
    dense = tiphys.load_model_from_string(xml.replace('jacobian="sparse"',
                                                      'jacobian="dense"'))
    assert not dense.is_sparse
    dd = tiphys.make_data(dense, nworld)
    assert dd.efc_J.shape == (nworld, dd.njmax, dense.nv)


def test_default_sizes_budget_the_sparse_nonzeros_not_a_dense_matrix(monkeypatch):
    """make_data's default njmax is capped to the dense efc_J budget for dense models
    only; sparse models' default njnnz is capped to the same budget instead."""
    import tiphys.model as tm
    xml = sparse(MODELS["contacts_pyramidal"])
    m = tiphys.load_model_from_string(xml)
    md = tiphys.load_model_from_string(xml.replace('jacobian="sparse"', 'jacobian="dense"'))
    free = tiphys.make_data(m, 2)
    monkeypatch.setattr(tm, "EFC_J_BUDGET", 2 * 12 * 40)  # 40 non-zeros in 2 worlds
    with pytest.warns(RuntimeWarning, match="njnnz=40"), \
            pytest.warns(RuntimeWarning, match="nhnnz="):
        d = tiphys.make_data(m, 2)
    assert d.njmax == free.njmax and d.njnnz == 40 < free.njnnz
    with pytest.warns(RuntimeWarning, match="njmax="):
        dd = tiphys.make_data(md, 2)
    assert dd.njmax < free.njmax
