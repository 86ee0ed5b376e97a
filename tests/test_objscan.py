"""The C fast path of the OBJ reader (tiphys/compiler/_objscan.c) against the Python
readers it stands before (mesh_io.py: the regex fast path and the general reader,
the reference, itself checked against MuJoCo in test_mesh.py): the same vertices,
faces, normals and texcoords bit for bit, and the same errors, on every OBJ file of
the corpus, on files of every face form and number spelling, and on files broken in
every way the fast paths must hand to the general reader. Host-side only.
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from oracle import corpus_dir
from test_polytree import _c_compiler

from tiphys.compiler import mesh_io
from tiphys.compiler.polygons import PURE_PYTHON_ENV

needs_c = pytest.mark.skipif(
    mesh_io.OBJSCAN_ERROR is not None,
    reason=f"tiphys.compiler._objscan is not built ({mesh_io.OBJSCAN_ERROR}); "
           f"C compiler with Python headers: {_c_compiler() or 'none found'}")


def test_objscan_is_built_where_a_c_compiler_is_found():
    cc = _c_compiler()
    if cc is None:
        pytest.skip("no C compiler with Python headers: the Python reader is expected")
    assert mesh_io.OBJSCAN_ERROR is None, (
        f"C compiler {cc} found but tiphys.compiler._objscan does not import "
        f"({mesh_io.OBJSCAN_ERROR}); rebuild with `pip install -e .`")


def test_pure_python_switch(monkeypatch):
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    assert not mesh_io.c_scan_enabled()
    monkeypatch.setenv(PURE_PYTHON_ENV, "0")
    assert mesh_io.c_scan_enabled() == (mesh_io.OBJSCAN_ERROR is None)


def _read(data: bytes, righthand: bool):
    """_read_obj_full's dict as (dtype, shape, bytes) per field, or its error."""
    try:
        got = mesh_io._read_obj_full(data, "m.obj", righthand)
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return ("error", type(exc).__name__, str(exc))
    return {k: None if v is None else (v.dtype.str, v.shape, v.tobytes())
            for k, v in got.items()}


def _assert_same_as_python(data: bytes, monkeypatch) -> bool:
    """The C path and the Python readers agree; True where the C scan took the file."""
    for righthand in (True, False):
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
        ref = _read(data, righthand)
        monkeypatch.delenv(PURE_PYTHON_ENV)
        assert mesh_io.c_scan_enabled()
        assert _read(data, righthand) == ref
    lf = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return mesh_io._c_scan(lf) is not None


def _corpus_objs():
    root = corpus_dir()
    files = sorted(glob.glob(os.path.join(root, "**", "*.[oO][bB][jJ]"), recursive=True))
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"no OBJ file under {root} (tools/fetch_corpus.py)"))]
    return [pytest.param(f, id=os.path.relpath(f, root)) for f in files]


@needs_c
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("path", _corpus_objs())
def test_c_scan_reads_corpus_objs_as_python(path, monkeypatch):
    with open(path, "rb") as fh:
        _assert_same_as_python(fh.read(), monkeypatch)


def _spelling(rng) -> str:
    """A number as exporters write it, or in a rarer legal spelling."""
    x = float(rng.normal() * 10.0 ** int(rng.integers(-8, 8)))
    kind = int(rng.integers(0, 8))
    if kind == 0:
        return repr(x)
    if kind == 1:
        return f"{x:.{int(rng.integers(0, 25))}f}"
    if kind == 2:
        return f"{x:.{int(rng.integers(0, 20))}e}".replace("e", str(rng.choice(["e", "E"])))
    if kind == 3:
        return str(int(x))
    if kind == 4:
        return "+" + f"{abs(x):.6f}"
    if kind == 5:
        return f"{abs(x):.6f}".lstrip("0") or ".0"   # ".5"
    if kind == 6:
        return f"{int(abs(x))}."                      # "3."
    return "0." + "".join(rng.choice(list("0123456789"), int(rng.integers(30, 90))))


def _synthetic_obj(seed: int) -> bytes:
    """A small OBJ in the fast paths' class: v/vn/vt lines of every number spelling
    (some with trailing values), comments and other keywords, faces of one form,
    and perhaps groups."""
    rng = np.random.default_rng(seed)
    nv = int(rng.integers(3, 12))
    form = int(rng.integers(0, 4))
    blank = lambda: str(rng.choice([" ", "\t", "  ", " \t"]))  # noqa: E731
    lines = ["# synthetic", "mtllib m.mtl"]
    for _ in range(nv):
        tail = blank() + "1 0.5 0.25" if rng.random() < 0.2 else ""
        lines.append("v" + "".join(blank() + _spelling(rng) for _ in range(3)) + tail)
        lines.append("vn" + "".join(blank() + _spelling(rng) for _ in range(3)))
        lines.append("vt" + "".join(blank() + _spelling(rng) for _ in range(2))
                     + (blank() + "0" if rng.random() < 0.3 else ""))
    lines.append("usemtl m")
    for k in range(int(rng.integers(1, 10))):
        if rng.random() < 0.1:
            lines.append(str(rng.choice(["g part", "o obj", "s 1", "g"])))
        ids = rng.integers(1, nv + 1, 3)
        corner = ["{i}", "{i}/{i}", "{i}//{i}", "{i}/{i}/{i}"][form]
        lines.append("f" + "".join(blank() + corner.format(i=i) for i in ids)
                     + (blank() if rng.random() < 0.2 else ""))
    return ("\n".join(lines) + str(rng.choice(["\n", "", "\r\n"]))).encode()


_BREAKS = [b" ", b"\t", b"0", b"00", b"-", b"+", b".", b"e", b"E", b"e+", b"/", b"//",
           b"nan", b"inf", b"\r", b"\r\n", b"\n", b"\x0b", b"#", b"1_0", b"\nl 1 2\n",
           b"\np 1\n", b"\ng x\n", b"\no y\n", b"\n g\tx\n", b"\n v 1 2 3\n",
           b"\nf 1 2 3 4\n", b"\nf 0 1 2\n", b"\nvt 1 2 3\n", b"\nv 1 2\n",
           b"\nv 1e999 -1e-999 .5\n", b"\nf 1//1 2//2 3//3\n", b"\nf 1/1 2/2 3/3\n",
           b"\nf 1/1/1 2/2/2 3/3/3\n", b"\nf -1 -2 -3\n", b"99999999999999999999",
           b"\nvt 0.5\n", b"1" * 80]


@needs_c
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("seed", range(60))
def test_c_scan_reads_synthetic_and_broken_objs_as_python(seed, monkeypatch):
    """Each seed: a clean file (the C scan must take it) and 20 copies broken at
    random places with bits of OBJ that only the Python readers take, or that are
    errors (bad numbers, index 0, negative ids, lines of other kinds)."""
    data = _synthetic_obj(seed)
    assert _assert_same_as_python(data, monkeypatch)
    rng = np.random.default_rng(1000 + seed)
    for _ in range(20):
        broken = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(0, len(broken)))
            bit = _BREAKS[int(rng.integers(0, len(_BREAKS)))]
            end = pos if rng.random() < 0.5 else pos + len(bit)
            broken[pos:end] = bit
        _assert_same_as_python(bytes(broken), monkeypatch)


@needs_c
def test_c_scan_takes_only_what_it_should():
    scan = mesh_io._c_scan
    assert scan(b"v 1 2 3\nv 4 5 6\nv 7 8 9\nf 1 2 3\n") is not None
    assert scan(b"") is not None
    for text in (b" v 1 2 3\n", b"v 1 2\n", b"v 1 2 nan\n", b"l 1 2\n", b"f 1 2 3 4\n",
                 b"f 0 1 2\n", b"f 1 2/2 3\n", b"f -1 -2 -3\n", b"v 1 2 3\x0b\n"):
        assert scan(text) is None, text
    # "g" alone is no group line; "g x" ends the first shape
    text = b"v 1e999 -.5 +3.\nvt 1 2 x\nf 3/1 2/2 1/3\ng\nf 1/1 2/2 3/3\ng x\nf 1/1 2/2 3/3\n"
    v, vn, vt, tris = scan(text)
    assert np.frombuffer(v, np.float64).tolist() == [float("inf"), -0.5, 3.0]
    assert np.frombuffer(vt, np.float64).tolist() == [1.0, 2.0] and vn == b""
    assert np.frombuffer(tris, np.int64).tolist() == [2, 0, -1, 1, 1, -1, 0, 2, -1,
                                                      0, 0, -1, 1, 1, -1, 2, 2, -1]


def _decimal(rng) -> str:
    """A number spelling of the fast path's pattern: short and long decimals, exponents
    inside and outside 1e+-22, digit strings about 2^53, zeros, signs."""
    k = rng.random()
    if k < 0.3:
        s = f"{rng.uniform(0, 1e3):.{int(rng.integers(0, 18))}f}"
    elif k < 0.45:
        s = repr(float(rng.uniform(0, 10) * 10.0 ** int(rng.integers(-30, 30))))
    elif k < 0.75:
        d = "".join(rng.choice(list("0123456789"), int(rng.integers(1, 21))))
        p = int(rng.integers(0, len(d) + 1))
        s = d[:p] + ("." if rng.random() < 0.8 else "") + d[p:]
        if rng.random() < 0.4:
            s += rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.integers(0, 41))
    else:
        s = rng.choice(["0", "0.0", ".5", "5.", "9007199254740993", "9007199254740992",
                        "9007199254740991.5", "1e22", "1e23", "1e-22", "1e-23", "0.1", "4.35",
                        "123456789012345678", "1.7976931348623157e308", "1e400",
                        "2.2250738585072014e-308", "4.9e-324", "000.000125"])
    return rng.choice(["", "-", "+"]) + s


@needs_c
@pytest.mark.parametrize("seed", range(10))
def test_c_scan_numbers_are_pythons_floats(seed):
    """Every number the C scan converts (one correctly rounded operation for short
    decimals, PyOS_string_to_double for the rest) is float()'s double, bit for bit."""
    rng = np.random.default_rng(seed)
    toks = [_decimal(rng) for _ in range(3 * 500)]
    text = "".join(f"v {a} {b} {c}\n" for a, b, c in zip(toks[0::3], toks[1::3], toks[2::3]))
    got = mesh_io._c_scan((text + "f 1 2 3\n").encode())
    assert got is not None
    want = np.array([float(t) for t in toks])
    assert np.frombuffer(got[0], np.float64).tobytes() == want.tobytes()
