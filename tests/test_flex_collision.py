"""Flex collisions (kernels/collide_flex.py, collide_flex_elem.py) against MuJoCo 3.4.0.

Planes against flex vertices (mj_collidePlaneFlex) for lines, triangles and
tetrahedra; geoms (sphere, capsule, box, ellipsoid, cylinder, mesh) against flex
elements (mj_collideGeomElem: analytic detectors for lines and sphere-triangle, the
native ccd otherwise); flex-flex element pairs, self-collisions (every selfcollide
mode: the SAP sweep's and the BVH traversal's pair orders) and internal collisions.
Compared: the contacts after forward (every field, in MuJoCo's order, merged with the
geom pairs' contacts by bodyflex signature), the constraint rows (dense and sparse Jacobians, pyramidal and
elliptic cones, pinned vertices, element contacts spread over the element's vertex
bodies), islands, qacc, and 100-step trajectories of flexes dropped on planes and of
a ball and a box dropped on a pinned cloth, of a default cloth and a default soft
body dropped on the floor. Several worlds in random states, f64 on the CPU, outputs
poisoned with NaN first; one f32 run. What tiphys does not collide yet is refused by
name: heightfield-element pairs, passive flex contacts.
"""
import os

import mujoco
import numpy as np
import pytest

import spirv
import subproc
import tiphys
from oracle import compare_contacts, contact_arrays, mujoco_contacts, tiphys_contacts
from test_constraint import _poison, compare_world, fetch, run_mujoco

NWORLD = 3
RTOL = 1e-9
SELF = 'selfcollide="none"'


def _fc(name, attrs, contact="", inner=""):
    return (f'<flexcomp name="{name}" {attrs}><contact {SELF} {contact}/>{inner}'
            f'</flexcomp>')


ROPE = _fc("rope", 'type="grid" count="6 1 1" spacing=".1 .1 .1" dim="1" radius=".02" '
           'mass="1" pos="0 0 .01"', 'margin=".01"',
           '<edge stiffness="30" damping=".3"/>')
CLOTH = _fc("cloth", 'type="grid" count="4 3 1" spacing=".1 .1 .1" dim="2" radius=".01" '
            'mass="1" pos="0 0 0"', 'solref=".01 1" friction=".7"',
            '<edge damping=".5"/>')
# 72 dofs: sparse Jacobians; a pinned vertex (on the world body) on the floor makes a
# contact without dofs (exclude 3; with dense Jacobians MuJoCo's mj_island fails on its
# all-zero rows)
BIGCLOTH = _fc("big", 'type="grid" count="5 5 1" spacing=".1 .1 .1" dim="2" radius=".01" '
               'mass="1" pos="0 0 0"', 'condim="4" priority="1" solimp=".8 .9 .01 .4 3" '
               'friction=".5 .01 .001"', '<edge damping=".2"/><pin id="0"/>')
BOX = _fc("box", 'type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" radius=".01" '
          'mass="2" pos="0 0 .125"', 'internal="false" condim="6" gap=".005" margin=".02"',
          '<elasticity young="5e3" poisson=".2" damping=".003"/>')
# a free sphere on the floor that the flexes do not touch (bitmasks), a second plane on
# a body, and two flexes that do not collide with each other
MIXED = ('<body name="ball" pos=".1 .1 .05"><freejoint/><geom name="ball" size=".05" '
         'contype="2" conaffinity="2"/></body>'
         '<body name="wall" pos="0 0 .1"><geom name="wall" type="plane" size=".5 .5 .1" '
         'euler="0 .3 0" contype="1" conaffinity="1" solmix="2" priority="0"/></body>'
         + _fc("cloth", 'type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2" '
               'radius=".01" mass="1" pos="0 0 .02"', 'contype="1" conaffinity="1"')
         + _fc("rope", 'type="grid" count="4 1 1" spacing=".1 .1 .1" dim="1" '
               'radius=".01" mass="1" pos="0 .3 .01"', 'contype="4" conaffinity="4"'))

CASES = {"rope": ROPE, "cloth": CLOTH, "bigcloth": BIGCLOTH, "box": BOX, "mixed": MIXED}


def xml(case, cone="pyramidal", extra=""):
    return (f'<mujoco><option cone="{cone}" timestep="0.002">{extra}</option>'
            f'<worldbody><geom name="floor" type="plane" size="1 1 .1" euler=".1 -.05 0" '
            f'contype="7" conaffinity="7"/>{CASES[case]}</worldbody></mujoco>')


_CACHE = {}


def pair(text):
    if text not in _CACHE:
        _CACHE[text] = (tiphys.load_model_from_string(text),
                        mujoco.MjModel.from_xml_string(text))
    return _CACHE[text]


def random_state(mjm, seed, nworld=NWORLD, scale=0.02):
    rng = np.random.default_rng(seed)
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-scale, scale, (nworld, mjm.nq))
    for w in range(nworld):
        for j in range(mjm.njnt):
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                adr = mjm.jnt_qposadr[j] + 3
                qpos[w, adr:adr + 4] /= np.linalg.norm(qpos[w, adr:adr + 4])
    return qpos, rng.normal(size=(nworld, mjm.nv)) * 0.3


def _set(arr, values):
    full = arr.to_numpy()
    full[:, :values.shape[1]] = values
    arr.from_numpy(full)


def forward_both(m, mjm, qpos, qvel):
    """tiphys.forward on every world (outputs poisoned first) and MuJoCo's mj_forward
    per world: (Data, per-world MjData copies)."""
    d = tiphys.make_data(m, len(qpos))
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    _poison(d)
    for name in ("contact_dist", "contact_pos", "contact_frame", "qacc"):
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.to_numpy().shape, np.nan))
    tiphys.forward(m, d)
    theirs = []
    for w in range(len(qpos)):
        md = mujoco.MjData(mjm)
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        theirs.append(md)
    return d, theirs


def check_forward(text, seed, nworld=NWORLD, rtol=RTOL, scale=0.02):
    m, mjm = pair(text)
    qpos, qvel = random_state(mjm, seed, nworld, scale)
    d, theirs = forward_both(m, mjm, qpos, qvel)
    arrays = contact_arrays(d)
    qacc = d.numpy("qacc")
    errors = []
    nflexcon = 0
    for w, md in enumerate(theirs):
        want = mujoco_contacts(md)
        nflexcon += sum(1 for c in want if c["flex"][1] >= 0)
        errors += [f"world {w}: {e}" for e in
                   compare_contacts(tiphys_contacts(d, w, arrays), want)]
        scale = max(1.0, float(np.abs(md.qacc).max()))
        err = float(np.abs(qacc[w, :mjm.nv] - md.qacc).max()) / scale
        if not err < rtol:
            errors.append(f"world {w} qacc: relative error {err:.2e}")
    # the rows after fwdPosition / fwdVelocity (forward's own rows: same state)
    rows = run_mujoco(mjm, qpos, qvel)
    ours = fetch(d)
    for w in range(nworld):
        errors += compare_world(ours, rows[w], w, rtol=rtol)
    # islands: flex contacts find their trees from their Jacobian rows
    nisland, island = d.numpy("nisland"), d.numpy("efc_island")
    for w, md in enumerate(theirs):
        if nisland[w] != md.nisland or not np.array_equal(island[w][:md.nefc],
                                                           md.efc_island):
            errors.append(f"world {w} islands: {nisland[w]} != {md.nisland}")
    return errors, nflexcon


@pytest.mark.parametrize("case", sorted(CASES))
def test_plane_flex_contacts_rows_and_qacc_match_mujoco(case):
    total = 0
    for seed in range(2):
        errors, n = check_forward(xml(case), seed)
        assert errors == [], errors[:10]
        total += n
    assert total > 0  # the states touch the planes


@pytest.mark.parametrize("case", ["cloth", "bigcloth", "box"])
def test_elliptic_cones_match_mujoco(case):
    errors, n = check_forward(xml(case, cone="elliptic"), 3)
    assert errors == [] and n > 0, errors[:10]


def test_override_flag_matches_mujoco():
    text = xml("cloth", extra='<flag override="enable"/>').replace(
        '<option ', '<option o_margin=".03" o_solref=".03 1.1" o_solimp=".7 .9 .01 .5 2" '
        'o_friction=".4 .4 .01 .001 .001" ', 1)
    errors, n = check_forward(text, 4)
    assert errors == [] and n > 0, errors[:10]


@pytest.mark.parametrize("case", ["cloth", "box", "mixed"])
def test_flex_dropped_on_plane_trajectory_matches_mujoco(case):
    """100 steps of a flex falling on the floor from random states in several worlds."""
    m, mjm = pair(xml(case))
    qpos, qvel = random_state(mjm, 7)
    d = tiphys.make_data(m, NWORLD)
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    mds = []
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mds.append(md)
    ncon = 0
    for step in range(100):
        tiphys.step(m, d)
        for md in mds:
            mujoco.mj_step(mjm, md)
            ncon += md.ncon
        if step % 25 == 24 or step == 0:
            got = d.numpy("qpos")[:, :mjm.nq]
            for w, md in enumerate(mds):
                err = np.abs(got[w] - md.qpos).max()
                assert err < 1e-7, f"step {step} world {w}: qpos error {err:.2e}"
    assert ncon > 0


def test_contacts_keep_mujoco_order_with_geom_pairs():
    """Geom-pair and geom-flex contacts interleave by bodyflex signature."""
    m, mjm = pair(xml("mixed"))
    qpos, qvel = random_state(mjm, 1)
    d, theirs = forward_both(m, mjm, qpos, qvel)
    kinds = [tuple("g" if c.geom[1] >= 0 else "f" for c in md.contact[:md.ncon])
             for md in theirs]
    assert any("g" in k and "f" in k for k in kinds)
    arrays = contact_arrays(d)
    for w, md in enumerate(theirs):
        assert compare_contacts(tiphys_contacts(d, w, arrays), mujoco_contacts(md)) == []


@pytest.mark.parametrize("arch", spirv.cpu_and_cuda())
def test_flex_collisions_f32_close_to_mujoco(arch):
    """f32 on the CPU, and on CUDA where present (a subprocess: the precision is per
    process): plane-vertex,
    geom-element (analytic and ccd), rope-rope and a rope's SAP self-collision contacts
    and their forward accelerations. (Triangle-triangle ccd pairs are left out: in f32
    the ccd may miss a pair MuJoCo's f64 finds.)"""
    script = f"""
import sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import numpy as np, tiphys
tiphys.init(arch={arch!r}, precision="f32")
import test_flex_collision as t
from oracle import contact_arrays, tiphys_contacts, mujoco_contacts
out = {{}}
for text in (t.xml("box"), t.elem_xml("cloth", "sphere"), t.elem_xml("soft", "box"),
             t._self_xml(1, "auto"), t.pair_xml("rope-rope")):
    m, mjm = t.pair(text)
    qpos, qvel = t.random_state(mjm, 3, 3, 0.03)
    d, theirs = t.forward_both(m, mjm, qpos, qvel)
    arrays = contact_arrays(d)
    qacc = d.numpy("qacc")
    worst = 0.0
    total = 0
    for w, md in enumerate(theirs):
        ours, want = tiphys_contacts(d, w, arrays), mujoco_contacts(md)
        # matched by ids (in f32 a sweep's near-ties may order pairs differently)
        def ids(c):  # a sweep's pair may come the other way round in f32: unordered
            e = sorted(int(x) for x in c["elem"]) if c["flex"][0] == c["flex"][1] else \
                [int(x) for x in c["elem"]]
            return tuple([int(x) for k in ("geom", "flex", "vert") for x in c[k]] + e)
        mine = dict((ids(c), c) for c in ours)
        theirs = dict((ids(c), c) for c in want)
        # a contact only one side finds sits on the threshold (f32 vs f64 distances)
        for k in set(mine) ^ set(theirs):
            c = mine.get(k, theirs.get(k))
            assert abs(float(c["dist"][0]) - float(c["includemargin"][0])) < 1e-4, k
        total += len(want)
        for k in set(mine) & set(theirs):
            a, b = mine[k], theirs[k]
            worst = max(worst, np.abs(a["pos"] - b["pos"]).max(),
                        np.abs(a["dist"] - b["dist"]).max())
        scale = max(1.0, np.abs(md.qacc).max())
        assert np.abs(qacc[w, :mjm.nv] - md.qacc).max() / scale < 1e-2
    assert worst < 1e-5 and total > 0, (worst, total)
    out[len(out)] = worst
print("OK", out)
"""
    res = subproc.run(["-c", script], key=f"{arch}-f32")
    assert res.returncode == 0 and "OK" in res.stdout, (res.stdout + res.stderr)[-3000:]
    print(res.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ refusals

def _refused(text, match):
    m = tiphys.load_model_from_string(text)
    with pytest.raises(NotImplementedError, match=match):
        tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match=match):
        tiphys.put_model(mujoco.MjModel.from_xml_string(text))


def test_passive_flex_contacts_are_refused_by_name():
    text = xml("cloth").replace('<contact ', '<contact passive="true" ')
    _refused(text, "flex collisions: flex 'cloth' passive contacts.*not supported yet")


@pytest.mark.parametrize("dim,mode", [(1, "auto"), (2, "auto"), (2, "sap"), (3, "sap"),
                                      (1, "bvh"), (2, "bvh"), (3, "auto"), (3, "bvh")])
def test_midphase_self_collisions_match_mujoco(dim, mode):
    """mj_collideFlexSAP (selfcollide "sap", and "auto" below 3D) and mj_collideTree
    (selfcollide "bvh", and "auto" in 3D): element pairs in the order the sweep or the
    traversal finds them."""
    text = _self_xml(dim, mode)
    for seed in (3, 8):
        errors, n = check_forward(text, seed, rtol=RTOL if dim == 1 else CCD_RTOL,
                                  scale=0.03)
        assert errors == [] and n > 0, errors[:10]


def test_heightfield_element_pairs_are_refused_naming_geom_and_flex():
    text = ('<mujoco><asset><hfield name="h" nrow="3" ncol="3" size="1 1 .1 .1"/></asset>'
            '<worldbody><geom name="terrain" type="hfield" hfield="h"/>' + CLOTH +
            '</worldbody></mujoco>')
    _refused(text, "flex 'cloth' collisions with geom 'terrain' \\(hfield\\)")


def test_enabling_refused_flex_contacts_after_make_data_is_refused():
    text = xml("cloth", extra='<flag contact="disable"/>').replace('<contact ',
                                                                  '<contact passive="true" ')
    m = tiphys.load_model_from_string(text)
    d = tiphys.make_data(m, 1)
    tiphys.step(m, d)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    with pytest.raises(NotImplementedError, match="flex 'cloth' passive contacts"):
        tiphys.step(m, d)


# ------------------------------------------------------------------ geoms against elements

GEOMS = {
    "sphere": ('type="sphere" size=".05"', .05),
    "capsule": ('type="capsule" size=".03 .06" euler="0 1.1 .3"', .03),
    "box": ('type="box" size=".06 .05 .03" euler=".1 .05 .4"', .03),
    "ellipsoid": ('type="ellipsoid" size=".06 .05 .04"', .04),
    "cylinder": ('type="cylinder" size=".05 .03"', .03),
    "mesh": ('type="mesh" mesh="tet"', .02),
}
MESH = ('<asset><mesh name="tet" vertex="-.06 -.05 -.02  .06 -.05 -.02  0 .07 -.02  '
        '0 0 .05"/></asset>')
# a pinned cloth (36 + 6 dofs: dense), a pinned rope, a soft box on the floor
FLEXES = {
    "cloth": _fc("cloth", 'type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" '
                 'radius=".01" mass="1"', 'condim="4" solref=".005 1"',
                 '<edge damping=".5"/><pin id="0 3 12 15"/>'),
    "rope": _fc("rope", 'type="grid" count="5 1 1" spacing=".05 .1 .1" dim="1" '
                'radius=".02" mass="1"', 'margin=".005"',
                '<edge stiffness="20" damping=".5"/><pin id="0 4"/>'),
    "soft": _fc("soft", 'type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                'radius=".01" mass="2" pos="0 0 -.1"', 'internal="false"',
                '<elasticity young="5e3" poisson=".2" damping=".003"/><pin id="0 2 6 8"/>'),
}


def elem_xml(flex, geom, cone="pyramidal", z=0.0, free=True):
    attrs, half = GEOMS[geom]
    joint = "<freejoint/>" if free else ""
    return (f'<mujoco><option cone="{cone}" timestep="0.002"/>{MESH}<worldbody>'
            f'<geom name="floor" type="plane" size="1 1 .1" pos="0 0 -.4"/>'
            f'<body name="obj" pos=".02 .01 {half + z}">{joint}<geom name="obj" {attrs} '
            f'friction=".8 .02 .002" solimp=".85 .95 .002 .5 2"/></body>'
            f'{FLEXES[flex]}</worldbody></mujoco>')


ELEM_CASES = [(f, g) for f in FLEXES for g in GEOMS]
# the pairs that take the native ccd: its witness points stop within ccd_tolerance of
# the optimum, so an input one ulp apart (geom_xmat) can move a contact frame by ~1e-9
CCD_RTOL = 1e-8


def _ccd(flex, geom):
    dim = {"rope": 1, "cloth": 2, "soft": 3}[flex]
    return not ((dim == 1 and geom in ("sphere", "capsule", "box")) or
                (dim == 2 and geom == "sphere"))


@pytest.mark.parametrize("flex,geom", ELEM_CASES, ids=[f"{f}-{g}" for f, g in ELEM_CASES])
def test_geom_element_contacts_rows_and_qacc_match_mujoco(flex, geom):
    text = elem_xml(flex, geom)
    total = 0
    for seed in range(2):
        errors, n = check_forward(text, seed, rtol=CCD_RTOL if _ccd(flex, geom) else RTOL)
        assert errors == [], errors[:10]
        total += n
    assert total > 0  # the states touch the flex


@pytest.mark.parametrize("geom", ["sphere", "box", "mesh"])
def test_geom_element_elliptic_cones_match_mujoco(geom):
    errors, n = check_forward(elem_xml("cloth", geom, cone="elliptic"), 5,
                              rtol=CCD_RTOL if _ccd("cloth", geom) else RTOL)
    assert errors == [] and n > 0, errors[:10]


@pytest.mark.parametrize("geom", ["sphere", "box"])
def test_ball_dropped_on_pinned_cloth_trajectory_matches_mujoco(geom):
    """100 steps of a geom falling onto a cloth pinned at its corners."""
    m, mjm = pair(elem_xml("cloth", geom, z=0.02))
    qpos, qvel = random_state(mjm, 11)
    d = tiphys.make_data(m, NWORLD)
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    mds = []
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mds.append(md)
    nelem = 0
    for step in range(100):
        tiphys.step(m, d)
        for md in mds:
            mujoco.mj_step(mjm, md)
            nelem += sum(1 for c in md.contact[:md.ncon] if c.elem[1] >= 0)
        if step % 25 == 24:
            got = d.numpy("qpos")[:, :mjm.nq]
            for w, md in enumerate(mds):
                err = np.abs(got[w] - md.qpos).max()
                assert err < 1e-7, f"step {step} world {w}: qpos error {err:.2e}"
    assert nelem > 0


def _big_cloth(condim):
    return elem_xml("cloth", "sphere").replace('count="4 4 1"', 'count="5 5 1"').replace(
        'pin id="0 3 12 15"', 'pin id="0 4 20 24"').replace('condim="4"',
                                                            f'condim="{condim}"')


def test_sparse_element_contacts_match_mujoco():
    """A bigger cloth (sparse Jacobians) under a ball: element contacts whose vertex
    bodies' chains merge into one sparse row."""
    text = _big_cloth(3)
    m, mjm = pair(text)
    assert mujoco.mj_isSparse(mjm)
    errors, n = check_forward(text, 2)
    assert errors == [] and n > 0, errors[:10]


def test_sparse_element_contacts_with_torsion_match_mujoco_dense_rows():
    """condim 4 element contacts with sparse Jacobians: MuJoCo 3.4.0's sparse mj_jacSum
    lays the rotational rows out as if contiguous with the translational ones (they
    start at 3 nv), so its sparse rows carry stale rotational values there; tiphys
    gives the rows of MuJoCo's dense path, compared here against the same model with
    jacobian="dense" (same contacts, rows and qacc)."""
    text = _big_cloth(4)
    m, _ = pair(text)
    dense = text.replace('<option ', '<option jacobian="dense" ', 1)
    mjm = mujoco.MjModel.from_xml_string(dense)
    assert m.is_sparse and not mujoco.mj_isSparse(mjm)
    _CACHE[text + "#dense"] = (m, mjm)
    errors, n = check_forward(text + "#dense", 2)
    assert errors == [] and n > 0, errors[:10]


@pytest.mark.parametrize("text", [xml("mixed"), elem_xml("soft", "mesh")],
                         ids=["planes", "elements"])
def test_put_model_flex_collisions_match_mujoco(text):
    """A model compiled by MuJoCo (put_model) collides its flexes the same way."""
    mjm = mujoco.MjModel.from_xml_string(text)
    m = tiphys.put_model(mjm)
    _CACHE[text + "#put"] = (m, mjm)
    errors, n = check_forward(text + "#put", 6, rtol=CCD_RTOL)
    assert errors == [] and n > 0, errors[:10]


# ------------------------------------------------------------------ element pairs

ROPE_X = _fc("ropex", 'type="grid" count="5 1 1" spacing=".05 .1 .1" dim="1" radius=".02" '
             'mass="1" pos="0 0 0"', 'margin=".004"', '<edge damping=".5"/><pin id="0 4"/>')
ROPE_Y = _fc("ropey", 'type="grid" count="5 1 1" spacing=".05 .1 .1" dim="1" radius=".015" '
             'mass="1" pos=".01 0 .03" euler="0 0 90"', 'priority="1" friction=".3"',
             '<edge damping=".5"/><pin id="0 4"/>')
SHEET = _fc("sheet", 'type="grid" count="4 4 1" spacing=".05 .05 .1" dim="2" radius=".01" '
            'mass="1" pos="0 0 -.025"', 'solmix="3"', '<edge damping=".5"/><pin id="0 3 12 15"/>')
CUBE = _fc("cube", 'type="grid" count="3 3 3" spacing=".05 .05 .05" dim="3" radius=".005" '
           'mass="1" pos="0 0 -.075"', 'internal="false"', '<pin id="0 2 6 8"/>')
PAIRS = {"rope-rope": ROPE_X + ROPE_Y, "rope-sheet": ROPE_X + SHEET,
         "rope-cube": ROPE_X + CUBE, "sheet-cube": SHEET.replace('pos="0 0 -.025"',
                                                                'pos="0 0 -.01"') + CUBE}


def pair_xml(case, cone="pyramidal"):
    return (f'<mujoco><option cone="{cone}" timestep="0.002"/><worldbody>'
            f'<geom name="floor" type="plane" size="1 1 .1" pos="0 0 -.3"/>'
            f'{PAIRS[case]}</worldbody></mujoco>')


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_flex_flex_contacts_rows_and_qacc_match_mujoco(case):
    text = pair_xml(case)
    total = 0
    for seed in range(2):
        errors, n = check_forward(text, seed, rtol=RTOL if case == "rope-rope" else CCD_RTOL)
        assert errors == [], errors[:10]
        total += n
    m, mjm = pair(text)
    assert total > 0


def _self_xml(dim, mode="narrow", extra=""):
    if dim == 1:
        body = _fc("coil", 'type="grid" count="8 1 1" spacing=".03 .1 .1" dim="1" '
                   'radius=".014" mass="1"', "", '<edge damping=".5"/><pin id="0 7"/>')
    elif dim == 2:
        body = _fc("sheet", 'type="grid" count="4 4 1" spacing=".05 .05 .1" dim="2" '
                   'radius=".024" mass="1"', "", '<edge damping=".5"/><pin id="0 3 12 15"/>')
    else:
        body = _fc("cube", 'type="grid" count="3 3 3" spacing=".05 .05 .05" dim="3" '
                   'radius=".012" mass="1"', 'internal="false"',
                   '<pin id="0 2 6 8"/>')
    body = body.replace(SELF, f'selfcollide="{mode}"')
    return (f'<mujoco><option timestep="0.002">{extra}</option><worldbody>'
            f'<geom name="floor" type="plane" size="1 1 .1" pos="0 0 -.3"/>{body}'
            f'</worldbody></mujoco>')


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_narrow_self_collisions_match_mujoco(dim):
    text = _self_xml(dim)
    errors, n = check_forward(text, 3, rtol=RTOL if dim == 1 else CCD_RTOL, scale=0.03)
    assert errors == [] and n > 0, errors[:10]


@pytest.mark.parametrize("mode", ["auto", "bvh", "sap"])
def test_self_collision_modes_without_midphase_match_mujoco(mode):
    """With the midphase disabled every mode collides the element pairs directly."""
    text = _self_xml(2, mode, '<flag midphase="disable"/>')
    errors, n = check_forward(text, 4, rtol=CCD_RTOL, scale=0.03)
    assert errors == [] and n > 0, errors[:10]


def test_too_many_element_pairs_are_refused(monkeypatch):
    """Element pairs are listed on the host: past MAX_ELEM_PAIRS a clear refusal."""
    from tiphys.kernels import collide_flex
    monkeypatch.setattr(collide_flex, "MAX_ELEM_PAIRS", 10)
    m = tiphys.load_model_from_string(_self_xml(2))
    with pytest.raises(NotImplementedError, match="flex #0 with itself: 153 element pairs"):
        tiphys.make_data(m, 1)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_internal_collisions_match_mujoco(dim):
    """internal="true": predefined element-vertex pairs (lines, triangles) and each
    tetrahedron's faces against their opposite vertices, before the element pairs."""
    text = _self_xml(dim, "narrow").replace('internal="false"', "").replace(
        'selfcollide="narrow"', 'selfcollide="narrow" internal="true"')
    m, mjm = pair(text)
    assert mjm.flex_internal[0] == 1
    errors, n = check_forward(text, 5, rtol=RTOL if dim == 1 else CCD_RTOL, scale=0.03)
    assert errors == [] and n > 0, errors[:10]
    md = mujoco.MjData(mjm)
    qpos, qvel = random_state(mjm, 5, 1, 0.03)
    md.qpos[:] = qpos[0]
    mujoco.mj_forward(mjm, md)
    internal = [c for c in md.contact[:md.ncon] if c.vert[0] >= 0 or c.vert[1] >= 0]
    assert internal  # the internal part itself makes contacts


def test_default_cloth_dropped_on_floor_trajectory_matches_mujoco():
    """A flexcomp cloth with every contact default (contype = conaffinity = 1,
    selfcollide="auto": the SAP sweep) dropped on the floor and folding onto itself:
    100 steps in several worlds."""
    text = ('<mujoco><option timestep="0.002"/><worldbody>'
            '<geom name="floor" type="plane" size="1 1 .1"/>'
            '<flexcomp name="cloth" type="grid" count="5 5 1" spacing=".05 .05 .1" dim="2" '
            'radius=".01" mass=".5" pos="0 0 .03" euler=".4 .2 0"><edge damping=".2"/>'
            '</flexcomp></worldbody></mujoco>')
    m, mjm = pair(text)
    assert mjm.flex_selfcollide[0] == mujoco.mjtFlexSelf.mjFLEXSELF_AUTO
    qpos, qvel = random_state(mjm, 13, scale=0.01)
    d = tiphys.make_data(m, NWORLD)
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    mds = []
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mds.append(md)
    nself = nfloor = 0
    for step in range(100):
        tiphys.step(m, d)
        for md in mds:
            mujoco.mj_step(mjm, md)
            nself += sum(1 for c in md.contact[:md.ncon] if c.flex[0] >= 0)
            nfloor += sum(1 for c in md.contact[:md.ncon] if c.geom[0] >= 0)
        if step % 25 == 24:
            got = d.numpy("qpos")[:, :mjm.nq]
            for w, md in enumerate(mds):
                err = np.abs(got[w] - md.qpos).max()
                assert err < 1e-7, f"step {step} world {w}: qpos error {err:.2e}"
    assert nfloor > 0 and nself > 0



@pytest.mark.parametrize("text", [_self_xml(1, "auto"), _self_xml(2, "auto"),
                                  _self_xml(3, "sap"), elem_xml("soft", "sphere")],
                         ids=["rope", "cloth", "cube", "soft-active"])
def test_flex_bvh_matches_mujoco(text):
    """The flex hierarchy the SAP axis comes from is MuJoCo's (bvh_child, bvh_nodeid of
    the flex's tree, over its active elements), as compiled (tiphys/compiler/bvh.py)."""
    m, mjm = pair(text)
    for f in range(mjm.nflex):
        adr, num = mjm.flex_bvhadr[f], mjm.flex_bvhnum[f]
        assert m.arrays.flex_bvhadr[f] == adr and m.arrays.flex_bvhnum[f] == num
        np.testing.assert_array_equal(m.arrays.bvh_child[adr:adr + num],
                                      mjm.bvh_child[adr:adr + num])
        np.testing.assert_array_equal(m.arrays.bvh_nodeid[adr:adr + num],
                                      mjm.bvh_nodeid[adr:adr + num])


def test_square_cloth_pinned_at_corners_trajectory_matches_mujoco():
    """A square cloth pinned at its four corners under a ball: the flex box's x and y
    sides tie, and MuJoCo's BVH root (combined node by node) picks the SAP axis; 200
    steps with self, floor and ball contacts."""
    text = ('<mujoco><option timestep="0.002"/><worldbody>'
            '<geom name="floor" type="plane" size="1 1 .1"/>'
            '<body pos=".05 .05 .25"><freejoint/><geom size=".06"/></body>'
            '<flexcomp name="cloth" type="grid" count="10 10 1" spacing=".04 .04 .1" '
            'dim="2" radius=".005" mass=".5" pos="0 0 .2"><edge damping=".2"/>'
            '<pin id="0 9 90 99"/></flexcomp></worldbody></mujoco>')
    m, mjm = pair(text)
    d = tiphys.make_data(m, 1)
    md = mujoco.MjData(mjm)
    nself = 0
    for step in range(200):
        tiphys.step(m, d)
        mujoco.mj_step(mjm, md)
        nself += sum(1 for c in md.contact[:md.ncon] if c.flex[0] >= 0)
        if step % 50 == 49:
            err = np.abs(d.numpy("qpos")[0, :mjm.nq] - md.qpos).max()
            assert err < 1e-8, f"step {step}: qpos error {err:.2e}"
    assert nself > 0


def test_default_soft_body_dropped_on_floor_trajectory_matches_mujoco():
    """A 3D flexcomp with every contact default (selfcollide="auto": its BVH) dropped
    on the floor: 100 steps in several worlds."""
    text = ('<mujoco><option timestep="0.002"/><worldbody>'
            '<geom name="floor" type="plane" size="1 1 .1"/>'
            '<flexcomp name="soft" type="grid" count="3 3 3" spacing=".04 .04 .04" dim="3" '
            'radius=".012" mass=".5" pos="0 0 .05" euler=".3 .2 0">'
            '<elasticity young="2e3" poisson=".2" damping=".002"/></flexcomp>'
            '</worldbody></mujoco>')
    m, mjm = pair(text)
    assert mjm.flex_selfcollide[0] == mujoco.mjtFlexSelf.mjFLEXSELF_AUTO
    qpos, qvel = random_state(mjm, 17, scale=0.01)
    d = tiphys.make_data(m, NWORLD)
    _set(d.qpos, qpos)
    _set(d.qvel, qvel)
    mds = []
    for w in range(NWORLD):
        md = mujoco.MjData(mjm)
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mds.append(md)
    nself = nfloor = 0
    for step in range(100):
        tiphys.step(m, d)
        for md in mds:
            mujoco.mj_step(mjm, md)
            nself += sum(1 for c in md.contact[:md.ncon] if c.flex[0] >= 0)
            nfloor += sum(1 for c in md.contact[:md.ncon] if c.geom[0] >= 0)
        if step % 25 == 24:
            got = d.numpy("qpos")[:, :mjm.nq]
            for w, md in enumerate(mds):
                err = np.abs(got[w] - md.qpos).max()
                assert err < 1e-7, f"step {step} world {w}: qpos error {err:.2e}"
    assert nfloor > 0 and nself > 0
