"""Hashes of compiled models, to check that a compiler change keeps them bit for bit.

    python tools/compile_hashes.py corpus OUT.json        # every corpus model
    python tools/compile_hashes.py diff A.json B.json     # lists what differs

    # every compile_spec of the compiler tests, keyed by test and call number:
    COMPILE_HASHES=OUT.json PYTHONPATH=tools python -m pytest -n 0 -p compile_hashes \
        tests/test_compiler_corpus.py ...

One hash per model: every entry of its ModelArrays but the compiler's Body records
(numpy arrays by dtype, shape and bytes; floats by their bits; dicts by sorted key;
spec elements by tag, file and line), or the exception's type and message for a
model that fails to compile; names that change from run to run (the tests'
temporary copies, pytest's directories) are left out. The corpus run reads every
.xml under $TIPHYS_CORPUS (Menagerie's too when present) and every .urdf,
fragments and refused models included. To hash another checkout, run from its root
(``python -m pytest`` puts the working directory first on sys.path); the tests'
record names the compiler it ran ("<compiler>").
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import sys

import numpy as np


def _feed(h, v) -> None:
    if hasattr(v, "tag") and hasattr(v, "children"):  # a spec element: which one
        h.update(f"e{v.tag}:{_stable(str(getattr(v, 'xml_file', None)))}:"
                 f"{getattr(v, 'xml_line', None)}".encode())
    elif isinstance(v, np.ndarray):
        h.update(f"a{v.dtype.str}{v.shape}".encode())
        h.update(np.ascontiguousarray(v).tobytes())
    elif isinstance(v, dict):
        h.update(f"d{len(v)}".encode())
        for k in sorted(v, key=repr):
            _feed(h, k)
            _feed(h, v[k])
    elif isinstance(v, (list, tuple)):
        h.update(f"l{type(v).__name__}{len(v)}".encode())
        for x in v:
            _feed(h, x)
    elif isinstance(v, (float, np.floating)):
        h.update(b"f" + struct.pack("<d", float(v)) + type(v).__name__.encode())
    elif isinstance(v, (bool, int, np.integer, np.bool_, str, bytes, type(None))):
        h.update(f"s{type(v).__name__}:{v!r}".encode())
    elif hasattr(v, "__dict__"):
        h.update(f"o{type(v).__name__}".encode())
        _feed(h, vars(v))
    else:
        h.update(f"r{type(v).__name__}:{v!r}".encode())


def _stable(text: str) -> str:
    """A file name or message without what differs from run to run: the process id
    in the tests' temporary copies (.tiphys_<what>_<pid>...), pytest's and tempfile's
    directories."""
    text = re.sub(r"(\.tiphys_[a-z]+)_\d+", r"\1_PID", text)
    text = re.sub(r"pytest-of-[^/]+/pytest-\d+", "PYTEST", text)
    return re.sub(r"/tmp/tmp[\w-]+", "/tmp/TMP", text)


def model_hash(arrays) -> str:
    h = hashlib.sha256()
    # the compiler's Body records are its working state, not model fields
    _feed(h, {k: v for k, v in vars(arrays).items() if k != "bodies"})
    return h.hexdigest()


def outcome(fn, *args) -> str:
    try:
        return model_hash(fn(*args))
    except Exception as exc:  # noqa: BLE001 - the message is part of the identity
        return f"error {type(exc).__name__}: {_stable(str(exc))}"


def corpus(out: str) -> None:
    from tiphys.api import load_spec
    from tiphys.compiler.compile import compile_spec

    root = os.environ["TIPHYS_CORPUS"]
    res = {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".xml", ".urdf")) or f.startswith("."):
                continue
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                if f.endswith(".xml") and b"<mujoco" not in fh.read(4096):
                    continue
            rel = os.path.relpath(path, root)
            res[rel] = outcome(lambda p: compile_spec(load_spec(p), progress=False), path)
    with open(out, "w") as f:
        json.dump(dict(sorted(res.items())), f, indent=0)
    nerr = sum(v.startswith("error") for v in res.values())
    print(f"{len(res)} models hashed ({nerr} errors) -> {out}")


def diff(a: str, b: str) -> int:
    with open(a) as f:
        x = json.load(f)
    with open(b) as f:
        y = json.load(f)
    bad = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
    for k in bad:
        print(f"{k}:\n  {x.get(k)}\n  {y.get(k)}")
    print(f"{len(set(x) & set(y))} common, {len(bad)} differ")
    return 1 if bad else 0


# -- pytest plugin (-p compile_hashes): hashes every compile of the tests run ---------
_RECORD: dict = {}
_CURRENT = ["<collect>"]
_COUNT: dict = {}


def pytest_configure(config):
    import tiphys.compiler.compile as cc
    inner = cc._compile_spec

    def recording(spec):
        node = _CURRENT[0]
        n = _COUNT.get(node, 0)
        _COUNT[node] = n + 1
        try:
            arrays = inner(spec)
        except Exception as exc:
            _RECORD[f"{node}#{n}"] = f"error {type(exc).__name__}: {_stable(str(exc))}"
            raise
        _RECORD[f"{node}#{n}"] = model_hash(arrays)
        return arrays

    cc._compile_spec = recording
    _RECORD["<compiler>"] = cc.__file__  # (which checkout the tests ran)


def pytest_runtest_setup(item):
    _CURRENT[0] = item.nodeid


def pytest_sessionfinish(session):
    out = os.environ.get("COMPILE_HASHES")
    if out:
        with open(out, "w") as f:
            json.dump(dict(sorted(_RECORD.items())), f, indent=0)


if __name__ == "__main__":
    if sys.argv[1] == "corpus":
        corpus(sys.argv[2])
    elif sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    else:
        raise SystemExit(__doc__)
