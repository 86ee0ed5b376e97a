"""Heightfield narrowphase (mjc_ConvexHField: prisms + native GJK/EPA) against MuJoCo
3.4.0.

A tilted, shifted height field with random elevations and one free geom of each
convex type, posed at random over it (orientation, x/y over the whole field and past
its edges, height from inside the terrain to above it). Both engines run the same
algorithm on the same prisms in the same order, so contacts agree to round-off, with
the same exception as test_collide_convex: where EPA's answer is chaotic in MuJoCo
itself (a 1e-15 change of qpos moves it), ours must be one of MuJoCo's answers
(``within_mujoco_noise``).
"""
import zlib

import mujoco
import numpy as np
import pytest

import tiphys
from conftest import record
from oracle import collide_both, random_free_qpos
from test_collide_convex import GEOMS, MESHES, TOL_POLY, TOL_SMOOTH, _smooth, errors_of
from tiphys.kernels.collision_driver import plan

NWORLD = 32
NROW, NCOL = 7, 8
ELEVATION = " ".join(f"{v:.3f}" for v in
                     np.random.default_rng(7).uniform(0, 1, NROW * NCOL))
GROUP = "heightfield narrowphase (worlds touching, contacts, max |error|)"


def hfield_xml(b, margin=0.0, nrow=NROW, ncol=NCOL, elevation=ELEVATION,
               size=".5 .4 .2 .1", body_pos="0 0 .3"):
    assets = "".join(f'<mesh name="{n}" vertex="{v}"/>' for n, v in MESHES.items()
                     if n == b)
    return f"""<mujoco><asset>{assets}
        <hfield name="h" nrow="{nrow}" ncol="{ncol}" size="{size}" elevation="{elevation}"/>
      </asset>
      <worldbody>
        <geom type="hfield" hfield="h" pos=".1 -.05 .02" euler="5 -8 20" margin="{margin}"/>
        <body pos="{body_pos}"><freejoint/><geom {GEOMS[b]} margin="{margin}"/></body>
      </worldbody></mujoco>"""


def run(xml, seed, nworld=NWORLD):
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    rng = np.random.default_rng(seed)
    qpos = random_free_qpos(mjm, rng, nworld, spread=0.0)
    qpos[:, 0] = rng.uniform(-0.6, 0.6, nworld)  # also past the field's edges
    qpos[:, 1] = rng.uniform(-0.5, 0.5, nworld)
    qpos[:, 2] = rng.uniform(0.0, 0.4, nworld)
    d = tiphys.make_data(m, nworld)
    ours, theirs = collide_both(m, d, mjm, qpos)
    return m, mjm, qpos, ours, theirs


TYPES = ["sphere", "capsule", "ellipsoid", "cylinder", "box", "tetra", "icosa", "cloud"]


@pytest.mark.parametrize("b", TYPES)
def test_hfield_pair_matches_mujoco(b):
    m, mjm, qpos, ours, theirs = run(hfield_xml(b), zlib.crc32(f"hfield-{b}".encode()))
    assert plan(m).hfield_count == 1
    tol = TOL_SMOOTH if _smooth(b) else TOL_POLY
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, tol, mjm, qpos)
    assert not msgs, msgs[:5]
    assert NWORLD // 5 <= touching <= NWORLD - NWORLD // 5, touching  # both outcomes
    assert ncon > touching  # several prisms per pair
    record(GROUP, f"hfield-{b}",
           f"match ({touching}/{NWORLD} worlds, {ncon} contacts, dist {worst[0]:.0e} "
           f"pos {worst[1]:.0e} frame {worst[2]:.0e}, {noisy} within MuJoCo's noise)")


@pytest.mark.parametrize("b", ["sphere", "box"])
def test_hfield_margin_matches_mujoco(b):
    """The margin raises the prism tops and inflates the geom by margin/2."""
    m, mjm, qpos, ours, theirs = run(hfield_xml(b, margin=0.04),
                                     zlib.crc32(f"margin-{b}".encode()))
    tol = TOL_SMOOTH if _smooth(b) else TOL_POLY
    msgs, touching, ncon, worst, noisy = errors_of(ours, theirs, tol, mjm, qpos)
    assert not msgs, msgs[:5]
    assert touching > 0
    record(GROUP, f"hfield-{b} margin .04", f"match ({touching}/{NWORLD} worlds, "
           f"{ncon} contacts, {noisy} within MuJoCo's noise)")


def test_hfield_contact_cap_is_mujocos():
    """A large box flat on a fine, nearly level grid touches far more than 50 prisms:
    both engines stop at mjMAXCONPAIR = 50, keeping the first in grid order."""
    n = 30
    elevation = " ".join(f"{v:.4f}" for v in
                         0.5 + 0.01 * np.random.default_rng(3).uniform(size=n * n))
    xml = f"""<mujoco><asset>
        <hfield name="h" nrow="{n}" ncol="{n}" size="1 1 .2 .1" elevation="{elevation}"/>
      </asset><worldbody><geom type="hfield" hfield="h"/>
        <body><freejoint/><geom type="box" size=".4 .4 .05"/></body>
      </worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    qpos = np.tile(mjm.qpos0, (3, 1))
    qpos[:, 2] = [0.13, 0.145, 0.5]  # deep, shallow, apart
    qpos[1, :2] = [0.2, -0.3]
    d = tiphys.make_data(m, 3)
    ours, theirs = collide_both(m, d, mjm, qpos)
    assert [len(c) for c in theirs] == [50, 50, 0]
    msgs, *_ = errors_of(ours, theirs, TOL_POLY, mjm, qpos)
    assert not msgs, msgs[:5]


def test_hfield_explicit_pair_and_world_nan():
    """An explicit <pair> reaches the heightfield detector; NaN in one world's pose
    leaves the other worlds' contacts unchanged."""
    xml = hfield_xml("capsule").replace(
        '<geom type="hfield"', '<geom name="hf" contype="0" conaffinity="0" type="hfield"'
    ).replace('<geom type="capsule"', '<geom name="c" contype="0" conaffinity="0" '
              'type="capsule"').replace(
        "</worldbody>", '</worldbody><contact><pair geom1="c" geom2="hf" '
        'friction=".5 .5 .01 .001 .001"/></contact>')
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    rng = np.random.default_rng(11)
    qpos = random_free_qpos(mjm, rng, 8, spread=0.0)
    qpos[:, 2] = rng.uniform(-0.05, 0.15, 8)
    d = tiphys.make_data(m, 8)
    ours, theirs = collide_both(m, d, mjm, qpos)
    msgs, touching, *_ = errors_of(ours, theirs, TOL_SMOOTH, mjm, qpos)
    assert not msgs and touching > 0, msgs[:5]
    bad = qpos.copy()
    bad[3, 2] = np.nan
    ours_nan, _ = collide_both(m, d, mjm, bad)
    for w in range(8):
        if w != 3:
            assert len(ours_nan[w]) == len(ours[w])
            for a, b in zip(ours_nan[w], ours[w]):
                np.testing.assert_array_equal(a["pos"], b["pos"])


@pytest.mark.parametrize("b", ["sphere", "box"])
def test_hfield_geom_distance_matches_mujoco(b):
    """mj_geomDistance on a heightfield pair runs mjc_ConvexHField with distmax as
    margin and keeps the deepest contact (either geom order)."""
    from tiphys.kernels.geom_distance import geom_distance
    xml = hfield_xml(b)
    m = tiphys.load_model_from_string(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    rng = np.random.default_rng(zlib.crc32(f"dist-{b}".encode()))
    qpos = random_free_qpos(mjm, rng, 16, spread=0.0)
    qpos[:, :2] = rng.uniform(-0.4, 0.4, (16, 2))
    qpos[:, 2] = rng.uniform(0.1, 0.6, 16)
    d = tiphys.make_data(m, 16)
    collide_both(m, d, mjm, qpos)  # sets qpos and runs kinematics
    mjd = mujoco.MjData(mjm)
    found = 0
    for g1, g2 in ((0, 1), (1, 0)):
        dist, fromto = geom_distance(m, d, g1, g2, 0.05)
        for w in range(16):
            mjd.qpos[:] = qpos[w]
            mujoco.mj_kinematics(mjm, mjd)
            ft = np.zeros(6)
            ref = mujoco.mj_geomDistance(mjm, mjd, g1, g2, 0.05, ft)
            found += ref < 0.05
            np.testing.assert_allclose(dist[w], ref, atol=TOL_SMOOTH, rtol=0)
            np.testing.assert_allclose(fromto[w], ft, atol=TOL_SMOOTH * 10, rtol=0)
    assert 0 < found < 32
