"""Constraint rows (make_constraint, reference_constraint) against MuJoCo 3.4.0.

Both engines get the same model and the same random states (several worlds); tiphys
runs kinematics, com_pos, tendon, crb, factor_m, collision, make_constraint, com_vel,
reference_constraint on every world at once (efc outputs poisoned with NaN first),
MuJoCo runs mj_fwdPosition + mj_fwdVelocity per world with a dense Jacobian (sparse
ones are converted). Every efc field is compared row by row, to 1e-10 of the
field's magnitude. Run as a script (``python tests/test_constraint.py f32``) it
checks the same models in f32.
"""
import os
import sys
import warnings
import zlib

import mujoco
import numpy as np
import pytest
import subproc
import spirv

import tiphys
from tiphys.backend import numpy_dtype
from corpus_xfail import SENSORS_LATER, corpus_params, not_yet, stage_models
from oracle import StrippedModel, corpus_dir, mujoco_contacts, random_free_qpos

NWORLD = 6
RTOL = 1e-10
EFC_FLOATS = ("J", "pos", "margin", "frictionloss", "diagApprox", "KBIP", "D", "R", "vel",
              "aref")
EFC_INTS = ("type", "id")

# ------------------------------------------------------------------------------------
# models
# ------------------------------------------------------------------------------------

EQUALITY = """
<mujoco>
  <option><flag contact="disable"/></option>
  <default>
    <equality solref=".03 .8"/>
    <default class="soft"><equality solref="-300 -15" solimp=".6 .8 .02 .3 3"/></default>
  </default>
  <worldbody>
    <site name="w0" pos=".1 .2 .3" quat="0 0 0 1"/>
    <body name="static" pos="0 0 1"><geom size=".1"/></body>
    <body name="a" pos=".2 0 1" euler="0 30 0">
      <joint name="ha" axis="0 1 0" ref=".3"/>
      <geom size=".1" mass="2"/>
      <site name="sa" pos=".1 0 0" euler="20 0 0"/>
      <body name="a2" pos=".3 0 0">
        <joint name="sl" type="slide" axis="1 0 0" ref="-.1"/>
        <geom type="capsule" size=".05 .1"/>
        <site name="sa2" pos="0 .05 0"/>
      </body>
    </body>
    <body name="b" pos="-.3 .2 .8" quat="1 2 3 4">
      <freejoint/>
      <geom type="box" size=".1 .2 .3"/>
      <site name="sb" pos="0 .1 0" euler="0 0 30"/>
    </body>
    <body name="c" pos=".5 .5 .5">
      <joint name="bc" type="ball"/>
      <geom size=".1"/>
      <body name="c2" pos="0 .2 0">
        <joint name="hc" axis="1 0 0"/>
        <geom type="box" size=".1 .05 .02"/>
      </body>
    </body>
    <body name="mocap" mocap="true" pos="1 1 1" euler="0 0 45"><geom size=".05"/></body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="ha" coef=".5"/><joint joint="sl" coef="-1"/></fixed>
    <fixed name="t2"><joint joint="hc" coef="2"/></fixed>
    <spatial name="t3"><site site="sa"/><site site="sb"/></spatial>
  </tendon>
  <equality>
    <connect body1="a" body2="b" anchor=".1 .2 .3"/>
    <connect body1="b" anchor="0 0 .1" solref=".05 .5"/>
    <connect site1="sa2" site2="sb" class="soft"/>
    <weld body1="a2" body2="b" torquescale=".3"/>
    <weld body1="b" anchor=".1 0 0" active="false"/>
    <weld body1="c2" body2="a" relpose=".1 .2 .3 1 1 0 0" class="soft"/>
    <weld body1="c" body2="a" anchor="0 .1 0"/>
    <weld body1="mocap" body2="b" solimp=".95 .99 .001 .5 1"/>
    <weld site1="w0" site2="sb" torquescale="2"/>
    <weld body1="static"/>
    <connect body1="mocap" body2="static" anchor="0 0 0"/>
    <joint joint1="ha" joint2="sl" polycoef=".1 2 .3 -.2 .1"/>
    <joint joint1="hc" active="false"/>
    <joint joint1="sl" polycoef=".05"/>
    <tendon tendon1="t1" tendon2="t3" polycoef="0 1 0 0 .5"/>
    <tendon tendon1="t2" class="soft"/>
  </equality>
</mujoco>
"""

FRICTION_LIMITS = """
<mujoco>
  <option timestep=".01"><flag contact="disable"/></option>
  <compiler angle="radian"/>
  <worldbody>
    <site name="w1" pos="0 0 2"/>
    <site name="w2" pos="0 .1 2"/>
    <body name="a" pos="0 0 1">
      <joint name="h1" axis="0 1 0" range="-.3 .3" margin=".1" frictionloss=".5"
             solreffriction=".005 .5" solimpfriction=".8 .9 .01 .4 1"/>
      <geom type="capsule" size=".05 .2" fromto="0 0 0 .4 0 0"/>
      <site name="sa" pos=".4 0 0"/>
      <body name="a2" pos=".4 0 0">
        <joint name="h2" axis="0 0 1" range="-.08 .08" margin=".2" solreflimit="-2000 -40"/>
        <geom size=".06"/>
        <body name="a3" pos=".2 0 0">
          <joint name="s1" type="slide" axis="1 0 0" range="-.1 .1" frictionloss=".2"
                 solimplimit=".9 .9 .001 .5 2"/>
          <geom type="box" size=".05 .05 .05"/>
          <site name="sa3" pos=".05 0 0"/>
        </body>
      </body>
    </body>
    <body name="b" pos="1 0 1">
      <joint name="b1" type="ball" range="0 .4" margin=".05" frictionloss=".1"
             solreflimit=".02 -1"/>
      <geom type="box" size=".1 .2 .05"/>
      <body name="b2" pos="0 0 -.3">
        <joint name="b2" type="ball" range="0 1.2" solimplimit=".7 .95 .05 .7 4"/>
        <geom size=".05"/>
      </body>
    </body>
    <body name="f" pos="-1 0 1">
      <joint type="free" frictionloss=".05"/>
      <geom type="box" size=".1 .1 .1"/>
      <site name="sf" pos=".1 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1" limited="true" range="-.2 .2" margin=".05" frictionloss=".3"
           solreflimit=".03 .9" solimplimit=".85 .9 .01 .5 2" solreffriction="-50 -5">
      <joint joint="h1" coef="1"/><joint joint="s1" coef="-.5"/>
    </fixed>
    <spatial name="t2" limited="true" range=".5 1.1" frictionloss=".2">
      <site site="sa"/><site site="sf"/>
    </spatial>
    <spatial name="t3" limited="true" range=".2 .8" margin=".5">
      <site site="sa3"/><site site="sa"/>
    </spatial>
    <spatial name="t0" limited="true" range=".2 .3" frictionloss=".1">
      <site site="w1"/><site site="w2"/>
    </spatial>
  </tendon>
</mujoco>
"""

CONTACTS = """
<mujoco>
  <option cone="{cone}" impratio="{impratio}" jacobian="{jacobian}"/>
  <default><geom size=".1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" priority="1" friction=".7 .01 .001"/>
    <body name="a" pos="0 0 .1">
      <freejoint/>
      <geom name="a1" condim="1" priority="2" solref=".03 .9" solimp=".8 .9 .002 .4 3"/>
      <geom name="a2" type="capsule" size=".05 .1" pos=".1 0 0" margin=".02" gap=".01"/>
      <body name="a_child" pos=".12 0 0">
        <joint type="ball"/>
        <geom name="ac" size=".08" condim="6" friction="1.2 .02 .003"/>
        <body name="a_grandchild" pos=".1 0 0">
          <joint axis="0 1 0"/>
          <geom name="agc" size=".07" condim="4" solref="-800 -30"/>
        </body>
      </body>
    </body>
    <body name="b" pos=".15 .1 .1">
      <freejoint/>
      <geom name="b1" type="capsule" size=".06 .12" condim="4" solmix="0"/>
      <geom name="b2" type="box" size=".05 .05 .05" pos="0 0 .1" condim="6"/>
    </body>
    <body name="c" pos="-.1 .1 .1">
      <freejoint/>
      <geom name="c1" priority="2" condim="3" margin=".05"/>
    </body>
    <body name="m" mocap="true" pos=".4 .4 .05"><geom name="m1" size=".1" condim="3"/></body>
  </worldbody>
  <contact>
    <pair geom1="c1" geom2="floor" condim="6" margin=".03" gap=".01" solreffriction=".05 1"
          friction=".9 .8 .01 .002 .001"/>
    <pair geom1="b1" geom2="a1" condim="3" friction=".1 .1 .01 .001 .001"
          solimp=".7 .8 .01 .5 2"/>
{extra}
  </contact>
</mujoco>
"""


def contacts_xml(cone="pyramidal", impratio=1, jacobian="dense"):
    # with sparse Jacobians, a contact between bodies without dofs is excluded
    # (mjEXCLUDE 3); with dense ones MuJoCo's island pass rejects it (FatalError)
    extra = '    <pair geom1="m1" geom2="floor"/>' if jacobian == "sparse" else ""
    return CONTACTS.format(cone=cone, impratio=impratio, jacobian=jacobian, extra=extra)


# everything together (disable-flag and overflow tests)
COMBINED = EQUALITY.replace('<option><flag contact="disable"/></option>', "").replace(
    "  </worldbody>", '    <geom type="plane" size="5 5 .1" pos="0 0 .3"/>\n'
    '    <body name="z" pos="0 1 .35"><joint name="zh" axis="1 0 0" range="-.5 .5" '
    'frictionloss=".2"/><geom size=".1" condim="4"/></body>\n  </worldbody>')


# ------------------------------------------------------------------------------------
# both engines
# ------------------------------------------------------------------------------------

_CACHE = {}


def pair(xml):
    """(tiphys Model, MjModel) of an XML text, compiled once per module."""
    if xml not in _CACHE:
        mjm = mujoco.MjModel.from_xml_string(xml)
        _CACHE[xml] = (tiphys.load_model_from_string(xml), mjm)
    return _CACHE[xml]


def random_state(mjm, seed, nworld=NWORLD, spread=0.3, center=(0, 0, 0)):
    rng = np.random.default_rng(seed)
    qpos = random_free_qpos(mjm, rng, nworld, spread=spread, center=center)
    qvel = rng.normal(size=(nworld, mjm.nv))
    active = (rng.random((nworld, mjm.neq)) < 0.8).astype(np.int32)
    return qpos, qvel, active


def _full(arr, value):
    """A numpy array the shape and dtype of a (padded) device array, filled."""
    return np.full(arr.shape + tuple(getattr(arr, "element_shape", ())), value,
                   dtype=numpy_dtype(arr))


def _set(arr, values):
    full = _full(arr, 0)
    full[tuple(slice(0, n) for n in values.shape)] = values
    arr.from_numpy(full)


def _poison(d):
    for name in EFC_FLOATS:
        arr = getattr(d, "efc_" + name)
        arr.from_numpy(_full(arr, np.nan))
    for name in ("efc_type", "efc_id", "ne", "nf", "nl", "nefc", "efc_overflow"):
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape, -7, dtype=np.int32))


def run_tiphys(m, d, qpos, qvel, active=None, contacts=None):
    """The position and velocity stages tiphys has, on every world; ``contacts``: per
    world MuJoCo contact lists to use instead of tiphys' collision."""
    from tiphys.kernels.collision_driver import collision
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    if active is not None and m.neq:
        _set(d.eq_active, active)
    _poison(d)
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.tendon(m, d)
    tiphys.crb(m, d)
    tiphys.factor_m(m, d)
    if contacts is None:
        collision(m, d)
    else:
        set_contacts(d, contacts)
    tiphys.make_constraint(m, d)
    tiphys.com_vel(m, d)
    tiphys.reference_constraint(m, d)


def set_contacts(d, contacts):
    """Write contact lists (mujoco_contacts form, plus efc_address) into d."""
    arrays = {}
    for name in ("dist", "pos", "frame", "includemargin", "friction", "solref",
                 "solreffriction", "solimp", "dim", "geom", "flex", "elem", "vert",
                 "exclude"):
        arrays[name] = _full(getattr(d, "contact_" + name), 0)
    # outputs of make_constraint: poisoned
    arrays["mu"] = _full(d.contact_mu, np.nan)
    arrays["efc_address"] = _full(d.contact_efc_address, -7)
    ncon = np.zeros(d.nworld, dtype=np.int32)
    for w, cons in enumerate(contacts):
        ncon[w] = len(cons)
        for i, c in enumerate(cons):
            for k in arrays:
                if k not in ("mu", "efc_address"):
                    arrays[k][w, i] = np.asarray(c[k]).reshape(arrays[k][w, i].shape)
    for name, value in arrays.items():
        getattr(d, "contact_" + name).from_numpy(value)
    d.ncon.from_numpy(ncon)


def run_mujoco(mjm, qpos, qvel, active=None):
    """Per world: MuJoCo's efc fields (dense J) and contacts after fwdPosition +
    fwdVelocity."""
    mjd = mujoco.MjData(mjm)
    out = []
    for w in range(len(qpos)):
        mjd.qpos[:] = qpos[w]
        mjd.qvel[:] = qvel[w]
        if active is not None and mjm.neq:
            mjd.eq_active[:] = active[w]
        mujoco.mj_fwdPosition(mjm, mjd)
        mujoco.mj_fwdVelocity(mjm, mjd)
        n = mjd.nefc
        res = {"ne": mjd.ne, "nf": mjd.nf, "nl": mjd.nl, "nefc": n}
        for k in EFC_FLOATS + EFC_INTS:
            if k != "J":
                res[k] = np.array(getattr(mjd, "efc_" + k)).reshape((n, 4) if k == "KBIP"
                                                                    else (n,))
        if mujoco.mj_isSparse(mjm):
            J = np.zeros((n, mjm.nv))
            if n:
                mujoco.mju_sparse2dense(J, mjd.efc_J, mjd.efc_J_rownnz, mjd.efc_J_rowadr,
                                        mjd.efc_J_colind)
        else:
            J = np.array(mjd.efc_J)[:n * mjm.nv].reshape(n, mjm.nv)
        res["J"] = J
        res["contacts"] = mujoco_contacts(mjd)
        for i, c in enumerate(res["contacts"]):
            c["mu"] = np.array([mjd.contact[i].mu])
            c["efc_address"] = np.array([mjd.contact[i].efc_address])
        out.append(res)
    return out


def fetch(d):
    """tiphys' efc fields and counters as numpy (a sparse-Jacobian Data's J made dense
    from its non-zeros: it keeps no dense matrix)."""
    out = {k: d.numpy("efc_" + k) for k in EFC_FLOATS + EFC_INTS if k != "J"}
    if d.is_sparse:
        nv = d.field_shape("qvel")[1]
        nefc, rownnz, rowadr, colind, vals = (d.numpy(k) for k in (
            "nefc", "efc_J_rownnz", "efc_J_rowadr", "efc_J_colind", "efc_J_sparse"))
        J = np.zeros((d.nworld, d.njmax, nv))
        for w in range(d.nworld):
            for r in range(int(nefc[w])):
                a, n = int(rowadr[w, r]), int(rownnz[w, r])
                J[w, r, colind[w, a:a + n]] = vals[w, a:a + n]
        out["J"] = J
    else:
        out["J"] = d.numpy("efc_J")
    for k in ("ne", "nf", "nl", "nefc", "efc_overflow", "ncon", "contact_mu",
              "contact_efc_address", "contact_exclude"):
        out[k] = d.numpy(k)
    return out


def compare_world(ours, theirs, w, rtol=RTOL, rows=None, errs=None):
    """Mismatches of world ``w`` (first ``rows`` rows, default MuJoCo's nefc);
    ``errs`` collects the largest error per (field, row type), relative to the field's
    magnitude in this world."""
    n = theirs["nefc"] if rows is None else rows
    errors = []
    if rows is None:
        for k in ("ne", "nf", "nl", "nefc"):
            if int(ours[k][w]) != int(theirs[k]):
                errors.append(f"world {w} {k}: {ours[k][w]} != {theirs[k]}")
        if errors:
            return errors
    for k in EFC_INTS:
        a, b = ours[k][w][:n], theirs[k][:n]
        if not np.array_equal(a, b):
            i = int(np.argmax(a != b))
            errors.append(f"world {w} efc_{k}[{i}]: {a[i]} != {b[i]}")
    if errors:
        return errors
    types = theirs["type"][:n]
    for k in EFC_FLOATS:
        if not n:
            continue
        a = np.asarray(ours[k][w][:n], dtype=np.float64).reshape(n, -1)
        b = np.asarray(theirs[k][:n], dtype=np.float64).reshape(n, -1)
        scale = max(float(np.abs(b).max()), 1e-300)
        err = np.abs(a - b)
        bad = ~(err <= rtol * np.abs(b) + rtol * scale)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            errors.append(f"world {w} efc_{k}[{i}, {j}] (type {types[i]}): "
                          f"{a[i, j]} != {b[i, j]}")
        if errs is not None:
            rel = (err / scale).max(axis=1)
            for t in np.unique(types):
                key = (k, int(t))
                errs[key] = max(errs.get(key, 0.0), float(rel[types == t].max()))
    cons = theirs["contacts"]
    if rows is None:
        for i, c in enumerate(cons):
            if int(ours["contact_efc_address"][w][i]) != int(c["efc_address"][0]):
                errors.append(f"world {w} contact {i} efc_address: "
                              f"{ours['contact_efc_address'][w][i]} != {c['efc_address'][0]}")
            if int(ours["contact_exclude"][w][i]) != int(c["exclude"][0]):
                errors.append(f"world {w} contact {i} exclude: "
                              f"{ours['contact_exclude'][w][i]} != {c['exclude'][0]}")
            mu_a, mu_b = float(ours["contact_mu"][w][i]), float(c["mu"][0])
            if abs(mu_a - mu_b) > rtol * max(1.0, abs(mu_b)):
                errors.append(f"world {w} contact {i} mu: {mu_a} != {mu_b}")
    return errors


def check(xml, seed, nworld=NWORLD, spread=0.3, center=(0, 0, 0), errs=None, **kw):
    m, mjm = pair(xml)
    qpos, qvel, active = random_state(mjm, seed, nworld, spread, center)
    d = tiphys.make_data(m, nworld, **kw)
    run_tiphys(m, d, qpos, qvel, active)
    theirs = run_mujoco(mjm, qpos, qvel, active)
    ours = fetch(d)
    errors = [e for w in range(nworld) for e in compare_world(ours, theirs[w], w, errs=errs)]
    return errors, ours, theirs


def _types(theirs):
    return {int(t) for res in theirs for t in res["type"]}


# ------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------

def test_equality_rows_match_mujoco():
    errors, ours, theirs = check(EQUALITY, seed=zlib.crc32(b"equality"))
    assert not errors, errors[:5]
    # every equality type made rows, and some were inactive in some world
    ids = {int(i) for res in theirs for i in res["id"]}
    mjm = pair(EQUALITY)[1]
    made = {int(mjm.eq_type[i]) for i in ids}
    assert made == {0, 1, 2, 3}
    assert min(res["ne"] for res in theirs) < max(res["ne"] for res in theirs)
    # the weld and connect between bodies without dofs make no rows (empty Jacobian)
    assert not ids & {9, 10}


def test_equality_active_flags_follow_eq_active():
    m, mjm = pair(EQUALITY)
    qpos, qvel, _ = random_state(mjm, 3, nworld=3)
    active = np.array([np.zeros(mjm.neq), np.ones(mjm.neq), mjm.eq_active0], dtype=np.int32)
    d = tiphys.make_data(m, 3)
    run_tiphys(m, d, qpos, qvel, active)
    theirs = run_mujoco(mjm, qpos, qvel, active)
    ours = fetch(d)
    errors = [e for w in range(3) for e in compare_world(ours, theirs[w], w)]
    assert not errors, errors[:5]
    assert ours["ne"][0] == 0 and ours["ne"][1] > ours["ne"][2] > 0


def test_friction_and_limit_rows_match_mujoco():
    errors, ours, theirs = check(FRICTION_LIMITS, seed=zlib.crc32(b"limits"), spread=0.4)
    assert not errors, errors[:5]
    assert {1, 2, 3, 4} <= _types(theirs)
    # both sides of the narrow hinge (margin wider than its range) are rows
    mjm = pair(FRICTION_LIMITS)[1]
    h2 = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_JOINT, "h2")
    assert any(list(res["id"][res["type"] == 3]).count(h2) == 2 for res in theirs)
    # the tendon between two world sites (zero Jacobian) makes no rows
    t0 = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_TENDON, "t0")
    assert not any(((res["type"] == 2) | (res["type"] == 4))[res["id"] == t0].any()
                   for res in theirs)


@pytest.mark.parametrize("cone,impratio,jacobian", [
    ("pyramidal", 1, "dense"), ("elliptic", 1, "dense"), ("pyramidal", 2.5, "sparse"),
    ("elliptic", 4, "sparse")])
def test_contact_rows_match_mujoco(cone, impratio, jacobian):
    xml = contacts_xml(cone, impratio, jacobian)
    errors, ours, theirs = check(xml, seed=zlib.crc32(xml.encode()), spread=0.12,
                                 center=(0, 0, 0.05))
    assert not errors, errors[:5]
    dims = {int(c["dim"][0]) for res in theirs for c in res["contacts"]
            if c["exclude"][0] == 0}
    assert dims == {1, 3, 4, 6}
    assert (7 if cone == "elliptic" else 6) in _types(theirs) and 5 in _types(theirs)
    # the mocap sphere's explicit pair with the floor (sparse only): excluded
    excluded = {int(c["exclude"][0]) for res in theirs for c in res["contacts"]}
    assert (3 in excluded) == (jacobian == "sparse")


def test_override_and_refsafe_flags():
    xml = contacts_xml().replace(
        '<option ', '<option timestep=".03" o_solref=".01 .5" o_solimp=".7 .8 .01 .3 1" '
        'o_friction=".2 .2 .002 .0001 0" o_margin=".01" ').replace(
        '/>\n  <default>', '><flag override="enable"/></option>\n  <default>', 1)
    assert "override" in xml
    errors, _, theirs = check(xml, seed=5, spread=0.12, center=(0, 0, 0.05))
    assert not errors, errors[:5]
    assert sum(res["nefc"] for res in theirs) > 0
    norefsafe = FRICTION_LIMITS.replace('<flag contact="disable"/>',
                                        '<flag contact="disable" refsafe="disable"/>')
    errors, _, _ = check(norefsafe, seed=6, spread=0.4)
    assert not errors, errors[:5]


@pytest.mark.parametrize("flag", ["constraint", "equality", "frictionloss", "limit",
                                  "contact"])
def test_disable_flags(flag):
    xml = COMBINED.replace("<mujoco>", f'<mujoco>\n  <option><flag {flag}="disable"/>'
                                       f'</option>', 1)
    errors, ours, theirs = check(xml, seed=zlib.crc32(flag.encode()), nworld=3)
    assert not errors, errors[:5]
    types = _types(theirs)
    gone = {"constraint": set(range(8)), "equality": {0}, "frictionloss": {1, 2},
            "limit": {3, 4}, "contact": {5, 6, 7}}[flag]
    assert not types & gone
    if flag == "constraint":
        assert not ours["nefc"].any()


def test_njmax_overflow_warns_and_keeps_whole_elements_in_order():
    m, mjm = pair(COMBINED)
    qpos, qvel, active = random_state(mjm, 11, nworld=4)
    active[:] = 1
    theirs = run_mujoco(mjm, qpos, qvel, active)
    njmax = 40
    assert min(res["nefc"] for res in theirs) > njmax  # every world overflows
    d = tiphys.make_data(m, 4, njmax=njmax)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # counted on the device: the stages never read back
        run_tiphys(m, d, qpos, qvel, active)
    with pytest.warns(RuntimeWarning, match=r"make_data\(m, nworld, njmax=\.\.\.\)"):
        ours = fetch(d)  # reading results reports what was counted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tiphys.check_warnings(m, d) == {}  # each occurrence once
    number = d.numpy("warning_number")
    assert (number[:, 2] == 1).all()  # mjWARN_CNSTRFULL, once per world
    for w, res in enumerate(theirs):
        n = int(ours["nefc"][w])
        assert 0 < n <= njmax
        assert not compare_world(ours, res, w, rows=n)
        # the next element would not have fit: it starts at row n and is longer
        nxt = n
        while nxt < res["nefc"] and res["type"][nxt] == res["type"][n] and \
                res["id"][nxt] == res["id"][n]:
            nxt += 1
        assert nxt - n > njmax - n
        assert ours["efc_overflow"][w] == res["nefc"] - n
        counted = sum(int(ours[k][w]) for k in ("ne", "nf", "nl"))
        assert counted == int(np.sum(res["type"][:n] <= 4))
        for i, c in enumerate(res["contacts"]):
            kept = 0 <= c["efc_address"][0] < n
            assert ours["contact_efc_address"][w][i] == (c["efc_address"][0] if kept else -1)
    # with room, no warning and every row
    d = tiphys.make_data(m, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_tiphys(m, d, qpos, qvel, active)
    assert not fetch(d)["efc_overflow"].any()


def test_nan_in_one_world_leaves_the_others_alone():
    m, mjm = pair(COMBINED)
    qpos, qvel, active = random_state(mjm, 21, nworld=4)
    bad = qpos.copy()
    bad[1, :] = np.nan
    badvel = qvel.copy()
    badvel[2, :] = np.nan
    d = tiphys.make_data(m, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run_tiphys(m, d, bad, badvel, active)
    ours = fetch(d)
    theirs = run_mujoco(mjm, qpos, qvel, active)
    for w in (0, 3):
        assert not compare_world(ours, theirs[w], w)
    assert 0 <= ours["nefc"][1] <= d.njmax
    # a NaN velocity only reaches that world's vel/aref
    assert ours["nefc"][2] == theirs[2]["nefc"]
    assert np.isnan(ours["vel"][2][:theirs[2]["nefc"]]).all()


# ------------------------------------------------------------------------------------
# corpus
# ------------------------------------------------------------------------------------

CORPUS_GROUP = "constraint rows (random states, MuJoCo's contacts)"
COMPILER_LATER = SENSORS_LATER


def corpus_states(mjm, rng, nworld):
    """qpos near qpos0 and the keyframes (as the collision corpus), random qvel."""
    from test_collision_corpus import corpus_states as states
    return states(mjm, rng, nworld), rng.normal(size=(nworld, mjm.nv))


def corpus_check(path, seed, nworld=3):
    """(errors, status) of one model: rows of tiphys (fed MuJoCo's contacts, so that
    collision differences stay out) against MuJoCo's. tiphys' NotImplementedError
    goes through."""
    with StrippedModel(path, COMPILER_LATER) as tmp:
        mjm = mujoco.MjModel.from_xml_path(tmp)
        m = tiphys.load_model(tmp)
    rng = np.random.default_rng(seed)
    qpos, qvel = corpus_states(mjm, rng, nworld)
    theirs = run_mujoco(mjm, qpos, qvel)
    ncon = max([len(r["contacts"]) for r in theirs] + [0])
    d = tiphys.make_data(m, nworld, nconmax=max(ncon, 1),
                         njmax=max([r["nefc"] for r in theirs] + [1]))
    run_tiphys(m, d, qpos, qvel, contacts=[r["contacts"] for r in theirs])
    ours = fetch(d)
    errors = [e for w in range(nworld) for e in compare_world(ours, theirs[w], w)]
    nefc = sum(r["nefc"] for r in theirs)
    return errors, (f"match ({nefc} rows)" if not errors else f"MISMATCH: {errors[0]}")


@pytest.mark.parametrize("rel", corpus_params("test_constraint",
                                              stage_models(COMPILER_LATER)))
def test_corpus_rows(rel, report):
    path = os.path.join(corpus_dir(), rel)
    with not_yet("test_constraint", CORPUS_GROUP, rel):
        errors, status = corpus_check(path, seed=zlib.crc32(rel.encode()))
    report(CORPUS_GROUP, rel, status)
    assert not errors, errors[:5]


# ------------------------------------------------------------------------------------
# f32 (a subprocess: Taichi's precision is per process)
# ------------------------------------------------------------------------------------

F32_TOL = 1e-5


@pytest.mark.parametrize("arch", spirv.archs())
def test_f32_rows_match_mujoco_to_single_precision(arch):
    import json
    res = subproc.run([os.path.abspath(__file__), "f32", arch], key=f"{arch}-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(worst) == {"equality", "friction_limits", "contacts_pyramidal",
                          "contacts_elliptic"}
    for name, err in worst.items():
        assert err < F32_TOL, f"{name}: relative error {err}"


def _f32_main(arch):
    """Rows in f32 against MuJoCo (f64), with MuJoCo's contacts; prints JSON: the
    largest error per model relative to each field's magnitude."""
    import json
    tiphys.init(arch=arch, precision="f32")
    cases = {"equality": (EQUALITY, {}), "friction_limits": (FRICTION_LIMITS, {}),
             "contacts_pyramidal": (contacts_xml(), dict(spread=0.12, center=(0, 0, 0.05))),
             "contacts_elliptic": (contacts_xml("elliptic", 2),
                                   dict(spread=0.12, center=(0, 0, 0.05)))}
    out = {}
    for name, (xml, kw) in cases.items():
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = tiphys.load_model_from_string(xml)
        qpos, qvel, active = random_state(mjm, 3, 4, **kw)
        theirs = run_mujoco(mjm, qpos, qvel, active)
        d = tiphys.make_data(m, 4, nconmax=max(1, max(len(r["contacts"]) for r in theirs)))
        run_tiphys(m, d, qpos, qvel, active, contacts=[r["contacts"] for r in theirs])
        ours = fetch(d)
        worst = 0.0
        for w, res in enumerate(theirs):
            n = res["nefc"]
            if int(ours["nefc"][w]) != n or not np.array_equal(ours["type"][w][:n],
                                                                res["type"]):
                worst = np.inf
                continue
            for k in EFC_FLOATS:
                if n:
                    a = np.asarray(ours[k][w][:n], dtype=np.float64).reshape(n, -1)
                    b = np.asarray(res[k], dtype=np.float64).reshape(n, -1)
                    scale = max(float(np.abs(b).max()), 1e-30)
                    rel = np.abs(a - b) / (np.abs(b) + scale)
                    worst = max(worst, float(rel.max()))
        out[name] = worst
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1:2] == ["f32"]:
        _f32_main(sys.argv[2] if len(sys.argv) > 2 else "cpu")
