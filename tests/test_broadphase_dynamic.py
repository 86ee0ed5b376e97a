"""Dynamic broadphase (kernels/broadphase_dynamic.py, issue 17: large scenes) against
MuJoCo 3.4.0: with DYNAMIC_MIN_PAIRS lowered, a scene of a few hundred bodies builds its
candidate pairs on the device every step; the contacts (geoms, positions, distances,
frames, parameters and their order) must be MuJoCo's in every world. Also: a world
whose pairs overflow nbroadmax warns naming it while the others stay exact, and a
10,000-body scene's make_data stays proportional to its bodies."""
import warnings

import mujoco
import numpy as np
import pytest

import tiphys
import tiphys.kernels.collision_driver as tc
from oracle import collide_both, compare_contacts, random_free_qpos

NWORLD = 4


def _scene(nx=6, ny=5, nz=5, seed=0, filterparent="enable", option=""):
    """nx * ny * nz free bodies (spheres, capsules, boxes; every seventh with a second
    geom, every fifth with a hinged child that overlaps it) in a grid over a floor and a
    tilted wall, with contype/conaffinity variety, excludes and explicit pairs."""
    rng = np.random.default_rng(seed)
    shapes = ('size="{a:.3f}"', 'type="capsule" size="{a:.3f} {b:.3f}"',
              'type="box" size="{a:.3f} {b:.3f} {c:.3f}"')
    bodies, pairs, excludes = [], [], []
    n = nx * ny * nz
    for i in range(n):
        iz, rem = divmod(i, nx * ny)
        iy, ix = divmod(rem, nx)
        a, b, c = rng.uniform(0.035, 0.06, 3)
        shape = shapes[i % 3].format(a=a, b=b, c=c)
        bits = ""
        if i % 11 == 3:
            bits = ' contype="2" conaffinity="2"'
        elif i % 13 == 5:
            bits = ' contype="0" conaffinity="0"'
        elif i % 17 == 7:
            bits = ' contype="1" conaffinity="2"'
        inner = f'<geom name="g{i}" {shape}{bits}/>'
        if i % 7 == 2:
            inner += f'<geom name="g{i}b" size="{0.6 * a:.3f}" pos="0 0 {a:.3f}"/>'
        if i % 5 == 1:
            inner += (f'<body name="c{i}" pos="{a:.3f} 0 0"><joint type="hinge" axis="0 1 0"/>'
                      f'<geom name="k{i}" type="capsule" size=".02 .04"/></body>')
        bodies.append(f'<body name="b{i}" pos="{0.11 * ix:.3f} {0.11 * iy:.3f} '
                      f'{0.07 + 0.11 * iz:.3f}"><freejoint/>{inner}</body>')
        if i % 9 == 4 and i + 1 < n:
            excludes.append(f'<exclude body1="b{i}" body2="b{i + 1}"/>')
        if i % 13 == 5:  # bitmask-off geom: collides through explicit pairs only
            pairs.append(f'<pair geom1="g{i}" geom2="floor" margin=".01"/>')
            if i + 1 < n:
                pairs.append(f'<pair geom1="g{i + 1}" geom2="g{i}" condim="1"/>')
        if i % 9 == 4 and i + 1 < n:  # an excluded body pair, collided by its pair
            pairs.append(f'<pair geom1="g{i}" geom2="g{i + 1}" friction=".3 .3 .01 .001 .001"/>')
    return f"""<mujoco>
  <option {option}><flag filterparent="{filterparent}"/></option>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" priority="1"/>
    <geom name="wall" type="plane" size="5 5 .1" pos="0 -.05 0" euler="-80 0 0"/>
    <body name="post" pos=".3 .3 .2"><geom type="box" size=".03 .03 .2"/></body>
    {chr(10).join(bodies)}
  </worldbody>
  <contact>
    {chr(10).join(excludes)}
    {chr(10).join(pairs)}
  </contact>
</mujoco>"""


@pytest.fixture
def dynamic(monkeypatch):
    monkeypatch.setattr(tc, "DYNAMIC_MIN_PAIRS", 0)


def _load(xml, **kw):
    m = tiphys.load_model_from_string(xml)
    assert tc.plan(m).dynamic
    return m, mujoco.MjModel.from_xml_string(xml), tiphys.make_data(m, NWORLD, **kw)


@pytest.mark.parametrize("filterparent", ["enable", "disable"])
def test_dynamic_broadphase_contacts_match_mujoco(dynamic, filterparent):
    _match_mujoco(_scene(filterparent=filterparent))


def test_dynamic_broadphase_override_margin_matches_mujoco(dynamic):
    # o_margin replaces every margin: the body boxes grow by it
    _match_mujoco(_scene(option='o_margin=".015"').replace(
        '<flag ', '<flag override="enable" '))


def _match_mujoco(xml):
    m, mjm, d = _load(xml)
    assert mjm.nbody > 150 and mjm.npair > 10 and mjm.nexclude > 10
    total, pairs = 0, set()
    for seed in range(3):  # different states per world and per call: the order re-sorts
        qpos = random_free_qpos(mjm, np.random.default_rng(seed), NWORLD, spread=0.04)
        ours, theirs = collide_both(m, d, mjm, qpos)
        for w in range(NWORLD):
            assert compare_contacts(ours[w], theirs[w]) == [], (seed, w)
        total += sum(len(c) for c in theirs)
        pairs |= {tuple(c["geom"].astype(int)) for w in theirs for c in w}
    assert not d.numpy("broadphase_overflow").any()
    assert total > 1000
    floor = 0
    gid = {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, i): i for i in range(mjm.ngeom)}
    assert (floor, gid["g5"]) in pairs  # an explicit pair of a bitmask-off geom
    assert any(gid["wall"] in p for p in pairs)


def test_dynamic_broadphase_overflow_warns_and_spares_other_worlds(dynamic):
    xml = _scene(nx=5, ny=4, nz=4)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    rng = np.random.default_rng(7)
    qpos = random_free_qpos(mjm, rng, NWORLD, spread=0.02)
    # world 2 crammed together: far more overlapping pairs than the others
    crammed = random_free_qpos(mjm, rng, 1, spread=0.0)
    for j in range(mjm.njnt):
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            adr = mjm.jnt_qposadr[j]
            crammed[0, adr:adr + 3] = 0.6 * crammed[0, adr:adr + 3] + (0.05, 0.05, 0.05)
    qpos[2] = crammed[0]
    big = tiphys.make_data(m, NWORLD, nbroadmax=20000)
    collide_both(m, big, mjm, qpos)
    st = tc.plan(m).sweeps(big)[0].dyn
    need = np.maximum(st.nbpair.to_numpy(), st.ncand.to_numpy())
    cap = int(max(need[w] for w in (0, 1, 3)))
    assert need[2] > cap + 50
    d = tiphys.make_data(m, NWORLD, nbroadmax=cap)
    # reading the contacts reports the overflow counted on the device
    with pytest.warns(RuntimeWarning, match=r"nbroadmax=\d+ .*1 world.*world 2 .*"
                                            r"make_data\(m, nworld, nbroadmax=\.\.\.\)"):
        ours, theirs = collide_both(m, d, mjm, qpos)
    over = d.numpy("broadphase_overflow")
    assert over[2, 0] == 1 and over[2, 1] > cap and not over[[0, 1, 3]].any()
    for w in (0, 1, 3):
        assert compare_contacts(ours[w], theirs[w]) == [], w
    got = ours[2]
    assert 0 < len(got) < len(theirs[2])
    assert all(np.isfinite(c["dist"]) and np.all(np.isfinite(c["pos"])) for c in got)
    # a fresh Data with room again matches in every world
    ours, theirs = collide_both(m, big, mjm, qpos)
    assert all(compare_contacts(ours[w], theirs[w]) == [] for w in range(NWORLD))


@pytest.mark.parametrize("room", ["some", "one"])
def test_dynamic_broadphase_nconmax_keeps_mujocos_first_contacts(dynamic, room):
    """nconmax below what worlds find: each keeps MuJoCo's first nconmax contacts, with
    room in the emission buffer (the parallel pass) and without (one slot: the
    overflowing worlds re-run one thread each over their own lists)."""
    xml = _scene(nx=5, ny=4, nz=4)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(5), NWORLD, spread=0.04)
    _, theirs = collide_both(m, tiphys.make_data(m, NWORLD), mjm, qpos)
    counts = np.array([len(c) for c in theirs])
    cap = int(counts.min()) // 2 if room == "some" else 1
    d = tiphys.make_data(m, NWORLD, nconmax=cap)
    with pytest.warns(RuntimeWarning, match="nconmax"):
        ours, _ = collide_both(m, d, mjm, qpos)
    assert np.array_equal(d.numpy("contact_overflow"), counts - cap)
    for w in range(NWORLD):
        assert compare_contacts(ours[w], theirs[w][:cap]) == [], w


def test_dynamic_broadphase_nan_world_stays_there(dynamic):
    m, mjm, d = _load(_scene(nx=5, ny=4, nz=4))
    qpos = random_free_qpos(mjm, np.random.default_rng(11), NWORLD, spread=0.04)
    bad = qpos.copy()
    bad[1, :] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours, _ = collide_both(m, d, mjm, bad)
    _, theirs = collide_both(m, d, mjm, qpos)  # (MuJoCo on the good states)
    for w in (0, 2, 3):
        assert compare_contacts(ours[w], theirs[w]) == [], w
    assert not d.numpy("broadphase_overflow").any()
    # the world's persistent order survives: the good state collides exactly again
    ours, theirs = collide_both(m, d, mjm, qpos)
    assert all(compare_contacts(ours[w], theirs[w]) == [] for w in range(NWORLD))


def test_ten_thousand_bodies_make_data_memory_is_per_body():
    """make_data of 10,000 free spheres over a plane takes the dynamic path by default
    and allocates a bounded number of bytes per body (no ngeom^2 or nv^2 buffer)."""
    from tiphys.model import HESSIAN_NNZ_BYTES, data_bytes
    n = 10000
    bodies = "".join(f'<body pos="{0.13 * (i % 100):.2f} {0.13 * (i // 100):.2f} .05">'
                     f'<freejoint/><geom size=".05"/></body>' for i in range(n))
    m = tiphys.load_model_from_string(
        f'<mujoco><worldbody><geom type="plane" size="50 50 .1"/>{bodies}</worldbody>'
        f'</mujoco>')
    assert tc.plan(m).dynamic
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "capped to the memory budget" warning
        d = tiphys.make_data(m, 1)
    total = data_bytes(d._sizes, 1) + tc.collision_bytes(m, d) + d.nhnnz * HESSIAN_NNZ_BYTES
    assert total < n * 40_000, total
    assert d.nbroadmax < 40 * n and d.nconmax <= 8 * n and d.nhnnz < 100 * m.nv


def test_static_path_midphase_order_matches_mujoco():
    """A body pair where one body has several geoms: MuJoCo's midphase sorts its
    contacts by (geom1, geom2) after the type swap; the static list orders them so."""
    xml = _scene()
    m = tiphys.load_model_from_string(xml)
    assert not tc.plan(m).dynamic
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, NWORLD)
    qpos = random_free_qpos(mjm, np.random.default_rng(0), NWORLD, spread=0.04)
    ours, theirs = collide_both(m, d, mjm, qpos)
    assert all(compare_contacts(ours[w], theirs[w]) == [] for w in range(NWORLD))


def test_dynamic_and_static_paths_step_alike(monkeypatch):
    """On single-geom bodies (where the static list's order is MuJoCo's too) both paths
    give the same steps, to the bit: same contacts in the same order, then the same
    constraint rows and solve."""
    n = 60
    shapes = ('size=".04"', 'type="box" size=".03 .035 .04"', 'type="capsule" size=".025 .03"')
    bodies = "".join(
        f'<body pos="{0.09 * (i % 5):.2f} {0.09 * ((i // 5) % 4):.2f} '
        f'{0.06 + 0.09 * (i // 20):.2f}"><freejoint/><geom {shapes[i % 3]}/></body>'
        for i in range(n))
    xml = f'<mujoco><worldbody><geom type="plane" size="5 5 .1"/>{bodies}</worldbody></mujoco>'
    out = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(tc, "DYNAMIC_MIN_PAIRS", threshold)
        m = tiphys.load_model_from_string(xml)
        assert tc.plan(m).dynamic == (threshold == 0)
        d = tiphys.make_data(m, 2, nconmax=400)
        qvel = np.random.default_rng(3).normal(scale=0.5, size=(2, m.nv))
        d.qvel.from_numpy(qvel)
        for _ in range(30):
            tiphys.step(m, d)
        out.append((d.numpy("qpos"), d.numpy("qvel"), d.numpy("ncon")))
    assert out[0][2].min() > 20
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)


F32_CHECK = """
import json, sys
sys.path.insert(0, {here!r})
import numpy as np, mujoco, tiphys
tiphys.init(arch="cpu", precision="f32")
import tiphys.kernels.collision_driver as tc
from oracle import collide_both, random_free_qpos
from test_broadphase_dynamic import _scene
saved = tc.DYNAMIC_MIN_PAIRS
tc.DYNAMIC_MIN_PAIRS = 0  # (a shared helper process: restored below)
try:
    xml = _scene(nx=5, ny=4, nz=4)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, 3)
    qpos = random_free_qpos(mjm, np.random.default_rng(2), 3, spread=0.04)
    ours, theirs = collide_both(m, d, mjm, qpos)
    out = dict(dynamic=bool(tc.plan(m).dynamic), same=[], err=0.0, n=0)
    for a, b in zip(ours, theirs):
        ga = [tuple(int(x) for x in c["geom"]) for c in a]
        gb = [tuple(int(x) for x in c["geom"]) for c in b]
        out["same"].append(ga == gb)
        out["n"] += len(gb)
        if ga == gb and ga:
            out["err"] = max(out["err"], float(max(
                np.abs(c["dist"] - e["dist"]).max() for c, e in zip(a, b))))
finally:
    tc.DYNAMIC_MIN_PAIRS = saved
print(json.dumps(out))
"""


def test_dynamic_broadphase_f32_matches_mujoco_order():
    """In f32 (GPUs, Metal, Vulkan) the dynamic path keeps MuJoCo's contacts and order
    (distances to single precision)."""
    import json
    import os

    import subproc
    here = os.path.dirname(os.path.abspath(__file__))
    res = subproc.run(["-c", F32_CHECK.format(here=here)], key="cpu-f32")
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["dynamic"] and all(out["same"]) and out["n"] > 100, out
    assert out["err"] < 1e-4, out
