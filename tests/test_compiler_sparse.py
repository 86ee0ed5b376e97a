"""The sparse layouts of the inertia matrix (compiler/sparse.py: D_*, M_*, B_*, mapM2D,
mapD2M, mapM2M) against MuJoCo 3.4.0's on random kinematic trees: bodies with none, one
or several joints of every type (free ones under the world), branches and chains, and
simple dofs (aligned world children) next to others."""
from __future__ import annotations

import random

import mujoco
import numpy as np
import pytest

import tiphys
from tiphys.compiler.compile import compile_spec

_FIELDS = ("D_rownnz", "D_rowadr", "D_diag", "D_colind", "B_rownnz", "B_rowadr", "B_colind",
           "M_rownnz", "M_rowadr", "M_colind", "mapM2D", "mapD2M", "mapM2M")


def _random_tree(seed: int) -> str:
    rnd = random.Random(seed)
    count = [0]

    def body(depth: int, under_world: bool) -> str:
        count[0] += 1
        joints = []
        if under_world and rnd.random() < 0.3:
            joints.append("<freejoint/>")
        else:
            n = rnd.choice((0, 0, 1, 1, 1, 2, 3))
            for k in range(n):
                # (MuJoCo refuses a rotation after a ball joint in one body)
                kind = rnd.choice(("hinge", "hinge", "slide") + (("ball",) if k == n - 1
                                                                 else ()))
                axis = rnd.choice(("1 0 0", "0 0 1", "0 1 1"))
                pos = rnd.choice(("0 0 0", "0 0 .1"))
                joints.append(f'<joint type="{kind}" axis="{axis}" pos="{pos}"/>')
        kids = []
        if depth < 5 and count[0] < 30:
            for _ in range(rnd.choice((0, 1, 1, 2, 3))):
                kids.append(body(depth + 1, False))
        offset = rnd.choice(("0 0 0", ".1 0 0", "0 .2 .1"))
        return (f'<body pos="{offset}">{"".join(joints)}<geom size=".05" mass="1"/>'
                f'{"".join(kids)}</body>')

    roots = "".join(body(1, True) for _ in range(rnd.randint(1, 4)))
    return f"<mujoco><worldbody>{roots}</worldbody></mujoco>"


@pytest.mark.parametrize("seed", range(40))
def test_sparse_layouts_match_mujoco_on_random_trees(seed):
    xml = _random_tree(seed)
    m = mujoco.MjModel.from_xml_string(xml)
    a = compile_spec(tiphys.parse_xml(xml))
    for name in _FIELDS:
        ours, theirs = np.asarray(getattr(a, name)), np.asarray(getattr(m, name))
        assert ours.shape == theirs.shape and np.array_equal(ours, theirs), name
    assert (a.sizes["nD"], a.sizes["nB"], a.sizes["nC"]) == (m.nD, m.nB, m.nC)
