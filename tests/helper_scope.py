"""Which tests run scripts in the shared f32/Vulkan helper processes (tests/subproc.py).

`make test` hands whole files to its pytest-xdist workers. Each worker starts its own
helper per configuration ("cpu-f32", "vulkan-f32"), and each helper compiles the f32
(or SPIR-V) pipeline from scratch: with the f32 checks spread over both workers, a
cold run compiled every f32 kernel twice. The scheduler in conftest.py therefore
sends every test that uses a helper to one worker, as one work unit, and the other
files as before.

A test uses a helper when its function, a module-level function it calls, or a
fixture of its module it asks for (transitively) refers to ``subproc``. Found from
the test file's source, because the xdist controller that schedules sees node ids
only.
"""
from __future__ import annotations

import ast
import functools
import os

SCOPE = "tests/(f32 and Vulkan helper checks)"


@functools.lru_cache(maxsize=None)
def helper_functions(path: str) -> frozenset:
    """Names of the module-level functions of ``path`` (tests, fixtures, helpers) that
    reach ``subproc``; also ``Class::method`` for test methods."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError):
        return frozenset()
    funcs = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    funcs[f"{node.name}::{sub.name}"] = sub

    def names(node):
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        used |= {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}  # fixtures
        return used

    uses = {name: names(node) for name, node in funcs.items()}
    reach = {name for name, used in uses.items() if "subproc" in used}
    grew = True
    while grew:
        grew = False
        for name, used in uses.items():
            if name not in reach and used & reach:
                reach.add(name)
                grew = True
    return frozenset(reach)


def uses_helper(nodeid: str, rootdir: str) -> bool:
    """Whether the test ``nodeid`` ("tests/test_x.py::test_y[param]") uses a helper."""
    path, _, rest = nodeid.partition("::")
    if not rest:
        return False
    func = rest.split("[", 1)[0]
    return func in helper_functions(os.path.join(rootdir, path))
