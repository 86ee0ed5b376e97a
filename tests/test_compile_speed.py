"""The fast mesh code paths (polygon merging with edge maps and union-find islands,
the OBJ reader's fast lines) give MuJoCo's mesh fields on the meshes that made them
necessary: large Menagerie robots (when the corpus has them, see
tools/fetch_corpus.py) and synthetic meshes built to stress the same paths (large
flat regions assembled from shuffled triangles, so that islands form and merge;
repeated and reversed faces; degenerate faces). No timing is asserted here: the
benchmark (benchmarks/bench_compile.py) measures time; these tests check that the
faster code is still right; and a long compile shows a progress line (stderr). Host-side
compile only: no Taichi kernel is built.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from oracle import corpus_dir
from test_mesh import compare_mesh, compile_mesh, corpus_meshes, oracle_xml

MENAGERIE = Path(corpus_dir()) / "menagerie"
# the robots whose compile took minutes, and how many of their largest mesh files to
# compare (files up to MAX_BYTES, which keeps this test to seconds)
ROBOTS = ("berkeley_humanoid", "apptronik_apollo", "robotis_op3", "leap_hand", "unitree_g1")
PER_ROBOT = 2
MAX_BYTES = 1_500_000


def _menagerie_cases():
    index_path = MENAGERIE / "index.json"
    if not index_path.is_file():
        return []
    index = json.loads(index_path.read_text())
    cases = []
    for robot in ROBOTS:
        if robot not in index:
            continue
        files = {}
        for xml in sorted((MENAGERIE / robot).glob("*.xml")):
            for name, kw in corpus_meshes(xml):
                size = len(kw.get("file_bytes", b""))
                if size <= MAX_BYTES and name not in files:
                    files[name] = (size, xml.name, name)
        largest = sorted(files.values(), reverse=True)[:PER_ROBOT]
        cases += [pytest.param(robot, xml, name, id=f"{robot}-{name}")
                  for _, xml, name in largest]
    return cases


@pytest.mark.parametrize("robot,xml,name", _menagerie_cases() or [
    pytest.param(None, None, None, marks=pytest.mark.skip(
        reason="no Menagerie robots in the corpus: python tools/fetch_corpus.py "
               "--menagerie (downloads from the Menagerie releases)"))])
def test_menagerie_meshes_match_mujoco(robot, xml, name):
    """Polygons from all faces (no hull: contype 0, the case that took minutes) and
    from the hull, vertices, normals, inertia: as MuJoCo compiles the same file."""
    kw = dict(corpus_meshes(MENAGERIE / robot / xml))[name]
    for contype in (0, 1):
        compare_mesh(kw, contype=contype)


def _grid_box(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """A box whose six sides are n x n grids of triangles (each side its own vertices),
    the faces in random order: every side is one polygon, grown from many islands
    that merge as the faces arrive."""
    g = np.linspace(-1.0, 1.0, n + 1)
    verts, faces = [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u, v = np.meshgrid(g, g, indexing="ij")
            pts = np.zeros(((n + 1) ** 2, 3))
            pts[:, axis] = sign
            pts[:, (axis + 1) % 3] = u.ravel()
            pts[:, (axis + 2) % 3] = v.ravel()
            base = sum(len(p) for p in verts)
            verts.append(pts)
            for i in range(n):
                for j in range(n):
                    a, b = base + i * (n + 1) + j, base + (i + 1) * (n + 1) + j
                    quad = ((a, b, b + 1), (a, b + 1, a + 1))
                    # outward: the grid's (u, v, axis) frame is right-handed
                    faces += [f if sign > 0 else f[::-1] for f in quad]
    faces = np.array(faces)
    return np.concatenate(verts), faces[rng.permutation(len(faces))]


def _hard_faces():
    rng = np.random.default_rng(7)
    vert, face = _grid_box(12, rng)
    cases = {"box_grid_shuffled": (vert, face)}
    # repeated faces: repeated directed edges in one polygon, removed oldest first
    rep = np.concatenate([face, face[rng.choice(len(face), 40, replace=False)]])
    cases["box_grid_repeated_faces"] = (vert, rep[rng.permutation(len(rep))])
    # reversed copies of some faces: they attach to their originals across all edges
    rev = np.concatenate([face, face[:25, ::-1]])
    cases["box_grid_reversed_faces"] = (vert, rev)
    # degenerate faces (zero area: NaN and huge normals) and holes in the sides
    keep = face[rng.random(len(face)) > 0.1]
    degen = np.array([[0, 0, 1], [2, 2, 2], [5, 6, 5]])
    cases["box_grid_holes_degenerate"] = (vert, np.concatenate([keep[:300], degen, keep[300:]]))
    # a finer grid slightly bent: normals at the coplanarity tolerance
    v2, f2 = _grid_box(20, rng)
    v2 = v2 + 2e-4 * np.sin(3 * v2[:, [1, 2, 0]])
    cases["box_grid_bent"] = (v2, f2)
    return cases


HARD = _hard_faces()


@pytest.mark.parametrize("name", list(HARD))
def test_polygons_from_shuffled_flat_faces_match_mujoco(name):
    """Every mesh_poly* field as MuJoCo's, exactly (normals to round-off; a polygon
    that starts with three collinear grid points has MuJoCo's inf/NaN normal)."""
    import mujoco
    vert, face = HARD[name]
    kw = dict(vertex=[float(x) for x in np.asarray(vert, np.float32).ravel()],
              face=[int(i) for i in np.asarray(face).ravel()])
    m = mujoco.MjModel.from_xml_string(oracle_xml(kw, contype=0))
    c = compile_mesh(name="m", needhull=False, **kw)
    assert c.npoly == m.mesh_polynum[0] and m.nmesh == 1
    np.testing.assert_array_equal(c.polyvertnum, m.mesh_polyvertnum)
    np.testing.assert_array_equal(c.polyvert, m.mesh_polyvert)
    np.testing.assert_array_equal(c.polymapnum, m.mesh_polymapnum)
    np.testing.assert_array_equal(c.polymap, m.mesh_polymap)
    np.testing.assert_allclose(c.polynormal, m.mesh_polynormal, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(c.face, m.mesh_face)
    assert c.polyvertnum.max() > 3  # merged polygons, not just triangles


def test_obj_fast_lines_match_general_reader(tmp_path):
    """OBJ lines of every form the fast path takes, and lines it leaves to the general
    reader (missing, extra or malformed numbers, zero and negative indices),
    compiled as MuJoCo compiles the same file."""
    obj = "\n".join([
        "# vertices: well formed, with extra numbers, with tabs",
        "v 0 0 0", "v 1 0 0 1", "v\t0\t1\t0", "v 0 0 1 ", "v 1. 1 .5e0", "v +1 -0 1",
        "vn 0 0 1", "vn 1e-3 +2 -3.", "vn 1 2 3 4",
        "vt 0.5 0.5", "vt .25 1 7", "vt 1 0",
        "f 1/1/1 2/2/2 3/3/3", "f 1//1 3//2 4//3", "f 2/1 5/2 6/3", "f 1 4 2",
        "f -5/1/1 -3/1/1 -2/1/1", "f 3 4 5 6",
    ]) + "\n"
    path = tmp_path / "mixed.obj"
    path.write_text(obj)
    kw = dict(file_name=str(path), file_bytes=path.read_bytes())
    for contype in (1, 0):
        compare_mesh(kw, contype=contype)


def test_menagerie_is_kept_out_of_ordinary_corpus_runs():
    from oracle import EXTRA_SOURCES, corpus_models
    assert "menagerie" in EXTRA_SOURCES
    assert not any(p.split(os.sep)[0] == "menagerie" for p in corpus_models())


def test_mesh_cache_gives_a_fresh_compile_and_private_copies():
    """A mesh compiled again (the same inputs, another name) comes from the cache:
    still MuJoCo's fields, every array equal to the first compile's, and arrays of its
    own, so that changing one result changes neither the cache nor the other."""
    from tiphys.compiler import mesh
    vert, face = HARD["box_grid_shuffled"]
    kw = {"vertex": [float(x) for x in np.asarray(vert, np.float32).ravel()],
          "face": [int(i) for i in np.asarray(face).ravel()]}
    mesh.clear_mesh_cache()
    first = compile_mesh(name="a", needhull=True, **kw)
    first.vert[:] = 0.0
    second = compile_mesh(name="b", needhull=True, **kw)
    assert second.name == "b" and len(mesh._mesh_cache) == 1
    compare_mesh(kw, contype=1)  # a cache hit: MuJoCo's mesh fields
    mesh.clear_mesh_cache()
    fresh = compile_mesh(name="b", needhull=True, **kw)
    for f in ("vert", "face", "normal", "graph", "polyvert", "polymap", "polynormal",
              "boxsz", "pos", "quat"):
        np.testing.assert_array_equal(getattr(second, f), getattr(fresh, f))


_PROGRESS_XML = """<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody>
</mujoco>"""


def _slow_compile(monkeypatch, seconds):
    """compile_spec whose compile takes at least ``seconds`` (the real one, delayed)."""
    import time

    import tiphys.compiler.compile as cc
    real = cc._compile_spec

    def slow(spec):
        time.sleep(seconds)
        return real(spec)

    monkeypatch.setattr(cc, "_compile_spec", slow)
    return cc.compile_spec


def test_long_compile_prints_a_progress_line_to_stderr(monkeypatch, capsys):
    """A compile running past DELAY seconds writes one line naming the model to
    stderr (here not a terminal: a plain line); stdout stays clean."""
    import tiphys
    from tiphys.compiler import progress
    monkeypatch.setattr(progress, "DELAY", 0.05)
    compile_spec = _slow_compile(monkeypatch, 0.5)
    spec = tiphys.parse_xml(_PROGRESS_XML, filename="slow_model.xml")
    compile_spec(spec, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("compiling slow_model.xml") == 1, err


def test_short_or_unasked_compiles_print_no_progress_line(monkeypatch, capsys):
    """Nothing on stderr for a compile shorter than DELAY (the default 2 s), nor with
    progress=False however long it takes, nor by default where stderr is no terminal."""
    import tiphys
    from tiphys.compiler import progress
    from tiphys.compiler.compile import compile_spec as fast_compile
    assert progress.DELAY == 2.0
    fast_compile(tiphys.parse_xml(_PROGRESS_XML), progress=True)
    monkeypatch.setattr(progress, "DELAY", 0.05)
    compile_spec = _slow_compile(monkeypatch, 0.3)
    compile_spec(tiphys.parse_xml(_PROGRESS_XML), progress=False)
    compile_spec(tiphys.parse_xml(_PROGRESS_XML))  # stderr is captured: not a terminal
    assert capsys.readouterr().err == ""
