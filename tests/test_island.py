"""Constraint islands (kernels/island.py) against mujoco.mj_island.

MuJoCo 3.4.0 builds the rows (mj_fwdPosition); its nefc, efc_type, efc_id, efc_J and
contact geoms are copied into tiphys Data, every island output is poisoned (-7), and
``island`` runs; then every island field (nisland, nidof, tree_island, island_ntree,
island_itreeadr, map_itree2tree, dof_island, island_nv, island_idofadr,
island_dofadr, map_dof2idof, map_idof2dof, efc_island, island_ne, island_nf,
island_nefc, island_iefcadr, map_efc2iefc, map_iefc2efc) must equal MuJoCo's, world
by world. One test runs tiphys's own forward instead (its own contacts and rows).
"""
import dataclasses
import zlib

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.options import DISABLE_FLAGS

NWORLD = 5

# several free bodies: touching pairs and a stack make multi-tree islands, lone
# bodies on the plane one-tree islands (the world joins nothing), high ones none;
# a hinge pendulum whose limit is its own island; a capsule chain touching itself
CONTACT_XML = """
<mujoco>
  <option jacobian="{jacobian}"><flag island="{island}"/></option>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos=".19 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="1 0 .1"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos="1 0 .29"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos="1 0 .48"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos="2 0 .05">
      <freejoint/><geom type="capsule" size=".05 .2" euler="0 90 0"/>
    </body>
    <body pos="-1 0 2"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="-2 0 1">
      <joint type="hinge" axis="0 1 0" range="-10 10"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/>
    </body>
    <body pos="-1 1 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
  </worldbody>
</mujoco>
"""

# connect between two free bodies (one island), weld to the world (self-edge), a
# joint equality and a tendon limit coupling two arms (trees found from the Jacobian),
# dof and tendon friction, a site connect, and a free body nothing touches
EQUALITY_XML = """
<mujoco>
  <option jacobian="{jacobian}"><flag island="{island}"/></option>
  <worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="b" pos=".3 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="c" pos="0 1 1"><freejoint/><geom type="sphere" size=".1"/></body>
    <body name="arm1" pos="1 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" frictionloss=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <body pos=".3 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body>
    </body>
    <body name="arm2" pos="2 0 1">
      <joint name="j3" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
    </body>
    <body name="arm3" pos="3 0 1">
      <joint name="j4" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
    </body>
    <body name="arm4" pos="4 0 1">
      <joint name="j5" type="slide" axis="0 0 1"/>
      <geom type="box" size=".1 .1 .1"/><site name="s4"/>
    </body>
    <body name="arm5" pos="4.5 0 1">
      <joint name="j6" type="slide" axis="0 0 1"/>
      <geom type="box" size=".1 .1 .1"/><site name="s5"/>
    </body>
    <body name="lone" pos="6 0 1"><freejoint/><geom type="sphere" size=".1"/></body>
  </worldbody>
  <equality>
    <connect body1="a" body2="b" anchor=".15 0 0"/>
    <weld body1="c"/>
    <joint joint1="j2" joint2="j3" polycoef="0 1 0 0 0"/>
    <connect site1="s4" site2="s5"/>
  </equality>
  <tendon>
    <fixed limited="true" range="-.01 .01" frictionloss=".05">
      <joint joint="j1" coef="1"/><joint joint="j4" coef="-1"/>
    </fixed>
  </tendon>
</mujoco>
"""

FREE_XML = """
<mujoco>
  <worldbody>
    <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="1 0 1"><joint type="hinge"/><geom type="sphere" size=".1"/></body>
  </worldbody>
</mujoco>
"""

ISLAND_FIELDS = ("tree_island", "island_ntree", "island_itreeadr", "map_itree2tree",
                 "dof_island", "island_nv", "island_idofadr", "island_dofadr",
                 "map_dof2idof", "map_idof2dof", "efc_island", "island_ne", "island_nf",
                 "island_nefc", "island_iefcadr", "map_efc2iefc", "map_iefc2efc")


def _states(mjm, seed, nworld=NWORLD):
    """Random perturbations of qpos0 (some contacts made, some broken) and qvel."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(nworld):
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                qpos[w, adr:adr + 2] += rng.uniform(-0.02, 0.02, 2)
                qpos[w, adr + 2] += rng.uniform(-0.01, 0.002)
                axis = rng.normal(size=3)
                axis /= np.linalg.norm(axis)
                angle = rng.uniform(-0.1, 0.1)
                qpos[w, adr + 3:adr + 7] = np.concatenate(
                    [[np.cos(angle / 2)], np.sin(angle / 2) * axis])
            else:
                qpos[w, adr] += rng.uniform(-0.5, 0.5)
    qvel = rng.normal(scale=0.3, size=(nworld, mjm.nv))
    return qpos, qvel


def mujoco_islands(mjm, qpos, qvel):
    """Per world: MuJoCo's rows and contact geoms (mj_fwdPosition) and its islands."""
    md = mujoco.MjData(mjm)
    out = []
    for w in range(qpos.shape[0]):
        mujoco.mj_resetData(mjm, md)
        md.qpos[:], md.qvel[:] = qpos[w], qvel[w]
        mujoco.mj_fwdPosition(mjm, md)
        nefc = md.nefc
        if mujoco.mj_isSparse(mjm):
            J = np.zeros((nefc, mjm.nv))
            mujoco.mju_sparse2dense(J, md.efc_J, md.efc_J_rownnz, md.efc_J_rowadr,
                                    md.efc_J_colind)
        else:
            J = md.efc_J.reshape(nefc, mjm.nv).copy()
        if mujoco.mj_isSparse(mjm):  # the row structure too (islands read it)
            nnz = md.nJ
            sparse = {"efc_J_rownnz": md.efc_J_rownnz[:nefc].copy(),
                      "efc_J_rowadr": md.efc_J_rowadr[:nefc].copy(),
                      "efc_J_colind": md.efc_J_colind[:nnz].copy()}
        else:
            sparse = {}
        rec = {"nefc": nefc, "ncon": md.ncon, "efc_J": J, "sparse": sparse,
               "efc_type": md.efc_type.copy(), "efc_id": md.efc_id.copy(),
               "contact_geom": md.contact.geom.copy(),
               "nisland": md.nisland, "nidof": md.nidof}
        for name in ISLAND_FIELDS:
            rec[name] = np.asarray(getattr(md, name)).copy() if md.nisland else None
        out.append(rec)
    return out


def _put(arr, values):
    full = np.zeros(arr.to_numpy().shape, dtype=arr.to_numpy().dtype)
    full[tuple(slice(0, n) for n in values.shape)] = values
    arr.from_numpy(full)


def _poison(d):
    for name in ISLAND_FIELDS + ("nisland", "nidof"):
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape, -7, dtype=np.int32))


def tiphys_islands(m, recs):
    """MuJoCo's rows copied into tiphys Data, island outputs poisoned, island."""
    nworld = len(recs)
    njmax = max(1, max(r["nefc"] for r in recs)) + 3
    nconmax = max(1, max(r["ncon"] for r in recs)) + 2
    njnnz = max([1] + [len(r["sparse"].get("efc_J_colind", ())) for r in recs])
    d = tiphys.make_data(m, nworld, nconmax=nconmax, njmax=njmax, njnnz=njnnz)
    J = np.zeros((nworld, njmax, max(1, m.nv)))
    types = np.zeros((nworld, njmax), dtype=np.int32)
    ids = np.zeros((nworld, njmax), dtype=np.int32)
    geom = np.full((nworld, nconmax, 2), -1, dtype=np.int32)
    for w, r in enumerate(recs):
        n = r["nefc"]
        J[w, :n, :m.nv] = r["efc_J"]
        types[w, :n] = r["efc_type"]
        ids[w, :n] = r["efc_id"]
        geom[w, :r["ncon"]] = r["contact_geom"]
    if not m.is_sparse:  # sparse rows: their column lists, below
        _put(d.efc_J, J)
    _put(d.efc_type, types)
    _put(d.efc_id, ids)
    _put(d.contact_geom, geom)
    _put(d.nefc, np.array([r["nefc"] for r in recs], dtype=np.int32))
    _put(d.ncon, np.array([r["ncon"] for r in recs], dtype=np.int32))
    if m.is_sparse:
        for name, size in (("efc_J_rownnz", njmax), ("efc_J_rowadr", njmax),
                           ("efc_J_colind", njnnz)):
            values = np.zeros((nworld, size), dtype=np.int32)
            for w, r in enumerate(recs):
                values[w, :len(r["sparse"][name])] = r["sparse"][name]
            _put(getattr(d, name), values)
    _poison(d)
    tiphys.island(m, d)
    return d


def compare_islands(d, recs, m):
    """Every island field of every world equal to MuJoCo's."""
    got = {name: d.numpy(name) for name in ISLAND_FIELDS + ("nisland", "nidof")}
    for w, r in enumerate(recs):
        assert got["nisland"][w] == r["nisland"], f"world {w} nisland"
        assert got["nidof"][w] == r["nidof"], f"world {w} nidof"
        if not r["nisland"]:
            continue
        for name in ISLAND_FIELDS:
            want = r[name]
            ours = got[name][w][:len(want)]
            np.testing.assert_array_equal(ours, want, err_msg=f"world {w} {name}")


def _load(xml, **params):
    text = xml.format(**params)
    return tiphys.load_model_from_string(text), mujoco.MjModel.from_xml_string(text)


@pytest.mark.parametrize("jacobian", ["dense", "sparse"])
def test_contact_islands_match_mujoco(jacobian):
    """Touching pairs and a stack (islands of several trees), lone bodies on the
    plane (one tree each), a body in the air and a joint limit."""
    m, mjm = _load(CONTACT_XML, jacobian=jacobian, island="enable")
    qpos, qvel = _states(mjm, f"contacts {jacobian}")
    recs = mujoco_islands(mjm, qpos, qvel)
    assert max(r["nisland"] for r in recs) >= 5
    assert any((r["island_ntree"] > 1).any() for r in recs if r["nisland"])
    assert any((r["tree_island"] < 0).any() for r in recs if r["nisland"])
    d = tiphys_islands(m, recs)
    compare_islands(d, recs, m)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_islands_with_cones_match_mujoco(cone):
    """Multi-row contacts (each contact read from its first row)."""
    xml = CONTACT_XML.replace('<option jacobian="{jacobian}">',
                              f'<option jacobian="dense" cone="{cone}">')
    m, mjm = _load(xml, island="enable")
    qpos, qvel = _states(mjm, f"cones {cone}")
    recs = mujoco_islands(mjm, qpos, qvel)
    d = tiphys_islands(m, recs)
    compare_islands(d, recs, m)


@pytest.mark.parametrize("jacobian", ["dense", "sparse"])
def test_equality_tendon_islands_match_mujoco(jacobian):
    """Connect (bodies and sites), weld to the world, a joint equality and a limited
    tendon across two trees, dof and tendon friction, and a free body in no island."""
    m, mjm = _load(EQUALITY_XML, jacobian=jacobian, island="enable")
    qpos, qvel = _states(mjm, f"equality {jacobian}")
    qpos[:, -7:-4] += np.array([0.0, 0.0, 5.0])  # "lone" far from everything
    recs = mujoco_islands(mjm, qpos, qvel)
    T = mujoco.mjtConstraint
    for r in recs:
        assert {T.mjCNSTR_EQUALITY, T.mjCNSTR_FRICTION_DOF, T.mjCNSTR_FRICTION_TENDON,
                T.mjCNSTR_LIMIT_TENDON} <= set(r["efc_type"].tolist())
        assert r["nisland"] >= 4 and (r["island_ne"] > 0).any() and \
            (r["island_nf"] > 0).any()
    d = tiphys_islands(m, recs)
    compare_islands(d, recs, m)


def test_no_constraints_gives_no_islands():
    """No rows: nisland = nidof = 0."""
    m, mjm = _load(FREE_XML)
    qpos, qvel = _states(mjm, "free")
    recs = mujoco_islands(mjm, qpos, qvel)
    assert all(r["nefc"] == 0 and r["nisland"] == 0 for r in recs)
    d = tiphys_islands(m, recs)
    compare_islands(d, recs, m)


def test_disabled_islands_are_cleared():
    """<flag island="disable"/>: the stage is left out, and nisland = nidof = 0 once
    islands were found before (as MuJoCo, which zeroes them)."""
    m, mjm = _load(CONTACT_XML, jacobian="dense", island="enable")
    qpos, qvel = _states(mjm, "disabled")
    d = tiphys_islands(m, mujoco_islands(mjm, qpos, qvel))
    assert (d.numpy("nisland") > 0).all()
    m.opt = dataclasses.replace(m.opt.frozen, disableflags=m.opt.disableflags | (
        1 << DISABLE_FLAGS.index("island")))
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    tiphys.island(m, d)
    recs = mujoco_islands(mjm, qpos, qvel)
    assert all(r["nefc"] > 0 and r["nisland"] == 0 for r in recs)
    compare_islands(d, recs, m)


def test_forward_islands_match_mujoco():
    """tiphys's own pipeline (collision, make_constraint, island) on the same states."""
    m, mjm = _load(EQUALITY_XML.replace('<option jacobian="{jacobian}">',
                                        '<option>').replace(
        '<worldbody>', '<worldbody><geom type="plane" size="9 9 .1"/>', 1),
        island="enable")
    qpos, qvel = _states(mjm, "forward")
    qpos[:, 2] -= 0.9  # "a" and "b" on the plane
    recs = mujoco_islands(mjm, qpos, qvel)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(qpos)
    d.qvel.from_numpy(qvel)
    _poison(d)
    tiphys.forward(m, d)
    nefc = d.numpy("nefc")
    for w, r in enumerate(recs):
        assert nefc[w] == r["nefc"]
        np.testing.assert_array_equal(d.numpy("efc_type")[w, :nefc[w]], r["efc_type"])
    compare_islands(d, recs, m)
