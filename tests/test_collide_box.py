"""Box narrowphase (kernels/collide_box.py: sphere-box, capsule-box, box-box) against
MuJoCo 3.4.0: random poses of free bodies (about half the pairs touching) and
targeted degenerate poses (faces resting on faces, edges crossing, corners into faces,
capsules along/across/end-on), every world compared contact by contact in MuJoCo's
order: count, dist, pos, frame (normal and tangents), parameters.

Geoms of the same type never collide here (contype/conaffinity), so each model tests
one detector. One Model per detector, shared by the module: kernels compile once.
Run as a script (``python tests/test_collide_box.py``) it prints, as JSON, the
statistics of the tests that need another Taichi configuration: f64 without fast math,
and f32 (``TIPHYS_ARCH=vulkan`` runs the f32 part on the SPIR-V path).
"""
import json
import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiphys  # noqa: E402
from oracle import (collide_both, compare_contacts, mujoco_contacts,  # noqa: E402
                    random_free_qpos, tiphys_contacts)
from tiphys.kernels.collision_driver import collision, plan  # noqa: E402

NWORLD = 96
ATOL = 1e-9

# boxes: contype 2, conaffinity 1; spheres/capsules: contype 1, conaffinity 2
BOX = 'contype="2" conaffinity="1"'
OTHER = 'contype="1" conaffinity="2"'

SPHERE_BOX = f"""
<mujoco>
  <worldbody>
    <body name="block" pos="0 0 0"><freejoint/>
      <geom type="box" size=".1 .15 .05" {BOX}/></body>
    <body name="plate" pos=".1 .05 .12"><freejoint/>
      <geom type="box" size=".2 .2 .008" margin=".01" gap=".004" {BOX}/></body>
    <body name="ball" pos=".04 .02 .08"><freejoint/>
      <geom type="sphere" size=".06" margin=".02" gap=".01" {OTHER}/></body>
    <body name="pebble" pos="-.05 .1 .1"><freejoint/>
      <geom type="sphere" size=".025" {OTHER}/></body>
  </worldbody>
</mujoco>
"""

CAPSULE_BOX = f"""
<mujoco>
  <worldbody>
    <body name="block" pos="0 0 0"><freejoint/>
      <geom type="box" size=".1 .15 .05" {BOX}/></body>
    <body name="plate" pos=".12 .05 .14"><freejoint/>
      <geom type="box" size=".25 .2 .008" margin=".01" {BOX}/></body>
    <body name="rod" pos=".03 .02 .1"><freejoint/>
      <geom type="capsule" size=".03 .12" margin=".015" gap=".005" {OTHER}/></body>
    <body name="stub" pos="-.06 .08 .1"><freejoint/>
      <geom type="capsule" size=".05 .03" {OTHER}/></body>
  </worldbody>
</mujoco>
"""

BOX_BOX = """
<mujoco>
  <worldbody>
    <body name="block" pos="0 0 0"><freejoint/><geom type="box" size=".1 .15 .05"/></body>
    <body name="brick" pos=".1 .05 .1"><freejoint/>
      <geom type="box" size=".08 .05 .03" margin=".01" gap=".003"/></body>
    <body name="plate" pos="-.05 -.05 .12"><freejoint/><geom type="box" size=".2 .2 .01"/></body>
    <body name="cube1" pos=".02 -.12 .1"><freejoint/><geom type="box" size=".06 .06 .06"/></body>
    <body name="cube2" pos="-.1 .08 .05"><freejoint/>
      <geom type="box" size=".06 .06 .06" margin=".005"/></body>
  </worldbody>
</mujoco>
"""

MODELS = {"sphere_box": SPHERE_BOX, "capsule_box": CAPSULE_BOX, "box_box": BOX_BOX}


# ------------------------------------------------------------------------------------
# poses
# ------------------------------------------------------------------------------------

def quat(axis, deg):
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    half = np.radians(deg) / 2
    return np.concatenate([[np.cos(half)], np.sin(half) * axis])


def qmul(a, b):
    res = np.zeros(4)
    mujoco.mju_mulQuat(res, np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return res


def rotate(q, v):
    res = np.zeros(3)
    mujoco.mju_rotVecQuat(res, np.asarray(v, dtype=np.float64), np.asarray(q, dtype=np.float64))
    return res


ID = np.array([1.0, 0, 0, 0])
ALONG_X = quat([0, 1, 0], 90)  # a capsule's axis (z) turned onto x
ALONG_Y = quat([1, 0, 0], 90)
def _corner_down():
    """A cube turned so that its body diagonal is vertical: a corner points down."""
    d = np.ones(3) / np.sqrt(3)
    z = np.array([0.0, 0, 1])
    axis = np.cross(d, z)
    ang = np.degrees(np.arccos(d @ z))
    return quat(axis, ang)


CORNER_DOWN = _corner_down()


def posed_qpos(mjm, worlds, frame=ID, shift=(0.0, 0.0, 0.0)):
    """qpos for worlds given as {body: (pos, quat)}; bodies not named are parked far
    apart. ``frame``/``shift`` move every named pose rigidly (same contacts, other
    floating-point paths)."""
    qpos = np.tile(mjm.qpos0, (len(worlds), 1))
    for w, poses in enumerate(worlds):
        for b in range(1, mjm.nbody):
            adr = mjm.jnt_qposadr[mjm.body_jntadr[b]]
            name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, b)
            if name in poses:
                pos, q = poses[name]
                qpos[w, adr:adr + 3] = rotate(frame, pos) + np.asarray(shift)
                qpos[w, adr + 3:adr + 7] = qmul(frame, q)
            else:
                qpos[w, adr:adr + 7] = [10.0 * b, 50.0, 0, 1, 0, 0, 0]
    return qpos


def sphere_box_cases():
    hz = 0.05
    r = 0.06
    cases = []
    # centre inside the box: at the centre (all faces tie), off-centre, near a face
    # and a corner, exactly on the face
    for c in [(0, 0, 0), (.02, .01, 0), (0, 0, .049), (.09, .14, .04), (0, 0, hz),
              (.1, 0, 0), (-.03, .149, -.02)]:
        cases.append({"block": ((0, 0, 0), ID), "ball": (c, ID)})
    # outside: over the face, the edge, the corner (touching, penetrating, within
    # margin, beyond it)
    for dz in (-.01, 0.0, .015, .03):
        d = r + dz
        for c in [(0, 0, hz + d), (.1 + d / np.sqrt(2), 0, hz + d / np.sqrt(2)),
                  (.1 + d / np.sqrt(3), .15 + d / np.sqrt(3), hz + d / np.sqrt(3)),
                  (-.1 - d, .05, 0)]:
            cases.append({"block": ((0, 0, 0), ID), "ball": (c, ID)})
    # the small sphere on the thin plate, face and rim
    for c in [(0, 0, .008 + .025), (.2 + .02, 0, 0), (.2, .2, .008 + .02), (0, 0, 0)]:
        cases.append({"plate": ((0, 0, 0), ID), "pebble": (c, ID)})
    return cases


def capsule_box_cases():
    hx, hy, hz = .1, .15, .05
    r, h = .03, .12
    cases = []
    top = hz + r
    for dz in (-.005, 0.0, .01, .03):
        z = top + dz
        # lying along the face: centred, overhanging an end, along y, diagonal
        for pos, q in [((0, 0, z), ALONG_X), ((.1, 0, z), ALONG_X), ((0, .05, z), ALONG_Y),
                       ((0, 0, z), qmul(quat([0, 0, 1], 30), ALONG_X)),
                       ((.15, .1, z), qmul(quat([0, 0, 1], 45), ALONG_X))]:
            cases.append({"block": ((0, 0, 0), ID), "rod": (pos, q)})
        # end-on: over the face, an edge, a corner
        for pos in [(0, 0, hz + h + z - hz), (hx, 0, hz + h + z - hz),
                    (hx, hy, hz + h + z - hz)]:
            cases.append({"block": ((0, 0, 0), ID), "rod": (pos, ID)})
    # across an edge: along y over the +x top edge, tilted over it
    for pen in (.005, 0.0):
        e = (r - pen) / np.sqrt(2)
        cases.append({"block": ((0, 0, 0), ID), "rod": ((hx + e, 0, hz + e), ALONG_Y)})
        cases.append({"block": ((0, 0, 0), ID),
                      "rod": ((hx, 0, hz + r - pen + .02), qmul(quat([1, 0, 0], 30), ALONG_Y))})
        cases.append({"block": ((0, 0, 0), ID),
                      "rod": ((hx + .05, 0, hz + .05), quat([0, 1, 0], 45))})
        # parallel to a side face and along a vertical edge
        cases.append({"block": ((0, 0, 0), ID), "rod": ((hx + r - pen, 0, 0), ALONG_Y)})
        cases.append({"block": ((0, 0, 0), ID), "rod": ((hx + e, hy + e, 0), ID)})
    # inside the box; through the face; perpendicular on the thin plate; stub end-on
    cases.append({"block": ((0, 0, 0), ID), "rod": ((0, 0, 0), ALONG_X)})
    cases.append({"block": ((0, 0, 0), ID), "rod": ((.02, .03, hz), ID)})
    cases.append({"plate": ((0, 0, 0), ID), "rod": ((.1, .1, .008 + r + h - .002), ID)})
    cases.append({"plate": ((0, 0, 0), ID), "rod": ((0, .2, .008 + r), ALONG_X)})
    cases.append({"block": ((0, 0, 0), ID), "stub": ((0, 0, hz + .05 + .03), ID)})
    cases.append({"block": ((0, 0, 0), ID), "stub": ((hx, hy, hz + .05), ALONG_X)})
    return cases


def box_box_cases():
    c = .06  # cube half size
    cases = []
    for dz in (-.003, 0.0, .003, .02):
        # identical cubes face on face: aligned, turned about z, shifted
        for deg in (0, 30, 45, 90, 180):
            for off in [(0, 0), (.03, .02), (.12, 0)]:
                cases.append({"cube1": ((0, 0, 0), ID),
                              "cube2": ((off[0], off[1], 2 * c + dz), quat([0, 0, 1], deg))})
        # side by side
        cases.append({"cube1": ((0, 0, 0), ID), "cube2": ((2 * c + dz, 0, 0), ID)})
        # stacked boxes of different sizes, overhanging, turned
        for deg, off in [(0, (0, 0)), (0, (.15, 0)), (20, (.1, .1)), (45, (0, 0)),
                         (90, (.05, -.1))]:
            cases.append({"plate": ((0, 0, 0), ID),
                          "block": ((off[0], off[1], .01 + .05 + dz), quat([0, 0, 1], deg))})
            cases.append({"block": ((0, 0, 0), ID),
                          "brick": ((off[0], off[1], .05 + .03 + dz), quat([0, 0, 1], deg))})
        # the big plate resting on the block (box 1 on top)
        cases.append({"block": ((0, 0, 0), ID), "plate": ((.05, 0, .05 + .01 + dz), ID)})
        # edges crossing: edge along x below, edge along y above
        e = c * np.sqrt(2)
        cases.append({"cube1": ((0, 0, 0), quat([1, 0, 0], 45)),
                      "cube2": ((0, 0, 2 * e + dz), quat([0, 1, 0], 45))})
        cases.append({"cube1": ((0, 0, 0), quat([1, 0, 0], 45)),
                      "cube2": ((.02, .01, 2 * e + dz), quat([0, 1, 0], 30))})
        # an edge onto a face, a corner into a face
        cases.append({"block": ((0, 0, 0), ID), "cube2": ((.02, 0, .05 + e + dz),
                                                          quat([1, 0, 0], 45))})
        cases.append({"block": ((0, 0, 0), ID), "cube1": ((.03, .02, .05 + c * np.sqrt(3) + dz),
                                                          CORNER_DOWN)})
        # a corner onto an edge
        cases.append({"cube1": ((0, 0, 0), quat([1, 0, 0], 45)),
                      "cube2": ((0, 0, e + c * np.sqrt(3) + dz), CORNER_DOWN)})
    return cases


CASES = {"sphere_box": sphere_box_cases, "capsule_box": capsule_box_cases,
         "box_box": box_box_cases}


# ------------------------------------------------------------------------------------
# running and comparing
# ------------------------------------------------------------------------------------

def _load(xml):
    return tiphys.load_model_from_string(xml), mujoco.MjModel.from_xml_string(xml)


def collide_at_mujoco_poses(m, d, mjm, qpos):
    """Like oracle.collide_both, but tiphys collides at MuJoCo's geom_xpos/geom_xmat.

    tiphys' kinematics may differ from MuJoCo's in the last bit (3e-16 in xmat for a
    turned body); where poses tie exactly (a box resting on a box: two face axes
    separate equally, or a point lies exactly on a clipping line) that bit decides
    MuJoCo's branch, so the detectors are checked on identical inputs."""
    mjd = mujoco.MjData(mjm)
    xpos = np.zeros(d.geom_xpos.shape + (3,))
    xmat = np.zeros(d.geom_xmat.shape + (3, 3))
    theirs = []
    for w in range(len(qpos)):
        mjd.qpos[:] = qpos[w]
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_collision(mjm, mjd)
        theirs.append(mujoco_contacts(mjd))
        xpos[w, :mjm.ngeom] = mjd.geom_xpos
        xmat[w, :mjm.ngeom] = mjd.geom_xmat.reshape(-1, 3, 3)
    d.geom_xpos.from_numpy(xpos)
    d.geom_xmat.from_numpy(xmat)
    collision(m, d)
    return [tiphys_contacts(d, w) for w in range(len(qpos))], theirs


def run(m, mjm, qpos, atol=ATOL, exact_poses=False):
    """Collide all worlds in both engines; (errors by world, stats)."""
    d = tiphys.make_data(m, len(qpos))
    if exact_poses:
        ours, theirs = collide_at_mujoco_poses(m, d, mjm, qpos)
    else:
        ours, theirs = collide_both(m, d, mjm, qpos)
    errors = {w: e for w in range(len(qpos))
              if (e := compare_contacts(ours[w], theirs[w], atol=atol))}
    worst = 0.0
    for w in range(len(qpos)):
        if len(ours[w]) == len(theirs[w]):
            for a, b in zip(ours[w], theirs[w]):
                for k in ("dist", "pos", "frame"):
                    worst = max(worst, float(np.abs(a[k] - b[k]).max()))
    touching = {(w, tuple(c["geom"].astype(int))) for w in range(len(qpos))
                for c in theirs[w]}
    stats = dict(worlds=len(qpos), contacts=sum(len(c) for c in theirs),
                 pairs_touching=len(touching) / (len(qpos) * plan(m).ncand),
                 max_abs_err=worst, most_in_a_pair=max(
                     [sum(1 for c in theirs[w] if tuple(c["geom"].astype(int)) == g)
                      for w, g in touching] + [0]))
    return errors, stats


def random_states(mjm, seed, nworld=NWORLD):
    rng = np.random.default_rng(seed)
    return random_free_qpos(mjm, rng, nworld, spread=0.07)


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    m, mjm = _load(MODELS[request.param])
    return request.param, m, mjm


def _check(name, errors, stats, min_contacts):
    print(f"\n{name}: {stats}")
    shown = {w: e[:3] for w, e in list(errors.items())[:4]}
    assert not errors, f"{len(errors)} worlds differ, e.g. {shown}"
    assert stats["contacts"] >= min_contacts


def test_random_poses_match_mujoco(model):
    name, m, mjm = model
    errors, stats = run(m, mjm, random_states(mjm, seed=1))
    _check(f"{name} random", errors, stats, min_contacts=NWORLD // 2)
    assert 0.25 < stats["pairs_touching"] < 0.75, stats  # about half the pairs touch


def degenerate_errors(name, m, mjm, rigid):
    frame, shift = (ID, (0, 0, 0)) if rigid == "aligned" else \
        (quat([.3, -.5, 1], 37), (.3, -.2, .1))
    cases = CASES[name]()
    errors, stats = run(m, mjm, posed_qpos(mjm, cases, frame, shift), exact_poses=True)
    return errors, stats, len(cases)


def test_degenerate_poses_match_mujoco(model):
    """Targeted poses (ties, exact touching, coincident corners) at MuJoCo's own geom
    poses (see collide_at_mujoco_poses)."""
    name, m, mjm = model
    errors, stats, ncases = degenerate_errors(name, m, mjm, "aligned")
    _check(f"{name} degenerate", errors, stats, min_contacts=ncases // 2)


@pytest.fixture(scope="module")
def other_process():
    """Statistics from this file run as a script (Taichi's precision and fast-math
    setting are per process): {"exact": exact_statistics(), "f32": f32_statistics()}."""
    res = subprocess.run([sys.executable, os.path.abspath(__file__)],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_degenerate_poses_moved_match_mujoco_without_fast_math(other_process):
    """The same poses moved rigidly, so that exact ties come out of rounding rather
    than exact zeros. MuJoCo's C code rounds every product and sum (no fused
    multiply-add); Taichi's default fast math contracts and reassociates, which moves
    such ties by an ulp, so this runs with ``fast_math=False``, where every tie,
    order and exact-duplicate removal must agree."""
    stats = other_process["exact"]
    print("\nno fast math, moved poses:", stats)
    for name, s in stats.items():
        assert s["errors"] == [], (name, s)
        assert s["contacts"] >= s["worlds"] // 2, (name, s)


def test_box_box_returns_up_to_nine_contacts():
    """Two equal cubes face on face, one turned 45 degrees, within the margin: the 8
    corners of the overlap octagon plus the turned cube's nearest corner (kept by
    mj_collideGeoms as inside the other box): the detector's capacity is 9."""
    m, mjm = _load(BOX_BOX)
    cases = [{"cube1": ((0, 0, 0), ID), "cube2": ((0, 0, .12), quat([0, 0, 1], 45))}]
    errors, stats = run(m, mjm, posed_qpos(mjm, cases), exact_poses=True)
    assert not errors, errors
    assert stats["contacts"] == 9


# ------------------------------------------------------------------------------------
# f32 (a separate process: Taichi's precision is per process)
# ------------------------------------------------------------------------------------

def f32_statistics(nworld=64):
    """Per detector, run after tiphys.init(precision="f32"): at random poses, the share
    of worlds whose contacts all match MuJoCo's (f64) to 1e-5; at the degenerate poses
    (exact ties, which f32 rounding breaks either way) the worlds with contacts."""
    out = {}
    for name, xml in MODELS.items():
        m, mjm = _load(xml)
        qpos = random_states(mjm, seed=2, nworld=nworld)
        d = tiphys.make_data(m, len(qpos))
        ours, theirs = collide_both(m, d, mjm, qpos)
        good = sum(1 for a, b in zip(ours, theirs)
                   if not compare_contacts(a, b, atol=1e-5, frame_atol=1e-4))
        qpos = posed_qpos(mjm, CASES[name]())
        d = tiphys.make_data(m, len(qpos))
        posed_ours, posed_theirs = collide_both(m, d, mjm, qpos)
        out[name] = dict(worlds=nworld, matching=good / nworld,
                         contacts=sum(len(c) for c in theirs),
                         posed_touching=sum(1 for c in posed_ours if c),
                         posed_touching_mujoco=sum(1 for c in posed_theirs if c))
    return out


def test_f32_matches_mujoco_to_single_precision(other_process):
    stats = other_process["f32"]
    print("\nf32:", stats)
    for name, s in stats.items():
        assert s["contacts"] > s["worlds"], (name, s)
        assert s["matching"] >= 0.95, (name, s)
        assert abs(s["posed_touching"] - s["posed_touching_mujoco"]) <= \
            0.1 * s["posed_touching_mujoco"], (name, s)


def exact_statistics():
    """Per detector: worlds of moved degenerate poses that differ from MuJoCo."""
    out = {}
    for name, xml in MODELS.items():
        m, mjm = _load(xml)
        errors, stats, _ = degenerate_errors(name, m, mjm, "moved")
        out[name] = dict(stats, errors=sorted(errors))
    return out


if __name__ == "__main__":
    arch = os.environ.get("TIPHYS_ARCH", "cpu")
    tiphys.init(arch=arch, precision="f64", fast_math=False)
    exact = exact_statistics()
    # f64 statistics done. (Taichi's offline cache off for the f32 half: once, in a
    # cold full run, a kernel of the re-initialised f32 program came back from the
    # cache shared with the other test processes with another argument list,
    # "RuntimeError: argument not found"; compiling it here cannot meet that.)
    tiphys.init(arch=arch, precision="f32", reinit=True, offline_cache=False)
    print(json.dumps({"exact": exact, "f32": f32_statistics()}))
