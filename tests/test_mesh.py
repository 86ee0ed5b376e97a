"""Mesh / height-field compilation against MuJoCo 3.4.0 (the oracle).

Every case compiles the same asset twice: with tiphys.compiler.mesh (.hfield) and with
MuJoCo (a one-body model holding one mesh geom), then compares the mjModel
fields: mesh_vert/face/normal/facenormal/texcoord/facetexcoord/pos/quat/graph,
the polygons (mesh_poly*: coplanar faces merged, used by multiccd's face clipping),
body mass/inertia, geom_aabb/rbound/size, hfield_*.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import mujoco
import pytest
from lxml import etree

import tiphys  # noqa: E402
from tiphys.compiler.hfield import compile_hfield  # noqa: E402
from tiphys.compiler.mesh import compile_mesh  # noqa: E402
from tiphys.errors import ModelError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _corpus_dir() -> Path:
    env = os.environ.get("TIPHYS_CORPUS")
    if env:
        return Path(env)
    p = REPO / ".cache" / "corpus"
    if p.exists():
        return p
    return Path("/tmp/corpus")


CORPUS = _corpus_dir()

# MuJoCo caches compiled meshes per file name and its cache ignores some
# attributes (e.g. smoothnormal); switch it off so that every oracle compile
# is a fresh one.
mujoco.mj_setCacheCapacity(mujoco.mj_getCache(), 0)


# ---------------------------------------------------------------------------
# helpers

def _floats(s):
    return [float(x) for x in s.split()] if s is not None else None


def corpus_meshes(xml_path: Path):
    """(name, compile_mesh kwargs) for the <asset><mesh> elements of an MJCF file."""
    root = etree.parse(str(xml_path)).getroot()
    base = xml_path.parent
    meshdir = ""
    for comp in root.iter("compiler"):
        meshdir = comp.get("meshdir") or comp.get("assetdir") or meshdir
    out = []
    for m in root.iter("mesh"):
        if m.getparent().tag != "asset" or m.get("builtin") or m.find("plugin") is not None:
            continue
        kw = {}
        f = m.get("file")
        if f:
            p = base / meshdir / f
            kw["file_name"] = str(p)
            kw["file_bytes"] = p.read_bytes()
        for a in ("vertex", "normal", "texcoord", "scale", "refpos", "refquat"):
            if m.get(a):
                kw[a] = _floats(m.get(a))
        if m.get("face"):
            kw["face"] = [int(x) for x in m.get("face").split()]
        if m.get("inertia"):
            kw["inertia"] = m.get("inertia")
        if m.get("maxhullvert"):
            kw["maxhullvert"] = int(m.get("maxhullvert"))
        if m.get("smoothnormal"):
            kw["smoothnormal"] = m.get("smoothnormal") == "true"
        name = m.get("name") or Path(f).stem
        out.append((name, kw))
    return out


def oracle_xml(kw, contype=1, density=1000.0):
    attrs = []
    if kw.get("file_name"):
        attrs.append(f'file="{kw["file_name"]}"')
    for a in ("vertex", "normal", "texcoord", "face", "scale", "refpos", "refquat"):
        if kw.get(a) is not None:
            attrs.append(f'{a}="{" ".join(repr(x) for x in kw[a])}"')
    if "inertia" in kw:
        attrs.append(f'inertia="{kw["inertia"]}"')
    if "maxhullvert" in kw:
        attrs.append(f'maxhullvert="{kw["maxhullvert"]}"')
    if kw.get("smoothnormal"):
        attrs.append('smoothnormal="true"')
    return (f'<mujoco><asset><mesh name="m" {" ".join(attrs)}/></asset><worldbody><body>'
            f'<freejoint/><geom type="mesh" mesh="m" density="{density}" '
            f'contype="{contype}" conaffinity="{contype}"/></body></worldbody></mujoco>')


def _close(a, b, rtol=1e-6, scale=None):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return
    s = scale if scale is not None else np.maximum(np.abs(b), 1.0)
    err = np.max(np.abs(a - b) / s)
    assert err <= rtol, err


def graph_parts(g):
    g = np.asarray(g)
    nv, nf = int(g[0]), int(g[1])
    return dict(nv=nv, nf=nf, edgeadr=g[2:2 + nv], gid=g[2 + nv:2 + 2 * nv],
                edge=g[2 + 2 * nv:2 + 3 * nv + 3 * nf], face=g[2 + 3 * nv + 3 * nf:])


def check_graph(ours, theirs, exact=False):
    """Graph layout, vertex ids, adjacency sets and faces must match; the order
    inside each vertex's adjacency list may differ (see hull._make_graph)."""
    assert ours.shape == theirs.shape
    if exact:
        np.testing.assert_array_equal(ours, theirs)
        return
    a, b = graph_parts(ours), graph_parts(theirs)
    assert (a["nv"], a["nf"]) == (b["nv"], b["nf"])
    np.testing.assert_array_equal(a["edgeadr"], b["edgeadr"])
    np.testing.assert_array_equal(a["gid"], b["gid"])
    np.testing.assert_array_equal(a["face"], b["face"])
    adr = list(a["edgeadr"]) + [len(a["edge"])]
    for i in range(a["nv"]):
        assert set(a["edge"][adr[i]:adr[i + 1]]) == set(b["edge"][adr[i]:adr[i + 1]])


def check_polygons(c, m, mid=0):
    """Polygons of one mesh against mjModel's mesh_poly* slices: same polygons in the
    same order with the same vertex order, same vertex -> polygon map; normals to
    round-off of the final vertices."""
    pa, pn = m.mesh_polyadr[mid], m.mesh_polynum[mid]
    assert c.npoly == pn
    va, vn = m.mesh_vertadr[mid], m.mesh_vertnum[mid]
    vadr = m.mesh_polyvertadr[pa:pa + pn]
    vnum = m.mesh_polyvertnum[pa:pa + pn]
    np.testing.assert_array_equal(c.polyvertnum, vnum)
    np.testing.assert_array_equal(c.polyvert, np.concatenate(
        [m.mesh_polyvert[a:a + n] for a, n in zip(vadr, vnum)] + [np.zeros(0, int)]))
    np.testing.assert_array_equal(c.polymapnum, m.mesh_polymapnum[va:va + vn])
    madr = m.mesh_polymapadr[va:va + vn]
    np.testing.assert_array_equal(c.polymap, np.concatenate(
        [m.mesh_polymap[a:a + n] for a, n in zip(madr, c.polymapnum)] + [np.zeros(0, int)]))
    _close(c.polynormal, m.mesh_polynormal[pa:pa + pn], rtol=1e-12, scale=1.0)


def compare_mesh(kw, contype=1, density=1000.0, exact_graph=False):
    m = mujoco.MjModel.from_xml_string(oracle_xml(kw, contype, density))
    c = compile_mesh(name="m", needhull=bool(contype), **kw)
    va, vn = m.mesh_vertadr[0], m.mesh_vertnum[0]
    fa, fn = m.mesh_faceadr[0], m.mesh_facenum[0]
    na, nn = m.mesh_normaladr[0], m.mesh_normalnum[0]
    mv = m.mesh_vert[va:va + vn]
    _close(c.vert, mv, scale=max(np.abs(mv).max(), 1e-12))
    np.testing.assert_array_equal(c.face, m.mesh_face[fa:fa + fn])
    _close(c.pos, m.mesh_pos[0], scale=max(np.abs(mv).max(), 1e-12))
    _close(c.quat, m.mesh_quat[0])
    _close(c.normal, m.mesh_normal[na:na + nn], rtol=1e-5)
    np.testing.assert_array_equal(c.facenormal, m.mesh_facenormal[fa:fa + fn])
    ta, tn = m.mesh_texcoordadr[0], m.mesh_texcoordnum[0]
    if ta >= 0:
        _close(c.texcoord, m.mesh_texcoord[ta:ta + tn])
    else:
        assert c.texcoord.shape[0] == 0
    np.testing.assert_array_equal(c.facetexcoord, m.mesh_facetexcoord[fa:fa + fn])
    _close(c.scale, m.mesh_scale[0])
    ga = m.mesh_graphadr[0]
    if ga >= 0:
        ng = 2 + 3 * m.mesh_graph[ga] + 6 * m.mesh_graph[ga + 1]
        check_graph(c.graph, m.mesh_graph[ga:ga + ng], exact=exact_graph)
    else:
        assert c.graph.size == 0
    check_polygons(c, m)
    mass, inertia = c.geom_inertia(density, False)
    _close(mass, m.body_mass[1])
    _close(np.sort(inertia), np.sort(m.body_inertia[1]), scale=max(m.body_inertia[1].max(), 1e-30))
    ext = max(np.abs(m.geom_aabb[0]).max(), 1e-12)
    _close(c.aabb(), m.geom_aabb[0], scale=ext)
    _close(c.rbound(), m.geom_rbound[0])
    _close(c.geom_size(), m.geom_size[0], scale=ext)
    return c, m


def _need(path: Path):
    if not path.exists():
        pytest.skip(f"corpus file {path} not available")
    return path


# ---------------------------------------------------------------------------
# corpus meshes

CORPUS_FILES = [
    "mjwarp/mug/mug.xml",
    "mjwarp/ray.xml",
    "mjwarp/hfield/hfield.xml",
    "mjwarp/collision_sdf/mesh.xml",
    "mjtest/msh.xml",
    "mjtest/model.xml",
]


def _corpus_cases():
    cases = []
    for rel in CORPUS_FILES:
        p = CORPUS / rel
        if not p.exists():
            cases.append(pytest.param(rel, None, id=rel, marks=pytest.mark.skip("no corpus")))
            continue
        for name, kw in corpus_meshes(p):
            cases.append(pytest.param(rel, (name, kw), id=f"{rel}:{name}"))
    return cases


@pytest.mark.parametrize("rel,case", _corpus_cases())
@pytest.mark.parametrize("contype", [1, 0])
def test_corpus_mesh(rel, case, contype):
    name, kw = case
    compare_mesh(kw, contype=contype)


def test_corpus_aloha_pot_meshes():
    """All STL/OBJ meshes of the aloha_pot scene."""
    scene = _need(CORPUS / "mjwarp/aloha_pot/scene.xml")
    meshes = corpus_meshes(scene)
    assert len(meshes) > 50
    for name, kw in meshes:
        compare_mesh(kw, contype=1)


def test_corpus_model_mesh_slices():
    """Our per-mesh output matches the slices of the full corpus models."""
    for rel in ("mjwarp/ray.xml", "mjtest/msh.xml", "mjwarp/mug/mug.xml"):
        p = _need(CORPUS / rel)
        m = mujoco.MjModel.from_xml_path(str(p))
        for i, (name, kw) in enumerate(corpus_meshes(p)):
            mid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_MESH, name)
            # does any geom using this mesh collide?
            gids = np.nonzero(m.geom_dataid == mid)[0]
            gids = [g for g in gids if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
            needhull = any(m.geom_contype[g] or m.geom_conaffinity[g] for g in gids)
            c = compile_mesh(name=name, needhull=needhull, **kw)
            va, vn = m.mesh_vertadr[mid], m.mesh_vertnum[mid]
            fa, fn = m.mesh_faceadr[mid], m.mesh_facenum[mid]
            mv = m.mesh_vert[va:va + vn]
            _close(c.vert, mv, scale=np.abs(mv).max())
            np.testing.assert_array_equal(c.face, m.mesh_face[fa:fa + fn])
            _close(c.pos, m.mesh_pos[mid], scale=np.abs(mv).max())
            _close(c.quat, m.mesh_quat[mid])
            assert (m.mesh_graphadr[mid] >= 0) == (c.graph.size > 0)
            check_polygons(c, m, mid)


def test_model_polygon_fields_match_mujoco():
    """mesh_poly* of whole compiled models (addresses across meshes, sizes), the
    aloha_pot scene's 134 meshes among them."""
    for rel in ("mjwarp/aloha_pot/scene.xml", "mjtest/msh.xml", "mjwarp/mug/mug.xml"):
        m = tiphys.load_model(str(_need(CORPUS / rel)))
        mjm = mujoco.MjModel.from_xml_path(str(CORPUS / rel))
        for size in ("nmeshpoly", "nmeshpolyvert", "nmeshpolymap"):
            assert getattr(m, size) == getattr(mjm, size), (rel, size)
        for name in ("mesh_polynum", "mesh_polyadr", "mesh_polyvertadr", "mesh_polyvertnum",
                     "mesh_polyvert", "mesh_polymapadr", "mesh_polymapnum", "mesh_polymap"):
            np.testing.assert_array_equal(getattr(m.arrays, name), getattr(mjm, name),
                                          err_msg=f"{rel}: {name}")
        np.testing.assert_allclose(m.arrays.mesh_polynormal, mjm.mesh_polynormal, rtol=0,
                                   atol=1e-12)
        assert mjm.nmeshpoly > 0


def _grid_box(n, curv):
    """Two slightly curved n x n grids (top and bottom): hull faces whose normals
    differ by about MuJoCo's coplanarity tolerance, merged into polygons by a
    comparator that is not a strict weak order."""
    g = np.linspace(-1, 1, n)
    x, y = (a.ravel() for a in np.meshgrid(g, g))
    top = np.c_[x, y, 0.5 + curv * (x * x + 0.8 * y * y)]
    bot = np.c_[x, y, -0.5 - curv * (np.cos(x) + y * y)]
    return np.concatenate([top, bot])


def _prism(n):
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.concatenate([np.c_[np.cos(t), np.sin(t), np.full(n, z)] for z in (-.5, .5)])


# an L-shaped (non-convex) prism given with its faces: without a hull (contype 0) the
# polygons come from these faces, the L caps merged from four triangles each
_L = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float)
L_VERT = np.concatenate([np.c_[_L, np.zeros(6)], np.c_[_L, np.ones(6)]])
L_FACE = [f for a, b, c in ((0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5))
          for f in ((a, c, b), (a + 6, b + 6, c + 6))] + \
    [f for i in range(6) for f in ((i, (i + 1) % 6, (i + 1) % 6 + 6), (i, (i + 1) % 6 + 6, i + 6))]

POLYGON_MESHES = {
    "prism64": dict(vertex=_prism(64)),
    "grid_curved_mildly": dict(vertex=_grid_box(21, 0.005)),
    "grid_curved": dict(vertex=_grid_box(21, 0.02)),
    "grid_curved_rotated": dict(vertex=_grid_box(15, 0.03), refquat=[0.3, 0.2, -0.5, 0.7]),
    "sphere400": dict(vertex=(lambda u: u / np.linalg.norm(u, axis=1)[:, None])(
        np.random.default_rng(0).normal(size=(400, 3)))),
    "flat_cloud": dict(vertex=np.concatenate([np.random.default_rng(1).normal(
        size=(300, 3)) * [1, 1, 2e-3], [[0, 0, 1], [0, 0, -1]]])),
    "l_prism_faces": dict(vertex=L_VERT, face=[int(i) for f in L_FACE for i in f]),
}


@pytest.mark.parametrize("name", list(POLYGON_MESHES))
def test_polygons_of_hard_meshes_match_mujoco(name):
    """Many-sided polygons, faces merged near the coplanarity tolerance, scaled and
    rotated meshes, polygons from given (non-convex) faces."""
    kw = dict(POLYGON_MESHES[name])
    kw["vertex"] = [float(x) for x in np.asarray(kw["vertex"], np.float32).ravel()]
    for contype in (1, 0):
        c, m = compare_mesh(kw, contype=contype)
        assert c.npoly > 0


def test_tetrahedron_graph_exact():
    p = _need(CORPUS / "mjwarp/ray.xml")
    name, kw = corpus_meshes(p)[0]
    assert name == "tetrahedron"
    compare_mesh(kw, exact_graph=True)


# ---------------------------------------------------------------------------
# inline meshes, inertia modes, transforms

CUBE = [0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1.0]
CUBE_FACES = [0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
              2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5]
# an irregular (non-symmetric) polyhedron: hull of a few points
BLOB = [0.1, 0.0, 0.0, 1.3, 0.2, -0.1, 0.2, 0.9, 0.1, 0.0, 0.1, 1.7, 1.1, 1.0, 0.9,
        0.6, -0.4, 0.8, -0.3, 0.5, 0.6, 0.7, 0.6, -0.5, 0.4, 0.4, 0.4]

INLINE = {
    "cube_hull": dict(vertex=CUBE),
    "cube_faces": dict(vertex=CUBE, face=CUBE_FACES),
    "blob": dict(vertex=BLOB),
    "blob_tex": dict(vertex=BLOB, texcoord=[0.1 * i for i in range(18)]),
    "cube_normals": dict(vertex=CUBE, face=CUBE_FACES,
                         normal=[float(x) for x in np.sign(np.array(CUBE) - 0.5)]),
}
VARIANTS = {
    "legacy": dict(),
    "convex": dict(inertia="convex"),
    "exact": dict(inertia="exact"),
    "shell": dict(inertia="shell"),
    "scaled": dict(scale=[0.5, 2.0, 3.0]),
    "negscale": dict(scale=[-0.5, 1.0, 2.0]),
    "refframe": dict(refpos=[0.1, -0.2, 0.3], refquat=[0.3, 0.2, -0.5, 0.7], scale=[1, 2, 3]),
    "smooth": dict(smoothnormal=True),
    "maxhull": dict(maxhullvert=5),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("mesh", list(INLINE))
def test_inline_mesh(mesh, variant):
    kw = dict(INLINE[mesh], **VARIANTS[variant])
    compare_mesh(kw, contype=1)
    compare_mesh(kw, contype=0)


@pytest.mark.parametrize("variant", ["convex", "exact", "shell", "negscale", "refframe", "smooth"])
def test_corpus_mesh_variants(variant):
    for rel in ("mjwarp/mug/mug.xml", "mjtest/msh.xml", "mjwarp/ray.xml",
                "mjwarp/collision_sdf/mesh.xml"):
        p = CORPUS / rel
        if not p.exists():
            pytest.skip("no corpus")
        for name, kw in corpus_meshes(p):
            kw = dict(kw, **VARIANTS[variant])
            if "scale" in kw and "scale" in VARIANTS[variant] and rel.endswith("ray.xml"):
                kw["scale"] = [0.04 * s for s in VARIANTS[variant]["scale"]]
            compare_mesh(kw, contype=1)


def test_geom_inertia_density_and_shell_flag():
    c = compile_mesh(name="c", vertex=CUBE, face=CUBE_FACES)
    mass, inertia = c.geom_inertia(2.0, False)
    assert mass == pytest.approx(2.0)
    np.testing.assert_allclose(inertia, [2.0 / 6] * 3, rtol=1e-12)
    with pytest.raises(ModelError):
        c.geom_inertia(1.0, True)
    assert c.volume == pytest.approx(1.0)
    np.testing.assert_allclose(c.pos, [0.5, 0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(c.aabb(), [0, 0, 0, 0.5, 0.5, 0.5], atol=1e-12)
    assert c.rbound() == pytest.approx(np.sqrt(0.75))


# ---------------------------------------------------------------------------
# file formats written by the tests

def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return dict(file_name=str(p), file_bytes=data)


def _stl(tris):
    tris = np.asarray(tris, dtype=np.float32).reshape(-1, 3, 3)
    out = bytearray(b"\0" * 80) + struct.pack("<i", len(tris))
    for t in tris:
        out += struct.pack("<3f", 0, 0, 0) + t.astype("<f4").tobytes() + b"\0\0"
    return bytes(out)


def test_stl_dedup_and_negative_zero(tmp_path):
    v = np.array(CUBE).reshape(-1, 3) - 0.5
    v[v == 0] = -0.0
    tris = v[np.array(CUBE_FACES).reshape(-1, 3)]
    tris[0, 0, :] = [-0.5, -0.5, -0.5]
    kw = _write(tmp_path, "cube.stl", _stl(tris))
    c, m = compare_mesh(kw)
    assert c.nvert == 8
    compare_mesh(dict(kw, scale=[1, -1, 1]))


OBJ_TEXT = """# test
mtllib nothing.mtl
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0 0 1
v 1 0 1
v 1 1 1
v 0 1 1
v 0.5 0.5 1.4
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vn 0 0 -1
vn 0 0 1
vn 1 0 0
vn -1 0 0
vn 0 1 0
vn 0 -1 0
o body
usemtl none
f 1/1/1 4/2/1 3/3/1 2/4/1
f 1/1/6 2/2/6 6/3/6 5/4/6
f 2/1/3 3/2/3 7/3/3 6/4/3
f -6/1/5 -5/2/5 -1/3/5 -2/4/5
f 4/1/4 1/2/4 5/3/4 8/4/4
f 5/1/2 6/2/2 7/3/2 9/4/2 8/1/2
o other
f 1 2 3
"""


def test_obj_polygons_normals_texcoords(tmp_path):
    kw = _write(tmp_path, "box.obj", OBJ_TEXT.encode())
    c, m = compare_mesh(kw)
    assert c.nface == 2 * 5 + 3
    compare_mesh(dict(kw, scale=[-1, 1, 1]))
    compare_mesh(dict(kw, inertia="convex"), contype=0)


def test_obj_groups_only_first_shape(tmp_path):
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 5 5 5\ng a\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n" \
           "g b\nf 2 3 5\n"
    kw = _write(tmp_path, "tet.obj", text.encode())
    c, m = compare_mesh(kw)
    assert c.nface == 4 and c.nvert == 5


def _msh(vert, normal=None, tex=None, face=None):
    vert = np.asarray(vert, np.float32).ravel()
    nv = vert.size // 3
    normal = np.asarray(normal if normal is not None else [], np.float32).ravel()
    tex = np.asarray(tex if tex is not None else [], np.float32).ravel()
    face = np.asarray(face if face is not None else [], np.int32).ravel()
    hdr = np.array([nv, normal.size // 3, tex.size // 2, face.size // 3], np.int32)
    return hdr.tobytes() + vert.tobytes() + normal.tobytes() + tex.tobytes() + face.tobytes()


def test_msh_file(tmp_path):
    nrm = (np.array(CUBE) - 0.5).tolist()
    tex = [0.05 * i for i in range(16)]
    kw = _write(tmp_path, "cube.msh", _msh(CUBE, nrm, tex, CUBE_FACES))
    compare_mesh(kw)
    compare_mesh(dict(kw, scale=[1, 1, -2]))
    kw2 = _write(tmp_path, "cube2.msh", _msh(CUBE, face=CUBE_FACES))
    compare_mesh(kw2)


# ---------------------------------------------------------------------------
# errors: we raise ModelError exactly when MuJoCo refuses the model

BAD = {
    "empty": dict(vertex=[]),
    "three_vertices": dict(vertex=[0, 0, 0, 1, 0, 0, 0, 1, 0]),
    "vertex_not_multiple_of_3": dict(vertex=CUBE[:-1]),
    "face_not_multiple_of_3": dict(vertex=CUBE, face=CUBE_FACES[:-1]),
    "face_index_out_of_range": dict(vertex=CUBE, face=CUBE_FACES[:-1] + [8]),
    "negative_face_index": dict(vertex=CUBE, face=CUBE_FACES[:-1] + [-1]),
    "coplanar": dict(vertex=[0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0.5, 0.5, 0]),
    "flat_with_faces": dict(vertex=[0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0], face=[0, 1, 2, 1, 3, 2]),
    "inconsistent_exact": dict(vertex=CUBE, face=CUBE_FACES[:3] + [0, 1, 2] + CUBE_FACES[6:],
                               inertia="exact"),
    "inverted_exact": dict(vertex=CUBE, face=[CUBE_FACES[i + k] for i in range(0, 36, 3)
                                              for k in (0, 2, 1)], inertia="exact"),
    "texcoord_size": dict(vertex=CUBE, face=CUBE_FACES, texcoord=[0.0] * 6),
    "normal_size": dict(vertex=CUBE, face=CUBE_FACES, normal=[0.0, 0.0]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_inline_mesh(case):
    kw = BAD[case]
    with pytest.raises(Exception):
        mujoco.MjModel.from_xml_string(oracle_xml(kw, contype=1))
    with pytest.raises(ModelError):
        compile_mesh(name="bad", **kw)


@pytest.mark.parametrize("name,data", [
    ("empty.stl", b""),
    ("ascii.stl", b"solid x\nfacet normal 0 0 1\nendsolid x\n" + b" " * 100),
    ("short.stl", b"\0" * 50),
    ("bad.msh", np.array([3, 0, 0, 0], np.int32).tobytes() + b"\0" * 36),
    ("trunc.msh", _msh(CUBE, face=CUBE_FACES)[:-4]),
    ("zero.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 0 1 2\n"),
    ("few.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"),
    ("range.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 7\n"),
    ("mesh.xyz", b"abc"),
])
def test_bad_mesh_file(tmp_path, name, data):
    kw = _write(tmp_path, name, data)
    with pytest.raises(Exception):
        mujoco.MjModel.from_xml_string(oracle_xml(kw, contype=1))
    with pytest.raises(ModelError):
        compile_mesh(name="bad", **kw)


def test_missing_file_bytes():
    with pytest.raises(ModelError):
        compile_mesh(name="x", file_name="missing.stl", file_bytes=None)


# ---------------------------------------------------------------------------
# height fields

def compare_hfield(attrs, **kw):
    xml = (f'<mujoco><asset><hfield name="h" {attrs}/></asset><worldbody>'
           f'<geom type="hfield" hfield="h"/></worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    c = compile_hfield(name="h", **kw)
    assert (c.nrow, c.ncol) == (m.hfield_nrow[0], m.hfield_ncol[0])
    np.testing.assert_array_equal(c.data, m.hfield_data)
    np.testing.assert_allclose(c.size, m.hfield_size[0])
    np.testing.assert_allclose(c.aabb(), m.geom_aabb[0], rtol=1e-12)
    assert c.rbound() == pytest.approx(m.geom_rbound[0], rel=1e-12)
    np.testing.assert_allclose(c.geom_size(), m.geom_size[0], rtol=1e-12)


def test_corpus_hfields():
    for rel in ("mjwarp/ray.xml", "mjtest/model.xml", "mjwarp/hfield/hfield.xml"):
        p = _need(CORPUS / rel)
        m = mujoco.MjModel.from_xml_path(str(p))
        root = etree.parse(str(p)).getroot()
        for h in root.iter("hfield"):
            if h.get("file"):
                continue
            hid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_HFIELD, h.get("name"))
            c = compile_hfield(name=h.get("name"), nrow=int(h.get("nrow", 0)),
                               ncol=int(h.get("ncol", 0)), size=_floats(h.get("size")),
                               elevation=_floats(h.get("elevation")))
            adr = m.hfield_adr[hid]
            assert (c.nrow, c.ncol) == (m.hfield_nrow[hid], m.hfield_ncol[hid])
            np.testing.assert_array_equal(c.data, m.hfield_data[adr:adr + c.nrow * c.ncol])
            np.testing.assert_allclose(c.size, m.hfield_size[hid])


def test_hfield_inline():
    compare_hfield('nrow="3" ncol="2" elevation="1 2 3 3 2 1" size=".6 .4 .1 .1"',
                   nrow=3, ncol=2, elevation=[1, 2, 3, 3, 2, 1], size=[.6, .4, .1, .1])
    compare_hfield('nrow="3" ncol="4" size=".6 .4 .1 .2"', nrow=3, ncol=4, size=[.6, .4, .1, .2])
    compare_hfield('nrow="2" ncol="2" elevation="5 5 5 5" size="1 1 1 1"',
                   nrow=2, ncol=2, elevation=[5, 5, 5, 5], size=[1, 1, 1, 1])


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA", "P", "I;16", "1"])
def test_hfield_png(tmp_path, mode):
    from PIL import Image
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (5, 7, 3)).astype(np.uint8)
    if mode == "I;16":
        img = Image.frombytes("I;16", (7, 5), rng.integers(0, 65536, (5, 7)).astype("<u2").tobytes())
    elif mode == "RGBA":
        img = Image.fromarray(np.dstack([a, a[..., :1]]), "RGBA")
    elif mode == "RGB":
        img = Image.fromarray(a, "RGB")
    elif mode == "P":
        img = Image.fromarray(a, "RGB").convert("P")
    else:
        img = Image.fromarray(a[..., 0]).convert(mode)
    p = tmp_path / "h.png"
    img.save(p)
    compare_hfield(f'file="{p}" size="1 2 .3 .1"', file_name=str(p), file_bytes=p.read_bytes(),
                   size=[1, 2, .3, .1])


def test_hfield_custom_binary(tmp_path):
    rng = np.random.default_rng(2)
    arr = rng.normal(size=(4, 6)).astype(np.float32)
    p = tmp_path / "h.bin"
    p.write_bytes(np.array([4, 6], np.int32).tobytes() + arr.tobytes())
    compare_hfield(f'file="{p}" size="1 2 .3 .1"', file_name=str(p), file_bytes=p.read_bytes(),
                   size=[1, 2, .3, .1])


@pytest.mark.parametrize("attrs,kw", [
    ('nrow="2" ncol="2" elevation="1 2 3" size="1 1 1 1"',
     dict(nrow=2, ncol=2, elevation=[1, 2, 3], size=[1, 1, 1, 1])),
    ('nrow="2" ncol="2" size="1 0 1 1"', dict(nrow=2, ncol=2, size=[1, 0, 1, 1])),
    ('size="1 1 1 1"', dict(size=[1, 1, 1, 1])),
])
def test_hfield_errors(attrs, kw):
    xml = f'<mujoco><asset><hfield name="h" {attrs}/></asset></mujoco>'
    with pytest.raises(Exception):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ModelError):
        compile_hfield(name="h", **kw)


def test_hfield_bad_files(tmp_path):
    p = tmp_path / "h.bin"
    p.write_bytes(np.array([4, 6], np.int32).tobytes() + b"\0" * 10)
    with pytest.raises(ModelError):
        compile_hfield(name="h", file_name=str(p), file_bytes=p.read_bytes(), size=[1, 1, 1, 1])
    q = tmp_path / "h.png"
    q.write_bytes(b"not a png")
    with pytest.raises(ModelError):
        compile_hfield(name="h", file_name=str(q), file_bytes=q.read_bytes(), size=[1, 1, 1, 1])


# --- array helpers of the mesh compiler, against the plain numpy they replace -------

def test_stable_argsort_is_numpys_stable_argsort():
    from tiphys.compiler.mesh_math import _stable_argsort
    for seed in range(200):
        rng = np.random.default_rng(seed)
        span = 10 ** int(rng.integers(1, 18))  # wide spans take numpy's own stable sort
        a = rng.integers(-span, span, int(rng.integers(0, 3000)))
        for arr in (a, a.astype(np.int32) if span < 2**31 else a):
            np.testing.assert_array_equal(_stable_argsort(arr), np.argsort(arr, kind="stable"))


def test_equal_rows_groups_as_unique_on_bytes_even_on_a_hash_collision():
    from tiphys.compiler.mesh_io import _equal_rows

    def groups(first, inverse):  # the partition, as sorted first rows per row
        return np.asarray(first)[np.asarray(inverse)]

    for seed in range(100):
        rng = np.random.default_rng(seed)
        base = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, 1e-45], np.float32),
                          (int(rng.integers(1, 30)), 3))
        key = np.ascontiguousarray(base[rng.integers(0, len(base), int(rng.integers(1, 400)))])
        _, first, inverse = np.unique(key.view(np.dtype((np.void, 12))).ravel(),
                                      return_index=True, return_inverse=True)
        np.testing.assert_array_equal(groups(*_equal_rows(key)), groups(first, inverse))
    # rows 0 and 1 differ but hash alike: the bytes are sorted instead
    key = np.zeros((3, 3), np.float32)
    words = key.view(np.uint32)
    mult = 0x9E3779B97F4A7C15
    words[1] = (mult >> 32, mult & 0xFFFFFFFF, 1)
    np.testing.assert_array_equal(groups(*_equal_rows(key)), [0, 1, 0])


@pytest.mark.parametrize("pure", ["0", "1"])
def test_ordered_accumulate_adds_in_order_in_double_rounding_to_single(pure, monkeypatch):
    """In C (_meshsum, where built) and in numpy (TIPHYS_PURE_PYTHON_MESH=1)."""
    from tiphys.compiler.mesh import _ordered_accumulate
    monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", pure)
    for seed in range(50):
        rng = np.random.default_rng(seed)
        nrow, n = int(rng.integers(1, 50)), int(rng.integers(0, 400))
        idx = rng.integers(0, nrow, n)
        vals = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-8, 8, (n, 1))
        want = np.zeros((nrow, 3), np.float32)
        for i, val in zip(idx, vals):
            want[i] = (want[i].astype(np.float64) + val).astype(np.float32)
        got = _ordered_accumulate(np.zeros((nrow, 3), np.float32), idx, vals)
        assert got.tobytes() == want.tobytes()
        flat = _ordered_accumulate(np.zeros(nrow, np.float32), idx, vals[:, 0])
        assert flat.tobytes() == want[:, 0].tobytes()


def test_meshsum_is_built_where_a_c_compiler_is_found():
    from test_polytree import _c_compiler

    from tiphys.compiler import mesh as mesh_module
    cc = _c_compiler()
    if cc is None:
        pytest.skip("no C compiler with Python headers: the numpy sums are expected")
    assert mesh_module.MESHSUM_ERROR is None, (
        f"C compiler {cc} found but tiphys.compiler._meshsum does not import "
        f"({mesh_module.MESHSUM_ERROR}); rebuild with `pip install -e .`")
    with pytest.raises(IndexError):
        mesh_module._c_accumulate(np.zeros((3, 1), np.float32), np.array([3]), np.zeros((1, 1)))
    with pytest.raises(ValueError):
        mesh_module._c_accumulate(np.zeros((3, 1)), np.array([0]), np.zeros((1, 1)))


def test_hull_edges_are_mujocos_loop_over_facets():
    """vert_edgeadr / edge_localid as MuJoCo's MakeGraph builds them: each hull vertex's
    neighbours in the order met through its facets (facet order, corner order)."""
    from tiphys.compiler.hull import _hull_edges
    for seed in range(50):
        rng = np.random.default_rng(seed)
        nvert = int(rng.integers(3, 40))
        simp = np.array([rng.choice(nvert, 3, replace=False)
                         for _ in range(int(rng.integers(1, 80)))])
        order = rng.permutation(np.unique(simp))
        local = {int(g): k for k, g in enumerate(order)}
        adr, edges = [], []
        for g in order.tolist():
            adr.append(len(edges))
            seen = set()
            for face in simp.tolist():
                if g in face:
                    for g1 in face:
                        if g1 != g and g1 not in seen:
                            seen.add(g1)
                            edges.append(local[g1])
            edges.append(-1)
        got_adr, got_edges = _hull_edges(simp, order)
        np.testing.assert_array_equal(got_adr, adr)
        np.testing.assert_array_equal(got_edges, edges)


def _random_mesh(rng):
    """Vertices (float32 values, some repeated, some -0) and faces (degenerate ones
    included) of a random mesh."""
    nv = int(rng.integers(4, 60))
    v = (rng.normal(size=(nv, 3)) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
    v[rng.random((nv, 3)) < 0.1] = 0.0
    v[rng.random((nv, 3)) < 0.1] = -0.0
    rep = rng.integers(0, nv, nv // 3)
    v[rng.integers(0, nv, nv // 3)] = v[rep]  # equal rows
    f = rng.integers(0, nv, (int(rng.integers(1, 120)), 3))
    deg = rng.random(len(f)) < 0.1
    f[deg, 2] = f[deg, 1]  # degenerate faces
    return v, f


@pytest.mark.parametrize("seed", range(40))
def test_c_mesh_helpers_give_the_numpy_bits(seed, monkeypatch):
    """_meshsum's normals, dedup, triangles, inertia_products, hull_edges and
    unit_normals give the numpy references' results bit for bit
    (random meshes with repeated and -0 vertices and degenerate faces, at scales from
    1e-3 to 1e2), on corpus STL files too where the corpus is."""
    from tiphys.compiler import mesh as mesh_module
    from tiphys.compiler import mesh_io
    if mesh_module._c_normals is None or mesh_io._c_dedup is None:
        pytest.skip(f"_meshsum not built ({mesh_module.MESHSUM_ERROR}): numpy only")
    rng = np.random.default_rng(seed)
    cases = [_random_mesh(rng) for _ in range(5)]
    stls = sorted(CORPUS.glob("loco/unitree_g1/meshes/*.STL"))
    for path in stls[seed::40][:1]:
        data = path.read_bytes()
        n = int(np.frombuffer(data, "<i4", 1, 80)[0])
        tri = np.frombuffer(data, np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)),
                                            ("a", "<u2")]), n, 84)["v"].reshape(-1, 3)
        cases.append((np.ascontiguousarray(tri), np.arange(3 * n).reshape(-1, 3)))
    for v, f in cases:
        face = f.ravel().astype(np.int64)
        got = mesh_io._dedup_vertices(v.ravel(), face)
        monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", "1")
        want = mesh_io._dedup_vertices(v.ravel(), face)
        monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", "0")
        assert got[0].tobytes() == want[0].tobytes() and got[0].dtype == want[0].dtype
        np.testing.assert_array_equal(got[1], want[1])
        vert = v.astype(np.float64)
        for smooth in (False, True):
            c = mesh_module._make_normals(vert, f, smooth)
            ref = mesh_module._make_normals_numpy(vert, f, smooth)
            assert c.dtype == ref.dtype == np.float32 and c.tobytes() == ref.tobytes()
        wc = rng.normal(size=len(f)) * 10.0 ** rng.integers(-6, 3)
        wc[rng.random(len(f)) < 0.1] = -0.0
        got = [mesh_module._face_triangles(vert, f, want) for want in (True, False)]
        got.append(mesh_module._inertia_products(vert, f, wc))
        monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", "1")
        want = [mesh_module._face_triangles(vert, f, want) for want in (True, False)]
        want.append(mesh_module._inertia_products(vert, f, wc))
        monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", "0")
        for g3, w3 in zip(got[:2], want[:2]):
            for a, b in zip(g3, w3):
                assert a.shape == b.shape and a.tobytes() == b.tobytes()
        assert np.array(got[2]).tobytes() == np.array(want[2]).tobytes()
        from tiphys.compiler import polygons
        with np.errstate(divide="ignore", invalid="ignore"):  # (degenerate faces)
            unit = polygons._makenormals(vert, f)
            assert unit.tobytes() == polygons._makenormals_numpy(vert, f).tobytes()
        if len(v) >= 8:  # the hull graph's edge lists (hull_edges)
            from tiphys.compiler.hull import _make_graph
            graph = _make_graph(vert, -1)
            monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", "1")
            ref = _make_graph(vert, -1)
            monkeypatch.setenv("TIPHYS_PURE_PYTHON_MESH", "0")
            assert graph.dtype == ref.dtype and np.array_equal(graph, ref)
    with pytest.raises(IndexError):
        mesh_module._c_normals(np.zeros((3, 3)), np.array([[0, 1, 3]]), False, 1e-14, 1e-15,
                               np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError):
        mesh_io._c_dedup(np.zeros((3, 3)), np.zeros(3, np.int64), np.zeros(3, np.int64))


MESH_TWICE = """<mujoco>
  <asset><mesh name="m" file="{file}"/></asset>
  <worldbody><body><freejoint/>
    <geom type="mesh" mesh="m" contype="0" conaffinity="0"/>
    <geom type="mesh" mesh="m" pos="0.1 0 0"/>
  </body></worldbody>
</mujoco>"""


@pytest.mark.parametrize("order", ["visual first", "collision first", "visual only"])
def test_mesh_used_by_visual_and_colliding_geoms_is_compiled_once(tmp_path, order,
                                                                   monkeypatch):
    """A mesh that a visual geom asks for and a colliding one next is compiled once
    (compile_mesh_geometry, then finish_mesh adds the hull and polygons), with the
    hull graph and polygons MuJoCo makes; in any geom order, cold and from the
    process's mesh cache."""
    from tiphys.compiler import mesh as mesh_module
    from tiphys.compiler.compile import compile_spec
    v = np.array(CUBE).reshape(-1, 3) - 0.5
    _write(tmp_path, "box.stl", _stl(v[np.array(CUBE_FACES).reshape(-1, 3)]))
    geoms = MESH_TWICE.format(file="box.stl")
    if order == "collision first":
        lines = geoms.splitlines()
        lines[3], lines[4] = lines[4], lines[3]
        geoms = "\n".join(lines)
    elif order == "visual only":
        geoms = "\n".join(line for line in geoms.splitlines() if 'pos="0.1' not in line)
    xml = tmp_path / "model.xml"
    xml.write_text(geoms)
    calls = []
    real = mesh_module._compile_mesh
    monkeypatch.setattr(mesh_module, "_compile_mesh",
                        lambda **kw: calls.append(kw["needhull"]) or real(**kw))
    m = mujoco.MjModel.from_xml_path(str(xml))
    mesh_module.clear_mesh_cache()
    for warm in (False, True):
        calls.clear()
        a = compile_spec(tiphys.load_spec(str(xml)))
        assert len(calls) == (0 if warm else 1)
        for f in ("mesh_vert", "mesh_face", "mesh_normal", "mesh_graph", "mesh_graphadr",
                  "mesh_polynum", "mesh_polyvertnum", "mesh_polyvert", "mesh_polymapnum",
                  "mesh_polymap", "mesh_polynormal", "geom_size", "geom_pos", "body_mass"):
            np.testing.assert_allclose(np.asarray(getattr(a, f), np.float64).ravel(),
                                       np.asarray(getattr(m, f), np.float64).ravel(),
                                       rtol=1e-6, atol=1e-6, err_msg=f"{f} ({order})")
        assert (len(a.mesh_graph) > 0) == (order != "visual only")
