"""Collision driver against MuJoCo 3.4.0: filtering, pair merging, contact order and
parameters, nconmax overflow, world isolation. Detectors have their own files
(test_collide_*.py); these models use spheres, capsules and planes."""
import warnings

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.kernels.collision_driver import candidate_pairs, collision, plan
from oracle import collide_both, compare_contacts, random_free_qpos

NWORLD = 24

FILTERS = """
<mujoco>
  <option><flag filterparent="{filterparent}"/></option>
  <default><geom size=".1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" priority="1" friction=".7 .01 .001"/>
    <geom name="wall" type="plane" size="5 5 .1" pos="0 .35 0" euler="90 0 0"
          contype="2" conaffinity="2" solref="-500 -10"/>
    <body name="static" pos=".3 .3 .1"><geom name="post" type="capsule" size=".05 .2"/></body>
    <body name="a" pos="0 0 .1">
      <freejoint/>
      <geom name="a1" solmix="3" solref=".03 .9" solimp=".8 .9 .002 .4 3"/>
      <geom name="a2" type="capsule" size=".05 .1" pos=".1 0 0" margin=".02" gap=".01"/>
      <body name="a_child" pos=".12 0 0">
        <joint type="ball"/>
        <geom name="ac" size=".08" condim="6" friction="1.2 .02 .003"/>
        <body name="a_grandchild" pos=".1 0 0">
          <joint axis="0 1 0"/>
          <geom name="agc" size=".07" contype="3"/>
        </body>
      </body>
    </body>
    <body name="b" pos=".15 .1 .1">
      <freejoint/>
      <geom name="b1" type="capsule" size=".06 .12" solmix="0" condim="4"/>
    </body>
    <body name="c" pos="-.1 .1 .1">
      <freejoint/>
      <geom name="c1" contype="2" conaffinity="1" priority="2" condim="1" margin=".05"/>
    </body>
    <body name="d" pos="-.1 -.1 .1">
      <freejoint/>
      <geom name="d1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <contact>
    <exclude body1="a" body2="b"/>
    <pair geom1="d1" geom2="floor" condim="3" margin=".03" gap=".01" solreffriction=".05 1"/>
    <pair geom1="b1" geom2="a1" condim="6" friction=".1 .1 .01 .001 .001"/>
    <pair geom1="d1" geom2="a2"/>
  </contact>
</mujoco>
"""


def _check(xml, nworld=NWORLD, seed=0, spread=0.12, center=(0, 0, 0.05), **kw):
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, nworld, **kw)
    rng = np.random.default_rng(seed)
    qpos = random_free_qpos(mjm, rng, nworld, spread=spread, center=center)
    ours, theirs = collide_both(m, d, mjm, qpos)
    errors = {w: e for w in range(nworld) if (e := compare_contacts(ours[w], theirs[w]))}
    return m, d, ours, theirs, errors


@pytest.mark.parametrize("filterparent", ["enable", "disable"])
def test_filters_pairs_and_parameters_match_mujoco(filterparent):
    m, d, ours, theirs, errors = _check(FILTERS.format(filterparent=filterparent))
    assert not errors, errors
    ncon = sum(len(c) for c in theirs)
    assert ncon > 3 * NWORLD  # the poses really collide
    pairs = {tuple(c["geom"].astype(int)) for w in theirs for c in w}
    mjm = mujoco.MjModel.from_xml_string(FILTERS.format(filterparent=filterparent))
    gid = {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, i): i for i in range(mjm.ngeom)}
    # explicit pairs collide although the geoms' bitmasks would not
    assert (gid["floor"], gid["d1"]) in pairs
    # excluded body pair (a, b) only through its explicit pair
    assert (gid["a2"], gid["b1"]) not in pairs


def test_candidates_follow_static_filters():
    xml = FILTERS.format(filterparent="enable")
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    cands = candidate_pairs(m.arrays, m.opt)
    name = lambda g: mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
    got = {(name(g1), name(g2)) for g1, g2, _ in cands}
    assert ("floor", "wall") not in got and ("wall", "floor") not in got  # both static
    assert ("a1", "ac") not in got  # parent-child
    assert ("a1", "agc") in got  # grandchild: not filtered
    assert ("floor", "d1") in got  # explicit pair
    assert not any("d1" in p and "floor" not in p and "a2" not in p for p in got)
    m2 = tiphys.load_model_from_string(xml.replace('filterparent="enable"',
                                                   'filterparent="disable"'))
    got2 = {(name(g1), name(g2)) for g1, g2, _ in candidate_pairs(m2.arrays, m2.opt)}
    assert ("a1", "ac") in got2 or ("ac", "a1") in got2
    m3 = tiphys.load_model_from_string(xml.replace("<flag ", '<flag contact="disable" '))
    assert plan(m3).ncand == 0


def test_override_flag_parameters():
    xml = FILTERS.format(filterparent="enable").replace(
        "<option>", '<option o_margin=".04" o_solref=".01 .5" o_solimp=".7 .8 .01 .3 1" '
        'o_friction=".2 .2 .002 .0001 0">').replace("<flag ", '<flag override="enable" ')
    m, d, ours, theirs, errors = _check(xml, seed=1)
    assert not errors, errors
    assert sum(len(c) for c in theirs) > NWORLD
    # friction is clamped at mjMINMU
    assert min(c["friction"].min() for w in ours for c in w) == pytest.approx(1e-5)


@pytest.mark.parametrize("room", ["median", "one"])
def test_overflow_warns_and_keeps_first_contacts_deterministically(room):
    """nconmax below what worlds find: each keeps MuJoCo's first nconmax contacts. With
    a little room the parallel pass keeps the lowest keys; with one slot the emission
    buffer itself overflows and those worlds re-run in candidate order."""
    xml = FILTERS.format(filterparent="enable")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    rng = np.random.default_rng(3)
    qpos = random_free_qpos(mjm, rng, NWORLD, spread=0.05, center=(0, 0, 0.02))
    full = tiphys.make_data(m, NWORLD)
    ours_full, theirs = collide_both(m, full, mjm, qpos)
    counts = np.array([len(c) for c in theirs])
    cap = int(np.median(counts)) - 1 if room == "median" else 1
    assert cap >= 1 and (counts > cap).any()
    small = tiphys.make_data(m, NWORLD, nconmax=cap)
    redo = plan(m).sweeps(small)[1]
    assert (redo is not None) == (room == "one")
    if room == "one":
        assert (counts > 4 * cap).any()  # some world overflows its emission buffer
    with pytest.warns(RuntimeWarning, match="nconmax"):
        ours, _ = collide_both(m, small, mjm, qpos)
    over = small.numpy("contact_overflow")
    assert np.array_equal(over, np.maximum(counts - cap, 0))
    for w in range(NWORLD):
        # the kept contacts are MuJoCo's first ones (candidate order)
        assert compare_contacts(ours[w], theirs[w][:cap]) == []
    with pytest.warns(RuntimeWarning):
        again, _ = collide_both(m, small, mjm, qpos)
    assert all(compare_contacts(a, b, atol=0) == [] for a, b in zip(ours, again))


def test_zero_contact_slots_with_candidates_is_an_error():
    m = tiphys.load_model_from_string(FILTERS.format(filterparent="enable"))
    d = tiphys.make_data(m, 2, nconmax=0)
    tiphys.kinematics(m, d)
    with pytest.raises(ValueError, match=r"nconmax=0 .* make_data\(m, nworld, nconmax"):
        tiphys.collision(m, d)


def test_nan_in_one_world_stays_there():
    xml = FILTERS.format(filterparent="enable")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 4)
    qpos = random_free_qpos(mjm, np.random.default_rng(5), 4, spread=0.1,
                            center=(0, 0, 0.05))
    ours_ref, theirs = collide_both(m, d, mjm, qpos)
    qpos[2, :] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours, _ = collide_both(m, d, mjm, qpos)
    for w in (0, 1, 3):
        assert compare_contacts(ours[w], theirs[w]) == []
    assert sum(len(c) for c in theirs) > 0


def test_ncon_shape_and_no_candidates():
    m = tiphys.load_model_from_string(
        '<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>')
    d = tiphys.make_data(m, 3)
    assert d.nconmax == 0 and d.numpy("ncon").shape == (3,)
    tiphys.kinematics(m, d)
    collision(m, d)
    assert list(d.numpy("ncon")) == [0, 0, 0]


def _pile(n=40):
    shapes = ('size=".08"', 'type="capsule" size=".05 .06"')
    bodies = "\n".join(
        f'<body pos="{(i % 5) * .15:.2f} {((i // 5) % 4) * .15:.2f} {.1 + (i // 20) * .15:.2f}">'
        f'<freejoint/><geom {shapes[i % 2]}/></body>' for i in range(n))
    return f"""<mujoco><worldbody><geom type="plane" size="5 5 .1"/>
      <geom type="plane" size="5 5 .1" pos="0 .6 0" euler="80 0 0"/>
      {bodies}</worldbody></mujoco>"""


PILE = _pile()


@pytest.mark.parametrize("cap", [None, 3])
def test_sweep_and_prune_matches_mujoco(monkeypatch, cap):
    import tiphys.kernels.collision_driver as tc
    monkeypatch.setattr(tc, "SAP_MIN_CANDIDATES", 0)
    xml = PILE
    m = tiphys.load_model_from_string(xml)
    p = plan(m)
    assert p.sap and p.sap_nfixed > 0  # plane candidates stay fixed
    if cap is not None:
        p.sap_cap = cap  # too small: the call falls back to testing every pair
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, 6)
    total = 0
    for seed in range(3):  # moving states: the persistent order gets re-sorted
        qpos = random_free_qpos(mjm, np.random.default_rng(seed), 6, spread=0.04,
                                center=(0, 0, 0))
        ours, theirs = collide_both(m, d, mjm, qpos)
        for w in range(6):
            assert compare_contacts(ours[w], theirs[w]) == [], (seed, w)
        total += sum(len(c) for c in theirs)
        # a world whose list overflows tests every pair, decided on the device
        overflowed = p.sweeps(d)[0].sap.overflow.to_numpy()[:6]
        assert overflowed.all() if cap is not None else not overflowed.any()
    assert total > 100


def test_sweep_and_prune_keeps_pairs_within_an_override_margin(monkeypatch):
    """<flag override> with o_margin larger than the geoms' own margins: spheres 0.18
    apart count as near (no pair sits at the margin exactly), and the sweep (its axis
    and the two across it) must not prune them by the geoms' own margins (it did: 6
    contacts of MuJoCo's 33)."""
    import tiphys.kernels.collision_driver as tc
    monkeypatch.setattr(tc, "SAP_MIN_CANDIDATES", 0)
    bodies = "\n".join(
        f'<body pos="{(i % 4) * .28:.2f} {(i // 4) * .28:.2f} 1"><freejoint/>'
        f'<geom size=".05"/></body>' for i in range(12))
    xml = f"""<mujoco><option o_margin=".5"><flag override="enable"/></option>
      <worldbody>{bodies}</worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    assert plan(m).sap
    mjm = mujoco.MjModel.from_xml_string(xml)
    d = tiphys.make_data(m, 2)
    qpos = np.repeat(mjm.qpos0[None], 2, axis=0)
    ours, theirs = collide_both(m, d, mjm, qpos)
    assert len(theirs[0]) >= 17  # every neighbour pair, diagonals included
    for w in range(2):
        assert compare_contacts(ours[w], theirs[w]) == [], w


# ------------------------------------------------------------------------------------
# the detector tables are static: a renamed module or function fails here
# ------------------------------------------------------------------------------------

def test_every_detector_table_entry_imports():
    """Each analytic pair's device function and each narrowphase kind's host function
    exist under the names the tables give (a rename must fail loudly, never turn a
    pair into "no detector yet")."""
    import importlib

    from tiphys.kernels.collision_driver import DETECTOR_KINDS, NARROWPHASE, NOT_YET_PAIRS, narrowphase
    from tiphys.kernels.collision import PRIMITIVE_DETECTORS, primitive_table
    for pair, (module, name, maxcon) in PRIMITIVE_DETECTORS.items():
        mod = importlib.import_module(f"tiphys.kernels.{module}")
        assert callable(getattr(mod, name, None)), (pair, module, name)
    assert set(primitive_table()) == set(PRIMITIVE_DETECTORS)
    for kind in NARROWPHASE:
        assert callable(narrowphase(kind)), kind
    # every pair of MuJoCo's table runs a tiphys kernel or is pinned as not yet
    kinds = set(DETECTOR_KINDS.values())
    assert kinds <= set(NARROWPHASE)
    assert NOT_YET_PAIRS == set()
    assert len(DETECTOR_KINDS) == 45 - 3  # all but plane-plane, plane-hfield, hfield-hfield


def test_pair_without_detector_yet_raises_naming_it(monkeypatch):
    """A candidate pair in NOT_YET_PAIRS stops collision with NotImplementedError naming
    the pair (a supported pair stands in)."""
    import tiphys.kernels.collision_driver as contacts
    xml = """<mujoco><worldbody><geom type="box" size=".1 .1 .1"/>
      <body><freejoint/><geom size=".1"/></body></worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    monkeypatch.setattr(contacts, "NOT_YET_PAIRS", {(2, 6)})
    with pytest.raises(NotImplementedError, match="no detector yet for geom pairs sphere-box"):
        collision(m, d)


def test_step_reads_nothing_back_and_reports_overflow_later(monkeypatch):
    """Overflow is counted on the device (mjWARN_CONTACTFULL): step copies nothing to
    the host, and the warning comes when results are read, on check_warnings, or after
    REPORT_EVERY steps at the latest, once per occurrence."""
    import taichi as ti

    import tiphys.report as report
    xml = FILTERS.format(filterparent="enable")
    mjm = mujoco.MjModel.from_xml_string(xml)
    m = tiphys.load_model_from_string(xml)
    qpos = random_free_qpos(mjm, np.random.default_rng(3), NWORLD, spread=0.05,
                            center=(0, 0, 0.02))
    d = tiphys.make_data(m, NWORLD, nconmax=1)
    d.qpos.from_numpy(qpos.astype(d.qpos.to_numpy().dtype))
    tiphys.step(m, d)  # compile outside the checked region
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tiphys.check_warnings(m, d)
    monkeypatch.setattr(report, "REPORT_EVERY", 3)
    d._steps_since_report = 0

    def no_read_back(*args, **kwargs):
        raise AssertionError("step read an array back to the host")

    with monkeypatch.context() as patch:
        for reader in ("_ndarray_to_numpy", "_ndarray_matrix_to_numpy"):
            patch.setattr(ti.lang._ndarray.Ndarray, reader, no_read_back)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tiphys.step(m, d)
            tiphys.step(m, d)
    with pytest.warns(RuntimeWarning, match=r"nconmax=1 .* make_data\(m, nworld, nconmax"):
        tiphys.step(m, d)  # the third step since the last report
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tiphys.check_warnings(m, d) == {}
    assert (d.numpy("warning_number")[:, 1] >= 4).any()  # counted at every step
