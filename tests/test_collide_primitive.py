"""Analytic narrowphase for primitive pairs (kernels/collide_primitive.py) against
MuJoCo 3.4.0: random poses with a good share of touching worlds, and hand-made
degenerate poses (parallel capsules, coincident centres, a capsule standing on a
plane, a cylinder flat / on its side / on its rim, a box on a face / edge / corner,
a sphere centre on or inside a cylinder, ...).

Each pair type has one model with two independent geom pairs: pair "a" with
default-ish sizes and no margin, pair "b" with other sizes, margin and gap (plane
pairs: a floor and a tilted plane with its own margin). contype/conaffinity keep
every other combination out, so a model has exactly one detector type.

Run as a script (``python tests/test_collide_primitive.py f32``) it checks the
random poses in f32 and prints the worst errors as JSON (test_f32_matches_mujoco).
"""
import json
import os
import sys

import mujoco
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import subproc
import tiphys  # noqa: E402
from oracle import collide_both, compare_contacts, random_free_qpos  # noqa: E402

NWORLD = 96

GEOMS = {  # type: (geom a attributes, geom b attributes)
    "sphere": ('size=".1"', 'size=".07" margin=".02" gap=".01"'),
    "capsule": ('size=".05 .15"', 'size=".08 .06" margin=".03" gap=".005"'),
    "cylinder": ('size=".1 .05"', 'size=".06 .2" margin=".02" gap=".01"'),
    "box": ('size=".1 .06 .03"', 'size=".05 .05 .15" margin=".02" gap=".01"'),
}

TILTED_POS = np.array([0.4, -0.3, 0.2])
TILTED_Z = np.array([0.3, -0.4, 1.0]) / np.linalg.norm([0.3, -0.4, 1.0])
PAIR_B_POS = np.array([3.0, 0.0, 0.0])
PAIR_B_QUAT = np.array([0.8, 0.2, -0.4, 0.4]) / np.linalg.norm([0.8, 0.2, -0.4, 0.4])


def _plane_model(t, height):
    """Geom a over the floor (bit 1), geom b over a tilted plane (bit 2), at the given
    heights."""
    a, b = GEOMS[t]
    bpos = TILTED_POS + height[1] * TILTED_Z
    return f"""<mujoco><worldbody>
  <geom name="floor" type="plane" size="2 2 .1" contype="1" conaffinity="0"/>
  <geom name="tilted" type="plane" size="0 0 1" pos="{' '.join(map(str, TILTED_POS))}"
        zaxis="{' '.join(map(str, TILTED_Z))}" margin=".01" contype="2" conaffinity="0"/>
  <body name="a" pos="0 0 {height[0]}"><freejoint/>
    <geom name="a" type="{t}" {a} contype="0" conaffinity="1"/></body>
  <body name="b" pos="{' '.join(map(str, bpos))}"><freejoint/>
    <geom name="b" type="{t}" {b} contype="0" conaffinity="2"/></body>
</worldbody></mujoco>"""


def _pair_model(t1, t2):
    """Pair a (bit 1) at the origin, pair b (bit 2) at PAIR_B_POS."""
    a1, b1 = GEOMS[t1]
    a2, b2 = GEOMS[t2]
    bpos = " ".join(map(str, PAIR_B_POS))
    return f"""<mujoco><worldbody>
  <body name="a1"><freejoint/><geom name="a1" type="{t1}" {a1} contype="1" conaffinity="0"/></body>
  <body name="a2"><freejoint/><geom name="a2" type="{t2}" {a2} contype="0" conaffinity="1"/></body>
  <body name="b1" pos="{bpos}"><freejoint/>
    <geom name="b1" type="{t1}" {b1} contype="2" conaffinity="0"/></body>
  <body name="b2" pos="{bpos}"><freejoint/>
    <geom name="b2" type="{t2}" {b2} contype="0" conaffinity="2"/></body>
</worldbody></mujoco>"""


# ------------------------------------------------------------------------------------
# degenerate poses, in the frame of the plane (plane pairs) or of the pair
# ------------------------------------------------------------------------------------

IDENT = (1.0, 0.0, 0.0, 0.0)
FLIP = (0.0, 1.0, 0.0, 0.0)  # 180 degrees about x: z axis down


def _quat(axis, degrees):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    half = np.radians(degrees) / 2
    return tuple(np.concatenate([[np.cos(half)], np.sin(half) * axis]))


def _mul(q1, q2):
    res = np.zeros(4)
    mujoco.mju_mulQuat(res, np.asarray(q1, dtype=float), np.asarray(q2, dtype=float))
    return res


def _rotate(q, v):
    res = np.zeros(3)
    mujoco.mju_rotVecQuat(res, np.asarray(v, dtype=float), np.asarray(q, dtype=float))
    return res


YAW = _quat((0, 0, 1), 37)
SIDE = _quat((1, 0, 0), 90)  # z axis horizontal
EDGE = _quat((1, 0, 0), 45)
CORNER = tuple(_mul(_quat((1, 0, 0), 45), _quat((0, 1, 0), np.degrees(np.arctan(np.sqrt(.5))))))
TILT = _quat((1, 2, 0), 30)


def _plane_poses(t, size):
    """(height above the plane, quat) per pose; ``size`` is the geom's size."""
    r, h = size[0], size[1]
    if t == "sphere":
        return [(0.0, IDENT), (r, IDENT), (r / 2, YAW), (-r / 3, TILT)]
    if t == "capsule":
        return [(h + r, IDENT), (h + r * 0.9, IDENT), (h + r * 0.9, FLIP), (h, YAW),
                (r * 0.8, SIDE), (r, SIDE), (h * 0.7, TILT), (-r, TILT)]
    if t == "cylinder":
        return [(h, IDENT), (h * 0.9, IDENT), (h * 0.9, YAW), (h * 0.9, FLIP),
                (h * 0.95, _mul(YAW, FLIP)), (r * 0.9, SIDE), (r, SIDE),
                (r * 0.9, _mul(YAW, SIDE)), (0.7 * (r + h), _quat((1, 0, 0), 40)),
                (0.5 * r, TILT), (-h, TILT), (0.0, EDGE), (h * 0.2, IDENT)]
    if t == "box":
        sz = size
        edge = (sz[1] + sz[2]) * np.sqrt(.5)
        corner = np.linalg.norm(sz)
        return [(sz[2], IDENT), (sz[2] * 0.9, IDENT), (sz[2] * 0.9, YAW),
                (sz[2] * 0.9, FLIP), (edge * 0.95, EDGE), (edge, EDGE),
                (corner * 0.9, CORNER), (corner * 0.5, CORNER), (0.0, TILT),
                (-sz[2], IDENT), (sz[1] * 0.9, SIDE)]
    raise ValueError(t)


def _pair_poses(t1, t2, size1, size2):
    """(pos1, quat1, pos2, quat2) per pose, in the pair's frame."""
    o = np.zeros(3)
    r1, r2 = size1[0], size2[0]
    ez = np.array([0.0, 0.0, 1.0])
    ex = np.array([1.0, 0.0, 0.0])
    if (t1, t2) == ("sphere", "sphere"):
        d = r1 + r2
        return [(o, IDENT, o, IDENT), (o, YAW, o, TILT), (o, TILT, o, CORNER),
                (o, IDENT, 0.9 * d * ex, IDENT), (o, IDENT, d * ez, TILT),
                (o, TILT, 1e-17 * ex, TILT)]
    if (t1, t2) == ("sphere", "capsule"):
        h2 = size2[1]
        return [(o, IDENT, o, IDENT), (o, TILT, o, IDENT), (0.5 * h2 * ez, YAW, o, IDENT),
                ((h2 + r2) * ez, IDENT, o, IDENT), ((h2 + 0.5 * r2) * ez, IDENT, o, FLIP),
                (0.9 * (r1 + r2) * ex, IDENT, o, IDENT),
                (0.5 * h2 * ez, TILT, o, SIDE)]
    if (t1, t2) == ("sphere", "cylinder"):
        h2 = size2[1]
        rim = np.array([r2, 0.0, h2])
        diag = np.array([r2 + 0.5 * r1, 0.0, h2 + 0.5 * r1])
        return [(o, IDENT, o, IDENT), (o, TILT, o, IDENT), (o, IDENT, o, SIDE),
                (0.5 * h2 * ez, IDENT, o, IDENT), (-0.5 * h2 * ez, YAW, o, IDENT),
                (0.9 * h2 * ez, IDENT, o, IDENT), ((h2 + 0.5 * r1) * ez, IDENT, o, IDENT),
                (-(h2 + 0.5 * r1) * ez, IDENT, o, IDENT),
                (0.5 * r2 * ex, IDENT, o, IDENT), (0.95 * r2 * ex + 0.1 * h2 * ez, IDENT, o,
                                                     IDENT),
                ((r2 + 0.5 * r1) * ex, IDENT, o, IDENT), (rim, IDENT, o, IDENT),
                (diag, IDENT, o, IDENT), (-diag, IDENT, o, IDENT),
                (0.5 * h2 * ez, IDENT, o, TILT)]
    if (t1, t2) == ("capsule", "capsule"):
        h1, h2 = size1[1], size2[1]
        d = 0.9 * (r1 + r2) * ex
        poses = [(o, IDENT, o, IDENT), (o, TILT, o, TILT), (o, IDENT, o, SIDE),
                 (o, TILT, o, CORNER), (o, IDENT, 0.5 * h1 * ez, IDENT),
                 (o, IDENT, (h1 + h2 + 0.5 * r1) * ez, IDENT),
                 (o, IDENT, (h1 + h2 + 0.5 * r1) * ez, FLIP)]
        for dz in (0.0, 0.5 * h1, h1 + h2 - 0.01, h1 + h2 + 0.01, -(h1 + h2) * 0.8):
            for q2 in (IDENT, FLIP):
                poses.append((o, IDENT, d + dz * ez, q2))
        poses.append((o, TILT, _rotate(TILT, d + 0.3 * h1 * ez), TILT))
        poses.append((o, SIDE, d, SIDE))
        poses.append((o, IDENT, d + 0.5 * h1 * ez, SIDE))
        return poses
    raise ValueError((t1, t2))


def _sizes(mjm):
    return {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g): mjm.geom_size[g]
            for g in range(mjm.ngeom)}


def _degenerate_qpos(case, plane_poses=_plane_poses):
    """qpos rows for the case's degenerate poses (pair/plane a and b posed alike)."""
    mjm = case.mjm
    size = _sizes(mjm)
    rows = []
    if case.plane:
        frames = [(np.zeros(3), np.array(IDENT)),
                  (TILTED_POS, mjm.geom_quat[mjm.geom("tilted").id].copy())]
        poses = [plane_poses(case.types[1], size[g]) for g in ("a", "b")]
        for pa, pb in zip(*poses):
            row = []
            for (p0, q0), (height, q) in zip(frames, (pa, pb)):
                row += list(p0 + _rotate(q0, (0, 0, height))) + list(_mul(q0, q))
            rows.append(row)
    else:
        frames = [(np.zeros(3), np.array(IDENT)), (PAIR_B_POS, PAIR_B_QUAT)]
        poses = [_pair_poses(*case.types, size[g1], size[g2])
                 for g1, g2 in (("a1", "a2"), ("b1", "b2"))]
        for pa, pb in zip(*poses):
            row = [[], [], [], []]
            for k, ((p0, q0), pose) in enumerate(zip(frames, (pa, pb))):
                pos1, q1, pos2, q2 = pose
                row[2 * k] = list(p0 + _rotate(q0, pos1)) + list(_mul(q0, q1))
                row[2 * k + 1] = list(p0 + _rotate(q0, pos2)) + list(_mul(q0, q2))
            rows.append(sum(row, []))
    return np.array(rows)


def _flat_cylinder_poses(t, size):
    """A cylinder standing on its cap, sunk 10% of its half-height (f32 check)."""
    return [(0.9 * size[1], q) for q in (IDENT, YAW, FLIP, _mul(YAW, FLIP))]


# ------------------------------------------------------------------------------------
# cases: one model and Data per pair type, shared by the module's tests
# ------------------------------------------------------------------------------------

class Case:
    """A pair type's model, Data and counters."""

    def __init__(self, name, types, xml, spread):
        self.name, self.types, self.xml, self.spread = name, types, xml, spread
        self.plane = types[0] == "plane"
        self.mjm = mujoco.MjModel.from_xml_string(xml)
        self.m = None
        self.d = None
        self.worlds = 0
        self.contacts = 0
        self.maxerr = 0.0

    def build(self):
        self.m = tiphys.load_model_from_string(self.xml)
        self.d = tiphys.make_data(self.m, NWORLD)
        return self

    def random_qpos(self, seed):
        return random_free_qpos(self.mjm, np.random.default_rng(seed), NWORLD,
                                spread=self.spread)

    def check(self, qpos, atol=1e-9):
        """Collide every world with both engines; returns (mismatches, per-world
        MuJoCo contacts) and updates the counters."""
        ours, theirs = collide_both(self.m, self.d, self.mjm, qpos)
        errors = {}
        for w in range(len(qpos)):
            err = compare_contacts(ours[w], theirs[w], atol=atol)
            if err:
                errors[w] = err
                continue
            for a, b in zip(ours[w], theirs[w]):
                for k in ("dist", "pos", "frame"):
                    self.maxerr = max(self.maxerr, float(np.abs(a[k] - b[k]).max()))
        self.worlds += len(qpos)
        self.contacts += sum(len(c) for c in theirs)
        return errors, theirs


# name: (types, spread of the random positions, heights of geoms a, b above the planes)
CASES = {
    "plane_sphere": (("plane", "sphere"), 0.06, (0.1, 0.08)),
    "plane_capsule": (("plane", "capsule"), 0.08, (0.14, 0.12)),
    "plane_cylinder": (("plane", "cylinder"), 0.06, (0.09, 0.17)),
    "plane_box": (("plane", "box"), 0.06, (0.08, 0.14)),
    "sphere_sphere": (("sphere", "sphere"), 0.14, None),
    "sphere_capsule": (("sphere", "capsule"), 0.15, None),
    "sphere_cylinder": (("sphere", "cylinder"), 0.15, None),
    "capsule_capsule": (("capsule", "capsule"), 0.16, None),
}


def make_case(name) -> Case:
    types, spread, height = CASES[name]
    xml = _plane_model(types[1], height) if types[0] == "plane" else _pair_model(*types)
    return Case(name, types, xml, spread)


def _maxcon(name):
    from tiphys.kernels.collision import PRIMITIVE_DETECTORS
    for _, fname, maxcon in PRIMITIVE_DETECTORS.values():
        if fname == name:
            return maxcon
    raise KeyError(name)


STATS: dict[str, Case] = {}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    c = make_case(request.param).build()
    STATS[request.param] = c
    return c


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if STATS:
        print("\npair type        worlds  contacts  max abs error")
        for name, c in STATS.items():
            print(f"{name:16s} {c.worlds:6d} {c.contacts:9d}  {c.maxerr:.2e}")


def test_random_poses_match_mujoco(case):
    errors, theirs = case.check(case.random_qpos(0))
    assert not errors, {w: e for w, e in list(errors.items())[:5]}
    # a good share of the worlds touch, and some do not
    touching = sum(1 for c in theirs if c)
    assert 0.3 * NWORLD < touching < NWORLD, touching
    assert sum(len(c) for c in theirs) >= touching


def test_degenerate_poses_match_mujoco(case):
    special = _degenerate_qpos(case)
    qpos = case.random_qpos(7)
    qpos[:len(special)] = special
    errors, theirs = case.check(qpos)
    assert not errors, {w: e for w, e in list(errors.items())[:5]}
    assert sum(1 for c in theirs[:len(special)] if c) >= len(special) // 2


def test_max_contacts_in_table_is_what_mujoco_returns(case):
    """The capacity in PRIMITIVE_DETECTORS is the most MuJoCo's detector returns for
    one geom pair, and the poses here reach it (a smaller capacity would fail them)."""
    mjd = mujoco.MjData(case.mjm)
    most = 0
    for row in np.concatenate([_degenerate_qpos(case), case.random_qpos(0)]):
        mjd.qpos[:] = row
        mujoco.mj_kinematics(case.mjm, mjd)
        mujoco.mj_collision(case.mjm, mjd)
        pairs = [tuple(c.geom) for c in mjd.contact[:mjd.ncon]]
        most = max([most] + [pairs.count(p) for p in set(pairs)])
    assert most == _maxcon(case.name)


# ------------------------------------------------------------------------------------
# f32: every detector compiles and agrees to single precision
# ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def _f32_process():
    """The f32 run, in the f32 helper process (precision is per process). (`make test`
    runs this test on the worker that runs every helper check: conftest.py.)"""
    return subproc.submit([os.path.abspath(__file__), "f32"], key="cpu-f32", timeout=300)


def test_f32_matches_mujoco(_f32_process):
    """Same contacts in f32 (random poses, and cylinders standing flat on the floor and
    on the tilted plane), dist and pos to single precision. Normals are looser: from
    nearly coincident centres they are ill-conditioned in f32."""
    res = _f32_process.result()
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(worst) == set(CASES) | {"flat cylinder"}
    for name, res in worst.items():
        assert res["contacts"] > 0, name
        assert res["mismatched worlds"] == 0, (name, res)
        assert res["dist, pos"] < 1e-5, (name, res)
        assert res["frame"] < 1e-3, (name, res)


def _f32_compare(case, qpos):
    ours, theirs = collide_both(case.m, case.d, case.mjm, qpos)
    res = {"mismatched worlds": 0, "contacts": sum(len(t) for t in theirs),
           "dist, pos": 0.0, "frame": 0.0}
    for a, b in zip(ours, theirs):
        if len(a) != len(b):
            res["mismatched worlds"] += 1
            continue
        for x, y in zip(a, b):
            res["dist, pos"] = max(res["dist, pos"], float(np.abs(x["dist"] - y["dist"]).max()),
                                   float(np.abs(x["pos"] - y["pos"]).max()))
            res["frame"] = max(res["frame"], float(np.abs(x["frame"] - y["frame"]).max()))
    return res


def _f32_main(arch="cpu"):
    tiphys.init(arch=arch, precision="f32")
    out = {}
    for name in CASES:
        case = make_case(name).build()
        out[name] = _f32_compare(case, case.random_qpos(11))
        if name == "plane_cylinder":
            flat = _degenerate_qpos(case, _flat_cylinder_poses)
            qpos = case.random_qpos(12)
            qpos[:len(flat)] = flat
            out["flat cylinder"] = _f32_compare(case, qpos)
            assert out["flat cylinder"]["contacts"] >= 2 * 3 * len(flat)
    print(json.dumps(out))


def _device_archs():
    import spirv
    return spirv.device_archs()


@pytest.mark.parametrize("arch", _device_archs())
def test_spirv_path_matches_mujoco(arch):
    """The same f32 comparison on Vulkan (lavapipe on a CPU machine: the SPIR-V code
    Metal and non-CUDA GPUs run). Caught a SPIR-V miscompile: a dynamic loop over the
    local contact list inside the narrowphase's while loop emitted 2 of 4 box corners."""
    res = subproc.run([os.path.abspath(__file__), "f32", arch], key=f"{arch}-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    worst = json.loads(res.stdout.strip().splitlines()[-1])
    for name, r in worst.items():
        assert r["contacts"] > 0, name
        assert r["mismatched worlds"] == 0, (name, r)
        assert r["dist, pos"] < 1e-5, (name, r)
        assert r["frame"] < 1e-3, (name, r)


if __name__ == "__main__" and sys.argv[1:2] == ["f32"]:
    _f32_main(*sys.argv[2:3])
