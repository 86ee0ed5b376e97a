"""General convex narrowphase (mjc_Convex: native GJK + EPA; mjc_PlaneConvex) and
geom distances against MuJoCo 3.4.0.

Each convex type pair gets a two-body model (a plane and a body for plane pairs),
posed at random in NWORLD worlds, the distance scaled so that about half of them
touch. Both engines run the same algorithm (same start point, support functions,
iteration order and stopping rules), so contacts agree to round-off: TOL_POLY for
boxes and meshes without margin (GJK/EPA converge exactly on finite support sets),
TOL_SMOOTH where a stopping test on ccd_tolerance (1e-6) may fire one iteration
apart. Contact counts and order must match.

Near convergence EPA picks among polytope faces whose distances tie to round-off,
and multiccd keeps a perturbed contact only if it lies 1e-3 * rbound from the
others: there MuJoCo itself is chaotic (moving qpos by 1e-15 changes its normals by
up to 5e-3 on curved shapes, and its multiccd contact count). A world that differs
is therefore accepted only if our contacts are one of MuJoCo's answers for qpos
moved by ~1e-15 (``within_mujoco_noise``); the corpus report lists how many worlds
needed that.
"""
import os
import sys
import zlib

import mujoco
import numpy as np
import pytest

import subproc
import tiphys
from conftest import record
from corpus_xfail import corpus_params, not_yet
from oracle import collide_both, compare_contacts, random_free_qpos, stripped_corpus_pair
from tiphys.kernels.collision_driver import detector_kind, plan
from tiphys.kernels.geom_distance import geom_distance

NWORLD = 48
TOL_SMOOTH = 1e-6
TOL_POLY = 1e-9
PHI = 1.618  # icosahedron: (0, +-1, +-PHI) and its cyclic permutations

MESHES = {
    "tetra": "0 0 0  .2 0 0  0 .18 0  .02 .03 .16",
    "octa": ".15 0 0  -.15 0 0  0 .12 0  0 -.12 0  0 0 .1  0 0 -.1",
    "boxm": " ".join(f"{x} {y} {z}" for x in (-.1, .1) for y in (-.08, .08)
                     for z in (-.06, .06)),
    # 12 hull vertices: hill climbing on the hull graph (mjMESH_HILLCLIMB_MIN = 10)
    "icosa": " ".join(f"{.06 * x} {.06 * y} {.06 * z}" for a in (-1, 1) for b in (-1, 1)
                      for x, y, z in ((0, a, PHI * b), (a, PHI * b, 0), (PHI * b, 0, a))),
}
MESHES["cloud"] = " ".join(  # 24 points, some inside the hull
    f"{x:.4f} {y:.4f} {z:.4f}" for x, y, z in
    np.random.default_rng(3).normal(size=(24, 3)) * np.array([.08, .1, .07]))
MESHES["prism"] = " ".join(  # 24-sided caps: clipped polygons pruned to 4 contacts
    f"{.08 * np.cos(a):.6f} {.08 * np.sin(a):.6f} {z}"
    for z in (-.05, .05) for a in np.linspace(0, 2 * np.pi, 24, endpoint=False))
MESHES["bar"] = " ".join(f"{x} {y} {z}" for x in (-.1, .1) for y in (-.05, .05)
                         for z in (-.05, .05))  # square section: its edges meet edge on

GEOMS = {
    "sphere": 'type="sphere" size=".11"',
    "capsule": 'type="capsule" size=".06 .1"',
    "ellipsoid": 'type="ellipsoid" size=".08 .12 .15"',
    "cylinder": 'type="cylinder" size=".09 .1"',
    "box": 'type="box" size=".1 .07 .12"',
    **{name: f'type="mesh" mesh="{name}"' for name in MESHES},
}

PAIRS = [  # every pair type MuJoCo sends to mjc_Convex, meshes of several kinds
    ("sphere", "ellipsoid"), ("sphere", "octa"), ("sphere", "icosa"),
    ("capsule", "ellipsoid"), ("capsule", "cylinder"), ("capsule", "tetra"),
    ("capsule", "cloud"), ("ellipsoid", "ellipsoid"), ("ellipsoid", "cylinder"),
    ("ellipsoid", "box"), ("ellipsoid", "boxm"), ("cylinder", "cylinder"),
    ("cylinder", "box"), ("cylinder", "icosa"), ("box", "tetra"), ("box", "boxm"),
    ("box", "icosa"), ("tetra", "octa"), ("boxm", "cloud"), ("icosa", "icosa"),
]
PLANE_PAIRS = ["ellipsoid", "tetra", "octa", "boxm", "icosa", "cloud"]


def pair_xml(a, b, margin=0.0, flags="", plane=False, iterations=None):
    assets = "".join(f'<mesh name="{n}" vertex="{v}"/>' for n, v in MESHES.items()
                     if n in (a, b))
    opt = f'<option ccd_iterations="{iterations}"/>' if iterations else ""
    floor = '<geom type="plane" size="1 1 .1"/>' if plane else ""
    second = "" if plane else \
        f'<body pos=".2 0 0"><freejoint/><geom {GEOMS[b]} margin="{margin}"/></body>'
    return f"""<mujoco>{opt}<option><flag {flags}/></option>
      <asset>{assets}</asset>
      <worldbody>{floor}
        <body><freejoint/><geom {GEOMS[a]} margin="{margin}"/></body>{second}
      </worldbody></mujoco>"""


def poses(mjm, nworld, seed, plane=False):
    """Random orientations and offsets, the distance between the bodies (or the
    height above the plane) scaled so that about half the worlds touch in MuJoCo."""
    rng = np.random.default_rng(seed)
    base = random_free_qpos(mjm, rng, nworld, spread=1.0)
    rb = mjm.geom_rbound[mjm.geom_rbound > 0]
    jitter = rng.uniform(-1, 1, (nworld, 3))
    mjd = mujoco.MjData(mjm)

    def place(scale):
        qpos = base.copy()
        if plane:
            qpos[:, :3] = [0, 0, rb[0] * scale] + 0.3 * rb[0] * jitter
        else:
            qpos[:, :3] = 0
            qpos[:, 7:10] = [rb.sum() * scale, 0, 0] + 0.3 * rb.sum() * jitter
        return qpos

    def touching(qpos):
        n = 0
        for q in qpos:
            mjd.qpos[:] = q
            mujoco.mj_kinematics(mjm, mjd)
            mujoco.mj_collision(mjm, mjd)
            n += mjd.ncon > 0
        return n

    lo, hi = 0.0, 1.5
    for _ in range(12):  # bisection on the scale
        mid = 0.5 * (lo + hi)
        if touching(place(mid)) > nworld // 2:
            lo = mid
        else:
            hi = mid
    return place(0.5 * (lo + hi))


def run_pair(xml, nworld=NWORLD, seed=0, plane=False):
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, nworld)
    qpos = poses(mjm, nworld, seed, plane)
    ours, theirs = collide_both(m, d, mjm, qpos)
    return m, mjm, d, qpos, ours, theirs


def _contact_vectors(contacts):
    return np.array([np.r_[c["dist"], c["pos"], c["frame"]] for c in contacts]).reshape(
        len(contacts), 13)


def within_mujoco_noise(mjm, qpos, ours, tol, ntrial=64, eps=1e-14):
    """True if ``ours`` is one of MuJoCo's answers when qpos moves by ~eps (round-off):
    same contact count as one of those runs and within ``tol`` or twice the spread
    of the runs with that count. 1e-14 on qpos is round-off size (the issue's
    yardstick); 64 kicks, because an alternative answer can be rare: multiccd
    cylinder-boxm's world 17 (seed 11) gives MuJoCo a second contact in 8 of 200
    kicks of 1e-14 and in none of 200 of 1e-15, and tiphys's JIT code on an Intel
    Xeon lands on that second answer where on an AMD EPYC it did not. GJK/EPA on curved shapes and multiccd's distinct-
    contact test are that sensitive in MuJoCo itself (EPA picks among faces whose
    distances tie to round-off near convergence)."""
    rng = np.random.default_rng(0)
    mjd = mujoco.MjData(mjm)
    runs = []
    for k in range(ntrial + 1):
        mjd.qpos[:] = qpos + (eps * rng.normal(size=mjm.nq) if k else 0)
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_collision(mjm, mjd)
        runs.append(np.array([np.r_[c.dist, c.pos, c.frame]
                              for c in mjd.contact[:mjd.ncon]]).reshape(mjd.ncon, 13))
    same = [r for r in runs if len(r) == len(ours)]
    if not same:
        return False
    spread = np.abs(np.array(same) - same[0]).max(axis=0)
    allowed = np.maximum(tol, 2 * spread)
    mine = _contact_vectors(ours)
    return any((np.abs(mine - r) <= allowed).all() for r in same)


def errors_of(ours, theirs, tol, mjm=None, qpos=None, eps=1e-14):
    """Mismatches beyond ``tol`` in worlds where the answer is not one of MuJoCo's own
    under round-off ~eps (given mjm/qpos); returns (messages, worlds touching, contacts,
    max |error| of dist/pos/frame where counts match, worlds matched only within
    MuJoCo's round-off spread)."""
    msgs, worst, noisy = [], np.zeros(3), 0
    for w, (a, b) in enumerate(zip(ours, theirs)):
        errs = compare_contacts(a, b, atol=tol)
        if len(a) == len(b) and a:
            diff = np.abs(_contact_vectors(a) - _contact_vectors(b))
            worst = np.maximum(worst, [diff[:, 0].max(), diff[:, 1:4].max(),
                                       diff[:, 4:].max()])
        if errs and mjm is not None and within_mujoco_noise(mjm, qpos[w], a, tol, eps=eps):
            errs = []
            noisy += 1
        msgs += [f"world {w}: {e}" for e in errs]
    touching = sum(1 for b in theirs if b)
    return msgs, touching, sum(len(b) for b in theirs), worst, noisy


def _smooth(*names):
    return any(GEOMS[n].split('"')[1] in ("sphere", "capsule", "ellipsoid", "cylinder")
               for n in names)


def report(name, touching, ncon, worst, noisy, nworld=NWORLD):
    record("convex narrowphase (worlds touching, contacts, max |error|)", name,
           f"match ({touching}/{nworld} worlds, {ncon} contacts, dist {worst[0]:.0e} "
           f"pos {worst[1]:.0e} frame {worst[2]:.0e}, {noisy} within MuJoCo's noise)")


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_convex_pair_matches_mujoco(a, b):
    seed = zlib.crc32(f"{a}{b}".encode())
    m, mjm, d, qpos, ours, theirs = run_pair(pair_xml(a, b), seed=seed)
    assert plan(m).convex_count == 1
    tol = TOL_SMOOTH if _smooth(a, b) else TOL_POLY
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, tol, mjm, qpos)
    assert not msgs, msgs[:5]
    report(f"{a}-{b}", touching, ncon, worst, noisy)
    assert NWORLD // 5 <= touching <= NWORLD - NWORLD // 5, touching  # both outcomes tested


@pytest.mark.parametrize("b", PLANE_PAIRS)
def test_plane_convex_matches_mujoco(b):
    m, mjm, d, qpos, ours, theirs = run_pair(pair_xml(b, None, plane=True),
                                             seed=zlib.crc32(b.encode()), plane=True)
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, TOL_POLY, mjm, qpos)
    assert not msgs, msgs[:5]
    assert NWORLD // 5 <= touching <= NWORLD - NWORLD // 5, touching
    report(f"plane-{b}", touching, ncon, worst, noisy)
    if b != "ellipsoid":
        assert ncon > touching  # extra vertices near the first contact were found


@pytest.mark.parametrize("a,b", [("sphere", "ellipsoid"), ("capsule", "cylinder"),
                                 ("cylinder", "box"), ("box", "boxm"), ("tetra", "octa")])
def test_margin_matches_mujoco(a, b):
    """Margins inflate both shapes by margin/2; contacts then exist up to dist < margin
    (spheres and capsules: distance mode on their cores)."""
    m, mjm, d, qpos, ours, theirs = run_pair(pair_xml(a, b, margin=0.03), seed=5)
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, TOL_SMOOTH, mjm, qpos)
    assert not msgs, msgs[:5]
    dists = [c["dist"][0] for w in theirs for c in w]
    assert max(dists) > 0  # contacts within the margin, not yet touching
    report(f"{a}-{b} margin .03", touching, ncon, worst, noisy)


def resting_poses(mjm, nworld, seed, tilt=0.05):
    """Geom 2 lying on geom 1 (both upright, faces almost parallel): small tilts, xy
    offsets and penetrations, so that flat faces touch."""
    rng = np.random.default_rng(seed)
    zs = []  # z of each geom's bounding-box corners in its body's frame
    for g in range(2):
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, mjm.geom_quat[g])
        corners = mjm.geom_aabb[g, :3] + mjm.geom_aabb[g, 3:] * np.array(
            [[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
        zs.append(corners @ mat.reshape(3, 3)[2] + mjm.geom_pos[g, 2])
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(nworld):
        qpos[w, :7] = [0, 0, 0, 1, 0, 0, 0]
        axis = rng.normal(size=3)
        angle = rng.uniform(0, tilt)
        quat = np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis / np.linalg.norm(axis)]
        pos = np.r_[rng.uniform(-0.03, 0.03, 2), zs[0].max() - zs[1].min()
                    - rng.uniform(0.002, 0.01)]
        qpos[w, 7:14] = np.r_[pos, quat]
    return qpos


MULTICCD = [("cylinder", "box", 0.0), ("box", "cylinder", 0.0), ("cylinder", "icosa", 0.0),
            ("cylinder", "boxm", 0.0), ("box", "boxm", 0.02), ("boxm", "boxm", 0.01),
            ("box", "boxm", 0.0), ("boxm", "boxm", 0.0), ("box", "icosa", 0.0),
            ("box", "prism", 0.0), ("prism", "bar", 0.0)]


@pytest.mark.parametrize("a,b,margin", MULTICCD)
def test_multiccd_contacts_match_mujoco(a, b, margin):
    """multiccd, on flat faces lying on each other and at random poses: box/mesh pairs
    without margin clip their touching faces (up to four contacts), the other pairs
    but spheres/ellipsoids add up to four contacts from geoms rotated by +-1e-3 rad
    about the first contact's tangents."""
    xml = pair_xml(a, b, margin=margin, flags='multiccd="enable"')
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, NWORLD)
    qpos = resting_poses(mjm, NWORLD, seed=11)
    ours, theirs = collide_both(m, d, mjm, qpos)
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, TOL_SMOOTH, mjm, qpos)
    assert not msgs, msgs[:5]
    assert touching == NWORLD and ncon > touching  # extra contacts at the corners
    report(f"multiccd {a}-{b} margin {margin} resting", touching, ncon, worst, noisy)
    m, mjm, d, qpos, ours, theirs = run_pair(xml, seed=11)
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, TOL_SMOOTH, mjm, qpos)
    assert not msgs, msgs[:5]
    report(f"multiccd {a}-{b} margin {margin} random", touching, ncon, worst, noisy)


def _quat(axis, angle):
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, np.asarray(axis, float), angle)
    return q


def _mulquat(a, b):
    q = np.zeros(4)
    mujoco.mju_mulQuat(q, a, b)
    return q


def contact_poses(mjm, nworld, seed, quat1, quat2, tilt, offset=0.03, shift=0.0):
    """Body 1 at the origin turned by quat1, body 2 above it turned by quat2 and then
    by up to ``tilt`` rad about a random axis, at y = ``shift`` plus xy offsets up to
    ``offset``, lowered until it penetrates by 2-10 mm (distance measured by MuJoCo)."""
    rng = np.random.default_rng(seed)
    mjd = mujoco.MjData(mjm)
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for w in range(nworld):
        q2 = _mulquat(_quat(rng.normal(size=3), rng.uniform(0, tilt)), quat2)
        qpos[w, :7] = np.r_[0, 0, 0, quat1]
        qpos[w, 7:14] = np.r_[rng.uniform(-offset, offset, 2) + [0, shift], 1.0, q2]
        mjd.qpos[:] = qpos[w]
        mujoco.mj_kinematics(mjm, mjd)
        qpos[w, 9] -= mujoco.mj_geomDistance(mjm, mjd, 0, 1, 10.0, None) + \
            rng.uniform(0.002, 0.01)
    return qpos


UPRIGHT = [1.0, 0.0, 0.0, 0.0]
EDGE_DOWN = _quat([1, 0, 0], np.pi / 4)  # a box's or bar's edge along x lowest/highest
VERTEX_DOWN = _mulquat(_quat([1, 0, 0], np.pi / 4), _quat([0, 1, 0], np.pi / 5))
# (geom a, geom b, body 1's turn, body 2's turn, tilt, xy offset, contact counts that
# must occur in MuJoCo's answers: the features clipped[, y shift of body 2])
POLYGON_CASES = {
    "faces parallel": ("box", "boxm", UPRIGHT, UPRIGHT, 0.0, 0.03, {4}),
    "faces of meshes": ("boxm", "boxm", UPRIGHT, UPRIGHT, 0.002, 0.03, {4}),
    "mesh edge on box face": ("box", "boxm", UPRIGHT, EDGE_DOWN, 1e-3, 0.03, {1, 2}),
    "box edge on mesh face": ("boxm", "box", UPRIGHT, EDGE_DOWN, 1e-3, 0.03, {2}),
    "mesh vertex on box face": ("box", "boxm", UPRIGHT, VERTEX_DOWN, 1e-3, 0.03, {1}),
    "box vertex on mesh face": ("boxm", "box", UPRIGHT, VERTEX_DOWN, 5e-4, 0.03, {1}),
    "parallel edges": ("bar", "bar", EDGE_DOWN, _quat([1, 0, 0], np.pi / 3), 5e-4, 0.002,
                       {2}, -0.05 * np.sqrt(2) * np.cos(np.radians(285))),
    "faces along parallel edges": ("bar", "bar", EDGE_DOWN, EDGE_DOWN, 5e-4, 0.002, {4}),
    "crossed edges": ("boxm", "box", EDGE_DOWN, _quat([0, 1, 0], np.pi / 4), 5e-4, 0.002,
                      {1}),
    "box on 24-gon": ("box", "prism", UPRIGHT, UPRIGHT, 0.002, 0.03, {4}),
    "24-gon on 24-gon": ("prism", "prism", UPRIGHT, UPRIGHT, 0.02, 0.03, {2, 4}),
    "24-gon side on box": ("box", "prism", UPRIGHT, _quat([1, 0, 0], np.pi / 2), 1e-3,
                           0.03, {2}),
}


@pytest.mark.parametrize("case", list(POLYGON_CASES))
def test_multiccd_polygon_contacts_match_mujoco(case):
    """Box/mesh pairs without margin (MuJoCo's multicontact after EPA): faces aligned
    with the contact clipped against each other (polygons of mesh_poly*), an edge
    clipped against a face, several-sided overlaps pruned to their largest
    quadrilateral, and the single EPA contact where nothing aligns."""
    a, b, quat1, quat2, tilt, offset, counts, *shift = POLYGON_CASES[case]
    xml = pair_xml(a, b, flags='multiccd="enable"')
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, NWORLD)
    qpos = contact_poses(mjm, NWORLD, zlib.crc32(case.encode()), np.asarray(quat1),
                         np.asarray(quat2), tilt, offset, *shift)
    ours, theirs = collide_both(m, d, mjm, qpos)
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, TOL_POLY, mjm, qpos)
    assert not msgs, msgs[:5]
    assert touching >= NWORLD - 4, touching
    found = {len(c) for c in theirs if c}
    assert counts <= found, (counts, found)
    report(f"multiccd polygons: {case}", touching, ncon, worst, noisy)


def test_ccd_iterations_and_tolerance_are_honored():
    """Few iterations stop GJK/EPA early in both engines, with the same result."""
    xml = pair_xml("ellipsoid", "cylinder", iterations=6)
    m, mjm, d, qpos, ours, theirs = run_pair(xml, seed=2)
    msgs, touching, ncon, worst, _ = errors_of(ours, theirs, TOL_SMOOTH, mjm, qpos)
    assert not msgs, msgs[:5]
    xml = xml.replace('ccd_iterations="6"', 'ccd_iterations="20" ccd_tolerance="1e-3"')
    m, mjm, d, qpos, ours, theirs = run_pair(xml, seed=2)
    msgs, touching, ncon, worst, _ = errors_of(ours, theirs, 1e-3, mjm, qpos)
    assert not msgs, msgs[:5]


def test_nativeccd_disabled_is_not_implemented():
    """libccd's MPR (MuJoCo's path with nativeccd disabled) is not ported."""
    from tiphys.kernels.collision_driver import collision
    xml = pair_xml("ellipsoid", "box", flags='nativeccd="disable"')
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 2)
    tiphys.kinematics(m, d)
    with pytest.raises(NotImplementedError, match="nativeccd"):
        collision(m, d)


# ------------------------------------------------------------------------------------
# geom distance
# ------------------------------------------------------------------------------------

DIST_PAIRS = PAIRS[::2] + [("box", "box"), ("sphere", "sphere"), ("capsule", "capsule"),
                           ("sphere", "box"), ("ellipsoid", "sphere"), ("icosa", "box")]


def _mujoco_distance(mjm, mjd, qpos, g1, g2, distmax):
    mjd.qpos[:] = qpos
    mujoco.mj_kinematics(mjm, mjd)
    fromto = np.zeros(6)
    return np.r_[mujoco.mj_geomDistance(mjm, mjd, g1, g2, distmax, fromto), fromto]


def _distance_check(m, mjm, d, qpos, g1, g2, distmax, tol, ntrial=16):
    """geom_distance against mj_geomDistance in every world; where they differ, ours
    must be one of MuJoCo's answers under round-off (qpos moved by ~1e-15): its GJK
    on polytopes stops on a degenerate simplex around the origin in some of them and
    reports 0 (a MuJoCo quirk), and EPA on curved shapes is that sensitive too.
    Returns (mismatches, max |error| where equal within tol, worlds within noise)."""
    tiphys.kinematics(m, d)
    dist, fromto = geom_distance(m, d, g1, g2, distmax)
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(0)
    errs, worst, noisy = [], 0.0, 0
    for w in range(d.nworld):
        mine = np.r_[dist[w], fromto[w]]
        want = _mujoco_distance(mjm, mjd, qpos[w], g1, g2, distmax)
        if np.abs(mine - want).max() <= tol:
            worst = max(worst, np.abs(mine - want).max())
            continue
        runs = np.array([_mujoco_distance(mjm, mjd, qpos[w] + 1e-15 * rng.normal(size=mjm.nq),
                                          g1, g2, distmax) for _ in range(ntrial)])
        close = runs[np.abs(runs[:, 0] - mine[0]) <= max(tol, 1e-9)]
        if len(close) and (np.abs(close - mine) <= np.maximum(tol, 2 * np.ptp(close, axis=0))
                           ).all(axis=1).any():
            noisy += 1
        else:
            errs.append(f"world {w}: {mine} != {want}")
    return errs, worst, noisy


@pytest.mark.parametrize("a,b", DIST_PAIRS, ids=[f"{a}-{b}" for a, b in DIST_PAIRS])
def test_geom_distance_matches_mujoco(a, b):
    xml = pair_xml(a, b)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, NWORLD)
    qpos = poses(mjm, NWORLD, 7)
    d.qpos.from_numpy(qpos)
    tol = TOL_SMOOTH if _smooth(a, b) else TOL_POLY
    worst, noisy = 0.0, 0
    for g1, g2, distmax in ((0, 1, 1.0), (1, 0, 1.0), (0, 1, 0.01)):
        errs, err, n = _distance_check(m, mjm, d, qpos, g1, g2, distmax, tol)
        assert not errs, (g1, g2, distmax, errs[:3])
        worst, noisy = max(worst, err), noisy + n
    record("geom_distance (3 x 48 calls)", f"{a}-{b}",
           f"match (max |error| {worst:.0e}, {noisy} within MuJoCo's noise)")


@pytest.mark.parametrize("b", ["ellipsoid", "icosa"])
def test_geom_distance_plane_convex_matches_mujoco(b):
    xml = pair_xml(b, None, plane=True)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, NWORLD)
    qpos = poses(mjm, NWORLD, 3, plane=True)
    d.qpos.from_numpy(qpos)
    for g1, g2 in ((0, 1), (1, 0)):
        errs = _distance_check(m, mjm, d, qpos, g1, g2, 1.0, TOL_POLY)[0]
        assert not errs, (g1, g2, errs[:3])


# ------------------------------------------------------------------------------------
# corpus models with convex pairs, f32
# ------------------------------------------------------------------------------------

# corpus models whose candidate pairs include convex ones (mjc_Convex, mjc_PlaneConvex)
CONVEX_CORPUS = ["gym/pusher.xml", "gym/pusher_v5.xml", "mjtest/model.xml",
                 "mjwarp/aloha_pot/scene.xml", "mjwarp/primitives.xml",
                 "mjwarp/tendon/pulley_wrap.xml", "mjwarp/tendon/wrap.xml"]


@pytest.mark.parametrize("rel", corpus_params("test_collide_convex", CONVEX_CORPUS))
def test_corpus_convex_contacts_match_mujoco(rel):
    """Corpus models with convex pairs, every joint moved (free bodies by up to 0.15,
    kept near upright) so that geoms touch in some worlds."""
    group = "convex collision (corpus models with convex pairs)"
    with not_yet("test_collide_convex", group, rel):
        m, mjm = stripped_corpus_pair(rel)
    assert plan(m).convex_count > 0
    nworld = 6
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    qpos = random_free_qpos(mjm, rng, nworld, spread=0.15)
    for w in range(nworld):  # random_free_qpos spins free bodies fully: keep them upright
        for j in range(mjm.njnt):
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                adr = mjm.jnt_qposadr[j]
                q = mjm.qpos0[adr + 3:adr + 7] + rng.normal(scale=0.1, size=4)
                qpos[w, adr + 3:adr + 7] = q / np.linalg.norm(q)
    d = tiphys.make_data(m, nworld)
    with not_yet("test_collide_convex", group, rel):
        ours, theirs = collide_both(m, d, mjm, qpos)
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, TOL_SMOOTH, mjm, qpos)
    assert not msgs, msgs[:5]
    convex = [c for w in theirs for c in w if detector_kind(*sorted(
        int(mjm.geom_type[g]) for g in c["geom"].astype(int))) == "convex"]
    if rel in ("mjwarp/aloha_pot/scene.xml", "mjwarp/primitives.xml"):
        assert convex  # (the others' convex pairs stay apart near their initial pose)
    report(f"{rel} ({len(convex)} convex contacts)", touching, ncon, worst, noisy, nworld)
    record(group, rel, f"match ({len(convex)} convex contacts)")


F32_PAIRS = [("capsule", "cylinder"), ("ellipsoid", "box"), ("box", "icosa"),
             ("tetra", "octa"), ("sphere", "cloud")]


def _f32_main(arch):
    """Run in a subprocess (precision is per process): F32_PAIRS, a plane-mesh pair, a
    multiccd polygon pair and two heightfield pairs in f32; prints the worst errors,
    then "ok" or the mismatches."""
    tiphys.init(arch=arch, precision="f32")
    msgs = []
    cases = [(pair_xml(a, b), f"{a}-{b}", _smooth(a, b)) for a, b in F32_PAIRS] + \
        [(pair_xml("boxm", None, plane=True), "plane-boxm", False),
         (pair_xml("box", "boxm", flags='multiccd="enable"'), "multiccd-box-boxm", False)]
    from test_collide_hfield import hfield_xml, run as run_hfield
    # prism faces are thin slivers of the grid: their EPA normals carry more f32
    # round-off (1e-4) than F32_TOL_POLY, so both use the curved-shape tolerance
    cases += [(hfield_xml(b), f"hfield-{b}", True) for b in ("sphere", "box")]
    for xml, name, smooth in cases:
        if name.startswith("hfield"):
            m, mjm, qpos, ours, theirs = run_hfield(xml, seed=1)
        elif name.startswith("multiccd"):
            # faces clipped against each other, parallel (so that which of their tied
            # vertices EPA ends on, decided by f32 round-off, does not matter)
            mjm = mujoco.MjModel.from_xml_string(xml)
            m = tiphys.load_model_from_string(xml)
            qpos = contact_poses(mjm, 32, 1, np.asarray(UPRIGHT), np.asarray(UPRIGHT), 0.0)
            ours, theirs = collide_both(m, tiphys.make_data(m, 32), mjm, qpos)
        else:
            m, mjm, d, qpos, ours, theirs = run_pair(xml, nworld=32, seed=1,
                                                     plane=name.startswith("plane"))
        dtol, tol = F32_TOL_DIST, F32_TOL_SMOOTH if smooth else F32_TOL_POLY
        worst = np.zeros(3)
        for w, (a, b) in enumerate(zip(ours, theirs)):
            if len(a) != len(b):
                # a contact at |dist| ~ single-precision round-off may come or go
                if not within_mujoco_noise(mjm, qpos[w], a, tol, eps=1e-7):
                    msgs.append(f"{name} world {w}: ncon {len(a)} != {len(b)}")
                continue
            if a:
                diff = np.abs(_contact_vectors(a) - _contact_vectors(b))
                err = np.array([diff[:, 0].max(), diff[:, 1:4].max(), diff[:, 4:].max()])
                worst = np.maximum(worst, err)
                if (err[0] > dtol or err[1:].max() > tol) and \
                        not within_mujoco_noise(mjm, qpos[w], a, tol, eps=1e-7):
                    msgs.append(f"{name} world {w}: errors {err}")
        print(f"{name}: worst |error| dist {worst[0]:.1e} pos {worst[1]:.1e} "
              f"frame {worst[2]:.1e}")
    print("ok" if not msgs else "\n".join(msgs[:10]))


# f32 round-off moves the iterates away from MuJoCo's; depths are well conditioned,
# but EPA fixes the normal of a curved surface only to ~sqrt(ccd_tolerance) (f64
# hides that by repeating MuJoCo's iterates; MuJoCo's own normals move by up to 5e-3
# under 1e-15 changes of qpos, see within_mujoco_noise); polytopes converge exactly,
# up to the f32 round-off of a face normal (cross products of f32 vertex differences):
# box-icosa's worst contact frame is 1.1e-4 off (dist and pos 1e-8), hence 2e-4.
F32_TOL_DIST = 1e-5
F32_TOL_SMOOTH = 1e-2
F32_TOL_POLY = 2e-4


def test_convex_pairs_in_f32_match_mujoco_to_single_precision():
    """The same kernels in f32 (what GPUs, Metal and Vulkan run)."""
    res = subproc.run([os.path.abspath(__file__), "cpu"], key="cpu-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "ok", res.stdout[-3000:]


if __name__ == "__main__":
    _f32_main(sys.argv[1])
