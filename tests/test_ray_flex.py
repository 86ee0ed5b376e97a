"""ray_flex against MuJoCo 3.4.0's mju_rayFlex: a rope (1D), a cloth (2D) and a soft
block (3D) after they moved, in several worlds, with many rays aimed at each flex
(hits, misses, grazing rays) and every combination of the vertex, edge, face and skin
flags and of the 3D layer; distances to 1e-9 and the same nearest vertex. f64 CPU."""
import itertools
import json

import mujoco
import numpy as np
import pytest

import spirv
import subproc
import tiphys

NWORLD = 3
NRAY = 40

XML = """<mujoco>
  <option timestep="0.004"/>
  <worldbody>
    <flexcomp name="rope" type="grid" count="8 1 1" spacing=".06 .06 .06" pos="-.4 0 .6"
              dim="1" radius=".02" mass=".2">
      <contact contype="0" conaffinity="0"/><edge equality="true"/><pin id="0"/>
    </flexcomp>
    <flexcomp name="cloth" type="grid" count="6 6 1" spacing=".06 .06 .06" pos="0 0 .6"
              dim="2" radius=".01" mass=".5">
      <contact contype="0" conaffinity="0"/><edge equality="true"/><pin id="0 5"/>
    </flexcomp>
    <flexcomp name="block" type="grid" count="4 4 4" spacing=".07 .07 .07" pos=".5 0 .4"
              dim="3" radius=".005" mass="1">
      <contact contype="0" conaffinity="0"/><edge equality="true"/><pin id="0 1 2 3"/>
    </flexcomp>
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def scene():
    tiphys.init(arch="cpu", precision="f64")
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjds = []
    for world in range(NWORLD):
        mjd = mujoco.MjData(mjm)
        mjd.qvel[:] = np.random.default_rng(world).normal(0, .4, mjm.nv)
        for _ in range(20 + 25 * world):
            mujoco.mj_step(mjm, mjd)
        mujoco.mj_forward(mjm, mjd)
        mjds.append(mjd)
    m = tiphys.load_model_from_string(XML)
    d = tiphys.make_data(m, NWORLD)
    d.qpos.from_numpy(np.stack([x.qpos for x in mjds]))
    tiphys.forward(m, d)
    return mjm, mjds, m, d


def _rays(mjm, mjds, flexid, rng):
    """Rays from points around the flex towards random points near its vertices (some
    aimed off it)."""
    pnts, vecs = [], []
    adr, num = mjm.flex_vertadr[flexid], mjm.flex_vertnum[flexid]
    for mjd in mjds:
        verts = mjd.flexvert_xpos[adr:adr + num]
        centre = verts.mean(0)
        target = verts[rng.integers(num)] + rng.normal(0, .03, 3)
        start = centre + rng.normal(0, 1, 3) * .6
        pnts.append(start)
        vecs.append((target - start) * rng.uniform(.5, 2))
    return np.array(pnts), np.array(vecs)


@pytest.mark.parametrize("flags", list(itertools.product((0, 1), repeat=4)),
                         ids=lambda f: "vert%d-edge%d-face%d-skin%d" % f)
def test_ray_flex_matches_mujoco(scene, flags):
    mjm, mjds, m, d = scene
    rng = np.random.default_rng(sum(b << i for i, b in enumerate(flags)))
    hits = 0
    for flexid in range(mjm.nflex):
        for layer in ((0, 1) if mjm.flex_dim[flexid] == 3 else (0,)):
            for _ in range(NRAY // 4):
                pnts, vecs = _rays(mjm, mjds, flexid, rng)
                dist, vert = tiphys.ray_flex(m, d, layer, *flags, flexid, pnts, vecs)
                for w, mjd in enumerate(mjds):
                    vid = np.array([-1], dtype=np.int32)
                    ref = mujoco.mju_rayFlex(mjm, mjd, layer, *flags, flexid, pnts[w],
                                             vecs[w], vid)
                    assert dist[w] == pytest.approx(ref, abs=1e-9), (flexid, w)
                    if ref >= 0:
                        hits += 1
                        assert vert[w] == vid[0], (flexid, w, dist[w])
                    else:
                        assert vert[w] == -1
    if any(flags):
        assert hits > 10  # the rays do hit what is drawn


def test_ray_flex_rejects_bad_input(scene):
    mjm, mjds, m, d = scene
    with pytest.raises(ValueError, match="flexid"):
        tiphys.ray_flex(m, d, 0, 0, 1, 0, 1, 3, [0, 0, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="zero length"):
        tiphys.ray_flex(m, d, 0, 0, 1, 0, 1, 0, [0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        tiphys.ray_flex(m, d, 0, 0, 1, 0, 1, 0, [0, 0], [1, 0, 0])


# --------------------------------------------------------------- loop-limited backends

# rigid: no dofs (the ray reads only vertex positions; 43,200 dofs would cost gigabytes)
BIG_CLOTH = """<mujoco><worldbody>
  <flexcomp name="cloth" type="grid" count="120 120 1" spacing=".01 .01 .01" pos="0 0 .5"
            dim="2" radius=".002" mass="1" rigid="true">
    <contact contype="0" conaffinity="0"/>
  </flexcomp>
</worldbody></mujoco>"""

LIMITED_SCRIPT = """
import json, sys, warnings
import mujoco, numpy as np, tiphys
tiphys.init(arch=sys.argv[-1], precision="f32")
from tiphys.kernels.loop_limit import loop_limit
from tiphys.ray import ray_flex
xml = sys.stdin.read()
mjm = mujoco.MjModel.from_xml_string(xml)
mjd = mujoco.MjData(mjm)
mujoco.mj_forward(mjm, mjd)
m = tiphys.load_model_from_string(xml)
d = tiphys.make_data(m, 2)
d.flexvert_xpos.from_numpy(np.repeat(mjd.flexvert_xpos[None], 2, 0).astype(np.float32))
pnt, vec = np.array([.203, .297, 1.0]), np.array([0.0, 0.0, -1.0])
vert = np.zeros(1, np.int32)
want = mujoco.mju_rayFlex(mjm, mjd, 0, 0, 1, 1, 0, 0, pnt, vec, vert)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist, vertid = ray_flex(m, d, 0, 0, 1, 1, 0, 0, pnt, vec)
print(json.dumps({"mujoco": [want, int(vert[0])], "dist": [None if np.isnan(x) else float(x)
                  for x in dist], "vertid": vertid.tolist(),
                  "warnings": [str(w.message) for w in caught], "limit": loop_limit()}))
"""


@pytest.mark.parametrize("arch", ["cpu"] + spirv.device_archs()[:1])
def test_flex_rays_cut_by_a_loop_limit_are_reported(arch):
    """Mesa's lavapipe cuts a thread's loops after 65535 iterations, silently
    (kernels/loop_limit.py). A ray at a 120 x 120 cloth's edges and faces walks its
    14,400 vertices (bounding box), 28,322 edges and 28,322 triangles: on lavapipe the
    thread is cut, and ray_flex returns NaN and vertex -1 with a warning naming the
    limit. Where there is no limit (the CPU, CUDA, a GPU's Vulkan) it matches
    mju_rayFlex and nothing warns."""
    res = subproc.run(["-c", LIMITED_SCRIPT, arch], key=f"{arch}-f32", input=BIG_CLOTH)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    want, vert = out["mujoco"]
    assert want == pytest.approx(0.5, abs=0.01)
    assert (arch == "cpu") <= (out["limit"] is None)
    if out["limit"] is None:
        assert not out["warnings"]
        assert out["dist"] == pytest.approx([want, want], abs=1e-5)
        assert out["vertid"] == [vert, vert]
    else:
        assert out["dist"] == [None, None] and out["vertid"] == [-1, -1]
        assert len(out["warnings"]) == 1 and "65535 iterations" in out["warnings"][0]
        assert out["warnings"][0].startswith("ray_flex: ")
