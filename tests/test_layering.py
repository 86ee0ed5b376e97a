"""Layering: kernels/ (installed as tiphys.kernels) never imports tiphys.

The kernels read their runtime settings from kernels/config.py and MuJoCo's constants
from kernels/consts.py; the host package (tiphys/) imports the kernels, never the
other way round. Checked on the source with ``ast``, imports inside functions included.
"""
import ast
import os

import pytest

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")
FILES = sorted(f for f in os.listdir(KERNELS) if f.endswith(".py"))


def _bad_imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level >= 2:  # from .. import x / from ..model import y: above kernels/
                bad.append(f"line {node.lineno}: from {'.' * node.level}{module} import ...")
            elif node.level == 0 and (module == "tiphys" or module.startswith("tiphys.")):
                bad.append(f"line {node.lineno}: from {module} import ...")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tiphys" or alias.name.startswith("tiphys."):
                    bad.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            bad.append(f"line {node.lineno}: __import__(...)")
    return bad


def test_kernels_are_found():
    assert "consts.py" in FILES and "config.py" in FILES and len(FILES) > 20


@pytest.mark.parametrize("name", FILES)
def test_kernel_module_imports_nothing_from_tiphys(name):
    assert _bad_imports(os.path.join(KERNELS, name)) == []


def test_the_check_catches_what_it_should(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("from .. import backend\nfrom ..model import x\nimport tiphys.api\n"
                    "def f():\n    from tiphys.contacts import y\nfrom . import math\n")
    assert [b.split(":")[0] for b in _bad_imports(str(path))] == [
        "line 1", "line 2", "line 3", "line 5"]
