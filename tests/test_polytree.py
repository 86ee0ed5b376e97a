"""The C polygons (tiphys/compiler/_polytree.c: the tree walk, then each polygon's
edges, islands and vertex loops) against the Python code they replace (polygons.py,
the reference, itself checked against MuJoCo in test_compile_speed.py and
test_mesh.py): the same face outcomes and tree order, and the same mesh_poly* arrays,
on synthetic meshes, on random faces over few vertices (repeated edges, islands that
merge, loops that never close), on normals with NaN, inf and zero components, and on
every mesh of a few corpus models. Host-side only.
"""
from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from oracle import corpus_dir
from test_compile_speed import HARD
from test_mesh import corpus_meshes

from tiphys.compiler import mesh, polygons
from tiphys.compiler.polygons import FACE_TOL, MINVAL, make_polygons

FIELDS = ("polyvertnum", "polyvert", "polymapnum", "polymap")
CORPUS_MODELS = ("dmc/dog.xml", "mjwarp/aloha_pot/scene.xml", "mjwarp/mug/mug.xml",
                 "mjwarp/collision_sdf/nutbolt.xml", "mjtest/msh.xml",
                 # where fetched (tools/fetch_corpus.py --menagerie): robots with many
                 # fine meshes, the case the C walk is for
                 "menagerie/unitree_g1/g1.xml", "menagerie/shadow_hand/right_hand.xml")


def _c_compiler():
    """The C compiler setup.py would use, when it is on this machine with Python's
    headers; else None."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "").split()
    include = sysconfig.get_paths().get("include") or ""
    if cc and shutil.which(cc[0]) and os.path.isfile(os.path.join(include, "Python.h")):
        return cc[0]
    return None


needs_c = pytest.mark.skipif(
    polygons.POLYTREE_ERROR is not None,
    reason=f"tiphys.compiler._polytree is not built ({polygons.POLYTREE_ERROR}); "
           f"C compiler with Python headers: {_c_compiler() or 'none found'}")


def test_c_walk_is_built_where_a_c_compiler_is_found():
    """`pip install -e .` (make venv) builds the extension wherever it can: a missing
    module next to a working compiler is a broken build, not a fallback."""
    cc = _c_compiler()
    if cc is None:
        pytest.skip("no C compiler with Python headers: the Python walk is expected")
    assert polygons.POLYTREE_ERROR is None, (
        f"C compiler {cc} found but tiphys.compiler._polytree does not import "
        f"({polygons.POLYTREE_ERROR}); rebuild with `pip install -e .`")


def test_pure_python_switch(monkeypatch):
    monkeypatch.setenv(polygons.PURE_PYTHON_ENV, "1")
    assert not polygons.c_walk_enabled()
    monkeypatch.setenv(polygons.PURE_PYTHON_ENV, "0")
    assert polygons.c_walk_enabled() == (polygons.POLYTREE_ERROR is None)


def _python_walk(normals):
    """Face outcomes (owner: own index for a new polygon, the polygon's first face
    when joined, -1 when dropped) and tree order, from the Python tree."""
    tree, first, owner = polygons._PolygonSet(), {}, []
    for faceid, normal in enumerate(np.asarray(normals, np.float64).tolist()):
        poly = tree.add(normal, [0, 1, 2])
        if poly is None:
            owner.append(-1)
        else:
            owner.append(first.setdefault(id(poly), faceid))
    return np.array(owner, np.int64), np.array([first[id(p)] for p in tree], np.int64)


def _c_walk(normals):
    owner, order = polygons._c_walk(np.ascontiguousarray(normals, np.float64),
                                    FACE_TOL, MINVAL)
    return np.frombuffer(owner, np.int64), np.frombuffer(order, np.int64)


def _assert_same_polygons(vert, faces, monkeypatch):
    monkeypatch.setenv(polygons.PURE_PYTHON_ENV, "1")
    ref = make_polygons(vert, faces)
    monkeypatch.delenv(polygons.PURE_PYTHON_ENV)
    assert polygons.c_walk_enabled()
    got = make_polygons(vert, faces)
    for field, a, b in zip(FIELDS, ref, got):
        assert a.dtype == b.dtype, field
        np.testing.assert_array_equal(a, b, err_msg=field)
    return ref


def _special_normals(seed):
    """Clusters of normals near a few directions (equivalent, near the tolerance, and
    apart), with NaN, inf, zero and tiny components dropped in."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 500))
    base = rng.normal(size=(int(rng.integers(1, 12)), 3))
    base /= np.linalg.norm(base, axis=1)[:, None]
    spread = rng.choice([0.0, 1e-9, 1e-6, 1.6e-3, 1e-2])
    normals = base[rng.integers(0, len(base), n)] + spread * rng.normal(size=(n, 3))
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-300, MINVAL])
    for _ in range(int(rng.integers(0, n // 4 + 2))):
        normals[rng.integers(0, n), rng.integers(0, 3)] = rng.choice(special)
    return normals


@needs_c
@pytest.mark.parametrize("seed", range(40))
def test_c_walk_matches_python_walk_on_nan_inf_and_clustered_normals(seed):
    owner, order = _python_walk(_special_normals(seed))
    c_owner, c_order = _c_walk(_special_normals(seed))
    np.testing.assert_array_equal(c_owner, owner)
    np.testing.assert_array_equal(c_order, order)


def test_special_normals_give_new_joined_and_dropped_faces():
    owner = np.concatenate([_python_walk(_special_normals(seed))[0] for seed in range(40)])
    starts = np.concatenate([np.arange(len(_special_normals(seed))) for seed in range(40)])
    assert (owner == -1).sum() > 100 and (owner == starts).sum() > 100
    assert ((owner >= 0) & (owner != starts)).sum() > 1000


@needs_c
def test_c_walk_rejects_what_is_not_n_by_3_float64():
    with pytest.raises(ValueError):
        polygons._c_walk(np.zeros((4, 2)), FACE_TOL, MINVAL)
    with pytest.raises(ValueError):
        polygons._c_walk(np.zeros((4, 3), np.float32), FACE_TOL, MINVAL)
    with pytest.raises((ValueError, BufferError)):
        polygons._c_walk(np.zeros((3, 4))[:, :3], FACE_TOL, MINVAL)
    owner, order = _c_walk(np.zeros((0, 3)))
    assert owner.size == 0 and order.size == 0


def _c_loops(normals, faces):
    polyvertnum, polyvert = polygons._c_polygons(
        np.ascontiguousarray(normals, np.float64), np.ascontiguousarray(faces, np.int64),
        FACE_TOL, MINVAL)
    return np.frombuffer(polyvertnum, np.int32), np.frombuffer(polyvert, np.int32)


def _tangled_faces(seed):
    """Faces over a few vertices (so edges repeat, in both directions, and faces
    attach in every order), or a shuffled grid with holes, flipped and repeated faces;
    normals on one to three planes."""
    rng = np.random.default_rng(seed)
    if seed % 2:
        nvert = int(rng.integers(1, 30))
        faces = rng.integers(0, nvert, (int(rng.integers(0, 200)), 3))
    else:
        m = int(rng.integers(2, 12))
        idx = np.arange((m + 1) ** 2).reshape(m + 1, m + 1)
        a, b, c, d = (idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(),
                      idx[1:, :-1].ravel())
        faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
        faces = faces[rng.random(len(faces)) > rng.choice([0.0, 0.1, 0.3])]
        flip = rng.random(len(faces)) < rng.choice([0.0, 0.05])
        faces[flip] = faces[flip][:, ::-1]
        faces = np.concatenate([faces, faces[rng.integers(0, len(faces), 3)]])
        faces = faces[rng.permutation(len(faces))]
    normals = np.eye(3)[rng.integers(0, int(rng.integers(1, 4)), len(faces))]
    return normals, faces


@needs_c
@pytest.mark.parametrize("seed", range(300))
def test_c_polygons_match_python_loops_of_tangled_faces(seed):
    normals, faces = _tangled_faces(seed)
    ref = polygons._loop_arrays(polygons._polygons_python(normals, faces))
    for field, a, b in zip(FIELDS, ref, _c_loops(normals, faces)):
        assert a.dtype == b.dtype, field
        np.testing.assert_array_equal(a, b, err_msg=field)


def test_tangled_faces_give_long_loops_islands_and_unclosed_walks():
    """The cases above reach what they are for: loops of more than 3 vertices, and
    polygons whose loops are fewer than their islands (walks that never close)."""
    long_loops = short = 0
    for seed in range(300):
        normals, faces = _tangled_faces(seed)
        long_loops += sum(len(loop) > 3 for loop in
                          polygons._polygons_python(normals, faces))
        for face in faces.tolist()[:1]:
            poly = polygons._Polygon(None, face)
            for other in faces.tolist()[1:]:
                poly.insert_face(*other)
            short += len(poly.paths()) < poly.nisland
    assert long_loops > 1000 and short > 10


@needs_c
def test_c_polygons_reject_what_is_not_n_by_3():
    normals, faces = np.zeros((4, 3)), np.zeros((4, 3), np.int64)
    with pytest.raises(ValueError):
        polygons._c_polygons(normals, faces.astype(np.int32), FACE_TOL, MINVAL)
    with pytest.raises(ValueError):
        polygons._c_polygons(normals, faces[:3], FACE_TOL, MINVAL)
    with pytest.raises(ValueError):
        polygons._c_polygons(normals[:, :2].copy(), faces, FACE_TOL, MINVAL)
    with pytest.raises(OverflowError):
        polygons._c_polygons(normals[:1], np.array([[0, 1, 2**31]]), FACE_TOL, MINVAL)
    polyvertnum, polyvert = _c_loops(np.zeros((0, 3)), np.zeros((0, 3), np.int64))
    assert polyvertnum.size == 0 and polyvert.size == 0


@needs_c
@pytest.mark.parametrize("name", list(HARD))
def test_c_walk_gives_the_python_polygons_of_shuffled_flat_faces(name, monkeypatch):
    vert, face = HARD[name]
    vert = np.asarray(vert, np.float32).astype(np.float64)  # as compile_mesh stores them
    polyvertnum = _assert_same_polygons(vert, face, monkeypatch)[0]
    assert polyvertnum.max() > 3


@needs_c
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("seed", range(6))
def test_c_walk_gives_the_python_polygons_with_degenerate_and_nan_faces(seed, monkeypatch):
    """Faces on a few planes, with zero-area faces (repeated or coincident vertices:
    normals of inf and NaN) and vertices with NaN and inf coordinates."""
    rng = np.random.default_rng(100 + seed)
    vert, face = HARD["box_grid_shuffled"]
    vert = np.array(vert, np.float64)
    nbad = len(vert) // 20
    vert[rng.integers(0, len(vert), nbad), rng.integers(0, 3, nbad)] = rng.choice(
        [np.nan, np.inf, -np.inf], nbad)
    vert[rng.integers(0, len(vert), nbad)] = vert[0]  # coincident with vertex 0
    degen = rng.integers(0, len(vert), (60, 3))
    degen[:30, 1] = degen[:30, 0]
    face = np.concatenate([face, degen, face[:40, ::-1]])[rng.permutation(len(face) + 100)]
    _assert_same_polygons(vert, face, monkeypatch)


def _corpus_cases():
    cases = []
    for rel in CORPUS_MODELS:
        path = Path(corpus_dir()) / rel
        if not path.is_file():
            cases.append(pytest.param(rel, None, id=rel, marks=pytest.mark.skip(
                reason=f"{path} not in the corpus (tools/fetch_corpus.py, "
                       "--menagerie for the robots)")))
            continue
        cases += [pytest.param(rel, name, id=f"{rel}:{name}")
                  for name, _ in corpus_meshes(path)]
    return cases


@needs_c
@pytest.mark.parametrize("rel,name", _corpus_cases())
def test_c_walk_gives_the_python_polygons_of_corpus_meshes(rel, name, monkeypatch):
    """Every mesh of the model, from all its faces and from its hull's, as the
    compiler hands them to make_polygons."""
    kw = dict(corpus_meshes(Path(corpus_dir()) / rel))[name]
    calls = []

    def spy(vert, faces):
        calls.append((np.array(vert), np.array(faces)))
        return make_polygons(vert, faces)

    monkeypatch.setattr(mesh, "make_polygons", spy)
    for needhull in (False, True):
        mesh.clear_mesh_cache()
        mesh.compile_mesh(name=name, needhull=needhull, **kw)
    mesh.clear_mesh_cache()
    monkeypatch.undo()
    assert calls
    for vert, faces in calls:
        _assert_same_polygons(vert, faces, monkeypatch)
